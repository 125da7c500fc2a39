//! Which Karmada release an adopted instance runs. Karmada's API server is a kube-apiserver: its
//! `/version` answers the Kubernetes version it was built from (`v1.36.2` for Karmada
//! v1.19), and nothing else it serves names the Karmada release; karmada-aggregated-apiserver
//! reports the Kubernetes library version too (`compatibility.DefaultBuildEffectiveVersion()`
//! in `pkg/aggregatedapiserver/apiserver.go`, while Karmada's release is linked into
//! `pkg/version` only). What names the release is the image tag of Karmada's own components:
//! the Helm chart, `karmadactl init` and the karmada-operator all run
//! `karmada/karmada-controller-manager:<release>` and its siblings as Deployments on the
//! cluster that hosts the control plane.

use k8s_openapi::api::apps::v1::Deployment;

use crate::instance::{Instance, KARMADA_NAMESPACE_ANNOTATION};

/// Where the Helm chart and `karmadactl init` install Karmada's components.
pub const DEFAULT_KARMADA_NAMESPACE: &str = "karmada-system";

/// Karmada's component images, the ones read first first: each carries the release as tag.
const COMPONENT_IMAGES: [&str; 4] = [
    "karmada-controller-manager",
    "karmada-aggregated-apiserver",
    "karmada-scheduler",
    "karmada-webhook",
];

/// The host namespace to look for an adopted instance's Karmada components in.
pub fn karmada_namespace(instance: &Instance) -> &str {
    instance
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(KARMADA_NAMESPACE_ANNOTATION))
        .map(String::as_str)
        .filter(|ns| !ns.is_empty())
        .unwrap_or(DEFAULT_KARMADA_NAMESPACE)
}

/// `(repository name, tag)` of an image reference: `docker.io/karmada/x:v1.2.3` ->
/// `("x", Some("v1.2.3"))`; a digest-only reference has no tag.
fn image_name_and_tag(image: &str) -> (&str, Option<&str>) {
    let without_digest = image.split('@').next().unwrap_or(image);
    let last = without_digest.rsplit('/').next().unwrap_or(without_digest);
    match last.split_once(':') {
        Some((name, tag)) => (name, Some(tag)),
        None => (last, None),
    }
}

/// A release tag: `v` and a digit (`v1.19.0`, `v1.19.0-rc.0`), not `latest` or a digest.
fn is_release(tag: &str) -> bool {
    tag.strip_prefix('v')
        .is_some_and(|rest| rest.starts_with(|c: char| c.is_ascii_digit()))
}

/// The Karmada release the component Deployments run: the tag of the first of
/// `COMPONENT_IMAGES` found with a release tag; `None` when there is none.
pub fn karmada_version_of(deployments: &[Deployment]) -> Option<String> {
    let images: Vec<&str> = deployments
        .iter()
        .filter_map(|d| d.spec.as_ref()?.template.spec.as_ref())
        .flat_map(|pod| pod.containers.iter())
        .filter_map(|c| c.image.as_deref())
        .collect();
    COMPONENT_IMAGES.iter().find_map(|component| {
        images
            .iter()
            .find_map(|image| match image_name_and_tag(image) {
                (name, Some(tag)) if name == *component && is_release(tag) => Some(tag.to_owned()),
                _ => None,
            })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::instance::{DeletionPolicy, InstanceMode, InstanceSpec};
    use serde_json::json;

    fn deployment(images: &[&str]) -> Deployment {
        let containers: Vec<_> = images
            .iter()
            .map(|i| json!({"name": "c", "image": i}))
            .collect();
        serde_json::from_value(json!({
            "metadata": {"name": "d"},
            "spec": {"selector": {}, "template": {"spec": {"containers": containers}}}
        }))
        .unwrap()
    }

    #[test]
    fn the_release_is_the_component_image_tag() {
        let cases: [(Vec<Vec<&str>>, Option<&str>); 7] = [
            (
                vec![vec!["docker.io/karmada/karmada-controller-manager:v1.19.0"]],
                Some("v1.19.0"),
            ),
            (
                vec![
                    vec!["registry.example/karmada/karmada-scheduler:v1.18.2"],
                    vec!["registry.example:5000/karmada/karmada-controller-manager:v1.19.0-rc.0"],
                ],
                Some("v1.19.0-rc.0"),
            ),
            (
                vec![vec!["docker.io/karmada/karmada-webhook:v1.17.1@sha256:abc"]],
                Some("v1.17.1"),
            ),
            (vec![vec!["registry.k8s.io/kube-apiserver:v1.36.2"]], None),
            (
                vec![vec!["docker.io/karmada/karmada-controller-manager:latest"]],
                None,
            ),
            (
                vec![vec![
                    "docker.io/karmada/karmada-controller-manager@sha256:abc",
                ]],
                None,
            ),
            (vec![], None),
        ];
        for (deployments, want) in cases {
            let ds: Vec<Deployment> = deployments.iter().map(|i| deployment(i)).collect();
            assert_eq!(karmada_version_of(&ds).as_deref(), want, "{deployments:?}");
        }
    }

    #[test]
    fn the_namespace_is_the_annotation_or_karmada_system() {
        let mut instance = Instance::new(
            "prod",
            InstanceSpec {
                mode: InstanceMode::Adopt,
                kubeconfig_secret_ref: None,
                provision: None,
                alias: None,
                deletion_policy: DeletionPolicy::Retain,
            },
        );
        assert_eq!(karmada_namespace(&instance), "karmada-system");
        instance.metadata.annotations = Some(
            [(
                KARMADA_NAMESPACE_ANNOTATION.to_owned(),
                "karmada-prod".to_owned(),
            )]
            .into(),
        );
        assert_eq!(karmada_namespace(&instance), "karmada-prod");
    }
}
