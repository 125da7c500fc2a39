//! In-cluster networking of mapped pods, end to end against two sandbox clusters: the
//! computing cluster's DNS and API server for mapped pods (and the binding's condition when
//! their Services are missing), Services of `serviceNamespaces` reflected into the worker
//! with their EndpointSlices, bad Services refused with an Event, and a physical pod the
//! worker does not schedule given up on after the timeout; host ports of the worker's own
//! pods kept away from pods that ask for them.

#![allow(clippy::unwrap_used)]

mod common;

use common::{ServedPair, eventually, from_json};

use std::time::Duration;

use k8s_openapi::api::core::v1::{Node, Pod, Service, ServiceAccount};
use k8s_openapi::api::discovery::v1::EndpointSlice;
use k8s_openapi::api::events::v1::Event;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::testing::Sandboxes;
use kube_sandbox::{Served, SimNode};
use kubeocean_core::crd::ClusterBinding;
use kubeocean_core::naming::physical_name;
use kubeocean_core::syncer::topdown::service_reflection::{
    CONDITION_IN_CLUSTER_NETWORK, REASON_NOT_REFLECTED, REASON_SERVICE_MISSING,
};
use kubeocean_core::syncer::{Syncer, SyncerConfig};
use serde_json::{Value, json};

const BINDING: &str = "worker-1";
const MOUNT: &str = "kubeocean-worker";
const NS: &str = "default";
const SHOP: &str = "shop";

struct Env {
    _sandboxes: Sandboxes,
    _served: Vec<Served>,
    c: Client,
    w: Client,
}

/// Two clusters, a binding reflecting namespace `shop`, lent nodes n1 and n2 with their
/// virtual nodes, and a running syncer that gives up on unscheduled physical pods after
/// `scheduling_timeout`.
async fn env(scheduling_timeout: Duration) -> Env {
    let pair = common::served_pair("network-test").await;
    for node in ["n1", "n2"] {
        pair.worker
            .add_node(&SimNode::new(node, "64", "256Gi"))
            .unwrap();
    }
    pair.bind_worker(BINDING, "w1", MOUNT).await;
    let ServedPair {
        sandboxes,
        served_computing,
        served_worker,
        c,
        w,
        ..
    } = pair;
    Api::<ClusterBinding>::all(c.clone())
        .patch(
            BINDING,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "serviceNamespaces": [SHOP] } })),
        )
        .await
        .unwrap();
    for ns in [NS, SHOP] {
        let namespaces: Api<k8s_openapi::api::core::v1::Namespace> = Api::all(c.clone());
        if namespaces.get_opt(ns).await.unwrap().is_none() {
            namespaces
                .create(
                    &PostParams::default(),
                    &from_json(json!({ "metadata": { "name": ns } })),
                )
                .await
                .unwrap();
        }
    }
    Api::<ServiceAccount>::namespaced(c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(json!({ "metadata": { "name": "default" } })),
        )
        .await
        .unwrap();

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
    config.physical_pod_scheduling_timeout = scheduling_timeout;
    tokio::spawn(Syncer::new(c.clone(), config).run(sandboxes.token().clone()));

    let env = Env {
        _sandboxes: sandboxes,
        _served: vec![served_computing, served_worker],
        c,
        w,
    };
    for vnode in ["vnode-w1-n1", "vnode-w1-n2"] {
        eventually("the virtual nodes", || async {
            Api::<Node>::all(env.c.clone())
                .get_opt(vnode)
                .await
                .unwrap()
                .is_some()
        })
        .await;
    }
    env
}

