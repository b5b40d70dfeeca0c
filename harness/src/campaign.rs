//! The in-process fuzz session behind `dispatch-fuzz fuzz`: workers draw programs from a
//! [`Guide`], check each in the session, count what the oracles did, save each new finding as a
//! program file and hand it to a triage worker that settles it.
//!
//! It prints nothing: what happens is told to the caller as [`Event`]s and the result is an
//! [`Outcome`], both rendered by `report::campaign`. The session is for machines without
//! nightly, for CI smoke runs, and for collecting reproducers of chosen classes.

mod save;
mod stats;
pub mod triage;

pub use stats::{Stats, StepCounts};

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use rayon::prelude::*;

use crate::guide::{Guide, Origin, Tally};
use crate::hash::fnv1a;
use crate::oracles::{Finding, Signature};
use crate::program::{Backends, Entry, Flaky, Program};
use crate::{check, collide, hit_rate, Session, Verdict};
use save::{harness_fault, save};
use stats::record;

/// Collide runs of a flaky finding's program that measure its hit rate.
pub const COLLIDE_TRIES: u32 = 20;

/// What a session runs: the `fuzz` subcommand's switches, as values.
#[derive(Clone, Debug)]
pub struct Options {
    /// How long to run.
    pub seconds: u64,
    /// Seed of the byte source; a session is reproducible from it.
    pub seed: u64,
    /// Where findings are saved, one program file per signature.
    pub out: PathBuf,
    /// Stop after this many inputs over every worker (0: no limit).
    pub runs: u64,
    /// Where the first raw input that reaches each panic class is saved (libFuzzer corpus form).
    pub corpus_out: Option<PathBuf>,
    /// The backends programs decode to and run on.
    pub backends: Backends,
    /// Random programs only: no corpus, no steering.
    pub blind: bool,
    /// Workers asked for (`None`: every core, or one with wgpu).
    pub jobs: Option<usize>,
    /// Op entries to steer toward alone (empty: all).
    pub aim: Vec<Entry>,
    /// Every Nth clean threaded program runs again under collide (0: never).
    pub collide: u64,
    /// Minimizing budget per new finding (0: saved as met).
    pub triage_seconds: u64,
}

/// What one worker, or the triage worker, tells the caller while the session runs.
pub enum Event<'a> {
    /// The backends are up and the workers start.
    Started {
        /// The backends in use, with wgpu's adapter.
        backends: &'a str,
        /// The workers.
        jobs: usize,
        /// Whether programs are steered (not blind).
        guided: bool,
    },
    /// A new signature's program was saved (`flaky`: met under collide, with its hit rate).
    Saved {
        /// The finding's signature.
        signature: &'a Signature,
        /// Its program file.
        path: &'a Path,
        /// Its collide hit rate, for a flaky one.
        flaky: Option<Flaky>,
    },
    /// Worker 0's counts so far, about once a second.
    Progress {
        /// Every worker's counts.
        stats: &'a Stats,
        /// Worker 0's corpus.
        corpus: usize,
        /// The workers.
        jobs: usize,
        /// Time since the start.
        elapsed: Duration,
    },
    /// Triage starts minimizing a finding of `steps` steps, for at most `budget`.
    Minimizing {
        /// The finding's signature.
        signature: &'a Signature,
        /// Its steps as met.
        steps: usize,
        /// Its minimizing budget.
        budget: Duration,
    },
    /// Triage settled a finding of `before` steps.
    Settled {
        /// Its steps as met.
        before: usize,
        /// What triage made of it.
        verdict: &'a triage::Verdict,
    },
}

