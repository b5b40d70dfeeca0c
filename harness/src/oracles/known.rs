//! Known findings: the signatures of the reviewed regression cases under `regressions/`,
//! embedded at build time (`build.rs`). A finding with one of them is counted and reported as
//! known, not aborted on, so a fuzz session runs past every bug already stored; the policy's
//! `known` switch (`DISPATCH_FUZZ_CRASH_ON=known`) makes them findings again.

/// `(case name, signature)` of every reviewed case, sorted by name.
pub const KNOWN_FINDINGS: &[(&str, &str)] =
    include!(concat!(env!("OUT_DIR"), "/known_findings.rs"));

/// The case that stores a finding with `signature`, if one does.
pub fn known_case(signature: &str) -> Option<&'static str> {
    KNOWN_FINDINGS
        .iter()
        .find(|(_, s)| *s == signature)
        .map(|(name, _)| *name)
}
