//! Generator tests: decoding never fails, fixup is idempotent and keeps its promises.

use arbitrary::Unstructured;

use super::limits::{MAX_ELEMENTS, MAX_RANK, MAX_STEPS};
use super::{fixup, op_output, Backends, Program, Step};
use crate::rng::SplitMix64;

fn random_programs(seed: u64, count: usize) -> impl Iterator<Item = Program> {
    let mut rng = SplitMix64::new(seed);
    (0..count).map(move |_| {
        let len = rng.below(3000) as usize;
        Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE)
    })
}

#[test]
fn fixup_is_idempotent_on_random_programs() {
    for program in random_programs(7, 3000) {
        let mut again = program.steps.clone();
        fixup(&mut again);
        assert_eq!(
            again, program.steps,
            "fixup changed a fixed-up program:\n{program}"
        );
    }
}

#[test]
fn fixed_up_programs_respect_the_limits_and_balance_scopes() {
    for program in random_programs(11, 3000) {
        assert!(program.steps.len() <= MAX_STEPS + super::limits::MAX_SCOPE_DEPTH);
        let mut depth = 0i32;
        for step in &program.steps {
            match step {
                Step::EnterScope { .. } => depth += 1,
                Step::ExitScope { .. } => depth -= 1,
                Step::Create { shape, .. } => {
                    assert!((1..=MAX_RANK).contains(&shape.len()));
                    let n: usize = shape.iter().map(|d| usize::from(*d)).product();
                    assert!(n <= MAX_ELEMENTS && n > 0);
                }
                _ => {}
            }
            assert!(depth >= 0, "exit without a scope in\n{program}");
        }
        assert_eq!(depth, 0, "unbalanced scopes in\n{program}");
    }
}

#[test]
fn removing_any_step_leaves_a_runnable_program() {
    // The minimizer's contract: delete a step, fix up, and every op still types.
    let mut checked = 0;
    for program in random_programs(13, 200) {
        for skip in 0..program.steps.len() {
            let mut steps = program.steps.clone();
            steps.remove(skip);
            let shrunk = Program::new(steps);
            checked += assert_typed(&shrunk);
        }
    }
    // Every op the shrunk programs hold could be typed only if their operands were: the check
    // must have met many, or its silence means nothing.
    assert!(checked > 10_000, "only {checked} ops type-checked");
}

/// Replays fixup's own bookkeeping and checks every op whose operand types are known statically
/// (a replay's outputs take their graph's declared types, which this model leaves unknown);
/// returns how many ops it checked, so a caller can tell it checked something.
fn assert_typed(program: &Program) -> usize {
    let mut checked = 0;
    use std::collections::HashMap;
    let mut slots: HashMap<u8, Option<super::Ty>> = HashMap::new();
    for step in &program.steps {
        match step {
            Step::Create {
                out, kind, shape, ..
            } => {
                let shape = shape.iter().map(|d| usize::from(*d)).collect();
                slots.insert(*out, Some(super::Ty { kind: *kind, shape }));
            }
            Step::Op { out, op } => {
                for s in op.operands() {
                    assert!(
                        slots.contains_key(&s),
                        "op reads undefined t{s}: {op:?}\n{program}"
                    );
                }
                let known = |s: u8| slots.get(&s).cloned().flatten();
                let all_known = op.operands().iter().all(|s| known(*s).is_some());
                let ty = op_output(op, known);
                if all_known {
                    assert!(ty.is_some(), "op does not type: {op:?}\n{program}");
                    checked += 1;
                }
                slots.insert(*out, ty);
            }
            Step::Drop { slot } => {
                assert!(slots.remove(slot).is_some(), "drop of an undefined slot");
            }
            Step::ToDevice { out, src, .. }
            | Step::Clone { out, src }
            | Step::Autodiff { out, src, .. } => {
                let ty = slots.get(src).cloned().expect("source slot is defined");
                slots.insert(*out, ty);
            }
            Step::Replay { outputs, .. } => {
                for s in outputs {
                    slots.insert(*s, None);
                }
            }
            Step::Backward { out, loss, param } => {
                assert!(slots.contains_key(loss), "a loss from an undefined slot");
                let ty = slots.get(param).cloned().expect("param slot is defined");
                slots.insert(*out, ty);
            }
            Step::Read { src, .. } => assert!(slots.contains_key(src), "read of an undefined slot"),
            _ => {}
        }
    }
    checked
}

#[test]
fn all_step_kinds_are_generated() {
    let mut seen = std::collections::BTreeSet::new();
    for program in random_programs(17, 2000) {
        for step in &program.steps {
            seen.insert(step.name());
        }
    }
    let all: std::collections::BTreeSet<_> = super::STEP_KINDS.iter().copied().collect();
    assert_eq!(seen, all);
}

#[test]
fn empty_input_decodes_to_an_empty_program() {
    assert_eq!(
        Program::from_fuzz_bytes(&[], Backends::FLEX_CAPTURE),
        Program::default()
    );
    let mut u = Unstructured::new(&[0xff; 3]);
    let _ = <Program as arbitrary::Arbitrary>::arbitrary(&mut u);
}

