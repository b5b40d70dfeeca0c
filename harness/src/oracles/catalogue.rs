//! The catalogue of known panic signatures, loaded from `harness/signatures.json`.
//!
//! # Format
//! A JSON array of objects `{"record": {...}}` in the schema of the seed error records
//! (`harness/seeds/*.txt`). The harness reads these fields and ignores the rest:
//! - `id`: stable record id (the seeds keep theirs).
//! - `messagePattern`: text the panic message must contain; `{}` matches any run of characters
//!   (it stands where the Rust source formats a value, such as a tensor id).
//! - `filePath`: where Burn's source raises it (`crates/<crate>/src/...`). A record matches only
//!   panics raised in that crate (a macro's call site is in the crate that expands it, so only
//!   the crate is compared), or at one of its `callSites`.
//! - `callSites` (optional): `crate/src/...` prefixes where the panic reports itself outside the
//!   record's crate: the callers of a `#[track_caller]` API (`Tensor::into_data` reports the
//!   harness's own line).
//! - `errorType`: `execution-error` for an `ExecutionError` value (matched by message alone, as
//!   errors carry no location) rather than a panic.
//! - `backgroundTag`: the class name used in traces, counters and `DISPATCH_FUZZ_CRASH_ON`.
//! - `locations` (optional, not in the seeds): `crate/src/...` path prefixes the panic must be
//!   raised under (a file, or a whole `crate/src/`), or a file with a line range
//!   (`burn-flex/src/ops/reduce.rs:858-1065`, one function). For records whose message is
//!   generic (a slice index out of range), so that one known bug does not hide every other
//!   panic worded the same.
//! - `atSteps` (optional): the steps, named as signatures name them (`unary minus_prod`,
//!   `replay`), a panic must be raised at. For a record whose panic reports a file that does not
//!   pin its call site (core's `iter/traits/accum.rs` for every `Iterator::product` overflow,
//!   burn-std's checked casts for every narrowing), so that it names the Burn calls it was
//!   found at and no other. A name ending in `*` stands for every step whose name starts with
//!   what precedes it (`scalar *`). A panic with no step (a teardown's, a side panic's) never
//!   matches such a record.
//! - `handlingStrategy`: `known-bug` marks a bug this harness found and reported, catalogued so
//!   fuzzing goes on past it; `limitation` a failure Burn documents as possible (a dtype the
//!   adapter does not support, which `supports_dtype` says), not a bug to report. Only these
//!   two explain a clean graph's failing replay or a wgpu panic where Flex computed the value;
//!   a misuse guard never does.
//! - `severity`, `documentation`, `triggerScenarios`: shown to people, not used for matching.
//!
//! A test fails when a record has no crate or when two records match one panic.

use serde::Deserialize;
use std::sync::OnceLock;

/// One catalogued panic signature.
#[derive(Deserialize, Clone, Debug, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct Record {
    /// Stable id.
    pub id: String,
    /// Human-readable slug.
    pub slug: String,
    /// Pattern the message must contain (`{}` is a wildcard).
    pub message_pattern: String,
    /// Source file in Burn's repository.
    pub file_path: String,
    /// The line in it, when one is known.
    #[serde(default)]
    pub line_number: Option<u32>,
    /// Class name.
    pub background_tag: String,
    /// `critical`, `error` or `warning`.
    pub severity: String,
    /// What the guard protects.
    #[serde(default)]
    pub documentation: Option<String>,
    /// Files the panic must come from, when the message alone is too generic.
    #[serde(default)]
    pub locations: Vec<String>,
    /// Where the panic reports itself when that is not in the record's own crate
    /// (`crate/src/...` prefixes): the callers of a `#[track_caller]` API or of a macro.
    #[serde(default)]
    pub call_sites: Vec<String>,
    /// The steps the panic must be raised at (`step_name`s), when its file does not pin them.
    #[serde(default)]
    pub at_steps: Vec<String>,
    /// `execution-error` for an error value (`ExecutionError`) rather than a panic.
    #[serde(default)]
    pub error_type: Option<String>,
    /// `known-bug` for a bug this harness found and reported; guards have `type-guard`,
    /// `validation` or nothing.
    #[serde(default)]
    pub handling_strategy: Option<String>,
    /// For a limitation of a dtype the wgpu device does not support: the dtypes (as Burn names
    /// them, `BF16`, `I16`) whose failure it is. The record matches only where the device says
    /// it does not support one of them (`supports_dtype`), so the same failure on a device
    /// that claims the dtype is a finding.
    #[serde(default)]
    pub unsupported_dtypes: Vec<String>,
}

