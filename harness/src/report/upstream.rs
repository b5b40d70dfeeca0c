//! One report per root cause, as the owning project's tracker wants it: the bug stated, its
//! owning repository, the behaviour the definition or a documentation gives, the smallest
//! case's reproducer and trace, and every stored case it covers; plus their index.

use std::fmt::Write as _;

use super::bug::{Bug, OWNERS};
use super::issue::{write_common, IssueParts};
use crate::program::ProgramFile;

/// The grouped report of `bug`, shown through its smallest case `shown` (its file and the parts
/// its run gave), covering `cases` (each stored case's file, in the bug's order).
pub fn upstream_report(
    bug: &Bug,
    shown: (&ProgramFile, &IssueParts),
    cases: &[&ProgramFile],
) -> String {
    let (file, parts) = shown;
    let mut out = String::new();
    let _ = writeln!(out, "# {}\n", bug.title);
    let _ = writeln!(
        out,
        "Owning repository: **{}** ({}).\n",
        bug.repo, bug.crates
    );
    let _ = writeln!(
        out,
        "## What happens\n\nThe smallest of the {} stored case(s) below, `{}` ({} steps): {}",
        cases.len(),
        file.name.as_deref().unwrap_or("?"),
        file.steps.len(),
        parts.what_happens
    );
    let _ = writeln!(out, "## What should happen\n\n{}\n", bug.expected);
    if let Some(reference) = &parts.reference {
        let _ = writeln!(out, "{reference}\n");
    }
    write_common(&mut out, file, parts);
    let _ = writeln!(out, "\n## Cases this report covers\n");
    let _ = writeln!(out, "| case | steps | signature |");
    let _ = writeln!(out, "| --- | --- | --- |");
    for case in cases {
        let _ = writeln!(
            out,
            "| `{}` | {} | `{}` |",
            case.name.as_deref().unwrap_or("?"),
            case.steps.len(),
            case.signature.as_deref().unwrap_or("?").replace('|', "\\|")
        );
    }
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
        let _ = writeln!(out, "| report | cases | upstream status |");
        let _ = writeln!(out, "| --- | --- | --- |");
        for bug in mine {
            let _ = writeln!(
                out,
                "| [{}]({}.md) | {} | {} |",
                bug.title.replace('|', "\\|"),
                bug.id,
                bug.cases.len(),
                bug.status.replace('|', "\\|")
            );
        }
        out.push('\n');
    }
    out
}
