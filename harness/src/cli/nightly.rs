//! The Rust half of `ci/nightly.sh`: `triage` buckets a night's crash artifacts by signature
//! (promoting one minimized reproducer per new bucket) and counts panic classes over the corpus;
//! `nightly-report` turns the night's logs and triage into `report.md`, `report.json` and an SVG.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use dispatch_fuzz::files::ProgramFile;
use dispatch_fuzz::program::Program;
use dispatch_fuzz::regressions::program_files;

/// The message part of the signature of an artifact that gives no finding in-process.
const NOT_REPRODUCED: &str = "not reproduced in-process";

/// One crash, timeout or OOM artifact libFuzzer wrote.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Artifact {
    pub path: String,
    /// `crash`, `timeout`, `oom`, `leak` or `slow-unit`: libFuzzer's file prefix.
    pub kind: String,
    /// The finding's signature when the harness reproduces it in-process, else `<kind> |
    /// not reproduced in-process`.
    pub signature: String,
}

/// Artifacts that share a signature.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Bucket {
    pub signature: String,
    pub class: String,
    /// `new` (no stored case has this signature), `known` (a pending case from an earlier night
    /// has it), `covered` (a reviewed regression case has it) or `unreproduced` (the harness
    /// gets no finding from the artifact any more).
    pub status: String,
    pub count: usize,
    pub example: String,
    /// The case that covers it, or the pending case promoted from it tonight.
    pub case: Option<String>,
    /// Why promoting the new bucket failed (the artifact stays where it is).
    pub promote_error: Option<String>,
}

/// What `triage` found for one target.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Triage {
    pub target: String,
    pub artifacts: Vec<Artifact>,
    pub buckets: Vec<Bucket>,
    /// Panics per class over every corpus input (each input counts each class once).
    pub classes: BTreeMap<String, usize>,
    pub corpus_inputs: usize,
}

/// `dispatch-fuzz triage`'s arguments.
#[derive(clap::Args, Debug)]
pub struct TriageOptions {
    /// The fuzz target, for the report.
    #[arg(long)]
    pub target: String,
    /// Folder of crash-*, timeout-*, oom-* artifacts.
    #[arg(long)]
    pub artifacts: PathBuf,
    /// Corpus folders to count panic classes over (searched recursively).
    #[arg(long)]
    pub corpus: Vec<PathBuf>,
    /// The regression store (its pending/ holds unreviewed cases).
    #[arg(long, default_value = "regressions")]
    pub regressions: PathBuf,
    /// Where the triage JSON goes.
    #[arg(long)]
    pub out: PathBuf,
    /// Minimize each new bucket's first artifact into regressions/pending/.
    #[arg(long)]
    pub promote: bool,
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            files_under(&path, out);
        } else if path.is_file() {
            out.push(path);
        }
    }
}

/// `(signature, case path)` of every stored case directly in `dir`.
fn case_signatures(dir: &Path) -> Vec<(String, String)> {
    // A store without a pending/ folder yet simply has no pending cases.
    let files = program_files(dir).unwrap_or_default();
    files
        .into_iter()
        .filter_map(|(_, path)| {
            let signature = ProgramFile::load(&path).ok()?.signature?;
            Some((signature, path.display().to_string()))
        })
        .collect()
}

