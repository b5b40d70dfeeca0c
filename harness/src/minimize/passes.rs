//! The shrinking passes, in the order they run: cut after the failing step, keep its dependency
//! closure, delta debugging over steps, then simplify each step and rename slots; repeated until
//! nothing changes. Every candidate goes through `fixup`, so any cut still runs.

use std::collections::BTreeSet;

use anyhow::Result;

use crate::program::{
    AutodiffMode, DeviceRef, Dtype, ExitForm, Fill, Kind, Op, Program, QuantizedOp, Scheme, Slot,
    Step, UnaryOp,
};

/// The order candidates are judged by: fewer steps first, then shorter text, then smaller
/// numbers (so `capture2` -> `capture0` and `[3, 2]` -> `[1, 2]` count as progress).
pub fn smaller(a: &Program, b: &Program) -> bool {
    size(a) < size(b)
}

fn size(p: &Program) -> (usize, usize, u64) {
    let text = serde_json::to_string(p).unwrap_or_default();
    let digits = text
        .bytes()
        .filter(u8::is_ascii_digit)
        .map(|d| u64::from(d - b'0'))
        .sum();
    (p.steps.len(), text.len(), digits)
}

/// What the passes search over: the smallest program that still fails, and a way to try a
/// smaller one. The minimizer's search implements it, so the passes know nothing of its
/// bookkeeping.
pub(super) trait Search {
    /// The smallest failing program so far.
    fn best(&self) -> &Program;
    /// Tries `candidate`; whether it still failed and so became the best.
    fn try_candidate(&mut self, candidate: Program) -> Result<bool>;
    /// Names the pass that runs from now on, for progress reports.
    fn enter(&mut self, pass: &'static str);
    /// Tries `candidates`, all made from the best so far, in order, until one keeps the
    /// property and so becomes the best; its index. A search may run several at once.
    fn first_keeping(&mut self, candidates: Vec<Program>) -> Result<Option<usize>>
    where
        Self: Sized,
    {
        one_at_a_time(self, candidates)
    }
}

/// [`Search::first_keeping`] one candidate at a time.
pub(super) fn one_at_a_time(
    search: &mut impl Search,
    candidates: Vec<Program>,
) -> Result<Option<usize>> {
    for (k, candidate) in candidates.into_iter().enumerate() {
        if search.try_candidate(candidate)? {
            return Ok(Some(k));
        }
    }
    Ok(None)
}

pub(super) fn run_all(search: &mut impl Search, failing_step: Option<usize>) -> Result<()> {
    if let Some(step) = failing_step.filter(|s| *s < search.best().steps.len()) {
        search.enter("cut after the failing step");
        let prefix = search.best().steps[..=step].to_vec();
        search.try_candidate(Program::new(prefix))?;
        search.enter("dependency closure");
        let closure = dependency_closure(search.best(), step);
        search.try_candidate(closure)?;
    }
    loop {
        let before = search.best().clone();
        search.enter("delta debugging");
        ddmin(search)?;
        search.enter("remove scope brackets");
        unbracket(search)?;
        search.enter("simplify steps");
        simplify(search)?;
        search.enter("rename slots and devices");
        search.try_candidate(renamed(search.best()))?;
        search.try_candidate(devices_renamed(search.best()))?;
        if *search.best() == before {
            return Ok(());
        }
    }
}

/// Steps `failing` depends on through the slots it reads, transitively, plus the scopes around
/// every kept step and the whole scope of any replayed graph.
fn dependency_closure(program: &Program, failing: usize) -> Program {
    let steps = &program.steps;
    let ends = program.scope_ends();
    let exits: Vec<usize> = (0..steps.len())
        .filter(|&i| matches!(steps[i], Step::ExitScope { .. }))
        .collect();
    let enter_of = |exit: usize| ends.iter().position(|e| *e == Some(exit));
    let mut keep = BTreeSet::from([failing]);
    let mut live: BTreeSet<Slot> = steps[failing].reads().into_iter().collect();
    if let Step::ExitScope { .. } = steps[failing] {
        keep.extend(enter_of(failing));
    }
    for j in (0..failing).rev() {
        let step = &steps[j];
        let feeds = step.writes().iter().any(|s| live.contains(s));
        let replayed = keep.iter().any(|&k| match steps[k] {
            Step::Replay { graph, .. } => exits.get(usize::from(graph)).is_some_and(|&exit| {
                enter_of(exit).is_some_and(|enter| (enter..=exit).contains(&j))
            }),
            _ => false,
        });
        if feeds || replayed {
            keep.insert(j);
            for s in step.writes() {
                live.remove(&s);
            }
            live.extend(step.reads());
        }
    }
    // Keep the scope brackets around every kept step.
    for (enter, end) in ends.iter().enumerate() {
        if let Some(exit) = *end {
            if keep.iter().any(|&k| k > enter && k < exit) {
                keep.insert(enter);
                keep.insert(exit);
            }
        }
    }
    Program::new(keep.into_iter().map(|i| steps[i].clone()).collect())
}

/// Zeller's ddmin over the step list: remove chunks, halving their size when none can go.
fn ddmin(search: &mut impl Search) -> Result<()> {
    let mut n = 2usize;
    loop {
        let steps = search.best().steps.clone();
        let len = steps.len();
        if len == 0 {
            return Ok(());
        }
        let chunk = len.div_ceil(n.min(len));
        let candidates = (0..len)
            .step_by(chunk)
            .map(|start| {
                let mut candidate = steps.clone();
                candidate.drain(start..(start + chunk).min(len));
                Program::new(candidate)
            })
            .collect();
        if search.first_keeping(candidates)?.is_some() {
            n = n.saturating_sub(1).max(2);
        } else if chunk == 1 {
            return Ok(());
        } else {
            n = (n * 2).min(len);
        }
    }
}

/// Removes each scope's enter and exit together, keeping the steps between them. ddmin removes
/// aligned chunks and single steps, so it never removes a bracket pair that straddles a chunk
/// edge, while removing one bracket alone re-pairs the other (a nested scope that failed to open,
/// left inside the scope around it, stayed in a stored case this way). A replay names its graph
/// by the exit's ordinal, so the replays of later graphs are renumbered: without that no scope
/// before a replayed one could go (five empty scopes stayed in a 15-step minimized form of
/// wgpu-replayed-max-pool1d-indices-do-not-fit-wgpus-i32-ints).
fn unbracket(search: &mut impl Search) -> Result<()> {
    let mut from = 0;
    loop {
        let best = search.best();
        let ends = best.scope_ends();
        let (enters, candidates): (Vec<usize>, Vec<Program>) = (from..best.steps.len())
            .filter_map(|enter| Some((enter, ends[enter]?)))
            .map(|(enter, exit)| (enter, Program::new(unbracketed(best, enter, exit))))
            .unzip();
        match search.first_keeping(candidates)? {
            // The scope's brackets went: the next scope to try starts where they stood.
            Some(k) => from = enters[k],
            None => return Ok(()),
        }
    }
}

/// `program`'s steps without the scope of steps `enter..=exit`'s brackets, later replays
/// renumbered.
fn unbracketed(program: &Program, enter: usize, exit: usize) -> Vec<Step> {
    let ordinal = program.steps[..exit]
        .iter()
        .filter(|s| matches!(s, Step::ExitScope { .. }))
        .count();
    program
        .steps
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != enter && *i != exit)
        .map(|(_, s)| match s {
            Step::Replay {
                graph,
                feed,
                outputs,
            } if usize::from(*graph) > ordinal => Step::Replay {
                graph: graph - 1,
                feed: feed.clone(),
                outputs: outputs.clone(),
            },
            s => s.clone(),
        })
        .collect()
}

