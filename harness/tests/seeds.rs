//! The two seed panics and the leaked-tensor panic, reproduced on the real crates and
//! classified; the seeds' fixed scenarios run clean.

use crate::common;

use dispatch_fuzz::interpreter::Outcome;
use dispatch_fuzz::oracles::catalogue::{catalogue, parse};
use dispatch_fuzz::oracles::Policy;
use dispatch_fuzz::{check, Session, Verdict};

fn panics(verdict: &Verdict) -> Vec<(usize, String, Option<String>)> {
    verdict
        .trace
        .panics()
        .map(|(i, p)| (i, p.class.clone(), p.location.clone()))
        .collect()
}

#[test]
fn moving_a_captured_tensor_to_flex_is_classified_as_seed_000() {
    let verdict = check(&common::cpu(), &common::corpus_program("seed-000-before")).unwrap();
    let panics = panics(&verdict);
    assert_eq!(panics.len(), 1, "{panics:?}");
    let (step, class, location) = &panics[0];
    assert_eq!(*step, 4);
    assert_eq!(class, "capture-tensor-not-materialized");
    // The macro panic reports its call site, not macros.rs: classification must not need it.
    let location = location.as_deref().unwrap_or_default();
    assert!(location.contains("burn-dispatch"), "{location}");
    assert!(!location.contains("macros.rs"), "{location}");
    assert!(
        verdict.finding.is_none(),
        "a catalogued guard is not a finding by default"
    );
}

#[test]
fn replaying_the_graph_before_moving_fixes_seed_000() {
    let verdict = check(&common::cpu(), &common::corpus_program("seed-000-after")).unwrap();
    assert!(panics(&verdict).is_empty(), "{:?}", verdict.trace);
    assert!(verdict.finding.is_none());
    // The replayed value and the moved-and-read value are the same data.
    let replay = &verdict.trace.steps[5].outcome;
    let read = &verdict.trace.steps[7].outcome;
    let (Outcome::Ok { outputs, .. }, Outcome::Ok { value: Some(v), .. }) = (replay, read) else {
        panic!("unexpected outcomes: {replay:?} / {read:?}");
    };
    assert_eq!(outputs[0].digest, v.digest);
}

#[test]
fn creating_a_capture_tensor_before_its_scope_is_classified_as_seed_001() {
    let verdict = check(&common::cpu(), &common::corpus_program("seed-001-before")).unwrap();
    let panics = panics(&verdict);
    assert_eq!(panics.len(), 1, "{panics:?}");
    assert_eq!(panics[0].0, 0);
    assert_eq!(panics[0].1, "operation-outside-capture-scope");
}

#[test]
fn creating_the_tensor_inside_the_scope_fixes_seed_001() {
    let verdict = check(&common::cpu(), &common::corpus_program("seed-001-after")).unwrap();
    assert!(panics(&verdict).is_empty(), "{:?}", verdict.trace);
    assert!(matches!(
        verdict.trace.steps[3].outcome,
        Outcome::Ok { graph: Some(_), .. }
    ));
}

#[test]
fn leaked_capture_tensor_is_rejected_after_scope() {
    let verdict = check(
        &common::cpu(),
        &common::corpus_program("leaked-capture-tensor"),
    )
    .unwrap();
    let panics = panics(&verdict);
    assert_eq!(panics.len(), 1, "{panics:?}");
    assert_eq!(panics[0].0, 5);
    assert_eq!(panics[0].1, "capture-scope-complete");
}

#[test]
fn crash_on_turns_a_seed_class_into_a_finding_with_a_stable_signature() {
    let policy = Policy::parse("capture-tensor-not-materialized, other-class");
    let program = common::corpus_program("seed-000-before");
    let first = check(&in_session(&policy), &program)
        .unwrap()
        .finding
        .expect("a finding");
    // Tensor and device ids differ between runs (global counters); the signature must not.
    let second = check(&in_session(&policy), &program)
        .unwrap()
        .finding
        .expect("a finding");
    assert_eq!(first.signature, second.signature);
    assert_eq!(
        first.signature.to_string(),
        "capture-tensor-not-materialized | Cannot move a tensor from a capture device | \
         burn-dispatch/src/ops/tensor.rs"
    );
    assert_eq!(first.step, Some(4));
}

#[test]
fn every_seed_record_is_in_the_catalogue_unchanged() {
    // The two records that started the project, copied from the shared seeds into the repo so
    // a clone alone runs the suite (`harness/seeds/`, kept byte for byte).
    let dir = common::repo().join("harness/seeds");
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
    let mut seen = 0;
    for entry in entries {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "txt") {
            continue;
        }
        let text = std::fs::read_to_string(path).unwrap();
        // A seed file is one record in the catalogue's own schema.
        let seed = &parse(&format!("[{text}]")).expect("seed parses as a record")[0];
        let ours = catalogue()
            .iter()
            .find(|r| r.id == seed.id)
            .unwrap_or_else(|| panic!("seed {} is missing from the catalogue", seed.id));
        assert_eq!(ours.message_pattern, seed.message_pattern);
        assert_eq!(ours.background_tag, seed.background_tag);
        seen += 1;
    }
    assert_eq!(seen, 2);
}

/// The CPU session under `policy`.
fn in_session(policy: &Policy) -> Session {
    common::cpu().with_policy(policy.clone())
}
