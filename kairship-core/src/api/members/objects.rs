//! The objects a join creates, as pure functions of the request: the member-side RBAC of a
//! Push join (as `karmadactl join` creates it), the credential Secrets and the `Cluster` in the
//! instance, the bootstrap token and the karmada-agent manifests of a Pull join, the patch of
//! an update, and which bindings still schedule to a member.

use std::collections::BTreeMap;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::{Map, Value, json};

use super::types::{MemberPlacement, MemberTaint, UpdateMemberRequest};
use crate::api::error::ApiError;

/// Namespace of the member-side ServiceAccounts and token Secrets (karmadactl's default), and
/// of the credential Secrets in the instance.
pub const CLUSTER_NAMESPACE: &str = "karmada-cluster";
/// Label on every object a join creates: the member cluster's name.
pub const MEMBER_LABEL: &str = "kairship.io/member-cluster";
/// Label on every object a join creates: the instance's name.
pub const INSTANCE_LABEL: &str = "kairship.io/instance";
/// Longest member cluster name Karmada accepts.
pub const MAX_MEMBER_NAME: usize = 48;
/// Namespace of bootstrap token Secrets.
pub const BOOTSTRAP_NAMESPACE: &str = "kube-system";
/// Namespace of the karmada-agent in a Pull member.
pub const AGENT_NAMESPACE: &str = "karmada-system";

/// Which cluster an object lives in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    /// The member cluster.
    Member,
    /// The Karmada instance.
    Karmada,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Member => "in the member",
            Side::Karmada => "in the instance",
        })
    }
}

/// One object a join writes.
#[derive(Clone, Debug)]
pub struct Planned {
    /// Its resource.
    pub resource: ApiResource,
    /// Its namespace (`None` for cluster-scoped objects).
    pub namespace: Option<String>,
    /// Its name.
    pub name: String,
    /// The whole object.
    pub body: Value,
    /// Whether an existing object of this name not made by a join may be used as it is
    /// (namespaces), rather than being a conflict.
    pub shared: bool,
}

impl Planned {
    fn new(resource: ApiResource, namespace: Option<&str>, body: Value) -> Planned {
        let name = body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned();
        Planned {
            resource,
            namespace: namespace.map(str::to_owned),
            name,
            body,
            shared: false,
        }
    }

    /// `Kind namespace/name`, for messages.
    pub fn describe(&self) -> String {
        match &self.namespace {
            Some(ns) => format!("{} {ns}/{}", self.resource.kind, self.name),
            None => format!("{} {}", self.resource.kind, self.name),
        }
    }
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// `v1` Namespaces.
pub fn namespaces() -> ApiResource {
    resource("", "v1", "Namespace", "namespaces")
}
/// `v1` ServiceAccounts.
pub fn service_accounts() -> ApiResource {
    resource("", "v1", "ServiceAccount", "serviceaccounts")
}
/// `v1` Secrets.
pub fn secrets() -> ApiResource {
    resource("", "v1", "Secret", "secrets")
}
/// `rbac.authorization.k8s.io/v1` ClusterRoles.
pub fn cluster_roles() -> ApiResource {
    resource(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRole",
        "clusterroles",
    )
}
/// `rbac.authorization.k8s.io/v1` ClusterRoleBindings.
pub fn cluster_role_bindings() -> ApiResource {
    resource(
        "rbac.authorization.k8s.io",
        "v1",
        "ClusterRoleBinding",
        "clusterrolebindings",
    )
}

/// Checks a member cluster name: a DNS label (lower-case letters, digits and `-`) of at most
/// [`MAX_MEMBER_NAME`] characters, as Karmada requires of `Cluster` names.
pub fn check_member_name(name: &str) -> Result<(), ApiError> {
    let edge = |c: Option<char>| c.is_some_and(|c| c.is_ascii_lowercase() || c.is_ascii_digit());
    let ok = !name.is_empty()
        && name.len() <= MAX_MEMBER_NAME
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && edge(name.chars().next())
        && edge(name.chars().last());
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            "name",
            format!(
                "{name:?} is not a member cluster name: 1 to {MAX_MEMBER_NAME} lower-case \
                 letters, digits and '-', starting and ending with a letter or digit"
            ),
        ))
    }
}

fn check_label_key(key: &str, field: &str) -> Result<(), ApiError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((p, n)) => (Some(p), n),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric());
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    });
    if name_ok && prefix_ok {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            format!("{key:?} is not a valid label or taint key"),
        ))
    }
}

