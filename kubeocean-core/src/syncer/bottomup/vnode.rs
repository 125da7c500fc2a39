//! The virtual node of a lent physical node, as pure functions: what it should look like,
//! and the object to write given what the computing cluster holds (`None`: nothing to write).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    DaemonEndpoint, Node, NodeAddress, NodeDaemonEndpoints, NodeSpec, NodeStatus, Taint,
};
use kube::api::ObjectMeta;

use crate::crd::ClusterBinding;
use crate::labels;
use crate::leasing::{LeasingDecision, NO_SCHEDULE, taint};
use crate::syncer::config::ProxierEndpoint;
use crate::syncer::metadata::{ExpectedMetadata, merge_map, merge_taints};

/// What the syncer wants a virtual node to be.
#[derive(Clone, Debug, PartialEq)]
pub struct DesiredVirtualNode {
    /// Node name.
    pub name: String,
    /// Labels the syncer sets.
    pub labels: BTreeMap<String, String>,
    /// Annotations the syncer sets (the expected-metadata record aside).
    pub annotations: BTreeMap<String, String>,
    /// Taints the syncer sets.
    pub taints: Vec<Taint>,
    /// The whole status.
    pub status: NodeStatus,
}

/// The labels of a virtual node: the physical node's (except its policy-applied marker), then
/// Kubeocean's identity labels and the physical node's `InternalIP`; both instance-type keys
/// say `vnode` (not the physical node's type), as upstream sets them
/// (`physical_node_controller.go` `buildVirtualNodeLabels`).
pub fn virtual_node_labels(
    physical: &Node,
    vnode_name: &str,
    binding: &ClusterBinding,
) -> BTreeMap<String, String> {
    let mut out: BTreeMap<String, String> = physical
        .metadata
        .labels
        .iter()
        .flatten()
        .filter(|(key, _)| key.as_str() != labels::POLICY_APPLIED)
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    let physical_name = physical.metadata.name.clone().unwrap_or_default();
    let physical_uid = physical.metadata.uid.clone().unwrap_or_default();
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    for (key, value) in [
        (labels::CLUSTER_BINDING, binding_name),
        (labels::PHYSICAL_CLUSTER_ID, binding.spec.cluster_id.clone()),
        (labels::PHYSICAL_NODE_NAME, physical_name),
        (labels::PHYSICAL_NODE_UID, physical_uid),
        (
            labels::INSTANCE_TYPE,
            labels::INSTANCE_TYPE_VNODE.to_owned(),
        ),
        (
            labels::INSTANCE_TYPE_BETA,
            labels::INSTANCE_TYPE_VNODE.to_owned(),
        ),
        (labels::MANAGED_BY, labels::MANAGED_BY_VALUE.to_owned()),
        (
            labels::NODE_TYPE,
            labels::NODE_TYPE_VIRTUAL_KUBELET.to_owned(),
        ),
        (labels::HOSTNAME, vnode_name.to_owned()),
    ] {
        out.insert(key.to_owned(), value);
    }
    // Upstream's proxier reads it; written only when it is a label value (an IPv6 address
    // is, an empty one is not written, as upstream).
    if let Some(ip) = internal_ip(physical).filter(|ip| labels::is_label_value(ip)) {
        out.insert(labels::PHYSICAL_NODE_INNER_IP.to_owned(), ip.to_owned());
    }
    out
}

/// The first `InternalIP` of a node, if any.
fn internal_ip(node: &Node) -> Option<&str> {
    node.status
        .as_ref()?
        .addresses
        .as_ref()?
        .iter()
        .find(|a| a.type_ == "InternalIP" && !a.address.is_empty())
        .map(|a| a.address.as_str())
}

/// The annotations of a virtual node, as upstream writes them
/// (`physical_node_controller.go` `buildVirtualNodeAnnotations`): the policy applied
/// (empty when none) and where the node's metrics are scraped, from the proxier pod IP the
/// node advertises (`<pending>` while it is unknown).
pub fn virtual_node_annotations(
    decision: &LeasingDecision,
    proxier: &ProxierEndpoint,
) -> BTreeMap<String, String> {
    let host = proxier
        .address
        .as_deref()
        .filter(|a| !a.is_empty())
        .unwrap_or(labels::PROMETHEUS_URL_PENDING_HOST);
    BTreeMap::from([
        (
            labels::POLICIES_APPLIED.to_owned(),
            decision.policy.clone().unwrap_or_default(),
        ),
        (
            labels::PROMETHEUS_URL.to_owned(),
            format!(
                "{host}:{}/{}",
                labels::PROMETHEUS_VNODE_PORT,
                decision.virtual_node_name
            ),
        ),
    ])
}

