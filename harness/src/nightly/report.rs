//! The nightly job's report as a person reads it: `report.md` (charted in Mermaid and
//! sparklines, which a GitHub job summary displays) and `chart.svg`.

use std::fmt::Write as _;

use super::coverage::FileCoverage;
use super::results::TargetReport;
use super::{Sample, Triage};

/// `report.md`: per target, its progress, triage, coverage and guards; then the timings.
pub fn markdown(reports: &[TargetReport], timings: &[(String, f64)]) -> String {
    // `$GITHUB_STEP_SUMMARY` shows no image from the run's files: the chart is a Mermaid block
    // (GitHub renders it) and a sparkline per target (shown anywhere); chart.svg is an artifact.
    let mut md = String::from("# Nightly fuzz report\n\n");
    md.push_str(&mermaid(reports));
    md.push_str(&sparklines(reports));
    let _ = writeln!(
        md,
        "| target | runs | execs/s | workers | execs/s per worker | edges (cov) | features (ft) \
         | corpus inputs |"
    );
    let _ = writeln!(
        md,
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
    );
    for r in reports {
        let corpus = r.triage.as_ref().map_or(0, |t| t.corpus_inputs);
        let _ = writeln!(
            md,
            "| {} | {} | {:.0} | {} | {:.0} | {} | {} | {corpus} |",
            r.target,
            r.runs,
            r.execs_per_s,
            r.workers,
            r.execs_per_s_per_worker,
            r.final_cov,
            r.final_ft
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
            Some(t) => write_triage(&mut md, &r.target, t),
            None => md.push_str("No triage ran (the job stopped before it).\n"),
        }
        write_coverage(&mut md, r);
    }
    md
}

/// A target's triage: its buckets of artifacts, the panic classes over its corpus, and what the
/// oracles judged there.
fn write_triage(md: &mut String, target: &str, t: &Triage) {
    let _ = writeln!(md, "### Buckets ({} artifacts)\n", t.artifacts.len());
    if t.buckets.is_empty() {
        md.push_str("No crash, timeout or OOM artifacts.\n");
    } else {
        // How to replay an artifact as its own target ran it.
        let env = crate::libfuzzer::target(target)
            .map(|t| t.repro_env())
            .unwrap_or_default();
        let _ = writeln!(
            md,
            "Replay an example as this target runs it: `{env}cargo run -p dispatch-fuzz -- \
             fmt <example>` (then `fmt --json` and `run --progress` on the program file; \
             a timeout or out-of-memory example hangs or grows in-process).\n"
        );
        md.push_str(
            "| status | count | signature | case / example |\n| --- | ---: | --- | --- |\n",
        );
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
    if !t.judged.is_empty() {
        let _ = writeln!(
            md,
            "\n### What the oracles judged over the corpus, per (entry, kind) pair\n"
        );
        md.push_str(
            "| oracle | pairs | judged >= 10 times | at least once | least judged |\n\
             | --- | ---: | ---: | ---: | --- |\n",
        );
        for v in &t.judged {
            let _ = writeln!(
                md,
                "| {} | {} | {} | {} | {} |",
                v.name,
                v.pairs,
                v.judged_enough,
                v.judged_once,
                cell(&v.least.join(", "))
            );
        }
    }
}

/// A target's coverage: per area, per file, and each catalogued guard's hits.
fn write_coverage(md: &mut String, r: &TargetReport) {
    md.push_str("\n### Coverage reached by the corpus\n\n");
    if r.coverage.is_empty() {
        md.push_str(
            "Not measured (run with coverage: `cargo fuzz coverage` and `llvm-cov export`).\n",
        );
    } else {
        md.push_str(
            "| area | lines | lines run | functions | functions run |\n| --- | ---: | ---: | ---: | ---: |\n",
        );
        for c in &r.areas {
            let _ = writeln!(md, "{}", coverage_row(c));
        }
        md.push_str(
            "\n<details><summary>Per file</summary>\n\n| file | lines | lines run | functions | functions run |\n| --- | ---: | ---: | ---: | ---: |\n",
        );
        for c in &r.coverage {
            let _ = writeln!(md, "{}", coverage_row(c));
        }
        md.push_str("\n</details>\n");
        md.push_str("\n| catalogued guard | location | hits |\n| --- | --- | ---: |\n");
        for g in &r.guards {
            let (location, hits) = match (g.line, g.hits) {
                (Some(line), Some(hits)) => (format!("{}:{line}", g.file), hits.to_string()),
                (Some(line), None) => (format!("{}:{line}", g.file), "not code".into()),
                (None, _) => (g.file.clone(), "message not found in the source".into()),
            };
            let _ = writeln!(md, "| {} | {location} | {hits} |", g.class);
        }
    }
}

/// One coverage table row: lines and functions, each with its percentage run.
fn coverage_row(c: &FileCoverage) -> String {
    format!(
        "| {} | {} | {} ({:.1}%) | {} | {} ({:.1}%) |",
        c.file,
        c.lines,
        c.lines_covered,
        c.line_percent(),
        c.functions,
        c.functions_covered,
        c.function_percent()
    )
}

/// How many points the Markdown charts sample each run at.
const CHART_POINTS: usize = 24;

/// The sample times the Markdown charts share: `CHART_POINTS` evenly spaced up to the last.
fn chart_times(reports: &[TargetReport]) -> Vec<f64> {
    let end = reports
        .iter()
        .filter_map(|r| r.samples.last().map(|s| s.time_s))
        .fold(0.0, f64::max);
    (1..=CHART_POINTS)
        .map(|i| end * i as f64 / CHART_POINTS as f64)
        .collect()
}

/// `value` of the last sample at or before each of `times` (0 before the first).
fn resample(samples: &[Sample], times: &[f64], value: impl Fn(&Sample) -> f64) -> Vec<f64> {
    times
        .iter()
        .map(|t| {
            samples
                .iter()
                .take_while(|s| s.time_s <= *t)
                .last()
                .map_or(0.0, &value)
        })
        .collect()
}

/// Edges over time, one line per target, as a Mermaid `xychart-beta` block.
fn mermaid(reports: &[TargetReport]) -> String {
    let times = chart_times(reports);
    if times.last().is_none_or(|t| *t <= 0.0) {
        return "No status lines in the logs: nothing to chart.\n\n".into();
    }
    let axis: Vec<String> = times.iter().map(|t| format!("{t:.0}")).collect();
    let mut out = format!(
        "```mermaid\nxychart-beta\n    title \"Edges (cov) over time, one line per target: {}\"\n    \
         x-axis \"seconds\" [{}]\n    y-axis \"edges\"\n",
        reports
            .iter()
            .map(|r| r.target.as_str())
            .collect::<Vec<_>>()
            .join(", "),
        axis.join(", ")
    );
    for r in reports {
        let values = resample(&r.samples, &times, |s| s.cov as f64);
        let values: Vec<String> = values.iter().map(|v| format!("{v:.0}")).collect();
        let _ = writeln!(out, "    line [{}]", values.join(", "));
    }
    out.push_str("```\n\n");
    out
}

/// One row per target: edges and execs/s over the run as Unicode sparklines.
fn sparklines(reports: &[TargetReport]) -> String {
    let times = chart_times(reports);
    let mut out = String::from(
        "| target | edges over the run | execs/s over the run |\n| --- | --- | --- |\n",
    );
    for r in reports {
        let cov = resample(&r.samples, &times, |s| s.cov as f64);
        let eps = resample(&r.samples, &times, |s| s.execs_per_s as f64);
        let _ = writeln!(
            out,
            "| {} | `{}` {} | `{}` {} |",
            r.target,
            sparkline(&cov),
            cov.last().map_or(0.0, |v| *v),
            sparkline(&eps),
            eps.last().map_or(0.0, |v| *v)
        );
    }
    out.push('\n');
    out
}

/// `values` as block characters scaled from 0 to their maximum.
fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let max = values.iter().copied().fold(0.0, f64::max);
    values
        .iter()
        .map(|v| {
            if max <= 0.0 {
                BARS[0]
            } else {
                BARS[((v / max) * 7.0).round().clamp(0.0, 7.0) as usize]
            }
        })
        .collect()
}

