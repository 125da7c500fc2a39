//! In-memory indexes fed by the watches, one per cluster. Each `apply`/`delete` returns the
//! physical node names whose virtual node must be re-evaluated, so a pod event recomputes only
//! its node. Pods are kept as their cached usage (per uid and resourceVersion), not as objects.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use k8s_openapi::api::core::v1::{Node, Pod};
use k8s_openapi::api::storage::v1::CSINode;
use kube::ResourceExt;

pub use super::pod_table::CachedPod;
use super::pod_table::PodTable;
use super::reflector::Change;
pub use super::worker_pod::WorkerPod;
use crate::crd::{ClusterBinding, ResourceLeasingPolicy};
use crate::labels;
use crate::leasing::host_ports::{HostPort, distinct_host_ports};
use crate::leasing::{NodeUsage, node_matches};

/// What the index keeps of one pod, with its uid (`None` for a pod without a uid).
pub type IndexEntry = Option<(String, CachedPod)>;

/// A change of worker pods split in two: the change of the whole objects kept (`None` when
/// an added, modified or deleted pod was not kept; a re-list is always passed on, so that
/// what disappeared is dropped), and the change of the index entries.
pub fn split_pod_change(change: Change<WorkerPod>) -> (Option<Change<Pod>>, Change<IndexEntry>) {
    match change {
        Change::Applied(pod) => (
            pod.object.map(|p| Change::Applied(*p)),
            Change::Applied(pod.indexed),
        ),
        Change::Deleted(pod) => (
            pod.object.map(|p| Change::Deleted(*p)),
            Change::Deleted(pod.indexed),
        ),
        Change::Relisted(all) => {
            let mut objects = Vec::new();
            let mut indexed = Vec::with_capacity(all.len());
            for pod in all {
                objects.extend(pod.object.map(|p| *p));
                indexed.push(pod.indexed);
            }
            (Some(Change::Relisted(objects)), Change::Relisted(indexed))
        }
    }
}

/// The worker cluster as the syncer sees it.
#[derive(Default)]
pub struct WorkerIndex {
    nodes: HashMap<String, Arc<Node>>,
    pods: PodTable,
    /// The pods of a re-list in progress, swapped in when it completes.
    listing: Option<PodTable>,
    policies: BTreeMap<String, Arc<ResourceLeasingPolicy>>,
    csinodes: HashMap<String, Arc<CSINode>>,
}

impl WorkerIndex {
    /// An empty index.
    pub fn new() -> WorkerIndex {
        WorkerIndex::default()
    }

    /// A physical node.
    pub fn node(&self, name: &str) -> Option<Arc<Node>> {
        self.nodes.get(name).cloned()
    }

    /// Names of all physical nodes.
    pub fn node_names(&self) -> Vec<String> {
        self.nodes.keys().cloned().collect()
    }

    /// Every policy.
    pub fn policies(&self) -> Vec<Arc<ResourceLeasingPolicy>> {
        self.policies.values().cloned().collect()
    }

    /// One policy.
    pub fn policy(&self, name: &str) -> Option<Arc<ResourceLeasingPolicy>> {
        self.policies.get(name).cloned()
    }

    /// The physical CSINode of a node.
    pub fn csinode(&self, name: &str) -> Option<Arc<CSINode>> {
        self.csinodes.get(name).cloned()
    }

    /// Whether one of Kubeocean's own pods `namespace/name` exists (label
    /// `kubeocean.io/managed-by=kubeocean`; the physical pods of virtual pods are).
    pub fn has_own_pod(&self, namespace: &str, name: &str) -> bool {
        self.pods.has_own_pod(namespace, name)
    }

    /// The summed usage of the pods bound to `node`.
    pub fn node_usage(&self, node: &str) -> NodeUsage {
        self.pods.node_usage(node)
    }

    /// The summed requests of Kubeocean's own pods bound to `node` (what virtual pods take).
    pub fn mapped_usage(&self, node: &str) -> NodeUsage {
        self.pods.mapped_usage(node)
    }

