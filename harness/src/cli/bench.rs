//! `dispatch-fuzz bench`: execs/s of the full `check` against the bare Burn calls.
//!
//! Both paths run the same fixed, seeded set of programs (at most `BENCH_MAX_STEPS` steps). The
//! bare path is `interpreter::run(.., Mode::Bare)`: the same Burn calls under `catch_unwind`,
//! without outcomes, digests, classification or the state-leak check. Figures only: speed
//! targets live here, never in timed tests.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::Result;

use dispatch_fuzz::config;
use dispatch_fuzz::interpreter::{run, Mode};
use dispatch_fuzz::oracles::{OracleId, Oracles, Policy, ORACLES};
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;
use dispatch_fuzz::Session;

/// Steps per benchmark program: the size the harness core's speed target is stated for.
const BENCH_MAX_STEPS: usize = 32;

fn programs(count: usize, seed: u64, backends: Backends) -> Vec<Program> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let len = 64 + rng.below(2048) as usize;
            let mut steps = Program::from_fuzz_bytes(&rng.bytes(len), backends).steps;
            steps.truncate(BENCH_MAX_STEPS);
            Program::new(steps)
        })
        .collect()
}

/// What a path runs over the set, one pass.
type Run = Box<dyn Fn(&[Program]) -> Result<()>>;

/// One path of the benchmark: a name and what it runs on each program.
struct Path {
    /// What `--only` names it by.
    key: &'static str,
    name: String,
    run: Run,
    execs: u64,
    secs: f64,
}

impl Path {
    /// A path that runs `run` on each program in turn, on this thread.
    fn new(
        key: &'static str,
        name: impl Into<String>,
        run: impl Fn(&Program) -> Result<()> + 'static,
    ) -> Path {
        Path::over_set(key, name, move |set| set.iter().try_for_each(&run))
    }

    /// A path that runs `run` over the whole set (spread over a thread pool).
    fn over_set(
        key: &'static str,
        name: impl Into<String>,
        run: impl Fn(&[Program]) -> Result<()> + 'static,
    ) -> Path {
        Path {
            key,
            name: name.into(),
            run: Box::new(run),
            execs: 0,
            secs: 0.0,
        }
    }

    fn rate(&self) -> f64 {
        self.execs as f64 / self.secs.max(f64::MIN_POSITIVE)
    }
}

/// Runs the paths in turns, one pass over the set each, until each has had `budget`. The
/// machine's speed drifts (a shared VM measured 18,000 and 26,700 bare execs/s a minute
/// apart): paths run one after another would fold that drift into their ratios, paths that
/// take turns share it.
fn measure(programs: &[Program], budget: Duration, paths: &mut [Path]) -> Result<()> {
    let budget = budget.as_secs_f64();
    while paths.iter().any(|p| p.secs < budget) {
        for path in paths.iter_mut() {
            let start = Instant::now();
            while start.elapsed() < MIN_TURN {
                (path.run)(programs)?;
                path.execs += programs.len() as u64;
            }
            path.secs += start.elapsed().as_secs_f64();
        }
    }
    Ok(())
}

/// The least time a path runs passes for in one turn. A pass over the default set on two
/// workers takes ~15 ms, and a worker's core, idle while a one-thread path ran, takes a while to
/// come back on a virtual machine: with one pass per turn, `all-jobs` ran 1.5x `all` in one run,
/// and 2.0x in a run of its own (500 programs); with 5,000, 1.8x.
const MIN_TURN: Duration = Duration::from_millis(250);

/// One program on the bare path. Its own function, never inlined, so that callgrind can count
/// this path alone (`ci/bench-ir.sh` toggles collection on it).
#[inline(never)]
fn bare_program(program: &Program, backends: Backends) -> Result<()> {
    run(program, backends, Mode::Bare).map(drop)
}

/// One program through `check` in `session`: like [`bare_program`], what `ci/bench-ir.sh`
/// counts for a check path.
#[inline(never)]
fn checked_program(program: &Program, session: &Session) -> Result<()> {
    dispatch_fuzz::check(session, program).map(drop)
}

