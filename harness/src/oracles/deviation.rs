//! What went wrong with a finding, as data: the deviation of Burn's value from the one it should
//! have been, and where it was computed. Root-cause predicates read these, never a summary.

use std::fmt;
use std::str::FromStr;

use burn_backend::DType;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::program::{Dtype, Kind};

/// How a value differs from the one it should be (the definition's, the eager run's, the
/// recorded dtype), or that Burn panicked instead.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Deviation {
    /// NaN where the definition is finite.
    NanForFinite,
    /// An infinity where the definition is finite.
    InfForFinite,
    /// A finite value where the definition is NaN or an infinity.
    FiniteForNonFinite,
    /// A non-finite value where the definition is another one (an infinity for NaN, or the
    /// infinity of the other sign).
    OtherNonFinite,
    /// A value of the opposite sign (zero counts as either).
    WrongSign,
    /// An int that equals the definition modulo 2^bits of its dtype: arithmetic that wrapped.
    Wrap,
    /// Any other wrong value.
    Off,
    /// A value handed back in dtype `got` where `recorded` was due.
    Dtype {
        /// What the graph (or the op's table row) says it should be.
        recorded: Dtype,
        /// What Burn handed back.
        got: Dtype,
    },
    /// A check of Burn's raised a panic (an overflow check of a debug build).
    Panic,
}

impl Deviation {
    /// The deviation of Burn's value `actual` from the definition's `expected`, both as the
    /// reference prints them (a float, `NaN`, `inf`, `-inf`, an int, `true`/`false`), for an
    /// element of dtype `dtype`. `None` when either does not parse.
    pub fn between(expected: &str, actual: &str, dtype: Option<DType>) -> Option<Deviation> {
        let ints = |s: &str| s.trim().parse::<i128>().ok();
        if let (Some(e), Some(a)) = (ints(expected), ints(actual)) {
            let bits = dtype
                .and_then(Dtype::from_burn)
                .filter(|d| d.kind() == Kind::Int)
                .map(|d| d.spec().bits);
            let wrapped = bits.is_some_and(|b| (e - a).rem_euclid(1i128 << b) == 0);
            return Some(if wrapped {
                Deviation::Wrap
            } else if (e < 0) != (a < 0) && e != 0 && a != 0 {
                Deviation::WrongSign
            } else {
                Deviation::Off
            });
        }
        let floats = |s: &str| match s.trim() {
            "true" => Some(1.0),
            "false" => Some(0.0),
            "NaN" | "nan" => Some(f64::NAN),
            other => other.parse::<f64>().ok(),
        };
        let (e, a) = (floats(expected)?, floats(actual)?);
        Some(match (e.is_finite(), a.is_finite()) {
            (true, false) if a.is_nan() => Deviation::NanForFinite,
            (true, false) => Deviation::InfForFinite,
            (false, true) => Deviation::FiniteForNonFinite,
            (false, false) => Deviation::OtherNonFinite,
            (true, true) if e != 0.0 && a != 0.0 && (e < 0.0) != (a < 0.0) => Deviation::WrongSign,
            (true, true) => Deviation::Off,
        })
    }
}

impl fmt::Display for Deviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Deviation::NanForFinite => f.write_str("nan-for-finite"),
            Deviation::InfForFinite => f.write_str("inf-for-finite"),
            Deviation::FiniteForNonFinite => f.write_str("finite-for-non-finite"),
            Deviation::OtherNonFinite => f.write_str("other-non-finite"),
            Deviation::WrongSign => f.write_str("wrong-sign"),
            Deviation::Wrap => f.write_str("wrap"),
            Deviation::Off => f.write_str("off"),
            Deviation::Dtype { recorded, got } => {
                write!(f, "dtype {} for {}", got.spec().name, recorded.spec().name)
            }
            Deviation::Panic => f.write_str("panic"),
        }
    }
}

/// Why a text is not a deviation.
#[derive(Debug, PartialEq, Eq)]
pub struct NotADeviation(pub String);

impl fmt::Display for NotADeviation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a deviation (nan-for-finite, inf-for-finite, finite-for-non-finite, \
             other-non-finite, wrong-sign, wrap, off, panic, or `dtype GOT for RECORDED`): {:?}",
            self.0
        )
    }
}

impl std::error::Error for NotADeviation {}

