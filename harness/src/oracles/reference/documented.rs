//! Behaviour Burn documents that the definitions do not model: a value there is left open with
//! the source line that documents it, never reported as a mismatch.

use burn::tensor::DType;

use crate::program::{Dtype, Op};

/// An entry, as signatures name it, and the int scalar it hands Flex's `int_scalar_op` for the
/// program's scalar `y`.
pub type PassedScalar = (&'static str, fn(i64) -> i64);

/// One documented behaviour: the entries it holds for and the source that documents it.
pub struct Documented {
    /// The entries, each with the scalar it passes.
    pub entries: &'static [PassedScalar],
    /// The documentation, with its source line: why the value is open.
    pub why: &'static str,
}

/// Every documented behaviour the reference leaves open.
pub const DOCUMENTED: &[Documented] = &[Documented {
    // add, sub, mul and the bitwise ops go through the same truncation, but a truncated
    // scalar is the same modulo 2^bits, so their wrapped results are the definition's: they
    // stay judged. A divisor's truncation changes the result.
    entries: &[
        ("scalar div_nonzero", |y| y.abs() + 1),
        ("scalar remainder_nonzero", |y| y.abs() + 1),
        // remainder_scalar(1000) before its powi (program/along_dim.rs).
        ("along_dim powi_two_int", |_| 1000),
    ],
    why: "an int scalar its tensor's dtype cannot hold, which Flex documents it truncates to \
          the dtype, as PyTorch does (burn-flex ops/binary.rs:384, int_scalar_op)",
}];

/// Why the value of `op` over a first operand of `dtype` is open as documented behaviour, if
/// it is: an entry of [`DOCUMENTED`] whose scalar the dtype cannot hold. I64 holds every
/// scalar, and Flex converts U64's with a checked cast (ops/int.rs:699-765), which a scalar it
/// cannot hold makes panic instead.
pub fn open(op: &Op, dtype: DType) -> Option<&'static str> {
    let y = match op {
        Op::Scalar { value, .. } => i64::from(*value),
        _ => 0,
    };
    let (lo, hi) = Dtype::from_burn(dtype)
        .filter(|d| !matches!(d, Dtype::U64))
        .and_then(Dtype::int_range)?;
    let (documented, (_, scalar)) = entry(op)?;
    let passed = i128::from(scalar(y));
    (passed < lo || passed > hi).then_some(documented.why)
}

/// The documented behaviour `op`'s entry is listed under, with the scalar it passes, if any.
pub fn entry(op: &Op) -> Option<(&'static Documented, &'static PassedScalar)> {
    // Only scalar and along-dim entries are listed: the others need not build their name.
    if !matches!(op, Op::Scalar { .. } | Op::AlongDim { .. }) {
        return None;
    }
    let name = op.name();
    DOCUMENTED.iter().find_map(|d| {
        let entry = d.entries.iter().find(|(n, _)| *n == name)?;
        Some((d, entry))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::ScalarOp;

    #[test]
    fn a_scalar_the_dtype_cannot_hold_is_documented_and_one_it_holds_is_not() {
        let remainder = |value| Op::Scalar {
            op: ScalarOp::named("remainder_nonzero").unwrap(),
            src: 0,
            value,
        };
        // |127| + 1 = 128 does not fit I8, and fits I16; |126| + 1 fits I8.
        assert!(open(&remainder(127), DType::I8).is_some());
        assert!(open(&remainder(127), DType::I16).is_none());
        assert!(open(&remainder(126), DType::I8).is_none());
        assert!(open(&remainder(127), DType::F32).is_none());
        // A truncated addend is the same modulo 2^bits: the wrapped sum is still judged.
        let sub = Op::Scalar {
            op: ScalarOp::named("sub").unwrap(),
            src: 0,
            value: -3,
        };
        assert!(open(&sub, DType::U8).is_none());
    }
}
