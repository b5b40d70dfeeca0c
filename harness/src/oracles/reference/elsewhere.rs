//! Values computed off the eager Flex mirror: a replay fed new data (judged against the
//! reference over the fed data, through the tape) and the wgpu mirror's values (over wgpu's own
//! operands).

use burn::tensor::DType;

use super::host::Host;
use super::judge::{Expected, Judged, Value, Why};
use super::track::judge_value;
use super::{gradient, mismatch, regime, Reference};
use crate::interpreter::{Outcome, World};
use crate::oracles::taint::{Elements, Poison};
use crate::oracles::{
    Backend, Context, Derivation, Judgement, OracleId, Shared, StepFacts, Violation,
};
use crate::program::{Kind, Op, Step, Tolerance};

/// What judging one step's wgpu values needs from its eager judging.
pub(super) struct Judging<'a> {
    pub(super) index: usize,
    /// Whether the step succeeded.
    pub(super) ok: bool,
    /// Whether it draws random values.
    pub(super) random: bool,
    pub(super) family: Tolerance,
    /// The slots whose eager Flex value differed from its definition.
    pub(super) differed: &'a [u8],
}

impl Reference {
    /// Per output of the replay at step `index` of graph `graph` fed from `feed`: the
    /// reference over the fed data (each input the real run fed takes the fed slot's value as
    /// Burn held it; one it could not feed keeps its recorded value), and its path's scale.
    pub(super) fn replayed(
        &self,
        tape: &[gradient::Node],
        world: &World<'_>,
        index: usize,
        (graph, feed, outputs): (u8, &[u8], usize),
    ) -> Vec<Result<(Host, f64), &'static str>> {
        let Some((inputs, outs)) = self.graphs.get(&usize::from(graph)) else {
            return vec![Err("a graph the reference did not see complete"); outputs];
        };
        let fed = world.fed(index);
        let mut given: Vec<(usize, &Host)> = Vec::new();
        for (i, (node, slot)) in inputs.iter().zip(feed).enumerate() {
            let value = self.flex.held[usize::from(*slot)]
                .as_deref()
                .map(Value::host);
            match (node, value) {
                (Some(n), Some(v)) if fed.get(i).copied().unwrap_or(false) => given.push((*n, v)),
                (Some(_), _) if fed.get(i).copied().unwrap_or(false) => {
                    return vec![Err("a fed value Burn holds no readable value for"); outputs];
                }
                _ => {}
            }
        }
        // A graph hands back its own outputs, in order: a slot named past them holds nothing
        // after the replay (not a value), and one of them not named is not read.
        let nodes: Option<Vec<usize>> = outs.iter().take(outputs).copied().collect();
        let Some(nodes) = nodes else {
            return vec![Err("a graph output not on the tape"); outputs];
        };
        let paths: Vec<_> = nodes.iter().map(|n| gradient::path(tape, *n)).collect();
        let fed = !given.is_empty();
        if !fed {
            // Fed nothing, the graph replays what it recorded: its outputs are the reference
            // over the values its ops were recorded from (created data, the values moved in).
            let mut sources: Vec<usize> = paths.iter().flat_map(|(_, s)| s.clone()).collect();
            sources.sort_unstable();
            sources.dedup();
            if sources.iter().any(|n| gradient::drawn(tape, *n)) {
                return vec![Err("a random draw on the path (a replay draws again)"); outputs];
            }
            // A wgpu bool recorded as a value keeps its Bool(U32) bytes, which Flex misreads
            // where it replays them (eager-replay leaves such a graph out too).
            if self.misread_graphs.contains(&usize::from(graph)) {
                return vec![Err(Poison::BoolU32OnFlex.name()); outputs];
            }
            for node in sources {
                let Some(v) = tape[node].value() else {
                    let why = "a recorded value Burn holds no readable value for";
                    return vec![Err(why); outputs];
                };
                given.push((node, v));
            }
        }
        let computed = gradient::evaluate(tape, &nodes, &given);
        // The dtypes the replay handed its outputs back in.
        let handed: Vec<DType> = match world.outcome(index) {
            Some(Outcome::Ok { outputs, .. }) => outputs.iter().map(|v| v.dtype).collect(),
            _ => Vec::new(),
        };
        (paths.iter().zip(computed).enumerate())
            .map(|(j, ((ops, _), value))| {
                if handed.get(j).copied() != gradient::dtype(tape, nodes[j]) {
                    // A range and a rounding are the dtype's: one the replay lost is
                    // eager-replay's finding.
                    return Err("a replayed output in another dtype than recorded (or unknown)");
                }
                if ops.is_empty() && !fed {
                    // Recorded as it is: no op of the graph computes it.
                    return Err("a graph output no op computes (eager-replay compares it)");
                }
                if ops.iter().any(|n| self.differed.contains(n)) {
                    return Err(
                        "computed through an op whose eager value differed from its \
                                definition (that finding's)",
                    );
                }
                match ops
                    .iter()
                    .filter_map(|n| gradient::op_at(tape, *n))
                    .find_map(judged_alone)
                {
                    Some(why) => Err(why),
                    None => value,
                }
            })
            .chain(std::iter::repeat(Err(
                "no output of the graph: the slot holds nothing",
            )))
            .take(outputs)
            .collect()
    }

    /// Judges the values the wgpu mirror computed at a step over the wgpu mirror's own
    /// operands, as the eager Flex ones are judged over Flex's. A value the differential found
    /// diverging, or whose Flex value already differed from its definition, is that finding's
    /// and is not judged again; so what this adds is mostly the wgpu values the differential
    /// could not compare (Flex computed nothing comparable there: a known Flex bug's operand,
    /// a Flex failure).
    pub(super) fn judge_on_wgpu(
        &mut self,
        shared: &mut Shared,
        step: &Step,
        facts: &StepFacts<'_>,
        on: &Judging<'_>,
    ) {
        let mut read = std::mem::take(&mut shared.wgpu_read);
        // Whatever a step writes, the slot holds what the wgpu mirror holds now.
        for out in step.writes() {
            let o = usize::from(out);
            self.on_wgpu.held[o] = None;
            self.on_wgpu.unread[o] = true;
        }
        if !on.ok || shared.wgpu_failed {
            return;
        }
        if on.random {
            for _ in facts.on_wgpu {
                shared.report.reference.count_open_on_wgpu("random draw");
            }
            return;
        }
        for computed in facts.on_wgpu {
            let (out, o) = (computed.slot, usize::from(computed.slot));
            let Ok(tensor) = &computed.value else {
                continue;
            };
            let stashed = read.iter().position(|(s, _)| *s == out);
            let stashed = stashed.map(|i| read.swap_remove(i).1);
            let expected = self.expected_on_wgpu(shared, step, on, out);
            let counts = &mut shared.report.reference;
            let expected = match expected {
                Ok(e) => e,
                Err(why) => {
                    counts.count_open_on_wgpu(&why);
                    if let Some(data) = stashed {
                        self.on_wgpu.hold(o, tensor.kind(), data);
                    }
                    continue;
                }
            };
            let data = stashed.or_else(|| {
                crate::interpreter::read_copy(tensor)
                    .map(|d| crate::oracles::faults::wgpu_value(on.index, d))
            });
            let Some(data) = data else {
                counts.count_open_on_wgpu("value not readable");
                continue;
            };
            let actual = Value::of(tensor.kind(), data);
            let absolute = self.on_wgpu.allowance(step, on.family);
            let terms = self.on_wgpu.scale(step);
            let expected = match self.unpinned(step, &actual) {
                None => expected,
                Some((why, None)) => {
                    counts.count_open_on_wgpu(why.name());
                    self.on_wgpu.held[o] = Some(std::rc::Rc::new(actual));
                    self.on_wgpu.unread[o] = false;
                    continue;
                }
                Some((_, Some(skip))) => Expected::Host(expected.host().without(&skip)),
            };
            let judged = (step, Backend::Wgpu, &mut counts.bounds);
            let allow = (absolute, terms, &self.on_wgpu);
            match judge_value(&expected, &actual, on.family, allow, judged) {
                Judged::Agree(known) if known == 0 && expected.host().numel() > 0 => {
                    counts.count_open_on_wgpu("every element open")
                }
                Judged::Agree(_) => {
                    counts.on_wgpu += 1;
                    shared.report.judgements.push(Judgement {
                        step: on.index,
                        oracle: OracleId::Reference,
                        context: Context::Wgpu,
                    });
                }
                Judged::Differ(at, want, got) => {
                    shared.report.judgements.push(Judgement {
                        step: on.index,
                        oracle: OracleId::Reference,
                        context: Context::Wgpu,
                    });
                    let found = (out, at, want, got, actual.data.dtype());
                    let violation = self.mismatch_on_wgpu(step, on.index, found);
                    shared.report.violations.push(violation);
                }
            }
            self.on_wgpu.held[o] = Some(std::rc::Rc::new(actual));
            self.on_wgpu.unread[o] = false;
        }
    }

    /// The reference of output `out` of `step` on wgpu, or why there is none to judge: a
    /// gradient (the differential compares it with Flex's), or a value another finding is about.
    fn expected_on_wgpu(
        &self,
        shared: &Shared,
        step: &Step,
        on: &Judging<'_>,
        out: u8,
    ) -> Result<Expected, Why> {
        let diverged = shared.report.violations.iter().any(|v| {
            v.step == on.index
                && v.class == crate::oracles::DIVERGENCE
                && v.message.starts_with(&format!("t{out}:"))
        });
        match step {
            Step::Backward { .. } => Err(Why::Borrowed(
                "a gradient on wgpu (the differential compares it with Flex's)",
            )),
            _ if diverged || on.differed.contains(&out) => {
                Err(Why::Borrowed("a value another finding is about"))
            }
            _ => self.on_wgpu.expected(step),
        }
    }

    /// Where the definition does not pin `step`'s result down on wgpu: why, and the elements
    /// left open (`None`: all of them).
    fn unpinned(&self, step: &Step, actual: &Value) -> Option<(Poison, Option<Vec<bool>>)> {
        let u = self.unpinned_on_wgpu.as_ref()?;
        let shape = actual.data.shape().to_vec();
        let reach = match step {
            Step::Op { op, .. } => op.reach(),
            _ => crate::program::Reach::Whole,
        };
        let at = (u.operands.iter().flatten())
            .map(|at| at.reach(reach, &shape))
            .reduce(Elements::union)?;
        Some((u.why, at.skips(&shape).map(<[bool]>::to_vec)))
    }

    /// The reference mismatch of a wgpu mirror's value at step `index`.
    fn mismatch_on_wgpu(
        &self,
        step: &Step,
        index: usize,
        (out, at, want, got, dtype): (u8, usize, String, String, DType),
    ) -> Violation {
        let operands: Vec<DType> = (step.reads().iter())
            .filter_map(|s| self.on_wgpu.held[usize::from(*s)].as_ref())
            .map(|v| v.data.dtype())
            .collect();
        let what = match step {
            Step::Op { op, .. } => op.name(),
            other => other.name().to_string(),
        };
        let held = step
            .reads()
            .into_iter()
            .filter_map(|s| self.on_wgpu.held[usize::from(s)].as_deref());
        let signed = (what.as_str(), operands.as_slice(), regime(step, held));
        let by = Derivation::Definition;
        mismatch(
            (index, by),
            Backend::Wgpu,
            signed,
            (out, at, want, got, dtype),
        )
    }
}

/// Why a replayed chain through `op` is left open, where the eager judge gives `op`'s value an
/// allowance of its own that the replay's bound does not compose: a quantization's step, a
/// cast's target range, a formula's headroom, a documented truncation. Those ops are judged
/// where they ran.
fn judged_alone(op: &Op) -> Option<&'static str> {
    if super::quantized_scheme(op).is_some() {
        Some("a quantization round trip on the path (judged where it ran)")
    } else if matches!(op, Op::Cast { to, .. } if *to != Kind::Float) {
        // An int's range is its recorded dtype's, which a replay may not keep (eager-replay
        // judges the dtype a replay hands back).
        Some("a cast to an int or bool on the path (judged where it ran)")
    } else if super::bound::headroom(op) > 1.0 {
        Some("an op on the path whose formula passes its result's range (judged where it ran)")
    } else if super::documented::entry(op).is_some() {
        Some("an op on the path with documented behaviour (judged where it ran)")
    } else {
        None
    }
}
