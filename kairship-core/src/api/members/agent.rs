//! What a Pull registration writes, as pure functions: the karmada-agent's rights in the
//! instance (exactly what `karmadactl register` grants), the bootstrap token's right to ask for
//! a client certificate, the agent's key and certificate request, and the manifests the member
//! applies (the karmada-agent as Karmada's `artifacts/agent/karmada-agent.yaml` deploys it).
//!
//! The agent's credential is a client certificate, as with `karmadactl register`: the
//! karmada-agent has no TLS bootstrapping of its own (karmadactl does it before deploying the
//! agent), so Kairship does it in the registration call. It makes the key, submits the CSR
//! (CN `system:karmada:agent:<cluster>`, O `system:karmada:agents`, signer
//! `kubernetes.io/kube-apiserver-client`) authenticated by the bootstrap token, approves it,
//! waits for the instance's signer to issue the certificate, deletes the token, and puts the
//! certificate and key into the manifests. The token never leaves Kairship and is only ever
//! allowed to post and read CSRs.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use kube::core::{ApiResource, GroupVersionKind};
use serde_json::{Value, json};

use serde_json::Map;

use super::objects::{
    BOOTSTRAP_NAMESPACE, CLUSTER_NAMESPACE, Planned, cluster_role_bindings, cluster_roles,
    join_labels, member_rules, namespaces, secrets,
};
use super::types::MemberPlacement;
use crate::api::error::ApiError;

/// User name prefix of agent certificates (karmadactl `ClusterPermissionPrefix`).
pub const AGENT_USER_PREFIX: &str = "system:karmada:agent:";
/// Group of agent certificates (karmadactl `ClusterPermissionGroups`).
pub const AGENT_GROUP: &str = "system:karmada:agents";
/// The signer of client certificates the instance's API server trusts.
pub const CLIENT_SIGNER: &str = "kubernetes.io/kube-apiserver-client";
/// Validity asked for the agent's certificate (karmadactl `DefaultCertExpirationSeconds`).
pub const CERT_EXPIRATION_SECONDS: i64 = 86_400 * 365;
/// Namespace of the karmada-agent in a Pull member.
pub const AGENT_NAMESPACE: &str = "karmada-system";
/// Label karmadactl puts on the namespaces it creates.
const KARMADA_SYSTEM_LABEL: &str = "karmada.io/system";

/// The user name of `cluster`'s agent.
pub fn agent_user(cluster: &str) -> String {
    format!("{AGENT_USER_PREFIX}{cluster}")
}

/// Karmada's execution namespace of `cluster` (`karmada-es-<cluster>`), where its Works are.
pub fn execution_namespace(cluster: &str) -> String {
    format!("karmada-es-{cluster}")
}

/// The group a member's bootstrap token authenticates in (besides `system:bootstrappers`).
pub fn bootstrap_group(cluster: &str) -> String {
    format!("system:bootstrappers:kairship:{cluster}")
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

/// The `kube-system/bootstrap-token-<id>` Secret of a Pull registration: authentication only
/// (no `usage-bootstrap-signing`: nothing reads `cluster-info` with it).
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
        ("auth-extra-groups", &bootstrap_group(cluster)),
        (
            "description",
            &format!("certificate request of the karmada-agent of member cluster {cluster}, made by Kairship"),
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

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk(group, version, kind), plural)
}

/// `rbac.authorization.k8s.io/v1` Roles.
pub fn roles() -> ApiResource {
    resource("rbac.authorization.k8s.io", "v1", "Role", "roles")
}
/// `rbac.authorization.k8s.io/v1` RoleBindings.
pub fn role_bindings() -> ApiResource {
    resource(
        "rbac.authorization.k8s.io",
        "v1",
        "RoleBinding",
        "rolebindings",
    )
}
/// `certificates.k8s.io/v1` CertificateSigningRequests.
pub fn certificate_signing_requests() -> ApiResource {
    resource(
        "certificates.k8s.io",
        "v1",
        "CertificateSigningRequest",
        "certificatesigningrequests",
    )
}

fn meta(name: &str, namespace: Option<&str>, labels: &Value) -> Value {
    let mut m = json!({"name": name, "labels": labels});
    if let Some(ns) = namespace {
        m["namespace"] = json!(ns);
    }
    m
}

