//! The Instance CRD: the committed manifest is current, and the generated definition has the
//! scope, names, columns, subresources and validation rules the design asks for.
#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kairship_core::{CRDS_MANIFEST_PATH, CRDS_REGENERATE_COMMAND, crds, crds_yaml};

fn workspace_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

#[test]
fn committed_crd_manifest_is_current() {
    let path = workspace_root().join(CRDS_MANIFEST_PATH);
    let committed = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read {}: {e}; generate it with `{CRDS_REGENERATE_COMMAND}`",
            path.display()
        )
    });
    let generated = crds_yaml().unwrap();
    assert!(
        committed == generated,
        "{} is stale; regenerate it from the workspace root with `{CRDS_REGENERATE_COMMAND}`",
        path.display()
    );
}

#[test]
fn manifest_parses_back_to_the_same_definitions() {
    let parsed: Vec<CustomResourceDefinition> =
        serde_saphyr::from_multiple(&crds_yaml().unwrap()).unwrap();
    assert_eq!(parsed, crds());
}

fn instance_crd() -> serde_json::Value {
    let all = crds();
    let names: Vec<_> = all.iter().map(|c| c.metadata.name.clone()).collect();
    assert_eq!(
        names,
        [
            Some("instances.kairship.io".to_string()),
            Some("auditrecords.kairship.io".to_string())
        ]
    );
    serde_json::to_value(&all[0]).unwrap()
}

#[test]
fn audit_records_are_namespaced_without_status() {
    let crd = serde_json::to_value(&crds()[1]).unwrap();
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "kairship.io");
    // Kept in the API server's namespace, where its Role lets it create, list and delete.
    assert_eq!(spec["scope"], "Namespaced");
    assert_eq!(spec["names"]["kind"], "AuditRecord");
    assert_eq!(spec["names"]["plural"], "auditrecords");
    let version = &spec["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    assert!(version.get("subresources").is_none_or(|s| s.is_null()));
    let fields = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]
        .as_object()
        .unwrap();
    let mut names: Vec<&str> = fields.keys().map(String::as_str).collect();
    names.sort_unstable();
    // Who, what, where, how it ended: never a body.
    assert_eq!(
        names,
        [
            "actingAs", "code", "door", "groups", "instance", "message", "object", "time", "user",
            "verb"
        ]
    );
}

#[test]
fn names_scope_and_subresources() {
    let crd = instance_crd();
    assert_eq!(crd["metadata"]["name"], "instances.kairship.io");
    let spec = &crd["spec"];
    assert_eq!(spec["group"], "kairship.io");
    assert_eq!(spec["scope"], "Cluster");
    assert_eq!(spec["names"]["kind"], "Instance");
    assert_eq!(spec["names"]["plural"], "instances");
    assert_eq!(spec["names"]["shortNames"], serde_json::json!(["ki"]));
    let version = &spec["versions"][0];
    assert_eq!(version["name"], "v1alpha1");
    assert_eq!(version["subresources"]["status"], serde_json::json!({}));
    let columns: Vec<(&str, &str)> = version["additionalPrinterColumns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["jsonPath"].as_str().unwrap()))
        .collect();
    assert_eq!(
        columns,
        [
            ("State", ".status.state"),
            ("Clusters", ".status.summary.clusterSummary.totalNum"),
            ("Ready", ".status.summary.clusterSummary.readyNum"),
            ("Version", ".status.karmadaVersion"),
            ("Age", ".metadata.creationTimestamp"),
        ]
    );
}

fn rules(schema: &serde_json::Value) -> Vec<String> {
    schema["x-kubernetes-validations"]
        .as_array()
        .map(|rules| {
            rules
                .iter()
                .map(|r| r["rule"].as_str().unwrap().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn validation_rules() {
    let crd = instance_crd();
    let root = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"];
    assert!(
        rules(root)
            .iter()
            .any(|r| r.contains("self.metadata.name.matches")),
        "name rule"
    );
    let name_rule = root["x-kubernetes-validations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["rule"].as_str().unwrap().contains("self.metadata.name"))
        .unwrap();
    assert_eq!(name_rule["fieldPath"], ".metadata.name");
    assert_eq!(
        root["properties"]["metadata"],
        serde_json::json!({"type": "object", "properties": {"name": {"type": "string"}}}),
        "fieldPath must name a field of the schema"
    );
    let spec = &root["properties"]["spec"];
    let spec_rules = rules(spec);
    for wanted in [
        "self.mode != 'Adopt' || has(self.kubeconfigSecretRef)",
        "self.mode != 'Provision' || has(self.provision)",
    ] {
        assert!(
            spec_rules.iter().any(|r| r == wanted),
            "missing rule {wanted}: {spec_rules:?}"
        );
    }
    assert_eq!(rules(&spec["properties"]["mode"]), ["self == oldSelf"]);
    assert_eq!(
        spec["properties"]["mode"]["enum"],
        serde_json::json!(["Provision", "Adopt"])
    );
    assert_eq!(
        spec["properties"]["deletionPolicy"]["enum"],
        serde_json::json!(["Delete", "Retain"])
    );
    assert_eq!(spec["required"], serde_json::json!(["mode"]));
    let status = &root["properties"]["status"]["properties"];
    assert_eq!(
        status["state"]["enum"],
        serde_json::json!(["INPROCESS", "RUNNING", "UNAVAILABLE", "TERMINAL", "UNKNOWN"])
    );
    let summary = &status["summary"]["properties"];
    for key in [
        "clusterSummary",
        "nodeSummary",
        "resourceSummary",
        "resourceTotalNum",
        "policyTotalNum",
        "workloadSummary",
    ] {
        assert!(summary.get(key).is_some(), "status.summary.{key} missing");
    }
    assert_eq!(
        summary["resourceSummary"]["properties"]["allocatable"]["additionalProperties"]["x-kubernetes-int-or-string"],
        true
    );
}

#[tokio::test]
async fn a_bad_name_is_reported_on_metadata_name() {
    use kairship_core::instance::{DeletionPolicy, Instance, InstanceMode, InstanceSpec};
    use kube::Api;
    use kube::api::PostParams;
    let host = kube_sandbox::Cluster::new("host");
    let client = host.client();
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for crd in crds() {
        api.create(&PostParams::default(), &crd).await.unwrap();
    }
    let instance = Instance::new(
        "9lives",
        InstanceSpec {
            mode: InstanceMode::Adopt,
            kubeconfig_secret_ref: Some(kairship_core::instance::SecretKeyReference {
                namespace: "ns".into(),
                name: "kc".into(),
                key: None,
            }),
            provision: None,
            alias: None,
            deletion_policy: DeletionPolicy::Retain,
        },
    );
    let err = Api::<Instance>::all(client)
        .create(&PostParams::default(), &instance)
        .await
        .unwrap_err();
    let kube::Error::Api(status) = err else {
        panic!("{err}");
    };
    assert_eq!(status.code, 422);
    assert!(!status.message.contains("<nil>"), "{}", status.message);
    assert!(
        status.message.contains(
            "metadata.name: Invalid value: \"object\": metadata.name must be a DNS-1035 label"
        ),
        "{}",
        status.message
    );
}
