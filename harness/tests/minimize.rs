//! The minimizer on real findings: results keep the exact signature, are 1-minimal, and the
//! seed classes shrink to their small known forms.

use crate::common;

use dispatch_fuzz::minimize::{minimize_finding, Minimizer, Reproduction};
use dispatch_fuzz::oracles::Policy;
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;
use dispatch_fuzz::{check, Session};
use std::time::Duration;

fn policy() -> Policy {
    Policy::parse(
        "capture-tensor-not-materialized,operation-outside-capture-scope,capture-scope-complete,\
         int-dtype-mismatch",
    )
}

/// Random programs with a finding under `policy`, at least `min_steps` long.
fn crashing_programs(seed: u64, count: usize, min_steps: usize) -> Vec<Program> {
    let policy = policy();
    let mut rng = SplitMix64::new(seed);
    let mut found = Vec::new();
    while found.len() < count {
        let len = 200 + rng.below(3000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        if program.steps.len() >= min_steps
            && check(&in_session(&policy), &program)
                .unwrap()
                .finding
                .is_some()
        {
            found.push(program);
        }
    }
    found
}

fn signature(program: &Program, policy: &Policy) -> Option<String> {
    check(&in_session(policy), program)
        .unwrap()
        .finding
        .map(|f| f.signature.to_string())
}

#[test]
fn minimized_programs_keep_their_signature_and_are_one_minimal() {
    let policy = policy();
    for program in crashing_programs(5, 6, 30) {
        let before = signature(&program, &policy).unwrap();
        let (kept, minimized, reproduction) =
            minimize_finding(program.clone(), &in_session(&policy), Minimizer::new()).unwrap();
        assert_eq!(kept.to_string(), before);
        assert_eq!(reproduction, Reproduction::Reproducible);
        let small = minimized.program;
        assert_eq!(signature(&small, &policy).as_deref(), Some(before.as_str()));
        assert!(small.steps.len() < program.steps.len());
        // 1-minimal: removing any one step loses the signature or changes it.
        for i in 0..small.steps.len() {
            let mut steps = small.steps.clone();
            steps.remove(i);
            let shrunk = Program::new(steps);
            // Fixup may put the step back in another form (a module op's missing operand is
            // created again, on Flex): no shorter program, so not a deletion the minimizer owes.
            if shrunk == small || shrunk.steps.len() >= small.steps.len() {
                continue;
            }
            assert_ne!(
                signature(&shrunk, &policy).as_deref(),
                Some(before.as_str()),
                "step {i} of the minimized program is not needed:\n{small}"
            );
        }
    }
}

#[test]
fn seed_classes_minimize_to_a_handful_of_steps() {
    let dir = common::repo().join("corpus/dispatch_ops");
    for class in [
        "capture-tensor-not-materialized",
        "operation-outside-capture-scope",
    ] {
        let input = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().path())
            .find(|p| p.file_name().unwrap().to_string_lossy().starts_with(class))
            .unwrap();
        let program =
            Program::from_fuzz_bytes(&std::fs::read(&input).unwrap(), Backends::FLEX_CAPTURE);
        let policy = Policy::parse(class);
        let (signature, minimized, _) =
            minimize_finding(program, &in_session(&policy), Minimizer::new()).unwrap();
        assert_eq!(signature.class, class);
        assert!(
            minimized.program.steps.len() <= 5,
            "{class}:\n{}",
            minimized.program
        );
    }
}

#[test]
fn a_nested_scope_that_failed_to_open_is_removed_with_its_exit() {
    // The first minimized form of captured-int-dtype-cast-cannot-be-replayed: steps 1 and 2 are
    // an inner scope that fails to open (AlreadyActive) and its exit, inside the outer scope.
    let text = r#"{"steps": [
        {"enter_scope": {"device": {"capture": 0}}},
        {"enter_scope": {"device": {"capture": 0}}},
        {"exit_scope": {"inputs": [], "outputs": []}},
        {"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": {"capture": 0}}},
        {"op": {"out": 1, "op": {"unary": {"op": "cast_i32", "src": 0}}}},
        {"exit_scope": {"inputs": [], "outputs": []}}]}"#;
    let program = dispatch_fuzz::program::ProgramFile::parse(text, "<test>")
        .unwrap()
        .program();
    let policy = Policy::parse("router-int-cast-unreplayable");
    let (_, minimized, _) =
        minimize_finding(program, &in_session(&policy), Minimizer::new()).unwrap();
    assert_eq!(minimized.program.steps.len(), 4, "{:?}", minimized.program);
}

#[test]
fn a_program_without_a_finding_is_refused() {
    let program = common::corpus_program("seed-000-after");
    let error =
        minimize_finding(program, &in_session(&Policy::default()), Minimizer::new()).unwrap_err();
    assert!(error.to_string().contains("no finding"), "{error}");
}

