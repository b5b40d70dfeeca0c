//! The element kinds of tensors, shared by the steps and the op tables.

use arbitrary::Arbitrary;
use serde::{Deserialize, Serialize};

/// The element kind of a tensor, matching Burn's `Float`, `Int` and `Bool` tensor kinds.
#[derive(
    Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum Kind {
    /// `Tensor<D>` (f32 on every device here).
    Float,
    /// `Tensor<D, Int>`.
    Int,
    /// `Tensor<D, Bool>`.
    Bool,
}