/// Whether `vnode` was made for another physical node of the same name: its recorded
/// physical UID differs from `physical`'s. A virtual node without the label (made before it
/// existed) is taken as the same node; the next update records the UID.
pub fn made_for_replaced_node(vnode: &Node, physical: &Node) -> bool {
    let recorded = vnode
        .metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::PHYSICAL_NODE_UID))
        .filter(|uid| !uid.is_empty());
    match (recorded, physical.metadata.uid.as_deref()) {
        (Some(recorded), Some(uid)) if !uid.is_empty() => recorded != uid,
        _ => false,
    }
}

/// The status of a virtual node: capacity = allocatable = what is lent; conditions and
/// nodeInfo copied; addresses and kubelet port pointing at the proxier.
pub fn virtual_node_status(
    physical: &Node,
    decision: &LeasingDecision,
    proxier: &ProxierEndpoint,
) -> NodeStatus {
    let source = physical.status.clone().unwrap_or_default();
    let lent = decision.allocatable_for_node();
    // Upstream's `buildVirtualNodeAddresses` (physical_node_controller.go): the proxier's IP
    // and the virtual node's name as its Hostname.
    let addresses = match &proxier.address {
        Some(address) => Some(vec![
            NodeAddress {
                type_: "InternalIP".to_owned(),
                address: address.clone(),
            },
            NodeAddress {
                type_: "Hostname".to_owned(),
                address: decision.virtual_node_name.clone(),
            },
        ]),
        None => source.addresses,
    };
    NodeStatus {
        capacity: Some(lent.clone()),
        allocatable: Some(lent),
        conditions: source.conditions,
        node_info: source.node_info,
        addresses,
        daemon_endpoints: Some(NodeDaemonEndpoints {
            kubelet_endpoint: Some(DaemonEndpoint { port: proxier.port }),
        }),
        ..NodeStatus::default()
    }
}

/// The desired virtual node of a lent physical node.
pub fn desired_virtual_node(
    physical: &Node,
    decision: &LeasingDecision,
    binding: &ClusterBinding,
    proxier: &ProxierEndpoint,
) -> DesiredVirtualNode {
    let name = decision.virtual_node_name.clone();
    let mut labels = virtual_node_labels(physical, &name, binding);
    if proxier.node_ports.is_some() {
        // Upstream's label, read by its Prometheus scrape configs.
        labels.insert(labels::PROXIER_PORT.to_owned(), proxier.port.to_string());
    }
    DesiredVirtualNode {
        labels,
        annotations: virtual_node_annotations(decision, proxier),
        taints: decision.taints.clone(),
        status: virtual_node_status(physical, decision, proxier),
        name,
    }
}

/// A new virtual node (with finalizer and status) for `desired`.
pub fn new_virtual_node(desired: &DesiredVirtualNode) -> Node {
    let expected = ExpectedMetadata {
        labels: desired.labels.clone(),
        annotations: desired.annotations.clone(),
        taints: untimed(&desired.taints),
        unschedulable: false,
    };
    let mut annotations = desired.annotations.clone();
    annotations.insert(
        labels::EXPECTED_METADATA.to_owned(),
        expected.to_annotation(),
    );
    Node {
        metadata: ObjectMeta {
            name: Some(desired.name.clone()),
            labels: Some(desired.labels.clone()),
            annotations: Some(annotations),
            finalizers: Some(vec![labels::FINALIZER_VNODE.to_owned()]),
            ..ObjectMeta::default()
        },
        spec: Some(NodeSpec {
            taints: (!desired.taints.is_empty()).then(|| desired.taints.clone()),
            ..NodeSpec::default()
        }),
        status: Some(desired.status.clone()),
    }
}

