//! Everything a person reads: the trace listing (`run`, regression snapshots), the Rust
//! reproducer (`fmt --rust`) and the Markdown issue body (`report`). Rendering lives here alone,
//! so the rooms that compute traces and verdicts print nothing themselves.

mod issue;
mod listing;
mod rust;

pub use issue::issue_body;
pub use listing::{describe, render, Style};
pub use rust::to_rust;
