//! Tests of `rust`.

use super::*;
use crate::oracles::Facts;

#[test]
fn a_word_inside_a_string_literal_is_no_use_of_a_name() {
    let code =
        r#"assert!(x, "a Bool tensor \"Capture\" here"); let t = Tensor::<1, Int>::zeros();"#;
    let names = without_strings(code);
    assert!(
        !names.contains("Bool") && !names.contains("Capture"),
        "{names}"
    );
    assert!(names.contains("Tensor::<1, Int>"), "{names}");
    assert_eq!(imports(code), "use burn::tensor::{Int, Tensor};\n");
}

#[test]
fn a_model_message_is_told_in_the_contracts_words_without_the_projects_names() {
    let finding = Finding {
        signature: "model-mismatch | stale-operand: expected panic capture-scope-complete, got ok \
                    | model"
            .parse()
            .expect("a signature"),
        class: MODEL_MISMATCH,
        step: Some(7),
        message: "step 7 `scope.complete([], [])`: the model expected panic \
                  capture-scope-complete (stale-operand: why), Burn gave ok"
            .into(),
        facts: Facts::default(),
        payload: Payload::Outcome {
            expected: "panic capture-scope-complete".into(),
            actual: "ok".into(),
        },
    };
    let words = contract_words(&finding);
    assert!(words.starts_with("expected a panic \""), "{words}");
    assert!(words.ends_with("Burn gave ok"), "{words}");
    assert!(!words.contains("capture-scope-complete"), "{words}");
    assert_eq!(
        without_step("step 1 `let t1 = t0.exp();` gave a Bool tensor stored as U8"),
        "gave a Bool tensor stored as U8"
    );
}

#[test]
fn a_reproducer_lists_only_the_features_its_code_uses() {
    let deps = dependencies("let flex = Device::flex();", false, false);
    assert!(
        deps[1].contains(r#"["std", "flex", "simd", "rayon"]"#),
        "{deps:?}"
    );
    let deps = dependencies(
        "let c = Device::capture(); let w = Device::wgpu(k); t.autodiff()",
        true,
        false,
    );
    for feature in ["\"capture\"", "\"wgpu\"", "\"autodiff\""] {
        assert!(deps[1].contains(feature), "{deps:?}");
    }
    assert!(!deps[1].contains("\"flex\""), "{deps:?}");
    assert!(
        deps.iter().any(|l| l.starts_with("burn-router = ")),
        "{deps:?}"
    );
}
