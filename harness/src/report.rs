//! Everything a person reads: the trace listing (`run`, regression snapshots), the Rust
//! reproducer (`fmt --rust`), the Markdown issue body (`report`), the reports grouped per root
//! cause (`report --upstream`) and the fuzz session's lines and summary (`fuzz`). Rendering lives
//! here, so the rooms that compute traces and verdicts print nothing themselves; the one
//! exception is the nightly job's report (`nightly::report`): the job sits above the regression
//! store, which this room serves, so its rendering lives on its own floor.

mod bug;
mod burn_test;
pub mod campaign;
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