/// `current` with its labels, annotations, taints, cordon and finalizer brought in line with
/// `desired` by the three-way merge; `None` when nothing changes.
pub fn updated_virtual_node(current: &Node, desired: &DesiredVirtualNode) -> Option<Node> {
    let meta = &current.metadata;
    let last = ExpectedMetadata::from_annotations(meta.annotations.as_ref());
    let spec = current.spec.clone().unwrap_or_default();
    let labels = merge_map(
        &meta.labels.clone().unwrap_or_default(),
        &last.labels,
        &desired.labels,
    );
    let taints = merge_taints(
        spec.taints.as_deref().unwrap_or_default(),
        &last.taints,
        &desired.taints,
    );
    let expected = ExpectedMetadata {
        labels: desired.labels.clone(),
        annotations: desired.annotations.clone(),
        taints: untimed(&desired.taints),
        unschedulable: false,
    };
    let current_annotations = meta.annotations.clone().unwrap_or_default();
    let mut annotations = merge_map(
        &current_annotations,
        &last.annotations,
        &desired.annotations,
    );
    annotations.insert(
        labels::EXPECTED_METADATA.to_owned(),
        expected.to_annotation(),
    );
    // Undo only a cordon the syncer made; a user's cordon stays.
    let unschedulable = if last.unschedulable {
        None
    } else {
        spec.unschedulable
    };
    let mut finalizers = meta.finalizers.clone().unwrap_or_default();
    if !finalizers.iter().any(|f| f == labels::FINALIZER_VNODE) {
        finalizers.push(labels::FINALIZER_VNODE.to_owned());
    }
    let unchanged = meta.labels.clone().unwrap_or_default() == labels
        && current_annotations == annotations
        && spec.taints.clone().unwrap_or_default() == taints
        && spec.unschedulable == unschedulable
        && meta.finalizers.clone().unwrap_or_default() == finalizers;
    if unchanged {
        return None;
    }
    let mut node = current.clone();
    node.metadata.labels = Some(labels);
    node.metadata.annotations = Some(annotations);
    node.metadata.finalizers = Some(finalizers);
    let node_spec = node.spec.get_or_insert_with(NodeSpec::default);
    node_spec.taints = (!taints.is_empty()).then_some(taints);
    node_spec.unschedulable = unschedulable;
    Some(node)
}

/// Taints without `timeAdded`, as recorded in the expected metadata (a time there would
/// change the annotation on every pass).
fn untimed(taints: &[Taint]) -> Vec<Taint> {
    taints
        .iter()
        .map(|t| Taint {
            time_added: None,
            ..t.clone()
        })
        .collect()
}

/// `current` with the desired status; `None` when it already has it.
pub fn updated_status(current: &Node, desired: &DesiredVirtualNode) -> Option<Node> {
    if current.status.as_ref() == Some(&desired.status) {
        return None;
    }
    let mut node = current.clone();
    node.status = Some(desired.status.clone());
    Some(node)
}

/// `current` cordoned and tainted `kubeocean.io/vnode-deleting:NoSchedule` before removal;
/// `None` when it already is. The cordon and taint are recorded as the syncer's, so that a
/// node lent again is uncordoned.
pub fn cordoned_for_removal(current: &Node) -> Option<Node> {
    let deleting = taint(labels::TAINT_VNODE_DELETING, None, NO_SCHEDULE);
    let spec = current.spec.clone().unwrap_or_default();
    let taints = spec.taints.clone().unwrap_or_default();
    let has_taint = taints
        .iter()
        .any(|t| t.key == deleting.key && t.effect == deleting.effect);
    if has_taint && spec.unschedulable == Some(true) {
        return None;
    }
    let mut expected = ExpectedMetadata::from_annotations(current.metadata.annotations.as_ref());
    if !expected
        .taints
        .iter()
        .any(|t| t.key == deleting.key && t.effect == deleting.effect)
    {
        expected.taints.push(deleting.clone());
    }
    expected.unschedulable = true;
    let mut node = current.clone();
    node.metadata
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(
            labels::EXPECTED_METADATA.to_owned(),
            expected.to_annotation(),
        );
    let node_spec = node.spec.get_or_insert_with(NodeSpec::default);
    let mut new_taints = taints;
    if !has_taint {
        new_taints.push(deleting);
    }
    node_spec.taints = Some(new_taints);
    node_spec.unschedulable = Some(true);
    Some(node)
}

