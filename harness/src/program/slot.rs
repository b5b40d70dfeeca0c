//! A tensor slot: where a program keeps a value between steps.

/// Index of a tensor slot, in `0..limits::MAX_SLOTS` once fixed up.
pub type Slot = u8;

/// The slots a step names: one to three for nearly every step, so they stay off the heap (the
/// interpreter and the oracles ask for them at every step).
pub type Slots = smallvec::SmallVec<[Slot; 6]>;
