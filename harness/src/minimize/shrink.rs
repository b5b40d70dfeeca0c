//! The minimizer's driver: memoized predicate, pass loop to a fixed point, final re-runs.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use super::passes;
use crate::oracles::Signature;
use crate::program::Program;
use crate::Session;

/// Where a run stands, for progress displays.
#[derive(Clone, Debug)]
pub struct Progress {
    /// The pass running now.
    pub pass: &'static str,
    /// Steps in the smallest program so far.
    pub steps: usize,
    /// Predicate evaluations so far (cache hits excluded).
    pub attempts: usize,
    /// Time since the run started.
    pub elapsed: Duration,
}

/// The result of a run.
#[derive(Clone, Debug)]
pub struct Minimized {
    /// The smallest program that still satisfies the predicate.
    pub program: Program,
    /// Steps before.
    pub steps_before: usize,
    /// Steps after.
    pub steps_after: usize,
    /// Predicate evaluations (each one a real run on Burn).
    pub attempts: usize,
    /// Candidates answered from the memo instead.
    pub cache_hits: usize,
    /// Wall time.
    pub elapsed: Duration,
}

/// A callback the minimizer calls with each new smallest program.
type OnSmallest<'a> = Box<dyn FnMut(&Program) + 'a>;
/// A callback the minimizer calls with its progress.
type OnProgress<'a> = Box<dyn FnMut(&Progress) + 'a>;

/// A signature-preserving shrinker in the style of wasm-tools' `wasm-shrink`.
pub struct Minimizer<'a> {
    max_attempts: usize,
    /// No candidate runs once the search has taken this long.
    max_time: Option<Duration>,
    /// Candidates run at once; `None`: chosen by [`minimize_finding`] from the cost of a run.
    jobs: Option<usize>,
    /// The cost of a run from which candidates run at once.
    parallel_from: Duration,
    on_new_smallest: Option<OnSmallest<'a>>,
    on_progress: Option<OnProgress<'a>>,
}

impl Default for Minimizer<'_> {
    fn default() -> Self {
        Minimizer {
            max_attempts: 20_000,
            max_time: None,
            jobs: None,
            parallel_from: PARALLEL_FROM,
            on_new_smallest: None,
            on_progress: None,
        }
    }
}

/// The property a minimization keeps: a predicate one run at a time, or one that may run on
/// several threads at once.
enum Predicate<'p> {
    Serial(&'p mut dyn FnMut(&Program) -> Result<bool>),
    Parallel(&'p (dyn Fn(&Program) -> Result<bool> + Sync)),
}

impl Predicate<'_> {
    fn holds(&mut self, program: &Program) -> Result<bool> {
        match self {
            Predicate::Serial(f) => f(program),
            Predicate::Parallel(f) => f(program),
        }
    }
}

/// The memoized predicate and the smallest program so far, shared by the passes.
struct Search<'a, 'p, 'q> {
    predicate: Predicate<'q>,
    memo: HashMap<Program, bool>,
    best: Program,
    attempts: usize,
    cache_hits: usize,
    max_attempts: usize,
    max_time: Option<Duration>,
    /// How long the last run of the predicate took: a wave runs candidates at once only where
    /// a run costs [`PARALLEL_FROM`] or more ([`parallel_from`](Self::parallel_from)).
    last_cost: Duration,
    pass: &'static str,
    start: Instant,
    last_progress: Instant,
    minimizer: &'p mut Minimizer<'a>,
}

