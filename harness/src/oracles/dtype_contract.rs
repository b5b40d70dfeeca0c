//! The dtype contract: every tensor a step hands back is stored in a dtype of its kind (a float
//! tensor in a float dtype, an int one in an int dtype, a bool one in a `Bool` storage), and an
//! op's result in the dtype its table row states ([`ResultDtype`]): the operand's own, or the one
//! a cast names. A tensor in another dtype is a backend bug at the step that made it, whatever
//! panics later when another op reads it.

use burn::tensor::DType;

use crate::interpreter::{Outcome, Trace, ValueInfo};
use crate::program::{Kind, Op, Program, ResultDtype, Step};

use super::{Oracle, OracleReport, Violation, DTYPE_CONTRACT};

/// The oracle (judges the trace after the run).
pub struct DtypeContract;

impl Oracle for DtypeContract {
    fn after_run(&mut self, program: &Program, trace: &Trace, report: &mut OracleReport) {
        if let Some(v) = first_violation(program, trace) {
            report.violations.push(v);
        }
    }
}

/// The dtypes that store `kind`'s tensors, as `DType` variants are written (`Bool(_)`: any bool
/// storage). The oracle reads the trace's dtypes against them; reproducers match on them.
pub fn dtypes(kind: Kind) -> &'static [&'static str] {
    match kind {
        Kind::Float => &["F64", "F32", "F16", "BF16", "Flex32"],
        Kind::Int => &["I64", "I32", "I16", "I8", "U64", "U32", "U16", "U8"],
        Kind::Bool => &["Bool(_)"],
    }
}

/// Whether `dtype` stores tensors of `kind`: one of [`dtypes`]`(kind)`.
pub fn of_kind(kind: Kind, dtype: DType) -> bool {
    use DType::*;
    match kind {
        Kind::Float => matches!(dtype, F64 | F32 | F16 | BF16 | Flex32),
        Kind::Int => matches!(dtype, I64 | I32 | I16 | I8 | U64 | U32 | U16 | U8),
        Kind::Bool => matches!(dtype, Bool(_)),
    }
}

/// The first step that handed back a tensor in a dtype of another kind, or an op's result in
/// another dtype than its row states (none on the wgpu device past a dtype it does not
/// support): only the first, since every value computed from it carries the same mistake.
fn first_violation(program: &Program, trace: &Trace) -> Option<Violation> {
    // Past a dtype the wgpu device does not support, Burn promises nothing there, dtypes
    // included (a BF16 prelu on llvmpipe comes back F32).
    let open = super::past_unsupported_dtype(&program.steps, trace);
    trace.walk_held(&program.steps, |step, record, held| {
        let Outcome::Ok { value, outputs, .. } = &record.outcome else {
            return None;
        };
        if open.get(record.index) == Some(&true) {
            return None;
        }
        let bad = value
            .iter()
            .chain(outputs)
            .find(|v| !of_kind(v.kind, v.dtype));
        if let Some(v) = bad {
            return Some(violation(step, record.index, v));
        }
        let (Step::Op { op, .. }, Some(v)) = (step, value) else {
            return None;
        };
        let stated = stated_dtype(op, held).filter(|stated| v.dtype != *stated)?;
        let operands: Vec<String> = op
            .operands()
            .iter()
            .filter_map(|s| held[usize::from(*s)].map(|v| format!("{:?}", v.dtype)))
            .collect();
        let mut lost = lost(op, record.index, step, v, stated);
        lost.operands = Some(operands.join(", "));
        Some(lost)
    })
}

/// The dtype `op`'s result must be stored in, by its row, over operands as `held` has them:
/// the operand's (where every operand of the first one's kind shares it: mixed dtypes are the
/// program's choice, which a backend may refuse or promote), or a cast's. `None` where the row
/// leaves it to the device or an operand is unknown.
fn stated_dtype(op: &Op, held: &[Option<&ValueInfo>]) -> Option<DType> {
    match op.result_dtype() {
        ResultDtype::Default => None,
        ResultDtype::Named(dtype) => Some(dtype.burn()),
        ResultDtype::Operand => {
            let operands = op.operands();
            let first = held[usize::from(*operands.first()?)]?;
            for s in &operands[1..] {
                let other = held[usize::from(*s)]?;
                if other.kind == first.kind && other.dtype != first.dtype {
                    return None;
                }
            }
            Some(first.dtype)
        }
    }
}

fn lost(op: &Op, index: usize, step: &Step, value: &ValueInfo, stated: DType) -> Violation {
    Violation {
        step: index,
        class: DTYPE_CONTRACT,
        summary: format!(
            "{} gives {:?} where its table row states {stated:?}",
            op.name(),
            value.dtype
        ),
        message: format!(
            "step {index} `{}` gave a {:?} tensor stored as {:?} on {}, where its op's table row \
             states {stated:?}",
            crate::program::step_line(step),
            value.kind,
            value.dtype,
            value.device
        ),
        ..Violation::default()
    }
}

