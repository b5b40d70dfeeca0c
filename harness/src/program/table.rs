//! What every op table shares: tolerance families, the entry helpers, and the index type that
//! stores an op by its table name and decodes it from fuzzer bytes like an enum.

use super::dtype::Dtype;
use super::kind::Kind;

/// How closely two backends' values of an op must agree, per op family (Burn's own
/// `Tolerance` presets; `oracles::compare` maps each to one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tolerance {
    /// Continuous and adds no error of its own (neg, abs, relu): bit-exact on bit-identical
    /// operands, `Balanced` once an operand carries another op's rounding.
    Exact,
    /// Discontinuous (rounding, sign, comparisons, thresholds, casts to int): bit-exact on
    /// bit-identical operands; over an operand the backends computed slightly differently the
    /// result is not pinned down (2.9999998 floors to 2, 3.0000002 to 3), so it is poisoned.
    Step,
    /// `Tolerance::balanced()` (0.5% relative, 1e-5 absolute): arithmetic.
    Balanced,
    /// IEEE 754's correctly rounded arithmetic (add, sub, mul, div): the result is the exact
    /// one rounded once to its dtype, so the reference oracle holds Flex's within one unit in
    /// the last place and wgpu's within three (WGSL rounds add, sub and mul correctly and
    /// divides within 2.5 ulps); Flex and wgpu against each other as `Balanced`.
    Rounded,
    /// `Tolerance::permissive()` (1% relative, 0.01 absolute): transcendentals, whose GPU
    /// implementations are approximations (WGSL allows several ulps, more for `tan`, `erf`).
    Transcendental,
}

/// An entry's result kind: `same` (the operand's), a dtype of the operand's kind (`I64`: an int
/// cast), or the kind named.
macro_rules! op_result {
    (same) => {
        None
    };
    (I64) => {
        None
    };
    (I32) => {
        None
    };
    ($kind:ident) => {
        Some(Kind::$kind)
    };
}

/// The dtype an entry's result is stored in, as Burn states it: what the dtype contract holds
/// every op step to, from the same column of the table as the result's kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ResultDtype {
    /// The operand's own dtype (F16 in, F16 out; the first operand's where there are several of
    /// its kind, which must then share it): Burn's ops are generic over the element type and
    /// hand the operand's dtype on (burn-backend's ops take no out dtype for them).
    Operand,
    /// This dtype, whatever the operand's: a cast.
    Named(Dtype),
    /// The device's default for the result's kind (a comparison's bool, an index's int, a
    /// dequantized float): a device's choice, not the operand's, and not judged here.
    Default,
}

/// An entry's [`ResultDtype`], from the same token as [`op_result`].
macro_rules! op_dtype {
    (same) => {
        ResultDtype::Operand
    };
    (I64) => {
        ResultDtype::Named($crate::program::Dtype::I64)
    };
    (I32) => {
        ResultDtype::Named($crate::program::Dtype::I32)
    };
    ($kind:ident) => {
        ResultDtype::Default
    };
}

/// An entry's tolerance family, from its lower-case name.
macro_rules! op_tolerance {
    (exact) => {
        Tolerance::Exact
    };
    (step) => {
        Tolerance::Step
    };
    (balanced) => {
        Tolerance::Balanced
    };
    (rounded) => {
        Tolerance::Rounded
    };
    (transcendental) => {
        Tolerance::Transcendental
    };
}

