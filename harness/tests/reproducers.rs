//! Every regression case's Rust reproducer (`harness/examples/<case>.rs`, compiled by `cargo
//! test` against the harness's own Burn build) is up to date with its case and, run as its own
//! process, fails the way the case says. One that runs clean is reported as fixed upstream.

mod common;

use std::path::PathBuf;
use std::process::Command;

use dispatch_fuzz::oracles::catalogue::{catalogue, pattern_matches, record_of};
use dispatch_fuzz::oracles::{
    normalize_message, Finding, DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REPLAY_MISMATCH,
};
use dispatch_fuzz::regressions::{each_in_suite_order, load_all, Case};

/// The cases, wgpu ones last with wgpu turned on only then (as the suite runs them), each with
/// its finding and generated reproducer.
fn generated() -> Vec<(Case, Finding, String)> {
    let cases = load_all(&common::repo().join("regressions")).unwrap();
    each_in_suite_order(&cases, |case| {
        let finding = case.check()?.finding.expect("every case shows its finding");
        Ok((case.clone(), finding, case.reproducer()?))
    })
    .unwrap()
}

/// What the reproducer's output must contain: the oracle's own words for an oracle finding,
/// else the catalogue pattern of the case's class (or the finding's first line).
fn expected(finding: &Finding) -> String {
    match finding.class.as_str() {
        // A backend that failed where the other computed fails the reproducer with its own
        // message (`tN: ` and the failure's text, as the differential records it).
        DIVERGENCE
            if finding.signature.contains("panicked")
                || finding.signature.contains("failed to read") =>
        {
            let message = finding.message.lines().next().unwrap_or_default();
            let message = message.split_once(": ").map_or(message, |(_, m)| m);
            normalize_message(message)
        }
        REPLAY_MISMATCH | DIVERGENCE => "the values differ".to_string(),
        MODEL_MISMATCH => "the contract expects".to_string(),
        DTYPE_CONTRACT => "tensor stored as".to_string(),
        class => record_of(catalogue(), class, &finding.message)
            .map(|r| r.message_pattern.clone())
            .unwrap_or_else(|| {
                normalize_message(finding.message.lines().next().unwrap_or_default())
            }),
    }
}

fn example(name: &str) -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/<name>
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join(name)
}

#[test]
fn every_case_has_its_reproducer_and_each_fails_as_its_case_says() {
    let cases = generated();
    assert!(!cases.is_empty(), "no regression cases");
    let stale: Vec<&str> = cases
        .iter()
        .filter(|(case, _, text)| {
            let path = common::repo().join(format!("harness/examples/{}.rs", case.name));
            std::fs::read_to_string(path).ok().as_deref() != Some(text.as_str())
        })
        .map(|(case, _, _)| case.name.as_str())
        .collect();
    assert!(
        stale.is_empty(),
        "reproducers out of date with their cases: {stale:?}; run `cargo run -- reproducers`"
    );
    let run = |(case, finding, _): &(Case, Finding, String)| -> Option<String> {
        let binary = example(&case.name);
        let Ok(out) = Command::new(&binary).output() else {
            return Some(format!(
                    "{}: no binary at {} (`cargo test` builds the examples; so does `cargo build --examples`)",
                    case.name,
                    binary.display()
                ));
        };
        let text = normalize_message(&format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ));
        let want = normalize_message(&expected(finding));
        if out.status.success() {
            Some(format!(
                "fixed upstream: {} (its reproducer runs clean; the case can become a guard test)",
                case.name
            ))
        } else if !pattern_matches(&want, &text) {
            Some(format!(
                "{} fails differently now: expected `{want}` in its output:\n{text}",
                case.name
            ))
        } else {
            None
        }
    };
    // One process per case, all at once.
    let failures: Vec<String> = std::thread::scope(|scope| {
        let runs: Vec<_> = cases.iter().map(|c| scope.spawn(move || run(c))).collect();
        runs.into_iter().filter_map(|r| r.join().unwrap()).collect()
    });
    eprintln!(
        "{} reproducers compiled and run, {} failed as their cases say",
        cases.len(),
        cases.len() - failures.len()
    );
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn every_bug_case_has_an_issue_body_with_its_reproducer_and_guards_have_none() {
    let case = |name: &str| {
        load_all(&common::repo().join("regressions"))
            .unwrap()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap()
    };
    let bug = case("captured-float-to-int-cast-replays-as-i64-unlike-eager-flex");
    let body = bug.issue().unwrap().expect("a known bug is reported");
    for section in [
        "## What happens",
        "## What should happen",
        "## Reproducer",
        "assert_same_values(",
        "## Environment",
        "## Minimized program and its trace",
        "## Root cause",
        "## Upstream status",
        "## How it was found",
    ] {
        assert!(body.contains(section), "missing {section:?} in:\n{body}");
    }
    let guard = case("capture-tensor-created-outside-scope");
    assert!(guard.issue().unwrap().is_none());
}

#[test]
fn the_regression_index_lists_every_case_as_generated() {
    let store = common::repo().join("regressions");
    let cases = load_all(&store).unwrap();
    let on_disk = std::fs::read_to_string(store.join("README.md")).unwrap_or_default();
    assert_eq!(
        on_disk,
        dispatch_fuzz::regressions::index(&cases),
        "regressions/README.md is stale: run `cargo run -- reproducers`"
    );
    for case in &cases {
        assert!(
            on_disk.contains(&format!("| `{}` |", case.name)),
            "{}",
            case.name
        );
    }
}