/// Tries simpler forms of each step, one at a time.
fn simplify(search: &mut impl Search) -> Result<()> {
    let mut i = 0;
    while i < search.best().steps.len() {
        let best = search.best();
        let candidates = simpler(&best.steps[i])
            .into_iter()
            .map(|variant| {
                let mut steps = best.steps.clone();
                steps[i] = variant;
                Program::new(steps)
            })
            .collect();
        search.first_keeping(candidates)?;
        i += 1;
    }
    Ok(())
}

fn simpler_device(device: DeviceRef) -> Vec<DeviceRef> {
    match device {
        DeviceRef::Capture(k) if k > 0 => vec![DeviceRef::Capture(0)],
        DeviceRef::FlexAutodiff | DeviceRef::Wgpu => vec![DeviceRef::Flex],
        _ => Vec::new(),
    }
}

fn without_each(list: &[Slot]) -> Vec<Vec<Slot>> {
    (0..list.len())
        .map(|i| {
            let mut shorter = list.to_vec();
            shorter.remove(i);
            shorter
        })
        .collect()
}

/// Candidate replacements for one step, simplest first.
fn simpler(step: &Step) -> Vec<Step> {
    let mut out = Vec::new();
    match step {
        Step::Create {
            out: slot,
            kind,
            shape,
            fill,
            device,
            dtype,
        } => simpler_create((*slot, *kind, *dtype), shape, *fill, *device, &mut out),
        // A lower thread is the simpler schedule.
        Step::Thread { thread } => out.extend((1..*thread).map(|thread| Step::Thread { thread })),
        Step::EnterScope { device } => {
            out.extend(
                simpler_device(*device)
                    .into_iter()
                    .map(|device| Step::EnterScope { device }),
            );
        }
        Step::ExitScope {
            inputs,
            outputs,
            form,
        } => simpler_exit(inputs, outputs, *form, &mut out),
        Step::Op { out: slot, op } => simpler_op(*slot, op, &mut out),
        Step::ToDevice {
            out: slot,
            src,
            device,
        } => {
            for device in simpler_device(*device) {
                out.push(Step::ToDevice {
                    out: *slot,
                    src: *src,
                    device,
                });
            }
        }
        Step::Replay {
            graph,
            feed,
            outputs,
        } => simpler_replay(*graph, feed, outputs, &mut out),
        Step::Autodiff {
            out: slot,
            src,
            mode: AutodiffMode::RequireGrad,
        } => out.push(Step::Autodiff {
            out: *slot,
            src: *src,
            mode: AutodiffMode::Enable,
        }),
        Step::Device { device, call } => {
            out.extend(
                simpler_device(*device)
                    .into_iter()
                    .map(|device| Step::Device {
                        device,
                        call: *call,
                    }),
            );
        }
        // Each tensor fewer, then the one-tensor read that does not go through a transaction.
        Step::Transaction { srcs, fallible } => {
            for k in 0..srcs.len() {
                let mut fewer = srcs.clone();
                fewer.remove(k);
                out.push(Step::Transaction {
                    srcs: fewer,
                    fallible: *fallible,
                });
            }
            out.extend(srcs.first().map(|src| Step::Read {
                src: *src,
                fallible: *fallible,
            }));
        }
        Step::Read { .. }
        | Step::Clone { .. }
        | Step::Drop { .. }
        | Step::Autodiff { .. }
        | Step::Backward { .. } => {}
    }
    out
}

