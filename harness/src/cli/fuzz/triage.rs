//! The session's triage worker: settles each new finding (minimized, run again) beside the fuzzing workers.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use serde_json::json;

use dispatch_fuzz::minimize::triage::{settle, Settled};
use dispatch_fuzz::oracles::{Deviation, Facts, Signature};
use dispatch_fuzz::program::ProgramFile;
use dispatch_fuzz::Session;

/// A new finding as a worker saved it.
pub struct Met {
    pub signature: Signature,
    pub file: ProgramFile,
    pub path: PathBuf,
}

/// A new finding and what triage made of it.
pub struct Triaged {
    pub signature: Signature,
    pub path: PathBuf,
    pub verdict: Verdict,
}

/// Triage's verdict on one finding.
pub enum Verdict {
    /// Minimized from `before` to `after` steps in `seconds`; the file now holds the minimized
    /// program.
    New {
        before: usize,
        after: usize,
        seconds: f64,
        facts: Facts,
    },
    /// Not reproduced alone; the file holds the program as met.
    Unsettled { why: String },
    /// Triage is off (`--triage-seconds 0`) or stopped on a harness failure; the file holds
    /// the program as met.
    NotTriaged,
}

/// Settles what `receiver` brings, each finding within `budget` (none: saved as met). With
/// `after_workers` (wgpu, whose one device stream a minimization would share with the worker)
/// nothing runs until every worker is done and the channel closes. A harness failure while
/// settling stops triage; the findings left are reported as not reached.
pub fn run(
    session: &Session,
    receiver: Receiver<Met>,
    budget: Option<Duration>,
    after_workers: bool,
) -> Result<Vec<Triaged>> {
    let queued: Box<dyn Iterator<Item = Met>> = if after_workers {
        Box::new(receiver.iter().collect::<Vec<_>>().into_iter())
    } else {
        Box::new(receiver.iter())
    };
    let mut triaged = Vec::new();
    let mut failed = None;
    for met in queued {
        let verdict = match (budget, &failed) {
            (Some(budget), None) => match one(session, &met, budget) {
                Ok(verdict) => verdict,
                Err(error) => {
                    failed = Some(error);
                    Verdict::NotTriaged
                }
            },
            _ => Verdict::NotTriaged,
        };
        triaged.push(Triaged {
            signature: met.signature,
            path: met.path,
            verdict,
        });
    }
    match failed {
        Some(error) => Err(error.context("triage failed (the harness, not Burn)")),
        None => Ok(triaged),
    }
}

fn one(session: &Session, met: &Met, budget: Duration) -> Result<Verdict> {
    let start = Instant::now();
    let program = met.file.program();
    let before = program.steps.len();
    eprintln!(
        "\ntriage: minimizing {} ({before} steps, at most {} s)",
        met.signature,
        budget.as_secs()
    );
    let verdict = match settle(session, program, &met.signature, budget)? {
        Settled::New { minimized, facts } => {
            let seconds = start.elapsed().as_secs_f64();
            let file = ProgramFile {
                origin: Some(format!(
                    "{}; minimized in the session, {before} -> {} steps",
                    met.file.origin.as_deref().unwrap_or("a fuzz session"),
                    minimized.steps_after
                )),
                steps: minimized.program.steps,
                ..met.file.clone()
            };
            std::fs::write(&met.path, file.to_text())
                .with_context(|| format!("cannot write {}", met.path.display()))?;
            Verdict::New {
                before,
                after: minimized.steps_after,
                seconds,
                facts,
            }
        }
        Settled::Unsettled { why } => Verdict::Unsettled { why },
    };
    match &verdict {
        Verdict::New { after, seconds, .. } => {
            eprintln!("triage: {before} -> {after} steps in {seconds:.1} s, still new")
        }
        Verdict::Unsettled { why } => eprintln!("triage: unsettled: {why}"),
        Verdict::NotTriaged => {}
    }
    Ok(verdict)
}

