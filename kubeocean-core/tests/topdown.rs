//! The top-down syncer end to end, against two sandbox clusters served over loopback HTTP:
//! virtual pods (with ConfigMaps, Secrets, claims and service-account tokens) become
//! physical pods in the worker's mount namespace, their status flows back, and deletion,
//! edits, missing dependencies, unbound claims, name collisions and lost pods behave.

#![allow(clippy::unwrap_used)]

mod common;

use common::{ServedPair, eventually, from_json};

use std::time::Duration;

use k8s_openapi::api::authentication::v1::TokenReview;
use k8s_openapi::api::core::v1::{
    ConfigMap, Namespace, PersistentVolume, PersistentVolumeClaim, Pod, Secret, ServiceAccount,
};
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client, ResourceExt};
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::{Cluster, Served, SimNode};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::topdown::{
    self, TOKEN_REFRESH_AT, VIRTUAL_NAME, VIRTUAL_NAMESPACE, token_secret_name,
};
use kubeocean_core::syncer::{Syncer, SyncerConfig, SyncerMetrics};
use serde_json::{Value, json};

const BINDING: &str = "worker-1";
const CLUSTER_ID: &str = "w1";
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "default";

struct Env {
    /// Shuts the clusters down (and stops the syncer) first on drop.
    _sandboxes: Sandboxes,
    worker: Cluster,
    _served: Vec<Served>,
    /// Computing cluster client (over HTTP).
    c: Client,
    /// Worker cluster client (over HTTP).
    w: Client,
    metrics: kube_kit::admin::Metrics,
}

/// Two clusters, a binding, two lent nodes (n1, n2) with their virtual nodes, the
/// priority class physical pods use, and a running syncer.
async fn env() -> Env {
    let pair = common::served_pair("topdown-test").await;
    for node in ["n1", "n2"] {
        pair.worker
            .add_node(&SimNode::new(node, "64", "256Gi"))
            .unwrap();
    }
    pair.bind_worker(BINDING, CLUSTER_ID, MOUNT).await;
    let ServedPair {
        sandboxes,
        computing: _,
        worker,
        served_computing,
        served_worker,
        c,
        w,
    } = pair;
    Api::<ServiceAccount>::namespaced(c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "default" } })),
        )
        .await
        .unwrap();

    let metrics = kube_kit::admin::Metrics::new();
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = "kubeocean-system".into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.lease_renew_interval = Duration::from_millis(500);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_secs(1);
    config.request_timeout = Duration::from_secs(5);
    config.probe_timeout = Duration::from_secs(1);
    config.workers = 4;
    config.metrics = Some(SyncerMetrics::register(&metrics));
    tokio::spawn(Syncer::new(c.clone(), config).run(sandboxes.token().clone()));

    let env = Env {
        _sandboxes: sandboxes,
        worker,
        _served: vec![served_computing, served_worker],
        c,
        w,
        metrics,
    };
    for vnode in ["vnode-w1-n1", "vnode-w1-n2"] {
        eventually("the virtual nodes", || async {
            Api::<k8s_openapi::api::core::v1::Node>::all(env.c.clone())
                .get_opt(vnode)
                .await
                .unwrap()
                .is_some()
        })
        .await;
    }
    env
}

fn vpods(env: &Env) -> Api<Pod> {
    Api::namespaced(env.c.clone(), NS)
}

fn ppods(env: &Env) -> Api<Pod> {
    Api::namespaced(env.w.clone(), MOUNT)
}

/// A virtual pod on `vnode` with the given volumes and env.
fn pod(name: &str, vnode: &str, volumes: Value, env_vars: Value) -> Pod {
    from_json(json!({
        "metadata": { "name": name, "namespace": NS, "labels": { "app": "web" } },
        "spec": {
            "nodeName": vnode,
            "containers": [{ "name": "app", "image": "nginx:1", "env": env_vars,
                "volumeMounts": volumes.as_array().unwrap().iter()
                    .map(|v| json!({ "name": v["name"], "mountPath": format!("/mnt/{}", v["name"].as_str().unwrap()) }))
                    .collect::<Vec<_>>() }],
            "volumes": volumes,
        },
    }))
}

async fn create_pod(env: &Env, pod: &Pod) -> Pod {
    vpods(env)
        .create(&PostParams::default(), pod)
        .await
        .unwrap()
}

async fn physical_of(env: &Env, name: &str) -> Option<Pod> {
    ppods(env).get_opt(&physical_name(NS, name)).await.unwrap()
}

/// Deletes the physical pod of virtual pod `name` at once, as someone else would.
async fn delete_physical_of(env: &Env, name: &str) {
    let params = DeleteParams {
        grace_period_seconds: Some(0),
        ..DeleteParams::default()
    };
    ppods(env)
        .delete(&physical_name(NS, name), &params)
        .await
        .unwrap();
}

