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

fn measure(
    programs: &[Program],
    budget: Duration,
    mut f: impl FnMut(&Program) -> Result<()>,
) -> Result<(u64, f64)> {
    let start = Instant::now();
    let mut execs = 0u64;
    while start.elapsed() < budget {
        for program in programs {
            f(program)?;
            execs += 1;
        }
    }
    Ok((execs, start.elapsed().as_secs_f64()))
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
    /// Flex-vs-wgpu path needs DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu).
    #[arg(long, default_value_t = 5)]
    seconds: u64,
    /// Instead: minimize this many seeded crashing programs of 50-200 steps and print the
    /// figures (classes from DISPATCH_FUZZ_CRASH_ON, or the seed and known-bug classes).
    #[arg(long, conflicts_with_all = ["programs", "seconds"])]
    minimize: Option<usize>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        match self.minimize {
            Some(count) => minimization(count, self.seed),
            None => main(self.programs, self.seed, self.seconds),
        }
    }
}

fn main(count: usize, seed: u64, seconds: u64) -> Result<ExitCode> {
    let set = programs(count, seed, config::get().backends);
    let steps: usize = set.iter().map(|p| p.steps.len()).sum();
    let policy = Policy::default();
    println!(
        "bench: {} programs, {:.1} steps on average, seed {seed}, {} s per path",
        set.len(),
        steps as f64 / set.len().max(1) as f64,
        seconds
    );
    if dispatch_fuzz::interpreter::wgpu::enabled() {
        wgpu_costs()?;
    }
    // Warm-up: first-touch allocations and the catalogue parse are not what we measure.
    for program in &set {
        dispatch_fuzz::check_with(program, &policy)?;
    }
    let budget = Duration::from_secs(seconds);
    let (bare_execs, bare_secs) = measure(&set, budget, |p| run(p, Mode::Bare).map(drop))?;
    let bare = bare_execs as f64 / bare_secs;
    println!("bare (Burn calls only):      {bare:>9.0} execs/s ({bare_execs} in {bare_secs:.2} s)");
    // Each oracle alone, then all of them: what each one costs on top of `check`.
    let differential = dispatch_fuzz::interpreter::wgpu::enabled();
    let mut paths = vec![("check, oracles off".to_string(), Oracles::NONE, None)];
    for spec in ORACLES {
        let name = format!("check, {} only", spec.name);
        paths.push((name, Oracles::only(spec.id), Some(spec.id)));
    }
    paths.push(("check, all oracles".to_string(), Oracles::ALL, None));
    for (name, oracles, alone) in paths {
        if alone == Some(OracleId::Differential) && !differential {
            println!("{name:<28} skipped: wgpu is off (--backends flex,capture,wgpu)");
            continue;
        }
        let (execs, secs) = measure(&set, budget, |p| {
            dispatch_fuzz::check_with_oracles(p, &policy, oracles).map(drop)
        })?;
        let rate = execs as f64 / secs;
        println!(
            "{:<28} {rate:>9.0} execs/s ({execs} in {secs:.2} s), cost ratio to bare {:.2}",
            format!("{name}:"),
            bare / rate
        );
    }
    if let Some((rss, peak)) = crate::cli::rss_kib() {
        println!("rss: {} MiB, peak {} MiB", rss / 1024, peak / 1024);
    }
    Ok(ExitCode::SUCCESS)
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
    let start = Instant::now();
    let adapter = dispatch_fuzz::interpreter::wgpu::enable();
    let init = start.elapsed().as_secs_f64();
    println!(
        "wgpu start-up: {init:.2} s ({})",
        adapter.unwrap_or_else(|e| e)
    );
    const OPS: usize = 99;
    for device in ["wgpu", "flex"] {
        let chain = op_chain(device, OPS)?;
        // The first run compiles each kernel: not the steady state.
        let first = Instant::now();
        run(&chain, Mode::Bare)?;
        let first = first.elapsed().as_secs_f64();
        let rounds = if device == "wgpu" { 5 } else { 200 };
        let start = Instant::now();
        for _ in 0..rounds {
            run(&chain, Mode::Bare)?;
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

/// Minimizes `count` seeded crashing programs of 50 to 200 steps and prints the figures. The
/// classes take turns, so the easiest one does not fill the whole set.
fn minimization(count: usize, seed: u64) -> Result<ExitCode> {
    use dispatch_fuzz::minimize::{minimize_finding, Minimizer, Reproduction};

    let mut classes: Vec<String> = config::get().policy().crash_on.iter().cloned().collect();
    if classes.is_empty() {
        classes = Policy::parse(MINIMIZE_CLASSES)
            .crash_on
            .into_iter()
            .collect();
    }
    let mut rng = SplitMix64::new(seed);
    let mut rows = Vec::new();
    let mut tried = 0u64;
    while rows.len() < count {
        let policy = Policy::parse(&classes[rows.len() % classes.len()]);
        tried += 1;
        let len = 1500 + rng.below(2600) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), config::get().backends);
        if !(50..=200).contains(&program.steps.len()) {
            continue;
        }
        if dispatch_fuzz::check_with(&program, &policy)?
            .finding
            .is_none()
        {
            continue;
        }
        let (signature, minimized, reproduction) =
            minimize_finding(program, &policy, Minimizer::new())?;
        println!(
            "{:>3} -> {:>2} steps {:>5} runs {:>7.1} ms {}  {}",
            minimized.steps_before,
            minimized.steps_after,
            minimized.attempts,
            minimized.elapsed.as_secs_f64() * 1e3,
            if reproduction == Reproduction::Reproducible {
                "ok   "
            } else {
                "FLAKY"
            },
            signature.split(" | ").next().unwrap_or_default()
        );
        rows.push(minimized);
    }
    let n = rows.len() as f64;
    let mean = |f: &dyn Fn(&dispatch_fuzz::minimize::Minimized) -> f64| {
        rows.iter().map(f).sum::<f64>() / n
    };
    println!(
        "{} programs ({} drawn): mean {:.1} -> {:.1} steps, {:.0} runs, {:.1} ms; max {:.1} ms",
        rows.len(),
        tried,
        mean(&|m| m.steps_before as f64),
        mean(&|m| m.steps_after as f64),
        mean(&|m| m.attempts as f64),
        mean(&|m| m.elapsed.as_secs_f64() * 1e3),
        rows.iter()
            .map(|m| m.elapsed.as_secs_f64() * 1e3)
            .fold(0.0, f64::max)
    );
    Ok(ExitCode::SUCCESS)
}
