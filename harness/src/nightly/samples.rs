//! libFuzzer's progress as the night's logs give it: one sample per status line, and the
//! workers' samples combined into the job's.

use serde::Serialize;

/// One status line of libFuzzer: `#runs ... cov: N ft: N corp: N exec/s: N ...`, from a worker
/// of the nightly job (or the fork mode of earlier nights, which prints `time: Ns` itself).
#[derive(Serialize, Clone, Debug, Default, PartialEq)]
#[allow(missing_docs)] // libFuzzer's own status fields, named as it prints them.
pub struct Sample {
    pub time_s: f64,
    pub runs: u64,
    pub cov: u64,
    pub ft: u64,
    pub corpus: u64,
    pub execs_per_s: u64,
    pub crashes: u64,
}

/// The status lines of one worker's log. `ci/nightly.sh` stamps each line with the seconds since
/// the worker started (`<seconds>\t<line>`), since a plain libFuzzer process prints no time; a
/// worker restarted after a finding counts its runs from 0 again, so `runs` carries the earlier
/// processes' runs over and grows over the whole log.
pub fn parse_log(text: &str) -> Vec<Sample> {
    let mut samples = Vec::new();
    let (mut carried, mut last_runs) = (0, 0);
    for line in text.lines() {
        let (stamp, line) = match line
            .split_once('\t')
            .and_then(|(t, rest)| Some((t.parse::<f64>().ok()?, rest)))
        {
            Some((t, rest)) => (Some(t), rest),
            None => (None, line),
        };
        let Some(mut sample) = status_line(line) else {
            continue;
        };
        if sample.runs < last_runs {
            carried += last_runs;
        }
        last_runs = sample.runs;
        sample.runs += carried;
        if let Some(t) = stamp.filter(|_| sample.time_s == 0.0) {
            sample.time_s = t;
        }
        samples.push(sample);
    }
    samples
}

fn status_line(line: &str) -> Option<Sample> {
    let rest = line.strip_prefix('#')?;
    let mut words = rest.split_whitespace();
    let runs = words.next()?.trim_end_matches(':').parse().ok()?;
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
            "corp:" => sample.corpus = value.split('/').next().unwrap_or("0").parse().unwrap_or(0),
            "exec/s:" | "exec/s" => sample.execs_per_s = value.parse().unwrap_or(0),
            "time:" => sample.time_s = value.parse().unwrap_or(0.0),
            "oom/timeout/crash:" => {
                sample.crashes = value.rsplit('/').next().unwrap_or("0").parse().unwrap_or(0)
            }
            _ => {}
        }
    }
    (sample.cov > 0).then_some(sample)
}

/// One series for a target fuzzed by several workers on one shared corpus: at each time a worker
/// reported, runs and execs/s are the workers' sums (each worker at its last line by then),
/// edges, features and corpus the largest any worker had seen (each reloads the others' inputs,
/// so the largest is the nearest to their union that the logs show).
pub fn combine(workers: &[Vec<Sample>]) -> Vec<Sample> {
    let mut times: Vec<f64> = workers.iter().flatten().map(|s| s.time_s).collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    // Each worker's lines are in time order: one cursor per worker walks them once in all.
    let mut seen = vec![0; workers.len()];
    times
        .into_iter()
        .map(|t| {
            let mut total = Sample {
                time_s: t,
                ..Sample::default()
            };
            for (w, seen) in workers.iter().zip(&mut seen) {
                while w.get(*seen).is_some_and(|s| s.time_s <= t) {
                    *seen += 1;
                }
                let Some(last) = seen.checked_sub(1).map(|i| &w[i]) else {
                    continue;
                };
                total.runs += last.runs;
                total.execs_per_s += last.execs_per_s;
                total.crashes += last.crashes;
                total.cov = total.cov.max(last.cov);
                total.ft = total.ft.max(last.ft);
                total.corpus = total.corpus.max(last.corpus);
            }
            total
        })
        .collect()
}