/// Waits for virtual pod `name` to be Failed with reason `PhysicalPodLost`.
async fn wait_lost(env: &Env, name: &str) {
    eventually(&format!("{name} Failed with PhysicalPodLost"), || async {
        let v = vpods(env).get(name).await.unwrap();
        let status = v.status.unwrap_or_default();
        status.phase.as_deref() == Some("Failed")
            && status.reason.as_deref() == Some("PhysicalPodLost")
    })
    .await;
}

/// Reasons of the events.k8s.io Events on virtual pod `name` (any namespace object kind).
async fn event_reasons(env: &Env, kind: &str, name: &str) -> Vec<(String, String)> {
    Api::<Event>::namespaced(env.c.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.regarding
                .as_ref()
                .is_some_and(|r| r.name.as_deref() == Some(name) && r.kind.as_deref() == Some(kind))
        })
        .map(|e| (e.reason.unwrap_or_default(), e.note.unwrap_or_default()))
        .collect()
}

async fn wait_event(env: &Env, kind: &str, name: &str, reason: &str) -> String {
    let note = std::cell::RefCell::new(String::new());
    eventually(&format!("{reason} Event on {kind} {name}"), || async {
        match event_reasons(env, kind, name)
            .await
            .into_iter()
            .find(|(r, _)| r == reason)
        {
            Some((_, n)) => {
                *note.borrow_mut() = n;
                true
            }
            None => false,
        }
    })
    .await;
    note.into_inner()
}

async fn create_config(env: &Env) {
    Api::<ConfigMap>::namespaced(env.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "app-config" }, "data": { "mode": "blue" } })),
        )
        .await
        .unwrap();
    Api::<Secret>::namespaced(env.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "app-secret" }, "stringData": { "password": "s3cret" } })),
        )
        .await
        .unwrap();
}

/// A PersistentVolume and a claim Bound to each other in the computing cluster.
async fn create_bound_claim(env: &Env, claim: &str, volume: &str) {
    let pv: PersistentVolume = from_json(json!({
        "metadata": { "name": volume },
        "spec": { "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
            "hostPath": { "path": "/data" }, "storageClassName": "standard",
            "claimRef": { "namespace": NS, "name": claim } },
    }));
    let pvs: Api<PersistentVolume> = Api::all(env.c.clone());
    pvs.create(&PostParams::default(), &pv).await.unwrap();
    pvs.patch_status(
        volume,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "phase": "Bound" } })),
    )
    .await
    .unwrap();
    bind_claim(env, claim, volume, true).await;
}

/// Creates claim `claim` (or binds it when it exists) to `volume`.
async fn bind_claim(env: &Env, claim: &str, volume: &str, create: bool) {
    let pvcs: Api<PersistentVolumeClaim> = Api::namespaced(env.c.clone(), NS);
    if create {
        let pvc: PersistentVolumeClaim = from_json(json!({
            "metadata": { "name": claim },
            "spec": { "accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                "volumeName": volume, "resources": { "requests": { "storage": "1Gi" } } },
        }));
        pvcs.create(&PostParams::default(), &pvc).await.unwrap();
    }
    pvcs.patch_status(
        claim,
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "phase": "Bound" } })),
    )
    .await
    .unwrap();
}

fn config_volumes() -> Value {
    json!([
        { "name": "config", "configMap": { "name": "app-config" } },
        { "name": "secret", "secret": { "secretName": "app-secret" } },
        { "name": "data", "persistentVolumeClaim": { "claimName": "data" } },
    ])
}

fn config_env() -> Value {
    json!([
        { "name": "MODE", "valueFrom": { "configMapKeyRef": { "name": "app-config", "key": "mode" } } },
        { "name": "PASSWORD", "valueFrom": { "secretKeyRef": { "name": "app-secret", "key": "password" } } },
    ])
}

fn annotation(obj: &impl ResourceExt, key: &str) -> Option<String> {
    obj.annotations().get(key).cloned()
}

fn phase(pod: &Pod) -> Option<String> {
    pod.status.as_ref().and_then(|s| s.phase.clone())
}

