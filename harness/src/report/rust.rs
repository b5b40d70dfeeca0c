//! Prints a program as a stand-alone Rust reproducer against Burn's public API, ready to paste
//! into a Burn issue. The trace of a real run decides what is printed: steps that were skipped
//! are left out (they never ran), steps that panicked before the last one are wrapped in
//! `catch_unwind` so the snippet goes on as the harness did, and the last step is printed bare
//! so the snippet panics where the finding does.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use crate::interpreter::{Outcome, Trace};
use crate::program::display::op_expr;
use crate::program::{fill_data, AutodiffMode, DeviceRef, Fill, Kind, Op, Program, Slot, Step};

fn device(d: DeviceRef) -> String {
    d.to_string()
}

fn data_literal(kind: Kind, shape: &[u8], fill: Fill) -> String {
    let data = fill_data(kind, shape, fill);
    let values: Vec<String> = match kind {
        Kind::Float => data
            .as_slice::<f32>()
            .map(|v| v.iter().map(|x| format!("{x:?}f32")).collect())
            .unwrap_or_default(),
        Kind::Int => data
            .as_slice::<i64>()
            .map(|v| v.iter().map(|x| format!("{x}i64")).collect())
            .unwrap_or_default(),
        Kind::Bool => data
            .as_slice::<bool>()
            .map(|v| v.iter().map(|x| x.to_string()).collect())
            .unwrap_or_default(),
    };
    format!("TensorData::new(vec![{}], {shape:?})", values.join(", "))
}

fn kind_path(kind: Kind) -> &'static str {
    match kind {
        Kind::Float => "Float",
        Kind::Int => "Int",
        Kind::Bool => "Bool",
    }
}

/// The Rust expression a step evaluates (without `let`), or `None` for scope steps.
fn expr(step: &Step) -> Option<String> {
    Some(match step {
        Step::Create {
            kind,
            shape,
            fill,
            device: d,
            ..
        } => format!(
            "Tensor::<{}, {}>::from_data({}, &{})",
            shape.len(),
            kind_path(*kind),
            data_literal(*kind, shape, *fill),
            device(*d)
        ),
        Step::Op { op, .. } => rust_op(op),
        Step::ToDevice { src, device: d, .. } => {
            format!("t{src}.clone().to_device(&{})", device(*d))
        }
        Step::Read { src, fallible } => {
            if *fallible {
                format!("t{src}.clone().try_into_data()")
            } else {
                format!("t{src}.clone().into_data()")
            }
        }
        Step::Clone { src, .. } => format!("t{src}.clone()"),
        Step::Drop { slot } => format!("drop(t{slot})"),
        Step::Autodiff { src, mode, .. } => match mode {
            AutodiffMode::Enable => format!("t{src}.clone().autodiff()"),
            AutodiffMode::Disable => format!("t{src}.clone().without_autodiff()"),
            AutodiffMode::RequireGrad => format!("t{src}.clone().require_grad()"),
        },
        Step::Replay { graph, feed, .. } => {
            let feed: Vec<String> = feed
                .iter()
                .map(|s| format!("t{s}.clone().into_data()"))
                .collect();
            format!(
                "replay_on_flex(graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![{}])",
                feed.join(", ")
            )
        }
        Step::EnterScope { .. } | Step::ExitScope { .. } => return None,
    })
}

/// `op_expr` with the two forms that need real Rust here: a transposed matmul operand and
/// integer literals whose type the compiler must be told.
fn rust_op(op: &Op) -> String {
    match op {
        Op::Matmul {
            lhs,
            rhs,
            transpose_rhs: true,
        } => format!("t{lhs}.clone().matmul(t{rhs}.clone().transpose())"),
        Op::Reshape { src, dims } => {
            let dims: Vec<String> = dims.iter().map(|d| format!("{d}i64")).collect();
            format!("t{src}.clone().reshape([{}])", dims.join(", "))
        }
        other => op_expr(other),
    }
}

