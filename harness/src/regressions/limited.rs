//! Running a program in a process of its own under libFuzzer's limits, for the artifacts a run
//! in this process cannot judge: a hang (`timeout-*`) would hang triage, an out-of-memory
//! (`oom-*`) would kill it. The child is this binary's `run --json --progress`; a watchdog
//! kills it once it runs past the time limit or its resident memory passes the RSS limit, and
//! its progress lines name the step it was in.

use std::io::{BufRead, BufReader, Read};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::hash::fnv1a;
use crate::program::{Program, ProgramFile, RunLimits};
use crate::Session;

pub use crate::oracles::class::{OUT_OF_MEMORY, TIMEOUT};

/// The progress line `run --progress` prints to stderr as each step starts.
pub const PROGRESS_PREFIX: &str = "==dispatch-fuzz== step ";
/// The line `run --progress` prints once its program is about to run: the time limit counts
/// from here, as libFuzzer's counts from the input's start, not the process's.
pub const START_LINE: &str = "==dispatch-fuzz== start";

/// How a limited run ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Ending {
    /// The program ran to its end: its finding's signature, if any.
    Finished(Option<String>),
    /// Killed past the time limit, in this step (`None`: before the first).
    TimedOut(Option<usize>),
    /// Killed past the RSS limit, in this step, at this many MiB.
    OutOfMemory(Option<usize>, u64),
    /// The process failed otherwise (a crash of its own, a harness error): what it said.
    Failed(String),
}

impl Ending {
    /// The signature a timeout or out-of-memory ending gives `program`: the class and the step
    /// that never finished, named as signatures name steps, so one hang in one op is one bucket.
    pub fn signature(&self, program: &Program) -> Option<String> {
        let step_name = |step: &Option<usize>| {
            step.and_then(|i| program.steps.get(i)).map_or(
                "the program's start".to_string(),
                crate::oracles::naming::step_name,
            )
        };
        match self {
            Ending::Finished(signature) => signature.clone(),
            Ending::TimedOut(step) => Some(format!(
                "{TIMEOUT} | {} did not finish within the time limit | harness",
                step_name(step)
            )),
            Ending::OutOfMemory(step, _) => Some(format!(
                "{OUT_OF_MEMORY} | {} grew past the RSS limit | harness",
                step_name(step)
            )),
            Ending::Failed(_) => None,
        }
    }

    /// One line for a person: how the run ended and under which limit.
    pub fn describe(&self, limits: RunLimits) -> String {
        match self {
            Ending::Finished(None) => format!(
                "finished with no finding within {} s and {} MiB",
                limits.timeout_s, limits.rss_limit_mb
            ),
            Ending::Finished(Some(s)) => format!("finished with the finding {s}"),
            Ending::TimedOut(step) => format!(
                "killed after {} s, in step {}",
                limits.timeout_s,
                step.map_or("none".into(), |s| s.to_string())
            ),
            Ending::OutOfMemory(step, mb) => format!(
                "killed at {mb} MiB (limit {}), in step {}",
                limits.rss_limit_mb,
                step.map_or("none".into(), |s| s.to_string())
            ),
            Ending::Failed(why) => format!("the run failed: {why}"),
        }
    }
}

/// Runs `program` in a new process of the `dispatch-fuzz` binary `exe` under `limits`, in
/// `session` (its backends and policy passed as the child's switches).
pub fn run_limited(
    exe: &Path,
    program: &Program,
    limits: RunLimits,
    session: &Session,
) -> Result<Ending> {
    let path = std::env::temp_dir().join(format!(
        "dispatch-fuzz-limited-{}-{:016x}.json",
        std::process::id(),
        fnv1a(&[format!("{program:?}").as_bytes()])
    ));
    let file = ProgramFile {
        steps: program.steps.clone(),
        ..ProgramFile::default()
    };
    std::fs::write(&path, file.to_text())
        .with_context(|| format!("cannot write {}", path.display()))?;
    let ending = watch(exe, &path, limits, session);
    let _ = std::fs::remove_file(&path);
    ending
}

fn watch(exe: &Path, path: &Path, limits: RunLimits, session: &Session) -> Result<Ending> {
    let mut child = Command::new(exe)
        .args(["run", "--json", "--progress"])
        .arg(path)
        .envs(session.switches())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {} run {}", exe.display(), path.display()))?;
    // Both pipes are drained on threads of their own, so a chatty child never blocks on them.
    let (lines, progress) = mpsc::channel::<String>();
    let stderr = child.stderr.take().context("no stderr")?;
    let errors = std::thread::spawn(move || {
        let mut kept = String::new();
        for line in BufReader::new(stderr).lines().map_while(Result::ok) {
            if line.starts_with(PROGRESS_PREFIX) || line == START_LINE {
                let _ = lines.send(line);
            } else if kept.len() < 64 * 1024 {
                kept.push_str(&line);
                kept.push('\n');
            }
        }
        kept
    });
    let mut stdout = child.stdout.take().context("no stdout")?;
    let output = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let spawned = Instant::now();
    let mut started: Option<Instant> = None;
    let mut step = None;
    // Process start and wgpu's initialization do not count, but a child that never starts
    // its program is no hang of Burn's either: it gets the limit once more to start.
    let limit = Duration::from_secs(limits.timeout_s);
    let ending = loop {
        while let Ok(line) = progress.try_recv() {
            match line.strip_prefix(PROGRESS_PREFIX) {
                Some(index) => step = index.trim().parse().ok(),
                None => started = Some(Instant::now()),
            }
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        if let Some(mb) = rss_mb(child.id()).filter(|mb| *mb > limits.rss_limit_mb) {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(drain(progress, step, |step| Ending::OutOfMemory(step, mb)));
        }
        let past = match started {
            Some(at) => at.elapsed() > limit,
            None => spawned.elapsed() > limit * 2,
        };
        if past {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(drain(progress, step, Ending::TimedOut));
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = ending;
    let stdout = output.join().unwrap_or_default();
    let stderr = errors.join().unwrap_or_default();
    let verdict: serde_json::Value = match serde_json::from_str(&stdout) {
        Ok(v) => v,
        Err(_) => {
            return Ok(Ending::Failed(format!(
                "exit {:?}, no verdict: {}",
                status.code(),
                stderr.trim()
            )))
        }
    };
    Ok(Ending::Finished(
        verdict["finding"]["signature"].as_str().map(str::to_string),
    ))
}

/// The step the killed child was in, from the progress lines still queued.
fn drain(
    progress: mpsc::Receiver<String>,
    mut step: Option<usize>,
    ending: impl FnOnce(Option<usize>) -> Ending,
) -> Ending {
    for line in progress.try_iter() {
        if let Some(index) = line.strip_prefix(PROGRESS_PREFIX) {
            step = index.trim().parse().ok();
        }
    }
    ending(step)
}

/// The resident memory of process `pid` in MiB (Linux: `/proc/<pid>/status`); `None` where it
/// cannot be read.
fn rss_mb(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb / 1024)
}
