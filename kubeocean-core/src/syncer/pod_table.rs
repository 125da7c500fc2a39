//! The worker's pods as the index keeps them: grouped by the node they are bound to, each as
//! the few values a node's re-evaluation sums. A large worker holds hundreds of thousands of
//! pods, so the layout is what sets the syncer's memory and the cost of summing a node:
//! one vector per node (summing walks it, no look-up per pod), node names and uids shared
//! (`Arc<str>`), and what only some pods have (Kubeocean's own pods, host ports) boxed apart.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;

use crate::labels;
use crate::leasing::host_ports::{HostPort, host_ports_of};
use crate::leasing::{NodeUsage, PodUsage};

/// What the index keeps of one worker pod.
#[derive(Clone, Debug, PartialEq)]
pub struct CachedPod {
    /// Node the pod is bound to (empty when unscheduled).
    pub node: String,
    /// Namespace and name.
    pub key: (String, String),
    /// resourceVersion the usage was computed from.
    pub resource_version: String,
    /// What the pod takes from its node.
    pub usage: PodUsage,
    /// What it takes as one of Kubeocean's own pods (empty for the others).
    pub mapped: PodUsage,
    /// Host ports it holds there.
    pub host_ports: Vec<HostPort>,
    /// Whether it is one of Kubeocean's own pods (label `kubeocean.io/managed-by`).
    pub own: bool,
}

impl CachedPod {
    /// What the index keeps of `pod`, with its uid; `None` for a pod without a uid.
    pub fn of(pod: &Pod) -> Option<(String, CachedPod)> {
        let uid = pod.metadata.uid.clone()?;
        let cached = CachedPod {
            node: pod
                .spec
                .as_ref()
                .and_then(|s| s.node_name.clone())
                .unwrap_or_default(),
            key: (pod.namespace().unwrap_or_default(), pod.name_any()),
            resource_version: pod.resource_version().unwrap_or_default(),
            usage: PodUsage::of(pod),
            mapped: PodUsage::of_mapped(pod),
            host_ports: host_ports_of(pod),
            own: labels::is_managed(&pod.metadata),
        };
        Some((uid, cached))
    }
}

/// What is kept of one pod bound to a node (the node is the list it is in).
#[derive(Debug)]
struct StoredPod {
    uid: Arc<str>,
    resource_version: Box<str>,
    usage: PodUsage,
    /// What only some pods have; `None` for most.
    rare: Option<Box<RarePod>>,
}

/// The parts of a pod most pods do not have.
#[derive(Debug, Default, PartialEq)]
struct RarePod {
    mapped: PodUsage,
    host_ports: Vec<HostPort>,
}

impl StoredPod {
    fn mapped(&self) -> Option<&PodUsage> {
        self.rare.as_ref().map(|r| &r.mapped)
    }

    fn host_ports(&self) -> &[HostPort] {
        self.rare.as_ref().map_or(&[], |r| &r.host_ports)
    }

    /// Whether `cached` takes the same from the node as this pod.
    fn same_usage(&self, cached: &CachedPod) -> bool {
        self.usage == cached.usage
            && self.mapped().unwrap_or(&PodUsage::default()) == &cached.mapped
            && self.host_ports() == cached.host_ports.as_slice()
    }
}

fn rare_of(cached: &mut CachedPod) -> Option<Box<RarePod>> {
    let rare = RarePod {
        mapped: std::mem::take(&mut cached.mapped),
        host_ports: std::mem::take(&mut cached.host_ports),
    };
    (rare != RarePod::default()).then(|| Box::new(rare))
}

/// The worker's pods, by node. Unscheduled pods take nothing from any node and are not
/// kept, except Kubeocean's own pods, whose names are kept (scheduled or not) for
/// [`PodTable::has_own_pod`].
#[derive(Debug, Default)]
pub struct PodTable {
    by_node: HashMap<Arc<str>, Vec<StoredPod>>,
    /// uid -> node, for the pods in `by_node`.
    node_of: HashMap<Arc<str>, Arc<str>>,
    /// (namespace, name) -> uid of Kubeocean's own pods, and back.
    own: HashMap<(String, String), Arc<str>>,
    own_keys: HashMap<Arc<str>, (String, String)>,
}

impl PodTable {
    /// Pods bound to a node.
    pub fn len(&self) -> usize {
        self.node_of.len()
    }

    /// Whether no pod is bound to any node.
    pub fn is_empty(&self) -> bool {
        self.node_of.is_empty()
    }

    /// Whether one of Kubeocean's own pods `namespace/name` exists.
    pub fn has_own_pod(&self, namespace: &str, name: &str) -> bool {
        self.own
            .contains_key(&(namespace.to_owned(), name.to_owned()))
    }

    /// The summed usage of the pods bound to `node`.
    pub fn node_usage(&self, node: &str) -> NodeUsage {
        NodeUsage::from_pods(self.pods_on(node).map(|p| &p.usage))
    }