impl Record {
    /// Whether the record catalogues an `ExecutionError` value, not a panic.
    pub fn is_execution_error(&self) -> bool {
        self.error_type.as_deref() == Some("execution-error")
    }

    /// Whether the record catalogues a Burn bug (not a guard against misuse).
    pub fn is_known_bug(&self) -> bool {
        self.handling_strategy.as_deref() == Some("known-bug")
    }

    /// Whether the record catalogues a limitation Burn documents (`limitation`): explained like
    /// a known bug, reported as neither a bug nor a guard.
    pub fn is_limitation(&self) -> bool {
        self.handling_strategy.as_deref() == Some("limitation")
    }

    /// Whether the record may explain a failure where Burn misused nothing (a clean graph's
    /// replay, a wgpu panic where Flex computed the value): a known bug or a limitation.
    pub fn explains_failures(&self) -> bool {
        self.is_known_bug() || self.is_limitation()
    }

    /// Whether the record may match in this process: it names no dtype, or the wgpu device says
    /// it does not support one it names ([`Record::unsupported_dtypes`]).
    pub fn unsupported_here(&self) -> bool {
        self.unsupported_on(crate::interpreter::wgpu::unsupported_named)
    }

    /// [`Record::unsupported_here`] on a device that says it does not support the dtypes
    /// `unsupported` names.
    pub fn unsupported_on(&self, unsupported: impl Fn(&str) -> bool) -> bool {
        self.unsupported_dtypes.is_empty() || self.unsupported_dtypes.iter().any(|d| unsupported(d))
    }
}

/// The execution-error records an `ExecutionError`'s text matches, in catalogue order (errors
/// carry no location, so the message alone decides). A test holds the catalogue to at most one.
pub fn error_matches<'a, 'm>(
    records: impl IntoIterator<Item = &'a Record> + 'm,
    message: &'m str,
) -> impl Iterator<Item = &'a Record> + 'm {
    error_matches_where(records, message, Record::unsupported_here)
}

/// [`error_matches`] among the records `gate` lets match in this process.
fn error_matches_where<'a, 'm>(
    records: impl IntoIterator<Item = &'a Record> + 'm,
    message: &'m str,
    gate: impl Fn(&Record) -> bool + 'm,
) -> impl Iterator<Item = &'a Record> + 'm {
    records
        .into_iter()
        .filter(|r| r.is_execution_error())
        .filter(move |r| pattern_matches(&r.message_pattern, message))
        .filter(move |r| gate(r))
}

/// The execution-error record an `ExecutionError`'s text matches.
pub fn lookup_error<'a>(records: &'a [Record], message: &str) -> Option<&'a Record> {
    error_matches(records, message).next()
}

/// The known-bug (or limitation) record a failure matches: what a replay of a cleanly captured
/// graph, or a backend where another one succeeded, may be explained by. A misuse guard never
/// explains one (a clean graph misuses nothing).
pub fn lookup_known_bug<'a>(
    records: &'a [Record],
    message: &str,
    location: Option<&str>,
) -> Option<&'a Record> {
    let bugs = || records.iter().filter(|r| r.explains_failures());
    // A failure without a location is an error value, or a panic from a worker thread.
    matches(bugs(), message, location).next().or_else(|| {
        location
            .is_none()
            .then(|| error_matches(bugs(), message).next())
            .flatten()
    })
}

#[derive(Deserialize)]
struct Wrapper {
    record: Record,
}

/// The catalogue text compiled into the harness.
pub const CATALOGUE_JSON: &str = include_str!("../../signatures.json");

