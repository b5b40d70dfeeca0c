//! The reference-model oracle on the real crates: quiet and judging on thousands of random
//! programs, firing when one of its rules is inverted, and every known divergence still shown by
//! its reproducer (an entry Burn has fixed fails here, so it cannot go stale silently).

use crate::common;

use dispatch_fuzz::oracles::model::{
    self, invert_rule_for_tests, known_divergences, MODEL_MISMATCH, RULES,
};
use dispatch_fuzz::oracles::{OracleId, Oracles};
use dispatch_fuzz::program::ProgramFile;
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;

#[test]
fn the_model_is_quiet_on_random_programs_while_judging_their_steps() {
    let mut rng = SplitMix64::new(2024);
    let (mut judged, mut steps) = (0, 0);
    for _ in 0..2000 {
        let len = rng.below(3000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        for v in &verdict.oracles.violations {
            assert!(v.class != MODEL_MISMATCH, "{}\n{program}", v.message);
        }
        judged += model::check(&program, &verdict.trace).judged;
        steps += program.steps.len();
    }
    eprintln!("the model judged {judged} of {steps} steps");
    // Silence means something only if the model predicted a good share of the steps.
    assert!(
        judged * 4 >= steps,
        "the model judged only {judged} of {steps} steps"
    );
}

#[test]
fn a_scope_an_unfollowed_op_over_a_stale_tensor_recorded_into_is_not_judged_at_its_exit() {
    // t2 is an autodiff capture tensor (the model stops following it, a known divergence) of a
    // completed scope; pad over it makes a fresh tensor in the open scope and slice-assigns
    // the stale one into it, so that scope cannot complete (UndeclaredInput). The model cannot
    // know what the op recorded: it must not predict the exit (fuzz --seed 3).
    let program = common::program(
        r#"[
            {"enter_scope":{"device":{"capture":0}}},
            {"create":{"out":0,"kind":"bool","shape":[1],"fill":"zeros","device":{"capture":0}}},
            {"autodiff":{"out":1,"src":0,"mode":"enable"}},
            {"op":{"out":2,"op":{"cast":{"src":1,"to":"float"}}}},
            {"exit_scope":{"inputs":[],"outputs":[]}},
            {"enter_scope":{"device":{"capture":0}}},
            {"op":{"out":3,"op":{"along_dim":{"op":"pad_crop","src":2,"dim":0}}}},
            {"op":{"out":4,"op":{"logic":{"op":"or","lhs":0,"rhs":1}}}},
            {"op":{"out":0,"op":{"mask_where":{"src":1,"mask":0,"value":1}}}},
            {"exit_scope":{"inputs":[],"outputs":[]}}
        ]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    let exit = program.steps.len() - 1;
    assert!(
        matches!(
            &verdict.trace.steps[exit].outcome,
            dispatch_fuzz::interpreter::Outcome::Error { error, .. }
                if error.contains("UndeclaredInput")
        ),
        "{:?}",
        verdict.trace.steps[exit].outcome
    );
}

#[test]
fn an_inverted_rule_is_a_model_mismatch_at_the_step_it_governs() {
    let program = common::corpus_program("seed-001-before");
    assert!(dispatch_fuzz::check(&common::cpu(), &program)
        .unwrap()
        .finding
        .is_none());
    invert_rule_for_tests(Some(model::CREATE_OUTSIDE_SCOPE.id));
    let verdict = dispatch_fuzz::check(&common::cpu(), &program);
    invert_rule_for_tests(None);
    let finding = verdict.unwrap().finding.expect("the model fires");
    assert_eq!(finding.class, MODEL_MISMATCH);
    assert!(
        finding
            .signature
            .to_string()
            .starts_with("model-mismatch | create-outside-scope: expected ok, got panic"),
        "{}",
        finding.signature
    );
}

#[test]
fn the_model_can_be_turned_off() {
    let program = common::corpus_program("seed-001-before");
    invert_rule_for_tests(Some(model::CREATE_OUTSIDE_SCOPE.id));
    let oracles = Oracles::ALL.without(OracleId::Model);
    let verdict = dispatch_fuzz::check(&common::cpu().with_oracles(oracles), &program);
    invert_rule_for_tests(None);
    assert!(verdict.unwrap().finding.is_none());
}

#[test]
fn every_known_divergence_is_still_shown_by_its_reproducer() {
    assert!(!known_divergences().is_empty());
    for known in known_divergences() {
        let path = common::repo().join(&known.reproducer);
        let program = ProgramFile::load(&path)
            .unwrap_or_else(|e| panic!("{}: {e}", known.id))
            .program();
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        assert!(
            verdict.oracles.known_divergences.contains(&known.id),
            "known divergence `{}` is stale: its reproducer no longer shows it (fixed in Burn? \
             then remove the entry and let the model's rule hold). Trace: {:?}",
            known.id,
            verdict.trace.steps
        );
        assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    }
}

#[test]
fn known_divergences_name_real_rules_and_outcomes() {
    for known in known_divergences() {
        assert!(
            RULES.iter().any(|r| r.id == known.rule),
            "{}: no rule {}",
            known.id,
            known.rule
        );
        assert!(
            known.actual == "ok"
                || known.actual.starts_with("panic ")
                || known.actual.starts_with("error "),
            "{}: actual `{}` is not an outcome",
            known.id,
            known.actual
        );
    }
}

#[test]
fn rule_ids_are_unique_and_every_rule_cites_burn_source() {
    let mut ids: Vec<_> = RULES.iter().map(|r| r.id).collect();
    ids.sort_unstable();
    ids.dedup();
    assert_eq!(ids.len(), RULES.len());
    for rule in RULES {
        assert!(rule.source.starts_with("burn-"), "{}", rule.id);
    }
}

#[test]
fn every_rule_fires_when_inverted_on_some_random_or_stored_program() {
    use dispatch_fuzz::oracles::{OracleId, Oracles};
    let mut rng = SplitMix64::new(7);
    let random = (0..3000).map(|_| {
        let len = rng.below(3000) as usize;
        Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE)
    });
    // Every stored program too: some rules govern situations random programs reach rarely
    // (a stale right operand, then a scope exit), and the stored cases hold one of each.
    let store = common::repo().join("regressions");
    let stored = dispatch_fuzz::regressions::seed_inputs(&store)
        .unwrap()
        .into_iter()
        .map(|(_, bytes)| Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE));
    // And the seed scenarios (`corpus/dispatch_ops/programs/`), one per rule random programs
    // may miss under a given decoding (ops across two capture devices).
    let scenarios = std::fs::read_dir(common::repo().join("corpus/dispatch_ops/programs"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| ProgramFile::load(&p).unwrap().program())
        .collect::<Vec<_>>();
    let programs: Vec<Program> = random.chain(stored).chain(scenarios).collect();
    let model = Oracles::only(OracleId::Model);
    let mut silent = Vec::new();
    for rule in RULES {
        invert_rule_for_tests(Some(rule.id));
        let fired = programs.iter().any(|program| {
            let verdict =
                dispatch_fuzz::check(&common::cpu().with_oracles(model), program).unwrap();
            verdict
                .oracles
                .violations
                .iter()
                .any(|v| v.class == MODEL_MISMATCH && v.summary.starts_with(rule.id))
        });
        invert_rule_for_tests(None);
        if !fired {
            silent.push(rule.id);
        }
    }
    assert!(
        silent.is_empty(),
        "rules that never fired inverted: {silent:?}"
    );
}

