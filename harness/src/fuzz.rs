//! The glue the libFuzzer target calls: decode, [`check`](crate::check), and abort with a
//! `DEDUP_TOKEN` line on a finding, so libFuzzer's crash buckets are the harness's signatures.

use crate::oracles::{self, Policy};
use crate::program::Program;
use crate::{check, config, interpreter, Verdict};

/// What the fuzz target runs for each input. Call [`init`] once first.
pub fn one(data: &[u8]) {
    let program = Program::from_fuzz_bytes(data, config::get().backends);
    match check(&program) {
        Ok(Verdict {
            finding: Some(finding),
            ..
        }) => {
            report(&finding.signature, &finding.message, &program);
            if !config::get().no_abort {
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
    if let Err(error) = config::try_get() {
        eprintln!("==dispatch-fuzz== {error}");
        std::process::exit(2);
    }
    fn policy(panic: &interpreter::PanicInfo) {
        let mut panic = panic.clone();
        panic.class = oracles::class_of(&panic);
        let policy: &Policy = config::get().policy();
        if policy.is_finding(&panic.class) {
            eprintln!(
                "==dispatch-fuzz== panic at {}: {}",
                panic.location.as_deref().unwrap_or("?"),
                panic.message
            );
            eprintln!("DEDUP_TOKEN: {}", oracles::signature(&panic));
            if !config::get().no_abort {
                std::process::abort();
            }
        }
    }
    interpreter::install_panic_hook(Some(policy));
}