impl passes::Search for Search<'_, '_, '_> {
    fn best(&self) -> &Program {
        &self.best
    }

    /// Runs `candidate` if it is smaller than the best; returns whether it kept the property
    /// and so became the new best.
    fn try_candidate(&mut self, candidate: Program) -> Result<bool> {
        if !passes::smaller(&candidate, &self.best) || self.spent(0) {
            return Ok(false);
        }
        let keeps = match self.memo.get(&candidate) {
            Some(keeps) => {
                self.cache_hits += 1;
                *keeps
            }
            None => {
                self.attempts += 1;
                let start = Instant::now();
                let keeps = self.predicate.holds(&candidate)?;
                self.last_cost = start.elapsed();
                self.memo.insert(candidate.clone(), keeps);
                keeps
            }
        };
        if keeps {
            self.best = candidate;
            if let Some(f) = self.minimizer.on_new_smallest.as_mut() {
                f(&self.best);
            }
        }
        self.report(false);
        Ok(keeps)
    }

    fn enter(&mut self, pass: &'static str) {
        self.pass = pass;
        self.report(true);
    }

    /// Runs the candidates a wave at a time, as many at once as the minimizer has jobs, and
    /// takes the first (in the passes' order) that keeps the property: the same program the
    /// serial search takes, for a deterministic predicate, at the price of the wave's later
    /// candidates run for nothing.
    fn first_keeping(&mut self, candidates: Vec<Program>) -> Result<Option<usize>> {
        use rayon::prelude::*;
        let jobs = self.minimizer.jobs.unwrap_or(1);
        let Predicate::Parallel(predicate) = self.predicate else {
            return passes::one_at_a_time(self, candidates);
        };
        if jobs <= 1 || self.last_cost < self.minimizer.parallel_from {
            return passes::one_at_a_time(self, candidates);
        }
        let mut i = 0;
        while i < candidates.len() {
            // The wave: candidates `i..end`, of which those the memo cannot answer run.
            let mut known: Vec<Option<bool>> = Vec::new();
            let mut runs = Vec::new();
            let mut end = i;
            while end < candidates.len() && runs.len() < jobs {
                let candidate = &candidates[end];
                let answer = if !passes::smaller(candidate, &self.best) || self.spent(runs.len()) {
                    Some(false)
                } else if let Some(keeps) = self.memo.get(candidate) {
                    self.cache_hits += 1;
                    Some(*keeps)
                } else {
                    runs.push(end);
                    None
                };
                known.push(answer);
                end += 1;
            }
            let start = Instant::now();
            let results: Vec<bool> = runs
                .par_iter()
                .map(|&k| predicate(&candidates[k]))
                .collect::<Result<_>>()?;
            self.last_cost = start.elapsed();
            self.attempts += runs.len();
            for (&k, &keeps) in runs.iter().zip(&results) {
                self.memo.insert(candidates[k].clone(), keeps);
                known[k - i] = Some(keeps);
            }
            if let Some(offset) = known.iter().position(|k| *k == Some(true)) {
                let chosen = i + offset;
                self.best = candidates[chosen].clone();
                if let Some(f) = self.minimizer.on_new_smallest.as_mut() {
                    f(&self.best);
                }
                self.report(false);
                return Ok(Some(chosen));
            }
            self.report(false);
            i = end;
        }
        Ok(None)
    }
}

impl Search<'_, '_, '_> {
    /// Whether the budget is spent with `more` runs on top of those made: every later
    /// candidate is refused, so the passes end with the smallest program so far.
    fn spent(&self, more: usize) -> bool {
        self.attempts + more >= self.max_attempts
            || self.max_time.is_some_and(|t| self.start.elapsed() >= t)
    }

    fn report(&mut self, force: bool) {
        if !force && self.last_progress.elapsed() < Duration::from_millis(500) {
            return;
        }
        self.last_progress = Instant::now();
        let progress = Progress {
            pass: self.pass,
            steps: self.best.steps.len(),
            attempts: self.attempts,
            elapsed: self.start.elapsed(),
        };
        if let Some(f) = self.minimizer.on_progress.as_mut() {
            f(&progress);
        }
    }
}

impl<'a> Minimizer<'a> {
    /// A minimizer with the default budget (20,000 predicate runs).
    pub fn new() -> Self {
        Self::default()
    }

    /// At most this many predicate runs.
    pub fn attempts(mut self, max: usize) -> Self {
        self.max_attempts = max;
        self
    }

    /// No candidate runs after `limit` (the input's first run included): the result is the
    /// smallest program found by then.
    pub fn time_limit(mut self, limit: Duration) -> Self {
        self.max_time = Some(limit);
        self
    }

    /// Runs up to `jobs` candidates at once where the predicate allows it
    /// ([`run_parallel`](Self::run_parallel)) and a run costs [`PARALLEL_FROM`] or more.
    /// Default: one at a time, but [`minimize_finding`] takes every thread of the rayon pool it
    /// runs in for a CPU session.
    pub fn jobs(mut self, jobs: usize) -> Self {
        self.jobs = Some(jobs.max(1));
        self
    }

    /// Runs candidates at once (up to [`jobs`](Self::jobs)) where the last run took `cost` or
    /// more; [`PARALLEL_FROM`] by default, zero for every wave.
    pub fn parallel_from(mut self, cost: Duration) -> Self {
        self.parallel_from = cost;
        self
    }

    /// Called with each new smallest program.
    pub fn on_new_smallest(mut self, f: impl FnMut(&Program) + 'a) -> Self {
        self.on_new_smallest = Some(Box::new(f));
        self
    }

    /// Called at each pass and at most twice a second otherwise.
    pub fn on_progress(mut self, f: impl FnMut(&Progress) + 'a) -> Self {
        self.on_progress = Some(Box::new(f));
        self
    }