/// The real trace of a known divergence's reproducer, and the model's report on that trace
/// under an edited program: what the entry must not cover, with Burn's outcome kept.
fn model_on_edited(id: &str, edit: impl FnOnce(&mut Program)) -> model::ModelReport {
    let known = known_divergences().iter().find(|k| k.id == id).unwrap();
    let mut program = ProgramFile::load(&common::repo().join(&known.reproducer))
        .unwrap()
        .program();
    let trace = dispatch_fuzz::check(&common::cpu(), &program)
        .unwrap()
        .trace;
    assert!(model::check(&program, &trace).known.contains(&known.id));
    edit(&mut program);
    model::check(&program, &trace)
}

#[test]
fn the_stale_operand_entry_does_not_cover_a_stale_left_operand_being_accepted() {
    use dispatch_fuzz::program::{Op, Step};
    let report = model_on_edited("stale-capture-operand-accepted", |program| {
        let Some(Step::Op {
            op: Op::Binary { lhs, rhs, .. },
            ..
        }) = program
            .steps
            .iter_mut()
            .find(|s| matches!(s, Step::Op { .. }))
        else {
            panic!("the reproducer has a binary op");
        };
        std::mem::swap(lhs, rhs);
    });
    assert!(report.known.is_empty(), "{:?}", report.known);
    assert_eq!(report.violations.len(), 1);
    assert!(report.violations[0].summary.starts_with("op-stale-operand"));
}

#[test]
fn the_mixed_sessions_entry_does_not_cover_a_transaction_of_one_scopes_values() {
    use dispatch_fuzz::program::Step;
    let report = model_on_edited("transaction-mixes-scope-sessions-errs", |program| {
        let Some(Step::Transaction { srcs, .. }) = program
            .steps
            .iter_mut()
            .find(|s| matches!(s, Step::Transaction { .. }))
        else {
            panic!("the reproducer has a transaction");
        };
        // Both tensors now from the open scope: Burn's failure there would be no known gap.
        *srcs = vec![srcs[1], srcs[1]];
    });
    assert!(report.known.is_empty(), "{:?}", report.known);
    assert_eq!(report.violations.len(), 1);
    assert!(report.violations[0]
        .summary
        .starts_with("transaction-of-values"));
}

