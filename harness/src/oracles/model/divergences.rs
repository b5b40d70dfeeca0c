//! Known divergences: where Burn departs from a rule of the model, kept as data
//! (`harness/known-divergences.json`) so fuzzing goes on past them.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// A gap between the model's contract and Burn 0.23.0-pre.1, recorded so fuzzing continues.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KnownDivergence {
    /// Stable name.
    pub id: String,
    /// The model rule Burn departs from.
    pub rule: String,
    /// What the model predicts there, as `Observed` prints it: an inverted or changed rule no
    /// longer matches.
    pub expected: String,
    /// What Burn does instead, as `Observed` prints it (`ok`, `panic <class>`, `error <E>`).
    pub actual: String,
    /// The ops it covers (`Op::name`, e.g. `mask_where`); empty: any step.
    #[serde(default)]
    pub ops: Vec<String>,
    /// The operand kinds it covers; empty: any.
    #[serde(default)]
    pub kinds: Vec<crate::program::Kind>,
    /// The positions of the operands that are stale capture tensors (from a completed scope),
    /// exactly; absent: not a condition.
    #[serde(default)]
    pub stale_operands: Option<Vec<usize>>,
    /// Whether it covers exactly the steps whose stale operands all come after a first operand
    /// that is not stale (an n-ary op's list, where the count and places vary).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stale_after_first: bool,
    /// Whether it covers exactly the steps that read capture tensors of two sessions (scopes)
    /// of one capture device.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub mixed_sessions: bool,
    /// What the model does after it: follow Burn's real outcome, or stop following the value
    /// the step produced.
    #[serde(default)]
    pub consequence: Consequence,
    /// Why it is a divergence and what a fix in Burn would look like.
    pub reason: String,
    /// A program (path from the repository root) that shows it; a test replays it so the entry
    /// goes stale, and fails, the day Burn fixes the gap.
    pub reproducer: String,
}

/// How the model goes on past a known divergence. Either way the rest of the program, the
/// scope's exit included, is still judged; only what the entry says is left out.
#[derive(Clone, Copy, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Consequence {
    /// The model takes Burn's outcome as it is and follows it like any other (an op accepted
    /// with a foreign capture operand records into the session it was routed to, and that
    /// session's exit is predicted from what it recorded).
    #[default]
    Follow,
    /// The step produced a value the contract has no state for (an autodiff capture tensor):
    /// steps reading it, and scope exits naming it, are not judged.
    UnknownOutput,
}

/// The known divergences, from `harness/known-divergences.json` (embedded at build time).
pub fn known_divergences() -> &'static [KnownDivergence] {
    static KNOWN: OnceLock<Vec<KnownDivergence>> = OnceLock::new();
    KNOWN.get_or_init(|| {
        // Embedded and parsed by a test, so a malformed file fails `cargo test`, not a fuzz run.
        serde_json::from_str(include_str!("../../../known-divergences.json"))
            .unwrap_or_else(|e| panic!("harness/known-divergences.json does not parse: {e}"))
    })
}
