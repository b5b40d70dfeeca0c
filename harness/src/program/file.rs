//! Program files: the text form of a test case on disk.
//!
//! # Format
//! A JSON object. `steps` is required: the program's steps in the serde form of
//! [`Step`](crate::program::Step), e.g. `{"create": {"out": 0, "kind": "float", "shape": [2],
//! "fill": "arange", "device": "flex"}}` (a `create` or a `cast` may add `"dtype": "f16"`, see
//! [`Dtype`](crate::program::Dtype); without it, the device's default). Every other key is optional metadata a person or a tool
//! wrote down and the loader keeps: `name`, `signature`, `class`, `origin` (where the case came
//! from: a fuzz session's seed and input, an artifact hash, or `hand-written`), `found` (date),
//! `root_cause` (a paragraph), `upstream` (what Burn's newest sources and tracker say) and, for a
//! case that runs on wgpu, `adapters`: the adapter classes it was checked to hold on (e.g.
//! `[{"backend": "vulkan", "driver": "llvmpipe", "device_type": "cpu"}]`; the suite ignores the
//! case on any other); for a `timeout` or `out-of-memory` case, `limits`: the libFuzzer limits it
//! exceeds (`{"timeout_s": 10, "rss_limit_mb": 2560}`), under which it is run again in a
//! process of its own; `also`: other programs of the same root cause, each with the signature
//! it gives (`[{"signature": "...", "steps": [...]}]`), which the case's key knows too. Steps are fixed up on load, so a hand-edited file still runs.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use super::{fixup, AdapterClass, Backends, Program, Step};
use crate::hash::fnv1a;

/// A program file with its metadata.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramFile {
    /// Case name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    /// Signature of the finding it reproduces.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signature: Option<String>,
    /// The root-cause key a stored case declares: the names of the signature's fields a
    /// finding must share to be this case's bug (`class`, `summary`, `origin`, `op`, `operands`,
    /// `role`; empty: all of them).
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub key: Vec<String>,
    /// Class of that finding.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub class: Option<String>,
    /// Where it came from.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub origin: Option<String>,
    /// When it was found (`YYYY-MM-DD`).
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub found: Option<String>,
    /// Why it fails, for a person.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub root_cause: Option<String>,
    /// Whether Burn's newest sources and issue tracker already fix or know it, and when that
    /// was checked.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub upstream: Option<String>,
    /// The wgpu adapter classes the case holds on (a wgpu case only): its trace and finding are
    /// those of these adapters, and another class is not judged against them.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub adapters: Vec<AdapterClass>,
    /// The limits a `timeout` or `out-of-memory` case exceeds.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub limits: Option<RunLimits>,
    /// A finding met under collide alone, with how often it came back there: never a case (its
    /// verdict follows the timing), but kept so that a person can look at it.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub flaky: Option<Flaky>,
    /// Other programs of the same root cause, each meeting it through another entry or dtype
    /// and so giving a signature of its own, which the case's key then knows too. The
    /// regression suite runs each and requires its signature.
    #[serde(skip_serializing_if = "Vec::is_empty", default)]
    pub also: Vec<Also>,
    /// The steps.
    pub steps: Vec<Step>,
}

/// A program that meets a stored case's root cause under another signature (the F16 scale bug
/// met through a quantized flip instead of a round trip): data, not a pattern, so the case's
/// key matches only what its file names and shows.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq)]
pub struct Also {
    /// The signature its run gives.
    pub signature: String,
    /// The steps.
    pub steps: Vec<Step>,
}

/// How often a finding came back when its program ran again under collide.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Flaky {
    /// Runs that met the finding again.
    pub hits: u32,
    /// Runs tried.
    pub tries: u32,
}

/// The limits libFuzzer runs a target's inputs under (its `fuzz/<target>.options`): an input
/// that runs past `timeout_s` seconds is a `timeout`, one whose process grows past
/// `rss_limit_mb` MiB an `out-of-memory`.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RunLimits {
    /// libFuzzer's `-timeout`, seconds.
    pub timeout_s: u64,
    /// libFuzzer's `-rss_limit_mb`, MiB.
    pub rss_limit_mb: u64,
}