/// Benchmark `check`, oracle by oracle, against the bare Burn calls on a fixed seeded set.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Programs in the set.
    #[arg(long, default_value_t = 500)]
    programs: usize,
    /// Seed of the set.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Seconds to spend on each path (bare, then each oracle alone and all together; the
    /// Flex-vs-wgpu path needs DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu). The paths take turns,
    /// one pass over the set each, so a drift in the machine's speed is shared by all of them.
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Only these paths (comma-separated), e.g. `--only all` to profile one path alone, or
    /// `--only bare,all` for the one ratio.
    #[arg(long, value_delimiter = ',', value_parser = path_keys(), conflicts_with = "minimize")]
    only: Vec<String>,
    /// Workers of the `all-jobs` path: `check` with all oracles over the set on this many
    /// threads, as `fuzz --jobs` runs it (default: every core). Not with wgpu, whose one
    /// device stream `fuzz --jobs` does not share either. With `--minimize`: the candidates
    /// the parallel minimizer runs at once.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
    /// Instead: minimize this many seeded crashing programs of 50-200 steps and print the
    /// figures (classes from DISPATCH_FUZZ_CRASH_ON, or the seed and known-bug classes).
    #[arg(long, conflicts_with_all = ["programs", "seconds"])]
    minimize: Option<usize>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let jobs = self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            usize::from,
        );
        match self.minimize {
            Some(count) => minimization(count, self.seed, jobs),
            None => main((self.programs, self.seed, self.seconds), &self.only, jobs),
        }
    }
}

/// The names `--only` takes: the bare path, `check` with no oracle, each oracle alone (by its
/// name in [`ORACLES`], so a new oracle is a path without a word here), all but the reference,
/// all, and all on every core.
fn path_keys() -> clap::builder::PossibleValuesParser {
    let oracles = ORACLES.iter().map(|spec| spec.name);
    clap::builder::PossibleValuesParser::new(["bare", "off"].into_iter().chain(oracles).chain([
        "all-but-reference",
        "all",
        "all-jobs",
    ]))
}

fn main(
    (count, seed, seconds): (usize, u64, u64),
    only: &[String],
    jobs: usize,
) -> Result<ExitCode> {
    let backends = config::get().backends;
    let set = programs(count, seed, backends);
    let steps: usize = set.iter().map(|p| p.steps.len()).sum();
    // The default policy, whatever the switches say: the figures compare like with like.
    let session = Session::new(backends);
    println!(
        "bench: {} programs, {:.1} steps on average, seed {seed}, {} s per path",
        set.len(),
        steps as f64 / set.len().max(1) as f64,
        seconds
    );
    if backends.wgpu {
        wgpu_costs()?;
    }
    // Warm-up: first-touch allocations and the catalogue parse are not what we measure.
    for program in &set {
        dispatch_fuzz::check(&session, program)?;
    }
    // Each oracle alone, then all of them: what each one costs on top of `check`.
    let differential = backends.wgpu;
    let mut paths = vec![Path::new("bare", "bare (Burn calls only)", move |p| {
        bare_program(p, backends)
    })];
    let check = |key: &'static str, name: String, oracles: Oracles| {
        let session = session.with_oracles(oracles);
        Path::new(key, name, move |p| checked_program(p, &session))
    };
    paths.push(check("off", "check, oracles off".into(), Oracles::NONE));
    for spec in ORACLES {
        let name = format!("check, {} only", spec.name);
        if spec.id == OracleId::Differential && !differential {
            println!("{name:<34} skipped: wgpu is off (--backends flex,capture,wgpu)");
            continue;
        }
        paths.push(check(spec.name, name, Oracles::only(spec.id)));
    }
    // What the reference oracle adds to all the others (the one that computes every value
    // again on host arrays).
    paths.push(check(
        "all-but-reference",
        "check, all oracles but reference".into(),
        Oracles::ALL.without(OracleId::Reference),
    ));
    paths.push(check("all", "check, all oracles".into(), Oracles::ALL));
    // The same on `jobs` workers: what `fuzz --jobs` gains, in the same run as one worker.
    if differential {
        println!(
            "{:<34} skipped: wgpu is on",
            format!("check, all oracles, {jobs} jobs:")
        );
    } else {
        use rayon::prelude::*;
        let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
        let session = session.clone();
        paths.push(Path::over_set(
            "all-jobs",
            format!("check, all oracles, {jobs} jobs"),
            move |set| {
                pool.install(|| {
                    set.par_iter()
                        .try_for_each(|p| checked_program(p, &session))
                })
            },
        ));
    }
    paths.retain(|p| only.is_empty() || only.iter().any(|o| o == p.key));
    measure(&set, Duration::from_secs(seconds), &mut paths)?;
    print_rates(&paths, jobs);
    Ok(ExitCode::SUCCESS)
}

