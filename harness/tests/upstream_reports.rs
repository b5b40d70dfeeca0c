//! The reports ready to file (`regressions/upstream/`): the table of root causes covers every
//! reported case once and each root cause has its report, and each report's reproducer, pasted
//! as the `main.rs` of a crate whose `[dependencies]` are exactly its header's lines, builds and
//! fails as its case says. The crates share this build's target folder and lock file, so only
//! the reproducers themselves (and the few Burn crates whose features differ) are compiled.

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, ExitCode};
use std::sync::OnceLock;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use dispatch_fuzz::interpreter::wgpu::Placement;
use dispatch_fuzz::oracles::catalogue::pattern_matches;
use dispatch_fuzz::oracles::reference::REFERENCE_MISMATCH;
use dispatch_fuzz::oracles::{
    normalize_message, Finding, DIVERGENCE, DTYPE_CONTRACT, REPLAY_MISMATCH,
};
use dispatch_fuzz::regressions::{load_all, load_bugs, reportable, smallest, upstream_dir, Case};
use dispatch_fuzz::report::{fails_with, without_strings, Bug, DEPENDENCIES_HEADER};

fn store() -> PathBuf {
    common::repo().join("regressions")
}

/// The first fenced Rust block of a report (its reproducer).
fn rust_block(report: &str) -> Option<&str> {
    let start = report.find("```rust\n")? + "```rust\n".len();
    let len = report[start..].find("```")?;
    Some(&report[start..start + len])
}

/// A report's regression test and the backend it fails on today (`Flex`, `wgpu`), if it has
/// one.
/// What [`regression_block`] names as the backend of an integration test, which makes its own
/// devices.
const INTEGRATION: &str = "its own devices";

fn regression_block(report: &str) -> Option<(&str, &str)> {
    let section = &report[report.find("\n## Regression test\n")?..];
    // A backend test names its test backend; an integration test names its devices itself.
    let backend = section
        .split("it fails today with ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or(INTEGRATION);
    Some((backend, rust_block(section)?))
}

/// The manifest lines a reproducer's header lists after [`DEPENDENCIES_HEADER`].
fn header_dependencies(code: &str) -> Vec<String> {
    code.lines()
        .skip_while(|l| !l.contains(DEPENDENCIES_HEADER))
        .skip(1)
        .map_while(|l| l.strip_prefix("// "))
        .filter(|l| l.contains(" = "))
        .map(str::to_string)
        .collect()
}

/// The target folder this test binary was built in (`target/<profile>/deps/<exe>`).
fn target_dir() -> PathBuf {
    let exe = std::env::current_exe().expect("a test binary");
    exe.ancestors()
        .nth(3)
        .expect("target/<profile>/deps")
        .to_path_buf()
}

/// The workspace manifest's `[profile.*]` sections, so the scratch crates build their
/// dependencies as the harness does (and find them already built).
fn profiles() -> String {
    let manifest = std::fs::read_to_string(common::repo().join("Cargo.toml")).unwrap();
    let mut out = String::new();
    let mut keep = false;
    for line in manifest.lines() {
        if line.starts_with('[') {
            keep = line.starts_with("[profile.");
        }
        if keep {
            out.push_str(line);
            out.push('\n');
        }
    }
    out
}

/// A scratch crate's manifest in `dir`, named `name`, with `deps` as its `[dependencies]` and
/// the workspace's profiles and lock file, so it builds against what the harness built.
fn write_manifest(dir: &std::path::Path, name: &str, deps: &[String]) -> Result<(), String> {
    let manifest = format!(
        "[package]\nname = \"{name}\"\nversion = \"0.0.0\"\nedition = \"2021\"\npublish = \
         false\n\n[workspace]\n\n{}\n[dependencies]\n{}\n",
        profiles(),
        deps.join("\n")
    );
    std::fs::write(dir.join("Cargo.toml"), manifest).map_err(|e| e.to_string())?;
    std::fs::copy(common::repo().join("Cargo.lock"), dir.join("Cargo.lock"))
        .map_err(|e| e.to_string())?;
    Ok(())
}

/// Writes one scratch crate per distinct dependency list, each report's reproducer a binary of
/// it: `(report id -> crate manifest)`, or why it could not.
fn write_crates(reports: &[(String, String)]) -> Result<BTreeMap<String, PathBuf>, String> {
    let mut by_deps: BTreeMap<Vec<String>, Vec<(&str, &str)>> = BTreeMap::new();
    for (id, code) in reports {
        let deps = header_dependencies(code);
        if deps.is_empty() {
            return Err(format!(
                "{id}: its reproducer's header lists no dependencies"
            ));
        }
        by_deps.entry(deps).or_default().push((id, code));
    }
    let root = target_dir().join("tmp").join("upstream-reproducers");
    let mut manifests = BTreeMap::new();
    for (k, (deps, members)) in by_deps.iter().enumerate() {
        let dir = root.join(format!("crate{k}"));
        let src = dir.join("src").join("bin");
        let _ = std::fs::remove_dir_all(&src);
        std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
        write_manifest(&dir, &format!("upstream-reproducers-{k}"), deps)?;
        for (id, code) in members {
            std::fs::write(src.join(format!("{id}.rs")), code).map_err(|e| e.to_string())?;
            manifests.insert(id.to_string(), dir.join("Cargo.toml"));
        }
    }
    Ok(manifests)
}

/// Builds reproducer `id` of the crate at `manifest` in the shared target folder: its binary.
/// Each is built and removed in its own trial, so the folder holds one of these (each links all
/// of Burn and wgpu, about 120 MB) at a time, not all of them.
fn build(id: &str, manifest: &PathBuf) -> Result<PathBuf, String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args(["build", "--bin", id, "--manifest-path"])
        .arg(manifest)
        .env("CARGO_TARGET_DIR", target_dir())
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{id}'s reproducer does not build from its header's dependencies alone:\n{}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(target_dir().join("debug").join(id))
}

