//! Gradients independent of burn-autodiff: central finite differences in f64 over the
//! reference forward of the loss, as JAX's `check_grads` and PyTorch's `gradcheck` do.
//!
//! The run's values form a tape (one node per value a step made). For a `backward` step the
//! nodes that depend on the parameter, up to the loss, are evaluated again on host arrays with
//! one parameter element moved by ±h, every other node taken as the value Burn held; the sum
//! of the loss gives the derivative. A node that is not an op or a clone on that path (a move,
//! an autodiff step, a replay) leaves the gradient open: Burn's tape may or may not pass it.

use std::cell::OnceCell;

use super::error::step_size;
use super::host::Host;
use super::judge::value_of;
use super::of_op;
use crate::interpreter::AnyTensor;
use crate::program::{AutodiffMode, Kind, Op, Step, Unspecified};

mod replayed;
pub use replayed::{evaluate, path};

/// The largest parameter whose gradient is computed (each element costs four forward passes
/// along the path, and one more for the whole).
pub const MAX_ELEMENTS: usize = 64;

/// One value a step made.
pub struct Node {
    what: What,
    /// The nodes of its operands, in operand order.
    inputs: Vec<usize>,
    /// Burn's value (its eager Flex value), where it could be read: read from `handle` the
    /// first time a gradient needs it (most values are never on a gradient's path).
    value: OnceCell<Option<Host>>,
    /// Boxed: a handle is ~770 bytes, and the tape moves its nodes as it grows.
    handle: Option<Box<AnyTensor>>,
}

enum What {
    /// A float tensor made a gradient leaf (`require_grad`).
    Leaf,
    /// An op over its inputs.
    Op(Op),
    /// A clone: the same value, on the same tape.
    Clone,
    /// An op that draws random values: a replay of its graph draws again.
    Drawn,
    /// Anything else (created data, a move, an autodiff step, a replay, a gradient).
    Other,
}

impl Node {
    /// The node of the value `step` wrote, its operands' nodes `inputs` on `tape`: Burn's value
    /// `value` where it was read, else its tensor `handle`, read when needed.
    pub fn new(
        step: &Step,
        inputs: Vec<usize>,
        value: Option<Host>,
        handle: Option<AnyTensor>,
        tape: &[Node],
    ) -> Node {
        let float = value.as_ref().map_or_else(
            || handle.as_ref().is_some_and(|h| h.kind() == Kind::Float),
            |v| v.floats().is_some(),
        );
        // Burn's `require_grad` marks the node its operand holds: of a leaf, that leaf; of a
        // value an earlier `require_grad` made a leaf (a clone shares its node), that leaf too.
        let mut inputs = inputs;
        let same_leaf = match (step, inputs.first()) {
            (
                Step::Autodiff {
                    mode: AutodiffMode::RequireGrad,
                    ..
                },
                Some(&i),
            ) => {
                let src = root(tape, i);
                if is_leaf(tape, src) {
                    Some(src)
                } else {
                    tape.iter().position(|n| {
                        matches!(n.what, What::Leaf)
                            && n.inputs.first().is_some_and(|k| root(tape, *k) == src)
                    })
                }
            }
            _ => None,
        };
        if let Some(leaf) = same_leaf {
            inputs = vec![leaf];
        }
        // `autodiff()` of a tensor already on autodiff returns it unchanged (burn-tensor
        // api/autodiff.rs:216-222): the same node, a leaf staying that leaf (fuzz --seed 5).
        let already_autodiff = matches!(
            step,
            Step::Autodiff {
                mode: AutodiffMode::Enable,
                ..
            }
        ) && inputs
            .first()
            .and_then(|&i| tape.get(i)?.handle.as_ref())
            .is_some_and(|h| h.device().is_autodiff());
        let what = match step {
            _ if same_leaf.is_some() || already_autodiff => What::Clone,
            Step::Autodiff {
                mode: AutodiffMode::RequireGrad,
                ..
            } if float => What::Leaf,
            // swap_dims(d, d) hands back the tensor itself (burn-tensor api/base.rs:532-533):
            // the same node, which a later require_grad marks as the leaf it already is
            // (fuzz --seed 3: cat of the leaf and its swap has gradient 2 for either).
            Step::Op {
                op: Op::SwapDims { dim0, dim1, .. },
                ..
            } if dim0 == dim1 => What::Clone,
            Step::Op { op, .. } if !step.draws() => What::Op(op.clone()),
            Step::Op { .. } => What::Drawn,
            Step::Clone { .. } => What::Clone,
            _ => What::Other,
        };
        let cell = OnceCell::new();
        if let Some(v) = value {
            let _ = cell.set(Some(v));
        }
        Node {
            what,
            inputs,
            value: cell,
            handle: handle.map(Box::new),
        }
    }

