//! The state of one sandbox cluster: its store, the resource types it serves, its identity
//! settings, injected faults and the shutdown signal.

use crate::apiserver::auth::Auth;
use crate::apiserver::faults::Faults;
use crate::apiserver::pki::{CertificateError, ClusterPki};
use crate::apiserver::resources::{self, GroupResource, ResourceType};
use crate::apiserver::store::{Store, WriteOp};
use crate::apiserver::write_options::{DeleteOptions, WriteContext};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::{Arc, OnceLock, RwLock, Weak};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Settings of a sandbox cluster.
#[derive(Clone, Debug)]
pub struct ClusterOptions {
    /// How many change events watches can resume from.
    pub history_limit: usize,
    /// Largest request body accepted, in bytes (kube-apiserver: 3 MiB).
    pub max_body_bytes: usize,
    /// How often a watch with `allowWatchBookmarks` gets a bookmark.
    pub bookmark_interval: Duration,
    /// The Kubernetes version `/version` reports.
    pub git_version: String,
    /// Whether the simulated scheduler binds pending pods.
    pub scheduler: bool,
    /// Whether the simulated kubelet runs pods on simulated nodes.
    pub kubelet: bool,
    /// How long a simulated container takes to start.
    pub pod_start_delay: Duration,
    /// Longest grace period the simulated kubelet waits before removing a deleted pod.
    pub max_termination_delay: Duration,
    /// How often simulated nodes renew their Lease.
    pub node_lease_renew: Duration,
    /// After how long without Lease renewal a node turns Ready=Unknown.
    pub node_monitor_grace: Duration,
    /// Whether the taint-eviction controller deletes pods on nodes with `NoExecute` taints
    /// they do not tolerate (on by default, as in kube-controller-manager).
    pub taint_eviction: bool,
    /// Whether the workload controllers run (Deployments, ReplicaSets, StatefulSets,
    /// DaemonSets, Jobs, CronJobs, EndpointSlices and Endpoints of Services). Off by default,
    /// so that tests see only what they create; `kube-sandbox serve` turns them on.
    pub workload_controllers: bool,
    /// How long the containers of a Job's pods run before they exit, unless the pod's
    /// `sandbox.kube/run-seconds` annotation says otherwise.
    pub job_pod_run_time: Duration,
    /// Handlers of `{resource}/{name}/proxy/...` for resources whose proxy the embedder
    /// serves (an aggregated API's, such as Karmada's `clusters/proxy`).
    pub proxy_handlers: crate::apiserver::proxy_hooks::ProxyHandlers<ClusterState>,
    /// Whether the audit trail records reads (`get`, `list`, `watch`) too, as kube-apiserver
    /// does under an audit policy with a `Metadata` rule for every request. Off by default:
    /// the trail then costs nothing on the read path.
    pub audit_reads: bool,
    /// Write strategies of resources the embedder serves for an aggregated API server (such
    /// as Karmada's `clusters`): run on create and update, after the CRD's schema.
    pub strategy_hooks: crate::apiserver::strategy_hooks::StrategyHooks,
    /// The metrics-server model: when set, every node's `/metrics/resource` is scraped
    /// through the node proxy and `metrics.k8s.io/v1beta1` is served (discovery included),
    /// so `kubectl top` works. Off by default, as metrics-server is an add-on.
    pub metrics_server: Option<MetricsServerOptions>,
}

/// Settings of the metrics-server model (metrics-server's flags of the same names).
#[derive(Clone, Debug)]
pub struct MetricsServerOptions {
    /// How often every node is scraped (`--metric-resolution`; 15 s in metrics-server's
    /// manifests). Usage is the rate between the last two scrapes, so the first figures
    /// appear after the second scrape.
    pub metric_resolution: Duration,
    /// How long one node's scrape may take (`--kubelet-request-timeout`, 10 s).
    pub kubelet_request_timeout: Duration,
}

