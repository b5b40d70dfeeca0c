//! Fuzz target: op-sequence programs on Flex + capture, through the same `check` as `cargo test`.
#![no_main]

libfuzzer_sys::fuzz_target!(init: dispatch_fuzz::fuzz::init(), |data: &[u8]| {
    dispatch_fuzz::fuzz::one(data);
});
