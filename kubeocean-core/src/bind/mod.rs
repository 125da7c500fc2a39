//! `kubeocean bind` and `kubeocean unbind`: a worker bound in one command, as Liqo's
//! `liqoctl peer` peers two clusters.
//!
//! `bind` installs in the worker what the worker chart installs (its rendered templates,
//! [`WORKER_CHART_MANIFEST`], for the binding's namespaces), with the token Secret of its
//! ServiceAccount; builds a kubeconfig from that token; creates, in the computing cluster,
//! the kubeconfig Secret and the ClusterBinding, and in the worker an optional policy; then
//! waits until the binding is Ready. Every object it creates carries
//! `app.kubernetes.io/managed-by=kubeocean-bind` and the binding's label; an object that
//! exists already is updated only when it is ours and says something else, and left alone
//! when it is not ours. So a second run changes nothing.
//!
//! `unbind` deletes the ClusterBinding and waits until it is gone (the manager drains the
//! worker first), then deletes what `bind` created, newest first, and waits until it is gone.
//!
//! The decisions (which objects, with which names and labels; whether one must be written)
//! are plain functions; [`bind`] and [`unbind`] are the I/O around them.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use base64::Engine;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::{Namespace, Secret, ServiceAccount};
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::api::scheduling::v1::PriorityClass;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{DeleteParams, PostParams};
use kube::{Api, Client, Resource};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::crd::{ClusterBinding, ClusterBindingPhase, ResourceLeasingPolicy};
use crate::labels;
use crate::naming::{is_dns1123_label, is_dns1123_subdomain};
use crate::setup::kubeconfig_secret_name;

/// The worker chart's templates, rendered with its defaults and `tokenSecret.create=true`
/// (release `kubeocean-worker` in namespace `kubeocean-system`, mount namespace
/// `kubeocean-worker`); a chart test keeps it equal to what `helm template` renders.
pub const WORKER_CHART_MANIFEST: &str = include_str!("worker-chart.yaml");
/// `app.kubernetes.io/managed-by` of what `bind` creates.
pub const MANAGED_BY_BIND: &str = "kubeocean-bind";
const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";
/// Release namespace and mount namespace the manifest was rendered for.
const RENDERED_NAMESPACE: &str = "kubeocean-system";
const RENDERED_MOUNT: &str = "kubeocean-worker";
/// The worker chart's token Secret.
const TOKEN_SECRET: &str = "kubeocean-worker-token";

/// What to bind.
#[derive(Clone, Debug)]
pub struct BindSpec {
    /// Name of the ClusterBinding (and of the policy's `spec.cluster`).
    pub binding: String,
    /// `spec.clusterID`.
    pub cluster_id: String,
    /// Namespace of the kubeconfig Secret in the computing cluster and of the ServiceAccount
    /// in the worker (the worker chart's release namespace).
    pub namespace: String,
    /// `spec.mountNamespace`: where mapped objects go in the worker.
    pub mount_namespace: String,
    /// API server URL the computing cluster's pods reach the worker at (default: the
    /// worker kubeconfig's).
    pub worker_server: Option<String>,
    /// A ResourceLeasingPolicy to create in the worker.
    pub policy: Option<ResourceLeasingPolicy>,
    /// How long to wait for the token and for the binding to be Ready (or gone).
    pub timeout: Duration,
}

impl BindSpec {
    /// What is wrong with the names and the policy (empty when nothing).
    pub fn problems(&self) -> Vec<String> {
        let mut problems = Vec::new();
        if !is_dns1123_subdomain(&self.binding) {
            problems.push(format!(
                "binding name {:?} is not a DNS subdomain",
                self.binding
            ));
        }
        if !is_dns1123_label(&self.cluster_id) || self.cluster_id.len() > 24 {
            problems.push(format!(
                "cluster ID {:?} is not a DNS label of at most 24 characters",
                self.cluster_id
            ));
        }
        for (what, ns) in [
            ("namespace", &self.namespace),
            ("mount namespace", &self.mount_namespace),
        ] {
            if !is_dns1123_label(ns) {
                problems.push(format!("{what} {ns:?} is not a namespace name"));
            }
        }
        if let Some(policy) = &self.policy {
            if policy.spec.cluster != self.binding {
                problems.push(format!(
                    "policy {} is for cluster {:?}, not for binding {:?}",
                    policy.metadata.name.as_deref().unwrap_or_default(),
                    policy.spec.cluster,
                    self.binding
                ));
            }
            if let Err(errors) = crate::leasing::validate_policy(policy) {
                problems.extend(errors.into_iter().map(|e| format!("policy: {e}")));
            }
        }
        problems
    }
}