fn rbac(kind: &str, name: &str, namespace: Option<&str>, labels: &Value, rest: Value) -> Value {
    let mut object = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": kind,
        "metadata": meta(name, namespace, labels),
    });
    if let (Some(o), Some(r)) = (object.as_object_mut(), rest.as_object()) {
        o.extend(r.clone());
    }
    object
}

fn binding_to_agent(cluster: &str, role_kind: &str, role: &str) -> Value {
    json!({
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": agent_user(cluster)}],
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": role_kind, "name": role},
    })
}

/// The names of the agent's RBAC objects in the instance (karmadactl's names):
/// `system:karmada:<cluster>:agent` (ClusterRole and ClusterRoleBinding),
/// `system:karmada:<cluster>:agent-secret` (Role and RoleBinding in `karmada-cluster`) and
/// `system:karmada:<cluster>:agent-work` (Role and RoleBinding in `karmada-es-<cluster>`).
pub fn agent_rbac_names(cluster: &str) -> [String; 3] {
    [
        format!("system:karmada:{cluster}:agent"),
        format!("system:karmada:{cluster}:agent-secret"),
        format!("system:karmada:{cluster}:agent-work"),
    ]
}

/// The agent's rights in the instance, bound to the user of its certificate, exactly as
/// `karmadactl register` creates them (karmada-io/karmada `pkg/karmadactl/register/register.go`,
/// `GenerateRBACResources`): its own `Cluster` by name, its status, the credential Secrets of
/// its own cluster, its Works in its execution namespace, and no more. The two namespaces are
/// created when missing (karmadactl does the same for the Roles' namespaces).
pub fn agent_rbac(instance: &str, cluster: &str) -> Vec<Planned> {
    let labels = join_labels(instance, cluster);
    let [role, secret_role, work_role] = agent_rbac_names(cluster);
    let es = execution_namespace(cluster);
    let namespace = |name: &str| {
        let mut p = Planned::new(
            namespaces(),
            None,
            json!({"apiVersion": "v1", "kind": "Namespace",
                   "metadata": {"name": name, "labels": {KARMADA_SYSTEM_LABEL: "true"}}}),
        );
        p.shared = true;
        p
    };
    let cs = Some(CLUSTER_NAMESPACE);
    let ws = Some(es.as_str());
    vec![
        namespace(CLUSTER_NAMESPACE),
        namespace(&es),
        // register.go GenerateClusterRole
        Planned::new(
            cluster_roles(),
            None,
            rbac(
                "ClusterRole",
                &role,
                None,
                &labels,
                json!({"rules": [
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": [cluster], "verbs": ["get", "delete"]},
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create", "list", "watch"]},
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "resourceNames": [cluster], "verbs": ["update"]},
                    {"apiGroups": ["config.karmada.io"], "resources": ["resourceinterpreterwebhookconfigurations", "resourceinterpretercustomizations"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "create"]},
                    {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
                    {"apiGroups": [""], "resources": ["events"], "verbs": ["patch", "create", "update"]},
                ]}),
            ),
        ),
        // register.go GenerateClusterRoleBinding
        Planned::new(
            cluster_role_bindings(),
            None,
            rbac(
                "ClusterRoleBinding",
                &role,
                None,
                &labels,
                binding_to_agent(cluster, "ClusterRole", &role),
            ),
        ),
        // register.go GenerateSecretAccessRole
        Planned::new(
            roles(),
            cs,
            rbac(
                "Role",
                &secret_role,
                cs,
                &labels,
                json!({"rules": [
                    {"apiGroups": [""], "resources": ["secrets"], "resourceNames": [cluster, format!("{cluster}-impersonator")], "verbs": ["get", "patch"]},
                    {"apiGroups": [""], "resources": ["secrets"], "verbs": ["create"]},
                ]}),
            ),
        ),
        // register.go GenerateSecretAccessRoleBinding
        Planned::new(
            role_bindings(),
            cs,
            rbac(
                "RoleBinding",
                &secret_role,
                cs,
                &labels,
                binding_to_agent(cluster, "Role", &secret_role),
            ),
        ),
        // register.go GenerateWorkAccessRole
        Planned::new(
            roles(),
            ws,
            rbac(
                "Role",
                &work_role,
                ws,
                &labels,
                json!({"rules": [
                    {"apiGroups": ["work.karmada.io"], "resources": ["works"], "verbs": ["get", "create", "list", "watch", "update", "delete"]},
                    {"apiGroups": ["work.karmada.io"], "resources": ["works/status"], "verbs": ["patch", "update"]},
                ]}),
            ),
        ),
        // register.go GenerateWorkAccessRoleBinding
        Planned::new(
            role_bindings(),
            ws,
            rbac(
                "RoleBinding",
                &work_role,
                ws,
                &labels,
                binding_to_agent(cluster, "Role", &work_role),
            ),
        ),
    ]
}