/// Reasons and notes of the Events (any namespace) about the object `kind` `name`.
async fn events(env: &Env, kind: &str, name: &str) -> Vec<(String, String)> {
    Api::<Event>::all(env.c.clone())
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
    let mut note = String::new();
    for _ in 0..300 {
        if let Some((_, n)) = events(env, kind, name)
            .await
            .into_iter()
            .find(|(r, _)| r == reason)
        {
            note = n;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(!note.is_empty(), "no {reason} Event on {kind} {name}");
    note
}

async fn network_condition(env: &Env) -> Option<(String, String, String)> {
    let binding = Api::<ClusterBinding>::all(env.c.clone())
        .get(BINDING)
        .await
        .unwrap();
    binding
        .status?
        .conditions
        .into_iter()
        .find(|c| c.type_ == CONDITION_IN_CLUSTER_NETWORK)
        .map(|c| (c.status, c.reason, c.message))
}

fn pod(name: &str, vnode: &str, env_vars: Value, dns_policy: Option<&str>) -> Pod {
    from_json(json!({
        "metadata": { "name": name, "namespace": NS },
        "spec": {
            "nodeName": vnode,
            "dnsPolicy": dns_policy,
            "containers": [{ "name": "app", "image": "nginx:1", "env": env_vars }],
            "initContainers": [{ "name": "init", "image": "busybox:1" }],
        },
    }))
}

async fn mapped(env: &Env, name: &str) -> Pod {
    let api: Api<Pod> = Api::namespaced(env.w.clone(), MOUNT);
    let physical = physical_name(NS, name);
    let mut found = None;
    for _ in 0..300 {
        if let Some(p) = api.get_opt(&physical).await.unwrap() {
            found = Some(p);
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    found.unwrap_or_else(|| panic!("{name} is never mapped"))
}

fn env_of(pod: &Pod, container: usize, init: bool, name: &str) -> Option<String> {
    let spec = pod.spec.as_ref().unwrap();
    let c = if init {
        &spec.init_containers.as_ref().unwrap()[container]
    } else {
        &spec.containers[container]
    };
    c.env
        .iter()
        .flatten()
        .find(|e| e.name == name)
        .and_then(|e| e.value.clone())
}

#[tokio::test]
async fn mapped_pods_use_the_computing_clusters_dns_and_api_server() {
    let env = env(Duration::from_secs(300)).await;
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);

    // Neither Service exists: the binding says so, and pods are mapped without the rewrite.
    eventually("InClusterNetworkReady=False", || async {
        network_condition(&env)
            .await
            .is_some_and(|(s, r, _)| s == "False" && r == REASON_SERVICE_MISSING)
    })
    .await;
    let (_, _, message) = network_condition(&env).await.unwrap();
    assert!(
        message.contains("kube-system/kube-dns-intranet")
            && message.contains("default/kubernetes-intranet"),
        "{message}"
    );
    let note = wait_event(&env, "ClusterBinding", BINDING, REASON_SERVICE_MISSING).await;
    assert!(note.contains("not found"), "{note}");
    vpods
        .create(
            &PostParams::default(),
            &pod("early", "vnode-w1-n1", json!([]), None),
        )
        .await
        .unwrap();
    let early = mapped(&env, "early").await;
    let spec = early.spec.as_ref().unwrap();
    assert_eq!(spec.dns_policy.as_deref(), Some("ClusterFirst"));
    assert!(spec.host_aliases.is_none());
    assert_eq!(
        env_of(&early, 0, false, "HOSTNAME").as_deref(),
        Some("early")
    );
    assert_eq!(env_of(&early, 0, false, "KUBERNETES_SERVICE_HOST"), None);

    // The Services appear: the DNS one by its ClusterIP, the API server behind a load balancer.
    let kube_system: Api<Service> = Api::namespaced(env.c.clone(), "kube-system");
    let dns = kube_system
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "kube-dns-intranet" },
                "spec": { "ports": [{ "name": "dns", "port": 53, "protocol": "UDP" }] },
            })),
        )
        .await
        .unwrap();
    let dns_ip = dns.spec.unwrap().cluster_ip.unwrap();
    let defaults: Api<Service> = Api::namespaced(env.c.clone(), "default");
    defaults
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "kubernetes-intranet" },
                "spec": { "type": "LoadBalancer", "ports": [{ "port": 6443 }] },
            })),
        )
        .await
        .unwrap();
    defaults
        .patch_status(
            "kubernetes-intranet",
            &PatchParams::default(),
            &Patch::Merge(
                json!({ "status": { "loadBalancer": { "ingress": [{ "ip": "172.16.0.9" }] } } }),
            ),
        )
        .await
        .unwrap();
    eventually("InClusterNetworkReady=True", || async {
        network_condition(&env)
            .await
            .is_some_and(|(s, _, _)| s == "True")
    })
    .await;

    let user_env = json!([{ "name": "KUBERNETES_SERVICE_HOST", "value": "api.example" }]);
    vpods
        .create(
            &PostParams::default(),
            &pod("web", "vnode-w1-n1", user_env, None),
        )
        .await
        .unwrap();
    vpods
        .create(
            &PostParams::default(),
            &pod("own-dns", "vnode-w1-n2", json!([]), Some("Default")),
        )
        .await
        .unwrap();
    let web = mapped(&env, "web").await;
    let spec = web.spec.as_ref().unwrap();
    assert_eq!(spec.dns_policy.as_deref(), Some("None"));
    let dns_config = spec.dns_config.as_ref().unwrap();
    assert_eq!(dns_config.nameservers.as_deref().unwrap(), [dns_ip]);
    assert_eq!(
        dns_config.searches.as_deref().unwrap(),
        [
            "default.svc.cluster.local",
            "svc.cluster.local",
            "cluster.local"
        ]
    );
    let ndots = dns_config.options.as_ref().unwrap();
    assert_eq!(ndots[0].name.as_deref(), Some("ndots"));
    assert_eq!(ndots[0].value.as_deref(), Some("5"));
    let aliases = spec.host_aliases.as_ref().unwrap();
    assert_eq!(aliases[0].ip, "172.16.0.9");
    assert!(
        aliases[0]
            .hostnames
            .as_ref()
            .unwrap()
            .iter()
            .any(|h| h == "kubernetes.default.svc")
    );
    // The user's own host wins; the port and the init container get ours.
    assert_eq!(
        env_of(&web, 0, false, "KUBERNETES_SERVICE_HOST").as_deref(),
        Some("api.example")
    );
    assert_eq!(
        env_of(&web, 0, false, "KUBERNETES_SERVICE_PORT").as_deref(),
        Some("6443")
    );
    assert_eq!(
        env_of(&web, 0, true, "KUBERNETES_SERVICE_HOST").as_deref(),
        Some("172.16.0.9")
    );
    assert_eq!(env_of(&web, 0, true, "HOSTNAME").as_deref(), Some("web"));

    let own = mapped(&env, "own-dns").await;
    let spec = own.spec.as_ref().unwrap();
    assert_eq!(spec.dns_policy.as_deref(), Some("Default"));
    assert!(spec.dns_config.is_none());

    // The pod mapped before the Services existed is left as it was (pod DNS is immutable).
    let early_again = mapped(&env, "early").await;
    assert_eq!(
        early_again.spec.unwrap().dns_policy.as_deref(),
        Some("ClusterFirst")
    );
}

