//! The dtype contract: every tensor a step hands back is stored in a dtype of its kind (a float
//! tensor in a float dtype, an int one in an int dtype, a bool one in a `Bool` storage). A
//! tensor of one kind tagged with another kind's dtype is a backend bug at the step that made
//! it, whatever panics later when another op reads it.

use crate::interpreter::{Outcome, Trace, ValueInfo};
use crate::program::{Kind, Program, Step};

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

/// Whether `dtype` (as the trace prints it) stores tensors of `kind`.
pub fn of_kind(kind: Kind, dtype: &str) -> bool {
    // The plain names first: every value of every program is checked, and most are `F32`,
    // `I32` or `I64`.
    let table = dtypes(kind);
    table.contains(&dtype)
        || table.iter().any(|d| match d.strip_suffix("(_)") {
            Some(variant) => dtype
                .strip_prefix(variant)
                .is_some_and(|storage| storage.starts_with('(')),
            None => false,
        })
}

/// The first step that handed back a tensor in a dtype of another kind: only the first, since
/// every value computed from it carries the same mistake.
fn first_violation(program: &Program, trace: &Trace) -> Option<Violation> {
    for (step, record) in program.steps.iter().zip(&trace.steps) {
        let Outcome::Ok { value, outputs, .. } = &record.outcome else {
            continue;
        };
        let bad = value
            .iter()
            .chain(outputs)
            .find(|v| !of_kind(v.kind, &v.dtype));
        if let Some(v) = bad {
            return Some(violation(step, record.index, v));
        }
    }
    None
}

fn violation(step: &Step, index: usize, value: &ValueInfo) -> Violation {
    let what = match step {
        Step::Op { op, .. } => op.name(),
        other => other.name().to_string(),
    };
    Violation {
        step: index,
        class: DTYPE_CONTRACT.to_string(),
        summary: format!(
            "{what} gives a {:?} tensor stored as {}",
            value.kind, value.dtype
        ),
        message: format!(
            "step {index} `{}` gave a {:?} tensor stored as {} on {}: a dtype of another kind",
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
    use super::*;

    #[test]
    fn each_kind_has_its_own_dtypes() {
        assert!(of_kind(Kind::Float, "F32") && !of_kind(Kind::Float, "I32"));
        assert!(of_kind(Kind::Int, "U8") && !of_kind(Kind::Int, "Bool(U8)"));
        assert!(of_kind(Kind::Bool, "Bool(U8)") && of_kind(Kind::Bool, "Bool(Native)"));
        assert!(
            !of_kind(Kind::Bool, "U8"),
            "U8 is an int dtype, not a bool storage"
        );
    }
}
