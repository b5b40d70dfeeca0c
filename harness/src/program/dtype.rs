//! The storage dtypes a program names: every float, int and bool storage Burn routes, as one
//! table with each dtype's kind, Burn value, Rust path and precision.

use arbitrary::Arbitrary;
use burn_backend::{BoolStore, DType, FloatDType, IntDType};
use serde::{Deserialize, Serialize};

use super::kind::Kind;

/// A storage dtype a `Create` step or a `Cast` step names. A step without one uses what it used
/// before dtypes were program data: the device's default dtype of the kind.
#[derive(
    Arbitrary, Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord,
)]
#[serde(rename_all = "snake_case")]
pub enum Dtype {
    /// `DType::F64`.
    F64,
    /// `DType::F32`.
    F32,
    /// `DType::F16` (IEEE half).
    F16,
    /// `DType::BF16` (bfloat16).
    Bf16,
    /// `DType::I64`.
    I64,
    /// `DType::I32`.
    I32,
    /// `DType::I16`.
    I16,
    /// `DType::I8`.
    I8,
    /// `DType::U64`.
    U64,
    /// `DType::U32`.
    U32,
    /// `DType::U16`.
    U16,
    /// `DType::U8`.
    U8,
    /// `DType::Bool(BoolStore::Native)`.
    BoolNative,
    /// `DType::Bool(BoolStore::U8)`.
    BoolU8,
    /// `DType::Bool(BoolStore::U32)`.
    BoolU32,
}

/// What the table says of one dtype.
pub struct DtypeSpec {
    /// The dtype.
    pub dtype: Dtype,
    /// Its Rust path under `burn::tensor` (as reproducers print it).
    pub path: &'static str,
    /// Burn's value as `{:?}` prints it (`F16`, `Bool(Native)`): the name a run's trace and
    /// Burn's panic messages give it.
    pub name: &'static str,
    /// The tensor kind it stores.
    pub kind: Kind,
    /// Float dtypes: the bits of the significand's fraction (10 for F16, 7 for BF16), from which
    /// a value's rounding follows. Ints: the bits of the value range, with `signed`.
    pub bits: u32,
    /// Ints: whether the range is signed.
    pub signed: bool,
}

const fn spec(
    dtype: Dtype,
    path: &'static str,
    name: &'static str,
    kind: Kind,
    bits: u32,
    signed: bool,
) -> DtypeSpec {
    DtypeSpec {
        dtype,
        path,
        name,
        kind,
        bits,
        signed,
    }
}

/// Every dtype, in the enum's order.
pub const DTYPES: [DtypeSpec; 15] = [
    spec(Dtype::F64, "DType::F64", "F64", Kind::Float, 52, true),
    spec(Dtype::F32, "DType::F32", "F32", Kind::Float, 23, true),
    spec(Dtype::F16, "DType::F16", "F16", Kind::Float, 10, true),
    spec(Dtype::Bf16, "DType::BF16", "BF16", Kind::Float, 7, true),
    spec(Dtype::I64, "DType::I64", "I64", Kind::Int, 64, true),
    spec(Dtype::I32, "DType::I32", "I32", Kind::Int, 32, true),
    spec(Dtype::I16, "DType::I16", "I16", Kind::Int, 16, true),
    spec(Dtype::I8, "DType::I8", "I8", Kind::Int, 8, true),
    spec(Dtype::U64, "DType::U64", "U64", Kind::Int, 64, false),
    spec(Dtype::U32, "DType::U32", "U32", Kind::Int, 32, false),
    spec(Dtype::U16, "DType::U16", "U16", Kind::Int, 16, false),
    spec(Dtype::U8, "DType::U8", "U8", Kind::Int, 8, false),
    spec(
        Dtype::BoolNative,
        "DType::Bool(BoolStore::Native)",
        "Bool(Native)",
        Kind::Bool,
        1,
        false,
    ),
    spec(
        Dtype::BoolU8,
        "DType::Bool(BoolStore::U8)",
        "Bool(U8)",
        Kind::Bool,
        1,
        false,
    ),
    spec(
        Dtype::BoolU32,
        "DType::Bool(BoolStore::U32)",
        "Bool(U32)",
        Kind::Bool,
        1,
        false,
    ),
];

