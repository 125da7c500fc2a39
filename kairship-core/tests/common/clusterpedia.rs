//! An emulation of Clusterpedia (clusterpedia-io/clusterpedia as of April 2026, commit
//! bece343b, PostgreSQL internalstorage, flags from its own `deploy/`) in front of a sandbox host
//! cluster: one HTTP server answers Clusterpedia's aggregated resource API,
//! `/apis/clusterpedia.io/v1beta1/resources/clusters/{cluster}/...`, from its own storage and
//! everything else from the host.
//!
//! What it does as stock Clusterpedia does (read from its source; the options below default to
//! the stock deployment):
//! - **PediaClusters** on the host are validated as clustersynchro-manager does
//!   (`pkg/synchromanager/clustersynchro_manager.go`, `pkg/utils/rest.go`): credentials from
//!   `spec.authenticationFrom` need the alpha gate `ClusterAuthenticationFromSecret` (off by
//!   default, `pkg/kubeapiserver/features/features.go`, and not set in `deploy/`); without it
//!   the status is `Validated=False` / `InvalidConfig` with Clusterpedia's message. Valid ones
//!   are synced and reported `Validated`, `SynchroRunning`, `ClusterHealthy` and `Ready`.
//! - **Syncing**: every resource of `spec.syncResources`, in each version named, or in every
//!   served version when none is (ResourceBindings twice), by list and watch of the member.
//! - **What is stored** (`pruneObject` in
//!   `pkg/synchromanager/clustersynchro/default_resource_synchro.go`): `managedFields` dropped
//!   (beta gate `PruneManagedFields`, on; `deploy/clusterpedia_clustersynchro_manager_deployment.yaml`
//!   sets `--feature-gates=PruneManagedFields=true,PruneLastAppliedConfiguration=true`), the
//!   `kubectl.kubernetes.io/last-applied-configuration` annotation dropped (beta gate
//!   `PruneLastAppliedConfiguration`, on), the annotation `shadow.clusterpedia.io/cluster-name`
//!   added (`utils.InjectClusterName`, `pkg/utils/clustername.go`), and objects are served
//!   through Go's typed structs, which write `spec.template.metadata.creationTimestamp: null`.
//! - **Lists** carry no `resourceVersion`; `labelSelector` filters labels, and its search
//!   label `internalstorage.clusterpedia.io/fuzzy-name=<v>` becomes `name LIKE '%<v>%'`,
//!   unescaped (`pkg/storage/internalstorage/util.go`), so `_` matches any one character;
//!   `orderby` (`name`, `namespace`, `created_at`, `resource_version`, each optionally `desc`),
//!   `limit`, `continue` (an offset) and `withRemainingCount` page.
//! - A change reaches storage after the sync lag ([`PediaOptions::sync_delay`]).
#![allow(dead_code, clippy::unwrap_used)]

use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Request, State};
use axum::response::{IntoResponse, Response};
use futures::StreamExt;
use http::StatusCode;
use kairship_core::models::ObjectCondition;
use kairship_core::models::pedia::{ClusterGroupResources, PediaCluster};
use kairship_core::router::{FUZZY_NAME_LABEL, FieldSelector, labels_match, parse_label_selector};
use kube::api::{Patch, PatchParams};
use kube::core::{ApiResource, DynamicObject};
use kube::runtime::watcher;
use kube::{Api, Client};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;
use tower::ServiceExt;

/// The prefix of Clusterpedia's per-cluster resource API.
pub const PREFIX: &str = "/apis/clusterpedia.io/v1beta1/resources/clusters/";
/// `ShadowAnnotationClusterName`.
pub const SHADOW_ANNOTATION: &str = "shadow.clusterpedia.io/cluster-name";
/// What `PruneLastAppliedConfiguration` drops.
pub const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";
/// The message clustersynchro-manager writes when `authenticationFrom` is used without the gate
/// (`"invalid cluster config: " + err` around `BuildClusterRestConfig`'s error).
pub const GATE_MESSAGE: &str = "invalid cluster config: cluster authentication secret listers is nil, perhaps you need to enable feature gate ClusterAuthenticationFromSecret";

/// Clusterpedia's configuration; [`Default`] is the stock deployment.
#[derive(Clone, Debug)]
pub struct PediaOptions {
    /// `--feature-gates=ClusterAuthenticationFromSecret=true` (alpha, off by default).
    pub authentication_from_secret: bool,
    /// `PruneManagedFields` (beta, on by default and in `deploy/`).
    pub prune_managed_fields: bool,
    /// `PruneLastAppliedConfiguration` (beta, on by default and in `deploy/`).
    pub prune_last_applied: bool,
    /// The namespace Clusterpedia reads authentication Secrets from.
    pub namespace: String,
    /// How long every change takes to reach storage.
    pub sync_delay: Duration,
}

