//! `dispatch-fuzz promote FINDING`: a finding becomes a regression case plus its snapshot.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::config;
use dispatch_fuzz::regressions::{promote, Promotion};

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
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    dir: PathBuf,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let request = Promotion {
            input: self.input,
            name: self.name,
            root_cause: self.root_cause,
            dir: self.dir,
            backends: config::get().backends,
        };
        let done = promote(request, &dispatch_fuzz::Session::from_config())?;
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
