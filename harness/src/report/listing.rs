//! The trace listing `dispatch-fuzz run` prints and regression snapshots store: each step's
//! code and outcome, then the verdict.

use std::fmt::Write as _;

use crate::interpreter::{Outcome, PanicInfo, ValueInfo};
use crate::oracles::catalogue::burn_file;
use crate::oracles::normalize_message;
use crate::program::{step_line, Kind, Program};
use crate::Verdict;

/// How much of a trace to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Everything, as the run produced it (for `dispatch-fuzz run`).
    Raw,
    /// Stable across runs, processes and machines (for snapshots): digits in messages become
    /// `N` (tensor and device ids), locations become `crate/src/file.rs:line` (the harness's
    /// own call sites lose their line, which moves with every edit), the panicking
    /// thread is left out, and float digests are left out (Flex's SIMD paths may round
    /// differently on other CPUs; int and bool digests are exact).
    Normalized,
}

fn location(panic: &PanicInfo, style: Style) -> String {
    let raw = panic.location.clone().unwrap_or_else(|| "?".into());
    match style {
        Style::Raw => raw,
        Style::Normalized => {
            let file = burn_file(&raw).unwrap_or_else(|| "?".into());
            // A `#[track_caller]` call site in the harness's own source moves with every edit
            // of it: the file is what tells the case's story, not the line.
            if file.starts_with("harness/") {
                return file;
            }
            let line = raw.split(':').nth(1).unwrap_or("?");
            format!("{file}:{line}")
        }
    }
}

fn value(v: &ValueInfo, style: Style) -> String {
    let mut s = format!("{:?} {:?} {:?} on {}", v.kind, v.dtype, v.shape, v.device);
    let exact = v.kind != Kind::Float;
    if let Some(d) = v.digest.as_ref().filter(|_| style == Style::Raw || exact) {
        let _ = write!(s, " #{d}");
    }
    s
}

/// One outcome on one line.
pub fn describe(outcome: &Outcome, style: Style) -> String {
    let message = |m: &str| match style {
        Style::Raw => m.to_string(),
        Style::Normalized => normalize_message(m),
    };
    match outcome {
        Outcome::Ok {
            value: v,
            graph,
            outputs,
        } => {
            let mut s = "ok".to_string();
            if let Some(v) = v {
                let _ = write!(s, " {}", value(v, style));
            }
            if let Some(g) = graph {
                let _ = write!(
                    s,
                    " graph: {} ops, {} inputs, {} outputs, {} values",
                    g.operations, g.inputs, g.outputs, g.values
                );
            }
            for v in outputs {
                let _ = write!(s, " [{}]", value(v, style));
            }
            s
        }
        Outcome::Error { error, message: m } => format!("error {error}: {}", message(m)),
        Outcome::Panic(p) => format!(
            "PANIC [{}] {} at {}",
            p.class,
            message(&p.message),
            location(p, style)
        ),
        Outcome::Skipped { reason } => format!("skipped: {reason}"),
    }
}

/// The listing `dispatch-fuzz run` prints and snapshots store: each step's code and outcome,
/// then the verdict.
pub fn render(program: &Program, verdict: &Verdict, style: Style) -> String {
    let mut out = String::new();
    for record in &verdict.trace.steps {
        let line = program
            .steps
            .get(record.index)
            .map(step_line)
            .unwrap_or_default();
        let _ = writeln!(out, "{:>3}  {line}", record.index);
        let _ = writeln!(out, "     -> {}", describe(&record.outcome, style));
    }
    if let Some(panic) = &verdict.trace.teardown {
        let _ = writeln!(
            out,
            "teardown -> {}",
            describe(&Outcome::Panic(panic.clone()), style)
        );
    }
    for side in &verdict.trace.side_panics {
        let at = side
            .step
            .map_or_else(|| "the end".to_string(), |s| format!("step {s}"));
        let _ = writeln!(
            out,
            "side panic at {at} ({}) -> {}",
            side.site,
            describe(&Outcome::Panic(side.panic.clone()), style)
        );
    }
    for side in &verdict.trace.side_errors {
        let at = side
            .step
            .map_or_else(|| "the end".to_string(), |s| format!("step {s}"));
        let _ = writeln!(
            out,
            "side error at {at} ({}) -> {}: {}",
            side.site, side.error, side.message
        );
    }
    if !verdict.known_findings.is_empty() {
        let _ = writeln!(out, "known findings: {}", verdict.known_findings.join(", "));
    }
    if !verdict.oracles.known_divergences.is_empty() {
        let _ = writeln!(
            out,
            "known divergences: {}",
            verdict.oracles.known_divergences.join(", ")
        );
    }
    match &verdict.finding {
        Some(f) => {
            let _ = writeln!(out, "finding: {}", f.signature);
        }
        None => out.push_str("finding: none\n"),
    }
    out
}
