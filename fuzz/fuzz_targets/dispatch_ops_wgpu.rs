//! Fuzz target: op-sequence programs on Flex + capture + wgpu, through the same `check` as
//! `cargo test` (the adapter from `DISPATCH_FUZZ_WGPU`, default `auto`).
#![no_main]

// Typed: the input is the decoded program, so `cargo fuzz fmt` prints its listing.
libfuzzer_sys::fuzz_target!(init: dispatch_fuzz::libfuzzer::init_wgpu(), |input: dispatch_fuzz::libfuzzer::FuzzInput| {
    dispatch_fuzz::libfuzzer::run(&input.0);
});