/// Name of the ClusterRole and ClusterRoleBinding that let `cluster`'s bootstrap token post
/// its certificate request.
pub fn bootstrap_role_name(cluster: &str) -> String {
    format!("kairship:agent-bootstrap:{cluster}")
}

/// The bootstrap token's only right: posting and reading CSRs (karmadactl's init binds
/// `system:node-bootstrapper` to its token group for the same purpose; this is that role's
/// `create` and `get`, for this registration's group alone).
pub fn bootstrap_rbac(instance: &str, cluster: &str) -> Vec<Planned> {
    let labels = join_labels(instance, cluster);
    let name = bootstrap_role_name(cluster);
    vec![
        Planned::new(
            cluster_roles(),
            None,
            rbac(
                "ClusterRole",
                &name,
                None,
                &labels,
                json!({"rules": [
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get"]},
                ]}),
            ),
        ),
        Planned::new(
            cluster_role_bindings(),
            None,
            rbac(
                "ClusterRoleBinding",
                &name,
                None,
                &labels,
                json!({
                    "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": bootstrap_group(cluster)}],
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
                }),
            ),
        ),
    ]
}

/// Objects of a Pull registration removed on unjoin when they carry the join's label:
/// `(resource, namespace, name)`.
pub fn registration_objects(cluster: &str) -> Vec<(ApiResource, Option<String>, String)> {
    let [role, secret_role, work_role] = agent_rbac_names(cluster);
    let cs = Some(CLUSTER_NAMESPACE.to_owned());
    let ws = Some(execution_namespace(cluster));
    vec![
        (cluster_role_bindings(), None, role.clone()),
        (cluster_roles(), None, role),
        (role_bindings(), cs.clone(), secret_role.clone()),
        (roles(), cs, secret_role),
        (role_bindings(), ws.clone(), work_role.clone()),
        (roles(), ws, work_role),
        (cluster_role_bindings(), None, bootstrap_role_name(cluster)),
        (cluster_roles(), None, bootstrap_role_name(cluster)),
    ]
}

/// A fresh key (ECDSA P-256, PKCS#8 PEM) and a certificate request (PEM) for `cluster`'s agent:
/// CN `system:karmada:agent:<cluster>`, O `system:karmada:agents` (karmadactl
/// `constructKarmadaAgentConfig`).
pub fn agent_key_and_request(cluster: &str) -> Result<(String, String), ApiError> {
    let fail = |e: rcgen::Error| ApiError::internal(format!("cannot make the agent's key: {e}"));
    let key = rcgen::KeyPair::generate().map_err(fail)?;
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).map_err(fail)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, agent_user(cluster));
    params
        .distinguished_name
        .push(rcgen::DnType::OrganizationName, AGENT_GROUP);
    let request = params.serialize_request(&key).map_err(fail)?;
    let pem = request.pem().map_err(fail)?;
    Ok((key.serialize_pem(), pem))
}

/// The CSR of `cluster`'s agent (karmadactl `constructKubeConfig`): signer
/// `kubernetes.io/kube-apiserver-client`, usages digital signature, key encipherment and
/// client auth, one year.
pub fn agent_csr(instance: &str, cluster: &str, name: &str, request_pem: &str) -> Value {
    json!({
        "apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest",
        "metadata": meta(name, None, &join_labels(instance, cluster)),
        "spec": {
            "request": STANDARD.encode(request_pem),
            "signerName": CLIENT_SIGNER,
            "expirationSeconds": CERT_EXPIRATION_SECONDS,
            "usages": ["digital signature", "key encipherment", "client auth"],
        },
    })
}

/// The approval Kairship writes to `/approval` of the agent's CSR.
pub fn approval(csr: &Value, caller: &str) -> Value {
    let mut approved = csr.clone();
    let mut conditions = csr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    conditions.push(json!({
        "type": "Approved", "status": "True", "reason": "KairshipPullRegistration",
        "message": format!("approved by Kairship for the Pull registration requested by {caller}"),
    }));
    approved["status"]["conditions"] = Value::Array(conditions);
    approved
}

