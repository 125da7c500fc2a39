//! Shared plumbing for the controller binaries of this workspace.
//!
//! - [`leader`]: leader election on a `coordination.k8s.io/v1` Lease (client-go's rules) and
//!   running controllers only while leading.
//! - [`admin`]: `/metrics`, `/healthz`, `/readyz` and `/debug/log-level`.
//! - [`telemetry`]: `tracing` setup with a filter that can be changed at run time.
//! - [`client`]: `kube::Client`s from kubeconfig files, in-cluster config or Secrets, limited
//!   by [`ratelimit`].
//! - [`shutdown`]: SIGTERM/SIGINT to a cancellation token, with a bounded grace period.
//! - [`conditions`]: status conditions whose `lastTransitionTime` moves only with the status.
//! - [`controller`]: a kube-runtime `Controller` runner with metrics, backoff and Events.
//! - [`args`]: the shared, env-backed command-line flags.
//! - [`quantity`]: exact Kubernetes resource quantities.
//! - [`slim`]: objects read without `metadata.managedFields`.
//! - [`runtime`]: the async runtime, sized by a flag.
//! - [`process`]: the start-up every binary shares (logging, admin listeners, signals, client)
//!   and its exit code.
//! - [`x509`]: the user and groups of a client certificate's subject.
//! - [`fields`]: unknown fields of an object, from its kind's schema (`fieldValidation`).
//! - [`finalizer`]: adding and removing a finalizer with a guarded JSON patch.

#![warn(missing_docs)]
#![cfg_attr(test, allow(clippy::unwrap_used))]

pub mod admin;
pub mod args;
pub mod client;
pub mod conditions;
pub mod controller;
pub mod fields;
pub mod finalizer;
pub mod labels;
pub mod leader;
pub mod process;
pub mod quantity;
pub mod ratelimit;
pub mod runtime;
pub mod shutdown;
pub mod slim;
pub mod telemetry;
pub mod x509;

pub use args::Args;
pub use leader::{LeaderElector, LeaderState, LeaseElector};
