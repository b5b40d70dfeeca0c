//! The regression store: one program file per case under `regressions/`, each replayed by
//! `cargo test` and compared with its `insta` snapshot in `regressions/snapshots/`. A case is a
//! minimized reproducer with a header (name, signature, class, found, origin, root cause); its
//! snapshot is the trace with process-global counters and machine paths normalized away.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

use crate::files::ProgramFile;
use crate::interpreter::{Outcome, PanicInfo, ValueInfo};
use crate::oracles::catalogue::burn_file;
use crate::oracles::{normalize_message, Policy};
use crate::program::{step_line, Kind, Program};
use crate::{check_with, Verdict};

/// Environment variable: only cases whose name contains this text run.
pub const FILTER_VAR: &str = "REGRESSION_FILTER";

/// One stored case.
#[derive(Clone, Debug)]
pub struct Case {
    /// File stem, also the snapshot's name.
    pub name: String,
    /// Where it is stored.
    pub path: PathBuf,
    /// Its content.
    pub file: ProgramFile,
}

impl Case {
    /// The policy it runs under: its own class counts as a finding, so the snapshot shows the
    /// signature whether or not the class is catalogued.
    pub fn policy(&self) -> Policy {
        Policy::parse(self.file.class.as_deref().unwrap_or_default())
    }

    /// Whether any step names the wgpu device: such cases need wgpu enabled and run one at a
    /// time (a CPU adapter costs ~1 ms per op, and one device queue serves them all).
    pub fn uses_wgpu(&self) -> bool {
        self.file
            .steps
            .iter()
            .any(|s| s.device() == Some(crate::program::DeviceRef::Wgpu))
    }

    /// Runs the case.
    pub fn check(&self) -> Result<Verdict> {
        check_with(&self.file.program(), &self.policy())
            .with_context(|| format!("case {}", self.name))
    }

    /// The normalized trace its snapshot holds.
    pub fn snapshot_text(&self) -> Result<String> {
        let verdict = self.check()?;
        Ok(render(&self.file.program(), &verdict, Style::Normalized))
    }
}

/// The default store: `regressions/` at the repository root.
pub fn default_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../regressions")
}

/// Every case in `dir` (files ending in `.json`), sorted by name, filtered by
/// `REGRESSION_FILTER` when it is set.
pub fn load_all(dir: &Path) -> Result<Vec<Case>> {
    let filter = std::env::var(FILTER_VAR).unwrap_or_default();
    let mut cases = Vec::new();
    for (name, path) in program_files(dir)? {
        if !name.contains(&filter) {
            continue;
        }
        let file = ProgramFile::load(&path)?;
        cases.push(Case { name, path, file });
    }
    Ok(cases)
}

/// `(file stem, path)` of every program file (`*.json`) directly in `dir`, sorted by name.
pub fn program_files(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().and_then(|e| e.to_str()) != Some("json") {
            continue;
        }
        let name = path.file_stem().unwrap_or_default().to_string_lossy();
        files.push((name.into_owned(), path));
    }
    files.sort();
    Ok(files)
}

/// The fuzzer seeds every stored program makes: `(file name, bytes)` for each case in `dir` and
/// each known-divergence reproducer in `dir/divergences` (`divergence-<name>`), sorted by name,
/// ignoring `REGRESSION_FILTER`. Each night then starts from every known bug. Programs with
/// wgpu steps decode to their Flex variant unless the fuzz target runs with wgpu enabled.
pub fn seed_inputs(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut seeds = Vec::new();
    for (sub, prefix) in [("", ""), ("divergences", "divergence-")] {
        let dir = dir.join(sub);
        if !dir.is_dir() {
            continue;
        }
        for (stem, path) in program_files(&dir)? {
            let program = ProgramFile::load(&path)?.program();
            let bytes = program
                .to_fuzz_bytes()
                .with_context(|| format!("{}: cannot encode", path.display()))?;
            seeds.push((format!("{prefix}{stem}"), bytes));
        }
    }
    seeds.sort();
    Ok(seeds)
}

/// How much of a trace to show.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Style {
    /// Everything, as the run produced it (for `dispatch-fuzz run`).
    Raw,
    /// Stable across runs, processes and machines (for snapshots): digits in messages become
    /// `N` (tensor and device ids), locations become `crate/src/file.rs:line`, the panicking
    /// thread is left out, and float digests are left out (Flex's SIMD paths may round
    /// differently on other CPUs; int and bool digests are exact).
    Normalized,
}

fn location(panic: &PanicInfo, style: Style) -> String {
    let raw = panic.location.clone().unwrap_or_else(|| "?".into());
    match style {
        Style::Raw => raw,
        Style::Normalized => {
            let line = raw.split(':').nth(1).unwrap_or("?");
            format!("{}:{line}", burn_file(&raw).unwrap_or_else(|| "?".into()))
        }
    }
}

fn value(v: &ValueInfo, style: Style) -> String {
    let mut s = format!("{:?} {} {:?} on {}", v.kind, v.dtype, v.shape, v.device);
    let exact = v.kind != Kind::Float;
    if let Some(d) = v.digest.as_ref().filter(|_| style == Style::Raw || exact) {
        let _ = write!(s, " #{d}");
    }
    s
}

/// One outcome on one line.
pub fn describe(outcome: &Outcome, style: Style) -> String {
    let message = |m: &str| match style {
        Style::Raw => m.to_string(),
        Style::Normalized => normalize_message(m),
    };
    match outcome {
        Outcome::Ok {
            value: v,
            graph,
            outputs,
        } => {
            let mut s = "ok".to_string();
            if let Some(v) = v {
                let _ = write!(s, " {}", value(v, style));
            }
            if let Some(g) = graph {
                let _ = write!(
                    s,
                    " graph: {} ops, {} inputs, {} outputs, {} values",
                    g.operations, g.inputs, g.outputs, g.values
                );
            }
            for v in outputs {
                let _ = write!(s, " [{}]", value(v, style));
            }
            s
        }
        Outcome::Error { error, message: m } => format!("error {error}: {}", message(m)),
        Outcome::Panic(p) => format!(
            "PANIC [{}] {} at {}",
            p.class,
            message(&p.message),
            location(p, style)
        ),
        Outcome::Skipped { reason } => format!("skipped: {reason}"),
    }
}

/// The listing `dispatch-fuzz run` prints and snapshots store: each step's code and outcome,
/// then the verdict.
pub fn render(program: &Program, verdict: &Verdict, style: Style) -> String {
    let mut out = String::new();
    for record in &verdict.trace.steps {
        let line = program
            .steps
            .get(record.index)
            .map(step_line)
            .unwrap_or_default();
        let _ = writeln!(out, "{:>3}  {line}", record.index);
        let _ = writeln!(out, "     -> {}", describe(&record.outcome, style));
    }
    if let Some(panic) = &verdict.trace.teardown {
        let _ = writeln!(
            out,
            "teardown -> {}",
            describe(&Outcome::Panic(panic.clone()), style)
        );
    }
    if !verdict.trace.known_divergences.is_empty() {
        let _ = writeln!(
            out,
            "known divergences: {}",
            verdict.trace.known_divergences.join(", ")
        );
    }
    match &verdict.finding {
        Some(f) => {
            let _ = writeln!(out, "finding: {}", f.signature);
        }
        None => out.push_str("finding: none\n"),
    }
    out
}
