//! Known findings: the reviewed regression cases under `regressions/`, embedded at build time
//! (`build.rs`), each with the root cause it states. A finding one of them explains is counted
//! and reported as known, not aborted on, so a fuzz session runs past every bug already stored;
//! the policy's `known` switch (`DISPATCH_FUZZ_CRASH_ON=known`) makes them findings again.
//!
//! A case states its root cause as a [`Predicate`] over a finding's class, signature fields and
//! [`Facts`] (the entries its mechanism reaches, the dtypes, the deviation, the backends): a
//! finding is that case's bug only when the predicate holds for every field, so the same op with
//! another deviation, on another backend or outside the list is new. A case with no predicate
//! knows exactly the signatures it stores (its own and its `also` programs'), over its key.

use std::sync::LazyLock;

use serde::Deserialize;

use super::deviation::{Backend, Deviation, Facts};
use super::signature::{Field, Key, Signature};
use crate::interpreter::wgpu;
use crate::program::{AdapterClass, Dtype};

/// One reviewed case's row: `(case name, signature, key fields, also, predicate, adapters)`.
pub type KnownRow = (
    &'static str,
    &'static str,
    &'static [&'static str],
    bool,
    Option<&'static str>,
    &'static [&'static str],
);

/// `(case name, signature, key fields, also, predicate, adapters)` of every reviewed case,
/// sorted by name: its own signature (`also` false) and that of each of its `also` programs
/// (true); the case's predicate as JSON text (on its own row only), if it states one; the
/// adapter classes a wgpu case holds on, as `backend/driver/device_type` (none: any).
pub const KNOWN_FINDINGS: &[KnownRow] = include!(concat!(env!("OUT_DIR"), "/known_findings.rs"));

/// A deviation a predicate names: one exactly, or a lost dtype by what came back alone (the
/// predicate's `dtypes` say which recorded ones).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeviationPattern {
    /// This deviation.
    Exactly(Deviation),
    /// Any recorded dtype handed back as this one (`dtype I64`).
    DtypeGot(Dtype),
}

impl DeviationPattern {
    fn holds(self, deviation: Deviation) -> bool {
        match (self, deviation) {
            (DeviationPattern::Exactly(d), other) => d == other,
            (DeviationPattern::DtypeGot(want), Deviation::Dtype { got, .. }) => want == got,
            (DeviationPattern::DtypeGot(_), _) => false,
        }
    }
}

