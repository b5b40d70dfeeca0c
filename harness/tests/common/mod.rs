//! Helpers shared by the integration tests: paths into the repository and program loading.

#![allow(dead_code)]

use std::path::PathBuf;

use dispatch_fuzz::program::Program;
use dispatch_fuzz::program::ProgramFile;

/// The repository root (the workspace above `harness/`).
pub fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A program from `corpus/dispatch_ops/programs/NAME.json`.
pub fn corpus_program(name: &str) -> Program {
    let path = repo().join(format!("corpus/dispatch_ops/programs/{name}.json"));
    ProgramFile::load(&path)
        .unwrap_or_else(|e| panic!("corpus program {name} does not load: {e}"))
        .program()
}

/// A program from inline JSON steps.
pub fn program(json: &str) -> Program {
    ProgramFile::parse(&format!("{{\"steps\": {json}}}"), "<inline>")
        .expect("inline program parses")
        .program()
}
