//! Fuzz target: op-sequence programs on Flex + capture, through the same `check` as `cargo test`.
#![no_main]

// Typed: the input is the decoded program, so `cargo fuzz fmt` prints its listing.
libfuzzer_sys::fuzz_target!(init: dispatch_fuzz::fuzz::init(), |input: dispatch_fuzz::fuzz::FuzzInput| {
    dispatch_fuzz::fuzz::run(&input.0);
});
