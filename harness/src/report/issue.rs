//! A Markdown issue body for one regression case, in the shape of Burn's bug reports: what
//! happens and what should, the reproducer that shows it, the environment, the minimized
//! program, the root cause and how it was found.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use crate::interpreter::PanicInfo;
use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::reference::REFERENCE_MISMATCH;
use crate::oracles::{
    Derivation, Finding, Payload, DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REPLAY_MISMATCH,
};
use crate::program::{Program, ProgramFile};
use crate::Verdict;

use super::bug::Bug;
use super::burn_test::regression_body;
use super::listing::{render, Style};
use super::rust::{burn_features, contract_words, expected_outcome, to_rust, without_step};

/// What a maintainer should see instead, from the finding's kind.
fn expected(finding: &Finding) -> String {
    match finding.class {
        REPLAY_MISMATCH if finding.payload.lost_dtype() => {
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
            expected_outcome(finding)
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
    let Payload::Reference {
        mismatch: m, by, ..
    } = &finding.payload
    else {
        return None;
    };
    let how = match by {
        Derivation::FiniteDifference => {
            "Central finite differences in f64 over the ops' definitions give"
        }
        Derivation::Definition => {
            "The op's definition, computed in f64 and rounded to the value's dtype, gives"
        }
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
    /// The reference oracle's value where Burn's differs from it (see `reference_value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reference: Option<String>,
    /// The Rust reproducer.
    pub reproducer: String,
    /// The backend a regression test in Burn's backend tests' form fails on today (`Flex`,
    /// `wgpu`) and its body, where the finding's chain is plain eager steps on one device (see
    /// `burn_test`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub regression_test: Option<(String, String)>,
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

/// `text` with every path into cargo's registry cut to the crate's own (`burn-flex-0.23.0-pre.1/
/// src/...`): a report names no machine's folders.
pub fn crate_relative(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("/registry/src/") {
        // Back to the path's start: the last blank or quote before it.
        let start = rest[..at]
            .rfind(|c: char| c.is_whitespace() || c == '`' || c == '"' || c == '(')
            .map_or(0, |i| i + 1);
        out.push_str(&rest[..start]);
        let after = &rest[at + "/registry/src/".len()..];
        // Skip the index folder (`index.crates.io-<hash>/`).
        rest = after.split_once('/').map_or(after, |(_, tail)| tail);
    }
    out.push_str(rest);
    out
}

/// The sentence that introduces what a finding shows, by its kind, and the call it happens at.
fn lead(finding: &Finding, step: Option<&str>, panic: Option<&PanicInfo>) -> String {
    let at = step.map_or_else(String::new, |s| format!(" `{s}`"));
    if let Some(p) = panic {
        // A location in one of Burn's crates, not in the caller that the panic was raised through.
        let location = p
            .location
            .as_deref()
            .filter(|l| l.contains("/registry/src/"))
            .map_or_else(String::new, |l| format!(" at `{}`", crate_relative(l)));
        return format!("The call{at} panics{location}:");
    }
    match finding.class {
        REPLAY_MISMATCH if finding.payload.lost_dtype() => {
            "Replaying the captured graph hands an output back in another dtype than the graph \
             records for it:"
                .into()
        }
        REPLAY_MISMATCH => "Replaying the captured graph gives other values than the same \
                            steps run eagerly:"
            .into(),
        DIVERGENCE => format!("Flex and wgpu give different values for{at}:"),
        DTYPE_CONTRACT => {
            format!("The tensor{at} hands back is stored in a dtype of another kind:")
        }
        MODEL_MISMATCH => {
            format!("The call{at} gives an outcome the capture API does not document:")
        }
        REFERENCE_MISMATCH => format!("The value of{at} differs from the op's definition:"),
        _ => format!("The call{at} fails:"),
    }
}

/// The parts of `file`'s report from its `verdict` (run with its class as a finding) and the
/// wgpu adapter it ran on, if any; `None` when the run showed no finding.
pub fn issue_parts(
    program: &Program,
    verdict: &Verdict,
    adapter: Option<&str>,
) -> Option<IssueParts> {
    let finding = verdict.finding.as_ref()?;
    let first = if finding.class == MODEL_MISMATCH {
        contract_words(finding)
    } else {
        let first = crate_relative(finding.message.lines().next().unwrap_or_default());
        without_step(&first).to_string()
    };
    let step = finding
        .step
        .and_then(|s| program.steps.get(s))
        .map(crate::program::display::step_line);
    let panic = finding
        .step
        .and_then(|s| verdict.trace.steps.get(s))
        .and_then(|r| match &r.outcome {
            crate::interpreter::Outcome::Panic(p) => Some(p),
            _ => None,
        });
    let what_happens = format!(
        "{}\n\n```text\n{first}\n```\n",
        lead(finding, step.as_deref(), panic)
    );
    let reproducer = to_rust(program, &verdict.trace, Some(finding));
    let mut environment = String::new();
    let _ = writeln!(
        environment,
        "- burn `={}` (`default-features = false`, features {:?})",
        env!("DISPATCH_FUZZ_BURN_VERSION"),
        burn_features(&reproducer)
    );
    if adapter.is_some() || reproducer.contains("Device::wgpu(") {
        let _ = writeln!(
            environment,
            "- cubecl `{}`, cubek `{}`, wgpu `{}` (as burn resolves them)",
            env!("DISPATCH_FUZZ_CUBECL_VERSION"),
            env!("DISPATCH_FUZZ_CUBEK_VERSION"),
            env!("DISPATCH_FUZZ_WGPU_VERSION")
        );
    }
    if let Some(adapter) = adapter {
        let _ = writeln!(environment, "- wgpu adapter: `{adapter}`");
    }
    let _ = writeln!(environment, "- OS: {}", operating_system());
    let _ = writeln!(environment, "- rustc: `{}`", env!("DISPATCH_FUZZ_RUSTC"));
    let _ = writeln!(
        environment,
        "- a debug build (debug assertions and overflow checks on)"
    );
    let source = record_of(catalogue(), finding.class.name(), &finding.message).map(|r| {
        let line = r.line_number.map_or_else(String::new, |l| format!(":{l}"));
        format!(
            "Source: `{}{line}` (catalogue record `{}`).",
            r.file_path, r.slug
        )
    });
    let regression_test = regression_body(program, &verdict.trace, finding)
        .map(|(backend, body)| (backend.to_string(), body));
    Some(IssueParts {
        what_happens,
        expected: expected(finding),
        reference: reference_value(finding),
        reproducer,
        regression_test,
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
fn write_common(out: &mut String, file: &ProgramFile, parts: &IssueParts) {
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
    use crate::oracles::Class;

    fn finding(class: Class, signature: &str, payload: Payload) -> Finding {
        Finding {
            signature: signature.parse().expect("a signature"),
            class,
            step: Some(1),
            message: String::new(),
            facts: crate::oracles::Facts::default(),
            payload,
        }
    }

    fn mismatch(slot: u8, (expected, actual): (&str, &str), by: Derivation) -> Payload {
        let mismatch = crate::oracles::Mismatch {
            slot,
            element: 0,
            expected: expected.into(),
            actual: actual.into(),
        };
        let backend = crate::oracles::Backend::Flex;
        Payload::Reference {
            mismatch,
            by,
            backend,
        }
    }

    #[test]
    fn a_path_into_cargos_registry_is_cut_to_the_crates_own() {
        let text = "panicked at /root/.cargo/registry/src/index.crates.io-1949cf8c6b5b557f/\
                    burn-flex-0.23.0-pre.1/src/ops/int.rs:696:40: overflow";
        assert_eq!(
            crate_relative(text),
            "panicked at burn-flex-0.23.0-pre.1/src/ops/int.rs:696:40: overflow"
        );
        assert_eq!(crate_relative("no path here"), "no path here");
    }

    #[test]
    fn a_reference_mismatch_says_what_the_definition_gives_and_what_burn_computed() {
        let value = finding(
            REFERENCE_MISMATCH,
            "reference-mismatch | quantize_roundtrip over (F32) differs from its definition | -",
            mismatch(1, ("2.0", "1e-36"), Derivation::Definition),
        );
        let text = expected(&value);
        assert!(text.contains("`2.0` at element 0 of `t1`"), "{text}");
        assert!(text.contains("Burn computed `1e-36`"), "{text}");
        let gradient = finding(
            REFERENCE_MISMATCH,
            "reference-mismatch | backward of selu over (F32) differs from its definition | -",
            mismatch(3, ("1.05", "NaN"), Derivation::FiniteDifference),
        );
        assert!(expected(&gradient).starts_with("Central finite differences"));
        let other = finding(DIVERGENCE, "flex-wgpu-divergence | x | -", Payload::None);
        assert_eq!(reference_value(&other), None);
    }
}
