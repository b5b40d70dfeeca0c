//! Whether a saved reproducer shows its finding in a process of its own.
//!
//! The minimizer runs every candidate, and its re-runs, in one process. An earlier run may have
//! left state there that a finding depends on (a wgpu device poisoned by a failed launch makes
//! every later wgpu step fail), and then the minimized program reproduces only after it. A
//! reproducer must show its bug alone, so the result runs once more in a new process, and where
//! it does not show it there the input is minimized again with each candidate in a new process
//! (`settle_alone`, which `minimize` and `promote` call): this binary's `run --json`, so only the
//! `dispatch-fuzz` binary may call it (a test binary is no `dispatch-fuzz`).

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};

use crate::hash::fnv1a;
use crate::minimize::{Minimized, Minimizer};
use crate::program::{AdapterChoice, Program, ProgramFile};
use crate::Session;

/// What a new `dispatch-fuzz run` of the file says: `None` when it gives `signature`, else what
/// it gives instead.
fn differs_alone(path: &Path, signature: &str, session: &Session) -> Result<Option<String>> {
    let exe = std::env::current_exe().context("cannot find the dispatch-fuzz binary")?;
    // The session the minimizer ran in: its backends, policy and oracles (wgpu may be on
    // without the switch: triage runs the wgpu target's artifacts in that target's session).
    let output = Command::new(&exe)
        .args(["run", "--json"])
        .arg(path)
        .envs(session.switches())
        .output()
        .with_context(|| format!("cannot run {} run {}", exe.display(), path.display()))?;
    let verdict: serde_json::Value = serde_json::from_slice(&output.stdout).with_context(|| {
        format!(
            "`run --json {}` printed no verdict (exit {:?}): {}",
            path.display(),
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        )
    })?;
    let got = verdict["finding"]["signature"].as_str();
    Ok((got != Some(signature)).then(|| got.unwrap_or("no finding").to_string()))
}

/// Runs this `dispatch-fuzz` binary with `args` in a process whose wgpu comes up on `choice`
/// (pinned to the API of a case of an adapter class this process's adapter is not), failing
/// there where it cannot run a wgpu case when `required`: its standard output, or an error with
/// its standard error when it fails.
pub fn run_pinned(choice: AdapterChoice, required: bool, args: &[&str]) -> Result<String> {
    let exe = std::env::current_exe().context("cannot find the dispatch-fuzz binary")?;
    let output = crate::interpreter::wgpu::pinned_command(&exe, choice, required)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {} {}", exe.display(), args.join(" ")))?;
    if !output.status.success() {
        anyhow::bail!(
            "`dispatch-fuzz {}` with wgpu on adapter `{choice}` failed (exit {:?}): {}",
            args.join(" "),
            output.status.code(),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    String::from_utf8(output.stdout).context("the pinned run printed no text")
}

/// Shrinks `program` keeping `signature` as the minimizer does, but runs every candidate in a
/// process of its own (through [`differs_alone`]), so no candidate reproduces on state that an
/// earlier one left: the way out when an in-process minimization ends on a program that shows
/// its finding only after others (fuzz --backends flex,capture,wgpu --seed 114: three findings
/// whose inputs reproduce alone minimized in process to 5-step programs that do not). About a
/// tenth of a second per candidate. `None` when `program` itself does not reproduce alone.
fn minimize_alone(
    program: &Program,
    signature: &str,
    failing_step: Option<usize>,
    session: &Session,
) -> Result<Option<Minimized>> {
    let path = scratch_path(signature);
    let alone = |p: &Program| reproduces_alone(&path, p, signature, session);
    let result = match alone(program) {
        Ok(true) => Minimizer::new()
            .run(program.clone(), failing_step, alone)
            .map(Some),
        Ok(false) => Ok(None),
        Err(e) => Err(e),
    };
    let _ = std::fs::remove_file(&path);
    result
}

/// The program a minimization ended on, when it gives `signature` in a process of its own;
/// else `original` minimized again with every candidate in a new process (`minimize_alone`),
/// and `true` with it. An error when `original` itself does not give the finding alone: it
/// needs state an earlier program of its session left.
pub fn settle_alone(
    original: &Program,
    signature: &str,
    minimized: Minimized,
    session: &Session,
) -> Result<(Minimized, bool)> {
    let path = scratch_path(signature);
    let alone = reproduces_alone(&path, &minimized.program, signature, session);
    let _ = std::fs::remove_file(&path);
    if alone? {
        return Ok((minimized, false));
    }
    let step = crate::check(session, original)?
        .finding
        .and_then(|f| f.step);
    match minimize_alone(original, signature, step, session)? {
        Some(again) => Ok((again, true)),
        None => anyhow::bail!(
            "the input does not give `{signature}` in a process of its own: its finding needs \
             state an earlier program of its session left"
        ),
    }
}

/// A scratch file for the program of a finding with `signature`, one per process.
fn scratch_path(signature: &str) -> std::path::PathBuf {
    std::env::temp_dir().join(format!(
        "dispatch-fuzz-alone-{}-{:016x}.json",
        std::process::id(),
        fnv1a(&[signature.as_bytes()])
    ))
}

/// Whether `program`, written to `path`, gives `signature` in a new process.
fn reproduces_alone(
    path: &Path,
    program: &Program,
    signature: &str,
    session: &Session,
) -> Result<bool> {
    let file = ProgramFile {
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    std::fs::write(path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(differs_alone(path, signature, session)?.is_none())
}
