//! The proxier's serving certificate in embedded mode (`kubeocean manager --embedded`, the
//! flags of docs/kubeocean/install.md) against a computing sandbox cluster that signs
//! `kubernetes.io/kubelet-serving` requests as kube-controller-manager does: the manager asks
//! for and approves a certificate of the cluster's CA, so a client verifying the virtual
//! node's kubelet endpoint against that CA reads `/stats/summary`; a denied request leaves a
//! self-signed certificate and the binding's ProxierReady reason `SelfSignedCertificate`.

#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::Node;
use kube::api::{ListParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::Cluster;
use kubeocean_core::crd::ClusterBinding;
use serde_json::{Value, json};
use support::{BINDING, eventually, start};

/// The binding's ProxierReady condition as (status, reason, message), once it is `True`.
async fn proxier_ready(c: &Client) -> (String, String, String) {
    eventually(90, "ProxierReady True", || async {
        let binding = Api::<ClusterBinding>::all(c.clone())
            .get(BINDING)
            .await
            .ok()?;
        let status = serde_json::to_value(binding.status?).ok()?;
        let condition = status["conditions"]
            .as_array()?
            .iter()
            .find(|c| c["type"] == "ProxierReady" && c["status"] == "True")?
            .clone();
        let text = |k: &str| condition[k].as_str().unwrap_or_default().to_owned();
        Some((text("status"), text("reason"), text("message")))
    })
    .await
}

/// The kubelet endpoint (`https://address:port`) a virtual node of the binding advertises.
async fn kubelet_endpoint(c: &Client) -> String {
    eventually(60, "a virtual node with its kubelet endpoint", || async {
        let nodes: Api<Node> = Api::all(c.clone());
        let selector = format!("kubeocean.io/cluster-binding={BINDING}");
        let list = nodes
            .list(&ListParams::default().labels(&selector))
            .await
            .ok()?;
        let status = list.items.first()?.status.clone()?;
        let port = status.daemon_endpoints?.kubelet_endpoint?.port;
        let address = status
            .addresses?
            .into_iter()
            .find(|a| a.type_ == "InternalIP")?
            .address;
        (port > 0).then(|| format!("https://{address}:{port}"))
    })
    .await
}

/// A client of `server` presenting the API server's kubelet-client certificate (as
/// kube-apiserver calls a kubelet); the server's certificate is verified against `ca_pem`,
/// or not at all.
async fn kubelet_client(computing: &Cluster, server: &str, ca_pem: Option<&str>) -> Client {
    let pki = computing.pki().unwrap();
    let identity = pki.kubelet_client_certificate();
    let mut cluster = json!({"server": server});
    match ca_pem {
        Some(ca) => cluster["certificate-authority-data"] = json!(STANDARD.encode(ca)),
        None => cluster["insecure-skip-tls-verify"] = json!(true),
    }
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "kubelet", "cluster": cluster}],
        "users": [{"name": "apiserver", "user": {
            "client-certificate-data": STANDARD.encode(&identity.cert_pem),
            "client-key-data": STANDARD.encode(&identity.key_pem)}}],
        "contexts": [{"name": "kubelet", "context": {"cluster": "kubelet", "user": "apiserver"}}],
        "current-context": "kubelet",
    });
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string()).unwrap();
    let mut config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    config.default_retry = false;
    Client::try_from(config).unwrap()
}

/// `/stats/summary` of the kubelet endpoint through `client`.
async fn stats_summary(client: &Client) -> Result<Value, kube::Error> {
    let request = http::Request::get("/stats/summary")
        .body(Vec::new())
        .unwrap();
    client.request::<Value>(request).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_embedded_proxier_serves_a_certificate_of_the_cluster_ca() {
    let env = start("serving-cert", &[]).await;
    let (_, reason, message) = proxier_ready(&env.c).await;
    assert_eq!(reason, "TaskRunning", "{message}");
    assert!(message.contains("signed by the cluster's CA"), "{message}");
    let endpoint = kubelet_endpoint(&env.c).await;
    let ca = env.computing.pki().unwrap().ca_pem().to_owned();

    // Verified against the computing cluster's CA for the address the node advertises.
    let verified = kubelet_client(&env.computing, &endpoint, Some(&ca)).await;
    let summary = eventually(30, "/stats/summary over a verified connection", || async {
        stats_summary(&verified).await.ok()
    })
    .await;
    assert!(summary["node"]["nodeName"].is_string(), "{summary}");

    // Another cluster's CA does not vouch for it.
    let stranger = Cluster::new("stranger");
    let other_ca = stranger.pki().unwrap().ca_pem().to_owned();
    let refused = kubelet_client(&env.computing, &endpoint, Some(&other_ca)).await;
    assert!(stats_summary(&refused).await.is_err());
    stranger.shutdown();

    // The request was decided and removed, as upstream does: none is left behind.
    let csrs: Api<CertificateSigningRequest> = Api::all(env.c.clone());
    let left = csrs
        .list(&ListParams::default().labels(&format!("kubeocean.io/cluster-binding={BINDING}")))
        .await
        .unwrap();
    assert!(left.items.is_empty(), "{:?}", left.items);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_denied_request_leaves_a_self_signed_certificate_and_says_so() {
    let env = start(
        "serving-cert-denied",
        &[
            "--proxier-csr-approval=external",
            "--proxier-csr-timeout=90s",
        ],
    )
    .await;
    // As a cluster admin (or a policy controller) denies it.
    let csrs: Api<CertificateSigningRequest> = Api::all(env.c.clone());
    let selector = format!("kubeocean.io/cluster-binding={BINDING}");
    let pending = eventually(60, "the proxier's CertificateSigningRequest", || async {
        csrs.list(&ListParams::default().labels(&selector))
            .await
            .ok()?
            .items
            .into_iter()
            .next()
    })
    .await;
    assert_eq!(
        pending.spec.signer_name, "kubernetes.io/kubelet-serving",
        "{pending:?}"
    );
    let mut denied = serde_json::to_value(&pending).unwrap();
    denied["status"] = json!({"conditions": [{"type": "Denied", "status": "True",
        "reason": "NotAllowed", "message": "proxiers get no kubelet certificates here"}]});
    let name = pending.metadata.name.clone().unwrap();
    csrs.replace_subresource("approval", &name, &PostParams::default(), &denied)
        .await
        .unwrap();

    let (_, reason, message) = proxier_ready(&env.c).await;
    assert_eq!(reason, "SelfSignedCertificate", "{message}");
    assert!(
        message.contains("denied") && message.contains("proxiers get no kubelet certificates here"),
        "{message}"
    );
    let endpoint = kubelet_endpoint(&env.c).await;
    let ca = env.computing.pki().unwrap().ca_pem().to_owned();
    // The fallback serves, but not with a certificate of the cluster's CA.
    let unverified = kubelet_client(&env.computing, &endpoint, None).await;
    let summary = eventually(
        30,
        "/stats/summary over an unverified connection",
        || async { stats_summary(&unverified).await.ok() },
    )
    .await;
    assert!(summary["node"]["nodeName"].is_string(), "{summary}");
    let verified = kubelet_client(&env.computing, &endpoint, Some(&ca)).await;
    assert!(stats_summary(&verified).await.is_err());
}