fn check_label_value(value: &str, field: &str) -> Result<(), ApiError> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric()));
    if ok {
        Ok(())
    } else {
        Err(ApiError::invalid_field(
            field,
            format!("{value:?} is not a valid label or taint value"),
        ))
    }
}

fn check_taints(taints: &[MemberTaint]) -> Result<(), ApiError> {
    for taint in taints {
        check_label_key(&taint.key, "taints")?;
        if let Some(value) = &taint.value {
            check_label_value(value, "taints")?;
        }
        if !matches!(
            taint.effect.as_str(),
            "NoSchedule" | "PreferNoSchedule" | "NoExecute"
        ) {
            return Err(ApiError::invalid_field(
                "taints",
                format!(
                    "effect {:?} of taint {:?} is not NoSchedule, PreferNoSchedule or NoExecute",
                    taint.effect, taint.key
                ),
            ));
        }
    }
    Ok(())
}

fn check_place(value: Option<&str>, field: &str) -> Result<(), ApiError> {
    match value {
        Some(v) if v.len() > 63 || v.chars().any(|c| c.is_control()) => Err(
            ApiError::invalid_field(field, "must be at most 63 printable characters"),
        ),
        _ => Ok(()),
    }
}

/// Checks the labels, taints, provider, region and zone of a join.
pub fn check_placement(p: &MemberPlacement) -> Result<(), ApiError> {
    for (key, value) in &p.labels {
        check_label_key(key, "labels")?;
        check_label_value(value, "labels")?;
    }
    check_taints(&p.taints)?;
    check_place(p.provider.as_deref(), "provider")?;
    check_place(p.region.as_deref(), "region")?;
    check_place(p.zone.as_deref(), "zone")
}

/// Checks an update and turns it into a JSON merge patch of the `Cluster`.
pub fn update_patch(req: &UpdateMemberRequest) -> Result<Value, ApiError> {
    let mut patch = json!({});
    if let Some(labels) = &req.labels {
        let mut map = Map::new();
        for (key, value) in labels {
            check_label_key(key, "labels")?;
            if key == MEMBER_LABEL || key == INSTANCE_LABEL {
                return Err(ApiError::invalid_field(
                    "labels",
                    format!("{key} is set by Kairship and cannot be changed"),
                ));
            }
            if let Some(v) = value {
                check_label_value(v, "labels")?;
            }
            map.insert(key.clone(), json!(value));
        }
        patch["metadata"] = json!({"labels": map});
    }
    let mut spec = Map::new();
    if let Some(taints) = &req.taints {
        check_taints(taints)?;
        spec.insert("taints".into(), taints_json(taints));
    }
    for (field, value) in [("provider", &req.provider), ("region", &req.region)] {
        if let Some(v) = value {
            check_place(Some(v), field)?;
            // An empty value clears the field.
            spec.insert(
                field.into(),
                if v.is_empty() { Value::Null } else { json!(v) },
            );
        }
    }
    if let Some(zone) = &req.zone {
        check_place(Some(zone), "zone")?;
        spec.extend(zone_fields(Some(zone)));
    }
    if !spec.is_empty() {
        patch["spec"] = Value::Object(spec);
    }
    if patch.as_object().is_some_and(Map::is_empty) {
        return Err(ApiError::invalid(
            "nothing to update: give labels, taints, provider, region or zone",
        ));
    }
    Ok(patch)
}

/// The `spec` fields of a merge patch that sets a member's zone (`""` clears it). Karmada
/// v1.19 keeps zones in `spec.zones`; the deprecated `spec.zone` is cleared with them, since
/// Karmada refuses a Cluster holding both ("Zone and Zones cannot co-exist",
/// `pkg/apis/cluster/validation.validateClusterSpecForFieldSelector`).
pub fn zone_fields(zone: Option<&str>) -> Map<String, Value> {
    let zones = match zone.filter(|z| !z.is_empty()) {
        Some(z) => json!([z]),
        None => Value::Null,
    };
    Map::from_iter([
        ("zone".to_owned(), Value::Null),
        ("zones".to_owned(), zones),
    ])
}

fn taints_json(taints: &[MemberTaint]) -> Value {
    Value::Array(
        taints
            .iter()
            .map(|t| {
                let mut taint = json!({"key": t.key, "effect": t.effect});
                if let Some(v) = &t.value {
                    taint["value"] = json!(v);
                }
                taint
            })
            .collect(),
    )
}

/// The labels every object of a join carries.
pub fn join_labels(instance: &str, cluster: &str) -> Value {
    json!({MEMBER_LABEL: cluster, INSTANCE_LABEL: instance})
}

