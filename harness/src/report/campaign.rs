//! The in-process session as a person reads it: the lines while it runs and the summary at
//! its end (text, or one JSON object).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use serde_json::json;

use crate::campaign::triage::{root_cause, root_causes, Triaged, Verdict};
use crate::campaign::{rss_kib, Options, Outcome, Stats};
use crate::guide::{tally, Tally};
use crate::oracles::{BoundTally, Signature, GRADIENT_BOUNDS};
use crate::program::Flaky;

/// A pair judged this often by an oracle counts as judged in the summary.
const ENOUGH: u64 = 10;

/// The line that opens a session.
pub fn started_line(options: &Options, backends: &str, jobs: usize, guided: bool) -> String {
    format!(
        "dispatch-fuzz: backends {backends}, seed {}, {} s, {}, {jobs} worker{}, findings -> {}",
        options.seed,
        options.seconds,
        if guided { "guided" } else { "blind" },
        if jobs == 1 { "" } else { "s" },
        options.out.display()
    )
}

/// The lines that say a new finding was saved (a flaky one with its collide hit rate).
pub fn saved_lines(signature: &Signature, path: &Path, flaky: Option<Flaky>) -> String {
    match flaky {
        None => format!("new finding: {signature}\n  saved to {}", path.display()),
        Some(flaky) => format!(
            "new flaky finding (collide, {} of {} runs): {signature}\n  saved to {}",
            flaky.hits,
            flaky.tries,
            path.display()
        ),
    }
}

/// The progress line: programs, rate, findings, corpus, RSS and the panic classes met.
pub fn progress_line(stats: &Stats, corpus: usize, jobs: usize, elapsed: Duration) -> String {
    let rate = stats.execs as f64 / elapsed.as_secs_f64().max(1e-9);
    let classes: Vec<String> = stats
        .classes
        .iter()
        .map(|(c, n)| format!("{c}={n}"))
        .collect();
    let rss = rss_kib().map_or(String::new(), |(rss, _)| format!(" rss {} MiB", rss / 1024));
    format!(
        "#{} {:.0} execs/s jobs {jobs} findings {} corpus {corpus}{rss} | {}",
        stats.execs,
        rate,
        stats.findings.len(),
        classes.join(" ")
    )
}

/// The line when triage starts minimizing a finding.
pub fn minimizing_line(signature: &Signature, steps: usize, budget: Duration) -> String {
    format!(
        "triage: minimizing {signature} ({steps} steps, at most {} s)",
        budget.as_secs()
    )
}

/// The line when triage settled a finding (none where it was not triaged).
pub fn settled_line(before: usize, verdict: &Verdict) -> Option<String> {
    match verdict {
        Verdict::New { after, seconds, .. } => Some(format!(
            "triage: {before} -> {after} steps in {seconds:.1} s, still new"
        )),
        Verdict::Unsettled { why } => Some(format!("triage: unsettled: {why}")),
        Verdict::NotTriaged => None,
    }
}

/// The session's summary as one JSON object (`fuzz --json`).
pub fn summary_json(outcome: &Outcome, options: &Options) -> serde_json::Value {
    let Outcome {
        stats,
        triaged,
        tally,
        seconds,
        jobs,
    } = outcome;
    let rate = stats.execs as f64 / seconds.max(1e-9);
    let rss = rss_kib();
    let views = views(tally, options.backends.wgpu);
    let findings: Vec<_> = triaged.iter().map(triaged_json).collect();
    json!({
        "execs": stats.execs,
        "seconds": seconds,
        "execs_per_second": rate,
        "classes": stats.classes,
        "first_hit_seconds": stats.first_hit,
        "findings": findings,
        "root_causes": root_causes(triaged).len(),
        "collide_runs": stats.collided,
        "flaky_findings": stats.flaky.iter()
            .map(|(s, f, p)| json!({"signature": s, "hits": f.hits, "tries": f.tries,
                "file": p.display().to_string()}))
            .collect::<Vec<_>>(),
        "known_findings": stats.known,
        "wgpu_compared": stats.compared,
        "replay_compared": stats.replay_compared,
        "wgpu_poisoned": stats.poisoned,
        "poisoned_share": stats.poisoned_shares(&stats.poisoned),
        "partly_poisoned": stats.partly_poisoned,
        "partly_poisoned_share": stats.poisoned_shares(&stats.partly_poisoned),
        "reference_judged": stats.reference_judged,
        "reference_gradients_judged": stats.reference_gradients,
        "reference_open": stats.reference_open,
        "reference_bounds_ulps": bound_rows(&stats.reference_bounds),
        "reference_judged_on_wgpu": stats.reference_on_wgpu,
        "reference_open_on_wgpu": stats.reference_open_on_wgpu,
        "rss_kib": rss.map(|r| r.0),
        "peak_rss_kib": rss.map(|r| r.1),
        "warm_rss_kib": stats.warm_rss,
        "op_steps": {"ok": stats.ops.ok, "panicked": stats.ops.panicked,
            "not_run": stats.ops.other},
        "graphs": stats.graphs,
        "graph_operations": stats.graph_operations,
        "guided": !options.blind,
        "jobs": jobs,
        "mutated": stats.mutated,
        "corpus": stats.corpus,
        "judged": views,
        "judgements": tally.rows().into_iter()
            .map(|(key, count)| json!({"key": key, "count": count}))
            .collect::<Vec<_>>(),
        "judged_per_dtype": tally.dtype_views(),
        "dtype_judgements": tally.dtype_rows().into_iter()
            .map(|(key, count)| json!({"key": key, "count": count}))
            .collect::<Vec<_>>(),
    })
}

