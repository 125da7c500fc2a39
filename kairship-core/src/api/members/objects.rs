//! The objects a join creates, as pure functions of the request: the member-side RBAC of a
//! Push join (as `karmadactl join` creates it), the credential Secrets and the `Cluster` in the
//! instance, the patch of an update, and which bindings still schedule to a member (what only
//! a Pull registration writes is in `agent.rs`).

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
    /// A planned object; its name is the body's.
    pub fn new(resource: ApiResource, namespace: Option<&str>, body: Value) -> Planned {
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

/// Name of the member-side ServiceAccount Karmada's cluster proxy acts as, and of the
/// ClusterRole and ClusterRoleBinding that let it impersonate: `karmadactl join` creates the
/// ServiceAccount as `names.GenerateServiceAccountName("impersonator")`
/// (karmada-io/karmada `pkg/util/cluster.go`, `ObtainCredentialsFromMemberCluster`) and the
/// unified-auth controller names its role and binding `karmadaImpersonatorName`
/// (`pkg/controllers/unifiedauth/unified_auth_controller.go`).
pub const IMPERSONATOR: &str = "karmada-impersonator";

/// Names of the member-side objects of a Push join of `cluster`: karmadactl's for the
/// ServiceAccount Karmada's controllers act as and its ClusterRole (`pkg/util/cluster.go`:
/// `names.GenerateServiceAccountName(cluster)`, `names.GenerateRoleName(..)`), and Karmada's
/// own for the impersonator (one per member, as in Karmada: a member serves the cluster proxy
/// of one instance).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemberNames {
    /// `karmada-<cluster>`.
    pub service_account: String,
    /// `karmada-controller-manager:karmada-<cluster>` (ClusterRole and ClusterRoleBinding).
    pub role: String,
    /// `karmada-<cluster>-token`.
    pub token_secret: String,
    /// `karmada-impersonator` (ServiceAccount, ClusterRole and ClusterRoleBinding).
    pub impersonator: String,
    /// `karmada-impersonator-token`.
    pub impersonator_token_secret: String,
}

impl MemberNames {
    /// The names for `cluster`.
    pub fn of(cluster: &str) -> MemberNames {
        let service_account = format!("karmada-{cluster}");
        MemberNames {
            role: format!("karmada-controller-manager:{service_account}"),
            token_secret: format!("{service_account}-token"),
            impersonator: IMPERSONATOR.to_owned(),
            impersonator_token_secret: format!("{IMPERSONATOR}-token"),
            service_account,
        }
    }
}

/// Rules of the member ServiceAccount Karmada's controllers act as: what `karmadactl join`
/// grants (`ClusterPolicyRules` of `pkg/util/cluster.go`; Karmada's execution controller
/// writes any kind the instance propagates).
pub fn member_rules() -> Value {
    json!([
        {"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]},
        {"nonResourceURLs": ["*"], "verbs": ["get"]},
    ])
}

/// A subject of an RBAC binding.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Subject {
    /// A user name.
    User(String),
    /// A group name.
    Group(String),
    /// A ServiceAccount's name (Karmada's rules name it without its namespace).
    ServiceAccount(String),
}

/// Groups the member impersonator is never allowed to impersonate, whoever holds the cluster
/// proxy: impersonating them would make the proxy an administrator of the member.
pub const NEVER_IMPERSONATED_GROUPS: &[&str] = &["system:masters"];

