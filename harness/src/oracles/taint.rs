//! Poison: why the differential leaves a value uncompared (results Burn does not pin down, or a
//! catalogued bug's), at which elements, and how an op carries them through its [`Reach`].

use std::sync::Arc;

use crate::program::Reach;

/// Why a value is not compared: results Burn does not pin down (so backends may legitimately
/// disagree), or results of a bug that is already catalogued and stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Poison {
    /// `argmax` over a lane holding equal maxima (or a NaN): which index wins is a kernel detail
    /// (Flex takes the first, a parallel GPU reduction may not).
    ArgmaxTie,
    /// A float cast to int where a value is NaN or outside the `i32` range: Burn does not say
    /// what it becomes (Flex saturates to `i32::MAX`, WGSL clamps to the largest `f32` below
    /// 2^31, 2147483520). Also a quantization of a tensor holding a NaN or an infinity, which
    /// casts `x / scale` to int with a non-finite scale.
    OutOfRangeCast,
    /// A Flex value holding wgpu's `Bool(U32)` storage: the catalogued `bool-storage-transfer`
    /// bug, which makes Flex misread it (a wgpu `[true, true]` casts to `[1.0, 0.0]` on Flex).
    BoolU32OnFlex,
    /// The value was computed from a poisoned or already diverged value.
    FromPoisoned,
    /// An index result (argmin, argsort) over a lane holding equal values or a NaN: which of
    /// the equal values it points to is a kernel detail.
    IndexTie,
    /// A cast to bool or a comparison over a NaN: WGSL leaves comparisons with NaN
    /// indeterminate (an implementation may assume NaNs absent), so `NaN.bool()` is `true` on
    /// Flex (IEEE `NaN != 0`) and may be `false` on wgpu.
    NanCompared,
    /// A discontinuous op (floor, sign, a comparison, a cast to int) over an operand Flex and
    /// wgpu computed slightly differently (within tolerance, not bit for bit): its result
    /// legitimately differs at the discontinuity.
    InexactOperand,
    /// A periodic function (sin, cos, tan) of an operand far from zero (see
    /// `Unspecified::Large`): WGSL does not bound its error there.
    LargeArgument,
    /// A hyperbolic function past `exp`'s range (see `Unspecified::Overflow`): WGSL allows it
    /// to overflow to infinity.
    ExpOverflow,
    /// wgpu could not compute or read the value because of a catalogued Burn bug (a kernel
    /// whose shader does not compile): what later ops make of its buffer is that bug again, not
    /// a new divergence (fuzz --backends flex,capture,wgpu --seed 45: a failed fmod's
    /// never-written output concatenated as zeros).
    KnownBug,
    /// Computed from a value whose zeros Flex and wgpu signed differently: Burn does not pin
    /// down the sign of a zero result (Flex's remainder(-13, -13) is -0, as NumPy's; WGSL's
    /// floor-mod formula gives +0), and an op with a pole or a branch cut at zero maps the two
    /// apart (a negative power: -inf on Flex, +inf on wgpu; fuzz --backends flex,capture,wgpu
    /// --seed 105).
    SignedZero,
    /// An op with a pole at zero (see `Unspecified::Pole`) over an operand near zero, or at -1
    /// and 1 (`Unspecified::UnitEdge`) over one near them, where the operands were not
    /// bit-identical on both backends.
    NearPole,
    /// An inverse hyperbolic past its square's range (see `Unspecified::SquareOverflow`).
    SquareOverflow,
    /// A float remainder or fmod of an operand past
    /// [`INEXACT_QUOTIENT`](crate::program::limits::INEXACT_QUOTIENT), where WGSL's formula
    /// rounds the quotient.
    InexactQuotient,
    /// A draw of a device's random generator (see `Unspecified::Random`), or a value computed
    /// from one.
    RandomDraw,
    /// A graph holding a tensor of a dtype the program named and the wgpu device says it does not
    /// support (see `UNSUPPORTED_DTYPE`): Burn promises nothing for its replay there.
    UnsupportedDtype,
    /// An op adding terms up whose partial sums may pass its dtype's range (see
    /// `compare::partial_sums_may_overflow`): where they overflow is the backend's choice.
    PartialSumOverflow,
    /// A resampling over an infinite sample (see `Unspecified::Infinite`): whether its taps of
    /// zero weight make it NaN is the kernel's choice.
    InfiniteSample,
    /// The eager Flex value a replayed output is compared with differs from its own op's
    /// definition (the reference oracle found its step wrong): the baseline itself is wrong, a
    /// difference from it is that bug, not the replay's.
    EagerWrong,
    /// An int the eager Flex run holds in a narrower dtype than the real run's (Flex's I32
    /// default where a capture device's is I64) and computed there from a value that dtype
    /// cannot hold (`abs` of `i32::MIN`): Burn pins no int overflow down, and an op after it
    /// (a division, a remainder) parts the narrow run from the wide one for good, so the
    /// replay's wide value is no image of the eager one.
    NarrowOverflow,
    /// An int op that takes the magnitude of its dtype's minimum (see
    /// `Unspecified::IntMinimum`): Burn pins no int overflow down.
    IntMinimum,
}

