//! The regression suite: one trial per case under `regressions/`, each run and compared with its
//! snapshot in `regressions/snapshots/`, its `also` programs run for the signatures they name. Cargo's usual arguments work (`cargo test --test
//! regressions -- <filter>`, `--list`, `--exact`). Each case runs in its own session
//! (`Case::session`: wgpu only for a wgpu case), so the order does not matter: the wgpu cases run
//! first, one at a time (one device queue serves them all), then the Flex and capture cases in
//! parallel, which a wgpu case before them must not have put on wgpu. A wgpu case runs only on an
//! adapter of a class it holds on (its `adapters`); elsewhere it is ignored with the reason, or
//! fails under `DISPATCH_FUZZ_WGPU=required`.

mod common;

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::process::ExitCode;

use libtest_mimic::{Arguments, Completion, Failed, Trial};

use dispatch_fuzz::interpreter::wgpu::Placement;
use dispatch_fuzz::regressions::{assert_snapshot, default_dir, load_all, Case};

/// Runs one case against its snapshot.
fn run(case: &Case) -> Result<(), Failed> {
    // A timeout or out-of-memory case runs in a process of its own under its limits.
    let text = match case.file.limits {
        Some(_) => {
            case.limited_snapshot_text(std::path::Path::new(env!("CARGO_BIN_EXE_dispatch-fuzz")))
        }
        None => case.snapshot_text(),
    }
    .map_err(|e| format!("{e:#}"))?;
    let snapshots = default_dir().join("snapshots");
    let also = case.also_failures().map_err(|e| format!("{e:#}"))?;
    if !also.is_empty() {
        return Err(also.join("\n").into());
    }
    catch_unwind(AssertUnwindSafe(|| {
        assert_snapshot(case, &snapshots, &text)
    }))
    .map_err(|p| {
        let why = p
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "snapshot assertion failed".into());
        Failed::from(format!(
            "{why}\nrun `cargo insta review` (a new case needs its snapshot committed: CI never \
             writes one)"
        ))
    })
}

fn trial(case: Case) -> Trial {
    Trial::ignorable_test(case.name.clone(), move || match case.placement() {
        Placement::Here => run(&case).map(|()| Completion::Completed),
        Placement::Pinned(api, why) => common::pinned_trial(&case.name, api, why),
        Placement::Nowhere(reason) => common::elsewhere(reason),
    })
}

fn main() -> ExitCode {
    let args = Arguments::from_args();
    let cases = match load_all(&default_dir()) {
        Ok(cases) if !cases.is_empty() => cases,
        Ok(_) => {
            eprintln!(
                "the regression store {} holds no case",
                default_dir().display()
            );
            return ExitCode::FAILURE;
        }
        Err(e) => {
            eprintln!("cannot load the regression cases: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    let (wgpu, cpu): (Vec<Case>, Vec<Case>) = cases.into_iter().partition(Case::uses_wgpu);
    let serial = Arguments {
        test_threads: Some(1),
        ..args.clone()
    };
    let wgpu = libtest_mimic::run(&serial, wgpu.into_iter().map(trial).collect());
    let cpu = libtest_mimic::run(&args, cpu.into_iter().map(trial).collect());
    if args.list {
        return ExitCode::SUCCESS;
    }
    let ran = [&cpu, &wgpu]
        .iter()
        .map(|c| c.num_passed + c.num_failed + c.num_ignored)
        .sum::<u64>();
    if ran == 0 && args.filter.is_some() {
        eprintln!("no regression case matches the filter");
        return ExitCode::FAILURE;
    }
    if cpu.has_failed() || wgpu.has_failed() {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}
