//! `dispatch-fuzz burn-checkout`: the harness built against a local Burn checkout.

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use anyhow::{Context, Result};

use dispatch_fuzz::checkout::{cargo, inspect, write_copy};

/// Builds and runs the harness against a local Burn checkout: a copy of this project (in
/// `--work`, under `target/` by default) pins the checkout's versions and patches every Burn
/// crate to its folder, so the project's own files are never touched. `cases` says which stored
/// cases are fixed, still failing, or failing differently; `fuzz` runs the main job; `test` runs
/// the whole suite; `prepare` only writes the copy.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The Burn checkout (the repository's top folder, or any workspace holding its crates).
    path: PathBuf,
    /// What to run against it.
    #[arg(value_enum, default_value = "cases")]
    what: What,
    /// Seconds of fuzzing, for `fuzz`.
    #[arg(long, default_value_t = 60)]
    seconds: u64,
    /// Where the copy and its target dir go (kept between runs, so rebuilds are incremental).
    #[arg(long)]
    work: Option<PathBuf>,
}

#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum What {
    Cases,
    Fuzz,
    Test,
    Prepare,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let project = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..");
        let project = project.canonicalize().unwrap_or(project);
        let lock_path = project.join("Cargo.lock");
        let lock = std::fs::read_to_string(&lock_path)
            .with_context(|| format!("cannot read {}", lock_path.display()))?;
        let checkout = inspect(&self.path, &lock)?;
        let work = self
            .work
            .unwrap_or_else(|| project.join("target/burn-checkout"));
        let copy = work.join("project");
        let written = write_copy(&project, &copy, &checkout)?;
        let burn = &checkout.patched["burn"].version;
        println!(
            "Burn checkout {}: burn {burn}, {} crates patched ({}); copy in {} ({written} files \
             written)",
            self.path.display(),
            checkout.patched.len(),
            checkout
                .patched
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", "),
            copy.display()
        );
        // Debug builds for cases and tests: the catalogue's debug-assertion panics must fire.
        let args: Vec<String> = match self.what {
            What::Prepare => return Ok(ExitCode::SUCCESS),
            What::Cases => vec!["run", "-p", "dispatch-fuzz", "--", "cases"]
                .into_iter()
                .map(String::from)
                .collect(),
            What::Fuzz => [
                "run",
                "--release",
                "-p",
                "dispatch-fuzz",
                "--",
                "fuzz",
                "--seconds",
            ]
            .into_iter()
            .map(String::from)
            .chain([self.seconds.to_string()])
            .collect(),
            What::Test => vec!["test".to_string()],
        };
        println!("running `cargo {}` in the copy", args.join(" "));
        let status = Command::new(cargo())
            .args(&args)
            .current_dir(&copy)
            .env("CARGO_TARGET_DIR", work.join("target"))
            .status()
            .context("cannot run cargo")?;
        Ok(match status.code() {
            Some(0) => ExitCode::SUCCESS,
            Some(1) => ExitCode::from(1),
            _ => ExitCode::from(2),
        })
    }
}
