//! The checked-in corpus: every seed input reaches the class its file is named after, through
//! the same decoding the fuzz target uses.

use crate::common;

use dispatch_fuzz::program::{Backends, Program};

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
        let program =
            Program::from_fuzz_bytes(&std::fs::read(&path).unwrap(), Backends::FLEX_CAPTURE);
        let verdict = dispatch_fuzz::check(&common::cpu(), &program).unwrap();
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

#[test]
fn the_class_inputs_are_the_encodings_of_their_stored_programs() {
    let corpus = common::repo().join("corpus/dispatch_ops");
    let seeds = dispatch_fuzz::regressions::class_seed_inputs(&corpus.join("classes")).unwrap();
    let mut on_disk: Vec<(String, Vec<u8>)> = std::fs::read_dir(&corpus)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
        .filter(|name| dispatch_fuzz::regressions::is_class_seed(name))
        .map(|name| {
            let bytes = std::fs::read(corpus.join(&name)).unwrap();
            (name, bytes)
        })
        .collect();
    on_disk.sort();
    assert!(!seeds.is_empty());
    assert_eq!(
        on_disk, seeds,
        "the class inputs in corpus/dispatch_ops are stale: run `dispatch-fuzz seed-corpus`"
    );
    for (name, bytes) in &seeds {
        let class = name.rsplit_once('-').unwrap().0;
        let file = corpus.join("classes").join(format!("{class}.json"));
        let program = dispatch_fuzz::program::ProgramFile::load(&file)
            .unwrap()
            .program();
        assert_eq!(
            Program::from_fuzz_bytes(bytes, Backends::FLEX_CAPTURE),
            program,
            "{name}"
        );
    }
}

#[test]
fn regression_seeds_mirror_every_stored_program_and_decode_to_it() {
    use dispatch_fuzz::program::DeviceRef;
    use dispatch_fuzz::program::ProgramFile;
    let store = common::repo().join("regressions");
    let seeds = dispatch_fuzz::regressions::seed_inputs(&store).unwrap();
    let dir = common::repo().join("corpus/dispatch_ops/regressions");
    let mut on_disk: Vec<(String, Vec<u8>)> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| {
            let name = p.file_name().unwrap().to_string_lossy().into_owned();
            (name, std::fs::read(&p).unwrap())
        })
        .collect();
    on_disk.sort();
    let names = |v: &[(String, Vec<u8>)]| v.iter().map(|s| s.0.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(&on_disk),
        names(&seeds),
        "corpus/dispatch_ops/regressions is out of date: run `cargo run -p dispatch-fuzz -- seed-corpus`"
    );
    assert_eq!(
        on_disk, seeds,
        "a seed's bytes are stale: run `dispatch-fuzz seed-corpus`"
    );
    // Each seed decodes back to its program (wgpu steps decode to Flex here: wgpu is off).
    for (name, bytes) in &seeds {
        let file = match name.strip_prefix("divergence-") {
            Some(stem) => store.join("divergences").join(format!("{stem}.json")),
            None => store.join(format!("{name}.json")),
        };
        let mut program = ProgramFile::load(&file).unwrap().program();
        for step in &mut program.steps {
            if let Some(d) = step.device_mut().filter(|d| **d == DeviceRef::Wgpu) {
                *d = DeviceRef::Flex;
            }
        }
        assert_eq!(
            Program::from_fuzz_bytes(bytes, Backends::FLEX_CAPTURE),
            program,
            "{name}"
        );
    }
}

#[test]
fn the_fuzz_dictionary_matches_the_byte_format() {
    let path = common::repo().join("fuzz/dispatch_ops.dict");
    let on_disk = std::fs::read_to_string(&path).unwrap_or_default();
    assert_eq!(
        on_disk,
        dispatch_fuzz::program::fuzz_dictionary().unwrap(),
        "fuzz/dispatch_ops.dict is stale: run `cargo run -p dispatch-fuzz -- seed-corpus`"
    );
}