/// Removes binary `id` (a reproducer, or a scratch crate's test binary) and its hard-linked copy
/// under `deps/`.
fn remove_binary(id: &str) {
    let debug = target_dir().join("debug");
    let _ = std::fs::remove_file(debug.join(id));
    let prefix = format!("{}-", id.replace('-', "_"));
    if let Ok(entries) = std::fs::read_dir(debug.join("deps")) {
        for entry in entries.flatten() {
            let name = entry.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && !name.ends_with(".d") {
                let _ = std::fs::remove_file(entry.path());
            }
        }
    }
}

/// The scratch crates, written once for every trial.
static CRATES: OnceLock<Result<BTreeMap<String, PathBuf>, String>> = OnceLock::new();

fn reports() -> Vec<(String, String)> {
    let cases = load_all(&store()).unwrap();
    let bugs = load_bugs(&store(), &cases).unwrap();
    bugs.iter()
        .map(|b| {
            let path = upstream_dir(&store()).join(format!("{}.md", b.id));
            let text = std::fs::read_to_string(&path).unwrap_or_default();
            let code = rust_block(&text).unwrap_or_default().to_string();
            (b.id.clone(), code)
        })
        .collect()
}

/// Bug `bug`'s reproducer, built from its header alone, fails as its smallest case says.
fn reproducer_fails_as_reported(bug: &Bug, case: &Case) -> Result<(), Failed> {
    let crates = CRATES
        .get_or_init(|| write_crates(&reports()))
        .as_ref()
        .map_err(|e| e.clone())?;
    let manifest = crates.get(&bug.id).ok_or("no reproducer in its report")?;
    let finding = case
        .check_for_report()
        .map_err(|e| format!("{e:#}"))?
        .finding
        .ok_or("its case shows no finding")?;
    let binary = build(&bug.id, manifest)?;
    let out = Command::new(&binary)
        .output()
        .map_err(|e| format!("cannot run {}: {e}", binary.display()));
    remove_binary(&bug.id);
    let out = out?;
    let text = normalize_message(&format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    ));
    let want = normalize_message(&fails_with(&finding));
    if out.status.success() {
        Err(format!("fixed upstream? {} runs clean", bug.id).into())
    } else if !pattern_matches(&want, &text) {
        Err(format!("fails differently: expected `{want}` in its output:\n{text}").into())
    } else {
        Ok(())
    }
}

