//! What the oracles judged, value by value: the step whose value (or outcome) an oracle actually
//! compared or predicted, which oracle, and in which context, for a session to count per entry.

use super::OracleId;

/// Where a judged value was computed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Context {
    /// Run eagerly on Flex (the reference oracle judges a recorded op's eager value here too).
    Eager,
    /// Recorded in a capture scope (the model's prediction of a step inside a scope).
    Recorded,
    /// Recorded in a scope, replayed, and compared with its eager value.
    Replayed,
    /// Computed on wgpu and compared with Flex.
    Wgpu,
    /// A gradient through the op's backward (the op that made the loss).
    Gradient,
}

impl Context {
    /// Every context.
    pub const ALL: [Context; 5] = [
        Context::Eager,
        Context::Recorded,
        Context::Replayed,
        Context::Wgpu,
        Context::Gradient,
    ];

    /// Its name in summaries.
    pub fn name(self) -> &'static str {
        match self {
            Context::Eager => "eager",
            Context::Recorded => "recorded",
            Context::Replayed => "replayed",
            Context::Wgpu => "wgpu",
            Context::Gradient => "gradient",
        }
    }
}

/// One judged value: the op step it belongs to, the oracle and the context.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Judgement {
    /// The op step whose value (or outcome) was judged.
    pub step: usize,
    /// Which oracle judged it.
    pub oracle: OracleId,
    /// Where the value was computed.
    pub context: Context,
}