/// Whether `object` was created by a join of `cluster` (carries [`MEMBER_LABEL`]).
pub fn made_by_join(object: &Value, cluster: &str) -> bool {
    object
        .pointer(&format!(
            "/metadata/labels/{}",
            MEMBER_LABEL.replace('/', "~1")
        ))
        .and_then(Value::as_str)
        == Some(cluster)
}

/// Names of the member-side objects of a Push join of `cluster` (karmadactl's names for the
/// ServiceAccount and its ClusterRole; the impersonator's are per cluster so that unjoining
/// one instance never removes another's).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberNames {
    /// `karmada-<cluster>`.
    pub service_account: String,
    /// `karmada-controller-manager:karmada-<cluster>` (ClusterRole and ClusterRoleBinding).
    pub role: String,
    /// `karmada-<cluster>-token`.
    pub token_secret: String,
    /// `karmada-<cluster>-impersonator`.
    pub impersonator: String,
    /// `karmada-controller-manager:karmada-<cluster>-impersonator`.
    pub impersonator_role: String,
    /// `karmada-<cluster>-impersonator-token`.
    pub impersonator_token_secret: String,
}

impl MemberNames {
    /// The names for `cluster`.
    pub fn of(cluster: &str) -> MemberNames {
        let service_account = format!("karmada-{cluster}");
        let impersonator = format!("karmada-{cluster}-impersonator");
        MemberNames {
            role: format!("karmada-controller-manager:{service_account}"),
            token_secret: format!("{service_account}-token"),
            impersonator_role: format!("karmada-controller-manager:{impersonator}"),
            impersonator_token_secret: format!("{impersonator}-token"),
            service_account,
            impersonator,
        }
    }
}

/// Rules of the member ServiceAccount Karmada's controllers act as: what `karmadactl join`
/// grants (Karmada's execution controller writes any kind the instance propagates).
pub fn member_rules() -> Value {
    json!([
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["get"]},
    ])
}

/// Rules of the impersonator: impersonating the users, groups and ServiceAccounts Karmada's
/// cluster proxy forwards, nothing else.
pub fn impersonator_rules() -> Value {
    json!([
        {"apiGroups": [""], "resources": ["users", "groups", "serviceaccounts"], "verbs": ["impersonate"]},
    ])
}

fn meta(name: &str, namespace: Option<&str>, labels: &Value) -> Value {
    let mut m = json!({"name": name, "labels": labels});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The member-side objects of a Push join, in creation order. The first, the ClusterRoleBinding
/// of the member ServiceAccount, is the anchor: every other object (the namespace only when
/// the join creates it) becomes its dependent, so deleting it last removes the rest through the
/// garbage collector even though the deletion takes away the caller's own rights.
pub fn member_objects(instance: &str, cluster: &str) -> Vec<Planned> {
    let n = MemberNames::of(cluster);
    let labels = join_labels(instance, cluster);
    let ns = Some(CLUSTER_NAMESPACE);
    let binding = |name: &str, sa: &str| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": meta(name, None, &labels),
            "subjects": [{"kind": "ServiceAccount", "name": sa, "namespace": CLUSTER_NAMESPACE}],
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        })
    };
    let role = |name: &str, rules: Value| {
        json!({
            "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": meta(name, None, &labels), "rules": rules,
        })
    };
    let account = |name: &str| json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": meta(name, ns, &labels)});
    let token = |name: &str, sa: &str| {
        let mut m = meta(name, ns, &labels);
        m["annotations"] = json!({"kubernetes.io/service-account.name": sa});
        json!({"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/service-account-token", "metadata": m})
    };
    let mut namespace = Planned::new(
        namespaces(),
        None,
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": meta(CLUSTER_NAMESPACE, None, &labels)}),
    );
    namespace.shared = true;
    vec![
        Planned::new(
            cluster_role_bindings(),
            None,
            binding(&n.role, &n.service_account),
        ),
        namespace,
        Planned::new(cluster_roles(), None, role(&n.role, member_rules())),
        Planned::new(service_accounts(), ns, account(&n.service_account)),
        Planned::new(secrets(), ns, token(&n.token_secret, &n.service_account)),
        Planned::new(
            cluster_roles(),
            None,
            role(&n.impersonator_role, impersonator_rules()),
        ),
        Planned::new(
            cluster_role_bindings(),
            None,
            binding(&n.impersonator_role, &n.impersonator),
        ),
        Planned::new(service_accounts(), ns, account(&n.impersonator)),
        Planned::new(
            secrets(),
            ns,
            token(&n.impersonator_token_secret, &n.impersonator),
        ),
    ]
}