/// What the signer made of a CSR: its certificate (PEM) once issued, or why it never will be.
pub fn issued(csr: &Value) -> Result<Option<String>, String> {
    let conditions = csr
        .pointer("/status/conditions")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    for c in &conditions {
        let kind = c.get("type").and_then(Value::as_str).unwrap_or("");
        if matches!(kind, "Denied" | "Failed")
            && c.get("status").and_then(Value::as_str) != Some("False")
        {
            let message = c.get("message").and_then(Value::as_str).unwrap_or("");
            return Err(format!("the CSR is {kind}: {message}"));
        }
    }
    let cert = csr
        .pointer("/status/certificate")
        .and_then(Value::as_str)
        .filter(|c| !c.is_empty());
    match cert {
        None => Ok(None),
        Some(b) => STANDARD
            .decode(b)
            .ok()
            .and_then(|b| String::from_utf8(b).ok())
            .map(Some)
            .ok_or_else(|| "the issued certificate is not PEM".to_owned()),
    }
}

/// The instance's kubeconfig (as JSON) with the current context's user replaced by a bearer
/// token: how Kairship reaches the instance as the bootstrap token.
pub fn with_token_user(kubeconfig: &Value, token: &str) -> Value {
    let mut out = kubeconfig.clone();
    let current = kubeconfig
        .get("current-context")
        .and_then(Value::as_str)
        .unwrap_or("");
    let user = kubeconfig
        .get("contexts")
        .and_then(Value::as_array)
        .and_then(|contexts| {
            contexts
                .iter()
                .find(|c| c.get("name").and_then(Value::as_str) == Some(current))
        })
        .and_then(|c| c.pointer("/context/user"))
        .and_then(Value::as_str)
        .unwrap_or("");
    out["users"] = json!([{"name": user, "user": {"token": token}}]);
    out
}

/// The Karmada release an image tag names, from a Karmada git version (karmada
/// `pkg/version/release.go` `ReleaseVersion`: `v1.19.0-rc.0-18-gf8fdd02df` -> `v1.19.0-rc.0`).
pub fn release_tag(version: &str) -> String {
    let bytes = version.as_bytes();
    // Cut at the first `-<digits>-g<7+ hex>`, as upstream's gitVersionSplitRE.
    for (i, _) in version.match_indices('-') {
        let rest = &version[i + 1..];
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            continue;
        }
        let after = &rest[digits..];
        if let Some(hash) = after.strip_prefix("-g")
            && hash
                .bytes()
                .take_while(|b| b.is_ascii_digit() || b.is_ascii_lowercase())
                .count()
                >= 7
        {
            return String::from_utf8_lossy(&bytes[..i]).into_owned();
        }
    }
    version.to_owned()
}

/// When a certificate (PEM) stops being valid (RFC 3339), read from its `notAfter`.
pub fn not_after(cert_pem: &str) -> Option<String> {
    let body: String = cert_pem
        .lines()
        .filter(|l| !l.starts_with("-----"))
        .collect();
    let der = STANDARD.decode(body.trim()).ok()?;
    let (_, cert, _) = read_tlv(&der)?;
    let (_, mut tbs, _) = read_tlv(cert)?;
    if tbs.first() == Some(&0xA0) {
        tbs = read_tlv(tbs)?.2;
    }
    // serialNumber, signature, issuer, then validity.
    for _ in 0..3 {
        tbs = read_tlv(tbs)?.2;
    }
    let (_, validity, _) = read_tlv(tbs)?;
    let (_, _, rest) = read_tlv(validity)?;
    let (tag, time, _) = read_tlv(rest)?;
    let text = std::str::from_utf8(time).ok()?;
    // UTCTime YYMMDDHHMMSSZ or GeneralizedTime YYYYMMDDHHMMSSZ.
    let full = match tag {
        0x17 => {
            let year: u32 = text.get(..2)?.parse().ok()?;
            format!("{}{text}", if year < 50 { "20" } else { "19" })
        }
        0x18 => text.to_owned(),
        _ => return None,
    };
    let d = |r: std::ops::Range<usize>| full.get(r);
    Some(format!(
        "{}-{}-{}T{}:{}:{}Z",
        d(0..4)?,
        d(4..6)?,
        d(6..8)?,
        d(8..10)?,
        d(10..12)?,
        d(12..14)?
    ))
}