impl Default for PediaOptions {
    fn default() -> Self {
        PediaOptions {
            authentication_from_secret: false,
            prune_managed_fields: true,
            prune_last_applied: true,
            namespace: "clusterpedia-system".into(),
            sync_delay: Duration::ZERO,
        }
    }
}

/// One stored resource: what it is, and its objects by (namespace, name).
#[derive(Default)]
struct StoredResource {
    resource: Option<ApiResource>,
    objects: BTreeMap<(String, String), Value>,
}

/// (cluster, group, version, plural) → stored objects.
type Storage = Arc<Mutex<HashMap<(String, String, String, String), StoredResource>>>;

/// A running emulation; stops when dropped.
pub struct Clusterpedia {
    /// `http://addr`: the host's API and Clusterpedia's.
    pub url: String,
    /// A client of that front, as the host's admin.
    pub client: Client,
    storage: Storage,
    options: Arc<Mutex<PediaOptions>>,
    stop: CancellationToken,
}

impl Drop for Clusterpedia {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

#[derive(Clone)]
struct Front {
    host: kube_sandbox::Cluster,
    storage: Storage,
}

impl Clusterpedia {
    /// Serves `host` with Clusterpedia's API beside it. `members` are the clusters the
    /// PediaClusters' kubeconfigs reach, by PediaCluster name.
    pub async fn start(
        host: &kube_sandbox::Cluster,
        members: HashMap<String, Client>,
        options: PediaOptions,
    ) -> Clusterpedia {
        let storage: Storage = Arc::default();
        let stop = CancellationToken::new();
        let front = Front {
            host: host.clone(),
            storage: storage.clone(),
        };
        let app = axum::Router::new().fallback(serve).with_state(front);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let stopped = stop.clone();
        tokio::spawn(async move {
            axum::serve(listener, app)
                .with_graceful_shutdown(stopped.cancelled_owned())
                .await
        });
        let url = format!("http://{addr}");
        let client = client_of(&url, host.admin_token()).await;
        let options = Arc::new(Mutex::new(options));
        tokio::spawn(manage(
            host.client(),
            members,
            options.clone(),
            storage.clone(),
            stop.clone(),
        ));
        Clusterpedia {
            url,
            client,
            storage,
            options,
            stop,
        }
    }

    /// Restarts Clusterpedia with `--feature-gates=ClusterAuthenticationFromSecret=<on>`.
    pub fn set_authentication_from_secret(&self, on: bool) {
        self.options.lock().unwrap().authentication_from_secret = on;
    }

    /// The names stored for `cluster` and resource `group/version/plural`.
    pub fn stored(&self, cluster: &str, group: &str, version: &str, plural: &str) -> Vec<String> {
        let storage = self.storage.lock().unwrap();
        let key = (cluster.into(), group.into(), version.into(), plural.into());
        storage
            .get(&key)
            .map(|r| r.objects.keys().map(|(_, name)| name.clone()).collect())
            .unwrap_or_default()
    }

    /// The group/version/plural of every resource stored for `cluster`.
    pub fn stored_resources(&self, cluster: &str) -> Vec<String> {
        let storage = self.storage.lock().unwrap();
        let mut out: Vec<String> = storage
            .keys()
            .filter(|(c, ..)| c == cluster)
            .map(|(_, g, v, p)| format!("{g}/{v}/{p}"))
            .collect();
        out.sort();
        out
    }
}

/// A client of `url` with bearer `token`.
pub async fn client_of(url: &str, token: &str) -> Client {
    let yaml = kube_sandbox::serve::kubeconfig_yaml("host", url, None, token);
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(&yaml).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    Client::try_from(config).unwrap()
}

fn condition(type_: &str, ok: bool, reason: &str, message: &str) -> ObjectCondition {
    ObjectCondition {
        type_: type_.into(),
        status: if ok { "True" } else { "False" }.into(),
        reason: Some(reason.into()),
        message: Some(message.into()),
        last_transition_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
            jiff::Timestamp::now(),
        )),
        ..ObjectCondition::default()
    }
}

