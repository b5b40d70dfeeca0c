//! Prints a program as a stand-alone Rust reproducer against Burn's public API, ready to paste
//! into a Burn issue. The trace of a real run decides what is printed: steps that were skipped
//! are left out (they never ran), steps that panicked are wrapped in `catch_unwind` so the
//! snippet goes on as the harness did, except the finding's own step (or, without a finding,
//! the last one), printed bare so the snippet panics where the finding does. An oracle's finding ends with the check that
//! shows it: a replay mismatch replays the graph and compares it with the same steps run
//! eagerly, a model mismatch asserts the outcome the contract expects.

use std::collections::BTreeSet;
use std::fmt::Write as _;

use super::simplify::{literals, vec_literal, Literals};
use crate::interpreter::{Outcome, Trace, ValueInfo};
use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::eager_replay::DTYPE_LOST;
use crate::oracles::reference::Mismatch;
use crate::oracles::{normalize_message, Finding, Signature};
use crate::oracles::{
    DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REFERENCE_MISMATCH, REPLAY_MISMATCH,
};
use crate::program::display::{creation_options, op_expr};
use crate::program::{
    backward_expr, device_call, edge_dtype, exit_statements, fill_data, mentions_ident,
    replace_ident, transaction_expr, AutodiffMode, DeviceRef, Dtype, ExitForm, Fill, Kind, Op,
    Program, Slot, Step,
};

/// The Burn version the harness builds (from `Cargo.lock`, by `build.rs`).
const BURN: &str = env!("DISPATCH_FUZZ_BURN_VERSION");

fn device(d: DeviceRef) -> String {
    d.to_string()
}

fn data_literal(kind: Kind, dtype: Option<Dtype>, shape: &[u8], fill: Fill) -> String {
    // An edge fill names each value by its constant (`f16::MAX`, `f32::NAN`), in its dtype.
    if let Fill::Edge(edge) = fill {
        let dtype = edge_dtype(kind, dtype);
        let n: usize = shape.iter().map(|d| usize::from(*d)).product();
        let values: Vec<String> = (0..n).map(|i| edge.at(i).literal(dtype)).collect();
        return format!("TensorData::new({}, {shape:?})", vec_literal(&values));
    }
    let data = fill_data(kind, None, shape, fill);
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
    format!("TensorData::new({}, {shape:?})", vec_literal(&values))
}

fn kind_path(kind: Kind) -> &'static str {
    match kind {
        Kind::Float => "Float",
        Kind::Int => "Int",
        Kind::Bool => "Bool",
    }
}

/// The Rust expression a step evaluates (without `let`), or `None` for scope steps.
pub(super) fn step_expr(step: &Step) -> Option<String> {
    expr(step)
}

