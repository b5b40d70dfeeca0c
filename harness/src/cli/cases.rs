//! `dispatch-fuzz cases`: how every stored case fares on the Burn build this binary links.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Result;
use serde::Serialize;

use dispatch_fuzz::interpreter::wgpu::Placement;
use dispatch_fuzz::regressions::{load_named, suite_order, Standing};

/// Runs every regression case (or the named ones) and says, for each, whether it still fails as
/// stored, is fixed, or fails differently now: the question a Burn checkout run answers
/// (`dispatch-fuzz burn-checkout`). Exit 0 when every case that ran still fails as stored, 1
/// when one is fixed or fails differently.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Case names (file stems in the store); none: every case.
    cases: Vec<String>,
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    regressions: PathBuf,
    /// One JSON object per case instead of text.
    #[arg(long)]
    json: bool,
}

#[derive(Serialize)]
struct Row<'a> {
    case: &'a str,
    stored: Option<&'a str>,
    #[serde(flatten)]
    standing: Option<Standing>,
    #[serde(skip_serializing_if = "Option::is_none")]
    skipped: Option<String>,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        use rayon::prelude::*;
        let chosen = load_named(&self.regressions, &self.cases)?;
        let (mut still, mut changed, mut skipped) = (0, 0, 0);
        // Flex and capture cases in parallel, wgpu ones one at a time (they share wgpu's one
        // device stream); each case runs in its own session, so the order changes no verdict.
        let order = suite_order(&chosen);
        let judge = |case: &&dispatch_fuzz::regressions::Case| {
            // A case of another graphics API is left to a machine or a run pinned to it.
            let unavailable = match case.placement() {
                Placement::Here => None,
                Placement::Pinned(api, _) => Some(format!(
                    "holds on {} (run with DISPATCH_FUZZ_WGPU={})",
                    dispatch_fuzz::program::list_classes(&case.file.adapters),
                    api.name()
                )),
                Placement::Nowhere(why) => Some(why),
            };
            let standing = match unavailable {
                Some(_) => None,
                None => Some(case.standing()),
            };
            (unavailable, standing)
        };
        let cpu = order.iter().take_while(|c| !c.uses_wgpu()).count();
        let mut judged: Vec<_> = order[..cpu].par_iter().map(judge).collect();
        judged.extend(order[cpu..].iter().map(judge));
        for (case, (unavailable, standing)) in order.iter().zip(judged) {
            let standing = standing.transpose()?;
            match &standing {
                None => skipped += 1,
                Some(Standing::StillFails) => still += 1,
                Some(_) => changed += 1,
            }
            let row = Row {
                case: &case.name,
                stored: case.file.signature.as_deref(),
                standing,
                skipped: unavailable,
            };
            if self.json {
                println!("{}", serde_json::to_string(&row)?);
            } else {
                println!("{}", text(&row));
            }
        }
        if !self.json {
            println!(
                "{} cases: {still} still fail as stored, {changed} fixed or failing differently, \
                 {skipped} skipped",
                still + changed + skipped
            );
        }
        Ok(if changed == 0 {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

fn text(row: &Row) -> String {
    match (&row.standing, &row.skipped) {
        (Some(Standing::StillFails), _) => format!("still fails       {}", row.case),
        (Some(Standing::Fixed), _) => format!(
            "FIXED             {}: no finding now (stored: {})",
            row.case,
            row.stored.unwrap_or("?")
        ),
        (Some(Standing::FailsDifferently { signature, message }), _) => format!(
            "FAILS DIFFERENTLY {}\n    stored: {}\n    now:    {signature}\n    message: {message}",
            row.case,
            row.stored.unwrap_or("?")
        ),
        (None, why) => format!(
            "skipped           {}: {}",
            row.case,
            why.as_deref().unwrap_or("?")
        ),
    }
}