    /// The host ports the pods bound to `node` hold (see [`crate::leasing::host_ports::host_ports_of`]).
    pub fn host_ports(&self, node: &str) -> Vec<HostPort> {
        distinct_host_ports(self.pods.host_ports(node).cloned().collect())
    }

    /// Number of pods bound to a node.
    pub fn pod_count(&self) -> usize {
        self.pods.len()
    }

    /// Records a node; returns it as affected, unless it is the version already known (the
    /// watch event of the syncer's own write, see `same_version`).
    pub fn apply_node(&mut self, node: Node) -> Vec<String> {
        let name = node.name_any();
        let known = self
            .nodes
            .get(&name)
            .is_some_and(|n| same_version(n, &node));
        self.nodes.insert(name.clone(), Arc::new(node));
        if known { Vec::new() } else { vec![name] }
    }

    /// Forgets a node.
    pub fn delete_node(&mut self, node: &Node) -> Vec<String> {
        let name = node.name_any();
        self.nodes.remove(&name);
        vec![name]
    }

    /// Replaces every node (after a re-list); affected: old and new names.
    pub fn replace_nodes(&mut self, nodes: Vec<Node>) -> Vec<String> {
        let mut affected: HashSet<String> = self.nodes.keys().cloned().collect();
        self.nodes = nodes
            .into_iter()
            .map(|n| (n.name_any(), Arc::new(n)))
            .collect();
        affected.extend(self.nodes.keys().cloned());
        affected.into_iter().collect()
    }

    /// Records a pod; affected: its old and new node, when its usage there changed.
    pub fn apply_pod(&mut self, pod: &Pod) -> Vec<String> {
        match CachedPod::of(pod) {
            Some((uid, cached)) => self.apply_cached(uid, cached),
            None => Vec::new(),
        }
    }

    /// Records what is kept of the pod `uid` (see [`CachedPod::of`]); affected: its old and
    /// new node, when its usage there changed.
    pub fn apply_cached(&mut self, uid: String, cached: CachedPod) -> Vec<String> {
        let mut affected = Vec::new();
        self.pods.apply(&uid, cached, &mut affected);
        let mut names: Vec<String> = affected.iter().map(|n| n.to_string()).collect();
        names.dedup();
        names
    }

    /// Forgets a pod; affected: its node.
    pub fn delete_pod(&mut self, pod: &Pod) -> Vec<String> {
        match &pod.metadata.uid {
            Some(uid) => self.delete_uid(uid),
            None => Vec::new(),
        }
    }

    /// Forgets the pod `uid`; affected: its node.
    pub fn delete_uid(&mut self, uid: &str) -> Vec<String> {
        self.pods
            .delete(uid)
            .map(|n| n.to_string())
            .into_iter()
            .collect()
    }

    /// Replaces every pod (after a re-list).
    pub fn replace_pods(&mut self, pods: Vec<Pod>) -> Vec<String> {
        self.replace_cached(pods.iter().filter_map(CachedPod::of).collect())
    }

    /// Replaces every pod (after a re-list) with what is kept of each.
    pub fn replace_cached(&mut self, pods: Vec<(String, CachedPod)>) -> Vec<String> {
        self.begin_pod_relist();
        for (uid, cached) in pods {
            self.list_pod(&uid, cached);
        }
        self.finish_pod_relist()
    }

    /// Starts a re-list of the pods: [`WorkerIndex::list_pod`] each listed pod, then
    /// [`WorkerIndex::finish_pod_relist`]. Until then, the pods known before are used.
    pub fn begin_pod_relist(&mut self) {
        self.listing = Some(PodTable::default());
    }

    /// One pod of the re-list in progress (started if it was not).
    pub fn list_pod(&mut self, uid: &str, cached: CachedPod) {
        let mut ignored = Vec::new();
        self.listing
            .get_or_insert_with(PodTable::default)
            .apply(uid, cached, &mut ignored);
    }

