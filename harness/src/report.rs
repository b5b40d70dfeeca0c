//! Everything a person reads: the trace listing (`run`, regression snapshots) and the Rust
//! reproducer (`fmt --rust`). Rendering lives here alone, so the rooms that compute traces and
//! verdicts print nothing themselves.

mod listing;
mod rust;

pub use listing::{describe, render, Style};
pub use rust::to_rust;
