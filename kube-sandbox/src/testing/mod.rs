//! Test support shared by the workspace's test suites (feature `testing`): bounded waits,
//! sandbox clusters that shut down with the test, namespace and CRD setup, running a binary
//! until it exits, the checks the Helm chart tests make of rendered manifests, and the real
//! kubectl driven through a scripted session.
//! Helpers here panic on failure, as test helpers do.
//!
//! Another project's tests use [`prelude`]: the stable surface (see `docs/sandbox.md`, "Using
//! kube-sandbox in your own tests"). The other modules serve this workspace's own suites.

pub mod charts;
pub mod kubectl;
pub mod kubectl_session;
pub mod prelude;
pub mod process;
pub mod sandboxes;
pub mod tools;
pub mod wait;

pub use sandboxes::{Sandboxes, create_namespace, ensure_namespace, install_crds};
pub use wait::{eventually, eventually_every, eventually_some};
