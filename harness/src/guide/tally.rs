//! The session's count of what each oracle judged, per (entry, operand kind, oracle, context)
//! and per operand dtype, with the time each was first judged, and the pairs each oracle can
//! judge at all.

use std::collections::{BTreeMap, HashMap};

use serde::Serialize;

use burn::tensor::DType;

use crate::interpreter::{Outcome, Trace};
use crate::oracles::{reference, Context, OracleId};
use crate::program::limits::MAX_SLOTS;
use crate::program::{
    entries, operand_kinds, result_kind, why_not_replayed, Dtype, Entry, Kind, Program, Step,
    DTYPES,
};

/// What a judgement is counted under.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct Key {
    /// The op entry.
    pub entry: Entry,
    /// Its first operand's kind.
    pub kind: Kind,
    /// The oracle.
    #[serde(serialize_with = "oracle_name")]
    pub oracle: OracleId,
    /// Where the value was computed.
    pub context: Context,
}

fn oracle_name<S: serde::Serializer>(oracle: &OracleId, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(oracle.spec().name)
}

/// An (entry, kind) pair.
pub type Pair = (Entry, Kind);

/// What a judgement is counted under per dtype: the entry, the dtype its first operand held as
/// the run had it (Burn's name, `F16` or `Bool(U8)`; [`QUANTIZED`] for every quantization
/// scheme), the oracle and the context. Not steered by: it says which dtypes a session's
/// judgements reached.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub struct DtypeKey {
    /// The op entry.
    pub entry: Entry,
    /// Its first operand's dtype.
    pub dtype: &'static str,
    /// The oracle.
    #[serde(serialize_with = "oracle_name")]
    pub oracle: OracleId,
    /// Where the value was computed.
    pub context: Context,
}

/// The dtype name a quantized operand is counted under, whatever its scheme.
pub const QUANTIZED: &str = "QFloat";

/// The name a per-dtype count keeps for a dtype: the table's, or [`QUANTIZED`]; `None` for a
/// dtype no program names (`Flex32`).
pub fn dtype_label(dtype: DType) -> Option<&'static str> {
    if matches!(dtype, DType::QFloat(_)) {
        return Some(QUANTIZED);
    }
    Dtype::from_burn(dtype).map(|d| d.spec().name)
}

/// The dtype's family, for the per-dtype table: `float`, `int`, `uint`, `bool` or `quantized`.
pub fn dtype_family(label: &str) -> &'static str {
    match DTYPES.iter().find(|d| d.name == label) {
        Some(d) if d.kind == Kind::Float => "float",
        Some(d) if d.kind == Kind::Bool => "bool",
        Some(d) if d.signed => "int",
        Some(_) => "uint",
        None => "quantized",
    }
}

/// Where a dtype's row goes in a per-dtype table: the dtype table's order, quantized last.
pub fn dtype_order(label: &str) -> usize {
    DTYPES
        .iter()
        .position(|d| d.name == label)
        .unwrap_or(DTYPES.len())
}

/// The kind of the entries a dtype's row is counted against (a quantized tensor is a float).
pub fn dtype_kind(label: &str) -> Kind {
    DTYPES
        .iter()
        .find(|d| d.name == label)
        .map_or(Kind::Float, |d| d.kind)
}

/// Per step, the dtype its first operand held as the run had it: that slot's dtype as the last
/// step before it that wrote the slot, and succeeded, handed it back (a replay per output; a
/// step that panicked or was skipped left the earlier value in place). One pass over the
/// program, as `oracles::naming::operand_dtypes` reads it backward for one step.
fn first_operand_dtypes(program: &Program, trace: &Trace) -> Vec<Option<&'static str>> {
    let mut outcomes: Vec<Option<&Outcome>> = vec![None; program.steps.len()];
    for record in &trace.steps {
        if let Some(o) = outcomes.get_mut(record.index) {
            *o = Some(&record.outcome);
        }
    }
    let mut held: [Option<&'static str>; MAX_SLOTS as usize] = [None; MAX_SLOTS as usize];
    let mut firsts = Vec::with_capacity(program.steps.len());
    for (step, outcome) in program.steps.iter().zip(outcomes) {
        firsts.push(step.reads().first().and_then(|s| held[usize::from(*s)]));
        let Some(Outcome::Ok { value, outputs, .. }) = outcome else {
            continue;
        };
        match step {
            Step::Replay { outputs: slots, .. } => {
                for (k, slot) in slots.iter().enumerate() {
                    held[usize::from(*slot)] = outputs.get(k).and_then(|v| dtype_label(v.dtype));
                }
            }
            _ => {
                let label = value.as_ref().and_then(|v| dtype_label(v.dtype));
                for slot in step.writes() {
                    held[usize::from(slot)] = label;
                }
            }
        }
    }
    firsts
}