    /// Completes the re-list: the listed pods replace the known ones. Affected: the nodes
    /// whose pods take different amounts than before.
    pub fn finish_pod_relist(&mut self) -> Vec<String> {
        let listed = self.listing.take().unwrap_or_default();
        let affected = if self.pods.is_empty() {
            // The first list: every node with pods is new.
            listed.nodes().map(|n| n.to_string()).collect()
        } else {
            listed
                .nodes_differing(&self.pods)
                .into_iter()
                .map(|n| n.to_string())
                .collect()
        };
        self.pods = listed;
        affected
    }

    /// Records a policy. Returns the nodes to re-evaluate (none when only its status
    /// changed) and whether the policy itself needs its status reconciled.
    pub fn apply_policy(&mut self, policy: ResourceLeasingPolicy) -> (Vec<String>, bool) {
        let name = policy.name_any();
        let old = self.policies.insert(name.clone(), Arc::new(policy));
        let new = self.policies.get(&name).cloned();
        let affected = self.policy_change_affects(old.as_deref(), new.as_deref());
        let spec_changed = match (&old, &new) {
            (Some(old), Some(new)) => !same_policy_spec(old, new),
            _ => true,
        };
        (affected, spec_changed)
    }

    /// Forgets a policy; returns the nodes to re-evaluate.
    pub fn delete_policy(&mut self, policy: &ResourceLeasingPolicy) -> Vec<String> {
        let old = self.policies.remove(&policy.name_any());
        self.policy_change_affects(old.as_deref(), None)
    }

    /// Replaces every policy (after a re-list); returns the nodes to re-evaluate and the
    /// policy names to reconcile.
    pub fn replace_policies(
        &mut self,
        policies: Vec<ResourceLeasingPolicy>,
    ) -> (Vec<String>, Vec<String>) {
        let old = std::mem::take(&mut self.policies);
        let mut affected: HashSet<String> = HashSet::new();
        let mut changed = Vec::new();
        for policy in policies {
            let name = policy.name_any();
            let (nodes, spec_changed) = self.apply_policy(policy);
            affected.extend(nodes);
            let was = old.get(&name);
            if spec_changed || was.is_none_or(|w| !same_policy_spec(w, &self.policies[&name])) {
                changed.push(name);
            }
        }
        for (name, policy) in &old {
            if !self.policies.contains_key(name) {
                affected.extend(self.policy_change_affects(Some(policy), None));
            }
        }
        (affected.into_iter().collect(), changed)
    }

    /// Nodes a policy change can affect: those the old or the new selector matches, and those
    /// labelled as having the policy applied. Nothing when only its status changed.
    fn policy_change_affects(
        &self,
        old: Option<&ResourceLeasingPolicy>,
        new: Option<&ResourceLeasingPolicy>,
    ) -> Vec<String> {
        if let (Some(old), Some(new)) = (old, new)
            && same_policy_spec(old, new)
        {
            return Vec::new();
        }
        let name = old.or(new).map(ResourceExt::name_any).unwrap_or_default();
        self.nodes
            .values()
            .filter(|node| {
                let labelled = node
                    .labels()
                    .get(labels::POLICY_APPLIED)
                    .is_some_and(|v| *v == name);
                labelled
                    || [old, new]
                        .into_iter()
                        .flatten()
                        .any(|p| node_matches(p.spec.node_selector.as_ref(), node))
            })
            .map(|node| node.name_any())
            .collect()
    }

    /// Records a physical CSINode; affected: its node.
    pub fn apply_csinode(&mut self, csinode: CSINode) -> Vec<String> {
        let name = csinode.name_any();
        self.csinodes.insert(name.clone(), Arc::new(csinode));
        vec![name]
    }

    /// Forgets a physical CSINode.
    pub fn delete_csinode(&mut self, csinode: &CSINode) -> Vec<String> {
        let name = csinode.name_any();
        self.csinodes.remove(&name);
        vec![name]
    }

