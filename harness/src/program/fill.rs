//! The host data a `Create` step's fill stands for, edge fills made in their own dtype.

use burn::tensor::{bf16, f16, TensorData};

use super::dtype::Dtype;
use super::edge::Edge;
use super::step::{Fill, Kind};

/// The dtype an edge fill is made in: the one the step names, else F32, I32 or a native bool
/// (values both the Flex and the capture default of the kind hold).
pub fn edge_dtype(kind: Kind, dtype: Option<Dtype>) -> Dtype {
    dtype.unwrap_or(match kind {
        Kind::Float => Dtype::F32,
        Kind::Int => Dtype::I32,
        Kind::Bool => Dtype::BoolNative,
    })
}

/// The edges of a float type.
trait FloatEdges: Copy {
    const MAX: Self;
    const MIN: Self;
    const NEG_ZERO: Self;
    const NAN: Self;
    const INFINITY: Self;
    const NEG_INFINITY: Self;
    fn subnormal() -> Self;
    /// The largest value below 1.
    fn below_one() -> Self;
    fn neg(self) -> Self;
}

macro_rules! float_edges {
    ($($t:ty: $neg_zero:expr, $subnormal:expr, $below_one:expr;)*) => {$(
        impl FloatEdges for $t {
            const MAX: Self = <$t>::MAX;
            const MIN: Self = <$t>::MIN;
            const NEG_ZERO: Self = $neg_zero;
            const NAN: Self = <$t>::NAN;
            const INFINITY: Self = <$t>::INFINITY;
            const NEG_INFINITY: Self = <$t>::NEG_INFINITY;
            fn subnormal() -> Self {
                $subnormal
            }
            fn below_one() -> Self {
                $below_one
            }
            fn neg(self) -> Self {
                -self
            }
        }
    )*};
}

float_edges! {
    f64: -0.0, f64::from_bits(1), 1.0 - f64::EPSILON / 2.0;
    f32: -0.0, f32::from_bits(1), 1.0 - f32::EPSILON / 2.0;
    f16: f16::NEG_ZERO, f16::from_bits(1), f16::from_f32(1.0 - f32::from(f16::EPSILON) / 2.0);
    bf16: bf16::NEG_ZERO, bf16::from_bits(1), bf16::from_f32(1.0 - f32::from(bf16::EPSILON) / 2.0);
}

fn float_edge<T: FloatEdges>(edge: Edge) -> T {
    match edge {
        Edge::Max | Edge::Mixed => T::MAX,
        Edge::Min => T::MIN,
        Edge::NegZero => T::NEG_ZERO,
        Edge::Subnormal => T::subnormal(),
        Edge::Nan => T::NAN,
        Edge::Inf => T::INFINITY,
        Edge::NegInf => T::NEG_INFINITY,
        Edge::BelowOne => T::below_one(),
        Edge::AboveMinusOne => T::below_one().neg(),
    }
}

macro_rules! int_edge {
    ($t:ty, $edge:expr) => {
        match $edge {
            Edge::Max | Edge::Mixed | Edge::Nan | Edge::Inf => <$t>::MAX,
            Edge::Min | Edge::NegInf => <$t>::MIN,
            Edge::NegZero | Edge::BelowOne | Edge::AboveMinusOne => 0,
            Edge::Subnormal => 1,
        }
    };
}

/// The data of an edge fill of `n` elements in `dtype`.
fn edge_data(dtype: Dtype, shape: Vec<usize>, n: usize, edge: Edge) -> TensorData {
    macro_rules! each {
        ($f:expr) => {
            TensorData::new((0..n).map(|i| $f(edge.at(i))).collect::<Vec<_>>(), shape)
        };
    }
    match dtype {
        Dtype::F64 => each!(float_edge::<f64>),
        Dtype::F32 => each!(float_edge::<f32>),
        Dtype::F16 => each!(float_edge::<f16>),
        Dtype::Bf16 => each!(float_edge::<bf16>),
        Dtype::I64 => each!(|e| int_edge!(i64, e)),
        Dtype::I32 => each!(|e| int_edge!(i32, e)),
        Dtype::I16 => each!(|e| int_edge!(i16, e)),
        Dtype::I8 => each!(|e| int_edge!(i8, e)),
        Dtype::U64 => each!(|e| int_edge!(u64, e)),
        Dtype::U32 => each!(|e| int_edge!(u32, e)),
        Dtype::U16 => each!(|e| int_edge!(u16, e)),
        Dtype::U8 => each!(|e| int_edge!(u8, e)),
        Dtype::BoolNative | Dtype::BoolU8 | Dtype::BoolU32 => each!(Edge::truth),
    }
}

