//! What can fail while syncing, on which object, in which cluster.

use std::fmt;
use std::fmt::Display;

/// An error a reconciler returns: its reason labels metrics and Events.
pub trait Failure: Display {
    /// A short, low-cardinality `PascalCase` reason.
    fn reason(&self) -> &'static str;
}

/// What failed while syncing, on which object.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    /// Writing or deleting a virtual node failed.
    #[error("cannot {action} virtual node {name}: {source}")]
    VirtualNode {
        /// What was attempted.
        action: &'static str,
        /// Virtual node name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Every proxier port of the configured range is taken by another virtual node.
    #[error("no free proxier port for virtual node {name}: all of {first}-{last} are taken")]
    NoKubeletPort {
        /// Virtual node name.
        name: String,
        /// First port of the range.
        first: u16,
        /// Last port of the range.
        last: u16,
    },
    /// Labelling a physical node failed.
    #[error("cannot label physical node {name}: {source}")]
    PhysicalNode {
        /// Physical node name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Listing or deleting the virtual pods of a node being drained failed.
    #[error("cannot {action} the pods of virtual node {node}: {source}")]
    VirtualPods {
        /// What was attempted.
        action: &'static str,
        /// Virtual node name.
        node: String,
        /// The API error.
        source: kube::Error,
    },
    /// Renewing or deleting a virtual node's Lease failed.
    #[error("cannot {action} Lease kube-node-lease/{name}: {source}")]
    Lease {
        /// What was attempted.
        action: &'static str,
        /// Lease name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Mirroring a CSINode failed.
    #[error("cannot {action} CSINode {name}: {source}")]
    CsiNode {
        /// What was attempted.
        action: &'static str,
        /// CSINode name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing or deleting a host-port placeholder pod failed.
    #[error("cannot {action} host-port placeholder {name}: {source}")]
    HostPort {
        /// What was attempted.
        action: &'static str,
        /// Placeholder (or namespace) name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing a policy's status failed.
    #[error("cannot write the status of ResourceLeasingPolicy {name}: {source}")]
    PolicyStatus {
        /// Policy name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Releasing upstream Kubeocean's finalizer of a policy being deleted failed.
    #[error("cannot release the finalizer of ResourceLeasingPolicy {name}: {source}")]
    PolicyFinalizer {
        /// Policy name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Writing the binding's status failed.
    #[error("cannot write the status of ClusterBinding {name}: {source}")]
    BindingStatus {
        /// Binding name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
}

impl Failure for SyncError {
    fn reason(&self) -> &'static str {
        SyncError::reason(self)
    }
}

impl SyncError {
    /// A short reason for metrics and logs.
    pub fn reason(&self) -> &'static str {
        match self {
            SyncError::VirtualNode { .. } => "VirtualNodeWrite",
            SyncError::NoKubeletPort { .. } => "NoKubeletPort",
            SyncError::PhysicalNode { .. } => "PhysicalNodeLabel",
            SyncError::VirtualPods { .. } => "VirtualPodDelete",
            SyncError::Lease { .. } => "LeaseWrite",
            SyncError::CsiNode { .. } => "CSINodeWrite",
            SyncError::HostPort { .. } => "HostPortPlaceholderWrite",
            SyncError::PolicyStatus { .. } => "PolicyStatusWrite",
            SyncError::PolicyFinalizer { .. } => "PolicyFinalizerRelease",
            SyncError::BindingStatus { .. } => "BindingStatusWrite",
        }
    }
}

/// The HTTP status of an API error, if it is one.
pub(crate) fn api_code(err: &kube::Error) -> Option<u16> {
    match err {
        kube::Error::Api(status) => Some(status.code),
        _ => None,
    }
}

/// The cluster a request went to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The computing cluster (virtual objects).
    Computing,
    /// The worker cluster (physical objects).
    Worker,
}

impl fmt::Display for Side {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Side::Computing => "computing",
            Side::Worker => "worker",
        })
    }
}