/// The oracle views a summary reports: each oracle in the contexts it judges there.
pub const VIEWS: &[(OracleId, &[Context])] = &[
    (OracleId::EagerReplay, &[Context::Replayed]),
    (OracleId::Reference, &[Context::Eager]),
    (OracleId::Reference, &[Context::Gradient]),
    (OracleId::Differential, &[Context::Wgpu]),
    (OracleId::Model, &[Context::Eager, Context::Recorded]),
];

/// A view's name: the oracle's, with the context where one oracle has two views.
pub fn view_name(oracle: OracleId, contexts: &[Context]) -> String {
    match (oracle, contexts) {
        (OracleId::Reference, [Context::Gradient]) => "reference (gradients)".into(),
        _ => oracle.spec().name.into(),
    }
}

/// Why `oracle` in `contexts` can never judge `pair`, if it cannot.
pub fn why_unjudgeable(oracle: OracleId, contexts: &[Context], pair: Pair) -> Option<&'static str> {
    let (entry, kind) = pair;
    match (oracle, contexts) {
        (OracleId::EagerReplay, _) => why_not_replayed(entry),
        (OracleId::Reference, [Context::Gradient]) if kind != Kind::Float => {
            Some("only a float has a gradient")
        }
        (OracleId::Reference, [Context::Gradient])
            if result_kind(entry, kind) != Some(Kind::Float) =>
        {
            Some("the result is no float: no gradient flows back through it")
        }
        (OracleId::Differential, _)
            if why_not_replayed(entry).is_some_and(|w| w.starts_with("draws")) =>
        {
            Some("draws random values: Flex and wgpu each draw their own")
        }
        (OracleId::Reference, _) => reference::status(entry.family, entry.name).err(),
        _ => None,
    }
}

/// The counts of one session.
#[derive(Default, Debug, Clone)]
pub struct Tally {
    counts: HashMap<Key, u64>,
    /// Seconds into the session when each key was first judged.
    first: HashMap<Key, f64>,
    /// The panic classes met at op steps of each pair (the real run's and the mirrors'): why a
    /// pair an oracle never judges may be out of its reach, a known bug in its way.
    met: HashMap<Pair, BTreeMap<String, u64>>,
    /// The judgements per operand dtype.
    by_dtype: HashMap<DtypeKey, u64>,
}

impl Tally {
    /// Counts what one run of `program` showed, `now` seconds into the session: each value an
    /// oracle judged, and each panic met at an op step (the real run's and the mirrors'), by
    /// the step's (entry, kind). Returns the keys judged for the first time.
    pub fn add(&mut self, program: &Program, verdict: &crate::Verdict, now: f64) -> Vec<Key> {
        // The operand kinds take a pass over the program: made once, and only when asked.
        let mut kinds = None;
        let mut pair_at = |index: usize| -> Option<Pair> {
            let Some(Step::Op { op, .. }) = program.steps.get(index) else {
                return None;
            };
            let kinds = kinds.get_or_insert_with(|| operand_kinds(&program.steps));
            kinds
                .get(index)
                .copied()
                .flatten()
                .map(|kind| (op.entry(), kind))
        };
        let mut new = Vec::new();
        let mut dtypes = None;
        for j in &verdict.oracles.judgements {
            let Some((entry, kind)) = pair_at(j.step) else {
                continue;
            };
            let dtypes =
                dtypes.get_or_insert_with(|| first_operand_dtypes(program, &verdict.trace));
            // An operand of another kind than the pair's (a mask, an index) is not the dtype
            // the entry was judged over.
            let over = dtypes.get(j.step).copied().flatten();
            if let Some(dtype) = over.filter(|d| dtype_kind(d) == kind) {
                *self
                    .by_dtype
                    .entry(DtypeKey {
                        entry,
                        dtype,
                        oracle: j.oracle,
                        context: j.context,
                    })
                    .or_default() += 1;
            }
            let key = Key {
                entry,
                kind,
                oracle: j.oracle,
                context: j.context,
            };
            let count = self.counts.entry(key).or_default();
            if *count == 0 {
                self.first.insert(key, now);
                new.push(key);
            }
            *count += 1;
        }
        for (index, panic) in verdict.trace.panics() {
            if let Some(pair) = pair_at(index) {
                *self
                    .met
                    .entry(pair)
                    .or_default()
                    .entry(panic.class.clone())
                    .or_default() += 1;
            }
        }
        new
    }

