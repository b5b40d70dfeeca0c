//! The Rust half of `ci/nightly.sh`: `triage` buckets a night's crash artifacts by signature
//! (promoting one minimized reproducer per new bucket) and counts panic classes over the corpus;
//! the parsers read libFuzzer's fork-mode logs and (in [`coverage`]) llvm-cov's JSON export for
//! the night's report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::interpreter::HARNESS_ERROR;
use crate::program::RunLimits;
use crate::program::{Program, ProgramFile};
use crate::regressions::limited::{run_limited, Ending, OUT_OF_MEMORY, TIMEOUT};
use crate::regressions::{program_files, promote, promote_limited as store_limited, Promotion};
use crate::Session;

pub mod coverage;
pub mod report;
pub mod results;
mod samples;

pub use samples::{combine, parse_log, Sample};

/// The message part of the signature of an artifact that gives no finding in-process.
const NOT_REPRODUCED: &str = "not reproduced in-process";

/// The class of an artifact file triage could not read: a bucket of its own, listed with the
/// error, never a reason to stop triaging the others.
pub const UNREADABLE: &str = "unreadable";

/// The artifact kinds libFuzzer writes (its file prefixes).
const KINDS: [&str; 5] = ["crash", "timeout", "oom", "leak", "slow-unit"];

/// One crash, timeout or OOM artifact libFuzzer wrote.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Artifact {
    /// Where it is.
    pub path: String,
    /// `crash`, `timeout`, `oom`, `leak` or `slow-unit`: libFuzzer's file prefix.
    pub kind: String,
    /// The finding's signature when the harness reproduces it (a crash in this process, a
    /// timeout or out-of-memory in a process of its own under the target's limits), else `<kind>
    /// | not reproduced ...`.
    pub signature: String,
    /// How the run in a process of its own ended, for a timeout or out-of-memory artifact.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limited_run: Option<String>,
}

/// Artifacts that share a signature.
#[derive(Serialize, Deserialize, Clone, Debug)]
pub struct Bucket {
    /// The shared signature.
    pub signature: String,
    /// Its class.
    pub class: String,
    /// `new` (no stored case has this signature), `known` (a pending case from an earlier night
    /// has it), `covered` (a reviewed regression case has it) or `unreproduced` (the harness
    /// gets no finding from the artifact any more: a timeout or out-of-memory one ran to its end
    /// under the limits its signature names) or `harness-error` (the harness itself failed on
    /// it: a bug of ours, never promoted as a Burn case) or `unreadable` (the file could not be
    /// read).
    pub status: String,
    /// Artifacts in it.
    pub count: usize,
    /// The first of them.
    pub example: String,
    /// The case that covers it, or the pending case promoted from it tonight.
    pub case: Option<String>,
    /// Why promoting the new bucket failed (the artifact stays where it is).
    pub promote_error: Option<String>,
}

/// What `triage` found for one target.
#[derive(Serialize, Deserialize, Clone, Debug, Default)]
pub struct Triage {
    /// The fuzz target.
    pub target: String,
    /// Every artifact read.
    pub artifacts: Vec<Artifact>,
    /// The artifacts by signature.
    pub buckets: Vec<Bucket>,
    /// Panics per class over every corpus input (each input counts each class once).
    pub classes: BTreeMap<String, usize>,
    /// Corpus inputs counted.
    pub corpus_inputs: usize,
    /// What each oracle judged over the corpus, per (entry, kind) pair (the fuzz summary's
    /// table, over the night's corpus).
    #[serde(default)]
    pub judged: Vec<JudgedView>,
}

/// One oracle's line of the judged table, over a night's corpus.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
pub struct JudgedView {
    /// The oracle (and context).
    pub name: String,
    /// The (entry, kind) pairs it can judge.
    pub pairs: usize,
    /// Pairs judged at least [`JUDGED_ENOUGH`] times.
    pub judged_enough: usize,
    /// Pairs judged at least once.
    pub judged_once: usize,
    /// The least judged pairs, as `entry kind count`.
    pub least: Vec<String>,
}

/// A pair judged this often counts as judged in the nightly table (as in the fuzz summary).
pub const JUDGED_ENOUGH: u64 = 10;

