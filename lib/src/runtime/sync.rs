//! The atomics and the busy-wait step that the runtime's wait protocols
//! (the barrier, the stop flag) are built on: std's, or loom's when built
//! with the `loom` feature, so that the very same protocol code is model-checked
//! (see the `loom` tests next to each protocol).

#[cfg(feature = "loom")]
pub(crate) use loom::sync::atomic::{AtomicU8, AtomicUsize};
#[cfg(not(feature = "loom"))]
pub(crate) use std::sync::atomic::{AtomicU8, AtomicUsize};
