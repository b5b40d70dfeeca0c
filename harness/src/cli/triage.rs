//! `dispatch-fuzz triage`: buckets a night's libFuzzer artifacts by signature (see
//! `dispatch_fuzz::nightly`).

use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::nightly::{triage, Options};

/// Bucket a night's libFuzzer artifacts by signature, promote one minimized reproducer per new
/// bucket into regressions/pending, count panic classes over the corpus (ci/nightly.sh). Exit 1
/// when a bucket is new.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    options: Options,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        triage(self.options)
    }
}
