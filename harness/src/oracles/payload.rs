//! What an oracle knows about its finding beyond the signature, as values: the element and both
//! values of a reference mismatch, the backend a replay ran on, the outcomes a contract names.
//! Reports and reproducers read these; none parses a summary or a message back.

use serde::{Deserialize, Serialize};

use super::deviation::Backend;

/// One variant per oracle that has more to say than its signature; `None` for the rest (a
/// panic, an execution error, a state leak, a dtype contract, a transaction).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Payload {
    /// Nothing beyond the signature and the message.
    #[default]
    None,
    /// The reference oracle: the element where Burn's value differs from the definition's.
    Reference {
        /// The element and both values.
        mismatch: Mismatch,
        /// How the definition's value was had: a gradient's by central finite differences,
        /// any other value's by the op's definition in f64.
        by: Derivation,
        /// The backend whose value it is (a wgpu mirror's value, or Flex's).
        backend: Backend,
    },
    /// The differential: one backend failed (panicked, or failed to read) where the other
    /// computed.
    Failed {
        /// The failure's message, as the backend raised it.
        message: String,
    },
    /// Eager replay: a captured graph replayed on `backend` gave other values than the eager
    /// run, failed, or handed an output back in another dtype than the graph records.
    Replay {
        /// The backend the graph was replayed on (wgpu where any differing output was
        /// wgpu's replay).
        backend: Backend,
        /// Whether it is the recorded dtype that was lost, not a value.
        dtype_lost: bool,
    },
    /// The model: the outcome the capture/dispatch contract expects and the one Burn gave, as
    /// the model names outcomes (`ok`, `panic <class>`, `error <Variant>`).
    Outcome {
        /// The contract's outcome.
        expected: String,
        /// Burn's.
        actual: String,
    },
}

impl Payload {
    /// Whether it says nothing beyond the signature.
    pub fn is_none(&self) -> bool {
        *self == Payload::None
    }

    /// The reference's mismatch, for a reference finding.
    pub fn mismatch(&self) -> Option<&Mismatch> {
        match self {
            Payload::Reference { mismatch, .. } => Some(mismatch),
            _ => None,
        }
    }

    /// Whether it is a replay that lost a recorded dtype.
    pub fn lost_dtype(&self) -> bool {
        matches!(
            self,
            Payload::Replay {
                dtype_lost: true,
                ..
            }
        )
    }

    /// The backend whose value or replay the finding is about, where the oracle knows it.
    pub fn backend(&self) -> Option<Backend> {
        match self {
            Payload::Reference { backend, .. } | Payload::Replay { backend, .. } => Some(*backend),
            _ => None,
        }
    }
}

/// How the reference had its value.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Derivation {
    /// The op's definition, computed in f64 and rounded to the value's dtype.
    Definition,
    /// A gradient: central finite differences in f64 over the ops' definitions.
    FiniteDifference,
}

/// One value that differs from its definition: the slot, the element (row-major), the
/// definition's value and Burn's, as the reference prints them (`{:?}` of an f64, an int's
/// digits, a bool). Its text is the violation's message, and the reproducer asserts it back.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Mismatch {
    /// The slot the step wrote.
    pub slot: u8,
    /// The element's row-major index.
    pub element: usize,
    /// The definition's value.
    pub expected: String,
    /// Burn's value.
    pub actual: String,
}

impl Mismatch {
    /// How far Burn's float value is from the definition's, where both are finite numbers.
    pub fn float_difference(&self) -> Option<f64> {
        let (want, got) = (
            self.expected.parse::<f64>().ok()?,
            self.actual.parse::<f64>().ok()?,
        );
        (want.is_finite() && got.is_finite()).then(|| (got - want).abs())
    }

    /// The absolute tolerance a reproducer compares Burn's float value with the definition's
    /// within: a thousandth (relative past 1), or half Burn's error where that is smaller (a
    /// few units in the last place off, which a thousandth would not show), so that the
    /// reproducer fails today and passes once Burn's value is at least twice as close.
    pub fn reproducer_tolerance(&self) -> Option<f64> {
        let want = self.expected.parse::<f64>().ok()?;
        let thousandth = 1e-3 * want.abs().max(1.0);
        self.float_difference()
            .map(|d| (d / 2.0).min(thousandth))
            .filter(|t| *t < thousandth)
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "t{} element {}: the definition gives {}, Burn computed {}",
            self.slot, self.element, self.expected, self.actual
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_mismatch_reads_as_the_message_its_reproducer_asserts_back() {
        let m = Mismatch {
            slot: 2,
            element: 1,
            expected: "6.0".into(),
            actual: "NaN".into(),
        };
        assert_eq!(
            m.to_string(),
            "t2 element 1: the definition gives 6.0, Burn computed NaN"
        );
        let payload = Payload::Reference {
            mismatch: m.clone(),
            by: Derivation::Definition,
            backend: Backend::Wgpu,
        };
        assert_eq!(payload.mismatch(), Some(&m));
        assert_eq!(payload.backend(), Some(Backend::Wgpu));
        assert!(!payload.lost_dtype() && Payload::None.is_none());
    }
}