    /// The summed usage of Kubeocean's own pods bound to `node`.
    pub fn mapped_usage(&self, node: &str) -> NodeUsage {
        NodeUsage::from_pods(self.pods_on(node).filter_map(StoredPod::mapped))
    }

    /// The host ports held by the pods bound to `node`, as listed by each pod.
    pub fn host_ports(&self, node: &str) -> impl Iterator<Item = &HostPort> + '_ {
        self.pods_on(node).flat_map(StoredPod::host_ports)
    }

    fn pods_on(&self, node: &str) -> impl Iterator<Item = &StoredPod> + '_ {
        self.by_node.get(node).into_iter().flatten()
    }

    /// Records the pod `uid`; pushes onto `affected` the nodes whose usage changed (its old
    /// and new node).
    pub fn apply(&mut self, uid: &str, mut cached: CachedPod, affected: &mut Vec<Arc<str>>) {
        let old_node = self.node_of.get(uid).cloned();
        let old = old_node.as_ref().and_then(|node| {
            let pods = self.by_node.get_mut(node)?;
            let at = pods.iter().position(|p| &*p.uid == uid)?;
            Some((node.clone(), pods, at))
        });
        let uid: Arc<str> = match old {
            Some((node, pods, at)) => {
                let stored = &mut pods[at];
                if *stored.resource_version == *cached.resource_version {
                    return;
                }
                if *node == *cached.node && stored.same_usage(&cached) {
                    // A status change: nothing a node sums moved.
                    stored.resource_version = cached.resource_version.into_boxed_str();
                    return;
                }
                let removed = pods.swap_remove(at);
                if pods.is_empty() {
                    self.by_node.remove(&node);
                }
                self.node_of.remove(uid);
                affected.push(node);
                removed.uid
            }
            None => self
                .own_keys
                .get_key_value(uid)
                .map_or_else(|| Arc::from(uid), |(uid, _)| uid.clone()),
        };
        self.set_own(&uid, cached.own.then(|| cached.key.clone()));
        if cached.node.is_empty() {
            return;
        }
        let node = self.intern_node(&cached.node);
        affected.push(node.clone());
        let stored = StoredPod {
            uid: uid.clone(),
            rare: rare_of(&mut cached),
            resource_version: cached.resource_version.into_boxed_str(),
            usage: cached.usage,
        };
        self.by_node.entry(node.clone()).or_default().push(stored);
        self.node_of.insert(uid, node);
    }

    /// Forgets the pod `uid`; returns its node.
    pub fn delete(&mut self, uid: &str) -> Option<Arc<str>> {
        if let Some((uid, key)) = self.own_keys.remove_entry(uid)
            && self.own.get(&key) == Some(&uid)
        {
            self.own.remove(&key);
        }
        let node = self.node_of.remove(uid)?;
        if let Some(pods) = self.by_node.get_mut(&node) {
            pods.retain(|p| &*p.uid != uid);
            if pods.is_empty() {
                self.by_node.remove(&node);
            }
        }
        Some(node)
    }

    /// Every node some pod is bound to.
    pub fn nodes(&self) -> impl Iterator<Item = &Arc<str>> + '_ {
        self.by_node.keys()
    }

    /// The nodes of `self` and `other` whose pods take different amounts.
    pub fn nodes_differing(&self, other: &PodTable) -> HashSet<Arc<str>> {
        self.nodes()
            .chain(other.nodes())
            .filter(|node| {
                self.node_usage(node) != other.node_usage(node)
                    || self.mapped_usage(node) != other.mapped_usage(node)
                    || sorted_ports(self.host_ports(node)) != sorted_ports(other.host_ports(node))
            })
            .cloned()
            .collect()
    }

    fn intern_node(&self, node: &str) -> Arc<str> {
        self.by_node
            .get_key_value(node)
            .map_or_else(|| Arc::from(node), |(node, _)| node.clone())
    }

    fn set_own(&mut self, uid: &Arc<str>, key: Option<(String, String)>) {
        if let Some(old) = self.own_keys.remove(uid)
            && self.own.get(&old) == Some(uid)
        {
            self.own.remove(&old);
        }
        if let Some(key) = key {
            self.own.insert(key.clone(), uid.clone());
            self.own_keys.insert(uid.clone(), key);
        }
    }
}

