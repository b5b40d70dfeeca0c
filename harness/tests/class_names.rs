//! The catalogue classes the model oracle names as literals (`panic("capture-scope-complete")`,
//! its lists of guards and known bugs) are classes `signatures.json` holds: a misspelt one would
//! match no panic, and no verdict would say so.

use dispatch_fuzz::oracles::catalogue::catalogue;

use crate::common;

/// The kebab-case string literals of `text` (`"capture-scope-complete"`), in order.
fn kebab_literals(text: &str) -> Vec<&str> {
    text.split('"')
        .skip(1)
        .step_by(2)
        .filter(|s| {
            s.contains('-')
                && !s.starts_with('-')
                && !s.ends_with('-')
                && s.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        })
        .collect()
}

#[test]
fn every_class_the_model_names_is_in_the_catalogue() {
    // Its rules' and known divergences' tables hold rule ids, which are kebab-case too.
    let text = common::module_source("src/oracles/model", &["rules.rs", "divergences.rs"]);
    let tags: Vec<&str> = catalogue()
        .iter()
        .map(|r| r.background_tag.as_str())
        .collect();
    // The test switch's own class and feature name are not catalogue classes.
    let named: Vec<&str> = kebab_literals(&text)
        .into_iter()
        .filter(|l| !l.ends_with("-for-tests") && *l != "test-hooks")
        .collect();
    assert!(
        named.len() >= 20,
        "the reader found only {named:?}: has the model changed how it names classes?"
    );
    let unknown: Vec<&&str> = named.iter().filter(|l| !tags.contains(l)).collect();
    assert!(
        unknown.is_empty(),
        "the model names classes signatures.json does not hold: {unknown:?}"
    );
}

#[test]
fn the_reader_finds_kebab_case_literals_and_nothing_else() {
    let text = r#"panic("capture-scope-complete"); let x = "Not-A-Class"; f("a", "two-parts")"#;
    assert_eq!(
        kebab_literals(text),
        ["capture-scope-complete", "two-parts"]
    );
}
