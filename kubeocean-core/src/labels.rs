//! Label, annotation, taint and finalizer keys of Kubeocean's wire contract, kept identical
//! to upstream Kubeocean (gocrane/kubeocean, `api/v1beta1/constants.go` unless said
//! otherwise) so that a cluster switches from upstream to us and back.
//!
//! What upstream reads or writes, with its encoding, and what we do with it
//! (docs/kubeocean/migrate-from-upstream.md has the same table for operators):
//!
//! | key | on | upstream writes (file, function) | value | we |
//! |---|---|---|---|---|
//! | label `kubeocean.io/managed-by` | vnodes, physical objects | everywhere | `kubeocean` | write, select on |
//! | labels `kubeocean.io/cluster-binding`, `physical-cluster-id`, `physical-node-name`, `physical-node-uid` | vnodes | `physical_node_controller.go` `buildVirtualNodeLabels` | names, UID | write, read |
//! | label `kubeocean.io/physical-node-innerip` | vnodes | `buildVirtualNodeLabels`; read by `pkg/proxier/node_controller.go` | physical InternalIP | write |
//! | label `kubeocean.io/proxier_port` | vnodes | `buildVirtualNodeLabels` | decimal port | write (port per node), read |
//! | labels `type`, both instance types, `kubernetes.io/hostname` | vnodes | `buildVirtualNodeLabels` | `virtual-kubelet`, `vnode`, vnode name | write |
//! | the physical node's labels and annotations | vnodes | `buildVirtualNodeLabels` / `buildVirtualNodeAnnotations` | copied | labels: write; annotations: not copied (removed on take-over) |
//! | annotation `kubeocean.io/expected-metadata` | vnodes, physical pods | `saveExpectedMetadataToAnnotation`, `virtual_pod_controller.go` `outputExpectedPodMetadataToAnnotation` | base64 (std, padded) of JSON `{labels, annotations, taints}` | write that, read it and our plain JSON |
//! | annotation `kubeocean.io/prometheus-url` | vnodes | `buildVirtualNodeAnnotations` | `{proxier pod IP}:9006/{vnode}`, `<pending>:9006/{vnode}` | write |
//! | annotation `kubeocean.io/policies-applied` | vnodes | `buildVirtualNodeAnnotations` | policy names joined by `,`, or empty | write |
//! | annotations `kubeocean.io/policy-details`, `last-sync-time`, `physical-node-name`, `physical-node-uid` | vnodes | `buildVirtualNodeAnnotations` | text, RFC 3339 time | not written; removed on take-over (upstream recorded them) |
//! | annotation `kubeocean.io/deletion-taint-time` | vnodes | `addDeletionTaint` | RFC 3339 | not written (we record the drain in expected-metadata) |
//! | label `kubeocean.io/policy-applied` | physical nodes | `ensurePolicyAppliedLabel` | policy name | write, never copied to vnodes |
//! | taints `kubeocean.io/vnode`, `out-of-time-windows`, `physical-node-unschedulable`, `vnode-deleting` | vnodes | `transformTaints`, `addDeletionTaint` | `NoSchedule`/`NoExecute` | write |
//! | finalizer `kubeocean.io/vnode` | vnodes | `createOrUpdateVirtualNode` | | write, release |
//! | labels `kubeocean.io/virtual-namespace`, `workload-type`, `workload-name` | physical pods | `virtual_pod_controller.go` `buildPhysicalPodLabels` / `getWorkloadInfo` | namespace, lower-case owner kind, owner name | write |
//! | annotations `kubeocean.io/virtual-pod-namespace`, `-name`, `-uid`, `virtual-node-name` | physical pods | `buildPhysicalPodAnnotations` | | write, read |
//! | annotations `kubeocean.io/physical-pod-namespace`, `-name`, `-uid` | virtual pods | `physical_pod_controller.go` `buildSyncPod` | | write, read |
//! | label `kubeocean.io/service-account-token` | physical token Secrets | `virtual_pod_controller.go` (token Secret) | `true` | write |
//! | label `kubeocean.io/synced-by-<clusterID>`, `used-by-pv`; annotations `physical-name`, `physical-namespace`, `deleting-<clusterID>`; finalizer `kubeocean.io/finalizer-<clusterID>` | virtual ConfigMaps, Secrets, PVCs, PVs | `topdown/common/common.go` `UpdateVirtualResourceLabelsAndAnnotations`, `AddClusterBindingDeletingAnnotation` | `true`, names | removed on take-over as upstream's `RemoveSyncedResourceFinalizerAndLabels` does |
//! | finalizer `kubeocean.io/synced-resource` | | declared only, never written | | ignored |
//! | finalizers `kubeocean.io/clusterbinding-manager`, `-syncer` | ClusterBindings | `clusterbinding_controller.go`, `clusterbinding.go` | | released (`upgrade.rs`) |
//! | finalizer `policy.kubeocean.io/finalizer` | ResourceLeasingPolicies | `resourceleasingpolicy_controller.go` | | released |
//! | annotation `kubeocean.io/running-daemonset`; label `kubeocean.io/hostport-fake-pod` | virtual pods | users; `hostport_node_controller.go` | `true` | read; write |
//! | conditions `Ready`, `Connected`, `SyncerReady`, `ProxierReady` | ClusterBindings | `clusterbinding_controller.go` `updateCondition` | | `Ready`, `Connected` (our reasons) |
//! | conditions `Valid`, `Active` (reasons `ValidationPassed`, `ValidationError`, `ActiveTimeWindow`, `InactiveTimeWindow`) | policies | `resourceleasingpolicy_controller.go` | | same |
//! | Events `FailedSchedulingPod`, `FailedCreatePod`; pod reason `PhysicalPodLost` | virtual pods | `virtual_pod_controller.go` | | `FailedSchedulingPod`, `PhysicalPodLost` |

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
/// Label on virtual nodes: the physical node's `InternalIP` (upstream's proxier reads it).
pub const PHYSICAL_NODE_INNER_IP: &str = "kubeocean.io/physical-node-innerip";
/// Annotation on virtual nodes: where the node's cAdvisor metrics are scraped,
/// `{proxier pod IP}:{PROMETHEUS_VNODE_PORT}/{vnode}` (`/metrics` appended by scrape jobs).
pub const PROMETHEUS_URL: &str = "kubeocean.io/prometheus-url";
/// Port of the per-virtual-node metrics in [`PROMETHEUS_URL`] (upstream's default
/// `PrometheusVNodeBasePort`).
pub const PROMETHEUS_VNODE_PORT: u16 = 9006;
/// Host written in [`PROMETHEUS_URL`] while the proxier pod IP is unknown (upstream's).
pub const PROMETHEUS_URL_PENDING_HOST: &str = "<pending>";
/// Annotation on virtual nodes: the policies applied, joined by `,` (empty when none).
pub const POLICIES_APPLIED: &str = "kubeocean.io/policies-applied";
/// Upstream's annotation on virtual nodes describing the policy's limits; not ours.
pub const POLICY_DETAILS: &str = "kubeocean.io/policy-details";
/// Upstream's annotation on virtual nodes: when the deletion taint was added; not ours.
pub const DELETION_TAINT_TIME: &str = "kubeocean.io/deletion-taint-time";

