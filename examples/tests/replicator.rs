//! The ConfigMap replicator (`examples::replicator`) tested against kube-sandbox: the pattern
//! for testing one's own kube-rs controller without a cluster.
//!
//! `kube-sandbox = { version = "0.1", features = ["testing"] }` as a dev-dependency; each test
//! starts its own in-process cluster (`Sandboxes` shuts it down and stops the controller when
//! the test ends, however it ends), runs the controller on `cluster.client()`, makes changes as
//! a user would and waits with `eventually` (bounded polling, no sleeps) for what the
//! controller should make true.
#![allow(clippy::unwrap_used)]

use std::collections::BTreeMap;

use examples::replicator::{FINALIZER, FROM_LABEL, SOURCE_LABEL, run};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::{Api, Client};
use kube_sandbox::testing::prelude::{Sandboxes, create_namespace, eventually};
use serde_json::json;

const SOURCE_NS: &str = "shared";

/// A cluster with the source namespace and two team namespaces, the replicator running.
async fn start() -> (Sandboxes, Client) {
    let mut sandboxes = Sandboxes::new();
    let client = sandboxes.cluster("replicator").client();
    for ns in [SOURCE_NS, "team-a", "team-b"] {
        create_namespace(&client, ns).await;
    }
    tokio::spawn(run(client.clone(), SOURCE_NS, sandboxes.token().clone()));
    (sandboxes, client)
}

async fn create_source(client: &Client, name: &str, value: &str) {
    let source: ConfigMap = serde_json::from_value(json!({
        "metadata": {"name": name, "labels": {SOURCE_LABEL: "true"}},
        "data": {"value": value}
    }))
    .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), SOURCE_NS)
        .create(&PostParams::default(), &source)
        .await
        .unwrap();
}

/// The `value` of the copy of `name` in `namespace`, if there is a copy.
async fn copied_value(client: &Client, namespace: &str, name: &str) -> Option<String> {
    let copy = Api::<ConfigMap>::namespaced(client.clone(), namespace)
        .get_opt(name)
        .await
        .unwrap()?;
    copy.data.and_then(|d| d.get("value").cloned())
}

#[tokio::test]
async fn copies_follow_the_source_into_every_namespace() {
    let (_sandboxes, client) = start().await;
    create_source(&client, "ca", "v1").await;
    for ns in ["team-a", "team-b"] {
        eventually(&format!("a copy in {ns}"), || async {
            copied_value(&client, ns, "ca").await.as_deref() == Some("v1")
        })
        .await;
    }
    let copy = Api::<ConfigMap>::namespaced(client.clone(), "team-a")
        .get("ca")
        .await
        .unwrap();
    assert_eq!(
        copy.metadata.labels,
        Some(BTreeMap::from([(
            FROM_LABEL.to_owned(),
            "shared.ca".to_owned()
        )]))
    );

    // A namespace created later gets the copy too.
    create_namespace(&client, "team-c").await;
    eventually("a copy in the new namespace", || async {
        copied_value(&client, "team-c", "ca").await.as_deref() == Some("v1")
    })
    .await;

    // A change of the source reaches every copy.
    Api::<ConfigMap>::namespaced(client.clone(), SOURCE_NS)
        .patch(
            "ca",
            &PatchParams::default(),
            &Patch::Merge(json!({"data": {"value": "v2"}})),
        )
        .await
        .unwrap();
    for ns in ["team-a", "team-b", "team-c"] {
        eventually(&format!("the change in {ns}"), || async {
            copied_value(&client, ns, "ca").await.as_deref() == Some("v2")
        })
        .await;
    }
}

#[tokio::test]
async fn deleting_the_source_deletes_its_copies_then_the_source() {
    let (_sandboxes, client) = start().await;
    create_source(&client, "ca", "v1").await;
    let sources = Api::<ConfigMap>::namespaced(client.clone(), SOURCE_NS);
    eventually("the copies and the finalizer", || async {
        let finalized = sources
            .get("ca")
            .await
            .unwrap()
            .metadata
            .finalizers
            .is_some_and(|f| f.iter().any(|f| f == FINALIZER));
        finalized && copied_value(&client, "team-b", "ca").await.is_some()
    })
    .await;

    sources
        .delete("ca", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the copies and the source gone", || async {
        copied_value(&client, "team-a", "ca").await.is_none()
            && copied_value(&client, "team-b", "ca").await.is_none()
            && sources.get_opt("ca").await.unwrap().is_none()
    })
    .await;
}

#[tokio::test]
async fn unlabelled_configmaps_are_not_copied() {
    let (_sandboxes, client) = start().await;
    let plain: ConfigMap =
        serde_json::from_value(json!({"metadata": {"name": "local"}, "data": {"value": "x"}}))
            .unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), SOURCE_NS)
        .create(&PostParams::default(), &plain)
        .await
        .unwrap();
    // A labelled source created after it is copied; by then the unlabelled one would have
    // been too, had the controller picked it up.
    create_source(&client, "marker", "m").await;
    eventually("the labelled source copied", || async {
        copied_value(&client, "team-a", "marker").await.is_some()
    })
    .await;
    assert_eq!(copied_value(&client, "team-a", "local").await, None);
}