#[test]
fn program_json_round_trips() {
    for program in random_programs(19, 300) {
        let text = serde_json::to_string(&program).expect("serializes");
        let back: Program = serde_json::from_str(&text).expect("parses");
        assert_eq!(back, program);
    }
}

#[test]
fn cat_never_grows_a_tensor_past_the_element_limit() {
    // Repeated cats once grew a [256] tensor whose dims no longer fit the `u8` shapes programs
    // store, and fixup divided by zero (fuzz --seed 3, input #50733).
    use super::step::{Kind, Op};
    use super::typing::Ty;
    let cube = |s: u8| {
        (s < 2).then(|| Ty {
            kind: Kind::Float,
            shape: if s == 0 { vec![2, 4, 4] } else { vec![4, 4, 4] },
        })
    };
    let cat = |first: u8| Op::Cat {
        first,
        rest: vec![first],
        dim: 0,
    };
    assert_eq!(
        op_output(&cat(0), cube).map(|t| t.shape),
        Some(vec![4, 4, 4])
    );
    assert_eq!(
        op_output(&cat(1), cube),
        None,
        "[8, 4, 4] is past the limit"
    );
}

#[test]
fn encode_round_trips_on_random_programs() {
    // Every stored program must seed the fuzzer as itself (`dispatch-fuzz seed-corpus`).
    let mut steps = 0;
    for program in random_programs(17, 5000) {
        let bytes = program.to_fuzz_bytes().expect("every program encodes");
        let decoded = Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE);
        assert_eq!(decoded, program, "round trip changed\n{program}");
        steps += program.steps.len();
    }
    assert!(steps > 50_000, "only {steps} steps round-tripped");
}

#[test]
fn encoded_empty_program_decodes_to_an_empty_program() {
    let bytes = Program::default().to_fuzz_bytes().unwrap();
    assert_eq!(
        Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE),
        Program::default()
    );
}

#[test]
fn decoded_scopes_open_on_a_free_capture_device_and_hold_several_steps() {
    use super::step::DeviceRef;
    let (mut scopes, mut free_capture, mut inside) = (0usize, 0usize, 0usize);
    for program in random_programs(13, 2000) {
        let mut open: Vec<DeviceRef> = Vec::new();
        for step in &program.steps {
            match step {
                Step::EnterScope { device } => {
                    scopes += 1;
                    if matches!(device, DeviceRef::Capture(_)) && !open.contains(device) {
                        free_capture += 1;
                    }
                    open.push(*device);
                }
                Step::ExitScope { .. } => {
                    open.pop();
                }
                _ if !open.is_empty() => inside += 1,
                _ => {}
            }
        }
    }
    assert!(scopes > 1000, "{scopes} scopes");
    // Uniform variants would open two scopes in three on Flex, and a nested one often on a
    // device already open: neither runs its steps.
    assert!(
        free_capture * 10 >= scopes * 9,
        "{free_capture} of {scopes} scopes open on a free capture device"
    );
    // Exits as frequent as any other step would close a scope after about one step.
    assert!(
        inside >= scopes * 4,
        "{inside} steps inside {scopes} scopes"
    );
}

#[test]
fn an_ops_operands_are_the_slots_map_slots_visits_in_the_same_order() {
    // `operands` reads the op by reference and `map_slots` rewrites it by mutable reference,
    // through one `for_each_operand!` list: both bindings must visit the same slots.
    let mut seen = std::collections::HashSet::new();
    for program in random_programs(17, 2000) {
        for step in &program.steps {
            let Step::Op { op, .. } = step else { continue };
            let mut visited = Vec::new();
            op.clone().map_slots(|s| {
                visited.push(s);
                s
            });
            assert_eq!(op.operands().to_vec(), visited, "{op:?}");
            seen.insert(std::mem::discriminant(op));
        }
    }
    assert!(
        seen.len() >= 15,
        "only {} op variants generated",
        seen.len()
    );
}

#[test]
fn a_module_op_with_no_operand_of_its_rank_gets_one_created_on_its_scopes_device() {
    use super::step::ModuleOp;
    use super::step::{DeviceRef, Fill, Kind, Op};
    let conv2d = ModuleOp::named("conv2d").expect("conv2d is a module entry");
    let module_op = |src| Step::Op {
        out: 0,
        op: Op::Module {
            op: conv2d,
            src,
            kernel: 3,
        },
    };
    // Slot 0 holds a rank-1 float; 0b10_01_00_11 asks for the dims 4, 1, 2, 3.
    let mut steps = vec![
        Step::Create {
            out: 0,
            kind: Kind::Float,
            shape: vec![4],
            fill: Fill::Ones,
            device: DeviceRef::Flex,
            dtype: None,
        },
        Step::EnterScope {
            device: DeviceRef::Capture(1),
        },
        module_op(0b10_01_00_11),
    ];
    fixup(&mut steps);
    assert_eq!(
        steps[2],
        Step::Create {
            out: 1,
            kind: Kind::Float,
            shape: vec![4, 1, 2, 3],
            fill: Fill::Arange,
            device: DeviceRef::Capture(1),
            dtype: None,
        },
        "{steps:?}"
    );
    assert_eq!(steps[3], module_op(1));
    let once = steps.clone();
    fixup(&mut steps);
    assert_eq!(steps, once, "a second fixup adds another operand");
}