#[tokio::test]
async fn a_burst_of_pods_is_mapped_followed_and_removed_with_its_copies() {
    let env = env().await;
    create_config(&env).await;
    create_bound_claim(&env, "data", "pv-data").await;
    const PODS: usize = 12;
    for i in 0..PODS {
        let vnode = if i % 2 == 0 {
            "vnode-w1-n1"
        } else {
            "vnode-w1-n2"
        };
        create_pod(
            &env,
            &pod(&format!("web-{i}"), vnode, config_volumes(), config_env()),
        )
        .await;
    }

    // Every virtual pod turns Running with the podIP of its physical pod.
    for i in 0..PODS {
        let name = format!("web-{i}");
        eventually(&format!("{name} Running with a podIP"), || async {
            let v = vpods(&env).get(&name).await.unwrap();
            phase(&v).as_deref() == Some("Running")
                && v.status.as_ref().and_then(|s| s.pod_ip.clone()).is_some()
        })
        .await;
        let v = vpods(&env).get(&name).await.unwrap();
        let p = physical_of(&env, &name).await.unwrap();
        assert_eq!(
            v.status.as_ref().unwrap().pod_ip,
            p.status.as_ref().unwrap().pod_ip,
            "{name}: podIP copied up"
        );
        // The mapping is recorded on both sides.
        assert_eq!(
            annotation(&v, "kubeocean.io/physical-pod-namespace").as_deref(),
            Some(MOUNT)
        );
        assert_eq!(
            annotation(&v, "kubeocean.io/physical-pod-name"),
            p.metadata.name
        );
        assert_eq!(
            annotation(&v, "kubeocean.io/physical-pod-uid"),
            p.metadata.uid
        );
        assert_eq!(
            annotation(&p, "kubeocean.io/virtual-pod-uid"),
            v.metadata.uid
        );
        assert_eq!(
            annotation(&p, "kubeocean.io/virtual-pod-name").as_deref(),
            Some(name.as_str())
        );
        assert_eq!(
            p.labels()
                .get("kubeocean.io/managed-by")
                .map(String::as_str),
            Some("kubeocean")
        );
        assert_eq!(p.labels().get("app").map(String::as_str), Some("web"));
        // Pinned to the physical node behind the virtual node.
        let want_node = if i % 2 == 0 { "n1" } else { "n2" };
        assert_eq!(
            p.spec.as_ref().unwrap().node_name.as_deref(),
            Some(want_node)
        );
        assert_eq!(
            p.spec.as_ref().unwrap().priority_class_name.as_deref(),
            Some("kubeocean-default")
        );
    }

    // References are rewritten to the physical copies, which exist with the same content.
    let p = physical_of(&env, "web-0").await.unwrap();
    let spec = p.spec.as_ref().unwrap();
    let volumes = spec.volumes.as_ref().unwrap();
    let cm_name = physical_name(NS, "app-config");
    let secret_name = physical_name(NS, "app-secret");
    let claim_name = physical_name(NS, "data");
    assert_eq!(volumes[0].config_map.as_ref().unwrap().name, cm_name);
    assert_eq!(
        volumes[1].secret.as_ref().unwrap().secret_name.as_deref(),
        Some(secret_name.as_str())
    );
    assert_eq!(
        volumes[2]
            .persistent_volume_claim
            .as_ref()
            .unwrap()
            .claim_name,
        claim_name
    );
    let env_vars = spec.containers[0].env.as_ref().unwrap();
    let cm_ref = env_vars[0]
        .value_from
        .as_ref()
        .unwrap()
        .config_map_key_ref
        .as_ref()
        .unwrap();
    assert_eq!(cm_ref.name, cm_name);
    let cms: Api<ConfigMap> = Api::namespaced(env.w.clone(), MOUNT);
    let copy = cms.get(&cm_name).await.unwrap();
    assert_eq!(copy.data.as_ref().unwrap()["mode"], "blue");
    assert_eq!(
        annotation(&copy, VIRTUAL_NAME).as_deref(),
        Some("app-config")
    );
    assert_eq!(annotation(&copy, VIRTUAL_NAMESPACE).as_deref(), Some(NS));
    let secret = Api::<Secret>::namespaced(env.w.clone(), MOUNT)
        .get(&secret_name)
        .await
        .unwrap();
    assert_eq!(secret.data.as_ref().unwrap()["password"].0, b"s3cret");
    let claim = Api::<PersistentVolumeClaim>::namespaced(env.w.clone(), MOUNT)
        .get(&claim_name)
        .await
        .unwrap();
    let volume_name = physical_name("", "pv-data");
    assert_eq!(
        claim.spec.as_ref().unwrap().volume_name.as_deref(),
        Some(volume_name.as_str())
    );
    let volume = Api::<PersistentVolume>::all(env.w.clone())
        .get(&volume_name)
        .await
        .unwrap();
    let claim_ref = volume.spec.as_ref().unwrap().claim_ref.as_ref().unwrap();
    assert_eq!(claim_ref.name.as_deref(), Some(claim_name.as_str()));
    assert_eq!(claim_ref.namespace.as_deref(), Some(MOUNT));

    // One physical pod per virtual pod.
    let physical = ppods(&env).list(&ListParams::default()).await.unwrap();
    assert_eq!(physical.items.len(), PODS);
    let text = env.metrics.encode().unwrap();
    assert!(
        text.contains(&format!(
            "kubeocean_topdown_physical_pod_creates_total{{binding=\"{BINDING}\"}} {PODS}"
        )),
        "{text}"
    );
    assert!(
        text.contains(&format!(
            "kubeocean_topdown_pods{{binding=\"{BINDING}\",cluster=\"worker\",phase=\"Running\"}} {PODS}"
        )),
        "{text}"
    );

    // A ConfigMap edit reaches the copy.
    Api::<ConfigMap>::namespaced(env.c.clone(), NS)
        .patch(
            "app-config",
            &PatchParams::default(),
            &Patch::Merge(json!({ "data": { "mode": "green" } })),
        )
        .await
        .unwrap();
    eventually("the ConfigMap edit copied", || async {
        cms.get(&cm_name).await.unwrap().data.unwrap()["mode"] == "green"
    })
    .await;

    // Label and activeDeadlineSeconds changes follow.
    vpods(&env)
        .patch(
            "web-1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "labels": { "tier": "front" } },
                "spec": { "activeDeadlineSeconds": 3600 } })),
        )
        .await
        .unwrap();
    eventually("label and deadline on the physical pod", || async {
        let p = physical_of(&env, "web-1").await.unwrap();
        p.labels().get("tier").is_some_and(|v| v == "front")
            && p.spec.unwrap().active_deadline_seconds == Some(3600)
    })
    .await;

    // Deleting a virtual pod (default grace): the physical pod goes, then the virtual one.
    vpods(&env)
        .delete("web-0", &DeleteParams::default())
        .await
        .unwrap();
    let deleting = vpods(&env).get_opt("web-0").await.unwrap();
    assert!(
        deleting.is_some_and(|p| p.metadata.deletion_timestamp.is_some()),
        "the virtual pod waits for its physical pod"
    );
    let physical_gone_first = std::cell::Cell::new(true);
    eventually("web-0 gone", || async {
        let virtual_left = vpods(&env).get_opt("web-0").await.unwrap().is_some();
        let physical_left = physical_of(&env, "web-0").await.is_some();
        if !virtual_left && physical_left {
            physical_gone_first.set(false);
        }
        !virtual_left
    })
    .await;
    assert!(
        physical_gone_first.get(),
        "the virtual pod went before its physical pod"
    );
    assert!(physical_of(&env, "web-0").await.is_none());

    // The last pod gone: the copies are removed.
    for i in 1..PODS {
        vpods(&env)
            .delete(&format!("web-{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    eventually("every physical pod gone", || async {
        ppods(&env)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
    eventually("the copies removed", || async {
        cms.get_opt(&cm_name).await.unwrap().is_none()
            && Api::<Secret>::namespaced(env.w.clone(), MOUNT)
                .get_opt(&secret_name)
                .await
                .unwrap()
                .is_none()
            && Api::<PersistentVolumeClaim>::namespaced(env.w.clone(), MOUNT)
                .get_opt(&claim_name)
                .await
                .unwrap()
                .is_none()
            && Api::<PersistentVolume>::all(env.w.clone())
                .get_opt(&volume_name)
                .await
                .unwrap()
                .is_none()
    })
    .await;
    eventually("every virtual pod gone", || async {
        vpods(&env)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    })
    .await;
}

#[tokio::test]
async fn a_physical_pod_deleted_behind_our_back_fails_the_virtual_pod() {
    let env = env().await;
    create_pod(&env, &pod("lonely", "vnode-w1-n1", json!([]), json!([]))).await;
    eventually("lonely Running", || async {
        phase(&vpods(&env).get("lonely").await.unwrap()).as_deref() == Some("Running")
    })
    .await;
    delete_physical_of(&env, "lonely").await;
    wait_lost(&env, "lonely").await;
    let v = vpods(&env).get("lonely").await.unwrap();
    let ready = v
        .status
        .unwrap()
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Ready")
        .unwrap();
    assert_eq!(ready.status, "False");
    wait_event(&env, "Pod", "lonely", "PhysicalPodLost").await;
    // Never recreated: a Failed pod does not run again.
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(physical_of(&env, "lonely").await.is_none());
}

#[tokio::test]
async fn a_physical_pod_deleted_before_the_mapping_is_recorded_is_lost_not_recreated() {
    let env = env().await;
    // The worker's kubelet of n2 stops: the physical pod never starts, so the mapping waits
    // (PHYSICAL_POD_SETTLE) before it is recorded on the virtual pod.
    env.worker.stop_node("n2");
    create_pod(&env, &pod("early", "vnode-w1-n2", json!([]), json!([]))).await;
    eventually("the physical pod of early", || async {
        physical_of(&env, "early").await.is_some()
    })
    .await;
    delete_physical_of(&env, "early").await;
    let v = vpods(&env).get("early").await.unwrap();
    assert!(
        annotation(&v, kubeocean_core::labels::PHYSICAL_POD_UID).is_none(),
        "the mapping must not be recorded yet for this test to mean anything"
    );
    wait_lost(&env, "early").await;
    wait_event(&env, "Pod", "early", "PhysicalPodLost").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert!(physical_of(&env, "early").await.is_none());
}

#[tokio::test]
async fn a_pod_waits_for_a_missing_config_map_with_an_event_and_starts_once_it_exists() {
    let env = env().await;
    let volumes = json!([{ "name": "late", "configMap": { "name": "late-config" } }]);
    create_pod(&env, &pod("waiter", "vnode-w1-n1", volumes, json!([]))).await;
    let note = wait_event(&env, "Pod", "waiter", "DependencyMissing").await;
    assert!(note.contains("ConfigMap default/late-config"), "{note}");
    assert!(
        physical_of(&env, "waiter").await.is_none(),
        "not mapped yet"
    );

    Api::<ConfigMap>::namespaced(env.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "late-config" }, "data": { "k": "v" } })),
        )
        .await
        .unwrap();
    eventually("waiter Running", || async {
        phase(&vpods(&env).get("waiter").await.unwrap()).as_deref() == Some("Running")
    })
    .await;
    assert!(
        Api::<ConfigMap>::namespaced(env.w.clone(), MOUNT)
            .get_opt(&physical_name(NS, "late-config"))
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn an_unbound_claim_is_reported_and_not_mapped_until_bound() {
    let env = env().await;
    let pvc: PersistentVolumeClaim = from_json(json!({
        "metadata": { "name": "pending-claim" },
        "spec": { "accessModes": ["ReadWriteOnce"], "resources": { "requests": { "storage": "1Gi" } } },
    }));
    Api::<PersistentVolumeClaim>::namespaced(env.c.clone(), NS)
        .create(&PostParams::default(), &pvc)
        .await
        .unwrap();
    let volumes =
        json!([{ "name": "data", "persistentVolumeClaim": { "claimName": "pending-claim" } }]);
    create_pod(&env, &pod("needs-disk", "vnode-w1-n2", volumes, json!([]))).await;
    let note = wait_event(&env, "Pod", "needs-disk", "VolumeClaimNotBound").await;
    assert!(note.contains("default/pending-claim"), "{note}");
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(physical_of(&env, "needs-disk").await.is_none());
    assert!(
        Api::<PersistentVolumeClaim>::namespaced(env.w.clone(), MOUNT)
            .get_opt(&physical_name(NS, "pending-claim"))
            .await
            .unwrap()
            .is_none(),
        "an unbound claim is not copied"
    );

    // Bound later (volume created, claim bound): mapped.
    let pv: PersistentVolume = from_json(json!({
        "metadata": { "name": "pv-late" },
        "spec": { "capacity": { "storage": "1Gi" }, "accessModes": ["ReadWriteOnce"],
            "hostPath": { "path": "/late" }, "claimRef": { "namespace": NS, "name": "pending-claim" } },
    }));
    let pvs: Api<PersistentVolume> = Api::all(env.c.clone());
    pvs.create(&PostParams::default(), &pv).await.unwrap();
    pvs.patch_status(
        "pv-late",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "phase": "Bound" } })),
    )
    .await
    .unwrap();
    Api::<PersistentVolumeClaim>::namespaced(env.c.clone(), NS)
        .patch(
            "pending-claim",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "volumeName": "pv-late" } })),
        )
        .await
        .unwrap();
    bind_claim(&env, "pending-claim", "pv-late", false).await;
    eventually("needs-disk mapped", || async {
        physical_of(&env, "needs-disk").await.is_some()
    })
    .await;
}

