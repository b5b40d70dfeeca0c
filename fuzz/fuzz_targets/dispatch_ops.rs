//! Fuzz target: op-sequence programs on Flex + capture, through the same `check` as `cargo test`.
#![no_main]

// Typed: the input is the decoded program, so `cargo fuzz fmt` prints its listing.
libfuzzer_sys::fuzz_target!(init: dispatch_fuzz::libfuzzer::init(), |input: dispatch_fuzz::libfuzzer::FuzzInput| {
    dispatch_fuzz::libfuzzer::run(&input.0);
});