impl JudgedView {
    /// Every view of `tally` (the differential's only where it judged anything).
    pub fn of(tally: &crate::guide::Tally) -> Vec<JudgedView> {
        crate::guide::tally::VIEWS
            .iter()
            .map(|(oracle, contexts)| tally.view(*oracle, contexts, JUDGED_ENOUGH))
            .filter(|v| v.judged_once > 0 || !v.name.starts_with("flex-vs-wgpu"))
            .map(|v| JudgedView {
                name: v.name,
                pairs: v.pairs,
                judged_enough: v.judged_enough,
                judged_once: v.judged_once,
                least: v.least.iter().map(ToString::to_string).collect(),
            })
            .collect()
    }
}

/// `dispatch-fuzz triage`'s arguments.
/// What `triage` reads and where it writes.
#[derive(clap::Args, Debug, Clone)]
pub struct Options {
    /// The fuzz target whose artifacts these are: they are decoded and run with its backends
    /// (`dispatch_ops_wgpu`: Flex, capture and wgpu, which must be available).
    #[arg(long)]
    pub target: String,
    /// The target's libFuzzer options file, whose limits a timeout or out-of-memory artifact
    /// is run under again (default: this repository's `fuzz/<target>.options`).
    #[arg(long)]
    pub options: Option<PathBuf>,
    /// Folder of crash-*, timeout-*, oom-* artifacts.
    #[arg(long)]
    pub artifacts: PathBuf,
    /// Corpus folders to count panic classes over (searched recursively).
    #[arg(long)]
    pub corpus: Vec<PathBuf>,
    /// The regression store (its pending/ holds unreviewed cases).
    #[arg(long, default_value = "regressions")]
    pub regressions: PathBuf,
    /// Where the triage JSON goes.
    #[arg(long)]
    pub out: PathBuf,
    /// Minimize each new bucket's first artifact into regressions/pending/.
    #[arg(long)]
    pub promote: bool,
}

