//! Test support shared by the workspace's test suites (feature `testing`): bounded waits,
//! sandbox clusters that shut down with the test, namespace and CRD setup, running a binary
//! until it exits, and the checks the Helm chart tests make of rendered manifests.
//! Helpers here panic on failure, as test helpers do.

pub mod charts;
pub mod process;
pub mod sandboxes;
pub mod wait;

pub use sandboxes::{Sandboxes, create_namespace, ensure_namespace, install_crds};
pub use wait::{eventually, eventually_every, eventually_some};