/// One DER tag-length-value: (tag, contents, rest).
fn read_tlv(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return None;
        }
        let len = rest[..n]
            .iter()
            .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
        rest = &rest[n..];
        len
    };
    if rest.len() < len {
        return None;
    }
    Some((tag, &rest[..len], &rest[len..]))
}

/// What the karmada-agent manifests of a Pull registration need.
#[derive(Clone)]
pub struct AgentParts<'a> {
    /// Member cluster name.
    pub cluster: &'a str,
    /// The instance's API endpoint as the member reaches it.
    pub karmada_endpoint: &'a str,
    /// CA certificate (PEM) of the instance's API server, if it has one to trust.
    pub karmada_ca: Option<&'a str>,
    /// The agent's client certificate (PEM).
    pub client_certificate: &'a str,
    /// The agent's private key (PEM).
    pub client_key: &'a str,
    /// The agent's image.
    pub image: &'a str,
    /// The member's API endpoint as Karmada reaches it (`--cluster-api-endpoint`).
    pub member_endpoint: Option<&'a str>,
    /// Provider, region and zone the agent reports.
    pub placement: &'a MemberPlacement,
}

impl std::fmt::Debug for AgentParts<'_> {
    // The key stays out of logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AgentParts")
            .field("cluster", &self.cluster)
            .field("karmada_endpoint", &self.karmada_endpoint)
            .field("image", &self.image)
            .finish_non_exhaustive()
    }
}

/// Name of the agent's kubeconfig context.
pub const AGENT_CONTEXT: &str = "karmada";

