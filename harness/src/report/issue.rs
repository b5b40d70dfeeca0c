//! A Markdown issue body for one regression case, in the shape of Burn's bug reports: what
//! happens and what should, the reproducer that shows it, the environment, the minimized
//! program, the root cause and how it was found.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::eager_replay::DTYPE_LOST;
use crate::oracles::reference::{Mismatch, REFERENCE_MISMATCH};
use crate::oracles::{Finding, DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REPLAY_MISMATCH};
use crate::program::{Program, ProgramFile};
use crate::Verdict;

use super::bug::Bug;
use super::listing::{render, Style};
use super::rust::{expected_outcome, to_rust};

/// The burn features the harness builds with (the workspace's `burn` dependency).
const FEATURES: &str = r#"["std", "flex", "capture", "extension", "autodiff", "wgpu"]"#;

/// What a maintainer should see instead, from the finding's kind.
fn expected(finding: &Finding) -> String {
    match finding.class.as_str() {
        REPLAY_MISMATCH if finding.signature.summary.contains(DTYPE_LOST) => {
            "Replaying the captured graph hands each output back in the dtype the graph \
             recorded for it, as the capture device reported it."
                .into()
        }
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
        REFERENCE_MISMATCH => reference_value(finding).unwrap_or_else(|| {
            "The value the op's definition gives (the reference oracle's host arithmetic).".into()
        }),
        _ => "No panic: the op computes its result, or the Tensor API rejects the call with a \
              clear error before it reaches a backend."
            .into(),
    }
}

/// The value the reference oracle's definition gives where Burn's differs, quoted from a
/// reference-mismatch finding's message (`None` for any other finding).
pub fn reference_value(finding: &Finding) -> Option<String> {
    if finding.class != REFERENCE_MISMATCH {
        return None;
    }
    let m = Mismatch::parse(&finding.message)?;
    let how = if finding.signature.summary.starts_with("backward of") {
        "Central finite differences in f64 over the ops' definitions (the reference oracle's \
         gradient, which shares no code with burn-autodiff) give"
    } else {
        "The op's definition, computed in f64 on host arrays and rounded to the value's dtype \
         (the reference oracle, which shares no code with Burn), gives"
    };
    Some(format!(
        "{how} `{}` at element {} of `t{}`; Burn computed `{}`.",
        m.expected, m.element, m.slot, m.actual
    ))
}

/// The parts of a stored case's report that come from running it: what a per-case issue body
/// and a root cause's grouped report both show.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct IssueParts {
    /// The finding's class, step and first line of its message.
    pub what_happens: String,
    /// What should happen, from the finding's kind (a root cause's report states its own).
    pub expected: String,
    /// The reference oracle's value where Burn's differs from it (see [`reference_value`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The Rust reproducer.
    pub reproducer: String,
    /// The environment it ran in: Burn, backends, adapter and driver, OS, rustc, profile.
    pub environment: String,
    /// The minimized program and its trace.
    pub program: String,
    /// The catalogue record's source location, if the class has one.
    pub source: Option<String>,
    /// The finding's signature, as text.
    pub signature: String,
}

/// The OS this process runs on, for a report's environment: the distribution's name where
/// `/etc/os-release` gives one, the kernel's release, the architecture.
fn operating_system() -> String {
    let pretty = std::fs::read_to_string("/etc/os-release")
        .ok()
        .and_then(|t| {
            t.lines()
                .find_map(|l| l.strip_prefix("PRETTY_NAME="))
                .map(|v| v.trim_matches('"').to_string())
        });
    let kernel = std::fs::read_to_string("/proc/sys/kernel/osrelease")
        .ok()
        .map(|k| format!("kernel {}", k.trim()));
    let parts: Vec<String> = [pretty, Some(std::env::consts::OS.to_string()), kernel]
        .into_iter()
        .flatten()
        .collect();
    format!("{} ({})", parts.join(", "), std::env::consts::ARCH)
}

