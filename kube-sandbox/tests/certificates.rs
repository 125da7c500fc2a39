//! Bootstrap tokens and CertificateSigningRequests over HTTPS, as a real kube-apiserver with
//! `--enable-bootstrap-token-auth` and kube-controller-manager's csrsigning controller answer:
//! which tokens authenticate, what a CSR records of its requester, who may approve, and that
//! the issued certificate authenticates as CN = user, O = groups.

#![allow(clippy::unwrap_used)]

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use k8s_openapi::api::certificates::v1::CertificateSigningRequest;
use k8s_openapi::api::core::v1::{Namespace, Secret};
use kube::api::{Api, PostParams};
use kube::{Client, Config};
use kube_sandbox::testing::eventually_some;
use kube_sandbox::{ServeOptions, Served};
use serde_json::{Value, json};

const TOKEN: &str = "abcdef.0123456789abcdef";

async fn client_with(served: &Served, user: Value) -> Client {
    let kubeconfig = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": served.url,
            "certificate-authority-data": STANDARD.encode(served.ca_pem.as_deref().unwrap())}}],
        "users": [{"name": "u", "user": user}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    });
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&kubeconfig.to_string()).unwrap();
    let config = Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    Client::try_from(config).unwrap()
}

fn bootstrap_secret(id: &str, secret: &str, fields: &[(&str, &str)]) -> Secret {
    let mut data = serde_json::Map::new();
    data.insert("token-id".into(), json!(STANDARD.encode(id)));
    data.insert("token-secret".into(), json!(STANDARD.encode(secret)));
    for (k, v) in fields {
        data.insert((*k).into(), json!(STANDARD.encode(v)));
    }
    serde_json::from_value(json!({
        "apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
        "metadata": {"name": format!("bootstrap-token-{id}"), "namespace": "kube-system"},
        "data": data,
    }))
    .unwrap()
}

fn status_code(err: &kube::Error) -> u16 {
    match err {
        kube::Error::Api(s) => s.code,
        other => panic!("not an API error: {other}"),
    }
}

fn csr_request(cn: &str, org: &str) -> (String, String) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, org);
    let pem = params.serialize_request(&key).unwrap().pem().unwrap();
    (key.serialize_pem(), pem)
}

fn csr(name: &str, request_pem: &str) -> CertificateSigningRequest {
    serde_json::from_value(json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": {"name": name},
        "spec": {"request": STANDARD.encode(request_pem),
                 "signerName": "kubernetes.io/kube-apiserver-client",
                 "expirationSeconds": 3600,
                 "usages": ["digital signature", "key encipherment", "client auth"]},
    }))
    .unwrap()
}

async fn apply_rbac(admin: &Client, objects: Value) {
    for object in objects.as_array().unwrap() {
        let kind = object["kind"].as_str().unwrap();
        let plural = format!("{}s", kind.to_lowercase());
        let resource = kube::core::ApiResource::from_gvk_with_plural(
            &kube::core::GroupVersionKind::gvk("rbac.authorization.k8s.io", "v1", kind),
            &plural,
        );
        Api::<kube::core::DynamicObject>::all_with(admin.clone(), &resource)
            .create(
                &PostParams::default(),
                &serde_json::from_value(object.clone()).unwrap(),
            )
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn bootstrap_tokens_authenticate_as_kube_apiserver_does() {
    kube_kit::client::install_crypto_provider();
    let cluster = kube_sandbox::Cluster::new("bootstrap");
    let served = cluster
        .serve(ServeOptions {
            tls: true,
            ..ServeOptions::default()
        })
        .await
        .unwrap();
    let admin = cluster.client();
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), "kube-system");
    let future = "2099-01-01T00:00:00Z";
    let auth = ("usage-bootstrap-authentication", "true");
    let group = ("auth-extra-groups", "system:bootstrappers:test");
    // (token, its Secret's extra fields, status of a GET the token's group may do)
    type Fields<'a> = Option<Vec<(&'a str, &'a str)>>;
    let cases: Vec<(&str, Fields, u16)> = vec![
        (TOKEN, Some(vec![auth, group, ("expiration", future)]), 200),
        ("abcdeg.0123456789abcdef", Some(vec![auth, group]), 200),
        (
            "abcdeh.0123456789abcdef",
            Some(vec![auth, group, ("expiration", "2020-01-01T00:00:00Z")]),
            401,
        ),
        (
            "abcdei.0123456789abcdef",
            Some(vec![group, ("expiration", future)]),
            401,
        ),
        (
            "abcdej.0123456789abcdef",
            Some(vec![("usage-bootstrap-authentication", "false"), group]),
            401,
        ),
        (
            "abcdek.0123456789abcdef",
            Some(vec![auth, ("auth-extra-groups", "system:masters")]),
            401,
        ),
        ("abcdel.0123456789abcdef", None, 401),
        ("abcdef.0123456789abcdee", None, 401),
        ("not-a-bootstrap-token", None, 401),
    ];
    for (token, fields, _) in &cases {
        if let Some(fields) = fields {
            let (id, secret) = token.split_once('.').unwrap();
            secrets
                .create(
                    &PostParams::default(),
                    &bootstrap_secret(id, secret, fields),
                )
                .await
                .unwrap();
        }
    }
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "read-default"},
             "rules": [{"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["default"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "read-default"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:test"}],
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "read-default"}},
        ]),
    )
    .await;
    for (token, _, want) in &cases {
        let client = client_with(&served, json!({"token": token})).await;
        let got = match Api::<Namespace>::all(client).get("default").await {
            Ok(_) => 200,
            Err(e) => status_code(&e),
        };
        assert_eq!(got, *want, "{token}");
    }
    // The user and groups, as TokenReview reports them.
    let review = admin
        .request::<Value>(
            http::Request::post("/apis/authentication.k8s.io/v1/tokenreviews")
                .header("content-type", "application/json")
                .body(
                    serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1",
                        "kind": "TokenReview", "spec": {"token": TOKEN}}))
                    .unwrap(),
                )
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(review["status"]["authenticated"], true, "{review}");
    assert_eq!(
        review["status"]["user"]["username"],
        "system:bootstrap:abcdef"
    );
    assert_eq!(
        review["status"]["user"]["groups"],
        json!([
            "system:bootstrappers",
            "system:bootstrappers:test",
            "system:authenticated"
        ])
    );
}

