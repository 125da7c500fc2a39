//! The workload controllers, over loopback HTTP with real watches: Deployments (scale, rolling
//! update, pause, restart, garbage collection), StatefulSets, DaemonSets, Jobs, CronJobs and
//! the EndpointSlices of Services.

#![allow(clippy::unwrap_used)]

mod common;

use common::eventually;
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment, ReplicaSet, StatefulSet};
use k8s_openapi::api::batch::v1::{CronJob, Job};
use k8s_openapi::api::core::v1::{Endpoints, Event, PersistentVolumeClaim, Pod, Service};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::Resource;
use kube_sandbox::{Cluster, ClusterOptions, Served, SimNode};
use serde_json::{Value, json};
use std::time::Duration;

/// A served cluster with the workload controllers on and `nodes` simulated nodes, and a client
/// from its kubeconfig.
async fn cluster_with(nodes: &[SimNode]) -> (Cluster, Served, kube::Client) {
    let cluster = Cluster::with_options(
        "workloads",
        ClusterOptions {
            workload_controllers: true,
            pod_start_delay: Duration::from_millis(50),
            max_termination_delay: Duration::from_millis(50),
            job_pod_run_time: Duration::from_millis(100),
            ..Default::default()
        },
    );
    for node in nodes {
        cluster.add_node(node).unwrap();
    }
    let served = cluster.serve(Default::default()).await.unwrap();
    let client = served.client().await.unwrap();
    (cluster, served, client)
}

async fn cluster() -> (Cluster, Served, kube::Client) {
    cluster_with(&[
        SimNode::new("node-1", "8", "16Gi"),
        SimNode::new("node-2", "8", "16Gi"),
    ])
    .await
}

fn from<T: serde::de::DeserializeOwned>(value: Value) -> T {
    serde_json::from_value(value).unwrap()
}

fn deployment(name: &str, replicas: i32, strategy: Value) -> Deployment {
    from(json!({
        "metadata": {"name": name},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "strategy": strategy,
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "ports": [{"name": "http", "containerPort": 8080}]}]}
            }
        }
    }))
}

/// Pods a controller owns (by controller uid), not being deleted.
async fn owned_pods(pods: &Api<Pod>, owner_uid: &str) -> Vec<Pod> {
    pods.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| {
            p.metadata.deletion_timestamp.is_none()
                && p.metadata
                    .owner_references
                    .iter()
                    .flatten()
                    .any(|r| r.uid == owner_uid && r.controller == Some(true))
        })
        .collect()
}

fn is_ready(pod: &Pod) -> bool {
    pod.status.as_ref().is_some_and(|s| {
        s.phase.as_deref() == Some("Running")
            && s.conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Ready" && c.status == "True")
    })
}

/// Whether a Deployment's rollout is done as `kubectl rollout status` decides it.
fn rolled_out(d: &Deployment) -> bool {
    let (Some(spec), Some(status)) = (&d.spec, &d.status) else {
        return false;
    };
    let desired = spec.replicas.unwrap_or(1);
    status.observed_generation >= d.metadata.generation
        && status.updated_replicas.unwrap_or(0) == desired
        && status.replicas.unwrap_or(0) == desired
        && status.available_replicas.unwrap_or(0) == desired
}

async fn wait_rolled_out(deployments: &Api<Deployment>, name: &str) -> Deployment {
    let d = deployments.clone();
    let name = name.to_string();
    kube_sandbox::testing::eventually_some("deployment rolled out", Duration::from_secs(20), || {
        let (d, name) = (d.clone(), name.clone());
        async move { d.get(&name).await.ok().filter(rolled_out) }
    })
    .await
}

async fn replica_sets_of(rs: &Api<ReplicaSet>, uid: &str) -> Vec<ReplicaSet> {
    rs.list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|r| {
            r.metadata
                .owner_references
                .iter()
                .flatten()
                .any(|o| o.uid == uid)
        })
        .collect()
}

