//! The session's triage worker: settles each new finding (minimized, run again) beside the
//! fuzzing workers.

use std::path::PathBuf;
use std::sync::mpsc::Receiver;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{Event, Listener};
use crate::minimize::triage::{settle, Settled};
use crate::oracles::{Deviation, Facts, Signature};
use crate::program::ProgramFile;
use crate::Session;

/// A new finding as a worker saved it.
pub struct Met {
    /// Its signature.
    pub signature: Signature,
    /// Its program file as saved.
    pub file: ProgramFile,
    /// Where it was saved.
    pub path: PathBuf,
}

/// A new finding and what triage made of it.
pub struct Triaged {
    /// Its signature.
    pub signature: Signature,
    /// Its program file, minimized where triage settled it.
    pub path: PathBuf,
    /// What triage made of it.
    pub verdict: Verdict,
}

/// Triage's verdict on one finding.
pub enum Verdict {
    /// Minimized from `before` to `after` steps in `seconds`; the file now holds the minimized
    /// program.
    New {
        /// Steps as met.
        before: usize,
        /// Steps minimized.
        after: usize,
        /// Time minimizing took.
        seconds: f64,
        /// The minimized finding's facts (deviation, entry, backend).
        facts: Facts,
    },
    /// Not reproduced alone; the file holds the program as met.
    Unsettled {
        /// Why it did not show again.
        why: String,
    },
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
    listener: Listener,
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
            (Some(budget), None) => match one(session, &met, budget, listener) {
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

fn one(session: &Session, met: &Met, budget: Duration, listener: Listener) -> Result<Verdict> {
    let start = Instant::now();
    let program = met.file.program();
    let before = program.steps.len();
    listener(Event::Minimizing {
        signature: &met.signature,
        steps: before,
        budget,
    });
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
    listener(Event::Settled {
        before,
        verdict: &verdict,
    });
    Ok(verdict)
}

/// The root cause a settled new finding is grouped under: its class and origin, the deviation
/// and the backend, with the op entry for a wrong value or a panic (a lost dtype is the
/// recording's or replay's, whatever the op: it keeps the recorded dtype's kind instead). A
/// finding with no facts is a root cause of its own.
pub fn root_cause(triaged: &Triaged) -> Option<String> {
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
