//! From the virtual pod a kubelet path names to the physical pod in the worker cluster, and
//! from this binding's virtual nodes to their physical nodes.
//!
//! A virtual pod is served only if it is scheduled on a virtual node labelled with this
//! binding and carries the physical-pod annotations the top-down syncer writes; anything
//! else answers 404, so a virtual pod of another binding is invisible here.

use std::collections::{BTreeMap, HashMap};

use k8s_openapi::api::core::v1::{Node, Pod};
use kube::api::ListParams;
use kube::{Api, Client};

use crate::labels;

/// The physical pod behind a virtual pod, and the virtual node that pod is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodTarget {
    /// The virtual node the virtual pod is scheduled on.
    pub virtual_node: String,
    /// Namespace of the physical pod in the worker cluster.
    pub physical_namespace: String,
    /// Name of the physical pod in the worker cluster.
    pub physical_name: String,
    /// Why the virtual pod ended, when it is `Failed` (its status reason and message).
    pub failed: Option<String>,
}

/// Why a virtual pod cannot be served (all answered 404).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MappingError {
    /// No such pod in the computing cluster.
    #[error("pod {namespace}/{name} not found")]
    PodNotFound {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
    /// The path names a UID other than the pod's.
    #[error("pod {namespace}/{name} with UID {uid} not found")]
    UidMismatch {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// The UID in the path.
        uid: String,
    },
    /// The pod is not scheduled on a virtual node of this binding.
    #[error("pod {namespace}/{name} is not on a virtual node of ClusterBinding {binding}")]
    OtherNode {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
        /// This proxier's binding.
        binding: String,
    },
    /// The pod has not been mapped to a physical pod yet.
    #[error("pod {namespace}/{name} has no physical pod yet")]
    NotMapped {
        /// Namespace.
        namespace: String,
        /// Name.
        name: String,
    },
}

/// Whether `node` is a virtual node of `binding`.
pub fn is_binding_node(node: &Node, binding: &str) -> bool {
    node.metadata
        .labels
        .as_ref()
        .and_then(|l| l.get(labels::CLUSTER_BINDING))
        .is_some_and(|b| b == binding)
}

/// The physical pod behind the virtual pod `pod`, given the node it is scheduled on (`None`
/// when that node does not exist) and, when the path carries one, the UID asked for.
pub fn pod_target(
    pod: &Pod,
    node: Option<&Node>,
    binding: &str,
    expected_uid: Option<&str>,
) -> Result<PodTarget, MappingError> {
    let namespace = pod.metadata.namespace.clone().unwrap_or_default();
    let name = pod.metadata.name.clone().unwrap_or_default();
    if let Some(uid) = expected_uid
        && pod.metadata.uid.as_deref() != Some(uid)
    {
        return Err(MappingError::UidMismatch {
            namespace,
            name,
            uid: uid.to_owned(),
        });
    }
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let virtual_node = match (node_name, node) {
        (Some(node_name), Some(node))
            if node.metadata.name.as_deref() == Some(node_name.as_str())
                && is_binding_node(node, binding) =>
        {
            node_name
        }
        _ => {
            return Err(MappingError::OtherNode {
                namespace,
                name,
                binding: binding.to_owned(),
            });
        }
    };
    let annotation = |key: &str| {
        pod.metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(key))
            .filter(|v| !v.is_empty())
            .cloned()
    };
    match (
        annotation(labels::PHYSICAL_POD_NAMESPACE),
        annotation(labels::PHYSICAL_POD_NAME),
    ) {
        (Some(physical_namespace), Some(physical_name)) => Ok(PodTarget {
            virtual_node,
            physical_namespace,
            physical_name,
            failed: failure_note(pod),
        }),
        _ => Err(MappingError::NotMapped { namespace, name }),
    }
}

/// Why `pod` ended, when it is `Failed`: `reason: message` of its status (either alone when
/// the other is empty).
pub fn failure_note(pod: &Pod) -> Option<String> {
    let status = pod.status.as_ref()?;
    if status.phase.as_deref() != Some("Failed") {
        return None;
    }
    let parts: Vec<&str> = [status.reason.as_deref(), status.message.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.is_empty())
        .collect();
    Some(if parts.is_empty() {
        "Failed".to_owned()
    } else {
        parts.join(": ")
    })
}

/// A virtual pod as the stats endpoints report it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VirtualPodRef {
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// UID.
    pub uid: String,
}

/// Physical `(namespace, name)` to the virtual pod it was mapped from.
pub type PodIndex = HashMap<(String, String), VirtualPodRef>;