fn expr(step: &Step) -> Option<String> {
    Some(match step {
        Step::Create {
            kind,
            shape,
            fill,
            device: d,
            dtype,
            ..
        } => format!(
            "Tensor::<{}, {}>::from_data({}, {})",
            shape.len(),
            kind_path(*kind),
            data_literal(*kind, *dtype, shape, *fill),
            creation_options(&device(*d), *dtype)
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
        Step::Transaction { srcs, fallible } => transaction_expr(srcs, *fallible),
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
                "{FLEX_REPLAY}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![{}])",
                feed.join(", ")
            )
        }
        Step::Device { device: d, call } => device_call(&device(*d), *call),
        Step::Backward { loss, param, .. } => backward_expr(*loss, *param),
        Step::EnterScope { .. } | Step::ExitScope { .. } | Step::Thread { .. } => return None,
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

/// `code` with every string literal's contents left out, so a word in a message is not taken for
/// a name the code uses.
pub fn without_strings(code: &str) -> String {
    let mut out = String::with_capacity(code.len());
    let mut in_string = false;
    let mut escaped = false;
    for c in code.chars() {
        if in_string {
            match c {
                _ if escaped => escaped = false,
                '\\' => escaped = true,
                '"' => {
                    in_string = false;
                    out.push(c);
                }
                _ => {}
            }
        } else {
            if c == '"' {
                in_string = true;
            }
            out.push(c);
        }
    }
    out
}

/// The `use` lines `code` needs: each name it uses from `burn::tensor` (and `Capture`, where
/// it takes a capture primitive), and nothing else.
fn imports(code: &str) -> String {
    let stripped = without_strings(code);
    let code: &str = &stripped;
    let tensor: Vec<&str> = [
        "Bool",
        "BoolStore",
        "DType",
        "Device",
        "Float",
        "FloatDType",
        "Int",
        "IntDType",
        "Tensor",
        "TensorData",
        "Tolerance",
        "Transaction",
        "bf16",
        "f16",
    ]
    .into_iter()
    .filter(|name| {
        // A name used only as a path's tail (`burn::tensor::DType::F32`) needs no import.
        let mut rest = code;
        let mut bare = false;
        while let Some(at) = rest.find(name) {
            let before = rest[..at].chars().last();
            let after = rest[at + name.len()..].chars().next();
            let ident = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
            if !ident(before) && !ident(after) && !rest[..at].ends_with("::") {
                bare = true;
                break;
            }
            rest = &rest[at + name.len()..];
        }
        bare
    })
    .collect();
    let mut out = String::new();
    if code.contains("<Capture>") {
        out.push_str("use burn::backend::Capture;\n");
    }
    match tensor.as_slice() {
        [] => {}
        [one] => {
            let _ = writeln!(out, "use burn::tensor::{one};");
        }
        names => {
            let _ = writeln!(out, "use burn::tensor::{{{}}};", names.join(", "));
        }
    }
    out
}

/// The line that opens a reproducer's dependency list in its header.
pub const DEPENDENCIES_HEADER: &str = "Cargo.toml [dependencies], all the reproducer needs:";

/// The `burn` features `code` uses: Flex with its default `simd` and `rayon`, capture,
/// autodiff, wgpu (and `std` always).
pub(super) fn burn_features(code: &str) -> Vec<&'static str> {
    let mut features = vec!["std"];
    if code.contains("Device::flex()") || code.contains("backend::Flex") {
        features.extend(["flex", "simd", "rayon"]);
    }
    if code.contains("Device::capture()") {
        features.push("capture");
    }
    if mentions_ident(code, "autodiff") || code.contains(".require_grad()") {
        features.push("autodiff");
    }
    if code.contains("Device::wgpu(") || code.contains("backend::Cube") {
        features.push("wgpu");
    }
    features
}

/// A reproducer's header dependency list: the manifest lines, after [`DEPENDENCIES_HEADER`],
/// that build `code` as the `main.rs` of a crate of its own: `burn` with the features the code
/// uses (Flex with its default `simd` and `rayon`, capture, autodiff, wgpu), plus burn-router,
/// burn-ir and burn-backend where it replays a captured graph.
fn dependencies(code: &str, replay: bool, threaded: bool) -> Vec<String> {
    let features: Vec<String> = burn_features(code)
        .iter()
        .map(|f| format!("\"{f}\""))
        .collect();
    let mut lines = vec![
        DEPENDENCIES_HEADER.to_string(),
        format!(
            "burn = {{ version = \"={BURN}\", default-features = false, features = [{}] }}",
            features.join(", ")
        ),
    ];
    if replay {
        for krate in ["burn-backend", "burn-ir", "burn-router"] {
            lines.push(format!("{krate} = \"={BURN}\""));
        }
    }
    if threaded {
        lines.push("rayon = \"1\"".to_string());
    }
    lines
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

/// The `DType` patterns of `kind`'s tensors, as the dtype-contract oracle accepts them.
/// The assertion a reference finding ends on: the element the oracle judged, read back and
/// compared with the definition's value (a float within a thousandth, or NaN where it is NaN;
/// an int or a bool exactly), failing with the oracle's own words.
fn reference_check(m: &Mismatch, kind: Kind, pad: &str, name: &str) -> String {
    let (t, e) = (m.slot, m.element);
    let mut out = String::new();
    let _ = writeln!(out, "{pad}// {m}");
    let (ty, want) = match kind {
        Kind::Float => (
            "f64",
            match m.expected.as_str() {
                "NaN" => "f64::NAN".to_string(),
                "inf" => "f64::INFINITY".to_string(),
                "-inf" => "f64::NEG_INFINITY".to_string(),
                v => v.to_string(),
            },
        ),
        Kind::Int => ("i64", m.expected.clone()),
        Kind::Bool => ("bool", m.expected.clone()),
    };
    let _ = writeln!(
        out,
        "{pad}let got = {name}.to_data().iter::<{ty}>().nth({e}).expect(\"element {e}\");"
    );
    let _ = writeln!(out, "{pad}let want: {ty} = {want};");
    let same = match kind {
        Kind::Float => {
            "(got.is_nan() && want.is_nan()) || (got - want).abs() <= 1e-3 * want.abs().max(1.0)"
        }
        _ => "got == want",
    };
    let _ = writeln!(
        out,
        "{pad}assert!({same}, \"t{t} element {e}: the definition gives {{want:?}}, Burn computed {{got:?}}\");"
    );
    out
}

fn dtypes_of(kind: Kind) -> String {
    crate::oracles::dtype_contract::dtypes(kind)
        .iter()
        .map(|d| format!("burn::tensor::DType::{d}"))
        .collect::<Vec<_>>()
        .join(" | ")
}

/// A message without the `step N `call` ` it opens with (the call is on the line it stands
/// over, and step numbers are this project's).
pub(super) fn without_step(message: &str) -> &str {
    match message.strip_prefix("step ") {
        Some(rest) => rest.split_once("` ").map_or(message, |(_, tail)| tail),
        None => message,
    }
}

/// A model mismatch's message in the words of the call's contract: `step N `call`: the model
/// expected X (rule: why), Burn gave Y` becomes `expected X, Burn gave Y` (the rule's name and
/// the step number are this project's; the call is on the line the comment stands over).
pub(super) fn contract_words(message: &str) -> String {
    match message.split_once("expected ") {
        Some((_, rest)) => {
            let outcome = rest.split(" (").next().unwrap_or(rest);
            let gave = rest.rsplit_once("Burn gave ").map_or("", |(_, g)| g);
            format!(
                "expected {}, Burn gave {}",
                outcome_words(outcome),
                outcome_words(gave)
            )
        }
        None => message.to_string(),
    }
}

/// An outcome as the model names it (`ok`, `panic <class>`, `error <Variant>`), with a
/// catalogued class given as the panic's own words (`panic "capture scope is already
/// complete"`): the class names are this project's.
pub(super) fn outcome_words(outcome: &str) -> String {
    match outcome.strip_prefix("panic ") {
        Some(class) => match catalogue().iter().find(|r| r.background_tag == class) {
            Some(record) => format!("a panic \"{}\"", record.message_pattern),
            None => format!("a panic ({class})"),
        },
        None => outcome.to_string(),
    }
}

/// What a model-mismatch signature says the contract expects (`ok`, `panic <class>`,
/// `error <Variant>`).
pub(super) fn expected_outcome(signature: &Signature) -> String {
    signature
        .summary
        .split_once("expected ")
        .and_then(|(_, rest)| rest.split_once(", got "))
        .map_or_else(|| "another outcome".to_string(), |(e, _)| e.to_string())
}

/// The call an eager-replay finding replays its graph with (up to its graph and feed): on wgpu
/// when the finding says so.
fn replayed_on(finding: &Finding) -> &'static str {
    let on_wgpu =
        finding.signature.summary.contains("on wgpu") || finding.message.contains("on wgpu");
    if on_wgpu {
        WGPU_REPLAY
    } else {
        FLEX_REPLAY
    }
}

/// After the scope that ends at `exit` (graph `graph`): the same steps run eagerly on Flex
/// (slots renamed `eN`), the graph replayed with `replay` ([`FLEX_REPLAY`], [`WGPU_REPLAY`])
/// with the eager inputs, and every output compared with its eager value, printing both;
/// with `dtype_lost`, each output's dtype with the one the graph recorded first. Where the
/// replay itself fails (not a `mismatch`) and takes no inputs, only the replay is written.
fn eager_replay_check(
    program: &Program,
    (exit, graph): (usize, usize),
    (replay, dtype_lost, mismatch): (&str, bool, bool),
    ran: &dyn Fn(usize) -> bool,
    pad: &str,
) -> String {
    let Some(enter) = program.scope_ends().iter().position(|e| *e == Some(exit)) else {
        return String::new();
    };
    let Step::EnterScope {
        device: scope_device,
    } = program.steps[enter]
    else {
        return String::new();
    };
    let Step::ExitScope {
        inputs, outputs, ..
    } = &program.steps[exit]
    else {
        return String::new();
    };
    let mut out = String::new();
    if !mismatch && !dtype_lost && inputs.is_empty() {
        let _ = writeln!(
            out,
            "{pad}let replayed = {replay}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![]);"
        );
        return out;
    }
    let _ = writeln!(
        out,
        "{pad}// The graph replayed vs the same steps run eagerly on Flex:"
    );
    let mut renamed: BTreeSet<Slot> = BTreeSet::new();
    let rename = |text: String, renamed: &BTreeSet<Slot>| -> String {
        let mut text = replace_ident(&text, &device(scope_device), "flex");
        for s in renamed {
            text = replace_ident(&text, &format!("t{s}"), &format!("e{s}"));
        }
        text
    };
    for i in enter + 1..exit {
        let step = &program.steps[i];
        if matches!(step, Step::EnterScope { .. } | Step::ExitScope { .. }) {
            let _ = writeln!(out, "{pad}// (a nested scope: its eager run is not shown)");
            return out;
        }
        if !ran(i) {
            continue;
        }
        let Some(expr) = expr(step) else { continue };
        let expr = rename(expr, &renamed);
        match step.writes().first() {
            Some(w) => {
                renamed.insert(*w);
                let _ = writeln!(out, "{pad}let e{w} = {expr};");
            }
            None => {
                let _ = writeln!(out, "{pad}let _ = {expr};");
            }
        }
    }
    let eager = |slots: &[Slot]| -> Vec<String> {
        slots
            .iter()
            .map(|s| rename(format!("t{s}.clone().into_data()"), &renamed))
            .collect()
    };
    let _ = writeln!(
        out,
        "{pad}let replayed = {replay}graph{graph}.as_ref().expect(\"graph{graph} was captured\"), vec![{}]);",
        eager(inputs).join(", ")
    );
    if dtype_lost {
        for (k, slot) in outputs.iter().enumerate() {
            let _ = writeln!(
                out,
                "{pad}assert_recorded_dtype(\"output {k} (t{slot})\", graph{graph}.as_ref().unwrap(), {k}, &replayed[{k}]);"
            );
        }
    }
    for (k, expr) in eager(outputs).iter().enumerate() {
        let _ = writeln!(
            out,
            "{}",
            assert_same(
                pad,
                &format!("output {k} (t{}): replayed vs eager", outputs[k]),
                (&format!("replayed[{k}]"), expr),
                None
            )
            .trim_end()
        );
    }
    out
}

/// After the program: the value step `at` produced, compared between Flex and wgpu (as Burn's
/// tests compare). The steps up to `at` run again with every tensor on each backend (slots
/// renamed `eN` on Flex, `wN` on wgpu), moves between devices becoming clones as in the
/// differential's two runs, except on a backend the program already ran them all on, whose
/// values (`tN`) are compared as they are: each chain runs once per backend.
fn differential_check(
    program: &Program,
    (at, lits): (usize, &Literals),
    ran: &dyn Fn(usize) -> bool,
    kind: Option<Kind>,
) -> String {
    let pad = "    ";
    let mut out = String::new();
    let Some(o) = program.steps[at].writes().first().copied() else {
        return out;
    };
    let all_on = |device: DeviceRef| {
        (0..=at).filter(|i| ran(*i)).all(|i| {
            let step = &program.steps[i];
            let made_on = lits.replaced.get(&i).map(|r| r.1).or(step.device());
            !matches!(step, Step::EnterScope { .. } | Step::Replay { .. })
                && made_on.is_none_or(|d| d == device)
        })
    };
    let _ = writeln!(out, "{pad}// The same steps on Flex and on wgpu:");
    let mut names = Vec::new();
    for (prefix, device, here) in [
        ("e", "flex", DeviceRef::Flex),
        ("w", "wgpu", DeviceRef::Wgpu),
    ] {
        if all_on(here) {
            names.push(format!("t{o}"));
        } else if rerun(program, (at, lits), ran, (prefix, device), &mut out) {
            names.push(format!("{prefix}{o}"));
        } else {
            return out;
        }
    }
    let _ = writeln!(
        out,
        "{}",
        assert_same(
            pad,
            &format!("t{o}: wgpu vs flex"),
            (
                &format!("{}.into_data()", names[1]),
                &format!("{}.into_data()", names[0])
            ),
            kind
        )
        .trim_end()
    );
    out
}

/// Every step up to `at` that ran, again with every tensor on `device` (slots renamed
/// `{prefix}N`), moves between devices becoming clones, a step of `lits` written as its
/// literal, written to `out`; `false` where a scope or replay step stops it (said in a comment).
fn rerun(
    program: &Program,
    (at, lits): (usize, &Literals),
    ran: &dyn Fn(usize) -> bool,
    (prefix, device): (&str, &str),
    out: &mut String,
) -> bool {
    let pad = "    ";
    {
        let mut written: BTreeSet<Slot> = BTreeSet::new();
        for i in 0..=at {
            if !ran(i) {
                continue;
            }
            let step = &program.steps[i];
            let line = match step {
                // A step the simplifier wrote as a literal is made again on this device.
                _ if lits.replaced.contains_key(&i) => {
                    let (text, _) = &lits.replaced[&i];
                    let o = step.writes().first().copied().unwrap_or_default();
                    let mut text = text.clone();
                    for d in ["flex", "flex_ad", "wgpu"] {
                        text = replace_ident(&text, d, device);
                    }
                    Some((o, text))
                }
                Step::Create { out: o, .. }
                | Step::Op { out: o, .. }
                | Step::Autodiff { out: o, .. }
                | Step::Backward { out: o, .. } => {
                    let Some(mut text) = expr(step) else { continue };
                    for d in ["flex", "flex_ad", "wgpu"] {
                        text = replace_ident(&text, d, device);
                    }
                    for s in &written {
                        text = replace_ident(&text, &format!("t{s}"), &format!("{prefix}{s}"));
                    }
                    // A gradient step reached here had a gradient in the program's run.
                    if matches!(step, Step::Backward { .. }) {
                        text.push_str(".expect(\"a gradient\")");
                    }
                    Some((*o, text))
                }
                Step::ToDevice { out: o, src, .. } | Step::Clone { out: o, src } => {
                    Some((*o, format!("{prefix}{src}.clone()")))
                }
                Step::Read { .. } | Step::Transaction { .. } | Step::Drop { .. } => None,
                _ => {
                    let _ = writeln!(
                        out,
                        "{pad}// (step {i} is not run again here: a scope or replay step)"
                    );
                    return false;
                }
            };
            if let Some((o, text)) = line {
                written.insert(o);
                let _ = writeln!(out, "{pad}let {prefix}{o} = {text};");
            }
        }
    }
    true
}

/// After the program, for a divergence at replay step `at`: the graph replayed on wgpu (as the
/// differential's wgpu run does, fed the program's values) and each output loaded onto wgpu and
/// compared with the program's Flex replay, printing both. `outputs` describes the Flex
/// replay's outputs, which the program loaded onto Flex.
fn replay_differential_check(program: &Program, at: usize, outputs: &[ValueInfo]) -> String {
    let pad = "    ";
    let step = &program.steps[at];
    let (Step::Replay { outputs: slots, .. }, Some(replay)) = (step, expr(step)) else {
        return String::new();
    };
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{pad}// The graph replayed on wgpu vs replayed on Flex:"
    );
    let on_wgpu = replay.replace(FLEX_REPLAY, WGPU_REPLAY);
    let _ = writeln!(out, "{pad}let on_wgpu = {on_wgpu};");
    for (k, (slot, info)) in slots.iter().zip(outputs).enumerate() {
        let _ = writeln!(
            out,
            "{pad}let w{slot} = Tensor::<{}, {}>::from_data(on_wgpu[{k}].clone(), &wgpu);",
            info.shape.len(),
            kind_path(info.kind)
        );
        let _ = writeln!(
            out,
            "{}",
            assert_same(
                pad,
                &format!("t{slot}: wgpu vs flex"),
                (
                    &format!("w{slot}.into_data()"),
                    &format!("t{slot}.into_data()")
                ),
                Some(info.kind)
            )
            .trim_end()
        );
    }
    out
}