#[tokio::test]
async fn deployment_runs_scales_and_is_collected() {
    let (_cluster, _served, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 3, json!({})))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let d = wait_rolled_out(&deployments, "web").await;
    let status = d.status.clone().unwrap();
    assert_eq!(status.ready_replicas, Some(3));
    assert_eq!(status.unavailable_replicas, None);
    let conditions = status.conditions.unwrap();
    let reason = |t: &str| {
        conditions
            .iter()
            .find(|c| c.type_ == t)
            .and_then(|c| c.reason.clone())
    };
    assert_eq!(
        reason("Available").as_deref(),
        Some("MinimumReplicasAvailable")
    );
    assert_eq!(
        reason("Progressing").as_deref(),
        Some("NewReplicaSetAvailable")
    );
    assert_eq!(
        d.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "1"
    );

    // One ReplicaSet `<deployment>-<pod-template-hash>`; its pods carry the hash label.
    let rs = replica_sets_of(&sets, &uid).await;
    assert_eq!(rs.len(), 1);
    let rs_name = rs[0].metadata.name.clone().unwrap();
    let hash = rs[0].metadata.labels.as_ref().unwrap()["pod-template-hash"].clone();
    assert_eq!(rs_name, format!("web-{hash}"));
    let rs_uid = rs[0].metadata.uid.clone().unwrap();
    let running = owned_pods(&pods, &rs_uid).await;
    assert_eq!(running.len(), 3);
    for pod in &running {
        assert!(is_ready(pod), "{:?}", pod.metadata.name);
        assert!(
            pod.metadata
                .name
                .as_ref()
                .unwrap()
                .starts_with(&format!("{rs_name}-"))
        );
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()["pod-template-hash"],
            hash
        );
        let owner = &pod.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(owner.kind, "ReplicaSet");
        assert_eq!(owner.block_owner_deletion, Some(true));
    }
    // The events `kubectl describe` shows.
    let events: Api<Event> = Api::namespaced(client.clone(), "default");
    let messages = |object: &str| {
        let events = events.clone();
        let selector = format!("involvedObject.name={object}");
        async move {
            events
                .list(&ListParams::default().fields(&selector))
                .await
                .unwrap()
                .items
                .into_iter()
                .map(|e| (e.reason.unwrap_or_default(), e.message.unwrap_or_default()))
                .collect::<Vec<_>>()
        }
    };
    assert!(messages("web").await.contains(&(
        "ScalingReplicaSet".to_string(),
        format!("Scaled up replica set {rs_name} from 0 to 3")
    )));
    let created = messages(&rs_name).await;
    assert_eq!(
        created
            .iter()
            .filter(|(reason, _)| reason == "SuccessfulCreate")
            .count(),
        3,
        "{created:?}"
    );
    let rs_status = sets.get(&rs_name).await.unwrap().status.unwrap();
    assert_eq!(rs_status.replicas, 3);
    assert_eq!(rs_status.fully_labeled_replicas, Some(3));
    assert_eq!(rs_status.available_replicas, Some(3));

    // Scale up through the scale subresource (as `kubectl scale` does), down through the spec.
    for replicas in [5, 1] {
        let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
        if replicas == 5 {
            let scale = deployments
                .patch_scale("web", &PatchParams::default(), &patch)
                .await
                .unwrap();
            assert_eq!(scale.spec.unwrap().replicas, Some(5));
        } else {
            deployments
                .patch("web", &PatchParams::default(), &patch)
                .await
                .unwrap();
        }
        let d = wait_rolled_out(&deployments, "web").await;
        assert_eq!(d.status.unwrap().ready_replicas, Some(replicas));
        let scale = deployments.get_scale("web").await.unwrap();
        assert_eq!(
            scale.status.as_ref().unwrap().selector.as_deref(),
            Some("app=web")
        );
        let p = pods.clone();
        let rs_uid = rs_uid.clone();
        eventually("pods follow the scale", || {
            let (p, rs_uid) = (p.clone(), rs_uid.clone());
            async move { owned_pods(&p, &rs_uid).await.len() == replicas as usize }
        })
        .await;
    }

    // Deleting the Deployment removes its ReplicaSets and their pods.
    deployments
        .delete("web", &DeleteParams::default())
        .await
        .unwrap();
    let (s, p) = (sets.clone(), pods.clone());
    eventually("replica sets and pods collected", || {
        let (s, p) = (s.clone(), p.clone());
        async move {
            s.list(&ListParams::default())
                .await
                .unwrap()
                .items
                .is_empty()
                && p.list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .is_empty()
        }
    })
    .await;
}

