//! Storing a finding as a case, and the insta snapshot settings the suite asserts with (only in
//! builds with the `cli` feature: the fuzz targets store nothing and link no insta).

use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{bail, Context, Result};

use super::Case;
use crate::minimize::{minimize_finding, Minimized, Minimizer, Reproduction};
use crate::oracles::catalogue::catalogue;
use crate::oracles::{Field, Signature};
use crate::program::{Input, ProgramFile};
use crate::Session;

/// A finding to store as a case.
#[derive(Clone, Debug)]
pub struct Promotion {
    /// The finding: a program file or a libFuzzer artifact.
    pub input: PathBuf,
    /// Case name (lowercase, '-' and '_'), named after the bug; default: the class.
    pub name: Option<String>,
    /// Root-cause paragraph; default: the catalogue record's documentation.
    pub root_cause: Option<String>,
    /// The store.
    pub dir: PathBuf,
    /// The backends a libFuzzer artifact decodes for: its target's (a program file names its
    /// devices itself).
    pub backends: crate::program::Backends,
}

/// A stored case.
#[derive(Debug)]
pub struct Promoted {
    /// The case file.
    pub path: PathBuf,
    /// Its snapshot.
    pub snapshot: PathBuf,
    /// How minimization went.
    pub minimized: Minimized,
}

/// The insta settings of every regression snapshot: one place, so the suite and `promote`
/// write the same header.
pub fn snapshot_settings(dir: &Path, case: &Case) -> insta::Settings {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path(dir);
    settings.set_prepend_module_to_snapshot(false);
    settings.set_omit_expression(true);
    settings.set_description(case.file.signature.clone().unwrap_or_default());
    settings
}

/// Asserts `text` against `case`'s snapshot in `dir` (the one snapshot-assertion site).
pub fn assert_snapshot(case: &Case, dir: &Path, text: &str) {
    snapshot_settings(dir, case).bind(|| insta::assert_snapshot!(case.name.as_str(), text));
}

/// Minimizes a finding in `session` on the input's backends, under the session's policy plus
/// the input's own class, and stores it in `request.dir` with its snapshot. Must run with debug
/// assertions, as `cargo test` does, and in the `dispatch-fuzz` binary: the result is checked in
/// a new process (`settle_alone`).
pub fn promote(options: Promotion, session: &Session) -> Result<Promoted> {
    // Snapshots must be recorded as `cargo test` runs: with debug assertions, which change
    // which of Burn's checks fires first (Flex asserts dtypes per op only in debug builds).
    if !cfg!(debug_assertions) {
        bail!("promote from the test profile: `cargo run -p dispatch-fuzz -- promote ...` (no --release)");
    }
    let (signature, minimized, origin) =
        minimized_finding(&options.input, options.backends, session)?;
    let text = signature.to_string();
    let class = signature.class.name().to_string();
    let name = options.name.unwrap_or_else(|| class.clone());
    if !valid_name(&name) {
        bail!("case name {name:?}: use lowercase letters, digits, '-' and '_' (it names a file)");
    }
    let documented = catalogue()
        .iter()
        .find(|r| r.background_tag == class)
        .and_then(|r| r.documentation.clone());
    let Some(root_cause) = options.root_cause.or(documented) else {
        bail!("class {class} is not catalogued: say why it fails with --root-cause \"...\"");
    };
    let path = options.dir.join(format!("{name}.json"));
    let snapshot = options.dir.join("snapshots").join(format!("{name}.snap"));
    if path.exists() || snapshot.exists() {
        bail!("{} exists: choose another --name", path.display());
    }
    let mut file = ProgramFile {
        name: Some(name.clone()),
        signature: Some(text),
        // Every field: the narrowest key, which a reviewer may widen to the root cause's.
        key: Field::ALL.iter().map(|f| f.name().to_string()).collect(),
        class: Some(class),
        origin: Some(if origin.contains("minimized by") {
            origin
        } else {
            format!("{origin}, minimized by dispatch-fuzz promote")
        }),
        found: Some(today()),
        root_cause: Some(root_cause),
        upstream: None,
        adapters: Vec::new(),
        limits: None,
        flaky: None,
        also: Vec::new(),
        steps: minimized.program.steps.clone(),
    };
    // A wgpu case holds on the adapter class it was minimized on: the suite judges it there.
    let probe = Case {
        name: name.clone(),
        path: path.clone(),
        file: file.clone(),
    };
    if probe.uses_wgpu() {
        let adapter = crate::interpreter::wgpu::adapter(session.backends.adapter)
            .map_err(|reason| anyhow::anyhow!("a wgpu case needs its adapter: {reason}"))?;
        file.adapters = vec![adapter.class];
    }
    std::fs::create_dir_all(&options.dir)
        .with_context(|| format!("cannot create {}", options.dir.display()))?;
    // insta resolves a relative snapshot path against the source file of the assertion.
    let dir = options.dir.canonicalize()?;
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let case = Case {
        name: name.clone(),
        path: path.clone(),
        file,
    };
    write_snapshot(&case, &dir.join("snapshots"))?;
    Ok(Promoted {
        path,
        snapshot,
        minimized,
    })
}

