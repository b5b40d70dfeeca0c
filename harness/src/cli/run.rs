//! `dispatch-fuzz run FILE`: execute one program file and print its trace.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use dispatch_fuzz::interpreter::Outcome;
use dispatch_fuzz::program::Program;
use dispatch_fuzz::program::ProgramFile;
use dispatch_fuzz::report::{render, Style};
use dispatch_fuzz::{check, Session, Verdict};

/// Run one program file and print its trace. Exit 0: no finding, 1: finding, 2: bad input.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Program file (JSON).
    file: PathBuf,
    /// Print one JSON object instead of the listing.
    #[arg(long)]
    json: bool,
    /// Print a line to stderr as the program starts and as each step starts, for a parent
    /// that kills a run past libFuzzer's limits and names the step it was in.
    #[arg(long)]
    progress: bool,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        if self.progress {
            dispatch_fuzz::interpreter::install_progress(|step| {
                eprintln!(
                    "{}{step}",
                    dispatch_fuzz::regressions::limited::PROGRESS_PREFIX
                );
            });
        }
        main(&self.file, self.json, self.progress)
    }
}

fn main(path: &Path, as_json: bool, progress: bool) -> Result<ExitCode> {
    let file = match ProgramFile::load(path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let program = file.program();
    if progress {
        eprintln!("{}", dispatch_fuzz::regressions::limited::START_LINE);
    }
    let verdict = check(&Session::from_config(), &program)?;
    if as_json {
        println!("{}", to_json(&program, &verdict));
    } else {
        print!("{}", render(&program, &verdict, Style::Raw));
    }
    Ok(if verdict.finding.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--json` form: `{"finding", "known_findings", "known_divergences", "steps": [{"index",
/// "step", "outcome"}]}`, the finding with its facts (entry, dtype, deviation, backend): `known_findings` names the stored cases whose finding the run showed
/// again, which the text form prints too (a clean run has none).
fn to_json(program: &Program, verdict: &Verdict) -> serde_json::Value {
    let steps: Vec<_> = verdict
        .trace
        .steps
        .iter()
        .map(|r| {
            let step = program
                .steps
                .get(r.index)
                .map(dispatch_fuzz::program::step_line);
            let outcome = match &r.outcome {
                Outcome::Ok { .. } => json!({"kind": "ok"}),
                Outcome::Error { error, message } => {
                    json!({"kind": "error", "class": error, "message": message})
                }
                Outcome::Panic(p) => json!({
                    "kind": "panic", "class": p.class, "message": p.message, "location": p.location
                }),
                Outcome::Skipped { reason } => json!({"kind": "skipped", "message": reason}),
            };
            json!({"index": r.index, "step": step, "outcome": outcome})
        })
        .collect();
    let finding = verdict.finding.as_ref().map(|f| {
        json!({
            "signature": f.signature, "class": f.class, "step": f.step, "message": f.message,
            "facts": f.facts
        })
    });
    json!({
        "finding": finding,
        "known_findings": verdict.known_findings,
        "known_divergences": verdict.oracles.known_divergences,
        "steps": steps
    })
}