/// Where the caller hears of [`Event`]s: workers and triage call it from their threads.
pub type Listener<'a> = &'a (dyn Fn(Event<'_>) + Sync);

/// A finished session.
pub struct Outcome {
    /// Every worker's counts.
    pub stats: Stats,
    /// The new findings, settled by triage.
    pub triaged: Vec<triage::Triaged>,
    /// What the oracles judged, per (entry, kind, context), over every worker.
    pub tally: Tally,
    /// The session's length.
    pub seconds: f64,
    /// The workers it ran.
    pub jobs: usize,
}

/// The workers a session runs: `--jobs`, or every core (one with wgpu, whose one device stream
/// the workers would share: a launch failed in one would fail another's reads).
fn jobs(options: &Options) -> Result<usize> {
    Ok(match (options.jobs, options.backends.wgpu) {
        (Some(0), _) => anyhow::bail!("--jobs must be at least 1"),
        (Some(n), true) if n > 1 => anyhow::bail!(
            "--jobs {n} with wgpu: the workers would share wgpu's one device stream, where a \
             launch failed in one fails another's reads; wgpu sessions run one worker"
        ),
        (Some(n), _) => n,
        (None, true) => 1,
        (None, false) => std::thread::available_parallelism().map_or(1, usize::from),
    })
}

/// Brings the backends up and says which are in use, before the first program runs.
fn start_backends(backends: Backends) -> Result<String> {
    use crate::interpreter::wgpu;
    if !backends.wgpu {
        return Ok("flex + capture".into());
    }
    // wgpu costs ~1 ms per op on a CPU adapter: opt-in only, and it must come up before fuzzing.
    match wgpu::adapter(backends.adapter) {
        Ok(adapter) => Ok(format!("flex + capture + wgpu (adapter {adapter})")),
        Err(reason) => anyhow::bail!("{reason}"),
    }
}

/// Runs a session in `session` (on `options`' backends, wgpu on the session's adapter), telling
/// `listener` what happens. `Err`: the harness failed (a program it failed on is saved and
/// named), never Burn.
pub fn run(options: &Options, session: &Session, listener: Listener) -> Result<Outcome> {
    let checked_in = session.on(options.backends);
    let jobs = jobs(options)?;
    let backends = start_backends(checked_in.backends)?;
    let start = Instant::now();
    let (sender, receiver) = mpsc::channel();
    let mut workers = Workers {
        options,
        checked_in,
        start,
        deadline: start + Duration::from_secs(options.seconds),
        stats: Mutex::new(Stats::default()),
        stop: AtomicBool::new(false),
        jobs,
        triage: Some(sender),
        listener,
    };
    // Built first, so a bad --aim stops the session before it starts.
    let guides: Vec<Guide> = (0..jobs)
        .map(|k| guide_for(options, worker_seed(options.seed, k)))
        .collect::<Result<_>>()?;
    listener(Event::Started {
        backends: &backends,
        jobs,
        guided: guides[0].guided(),
    });
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
                triage::run(
                    &triage_session,
                    receiver,
                    budget,
                    options.backends.wgpu,
                    listener,
                )
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
    let mut stats = workers
        .stats
        .into_inner()
        .unwrap_or_else(|e| e.into_inner());
    stats.corpus = corpus;
    Ok(Outcome {
        stats,
        triaged,
        tally,
        seconds,
        jobs,
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
fn guide_for(options: &Options, seed: u64) -> Result<Guide> {
    let backends = options.backends;
    if options.aim.is_empty() {
        return Ok(Guide::new(seed, backends, !options.blind));
    }
    Guide::aimed(seed, backends, |t| options.aim.contains(&t.entry))
        .context("no oracle can judge the entries --aim names")
}

/// What the workers of one session share.
struct Workers<'a> {
    options: &'a Options,
    /// What every worker's programs are checked in: `--backends`, and the switches' policy
    /// and oracles.
    checked_in: Session,
    start: Instant,
    deadline: Instant,
    /// The counts of every worker, and the findings, deduplicated by signature.
    stats: Mutex<Stats>,
    /// Set when a worker failed: the others stop.
    stop: AtomicBool,
    jobs: usize,
    /// Where a worker sends each new finding it saved, to be settled; `None` once the workers
    /// are done.
    triage: Option<mpsc::Sender<triage::Met>>,
    listener: Listener<'a>,
}

impl Workers<'_> {
    /// Runs programs from `guide` until the deadline (or `--runs`, counted over every worker);
    /// worker 0 reports progress. Returns the guide, for its tally.
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
                    (self.listener)(Event::Saved {
                        signature: &finding.signature,
                        path: &path,
                        flaky: None,
                    });
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
                        (self.listener)(Event::Saved {
                            signature: &finding.signature,
                            path: &path,
                            flaky: Some(flaky),
                        });
                        let signature = finding.signature.to_string();
                        stats.flaky.push((signature, flaky, path));
                    }
                }
            }
            if k == 0 && last_report.elapsed() >= Duration::from_secs(1) {
                last_report = Instant::now();
                if stats.warm_rss.is_none() && self.start.elapsed() >= Duration::from_secs(5) {
                    stats.warm_rss = rss_kib().map(|(rss, _)| rss);
                }
                (self.listener)(Event::Progress {
                    stats: &stats,
                    corpus: guide.corpus_len(),
                    jobs: self.jobs,
                    elapsed: self.start.elapsed(),
                });
            }
        }
        Ok(guide)
    }

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

/// Resident set size now and at its peak, in KiB, from `/proc/self/status` (Linux only).
pub fn rss_kib() -> Option<(u64, u64)> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse().ok())
    };
    Some((field("VmRSS:")?, field("VmHWM:")?))
}