#[tokio::test]
async fn an_approved_csr_becomes_a_client_certificate_of_the_cluster_ca() {
    kube_kit::client::install_crypto_provider();
    // The signer runs without the workload controllers.
    let cluster = kube_sandbox::Cluster::new("csr");
    let served = cluster
        .serve(ServeOptions {
            tls: true,
            ..ServeOptions::default()
        })
        .await
        .unwrap();
    let admin = cluster.client();
    let (id, secret) = TOKEN.split_once('.').unwrap();
    Api::<Secret>::namespaced(admin.clone(), "kube-system")
        .create(
            &PostParams::default(),
            &bootstrap_secret(
                id,
                secret,
                &[
                    ("usage-bootstrap-authentication", "true"),
                    ("auth-extra-groups", "system:bootstrappers:test"),
                ],
            ),
        )
        .await
        .unwrap();
    apply_rbac(
        &admin,
        json!([
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "post-csrs"},
             "rules": [{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get"]},
                       {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests/approval"], "verbs": ["update"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "post-csrs"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "system:bootstrappers:test"}],
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "post-csrs"}},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "agents-read-default"},
             "rules": [{"apiGroups": [""], "resources": ["namespaces"], "resourceNames": ["default"], "verbs": ["get"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "agents-read-default"},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": "example:agents"}],
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "agents-read-default"}},
        ]),
    )
    .await;
    let as_token = client_with(&served, json!({"token": TOKEN})).await;
    let csrs: Api<CertificateSigningRequest> = Api::all(as_token.clone());
    // certificates/subjectrestriction: no system:masters certificates.
    let (_, masters) = csr_request("mallory", "system:masters");
    let err = csrs
        .create(&PostParams::default(), &csr("masters", &masters))
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 403);

    let (key, request) = csr_request("agent-1", "example:agents");
    let created = csrs
        .create(&PostParams::default(), &csr("agent-1", &request))
        .await
        .unwrap();
    // The requester is recorded from the credential, whatever the body said.
    assert_eq!(
        created.spec.username.as_deref(),
        Some("system:bootstrap:abcdef")
    );
    assert!(created.status.is_none());
    let approval = |csr: &CertificateSigningRequest| {
        let mut approved = serde_json::to_value(csr).unwrap();
        approved["status"] =
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Test"}]});
        approved
    };
    // Updating /approval is not enough: approving needs `approve` on the signer.
    let err = csrs
        .replace_subresource(
            "approval",
            "agent-1",
            &PostParams::default(),
            &approval(&created),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 403);
    let err = csrs
        .patch_subresource(
            "approval",
            "agent-1",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(
                json!({"status": {"conditions": [{"type": "Approved", "status": "True"}]}}),
            ),
        )
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 403);
    let admin_csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    admin_csrs
        .replace_subresource(
            "approval",
            "agent-1",
            &PostParams::default(),
            &approval(&created),
        )
        .await
        .unwrap();
    let certificate = eventually_some("the certificate", Duration::from_secs(20), || {
        let csrs = csrs.clone();
        async move {
            csrs.get("agent-1")
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.certificate)
        }
    })
    .await;
    let cert_pem = String::from_utf8(certificate.0).unwrap();
    let agent = client_with(
        &served,
        json!({"client-certificate-data": STANDARD.encode(&cert_pem),
               "client-key-data": STANDARD.encode(&key)}),
    )
    .await;
    // CN is the user (named in the refusal), O the group (its binding allows this).
    Api::<Namespace>::all(agent.clone())
        .get("default")
        .await
        .unwrap();
    let err = Api::<Namespace>::all(agent)
        .get("kube-system")
        .await
        .unwrap_err();
    assert_eq!(status_code(&err), 403);
    assert!(err.to_string().contains("User \"agent-1\""), "{err}");
}