/// The slots each step of `range` writes that a step after the range reads before writing.
fn exported(program: &Program, start: usize, end: usize, ran: &dyn Fn(usize) -> bool) -> Vec<Slot> {
    let written: BTreeSet<Slot> = (start..end)
        .filter(|i| ran(*i))
        .flat_map(|i| program.steps[i].writes())
        .collect();
    let mut needed = BTreeSet::new();
    let mut rewritten = BTreeSet::new();
    for (i, step) in program.steps.iter().enumerate().skip(end + 1) {
        if !ran(i) {
            continue;
        }
        for s in step.reads() {
            if written.contains(&s) && !rewritten.contains(&s) {
                needed.insert(s);
            }
        }
        rewritten.extend(step.writes());
    }
    needed.into_iter().collect()
}

/// The reproducer: a `main` using Burn's public API, plus the replay helper when needed.
pub fn to_rust(program: &Program, trace: &Trace, signature: Option<&str>) -> String {
    let outcome = |i: usize| trace.steps.get(i).map(|r| &r.outcome);
    let ran = |i: usize| !matches!(outcome(i), Some(Outcome::Skipped { .. }) | None);
    let last_run = (0..program.steps.len()).rev().find(|&i| ran(i));
    let ends = program.scope_ends();
    let devices: BTreeSet<DeviceRef> = program.steps.iter().filter_map(Step::device).collect();
    let mut body = String::new();
    for d in &devices {
        let init = match d {
            DeviceRef::Flex => "Device::flex()".to_string(),
            DeviceRef::FlexAutodiff => "Device::flex().autodiff()".to_string(),
            DeviceRef::Capture(_) => "Device::capture()".to_string(),
            DeviceRef::Wgpu => "Device::wgpu(burn::tensor::DeviceKind::DefaultDevice)".to_string(),
        };
        let _ = writeln!(body, "    let {} = {init};", device(*d));
    }
    if !devices.contains(&DeviceRef::Flex)
        && program
            .steps
            .iter()
            .any(|s| matches!(s, Step::Replay { .. }))
    {
        let _ = writeln!(body, "    let flex = Device::flex();");
    }
    let mut depth = 1usize;
    let mut exports: Vec<Vec<Slot>> = Vec::new();
    for (i, step) in program.steps.iter().enumerate() {
        let pad = "    ".repeat(depth);
        match step {
            Step::EnterScope { device: d } => {
                let exit = ends[i].unwrap_or(i);
                let out = if ran(i + 1) || matches!(outcome(i), Some(Outcome::Ok { .. })) {
                    exported(program, i + 1, exit, &ran)
                } else {
                    Vec::new()
                };
                for s in &out {
                    let _ = writeln!(body, "{pad}let mut t{s}_out = None;");
                }
                let graph = count_exits_before(program, exit);
                let _ = writeln!(
                    body,
                    "{pad}let graph{graph} = {}.capture_scope(|scope| {{",
                    device(*d)
                );
                exports.push(out);
                depth += 1;
                continue;
            }
            Step::ExitScope { inputs, outputs } => {
                let out = exports.pop().unwrap_or_default();
                for s in &out {
                    let _ = writeln!(body, "{pad}t{s}_out = Some(t{s}.clone());");
                }
                let ids = |slots: &[Slot]| -> String {
                    let ids: Vec<String> = slots
                        .iter()
                        .map(|s| {
                            format!("t{s}.clone().try_into_primitive::<Capture>().unwrap().id()")
                        })
                        .collect();
                    format!("[{}]", ids.join(", "))
                };
                let _ = writeln!(
                    body,
                    "{pad}scope.complete({}, {})",
                    ids(inputs),
                    ids(outputs)
                );
                depth -= 1;
                let pad = "    ".repeat(depth);
                let _ = writeln!(body, "{pad}}});");
                if let Some(Outcome::Error { message, .. }) = outcome(i) {
                    let _ = writeln!(body, "{pad}// -> Err({message})");
                }
                for s in &out {
                    let _ = writeln!(body, "{pad}let t{s} = t{s}_out.expect(\"the scope ran\");");
                }
                continue;
            }
            _ => {}
        }
        if !ran(i) {
            continue;
        }
        let replay_outputs = match outcome(i) {
            Some(Outcome::Ok { outputs, .. }) => outputs.as_slice(),
            _ => &[],
        };
        let Some(expr) = expr(step) else { continue };
        let panicked = matches!(outcome(i), Some(Outcome::Panic(_)));
        if let Some(Outcome::Panic(p)) = outcome(i) {
            let _ = writeln!(
                body,
                "{pad}// panics: {}",
                p.message.lines().next().unwrap_or_default()
            );
        }
        if panicked && Some(i) != last_run {
            let _ = writeln!(
                body,
                "{pad}let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {{ let _ = {expr}; }}));"
            );
            continue;
        }
        match step {
            Step::Replay { outputs, .. } => {
                let _ = writeln!(body, "{pad}let outputs = {expr};");
                for (k, (slot, info)) in outputs.iter().zip(replay_outputs).enumerate() {
                    let _ = writeln!(
                        body,
                        "{pad}let t{slot} = Tensor::<{}, {}>::from_data(outputs[{k}].clone(), &flex);",
                        info.shape.len(),
                        kind_path(info.kind)
                    );
                }
            }
            Step::Drop { .. } => {
                let _ = writeln!(body, "{pad}{expr};");
            }
            Step::Read { .. } => {
                let _ = writeln!(body, "{pad}let _ = {expr};");
            }
            _ => {
                let out = step.writes().first().copied().unwrap_or_default();
                let _ = writeln!(body, "{pad}let t{out} = {expr};");
            }
        }
    }
    let replay = program
        .steps
        .iter()
        .any(|s| matches!(s, Step::Replay { .. }));
    let mut out = String::new();
    let _ = writeln!(
        out,
        "// Reproducer generated by dispatch-fuzz from a {}-step program.",
        program.steps.len()
    );
    if let Some(signature) = signature {
        let _ = writeln!(out, "// Finding: {signature}");
    }
    let _ = writeln!(
        out,
        "// burn = {{ version = \"=0.23.0-pre.1\", default-features = false, features = [\"std\", \"flex\", \"capture\", \"extension\", \"autodiff\"] }}"
    );
    if replay {
        let _ = writeln!(
            out,
            "// plus burn-router, burn-ir and burn-backend =0.23.0-pre.1 for replay_on_flex"
        );
    }
    out.push_str("#![allow(unused_imports, unused_variables, unused_mut, clippy::all)]\n");
    out.push_str("use burn::backend::Capture;\n");
    out.push_str("use burn::tensor::{Bool, Device, Float, Int, Tensor, TensorData};\n\n");
    out.push_str("fn main() {\n");
    out.push_str(&body);
    out.push_str("}\n");
    if replay {
        out.push_str(REPLAY_HELPER);
    }
    out
}