/// The index of mapped virtual pods among `pods` (virtual pods on this binding's nodes).
pub fn pod_index<'a>(pods: impl IntoIterator<Item = &'a Pod>) -> PodIndex {
    let mut index = PodIndex::new();
    for pod in pods {
        let annotations = pod.metadata.annotations.as_ref();
        let get = |key: &str| {
            annotations
                .and_then(|a| a.get(key))
                .filter(|v| !v.is_empty())
        };
        let (Some(physical_namespace), Some(physical_name)) = (
            get(labels::PHYSICAL_POD_NAMESPACE),
            get(labels::PHYSICAL_POD_NAME),
        ) else {
            continue;
        };
        index.insert(
            (physical_namespace.clone(), physical_name.clone()),
            VirtualPodRef {
                namespace: pod.metadata.namespace.clone().unwrap_or_default(),
                name: pod.metadata.name.clone().unwrap_or_default(),
                uid: pod.metadata.uid.clone().unwrap_or_default(),
            },
        );
    }
    index
}

/// Virtual node name to physical node name, for this binding's virtual nodes that name one.
pub fn physical_nodes<'a>(
    nodes: impl IntoIterator<Item = &'a Node>,
    binding: &str,
) -> BTreeMap<String, String> {
    nodes
        .into_iter()
        .filter(|node| is_binding_node(node, binding))
        .filter_map(|node| {
            let physical = node
                .metadata
                .labels
                .as_ref()?
                .get(labels::PHYSICAL_NODE_NAME)?
                .clone();
            Some((node.metadata.name.clone()?, physical))
        })
        .collect()
}

/// The virtual nodes a node-level request on the shared port is about: the one the `Host`
/// header names (a client that addresses virtual nodes by name), otherwise all of them, since
/// every virtual node of the binding shares that address and port.
pub fn select_nodes(
    host: Option<&str>,
    nodes: &BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let host_name = host.map(strip_port);
    match host_name.and_then(|h| nodes.get_key_value(h)) {
        Some((virtual_node, physical)) => {
            BTreeMap::from([(virtual_node.clone(), physical.clone())])
        }
        None => nodes.clone(),
    }
}

/// `host` without a trailing `:port` (IPv6 literals keep their brackets off).
fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

/// Looks up the physical pod behind the virtual pod `namespace/name` in the computing
/// cluster. `Ok(Err(_))`: the pod cannot be served (404); `Err(_)`: the lookup failed.
pub async fn resolve_pod(
    computing: &Client,
    binding: &str,
    namespace: &str,
    name: &str,
    expected_uid: Option<&str>,
) -> Result<Result<PodTarget, MappingError>, kube::Error> {
    let Some(pod) = Api::<Pod>::namespaced(computing.clone(), namespace)
        .get_opt(name)
        .await?
    else {
        return Ok(Err(MappingError::PodNotFound {
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }));
    };
    let node_name = pod
        .spec
        .as_ref()
        .and_then(|s| s.node_name.clone())
        .filter(|n| !n.is_empty());
    let node = match node_name {
        Some(node_name) => {
            Api::<Node>::all(computing.clone())
                .get_opt(&node_name)
                .await?
        }
        None => None,
    };
    Ok(pod_target(&pod, node.as_ref(), binding, expected_uid))
}

/// This binding's virtual nodes and their physical nodes.
pub async fn list_binding_nodes(
    computing: &Client,
    binding: &str,
) -> Result<BTreeMap<String, String>, kube::Error> {
    let selector = format!("{}={binding}", labels::CLUSTER_BINDING);
    let nodes = Api::<Node>::all(computing.clone())
        .list(&ListParams::default().labels(&selector))
        .await?;
    Ok(physical_nodes(&nodes.items, binding))
}