fn the_root_cause_table_covers_every_reported_case_once_and_each_has_its_report() {
    let cases = load_all(&store()).unwrap();
    let bugs = load_bugs(&store(), &cases).expect("the table holds against the store");
    let dir = upstream_dir(&store());
    let index = std::fs::read_to_string(dir.join("README.md")).expect("the index");
    for bug in &bugs {
        let text =
            std::fs::read_to_string(dir.join(format!("{}.md", bug.id))).unwrap_or_else(|_| {
                panic!(
                    "{} has no report: run `dispatch-fuzz report --upstream`",
                    bug.id
                )
            });
        assert!(
            text.starts_with(&format!("# {}\n", bug.title)),
            "{} is stale",
            bug.id
        );
        assert!(
            index.contains(&format!("]({}.md)", bug.id)),
            "the index omits {}",
            bug.id
        );
        for name in &bug.cases {
            assert!(
                index.contains(&format!("`{name}`")),
                "the index omits {name} under {}",
                bug.id
            );
        }
    }
    let stray: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".md") && n != "README.md")
        .filter(|n| !bugs.iter().any(|b| format!("{}.md", b.id) == *n))
        .collect();
    assert!(stray.is_empty(), "reports of no root cause: {stray:?}");
}

/// Words of this project's own voice, which a report filed upstream must not carry: its
/// process (sessions, stops, its issue numbers), its machinery (oracles, the catalogue, models,
/// stored cases), notes to itself, and paths of one machine.
const HARNESS_WORDS: &[&str] = &[
    "dispatch-fuzz",
    "harness",
    "fuzzer",
    "oracle",
    "catalogue",
    "the model",
    "exit-completes",
    "stored case",
    "regression case",
    "known bug",
    "the report should",
    "so the report",
    "stop ",
    "this session",
    "fuzz session",
    "main job",
    "issue 2",
    "issue 3",
    "issue 4",
    "issue 5",
    "corrected 20",
    "the smallest of",
    "--seed",
    "`also`",
    "also program",
    "see the ",
    "/root/",
    "/home/",
    "registry/src",
    "index.crates.io",
];

/// Where "What should happen" takes its behaviour from: a source file and line, a standard,
/// a documentation, another library's documented result, or the value's definition.
const SOURCES: &[&str] = &[
    ".rs:",
    "ieee 754",
    "ieee-754",
    "pytorch",
    "numpy",
    "doc comment",
    "documents",
    "documented",
    "docs",
    "wgsl",
    "spec",
    "definition",
    "contract",
];

/// The most lines of code (neither blank nor a comment) a reproducer may hold.
const MOST_LINES: usize = 30;

/// The lines of a section `## name` of a report, up to the next section.
fn section<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    let start = text.find(&format!("\n## {name}\n"))? + name.len() + 5;
    let len = text[start..].find("\n## ").unwrap_or(text.len() - start);
    Some(&text[start..start + len])
}

fn code_lines(code: &str) -> usize {
    code.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with("//"))
        .count()
}

