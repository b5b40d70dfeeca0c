//! `dispatch-fuzz fuzz`: an in-process session on the stable toolchain.
//!
//! Programs come from a [`Guide`]: random bytes from a seeded SplitMix64 decoded exactly as the
//! libFuzzer target decodes its inputs, mixed with corpus programs mutated toward the (entry,
//! kind, context) triples the oracles have judged least (`--blind` turns that off). The summary
//! says what each oracle judged per entry. The session is for machines without nightly, for CI
//! smoke runs, and for collecting reproducers of chosen classes with `DISPATCH_FUZZ_CRASH_ON`.
//! A new finding is minimized and run again on a triage worker of its own before the summary
//! reports it, grouped by root cause.

mod triage;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rayon::prelude::*;
use serde_json::json;

use dispatch_fuzz::config;
use dispatch_fuzz::guide::{tally, Guide, Origin, Tally};
use dispatch_fuzz::hash::fnv1a;
use dispatch_fuzz::interpreter::Outcome;
use dispatch_fuzz::oracles::Finding;
use dispatch_fuzz::program::ProgramFile;
use dispatch_fuzz::program::{Backends, Entry, Flaky, Program, Step};
use dispatch_fuzz::{check, collide, hit_rate, Verdict};

/// A pair judged this often by an oracle counts as judged in the summary.
const ENOUGH: u64 = 10;

/// In-process fuzz session on the stable toolchain: seeded random bytes -> program -> check.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// How long to run.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Seed of the byte source; a session is reproducible from it.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Where findings are saved, one program file per signature.
    #[arg(long, default_value = "fuzz-findings")]
    out: PathBuf,
    /// End with one JSON summary line (progress still goes to stderr).
    #[arg(long)]
    json: bool,
    /// Stop after this many inputs (0: no limit).
    #[arg(long, default_value_t = 0)]
    runs: u64,
    /// Save the first raw input that reaches each panic class here (libFuzzer corpus form).
    #[arg(long)]
    corpus_out: Option<PathBuf>,
    /// Backends to fuzz: `flex,capture`, or `flex,capture,wgpu` to add wgpu (adapter from
    /// DISPATCH_FUZZ_WGPU: auto, gpu or cpu).
    #[arg(long, env = config::BACKENDS_VAR, default_value = "flex,capture",
          value_parser = parse_backends)]
    backends: Backends,
    /// Random programs only: no corpus, no steering toward what the oracles judged least.
    #[arg(long, conflicts_with = "aim")]
    blind: bool,
    /// Workers: programs run on this many threads, each with its own seed stream (worker 0's
    /// is `--seed`'s), capture devices and corpus; findings are shared, one saved program per
    /// signature. Default: every core (1 with wgpu, whose one device stream the workers would
    /// share: a launch failed in one would fail another's reads).
    #[arg(long)]
    jobs: Option<usize>,
    /// Steer only toward this op entry, `family:name` as `ops` lists it (`unary:exp`,
    /// `fixed:matmul`); repeatable. Random programs still make up one in three.
    #[arg(long, value_parser = parse_entry)]
    aim: Vec<Entry>,
    /// Run every Nth threaded program whose serial run found nothing again under collide (its
    /// threads' neighbouring runs of steps at the same time); 0: never. A finding met there is
    /// run COLLIDE_TRIES more times and saved as flaky, with its hit rate, never as a finding.
    #[arg(long, default_value_t = 1)]
    collide: u64,
    /// Minimize each new finding for at most this many seconds, on a triage worker of its own
    /// (with wgpu, after the session), run the result again, and save it minimized; a finding
    /// that does not show again alone is reported unsettled. 0: save findings as met.
    #[arg(long, default_value_t = 20)]
    triage_seconds: u64,
}

/// Collide runs of a flaky finding's program that measure its hit rate.
const COLLIDE_TRIES: u32 = 20;