/// The mapped virtual pods on the given virtual nodes.
pub async fn list_virtual_pods<'a>(
    computing: &Client,
    virtual_nodes: impl IntoIterator<Item = &'a String>,
) -> Result<PodIndex, kube::Error> {
    let api = Api::<Pod>::all(computing.clone());
    let mut index = PodIndex::new();
    for node in virtual_nodes {
        let pods = api
            .list(&ListParams::default().fields(&format!("spec.nodeName={node}")))
            .await?;
        index.extend(pod_index(&pods.items));
    }
    Ok(index)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn node(name: &str, binding: Option<&str>, physical: &str) -> Node {
        let mut labels = json!({ labels::PHYSICAL_NODE_NAME: physical });
        if let Some(binding) = binding {
            labels[labels::CLUSTER_BINDING] = json!(binding);
        }
        serde_json::from_value(json!({"metadata": {"name": name, "labels": labels}})).unwrap()
    }

    fn pod(node: Option<&str>, physical: Option<(&str, &str)>) -> Pod {
        let mut annotations = json!({});
        if let Some((ns, name)) = physical {
            annotations[labels::PHYSICAL_POD_NAMESPACE] = json!(ns);
            annotations[labels::PHYSICAL_POD_NAME] = json!(name);
            annotations[labels::PHYSICAL_POD_UID] = json!("puid");
        }
        serde_json::from_value(json!({
            "metadata": {"name": "web", "namespace": "team", "uid": "vuid", "annotations": annotations},
            "spec": {"nodeName": node, "containers": [{"name": "app"}]},
        }))
        .unwrap()
    }

    #[test]
    fn failure_notes() {
        let with_status = |status: serde_json::Value| -> Pod {
            serde_json::from_value(json!({"metadata": {"name": "p"}, "status": status})).unwrap()
        };
        for (status, want) in [
            (json!({"phase": "Running"}), None),
            (json!({}), None),
            (json!({"phase": "Failed"}), Some("Failed")),
            (
                json!({"phase": "Failed", "reason": "Unschedulable", "message": "no node in the worker fits it"}),
                Some("Unschedulable: no node in the worker fits it"),
            ),
            (
                json!({"phase": "Failed", "reason": "", "message": "gone"}),
                Some("gone"),
            ),
        ] {
            assert_eq!(
                failure_note(&with_status(status.clone())).as_deref(),
                want,
                "{status}"
            );
        }
    }

    #[test]
    fn pod_targets() {
        let mine = node("vnode-a", Some("b1"), "n1");
        let theirs = node("vnode-b", Some("b2"), "n1");
        let plain = node("vnode-a", None, "n1");
        let mapped = pod(Some("vnode-a"), Some(("mount", "web-123")));
        let target = PodTarget {
            virtual_node: "vnode-a".into(),
            physical_namespace: "mount".into(),
            physical_name: "web-123".into(),
            failed: None,
        };
        // (what, pod, its node, UID in the path, target or error variant)
        type Case<'a> = (
            &'a str,
            Pod,
            Option<&'a Node>,
            Option<&'a str>,
            Result<PodTarget, &'a str>,
        );
        let cases: Vec<Case> = vec![
            (
                "mapped",
                mapped.clone(),
                Some(&mine),
                None,
                Ok(target.clone()),
            ),
            (
                "uid matches",
                mapped.clone(),
                Some(&mine),
                Some("vuid"),
                Ok(target),
            ),
            (
                "uid differs",
                mapped.clone(),
                Some(&mine),
                Some("other"),
                Err("UidMismatch"),
            ),
            (
                "other binding",
                pod(Some("vnode-b"), Some(("mount", "web-123"))),
                Some(&theirs),
                None,
                Err("OtherNode"),
            ),
            (
                "unlabelled node",
                mapped.clone(),
                Some(&plain),
                None,
                Err("OtherNode"),
            ),
            ("node gone", mapped.clone(), None, None, Err("OtherNode")),
            (
                "node name differs",
                pod(Some("vnode-x"), Some(("mount", "web-123"))),
                Some(&mine),
                None,
                Err("OtherNode"),
            ),
            (
                "unscheduled",
                pod(None, Some(("mount", "web-123"))),
                Some(&mine),
                None,
                Err("OtherNode"),
            ),
            (
                "not mapped",
                pod(Some("vnode-a"), None),
                Some(&mine),
                None,
                Err("NotMapped"),
            ),
            (
                "half mapped",
                pod(Some("vnode-a"), Some(("mount", ""))),
                Some(&mine),
                None,
                Err("NotMapped"),
            ),
        ];
        for (what, pod, node, uid, want) in cases {
            let got = pod_target(&pod, node, "b1", uid);
            match (got, want) {
                (Ok(got), Ok(want)) => assert_eq!(got, want, "{what}"),
                (Err(err), Err(kind)) => {
                    assert!(format!("{err:?}").starts_with(kind), "{what}: {err:?}")
                }
                (got, want) => panic!("{what}: got {got:?}, want {want:?}"),
            }
        }
    }

    #[test]
    fn indexes() {
        let pods = [
            pod(Some("vnode-a"), Some(("mount", "web-123"))),
            pod(Some("vnode-a"), None),
        ];
        let index = pod_index(&pods);
        assert_eq!(index.len(), 1);
        assert_eq!(
            index.get(&("mount".to_owned(), "web-123".to_owned())),
            Some(&VirtualPodRef {
                namespace: "team".into(),
                name: "web".into(),
                uid: "vuid".into()
            })
        );
        let nodes = [
            node("vnode-a", Some("b1"), "n1"),
            node("vnode-b", Some("b1"), "n2"),
            node("vnode-c", Some("b2"), "n3"),
        ];
        let physical = physical_nodes(&nodes, "b1");
        assert_eq!(
            physical,
            BTreeMap::from([
                ("vnode-a".to_owned(), "n1".to_owned()),
                ("vnode-b".to_owned(), "n2".to_owned())
            ])
        );
        for (host, want) in [
            (Some("vnode-b:10250"), vec!["vnode-b"]),
            (Some("vnode-a"), vec!["vnode-a"]),
            (Some("10.0.0.5:10250"), vec!["vnode-a", "vnode-b"]),
            (Some("[::1]:10250"), vec!["vnode-a", "vnode-b"]),
            (Some("vnode-c:10250"), vec!["vnode-a", "vnode-b"]),
            (None, vec!["vnode-a", "vnode-b"]),
        ] {
            let got: Vec<String> = select_nodes(host, &physical).into_keys().collect();
            assert_eq!(got, want, "{host:?}");
        }
    }
}
