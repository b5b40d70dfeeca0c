//! The interpreter: runs a [`Program`](crate::program::Program) against the real Burn crates
//! (burn-dispatch, burn-capture, Flex) and returns a [`Trace`] with one outcome per step. Every
//! Burn call runs under `catch_unwind`; the interpreter's own failures are `Err`s, never panics,
//! so nothing it does can be mistaken for a Burn bug.

mod catch;
mod exec;
mod ops;
pub mod pool;
mod replay;
mod trace;
mod value;
pub mod wgpu;

pub use catch::{catch, install as install_panic_hook, StepPanicPolicy};
pub use exec::{
    corrupt_replay_feed_for_tests, perturb_wgpu_values_for_tests, run, run_with, Mode, Oracles,
};
pub use replay::{replay_on_device, replay_on_flex, ReplayError};
pub use trace::{fnv1a, GraphInfo, Outcome, PanicInfo, StepRecord, Trace, ValueInfo};
pub use value::{fill_data, AnyTensor, Ranked};
