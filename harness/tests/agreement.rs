//! The fuzz target and `check` agree: every panic the fuzz target's hook would abort on (a
//! finding under the policy, or a harness error) is a finding, or an error, in `check` too,
//! wherever it was raised (a step, a mirror, an oracle's replay, a read, a cleanup).

use crate::common;

use std::collections::BTreeMap;

use dispatch_fuzz::check;
use dispatch_fuzz::interpreter::install_panic_hook;
use dispatch_fuzz::libfuzzer::HookDecision;
use dispatch_fuzz::oracles::Policy;
use dispatch_fuzz::program::{Backends, Program};
use dispatch_fuzz::rng::SplitMix64;

use common::{both, record};

#[test]
fn the_fuzz_target_and_check_decide_alike_on_thousands_of_random_programs() {
    install_panic_hook(Some(record));
    let mut rng = SplitMix64::new(4242);
    let (mut panics, mut side) = (0, BTreeMap::<String, usize>::new());
    const PROGRAMS: usize = 3000;
    for _ in 0..PROGRAMS {
        let len = rng.below(3000) as usize;
        let program = Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE);
        let (hook, verdict) = both(&program);
        panics += hook.len();
        let aborts = hook.iter().any(|d| *d != HookDecision::Go);
        match verdict {
            Ok(verdict) => {
                for s in &verdict.trace.side_panics {
                    *side
                        .entry(format!("{} [{}]", s.site, s.panic.class))
                        .or_default() += 1;
                }
                // Every panic the hook saw is recorded (in the trace, or as the violation of
                // a replay that panicked), so check saw it too.
                assert_eq!(hook.len(), common::recorded_panics(&verdict), "{program}");
                if aborts {
                    assert!(
                        verdict.finding.is_some(),
                        "the hook aborts, check finds nothing:\n{program}"
                    );
                }
            }
            Err(error) => assert!(
                hook.iter()
                    .any(|d| matches!(d, HookDecision::HarnessError(_))),
                "check failed without a harness panic: {error:#}"
            ),
        }
    }
    eprintln!("{PROGRAMS} programs, {panics} caught panics; side panics by site: {side:?}");
    assert!(panics > PROGRAMS / 2, "too few panics to compare: {panics}");
}

/// A capture scope whose eager mirror meets a catalogued Flex panic: capture records `sub` of
/// an I32 tensor and an `argmax` it types I32, while Flex's argmax returns I64 and its `sub`
/// asserts equal dtypes.
fn mirror_meets_int_dtype_mix() -> Program {
    common::program(
        r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "zeros", "device": "flex"}},
            {"enter_scope": {"device": {"capture": 0}}},
            {"to_device": {"out": 1, "src": 0, "device": {"capture": 0}}},
            {"op": {"out": 2, "op": {"arg_max": {"src": 1, "dim": 0}}}},
            {"op": {"out": 3, "op": {"binary": {"op": "sub", "lhs": 1, "rhs": 2}}}},
            {"exit_scope": {"inputs": [1], "outputs": [3]}}]"#,
    )
}

#[test]
fn a_panic_in_the_eager_mirror_is_recorded_and_judged_like_a_steps() {
    let program = mirror_meets_int_dtype_mix();
    let verdict = check(&common::cpu(), &program).unwrap();
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
    let side = &verdict.trace.side_panics;
    assert_eq!(side.len(), 1, "{side:?}");
    assert_eq!(
        (side[0].step, side[0].site.as_ref()),
        (Some(4), "eager mirror")
    );
    assert_eq!(side[0].panic.class, "int-dtype-mismatch");
    // Under a policy that makes the class a finding, check finds it where the hook would abort
    // (naming the class makes it a finding though a stored case has this very panic).
    let policy = Policy::parse("int-dtype-mismatch");
    let finding = check(&common::cpu().with_policy(policy.clone()), &program)
        .unwrap()
        .finding
        .expect("a finding");
    assert_eq!(
        (finding.class.name(), finding.step),
        ("int-dtype-mismatch", Some(4))
    );
}

/// A lockstep hook with a bug: it panics after step `at`.
struct PanickingHook {
    at: usize,
}

