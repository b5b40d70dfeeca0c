//! `dispatch-fuzz ops`: the op surface, from the tables and, given a coverage export, from Burn.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

use dispatch_fuzz::guide::tally;
use dispatch_fuzz::nightly::coverage::{why_unreached, Coverage, TraitFunction};
use dispatch_fuzz::oracles::reference;
use dispatch_fuzz::program::{self, Family, Kind, ResultDtype};

/// Lists every op entry (family, name, operand kinds: the tables' and, as `fixed`, the ops
/// outside them) and, with `--coverage`, which of
/// the Backend trait functions (as burn-router implements them, through which capture records
/// every op) a run reached, with why each other one is left out. The export comes from
/// `ci/reach.sh` or the nightly job (`coverage/<target>.json`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// An `llvm-cov export` JSON document of a run over burn-router's sources.
    #[arg(long)]
    coverage: Option<PathBuf>,
    /// A session's judgement counts: the JSON summary `fuzz --json` prints. Each entry then
    /// lists what each oracle judged of it, per operand kind and context.
    #[arg(long)]
    judged: Option<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Entry {
    family: Family,
    name: &'static str,
    kinds: Vec<Kind>,
    /// `"yes"`, or why the reference oracle has no definition for it.
    reference: &'static str,
    /// The dtype its row states for the result: `operand`, a dtype's name, or `default` (the
    /// device's default for the result's kind).
    result_dtype: &'static str,
    /// How the reference bounds its float error on Flex (`oracles/reference/bound.rs`).
    bound: String,
    /// With `--judged`: per `oracle context kind`, how often the session judged it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    judged: BTreeMap<String, u64>,
    /// With `--judged`: per dtype its first operand held, how often some oracle judged it.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    dtypes: BTreeMap<String, u64>,
}

#[derive(Serialize)]
struct Reach {
    #[serde(flatten)]
    function: TraitFunction,
    #[serde(skip_serializing_if = "str::is_empty")]
    why_unreached: &'static str,
}

fn entries() -> Vec<Entry> {
    program::entries()
        .into_iter()
        .map(|(e, kinds)| Entry {
            family: e.family,
            name: e.name,
            kinds: kinds.to_vec(),
            reference: reference::status(e.family, e.name).map_or_else(|why| why, |()| "yes"),
            result_dtype: match program::op_of(e, &[0, 0, 0], [0; 4]).map(|op| op.result_dtype()) {
                Some(ResultDtype::Operand) => "operand",
                Some(ResultDtype::Named(dtype)) => dtype.spec().name,
                Some(ResultDtype::Default) | None => "default",
            },
            bound: program::op_of(e, &[0, 0, 0], [0; 4])
                .map_or_else(|| "no op".to_string(), |op| reference::bound::describe(&op)),
            judged: BTreeMap::new(),
            dtypes: BTreeMap::new(),
        })
        .collect()
}

/// One row of `fuzz --json`'s `judgements`.
#[derive(serde::Deserialize)]
struct Judged {
    key: JudgedKey,
    count: u64,
}

#[derive(serde::Deserialize)]
struct JudgedKey {
    entry: JudgedEntry,
    kind: Kind,
    oracle: String,
    context: String,
}

/// One row of `fuzz --json`'s `dtype_judgements`.
#[derive(serde::Deserialize)]
struct DtypeJudged {
    key: DtypeJudgedKey,
    count: u64,
}

#[derive(serde::Deserialize)]
struct DtypeJudgedKey {
    entry: JudgedEntry,
    dtype: String,
}

#[derive(serde::Deserialize)]
struct JudgedEntry {
    family: String,
    name: String,
}

