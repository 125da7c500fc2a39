//! Impersonation over loopback HTTP, as kube-apiserver does it: a requester that RBAC lets
//! `impersonate` users and groups acts as them (their own permissions decide, and the audit
//! trail names both), one that may not is refused, and groups without a user are an error.

#![allow(clippy::unwrap_used)]

use kube_sandbox::{Cluster, ServeOptions, UserInfo};
use serde_json::{Value, json};

/// `(status, body)` of a request with `token` and `headers` over HTTP.
async fn call(
    config: &kube::Config,
    token: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Value>,
) -> (u16, Value) {
    let mut config = config.clone();
    config.auth_info.token = Some(token.to_owned().into());
    let client = kube::Client::try_from(config).unwrap();
    let mut request = http::Request::builder()
        .method(method)
        .uri(path)
        .header("content-type", "application/json");
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    let request = request
        .body(body.map(|b| b.to_string().into_bytes()).unwrap_or_default())
        .unwrap();
    let response = client
        .send(request.map(kube::client::Body::from))
        .await
        .unwrap();
    let status = response.status().as_u16();
    let bytes = http_body_util::BodyExt::collect(response.into_body())
        .await
        .unwrap()
        .to_bytes();
    (
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    )
}

async fn apply(client: &kube::Client, path: &str, object: Value) {
    let request = http::Request::builder()
        .method("POST")
        .uri(path)
        .header("content-type", "application/json")
        .body(object.to_string().into_bytes())
        .unwrap();
    client.request_text(request).await.unwrap();
}

#[tokio::test]
async fn impersonated_writes_act_as_the_user_and_are_audited() {
    let cluster = Cluster::new("impersonation");
    let served = cluster.serve(ServeOptions::default()).await.unwrap();
    let admin = cluster.client();
    cluster
        .auth()
        .add_token("gateway-token", UserInfo::new("gateway", &[]));
    cluster
        .auth()
        .add_token("nobody-token", UserInfo::new("nobody", &[]));
    // The gateway may only impersonate; editor may edit configmaps in `team`, viewer may read.
    apply(&admin, "/apis/rbac.authorization.k8s.io/v1/clusterroles", json!({
        "metadata": {"name": "impersonator"},
        "rules": [{"apiGroups": [""], "resources": ["users", "groups"], "verbs": ["impersonate"]}]
    })).await;
    apply(&admin, "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", json!({
        "metadata": {"name": "gateway-impersonates"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "impersonator"},
        "subjects": [{"kind": "User", "name": "gateway"}]
    })).await;
    apply(
        &admin,
        "/api/v1/namespaces",
        json!({"metadata": {"name": "team"}}),
    )
    .await;
    apply(&admin, "/apis/rbac.authorization.k8s.io/v1/namespaces/team/roles", json!({
        "metadata": {"name": "configmap-editor"},
        "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["create", "get", "list", "update", "patch", "delete"]}]
    })).await;
    apply(&admin, "/apis/rbac.authorization.k8s.io/v1/namespaces/team/rolebindings", json!({
        "metadata": {"name": "editors"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "configmap-editor"},
        "subjects": [{"kind": "Group", "name": "team-editors"}]
    })).await;

    let kubeconfig = served.kubeconfig().unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let path = "/api/v1/namespaces/team/configmaps";
    let body = |name: &str| {
        Some(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}}))
    };

    // The gateway itself may not write configmaps.
    let (code, status) = call(&config, "gateway-token", "POST", path, &[], body("direct")).await;
    assert_eq!(code, 403, "{status}");

    // As editor (in group team-editors) it may; the trail names the editor and the gateway.
    let as_editor = [
        ("Impersonate-User", "editor"),
        ("Impersonate-Group", "team-editors"),
    ];
    let (code, created) = call(
        &config,
        "gateway-token",
        "POST",
        path,
        &as_editor,
        body("by-editor"),
    )
    .await;
    assert_eq!(code, 201, "{created}");
    let event = cluster
        .audit_events()
        .into_iter()
        .rfind(|e| e.verb == "create" && e.resource == "configmaps" && e.code == 201)
        .unwrap();
    assert_eq!(event.user, "editor");
    assert_eq!(event.impersonated_by.as_deref(), Some("gateway"));
    assert!(
        event.groups.contains(&"team-editors".to_owned()),
        "{event:?}"
    );
    assert!(
        event.groups.contains(&"system:authenticated".to_owned()),
        "{event:?}"
    );

    // As viewer (no group) it is refused by the viewer's own permissions.
    let (code, status) = call(
        &config,
        "gateway-token",
        "POST",
        path,
        &[("Impersonate-User", "viewer")],
        body("by-viewer"),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    let message = status["message"].as_str().unwrap();
    assert!(
        message.contains("User \"viewer\" cannot create resource \"configmaps\""),
        "{message}"
    );
    let refused = cluster
        .audit_events()
        .into_iter()
        .rfind(|e| e.user == "viewer")
        .unwrap();
    assert_eq!(
        (refused.code, refused.impersonated_by.as_deref()),
        (403, Some("gateway"))
    );

    // A requester without the impersonate permission is refused before anything else.
    let (code, status) = call(
        &config,
        "nobody-token",
        "POST",
        path,
        &as_editor,
        body("by-nobody"),
    )
    .await;
    assert_eq!(code, 403, "{status}");
    assert_eq!(
        status["message"],
        "users \"editor\" is forbidden: User \"nobody\" cannot impersonate resource \"users\" in API group \"\" at the cluster scope"
    );

    // Groups without a user.
    let (code, status) = call(
        &config,
        "gateway-token",
        "GET",
        path,
        &[("Impersonate-Group", "team-editors")],
        None,
    )
    .await;
    assert_eq!(code, 500, "{status}");
    assert_eq!(status["kind"], "Status");

    // Nothing but the editor's object was created.
    let (_, list) = call(&config, cluster.admin_token(), "GET", path, &[], None).await;
    let names: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|i| i["metadata"]["name"].as_str())
        .collect();
    assert_eq!(names, ["by-editor"]);
}