    /// Adds `other`'s counts (another worker's): counts and panic classes summed, each key's
    /// first judgement the earlier of the two.
    pub fn merge(&mut self, other: &Tally) {
        for (key, n) in &other.counts {
            *self.counts.entry(*key).or_default() += n;
        }
        for (key, t) in &other.first {
            let first = self.first.entry(*key).or_insert(*t);
            *first = first.min(*t);
        }
        for (pair, classes) in &other.met {
            let met = self.met.entry(*pair).or_default();
            for (class, n) in classes {
                *met.entry(class.clone()).or_default() += n;
            }
        }
        for (key, n) in &other.by_dtype {
            *self.by_dtype.entry(*key).or_default() += n;
        }
    }

    /// The panic class met most often at op steps of `pair`, with its count.
    pub fn most_met(&self, pair: Pair) -> Option<(&str, u64)> {
        self.met
            .get(&pair)?
            .iter()
            .max_by_key(|(class, n)| (**n, std::cmp::Reverse(class.as_str())))
            .map(|(class, n)| (class.as_str(), *n))
    }

    /// How often `key` was judged.
    pub fn count(&self, key: &Key) -> u64 {
        self.counts.get(key).copied().unwrap_or_default()
    }

    /// How often `oracle` judged `pair` in any of `contexts`.
    pub fn pair_count(&self, oracle: OracleId, contexts: &[Context], pair: Pair) -> u64 {
        contexts
            .iter()
            .map(|&context| {
                self.count(&Key {
                    entry: pair.0,
                    kind: pair.1,
                    oracle,
                    context,
                })
            })
            .sum()
    }

    /// When `oracle` first judged `pair` in any of `contexts`.
    pub fn first_judged(&self, oracle: OracleId, contexts: &[Context], pair: Pair) -> Option<f64> {
        contexts
            .iter()
            .filter_map(|&context| {
                self.first
                    .get(&Key {
                        entry: pair.0,
                        kind: pair.1,
                        oracle,
                        context,
                    })
                    .copied()
            })
            .reduce(f64::min)
    }

    /// Every key with its count, sorted.
    pub fn rows(&self) -> Vec<(Key, u64)> {
        let mut rows: Vec<(Key, u64)> = self.counts.iter().map(|(k, n)| (*k, *n)).collect();
        rows.sort();
        rows
    }

    /// Every per-dtype key with its count, sorted.
    pub fn dtype_rows(&self) -> Vec<(DtypeKey, u64)> {
        let mut rows: Vec<(DtypeKey, u64)> = self.by_dtype.iter().map(|(k, n)| (*k, *n)).collect();
        rows.sort();
        rows
    }

    /// Per operand dtype the session's judgements reached: how many entries each view judged
    /// over it, of the entries over its kind.
    pub fn dtype_views(&self) -> Vec<DtypeView> {
        dtype_views(&self.dtype_rows())
    }

    /// What one view says of the session: its pairs, how many were judged at least
    /// `enough` times, the least judged, and the times to first judgement.
    pub fn view(&self, oracle: OracleId, contexts: &[Context], enough: u64) -> View {
        let mut judgeable = Vec::new();
        let mut unjudgeable = BTreeMap::<&'static str, usize>::new();
        for (entry, kinds) in entries() {
            for &kind in kinds {
                match why_unjudgeable(oracle, contexts, (entry, kind)) {
                    Some(why) => *unjudgeable.entry(why).or_default() += 1,
                    None => judgeable.push((entry, kind)),
                }
            }
        }
        let mut counted: Vec<(Pair, u64)> = judgeable
            .iter()
            .map(|p| (*p, self.pair_count(oracle, contexts, *p)))
            .collect();
        counted.sort_by_key(|(p, n)| (*n, *p));
        let mut firsts: Vec<f64> = judgeable
            .iter()
            .filter_map(|p| self.first_judged(oracle, contexts, *p))
            .collect();
        firsts.sort_by(f64::total_cmp);
        View {
            name: view_name(oracle, contexts),
            pairs: judgeable.len(),
            enough,
            judged_enough: counted.iter().filter(|(_, n)| *n >= enough).count(),
            judged_once: firsts.len(),
            least: counted
                .iter()
                .take(10)
                .map(|((entry, kind), count)| Least {
                    entry: *entry,
                    kind: *kind,
                    count: *count,
                    met: self
                        .most_met((*entry, *kind))
                        .map(|(class, n)| (class.to_string(), n)),
                })
                .collect(),
            first_median_s: firsts.get(firsts.len() / 2).copied(),
            first_max_s: (firsts.len() == judgeable.len())
                .then(|| firsts.last().copied())
                .flatten(),
            unjudgeable,
        }
    }
}