fn files_under(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for entry in entries.flatten() {
        let path = entry.path();
        // Anything but a folder is a file to read: one that cannot be (a dangling link) is
        // reported as such, not skipped.
        if path.is_dir() {
            files_under(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// The bucket of an artifact of `kind` (`crash`, `timeout`, ...) that a fuzz run in `session`
/// wrote. It is the finding that stopped the run: judged under that same policy, where stored
/// bugs are counted but are not findings, so a program that shows a stored bug before a new
/// one is bucketed by the new one. Only a program that shows nothing new under it is judged
/// again with stored bugs as findings, and then a reviewed case covers its bucket. A harness
/// error is a bucket of its own: one must not stop the night's triage.
pub fn artifact_signature(program: &Program, kind: &str, session: &Session) -> String {
    let verdict = crate::check(session, program).and_then(|verdict| match verdict.finding {
        Some(_) => Ok(verdict),
        None => crate::check(
            &session.with_policy(session.policy.with_class(None)),
            program,
        ),
    });
    match verdict {
        Ok(verdict) => verdict.finding.map_or_else(
            || format!("{kind} | {NOT_REPRODUCED} | libfuzzer"),
            |f| f.signature.to_string(),
        ),
        Err(error) => format!(
            "{HARNESS_ERROR} | {} | harness",
            crate::oracles::normalize_message(&format!("{error:#}"))
        ),
    }
}

/// The bucket of a `timeout` or `oom` artifact, and how its run ended: the program is run again
/// in a process of its own under the target's `limits` (in this one a hang would stop triage).
/// One that ends within them is `unreproduced`, its signature naming the limits.
pub fn limited_signature(
    program: &Program,
    kind: &str,
    limits: RunLimits,
    session: &Session,
) -> (String, String) {
    let exe = std::env::current_exe().unwrap_or_default();
    match run_limited(&exe, program, limits, session) {
        Ok(ending) => {
            let described = ending.describe(limits);
            let signature = match ending.signature(program) {
                Some(signature) => signature,
                None if matches!(ending, Ending::Failed(_)) => format!(
                    "{HARNESS_ERROR} | {} | harness",
                    crate::oracles::normalize_message(&described)
                ),
                None => format!(
                    "{kind} | {NOT_REPRODUCED}: ran to its end within {} s and {} MiB | libfuzzer",
                    limits.timeout_s, limits.rss_limit_mb
                ),
            };
            (signature, described)
        }
        Err(error) => (
            format!(
                "{HARNESS_ERROR} | {} | harness",
                crate::oracles::normalize_message(&format!("{error:#}"))
            ),
            format!("{error:#}"),
        ),
    }
}

/// Minimizes a new timeout or out-of-memory bucket's example under the same `limits`, each
/// candidate in a process of its own, into `regressions/pending/`. A failure is recorded, never
/// fatal.
fn promote_limited(
    bucket: &mut Bucket,
    program: &Program,
    limits: RunLimits,
    dir: &Path,
    backends: crate::program::Backends,
) {
    let name = pending_name(bucket);
    let root_cause = pending_root_cause(bucket);
    match store_limited(
        program,
        &bucket.signature,
        limits,
        dir,
        &name,
        &root_cause,
        backends,
    ) {
        Ok(path) => bucket.case = Some(path.display().to_string()),
        Err(e) => bucket.promote_error = Some(format!("{e:#}")),
    }
}

/// A pending case's name: its class and its signature's hash.
fn pending_name(bucket: &Bucket) -> String {
    let hash = crate::hash::fnv1a(&[bucket.signature.as_bytes()]);
    format!("{}-{:08x}", bucket.class, hash as u32)
}

/// A pending case's root cause, until a person writes it.
fn pending_root_cause(bucket: &Bucket) -> String {
    format!(
        "Pending review: found by the nightly fuzz job with signature `{}`; root cause not yet \
         analysed. Rename the case after the bug, replace this paragraph with the root cause and \
         move it up to regressions/.",
        bucket.signature
    )
}

/// `(signature, case path)` of every stored case directly in `dir`: its own signature and each
/// of its `also` programs', so an artifact showing a root cause through another entry a case
/// names is that case's.
fn case_signatures(dir: &Path) -> Vec<(String, String)> {
    // A store without a pending/ folder yet simply has no pending cases.
    let files = program_files(dir).unwrap_or_default();
    files
        .into_iter()
        .filter_map(|(_, path)| {
            let file = ProgramFile::load(&path).ok()?;
            let shown = file.signature.into_iter();
            let also = file.also.into_iter().map(|a| a.signature);
            let at = path.display().to_string();
            Some(shown.chain(also).map(move |s| (s, at.clone())))
        })
        .flatten()
        .collect()
}

/// Buckets a night's artifacts by signature (promoting one minimized reproducer per new bucket
/// when asked) and counts panic classes over the corpus; exit 1 when a bucket is new.
pub fn triage(options: Options) -> Result<ExitCode> {
    let mut triage = Triage {
        target: options.target.clone(),
        ..Triage::default()
    };
    if !options.artifacts.is_dir() {
        anyhow::bail!("{}: no such artifact folder", options.artifacts.display());
    }
    // Each artifact is decoded and run as its own target ran it.
    let target = crate::libfuzzer::target(&options.target)?;
    let session = Session::from_config().on(target.backends);
    target
        .start(&session)
        .map_err(|why| anyhow::anyhow!("the {} artifacts need wgpu: {why}", target.name))?;
    let options_file = options.options.clone().unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("../fuzz/{}.options", target.name))
    });
    let limits = crate::libfuzzer::LibFuzzerOptions::load(&options_file)?.limits;
    let mut paths = Vec::new();
    files_under(&options.artifacts, &mut paths);
    paths.sort();
    let in_process = rayon::ThreadPoolBuilder::new()
        .num_threads(if target.backends.wgpu { 1 } else { 0 })
        .build()
        .context("cannot start triage's thread pool")?;
    let (programs, crashes, limited) = read_artifacts(paths, target.backends, &mut triage);
    let judged = judge_artifacts(&in_process, (&crashes, &limited), limits, &session);
    triage.artifacts.extend(judged);
    triage.artifacts.sort_by(|a, b| a.path.cmp(&b.path));
    let pending_dir = options.regressions.join("pending");
    let buckets = buckets(&triage.artifacts, &options.regressions);
    triage.buckets.extend(buckets);
    if options.promote {
        for bucket in triage.buckets.iter_mut().filter(|b| b.status == "new") {
            let limited = [TIMEOUT, OUT_OF_MEMORY].contains(&bucket.class.as_str());
            match &programs.get(&bucket.example) {
                Some(program) if limited => {
                    promote_limited(bucket, program, limits, &pending_dir, target.backends)
                }
                _ => promote_pending(bucket, &pending_dir, &session),
            }
        }
    }
    let mut inputs = Vec::new();
    for dir in &options.corpus {
        files_under(dir, &mut inputs);
    }
    let corpus = in_process.install(|| corpus_classes(&inputs, &session));
    let (tally, classes, corpus_inputs) = corpus;
    triage.classes = classes;
    triage.corpus_inputs = corpus_inputs;
    // No corpus, no table: a table of zeros would read as oracles that judged nothing.
    if triage.corpus_inputs > 0 {
        triage.judged = JudgedView::of(&tally);
    }
    let text = serde_json::to_string_pretty(&triage)?;
    std::fs::write(&options.out, text + "\n")
        .with_context(|| format!("cannot write {}", options.out.display()))?;
    let new = triage.buckets.iter().filter(|b| b.status == "new").count();
    println!(
        "{}: {} artifacts in {} buckets ({new} new), {} corpus inputs",
        triage.target,
        triage.artifacts.len(),
        triage.buckets.len(),
        triage.corpus_inputs
    );
    // 1 when tonight found something no stored case had: the job's "new finding" exit.
    Ok(if new > 0 {
        ExitCode::from(1)
    } else {
        ExitCode::SUCCESS
    })
}

/// One artifact as its target decodes it: where it is, libFuzzer's kind, the program.
type Decoded = (String, &'static str, Program);

/// Reads the artifacts at `paths` (libFuzzer's `<kind>-<hash>` files) and decodes each for
/// `backends`: every program by path, the crash artifacts and corpus inputs (run in this
/// process) and the timeout and out-of-memory ones (each run in a process of its own, most of
/// its time spent waiting out a limit). One that cannot be read is recorded as such.
fn read_artifacts(
    paths: Vec<PathBuf>,
    backends: crate::program::Backends,
    triage: &mut Triage,
) -> (BTreeMap<String, Program>, Vec<Decoded>, Vec<Decoded>) {
    let (mut programs, mut crashes, mut limited) = (BTreeMap::new(), Vec::new(), Vec::new());
    for path in paths {
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        let Some(kind) = KINDS
            .into_iter()
            .find(|k| name.starts_with(&format!("{k}-")))
        else {
            continue;
        };
        let shown = path.display().to_string();
        let bytes = match std::fs::read(&path) {
            Ok(bytes) => bytes,
            Err(error) => {
                triage.artifacts.push(Artifact {
                    path: shown,
                    kind: kind.to_string(),
                    signature: format!("{UNREADABLE} | {} | triage", error.kind()),
                    limited_run: None,
                });
                continue;
            }
        };
        let program = Program::from_fuzz_bytes(&bytes, backends);
        match kind {
            "timeout" | "oom" => limited.push((shown.clone(), kind, program.clone())),
            _ => crashes.push((shown.clone(), kind, program.clone())),
        }
        programs.insert(shown, program);
    }
    (programs, crashes, limited)
}

/// The signature of each artifact: the crashes on `pool` (every core; a wgpu target's on one
/// thread, as wgpu's one device stream is shared: `fuzz --jobs` refuses wgpu likewise), the
/// limited ones each in a process of its own under `limits`, in parallel.
fn judge_artifacts(
    pool: &rayon::ThreadPool,
    (crashes, limited): (&[Decoded], &[Decoded]),
    limits: RunLimits,
    session: &Session,
) -> Vec<Artifact> {
    use rayon::prelude::*;
    let mut judged: Vec<Artifact> = pool.install(|| {
        crashes
            .par_iter()
            .map(|(path, kind, program)| Artifact {
                path: path.clone(),
                kind: kind.to_string(),
                signature: artifact_signature(program, kind, session),
                limited_run: None,
            })
            .collect()
    });
    judged.extend(
        limited
            .par_iter()
            .map(|(path, kind, program)| {
                let (signature, ending) = limited_signature(program, kind, limits, session);
                Artifact {
                    path: path.clone(),
                    kind: kind.to_string(),
                    signature,
                    limited_run: Some(ending),
                }
            })
            .collect::<Vec<Artifact>>(),
    );
    judged
}

/// The night's artifacts bucketed by signature, each bucket's status read against the store's
/// reviewed and pending cases (`regressions` and its `pending/`).
fn buckets(artifacts: &[Artifact], regressions: &Path) -> Vec<Bucket> {
    let reviewed = case_signatures(regressions);
    let pending = case_signatures(&regressions.join("pending"));
    let mut by_signature: BTreeMap<String, Vec<&Artifact>> = BTreeMap::new();
    for artifact in artifacts {
        by_signature
            .entry(artifact.signature.clone())
            .or_default()
            .push(artifact);
    }
    let mut buckets = Vec::new();
    for (signature, artifacts) in by_signature {
        // The bucket's class is the signature's first field: a finding's class, or one of the
        // triage's own (an artifact it could not read).
        let class = (signature.split_once(" | ")).map_or(signature.as_str(), |(c, _)| c);
        let class = class.to_string();
        let find = |cases: &[(String, String)]| {
            cases
                .iter()
                .find(|(s, _)| *s == signature)
                .map(|c| c.1.clone())
        };
        // An artifact the harness no longer reproduces (a fixed harness bug, a flaky crash)
        // is listed, kept on disk, and neither promoted nor counted as new.
        let (status, case) = match (find(&reviewed), find(&pending)) {
            _ if signature.contains(NOT_REPRODUCED) => ("unreproduced", None),
            _ if class == UNREADABLE => (UNREADABLE, None),
            // Not Burn's: reported for the harness's own fix, never promoted as a Burn case.
            _ if class == HARNESS_ERROR => ("harness-error", None),
            (Some(case), _) => ("covered", Some(case)),
            (None, Some(case)) => ("known", Some(case)),
            (None, None) => ("new", None),
        };
        buckets.push(Bucket {
            signature,
            class,
            status: status.to_string(),
            count: artifacts.len(),
            example: artifacts[0].path.clone(),
            case,
            promote_error: None,
        });
    }
    buckets
}

/// The corpus `inputs` run in `session` (in parallel on the current rayon pool): what the
/// oracles judged, how many inputs met each panic class, and how many inputs were read.
fn corpus_classes(
    inputs: &[PathBuf],
    session: &Session,
) -> (crate::guide::Tally, BTreeMap<String, usize>, usize) {
    use rayon::prelude::*;
    type Counts = (crate::guide::Tally, BTreeMap<String, usize>, usize);
    let add = |mut acc: Counts, input: &PathBuf| {
        let Ok(bytes) = std::fs::read(input) else {
            return acc;
        };
        let program = Program::from_fuzz_bytes(&bytes, session.backends);
        let classes: std::collections::BTreeSet<_> = match crate::check(session, &program) {
            Ok(verdict) => {
                acc.0.add(&program, &verdict, 0.0);
                verdict
                    .trace
                    .panics()
                    .map(|(_, p)| p.class.clone())
                    .collect()
            }
            Err(_) => [HARNESS_ERROR.to_string()].into(),
        };
        for class in classes {
            *acc.1.entry(class).or_default() += 1;
        }
        acc.2 += 1;
        acc
    };
    let merge = |mut a: Counts, b: Counts| {
        a.0.merge(&b.0);
        for (class, n) in b.1 {
            *a.1.entry(class).or_default() += n;
        }
        a.2 += b.2;
        a
    };
    inputs
        .par_iter()
        .fold(Counts::default, add)
        .reduce(Counts::default, merge)
}

/// Minimizes a new bucket's example into `regressions/pending/` (a case awaiting review: the
/// regression suite runs only reviewed cases). A failure is recorded, never fatal: the artifact
/// stays on disk either way.
fn promote_pending(bucket: &mut Bucket, dir: &Path, session: &Session) {
    let name = pending_name(bucket);
    let root_cause = pending_root_cause(bucket);
    let request = Promotion {
        input: PathBuf::from(&bucket.example),
        name: Some(name.clone()),
        root_cause: Some(root_cause),
        dir: dir.to_path_buf(),
        backends: session.backends,
    };
    // An artifact of a long libFuzzer process may need state its earlier inputs left there:
    // promote stores only a case that shows its finding in a process of its own.
    match promote(request, session) {
        Ok(done) => bucket.case = Some(done.path.display().to_string()),
        Err(e) => bucket.promote_error = Some(format!("{e:#}")),
    }
}

#[cfg(test)]
mod tests;
