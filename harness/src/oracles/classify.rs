//! Turns a trace into a verdict: each panic gets its class from the catalogue, and the first
//! panic that is a finding (or a state leak) becomes the trace's finding, with a signature that
//! is the same in every run and process.

mod dtypes;
mod normalize;

pub use dtypes::{
    chose_dtype_mix, may_be_chosen_dtype_mix, mixes_named_dtypes, past_unsupported_dtype,
    MIXED_DTYPES,
};
pub use normalize::normalize_message;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::sync::LazyLock;

use serde::{Deserialize, Serialize};

use super::catalogue::{burn_file, catalogue, lookup, lookup_error, lookup_known_bug};
use super::class::Class;
use super::deviation::{Backend, Deviation, Facts};
use super::known::known_case;
use super::payload::Payload;
use super::{
    naming, oracle_of, Signature, Violation, DIVERGENCE, REFERENCE_MISMATCH, REPLAY_FAILURE,
};
use crate::hash::words_digest;
use crate::interpreter::{Outcome, PanicInfo, Trace};
use crate::program::{DeviceRef, Dtype, Step};

pub use super::catalogue::UNSUPPORTED_DTYPE;
pub use super::class::{STATE_LEAK, UNKNOWN};
pub use crate::interpreter::EXECUTION_ERROR;
/// The `DISPATCH_FUZZ_CRASH_ON` entry that makes known findings (stored cases) findings again.
pub const KNOWN: &str = "known";

/// Which catalogued classes, and whether known findings, count as findings in this run.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Policy {
    /// Classes that are findings although catalogued.
    pub crash_on: BTreeSet<String>,
    /// Findings a reviewed regression case already stores are findings too (else known).
    pub known_are_findings: bool,
    /// Classes that are findings although catalogued, whose known findings stay known: the
    /// class of a saved finding no case stores yet, so that minimizing it keeps it and not a
    /// stored bug met earlier in its program.
    pub finding_classes: BTreeSet<String>,
}

impl Policy {
    /// Parses a `DISPATCH_FUZZ_CRASH_ON` value: classes, and [`KNOWN`].
    pub fn parse(list: &str) -> Policy {
        let items = list.split(',').map(str::trim).filter(|c| !c.is_empty());
        let (known, classes): (Vec<&str>, Vec<&str>) = items.partition(|c| *c == KNOWN);
        Policy {
            crash_on: classes.into_iter().map(str::to_string).collect(),
            known_are_findings: !known.is_empty(),
            finding_classes: BTreeSet::new(),
        }
    }

    /// This policy plus `class`, known findings included: a saved finding is treated as a
    /// finding even if its class is catalogued or a case stores it.
    pub fn with_class(&self, class: Option<&str>) -> Policy {
        let mut policy = self.clone();
        policy.crash_on.extend(class.map(str::to_string));
        policy.known_are_findings = true;
        policy
    }

    /// This policy plus `class`, known findings still known: a saved finding no case stores
    /// (see [`Policy::finding_classes`]).
    pub fn with_new_class(&self, class: Option<&str>) -> Policy {
        let mut policy = self.clone();
        policy.finding_classes.extend(class.map(str::to_string));
        policy
    }

    /// Whether a panic of class `class` is a finding.
    pub fn is_finding(&self, class: &str) -> bool {
        class == UNKNOWN
            || class == STATE_LEAK
            || self.crash_on.contains(class)
            || self.finding_classes.contains(class)
    }

    /// The case whose root cause a finding of `class` with `signature` and `facts` is (see
    /// [`known_case`]), unless the policy makes known findings findings: then `None`. Naming
    /// the class in the policy opts back in.
    pub fn known(&self, class: &str, signature: &Signature, facts: &Facts) -> Option<&'static str> {
        self.may_know(class)
            .then(|| known_case(signature, facts))
            .flatten()
    }

    /// Whether a finding of `class` may be a known one under this policy: neither the `known`
    /// switch nor the class named in it makes it a finding again.
    pub fn may_know(&self, class: &str) -> bool {
        !self.known_are_findings && !self.crash_on.contains(class)
    }
}