/// Known bugs whose failed kernel launch fails the wgpu device's stream: cubecl reports it at
/// the next read on the device, and launches submitted after it leave their outputs unwritten
/// (fuzz --backends flex,capture,wgpu --seed 104: after a failed fmod and a `flush`, a `cat`
/// of values made before it reads as zeros). Nothing wgpu computes later in the run is
/// comparable, and a read anywhere on the device may meet the failure.
pub const DEVICE_FAILURES: &[&str] = &[
    "wgpu-nan-constant-in-shader",
    "wgpu-infinity-constant-in-shader",
    "wgpu-i64-without-shader-int64",
    "wgpu-int16-unsupported",
    "wgpu-bf16-unsupported",
    "wgpu-int8-unsupported",
    UNSUPPORTED_DTYPE,
];

/// Class of a failure on the wgpu device once the program has put there a tensor of a dtype it
/// named and the device says it does not support (`Device::supports_dtype` false, as Mesa's
/// llvmpipe says of BF16, the 8- and 16-bit ints and the byte bools): Burn promises nothing for
/// such a dtype there (burn-backend `Backend::supports_dtype`'s doc), and a failed launch fails
/// the device's stream for the rest of the run. A guard predicted from Burn's own answer, not
/// matched by message: the same failure where the device claims the dtype is a finding, and so
/// is one where Burn, not the program, chose the dtype (capture's `Bool(U8)` replayed on wgpu).
pub const UNSUPPORTED_DTYPE: &str = "dtype-unsupported-on-device";

/// Parses a catalogue in the format above.
pub fn parse(json: &str) -> Result<Vec<Record>, serde_json::Error> {
    let wrapped: Vec<Wrapper> = serde_json::from_str(json)?;
    Ok(wrapped.into_iter().map(|w| w.record).collect())
}

/// The compiled-in catalogue. Its parse is covered by a unit test, so a malformed file fails
/// `cargo test`, not a fuzz run.
pub fn catalogue() -> &'static [Record] {
    static CATALOGUE: OnceLock<Vec<Record>> = OnceLock::new();
    CATALOGUE.get_or_init(|| {
        parse(CATALOGUE_JSON)
            .unwrap_or_else(|e| panic!("harness/signatures.json does not parse: {e}"))
    })
}

/// Whether `message` contains `pattern`, where each `{}` in the pattern matches any run of
/// characters (including none).
pub fn pattern_matches(pattern: &str, message: &str) -> bool {
    let mut rest = message;
    for part in pattern.split("{}") {
        // Each part must follow the earlier ones; the first may start anywhere.
        match rest.find(part) {
            Some(at) => rest = &rest[at + part.len()..],
            None => return false,
        }
    }
    true
}

/// The record of class `class` whose pattern a finding's `message` holds: the catalogued source
/// of a classified finding (reports and reproducer checks name it).
pub fn record_of<'a>(records: &'a [Record], class: &str, message: &str) -> Option<&'a Record> {
    records
        .iter()
        .find(|r| r.background_tag == class && pattern_matches(&r.message_pattern, message))
}

/// The crate a source path belongs to: `burn-dispatch` for both
/// `crates/burn-dispatch/src/macros.rs` and `.../burn-dispatch-0.23.0-pre.1/src/ops/tensor.rs`.
pub fn crate_of(path: &str) -> Option<String> {
    let parts: Vec<&str> = path.split(['/', '\\']).collect();
    let src = parts.iter().rposition(|p| *p == "src")?;
    let name = parts.get(src.checked_sub(1)?)?;
    // Strip a registry version suffix: the first `-` followed by a digit.
    let cut = name
        .char_indices()
        .find(|(i, c)| *c == '-' && name[i + 1..].starts_with(|d: char| d.is_ascii_digit()))
        .map_or(name.len(), |(i, _)| i);
    Some(name[..cut].to_string())
}

/// The line of a `file:line:col` location.
fn line_of(location: &str) -> Option<u32> {
    location.rsplit(':').nth(1)?.parse().ok()
}

/// Whether a record's `locations` entry covers a panic at `file` (`crate/src/...`), `line`:
/// a path prefix, or a file with a line range (`crate/src/file.rs:858-1065`: one function).
fn location_covers(entry: &str, file: &str, line: Option<u32>) -> bool {
    let Some((path, range)) = entry.split_once(':') else {
        return file.starts_with(entry);
    };
    let Some((start, end)) = range.split_once('-') else {
        return false;
    };
    let (Ok(start), Ok(end)) = (start.parse::<u32>(), end.parse::<u32>()) else {
        return false;
    };
    file == path && line.is_some_and(|l| (start..=end).contains(&l))
}