/// The parts of `file`'s report from its `verdict` (run with its class as a finding) and the
/// wgpu adapter it ran on, if any; `None` when the run showed no finding.
pub fn issue_parts(
    program: &Program,
    verdict: &Verdict,
    adapter: Option<&str>,
) -> Option<IssueParts> {
    let finding = verdict.finding.as_ref()?;
    let first = finding.message.lines().next().unwrap_or_default();
    let step = finding
        .step
        .map_or_else(String::new, |s| format!(" at step {s}"));
    let what_happens = format!("{}{step}:\n\n```text\n{first}\n```\n", finding.class);
    let mut environment = String::new();
    let _ = writeln!(
        environment,
        "- burn `={}`, features {FEATURES}",
        env!("DISPATCH_FUZZ_BURN_VERSION")
    );
    let backends = if adapter.is_some() {
        "Flex, capture, wgpu"
    } else {
        "Flex, capture"
    };
    let _ = writeln!(environment, "- backends: {backends}");
    if let Some(adapter) = adapter {
        let _ = writeln!(environment, "- wgpu adapter: `{adapter}`");
    }
    let _ = writeln!(environment, "- OS: {}", operating_system());
    let _ = writeln!(environment, "- rustc: `{}`", env!("DISPATCH_FUZZ_RUSTC"));
    let _ = writeln!(
        environment,
        "- built in debug (debug assertions and overflow checks on)"
    );
    let source = record_of(catalogue(), &finding.class, &finding.message).map(|r| {
        let line = r.line_number.map_or_else(String::new, |l| format!(":{l}"));
        format!(
            "Source: `{}{line}` (catalogue record `{}`).",
            r.file_path, r.slug
        )
    });
    Some(IssueParts {
        what_happens,
        expected: expected(finding),
        reference: reference_value(finding),
        reproducer: to_rust(program, &verdict.trace, Some(finding)),
        environment,
        program: render(program, verdict, Style::Normalized),
        source,
        signature: finding.signature.to_string(),
    })
}

/// The issue body for `file` (a stored case), from its `verdict` (run with its class as a
/// finding), the wgpu adapter it ran on, if any, and the root cause it is a case of, if the
/// table has it: whose expected behaviour, with its source, is what should happen.
pub fn issue_body(
    file: &ProgramFile,
    program: &Program,
    verdict: &Verdict,
    (adapter, bug): (Option<&str>, Option<&Bug>),
) -> String {
    let mut out = String::new();
    let name = file.name.as_deref().unwrap_or("case");
    let Some(parts) = issue_parts(program, verdict, adapter) else {
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
    let _ = writeln!(out, "## What happens\n\n{}", parts.what_happens);
    let expected = match bug {
        Some(bug) => format!(
            "{}{}\n\nOne of the {} stored case(s) of the root cause reported as `{}` \
             (`regressions/upstream/{}.md`, owned by {}).",
            bug.expected,
            parts
                .reference
                .as_ref()
                .map_or_else(String::new, |r| format!("\n\n{r}")),
            bug.cases.len(),
            bug.id,
            bug.id,
            bug.repo
        ),
        None => parts.expected.clone(),
    };
    let _ = writeln!(out, "## What should happen\n\n{expected}\n");
    write_common(&mut out, file, &parts);
    out
}

/// The sections a per-case body and a grouped report share, for the case `file` that `parts`
/// came from: reproducer, environment, program, root cause, upstream status, how it was found.
pub(super) fn write_common(out: &mut String, file: &ProgramFile, parts: &IssueParts) {
    let _ = writeln!(
        out,
        "## Reproducer\n\nAgainst Burn's public API (the header lists every crate it needs); it \
         fails as described above.\n\n```rust\n{}```\n",
        parts.reproducer
    );
    let _ = writeln!(out, "## Environment\n\n{}", parts.environment);
    let _ = writeln!(
        out,
        "## Minimized program and its trace\n\n```text\n{}```\n",
        parts.program
    );
    let _ = writeln!(out, "## Root cause\n");
    let _ = writeln!(
        out,
        "{}\n",
        file.root_cause.as_deref().unwrap_or("Not analyzed yet.")
    );
    if let Some(source) = &parts.source {
        let _ = writeln!(out, "{source}\n");
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
        parts.signature,
        file.found.as_deref().unwrap_or("(date not recorded)")
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(class: &str, signature: &str, message: &str) -> Finding {
        Finding {
            signature: signature.parse().expect("a signature"),
            class: class.into(),
            step: Some(1),
            message: message.into(),
            facts: crate::oracles::Facts::default(),
        }
    }

    #[test]
    fn a_reference_mismatch_says_what_the_definition_gives_and_what_burn_computed() {
        let value = finding(
            REFERENCE_MISMATCH,
            "reference-mismatch | quantize_roundtrip over (F32) differs from its definition | -",
            "t1 element 0: the definition gives 2.0, Burn computed 1e-36",
        );
        let text = expected(&value);
        assert!(text.contains("`2.0` at element 0 of `t1`"), "{text}");
        assert!(text.contains("Burn computed `1e-36`"), "{text}");
        let gradient = finding(
            REFERENCE_MISMATCH,
            "reference-mismatch | backward of selu over (F32) differs from its definition | -",
            "t3 element 0: the definition gives 1.05, Burn computed NaN",
        );
        assert!(expected(&gradient).starts_with("Central finite differences"));
        let other = finding(
            DIVERGENCE,
            "flex-wgpu-divergence | x | -",
            "t1 element 0: ...",
        );
        assert_eq!(reference_value(&other), None);
    }
}