/// Each path's execs/s and its cost ratios to bare and to oracles off, the jobs' gain, and the
/// process's memory.
fn print_rates(paths: &[Path], jobs: usize) {
    let bare = paths.iter().find(|p| p.key == "bare").map(Path::rate);
    // What the oracles cost on top of `check`'s own bookkeeping, beside the ratio to bare.
    let off = paths.iter().find(|p| p.key == "off").map(Path::rate);
    for path in paths {
        let rate = path.rate();
        print!(
            "{:<34} {rate:>9.0} execs/s ({} in {:.2} s)",
            format!("{}:", path.name),
            path.execs,
            path.secs
        );
        if let Some(bare) = bare.filter(|_| path.key != "bare") {
            print!(", cost ratio to bare {:.2}", bare / rate);
        }
        if let Some(off) = off.filter(|_| !matches!(path.key, "bare" | "off")) {
            print!(", to oracles off {:.2}", off / rate);
        }
        println!();
    }
    let all = paths.iter().find(|p| p.key == "all").map(Path::rate);
    let many = paths.iter().find(|p| p.key == "all-jobs").map(Path::rate);
    if let (Some(one), Some(many)) = (all, many) {
        println!("{jobs} jobs to 1 job: {:.2}x the execs/s", many / one);
    }
    if let Some((rss, peak)) = dispatch_fuzz::campaign::rss_kib() {
        println!("rss: {} MiB, peak {} MiB", rss / 1024, peak / 1024);
    }
}