fn endpoint_slice(service: &str, name: &str, ips: &[&str]) -> EndpointSlice {
    from_json(json!({
        "metadata": { "name": name, "namespace": SHOP, "labels": {
            "kubernetes.io/service-name": service,
            "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io" } },
        "addressType": "IPv4",
        "endpoints": ips.iter().enumerate().map(|(i, ip)| json!({
            "addresses": [ip], "conditions": { "ready": true },
            "nodeName": "vnode-w1-n1",
            "targetRef": { "kind": "Pod", "namespace": SHOP, "name": format!("{service}-{i}") },
        })).collect::<Vec<_>>(),
        "ports": [{ "name": "pg", "port": 5432, "protocol": "TCP" }],
    }))
}

/// Addresses of the worker slices of reflected Service `shop/<service>`.
async fn worker_addresses(env: &Env, service: &str) -> Vec<String> {
    let label = format!(
        "kubernetes.io/service-name={}",
        physical_name(SHOP, service)
    );
    let mut ips: Vec<String> = Api::<EndpointSlice>::namespaced(env.w.clone(), MOUNT)
        .list(&ListParams::default().labels(&label))
        .await
        .unwrap()
        .items
        .into_iter()
        .flat_map(|s| s.endpoints.into_iter().flat_map(|e| e.addresses))
        .collect();
    ips.sort();
    ips
}

