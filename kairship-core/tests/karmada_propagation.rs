//! The emulated Karmada (`karmada_sim::propagation` with the cluster-status and
//! execution-space emulations) held against a real Karmada v1.19: the application recorded in
//! `tests/data/karmada-v1.19/` (same templates, policy, overrides and members) is created in
//! a kube-sandbox Karmada API server served over HTTP with two kube-sandbox members, and the
//! ResourceBindings, Works, member objects and aggregated status it produces are compared with
//! the recorded ones field by field, once what is instance-specific (uids, permanent ids,
//! times, resourceVersions, generations, managedFields) is set aside.
//!
//! The members are as recorded: `msb` runs pods on 3 nodes, `mreal` has no node able to run
//! them (the recording's mreal had no kubelet), so its replica stays unavailable.

#![allow(clippy::unwrap_used)]

mod common;

use std::time::Duration;

use common::{CLUSTER_CRD, eventually, load_crd};
use kairship_core::karmada_sim::{
    cluster_health, cluster_status, cluster_strategy, execution_space, propagation,
};
use kube::api::{ApiResource, DeleteParams, DynamicObject, GroupVersionKind, PostParams};
use kube::{Api, Client};
use kube_sandbox::{ServeOptions, Served, SimNode};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

const LIMIT: Duration = Duration::from_secs(30);

