//! Fuzz target: op-sequence programs on Flex + capture + wgpu, through the same `check` as
//! `cargo test` (the adapter from `DISPATCH_FUZZ_WGPU`, default `auto`).
#![no_main]

libfuzzer_sys::fuzz_target!(init: dispatch_fuzz::fuzz::init_wgpu(), |data: &[u8]| {
    dispatch_fuzz::fuzz::one(data);
});
