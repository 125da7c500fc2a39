//! Test support shared by the workspace's test suites (feature `testing`): bounded waits,
//! running a binary until it exits, and the checks the Helm chart tests make of rendered
//! manifests. Helpers here panic on failure, as test helpers do.

pub mod charts;
pub mod process;
pub mod wait;

pub use wait::{eventually, eventually_every, eventually_some};