    /// Replaces every CSINode (after a re-list).
    pub fn replace_csinodes(&mut self, csinodes: Vec<CSINode>) -> Vec<String> {
        let mut affected: HashSet<String> = self.csinodes.keys().cloned().collect();
        self.csinodes = csinodes
            .into_iter()
            .map(|c| (c.name_any(), Arc::new(c)))
            .collect();
        affected.extend(self.csinodes.keys().cloned());
        affected.into_iter().collect()
    }
}

/// Whether two versions of a policy select and lend the same (status aside).
fn same_policy_spec(a: &ResourceLeasingPolicy, b: &ResourceLeasingPolicy) -> bool {
    a.spec == b.spec
        && a.metadata.deletion_timestamp == b.metadata.deletion_timestamp
        && a.metadata.creation_timestamp == b.metadata.creation_timestamp
}

/// The computing cluster as the syncer sees it: its binding, virtual nodes and mirrored
/// CSINodes (both selected by the binding label).
#[derive(Default)]
pub struct ComputingIndex {
    binding: Option<Arc<ClusterBinding>>,
    vnodes: HashMap<String, Arc<Node>>,
    csinodes: HashMap<String, Arc<CSINode>>,
}

impl ComputingIndex {
    /// An empty index.
    pub fn new() -> ComputingIndex {
        ComputingIndex::default()
    }

    /// The binding, if it exists.
    pub fn binding(&self) -> Option<Arc<ClusterBinding>> {
        self.binding.clone()
    }

    /// Sets or clears the binding.
    pub fn set_binding(&mut self, binding: Option<ClusterBinding>) {
        self.binding = binding.map(Arc::new);
    }

    /// A virtual node by name.
    pub fn vnode(&self, name: &str) -> Option<Arc<Node>> {
        self.vnodes.get(name).cloned()
    }

    /// Every virtual node.
    pub fn vnodes(&self) -> Vec<Arc<Node>> {
        self.vnodes.values().cloned().collect()
    }

    /// Number of virtual nodes.
    pub fn vnode_count(&self) -> usize {
        self.vnodes.len()
    }

    /// Records a virtual node (also after the syncer wrote it); affected: its physical node,
    /// unless it is the version already known (see `same_version`).
    pub fn apply_vnode(&mut self, node: Node) -> Vec<String> {
        self.apply_vnode_arc(Arc::new(node))
    }

    /// [`ComputingIndex::apply_vnode`] of a shared node.
    pub fn apply_vnode_arc(&mut self, node: Arc<Node>) -> Vec<String> {
        let physical = physical_node_of(&node);
        let name = node.name_any();
        let known = self
            .vnodes
            .get(&name)
            .is_some_and(|n| same_version(n, &node));
        self.vnodes.insert(name, node);
        if known {
            Vec::new()
        } else {
            physical.into_iter().collect()
        }
    }

    /// Forgets a virtual node.
    pub fn delete_vnode(&mut self, node: &Node) -> Vec<String> {
        self.vnodes.remove(&node.name_any());
        physical_node_of(node).into_iter().collect()
    }

    /// Replaces every virtual node (after a re-list).
    pub fn replace_vnodes(&mut self, nodes: Vec<Node>) -> Vec<String> {
        let mut affected: HashSet<String> = self
            .vnodes
            .values()
            .filter_map(|n| physical_node_of(n))
            .collect();
        self.vnodes = nodes
            .into_iter()
            .map(|n| (n.name_any(), Arc::new(n)))
            .collect();
        affected.extend(self.vnodes.values().filter_map(|n| physical_node_of(n)));
        affected.into_iter().collect()
    }

    /// A mirrored CSINode.
    pub fn csinode(&self, name: &str) -> Option<Arc<CSINode>> {
        self.csinodes.get(name).cloned()
    }