/// The host data of a deterministic fill of a `Create` step's `shape`, for a tensor of `kind`
/// stored as `dtype` (none: the device's default). Edge fills are made in the dtype itself (see
/// [`edge_dtype`]); the others as f32, i64 or bool data, which Burn converts exactly.
pub fn fill_data(kind: Kind, dtype: Option<Dtype>, shape: &[u8], fill: Fill) -> TensorData {
    let shape: Vec<usize> = shape.iter().map(|d| usize::from(*d)).collect();
    let n: usize = shape.iter().product();
    let half = (n / 2) as i64;
    // Every other fill is a whole number per element, `start + step * i`, its sign alternating
    // for `Tiny` (an int; a bool is its parity), and as a float that number times `scale` plus
    // `fraction`.
    let (start, step, alternate, fraction, scale) = match fill {
        Fill::Edge(edge) => return edge_data(edge_dtype(kind, dtype), shape, n, edge),
        Fill::Zeros => (0, 0, false, 0.0, 1.0),
        Fill::Ones => (1, 0, false, 0.0, 1.0),
        Fill::Arange => (0, 1, false, 0.0, 1.0),
        Fill::Value(v) => (i64::from(v), 0, false, 0.0, 1.0),
        Fill::Halves => (-half, 1, false, 0.5, 1.0),
        Fill::Tiny => (1, 1, true, 0.0, TINY),
    };
    let whole = |i: usize| -> i64 {
        let w = start + step * i as i64;
        if alternate && !i.is_multiple_of(2) {
            -w
        } else {
            w
        }
    };
    match kind {
        Kind::Float => TensorData::new(
            (0..n).map(|i| whole(i) as f32 * scale + fraction).collect(),
            shape,
        ),
        Kind::Int => TensorData::new((0..n).map(whole).collect::<Vec<i64>>(), shape),
        Kind::Bool => TensorData::new(
            (0..n).map(|i| whole(i) % 2 != 0).collect::<Vec<bool>>(),
            shape,
        ),
    }
}