/// What Burn leaves unspecified about an op, so that backends may legitimately
/// disagree: the differential poisons the result when the operand meets it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unspecified {
    /// Nothing.
    None,
    /// How NaN orders (WGSL may assume there is none): a lane holding a NaN.
    Nan,
    /// A pole at zero (a division, a reciprocal, a logarithm) or a domain edge there (a square
    /// root): the result jumps there, so an operand within
    /// [`POLE_NEIGHBOURHOOD`](crate::program::limits::POLE_NEIGHBOURHOOD) of zero that the
    /// backends did not compute bit for bit alike (a transcendental's 0 may be 1e-8 on wgpu)
    /// leaves the result open: 0/0 is NaN on Flex and 1e-8/1e-8 is 1 on wgpu (fuzz --backends
    /// flex,capture,wgpu --seed 105, erf(0) / erf(0)).
    Pole,
    /// As [`Unspecified::Pole`] at -1 and 1: atanh's poles, and the edges of asin's and acos's
    /// domain. An operand the backends did not compute bit for bit alike within
    /// [`POLE_NEIGHBOURHOOD`](crate::program::limits::POLE_NEIGHBOURHOOD) of either leaves the
    /// result open: a Lanczos3 resampling's 1 is 1 on Flex and 1.0000001 on wgpu, and atanh
    /// makes them inf and NaN (fuzz --backends flex,capture,wgpu --seed 115).
    UnitEdge,
    /// A result that jumps where the operands meet an edge (a float remainder or fmod: at each
    /// multiple of the divisor): over operands the backends did not compute bit for bit alike
    /// it is left open, as a `step` op's (a Lanczos3 resampling's 0 is 1e-7 on Flex and -1.6e-7
    /// on wgpu, and its remainder by -84 is -84 on Flex, -1.6e-7 on wgpu: fuzz --backends
    /// flex,capture,wgpu --seed 106). Unlike a `step` op, it may round differently over
    /// identical operands, so its family's tolerance stays.
    Jumps,
    /// Which of equal values an index points to: a lane holding two equal values or a NaN.
    Ties,
    /// The accuracy of a periodic function (sin, cos, tan) far from zero: WGSL bounds their
    /// error only inside [-pi, pi], so an operand of magnitude above
    /// [`LARGE_ARGUMENT`](crate::program::limits::LARGE_ARGUMENT) leaves the result open.
    Large,
    /// The hyperbolic functions (sinh, cosh, tanh) past [`EXP_OVERFLOW`]: WGSL inherits their
    /// accuracy from `(exp(x) ± exp(-x)) / 2` (tanh from their ratio), whose `exp` overflows
    /// there though the result may still fit in an f32.
    ///
    /// [`EXP_OVERFLOW`]: crate::program::limits::EXP_OVERFLOW
    Overflow,
    /// The inverse hyperbolics (asinh, acosh) past
    /// [`SQUARE_OVERFLOW`](crate::program::limits::SQUARE_OVERFLOW): WGSL inherits their accuracy
    /// from `log(x + sqrt(x * x ± 1))`, whose square overflows there though the result is below
    /// 45.
    SquareOverflow,
    /// `x` minus a float sum or mean of `x`: the reduction's rounding (its accumulation order is
    /// the backend's choice) is at the scale of `sum(|x|)`, so where the result cancels to far
    /// below that scale it carries that whole error. Not a poison: the result is compared
    /// within an absolute tolerance of the reduction's error bound
    /// (`oracles::compare::absolute_floor`).
    CancelledSum,
    /// As [`Unspecified::CancelledSum`] for `x` minus the product of `x`, whose rounding is at
    /// the scale of `prod(|x|)`.
    CancelledProduct,
    /// A float tensor quantized (`quantize_dynamic` with Burn's default scheme: symmetric
    /// 8-bit, one scale for the tensor) and dequantized: a value at a rounding midpoint may
    /// land on either neighbouring step (the backends compute `x / scale` differently), so
    /// results are compared within one quantization step, `max(|x|) / 127`.
    Quantized,
    /// A resampling's weighted sum over a window holding an infinity (a Lanczos3
    /// interpolation): IEEE's 0 x inf is NaN, so a kernel that multiplies every tap (wgpu)
    /// gives NaN where one that skips the taps of zero weight (Flex) gives the infinity, and
    /// Burn does not say which: an operand element that is infinite leaves the result open
    /// (fuzz --backends flex,capture,wgpu --seed 2, a [4, 4, 1, 3] tensor of -inf).
    Infinite,
    /// An int op that takes its operand's magnitude (abs, neg, and the entries that take abs
    /// first): the dtype's minimum has none, and Burn pins no int overflow down (Flex wraps
    /// `abs(i32::MIN)` to itself, so its `x - max_abs(x)` of `[i32::MIN]` is 0, where wgpu's is
    /// `i32::MIN`: fuzz --backends flex,capture,wgpu --seed 12). An operand element at the
    /// minimum leaves what it reaches open.
    IntMinimum,
    /// Values drawn from the device's random generator: Flex and wgpu draw from generators of
    /// their own, and a replayed graph draws again, so neither the differential nor
    /// eager-replay compares them or anything computed from them; only their kind, dtype,
    /// shape and device are judged.
    Random,
}