#[tokio::test]
async fn rolling_update_with_no_unavailability_keeps_every_replica_available() {
    let (_cluster, _served, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let strategy =
        json!({"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}});
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 3, strategy))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    let before = wait_rolled_out(&deployments, "web").await;
    let rv = before.metadata.resource_version.clone().unwrap();

    let mut stream = deployments
        .watch(&WatchParams::default().fields("metadata.name=web"), &rv)
        .await
        .unwrap()
        .boxed();
    let patched = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.28"}
            ]}}}})),
        )
        .await
        .unwrap();
    let generation = patched.metadata.generation;
    let mut lowest = i32::MAX;
    let mut highest_total = 0;
    let watched = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.try_next().await.unwrap() {
            let WatchEvent::Modified(d) = event else {
                continue;
            };
            let status = d.status.clone().unwrap_or_default();
            lowest = lowest.min(status.available_replicas.unwrap_or(0));
            highest_total = highest_total.max(status.replicas.unwrap_or(0));
            if d.metadata.generation == generation && rolled_out(&d) {
                return d;
            }
        }
        panic!("the watch ended before the rollout");
    })
    .await
    .expect("the rollout ends");
    assert!(lowest >= 3, "available replicas fell to {lowest}");
    assert!(
        highest_total <= 4,
        "more than replicas + maxSurge pods: {highest_total}"
    );
    assert_eq!(
        watched.metadata.annotations.unwrap()["deployment.kubernetes.io/revision"],
        "2"
    );
    let rs = replica_sets_of(&sets, &uid).await;
    assert_eq!(rs.len(), 2);
    let old = rs
        .iter()
        .find(|r| {
            r.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"] == "1"
        })
        .unwrap();
    assert_eq!(old.spec.as_ref().unwrap().replicas, Some(0));
}

#[tokio::test]
async fn paused_deployments_do_not_roll_and_restart_makes_a_new_replica_set() {
    let (_cluster, _served, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let sets: Api<ReplicaSet> = Api::namespaced(client.clone(), "default");
    let created = deployments
        .create(&PostParams::default(), &deployment("web", 2, json!({})))
        .await
        .unwrap();
    let uid = created.metadata.uid.clone().unwrap();
    wait_rolled_out(&deployments, "web").await;

    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": true}})),
        )
        .await
        .unwrap();
    let changed = deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.28"}
            ]}}}})),
        )
        .await
        .unwrap();
    // Once the controller has seen the change, the Deployment says it is paused...
    let d = deployments.clone();
    let generation = changed.metadata.generation;
    eventually("paused condition observed", || {
        let d = d.clone();
        async move {
            let d = d.get("web").await.unwrap();
            let status = d.status.unwrap_or_default();
            status.observed_generation == generation
                && status.conditions.iter().flatten().any(|c| {
                    c.type_ == "Progressing" && c.reason.as_deref() == Some("DeploymentPaused")
                })
        }
    })
    .await;
    // ...and has not rolled.
    assert_eq!(replica_sets_of(&sets, &uid).await.len(), 1);

    // Resumed, it rolls to the new template.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"paused": false}})),
        )
        .await
        .unwrap();
    let s = sets.clone();
    let u = uid.clone();
    eventually("second replica set", || {
        let (s, u) = (s.clone(), u.clone());
        async move { replica_sets_of(&s, &u).await.len() == 2 }
    })
    .await;
    wait_rolled_out(&deployments, "web").await;

    // `kubectl rollout restart`: a new template annotation, a new ReplicaSet, revision 3.
    deployments
        .patch(
            "web",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"metadata": {"annotations": {
                "kubectl.kubernetes.io/restartedAt": "2026-01-01T00:00:00Z"
            }}}}})),
        )
        .await
        .unwrap();
    let d = deployments.clone();
    eventually("restart rolled out at revision 3", || {
        let d = d.clone();
        async move {
            let d = d.get("web").await.unwrap();
            rolled_out(&d)
                && d.metadata.annotations.unwrap_or_default()["deployment.kubernetes.io/revision"]
                    == "3"
        }
    })
    .await;
    let rs = replica_sets_of(&sets, &uid).await;
    assert_eq!(rs.len(), 3);
    let newest = rs
        .iter()
        .find(|r| {
            r.metadata.annotations.as_ref().unwrap()["deployment.kubernetes.io/revision"] == "3"
        })
        .unwrap();
    assert_eq!(newest.spec.as_ref().unwrap().replicas, Some(2));
    let annotations = newest
        .spec
        .as_ref()
        .unwrap()
        .template
        .as_ref()
        .unwrap()
        .metadata
        .as_ref()
        .unwrap()
        .annotations
        .clone()
        .unwrap();
    assert!(annotations.contains_key("kubectl.kubernetes.io/restartedAt"));
}

