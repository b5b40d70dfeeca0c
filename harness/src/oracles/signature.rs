//! A finding's signature as a value: the fields that are stable about it, and the root-cause key
//! a stored case declares over them.
//!
//! The text form keeps the readable `class | summary | origin` of earlier versions and adds the
//! fields an oracle knows beyond it (`| op: module conv2d; operands: F32, F32; role: gradient of
//! operand 1`), so files, snapshots and reports stay text while every field survives a round
//! trip.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::class::Class;

/// What is stable about a finding, field by field.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Signature {
    /// The class: a catalogue record's `backgroundTag`, a harness class, or an oracle's violation
    /// class.
    pub class: Class,
    /// The normalized panic message, or the oracle's summary of what broke.
    pub summary: String,
    /// The Burn file that raised it (`burn-flex/src/ops/cat.rs`), or the oracle that saw it
    /// (`flex-vs-wgpu`), `execution-error` or `harness`.
    pub origin: String,
    /// The op behind it, where the summary and origin do not already pin it: a divergence's or
    /// a model mismatch's op, a panic's whose origin is not Burn's own file (core's `accum.rs`).
    pub op: Option<String>,
    /// The dtypes of the op's operands, as Burn held them (`F32, I64`).
    pub operands: Option<String>,
    /// Which value: `gradient of operand 1` for a gradient, where an op has several.
    pub role: Option<String>,
}

/// One field of a [`Signature`], as a root-cause key names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Field {
    /// [`Signature::class`].
    Class,
    /// [`Signature::summary`].
    Summary,
    /// [`Signature::origin`].
    Origin,
    /// [`Signature::op`].
    Op,
    /// [`Signature::operands`].
    Operands,
    /// [`Signature::role`].
    Role,
}

impl Field {
    /// Every field, in the text form's order: the key of a case that declares none.
    pub const ALL: [Field; 6] = [
        Field::Class,
        Field::Summary,
        Field::Origin,
        Field::Op,
        Field::Operands,
        Field::Role,
    ];

    /// The field's name in keys and in the text form.
    pub fn name(self) -> &'static str {
        match self {
            Field::Class => "class",
            Field::Summary => "summary",
            Field::Origin => "origin",
            Field::Op => "op",
            Field::Operands => "operands",
            Field::Role => "role",
        }
    }

    /// The field named `name`.
    pub fn from_name(name: &str) -> Option<Field> {
        Field::ALL.into_iter().find(|f| f.name() == name)
    }
}

/// The extra fields, in the text form's order.
const EXTRAS: [Field; 3] = [Field::Op, Field::Operands, Field::Role];

impl Signature {
    /// A signature of the three base fields.
    pub fn new(class: Class, summary: impl Into<String>, origin: impl Into<String>) -> Signature {
        Signature {
            class,
            summary: summary.into(),
            origin: origin.into(),
            ..Signature::default()
        }
    }

    /// The value of `field` (`None` for an extra the oracle did not know).
    pub fn get(&self, field: Field) -> Option<&str> {
        match field {
            Field::Class => Some(self.class.name()),
            Field::Summary => Some(&self.summary),
            Field::Origin => Some(&self.origin),
            Field::Op => self.op.as_deref(),
            Field::Operands => self.operands.as_deref(),
            Field::Role => self.role.as_deref(),
        }
    }

    fn extra_mut(&mut self, field: Field) -> Option<&mut Option<String>> {
        match field {
            Field::Op => Some(&mut self.op),
            Field::Operands => Some(&mut self.operands),
            Field::Role => Some(&mut self.role),
            _ => None,
        }
    }
}

impl fmt::Display for Signature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} | {} | {}", self.class, self.summary, self.origin)?;
        let mut sep = " | ";
        for field in EXTRAS {
            if let Some(value) = self.get(field) {
                write!(f, "{sep}{}: {value}", field.name())?;
                sep = "; ";
            }
        }
        Ok(())
    }
}

/// Why a text is not a signature.
#[derive(Debug, PartialEq, Eq)]
pub struct NotASignature(pub String);

impl fmt::Display for NotASignature {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "not a signature (want `class | summary | origin` with optional \
             `| op: ..; operands: ..; role: ..`): {:?}",
            self.0
        )
    }
}

impl std::error::Error for NotASignature {}

