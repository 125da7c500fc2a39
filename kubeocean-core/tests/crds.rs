//! The generated CRDs: committed files are current, and the schemas carry the admission
//! rules and wire names of upstream Kubeocean.

#![allow(clippy::unwrap_used)]

use std::path::PathBuf;

use kubeocean_core::crd::{self, schema};
use serde_json::Value;

const REGENERATE: &str = "cargo run -p kubeocean-bin -- crds --out deploy/crds/kubeocean";

fn deploy_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/crds/kubeocean")
}

#[test]
fn committed_crd_files_are_current() {
    for (file, want) in crd::crd_files().unwrap() {
        let path = deploy_dir().join(&file);
        let have = std::fs::read_to_string(&path).unwrap_or_else(|err| {
            panic!(
                "cannot read {}: {err}; regenerate with `{REGENERATE}`",
                path.display()
            )
        });
        assert!(
            have == want,
            "{} is stale; regenerate with `{REGENERATE}`",
            path.display()
        );
    }
}

fn crd_json(kind: &str) -> Value {
    let crd = crd::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .unwrap();
    serde_json::to_value(crd).unwrap()
}

fn at<'a>(value: &'a Value, pointer: &str) -> &'a Value {
    value
        .pointer(pointer)
        .unwrap_or_else(|| panic!("missing {pointer}"))
}

#[test]
fn crd_identity_matches_upstream() {
    // (kind, name, plural, short name, printer columns)
    let table = [
        (
            "ClusterBinding",
            "clusterbindings.cloud.tencent.com",
            "cb",
            vec!["ClusterID", "Phase", "Age"],
        ),
        (
            "ResourceLeasingPolicy",
            "resourceleasingpolicies.cloud.tencent.com",
            "rlp",
            vec!["Cluster", "Phase", "Active", "Age"],
        ),
    ];
    for (kind, name, short, columns) in table {
        let crd = crd_json(kind);
        assert_eq!(at(&crd, "/metadata/name"), name, "{kind}");
        assert_eq!(at(&crd, "/spec/group"), "cloud.tencent.com", "{kind}");
        assert_eq!(at(&crd, "/spec/scope"), "Cluster", "{kind}");
        assert_eq!(at(&crd, "/spec/names/shortNames/0"), short, "{kind}");
        assert_eq!(at(&crd, "/spec/versions/0/name"), "v1beta1", "{kind}");
        assert!(
            at(&crd, "/spec/versions/0/subresources/status").is_object(),
            "{kind}: status subresource"
        );
        let names: Vec<&str> = at(&crd, "/spec/versions/0/additionalPrinterColumns")
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, columns, "{kind}: printer columns");
    }
}

#[test]
fn spec_and_status_fields_match_upstream() {
    let schema_root = "/spec/versions/0/schema/openAPIV3Schema/properties";
    // (kind, section, fields as upstream's CRD names them)
    let table = [
        (
            "ClusterBinding",
            "spec",
            vec![
                "clusterID",
                "directScheduling",
                "disableNodeDefaultTaint",
                "mountNamespace",
                "nodeSelector",
                "podPriorityClassName",
                "runningDaemonsetByDefault",
                "secretRef",
                "serviceNamespaces",
            ],
        ),
        (
            "ClusterBinding",
            "status",
            vec!["conditions", "lastSyncTime", "phase"],
        ),
        (
            "ResourceLeasingPolicy",
            "spec",
            vec![
                "cluster",
                "forceReclaim",
                "gracefulReclaimPeriodSeconds",
                "nodeSelector",
                "resourceLimits",
                "timeWindows",
                "timezone",
            ],
        ),
        (
            "ResourceLeasingPolicy",
            "status",
            vec!["activeTimeWindow", "conditions", "lastAppliedTime", "phase"],
        ),
    ];
    for (kind, section, fields) in table {
        let crd = crd_json(kind);
        let properties = at(&crd, &format!("{schema_root}/{section}/properties"))
            .as_object()
            .unwrap();
        let names: Vec<&str> = properties.keys().map(String::as_str).collect();
        assert_eq!(names, fields, "{kind}.{section}");
    }
}

#[test]
fn admission_rules_are_in_the_schema() {
    let cb = crd_json("ClusterBinding");
    let cluster_id = at(
        &cb,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/clusterID",
    );
    assert_eq!(cluster_id["maxLength"], 24);
    assert_eq!(cluster_id["pattern"], schema::DNS_LABEL_PATTERN);
    assert_eq!(
        cluster_id["x-kubernetes-validations"][0]["rule"],
        "self == oldSelf"
    );

    let rlp = crd_json("ResourceLeasingPolicy");
    let spec = at(
        &rlp,
        "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties",
    );
    let window = &spec["timeWindows"]["items"]["properties"];
    assert_eq!(window["start"]["pattern"], r"^([01]\d|2[0-3]):[0-5]\d$");
    assert_eq!(window["end"]["pattern"], r"^([01]\d|2[0-3]):[0-5]\d$");
    assert_eq!(
        window["days"]["items"]["pattern"],
        schema::weekday_pattern()
    );
    let limit = &spec["resourceLimits"]["items"]["properties"];
    assert_eq!(limit["percent"]["minimum"], 0.0);
    assert_eq!(limit["percent"]["maximum"], 100.0);
    assert_eq!(limit["quantity"]["x-kubernetes-int-or-string"], true);
    assert_eq!(spec["timezone"]["pattern"], schema::TIMEZONE_PATTERN);
}

#[test]
fn weekday_pattern_spells_every_case_of_every_day() {
    let pattern = schema::weekday_pattern();
    assert_eq!(
        pattern.matches('|').count(),
        6,
        "seven alternatives in {pattern}"
    );
    assert!(
        pattern.starts_with("^([Mm][Oo][Nn][Dd][Aa][Yy]|")
            && pattern.ends_with("[Ss][Uu][Nn][Dd][Aa][Yy])$"),
        "{pattern}"
    );
}

#[test]
fn yaml_stream_holds_both_crds() {
    let yaml = crd::crds_yaml().unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).unwrap();
    let names: Vec<&str> = docs
        .iter()
        .map(|d| d["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "clusterbindings.cloud.tencent.com",
            "resourceleasingpolicies.cloud.tencent.com"
        ]
    );
    let generated: Vec<Value> = crd::crds()
        .into_iter()
        .map(|c| serde_json::to_value(c).unwrap())
        .collect();
    assert_eq!(docs, generated, "the YAML reads back as the generated CRDs");
}
