//! A session's program files: each new finding's (flaky or not) and the program a harness
//! fault met, with where it came from.

use std::path::PathBuf;

use anyhow::{Context, Result};

use super::{worker_seed, Options};
use crate::guide::Origin;
use crate::hash::fnv1a;
use crate::oracles::Finding;
use crate::program::{Flaky, Program, ProgramFile};

/// Saves a finding's program as `<class>-<fnv1a of its signature>.json`; a flaky one (met under
/// collide alone) as `flaky-<class>-<...>.json` with its hit rate, a program file `promote`
/// refuses. Returns where, and the file.
pub(super) fn save(
    options: &Options,
    program: &Program,
    (finding, flaky): (&Finding, Option<Flaky>),
    origin: &Origin,
    bytes: &[u8],
    worker: usize,
    exec: u64,
) -> Result<(PathBuf, ProgramFile)> {
    let signature = finding.signature.to_string();
    let hash = fnv1a(&[signature.as_bytes()]);
    let file = ProgramFile {
        signature: Some(signature),
        class: Some(finding.class.to_string()),
        origin: Some(format!(
            "dispatch-fuzz fuzz --seed {}{}{}{}, input #{exec} ({}, {} bytes, fnv1a {:016x}){}",
            options.seed,
            if worker == 0 {
                String::new()
            } else {
                format!(
                    " --jobs {} (worker {worker}, seed {})",
                    options.jobs.unwrap_or(0),
                    worker_seed(options.seed, worker)
                )
            },
            if options.blind { " --blind" } else { "" },
            options
                .aim
                .iter()
                .map(|e| format!(" --aim {}:{}", e.family, e.name))
                .collect::<String>(),
            describe(origin),
            bytes.len(),
            fnv1a(&[bytes]),
            if flaky.is_some() {
                format!(
                    ", --collide {}: met under collide, not in the serial schedule",
                    options.collide
                )
            } else {
                String::new()
            }
        )),
        flaky,
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    let prefix = if flaky.is_some() { "flaky-" } else { "" };
    let path = write_program(
        options,
        &format!("{prefix}{}-{hash:016x}.json", finding.class),
        &file,
    )?;
    Ok((path, file))
}

/// `error` with the path of the program that caused it, written to `options.out` as
/// `harness-error-<fnv1a>.json` (a program file, like a finding's, without a signature).
pub(super) fn harness_fault(
    options: &Options,
    program: &Program,
    origin: &Origin,
    bytes: &[u8],
    error: anyhow::Error,
) -> anyhow::Error {
    let hash = fnv1a(&[bytes]);
    let file = ProgramFile {
        origin: Some(format!(
            "dispatch-fuzz fuzz --seed {}: the harness failed on it ({}, {} bytes, fnv1a \
             {hash:016x})",
            options.seed,
            describe(origin),
            bytes.len(),
        )),
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    match write_program(options, &format!("harness-error-{hash:016x}.json"), &file) {
        Ok(path) => error.context(format!(
            "harness error; program saved to {}",
            path.display()
        )),
        Err(io) => error.context(format!(
            "harness error; the program could not be saved: {io:#}"
        )),
    }
}

/// Where a program came from, for a saved file's origin.
fn describe(origin: &Origin) -> String {
    match origin {
        Origin::Random(_) => "random".to_string(),
        Origin::Mutated {
            target, mutations, ..
        } => format!(
            "mutated toward {} over {:?} {}: {}",
            target.entry,
            target.kind,
            target.context.name(),
            mutations.join(", ")
        ),
    }
}

/// Writes `file` as `name` in the session's findings folder, creating it.
fn write_program(options: &Options, name: &str, file: &ProgramFile) -> Result<PathBuf> {
    std::fs::create_dir_all(&options.out)
        .with_context(|| format!("cannot create {}", options.out.display()))?;
    let path = options.out.join(name);
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(path)
}
