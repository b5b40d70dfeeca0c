//! wgpu as a real second backend: programs create on, move to and compute on it, and its exact
//! results equal Flex's. Needs a wgpu adapter (CI installs Mesa's Vulkan driver).

mod common;

use dispatch_fuzz::check;
use dispatch_fuzz::interpreter::{wgpu, Outcome};

fn digest(verdict: &dispatch_fuzz::Verdict, step: usize) -> Option<String> {
    match &verdict.trace.steps[step].outcome {
        Outcome::Ok { value: Some(v), .. } => v.digest.clone(),
        other => panic!("step {step}: {other:?}"),
    }
}

#[test]
fn a_program_on_wgpu_computes_what_flex_computes() {
    let adapter = wgpu::enable().expect("a wgpu adapter (install mesa-vulkan-drivers)");
    eprintln!("wgpu adapter: {adapter}");
    let on = |device: &str| {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": {device}}}}},
                {{"op": {{"out": 1, "op": {{"scalar": {{"op": "mul", "src": 0, "value": 3}}}}}}}},
                {{"op": {{"out": 2, "op": {{"binary": {{"op": "add", "lhs": 1, "rhs": 0}}}}}}}},
                {{"op": {{"out": 3, "op": {{"sum_dim": {{"src": 2, "dim": 1}}}}}}}},
                {{"to_device": {{"out": 4, "src": 3, "device": "flex"}}}},
                {{"read": {{"src": 4, "fallible": true}}}}]"#
        ))
    };
    let flex = check(&on("\"flex\"")).unwrap();
    let wgpu = check(&on("\"wgpu\"")).unwrap();
    assert!(wgpu.finding.is_none(), "{:?}", wgpu.finding);
    assert!(
        matches!(&wgpu.trace.steps[0].outcome, Outcome::Ok { value: Some(v), .. } if v.device == "wgpu")
    );
    assert_eq!(digest(&wgpu, 5), digest(&flex, 5));
}

#[test]
fn a_capture_scope_records_a_tensor_moved_from_wgpu() {
    wgpu::enable().expect("a wgpu adapter");
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [4], "fill": "arange", "device": "wgpu"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "add", "src": 1, "value": 1}}}},
            {"exit_scope": {"inputs": [1], "outputs": [2]}},
            {"replay": {"graph": 0, "feed": [0], "outputs": [3]}}]"#,
    );
    let verdict = check(&program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert!(
        matches!(&verdict.trace.steps[4].outcome, Outcome::Ok { graph: Some(g), .. } if g.values == 1),
        "{:?}",
        verdict.trace.steps[4]
    );
}
