//! The reference oracle: every value a step hands back is judged against the op's definition,
//! computed on host arrays (f64 floats, exact ints, bools) by code that shares nothing with
//! Burn, so a bug on a path every backend shares (dispatch's forwarding, a composite op, a Flex
//! kernel in a CPU-only run) shows too.
//!
//! Each step is judged on the operands Burn itself holds for it (its eager Flex values, read
//! back as host arrays), so the first wrong value is found at the step that made it and no
//! rounding compounds along a chain. The references are tables, one row per op-table entry
//! ([`elementwise`], [`along_dim`], [`module`]) plus the ops outside the tables ([`fixed`]); an
//! entry without one says why, and a value it cannot pin down (a NaN's order, a tie, an
//! overflow of the value's dtype, a random draw) is counted, not compared.

pub mod along_dim;
pub mod bound;
mod definition;
pub mod documented;
pub mod elementwise;
mod elsewhere;
pub mod error;
pub mod fixed;
pub mod gradient;
pub mod host;
mod judge;
pub mod module;
mod on_flex;
pub mod quantization;
mod track;

pub use definition::{host_of, of_op};
use elsewhere::Judging;
pub use judge::rounded_ulps;
use judge::{bounds, Expected, Judged, Value, Why};
use on_flex::{family, judgement};
use track::{judge_value, GraphNodes, Track};

use burn::tensor::{BoolStore, DType};

use super::compare::Poison;
use super::payload::{Derivation, Mismatch, Payload};
pub use super::ReferenceCounts;
use super::{Backend, Deviation, Facts, Oracle, Shared, StepFacts, Violation};
use crate::interpreter::{Outcome, World};
use crate::program::limits::MAX_SLOTS;
use crate::program::{Dtype, Family, Kind, Op, Scheme, Step};

pub use super::REFERENCE_MISMATCH;

