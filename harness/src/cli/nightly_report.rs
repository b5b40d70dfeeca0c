//! `dispatch-fuzz nightly-report`: turns the night's logs and triage into `report.md`,
//! `report.json` and an SVG chart; `report.md` charts the run in Mermaid and sparklines, which
//! a GitHub job summary displays.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::nightly::report::{chart, markdown};
use dispatch_fuzz::nightly::results::gather;

/// Write report.md, report.json and chart.svg from a nightly output folder.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The nightly output folder (logs/, triage-*.json, coverage/<target>.json from
    /// `llvm-cov export`, timings.tsv).
    #[arg(long)]
    dir: PathBuf,
    /// Fuzz targets to report on.
    #[arg(long, default_value = "dispatch_ops")]
    targets: Vec<String>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let dir = &self.dir;
        let (reports, timings) = gather(dir, &self.targets)?;
        let json = serde_json::json!({ "targets": reports, "timings_s": timings });
        std::fs::write(
            dir.join("report.json"),
            serde_json::to_string_pretty(&json)? + "\n",
        )?;
        std::fs::write(dir.join("chart.svg"), chart(&reports))?;
        std::fs::write(dir.join("report.md"), markdown(&reports, &timings))?;
        println!("report: {}", dir.join("report.md").display());
        Ok(ExitCode::SUCCESS)
    }
}