#[tokio::test]
async fn recreate_removes_old_pods_before_new_ones_start() {
    let (_cluster, _served, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    deployments
        .create(
            &PostParams::default(),
            &deployment("db", 2, json!({"type": "Recreate"})),
        )
        .await
        .unwrap();
    let before = wait_rolled_out(&deployments, "db").await;
    let listed = pods.list(&ListParams::default()).await.unwrap();
    let rv = listed.metadata.resource_version.unwrap();
    let mut old: std::collections::HashSet<String> = listed
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .collect();
    assert_eq!(old.len(), 2);
    let mut stream = pods
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    deployments
        .patch(
            "db",
            &PatchParams::default(),
            &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
                {"name": "web", "image": "nginx:1.28"}
            ]}}}})),
        )
        .await
        .unwrap();
    // No pod of the new template is created while an old one exists.
    let mut new_seen = 0;
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.try_next().await.unwrap() {
            match event {
                WatchEvent::Added(p) if !old.contains(p.metadata.name.as_deref().unwrap()) => {
                    assert!(
                        old.is_empty(),
                        "a new pod was created while {old:?} remained"
                    );
                    new_seen += 1;
                    if new_seen == 2 {
                        return;
                    }
                }
                WatchEvent::Deleted(p) => {
                    old.remove(p.metadata.name.as_deref().unwrap());
                }
                _ => {}
            }
        }
    })
    .await
    .expect("two new pods");
    let after = wait_rolled_out(&deployments, "db").await;
    assert!(after.metadata.generation > before.metadata.generation);
}