pub fn triage(options: TriageOptions) -> Result<ExitCode> {
    let mut triage = Triage {
        target: options.target.clone(),
        ..Triage::default()
    };
    let mut paths = Vec::new();
    files_under(&options.artifacts, &mut paths);
    paths.sort();
    for path in paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(kind) = ["crash", "timeout", "oom", "leak", "slow-unit"]
            .into_iter()
            .find(|k| name.starts_with(&format!("{k}-")))
        else {
            continue;
        };
        let bytes = std::fs::read(&path).with_context(|| format!("{}", path.display()))?;
        let program = Program::from_fuzz_bytes(&bytes);
        let verdict = dispatch_fuzz::check(&program)?;
        let signature = verdict.finding.map_or_else(
            || format!("{kind} | {NOT_REPRODUCED} | libfuzzer"),
            |f| f.signature,
        );
        triage.artifacts.push(Artifact {
            path: path.display().to_string(),
            kind: kind.to_string(),
            signature,
        });
    }
    let reviewed = case_signatures(&options.regressions);
    let pending_dir = options.regressions.join("pending");
    let pending = case_signatures(&pending_dir);
    let mut by_signature: BTreeMap<String, Vec<&Artifact>> = BTreeMap::new();
    for artifact in &triage.artifacts {
        by_signature
            .entry(artifact.signature.clone())
            .or_default()
            .push(artifact);
    }
    for (signature, artifacts) in by_signature {
        let class = signature
            .split(" | ")
            .next()
            .unwrap_or_default()
            .to_string();
        let find = |cases: &[(String, String)]| {
            cases
                .iter()
                .find(|(s, _)| *s == signature)
                .map(|c| c.1.clone())
        };
        // An artifact the harness no longer reproduces (a fixed harness bug, a flaky crash)
        // is listed, kept on disk, and neither promoted nor counted as new.
        let (status, case) = match (find(&reviewed), find(&pending)) {
            _ if signature.contains(NOT_REPRODUCED) => ("unreproduced", None),
            (Some(case), _) => ("covered", Some(case)),
            (None, Some(case)) => ("known", Some(case)),
            (None, None) => ("new", None),
        };
        triage.buckets.push(Bucket {
            signature,
            class,
            status: status.to_string(),
            count: artifacts.len(),
            example: artifacts[0].path.clone(),
            case,
            promote_error: None,
        });
    }
    if options.promote {
        for bucket in triage.buckets.iter_mut().filter(|b| b.status == "new") {
            promote_pending(bucket, &pending_dir);
        }
    }
    let mut inputs = Vec::new();
    for dir in &options.corpus {
        files_under(dir, &mut inputs);
    }
    for input in &inputs {
        let Ok(bytes) = std::fs::read(input) else {
            continue;
        };
        let verdict = dispatch_fuzz::check(&Program::from_fuzz_bytes(&bytes))?;
        let classes: std::collections::BTreeSet<_> = verdict
            .trace
            .panics()
            .map(|(_, p)| p.class.clone())
            .collect();
        for class in classes {
            *triage.classes.entry(class).or_default() += 1;
        }
        triage.corpus_inputs += 1;
    }
    let text = serde_json::to_string_pretty(&triage)?;
    std::fs::write(&options.out, text + "\n")
        .with_context(|| format!("cannot write {}", options.out.display()))?;
    let new = triage.buckets.iter().filter(|b| b.status == "new").count();
    println!(
        "{}: {} artifacts in {} buckets ({new} new), {} corpus inputs",
        triage.target,
        triage.artifacts.len(),
        triage.buckets.len(),
        triage.corpus_inputs
    );
    // 1 when tonight found something no stored case had: the job's "new finding" exit.
    Ok(if new > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// Minimizes a new bucket's example into `regressions/pending/` (a case awaiting review: the
/// regression suite runs only reviewed cases). A failure is recorded, never fatal: the artifact
/// stays on disk either way.
fn promote_pending(bucket: &mut Bucket, dir: &Path) {
    let hash = dispatch_fuzz::interpreter::fnv1a(&[bucket.signature.as_bytes()]);
    let name = format!("{}-{:08x}", bucket.class, hash as u32);
    let root_cause = format!(
        "Pending review: found by the nightly fuzz job with signature `{}`; root cause not yet \
         analysed. Rename the case after the bug, replace this paragraph with the root cause and \
         move it up to regressions/.",
        bucket.signature
    );
    let options = super::promote::Options {
        input: PathBuf::from(&bucket.example),
        name: Some(name.clone()),
        root_cause: Some(root_cause),
        dir: dir.to_path_buf(),
    };
    match super::promote::main(options) {
        Ok(_) => bucket.case = Some(dir.join(format!("{name}.json")).display().to_string()),
        Err(e) => bucket.promote_error = Some(format!("{e:#}")),
    }
}

/// One status line of libFuzzer's fork mode: `#runs: cov: N ft: N corp: N exec/s: N ...
/// time: Ns`.
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
pub struct Sample {
    pub time_s: f64,
    pub runs: u64,
    pub cov: u64,
    pub ft: u64,
    pub corpus: u64,
    pub execs_per_s: u64,
    pub crashes: u64,
}

/// The status lines of a fork-mode (or plain) libFuzzer log.
pub fn parse_log(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix('#') else {
            continue;
        };
        let mut words = rest.split_whitespace();
        let Some(runs) = words
            .next()
            .and_then(|w| w.trim_end_matches(':').parse().ok())
        else {
            continue;
        };
        let mut sample = Sample {
            runs,
            ..Sample::default()
        };
        let words: Vec<&str> = words.collect();
        for pair in words.windows(2) {
            let value = pair[1].trim_end_matches('s');
            match pair[0] {
                "cov:" => sample.cov = value.parse().unwrap_or(0),
                "ft:" => sample.ft = value.parse().unwrap_or(0),
                "corp:" => {
                    sample.corpus = value.split('/').next().unwrap_or("0").parse().unwrap_or(0)
                }
                "exec/s:" | "exec/s" => sample.execs_per_s = value.parse().unwrap_or(0),
                "time:" => sample.time_s = value.parse().unwrap_or(0.0),
                "oom/timeout/crash:" => {
                    sample.crashes = value.rsplit('/').next().unwrap_or("0").parse().unwrap_or(0)
                }
                _ => {}
            }
        }
        if sample.cov > 0 {
            samples.push(sample);
        }
    }
    samples
}

