//! `dryRun=All` on create, as kube-apiserver answers it: the object is validated and returned,
//! nothing is stored, and a name already taken is `409 AlreadyExists` as a real create would be.

#![allow(clippy::unwrap_used)]

mod common;

use common::targets;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, PostParams};
use serde_json::json;

fn config_map(name: &str) -> ConfigMap {
    serde_json::from_value(json!({"metadata": {"name": name}, "data": {"k": "v"}})).unwrap()
}

#[tokio::test]
async fn dry_run_creates_validate_store_nothing_and_see_taken_names() {
    for t in targets().await {
        let how = t.how;
        let maps: Api<ConfigMap> = Api::namespaced(t.client.clone(), "default");
        let dry = PostParams {
            dry_run: true,
            ..PostParams::default()
        };
        let answered = maps.create(&dry, &config_map("only-dry")).await.unwrap();
        assert_eq!(answered.metadata.name.as_deref(), Some("only-dry"), "{how}");
        assert!(answered.metadata.uid.is_some(), "{how}");
        assert!(maps.get_opt("only-dry").await.unwrap().is_none(), "{how}");

        let bad = maps
            .create(&dry, &config_map("Not_Valid"))
            .await
            .unwrap_err();
        assert!(
            matches!(&bad, kube::Error::Api(s) if s.code == 422 && s.reason == "Invalid"),
            "{how}: {bad:?}"
        );

        maps.create(&PostParams::default(), &config_map("taken"))
            .await
            .unwrap();
        let err = maps.create(&dry, &config_map("taken")).await.unwrap_err();
        assert!(
            matches!(&err, kube::Error::Api(s) if s.code == 409 && s.reason == "AlreadyExists"),
            "{how}: {err:?}"
        );
    }
}