impl Default for MetricsServerOptions {
    fn default() -> Self {
        MetricsServerOptions {
            metric_resolution: Duration::from_secs(15),
            kubelet_request_timeout: Duration::from_secs(10),
        }
    }
}

impl Default for ClusterOptions {
    fn default() -> Self {
        ClusterOptions {
            history_limit: 50_000,
            max_body_bytes: 3 * 1024 * 1024,
            bookmark_interval: Duration::from_secs(5),
            git_version: "v1.36.2".into(),
            scheduler: true,
            kubelet: true,
            pod_start_delay: Duration::from_millis(200),
            max_termination_delay: Duration::from_millis(200),
            node_lease_renew: Duration::from_secs(10),
            node_monitor_grace: Duration::from_secs(40),
            taint_eviction: true,
            workload_controllers: false,
            job_pod_run_time: Duration::from_secs(1),
            proxy_handlers: Default::default(),
            audit_reads: false,
            strategy_hooks: Default::default(),
            metrics_server: None,
        }
    }
}

/// The shared state behind a [`crate::Cluster`].
pub struct ClusterState {
    /// Name of the cluster (used in kubeconfigs and messages).
    pub name: String,
    /// The objects.
    pub store: Store,
    /// Settings.
    pub options: ClusterOptions,
    /// Identity: tokens, users, authorization.
    pub auth: Auth,
    /// Injected failures.
    pub faults: Faults,
    /// Resource requests served, by verb, resource and subresource.
    pub requests: crate::apiserver::requests::RequestCounts,
    /// The writes served, with who made them.
    pub audit: crate::apiserver::audit::AuditLog,
    /// Cancelled when the cluster shuts down; streams and loops end.
    pub shutdown: CancellationToken,
    pub(crate) self_ref: Weak<ClusterState>,
    types: RwLock<HashMap<GroupResource, Arc<ResourceType>>>,
    pki: OnceLock<Arc<ClusterPki>>,
}

