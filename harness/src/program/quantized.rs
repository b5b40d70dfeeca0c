//! The quantized op table and the quantization schemes a program names: each entry quantizes
//! its float operand with the step's scheme (`quantize_dynamic`), runs one of Burn's quantized
//! paths on it (`q_*` ops, reads, transactions) and dequantizes, so the step's value is a float.
//!
//! An entry is `name: tolerance, x, s => call, reference layout, round_trips n;`: `x` is the
//! float operand, `s` the scheme (a `QuantScheme`), the reference the layout the reference
//! oracle judges it by (compiled only there: an entry without one does not compile), and `n`
//! how many times the call quantizes (an op Burn runs on the dequantized values quantizes
//! again). Entries take a float of any rank and give back its shape. A scheme is a row of
//! [`SCHEMES`]: its Rust expression, its value grid (what the reference judges a round trip
//! against) and the scale's storage. Schemes whose block must divide the shape are left out (a
//! guard of `quantize_dynamic`, not a path), as are two-level schemes: their block scales lose
//! every value more than 2^18 below the largest, as cubecl-common documents (`quant/scheme.rs`).

use burn::tensor::quantization::{QuantScheme, QuantStore, QuantValue, ScaleDtype};

use super::kind::Kind;
use super::table::{
    op_tolerance, table_index, OpSpec, ResultDtype, Spread, Tolerance, Unspecified,
};

/// The table; see the module doc for the entry syntax.
macro_rules! quantized_ops {
    ($then:ident) => {
        $then! {
            // The plainest entry first (the minimizer's replacement for every other).
            roundtrip: balanced, x, s => x.quantize_dynamic(&s).dequantize(),
                reference identity_positions, round_trips 1;
            // Read back as quantized data (q_into_data), loaded again (q_from_data) and moved
            // to its own device (q_to_device). The loaded tensor shares an array with the
            // quantized one so that it takes its rank (a reproducer has no other to infer).
            read: balanced, x, s => {
                let q = x.quantize_dynamic(&s); let d = q.device(); let data = q.clone().into_data();
                let [_, loaded] = [q, Tensor::from_data(data, &d)]; loaded.to_device(&d).dequantize() },
                reference identity_positions, round_trips 1;
            // Read in a `Transaction`, Burn's batched read, and loaded again.
            transaction: balanced, x, s => {
                let q = x.quantize_dynamic(&s); let d = q.device();
                let data = burn::tensor::Transaction::default().register(q.clone()).execute().remove(0);
                let [_, loaded] = [q, Tensor::from_data(data, &d)]; loaded.dequantize() },
                reference identity_positions, round_trips 1;
            // Layout ops Burn runs on the quantized codes (q_reshape, q_flip, q_permute,
            // q_swap_dims, q_expand, q_slice, q_select), each giving the operand's shape back.
            reshape: balanced, x, s => {
                let sh = x.shape();
                x.quantize_dynamic(&s).flatten::<1>(0, sh.num_dims() - 1).reshape(sh).dequantize() },
                reference identity_positions, round_trips 1;
            flip: balanced, x, s => x.quantize_dynamic(&s).flip([0]).dequantize(),
                reference |s| flip_positions(s, 0), round_trips 1;
            permute: balanced, x, s => {
                let n = x.dims().len();
                x.quantize_dynamic(&s)
                    .permute(core::array::from_fn(|i| (i + 1) % n))
                    .permute(core::array::from_fn(|i| (i + n - 1) % n))
                    .dequantize() },
                reference identity_positions, round_trips 1;
            swap_dims: balanced, x, s => {
                let n = x.dims().len();
                x.quantize_dynamic(&s).swap_dims(0, n - 1).swap_dims(0, n - 1).dequantize() },
                reference identity_positions, round_trips 1;
            expand_first: balanced, x, s => {
                let sh = x.shape();
                x.quantize_dynamic(&s).narrow(0, 0, 1).expand(sh).dequantize() },
                reference |s| first_positions(s, 0), round_trips 1;
            select_reversed: balanced, x, s => {
                let n = x.dims()[0]; let d = x.device();
                x.quantize_dynamic(&s)
                    .select(0, Tensor::<1, burn::tensor::Int>::arange(0..n as i64, &d).flip([0]))
                    .dequantize() },
                reference |s| {
                    flip_positions(s, 0)
                }, round_trips 1;
            // A float op on a quantized operand: q_add_scalar dequantizes it to the device's
            // float dtype and adds, and quantizes the sum again only where the device's
            // quantization propagation says Propagate; its default, Inhibit, hands the float
            // back (burn-backend backend/ops/qtensor.rs:79-97, burn-std
            // tensor/quantization/base.rs:62-73), so one round trip.
            add_zero: balanced, x, s => x.quantize_dynamic(&s).add_scalar(0.0).dequantize(),
                reference identity_positions, round_trips 1;
        }
    };
}
pub(crate) use quantized_ops;

