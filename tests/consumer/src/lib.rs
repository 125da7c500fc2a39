//! Nothing here: the test in `tests/` is the point of this crate.