/// Whether entry `name` of `family` has a reference (`Err`: why not), as `ops --json` shows it.
/// The ops outside the tables (matmul, sum_dim, argmax, layout, cast, clamp, masks, logic) all
/// have one ([`fixed`]).
pub fn status(family: Family, name: &str) -> Result<(), &'static str> {
    use elementwise::{row, Binary, Unary};
    let none = "no row in the reference table";
    let binary = |table| match row(table, name) {
        Some(Binary::Missing(why)) => Err(why),
        Some(_) => Ok(()),
        None => Err(none),
    };
    match family {
        Family::Unary => match row(elementwise::UNARY, name) {
            Some(Unary::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        Family::Binary => binary(elementwise::BINARY),
        Family::Compare => binary(elementwise::COMPARE),
        Family::Scalar => binary(elementwise::SCALAR),
        Family::Quantized => row(elementwise::QUANTIZED, name).map(|_| ()).ok_or(none),
        Family::AlongDim => match row(along_dim::ALONG_DIM, name) {
            Some(along_dim::Along::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        Family::Module => match row(module::MODULE, name) {
            Some(module::Module::Missing(why)) => Err(why),
            Some(_) => Ok(()),
            None => Err(none),
        },
        Family::Fixed if crate::program::FixedOp::named(name).is_some() => Ok(()),
        Family::Fixed => Err(none),
    }
}

/// The scheme `op`'s reference round-trips its operand through, if it is a quantized round
/// trip (see [`host::quantized`]): its value is judged within one step of the operand's scale.
/// The plain tables' entries quantize with Burn's default scheme.
pub fn quantized_scheme(op: &Op) -> Option<Scheme> {
    let default = match op {
        Op::Quantized { scheme, .. } => return Some(*scheme),
        Op::Unary { op, .. } => matches!(
            elementwise::UNARY[op.index()].1,
            elementwise::Unary::Quantized(_)
        ),
        Op::AlongDim { op, .. } => matches!(
            along_dim::ALONG_DIM[op.index()].1,
            along_dim::Along::Quantized(_)
        ),
        Op::Module { op, .. } => {
            matches!(module::MODULE[op.index()].1, module::Module::Quantized)
        }
        _ => false,
    };
    default.then_some(Scheme::DEFAULT)
}

impl Reference {
    /// The poison of a value computed from `reads`: a value computed from a known bug's garbage
    /// is that bug's, not a new one.
    fn inherited(&self, reads: &[u8]) -> Option<&'static str> {
        (reads.iter())
            .find_map(|s| self.known_bug[usize::from(*s)])
            .map(|_| Poison::FromPoisoned.name())
    }
}

/// Which output of replay `step` slot `out` holds: the last one written to it.
fn replay_output(step: &Step, out: u8) -> Option<usize> {
    match step {
        Step::Replay { outputs, .. } => outputs.iter().rposition(|o| *o == out),
        _ => None,
    }
}

/// Why a value with reference `expected` is left open, if it is: it has none, it is computed
/// from a known bug's garbage, or it is a random draw.
fn open_reason(
    expected: &Option<Result<Expected, Why>>,
    inherited: bool,
    random: bool,
) -> Option<&str> {
    match expected {
        None => None,
        Some(_) if inherited => Some(Poison::FromPoisoned.name()),
        Some(Err(why)) => Some(why.as_ref()),
        Some(Ok(_)) if random => Some("random draw"),
        Some(Ok(_)) => None,
    }
}

/// The reference oracle's state over one run: what the eager Flex mirror holds, and the wgpu
/// mirror where the differential runs (each value judged over its own backend's operands).
pub struct Reference {
    flex: Track,
    /// The wgpu mirror's values.
    on_wgpu: Track,
    /// Where the current step's definition does not pin wgpu's result down, over wgpu's
    /// operands (what the differential leaves open, WGSL's unspecified NaN and overflow cases
    /// included), at which operand elements.
    unpinned_on_wgpu: Option<super::compare::Unpinned>,
    /// Per slot, the known bug that makes what Flex computes from its value garbage, if one
    /// does: a wgpu bool moved to Flex keeps its `Bool(U32)` storage, which Flex misreads (the
    /// catalogued bool-storage-transfer bug), and so does every value computed from it.
    known_bug: Vec<Option<&'static str>>,
    /// Every value the run made, for the gradients' finite differences ([`gradient`]); kept
    /// only in a program with a `backward` step (decided at its first step).
    tape: Option<Vec<gradient::Node>>,
    /// Whether the tape was decided on.
    taped: bool,
    /// Per slot, its current value's node on the tape.
    node: Vec<Option<usize>>,
    /// The tape nodes whose eager value differed from its definition: a replay computing
    /// through one meets that finding again.
    differed: std::collections::BTreeSet<usize>,
    /// The completed scopes, by graph number, whose graph holds a wgpu bool's `Bool(U32)`
    /// bytes, which Flex misreads where it replays them.
    misread_graphs: std::collections::BTreeSet<usize>,
    /// Per completed scope, by its graph number: the tape nodes of its graph's inputs and
    /// outputs (the declared ones that were capture tensors, in order).
    graphs: std::collections::HashMap<usize, GraphNodes>,
}

impl Default for Reference {
    fn default() -> Self {
        Reference {
            flex: Track::default(),
            on_wgpu: Track::default(),
            unpinned_on_wgpu: None,
            known_bug: vec![None; usize::from(MAX_SLOTS)],
            tape: None,
            taped: false,
            node: vec![None; usize::from(MAX_SLOTS)],
            differed: std::collections::BTreeSet::new(),
            misread_graphs: std::collections::BTreeSet::new(),
            graphs: std::collections::HashMap::new(),
        }
    }
}

/// Where a mismatch's float operands lie, as its signature names it: ` holding NaN or inf`,
/// ` holding a value past half its range` (where doubling overflows: a quantization scale, an
/// asinh), or nothing. A bug met only at the range's edge or at a non-finite value is another
/// root cause than one met at ordinary values, so a case stored for one (a quantized flip of
/// f32::MAX) does not make the other known.
/// The edge comes first: an edge fill of `mixed` holds both, and its finite extremes are what
/// overflows. For a step that quantizes, the range is f32's at most: Flex computes a
/// quantization's scale in f32 whatever the tensor's dtype (burn-flex ops/qtensor.rs:64-118),
/// so an F64 operand holding f32::MAX meets the same overflow as an F32 one.
fn regime<'a>(step: &Step, operands: impl Iterator<Item = &'a Value>) -> &'static str {
    let quantizes = matches!(step, Step::Op { op, .. } if quantized_scheme(op).is_some());
    let mut non_finite = false;
    for v in operands {
        let Some(largest) = Dtype::from_burn(v.data.dtype())
            .filter(|d| d.kind() == Kind::Float)
            .map(Dtype::largest)
            .map(|l| {
                if quantizes {
                    l.min(f64::from(f32::MAX))
                } else {
                    l
                }
            })
        else {
            continue;
        };
        for x in v.host().floats().into_iter().flatten().flatten() {
            if x.is_finite() && x.abs() > largest / 2.0 {
                return " holding a value past half its range";
            }
            non_finite |= !x.is_finite();
        }
    }
    if non_finite {
        " holding NaN or inf"
    } else {
        ""
    }
}

