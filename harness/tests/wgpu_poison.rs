//! A wgpu device that dies mid-program: the pending case whose mixed int dtypes poison the
//! device, replayed in a process of its own, shows its bug as the panic the first read of the
//! compare's wgpu value raises, and the panic cubecl re-raises on the caller's thread is
//! recorded as Burn's, not as a harness fault.

mod common;

use std::process::ExitCode;

use dispatch_fuzz::interpreter::Outcome;
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
    common::adapter().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    let path = common::repo()
        .join("regressions/pending/wgpu-int-compare-of-i64-and-i32-poisons-the-device.json");
    let file = ProgramFile::load(&path).unwrap();
    // `Err` here would be the harness blaming itself for Burn's panic.
    let verdict = dispatch_fuzz::check(&common::on_wgpu(), &file.program()).unwrap();
    let finding = verdict.finding.expect("the poisoned device fails the read");
    assert_eq!(Some(finding.signature.to_string()), file.signature);
    // Flex refuses the mix, so the differential reads nothing there; the reference oracle reads
    // the wgpu mirror's compare to judge it, and that first read on the device raises the
    // panic (the program's own read after it finds the error already raised).
    assert_eq!(finding.step, Some(2));
    assert!(
        finding.message.contains("Validation Error")
            && finding.message.contains("where the shader expects"),
        "{}",
        finding.message
    );
    assert!(
        !matches!(verdict.trace.steps[2].outcome, Outcome::Panic(_)),
        "the compare itself is accepted: {:?}",
        verdict.trace.steps[2].outcome
    );
}
