//! What Burn does when a capture device is used from two threads, on its public API: the facts
//! a threaded program's model (issue 30 §3) starts from, and threaded programs themselves: their
//! schedule runs each step on the thread it names, and survives files and fuzzer bytes. burn-router finds a creation op's client
//! in one process-wide registry keyed by device (`client/base.rs`, `CLIENTS`; `float_from_data`
//! calls `get_client`, `ops/tensor.rs:41-42`), and `capture_scope` promises only that one scope
//! is active on a device at a time (burn-capture `capture.rs:44`), nothing per thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;
use std::sync::Barrier;

use burn::backend::Capture;
use burn::tensor::{Device, Tensor, TensorData};
use burn_ir::TensorId;
use dispatch_fuzz::interpreter::Outcome;
use dispatch_fuzz::program::{Backends, Program, ProgramFile, Step};

use crate::common;

/// A program file's steps, fixed up.
fn program(steps: &str) -> Program {
    ProgramFile::parse(&format!("{{\"steps\": [{steps}]}}"), "test")
        .unwrap()
        .program()
}

/// `exp` of a fresh two-element tensor on `device`, made on this thread: its capture id, or the
/// panic it raised.
fn exp_of_fresh(device: &Device) -> Result<(TensorId, Vec<Tensor<1>>), String> {
    catch_unwind(AssertUnwindSafe(|| {
        let x = Tensor::<1>::from_data(TensorData::new(vec![0.0f32, 1.0], [2]), device);
        let y = x.clone().exp();
        let id = y.clone().try_into_primitive::<Capture>().unwrap().id();
        (id, vec![x, y])
    }))
    .map_err(|payload| {
        payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_default()
    })
}

#[test]
fn a_tensor_made_on_another_thread_while_a_scope_is_open_on_its_device_is_recorded_into_that_scope()
{
    let device = Device::capture();
    // With no scope open anywhere, the seed guard stops the creation.
    let alone = std::thread::scope(|s| s.spawn(|| exp_of_fresh(&device).map(|_| ())).join());
    let guard = alone
        .unwrap()
        .expect_err("no scope is open, so the creation panics");
    assert!(
        guard.contains("must run inside CaptureDevice::capture_scope"),
        "{guard}"
    );

    // With this thread's scope open on the device, the other thread's creation finds the scope's
    // client, and its op lands in this thread's graph.
    let opened = Barrier::new(2);
    let closed = Barrier::new(2);
    let (sent, made) = mpsc::channel();
    let graph = std::thread::scope(|s| {
        s.spawn(|| {
            opened.wait();
            let result = exp_of_fresh(&device);
            sent.send(result.as_ref().map(|(id, _)| *id).map_err(Clone::clone))
                .unwrap();
            closed.wait();
            // Its tensors are dropped after the scope completed, as a stale handle is.
            drop(result);
        });
        let graph = device.capture_scope(|scope| {
            opened.wait();
            let id = made.recv().unwrap();
            let id = id.expect("the other thread's creation does not meet the guard");
            scope.complete([], [id])
        });
        closed.wait();
        graph
    });
    let graph = graph.expect("the scope completes with the other thread's output");
    let exps = graph
        .graph
        .operations
        .iter()
        .filter(|op| format!("{op:?}").contains("Exp"))
        .count();
    assert_eq!(exps, 1, "{:#?}", graph.graph.operations);
}

#[test]
fn a_threaded_program_runs_each_step_on_the_thread_its_schedule_names() {
    // Each creation on a capture device with no scope open meets the seed guard, which records
    // the thread it panicked on.
    let program = program(
        r#"{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "ones", "device": {"capture": 0}}},
        {"thread": {"thread": 2}},
        {"create": {"out": 1, "kind": "float", "shape": [1], "fill": "ones", "device": {"capture": 1}}},
        {"thread": {"thread": 1}},
        {"create": {"out": 2, "kind": "float", "shape": [1], "fill": "ones", "device": {"capture": 2}}}"#,
    );
    assert_eq!(program.step_threads(), [0, 2, 2, 1, 1]);
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    let threads: Vec<(usize, Option<&str>)> = verdict
        .trace
        .panics()
        .map(|(i, p)| (i, p.thread.as_deref()))
        .collect();
    assert_eq!(
        threads,
        [
            // Program thread 0 is the thread that runs the program.
            (0, std::thread::current().name()),
            (2, Some("program thread 2")),
            (4, Some("program thread 1"))
        ],
        "{:#?}",
        verdict.trace
    );
}

#[test]
fn an_op_a_program_runs_on_another_thread_inside_a_scope_is_recorded_into_it_as_the_model_says() {
    // Thread 0 opens the scope; thread 1 moves a tensor in and runs exp; the exit runs on
    // thread 0, the closure's thread. Burn's registry is per device, so both land in the graph,
    // and the contract, which follows the device, not the thread, agrees.
    let program = program(
        r#"{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}},
        {"enter_scope": {"device": {"capture": 0}}},
        {"thread": {"thread": 1}},
        {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
        {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 1}}}},
        {"exit_scope": {"inputs": [1], "outputs": [2]}},
        {"replay": {"graph": 0, "feed": [0], "outputs": [3]}}"#,
    );
    assert_eq!(program.step_threads(), [0, 0, 1, 1, 1, 0, 1]);
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    let Outcome::Ok {
        graph: Some(graph), ..
    } = &verdict.trace.steps[5].outcome
    else {
        panic!("the scope completes:\n{:#?}", verdict.trace);
    };
    // Both ops thread 1 ran, the move in and exp; one input, one output.
    assert_eq!((graph.operations, graph.inputs, graph.outputs), (2, 1, 1));
    // The replay on thread 1 of the graph closed on thread 0 was compared with the eager run.
    assert_eq!(verdict.oracles.replay_compared, 1, "{:?}", verdict.oracles);
}

