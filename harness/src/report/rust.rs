//! Prints a program as a stand-alone Rust reproducer against Burn's public API, ready to paste
//! into a Burn issue. The trace of a real run decides what is printed: steps that were skipped
//! are left out (they never ran), steps that panicked are wrapped in `catch_unwind` so the
//! snippet goes on as the harness did, except the finding's own step (or, without a finding,
//! the last one), printed bare so the snippet panics where the finding does. An oracle's finding ends with the check that
//! shows it: a replay mismatch replays the graph and compares it with the same steps run
//! eagerly, a model mismatch asserts the outcome the contract expects.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::simplify::literals;
use crate::interpreter::{Outcome, Trace};
use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::eager_replay::DTYPE_LOST;
use crate::oracles::reference::Mismatch;
use crate::oracles::{normalize_message, Finding};
use crate::oracles::{
    DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REFERENCE_MISMATCH, REPLAY_MISMATCH,
};
use crate::program::{exit_statements, DeviceRef, ExitForm, Program, Slot, Step};

mod checks;
mod expr;
mod header;

pub(super) use checks::{contract_words, expected_outcome, outcome_words, without_step};
pub(super) use expr::step_expr;
pub(super) use header::burn_features;
pub use header::{without_strings, DEPENDENCIES_HEADER};

use checks::{
    count_exits_before, differential_check, dtypes_of, eager_replay_check, reference_check,
    replay_differential_check, replayed_on, rerun, RECORDED_DTYPE_HELPER,
};
use expr::{device, expr, kind_path};
use header::{dependencies, imports};

/// How a reproducer replays a graph on Flex, up to the graph and the feed.
const FLEX_REPLAY: &str = "replay::<burn::backend::Flex>(Default::default(), ";

/// How a reproducer replays a graph on wgpu's default device ([`CUBE_DEVICE`]).
const WGPU_REPLAY: &str = "replay::<burn::backend::Cube>(cube.clone(), ";

/// The CubeCL device under wgpu's default device, which a wgpu replay runs on.
const CUBE_DEVICE: &str = "let burn::backend::DispatchDevice::Cube(cube) = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice).as_dispatch().clone() else { unreachable!() };";

/// A graph consumer's replay, through burn-router's interpreter: the graph's recorded values and
/// the fed inputs registered, every operation run, every output read.
const REPLAY_HELPER: &str = r#"
/// Burn has no public replay of a CapturedGraph: a graph consumer replays it through burn-router's interpreter, as here.
fn replay<B: burn_ir::BackendIr>(device: B::Device, graph: &burn::tensor::CapturedGraph, feed: Vec<TensorData>) -> Vec<TensorData> {
    let mut interpreter = burn_router::TensorInterpreter::<B>::new(device);
    let given = graph.values.iter().map(|(id, d)| (*id, d.clone()));
    given.chain(graph.graph.inputs.iter().copied().zip(feed)).for_each(|(id, data)| interpreter.register_tensor_data_id(id, data));
    graph.graph.operations.iter().for_each(|op| interpreter.register_op(op.clone()));
    let nodes: Vec<burn_ir::TensorIr> = graph.graph.operations.iter().flat_map(|op| op.nodes()).cloned().collect();
    graph.graph.outputs.iter().map(|id| {
        let d = graph.values.get(id); // an output no operation computes is a recorded value
        let ir = nodes.iter().find(|n| n.id == *id).cloned().unwrap_or_else(|| burn_ir::TensorIr { id: *id, shape: d.unwrap().shape().clone(), status: burn_ir::TensorStatus::ReadOnly, dtype: d.unwrap().dtype() });
        burn_backend::read_sync(interpreter.read_tensor_async(burn_ir::TensorIr { status: burn_ir::TensorStatus::ReadWrite, ..ir })).expect("output reads")
    }).collect()
}
"#;

