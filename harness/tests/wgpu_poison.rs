//! A wgpu device that dies mid-program: the pending case whose mixed int dtypes poison the
//! device, replayed in a process of its own, shows its bug as the read's panic, and the panic
//! cubecl re-raises on the caller's thread is recorded as Burn's, not as a harness fault.

mod common;

use std::process::ExitCode;

use dispatch_fuzz::check;
use dispatch_fuzz::interpreter::{wgpu, Outcome};
use dispatch_fuzz::program::ProgramFile;

fn main() -> ExitCode {
    // It needs I64 kernels, which GL adapters lack.
    common::run_trials(vec![common::wgpu_trial(
        "an_int_compare_of_i64_and_i32_poisons_the_wgpu_device_and_the_read_shows_it",
        common::VULKAN_LLVMPIPE(),
        || {
            an_int_compare_of_i64_and_i32_poisons_the_wgpu_device_and_the_read_shows_it();
            Ok(())
        },
    )])
}

fn an_int_compare_of_i64_and_i32_poisons_the_wgpu_device_and_the_read_shows_it() {
    wgpu::enable().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let path = common::repo()
        .join("regressions/pending/wgpu-int-compare-of-i64-and-i32-poisons-the-device.json");
    let file = ProgramFile::load(&path).unwrap();
    // `Err` here would be the harness blaming itself for Burn's panic.
    let verdict = check(&file.program()).unwrap();
    let finding = verdict.finding.expect("the poisoned device fails the read");
    assert_eq!(Some(finding.signature.to_string()), file.signature);
    assert_eq!(finding.step, Some(3));
    match &verdict.trace.steps[3].outcome {
        Outcome::Panic(panic) => assert!(
            panic.message.contains("Validation Error")
                && panic.message.contains("where the shader expects"),
            "{}",
            panic.message
        ),
        other => panic!("step 3: {other:?}"),
    }
}