#[test]
fn minimizing_with_candidates_on_several_threads_gives_the_program_one_thread_gives() {
    let policy = policy();
    for program in crashing_programs(7, 3, 30) {
        let on = |jobs: usize| {
            // Every wave at once, however cheap a run: the parallel search itself is on trial.
            let minimizer = Minimizer::new().jobs(jobs).parallel_from(Duration::ZERO);
            minimize_finding(program.clone(), &in_session(&policy), minimizer).unwrap()
        };
        let (serial, parallel) = (on(1), on(4));
        assert_eq!(serial.0, parallel.0);
        assert_eq!(
            serial.1.program, parallel.1.program,
            "one thread:\n{}\nfour:\n{}",
            serial.1.program, parallel.1.program
        );
        // A wave runs the candidates after the first that keeps for nothing: never fewer runs.
        assert!(parallel.1.attempts >= serial.1.attempts);
    }
}

#[test]
fn the_parallel_search_takes_the_candidate_the_serial_one_takes_where_several_keep() {
    // Any two steps keep the property, so every wave has several candidates that keep it, and
    // which one wins decides which steps are left.
    let steps: Vec<String> = (0..8)
        .map(|k| {
            format!(
                r#"{{"create": {{"out": {k}, "kind": "float", "shape": [{}], "fill": "zeros", "device": "flex"}}}}"#,
                k % 4 + 1
            )
        })
        .collect();
    let program = common::program(&format!("[{}]", steps.join(",")));
    // Only the original steps, unchanged: no simpler form or renaming hides which ones stayed.
    let holds = |p: &Program| -> anyhow::Result<bool> {
        Ok(p.steps.len() >= 2 && p.steps.iter().all(|s| program.steps.contains(s)))
    };
    let serial = Minimizer::new().run(program.clone(), None, holds).unwrap();
    for jobs in [2, 3, 4] {
        let parallel = Minimizer::new()
            .jobs(jobs)
            .parallel_from(Duration::ZERO)
            .run_parallel(program.clone(), None, holds)
            .unwrap();
        assert_eq!(parallel.program, serial.program, "{jobs} jobs");
    }
    assert_eq!(serial.program.steps.len(), 2);
}

#[test]
fn the_attempt_budget_is_respected() {
    let program = crashing_programs(9, 1, 40).remove(0);
    let policy = policy();
    for jobs in [1, 4] {
        let minimizer = Minimizer::new()
            .attempts(5)
            .jobs(jobs)
            .parallel_from(Duration::ZERO);
        let (_, minimized, _) =
            minimize_finding(program.clone(), &in_session(&policy), minimizer).unwrap();
        assert!(minimized.attempts <= 5, "{} attempts", minimized.attempts);
    }
}

/// The CPU session under `policy`.
fn in_session(policy: &Policy) -> Session {
    common::cpu().with_policy(policy.clone())
}

#[test]
fn a_spent_time_limit_leaves_the_program_as_it_came() {
    let policy = policy();
    let program = crashing_programs(11, 1, 30).remove(0);
    let minimizer = Minimizer::new().time_limit(Duration::ZERO);
    let (_, minimized, _) =
        minimize_finding(program.clone(), &in_session(&policy), minimizer).unwrap();
    assert_eq!(minimized.program, program);
    assert_eq!(minimized.attempts, 1, "only the input's own run");
}

#[test]
fn settling_a_new_finding_minimizes_it_and_a_finding_met_only_in_context_is_unsettled() {
    use dispatch_fuzz::minimize::triage::{settle, Settled};
    let policy = policy();
    let session = in_session(&policy);
    let program = crashing_programs(12, 1, 30).remove(0);
    let signature = check(&session, &program)
        .unwrap()
        .finding
        .unwrap()
        .signature;
    let budget = Duration::from_secs(60);
    match settle(&session, program.clone(), &signature, budget).unwrap() {
        Settled::New { minimized, facts } => {
            assert!(minimized.steps_after < program.steps.len());
            let again = check(&session, &minimized.program)
                .unwrap()
                .finding
                .unwrap();
            assert_eq!((again.signature, again.facts), (signature.clone(), facts));
        }
        Settled::Unsettled { why } => panic!("{why}"),
    }
    // A signature the program does not show (as if met only after earlier programs).
    let elsewhere: dispatch_fuzz::oracles::Signature =
        "unknown | something else | burn-flex/src/ops/int.rs"
            .parse()
            .unwrap();
    assert!(matches!(
        settle(&session, program, &elsewhere, budget).unwrap(),
        Settled::Unsettled { .. }
    ));
}