#[tokio::test]
async fn name_collisions_are_reported_and_never_clobbered() {
    let env = env().await;
    // A worker ConfigMap of the target name that Kubeocean did not make.
    let cm_name = physical_name(NS, "shared-config");
    Api::<ConfigMap>::namespaced(env.w.clone(), MOUNT)
        .create(
            &PostParams::default(),
            &from_json(
                json!({ "metadata": { "name": cm_name }, "data": { "owner": "someone-else" } }),
            ),
        )
        .await
        .unwrap();
    Api::<ConfigMap>::namespaced(env.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(
                json!({ "metadata": { "name": "shared-config" }, "data": { "owner": "us" } }),
            ),
        )
        .await
        .unwrap();
    let volumes = json!([{ "name": "cfg", "configMap": { "name": "shared-config" } }]);
    create_pod(&env, &pod("uses-shared", "vnode-w1-n1", volumes, json!([]))).await;
    let note = wait_event(&env, "Pod", "uses-shared", "NameConflict").await;
    assert!(note.contains(&cm_name), "{note}");
    let kept = Api::<ConfigMap>::namespaced(env.w.clone(), MOUNT)
        .get(&cm_name)
        .await
        .unwrap();
    assert_eq!(
        kept.data.unwrap()["owner"],
        "someone-else",
        "not overwritten"
    );
    assert!(physical_of(&env, "uses-shared").await.is_none());

    // A worker pod of the target name, made by Kubeocean for another live virtual pod.
    Api::<Namespace>::all(env.c.clone())
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "team-b" } })),
        )
        .await
        .unwrap();
    let other = Api::<Pod>::namespaced(env.c.clone(), "team-b")
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "other" },
                "spec": { "containers": [{ "name": "app", "image": "busybox" }] } })),
        )
        .await
        .unwrap();
    let squatter: Pod = from_json(json!({
        "metadata": { "name": physical_name(NS, "collide"),
            "labels": { "kubeocean.io/managed-by": "kubeocean" },
            "annotations": { "kubeocean.io/virtual-pod-namespace": "team-b",
                "kubeocean.io/virtual-pod-name": "other",
                "kubeocean.io/virtual-pod-uid": other.metadata.uid.clone().unwrap() } },
        "spec": { "nodeName": "n2", "containers": [{ "name": "app", "image": "busybox" }] },
    }));
    ppods(&env)
        .create(&PostParams::default(), &squatter)
        .await
        .unwrap();
    create_pod(&env, &pod("collide", "vnode-w1-n1", json!([]), json!([]))).await;
    let note = wait_event(&env, "Pod", "collide", "NameConflict").await;
    assert!(note.contains("team-b/other"), "{note}");
    let kept = physical_of(&env, "collide").await.unwrap();
    assert_eq!(
        annotation(&kept, "kubeocean.io/virtual-pod-name").as_deref(),
        Some("other"),
        "the other object's pod is left as it is"
    );
    let v = vpods(&env).get("collide").await.unwrap();
    assert!(annotation(&v, "kubeocean.io/physical-pod-uid").is_none());
}