/// Why binding or unbinding stopped.
#[derive(Debug, thiserror::Error)]
pub enum BindError {
    /// The input is wrong (exit code 2).
    #[error("{0}")]
    Invalid(String),
    /// An API call failed.
    #[error("{action} {what} in the {side} cluster: {source}")]
    Api {
        /// `create`, `get`, ...
        action: &'static str,
        /// `Kind namespace/name`.
        what: String,
        /// `worker` or `computing`.
        side: &'static str,
        /// The error.
        source: kube::Error,
    },
    /// A wait ran out.
    #[error("{0}")]
    Timeout(String),
}

/// One thing `bind` or `unbind` did, or found done.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// `worker` or `computing`.
    pub side: &'static str,
    /// `created`, `updated`, `unchanged`, `deleted`, `left` (exists, not ours), `absent`.
    pub outcome: &'static str,
    /// `Kind namespace/name`.
    pub what: String,
}

impl fmt::Display for Step {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:<9} {:<9} {}", self.side, self.outcome, self.what)
    }
}

fn describe(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    match object["metadata"]["namespace"].as_str() {
        Some(ns) => format!("{kind} {ns}/{name}"),
        None => format!("{kind} {name}"),
    }
}

/// Labels `bind` puts on what it creates for `binding`.
pub fn bind_labels(binding: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (MANAGED_BY_LABEL.to_owned(), MANAGED_BY_BIND.to_owned()),
        (labels::CLUSTER_BINDING.to_owned(), binding.to_owned()),
    ])
}

/// Whether `bind` created `object` for `binding`.
pub fn is_ours(object: &Value, binding: &str) -> bool {
    let l = &object["metadata"]["labels"];
    l[MANAGED_BY_LABEL] == MANAGED_BY_BIND && l[labels::CLUSTER_BINDING] == binding
}

fn label(object: &mut Value, binding: &str) {
    let labels = &mut object["metadata"]["labels"];
    if !labels.is_object() {
        *labels = json!({});
    }
    for (k, v) in bind_labels(binding) {
        labels[k] = Value::String(v);
    }
}

/// The worker objects of the chart for `spec`, in the order to create them (namespaces
/// first), labelled as `bind`'s: the release namespace, then the manifest's objects with
/// the namespaces of `spec`.
pub fn worker_objects(spec: &BindSpec) -> Result<Vec<Value>, BindError> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(WORKER_CHART_MANIFEST)
        .map_err(|e| BindError::Invalid(format!("the embedded worker chart: {e}")))?;
    let rename = |ns: &str| match ns {
        RENDERED_NAMESPACE => spec.namespace.clone(),
        RENDERED_MOUNT => spec.mount_namespace.clone(),
        other => other.to_owned(),
    };
    let mut out = vec![json!({
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": spec.namespace},
    })];
    for mut doc in docs.into_iter().filter(|d| d.is_object()) {
        if doc["kind"] == "Namespace"
            && let Some(name) = doc["metadata"]["name"].as_str()
        {
            doc["metadata"]["name"] = Value::String(rename(name));
        }
        if let Some(ns) = doc["metadata"]["namespace"].as_str() {
            doc["metadata"]["namespace"] = Value::String(rename(ns));
        }
        if let Some(subjects) = doc["subjects"].as_array_mut() {
            for subject in subjects {
                if let Some(ns) = subject["namespace"].as_str() {
                    subject["namespace"] = Value::String(rename(ns));
                }
            }
        }
        out.push(doc);
    }
    // The release namespace may be the mount namespace.
    let mut seen = std::collections::BTreeSet::new();
    out.retain(|d| seen.insert(describe(d)));
    for doc in &mut out {
        label(doc, &spec.binding);
    }
    // Namespaces first, then what lives in them, the token Secret after its ServiceAccount.
    out.sort_by_key(|d| match d["kind"].as_str().unwrap_or_default() {
        "Namespace" => 0,
        "ServiceAccount" => 1,
        "Secret" => 2,
        _ => 3,
    });
    Ok(out)
}