/// What a session judged over one operand dtype.
#[derive(Debug, Serialize, PartialEq, Eq)]
pub struct DtypeView {
    /// Burn's name of the dtype ([`QUANTIZED`] for every scheme).
    pub dtype: &'static str,
    /// `float`, `int`, `uint`, `bool` or `quantized`.
    pub family: &'static str,
    /// Entries over its kind (the denominator).
    pub entries: usize,
    /// Entries some oracle judged over it.
    pub judged: usize,
    /// Per view (as [`VIEWS`] names them), the entries it judged over it.
    pub per_view: BTreeMap<String, usize>,
    /// Judgements over it, all oracles.
    pub judgements: u64,
}

/// What a session met over one dtype, before counting.
#[derive(Default)]
struct Met {
    entries: std::collections::BTreeSet<Entry>,
    per_view: BTreeMap<String, std::collections::BTreeSet<Entry>>,
    judgements: u64,
}

/// The per-dtype table of judgement rows: one row per dtype met, in [`dtype_order`].
fn dtype_views(rows: &[(DtypeKey, u64)]) -> Vec<DtypeView> {
    let mut judged: BTreeMap<&'static str, Met> = BTreeMap::new();
    for &(
        DtypeKey {
            entry,
            dtype,
            oracle,
            context,
        },
        count,
    ) in rows
    {
        let met = judged.entry(dtype).or_default();
        met.entries.insert(entry);
        met.judgements += count;
        if let Some((o, cs)) = VIEWS
            .iter()
            .find(|(o, cs)| *o == oracle && cs.contains(&context))
        {
            met.per_view
                .entry(view_name(*o, cs))
                .or_default()
                .insert(entry);
        }
    }
    let mut views: Vec<DtypeView> = judged
        .into_iter()
        .map(|(dtype, met)| {
            let kind = dtype_kind(dtype);
            let over: Vec<Entry> = entries()
                .into_iter()
                .filter(|(_, ks)| ks.contains(&kind))
                .map(|(e, _)| e)
                .collect();
            DtypeView {
                dtype,
                family: dtype_family(dtype),
                entries: over.len(),
                // Typing may give an operand a kind the entry's table row does not list (a
                // cast's source): judged, but not one of the entries over this kind.
                judged: met.entries.iter().filter(|e| over.contains(e)).count(),
                per_view: met
                    .per_view
                    .into_iter()
                    .map(|(v, es)| (v, es.iter().filter(|e| over.contains(e)).count()))
                    .collect(),
                judgements: met.judgements,
            }
        })
        .collect();
    views.sort_by_key(|v| dtype_order(v.dtype));
    views
}

/// One view of a session's tally, as the fuzz summary prints it.
#[derive(Debug, Serialize)]
pub struct View {
    /// The oracle (and context).
    pub name: String,
    /// The (entry, kind) pairs it can judge.
    pub pairs: usize,
    /// The threshold.
    pub enough: u64,
    /// Pairs judged at least `enough` times.
    pub judged_enough: usize,
    /// Pairs judged at least once.
    pub judged_once: usize,
    /// The ten least judged pairs.
    pub least: Vec<Least>,
    /// The median time to a pair's first judgement, over the pairs judged.
    pub first_median_s: Option<f64>,
    /// The longest, when every pair was judged.
    pub first_max_s: Option<f64>,
    /// Pairs it can never judge, per reason.
    pub unjudgeable: BTreeMap<&'static str, usize>,
}

/// A pair and its count.
#[derive(Debug, Serialize)]
pub struct Least {
    /// The entry.
    pub entry: Entry,
    /// The kind.
    pub kind: Kind,
    /// Its judgements.
    pub count: u64,
    /// The panic class its op steps met most often, with its count.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub met: Option<(String, u64)>,
}

impl std::fmt::Display for Least {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let kind = format!("{:?}", self.kind).to_lowercase();
        write!(f, "{} {kind} {}", self.entry, self.count)?;
        match &self.met {
            Some((class, n)) => write!(f, " (met {class} {n} times)"),
            None => Ok(()),
        }
    }
}