/// Adds a session's judgement counts (`fuzz --json`'s summary line) to the entries; returns
/// the rows that name no entry here (a summary from another version of the tables).
fn add_judged(entries: &mut [Entry], path: &std::path::Path) -> Result<usize> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let line = text
        .lines()
        .rev()
        .find(|l| l.trim_start().starts_with('{'))
        .with_context(|| format!("{} holds no JSON summary line", path.display()))?;
    #[derive(serde::Deserialize)]
    struct Summary {
        judgements: Vec<Judged>,
        /// Absent from the summaries of sessions before judgements were counted per dtype.
        #[serde(default)]
        dtype_judgements: Vec<DtypeJudged>,
    }
    let summary: Summary = serde_json::from_str(line).with_context(|| {
        format!(
            "{}: not a `fuzz --json` summary with judgements",
            path.display()
        )
    })?;
    let mut unknown = 0;
    for row in summary.judgements {
        let k = &row.key;
        match entries
            .iter_mut()
            .find(|e| e.family.name() == k.entry.family && e.name == k.entry.name)
        {
            Some(e) => {
                let kind = format!("{:?}", k.kind).to_lowercase();
                *e.judged
                    .entry(format!("{} {} {kind}", k.oracle, k.context))
                    .or_default() += row.count;
            }
            None => unknown += 1,
        }
    }
    for row in summary.dtype_judgements {
        let k = &row.key;
        if let Some(e) = entries
            .iter_mut()
            .find(|e| e.family.name() == k.entry.family && e.name == k.entry.name)
        {
            *e.dtypes.entry(k.dtype.clone()).or_default() += row.count;
        }
    }
    Ok(unknown)
}

/// Per dtype a session's judgements reached: the entries over its kind judged over it, and
/// those never judged over it (each an op whose bugs in that dtype no oracle could see).
fn print_dtypes(entries: &[Entry]) {
    let mut met: Vec<&str> = entries
        .iter()
        .flat_map(|e| e.dtypes.keys().map(String::as_str))
        .collect();
    met.sort_by_key(|d| tally::dtype_order(d));
    met.dedup();
    if met.is_empty() {
        return;
    }
    println!("judged per first operand's dtype (entries over its kind):");
    for dtype in met {
        let kind = tally::dtype_kind(dtype);
        let over: Vec<&Entry> = entries.iter().filter(|e| e.kinds.contains(&kind)).collect();
        let never: Vec<String> = over
            .iter()
            .filter(|e| !e.dtypes.contains_key(dtype))
            .map(|e| format!("{} {}", e.family, e.name))
            .collect();
        println!(
            "  {dtype}: {} of {} judged; never: {}",
            over.len() - never.len(),
            over.len(),
            if never.is_empty() {
                "-".to_string()
            } else {
                never.join(", ")
            }
        );
    }
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let mut entries = entries();
        let unknown = match &self.judged {
            Some(path) => Some(add_judged(&mut entries, path)?),
            None => None,
        };
        let reach = match &self.coverage {
            Some(path) => Some(reach_rows(path)?),
            None => None,
        };
        if self.json {
            let value = serde_json::json!({ "entries": entries, "backend_functions": reach });
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(ExitCode::SUCCESS);
        }
        let mut families: BTreeMap<Family, (usize, usize)> = BTreeMap::new();
        for e in &entries {
            let f = families.entry(e.family).or_default();
            f.0 += 1;
            f.1 += e.kinds.len();
        }
        println!(
            "op entries: {} ({} in the tables, the rest fixed ops), {} entry-kind pairs",
            entries.len(),
            entries.iter().filter(|e| e.family != Family::Fixed).count(),
            entries.iter().map(|e| e.kinds.len()).sum::<usize>()
        );
        let named = |pick: &dyn Fn(&str) -> bool| -> Vec<String> {
            entries
                .iter()
                .filter(|e| pick(e.result_dtype))
                .map(|e| match e.result_dtype {
                    "default" => format!("{} {}", e.family, e.name),
                    dtype => format!("{} {} ({dtype})", e.family, e.name),
                })
                .collect()
        };
        let cast = named(&|d| d != "operand" && d != "default");
        let default = named(&|d| d == "default");
        println!(
            "result dtype (the dtype contract holds every op step to it): {} entries keep their \
             operand's; {} name one: {}; {} leave it to the device's default for the result's \
             kind: {}",
            entries.len() - cast.len() - default.len(),
            cast.len(),
            cast.join(", "),
            default.len(),
            default.join(", ")
        );
        let without: Vec<&Entry> = entries.iter().filter(|e| e.reference != "yes").collect();
        println!(
            "reference: {} of {} entries have a definition the reference oracle judges by; \
             without one:",
            entries.len() - without.len(),
            entries.len()
        );
        for e in &without {
            println!("  {} {}: {}", e.family, e.name, e.reference);
        }
        if let Some(unknown) = unknown {
            let never: Vec<String> = entries
                .iter()
                .filter(|e| e.judged.is_empty())
                .map(|e| format!("{} {}", e.family, e.name))
                .collect();
            println!(
                "judged in the session: {} of {} entries by some oracle ({unknown} rows named \
                 no entry here); never judged: {}",
                entries.len() - never.len(),
                entries.len(),
                never.join(", ")
            );
            print_dtypes(&entries);
        }
        for (family, (n, pairs)) in &families {
            let names: Vec<&str> = entries
                .iter()
                .filter(|e| e.family == *family)
                .map(|e| e.name)
                .collect();
            println!(
                "  {family:<10} {n:>3} entries {pairs:>3} pairs: {}",
                names.join(" ")
            );
        }
        if let Some(reach) = reach {
            print_reach(&reach);
        }
        Ok(ExitCode::SUCCESS)
    }
}