fn recorded(file: &str) -> Value {
    let path = format!(
        "{}/tests/data/karmada-v1.19/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap()
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

fn rb() -> ApiResource {
    resource(
        "work.karmada.io",
        "v1alpha2",
        "ResourceBinding",
        "resourcebindings",
    )
}
fn works() -> ApiResource {
    resource("work.karmada.io", "v1alpha1", "Work", "works")
}
fn deployments() -> ApiResource {
    resource("apps", "v1", "Deployment", "deployments")
}
fn services() -> ApiResource {
    resource("", "v1", "Service", "services")
}

struct Env {
    karmada: Client,
    members: Vec<(String, kube_sandbox::Cluster, Served)>,
    _instance: (kube_sandbox::Cluster, Served),
    shutdown: CancellationToken,
}

impl Drop for Env {
    fn drop(&mut self) {
        self.shutdown.cancel();
    }
}

async fn create(client: &Client, resource: &ApiResource, namespace: Option<&str>, body: Value) {
    let api: Api<DynamicObject> = match namespace {
        Some(ns) => Api::namespaced_with(client.clone(), ns, resource),
        None => Api::all_with(client.clone(), resource),
    };
    let object: DynamicObject = serde_json::from_value(body).unwrap();
    api.create(&PostParams::default(), &object).await.unwrap();
}

/// A member served over HTTP with `nodes` nodes of 4 CPU / 8Gi.
async fn member(name: &str, nodes: usize) -> (String, kube_sandbox::Cluster, Served) {
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        kube_sandbox::ClusterOptions {
            workload_controllers: true,
            ..kube_sandbox::ClusterOptions::default()
        },
    );
    for i in 1..=nodes {
        cluster
            .add_node(&SimNode::new(&format!("{name}-node-{i}"), "4", "8Gi"))
            .unwrap();
    }
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    (name.to_owned(), cluster, served)
}

impl Env {
    async fn start() -> Env {
        // With Karmada's Cluster strategy, as karmada-aggregated-apiserver serves Clusters.
        let instance = kube_sandbox::Cluster::with_options(
            "karmada",
            cluster_strategy::with_cluster_strategy(kube_sandbox::ClusterOptions::default()),
        );
        let mut crds = vec![serde_json::from_str(CLUSTER_CRD).unwrap()];
        for file in [
            "karmada/policy.karmada.io_propagationpolicies.yaml",
            "karmada/policy.karmada.io_clusterpropagationpolicies.yaml",
            "karmada/policy.karmada.io_overridepolicies.yaml",
            "karmada/policy.karmada.io_clusteroverridepolicies.yaml",
            "karmada/work.karmada.io_resourcebindings.yaml",
            "karmada/work.karmada.io_clusterresourcebindings.yaml",
            "karmada/work.karmada.io_works.yaml",
        ] {
            crds.push(load_crd(file));
        }
        kube_sandbox::testing::install_crds(&instance.client(), crds).await;
        let served = instance.serve(ServeOptions::default()).await.unwrap();
        let karmada = served.client().await.unwrap();
        let members = vec![member("msb", 3).await, member("mreal", 0).await];
        kube_sandbox::testing::ensure_namespace(&karmada, "karmada-cluster").await;
        let secrets = resource("", "v1", "Secret", "secrets");
        let clusters = resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters");
        for (name, cluster, served) in &members {
            use base64::Engine as _;
            let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
            let ca = served
                .ca_pem
                .clone()
                .unwrap_or_else(|| served.cluster_ca_pem().to_owned());
            create(
                &karmada,
                &secrets,
                Some("karmada-cluster"),
                json!({
                    "apiVersion": "v1", "kind": "Secret",
                    "metadata": {"name": name, "namespace": "karmada-cluster"},
                    "data": {"token": b64(cluster.admin_token()), "caBundle": b64(&ca)}
                }),
            )
            .await;
            create(
                &karmada,
                &clusters,
                None,
                json!({
                    "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
                    "metadata": {"name": name},
                    "spec": {"syncMode": "Push", "apiEndpoint": served.url,
                             "secretRef": {"namespace": "karmada-cluster", "name": name}}
                }),
            )
            .await;
        }
        let shutdown = CancellationToken::new();
        cluster_status::spawn(karmada.clone(), Duration::from_secs(1), shutdown.clone());
        execution_space::spawn(karmada.clone(), Duration::from_secs(1), shutdown.clone());
        propagation::spawn(karmada.clone(), shutdown.clone());
        Env {
            karmada,
            members,
            _instance: (instance, served),
            shutdown,
        }
    }

    fn member(&self, name: &str) -> Client {
        self.members
            .iter()
            .find(|(n, _, _)| n == name)
            .unwrap()
            .1
            .client()
    }
}

/// A recorded object as it was sent: what the API server assigned removed.
fn as_sent(mut object: Value) -> Value {
    for f in [
        "uid",
        "resourceVersion",
        "creationTimestamp",
        "managedFields",
        "generation",
        "finalizers",
    ] {
        object["metadata"].as_object_mut().unwrap().remove(f);
    }
    for l in ["propagationpolicy.karmada.io/permanent-id"] {
        if let Some(labels) = object["metadata"]["labels"].as_object_mut() {
            labels.remove(l);
        }
    }
    if let Some(a) = object["metadata"]
        .get_mut("annotations")
        .and_then(Value::as_object_mut)
    {
        a.retain(|k, _| !k.starts_with("propagationpolicy.karmada.io/"));
        if a.is_empty() {
            object["metadata"]
                .as_object_mut()
                .unwrap()
                .remove("annotations");
        }
    }
    if let Some(o) = object.as_object_mut() {
        o.remove("status");
    }
    if let Some(spec) = object["spec"].as_object_mut() {
        spec.remove("clusterIP");
        spec.remove("clusterIPs");
    }
    object
}

/// Creates the recorded application: namespace, Deployment, Service, the PropagationPolicy
/// and the two OverridePolicies, as they were sent.
async fn create_application(env: &Env) {
    let k = &env.karmada;
    create(
        k,
        &resource("", "v1", "Namespace", "namespaces"),
        None,
        json!({
            "apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": "demo", "labels": {"kubernetes.io/metadata.name": "demo"}}
        }),
    )
    .await;
    create(
        k,
        &deployments(),
        Some("demo"),
        as_sent(recorded("deployment-karmada-shop.json")),
    )
    .await;
    create(
        k,
        &services(),
        Some("demo"),
        as_sent(recorded("service-karmada-shop.json")),
    )
    .await;
    let pp = resource(
        "policy.karmada.io",
        "v1alpha1",
        "PropagationPolicy",
        "propagationpolicies",
    );
    create(
        k,
        &pp,
        Some("demo"),
        as_sent(recorded("propagationpolicy-shop-as-stored.json")),
    )
    .await;
    let op = resource(
        "policy.karmada.io",
        "v1alpha1",
        "OverridePolicy",
        "overridepolicies",
    );
    for f in [
        "overridepolicy-shop-msb-as-stored.json",
        "overridepolicy-shop-mreal-as-stored.json",
    ] {
        create(k, &op, Some("demo"), as_sent(recorded(f))).await;
    }
}