impl ClusterState {
    /// A new cluster with the built-in types and the default namespaces.
    pub fn new(name: &str, options: ClusterOptions) -> Arc<ClusterState> {
        let aggregated = if options.metrics_server.is_some() {
            resources::metrics_types()
        } else {
            Vec::new()
        };
        let types = resources::builtin_types()
            .into_iter()
            .chain(aggregated)
            .map(|t| (t.group_resource(), Arc::new(t)))
            .collect();
        let state = Arc::new_cyclic(|weak| ClusterState {
            name: name.to_string(),
            store: Store::new(options.history_limit),
            options,
            auth: Auth::new(),
            faults: Faults::default(),
            requests: Default::default(),
            audit: Default::default(),
            shutdown: CancellationToken::new(),
            self_ref: weak.clone(),
            types: RwLock::new(types),
            pki: OnceLock::new(),
        });
        let ns_type = state.resource_type("", "namespaces");
        for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
            if let Some(rt) = &ns_type {
                let body = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns},
                    "spec": {"finalizers": ["kubernetes"]}});
                let _ = state.create(rt, "v1", "", body, &WriteContext::system("kube-apiserver"));
            }
        }
        // The components `componentstatuses` reports on (kubernetes
        // `pkg/registry/core/componentstatus/rest.go`): the sandbox's scheduler, controllers and
        // store, healthy while it runs.
        if let Some(rt) = state.resource_type("", "componentstatuses") {
            for component in ["scheduler", "controller-manager", "etcd-0"] {
                let body = json!({"apiVersion": "v1", "kind": "ComponentStatus",
                    "metadata": {"name": component},
                    "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]});
                let _ = state.create(&rt, "v1", "", body, &WriteContext::system("kube-apiserver"));
            }
        }
        state
    }

    /// The cluster's certificate authority, created on first use.
    pub fn pki(&self) -> Result<Arc<ClusterPki>, CertificateError> {
        if let Some(pki) = self.pki.get() {
            return Ok(pki.clone());
        }
        // Two first callers may both generate; the first stored one wins for both.
        let fresh = Arc::new(ClusterPki::new(&self.name)?);
        Ok(self.pki.get_or_init(|| fresh).clone())
    }

    /// The served type with this group and plural name.
    pub fn resource_type(&self, group: &str, plural: &str) -> Option<ResourceType> {
        let types = self.types.read().unwrap_or_else(|p| p.into_inner());
        types
            .get(&GroupResource::new(group, plural))
            .map(|t| (**t).clone())
    }

    /// The served type for a URL's group, version and resource (plural, singular or short name
    /// are not accepted in URLs; only the plural).
    pub fn lookup(&self, group: &str, version: &str, plural: &str) -> Option<ResourceType> {
        self.resource_type(group, plural)
            .filter(|t| t.versions.iter().any(|v| v == version))
    }

    /// Whether any served type has this group and version (core: group `""`, version `v1`).
    pub fn serves_group_version(&self, group: &str, version: &str) -> bool {
        let types = self.types.read().unwrap_or_else(|p| p.into_inner());
        types
            .values()
            .any(|t| t.group == group && t.versions.iter().any(|v| v == version))
    }

    /// Every served type.
    pub fn types_snapshot(&self) -> Vec<ResourceType> {
        let types = self.types.read().unwrap_or_else(|p| p.into_inner());
        let mut all: Vec<ResourceType> = types.values().map(|t| (**t).clone()).collect();
        all.sort_by(|a, b| (&a.group, &a.plural).cmp(&(&b.group, &b.plural)));
        all
    }

    /// Serves the resource a CRD describes and marks the CRD Established.
    pub(crate) fn register_crd(&self, crd: &Value) {
        let Ok(rt) = resources::type_from_crd(crd) else {
            return;
        };
        let gr = rt.group_resource();
        {
            let mut types = self.types.write().unwrap_or_else(|p| p.into_inner());
            types.insert(gr, Arc::new(rt.clone()));
        }
        let name = crd
            .pointer("/metadata/name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let established = crd
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .is_some_and(|c| {
                c.iter()
                    .any(|c| c["type"] == "Established" && c["status"] == "True")
            });
        if established || crd.pointer("/metadata/deletionTimestamp").is_some() {
            return;
        }
        let now = crate::apiserver::meta::now_rfc3339();
        let accepted = crd.pointer("/spec/names").cloned().unwrap_or_default();
        let crd_gr = GroupResource::new("apiextensions.k8s.io", "customresourcedefinitions");
        let _ = self.store.write(&crd_gr, "", &name, |current| {
            let Some(current) = current else {
                return Ok(WriteOp::Noop);
            };
            let mut new = current.value.clone();
            new["status"] = json!({
                "acceptedNames": accepted,
                "storedVersions": [rt.storage_version()],
                "conditions": [
                    {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                     "message": "no conflicts found", "lastTransitionTime": now},
                    {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                     "message": "the initial names have been accepted", "lastTransitionTime": now}
                ]
            });
            Ok(WriteOp::Put(new))
        });
    }

    /// Stops serving a deleted CRD's resource and removes its objects.
    pub(crate) fn unregister_crd(&self, crd: &Value) {
        let Ok(rt) = resources::type_from_crd(crd) else {
            return;
        };
        let gr = rt.group_resource();
        for (ns, name) in self.store.keys(&gr) {
            let _ = self.delete(&rt, &ns, &name, &DeleteOptions::default());
            // Finalizers on custom resources would block forever once the type is gone.
            let _ = self.store.write(&gr, &ns, &name, |c| {
                Ok(if c.is_some() {
                    WriteOp::Remove
                } else {
                    WriteOp::Noop
                })
            });
        }
        let mut types = self.types.write().unwrap_or_else(|p| p.into_inner());
        types.remove(&gr);
    }
}
