//! `dispatch-fuzz`: run, fuzz, print and benchmark programs against Burn's dispatch layer.

mod cli;

// See harness/Cargo.toml: small allocations are most of what `check` adds to Burn's own work.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    // A malformed DISPATCH_FUZZ_* switch is a usage error, reported before anything runs.
    if let Err(error) = dispatch_fuzz::config::try_get() {
        eprintln!("error: {error}");
        return ExitCode::from(2);
    }
    let args = cli::Cli::parse();
    match cli::dispatch(args) {
        Ok(code) => code,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::from(2)
        }
    }
}
