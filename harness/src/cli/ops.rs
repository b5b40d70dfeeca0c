//! `dispatch-fuzz ops`: the op surface, from the tables and, given a coverage export, from Burn.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};
use serde::Serialize;

use dispatch_fuzz::nightly::coverage::{why_unreached, Coverage, TraitFunction};
use dispatch_fuzz::oracles::reference;
use dispatch_fuzz::program::{Kind, ALONG_DIM, BINARY, COMPARE, MODULE, SCALAR, UNARY};

/// Lists every op table entry (family, name, operand kinds) and, with `--coverage`, which of
/// the Backend trait functions (as burn-router implements them, through which capture records
/// every op) a run reached, with why each other one is left out. The export comes from
/// `ci/reach.sh` or the nightly job (`coverage/<target>.json`).
#[derive(clap::Args, Debug)]
pub struct Args {
    /// An `llvm-cov export` JSON document of a run over burn-router's sources.
    #[arg(long)]
    coverage: Option<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Entry {
    family: &'static str,
    name: &'static str,
    kinds: Vec<Kind>,
    /// `"yes"`, or why the reference oracle has no definition for it.
    reference: &'static str,
}

#[derive(Serialize)]
struct Reach {
    #[serde(flatten)]
    function: TraitFunction,
    #[serde(skip_serializing_if = "str::is_empty")]
    why_unreached: &'static str,
}

fn entries() -> Vec<Entry> {
    let mut out = Vec::new();
    let float = || vec![Kind::Float];
    out.extend(UNARY.iter().map(|s| Entry {
        family: "unary",
        name: s.name,
        kinds: s.kinds.to_vec(),
        reference: "",
    }));
    out.extend(ALONG_DIM.iter().map(|s| Entry {
        family: "along-dim",
        name: s.name,
        kinds: s.kinds.to_vec(),
        reference: "",
    }));
    for (family, table) in [("binary", BINARY), ("compare", COMPARE), ("scalar", SCALAR)] {
        out.extend(table.iter().map(|s| Entry {
            family,
            name: s.name,
            kinds: s.kinds.to_vec(),
            reference: "",
        }));
    }
    out.extend(MODULE.iter().map(|s| Entry {
        family: "module",
        name: s.name,
        kinds: float(),
        reference: "",
    }));
    for e in &mut out {
        e.reference = reference::status(e.family, e.name).map_or_else(|why| why, |()| "yes");
    }
    out
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let entries = entries();
        let reach = match &self.coverage {
            Some(path) => {
                let text = std::fs::read_to_string(path)
                    .with_context(|| format!("cannot read {}", path.display()))?;
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
                Some(functions.into_iter().map(reach_row).collect::<Vec<_>>())
            }
            None => None,
        };
        if self.json {
            let value = serde_json::json!({ "entries": entries, "backend_functions": reach });
            println!("{}", serde_json::to_string_pretty(&value)?);
            return Ok(ExitCode::SUCCESS);
        }
        let mut families: BTreeMap<&str, (usize, usize)> = BTreeMap::new();
        for e in &entries {
            let f = families.entry(e.family).or_default();
            f.0 += 1;
            f.1 += e.kinds.len();
        }
        println!(
            "op tables: {} entries, {} entry-kind pairs",
            entries.len(),
            entries.iter().map(|e| e.kinds.len()).sum::<usize>()
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
            // Per trait: recorded through capture, run on Flex, either, all.
            let mut traits: BTreeMap<&str, [usize; 4]> = BTreeMap::new();
            for Reach { function: f, .. } in &reach {
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