#[tokio::test]
async fn projected_tokens_are_requested_refreshed_and_removed_with_the_pod() {
    let env = env().await;
    let volumes = json!([{ "name": "token", "projected": { "sources": [
        { "serviceAccountToken": { "path": "token", "expirationSeconds": 3600 } }] } }]);
    let created = create_pod(&env, &pod("with-token", "vnode-w1-n1", volumes, json!([]))).await;
    let secret_name = token_secret_name(&created).unwrap();
    let secrets: Api<Secret> = Api::namespaced(env.w.clone(), MOUNT);
    eventually("with-token mapped", || async {
        physical_of(&env, "with-token").await.is_some()
    })
    .await;
    let physical = physical_of(&env, "with-token").await.unwrap();
    let projected = physical.spec.unwrap().volumes.unwrap()[0]
        .projected
        .clone()
        .unwrap()
        .sources
        .unwrap();
    assert_eq!(projected[0].secret.as_ref().unwrap().name, secret_name);
    assert!(projected[0].service_account_token.is_none());

    let secret = secrets.get(&secret_name).await.unwrap();
    let token = String::from_utf8(secret.data.as_ref().unwrap()["token"].0.clone()).unwrap();
    // The computing cluster accepts the token as the pod's service account.
    let review: TokenReview = from_json(json!({ "spec": { "token": token } }));
    let reviewed = Api::<TokenReview>::all(env.c.clone())
        .create(&PostParams::default(), &review)
        .await
        .unwrap();
    let status = reviewed.status.unwrap();
    assert_eq!(status.authenticated, Some(true));
    assert_eq!(
        status.user.unwrap().username.as_deref(),
        Some("system:serviceaccount:default:default")
    );

    // A token whose refresh time has come is requested again.
    secrets
        .patch(
            &secret_name,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "annotations": {
                TOKEN_REFRESH_AT: "2000-01-01T00:00:00Z" } } })),
        )
        .await
        .unwrap();
    eventually("the token refreshed", || async {
        let s = secrets.get(&secret_name).await.unwrap();
        let fresh = String::from_utf8(s.data.as_ref().unwrap()["token"].0.clone()).unwrap();
        let at = annotation(&s, TOKEN_REFRESH_AT).unwrap_or_default();
        fresh != token && at.as_str() > "2001"
    })
    .await;

    vpods(&env)
        .delete("with-token", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the token Secret removed", || async {
        secrets.get_opt(&secret_name).await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn deleting_the_binding_removes_every_physical_object_and_orphans_are_collected() {
    let env = env().await;
    // An orphan: labelled ours, pointing at a virtual pod that does not exist.
    let orphan: Pod = from_json(json!({
        "metadata": { "name": "orphan-x",
            "labels": { "kubeocean.io/managed-by": "kubeocean" },
            "annotations": { "kubeocean.io/virtual-pod-namespace": NS,
                "kubeocean.io/virtual-pod-name": "never-existed",
                "kubeocean.io/virtual-pod-uid": "0000" } },
        "spec": { "nodeName": "n1", "containers": [{ "name": "app", "image": "busybox" }] },
    }));
    ppods(&env)
        .create(&PostParams::default(), &orphan)
        .await
        .unwrap();
    eventually("the orphan collected", || async {
        ppods(&env).get_opt("orphan-x").await.unwrap().is_none()
    })
    .await;

    create_config(&env).await;
    let volumes = json!([{ "name": "config", "configMap": { "name": "app-config" } },
        { "name": "secret", "secret": { "secretName": "app-secret" } }]);
    for i in 0..4 {
        create_pod(
            &env,
            &pod(
                &format!("app-{i}"),
                "vnode-w1-n2",
                volumes.clone(),
                json!([]),
            ),
        )
        .await;
    }
    eventually("four physical pods", || async {
        ppods(&env)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len()
            == 4
    })
    .await;
    // Something of ours that no reconciler but the binding cleanup would remove.
    Api::<Secret>::namespaced(env.w.clone(), MOUNT)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "stray",
                "labels": { "kubeocean.io/managed-by": "kubeocean" } } })),
        )
        .await
        .unwrap();
    assert_eq!(
        topdown::remaining_physical_objects(&env.w, MOUNT)
            .await
            .unwrap(),
        7,
        "4 pods, 1 ConfigMap, 1 Secret copy and the stray Secret"
    );

    // The manager's finalizer holds the binding while the syncer cleans up.
    let bindings: Api<ClusterBinding> = Api::all(env.c.clone());
    bindings
        .patch(
            BINDING,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": ["kubeocean.io/test-hold"] } })),
        )
        .await
        .unwrap();
    bindings
        .delete(BINDING, &DeleteParams::default())
        .await
        .unwrap();
    let nodes: Api<k8s_openapi::api::core::v1::Node> = Api::all(env.c.clone());
    let ours = ListParams::default().labels(&format!("kubeocean.io/cluster-binding={BINDING}"));
    // What the manager waits for before it releases its finalizer.
    eventually("no virtual node and no physical object left", || async {
        nodes.list(&ours).await.unwrap().items.is_empty()
            && topdown::remaining_physical_objects(&env.w, MOUNT)
                .await
                .unwrap()
                == 0
    })
    .await;
    assert!(
        vpods(&env)
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty(),
        "the virtual pods were drained first"
    );
    let held = bindings.get(BINDING).await.unwrap();
    assert!(
        held.metadata.deletion_timestamp.is_some(),
        "cleaned up while the binding was being deleted"
    );
    bindings
        .patch(
            BINDING,
            &PatchParams::default(),
            &Patch::Merge(json!({ "metadata": { "finalizers": null } })),
        )
        .await
        .unwrap();
}

