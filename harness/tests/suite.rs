//! The integration tests that need no process of their own, as modules of one test binary.
//!
//! Each test binary links all of Burn, cubecl and wgpu (about 320 MB in a debug build): one per
//! file made `cargo test` link 18 more and filled CI's disk. A test that sets process state (a
//! panic hook, a dead wgpu device, a child pinned to an adapter) keeps a binary of its own.

mod common;

#[path = "accuracy.rs"]
mod accuracy;
#[path = "agreement.rs"]
mod agreement;
#[path = "architecture.rs"]
mod architecture;
#[path = "class_names.rs"]
mod class_names;
#[path = "corpus.rs"]
mod corpus;
#[path = "flex_features.rs"]
mod flex_features;
#[path = "guide.rs"]
mod guide;
#[path = "interpreter.rs"]
mod interpreter;
#[path = "minimize.rs"]
mod minimize;
#[path = "model.rs"]
mod model;
#[path = "oracle_order.rs"]
mod oracle_order;
#[path = "oracles.rs"]
mod oracles;
#[path = "reference.rs"]
mod reference;
#[path = "root_causes.rs"]
mod root_causes;
#[path = "seeds.rs"]
mod seeds;
#[path = "small_faults.rs"]
mod small_faults;
#[path = "test_hooks.rs"]
mod test_hooks;
#[path = "threads.rs"]
mod threads;