/// A reference mismatch at step `index` on `backend`: the entry `what` over its operands'
/// `dtypes` and their `regime`, and the element (`at`) of output `out` where Burn's value (`got`,
/// of `dtype`) differs from the definition's (`want`).
fn mismatch(
    (index, by): (usize, Derivation),
    backend: Backend,
    (what, dtypes, regime): (&str, &[DType], &str),
    (out, at, want, got, dtype): on_flex::Found,
) -> Violation {
    let listed = (dtypes.iter())
        .map(|d| format!("{d:?}"))
        .collect::<Vec<_>>()
        .join(", ");
    let on = if backend == Backend::Wgpu {
        " on wgpu"
    } else {
        ""
    };
    let deviation = Deviation::between(&want, &got, Some(dtype));
    let mismatch = Mismatch {
        slot: out,
        element: at,
        expected: want,
        actual: got,
    };
    Violation {
        step: index,
        class: REFERENCE_MISMATCH,
        summary: format!("{what} over ({listed}){regime}{on} differs from its definition"),
        facts: Facts {
            deviation,
            entry: Some(what.to_string()),
            dtype: dtypes.first().copied().and_then(Dtype::from_burn),
            backend: Some(backend),
        },
        message: mismatch.to_string(),
        payload: Payload::Reference {
            mismatch,
            by,
            backend,
        },
        ..Violation::default()
    }
}

/// Whether a value Burn holds is wgpu's bool storage on Flex, which Flex misreads (see
/// [`Reference::known_bug`]).
fn misread_bools(dtype: DType) -> Option<&'static str> {
    (dtype == DType::Bool(BoolStore::U32)).then(|| Poison::BoolU32OnFlex.name())
}

impl Oracle for Reference {
    /// Reads the operands of step `index` left unread, from the mirrors as they held them.
    fn before_mirrors(&mut self, shared: &Shared, world: &World<'_>, index: usize) {
        let reads = world.program().steps[index].reads();
        let fresh: smallvec::SmallVec<[u8; 4]> = (reads.iter().copied())
            .filter(|s| self.flex.unread[usize::from(*s)])
            .collect();
        self.flex.read_operands(shared.flex.as_ref(), &fresh);
        for s in fresh {
            let i = usize::from(s);
            let dtype = self.flex.held[i].as_ref().map(|v| v.data.dtype());
            self.known_bug[i] = self.known_bug[i].or(dtype.and_then(misread_bools));
        }
        if let Some(wgpu) = shared.wgpu.as_ref().filter(|_| !shared.wgpu_failed) {
            self.on_wgpu.read_operands(Some(wgpu), &reads);
            // Over wgpu's own operands, which may hold a NaN or a pole where Flex's hold none
            // (or where Flex holds nothing at all).
            self.unpinned_on_wgpu =
                super::compare::unspecified(&world.program().steps[index], wgpu);
        }
    }

    /// Keeps the tape nodes of the graph's inputs and outputs, for its replays.
    fn scope_completed(
        &mut self,
        _shared: &mut Shared,
        _world: &World<'_>,
        scope: &crate::interpreter::CompletedScope<'_>,
    ) {
        let nodes = |slots: &[(u8, _)]| {
            (slots.iter())
                .map(|(s, _)| self.node[usize::from(*s)])
                .collect()
        };
        let graph = (nodes(scope.inputs), nodes(scope.outputs));
        self.graphs.insert(scope.ordinal, graph);
        if self.tape.is_some() && super::compare::holds_u32_bools(scope.graph) {
            self.misread_graphs.insert(scope.ordinal);
        }
    }

