//! Tests of `nightly`.

use super::*;
use crate::oracles::Policy;
use crate::program::Backends;

#[test]
fn an_artifact_showing_a_stored_cases_also_signature_is_that_cases() {
    let dir =
        std::env::temp_dir().join(format!("dispatch-fuzz-nightly-also-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let case = r#"{"name": "c", "class": "reference-mismatch",
        "signature": "reference-mismatch | unary minus_mean over (I8) differs from its definition | reference",
        "also": [{"signature": "reference-mismatch | along_dim mean_dim over (U8) differs from its definition | reference",
                  "steps": [{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "ones", "device": "flex"}}]}],
        "steps": [{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "ones", "device": "flex"}}]}"#;
    std::fs::write(dir.join("c.json"), case).unwrap();
    let signatures = case_signatures(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    let also =
        "reference-mismatch | along_dim mean_dim over (U8) differs from its definition | reference";
    assert!(
        signatures
            .iter()
            .any(|(s, at)| s == also && at.ends_with("c.json")),
        "{signatures:?}"
    );
    assert_eq!(signatures.len(), 2);
}

#[test]
fn fork_mode_status_lines_parse() {
    let log = "INFO: -fork=2: fuzzing in separate process(s)\n\
               #2048: cov: 14021 ft: 39466 corp: 1049 exec/s: 3123 oom/timeout/crash: 0/0/3 time: 12s job: 3 dft_time: 0\n\
               #1234\tNEW    cov: 900 ft: 1000 corp: 20/3Kb exec/s: 50 rss: 100Mb\n";
    let samples = parse_log(log);
    assert_eq!(samples.len(), 2);
    assert_eq!(
        samples[0],
        Sample {
            time_s: 12.0,
            runs: 2048,
            cov: 14021,
            ft: 39466,
            corpus: 1049,
            execs_per_s: 3123,
            crashes: 3
        }
    );
    assert_eq!(samples[1].corpus, 20);
}

/// exp(39) cast to int and an int's argmax in a capture scope, replayed: the stored bug (the
/// captured argmax replays as I64 where the graph recorded I32) shows at the exit, then
/// loading the cast's I64 output (past i32, as the capture device declares I64 ints) onto
/// Flex's I32 panics.
const CAST_THEN_RELOAD: &str = r#"{"steps": [
    {"create": {"out": 0, "kind": "float", "shape": [1], "fill": {"value": 39}, "device": "flex"}},
    {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}},
    {"create": {"out": 5, "kind": "int", "shape": [1], "fill": "zeros", "device": "flex"}},
    {"enter_scope": {"device": {"capture": 0}}},
    {"to_device": {"out": 2, "src": 1, "device": {"capture": 0}}},
    {"to_device": {"out": 6, "src": 5, "device": {"capture": 0}}},
    {"op": {"out": 3, "op": {"cast": {"src": 2, "to": "int"}}}},
    {"op": {"out": 4, "op": {"arg_max": {"src": 6, "dim": 0}}}},
    {"exit_scope": {"inputs": [], "outputs": [3, 4]}},
    {"replay": {"graph": 0, "feed": [], "outputs": [1, 7]}}]}"#;

#[test]
fn an_artifact_is_bucketed_by_the_finding_that_stopped_its_run_not_a_stored_bug_before_it() {
    let program = ProgramFile::parse(CAST_THEN_RELOAD, "<test>")
        .unwrap()
        .program();
    // The run's policy names the reload's class, as DISPATCH_FUZZ_CRASH_ON would.
    let policy = Policy::parse("element-not-representable");
    let session = Session::new(Backends::FLEX_CAPTURE);
    let signature = artifact_signature(&program, "crash", &session.with_policy(policy));
    assert!(
        signature.starts_with("element-not-representable |"),
        "{signature}"
    );
    // Nothing new under the default policy: the stored bug is the bucket.
    let signature = artifact_signature(&program, "crash", &session);
    assert!(signature.starts_with("replay-mismatch |"), "{signature}");
}

#[test]
fn a_workers_stamped_lines_take_their_time_and_a_restart_carries_its_runs_over() {
    let log = "0\tINFO: Seed: 1\n\
               3\t#2400\tINITED cov: 900 ft: 1000 corp: 2400/90Kb exec/s: 800 rss: 200Mb\n\
               9\t#8000\tpulse  cov: 950 ft: 1100 corp: 2410/91Kb exec/s: 888 rss: 210Mb\n\
               9\t==1== ERROR: libFuzzer: deadly signal\n\
               16\t#2400\tINITED cov: 951 ft: 1101 corp: 2411/91Kb exec/s: 800 rss: 200Mb\n";
    let samples = parse_log(log);
    let points: Vec<(f64, u64)> = samples.iter().map(|s| (s.time_s, s.runs)).collect();
    assert_eq!(points, [(3.0, 2400), (9.0, 8000), (16.0, 10_400)]);
}

#[test]
fn workers_combine_into_summed_runs_and_rates_and_the_largest_coverage() {
    let at = |time_s, runs, cov, execs_per_s| Sample {
        time_s,
        runs,
        cov,
        execs_per_s,
        ..Sample::default()
    };
    let a = vec![at(1.0, 100, 10, 100), at(3.0, 300, 30, 100)];
    let b = vec![at(2.0, 150, 20, 75)];
    let combined = combine(&[a, b]);
    let points: Vec<(f64, u64, u64, u64)> = combined
        .iter()
        .map(|s| (s.time_s, s.runs, s.cov, s.execs_per_s))
        .collect();
    assert_eq!(
        points,
        [
            (1.0, 100, 10, 100),
            (2.0, 250, 20, 175),
            (3.0, 450, 30, 175)
        ]
    );
}
