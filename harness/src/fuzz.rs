//! The glue the libFuzzer target calls: decode, [`check`](crate::check), and abort with a
//! `DEDUP_TOKEN` line on a finding, so libFuzzer's crash buckets are the harness's signatures.

use std::sync::OnceLock;

use crate::oracles::{self, Policy};
use crate::program::{Backends, Program};
use crate::{check, config, interpreter, Verdict};

/// The backends a target fixed in its `init` (the wgpu target), over `DISPATCH_FUZZ_BACKENDS`.
static TARGET_BACKENDS: OnceLock<Backends> = OnceLock::new();

/// The backends this process's inputs decode for: the target's own, or the session's.
fn target_backends() -> Backends {
    TARGET_BACKENDS
        .get()
        .copied()
        .unwrap_or(config::get().backends)
}

/// One fuzz input as the typed targets take it: the program the bytes decode to for the
/// target's backends (exactly what `Program::from_fuzz_bytes` decodes), whose `Debug` is the
/// program's listing, so `cargo fuzz fmt` and libFuzzer's `RUST_LIBFUZZER_DEBUG_PATH` print a
/// program a person reads.
pub struct FuzzInput(pub Program);

impl<'a> arbitrary::Arbitrary<'a> for FuzzInput {
    fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Program::arbitrary_on(u, target_backends()).map(FuzzInput)
    }

    fn arbitrary_take_rest(mut u: arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
        Self::arbitrary(&mut u)
    }
}

impl std::fmt::Debug for FuzzInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "// {} steps\n{}", self.0.steps.len(), self.0)
    }
}

/// What the fuzz targets run for each input: checks the decoded program and aborts with a
/// `DEDUP_TOKEN` line on a finding (or a harness error), as libFuzzer expects of a crash. Call
/// [`init`] (or [`init_wgpu`]) once first.
pub fn run(program: &Program) {
    match check(program) {
        Ok(Verdict {
            finding: Some(finding),
            ..
        }) => {
            report(&finding.signature, &finding.message, program);
            if !config::get().no_abort {
                std::process::abort();
            }
        }
        Ok(_) => {}
        // The harness's own failure always stops the run, whatever DISPATCH_FUZZ_NO_ABORT says.
        Err(error) => {
            report("harness-error", &format!("{error:#}"), program);
            std::process::abort();
        }
    }
}

fn report(signature: &str, message: &str, program: &Program) {
    eprintln!("==dispatch-fuzz== finding: {message}");
    eprintln!("==dispatch-fuzz== program:\n{program}");
    eprintln!("DEDUP_TOKEN: {signature}");
}

/// Installs the panic hook the fuzz target needs: catalogued panics inside a step unwind into
/// the interpreter; a panic that is a finding under the policy aborts at once with its
/// `DEDUP_TOKEN`, so libFuzzer records the crash with the panic's own stack. A malformed
/// `DISPATCH_FUZZ_*` switch stops the process here, before any input runs.
pub fn init() {
    init_with(None);
}

/// [`init`] for the wgpu target: its inputs decode and run wgpu steps too, whatever
/// `DISPATCH_FUZZ_BACKENDS` says (ClusterFuzzLite cannot set environment variables per target).
#[cfg(feature = "wgpu")]
pub fn init_wgpu() {
    init_with(Some(Backends::WITH_WGPU));
}

fn init_with(backends: Option<Backends>) {
    if let Some(backends) = backends {
        let _ = TARGET_BACKENDS.set(backends);
        interpreter::wgpu::turn_on();
    }
    if let Err(error) = config::try_get() {
        eprintln!("==dispatch-fuzz== {error}");
        std::process::exit(2);
    }
    fn policy(panic: &interpreter::PanicInfo) {
        let decision = hook_decision(panic, config::get().policy());
        if let HookDecision::Finding(signature) | HookDecision::HarnessError(signature) = &decision
        {
            eprintln!(
                "==dispatch-fuzz== panic at {}: {}",
                panic.location.as_deref().unwrap_or("?"),
                panic.message
            );
            eprintln!("DEDUP_TOKEN: {signature}");
            if matches!(decision, HookDecision::HarnessError(_)) || !config::get().no_abort {
                std::process::abort();
            }
        }
    }
    interpreter::install_panic_hook(Some(policy));
}

/// What the fuzz target's panic hook decides about one caught panic, before it unwinds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum HookDecision {
    /// A catalogued panic: it unwinds into the interpreter.
    Go,
    /// A finding under the policy, with its signature: abort.
    Finding(String),
    /// The harness's own panic: always abort.
    HarnessError(String),
}

/// The hook's decision for `panic` under `policy`; [`check`](crate::check) must reach a
/// finding (or a harness error) whenever this says so, and a test holds it to that.
pub fn hook_decision(panic: &interpreter::PanicInfo, policy: &Policy) -> HookDecision {
    let mut panic = panic.clone();
    // The harness's own panic keeps its class: it is a harness error, never Burn's.
    if panic.class.is_empty() {
        panic.class = oracles::class_of(&panic);
    }
    if panic.class == interpreter::HARNESS_ERROR {
        HookDecision::HarnessError(oracles::signature(&panic))
    } else if policy.is_finding(&panic.class) {
        let signature = oracles::signature(&panic);
        // A panic a reviewed case stores is a known finding: check counts it, the run goes on.
        if policy.is_known(&panic.class, &signature) {
            HookDecision::Go
        } else {
            HookDecision::Finding(signature)
        }
    } else {
        HookDecision::Go
    }
}