impl Poison {
    /// Every reason.
    pub const ALL: [Poison; 21] = [
        Poison::ArgmaxTie,
        Poison::OutOfRangeCast,
        Poison::BoolU32OnFlex,
        Poison::FromPoisoned,
        Poison::IndexTie,
        Poison::NanCompared,
        Poison::InexactOperand,
        Poison::LargeArgument,
        Poison::ExpOverflow,
        Poison::KnownBug,
        Poison::SignedZero,
        Poison::NearPole,
        Poison::SquareOverflow,
        Poison::InexactQuotient,
        Poison::RandomDraw,
        Poison::UnsupportedDtype,
        Poison::InfiniteSample,
        Poison::PartialSumOverflow,
        Poison::EagerWrong,
        Poison::NarrowOverflow,
        Poison::IntMinimum,
    ];

    /// The reason of this [`Poison::name`].
    pub fn named(name: &str) -> Option<Poison> {
        Poison::ALL.into_iter().find(|p| p.name() == name)
    }

    /// A stable name, for counts in verdicts and reports.
    pub fn name(self) -> &'static str {
        match self {
            Poison::ArgmaxTie => "argmax-tie",
            Poison::OutOfRangeCast => "out-of-range-cast",
            Poison::BoolU32OnFlex => "bool-u32-on-flex",
            Poison::FromPoisoned => "from-poisoned",
            Poison::InexactOperand => "inexact-operand",
            Poison::NanCompared => "nan-compared",
            Poison::IndexTie => "index-tie",
            Poison::LargeArgument => "large-argument",
            Poison::ExpOverflow => "exp-overflow",
            Poison::KnownBug => "known-bug",
            Poison::SignedZero => "signed-zero",
            Poison::NearPole => "near-pole",
            Poison::RandomDraw => "random-draw",
            Poison::SquareOverflow => "square-overflow",
            Poison::InexactQuotient => "inexact-quotient",
            Poison::UnsupportedDtype => "unsupported-dtype",
            Poison::InfiniteSample => "infinite-sample",
            Poison::PartialSumOverflow => "partial-sum-overflow",
            Poison::EagerWrong => "eager-wrong",
            Poison::NarrowOverflow => "narrow-overflow",
            Poison::IntMinimum => "int-minimum",
        }
    }
}

/// How finely a poison reason marks a value (see [`Poison::grain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Grain {
    /// The elements where the reason holds.
    Element,
    /// The lanes along the op's dim where it holds.
    Lane,
    /// The whole value.
    Value,
}

impl Grain {
    /// A stable name, for summaries.
    pub fn name(self) -> &'static str {
        match self {
            Grain::Element => "per element",
            Grain::Lane => "per lane",
            Grain::Value => "per value",
        }
    }
}