/// What clustersynchro-manager makes of a PediaCluster: the member to sync, or why not.
async fn validate(
    host: &Client,
    cluster: &PediaCluster,
    members: &HashMap<String, Client>,
    options: &PediaOptions,
) -> Result<Client, String> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let inline = cluster
        .spec
        .kubeconfig
        .as_ref()
        .is_some_and(|k| !k.0.is_empty());
    if !inline {
        let Some(from) = cluster.spec.authentication_from.as_ref() else {
            return Err("invalid cluster config: kubeconfig is empty".into());
        };
        if !options.authentication_from_secret {
            return Err(GATE_MESSAGE.into());
        }
        let Some(source) = from.kubeconfig.as_ref() else {
            return Err(
                "invalid cluster config: Cluster Authentication Error: no kubeconfig".into(),
            );
        };
        let secrets: Api<k8s_openapi::api::core::v1::Secret> =
            Api::namespaced(host.clone(), &options.namespace);
        let secret = secrets.get_opt(&source.name).await.ok().flatten();
        if !secret
            .and_then(|s| s.data)
            .is_some_and(|d| d.contains_key(&source.key))
        {
            return Err(format!(
                "invalid cluster config: Cluster Authentication Error: secret {}/{} has no key {}",
                options.namespace, source.name, source.key
            ));
        }
    }
    members
        .get(&name)
        .cloned()
        .ok_or_else(|| format!("invalid cluster config: no cluster {name} to reach"))
}

/// A running sync of one PediaCluster.
struct Sync {
    spec: Value,
    stop: CancellationToken,
}

/// The PediaCluster controller: validates, syncs, reports, and forgets deleted clusters.
async fn manage(
    host: Client,
    members: HashMap<String, Client>,
    options: Arc<Mutex<PediaOptions>>,
    storage: Storage,
    stop: CancellationToken,
) {
    let api: Api<PediaCluster> = Api::all(host.clone());
    let mut syncs: HashMap<String, Sync> = HashMap::new();
    while !stop.is_cancelled() {
        let options = options.lock().unwrap().clone();
        let clusters = api.list(&Default::default()).await.map(|l| l.items);
        let clusters = clusters.unwrap_or_default();
        let names: Vec<String> = clusters
            .iter()
            .filter_map(|c| c.metadata.name.clone())
            .collect();
        // Deleted PediaClusters: their syncs stop and their objects go.
        for gone in syncs
            .keys()
            .filter(|n| !names.contains(n))
            .cloned()
            .collect::<Vec<_>>()
        {
            if let Some(sync) = syncs.remove(&gone) {
                sync.stop.cancel();
            }
            storage.lock().unwrap().retain(|(c, ..), _| c != &gone);
        }
        for cluster in clusters {
            let name = cluster.metadata.name.clone().unwrap_or_default();
            let spec = json!({
                "syncResources": cluster.spec.sync_resources,
                "authenticationFrom": cluster.spec.authentication_from,
            });
            let conditions = match validate(&host, &cluster, &members, &options).await {
                Err(message) => {
                    if let Some(sync) = syncs.remove(&name) {
                        sync.stop.cancel();
                    }
                    vec![
                        condition("Validated", false, "InvalidConfig", &message),
                        condition("Ready", false, "NotReady", "cluster is not validated"),
                    ]
                }
                Ok(member) => {
                    if syncs.get(&name).is_none_or(|s| s.spec != spec) {
                        if let Some(old) = syncs.remove(&name) {
                            old.stop.cancel();
                        }
                        let sync_stop = stop.child_token();
                        tokio::spawn(sync_cluster(
                            name.clone(),
                            member,
                            cluster.spec.sync_resources.clone(),
                            options.clone(),
                            storage.clone(),
                            sync_stop.clone(),
                        ));
                        syncs.insert(
                            name.clone(),
                            Sync {
                                spec,
                                stop: sync_stop,
                            },
                        );
                    }
                    vec![
                        condition("Validated", true, "Validated", ""),
                        condition(
                            "SynchroRunning",
                            true,
                            "Running",
                            "cluster synchro is running",
                        ),
                        condition(
                            "ClusterHealthy",
                            true,
                            "Healthy",
                            "cluster health responds ok",
                        ),
                        condition("Ready", true, "Ready", "cluster is ready"),
                    ]
                }
            };
            let current = cluster.status.map(|s| s.conditions).unwrap_or_default();
            let same = current.len() == conditions.len()
                && current.iter().zip(&conditions).all(|(a, b)| {
                    (&a.type_, &a.status, &a.reason, &a.message)
                        == (&b.type_, &b.status, &b.reason, &b.message)
                });
            if !same {
                let _ = api
                    .patch_status(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"status": {"conditions": conditions}})),
                    )
                    .await;
            }
        }
        tokio::select! {
            _ = stop.cancelled() => break,
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
    for (_, sync) in syncs {
        sync.stop.cancel();
    }
}

