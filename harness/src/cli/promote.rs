//! `dispatch-fuzz promote FINDING`: a finding becomes a stored case, or (`--also CASE`) part of one.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::config;
use dispatch_fuzz::regressions::{promote, promote_also, Promotion};

/// Minimize a finding and store it as a regression case with its snapshot.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Finding: a program file saved by `fuzz` or a libFuzzer artifact.
    input: PathBuf,
    /// Case name (lowercase, '-' and '_'), named after the bug; default: the class.
    #[arg(long)]
    name: Option<String>,
    /// Root-cause paragraph; defaults to the catalogue record's documentation.
    #[arg(long)]
    root_cause: Option<String>,
    /// Add the finding to stored case CASE as another program of its root cause (its `also`
    /// list: the same bug met through another entry or dtype), instead of a new case
    #[arg(long, value_name = "CASE", conflicts_with_all = ["name", "root_cause"])]
    also: Option<String>,
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    dir: PathBuf,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let session = dispatch_fuzz::Session::from_config();
        if let Some(case) = &self.also {
            let backends = config::get().backends;
            let (path, signature, m) =
                promote_also(&self.input, case, &self.dir, backends, &session)?;
            println!(
                "{}: also `{signature}` ({} -> {} steps, {} runs); build again for the key to know it",
                path.display(),
                m.steps_before,
                m.steps_after,
                m.attempts
            );
            return Ok(ExitCode::SUCCESS);
        }
        let request = Promotion {
            input: self.input,
            name: self.name,
            root_cause: self.root_cause,
            dir: self.dir,
            backends: config::get().backends,
        };
        let done = promote(request, &session)?;
        let m = &done.minimized;
        println!(
            "{}: {} -> {} steps, {} runs, {:.2} s; snapshot {}",
            done.path.display(),
            m.steps_before,
            m.steps_after,
            m.attempts,
            m.elapsed.as_secs_f64(),
            done.snapshot.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