async fn worker_service(env: &Env, ns: &str, name: &str) -> Option<Service> {
    Api::<Service>::namespaced(env.w.clone(), MOUNT)
        .get_opt(&physical_name(ns, name))
        .await
        .unwrap()
}

#[tokio::test]
async fn services_of_service_namespaces_are_reflected_with_their_endpoints() {
    let env = env(Duration::from_secs(300)).await;
    let services: Api<Service> = Api::namespaced(env.c.clone(), SHOP);
    let slices: Api<EndpointSlice> = Api::namespaced(env.c.clone(), SHOP);
    let db = services
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "db" },
                "spec": { "selector": { "app": "db" },
                    "ports": [{ "name": "pg", "port": 5432, "targetPort": 5432, "protocol": "TCP" }] },
            })),
        )
        .await
        .unwrap();
    let db_ip = db.spec.unwrap().cluster_ip.unwrap();
    // Three ready pods, as the EndpointSlice controller would write them.
    slices
        .create(
            &PostParams::default(),
            &endpoint_slice(
                "db",
                "db-abcde",
                &["10.244.1.1", "10.244.1.2", "10.244.1.3"],
            ),
        )
        .await
        .unwrap();
    // A Service of a namespace that is not reflected.
    Api::<Service>::namespaced(env.c.clone(), NS)
        .create(
            &PostParams::default(),
            &from_json(
                json!({ "metadata": { "name": "web" }, "spec": { "ports": [{ "port": 80 }] } }),
            ),
        )
        .await
        .unwrap();

    eventually("the three endpoints in the worker", || async {
        worker_addresses(&env, "db").await == ["10.244.1.1", "10.244.1.2", "10.244.1.3"]
    })
    .await;
    let reflected = worker_service(&env, SHOP, "db").await.unwrap();
    let spec = reflected.spec.unwrap();
    assert_eq!(
        spec.cluster_ip.as_deref(),
        Some(db_ip.as_str()),
        "the same ClusterIP"
    );
    assert_eq!(spec.selector, None);
    assert_eq!(spec.ports.unwrap()[0].port, 5432);
    let worker_slice = Api::<EndpointSlice>::namespaced(env.w.clone(), MOUNT)
        .get(&physical_name(SHOP, "db-abcde"))
        .await
        .unwrap();
    let labels = worker_slice.metadata.labels.unwrap();
    assert_eq!(
        labels["endpointslice.kubernetes.io/managed-by"],
        "kubeocean.io-syncer"
    );
    assert!(
        worker_slice
            .endpoints
            .iter()
            .all(|e| e.node_name.is_none() && e.target_ref.is_none())
    );
    assert!(
        worker_service(&env, NS, "web").await.is_none(),
        "default is not a serviceNamespace"
    );

    // Scale up to five, then down to one.
    slices
        .replace(
            "db-abcde",
            &PostParams::default(),
            &endpoint_slice(
                "db",
                "db-abcde",
                &[
                    "10.244.1.1",
                    "10.244.1.2",
                    "10.244.1.3",
                    "10.244.2.1",
                    "10.244.2.2",
                ],
            ),
        )
        .await
        .unwrap();
    eventually("five endpoints", || async {
        worker_addresses(&env, "db").await.len() == 5
    })
    .await;
    slices
        .replace(
            "db-abcde",
            &PostParams::default(),
            &endpoint_slice("db", "db-abcde", &["10.244.2.2"]),
        )
        .await
        .unwrap();
    eventually("one endpoint", || async {
        worker_addresses(&env, "db").await == ["10.244.2.2"]
    })
    .await;

    // A copy deleted behind our back comes back.
    Api::<EndpointSlice>::namespaced(env.w.clone(), MOUNT)
        .delete(&physical_name(SHOP, "db-abcde"), &DeleteParams::default())
        .await
        .unwrap();
    eventually("the slice restored", || async {
        worker_addresses(&env, "db").await == ["10.244.2.2"]
    })
    .await;

    // The Service is deleted (its slices go with it, as the garbage collector would do).
    services
        .delete("db", &DeleteParams::default())
        .await
        .unwrap();
    slices
        .delete("db-abcde", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the reflection removed", || async {
        worker_service(&env, SHOP, "db").await.is_none()
            && worker_addresses(&env, "db").await.is_empty()
    })
    .await;

    // A namespace dropped from serviceNamespaces takes its reflections with it.
    services
        .create(
            &PostParams::default(),
            &from_json(
                json!({ "metadata": { "name": "cache" }, "spec": { "ports": [{ "port": 6379 }] } }),
            ),
        )
        .await
        .unwrap();
    eventually("cache reflected", || async {
        worker_service(&env, SHOP, "cache").await.is_some()
    })
    .await;
    Api::<ClusterBinding>::all(env.c.clone())
        .patch(
            BINDING,
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "serviceNamespaces": [] } })),
        )
        .await
        .unwrap();
    eventually("cache removed", || async {
        worker_service(&env, SHOP, "cache").await.is_none()
    })
    .await;
    assert!(
        services.get_opt("cache").await.unwrap().is_some(),
        "the computing cluster's Service is untouched"
    );
}

