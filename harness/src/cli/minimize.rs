//! `dispatch-fuzz minimize INPUT`: shrink a finding while its signature stays the same.

use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::files::ProgramFile;
use dispatch_fuzz::interpreter::fnv1a;
use dispatch_fuzz::minimize::{minimize_finding, Minimizer, Reproduction};
use dispatch_fuzz::oracles::Policy;
use dispatch_fuzz::program::Program;

/// A program read by `load_input`, with where it came from.
pub struct Input {
    /// The program.
    pub program: Program,
    /// Its origin, for the header of a stored case.
    pub origin: String,
    /// The class a saved finding names, if the input is such a program file.
    pub class: Option<String>,
    /// Whether the input was a program file (else a libFuzzer artifact).
    pub program_file: bool,
    /// The file's bytes as read.
    pub bytes: Vec<u8>,
}

impl Input {
    /// This process's policy, plus the input's own class: a saved finding is treated as a
    /// finding even if its class is catalogued.
    pub fn policy(&self) -> Policy {
        let mut policy = Policy::from_env().clone();
        policy.crash_on.extend(self.class.clone());
        policy
    }
}

/// Reads a program file, or failing that decodes the file as a libFuzzer artifact.
pub fn load_input(path: &Path) -> Result<Input> {
    let bytes = std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
    let shown = path.display().to_string();
    if let Ok(text) = std::str::from_utf8(&bytes) {
        if let Ok(file) = ProgramFile::parse(text, &shown) {
            // Keep where the case really came from (a fuzz session's seed and input), never a
            // local path: origins are committed with the case.
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            let origin = file
                .origin
                .clone()
                .unwrap_or_else(|| format!("program file {name}"));
            return Ok(Input {
                program: file.program(),
                origin,
                class: file.class,
                program_file: true,
                bytes,
            });
        }
    }
    let origin = format!(
        "libFuzzer artifact fnv1a {:016x} ({} bytes)",
        fnv1a(&[&bytes]),
        bytes.len()
    );
    Ok(Input {
        program: Program::from_fuzz_bytes(&bytes),
        origin,
        class: None,
        program_file: false,
        bytes,
    })
}

/// Minimizes `path` under this process's policy; returns the minimized file and where it went.
pub fn minimize_to_file(path: &Path, quiet: bool) -> Result<Option<ProgramFile>> {
    let Input {
        program, origin, ..
    } = load_input(path)?;
    let interactive = std::io::stderr().is_terminal() && !quiet;
    let minimizer = Minimizer::new().on_progress(move |p| {
        if interactive {
            eprint!(
                "\r{:<28} {:>4} steps {:>6} attempts {:>6.1} s\x1b[K",
                p.pass,
                p.steps,
                p.attempts,
                p.elapsed.as_secs_f64()
            );
            let _ = std::io::stderr().flush();
        }
    });
    let (signature, minimized, reproduction) =
        minimize_finding(program, Policy::from_env(), minimizer)?;
    if interactive {
        eprintln!();
    }
    eprintln!(
        "minimized {}: {} -> {} steps, {} runs ({} from the memo), {:.2} s",
        path.display(),
        minimized.steps_before,
        minimized.steps_after,
        minimized.attempts,
        minimized.cache_hits,
        minimized.elapsed.as_secs_f64()
    );
    if let Reproduction::Flaky { reproduced, runs } = reproduction {
        eprintln!(
            "FLAKY: the minimized program reproduced {reproduced} of {runs} re-runs; not saved"
        );
        return Ok(None);
    }
    let class = signature
        .split(" | ")
        .next()
        .unwrap_or_default()
        .to_string();
    Ok(Some(ProgramFile {
        signature: Some(signature),
        class: Some(class),
        origin: Some(format!("minimized from {origin}")),
        steps: minimized.program.steps,
        ..ProgramFile::default()
    }))
}

pub fn main(input: &Path, out: Option<&PathBuf>) -> Result<ExitCode> {
    let Some(file) = minimize_to_file(input, false)? else {
        return Ok(ExitCode::from(1));
    };
    match out {
        Some(dir) => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            let signature = file.signature.clone().unwrap_or_default();
            let name = format!(
                "{}-{:016x}.json",
                file.class.clone().unwrap_or_default(),
                fnv1a(&[signature.as_bytes()])
            );
            let path = dir.join(name);
            std::fs::write(&path, file.to_text())
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("{}", path.display());
        }
        None => print!("{}", file.to_text()),
    }
    Ok(ExitCode::SUCCESS)
}