/// `text` safe inside a Markdown table cell (signatures contain ` | `).
fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

/// Edges and execs/s over time, one polyline per target and measure, as a self-contained SVG.
/// `chart.svg`: every target's coverage and rate over the night.
pub fn chart(reports: &[TargetReport]) -> String {
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

    fn sample(time_s: f64, cov: u64, execs_per_s: u64) -> Sample {
        Sample {
            time_s,
            runs: 0,
            cov,
            ft: 0,
            corpus: 0,
            execs_per_s,
            crashes: 0,
        }
    }

    fn report(samples: Vec<Sample>) -> TargetReport {
        TargetReport {
            target: "dispatch_ops".into(),
            samples,
            final_cov: 0,
            final_ft: 0,
            runs: 0,
            execs_per_s: 0.0,
            workers: 1,
            execs_per_s_per_worker: 0.0,
            triage: None,
            areas: Vec::new(),
            coverage: Vec::new(),
            guards: Vec::new(),
        }
    }

    #[test]
    fn sparklines_scale_from_zero_to_the_maximum() {
        assert_eq!(sparkline(&[0.0, 50.0, 100.0]), "▁▅█");
        assert_eq!(sparkline(&[0.0, 0.0]), "▁▁");
    }

    #[test]
    fn the_summary_chart_is_a_mermaid_block_holding_the_last_value_at_each_point() {
        let r = report(vec![sample(10.0, 100, 900), sample(240.0, 400, 1000)]);
        let md = mermaid(std::slice::from_ref(&r));
        assert!(md.starts_with("```mermaid\nxychart-beta\n"), "{md}");
        let line = md
            .lines()
            .find(|l| l.trim_start().starts_with("line ["))
            .unwrap();
        let values: Vec<&str> = line.trim()[6..line.trim().len() - 1].split(", ").collect();
        assert_eq!(values.len(), CHART_POINTS);
        assert_eq!(values[0], "100");
        assert_eq!(values[CHART_POINTS - 1], "400");
        assert!(
            !markdown(&[r], &[]).contains("!["),
            "no image: job summaries cannot show one"
        );
    }
}
