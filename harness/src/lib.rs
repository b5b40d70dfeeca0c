//! `dispatch-fuzz`: a fuzzing and regression harness for Burn's backend dispatch layer
//! (`burn-dispatch`) and its graph-capture backend (`burn-capture`), on the Flex CPU backend.
//!
//! The roles, each in its own module: [`program`] generates test cases, [`interpreter`] runs
//! them on the real crates, [`oracles`] decides what is a bug. The fuzz target, the CLI and
//! `cargo test` all go through [`check`], so they can never drift apart.

#![warn(missing_docs)]

pub mod interpreter;
pub mod minimize;
pub mod oracles;
pub mod program;

use anyhow::Result;
use serde::{Deserialize, Serialize};

use interpreter::{Mode, Trace};
use oracles::{Finding, Policy};
use program::Program;

/// The result of checking one program.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    /// What each step did, with every panic classified.
    pub trace: Trace,
    /// The first finding, if any.
    pub finding: Option<Finding>,
}

/// Runs `program` and classifies its trace under this process's policy
/// (`DISPATCH_FUZZ_CRASH_ON`). `Err` means the harness itself failed, never Burn.
pub fn check(program: &Program) -> Result<Verdict> {
    check_with(program, Policy::from_env())
}

/// [`check`] under an explicit policy.
pub fn check_with(program: &Program, policy: &Policy) -> Result<Verdict> {
    check_with_oracles(program, policy, interpreter::Oracles::ALL)
}

/// [`check`] under an explicit policy with a choice of oracles (the benchmark turns them off).
pub fn check_with_oracles(
    program: &Program,
    policy: &Policy,
    oracles: interpreter::Oracles,
) -> Result<Verdict> {
    let mut trace = interpreter::run_with(program, Mode::Full, oracles)?;
    if oracles.model {
        // The model compares classes of panics, so they are assigned first.
        oracles::assign_classes(&mut trace);
        let report = oracles::model::check(program, &trace);
        trace.violations.extend(report.violations);
        trace.known_divergences = report.known;
    }
    let finding = oracles::classify(&mut trace, policy);
    Ok(Verdict { trace, finding })
}

/// What the fuzz target runs for each input: decode, check, and abort with a `DEDUP_TOKEN` line
/// on a finding. Call [`fuzz_init`] once first.
pub fn fuzz_one(data: &[u8]) {
    let program = Program::from_fuzz_bytes(data);
    match check(&program) {
        Ok(Verdict {
            finding: Some(finding),
            ..
        }) => {
            report(&finding.signature, &finding.message, &program);
            if !no_abort() {
                std::process::abort();
            }
        }
        Ok(_) => {}
        // The harness's own failure always stops the run, whatever DISPATCH_FUZZ_NO_ABORT says.
        Err(error) => {
            report("harness-error", &format!("{error:#}"), &program);
            std::process::abort();
        }
    }
}

/// Environment variable: report findings in the fuzz target without aborting. For runs that
/// must execute every input to the end, such as `cargo fuzz coverage` over a corpus that holds a
/// known finding (an aborted process writes no coverage profile).
pub const NO_ABORT_VAR: &str = "DISPATCH_FUZZ_NO_ABORT";

fn no_abort() -> bool {
    static NO_ABORT: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *NO_ABORT.get_or_init(|| std::env::var_os(NO_ABORT_VAR).is_some_and(|v| v != "0"))
}

fn report(signature: &str, message: &str, program: &Program) {
    eprintln!("==dispatch-fuzz== finding: {message}");
    eprintln!("==dispatch-fuzz== program:\n{program}");
    eprintln!("DEDUP_TOKEN: {signature}");
}

/// Installs the panic hook the fuzz target needs: catalogued panics inside a step unwind into
/// the interpreter; a panic that is a finding under the policy aborts at once with its
/// `DEDUP_TOKEN`, so libFuzzer records the crash with the panic's own stack.
pub fn fuzz_init() {
    fn policy(panic: &interpreter::PanicInfo) {
        let mut panic = panic.clone();
        panic.class = oracles::class_of(&panic);
        if Policy::from_env().is_finding(&panic.class) {
            eprintln!(
                "==dispatch-fuzz== panic at {}: {}",
                panic.location.as_deref().unwrap_or("?"),
                panic.message
            );
            eprintln!("DEDUP_TOKEN: {}", oracles::signature(&panic));
            if !no_abort() {
                std::process::abort();
            }
        }
    }
    interpreter::install_panic_hook(Some(policy));
}

pub mod files;
pub mod regressions;
pub mod rng;
