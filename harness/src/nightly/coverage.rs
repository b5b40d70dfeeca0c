//! Coverage of Burn's sources from `llvm-cov export` JSON: lines and functions per file, totals
//! per area of interest (a table), and the hit count of every catalogued guard, whose lines are
//! found by its message in the source, so no line number is written down here.

use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::oracles::catalogue::{burn_file, Record};
use crate::program::Kind;

/// The areas the nightly report totals, as `(label, crate, path prefix under the crate)`: the
/// code paths dispatch and capture route every op through.
pub const AREAS: &[(&str, &str, &str)] = &[
    ("burn-router op recording", "burn-router", "src/ops/"),
    ("burn-router replay", "burn-router", "src/interpreter.rs"),
    ("burn-dispatch ops", "burn-dispatch", "src/ops/"),
    ("burn-dispatch macros", "burn-dispatch", "src/macros.rs"),
    ("burn-capture capture.rs", "burn-capture", "src/capture.rs"),
];

#[derive(Deserialize)]
struct Export {
    data: Vec<ExportData>,
}

#[derive(Deserialize)]
struct ExportData {
    files: Vec<ExportFile>,
    #[serde(default)]
    functions: Vec<ExportFunction>,
}

#[derive(Deserialize)]
struct ExportFunction {
    name: String,
    count: u64,
    #[serde(default)]
    filenames: Vec<String>,
}

/// Why a Backend trait function no program reaches is left out, by the first pattern its
/// `Trait::function` name holds (a pattern ending in `$` must be the whole name, so a reason
/// given for one function never claims another that starts like it): what a maintainer reads
/// next to each unreached function.
pub const WHY_UNREACHED: &[(&str, &str)] = &[
    (
        "QTensorOps::q_gather$",
        "quantized gather: burn-dispatch does not forward q_gather, so the trait's default body \
         dequantizes, gathers as float (float_gather) and quantizes again; the quantized_gather \
         entry reaches those",
    ),
    (
        "QTensorOps::q_expand$",
        "quantized expand: `Tensor::expand` turns a quantized tensor into a float (into_float) \
         before it expands, so no function of Burn's Tensor API calls q_expand",
    ),
    (
        "QTensorOps::",
        "quantized tensors: a quantized value lives inside one step (the quantized table's \
         entries quantize with the step's scheme, run layout ops, a read, a transaction or a \
         float op, and dequantize; the plain tables' with Burn's default scheme), so a q_* op \
         no entry calls, and every quantized move, capture boundary and replay input, is not \
         reached",
    ),
    (
        "_backward",
        "a backward op: only autodiff calls it (the table calls the five Burn exposes as \
         functions directly); capture tensors cannot be autodiff, and on Flex it either takes the \
         trait's default body (outside Flex's sources) or no backward step's graph held its op yet",
    ),
    (
        "attention_with_logsumexp",
        "attention with log-sum-exp: no function of Burn's Tensor API calls it",
    ),
    (
        "::float_into_int",
        "casts run through `cast` and `int()`/`float()`: see the reached ones",
    ),
    (
        "TransactionOps::",
        "transactions: only the transaction step reaches it (no table entry), and the measured run \
         ran none",
    ),
    (
        "ModuleOps::linear$",
        "linear: burn-dispatch does not forward it to the backend (\"TODO: linear ops\" in its \
         ops/module.rs), so `module::linear` runs the trait's default body, matmul and add",
    ),
    (
        "FloatTensorOps::float_powi$",
        "float powi: a float `Tensor::powi` runs `float_powf`, so no function of Burn's Tensor \
         API calls it",
    ),
    (
        "CollectiveOps::",
        "collective ops: they need a device group (burn-group), which this harness does not build",
    ),
    ("", "no table entry reaches it yet"),
];

/// The reason for a function a table entry calls by name (a module function of Burn's API is
/// named as the trait function it dispatches to) that the measured run still did not reach.
const ENTRY_NOT_RUN: &str =
    "a table entry calls it, but the measured run did not reach it (a longer run may)";

/// The reason [`WHY_UNREACHED`] gives for `function`.
pub fn why_unreached(function: &TraitFunction) -> &'static str {
    let full = format!("{}::{}", function.r#trait, function.name);
    let (pattern, why) = WHY_UNREACHED
        .iter()
        .find(|(pattern, _)| match pattern.strip_suffix('$') {
            Some(name) => full == name,
            None => full.contains(pattern),
        })
        .copied()
        .unwrap_or(("", ""));
    // By the trait function's own name (a module function of the API), or by the Tensor API's
    // name for it (`int_argtopk` is `argtopk` on an int tensor) in an entry taking that kind.
    let api = [
        ("float_", Kind::Float),
        ("int_", Kind::Int),
        ("bool_", Kind::Bool),
    ]
    .into_iter()
    .find_map(|(prefix, kind)| Some((function.name.strip_prefix(prefix)?, kind)));
    let called = || {
        crate::program::table_calls().any(|(call, kinds)| {
            crate::program::mentions_ident(call, &function.name)
                || api.is_some_and(|(name, kind)| {
                    kinds.contains(&kind) && crate::program::mentions_ident(call, name)
                })
        })
    };
    if pattern.is_empty() && called() {
        ENTRY_NOT_RUN
    } else {
        why
    }
}