/// A worker Event as the kubelet records one about a physical pod (core/v1, source
/// `kubelet` on the node), following kubernetes `pkg/kubelet/images/image_manager.go` and
/// `pkg/kubelet/events/event.go` (`Pulling`, `Failed`, `BackOff`).
fn kubelet_event(
    name: &str,
    pod: &Pod,
    type_: &str,
    reason: &str,
    message: &str,
) -> k8s_openapi::api::core::v1::Event {
    from_json(json!({
        "metadata": { "name": name, "namespace": pod.namespace().unwrap() },
        "involvedObject": { "apiVersion": "v1", "kind": "Pod", "namespace": pod.namespace().unwrap(),
            "name": pod.name_any(), "uid": pod.uid().unwrap(), "fieldPath": "spec.containers{app}" },
        "type": type_, "reason": reason, "message": message, "count": 1,
        "source": { "component": "kubelet", "host": "n1" },
        "firstTimestamp": "2026-01-01T00:00:00Z", "lastTimestamp": "2026-01-01T00:00:00Z",
    }))
}

/// core/v1 Events about virtual pod `name`: (reason, message, count).
async fn reflected_events(env: &Env, name: &str) -> Vec<(String, String, i32)> {
    Api::<k8s_openapi::api::core::v1::Event>::namespaced(env.c.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|e| {
            e.involved_object.name.as_deref() == Some(name)
                && e.reporting_component.as_deref() == Some("kubeocean.io/syncer")
        })
        .map(|e| {
            (
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default(),
                e.count.unwrap_or_default(),
            )
        })
        .collect()
}