/// Syncs every resource `sync` names from `member` into storage until `stop`.
async fn sync_cluster(
    cluster: String,
    member: Client,
    sync: Vec<ClusterGroupResources>,
    options: PediaOptions,
    storage: Storage,
    stop: CancellationToken,
) {
    let discovery = match kube::Discovery::new(member.clone()).run().await {
        Ok(discovery) => discovery,
        Err(err) => panic!("discovery of {cluster}: {err}"),
    };
    for wanted in &sync {
        let Some(group) = discovery.groups().find(|g| g.name() == wanted.group) else {
            continue;
        };
        let versions: Vec<String> = if wanted.versions.is_empty() {
            group.versions().map(str::to_owned).collect()
        } else {
            wanted.versions.clone()
        };
        for version in versions {
            for (resource, _) in group.versioned_resources(&version) {
                if !wanted
                    .resources
                    .iter()
                    .any(|r| r == "*" || r == &resource.plural)
                {
                    continue;
                }
                tokio::spawn(sync_resource(
                    cluster.clone(),
                    member.clone(),
                    resource,
                    options.clone(),
                    storage.clone(),
                    stop.clone(),
                ));
            }
        }
    }
}

fn key_of(cluster: &str, resource: &ApiResource) -> (String, String, String, String) {
    (
        cluster.into(),
        resource.group.clone(),
        resource.version.clone(),
        resource.plural.clone(),
    )
}

/// What Clusterpedia stores of `object`.
fn stored_form(
    cluster: &str,
    resource: &ApiResource,
    object: &DynamicObject,
    options: &PediaOptions,
) -> Value {
    let mut value = serde_json::to_value(object).unwrap();
    value["apiVersion"] = json!(resource.api_version);
    value["kind"] = json!(resource.kind);
    let metadata = value["metadata"].as_object_mut().unwrap();
    if options.prune_managed_fields {
        metadata.remove("managedFields");
    }
    let mut annotations = metadata
        .remove("annotations")
        .and_then(|a| a.as_object().cloned())
        .unwrap_or_default();
    if options.prune_last_applied {
        annotations.remove(LAST_APPLIED);
    }
    annotations.insert(SHADOW_ANNOTATION.into(), json!(cluster));
    metadata.insert("annotations".into(), Value::Object(annotations));
    if let Some(template) = value
        .pointer_mut("/spec/template/metadata")
        .and_then(Value::as_object_mut)
    {
        template.entry("creationTimestamp").or_insert(Value::Null);
    }
    value
}

fn object_key(object: &DynamicObject) -> (String, String) {
    (
        object.metadata.namespace.clone().unwrap_or_default(),
        object.metadata.name.clone().unwrap_or_default(),
    )
}

/// Lists and watches one resource of a member into storage.
async fn sync_resource(
    cluster: String,
    member: Client,
    resource: ApiResource,
    options: PediaOptions,
    storage: Storage,
    stop: CancellationToken,
) {
    let key = key_of(&cluster, &resource);
    storage
        .lock()
        .unwrap()
        .entry(key.clone())
        .or_default()
        .resource = Some(resource.clone());
    let api: Api<DynamicObject> = Api::all_with(member, &resource);
    let mut events = watcher(api, watcher::Config::default()).boxed();
    let mut initial: BTreeMap<(String, String), Value> = BTreeMap::new();
    loop {
        let event = tokio::select! {
            _ = stop.cancelled() => return,
            event = events.next() => event,
        };
        let Some(Ok(event)) = event else {
            match event {
                None => return,
                Some(_) => continue,
            }
        };
        if !options.sync_delay.is_zero() {
            tokio::time::sleep(options.sync_delay).await;
        }
        let mut storage = storage.lock().unwrap();
        let stored = storage.entry(key.clone()).or_default();
        match event {
            watcher::Event::Init => initial.clear(),
            watcher::Event::InitApply(object) => {
                initial.insert(
                    object_key(&object),
                    stored_form(&cluster, &resource, &object, &options),
                );
            }
            watcher::Event::InitDone => stored.objects = std::mem::take(&mut initial),
            watcher::Event::Apply(object) => {
                stored.objects.insert(
                    object_key(&object),
                    stored_form(&cluster, &resource, &object, &options),
                );
            }
            watcher::Event::Delete(object) => {
                stored.objects.remove(&object_key(&object));
            }
        }
    }
}