/// Predicate runs a limited minimization may make: each run of a candidate that still hangs
/// costs the whole time limit.
const LIMITED_ATTEMPTS: usize = 300;

/// Minimizes a `timeout` or `out-of-memory` finding (`program`, whose run in a process of its own
/// under `limits` gives `signature`) with every candidate run the same way, and stores it in
/// `dir` as `name` with its limits and snapshot. Must run in the `dispatch-fuzz` binary.
pub fn promote_limited(
    program: &crate::program::Program,
    signature: &str,
    limits: crate::program::RunLimits,
    dir: &Path,
    name: &str,
    root_cause: &str,
    backends: crate::program::Backends,
) -> Result<PathBuf> {
    use super::limited::run_limited;
    let exe = std::env::current_exe()?;
    let class = signature.parse::<Signature>()?.class.to_string();
    let session = Session::new(backends);
    let ending = run_limited(&exe, program, limits, &session)?;
    if ending.signature(program).as_deref() != Some(signature) {
        bail!(
            "the program does not give `{signature}` again: {}",
            ending.describe(limits)
        );
    }
    let step = match ending {
        super::limited::Ending::TimedOut(step) | super::limited::Ending::OutOfMemory(step, _) => {
            step
        }
        _ => None,
    };
    let same = |p: &crate::program::Program| -> Result<bool> {
        let ending = run_limited(&exe, p, limits, &session)?;
        Ok(ending.signature(p).as_deref() == Some(signature))
    };
    let minimized = Minimizer::new()
        .attempts(LIMITED_ATTEMPTS)
        .run(program.clone(), step, same)?;
    let path = dir.join(format!("{name}.json"));
    let snapshot = dir.join("snapshots").join(format!("{name}.snap"));
    if path.exists() || snapshot.exists() {
        bail!("{} exists: choose another name", path.display());
    }
    let mut file =
        ProgramFile {
            name: Some(name.to_string()),
            signature: Some(signature.to_string()),
            key: Field::ALL.iter().map(|f| f.name().to_string()).collect(),
            class: Some(class),
            origin: Some(format!(
            "libFuzzer artifact of a target on {}, {} -> {} steps in {} runs of a process of its \
             own under the same limits, minimized by dispatch-fuzz triage",
            if backends.wgpu { "flex, capture and wgpu" } else { "flex and capture" },
            minimized.steps_before,
            minimized.steps_after,
            minimized.attempts
        )),
            found: Some(today()),
            root_cause: Some(root_cause.to_string()),
            upstream: None,
            adapters: Vec::new(),
            limits: Some(limits),
            flaky: None,
            also: Vec::new(),
            steps: minimized.program.steps.clone(),
        };
    let mut case = Case {
        name: name.to_string(),
        path: path.clone(),
        file: file.clone(),
    };
    if case.uses_wgpu() {
        let adapter = crate::interpreter::wgpu::adapter(backends.adapter)
            .map_err(|reason| anyhow::anyhow!("a wgpu case needs its adapter: {reason}"))?;
        file.adapters = vec![adapter.class];
        case.file = file.clone();
    }
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    write_snapshot(&case, &dir.canonicalize()?.join("snapshots"))?;
    Ok(path)
}

