//! The eager vs capture-replay oracle on the real crates: it fires when a replay is given wrong
//! input data, and stays quiet on thousands of random programs while judging real graphs.

use crate::common;

use dispatch_fuzz::oracles::eager_replay::{REPLAY_FAILURE, REPLAY_MISMATCH};
use dispatch_fuzz::oracles::faults::corrupt_replay_feed_for_tests;
use dispatch_fuzz::oracles::{self, Oracles, Policy};
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;

fn captured_exp() -> Program {
    common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 2], "fill": "arange", "device": "flex"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"unary": {"op": "exp", "src": 1}}}},
            {"op": {"out": 3, "op": {"binary": {"op": "mul", "lhs": 2, "rhs": 1}}}},
            {"exit_scope": {"inputs": [1], "outputs": [3]}}]"#,
    )
}

#[test]
fn replay_given_wrong_input_data_is_a_replay_mismatch() {
    let program = captured_exp();
    assert!(dispatch_fuzz::check(&common::cpu(), &program)
        .unwrap()
        .finding
        .is_none());
    corrupt_replay_feed_for_tests(true);
    let verdict = dispatch_fuzz::check(&common::cpu(), &program);
    corrupt_replay_feed_for_tests(false);
    let finding = verdict.unwrap().finding.expect("the oracle fires");
    assert_eq!(finding.class, REPLAY_MISMATCH);
    assert_eq!(finding.step, Some(5));
    assert!(
        finding.message.contains("output 0 (t3)"),
        "{}",
        finding.message
    );
}

#[test]
fn the_oracle_can_be_turned_off() {
    corrupt_replay_feed_for_tests(true);
    let judged = oracles::run(&captured_exp(), Backends::FLEX_CAPTURE, Oracles::NONE);
    corrupt_replay_feed_for_tests(false);
    assert!(judged.unwrap().report.violations.is_empty());
}

#[test]
fn eager_replay_is_quiet_on_random_programs_while_judging_real_graphs() {
    let mut rng = SplitMix64::new(99);
    let mut judged = 0;
    for _ in 0..2000 {
        let len = rng.below(3000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        // A replay that meets a catalogued Burn bug (the int cast burn-router cannot replay)
        // takes that bug's class and is no finding: any other replay violation is.
        if let Some(v) = &verdict.finding {
            assert!(
                v.class != REPLAY_MISMATCH && v.class != REPLAY_FAILURE,
                "{}: {}\n{program}",
                v.class,
                v.message
            );
        }
        judged += verdict.oracles.replay_compared;
    }
    // The oracle must have compared replayed outputs with eager values, or its silence means
    // nothing.
    eprintln!("{judged} replayed outputs compared");
    assert!(
        judged >= 100,
        "only {judged} replayed outputs compared in 2000 programs"
    );
}

/// A capture scope that draws random values and computes from them, next to an output that
/// draws nothing.
fn captured_draw() -> Program {
    common::program(
        r#"[{"create": {"out": 0, "kind": "float", "shape": [2, 3], "fill": "arange", "device": "flex"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"along_dim": {"op": "random_uniform_like", "src": 1, "dim": 0}}}},
            {"op": {"out": 3, "op": {"unary": {"op": "exp", "src": 2}}}},
            {"op": {"out": 4, "op": {"unary": {"op": "exp", "src": 1}}}},
            {"exit_scope": {"inputs": [], "outputs": [2, 3, 4]}},
            {"replay": {"graph": 0, "feed": [], "outputs": [5, 6, 7]}}]"#,
    )
}

#[test]
fn a_graph_drawing_random_values_is_replayed_and_only_its_undrawn_outputs_are_compared() {
    let verdict = dispatch_fuzz::check(&common::cpu(), &captured_draw()).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    // The draw and the exp of it are skipped; exp(t1) is compared.
    assert_eq!(verdict.oracles.poisoned.get("random-draw"), Some(&2));
    assert_eq!(verdict.oracles.replay_compared, 1);
}

