//! `dispatch-fuzz run FILE`: execute one program file and print its trace.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use dispatch_fuzz::files::ProgramFile;
use dispatch_fuzz::interpreter::Outcome;
use dispatch_fuzz::program::Program;
use dispatch_fuzz::{check, Verdict};

pub fn main(path: &Path, as_json: bool) -> Result<ExitCode> {
    let file = match ProgramFile::load(path) {
        Ok(file) => file,
        Err(error) => {
            eprintln!("error: {error}");
            return Ok(ExitCode::from(2));
        }
    };
    let program = file.program();
    let verdict = check(&program)?;
    if as_json {
        println!("{}", to_json(&program, &verdict));
    } else {
        print!("{}", listing(&program, &verdict));
    }
    Ok(if verdict.finding.is_some() {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// The `--json` form: `{"finding", "steps": [{"index", "step", "outcome"}]}`.
pub fn to_json(program: &Program, verdict: &Verdict) -> serde_json::Value {
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
    let finding = verdict
        .finding
        .as_ref()
        .map(|f| json!({"signature": f.signature, "class": f.class}));
    json!({"finding": finding, "steps": steps})
}

/// The human form: each step's code line and its outcome, then the verdict.
pub fn listing(program: &Program, verdict: &Verdict) -> String {
    let mut out = String::new();
    for record in &verdict.trace.steps {
        let line = program
            .steps
            .get(record.index)
            .map(dispatch_fuzz::program::step_line)
            .unwrap_or_default();
        out.push_str(&format!("{:>3}  {line}\n", record.index));
        out.push_str(&format!("     -> {}\n", describe(&record.outcome)));
    }
    if let Some(panic) = &verdict.trace.teardown {
        out.push_str(&format!("teardown panicked: {}\n", panic.message));
    }
    match &verdict.finding {
        Some(f) => out.push_str(&format!("finding: {}\n", f.signature)),
        None => out.push_str("finding: none\n"),
    }
    out
}

fn describe(outcome: &Outcome) -> String {
    match outcome {
        Outcome::Ok {
            value,
            graph,
            outputs,
        } => {
            let mut s = "ok".to_string();
            if let Some(v) = value {
                s.push_str(&format!(
                    " {:?} {} {:?} on {}",
                    v.kind, v.dtype, v.shape, v.device
                ));
                if let Some(d) = &v.digest {
                    s.push_str(&format!(" #{d}"));
                }
            }
            if let Some(g) = graph {
                s.push_str(&format!(
                    " graph: {} ops, {} inputs, {} outputs, {} values",
                    g.operations, g.inputs, g.outputs, g.values
                ));
            }
            for v in outputs {
                s.push_str(&format!(" [{:?} {:?}", v.kind, v.shape));
                if let Some(d) = &v.digest {
                    s.push_str(&format!(" #{d}"));
                }
                s.push(']');
            }
            s
        }
        Outcome::Error { error, message } => format!("error {error}: {message}"),
        Outcome::Panic(p) => format!(
            "PANIC [{}] {} at {}",
            p.class,
            p.message,
            p.location.as_deref().unwrap_or("?")
        ),
        Outcome::Skipped { reason } => format!("skipped: {reason}"),
    }
}
