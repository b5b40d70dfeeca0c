//! Planted Burn bugs, compiled in only with the `planted-faults` feature, which only
//! `ci/nightly-e2e.sh` builds: they prove the nightly job turns a bug of each kind into a
//! bucket and a minimized pending case. Never in a build that tests Burn.
//!
//! Each fault stands where a Burn bug would: in the op call every path shares (the real run and
//! the mirrors alike), so the oracles meet it as they would meet Burn's own.

use super::value::{map_rank, AnyTensor};
use crate::program::Op;

/// The unary op that hangs on Flex, forever: a deadlock in a Flex kernel.
pub const HANGS_ON_FLEX: &str = "cos";
/// The unary op whose result is one too large on wgpu only: a wrong wgpu kernel.
pub const WRONG_ON_WGPU: &str = "exp";

/// `out`, the result of `op`, as the planted bugs leave it.
pub fn after_op(op: &Op, out: AnyTensor) -> AnyTensor {
    let Op::Unary { op: unary, .. } = op else {
        return out;
    };
    let device = super::pool::placed(&out.device()).base;
    match (unary.name(), device) {
        (HANGS_ON_FLEX, super::Base::Flex) => loop {
            std::thread::sleep(std::time::Duration::from_secs(1));
        },
        (WRONG_ON_WGPU, super::Base::Wgpu) => match out {
            AnyTensor::Float(r) => AnyTensor::Float(map_rank!(r, t => t.add_scalar(1))),
            other => other,
        },
        _ => out,
    }
}