#[tokio::test]
async fn bad_services_get_an_event_and_nothing_in_the_worker() {
    let env = env(Duration::from_secs(300)).await;
    let services: Api<Service> = Api::namespaced(env.c.clone(), SHOP);
    for (name, spec) in [
        (
            "external",
            json!({ "type": "ExternalName", "externalName": "db.example.com" }),
        ),
        ("portless", json!({ "selector": { "app": "x" } })),
        (
            "headless",
            json!({ "clusterIP": "None", "selector": { "app": "h" } }),
        ),
    ] {
        services
            .create(
                &PostParams::default(),
                &from_json(json!({ "metadata": { "name": name }, "spec": spec })),
            )
            .await
            .unwrap();
    }
    Api::<EndpointSlice>::namespaced(env.c.clone(), SHOP)
        .create(
            &PostParams::default(),
            &endpoint_slice("headless", "headless-1", &["10.244.3.1", "10.244.3.2"]),
        )
        .await
        .unwrap();

    let note = wait_event(&env, "Service", "external", REASON_NOT_REFLECTED).await;
    assert!(note.contains("ExternalName"), "{note}");
    let note = wait_event(&env, "Service", "portless", REASON_NOT_REFLECTED).await;
    assert!(note.contains("no port"), "{note}");
    // A headless Service is reflected headless, with its endpoints.
    eventually("the headless Service reflected", || async {
        worker_addresses(&env, "headless").await == ["10.244.3.1", "10.244.3.2"]
    })
    .await;
    let headless = worker_service(&env, SHOP, "headless").await.unwrap();
    assert_eq!(headless.spec.unwrap().cluster_ip.as_deref(), Some("None"));
    assert!(worker_service(&env, SHOP, "external").await.is_none());
    assert!(worker_service(&env, SHOP, "portless").await.is_none());
    // Nothing lost: the refused Services are still there, as they were.
    for name in ["external", "portless"] {
        assert!(services.get_opt(name).await.unwrap().is_some());
    }
}

