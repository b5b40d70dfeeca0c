//! `dispatch-fuzz accuracy`: the accuracy table of the float unary entries on Flex, and where
//! an entry is outside the bound the reference judges it with.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::accuracy::{self, Row};
use dispatch_fuzz::oracles::reference::bound::library_bound;
use dispatch_fuzz::program::{Dtype, UnaryOp};

/// Runs every float unary entry on Flex over every F16 and BF16 bit pattern and a stratified
/// sample of F32 (and F64 when asked), and prints each entry's largest and median error in
/// units in the last place against the reference rounded to the dtype, with its worst input,
/// as a Markdown table (ten worst first). Exit 1 when an entry with a measured bound
/// (`oracles/reference/bound.rs`) is outside it: a finding, its worst input the reproducer.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dtypes to sweep, comma-separated, of bf16, f16, f32, f64.
    #[arg(long, value_delimiter = ',', default_value = "bf16,f16,f32", value_parser = parse_dtype)]
    dtypes: Vec<Dtype>,
    /// Entries to measure (every float elementwise unary entry when none).
    #[arg(long, value_delimiter = ',', value_parser = parse_entry)]
    entries: Vec<UnaryOp>,
    /// Uniformly drawn F32 and F64 bit patterns besides the stratified values.
    #[arg(long, default_value_t = 1 << 16)]
    random: usize,
    /// Seed of the random draws.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Also write the rows as JSON here.
    #[arg(long)]
    json: Option<PathBuf>,
}

fn parse_dtype(s: &str) -> Result<Dtype, String> {
    let dtype: Dtype =
        serde_json::from_value(serde_json::Value::String(s.into())).map_err(|e| e.to_string())?;
    if accuracy::DTYPES.contains(&dtype) {
        Ok(dtype)
    } else {
        Err(format!("{s} is not a float dtype (bf16, f16, f32, f64)"))
    }
}

fn parse_entry(s: &str) -> Result<UnaryOp, String> {
    let known = accuracy::entries();
    UnaryOp::named(s)
        .filter(|u| known.contains(u))
        .ok_or_else(|| format!("{s} is not a float elementwise unary entry (see `ops`)"))
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let entries = if self.entries.is_empty() {
            accuracy::entries()
        } else {
            self.entries
        };
        let mut rows: Vec<Row> = Vec::new();
        for dtype in &self.dtypes {
            let xs = accuracy::inputs(*dtype, self.random, self.seed);
            for entry in &entries {
                rows.push(accuracy::measure(*entry, *dtype, &xs)?);
            }
        }
        let mut worst: Vec<&Row> = rows.iter().filter(|r| r.dtype != Dtype::F64).collect();
        worst.sort_by(|a, b| b.max_ulps.total_cmp(&a.max_ulps));
        println!("## Ten worst (F16, BF16, F32)\n");
        println!(
            "{}",
            accuracy::markdown(&worst.into_iter().take(10).cloned().collect::<Vec<_>>())
        );
        println!("## Every entry\n");
        println!("{}", accuracy::markdown(&rows));
        let outside: Vec<String> = rows
            .iter()
            .filter_map(|r| {
                let ulps = library_bound(r.entry)?;
                let bound = ulps.of(r.dtype)?;
                (r.max_ulps > bound).then(|| {
                    format!(
                        "{} over {:?} on {}: {} ULP, outside its bound of {bound} (worst input {:?})",
                        r.entry, r.dtype, r.backend, r.max_ulps, r.worst
                    )
                })
            })
            .collect();
        for line in &outside {
            println!("outside its bound: {line}");
        }
        if let Some(path) = &self.json {
            let text = serde_json::to_string_pretty(&rows)?;
            std::fs::write(path, text).with_context(|| format!("writing {}", path.display()))?;
        }
        Ok(if outside.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        })
    }
}