fn violation(step: &Step, index: usize, value: &ValueInfo) -> Violation {
    let what = match step {
        Step::Op { op, .. } => op.name(),
        other => other.name().to_string(),
    };
    Violation {
        step: index,
        class: DTYPE_CONTRACT,
        summary: format!(
            "{what} gives a {:?} tensor stored as {:?}",
            value.kind, value.dtype
        ),
        message: format!(
            "step {index} `{}` gave a {:?} tensor stored as {:?} on {}: a dtype of another kind",
            crate::program::step_line(step),
            value.kind,
            value.dtype,
            value.device
        ),
        ..Violation::default()
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::BoolStore;

    use super::*;

    /// A trace of `program` whose steps all succeeded with values of these kinds and dtypes.
    fn trace_of(values: &[(Kind, DType)]) -> Trace {
        let steps = values
            .iter()
            .enumerate()
            .map(|(index, (kind, dtype))| crate::interpreter::StepRecord {
                index,
                outcome: Outcome::Ok {
                    value: Some(ValueInfo {
                        kind: *kind,
                        dtype: *dtype,
                        shape: vec![1],
                        device: crate::interpreter::Placed::new(
                            crate::interpreter::Base::Flex,
                            false,
                        ),
                        same_as: None,
                        digest: None,
                    }),
                    graph: None,
                    outputs: Vec::new(),
                },
            })
            .collect();
        Trace {
            steps,
            ..Trace::default()
        }
    }

    fn judged(steps: &str, values: &[(Kind, DType)]) -> Option<String> {
        let program = crate::program::ProgramFile::parse(&format!("{{\"steps\": {steps}}}"), "t")
            .unwrap()
            .program();
        first_violation(&program, &trace_of(values)).map(|v| v.summary)
    }

    #[test]
    fn an_op_keeps_its_operands_dtype_or_the_one_its_cast_names_unless_the_operands_mix() {
        let f16 = r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "ones", "device": "flex", "dtype": "f16"}},
                      {"op": {"out": 1, "op": {"unary": {"op": "exp", "src": 0}}}}]"#;
        assert_eq!(
            judged(f16, &[(Kind::Float, DType::F16), (Kind::Float, DType::F16)]),
            None
        );
        assert_eq!(
            judged(f16, &[(Kind::Float, DType::F16), (Kind::Float, DType::F32)]).as_deref(),
            Some("unary exp gives F32 where its table row states F16")
        );
        // A cast states its own dtype; a comparison leaves its bool storage to the device.
        let cast = r#"[{"create": {"out": 0, "kind": "int", "shape": [1], "fill": "ones", "device": "flex", "dtype": "i16"}},
                       {"op": {"out": 1, "op": {"unary": {"op": "cast_i64", "src": 0}}}},
                       {"op": {"out": 2, "op": {"compare": {"op": "equal", "lhs": 1, "rhs": 1}}}}]"#;
        let ok = [
            (Kind::Int, DType::I16),
            (Kind::Int, DType::I64),
            (Kind::Bool, DType::Bool(BoolStore::U8)),
        ];
        assert_eq!(judged(cast, &ok), None);
        let kept = [
            (Kind::Int, DType::I16),
            (Kind::Int, DType::I16),
            (Kind::Bool, DType::Bool(BoolStore::U8)),
        ];
        assert_eq!(
            judged(cast, &kept).as_deref(),
            Some("unary cast_i64 gives I16 where its table row states I64")
        );
        // Operands of one kind in two dtypes: the program's mix, which Burn lets a backend
        // resolve either way.
        let mixed = r#"[{"create": {"out": 0, "kind": "float", "shape": [1], "fill": "ones", "device": "flex", "dtype": "f16"}},
                        {"create": {"out": 1, "kind": "float", "shape": [1], "fill": "ones", "device": "flex"}},
                        {"op": {"out": 2, "op": {"binary": {"op": "add", "lhs": 0, "rhs": 1}}}}]"#;
        let either = [
            (Kind::Float, DType::F16),
            (Kind::Float, DType::F32),
            (Kind::Float, DType::F32),
        ];
        assert_eq!(judged(mixed, &either), None);
    }

    #[test]
    fn each_kind_has_its_own_dtypes() {
        assert!(of_kind(Kind::Float, DType::F32) && !of_kind(Kind::Float, DType::I32));
        assert!(of_kind(Kind::Int, DType::U8) && !of_kind(Kind::Int, DType::Bool(BoolStore::U8)));
        assert!(
            of_kind(Kind::Bool, DType::Bool(BoolStore::U8))
                && of_kind(Kind::Bool, DType::Bool(BoolStore::Native))
        );
        assert!(
            !of_kind(Kind::Bool, DType::U8),
            "U8 is an int dtype, not a bool storage"
        );
    }
}