impl Triaged {
    /// Its line in the JSON summary.
    pub fn to_json(&self) -> serde_json::Value {
        let mut row = json!({
            "signature": self.signature.to_string(),
            "file": self.path.display().to_string(),
        });
        let extra = match &self.verdict {
            Verdict::New {
                before,
                after,
                seconds,
                facts,
            } => json!({"triage": "new", "steps_before": before, "steps_after": after,
                "triage_seconds": seconds, "facts": facts, "root_cause": root_cause(self)}),
            Verdict::Unsettled { why } => json!({"triage": "unsettled", "why": why}),
            Verdict::NotTriaged => json!({"triage": "not-triaged"}),
        };
        if let (Some(row), serde_json::Value::Object(extra)) = (row.as_object_mut(), extra) {
            row.extend(extra);
        }
        row
    }
}

/// The root cause a settled new finding is grouped under: its class and origin, the deviation
/// and the backend, with the op entry for a wrong value or a panic (a lost dtype is the
/// recording's or replay's, whatever the op: it keeps the recorded dtype's kind instead). A
/// finding with no facts is a root cause of its own.
fn root_cause(triaged: &Triaged) -> Option<String> {
    let Verdict::New { facts, .. } = &triaged.verdict else {
        return None;
    };
    let s = &triaged.signature;
    let (Some(deviation), Some(entry)) = (facts.deviation, &facts.entry) else {
        return Some(s.to_string());
    };
    let mut key = match deviation {
        Deviation::Dtype { recorded, got } => format!(
            "{} ({}): dtype {} for a recorded {:?}",
            s.class,
            s.origin,
            got.spec().name,
            recorded.kind()
        ),
        other => format!("{} ({}) at {entry}: {other}", s.class, s.origin),
    };
    if let Some(backend) = facts.backend {
        key.push_str(&format!(" on {}", backend.name()));
    }
    Some(key)
}

/// The settled new findings grouped by root cause, in the order each was first met.
pub fn root_causes(triaged: &[Triaged]) -> Vec<(String, Vec<&Triaged>)> {
    let mut groups: Vec<(String, Vec<&Triaged>)> = Vec::new();
    for t in triaged {
        let Some(key) = root_cause(t) else { continue };
        match groups.iter_mut().find(|(k, _)| *k == key) {
            Some((_, members)) => members.push(t),
            None => groups.push((key, vec![t])),
        }
    }
    groups
}

/// The summary's findings: new root causes first, then the stored cases met again, then the
/// findings triage could not settle.
pub fn print(triaged: &[Triaged], known: &BTreeMap<String, u64>) {
    let groups = root_causes(triaged);
    let new: usize = groups.iter().map(|(_, m)| m.len()).sum();
    println!(
        "findings: {} ({new} new in {} root cause{}, {} unsettled, {} not triaged)",
        triaged.len(),
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        count(triaged, |v| matches!(v, Verdict::Unsettled { .. })),
        count(triaged, |v| matches!(v, Verdict::NotTriaged)),
    );
    if !groups.is_empty() {
        println!("new root causes (class, origin, op entry, deviation, backend):");
    }
    for (key, members) in &groups {
        println!("  {key}");
        for t in members {
            if let Verdict::New { before, after, .. } = t.verdict {
                println!(
                    "    {}  (minimized {before} -> {after} steps)\n      {}",
                    t.signature,
                    t.path.display()
                );
            }
        }
    }
    if !known.is_empty() {
        println!("known root causes met (stored cases, not findings):");
        for (case, n) in known {
            println!("  {case:<60} {n:>8}");
        }
    }
    for (title, pick) in [
        (
            "unsettled (not shown again alone; saved as met):",
            (|v| matches!(v, Verdict::Unsettled { .. })) as fn(&Verdict) -> bool,
        ),
        ("not triaged (saved as met):", |v| {
            matches!(v, Verdict::NotTriaged)
        }),
    ] {
        let rows: Vec<&Triaged> = triaged.iter().filter(|t| pick(&t.verdict)).collect();
        if rows.is_empty() {
            continue;
        }
        println!("{title}");
        for t in rows {
            let why = match &t.verdict {
                Verdict::Unsettled { why } => format!(": {why}"),
                _ => String::new(),
            };
            println!("  {}{why}\n    {}", t.signature, t.path.display());
        }
    }
}

fn count(triaged: &[Triaged], pick: impl Fn(&Verdict) -> bool) -> usize {
    triaged.iter().filter(|t| pick(&t.verdict)).count()
}