impl<'de> Deserialize<'de> for DeviationPattern {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DeviationPattern, D::Error> {
        let text = String::deserialize(d)?;
        let got = text
            .strip_prefix("dtype ")
            .filter(|rest| !rest.contains(' '))
            .map(Dtype::from_name);
        match got {
            Some(Some(dtype)) => Ok(DeviationPattern::DtypeGot(dtype)),
            Some(None) => Err(serde::de::Error::custom(format!(
                "no dtype named in {text:?}"
            ))),
            None => text
                .parse()
                .map(DeviationPattern::Exactly)
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The root cause a case states, as a predicate over a finding: a closed list per field, each
/// justified by the mechanism in `why`. Every list must hold; `roles` empty means the finding
/// has no role (not a gradient).
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Predicate {
    /// The mechanism, with the Burn source lines that decide which entries and dtypes it
    /// reaches and no others.
    pub why: String,
    /// The classes it shows as (a debug build's overflow-check class and the release build's
    /// `reference-mismatch` for one overflow).
    pub classes: Vec<String>,
    /// The op entries, as signatures name steps (`along_dim argmin`, `backward of unary elu`).
    pub entries: Vec<String>,
    /// The dtypes of the entry's first operand (a lost dtype: the recorded one); absent where
    /// the mechanism's own site fixes them (a panic raised only in the I64 arm of a kernel).
    #[serde(default)]
    pub dtypes: Option<Vec<Dtype>>,
    /// What goes wrong.
    pub deviations: Vec<DeviationPattern>,
    /// Where it goes wrong.
    pub backends: Vec<Backend>,
    /// The gradient roles (`gradient of operand 0`), for a gradient's root cause.
    #[serde(default)]
    pub roles: Vec<String>,
}

impl Predicate {
    /// Whether a finding of `signature` and `facts` is this root cause: every field the
    /// predicate names is known and listed.
    pub fn holds(&self, signature: &Signature, facts: &Facts) -> bool {
        let listed = |list: &[String], value: Option<&str>| {
            value.is_some_and(|v| list.iter().any(|l| l == v))
        };
        listed(&self.classes, Some(signature.class.name()))
            && listed(&self.entries, facts.entry.as_deref())
            && (self.dtypes.as_ref()).is_none_or(|ds| facts.dtype.is_some_and(|d| ds.contains(&d)))
            && facts
                .deviation
                .is_some_and(|d| self.deviations.iter().any(|p| p.holds(d)))
            && facts.backend.is_some_and(|b| self.backends.contains(&b))
            && match signature.role.as_deref() {
                None => self.roles.is_empty(),
                role => listed(&self.roles, role),
            }
    }
}

/// A case's `predicate`: one, or several alternatives (one mechanism met as a debug build's
/// panic and as a release build's wrong value).
#[derive(Deserialize)]
#[serde(untagged)]
enum Stated {
    One(Predicate),
    Several(Vec<Predicate>),
}

/// One reviewed case as the known-finding check reads it.
struct Known {
    name: &'static str,
    key: Key,
    also: bool,
    /// The alternatives of its predicate (on its own row): a finding is the case's bug when one
    /// holds.
    predicate: Option<Vec<Predicate>>,
    /// Whether its case states a predicate (on its own row): then the key of no row of the
    /// case decides.
    by_predicate: bool,
    /// The adapter classes its case holds on (a wgpu case's): it knows a finding only in a
    /// process whose wgpu device runs on one of them. Empty: any, wgpu or not.
    adapters: Vec<AdapterClass>,
}

impl Known {
    /// Whether the case holds where wgpu runs on `adapter` (`None`: no wgpu device): a case
    /// naming no class holds anywhere; a wgpu bug stored from one adapter class is another
    /// class's new finding until a maintainer sees it there too.
    fn holds_on(&self, adapter: Option<&AdapterClass>) -> bool {
        self.adapters.is_empty() || adapter.is_some_and(|class| self.adapters.contains(class))
    }
}

/// Every reviewed case's key and predicate, parsed once (the build script checked each key and
/// signature parses; `tests/regressions.rs` that each predicate does and holds for its case).
static KNOWN: LazyLock<Vec<Known>> = LazyLock::new(|| {
    let known = KNOWN_FINDINGS
        .iter()
        .map(|(name, text, fields, also, predicate, adapters)| {
            let signature: Signature = text.parse().expect("build.rs checked the signature");
            let fields: Vec<Field> = fields
                .iter()
                .map(|f| Field::from_name(f).expect("build.rs checked the key"))
                .collect();
            let predicate = predicate.map(|p| match serde_json::from_str(p) {
                Ok(Stated::One(p)) => vec![p],
                Ok(Stated::Several(ps)) => ps,
                Err(e) => panic!("{name}: its predicate does not parse: {e}"),
            });
            let adapters = adapters
                .iter()
                .map(|a| {
                    let mut parts = a.split('/');
                    let mut part = || parts.next().unwrap_or_default();
                    AdapterClass::new(part(), part(), part())
                })
                .collect();
            Known {
                name,
                key: Key::new(signature, &fields),
                also: *also,
                predicate,
                by_predicate: false,
                adapters,
            }
        })
        .collect::<Vec<_>>();
    let stated: Vec<&str> = known
        .iter()
        .filter(|k| k.predicate.is_some())
        .map(|k| k.name)
        .collect();
    known
        .into_iter()
        .map(|k| Known {
            by_predicate: stated.contains(&k.name),
            ..k
        })
        .collect()
});

/// The case whose root cause a finding of `signature` and `facts` is, if one's is: a case's
/// predicate where it states one, its stored signatures' key otherwise; a wgpu case only where
/// this process's wgpu device runs on an adapter of a class it holds on.
pub fn known_case(signature: &Signature, facts: &Facts) -> Option<&'static str> {
    known_case_on(signature, facts, wgpu::started_adapter().as_ref())
}

/// [`known_case`] where wgpu runs on `adapter` (`None`: no wgpu device in the process).
pub fn known_case_on(
    signature: &Signature,
    facts: &Facts,
    adapter: Option<&AdapterClass>,
) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|k| {
            k.holds_on(adapter)
                && match &k.predicate {
                    Some(alternatives) => alternatives.iter().any(|p| p.holds(signature, facts)),
                    None => !k.by_predicate && k.key.matches(signature),
                }
        })
        .map(|k| k.name)
}

/// The case whose stored signature (its own or an `also` program's) `signature` is, by that
/// case's key, predicates aside: what a saved file's or an artifact's text alone can tell.
pub fn stored_case(signature: &Signature) -> Option<&'static str> {
    KNOWN
        .iter()
        .find(|k| k.key.matches(signature))
        .map(|k| k.name)
}

/// The key case `name` declares, over its own signature.
pub fn key_of(name: &str) -> Option<&'static Key> {
    KNOWN
        .iter()
        .find(|k| k.name == name && !k.also)
        .map(|k| &k.key)
}

/// The alternatives of the predicate case `name` states, if it states one.
pub fn predicate_of(name: &str) -> Option<&'static [Predicate]> {
    KNOWN
        .iter()
        .find(|k| k.name == name && !k.also)
        .and_then(|k| k.predicate.as_deref())
}

/// Whether some case's predicate lists `class` among those its root cause shows as.
pub fn predicate_names_class(class: &str) -> bool {
    KNOWN
        .iter()
        .filter_map(|k| k.predicate.as_ref())
        .flatten()
        .any(|p| p.classes.iter().any(|c| c == class))
}