/// A chain of `n` small ops, each read back, on `device`: what one op costs on a backend.
fn op_chain(device: &str, n: usize) -> Result<Program> {
    let mut steps = vec![format!(
        r#"{{"create": {{"out": 0, "kind": "float", "shape": [4, 4], "fill": "arange", "device": "{device}"}}}}"#
    )];
    for i in 0..n {
        let (src, out) = (i % 6, i % 6 + 1);
        steps.push(format!(
            r#"{{"op": {{"out": {out}, "op": {{"scalar": {{"op": "add", "src": {src}, "value": 1}}}}}}}}"#
        ));
        steps.push(format!(r#"{{"read": {{"src": {out}, "fallible": true}}}}"#));
    }
    let text = format!("{{\"steps\": [{}]}}", steps.join(","));
    Ok(dispatch_fuzz::program::ProgramFile::parse(&text, "<bench>")?.program())
}

/// wgpu's start-up (device init, once per process) and the cost of one small op plus its read
/// on wgpu and on Flex, through the bare interpreter.
fn wgpu_costs() -> Result<()> {
    let backends = Backends::WITH_WGPU.with_adapter(config::get().backends.adapter);
    let start = Instant::now();
    let adapter = dispatch_fuzz::interpreter::wgpu::adapter(backends.adapter);
    let init = start.elapsed().as_secs_f64();
    println!(
        "wgpu start-up: {init:.2} s ({})",
        adapter.map_or_else(|e| e, |a| a.to_string())
    );
    const OPS: usize = 99;
    for device in ["wgpu", "flex"] {
        let chain = op_chain(device, OPS)?;
        // The first run compiles each kernel: not the steady state.
        let first = Instant::now();
        run(&chain, backends, Mode::Bare)?;
        let first = first.elapsed().as_secs_f64();
        let rounds = if device == "wgpu" { 5 } else { 200 };
        let start = Instant::now();
        for _ in 0..rounds {
            run(&chain, backends, Mode::Bare)?;
        }
        let per_op = start.elapsed().as_secs_f64() / (rounds * OPS) as f64;
        println!(
            "{device}: {:.1} us per small op + read ({first:.2} s for the first chain, kernels compiling)",
            per_op * 1e6
        );
    }
    Ok(())
}

/// Classes minimized by `bench --minimize` when `DISPATCH_FUZZ_CRASH_ON` names none.
const MINIMIZE_CLASSES: &str = "capture-tensor-not-materialized,operation-outside-capture-scope,\
     capture-scope-complete,int-dtype-mismatch";

/// Minimizes `count` seeded crashing programs of 50 to 200 steps, each with one candidate at a
/// time and then `jobs` at a time (every wave, whatever a run costs), and prints the figures. The classes take turns, so the
/// easiest one does not fill the whole set.
fn minimization(count: usize, seed: u64, jobs: usize) -> Result<ExitCode> {
    use dispatch_fuzz::minimize::{minimize_finding, Minimized, Minimizer, Reproduction};

    let mut classes: Vec<String> = config::get().policy().crash_on.iter().cloned().collect();
    if classes.is_empty() {
        classes = Policy::parse(MINIMIZE_CLASSES)
            .crash_on
            .into_iter()
            .collect();
    }
    let mut rng = SplitMix64::new(seed);
    let mut rows: Vec<(Minimized, Minimized)> = Vec::new();
    let mut tried = 0u64;
    println!("minimize: one candidate at a time | {jobs} at a time");
    while rows.len() < count {
        let session =
            Session::from_config().with_policy(Policy::parse(&classes[rows.len() % classes.len()]));
        tried += 1;
        let len = 1500 + rng.below(2600) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), session.backends);
        if !(50..=200).contains(&program.steps.len()) {
            continue;
        }
        if dispatch_fuzz::check(&session, &program)?.finding.is_none() {
            continue;
        }
        // Every wave at once, however cheap a run: what the minimizer's threshold is set from.
        let minimize = |jobs: usize| {
            let minimizer = Minimizer::new().jobs(jobs).parallel_from(Duration::ZERO);
            minimize_finding(program.clone(), &session, minimizer)
        };
        let (signature, one, reproduction) = minimize(1)?;
        let (_, many, _) = minimize(jobs)?;
        println!(
            "{:>3} -> {:>2} steps {:>5} runs {:>7.1} ms | {:>5} runs {:>7.1} ms{} {}  {}",
            one.steps_before,
            one.steps_after,
            one.attempts,
            one.elapsed.as_secs_f64() * 1e3,
            many.attempts,
            many.elapsed.as_secs_f64() * 1e3,
            if one.program == many.program {
                ""
            } else {
                " (another program)"
            },
            if reproduction == Reproduction::Reproducible {
                "ok   "
            } else {
                "FLAKY"
            },
            signature.class
        );
        rows.push((one, many));
    }
    let n = rows.len() as f64;
    let mean = |f: &dyn Fn(&(Minimized, Minimized)) -> f64| rows.iter().map(f).sum::<f64>() / n;
    let ms = |m: &Minimized| m.elapsed.as_secs_f64() * 1e3;
    println!(
        "{} programs ({} drawn): mean {:.1} -> {:.1} steps; one at a time {:.0} runs, {:.1} ms, \
         max {:.1} ms; {jobs} at a time {:.0} runs, {:.1} ms, max {:.1} ms",
        rows.len(),
        tried,
        mean(&|r| r.0.steps_before as f64),
        mean(&|r| r.0.steps_after as f64),
        mean(&|r| r.0.attempts as f64),
        mean(&|r| ms(&r.0)),
        rows.iter().map(|r| ms(&r.0)).fold(0.0, f64::max),
        mean(&|r| r.1.attempts as f64),
        mean(&|r| ms(&r.1)),
        rows.iter().map(|r| ms(&r.1)).fold(0.0, f64::max),
    );
    let total = |k: fn(&(Minimized, Minimized)) -> &Minimized| -> f64 {
        rows.iter().map(|r| ms(k(r))).sum()
    };
    println!(
        "{jobs} at a time to one at a time: {:.2}x faster over the whole set",
        total(|r| &r.0) / total(|r| &r.1).max(1e-9)
    );
    Ok(ExitCode::SUCCESS)
}