/// Simpler creates: the default dtype, one element, unit dimensions, a dimension fewer, zeros,
/// a simpler device.
fn simpler_create(
    (slot, kind, dtype): (Slot, Kind, Option<Dtype>),
    shape: &[u8],
    fill: Fill,
    device: DeviceRef,
    out: &mut Vec<Step>,
) {
    let with = |shape: Vec<u8>, fill: Fill, device: DeviceRef| Step::Create {
        out: slot,
        kind,
        shape,
        fill,
        device,
        dtype,
    };
    // The device's default dtype is the simpler program.
    if dtype.is_some() {
        out.push(Step::Create {
            out: slot,
            kind,
            shape: shape.to_vec(),
            fill,
            device,
            dtype: None,
        });
    }
    out.push(with(vec![1], fill, device));
    out.push(with(vec![1; shape.len()], fill, device));
    if shape.len() > 1 {
        out.push(with(shape[1..].to_vec(), fill, device));
    }
    if fill != Fill::Zeros {
        out.push(with(shape.to_vec(), Fill::Zeros, device));
    }
    for d in simpler_device(device) {
        out.push(with(shape.to_vec(), fill, d));
    }
}

/// Simpler scope exits: the complete form, an input or an output fewer.
fn simpler_exit(inputs: &[Slot], outputs: &[Slot], form: ExitForm, out: &mut Vec<Step>) {
    if !form.is_complete() {
        out.push(Step::ExitScope {
            inputs: inputs.to_vec(),
            outputs: outputs.to_vec(),
            form: ExitForm::Complete,
        });
    }
    for inputs in without_each(inputs) {
        out.push(Step::ExitScope {
            inputs,
            outputs: outputs.to_vec(),
            form,
        });
    }
    for outputs in without_each(outputs) {
        out.push(Step::ExitScope {
            inputs: inputs.to_vec(),
            outputs,
            form,
        });
    }
}