#[test]
fn a_decoded_backward_differentiates_a_loss_computed_from_a_leaf_where_the_program_has_one() {
    use super::fixup::{Fixer, Grad};
    let (mut with_leaf, mut on_leaf) = (0usize, 0usize);
    for program in random_programs(17, 3000) {
        let mut fixer = Fixer::default();
        for step in program.steps {
            if let Step::Backward { loss, param, .. } = step {
                let is = |s, grad: fn(Grad) -> bool| fixer.pick_float(s, grad) == Some(s);
                if fixer.pick_float(0, |g| g == Grad::Leaf).is_some() {
                    with_leaf += 1;
                    if is(param, |g| g == Grad::Leaf) && is(loss, Grad::tracked) {
                        on_leaf += 1;
                    }
                }
            }
            fixer.push(step);
        }
    }
    assert!(with_leaf > 500, "{with_leaf} backwards after a leaf");
    // Uniform picks among the floats would rarely meet the leaf and a value computed from it.
    assert!(
        on_leaf * 4 >= with_leaf * 3,
        "{on_leaf} of {with_leaf} backwards after a leaf differentiate through it"
    );
}

#[test]
fn a_decoded_backward_with_no_float_leaf_before_it_is_mostly_dropped() {
    use super::fixup::{Fixer, Grad};
    let (mut backwards, mut leafless) = (0usize, 0usize);
    for program in random_programs(29, 3000) {
        let mut fixer = Fixer::default();
        for step in program.steps {
            if matches!(step, Step::Backward { .. }) {
                backwards += 1;
                if fixer.pick_float(0, |g| g == Grad::Leaf).is_none() {
                    leafless += 1;
                }
            }
            fixer.push(step);
        }
    }
    assert!(backwards > 1000, "{backwards} backwards");
    // Kept as drawn, nine in ten backwards here have no leaf (10,705 of 11,989) and can only
    // meet the `backward-untracked` guard; the raw draw keeps one in eight of them (1,194 of
    // 2,395, about as many as those with a leaf).
    let with_leaf = backwards - leafless;
    assert!(
        leafless <= 2 * with_leaf,
        "{leafless} backwards with no leaf, {with_leaf} with one"
    );
    assert!(leafless > 0, "the raw draw keeps some");
}

#[test]
fn decoded_creates_and_moves_name_a_capture_device_with_an_open_scope_or_none() {
    use super::step::DeviceRef;
    let (mut placed, mut closed) = (0usize, 0usize);
    for program in random_programs(23, 3000) {
        let mut open: Vec<DeviceRef> = Vec::new();
        for step in &program.steps {
            match step {
                Step::EnterScope { device } => open.push(*device),
                Step::ExitScope { .. } => {
                    open.pop();
                }
                Step::Create { device, .. } | Step::ToDevice { device, .. } => {
                    placed += 1;
                    if matches!(device, DeviceRef::Capture(_)) && !open.contains(device) {
                        closed += 1;
                    }
                }
                _ => {}
            }
        }
    }
    assert!(placed > 5000, "{placed} creates and moves");
    // Uniform picks name a capture device with no open scope in about one create or move in 13
    // here (3,836 of 48,778 without the nudge), each meeting the
    // `operation-outside-capture-scope` guard; the raw draw keeps one in eight of them (484).
    assert!(
        closed * 40 <= placed,
        "{closed} of {placed} creates and moves name a capture device with no open scope"
    );
    assert!(closed > 0, "the raw draw keeps some");
}

#[test]
fn a_module_op_outside_scopes_takes_a_value_computed_from_a_leaf_reshaped_to_its_rank() {
    use super::step::{AutodiffMode, DeviceRef, Fill, Kind, ModuleOp, Op};
    let conv1d = ModuleOp::named("conv1d").expect("conv1d is a module entry");
    let mut steps = vec![
        Step::Create {
            out: 0,
            kind: Kind::Float,
            shape: vec![2, 3],
            fill: Fill::Ones,
            device: DeviceRef::FlexAutodiff,
            dtype: None,
        },
        Step::Autodiff {
            out: 0,
            src: 0,
            mode: AutodiffMode::RequireGrad,
        },
        Step::Op {
            out: 2,
            op: Op::Module {
                op: conv1d,
                src: 0,
                kernel: 3,
            },
        },
    ];
    fixup(&mut steps);
    assert_eq!(
        steps[2],
        Step::Op {
            out: 1,
            op: Op::Reshape {
                src: 0,
                dims: vec![1, 2, 3],
            },
        },
        "{steps:?}"
    );
    let once = steps.clone();
    fixup(&mut steps);
    assert_eq!(steps, once, "a second fixup adds another operand");
}