/// The unit of a tiny fill's floats: a third of 2^-12, about 8.1e-5, far below the 0.01 a
/// transcendental preset left open, with every bit of its significand set, so that `1 + x`
/// rounds and `ln(1 + x)` parts from `ln_1p(x)`; a normal number in every float dtype (F16's
/// smallest normal is 2^-14, about 6.1e-5).
pub const TINY: f32 = 1.0 / 12288.0;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn edge_fills_hold_each_dtypes_own_edges_and_mixed_cycles_through_them() {
        let f16s = fill_data(Kind::Float, Some(Dtype::F16), &[4], Fill::Edge(Edge::Mixed));
        let f16s: Vec<f16> = f16s.try_to_vec().unwrap();
        assert_eq!(f16s[0], f16::MAX);
        assert!(f16s[1].is_nan());
        assert!(f16s[2] == f16::ZERO && f16s[2].is_sign_negative());
        assert_eq!(f16s[3], f16::NEG_INFINITY);
        let i8s: Vec<i8> = fill_data(Kind::Int, Some(Dtype::I8), &[7], Fill::Edge(Edge::Mixed))
            .try_to_vec()
            .unwrap();
        assert_eq!(i8s, [127, 127, 0, -128, -128, 127, 1]);
        let u8s: Vec<u8> = fill_data(Kind::Int, Some(Dtype::U8), &[1], Fill::Edge(Edge::NegInf))
            .try_to_vec()
            .unwrap();
        assert_eq!(u8s, [0]);
        let tiny: Vec<f64> = fill_data(
            Kind::Float,
            Some(Dtype::F64),
            &[1],
            Fill::Edge(Edge::Subnormal),
        )
        .try_to_vec()
        .unwrap();
        assert_eq!(tiny, [f64::from_bits(1)]);
        // No dtype named: F32 and I32, which both defaults of the kind hold.
        let default = fill_data(Kind::Int, None, &[1], Fill::Edge(Edge::Max));
        assert_eq!(default.try_to_vec::<i32>().unwrap(), [i32::MAX]);
        let bools = fill_data(Kind::Bool, None, &[2], Fill::Edge(Edge::Mixed));
        assert_eq!(bools.try_to_vec::<bool>().unwrap(), [true, true]);
    }

    #[test]
    fn an_edges_literal_is_the_rust_constant_of_its_dtype() {
        assert_eq!(Edge::Max.literal(Dtype::F16), "f16::MAX");
        assert_eq!(Edge::NegZero.literal(Dtype::F32), "-0.0f32");
        assert_eq!(Edge::NegZero.literal(Dtype::Bf16), "bf16::NEG_ZERO");
        assert_eq!(Edge::Subnormal.literal(Dtype::F64), "f64::from_bits(1)");
        assert_eq!(Edge::Nan.literal(Dtype::U16), "u16::MAX");
        assert_eq!(Edge::NegInf.literal(Dtype::I64), "i64::MIN");
        assert_eq!(Edge::Min.literal(Dtype::BoolU8), "false");
        assert_eq!(
            Edge::BelowOne.literal(Dtype::F32),
            "1.0 - f32::EPSILON / 2.0"
        );
        assert_eq!(Edge::AboveMinusOne.literal(Dtype::I8), "0i8");
    }

    #[test]
    fn the_edges_next_to_one_are_one_step_inside_the_unit_interval_in_each_float_dtype() {
        let at = |dtype, edge| fill_data(Kind::Float, Some(dtype), &[1], Fill::Edge(edge));
        let f32s: Vec<f32> = at(Dtype::F32, Edge::BelowOne).try_to_vec().unwrap();
        assert_eq!(f32s, [0.99999994]);
        let f16s: Vec<f16> = at(Dtype::F16, Edge::AboveMinusOne).try_to_vec().unwrap();
        assert_eq!(f16s, [f16::from_f32(2f32.powi(-11) - 1.0)]);
        assert_eq!(f16s[0].to_bits(), 0xbbff);
        let bf16s: Vec<bf16> = at(Dtype::Bf16, Edge::BelowOne).try_to_vec().unwrap();
        assert_eq!(bf16s[0].to_bits(), 0x3f7f);
        let f64s: Vec<f64> = at(Dtype::F64, Edge::AboveMinusOne).try_to_vec().unwrap();
        assert_eq!(f64s, [-(1.0 - f64::EPSILON / 2.0)]);
        assert!(f64s[0] > -1.0 && f64s[0].next_down() == -1.0);
    }

    #[test]
    fn halves_hold_ties_of_both_signs_and_tiny_holds_small_values_of_both_signs() {
        let floats = |fill| -> Vec<f32> {
            fill_data(Kind::Float, None, &[4], fill)
                .try_to_vec()
                .unwrap()
        };
        assert_eq!(floats(Fill::Halves), [-1.5, -0.5, 0.5, 1.5]);
        assert_eq!(
            floats(Fill::Tiny),
            [TINY, -2.0 * TINY, 3.0 * TINY, -4.0 * TINY]
        );
        // 1 + x rounds: ln(1 + x) is not ln_1p(x).
        assert_ne!(1.0 + TINY - 1.0, TINY);
        let ints: Vec<i64> = fill_data(Kind::Int, None, &[3], Fill::Halves)
            .try_to_vec()
            .unwrap();
        assert_eq!(ints, [-1, 0, 1]);
        let ints: Vec<i64> = fill_data(Kind::Int, None, &[3], Fill::Tiny)
            .try_to_vec()
            .unwrap();
        assert_eq!(ints, [1, -2, 3]);
        // Normal in the narrowest float dtype: F16's smallest normal is 2^-14.
        assert!(TINY >= f32::from(f16::MIN_POSITIVE));
    }
}
