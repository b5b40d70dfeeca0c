//! The regression suite: every case under `regressions/` runs (in parallel, wgpu cases one at a
//! time after the others) and its trace is
//! compared with its snapshot in `regressions/snapshots/`. Prints one line per case and ends
//! with `N passed, N failed`; `REGRESSION_FILTER=text` runs only cases whose name contains it.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

use rayon::prelude::*;

use dispatch_fuzz::regressions::{default_dir, load_all, Case};

fn settings() -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(default_dir().join("snapshots"));
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings
}

/// Runs one case; `Err` carries why it failed.
fn run(case: &Case, settings: &insta::Settings) -> Result<(), String> {
    let text = case.snapshot_text().map_err(|e| format!("{e:#}"))?;
    // insta settings are per thread: bind a clone inside the rayon task.
    let mut settings = settings.clone();
    settings.set_description(case.file.signature.clone().unwrap_or_default());
    let outcome = catch_unwind(AssertUnwindSafe(|| {
        settings.bind(|| insta::assert_snapshot!(case.name.as_str(), text));
    }));
    outcome.map_err(|payload| {
        payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "snapshot assertion failed".into())
    })
}

fn main() -> ExitCode {
    let dir = default_dir();
    let cases = match load_all(&dir) {
        Ok(cases) => cases,
        Err(e) => {
            eprintln!("cannot load the regression cases: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let settings = settings();
    // Flex and capture cases in parallel; wgpu cases after them, one at a time: one device
    // queue serves them all, and a CPU adapter costs ~1 ms per op.
    let (wgpu_cases, cpu_cases): (Vec<&Case>, Vec<&Case>) =
        cases.iter().partition(|c| c.uses_wgpu());
    // wgpu is enabled only after the parallel pass: with it on, every case would also run on
    // wgpu (the differential oracle) and see a different trace.
    let mut results: Vec<(&Case, Result<(), String>)> = cpu_cases
        .par_iter()
        .map(|case| (*case, run(case, &settings)))
        .collect();
    if !wgpu_cases.is_empty() {
        if let Err(reason) = dispatch_fuzz::interpreter::wgpu::enable() {
            eprintln!("{} wgpu case(s) will fail: {reason}", wgpu_cases.len());
        }
    }
    results.extend(wgpu_cases.iter().map(|case| (*case, run(case, &settings))));
    let mut failed = 0;
    for (case, result) in &results {
        match result {
            Ok(()) => println!("case {} ... ok", case.name),
            Err(why) => {
                failed += 1;
                println!("case {} ... FAILED", case.name);
                eprintln!("--- {}: {why}", case.name);
            }
        }
    }
    let passed = results.len() - failed;
    println!();
    println!("{passed} passed, {failed} failed");
    if failed > 0 {
        eprintln!(
            "{failed} regression case(s) differ from their snapshots; run `cargo insta review` \
             (new cases need their snapshot committed: CI never writes one)"
        );
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