/// Whether a node has a `Ready` condition with status `True`.
pub fn is_ready(node: &Node) -> bool {
    node.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .into_iter()
        .flatten()
        .any(|c| c.type_ == "Ready" && c.status == "True")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::leasing::{DefaultLeasingEngine, LeasingInput, LeasingPolicyEngine};
    use serde_json::json;

    fn physical() -> Node {
        serde_json::from_value(json!({
            "metadata": { "name": "n1", "uid": "uid-1", "labels": { "zone": "a", "kubeocean.io/policy-applied": "p",
                "node.kubernetes.io/instance-type": "m5.large", "beta.kubernetes.io/instance-type": "m5.large" } },
            "spec": { "taints": [
                { "key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule" },
                { "key": "dedicated", "value": "batch", "effect": "NoSchedule" },
            ] },
            "status": {
                "allocatable": { "cpu": "4", "memory": "8Gi", "pods": "110" },
                "conditions": [{ "type": "Ready", "status": "True" }],
                "nodeInfo": { "machineID": "m", "systemUUID": "s", "bootID": "b", "kernelVersion": "k",
                    "osImage": "o", "containerRuntimeVersion": "c", "kubeletVersion": "v1.33.0",
                    "kubeProxyVersion": "v1.33.0", "operatingSystem": "linux", "architecture": "amd64" },
                "addresses": [{ "type": "InternalIP", "address": "10.0.0.1" }],
            },
        }))
        .unwrap()
    }

    fn binding() -> ClusterBinding {
        serde_json::from_value(json!({
            "metadata": { "name": "b1" },
            "spec": { "clusterID": "c1", "secretRef": { "name": "s" } },
        }))
        .unwrap()
    }

    fn desired(in_window_policy: serde_json::Value) -> DesiredVirtualNode {
        let node = physical();
        let binding = binding();
        let policy: crate::crd::ResourceLeasingPolicy = serde_json::from_value(json!({
            "metadata": { "name": "p", "creationTimestamp": "2025-01-01T00:00:00Z" },
            "spec": in_window_policy,
        }))
        .unwrap();
        let decision = DefaultLeasingEngine.evaluate(&LeasingInput {
            node: &node,
            pods: Vec::new(),
            policies: vec![&policy],
            binding: &binding,
            usage: None,
            now: "2025-01-06T12:00:00Z".parse().unwrap(),
        });
        let proxier = ProxierEndpoint {
            address: Some("10.9.9.9".into()),
            port: 10443,
            node_ports: None,
            pods: None,
        };
        desired_virtual_node(&node, &decision, &binding, &proxier)
    }

    #[test]
    fn desired_node_has_identity_labels_taints_and_lent_status() {
        let d = desired(
            json!({ "cluster": "b1", "resourceLimits": [{ "resource": "cpu", "percent": 50 }] }),
        );
        assert_eq!(d.name, "vnode-c1-n1");
        for (key, value) in [
            ("zone", "a"),
            (labels::CLUSTER_BINDING, "b1"),
            (labels::PHYSICAL_CLUSTER_ID, "c1"),
            (labels::PHYSICAL_NODE_NAME, "n1"),
            (labels::MANAGED_BY, "kubeocean"),
            (labels::NODE_TYPE, "virtual-kubelet"),
            (labels::HOSTNAME, "vnode-c1-n1"),
            (labels::PHYSICAL_NODE_UID, "uid-1"),
            (labels::INSTANCE_TYPE, "vnode"),
            (labels::INSTANCE_TYPE_BETA, "vnode"),
        ] {
            assert_eq!(d.labels.get(key).map(String::as_str), Some(value), "{key}");
        }
        assert!(!d.labels.contains_key(labels::POLICY_APPLIED));
        assert_eq!(d.labels[labels::PHYSICAL_NODE_INNER_IP], "10.0.0.1");
        assert_eq!(
            d.annotations,
            BTreeMap::from([
                (labels::POLICIES_APPLIED.to_owned(), "p".to_owned()),
                (
                    labels::PROMETHEUS_URL.to_owned(),
                    "10.9.9.9:9006/vnode-c1-n1".to_owned()
                ),
            ])
        );
        let keys: Vec<&str> = d.taints.iter().map(|t| t.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                labels::TAINT_PHYSICAL_NODE_UNSCHEDULABLE,
                "dedicated",
                labels::TAINT_VNODE
            ]
        );
        let alloc = d.status.allocatable.clone().unwrap();
        assert_eq!(alloc["cpu"].0, "2");
        assert_eq!(d.status.capacity, d.status.allocatable);
        let addresses: Vec<(&str, &str)> = d
            .status
            .addresses
            .iter()
            .flatten()
            .map(|a| (a.type_.as_str(), a.address.as_str()))
            .collect();
        assert_eq!(
            addresses,
            [("InternalIP", "10.9.9.9"), ("Hostname", "vnode-c1-n1")]
        );
        assert_eq!(
            d.status
                .daemon_endpoints
                .as_ref()
                .and_then(|e| e.kubelet_endpoint.as_ref())
                .map(|e| e.port),
            Some(10443)
        );
        assert_eq!(d.status.node_info.as_ref().unwrap().machine_id, "m");
    }

    #[test]
    fn user_label_and_taint_survive_an_update_and_unchanged_node_is_not_written() {
        let d = desired(json!({ "cluster": "b1" }));
        let mut node = new_virtual_node(&d);
        assert_eq!(updated_virtual_node(&node, &d), None);
        assert_eq!(updated_status(&node, &d), None);
        node.metadata
            .labels
            .as_mut()
            .unwrap()
            .insert("team".into(), "blue".into());
        node.spec
            .as_mut()
            .unwrap()
            .taints
            .as_mut()
            .unwrap()
            .push(taint("user", None, "NoSchedule"));
        // A user edit alone needs no write.
        assert_eq!(updated_virtual_node(&node, &d), None);
        // A changed physical label is written, keeping the user's edits.
        let mut d2 = d.clone();
        d2.labels.insert("zone".into(), "b".into());
        let updated = updated_virtual_node(&node, &d2).unwrap();
        let l = updated.metadata.labels.as_ref().unwrap();
        assert_eq!(l["zone"], "b");
        assert_eq!(l["team"], "blue");
        assert!(
            updated
                .spec
                .unwrap()
                .taints
                .unwrap()
                .iter()
                .any(|t| t.key == "user")
        );
    }

    #[test]
    fn cordon_for_removal_is_undone_when_lent_again_but_a_user_cordon_stays() {
        let d = desired(json!({ "cluster": "b1" }));
        let node = new_virtual_node(&d);
        let cordoned = cordoned_for_removal(&node).unwrap();
        assert_eq!(cordoned_for_removal(&cordoned), None);
        let spec = cordoned.spec.clone().unwrap();
        assert_eq!(spec.unschedulable, Some(true));
        assert!(
            spec.taints
                .unwrap()
                .iter()
                .any(|t| t.key == labels::TAINT_VNODE_DELETING)
        );
        let relent = updated_virtual_node(&cordoned, &d).unwrap();
        let spec = relent.spec.unwrap();
        assert_eq!(spec.unschedulable, None);
        assert!(
            !spec
                .taints
                .unwrap()
                .iter()
                .any(|t| t.key == labels::TAINT_VNODE_DELETING)
        );

        let mut user_cordoned = node.clone();
        user_cordoned.spec.as_mut().unwrap().unschedulable = Some(true);
        assert_eq!(updated_virtual_node(&user_cordoned, &d), None);
    }

    #[test]
    fn a_physical_node_with_another_uid_is_a_replaced_node() {
        let vnode_with = |uid: Option<&str>| -> Node {
            let mut labels = BTreeMap::new();
            if let Some(uid) = uid {
                labels.insert(labels::PHYSICAL_NODE_UID.to_owned(), uid.to_owned());
            }
            Node {
                metadata: ObjectMeta {
                    name: Some("vnode-c1-n1".into()),
                    labels: Some(labels),
                    ..ObjectMeta::default()
                },
                ..Node::default()
            }
        };
        let physical_with = |uid: Option<&str>| -> Node {
            Node {
                metadata: ObjectMeta {
                    name: Some("n1".into()),
                    uid: uid.map(str::to_owned),
                    ..ObjectMeta::default()
                },
                ..Node::default()
            }
        };
        for (recorded, current, replaced) in [
            (Some("a"), Some("a"), false),
            (Some("a"), Some("b"), true),
            // Made before the label existed: the same node, labelled on the next update.
            (None, Some("b"), false),
            (Some(""), Some("b"), false),
            // A physical node without a UID (not from an API server) proves nothing.
            (Some("a"), None, false),
            (Some("a"), Some(""), false),
        ] {
            assert_eq!(
                made_for_replaced_node(&vnode_with(recorded), &physical_with(current)),
                replaced,
                "recorded {recorded:?}, physical {current:?}"
            );
        }
    }

    #[test]
    fn prometheus_url_is_pending_without_a_proxier_address() {
        let node = physical();
        let decision = LeasingDecision::not_lent(
            "vnode-c1-n1".to_owned(),
            crate::leasing::NotLentReason::NodeGone,
        );
        let annotations = virtual_node_annotations(&decision, &ProxierEndpoint::default());
        assert_eq!(
            annotations[labels::PROMETHEUS_URL],
            "<pending>:9006/vnode-c1-n1"
        );
        assert_eq!(annotations[labels::POLICIES_APPLIED], "");
        let mut no_ip = node.clone();
        no_ip.status.as_mut().unwrap().addresses = None;
        let binding = binding();
        assert!(
            !virtual_node_labels(&no_ip, "v", &binding)
                .contains_key(labels::PHYSICAL_NODE_INNER_IP)
        );
    }

    #[test]
    fn take_over_removes_what_upstreams_record_holds_and_we_do_not_want() {
        use base64::Engine as _;
        let d = desired(json!({ "cluster": "b1" }));
        let mut node = new_virtual_node(&d);
        // As upstream leaves it (`buildVirtualNodeLabels` / `buildVirtualNodeAnnotations`,
        // recorded by `saveExpectedMetadataToAnnotation`): a port of its own, a label the
        // physical node lost since, its annotations; plus a user's label.
        let upstream_record = json!({
            "labels": { "kubeocean.io/proxier_port": "10300", "gone": "x",
                "kubeocean.io/policy-applied": "p", "zone": "a" },
            "annotations": { "kubeocean.io/last-sync-time": "2025-01-01T00:00:00Z",
                "kubeocean.io/policy-details": "p", "kubeocean.io/policies-applied": "p" },
            "taints": [{ "key": "kubeocean.io/vnode", "effect": "NoSchedule" }],
        });
        let encoded = base64::engine::general_purpose::STANDARD
            .encode(serde_json::to_vec(&upstream_record).unwrap());
        let meta = &mut node.metadata;
        let l = meta.labels.as_mut().unwrap();
        for (k, v) in [
            ("kubeocean.io/proxier_port", "10300"),
            ("gone", "x"),
            ("kubeocean.io/policy-applied", "p"),
            ("team", "blue"),
        ] {
            l.insert(k.into(), v.into());
        }
        let a = meta.annotations.as_mut().unwrap();
        a.insert(labels::EXPECTED_METADATA.into(), encoded);
        a.insert(labels::LAST_SYNC_TIME.into(), "2025-01-01T00:00:00Z".into());
        a.insert(labels::POLICY_DETAILS.into(), "p".into());
        let updated = updated_virtual_node(&node, &d).unwrap();
        let l = updated.metadata.labels.as_ref().unwrap();
        for gone in ["kubeocean.io/proxier_port", "gone", labels::POLICY_APPLIED] {
            assert!(!l.contains_key(gone), "{gone}");
        }
        assert_eq!(l["team"], "blue");
        assert_eq!(l["zone"], "a");
        let a = updated.metadata.annotations.as_ref().unwrap();
        assert!(!a.contains_key(labels::LAST_SYNC_TIME));
        assert!(!a.contains_key(labels::POLICY_DETAILS));
        assert_eq!(a[labels::POLICIES_APPLIED], "p");
        // Written as upstream writes it, and read back.
        let record = ExpectedMetadata::from_annotations(Some(a));
        assert_eq!(record.labels, d.labels);
        assert_eq!(record.annotations, d.annotations);
        assert!(!a[labels::EXPECTED_METADATA].starts_with('{'));
    }
}
