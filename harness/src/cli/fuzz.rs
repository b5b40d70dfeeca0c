//! `dispatch-fuzz fuzz`: an in-process session on the stable toolchain.
//!
//! Programs come from a guide: random bytes from a seeded SplitMix64 decoded exactly as the
//! libFuzzer target decodes its inputs, mixed with corpus programs mutated toward the (entry,
//! kind, context) triples the oracles have judged least (`--blind` turns that off). The summary
//! says what each oracle judged per entry. The session is for machines without nightly, for CI
//! smoke runs, and for collecting reproducers of chosen classes with `DISPATCH_FUZZ_CRASH_ON`.
//! A new finding is minimized and run again on a triage worker of its own before the summary
//! reports it, grouped by root cause. The session is `campaign`'s; this prints it.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Result;

use dispatch_fuzz::campaign::{self, Event, Options};
use dispatch_fuzz::config;
use dispatch_fuzz::program::{Backends, Entry, Family};
use dispatch_fuzz::report::campaign as render;

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

fn parse_entry(text: &str) -> Result<Entry, String> {
    let (family, name) = text
        .split_once(':')
        .ok_or_else(|| format!("`{text}` is not `family:name` (e.g. `unary:exp`)"))?;
    let family = Family::named(family).ok_or_else(|| {
        let names: Vec<&str> = Family::ALL.iter().map(|f| f.name()).collect();
        format!("no op family `{family}` (families: {})", names.join(", "))
    })?;
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
            format!(
                "no entry `{name}` in `{family}` (its entries: {})",
                in_family.join(", ")
            )
        })
}

fn parse_backends(list: &str) -> Result<Backends, String> {
    Backends::parse(list)
        .map_err(|name| format!("unknown backend `{name}` (allowed: flex, capture, wgpu)"))
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let options = Options {
            seconds: self.seconds,
            seed: self.seed,
            out: self.out,
            runs: self.runs,
            corpus_out: self.corpus_out,
            backends: self.backends,
            blind: self.blind,
            jobs: self.jobs,
            aim: self.aim,
            collide: self.collide,
            triage_seconds: self.triage_seconds,
        };
        let interactive = std::io::stderr().is_terminal();
        // A live line on a terminal; a line every 10 s in logs, where `\r` would pile up.
        let every = Duration::from_secs(if interactive { 1 } else { 10 });
        let last_progress = Mutex::new(Instant::now());
        let listener = |event: Event| match event {
            Event::Started {
                backends,
                jobs,
                guided,
            } => eprintln!("{}", render::started_line(&options, backends, jobs, guided)),
            Event::Saved {
                signature,
                path,
                flaky,
            } => eprintln!("\n{}", render::saved_lines(signature, path, flaky)),
            Event::Progress {
                stats,
                corpus,
                jobs,
                elapsed,
            } => {
                let mut last = last_progress.lock().unwrap_or_else(|e| e.into_inner());
                if last.elapsed() < every {
                    return;
                }
                *last = Instant::now();
                let line = render::progress_line(stats, corpus, jobs, elapsed);
                if interactive {
                    eprint!("\r{line}\x1b[K");
                } else {
                    eprintln!("{line}");
                }
                let _ = std::io::stderr().flush();
            }
            Event::Minimizing {
                signature,
                steps,
                budget,
            } => eprintln!("\n{}", render::minimizing_line(signature, steps, budget)),
            Event::Settled { before, verdict } => {
                if let Some(line) = render::settled_line(before, verdict) {
                    eprintln!("{line}");
                }
            }
        };
        let outcome = campaign::run(&options, &dispatch_fuzz::Session::from_config(), &listener)?;
        eprintln!();
        if self.json {
            println!("{}", render::summary_json(&outcome, &options));
        } else {
            print!("{}", render::summary_text(&outcome, &options));
        }
        Ok(if outcome.triaged.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}