impl dispatch_fuzz::interpreter::Lockstep for PanickingHook {
    fn after_step(&mut self, _: &dispatch_fuzz::interpreter::World<'_>, index: usize) {
        assert_ne!(index, self.at, "a bug in the harness's own code");
    }
    fn scope_completed(
        &mut self,
        _: &dispatch_fuzz::interpreter::World<'_>,
        _: &dispatch_fuzz::interpreter::CompletedScope<'_>,
    ) {
    }
    fn finish(&mut self) {}
}

#[test]
fn an_error_reading_a_replays_feed_is_recorded_and_judged_not_dropped() {
    // t1 is a placeholder of the scope: feeding it to the replay reads it, which errs.
    let program = common::program(
        r#"[{"enter_scope": {"device": {"capture": 0}}},
            {"create": {"out": 0, "kind": "float", "shape": [2], "fill": "ones", "device": {"capture": 0}}},
            {"op": {"out": 1, "op": {"binary": {"op": "add", "lhs": 0, "rhs": 0}}}},
            {"exit_scope": {"inputs": [], "outputs": [1]}},
            {"replay": {"graph": 0, "feed": [1], "outputs": [2]}}]"#,
    );
    let verdict = check(&common::cpu(), &program).unwrap();
    let errors = &verdict.trace.side_errors;
    assert!(
        errors.iter().any(|e| e.step == Some(4)
            && e.site == "replay feed"
            && e.message.contains("has no concrete value")),
        "{errors:?}"
    );
    // Catalogued (capture-tensor-read): judged, and not a finding.
    assert!(verdict.finding.is_none(), "{:?}", verdict.finding);
}

#[test]
fn a_harness_panic_in_an_oracle_hook_is_a_harness_error_inside_a_scope_or_outside() {
    use dispatch_fuzz::interpreter::{run_in_lockstep, Mode};
    let program = mirror_meets_int_dtype_mix();
    // Inside the scope (step 3) and before it (step 0): never the scope's or a step's outcome.
    for at in [3, 0] {
        let error = run_in_lockstep(
            &program,
            Backends::FLEX_CAPTURE,
            Mode::Full,
            &mut PanickingHook { at },
        )
        .expect_err("the harness's panic must not become a Burn outcome");
        let text = format!("{error:#}");
        assert!(text.contains("an oracle's hook panicked"), "{at}: {text}");
        assert!(
            text.contains("a bug in the harness's own code"),
            "{at}: {text}"
        );
    }
}

#[test]
fn the_whole_checked_in_corpus_runs_through_the_fuzz_target_without_a_finding() {
    install_panic_hook(Some(record));
    let corpus = common::repo().join("corpus/dispatch_ops");
    let mut inputs = Vec::new();
    for dir in [corpus.clone(), corpus.join("regressions")] {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            if entry.path().is_file() {
                inputs.push(entry.path());
            }
        }
    }
    assert!(inputs.len() >= 20, "{} inputs", inputs.len());
    let mut known = BTreeMap::<String, usize>::new();
    for path in &inputs {
        let bytes = std::fs::read(path).unwrap();
        let program = Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE);
        let (hook, verdict) = both(&program);
        let verdict = verdict.unwrap();
        let aborts: Vec<_> = hook.iter().filter(|d| **d != HookDecision::Go).collect();
        assert!(
            aborts.is_empty(),
            "{}: the hook aborts: {aborts:?}",
            path.display()
        );
        assert!(
            verdict.finding.is_none(),
            "{}: {:?}",
            path.display(),
            verdict.finding
        );
        for case in verdict.known_findings {
            *known.entry(case).or_default() += 1;
        }
    }
    // The stored oracle findings are met again, and counted as known rather than aborted on.
    assert!(
        known.contains_key(
            "captured-int-argmax-is-recorded-in-its-operand-dtype-but-replays-as-i64-on-flex"
        ),
        "{known:?}"
    );
}