    /// Burn's value, read now if it was not yet.
    pub fn value(&self) -> Option<&Host> {
        self.value
            .get_or_init(|| self.handle.as_deref().and_then(value_of).map(|(h, _)| h))
            .as_ref()
    }

    /// `node` as a value the tape cannot compute again (an operand of it is off the tape).
    pub fn other(node: Node) -> Node {
        Node {
            what: What::Other,
            ..node
        }
    }
}

/// The dtype Burn held node `i`'s value in, where the tape keeps its tensor.
pub fn dtype(tape: &[Node], i: usize) -> Option<burn::tensor::DType> {
    tape.get(i)?.handle.as_ref().map(|h| h.dtype())
}

/// Whether node `i` holds random values an op drew, itself or through copies of them.
pub fn drawn(tape: &[Node], i: usize) -> bool {
    // A clone, a move or an autodiff step of a draw holds the draw's values: a graph that
    // recorded the draw draws again when replayed (fuzz --aim unary:atanh: a draw, then its
    // without_autodiff, was a graph's output).
    let mut at = i;
    loop {
        let Some(node) = tape.get(at) else {
            return false;
        };
        match (&node.what, node.inputs.as_slice()) {
            (What::Drawn, _) => return true,
            (What::Clone | What::Other, [from]) if *from < at => at = *from,
            _ => return false,
        }
    }
}

/// The op node `i` computes, if it is an op's.
pub fn op_at(tape: &[Node], i: usize) -> Option<&Op> {
    match &tape.get(i)?.what {
        What::Op(op) => Some(op),
        _ => None,
    }
}

/// The op that made node `i` (through clones), for a gradient's signature.
pub fn op_name(tape: &[Node], i: usize) -> Option<String> {
    match &tape.get(root(tape, i))?.what {
        What::Op(op) => Some(op.name().to_string()),
        _ => None,
    }
}

/// The node `i` is a clone of (itself if it is not a clone).
fn root(tape: &[Node], i: usize) -> usize {
    match tape.get(i) {
        Some(Node {
            what: What::Clone,
            inputs,
            ..
        }) => inputs
            .first()
            .filter(|j| **j < i)
            .map_or(i, |j| root(tape, *j)),
        _ => i,
    }
}

/// Whether node `i` is a gradient leaf, or a clone of one.
fn is_leaf(tape: &[Node], i: usize) -> bool {
    match tape.get(i).map(|n| &n.what) {
        Some(What::Leaf) => true,
        Some(What::Clone) => tape[i]
            .inputs
            .first()
            .is_some_and(|j| *j < i && is_leaf(tape, *j)),
        _ => false,
    }
}

/// Why `op` over `operands` has no derivative Burn and the differences agree on, if at some
/// element it has none: its table row's points (the `error` column's `no_derivative`, hypot's
/// origin), or a clamp's bounds (a fixed op), where it passes the gradient by convention
/// (Burn's default body masks with strict comparisons, burn-backend backend/ops/tensor.rs:
/// 207-242, as PyTorch's clamp backward does), even where min equals max and it is flat.
fn no_derivative(op: &Op, operands: &[&Host]) -> Option<&'static str> {
    if let Op::Clamp { min, max, .. } = op {
        let xs = operands.first()?.floats()?;
        let at_bound = |x: &f64| *x == f64::from(*min) || *x == f64::from(*max);
        return xs.iter().flatten().any(at_bound).then_some(
            "a clamp on the path has an operand at one of its bounds, where Burn passes the \
             gradient by convention",
        );
    }
    let (at, why) = super::bound::arithmetic(op)?.no_derivative?;
    at(operands).then_some(why)
}

/// What the finite differences give for the gradient of `sum(loss)` with respect to `param`:
/// per element, the central difference, or `None` where the derivative is not pinned down (the
/// one-sided differences disagree, or the central one changes with h: a kink, a tie, a jump
/// within h, as at `abs`, `relu` and `max` at ties, `floor`, `sign`, a comparison or a mask's
/// edge). `Err`: why no element can be judged.
pub fn gradient(
    tape: &[Node],
    param: usize,
    loss: usize,
) -> Result<Vec<Option<f64>>, &'static str> {
    let (param, x) = parameter(tape, param)?;
    let xs = x.floats().ok_or("the parameter is not a float")?;
    if xs.len() > MAX_ELEMENTS {
        return Err("a parameter of more than 64 elements");
    }
    let path = Path::new(tape, param, loss)?;
    let here = path.forward(x);
    if let Some(why) = path.undefined.get() {
        return Err(why);
    }
    let grads: Vec<Option<f64>> = (0..xs.len())
        .map(|i| path.partial(x, i, here.as_ref()))
        .collect();
    if !path.directions_agree(x, &grads) {
        return Ok(vec![None; grads.len()]);
    }
    Ok(grads)
}