#[test]
fn a_thread_schedule_round_trips_through_a_program_file_and_fuzzer_bytes() {
    let program = program(
        r#"{"create": {"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}},
        {"thread": {"thread": 3}},
        {"enter_scope": {"device": {"capture": 1}}},
        {"thread": {"thread": 1}},
        {"to_device": {"out": 1, "src": 0, "device": {"capture": 1}}},
        {"thread": {"thread": 2}},
        {"enter_scope": {"device": {"capture": 2}}},
        {"exit_scope": {"inputs": [], "outputs": []}},
        {"exit_scope": {"inputs": [1], "outputs": [1]}},
        {"thread": {"thread": 0}},
        {"read": {"src": 1, "fallible": true}}"#,
    );
    let threads = [0, 3, 3, 1, 1, 2, 2, 2, 3, 0, 0];
    assert_eq!(program.step_threads(), threads);
    let file = ProgramFile {
        steps: program.steps.clone(),
        ..ProgramFile::parse(r#"{"steps": []}"#, "empty").unwrap()
    };
    let text = file.to_text();
    let reread = ProgramFile::parse(&text, "text").unwrap().program();
    assert_eq!(reread, program, "{text}");
    let bytes = program.to_fuzz_bytes().unwrap();
    let decoded = Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE);
    assert_eq!(decoded, program);
    assert_eq!(decoded.step_threads(), threads);
    assert!(matches!(decoded.steps[1], Step::Thread { thread: 3 }));
}

#[test]
fn a_race_planted_between_a_scopes_start_and_another_threads_steps_is_met_under_collide_alone_with_its_hit_rate(
) {
    use dispatch_fuzz::interpreter::faults::racy_scope_for_tests;
    // Thread 1 opens and closes a scope; thread 0 then runs steps of its own. In the serial
    // schedule thread 0 starts only once the scope has ended; under collide the two runs start
    // together, and thread 0's steps meet the planted window before the scope registers.
    let exps: String = (0..16)
        .map(|k| {
            format!(
                r#", {{"op": {{"out": {}, "op": {{"unary": {{"op": "exp", "src": {k}}}}}}}}}"#,
                k + 1
            )
        })
        .collect();
    let program = program(&format!(
        r#"{{"thread": {{"thread": 1}}}},
        {{"enter_scope": {{"device": {{"capture": 0}}}}}},
        {{"exit_scope": {{"inputs": [], "outputs": []}}}},
        {{"thread": {{"thread": 0}}}},
        {{"create": {{"out": 0, "kind": "float", "shape": [2], "fill": "arange", "device": "flex"}}}}{exps}"#
    ));
    assert_eq!(program.thread_count(), 2);
    racy_scope_for_tests(true);
    let session = common::cpu();
    for _ in 0..3 {
        let serial = dispatch_fuzz::check(&session, &program).unwrap();
        assert!(serial.finding.is_none(), "{:?}", serial.finding);
    }
    let mut met = None;
    for _ in 0..20 {
        if let Some(finding) = dispatch_fuzz::collide(&session, &program).unwrap().finding {
            met = Some(finding);
            break;
        }
    }
    let finding = met.expect("collide meets the planted race in 20 runs");
    assert_eq!(finding.class, "unknown");
    assert!(
        finding.message.contains("planted race"),
        "{}",
        finding.message
    );
    let flaky = dispatch_fuzz::hit_rate(&session, &program, &finding.signature, 10).unwrap();
    racy_scope_for_tests(false);
    assert_eq!(flaky.tries, 10);
    assert!(flaky.hits >= 1, "{flaky:?}");
    // Without the planted race, the same collide runs meet nothing.
    let clean = dispatch_fuzz::collide(&session, &program).unwrap();
    assert!(clean.finding.is_none(), "{:?}", clean.finding);
}

#[test]
fn a_flaky_finding_round_trips_with_its_hit_rate_and_is_never_promoted_to_a_case() {
    use dispatch_fuzz::program::{Flaky, Input};
    use dispatch_fuzz::regressions::{promote, Promotion};
    let flaky = Flaky { hits: 7, tries: 20 };
    let file = ProgramFile {
        signature: Some("unknown | planted race | harness/src/interpreter/faults.rs".to_string()),
        class: Some("unknown".to_string()),
        flaky: Some(flaky),
        steps: program(r#"{"enter_scope": {"device": {"capture": 0}}}"#).steps,
        ..ProgramFile::default()
    };
    let dir = std::env::temp_dir().join(format!("dispatch-fuzz-flaky-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("flaky-unknown-0.json");
    std::fs::write(&path, file.to_text()).unwrap();
    let input = Input::load(&path, Backends::default()).unwrap();
    assert_eq!(input.flaky, Some(flaky));
    let refused = promote(
        Promotion {
            input: path,
            name: Some("planted-race".to_string()),
            root_cause: Some("a planted race".to_string()),
            dir: dir.join("store"),
            backends: Backends::default(),
        },
        &common::cpu(),
    )
    .expect_err("a flaky finding is not a reproducer");
    assert!(refused.to_string().contains("7 of 20"), "{refused}");
    assert!(!dir.join("store").exists());
    std::fs::remove_dir_all(&dir).unwrap();
}