/// What a user can get wrong when handing the harness a program file.
#[derive(Debug, Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("{path}: cannot read: {source}")]
    Io {
        /// The file.
        path: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// The file is not a program in the format above.
    #[error("{path}:{line}:{column}: not a program file: {message}")]
    Parse {
        /// The file.
        path: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column of the error.
        column: usize,
        /// What serde expected.
        message: String,
    },
}

impl ProgramFile {
    /// Parses a program file's text; `path` names it in errors.
    pub fn parse(text: &str, path: &str) -> Result<ProgramFile, LoadError> {
        let mut file: ProgramFile = serde_json::from_str(text).map_err(|e| LoadError::Parse {
            path: path.to_string(),
            line: e.line(),
            column: e.column(),
            message: e.to_string(),
        })?;
        fixup(&mut file.steps);
        for also in &mut file.also {
            fixup(&mut also.steps);
        }
        Ok(file)
    }

    /// Reads and parses a program file.
    pub fn load(path: &Path) -> Result<ProgramFile, LoadError> {
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(path).map_err(|source| LoadError::Io {
            path: shown.clone(),
            source,
        })?;
        Self::parse(&text, &shown)
    }

    /// The program.
    pub fn program(&self) -> Program {
        Program {
            steps: self.steps.clone(),
        }
    }

    /// Pretty JSON with one step per line, so diffs of stored cases stay readable.
    pub fn to_text(&self) -> String {
        let mut out = String::from("{\n");
        if let Ok(serde_json::Value::Object(fields)) = serde_json::to_value(self) {
            let shown = fields.iter().filter(|(k, _)| *k != "steps" && *k != "also");
            for (key, value) in shown {
                out.push_str(&format!(
                    "  {}: {},\n",
                    serde_json::Value::from(key.as_str()),
                    value
                ));
            }
        }
        // One program a line, as the steps are, its keys in the order serde gives a step's.
        if !self.also.is_empty() {
            let programs: Vec<String> = (self.also.iter())
                .map(|a| format!("    {}", serde_json::to_string(a).unwrap_or_default()))
                .collect();
            out.push_str(&format!("  \"also\": [\n{}\n  ],\n", programs.join(",\n")));
        }
        let steps: Vec<String> = self
            .steps
            .iter()
            .map(|s| format!("    {}", serde_json::to_string(s).unwrap_or_default()))
            .collect();
        out.push_str(&format!("  \"steps\": [\n{}\n  ]\n}}\n", steps.join(",\n")));
        out
    }
}

/// A finding or program read by [`Input::load`], with where it came from.
pub struct Input {
    /// The program.
    pub program: Program,
    /// Its origin, for the header of a stored case.
    pub origin: String,
    /// The class a saved finding names, if the input is such a program file.
    pub class: Option<String>,
    /// The signature a saved finding names, if the input is such a program file.
    pub signature: Option<String>,
    /// Whether the input was a program file (else a libFuzzer artifact).
    pub program_file: bool,
    /// The hit rate a flaky finding's file names: such a finding was met under collide alone.
    pub flaky: Option<Flaky>,
    /// The file's bytes as read.
    pub bytes: Vec<u8>,
}

impl Input {
    /// Reads a program file, or failing that decodes the file as a libFuzzer artifact for a
    /// session on `backends`.
    pub fn load(path: &Path, backends: Backends) -> anyhow::Result<Input> {
        use anyhow::Context as _;
        let bytes =
            std::fs::read(path).with_context(|| format!("{}: cannot read", path.display()))?;
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
                    signature: file.signature,
                    program_file: true,
                    flaky: file.flaky,
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
            program: Program::from_fuzz_bytes(&bytes, backends),
            origin,
            class: None,
            signature: None,
            program_file: false,
            flaky: None,
            bytes,
        })
    }
}