    /// Records a mirrored CSINode; affected: its physical node.
    pub fn apply_csinode(&mut self, csinode: CSINode) -> Vec<String> {
        let physical = csinode.labels().get(labels::PHYSICAL_NODE_NAME).cloned();
        self.csinodes.insert(csinode.name_any(), Arc::new(csinode));
        physical.into_iter().collect()
    }

    /// Forgets a mirrored CSINode.
    pub fn delete_csinode(&mut self, csinode: &CSINode) -> Vec<String> {
        self.csinodes.remove(&csinode.name_any());
        csinode
            .labels()
            .get(labels::PHYSICAL_NODE_NAME)
            .cloned()
            .into_iter()
            .collect()
    }

    /// Replaces every mirrored CSINode (after a re-list).
    pub fn replace_csinodes(&mut self, csinodes: Vec<CSINode>) -> Vec<String> {
        let affected = csinodes
            .iter()
            .filter_map(|c| c.labels().get(labels::PHYSICAL_NODE_NAME).cloned())
            .collect();
        self.csinodes = csinodes
            .into_iter()
            .map(|c| (c.name_any(), Arc::new(c)))
            .collect();
        affected
    }
}

/// Whether two objects are the same version (an equal, non-empty resourceVersion): the watch
/// event of a write the syncer already recorded from its answer changes nothing.
fn same_version(a: &Node, b: &Node) -> bool {
    a.metadata.resource_version.is_some()
        && a.metadata.resource_version == b.metadata.resource_version
}

