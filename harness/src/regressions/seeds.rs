//! The fuzzer seeds stored programs make: every case and known-divergence reproducer, and the
//! corpus's class inputs, each encoded to the fuzz target's bytes.

use std::path::Path;

use anyhow::{Context, Result};

use super::program_files;
use crate::program::ProgramFile;

/// The fuzzer seeds every stored program makes: `(file name, bytes)` for each case in `dir` and
/// each known-divergence reproducer in `dir/divergences` (`divergence-<name>`), sorted by name.
/// Each night then starts from every known bug. Programs with wgpu steps decode to their Flex variant unless the fuzz target runs with wgpu enabled.
pub fn seed_inputs(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut seeds = Vec::new();
    for (sub, prefix) in [("", ""), ("divergences", "divergence-")] {
        let dir = dir.join(sub);
        if !dir.is_dir() {
            continue;
        }
        for (stem, path) in program_files(&dir)? {
            seeds.push((format!("{prefix}{stem}"), encoded(&path)?));
        }
    }
    seeds.sort();
    Ok(seeds)
}

/// The corpus inputs that reach each catalogued class, from their program files in `dir`
/// (`corpus/dispatch_ops/classes/<class>.json`): each encoded to the fuzz target's bytes and
/// named `<class>-<fnv1a of the bytes>`, as `fuzz --corpus-out` names them. The programs are
/// what is stored: the byte format changes with the op tables, and the bytes are remade from
/// them (`seed-corpus`).
pub fn class_seed_inputs(dir: &Path) -> Result<Vec<(String, Vec<u8>)>> {
    let mut seeds = Vec::new();
    for (class, path) in program_files(dir)? {
        let bytes = encoded(&path)?;
        let hash = crate::hash::fnv1a(&[&bytes]);
        seeds.push((format!("{class}-{hash:016x}"), bytes));
    }
    seeds.sort();
    Ok(seeds)
}

/// The program file at `path` encoded to the fuzz target's bytes.
fn encoded(path: &Path) -> Result<Vec<u8>> {
    ProgramFile::load(path)?
        .program()
        .to_fuzz_bytes()
        .with_context(|| format!("{}: cannot encode", path.display()))
}

/// Whether `name` is a class input's file name (`<class>-<16 hex digits>`).
pub fn is_class_seed(name: &str) -> bool {
    name.rsplit_once('-')
        .is_some_and(|(_, h)| h.len() == 16 && h.bytes().all(|b| b.is_ascii_hexdigit()))
}