/// A bug, or a catalogued panic promoted to one by the policy.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// What is stable about it across runs and processes (text: `class | normalized message |
    /// crate/src/file.rs`, with the op, operands and role where an oracle knows them).
    pub signature: Signature,
    /// The class.
    pub class: Class,
    /// The step that raised it (`None` for a state leak).
    pub step: Option<usize>,
    /// The raw message.
    pub message: String,
    /// What went wrong, as data (root-cause predicates read it, never the summary).
    #[serde(skip_serializing_if = "Facts::is_empty", default)]
    pub facts: Facts,
    /// What its oracle knows beyond the signature (reports and reproducers read it, never the
    /// message).
    #[serde(skip_serializing_if = "Payload::is_none", default)]
    pub payload: Payload,
}

/// Lookups remembered per thread: a fuzz session meets the same few guard messages millions of
/// times, and matching every pattern each time was 6% of a whole `check`.
const CLASS_CACHE_LIMIT: usize = 4096;

/// One remembered lookup: what it was asked, and the class it gave.
struct Remembered {
    message: String,
    location: Option<String>,
    class: &'static str,
}

thread_local! {
    /// Keyed by a hash of what was asked, so a hit allocates nothing; the entry holds the
    /// question itself, and only an exact match is an answer (a colliding one is looked up).
    static CLASS_CACHE: RefCell<HashMap<u64, Remembered>> = RefCell::new(HashMap::new());
}

/// `lookup` through the per-thread cache. `kind` keeps panic and error lookups apart.
fn remembered(
    kind: u8,
    message: &str,
    location: Option<&str>,
    lookup: impl FnOnce() -> &'static str,
) -> &'static str {
    // A location's tail (file, line, column) tells it apart; its long registry prefix is
    // the same for every Burn crate. A colliding key only costs a lookup.
    let location_tail = location.map_or(&[][..], |l| &l.as_bytes()[l.len().saturating_sub(48)..]);
    let key = words_digest(&[
        &[kind],
        message.as_bytes(),
        &[0xff, u8::from(location.is_some())],
        location_tail,
    ]);
    let hit = CLASS_CACHE.with(|c| {
        c.borrow()
            .get(&key)
            .filter(|r| r.message == message && r.location.as_deref() == location)
            .map(|r| r.class)
    });
    if let Some(class) = hit {
        return class;
    }
    let class = lookup();
    CLASS_CACHE.with(|c| {
        let mut cache = c.borrow_mut();
        // Messages carrying ids never repeat; a full cache starts over rather than grow.
        if cache.len() >= CLASS_CACHE_LIMIT {
            cache.clear();
        }
        let entry = Remembered {
            message: message.to_string(),
            location: location.map(str::to_string),
            class,
        };
        cache.insert(key, entry);
    });
    class
}

/// The class of a panic: its catalogue record's `backgroundTag`, or [`UNKNOWN`].
pub fn class_of(panic: &PanicInfo) -> String {
    let (message, location) = (&panic.message, panic.location.as_deref());
    remembered(0, message, location, || {
        lookup(catalogue(), message, location).map_or(UNKNOWN, |r| r.background_tag.as_str())
    })
    .to_string()
}

/// The class a panic's record names, as [`assign_classes`] or [`class_of`] wrote it: a
/// catalogue record's tag or a harness class, so it always parses.
fn class_named(name: &str) -> Class {
    name.parse()
        .unwrap_or_else(|e| panic!("the classifier named a class it does not have: {e}"))
}

/// The class of an `ExecutionError` a read or a replay returned: its execution-error record's
/// `backgroundTag`, or [`UNKNOWN`].
fn error_class(message: &str) -> &'static str {
    remembered(1, message, None, || {
        lookup_error(catalogue(), message).map_or(UNKNOWN, |r| r.background_tag.as_str())
    })
}

/// Whether `panic` is a catalogued Burn bug (a `known-bug` record, location included), as
/// opposed to an unknown panic or a misuse guard.
pub fn is_known_bug(panic: &PanicInfo) -> bool {
    lookup_known_bug(catalogue(), &panic.message, panic.location.as_deref()).is_some()
}

/// The signature of a classified panic: its class, normalized message and the Burn file that
/// raised it.
pub fn signature(panic: &PanicInfo) -> Signature {
    let file = panic
        .location
        .as_deref()
        .and_then(burn_file)
        .unwrap_or_else(|| "?".to_string());
    Signature::new(
        class_named(&panic.class),
        normalize_message(&panic.message),
        file,
    )
}

