//! `dispatch-fuzz`: a fuzzing and regression harness for Burn's backend dispatch layer
//! (`burn-dispatch`) and its graph-capture backend (`burn-capture`), on Flex and wgpu.
//!
//! The roles, each in its own module: [`program`] generates test cases and imports nothing
//! above it, [`interpreter`] runs them on the real crates and judges nothing, [`oracles`] decide
//! what is a bug, [`minimize`] shrinks findings, [`regressions`] stores them, [`report`] prints
//! everything a person reads, [`campaign`] runs the in-process fuzz session, and [`guide`] steers
//! it toward what the oracles have judged least. The libFuzzer targets ([`libfuzzer`]), the CLI
//! and `cargo test` all go through [`check`], in a [`Session`] they hold, so they can never drift
//! apart.

#![warn(missing_docs)]

// Table entries name harness helpers by their path in the reproducers they print, which are
// examples of this crate: the same path must resolve inside it.
extern crate self as dispatch_fuzz;

pub mod accuracy;
pub mod campaign;
pub mod checkout;
pub mod config;
pub mod guide;
pub mod hash;
pub mod interpreter;
pub mod libfuzzer;
pub mod minimize;
#[cfg(feature = "cli")]
pub mod nightly;
pub mod oracles;
pub mod program;
pub mod regressions;
pub mod report;
pub mod rng;
mod session;

pub use session::Session;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use interpreter::Trace;
use oracles::{Finding, OracleReport, Signature};
use program::{Flaky, Program};

/// The result of checking one program.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What each step did, with every panic classified.
    pub trace: Trace,
    /// What the oracles found and counted.
    #[serde(flatten)]
    pub oracles: OracleReport,
    /// Reviewed regression cases whose finding the run showed again (known findings: not
    /// findings unless the policy says `known`).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub known_findings: Vec<String>,
    /// The first finding, if any.
    pub finding: Option<Finding>,
}

/// Runs `program` in `session`: on its backends, with its oracles following, every panic
/// classified under its policy. `Err` means the harness itself failed, never Burn.
pub fn check(session: &Session, program: &Program) -> Result<Verdict> {
    let policy = &session.policy;
    let mut judged = oracles::run(program, session.backends, session.oracles)?;
    let classified = oracles::classify(
        &program.steps,
        &mut judged.trace,
        &judged.report.violations,
        policy,
    );
    Ok(Verdict {
        trace: judged.trace,
        oracles: judged.report,
        known_findings: classified.known,
        finding: classified.finding,
    })
}

/// Runs `program` in `session` under collide ([`interpreter::run_colliding`]): neighbouring
/// runs of steps on different program threads at the same time. Outcomes follow the timing, so
/// no oracle follows (its report is empty); every panic is classified as [`check`] classifies
/// it, and an unknown one, or a pooled device left refusing a scope, is the finding. A class the
/// policy names as a finding (`DISPATCH_FUZZ_CRASH_ON`) is not one here: a guard a race reached
/// (a tensor moved before another thread's scope materialized it) is no reproducer of it. A
/// single-threaded program runs as under [`check`], without its oracles.
pub fn collide(session: &Session, program: &Program) -> Result<Verdict> {
    let mut trace = interpreter::run_colliding(program, session.backends)?;
    let policy = oracles::Policy {
        crash_on: Default::default(),
        ..session.policy.clone()
    };
    let classified = oracles::classify(&program.steps, &mut trace, &[], &policy);
    Ok(Verdict {
        trace,
        oracles: OracleReport::default(),
        known_findings: classified.known,
        finding: classified.finding,
    })
}

impl Verdict {
    /// A digest of everything the verdict decides (the finding, the known findings, every
    /// violation, each step's outcome and the oracles' counts) that stays the same across
    /// processes and whatever ran before in them: the raw texts of panics and errors are taken
    /// with their tensor and device ids normalized (`oracles::normalize_message`), as those come
    /// from process-global counters, and the values' data digests and the reference's bound
    /// tallies (how tightly it judged each element) are left out, as a random draw's data, and
    /// so the elements judged after it, follow the generator's state the earlier programs left
    /// (the oracles judge the data; what they decided is in the digest). Two builds that give
    /// every program of a seeded set the same digest decide alike.
    pub fn stable_digest(&self) -> Result<u64> {
        let mut value = serde_json::to_value(self)?;
        normalize_texts(&mut value);
        Ok(hash::fnv1a(&[value.to_string().as_bytes()]))
    }
}

/// Normalizes every `message` and `reason` text in `value`, at any depth, and drops every data
/// `digest` and bound tally (`bounds`).
fn normalize_texts(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::Object(map) => {
            map.remove("digest");
            map.remove("bounds");
            for (key, v) in map.iter_mut() {
                match v {
                    serde_json::Value::String(s) if key == "message" || key == "reason" => {
                        *s = oracles::normalize_message(s);
                    }
                    _ => normalize_texts(v),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter_mut().for_each(normalize_texts),
        _ => {}
    }
}

/// How often `signature` comes back when `program` runs `tries` more times under collide in
/// `session`: what a finding [`collide`] met, and [`check`] did not, is kept with.
pub fn hit_rate(
    session: &Session,
    program: &Program,
    signature: &Signature,
    tries: u32,
) -> Result<Flaky> {
    let mut hits = 0;
    for _ in 0..tries {
        let verdict = collide(session, program)?;
        hits += u32::from(verdict.finding.is_some_and(|f| &f.signature == signature));
    }
    Ok(Flaky { hits, tries })
}