impl Poison {
    /// How finely this reason marks a value, and why not finer where it is not per element.
    /// What the marked elements reach downstream follows the op table's `Reach`.
    pub fn grain(self) -> (Grain, &'static str) {
        match self {
            Poison::NanCompared
            | Poison::NearPole
            | Poison::LargeArgument
            | Poison::ExpOverflow
            | Poison::SquareOverflow
            | Poison::InfiniteSample
            | Poison::SignedZero
            | Poison::IntMinimum => (Grain::Element, ""),
            Poison::InexactOperand => (
                Grain::Element,
                "per value for a gradient through a step op, a remainder's jump, and a value \
                 judged within an absolute floor (a cancelled sum, a quantization step)",
            ),
            Poison::OutOfRangeCast => (
                Grain::Element,
                "per value for a quantization: one scale for the whole tensor",
            ),
            Poison::FromPoisoned => (
                Grain::Element,
                "as far as the op's reach carries it; a replay, a gradient and a divergence \
                 carry it to the whole value",
            ),
            Poison::ArgmaxTie => (Grain::Lane, "which index wins is per lane"),
            Poison::IndexTie => (
                Grain::Lane,
                "per value for a pooling's indices: its windows overlap",
            ),
            Poison::KnownBug => (
                Grain::Value,
                "wgpu computed no value, or failed its device's whole stream",
            ),
            Poison::BoolU32OnFlex => (Grain::Value, "the storage of the whole value is misread"),
            Poison::RandomDraw => (Grain::Value, "every element is a draw"),
            Poison::PartialSumOverflow => (
                Grain::Value,
                "which partial sums a backend forms is its own: any element may hold one",
            ),
            Poison::UnsupportedDtype => (Grain::Value, "the whole graph is not replayed on wgpu"),
            Poison::EagerWrong => (Grain::Value, "the reference reports one element per value"),
            Poison::NarrowOverflow => (
                Grain::Value,
                "an op after the overflow (a sum, a sort) may carry it to any element",
            ),
            Poison::InexactQuotient => (
                Grain::Value,
                "a dividend past the limit anywhere (the check reads the whole operand)",
            ),
        }
    }
}

/// Which elements of a value a fact holds for.
#[derive(Clone, Debug, PartialEq)]
pub enum Elements {
    /// Every element (a reason that is not per element, or one that reached the whole value).
    All,
    /// The set bits of a row-major mask over the value's shape.
    At(Arc<Mask>),
}

/// A row-major mask over a shape: `bits.len()` is the shape's element count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Mask {
    /// The value's shape.
    pub shape: Vec<usize>,
    /// One bit per element, row-major.
    pub bits: Vec<bool>,
}

/// Why (some of) a value's elements are not compared, and which.
#[derive(Clone, Debug, PartialEq)]
pub struct Taint {
    /// The reason.
    pub why: Poison,
    /// The elements it holds for.
    pub at: Elements,
}

impl Elements {
    /// The elements where `bits` is set, over `shape`; `None` when no bit is.
    pub fn of(shape: &[usize], bits: Vec<bool>) -> Option<Elements> {
        debug_assert_eq!(bits.len(), shape.iter().product::<usize>());
        bits.iter().any(|b| *b).then(|| {
            Elements::At(Arc::new(Mask {
                shape: shape.to_vec(),
                bits,
            }))
        })
    }

    /// Both sets of elements; a mask over another shape cannot be merged, so that is all.
    pub fn union(self, other: Elements) -> Elements {
        match (self, other) {
            (Elements::At(a), Elements::At(b)) if a.shape == b.shape => {
                let bits = a.bits.iter().zip(&b.bits).map(|(x, y)| *x || *y).collect();
                Elements::At(Arc::new(Mask {
                    shape: a.shape.clone(),
                    bits,
                }))
            }
            _ => Elements::All,
        }
    }

    /// The elements in both; `None` when there are none.
    pub fn intersect(&self, other: &Elements) -> Option<Elements> {
        match (self, other) {
            (Elements::All, e) | (e, Elements::All) => Some(e.clone()),
            (Elements::At(a), Elements::At(b)) if a.shape == b.shape => {
                let bits = a.bits.iter().zip(&b.bits).map(|(x, y)| *x && *y).collect();
                Elements::of(&a.shape, bits)
            }
            // Not comparable position by position: keep the narrower claim honest by keeping both.
            (a, b) => Some(a.clone().union(b.clone())),
        }
    }

