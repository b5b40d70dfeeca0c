//! Known findings: the signatures of the reviewed regression cases under `regressions/`, with the
//! root-cause key each declares, embedded at build time (`build.rs`). A finding a case's key
//! matches is counted and reported as known, not aborted on, so a fuzz session runs past every
//! bug already stored; the policy's `known` switch (`DISPATCH_FUZZ_CRASH_ON=known`) makes them
//! findings again.

use std::sync::LazyLock;

use super::signature::{Field, Key, Signature};

/// `(case name, signature, key fields, also)` of every reviewed case, sorted by name: its own
/// signature (`also` false) and that of each of its `also` programs (true).
pub const KNOWN_FINDINGS: &[(&str, &str, &[&str], bool)] =
    include!(concat!(env!("OUT_DIR"), "/known_findings.rs"));

/// Every reviewed case's key, parsed once (the build script checked each parses).
static KEYS: LazyLock<Vec<(&'static str, Key, bool)>> = LazyLock::new(|| {
    KNOWN_FINDINGS
        .iter()
        .map(|(name, text, fields, also)| {
            let signature: Signature = text.parse().expect("build.rs checked the signature");
            let fields: Vec<Field> = fields
                .iter()
                .map(|f| Field::from_name(f).expect("build.rs checked the key"))
                .collect();
            (*name, Key::new(signature, &fields), *also)
        })
        .collect()
});

/// The case whose root-cause key `signature` satisfies, if one does.
pub fn known_case(signature: &Signature) -> Option<&'static str> {
    KEYS.iter()
        .find(|(_, key, _)| key.matches(signature))
        .map(|(name, _, _)| *name)
}

/// The key case `name` declares, over its own signature.
pub fn key_of(name: &str) -> Option<&'static Key> {
    KEYS.iter()
        .find(|(n, _, also)| *n == name && !also)
        .map(|(_, k, _)| k)
}