#[tokio::test]
async fn a_physical_pod_the_worker_never_schedules_is_removed_and_reported() {
    let env = env(Duration::from_secs(2)).await;
    // n1 stops taking pods in the worker after the computing cluster chose it.
    Api::<Node>::all(env.w.clone())
        .patch(
            "n1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "unschedulable": true } })),
        )
        .await
        .unwrap();
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    vpods
        .create(
            &PostParams::default(),
            &pod("stuck", "vnode-w1-n1", json!([]), None),
        )
        .await
        .unwrap();
    let physical = mapped(&env, "stuck").await;
    assert!(physical.spec.unwrap().node_name.is_none());

    let note = wait_event(&env, "Pod", "stuck", "FailedSchedulingPod").await;
    assert!(
        note.contains("was not scheduled in the worker cluster within 2s"),
        "{note}"
    );
    let stuck = vpods.get("stuck").await.unwrap();
    let status = stuck.status.unwrap();
    assert_eq!(status.phase.as_deref(), Some("Failed"));
    assert_eq!(
        status.reason.as_deref(),
        Some("PhysicalPodSchedulingTimeout")
    );
    let condition = status
        .conditions
        .unwrap()
        .into_iter()
        .find(|c| c.type_ == "kubeocean.io/PhysicalPodScheduled")
        .unwrap();
    assert_eq!(condition.status, "False");
    eventually("the physical pod removed", || async {
        Api::<Pod>::namespaced(env.w.clone(), MOUNT)
            .get_opt(&physical_name(NS, "stuck"))
            .await
            .unwrap()
            .is_none()
    })
    .await;
    // It stays Failed for this reason, not PhysicalPodLost.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let again = vpods.get("stuck").await.unwrap().status.unwrap();
    assert_eq!(
        again.reason.as_deref(),
        Some("PhysicalPodSchedulingTimeout")
    );
}

/// A pod of the worker's own (not Kubeocean's) on `node` holding host port `port`.
async fn worker_pod_with_host_port(env: &Env, name: &str, node: &str, port: i32) {
    Api::<Pod>::namespaced(env.w.clone(), "default")
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": name },
                "spec": { "nodeName": node, "containers": [{ "name": "proxy", "image": "envoy:1",
                    "ports": [{ "containerPort": 80, "hostPort": port }] }] },
            })),
        )
        .await
        .unwrap();
}

/// Host ports held by the placeholder pods of virtual node `vnode`.
async fn held_ports(env: &Env, vnode: &str) -> Vec<i32> {
    Api::<Pod>::namespaced(env.c.clone(), "kubeocean-fake")
        .list(&ListParams::default().labels("kubeocean.io/hostport-fake-pod=true"))
        .await
        .unwrap()
        .items
        .into_iter()
        .filter(|p| p.spec.as_ref().and_then(|s| s.node_name.as_deref()) == Some(vnode))
        .flat_map(|p| p.spec.unwrap().containers)
        .flat_map(|c| c.ports.unwrap_or_default())
        .filter_map(|p| p.host_port)
        .collect()
}

fn host_port_pod(name: &str, node: Option<&str>, cpu: &str, port: Option<i32>) -> Pod {
    let ports = port.map(|p| json!([{ "containerPort": 80, "hostPort": p }]));
    from_json(json!({
        "metadata": { "name": name, "namespace": NS },
        "spec": {
            "nodeName": node,
            "tolerations": [{ "operator": "Exists" }],
            "containers": [{ "name": "app", "image": "nginx:1", "ports": ports,
                "resources": { "requests": { "cpu": cpu } } }],
        },
    }))
}

#[tokio::test]
async fn host_ports_in_use_on_a_physical_node_keep_pods_asking_for_them_away() {
    let env = env(Duration::from_secs(300)).await;
    worker_pod_with_host_port(&env, "edge-proxy", "n1", 8080).await;
    eventually("port 8080 held on vnode-w1-n1", || async {
        held_ports(&env, "vnode-w1-n1").await == [8080]
    })
    .await;
    assert!(held_ports(&env, "vnode-w1-n2").await.is_empty());
    // The placeholder is never mapped to the worker.
    let placeholders: Vec<String> = Api::<Pod>::namespaced(env.w.clone(), MOUNT)
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|p| p.metadata.name)
        .filter(|n| n.starts_with("fake-pod-for-hostport"))
        .collect();
    assert!(placeholders.is_empty(), "{placeholders:?}");

    // vnode-w1-n2 gets busier, so the computing scheduler would rather pick vnode-w1-n1.
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    vpods
        .create(
            &PostParams::default(),
            &host_port_pod("filler", Some("vnode-w1-n2"), "16", None),
        )
        .await
        .unwrap();
    vpods
        .create(
            &PostParams::default(),
            &host_port_pod("hp", None, "1", Some(8080)),
        )
        .await
        .unwrap();
    eventually("hp scheduled", || async {
        vpods
            .get("hp")
            .await
            .unwrap()
            .spec
            .and_then(|s| s.node_name)
            .is_some()
    })
    .await;
    let node = vpods.get("hp").await.unwrap().spec.unwrap().node_name;
    assert_eq!(
        node.as_deref(),
        Some("vnode-w1-n2"),
        "not where 8080 is taken"
    );
    // The mapped pod itself holds nothing on the virtual node: only worker pods count.
    let hp = mapped(&env, "hp").await;
    assert!(
        hp.metadata
            .labels
            .unwrap()
            .contains_key("kubeocean.io/managed-by")
    );
    assert!(held_ports(&env, "vnode-w1-n2").await.is_empty());

    // The worker's pod goes: so does the reservation.
    Api::<Pod>::namespaced(env.w.clone(), "default")
        .delete(
            "edge-proxy",
            &DeleteParams {
                grace_period_seconds: Some(0),
                ..DeleteParams::default()
            },
        )
        .await
        .unwrap();
    eventually("port 8080 released", || async {
        held_ports(&env, "vnode-w1-n1").await.is_empty()
    })
    .await;
}

