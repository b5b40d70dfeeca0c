//! A [`Program`] back to fuzzer bytes that decode to the same program, so every stored case can
//! seed the fuzzer: the inverse of `decode.rs` and of `arbitrary`'s derived decoding.
//!
//! `arbitrary` 1.x reads forward only: integers little-endian, a bool as a byte's low bit, an
//! enum variant from a `u32` (`index = (x * count) >> 32`), a `Vec` as a "keep going" bool before
//! each element and a false one after, struct fields in declaration order. serde visits the same
//! fields in the same order, so a small `serde::Serializer` writes that format for every step
//! type; the only thing serde does not know is how many variants an enum has ([`VARIANTS`]).

use serde::ser::{self, Impossible, Serialize};

use super::decode::STEP_KINDS;
use super::step::{DeviceRef, Step};
use super::Program;

/// Variant counts of the enums steps contain, by Rust name. A count that falls behind its enum
/// breaks the round trip, which `encode_round_trips_on_random_programs` checks on thousands of
/// programs.
const VARIANTS: &[(&str, u32)] = &[
    ("Step", 10),
    ("Op", 18),
    ("Kind", 3),
    ("DeviceRef", 4),
    ("Fill", 4),
    ("UnaryOp", super::unary::UNARY.len() as u32),
    ("AlongDimOp", super::along_dim::ALONG_DIM.len() as u32),
    ("BinaryOp", super::binary::BINARY.len() as u32),
    ("ScalarOp", super::binary::SCALAR.len() as u32),
    ("CompareOp", super::binary::COMPARE.len() as u32),
    ("LogicOp", 2),
    ("AutodiffMode", 3),
];

/// Why a program cannot be encoded.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EncodeError {
    /// An enum the encoder has no variant count for (add it to `VARIANTS`).
    #[error("no variant count for enum `{0}`")]
    UnknownEnum(String),
    /// A value of a type `arbitrary` decodes differently (floats, strings, maps).
    #[error("cannot encode {0}")]
    Unsupported(&'static str),
    /// The serializer's own message.
    #[error("{0}")]
    Custom(String),
}

impl ser::Error for EncodeError {
    fn custom<T: std::fmt::Display>(msg: T) -> Self {
        EncodeError::Custom(msg.to_string())
    }
}

impl Program {
    /// Fuzzer bytes that [`Program::from_fuzz_bytes`] decodes to this program (a fixed-up one,
    /// as every loaded or decoded program is). Programs with wgpu steps round-trip only where
    /// wgpu is enabled: elsewhere decoding turns wgpu into Flex.
    pub fn to_fuzz_bytes(&self) -> Result<Vec<u8>, EncodeError> {
        let mut out = Bytes(Vec::new());
        // Every step kind on in the swarm mask.
        out.0
            .extend_from_slice(&(((1u32 << STEP_KINDS.len()) - 1) as u16).to_le_bytes());
        for step in &self.steps {
            step.serialize(&mut out)?;
            // `decode::bias` reads one more byte for these two; 0 keeps the step as it is.
            let biased = match step {
                Step::EnterScope {
                    device: DeviceRef::Flex | DeviceRef::FlexAutodiff,
                } => true,
                Step::ExitScope { outputs, .. } => outputs.is_empty(),
                _ => false,
            };
            if biased {
                out.0.push(0);
            }
        }
        Ok(out.0)
    }
}

/// The variant `index` of a `count`-variant enum as the `u32` arbitrary maps back to it.
fn variant_u32(index: u32, count: u32) -> u32 {
    // The smallest x with (x * count) >> 32 == index.
    let x = (u64::from(index) << 32).div_ceil(u64::from(count));
    x as u32
}

struct Bytes(Vec<u8>);

impl Bytes {
    fn variant(&mut self, name: &'static str, index: u32) -> Result<(), EncodeError> {
        let count = VARIANTS
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, c)| *c)
            .ok_or_else(|| EncodeError::UnknownEnum(name.to_string()))?;
        self.0
            .extend_from_slice(&variant_u32(index, count).to_le_bytes());
        Ok(())
    }
}

macro_rules! le {
    ($($method:ident: $ty:ty;)*) => {
        $(fn $method(self, v: $ty) -> Result<(), EncodeError> {
            self.0.extend_from_slice(&v.to_le_bytes());
            Ok(())
        })*
    };
}

