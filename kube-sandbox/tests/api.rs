//! The API as a client sees it, in-process and over loopback HTTP.

#![allow(clippy::unwrap_used)]

mod common;

use common::{eventually, raw, targets};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Pod};
use kube::ResourceExt;
use kube::api::{
    Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

fn cm(name: &str, labels: serde_json::Value) -> ConfigMap {
    serde_json::from_value(
        json!({"metadata": {"name": name, "labels": labels}, "data": {"k": "v"}}),
    )
    .unwrap()
}

const WIDGET_CRD: &str = r#"{
  "apiVersion": "apiextensions.k8s.io/v1",
  "kind": "CustomResourceDefinition",
  "metadata": {"name": "widgets.example.com"},
  "spec": {
    "group": "example.com",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
    "versions": [{
      "name": "v1", "served": true, "storage": true,
      "subresources": {"status": {}},
      "schema": {"openAPIV3Schema": {
        "type": "object",
        "properties": {
          "spec": {"type": "object", "required": ["size"], "properties": {
            "size": {"type": "integer", "minimum": 1, "maximum": 10},
            "color": {"type": "string", "enum": ["red", "blue"]}
          }},
          "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}}
        }
      }}
    }]
  }
}"#;

async fn install_widgets(client: &kube::Client) -> Api<DynamicObject> {
    let crds: Api<k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition> =
        Api::all(client.clone());
    let crd = serde_json::from_str(WIDGET_CRD).unwrap();
    crds.create(&PostParams::default(), &crd).await.unwrap();
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "widgets");
    Api::namespaced_with(client.clone(), "default", &ar)
}

fn widget(name: &str, spec: serde_json::Value) -> DynamicObject {
    serde_json::from_value(json!({"apiVersion": "example.com/v1", "kind": "Widget",
        "metadata": {"name": name}, "spec": spec}))
    .unwrap()
}

#[tokio::test]
async fn crd_serves_its_resource_and_discovery_finds_it() {
    for t in targets().await {
        let widgets = install_widgets(&t.client).await;
        let created = widgets
            .create(&PostParams::default(), &widget("w1", json!({"size": 3})))
            .await
            .unwrap();
        assert_eq!(created.metadata.generation, Some(1), "{}", t.how);
        assert!(created.metadata.uid.is_some());
        let discovery = kube::Discovery::new(t.client.clone()).run().await.unwrap();
        let found = discovery
            .groups()
            .flat_map(|g| g.recommended_resources())
            .any(|(ar, caps)| {
                ar.kind == "Widget" && caps.scope == kube::discovery::Scope::Namespaced
            });
        assert!(found, "{}: Widget not discovered", t.how);
        // The status subresource is separate both ways.
        let mut with_status = widget("w1", json!({"size": 4}));
        with_status.data["status"] = json!({"ready": true});
        with_status.metadata.resource_version = created.metadata.resource_version.clone();
        let replaced = widgets
            .replace("w1", &PostParams::default(), &with_status)
            .await
            .unwrap();
        assert_eq!(replaced.data["spec"]["size"], 4);
        assert!(
            replaced.data.get("status").is_none(),
            "{}: status changed through main resource",
            t.how
        );
        assert_eq!(replaced.metadata.generation, Some(2));
        let status_patch = Patch::Merge(json!({"status": {"ready": true}, "spec": {"size": 9},
            "metadata": {"labels": {"through": "status"}}}));
        let patched = widgets
            .patch_status("w1", &PatchParams::default(), &status_patch)
            .await
            .unwrap();
        assert_eq!(patched.data["status"]["ready"], true);
        assert_eq!(
            patched.data["spec"]["size"], 4,
            "{}: spec changed through status",
            t.how
        );
        assert_eq!(
            patched.metadata.generation,
            Some(2),
            "status writes do not bump generation"
        );
        assert!(
            patched.metadata.labels.is_none(),
            "{}: a custom resource's labels changed through status",
            t.how
        );
    }
}

