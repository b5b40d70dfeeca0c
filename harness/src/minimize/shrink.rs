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
    on_new_smallest: Option<OnSmallest<'a>>,
    on_progress: Option<OnProgress<'a>>,
}

impl Default for Minimizer<'_> {
    fn default() -> Self {
        Minimizer {
            max_attempts: 20_000,
            on_new_smallest: None,
            on_progress: None,
        }
    }
}

/// The memoized predicate and the smallest program so far, shared by the passes.
struct Search<'a, 'p> {
    predicate: &'p mut dyn FnMut(&Program) -> Result<bool>,
    memo: HashMap<Program, bool>,
    best: Program,
    attempts: usize,
    cache_hits: usize,
    max_attempts: usize,
    pass: &'static str,
    start: Instant,
    last_progress: Instant,
    minimizer: &'p mut Minimizer<'a>,
}

impl passes::Search for Search<'_, '_> {
    fn best(&self) -> &Program {
        &self.best
    }

    /// Runs `candidate` if it is smaller than the best; returns whether it kept the property
    /// and so became the new best.
    fn try_candidate(&mut self, candidate: Program) -> Result<bool> {
        if !passes::smaller(&candidate, &self.best) || self.attempts >= self.max_attempts {
            return Ok(false);
        }
        let keeps = match self.memo.get(&candidate) {
            Some(keeps) => {
                self.cache_hits += 1;
                *keeps
            }
            None => {
                self.attempts += 1;
                let keeps = (self.predicate)(&candidate)?;
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
}

impl Search<'_, '_> {
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
        mut self,
        program: Program,
        failing_step: Option<usize>,
        mut predicate: impl FnMut(&Program) -> Result<bool>,
    ) -> Result<Minimized> {
        let start = Instant::now();
        if !predicate(&program)? {
            bail!("the input does not have the property to preserve");
        }
        let steps_before = program.steps.len();
        let max_attempts = self.max_attempts;
        let mut search = Search {
            predicate: &mut predicate,
            memo: HashMap::new(),
            best: program,
            attempts: 1,
            cache_hits: 0,
            max_attempts,
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

/// Re-runs of a minimized program before it counts as a reproducer.
pub const RERUNS: usize = 3;

/// Shrinks `program` keeping the signature of its first finding in `session`, then re-runs
/// the result [`RERUNS`] times. Returns the signature, the result and the re-runs' verdict.
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
    let minimized = minimizer.run(program, finding.step, |p| same(p))?;
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