fn parse_entry(text: &str) -> Result<Entry, String> {
    let (family, name) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}` is not `family:name` (e.g. `unary:exp`)"))?;
    let all = dispatch_fuzz::program::entries();
    all.iter()
        .map(|(e, _)| *e)
        .find(|e| e.family == family && e.name == name)
        .ok_or_else(|| {
            let in_family: Vec<&str> = all
                .iter()
                .filter(|(e, _)| e.family == family)
                .map(|(e, _)| e.name)
                .collect();
            if in_family.is_empty() {
                format!(
                    "no op family `{family}` (families: unary, along-dim, binary, compare, \
                     scalar, module, fixed)"
                )
            } else {
                format!(
                    "no entry `{name}` in `{family}` (its entries: {})",
                    in_family.join(", ")
                )
            }
        })
}

fn parse_backends(list: &str) -> Result<Backends, String> {
    Backends::parse(list)
        .map_err(|name| format!("unknown backend `{name}` (allowed: flex, capture, wgpu)"))
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        main(self)
    }
}

/// Brings the backends up and says which are in use, before the first program runs.
fn start_backends(backends: Backends) -> Result<String> {
    use dispatch_fuzz::interpreter::wgpu;
    if !backends.wgpu {
        return Ok("flex + capture".into());
    }
    // wgpu costs ~1 ms per op on a CPU adapter: opt-in only, and it must come up before fuzzing.
    match wgpu::adapter() {
        Ok(adapter) => Ok(format!("flex + capture + wgpu (adapter {adapter})")),
        Err(reason) => anyhow::bail!("{reason}"),
    }
}

#[derive(Default)]
struct Stats {
    execs: u64,
    /// Panics seen per class (a program can add several).
    classes: BTreeMap<String, u64>,
    /// Seconds into the session when each class was first seen.
    first_hit: BTreeMap<String, f64>,
    findings: Vec<(String, PathBuf)>,
    /// Threaded programs run again under collide, and the flaky findings met there (signature,
    /// hit rate, file), one per signature.
    collided: u64,
    flaky: Vec<(String, Flaky, PathBuf)>,
    flaky_signatures: BTreeSet<String>,
    /// Known findings (stored cases met again) per case.
    known: BTreeMap<String, u64>,
    /// Values the differential compared across Flex and wgpu, replayed outputs eager-replay
    /// compared, and the values either left uncompared, per poison reason.
    compared: u64,
    replay_compared: u64,
    poisoned: BTreeMap<String, u64>,
    /// Values compared at some elements only, the others poisoned, per reason.
    partly_poisoned: BTreeMap<String, u64>,
    /// Values the reference oracle judged against their definitions, and those it left open,
    /// per reason.
    reference_judged: u64,
    reference_gradients: u64,
    reference_open: BTreeMap<String, u64>,
    /// The judged F32 elements' bounds in units in the last place, per bound family.
    reference_bounds: BTreeMap<String, dispatch_fuzz::oracles::BoundTally>,
    /// The same for the values the wgpu mirror computed.
    reference_on_wgpu: u64,
    reference_open_on_wgpu: BTreeMap<String, u64>,
    signatures: BTreeSet<String>,
    /// Op steps by what they did: the share that ran is the share that reached Burn's kernels.
    ops: StepCounts,
    /// Scopes that completed with a graph, and the operations those graphs recorded: what the
    /// eager-replay oracle hands to burn-router's `TensorInterpreter`.
    graphs: u64,
    graph_operations: u64,
    /// Programs the guide mutated from its corpus (the rest are random).
    mutated: u64,
    /// The RSS once warm (5 s in), and the corpus size over every worker at the end.
    warm_rss: Option<u64>,
    corpus: usize,
}

/// Op steps that returned, panicked (a guard or a bug) and never ran (a scope that did not
/// open, an operand the step could not use).
#[derive(Default)]
struct StepCounts {
    ok: u64,
    panicked: u64,
    other: u64,
}

fn main(options: Args) -> Result<ExitCode> {
    let chosen = options.backends;
    let jobs = match (options.jobs, chosen.wgpu) {
        (Some(0), _) => anyhow::bail!("--jobs must be at least 1"),
        (Some(n), true) if n > 1 => anyhow::bail!(
            "--jobs {n} with wgpu: the workers would share wgpu's one device stream, where a \
             launch failed in one fails another's reads; wgpu sessions run one worker"
        ),
        (Some(n), _) => n,
        (None, true) => 1,
        (None, false) => std::thread::available_parallelism().map_or(1, usize::from),
    };
    let backends = start_backends(chosen)?;
    let start = Instant::now();
    let (sender, receiver) = mpsc::channel();
    let mut workers = Workers {
        options: &options,
        checked_in: dispatch_fuzz::Session::from_config().on(chosen),
        start,
        deadline: start + Duration::from_secs(options.seconds),
        stats: Mutex::new(Stats::default()),
        stop: AtomicBool::new(false),
        interactive: std::io::stderr().is_terminal(),
        jobs,
        triage: Some(sender),
    };
    // Built first, so a bad --aim stops the session before it starts.
    let guides: Vec<Guide> = (0..jobs)
        .map(|k| guide_for(&options, worker_seed(options.seed, k)))
        .collect::<Result<_>>()?;
    eprintln!(
        "dispatch-fuzz: backends {backends}, seed {}, {} s, {}, {jobs} worker{}, findings -> {}",
        options.seed,
        options.seconds,
        if guides[0].guided() {
            "guided"
        } else {
            "blind"
        },
        if jobs == 1 { "" } else { "s" },
        options.out.display()
    );
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(jobs)
        .thread_name(|k| format!("fuzz-worker-{k}"))
        .build()
        .context("cannot start the workers")?;
    let budget = (options.triage_seconds > 0).then(|| Duration::from_secs(options.triage_seconds));
    let triage_session = workers.checked_in.clone();
    let (results, seconds, triaged) = std::thread::scope(|scope| {
        let triager = std::thread::Builder::new()
            .name("fuzz-triage".into())
            .spawn_scoped(scope, move || {
                triage::run(&triage_session, receiver, budget, chosen.wgpu)
            })
            .context("cannot start the triage worker")?;
        let results: Vec<Result<Guide>> = pool.install(|| {
            guides
                .into_par_iter()
                .enumerate()
                .map(|(k, guide)| workers.worker(k, guide))
                .collect()
        });
        let seconds = start.elapsed().as_secs_f64();
        // The workers' sender closes the channel: triage settles what is queued and returns.
        workers.triage = None;
        let triaged = triager
            .join()
            .map_err(|_| anyhow::anyhow!("the triage worker panicked (the harness, not Burn)"))?;
        anyhow::Ok((results, seconds, triaged?))
    })?;
    let mut tally = Tally::default();
    let mut corpus = 0;
    for result in results {
        let guide = result?;
        tally.merge(guide.tally());
        corpus += guide.corpus_len();
    }
    eprintln!();
    let mut stats = workers
        .stats
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    stats.corpus = corpus;
    summary(&stats, &triaged, &tally, seconds, &options, jobs);
    Ok(if triaged.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(1)
    })
}

/// Worker `k`'s seed: worker 0 has the session's, so one worker is the session `--seed` names.
fn worker_seed(seed: u64, k: usize) -> u64 {
    if k == 0 {
        seed
    } else {
        fnv1a(&[&seed.to_le_bytes(), &(k as u64).to_le_bytes()])
    }
}

/// The generator a worker starts from `seed` with: blind, aimed at `--aim`'s entries, or guided.
fn guide_for(options: &Args, seed: u64) -> Result<Guide> {
    let backends = options.backends;
    if options.aim.is_empty() {
        return Ok(Guide::new(seed, backends, !options.blind));
    }
    Guide::aimed(seed, backends, |t| options.aim.contains(&t.entry))
        .context("no oracle can judge the entries --aim names")
}

/// What the workers of one session share.
struct Workers<'a> {
    options: &'a Args,
    /// What every worker's programs are checked in: `--backends`, and the switches' policy
    /// and oracles.
    checked_in: dispatch_fuzz::Session,
    start: Instant,
    deadline: Instant,
    /// The counts of every worker, and the findings, deduplicated by signature.
    stats: Mutex<Stats>,
    /// Set when a worker failed: the others stop.
    stop: AtomicBool,
    interactive: bool,
    jobs: usize,
    /// Where a worker sends each new finding it saved, to be settled; `None` once the workers
    /// are done.
    triage: Option<mpsc::Sender<triage::Met>>,
}

impl Workers<'_> {
    /// Runs programs from `guide` until the deadline (or `--runs`, counted over every worker);
    /// worker 0 prints the progress line. Returns the guide, for its tally.
    fn worker(&self, k: usize, mut guide: Guide) -> Result<Guide> {
        let options = self.options;
        let mut last_report = self.start;
        let mut threaded = 0;
        let lock = || self.stats.lock().unwrap_or_else(|e| e.into_inner());
        while Instant::now() < self.deadline && !self.stop.load(Ordering::Relaxed) {
            let (program, origin) = guide.next_program();
            // A mutated program's bytes are its encoding, which decodes to it.
            let bytes = match &origin {
                Origin::Random(bytes) => bytes.clone(),
                Origin::Mutated { .. } => program.to_fuzz_bytes().unwrap_or_default(),
            };
            let verdict = match check(&self.checked_in, &program) {
                Ok(verdict) => verdict,
                // The harness failed, not Burn: keep the program, or the fault cannot be debugged.
                Err(error) => {
                    self.stop.store(true, Ordering::Relaxed);
                    return Err(harness_fault(options, &program, &origin, &bytes, error));
                }
            };
            let now = self.start.elapsed().as_secs_f64();
            guide.observe(&program, &verdict, now);
            let collided = self.collided(&program, &verdict, &mut threaded)?;
            let mut stats = lock();
            if options.runs > 0 && stats.execs >= options.runs {
                break;
            }
            stats.execs += 1;
            stats.mutated += u64::from(matches!(origin, Origin::Mutated { .. }));
            let new_classes = record(&mut stats, &program, &verdict, now);
            if let Some(dir) = &options.corpus_out {
                for class in new_classes {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                    let path = dir.join(format!("{class}-{:016x}", fnv1a(&[&bytes])));
                    std::fs::write(&path, &bytes)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                }
            }
            if let Some(finding) = &verdict.finding {
                if stats.signatures.insert(finding.signature.to_string()) {
                    let exec = stats.execs;
                    let found = (finding, None);
                    let (path, file) = save(options, &program, found, &origin, &bytes, k, exec)?;
                    eprintln!(
                        "\nnew finding: {}\n  saved to {}",
                        finding.signature,
                        path.display()
                    );
                    stats
                        .findings
                        .push((finding.signature.to_string(), path.clone()));
                    if let Some(queue) = &self.triage {
                        let signature = finding.signature.clone();
                        // Closed only after every worker returned.
                        let _ = queue.send(triage::Met {
                            signature,
                            file,
                            path,
                        });
                    }
                }
            }
            if let Some((finding, flaky)) = collided {
                stats.collided += 1;
                if let Some((finding, flaky)) = finding.zip(flaky) {
                    if stats.flaky_signatures.insert(finding.signature.to_string()) {
                        let exec = stats.execs;
                        let found = (&finding, Some(flaky));
                        let (path, _) = save(options, &program, found, &origin, &bytes, k, exec)?;
                        eprintln!(
                            "\nnew flaky finding (collide, {} of {} runs): {}\n  saved to {}",
                            flaky.hits,
                            flaky.tries,
                            finding.signature,
                            path.display()
                        );
                        let signature = finding.signature.to_string();
                        stats.flaky.push((signature, flaky, path));
                    }
                }
            }
            // A live line on a terminal; a line every 10 s in logs, where `\r` would pile up.
            let every = if self.interactive { 1 } else { 10 };
            if k == 0 && last_report.elapsed() >= Duration::from_secs(every) {
                last_report = Instant::now();
                if stats.warm_rss.is_none() && self.start.elapsed() >= Duration::from_secs(5) {
                    stats.warm_rss = crate::cli::rss_kib().map(|(rss, _)| rss);
                }
                progress(
                    &stats,
                    &guide,
                    self.jobs,
                    self.start.elapsed(),
                    self.interactive,
                );
            }
        }
        Ok(guide)
    }
}

impl Workers<'_> {
    /// Runs `program` again under collide where `--collide` picks it: a threaded program whose
    /// serial run found nothing, every Nth of this worker's (`threaded` counts them). `None`
    /// where it did not run; else the finding collide met, if any, with its hit rate over
    /// [`COLLIDE_TRIES`] more runs where its signature is new.
    #[allow(clippy::type_complexity)]
    fn collided(
        &self,
        program: &Program,
        verdict: &Verdict,
        threaded: &mut u64,
    ) -> Result<Option<(Option<Finding>, Option<Flaky>)>> {
        let every = self.options.collide;
        if every == 0 || program.thread_count() < 2 || verdict.finding.is_some() {
            return Ok(None);
        }
        *threaded += 1;
        if !threaded.is_multiple_of(every) {
            return Ok(None);
        }
        let session = &self.checked_in;
        let context = || "a collide run failed (the harness, not Burn)";
        let Some(finding) = collide(session, program).with_context(context)?.finding else {
            return Ok(Some((None, None)));
        };
        let seen = {
            let stats = self.stats.lock().unwrap_or_else(|e| e.into_inner());
            stats
                .flaky_signatures
                .contains(&finding.signature.to_string())
        };
        if seen {
            return Ok(Some((Some(finding), None)));
        }
        let flaky =
            hit_rate(session, program, &finding.signature, COLLIDE_TRIES).with_context(context)?;
        Ok(Some((Some(finding), Some(flaky))))
    }
}

/// Each reason's share, in `counts` (values left wholly or partly uncompared), of the values
/// the differential and eager-replay met (compared, or left uncompared for some reason).
fn poisoned_shares(stats: &Stats, counts: &BTreeMap<String, u64>) -> BTreeMap<String, f64> {
    let met = stats.compared + stats.replay_compared + stats.poisoned.values().sum::<u64>();
    counts
        .iter()
        .map(|(why, n)| (why.clone(), *n as f64 / met.max(1) as f64))
        .collect()
}

/// Counts the trace's panics; returns the classes seen for the first time.
fn record(stats: &mut Stats, program: &Program, verdict: &Verdict, now: f64) -> Vec<String> {
    let mut new = Vec::new();
    for case in &verdict.known_findings {
        *stats.known.entry(case.clone()).or_default() += 1;
    }
    stats.compared += verdict.oracles.compared as u64;
    stats.replay_compared += verdict.oracles.replay_compared as u64;
    for (why, n) in &verdict.oracles.poisoned {
        *stats.poisoned.entry(why.clone()).or_default() += *n as u64;
    }
    for (why, n) in &verdict.oracles.partly_poisoned {
        *stats.partly_poisoned.entry(why.clone()).or_default() += *n as u64;
    }
    stats.reference_judged += verdict.oracles.reference.judged as u64;
    stats.reference_gradients += verdict.oracles.reference.gradients as u64;
    for (why, n) in &verdict.oracles.reference.open {
        *stats.reference_open.entry(why.clone()).or_default() += *n as u64;
    }
    for (family, tally) in &verdict.oracles.reference.bounds {
        match stats.reference_bounds.get_mut(family) {
            Some(t) => t.merge(tally),
            None => {
                stats.reference_bounds.insert(family.clone(), tally.clone());
            }
        }
    }
    stats.reference_on_wgpu += verdict.oracles.reference.on_wgpu as u64;
    for (why, n) in &verdict.oracles.reference.open_on_wgpu {
        *stats.reference_open_on_wgpu.entry(why.clone()).or_default() += *n as u64;
    }
    for (record, step) in verdict.trace.steps.iter().zip(&program.steps) {
        if let Outcome::Ok {
            graph: Some(graph), ..
        } = &record.outcome
        {
            stats.graphs += 1;
            stats.graph_operations += graph.operations as u64;
        }
        if matches!(step, Step::Op { .. }) {
            match record.outcome {
                Outcome::Ok { .. } => stats.ops.ok += 1,
                Outcome::Panic(_) => stats.ops.panicked += 1,
                _ => stats.ops.other += 1,
            }
        }
    }
    for (_, panic) in verdict.trace.panics() {
        *stats.classes.entry(panic.class.clone()).or_default() += 1;
        if !stats.first_hit.contains_key(&panic.class) {
            stats.first_hit.insert(panic.class.clone(), now);
            new.push(panic.class.clone());
        }
    }
    new
}

fn progress(stats: &Stats, guide: &Guide, jobs: usize, elapsed: Duration, interactive: bool) {
    let rate = stats.execs as f64 / elapsed.as_secs_f64().max(1e-9);
    let classes: Vec<String> = stats
        .classes
        .iter()
        .map(|(c, n)| format!("{c}={n}"))
        .collect();
    let rss =
        crate::cli::rss_kib().map_or(String::new(), |(rss, _)| format!(" rss {} MiB", rss / 1024));
    let line = format!(
        "#{} {:.0} execs/s jobs {jobs} findings {} corpus {}{rss} | {}",
        stats.execs,
        rate,
        stats.findings.len(),
        guide.corpus_len(),
        classes.join(" ")
    );
    if interactive {
        eprint!("\r{line}\x1b[K");
    } else {
        eprintln!("{line}");
    }
    let _ = std::io::stderr().flush();
}

/// Saves a finding's program as `<class>-<fnv1a of its signature>.json`; a flaky one (met under
/// collide alone) as `flaky-<class>-<...>.json` with its hit rate, a program file `promote`
/// refuses. Returns where, and the file.
fn save(
    options: &Args,
    program: &Program,
    (finding, flaky): (&Finding, Option<Flaky>),
    origin: &Origin,
    bytes: &[u8],
    worker: usize,
    exec: u64,
) -> Result<(PathBuf, ProgramFile)> {
    let signature = finding.signature.to_string();
    let hash = fnv1a(&[signature.as_bytes()]);
    let file = ProgramFile {
        signature: Some(signature),
        class: Some(finding.class.clone()),
        origin: Some(format!(
            "dispatch-fuzz fuzz --seed {}{}{}{}, input #{exec} ({}, {} bytes, fnv1a {:016x}){}",
            options.seed,
            if worker == 0 {
                String::new()
            } else {
                format!(
                    " --jobs {} (worker {worker}, seed {})",
                    options.jobs.unwrap_or(0),
                    worker_seed(options.seed, worker)
                )
            },
            if options.blind { " --blind" } else { "" },
            options
                .aim
                .iter()
                .map(|e| format!(" --aim {}:{}", e.family, e.name))
                .collect::<String>(),
            describe(origin),
            bytes.len(),
            fnv1a(&[bytes]),
            if flaky.is_some() {
                format!(
                    ", --collide {}: met under collide, not in the serial schedule",
                    options.collide
                )
            } else {
                String::new()
            }
        )),
        flaky,
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    let prefix = if flaky.is_some() { "flaky-" } else { "" };
    let path = write_program(
        options,
        &format!("{prefix}{}-{hash:016x}.json", finding.class),
        &file,
    )?;
    Ok((path, file))
}

/// `error` with the path of the program that caused it, written to `options.out` as
/// `harness-error-<fnv1a>.json` (a program file, like a finding's, without a signature).
fn harness_fault(
    options: &Args,
    program: &Program,
    origin: &Origin,
    bytes: &[u8],
    error: anyhow::Error,
) -> anyhow::Error {
    let hash = fnv1a(&[bytes]);
    let file = ProgramFile {
        origin: Some(format!(
            "dispatch-fuzz fuzz --seed {}: the harness failed on it ({}, {} bytes, fnv1a \
             {hash:016x})",
            options.seed,
            describe(origin),
            bytes.len(),
        )),
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    match write_program(options, &format!("harness-error-{hash:016x}.json"), &file) {
        Ok(path) => error.context(format!(
            "harness error; program saved to {}",
            path.display()
        )),
        Err(io) => error.context(format!(
            "harness error; the program could not be saved: {io:#}"
        )),
    }
}

/// Per oracle: the share of (entry, kind) pairs judged at least [`ENOUGH`] times, the time to
/// a pair's first judgement, and the least judged pairs.
fn print_views(views: &[tally::View]) {
    println!("judged per (entry, kind) pair, per oracle:");
    for view in views {
        let seconds = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{s:.2} s"));
        println!(
            "  {:<22} {:>4} of {:>3} pairs judged >= {} times ({:.1}%), {} at least once; \
             first judgement median {}, max {}",
            view.name,
            view.judged_enough,
            view.pairs,
            view.enough,
            100.0 * view.judged_enough as f64 / view.pairs.max(1) as f64,
            view.judged_once,
            seconds(view.first_median_s),
            seconds(view.first_max_s),
        );
        let least: Vec<String> = view.least.iter().map(ToString::to_string).collect();
        println!("    least judged: {}", least.join(", "));
        for (why, n) in &view.unjudgeable {
            println!("    never judgeable ({n} pairs): {why}");
        }
    }
}

/// Per operand dtype: the entries some oracle judged over it, of those over its kind, and per
/// view.
pub fn print_dtype_views(views: &[tally::DtypeView]) {
    if views.is_empty() {
        return;
    }
    println!("judged per first operand's dtype (entries judged, of the entries over its kind):");
    for v in views {
        let per_view: Vec<String> = v
            .per_view
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        println!(
            "  {:<13} {:<9} {:>3} of {:>3} entries, {:>9} judgements; {}",
            v.dtype,
            v.family,
            v.judged,
            v.entries,
            v.judgements,
            per_view.join(", ")
        );
    }
}

/// Where a program came from, for a saved file's origin.
fn describe(origin: &Origin) -> String {
    match origin {
        Origin::Random(_) => "random".to_string(),
        Origin::Mutated {
            target, mutations, ..
        } => format!(
            "mutated toward {} over {:?} {}: {}",
            target.entry,
            target.kind,
            target.context.name(),
            mutations.join(", ")
        ),
    }
}

/// Writes `file` as `name` in the session's findings folder, creating it.
fn write_program(options: &Args, name: &str, file: &ProgramFile) -> Result<PathBuf> {
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("cannot create {}", options.out.display()))?;
    let path = options.out.join(name);
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}

/// The tally's views the summary reports: each oracle that judged anything (the differential
/// only with wgpu on).
fn views(tally: &Tally, wgpu: bool) -> Vec<tally::View> {
    tally::VIEWS
        .iter()
        .filter(|(oracle, _)| wgpu || *oracle != dispatch_fuzz::oracles::OracleId::Differential)
        .map(|(oracle, contexts)| tally.view(*oracle, contexts, ENOUGH))
        .collect()
}

fn summary(
    stats: &Stats,
    triaged: &[triage::Triaged],
    tally: &Tally,
    seconds: f64,
    options: &Args,
    jobs: usize,
) {
    let as_json = options.json;
    let warm_rss = stats.warm_rss;
    let rate = stats.execs as f64 / seconds.max(1e-9);
    let rss = crate::cli::rss_kib();
    let views = views(tally, options.backends.wgpu);
    if as_json {
        let findings: Vec<_> = triaged.iter().map(triage::Triaged::to_json).collect();
        println!(
            "{}",
            json!({
                "execs": stats.execs,
                "seconds": seconds,
                "execs_per_second": rate,
                "classes": stats.classes,
                "first_hit_seconds": stats.first_hit,
                "findings": findings,
                "root_causes": triage::root_causes(triaged).len(),
                "collide_runs": stats.collided,
                "flaky_findings": stats.flaky.iter()
                    .map(|(s, f, p)| json!({"signature": s, "hits": f.hits, "tries": f.tries,
                        "file": p.display().to_string()}))
                    .collect::<Vec<_>>(),
                "known_findings": stats.known,
                "wgpu_compared": stats.compared,
                "replay_compared": stats.replay_compared,
                "wgpu_poisoned": stats.poisoned,
                "poisoned_share": poisoned_shares(stats, &stats.poisoned),
                "partly_poisoned": stats.partly_poisoned,
                "partly_poisoned_share": poisoned_shares(stats, &stats.partly_poisoned),
                "reference_judged": stats.reference_judged,
                "reference_gradients_judged": stats.reference_gradients,
                "reference_open": stats.reference_open,
                "reference_bounds_ulps": bound_rows(&stats.reference_bounds),
                "reference_judged_on_wgpu": stats.reference_on_wgpu,
                "reference_open_on_wgpu": stats.reference_open_on_wgpu,
                "rss_kib": rss.map(|r| r.0),
                "peak_rss_kib": rss.map(|r| r.1),
                "warm_rss_kib": warm_rss,
                "op_steps": {"ok": stats.ops.ok, "panicked": stats.ops.panicked,
                    "not_run": stats.ops.other},
                "graphs": stats.graphs,
                "graph_operations": stats.graph_operations,
                "guided": !options.blind,
                "jobs": jobs,
                "mutated": stats.mutated,
                "corpus": stats.corpus,
                "judged": views,
                "judgements": tally.rows().into_iter()
                    .map(|(key, count)| json!({"key": key, "count": count}))
                    .collect::<Vec<_>>(),
                "judged_per_dtype": tally.dtype_views(),
                "dtype_judgements": tally.dtype_rows().into_iter()
                    .map(|(key, count)| json!({"key": key, "count": count}))
                    .collect::<Vec<_>>(),
            })
        );
        return;
    }
    println!(
        "execs: {} in {seconds:.1} s ({rate:.0} execs/s)",
        stats.execs
    );
    let per_exec = |n: u64| n as f64 / (stats.execs.max(1) as f64);
    let ops = &stats.ops;
    println!(
        "per program: {:.1} op steps ({:.1} ran, {:.1} panicked, {:.1} not run), \
         {:.2} graphs completed recording {:.1} operations",
        per_exec(ops.ok + ops.panicked + ops.other),
        per_exec(ops.ok),
        per_exec(ops.panicked),
        per_exec(ops.other),
        per_exec(stats.graphs),
        per_exec(stats.graph_operations)
    );
    println!(
        "programs: {} mutated toward what the oracles judged least, {} random; corpus {}; \
         {jobs} worker{}",
        stats.mutated,
        stats.execs - stats.mutated,
        stats.corpus,
        if jobs == 1 { "" } else { "s" }
    );
    for (class, count) in &stats.classes {
        println!(
            "  {class:<34} {count:>8}  first after {:.2} s",
            stats.first_hit.get(class).copied().unwrap_or_default()
        );
    }
    if let Some((now, peak)) = rss {
        let warm = warm_rss.map_or("n/a".to_string(), |w| format!("{} MiB", w / 1024));
        println!(
            "rss: {} MiB now, {} MiB peak, {warm} after warm-up (5 s)",
            now / 1024,
            peak / 1024
        );
    }
    let open: u64 = stats.reference_open.values().sum();
    if stats.reference_judged + open > 0 {
        println!(
            "reference: {} of {} values judged against their definitions ({:.1}%)",
            stats.reference_judged,
            stats.reference_judged + open,
            100.0 * stats.reference_judged as f64 / (stats.reference_judged + open) as f64
        );
        println!(
            "  gradients judged against finite differences: {}",
            stats.reference_gradients
        );
        println!("  bounds of the judged F32 elements (zeros aside), in units in the last place:");
        for row in bound_rows(&stats.reference_bounds) {
            println!(
                "    {:<40} {:>11} elements  median {:>8}  p99 {:>8}  within 4: {:>5.1}%",
                row.family,
                row.elements,
                ulps(row.median),
                ulps(row.p99),
                100.0 * row.within_4
            );
        }
        let mut reasons: Vec<_> = stats.reference_open.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in reasons {
            println!("  open ({why}): {n}");
        }
    }
    let open: u64 = stats.reference_open_on_wgpu.values().sum();
    if stats.reference_on_wgpu + open > 0 {
        println!(
            "reference on wgpu: {} of {} values the wgpu mirror computed judged against their \
             definitions, over wgpu's own operands ({:.1}%)",
            stats.reference_on_wgpu,
            stats.reference_on_wgpu + open,
            100.0 * stats.reference_on_wgpu as f64 / (stats.reference_on_wgpu + open) as f64
        );
        let mut reasons: Vec<_> = stats.reference_open_on_wgpu.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in reasons {
            println!("  open ({why}): {n}");
        }
    }
    if stats.compared > 0 || stats.replay_compared > 0 || !stats.poisoned.is_empty() {
        println!(
            "flex vs wgpu: {} values compared; eager-replay: {} replayed outputs compared",
            stats.compared, stats.replay_compared
        );
        let shares = poisoned_shares(stats, &stats.poisoned);
        for (why, n) in &stats.poisoned {
            let share = shares.get(why).copied().unwrap_or_default();
            let grain = dispatch_fuzz::oracles::compare::Poison::named(why)
                .map_or("", |p| p.grain().0.name());
            println!(
                "  not compared ({why}, {grain}): {n} ({:.2}% of the values met)",
                100.0 * share
            );
        }
        let shares = poisoned_shares(stats, &stats.partly_poisoned);
        for (why, n) in &stats.partly_poisoned {
            let share = shares.get(why).copied().unwrap_or_default();
            println!(
                "  compared but at the elements {why} reaches: {n} ({:.2}% of the values met)",
                100.0 * share
            );
        }
    }
    print_views(&views);
    print_dtype_views(&tally.dtype_views());
    triage::print(triaged, &stats.known);
    println!(
        "collide: {} threaded programs run again with their threads at once; flaky findings: {}",
        stats.collided,
        stats.flaky.len()
    );
    for (signature, flaky, path) in &stats.flaky {
        println!(
            "  {signature}  ({} of {} collide runs)\n    {}",
            flaky.hits,
            flaky.tries,
            path.display()
        );
    }
}

/// One bound family's line of the summary.
#[derive(serde::Serialize)]
struct BoundRow {
    family: String,
    elements: u64,
    median: f64,
    p99: f64,
    within_4: f64,
}

/// Each family's tally as a row, and every family's together (`all`), largest first.
fn bound_rows(bounds: &BTreeMap<String, dispatch_fuzz::oracles::BoundTally>) -> Vec<BoundRow> {
    let mut all = dispatch_fuzz::oracles::BoundTally::default();
    let mut rows: Vec<BoundRow> = Vec::new();
    let row = |family: &str, t: &dispatch_fuzz::oracles::BoundTally| BoundRow {
        family: family.to_string(),
        elements: t.total(),
        median: t.quantile(0.5),
        p99: t.quantile(0.99),
        within_4: t.share_within(4.0),
    };
    for (family, tally) in bounds {
        all.merge(tally);
        rows.push(row(family, tally));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.elements));
    if !rows.is_empty() {
        rows.push(row("all", &all));
    }
    rows
}

/// A bound in units for the summary: up to 2^k, or unbounded.
fn ulps(x: f64) -> String {
    match x {
        x if x.is_infinite() => "inf".into(),
        x if x >= 1e6 => format!("2^{}", x.log2().round()),
        x => format!("{x}"),
    }
}