/// The line that fails unless `got` equals `want` (two `TensorData` expressions) as Burn's own
/// tests compare: within `Tolerance::default()` (balanced: 0.5% relative, 1e-5 absolute) for a
/// float `kind` (or one the trace does not know), exactly for ints and bools; the dtypes may
/// differ. Its panic, "Tensors are not (approx) eq", lists the positions that differ.
fn assert_same(pad: &str, what: &str, (got, want): (&str, &str), kind: Option<Kind>) -> String {
    match kind {
        Some(Kind::Int | Kind::Bool) => {
            format!("{pad}{got}.assert_eq(&{want}, false); // {what}\n")
        }
        _ => format!(
            "{pad}{got}.assert_approx_eq::<f64>(&{want}, Tolerance::default()); // {what}\n"
        ),
    }
}

const RECORDED_DTYPE_HELPER: &str = r#"
/// Fails unless replayed output `k` has the dtype its graph recorded for it.
fn assert_recorded_dtype(what: &str, graph: &burn::tensor::CapturedGraph, k: usize, got: &TensorData) {
    let id = graph.graph.outputs[k];
    let recorded = graph.graph.operations.iter().flat_map(|op| op.nodes()).find(|n| n.id == id)
        .map(|n| n.dtype)
        .unwrap_or_else(|| graph.values[&id].dtype());
    println!("{what}: replayed as {:?}, recorded as {recorded:?}", got.dtype());
    assert_eq!(got.dtype(), recorded, "{what}: the replayed dtype is not the recorded one");
}
"#;