impl Dtype {
    /// The dtype's row of [`DTYPES`].
    pub fn spec(self) -> &'static DtypeSpec {
        &DTYPES[self as usize]
    }

    /// Whether some device stores a tensor of its kind in it by default (F32; I32 on Flex, I64
    /// on capture and from argmax; `Bool(Native)` on Flex, `Bool(U8)` on capture, `Bool(U32)` on
    /// wgpu). Any other dtype a run holds, only a program that names it makes.
    pub fn is_a_default(self) -> bool {
        matches!(
            self,
            Dtype::F32
                | Dtype::I32
                | Dtype::I64
                | Dtype::BoolNative
                | Dtype::BoolU8
                | Dtype::BoolU32
        )
    }

    /// The kind of tensor it stores.
    pub fn kind(self) -> Kind {
        self.spec().kind
    }

    /// The Rust element type of its values (`f16`, `u8`; `bool` for every bool storage), as a
    /// reproducer's literals name it.
    pub fn rust_type(self) -> &'static str {
        match self {
            Dtype::F64 => "f64",
            Dtype::F32 => "f32",
            Dtype::F16 => "f16",
            Dtype::Bf16 => "bf16",
            Dtype::I64 => "i64",
            Dtype::I32 => "i32",
            Dtype::I16 => "i16",
            Dtype::I8 => "i8",
            Dtype::U64 => "u64",
            Dtype::U32 => "u32",
            Dtype::U16 => "u16",
            Dtype::U8 => "u8",
            Dtype::BoolNative | Dtype::BoolU8 | Dtype::BoolU32 => "bool",
        }
    }

    /// Burn's value.
    pub fn burn(self) -> DType {
        match self {
            Dtype::F64 => DType::F64,
            Dtype::F32 => DType::F32,
            Dtype::F16 => DType::F16,
            Dtype::Bf16 => DType::BF16,
            Dtype::I64 => DType::I64,
            Dtype::I32 => DType::I32,
            Dtype::I16 => DType::I16,
            Dtype::I8 => DType::I8,
            Dtype::U64 => DType::U64,
            Dtype::U32 => DType::U32,
            Dtype::U16 => DType::U16,
            Dtype::U8 => DType::U8,
            Dtype::BoolNative => DType::Bool(BoolStore::Native),
            Dtype::BoolU8 => DType::Bool(BoolStore::U8),
            Dtype::BoolU32 => DType::Bool(BoolStore::U32),
        }
    }

    /// The dtype of Burn's value `dtype`, if a program can name it (not `Flex32` or `QFloat`).
    pub fn from_burn(dtype: DType) -> Option<Dtype> {
        Some(match dtype {
            DType::F64 => Dtype::F64,
            DType::F32 => Dtype::F32,
            DType::F16 => Dtype::F16,
            DType::BF16 => Dtype::Bf16,
            DType::I64 => Dtype::I64,
            DType::I32 => Dtype::I32,
            DType::I16 => Dtype::I16,
            DType::I8 => Dtype::I8,
            DType::U64 => Dtype::U64,
            DType::U32 => Dtype::U32,
            DType::U16 => Dtype::U16,
            DType::U8 => Dtype::U8,
            DType::Bool(BoolStore::Native) => Dtype::BoolNative,
            DType::Bool(BoolStore::U8) => Dtype::BoolU8,
            DType::Bool(BoolStore::U32) => Dtype::BoolU32,
            DType::Flex32 | DType::QFloat(_) => return None,
        })
    }

    /// The dtype whose Burn value `{:?}` prints as `name` (`I64`, `Bool(U8)`), as traces,
    /// signatures and Burn's messages name it.
    pub fn from_name(name: &str) -> Option<Dtype> {
        DTYPES.iter().find(|s| s.name == name).map(|s| s.dtype)
    }

    /// Burn's float dtype, for a float dtype.
    pub fn float(self) -> Option<FloatDType> {
        (self.kind() == Kind::Float).then(|| self.burn().into())
    }

    /// Burn's int dtype, for an int dtype.
    pub fn int(self) -> Option<IntDType> {
        (self.kind() == Kind::Int).then(|| self.burn().into())
    }

    /// The Rust expression of the dtype a `cast` takes (`FloatDType::F16`, `IntDType::U8`).
    pub fn cast_path(self) -> String {
        let name = self.spec().path.trim_start_matches("DType::");
        match self.kind() {
            Kind::Float => format!("FloatDType::{name}"),
            Kind::Int => format!("IntDType::{name}"),
            Kind::Bool => self.spec().path.to_string(),
        }
    }

    /// Ints: the smallest and largest value the dtype holds.
    pub fn int_range(self) -> Option<(i128, i128)> {
        let s = self.spec();
        (s.kind == Kind::Int).then(|| {
            if s.signed {
                (-(1i128 << (s.bits - 1)), (1i128 << (s.bits - 1)) - 1)
            } else {
                (0, (1i128 << s.bits) - 1)
            }
        })
    }

    /// Floats: `x` rounded to the dtype (to nearest, ties to even), as Burn stores it; other
    /// dtypes give `x`.
    pub fn round(self, x: f64) -> f64 {
        match self {
            Dtype::F32 => f64::from(x as f32),
            Dtype::F16 => f64::from(burn_backend::f16::from_f64(x)),
            Dtype::Bf16 => f64::from(burn_backend::bf16::from_f64(x)),
            _ => x,
        }
    }

    /// Floats: the dtype's machine epsilon (the gap above 1.0); ints and bools: 0.
    pub fn epsilon(self) -> f64 {
        match self.kind() {
            Kind::Float => (-f64::from(self.spec().bits)).exp2(),
            Kind::Int | Kind::Bool => 0.0,
        }
    }

    /// Floats: the largest finite value; ints and bools: infinity (no overflow to judge here).
    pub fn largest(self) -> f64 {
        match self {
            Dtype::F64 => f64::MAX,
            Dtype::F32 => f64::from(f32::MAX),
            Dtype::F16 => f64::from(burn_backend::f16::MAX),
            Dtype::Bf16 => f64::from(burn_backend::bf16::MAX),
            _ => f64::INFINITY,
        }
    }

    /// Floats: the smallest positive normal value (below it, subnormals); ints and bools: 0.
    pub fn smallest_normal(self) -> f64 {
        match self {
            Dtype::F64 => f64::MIN_POSITIVE,
            Dtype::F32 => f64::from(f32::MIN_POSITIVE),
            Dtype::F16 => f64::from(burn_backend::f16::MIN_POSITIVE),
            Dtype::Bf16 => f64::from(burn_backend::bf16::MIN_POSITIVE),
            _ => 0.0,
        }
    }

    /// Floats: the smallest positive (subnormal) value, the gap between neighbours near zero;
    /// ints and bools: 0.
    pub fn tiniest(self) -> f64 {
        match self {
            Dtype::F64 => f64::from_bits(1),
            Dtype::F32 => f64::from(f32::from_bits(1)),
            Dtype::F16 => f64::from(burn_backend::f16::from_bits(1)),
            Dtype::Bf16 => f64::from(burn_backend::bf16::from_bits(1)),
            _ => 0.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_table_is_in_the_enums_order_and_each_path_names_the_burn_value() {
        for (i, s) in DTYPES.iter().enumerate() {
            assert_eq!(s.dtype as usize, i);
            let debug = format!("{:?}", s.dtype.burn());
            let path = s
                .path
                .trim_start_matches("DType::")
                .replace("BoolStore::", "");
            assert_eq!(debug, path, "{:?}", s.dtype);
            assert_eq!(debug, s.name, "{:?}", s.dtype);
            assert_eq!(Dtype::from_burn(s.dtype.burn()), Some(s.dtype));
        }
    }

    #[test]
    fn int_ranges_are_those_of_the_rust_types() {
        assert_eq!(
            Dtype::I8.int_range(),
            Some((i8::MIN.into(), i8::MAX.into()))
        );
        assert_eq!(Dtype::U16.int_range(), Some((0, u16::MAX.into())));
        assert_eq!(
            Dtype::I64.int_range(),
            Some((i64::MIN.into(), i64::MAX.into()))
        );
        assert_eq!(Dtype::U64.int_range(), Some((0, u64::MAX.into())));
        assert_eq!(Dtype::F16.int_range(), None);
    }

    #[test]
    fn rounding_to_a_half_dtype_keeps_what_it_can_hold_and_rounds_what_it_cannot() {
        assert_eq!(Dtype::F16.round(1.0 + 1.0 / 1024.0), 1.0 + 1.0 / 1024.0);
        assert_eq!(Dtype::F16.round(1.0 + 1.0 / 4096.0), 1.0);
        assert_eq!(Dtype::Bf16.round(257.0), 256.0);
        assert_eq!(Dtype::F16.epsilon(), 1.0 / 1024.0);
        assert_eq!(Dtype::F16.largest(), 65504.0);
        assert_eq!(Dtype::F16.tiniest(), (-24f64).exp2());
    }
}
