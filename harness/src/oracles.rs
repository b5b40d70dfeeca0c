//! The oracles decide whether a run shows a bug. Panics are classified against a catalogue of
//! known signatures kept as data ([`catalogue`], [`classify`]); the oracles in [`ORACLES`] follow
//! the run in lockstep through mirrors on other devices ([`eager_replay`], [`differential`]) or
//! judge its trace afterwards ([`model`]), and each broken invariant is a [`Violation`].
//!
//! Adding an oracle: a module implementing [`Oracle`], and in this file one [`ORACLES`] entry,
//! one arm in `OracleId::build` and its violation class ([`OracleClass`]).

pub mod catalogue;
pub mod class;
mod classify;
pub mod compare;
pub mod deviation;
pub mod differential;
pub mod dtype_contract;
pub mod eager_replay;
#[cfg(feature = "test-hooks")]
pub mod faults;
#[cfg(not(feature = "test-hooks"))]
#[path = "oracles/no_faults.rs"]
mod faults;
pub mod judgement;
pub mod known;
mod lockstep;
pub mod model;
pub mod naming;
pub mod payload;
pub mod reference;
pub mod signature;
pub mod taint;
pub mod transaction_reads;

use serde::{Deserialize, Serialize};

use crate::interpreter::{Computed, Outcome, Trace, World};
use crate::program::Program;

pub use class::Class;
pub use classify::{
    assign_classes, chose_dtype_mix, class_of, classify, is_known_bug, may_be_chosen_dtype_mix,
    normalize_message, past_unsupported_dtype, signature, Classified, Finding, Policy, KNOWN,
    MIXED_DTYPES, STATE_LEAK, UNKNOWN, UNSUPPORTED_DTYPE,
};
pub use deviation::{Backend, Deviation, Facts};
pub use judgement::{Context, Judgement};
pub use lockstep::{
    run, BoundTally, Judged, OracleReport, ReferenceCounts, Shared, GRADIENT_BOUNDS,
};
pub use payload::{Derivation, Mismatch, Payload};
pub use signature::{Field, Key, Signature};

/// A broken oracle invariant, found at a step.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct Violation {
    /// The step where the oracle saw it (a scope exit for a replay).
    pub step: usize,
    /// One of the classes in [`ORACLES`].
    pub class: Class,
    /// What is stable about it, for the signature.
    pub summary: String,
    /// The details: both values, or the failure.
    pub message: String,
    /// Where Burn raised the panic behind it, when a panic is behind it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub location: Option<String>,
    /// The op behind it where the summary does not name it ([`Signature::op`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub op: Option<String>,
    /// Its op's operand dtypes ([`Signature::operands`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub operands: Option<String>,
    /// Which value it is about ([`Signature::role`]).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub role: Option<String>,
    /// What went wrong, as data, for root-cause predicates ([`known::Predicate`]).
    #[serde(skip_serializing_if = "Facts::is_empty", default)]
    pub facts: Facts,
    /// What the oracle knows beyond the signature, for reports and reproducers.
    #[serde(skip_serializing_if = "Payload::is_none", default)]
    pub payload: Payload,
}

/// The classes of the oracles' violations, one or two per oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OracleClass {
    /// A replayed output that differs from the eager run.
    ReplayMismatch,
    /// A cleanly captured graph whose replay panics or errors.
    ReplayFailure,
    /// A value that differs between Flex and wgpu, or that only one of them computed.
    Divergence,
    /// A step whose real outcome is not the one the model predicted.
    ModelMismatch,
    /// A tensor stored in a dtype of another kind.
    DtypeContract,
    /// A transaction whose answer for a tensor is not that tensor's own read.
    TransactionMismatch,
    /// A value Burn computed that its op's definition does not give.
    ReferenceMismatch,
}

impl OracleClass {
    /// Every oracle class.
    pub const ALL: [OracleClass; 7] = [
        OracleClass::ReplayMismatch,
        OracleClass::ReplayFailure,
        OracleClass::Divergence,
        OracleClass::ModelMismatch,
        OracleClass::DtypeContract,
        OracleClass::TransactionMismatch,
        OracleClass::ReferenceMismatch,
    ];

    /// Its name.
    pub fn name(self) -> &'static str {
        match self {
            OracleClass::ReplayMismatch => "replay-mismatch",
            OracleClass::ReplayFailure => "replay-failure",
            OracleClass::Divergence => "flex-wgpu-divergence",
            OracleClass::ModelMismatch => "model-mismatch",
            OracleClass::DtypeContract => "dtype-contract",
            OracleClass::TransactionMismatch => "transaction-mismatch",
            OracleClass::ReferenceMismatch => "reference-mismatch",
        }
    }
}

