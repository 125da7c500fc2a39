//! The objects the manager keeps for each ClusterBinding in its own namespace, as pure
//! functions of the binding and the [`WorkloadTemplate`]s: the syncer Deployment, the proxier
//! Deployment and Service, one ServiceAccount shared by both, and a ClusterRole + binding that
//! grant it what the syncer and proxier do in the computing cluster.
//!
//! Every object carries an owner reference to the (cluster-scoped) binding, the labels in
//! [`object_labels`], and the annotation [`TEMPLATE_HASH`]: the hash of the object as built
//! here, so the reconciler updates an object exactly when its template changed.

use std::collections::BTreeMap;
use std::ops::RangeInclusive;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, ConfigMapVolumeSource, Container, ContainerPort, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, PodSecurityContext, PodSpec, PodTemplateSpec, Probe,
    ResourceRequirements, SeccompProfile, SecretVolumeSource, SecurityContext, Service,
    ServiceAccount, ServicePort, ServiceSpec, Volume, VolumeMount,
};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, PolicyRule, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, OwnerReference};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use kube::api::ObjectMeta;
use md5::{Digest, Md5};
use serde::Serialize;

use super::pod_settings::PodSettings;
use crate::crd::ClusterBinding;
use crate::labels;
use crate::naming::{DNS_LABEL_MAX_LEN, is_dns1123_label};

/// Annotation on every managed object: hash of the object as the manager built it.
pub const TEMPLATE_HASH: &str = "kubeocean.io/template-hash";
/// `app.kubernetes.io/managed-by` value of every managed object.
pub const MANAGED_BY_MANAGER: &str = "kubeocean-manager";
/// Default kubelet port of the proxier (and of the virtual nodes).
pub const DEFAULT_PROXIER_PORT: i32 = 10250;
/// Default range of per-node kubelet ports of the proxier (one per virtual node of a
/// binding): below Linux's ephemeral ports (32768+), room for 10,000 virtual nodes.
pub const DEFAULT_PROXIER_NODE_PORTS: RangeInclusive<u16> = 20000..=29999;
/// Port of the `/metrics` endpoint in syncer and proxier pods (kube-kit's default).
pub const METRICS_PORT: i32 = 8080;
/// Port of `/healthz` and `/readyz` in syncer and proxier pods (kube-kit's default).
pub const PROBE_PORT: i32 = 8081;
/// Where the proxier pod finds its serving certificate.
pub const PROXIER_TLS_DIR: &str = "/etc/kubeocean/tls";
/// Where the proxier pod finds the CA that signs kube-apiserver's kubelet-client certificate.
pub const PROXIER_CLIENT_CA_DIR: &str = "/etc/kubeocean/client-ca";

const NAME_LABEL: &str = "app.kubernetes.io/name";
const INSTANCE_LABEL: &str = "app.kubernetes.io/instance";
const COMPONENT_LABEL: &str = "app.kubernetes.io/component";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// How one workload (syncer or proxier) is run: image, extra arguments, resources, replicas.
#[derive(Clone, Debug, PartialEq)]
pub struct WorkloadTemplate {
    /// Container image.
    pub image: String,
    /// `imagePullPolicy`; the cluster default when `None`.
    pub image_pull_policy: Option<String>,
    /// Arguments appended after the ones the manager sets.
    pub extra_args: Vec<String>,
    /// Container resources.
    pub resources: Option<ResourceRequirements>,
    /// Deployment replicas; more than one syncer replica turns on its leader election
    /// (proxier replicas all serve).
    pub replicas: i32,
    /// Scheduling, pull Secrets, labels and security of the pods (`--workload-template`);
    /// `pod.resources`, when set, replaces `resources`.
    pub pod: PodSettings,
}

impl WorkloadTemplate {
    /// One replica of `image`, no extra arguments, no resources.
    pub fn new(image: impl Into<String>) -> WorkloadTemplate {
        WorkloadTemplate {
            image: image.into(),
            image_pull_policy: None,
            extra_args: Vec::new(),
            resources: None,
            replicas: 1,
            pod: PodSettings::default(),
        }
    }
}

/// The manager's settings that shape the per-binding objects.
#[derive(Clone, Debug, PartialEq)]
pub struct Templates {
    /// Namespace the workloads are created in (the manager's own).
    pub namespace: String,
    /// How the syncer runs.
    pub syncer: WorkloadTemplate,
    /// How the proxier runs.
    pub proxier: WorkloadTemplate,
    /// Port of the proxier's kubelet API shared by every virtual node (container and
    /// Service; written into the virtual nodes when `proxier_node_ports` is `None`).
    pub proxier_port: i32,
    /// Ports the proxier serves one virtual node each on, at its pod IP (the syncer follows
    /// the proxier's pods); `None`: every virtual node advertises the Service's
    /// `ClusterIP:proxier_port`.
    pub proxier_node_ports: Option<RangeInclusive<u16>>,
    /// ConfigMap (key `ca.crt`, in the workloads' namespace) with the CA the proxier trusts
    /// for client certificates; `kube-root-ca.crt` by default.
    pub proxier_client_ca_config_map: String,
}

