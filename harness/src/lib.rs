//! `dispatch-fuzz`: a fuzzing and regression harness for Burn's backend dispatch layer
//! (`burn-dispatch`) and its graph-capture backend (`burn-capture`), on Flex and wgpu.
//!
//! The roles, each in its own module: [`program`] generates test cases and imports nothing
//! above it, [`interpreter`] runs them on the real crates and judges nothing, [`oracles`] decide
//! what is a bug, [`minimize`] shrinks findings, [`regressions`] stores them, [`report`] prints
//! everything a person reads, and [`guide`] steers the in-process session toward what the oracles
//! have judged least. The fuzz target ([`fuzz`]), the CLI and `cargo test` all go
//! through [`check`], so they can never drift apart.

#![warn(missing_docs)]

// Table entries name harness helpers by their path in the reproducers they print, which are
// examples of this crate: the same path must resolve inside it.
extern crate self as dispatch_fuzz;

pub mod checkout;
pub mod config;
pub mod fuzz;
pub mod guide;
pub mod hash;
pub mod interpreter;
pub mod minimize;
#[cfg(feature = "cli")]
pub mod nightly;
pub mod oracles;
pub mod program;
pub mod regressions;
pub mod report;
pub mod rng;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use interpreter::Trace;
use oracles::{Finding, OracleReport, Oracles, Policy};
use program::Program;

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

/// Runs `program` with every oracle (but those `DISPATCH_FUZZ_ORACLES_OFF` names) and classifies
/// what happened under this process's policy (`DISPATCH_FUZZ_CRASH_ON`). `Err` means the harness itself failed, never Burn.
pub fn check(program: &Program) -> Result<Verdict> {
    check_with(program, config::get().policy())
}

/// [`check`] under an explicit policy (the oracles still those of this process's switches).
pub fn check_with(program: &Program, policy: &Policy) -> Result<Verdict> {
    check_with_oracles(program, policy, config::get().oracles)
}

/// [`check`] under an explicit policy with a choice of oracles (the benchmark turns them off).
pub fn check_with_oracles(program: &Program, policy: &Policy, oracles: Oracles) -> Result<Verdict> {
    let mut judged = oracles::run(program, oracles)?;
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
