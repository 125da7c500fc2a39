//! Runnable examples of the SDK: one idea per program in `src/bin/`, run by
//! `tests/examples.rs`. The library part holds what an example's own tests import.

#![warn(missing_docs)]

pub mod replicator;
