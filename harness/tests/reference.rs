//! The reference oracle is independent of Burn: a result made wrong where every path computes
//! it (the real run, its capture recording and replay, the eager mirror; what a wrong forwarding
//! in dispatch or a shared default body does) is a reference mismatch, and no oracle that
//! compares Burn with Burn sees it.

mod common;

use dispatch_fuzz::interpreter::faults::wrong_unary_for_tests;
use dispatch_fuzz::oracles::{OracleId, Oracles, REFERENCE_MISMATCH};
use dispatch_fuzz::{check_with_oracles, config, Verdict};

/// `op` of `kind` computed eagerly and read, then recorded in a capture scope and replayed: the
/// issue's 7-step program, where eager and replay are compared.
fn eager_and_replayed(kind: &str, op: &str) -> dispatch_fuzz::program::Program {
    common::program(&format!(
        r#"[{{"create": {{"out": 0, "kind": "{kind}", "shape": [4], "fill": "arange", "device": "flex"}}}},
            {{"op": {{"out": 1, "op": {{"unary": {{"op": "{op}", "src": 0}}}}}}}},
            {{"read": {{"src": 1, "fallible": true}}}},
            {{"enter_scope": {{"device": {{"capture": 0}}}}}},
            {{"to_device": {{"out": 2, "src": 0, "device": {{"capture": 0}}}}}},
            {{"op": {{"out": 3, "op": {{"unary": {{"op": "{op}", "src": 2}}}}}}}},
            {{"exit_scope": {{"inputs": [], "outputs": [3]}}}},
            {{"replay": {{"graph": 0, "feed": [], "outputs": [4]}}}}]"#
    ))
}

/// The verdict of `program` with `op` wrong on every path, under `oracles`.
fn with_wrong(
    op: &'static str,
    program: &dispatch_fuzz::program::Program,
    oracles: Oracles,
) -> Verdict {
    wrong_unary_for_tests(Some(op));
    let verdict = check_with_oracles(program, config::get().policy(), oracles);
    wrong_unary_for_tests(None);
    verdict.expect("the harness runs the program")
}

/// The claim for one wrong op: clean without the fault; with it, every oracle but the reference
/// passes the run (the replay was compared, and agreed), and the reference names the op.
fn only_the_reference_sees(kind: &str, op: &'static str) {
    let program = eager_and_replayed(kind, op);
    let policy = config::get().policy();
    let clean = check_with_oracles(&program, policy, Oracles::ALL).unwrap();
    assert!(clean.finding.is_none(), "{:?}", clean.finding);
    assert!(
        clean.oracles.reference.judged >= 4,
        "{:?}",
        clean.oracles.reference
    );

    let others = with_wrong(op, &program, Oracles::ALL.without(OracleId::Reference));
    assert!(others.finding.is_none(), "{:?}", others.finding);
    assert!(
        others.oracles.replay_compared >= 1,
        "the replay was compared: {:?}",
        others.oracles
    );

    let all = with_wrong(op, &program, Oracles::ALL);
    let finding = all
        .finding
        .expect("the reference oracle reports the wrong op");
    assert_eq!(finding.class, REFERENCE_MISMATCH, "{finding:?}");
    assert!(
        finding.signature.summary.contains(&format!("{op} over")),
        "{finding:?}"
    );
    assert!(
        finding.message.contains("the definition gives"),
        "{finding:?}"
    );
    assert!(
        all.oracles
            .violations
            .iter()
            .all(|v| v.class == REFERENCE_MISMATCH),
        "{:?}",
        all.oracles.violations
    );
}

#[test]
fn a_float_op_wrong_on_every_path_is_seen_by_the_reference_oracle_alone() {
    only_the_reference_sees("float", "exp");
}

#[test]
fn an_int_op_wrong_on_every_path_is_seen_by_the_reference_oracle_alone() {
    only_the_reference_sees("int", "abs");
}

#[test]
fn a_rounding_op_wrong_on_every_path_is_seen_by_the_reference_oracle_alone() {
    // The issue's round-half mutant: round is exact, so a wrong one is wrong at every half.
    only_the_reference_sees("float", "round");
}

#[test]
fn a_wrong_backward_formula_is_seen_by_the_reference_oracle_alone() {
    // exp's gradient is exp: finite differences over the reference forward give it.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [3], "fill": "arange", "device": "flex_autodiff"}},
            {"autodiff": {"out": 1, "src": 0, "mode": "require_grad"}},
            {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 1}}}},
            {"backward": {"out": 3, "loss": 2, "param": 1}}]"#,
    );
    let policy = config::get().policy();
    let clean = check_with_oracles(&program, policy, Oracles::ALL).unwrap();
    assert!(clean.finding.is_none(), "{:?}", clean.finding);
    assert!(
        !clean
            .oracles
            .reference
            .open
            .keys()
            .any(|k| k.starts_with("a gradient")),
        "{:?}",
        clean.oracles.reference
    );

    dispatch_fuzz::interpreter::faults::wrong_gradient_for_tests(true);
    let others = check_with_oracles(&program, policy, Oracles::ALL.without(OracleId::Reference));
    let all = check_with_oracles(&program, policy, Oracles::ALL);
    dispatch_fuzz::interpreter::faults::wrong_gradient_for_tests(false);
    let (others, all) = (others.unwrap(), all.unwrap());
    assert!(others.finding.is_none(), "{:?}", others.finding);
    let finding = all
        .finding
        .expect("the reference oracle reports the wrong gradient");
    assert_eq!(finding.class, REFERENCE_MISMATCH, "{finding:?}");
    assert!(
        finding
            .signature
            .summary
            .contains("backward of unary exp over"),
        "{finding:?}"
    );
}
