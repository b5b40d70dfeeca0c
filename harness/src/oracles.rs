//! Oracles and classification: decide whether a [`Trace`](crate::interpreter::Trace) shows a
//! bug. Panics are classified against a catalogue of known signatures kept as data
//! (`harness/signatures.json`); a panic no record matches, a class the policy promotes, a
//! capture device left unusable for the next program, or a violated oracle (a replayed graph
//! that disagrees with the eager run, [`eager_replay`]; a step the reference model of the capture
//! lifecycle did not predict, [`model`]) is a [`Finding`].

pub mod catalogue;
mod classify;
pub mod differential;
pub mod eager_replay;
pub mod model;

pub use classify::{
    assign_classes, class_of, classify, normalize_message, signature, Finding, Policy,
    CRASH_ON_VAR, STATE_LEAK, UNKNOWN,
};