const PLACEHOLDERS: &[&str] = &[
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "lastTransitionTime",
    "lastScheduledTime",
    "lastUpdateTime",
    "lastProbeTime",
    "startTime",
];
const GENERATIONS: &[&str] = &[
    "generation",
    "observedGeneration",
    "schedulerObservedGeneration",
    "resourceTemplateGeneration",
];

/// `value` without what differs between two instances of the same history: uids, times and
/// resourceVersions dropped, permanent ids and generations made placeholders, JSON held in
/// annotations parsed, managedFields dropped (their managers' names are a separate matter).
fn stable(value: &Value) -> Value {
    match value {
        Value::Object(map) => {
            let mut out = serde_json::Map::new();
            for (k, v) in map {
                if PLACEHOLDERS.contains(&k.as_str()) || k == "managedFields" {
                    continue;
                }
                let v = if GENERATIONS.contains(&k.as_str()) {
                    json!("<generation>")
                } else if k.ends_with("/permanent-id") || k == "resourcetemplate.karmada.io/uid" {
                    json!("<id>")
                } else if k == "resourcetemplate.karmada.io/generation" {
                    json!("<generation>")
                } else if k.starts_with("policy.karmada.io/applied-") {
                    stable(
                        &serde_json::from_str(v.as_str().unwrap_or("null")).unwrap_or(Value::Null),
                    )
                } else {
                    stable(v)
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(list) => Value::Array(list.iter().map(stable).collect()),
        other => other.clone(),
    }
}

/// Compares field by field, listing every difference.
fn differences(path: &str, got: &Value, want: &Value, out: &mut Vec<String>) {
    match (got, want) {
        (Value::Object(g), Value::Object(w)) => {
            for k in g.keys().chain(w.keys().filter(|k| !g.contains_key(*k))) {
                differences(
                    &format!("{path}/{k}"),
                    g.get(k).unwrap_or(&Value::Null),
                    w.get(k).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        (Value::Array(g), Value::Array(w)) if g.len() == w.len() => {
            for (i, (a, b)) in g.iter().zip(w).enumerate() {
                differences(&format!("{path}/{i}"), a, b, out);
            }
        }
        _ if got != want => out.push(format!("{path}: got {got}, recorded {want}")),
        _ => {}
    }
}

fn assert_same(what: &str, got: &Value, want: &Value) {
    let mut out = Vec::new();
    differences("", &stable(got), &stable(want), &mut out);
    assert!(
        out.is_empty(),
        "{what} differs from the recording:\n{}",
        out.join("\n")
    );
}

async fn get(client: &Client, resource: &ApiResource, ns: &str, name: &str) -> Option<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(client.clone(), ns, resource);
    let mut v = serde_json::to_value(api.get_opt(name).await.ok()??).ok()?;
    v["apiVersion"] = json!(resource.api_version);
    v["kind"] = json!(resource.kind);
    Some(v)
}

fn fully_applied(binding: &Value) -> bool {
    binding["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|c| c["type"] == "FullyApplied" && c["status"] == "True")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_recorded_application_propagates_as_karmada_propagated_it() {
    let env = Env::start().await;
    create_application(&env).await;
    let k = env.karmada.clone();

    // Bindings: scheduled and fully applied, with the aggregated status of both members.
    let binding = eventually(
        "the Deployment's binding aggregated from both members",
        LIMIT,
        || async {
            let b = get(&k, &rb(), "demo", "shop-deployment").await?;
            let items = b["status"]["aggregatedStatus"].as_array()?;
            let msb_ready = items
                .iter()
                .any(|i| i["clusterName"] == "msb" && i["status"]["readyReplicas"] == 3);
            let mreal_seen = items
                .iter()
                .any(|i| i["clusterName"] == "mreal" && i["status"]["unavailableReplicas"] == 1);
            (fully_applied(&b) && msb_ready && mreal_seen).then_some(b)
        },
    )
    .await;
    assert_same(
        "ResourceBinding demo/shop-deployment",
        &binding,
        &recorded("resourcebinding-shop-deployment.json"),
    );
    assert_eq!(
        binding["status"]["schedulerObservedGeneration"],
        binding["metadata"]["generation"]
    );
    let service_binding = eventually("the Service's binding", LIMIT, || async {
        let b = get(&k, &rb(), "demo", "shop-service").await?;
        let healthy = b["status"]["aggregatedStatus"]
            .as_array()
            .is_some_and(|i| i.len() == 2);
        (fully_applied(&b) && healthy).then_some(b)
    })
    .await;
    assert_same(
        "ResourceBinding demo/shop-service",
        &service_binding,
        &recorded("resourcebinding-shop-service.json"),
    );

    // The template: claimed by the policy and its status aggregated.
    let template = eventually("the aggregated Deployment status", LIMIT, || async {
        let d = get(&k, &deployments(), "demo", "shop").await?;
        (d["status"]["readyReplicas"] == 3 && d["status"]["unavailableReplicas"] == 1).then_some(d)
    })
    .await;
    let recorded_template = recorded("deployment-karmada-shop.json");
    assert_same(
        "Deployment demo/shop (metadata)",
        &json!({"labels": template["metadata"]["labels"], "annotations": template["metadata"]["annotations"]}),
        &json!({"labels": recorded_template["metadata"]["labels"], "annotations": recorded_template["metadata"]["annotations"]}),
    );
    assert_same(
        "Deployment demo/shop (status)",
        &template["status"],
        &recorded_template["status"],
    );
    assert_eq!(
        template["status"]["observedGeneration"],
        template["metadata"]["generation"]
    );
    let pp_id = template["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"].clone();
    assert_eq!(
        binding["metadata"]["labels"]["propagationpolicy.karmada.io/permanent-id"],
        pp_id
    );

    // Works: the Deployment, Service and Namespace Works of each member, with the overrides.
    for member in ["msb", "mreal"] {
        let space = format!("karmada-es-{member}");
        let list = recorded(&format!("works-karmada-es-{member}.json"));
        for want in list["items"].as_array().unwrap() {
            let name = want["metadata"]["name"].as_str().unwrap();
            // The unified-auth controller's impersonator Works are not emulated.
            if name.starts_with("karmada-impersonator-") {
                continue;
            }
            let got = eventually(
                &format!("Work {space}/{name} with its manifest status"),
                LIMIT,
                || async {
                    let w = get(&k, &works(), &space, name).await?;
                    let statuses = w["status"]["manifestStatuses"].as_array()?;
                    let want_status = &want["status"]["manifestStatuses"][0]["status"];
                    let settled = statuses
                        .first()
                        .is_some_and(|s| stable(&s["status"]) == stable(want_status));
                    settled.then_some(w)
                },
            )
            .await;
            assert_same(&format!("Work {space}/{name}"), &got, want);
            if let Some(rb_id) =
                got["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"].as_str()
            {
                let owner = if name.starts_with("shop-")
                    && got["spec"]["workload"]["manifests"][0]["kind"] == "Deployment"
                {
                    &binding
                } else {
                    &service_binding
                };
                assert_eq!(
                    owner["metadata"]["labels"]["resourcebinding.karmada.io/permanent-id"],
                    rb_id
                );
            }
        }
    }

    // What the members hold.
    for (member, file, resource) in [
        ("msb", "member-msb-deployment-shop.json", deployments()),
        ("mreal", "member-mreal-deployment-shop.json", deployments()),
        ("mreal", "member-mreal-service-shop.json", services()),
    ] {
        let want = recorded(file);
        let got = get(&env.member(member), &resource, "demo", "shop")
            .await
            .unwrap();
        let pick = |o: &Value| {
            let mut labels = o["metadata"]["labels"].clone();
            let mut annotations = o["metadata"]["annotations"].clone();
            // Set by the member's own controllers.
            annotations
                .as_object_mut()
                .map(|a| a.remove("deployment.kubernetes.io/revision"));
            labels
                .as_object_mut()
                .map(|l| l.remove("kubernetes.io/metadata.name"));
            let mut spec = o["spec"].clone();
            for f in ["clusterIP", "clusterIPs"] {
                spec.as_object_mut().map(|s| s.remove(f));
            }
            json!({"labels": labels, "annotations": annotations, "spec": spec})
        };
        assert_same(
            &format!("{member}: {} demo/shop", resource.kind),
            &pick(&got),
            &pick(&want),
        );
        if resource.kind == "Deployment" {
            for f in [
                "replicas",
                "readyReplicas",
                "availableReplicas",
                "updatedReplicas",
                "unavailableReplicas",
            ] {
                assert_eq!(
                    got["status"][f], want["status"][f],
                    "{member}: Deployment status {f}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deleting_the_template_removes_its_works_and_member_objects() {
    let env = Env::start().await;
    create_application(&env).await;
    let k = env.karmada.clone();
    let msb = env.member("msb");
    eventually("the Deployment on msb", LIMIT, || async {
        get(&msb, &deployments(), "demo", "shop").await
    })
    .await;
    let api: Api<DynamicObject> = Api::namespaced_with(k.clone(), "demo", &deployments());
    api.delete("shop", &DeleteParams::foreground())
        .await
        .unwrap();
    eventually(
        "the binding, its Works and the member's Deployment gone",
        LIMIT,
        || async {
            let binding = get(&k, &rb(), "demo", "shop-deployment").await;
            let work = get(&k, &works(), "karmada-es-msb", "shop-84b68648dc").await;
            let on_member = get(&msb, &deployments(), "demo", "shop").await;
            (binding.is_none() && work.is_none() && on_member.is_none()).then_some(())
        },
    )
    .await;
    // The Service stays where it is.
    assert!(get(&msb, &services(), "demo", "shop").await.is_some());
}

fn clusters() -> ApiResource {
    resource("cluster.karmada.io", "v1alpha1", "Cluster", "clusters")
}

async fn cluster(client: &Client, name: &str) -> Option<Value> {
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &clusters());
    serde_json::to_value(api.get_opt(name).await.ok()??).ok()
}

fn ready_status(cluster: &Value) -> Option<&str> {
    cluster["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?["status"]
        .as_str()
}

fn taints(cluster: &Value) -> Vec<Value> {
    cluster["spec"]["taints"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// As recorded, the members were Ready and untainted before the application was created.
async fn members_ready(k: &Client) {
    eventually("both Clusters Ready and untainted", LIMIT, || async {
        for name in ["msb", "mreal"] {
            let c = cluster(k, name).await?;
            if ready_status(&c) != Some("True") || !taints(&c).is_empty() {
                return None;
            }
        }
        Some(())
    })
    .await;
}

async fn events(client: &Client, namespace: &str) -> Vec<Value> {
    let api: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        namespace,
        &resource("", "v1", "Event", "events"),
    );
    match api.list(&Default::default()).await {
        Ok(list) => list
            .items
            .iter()
            .filter_map(|e| serde_json::to_value(e).ok())
            .collect(),
        Err(_) => Vec::new(),
    }
}

/// What identifies a recorded event across runs: who recorded what about which object.
fn event_key(e: &Value) -> String {
    let o = &e["involvedObject"];
    format!(
        "{} {}/{} {} | {} {} | {} | {} | {} | rv:{}",
        o["apiVersion"],
        o["kind"],
        o["name"],
        o["namespace"],
        e["type"],
        e["reason"],
        e["message"],
        e["source"],
        e["reportingComponent"],
        o.get("resourceVersion").is_some()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_application_records_the_events_karmada_recorded() {
    let env = Env::start().await;
    let k = env.karmada.clone();
    members_ready(&k).await;
    create_application(&env).await;
    let want: Vec<Value> = recorded("events-demo.json")["items"]
        .as_array()
        .unwrap()
        .clone();
    let got = eventually("every event the real Karmada recorded", LIMIT, || async {
        let got = events(&k, "demo").await;
        let have: std::collections::BTreeSet<String> = got.iter().map(event_key).collect();
        want.iter()
            .all(|w| have.contains(&event_key(w)))
            .then_some(got)
    })
    .await;
    // About the objects themselves: each reference names the object's uid.
    let uid = |resource: &ApiResource, name: &str| {
        let k = k.clone();
        let resource = resource.clone();
        let name = name.to_owned();
        async move { get(&k, &resource, "demo", &name).await.unwrap()["metadata"]["uid"].clone() }
    };
    let uids = [
        ("Deployment", "shop", uid(&deployments(), "shop").await),
        ("Service", "shop", uid(&services(), "shop").await),
        (
            "ResourceBinding",
            "shop-deployment",
            uid(&rb(), "shop-deployment").await,
        ),
        (
            "ResourceBinding",
            "shop-service",
            uid(&rb(), "shop-service").await,
        ),
    ];
    let recorded_kinds: std::collections::BTreeSet<(String, String)> = want
        .iter()
        .map(|w| {
            (
                w["source"]["component"].to_string(),
                w["reason"].to_string(),
            )
        })
        .collect();
    for e in &got {
        let o = &e["involvedObject"];
        let (_, _, want_uid) = uids
            .iter()
            .find(|(kind, name, _)| o["kind"] == *kind && o["name"] == *name)
            .unwrap_or_else(|| panic!("an event about an object of the application: {e}"));
        assert_eq!(&o["uid"], want_uid, "{e}");
        // Nothing Karmada did not record, and no failure on the way.
        assert!(
            recorded_kinds.contains(&(
                e["source"]["component"].to_string(),
                e["reason"].to_string()
            )),
            "an event of a kind the real Karmada did not record: {e}"
        );
        assert_eq!(e["type"], "Normal", "{e}");
        let name = e["metadata"]["name"].as_str().unwrap();
        let (prefix, nanos) = name.rsplit_once('.').unwrap();
        assert_eq!(prefix, o["name"].as_str().unwrap());
        assert!(u64::from_str_radix(nanos, 16).is_ok(), "{name}");
        assert!(e["count"].as_i64().unwrap() >= 1);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_member_that_stops_answering_is_tainted_and_left_out_of_placements() {
    let env = Env::start().await;
    let k = env.karmada.clone();
    members_ready(&k).await;
    // events-cluster-mreal.json: the execution space's event, on the Cluster, in `default`.
    eventually("the execution space events", LIMIT, || async {
        let all = events(&k, "default").await;
        ["msb", "mreal"]
            .iter()
            .all(|m| {
                all.iter().any(|e| {
                    e["involvedObject"]["kind"] == "Cluster"
                        && e["involvedObject"]["name"] == *m
                        && e["reason"] == "CreateExecutionSpaceSucceed"
                        && e["message"]
                            == format!("Created execution space(karmada-es-{m}) for cluster({m}).")
                        && e["source"]["component"] == "cluster-controller"
                })
            })
            .then_some(())
    })
    .await;

    let mreal = &env.members.iter().find(|(n, _, _)| n == "mreal").unwrap().2;
    mreal.stop();
    // cluster-msb-after-member-stopped.json: Ready False, then the not-ready taint.
    let stopped = eventually("mreal not ready and tainted", LIMIT, || async {
        let c = cluster(&k, "mreal").await?;
        (ready_status(&c) == Some("False") && !taints(&c).is_empty()).then_some(c)
    })
    .await;
    let taint = &taints(&stopped)[0];
    assert_eq!(taint["key"], "cluster.karmada.io/not-ready");
    assert_eq!(taint["effect"], "NoSchedule");
    assert!(taint["timeAdded"].is_string(), "{taint}");
    eventually("the taint's event", LIMIT, || async {
        events(&k, "default")
            .await
            .into_iter()
            .find(|e| {
                e["involvedObject"]["name"] == "mreal"
                    && e["reason"] == "TaintClusterSucceed"
                    && e["message"]
                        == "Taint cluster succeed: cluster now has taints([{Key:cluster.karmada.io/not-ready,Effect:NoSchedule}])."
            })
    })
    .await;

    // The recorded application (static weights msb:3 mreal:1) now goes to msb alone.
    create_application(&env).await;
    let binding = eventually("the Deployment's binding scheduled", LIMIT, || async {
        let b = get(&k, &rb(), "demo", "shop-deployment").await?;
        b["spec"]["clusters"]
            .as_array()
            .is_some_and(|c| !c.is_empty())
            .then_some(b)
    })
    .await;
    assert_eq!(
        binding["spec"]["clusters"],
        json!([{"name": "msb", "replicas": 4}])
    );
    eventually("the scheduler's event", LIMIT, || async {
        events(&k, "demo").await.into_iter().find(|e| {
            e["involvedObject"]["kind"] == "ResourceBinding"
                && e["reason"] == "ScheduleBindingSucceed"
                && e["message"] == "Binding has been scheduled successfully. Result: {msb:4}"
        })
    })
    .await;
}

/// The Ready condition of `cluster`, without its time.
fn ready_without_time(cluster: &Value) -> Option<Value> {
    let mut ready = cluster["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == "Ready")?
        .clone();
    ready.as_object_mut()?.remove("lastTransitionTime");
    Some(ready)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_quiet_pull_member_turns_unknown_as_karmada_marks_it() {
    let karmada_cluster = kube_sandbox::Cluster::new("karmada");
    kube_sandbox::testing::install_crds(
        &karmada_cluster.client(),
        vec![serde_json::from_str(CLUSTER_CRD).unwrap()],
    )
    .await;
    let served = karmada_cluster
        .serve(ServeOptions::default())
        .await
        .unwrap();
    let k = served.client().await.unwrap();
    kube_sandbox::testing::ensure_namespace(&k, "karmada-cluster").await;
    let shutdown = CancellationToken::new();
    let _stop = shutdown.clone().drop_guard();
    // Grace periods of one second instead of Karmada's 60 s and 40 s.
    let graces = cluster_health::Graces {
        startup: Duration::from_secs(1),
        monitor: Duration::from_secs(1),
    };
    execution_space::spawn_with(
        k.clone(),
        Duration::from_millis(300),
        graces,
        shutdown.clone(),
    );

    // cluster-edge-1-pull-no-agent.json: a Pull Cluster whose agent never ran.
    let recorded = recorded("cluster-edge-1-pull-no-agent.json");
    create(
        &k,
        &clusters(),
        None,
        json!({"apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
            "metadata": {"name": "edge-1"},
            "spec": {"syncMode": "Pull", "region": "eu"}}),
    )
    .await;
    let never = eventually("edge-1 marked as never updated", LIMIT, || async {
        let c = cluster(&k, "edge-1").await?;
        (ready_status(&c) == Some("Unknown") && !taints(&c).is_empty()).then_some(c)
    })
    .await;
    assert_eq!(
        ready_without_time(&never),
        ready_without_time(&recorded),
        "{never}"
    );
    let key_and_effect = |c: &Value| -> Vec<(Value, Value)> {
        taints(c)
            .iter()
            .map(|t| (t["key"].clone(), t["effect"].clone()))
            .collect()
    };
    assert_eq!(key_and_effect(&never), key_and_effect(&recorded));
    let created: jiff::Timestamp = never["metadata"]["creationTimestamp"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let marked: jiff::Timestamp = never["status"]["conditions"][0]["lastTransitionTime"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    assert!(marked > created, "marked {marked}, created {created}");

    // An agent posts Ready and renews its Lease: the member stays Ready, the taint goes.
    let now = || {
        jiff::Timestamp::now()
            .strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
            .to_string()
    };
    let api: Api<DynamicObject> = Api::all_with(k.clone(), &clusters());
    api.patch_status(
        "edge-1",
        &kube::api::PatchParams::default(),
        &kube::api::Patch::Merge(json!({"status": {"conditions": [{"type": "Ready",
            "status": "True", "reason": "ClusterReady",
            "message": "cluster is healthy and ready to accept workloads",
            "lastTransitionTime": jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()}]}})),
    )
    .await
    .unwrap();
    let leases: Api<DynamicObject> = Api::namespaced_with(
        k.clone(),
        "karmada-cluster",
        &resource("coordination.k8s.io", "v1", "Lease", "leases"),
    );
    create(
        &k,
        &resource("coordination.k8s.io", "v1", "Lease", "leases"),
        Some("karmada-cluster"),
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": "edge-1", "namespace": "karmada-cluster"},
            "spec": {"holderIdentity": "edge-1", "leaseDurationSeconds": 40, "renewTime": now()}}),
    )
    .await;
    let renew_until = std::time::Instant::now() + Duration::from_secs(4);
    while std::time::Instant::now() < renew_until {
        leases
            .patch(
                "edge-1",
                &kube::api::PatchParams::default(),
                &kube::api::Patch::Merge(json!({"spec": {"renewTime": now()}})),
            )
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let renewing = cluster(&k, "edge-1").await.unwrap();
    assert_eq!(ready_status(&renewing), Some("True"), "{renewing}");
    eventually("the unreachable taint removed", LIMIT, || async {
        taints(&cluster(&k, "edge-1").await?)
            .is_empty()
            .then_some(())
    })
    .await;

    // The agent stops: after the monitor grace, Unknown and tainted again.
    let stopped = eventually("edge-1 marked as stopped", LIMIT, || async {
        let c = cluster(&k, "edge-1").await?;
        (ready_status(&c) == Some("Unknown") && !taints(&c).is_empty()).then_some(c)
    })
    .await;
    let ready = ready_without_time(&stopped).unwrap();
    assert_eq!(ready["reason"], "ClusterStatusUnknown", "{stopped}");
    assert_eq!(
        ready["message"],
        "Cluster status controller stopped posting cluster status."
    );
}

/// The conditions of `cluster` without their times.
fn conditions_without_time(cluster: &Value) -> Vec<Value> {
    cluster["status"]["conditions"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .map(|mut c| {
            if let Some(c) = c.as_object_mut() {
                c.remove("lastTransitionTime");
            }
            c
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_member_s_status_is_collected_as_karmada_collected_it() {
    let env = Env::start().await;
    members_ready(&env.karmada).await;
    // cluster-msb-push-kube-sandbox.json: the same kube-sandbox member of 3 nodes, joined
    // to a real Karmada.
    let recorded = recorded("cluster-msb-push-kube-sandbox.json");
    let msb = cluster(&env.karmada, "msb").await.unwrap();
    assert_eq!(
        conditions_without_time(&msb),
        conditions_without_time(&recorded)
    );
    assert_eq!(
        msb["status"]["nodeSummary"],
        recorded["status"]["nodeSummary"]
    );
    assert_eq!(
        msb["status"]["resourceSummary"]["allocatable"],
        recorded["status"]["resourceSummary"]["allocatable"]
    );
    // Karmada's default resource models, and the nodes counted by the grade of what is
    // free on them (the recording's 3 pods, one per node, take little: grade 1 for each).
    assert_eq!(
        msb["spec"]["resourceModels"],
        recorded["spec"]["resourceModels"]
    );
    assert_eq!(
        msb["status"]["resourceSummary"]["allocatableModelings"],
        recorded["status"]["resourceSummary"]["allocatableModelings"]
    );
    // What the member serves, per group version: the recording's, except what kube-sandbox
    // has learnt to serve since it was made.
    let served: Vec<Value> = msb["status"]["apiEnablements"].as_array().unwrap().clone();
    let mut missing = Vec::new();
    for want in recorded["status"]["apiEnablements"].as_array().unwrap() {
        let Some(got) = served
            .iter()
            .find(|g| g["groupVersion"] == want["groupVersion"])
        else {
            missing.push(want["groupVersion"].clone());
            continue;
        };
        for resource in want["resources"].as_array().unwrap() {
            if !got["resources"].as_array().unwrap().contains(resource) {
                missing.push(json!([want["groupVersion"], resource]));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "not in the emulated status: {missing:?}"
    );
    let mut order: Vec<&str> = served
        .iter()
        .map(|g| g["groupVersion"].as_str().unwrap())
        .collect();
    let listed = order.clone();
    order.sort();
    assert_eq!(listed, order, "sorted by group version");
}