impl Templates {
    /// Defaults for the manager namespace `namespace` and images `syncer_image` and
    /// `proxier_image`.
    pub fn new(
        namespace: impl Into<String>,
        syncer_image: impl Into<String>,
        proxier_image: impl Into<String>,
    ) -> Templates {
        Templates {
            namespace: namespace.into(),
            syncer: WorkloadTemplate::new(syncer_image),
            proxier: WorkloadTemplate::new(proxier_image),
            proxier_port: DEFAULT_PROXIER_PORT,
            proxier_node_ports: Some(DEFAULT_PROXIER_NODE_PORTS),
            proxier_client_ca_config_map: "kube-root-ca.crt".to_owned(),
        }
    }
}

/// Names of the objects kept for one binding.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadNames {
    /// Syncer Deployment.
    pub syncer: String,
    /// Proxier Deployment and Service.
    pub proxier: String,
    /// Secret with the proxier's serving certificate.
    pub proxier_tls: String,
    /// ServiceAccount of both workloads.
    pub service_account: String,
    /// ClusterRole and ClusterRoleBinding of that ServiceAccount.
    pub cluster_role: String,
}

/// The names of `binding`'s objects. Each is a DNS label of at most 63 characters: a binding
/// name that is longer or holds dots is cut and suffixed with a hash, so names never collide.
pub fn workload_names(binding: &str, namespace: &str) -> WorkloadNames {
    WorkloadNames {
        syncer: bounded_name("kubeocean-syncer-", binding, ""),
        proxier: bounded_name("kubeocean-proxier-", binding, ""),
        proxier_tls: bounded_name("kubeocean-proxier-", binding, "-tls"),
        service_account: bounded_name("kubeocean-", binding, ""),
        // Cluster-scoped: several managers (one per namespace) must not share it.
        cluster_role: bounded_name(&format!("kubeocean-{namespace}-"), binding, ""),
    }
}

/// `prefix + binding + suffix` when that is a DNS label; otherwise the binding part is
/// replaced by its sanitised prefix and 8 hex digits of its MD5.
fn bounded_name(prefix: &str, binding: &str, suffix: &str) -> String {
    let plain = format!("{prefix}{binding}{suffix}");
    if is_dns1123_label(&plain) {
        return plain;
    }
    let digest: String = Md5::digest(binding.as_bytes())
        .iter()
        .take(4)
        .map(|b| format!("{b:02x}"))
        .collect();
    let room = DNS_LABEL_MAX_LEN.saturating_sub(prefix.len() + suffix.len() + digest.len() + 1);
    let sanitised: String = binding
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '-'
            }
        })
        .take(room)
        .collect();
    let sanitised = sanitised.trim_matches('-');
    if sanitised.is_empty() {
        format!("{prefix}{digest}{suffix}")
    } else {
        format!("{prefix}{sanitised}-{digest}{suffix}")
    }
}

/// Labels of every object kept for `binding`, for component `component`.
pub fn object_labels(binding: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), format!("kubeocean-{component}")),
        (INSTANCE_LABEL.to_owned(), binding.to_owned()),
        (COMPONENT_LABEL.to_owned(), component.to_owned()),
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_MANAGER.to_owned()),
        (labels::CLUSTER_BINDING.to_owned(), binding.to_owned()),
    ])
}

/// Label selector (`key=value,...`) of every object the manager keeps, for any binding.
pub fn managed_selector() -> String {
    format!("{MANAGED_BY_LABEL}={MANAGED_BY_MANAGER}")
}

/// Pod labels that select `component`'s pods of `binding`.
fn selector_labels(binding: &str, component: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (NAME_LABEL.to_owned(), format!("kubeocean-{component}")),
        (INSTANCE_LABEL.to_owned(), binding.to_owned()),
    ])
}

/// The controller owner reference to `binding`; `None` before it has a name and UID.
pub fn owner_reference(binding: &ClusterBinding) -> Option<OwnerReference> {
    let mut owner = binding.controller_owner_ref(&())?;
    owner.block_owner_deletion = Some(true);
    Some(owner)
}

