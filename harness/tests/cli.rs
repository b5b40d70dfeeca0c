//! The `dispatch-fuzz` binary: exit codes and output forms other tools rely on.

mod common;

use std::process::Command;

use dispatch_fuzz::program::ProgramFile;

fn dispatch_fuzz(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn run_exits_0_on_a_clean_program_and_1_on_a_finding() {
    let dir = common::repo().join("corpus/dispatch_ops/programs");
    let clean = dispatch_fuzz(&["run", dir.join("seed-000-after.json").to_str().unwrap()]);
    assert_eq!(clean.status.code(), Some(0), "{clean:?}");

    let leak = dir.join("seed-000-before.json");
    let out = Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
        .args(["run", "--json", leak.to_str().unwrap()])
        .env("DISPATCH_FUZZ_CRASH_ON", "capture-tensor-not-materialized")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["finding"]["class"], "capture-tensor-not-materialized");
    assert_eq!(json["steps"][4]["outcome"]["kind"], "panic");
    assert_eq!(json["steps"][4]["index"], 4);
}

#[test]
fn run_exits_2_naming_the_file_and_line_of_a_parse_error() {
    let path = std::env::temp_dir().join(format!("dispatch-fuzz-bad-{}.json", std::process::id()));
    std::fs::write(&path, "{\n  \"steps\": [\n    {\"create\": 3}\n  ]\n}\n").unwrap();
    let out = dispatch_fuzz(&["run", path.to_str().unwrap()]);
    let _ = std::fs::remove_file(&path);
    assert_eq!(out.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("{}:3:", path.display())),
        "{stderr}"
    );
}

