//! Switching from upstream Kubeocean: objects exactly as upstream's manager and syncer leave
//! them (their finalizers, labels, annotations, a virtual node, a mapped pod and its copied
//! ConfigMap) are taken over by our manager and syncer without duplicates or orphans, and
//! every deletion upstream's finalizers would hold goes through. Also: a second binding with
//! a clusterID already taken is refused. The steps follow docs/kubeocean/migrate-from-upstream.md.

#![allow(clippy::unwrap_used)]

mod common;

use common::{ServedPair, eventually, from_json};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Taint;
use k8s_openapi::api::core::v1::{ConfigMap, Node, Pod, Secret};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::scheduling::v1::PriorityClass;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_kit::admin::Metrics;
use kube_kit::controller::{Backoff, ControllerMetrics};
use kube_sandbox::SimNode;
use kube_sandbox::testing::create_namespace;
use kubeocean_core::crd::{ClusterBinding, ClusterBindingPhase, ResourceLeasingPolicy};
use kubeocean_core::manager::{
    EmbeddedRunner, FINALIZER, Manager, ManagerConfig, ManagerMetrics, SyncerRuntime, Templates,
};
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::SyncerConfig;
use serde::Deserialize;
use serde_json::json;
use tokio_util::sync::CancellationToken;

/// Upstream's `ExpectedNodeMetadata` (`physical_node_controller.go`) and
/// `ExpectedPodMetadata` (`virtual_pod_controller.go`): the fields its decoder reads, unknown
/// ones ignored as Go's `encoding/json` does.
#[derive(Debug, Default, Deserialize)]
struct UpstreamExpected {
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
    #[serde(default)]
    taints: Vec<Taint>,
}

/// Upstream's decoder (`getExpectedMetadataFromAnnotation`,
/// `getExpectedPodMetadataFromAnnotation`): `base64.StdEncoding.DecodeString`, then
/// `json.Unmarshal`; an error where upstream's would fail.
fn upstream_decode(annotation: &str) -> Result<UpstreamExpected, String> {
    let json = STANDARD
        .decode(annotation)
        .map_err(|e| format!("failed to base64 decode expected metadata: {e}"))?;
    serde_json::from_slice(&json).map_err(|e| format!("failed to unmarshal expected metadata: {e}"))
}

const NS: &str = "kubeocean-system";
const MOUNT: &str = "kubeocean-worker";
const BINDING: &str = "b1";
const CLUSTER_ID: &str = "c1";
const VNODE: &str = "vnode-c1-n1";

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
    Api::<Secret>::namespaced(c.clone(), NS)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
}

/// Our manager in embedded mode (syncers in-process), as `helm install` with
/// `manager.embedded=true` runs it; returns its metrics registry.
fn start_manager(c: &Client, token: &CancellationToken) -> Metrics {
    let mut base = SyncerConfig::new("unused");
    base.secret_namespace = NS.into();
    base.client_options = base.client_options.with_rate_limit(0.0, 0);
    base.lease_renew_interval = Duration::from_millis(200);
    base.connect_retry_interval = Duration::from_millis(200);
    base.retry_interval = Duration::from_millis(100);
    base.max_retry_interval = Duration::from_secs(1);
    base.probe_timeout = Duration::from_millis(500);
    let runtime = Arc::new(SyncerRuntime::new(c.clone(), base));
    let runner = Arc::new(
        EmbeddedRunner::new(runtime, token.clone())
            .with_backoff(Backoff {
                base: Duration::from_millis(100),
                max: Duration::from_secs(1),
            })
            .with_stop_grace(Duration::from_millis(500)),
    );
    let mut config = ManagerConfig::new(Templates::new(NS, "unused", "unused"));
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.probe_timeout = Duration::from_millis(500);
    config.worker_timeout = Duration::from_secs(1);
    config.retry_interval = Duration::from_millis(200);
    config.resync_interval = Duration::from_secs(2);
    config.drain_interval = Duration::from_millis(200);
    let registry = Metrics::new();
    config.metrics = Some(ManagerMetrics::register(&registry));
    let manager = Manager::embedded(c.clone(), config, runner);
    let metrics = ControllerMetrics::register(&registry);
    tokio::spawn(manager.run(metrics, None, token.clone()));
    registry
}

async fn binding(c: &Client, name: &str) -> Option<ClusterBinding> {
    Api::<ClusterBinding>::all(c.clone())
        .get_opt(name)
        .await
        .unwrap()
}