/// The session's summary as text: counts, the reference's judging and bounds, what the
/// differential compared, what each oracle judged, the findings by root cause, collide.
pub fn summary_text(outcome: &Outcome, options: &Options) -> String {
    let mut out = String::new();
    let out = &mut out;
    write_counts(out, outcome);
    write_reference(out, &outcome.stats);
    write_compared(out, &outcome.stats);
    write_views(out, &views(&outcome.tally, options.backends.wgpu));
    write_dtype_views(out, &outcome.tally.dtype_views());
    write_findings(out, &outcome.triaged, &outcome.stats.known);
    write_collide(out, &outcome.stats);
    std::mem::take(out)
}

/// Programs, their steps and graphs, the panic classes met, memory.
fn write_counts(out: &mut String, outcome: &Outcome) {
    let (stats, seconds, jobs) = (&outcome.stats, outcome.seconds, outcome.jobs);
    let rate = stats.execs as f64 / seconds.max(1e-9);
    let rss = rss_kib();
    let _ = writeln!(
        out,
        "execs: {} in {seconds:.1} s ({rate:.0} execs/s)",
        stats.execs
    );
    let per_exec = |n: u64| n as f64 / (stats.execs.max(1) as f64);
    let ops = &stats.ops;
    let _ = writeln!(
        out,
        "per program: {:.1} op steps ({:.1} ran, {:.1} panicked, {:.1} not run), \
         {:.2} graphs completed recording {:.1} operations",
        per_exec(ops.ok + ops.panicked + ops.other),
        per_exec(ops.ok),
        per_exec(ops.panicked),
        per_exec(ops.other),
        per_exec(stats.graphs),
        per_exec(stats.graph_operations)
    );
    let _ = writeln!(
        out,
        "programs: {} mutated toward what the oracles judged least, {} random; corpus {}; \
         {jobs} worker{}",
        stats.mutated,
        stats.execs - stats.mutated,
        stats.corpus,
        if jobs == 1 { "" } else { "s" }
    );
    for (class, count) in &stats.classes {
        let _ = writeln!(
            out,
            "  {class:<34} {count:>8}  first after {:.2} s",
            stats.first_hit.get(class).copied().unwrap_or_default()
        );
    }
    if let Some((now, peak)) = rss {
        let warm = stats
            .warm_rss
            .map_or("n/a".to_string(), |w| format!("{} MiB", w / 1024));
        let _ = writeln!(
            out,
            "rss: {} MiB now, {} MiB peak, {warm} after warm-up (5 s)",
            now / 1024,
            peak / 1024
        );
    }
}

/// What the reference oracle judged, the bounds it held the F32 elements to, what it left open.
fn write_reference(out: &mut String, stats: &Stats) {
    let open: u64 = stats.reference_open.values().sum();
    if stats.reference_judged + open > 0 {
        let _ = writeln!(
            out,
            "reference: {} of {} values judged against their definitions ({:.1}%)",
            stats.reference_judged,
            stats.reference_judged + open,
            100.0 * stats.reference_judged as f64 / (stats.reference_judged + open) as f64
        );
        let _ = writeln!(
            out,
            "  gradients judged against finite differences: {}",
            stats.reference_gradients
        );
        let _ = writeln!(
            out,
            "  bounds of the judged F32 elements (zeros aside), in units in the last place:"
        );
        for row in bound_rows(&stats.reference_bounds) {
            let _ = writeln!(
                out,
                "    {:<40} {:>11} elements  median {:>8}  p99 {:>8}  within 4: {:>5.1}%",
                row.family,
                row.elements,
                ulps(row.median),
                ulps(row.p99),
                100.0 * row.within_4
            );
        }
        let mut reasons: Vec<_> = stats.reference_open.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in reasons {
            let _ = writeln!(out, "  open ({why}): {n}");
        }
    }
    let open: u64 = stats.reference_open_on_wgpu.values().sum();
    if stats.reference_on_wgpu + open > 0 {
        let _ = writeln!(
            out,
            "reference on wgpu: {} of {} values the wgpu mirror computed judged against their \
             definitions, over wgpu's own operands ({:.1}%)",
            stats.reference_on_wgpu,
            stats.reference_on_wgpu + open,
            100.0 * stats.reference_on_wgpu as f64 / (stats.reference_on_wgpu + open) as f64
        );
        let mut reasons: Vec<_> = stats.reference_open_on_wgpu.iter().collect();
        reasons.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
        for (why, n) in reasons {
            let _ = writeln!(out, "  open ({why}): {n}");
        }
    }
}

