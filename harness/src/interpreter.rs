//! The interpreter: runs a [`Program`](crate::program::Program) against the real Burn crates
//! (burn-dispatch, burn-capture, Flex, wgpu) and returns a [`Trace`] with one outcome per step.
//! Every Burn call runs under `catch_unwind`; the interpreter's own failures are `Err`s, never
//! panics. It judges nothing: checks follow a run through the [`Lockstep`] hook, and a
//! [`Mirror`] runs the same steps again on another device for them.

mod catch;
mod exec;
// The test hooks' fault points: the switchable ones for the harness's own tests, or their
// no-op twins, so a user's build carries no switch.
#[cfg(feature = "test-hooks")]
pub mod faults;
#[cfg(not(feature = "test-hooks"))]
#[path = "interpreter/no_faults.rs"]
mod faults;
mod lanes;
pub use lanes::program_runner;
pub use ops::exec_op;
mod lockstep;
mod mirror;
mod ops;
#[cfg(feature = "planted-faults")]
pub mod planted;
pub mod pool;
mod replay;
mod trace;
mod value;
pub mod wgpu;

pub use catch::{
    at_site, attempt, catch, harness_code, install as install_panic_hook, install_progress, note,
    StepPanicPolicy, StepProgress, HARNESS_ERROR,
};
pub use exec::{data_info, run, run_colliding, run_in_lockstep, Mode};
pub use lockstep::{CompletedScope, Lockstep, Unobserved, World};
pub use mirror::{kind_of, non_native_bools, on_flex, read_copy, read_data, Computed, Mirror};
pub use replay::{
    holds_named_unsupported, recorded_tensor, replay_on_device, replay_on_flex, ReplayError,
};
pub use trace::{
    Base, Digest, GraphInfo, Outcome, PanicInfo, Placed, SideError, SidePanic, StepRecord, Trace,
    ValueInfo, EXECUTION_ERROR,
};
pub use value::{AnyTensor, Ranked};
