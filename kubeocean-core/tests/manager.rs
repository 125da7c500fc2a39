//! The manager end to end, against sandbox clusters: a computing cluster (ClusterBindings,
//! Secrets, the workloads, virtual nodes) reached in-process, and worker clusters served over
//! loopback HTTP and reached through the bindings' kubeconfig Secrets.
//!
//! The sandbox stores Deployments but runs no Deployment controller; [`deployment_controller`]
//! plays its part (observedGeneration and availableReplicas), as kube-controller-manager would.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, from_json};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use k8s_openapi::ByteString;
use k8s_openapi::api::apps::v1::Deployment;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret, Service, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_kit::admin::Metrics;
use kube_kit::controller::{Backoff, ControllerMetrics};
use kube_sandbox::testing::{Sandboxes, create_namespace, eventually_some};
use kube_sandbox::{
    Cluster, ClusterOptions, FaultAction, FaultRule, ServeOptions, Served, SimNode, UserInfo,
};
use kubeocean_core::crd::{ClusterBinding, ClusterBindingPhase, ResourceLeasingPolicy};
use kubeocean_core::manager::cluster_binding::reconcile;
use kubeocean_core::manager::permissions::{SYNCER_GRANTS, Scope};
use kubeocean_core::manager::{
    BindingRuntime, EmbeddedProxierConfig, EmbeddedRunner, FINALIZER, Manager, ManagerConfig,
    RuntimeReporter, SyncerProxierRuntime, SyncerRuntime, Templates, workload_names,
};
use kubeocean_core::syncer::{SyncerConfig, SyncerMetrics};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

/// The manager's namespace; also where the kubeconfig Secrets live.
const NS: &str = "kubeocean-system";
const MOUNT_NS: &str = "kubeocean-worker";

struct Worker {
    cluster: Cluster,
    served: Served,
    client: Client,
}

struct Env {
    /// Stops the manager and shuts the clusters down first on drop.
    _sandboxes: Sandboxes,
    c: Client,
    workers: Vec<Worker>,
    token: CancellationToken,
}

/// A computing cluster with the CRDs and the manager namespace, and `workers` worker clusters
/// (CRDs, one simulated node `n1`, a policy lending everything to binding `b<i>`).
async fn env(workers: usize) -> Env {
    let mut sandboxes = Sandboxes::new();
    let computing = sandboxes.cluster_with_options(
        "computing",
        ClusterOptions {
            node_monitor_grace: Duration::from_secs(2),
            ..ClusterOptions::default()
        },
    );
    let c = computing.client();
    kubeocean_core::setup::install_crds(&c).await.unwrap();
    create_namespace(&c, NS).await;
    let mut list = Vec::new();
    for i in 1..=workers {
        let cluster = sandboxes.cluster_with_options(
            &format!("worker-{i}"),
            ClusterOptions {
                node_lease_renew: Duration::from_millis(200),
                ..ClusterOptions::default()
            },
        );
        let served = cluster.serve(ServeOptions::default()).await.unwrap();
        let client = cluster.client();
        kubeocean_core::setup::install_crds(&client).await.unwrap();
        create_namespace(&client, MOUNT_NS).await;
        // Physical pods get the binding's priority class (the worker chart installs it).
        let priority: PriorityClass = from_json(json!({
            "metadata": {"name": "kubeocean-default"}, "value": 0,
        }));
        Api::<PriorityClass>::all(client.clone())
            .create(&PostParams::default(), &priority)
            .await
            .unwrap();
        cluster.add_node(&SimNode::new("n1", "4", "8Gi")).unwrap();
        let policy: ResourceLeasingPolicy = from_json(json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
            "metadata": {"name": "lend"}, "spec": {"cluster": format!("b{i}")},
        }));
        Api::<ResourceLeasingPolicy>::all(client.clone())
            .create(&PostParams::default(), &policy)
            .await
            .unwrap();
        list.push(Worker {
            cluster,
            served,
            client,
        });
    }
    Env {
        token: sandboxes.token().clone(),
        _sandboxes: sandboxes,
        c,
        workers: list,
    }
}

async fn put_secret(c: &Client, name: &str, kubeconfig: &str) {
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some(name.into()),
            namespace: Some(NS.into()),
            ..Default::default()
        },
        data: Some(BTreeMap::from([(
            "kubeconfig".to_owned(),
            ByteString(kubeconfig.as_bytes().to_vec()),
        )])),
        ..Default::default()
    };
    let api: Api<Secret> = Api::namespaced(c.clone(), NS);
    match api.get_opt(name).await.unwrap() {
        Some(old) => {
            let mut new = secret;
            new.metadata.resource_version = old.resource_version();
            api.replace(name, &PostParams::default(), &new)
                .await
                .unwrap();
        }
        None => {
            api.create(&PostParams::default(), &secret).await.unwrap();
        }
    }
}

/// Creates Secret `<name>-kc` with `kubeconfig` and binding `name` (clusterID `c<name>`)
/// using it; `spec` fields override the defaults.
async fn register(c: &Client, name: &str, kubeconfig: &str, spec: Value) {
    let secret = format!("{name}-kc");
    put_secret(c, &secret, kubeconfig).await;
    let mut full = json!({"clusterID": format!("c{name}"), "mountNamespace": MOUNT_NS,
                          "secretRef": {"name": secret}});
    for (k, v) in spec.as_object().unwrap() {
        full[k] = v.clone();
    }
    let binding: ClusterBinding = from_json(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
        "metadata": {"name": name}, "spec": full,
    }));
    Api::<ClusterBinding>::all(c.clone())
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