    /// Shrinks `program`, which must satisfy `predicate`, to a smaller one that still does.
    /// `failing_step` (the step that raised the finding, if known) lets the first passes cut
    /// everything after it and outside its dependencies.
    pub fn run(
        self,
        program: Program,
        failing_step: Option<usize>,
        mut predicate: impl FnMut(&Program) -> Result<bool>,
    ) -> Result<Minimized> {
        self.search(program, failing_step, Predicate::Serial(&mut predicate))
    }

    /// [`run`](Self::run) with a predicate that may run on several threads at once: each pass's
    /// independent candidates (ddmin's chunk removals, a step's simpler forms, each scope's
    /// brackets) run [`jobs`](Self::jobs) at a time on rayon's pool, and the first that keeps
    /// the property, in the serial order, wins.
    pub fn run_parallel(
        self,
        program: Program,
        failing_step: Option<usize>,
        predicate: impl Fn(&Program) -> Result<bool> + Sync,
    ) -> Result<Minimized> {
        self.search(program, failing_step, Predicate::Parallel(&predicate))
    }

    fn search(
        mut self,
        program: Program,
        failing_step: Option<usize>,
        mut predicate: Predicate<'_>,
    ) -> Result<Minimized> {
        let start = Instant::now();
        if !predicate.holds(&program)? {
            bail!("the input does not have the property to preserve");
        }
        let last_cost = start.elapsed();
        let steps_before = program.steps.len();
        let max_attempts = self.max_attempts;
        let max_time = self.max_time;
        let mut search = Search {
            predicate,
            memo: HashMap::new(),
            best: program,
            attempts: 1,
            cache_hits: 0,
            max_attempts,
            max_time,
            last_cost,
            pass: "start",
            start,
            last_progress: start,
            minimizer: &mut self,
        };
        passes::run_all(&mut search, failing_step)?;
        Ok(Minimized {
            steps_before,
            steps_after: search.best.steps.len(),
            attempts: search.attempts,
            cache_hits: search.cache_hits,
            elapsed: start.elapsed(),
            program: search.best,
        })
    }
}

/// What the final re-runs of a minimized program showed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reproduction {
    /// Every re-run raised the same signature.
    Reproducible,
    /// Some re-runs did not: the program is not a reproducer.
    Flaky {
        /// Runs that reproduced.
        reproduced: usize,
        /// Runs made.
        runs: usize,
    },
}

/// The cost of one run from which the minimizer runs candidates at once. A wave on two threads
/// wakes a sleeping one and runs the candidates after the winner for nothing: with every wave
/// parallel, `bench --minimize`'s programs (runs of 0.05 ms in release, ~0.6 ms in debug) took
/// 2.6x (release) and 1.2x (debug) as long two at a time as one at a time.
pub const PARALLEL_FROM: Duration = Duration::from_millis(20);

/// Re-runs of a minimized program before it counts as a reproducer.
pub const RERUNS: usize = 3;

/// Shrinks `program` keeping the signature of its first finding in `session`, then re-runs
/// the result `RERUNS` times. Returns the signature, the result and the re-runs' verdict.
pub fn minimize_finding<'a>(
    program: Program,
    session: &Session,
    minimizer: Minimizer<'a>,
) -> Result<(Signature, Minimized, Reproduction)> {
    let verdict = crate::check(session, &program)?;
    let Some(finding) = verdict.finding else {
        bail!(
            "the program has no finding to preserve (a catalogued class needs {}=<class>)",
            crate::config::CRASH_ON_VAR
        );
    };
    let signature = finding.signature;
    let same = |p: &Program| -> Result<bool> {
        let finding = crate::check(session, p)?.finding;
        Ok(finding.is_some_and(|f| f.signature == signature))
    };
    // wgpu's one device stream is shared by every thread: a launch one candidate failed would
    // fail another's reads, so a wgpu session runs them one at a time whatever was asked.
    let jobs = match minimizer.jobs {
        _ if session.backends.wgpu => 1,
        Some(jobs) => jobs,
        None => rayon::current_num_threads(),
    };
    let minimized = minimizer
        .jobs(jobs)
        .run_parallel(program, finding.step, same)?;
    let mut reproduced = 0;
    for _ in 0..RERUNS {
        if same(&minimized.program)? {
            reproduced += 1;
        }
    }
    let reproduction = if reproduced == RERUNS {
        Reproduction::Reproducible
    } else {
        Reproduction::Flaky {
            reproduced,
            runs: RERUNS,
        }
    };
    Ok((signature, minimized, reproduction))
}
