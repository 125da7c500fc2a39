//! Uses the packaged kube-sandbox, kubeocean-core and kairship-core from outside the workspace:
//! a served sandbox cluster reached over HTTP with kube-rs, and pure functions of both cores.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity as K8sQuantity;
use kube::api::{Api, PostParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube_kit::quantity::Quantity;
use kubeocean_core::crd::ResourceLimit;

#[tokio::test]
async fn packaged_crates_work_outside_the_workspace() {
    // A served sandbox, reached through the kubeconfig it writes, as any kube-rs user would.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let cluster = kube_sandbox::Cluster::new("consumer");
    let served = cluster
        .serve(kube_sandbox::ServeOptions::default())
        .await
        .expect("serve the sandbox");
    let kubeconfig = Kubeconfig::from_yaml(&served.kubeconfig_yaml).expect("parse its kubeconfig");
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("config from the kubeconfig");
    let client = kube::Client::try_from(config).expect("client");
    let config_maps: Api<ConfigMap> = Api::namespaced(client, "default");
    let config_map: ConfigMap = serde_json::from_value(serde_json::json!({
        "metadata": {"name": "packaged"},
        "data": {"crate": "kube-sandbox"},
    }))
    .expect("a ConfigMap");
    config_maps
        .create(&PostParams::default(), &config_map)
        .await
        .expect("create the ConfigMap");
    let read = config_maps.get("packaged").await.expect("read it back");
    assert_eq!(
        read.data.and_then(|d| d.get("crate").cloned()).as_deref(),
        Some("kube-sandbox")
    );
    assert!(read.metadata.resource_version.is_some());

    // kubeocean-core's leasing math: what is left of 8 CPUs capped at 50% and at 3 CPUs.
    let mut lendable =
        BTreeMap::from([("cpu".to_owned(), Quantity::parse("8").expect("a quantity"))]);
    kubeocean_core::leasing::apply_limits(
        &mut lendable,
        &[
            ResourceLimit {
                resource: "cpu".to_owned(),
                quantity: None,
                percent: Some(50),
            },
            ResourceLimit {
                resource: "cpu".to_owned(),
                quantity: Some(K8sQuantity("3".to_owned())),
                percent: None,
            },
        ],
    );
    assert_eq!(lendable["cpu"].to_string(), "3");

    // kairship-core's Instance naming rules.
    assert!(kairship_core::naming::validate_instance_name("team-a").is_ok());
    assert!(kairship_core::naming::validate_instance_name("Team_A").is_err());
    assert_eq!(
        kairship_core::naming::pedia_cluster_name("team-a"),
        "kairship-team-a"
    );
}