#[test]
fn a_known_finding_is_a_finding_again_under_the_known_switch() {
    let path = common::repo()
        .join("regressions/captured-int-argmax-is-recorded-in-its-operand-dtype-but-replays-as-i64-on-flex.json");
    let program = dispatch_fuzz::program::ProgramFile::load(&path)
        .unwrap()
        .program();
    let verdict = check(&common::cpu(), &program).unwrap();
    assert!(verdict.finding.is_none());
    assert_eq!(verdict.known_findings.len(), 1);
    let verdict = check(&common::cpu().with_policy(Policy::parse("known")), &program).unwrap();
    assert_eq!(verdict.finding.expect("a finding").class, "replay-mismatch");
}

#[test]
fn the_typed_fuzz_input_decodes_exactly_what_the_byte_path_decodes_and_prints_its_listing() {
    use arbitrary::{Arbitrary, Unstructured};
    use dispatch_fuzz::libfuzzer::FuzzInput;
    let mut rng = SplitMix64::new(99);
    let mut steps = 0;
    for _ in 0..500 {
        let len = rng.below(2000) as usize;
        let bytes = rng.bytes(len);
        let typed = FuzzInput::arbitrary_take_rest(Unstructured::new(&bytes))
            .map(|input| input.0)
            .unwrap_or_default();
        let plain = Program::from_fuzz_bytes(&bytes, Backends::FLEX_CAPTURE);
        assert_eq!(typed, plain);
        steps += plain.steps.len();
        // What `cargo fuzz fmt` prints: the listing `dispatch-fuzz fmt` prints.
        let debug = format!("{:?}", FuzzInput(plain.clone()));
        assert!(debug.ends_with(&plain.to_string()), "{debug}");
    }
    assert!(steps > 10_000, "only {steps} steps decoded");
}

/// The signature of the finding `check` makes of each of `programs` (by index) in `session`, on a
/// rayon pool of `workers` threads (as `fuzz --jobs` spreads its programs), with replayed graphs fed wrong
/// data on each of them: the planted fault, a replay mismatch wherever a program replays a graph
/// with a fed input.
fn signatures_on(
    workers: usize,
    session: &dispatch_fuzz::Session,
    programs: &[Program],
) -> BTreeMap<usize, String> {
    use dispatch_fuzz::oracles::faults::corrupt_replay_feed_for_tests;
    use rayon::prelude::*;
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(workers)
        .build()
        .unwrap();
    pool.install(|| {
        programs
            .par_iter()
            .enumerate()
            .filter_map(|(k, program)| {
                // The fault is per thread: each worker plants it before its check.
                corrupt_replay_feed_for_tests(true);
                let verdict = check(session, program);
                corrupt_replay_feed_for_tests(false);
                let verdict = verdict.unwrap_or_else(|e| panic!("{e:#}\n{program}"));
                verdict.finding.map(|f| (k, f.signature.to_string()))
            })
            .collect()
    })
}

#[test]
fn n_workers_find_the_same_signatures_as_one_worker_over_the_same_programs() {
    let mut rng = SplitMix64::new(30);
    let programs: Vec<Program> = (0..600)
        .map(|_| {
            let len = rng.below(3000) as usize;
            Program::from_fuzz_bytes(&rng.bytes(len), Backends::FLEX_CAPTURE)
        })
        .collect();
    // The seed guards are findings too, so the set holds more than the planted fault's class.
    let session = common::cpu().with_policy(Policy::parse(
        "capture-tensor-not-materialized,operation-outside-capture-scope,capture-scope-complete",
    ));
    let one = signatures_on(1, &session, &programs);
    let four = signatures_on(4, &session, &programs);
    let set = |found: &BTreeMap<usize, String>| {
        found
            .values()
            .cloned()
            .collect::<std::collections::BTreeSet<_>>()
    };
    let signatures = set(&one);
    assert!(
        signatures
            .iter()
            .any(|s| s.starts_with(dispatch_fuzz::oracles::REPLAY_MISMATCH.name())),
        "the planted fault shows: {signatures:#?}"
    );
    assert!(signatures.len() >= 3, "{signatures:#?}");
    assert_eq!(signatures, set(&four));
    // Stronger than the set: each program gives the same finding on whichever worker runs it.
    assert_eq!(one, four);
}