fn config(syncer_image: &str) -> ManagerConfig {
    let mut config = ManagerConfig::new(Templates::new(NS, syncer_image, "kubeocean:proxier"));
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.probe_timeout = Duration::from_millis(500);
    config.worker_timeout = Duration::from_secs(1);
    config.retry_interval = Duration::from_millis(200);
    config.resync_interval = Duration::from_secs(2);
    config.drain_interval = Duration::from_millis(200);
    config
}

fn controller_metrics() -> ControllerMetrics {
    ControllerMetrics::register(&Metrics::new())
}

/// Runs a Deployment-mode manager until `token` is cancelled.
fn start_deployments(c: &Client, config: ManagerConfig, token: &CancellationToken) {
    let manager = Manager::new(c.clone(), config);
    tokio::spawn(manager.run(controller_metrics(), None, token.clone()));
}

fn syncer_base() -> SyncerConfig {
    let mut base = SyncerConfig::new("unused");
    base.secret_namespace = NS.into();
    base.client_options = base.client_options.with_rate_limit(0.0, 0);
    base.lease_renew_interval = Duration::from_millis(200);
    base.connect_retry_interval = Duration::from_millis(200);
    base.retry_interval = Duration::from_millis(100);
    base.probe_timeout = Duration::from_millis(500);
    base
}

/// Runs an embedded-mode manager (syncer only) until `token` is cancelled.
fn start_embedded(c: &Client, token: &CancellationToken) -> Arc<EmbeddedRunner> {
    let runtime = Arc::new(SyncerRuntime::new(c.clone(), syncer_base()));
    let runner = Arc::new(
        EmbeddedRunner::new(runtime, token.clone())
            .with_backoff(Backoff {
                base: Duration::from_millis(100),
                max: Duration::from_secs(1),
            })
            .with_stop_grace(Duration::from_millis(500)),
    );
    let manager = Manager::embedded(c.clone(), config("unused"), runner.clone());
    tokio::spawn(manager.run(controller_metrics(), None, token.clone()));
    runner
}