/// One entry of the table.
pub type QuantizedSpec = OpSpec;

macro_rules! quantized_specs {
    ($($name:ident : $tol:ident, $x:ident, $s:ident => $call:expr,
        reference $reference:expr, round_trips $trips:literal;)+) => {
        /// The quantized ops, in table order.
        pub const QUANTIZED: &[QuantizedSpec] = &[$(OpSpec {
            name: stringify!($name),
            kinds: &[Kind::Float],
            result: None,
            // The dequantized float is in the device's default float dtype (an F16 operand
            // comes back F32 on Flex): Burn states no other.
            dtype: ResultDtype::Default,
            tolerance: op_tolerance!($tol),
            unspecified: Unspecified::Quantized,
            // One scale for the whole tensor.
            spread: Spread::Whole,
            call: stringify!($call),
        }),+];
    };
}
quantized_ops!(quantized_specs);

table_index! {
    /// A quantized op: an index into [`QUANTIZED`], stored by name.
    QuantizedOp, QUANTIZED, "quantized"
}

impl QuantizedOp {
    /// Its entry.
    pub fn spec(self) -> &'static QuantizedSpec {
        &QUANTIZED[self.index()]
    }

    /// The call over the operand `x` with the scheme `scheme` in place of `s`.
    pub fn call_on(self, x: &str, scheme: Scheme) -> String {
        super::table::render(self.spec().call, &[("x", x), ("s", scheme.spec().path)])
    }
}

/// The values a scheme's codes stand for, times the scale.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Grid {
    /// Integer codes over the value's `range()`, `min..=max`: the scale is
    /// `2 max|x| / (max - min)`, so a round trip moves an element by at most half a scale
    /// (rounding, or the clamp of a `Q*F` value's `max + 0.5` to `max`).
    Int {
        /// Codes from the value's `range()`: its `max - min`.
        span: f64,
    },
    /// A minifloat with `mantissa` fraction bits whose largest value is `max`: the scale is
    /// `max|x| / max`, and a round trip moves an element by at most half an ulp of the format at
    /// the element, below one ulp at the largest.
    Float {
        /// Fraction bits.
        mantissa: i32,
        /// Largest finite value.
        max: f64,
        /// Smallest normal value (below it, subnormals spaced by it times `2^-mantissa`).
        smallest_normal: f64,
    },
}

impl Grid {
    /// The value's `range()` width, `max - min`, that twice the largest magnitude is divided by
    /// for the scale (a minifloat's range is symmetric: twice its largest value).
    pub fn span(self) -> f64 {
        match self {
            Grid::Int { span } => span,
            Grid::Float { max, .. } => 2.0 * max,
        }
    }
}

/// One quantization scheme a program can name.
#[derive(Debug)]
pub struct SchemeSpec {
    /// The name program files store.
    pub name: &'static str,
    /// The scheme as a Rust expression (what reproducers print).
    pub path: &'static str,
    /// Makes the scheme.
    pub make: fn() -> QuantScheme,
    /// Its value grid.
    pub grid: Grid,
    /// The largest scale its scale storage holds (`f64::MAX` for f32 scales past any f32
    /// value): a tensor needing a larger one clamps its codes, beyond what the grid bounds.
    pub largest_scale: f64,
    /// The smallest scale it holds (0 for f32): a scale below it is stored rounded up to it
    /// (cubecl-common `ScaleDtype::round_up`), a coarser grid for the tiny values that need it.
    pub smallest_scale: f64,
}