/// The Burn version the harness builds (from `Cargo.lock`, by `build.rs`).
const BURN: &str = env!("DISPATCH_FUZZ_BURN_VERSION");

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
pub fn to_rust(program: &Program, trace: &Trace, finding: Option<&Finding>) -> String {
    let at = finding.and_then(|f| f.step);
    let model = finding.filter(|f| f.class == MODEL_MISMATCH);
    // An eager-replay finding: a mismatch, or a replay that fails with a known bug's class.
    let replay =
        finding.filter(|f| f.class == REPLAY_MISMATCH || f.signature.origin == "eager-replay");
    let differential = finding.filter(|f| f.class == DIVERGENCE);
    let dtype = finding.filter(|f| f.class == DTYPE_CONTRACT);
    let reference = finding
        .filter(|f| f.class == REFERENCE_MISMATCH)
        .and_then(|f| Mismatch::parse(&f.message));
    // A wgpu mirror's value: the steps are run again on wgpu, as the differential's wgpu run.
    let reference_on_wgpu = finding
        .filter(|f| f.class == REFERENCE_MISMATCH && f.signature.summary.contains(" on wgpu "));
    let outcome = |i: usize| trace.steps.get(i).map(|r| &r.outcome);
    // The simplifier's literals: a step it leaves out is written as if it never ran.
    let lits = literals(program, trace, at);
    let ran = |i: usize| {
        !lits.dropped.contains(&i) && !matches!(outcome(i), Some(Outcome::Skipped { .. }) | None)
    };
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
    let replays = program
        .steps
        .iter()
        .any(|s| matches!(s, Step::Replay { .. }));
    if (differential.is_some() || reference_on_wgpu.is_some())
        && !devices.contains(&DeviceRef::Wgpu)
    {
        let _ = writeln!(
            body,
            "    let wgpu = Device::wgpu(burn::tensor::DeviceKind::DefaultDevice);"
        );
    }
    if differential.is_some() && !devices.contains(&DeviceRef::Flex) {
        let _ = writeln!(body, "    let flex = Device::flex();");
    }
    if !devices.contains(&DeviceRef::Flex) && (replays || replay.is_some()) {
        let _ = writeln!(body, "    let flex = Device::flex();");
    }
    let threads = program.step_threads();
    let threaded = program.thread_count() > 1;
    if threaded {
        let _ = writeln!(
            body,
            "    let lanes = Lanes::new({});",
            program.thread_count()
        );
    }
    // The program thread each open scope's closure runs on (`None`: `main`, which runs no step
    // of a threaded program itself), and whether its `capture_scope` was handed to a lane.
    let mut context: Vec<(Option<u8>, bool)> = vec![(None, false)];
    // The step whose lines go to a lane once they are all written: where they start in `body`,
    // its thread and its indentation.
    let mut lent: Option<(usize, u8, String)> = None;
    let mut depth = 1usize;
    let mut exports: Vec<Vec<Slot>> = Vec::new();
    for (i, step) in program.steps.iter().enumerate() {
        if let Some((start, thread, pad)) = lent.take() {
            lend(&mut body, start, thread, &pad);
        }
        let pad = "    ".repeat(depth);
        let here = context.last().and_then(|c| c.0);
        let elsewhere = threaded && here != Some(threads[i]);
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
                let form = match program.steps.get(exit) {
                    Some(Step::ExitScope { form, .. }) => *form,
                    _ => ExitForm::Complete,
                };
                let open = format!(
                    "{}.capture_scope(|{}scope| {{",
                    device(*d),
                    if form.registers_inputs() { "mut " } else { "" }
                );
                let open = match form {
                    // The closure's unwind is caught, as a caller that survives it would.
                    ExitForm::Unwind => {
                        format!("std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {open}")
                    }
                    _ => open,
                };
                let open = if elsewhere {
                    format!("lanes.on({}, || {open}", threads[i])
                } else {
                    open
                };
                let _ = writeln!(body, "{pad}let graph{graph} = {open}");
                exports.push(out);
                context.push((Some(threads[i]), elsewhere));
                depth += 1;
                continue;
            }
            Step::ExitScope {
                inputs,
                outputs,
                form,
            } => {
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
                let statements = match form {
                    ExitForm::Complete => {
                        vec![format!("scope.complete({}, {})", ids(inputs), ids(outputs))]
                    }
                    _ => exit_statements(inputs, outputs, *form),
                };
                // The last one is the closure's value.
                let last = statements.len() - 1;
                for (k, statement) in statements.iter().enumerate() {
                    let end = if k == last { "" } else { ";" };
                    let _ = writeln!(body, "{pad}{statement}{end}");
                }
                depth -= 1;
                let pad = "    ".repeat(depth);
                let graph = count_exits_before(program, i);
                let lane = if context.pop().is_some_and(|c| c.1) {
                    ")"
                } else {
                    ""
                };
                if *form == ExitForm::Unwind {
                    let _ = writeln!(body, "{pad}}}))){lane});");
                    let _ = writeln!(
                        body,
                        "{pad}assert!(graph{graph}.is_err(), \"the closure unwinds\");"
                    );
                } else {
                    let _ = writeln!(body, "{pad}}}){lane};");
                }
                // Normalized as in snapshots: tensor ids count up with the process's history, so
                // the raw text would change with what ran before the case.
                if let Some(Outcome::Error { message, .. }) = outcome(i) {
                    let message = crate::oracles::normalize_message(message);
                    let _ = writeln!(body, "{pad}// -> Err({message})");
                }
                if let Some(f) = model.filter(|_| at == Some(i)) {
                    let expected = expected_outcome(&f.signature);
                    let ok = expected == "ok";
                    let expected = outcome_words(&expected).replace('"', "'");
                    let _ = writeln!(body, "{pad}// {}", contract_words(&f.message));
                    let _ = writeln!(
                        body,
                        "{pad}assert!(graph{graph}.{}(), \"the contract expects {expected} here: {{:?}}\", graph{graph}.as_ref().map(|_| \"a graph\"));",
                        if ok { "is_ok" } else { "is_err" }
                    );
                }
                if let Some(f) = replay.filter(|_| at == Some(i)) {
                    let dtype_lost = f.signature.summary.contains(DTYPE_LOST);
                    let mismatch = f.class == REPLAY_MISMATCH;
                    body.push_str(&eager_replay_check(
                        program,
                        (i, graph),
                        (replayed_on(f), dtype_lost, mismatch),
                        &ran,
                        &pad,
                    ));
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
        if elsewhere {
            lent = Some((body.len(), threads[i], pad.clone()));
        }
        let replay_outputs = match outcome(i) {
            Some(Outcome::Ok { outputs, .. }) => outputs.as_slice(),
            _ => &[],
        };
        let Some(expr) = lits
            .replaced
            .get(&i)
            .map(|r| r.0.clone())
            .or_else(|| expr(step))
        else {
            continue;
        };
        let panicked = matches!(outcome(i), Some(Outcome::Panic(_)));
        let read_expected_ok = model.is_some_and(|f| expected_outcome(&f.signature) == "ok")
            && at == Some(i)
            && matches!(outcome(i), Some(Outcome::Error { .. }));
        if let Some(Outcome::Panic(p)) = outcome(i) {
            let _ = writeln!(
                body,
                "{pad}// panics: {}",
                p.message.lines().next().unwrap_or_default()
            );
        }
        if panicked && Some(i) != at.or(last_run) {
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
            // A fallible read the model expected to succeed hands its error back: the
            // reproducer fails on it.
            Step::Read { .. } | Step::Transaction { .. } if read_expected_ok => {
                let _ = writeln!(body, "{pad}let result = {expr};");
                let _ = writeln!(
                    body,
                    "{pad}assert!(result.is_ok(), \"the contract expects ok here; Burn gave {{result:?}}\");"
                );
            }
            Step::Read { .. } | Step::Transaction { .. } | Step::Device { .. } => {
                let _ = writeln!(body, "{pad}let _ = {expr};");
            }
            Step::Backward { out, .. } => match outcome(i) {
                Some(Outcome::Ok { value: Some(_), .. }) => {
                    let _ = writeln!(body, "{pad}let t{out} = {expr}.expect(\"a gradient\");");
                }
                _ => {
                    let _ = writeln!(body, "{pad}let _ = {expr}; // no gradient");
                }
            },
            _ => {
                let out = step.writes().first().copied().unwrap_or_default();
                let _ = writeln!(body, "{pad}let t{out} = {expr};");
            }
        }
        if let (Some(f), Some(Outcome::Ok { value: Some(v), .. })) =
            (dtype.filter(|_| at == Some(i)), outcome(i))
        {
            let out = step.writes().first().copied().unwrap_or_default();
            let _ = writeln!(body, "{pad}// {}", without_step(&f.message));
            let _ = writeln!(
                body,
                "{pad}assert!(matches!(t{out}.dtype(), {}), \"a {:?} tensor stored as {{:?}}\", t{out}.dtype());",
                dtypes_of(v.kind),
                v.kind
            );
        }
        if let (Some(m), Some(Outcome::Ok { value: Some(v), .. })) =
            (reference.as_ref().filter(|_| at == Some(i)), outcome(i))
        {
            if reference_on_wgpu.is_none() {
                body.push_str(&reference_check(m, v.kind, &pad, &format!("t{}", m.slot)));
            }
        }
        if let Some(f) = model.filter(|_| at == Some(i)) {
            let expected = expected_outcome(&f.signature);
            let _ = writeln!(body, "{pad}// {}", contract_words(&f.message));
            if expected.starts_with("panic") && !panicked {
                let expected = outcome_words(&expected).replace('"', "'");
                let _ = writeln!(
                    body,
                    "{pad}let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {{ let _ = {expr}; }}));"
                );
                let _ = writeln!(
                    body,
                    "{pad}assert!(caught.is_err(), \"the contract expects {expected} here; Burn accepted the call\");"
                );
            }
        }
    }
    if let Some((start, thread, pad)) = lent.take() {
        lend(&mut body, start, thread, &pad);
    }
    if let (Some(m), Some(_), Some(at)) = (&reference, reference_on_wgpu, at) {
        let pad = "    ";
        let _ = writeln!(body, "{pad}// The same steps on wgpu:");
        if rerun(program, (at, &lits), &ran, ("w", "wgpu"), &mut body) {
            if let Some(Outcome::Ok { value: Some(v), .. }) = outcome(at) {
                body.push_str(&reference_check(m, v.kind, pad, &format!("w{}", m.slot)));
            }
        }
    }
    if let (Some(_), Some(at)) = (differential, at) {
        let check = match (&program.steps[at], outcome(at)) {
            (Step::Replay { .. }, Some(Outcome::Ok { outputs, .. })) => {
                replay_differential_check(program, at, outputs)
            }
            (_, Some(Outcome::Ok { value, .. })) => {
                differential_check(program, (at, &lits), &ran, value.as_ref().map(|v| v.kind))
            }
            _ => differential_check(program, (at, &lits), &ran, None),
        };
        body.push_str(&check);
    }
    // Helpers go in only where the body calls them: the replay helpers need burn-router,
    // burn-ir and burn-backend, which a reproducer that replays nothing must not ask for.
    let mut helpers = String::new();
    let replay_helper = body.contains("replay::<");
    if replay_helper {
        helpers.push_str(REPLAY_HELPER);
    }
    if body.contains(WGPU_REPLAY) {
        body.insert_str(0, &format!("    {CUBE_DEVICE}\n"));
    }
    if threaded {
        helpers.push_str(LANES_HELPER);
    }
    if body.contains("assert_recorded_dtype(") {
        helpers.push_str(RECORDED_DTYPE_HELPER);
    }
    let code = format!("fn main() {{\n{body}}}\n{helpers}");
    let mut out = String::new();
    for line in dependencies(&code, replay_helper, threaded) {
        let _ = writeln!(out, "// {line}");
    }
    out.push_str(&imports(&code));
    out.push('\n');
    out.push_str(&code);
    out
}

/// Hands the lines `body` holds from `start` on (one step's) to program thread `thread`: they
/// run in `lanes.on(thread, || { ... })`, which hands back the tensors they define.
fn lend(body: &mut String, start: usize, thread: u8, pad: &str) {
    let lines = body.split_off(start);
    if lines.is_empty() {
        return;
    }
    let defined: Vec<&str> = lines
        .lines()
        .filter_map(|l| l.strip_prefix(pad))
        .filter_map(|l| l.strip_prefix("let "))
        .flat_map(|l| {
            let names = match l.strip_prefix('[') {
                Some(list) => list.split(']').next().unwrap_or_default(),
                None => l.split([' ', ':']).next().unwrap_or_default(),
            };
            names.split(", ").map(str::trim)
        })
        .filter(|n| {
            n.strip_prefix('t')
                .is_some_and(|d| !d.is_empty() && d.bytes().all(|b| b.is_ascii_digit()))
        })
        .collect();
    let tuple = match defined.as_slice() {
        [] => String::new(),
        names => format!("({},)", names.join(", ")),
    };
    let head = if tuple.is_empty() {
        String::new()
    } else {
        format!("let {tuple} = ")
    };
    let _ = writeln!(body, "{pad}{head}lanes.on({thread}, || {{");
    for line in lines.lines() {
        let _ = writeln!(body, "    {line}");
    }
    if !tuple.is_empty() {
        let _ = writeln!(body, "{pad}    {tuple}");
    }
    let _ = writeln!(body, "{pad}}});");
}

/// The program threads of a threaded reproducer: one single-thread rayon pool each. `on` runs
/// a closure on a thread and waits for it, and a pool thread that waits so runs what is handed
/// to it meanwhile, so a scope's closure open on one thread hands steps to another and gets
/// steps handed back, one at a time in the program's order.
const LANES_HELPER: &str = r#"
/// The program's threads, one single-thread pool each: `on(k, f)` runs `f` on thread `k` and
/// waits; a thread waiting so runs what is handed to it meanwhile. Steps run one at a time, in
/// the program's order, each on the thread the program names.
struct Lanes(Vec<rayon::ThreadPool>);

impl Lanes {
    fn new(threads: usize) -> Self {
        Lanes(
            (0..threads)
                .map(|k| {
                    rayon::ThreadPoolBuilder::new()
                        .num_threads(1)
                        .thread_name(move |_| format!("program thread {k}"))
                        .build()
                        .unwrap()
                })
                .collect(),
        )
    }

    fn on<T: Send>(&self, thread: usize, f: impl FnOnce() -> T + Send) -> T {
        self.0[thread].install(f)
    }
}
"#;

/// What a reproducer's output must contain when it fails as its finding says: the oracle's own
/// words for an oracle finding, else the catalogue pattern of the finding's class (or its
/// message's first line).
pub fn fails_with(finding: &Finding) -> String {
    match finding.class.as_str() {
        // A backend that failed where the other computed fails the reproducer with its own
        // message (`tN: ` and the failure's text, as the differential records it).
        DIVERGENCE
            if finding.signature.summary.contains("panicked")
                || finding.signature.summary.contains("failed to read") =>
        {
            let message = finding.message.lines().next().unwrap_or_default();
            let message = message.split_once(": ").map_or(message, |(_, m)| m);
            normalize_message(message)
        }
        REPLAY_MISMATCH if finding.signature.summary.contains(DTYPE_LOST) => {
            "the replayed dtype is not the recorded one".to_string()
        }
        REPLAY_MISMATCH | DIVERGENCE => "Tensors are not".to_string(),
        MODEL_MISMATCH => "the contract expects".to_string(),
        DTYPE_CONTRACT => "tensor stored as".to_string(),
        REFERENCE_MISMATCH => "the definition gives".to_string(),
        class => record_of(catalogue(), class, &finding.message)
            .map(|r| r.message_pattern.clone())
            .unwrap_or_else(|| {
                normalize_message(finding.message.lines().next().unwrap_or_default())
            }),
    }
}

#[cfg(test)]
mod tests;
