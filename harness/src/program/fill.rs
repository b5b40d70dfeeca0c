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
}

macro_rules! float_edges {
    ($($t:ty: $neg_zero:expr, $subnormal:expr;)*) => {$(
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
        }
    )*};
}

float_edges! {
    f64: -0.0, f64::from_bits(1);
    f32: -0.0, f32::from_bits(1);
    f16: f16::NEG_ZERO, f16::from_bits(1);
    bf16: bf16::NEG_ZERO, bf16::from_bits(1);
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
    }
}

macro_rules! int_edge {
    ($t:ty, $edge:expr) => {
        match $edge {
            Edge::Max | Edge::Mixed | Edge::Nan | Edge::Inf => <$t>::MAX,
            Edge::Min | Edge::NegInf => <$t>::MIN,
            Edge::NegZero => 0,
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
    // Every plain fill is start + step * i.
    let (step, start) = match fill {
        Fill::Zeros => (0, 0),
        Fill::Ones => (0, 1),
        Fill::Arange => (1, 0),
        Fill::Value(v) => (0, i64::from(v)),
        Fill::Edge(edge) => return edge_data(edge_dtype(kind, dtype), shape, n, edge),
    };
    let value = |i: usize| start + step * i as i64;
    match kind {
        Kind::Float => TensorData::new((0..n).map(|i| value(i) as f32).collect(), shape),
        Kind::Int => TensorData::new((0..n).map(value).collect::<Vec<i64>>(), shape),
        Kind::Bool => TensorData::new(
            (0..n).map(|i| value(i) % 2 != 0).collect::<Vec<bool>>(),
            shape,
        ),
    }
}

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
    }
}
