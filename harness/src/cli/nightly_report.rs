//! `dispatch-fuzz nightly-report`: turns the night's logs and triage into `report.md`,
//! `report.json` and an SVG chart.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use dispatch_fuzz::nightly::{
    line_count, parse_coverage_report, parse_log, short_path, FileCoverage, Sample, Triage,
    COVERED_FILES, SEED_GUARDS,
};

/// Write report.md, report.json and chart.svg from a nightly output folder.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The nightly output folder (logs/, triage-*.json, coverage/, timings.tsv).
    #[arg(long)]
    dir: PathBuf,
    /// Fuzz targets to report on.
    #[arg(long, default_value = "dispatch_ops")]
    targets: Vec<String>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        report(&self.dir, &self.targets)
    }
}

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
fn report(dir: &Path, targets: &[String]) -> Result<ExitCode> {
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