    /// The elements of a result of shape `to` that these operand elements reach through an op
    /// of reach `reach`. `All` for an unmapped reach or a shape the reach cannot map.
    pub fn reach(&self, reach: Reach, to: &[usize]) -> Elements {
        let Elements::At(mask) = self else {
            return Elements::All;
        };
        let bits = match reach {
            Reach::Elementwise => broadcast(mask, to),
            Reach::Lane(dim) => lanes(mask, dim, to),
            Reach::RowMajor => {
                (mask.bits.len() == to.iter().product::<usize>()).then(|| mask.bits.clone())
            }
            Reach::Whole => None,
        };
        match bits {
            Some(bits) if bits.len() == to.iter().product::<usize>() => {
                Elements::of(to, bits).unwrap_or(Elements::All)
            }
            _ => Elements::All,
        }
    }

    /// The mask, when it is one over `shape` with some bit clear: what a comparison skips.
    /// `None` when every element is covered (or the mask is over another shape).
    pub fn skips(&self, shape: &[usize]) -> Option<&[bool]> {
        match self {
            Elements::At(m) if m.shape == shape && m.bits.iter().any(|b| !*b) => Some(&m.bits),
            _ => None,
        }
    }
}

impl Taint {
    /// `why` for every element.
    pub fn whole(why: Poison) -> Taint {
        Taint {
            why,
            at: Elements::All,
        }
    }

    /// Both taints: the elements of either, named after the one that covers every element if
    /// one does (that is why the value is not compared at all), else after the first.
    pub fn or(a: Option<Taint>, b: Option<Taint>) -> Option<Taint> {
        match (a, b) {
            (None, t) | (t, None) => t,
            (Some(a), Some(b)) => {
                let why = match (&a.at, &b.at) {
                    (Elements::At(_), Elements::All) => b.why,
                    _ => a.why,
                };
                Some(Taint {
                    why,
                    at: a.at.union(b.at),
                })
            }
        }
    }

    /// Whether every element of a value of `shape` is covered: nothing is left to compare.
    pub fn covers(&self, shape: &[usize]) -> bool {
        self.at.skips(shape).is_none()
    }
}

/// `mask` broadcast to `to` (same rank, each dim equal or 1), `None` if it does not broadcast.
fn broadcast(mask: &Mask, to: &[usize]) -> Option<Vec<bool>> {
    let from = &mask.shape;
    if from.as_slice() == to {
        return Some(mask.bits.clone());
    }
    if from.len() != to.len() || from.iter().zip(to).any(|(f, t)| *f != *t && *f != 1) {
        return None;
    }
    let strides = strides(from);
    let n: usize = to.iter().product();
    Some(
        (0..n)
            .map(|flat| {
                let mut rest = flat;
                let mut at = 0;
                for d in (0..to.len()).rev() {
                    let i = rest % to[d];
                    rest /= to[d];
                    if from[d] != 1 {
                        at += i * strides[d];
                    }
                }
                mask.bits[at]
            })
            .collect(),
    )
}

/// The lanes along `dim` holding a set bit, spread over every element of the same lane of a
/// result of shape `to`: the operand's shape, or it with `dim` reduced to 1.
fn lanes(mask: &Mask, dim: usize, to: &[usize]) -> Option<Vec<bool>> {
    let from = &mask.shape;
    let len = *from.get(dim)?;
    let reduced = from.len() == to.len()
        && to[dim] == 1
        && from
            .iter()
            .zip(to)
            .enumerate()
            .all(|(d, (f, t))| d == dim || f == t);
    if from.as_slice() != to && !reduced {
        return None;
    }
    let inner: usize = from[dim + 1..].iter().product();
    let lane_of = |flat: usize, len: usize| (flat / (inner * len)) * inner + flat % inner;
    let mut hit = vec![false; mask.bits.len() / len.max(1)];
    for (flat, bit) in mask.bits.iter().enumerate() {
        if *bit {
            hit[lane_of(flat, len)] = true;
        }
    }
    let out_len = to[dim];
    let n: usize = to.iter().product();
    Some((0..n).map(|flat| hit[lane_of(flat, out_len)]).collect())
}