/// Whether a panic's file pins its call site: code of Burn, cubecl or cubek (or the harness's
/// own call into Burn's API), not the standard library's. Core's `iter/traits/accum.rs`
/// reports every `Iterator::product` overflow, whichever Burn kernel made it.
fn pins_call_site(origin: &str) -> bool {
    ["burn", "cubecl", "cubek", "harness/"]
        .iter()
        .any(|p| origin.starts_with(p))
}

/// The signature of a panic raised at step `step` of `steps`: [`signature`], with the step's op
/// when the file does not pin the call site (a panic in the standard library, or with no
/// location).
pub fn signature_at(panic: &PanicInfo, steps: &[Step], step: usize) -> Signature {
    let mut signature = signature(panic);
    if !pins_call_site(&signature.origin) {
        signature.op = steps.get(step).map(naming::step_name);
    }
    signature
}

/// A panic's facts: the entry of the step it was raised at, that step's first operand's dtype
/// and backend as the run held them (a step with no operand: its device's), and the deviation
/// [`Deviation::Panic`]. A panic past the program's steps (the teardown's) knows none.
fn panic_facts(steps: &[Step], trace: &Trace, step: usize) -> Facts {
    let Some(at) = steps.get(step) else {
        return Facts::default();
    };
    let operand = trace.walk_held(steps, |s, record, held| {
        (record.index == step).then(|| {
            let first = s.reads().first().and_then(|r| held[usize::from(*r)]);
            first.map(|v| (Dtype::from_burn(v.dtype), v.device.is_wgpu()))
        })
    });
    let (dtype, on_wgpu) = match operand.flatten() {
        Some((dtype, on_wgpu)) => (dtype, on_wgpu),
        None => (None, at.device().is_some_and(|d| d == DeviceRef::Wgpu)),
    };
    Facts {
        entry: Some(naming::step_name(at)),
        dtype,
        deviation: Some(Deviation::Panic),
        backend: Some(if on_wgpu {
            Backend::Wgpu
        } else {
            Backend::Flex
        }),
    }
}

/// The class of a panic raised at `step` (`None`: at no step): as [`class_of`], but a record
/// that names the steps it is met at (`atSteps`, by `naming::step_name`) matches only there,
/// and any other panic it would match is [`UNKNOWN`].
pub fn class_at(panic: &PanicInfo, step: Option<&Step>) -> String {
    let class = class_of(panic);
    // Only a few records name their steps: the lookup and the step's name are paid for
    // those alone, not for every guard a session meets.
    if !AT_STEPS.iter().any(|(tag, _)| *tag == class) {
        return class;
    }
    // The record the panic matched names its steps: two records of one class (the int and the
    // float form of element-not-representable) name different ones, and the first of the class
    // alone made the other's steps unknown.
    let record = super::catalogue::lookup(
        super::catalogue::catalogue(),
        &panic.message,
        panic.location.as_deref(),
    );
    match record {
        Some(r)
            if !r.at_steps.is_empty()
                && !step.is_some_and(|s| at_step(&r.at_steps, &naming::step_name(s))) =>
        {
            UNKNOWN.to_string()
        }
        _ => class,
    }
}

/// Whether step name `name` is one of a record's `atSteps`: a name, or a family's prefix ending
/// in `*` (`scalar *`: every scalar op).
fn at_step(at: &[String], name: &str) -> bool {
    at.iter().any(|a| match a.strip_suffix('*') {
        Some(prefix) => name.starts_with(prefix),
        None => a == name,
    })
}

/// `(class, atSteps)` of every catalogue record that names the steps it is met at.
static AT_STEPS: LazyLock<Vec<(&'static str, &'static [String])>> = LazyLock::new(|| {
    catalogue()
        .iter()
        .filter(|r| !r.at_steps.is_empty())
        .map(|r| (r.background_tag.as_str(), r.at_steps.as_slice()))
        .collect()
});

/// The classes of the records that may explain a failure (known bugs and limitations), by name:
/// the class a panic already has says so without another catalogue lookup.
static FAILURE_CLASSES: LazyLock<BTreeSet<&'static str>> = LazyLock::new(|| {
    catalogue()
        .iter()
        .filter(|r| r.explains_failures())
        .map(|r| r.background_tag.as_str())
        .collect()
});

