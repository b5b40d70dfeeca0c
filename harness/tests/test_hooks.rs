//! The harness's own test switches (`*_for_tests`) are compiled only with the `test-hooks`
//! feature, which `cargo test` turns on and a user's build never does: checked on the source,
//! since a test binary is itself built with the feature.

use crate::common;

use std::path::{Path, PathBuf};

fn sources() -> Vec<PathBuf> {
    common::rust_files(&Path::new(env!("CARGO_MANIFEST_DIR")).join("src"))
}

fn src(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(rel)).unwrap()
}

/// The fault modules a build without the feature replaces by their no-op twins.
const GATED: &[(&str, &str, &str)] = &[
    (
        "interpreter.rs",
        "interpreter/faults.rs",
        "interpreter/no_faults.rs",
    ),
    ("oracles.rs", "oracles/faults.rs", "oracles/no_faults.rs"),
];

const GATE: &str = "#[cfg(feature = \"test-hooks\")]";

#[test]
fn every_test_switch_is_compiled_only_with_the_test_hooks_feature() {
    let gated: Vec<PathBuf> = GATED
        .iter()
        .map(|(_, on, _)| Path::new(env!("CARGO_MANIFEST_DIR")).join("src").join(on))
        .collect();
    let mut loose = Vec::new();
    for file in sources() {
        if gated.contains(&file) {
            continue;
        }
        let text = std::fs::read_to_string(&file).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            if !(line.contains("fn ") && line.contains("_for_tests(")) {
                continue;
            }
            // The item's attributes and doc comments, up to the line before them.
            let gate = lines[..i]
                .iter()
                .rev()
                .take_while(|l| {
                    let l = l.trim_start();
                    l.starts_with("#[") || l.starts_with("///")
                })
                .any(|l| l.trim() == GATE);
            if !gate {
                loose.push(format!("{}:{}: {}", file.display(), i + 1, line.trim()));
            }
        }
    }
    assert!(
        loose.is_empty(),
        "test switches outside the feature:\n{}",
        loose.join("\n")
    );
    for (parent, on, off) in GATED {
        let module = on.rsplit('/').next().unwrap().trim_end_matches(".rs");
        let text = src(parent);
        assert!(
            text.contains(&format!("{GATE}\npub mod {module};"))
                && text.contains(&format!(
                    "#[cfg(not(feature = \"test-hooks\"))]\n#[path = \"{off}\"]\nmod {module};"
                )),
            "{parent} must take {on} with the feature and {off} without it"
        );
    }
}

#[test]
fn each_fault_point_has_a_no_op_twin_for_builds_without_the_feature() {
    let fault_points = |text: &str| -> Vec<String> {
        text.lines()
            .filter_map(|l| {
                let l = l.trim_start();
                let rest = l
                    .strip_prefix("pub(crate) fn ")
                    .or_else(|| l.strip_prefix("pub(super) fn "))?;
                Some(rest.split('(').next()?.to_string())
            })
            .collect()
    };
    for (_, on, off) in GATED {
        let twins = fault_points(&src(off));
        let missing: Vec<String> = fault_points(&src(on))
            .into_iter()
            .filter(|f| !twins.contains(f))
            .collect();
        assert!(missing.is_empty(), "{off} lacks {missing:?} of {on}");
    }
}
