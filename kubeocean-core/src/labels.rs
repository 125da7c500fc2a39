//! Label, annotation, taint and finalizer keys of Kubeocean's wire contract (kept identical
//! to upstream Kubeocean so that existing objects keep working).

/// Label on every object Kubeocean creates; value [`MANAGED_BY_VALUE`].
pub const MANAGED_BY: &str = "kubeocean.io/managed-by";
/// Value of [`MANAGED_BY`].
pub const MANAGED_BY_VALUE: &str = "kubeocean";

/// Whether an object carries `kubeocean.io/managed-by=kubeocean` (one Kubeocean created).
pub fn is_managed(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> bool {
    meta.labels
        .as_ref()
        .and_then(|l| l.get(MANAGED_BY))
        .is_some_and(|v| v == MANAGED_BY_VALUE)
}
/// Label on virtual nodes: name of the ClusterBinding they come from.
pub const CLUSTER_BINDING: &str = "kubeocean.io/cluster-binding";
/// Label on virtual nodes: `clusterID` of the worker cluster.
pub const PHYSICAL_CLUSTER_ID: &str = "kubeocean.io/physical-cluster-id";
/// Label on virtual nodes: name of the physical node.
pub const PHYSICAL_NODE_NAME: &str = "kubeocean.io/physical-node-name";
/// Label on virtual nodes: UID of the physical node (a new UID under the same name is a
/// replaced node, which gets a fresh virtual node).
pub const PHYSICAL_NODE_UID: &str = "kubeocean.io/physical-node-uid";
/// Label on physical nodes: name of the ResourceLeasingPolicy applied to them.
pub const POLICY_APPLIED: &str = "kubeocean.io/policy-applied";
/// Annotation on virtual nodes: the labels, annotations and taints the syncer last wrote
/// (base of the three-way merge that keeps user edits).
pub const EXPECTED_METADATA: &str = "kubeocean.io/expected-metadata";
/// Annotation on virtual nodes and objects: when they were last synced.
pub const LAST_SYNC_TIME: &str = "kubeocean.io/last-sync-time";
/// Label on virtual nodes: the proxier port that serves this node's kubelet API alone
/// (upstream's key; also written as `daemonEndpoints.kubeletEndpoint.Port`).
pub const PROXIER_PORT: &str = "kubeocean.io/proxier_port";
/// Annotation on DaemonSet pods that opts them in to mapping.
pub const RUNNING_DAEMONSET: &str = "kubeocean.io/running-daemonset";
/// Label (`"true"`) of the placeholder pods that hold a physical node's host ports on its
/// virtual node (upstream's key); they are never mapped.
pub const HOSTPORT_PLACEHOLDER: &str = "kubeocean.io/hostport-fake-pod";
/// Namespace of the computing cluster holding the host-port placeholder pods (upstream's).
pub const HOSTPORT_PLACEHOLDER_NAMESPACE: &str = "kubeocean-fake";

/// Annotation on physical pods: namespace of their virtual pod.
pub const VIRTUAL_POD_NAMESPACE: &str = "kubeocean.io/virtual-pod-namespace";
/// Annotation on physical pods: name of their virtual pod.
pub const VIRTUAL_POD_NAME: &str = "kubeocean.io/virtual-pod-name";
/// Annotation on physical pods: UID of their virtual pod.
pub const VIRTUAL_POD_UID: &str = "kubeocean.io/virtual-pod-uid";
/// Annotation on virtual pods: namespace of their physical pod.
pub const PHYSICAL_POD_NAMESPACE: &str = "kubeocean.io/physical-pod-namespace";
/// Annotation on virtual pods: name of their physical pod.
pub const PHYSICAL_POD_NAME: &str = "kubeocean.io/physical-pod-name";
/// Annotation on virtual pods: UID of their physical pod.
pub const PHYSICAL_POD_UID: &str = "kubeocean.io/physical-pod-uid";

/// Taint on every virtual node (`NoSchedule`) unless the binding disables it.
pub const TAINT_VNODE: &str = "kubeocean.io/vnode";
/// Taint (value `true`) on virtual nodes outside every time window of their policy.
pub const TAINT_OUT_OF_TIME_WINDOWS: &str = "kubeocean.io/out-of-time-windows";
/// Taint (`NoSchedule`) on virtual nodes being drained before removal.
pub const TAINT_VNODE_DELETING: &str = "kubeocean.io/vnode-deleting";
/// Name under which a physical node's `node.kubernetes.io/unschedulable` taint is copied.
pub const TAINT_PHYSICAL_NODE_UNSCHEDULABLE: &str = "kubeocean.io/physical-node-unschedulable";
/// Kubernetes' own taint on cordoned nodes.
pub const TAINT_NODE_UNSCHEDULABLE: &str = "node.kubernetes.io/unschedulable";

/// Finalizer on virtual nodes, held until their virtual pods are gone.
pub const FINALIZER_VNODE: &str = "kubeocean.io/vnode";

/// Node label whose value [`NODE_TYPE_VIRTUAL_KUBELET`] marks a virtual node.
pub const NODE_TYPE: &str = "type";
/// Value of [`NODE_TYPE`] on virtual nodes (ours and other virtual kubelets').
pub const NODE_TYPE_VIRTUAL_KUBELET: &str = "virtual-kubelet";
/// Kubernetes' hostname label.
pub const HOSTNAME: &str = "kubernetes.io/hostname";
/// Kubernetes' instance-type label.
pub const INSTANCE_TYPE: &str = "node.kubernetes.io/instance-type";
/// The deprecated instance-type label, still set by some providers.
pub const INSTANCE_TYPE_BETA: &str = "beta.kubernetes.io/instance-type";
/// Instance type set on every virtual node (both instance-type keys), as upstream does.
pub const INSTANCE_TYPE_VNODE: &str = "vnode";
/// Instance types of nodes that are themselves virtual (never lent).
pub const VIRTUAL_INSTANCE_TYPES: [&str; 3] = ["external", "vnode", "eklet"];