/// Row-major strides of `shape`.
fn strides(shape: &[usize]) -> Vec<usize> {
    let mut strides = vec![1; shape.len()];
    for d in (0..shape.len().saturating_sub(1)).rev() {
        strides[d] = strides[d + 1] * shape[d + 1];
    }
    strides
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(shape: &[usize], bits: &[u8]) -> Elements {
        Elements::of(shape, bits.iter().map(|b| *b != 0).collect()).unwrap()
    }

    fn bits(e: &Elements) -> Vec<u8> {
        match e {
            Elements::At(m) => m.bits.iter().map(|b| u8::from(*b)).collect(),
            Elements::All => vec![],
        }
    }

    #[test]
    fn an_element_wise_op_carries_a_mask_to_the_same_positions_and_broadcasts_a_size_one_dim() {
        let row = at(&[1, 3], &[0, 1, 0]);
        assert_eq!(bits(&row.reach(Reach::Elementwise, &[1, 3])), [0, 1, 0]);
        assert_eq!(
            bits(&row.reach(Reach::Elementwise, &[2, 3])),
            [0, 1, 0, 0, 1, 0]
        );
        let column = at(&[2, 1], &[1, 0]);
        assert_eq!(
            bits(&column.reach(Reach::Elementwise, &[2, 3])),
            [1, 1, 1, 0, 0, 0]
        );
        assert_eq!(row.reach(Reach::Elementwise, &[3, 1]), Elements::All);
    }

    #[test]
    fn a_lane_op_spreads_a_bit_over_its_lane_and_a_reduction_keeps_the_lane_position() {
        // [[a, b, c], [d, e, f]] with e poisoned.
        let m = at(&[2, 3], &[0, 0, 0, 0, 1, 0]);
        assert_eq!(bits(&m.reach(Reach::Lane(1), &[2, 3])), [0, 0, 0, 1, 1, 1]);
        assert_eq!(bits(&m.reach(Reach::Lane(1), &[2, 1])), [0, 1]);
        assert_eq!(bits(&m.reach(Reach::Lane(0), &[2, 3])), [0, 1, 0, 0, 1, 0]);
        assert_eq!(bits(&m.reach(Reach::Lane(0), &[1, 3])), [0, 1, 0]);
        assert_eq!(m.reach(Reach::Lane(1), &[3, 2]), Elements::All);
    }

    #[test]
    fn a_reshape_keeps_row_major_positions_and_whole_reach_covers_everything() {
        let m = at(&[2, 2], &[0, 1, 0, 0]);
        assert_eq!(bits(&m.reach(Reach::RowMajor, &[4])), [0, 1, 0, 0]);
        assert_eq!(m.reach(Reach::Whole, &[2, 2]), Elements::All);
        assert_eq!(Elements::All.reach(Reach::Elementwise, &[2]), Elements::All);
    }

    #[test]
    fn a_union_with_every_element_is_every_element_and_names_the_whole_reason() {
        let part = Some(Taint {
            why: Poison::NearPole,
            at: at(&[2], &[1, 0]),
        });
        let whole = Some(Taint::whole(Poison::KnownBug));
        let both = Taint::or(part.clone(), whole).unwrap();
        assert_eq!((both.why, both.at), (Poison::KnownBug, Elements::All));
        let other = Some(Taint {
            why: Poison::SignedZero,
            at: at(&[2], &[0, 1]),
        });
        let both = Taint::or(part, other).unwrap();
        assert_eq!(both.why, Poison::NearPole);
        assert!(both.covers(&[2]));
    }

    #[test]
    fn a_partial_mask_says_what_a_comparison_skips() {
        let m = at(&[3], &[0, 1, 0]);
        assert_eq!(m.skips(&[3]), Some(&[false, true, false][..]));
        assert_eq!(m.skips(&[1, 3]), None);
        let near = at(&[3], &[1, 1, 0]);
        assert_eq!(bits(&m.intersect(&near).unwrap()), [0, 1, 0]);
        assert_eq!(at(&[3], &[1, 0, 0]).intersect(&m), None);
    }
}