/// What is wrong with one report as a maintainer would file it, if anything.
fn lint(bug: &Bug, text: &str) -> Vec<String> {
    let mut wrong = Vec::new();
    let lower = text.to_lowercase();
    for word in HARNESS_WORDS {
        if let Some(at) = lower.find(word) {
            let from = text[..at].rfind('\n').map_or(0, |i| i + 1);
            let to = text[at..].find('\n').map_or(text.len(), |i| at + i);
            wrong.push(format!("says {word:?}: {}", &text[from..to]));
        }
    }
    let reported = ["reported", "class open as"];
    if reported.iter().any(|r| bug.status.starts_with(r)) && !bug.title.starts_with("Comment for ")
    {
        wrong.push(
            "reported upstream already: its title must say it is a comment for that issue".into(),
        );
    }
    let Some(code) = rust_block(text) else {
        wrong.push("no reproducer".into());
        return wrong;
    };
    if code_lines(code) > MOST_LINES {
        wrong.push(format!(
            "a reproducer of {} lines of code (at most {MOST_LINES})",
            code_lines(code)
        ));
    }
    let deps = header_dependencies(code);
    let burn = deps
        .iter()
        .find(|l| l.starts_with("burn = "))
        .cloned()
        .unwrap_or_default();
    let body: String = code.lines().filter(|l| !l.starts_with("//")).collect();
    // Names are read outside string literals: a message's words are not uses.
    let names = without_strings(&body);
    for (feature, used) in [
        (
            "\"flex\"",
            body.contains("Device::flex()") || body.contains("backend::Flex"),
        ),
        ("\"capture\"", body.contains("Device::capture()")),
        (
            "\"autodiff\"",
            body.contains("autodiff()") || body.contains("require_grad"),
        ),
        (
            "\"wgpu\"",
            body.contains("Device::wgpu(") || body.contains("backend::Cube"),
        ),
        ("\"extension\"", false),
    ] {
        if burn.contains(feature) != used {
            wrong.push(format!(
                "burn's feature {feature} is {} but the code {}",
                if used { "not listed" } else { "listed" },
                if used { "uses it" } else { "does not" }
            ));
        }
    }
    for krate in [
        "burn-ir",
        "burn-router",
        "burn-backend",
        "burn-dispatch",
        "rayon",
    ] {
        let listed = deps.iter().any(|l| l.starts_with(&format!("{krate} = ")));
        let used = body.contains(&format!("{}::", krate.replace('-', "_")));
        if listed != used {
            wrong.push(format!("{krate} is listed: {listed}, used: {used}"));
        }
    }
    for import in [
        "Capture",
        "Bool",
        "Int",
        "Float",
        "TensorData",
        "Transaction",
        "Tolerance",
    ] {
        let imported = names
            .split(';')
            .filter(|s| s.trim_start().starts_with("use "))
            .any(|s| s.split(|c: char| !c.is_alphanumeric()).any(|w| w == import));
        let uses = names
            .split(';')
            .filter(|s| !s.trim_start().starts_with("use "))
            .any(|s| s.split(|c: char| !c.is_alphanumeric()).any(|w| w == import));
        if imported && !uses {
            wrong.push(format!("imports {import} and never uses it"));
        }
    }
    match section(text, "What should happen") {
        Some(expected) if SOURCES.iter().any(|s| expected.to_lowercase().contains(s)) => {}
        _ => wrong.push("\"What should happen\" names no source".into()),
    }
    let environment = section(text, "Environment").unwrap_or_default();
    let versions: &[&str] = match bug.repo.as_str() {
        "tracel-ai/burn" => &["burn `="],
        _ => &["burn `=", "cubecl `", "cubek `", "wgpu `"],
    };
    for version in versions {
        if !environment.contains(version) {
            wrong.push(format!("its Environment lacks {version}"));
        }
    }
    if bug.repo != "tracel-ai/burn" && !environment.contains("adapter") {
        wrong.push("a wgpu report whose Environment names no adapter".into());
    }
    wrong
}

fn every_report_is_ready_to_file_as_it_is() {
    let cases = load_all(&store()).unwrap();
    let bugs = load_bugs(&store(), &cases).unwrap();
    let dir = upstream_dir(&store());
    let mut wrong = Vec::new();
    let mut lengths = Vec::new();
    for bug in &bugs {
        let text = std::fs::read_to_string(dir.join(format!("{}.md", bug.id))).unwrap();
        lengths.push(rust_block(&text).map_or(0, code_lines));
        for w in lint(bug, &text) {
            wrong.push(format!("{}: {w}", bug.id));
        }
    }
    lengths.sort_unstable();
    println!(
        "reproducer lines of code: median {}, largest {} over {} reports",
        lengths[lengths.len() / 2],
        lengths.last().unwrap(),
        lengths.len()
    );
    assert!(
        wrong.is_empty(),
        "{} problems:\n{}",
        wrong.len(),
        wrong.join("\n")
    );
}

/// The prelude Burn's backend tests give each test file (`burn-backend-tests`' `TestTensor`
/// aliases over the default device, `FloatElem` of an F32 build), so a report's regression test
/// builds here as it would there.
const TEST_PRELUDE: &str = "#![allow(unused)]
mod prelude {
    pub use burn::tensor::Tensor;
    pub type TestTensor<const D: usize> = Tensor<D>;
    pub type TestTensorInt<const D: usize> = Tensor<D, burn::tensor::Int>;
    pub type TestTensorBool<const D: usize> = Tensor<D, burn::tensor::Bool>;
    pub type FloatElem = f32;
}
";