    fn after_step(&mut self, shared: &mut Shared, world: &World<'_>, facts: &StepFacts<'_>) {
        let step = &world.program().steps[facts.index];
        let writes = step.writes();
        self.start_tape(world);
        let reads = step.reads();
        let ok = matches!(facts.outcome, Outcome::Ok { .. });
        // A replay's outputs: the reference over the data the replay was fed, where it was fed.
        let replayed = ok
            .then(|| self.replay_references(world, facts.index))
            .flatten();
        let expected = ok.then(|| self.expected_here(world, step, facts)).flatten();
        let family = family(step);
        let (absolute, terms) = if ok {
            (self.flex.allowance(step, family), self.flex.scale(step))
        } else {
            (0.0, 0.0)
        };
        let random = step.draws();
        let inherited = self.inherited(&reads);
        let judgement = judgement(world, step, facts.index);
        let mut now: smallvec::SmallVec<[_; 2]> = smallvec::SmallVec::new();
        let mut differed: smallvec::SmallVec<[u8; 2]> = smallvec::SmallVec::new();
        for &out in writes.iter() {
            // A replay's outputs each have their own reference, with their path's scale; a slot
            // named twice holds the last output written to it.
            let here;
            let mine =
                (replayed.as_ref().zip(replay_output(step, out))).and_then(|(r, j)| r.get(j));
            let (expected, absolute, terms) = match mine {
                Some(Ok((host, scale))) => {
                    here = Some(Ok(Expected::Host(host.clone())));
                    (&here, bounds(family).0 * scale, *scale)
                }
                Some(Err(why)) => {
                    here = Some(Err(Why::Borrowed(why)));
                    (&here, absolute, terms)
                }
                None => (&expected, absolute, terms),
            };
            // A replay writes nothing into a slot named past its graph's outputs: no value.
            if matches!(step, Step::Replay { .. }) && world.held(out).is_none() {
                now.push((out, None, inherited, true));
                continue;
            }
            // Only a value to judge is read now; the others when an operand (see `unread`).
            if let Some(why) = open_reason(expected, inherited.is_some(), random) {
                shared.report.reference.count_open(why);
            }
            let judged = matches!(expected, Some(Ok(_))) && inherited.is_none() && !random;
            if !judged {
                now.push((out, None, inherited, true));
                continue;
            }
            let actual = Value::read(shared, out);
            let bug = inherited.or(actual.as_ref().and_then(|v| misread_bools(v.data.dtype())));
            let counts = &mut shared.report.reference;
            match (&expected, &actual) {
                (_, None) => counts.count_open("value not readable"),
                (Some(Ok(e)), Some(a)) => {
                    let allow = (absolute, terms, &self.flex);
                    let at = (step, Backend::Flex, &mut counts.bounds);
                    match judge_value(e, a, family, allow, at) {
                        Judged::Agree(known) if known == 0 && e.host().numel() > 0 => {
                            counts.count_open("every element open")
                        }
                        Judged::Agree(_) => {
                            counts.judged += 1;
                            counts.gradients += usize::from(matches!(step, Step::Backward { .. }));
                            shared.report.judgements.extend(judgement);
                        }
                        Judged::Differ(at, want, got) => {
                            differed.push(out);
                            shared.report.judgements.extend(judgement);
                            let found = (out, at, want, got, a.data.dtype());
                            let violation = self.mismatch(shared, world, facts.index, found);
                            shared.report.violations.push(violation);
                        }
                    }
                }
                (_, Some(_)) => {}
            }
            now.push((out, actual.map(std::rc::Rc::new), bug, false));
        }
        self.hold(shared, step, (ok, &reads), now);
        let wrong = differed.iter().filter_map(|s| self.node[usize::from(*s)]);
        self.differed.extend(wrong);
        if shared.wgpu.is_some() {
            let on = Judging {
                index: facts.index,
                ok,
                random,
                family,
                differed: &differed,
            };
            self.judge_on_wgpu(shared, step, facts, &on);
        }
    }
}

#[cfg(test)]
mod tests;
