//! A replayed graph's outputs recomputed on the tape: the ops that depend on the values the
//! replay was given computed again by the reference, every other node Burn's value.

use super::{of_op, Host, Node, What};
use crate::program::Tolerance;

/// The values of nodes `outputs` with the nodes of `given` taking the values given (a
/// replayed graph's outputs over the data fed to its inputs): each op that depends on a given
/// node is computed again by the reference over its operands, every other node is Burn's
/// value. Per output, its value and the scale its accumulations round at (the largest
/// magnitude on its path, at least 1, times the most elements, where an op on it adds terms
/// up; else 0),
/// or why it cannot be computed (a move, an autodiff step or a random draw between an input
/// and it; an unreadable value; no input on its path, so nothing the replay was fed; a step
/// function, such as ceil or a comparison, of a value an inexact op on the path computed
/// again: the definition and Burn may lie on two sides of a step, as lanczos3 of an arange
/// at its own size gives 0 in f64 and a hair above it in f32, whose ceil is 1).
pub fn evaluate(
    tape: &[Node],
    outputs: &[usize],
    given: &[(usize, &Host)],
) -> Vec<Result<(Host, f64), &'static str>> {
    let first = given.iter().map(|(n, _)| *n).min().unwrap_or(usize::MAX);
    let last = outputs.iter().copied().max().unwrap_or(0);
    // Per computed node: its value, and its path's largest magnitude, most elements, whether
    // an op on it accumulates and whether one rounds (neither exact nor a step function).
    type Computed = Result<(Host, f64, usize, bool, bool), &'static str>;
    let mut values: std::collections::BTreeMap<usize, Computed> = (given.iter())
        .map(|(n, h)| (*n, Ok(((*h).clone(), largest(h), h.numel(), false, false))))
        .collect();
    for n in first.saturating_add(1)..=last.min(tape.len().saturating_sub(1)) {
        if values.contains_key(&n) {
            continue;
        }
        let node = &tape[n];
        if !node.inputs.iter().any(|i| values.contains_key(i)) {
            continue;
        }
        let computed = (|| {
            let mut path = (0f64, 0usize, false, false);
            let mut operands: Vec<&Host> = Vec::new();
            for i in &node.inputs {
                let host = match values.get(i) {
                    Some(Ok((h, m, e, acc, inexact))) => {
                        path = (
                            path.0.max(*m),
                            path.1.max(*e),
                            path.2 || *acc,
                            path.3 || *inexact,
                        );
                        h
                    }
                    Some(Err(why)) => return Err(*why),
                    None => tape[*i]
                        .value()
                        .ok_or("an operand Burn holds no readable value for")?,
                };
                path.0 = path.0.max(largest(host));
                path.1 = path.1.max(host.numel());
                operands.push(host);
            }
            let value = match &node.what {
                What::Op(op) => {
                    let tolerance = op.tolerance();
                    if tolerance == Tolerance::Step && path.3 {
                        return Err("a step function of a value an inexact op computed again");
                    }
                    path.2 |= op.accumulates();
                    path.3 |= !matches!(tolerance, Tolerance::Exact | Tolerance::Step);
                    of_op(op, &operands)?
                }
                What::Clone => (*operands.first().ok_or("no operand")?).clone(),
                _ => return Err("a move, an autodiff step or a draw between a graph input and it"),
            };
            let m = path.0.max(largest(&value));
            Ok((value, m, path.1, path.2, path.3))
        })();
        values.insert(n, computed);
    }
    outputs
        .iter()
        .map(|o| match values.get(o) {
            // At least one per element where an op accumulates, as an eager step's scale is:
            // a path of infinities has no finite magnitude, and a scale of 0 would say that no
            // op on it adds terms up (so a non-finite sum would not be left any non-finite).
            Some(Ok((h, m, e, acc, _))) => {
                Ok((h.clone(), if *acc { m.max(1.0) * *e as f64 } else { 0.0 }))
            }
            Some(Err(why)) => Err(*why),
            None => Err("a graph output no fed input reaches (eager-replay compares it)"),
        })
        .collect()
}

/// The nodes the value of `output` is computed from by ops and clones alone, and the nodes of
/// those ops and clones (`output` among them, unless it is a source): each source is a node
/// on its path that is neither (created data, a move, a leaf, a replay). A graph replayed
/// without new inputs computes its outputs again from its sources.
pub fn path(tape: &[Node], output: usize) -> (Vec<usize>, Vec<usize>) {
    let mut seen = std::collections::BTreeSet::new();
    let (mut computed, mut sources) = (Vec::new(), Vec::new());
    let mut stack = vec![output];
    while let Some(n) = stack.pop() {
        let Some(node) = tape.get(n).filter(|_| seen.insert(n)) else {
            continue;
        };
        match node.what {
            What::Op(_) | What::Clone => {
                computed.push(n);
                stack.extend(&node.inputs);
            }
            _ => sources.push(n),
        }
    }
    (computed, sources)
}

/// The largest finite magnitude of a float array (0 for others).
fn largest(h: &Host) -> f64 {
    (h.floats().into_iter().flatten().flatten())
        .filter(|v| v.is_finite())
        .fold(0.0, |m, v| m.max(v.abs()))
}