/// A Backend trait function as burn-router implements it, and how often it ran there and in
/// Flex's own impl.
#[derive(Serialize, Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TraitFunction {
    /// The trait (`FloatTensorOps`, `IntTensorOps`, `ModuleOps`, ...).
    pub r#trait: String,
    /// The function (`float_add`).
    pub name: String,
    /// How often burn-router's impl ran (the largest count among its instances): the op
    /// recorded by capture.
    pub count: u64,
    /// How often Flex's own impl ran (the op executed eagerly on Flex, autodiff's backward
    /// ops included); 0 also where Flex takes the trait's default body, which lives outside
    /// Flex's sources.
    pub on_flex: u64,
}

impl TraitFunction {
    /// Whether a program reached it on either backend.
    pub fn reached(&self) -> bool {
        self.count > 0 || self.on_flex > 0
    }
}

#[derive(Deserialize)]
struct ExportFile {
    filename: String,
    /// `[line, col, count, has_count, is_region_entry, (is_gap_region)]`.
    #[serde(default)]
    segments: Vec<Vec<serde_json::Value>>,
    summary: Summary,
}

#[derive(Deserialize)]
struct Summary {
    lines: Count,
    functions: Count,
}

#[derive(Deserialize)]
struct Count {
    count: u64,
    covered: u64,
}

/// One segment of a file's coverage mapping.
#[derive(Clone, Copy, Debug)]
struct Segment {
    line: u32,
    count: u64,
    has_count: bool,
    region_entry: bool,
}

/// Line and function coverage of one source file, or of an area's files together.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct FileCoverage {
    /// `crate/src/...`, or an area's label.
    pub file: String,
    /// Lines with code.
    pub lines: u64,
    /// Of them, run at least once.
    pub lines_covered: u64,
    /// Functions.
    pub functions: u64,
    /// Of them, run at least once.
    pub functions_covered: u64,
}

impl FileCoverage {
    /// Percent of lines run.
    pub fn line_percent(&self) -> f64 {
        percent(self.lines_covered, self.lines)
    }

    /// Percent of functions run.
    pub fn function_percent(&self) -> f64 {
        percent(self.functions_covered, self.functions)
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    if whole == 0 {
        0.0
    } else {
        100.0 * part as f64 / whole as f64
    }
}

/// How often a catalogued guard's panic line ran.
#[derive(Serialize, Clone, Debug, PartialEq)]
pub struct GuardHits {
    /// The record's class.
    pub class: String,
    /// `crate/src/...`.
    pub file: String,
    /// The line holding the record's message, `None` when no line does (a stale record).
    pub line: Option<u32>,
    /// Its execution count (`None`: not code, or not found).
    pub hits: Option<u64>,
}

/// A parsed export.
pub struct Coverage {
    files: Vec<(String, ExportFile, Vec<Segment>)>,
    functions: Vec<ExportFunction>,
}

impl Coverage {
    /// Parses `llvm-cov export` JSON (format 2 or 3).
    pub fn parse(text: &str) -> Result<Coverage> {
        let export: Export =
            serde_json::from_str(text).context("not an llvm-cov export JSON document")?;
        let (files, functions): (Vec<_>, Vec<_>) = export
            .data
            .into_iter()
            .map(|d| (d.files, d.functions))
            .unzip();
        let functions = functions.into_iter().flatten().collect();
        let files = files
            .into_iter()
            .flatten()
            .filter_map(|f| {
                let short = burn_file(&f.filename)?;
                let segments = f.segments.iter().filter_map(|s| segment(s)).collect();
                Some((short, f, segments))
            })
            .collect();
        Ok(Coverage { files, functions })
    }