#[tokio::test]
async fn statefulset_pods_come_in_order_and_go_from_the_top() {
    let (_cluster, _served, client) = cluster().await;
    let sets: Api<StatefulSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let claims: Api<PersistentVolumeClaim> = Api::namespaced(client.clone(), "default");
    let rv = pods
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = pods
        .watch(&WatchParams::default().labels("app=db"), &rv)
        .await
        .unwrap()
        .boxed();
    let set: StatefulSet = from(json!({
        "metadata": {"name": "db"},
        "spec": {
            "replicas": 3,
            "serviceName": "db",
            "selector": {"matchLabels": {"app": "db"}},
            "template": {"metadata": {"labels": {"app": "db"}},
                "spec": {"containers": [{"name": "db", "image": "postgres:16"}]}},
            "volumeClaimTemplates": [{"metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]
        }
    }));
    sets.create(&PostParams::default(), &set).await.unwrap();
    // Each pod is created only once the one before it is Ready.
    let mut ready: Vec<String> = Vec::new();
    let mut created: Vec<String> = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.try_next().await.unwrap() {
            let (WatchEvent::Added(p) | WatchEvent::Modified(p)) = event else {
                continue;
            };
            let name = p.metadata.name.clone().unwrap();
            if !created.contains(&name) {
                let ordinal: usize = name.trim_start_matches("db-").parse().unwrap();
                assert_eq!(ordinal, created.len(), "{name} out of order");
                assert_eq!(
                    ready.len(),
                    ordinal,
                    "{name} created before db-{} was ready",
                    ordinal.saturating_sub(1)
                );
                created.push(name.clone());
            }
            if is_ready(&p) && !ready.contains(&name) {
                ready.push(name);
                if ready.len() == 3 {
                    return;
                }
            }
        }
    })
    .await
    .expect("three ready pods");
    let s = sets.clone();
    eventually("statefulset status", || {
        let s = s.clone();
        async move {
            let st = s.get("db").await.unwrap().status.unwrap_or_default();
            st.ready_replicas == Some(3)
                && st.current_replicas == Some(3)
                && st.updated_replicas == Some(3)
                && st.available_replicas == Some(3)
                && st.current_revision.is_some()
                && st.current_revision == st.update_revision
        }
    })
    .await;
    let pod = pods.get("db-1").await.unwrap();
    assert_eq!(pod.spec.as_ref().unwrap().hostname.as_deref(), Some("db-1"));
    assert_eq!(pod.spec.as_ref().unwrap().subdomain.as_deref(), Some("db"));
    assert_eq!(
        pod.metadata.labels.as_ref().unwrap()["statefulset.kubernetes.io/pod-name"],
        "db-1"
    );
    assert!(claims.get("data-db-1").await.is_ok());

    // A new template rolls from the highest ordinal down, to the new revision.
    let before = sets.get("db").await.unwrap().status.unwrap();
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Strategic(json!({"spec": {"template": {"spec": {"containers": [
            {"name": "db", "image": "postgres:17"}
        ]}}}})),
    )
    .await
    .unwrap();
    let s = sets.clone();
    let old_revision = before.update_revision.clone();
    let status = kube_sandbox::testing::eventually_some(
        "rolled to the new revision",
        Duration::from_secs(20),
        || {
            let (s, old_revision) = (s.clone(), old_revision.clone());
            async move {
                let st = s.get("db").await.unwrap().status?;
                (st.update_revision != old_revision
                    && st.current_revision == st.update_revision
                    && st.updated_replicas == Some(3)
                    && st.ready_replicas == Some(3))
                .then_some(st)
            }
        },
    )
    .await;
    for i in 0..3 {
        let pod = pods.get(&format!("db-{i}")).await.unwrap();
        assert_eq!(
            pod.metadata.labels.as_ref().unwrap()["controller-revision-hash"],
            status.update_revision.clone().unwrap()
        );
        assert_eq!(
            pod.spec.unwrap().containers[0].image.as_deref(),
            Some("postgres:17")
        );
    }

    // Scaling down removes the highest ordinals first.
    sets.patch(
        "db",
        &PatchParams::default(),
        &Patch::Merge(json!({"spec": {"replicas": 1}})),
    )
    .await
    .unwrap();
    let p = pods.clone();
    eventually("only db-0 left", || {
        let p = p.clone();
        async move {
            let names: Vec<String> = p
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter_map(|p| p.metadata.name)
                .collect();
            names == ["db-0"]
        }
    })
    .await;
}