#[test]
fn fuzz_session_ends_with_a_json_summary() {
    let out_dir = std::env::temp_dir().join(format!("dispatch-fuzz-out-{}", std::process::id()));
    let out = dispatch_fuzz(&[
        "fuzz",
        "--seconds",
        "30",
        "--runs",
        "200",
        "--seed",
        "3",
        "--json",
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let _ = std::fs::remove_dir_all(&out_dir);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let last = stdout.lines().last().expect("a summary line");
    let json: serde_json::Value = serde_json::from_str(last).unwrap();
    assert_eq!(json["execs"], 200);
    assert!(
        json["classes"].as_object().is_some_and(|c| !c.is_empty()),
        "{last}"
    );
    assert!(json["findings"].is_array());
}

/// The JSON summary of a `fuzz` session (seed 5, `args` added) where the guard
/// `capture-tensor-not-materialized` (one program in three meets it) counts as a finding, and
/// the program files it saved (path, file), flaky ones included.
fn planted_session(name: &str, args: &[&str]) -> (serde_json::Value, Vec<(String, ProgramFile)>) {
    let out_dir = std::env::temp_dir().join(format!("dispatch-fuzz-{name}-{}", std::process::id()));
    let out = Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
        .args(["fuzz", "--seconds", "60", "--seed", "5", "--json"])
        .args(args)
        .args(["--out", out_dir.to_str().unwrap()])
        .env("DISPATCH_FUZZ_CRASH_ON", "capture-tensor-not-materialized")
        .output()
        .expect("the binary runs");
    let files = std::fs::read_dir(&out_dir).map_or(Vec::new(), |dir| {
        dir.map(|e| {
            let path = e.unwrap().path();
            let file = ProgramFile::load(&path).unwrap();
            (path.display().to_string(), file)
        })
        .collect()
    });
    let _ = std::fs::remove_dir_all(&out_dir);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let json = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    (json, files)
}

/// [`planted_session`] of `runs` programs with `jobs` workers: one saved file per finding
/// (flaky findings, met under collide alone, are saved beside them and listed apart).
fn session_with_a_planted_finding(jobs: &str, runs: &str) -> serde_json::Value {
    let args = ["--runs", runs, "--jobs", jobs];
    let (json, files) = planted_session(&format!("jobs-{jobs}"), &args);
    let saved = files.iter().filter(|(_, f)| f.flaky.is_none()).count();
    assert_eq!(json["findings"].as_array().map(Vec::len), Some(saved));
    json
}

#[test]
fn two_workers_run_the_programs_asked_for_and_share_findings_one_file_per_signature() {
    let one = session_with_a_planted_finding("1", "300");
    let two = session_with_a_planted_finding("2", "300");
    assert_eq!(
        (one["execs"].as_u64(), two["execs"].as_u64()),
        (Some(300), Some(300))
    );
    assert_eq!(two["jobs"], 2);
    let signatures = |json: &serde_json::Value| -> std::collections::BTreeSet<String> {
        json["findings"]
            .as_array()
            .unwrap()
            .iter()
            .map(|f| f["signature"].as_str().unwrap().to_string())
            .filter(|s| s.starts_with("capture-tensor-not-materialized"))
            .collect()
    };
    // The planted class is met by both sessions, each signature saved once however many
    // workers met it.
    assert!(!signatures(&one).is_empty() && signatures(&one) == signatures(&two));
}

/// [`planted_session`] of 60 programs on one worker, triage given `triage_seconds`, with the
/// steps of each program file it saved.
fn triaged_session(triage_seconds: &str) -> (serde_json::Value, Vec<(String, usize)>) {
    let args = ["--runs", "60", "--jobs", "1"];
    let triage = ["--triage-seconds", triage_seconds, "--collide", "0"];
    let (json, files) = planted_session(
        &format!("triage-{triage_seconds}"),
        &[&args[..], &triage[..]].concat(),
    );
    let steps = files.into_iter().map(|(p, f)| (p, f.steps.len())).collect();
    (json, steps)
}

#[test]
fn a_new_finding_is_saved_minimized_and_grouped_by_root_cause_unless_triage_is_off() {
    let (json, files) = triaged_session("30");
    let findings = json["findings"].as_array().unwrap();
    assert!(!findings.is_empty(), "{json}");
    for f in findings {
        assert_eq!(f["triage"], "new", "{f}");
        let (before, after) = (f["steps_before"].as_u64(), f["steps_after"].as_u64());
        assert!(after < before, "{f}");
        // The saved file is the minimized program.
        let saved = files.iter().find(|(p, _)| *p == f["file"]).unwrap();
        assert_eq!(Some(saved.1 as u64), after);
        assert!(
            f["root_cause"].as_str().is_some_and(|r| r.contains(" at ")),
            "{f}"
        );
    }
    let groups = json["root_causes"].as_u64().unwrap() as usize;
    assert!((1..=findings.len()).contains(&groups));

    let (json, files) = triaged_session("0");
    let findings = json["findings"].as_array().unwrap();
    assert_eq!(findings.len(), files.len());
    assert!(
        findings.iter().all(|f| f["triage"] == "not-triaged"),
        "{json}"
    );
    assert_eq!(json["root_causes"], 0);
}

#[test]
fn more_than_one_worker_with_wgpu_is_refused() {
    let out = dispatch_fuzz(&["fuzz", "--backends", "flex,capture,wgpu", "--jobs", "2"]);
    // 2: a switch the user got wrong, before any backend starts.
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("one device stream"));
}

#[test]
fn run_json_names_the_known_findings_its_text_prints() {
    let case = common::repo().join("regressions/selu-gradient-is-nan-for-large-inputs.json");
    let text = dispatch_fuzz(&["run", case.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains("known findings: selu-gradient-is-nan-for-large-inputs"),
        "{stdout}"
    );
    let out = dispatch_fuzz(&["run", "--json", case.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(json["finding"].is_null());
    assert_eq!(
        json["known_findings"],
        serde_json::json!(["selu-gradient-is-nan-for-large-inputs"])
    );
}

#[test]
fn fmt_prints_an_artifact_as_a_program() {
    let corpus = common::repo().join("corpus/dispatch_ops");
    let input = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.is_file())
        .expect("a corpus input");
    let out = dispatch_fuzz(&["fmt", input.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).contains("Tensor::"));
}

#[test]
fn fmt_rust_prints_a_reproducer_against_the_public_api() {
    let case = common::repo().join("regressions/leaked-capture-tensor-used-after-scope.json");
    let out = dispatch_fuzz(&["fmt", "--rust", case.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let rust = String::from_utf8_lossy(&out.stdout);
    for expected in [
        "fn main() {",
        "let capture0 = Device::capture();",
        ".capture_scope(|scope| {",
        "scope.complete(",
        // The panic the last line raises, in Burn's words (no class name of this project's).
        "// panics: capture scope is already complete",
        // The leaked tensor is carried out of the closure, as real code leaks it.
        "let t0 = t0_out.expect(\"the scope ran\");",
    ] {
        assert!(rust.contains(expected), "missing {expected:?} in:\n{rust}");
    }
}

#[test]
fn triage_buckets_artifacts_promotes_new_ones_and_reports_them() {
    // A night with two artifacts: one a stored case covers, one no case has.
    let root = std::env::temp_dir().join(format!("dispatch-fuzz-night-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (artifacts, store) = (root.join("artifacts"), root.join("regressions"));
    std::fs::create_dir_all(&artifacts).unwrap();
    std::fs::create_dir_all(&store).unwrap();
    let seeds = common::repo().join("corpus/dispatch_ops");
    std::fs::copy(
        seeds.join("regressions/capture-tensor-created-outside-scope"),
        artifacts.join("crash-covered"),
    )
    .unwrap();
    std::fs::copy(
        common::repo().join("regressions/capture-tensor-created-outside-scope.json"),
        store.join("capture-tensor-created-outside-scope.json"),
    )
    .unwrap();
    let new = std::fs::read_dir(&seeds)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("require-grad-without-autodiff-")
        })
        .expect("a require-grad corpus seed");
    std::fs::copy(&new, artifacts.join("crash-new")).unwrap();
    // A timeout artifact that runs to its end in a process of its own, and one that cannot be
    // read: buckets of their own, and triage goes on past both.
    let clean = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}},
            {"op": {"out": 1, "op": {"unary": {"op": "neg", "src": 0}}}}]"#,
    );
    std::fs::write(
        artifacts.join("timeout-ends"),
        clean.to_fuzz_bytes().unwrap(),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("gone"), artifacts.join("crash-dangling")).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
        .args(["triage", "--target", "dispatch_ops", "--promote"])
        .arg("--artifacts")
        .arg(&artifacts)
        .arg("--regressions")
        .arg(&store)
        .arg("--out")
        .arg(root.join("triage-dispatch_ops.json"))
        .env(
            "DISPATCH_FUZZ_CRASH_ON",
            "operation-outside-capture-scope,require-grad-without-autodiff",
        )
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let triage: serde_json::Value =
        serde_json::from_slice(&std::fs::read(root.join("triage-dispatch_ops.json")).unwrap())
            .unwrap();
    let status = |class: &str| {
        triage["buckets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["class"] == class)
            .map(|b| b["status"].as_str().unwrap().to_string())
    };
    assert_eq!(
        status("operation-outside-capture-scope").as_deref(),
        Some("covered")
    );
    assert_eq!(
        status("require-grad-without-autodiff").as_deref(),
        Some("new")
    );
    assert_eq!(status("unreadable").as_deref(), Some("unreadable"));
    let timeout = triage["buckets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|b| b["class"] == "timeout")
        .unwrap_or_else(|| panic!("no timeout bucket: {triage:#}"));
    assert_eq!(timeout["status"], "unreproduced");
    assert!(
        timeout["signature"]
            .as_str()
            .unwrap()
            .contains("ran to its end within 10 s and 2560 MiB"),
        "{timeout}"
    );
    let pending: Vec<_> = std::fs::read_dir(store.join("pending"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        pending
            .iter()
            .any(|n| n.starts_with("require-grad-without-autodiff-")),
        "{pending:?}"
    );
    std::fs::create_dir_all(root.join("logs")).unwrap();
    std::fs::write(
        root.join("logs/fuzz-dispatch_ops.log"),
        "#2048: cov: 1400 ft: 3900 corp: 104 exec/s: 3123 oom/timeout/crash: 0/0/0 time: 12s job: 3 dft_time: 0\n\
         #9000: cov: 1500 ft: 4100 corp: 110 exec/s: 3000 oom/timeout/crash: 0/0/1 time: 60s job: 9 dft_time: 0\n",
    )
    .unwrap();
    let report = dispatch_fuzz(&["nightly-report", "--dir", root.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(0), "{report:?}");
    let md = std::fs::read_to_string(root.join("report.md")).unwrap();
    assert!(
        md.contains("| new | 1 | require-grad-without-autodiff"),
        "{md}"
    );
    assert!(md.contains("```mermaid\nxychart-beta"), "{md}");
    assert!(root.join("chart.svg").exists() && root.join("report.json").exists());
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn a_misspelt_environment_switch_exits_2_with_the_allowed_values() {
    let clean = common::repo().join("corpus/dispatch_ops/programs/seed-000-after.json");
    for (var, value, allowed) in [
        (
            "DISPATCH_FUZZ_WGPU",
            "gpu0",
            "allowed: one of auto, gpu, cpu",
        ),
        (
            "DISPATCH_FUZZ_BACKENDS",
            "flex,wpgu",
            "allowed: flex, capture, wgpu",
        ),
        (
            "DISPATCH_FUZZ_CRASH_ON",
            "capture-tensor-not-materialised",
            "operation-outside-capture-scope",
        ),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
            .args(["run", clean.to_str().unwrap()])
            .env(var, value)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{var}={value}: {out:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains(var) && stderr.contains(allowed), "{stderr}");
    }
}

#[test]
fn help_lists_every_environment_switch() {
    let out = dispatch_fuzz(&["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for switch in dispatch_fuzz::config::SWITCHES {
        assert!(help.contains(switch.var), "{help}");
    }
}

/// A stand-in Burn workspace at `dir` (version 9.9.9) holding the crates `names`.
fn fake_burn_workspace(dir: &std::path::Path, names: &[&str]) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("Cargo.toml"),
        "[workspace]\nmembers = [\"crates/*\"]\nresolver = \"2\"\n\n[workspace.package]\n\
         version = \"9.9.9\"\n",
    )
    .unwrap();
    for name in names {
        let krate = dir.join("crates").join(name);
        std::fs::create_dir_all(krate.join("src")).unwrap();
        std::fs::write(
            krate.join("Cargo.toml"),
            format!("[package]\nname = \"{name}\"\nversion.workspace = true\nedition = \"2021\"\n"),
        )
        .unwrap();
        std::fs::write(krate.join("src/lib.rs"), "").unwrap();
    }
}

#[test]
fn burn_checkout_names_what_a_folder_lacks_and_leaves_the_project_untouched() {
    let root = std::env::temp_dir().join(format!("dispatch-fuzz-checkout-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let manifest = common::repo().join("Cargo.toml");
    let before = std::fs::read(&manifest).unwrap();
    let work = root.join("work");
    let run = |path: &std::path::Path| {
        dispatch_fuzz(&[
            "burn-checkout",
            path.to_str().unwrap(),
            "prepare",
            "--work",
            work.to_str().unwrap(),
        ])
    };

    let out = run(&root.join("absent"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("is not a directory"));

    std::fs::create_dir_all(root.join("empty")).unwrap();
    let out = run(&root.join("empty"));
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no Cargo.toml"));

    let partial = root.join("partial");
    fake_burn_workspace(&partial, &["burn", "burn-ir"]);
    let out = run(&partial);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    for (name, _) in dispatch_fuzz::checkout::REQUIRED {
        let named = stderr.contains(&format!(" {name} ("));
        assert_eq!(
            named,
            !["burn", "burn-ir"].contains(name),
            "{name}: {stderr}"
        );
    }
    assert!(!work.exists(), "a refused checkout must not leave a copy");
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn burn_checkout_copies_the_project_pinned_to_the_checkouts_versions() {
    let root = std::env::temp_dir().join(format!("dispatch-fuzz-copy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let names: Vec<&str> = dispatch_fuzz::checkout::REQUIRED
        .iter()
        .map(|(name, _)| *name)
        .collect();
    let burn = root.join("burn");
    fake_burn_workspace(&burn, &names);
    let manifest = common::repo().join("Cargo.toml");
    let before = std::fs::read(&manifest).unwrap();
    let work = root.join("work");
    let out = dispatch_fuzz(&[
        "burn-checkout",
        burn.to_str().unwrap(),
        "prepare",
        "--work",
        work.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let copy = std::fs::read_to_string(work.join("project/Cargo.toml")).unwrap();
    assert!(copy.contains("burn-router = \"=9.9.9\""), "{copy}");
    assert!(!copy.contains("\"=0.23.0-pre.1\""), "{copy}");
    let dispatch = burn.join("crates/burn-dispatch");
    assert!(
        copy.contains(&format!("burn-dispatch = {{ path = {dispatch:?} }}")),
        "{copy}"
    );
    assert!(work.join("project/harness/src/lib.rs").is_file());
    assert!(work.join("project/regressions").is_dir());
    assert!(
        std::fs::read_link(work.join("project/fuzz/corpus/dispatch_ops")).is_ok(),
        "cargo-fuzz's corpus link is copied as a link"
    );
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    let _ = std::fs::remove_dir_all(&root);
}

#[test]
fn promote_also_adds_a_finding_to_a_stored_cases_root_cause_once_and_only_of_its_class() {
    let store = std::env::temp_dir().join(format!("dispatch-fuzz-also-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&store);
    std::fs::create_dir_all(&store).unwrap();
    // The stored case without its `also` programs, and another class's case.
    let case = "flex-int-mean-sums-in-the-tensor-dtype";
    let text = std::fs::read_to_string(common::repo().join(format!("regressions/{case}.json")));
    let mut json: serde_json::Value = serde_json::from_str(&text.unwrap()).unwrap();
    json.as_object_mut().unwrap().remove("also");
    std::fs::write(store.join(format!("{case}.json")), json.to_string()).unwrap();
    let other = "capture-tensor-created-outside-scope";
    std::fs::copy(
        common::repo().join(format!("regressions/{other}.json")),
        store.join(format!("{other}.json")),
    )
    .unwrap();
    // The same root cause through mean_dim over U8 (fuzz --seed 0).
    let finding = store.join("finding.json");
    std::fs::write(
        &finding,
        r#"{"class": "reference-mismatch", "steps": [
            {"create":{"out":0,"kind":"int","shape":[4],"fill":{"value":63},"device":"flex","dtype":"u8"}},
            {"op":{"out":0,"op":{"unary":{"op":"neg","src":0}}}},
            {"op":{"out":1,"op":{"along_dim":{"op":"mean_dim","src":0,"dim":0}}}}]}"#,
    )
    .unwrap();
    let promote = |to: &str| {
        let (finding, dir) = (finding.to_str().unwrap(), store.to_str().unwrap());
        dispatch_fuzz(&["promote", finding, "--also", to, "--dir", dir])
    };
    let wrong = promote(other);
    assert_eq!(wrong.status.code(), Some(2), "{wrong:?}");
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("shares its case's class"));
    let added = promote(case);
    assert_eq!(added.status.code(), Some(0), "{added:?}");
    let stored = dispatch_fuzz::program::ProgramFile::load(&store.join(format!("{case}.json")));
    let also = stored.unwrap().also;
    assert_eq!(also.len(), 1);
    assert_eq!(
        also[0].signature,
        "reference-mismatch | along_dim mean_dim over (U8) differs from its definition | reference"
    );
    assert_eq!(also[0].steps.len(), 3);
    let again = promote(case);
    assert_eq!(again.status.code(), Some(2), "{again:?}");
    assert!(String::from_utf8_lossy(&again.stderr).contains("already names"));
    let _ = std::fs::remove_dir_all(&store);
}

#[test]
fn verdicts_writes_one_line_per_program_the_same_whatever_the_jobs_and_the_programs_before() {
    // A crash-on class the random set meets, so that some lines name a finding.
    let run = |jobs: &str| {
        let out = Command::new(env!("CARGO_BIN_EXE_dispatch-fuzz"))
            .args([
                "verdicts",
                "--programs",
                "3000",
                "--seed",
                "7",
                "--jobs",
                jobs,
            ])
            .env("DISPATCH_FUZZ_CRASH_ON", "operation-outside-capture-scope")
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(0), "{out:?}");
        String::from_utf8(out.stdout).unwrap()
    };
    let (one, two) = (run("1"), run("2"));
    let lines: Vec<&str> = one.lines().collect();
    assert_eq!(lines.len(), 3000);
    for (i, line) in lines.iter().enumerate() {
        let fields: Vec<&str> = line.split('\t').collect();
        assert_eq!(fields.len(), 3, "{line}");
        assert_eq!(fields[0], i.to_string());
        assert_eq!(fields[2].len(), 16, "{line}");
    }
    let findings = lines.iter().filter(|l| !l.contains("\t-\t")).count();
    assert!(
        findings > 0 && findings < lines.len(),
        "{findings} findings"
    );
    // Two workers run each program after other programs than one worker does: tensor and
    // device ids and random draws differ, the verdicts must not.
    assert_eq!(one, two);
}
