//! `dispatch-fuzz reproducers`: regenerates the Rust reproducer of every stored case.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::config;
use dispatch_fuzz::regressions::{each_in_suite_order, load_all, load_named, run_pinned, Case};

use super::seed_corpus::mirror_dir;

/// Writes `<out>/<case>.rs`, the `fmt --rust` reproducer of every regression case, and
/// `<out>/main.rs`, which makes them one binary; removes those of cases no longer stored; and
/// writes the store's index, `regressions/README.md`. `cargo test` compiles them as the
/// harness's `reproducers` example (against the very Burn build it tests) and runs each case's,
/// requiring it to fail as its case says.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    regressions: PathBuf,
    /// Where the reproducers go (the harness's `reproducers` example).
    #[arg(long, default_value = "harness/examples/reproducers")]
    out: PathBuf,
    /// Print this one case's reproducer instead of writing any file (what a run pinned to a
    /// case's graphics API answers).
    #[arg(long, value_name = "CASE")]
    print: Option<String>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let cases = load_all(&self.regressions)?;
        if let Some(name) = &self.print {
            let chosen = load_named(&self.regressions, std::slice::from_ref(name))?;
            let texts = each_in_suite_order(&chosen, Case::reproducer, |case, _| {
                anyhow::bail!(
                    "case {}: a pinned run found no adapter of its class",
                    case.name
                )
            })?;
            print!("{}", texts.concat());
            return Ok(ExitCode::SUCCESS);
        }
        let regressions = self.regressions.display().to_string();
        let files = each_in_suite_order(
            &cases,
            |case| Ok((format!("{}.rs", case.name), case.reproducer()?.into_bytes())),
            // A case of another graphics API than this process's adapter is generated where
            // wgpu is pinned to it.
            |case, api| {
                let args = [
                    "reproducers",
                    "--regressions",
                    &regressions,
                    "--print",
                    &case.name,
                ];
                Ok((
                    format!("{}.rs", case.name),
                    run_pinned(
                        config::get().backends.adapter.pinned_to(api),
                        config::get().wgpu_required,
                        &args,
                    )?
                    .into_bytes(),
                ))
            },
        )?;
        let mut files = files;
        files.push((
            "main.rs".to_string(),
            dispatch_fuzz::regressions::reproducers_main(&cases).into_bytes(),
        ));
        let index = self.regressions.join("README.md");
        std::fs::write(&index, dispatch_fuzz::regressions::index(&cases))
            .with_context(|| format!("cannot write {}", index.display()))?;
        let (changed, removed) = mirror_dir(&self.out, &files, |n| n.ends_with(".rs"))?;
        println!(
            "{} reproducers in {} ({changed} files written, {removed} removed)",
            cases.len(),
            self.out.display()
        );
        Ok(ExitCode::SUCCESS)
    }
}