const Q8F: Grid = Grid::Int { span: 255.0 };
const Q8S: Grid = Grid::Int { span: 254.0 };
const Q4F: Grid = Grid::Int { span: 15.0 };
const Q4S: Grid = Grid::Int { span: 14.0 };
const Q2S: Grid = Grid::Int { span: 2.0 };

/// Every scheme, Burn's default first (the minimizer's replacement for every other). The
/// stores are the three Burn has (`Native`, `PackedU32` over the innermost dim, `PackedNative`
/// for e2m1's pairs); the scales one per tensor, or one per element (a block of 1, which every
/// shape divides) in f32 or f16.
pub const SCHEMES: &[SchemeSpec] = &[
    SchemeSpec::f32_scaled(
        "q8f_packed",
        "burn::tensor::quantization::QuantScheme::default()",
        QuantScheme::default,
        Q8F,
    ),
    SchemeSpec::f32_scaled(
        "q8s_native",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q8S).with_store(burn::tensor::quantization::QuantStore::Native)",
        || {
            QuantScheme::default()
                .with_value(QuantValue::Q8S)
                .with_store(QuantStore::Native)
        },
        Q8S,
    ),
    SchemeSpec::f32_scaled(
        "q4f_packed",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q4F)",
        || QuantScheme::default().with_value(QuantValue::Q4F),
        Q4F,
    ),
    SchemeSpec::f32_scaled(
        "q4s_native",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q4S).with_store(burn::tensor::quantization::QuantStore::Native)",
        || {
            QuantScheme::default()
                .with_value(QuantValue::Q4S)
                .with_store(QuantStore::Native)
        },
        Q4S,
    ),
    SchemeSpec::f32_scaled(
        "q2s_packed",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q2S)",
        || QuantScheme::default().with_value(QuantValue::Q2S),
        Q2S,
    ),
    SchemeSpec::f32_scaled(
        "e4m3_native",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::E4M3).with_store(burn::tensor::quantization::QuantStore::Native)",
        || {
            QuantScheme::default()
                .with_value(QuantValue::E4M3)
                .with_store(QuantStore::Native)
        },
        Grid::Float {
            mantissa: 3,
            max: 448.0,
            smallest_normal: 0.015625,
        },
    ),
    SchemeSpec::f32_scaled(
        "e5m2_native",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::E5M2).with_store(burn::tensor::quantization::QuantStore::Native)",
        || {
            QuantScheme::default()
                .with_value(QuantValue::E5M2)
                .with_store(QuantStore::Native)
        },
        Grid::Float {
            mantissa: 2,
            max: 57344.0,
            smallest_normal: 6.103515625e-5,
        },
    ),
    SchemeSpec::f32_scaled(
        "e2m1_packed_native",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::E2M1).with_store(burn::tensor::quantization::QuantStore::PackedNative(0))",
        || {
            QuantScheme::default()
                .with_value(QuantValue::E2M1)
                .with_store(QuantStore::PackedNative(0))
        },
        Grid::Float {
            mantissa: 1,
            max: 6.0,
            smallest_normal: 1.0,
        },
    ),
    SchemeSpec::f32_scaled(
        "q8s_per_element",
        "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q8S).with_store(burn::tensor::quantization::QuantStore::Native).per_block([1], burn::tensor::quantization::ScaleDtype::F32)",
        || {
            QuantScheme::default()
                .with_value(QuantValue::Q8S)
                .with_store(QuantStore::Native)
                .per_block([1], ScaleDtype::F32)
        },
        Q8S,
    ),
    SchemeSpec {
        name: "q4s_per_element_f16",
        path: "burn::tensor::quantization::QuantScheme::default().with_value(burn::tensor::quantization::QuantValue::Q4S).per_block([1], burn::tensor::quantization::ScaleDtype::F16)",
        make: || {
            QuantScheme::default()
                .with_value(QuantValue::Q4S)
                .per_block([1], ScaleDtype::F16)
        },
        grid: Q4S,
        largest_scale: 65504.0,
        // f16's smallest subnormal, 2^-24.
        smallest_scale: 5.960_464_477_539_063e-8,
    },
];