/// As kube-apiserver's pod status strategy: a pods/status write keeps its label and
/// annotation changes but not spec, owner references or a deletion timestamp.
#[tokio::test]
async fn pod_status_writes_carry_metadata_but_not_spec_or_owners() {
    for t in targets().await {
        let pods: Api<Pod> = Api::namespaced(t.client.clone(), "default");
        let pod: Pod = serde_json::from_value(json!({
            "metadata": {"name": "status-meta", "labels": {"app": "a"}},
            "spec": {"containers": [{"name": "c", "image": "nginx:1"}]},
        }))
        .unwrap();
        pods.create(&PostParams::default(), &pod).await.unwrap();
        let patch = Patch::Merge(json!({
            "metadata": {"annotations": {"recorded": "yes"}, "labels": {"app": "b"},
                "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "x",
                    "uid": "00000000-0000-0000-0000-000000000001"}],
                "deletionTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"activeDeadlineSeconds": 5},
            "status": {"phase": "Running"},
        }));
        let patched = pods
            .patch_status("status-meta", &PatchParams::default(), &patch)
            .await
            .unwrap();
        assert_eq!(
            patched.status.as_ref().and_then(|s| s.phase.as_deref()),
            Some("Running"),
            "{}",
            t.how
        );
        assert_eq!(
            patched.annotations().get("recorded").map(String::as_str),
            Some("yes")
        );
        assert_eq!(patched.labels().get("app").map(String::as_str), Some("b"));
        assert!(patched.metadata.owner_references.is_none(), "{}", t.how);
        assert!(patched.metadata.deletion_timestamp.is_none(), "{}", t.how);
        assert_eq!(
            patched
                .spec
                .as_ref()
                .and_then(|s| s.active_deadline_seconds),
            None,
            "{}: spec changed through status",
            t.how
        );
        pods.delete("status-meta", &Default::default())
            .await
            .unwrap();
    }
}

#[tokio::test]
async fn objects_violating_the_crd_schema_get_422() {
    for t in targets().await {
        let widgets = install_widgets(&t.client).await;
        for (spec, field) in [
            (json!({"size": 11}), "spec.size"),
            (json!({"size": "big"}), "spec.size"),
            (json!({}), "spec.size"),
            (json!({"size": 2, "color": "green"}), "spec.color"),
        ] {
            let err = widgets
                .create(&PostParams::default(), &widget("bad", spec.clone()))
                .await
                .unwrap_err();
            match err {
                kube::Error::Api(status) => {
                    assert_eq!(status.code, 422, "{}: {spec}", t.how);
                    assert_eq!(status.reason, "Invalid");
                    assert!(
                        status.message.contains(field),
                        "{}: {}",
                        t.how,
                        status.message
                    );
                }
                other => panic!("{}: unexpected {other:?}", t.how),
            }
        }
    }
}

#[tokio::test]
async fn list_with_selectors_and_pagination() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        for i in 0..25 {
            let tier = if i % 2 == 0 { "web" } else { "db" };
            cms.create(
                &PostParams::default(),
                &cm(
                    &format!("cm-{i:02}"),
                    json!({"tier": tier, "n": i.to_string()}),
                ),
            )
            .await
            .unwrap();
        }
        let web = cms
            .list(&ListParams::default().labels("tier=web"))
            .await
            .unwrap();
        assert_eq!(web.items.len(), 13, "{}", t.how);
        let not_web = cms
            .list(&ListParams::default().labels("tier!=web,n in (1,3,5)"))
            .await
            .unwrap();
        assert_eq!(not_web.items.len(), 3);
        let by_name = cms
            .list(&ListParams::default().fields("metadata.name=cm-07"))
            .await
            .unwrap();
        assert_eq!(by_name.items.len(), 1);
        // Pages of 10 cover every object once, in order.
        let mut seen = Vec::new();
        let mut params = ListParams::default().limit(10);
        loop {
            let page = cms.list(&params).await.unwrap();
            seen.extend(page.items.iter().filter_map(|c| c.metadata.name.clone()));
            match page.metadata.continue_ {
                Some(token) if !token.is_empty() => {
                    assert!(page.items.len() == 10);
                    params = params.continue_token(&token);
                }
                _ => break,
            }
        }
        let mut expected: Vec<String> = (0..25).map(|i| format!("cm-{i:02}")).collect();
        expected.sort();
        assert_eq!(seen, expected, "{}", t.how);
    }
}