/// The parameter's own leaf (a clone of a leaf is the leaf) and its value.
fn parameter(tape: &[Node], param: usize) -> Result<(usize, &Host), &'static str> {
    let mut param = param;
    while let Some(Node {
        what: What::Clone,
        inputs,
        ..
    }) = tape.get(param)
    {
        param = *inputs.first().ok_or("no parameter")?;
    }
    let leaf = tape.get(param).ok_or("no parameter")?;
    if !matches!(leaf.what, What::Leaf) {
        return Err("the parameter is not a float leaf");
    }
    Ok((param, leaf.value().ok_or("the parameter is not readable")?))
}

/// One evaluation of the path at moved parameter values: the loss's elements, the largest
/// magnitude met, and every bool computed on the way.
type Forward = (Vec<f64>, f64, Vec<Option<bool>>);

/// The nodes of the tape between a parameter leaf and the loss.
struct Path<'a> {
    tape: &'a [Node],
    param: usize,
    loss: usize,
    /// Per node up to the loss, whether it depends on the parameter.
    depends: Vec<bool>,
    /// Why an op on the path has no derivative where it was evaluated, if one has none.
    undefined: std::cell::Cell<Option<&'static str>>,
}

impl<'a> Path<'a> {
    /// The path from leaf `param` to `loss`: `Err` where the loss does not depend on the
    /// parameter, or a step the differences cannot evaluate lies between them.
    fn new(tape: &'a [Node], param: usize, loss: usize) -> Result<Path<'a>, &'static str> {
        if loss < param {
            return Err("the loss does not depend on the parameter");
        }
        // The nodes on the path: those that depend on the parameter.
        let mut depends = vec![false; loss + 1];
        depends[param] = true;
        for n in param + 1..=loss {
            depends[n] = tape[n]
                .inputs
                .iter()
                .any(|i| *i == param || (*i < depends.len() && depends[*i]));
            if depends[n] && !matches!(tape[n].what, What::Op(_) | What::Clone) {
                return Err("a move or an autodiff step between the parameter and the loss");
            }
            // The reference of a quantized entry is its operand within one step, not the rounding
            // itself, whose derivative is 0 almost everywhere (and Burn documents none: a
            // one-element round trip is the identity, yet Burn passes no gradient through it:
            // fuzz --seed 2).
            if depends[n]
                && matches!(&tape[n].what, What::Op(op) if op.unspecified() == Unspecified::Quantized)
            {
                return Err("a quantized round trip between the parameter and the loss");
            }
        }
        if !depends[loss] {
            return Err("the loss does not depend on the parameter");
        }
        Ok(Path {
            tape,
            param,
            loss,
            depends,
            undefined: std::cell::Cell::new(None),
        })
    }

    // The loss's elements, and the largest magnitude on the path: the differences are taken
    // element by element (an unchanged element then adds nothing, where the difference of two
    // sums of 1e23 loses a change of 1e-6 entirely), and a path whose values are so large that
    // a step of h could vanish in them (a rounding of EPSILON * scale) leaves the element open.
    // It also gives every bool computed on the path: a comparison or a cast to bool that one
    // step of h flips (a mask `x != 0` at x = 0) changes which branch Burn's tape takes, so
    // the slope the differences see across it is not the one Burn differentiates, even where
    // the loss stays continuous (mask_where(x != 0, x, 0) is x, yet its branch at 0 passes no
    // gradient: fuzz --seed 0, over BF16).
    // An op on the path whose operands sit where it has no derivative, met at the parameter's
    // own values: the differences there may see a flat loss (a zero factor after the op) where
    // Burn's chain rule multiplies that zero by the op's undefined slope.
    fn forward(&self, moved: &Host) -> Option<Forward> {
        let mut values: Vec<Option<Host>> = vec![None; self.loss + 1];
        values[self.param] = Some(moved.clone());
        let mut scale = 0f64;
        let mut branches = Vec::new();
        for n in self.param + 1..=self.loss {
            if !self.depends[n] {
                continue;
            }
            let operands: Vec<&Host> = self.tape[n]
                .inputs
                .iter()
                .map(|i| {
                    if *i == self.param {
                        Some(moved)
                    } else if *i < self.depends.len() && self.depends[*i] {
                        values[*i].as_ref()
                    } else {
                        self.tape[*i].value()
                    }
                })
                .collect::<Option<_>>()?;
            for operand in &operands {
                for v in operand.floats().into_iter().flatten().flatten() {
                    scale = scale.max(v.abs());
                }
            }
            if let What::Op(op) = &self.tape[n].what {
                if let Some(why) = no_derivative(op, &operands) {
                    self.undefined.set(Some(why));
                }
            }
            let value = match &self.tape[n].what {
                What::Op(op) => of_op(op, &operands).ok()?,
                _ => (*operands.first()?).clone(),
            };
            branches.extend_from_slice(value.bools().unwrap_or_default());
            values[n] = Some(value);
        }
        let out = values[self.loss].take()?;
        let out: Option<Vec<f64>> = out.floats()?.iter().copied().collect();
        let out = out?;
        for v in &out {
            scale = scale.max(v.abs());
        }
        out.iter()
            .all(|v| v.is_finite())
            .then_some((out, scale, branches))
    }

