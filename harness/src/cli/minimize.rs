//! `dispatch-fuzz minimize INPUT`: shrink a finding while its signature stays the same.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::config;
use dispatch_fuzz::hash::fnv1a;
use dispatch_fuzz::minimize::{minimize_finding, session_for, Minimizer, Reproduction};
use dispatch_fuzz::program::{Input, ProgramFile};
use dispatch_fuzz::regressions::settle_alone;
use dispatch_fuzz::Session;

/// Minimizes `path` under this process's policy, its own finding included (a known one too);
/// returns the minimized file and where it went.
fn minimize_to_file(path: &Path, quiet: bool) -> Result<Option<ProgramFile>> {
    let input = Input::load(path, config::get().backends)?;
    if let Some(flaky) = input.flaky {
        anyhow::bail!(
            "{}: a flaky finding (met under collide in {} of {} runs) has no verdict to keep \
             while minimizing: the serial schedule never meets it",
            path.display(),
            flaky.hits,
            flaky.tries
        );
    }
    let session = session_for(&input, &Session::from_config());
    let Input {
        program, origin, ..
    } = input;
    let interactive = std::io::stderr().is_terminal() && !quiet;
    let minimizer = Minimizer::new().on_progress(move |p| {
        if interactive {
            eprint!(
                "\r{:<28} {:>4} steps {:>6} attempts {:>6.1} s\x1b[K",
                p.pass,
                p.steps,
                p.attempts,
                p.elapsed.as_secs_f64()
            );
            let _ = std::io::stderr().flush();
        }
    });
    let original = program.clone();
    let (signature, minimized, reproduction) = minimize_finding(program, &session, minimizer)?;
    if interactive {
        eprintln!();
    }
    eprintln!(
        "minimized {}: {} -> {} steps, {} runs ({} from the memo), {:.2} s",
        path.display(),
        minimized.steps_before,
        minimized.steps_after,
        minimized.attempts,
        minimized.cache_hits,
        minimized.elapsed.as_secs_f64()
    );
    if let Reproduction::Flaky { reproduced, runs } = reproduction {
        eprintln!(
            "FLAKY: the minimized program reproduced {reproduced} of {runs} re-runs; not saved"
        );
        return Ok(None);
    }
    let class = signature.class.to_string();
    let signature = signature.to_string();
    let (minimized, again) = match settle_alone(&original, &signature, minimized, &session) {
        Ok(settled) => settled,
        Err(e) => {
            eprintln!("STATEFUL: {e:#}; not saved");
            return Ok(None);
        }
    };
    if again {
        eprintln!(
            "the first result gave its finding only after earlier candidates in this process; \
             minimized again, each candidate in a new process: {} -> {} steps, {} runs ({} from \
             the memo), {:.2} s",
            minimized.steps_before,
            minimized.steps_after,
            minimized.attempts,
            minimized.cache_hits,
            minimized.elapsed.as_secs_f64()
        );
    }
    Ok(Some(ProgramFile {
        signature: Some(signature),
        class: Some(class),
        origin: Some(format!("minimized from {origin}")),
        steps: minimized.program.steps,
        ..ProgramFile::default()
    }))
}

/// Shrink a finding (libFuzzer artifact or program file) keeping its signature.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Artifact or program file.
    input: PathBuf,
    /// Write the minimized program file into this directory instead of printing it.
    #[arg(long)]
    out: Option<PathBuf>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        main(&self.input, self.out.as_ref())
    }
}

fn main(input: &Path, out: Option<&PathBuf>) -> Result<ExitCode> {
    let Some(file) = minimize_to_file(input, false)? else {
        return Ok(ExitCode::from(1));
    };
    match out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let signature = file.signature.clone().unwrap_or_default();
            let name = format!(
                "{}-{:016x}.json",
                file.class.clone().unwrap_or_default(),
                fnv1a(&[signature.as_bytes()])
            );
            let path = dir.join(name);
            std::fs::write(&path, file.to_text())
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("{}", path.display());
        }
        None => print!("{}", file.to_text()),
    }
    Ok(ExitCode::SUCCESS)
}