#[tokio::test]
async fn host_ports_taken_before_the_virtual_node_exists_are_held_once_it_does() {
    let pair = common::served_pair("network-test").await;
    pair.worker
        .add_node(&SimNode::new("n1", "8", "32Gi"))
        .unwrap();
    // The worker's pod holds 9100 before any binding exists.
    Api::<Pod>::namespaced(pair.w.clone(), "default")
        .create(
            &PostParams::default(),
            &from_json(json!({
                "metadata": { "name": "node-exporter" },
                "spec": { "nodeName": "n1", "containers": [{ "name": "e", "image": "e:1",
                    "ports": [{ "containerPort": 9100, "hostPort": 9100 }] }] },
            })),
        )
        .await
        .unwrap();
    pair.bind_worker(BINDING, "w1", MOUNT).await;
    let mut config = SyncerConfig::new(BINDING);
    config.secret_namespace = "kubeocean-system".into();
    config.client_options = config.client_options.with_rate_limit(0.0, 0);
    config.connect_retry_interval = Duration::from_millis(200);
    config.retry_interval = Duration::from_millis(100);
    config.max_retry_interval = Duration::from_secs(1);
    tokio::spawn(Syncer::new(pair.c.clone(), config).run(pair.sandboxes.token().clone()));
    let env = Env {
        c: pair.c.clone(),
        w: pair.w.clone(),
        _served: Vec::new(),
        _sandboxes: pair.sandboxes,
    };
    eventually("port 9100 held on the new virtual node", || async {
        held_ports(&env, "vnode-w1-n1").await == [9100]
    })
    .await;
}

#[tokio::test]
async fn a_pod_bound_where_its_host_port_is_taken_is_reported() {
    let env = env(Duration::from_secs(2)).await;
    worker_pod_with_host_port(&env, "edge-proxy", "n1", 8080).await;
    // Bound directly (no scheduler asked): the worker cannot place its physical pod.
    let vpods: Api<Pod> = Api::namespaced(env.c.clone(), NS);
    vpods
        .create(
            &PostParams::default(),
            &host_port_pod("clash", Some("vnode-w1-n1"), "1", Some(8080)),
        )
        .await
        .unwrap();
    let physical = mapped(&env, "clash").await;
    assert!(physical.spec.unwrap().node_name.is_none());
    let note = wait_event(&env, "Pod", "clash", "FailedSchedulingPod").await;
    assert!(
        note.contains("not scheduled in the worker cluster"),
        "{note}"
    );
    eventually("clash Failed", || async {
        vpods
            .get("clash")
            .await
            .unwrap()
            .status
            .and_then(|s| s.phase)
            .as_deref()
            == Some("Failed")
    })
    .await;
    // The worker's own pod is untouched.
    assert!(
        Api::<Pod>::namespaced(env.w.clone(), "default")
            .get_opt("edge-proxy")
            .await
            .unwrap()
            .is_some()
    );
}