/// Class of a replayed output that differs from the eager run ([`eager_replay`]).
pub const REPLAY_MISMATCH: Class = Class::Oracle(OracleClass::ReplayMismatch);
/// Class of a cleanly captured graph whose replay panics or errors ([`eager_replay`]).
pub const REPLAY_FAILURE: Class = Class::Oracle(OracleClass::ReplayFailure);
/// Class of a value that differs between Flex and wgpu, or that only one of them computed
/// ([`differential`]).
pub const DIVERGENCE: Class = Class::Oracle(OracleClass::Divergence);
/// Class of a step whose real outcome is not the one the model predicted ([`model`]).
pub const MODEL_MISMATCH: Class = Class::Oracle(OracleClass::ModelMismatch);
/// Class of a tensor stored in a dtype of another kind ([`dtype_contract`]).
pub const DTYPE_CONTRACT: Class = Class::Oracle(OracleClass::DtypeContract);
/// Class of a transaction whose answer for a tensor is not that tensor's own read
/// ([`transaction_reads`]).
pub const TRANSACTION_MISMATCH: Class = Class::Oracle(OracleClass::TransactionMismatch);
/// Class of a value Burn computed that its op's definition does not give ([`mod@reference`]).
pub const REFERENCE_MISMATCH: Class = Class::Oracle(OracleClass::ReferenceMismatch);

/// Which oracle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OracleId {
    /// [`eager_replay`].
    EagerReplay,
    /// [`differential`].
    Differential,
    /// [`model`].
    Model,
    /// [`dtype_contract`].
    DtypeContract,
    /// [`transaction_reads`].
    TransactionReads,
    /// [`mod@reference`].
    Reference,
}

/// The parts of the oracles' shared state ([`Shared`]) one oracle leaves for another within the
/// same step: what makes the order of [`ORACLES`] matter. Each oracle states what it reads and
/// writes of them; an oracle that reads a part runs after every oracle that writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SharedPart {
    /// The wgpu values the differential read at this step (`Shared::wgpu_read`), which the
    /// reference judges without reading them again.
    WgpuRead,
    /// Whether wgpu met a known bug that fails its stream (`Shared::wgpu_failed`): nothing
    /// computed on wgpu after it is compared.
    WgpuFailed,
    /// Per slot, why its wgpu value is not compared with Flex's (`Shared::poison`, and the
    /// `inexact` elements beside it).
    Poison,
}

/// One oracle: its name in signatures, the violation classes it reports (always findings),
/// what it compares, and what it reads and writes of the shared state.
#[derive(Debug)]
pub struct OracleSpec {
    /// Which one.
    pub id: OracleId,
    /// The name signatures and `bench` use.
    pub name: &'static str,
    /// The violation classes it reports.
    pub classes: &'static [Class],
    /// What it compares, for people.
    pub compares: &'static str,
    /// The shared state it reads that another oracle may have written in the same step (what
    /// it reads of earlier steps needs no order).
    pub reads: &'static [SharedPart],
    /// The shared state it writes for the oracles after it.
    pub writes: &'static [SharedPart],
}

/// Every oracle.
pub const ORACLES: &[OracleSpec] = &[
    OracleSpec {
        id: OracleId::EagerReplay,
        name: "eager-replay",
        classes: &[REPLAY_MISMATCH, REPLAY_FAILURE],
        compares: "each cleanly captured graph replayed on Flex (and wgpu) vs the same steps run \
                   eagerly on Flex",
        // The poison it reads is of the slots a scope computed, written at earlier steps.
        reads: &[],
        writes: &[SharedPart::WgpuFailed],
    },
    OracleSpec {
        id: OracleId::Model,
        name: "reference-model",
        classes: &[MODEL_MISMATCH],
        compares: "each step's outcome vs the reference model of the capture lifecycle",
        reads: &[],
        writes: &[],
    },
    OracleSpec {
        id: OracleId::Differential,
        name: "flex-vs-wgpu",
        classes: &[DIVERGENCE],
        compares: "each value computed on Flex vs the same steps run on wgpu",
        reads: &[SharedPart::WgpuFailed],
        writes: &[
            SharedPart::WgpuRead,
            SharedPart::WgpuFailed,
            SharedPart::Poison,
        ],
    },
    OracleSpec {
        id: OracleId::DtypeContract,
        name: "dtype-contract",
        classes: &[DTYPE_CONTRACT],
        compares: "each tensor a step hands back vs the dtypes of its kind",
        reads: &[],
        writes: &[],
    },
    OracleSpec {
        id: OracleId::TransactionReads,
        name: "transaction-reads",
        classes: &[TRANSACTION_MISMATCH],
        compares: "each tensor a transaction reads vs the same tensor's own read",
        reads: &[],
        writes: &[],
    },
    OracleSpec {
        id: OracleId::Reference,
        name: "reference",
        classes: &[REFERENCE_MISMATCH],
        compares: "each value a step hands back (its eager Flex value) vs the op's definition \
                   on host arrays, over the operands Burn holds",
        reads: &[SharedPart::WgpuRead, SharedPart::WgpuFailed],
        writes: &[],
    },
];