/// The `token` and `ca.crt` a token controller wrote into a token Secret, once it did.
pub fn filled_token(secret: &Value) -> Option<(String, Option<String>)> {
    let decode = |key: &str| {
        secret
            .pointer(&format!("/data/{}", key.replace('/', "~1")))
            .and_then(Value::as_str)
            .and_then(|b| STANDARD.decode(b).ok())
            .and_then(|b| String::from_utf8(b).ok())
            .filter(|s| !s.is_empty())
    };
    Some((decode("token")?, decode("ca.crt")))
}

/// Name of the instance-side Secret of the impersonator's token (Karmada's name).
pub fn impersonator_secret_name(cluster: &str) -> String {
    format!("{cluster}-impersonator")
}

/// The credential Secrets of a Push member in the instance: `<cluster>` (`token` and
/// `caBundle`) and `<cluster>-impersonator` (`token`), as `karmadactl join` writes them.
pub fn karmada_secrets(
    instance: &str,
    cluster: &str,
    token: &str,
    ca: Option<&str>,
    impersonator_token: &str,
) -> Vec<Planned> {
    let labels = join_labels(instance, cluster);
    let ns = Some(CLUSTER_NAMESPACE);
    let mut data = json!({"token": STANDARD.encode(token)});
    if let Some(ca) = ca {
        data["caBundle"] = json!(STANDARD.encode(ca));
    }
    vec![
        Planned::new(
            secrets(),
            ns,
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                   "metadata": meta(cluster, ns, &labels), "data": data}),
        ),
        Planned::new(
            secrets(),
            ns,
            json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                   "metadata": meta(&impersonator_secret_name(cluster), ns, &labels),
                   "data": {"token": STANDARD.encode(impersonator_token)}}),
        ),
    ]
}

/// How a member is synchronised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Karmada's controllers write to the member with the stored credentials.
    Push,
    /// The karmada-agent in the member pulls its work.
    Pull,
}

/// The `Cluster` object of a join. `api_endpoint` is the member's (Push; Pull agents report
/// their own).
pub fn cluster_object(
    instance: &str,
    cluster: &str,
    mode: SyncMode,
    api_endpoint: Option<&str>,
    member_id: Option<&str>,
    placement: &MemberPlacement,
) -> Value {
    let mut labels: Map<String, Value> = placement
        .labels
        .iter()
        .map(|(k, v)| (k.clone(), json!(v)))
        .collect();
    labels.insert(MEMBER_LABEL.into(), json!(cluster));
    labels.insert(INSTANCE_LABEL.into(), json!(instance));
    let mut spec =
        json!({"syncMode": match mode { SyncMode::Push => "Push", SyncMode::Pull => "Pull" }});
    if let Some(endpoint) = api_endpoint {
        spec["apiEndpoint"] = json!(endpoint);
    }
    if let Some(id) = member_id {
        spec["id"] = json!(id);
    }
    if mode == SyncMode::Push {
        spec["secretRef"] = json!({"namespace": CLUSTER_NAMESPACE, "name": cluster});
        spec["impersonatorSecretRef"] =
            json!({"namespace": CLUSTER_NAMESPACE, "name": impersonator_secret_name(cluster)});
    }
    if !placement.taints.is_empty() {
        spec["taints"] = taints_json(&placement.taints);
    }
    for (field, value) in [
        ("provider", &placement.provider),
        ("region", &placement.region),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            spec[field] = json!(v);
        }
    }
    if placement.zone.as_deref().is_some_and(|z| !z.is_empty()) {
        spec["zones"] = json!([placement.zone]);
    }
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": cluster, "labels": labels},
        "spec": spec,
    })
}

/// The bindings (`Kind namespace/name`) among `bindings` that schedule to `cluster`
/// (`spec.clusters[].name`).
pub fn bindings_targeting(bindings: &[&DynamicObject], cluster: &str) -> Vec<String> {
    bindings
        .iter()
        .filter(|b| {
            b.data
                .pointer("/spec/clusters")
                .and_then(Value::as_array)
                .is_some_and(|targets| {
                    targets
                        .iter()
                        .any(|t| t.get("name").and_then(Value::as_str) == Some(cluster))
                })
        })
        .map(|b| {
            let kind = b
                .types
                .as_ref()
                .map_or("ResourceBinding", |t| t.kind.as_str());
            let name = b.metadata.name.as_deref().unwrap_or_default();
            match b.metadata.namespace.as_deref() {
                Some(ns) => format!("{kind} {ns}/{name}"),
                None => format!("{kind} {name}"),
            }
        })
        .collect()
}

