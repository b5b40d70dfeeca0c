//! The in-process session's steering: a [`Tally`] of what each oracle judged per (entry, operand
//! kind, oracle, context), a corpus of programs that gave a new judgement or a new outcome
//! class, and structured mutations of them toward the least-judged targets, chosen as
//! syzkaller's choice table favours uncovered calls, mixed with blind random programs so the
//! session's diversity does not collapse.
//!
//! Imports the program and the oracles' judgement types; runs nothing itself (the caller checks
//! each program and hands the verdict back).

pub mod mutate;
pub mod tally;

use std::collections::HashMap;

use crate::oracles::{Context, OracleId};
use crate::program::{entries, Backends, Program};
use crate::rng::SplitMix64;
use crate::Verdict;

pub use mutate::Target;
pub use tally::{Key, Tally, View};

/// Longest random input. Past about 2 KiB a decoded program hits `MAX_STEPS` anyway.
pub const MAX_INPUT_LEN: u64 = 4096;

/// Most programs the corpus keeps; past it a new one replaces a random one.
pub const MAX_CORPUS: usize = 4096;

/// Longest program the corpus takes: each mutation adds a few steps, so without a bound the
/// corpus grows toward `MAX_STEPS` and the session slows down.
pub const MAX_PARENT_STEPS: usize = 32;

/// How many targets a choice draws; the least judged of them wins (a tournament: rare targets
/// win most draws, and none is ever starved of one).
const TOURNAMENT: usize = 8;

/// Where a program came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Origin {
    /// Decoded from these random bytes, as the libFuzzer target decodes its inputs.
    Random(Vec<u8>),
    /// Corpus program `parent` mutated toward `target`.
    Mutated {
        /// The corpus index of the parent.
        parent: usize,
        /// The target.
        target: Target,
        /// The mutations applied.
        mutations: Vec<&'static str>,
    },
}

/// One session's generator: blind random programs, and with guidance on, mutated corpus
/// programs toward what the oracles have judged least. Reproducible from its seed: the same
/// seed and the same verdicts give the same programs.
pub struct Guide {
    backends: Backends,
    guided: bool,
    /// The random-bytes stream: a guided session's random programs are a blind one's, in order.
    blind: SplitMix64,
    /// The steering decisions' own stream.
    steer: SplitMix64,
    corpus: Vec<Program>,
    tally: Tally,
    /// Panic classes met so far, with counts.
    classes: HashMap<String, u64>,
    targets: Vec<Target>,
    /// Mutations aimed at each target: a target aimed at often and never judged ranks as if
    /// judged as often, so an unreachable one does not win every tournament.
    attempts: HashMap<Target, u64>,
}

impl Guide {
    /// A session's generator over `backends`, from `seed`; `guided` false gives the blind loop.
    pub fn new(seed: u64, backends: Backends, guided: bool) -> Guide {
        // Every (entry, kind, context) some oracle can judge: the model's contexts are counted,
        // never aimed at; wgpu only where the session has it.
        let contexts: &[Context] = if backends.wgpu {
            &[
                Context::Eager,
                Context::Replayed,
                Context::Gradient,
                Context::Wgpu,
            ]
        } else {
            &[Context::Eager, Context::Replayed, Context::Gradient]
        };
        let mut targets = Vec::new();
        for (entry, kinds) in entries() {
            for &kind in kinds {
                for &context in contexts {
                    let pair = (entry, kind);
                    if tally::why_unjudgeable(oracle_of(context), &[context], pair).is_none() {
                        targets.push(Target {
                            entry,
                            kind,
                            context,
                        });
                    }
                }
            }
        }
        Guide {
            backends,
            guided,
            blind: SplitMix64::new(seed),
            steer: SplitMix64::new(seed ^ 0x5eed_57ee_0000_0001),
            corpus: Vec::new(),
            tally: Tally::default(),
            classes: HashMap::new(),
            targets,
            attempts: HashMap::new(),
        }
    }

