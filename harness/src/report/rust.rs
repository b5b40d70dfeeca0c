//! Prints a program as a stand-alone Rust reproducer against Burn's public API, ready to paste
//! into a Burn issue. The trace of a real run decides what is printed: steps that were skipped
//! are left out (they never ran), steps that panicked are wrapped in `catch_unwind` so the
//! snippet goes on as the harness did, except the finding's own step (or, without a finding,
//! the last one), printed bare so the snippet panics where the finding does. An oracle's finding ends with the check that
//! shows it: a replay mismatch replays the graph and compares it with the same steps run
//! eagerly, a model mismatch asserts the outcome the contract expects.

use std::fmt::Write as _;

use crate::interpreter::Trace;
use crate::oracles::catalogue::{catalogue, record_of};
use crate::oracles::{normalize_message, Finding, Payload};
use crate::oracles::{
    DIVERGENCE, DTYPE_CONTRACT, MODEL_MISMATCH, REFERENCE_MISMATCH, REPLAY_MISMATCH,
};
use crate::program::Program;

mod body;
mod checks;
mod expr;
mod header;

pub(super) use checks::{contract_words, expected_outcome, without_step};
pub(super) use expr::step_expr;
pub(super) use header::burn_features;
pub use header::{without_strings, DEPENDENCIES_HEADER};

use checks::RECORDED_DTYPE_HELPER;
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

/// The reproducer: a `main` using Burn's public API, plus the replay helper when needed.
pub fn to_rust(program: &Program, trace: &Trace, finding: Option<&Finding>) -> String {
    let mut body = body::main_body(program, trace, finding);
    let threaded = program.thread_count() > 1;
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
    match (finding.class, &finding.payload) {
        // A backend that failed where the other computed fails the reproducer with its own
        // message, as the backend raised it.
        (DIVERGENCE, Payload::Failed { message }) => {
            normalize_message(message.lines().next().unwrap_or_default())
        }
        (REPLAY_MISMATCH, p) if p.lost_dtype() => {
            "the replayed dtype is not the recorded one".to_string()
        }
        (REPLAY_MISMATCH | DIVERGENCE, _) => "Tensors are not".to_string(),
        (MODEL_MISMATCH, _) => "the contract expects".to_string(),
        (DTYPE_CONTRACT, _) => "tensor stored as".to_string(),
        (REFERENCE_MISMATCH, _) => "the definition gives".to_string(),
        (class, _) => record_of(catalogue(), class.name(), &finding.message)
            .map(|r| r.message_pattern.clone())
            .unwrap_or_else(|| {
                normalize_message(finding.message.lines().next().unwrap_or_default())
            }),
    }
}

#[cfg(test)]
mod tests;