/// A bootstrap token: a 6-character id and a 16-character secret of `[a-z0-9]`, as
/// kubeadm and karmadactl make them, from `random` bytes.
pub fn bootstrap_token(random: &[u8; 22]) -> (String, String) {
    const ALPHABET: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    let chars: String = random
        .iter()
        .map(|b| ALPHABET[usize::from(*b) % ALPHABET.len()] as char)
        .collect();
    (chars[..6].to_owned(), chars[6..].to_owned())
}

/// The group a member's bootstrap token authenticates in (besides
/// `system:bootstrappers`); the agent's rights in the instance are bound to it.
pub fn bootstrap_group(cluster: &str) -> String {
    format!("system:bootstrappers:kairship:{cluster}")
}

/// The `kube-system/bootstrap-token-<id>` Secret of a Pull join.
pub fn bootstrap_token_secret(
    instance: &str,
    cluster: &str,
    id: &str,
    secret: &str,
    expiration: &str,
) -> Planned {
    let labels = join_labels(instance, cluster);
    let data: Map<String, Value> = [
        ("token-id", id),
        ("token-secret", secret),
        ("expiration", expiration),
        ("usage-bootstrap-authentication", "true"),
        ("usage-bootstrap-signing", "true"),
        ("auth-extra-groups", &bootstrap_group(cluster)),
        (
            "description",
            &format!("karmada-agent of member cluster {cluster}, made by Kairship"),
        ),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), json!(STANDARD.encode(v))))
    .collect();
    Planned::new(
        secrets(),
        Some(BOOTSTRAP_NAMESPACE),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "bootstrap.kubernetes.io/token",
               "metadata": meta(&format!("bootstrap-token-{id}"), Some(BOOTSTRAP_NAMESPACE), &labels),
               "data": data}),
    )
}

/// Name of the agent's ClusterRole and ClusterRoleBinding in the instance.
pub fn agent_role_name(cluster: &str) -> String {
    format!("kairship:karmada-agent:{cluster}")
}

/// The agent's rights in the instance, bound to its bootstrap token's group: its `Cluster`
/// and status, its Works and leases, Events, and the Secrets of cluster credentials.
pub fn agent_rbac(instance: &str, cluster: &str) -> Vec<Planned> {
    let labels = join_labels(instance, cluster);
    let name = agent_role_name(cluster);
    vec![
        Planned::new(
            cluster_roles(),
            None,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                "metadata": meta(&name, None, &labels),
                "rules": [
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "verbs": ["get", "update", "patch"]},
                    {"apiGroups": ["work.karmada.io"], "resources": ["works", "works/status"], "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]},
                    {"apiGroups": ["config.karmada.io"], "resources": ["resourceinterpretercustomizations", "resourceinterpreterwebhookconfigurations"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list", "watch", "create", "update", "patch"]},
                    {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "update", "patch"]},
                ],
            }),
        ),
        Planned::new(
            cluster_role_bindings(),
            None,
            json!({
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": meta(&name, None, &labels),
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": bootstrap_group(cluster)}],
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            }),
        ),
    ]
}

/// What the karmada-agent manifests of a Pull join need.
#[derive(Clone, Debug)]
pub struct AgentParts<'a> {
    /// Member cluster name.
    pub cluster: &'a str,
    /// The instance's API endpoint.
    pub karmada_endpoint: &'a str,
    /// CA certificate (PEM) of the instance's API server, if it has one to trust.
    pub karmada_ca: Option<&'a str>,
    /// `<id>.<secret>`.
    pub token: &'a str,
    /// The agent's image.
    pub image: &'a str,
    /// Provider, region and zone the agent reports.
    pub placement: &'a MemberPlacement,
}