/// The physical node a virtual node stands for (its `kubeocean.io/physical-node-name` label).
pub fn physical_node_of(vnode: &Node) -> Option<String> {
    vnode.labels().get(labels::PHYSICAL_NODE_NAME).cloned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn pod(uid: &str, rv: &str, node: &str, cpu: &str, phase: &str) -> Pod {
        serde_json::from_value(json!({
            "metadata": { "name": format!("p-{uid}"), "namespace": "default", "uid": uid, "resourceVersion": rv },
            "spec": { "nodeName": node, "containers": [{ "name": "c", "resources": { "requests": { "cpu": cpu } } }] },
            "status": { "phase": phase },
        }))
        .unwrap()
    }

    fn node(name: &str, zone: &str) -> Node {
        serde_json::from_value(json!({ "metadata": { "name": name, "labels": { "zone": zone } } }))
            .unwrap()
    }

    fn policy(name: &str, zone: &str, rv: &str) -> ResourceLeasingPolicy {
        serde_json::from_value(json!({
            "metadata": { "name": name, "resourceVersion": rv },
            "spec": { "cluster": "b", "nodeSelector": { "nodeSelectorTerms": [{ "matchExpressions": [
                { "key": "zone", "operator": "In", "values": [zone] }] }] } },
        }))
        .unwrap()
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

    #[test]
    fn pod_events_affect_only_their_node_and_only_when_usage_changes() {
        let mut index = WorkerIndex::new();
        // (event, expected affected nodes, expected cpu on n1, expected cpu on n2)
        type Step = Box<dyn Fn(&mut WorkerIndex) -> Vec<String>>;
        let steps: Vec<(Step, Vec<&str>, &str, &str)> = vec![
            (
                Box::new(|i| i.apply_pod(&pod("u1", "1", "n1", "1", "Running"))),
                vec!["n1"],
                "1",
                "0",
            ),
            // Same version again: nothing.
            (
                Box::new(|i| i.apply_pod(&pod("u1", "1", "n1", "1", "Running"))),
                vec![],
                "1",
                "0",
            ),
            // New version, same usage (a status change): nothing.
            (
                Box::new(|i| i.apply_pod(&pod("u1", "2", "n1", "1", "Running"))),
                vec![],
                "1",
                "0",
            ),
            (
                Box::new(|i| i.apply_pod(&pod("u2", "3", "n2", "500m", "Pending"))),
                vec!["n2"],
                "1",
                "500m",
            ),
            // Finished: no longer counts.
            (
                Box::new(|i| i.apply_pod(&pod("u1", "4", "n1", "1", "Succeeded"))),
                vec!["n1"],
                "0",
                "500m",
            ),
            (
                Box::new(|i| i.delete_pod(&pod("u2", "5", "n2", "500m", "Pending"))),
                vec!["n2"],
                "0",
                "0",
            ),
            // Unscheduled pods affect no node.
            (
                Box::new(|i| i.apply_pod(&pod("u3", "6", "", "2", "Pending"))),
                vec![],
                "0",
                "0",
            ),
        ];
        for (i, (step, want, cpu1, cpu2)) in steps.into_iter().enumerate() {
            assert_eq!(sorted(step(&mut index)), want, "step {i}");
            let cpu = |n: &str| {
                index
                    .node_usage(n)
                    .get("cpu")
                    .map(|q| q.to_canonical_string())
                    .unwrap_or_else(|| "0".into())
            };
            assert_eq!(cpu("n1"), cpu1, "step {i} n1");
            assert_eq!(cpu("n2"), cpu2, "step {i} n2");
        }
        // Only Kubeocean's own pods are known by name.
        assert!(!index.has_own_pod("default", "p-u1"));
    }

    #[test]
    fn worker_pods_keep_the_object_only_when_asked_and_split_by_half() {
        let ours = |p: &Pod| p.metadata.name.as_deref() == Some("p-ours");
        let worker_pod = |uid: &str| WorkerPod::new(pod(uid, "1", "n1", "1", "Running"), ours);
        let mut no_uid = pod("x", "1", "n1", "1", "Running");
        no_uid.metadata.uid = None;
        // (change, objects passed on (None: nothing), index entries)
        type Want = (Option<Vec<&'static str>>, Vec<Option<&'static str>>);
        let table: Vec<(Change<WorkerPod>, Want)> = vec![
            (
                Change::Applied(worker_pod("ours")),
                (Some(vec!["p-ours"]), vec![Some("ours")]),
            ),
            (
                Change::Applied(worker_pod("other")),
                (None, vec![Some("other")]),
            ),
            (
                Change::Deleted(worker_pod("ours")),
                (Some(vec!["p-ours"]), vec![Some("ours")]),
            ),
            (
                Change::Deleted(worker_pod("other")),
                (None, vec![Some("other")]),
            ),
            (
                Change::Applied(WorkerPod::new(no_uid, |_| false)),
                (None, vec![None]),
            ),
            // A re-list is always passed on, with only the objects kept.
            (
                Change::Relisted(vec![worker_pod("ours"), worker_pod("other")]),
                (Some(vec!["p-ours"]), vec![Some("ours"), Some("other")]),
            ),
            (Change::Relisted(vec![]), (Some(vec![]), vec![])),
        ];
        for (i, (change, (want_objects, want_indexed))) in table.into_iter().enumerate() {
            let kind = |c: &Change<Pod>| match c {
                Change::Applied(_) => "applied",
                Change::Deleted(_) => "deleted",
                Change::Relisted(_) => "relisted",
            };
            let want_kind = match &change {
                Change::Applied(_) => "applied",
                Change::Deleted(_) => "deleted",
                Change::Relisted(_) => "relisted",
            };
            let (objects, indexed) = split_pod_change(change);
            let names = objects.as_ref().map(|c| {
                assert_eq!(kind(c), want_kind, "case {i}");
                match c {
                    Change::Applied(p) | Change::Deleted(p) => vec![p.name_any()],
                    Change::Relisted(all) => all.iter().map(ResourceExt::name_any).collect(),
                }
            });
            let want_names =
                want_objects.map(|v| v.into_iter().map(str::to_owned).collect::<Vec<_>>());
            assert_eq!(names, want_names, "case {i}");
            let uids: Vec<Option<String>> = match indexed {
                Change::Applied(e) | Change::Deleted(e) => vec![e.map(|(uid, _)| uid)],
                Change::Relisted(all) => all.into_iter().map(|e| e.map(|(uid, _)| uid)).collect(),
            };
            let want_uids: Vec<Option<String>> = want_indexed
                .into_iter()
                .map(|u| u.map(str::to_owned))
                .collect();
            assert_eq!(uids, want_uids, "case {i}");
        }
    }

    #[test]
    fn cached_entries_index_as_the_pods_they_come_from() {
        // The same events through the objects and through their cached entries.
        let events = [
            pod("u1", "1", "n1", "1", "Running"),
            pod("u2", "2", "n2", "500m", "Pending"),
            pod("u1", "3", "n2", "1", "Running"),
            pod("u2", "4", "n2", "500m", "Succeeded"),
        ];
        let mut by_object = WorkerIndex::new();
        let mut by_entry = WorkerIndex::new();
        for event in &events {
            let (uid, cached) = CachedPod::of(event).unwrap();
            assert_eq!(
                sorted(by_object.apply_pod(event)),
                sorted(by_entry.apply_cached(uid, cached)),
                "{:?}",
                event.metadata
            );
        }
        for node in ["n1", "n2"] {
            assert_eq!(
                by_object.node_usage(node),
                by_entry.node_usage(node),
                "{node}"
            );
        }
        assert_eq!(by_entry.delete_uid("u1"), vec!["n2"]);
        assert_eq!(by_entry.delete_uid("u1"), Vec::<String>::new());
        let relisted = vec![CachedPod::of(&events[3]).unwrap()];
        assert_eq!(by_entry.replace_cached(relisted), Vec::<String>::new());
        assert_eq!(by_entry.pod_count(), 1);
        assert!(!by_entry.has_own_pod("default", "p-u1"));
    }

    #[test]
    fn relist_removes_missing_pods() {
        let mut index = WorkerIndex::new();
        index.apply_pod(&pod("u1", "1", "n1", "1", "Running"));
        index.apply_pod(&pod("u2", "1", "n2", "1", "Running"));
        let affected = index.replace_pods(vec![pod("u2", "1", "n2", "1", "Running")]);
        assert_eq!(affected, vec!["n1"]);
        assert_eq!(index.pod_count(), 1);
        assert_eq!(index.node_usage("n1"), NodeUsage::new());
    }

    #[test]
    fn policy_changes_affect_selected_nodes_and_status_changes_nothing() {
        let mut index = WorkerIndex::new();
        index.apply_node(node("a1", "a"));
        index.apply_node(node("b1", "b"));
        let (affected, changed) = index.apply_policy(policy("p", "a", "1"));
        assert_eq!((sorted(affected), changed), (vec!["a1".to_owned()], true));
        // Status-only update.
        let mut with_status = policy("p", "a", "2");
        with_status.status = Some(Default::default());
        assert_eq!(index.apply_policy(with_status), (vec![], false));
        // Selector moves from zone a to b: both are affected.
        let (affected, changed) = index.apply_policy(policy("p", "b", "3"));
        assert_eq!(sorted(affected), vec!["a1".to_owned(), "b1".to_owned()]);
        assert!(changed);
        assert_eq!(
            sorted(index.delete_policy(&policy("p", "b", "4"))),
            vec!["b1".to_owned()]
        );
    }

    #[test]
    fn virtual_nodes_map_back_to_physical_nodes() {
        let mut index = ComputingIndex::new();
        let vnode: Node = serde_json::from_value(json!({ "metadata": { "name": "vnode-c-n1",
            "labels": { "kubeocean.io/physical-node-name": "n1" } } }))
        .unwrap();
        assert_eq!(index.apply_vnode(vnode.clone()), vec!["n1"]);
        assert_eq!(index.vnode_count(), 1);
        assert_eq!(index.replace_vnodes(Vec::new()), vec!["n1"]);
        assert!(index.vnode("vnode-c-n1").is_none());
    }
}