fn sorted_ports<'a>(ports: impl Iterator<Item = &'a HostPort>) -> Vec<&'a HostPort> {
    let mut ports: Vec<&HostPort> = ports.collect();
    ports.sort_by(|a, b| {
        (&a.host_ip, &a.protocol, a.port, a.container_port).cmp(&(
            &b.host_ip,
            &b.protocol,
            b.port,
            b.container_port,
        ))
    });
    ports
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    fn entry(uid: &str, rv: &str, node: &str, cpu: &str, own: bool, host_port: i32) -> CachedPod {
        let labels = if own {
            json!({"kubeocean.io/managed-by": "kubeocean"})
        } else {
            json!({})
        };
        let ports = if host_port > 0 {
            json!([{"containerPort": 80, "hostPort": host_port}])
        } else {
            json!([])
        };
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": format!("p-{uid}"), "namespace": "ns", "uid": uid,
                "resourceVersion": rv, "labels": labels},
            "spec": {"nodeName": node, "containers": [{"name": "c", "ports": ports,
                "resources": {"requests": {"cpu": cpu}}}]},
            "status": {"phase": "Running"},
        }))
        .unwrap();
        CachedPod::of(&pod).unwrap().1
    }

    fn cpu(table: &PodTable, node: &str) -> String {
        table
            .node_usage(node)
            .get("cpu")
            .map(|q| q.to_canonical_string())
            .unwrap_or_else(|| "0".into())
    }

    #[test]
    fn pods_are_kept_by_node_and_report_the_nodes_they_change() {
        let mut table = PodTable::default();
        // (uid, entry or None to delete, affected nodes, cpu on n1, cpu on n2, own pod p-o known)
        type Step = (
            &'static str,
            Option<CachedPod>,
            Vec<&'static str>,
            &'static str,
            &'static str,
            bool,
        );
        let steps: Vec<Step> = vec![
            (
                "a",
                Some(entry("a", "1", "n1", "1", false, 0)),
                vec!["n1"],
                "1",
                "0",
                false,
            ),
            // Same version: nothing.
            (
                "a",
                Some(entry("a", "1", "n1", "1", false, 0)),
                vec![],
                "1",
                "0",
                false,
            ),
            // New version, same usage: nothing.
            (
                "a",
                Some(entry("a", "2", "n1", "1", false, 0)),
                vec![],
                "1",
                "0",
                false,
            ),
            // More cpu on the same node.
            (
                "a",
                Some(entry("a", "3", "n1", "2", false, 0)),
                vec!["n1", "n1"],
                "2",
                "0",
                false,
            ),
            // Kubeocean's own pod, unscheduled: known by name, on no node.
            (
                "o",
                Some(entry("o", "4", "", "1", true, 0)),
                vec![],
                "2",
                "0",
                true,
            ),
            // Scheduled: it takes nothing the leasing math counts, but its node changed.
            (
                "o",
                Some(entry("o", "5", "n2", "1", true, 0)),
                vec!["n2"],
                "2",
                "0",
                true,
            ),
            // A host port is a change of its node.
            (
                "b",
                Some(entry("b", "6", "n2", "500m", false, 8080)),
                vec!["n2"],
                "2",
                "500m",
                true,
            ),
            ("o", None, vec!["n2"], "2", "500m", false),
            ("a", None, vec!["n1"], "0", "500m", false),
            ("a", None, vec![], "0", "500m", false),
        ];
        for (i, (uid, change, want, cpu1, cpu2, own_known)) in steps.into_iter().enumerate() {
            let mut affected = Vec::new();
            match change {
                Some(cached) => table.apply(uid, cached, &mut affected),
                None => affected.extend(table.delete(uid)),
            }
            let affected: Vec<&str> = affected.iter().map(|n| &**n).collect();
            assert_eq!(affected, want, "step {i}");
            assert_eq!(cpu(&table, "n1"), cpu1, "step {i}");
            assert_eq!(cpu(&table, "n2"), cpu2, "step {i}");
            assert_eq!(table.has_own_pod("ns", "p-o"), own_known, "step {i}");
        }
        assert_eq!(
            table.host_ports("n2").map(|p| p.port).collect::<Vec<_>>(),
            vec![8080]
        );
        assert_eq!(table.len(), 1);
    }

    #[test]
    fn a_relist_differs_where_the_amounts_differ() {
        let mut before = PodTable::default();
        let mut after = PodTable::default();
        let mut ignored = Vec::new();
        for (uid, node, cpu) in [("a", "n1", "1"), ("b", "n2", "1"), ("c", "n3", "1")] {
            before.apply(uid, entry(uid, "1", node, cpu, false, 0), &mut ignored);
        }
        // n1 unchanged (another version), n2 more cpu, n3 gone, n4 new.
        for (uid, rv, node, cpu) in [
            ("a", "2", "n1", "1"),
            ("b", "2", "n2", "2"),
            ("d", "1", "n4", "1"),
        ] {
            after.apply(uid, entry(uid, rv, node, cpu, false, 0), &mut ignored);
        }
        let mut differing: Vec<String> = after
            .nodes_differing(&before)
            .iter()
            .map(|n| n.to_string())
            .collect();
        differing.sort();
        assert_eq!(differing, vec!["n2", "n3", "n4"]);
    }
}