    /// A guided generator that aims only at the targets `keep` takes (a session focused on a
    /// few entries); `None` when it takes none.
    pub fn aimed(seed: u64, backends: Backends, keep: impl Fn(&Target) -> bool) -> Option<Guide> {
        let mut guide = Guide::new(seed, backends, true);
        guide.targets.retain(|t| keep(t));
        (!guide.targets.is_empty()).then_some(guide)
    }

    /// Whether guidance is on.
    pub fn guided(&self) -> bool {
        self.guided
    }

    /// The next program to check, and where it came from. With guidance on, one in three is
    /// random; the others mutate a corpus program toward a target.
    pub fn next_program(&mut self) -> (Program, Origin) {
        if !self.guided || self.corpus.is_empty() || self.steer.below(3) == 0 {
            let len = self.blind.below(MAX_INPUT_LEN + 1) as usize;
            let bytes = self.blind.bytes(len);
            let program = Program::from_fuzz_bytes(&bytes, self.backends);
            return (program, Origin::Random(bytes));
        }
        let target = self.choose();
        *self.attempts.entry(target).or_default() += 1;
        let parent = self.steer.below(self.corpus.len() as u64) as usize;
        let (program, mutations) = mutate::toward(&self.corpus[parent], target, &mut self.steer);
        (
            program,
            Origin::Mutated {
                parent,
                target,
                mutations,
            },
        )
    }

    /// The least-judged of [`TOURNAMENT`] targets drawn at random.
    fn choose(&mut self) -> Target {
        let mut best: Option<(u64, Target)> = None;
        for _ in 0..TOURNAMENT {
            let t = self.targets[self.steer.below(self.targets.len() as u64) as usize];
            let score = self.score(t);
            if best.is_none_or(|(s, _)| score < s) {
                best = Some((score, t));
            }
        }
        best.map(|(_, t)| t)
            .expect("a tournament draws at least one target")
    }

    fn score(&self, t: Target) -> u64 {
        let judged = self.tally.count(&Key {
            entry: t.entry,
            kind: t.kind,
            oracle: oracle_of(t.context),
            context: t.context,
        });
        judged + self.attempts.get(&t).copied().unwrap_or_default()
    }

    /// Takes in the verdict on `program`, `now` seconds into the session: counts its
    /// judgements and keeps the program when it gave a new judgement key or a new panic class
    /// (and is at most [`MAX_PARENT_STEPS`] long).
    /// Returns the keys judged for the first time.
    pub fn observe(&mut self, program: &Program, verdict: &Verdict, now: f64) -> Vec<Key> {
        let new = self.tally.add(program, verdict, now);
        let mut fresh = !new.is_empty();
        for (_, panic) in verdict.trace.panics() {
            let count = self.classes.entry(panic.class.clone()).or_default();
            fresh |= *count == 0;
            *count += 1;
        }
        let size = program.steps.len();
        if self.guided && fresh && (1..=MAX_PARENT_STEPS).contains(&size) {
            if self.corpus.len() < MAX_CORPUS {
                self.corpus.push(program.clone());
            } else {
                let at = self.steer.below(MAX_CORPUS as u64) as usize;
                self.corpus[at] = program.clone();
            }
        }
        new
    }

    /// What the oracles judged so far.
    pub fn tally(&self) -> &Tally {
        &self.tally
    }

    /// The corpus's size.
    pub fn corpus_len(&self) -> usize {
        self.corpus.len()
    }
}

/// The oracle that judges values in `context` (the model's are counted, never aimed at).
pub fn oracle_of(context: Context) -> OracleId {
    match context {
        Context::Replayed => OracleId::EagerReplay,
        Context::Wgpu => OracleId::Differential,
        Context::Eager | Context::Gradient => OracleId::Reference,
        Context::Recorded => OracleId::Model,
    }
}