/// Whether `existing` lacks something `desired` says (fields other than metadata and status,
/// and the labels): then it is rewritten. Fields the server adds are not differences.
pub fn needs_update(desired: &Value, existing: &Value) -> bool {
    fn covers(existing: &Value, desired: &Value) -> bool {
        match (desired, existing) {
            (Value::Object(d), Value::Object(e)) => d
                .iter()
                .all(|(k, v)| e.get(k).is_some_and(|ev| covers(ev, v)) || v.is_null()),
            (d, e) => d == e,
        }
    }
    let Some(fields) = desired.as_object() else {
        return false;
    };
    fields
        .iter()
        .filter(|(k, _)| !["apiVersion", "kind", "metadata", "status"].contains(&k.as_str()))
        .any(|(k, v)| !covers(&existing[k], v))
        || !covers(
            &existing["metadata"]["labels"],
            &desired["metadata"]["labels"],
        )
}

/// A kubeconfig that reaches `server` as the token's ServiceAccount.
pub fn token_kubeconfig(
    cluster: &str,
    server: &str,
    ca_pem: Option<&[u8]>,
    insecure: bool,
    token: &str,
) -> String {
    let mut cluster_entry = json!({"server": server});
    if let Some(ca) = ca_pem {
        cluster_entry["certificate-authority-data"] =
            Value::String(base64::engine::general_purpose::STANDARD.encode(ca));
    } else if insecure {
        cluster_entry["insecure-skip-tls-verify"] = Value::Bool(true);
    }
    let config = json!({
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": cluster, "cluster": cluster_entry}],
        "users": [{"name": "kubeocean-worker", "user": {"token": token}}],
        "contexts": [{"name": cluster, "context": {"cluster": cluster, "user": "kubeocean-worker"}}],
        "current-context": cluster,
    });
    // JSON is YAML; kubeconfig loaders read either.
    serde_json::to_string_pretty(&config).unwrap_or_default()
}

/// The worker's API server as its kubeconfig names it: (server, CA PEM, insecure).
pub struct WorkerEndpoint {
    /// API server URL.
    pub server: String,
    /// CA that signs its serving certificate.
    pub ca_pem: Option<Vec<u8>>,
    /// `insecure-skip-tls-verify` of the kubeconfig.
    pub insecure: bool,
}

/// The current context's cluster of a worker kubeconfig.
pub fn worker_endpoint(kubeconfig: &kube::config::Kubeconfig) -> Result<WorkerEndpoint, String> {
    let context_name = kubeconfig
        .current_context
        .clone()
        .ok_or("the worker kubeconfig has no current-context")?;
    let context = kubeconfig
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.as_ref())
        .ok_or_else(|| format!("the worker kubeconfig has no context {context_name:?}"))?;
    let cluster = kubeconfig
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.as_ref())
        .ok_or_else(|| format!("the worker kubeconfig has no cluster {:?}", context.cluster))?;
    let server = cluster
        .server
        .clone()
        .ok_or("the worker kubeconfig's cluster has no server")?;
    let ca_pem = match (
        &cluster.certificate_authority_data,
        &cluster.certificate_authority,
    ) {
        (Some(data), _) => Some(
            base64::engine::general_purpose::STANDARD
                .decode(data.trim())
                .map_err(|e| format!("certificate-authority-data is not base64: {e}"))?,
        ),
        (None, Some(path)) => Some(
            std::fs::read(path)
                .map_err(|e| format!("cannot read certificate-authority {path}: {e}"))?,
        ),
        (None, None) => None,
    };
    Ok(WorkerEndpoint {
        server,
        ca_pem,
        insecure: cluster.insecure_skip_tls_verify.unwrap_or(false),
    })
}

