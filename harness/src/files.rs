//! Program files: the text form of a test case on disk.
//!
//! # Format
//! A JSON object. `steps` is required: the program's steps in the serde form of
//! [`Step`](crate::program::Step), e.g. `{"create": {"out": 0, "kind": "float", "shape": [2],
//! "fill": "arange", "device": "flex"}}`. Every other key is optional metadata a person or a tool
//! wrote down and the loader keeps: `name`, `signature`, `class`, `origin` (where the case came
//! from: a fuzz session's seed and input, an artifact hash, or `hand-written`), `found` (date)
//! and `root_cause` (a paragraph). Steps are fixed up on load, so a hand-edited file still runs.

use std::path::Path;

use serde::{Deserialize, Serialize};
use thiserror::Error;

use crate::program::{fixup, Program, Step};

/// A program file with its metadata.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq)]
pub struct ProgramFile {
    /// Case name.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub name: Option<String>,
    /// Signature of the finding it reproduces.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub signature: Option<String>,
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
    /// The steps.
    pub steps: Vec<Step>,
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
            for (key, value) in fields.iter().filter(|(k, _)| *k != "steps") {
                out.push_str(&format!(
                    "  {}: {},\n",
                    serde_json::Value::from(key.as_str()),
                    value
                ));
            }
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
