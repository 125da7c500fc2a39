//! How the syncer and proxier pods of every binding are scheduled and run: image pull
//! Secrets, resources, node selection, tolerations, affinity, priority, extra labels and
//! annotations, security contexts. Read from the manager's `--workload-template` file (the
//! chart renders it from its values into a ConfigMap) and applied by [`super::templates`].
//!
//! The file has three sections of the same shape: `global` (both workloads) and `syncer`,
//! `proxier` (each overrides `global`; see [`PodSettings::overlaid_by`]). The names are
//! upstream Kubeocean's where they map (gocrane/kubeocean
//! `charts/kubeocean/templates/syncer-template-configmap.yaml`: `global.imagePullSecrets`,
//! `global.nodeSelector`, `global.tolerations`, `syncer.affinity`, `syncer.resources`,
//! `syncer.podSecurityContext`, `syncer.containerSecurityContext`).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Affinity, LocalObjectReference, PodSecurityContext, ResourceRequirements, SecurityContext,
    Toleration,
};
use kube_kit::quantity::Quantity;
use serde::Deserialize;

use crate::naming::is_dns1123_subdomain;

/// Pod settings of one workload (or of both, as the file's `global` section).
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PodSettings {
    /// Secrets the kubelet pulls the image with.
    #[serde(default)]
    pub image_pull_secrets: Vec<LocalObjectReference>,
    /// Container resources.
    #[serde(default)]
    pub resources: Option<ResourceRequirements>,
    /// Node labels the pods must match.
    #[serde(default)]
    pub node_selector: BTreeMap<String, String>,
    /// Taints the pods tolerate.
    #[serde(default)]
    pub tolerations: Vec<Toleration>,
    /// Node and pod (anti-)affinity.
    #[serde(default)]
    pub affinity: Option<Affinity>,
    /// PriorityClass of the pods.
    #[serde(default)]
    pub priority_class_name: Option<String>,
    /// Labels added to the pods (never the ones the manager selects them by).
    #[serde(default)]
    pub pod_labels: BTreeMap<String, String>,
    /// Annotations added to the pods.
    #[serde(default)]
    pub pod_annotations: BTreeMap<String, String>,
    /// Replaces the manager's pod security context (non-root, RuntimeDefault seccomp).
    #[serde(default)]
    pub pod_security_context: Option<PodSecurityContext>,
    /// Replaces the manager's container security context (no privilege escalation, read-only
    /// root filesystem, non-root, every capability dropped).
    #[serde(default)]
    pub container_security_context: Option<SecurityContext>,
}

impl PodSettings {
    /// `self` (the `global` section) with `component`'s settings on top: a field set there
    /// wins; labels, annotations and node selectors are merged key by key.
    pub fn overlaid_by(&self, component: &PodSettings) -> PodSettings {
        fn list<T: Clone>(base: &[T], over: &[T]) -> Vec<T> {
            if over.is_empty() {
                base.to_vec()
            } else {
                over.to_vec()
            }
        }
        fn map(
            base: &BTreeMap<String, String>,
            over: &BTreeMap<String, String>,
        ) -> BTreeMap<String, String> {
            let mut merged = base.clone();
            merged.extend(over.iter().map(|(k, v)| (k.clone(), v.clone())));
            merged
        }
        PodSettings {
            image_pull_secrets: list(&self.image_pull_secrets, &component.image_pull_secrets),
            resources: component
                .resources
                .clone()
                .or_else(|| self.resources.clone()),
            node_selector: map(&self.node_selector, &component.node_selector),
            tolerations: list(&self.tolerations, &component.tolerations),
            affinity: component.affinity.clone().or_else(|| self.affinity.clone()),
            priority_class_name: component
                .priority_class_name
                .clone()
                .or_else(|| self.priority_class_name.clone()),
            pod_labels: map(&self.pod_labels, &component.pod_labels),
            pod_annotations: map(&self.pod_annotations, &component.pod_annotations),
            pod_security_context: component
                .pod_security_context
                .clone()
                .or_else(|| self.pod_security_context.clone()),
            container_security_context: component
                .container_security_context
                .clone()
                .or_else(|| self.container_security_context.clone()),
        }
    }

    /// What is wrong with these settings, each problem naming its field under `section`.
    pub fn problems(&self, section: &str) -> Vec<String> {
        let mut problems = Vec::new();
        for (i, secret) in self.image_pull_secrets.iter().enumerate() {
            if !is_dns1123_subdomain(&secret.name) {
                problems.push(format!(
                    "{section}.imagePullSecrets[{i}].name {:?} is not a Secret name",
                    secret.name
                ));
            }
        }
        if let Some(name) = &self.priority_class_name
            && !name.is_empty()
            && !is_dns1123_subdomain(name)
        {
            problems.push(format!(
                "{section}.priorityClassName {name:?} is not a PriorityClass name"
            ));
        }
        for key in self.pod_labels.keys() {
            if RESERVED_POD_LABELS.contains(&key.as_str()) {
                problems.push(format!(
                    "{section}.podLabels.{key} is set by the manager (it selects the pods)"
                ));
            }
        }
        if let Some(resources) = &self.resources {
            for (kind, list) in [
                ("requests", &resources.requests),
                ("limits", &resources.limits),
            ] {
                for (name, quantity) in list.iter().flatten() {
                    if let Err(e) = Quantity::parse(&quantity.0) {
                        problems.push(format!("{section}.resources.{kind}.{name}: {e}"));
                    }
                }
            }
        }
        problems
    }
}