/// Label on physical pods: namespace of their virtual pod.
pub const VIRTUAL_NAMESPACE_LABEL: &str = "kubeocean.io/virtual-namespace";
/// Label on physical pods: kind of the workload of their virtual pod, lower case
/// (`deployment`, `statefulset`, ..., `pod` when it has no owner).
pub const WORKLOAD_TYPE: &str = "kubeocean.io/workload-type";
/// Label on physical pods: name of the workload of their virtual pod.
pub const WORKLOAD_NAME: &str = "kubeocean.io/workload-name";
/// Label (`"true"`) on the physical Secrets holding virtual pods' service-account tokens.
pub const SERVICE_ACCOUNT_TOKEN: &str = "kubeocean.io/service-account-token";
/// Upstream's label (`"true"`) on virtual Secrets a PersistentVolume refers to.
pub const USED_BY_PV: &str = "kubeocean.io/used-by-pv";
/// Prefix of upstream's annotation `kubeocean.io/deleting-<clusterID>` (value: binding name)
/// on virtual objects whose binding is being deleted.
pub const DELETING_PREFIX: &str = "kubeocean.io/deleting-";
/// Upstream's annotation on virtual objects: name of their physical copy (ours never writes
/// it; removed on take-over).
pub const PHYSICAL_NAME: &str = "kubeocean.io/physical-name";
/// Upstream's annotation on virtual objects: namespace of their physical copy.
pub const PHYSICAL_NAMESPACE: &str = "kubeocean.io/physical-namespace";
/// Upstream's declared (never written) finalizer of synced resources.
pub const SYNCED_RESOURCE_FINALIZER: &str = "kubeocean.io/synced-resource";

/// Whether `value` is a valid label value (apimachinery's `IsValidLabelValue`).
pub use kube_kit::labels::is_label_value;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values_table() {
        let long = "a".repeat(64);
        for (value, valid) in [
            ("", true),
            ("kubeocean", true),
            ("kubeocean.io-syncer", true),
            ("10.0.0.1", true),
            (&"a".repeat(63), true),
            (long.as_str(), false),
            ("kubeocean.io/syncer", false),
            ("-a", false),
            ("a.", false),
            ("a b", false),
        ] {
            assert_eq!(is_label_value(value), valid, "{value:?}");
        }
    }
}