/// Line coverage of one source file, from `llvm-cov report`.
#[derive(Serialize, Clone, Debug)]
pub struct FileCoverage {
    pub file: String,
    pub lines: u64,
    pub missed: u64,
    pub percent: f64,
}

/// The rows of `llvm-cov report` whose file name ends with one of `wanted`.
pub fn parse_coverage_report(text: &str, wanted: &[&str]) -> Vec<FileCoverage> {
    let mut rows = Vec::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        let Some(file) = words.first() else { continue };
        if !wanted.iter().any(|w| file.ends_with(w)) || words.len() < 10 {
            continue;
        }
        // Filename, Regions, Missed, Cover, Functions, Missed, Executed, Lines, Missed, Cover.
        let (Ok(lines), Ok(missed)) = (words[7].parse::<u64>(), words[8].parse::<u64>()) else {
            continue;
        };
        let short = short_path(file);
        let percent = if lines == 0 {
            0.0
        } else {
            100.0 * (lines - missed) as f64 / lines as f64
        };
        rows.push(FileCoverage {
            file: short,
            lines,
            missed,
            percent,
        });
    }
    rows
}

/// `.../burn-capture-0.23.0-pre.1/src/capture.rs` as `burn-capture/src/capture.rs`.
fn short_path(file: &str) -> String {
    const VERSION: &str = "-0.23.0-pre.1/";
    match file.find(VERSION) {
        Some(i) => {
            let start = file[..i].rfind('/').map_or(0, |j| j + 1);
            format!("{}/{}", &file[start..i], &file[i + VERSION.len()..])
        }
        None => file.to_string(),
    }
}

