//! `dispatch-fuzz verdicts`: the verdict of every program of a seeded set, one line each, so
//! that two builds of the harness can be compared program by program.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use rayon::prelude::*;

use dispatch_fuzz::interpreter::pool;
use dispatch_fuzz::program::{Program, Step};
use dispatch_fuzz::rng::SplitMix64;
use dispatch_fuzz::{check, Session};

/// Run `check` over a seeded set of random programs and write one line per program: its
/// index, its finding's signature (`-` for none) and a digest of its whole verdict
/// (`Verdict::stable_digest`). A refactor of the harness must leave the file unchanged. A
/// program that draws random values runs alone with Flex's generator seeded (wgpu's is not:
/// with wgpu on, its draws follow the process).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Programs in the set.
    #[arg(long, default_value_t = 20_000)]
    programs: usize,
    /// Seed of the set.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to write the lines (default: stdout).
    #[arg(long)]
    out: Option<PathBuf>,
    /// Worker threads (default: every core); the lines come out in program order whatever
    /// the count.
    #[arg(long, value_parser = clap::value_parser!(u16).range(1..))]
    jobs: Option<u16>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        // The switches' session (backends, policy, oracles off), as `fuzz` runs programs.
        let session = Session::from_config();
        let set = programs(self.programs, self.seed, &session);
        let jobs = self.jobs.map_or_else(
            || std::thread::available_parallelism().map_or(1, usize::from),
            usize::from,
        );
        // A program that draws random values runs alone, Flex seeded with its index: Flex's
        // one generator is shared by the whole process, so its draws (and the verdicts that
        // follow them: a finite-difference gradient through them is judged or left open by
        // their values) would follow whatever else drew before or beside it.
        let draws = |p: &Program| p.steps.iter().any(Step::draws);
        let pool = rayon::ThreadPoolBuilder::new().num_threads(jobs).build()?;
        let mut lines: Vec<Option<Line>> = pool.install(|| {
            set.par_iter()
                .enumerate()
                .map(|(i, p)| (!draws(p)).then(|| line(i, p, &session)).transpose())
                .collect::<Result<_>>()
        })?;
        let mut drawing = 0;
        for (i, p) in set.iter().enumerate().filter(|(_, p)| draws(p)) {
            pool::seed_flex(i as u64);
            lines[i] = Some(line(i, p, &session)?);
            drawing += 1;
        }
        let lines: Vec<Line> = lines.into_iter().flatten().collect();
        let text: String = lines.iter().map(|l| l.text.as_str()).collect();
        match &self.out {
            Some(path) => std::fs::write(path, &text)
                .with_context(|| format!("writing {}", path.display()))?,
            None => std::io::stdout().write_all(text.as_bytes())?,
        }
        let findings = lines.iter().filter(|l| l.finding).count();
        eprintln!(
            "verdicts: {} programs (seed {}), {findings} with a finding, {drawing} drawing random \
             values (run one at a time, Flex seeded), digest {:016x}",
            set.len(),
            self.seed,
            dispatch_fuzz::hash::fnv1a(&[text.as_bytes()])
        );
        Ok(ExitCode::SUCCESS)
    }
}

/// The set: random bytes of up to 3,000 bytes decoded as programs, as the agreement tests
/// draw them.
fn programs(count: usize, seed: u64, session: &Session) -> Vec<Program> {
    let mut rng = SplitMix64::new(seed);
    (0..count)
        .map(|_| {
            let len = rng.below(3000) as usize;
            Program::from_fuzz_bytes(&rng.bytes(len), session.backends)
        })
        .collect()
}

/// One program's line, and whether its verdict has a finding.
struct Line {
    text: String,
    finding: bool,
}

fn line(index: usize, program: &Program, session: &Session) -> Result<Line> {
    let verdict = check(session, program).with_context(|| format!("program {index}"))?;
    let finding = verdict
        .finding
        .as_ref()
        .map_or_else(|| "-".to_string(), |f| f.signature.to_string());
    Ok(Line {
        text: format!("{index}\t{finding}\t{:016x}\n", verdict.stable_digest()?),
        finding: verdict.finding.is_some(),
    })
}