    /// The central difference of the loss in element `i` of the parameter `x` (`here`: the path
    /// at `x`), or `None` where the derivative is not pinned down.
    fn partial(&self, x: &Host, i: usize, here: Option<&Forward>) -> Option<f64> {
        let xs = x.floats()?;
        // At a subnormal the 1/x terms of a backward formula (div's 1/b and -a/b², log's,
        // recip's) pass f32's range, and their sum is inf - inf where the definition's is 0
        // (x / x at f32::from_bits(1): fuzz --seed 0 with edge fills): not pinned down.
        let subnormal = |v: &f64| *v != 0.0 && v.abs() < f64::from(f32::MIN_POSITIVE);
        let xi = xs[i].filter(|v| v.is_finite() && !subnormal(v))?;
        let moved = |d: f64| {
            let mut v = xs.to_vec();
            v[i] = Some(xi + d);
            Host::float(x.shape.clone(), v)
        };
        let h = step_size(xi);
        let (here, here_scale, branches) = here?;
        let (up, up_scale, up_branches) = self.forward(&moved(h))?;
        let (down, down_scale, down_branches) = self.forward(&moved(-h))?;
        if up_branches != *branches || down_branches != *branches {
            return None;
        }
        let (ahead, behind, central) = (
            difference(&up, here) / h,
            difference(here, &down) / h,
            difference(&up, &down) / (2.0 * h),
        );
        // A jump (sign at 0, a step's edge) has equal one-sided differences that grow as h
        // shrinks: the central difference at a quarter of h must agree too.
        let narrow = match (
            self.forward(&moved(h / 4.0)),
            self.forward(&moved(-h / 4.0)),
        ) {
            (Some((u, _, _)), Some((d, _, _))) => difference(&u, &d) / (h / 2.0),
            _ => f64::NAN,
        };
        let close = |a: f64, b: f64| (a - b).abs() <= 1e-3 * a.abs().max(b.abs()).max(1.0);
        let scale = up_scale.max(*here_scale).max(down_scale);
        let resolved = f64::EPSILON * scale / h <= 1e-4 * central.abs().max(1.0);
        (resolved && close(ahead, behind) && close(central, narrow)).then_some(central)
    }

    /// Whether moving every judged element together, along all ones and along alternating
    /// signs, moves the loss by the sum of their gradients.
    fn directions_agree(&self, x: &Host, grads: &[Option<f64>]) -> bool {
        let Some(xs) = x.floats() else {
            return false;
        };
        // Each element moved alone misses a kink between elements: in a median or a max over equal
        // values, no element moved alone moves the result (each partial difference is 0), yet all
        // moved together move it by as much (Burn's subgradient gives it to one of them). Where the
        // function is differentiable, moving the judged elements along a direction moves the loss
        // by the sum of their gradients along it: along every element, and along alternating signs.
        for signs in [[1.0, 1.0], [1.0, -1.0]] {
            let direction: Vec<f64> = grads
                .iter()
                .enumerate()
                .map(|(i, g)| if g.is_some() { signs[i % 2] } else { 0.0 })
                .collect();
            if direction.iter().all(|d| *d == 0.0) {
                break;
            }
            let largest = xs.iter().flatten().fold(0f64, |m, v| m.max(v.abs()));
            let h = step_size(largest);
            let moved = |d: f64| {
                let v: Vec<Option<f64>> = xs
                    .iter()
                    .zip(&direction)
                    .map(|(x, k)| x.map(|x| x + d * k))
                    .collect();
                Host::float(x.shape.clone(), v)
            };
            let predicted: f64 = grads
                .iter()
                .zip(&direction)
                .map(|(g, k)| g.unwrap_or_default() * k)
                .sum();
            let agrees = match (self.forward(&moved(h)), self.forward(&moved(-h))) {
                (Some((u, _, _)), Some((d, _, _))) => {
                    let moved_by = difference(&u, &d) / (2.0 * h);
                    (moved_by - predicted).abs()
                        <= 1e-3 * moved_by.abs().max(predicted.abs()).max(1.0)
                }
                _ => false,
            };
            if !agrees {
                return false;
            }
        }
        true
    }
}

/// The difference of two evaluations, summed element by element.
fn difference(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(a, b)| a - b).sum::<f64>()
}

#[cfg(test)]
mod tests;