#[test]
fn the_stale_operand_entry_covers_a_mask_wheres_stale_mask_and_value_and_nothing_else_is_judged_off(
) {
    // fuzz --backends flex,capture,wgpu --seed 105, minimized: the mask and the value come from
    // a closed scope, the source from the open one; Burn checks only the source's session.
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "bool", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"exit_scope": {"inputs": [], "outputs": []}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 1, "kind": "bool", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
            {"op": {"out": 0, "op": {"mask_where": {"src": 1, "mask": 0, "value": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": []}}]"#,
    );
    let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    assert_eq!(
        verdict.oracles.known_divergences,
        vec!["stale-capture-operand-accepted".to_string()]
    );
}

#[test]
fn the_stale_cat_entry_does_not_cover_a_stale_first_tensor_being_accepted() {
    use dispatch_fuzz::program::{Op, Step};
    let report = model_on_edited("stale-capture-cat-operand-accepted", |program| {
        let Some(Step::Op {
            op: Op::Cat { first, rest, .. },
            ..
        }) = program
            .steps
            .iter_mut()
            .find(|s| matches!(s, Step::Op { .. }))
        else {
            panic!("the reproducer has a cat");
        };
        // The stale tensor first, the live one after it: Burn's outcome (ok) kept.
        std::mem::swap(first, &mut rest[0]);
    });
    assert!(report.known.is_empty(), "{:?}", report.known);
    assert_eq!(report.violations.len(), 1);
    assert!(report.violations[0].summary.starts_with("op-stale-operand"));
}

#[test]
fn the_int_bool_autodiff_entry_does_not_cover_a_float_capture_autodiff_succeeding() {
    use dispatch_fuzz::program::{Kind, Step};
    let report = model_on_edited("int-bool-capture-autodiff-succeeds", |program| {
        for step in &mut program.steps {
            if let Step::Create { kind, .. } = step {
                *kind = Kind::Float;
            }
        }
    });
    assert!(report.known.is_empty(), "{:?}", report.known);
    assert_eq!(report.violations.len(), 1);
    assert!(report.violations[0]
        .summary
        .starts_with("autodiff-on-capture"));
}

#[test]
fn past_a_known_divergence_the_model_still_judges_the_scope_exit() {
    // The stale right operand is recorded into the new scope under the old session's id; the
    // model follows that, so it predicts the exit's UndeclaredInput, and an inverted exit rule
    // fires there instead of being hidden behind the divergence.
    let known = known_divergences()
        .iter()
        .find(|k| k.id == "stale-capture-operand-accepted")
        .unwrap();
    let program = ProgramFile::load(&common::repo().join(&known.reproducer))
        .unwrap()
        .program();
    let exit = program.steps.len() - 1;
    invert_rule_for_tests(Some(model::EXIT_UNDECLARED_INPUT.id));
    let verdict = dispatch_fuzz::check(&common::cpu(), &program);
    invert_rule_for_tests(None);
    let violations = verdict.unwrap().oracles.violations;
    assert_eq!(violations.len(), 1, "{violations:?}");
    assert_eq!(violations[0].step, exit);
    assert!(violations[0].summary.starts_with("exit-undeclared-input"));
}

#[test]
fn every_module_entry_that_creates_weights_fails_at_the_creation_on_a_leaked_tensor() {
    use dispatch_fuzz::program::MODULE;
    // The model predicts that an op making tensors on its operand's (finished) capture device
    // panics at that creation: an entry touching the operand before making its weights would
    // panic at the operand instead.
    let mut checked = 0;
    for spec in MODULE.iter().filter(|s| s.creates_on_device()) {
        let shape = if spec.rank == 3 {
            "[1, 2, 3]"
        } else {
            "[1, 2, 3, 3]"
        };
        let program = common::program(&format!(
            r#"[{{"enter_scope": {{"device": {{"capture": 0}}}}}},
                {{"create": {{"out": 0, "kind": "float", "shape": {shape}, "fill": "ones", "device": {{"capture": 0}}}}}},
                {{"exit_scope": {{"inputs": [], "outputs": []}}}},
                {{"op": {{"out": 1, "op": {{"module": {{"op": "{}", "src": 0, "kernel": 3}}}}}}}}]"#,
            spec.name
        ));
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
        assert!(
            verdict
                .oracles
                .violations
                .iter()
                .all(|v| v.class != MODEL_MISMATCH),
            "{}: {:?}",
            spec.name,
            verdict.oracles.violations
        );
        checked += 1;
    }
    assert!(checked >= 10, "{checked} creating entries");
}