fn api_error(
    action: &'static str,
    what: &str,
    side: &'static str,
    source: kube::Error,
) -> BindError {
    BindError::Api {
        action,
        what: what.to_owned(),
        side,
        source,
    }
}

/// Creates `desired` when missing, rewrites it when it is ours and differs, leaves it
/// otherwise.
async fn ensure<K>(
    api: Api<K>,
    desired: &Value,
    binding: &str,
    side: &'static str,
) -> Result<Step, BindError>
where
    K: Resource + Clone + Serialize + DeserializeOwned + fmt::Debug,
{
    let what = describe(desired);
    let name = desired["metadata"]["name"].as_str().unwrap_or_default();
    let step = |outcome| Step {
        side,
        outcome,
        what: what.clone(),
    };
    let object: K = serde_json::from_value(desired.clone())
        .map_err(|e| BindError::Invalid(format!("{what}: {e}")))?;
    let existing = api
        .get_opt(name)
        .await
        .map_err(|e| api_error("get", &what, side, e))?;
    let Some(existing) = existing else {
        return match api.create(&PostParams::default(), &object).await {
            Ok(_) => Ok(step("created")),
            Err(kube::Error::Api(s)) if s.code == 409 => Ok(step("unchanged")),
            Err(e) => Err(api_error("create", &what, side, e)),
        };
    };
    let existing_json = serde_json::to_value(&existing).unwrap_or_default();
    if !is_ours(&existing_json, binding) {
        return Ok(step("left"));
    }
    if !needs_update(desired, &existing_json) {
        return Ok(step("unchanged"));
    }
    let mut update = object;
    update.meta_mut().resource_version = existing.meta().resource_version.clone();
    api.replace(name, &PostParams::default(), &update)
        .await
        .map_err(|e| api_error("update", &what, side, e))?;
    Ok(step("updated"))
}

/// [`ensure`] for one worker object of [`worker_objects`], by kind.
async fn ensure_worker_object(
    worker: &Client,
    doc: &Value,
    binding: &str,
) -> Result<Step, BindError> {
    let ns = doc["metadata"]["namespace"].as_str().unwrap_or_default();
    let c = worker.clone();
    match doc["kind"].as_str().unwrap_or_default() {
        "Namespace" => ensure(Api::<Namespace>::all(c), doc, binding, "worker").await,
        "ServiceAccount" => {
            ensure(
                Api::<ServiceAccount>::namespaced(c, ns),
                doc,
                binding,
                "worker",
            )
            .await
        }
        "Secret" => ensure(Api::<Secret>::namespaced(c, ns), doc, binding, "worker").await,
        "ClusterRole" => ensure(Api::<ClusterRole>::all(c), doc, binding, "worker").await,
        "ClusterRoleBinding" => {
            ensure(Api::<ClusterRoleBinding>::all(c), doc, binding, "worker").await
        }
        "Role" => ensure(Api::<Role>::namespaced(c, ns), doc, binding, "worker").await,
        "RoleBinding" => {
            ensure(
                Api::<RoleBinding>::namespaced(c, ns),
                doc,
                binding,
                "worker",
            )
            .await
        }
        "PriorityClass" => ensure(Api::<PriorityClass>::all(c), doc, binding, "worker").await,
        "CustomResourceDefinition" => {
            ensure(
                Api::<CustomResourceDefinition>::all(c),
                doc,
                binding,
                "worker",
            )
            .await
        }
        "ResourceLeasingPolicy" => {
            ensure(Api::<ResourceLeasingPolicy>::all(c), doc, binding, "worker").await
        }
        other => Err(BindError::Invalid(format!(
            "the worker chart renders a {other}, which bind does not install"
        ))),
    }
}