/// Whether the record a panic of `class` matched explains failures (a known bug's or a
/// limitation's), not a guard's: one class may hold both (element-not-representable is burn-std's
/// guard for a scalar an unsigned dtype cannot hold, and two limitations' for a float), and a
/// guard keeps its class past an unsupported dtype (a U16 moved from wgpu into a scope, then
/// clamp_max(-51), is the guard, not the device's: fuzz --backends flex,capture,wgpu --seed 21).
fn explains_failure(panic: &PanicInfo, class: &str) -> bool {
    FAILURE_CLASSES.contains(class)
        && super::catalogue::lookup(
            super::catalogue::catalogue(),
            &panic.message,
            panic.location.as_deref(),
        )
        .is_none_or(|r| r.explains_failures())
}

/// Gives every panic of the trace that has none its class, at the step it was raised at
/// (`class_at`, [`MIXED_DTYPES`] for a dtype mix the program chose, by the panic's words or the
/// operands' dtypes, or [`UNSUPPORTED_DTYPE`] on wgpu past a dtype it does not support).
pub fn assign_classes(steps: &[Step], trace: &mut Trace) {
    let at: Vec<usize> = trace.panics().map(|(i, _)| i).collect();
    // The dtype rules read the whole trace: paid for only where a panic is not already a guard
    // (most runs panic, almost always at a guard).
    let mut by_dtypes: Option<(Vec<bool>, Vec<bool>)> = None;
    for (k, i) in at.into_iter().enumerate() {
        let Some(panic) = trace.panics().nth(k).map(|(_, p)| p) else {
            continue;
        };
        if !panic.class.is_empty() {
            continue;
        }
        let class = if chose_dtype_mix(steps, &panic.message) {
            MIXED_DTYPES.to_string()
        } else {
            let class = class_at(panic, steps.get(i));
            // A misuse guard keeps its class: the program misused the lifecycle whatever the
            // dtype. A failure (unknown, a known bug's, a limitation's) is the dtype's.
            if class == UNKNOWN || explains_failure(panic, &class) {
                let (unsupported, mixed) = by_dtypes.get_or_insert_with(|| {
                    (
                        past_unsupported_dtype(steps, trace),
                        mixes_named_dtypes(steps, trace),
                    )
                });
                match (unsupported.get(i), mixed.get(i)) {
                    // The step's own mix of named dtypes is nearer than an unsupported one before
                    // it: the mix, or its catalogued failure (burn-ir's DTypeMismatch, seed 11).
                    (_, Some(true)) if class == UNKNOWN => MIXED_DTYPES.to_string(),
                    (Some(true), Some(false) | None) => UNSUPPORTED_DTYPE.to_string(),
                    _ => class,
                }
            } else {
                class
            }
        };
        if let Some(p) = trace.panics_mut().nth(k) {
            p.class = class;
        }
    }
}

/// What classification made of a run.
#[derive(Debug, Default)]
pub struct Classified {
    /// The first finding under the policy.
    pub finding: Option<Finding>,
    /// The cases storing the known findings the run showed, in order.
    pub known: Vec<String>,
}

/// Sets every panic's class and returns the first finding under `policy` (a panic of the run,
/// a step's, the teardown's or a side panic; an oracle's violation; a state leak), with the
/// known findings (signatures a reviewed case stores) set apart.
pub fn classify(
    steps: &[Step],
    trace: &mut Trace,
    violations: &[Violation],
    policy: &Policy,
) -> Classified {
    assign_classes(steps, trace);
    let panics = trace
        .panics()
        .filter(|(_, p)| policy.is_finding(&p.class))
        .map(|(step, p)| Finding {
            signature: signature_at(p, steps, step),
            class: class_named(&p.class),
            step: Some(step),
            message: p.message.clone(),
            facts: panic_facts(steps, trace, step),
            payload: Payload::None,
        });
    let violation = violation_findings(violations, policy);
    let leak = (!trace.leaked_devices.is_empty()).then(|| Finding {
        signature: Signature::new(
            Class::StateLeak,
            "a pooled capture device refused a fresh scope",
            "harness",
        ),
        class: Class::StateLeak,
        step: None,
        message: format!(
            "capture devices {:?} of the pool refused a fresh empty scope after the program",
            trace.leaked_devices
        ),
        facts: Facts::default(),
        payload: Payload::None,
    });
    let errors = error_findings(steps, trace, policy);
    let mut candidates: Vec<Finding> = panics.chain(errors).chain(violation).collect();
    // The earliest step wins; a leak is seen after the program.
    candidates.sort_by_key(|f| f.step.unwrap_or(usize::MAX));
    candidates.extend(leak);
    let mut classified = Classified::default();
    for finding in candidates {
        let (class, facts) = (finding.class.name(), &finding.facts);
        if let Some(case) = policy.known(class, &finding.signature, facts) {
            if !classified.known.iter().any(|c| c == case) {
                classified.known.push(case.to_string());
            }
        } else if classified.finding.is_none() {
            classified.finding = Some(finding);
        }
    }
    classified
}