/// The finding in `input` (a program file, or an artifact for `backends`), minimized in
/// `session` and settled to reproduce in a process of its own, with its origin: what a case and
/// an `also` program store alike. A flaky finding or one that does not settle is refused.
fn minimized_finding(
    input: &Path,
    backends: crate::program::Backends,
    session: &Session,
) -> Result<(Signature, Minimized, String)> {
    let input = Input::load(input, backends)?;
    if let Some(flaky) = input.flaky {
        bail!(
            "a flaky finding (met under collide in {} of {} runs, never in the serial schedule) is \
             not a reproducer: its verdict follows the timing",
            flaky.hits,
            flaky.tries
        );
    }
    let session = crate::minimize::session_for(&input, &session.on(backends));
    let origin = input.origin;
    let original = input.program.clone();
    let (signature, minimized, reproduction) =
        minimize_finding(input.program, &session, Minimizer::new())?;
    if let Reproduction::Flaky { reproduced, runs } = reproduction {
        bail!("the minimized program reproduced {reproduced} of {runs} re-runs: not a reproducer");
    }
    // A long libFuzzer process's artifact may reproduce alone while its in-process
    // minimization ends on state earlier candidates left.
    let (minimized, _) =
        super::settle_alone(&original, &signature.to_string(), minimized, &session)?;
    Ok((signature, minimized, origin))
}

/// Minimizes the finding in `input` and adds it to stored case `case`'s `also` programs: the
/// same root cause met under another signature, which the case's key knows once the harness is
/// built again. The finding must be of the case's class and not already the case's.
pub fn promote_also(
    input: &Path,
    case: &str,
    dir: &Path,
    backends: crate::program::Backends,
    session: &Session,
) -> Result<(PathBuf, Signature, Minimized)> {
    if !cfg!(debug_assertions) {
        bail!("promote from the test profile: `cargo run -p dispatch-fuzz -- promote ...` (no --release)");
    }
    let path = dir.join(format!("{case}.json"));
    let mut file = ProgramFile::load(&path).with_context(|| format!("stored case {case}"))?;
    // The input's class is a finding and so are known findings (`minimize::session_for`).
    let (signature, minimized, _) = minimized_finding(input, backends, session)?;
    let text = signature.to_string();
    if file.class.as_deref() != Some(signature.class.name()) {
        bail!(
            "the finding is of class {}, case {case} of {}: an `also` program shares its case's class",
            signature.class,
            file.class.as_deref().unwrap_or("none")
        );
    }
    let named = std::iter::once(file.signature.as_deref())
        .chain(file.also.iter().map(|a| Some(a.signature.as_str())));
    if named.flatten().any(|s| s == text) {
        bail!("case {case} already names `{text}`");
    }
    file.also.push(crate::program::Also {
        signature: text,
        steps: minimized.program.steps.clone(),
    });
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("{}: cannot write", path.display()))?;
    Ok((path, signature, minimized))
}

/// Today's date as `YYYY-MM-DD` (UTC), from the civil-from-days algorithm.
fn today() -> String {
    let days = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() / 86_400) as i64;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}")
}

fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
}

/// Writes the case's snapshot through insta itself, so the file is exactly what the suite
/// compares against.
fn write_snapshot(case: &Case, dir: &Path) -> Result<()> {
    let text = match case.file.limits {
        Some(_) => case.limited_snapshot_text(&std::env::current_exe()?)?,
        None => case.snapshot_text()?,
    };
    // Read by insta at its first assertion in this process: accept this one snapshot.
    std::env::set_var("INSTA_UPDATE", "always");
    std::env::set_var("INSTA_OUTPUT", "none");
    assert_snapshot(case, dir, &text);
    Ok(())
}
