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
use dispatch_fuzz::oracles::normalize_message;
use dispatch_fuzz::regressions::{load_all, load_bugs, smallest, upstream_dir, Case};
use dispatch_fuzz::report::{fails_with, Bug, DEPENDENCIES_HEADER};

fn store() -> PathBuf {
    common::repo().join("regressions")
}

/// The first fenced Rust block of a report.
fn rust_block(report: &str) -> Option<&str> {
    let start = report.find("```rust\n")? + "```rust\n".len();
    let len = report[start..].find("```")?;
    Some(&report[start..start + len])
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
        let manifest = format!(
            "[package]\nname = \"upstream-reproducers-{k}\"\nversion = \"0.0.0\"\nedition = \
             \"2021\"\npublish = false\n\n[workspace]\n\n{}\n[dependencies]\n{}\n",
            profiles(),
            deps.join("\n")
        );
        std::fs::write(dir.join("Cargo.toml"), manifest).map_err(|e| e.to_string())?;
        std::fs::copy(common::repo().join("Cargo.lock"), dir.join("Cargo.lock"))
            .map_err(|e| e.to_string())?;
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

/// Removes reproducer `id`'s binary and its hard-linked copy under `deps/`.
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
        .check()
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
        for name in &bug.cases {
            assert!(
                text.contains(&format!("| `{name}` |")),
                "{} omits {name}",
                bug.id
            );
        }
        assert!(
            index.contains(&format!("]({}.md)", bug.id)),
            "the index omits {}",
            bug.id
        );
        let code = rust_block(&text).expect("a reproducer");
        // Every crate the code names is one its header lists.
        let listed: Vec<String> = header_dependencies(code)
            .iter()
            .filter_map(|l| l.split(" = ").next())
            .map(|c| c.replace('-', "_"))
            .collect();
        for krate in ["burn_ir", "burn_router", "burn_backend", "burn_dispatch"] {
            if code.contains(&format!("{krate}::")) {
                assert!(
                    listed.iter().any(|l| l == krate),
                    "{}: {krate} is not in its header",
                    bug.id
                );
            }
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

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let cases = load_all(&store()).expect("the store loads");
    let bugs = load_bugs(&store(), &cases).expect("the table loads");
    let mut trials = vec![Trial::test(
        "the_root_cause_table_covers_every_reported_case_once_and_each_has_its_report",
        || {
            the_root_cause_table_covers_every_reported_case_once_and_each_has_its_report();
            Ok(())
        },
    )];
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