/// The execution count `llvm-cov show` prints for `line` of the file whose section header ends
/// with `file` (`None` when the line is not code or the file is absent).
pub fn line_count(show: &str, file: &str, line: u32) -> Option<String> {
    let mut in_file = false;
    for text in show.lines() {
        if !text.starts_with(' ') && text.ends_with(':') {
            in_file = text.trim_end_matches(':').ends_with(file);
            continue;
        }
        if !in_file {
            continue;
        }
        let mut parts = text.splitn(3, '|');
        let (Some(number), Some(count)) = (parts.next(), parts.next()) else {
            continue;
        };
        if number.trim().parse::<u32>().ok() == Some(line) {
            let count = count.trim();
            return (!count.is_empty()).then(|| count.to_string());
        }
    }
    None
}

/// The seed guards whose hit counts the report shows: (file suffix, line, what it is).
const SEED_GUARDS: &[(&str, u32, &str)] = &[
    (
        "burn-dispatch-0.23.0-pre.1/src/macros.rs",
        240,
        "seed 000: `Cannot move a tensor from a capture device` (float to_device arm)",
    ),
    (
        "burn-dispatch-0.23.0-pre.1/src/macros.rs",
        349,
        "seed 000: the same guard in the int/bool to_device arm",
    ),
    (
        "burn-dispatch-0.23.0-pre.1/src/ops/tensor.rs",
        46,
        "seed 000: the macro's call site (float_to_device), where the panic reports",
    ),
    (
        "burn-capture-0.23.0-pre.1/src/capture.rs",
        442,
        "seed 001: `capture tensor operations must run inside CaptureDevice::capture_scope`",
    ),
];

const COVERED_FILES: &[&str] = &[
    "burn-dispatch-0.23.0-pre.1/src/macros.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/activation.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/bool_tensor.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/int_tensor.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/module.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/qtensor.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/tensor.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/transaction.rs",
    "burn-dispatch-0.23.0-pre.1/src/ops/transfer.rs",
    "burn-capture-0.23.0-pre.1/src/capture.rs",
];

#[derive(Serialize)]
struct TargetReport {
    target: String,
    samples: Vec<Sample>,
    final_cov: u64,
    final_ft: u64,
    runs: u64,
    execs_per_s: f64,
    triage: Option<Triage>,
    coverage: Vec<FileCoverage>,
    guards: Vec<(String, u32, String, Option<String>)>,
}

