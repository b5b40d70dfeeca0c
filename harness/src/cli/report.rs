//! `dispatch-fuzz report`: a regression case as a Markdown issue body for Burn's tracker.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::regressions::{each_in_suite_order, load_named, run_pinned};

/// Write the Markdown issue body of stored cases (title, what happens vs what should, the
/// reproducer, environment, minimized program, root cause, how it was found).
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
    #[arg(long)]
    divergences: bool,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
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
                let body = run_pinned(api, &args)?;
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
}