/// The kubeconfig the agent reaches the instance with (bootstrap token authentication).
pub fn agent_kubeconfig(parts: &AgentParts<'_>) -> String {
    let mut cluster = json!({"server": parts.karmada_endpoint});
    if let Some(ca) = parts.karmada_ca {
        cluster["certificate-authority-data"] = json!(STANDARD.encode(ca));
    }
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "karmada", "cluster": cluster}],
        "users": [{"name": "karmada-agent", "user": {"token": parts.token}}],
        "contexts": [{"name": "karmada", "context": {"cluster": "karmada", "user": "karmada-agent"}}],
        "current-context": "karmada",
    });
    // JSON is YAML; a kubeconfig parser reads either.
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// The objects to apply in a Pull member: namespace, ServiceAccount, the agent's RBAC, the
/// kubeconfig Secret and the karmada-agent Deployment.
pub fn agent_manifests(parts: &AgentParts<'_>) -> Vec<Value> {
    let ns = AGENT_NAMESPACE;
    let labels = json!({"app": "karmada-agent"});
    let mut args = vec![
        "/bin/karmada-agent".to_owned(),
        "--karmada-kubeconfig=/etc/kubeconfig/karmada-kubeconfig".to_owned(),
        "--karmada-context=karmada".to_owned(),
        format!("--cluster-name={}", parts.cluster),
        "--cluster-status-update-frequency=10s".to_owned(),
        format!("--leader-elect-resource-namespace={ns}"),
    ];
    for (flag, value) in [
        ("--cluster-provider", &parts.placement.provider),
        ("--cluster-region", &parts.placement.region),
        ("--cluster-zones", &parts.placement.zone),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            args.push(format!("{flag}={v}"));
        }
    }
    let mut string_data = BTreeMap::new();
    string_data.insert("karmada-kubeconfig", agent_kubeconfig(parts));
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "karmada-agent-sa", "namespace": ns}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "karmada-agent"}, "rules": member_rules()}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "karmada-agent"},
               "subjects": [{"kind": "ServiceAccount", "name": "karmada-agent-sa", "namespace": ns}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "karmada-agent"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "karmada-kubeconfig", "namespace": ns},
               "stringData": string_data}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "karmada-agent", "namespace": ns, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": "karmada-agent-sa",
                    "containers": [{
                        "name": "karmada-agent",
                        "image": parts.image,
                        "command": args,
                        "volumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/kubeconfig"}],
                    }],
                    "volumes": [{"name": "kubeconfig", "secret": {"secretName": "karmada-kubeconfig"}}],
                },
            },
        }}),
    ]
}

/// Refuses a member kubeconfig that would make the server run a program (`exec`,
/// `auth-provider`) or read its own files (`token-file`, `client-certificate`, `client-key`,
/// `certificate-authority` paths) or go through a proxy: a member's kubeconfig must carry its
/// credentials and CA inline. Names the offending entry, never a value.
pub fn check_inline_kubeconfig(kubeconfig: &kube::config::Kubeconfig) -> Result<(), ApiError> {
    let refuse = |entry: &str, field: &str| {
        Err(ApiError::invalid_field(
            "kubeconfig",
            format!(
                "{entry} uses {field}: a member kubeconfig must carry its credentials and CA \
                 inline (token, client-certificate-data, certificate-authority-data)"
            ),
        ))
    };
    for user in &kubeconfig.auth_infos {
        let Some(auth) = &user.auth_info else {
            continue;
        };
        let entry = format!("user {:?}", user.name);
        for (set, field) in [
            (auth.exec.is_some(), "exec"),
            (auth.auth_provider.is_some(), "auth-provider"),
            (auth.token_file.is_some(), "tokenFile"),
            (
                auth.client_certificate.is_some(),
                "client-certificate (a file)",
            ),
            (auth.client_key.is_some(), "client-key (a file)"),
        ] {
            if set {
                return refuse(&entry, field);
            }
        }
    }
    for cluster in &kubeconfig.clusters {
        let Some(c) = &cluster.cluster else {
            continue;
        };
        let entry = format!("cluster {:?}", cluster.name);
        if c.certificate_authority.is_some() {
            return refuse(&entry, "certificate-authority (a file)");
        }
        if c.proxy_url.is_some() {
            return refuse(&entry, "proxy-url");
        }
    }
    Ok(())
}

