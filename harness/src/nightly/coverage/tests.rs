//! Tests of `coverage`.

use super::*;

#[test]
fn a_reason_given_for_one_function_by_its_whole_name_claims_no_other() {
    let why = |r#trait: &str, name: &str| {
        why_unreached(&TraitFunction {
            r#trait: r#trait.into(),
            name: name.into(),
            count: 0,
            on_flex: 0,
        })
    };
    assert!(why("FloatTensorOps", "float_powi").starts_with("float powi"));
    assert_eq!(
        why("FloatTensorOps", "float_powi_scalar_impl"),
        "no table entry reaches it yet"
    );
    assert!(why("ModuleOps", "linear").starts_with("linear"));
    assert_eq!(why("ModuleOps", "batch_norm"), ENTRY_NOT_RUN);
    // An int tensor's `argtopk` (the argtopk1 entry takes ints) is the trait's int_argtopk;
    // `erf` is called on floats only, so an int function of that name is called by none.
    assert_eq!(why("IntTensorOps", "int_argtopk"), ENTRY_NOT_RUN);
    assert_eq!(
        why("IntTensorOps", "int_erf"),
        "no table entry reaches it yet"
    );
    assert!(why("QTensorOps", "q_gather").starts_with("quantized gather"));
    assert!(why("QTensorOps", "q_to_device").starts_with("quantized tensors"));
}

/// An export shaped as llvm-cov 3.1.0 writes it, for one file of burn-capture.
fn export(path: &Path) -> String {
    serde_json::json!({
        "type": "llvm.coverage.json.export",
        "version": "3.1.0",
        "data": [{
            "files": [{
                "filename": path.display().to_string(),
                "segments": [
                    [1, 1, 4, true, true, false],
                    [1, 8, 0, true, true, false],
                    [3, 1, 4, true, false, false],
                    [3, 2, 0, false, false, false]
                ],
                "branches": [], "expansions": [], "mcdc_records": [],
                "summary": {
                    "lines": {"count": 4, "covered": 3, "percent": 75.0},
                    "functions": {"count": 2, "covered": 1, "percent": 50.0}
                }
            }],
            "functions": []
        }]
    })
    .to_string()
}

/// A one-guard `capture.rs` in a registry-shaped folder of its own (`test` names it, so
/// parallel tests never share one).
fn source(test: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "dispatch-fuzz-cov-{}-{test}/burn-capture-9.9.9/src",
        std::process::id()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("capture.rs");
    std::fs::write(
        &file,
        "fn f() {\n    panic!(\"capture scope is already complete\")\n}\n",
    )
    .unwrap();
    file
}

#[test]
fn files_and_areas_are_read_from_the_export_summary() {
    let path = source("files");
    let coverage = Coverage::parse(&export(&path)).unwrap();
    let files = coverage.files();
    assert_eq!(files.len(), 1);
    assert_eq!(files[0].file, "burn-capture/src/capture.rs");
    assert_eq!((files[0].lines, files[0].lines_covered), (4, 3));
    assert_eq!(files[0].function_percent(), 50.0);
    let areas = coverage.areas();
    assert_eq!(areas.len(), 1, "only areas with files in the export");
    assert_eq!(areas[0].file, "burn-capture capture.rs");
    let _ = std::fs::remove_dir_all(path.ancestors().nth(2).unwrap());
}

#[test]
fn line_hits_take_the_regions_starting_on_the_line_else_the_enclosing_one() {
    let path = source("lines");
    let coverage = Coverage::parse(&export(&path)).unwrap();
    let file = "burn-capture/src/capture.rs";
    assert_eq!(
        coverage.line_hits(file, 1),
        Some(4),
        "the largest region starting there"
    );
    assert_eq!(
        coverage.line_hits(file, 2),
        Some(0),
        "inside the never-run region"
    );
    assert_eq!(
        coverage.line_hits(file, 3),
        Some(0),
        "no region entry: the wrapped one"
    );
    assert_eq!(
        coverage.line_hits(file, 4),
        None,
        "after the last region: no code"
    );
    assert_eq!(coverage.line_hits("burn-router/src/lib.rs", 1), None);
    let _ = std::fs::remove_dir_all(path.ancestors().nth(2).unwrap());
}

#[test]
fn router_functions_are_read_from_mangled_trait_impl_names() {
    let name = "_RNvXCslmPpKJX8MV2_7covdemoNtB2_8DispatchNtB2_14FloatTensorOps9float_add";
    assert_eq!(
        trait_function(name),
        Some(("FloatTensorOps".to_string(), "float_add".to_string()))
    );
    assert_eq!(trait_function("_RNvCslmPpKJX8MV2_7covdemo4main"), None);
    let export = serde_json::json!({
        "data": [{
            "files": [],
            "functions": [
                {"name": name, "count": 0, "filenames": ["/r/burn-router-9.9.9/src/ops/tensor.rs"]},
                {"name": name, "count": 7, "filenames": ["/r/burn-router-9.9.9/src/ops/tensor.rs"]},
                {"name": name, "count": 9, "filenames": ["/r/burn-flex-9.9.9/src/ops/tensor.rs"]}
            ]
        }]
    });
    let functions = Coverage::parse(&export.to_string())
        .unwrap()
        .router_functions();
    assert_eq!(
        functions.len(),
        1,
        "one entry per function, burn-router's only"
    );
    assert_eq!(
        functions[0].count, 7,
        "the largest count among its instances"
    );
    assert_eq!(
        functions[0].on_flex, 9,
        "Flex's own impl, counted beside it"
    );
    assert!(functions[0].reached());
}

#[test]
fn guard_lines_are_found_by_the_records_message_in_the_source() {
    let path = source("guards");
    let coverage = Coverage::parse(&export(&path)).unwrap();
    let records = crate::oracles::catalogue::catalogue();
    let hits = coverage.guard_hits(records);
    let complete: Vec<&GuardHits> = hits
        .iter()
        .filter(|h| h.class == "capture-scope-complete")
        .collect();
    assert_eq!(complete.len(), 1, "{hits:?}");
    assert_eq!((complete[0].line, complete[0].hits), (Some(2), Some(0)));
    // A record of the same file whose message the source lacks is listed as not found.
    assert!(hits
        .iter()
        .any(|h| h.class == "operation-outside-capture-scope" && h.line.is_none()));
    let _ = std::fs::remove_dir_all(path.ancestors().nth(2).unwrap());
}
