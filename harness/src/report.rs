//! Everything a person reads: the trace listing (`run`, regression snapshots), the Rust
//! reproducer (`fmt --rust`), the Markdown issue body (`report`) and the reports grouped per root
//! cause (`report --upstream`). Rendering lives here alone, so the rooms that compute traces and
//! verdicts print nothing themselves.

mod bug;
mod burn_test;
mod issue;
mod listing;
mod rust;
mod simplify;
mod upstream;

pub use bug::{Bug, OWNERS};
pub use issue::{issue_body, issue_parts, IssueParts};
pub use listing::{describe, render, Style};
pub use rust::{fails_with, to_rust, without_strings, DEPENDENCIES_HEADER};
pub use upstream::{upstream_index, upstream_report};