/// The findings of the oracles' violations: a replay that fails with a catalogued panic takes
/// that record's class; the others their oracle's.
fn violation_findings(violations: &[Violation], policy: &Policy) -> Vec<Finding> {
    // A replay that fails with a catalogued panic takes that record's class (a known Burn bug
    // met again through replay is not a new finding); any other violation is a finding. The
    // earliest step wins.
    // A step whose Flex value the reference found wrong has no Flex value to hold wgpu's to:
    // the differential's disagreement there is that finding again (wgpu's own value is the
    // reference's to judge, over wgpu's operands).
    let wrong_on_flex: BTreeSet<usize> = violations
        .iter()
        .filter(|v| v.class == REFERENCE_MISMATCH && v.facts.backend == Some(Backend::Flex))
        .map(|v| v.step)
        .collect();
    violations
        .iter()
        .filter(|v| !(v.class == DIVERGENCE && wrong_on_flex.contains(&v.step)))
        .map(|v| {
            // Only a known Burn bug, matched with the panic's real location, explains a clean
            // graph's failing replay; a misuse guard never does.
            let known = (v.class == REPLAY_FAILURE)
                .then(|| lookup_known_bug(catalogue(), &v.message, v.location.as_deref()))
                .flatten();
            let class = known.map_or(v.class, |r| Class::Catalogued(&r.background_tag));
            let oracle = oracle_of(v.class).map_or("unknown-oracle", |o| o.name);
            Finding {
                signature: Signature {
                    op: v.op.clone(),
                    operands: v.operands.clone(),
                    role: v.role.clone(),
                    ..Signature::new(class, &v.summary, oracle)
                },
                class,
                step: Some(v.step),
                message: v.message.clone(),
                facts: v.facts.clone(),
                payload: v.payload.clone(),
            }
        })
        .filter(|f| policy.is_finding(f.class.name()) || oracle_of(f.class).is_some())
        .collect()
}

/// The findings of the execution errors a step or a side read returned.
fn error_findings(steps: &[Step], trace: &Trace, policy: &Policy) -> Vec<Finding> {
    // Read only for an execution error, which few runs return.
    let unsupported = std::cell::OnceCell::new();
    // An `ExecutionError` a read or a replay returned is judged like a panic, against the
    // catalogue's execution-error records: an unknown one is a finding.
    // A side error (a mirror's replay, a best-effort read) counts at its step, or past the end.
    let end = trace.steps.len();
    let step_errors = trace.steps.iter().filter_map(|r| match &r.outcome {
        Outcome::Error { error, message } => Some((r.index, error, message)),
        _ => None,
    });
    let side_errors = trace
        .side_errors
        .iter()
        .map(|e| (e.step.unwrap_or(end), &e.error, &e.message));
    step_errors
        .chain(side_errors)
        .filter(|(_, error, _)| *error == EXECUTION_ERROR)
        .filter_map(|(step, _, message)| {
            // Errors are failures (a guard panics): past an unsupported dtype, the dtype's.
            let past = unsupported.get_or_init(|| past_unsupported_dtype(steps, trace));
            let class = match past.get(step) {
                Some(true) => UNSUPPORTED_DTYPE,
                _ => error_class(message),
            };
            let named = class_named(class);
            policy.is_finding(class).then(|| Finding {
                signature: Signature::new(named, normalize_message(message), "execution-error"),
                class: named,
                step: Some(step),
                message: message.clone(),
                facts: Facts::default(),
                payload: Payload::None,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests;