#[tokio::test]
async fn daemonset_runs_on_tainted_nodes_only_when_tolerated() {
    let (_cluster, _served, client) = cluster_with(&[
        SimNode::new("plain", "4", "8Gi"),
        SimNode::new("gpu", "4", "8Gi").taint("dedicated", "gpu", "NoSchedule"),
    ])
    .await;
    let sets: Api<DaemonSet> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let daemon = |name: &str, tolerations: Value| -> DaemonSet {
        from(json!({
            "metadata": {"name": name},
            "spec": {
                "selector": {"matchLabels": {"app": name}},
                "template": {"metadata": {"labels": {"app": name}},
                    "spec": {"tolerations": tolerations, "containers": [{"name": "agent", "image": "agent:1"}]}}
            }
        }))
    };
    sets.create(&PostParams::default(), &daemon("plain-only", json!([])))
        .await
        .unwrap();
    sets.create(
        &PostParams::default(),
        &daemon(
            "everywhere",
            json!([{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}]),
        ),
    )
    .await
    .unwrap();
    for (name, nodes) in [
        ("plain-only", vec!["plain"]),
        ("everywhere", vec!["gpu", "plain"]),
    ] {
        let (s, p) = (sets.clone(), pods.clone());
        let want = nodes.len() as i32;
        let status = kube_sandbox::testing::eventually_some(
            "daemonset status",
            Duration::from_secs(20),
            || {
                let s = s.clone();
                async move {
                    let st = s.get(name).await.unwrap().status?;
                    (st.number_ready == want && st.number_available == Some(want)).then_some(st)
                }
            },
        )
        .await;
        assert_eq!(status.desired_number_scheduled, want);
        assert_eq!(status.current_number_scheduled, want);
        assert_eq!(status.updated_number_scheduled, Some(want));
        assert_eq!(status.number_misscheduled, 0);
        let uid = s.get(name).await.unwrap().metadata.uid.unwrap();
        let mut placed: Vec<String> = owned_pods(&p, &uid)
            .await
            .into_iter()
            .map(|p| p.spec.unwrap().node_name.unwrap())
            .collect();
        placed.sort();
        assert_eq!(placed, nodes, "{name}");
    }
}

#[tokio::test]
async fn job_runs_its_completions_with_bounded_parallelism() {
    let (_cluster, _served, client) = cluster().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let job: Job = from(json!({
        "metadata": {"name": "batch"},
        "spec": {"completions": 3, "parallelism": 2,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox", "command": ["sh", "-c", "echo done"]}]}}}
    }));
    let rv = jobs
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let mut stream = jobs
        .watch(&WatchParams::default(), &rv)
        .await
        .unwrap()
        .boxed();
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let mut most_active = 0;
    let done = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(event) = stream.try_next().await.unwrap() {
            let (WatchEvent::Added(j) | WatchEvent::Modified(j)) = event else {
                continue;
            };
            let status = j.status.clone().unwrap_or_default();
            most_active = most_active.max(status.active.unwrap_or(0));
            if status
                .conditions
                .iter()
                .flatten()
                .any(|c| c.type_ == "Complete" && c.status == "True")
            {
                return j;
            }
        }
        panic!("the watch ended first");
    })
    .await
    .expect("the job completes");
    assert!(most_active <= 2, "{most_active} pods active at once");
    assert_eq!(most_active, 2);
    let status = done.status.unwrap();
    assert_eq!(status.succeeded, Some(3));
    assert_eq!(status.active, None);
    assert!(status.start_time.is_some() && status.completion_time.is_some());
    let conditions = status.conditions.unwrap();
    let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
    assert_eq!(types, ["SuccessCriteriaMet", "Complete"]);
    assert_eq!(conditions[1].reason.as_deref(), Some("CompletionsReached"));
    let finished = pods
        .list(&ListParams::default().labels("batch.kubernetes.io/job-name=batch"))
        .await
        .unwrap();
    assert_eq!(finished.items.len(), 3);
    for pod in finished.items {
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Succeeded"));
        let terminated = status.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(terminated.exit_code, 0);
        assert_eq!(terminated.reason.as_deref(), Some("Completed"));
    }
}

#[tokio::test]
async fn failing_job_stops_at_its_backoff_limit() {
    let (_cluster, _served, client) = cluster().await;
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    let job: Job = from(json!({
        "metadata": {"name": "broken"},
        "spec": {"backoffLimit": 1,
            "template": {"spec": {"restartPolicy": "Never",
                "containers": [{"name": "work", "image": "busybox", "command": ["sh", "-c", "exit 3"]}]}}}
    }));
    jobs.create(&PostParams::default(), &job).await.unwrap();
    let j = jobs.clone();
    let status =
        kube_sandbox::testing::eventually_some("job failed", Duration::from_secs(20), || {
            let j = j.clone();
            async move {
                let status = j.get("broken").await.unwrap().status?;
                status
                    .conditions
                    .iter()
                    .flatten()
                    .any(|c| c.type_ == "Failed" && c.status == "True")
                    .then_some(status)
            }
        })
        .await;
    assert_eq!(status.failed, Some(2));
    assert_eq!(status.succeeded, None);
    let failed = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "Failed")
        .unwrap();
    assert_eq!(failed.reason.as_deref(), Some("BackoffLimitExceeded"));
    let listed = pods
        .list(&ListParams::default().labels("job-name=broken"))
        .await
        .unwrap();
    assert_eq!(listed.items.len(), 2);
    for pod in listed.items {
        let status = pod.status.unwrap();
        assert_eq!(status.phase.as_deref(), Some("Failed"));
        let terminated = status.container_statuses.unwrap()[0]
            .state
            .clone()
            .unwrap()
            .terminated
            .unwrap();
        assert_eq!(terminated.exit_code, 3);
    }
}

