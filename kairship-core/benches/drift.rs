//! Drift at scale: a kube-sandbox Karmada instance serving Karmada's cluster proxy, with 1,000
//! propagated Deployments applied to each of 3 kube-sandbox members (all served over loopback
//! HTTP): a Work per Deployment and member in `karmada-es-<member>` and the member's copy, as
//! the execution controller leaves them, one copy in 100 then changed by hand. Reports the
//! time `GetInstanceDrift` takes to compare every copy (the Works from Kairship's cache, each
//! member's Deployments read once through the cluster proxy), best and worst of 5 runs after
//! the cache is warm.
//!
//! `cargo bench -p kairship-core --bench drift`; `KAIRSHIP_BENCH_DRIFT_OBJECTS` changes the
//! count. Prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

#[path = "../tests/common/mod.rs"]
mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use base64::Engine as _;
use common::{CLUSTER_CRD, load_crd};
use kairship_core::access::{AccessError, Authorizer, Caller, InstanceResource, Verb};
use kairship_core::api::{GetInstanceDriftRequest, KairshipApi, KairshipService, ServiceConfig};
use kairship_core::karmada_sim::cluster_proxy::with_cluster_proxy;
use kairship_core::router::{
    DirectBackend, DiscoveryCache, EmbeddedCacheBackend, InstanceWriter, ReadWriteRouter,
    SplitRouter, StaticInstanceClients,
};
use kube::api::{ApiResource, DynamicObject, GroupVersionKind, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::{ClusterOptions, ServeOptions};
use serde_json::{Value, json};

const MEMBERS: [&str; 3] = ["m1", "m2", "m3"];
const INSTANCE: &str = "bench";
const NS: &str = "demo";

struct Everyone;

#[async_trait]
impl Authorizer for Everyone {
    async fn allowed(
        &self,
        _: &Caller,
        _: Verb,
        _: InstanceResource,
        _: Option<&str>,
    ) -> Result<bool, AccessError> {
        Ok(true)
    }
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// Creates as Karmada's controllers write: the field manager of its execution controller, so
/// that the member's defaults belong to a controller, as in a real member.
async fn create(client: &Client, r: &ApiResource, ns: Option<&str>, body: Value) {
    let api: Api<DynamicObject> = match ns {
        Some(ns) => Api::namespaced_with(client.clone(), ns, r),
        None => Api::all_with(client.clone(), r),
    };
    let params = PostParams {
        field_manager: Some("karmada-controller-manager".into()),
        ..PostParams::default()
    };
    api.create(&params, &serde_json::from_value(body).unwrap())
        .await
        .unwrap();
}

fn deployment(i: usize) -> Value {
    let name = format!("app-{i:04}");
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": {"app": name}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": "nginx:1.27",
                    "env": [{"name": "MODE", "value": "bench"}],
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}
    })
}

