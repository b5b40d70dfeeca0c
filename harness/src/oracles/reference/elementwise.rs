//! The references of the element-wise tables (unary, binary, comparison, scalar): one row per
//! entry, by name, each the op's definition on f64 or exact ints, with the source that defines
//! it where Burn's own doc comment does not.

mod scalar;

pub(super) use scalar::erf;
use scalar::{clamp_f, max_of, min_of, minus_whole, sigmoid, softplus, SELU_ALPHA, SELU_SCALE};

use super::along_dim::{first_positions, flip_positions};
use super::error::{
    composite, library, library_f32, minus_sum, product, Arithmetic, Composite, Product,
    FMOD_JUMPS, HYPOT_AT_ORIGIN, INFINITE_SLOPE_AT_ONE, INFINITE_SLOPE_AT_UNIT,
    INFINITE_SLOPE_AT_ZERO, PRESET, REMAINDER_JUMPS,
};
use super::host::{
    broadcast_positions, floor_mod_i, identity_positions, int_div, int_product, Data, Host,
};

/// How the reference computes one unary entry.
#[derive(Clone, Copy)]
pub enum Unary {
    /// A float function IEEE 754 or its C library definition pins down for every input, NaN and
    /// infinities included (NaN in, NaN out).
    Ieee(fn(f64) -> f64),
    /// A float function Burn composes from comparisons and selects (an activation): defined for
    /// numbers, but what a NaN lane gives is the composition's accident, so it is left open.
    Float(fn(f64) -> f64),
    /// A float test with a bool result, defined for every input.
    Test(fn(f64) -> bool),
    /// An int function; `None` where the result is not pinned down (a documented exclusion, an
    /// undocumented rounding).
    Int(fn(i128) -> Option<i128>),
    /// Both kinds, one function each.
    Both(fn(f64) -> f64, fn(i128) -> Option<i128>),
    /// An int function whose formula passes through the intermediate the second function
    /// gives (`|x|`): a lane whose intermediate leaves the dtype is left open, since what
    /// Burn's overflow makes of it is not pinned down.
    IntThrough(fn(i128) -> Option<i128>, fn(i128) -> i128),
    /// As [`Unary::Both`], a NaN lane left open (Burn documents no result for it).
    BothNanOpen(fn(f64) -> f64, fn(i128) -> Option<i128>),
    /// A function of the whole tensor (a reduction broadcast back over it).
    Whole(fn(&Host) -> Option<Host>),
    /// A quantized round trip through a layout move (for each output position, the input
    /// position it takes), judged within one quantization step (see [`super::host::quantized`]).
    Quantized(fn(&[usize]) -> Vec<usize>),
    /// No reference, and why.
    Missing(&'static str),
}

/// `x` floored-modulo `y` (the result has the sign of `y`): Burn's `remainder` for ints (its
/// doc comment), and for floats as PyTorch's `remainder` (Python's `%`), which Burn's doc does
/// not contradict.
pub fn floor_mod_f(x: f64, y: f64) -> f64 {
    let r = x % y;
    if r != 0.0 && (r < 0.0) != (y < 0.0) {
        r + y
    } else {
        r
    }
}

/// Every unary entry's reference, by table name.
/// The `reference` column of `program::unary_ops!` as a table by name: written in each entry's
/// row, so an entry without one does not compile, and compiled here, in the reference's terms.
macro_rules! unary_references {
    ($($name:ident : [$($kind:ident),+] -> $result:ident, $tol:ident, $un:ident,
        $reach:ident, $x:ident => $call:expr, reference $reference:expr, error $error:expr;)+) => {
        /// Every unary entry's reference, by table name: its definition, with its source where
        /// Burn's doc comment does not give it.
        pub const UNARY: &[(&str, Unary)] = &[$((stringify!($name), $reference)),+];
        /// Every unary entry's error model on Flex, in table order (`error` column: a library
        /// function's measured bound, or none derived: its tolerance family's preset).
        pub const UNARY_ERROR: &[Arithmetic] = &[$($error),+];
    };
}
crate::program::unary_ops!(unary_references);

/// How the reference computes one two-operand entry (binary, comparison or scalar).
#[derive(Clone, Copy)]
pub enum Binary {
    /// Floats, IEEE-defined for every input pair.
    Ieee(fn(f64, f64) -> f64),
    /// Floats, where a NaN operand's lane is left open (Burn documents no NaN order).
    Float(fn(f64, f64) -> f64),
    /// Ints; `None` where not pinned down.
    Int(fn(i128, i128) -> Option<i128>),
    /// Both, one function each (the float one IEEE-defined).
    Both(fn(f64, f64) -> f64, fn(i128, i128) -> Option<i128>),
    /// As [`Binary::Both`], the float one leaving a NaN lane open.
    BothNanOpen(fn(f64, f64) -> f64, fn(i128, i128) -> Option<i128>),
    /// A comparison of numbers (IEEE: any comparison with a NaN is false, `!=` true) or bools.
    Compare(fn(f64, f64) -> bool),
    /// Bools.
    Bool(fn(bool, bool) -> bool),
    /// No reference, and why.
    Missing(&'static str),
}

/// The `reference` and `error` columns of `program::binary_ops!`, `compare_ops!` and
/// `scalar_ops!`: the references as a table by name, as [`UNARY`] is built, and the error
/// models on Flex in table order, as [`UNARY_ERROR`] is (a comparison's, whose result is a
/// bool, is `PRESET` throughout).
macro_rules! two_operand_references {
    ($table:ident, $errors:ident, $doc:literal; $($name:ident : [$($kind:ident),+] -> $result:ident,
        $tol:ident, $un:ident, $x:ident, $y:ident => $call:expr, reference $reference:expr,
        error $error:expr;)+) => {
        #[doc = $doc]
        pub const $table: &[(&str, Binary)] = &[$((stringify!($name), $reference)),+];
        /// The error models of the entries of the table beside it, in table order.
        pub const $errors: &[Arithmetic] = &[$($error),+];
    };
}
crate::program::binary_ops!(
    two_operand_references,
    BINARY,
    BINARY_ERROR,
    "Every binary entry's reference, by table name."
);

crate::program::compare_ops!(
    two_operand_references,
    COMPARE,
    COMPARE_ERROR,
    "Every comparison entry's reference, by table name."
);

crate::program::scalar_ops!(
    two_operand_references,
    SCALAR,
    SCALAR_ERROR,
    "Every scalar entry's reference, by table name: `y` is the scalar (the step's `i8`, an `f32` \
     for floats)."
);

/// The row named `name` of a reference table.
pub fn row<T: Copy>(table: &[(&str, T)], name: &str) -> Option<T> {
    table.iter().find(|(n, _)| *n == name).map(|(_, r)| *r)
}

/// For each output position of a shape, the operand position it takes.
pub type Positions = fn(&[usize]) -> Vec<usize>;

/// The `reference` column of `program::quantized_ops!` as a table by name, as the other tables
/// are built: an entry without one does not compile.
macro_rules! quantized_references {
    ($($name:ident : $tol:ident, $x:ident, $s:ident => $call:expr,
        reference $reference:expr, round_trips $trips:literal;)+) => {
        /// The quantized table's references: each entry's layout (for each output position, the
        /// operand position it takes), round-tripped through the step's scheme (see
        /// [`host::quantized`](super::host::quantized)): reads, transactions and reshapes,
        /// permutes and swaps undone move nothing; a flip and a reversed select reverse dim 0; an
        /// expansion repeats its first row along dim 0.
        pub const QUANTIZED: &[(&str, Positions)] = &[$((stringify!($name), $reference)),+];
        /// How many times each entry quantizes: an op Burn runs on the dequantized values and
        /// quantizes again (where a device propagates quantization; none does by default)
        /// rounds twice, which the one round trip's interval does not hold (see
        /// [`quantization`](super::quantization)).
        pub const QUANTIZED_TRIPS: &[u8] = &[$($trips),+];
    };
}
crate::program::quantized_ops!(quantized_references);

/// A unary entry applied to `x`: the result, or why there is none.
pub fn unary(reference: Unary, x: &Host) -> Result<Host, &'static str> {
    let shape = x.shape.clone();
    let float = |f: fn(f64) -> f64, nan_open: bool, v: &[Option<f64>]| {
        v.iter()
            .map(|e| e.and_then(|e| (!(nan_open && e.is_nan())).then(|| f(e))))
            .collect()
    };
    match (reference, &x.data) {
        (Unary::Missing(why), _) => Err(why),
        (Unary::Ieee(f) | Unary::Both(f, _), Data::Float(v)) => {
            Ok(Host::float(shape, float(f, false, v)))
        }
        (Unary::BothNanOpen(f, _), Data::Float(v)) => Ok(Host::float(shape, float(f, true, v))),
        (Unary::Float(f), Data::Float(v)) => Ok(Host::float(shape, float(f, true, v))),
        (Unary::Test(f), Data::Float(v)) => {
            Ok(Host::bool(shape, v.iter().map(|e| e.map(f)).collect()))
        }
        (Unary::Int(f) | Unary::Both(_, f) | Unary::BothNanOpen(_, f), Data::Int(v)) => {
            // `abs` and `neg` of the dtype's minimum overflow, and the composite int entries
            // take `abs` first: that lane is left open.
            let min = x.range.map(|(lo, _)| lo);
            Ok(Host::int(
                shape,
                v.iter()
                    .map(|e| e.filter(|e| Some(*e) != min).and_then(f))
                    .collect(),
            ))
        }
        (Unary::IntThrough(f, through), Data::Int(v)) => {
            let fits = |i: i128| x.range.is_none_or(|(lo, hi)| i >= lo && i <= hi);
            Ok(Host::int(
                shape,
                v.iter()
                    .map(|e| e.filter(|e| fits(*e) && fits(through(*e))).and_then(f))
                    .collect(),
            ))
        }
        (Unary::Whole(f), _) => f(x).ok_or("the whole-tensor reduction meets an unknown element"),
        (Unary::Quantized(layout), _) => super::host::quantized(x, &layout(&x.shape)),
        _ => Err("the entry takes no operand of this kind"),
    }
}

/// A two-operand entry applied to `x` and `y`, `y` broadcast to `x`'s shape.
pub fn binary(reference: Binary, x: &Host, y: &Host) -> Result<Host, &'static str> {
    let at = broadcast_positions(&y.shape, &x.shape).ok_or("operands do not broadcast")?;
    let shape = x.shape.clone();
    let pairs = |xs: &[Option<f64>], ys: &[Option<f64>]| -> Vec<(Option<f64>, Option<f64>)> {
        xs.iter().zip(&at).map(|(a, &j)| (*a, ys[j])).collect()
    };
    let floats = |f: fn(f64, f64) -> f64, nan_open: bool| -> Option<Host> {
        let (xs, ys) = (x.floats()?, y.floats()?);
        Some(Host::float(
            shape.clone(),
            pairs(xs, ys)
                .into_iter()
                .map(|(a, b)| {
                    let (a, b) = (a?, b?);
                    (!(nan_open && (a.is_nan() || b.is_nan()))).then(|| f(a, b))
                })
                .collect(),
        ))
    };
    let ints = |f: fn(i128, i128) -> Option<i128>| -> Option<Host> {
        let (xs, ys) = (x.ints()?, y.ints()?);
        Some(Host::int(
            shape.clone(),
            xs.iter().zip(&at).map(|(a, &j)| f((*a)?, ys[j]?)).collect(),
        ))
    };
    let result = match reference {
        Binary::Missing(why) => return Err(why),
        Binary::Ieee(f) => floats(f, false),
        Binary::Float(f) => floats(f, true),
        Binary::Int(f) => ints(f),
        Binary::Both(f, g) => floats(f, false).or_else(|| ints(g)),
        Binary::BothNanOpen(f, g) => floats(f, true).or_else(|| ints(g)),
        Binary::Compare(f) => match (&x.data, &y.data) {
            (Data::Bool(xs), Data::Bool(ys)) => Some(Host::bool(
                shape.clone(),
                xs.iter()
                    .zip(&at)
                    .map(|(a, &j)| Some(f(f64::from(u8::from((*a)?)), f64::from(u8::from(ys[j]?)))))
                    .collect(),
            )),
            // Ints compare in i128: past 2^53 their f64 images collide (u64::MAX - 127 and
            // u64::MAX are one f64: fuzz --seed 7 with edge fills). The comparison sees the
            // pair's order as 0 and 1, which every order-based comparison reads alike.
            (Data::Int(xs), Data::Int(ys)) => Some(Host::bool(
                shape.clone(),
                xs.iter()
                    .zip(&at)
                    .map(|(a, &j)| {
                        let (a, b) = ((*a)?, ys[j]?);
                        let (a, b) = match a.cmp(&b) {
                            std::cmp::Ordering::Less => (0.0, 1.0),
                            std::cmp::Ordering::Equal => (0.0, 0.0),
                            std::cmp::Ordering::Greater => (1.0, 0.0),
                        };
                        Some(f(a, b))
                    })
                    .collect(),
            )),
            _ => {
                let (xs, ys) = (x.as_f64(), y.as_f64());
                Some(Host::bool(
                    shape.clone(),
                    pairs(&xs, &ys)
                        .into_iter()
                        .map(|(a, b)| Some(f(a?, b?)))
                        .collect(),
                ))
            }
        },
        Binary::Bool(f) => {
            let (xs, ys) = (x.bools(), y.bools());
            xs.zip(ys).map(|(xs, ys)| {
                Host::bool(
                    shape.clone(),
                    xs.iter()
                        .zip(&at)
                        .map(|(a, &j)| Some(f((*a)?, ys[j]?)))
                        .collect(),
                )
            })
        }
    };
    result.ok_or("the entry takes no operands of these kinds")
}

#[cfg(test)]
mod tests;
