//! Every regression case's Rust reproducer (`harness/examples/reproducers/<case>.rs`, a module
//! of the `reproducers` example that `cargo test` compiles against the harness's own Burn build)
//! is up to date with its case and, run as its own process, fails the way the case says: one
//! trial per case (at most one reproducer process per test thread), a wgpu case placed as the
//! regression suite places it. One that runs clean is reported as fixed upstream.

mod common;

use std::path::PathBuf;
use std::process::{Command, ExitCode};

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use dispatch_fuzz::interpreter::wgpu::{Api, Placement};
use dispatch_fuzz::oracles::catalogue::pattern_matches;
use dispatch_fuzz::oracles::normalize_message;
use dispatch_fuzz::regressions::{load_all, reproducers_main, Case};
use dispatch_fuzz::report::fails_with;

fn reproducers() -> PathBuf {
    common::repo().join("harness/examples/reproducers")
}

/// The `reproducers` example's binary.
fn binary() -> PathBuf {
    // target/<profile>/deps/<this test> -> target/<profile>/examples/reproducers
    let exe = std::env::current_exe().unwrap();
    exe.parent()
        .unwrap()
        .parent()
        .unwrap()
        .join("examples")
        .join("reproducers")
}

/// Case `case`'s reproducer is what its run generates, and as a process of its own it fails the
/// way the case says. Call with wgpu on for a wgpu case (its placement did that).
fn reproducer_fails_as_its_case_says(case: &Case) -> Result<(), Failed> {
    let verdict = case.check().map_err(|e| format!("{e:#}"))?;
    let finding = verdict.finding.ok_or("the case shows no finding")?;
    let text = case.reproducer().map_err(|e| format!("{e:#}"))?;
    let path = reproducers().join(format!("{}.rs", case.name));
    if std::fs::read_to_string(&path).ok().as_deref() != Some(text.as_str()) {
        return Err(format!(
            "{} is out of date with its case; run `cargo run -- reproducers`",
            path.display()
        )
        .into());
    }
    let binary = binary();
    let mut command = Command::new(&binary);
    command.arg(&case.name);
    // A reproducer takes wgpu's default adapter, which is Vulkan where a Vulkan driver is
    // installed: in the process pinned to GL, the child sees no Vulkan driver, so wgpu falls
    // back to GL as on a machine without one.
    if common::adapter_choice().api == Some(Api::Gl) {
        command.env("VK_ICD_FILENAMES", "/nonexistent/vulkan-icd.json");
    }
    let out = command.output().map_err(|_| {
        format!(
            "no binary at {} (`cargo test` builds the examples; so does `cargo build --examples`)",
            binary.display()
        )
    })?;
    let text = normalize_message(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    let want = normalize_message(&fails_with(&finding));
    if out.status.success() {
        Err(format!(
            "fixed upstream: {} (its reproducer runs clean; the case can become a guard test)",
            case.name
        )
        .into())
    } else if !pattern_matches(&want, &text) {
        Err(format!("fails differently now: expected `{want}` in its output:\n{text}").into())
    } else {
        Ok(())
    }
}

/// One trial per case, named `reproducer::<case>`, placed as the regression suite places it.
fn reproducer_trial(case: Case) -> Trial {
    let name = format!("reproducer::{}", case.name);
    Trial::ignorable_test(name.clone(), move || match case.placement() {
        Placement::Here => reproducer_fails_as_its_case_says(&case).map(|()| Completion::Completed),
        Placement::Pinned(api, why) => common::pinned_trial(&name, api, why),
        Placement::Nowhere(reason) => common::elsewhere(reason),
    })
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let cases = load_all(&common::repo().join("regressions")).expect("the store loads");
    assert!(!cases.is_empty(), "no regression cases");
    let (wgpu, cpu): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(Case::uses_wgpu);
    // Flex and capture cases (and the tests that run only those) first, in parallel, one
    // example process per test thread; wgpu cases after, one at a time with wgpu on, as the
    // suite runs them.
    let mut first: Vec<Trial> = cpu.into_iter().map(reproducer_trial).collect();
    first.push(Trial::test(
        "every_bug_case_has_an_issue_body_with_its_reproducer_and_guards_have_none",
        || {
            every_bug_case_has_an_issue_body_with_its_reproducer_and_guards_have_none();
            Ok(())
        },
    ));
    first.push(Trial::test(
        "the_regression_index_lists_every_case_as_generated",
        || {
            the_regression_index_lists_every_case_as_generated();
            Ok(())
        },
    ));
    first.push(Trial::test(
        "the_reproducers_binary_holds_every_case_as_generated",
        || {
            the_reproducers_binary_holds_every_case_as_generated();
            Ok(())
        },
    ));
    let first = libtest_mimic::run(&args, first);
    let serial = Arguments {
        test_threads: Some(1),
        ..args.clone()
    };
    let second = libtest_mimic::run(&serial, wgpu.into_iter().map(reproducer_trial).collect());
    if first.has_failed() || second.has_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn every_bug_case_has_an_issue_body_with_its_reproducer_and_guards_have_none() {
    let case = |name: &str| {
        load_all(&common::repo().join("regressions"))
            .unwrap()
            .into_iter()
            .find(|c| c.name == name)
            .unwrap()
    };
    let bug =
        case("captured-int-argmax-is-recorded-in-its-operand-dtype-but-replays-as-i64-on-flex");
    let body = bug.issue().unwrap().expect("a known bug is reported");
    for section in [
        "## What happens",
        "## What should happen",
        "## Reproducer",
        ".assert_approx_eq::<f64>(",
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

fn the_reproducers_binary_holds_every_case_as_generated() {
    let cases = load_all(&common::repo().join("regressions")).unwrap();
    let path = reproducers().join("main.rs");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        on_disk,
        reproducers_main(&cases),
        "{} is stale: run `cargo run -- reproducers`",
        path.display()
    );
    let files = std::fs::read_dir(reproducers()).unwrap().count();
    assert_eq!(files, cases.len() + 1, "one file per case, and main.rs");
}