/// Simpler ops: a clone or the plainest unary op of the first operand, a cast to its kind's
/// default dtype, a quantization's plain round trip or default scheme, a concatenation of one
/// operand fewer.
fn simpler_op(slot: Slot, op: &Op, out: &mut Vec<Step>) {
    let first = op.operands()[0];
    // The plainest ways to produce a value from the same operand.
    out.push(Step::Clone {
        out: slot,
        src: first,
    });
    if !matches!(
        op,
        Op::Unary {
            op: UnaryOp::PLAINEST,
            ..
        }
    ) {
        out.push(Step::Op {
            out: slot,
            op: Op::Unary {
                op: UnaryOp::PLAINEST,
                src: first,
            },
        });
    }
    // A cast naming a dtype is simpler as the plain conversion of its kind.
    if let Op::Cast {
        src,
        to,
        dtype: Some(_),
    } = op
    {
        out.push(Step::Op {
            out: slot,
            op: Op::Cast {
                src: *src,
                to: *to,
                dtype: None,
            },
        });
    }
    // A quantized entry is simpler as the plain round trip, and in Burn's default
    // scheme.
    if let Op::Quantized {
        op: entry,
        src,
        scheme,
    } = op
    {
        let simpler = [(QuantizedOp::FIRST, *scheme), (*entry, Scheme::DEFAULT)];
        for (entry2, scheme2) in simpler {
            if (entry2, scheme2) != (*entry, *scheme) {
                out.push(Step::Op {
                    out: slot,
                    op: Op::Quantized {
                        op: entry2,
                        src: *src,
                        scheme: scheme2,
                    },
                });
            }
        }
    }
    if let Op::Cat { first, rest, dim } = op {
        for rest in without_each(rest) {
            out.push(Step::Op {
                out: slot,
                op: Op::Cat {
                    first: *first,
                    rest,
                    dim: *dim,
                },
            });
        }
    }
}

/// Simpler replays: a fed input or the last output fewer.
fn simpler_replay(graph: u8, feed: &[Slot], outputs: &[Slot], out: &mut Vec<Step>) {
    for feed in without_each(feed) {
        out.push(Step::Replay {
            graph,
            feed,
            outputs: outputs.to_vec(),
        });
    }
    if let Some((_, fewer)) = outputs.split_last() {
        out.push(Step::Replay {
            graph,
            feed: feed.to_vec(),
            outputs: fewer.to_vec(),
        });
    }
}

/// Slots renamed in order of first appearance: `t0`, `t1`, ...
fn renamed(program: &Program) -> Program {
    let mut order: Vec<Slot> = Vec::new();
    for step in &program.steps {
        let mut step = step.clone();
        step.map_slots(|s| {
            if !order.contains(&s) {
                order.push(s);
            }
            s
        });
    }
    let steps = program
        .steps
        .iter()
        .map(|step| {
            let mut step = step.clone();
            step.map_slots(|s| order.iter().position(|o| *o == s).unwrap_or(0) as Slot);
            step
        })
        .collect();
    Program::new(steps)
}

/// Capture devices renumbered in order of first appearance: `capture0`, `capture1`, ...
fn devices_renamed(program: &Program) -> Program {
    let mut order: Vec<u8> = Vec::new();
    let mut steps = program.steps.clone();
    for device in steps.iter_mut().filter_map(Step::device_mut) {
        if let DeviceRef::Capture(k) = device {
            let index = order.iter().position(|o| o == k).unwrap_or_else(|| {
                order.push(*k);
                order.len() - 1
            });
            *k = index as u8;
        }
    }
    Program::new(steps)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::program::ProgramFile;

    /// A search whose "finding" is structural: the program replays a graph that computed an op.
    struct ReplaysAnOp(Program);

    impl Search for ReplaysAnOp {
        fn best(&self) -> &Program {
            &self.0
        }
        fn try_candidate(&mut self, candidate: Program) -> Result<bool> {
            let steps = &candidate.steps;
            let exits: Vec<usize> = (0..steps.len())
                .filter(|&i| matches!(steps[i], Step::ExitScope { .. }))
                .collect();
            let ends = candidate.scope_ends();
            let fails = steps.iter().any(|s| match s {
                Step::Replay { graph, .. } => exits.get(usize::from(*graph)).is_some_and(|&x| {
                    let enter = ends.iter().position(|e| *e == Some(x));
                    enter.is_some_and(|e| steps[e..x].iter().any(|s| matches!(s, Step::Op { .. })))
                }),
                _ => false,
            });
            if fails && smaller(&candidate, &self.0) {
                self.0 = candidate;
            }
            Ok(fails)
        }
        fn enter(&mut self, _: &'static str) {}
    }

    #[test]
    fn a_scope_before_a_replayed_one_is_removed_and_the_replay_renumbered() {
        // Two scopes before it: fixup maps a replay's graph past the last one back to the first
        // (modulo the count), which with one scope would renumber the replay by chance.
        let text = r#"{"steps": [
            {"enter_scope": {"device": {"capture": 0}}},
            {"exit_scope": {"inputs": [], "outputs": []}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"exit_scope": {"inputs": [], "outputs": []}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 2, "feed": [], "outputs": [2]}}]}"#;
        let program = ProgramFile::parse(text, "<test>").unwrap().program();
        let mut search = ReplaysAnOp(program);
        unbracket(&mut search).unwrap();
        let steps = &search.best().steps;
        assert_eq!(steps.len(), 5, "{steps:?}");
        assert!(
            matches!(steps.last(), Some(Step::Replay { graph: 0, .. })),
            "{steps:?}"
        );
    }
}