/// Objects as one YAML stream.
pub fn yaml_stream(objects: &[Value]) -> Result<String, ApiError> {
    let mut out = String::new();
    for object in objects {
        let text = serde_saphyr::to_string(object)
            .map_err(|e| ApiError::internal(format!("cannot render the manifests: {e}")))?;
        out.push_str("---\n");
        out.push_str(&text);
        if !text.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn member_names_follow_karmadactl() {
        let n = MemberNames::of("m1");
        assert_eq!(n.service_account, "karmada-m1");
        assert_eq!(n.role, "karmada-controller-manager:karmada-m1");
        assert_eq!(n.impersonator, "karmada-m1-impersonator");
    }

    #[test]
    fn member_names_are_checked() {
        for (name, ok) in [
            ("m1", true),
            ("a", true),
            ("member-cluster-1", true),
            ("", false),
            ("M1", false),
            ("m.1", false),
            ("-m", false),
            (&"m".repeat(49), false),
            (&"m".repeat(48), true),
        ] {
            assert_eq!(check_member_name(name).is_ok(), ok, "{name}");
        }
    }

    #[test]
    fn the_anchor_comes_first_and_every_object_is_labelled() {
        let objects = member_objects("inst", "m1");
        assert_eq!(objects[0].resource.kind, "ClusterRoleBinding");
        assert_eq!(objects[0].name, "karmada-controller-manager:karmada-m1");
        assert_eq!(objects.len(), 9);
        for o in &objects {
            assert!(made_by_join(&o.body, "m1"), "{}", o.describe());
            assert!(!made_by_join(&o.body, "m2"));
            assert_eq!(o.shared, o.resource.kind == "Namespace");
        }
    }

    #[test]
    fn the_cluster_object_carries_refs_and_placement() {
        let placement = MemberPlacement {
            labels: [("env".to_owned(), "prod".to_owned())].into(),
            taints: vec![MemberTaint {
                key: "dedicated".into(),
                value: Some("gpu".into()),
                effect: "NoSchedule".into(),
            }],
            provider: Some("aws".into()),
            region: Some("eu-west-1".into()),
            zone: Some(String::new()),
        };
        let c = cluster_object(
            "i",
            "m1",
            SyncMode::Push,
            Some("https://m1:6443"),
            Some("uid"),
            &placement,
        );
        assert_eq!(c["spec"]["syncMode"], "Push");
        assert_eq!(c["spec"]["apiEndpoint"], "https://m1:6443");
        assert_eq!(c["spec"]["secretRef"]["name"], "m1");
        assert_eq!(
            c["spec"]["impersonatorSecretRef"]["name"],
            "m1-impersonator"
        );
        assert_eq!(c["spec"]["taints"][0]["value"], "gpu");
        assert_eq!(c["spec"]["region"], "eu-west-1");
        assert!(c["spec"].get("zone").is_none() && c["spec"].get("zones").is_none());
        assert_eq!(c["metadata"]["labels"]["env"], "prod");
        let zoned = MemberPlacement {
            zone: Some("eu-west-1a".into()),
            ..placement.clone()
        };
        let c = cluster_object("i", "m1", SyncMode::Push, None, None, &zoned);
        assert_eq!(c["spec"]["zones"], json!(["eu-west-1a"]));
        assert!(c["spec"].get("zone").is_none());
        let pull = cluster_object("i", "m1", SyncMode::Pull, None, None, &placement);
        assert!(pull["spec"].get("secretRef").is_none());
    }

    #[test]
    fn updates_become_merge_patches() {
        let cases = [
            (
                UpdateMemberRequest {
                    labels: Some([("a".into(), Some("b".into())), ("c".into(), None)].into()),
                    ..Default::default()
                },
                Some(json!({"metadata": {"labels": {"a": "b", "c": null}}})),
            ),
            (
                UpdateMemberRequest {
                    taints: Some(vec![]),
                    region: Some(String::new()),
                    zone: Some("z1".into()),
                    ..Default::default()
                },
                Some(
                    json!({"spec": {"taints": [], "region": null, "zone": null, "zones": ["z1"]}}),
                ),
            ),
            (
                UpdateMemberRequest {
                    zone: Some(String::new()),
                    ..Default::default()
                },
                Some(json!({"spec": {"zone": null, "zones": null}})),
            ),
            (UpdateMemberRequest::default(), None),
            (
                UpdateMemberRequest {
                    taints: Some(vec![MemberTaint {
                        key: "k".into(),
                        value: None,
                        effect: "Sometimes".into(),
                    }]),
                    ..Default::default()
                },
                None,
            ),
            (
                UpdateMemberRequest {
                    labels: Some([(MEMBER_LABEL.into(), Some("x".into()))].into()),
                    ..Default::default()
                },
                None,
            ),
            (
                UpdateMemberRequest {
                    labels: Some([("bad key!".into(), Some("x".into()))].into()),
                    ..Default::default()
                },
                None,
            ),
        ];
        for (req, want) in cases {
            assert_eq!(update_patch(&req).ok(), want, "{req:?}");
        }
    }

    #[test]
    fn bindings_to_a_cluster_are_named() {
        let binding = |name: &str, ns: Option<&str>, clusters: Value| -> DynamicObject {
            serde_json::from_value(json!({
                "apiVersion": "work.karmada.io/v1alpha2",
                "kind": if ns.is_some() { "ResourceBinding" } else { "ClusterResourceBinding" },
                "metadata": {"name": name, "namespace": ns},
                "spec": {"clusters": clusters},
            }))
            .unwrap()
        };
        let a = binding("a", Some("ns"), json!([{"name": "m1", "replicas": 1}]));
        let b = binding("b", Some("ns"), json!([{"name": "m2"}]));
        let c = binding("c", None, json!([{"name": "m2"}, {"name": "m1"}]));
        let d = binding("d", Some("ns"), Value::Null);
        assert_eq!(
            bindings_targeting(&[&a, &b, &c, &d], "m1"),
            ["ResourceBinding ns/a", "ClusterResourceBinding c"]
        );
        assert!(bindings_targeting(&[&a, &b, &c, &d], "m3").is_empty());
    }

    #[test]
    fn member_kubeconfigs_carry_everything_inline() {
        let with = |user: &str, cluster: &str| {
            let text = format!(
                "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n    server: https://m:6443\n{cluster}\
                 users:\n- name: u\n  user:\n{user}contexts:\n- name: x\n  context: {{cluster: c, user: u}}\ncurrent-context: x\n"
            );
            kube::config::Kubeconfig::from_yaml(&text).unwrap()
        };
        for (user, cluster, ok) in [
            (
                "    token: abc\n",
                "    certificate-authority-data: Q0E=\n",
                true,
            ),
            (
                "    client-certificate-data: Q0U=\n    client-key-data: S0U=\n",
                "",
                true,
            ),
            (
                "    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: /bin/sh\n",
                "",
                false,
            ),
            ("    tokenFile: /var/run/secrets/token\n", "", false),
            (
                "    client-certificate: /etc/cert\n    client-key: /etc/key\n",
                "",
                false,
            ),
            ("    auth-provider:\n      name: oidc\n", "", false),
            (
                "    token: abc\n",
                "    certificate-authority: /etc/ca.crt\n",
                false,
            ),
            (
                "    token: abc\n",
                "    proxy-url: http://proxy:3128\n",
                false,
            ),
        ] {
            let got = check_inline_kubeconfig(&with(user, cluster));
            assert_eq!(got.is_ok(), ok, "{user} {cluster}: {got:?}");
            if let Err(err) = got {
                assert!(
                    !err.message.contains("/etc") && !err.message.contains("/var"),
                    "{}",
                    err.message
                );
            }
        }
    }

    #[test]
    fn bootstrap_tokens_have_kubeadm_shape() {
        let (id, secret) = bootstrap_token(&[7; 22]);
        assert_eq!(id.len(), 6);
        assert_eq!(secret.len(), 16);
        let s = bootstrap_token_secret("i", "m1", &id, &secret, "2030-01-01T00:00:00Z");
        assert_eq!(s.name, format!("bootstrap-token-{id}"));
        assert_eq!(s.body["type"], "bootstrap.kubernetes.io/token");
        assert_eq!(
            s.body["data"]["expiration"],
            STANDARD.encode("2030-01-01T00:00:00Z")
        );
    }

    #[test]
    fn agent_manifests_name_the_endpoint_and_the_token() {
        let placement = MemberPlacement {
            region: Some("r1".into()),
            ..Default::default()
        };
        let parts = AgentParts {
            cluster: "m1",
            karmada_endpoint: "https://karmada:5443",
            karmada_ca: Some("CA"),
            token: "abcdef.0123456789abcdef",
            image: "docker.io/karmada/karmada-agent:v1.13.0",
            placement: &placement,
        };
        let objects = agent_manifests(&parts);
        let kinds: Vec<&str> = objects
            .iter()
            .map(|o| o["kind"].as_str().unwrap())
            .collect();
        assert_eq!(
            kinds,
            [
                "Namespace",
                "ServiceAccount",
                "ClusterRole",
                "ClusterRoleBinding",
                "Secret",
                "Deployment"
            ]
        );
        let kubeconfig: Value = serde_json::from_str(
            objects[4]["stringData"]["karmada-kubeconfig"]
                .as_str()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(
            kubeconfig["clusters"][0]["cluster"]["server"],
            "https://karmada:5443"
        );
        assert_eq!(
            kubeconfig["users"][0]["user"]["token"],
            "abcdef.0123456789abcdef"
        );
        let command = objects[5]["spec"]["template"]["spec"]["containers"][0]["command"].clone();
        assert!(
            command
                .as_array()
                .unwrap()
                .contains(&json!("--cluster-name=m1"))
        );
        assert!(
            command
                .as_array()
                .unwrap()
                .contains(&json!("--cluster-region=r1"))
        );
        let yaml = yaml_stream(&objects).unwrap();
        assert_eq!(yaml.matches("---\n").count(), 6);
    }
}