fn json_response(code: StatusCode, value: &Value) -> Response {
    (
        code,
        [(http::header::CONTENT_TYPE, "application/json")],
        value.to_string(),
    )
        .into_response()
}

fn status(code: u16, reason: &str, message: &str) -> Response {
    let body = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": message, "reason": reason, "code": code});
    json_response(StatusCode::from_u16(code).unwrap(), &body)
}

/// `%XX` decoded.
fn decode(segment: &str) -> String {
    let bytes = segment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(b) = segment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
            continue;
        }
        out.push(if bytes[i] == b'+' { b' ' } else { bytes[i] });
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn query_pairs(query: Option<&str>) -> HashMap<String, String> {
    query
        .unwrap_or_default()
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| match p.split_once('=') {
            Some((k, v)) => (decode(k), decode(v)),
            None => (decode(p), String::new()),
        })
        .collect()
}

/// SQL `LIKE` (case-sensitive, as PostgreSQL's): `%` any run, `_` any one character.
pub fn sql_like(text: &str, pattern: &str) -> bool {
    let (t, p): (Vec<char>, Vec<char>) = (text.chars().collect(), pattern.chars().collect());
    // matches[i][j]: t[..i] matches p[..j].
    let mut matches = vec![vec![false; p.len() + 1]; t.len() + 1];
    matches[0][0] = true;
    for j in 1..=p.len() {
        matches[0][j] = matches[0][j - 1] && p[j - 1] == '%';
    }
    for i in 1..=t.len() {
        for j in 1..=p.len() {
            matches[i][j] = match p[j - 1] {
                '%' => matches[i][j - 1] || matches[i - 1][j],
                '_' => matches[i - 1][j - 1],
                c => matches[i - 1][j - 1] && t[i - 1] == c,
            };
        }
    }
    matches[t.len()][p.len()]
}

fn text<'a>(item: &'a Value, pointer: &str) -> &'a str {
    item.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn compare_by(key: &str, a: &Value, b: &Value) -> Ordering {
    match key {
        "name" => text(a, "/metadata/name").cmp(text(b, "/metadata/name")),
        "namespace" => text(a, "/metadata/namespace").cmp(text(b, "/metadata/namespace")),
        "created_at" => {
            text(a, "/metadata/creationTimestamp").cmp(text(b, "/metadata/creationTimestamp"))
        }
        "resource_version" => {
            let rv = |v: &Value| {
                text(v, "/metadata/resourceVersion")
                    .parse::<u64>()
                    .unwrap_or(0)
            };
            rv(a).cmp(&rv(b))
        }
        other => panic!("unsupported orderby field {other}"),
    }
}