/// What the differential and eager-replay compared, and what they left uncompared, and why.
fn write_compared(out: &mut String, stats: &Stats) {
    if stats.compared > 0 || stats.replay_compared > 0 || !stats.poisoned.is_empty() {
        let _ = writeln!(
            out,
            "flex vs wgpu: {} values compared; eager-replay: {} replayed outputs compared",
            stats.compared, stats.replay_compared
        );
        let shares = stats.poisoned_shares(&stats.poisoned);
        for (why, n) in &stats.poisoned {
            let share = shares.get(why).copied().unwrap_or_default();
            let grain =
                crate::oracles::compare::Poison::named(why).map_or("", |p| p.grain().0.name());
            let _ = writeln!(
                out,
                "  not compared ({why}, {grain}): {n} ({:.2}% of the values met)",
                100.0 * share
            );
        }
        let shares = stats.poisoned_shares(&stats.partly_poisoned);
        for (why, n) in &stats.partly_poisoned {
            let share = shares.get(why).copied().unwrap_or_default();
            let _ = writeln!(
                out,
                "  compared but at the elements {why} reaches: {n} ({:.2}% of the values met)",
                100.0 * share
            );
        }
    }
}

/// The threaded programs run under collide and the flaky findings met there.
fn write_collide(out: &mut String, stats: &Stats) {
    let _ =
        writeln!(out,
        "collide: {} threaded programs run again with their threads at once; flaky findings: {}",
        stats.collided,
        stats.flaky.len()
    );
    for (signature, flaky, path) in &stats.flaky {
        let _ = writeln!(
            out,
            "  {signature}  ({} of {} collide runs)\n    {}",
            flaky.hits,
            flaky.tries,
            path.display()
        );
    }
}

/// A triaged finding's line in the JSON summary.
fn triaged_json(t: &Triaged) -> serde_json::Value {
    let mut row = json!({
        "signature": t.signature.to_string(),
        "file": t.path.display().to_string(),
    });
    let extra = match &t.verdict {
        Verdict::New {
            before,
            after,
            seconds,
            facts,
        } => json!({"triage": "new", "steps_before": before, "steps_after": after,
            "triage_seconds": seconds, "facts": facts, "root_cause": root_cause(t)}),
        Verdict::Unsettled { why } => json!({"triage": "unsettled", "why": why}),
        Verdict::NotTriaged => json!({"triage": "not-triaged"}),
    };
    if let (Some(row), serde_json::Value::Object(extra)) = (row.as_object_mut(), extra) {
        row.extend(extra);
    }
    row
}

/// The tally's views the summary reports: each oracle that judged anything (the differential
/// only with wgpu on).
fn views(tally: &Tally, wgpu: bool) -> Vec<tally::View> {
    tally::VIEWS
        .iter()
        .filter(|(oracle, _)| wgpu || *oracle != crate::oracles::OracleId::Differential)
        .map(|(oracle, contexts)| tally.view(*oracle, contexts, ENOUGH))
        .collect()
}

/// Per oracle: the share of (entry, kind) pairs judged at least [`ENOUGH`] times, the time to
/// a pair's first judgement, and the least judged pairs.
fn write_views(out: &mut String, views: &[tally::View]) {
    let _ = writeln!(out, "judged per (entry, kind) pair, per oracle:");
    for view in views {
        let seconds = |s: Option<f64>| s.map_or("-".to_string(), |s| format!("{s:.2} s"));
        let _ = writeln!(
            out,
            "  {:<22} {:>4} of {:>3} pairs judged >= {} times ({:.1}%), {} at least once; \
             first judgement median {}, max {}",
            view.name,
            view.judged_enough,
            view.pairs,
            view.enough,
            100.0 * view.judged_enough as f64 / view.pairs.max(1) as f64,
            view.judged_once,
            seconds(view.first_median_s),
            seconds(view.first_max_s),
        );
        let least: Vec<String> = view.least.iter().map(ToString::to_string).collect();
        let _ = writeln!(out, "    least judged: {}", least.join(", "));
        for (why, n) in &view.unjudgeable {
            let _ = writeln!(out, "    never judgeable ({n} pairs): {why}");
        }
    }
}

