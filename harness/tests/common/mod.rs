//! Helpers shared by the integration tests: paths into the repository and program loading.

#![allow(dead_code)]

use std::path::PathBuf;

use dispatch_fuzz::program::Program;
use dispatch_fuzz::program::ProgramFile;

/// The repository root (the workspace above `harness/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A program from `corpus/dispatch_ops/programs/NAME.json`.
pub fn corpus_program(name: &str) -> Program {
    let path = repo().join(format!("corpus/dispatch_ops/programs/{name}.json"));
    ProgramFile::load(&path)
        .unwrap_or_else(|e| panic!("corpus program {name} does not load: {e}"))
        .program()
}

/// A program from inline JSON steps.
pub fn program(json: &str) -> Program {
    ProgramFile::parse(&format!("{{\"steps\": {json}}}"), "<inline>")
        .expect("inline program parses")
        .program()
}

thread_local! {
    static SEEN: std::cell::RefCell<Vec<dispatch_fuzz::fuzz::HookDecision>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// A panic-hook policy that records what the fuzz target would decide for each caught panic
/// (install it with `interpreter::install_panic_hook(Some(record))`).
pub fn record(panic: &dispatch_fuzz::interpreter::PanicInfo) {
    let policy = dispatch_fuzz::oracles::Policy::default();
    let decision = dispatch_fuzz::fuzz::hook_decision(panic, &policy);
    SEEN.with(|s| s.borrow_mut().push(decision));
}

/// The fuzz target's decisions (from [`record`]) and `check`'s verdict for one program.
pub fn both(
    program: &Program,
) -> (
    Vec<dispatch_fuzz::fuzz::HookDecision>,
    anyhow::Result<dispatch_fuzz::Verdict>,
) {
    SEEN.with(|s| s.borrow_mut().clear());
    let verdict = dispatch_fuzz::check_with(program, &dispatch_fuzz::oracles::Policy::default());
    (SEEN.with(|s| std::mem::take(&mut *s.borrow_mut())), verdict)
}

/// The panics `check` recorded: in the trace (steps and side panics), or as an oracle's
/// violation carrying the panic's location (a captured graph whose replay panicked).
pub fn recorded_panics(verdict: &dispatch_fuzz::Verdict) -> usize {
    let as_violations = verdict
        .oracles
        .violations
        .iter()
        .filter(|v| v.location.is_some())
        .count();
    verdict.trace.panics().count() + as_violations
}