#[test]
fn a_transaction_answers_each_tensor_as_its_own_read_on_random_programs() {
    use dispatch_fuzz::interpreter::Outcome;
    use dispatch_fuzz::oracles::TRANSACTION_MISMATCH;
    use dispatch_fuzz::program::Step;
    let mut rng = SplitMix64::new(404);
    let mut answers = 0;
    for _ in 0..2000 {
        let len = rng.below(3000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        for v in &verdict.oracles.violations {
            assert!(v.class != TRANSACTION_MISMATCH, "{}\n{program}", v.message);
        }
        for (step, record) in program.steps.iter().zip(&verdict.trace.steps) {
            if let (Step::Transaction { .. }, Outcome::Ok { outputs, .. }) = (step, &record.outcome)
            {
                answers += outputs.len();
            }
        }
    }
    // Silence means something only if transactions answered.
    eprintln!("{answers} transaction answers compared with their tensors' own reads");
    assert!(answers >= 100, "only {answers} transaction answers");
}

#[test]
fn a_transaction_answer_that_is_not_the_tensors_own_read_is_a_transaction_mismatch() {
    use dispatch_fuzz::oracles::faults::corrupt_own_reads_for_tests;
    use dispatch_fuzz::oracles::TRANSACTION_MISMATCH;
    let program = common::program(
        r#"[
        {"create": {"out": 0, "kind": "int", "shape": [3], "fill": "arange", "device": "flex"}},
        {"create": {"out": 1, "kind": "float", "shape": [2], "fill": "ones", "device": "flex"}},
        {"transaction": {"srcs": [1, 0, 1], "fallible": true}}
    ]"#,
    );
    assert!(dispatch_fuzz::check(&common::cpu(), &program)
        .unwrap()
        .finding
        .is_none());
    corrupt_own_reads_for_tests(true);
    let verdict = dispatch_fuzz::check(&common::cpu(), &program);
    corrupt_own_reads_for_tests(false);
    let finding = verdict.unwrap().finding.expect("a transaction mismatch");
    assert_eq!(finding.class, TRANSACTION_MISMATCH);
    assert_eq!(finding.step, Some(2));
    assert!(
        finding
            .signature
            .summary
            .contains("a transaction's data of a F32 flex tensor differs from its own read"),
        "{}",
        finding.signature
    );
}

#[test]
fn every_known_bad_replay_source_is_a_table_op_with_stored_cases_for_its_output_and_its_consumers()
{
    use dispatch_fuzz::oracles::naming::WGPU_REPLAY_BAD_SOURCES;
    use dispatch_fuzz::program::ModuleOp;
    use dispatch_fuzz::regressions::{default_dir, load_all};
    let cases = load_all(&default_dir()).unwrap();
    let signature = |name: &str| {
        let case = cases.iter().find(|c| c.name == name);
        let case = case.unwrap_or_else(|| panic!("{name} is no stored case"));
        case.file.signature.clone().unwrap_or_default()
    };
    for source in WGPU_REPLAY_BAD_SOURCES {
        let op = source.op.strip_prefix("module ").unwrap_or(source.op);
        assert!(
            ModuleOp::named(op).is_some(),
            "{} is no module op",
            source.op
        );
        let own = signature(source.case);
        assert!(
            own.contains(&format!("the replayed {} differs", source.op)),
            "{}: {own}",
            source.case
        );
        // Some stored program (a case's own or an `also`) shows a value computed from the bad
        // data, so its consumers are known.
        let consumer = format!("the replayed value computed from {} differs", source.data);
        assert!(
            cases.iter().any(|c| {
                let own = c.file.signature.iter().map(String::as_str);
                let also = c.file.also.iter().map(|a| a.signature.as_str());
                own.chain(also).any(|s| s.contains(&consumer))
            }),
            "no stored program shows {consumer}"
        );
    }
}