/// Pod labels the manager sets and selects by.
const RESERVED_POD_LABELS: &[&str] = &[
    "app.kubernetes.io/name",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/component",
    "app.kubernetes.io/managed-by",
    crate::labels::CLUSTER_BINDING,
];

/// The `--workload-template` file: settings of both workloads, then of each.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadTemplateFile {
    /// Settings of both workloads.
    #[serde(default)]
    pub global: PodSettings,
    /// Syncer settings, over `global`.
    #[serde(default)]
    pub syncer: PodSettings,
    /// Proxier settings, over `global`.
    #[serde(default)]
    pub proxier: PodSettings,
}

/// Why a `--workload-template` file was refused.
#[derive(Debug, thiserror::Error)]
pub enum WorkloadTemplateError {
    /// Not YAML (or JSON) of the file's shape.
    #[error("workload template is not valid: {0}")]
    Syntax(String),
    /// Well-formed, but with values Kubernetes would refuse.
    #[error("workload template: {}", .0.join("; "))]
    Invalid(Vec<String>),
}

/// The syncer's and the proxier's settings from the text of a `--workload-template` file
/// (YAML or JSON).
pub fn parse_workload_template(
    text: &str,
) -> Result<(PodSettings, PodSettings), WorkloadTemplateError> {
    let file: WorkloadTemplateFile = if text.trim().is_empty() {
        WorkloadTemplateFile::default()
    } else {
        serde_saphyr::from_str(text).map_err(|e| WorkloadTemplateError::Syntax(e.to_string()))?
    };
    let syncer = file.global.overlaid_by(&file.syncer);
    let proxier = file.global.overlaid_by(&file.proxier);
    let mut problems = syncer.problems("syncer");
    problems.extend(proxier.problems("proxier"));
    if problems.is_empty() {
        Ok((syncer, proxier))
    } else {
        Err(WorkloadTemplateError::Invalid(problems))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn component_sections_override_global() {
        let text = r#"
global:
  imagePullSecrets: [{name: regcred}]
  nodeSelector: {pool: infra}
  tolerations: [{key: dedicated, operator: Equal, value: infra, effect: NoSchedule}]
  podLabels: {team: platform}
syncer:
  resources: {requests: {cpu: 100m, memory: 128Mi}, limits: {memory: 256Mi}}
  nodeSelector: {zone: a}
  podLabels: {role: syncer}
  priorityClassName: system-cluster-critical
proxier:
  imagePullSecrets: [{name: other}]
  tolerations: []
"#;
        let (syncer, proxier) = parse_workload_template(text).unwrap();
        assert_eq!(syncer.image_pull_secrets[0].name, "regcred");
        assert_eq!(proxier.image_pull_secrets[0].name, "other");
        assert_eq!(
            syncer.node_selector,
            BTreeMap::from([
                ("pool".to_owned(), "infra".to_owned()),
                ("zone".to_owned(), "a".to_owned())
            ])
        );
        assert_eq!(proxier.node_selector.len(), 1);
        // An empty list in a section keeps global's.
        assert_eq!(proxier.tolerations.len(), 1);
        assert_eq!(syncer.pod_labels.len(), 2);
        assert_eq!(
            syncer.priority_class_name.as_deref(),
            Some("system-cluster-critical")
        );
        assert!(proxier.priority_class_name.is_none());
        assert!(syncer.resources.is_some());
        assert!(proxier.resources.is_none());
    }

    #[test]
    fn empty_file_is_no_settings() {
        for text in ["", "  \n", "{}"] {
            let (syncer, proxier) = parse_workload_template(text).unwrap();
            assert_eq!(syncer, PodSettings::default());
            assert_eq!(proxier, PodSettings::default());
        }
    }

    #[test]
    fn bad_files_are_refused_naming_the_field() {
        for (text, want) in [
            ("syncer: {volumes: []}", "volumes"),
            ("replicas: 2", "replicas"),
            (
                "syncer: {resources: {requests: {cpu: lots}}}",
                "syncer.resources.requests.cpu",
            ),
            (
                "global: {imagePullSecrets: [{name: Bad_Name}]}",
                "imagePullSecrets[0].name",
            ),
            (
                "proxier: {podLabels: {app.kubernetes.io/instance: x}}",
                "proxier.podLabels.app.kubernetes.io/instance",
            ),
            (
                "syncer: {priorityClassName: Not-Valid}",
                "priorityClassName",
            ),
            ("syncer: [", "not valid"),
        ] {
            let err = parse_workload_template(text).unwrap_err().to_string();
            assert!(err.contains(want), "{text}: {err}");
        }
    }
}