fn reach_row(function: TraitFunction) -> Reach {
    let why = if function.reached() {
        ""
    } else {
        why_unreached(&function)
    };
    Reach {
        function,
        why_unreached: why,
    }
}

/// The rows of the backend functions a coverage export at `path` counts (an export over
/// burn-router's sources, as `ci/reach.sh` makes).
fn reach_rows(path: &std::path::Path) -> Result<Vec<Reach>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("cannot read {}", path.display()))?;
    let functions = Coverage::parse(&text)
        .with_context(|| format!("cannot read {}", path.display()))?
        .router_functions();
    if functions.is_empty() {
        anyhow::bail!(
            "{} holds no burn-router ops function: export the run over \
             burn-router's sources (ci/reach.sh does)",
            path.display()
        );
    }
    Ok(functions.into_iter().map(reach_row).collect())
}

/// The backend trait functions reached, per trait (recorded through capture, run on Flex,
/// either, all), and those not reached by reason.
fn print_reach(reach: &[Reach]) {
    // Per trait: recorded through capture, run on Flex, either, all.
    let mut traits: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
    for Reach { function: f, .. } in reach {
        let t = traits.entry(&f.r#trait).or_default();
        t[0] += usize::from(f.count > 0);
        t[1] += usize::from(f.on_flex > 0);
        t[2] += usize::from(f.reached());
        t[3] += 1;
    }
    let total = |k: usize| traits.values().map(|t| t[k]).sum::<usize>();
    println!(
        "\nBackend trait functions ({} that burn-router implements): {} reached through \
         capture (burn-router records them), {} run by Flex's own impls, {} either way",
        reach.len(),
        total(0),
        total(1),
        total(2)
    );
    println!(
        "  {:<22} {:>7} {:>7} {:>7}",
        "trait", "capture", "flex", "either"
    );
    for (name, [capture, flex, either, all]) in &traits {
        println!("  {name:<22} {capture:>7} {flex:>7} {either:>4} of {all}");
    }
    let mut by_reason: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for r in reach.iter().filter(|r| !r.function.reached()) {
        by_reason
            .entry(r.why_unreached)
            .or_default()
            .push(format!("{}::{}", r.function.r#trait, r.function.name));
    }
    println!("\nnot reached, by reason:");
    for (why, names) in by_reason {
        println!("  {why} ({}):\n    {}", names.len(), names.join(" "));
    }
}