/// Per operand dtype: the entries some oracle judged over it, of those over its kind, and per
/// view.
fn write_dtype_views(out: &mut String, views: &[tally::DtypeView]) {
    if views.is_empty() {
        return;
    }
    let _ = writeln!(
        out,
        "judged per first operand's dtype (entries judged, of the entries over its kind):"
    );
    for v in views {
        let per_view: Vec<String> = v
            .per_view
            .iter()
            .map(|(name, n)| format!("{name} {n}"))
            .collect();
        let _ = writeln!(
            out,
            "  {:<13} {:<9} {:>3} of {:>3} entries, {:>9} judgements; {}",
            v.dtype,
            v.family,
            v.judged,
            v.entries,
            v.judgements,
            per_view.join(", ")
        );
    }
}

/// The summary's findings: new root causes first, then the stored cases met again, then the
/// findings triage could not settle.
fn write_findings(out: &mut String, triaged: &[Triaged], known: &BTreeMap<String, u64>) {
    let groups = root_causes(triaged);
    let new: usize = groups.iter().map(|(_, m)| m.len()).sum();
    let _ = writeln!(
        out,
        "findings: {} ({new} new in {} root cause{}, {} unsettled, {} not triaged)",
        triaged.len(),
        groups.len(),
        if groups.len() == 1 { "" } else { "s" },
        count(triaged, |v| matches!(v, Verdict::Unsettled { .. })),
        count(triaged, |v| matches!(v, Verdict::NotTriaged)),
    );
    if !groups.is_empty() {
        let _ = writeln!(
            out,
            "new root causes (class, origin, op entry, deviation, backend):"
        );
    }
    for (key, members) in &groups {
        let _ = writeln!(out, "  {key}");
        for t in members {
            if let Verdict::New { before, after, .. } = t.verdict {
                let _ = writeln!(
                    out,
                    "    {}  (minimized {before} -> {after} steps)\n      {}",
                    t.signature,
                    t.path.display()
                );
            }
        }
    }
    if !known.is_empty() {
        let _ = writeln!(out, "known root causes met (stored cases, not findings):");
        for (case, n) in known {
            let _ = writeln!(out, "  {case:<60} {n:>8}");
        }
    }
    for (title, pick) in [
        (
            "unsettled (not shown again alone; saved as met):",
            (|v| matches!(v, Verdict::Unsettled { .. })) as fn(&Verdict) -> bool,
        ),
        ("not triaged (saved as met):", |v| {
            matches!(v, Verdict::NotTriaged)
        }),
    ] {
        let rows: Vec<&Triaged> = triaged.iter().filter(|t| pick(&t.verdict)).collect();
        if rows.is_empty() {
            continue;
        }
        let _ = writeln!(out, "{title}");
        for t in rows {
            let why = match &t.verdict {
                Verdict::Unsettled { why } => format!(": {why}"),
                _ => String::new(),
            };
            let _ = writeln!(out, "  {}{why}\n    {}", t.signature, t.path.display());
        }
    }
}

fn count(triaged: &[Triaged], pick: impl Fn(&Verdict) -> bool) -> usize {
    triaged.iter().filter(|t| pick(&t.verdict)).count()
}

/// One bound family's line of the summary.
#[derive(serde::Serialize)]
struct BoundRow {
    family: String,
    elements: u64,
    median: f64,
    p99: f64,
    within_4: f64,
}

/// Each family's tally as a row, largest first, then every family's together but the
/// gradients' (`values`: what the definitions give directly) and every family's (`all`).
fn bound_rows(bounds: &BTreeMap<String, BoundTally>) -> Vec<BoundRow> {
    let mut all = BoundTally::default();
    let mut values = BoundTally::default();
    let mut rows: Vec<BoundRow> = Vec::new();
    let row = |family: &str, t: &BoundTally| BoundRow {
        family: family.to_string(),
        elements: t.total(),
        median: t.quantile(0.5),
        p99: t.quantile(0.99),
        within_4: t.share_within(4.0),
    };
    for (family, tally) in bounds {
        all.merge(tally);
        if family != GRADIENT_BOUNDS {
            values.merge(tally);
        }
        rows.push(row(family, tally));
    }
    rows.sort_by_key(|r| std::cmp::Reverse(r.elements));
    if !rows.is_empty() {
        rows.push(row("values (gradients aside)", &values));
        rows.push(row("all", &all));
    }
    rows
}

/// A bound in units for the summary: up to 2^k, or unbounded.
fn ulps(x: f64) -> String {
    match x {
        x if x.is_infinite() => "inf".into(),
        x if x >= 1e6 => format!("2^{}", x.log2().round()),
        x => format!("{x}"),
    }
}
