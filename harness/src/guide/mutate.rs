//! Structured mutations toward one (entry, kind, context) target: put the entry at an op site
//! of that operand kind (an existing op changed to it, or a new op over a new tensor), then
//! give the site its context: wrap it in a capture scope and declare its output, make its
//! operand a gradient leaf and differentiate it, or add a replay. `fixup` repairs the rest.

use crate::oracles::Context;
use crate::program::limits::{CAPTURE_POOL_SIZE, MAX_DIM, MAX_RANK, MAX_SLOTS};
use crate::program::{
    fixup, op_of, operand_kinds, AutodiffMode, DeviceRef, Edge, Entry, ExitForm, Fill, FixedOp,
    Kind, Op, Program, Slot, Step,
};
use crate::rng::SplitMix64;

/// What a mutation aims at.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Target {
    /// The entry.
    pub entry: Entry,
    /// Its first operand's kind.
    pub kind: Kind,
    /// Where its value must be judged.
    pub context: Context,
}

/// The mutations, by name (what a saved program's origin says).
pub const MUTATIONS: &[&str] = &[
    "change an op to the target entry",
    "add an op of the target entry",
    "wrap the op in a capture scope",
    "declare the op's output",
    "differentiate the op",
    "add a replay",
];

/// `parent` mutated toward `target`, fixed up, with the names of the mutations applied.
pub fn toward(
    parent: &Program,
    target: Target,
    rng: &mut SplitMix64,
) -> (Program, Vec<&'static str>) {
    let mut steps = parent.steps.clone();
    let mut applied = Vec::new();
    let depth = depths(&steps);
    let kinds = operand_kinds(&steps);
    let wants_top = target.context == Context::Gradient;
    let sites: Vec<usize> = (0..steps.len())
        .filter(|&i| matches!(steps[i], Step::Op { .. }) && kinds[i] == Some(target.kind))
        .filter(|&i| !wants_top || depth[i] == 0)
        .collect();
    let bytes = [rng_byte(rng), rng_byte(rng), rng_byte(rng), rng_byte(rng)];
    let site = if !sites.is_empty() && rng.below(2) == 0 {
        let i = sites[rng.below(sites.len() as u64) as usize];
        let Step::Op { out, op } = &steps[i] else {
            unreachable!("sites are op steps")
        };
        let out = *out;
        let Some(new) = op_of(target.entry, &op.operands(), bytes) else {
            return (parent.clone(), applied);
        };
        steps[i] = Step::Op { out, op: new };
        applied.push(MUTATIONS[0]);
        i
    } else {
        match insert_op(&mut steps, &depth, target, bytes, rng) {
            Some(i) => {
                applied.push(MUTATIONS[1]);
                i
            }
            None => return (parent.clone(), applied),
        }
    };
    match target.context {
        Context::Replayed | Context::Recorded => {
            let depth = depths(&steps);
            if depth[site] == 0 {
                wrap_in_scope(&mut steps, site, rng);
                applied.push(MUTATIONS[2]);
            } else if declare_output(&mut steps, site) {
                applied.push(MUTATIONS[3]);
            }
        }
        Context::Gradient => {
            if differentiate(&mut steps, site, rng) {
                applied.push(MUTATIONS[4]);
            }
        }
        Context::Eager | Context::Wgpu => {}
    }
    if rng.below(4) == 0 && add_replay(&mut steps, rng) {
        applied.push(MUTATIONS[5]);
    }
    fixup(&mut steps);
    (Program { steps }, applied)
}

fn rng_byte(rng: &mut SplitMix64) -> u8 {
    rng.below(256) as u8
}