/// Deletes `doc` when it is ours; reports what it found.
async fn delete_worker_object(
    worker: &Client,
    doc: &Value,
    binding: &str,
    side: &'static str,
) -> Result<Step, BindError> {
    async fn delete<K>(
        api: Api<K>,
        name: &str,
        binding: &str,
        what: &str,
        side: &'static str,
    ) -> Result<&'static str, BindError>
    where
        K: Resource + Clone + Serialize + DeserializeOwned + fmt::Debug,
    {
        // A resource no longer served (its CRD removed by an earlier step) is a plain
        // `404 page not found`, not a NotFound Status: absent all the same.
        let existing = match api.get(name).await {
            Ok(existing) => existing,
            Err(kube::Error::Api(s)) if s.code == 404 => return Ok("absent"),
            Err(e) => return Err(api_error("get", what, side, e)),
        };
        if !is_ours(
            &serde_json::to_value(&existing).unwrap_or_default(),
            binding,
        ) {
            return Ok("left");
        }
        match api.delete(name, &DeleteParams::default()).await {
            Ok(_) => Ok("deleted"),
            Err(kube::Error::Api(s)) if s.code == 404 => Ok("absent"),
            Err(e) => Err(api_error("delete", what, side, e)),
        }
    }
    let what = describe(doc);
    let name = doc["metadata"]["name"].as_str().unwrap_or_default();
    let ns = doc["metadata"]["namespace"].as_str().unwrap_or_default();
    let c = worker.clone();
    let outcome = match doc["kind"].as_str().unwrap_or_default() {
        "Namespace" => delete(Api::<Namespace>::all(c), name, binding, &what, side).await?,
        "ServiceAccount" => {
            delete(
                Api::<ServiceAccount>::namespaced(c, ns),
                name,
                binding,
                &what,
                side,
            )
            .await?
        }
        "Secret" => delete(Api::<Secret>::namespaced(c, ns), name, binding, &what, side).await?,
        "ClusterRole" => delete(Api::<ClusterRole>::all(c), name, binding, &what, side).await?,
        "ClusterRoleBinding" => {
            delete(
                Api::<ClusterRoleBinding>::all(c),
                name,
                binding,
                &what,
                side,
            )
            .await?
        }
        "Role" => delete(Api::<Role>::namespaced(c, ns), name, binding, &what, side).await?,
        "RoleBinding" => {
            delete(
                Api::<RoleBinding>::namespaced(c, ns),
                name,
                binding,
                &what,
                side,
            )
            .await?
        }
        "PriorityClass" => delete(Api::<PriorityClass>::all(c), name, binding, &what, side).await?,
        "CustomResourceDefinition" => {
            delete(
                Api::<CustomResourceDefinition>::all(c),
                name,
                binding,
                &what,
                side,
            )
            .await?
        }
        "ResourceLeasingPolicy" => {
            delete(
                Api::<ResourceLeasingPolicy>::all(c),
                name,
                binding,
                &what,
                side,
            )
            .await?
        }
        _ => "left",
    };
    Ok(Step {
        side,
        outcome,
        what,
    })
}

/// The ResourceLeasingPolicy CRD the worker needs, labelled as `bind`'s.
fn policy_crd(binding: &str) -> Value {
    let crd = crate::crd::crds()
        .into_iter()
        .find(|c| c.spec.names.kind == "ResourceLeasingPolicy");
    let mut value = serde_json::to_value(crd).unwrap_or_default();
    value["apiVersion"] = json!("apiextensions.k8s.io/v1");
    value["kind"] = json!("CustomResourceDefinition");
    label(&mut value, binding);
    value
}

fn policy_object(spec: &BindSpec) -> Option<Value> {
    let mut value = serde_json::to_value(spec.policy.as_ref()?).ok()?;
    value["apiVersion"] = json!(format!("{}/v1beta1", crate::crd::GROUP));
    value["kind"] = json!("ResourceLeasingPolicy");
    if let Some(meta) = value["metadata"].as_object_mut() {
        meta.retain(|k, _| k == "name" || k == "labels" || k == "annotations");
    }
    label(&mut value, &spec.binding);
    Some(value)
}