#[tokio::test]
async fn watch_from_a_version_sees_every_change_in_order() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let start = cms
            .list(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let created = cms
            .create(&PostParams::default(), &cm("watched", json!({})))
            .await
            .unwrap();
        let mut changed = created.clone();
        changed.data = Some([("k".to_string(), "v2".to_string())].into());
        cms.replace("watched", &PostParams::default(), &changed)
            .await
            .unwrap();
        cms.delete("watched", &DeleteParams::default())
            .await
            .unwrap();
        let stream = cms
            .watch(&WatchParams::default().timeout(5), &start)
            .await
            .unwrap();
        let events: Vec<_> = stream.take(3).try_collect().await.unwrap();
        let kinds: Vec<&str> = events
            .iter()
            .map(|e| match e {
                WatchEvent::Added(_) => "ADDED",
                WatchEvent::Modified(_) => "MODIFIED",
                WatchEvent::Deleted(_) => "DELETED",
                WatchEvent::Bookmark(_) => "BOOKMARK",
                WatchEvent::Error(_) => "ERROR",
            })
            .collect();
        assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"], "{}", t.how);
        // Versions strictly increase.
        let versions: Vec<u64> = events
            .iter()
            .filter_map(|e| match e {
                WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                    o.metadata.resource_version.as_ref()?.parse().ok()
                }
                _ => None,
            })
            .collect();
        assert!(versions.windows(2).all(|w| w[0] < w[1]), "{versions:?}");
    }
}

#[tokio::test]
async fn live_watch_delivers_changes_made_after_it_started() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let rv = cms
            .list(&ListParams::default())
            .await
            .unwrap()
            .metadata
            .resource_version
            .unwrap();
        let mut stream = cms
            .watch(&WatchParams::default().labels("app=live").timeout(10), &rv)
            .await
            .unwrap()
            .boxed();
        cms.create(&PostParams::default(), &cm("other", json!({"app": "else"})))
            .await
            .unwrap();
        cms.create(&PostParams::default(), &cm("live", json!({"app": "live"})))
            .await
            .unwrap();
        // Relabelling out of the selector is a DELETED for this watch.
        cms.patch(
            "live",
            &PatchParams::default(),
            &Patch::Merge(json!({"metadata": {"labels": {"app": "gone"}}})),
        )
        .await
        .unwrap();
        let first = stream.try_next().await.unwrap().unwrap();
        let second = stream.try_next().await.unwrap().unwrap();
        assert!(
            matches!(first, WatchEvent::Added(ref c) if c.metadata.name.as_deref() == Some("live")),
            "{}",
            t.how
        );
        assert!(
            matches!(second, WatchEvent::Deleted(_)),
            "{}: {second:?}",
            t.how
        );
    }
}