fn rule_strings<'a>(rule: &'a Value, key: &str) -> Vec<&'a str> {
    rule[key]
        .as_array()
        .map(|a| a.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

/// Whether one ClusterRole rule grants something on `clusters/proxy` of `cluster` (group
/// `cluster.karmada.io`) or on `proxying/proxy` (`search.karmada.io`): Karmada's
/// `findRBACSubjectsWithCluster` in `pkg/controllers/unifiedauth/unified_auth_controller.go`,
/// with `util.PolicyRuleAPIGroupMatches`, `PolicyRuleResourceMatches` and
/// `PolicyRuleResourceNameMatches`.
pub fn rule_reaches_cluster_proxy(rule: &Value, cluster: &str) -> bool {
    let groups = rule_strings(rule, "apiGroups");
    let resources = rule_strings(rule, "resources");
    let names = rule_strings(rule, "resourceNames");
    let group = |g: &str| groups.iter().any(|x| *x == "*" || *x == g);
    let resource = |r: &str| resources.iter().any(|x| *x == "*" || *x == r);
    let named = names.is_empty() || names.contains(&cluster);
    (group("cluster.karmada.io") && resource("clusters/proxy") && named)
        || (group("search.karmada.io") && resource("proxying/proxy"))
}

/// The subjects the impersonator of member `cluster` may impersonate: those that Karmada's
/// ClusterRoleBindings bind to a ClusterRole reaching the cluster proxy of `cluster` (the
/// subjects Karmada's unified-auth controller collects), less [`NEVER_IMPERSONATED_GROUPS`].
/// Sorted and without duplicates.
pub fn impersonated_subjects(
    cluster: &str,
    cluster_roles: &[Value],
    cluster_role_bindings: &[Value],
) -> Vec<Subject> {
    let reaching: std::collections::BTreeSet<&str> = cluster_roles
        .iter()
        .filter(|role| {
            role["rules"]
                .as_array()
                .is_some_and(|rules| rules.iter().any(|r| rule_reaches_cluster_proxy(r, cluster)))
        })
        .filter_map(|role| role.pointer("/metadata/name").and_then(Value::as_str))
        .collect();
    let mut subjects = std::collections::BTreeSet::new();
    for binding in cluster_role_bindings {
        let role = &binding["roleRef"];
        if role["kind"] != "ClusterRole"
            || !role["name"].as_str().is_some_and(|n| reaching.contains(n))
        {
            continue;
        }
        for subject in binding["subjects"].as_array().into_iter().flatten() {
            let Some(name) = subject["name"].as_str().filter(|n| !n.is_empty()) else {
                continue;
            };
            let name = name.to_owned();
            match subject["kind"].as_str() {
                Some("User") => subjects.insert(Subject::User(name)),
                Some("Group") if !NEVER_IMPERSONATED_GROUPS.contains(&name.as_str()) => {
                    subjects.insert(Subject::Group(name))
                }
                Some("ServiceAccount") => subjects.insert(Subject::ServiceAccount(name)),
                _ => false,
            };
        }
    }
    subjects.into_iter().collect()
}

/// Rules of the impersonator: `impersonate` on exactly `subjects` (`resourceNames` of
/// `users`, `serviceaccounts` and `groups`), as Karmada's `util.GenerateImpersonationRules`
/// (`pkg/util/rbac.go`) writes them; none at all without subjects. A group of
/// [`NEVER_IMPERSONATED_GROUPS`] is left out even if given.
pub fn impersonator_rules(subjects: &[Subject]) -> Value {
    let mut users = Vec::new();
    let mut accounts = Vec::new();
    let mut groups = Vec::new();
    for subject in subjects {
        match subject {
            Subject::User(n) => users.push(n.as_str()),
            Subject::ServiceAccount(n) => accounts.push(n.as_str()),
            Subject::Group(n) if !NEVER_IMPERSONATED_GROUPS.contains(&n.as_str()) => {
                groups.push(n.as_str());
            }
            Subject::Group(_) => {}
        }
    }
    let mut rules = Vec::new();
    for (resource, names) in [
        ("users", users),
        ("serviceaccounts", accounts),
        ("groups", groups),
    ] {
        let mut names = names;
        names.sort_unstable();
        names.dedup();
        if !names.is_empty() {
            rules.push(json!({"apiGroups": [""], "resources": [resource], "resourceNames": names, "verbs": ["impersonate"]}));
        }
    }
    Value::Array(rules)
}

fn meta(name: &str, namespace: Option<&str>, labels: &Value) -> Value {
    let mut m = json!({"name": name, "labels": labels});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

/// The member-side objects of a Push join, in creation order, the impersonator allowed to
/// impersonate `subjects`. The first, the ClusterRoleBinding of the member ServiceAccount, is
/// the anchor: every other object becomes its dependent (the namespace only when the join
/// creates it), so deleting it last removes the rest through the garbage collector even though
/// the deletion takes away the caller's own rights.
pub fn member_objects(instance: &str, cluster: &str, subjects: &[Subject]) -> Vec<Planned> {
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
            role(&n.impersonator, impersonator_rules(subjects)),
        ),
        Planned::new(
            cluster_role_bindings(),
            None,
            binding(&n.impersonator, &n.impersonator),
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
        assert_eq!(n.impersonator, "karmada-impersonator");
        assert_eq!(n.impersonator_token_secret, "karmada-impersonator-token");
    }

    #[test]
    fn impersonated_subjects_are_who_holds_the_cluster_proxy_less_system_masters() {
        let role = |name: &str, rules: Value| json!({"metadata": {"name": name}, "rules": rules});
        let roles = [
            role(
                "cluster-admin",
                json!([{"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}]),
            ),
            role(
                "proxy-m1",
                json!([{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "resourceNames": ["m1"], "verbs": ["get"]}]),
            ),
            role(
                "proxy-m2",
                json!([{"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/proxy"], "resourceNames": ["m2"], "verbs": ["get"]}]),
            ),
            role(
                "search",
                json!([{"apiGroups": ["search.karmada.io"], "resources": ["proxying/proxy"], "verbs": ["get"]}]),
            ),
            role(
                "pods",
                json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
            ),
        ];
        let binding = |role: &str, kind: &str, subjects: Value| json!({"roleRef": {"kind": kind, "name": role}, "subjects": subjects});
        let bindings = [
            binding(
                "cluster-admin",
                "ClusterRole",
                json!([{"kind": "Group", "name": "system:masters"}, {"kind": "User", "name": "root"}]),
            ),
            binding(
                "proxy-m1",
                "ClusterRole",
                json!([{"kind": "User", "name": "editor"}, {"kind": "Group", "name": "devs"}]),
            ),
            binding(
                "proxy-m1",
                "ClusterRole",
                json!([{"kind": "User", "name": "editor"}]),
            ),
            binding(
                "proxy-m2",
                "ClusterRole",
                json!([{"kind": "User", "name": "other"}]),
            ),
            binding(
                "search",
                "ClusterRole",
                json!([{"kind": "ServiceAccount", "name": "kairship", "namespace": "karmada-system"}]),
            ),
            binding(
                "pods",
                "ClusterRole",
                json!([{"kind": "User", "name": "reader"}]),
            ),
            binding(
                "proxy-m1",
                "Role",
                json!([{"kind": "User", "name": "namespaced"}]),
            ),
        ];
        assert_eq!(
            impersonated_subjects("m1", &roles, &bindings),
            [
                Subject::User("editor".into()),
                Subject::User("root".into()),
                Subject::Group("devs".into()),
                Subject::ServiceAccount("kairship".into()),
            ]
        );
        // No ClusterRole reaches the proxy: nobody.
        assert!(impersonated_subjects("m1", &roles[4..], &bindings).is_empty());
    }

    #[test]
    fn impersonator_rules_name_each_subject_and_never_system_masters() {
        let subjects = [
            Subject::User("editor".into()),
            Subject::User("admin".into()),
            Subject::Group("system:masters".into()),
            Subject::Group("devs".into()),
            Subject::ServiceAccount("kairship".into()),
        ];
        assert_eq!(
            impersonator_rules(&subjects),
            json!([
                {"apiGroups": [""], "resources": ["users"], "resourceNames": ["admin", "editor"], "verbs": ["impersonate"]},
                {"apiGroups": [""], "resources": ["serviceaccounts"], "resourceNames": ["kairship"], "verbs": ["impersonate"]},
                {"apiGroups": [""], "resources": ["groups"], "resourceNames": ["devs"], "verbs": ["impersonate"]},
            ])
        );
        assert_eq!(impersonator_rules(&[]), json!([]));
        assert_eq!(
            impersonator_rules(&[Subject::Group("system:masters".into())]),
            json!([])
        );
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
        let objects = member_objects("inst", "m1", &[Subject::User("u".into())]);
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
}