/// The autodiff suite's device (with burn's `autodiff` feature, which only the tests that use it
/// are built with).
const AUTODIFF_DEVICE: &str = "
pub struct AutodiffDevice;
impl AutodiffDevice {
    pub fn new() -> burn::tensor::Device {
        burn::tensor::Device::default().autodiff()
    }
}
";

/// What a regression test's failure must say: Burn's `assert_eq`/`assert_approx_eq` words for
/// a wrong value, the dtype assertion's for a wrong dtype, else the finding's own panic.
fn test_fails_with(finding: &Finding) -> String {
    match finding.class {
        DIVERGENCE | REFERENCE_MISMATCH | REPLAY_MISMATCH => "Tensors are not".into(),
        DTYPE_CONTRACT => "stored as".into(),
        _ => normalize_message(&fails_with(finding)),
    }
}

/// Every report's regression test, in one crate per reproducer header and test backend, built
/// and run on that backend (`BURN_DEVICE`): each must fail today, with the words `reports` give
/// (report id, report text, the failure's pattern). `(report, why)` for each that does not, or
/// why a crate did not build.
fn regression_tests_fail_today(
    reports: &[(String, String, String)],
) -> Result<Vec<(String, String)>, String> {
    // (reproducer's dependency lines, backend) -> [(report id, test, pattern)]
    type Group = Vec<(String, String, String)>;
    let mut groups: BTreeMap<(Vec<String>, String), Group> = BTreeMap::new();
    for (id, text, want) in reports {
        let (Some(code), Some((backend, test))) = (rust_block(text), regression_block(text)) else {
            continue;
        };
        groups
            .entry((header_dependencies(code), backend.to_string()))
            .or_default()
            .push((id.clone(), test.to_string(), want.clone()));
    }
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut wrong = Vec::new();
    for (k, ((deps, backend), tests)) in groups.iter().enumerate() {
        let dir = target_dir()
            .join("tmp")
            .join(format!("upstream-regression-tests-{k}"));
        let src = dir.join("src");
        std::fs::create_dir_all(&src).map_err(|e| e.to_string())?;
        write_manifest(&dir, &format!("upstream-regression-tests-{k}"), deps)?;
        let mut lib = TEST_PRELUDE.to_string();
        if tests
            .iter()
            .any(|(_, test, _)| test.contains("AutodiffDevice"))
        {
            lib = lib.replace(
                "pub type FloatElem",
                &format!("{AUTODIFF_DEVICE}    pub type FloatElem"),
            );
        }
        for (id, test, _) in tests {
            let test = test
                .replace("use super::*;", "use crate::prelude::*;")
                .replace("burn_tensor::", "burn::tensor::");
            lib.push_str(&format!("\nmod {} {{\n{test}}}\n", id.replace('-', "_")));
        }
        std::fs::write(src.join("lib.rs"), lib).map_err(|e| e.to_string())?;
        let mut command = Command::new(&cargo);
        command
            .args(["test", "--lib", "--manifest-path"])
            .arg(dir.join("Cargo.toml"))
            .args(["--", "--test-threads=1"])
            .env("CARGO_TARGET_DIR", target_dir());
        // A backend test runs on the default device the suite's backend gives.
        match backend.as_str() {
            "wgpu" => command.env("BURN_DEVICE", "wgpu"),
            "Flex" => command.env("BURN_DEVICE", "flex"),
            _ => command.env_remove("BURN_DEVICE"),
        };
        let out = command.output();
        // Each test binary links all of Burn (and wgpu where it runs there): keep one at a time.
        remove_binary(&format!("upstream-regression-tests-{k}"));
        let out = out.map_err(|e| format!("cannot run cargo: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout);
        if !stdout.contains("test result:") {
            return Err(format!(
                "the regression tests on {backend} do not build:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        for (id, _, want) in tests {
            let module = id.replace('-', "_");
            let line = stdout
                .lines()
                .find(|l| l.starts_with(&format!("test {module}::")))
                .unwrap_or_default();
            if !line.ends_with("FAILED") {
                wrong.push((id.clone(), format!("on {backend}: `{line}`, not FAILED")));
                continue;
            }
            // Its failure's own section of the output, up to the next one.
            let opening = format!("---- {module}::");
            let failure = stdout
                .split_once(&opening)
                .map(|(_, rest)| rest.split("\n---- ").next().unwrap_or(rest))
                .unwrap_or_default();
            let failure = normalize_message(failure);
            if !pattern_matches(want, &failure) {
                wrong.push((
                    id.clone(),
                    format!("on {backend}, fails without `{want}`:\n{failure}"),
                ));
            }
        }
    }
    Ok(wrong)
}

fn every_regression_test_builds_in_burns_test_form_and_fails_today() {
    let dir = upstream_dir(&store());
    let cases = load_all(&store()).unwrap();
    let bugs = load_bugs(&store(), &cases).unwrap();
    let cases = reportable(&store(), &cases).unwrap();
    // A wgpu test needs an adapter this process can use as its default: only where the case is
    // placed here (the suite's own rule for wgpu cases).
    let reports: Vec<(String, String, String)> = bugs
        .iter()
        .filter_map(|b| {
            let case = smallest(b, &cases)?;
            if !matches!(case.placement(), Placement::Here) {
                return None;
            }
            let text = std::fs::read_to_string(dir.join(format!("{}.md", b.id))).unwrap();
            let (backend, _) = regression_block(&text)?;
            let finding = case.check_for_report().ok()?.finding?;
            // The reproducer made a test fails with the reproducer's own words.
            let want = if backend == INTEGRATION {
                normalize_message(&fails_with(&finding))
            } else {
                test_fails_with(&finding)
            };
            Some((b.id.clone(), text, want))
        })
        .collect();
    println!(
        "{} regression tests, each run on its backend",
        reports.len()
    );
    assert!(!reports.is_empty(), "no report has a regression test");
    let wrong = regression_tests_fail_today(&reports).unwrap_or_else(|e| panic!("{e}"));
    let listed: Vec<String> = wrong
        .iter()
        .map(|(id, why)| format!("{id}: {why}"))
        .collect();
    assert!(
        wrong.is_empty(),
        "regression tests that do not fail today:\n{}",
        listed.join("\n")
    );
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let cases = load_all(&store()).expect("the store loads");
    let bugs = load_bugs(&store(), &cases).expect("the table loads");
    let cases = reportable(&store(), &cases).expect("the divergences load");
    let mut trials = vec![
        Trial::test(
            "the_root_cause_table_covers_every_reported_case_once_and_each_has_its_report",
            || {
                the_root_cause_table_covers_every_reported_case_once_and_each_has_its_report();
                Ok(())
            },
        ),
        Trial::test("every_report_is_ready_to_file_as_it_is", || {
            every_report_is_ready_to_file_as_it_is();
            Ok(())
        }),
        Trial::test(
            "every_regression_test_builds_in_burns_test_form_and_fails_today",
            || {
                every_regression_test_builds_in_burns_test_form_and_fails_today();
                Ok(())
            },
        ),
    ];
    let shown: Vec<(Bug, Case)> = bugs
        .into_iter()
        .map(|b| {
            let case = smallest(&b, &cases).expect("a stored case").clone();
            (b, case)
        })
        .collect::<Vec<_>>();
    for (bug, case) in shown {
        let name = format!("upstream::{}", bug.id);
        trials.push(Trial::ignorable_test(name, move || {
            match case.placement() {
                Placement::Here => {
                    reproducer_fails_as_reported(&bug, &case).map(|()| Completion::Completed)
                }
                // A pasted reproducer takes wgpu's default adapter; no switch pins it.
                Placement::Pinned(api, why) => Ok(Completion::ignored_with(format!(
                    "{why}: its reproducer would need wgpu's default adapter to be {}",
                    api.name()
                ))),
                Placement::Nowhere(reason) => common::elsewhere(reason),
            }
        }));
    }
    // One at a time: each builds, runs and removes its own reproducer.
    let serial = Arguments {
        test_threads: Some(1),
        ..args
    };
    libtest_mimic::run(&serial, trials).exit_code()
}