    /// The Backend trait functions `burn-router`'s `BackendRouter` implements (its `ops/*.rs`,
    /// through which the capture backend records every op), each once, sorted by trait and
    /// name: what programs reach of the op surface. burn-dispatch's own impls are generated by
    /// a proc-macro attribute, whose coverage collapses onto the attribute's line, so they
    /// cannot be counted one by one.
    pub fn router_functions(&self) -> Vec<TraitFunction> {
        let on_flex = self.trait_functions("burn-flex/src/");
        self.trait_functions("burn-router/src/ops/")
            .into_iter()
            .map(|((r#trait, name), count)| TraitFunction {
                on_flex: on_flex
                    .get(&(r#trait.clone(), name.clone()))
                    .copied()
                    .unwrap_or(0),
                r#trait,
                name,
                count,
            })
            .collect()
    }

    /// The trait functions implemented in files under `prefix` (`crate/src/...`), each with
    /// the largest count among its instances.
    fn trait_functions(&self, prefix: &str) -> std::collections::BTreeMap<(String, String), u64> {
        let mut found: std::collections::BTreeMap<(String, String), u64> = Default::default();
        for f in &self.functions {
            let under = f
                .filenames
                .first()
                .and_then(|file| burn_file(file))
                .is_some_and(|file| file.starts_with(prefix));
            if !under {
                continue;
            }
            if let Some((r#trait, name)) = trait_function(&f.name) {
                let count = found.entry((r#trait, name)).or_default();
                *count = (*count).max(f.count);
            }
        }
        found
    }

    /// Every file, by its `crate/src/...` path.
    pub fn files(&self) -> Vec<FileCoverage> {
        self.files
            .iter()
            .map(|(short, f, _)| FileCoverage {
                file: short.clone(),
                lines: f.summary.lines.count,
                lines_covered: f.summary.lines.covered,
                functions: f.summary.functions.count,
                functions_covered: f.summary.functions.covered,
            })
            .collect()
    }

    /// One total per [`AREAS`] entry that has files in the export.
    pub fn areas(&self) -> Vec<FileCoverage> {
        let files = self.files();
        AREAS
            .iter()
            .filter_map(|(label, krate, prefix)| {
                let wanted = format!("{krate}/{prefix}");
                let mut total = FileCoverage {
                    file: label.to_string(),
                    lines: 0,
                    lines_covered: 0,
                    functions: 0,
                    functions_covered: 0,
                };
                let mut any = false;
                for f in files.iter().filter(|f| f.file.starts_with(&wanted)) {
                    any = true;
                    total.lines += f.lines;
                    total.lines_covered += f.lines_covered;
                    total.functions += f.functions;
                    total.functions_covered += f.functions_covered;
                }
                any.then_some(total)
            })
            .collect()
    }

    /// The execution count of `line` in `file` (`crate/src/...`) as llvm-cov computes it: the
    /// largest of the count of the region the line starts in and those of the regions starting
    /// on it (`None`: the line is not code).
    pub fn line_hits(&self, file: &str, line: u32) -> Option<u64> {
        let (_, _, segments) = self.files.iter().find(|(short, _, _)| short == file)?;
        let wrapped = segments
            .iter()
            .rev()
            .find(|s| s.line < line)
            .filter(|s| s.has_count)
            .map(|s| s.count);
        let starting = segments
            .iter()
            .filter(|s| s.line == line && s.has_count && s.region_entry)
            .map(|s| s.count)
            .max();
        match (wrapped, starting) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }

    /// The hits of every catalogued panic guard whose file the export holds: each line of the
    /// file (read from where llvm-cov found it) holding the record's message is one row.
    pub fn guard_hits(&self, records: &[Record]) -> Vec<GuardHits> {
        let mut rows = Vec::new();
        for record in records
            .iter()
            .filter(|r| !r.is_execution_error() && !r.explains_failures())
        {
            let Some(file) = burn_file(&record.file_path) else {
                continue;
            };
            let Some((_, export, _)) = self.files.iter().find(|(short, _, _)| *short == file)
            else {
                continue;
            };
            let lines = message_lines(Path::new(&export.filename), &record.message_pattern);
            if lines.is_empty() {
                rows.push(GuardHits {
                    class: record.background_tag.clone(),
                    file: file.clone(),
                    line: None,
                    hits: None,
                });
            }
            for line in lines {
                rows.push(GuardHits {
                    class: record.background_tag.clone(),
                    file: file.clone(),
                    line: Some(line),
                    hits: self.line_hits(&file, line),
                });
            }
        }
        rows
    }
}

/// `(trait, function)` of a mangled `<Dispatch as some::Trait>::function` symbol; `None` for
/// closures, inherent functions and anything else.
fn trait_function(mangled: &str) -> Option<(String, String)> {
    let name = format!("{:#}", rustc_demangle::demangle(mangled));
    if name.contains("{closure") {
        return None;
    }
    let (path, function) = name.rsplit_once(">::")?;
    let (_, r#trait) = path.rsplit_once(" as ")?;
    // `burn_backend::..::FloatTensorOps<burn_dispatch::Dispatch>`: drop the arguments first.
    let r#trait = r#trait.split('<').next()?.rsplit("::").next()?;
    Some((r#trait.to_string(), function.to_string()))
}

fn segment(values: &[serde_json::Value]) -> Option<Segment> {
    Some(Segment {
        line: u32::try_from(values.first()?.as_u64()?).ok()?,
        count: values.get(2)?.as_u64()?,
        has_count: values.get(3)?.as_bool()?,
        region_entry: values.get(4)?.as_bool()?,
    })
}

/// The 1-based lines of `source` holding the longest literal piece of `pattern` (`{}` is a
/// wildcard) inside a string literal.
fn message_lines(source: &Path, pattern: &str) -> Vec<u32> {
    let Some(literal) = pattern
        .split("{}")
        .map(str::trim)
        .max_by_key(|piece| piece.len())
        .filter(|piece| !piece.is_empty())
    else {
        return Vec::new();
    };
    let Ok(text) = std::fs::read_to_string(source) else {
        return Vec::new();
    };
    text.lines()
        .zip(1..)
        .filter(|(line, _)| line.contains('"') && line.contains(literal))
        .map(|(_, number)| number)
        .collect()
}

#[cfg(test)]
mod tests;
