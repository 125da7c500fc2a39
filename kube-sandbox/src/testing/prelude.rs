//! The stable test surface: what another project's tests import from kube-sandbox.
//!
//! `use kube_sandbox::testing::prelude::*;` brings in the cluster, its options, serving it
//! over loopback, simulated nodes, injected faults, the owner that shuts clusters down with
//! the test, the common setup (namespaces, CRDs) and the bounded waits. These names and their
//! signatures follow the crate's semver policy (a breaking change only with a new minor
//! version while the crate is 0.x). The other `testing` modules (`charts`, `kubectl`,
//! `kubectl_session`, `process`, `tools`) serve this workspace's own suites and may change in
//! any release.

pub use super::sandboxes::{Sandboxes, create_namespace, ensure_namespace, install_crds};
pub use super::wait::{eventually, eventually_every, eventually_some};
pub use crate::{
    Cluster, ClusterOptions, FaultAction, FaultRule, MetricsServerOptions, ServeOptions, Served,
    SimNode,
};
