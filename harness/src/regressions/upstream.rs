//! The table of root causes (`regressions/upstream/bugs.json`): which stored cases each grouped
//! report stands for, checked against the store so every reported case is in exactly one.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};

use super::Case;
use crate::report::{Bug, OWNERS};

/// Where the grouped reports and their table live in a store.
pub fn upstream_dir(store: &Path) -> PathBuf {
    store.join("upstream")
}

/// Where a root cause names a known divergence's reproducer instead of a regression case: as
/// `divergences/<name>`.
pub const DIVERGENCE_PREFIX: &str = "divergences/";

/// The cases a root cause may name: `cases` (the store's regression cases) and the known
/// divergences' reproducers of `store`, each named [`DIVERGENCE_PREFIX`]`<name>`.
pub fn reportable(store: &Path, cases: &[Case]) -> Result<Vec<Case>> {
    let mut all = cases.to_vec();
    for mut case in super::load_all(&store.join("divergences"))? {
        case.name = format!("{DIVERGENCE_PREFIX}{}", case.name);
        all.push(case);
    }
    Ok(all)
}

/// The root causes of `store`'s table, checked against `cases` (the store's cases): each names
/// an owning repository and at least one case, each case it names is stored and reported (not a
/// guard's or a limitation's; or a known divergence's reproducer, one Burn's contract says is a
/// bug), and every reported case is in exactly one root cause.
pub fn load_bugs(store: &Path, cases: &[Case]) -> Result<Vec<Bug>> {
    let divergences = reportable(store, &[])?;
    let path = upstream_dir(store).join("bugs.json");
    let text = std::fs::read_to_string(&path)
        .with_context(|| format!("cannot read {}", path.display()))?;
    let bugs: Vec<Bug> =
        serde_json::from_str(&text).with_context(|| format!("{}: not a table", path.display()))?;
    let mut owner_of: BTreeMap<&str, &str> = BTreeMap::new();
    for bug in &bugs {
        if !OWNERS.contains(&bug.repo.as_str()) {
            bail!(
                "{}: {} is owned by {:?}, not one of {OWNERS:?}",
                path.display(),
                bug.id,
                bug.repo
            );
        }
        if bug.cases.is_empty() {
            bail!("{}: {} covers no case", path.display(), bug.id);
        }
        if let Some(show) = bug.show.as_ref().filter(|s| !bug.cases.contains(s)) {
            bail!(
                "{}: {} shows {show}, not one of its cases",
                path.display(),
                bug.id
            );
        }
        for name in &bug.cases {
            // A known divergence's reproducer is reported by choice: only regression cases
            // must each be in a root cause, and pin no guard.
            let divergence = name.starts_with(DIVERGENCE_PREFIX);
            let store = if divergence { &divergences[..] } else { cases };
            let Some(case) = store.iter().find(|c| &c.name == name) else {
                bail!(
                    "{}: {} names {name}, which is not stored",
                    path.display(),
                    bug.id
                );
            };
            if !divergence && (case.pins_guard() || case.pins_limitation()) {
                bail!(
                    "{}: {} names {name}, which pins a guard or a limitation",
                    path.display(),
                    bug.id
                );
            }
            if let Some(other) = owner_of.insert(name, &bug.id) {
                bail!(
                    "{}: {name} is in both {other} and {}",
                    path.display(),
                    bug.id
                );
            }
        }
    }
    let loose: Vec<&str> = cases
        .iter()
        .filter(|c| !c.pins_guard() && !c.pins_limitation())
        .map(|c| c.name.as_str())
        .filter(|n| !owner_of.contains_key(n))
        .collect();
    if !loose.is_empty() {
        bail!(
            "{}: the reported cases {loose:?} are in no root cause (add each to its bug's \
             `cases`, or a new bug)",
            path.display()
        );
    }
    Ok(bugs)
}

/// The root cause of `store`'s table that covers case `name`, if the table has one (read as it
/// is: `load_bugs` is what checks it).
pub fn bug_of(store: &Path, name: &str) -> Option<Bug> {
    let text = std::fs::read_to_string(upstream_dir(store).join("bugs.json")).ok()?;
    let bugs: Vec<Bug> = serde_json::from_str(&text).ok()?;
    bugs.into_iter().find(|b| b.cases.iter().any(|c| c == name))
}

/// The case a root cause's report shows: the one it names to show, else its fewest steps, then
/// its first in the table.
pub fn smallest<'a>(bug: &Bug, cases: &'a [Case]) -> Option<&'a Case> {
    if let Some(name) = &bug.show {
        return cases.iter().find(|c| &c.name == name);
    }
    bug.cases
        .iter()
        .filter_map(|n| cases.iter().find(|c| &c.name == n))
        .min_by_key(|c| c.file.steps.len())
}
