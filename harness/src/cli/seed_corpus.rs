//! `dispatch-fuzz seed-corpus`: regenerates the fuzzer seeds made from stored programs.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result};

use dispatch_fuzz::regressions::{class_seed_inputs, is_class_seed, seed_inputs};

/// Writes one seed per stored program into `out` and removes the seeds of programs that are no
/// longer stored, so `out` mirrors `regressions` exactly. Files are replaced through a rename,
/// so an interrupted run leaves each seed either old or new, never torn.
/// Regenerate the fuzzer seeds made from every stored program (regression cases and
/// known-divergence reproducers), so each fuzz session starts from every known bug, the inputs
/// that reach each catalogued class (from `corpus/dispatch_ops/classes/`), and the libFuzzer
/// dictionary of the byte format. Run it after changing an op table: the bytes change with it.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The regression store.
    #[arg(long, default_value = "regressions")]
    regressions: PathBuf,
    /// Where the seeds go (a subfolder of the fuzz target's corpus).
    #[arg(long, default_value = "corpus/dispatch_ops/regressions")]
    out: PathBuf,
    /// The program files of the inputs that reach each class.
    #[arg(long, default_value = "corpus/dispatch_ops/classes")]
    classes: PathBuf,
    /// Where the class inputs go (the fuzz target's corpus).
    #[arg(long, default_value = "corpus/dispatch_ops")]
    corpus: PathBuf,
    /// Where the libFuzzer dictionary of the byte format goes.
    #[arg(long, default_value = "fuzz/dispatch_ops.dict")]
    dict: PathBuf,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        main(
            (&self.regressions, &self.out),
            (&self.classes, &self.corpus),
            &self.dict,
        )
    }
}

fn main(
    (regressions, out): (&Path, &Path),
    (classes, corpus): (&Path, &Path),
    dict: &Path,
) -> Result<ExitCode> {
    let seeds = seed_inputs(regressions)?;
    let (changed, removed) = mirror_dir(out, &seeds, |_| true)?;
    println!(
        "{} seeds in {} ({changed} written, {removed} removed)",
        seeds.len(),
        out.display()
    );
    let inputs = class_seed_inputs(classes)?;
    let (changed, removed) = mirror_dir(corpus, &inputs, is_class_seed)?;
    println!(
        "{} class inputs in {} ({changed} written, {removed} removed)",
        inputs.len(),
        corpus.display()
    );
    let text = dispatch_fuzz::program::fuzz_dictionary()?;
    std::fs::write(dict, text).with_context(|| format!("cannot write {}", dict.display()))?;
    println!("dictionary in {}", dict.display());
    Ok(ExitCode::SUCCESS)
}

/// Makes `out` hold exactly `files` among its files that `owned` claims: each written through a
/// rename (never torn), unchanged ones left alone, the rest removed. Returns (written, removed).
pub fn mirror_dir(
    out: &Path,
    files: &[(String, Vec<u8>)],
    owned: impl Fn(&str) -> bool,
) -> Result<(usize, usize)> {
    std::fs::create_dir_all(out).with_context(|| format!("cannot create {}", out.display()))?;
    let mut changed = 0;
    for (name, bytes) in files {
        let path = out.join(name);
        if std::fs::read(&path).ok().as_deref() == Some(bytes.as_slice()) {
            continue;
        }
        let tmp = out.join(format!(".{name}.tmp"));
        std::fs::write(&tmp, bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("cannot write {}", path.display()))?;
        changed += 1;
    }
    let mut removed = 0;
    for entry in std::fs::read_dir(out)? {
        let path = entry?.path();
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        if path.is_file() && owned(&name) && !files.iter().any(|(n, _)| *n == name) {
            std::fs::remove_file(&path)
                .with_context(|| format!("cannot remove {}", path.display()))?;
            removed += 1;
        }
    }
    Ok((changed, removed))
}
