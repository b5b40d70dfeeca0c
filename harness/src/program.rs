//! The generator: a [`Program`] is a list of steps over numbered tensor slots and a fixed pool
//! of capture devices, decoded from fuzzer bytes through `Arbitrary` and repaired by one
//! idempotent [`fixup`] so that every program runs. Programs are stored as JSON text and print
//! as Rust-like code a maintainer can read (`Display`).

mod adapter;
mod along_dim;
mod binary;
mod decode;
pub(crate) mod display;
mod dtype;
mod edge;
mod encode;
mod entry;
mod file;
mod fill;
mod fixed_ops;
mod fixup;
pub mod fusion;
mod kind;
pub mod limits;
mod module;
mod names;
mod op;
mod quantized;
mod reach;
mod slot;
mod step;
mod table;
mod typing;
mod unary;

use serde::{Deserialize, Serialize};

pub use adapter::{list_classes, Adapter, AdapterChoice, AdapterClass, Api};
pub(crate) use along_dim::along_dim_ops;
pub use along_dim::{AlongDimSpec, DimShape, ALONG_DIM};
pub(crate) use binary::{binary_ops, compare_ops, scalar_ops};
pub use binary::{TwoOperandSpec, BINARY, COMPARE, SCALAR};
pub use decode::{Backends, STEP_KINDS};
pub use display::{backward_expr, device_call, exit_statements, step_line, transaction_expr};
pub use dtype::{Dtype, DtypeSpec, DTYPES};
pub use edge::Edge;
pub use encode::{fuzz_dictionary, EncodeError};
pub use entry::{entries, op_of, result_kind, why_not_replayed, Entry, Family};
pub use file::{Also, Flaky, Input, LoadError, ProgramFile, RunLimits};
pub use fill::{edge_dtype, fill_data};
pub use fixed_ops::{FixedOp, FixedRow};
pub use fixup::{fixup, operand_kinds};
pub(crate) use module::module_ops;
pub use module::{kernel_size, ModuleSpec, MODULE};
pub(crate) use quantized::quantized_ops;
pub use quantized::{Grid, QuantizedSpec, SchemeSpec, QUANTIZED, SCHEMES};
pub use reach::Reach;
pub use step::{
    queried_dtype, AlongDimOp, AutodiffMode, BinaryOp, CompareOp, DeviceCall, DeviceRef, ExitForm,
    Fill, Kind, LogicOp, ModuleOp, Op, QuantizedOp, ScalarOp, Scheme, Slot, Slots, Step, UnaryOp,
    QUERIED_DTYPES,
};
pub use table::{mentions_ident, replace_ident, ResultDtype, Spread, Tolerance, Unspecified};
pub use typing::{op_output, Ty};
pub(crate) use unary::unary_ops;
pub use unary::{UnarySpec, UNARY};

/// A test case: steps run in order, one at a time, on the threads `Thread` steps switch to;
/// scopes nest by `EnterScope`/`ExitScope` pairs.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct Program {
    /// The steps; see [`Step`] for what each does.
    pub steps: Vec<Step>,
}

impl Program {
    /// A program from steps, fixed up.
    pub fn new(mut steps: Vec<Step>) -> Self {
        fixup(&mut steps);
        Program { steps }
    }

    /// Index of the `ExitScope` matching each `EnterScope` (by index), for a fixed-up program.
    pub fn scope_ends(&self) -> Vec<Option<usize>> {
        let mut ends = vec![None; self.steps.len()];
        let mut open = Vec::new();
        for (i, step) in self.steps.iter().enumerate() {
            match step {
                Step::EnterScope { .. } => open.push(i),
                Step::ExitScope { .. } => {
                    if let Some(start) = open.pop() {
                        ends[start] = Some(i);
                    }
                }
                _ => {}
            }
        }
        ends
    }

    /// The program thread each step runs on: the thread the last `Thread` step before it
    /// switched to (0 before any), except that an `ExitScope` runs on its scope's thread, since
    /// it ends the closure `capture_scope` called there. A `Thread` step is counted on the thread
    /// it switches to.
    pub fn step_threads(&self) -> Vec<u8> {
        let mut current = 0;
        let mut open = Vec::new();
        self.steps
            .iter()
            .map(|step| match step {
                Step::Thread { thread } => {
                    current = *thread;
                    current
                }
                Step::EnterScope { .. } => {
                    open.push(current);
                    current
                }
                Step::ExitScope { .. } => open.pop().unwrap_or(current),
                _ => current,
            })
            .collect()
    }

    /// How many program threads the steps use: 1 plus the highest `Thread` named.
    pub fn thread_count(&self) -> usize {
        self.steps
            .iter()
            .filter_map(|s| match s {
                Step::Thread { thread } => Some(usize::from(*thread) + 1),
                _ => None,
            })
            .max()
            .unwrap_or(1)
    }

    /// Whether graph `graph` (the scope closed by the program's `graph`-th `ExitScope`) records
    /// an op that draws random values (`Unspecified::Random`): its every replay draws again.
    pub fn graph_draws(&self, graph: usize) -> bool {
        let Some(exit) = self
            .steps
            .iter()
            .enumerate()
            .filter(|(_, s)| matches!(s, Step::ExitScope { .. }))
            .nth(graph)
            .map(|(i, _)| i)
        else {
            return false;
        };
        let Some(enter) = self.scope_ends().iter().position(|e| *e == Some(exit)) else {
            return false;
        };
        self.steps[enter..exit].iter().any(Step::draws)
    }
}

/// The Burn call of every op table entry, as the table writes it, with the operand kinds it
/// takes (a module entry's operand is a float).
pub fn table_calls() -> impl Iterator<Item = (&'static str, &'static [Kind])> {
    let two = BINARY.iter().chain(COMPARE).chain(SCALAR);
    UNARY
        .iter()
        .chain(two)
        .map(|s| (s.call, s.kinds))
        .chain(ALONG_DIM.iter().map(|s| (s.call, s.kinds)))
        .chain(MODULE.iter().map(|s| (s.call, &[Kind::Float][..])))
}

#[cfg(test)]
mod tests;