async fn poll<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> Result<T, BindError>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<Option<T>, BindError>>,
{
    let deadline = tokio::time::Instant::now() + timeout;
    loop {
        if let Some(value) = check().await? {
            return Ok(value);
        }
        if tokio::time::Instant::now() >= deadline {
            return Err(BindError::Timeout(format!(
                "{what}: not within {}s",
                timeout.as_secs()
            )));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Binds the worker `worker` (reached with its kubeconfig, described by `endpoint`) to the
/// computing cluster `computing`; `report` hears each step as it is done.
pub async fn bind(
    computing: &Client,
    worker: &Client,
    endpoint: &WorkerEndpoint,
    spec: &BindSpec,
    report: &mut dyn FnMut(&Step),
) -> Result<(), BindError> {
    let problems = spec.problems();
    if !problems.is_empty() {
        return Err(BindError::Invalid(problems.join("; ")));
    }
    let binding = spec.binding.as_str();
    let mut objects = vec![policy_crd(binding)];
    objects.extend(worker_objects(spec)?);
    for doc in &objects {
        let step = ensure_worker_object(worker, doc, binding).await?;
        report(&step);
    }
    // The token controller fills the chart's token Secret.
    let secrets: Api<Secret> = Api::namespaced(worker.clone(), &spec.namespace);
    let (token, secret_ca) = poll(
        &format!("the token of Secret {}/{TOKEN_SECRET}", spec.namespace),
        spec.timeout,
        || async {
            let secret = secrets
                .get_opt(TOKEN_SECRET)
                .await
                .map_err(|e| api_error("get", "Secret with the token", "worker", e))?;
            let data = secret.and_then(|s| s.data).unwrap_or_default();
            let token = data
                .get("token")
                .map(|t| String::from_utf8_lossy(&t.0).into_owned())
                .filter(|t| !t.is_empty());
            Ok(token.map(|t| (t, data.get("ca.crt").map(|c| c.0.clone()))))
        },
    )
    .await?;
    let server = spec
        .worker_server
        .clone()
        .unwrap_or_else(|| endpoint.server.clone());
    let ca = endpoint.ca_pem.clone().or(secret_ca);
    let kubeconfig = token_kubeconfig(binding, &server, ca.as_deref(), endpoint.insecure, &token);

    let namespace = json!({"apiVersion": "v1", "kind": "Namespace",
        "metadata": {"name": spec.namespace, "labels": bind_labels(binding)}});
    report(
        &ensure(
            Api::<Namespace>::all(computing.clone()),
            &namespace,
            binding,
            "computing",
        )
        .await?,
    );
    let secret_name = kubeconfig_secret_name(binding);
    let secret = json!({"apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": secret_name, "namespace": spec.namespace, "labels": bind_labels(binding)},
        "type": "Opaque",
        "data": {"kubeconfig": ByteString(kubeconfig.into_bytes())}});
    report(
        &ensure(
            Api::<Secret>::namespaced(computing.clone(), &spec.namespace),
            &secret,
            binding,
            "computing",
        )
        .await?,
    );
    let cluster_binding = json!({
        "apiVersion": format!("{}/v1beta1", crate::crd::GROUP),
        "kind": "ClusterBinding",
        "metadata": {"name": binding, "labels": bind_labels(binding)},
        "spec": {
            "clusterID": spec.cluster_id,
            "mountNamespace": spec.mount_namespace,
            "secretRef": {"name": secret_name, "namespace": spec.namespace},
        },
    });
    let bindings: Api<ClusterBinding> = Api::all(computing.clone());
    report(&ensure(bindings.clone(), &cluster_binding, binding, "computing").await?);
    if let Some(policy) = policy_object(spec) {
        report(&ensure_worker_object(worker, &policy, binding).await?);
    }
    let last = std::cell::RefCell::new(String::new());
    let waited = poll(
        &format!("ClusterBinding {binding} Ready"),
        spec.timeout,
        || {
            let last = &last;
            let bindings = bindings.clone();
            async move {
                let b = bindings
                    .get_opt(binding)
                    .await
                    .map_err(|e| api_error("get", "ClusterBinding", "computing", e))?;
                let status = b.and_then(|b| b.status).unwrap_or_default();
                *last.borrow_mut() = status
                    .conditions
                    .iter()
                    .find(|c| c.type_ == crate::crd::cluster_binding_condition::READY)
                    .map(|c| format!("{}: {}", c.reason, c.message))
                    .unwrap_or_default();
                Ok((status.phase == Some(ClusterBindingPhase::Ready)).then_some(()))
            }
        },
    )
    .await;
    let last = last.into_inner();
    match waited {
        Ok(()) => {
            report(&Step {
                side: "computing",
                outcome: "ready",
                what: format!("ClusterBinding {binding}"),
            });
            Ok(())
        }
        Err(BindError::Timeout(what)) if !last.is_empty() => {
            Err(BindError::Timeout(format!("{what} (Ready: {last})")))
        }
        Err(e) => Err(e),
    }
}

/// Undoes [`bind`]: the ClusterBinding (waiting until the manager has drained the worker
/// and it is gone), the kubeconfig Secret, then the worker objects `bind` created, and waits
/// until the worker's namespaces it created are gone.
pub async fn unbind(
    computing: &Client,
    worker: &Client,
    spec: &BindSpec,
    report: &mut dyn FnMut(&Step),
) -> Result<(), BindError> {
    let binding = spec.binding.as_str();
    let bindings: Api<ClusterBinding> = Api::all(computing.clone());
    match bindings.delete(binding, &DeleteParams::default()).await {
        Ok(_) => {
            poll(
                &format!("ClusterBinding {binding} gone"),
                spec.timeout,
                || async {
                    let gone = bindings
                        .get_opt(binding)
                        .await
                        .map_err(|e| api_error("get", "ClusterBinding", "computing", e))?
                        .is_none();
                    Ok(gone.then_some(()))
                },
            )
            .await?;
            report(&Step {
                side: "computing",
                outcome: "deleted",
                what: format!("ClusterBinding {binding}"),
            });
        }
        Err(kube::Error::Api(s)) if s.code == 404 => report(&Step {
            side: "computing",
            outcome: "absent",
            what: format!("ClusterBinding {binding}"),
        }),
        Err(e) => {
            return Err(api_error(
                "delete",
                &format!("ClusterBinding {binding}"),
                "computing",
                e,
            ));
        }
    }
    let secret = json!({"kind": "Secret",
        "metadata": {"name": kubeconfig_secret_name(binding), "namespace": spec.namespace}});
    report(&delete_worker_object(computing, &secret, binding, "computing").await?);
    let namespace = json!({"kind": "Namespace", "metadata": {"name": spec.namespace}});
    report(&delete_worker_object(computing, &namespace, binding, "computing").await?);

    let mut objects = vec![policy_crd(binding)];
    objects.extend(worker_objects(spec)?);
    objects.extend(policy_object(spec));
    let mut namespaces = Vec::new();
    for doc in objects.iter().rev() {
        let step = delete_worker_object(worker, doc, binding, "worker").await?;
        if doc["kind"] == "Namespace" && step.outcome == "deleted" {
            namespaces.push(
                doc["metadata"]["name"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            );
        }
        report(&step);
    }
    let api: Api<Namespace> = Api::all(worker.clone());
    for ns in namespaces {
        poll(
            &format!("worker namespace {ns} gone"),
            spec.timeout,
            || async {
                let gone = api
                    .get_opt(&ns)
                    .await
                    .map_err(|e| api_error("get", "Namespace", "worker", e))?
                    .is_none();
                Ok(gone.then_some(()))
            },
        )
        .await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> BindSpec {
        BindSpec {
            binding: "worker-1".to_owned(),
            cluster_id: "w1".to_owned(),
            namespace: "ops".to_owned(),
            mount_namespace: "borrowed".to_owned(),
            worker_server: None,
            policy: None,
            timeout: Duration::from_secs(1),
        }
    }

    #[test]
    fn worker_objects_follow_the_namespaces_and_are_labelled() {
        let objects = worker_objects(&spec()).unwrap();
        let names: Vec<String> = objects.iter().map(describe).collect();
        for want in [
            "Namespace ops",
            "Namespace borrowed",
            "ServiceAccount ops/kubeocean-worker",
            "Secret ops/kubeocean-worker-token",
            "ClusterRole kubeocean-worker",
            "ClusterRoleBinding kubeocean-worker",
            "Role borrowed/kubeocean-worker",
            "RoleBinding borrowed/kubeocean-worker",
            "PriorityClass kubeocean-default",
        ] {
            assert!(names.iter().any(|n| n == want), "{want} in {names:?}");
        }
        assert_eq!(names.len(), 9, "{names:?}");
        assert!(names[0].starts_with("Namespace") && names[1].starts_with("Namespace"));
        assert!(objects.iter().all(|o| is_ours(o, "worker-1")));
        assert!(!objects.iter().any(|o| is_ours(o, "worker-2")));
        let binding = objects
            .iter()
            .find(|o| o["kind"] == "ClusterRoleBinding")
            .unwrap();
        assert_eq!(binding["subjects"][0]["namespace"], "ops");
        // One namespace when the mount namespace is the release namespace.
        let mut same = spec();
        same.mount_namespace = "ops".to_owned();
        let namespaces = worker_objects(&same)
            .unwrap()
            .into_iter()
            .filter(|o| o["kind"] == "Namespace")
            .count();
        assert_eq!(namespaces, 1);
    }

    #[test]
    fn needs_update_table() {
        let desired = json!({"kind": "Role", "metadata": {"labels": {"a": "1"}},
            "rules": [{"verbs": ["get"]}]});
        for (existing, want) in [
            (
                json!({"metadata": {"labels": {"a": "1", "b": "2"}, "uid": "u"},
                "rules": [{"verbs": ["get"]}]}),
                false,
            ),
            (
                json!({"metadata": {"labels": {"a": "1"}}, "rules": [{"verbs": ["list"]}]}),
                true,
            ),
            (json!({"metadata": {}, "rules": [{"verbs": ["get"]}]}), true),
            (json!({"metadata": {"labels": {"a": "1"}}}), true),
        ] {
            assert_eq!(needs_update(&desired, &existing), want, "{existing}");
        }
        // Server-filled fields (a token Secret's data) are not differences.
        let secret = json!({"type": "kubernetes.io/service-account-token", "metadata": {}});
        let filled = json!({"type": "kubernetes.io/service-account-token",
            "data": {"token": "x"}, "metadata": {}});
        assert!(!needs_update(&secret, &filled));
    }

    #[test]
    fn bad_specs_are_named() {
        let mut s = spec();
        s.binding = "Bad_Name".to_owned();
        s.cluster_id = "a-cluster-id-far-too-long-for-us".to_owned();
        s.mount_namespace = "x.y".to_owned();
        let problems = s.problems().join("; ");
        for want in ["binding name", "cluster ID", "mount namespace"] {
            assert!(problems.contains(want), "{problems}");
        }
        assert!(spec().problems().is_empty());
    }

    #[test]
    fn the_kubeconfig_carries_the_token_and_ca() {
        let text = token_kubeconfig("w", "https://10.0.0.1:6443", Some(b"PEM"), false, "tok");
        let parsed: kube::config::Kubeconfig = serde_json::from_str(&text).unwrap();
        let endpoint = worker_endpoint(&parsed).unwrap();
        assert_eq!(endpoint.server, "https://10.0.0.1:6443");
        assert_eq!(endpoint.ca_pem.as_deref(), Some(&b"PEM"[..]));
        assert!(text.contains("\"token\": \"tok\""));
    }
}