/// Hex SHA-256 (first 16 digits) of an object's JSON form.
pub fn template_hash<T: Serialize>(object: &T) -> String {
    // Serialising the k8s-openapi types cannot fail (string keys, no non-finite floats).
    let bytes = serde_json::to_vec(object).unwrap_or_default();
    let digest = ring::digest::digest(&ring::digest::SHA256, &bytes);
    digest
        .as_ref()
        .iter()
        .take(8)
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// The object's [`TEMPLATE_HASH`] annotation, if any.
pub fn recorded_hash(meta: &ObjectMeta) -> Option<&str> {
    meta.annotations
        .as_ref()
        .and_then(|a| a.get(TEMPLATE_HASH))
        .map(String::as_str)
}

/// Stamps `object` with the hash of its content (computed without the annotation).
fn stamped<K: Resource + Serialize>(mut object: K) -> K {
    let hash = template_hash(&object);
    object
        .meta_mut()
        .annotations
        .get_or_insert_with(BTreeMap::new)
        .insert(TEMPLATE_HASH.to_owned(), hash);
    object
}

fn metadata(
    name: &str,
    namespace: Option<&str>,
    binding: &ClusterBinding,
    component: &str,
) -> ObjectMeta {
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(object_labels(&binding_name, component)),
        owner_references: owner_reference(binding).map(|o| vec![o]),
        ..ObjectMeta::default()
    }
}

fn strings(items: &[&str]) -> Vec<String> {
    items.iter().map(|s| (*s).to_owned()).collect()
}

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(strings(groups)),
        resources: Some(strings(resources)),
        verbs: strings(verbs),
        ..PolicyRule::default()
    }
}

/// What the syncer and the proxier of a binding do in the computing cluster.
pub fn computing_rules(binding: &str) -> Vec<PolicyRule> {
    const READ: &[&str] = &["get", "list", "watch"];
    const WRITE: &[&str] = &[
        "get", "list", "watch", "create", "update", "patch", "delete",
    ];
    let mut own_binding = rule(
        &[crate::crd::GROUP],
        &["clusterbindings", "clusterbindings/status"],
        &["get", "list", "watch", "update", "patch"],
    );
    own_binding.resource_names = Some(vec![binding.to_owned()]);
    vec![
        own_binding,
        // Watches of a single binding are list/watch calls that cannot be name-restricted.
        rule(
            &[crate::crd::GROUP],
            &["clusterbindings"],
            &["list", "watch"],
        ),
        rule(&[""], &["nodes", "nodes/status"], WRITE),
        rule(&[""], &["pods", "pods/status"], WRITE),
        rule(
            &[""],
            &["configmaps", "secrets", "persistentvolumeclaims"],
            READ,
        ),
        rule(&[""], &["persistentvolumes", "services"], READ),
        // Releasing the finalizers upstream Kubeocean left on virtual copies.
        rule(
            &[""],
            &[
                "configmaps",
                "secrets",
                "persistentvolumeclaims",
                "persistentvolumes",
            ],
            &["patch"],
        ),
        rule(&["discovery.k8s.io"], &["endpointslices"], READ),
        // The namespace of the host-port placeholder pods.
        rule(&[""], &["namespaces"], &["get", "create"]),
        rule(&[""], &["serviceaccounts/token"], &["create"]),
        // `get`: reflected worker Events are compared with what was written.
        rule(
            &["", "events.k8s.io"],
            &["events"],
            &["get", "create", "patch", "update"],
        ),
        rule(&["coordination.k8s.io"], &["leases"], WRITE),
        rule(&["storage.k8s.io"], &["csinodes"], WRITE),
        rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
        rule(
            &["authorization.k8s.io"],
            &["subjectaccessreviews"],
            &["create"],
        ),
    ]
}

/// The ServiceAccount both workloads of `binding` run as.
pub fn service_account(binding: &ClusterBinding, templates: &Templates) -> ServiceAccount {
    let names = names_of(binding, templates);
    stamped(ServiceAccount {
        metadata: metadata(
            &names.service_account,
            Some(&templates.namespace),
            binding,
            "rbac",
        ),
        ..ServiceAccount::default()
    })
}

/// The ClusterRole with [`computing_rules`].
pub fn cluster_role(binding: &ClusterBinding, templates: &Templates) -> ClusterRole {
    let names = names_of(binding, templates);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    stamped(ClusterRole {
        metadata: metadata(&names.cluster_role, None, binding, "rbac"),
        rules: Some(computing_rules(&binding_name)),
        ..ClusterRole::default()
    })
}

/// Binds [`cluster_role`] to [`service_account`].
pub fn cluster_role_binding(binding: &ClusterBinding, templates: &Templates) -> ClusterRoleBinding {
    let names = names_of(binding, templates);
    stamped(ClusterRoleBinding {
        metadata: metadata(&names.cluster_role, None, binding, "rbac"),
        role_ref: RoleRef {
            api_group: "rbac.authorization.k8s.io".to_owned(),
            kind: "ClusterRole".to_owned(),
            name: names.cluster_role.clone(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".to_owned(),
            name: names.service_account.clone(),
            namespace: Some(templates.namespace.clone()),
            ..Subject::default()
        }]),
    })
}