#[tokio::main]
async fn main() {
    kube_kit::client::install_crypto_provider();
    let objects: usize = std::env::var("KAIRSHIP_BENCH_DRIFT_OBJECTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1000);
    let instance = kube_sandbox::Cluster::with_options(
        INSTANCE,
        with_cluster_proxy(ClusterOptions::default()),
    );
    let admin = instance.client();
    kube_sandbox::testing::install_crds(
        &admin,
        vec![
            serde_json::from_str(CLUSTER_CRD).unwrap(),
            load_crd("karmada/work.karmada.io_works.yaml"),
        ],
    )
    .await;
    kube_sandbox::testing::ensure_namespace(&admin, "karmada-cluster").await;
    let secrets = resource("", "v1", "Secret", "secrets");
    let clusters = resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters");
    let works = resource("work.karmada.io", "v1alpha1", "Work", "works");
    let deployments = resource("apps", "v1", "Deployment", "deployments");
    let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
    let mut members = Vec::new();
    let setup = Instant::now();
    for name in MEMBERS {
        let member = kube_sandbox::Cluster::new(name);
        let served = member.serve(ServeOptions::default()).await.unwrap();
        create(&admin, &secrets, Some("karmada-cluster"), json!({
            "apiVersion": "v1", "kind": "Secret", "metadata": {"name": name, "namespace": "karmada-cluster"},
            "data": {"token": b64(member.admin_token()), "caBundle": b64(served.cluster_ca_pem())}
        }))
        .await;
        create(&admin, &clusters, None, json!({
            "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster", "metadata": {"name": name},
            "spec": {"syncMode": "Push", "apiEndpoint": served.url,
                "secretRef": {"namespace": "karmada-cluster", "name": name},
                "impersonatorSecretRef": {"namespace": "karmada-cluster", "name": name}}
        }))
        .await;
        let space = format!("karmada-es-{name}");
        kube_sandbox::testing::ensure_namespace(&admin, &space).await;
        let client = member.client();
        kube_sandbox::testing::ensure_namespace(&client, NS).await;
        for i in 0..objects {
            let manifest = deployment(i);
            create(&client, &deployments, Some(NS), manifest.clone()).await;
            create(
                &admin,
                &works,
                Some(&space),
                json!({
                    "apiVersion": "work.karmada.io/v1alpha1", "kind": "Work",
                    "metadata": {"name": format!("app-{i:04}-deployment"), "namespace": space},
                    "spec": {"workload": {"manifests": [manifest]}}
                }),
            )
            .await;
        }
        // One copy in 100 changed by hand, as `kubectl set image` would.
        let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), NS, &deployments);
        let by_hand = PatchParams {
            field_manager: Some("kubectl-set".into()),
            ..PatchParams::default()
        };
        for i in (0..objects).step_by(100) {
            let patch = json!({"spec": {"template": {"spec": {"containers": [
                {"name": "main", "image": "nginx:1.28"}]}}}});
            api.patch(&format!("app-{i:04}"), &by_hand, &Patch::Strategic(patch))
                .await
                .unwrap();
        }
        members.push((member, served));
    }
    eprintln!(
        "set up {objects} Deployments x {} members in {:.1}s",
        MEMBERS.len(),
        setup.elapsed().as_secs_f64()
    );

    let served = instance.serve(ServeOptions::default()).await.unwrap();
    let instance_client = Client::try_from(
        kube::Config::from_custom_kubeconfig(served.kubeconfig().unwrap(), &Default::default())
            .await
            .unwrap(),
    )
    .unwrap();
    let clients = Arc::new(StaticInstanceClients::new().with(INSTANCE, instance_client));
    let router: Arc<dyn ReadWriteRouter> = Arc::new(SplitRouter::new(
        Arc::new(EmbeddedCacheBackend::new(clients.clone())),
        Arc::new(DirectBackend::new(clients.clone())),
        Arc::new(InstanceWriter::new(clients.clone())),
    ));
    let host = kube_sandbox::Cluster::new("host");
    let api: Arc<dyn KairshipApi> = Arc::new(
        KairshipService::new(
            host.client(),
            router,
            Arc::new(Everyone),
            ServiceConfig::default(),
        )
        .with_discovery(clients, Arc::new(DiscoveryCache::default())),
    );
    // The member reads impersonate the caller: the members' admin may.
    let caller = Caller::new("system:admin", vec!["system:masters".to_owned()]);
    let req = || GetInstanceDriftRequest {
        instance: INSTANCE.to_owned(),
    };
    // The first call fills the cache with the Works.
    let first = Instant::now();
    let warm = api.instance_drift(&caller, req()).await.unwrap();
    eprintln!(
        "first call (cache filling) {:.2}s: {} compared, {} drifted, {} unreachable",
        first.elapsed().as_secs_f64(),
        warm.checked,
        warm.items.len(),
        warm.unreachable.len()
    );
    let expected_drifted = objects.div_ceil(100);
    let mut times = Vec::new();
    for _ in 0..5 {
        let start = Instant::now();
        let drift = api.instance_drift(&caller, req()).await.unwrap();
        times.push(start.elapsed());
        assert_eq!(drift.checked as usize, objects * MEMBERS.len());
        assert_eq!(
            drift.items.len(),
            expected_drifted,
            "{:?} {:?}",
            drift.unreachable,
            drift.items.get(1)
        );
        assert!(
            drift.items.iter().all(|o| o.members.len() == MEMBERS.len()
                && o.members.iter().all(|m| m.fields.len() == 1))
        );
    }
    times.sort();
    let secs = |d: Duration| d.as_secs_f64();
    println!(
        "BENCH drift_{objects}x{}_seconds={:.3}",
        MEMBERS.len(),
        secs(times[0])
    );
    println!(
        "BENCH drift_{objects}x{}_worst_seconds={:.3}",
        MEMBERS.len(),
        secs(times[times.len() - 1])
    );
    drop(served);
    drop(members);
}