#[test]
fn a_second_wrong_output_of_a_scope_whose_first_is_a_stored_case_is_a_new_finding() {
    // Output 0 is the stored argmax bug (recorded I32, replayed I64); output 1 is an exp the
    // corrupted feed makes wrong. Signed by its first output alone, the scope was known.
    let program = common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"create": {"out": 5, "kind": "float", "shape": [1], "fill": {"value": 1}, "device": "flex"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 2, "src": 0, "device": {"capture": 0}}},
            {"to_device": {"out": 6, "src": 5, "device": {"capture": 0}}},
            {"op": {"out": 3, "op": {"arg_max": {"src": 2, "dim": 0}}}},
            {"op": {"out": 4, "op": {"unary": {"op": "exp", "src": 6}}}},
            {"exit_scope": {"inputs": [2, 6], "outputs": [3, 4]}}]"#,
    );
    let argmax = "captured-int-argmax-is-recorded-in-its-operand-dtype-but-replays-as-i64-on-flex";
    let clean = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert_eq!(
        (clean.known_findings, clean.finding),
        (vec![argmax.to_string()], None)
    );
    corrupt_replay_feed_for_tests(true);
    let verdict = dispatch_fuzz::check(&common::cpu(), &program);
    corrupt_replay_feed_for_tests(false);
    let verdict = verdict.unwrap();
    assert_eq!(verdict.known_findings, [argmax]);
    let finding = verdict
        .finding
        .expect("the exp output is a finding of its own");
    assert_eq!(finding.class, REPLAY_MISMATCH);
    assert!(
        finding.signature.summary.contains("unary exp"),
        "{}",
        finding.signature
    );
}

#[test]
fn an_int_in_the_capture_devices_declared_dtype_is_judged_as_far_as_the_eager_dtype_tells() {
    // The capture device declares I64 ints and Flex I32, as Burn intends: exp(39) cast to int
    // replays as 86593404045099008 and is 2147483647 eagerly (a saturating cast), which is the
    // replayed value's image in I32, so no finding; a replayed value whose low bits are wrong
    // (the corrupted feed's 3.0 + 1 cast to int) is one.
    let cast = |fill: &str| {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "float", "shape": [1], "fill": {{"value": {fill}}}, "device": "flex"}}}},
                {{"op": {{"out": 1, "op": {{"unary": {{"op": "exp", "src": 0}}}}}}}},
                {{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"to_device": {{"out": 2, "src": 1, "device": {{"capture": 0}}}}}},
                {{"op": {{"out": 3, "op": {{"cast": {{"src": 2, "to": "int"}}}}}}}},
                {{"exit_scope": {{"inputs": [2], "outputs": [3]}}}}]"#
        ))
    };
    let saturating = dispatch_fuzz::check(&common::cpu(), &cast("39")).unwrap();
    assert_eq!(saturating.finding, None);
    assert!(
        saturating.known_findings.is_empty(),
        "{:?}",
        saturating.known_findings
    );
    corrupt_replay_feed_for_tests(true);
    let wrong = dispatch_fuzz::check(&common::cpu(), &cast("1"));
    corrupt_replay_feed_for_tests(false);
    let finding = wrong
        .unwrap()
        .finding
        .expect("a wrong low bit is a finding");
    assert_eq!(finding.class, REPLAY_MISMATCH);
    assert!(
        finding.message.contains("in the eager dtype"),
        "{}",
        finding.message
    );
}

#[test]
fn a_replay_compared_with_an_eager_value_the_reference_found_wrong_is_left_open() {
    // Four i64::MIN on the capture device, four i32::MIN eagerly: the eager I32 mean_dim sums
    // in I32 and wraps to 0 (the stored int-mean bug, a reference mismatch at its step), so the
    // replay's i64::MIN, i32::MIN in the eager dtype, is not judged against that 0.
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [4], "fill": {"edge": "neg_inf"}, "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"along_dim": {"op": "mean_dim", "src": 0, "dim": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert_eq!(verdict.finding, None);
    assert_eq!(
        verdict.known_findings,
        ["flex-int-mean-sums-in-the-tensor-dtype"]
    );
    let open = verdict.oracles.poisoned.get("eager-wrong").copied();
    assert_eq!(open, Some(1), "{:?}", verdict.oracles.poisoned);
}

