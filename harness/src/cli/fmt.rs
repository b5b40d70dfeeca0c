//! `dispatch-fuzz fmt FILE`: a libFuzzer artifact or program file printed as a readable program.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::program::{Input, ProgramFile};
use dispatch_fuzz::report::to_rust;
use dispatch_fuzz::{check, config, Session};

/// Print a libFuzzer artifact (raw bytes) or a program file as a readable program.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Artifact file (or, with --rust, a program file too).
    file: PathBuf,
    /// Print the program file (JSON) instead of the listing.
    #[arg(long, conflicts_with = "rust")]
    json: bool,
    /// Run it and print a paste-ready Rust reproducer against Burn's public API.
    #[arg(long)]
    rust: bool,
}

impl Args {
    pub fn run(self) -> Result<ExitCode> {
        let input = Input::load(&self.file, config::get().backends)?;
        if self.rust {
            rust(input)
        } else {
            main(&self.file, input, self.json)
        }
    }
}

/// `fmt --rust`: runs the program (artifact or program file) and prints the Rust reproducer.
fn rust(input: Input) -> Result<ExitCode> {
    let program = &input.program;
    let session = dispatch_fuzz::minimize::session_for(&input, &Session::from_config());
    let verdict = check(&session, program)?;
    print!(
        "{}",
        to_rust(program, &verdict.trace, verdict.finding.as_ref())
    );
    Ok(ExitCode::SUCCESS)
}

fn main(path: &Path, input: Input, as_json: bool) -> Result<ExitCode> {
    let (bytes, program) = (&input.bytes, input.program);
    if input.program_file {
        // A program file is already structured text: print it, or its steps, as they are.
        if as_json {
            print!("{}", String::from_utf8_lossy(bytes));
        } else {
            println!("// {} steps from {}", program.steps.len(), path.display());
            print!("{program}");
        }
        return Ok(ExitCode::SUCCESS);
    }
    if as_json {
        let file = ProgramFile {
            origin: Some(format!(
                "libFuzzer artifact {} ({} bytes, fnv1a {:016x})",
                path.file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default(),
                bytes.len(),
                dispatch_fuzz::hash::fnv1a(&[bytes])
            )),
            steps: program.steps,
            ..ProgramFile::default()
        };
        print!("{}", file.to_text());
    } else {
        println!(
            "// {} steps decoded from {}",
            program.steps.len(),
            path.display()
        );
        print!("{program}");
    }
    Ok(ExitCode::SUCCESS)
}