#[tokio::test]
async fn stale_update_gets_409() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let v1 = cms
            .create(&PostParams::default(), &cm("c", json!({})))
            .await
            .unwrap();
        let mut a = v1.clone();
        a.data = Some([("k".into(), "a".into())].into());
        cms.replace("c", &PostParams::default(), &a).await.unwrap();
        let mut b = v1.clone();
        b.data = Some([("k".into(), "b".into())].into());
        match cms.replace("c", &PostParams::default(), &b).await {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (409, "Conflict"), "{}", t.how);
                assert!(s.message.contains("the object has been modified"));
            }
            other => panic!("{}: expected 409, got {other:?}", t.how),
        }
        match cms
            .create(&PostParams::default(), &cm("c", json!({})))
            .await
        {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (409, "AlreadyExists"))
            }
            other => panic!("expected AlreadyExists, got {other:?}"),
        }
        match cms.get("missing").await {
            Err(kube::Error::Api(s)) => {
                assert_eq!((s.code, s.reason.as_str()), (404, "NotFound"));
                assert_eq!(s.message, "configmaps \"missing\" not found");
            }
            other => panic!("expected NotFound, got {other:?}"),
        }
    }
}

#[tokio::test]
async fn too_old_watch_gets_410() {
    let cluster = kube_sandbox::Cluster::with_options(
        "small-history",
        kube_sandbox::ClusterOptions {
            history_limit: 5,
            ..Default::default()
        },
    );
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let first = cms
        .create(&PostParams::default(), &cm("c0", json!({})))
        .await
        .unwrap();
    for i in 1..20 {
        cms.create(&PostParams::default(), &cm(&format!("c{i}"), json!({})))
            .await
            .unwrap();
    }
    let rv = first.metadata.resource_version.unwrap();
    let mut stream = cms
        .watch(&WatchParams::default().timeout(5), &rv)
        .await
        .unwrap()
        .boxed();
    match stream.try_next().await.unwrap() {
        Some(WatchEvent::Error(e)) => {
            assert_eq!(e.code, 410);
            assert_eq!(e.reason, "Expired");
        }
        other => panic!("expected 410 ERROR event, got {other:?}"),
    }
}

#[tokio::test]
async fn finalizers_hold_deletion() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let mut held = cm("held", json!({}));
        held.metadata.finalizers = Some(vec!["example.com/cleanup".into()]);
        cms.create(&PostParams::default(), &held).await.unwrap();
        cms.delete("held", &DeleteParams::default()).await.unwrap();
        let still = cms.get("held").await.unwrap();
        assert!(still.metadata.deletion_timestamp.is_some(), "{}", t.how);
        // No new finalizers once deleting.
        let add =
            Patch::Merge(json!({"metadata": {"finalizers": ["example.com/cleanup", "other/x"]}}));
        assert!(
            cms.patch("held", &PatchParams::default(), &add)
                .await
                .is_err()
        );
        let clear = Patch::Merge(json!({"metadata": {"finalizers": null}}));
        cms.patch("held", &PatchParams::default(), &clear)
            .await
            .unwrap();
        assert!(
            cms.get_opt("held").await.unwrap().is_none(),
            "{}: object should be gone",
            t.how
        );
    }
}

#[tokio::test]
async fn owner_deletion_cascades_to_children() {
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let owner = cms
            .create(&PostParams::default(), &cm("owner", json!({})))
            .await
            .unwrap();
        let uid = owner.metadata.uid.clone().unwrap();
        for i in 0..3 {
            let mut child = cm(&format!("child-{i}"), json!({}));
            child.metadata.owner_references = Some(vec![
                serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "ConfigMap", "name": "owner", "uid": uid}))
                .unwrap(),
            ]);
            cms.create(&PostParams::default(), &child).await.unwrap();
        }
        let mut orphan_owner = cm("keeper", json!({}));
        orphan_owner.metadata.labels = None;
        let keeper = cms
            .create(&PostParams::default(), &orphan_owner)
            .await
            .unwrap();
        let mut kept = cm("kept-child", json!({}));
        kept.metadata.owner_references = Some(vec![
            serde_json::from_value(json!({
            "apiVersion": "v1", "kind": "ConfigMap", "name": "keeper", "uid": keeper.metadata.uid}))
            .unwrap(),
        ]);
        cms.create(&PostParams::default(), &kept).await.unwrap();

        cms.delete("owner", &DeleteParams::background())
            .await
            .unwrap();
        let cms2 = cms.clone();
        eventually("children deleted", || {
            let cms = cms2.clone();
            async move {
                let names: Vec<String> = cms
                    .list(&ListParams::default())
                    .await
                    .map(|l| {
                        l.items
                            .into_iter()
                            .filter_map(|c| c.metadata.name)
                            .collect()
                    })
                    .unwrap_or_default();
                !names
                    .iter()
                    .any(|n| n.starts_with("child-") || n == "owner")
            }
        })
        .await;
        // Orphan propagation keeps the child and drops its owner reference.
        cms.delete("keeper", &DeleteParams::orphan()).await.unwrap();
        let child = cms.get("kept-child").await.unwrap();
        assert!(
            child
                .metadata
                .owner_references
                .unwrap_or_default()
                .is_empty(),
            "{}",
            t.how
        );
    }
}

