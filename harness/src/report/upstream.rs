//! One report per root cause, as the owning project's tracker wants it: the bug stated, its
//! owning repository, the behaviour the definition or a documentation gives, the smallest
//! case's reproducer and trace, and every stored case it covers; plus their index.

use std::fmt::Write as _;

use super::bug::{Bug, OWNERS};
use super::burn_test::{integration_test, regression_test};
use super::issue::IssueParts;
use crate::program::ProgramFile;

/// The grouped report of `bug`, shown through its case `shown` (its file and the parts its
/// run gave): what a maintainer of the owning repository files as it is.
pub fn upstream_report(bug: &Bug, shown: (&ProgramFile, &IssueParts)) -> String {
    let (_, parts) = shown;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", bug.title);
    let _ = writeln!(out, "Repository: {}. Code: {}.\n", bug.repo, bug.crates);
    let _ = writeln!(out, "## What happens\n\n{}", parts.what_happens);
    if let Some(happens) = &bug.happens {
        let _ = writeln!(out, "{happens}\n");
    }
    let _ = writeln!(out, "## What should happen\n\n{}\n", bug.expected);
    if let Some(reference) = &parts.reference {
        let _ = writeln!(out, "{reference}\n");
    }
    let _ = writeln!(
        out,
        "## Reproducer\n\nThe `main.rs` of a crate whose `[dependencies]` are the lines its \
         header lists.\n\n```rust\n{}```\n",
        parts.reproducer
    );
    match &parts.regression_test {
        Some((backend, body)) => {
            let _ = writeln!(
                out,
                "## Regression test\n\nFor `burn-backend-tests`, on the test backend's default \
                 device: it fails today with {backend} as the test backend and passes once \
                 fixed.\n\n```rust\n{}```\n",
                regression_test(&bug.id, body)
            );
        }
        None => {
            let _ = writeln!(
                out,
                "## Regression test\n\nFor the `burn` crate's integration tests \
                 (`crates/burn/tests/`, with the features the reproducer's header lists): the \
                 reproducer as a test; it fails today and passes once fixed.\n\n```rust\n{}```\n",
                integration_test(&bug.id, &parts.reproducer)
            );
        }
    }
    let _ = writeln!(out, "## Root cause\n\n{}\n", bug.cause);
    let _ = writeln!(out, "## Upstream status\n\n{}\n", bug.upstream);
    let _ = write!(out, "## Environment\n\n{}", parts.environment);
    out
}

/// The index of the grouped reports: each with its owning repository, the cases it covers and
/// its upstream status.
pub fn upstream_index(bugs: &[Bug]) -> String {
    let mut out = String::from(
        "# Reports ready to file\n\n\
         One report per root cause, written by `dispatch-fuzz report --upstream` from \
         `bugs.json` (the table of root causes) and the stored cases under `regressions/`; do \
         not edit the reports by hand. Each names its owning repository; its reproducer builds \
         as the `main.rs` of a crate whose `[dependencies]` are the lines its header lists.\n\n",
    );
    for owner in OWNERS {
        let mine: Vec<&Bug> = bugs.iter().filter(|b| b.repo == *owner).collect();
        if mine.is_empty() {
            continue;
        }
        let _ = writeln!(out, "## {owner} ({} reports)\n", mine.len());
        let _ = writeln!(out, "| report | stored cases | upstream status |");
        let _ = writeln!(out, "| --- | --- | --- |");
        for bug in mine {
            let cases: Vec<String> = bug.cases.iter().map(|c| format!("`{c}`")).collect();
            let _ = writeln!(
                out,
                "| [{}]({}.md) | {} | {} |",
                bug.title.replace('|', "\\|"),
                bug.id,
                cases.join(", "),
                bug.status.replace('|', "\\|")
            );
        }
        out.push('\n');
    }
    out
}
