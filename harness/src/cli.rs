//! The command line: one module per subcommand, each an `Args` struct with `run`; the work
//! itself lives in the library.

mod accuracy;
mod bench;
mod burn_checkout;
mod cases;
mod fmt;
mod fuzz;
mod minimize;
mod nightly_report;
mod ops;
mod promote;
mod report;
mod reproducers;
mod run;
mod seed_corpus;
mod triage;
mod verdicts;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};

/// Fuzzing and regression harness for Burn's backend dispatch and graph capture.
#[derive(Parser, Debug)]
#[command(name = "dispatch-fuzz", version, after_help = dispatch_fuzz::config::help())]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    Run(run::Args),
    Fuzz(fuzz::Args),
    Fmt(fmt::Args),
    Minimize(minimize::Args),
    Promote(promote::Args),
    Triage(triage::Args),
    NightlyReport(nightly_report::Args),
    SeedCorpus(seed_corpus::Args),
    Reproducers(reproducers::Args),
    Cases(cases::Args),
    BurnCheckout(burn_checkout::Args),
    Report(report::Args),
    Bench(bench::Args),
    Ops(ops::Args),
    Accuracy(accuracy::Args),
    Verdicts(verdicts::Args),
}

/// Runs the parsed command line.
pub fn dispatch(cli: Cli) -> Result<ExitCode> {
    match cli.command {
        Command::Run(args) => args.run(),
        Command::Accuracy(args) => args.run(),
        Command::Fuzz(args) => args.run(),
        Command::Fmt(args) => args.run(),
        Command::Minimize(args) => args.run(),
        Command::Promote(args) => args.run(),
        Command::Triage(args) => args.run(),
        Command::NightlyReport(args) => args.run(),
        Command::SeedCorpus(args) => args.run(),
        Command::Reproducers(args) => args.run(),
        Command::Cases(args) => args.run(),
        Command::BurnCheckout(args) => args.run(),
        Command::Report(args) => args.run(),
        Command::Bench(args) => args.run(),
        Command::Ops(args) => args.run(),
        Command::Verdicts(args) => args.run(),
    }
}