/// How far one operand element reaches, as an op table's row states it (its reach column): the
/// step's dim makes a lane a `Reach`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Spread {
    /// The result element at the same position.
    Element,
    /// Every result element of the same lane along the step's dim.
    Lane,
    /// Every element of the result.
    Whole,
}

/// An entry's reach column (`element`, `lane`, `whole`), as a [`Spread`].
macro_rules! op_spread {
    (element) => {
        Spread::Element
    };
    (lane) => {
        Spread::Lane
    };
    (whole) => {
        Spread::Whole
    };
}

/// An entry's `unspecified`, from its lower-case name.
macro_rules! op_unspecified {
    (none) => {
        Unspecified::None
    };
    (nan) => {
        Unspecified::Nan
    };
    (pole) => {
        Unspecified::Pole
    };
    (unit_edge) => {
        Unspecified::UnitEdge
    };
    (jumps) => {
        Unspecified::Jumps
    };
    (ties) => {
        Unspecified::Ties
    };
    (large) => {
        Unspecified::Large
    };
    (infinite) => {
        Unspecified::Infinite
    };
    (overflow) => {
        Unspecified::Overflow
    };
    (square_overflow) => {
        Unspecified::SquareOverflow
    };
    (cancels_sum) => {
        Unspecified::CancelledSum
    };
    (cancels_product) => {
        Unspecified::CancelledProduct
    };
    (quantized) => {
        Unspecified::Quantized
    };
    (random) => {
        Unspecified::Random
    };
    (int_minimum) => {
        Unspecified::IntMinimum
    };
}

