//! The command line: one module per subcommand.

mod bench;
mod fmt;
mod fuzz;
mod minimize;
mod nightly;
mod promote;
mod run;
mod seed_corpus;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Fuzzing and regression harness for Burn's backend dispatch and graph capture.
#[derive(Parser, Debug)]
#[command(name = "dispatch-fuzz", version)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run one program file and print its trace. Exit 0: no finding, 1: finding, 2: bad input.
    Run {
        /// Program file (JSON).
        file: PathBuf,
        /// Print one JSON object instead of the listing.
        #[arg(long)]
        json: bool,
    },
    /// In-process fuzz session on the stable toolchain: seeded random bytes -> program -> check.
    Fuzz {
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
        /// Backends to fuzz: `flex,capture` (default), or `flex,capture,wgpu` to add wgpu
        /// (adapter from DISPATCH_FUZZ_WGPU: auto, gpu or cpu). Default from
        /// DISPATCH_FUZZ_BACKENDS.
        #[arg(long)]
        backends: Option<String>,
    },
    /// Print a libFuzzer artifact (raw bytes) or a program file as a readable program.
    Fmt {
        /// Artifact file (or, with --rust, a program file too).
        file: PathBuf,
        /// Print the program file (JSON) instead of the listing.
        #[arg(long, conflicts_with = "rust")]
        json: bool,
        /// Run it and print a paste-ready Rust reproducer against Burn's public API.
        #[arg(long)]
        rust: bool,
    },
    /// Shrink a finding (libFuzzer artifact or program file) keeping its signature.
    Minimize {
        /// Artifact or program file.
        input: PathBuf,
        /// Write the minimized program file into this directory instead of printing it.
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Minimize a finding and store it as a regression case with its snapshot.
    Promote {
        /// Finding: a program file saved by `fuzz` or a libFuzzer artifact.
        input: PathBuf,
        /// Case name (lowercase, '-' and '_'), named after the bug; default: the class.
        #[arg(long)]
        name: Option<String>,
        /// Root-cause paragraph; defaults to the catalogue record's documentation.
        #[arg(long)]
        root_cause: Option<String>,
        /// The regression store.
        #[arg(long, default_value = "regressions")]
        dir: PathBuf,
    },
    /// Bucket a night's libFuzzer artifacts by signature, promote one minimized reproducer per
    /// new bucket into regressions/pending, count panic classes over the corpus (ci/nightly.sh).
    /// Exit 1 when a bucket is new.
    Triage(nightly::TriageOptions),
    /// Write report.md, report.json and chart.svg from a nightly output folder.
    NightlyReport {
        /// The nightly output folder (logs/, triage-*.json, coverage/, timings.tsv).
        #[arg(long)]
        dir: PathBuf,
        /// Fuzz targets to report on.
        #[arg(long, default_value = "dispatch_ops")]
        targets: Vec<String>,
    },
    /// Regenerate the fuzzer seeds made from every stored program (regression cases and
    /// known-divergence reproducers), so each fuzz session starts from every known bug.
    SeedCorpus {
        /// The regression store.
        #[arg(long, default_value = "regressions")]
        regressions: PathBuf,
        /// Where the seeds go (a subfolder of the fuzz target's corpus).
        #[arg(long, default_value = "corpus/dispatch_ops/regressions")]
        out: PathBuf,
    },
    /// Benchmark `check`, oracle by oracle, against the bare Burn calls on a fixed seeded set.
    Bench {
        /// Programs in the set.
        #[arg(long, default_value_t = 500)]
        programs: usize,
        /// Seed of the set.
        #[arg(long, default_value_t = 1)]
        seed: u64,
        /// Seconds to spend on each path (bare, then each oracle alone and all together;
        /// the Flex-vs-wgpu path needs DISPATCH_FUZZ_BACKENDS=flex,capture,wgpu).
        #[arg(long, default_value_t = 5)]
        seconds: u64,
        /// Instead: minimize this many seeded crashing programs of 50-200 steps and print the
        /// figures (classes from DISPATCH_FUZZ_CRASH_ON, or the seed and known-bug classes).
        #[arg(long)]
        minimize: Option<usize>,
    },
}

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run { file, json } => run::main(&file, json),
        Command::Fuzz {
            seconds,
            seed,
            out,
            json,
            runs,
            corpus_out,
            backends,
        } => fuzz::main(fuzz::Options {
            backends,
            seconds,
            seed,
            out,
            json,
            runs,
            corpus_out,
        }),
        Command::Fmt {
            file, rust: true, ..
        } => fmt::rust(&file),
        Command::Fmt { file, json, .. } => fmt::main(&file, json),
        Command::Minimize { input, out } => minimize::main(&input, out.as_ref()),
        Command::Promote {
            input,
            name,
            root_cause,
            dir,
        } => promote::main(promote::Options {
            input,
            name,
            root_cause,
            dir,
        }),
        Command::SeedCorpus { regressions, out } => seed_corpus::main(&regressions, &out),
        Command::Triage(options) => nightly::triage(options),
        Command::NightlyReport { dir, targets } => nightly::report(&dir, &targets),
        Command::Bench {
            programs,
            seed,
            seconds,
            minimize: Some(count),
        } => {
            let _ = (programs, seconds);
            bench::minimization(count, seed)
        }
        Command::Bench {
            programs,
            seed,
            seconds,
            minimize: None,
        } => bench::main(programs, seed, seconds),
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