#[tokio::test]
async fn deleting_a_namespace_deletes_its_contents() {
    let cluster = kube_sandbox::Cluster::new("ns-delete");
    let client = cluster.client();
    let nss: Api<Namespace> = Api::all(client.clone());
    nss.create(
        &PostParams::default(),
        &serde_json::from_value(json!({"metadata": {"name": "team"}})).unwrap(),
    )
    .await
    .unwrap();
    let cms: Api<ConfigMap> = Api::namespaced(client.clone(), "team");
    cms.create(&PostParams::default(), &cm("a", json!({})))
        .await
        .unwrap();
    nss.delete("team", &DeleteParams::default()).await.unwrap();
    let phase = nss
        .get("team")
        .await
        .map(|n| n.status.and_then(|s| s.phase));
    assert!(matches!(phase, Ok(Some(ref p)) if p == "Terminating") || phase.is_err());
    let err = cms
        .create(&PostParams::default(), &cm("b", json!({})))
        .await;
    assert!(
        err.is_err(),
        "creating in a terminating namespace must fail"
    );
    eventually("namespace gone", || {
        let nss = nss.clone();
        async move {
            nss.get_opt("team")
                .await
                .map(|n| n.is_none())
                .unwrap_or(false)
        }
    })
    .await;
    assert!(
        cms.list(&ListParams::default())
            .await
            .unwrap()
            .items
            .is_empty()
    );
}

#[tokio::test]
async fn bad_input_gets_kubernetes_shaped_errors() {
    for t in targets().await {
        let c = &t.client;
        // (method, path, content type, body, expected code, expected reason)
        type Case = (
            &'static str,
            &'static str,
            &'static str,
            Vec<u8>,
            u16,
            &'static str,
        );
        let cases: Vec<Case> = vec![
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                b"{not json".to_vec(),
                400,
                "BadRequest",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"apiVersion":"v1","kind":"Secret","metadata":{"name":"x"}}"#.to_vec(),
                400,
                "BadRequest",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"apiVersion":"v9","kind":"ConfigMap","metadata":{"name":"x"}}"#.to_vec(),
                400,
                "BadRequest",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{}}"#.to_vec(),
                422,
                "Invalid",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"Bad_Name"}}"#
                    .to_vec(),
                422,
                "Invalid",
            ),
            (
                "GET",
                "/api/v1/namespaces/default/gizmos",
                "application/json",
                vec![],
                404,
                "NotFound",
            ),
            (
                "GET",
                "/api/v1/namespaces/default/configmaps?labelSelector=a%20in%20(",
                "application/json",
                vec![],
                400,
                "BadRequest",
            ),
            (
                "GET",
                "/api/v1/namespaces/default/configmaps?fieldSelector=spec.nodeName%3Dx",
                "application/json",
                vec![],
                400,
                "BadRequest",
            ),
            (
                "GET",
                "/api/v1/namespaces/default/configmaps?limit=abc",
                "application/json",
                vec![],
                400,
                "BadRequest",
            ),
            (
                "POST",
                "/api/v1/namespaces/nowhere/configmaps",
                "application/json",
                br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"x"}}"#.to_vec(),
                404,
                "NotFound",
            ),
            (
                "PATCH",
                "/api/v1/namespaces/default/configmaps/x",
                "text/plain",
                b"{}".to_vec(),
                415,
                "UnsupportedMediaType",
            ),
            (
                "POST",
                "/api/v1/namespaces/default/configmaps",
                "application/json",
                {
                    let mut big = br#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"big"},"data":{"k":""#.to_vec();
                    big.extend(std::iter::repeat_n(b'a', 4 * 1024 * 1024));
                    big.extend(br#""}}"#);
                    big
                },
                413,
                "RequestEntityTooLarge",
            ),
        ];
        for (method, path, ct, body, code, reason) in cases {
            let (status, value) = raw(c, method, path, ct, body).await;
            assert_eq!(status, code, "{}: {method} {path}: {value}", t.how);
            assert_eq!(value["kind"], "Status", "{}: {method} {path}", t.how);
            assert_eq!(
                value["reason"], reason,
                "{}: {method} {path}: {value}",
                t.how
            );
            assert_eq!(value["code"], code);
            assert!(value["message"].as_str().is_some_and(|m| !m.is_empty()));
        }
    }
}