/// Reads the night's files under `dir` and writes `report.md`, `report.json`, `chart.svg`.
pub fn report(dir: &Path, targets: &[String]) -> Result<ExitCode> {
    let mut reports = Vec::new();
    for target in targets {
        let log = std::fs::read_to_string(dir.join(format!("logs/fuzz-{target}.log")))
            .unwrap_or_default();
        let samples = parse_log(&log);
        let last = samples.last().cloned().unwrap_or_default();
        let triage = std::fs::read_to_string(dir.join(format!("triage-{target}.json")))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let cov_report = std::fs::read_to_string(dir.join(format!("coverage/{target}-report.txt")))
            .unwrap_or_default();
        let show = std::fs::read_to_string(dir.join(format!("coverage/{target}-show.txt")))
            .unwrap_or_default();
        let guards = SEED_GUARDS
            .iter()
            .map(|(file, line, what)| {
                (
                    short_path(file),
                    *line,
                    what.to_string(),
                    line_count(&show, file, *line),
                )
            })
            .collect();
        reports.push(TargetReport {
            target: target.clone(),
            final_cov: last.cov,
            final_ft: last.ft,
            runs: last.runs,
            execs_per_s: if last.time_s > 0.0 {
                last.runs as f64 / last.time_s
            } else {
                last.execs_per_s as f64
            },
            samples,
            triage,
            coverage: parse_coverage_report(&cov_report, COVERED_FILES),
            guards,
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
    let json = serde_json::json!({ "targets": reports, "timings_s": timings });
    std::fs::write(
        dir.join("report.json"),
        serde_json::to_string_pretty(&json)? + "\n",
    )?;
    std::fs::write(dir.join("chart.svg"), chart(&reports))?;
    std::fs::write(dir.join("report.md"), markdown(&reports, &timings))?;
    println!("report: {}", dir.join("report.md").display());
    Ok(ExitCode::SUCCESS)
}

fn markdown(reports: &[TargetReport], timings: &[(String, f64)]) -> String {
    let mut md =
        String::from("# Nightly fuzz report\n\n![coverage and execs over time](chart.svg)\n\n");
    let _ = writeln!(
        md,
        "| target | runs | execs/s | edges (cov) | features (ft) | corpus inputs |"
    );
    let _ = writeln!(md, "| --- | ---: | ---: | ---: | ---: | ---: |");
    for r in reports {
        let corpus = r.triage.as_ref().map_or(0, |t| t.corpus_inputs);
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {} | {} | {corpus} |",
            r.target, r.runs, r.execs_per_s, r.final_cov, r.final_ft
        );
    }
    if !timings.is_empty() {
        md.push_str("\n## Wall time\n\n| phase | seconds |\n| --- | ---: |\n");
        for (phase, secs) in timings {
            let _ = writeln!(md, "| {phase} | {secs:.0} |");
        }
    }
    for r in reports {
        let _ = writeln!(md, "\n## {}\n", r.target);
        match &r.triage {
            Some(t) => {
                let _ = writeln!(md, "### Buckets ({} artifacts)\n", t.artifacts.len());
                if t.buckets.is_empty() {
                    md.push_str("No crash, timeout or OOM artifacts.\n");
                } else {
                    md.push_str("| status | count | signature | case / example |\n| --- | ---: | --- | --- |\n");
                    for b in &t.buckets {
                        let case = b.case.clone().unwrap_or_else(|| b.example.clone());
                        let error = b
                            .promote_error
                            .as_ref()
                            .map(|e| format!(" (not promoted: {})", e.lines().next().unwrap_or("")))
                            .unwrap_or_default();
                        let _ = writeln!(
                            md,
                            "| {} | {} | {} | {case}{error} |",
                            b.status,
                            b.count,
                            cell(&b.signature)
                        );
                    }
                }
                let _ = writeln!(
                    md,
                    "\n### Panic classes over the corpus ({} inputs; an input counts each class once)\n",
                    t.corpus_inputs
                );
                md.push_str("| class | inputs |\n| --- | ---: |\n");
                for (class, n) in &t.classes {
                    let _ = writeln!(md, "| {class} | {n} |");
                }
            }
            None => md.push_str("No triage ran (the job stopped before it).\n"),
        }
        md.push_str("\n### Line coverage reached by the corpus\n\n");
        if r.coverage.is_empty() {
            md.push_str("Not measured (run with coverage: `cargo fuzz coverage` and llvm-cov).\n");
        } else {
            md.push_str("| file | lines | missed | covered |\n| --- | ---: | ---: | ---: |\n");
            for c in &r.coverage {
                let _ = writeln!(
                    md,
                    "| {} | {} | {} | {:.1}% |",
                    c.file, c.lines, c.missed, c.percent
                );
            }
            md.push_str("\n| seed guard | line | hits |\n| --- | ---: | ---: |\n");
            for (file, line, what, hits) in &r.guards {
                let hits = hits.clone().unwrap_or_else(|| "not instrumented".into());
                let _ = writeln!(md, "| {what} ({file}) | {line} | {hits} |");
            }
        }
    }
    md
}

/// `text` safe inside a Markdown table cell (signatures contain ` | `).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Edges and execs/s over time, one polyline per target and measure, as a self-contained SVG.
fn chart(reports: &[TargetReport]) -> String {
    let (w, h, pad) = (720.0, 320.0, 48.0);
    let t_max = reports
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.time_s))
        .fold(1.0, f64::max);
    let cov_max = reports
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.cov as f64))
        .fold(1.0, f64::max);
    let eps_max = reports
        .iter()
        .flat_map(|r| r.samples.iter().map(|s| s.execs_per_s as f64))
        .fold(1.0, f64::max);
    let x = |t: f64| pad + (w - 2.0 * pad) * t / t_max;
    let y = |v: f64, max: f64| h - pad - (h - 2.0 * pad) * v / max;
    let mut svg = format!(
        "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{w}\" height=\"{h}\" font-family=\"sans-serif\" font-size=\"11\">\n\
         <rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n\
         <line x1=\"{pad}\" y1=\"{}\" x2=\"{}\" y2=\"{}\" stroke=\"black\"/>\n\
         <line x1=\"{pad}\" y1=\"{pad}\" x2=\"{pad}\" y2=\"{}\" stroke=\"black\"/>\n\
         <text x=\"{}\" y=\"{}\" text-anchor=\"middle\">time (s), 0 to {t_max:.0}</text>\n\
         <text x=\"4\" y=\"{}\">edges (blue, max {cov_max:.0}) and execs/s (orange, max {eps_max:.0})</text>\n",
        h - pad,
        w - pad,
        h - pad,
        h - pad,
        w / 2.0,
        h - 12.0,
        pad - 16.0
    );
    for r in reports {
        let line = |value: &dyn Fn(&Sample) -> f64, max: f64| {
            r.samples
                .iter()
                .map(|s| format!("{:.1},{:.1}", x(s.time_s), y(value(s), max)))
                .collect::<Vec<_>>()
                .join(" ")
        };
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"#1f77b4\" stroke-width=\"2\" points=\"{}\"><title>{} edges</title></polyline>",
            line(&|s| s.cov as f64, cov_max),
            r.target
        );
        let _ = writeln!(
            svg,
            "<polyline fill=\"none\" stroke=\"#ff7f0e\" stroke-width=\"1.5\" points=\"{}\"><title>{} execs/s</title></polyline>",
            line(&|s| s.execs_per_s as f64, eps_max),
            r.target
        );
    }
    svg.push_str("</svg>\n");
    svg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fork_mode_status_lines_parse() {
        let log = "INFO: -fork=2: fuzzing in separate process(s)\n\
                   #2048: cov: 14021 ft: 39466 corp: 1049 exec/s: 3123 oom/timeout/crash: 0/0/3 time: 12s job: 3 dft_time: 0\n\
                   #1234\tNEW    cov: 900 ft: 1000 corp: 20/3Kb exec/s: 50 rss: 100Mb\n";
        let samples = parse_log(log);
        assert_eq!(samples.len(), 2);
        assert_eq!(
            samples[0],
            Sample {
                time_s: 12.0,
                runs: 2048,
                cov: 14021,
                ft: 39466,
                corpus: 1049,
                execs_per_s: 3123,
                crashes: 3
            }
        );
        assert_eq!(samples[1].corpus, 20);
    }

    #[test]
    fn llvm_cov_tables_and_line_counts_parse() {
        let report = "Filename Regions Missed Cover Functions Missed Executed Lines Missed Cover\n\
            /r/burn-capture-0.23.0-pre.1/src/capture.rs 500 100 80.00% 50 5 90.00% 1000 250 75.00%\n\
            /r/other.rs 1 1 0% 1 1 0% 10 10 0%\n";
        let rows = parse_coverage_report(report, COVERED_FILES);
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].file, "burn-capture/src/capture.rs");
        assert_eq!((rows[0].lines, rows[0].missed), (1000, 250));
        let show = "/r/burn-capture-0.23.0-pre.1/src/capture.rs:\n  441|  1.2k|    fn init_client() {\n  442|  1.2k|        panic!(\"...\")\n";
        assert_eq!(
            line_count(show, "burn-capture-0.23.0-pre.1/src/capture.rs", 442).as_deref(),
            Some("1.2k")
        );
        assert_eq!(
            line_count(show, "burn-capture-0.23.0-pre.1/src/capture.rs", 7),
            None
        );
    }
}
