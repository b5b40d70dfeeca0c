//! What a night produced, read back from its output folder: each fuzz target's progress
//! samples over its workers' logs, its triage and coverage, and the phases' timings.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;

use super::coverage::{Coverage, FileCoverage, GuardHits};
use super::{combine, parse_log, Sample, Triage};
use crate::oracles::catalogue::catalogue;

/// Each phase of the night and its seconds, as `timings.tsv` has them.
pub type Timings = Vec<(String, f64)>;

/// What a night produced for one fuzz target.
#[derive(Serialize)]
pub struct TargetReport {
    /// The target.
    pub target: String,
    /// Its progress samples over the night, every worker combined.
    pub samples: Vec<Sample>,
    /// libFuzzer's last `cov`.
    pub final_cov: u64,
    /// libFuzzer's last `ft`.
    pub final_ft: u64,
    /// Inputs run.
    pub runs: u64,
    /// Inputs per second over the night.
    pub execs_per_s: f64,
    /// Fuzzing processes that ran side by side.
    pub workers: usize,
    /// `execs_per_s` over `workers`: what one process managed, to set beside a single process.
    pub execs_per_s_per_worker: f64,
    /// The night's triage, if it ran.
    pub triage: Option<Triage>,
    /// Totals per area of interest (`coverage::AREAS`).
    pub areas: Vec<FileCoverage>,
    /// Coverage per source file.
    pub coverage: Vec<FileCoverage>,
    /// How often each catalogued guard's line ran.
    pub guards: Vec<GuardHits>,
}

/// Reads the night's files under `dir` (logs/, triage-*.json, `coverage/<target>.json`,
/// timings.tsv): each target's report, and each phase's seconds.
pub fn gather(dir: &Path, targets: &[String]) -> Result<(Vec<TargetReport>, Timings)> {
    let mut reports = Vec::new();
    for target in targets {
        let workers = worker_logs(&dir.join("logs"), target)?;
        let samples = combine(&workers.iter().map(|log| parse_log(log)).collect::<Vec<_>>());
        let last = samples.last().cloned().unwrap_or_default();
        let execs_per_s = if last.time_s > 0.0 {
            last.runs as f64 / last.time_s
        } else {
            last.execs_per_s as f64
        };
        let triage = std::fs::read_to_string(dir.join(format!("triage-{target}.json")))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let export = dir.join(format!("coverage/{target}.json"));
        let coverage = match std::fs::read_to_string(&export) {
            Ok(text) => Some(
                Coverage::parse(&text)
                    .with_context(|| format!("cannot read {}", export.display()))?,
            ),
            Err(_) => None,
        };
        reports.push(TargetReport {
            target: target.clone(),
            final_cov: last.cov,
            final_ft: last.ft,
            runs: last.runs,
            execs_per_s,
            workers: workers.len(),
            execs_per_s_per_worker: execs_per_s / workers.len().max(1) as f64,
            samples,
            triage,
            areas: coverage.as_ref().map(Coverage::areas).unwrap_or_default(),
            coverage: coverage.as_ref().map(Coverage::files).unwrap_or_default(),
            guards: coverage
                .as_ref()
                .map(|c| c.guard_hits(catalogue()))
                .unwrap_or_default(),
        });
    }
    let timings = std::fs::read_to_string(dir.join("timings.tsv")).unwrap_or_default();
    let timings: Vec<(String, f64)> = timings
        .lines()
        .filter_map(|l| {
            let (phase, secs) = l.split_once('\t')?;
            Some((phase.to_string(), secs.trim().parse().ok()?))
        })
        .collect();
    Ok((reports, timings))
}

/// The night's fuzzing logs of `target`: one per worker (`fuzz-<target>.<n>.log`, as
/// ci/nightly.sh writes them), or the single fork-mode log of an earlier night. Rotated logs of
/// a resumed night (`.log.<n>`) are not this run's.
fn worker_logs(logs: &Path, target: &str) -> Result<Vec<String>> {
    let prefix = format!("fuzz-{target}.");
    let mut paths: Vec<PathBuf> = match std::fs::read_dir(logs) {
        Ok(entries) => entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| {
                p.file_name()
                    .and_then(|n| n.to_str())
                    .and_then(|n| n.strip_prefix(&prefix)?.strip_suffix(".log"))
                    .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
            })
            .collect(),
        Err(_) => Vec::new(),
    };
    paths.sort();
    if paths.is_empty() {
        paths.push(logs.join(format!("fuzz-{target}.log")));
    }
    let mut texts = Vec::new();
    for path in paths {
        match std::fs::read_to_string(&path) {
            Ok(text) => texts.push(text),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
        }
    }
    Ok(texts)
}