/// The extras part of a text form (`op: x; role: y`), if `part` is one.
fn extras(part: &str) -> Option<Vec<(Field, &str)>> {
    part.split("; ")
        .map(|item| {
            let (name, value) = item.split_once(": ")?;
            let field = Field::from_name(name).filter(|f| EXTRAS.contains(f))?;
            Some((field, value))
        })
        .collect()
}

impl FromStr for Signature {
    type Err = NotASignature;

    /// Parses the text form. The class and origin never hold ` | `; a panic's summary may, so
    /// it is everything between them.
    fn from_str(text: &str) -> Result<Signature, NotASignature> {
        let bad = || NotASignature(text.to_string());
        let mut parts: Vec<&str> = text.split(" | ").collect();
        let found = parts.last().and_then(|p| extras(p));
        if found.is_some() {
            parts.pop();
        }
        if parts.len() < 3 {
            return Err(bad());
        }
        let origin = parts.pop().ok_or_else(bad)?;
        // A class no oracle, harness rule or catalogue record has is a misspelt signature.
        let class =
            (parts[0].parse::<Class>()).map_err(|e| NotASignature(format!("{text}: {e}")))?;
        let mut signature = Signature::new(class, parts[1..].join(" | "), origin);
        for (field, value) in found.unwrap_or_default() {
            let slot = signature.extra_mut(field).ok_or_else(bad)?;
            if slot.replace(value.to_string()).is_some() {
                return Err(bad());
            }
        }
        Ok(signature)
    }
}

impl Serialize for Signature {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Signature {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Signature, D::Error> {
        let text = String::deserialize(d)?;
        text.parse().map_err(serde::de::Error::custom)
    }
}

impl PartialEq<str> for Signature {
    fn eq(&self, text: &str) -> bool {
        text.parse::<Signature>().is_ok_and(|s| s == *self)
    }
}

/// The fields of a stored case's signature a finding must share to be that case's bug: its
/// root-cause key. The class always counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    /// The stored signature.
    pub signature: Signature,
    /// The fields that must be equal (an absent extra must be absent too).
    pub fields: Vec<Field>,
}

impl Key {
    /// The key over `fields` of `signature`.
    pub fn new(signature: Signature, fields: &[Field]) -> Key {
        let mut fields = fields.to_vec();
        if !fields.contains(&Field::Class) {
            fields.insert(0, Field::Class);
        }
        Key { signature, fields }
    }

    /// Whether `finding` is this key's root cause.
    pub fn matches(&self, finding: &Signature) -> bool {
        self.fields
            .iter()
            .all(|f| self.signature.get(*f) == finding.get(*f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_round_trips_through_its_text_with_and_without_extras() {
        let base = "int-dtype-mismatch | cat: a | b | burn-flex/src/ops/cat.rs";
        let parsed: Signature = base.parse().unwrap();
        assert_eq!(parsed.summary, "cat: a | b");
        assert_eq!(parsed.to_string(), base);
        let full = "flex-wgpu-divergence | the result of backward of module conv2d differs \
                    between Flex and wgpu | flex-vs-wgpu | op: backward of module conv2d; \
                    operands: F32, F32; role: gradient of operand 1";
        let parsed: Signature = full.parse().unwrap();
        assert_eq!(parsed.role.as_deref(), Some("gradient of operand 1"));
        assert_eq!(parsed.operands.as_deref(), Some("F32, F32"));
        assert_eq!(parsed.to_string(), full);
        assert!("one | two".parse::<Signature>().is_err());
        assert!("unknown | b | c | role: x; role: y"
            .parse::<Signature>()
            .is_err());
        assert!("no-such-class | b | c".parse::<Signature>().is_err());
    }

    #[test]
    fn a_key_matches_only_the_fields_it_names_and_an_absent_extra_must_stay_absent() {
        let stored: Signature = "unknown | s | o | op: unary sqrt; role: gradient of operand 0"
            .parse()
            .unwrap();
        let exact = Key::new(stored.clone(), &Field::ALL);
        let mut other_role = stored.clone();
        other_role.role = Some("gradient of operand 1".into());
        assert!(exact.matches(&stored));
        assert!(!exact.matches(&other_role));
        let mut no_operands = stored.clone();
        no_operands.operands = Some("F32".into());
        assert!(!exact.matches(&no_operands), "an extra the case lacks");
        let wide = Key::new(stored.clone(), &[Field::Summary, Field::Op]);
        assert!(wide.matches(&other_role));
        let mut other_class = stored.clone();
        other_class.class = Class::StateLeak;
        assert!(!wide.matches(&other_class), "the class always counts");
    }
}