impl FromStr for Deviation {
    type Err = NotADeviation;

    fn from_str(text: &str) -> Result<Deviation, NotADeviation> {
        let bad = || NotADeviation(text.to_string());
        Ok(match text {
            "nan-for-finite" => Deviation::NanForFinite,
            "inf-for-finite" => Deviation::InfForFinite,
            "finite-for-non-finite" => Deviation::FiniteForNonFinite,
            "other-non-finite" => Deviation::OtherNonFinite,
            "wrong-sign" => Deviation::WrongSign,
            "wrap" => Deviation::Wrap,
            "off" => Deviation::Off,
            "panic" => Deviation::Panic,
            other => {
                let rest = other.strip_prefix("dtype ").ok_or_else(bad)?;
                let (got, recorded) = rest.split_once(" for ").ok_or_else(bad)?;
                Deviation::Dtype {
                    recorded: Dtype::from_name(recorded).ok_or_else(bad)?,
                    got: Dtype::from_name(got).ok_or_else(bad)?,
                }
            }
        })
    }
}

impl Serialize for Deviation {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Deviation {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Deviation, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

/// The backend that computed the wrong value (or raised the panic).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// Flex, eagerly or replaying a graph.
    Flex,
    /// wgpu, eagerly or replaying a graph.
    Wgpu,
}

impl Backend {
    /// Its name in summaries and messages.
    pub fn name(self) -> &'static str {
        match self {
            Backend::Flex => "Flex",
            Backend::Wgpu => "wgpu",
        }
    }
}

/// A finding's facts beside its signature: the op entry it went wrong at (as signatures name
/// steps, `along_dim argmin`, `backward of unary elu`), the dtype that entry's first operand
/// held (a lost dtype's recorded one), the deviation and the backend. Each is `None` where the
/// finding's source does not know it; a root-cause predicate that names a field holds only for
/// a finding that knows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Facts {
    /// The op entry.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub entry: Option<String>,
    /// The first operand's dtype.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub dtype: Option<Dtype>,
    /// What went wrong.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub deviation: Option<Deviation>,
    /// Where.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub backend: Option<Backend>,
}

impl Facts {
    /// Whether no fact is known.
    pub fn is_empty(&self) -> bool {
        *self == Facts::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deviation_is_read_from_the_definition_and_burns_value() {
        let i8 = Some(DType::I8);
        assert_eq!(Deviation::between("128", "-128", i8), Some(Deviation::Wrap));
        assert_eq!(
            Deviation::between("1", "-127", i8),
            Some(Deviation::WrongSign)
        );
        assert_eq!(Deviation::between("5", "7", i8), Some(Deviation::Off));
        assert_eq!(
            Deviation::between(
                "9223372036854775808",
                "-9223372036854775808",
                Some(DType::I64)
            ),
            Some(Deviation::Wrap)
        );
        let f32 = Some(DType::F32);
        assert_eq!(
            Deviation::between("1.5", "NaN", f32),
            Some(Deviation::NanForFinite)
        );
        assert_eq!(
            Deviation::between("1.5", "-inf", f32),
            Some(Deviation::InfForFinite)
        );
        assert_eq!(
            Deviation::between("inf", "3", f32),
            Some(Deviation::FiniteForNonFinite)
        );
        assert_eq!(
            Deviation::between("NaN", "inf", f32),
            Some(Deviation::OtherNonFinite)
        );
        assert_eq!(
            Deviation::between("-0.25", "0.25", f32),
            Some(Deviation::WrongSign)
        );
        assert_eq!(Deviation::between("0", "0.25", f32), Some(Deviation::Off));
        assert_eq!(
            Deviation::between("1.5", "1.5000002", f32),
            Some(Deviation::Off)
        );
        assert_eq!(Deviation::between("a value", "1", f32), None);
    }

    #[test]
    fn a_deviation_round_trips_through_its_text() {
        for d in [
            Deviation::NanForFinite,
            Deviation::Wrap,
            Deviation::Panic,
            Deviation::Dtype {
                recorded: Dtype::I32,
                got: Dtype::I64,
            },
        ] {
            assert_eq!(d.to_string().parse::<Deviation>(), Ok(d));
        }
        assert!("dtype I64".parse::<Deviation>().is_err());
        assert!("wrapped".parse::<Deviation>().is_err());
    }
}
