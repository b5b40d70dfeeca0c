//! The hook the fuzz target runs behind (libFuzzer's aborts on every panic it sees) never sees a
//! panic that `check` records: here, one raised on cubecl's device thread during a Burn call,
//! which cubecl hands to the caller. Its own process, so the hook before the harness's is the
//! one this test sets.

mod common;

use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};

static BEFORE: AtomicUsize = AtomicUsize::new(0);

fn a_panic_on_a_cubecl_thread_during_a_burn_call_never_reaches_the_hook_before_the_harnesss() {
    // Stands in for libfuzzer-sys's hook, installed before the harness's as the target's is.
    std::panic::set_hook(Box::new(|_| {
        BEFORE.fetch_add(1, Ordering::SeqCst);
    }));
    dispatch_fuzz::interpreter::install_panic_hook(None);
    let case = common::repo()
        .join("regressions/wgpu-attention-backward-binds-a-width-its-tile-cannot-serve.json");
    let file = dispatch_fuzz::program::ProgramFile::load(&case).unwrap();
    common::adapter().expect("a wgpu adapter");
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &file.program()).unwrap();
    // The stored bug is met (its panic raised on the device thread, recorded at the caller)...
    let classes: Vec<String> = verdict
        .trace
        .panics()
        .map(|(_, p)| p.class.clone())
        .collect();
    assert!(
        classes
            .iter()
            .any(|c| c == "wgpu-attention-backward-width-not-served"),
        "{classes:?}"
    );
    // ...and no panic went past the harness's hook, where libFuzzer would have aborted.
    assert_eq!(BEFORE.load(Ordering::SeqCst), 0);
}

fn main() -> ExitCode {
    common::run_trials(vec![common::wgpu_trial(
        "a_panic_on_a_cubecl_thread_during_a_burn_call_never_reaches_the_hook_before_the_harnesss",
        common::LLVMPIPE(),
        || {
            a_panic_on_a_cubecl_thread_during_a_burn_call_never_reaches_the_hook_before_the_harnesss();
            Ok(())
        },
    )])
}
