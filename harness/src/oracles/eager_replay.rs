//! The eager vs capture-replay oracle: a graph that captured cleanly, replayed on Flex with the
//! data its inputs had, must compute what the same steps computed eagerly on Flex (the
//! interpreter's shadow run). A replay that fails, or an output that differs beyond Burn's
//! `Tolerance::default()`, is a violation.

use burn::tensor::{TensorData, Tolerance};
use serde::{Deserialize, Serialize};

/// Class of a replayed output that differs from the eager run.
pub const REPLAY_MISMATCH: &str = "replay-mismatch";
/// Class of a cleanly captured graph whose replay panics or errors.
pub const REPLAY_FAILURE: &str = "replay-failure";

/// A broken oracle invariant, found at a step.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Violation {
    /// The step (a scope exit) where the oracle ran.
    pub step: usize,
    /// [`REPLAY_MISMATCH`] or [`REPLAY_FAILURE`].
    pub class: String,
    /// What is stable about it, for the signature.
    pub summary: String,
    /// The details: both values, or the failure.
    pub message: String,
}

/// Where `replayed` and `eager` differ, as Burn's `assert_approx_eq` would report it, without
/// panicking (a panic here would be taken for Burn's): NaN equals NaN, same-signed infinities
/// are equal, everything else must be within `Tolerance::default()`; shapes must match.
pub fn difference(replayed: &TensorData, eager: &TensorData) -> Option<String> {
    let tolerance = Some(Tolerance::<f64>::default());
    super::differential::difference_with(replayed, eager, tolerance, ("replayed", "eager"))
}