/// Declares a newtype index into a table of specs with a `name` field: stored by name in
/// program files (an unknown name is an error listing the nearest ones) and decoded from fuzzer
/// bytes exactly as `#[derive(Arbitrary)]` decodes an enum of as many variants, so `encode`
/// writes it as one (a unit variant whose index is the table position).
macro_rules! table_index {
    ($(#[$doc:meta])* $name:ident, $table:ident, $what:literal) => {
        $(#[$doc])*
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(u8);

        impl $name {
            /// The table's first entry.
            pub const FIRST: $name = $name(0);

            /// Every entry, in table order.
            pub fn all() -> impl Iterator<Item = $name> {
                (0..$table.len() as u8).map($name)
            }

            /// The entry named `name`.
            pub fn named(name: &str) -> Option<$name> {
                $table
                    .iter()
                    .position(|s| s.name == name)
                    .map(|i| $name(i as u8))
            }

            /// Its position in the table.
            pub fn index(self) -> usize {
                usize::from(self.0)
            }

            /// Its name.
            pub fn name(self) -> &'static str {
                $table[self.index()].name
            }
        }

        impl<'a> arbitrary::Arbitrary<'a> for $name {
            fn arbitrary(u: &mut arbitrary::Unstructured<'a>) -> arbitrary::Result<Self> {
                let x = u64::from(<u32 as arbitrary::Arbitrary>::arbitrary(u)?);
                Ok($name(((x * $table.len() as u64) >> 32) as u8))
            }

            fn size_hint(depth: usize) -> (usize, Option<usize>) {
                <u32 as arbitrary::Arbitrary>::size_hint(depth)
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_unit_variant(stringify!($name), u32::from(self.0), self.name())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let name = <String as serde::Deserialize>::deserialize(d)?;
                $name::named(&name).ok_or_else(|| {
                    let names: Vec<&str> = $table.iter().map(|s| s.name).collect();
                    serde::de::Error::custom(format!(
                        concat!("unknown ", $what, " op `{}`; nearest: {}"),
                        name,
                        $crate::program::names::nearest(&name, &names).join(", ")
                    ))
                })
            }
        }
    };
}

pub(crate) use {op_dtype, op_result, op_spread, op_tolerance, op_unspecified, table_index};

/// One entry of an element-wise table (unary, binary, comparison, scalar): what they all hold.
#[derive(Debug)]
pub struct OpSpec {
    /// The name program files store.
    pub name: &'static str,
    /// The operand kinds the op takes (with two operands, both have the same kind).
    pub kinds: &'static [Kind],
    /// The result's kind, when it is not the operands'.
    pub result: Option<Kind>,
    /// The dtype the result is stored in.
    pub dtype: ResultDtype,
    /// How closely Flex and wgpu must agree.
    pub tolerance: Tolerance,
    /// What Burn leaves open.
    pub unspecified: Unspecified,
    /// How far one operand element reaches in the result.
    pub spread: Spread,
    /// The call on Burn's public API, over operands named `x` (and `y`).
    pub call: &'static str,
}

impl OpSpec {
    /// Whether the op takes operands of kind `kind`.
    pub fn accepts(&self, kind: Kind) -> bool {
        self.kinds.contains(&kind)
    }

    /// The result's kind for operands of kind `kind`.
    pub fn result_kind(&self, kind: Kind) -> Kind {
        self.result.unwrap_or(kind)
    }

    /// The call with its operands `x`, then `y`, replaced by the Rust expressions `operands`.
    pub fn call_on(&self, operands: &[&str]) -> String {
        let args: Vec<(&str, &str)> = ["x", "y"]
            .into_iter()
            .zip(operands.iter().copied())
            .collect();
        render(self.call, &args)
    }
}

/// An entry's call as Rust: each `(ident, expr)` of `args` put in place of the identifier.
pub fn render(call: &str, args: &[(&str, &str)]) -> String {
    // `stringify!` spaces paths out (`burn :: tensor`) and breaks long calls over lines.
    let mut text = call
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .replace(" :: ", "::");
    for (ident, with) in args {
        text = replace_ident(&text, ident, with);
    }
    text
}

/// The byte offsets in `text` of every occurrence of `ident` and whether each stands as a whole
/// identifier (not part of a longer one).
fn ident_matches<'a>(text: &'a str, ident: &'a str) -> impl Iterator<Item = (usize, bool)> + 'a {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(ident).map(move |(at, _)| {
        let before = text[..at].chars().next_back();
        let after = text[at + ident.len()..].chars().next();
        (
            at,
            !before.is_some_and(is_ident) && !after.is_some_and(is_ident),
        )
    })
}

/// `text` with every whole identifier `ident` replaced by `with`.
pub fn replace_ident(text: &str, ident: &str, with: &str) -> String {
    let mut out = String::with_capacity(text.len() + with.len());
    let mut end = 0;
    for (at, whole) in ident_matches(text, ident) {
        out.push_str(&text[end..at]);
        out.push_str(if whole { with } else { ident });
        end = at + ident.len();
    }
    out.push_str(&text[end..]);
    out
}

/// Whether an entry's call reads a tensor's data back mid-call: `into_data`, or a
/// `Transaction` (its `execute`).
pub fn reads_data(call: &str) -> bool {
    ["into_data", "Transaction"]
        .iter()
        .any(|ident| mentions_ident(call, ident))
}

/// Whether `text` holds `ident` as a whole identifier.
pub fn mentions_ident(text: &str, ident: &str) -> bool {
    ident_matches(text, ident).any(|(_, whole)| whole)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_are_matched_whole() {
        assert_eq!(replace_ident("x.max(dx, x)", "x", "t1"), "t1.max(dx, t1)");
        assert!(mentions_ident("Tensor::arange(0..n, &d)", "d"));
        assert!(!mentions_ident("x.dims()[0]", "d"));
    }
}