#[tokio::test]
async fn cronjob_creates_a_job_at_its_scheduled_minute() {
    let (cluster, _served, client) = cluster().await;
    let cronjobs: Api<CronJob> = Api::namespaced(client.clone(), "default");
    let jobs: Api<Job> = Api::namespaced(client.clone(), "default");
    let cronjob: CronJob = from(json!({
        "metadata": {"name": "tick"},
        "spec": {"schedule": "*/5 * * * *", "concurrencyPolicy": "Forbid", "successfulJobsHistoryLimit": 1,
            "jobTemplate": {"metadata": {"labels": {"app": "tick"}}, "spec": {"template": {"spec": {
                "restartPolicy": "OnFailure",
                "containers": [{"name": "tick", "image": "busybox", "command": ["date"]}]}}}}}
    }));
    let created = cronjobs
        .create(&PostParams::default(), &cronjob)
        .await
        .unwrap();
    // Ten minutes later at least one five-minute mark has passed.
    cluster.advance_clock(Duration::from_secs(600));
    let j = jobs.clone();
    let job = kube_sandbox::testing::eventually_some(
        "a job from the cronjob",
        Duration::from_secs(20),
        || {
            let j = j.clone();
            async move {
                j.list(&ListParams::default())
                    .await
                    .unwrap()
                    .items
                    .into_iter()
                    .next()
            }
        },
    )
    .await;
    let name = job.metadata.name.clone().unwrap();
    let minutes: i64 = name.strip_prefix("tick-").unwrap().parse().unwrap();
    assert_eq!(minutes % 5, 0, "{name} is not at a five-minute mark");
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (owner.kind.as_str(), owner.uid.as_str()),
        ("CronJob", created.metadata.uid.as_deref().unwrap())
    );
    assert_eq!(job.metadata.labels.as_ref().unwrap()["app"], "tick");
    assert!(
        job.metadata
            .annotations
            .as_ref()
            .unwrap()
            .contains_key("batch.kubernetes.io/cronjob-scheduled-timestamp")
    );
    let c = cronjobs.clone();
    eventually("cronjob status", || {
        let c = c.clone();
        async move {
            let status = c.get("tick").await.unwrap().status.unwrap_or_default();
            status.last_schedule_time.is_some()
        }
    })
    .await;
    // Each later five-minute mark makes one more Job; finished ones beyond
    // successfulJobsHistoryLimit (1) go.
    let mut names = vec![name.clone()];
    for _ in 0..2 {
        let j = jobs.clone();
        let seen = names.clone();
        cluster.advance_clock(Duration::from_secs(300));
        let next =
            kube_sandbox::testing::eventually_some("the next job", Duration::from_secs(20), || {
                let (j, seen) = (j.clone(), seen.clone());
                async move {
                    j.list(&ListParams::default())
                        .await
                        .unwrap()
                        .items
                        .into_iter()
                        .filter_map(|job| job.metadata.name)
                        .find(|n| !seen.contains(n))
                }
            })
            .await;
        names.push(next);
    }
    let newest = names.last().unwrap().clone();
    let j = jobs.clone();
    eventually("only the newest finished job is kept", || {
        let (j, newest) = (j.clone(), newest.clone());
        async move {
            let left: Vec<String> = j
                .list(&ListParams::default())
                .await
                .unwrap()
                .items
                .into_iter()
                .filter(|job| job.metadata.deletion_timestamp.is_none())
                .filter_map(|job| job.metadata.name)
                .collect();
            left == [newest]
        }
    })
    .await;
    // The job runs to completion and the CronJob records it.
    let c = cronjobs.clone();
    eventually("last successful time", || {
        let c = c.clone();
        async move {
            let status = c.get("tick").await.unwrap().status.unwrap_or_default();
            status.last_successful_time.is_some() && status.active.is_none()
        }
    })
    .await;
}