#[test]
fn a_replay_of_an_int_the_eager_run_overflowed_in_its_narrower_dtype_is_left_open() {
    // i32::MIN on the capture device (I64) and eagerly (I32): div_by_magnitude takes abs
    // first, which wraps in I32 only, so the eager run divides by 6 where the I64 replay
    // divides by 3 (fuzz --seed 5). Burn pins no int overflow down: neither is wrong.
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "int", "shape": [1], "fill": {"edge": "neg_inf"}, "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"unary": {"op": "div_by_magnitude", "src": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert_eq!(verdict.finding, None);
    let open = verdict.oracles.poisoned.get("narrow-overflow").copied();
    assert_eq!(open, Some(1), "{:?}", verdict.oracles.poisoned);
}

#[test]
fn a_float_cast_to_int_past_i32s_range_is_left_open_in_every_replayed_value_made_from_it() {
    // 10^10 as the capture device's default int (I64) and as Flex's (I32, where it
    // saturates): a bitwise_and after the cast gives 0 replayed and 42 eagerly (a 60 s
    // session aimed at atanh, round and the inverse trigonometric functions).
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [4, 4, 2], "fill": "arange", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"binary": {"op": "powf", "lhs": 0, "rhs": 0}}}},
            {"op": {"out": 2, "op": {"cast": {"src": 1, "to": "int"}}}},
            {"op": {"out": 2, "op": {"scalar": {"op": "bitwise_and", "src": 2, "value": 42}}}},
            {"exit_scope": {"inputs": [], "outputs": [2]}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert_eq!(verdict.finding, None);
    let open = verdict.oracles.poisoned.get("narrow-overflow").copied();
    assert_eq!(open, Some(1), "{:?}", verdict.oracles.poisoned);
}

#[test]
fn a_replay_that_loses_a_recorded_dtype_names_the_op_that_lost_it_not_the_ops_after_it() {
    // argmax of an I32 tensor is recorded as I32 and replayed by Flex as I64 (a stored case);
    // a swap_dims and a sum_dim after it only carry the I64 along.
    let chained = |then: &str| {
        common::program(&format!(
            r#"[{{"create": {{"out": 0, "kind": "int", "shape": [2], "fill": "arange", "device": "flex"}}}},
                {{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"to_device": {{"out": 1, "src": 0, "device": {{"capture": 0}}}}}},
                {{"op": {{"out": 2, "op": {{"arg_max": {{"src": 1, "dim": 0}}}}}}}},
                {{"op": {{"out": 3, "op": {then}}}}},
                {{"exit_scope": {{"inputs": [], "outputs": [3]}}}}]"#
        ))
    };
    for then in [
        r#"{"swap_dims": {"src": 2, "dim0": 0, "dim1": 0}}"#,
        r#"{"sum_dim": {"src": 2, "dim": 0}}"#,
    ] {
        let verdict = dispatch_fuzz::check(
            &common::cpu().with_policy(Policy::parse("known")),
            &chained(then),
        )
        .unwrap();
        let finding = verdict.finding.expect("the replay loses the recorded I32");
        assert_eq!(finding.class, REPLAY_MISMATCH);
        assert_eq!(
            finding.signature.summary, "the replayed arg_max is I64 where the graph recorded I32",
            "{then}"
        );
    }
    // The same where the argmax writes the slot it reads: the op after it still only carries
    // the I64 along.
    let in_place = |then: &str| {
        common::program(&format!(
            r#"[{{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"create": {{"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": {{"capture": 0}}, "dtype": "i8"}}}},
                {{"op": {{"out": 0, "op": {{"arg_max": {{"src": 0, "dim": 0}}}}}}}},
                {{"op": {{"out": 2, "op": {then}}}}},
                {{"exit_scope": {{"inputs": [], "outputs": [2]}}}}]"#
        ))
    };
    for then in [
        r#"{"along_dim": {"op": "scatter_add", "src": 0, "dim": 0}}"#,
        r#"{"slice": {"src": 0, "dim": 0, "start": 0, "len": 1}}"#,
    ] {
        let verdict = dispatch_fuzz::check(
            &common::cpu().with_policy(Policy::parse("known")),
            &in_place(then),
        )
        .unwrap();
        let finding = verdict.finding.expect("the replay loses the recorded I8");
        assert_eq!(
            finding.signature.summary, "the replayed arg_max is I64 where the graph recorded I8",
            "{then}"
        );
    }
}
