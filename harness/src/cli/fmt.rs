//! `dispatch-fuzz fmt FILE`: a libFuzzer artifact or program file printed as a readable program.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;

use dispatch_fuzz::check_with;
use dispatch_fuzz::files::ProgramFile;
use dispatch_fuzz::program::to_rust;

/// `fmt --rust`: runs the program (artifact or program file) and prints the Rust reproducer.
pub fn rust(path: &Path) -> Result<ExitCode> {
    let input = super::minimize::load_input(path)?;
    let program = &input.program;
    let verdict = check_with(program, &input.policy())?;
    let signature = verdict.finding.as_ref().map(|f| f.signature.as_str());
    print!("{}", to_rust(program, &verdict.trace, signature));
    Ok(ExitCode::SUCCESS)
}

pub fn main(path: &Path, as_json: bool) -> Result<ExitCode> {
    let input = super::minimize::load_input(path)?;
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
                dispatch_fuzz::interpreter::fnv1a(&[bytes])
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