#[tokio::test]
async fn services_get_endpoint_slices_that_follow_their_pods() {
    let (_cluster, _served, client) = cluster().await;
    let deployments: Api<Deployment> = Api::namespaced(client.clone(), "default");
    let services: Api<Service> = Api::namespaced(client.clone(), "default");
    let slices: Api<EndpointSlice> = Api::namespaced(client.clone(), "default");
    let endpoints: Api<Endpoints> = Api::namespaced(client.clone(), "default");
    let pods: Api<Pod> = Api::namespaced(client.clone(), "default");
    deployments
        .create(&PostParams::default(), &deployment("web", 2, json!({})))
        .await
        .unwrap();
    let service: Service = from(json!({
        "metadata": {"name": "web"},
        "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}
    }));
    let svc = services
        .create(&PostParams::default(), &service)
        .await
        .unwrap();
    for replicas in [2usize, 3] {
        if replicas == 3 {
            deployments
                .patch(
                    "web",
                    &PatchParams::default(),
                    &Patch::Merge(json!({"spec": {"replicas": 3}})),
                )
                .await
                .unwrap();
        }
        let (s, p) = (slices.clone(), pods.clone());
        let slice = kube_sandbox::testing::eventually_some(
            "slice with every ready pod",
            Duration::from_secs(20),
            || {
                let (s, p) = (s.clone(), p.clone());
                async move {
                    let mut ips: Vec<String> = p
                        .list(&ListParams::default().labels("app=web"))
                        .await
                        .unwrap()
                        .items
                        .into_iter()
                        .filter(is_ready)
                        .filter_map(|p| p.status.and_then(|s| s.pod_ip))
                        .collect();
                    ips.sort();
                    if ips.len() != replicas {
                        return None;
                    }
                    let listed = s
                        .list(&ListParams::default().labels("kubernetes.io/service-name=web"))
                        .await
                        .unwrap()
                        .items;
                    let [slice] = listed.as_slice() else {
                        return None;
                    };
                    let mut addresses: Vec<String> = slice
                        .endpoints
                        .iter()
                        .filter(|e| e.conditions.as_ref().and_then(|c| c.ready) == Some(true))
                        .flat_map(|e| e.addresses.clone())
                        .collect();
                    addresses.sort();
                    (addresses == ips).then(|| slice.clone())
                }
            },
        )
        .await;
        let name = slice.metadata.name.clone().unwrap();
        assert_eq!(name.len(), "web-".len() + 5, "{name}");
        assert_eq!(
            slice.metadata.labels.as_ref().unwrap()["endpointslice.kubernetes.io/managed-by"],
            "endpointslice-controller.k8s.io"
        );
        assert_eq!(slice.address_type, "IPv4");
        let port = &slice.ports.as_ref().unwrap()[0];
        assert_eq!(
            (port.name.as_deref(), port.port),
            (Some("http"), Some(8080))
        );
        let endpoint = &slice.endpoints[0];
        assert!(endpoint.node_name.is_some());
        assert_eq!(
            endpoint.target_ref.as_ref().unwrap().kind.as_deref(),
            Some("Pod")
        );
        let owner = &slice.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(Some(&owner.uid), svc.meta().uid.as_ref());
        // The legacy Endpoints object lists the same addresses.
        let e = endpoints.clone();
        eventually("endpoints object", || {
            let e = e.clone();
            async move {
                e.get("web")
                    .await
                    .ok()
                    .and_then(|e| e.subsets)
                    .is_some_and(|s| {
                        s.iter()
                            .map(|s| s.addresses.as_ref().map_or(0, Vec::len))
                            .sum::<usize>()
                            == replicas
                    })
            }
        })
        .await;
    }
}