/// A worker pod stuck on a missing image: the kubelet's `Failed` and `BackOff` Events reach
/// the virtual pod within 5 s, with virtual names in the messages; Events about a pod of the
/// mount namespace that is not ours are never reflected; and 1,000 repeated worker Events
/// become one counted Event.
#[tokio::test]
async fn worker_events_of_a_stuck_pod_reach_the_virtual_pod_counted() {
    use k8s_openapi::api::core::v1::Event as CoreEvent;
    let env = env().await;
    let mut stuck = pod("stuck", "vnode-w1-n1", json!([]), json!([]));
    stuck.spec.as_mut().unwrap().containers[0].image = Some("registry.invalid/nope:1".into());
    create_pod(&env, &stuck).await;
    eventually("the physical pod", || async {
        physical_of(&env, "stuck").await.is_some()
    })
    .await;
    let physical = physical_of(&env, "stuck").await.unwrap();
    let pname = physical.name_any();
    // A pod of the mount namespace that is not ours, with an Event of its own.
    let intruder: Pod = from_json(json!({
        "metadata": { "name": "intruder", "namespace": MOUNT },
        "spec": { "containers": [{ "name": "app", "image": "nginx:1" }] },
    }));
    let intruder = ppods(&env)
        .create(&PostParams::default(), &intruder)
        .await
        .unwrap();
    let worker_events: Api<CoreEvent> = Api::namespaced(env.w.clone(), MOUNT);
    let image = "registry.invalid/nope:1";
    for event in [
        kubelet_event(
            "e-scheduled",
            &physical,
            "Normal",
            "Scheduled",
            &format!("Successfully assigned {MOUNT}/{pname} to n1"),
        ),
        kubelet_event(
            "e-pulling",
            &physical,
            "Normal",
            "Pulling",
            &format!("Pulling image \"{image}\""),
        ),
        kubelet_event(
            "e-failed",
            &physical,
            "Warning",
            "Failed",
            &format!("Failed to pull image \"{image}\": not found"),
        ),
        kubelet_event(
            "e-backoff",
            &physical,
            "Normal",
            "BackOff",
            &format!("Back-off pulling image \"{image}\""),
        ),
        kubelet_event(
            "e-intruder",
            &intruder,
            "Warning",
            "Failed",
            "Error: ErrImagePull",
        ),
    ] {
        worker_events
            .create(&PostParams::default(), &event)
            .await
            .unwrap();
    }
    common::eventually_every(
        "Failed and BackOff Events on the virtual pod",
        Duration::from_secs(5),
        Duration::from_millis(25),
        || async {
            let events = reflected_events(&env, "stuck").await;
            ["Failed", "BackOff"]
                .iter()
                .all(|r| events.iter().any(|(reason, _, _)| reason == r))
        },
    )
    .await;
    eventually("the Scheduled Event with virtual names", || async {
        reflected_events(&env, "stuck")
            .await
            .iter()
            .any(|(r, m, _)| {
                r == "Scheduled" && m == &format!("Successfully assigned {NS}/stuck to vnode-w1-n1")
            })
    })
    .await;
    // Nothing of the intruder reached the computing cluster.
    let all = Api::<CoreEvent>::namespaced(env.c.clone(), NS)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items;
    assert!(
        all.iter()
            .all(|e| e.message.as_deref() != Some("Error: ErrImagePull")),
        "{all:?}"
    );

    // 1,000 more BackOff Events (as many worker Event objects): one reflected Event counts
    // them all.
    for i in 0..1000 {
        let event = kubelet_event(
            &format!("e-backoff-{i}"),
            &physical,
            "Normal",
            "BackOff",
            &format!("Back-off pulling image \"{image}\""),
        );
        worker_events
            .create(&PostParams::default(), &event)
            .await
            .unwrap();
    }
    eventually("one BackOff Event counting 1,001", || async {
        let backoffs: Vec<_> = reflected_events(&env, "stuck")
            .await
            .into_iter()
            .filter(|(r, _, _)| r == "BackOff")
            .collect();
        backoffs.len() == 1 && backoffs[0].2 == 1001
    })
    .await;
    let events = reflected_events(&env, "stuck").await;
    assert_eq!(events.len(), 4, "{events:?}");
}
