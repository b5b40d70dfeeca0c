//! A finding's class as a value: an oracle's violation class, a catalogue record's tag, or one
//! of the harness's own classes. Its text is the name files, signatures and reports use, and a
//! name that is none of these does not parse.

use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::catalogue::catalogue;
use super::catalogue::UNSUPPORTED_DTYPE;
use super::OracleClass;
use crate::interpreter::HARNESS_ERROR;

/// What kind of finding, by who raised it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Class {
    /// A broken oracle invariant.
    Oracle(OracleClass),
    /// A panic or an execution error that a catalogue record (`signatures.json`) knows: the
    /// record's `backgroundTag`, as the compiled-in catalogue holds it.
    Catalogued(&'static str),
    /// A panic or an execution error no record knows: always a finding.
    #[default]
    Unknown,
    /// A pooled capture device that refused a fresh scope after a program.
    StateLeak,
    /// A failure on a device past a dtype the program put there and the device says it does
    /// not support.
    UnsupportedDtype,
    /// A dtype-mismatch refusal of operands whose dtypes the program chose to mix.
    MixedDtypes,
    /// A panic of the harness's own code inside a Burn call: never blamed on Burn, but named
    /// where a policy lists it.
    HarnessError,
    /// A program that ran past the time limit in a process of its own.
    Timeout,
    /// A program whose process grew past the RSS limit.
    OutOfMemory,
}

/// Class of a panic that matches no catalogue record: always a finding.
pub const UNKNOWN: &str = "unknown";
/// Class of a program after which a pooled capture device refused a fresh scope.
pub const STATE_LEAK: &str = "state-leak";
/// Class of a dtype-mismatch panic that names a dtype no device makes by default and the
/// program itself named (`classify`'s `chose_dtype_mix`): the program chose to combine operands
/// of one kind stored in different dtypes, and Burn lets a backend refuse them rather than
/// promote one ("backends can panic with a dtype mismatch", tracel-ai/burn#2483). A limitation
/// the caller chose, not a bug. The same panic between Burn's own defaults (capture's I64 against Flex's
/// I32) keeps its catalogued class.
pub const MIXED_DTYPES: &str = "mixed-dtype-operands";
/// The class of a program that runs past the time limit in a process of its own.
pub const TIMEOUT: &str = "timeout";
/// The class of a program whose process grows past the RSS limit.
pub const OUT_OF_MEMORY: &str = "out-of-memory";

/// The harness's own classes, by name.
const HARNESS: [(&str, Class); 7] = [
    (UNKNOWN, Class::Unknown),
    (STATE_LEAK, Class::StateLeak),
    (UNSUPPORTED_DTYPE, Class::UnsupportedDtype),
    (MIXED_DTYPES, Class::MixedDtypes),
    (HARNESS_ERROR, Class::HarnessError),
    (TIMEOUT, Class::Timeout),
    (OUT_OF_MEMORY, Class::OutOfMemory),
];

impl Class {
    /// Its name, as files, signatures and reports write it.
    pub fn name(self) -> &'static str {
        match self {
            Class::Oracle(o) => o.name(),
            Class::Catalogued(tag) => tag,
            other => HARNESS
                .iter()
                .find(|(_, c)| *c == other)
                .map(|(name, _)| *name)
                .expect("every harness class has a name"),
        }
    }
}

/// Why a name is not a class.
#[derive(Debug, PartialEq, Eq)]
pub struct NotAClass(pub String);

impl fmt::Display for NotAClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "`{}` is no class: not an oracle's, not a catalogue record's tag \
             (harness/signatures.json), and none of {}",
            self.0,
            HARNESS.map(|(n, _)| n).join(", ")
        )
    }
}

impl std::error::Error for NotAClass {}

impl FromStr for Class {
    type Err = NotAClass;

    fn from_str(name: &str) -> Result<Class, NotAClass> {
        if let Some(o) = OracleClass::ALL.into_iter().find(|o| o.name() == name) {
            return Ok(Class::Oracle(o));
        }
        if let Some((_, c)) = HARNESS.iter().find(|(n, _)| *n == name) {
            return Ok(*c);
        }
        catalogue()
            .iter()
            .find(|r| r.background_tag == name)
            .map(|r| Class::Catalogued(r.background_tag.as_str()))
            .ok_or_else(|| NotAClass(name.to_string()))
    }
}

impl fmt::Display for Class {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

// Classes sort by name, as their text always did: listings and reports keep their order.
impl Ord for Class {
    fn cmp(&self, other: &Class) -> Ordering {
        self.name().cmp(other.name())
    }
}

impl PartialOrd for Class {
    fn partial_cmp(&self, other: &Class) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq<&str> for Class {
    fn eq(&self, name: &&str) -> bool {
        self.name() == *name
    }
}

impl Serialize for Class {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

impl<'de> Deserialize<'de> for Class {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Class, D::Error> {
        String::deserialize(d)?
            .parse()
            .map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_class_name_parses_back_to_its_class_and_a_misspelt_one_does_not() {
        let catalogued = catalogue().iter().map(|r| r.background_tag.as_str());
        let names = (OracleClass::ALL.map(OracleClass::name).into_iter())
            .chain(HARNESS.map(|(n, _)| n))
            .chain(catalogued);
        for name in names {
            let class: Class = name.parse().expect("a class");
            assert_eq!(class.name(), name);
        }
        assert!("reference-mismatches".parse::<Class>().is_err());
        assert!("".parse::<Class>().is_err());
    }

    #[test]
    fn no_catalogue_tag_shadows_an_oracle_or_harness_class() {
        for r in catalogue() {
            let name = r.background_tag.as_str();
            assert!(
                !OracleClass::ALL.iter().any(|o| o.name() == name)
                    && !HARNESS.iter().any(|(n, _)| *n == name),
                "{name}"
            );
        }
    }
}