/// Plays kube-controller-manager's Deployment controller: every Deployment in the manager
/// namespace gets its generation observed and all replicas available.
fn deployment_controller(c: &Client, token: &CancellationToken) {
    let api: Api<Deployment> = Api::namespaced(c.clone(), NS);
    let token = token.clone();
    tokio::spawn(async move {
        while !token.is_cancelled() {
            for d in api.list(&ListParams::default()).await.unwrap().items {
                let generation = d.metadata.generation;
                let observed = d.status.as_ref().and_then(|s| s.observed_generation);
                if observed == generation {
                    continue;
                }
                let replicas = d.spec.as_ref().and_then(|s| s.replicas).unwrap_or(1);
                let status = json!({"status": {"observedGeneration": generation, "replicas": replicas,
                    "updatedReplicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas}});
                let _ = api
                    .patch_status(
                        &d.name_any(),
                        &PatchParams::default(),
                        &Patch::Merge(&status),
                    )
                    .await;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    });
}

async fn get_binding(c: &Client, name: &str) -> Option<ClusterBinding> {
    Api::<ClusterBinding>::all(c.clone())
        .get_opt(name)
        .await
        .unwrap()
}

/// `(status, reason, message)` of a condition.
fn condition(binding: &ClusterBinding, type_: &str) -> Option<(String, String, String)> {
    binding
        .status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn phase(binding: &ClusterBinding) -> Option<ClusterBindingPhase> {
    binding.status.as_ref().and_then(|s| s.phase)
}

async fn wait_phase(c: &Client, name: &str, want: ClusterBindingPhase) -> ClusterBinding {
    let what = format!("binding {name} in phase {want:?}");
    eventually(&what, || async {
        get_binding(c, name)
            .await
            .is_some_and(|b| phase(&b) == Some(want))
    })
    .await;
    get_binding(c, name).await.unwrap()
}

async fn wait_ready(c: &Client, name: &str) -> ClusterBinding {
    let b = wait_phase(c, name, ClusterBindingPhase::Ready).await;
    for t in ["Ready", "Connected", "SyncerReady", "ProxierReady"] {
        let (status, reason, message) = condition(&b, t).unwrap();
        assert_eq!(status, "True", "{t}: {reason} {message}");
    }
    b
}

/// Reasons of the Events recorded on binding `name`.
async fn event_reasons(c: &Client, name: &str) -> Vec<String> {
    Api::<Event>::all(c.clone())
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(name))
        .filter_map(|e| e.reason)
        .collect()
}

async fn virtual_nodes(c: &Client, binding: &str) -> Vec<String> {
    Api::<Node>::all(c.clone())
        .list(&ListParams::default().labels(&format!("kubeocean.io/cluster-binding={binding}")))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

fn owned_by(meta: &kube::api::ObjectMeta, binding: &ClusterBinding) -> bool {
    meta.owner_references
        .iter()
        .flatten()
        .any(|o| o.kind == "ClusterBinding" && Some(&o.uid) == binding.metadata.uid.as_ref())
}

fn image(d: &Deployment) -> String {
    d.spec
        .as_ref()
        .unwrap()
        .template
        .spec
        .as_ref()
        .unwrap()
        .containers[0]
        .image
        .clone()
        .unwrap()
}

#[tokio::test]
async fn good_secret_makes_the_binding_ready_with_owned_workloads() {
    let env = env(1).await;
    let c = &env.c;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    start_deployments(c, config("kubeocean:1"), &env.token);

    // Before the Deployments are available the binding is Pending, Connected.
    let b = wait_phase(c, "b1", ClusterBindingPhase::Pending).await;
    let (status, reason, _) = condition(&b, "Connected").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("True", "WorkerReachable")
    );
    assert_eq!(condition(&b, "SyncerReady").unwrap().1, "Progressing");
    assert!(b.finalizers().iter().any(|f| f == FINALIZER));

    deployment_controller(c, &env.token);
    let b = wait_ready(c, "b1").await;
    assert!(b.status.as_ref().unwrap().last_sync_time.is_some());

    let names = workload_names("b1", NS);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    let syncer = deployments.get(&names.syncer).await.unwrap();
    let proxier = deployments.get(&names.proxier).await.unwrap();
    let service = Api::<Service>::namespaced(c.clone(), NS)
        .get(&names.proxier)
        .await
        .unwrap();
    let sa = Api::<ServiceAccount>::namespaced(c.clone(), NS)
        .get(&names.service_account)
        .await
        .unwrap();
    let role = Api::<ClusterRole>::all(c.clone())
        .get(&names.cluster_role)
        .await
        .unwrap();
    let role_binding = Api::<ClusterRoleBinding>::all(c.clone())
        .get(&names.cluster_role)
        .await
        .unwrap();
    let tls = Api::<Secret>::namespaced(c.clone(), NS)
        .get(&names.proxier_tls)
        .await
        .unwrap();
    for (what, meta) in [
        ("syncer", &syncer.metadata),
        ("proxier", &proxier.metadata),
        ("service", &service.metadata),
        ("service account", &sa.metadata),
        ("cluster role", &role.metadata),
        ("cluster role binding", &role_binding.metadata),
        ("tls secret", &tls.metadata),
    ] {
        assert!(owned_by(meta, &b), "{what} is owned by the binding");
    }
    assert_eq!(image(&syncer), "kubeocean:1");
    // The syncer points each virtual node at a proxier pod, on a port of its own (not at the
    // Service's ClusterIP).
    let cluster_ip = service.spec.unwrap().cluster_ip.unwrap();
    let args = syncer.spec.unwrap().template.spec.unwrap().containers[0]
        .args
        .clone()
        .unwrap();
    assert!(
        !args.contains(&format!("--proxier-address={cluster_ip}")),
        "{args:?}"
    );
    for arg in [
        "--proxier-node-ports=20000-29999",
        "--proxier-pod-selector=app.kubernetes.io/instance=b1,app.kubernetes.io/name=kubeocean-proxier",
        "--proxier-pod-namespace=kubeocean-system",
    ] {
        assert!(args.contains(&arg.to_owned()), "{arg} in {args:?}");
    }
    assert!(args.contains(&"--cluster-binding=b1".to_owned()));
    assert_eq!(
        role_binding.subjects.unwrap()[0].name,
        sa.metadata.name.unwrap()
    );
    // Signed by the computing cluster for the kubelet-serving signer, not self-signed.
    assert_eq!(
        tls.annotations()
            .get("kubeocean.io/serving-certificate")
            .map(String::as_str),
        Some("cluster"),
        "{:?}",
        tls.annotations()
    );
    assert_eq!(
        condition(&b, "ProxierReady").unwrap().1,
        "DeploymentAvailable"
    );
    assert!(tls.data.unwrap().contains_key("tls.crt"));
    let reasons = event_reasons(c, "b1").await;
    assert!(reasons.iter().any(|r| r == "Ready"), "{reasons:?}");
    assert!(reasons.iter().any(|r| r == "Created"), "{reasons:?}");
}

#[tokio::test]
async fn bad_kubeconfig_fails_with_the_cause_and_recovers_when_fixed() {
    let env = env(1).await;
    let c = &env.c;
    // Nothing listens on port 1.
    let unreachable =
        kube_sandbox::serve::kubeconfig_yaml("gone", "http://127.0.0.1:1", None, "token");
    register(c, "b1", &unreachable, json!({})).await;
    start_deployments(c, config("kubeocean:1"), &env.token);
    deployment_controller(c, &env.token);

    let b = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    let (status, reason, message) = condition(&b, "Connected").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ConnectivityFailed")
    );
    assert!(message.contains("unreachable"), "{message}");
    let (_, ready_reason, ready_message) = condition(&b, "Ready").unwrap();
    assert_eq!(ready_reason, "ConnectivityFailed");
    assert_eq!(ready_message, message);
    // No workloads for a worker that cannot be reached.
    let names = workload_names("b1", NS);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    assert!(deployments.get_opt(&names.syncer).await.unwrap().is_none());
    eventually("a ConnectivityFailed event", || async {
        event_reasons(c, "b1")
            .await
            .iter()
            .any(|r| r == "ConnectivityFailed")
    })
    .await;

    // A Secret that is not a kubeconfig at all: the cause names it.
    put_secret(c, "b1-kc", "not: [a kubeconfig").await;
    eventually("the kubeconfig error in the message", || async {
        let b = get_binding(c, "b1").await.unwrap();
        condition(&b, "Connected").is_some_and(|(_, r, m)| {
            r == "ConnectivityFailed" && m.contains("secret kubeocean-system/b1-kc")
        })
    })
    .await;

    put_secret(c, "b1-kc", &env.workers[0].served.kubeconfig_yaml).await;
    wait_ready(c, "b1").await;
    assert!(deployments.get_opt(&names.syncer).await.unwrap().is_some());
}

#[tokio::test]
async fn missing_worker_permissions_are_listed_then_granted() {
    let env = env(1).await;
    let c = &env.c;
    let worker = &env.workers[0];
    worker
        .cluster
        .auth()
        .add_token("limited-token", UserInfo::new("syncer", &[]));
    let limited =
        kube_sandbox::serve::kubeconfig_yaml("worker-1", &worker.served.url, None, "limited-token");
    // Enough to ask, and to watch nodes; nothing else.
    let role: ClusterRole = from_json(json!({
        "metadata": {"name": "syncer"},
        "rules": [
            {"apiGroups": ["authorization.k8s.io"], "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]},
            {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list", "watch"]},
        ],
    }));
    Api::<ClusterRole>::all(worker.client.clone())
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let role_binding: ClusterRoleBinding = from_json(json!({
        "metadata": {"name": "syncer"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "syncer"},
        "subjects": [{"kind": "User", "name": "syncer"}],
    }));
    Api::<ClusterRoleBinding>::all(worker.client.clone())
        .create(&PostParams::default(), &role_binding)
        .await
        .unwrap();
    register(c, "b1", &limited, json!({})).await;
    start_deployments(c, config("kubeocean:1"), &env.token);
    deployment_controller(c, &env.token);

    let b = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    let (status, reason, message) = condition(&b, "Connected").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "PermissionDenied")
    );
    assert!(
        !message.contains("nodes: list"),
        "granted verbs are not listed: {message}"
    );
    for missing in [
        "nodes: patch",
        "pods: list, watch",
        "pods in namespace kubeocean-worker: get, list, watch, create, update, delete, deletecollection",
        "persistentvolumes: get, list, watch, create, delete, deletecollection",
        "priorityclasses.scheduling.k8s.io: get",
    ] {
        assert!(message.contains(missing), "{missing} in {message}");
    }

    let everything: ClusterRole = from_json(json!({
        "metadata": {"name": "syncer"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}],
    }));
    Api::<ClusterRole>::all(worker.client.clone())
        .patch(
            "syncer",
            &PatchParams::default(),
            &Patch::Merge(&everything),
        )
        .await
        .unwrap();
    wait_ready(c, "b1").await;
}

#[tokio::test]
async fn invalid_spec_is_reported_without_workloads() {
    let env = env(1).await;
    let c = &env.c;
    register(
        c,
        "b1",
        &env.workers[0].served.kubeconfig_yaml,
        json!({"mountNamespace": null}),
    )
    .await;
    start_deployments(c, config("kubeocean:1"), &env.token);
    let b = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    let (status, reason, message) = condition(&b, "Ready").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "ValidationFailed")
    );
    assert!(
        message.contains("spec.mountNamespace is required"),
        "{message}"
    );
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    assert!(
        deployments
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
    eventually("a ValidationFailed event", || async {
        event_reasons(c, "b1")
            .await
            .iter()
            .any(|r| r == "ValidationFailed")
    })
    .await;
}

#[tokio::test]
async fn template_change_updates_the_deployment() {
    let env = env(1).await;
    let c = &env.c;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    deployment_controller(c, &env.token);
    let first = env.token.child_token();
    start_deployments(c, config("kubeocean:1"), &first);
    wait_ready(c, "b1").await;
    let names = workload_names("b1", NS);
    let deployments: Api<Deployment> = Api::namespaced(c.clone(), NS);
    let before = deployments.get(&names.syncer).await.unwrap();
    assert_eq!(image(&before), "kubeocean:1");

    // The manager restarts with a new syncer image.
    first.cancel();
    tokio::time::sleep(Duration::from_millis(100)).await;
    start_deployments(c, config("kubeocean:2"), &env.token);
    eventually("the syncer Deployment on the new image", || async {
        deployments
            .get(&names.syncer)
            .await
            .is_ok_and(|d| image(&d) == "kubeocean:2")
    })
    .await;
    let after = deployments.get(&names.syncer).await.unwrap();
    assert!(after.metadata.generation > before.metadata.generation);
    assert_eq!(
        after.metadata.uid, before.metadata.uid,
        "updated, not replaced"
    );
    // The proxier's template did not change, so it was left alone.
    let proxier = deployments.get(&names.proxier).await.unwrap();
    assert_eq!(proxier.metadata.generation, Some(1));
    wait_ready(c, "b1").await;
    eventually("an Updated event", || async {
        event_reasons(c, "b1").await.iter().any(|r| r == "Updated")
    })
    .await;

    // A Deployment edited by hand keeps its edit until the template changes again (the
    // manager compares template hashes), but a deleted one is recreated.
    deployments
        .delete(&names.syncer, &DeleteParams::default())
        .await
        .unwrap();
    eventually("the syncer Deployment recreated", || async {
        deployments
            .get_opt(&names.syncer)
            .await
            .unwrap()
            .is_some_and(|d| d.metadata.uid != after.metadata.uid)
    })
    .await;
}

/// A ConfigMap in the worker's mount namespace, labelled as the syncer labels its copies,
/// whose removal is held by a finalizer (it stands for an object that takes long to go).
async fn create_held_copy(w: &Client, name: &str) {
    let cm: ConfigMap = from_json(json!({
        "metadata": {"name": name, "namespace": MOUNT_NS, "finalizers": ["test.kubeocean.io/hold"],
                     "labels": {"kubeocean.io/managed-by": "kubeocean"}},
        "data": {"k": "v"},
    }));
    Api::<ConfigMap>::namespaced(w.clone(), MOUNT_NS)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

/// Drops the finalizers of [`create_held_copy`]'s `name`: it goes.
async fn release_held_copy(w: &Client, name: &str) {
    Api::<ConfigMap>::namespaced(w.clone(), MOUNT_NS)
        .patch(
            name,
            &PatchParams::default(),
            &Patch::Merge(&json!({"metadata": {"finalizers": null}})),
        )
        .await
        .unwrap();
}

async fn physical_pods(w: &Client) -> Vec<Pod> {
    Api::<Pod>::namespaced(w.clone(), MOUNT_NS)
        .list(&ListParams::default().labels("kubeocean.io/managed-by=kubeocean"))
        .await
        .unwrap()
        .items
}

#[tokio::test]
async fn deleting_a_binding_waits_for_the_drain_before_the_finalizer_goes() {
    let env = env(1).await;
    let c = &env.c;
    let w = &env.workers[0].client;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    let runner = start_embedded(c, &env.token);
    wait_ready(c, "b1").await;
    eventually("the virtual node", || async {
        virtual_nodes(c, "b1").await == vec!["vnode-cb1-n1".to_owned()]
    })
    .await;
    // A virtual pod on the virtual node is mapped into the worker.
    let pod: Pod = from_json(json!({
        "metadata": {"name": "web", "namespace": "default"},
        "spec": {"nodeName": "vnode-cb1-n1",
                 "tolerations": [{"key": "kubeocean.io/vnode", "operator": "Exists"}],
                 "containers": [{"name": "app", "image": "nginx"}]},
    }));
    Api::<Pod>::namespaced(c.clone(), "default")
        .create(&PostParams::default(), &pod)
        .await
        .unwrap();
    eventually("the physical pod", || async {
        physical_pods(w).await.len() == 1
    })
    .await;
    create_held_copy(w, "copy-1").await;

    // The Secret goes first (as when both are deleted with one `kubectl delete -f`); the
    // drain is still checked with the client that last reached the worker.
    Api::<Secret>::namespaced(c.clone(), NS)
        .delete("b1-kc", &DeleteParams::default())
        .await
        .unwrap();
    Api::<ClusterBinding>::all(c.clone())
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    // The syncer (still running) drains the virtual node and the physical pod; the held
    // object keeps the binding.
    eventually("the virtual node drained", || async {
        virtual_nodes(c, "b1").await.is_empty()
    })
    .await;
    eventually("the physical pod removed", || async {
        physical_pods(w).await.is_empty()
    })
    .await;
    eventually("the binding waiting for the held object", || async {
        get_binding(c, "b1").await.is_some_and(|b| {
            condition(&b, "Ready")
                .is_some_and(|(_, r, m)| r == "Deleting" && m.contains("remove 1 object"))
        })
    })
    .await;
    let b = get_binding(c, "b1").await.unwrap();
    assert!(b.finalizers().iter().any(|f| f == FINALIZER));
    assert!(
        runner.names().contains("b1"),
        "the syncer keeps running while draining"
    );

    release_held_copy(w, "copy-1").await;
    eventually("the binding gone", || async {
        get_binding(c, "b1").await.is_none()
    })
    .await;
    assert_eq!(
        kubeocean_core::syncer::topdown::remaining_physical_objects(w, MOUNT_NS)
            .await
            .unwrap(),
        0
    );
    eventually("its task group stopped", || async {
        runner.names().is_empty()
    })
    .await;
}

#[tokio::test]
async fn unreachable_worker_blocks_deletion_until_forced() {
    let env = env(1).await;
    let c = &env.c;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    let runner = start_embedded(c, &env.token);
    wait_ready(c, "b1").await;
    eventually("the virtual node", || async {
        !virtual_nodes(c, "b1").await.is_empty()
    })
    .await;
    // Every request hangs from now on, and the binding goes.
    env.workers[0]
        .cluster
        .faults()
        .add(FaultRule::all(FaultAction::Hang));
    Api::<ClusterBinding>::all(c.clone())
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deletion reported as blocked", || async {
        get_binding(c, "b1").await.is_some_and(|b| {
            condition(&b, "Ready").is_some_and(|(_, r, m)| {
                r == "Deleting"
                    && m.contains("unreachable")
                    && m.contains("kubeocean.io/force-delete")
            })
        })
    })
    .await;
    assert!(!virtual_nodes(c, "b1").await.is_empty(), "nothing drained");

    Api::<ClusterBinding>::all(c.clone())
        .patch(
            "b1",
            &PatchParams::default(),
            &Patch::Merge(
                &json!({"metadata": {"annotations": {"kubeocean.io/force-delete": "true"}}}),
            ),
        )
        .await
        .unwrap();
    eventually("the binding gone", || async {
        get_binding(c, "b1").await.is_none()
    })
    .await;
    assert!(
        virtual_nodes(c, "b1").await.is_empty(),
        "virtual nodes removed by force"
    );
    eventually("its task group stopped", || async {
        runner.names().is_empty()
    })
    .await;
    assert!(
        event_reasons(c, "b1")
            .await
            .iter()
            .any(|r| r == "ForceDeleted")
    );
}

#[tokio::test]
async fn a_hanging_worker_does_not_stall_another_binding() {
    let env = env(2).await;
    let c = &env.c;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    register(c, "b2", &env.workers[1].served.kubeconfig_yaml, json!({})).await;
    let runner = start_embedded(c, &env.token);
    wait_ready(c, "b1").await;
    wait_ready(c, "b2").await;
    eventually("both virtual nodes", || async {
        virtual_nodes(c, "b1").await.len() == 1 && virtual_nodes(c, "b2").await.len() == 1
    })
    .await;

    // Worker 1 stops answering; worker 2 gains a node, which must show up regardless.
    env.workers[0]
        .cluster
        .faults()
        .add(FaultRule::all(FaultAction::Hang));
    env.workers[1]
        .cluster
        .add_node(&SimNode::new("n2", "2", "4Gi"))
        .unwrap();
    eventually("the new virtual node of b2", || async {
        virtual_nodes(c, "b2")
            .await
            .contains(&"vnode-cb2-n2".to_owned())
    })
    .await;
    let b1 = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    assert_eq!(condition(&b1, "Connected").unwrap().0, "False");
    let b2 = get_binding(c, "b2").await.unwrap();
    assert_eq!(phase(&b2), Some(ClusterBindingPhase::Ready));
    assert_eq!(runner.names().len(), 2, "one group per binding");
    let group = runner.status("b2").unwrap();
    assert_eq!(group.restarts, 0);
}

#[tokio::test]
async fn embedded_proxier_is_what_the_virtual_nodes_point_at() {
    let env = env(1).await;
    let c = &env.c;
    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    let runtime = Arc::new(SyncerProxierRuntime::new(
        c.clone(),
        syncer_base(),
        EmbeddedProxierConfig::new([127, 0, 0, 1].into()),
    ));
    let runner = Arc::new(EmbeddedRunner::new(runtime, env.token.clone()));
    let manager = Manager::embedded(c.clone(), config("unused"), runner.clone());
    tokio::spawn(manager.run(controller_metrics(), None, env.token.clone()));

    let b = wait_ready(c, "b1").await;
    let (_, reason, message) = condition(&b, "ProxierReady").unwrap();
    assert_eq!(reason, "TaskRunning");
    eventually("the virtual node", || async {
        !virtual_nodes(c, "b1").await.is_empty()
    })
    .await;
    let node = Api::<Node>::all(c.clone())
        .get("vnode-cb1-n1")
        .await
        .unwrap();
    let status = node.status.unwrap();
    let port = status
        .daemon_endpoints
        .unwrap()
        .kubelet_endpoint
        .unwrap()
        .port;
    let address = status
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap()
        .address;
    assert_eq!(address, "127.0.0.1");
    assert!(
        message.contains(&format!(
            "127.0.0.1:{port} with a certificate signed by the cluster's CA"
        )),
        "{message}"
    );
    // Something serves there.
    tokio::net::TcpStream::connect(("127.0.0.1", u16::try_from(port).unwrap()))
        .await
        .unwrap();
}

#[tokio::test]
async fn embedded_proxiers_give_each_virtual_node_its_own_port() {
    let env = env(2).await;
    let c = &env.c;
    for (i, worker) in env.workers.iter().enumerate() {
        register(
            c,
            &format!("b{}", i + 1),
            &worker.served.kubeconfig_yaml,
            json!({}),
        )
        .await;
        // A second node per worker: two virtual nodes per binding.
        worker
            .cluster
            .add_node(&SimNode::new("n2", "4", "8Gi"))
            .unwrap();
    }
    let range = kube_sandbox::ports::free_port_run(20, std::process::id()).unwrap();
    let mut proxier = EmbeddedProxierConfig::new([127, 0, 0, 1].into());
    proxier.node_ports = Some(range.clone());
    proxier.node_ports_per_binding = 10;
    let runtime = Arc::new(SyncerProxierRuntime::new(c.clone(), syncer_base(), proxier));
    let runner = Arc::new(EmbeddedRunner::new(runtime, env.token.clone()));
    let manager = Manager::embedded(c.clone(), config("unused"), runner.clone());
    tokio::spawn(manager.run(controller_metrics(), None, env.token.clone()));

    let port_of = |node: Node| -> Option<u16> {
        let port = node.status?.daemon_endpoints?.kubelet_endpoint?.port;
        u16::try_from(port).ok()
    };
    let mut blocks = Vec::new();
    for binding in ["b1", "b2"] {
        let ports: Vec<u16> = eventually_some(
            &format!("{binding}'s nodes have ports"),
            Duration::from_secs(30),
            || async {
                let nodes = Api::<Node>::all(c.clone())
                    .list(
                        &ListParams::default()
                            .labels(&format!("kubeocean.io/cluster-binding={binding}")),
                    )
                    .await
                    .unwrap()
                    .items;
                let ports: Vec<u16> = nodes
                    .into_iter()
                    .filter_map(port_of)
                    .filter(|p| range.contains(p))
                    .collect();
                (ports.len() == 2).then_some(ports)
            },
        )
        .await;
        assert_ne!(ports[0], ports[1], "{binding}: {ports:?}");
        // Both ports of a binding lie in one block of 10, and something serves each.
        let block = (ports[0] - range.start()) / 10;
        assert_eq!(block, (ports[1] - range.start()) / 10, "{ports:?}");
        blocks.push(block);
        for port in ports {
            eventually(&format!("port {port} is served"), || async {
                tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .is_ok()
            })
            .await;
        }
    }
    assert_ne!(blocks[0], blocks[1], "each binding has a block of its own");
}

/// Gives user `syncer` of `worker` what the syncer needs, from the manager's own list
/// ([`SYNCER_GRANTS`]): a ClusterRole for the cluster-wide grants and a Role `syncer` in the
/// mount namespace for the rest — without `deletecollection` there unless `deletecollection`.
/// Returns the kubeconfig of a token for that user.
async fn syncer_identity(worker: &Worker, deletecollection: bool) -> String {
    worker
        .cluster
        .auth()
        .add_token("syncer-token", UserInfo::new("syncer", &[]));
    let rules = |scope: Scope| -> Vec<Value> {
        SYNCER_GRANTS
            .iter()
            .filter(|g| g.scope == scope)
            .map(|g| {
                let verbs: Vec<&str> = g
                    .verbs
                    .iter()
                    .copied()
                    .filter(|v| {
                        deletecollection || scope == Scope::Cluster || *v != "deletecollection"
                    })
                    .collect();
                json!({"apiGroups": [g.group], "resources": g.resources, "verbs": verbs})
            })
            .collect()
    };
    let mut cluster_rules = rules(Scope::Cluster);
    cluster_rules.push(json!({"apiGroups": ["authorization.k8s.io"],
        "resources": ["selfsubjectaccessreviews"], "verbs": ["create"]}));
    let w = &worker.client;
    Api::<ClusterRole>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "syncer"}, "rules": cluster_rules})),
        )
        .await
        .unwrap();
    Api::<ClusterRoleBinding>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": "syncer"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "syncer"},
                "subjects": [{"kind": "User", "name": "syncer"}],
            })),
        )
        .await
        .unwrap();
    Api::<Role>::namespaced(w.clone(), MOUNT_NS)
        .create(
            &PostParams::default(),
            &from_json(
                json!({"metadata": {"name": "syncer", "namespace": MOUNT_NS},
                              "rules": rules(Scope::MountNamespace)}),
            ),
        )
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(w.clone(), MOUNT_NS)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": {"name": "syncer", "namespace": MOUNT_NS},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "syncer"},
                "subjects": [{"kind": "User", "name": "syncer"}],
            })),
        )
        .await
        .unwrap();
    kube_sandbox::serve::kubeconfig_yaml("worker-1", &worker.served.url, None, "syncer-token")
}