table_index! {
    /// A quantization scheme: an index into [`SCHEMES`], stored by name.
    Scheme, SCHEMES, "quantization scheme"
}

impl Scheme {
    /// Burn's default scheme, the table's first.
    pub const DEFAULT: Scheme = Scheme::FIRST;

    /// Its row.
    pub fn spec(self) -> &'static SchemeSpec {
        &SCHEMES[self.index()]
    }

    /// The scheme itself.
    pub fn burn(self) -> QuantScheme {
        (self.spec().make)()
    }
}

impl SchemeSpec {
    /// A scheme whose scales are f32 (no bound of their storage's own).
    const fn f32_scaled(
        name: &'static str,
        path: &'static str,
        make: fn() -> QuantScheme,
        grid: Grid,
    ) -> SchemeSpec {
        SchemeSpec {
            name,
            path,
            make,
            grid,
            largest_scale: f64::MAX,
            smallest_scale: 0.0,
        }
    }

    /// How far a round trip may move any element of a tensor whose largest magnitude is
    /// `largest`, with a margin of 1% for the scale's own rounding; `None` where the scale
    /// overflows its storage (the codes clamp: the value is not pinned down).
    pub fn step(&self, largest: f64) -> Option<f64> {
        let (scale, error) = match self.grid {
            Grid::Int { span } => {
                let scale = 2.0 * largest / span;
                (scale, scale)
            }
            Grid::Float { mantissa, max, .. } => {
                let scale = largest / max;
                // One ulp at the largest code; the subnormal spacing near zero, times the
                // scale, is finer than that in every format of the table.
                (scale, largest * 2f64.powi(-mantissa))
            }
        };
        // A scale rounded up to the storage's smallest moves no element further than to zero.
        let error = error.max(largest.min(self.smallest_scale));
        (scale <= self.largest_scale).then_some(1.01 * error)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_every_scheme_is_burns_own_with_its_grid() {
        let mut names: Vec<&str> = SCHEMES.iter().map(|s| s.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), SCHEMES.len());
        assert_eq!(Scheme::DEFAULT.burn(), QuantScheme::default());
        for scheme in Scheme::all() {
            let burn = scheme.burn();
            let (min, max) = burn.value.range();
            match scheme.spec().grid {
                Grid::Int { span } => assert_eq!(span, f64::from(max - min), "{scheme:?}"),
                Grid::Float { max: top, .. } => assert_eq!(top, f64::from(max), "{scheme:?}"),
            }
        }
    }

    #[test]
    fn a_call_prints_with_its_scheme_in_place_of_s() {
        let roundtrip = QuantizedOp::named("roundtrip").unwrap();
        let q4 = Scheme::named("q4f_packed").unwrap();
        assert_eq!(
            roundtrip.call_on("t0.clone()", q4),
            "t0.clone().quantize_dynamic(& burn::tensor::quantization::QuantScheme::default()\
             .with_value(burn::tensor::quantization::QuantValue::Q4F)).dequantize()"
        );
    }

    #[test]
    fn a_round_trip_step_is_half_a_scale_or_an_ulp_and_open_past_the_scale_storage() {
        let q8s = Scheme::named("q8s_native").unwrap().spec();
        assert!((q8s.step(127.0).unwrap() - 1.01).abs() < 1e-12);
        let e2m1 = Scheme::named("e2m1_packed_native").unwrap().spec();
        assert!((e2m1.step(6.0).unwrap() - 3.03).abs() < 1e-12);
        let f16 = Scheme::named("q4s_per_element_f16").unwrap().spec();
        assert!(f16.step(7.0 * 65504.0).is_some());
        assert!(f16.step(7.0 * 70000.0).is_none());
    }
}