/// A kubelet-serving request as a kubelet (or Kubeocean's proxier) makes one: CN
/// `system:node:<node>`, O `system:nodes`, the node's DNS name and IP.
fn serving_request(cn: &str, dns: &str, ip: &str) -> String {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(vec![dns.to_owned()]).unwrap();
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, cn);
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, "system:nodes");
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress(ip.parse().unwrap()));
    params.serialize_request(&key).unwrap().pem().unwrap()
}

/// `kubernetes.io/kubelet-serving`: an approved request that passes kube-controller-manager's
/// checks gets a certificate of the cluster CA carrying its DNS and IP names, which a client
/// verifying against that CA accepts for those names (and no other); one whose subject is
/// not a node's gets `Failed` with reason `SignerValidationFailure` and upstream's message.
#[tokio::test]
async fn an_approved_kubelet_serving_csr_is_signed_for_its_names() {
    use rustls::client::danger::ServerCertVerifier;
    use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
    kube_kit::client::install_crypto_provider();
    let cluster = kube_sandbox::Cluster::new("serving");
    let admin = cluster.client();
    let csrs: Api<CertificateSigningRequest> = Api::all(admin.clone());
    let serving = |name: &str, pem: &str| -> CertificateSigningRequest {
        serde_json::from_value(json!({
            "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
            "metadata": {"name": name},
            "spec": {"request": STANDARD.encode(pem), "signerName": "kubernetes.io/kubelet-serving",
                     "usages": ["digital signature", "key encipherment", "server auth"]},
        }))
        .unwrap()
    };
    let approve = |csr: CertificateSigningRequest| {
        let mut approved = serde_json::to_value(&csr).unwrap();
        approved["status"] =
            json!({"conditions": [{"type": "Approved", "status": "True", "reason": "Test"}]});
        approved
    };
    for (name, pem) in [
        (
            "good",
            serving_request("system:node:vnode-w1-n1", "vnode-w1-n1", "127.0.0.7"),
        ),
        (
            "not-a-node",
            serving_request("proxier", "vnode-w1-n1", "127.0.0.7"),
        ),
    ] {
        let created = csrs
            .create(&PostParams::default(), &serving(name, &pem))
            .await
            .unwrap();
        csrs.replace_subresource("approval", name, &PostParams::default(), &approve(created))
            .await
            .unwrap();
    }
    let certificate = eventually_some("the serving certificate", Duration::from_secs(20), || {
        let csrs = csrs.clone();
        async move {
            csrs.get("good")
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.certificate)
        }
    })
    .await;
    let failed = eventually_some("the refusal", Duration::from_secs(20), || {
        let csrs = csrs.clone();
        async move {
            csrs.get("not-a-node")
                .await
                .ok()
                .and_then(|c| c.status)
                .and_then(|s| s.conditions)
                .and_then(|c| c.into_iter().find(|c| c.type_ == "Failed"))
        }
    })
    .await;
    assert_eq!(failed.reason.as_deref(), Some("SignerValidationFailure"));
    assert_eq!(
        failed.message.as_deref(),
        Some("subject CN must begin with \"system:node:\"")
    );

    let ca_pem = cluster.state().pki().unwrap().ca_pem().to_owned();
    let der = |pem: &str| -> CertificateDer<'static> {
        let start = pem.find("-----BEGIN CERTIFICATE-----").unwrap();
        let body: String = pem[start..]
            .lines()
            .skip(1)
            .take_while(|l| !l.starts_with("-----END"))
            .collect();
        CertificateDer::from(STANDARD.decode(body).unwrap())
    };
    let mut roots = rustls::RootCertStore::empty();
    roots.add(der(&ca_pem)).unwrap();
    let verifier = rustls::client::WebPkiServerVerifier::builder(std::sync::Arc::new(roots))
        .build()
        .unwrap();
    let leaf = der(&String::from_utf8(certificate.0).unwrap());
    for (name, accepted) in [
        ("vnode-w1-n1", true),
        ("127.0.0.7", true),
        ("vnode-w1-n2", false),
    ] {
        let server = ServerName::try_from(name.to_owned()).unwrap();
        let verified = verifier.verify_server_cert(&leaf, &[], &server, &[], UnixTime::now());
        assert_eq!(verified.is_ok(), accepted, "{name}: {verified:?}");
    }
}