#[tokio::test]
async fn unauthenticated_and_unauthorized_requests_are_refused() {
    let cluster = kube_sandbox::Cluster::new("auth");
    let anonymous = cluster.client_with_token("wrong");
    let pods: Api<Pod> = Api::namespaced(anonymous, "default");
    match pods.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 401),
        other => panic!("expected 401, got {other:?}"),
    }
    cluster
        .auth()
        .add_token("viewer-token", kube_sandbox::UserInfo::new("viewer", &[]));
    let viewer: Api<Pod> = Api::namespaced(cluster.client_with_token("viewer-token"), "default");
    match viewer.list(&ListParams::default()).await {
        Err(kube::Error::Api(s)) => assert_eq!(s.code, 403),
        other => panic!("expected 403, got {other:?}"),
    }
    // RBAC objects grant access.
    let admin = cluster.client();
    let roles: Api<k8s_openapi::api::rbac::v1::ClusterRole> = Api::all(admin.clone());
    roles
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "pod-reader"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]}]})).unwrap())
        .await
        .unwrap();
    let bindings: Api<k8s_openapi::api::rbac::v1::RoleBinding> =
        Api::namespaced(admin.clone(), "default");
    bindings
        .create(&PostParams::default(), &serde_json::from_value(json!({"metadata": {"name": "viewer-pods"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "pod-reader"},
            "subjects": [{"kind": "User", "name": "viewer"}]})).unwrap())
        .await
        .unwrap();
    assert!(viewer.list(&ListParams::default()).await.is_ok());
    let other_ns: Api<Pod> =
        Api::namespaced(cluster.client_with_token("viewer-token"), "kube-system");
    assert!(other_ns.list(&ListParams::default()).await.is_err());
    // SubjectAccessReview answers from the same rules.
    let (status, review) = raw(&admin, "POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", "application/json",
        serde_json::to_vec(&json!({"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
            "spec": {"user": "viewer", "resourceAttributes": {"namespace": "default", "verb": "list", "resource": "pods"}}})).unwrap()).await;
    assert_eq!(status, 201);
    assert_eq!(review["status"]["allowed"], true);
}