impl OracleId {
    /// A fresh instance for one run, or `None` when it cannot run in this one (the
    /// differential without wgpu).
    fn build(self, shared: &Shared, oracles: Oracles) -> Option<Box<dyn Oracle>> {
        match self {
            OracleId::EagerReplay => Some(Box::<eager_replay::EagerReplay>::default()),
            OracleId::Differential => shared
                .wgpu
                .is_some()
                .then(|| Box::<differential::Differential>::default() as Box<dyn Oracle>),
            OracleId::Model => Some(Box::new(model::Model {
                acknowledged: oracles.acknowledged(),
            })),
            OracleId::DtypeContract => Some(Box::new(dtype_contract::DtypeContract)),
            OracleId::TransactionReads => Some(Box::new(transaction_reads::TransactionReads)),
            OracleId::Reference => shared
                .flex
                .is_some()
                .then(|| Box::<reference::Reference>::default() as Box<dyn Oracle>),
        }
    }

    /// Its entry in [`ORACLES`].
    pub fn spec(self) -> &'static OracleSpec {
        ORACLES
            .iter()
            .find(|s| s.id == self)
            .expect("every oracle has an entry in ORACLES")
    }
}

/// The oracle that reports violation class `class`, if any.
pub fn oracle_of(class: Class) -> Option<&'static OracleSpec> {
    ORACLES.iter().find(|s| s.classes.contains(&class))
}

/// A set of oracles to run, and whether the model acknowledges the known divergences.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oracles {
    set: u8,
    /// Whether the model takes a known divergence as known (the default) or reports it as the
    /// mismatch it is, as `report --divergences` shows one to Burn.
    acknowledged: bool,
}

impl Oracles {
    /// Every oracle.
    pub const ALL: Oracles = Oracles {
        set: u8::MAX,
        acknowledged: true,
    };
    /// None: the run is only classified.
    pub const NONE: Oracles = Oracles {
        set: 0,
        acknowledged: true,
    };

    fn bit(id: OracleId) -> u8 {
        1 << ORACLES.iter().position(|s| s.id == id).unwrap_or(0)
    }

    /// `id` alone.
    pub fn only(id: OracleId) -> Oracles {
        Oracles {
            set: Self::bit(id),
            ..Oracles::ALL
        }
    }

    /// This set without `id`.
    pub fn without(self, id: OracleId) -> Oracles {
        Oracles {
            set: self.set & !Self::bit(id),
            ..self
        }
    }

    /// Whether `id` is in the set.
    pub fn has(self, id: OracleId) -> bool {
        self.set & Self::bit(id) != 0
    }

    /// This set with the model acknowledging no known divergence: each is reported as the
    /// mismatch it is.
    pub fn unacknowledged(self) -> Oracles {
        Oracles {
            acknowledged: false,
            ..self
        }
    }

    /// Whether the model acknowledges the known divergences (see [`Oracles::unacknowledged`]).
    pub fn acknowledged(self) -> bool {
        self.acknowledged
    }
}

/// What one step gave the mirrors, for the oracles to judge.
pub struct StepFacts<'a> {
    /// The step's index.
    pub index: usize,
    /// Its outcome.
    pub outcome: &'a Outcome,
    /// The values the wgpu mirror computed itself.
    pub on_wgpu: &'a [Computed],
    /// Why Burn does not pin the step's result down, read from its eager operands before the
    /// mirrors moved on (an `argmax` over a tie, an out-of-range cast), if it does not.
    pub unspecified: Option<compare::Unpinned>,
    /// The absolute tolerance its float result needs beyond its family's, where its entry
    /// says so (see `compare::absolute_floor`).
    pub absolute_floor: Option<f64>,
}

/// An oracle. Lockstep oracles implement the step and scope hooks, trace oracles `after_run`;
/// all of them read the [`Shared`] mirrors and push [`Violation`]s.
pub trait Oracle {
    /// After step `index` ran, before the mirrors follow it: they still hold its operands
    /// (the step may write a slot it reads).
    fn before_mirrors(&mut self, _shared: &Shared, _world: &World<'_>, _index: usize) {}

    /// After a step ran and the mirrors followed it.
    fn after_step(&mut self, _shared: &mut Shared, _world: &World<'_>, _facts: &StepFacts<'_>) {}

    /// After a scope completed with a graph.
    fn scope_completed(
        &mut self,
        _shared: &mut Shared,
        _world: &World<'_>,
        _scope: &crate::interpreter::CompletedScope<'_>,
    ) {
    }

    /// After the run, over its trace (panics classified).
    fn after_run(&mut self, _program: &Program, _trace: &Trace, _report: &mut OracleReport) {}
}