fn names_of(binding: &ClusterBinding, templates: &Templates) -> WorkloadNames {
    workload_names(
        binding.metadata.name.as_deref().unwrap_or_default(),
        &templates.namespace,
    )
}

/// The proxier's Service: the kubelet port of the virtual nodes.
pub fn proxier_service(binding: &ClusterBinding, templates: &Templates) -> Service {
    let names = names_of(binding, templates);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    stamped(Service {
        metadata: metadata(
            &names.proxier,
            Some(&templates.namespace),
            binding,
            "proxier",
        ),
        spec: Some(ServiceSpec {
            selector: Some(selector_labels(&binding_name, "proxier")),
            ports: Some(vec![ServicePort {
                name: Some("kubelet".to_owned()),
                port: templates.proxier_port,
                target_port: Some(IntOrString::String("kubelet".to_owned())),
                protocol: Some("TCP".to_owned()),
                ..ServicePort::default()
            }]),
            ..ServiceSpec::default()
        }),
        ..Service::default()
    })
}

/// The proxier's Deployment: `kubeocean proxier` with the serving certificate from the
/// [`WorkloadNames::proxier_tls`] Secret and client certificates checked against
/// [`Templates::proxier_client_ca_config_map`]; bearer tokens are checked by TokenReview.
pub fn proxier_deployment(binding: &ClusterBinding, templates: &Templates) -> Deployment {
    let names = names_of(binding, templates);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    let mut args = vec![
        "proxier".to_owned(),
        format!("--cluster-binding={binding_name}"),
        format!("--listen=0.0.0.0:{}", templates.proxier_port),
        format!("--tls-cert-file={PROXIER_TLS_DIR}/tls.crt"),
        format!("--tls-private-key-file={PROXIER_TLS_DIR}/tls.key"),
        format!("--client-ca-file={PROXIER_CLIENT_CA_DIR}/ca.crt"),
        "--token-review".to_owned(),
        format!("--secret-namespace={}", templates.namespace),
    ];
    if let Some(range) = &templates.proxier_node_ports {
        args.push(format!("--node-ports={}-{}", range.start(), range.end()));
    }
    // Every proxier replica serves (behind the Service): no leader election.
    args.extend(templates.proxier.extra_args.iter().cloned());
    let mut container = container("proxier", &templates.proxier, args);
    if let Some(ports) = container.ports.as_mut() {
        ports.push(ContainerPort {
            name: Some("kubelet".to_owned()),
            container_port: templates.proxier_port,
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        });
        // Upstream's single-port cAdvisor endpoint (`--vnode-metrics-port`, on by default).
        ports.push(ContainerPort {
            name: Some("vnode-metrics".to_owned()),
            container_port: i32::from(crate::proxier::vnode_metrics::DEFAULT_PORT),
            protocol: Some("TCP".to_owned()),
            ..ContainerPort::default()
        });
    }
    container.volume_mounts = Some(vec![
        VolumeMount {
            name: "tls".to_owned(),
            mount_path: PROXIER_TLS_DIR.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
        VolumeMount {
            name: "client-ca".to_owned(),
            mount_path: PROXIER_CLIENT_CA_DIR.to_owned(),
            read_only: Some(true),
            ..VolumeMount::default()
        },
    ]);
    let volumes = vec![
        Volume {
            name: "tls".to_owned(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(names.proxier_tls.clone()),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        },
        Volume {
            name: "client-ca".to_owned(),
            config_map: Some(ConfigMapVolumeSource {
                name: templates.proxier_client_ca_config_map.clone(),
                ..ConfigMapVolumeSource::default()
            }),
            ..Volume::default()
        },
    ];
    deployment(
        binding,
        templates,
        &names.proxier,
        "proxier",
        &templates.proxier,
        container,
        Some(volumes),
    )
}

/// The syncer's Deployment: `kubeocean syncer` for this binding. With per-node ports it
/// writes the IP of a ready proxier pod (found by label) and each node's own port into the
/// virtual nodes; otherwise `proxier_address` (the proxier Service's cluster IP, once known)
/// and the shared port.
pub fn syncer_deployment(
    binding: &ClusterBinding,
    templates: &Templates,
    proxier_address: Option<&str>,
) -> Deployment {
    let names = names_of(binding, templates);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    let mut args = vec![
        "syncer".to_owned(),
        format!("--cluster-binding={binding_name}"),
        format!("--secret-namespace={}", templates.namespace),
        format!("--proxier-port={}", templates.proxier_port),
    ];
    match &templates.proxier_node_ports {
        Some(range) => {
            args.push(format!(
                "--proxier-node-ports={}-{}",
                range.start(),
                range.end()
            ));
            let selector: Vec<String> = selector_labels(&binding_name, "proxier")
                .into_iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            args.push(format!("--proxier-pod-selector={}", selector.join(",")));
            args.push(format!("--proxier-pod-namespace={}", templates.namespace));
        }
        None => {
            if let Some(address) = proxier_address.filter(|a| !a.is_empty() && *a != "None") {
                args.push(format!("--proxier-address={address}"));
            }
        }
    }
    args.extend(leader_election_args(&templates.syncer));
    args.extend(templates.syncer.extra_args.iter().cloned());
    let container = container("syncer", &templates.syncer, args);
    deployment(
        binding,
        templates,
        &names.syncer,
        "syncer",
        &templates.syncer,
        container,
        None,
    )
}

fn leader_election_args(template: &WorkloadTemplate) -> Vec<String> {
    if template.replicas > 1 {
        vec!["--leader-elect".to_owned()]
    } else {
        Vec::new()
    }
}

fn container(name: &str, template: &WorkloadTemplate, args: Vec<String>) -> Container {
    let probe = |path: &str| Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.to_owned()),
            port: IntOrString::String("probes".to_owned()),
            ..HTTPGetAction::default()
        }),
        period_seconds: Some(10),
        ..Probe::default()
    };
    Container {
        name: name.to_owned(),
        image: Some(template.image.clone()),
        image_pull_policy: template.image_pull_policy.clone(),
        args: Some(args),
        env: Some(vec![EnvVar {
            name: "POD_NAMESPACE".to_owned(),
            value_from: Some(EnvVarSource {
                field_ref: Some(ObjectFieldSelector {
                    field_path: "metadata.namespace".to_owned(),
                    ..ObjectFieldSelector::default()
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        }]),
        ports: Some(vec![
            ContainerPort {
                name: Some("metrics".to_owned()),
                container_port: METRICS_PORT,
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            },
            ContainerPort {
                name: Some("probes".to_owned()),
                container_port: PROBE_PORT,
                protocol: Some("TCP".to_owned()),
                ..ContainerPort::default()
            },
        ]),
        liveness_probe: Some(probe("/healthz")),
        readiness_probe: Some(probe("/readyz")),
        resources: template
            .pod
            .resources
            .clone()
            .or_else(|| template.resources.clone()),
        security_context: Some(template.pod.container_security_context.clone().unwrap_or(
            SecurityContext {
                allow_privilege_escalation: Some(false),
                read_only_root_filesystem: Some(true),
                run_as_non_root: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".to_owned()]),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            },
        )),
        ..Container::default()
    }
}

fn deployment(
    binding: &ClusterBinding,
    templates: &Templates,
    name: &str,
    component: &str,
    template: &WorkloadTemplate,
    container: Container,
    volumes: Option<Vec<Volume>>,
) -> Deployment {
    let names = names_of(binding, templates);
    let binding_name = binding.metadata.name.clone().unwrap_or_default();
    let pod = &template.pod;
    // The manager's labels win over extra ones (validation refuses the reserved keys).
    let mut pod_labels = pod.pod_labels.clone();
    pod_labels.extend(object_labels(&binding_name, component));
    pod_labels.extend(selector_labels(&binding_name, component));
    let non_empty = |map: &BTreeMap<String, String>| (!map.is_empty()).then(|| map.clone());
    stamped(Deployment {
        metadata: metadata(name, Some(&templates.namespace), binding, component),
        spec: Some(DeploymentSpec {
            replicas: Some(template.replicas),
            selector: LabelSelector {
                match_labels: Some(selector_labels(&binding_name, component)),
                ..LabelSelector::default()
            },
            template: PodTemplateSpec {
                metadata: Some(ObjectMeta {
                    labels: Some(pod_labels),
                    annotations: non_empty(&pod.pod_annotations),
                    ..ObjectMeta::default()
                }),
                spec: Some(PodSpec {
                    service_account_name: Some(names.service_account.clone()),
                    containers: vec![container],
                    volumes,
                    image_pull_secrets: (!pod.image_pull_secrets.is_empty())
                        .then(|| pod.image_pull_secrets.clone()),
                    node_selector: non_empty(&pod.node_selector),
                    tolerations: (!pod.tolerations.is_empty()).then(|| pod.tolerations.clone()),
                    affinity: pod.affinity.clone(),
                    priority_class_name: pod
                        .priority_class_name
                        .clone()
                        .filter(|name| !name.is_empty()),
                    security_context: Some(pod.pod_security_context.clone().unwrap_or(
                        PodSecurityContext {
                            run_as_non_root: Some(true),
                            seccomp_profile: Some(SeccompProfile {
                                type_: "RuntimeDefault".to_owned(),
                                ..SeccompProfile::default()
                            }),
                            ..PodSecurityContext::default()
                        },
                    )),
                    ..PodSpec::default()
                }),
            },
            ..DeploymentSpec::default()
        }),
        ..Deployment::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn binding(name: &str) -> ClusterBinding {
        serde_json::from_value(json!({
            "apiVersion": "cloud.tencent.com/v1beta1", "kind": "ClusterBinding",
            "metadata": {"name": name, "uid": "u-1"},
            "spec": {"clusterID": "w1", "secretRef": {"name": "kc"}, "mountNamespace": "m"},
        }))
        .unwrap()
    }

    fn templates() -> Templates {
        Templates::new("kubeocean-system", "kubeocean:1", "kubeocean:1")
    }

    /// Every virtual node on the proxier Service's one port.
    fn shared() -> Templates {
        let mut t = templates();
        t.proxier_node_ports = None;
        t
    }

    fn args(d: &Deployment) -> Vec<String> {
        d.spec
            .as_ref()
            .unwrap()
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .args
            .clone()
            .unwrap()
    }

    #[test]
    fn names_table() {
        let long = "b".repeat(70);
        let dotted = "team.worker-1";
        for (binding, want_syncer, want_tls) in [
            ("w1", "kubeocean-syncer-w1", "kubeocean-proxier-w1-tls"),
            (
                dotted,
                "kubeocean-syncer-team-worker-1-a0f6d9c0",
                "kubeocean-proxier-team-worker-1-a0f6d9c0-tls",
            ),
        ] {
            let names = workload_names(binding, "ns");
            let digest: String = Md5::digest(binding.as_bytes())
                .iter()
                .take(4)
                .map(|b| format!("{b:02x}"))
                .collect();
            let want_syncer = want_syncer.replace("a0f6d9c0", &digest);
            let want_tls = want_tls.replace("a0f6d9c0", &digest);
            assert_eq!(names.syncer, want_syncer, "{binding}");
            assert_eq!(names.proxier_tls, want_tls, "{binding}");
        }
        let names = workload_names(&long, "ns");
        for name in [
            &names.syncer,
            &names.proxier,
            &names.proxier_tls,
            &names.service_account,
            &names.cluster_role,
        ] {
            assert!(is_dns1123_label(name), "{name}");
            assert!(name.len() <= 63, "{name}");
        }
        // Two long names sharing their first 63 characters still differ.
        let other = format!("{}c", "b".repeat(69));
        assert_ne!(workload_names(&other, "ns").syncer, names.syncer);
        // The cluster-scoped names include the manager namespace.
        assert_ne!(
            workload_names("w1", "a").cluster_role,
            workload_names("w1", "b").cluster_role
        );
    }

    #[test]
    fn every_object_is_owned_labelled_and_stamped() {
        let b = binding("w1");
        let t = templates();
        let metas = [
            syncer_deployment(&b, &t, Some("10.0.0.9")).metadata,
            proxier_deployment(&b, &t).metadata,
            proxier_service(&b, &t).metadata,
            service_account(&b, &t).metadata,
            cluster_role(&b, &t).metadata,
            cluster_role_binding(&b, &t).metadata,
        ];
        for meta in metas {
            let owner = &meta.owner_references.as_ref().unwrap()[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
                ("ClusterBinding", "w1", "u-1")
            );
            assert_eq!(owner.controller, Some(true));
            let labels = meta.labels.as_ref().unwrap();
            assert_eq!(labels[labels::CLUSTER_BINDING], "w1");
            assert_eq!(labels[MANAGED_BY_LABEL], MANAGED_BY_MANAGER);
            assert_eq!(recorded_hash(&meta).map(str::len), Some(16));
        }
    }

    #[test]
    fn syncer_args_table() {
        let b = binding("w1");
        let mut scaled = shared();
        scaled.syncer.replicas = 2;
        scaled.syncer.extra_args = vec!["--workers=4".into()];
        for (name, t, address, want) in [
            (
                "per-node ports: the proxier pods, not the Service",
                templates(),
                Some("10.0.0.9"),
                vec![
                    "syncer",
                    "--cluster-binding=w1",
                    "--secret-namespace=kubeocean-system",
                    "--proxier-port=10250",
                    "--proxier-node-ports=20000-29999",
                    "--proxier-pod-selector=app.kubernetes.io/instance=w1,app.kubernetes.io/name=kubeocean-proxier",
                    "--proxier-pod-namespace=kubeocean-system",
                ],
            ),
            (
                "with address",
                shared(),
                Some("10.0.0.9"),
                vec![
                    "syncer",
                    "--cluster-binding=w1",
                    "--secret-namespace=kubeocean-system",
                    "--proxier-port=10250",
                    "--proxier-address=10.0.0.9",
                ],
            ),
            (
                "headless service",
                shared(),
                Some("None"),
                vec![
                    "syncer",
                    "--cluster-binding=w1",
                    "--secret-namespace=kubeocean-system",
                    "--proxier-port=10250",
                ],
            ),
            (
                "replicas and extra args",
                scaled,
                None,
                vec![
                    "syncer",
                    "--cluster-binding=w1",
                    "--secret-namespace=kubeocean-system",
                    "--proxier-port=10250",
                    "--leader-elect",
                    "--workers=4",
                ],
            ),
        ] {
            assert_eq!(args(&syncer_deployment(&b, &t, address)), want, "{name}");
        }
    }

    #[test]
    fn proxier_deployment_mounts_certificates_and_exposes_the_kubelet_port() {
        let b = binding("w1");
        let mut t = templates();
        t.proxier_port = 10350;
        let d = proxier_deployment(&b, &t);
        let a = args(&d);
        assert!(a.contains(&"--listen=0.0.0.0:10350".to_owned()), "{a:?}");
        assert!(a.contains(&"--node-ports=20000-29999".to_owned()), "{a:?}");
        let shared_args = args(&proxier_deployment(&b, &shared()));
        assert!(
            !shared_args.iter().any(|a| a.starts_with("--node-ports")),
            "{shared_args:?}"
        );
        assert!(a.contains(&"--token-review".to_owned()));
        assert!(a.contains(&"--secret-namespace=kubeocean-system".to_owned()));
        let mut scaled = t.clone();
        scaled.proxier.replicas = 3;
        let scaled_args = args(&proxier_deployment(&b, &scaled));
        assert!(
            !scaled_args.iter().any(|a| a == "--leader-elect"),
            "every replica serves"
        );
        let pod = d.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let volumes = pod.volumes.as_ref().unwrap();
        assert_eq!(
            volumes[0].secret.as_ref().unwrap().secret_name.as_deref(),
            Some("kubeocean-proxier-w1-tls")
        );
        assert_eq!(
            volumes[1].config_map.as_ref().unwrap().name,
            "kube-root-ca.crt"
        );
        let ports = pod.containers[0].ports.as_ref().unwrap();
        assert!(
            ports
                .iter()
                .any(|p| p.container_port == 10350 && p.name.as_deref() == Some("kubelet"))
        );
        let svc = proxier_service(&b, &t);
        let spec = svc.spec.unwrap();
        assert_eq!(spec.ports.unwrap()[0].port, 10350);
        // The Service selects exactly the proxier pods.
        let pod_labels = d.spec.unwrap().template.metadata.unwrap().labels.unwrap();
        for (k, v) in spec.selector.unwrap() {
            assert_eq!(pod_labels.get(&k), Some(&v));
        }
    }

    #[test]
    fn hash_follows_template_changes() {
        let b = binding("w1");
        let base = shared();
        let hash = |t: &Templates, addr: Option<&str>| {
            recorded_hash(&syncer_deployment(&b, t, addr).metadata)
                .unwrap()
                .to_owned()
        };
        let same = hash(&base, None);
        assert_eq!(same, hash(&base, None), "deterministic");
        let mut image = base.clone();
        image.syncer.image = "kubeocean:2".into();
        let mut replicas = base.clone();
        replicas.syncer.replicas = 3;
        let mut proxier_only = base.clone();
        proxier_only.proxier.image = "other".into();
        for (name, t, addr, changes) in [
            ("image", &image, None, true),
            ("replicas", &replicas, None, true),
            ("proxier address", &base, Some("10.1.1.1"), true),
            ("proxier image", &proxier_only, None, false),
            ("per-node ports", &templates(), None, true),
        ] {
            assert_eq!(hash(t, addr) != same, changes, "{name}");
        }
        // With per-node ports the Service's address is not used: no rollout when it changes.
        assert_eq!(
            hash(&templates(), Some("10.1.1.1")),
            hash(&templates(), None)
        );
    }

    #[test]
    fn rbac_binds_the_service_account_to_the_role() {
        let b = binding("w1");
        let t = templates();
        let crb = cluster_role_binding(&b, &t);
        let role = cluster_role(&b, &t);
        let sa = service_account(&b, &t);
        assert_eq!(crb.role_ref.name, role.metadata.name.clone().unwrap());
        let subject = &crb.subjects.unwrap()[0];
        assert_eq!(Some(subject.name.clone()), sa.metadata.name);
        assert_eq!(subject.namespace.as_deref(), Some("kubeocean-system"));
        let rules = role.rules.unwrap();
        let allows = |group: &str, resource: &str, verb: &str| {
            rules.iter().any(|r| {
                r.api_groups.as_ref().unwrap().iter().any(|g| g == group)
                    && r.resources.as_ref().unwrap().iter().any(|x| x == resource)
                    && r.verbs.iter().any(|v| v == verb)
                    && r.resource_names.is_none()
            })
        };
        for (group, resource, verb, want) in [
            ("", "nodes", "create", true),
            ("", "pods", "delete", true),
            ("coordination.k8s.io", "leases", "update", true),
            ("storage.k8s.io", "csinodes", "create", true),
            ("", "secrets", "get", true),
            ("", "secrets", "create", false),
            ("authentication.k8s.io", "tokenreviews", "create", true),
            ("cloud.tencent.com", "clusterbindings", "watch", true),
            ("cloud.tencent.com", "clusterbindings", "delete", false),
        ] {
            assert_eq!(allows(group, resource, verb), want, "{verb} {resource}");
        }
        let own = rules.iter().find(|r| r.resource_names.is_some()).unwrap();
        assert_eq!(own.resource_names.as_ref().unwrap(), &vec!["w1".to_owned()]);
    }

    #[test]
    fn unnamed_binding_has_no_owner_reference() {
        let mut b = binding("w1");
        b.metadata.uid = None;
        assert!(owner_reference(&b).is_none());
        assert!(owner_reference(&binding("w1")).is_some());
    }

    #[test]
    fn pod_settings_reach_both_deployments_without_touching_the_selector() {
        let (syncer, proxier) = crate::manager::parse_workload_template(
            r#"
global:
  imagePullSecrets: [{name: regcred}]
  tolerations: [{key: dedicated, operator: Exists, effect: NoSchedule}]
  podAnnotations: {example.com/owner: platform}
syncer:
  resources: {requests: {cpu: 100m}}
  priorityClassName: system-cluster-critical
  podLabels: {team: platform}
proxier:
  affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [edge]}]}]}}}
  containerSecurityContext: {runAsUser: 1000}
"#,
        )
        .unwrap();
        let mut t = templates();
        t.syncer.pod = syncer;
        t.proxier.pod = proxier;
        let b = binding("w1");
        let plain = syncer_deployment(&b, &templates(), None);
        let s = syncer_deployment(&b, &t, None);
        let p = proxier_deployment(&b, &t);
        assert_ne!(recorded_hash(&s.metadata), recorded_hash(&plain.metadata));
        for d in [&s, &p] {
            let spec = d.spec.as_ref().unwrap();
            let pod = spec.template.spec.as_ref().unwrap();
            assert_eq!(pod.image_pull_secrets.as_ref().unwrap()[0].name, "regcred");
            assert_eq!(
                pod.tolerations.as_ref().unwrap()[0].key.as_deref(),
                Some("dedicated")
            );
            let meta = spec.template.metadata.as_ref().unwrap();
            assert_eq!(
                meta.annotations.as_ref().unwrap()["example.com/owner"],
                "platform"
            );
            // The selector still matches the pods.
            let labels = meta.labels.as_ref().unwrap();
            for (k, v) in spec.selector.match_labels.as_ref().unwrap() {
                assert_eq!(labels.get(k), Some(v));
            }
        }
        let spod = s.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        let ppod = p.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        assert_eq!(
            spod.priority_class_name.as_deref(),
            Some("system-cluster-critical")
        );
        assert!(ppod.priority_class_name.is_none());
        assert!(spod.affinity.is_none());
        assert!(ppod.affinity.is_some());
        let cpu = &spod.containers[0]
            .resources
            .as_ref()
            .unwrap()
            .requests
            .as_ref()
            .unwrap()["cpu"];
        assert_eq!(cpu.0, "100m");
        assert!(ppod.containers[0].resources.is_none());
        // A container security context given replaces the manager's; otherwise it stays.
        let psc = ppod.containers[0].security_context.as_ref().unwrap();
        assert_eq!(psc.run_as_user, Some(1000));
        assert_eq!(psc.read_only_root_filesystem, None);
        let ssc = spod.containers[0].security_context.as_ref().unwrap();
        assert_eq!(ssc.read_only_root_filesystem, Some(true));
        assert_eq!(
            spod.security_context.as_ref().unwrap().run_as_non_root,
            Some(true)
        );
        let slabels = s
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref()
            .unwrap();
        assert_eq!(slabels["team"], "platform");
    }
}