fn ready_condition(b: &ClusterBinding) -> Option<(String, String, String)> {
    b.status
        .as_ref()?
        .conditions
        .iter()
        .find(|c| c.type_ == "Ready")
        .map(|c| (c.status.clone(), c.reason.clone(), c.message.clone()))
}

fn binding_json(name: &str, cluster_id: &str, finalizers: &[&str]) -> ClusterBinding {
    from_json(json!({
        "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
        "metadata": { "name": name, "finalizers": finalizers },
        "spec": { "clusterID": cluster_id, "mountNamespace": MOUNT,
                  "secretRef": { "name": format!("{name}-kc"), "namespace": NS } },
    }))
}

/// The worker and computing objects upstream Kubeocean leaves for binding `b1` (clusterID
/// `c1`) with one lent node `n1`, one mapped pod `default/web` and the ConfigMap it mounts.
/// Returns the UIDs of the virtual node, of the physical pod and of the physical node.
async fn upstream_leftovers(pair: &ServedPair) -> (String, String, String) {
    let (c, w) = (&pair.c, &pair.w);
    // Worker: the mount namespace, the PriorityClass, a lent node, upstream's policies.
    create_namespace(w, MOUNT).await;
    Api::<PriorityClass>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "kubeocean-default" }, "value": -10000 })),
        )
        .await
        .unwrap();
    pair.worker
        .add_node(&SimNode::new("n1", "8", "16Gi").label("kubeocean.io/policy-applied", "lend"))
        .unwrap();
    let policies: Api<ResourceLeasingPolicy> = Api::all(w.clone());
    for (name, selector) in [
        ("lend", json!(null)),
        // A newer policy of the same binding selecting nothing: deleted after the switch.
        (
            "old",
            json!({ "nodeSelectorTerms": [{ "matchExpressions": [
                { "key": "pool", "operator": "In", "values": ["none"] }] }] }),
        ),
    ] {
        let mut spec = json!({ "cluster": BINDING });
        if !selector.is_null() {
            spec["nodeSelector"] = selector;
        }
        policies
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ResourceLeasingPolicy",
                    "metadata": { "name": name, "finalizers": ["policy.kubeocean.io/finalizer"] },
                    "spec": spec,
                })),
            )
            .await
            .unwrap();
    }
    let n1_uid = Api::<Node>::all(w.clone())
        .get("n1")
        .await
        .unwrap()
        .uid()
        .unwrap();

    // Computing: the binding held by upstream's two finalizers, its Secret.
    create_namespace(c, NS).await;
    put_secret(c, "b1-kc", &pair.served_worker.kubeconfig_yaml).await;
    Api::<ClusterBinding>::all(c.clone())
        .create(
            &PostParams::default(),
            &binding_json(
                BINDING,
                CLUSTER_ID,
                &[
                    "kubeocean.io/clusterbinding-manager",
                    "kubeocean.io/clusterbinding-syncer",
                ],
            ),
        )
        .await
        .unwrap();

    // The virtual node as upstream's syncer writes it (`physical_node_controller.go`
    // `createOrUpdateVirtualNode`): the physical node's labels (its policy-applied label and a
    // `pool` label it has lost since included) with upstream's own over them
    // (`buildVirtualNodeLabels`: identity, innerip, proxier_port from upstream's range), its
    // annotations (`buildVirtualNodeAnnotations`), and what it wrote recorded as base64 of
    // JSON (`saveExpectedMetadataToAnnotation`). Then a user's label and annotation.
    let n1_ip = Api::<Node>::all(w.clone())
        .get("n1")
        .await
        .unwrap()
        .status
        .unwrap()
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap()
        .address;
    let upstream_labels = json!({
        "kubernetes.io/hostname": VNODE, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
        "kubeocean.io/policy-applied": "lend", "pool": "retired",
        "kubeocean.io/cluster-binding": BINDING, "kubeocean.io/physical-cluster-id": CLUSTER_ID,
        "kubeocean.io/physical-node-name": "n1", "kubeocean.io/physical-node-uid": n1_uid,
        "kubeocean.io/managed-by": "kubeocean", "type": "virtual-kubelet",
        "node.kubernetes.io/instance-type": "vnode", "beta.kubernetes.io/instance-type": "vnode",
        "kubeocean.io/physical-node-innerip": n1_ip,
        "kubeocean.io/proxier_port": "10300",
    });
    let upstream_annotations = json!({
        "kubeocean.io/last-sync-time": "2025-06-01T00:00:00Z",
        "kubeocean.io/physical-node-name": "n1", "kubeocean.io/physical-node-uid": n1_uid,
        "kubeocean.io/policies-applied": "lend", "kubeocean.io/policy-details": "lend",
        "kubeocean.io/prometheus-url": format!("10.0.0.9:9006/{VNODE}"),
    });
    let expected = json!({
        "labels": upstream_labels, "annotations": upstream_annotations,
        "taints": [{ "key": "kubeocean.io/vnode", "effect": "NoSchedule" }],
    });
    let mut annotations = upstream_annotations.clone();
    annotations["kubeocean.io/expected-metadata"] =
        json!(STANDARD.encode(serde_json::to_vec(&expected).unwrap()));
    annotations["note"] = json!("mine");
    let mut node_labels = upstream_labels.clone();
    node_labels["team"] = json!("blue");
    let nodes: Api<Node> = Api::all(c.clone());
    let vnode = nodes
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": VNODE, "labels": node_labels, "annotations": annotations,
                              "finalizers": ["kubeocean.io/vnode"] },
                "spec": { "taints": [{ "key": "kubeocean.io/vnode", "effect": "NoSchedule" }] },
            })),
        )
        .await
        .unwrap();
    let mut with_status = vnode.clone();
    with_status.status = Some(from_json(json!({
        "capacity": { "cpu": "8", "memory": "16Gi", "pods": "110" },
        "allocatable": { "cpu": "8", "memory": "16Gi", "pods": "110" },
        "conditions": [{ "type": "Ready", "status": "True", "reason": "KubeletReady" }],
        "addresses": [{ "type": "InternalIP", "address": "10.0.0.9" },
                      { "type": "Hostname", "address": VNODE }],
        "daemonEndpoints": { "kubeletEndpoint": { "Port": 10300 } },
    })));
    nodes
        .replace_status(VNODE, &PostParams::default(), &with_status)
        .await
        .unwrap();

    // The ConfigMaps upstream copied: the virtual ones held by kubeocean.io/finalizer-c1,
    // labelled and annotated by `common.go` `UpdateVirtualResourceLabelsAndAnnotations` (and
    // a user's keys); the physical copy of the one the pod mounts.
    let vconfigs: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    for name in ["app-config", "unused-config"] {
        vconfigs
            .create(
                &PostParams::default(),
                &from_json(json!({
                    "metadata": { "name": name, "namespace": "default",
                        "finalizers": ["kubeocean.io/finalizer-c1"],
                        "labels": { "kubeocean.io/synced-by-c1": "true", "kubeocean.io/managed-by": "kubeocean",
                                    "team": "blue" },
                        "annotations": { "kubeocean.io/physical-name": physical_name("default", name),
                                         "kubeocean.io/physical-namespace": MOUNT, "note": "mine" } },
                    "data": { "key": "value" },
                })),
            )
            .await
            .unwrap();
    }
    let physical_config = physical_name("default", "app-config");
    Api::<ConfigMap>::namespaced(w.clone(), MOUNT)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": physical_config, "namespace": MOUNT,
                    "labels": { "kubeocean.io/managed-by": "kubeocean" },
                    "annotations": { "kubeocean.io/virtual-name": "app-config",
                                     "kubeocean.io/virtual-namespace": "default" } },
                "data": { "key": "value" },
            })),
        )
        .await
        .unwrap();

    // The mapped pod: the virtual pod on the virtual node, and its physical pod on n1.
    let vpods: Api<Pod> = Api::namespaced(c.clone(), "default");
    let vpod = vpods
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "web", "namespace": "default", "labels": { "app": "web" } },
                "spec": { "nodeName": VNODE, "automountServiceAccountToken": false,
                    "tolerations": [{ "key": "kubeocean.io/vnode", "operator": "Exists" }],
                    "containers": [{ "name": "app", "image": "nginx:1",
                        "volumeMounts": [{ "name": "config", "mountPath": "/etc/app" }] }],
                    "volumes": [{ "name": "config", "configMap": { "name": "app-config" } }] },
            })),
        )
        .await
        .unwrap();
    // The physical pod as upstream's `virtual_pod_controller.go` builds it:
    // `buildPhysicalPodLabels` (a pod without owner is workload type `pod`, no name) and
    // `buildPhysicalPodAnnotations` (its record: the virtual pod's own labels and annotations,
    // base64 of JSON, `outputExpectedPodMetadataToAnnotation`).
    let physical_pod_name = physical_name("default", "web");
    let pod_record =
        STANDARD.encode(serde_json::to_vec(&json!({ "labels": { "app": "web" } })).unwrap());
    let ppod = Api::<Pod>::namespaced(w.clone(), MOUNT)
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": physical_pod_name, "namespace": MOUNT,
                    "labels": { "app": "web", "kubeocean.io/managed-by": "kubeocean",
                        "kubeocean.io/virtual-namespace": "default",
                        "kubeocean.io/workload-type": "pod" },
                    "annotations": { "kubeocean.io/virtual-pod-namespace": "default",
                        "kubeocean.io/virtual-pod-name": "web",
                        "kubeocean.io/virtual-pod-uid": vpod.uid().unwrap(),
                        "kubeocean.io/virtual-node-name": VNODE,
                        "kubeocean.io/expected-metadata": pod_record } },
                "spec": { "nodeName": "n1", "priorityClassName": "kubeocean-default",
                    "automountServiceAccountToken": false,
                    "containers": [{ "name": "app", "image": "nginx:1",
                        "volumeMounts": [{ "name": "config", "mountPath": "/etc/app" }] }],
                    "volumes": [{ "name": "config", "configMap": { "name": physical_config } }] },
            })),
        )
        .await
        .unwrap();
    let mut annotated = vpod.clone();
    annotated.annotations_mut().extend([
        (
            "kubeocean.io/physical-pod-namespace".to_owned(),
            MOUNT.to_owned(),
        ),
        (
            "kubeocean.io/physical-pod-name".to_owned(),
            physical_pod_name,
        ),
        (
            "kubeocean.io/physical-pod-uid".to_owned(),
            ppod.uid().unwrap(),
        ),
    ]);
    vpods
        .replace("web", &PostParams::default(), &annotated)
        .await
        .unwrap();
    (vnode.uid().unwrap(), ppod.uid().unwrap(), n1_uid)
}

