//! A Markdown issue body for one regression case, in the shape of Burn's bug reports: what
//! happens and what should, the reproducer that shows it, the environment, the minimized
//! program, the root cause and how it was found.

use std::fmt::Write as _;

use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::{Finding, DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REPLAY_MISMATCH};
use crate::program::{Program, ProgramFile};
use crate::Verdict;

use super::listing::{render, Style};
use super::rust::{expected_outcome, to_rust};

/// The burn features the harness builds with (the workspace's `burn` dependency).
const FEATURES: &str = r#"["std", "flex", "capture", "extension", "autodiff", "wgpu"]"#;

/// What a maintainer should see instead, from the finding's kind.
fn expected(finding: &Finding) -> String {
    match finding.class.as_str() {
        REPLAY_MISMATCH => {
            "Replaying the captured graph gives the values the same steps give when run \
                            eagerly on Flex."
                .into()
        }
        DIVERGENCE => {
            "Flex and wgpu compute the same values (within Burn's tolerance for the op).".into()
        }
        DTYPE_CONTRACT => {
            "The tensor the op hands back is stored in a dtype of its own kind (a bool \
                           tensor in a `Bool` storage), as its operand was."
                .into()
        }
        MODEL_MISMATCH => format!(
            "The call gives `{}`, as the capture/dispatch contract says.",
            expected_outcome(&finding.signature)
        ),
        _ => "No panic: the op computes its result, or the Tensor API rejects the call with a \
              clear error before it reaches a backend."
            .into(),
    }
}

/// The issue body for `file` (a stored case), from its `verdict` (run with its class as a
/// finding) and the wgpu adapter it ran on, if any.
pub fn issue_body(
    file: &ProgramFile,
    program: &Program,
    verdict: &Verdict,
    adapter: Option<&str>,
) -> String {
    let mut out = String::new();
    let name = file.name.as_deref().unwrap_or("case");
    let Some(finding) = &verdict.finding else {
        let _ = writeln!(
            out,
            "# {name}\n\nThe case no longer shows its finding with this Burn build: it may be \
             fixed upstream. Expected signature: `{}`.",
            file.signature.as_deref().unwrap_or("?")
        );
        return out;
    };
    let mut title = name.replace(['-', '_'], " ");
    if let Some(first) = title.get_mut(0..1) {
        first.make_ascii_uppercase();
    }
    let _ = writeln!(out, "# {title}\n");
    let _ = writeln!(out, "## What happens\n");
    let first = finding.message.lines().next().unwrap_or_default();
    let step = finding
        .step
        .map_or_else(String::new, |s| format!(" at step {s}"));
    let _ = writeln!(out, "{}{step}:\n\n```text\n{first}\n```\n", finding.class);
    let _ = writeln!(out, "## What should happen\n\n{}\n", expected(finding));
    let _ = writeln!(
        out,
        "## Reproducer\n\nAgainst Burn's public API (the extra crates are only for replaying a \
         captured graph); it fails as described above.\n\n```rust\n{}```\n",
        to_rust(program, &verdict.trace, Some(finding))
    );
    let _ = writeln!(out, "## Environment\n");
    let _ = writeln!(
        out,
        "- burn `={}`, features {FEATURES}",
        env!("DISPATCH_FUZZ_BURN_VERSION")
    );
    let backends = if adapter.is_some() {
        "Flex, capture, wgpu"
    } else {
        "Flex, capture"
    };
    let _ = writeln!(out, "- backends: {backends}");
    if let Some(adapter) = adapter {
        let _ = writeln!(out, "- wgpu adapter: `{adapter}`");
    }
    let _ = writeln!(
        out,
        "- built in debug (debug assertions and overflow checks on)\n"
    );
    let _ = writeln!(
        out,
        "## Minimized program and its trace\n\n```text\n{}```\n",
        render(program, verdict, Style::Normalized)
    );
    let _ = writeln!(out, "## Root cause\n");
    let _ = writeln!(
        out,
        "{}\n",
        file.root_cause.as_deref().unwrap_or("Not analyzed yet.")
    );
    if let Some(r) = record_of(catalogue(), &finding.class, &finding.message) {
        let line = r.line_number.map_or_else(String::new, |l| format!(":{l}"));
        let _ = writeln!(
            out,
            "Source: `{}{line}` (catalogue record `{}`).\n",
            r.file_path, r.slug
        );
    }
    let _ = writeln!(
        out,
        "## Upstream status\n\n{}\n",
        file.upstream
            .as_deref()
            .unwrap_or("Not checked yet against Burn's newest sources and issue tracker.")
    );
    let _ = writeln!(
        out,
        "## How it was found\n\ndispatch-fuzz, a fuzzer of burn-dispatch and burn-capture ({}), \
         signature `{}`, first found {}.",
        file.origin.as_deref().unwrap_or("origin not recorded"),
        finding.signature,
        file.found.as_deref().unwrap_or("(date not recorded)")
    );
    out
}