/// Sets the verbs of the mount-namespace Role `syncer` to those of the manager's list, with
/// or without `deletecollection`.
async fn set_deletecollection(w: &Client, granted: bool) {
    let rules: Vec<Value> = SYNCER_GRANTS
        .iter()
        .filter(|g| g.scope == Scope::MountNamespace)
        .map(|g| {
            let verbs: Vec<&str> = g
                .verbs
                .iter()
                .copied()
                .filter(|v| granted || *v != "deletecollection")
                .collect();
            json!({"apiGroups": [g.group], "resources": g.resources, "verbs": verbs})
        })
        .collect();
    Api::<Role>::namespaced(w.clone(), MOUNT_NS)
        .patch(
            "syncer",
            &PatchParams::default(),
            &Patch::Merge(&json!({"rules": rules})),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn a_missing_deletecollection_is_reported_live_and_while_deleting() {
    let env = env(1).await;
    let c = &env.c;
    let w = &env.workers[0].client;
    let kubeconfig = syncer_identity(&env.workers[0], false).await;
    register(c, "b1", &kubeconfig, json!({})).await;
    let runner = start_embedded(c, &env.token);

    // A Role without deletecollection: the binding fails, naming exactly that.
    let b = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    let (status, reason, message) = condition(&b, "Connected").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "PermissionDenied")
    );
    for resource in [
        "pods",
        "configmaps",
        "secrets",
        "persistentvolumeclaims",
        "endpointslices.discovery.k8s.io",
    ] {
        let missing = format!("{resource} in namespace {MOUNT_NS}: deletecollection");
        assert!(message.contains(&missing), "{missing} in {message}");
    }
    assert!(
        !message.contains("create"),
        "only what is missing: {message}"
    );

    set_deletecollection(w, true).await;
    wait_ready(c, "b1").await;

    // Taken away again, with an object left in the mount namespace: the deletion says why
    // it cannot finish instead of waiting silently.
    set_deletecollection(w, false).await;
    let leftover: ConfigMap = from_json(json!({
        "metadata": {"name": "leftover", "namespace": MOUNT_NS,
                     "labels": {"kubeocean.io/managed-by": "kubeocean"}},
    }));
    Api::<ConfigMap>::namespaced(w.clone(), MOUNT_NS)
        .create(&PostParams::default(), &leftover)
        .await
        .unwrap();
    Api::<ClusterBinding>::all(c.clone())
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the deletion blocked on deletecollection", || async {
        get_binding(c, "b1").await.is_some_and(|b| {
            phase(&b) == Some(ClusterBindingPhase::Deleting)
                && condition(&b, "Ready").is_some_and(|(status, r, m)| {
                    status == "False"
                        && r == "PermissionDenied"
                        && m.contains("remove 1 object")
                        && m.contains(&format!(
                            "configmaps in namespace {MOUNT_NS}: deletecollection"
                        ))
                })
        })
    })
    .await;
    eventually("a PermissionDenied event", || async {
        event_reasons(c, "b1")
            .await
            .iter()
            .any(|r| r == "PermissionDenied")
    })
    .await;

    set_deletecollection(w, true).await;
    eventually("the binding gone", || async {
        get_binding(c, "b1").await.is_none()
    })
    .await;
    assert!(
        Api::<ConfigMap>::namespaced(w.clone(), MOUNT_NS)
            .get_opt("leftover")
            .await
            .unwrap()
            .is_none()
    );
    eventually("its task group stopped", || async {
        runner.names().is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_missing_priority_class_is_reported() {
    let env = env(1).await;
    let c = &env.c;
    register(
        c,
        "b1",
        &env.workers[0].served.kubeconfig_yaml,
        json!({"podPriorityClassName": "not-installed"}),
    )
    .await;
    start_embedded(c, &env.token);
    let b = wait_phase(c, "b1", ClusterBindingPhase::Failed).await;
    let (status, reason, message) = condition(&b, "Ready").unwrap();
    assert_eq!(
        (status.as_str(), reason.as_str()),
        ("False", "PriorityClassMissing")
    );
    assert!(message.contains("PriorityClass not-installed"), "{message}");
    Api::<PriorityClass>::all(env.workers[0].client.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({"metadata": {"name": "not-installed"}, "value": 0})),
        )
        .await
        .unwrap();
    wait_ready(c, "b1").await;
}

/// A syncer-only runtime that counts the runs of each binding's group.
struct Counting {
    inner: SyncerRuntime,
    starts: std::sync::Mutex<BTreeMap<String, u32>>,
}

impl Counting {
    fn starts(&self, binding: &str) -> u32 {
        self.starts
            .lock()
            .unwrap()
            .get(binding)
            .copied()
            .unwrap_or(0)
    }
}

#[async_trait::async_trait]
impl BindingRuntime for Counting {
    async fn run(
        &self,
        binding: ClusterBinding,
        reporter: RuntimeReporter,
        token: CancellationToken,
    ) -> Result<(), String> {
        *self
            .starts
            .lock()
            .unwrap()
            .entry(binding.name_any())
            .or_insert(0) += 1;
        self.inner.run(binding, reporter, token).await
    }

    fn forget(&self, binding: &str) {
        self.inner.forget(binding);
    }
}

#[tokio::test]
async fn a_deleted_binding_is_deleting_then_stays_stopped_without_metric_series() {
    let env = env(2).await;
    let c = &env.c;
    let registry = Metrics::new();
    let mut base = syncer_base();
    base.metrics = Some(SyncerMetrics::register(&registry));
    let runtime = Arc::new(Counting {
        inner: SyncerRuntime::new(c.clone(), base),
        starts: std::sync::Mutex::new(BTreeMap::new()),
    });
    let runner = Arc::new(
        EmbeddedRunner::new(runtime.clone(), env.token.clone())
            .with_stop_grace(Duration::from_millis(500)),
    );
    let manager = Manager::embedded(c.clone(), config("unused"), runner.clone());
    let ctx = manager.context().clone();
    tokio::spawn(manager.run(controller_metrics(), None, env.token.clone()));

    register(c, "b1", &env.workers[0].served.kubeconfig_yaml, json!({})).await;
    wait_ready(c, "b1").await;
    eventually("the series of b1", || async {
        let text = registry.encode().unwrap();
        text.contains("kubeocean_virtual_nodes{binding=\"b1\"} 1")
            && text.contains("kubeocean_worker_reachable{binding=\"b1\"} 1")
    })
    .await;
    assert_eq!(runtime.starts("b1"), 1);

    // An object held in the worker keeps the binding in phase Deleting.
    create_held_copy(&env.workers[0].client, "held").await;
    Api::<ClusterBinding>::all(c.clone())
        .delete("b1", &DeleteParams::default())
        .await
        .unwrap();
    eventually("phase Deleting", || async {
        get_binding(c, "b1").await.is_some_and(|b| {
            phase(&b) == Some(ClusterBindingPhase::Deleting)
                && condition(&b, "Ready").is_some_and(|(s, r, _)| s == "False" && r == "Deleting")
        })
    })
    .await;
    // What a cache that has not seen the finalizer go yet still holds.
    let stale = get_binding(c, "b1").await.unwrap();
    assert!(stale.finalizers().iter().any(|f| f == FINALIZER));
    release_held_copy(&env.workers[0].client, "held").await;
    eventually("the binding gone", || async {
        get_binding(c, "b1").await.is_none()
    })
    .await;
    eventually("its group stopped", || async { runner.names().is_empty() }).await;
    // A reconcile of that stale copy (as the runner's own change notification triggers
    // right after the group stopped) finds nothing left and does not start the group.
    reconcile(Arc::new(stale), ctx.clone()).await.unwrap();
    assert!(runner.names().is_empty());

    // Another binding goes through many reconciles of everything the manager caches; b1's
    // group is not started again meanwhile.
    register(c, "b2", &env.workers[1].served.kubeconfig_yaml, json!({})).await;
    wait_ready(c, "b2").await;
    eventually("the series of b2", || async {
        registry
            .encode()
            .unwrap()
            .contains("kubeocean_virtual_nodes{binding=\"b2\"} 1")
    })
    .await;
    assert_eq!(runtime.starts("b1"), 1, "b1's syncer never restarted");
    assert_eq!(
        runner.names(),
        std::collections::BTreeSet::from(["b2".to_owned()])
    );
    let text = registry.encode().unwrap();
    for series in [
        "kubeocean_virtual_nodes{binding=\"b1\"}",
        "kubeocean_worker_reachable{binding=\"b1\"}",
    ] {
        assert!(!text.contains(series), "{series} in\n{text}");
    }
}