fn count_exits_before(program: &Program, exit: usize) -> usize {
    program.steps[..exit]
        .iter()
        .filter(|s| matches!(s, Step::ExitScope { .. }))
        .count()
}

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
mod tests {
    use super::*;

    #[test]
    fn a_word_inside_a_string_literal_is_no_use_of_a_name() {
        let code =
            r#"assert!(x, "a Bool tensor \"Capture\" here"); let t = Tensor::<1, Int>::zeros();"#;
        let names = without_strings(code);
        assert!(
            !names.contains("Bool") && !names.contains("Capture"),
            "{names}"
        );
        assert!(names.contains("Tensor::<1, Int>"), "{names}");
        assert_eq!(imports(code), "use burn::tensor::{Int, Tensor};\n");
    }

    #[test]
    fn a_model_message_is_told_in_the_contracts_words_without_the_projects_names() {
        let message = "step 7 `scope.complete([], [])`: the model expected panic \
                       capture-scope-complete (stale-operand: why), Burn gave ok";
        let words = contract_words(message);
        assert!(words.starts_with("expected a panic \""), "{words}");
        assert!(words.ends_with("Burn gave ok"), "{words}");
        assert!(!words.contains("capture-scope-complete"), "{words}");
        assert_eq!(
            without_step("step 1 `let t1 = t0.exp();` gave a Bool tensor stored as U8"),
            "gave a Bool tensor stored as U8"
        );
    }

    #[test]
    fn a_reproducer_lists_only_the_features_its_code_uses() {
        let deps = dependencies("let flex = Device::flex();", false, false);
        assert!(
            deps[1].contains(r#"["std", "flex", "simd", "rayon"]"#),
            "{deps:?}"
        );
        let deps = dependencies(
            "let c = Device::capture(); let w = Device::wgpu(k); t.autodiff()",
            true,
            false,
        );
        for feature in ["\"capture\"", "\"wgpu\"", "\"autodiff\""] {
            assert!(deps[1].contains(feature), "{deps:?}");
        }
        assert!(!deps[1].contains("\"flex\""), "{deps:?}");
        assert!(
            deps.iter().any(|l| l.starts_with("burn-router = ")),
            "{deps:?}"
        );
    }
}