/// The kubeconfig the agent reaches the instance with (its client certificate).
pub fn agent_kubeconfig(parts: &AgentParts<'_>) -> String {
    let mut cluster = json!({"server": parts.karmada_endpoint});
    if let Some(ca) = parts.karmada_ca {
        cluster["certificate-authority-data"] = json!(STANDARD.encode(ca));
    }
    let config = json!({
        "apiVersion": "v1", "kind": "Config",
        "clusters": [{"name": "karmada-apiserver", "cluster": cluster}],
        "users": [{"name": agent_user(parts.cluster), "user": {
            "client-certificate-data": STANDARD.encode(parts.client_certificate),
            "client-key-data": STANDARD.encode(parts.client_key),
        }}],
        "contexts": [{"name": AGENT_CONTEXT, "context": {"cluster": "karmada-apiserver", "user": agent_user(parts.cluster)}}],
        "current-context": AGENT_CONTEXT,
    });
    // JSON is YAML; a kubeconfig parser reads either.
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// The objects to apply in a Pull member: namespace, ServiceAccount, the agent's RBAC in the
/// member (karmadactl register's `*` ClusterRole), the kubeconfig Secret and the karmada-agent
/// Deployment as Karmada's `artifacts/agent/karmada-agent.yaml` has it (flags, probe, metrics
/// port, priority class, toleration). Its `--feature-gates` and `--logging-format` are left at
/// the agent's defaults.
pub fn agent_manifests(parts: &AgentParts<'_>) -> Vec<Value> {
    let ns = AGENT_NAMESPACE;
    let labels = json!({"app": "karmada-agent"});
    let mut args = vec![
        "/bin/karmada-agent".to_owned(),
        "--karmada-kubeconfig=/etc/kubeconfig/karmada-kubeconfig".to_owned(),
        format!("--karmada-context={AGENT_CONTEXT}"),
        format!("--cluster-name={}", parts.cluster),
    ];
    if let Some(endpoint) = parts.member_endpoint {
        args.push(format!("--cluster-api-endpoint={endpoint}"));
    }
    for (flag, value) in [
        ("--cluster-provider", &parts.placement.provider),
        ("--cluster-region", &parts.placement.region),
        ("--cluster-zones", &parts.placement.zone),
    ] {
        if let Some(v) = value.as_deref().filter(|v| !v.is_empty()) {
            args.push(format!("{flag}={v}"));
        }
    }
    args.extend([
        format!("--cluster-namespace={CLUSTER_NAMESPACE}"),
        format!("--leader-elect-resource-namespace={ns}"),
        "--cluster-status-update-frequency=10s".to_owned(),
        "--metrics-bind-address=$(POD_IP):8080".to_owned(),
        "--health-probe-bind-address=$(POD_IP):10357".to_owned(),
        "--v=4".to_owned(),
    ]);
    let system = json!({KARMADA_SYSTEM_LABEL: "true"});
    vec![
        json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns, "labels": system}}),
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "karmada-agent-sa", "namespace": ns}}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
               "metadata": {"name": "karmada-agent"}, "rules": member_rules()}),
        json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "karmada-agent"},
               "subjects": [{"kind": "ServiceAccount", "name": "karmada-agent-sa", "namespace": ns}],
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "karmada-agent"}}),
        json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
               "metadata": {"name": "karmada-kubeconfig", "namespace": ns},
               "stringData": {"karmada-kubeconfig": agent_kubeconfig(parts)}}),
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "karmada-agent", "namespace": ns, "labels": labels},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "priorityClassName": "system-node-critical",
                    "serviceAccountName": "karmada-agent-sa",
                    "tolerations": [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}],
                    "containers": [{
                        "name": "karmada-agent",
                        "image": parts.image,
                        "imagePullPolicy": "IfNotPresent",
                        "env": [{"name": "POD_IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}],
                        "command": args,
                        "livenessProbe": {
                            "httpGet": {"path": "/healthz", "port": 10357, "scheme": "HTTP"},
                            "failureThreshold": 3, "initialDelaySeconds": 15,
                            "periodSeconds": 15, "timeoutSeconds": 5,
                        },
                        "ports": [{"containerPort": 8080, "name": "metrics", "protocol": "TCP"}],
                        "volumeMounts": [{"name": "kubeconfig", "mountPath": "/etc/kubeconfig"}],
                    }],
                    "volumes": [{"name": "kubeconfig", "secret": {"secretName": "karmada-kubeconfig"}}],
                },
            },
        }}),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::members::objects::made_by_join;

    /// The RBAC `karmadactl register` creates for cluster `m1` in namespace `karmada-cluster`,
    /// transcribed from karmada-io/karmada `pkg/karmadactl/register/register.go` (commit
    /// f8fdd02df, v1.19.0-rc.0): `GenerateClusterRole`, `GenerateClusterRoleBinding`,
    /// `GenerateSecretAccessRole`, `GenerateSecretAccessRoleBinding`, `GenerateWorkAccessRole`,
    /// `GenerateWorkAccessRoleBinding`, each subject `User system:karmada:agent:m1`.
    fn karmadactl_register_rbac() -> Vec<(&'static str, Option<&'static str>, &'static str, Value)>
    {
        let agent = json!([{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "system:karmada:agent:m1"}]);
        vec![
            (
                "ClusterRole",
                None,
                "system:karmada:m1:agent",
                json!({"rules": [
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "resourceNames": ["m1"], "verbs": ["get", "delete"]},
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters"], "verbs": ["create", "list", "watch"]},
                    {"apiGroups": ["cluster.karmada.io"], "resources": ["clusters/status"], "resourceNames": ["m1"], "verbs": ["update"]},
                    {"apiGroups": ["config.karmada.io"], "resources": ["resourceinterpreterwebhookconfigurations", "resourceinterpretercustomizations"], "verbs": ["get", "list", "watch"]},
                    {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
                    {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["get", "create", "update"]},
                    {"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["get", "create"]},
                    {"apiGroups": [""], "resources": ["services"], "verbs": ["list", "watch"]},
                    {"apiGroups": [""], "resources": ["events"], "verbs": ["patch", "create", "update"]},
                ]}),
            ),
            (
                "ClusterRoleBinding",
                None,
                "system:karmada:m1:agent",
                json!({"subjects": agent,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "system:karmada:m1:agent"}}),
            ),
            (
                "Role",
                Some("karmada-cluster"),
                "system:karmada:m1:agent-secret",
                json!({"rules": [
                    {"verbs": ["get", "patch"], "apiGroups": [""], "resources": ["secrets"], "resourceNames": ["m1", "m1-impersonator"]},
                    {"verbs": ["create"], "apiGroups": [""], "resources": ["secrets"]},
                ]}),
            ),
            (
                "RoleBinding",
                Some("karmada-cluster"),
                "system:karmada:m1:agent-secret",
                json!({"subjects": agent,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "system:karmada:m1:agent-secret"}}),
            ),
            (
                "Role",
                Some("karmada-es-m1"),
                "system:karmada:m1:agent-work",
                json!({"rules": [
                    {"verbs": ["get", "create", "list", "watch", "update", "delete"], "apiGroups": ["work.karmada.io"], "resources": ["works"]},
                    {"verbs": ["patch", "update"], "apiGroups": ["work.karmada.io"], "resources": ["works/status"]},
                ]}),
            ),
            (
                "RoleBinding",
                Some("karmada-es-m1"),
                "system:karmada:m1:agent-work",
                json!({"subjects": agent,
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "system:karmada:m1:agent-work"}}),
            ),
        ]
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
        assert_eq!(
            s.body["data"]["auth-extra-groups"],
            STANDARD.encode("system:bootstrappers:kairship:m1")
        );
    }

    #[test]
    fn the_agent_rbac_is_karmadactl_registers() {
        let planned: Vec<Planned> = agent_rbac("inst", "m1")
            .into_iter()
            .filter(|p| p.resource.kind != "Namespace")
            .collect();
        let want = karmadactl_register_rbac();
        assert_eq!(planned.len(), want.len());
        for (p, (kind, namespace, name, body)) in planned.iter().zip(want) {
            assert_eq!(p.resource.kind, kind);
            assert_eq!(p.namespace.as_deref(), namespace, "{name}");
            assert_eq!(p.name, name);
            assert_eq!(p.body["metadata"]["namespace"].as_str(), namespace);
            assert!(made_by_join(&p.body, "m1"), "{name}");
            for key in ["rules", "subjects", "roleRef"] {
                assert_eq!(p.body.get(key), body.get(key), "{kind} {name}: {key}");
            }
        }
        let ns: Vec<String> = agent_rbac("inst", "m1")
            .into_iter()
            .filter(|p| p.resource.kind == "Namespace")
            .map(|p| {
                assert!(p.shared);
                p.name
            })
            .collect();
        assert_eq!(ns, ["karmada-cluster", "karmada-es-m1"]);
        // Everything is removed again on unjoin.
        let removed: Vec<(String, Option<String>, String)> = registration_objects("m1")
            .into_iter()
            .map(|(r, ns, n)| (r.kind, ns, n))
            .collect();
        for p in planned.iter().chain(&bootstrap_rbac("inst", "m1")) {
            assert!(
                removed.contains(&(p.resource.kind.clone(), p.namespace.clone(), p.name.clone())),
                "{}",
                p.describe()
            );
        }
    }

    #[test]
    fn the_bootstrap_token_may_only_post_and_read_csrs() {
        let objects = bootstrap_rbac("inst", "m1");
        assert_eq!(
            objects[0].body["rules"],
            json!([{"apiGroups": ["certificates.k8s.io"], "resources": ["certificatesigningrequests"], "verbs": ["create", "get"]}])
        );
        assert_eq!(
            objects[1].body["subjects"][0]["name"],
            "system:bootstrappers:kairship:m1"
        );
    }

    #[test]
    fn the_agent_asks_for_its_own_client_certificate() {
        let (key, request) = agent_key_and_request("m1").unwrap();
        assert!(key.contains("PRIVATE KEY"));
        assert!(request.contains("CERTIFICATE REQUEST"));
        let csr = agent_csr("inst", "m1", "m1-abcde", &request);
        assert_eq!(
            csr["spec"]["signerName"],
            "kubernetes.io/kube-apiserver-client"
        );
        assert_eq!(csr["spec"]["expirationSeconds"], 31_536_000);
        assert_eq!(
            csr["spec"]["usages"],
            json!(["digital signature", "key encipherment", "client auth"])
        );
        assert_eq!(
            STANDARD
                .decode(csr["spec"]["request"].as_str().unwrap())
                .unwrap(),
            request.as_bytes()
        );
        let approved = approval(&csr, "alice");
        assert_eq!(approved["status"]["conditions"][0]["type"], "Approved");
        let cases = [
            (json!({}), Ok(None)),
            (
                json!({"status": {"certificate": STANDARD.encode("PEM")}}),
                Ok(Some("PEM".to_owned())),
            ),
            (
                json!({"status": {"conditions": [{"type": "Failed", "status": "True", "message": "bad usage"}]}}),
                Err("the CSR is Failed: bad usage".to_owned()),
            ),
            (
                json!({"status": {"conditions": [{"type": "Denied", "status": "True"}]}}),
                Err("the CSR is Denied: ".to_owned()),
            ),
        ];
        for (csr, want) in cases {
            assert_eq!(issued(&csr), want, "{csr}");
        }
    }

    #[test]
    fn image_tags_are_karmada_releases() {
        for (version, tag) in [
            ("v1.19.0-rc.0-18-gf8fdd02df", "v1.19.0-rc.0"),
            ("v1.2.1-12-g2eb92858", "v1.2.1"),
            ("v1.3.0-alpha.1-12-g2e860210", "v1.3.0-alpha.1"),
            ("v1.19.0", "v1.19.0"),
            ("v1.19.0-rc.0", "v1.19.0-rc.0"),
        ] {
            assert_eq!(release_tag(version), tag, "{version}");
        }
    }

    #[test]
    fn the_bootstrap_kubeconfig_keeps_the_server_and_swaps_the_user() {
        let kubeconfig = json!({
            "clusters": [{"name": "k", "cluster": {"server": "https://k:6443", "certificate-authority-data": "Q0E="}}],
            "users": [{"name": "admin", "user": {"token": "admin-token"}}, {"name": "other", "user": {}}],
            "contexts": [{"name": "c", "context": {"cluster": "k", "user": "admin"}}],
            "current-context": "c",
        });
        let swapped = with_token_user(&kubeconfig, "abcdef.0123456789abcdef");
        assert_eq!(swapped["clusters"], kubeconfig["clusters"]);
        assert_eq!(
            swapped["users"],
            json!([{"name": "admin", "user": {"token": "abcdef.0123456789abcdef"}}])
        );
    }

    #[test]
    fn manifests_run_the_agent_as_karmada_deploys_it() {
        let placement = MemberPlacement {
            region: Some("r1".into()),
            ..Default::default()
        };
        let parts = AgentParts {
            cluster: "m1",
            karmada_endpoint: "https://karmada:5443",
            karmada_ca: Some("CA"),
            client_certificate: "CERT",
            client_key: "KEY",
            image: "docker.io/karmada/karmada-agent:v1.19.0",
            member_endpoint: Some("https://m1:6443"),
            placement: &placement,
        };
        let objects = agent_manifests(&parts);
        let kinds: Vec<&str> = objects.iter().filter_map(|o| o["kind"].as_str()).collect();
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
        let user = &kubeconfig["users"][0];
        assert_eq!(user["name"], "system:karmada:agent:m1");
        assert_eq!(
            user["user"]["client-certificate-data"],
            STANDARD.encode("CERT")
        );
        assert_eq!(user["user"]["client-key-data"], STANDARD.encode("KEY"));
        assert!(user["user"].get("token").is_none());
        let pod = &objects[5]["spec"]["template"]["spec"];
        assert_eq!(pod["priorityClassName"], "system-node-critical");
        assert_eq!(
            pod["tolerations"][0]["key"],
            "node-role.kubernetes.io/master"
        );
        let container = &pod["containers"][0];
        assert_eq!(container["livenessProbe"]["httpGet"]["port"], 10357);
        assert_eq!(container["ports"][0]["containerPort"], 8080);
        let command: Vec<&str> = container["command"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(Value::as_str)
            .collect();
        for flag in [
            "--cluster-name=m1",
            "--cluster-api-endpoint=https://m1:6443",
            "--cluster-region=r1",
            "--karmada-context=karmada",
            "--cluster-namespace=karmada-cluster",
            "--metrics-bind-address=$(POD_IP):8080",
            "--health-probe-bind-address=$(POD_IP):10357",
        ] {
            assert!(command.contains(&flag), "{flag}: {command:?}");
        }
        assert!(!format!("{parts:?}").contains("KEY"));
    }

    #[test]
    fn certificate_expiry_is_read_from_not_after() {
        let key = rcgen::KeyPair::generate().unwrap();
        let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
        params.not_after = rcgen::date_time_ymd(2031, 2, 3);
        let cert = params.self_signed(&key).unwrap();
        assert_eq!(
            not_after(&cert.pem()).as_deref(),
            Some("2031-02-03T00:00:00Z")
        );
        assert_eq!(not_after("garbage"), None);
    }
}