macro_rules! unsupported {
    ($($method:ident($($arg:ty),*) -> $ret:ty: $what:literal;)*) => {
        $(fn $method(self, $(_: $arg),*) -> Result<$ret, EncodeError> {
            Err(EncodeError::Unsupported($what))
        })*
    };
}

impl ser::Serializer for &mut Bytes {
    type Ok = ();
    type Error = EncodeError;
    type SerializeSeq = Self;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Impossible<(), EncodeError>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    le! {
        serialize_i8: i8; serialize_i16: i16; serialize_i32: i32; serialize_i64: i64;
        serialize_u8: u8; serialize_u16: u16; serialize_u32: u32; serialize_u64: u64;
    }

    fn serialize_bool(self, v: bool) -> Result<(), EncodeError> {
        self.0.push(u8::from(v));
        Ok(())
    }

    unsupported! {
        serialize_f32(f32) -> (): "a float";
        serialize_f64(f64) -> (): "a float";
        serialize_char(char) -> (): "a char";
        serialize_str(&str) -> (): "a string";
        serialize_bytes(&[u8]) -> (): "raw bytes";
        serialize_none() -> (): "an option";
        serialize_unit() -> (): "a unit";
        serialize_unit_struct(&'static str) -> (): "a unit struct";
        serialize_map(Option<usize>) -> Self::SerializeMap: "a map";
    }

    fn serialize_some<T: ?Sized + Serialize>(self, _: &T) -> Result<(), EncodeError> {
        Err(EncodeError::Unsupported("an option"))
    }

    fn serialize_unit_variant(
        self,
        name: &'static str,
        index: u32,
        _: &'static str,
    ) -> Result<(), EncodeError> {
        self.variant(name, index)
    }

    fn serialize_newtype_struct<T: ?Sized + Serialize>(
        self,
        _: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        value.serialize(self)
    }

    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        name: &'static str,
        index: u32,
        _: &'static str,
        value: &T,
    ) -> Result<(), EncodeError> {
        self.variant(name, index)?;
        value.serialize(self)
    }

    fn serialize_seq(self, _: Option<usize>) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_tuple(self, _: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_tuple_struct(self, _: &'static str, _: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_tuple_variant(
        self,
        name: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, EncodeError> {
        self.variant(name, index)?;
        Ok(self)
    }

    fn serialize_struct(self, _: &'static str, _: usize) -> Result<Self, EncodeError> {
        Ok(self)
    }

    fn serialize_struct_variant(
        self,
        name: &'static str,
        index: u32,
        _: &'static str,
        _: usize,
    ) -> Result<Self, EncodeError> {
        self.variant(name, index)?;
        Ok(self)
    }
}

impl ser::SerializeSeq for &mut Bytes {
    type Ok = ();
    type Error = EncodeError;

    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), EncodeError> {
        // `arbitrary_iter`'s "keep going" flag before each element.
        self.0.push(1);
        value.serialize(&mut **self)
    }

    fn end(self) -> Result<(), EncodeError> {
        self.0.push(0);
        Ok(())
    }
}

macro_rules! in_order {
    ($($trait:ident :: $method:ident;)*) => {
        $(impl ser::$trait for &mut Bytes {
            type Ok = ();
            type Error = EncodeError;

            fn $method<T: ?Sized + Serialize>(&mut self, value: &T) -> Result<(), EncodeError> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), EncodeError> {
                Ok(())
            }
        })*
    };
}

in_order! {
    SerializeTuple::serialize_element;
    SerializeTupleStruct::serialize_field;
    SerializeTupleVariant::serialize_field;
}

macro_rules! named_in_order {
    ($($trait:ident;)*) => {
        $(impl ser::$trait for &mut Bytes {
            type Ok = ();
            type Error = EncodeError;

            fn serialize_field<T: ?Sized + Serialize>(
                &mut self,
                _: &'static str,
                value: &T,
            ) -> Result<(), EncodeError> {
                value.serialize(&mut **self)
            }

            fn end(self) -> Result<(), EncodeError> {
                Ok(())
            }
        })*
    };
}

// Field names are not encoded: arbitrary reads fields by position.
named_in_order! {
    SerializeStruct;
    SerializeStructVariant;
}
