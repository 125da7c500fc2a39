//! Validation of ClusterBinding specs beyond what the CRD schema enforces (and again for
//! objects that bypassed it). A binding that fails is marked Failed with reason
//! `ValidationFailed` and gets no workloads.

use crate::crd::ClusterBinding;
use crate::leasing::validate_selector;
use crate::naming::{DNS_LABEL_MAX_LEN, is_dns1123_label, is_dns1123_subdomain};

/// Longest `spec.clusterID` (it is part of every virtual node name).
pub const MAX_CLUSTER_ID_LEN: usize = 24;

/// Checks a binding; `Err` holds one readable message per problem, each naming the field.
pub fn validate_binding(binding: &ClusterBinding) -> Result<(), Vec<String>> {
    let mut problems = Vec::new();
    let name = binding.metadata.name.as_deref().unwrap_or_default();
    // The name is the value of the `kubeocean.io/cluster-binding` label on virtual nodes.
    if name.len() > DNS_LABEL_MAX_LEN {
        problems.push(format!(
            "metadata.name {name:?} is longer than {DNS_LABEL_MAX_LEN} characters (it is used as a label value)"
        ));
    }
    let spec = &binding.spec;
    if !is_dns1123_label(&spec.cluster_id) || spec.cluster_id.len() > MAX_CLUSTER_ID_LEN {
        problems.push(format!(
            "spec.clusterID {:?} must be a DNS label (lowercase letters, digits and '-') of at most {MAX_CLUSTER_ID_LEN} characters",
            spec.cluster_id
        ));
    }
    match spec.secret_ref.name.as_deref() {
        None | Some("") => problems.push("spec.secretRef.name is required".to_owned()),
        Some(secret) if !is_dns1123_subdomain(secret) => problems.push(format!(
            "spec.secretRef.name {secret:?} is not a valid Secret name"
        )),
        Some(_) => {}
    }
    if let Some(namespace) = spec.secret_ref.namespace.as_deref()
        && !namespace.is_empty()
        && !is_dns1123_label(namespace)
    {
        problems.push(format!(
            "spec.secretRef.namespace {namespace:?} is not a valid namespace name"
        ));
    }
    match spec.mount_namespace.as_deref() {
        None | Some("") => problems.push(
            "spec.mountNamespace is required: the worker namespace that receives mapped objects"
                .to_owned(),
        ),
        Some(ns) if !is_dns1123_label(ns) => problems.push(format!(
            "spec.mountNamespace {ns:?} is not a valid namespace name"
        )),
        Some(_) => {}
    }
    for (i, ns) in spec.service_namespaces.iter().enumerate() {
        if !is_dns1123_label(ns) {
            problems.push(format!(
                "spec.serviceNamespaces[{i}] {ns:?} is not a valid namespace name"
            ));
        }
    }
    if let Some(class) = spec.pod_priority_class_name.as_deref()
        && !class.is_empty()
        && !is_dns1123_subdomain(class)
    {
        problems.push(format!(
            "spec.podPriorityClassName {class:?} is not a valid PriorityClass name"
        ));
    }
    if let Some(selector) = &spec.node_selector {
        problems.extend(validate_selector(selector, "spec.nodeSelector"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn binding(name: &str, spec: Value) -> ClusterBinding {
        serde_json::from_value(json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
            "metadata": {"name": name}, "spec": spec,
        }))
        .unwrap()
    }

    #[test]
    fn validate_table() {
        let good = json!({"clusterID": "w1", "secretRef": {"name": "kc", "namespace": "ops"},
                          "mountNamespace": "kubeocean-worker"});
        let with = |patch: Value| {
            let mut spec = good.clone();
            for (k, v) in patch.as_object().unwrap() {
                spec[k] = v.clone();
            }
            spec
        };
        let long_name = "b".repeat(64);
        let cases: Vec<(&str, &str, Value, Option<&str>)> = vec![
            ("valid", "w1", good.clone(), None),
            (
                "valid with extras",
                "w1",
                with(
                    json!({"serviceNamespaces": ["default"], "podPriorityClassName": "low",
                            "nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                                {"key": "pool", "operator": "In", "values": ["a"]}]}]}}),
                ),
                None,
            ),
            ("long name", &long_name, good.clone(), Some("metadata.name")),
            (
                "cluster id too long",
                "w1",
                with(json!({"clusterID": "a".repeat(25)})),
                Some("spec.clusterID"),
            ),
            (
                "cluster id uppercase",
                "w1",
                with(json!({"clusterID": "W1"})),
                Some("spec.clusterID"),
            ),
            (
                "no secret name",
                "w1",
                with(json!({"secretRef": {"namespace": "ops"}})),
                Some("spec.secretRef.name is required"),
            ),
            (
                "bad secret name",
                "w1",
                with(json!({"secretRef": {"name": "Bad_Name"}})),
                Some("spec.secretRef.name"),
            ),
            (
                "bad secret namespace",
                "w1",
                with(json!({"secretRef": {"name": "kc", "namespace": "a.b"}})),
                Some("spec.secretRef.namespace"),
            ),
            (
                "no mount namespace",
                "w1",
                with(json!({"mountNamespace": ""})),
                Some("spec.mountNamespace is required"),
            ),
            (
                "bad mount namespace",
                "w1",
                with(json!({"mountNamespace": "Mount"})),
                Some("spec.mountNamespace"),
            ),
            (
                "bad service namespace",
                "w1",
                with(json!({"serviceNamespaces": ["ok", "-x"]})),
                Some("spec.serviceNamespaces[1]"),
            ),
            (
                "bad priority class",
                "w1",
                with(json!({"podPriorityClassName": "Low!"})),
                Some("spec.podPriorityClassName"),
            ),
            (
                "bad selector",
                "w1",
                with(
                    json!({"nodeSelector": {"nodeSelectorTerms": [{"matchExpressions": [
                    {"key": "pool", "operator": "Near", "values": ["a"]}]}]}}),
                ),
                Some("spec.nodeSelector"),
            ),
        ];
        for (name, binding_name, spec, want) in cases {
            let result = validate_binding(&binding(binding_name, spec));
            match want {
                None => assert_eq!(result, Ok(()), "{name}"),
                Some(fragment) => {
                    let problems = result.expect_err(name);
                    assert_eq!(problems.len(), 1, "{name}: {problems:?}");
                    assert!(problems[0].contains(fragment), "{name}: {problems:?}");
                }
            }
        }
    }

    #[test]
    fn every_problem_is_reported() {
        let b = binding("w1", json!({"clusterID": "", "secretRef": {}}));
        assert_eq!(validate_binding(&b).unwrap_err().len(), 3);
    }
}