/// The number of scopes open before each step (and one more entry, after the last).
fn depths(steps: &[Step]) -> Vec<usize> {
    let mut depth = 0usize;
    let mut out = Vec::with_capacity(steps.len() + 1);
    for step in steps {
        out.push(depth);
        match step {
            Step::EnterScope { .. } => depth += 1,
            Step::ExitScope { .. } => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    out.push(depth);
    out
}

/// A slot free to write before step `at`: one no later step reads before writing it, and not
/// in `avoid`; else any slot not in `avoid`.
fn free_slot(steps: &[Step], at: usize, avoid: &[Slot], rng: &mut SplitMix64) -> Slot {
    let dead = |s: Slot| {
        for step in &steps[at.min(steps.len())..] {
            if step.reads().contains(&s) {
                return false;
            }
            if step.writes().contains(&s) {
                return true;
            }
        }
        true
    };
    let free: Vec<Slot> = (0..MAX_SLOTS)
        .filter(|s| !avoid.contains(s) && dead(*s))
        .collect();
    if !free.is_empty() {
        return free[rng.below(free.len() as u64) as usize];
    }
    let any: Vec<Slot> = (0..MAX_SLOTS).filter(|s| !avoid.contains(s)).collect();
    any[rng.below(any.len() as u64) as usize]
}

/// Inserts, at a position outside every scope, new operands of the target's kind on Flex and
/// an op of the target entry over them; returns the op's index.
fn insert_op(
    steps: &mut Vec<Step>,
    depth: &[usize],
    target: Target,
    bytes: [u8; 4],
    rng: &mut SplitMix64,
) -> Option<usize> {
    let tops: Vec<usize> = (0..=steps.len()).filter(|&i| depth[i] == 0).collect();
    let at = tops[rng.below(tops.len() as u64) as usize];
    let rank = 1 + rng.below(MAX_RANK as u64) as usize;
    let shape: Vec<u8> = (0..rank)
        .map(|_| 1 + rng.below(MAX_DIM as u64) as u8)
        .collect();
    let fill = match rng.below(7) {
        0 => Fill::Zeros,
        1 => Fill::Ones,
        2 => Fill::Arange,
        3 => {
            let (cycle, next_to_one) = (&Edge::CYCLE, &Edge::NEXT_TO_ONE);
            let k = rng.below((cycle.len() + next_to_one.len()) as u64) as usize;
            Fill::Edge(
                *cycle
                    .get(k)
                    .unwrap_or_else(|| &next_to_one[k - cycle.len()]),
            )
        }
        4 => Fill::Halves,
        5 => Fill::Tiny,
        _ => Fill::Value(rng_byte(rng) as i8),
    };
    let x = free_slot(steps, at, &[], rng);
    let y = free_slot(steps, at, &[x], rng);
    // A mask op's second operand is its mask.
    let second = if matches!(
        target.entry.fixed(),
        Some(FixedOp::MaskWhere | FixedOp::MaskFill)
    ) {
        Kind::Bool
    } else {
        target.kind
    };
    let create = |out, kind, fill| Step::Create {
        out,
        kind,
        shape: shape.clone(),
        fill,
        device: DeviceRef::Flex,
        dtype: None,
    };
    let mut op = op_of(target.entry, &[x, y], bytes)?;
    // Same-shaped operands multiply as `x @ y^T`.
    if let Op::Matmul { transpose_rhs, .. } = &mut op {
        *transpose_rhs = true;
    }
    let out = free_slot(steps, at, &[x, y], rng);
    let new = [
        create(x, target.kind, fill),
        create(y, second, Fill::Arange),
        Step::Op { out, op },
    ];
    steps.splice(at..at, new);
    Some(at + 2)
}

/// Wraps the op at `site` (outside every scope) in a scope on a capture device: its operands
/// moved onto the device inside the scope, its output declared.
fn wrap_in_scope(steps: &mut Vec<Step>, site: usize, rng: &mut SplitMix64) {
    let Step::Op { out, op } = steps[site].clone() else {
        return;
    };
    let device = DeviceRef::Capture(rng.below(u64::from(CAPTURE_POOL_SIZE)) as u8);
    let operands: Vec<Slot> = op.operands().to_vec();
    let mut avoid: Vec<Slot> = operands.clone();
    avoid.push(out);
    let mut moves = Vec::new();
    let mut renamed = Vec::new();
    for &x in &operands {
        if renamed.iter().any(|(from, _)| *from == x) {
            continue;
        }
        let m = free_slot(steps, site + 1, &avoid, rng);
        avoid.push(m);
        renamed.push((x, m));
        moves.push(Step::ToDevice {
            out: m,
            src: x,
            device,
        });
    }
    let mut op = op;
    op.map_slots(|s| {
        renamed
            .iter()
            .find(|(from, _)| *from == s)
            .map_or(s, |(_, to)| *to)
    });
    let mut new = vec![Step::EnterScope { device }];
    new.extend(moves);
    new.push(Step::Op { out, op });
    new.push(Step::ExitScope {
        inputs: Vec::new(),
        outputs: vec![out],
        form: ExitForm::Complete,
    });
    steps.splice(site..=site, new);
}

/// Declares the output of the op at `site` at the exit of its innermost scope, first (the
/// list's limit keeps the first few); false when it already is, or has no exit.
fn declare_output(steps: &mut [Step], site: usize) -> bool {
    let Step::Op { out, .. } = steps[site] else {
        return false;
    };
    let mut open = 0usize;
    for step in &mut steps[site + 1..] {
        match step {
            Step::EnterScope { .. } => open += 1,
            Step::ExitScope { outputs, .. } if open == 0 => {
                if outputs.first() == Some(&out) {
                    return false;
                }
                outputs.retain(|s| *s != out);
                outputs.insert(0, out);
                return true;
            }
            Step::ExitScope { .. } => open -= 1,
            // The value must still be the op's when the scope ends.
            other if other.writes().contains(&out) => return false,
            _ => {}
        }
    }
    false
}

/// Makes the first operand of the float op at `site` (outside every scope) a gradient leaf
/// (`autodiff().require_grad()`) and differentiates the op's output with respect to it.
fn differentiate(steps: &mut Vec<Step>, site: usize, rng: &mut SplitMix64) -> bool {
    let Step::Op { out, op } = steps[site].clone() else {
        return false;
    };
    let Some(&x) = op.operands().first() else {
        return false;
    };
    let mut avoid: Vec<Slot> = op.operands().to_vec();
    avoid.push(out);
    let leaf = free_slot(steps, site, &avoid, rng);
    avoid.push(leaf);
    let grad = free_slot(steps, site + 1, &avoid, rng);
    let mut op = op;
    op.map_slots(|s| if s == x { leaf } else { s });
    let new = [
        // `to_device(&flex_ad)` keeps a tensor off autodiff: `autodiff()` puts it on.
        Step::Autodiff {
            out: leaf,
            src: x,
            mode: AutodiffMode::Enable,
        },
        Step::Autodiff {
            out: leaf,
            src: leaf,
            mode: AutodiffMode::RequireGrad,
        },
        Step::Op { out, op },
        Step::Backward {
            out: grad,
            loss: out,
            param: leaf,
        },
    ];
    steps.splice(site..=site, new);
    true
}

/// Replays the graph of a random scope exit right after it, fed its declared inputs.
fn add_replay(steps: &mut Vec<Step>, rng: &mut SplitMix64) -> bool {
    let exits: Vec<usize> = (0..steps.len())
        .filter(|&i| matches!(steps[i], Step::ExitScope { .. }))
        .collect();
    if exits.is_empty() {
        return false;
    }
    let graph = rng.below(exits.len() as u64) as usize;
    let at = exits[graph];
    let Step::ExitScope {
        inputs, outputs, ..
    } = steps[at].clone()
    else {
        return false;
    };
    let mut avoid = Vec::new();
    let outputs: Vec<Slot> = outputs
        .iter()
        .map(|_| {
            let s = free_slot(steps, at + 1, &avoid, rng);
            avoid.push(s);
            s
        })
        .collect();
    steps.insert(
        at + 1,
        Step::Replay {
            graph: graph as u8,
            feed: inputs,
            outputs,
        },
    );
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guide::Guide;
    use crate::program::Backends;

    #[test]
    fn mutated_programs_are_fixed_points_of_fixup_and_round_trip_through_their_encoding() {
        let mut rng = SplitMix64::new(3);
        let guide = Guide::new(3, Backends::FLEX_CAPTURE, true);
        let mut checked = 0;
        for _ in 0..400 {
            let len = rng.below(2048) as usize;
            let parent = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
            let target = guide.targets[rng.below(guide.targets.len() as u64) as usize];
            let (child, applied) = toward(&parent, target, &mut rng);
            let mut fixed = child.steps.clone();
            fixup(&mut fixed);
            assert_eq!(
                fixed, child.steps,
                "not a fixed point: {applied:?}\n{child}"
            );
            let bytes = child.to_fuzz_bytes().expect("a mutated program encodes");
            assert_eq!(
                Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE),
                child,
                "the encoding decodes to another program: {applied:?}"
            );
            checked += usize::from(!applied.is_empty());
        }
        assert!(checked > 300, "only {checked} of 400 mutations applied");
    }

    #[test]
    fn a_wrapped_op_runs_in_a_scope_on_moved_operands_and_declares_its_output() {
        let parent = Program::new(vec![
            Step::Create {
                out: 0,
                kind: Kind::Float,
                shape: vec![2],
                fill: Fill::Arange,
                device: DeviceRef::Flex,
                dtype: None,
            },
            Step::Op {
                out: 1,
                op: Op::Unary {
                    op: crate::program::UnaryOp::named("exp").unwrap(),
                    src: 0,
                },
            },
        ]);
        let mut steps = parent.steps.clone();
        wrap_in_scope(&mut steps, 1, &mut SplitMix64::new(1));
        let names: Vec<&str> = steps.iter().map(Step::name).collect();
        assert_eq!(
            names,
            ["create", "enter_scope", "to_device", "op", "exit_scope"]
        );
        let (Step::ToDevice { out: moved, .. }, Step::Op { op, out }) = (&steps[2], &steps[3])
        else {
            panic!("{names:?}")
        };
        assert_eq!(op.operands().as_slice(), &[*moved]);
        assert!(matches!(&steps[4], Step::ExitScope { outputs, .. } if outputs == &[*out]));
    }
}