#[tokio::test]
async fn service_account_tokens_are_issued_and_reviewed() {
    let cluster = kube_sandbox::Cluster::new("tokens");
    let client = cluster.client();
    let (status, _) = raw(
        &client,
        "POST",
        "/api/v1/namespaces/default/serviceaccounts",
        "application/json",
        br#"{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"}}"#.to_vec(),
    )
    .await;
    assert_eq!(status, 201);
    let (status, tr) = raw(&client, "POST", "/api/v1/namespaces/default/serviceaccounts/robot/token", "application/json",
        br#"{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest","spec":{"audiences":["api"],"expirationSeconds":3600}}"#.to_vec()).await;
    assert_eq!(status, 201);
    let token = tr["status"]["token"].as_str().unwrap().to_string();
    let (_, review) = raw(&client, "POST", "/apis/authentication.k8s.io/v1/tokenreviews", "application/json",
        serde_json::to_vec(&json!({"apiVersion": "authentication.k8s.io/v1", "kind": "TokenReview", "spec": {"token": token}})).unwrap()).await;
    assert_eq!(review["status"]["authenticated"], true);
    assert_eq!(
        review["status"]["user"]["username"],
        "system:serviceaccount:default:robot"
    );
}

#[tokio::test]
async fn server_side_apply_creates_and_updates() {
    let cluster = kube_sandbox::Cluster::new("ssa");
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let params = PatchParams::apply("tester").force();
    let applied = cms
        .patch(
            "applied",
            &params,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied"}, "data": {"a": "1"}})),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["a"], "1");
    let again = cms
        .patch(
            "applied",
            &params,
            &Patch::Apply(json!({"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "applied"}, "data": {"a": "2"}})),
        )
        .await
        .unwrap();
    assert_eq!(again.data.unwrap()["a"], "2");
}

#[tokio::test]
async fn noop_updates_keep_the_resource_version() {
    let cluster = kube_sandbox::Cluster::new("noop");
    let cms: Api<ConfigMap> = Api::namespaced(cluster.client(), "default");
    let created = cms
        .create(&PostParams::default(), &cm("same", json!({"a": "b"})))
        .await
        .unwrap();
    let patched = cms
        .patch(
            "same",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"k": "v"}})),
        )
        .await
        .unwrap();
    assert_eq!(
        created.metadata.resource_version,
        patched.metadata.resource_version
    );
}

#[tokio::test]
async fn tls_serving_works_with_the_written_kubeconfig() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cluster = kube_sandbox::Cluster::new("tls");
    let dir = std::env::temp_dir().join(format!("kube-sandbox-tls-{}", std::process::id()));
    let path = dir.join("kubeconfig");
    let served = cluster
        .serve(kube_sandbox::ServeOptions {
            tls: true,
            kubeconfig_path: Some(path.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(served.url.starts_with("https://127.0.0.1:"));
    let kubeconfig = kube::config::Kubeconfig::read_from(&path).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let version = client.apiserver_version().await.unwrap();
    assert_eq!(version.git_version, "v1.36.2");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn kube_runtime_controller_reconciles_objects_created_after_it_started() {
    use kube::runtime::controller::{Action, Controller};
    use std::sync::Arc;
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let controller_api = cms.clone();
        let reconcile = |cm: Arc<ConfigMap>, api: Arc<Api<ConfigMap>>| async move {
            let name = cm.metadata.name.clone().unwrap_or_default();
            if cm
                .metadata
                .annotations
                .as_ref()
                .is_some_and(|a| a.contains_key("reconciled"))
            {
                return Ok::<_, kube::Error>(Action::await_change());
            }
            let patch = Patch::Merge(json!({"metadata": {"annotations": {"reconciled": "yes"}}}));
            api.patch(&name, &PatchParams::default(), &patch).await?;
            Ok(Action::await_change())
        };
        let handle = tokio::spawn(
            Controller::new(
                controller_api.clone(),
                kube::runtime::watcher::Config::default(),
            )
            .run(
                reconcile,
                |_, _, _| Action::await_change(),
                Arc::new(controller_api),
            )
            .for_each(|_| async {}),
        );
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        for i in 0..5 {
            cms.create(&PostParams::default(), &cm(&format!("late-{i}"), json!({})))
                .await
                .unwrap();
        }
        let cms2 = cms.clone();
        eventually("every object reconciled", || {
            let cms = cms2.clone();
            async move {
                cms.list(&ListParams::default()).await.is_ok_and(|l| {
                    l.items
                        .iter()
                        .filter(|c| {
                            c.metadata
                                .name
                                .as_deref()
                                .is_some_and(|n| n.starts_with("late-"))
                        })
                        .all(|c| {
                            c.metadata
                                .annotations
                                .as_ref()
                                .is_some_and(|a| a.contains_key("reconciled"))
                        })
                        && l.items.len() >= 5
                })
            }
        })
        .await;
        handle.abort();
        let _ = t.how;
    }
}

#[tokio::test]
async fn kubectl_style_table_output_uses_printer_columns() {
    let cluster = kube_sandbox::Cluster::new("table");
    let client = cluster.client();
    let mut crd: serde_json::Value = serde_json::from_str(WIDGET_CRD).unwrap();
    crd["spec"]["versions"][0]["additionalPrinterColumns"] =
        json!([{"name": "Size", "type": "integer", "jsonPath": ".spec.size"}]);
    let (status, _) = raw(
        &client,
        "POST",
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        "application/json",
        serde_json::to_vec(&crd).unwrap(),
    )
    .await;
    assert_eq!(status, 201);
    let gvk = GroupVersionKind::gvk("example.com", "v1", "Widget");
    let widgets: Api<DynamicObject> = Api::namespaced_with(
        client.clone(),
        "default",
        &ApiResource::from_gvk_with_plural(&gvk, "widgets"),
    );
    widgets
        .create(&PostParams::default(), &widget("w", json!({"size": 7})))
        .await
        .unwrap();
    let req = http::Request::get("/apis/example.com/v1/namespaces/default/widgets")
        .header(
            "accept",
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json",
        )
        .body(Vec::new())
        .unwrap();
    let table: serde_json::Value =
        serde_json::from_str(&client.request_text(req).await.unwrap()).unwrap();
    assert_eq!(table["kind"], "Table");
    assert_eq!(table["columnDefinitions"][1]["name"], "Size");
    assert_eq!(table["rows"][0]["cells"], json!(["w", 7]));
}

#[tokio::test]
async fn streaming_list_watchers_get_initial_events_then_changes() {
    use kube::runtime::{WatchStreamExt, watcher};
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        cms.create(&PostParams::default(), &cm("before", json!({})))
            .await
            .unwrap();
        let config = watcher::Config::default().streaming_lists();
        let mut stream = watcher(cms.clone(), config).applied_objects().boxed();
        let first = stream.try_next().await.unwrap().unwrap();
        assert_eq!(first.metadata.name.as_deref(), Some("before"), "{}", t.how);
        cms.create(&PostParams::default(), &cm("after", json!({})))
            .await
            .unwrap();
        let second = stream.try_next().await.unwrap().unwrap();
        assert_eq!(second.metadata.name.as_deref(), Some("after"), "{}", t.how);
    }
}

#[tokio::test]
async fn injected_faults_fail_matching_requests_until_removed() {
    use kube_sandbox::{FaultAction, FaultRule};
    for t in targets().await {
        let cms: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let id = t.cluster.faults().add(FaultRule {
            resource: Some("configmaps".into()),
            verbs: vec!["create".into()],
            action: FaultAction::Status(500),
        });
        match cms
            .create(&PostParams::default(), &cm("f", json!({})))
            .await
        {
            Err(kube::Error::Api(s)) => assert_eq!(
                (s.code, s.reason.as_str()),
                (500, "InternalError"),
                "{}",
                t.how
            ),
            other => panic!("{}: expected 500, got {other:?}", t.how),
        }
        // Other verbs are untouched.
        assert!(cms.list(&ListParams::default()).await.is_ok());
        t.cluster.faults().remove(id);
        cms.create(&PostParams::default(), &cm("f", json!({})))
            .await
            .unwrap();
    }
}