async fn managed(w: &Client) -> (Vec<Pod>, Vec<ConfigMap>) {
    let selected = ListParams::default().labels("kubeocean.io/managed-by=kubeocean");
    let pods = Api::<Pod>::namespaced(w.clone(), MOUNT)
        .list(&selected)
        .await
        .unwrap()
        .items;
    let configs = Api::<ConfigMap>::namespaced(w.clone(), MOUNT)
        .list(&selected)
        .await
        .unwrap()
        .items;
    (pods, configs)
}

#[tokio::test]
async fn objects_left_by_upstream_converge_without_duplicates_and_every_deletion_goes_through() {
    let pair = common::served_pair("upgrade-test").await;
    let (vnode_uid, ppod_uid, n1_uid) = upstream_leftovers(&pair).await;
    let (c, w) = (pair.c.clone(), pair.w.clone());
    start_manager(&c, pair.sandboxes.token());

    eventually("the binding Ready, held by our finalizer only", || async {
        binding(&c, BINDING).await.is_some_and(|b| {
            b.status.as_ref().and_then(|s| s.phase) == Some(ClusterBindingPhase::Ready)
                && b.finalizers() == [FINALIZER.to_owned()]
        })
    })
    .await;
    let nodes: Api<Node> = Api::all(c.clone());
    eventually("the virtual node taken over", || async {
        let n = nodes.get(VNODE).await.unwrap();
        !n.labels().contains_key("kubeocean.io/proxier_port")
            && !n.annotations().contains_key("kubeocean.io/last-sync-time")
    })
    .await;
    let vnode = nodes.get(VNODE).await.unwrap();
    let (labels, annotations) = (vnode.labels(), vnode.annotations());
    // What upstream recorded and we do not write is gone: its port (ours has none with one
    // shared proxier port), the copied policy-applied label, the label the physical node
    // lost, and its bookkeeping annotations.
    for gone in [
        "kubeocean.io/proxier_port",
        "kubeocean.io/policy-applied",
        "pool",
    ] {
        assert!(!labels.contains_key(gone), "label {gone}: {labels:?}");
    }
    for gone in [
        "kubeocean.io/last-sync-time",
        "kubeocean.io/policy-details",
        "kubeocean.io/physical-node-name",
        "kubeocean.io/physical-node-uid",
    ] {
        assert!(
            !annotations.contains_key(gone),
            "annotation {gone}: {annotations:?}"
        );
    }
    // Upstream's keys we write, with our values; the users' keys stay.
    let n1_ip = Api::<Node>::all(w.clone())
        .get("n1")
        .await
        .unwrap()
        .status
        .unwrap()
        .addresses
        .unwrap()
        .into_iter()
        .find(|a| a.type_ == "InternalIP")
        .unwrap()
        .address;
    assert_eq!(labels["kubeocean.io/physical-node-innerip"], n1_ip);
    assert_eq!(labels["kubeocean.io/physical-node-uid"], n1_uid);
    assert_eq!(labels["team"], "blue");
    assert_eq!(annotations["note"], "mine");
    assert_eq!(annotations["kubeocean.io/policies-applied"], "lend");
    // Ours: the proxier address this syncer advertises (none configured here: pending).
    assert_eq!(
        annotations["kubeocean.io/prometheus-url"],
        format!("<pending>:9006/{VNODE}")
    );
    // What we recorded decodes with upstream's decoder into upstream's fields: our keys, not
    // the users' (so after a roll-back upstream keeps theirs and takes over ours).
    let record = upstream_decode(&annotations["kubeocean.io/expected-metadata"]).unwrap();
    assert_eq!(record.labels["kubeocean.io/cluster-binding"], BINDING);
    assert!(!record.labels.contains_key("team"));
    assert_eq!(record.annotations["kubeocean.io/policies-applied"], "lend");
    assert!(!record.annotations.contains_key("note"));
    assert!(record.taints.iter().any(|t| t.key == "kubeocean.io/vnode"));
    assert_eq!(
        vnode.uid().unwrap(),
        vnode_uid,
        "the virtual node was not recreated"
    );
    let ours: Vec<String> = nodes
        .list(&ListParams::default().labels("kubeocean.io/cluster-binding=b1"))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect();
    assert_eq!(ours, [VNODE]);

    let vpods: Api<Pod> = Api::namespaced(c.clone(), "default");
    eventually(
        "the virtual pod Running from its adopted physical pod",
        || async {
            let p = vpods.get("web").await.unwrap();
            p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running")
        },
    )
    .await;
    let vpod = vpods.get("web").await.unwrap();
    assert_eq!(
        vpod.annotations().get("kubeocean.io/physical-pod-uid"),
        Some(&ppod_uid)
    );
    let vconfigs: Api<ConfigMap> = Api::namespaced(c.clone(), "default");
    eventually(
        "upstream's finalizer released from the virtual ConfigMaps",
        || async {
            let mut released = true;
            for name in ["app-config", "unused-config"] {
                released &= vconfigs.get(name).await.unwrap().finalizers().is_empty();
            }
            released
        },
    )
    .await;
    for name in ["app-config", "unused-config"] {
        let config = vconfigs.get(name).await.unwrap();
        // As upstream's `RemoveSyncedResourceFinalizerAndLabels` leaves them.
        for gone in ["kubeocean.io/synced-by-c1", "kubeocean.io/managed-by"] {
            assert!(!config.labels().contains_key(gone), "{name}: {gone}");
        }
        for gone in [
            "kubeocean.io/physical-name",
            "kubeocean.io/physical-namespace",
        ] {
            assert!(!config.annotations().contains_key(gone), "{name}: {gone}");
        }
        assert_eq!(config.labels()["team"], "blue");
        assert_eq!(config.annotations()["note"], "mine");
    }
    let (pods, configs) = managed(&w).await;
    assert_eq!(
        pods.iter().map(|p| p.uid().unwrap()).collect::<Vec<_>>(),
        vec![ppod_uid],
        "one physical pod, the one upstream made"
    );
    // The adopted physical pod keeps upstream's labels; our record decodes with upstream's
    // pod decoder and holds only the virtual pod's own keys, as upstream's does.
    let physical_pod = &pods[0];
    assert_eq!(physical_pod.labels()["kubeocean.io/workload-type"], "pod");
    assert_eq!(
        physical_pod.labels()["kubeocean.io/virtual-namespace"],
        "default"
    );
    let record =
        upstream_decode(&physical_pod.annotations()["kubeocean.io/expected-metadata"]).unwrap();
    assert_eq!(
        record.labels,
        BTreeMap::from([("app".to_owned(), "web".to_owned())])
    );
    assert!(
        !record
            .annotations
            .contains_key("kubeocean.io/virtual-pod-uid")
    );
    assert_eq!(
        configs
            .iter()
            .map(ResourceExt::name_any)
            .collect::<Vec<_>>(),
        [physical_name("default", "app-config")],
        "one physical ConfigMap"
    );

    // Deletions upstream's finalizers would hold now go through.
    vconfigs
        .delete("unused-config", &Default::default())
        .await
        .unwrap();
    let policies: Api<ResourceLeasingPolicy> = Api::all(w.clone());
    policies.delete("old", &Default::default()).await.unwrap();
    eventually("the deleted ConfigMap and policy gone", || async {
        vconfigs.get_opt("unused-config").await.unwrap().is_none()
            && policies.get_opt("old").await.unwrap().is_none()
    })
    .await;
    eventually(
        "upstream's finalizer released from the live policy",
        || async { policies.get("lend").await.unwrap().finalizers().is_empty() },
    )
    .await;

    // The binding itself: drained, then released.
    Api::<ClusterBinding>::all(c.clone())
        .delete(BINDING, &Default::default())
        .await
        .unwrap();
    eventually("the binding drained and gone", || async {
        binding(&c, BINDING).await.is_none()
    })
    .await;
    assert!(nodes.get_opt(VNODE).await.unwrap().is_none());
    let (pods, configs) = managed(&w).await;
    assert!(
        pods.is_empty() && configs.is_empty(),
        "no orphan in the worker"
    );
    assert!(vpods.get_opt("web").await.unwrap().is_none());
    // The leasing policy upstream held is deleted without hanging, its binding gone.
    policies.delete("lend", &Default::default()).await.unwrap();
    eventually("policy lend gone", || async {
        policies.get_opt("lend").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn a_second_binding_with_a_taken_cluster_id_is_refused() {
    let pair = common::served_pair("duplicate-test").await;
    let (c, w) = (pair.c.clone(), pair.w.clone());
    create_namespace(&w, MOUNT).await;
    Api::<PriorityClass>::all(w.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "kubeocean-default" }, "value": 0 })),
        )
        .await
        .unwrap();
    create_namespace(&c, NS).await;
    let bindings: Api<ClusterBinding> = Api::all(c.clone());
    for name in ["first", "second"] {
        put_secret(
            &c,
            &format!("{name}-kc"),
            &pair.served_worker.kubeconfig_yaml,
        )
        .await;
        bindings
            .create(&PostParams::default(), &binding_json(name, "shared", &[]))
            .await
            .unwrap();
        // creationTimestamp has a one-second resolution: make "second" strictly newer.
        tokio::time::sleep(Duration::from_millis(1100)).await;
    }
    let metrics = start_manager(&c, pair.sandboxes.token());
    eventually("first Ready", || async {
        binding(&c, "first")
            .await
            .and_then(|b| b.status.and_then(|s| s.phase))
            == Some(ClusterBindingPhase::Ready)
    })
    .await;
    eventually("second refused with DuplicateClusterID", || async {
        binding(&c, "second").await.is_some_and(|b| {
            b.status.as_ref().and_then(|s| s.phase) == Some(ClusterBindingPhase::Failed)
                && ready_condition(&b).is_some_and(|(status, reason, _)| {
                    status == "False" && reason == "DuplicateClusterID"
                })
        })
    })
    .await;
    let second = binding(&c, "second").await.unwrap();
    let (_, _, message) = ready_condition(&second).unwrap();
    assert!(message.contains("ClusterBinding first"), "{message}");
    eventually("a Warning Event on the second binding", || async {
        Api::<Event>::all(c.clone())
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .iter()
            .any(|e| {
                e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("second")
                    && e.reason.as_deref() == Some("DuplicateClusterID")
                    && e.type_.as_deref() == Some("Warning")
            })
    })
    .await;
    // Upstream's gauge counts them by status, from the stored bindings.
    eventually("kubeocean_clusterbindings_total by status", || async {
        let text = metrics.encode().unwrap();
        text.contains("kubeocean_clusterbindings_total{status=\"Ready\"} 1")
            && text.contains("kubeocean_clusterbindings_total{status=\"Failed\"} 1")
    })
    .await;
    // The older binding keeps its clusterID; no SyncerReady was ever reported for the newer.
    assert!(
        second
            .status
            .as_ref()
            .unwrap()
            .conditions
            .iter()
            .all(|c| c.type_ != "SyncerReady")
    );
    // Deleting the refused binding does not wait for the other binding's worker objects.
    bindings
        .delete("second", &Default::default())
        .await
        .unwrap();
    eventually("second gone", || async {
        binding(&c, "second").await.is_none()
    })
    .await;
    assert_eq!(
        binding(&c, "first")
            .await
            .and_then(|b| b.status.and_then(|s| s.phase)),
        Some(ClusterBindingPhase::Ready)
    );
}