/// Splits a label selector at top-level commas (not those inside `in (a,b)`).
fn requirements(selector: &str) -> Vec<String> {
    let (mut out, mut current, mut depth) = (Vec::new(), String::new(), 0);
    for c in selector.chars() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth == 0 => {
                out.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    out.push(current);
    out.into_iter()
        .map(|r| r.trim().to_owned())
        .filter(|r| !r.is_empty())
        .collect()
}

/// The parts of a Kubernetes path after the cluster: (group, version, namespace, plural, name).
type Parsed = (String, String, Option<String>, String, Option<String>);

fn parse_path(path: &str) -> Option<Parsed> {
    let segments: Vec<String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(decode)
        .collect();
    let (group, version, rest) = match segments.first().map(String::as_str) {
        Some("api") => (String::new(), segments.get(1)?.clone(), &segments[2..]),
        Some("apis") => (
            segments.get(1)?.clone(),
            segments.get(2)?.clone(),
            segments.get(3..)?,
        ),
        _ => return None,
    };
    let (namespace, rest) = match rest {
        [ns_word, ns, rest @ ..] if ns_word == "namespaces" && !rest.is_empty() => {
            (Some(ns.clone()), rest)
        }
        rest => (None, rest),
    };
    match rest {
        [plural] => Some((group, version, namespace, plural.clone(), None)),
        [plural, name] => Some((
            group,
            version,
            namespace,
            plural.clone(),
            Some(name.clone()),
        )),
        _ => None,
    }
}

async fn serve(State(front): State<Front>, request: Request) -> Response {
    let path = request.uri().path().to_owned();
    let Some(rest) = path.strip_prefix(PREFIX) else {
        return front
            .host
            .router()
            .oneshot(request)
            .await
            .unwrap_or_else(|e| match e {});
    };
    let query = query_pairs(request.uri().query());
    let Some((cluster, kube_path)) = rest.split_once('/') else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let cluster = decode(cluster);
    let Some((group, version, namespace, plural, name)) = parse_path(kube_path) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let storage = front.storage.lock().unwrap();
    if !storage.keys().any(|(c, ..)| c == &cluster) {
        return status(
            404,
            "NotFound",
            &format!("pediaclusters.cluster.clusterpedia.io \"{cluster}\" not found"),
        );
    }
    let Some(stored) = storage.get(&(
        cluster.clone(),
        group.clone(),
        version.clone(),
        plural.clone(),
    )) else {
        return status(
            404,
            "NotFound",
            "the server could not find the requested resource",
        );
    };
    let resource = stored.resource.clone().unwrap();
    let qualified = if group.is_empty() {
        plural.clone()
    } else {
        format!("{plural}.{group}")
    };
    if let Some(name) = name {
        return match stored
            .objects
            .get(&(namespace.clone().unwrap_or_default(), name.clone()))
        {
            Some(object) => json_response(StatusCode::OK, object),
            None => status(
                404,
                "NotFound",
                &format!("{qualified} \"{name}\" not found"),
            ),
        };
    }
    let mut fuzzy = Vec::new();
    let mut labels = Vec::new();
    for requirement in requirements(query.get("labelSelector").map_or("", String::as_str)) {
        match requirement.strip_prefix(&format!("{FUZZY_NAME_LABEL}=")) {
            Some(value) => fuzzy.push(value.to_owned()),
            None => labels.push(requirement),
        }
    }
    let labels = match parse_label_selector(&labels.join(",")) {
        Ok(selector) => selector,
        Err(err) => return status(400, "BadRequest", &err.to_string()),
    };
    let fields = match FieldSelector::parse(query.get("fieldSelector").map_or("", String::as_str)) {
        Ok(fields) => fields,
        Err(err) => return status(400, "BadRequest", &err.to_string()),
    };
    let namespaces: Vec<&str> = query
        .get("namespaces")
        .map(|n| n.split(',').filter(|n| !n.is_empty()).collect())
        .unwrap_or_default();
    let mut items: Vec<Value> = stored
        .objects
        .values()
        .filter(|item| {
            let object: DynamicObject = serde_json::from_value((*item).clone()).unwrap();
            let ns = object.metadata.namespace.as_deref().unwrap_or("");
            let name = object.metadata.name.as_deref().unwrap_or("");
            namespace.as_deref().is_none_or(|want| want == ns)
                && (namespaces.is_empty() || namespaces.contains(&ns))
                && labels_match(&labels, object.metadata.labels.as_ref())
                && fields.matches(&object)
                && fuzzy.iter().all(|f| sql_like(name, &format!("%{f}%")))
        })
        .cloned()
        .collect();
    drop(storage);
    if let Some(orderby) = query.get("orderby") {
        let keys: Vec<(String, bool)> = orderby
            .split(',')
            .map(|k| match k.trim().split_once(' ') {
                Some((key, "desc")) => (key.to_owned(), true),
                _ => (k.trim().to_owned(), false),
            })
            .collect();
        items.sort_by(|a, b| {
            keys.iter().fold(Ordering::Equal, |acc, (key, desc)| {
                acc.then_with(|| {
                    let ord = compare_by(key, a, b);
                    if *desc { ord.reverse() } else { ord }
                })
            })
        });
    }
    let total = items.len() as i64;
    let offset: usize = query.get("continue").map_or(0, |c| c.parse().unwrap_or(0));
    let limit: Option<usize> = query.get("limit").and_then(|l| l.parse().ok());
    let page: Vec<Value> = items
        .into_iter()
        .skip(offset)
        .take(limit.unwrap_or(usize::MAX))
        .collect();
    // No resourceVersion: Clusterpedia's lists carry none.
    let mut metadata = json!({});
    if query.contains_key("withRemainingCount") {
        metadata["remainingItemCount"] = json!(total - offset as i64 - page.len() as i64);
    }
    let list = json!({
        "apiVersion": resource.api_version,
        "kind": format!("{}List", resource.kind),
        "metadata": metadata,
        "items": page,
    });
    json_response(StatusCode::OK, &list)
}
