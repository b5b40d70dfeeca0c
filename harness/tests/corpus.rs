//! The checked-in corpus: every seed input reaches the class its file is named after, through
//! the same decoding the fuzz target uses.

mod common;

use dispatch_fuzz::check;
use dispatch_fuzz::program::Program;

#[test]
fn each_corpus_input_reaches_its_class() {
    let dir = common::repo().join("corpus/dispatch_ops");
    let mut checked = 0;
    let mut classes = std::collections::BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if !path.is_file() {
            continue;
        }
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        // Named `<class>-<fnv1a of the bytes>` by `dispatch-fuzz fuzz --corpus-out`.
        let Some((class, _hash)) = name.rsplit_once('-') else {
            continue;
        };
        let program = Program::from_fuzz_bytes(&std::fs::read(&path).unwrap());
        let verdict = check(&program).unwrap();
        assert!(
            verdict.trace.panics().any(|(_, p)| p.class == class),
            "{name} does not reach {class}:\n{program}"
        );
        classes.insert(class.to_string());
        checked += 1;
    }
    assert!(checked > 0);
    for seed_class in [
        "capture-tensor-not-materialized",
        "operation-outside-capture-scope",
    ] {
        assert!(
            classes.contains(seed_class),
            "no corpus input reaches {seed_class}"
        );
    }
}