fn count_exits_before(program: &Program, exit: usize) -> usize {
    program.steps[..exit]
        .iter()
        .filter(|s| matches!(s, Step::ExitScope { .. }))
        .count()
}

const REPLAY_HELPER: &str = r#"
/// Replays a captured graph on Flex: recorded values, then fed inputs, then every operation.
fn replay_on_flex(graph: &burn::tensor::CapturedGraph, feed: Vec<TensorData>) -> Vec<TensorData> {
    use burn::backend::Flex;
    use burn_ir::{TensorIr, TensorStatus};
    let mut interpreter = burn_router::TensorInterpreter::<Flex>::new(Default::default());
    for (id, data) in &graph.values {
        interpreter.register_tensor_data_id(*id, data.clone());
    }
    for (id, data) in graph.graph.inputs.iter().zip(feed) {
        interpreter.register_tensor_data_id(*id, data);
    }
    for operation in &graph.graph.operations {
        interpreter.register_op(operation.clone());
    }
    let find = |id| -> TensorIr {
        graph.graph.operations.iter().flat_map(|op| op.nodes()).find(|n| n.id == id).cloned()
            .unwrap_or_else(|| {
                let data = &graph.values[&id];
                TensorIr { id, shape: data.shape().clone(), status: TensorStatus::ReadWrite, dtype: data.dtype() }
            })
    };
    graph.graph.outputs.iter().map(|id| {
        let mut ir = find(*id);
        ir.status = TensorStatus::ReadWrite;
        burn_backend::read_sync(interpreter.read_tensor_async(ir)).expect("output reads")
    }).collect()
}
"#;