/// `crate/src/file.rs` for a panic location (`file:line:col`), without version or line.
pub fn burn_file(location: &str) -> Option<String> {
    let file = location.split(':').next()?;
    let krate = crate_of(file)?;
    let parts: Vec<&str> = file.split(['/', '\\']).collect();
    let src = parts.iter().rposition(|p| *p == "src")?;
    Some(format!("{krate}/{}", parts[src..].join("/")))
}

/// The record a panic matches: message first; among several matches, one from the crate the
/// panic was raised in; else the first.
pub fn lookup<'a>(
    records: &'a [Record],
    message: &str,
    location: Option<&str>,
) -> Option<&'a Record> {
    matches(records, message, location).next()
}

/// Every record a panic matches, in catalogue order: its pattern is in the message, the panic
/// comes from one of its `locations` (if it lists any), and from its crate or one of its call
/// sites. A test holds the catalogue to at most one.
pub fn matches<'a, 'm>(
    records: impl IntoIterator<Item = &'a Record> + 'm,
    message: &'m str,
    location: Option<&'m str>,
) -> impl Iterator<Item = &'a Record> + 'm {
    matches_where(records, message, location, Record::unsupported_here)
}

/// [`matches`] among the records `gate` lets match in this process.
fn matches_where<'a, 'm>(
    records: impl IntoIterator<Item = &'a Record> + 'm,
    message: &'m str,
    location: Option<&'m str>,
    gate: impl Fn(&Record) -> bool + 'm,
) -> impl Iterator<Item = &'a Record> + 'm {
    let file = location.and_then(burn_file);
    let line = location.and_then(line_of);
    let krate = location.and_then(|l| crate_of(l.split(':').next().unwrap_or(l)));
    records
        .into_iter()
        .filter(|r| !r.is_execution_error())
        .filter(move |r| pattern_matches(&r.message_pattern, message))
        .filter(move |r| gate(r))
        .filter(move |r| {
            let covered = r.locations.is_empty()
                || file
                    .as_ref()
                    .is_some_and(|f| r.locations.iter().any(|l| location_covers(l, f, line)));
            // A record matches a panic raised in its own crate, or at one of the call sites it
            // lists (a `#[track_caller]` API or a macro expanded elsewhere reports its caller).
            // A panic with no location (raised on a worker thread) is matched by message alone.
            let placed = match (&krate, &file) {
                (Some(krate), Some(file)) => {
                    crate_of(&r.file_path).as_ref() == Some(krate)
                        || r.call_sites.iter().any(|c| file.starts_with(c.as_str()))
                }
                _ => true,
            };
            covered && placed
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compiled_in_catalogue_parses_with_unique_ids() {
        let records = parse(CATALOGUE_JSON).expect("signatures.json parses");
        assert!(records.len() >= 10);
        let ids: std::collections::BTreeSet<_> = records.iter().map(|r| &r.id).collect();
        assert_eq!(ids.len(), records.len(), "duplicate record ids");
        assert!(
            records.iter().all(|r| crate_of(&r.file_path).is_some()),
            "bad filePath"
        );
    }

    /// A panic as the record's own source would raise it: the pattern with each `{}` filled in,
    /// at the record's file (or its first call site).
    fn raised_by(r: &Record) -> (String, String) {
        let message = r.message_pattern.replace("{}", "7");
        let file = match r.call_sites.first() {
            Some(site) => format!("/r/{site}x.rs"),
            None => r.file_path.clone(),
        };
        // Inside the line range a `locations` entry may name.
        let line = r
            .locations
            .iter()
            .find_map(|l| l.split_once(':')?.1.split_once('-')?.0.parse::<u32>().ok())
            .unwrap_or(1);
        (message, format!("{file}:{line}:1"))
    }

    #[test]
    fn every_record_is_constrained_to_a_crate_and_no_two_records_match_one_panic() {
        // Every record, those of a dtype the wgpu device does not support included, whatever
        // this process's device says.
        let any = |_: &Record| true;
        for r in catalogue() {
            assert!(
                crate_of(&r.file_path).is_some(),
                "{}: no crate in filePath",
                r.id
            );
            let (message, location) = raised_by(r);
            let found: Vec<&str> = if r.is_execution_error() {
                // Error values carry no location: their messages alone must not overlap.
                error_matches_where(catalogue(), &message, any)
                    .map(|e| e.id.as_str())
                    .collect()
            } else {
                matches_where(catalogue(), &message, Some(&location), any)
                    .map(|m| m.id.as_str())
                    .collect()
            };
            assert_eq!(found, [r.id.as_str()], "{message:?} at {location}");
        }
    }

    #[test]
    fn a_record_of_an_unsupported_dtype_matches_only_where_the_device_says_so() {
        let gated: Vec<&Record> = catalogue()
            .iter()
            .filter(|r| !r.unsupported_dtypes.is_empty())
            .collect();
        assert!(
            gated.len() >= 6,
            "BF16, I8 and the 16-bit ints, panics and errors"
        );
        for (device, expected) in [(false, 0), (true, 1)] {
            // A device that supports every dtype (`false`), or none.
            let gate = |r: &Record| r.unsupported_on(|_| device);
            for r in &gated {
                let (message, location) = raised_by(r);
                let found = if r.is_execution_error() {
                    error_matches_where(catalogue(), &message, gate).count()
                } else {
                    matches_where(catalogue(), &message, Some(&location), gate).count()
                };
                assert_eq!(found, expected, "{}: {message:?}", r.id);
            }
        }
    }

    #[test]
    fn a_generic_message_matches_the_known_bug_only_inside_its_function() {
        let message = "range end index 9 out of range for slice of length 4";
        let file = "/r/burn-flex-0.23.0-pre.1/src/ops/reduce.rs";
        let class = |line: u32| {
            lookup(catalogue(), message, Some(&format!("{file}:{line}:9")))
                .map(|r| r.background_tag.clone())
        };
        assert_eq!(class(1014).as_deref(), Some("flex-reduce-permuted-layout"));
        // The same slice panic in another reduction of the same file is not that bug.
        assert_eq!(class(1450), None);
    }

    #[test]
    fn a_record_does_not_match_its_message_raised_in_another_crate() {
        let r = catalogue()
            .iter()
            .find(|r| r.background_tag == "operation-outside-capture-scope")
            .unwrap();
        let (message, _) = raised_by(r);
        let elsewhere = "/r/burn-flex-0.23.0-pre.1/src/ops/binary.rs:1:1";
        assert!(lookup(catalogue(), &message, Some(elsewhere)).is_none());
    }

    #[test]
    fn braces_in_a_pattern_match_any_run_of_characters() {
        let p = "capture tensor {} has no initialized value";
        assert!(pattern_matches(
            p,
            "capture tensor 17 has no initialized value"
        ));
        assert!(pattern_matches(
            p,
            "prefix: capture tensor 17 has no initialized value!"
        ));
        assert!(!pattern_matches(p, "capture tensor 17 has a value"));
        assert!(pattern_matches("a{}b{}c", "abc"));
        assert!(!pattern_matches("a{}b{}c", "acb"));
    }

    #[test]
    fn crate_is_read_from_repository_and_registry_paths() {
        assert_eq!(
            crate_of("crates/burn-dispatch/src/macros.rs").as_deref(),
            Some("burn-dispatch")
        );
        let registry =
            "/r/index.crates.io-1949cf8c6b5b557f/burn-dispatch-0.23.0-pre.1/src/ops/tensor.rs";
        assert_eq!(crate_of(registry).as_deref(), Some("burn-dispatch"));
        assert_eq!(
            burn_file(&format!("{registry}:46:9")).as_deref(),
            Some("burn-dispatch/src/ops/tensor.rs")
        );
    }

    #[test]
    fn seed_000_is_found_by_message_even_at_the_macro_call_site() {
        let location = "/r/burn-dispatch-0.23.0-pre.1/src/ops/int_tensor.rs:35:9";
        let record = lookup(
            catalogue(),
            "Cannot move a tensor from a capture device",
            Some(location),
        );
        assert_eq!(
            record.map(|r| r.background_tag.as_str()),
            Some("capture-tensor-not-materialized")
        );
        assert!(lookup(catalogue(), "index out of bounds: the len is 3", None).is_none());
    }
}
