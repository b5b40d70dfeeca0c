//! `dispatch-fuzz report`: a regression case as a Markdown issue body for Burn's tracker.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::config;
use dispatch_fuzz::regressions::{
    each_in_suite_order, load_all, load_bugs, load_named, reportable, run_pinned, smallest,
    upstream_dir, Case,
};
use dispatch_fuzz::report::{upstream_index, upstream_report, IssueParts};

/// Write the Markdown issue body of stored cases (title, what happens vs what should, the
/// reproducer, environment, minimized program, root cause, how it was found), or with
/// `--upstream` one report per root cause (`<regressions>/upstream/bugs.json`) and their index.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Case names (file stems in the store); none: every case.
    cases: Vec<String>,
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    regressions: PathBuf,
    /// Write each report to `<out>/<case>.md` instead of printing it.
    #[arg(long)]
    out: Option<PathBuf>,
    /// Report the known divergences' reproducers (`<regressions>/divergences/`) instead: each
    /// run with no divergence acknowledged, so the report shows the model's mismatch.
    #[arg(long, conflicts_with = "upstream")]
    divergences: bool,
    /// Write one report per root cause of `<regressions>/upstream/bugs.json` to
    /// `<regressions>/upstream/<bug>.md` (or `--out`), shown through its smallest case, with
    /// their index `README.md`; reports of root causes no longer in the table are removed.
    #[arg(long, conflicts_with = "cases")]
    upstream: bool,
    /// Print the named cases' report parts as JSON lines (what `--upstream` asks a process
    /// pinned to another graphics API for).
    #[arg(long, hide = true)]
    parts_json: bool,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        if self.upstream {
            return self.upstream();
        }
        if self.parts_json {
            for case in load_named(&self.regressions, &self.cases)? {
                let parts = case.issue_parts()?;
                println!("{}", serde_json::to_string(&parts)?);
            }
            return Ok(ExitCode::SUCCESS);
        }
        let store = if self.divergences {
            self.regressions.join("divergences")
        } else {
            self.regressions.clone()
        };
        let chosen = load_named(&store, &self.cases)?;
        let regressions = self.regressions.display().to_string();
        let bodies = each_in_suite_order(
            &chosen,
            |case| {
                let body = if self.divergences {
                    Some(case.divergence_issue()?)
                } else {
                    case.issue()?
                };
                Ok((case.name.clone(), body))
            },
            // A case of another graphics API than this process's adapter is reported by a run
            // pinned to it (which prints nothing for a case with nothing to report).
            |case, api| {
                let mut args = vec!["report", case.name.as_str(), "--regressions", &regressions];
                if self.divergences {
                    args.push("--divergences");
                }
                let body = run_pinned(
                    config::get().backends.adapter.pinned_to(api),
                    config::get().wgpu_required,
                    &args,
                )?;
                Ok((case.name.clone(), (!body.is_empty()).then_some(body)))
            },
        )?;
        for (name, body) in bodies {
            let Some(body) = body else {
                eprintln!(
                    "{}: pins an intended guard or a limitation, nothing to report",
                    name
                );
                continue;
            };
            match &self.out {
                Some(dir) => {
                    std::fs::create_dir_all(dir)
                        .with_context(|| format!("cannot create {}", dir.display()))?;
                    let path = dir.join(format!("{}.md", name));
                    std::fs::write(&path, body)
                        .with_context(|| format!("cannot write {}", path.display()))?;
                    println!("{}", path.display());
                }
                None => print!("{body}"),
            }
        }
        Ok(ExitCode::SUCCESS)
    }

    /// `--upstream`: one report per root cause, and the index.
    fn upstream(&self) -> Result<ExitCode> {
        let cases = load_all(&self.regressions)?;
        let bugs = load_bugs(&self.regressions, &cases)?;
        let cases = reportable(&self.regressions, &cases)?;
        // One per bug, in the table's order.
        let shown: Vec<Case> = bugs
            .iter()
            .map(|b| {
                smallest(b, &cases)
                    .cloned()
                    .context("a bug names a stored case")
            })
            .collect::<Result<_>>()?;
        let regressions = self.regressions.display().to_string();
        let parts = each_in_suite_order(
            &shown,
            |case| Ok((case.name.clone(), case.issue_parts()?)),
            |case, api| {
                let args = ["report", case.name.as_str(), "--regressions", &regressions];
                let line = run_pinned(
                    config::get().backends.adapter.pinned_to(api),
                    config::get().wgpu_required,
                    &[&args[..], &["--parts-json"]].concat(),
                )?;
                let parts: Option<IssueParts> = serde_json::from_str(line.trim())
                    .with_context(|| format!("{}: the pinned run's parts", case.name))?;
                Ok((case.name.clone(), parts))
            },
        )?;
        let dir = self
            .out
            .clone()
            .unwrap_or_else(|| upstream_dir(&self.regressions));
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        for (bug, case) in bugs.iter().zip(&shown) {
            let Some((_, Some(part))) = parts.iter().find(|(n, _)| *n == case.name) else {
                anyhow::bail!(
                    "{}: its case {} no longer shows its finding (fixed upstream?)",
                    bug.id,
                    case.name
                );
            };
            let path = dir.join(format!("{}.md", bug.id));
            std::fs::write(&path, upstream_report(bug, (&case.file, part)))
                .with_context(|| format!("cannot write {}", path.display()))?;
            println!("{}", path.display());
        }
        for entry in std::fs::read_dir(&dir)?.flatten() {
            let path = entry.path();
            let stem = path
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let report = path.extension().is_some_and(|e| e == "md") && stem != "README";
            if report && !bugs.iter().any(|b| b.id == stem) {
                std::fs::remove_file(&path)?;
                eprintln!("removed {} (no longer in the table)", path.display());
            }
        }
        let index = dir.join("README.md");
        std::fs::write(&index, upstream_index(&bugs))
            .with_context(|| format!("cannot write {}", index.display()))?;
        println!("{}", index.display());
        Ok(ExitCode::SUCCESS)
    }
}
