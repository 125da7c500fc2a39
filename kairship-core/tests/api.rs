//! The Kairship API over real HTTP: a sandbox host cluster with Instances, a sandbox Karmada
//! instance, the service behind the REST router and the native proxy, and callers with
//! different rights.

#![allow(clippy::unwrap_used)]

#[path = "common/api.rs"]
mod api_fixture;
mod common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use api_fixture::{ApiEnv, P};
use async_trait::async_trait;
use common::{KAIRSHIP_NS, KarmadaInstance, ensure_namespace, install_karmada_crds};
use http::StatusCode;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding};
use kairship_core::access::{
    AccessError, Authenticator, Authorizer, Caller, InstanceResource, Verb,
};
use kairship_core::api::tls;
use kairship_core::auth::{ReviewCacheConfig, SubjectAccessReviewAuthorizer};
use kairship_core::grpc::{self, convert as grpc_convert, pb};
use kairship_core::instance::Instance;
use kairship_core::rbac::{
    InstanceRole, SubjectKind, cluster_role_binding, instance_cluster_roles,
};
use kairship_core::rest;
use kairship_core::rest::openapi::{check_structure, path_templates};
use kairship_core::router::{
    FallbackReason, InstanceWriter, ResourceTarget, RouterConfig, RouterError, WriteBackend,
    WriteOutcome,
};
use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject, GroupVersionKind};
use kube::{Api, Client};
use kube_sandbox::{FaultAction, FaultRule};
use serde_json::{Value, json};

const INSTANCE: &str = "inst-1";
const NS: &str = "team-a";
const ADMIN: &str = "admin-token";
const VIEWER: &str = "viewer-token";
const EDITOR: &str = "editor-token";
const NOBODY: &str = "nobody-token";

/// Bearer tokens -> callers.
struct Tokens;

#[async_trait]
impl Authenticator for Tokens {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        let user = match token {
            ADMIN => "admin",
            VIEWER => "viewer",
            EDITOR => "editor",
            NOBODY => "nobody",
            _ => return Err(AccessError::Unauthenticated("unknown token".into())),
        };
        Ok(Caller::new(user, vec![]))
    }
}

/// One authorization check: verb, resource and instance.
type Check = (Verb, InstanceResource, Option<String>);

/// admin: everything; viewer: get/list/watch on inst-1 only; nobody: nothing. Every check
/// made is recorded, to see which check each call makes.
#[derive(Default)]
struct Rights {
    checks: Mutex<Vec<Check>>,
}

impl Rights {
    fn take(&self) -> Vec<Check> {
        std::mem::take(&mut *self.checks.lock().unwrap())
    }
}

#[async_trait]
impl Authorizer for Rights {
    async fn allowed(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
    ) -> Result<bool, AccessError> {
        self.checks
            .lock()
            .unwrap()
            .push((verb, resource, instance.map(str::to_owned)));
        Ok(match caller.user.as_str() {
            "admin" => true,
            "viewer" => instance == Some(INSTANCE) && !verb.is_write(),
            _ => false,
        })
    }
}

/// Who decides access in a test environment.
enum Access {
    /// [`Rights`], recording the checks.
    Fixed,
    /// SubjectAccessReviews judged by the host's RBAC, with Kairship's per-instance roles:
    /// `editor` holds `edit` on inst-1, `viewer` holds `view`, `admin` is bound to
    /// `cluster-admin`-like rights on everything.
    HostRbac,
}

/// Counts the writes that reach the instance through the router.
struct CountingWrite {
    inner: InstanceWriter,
    writes: Arc<AtomicUsize>,
}

#[async_trait]
impl WriteBackend for CountingWrite {
    async fn create(
        &self,
        t: &ResourceTarget,
        b: &Value,
        p: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.create(t, b, p).await
    }
    async fn replace(
        &self,
        t: &ResourceTarget,
        n: &str,
        b: &Value,
        p: &PostParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.replace(t, n, b, p).await
    }
    async fn patch(
        &self,
        t: &ResourceTarget,
        n: &str,
        p: &Patch<Value>,
        pp: &PatchParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.patch(t, n, p, pp).await
    }
    async fn delete(
        &self,
        t: &ResourceTarget,
        n: &str,
        p: &DeleteParams,
    ) -> Result<WriteOutcome, RouterError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        self.inner.delete(t, n, p).await
    }
}

/// The shared API fixture, with the writes that reached the instance and the checks made.
struct Env {
    api: ApiEnv,
    writes: Arc<AtomicUsize>,
    rights: Arc<Rights>,
}

impl std::ops::Deref for Env {
    type Target = ApiEnv;
    fn deref(&self) -> &ApiEnv {
        &self.api
    }
}

impl Env {
    async fn start() -> Env {
        Self::start_with(None, Access::Fixed).await
    }

    async fn start_with(tls: Option<rustls::ServerConfig>, access: Access) -> Env {
        kube_kit::client::install_crypto_provider();
        let host = common::host().await;
        let instance = KarmadaInstance::start(INSTANCE).await;
        install_karmada_crds(
            &instance.client(),
            &[
                "work.karmada.io_resourcebindings.yaml",
                "work.karmada.io_clusterresourcebindings.yaml",
            ],
        )
        .await;
        ensure_namespace(&instance.client(), NS).await;
        let rights = Arc::new(Rights::default());
        let authorizer: Arc<dyn Authorizer> = match access {
            Access::Fixed => rights.clone(),
            Access::HostRbac => {
                grant_instance_roles(&host.client()).await;
                Arc::new(SubjectAccessReviewAuthorizer::with_config(
                    host.client(),
                    ReviewCacheConfig::disabled(),
                ))
            }
        };
        let writes = Arc::new(AtomicUsize::new(0));
        let counter = writes.clone();
        let api = ApiEnv::builder(INSTANCE)
            .host(host)
            .instance(instance)
            .callers(Arc::new(Tokens), authorizer)
            .user_agent("kairship-api-test")
            .router(RouterConfig {
                read_your_writes_timeout: Duration::from_secs(2),
            })
            .wrap_writer(move |inner| {
                Arc::new(CountingWrite {
                    inner,
                    writes: counter,
                })
            })
            .with_proxy()
            .tls(tls)
            .start()
            .await;
        Env {
            api,
            writes,
            rights,
        }
    }

    async fn call(
        &self,
        method: &str,
        path: &str,
        token: Option<&str>,
        body: Option<Value>,
    ) -> (StatusCode, Value) {
        let mut req = self
            .http
            .request(method.parse().unwrap(), format!("{}{path}", self.base));
        if let Some(token) = token {
            req = req.bearer_auth(token);
        }
        if let Some(body) = body {
            req = req.json(&body);
        }
        let resp = req.send().await.unwrap();
        let status = resp.status();
        let text = resp.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, value) = self.call(method, path, Some(ADMIN), body).await;
        assert_eq!(status, StatusCode::OK, "{method} {path}: {value}");
        value
    }

    fn writes(&self) -> usize {
        self.writes.load(Ordering::SeqCst)
    }
}

/// Host RBAC as Kairship sets it up: the per-instance ClusterRoles of inst-1 (exactly as the
/// instance-registry controller writes them), `editor` bound to `edit`, `viewer` to `view`,
/// and `admin` allowed everything on `kairship.io`.
async fn grant_instance_roles(host: &Client) {
    let roles: Api<ClusterRole> = Api::all(host.clone());
    let bindings: Api<ClusterRoleBinding> = Api::all(host.clone());
    for role in instance_cluster_roles(INSTANCE) {
        roles.create(&PostParams::default(), &role).await.unwrap();
    }
    for (role, user) in [
        (InstanceRole::Edit, "editor"),
        (InstanceRole::View, "viewer"),
    ] {
        let binding = cluster_role_binding(INSTANCE, role, SubjectKind::User, user);
        bindings
            .create(&PostParams::default(), &binding)
            .await
            .unwrap();
    }
    let all: ClusterRole = serde_json::from_value(json!({
        "metadata": {"name": "kairship-all"},
        "rules": [{"apiGroups": ["kairship.io"], "resources": ["*"], "verbs": ["*"]}],
    }))
    .unwrap();
    roles.create(&PostParams::default(), &all).await.unwrap();
    let admin: ClusterRoleBinding = serde_json::from_value(json!({
        "metadata": {"name": "kairship-all-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kairship-all"},
        "subjects": [{"kind": "User", "name": "admin", "apiGroup": "rbac.authorization.k8s.io"}],
    }))
    .unwrap();
    bindings
        .create(&PostParams::default(), &admin)
        .await
        .unwrap();
}

fn names(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

fn names_outside_kube_system(list: &Value) -> Vec<String> {
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["metadata"]["namespace"] != "kube-system")
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

/// `(status, code)` of an error answer, checking that it is `{code, message}` JSON.
fn error_of(status: StatusCode, body: &Value) -> (u16, i64) {
    assert!(
        body["message"].as_str().is_some_and(|m| !m.is_empty()),
        "{status}: {body}"
    );
    (status.as_u16(), body["code"].as_i64().unwrap())
}

fn deployment(name: &str) -> Value {
    json!({"metadata": {"name": name}, "spec": {
        "replicas": 2,
        "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}},
                     "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
}

#[tokio::test]
async fn instances_crud_sorting_and_visibility() {
    let env = Env::start().await;
    // A second instance whose credentials are not published: its members cannot be counted,
    // so it is deleted only when forced; the viewer cannot see it.
    let created = env.ok("POST", &format!("{P}/instances"), Some(json!({"metadata": {"name": "inst-2", "labels": {"env": "dev"}},
        "spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": KAIRSHIP_NS, "name": "missing"}}}))).await;
    assert_eq!(created["kind"], "Instance");
    assert_eq!(created["apiVersion"], "kairship.io/v1alpha1");

    let all = env.ok("GET", &format!("{P}/instances"), None).await;
    assert_eq!(names(&all), ["inst-1", "inst-2"]);
    assert_eq!(
        all["pagination"],
        json!({"total": 2, "page": 1, "pageSize": 10000, "pages": 1})
    );
    let desc = env
        .ok(
            "GET",
            &format!("{P}/instances?sortBy=name&sortDir=desc&pageSize=1"),
            None,
        )
        .await;
    assert_eq!(names(&desc), ["inst-2"]);
    assert_eq!(desc["pagination"]["pages"], 2);
    let by_state = env
        .ok("GET", &format!("{P}/instances?sortBy=state"), None)
        .await;
    assert_eq!(names(&by_state).len(), 2);
    assert_eq!(
        names(
            &env.ok("GET", &format!("{P}/instances?name=ST-2"), None)
                .await
        ),
        ["inst-2"]
    );
    assert_eq!(
        names(
            &env.ok(
                "GET",
                &format!("{P}/instances?labelSelector=env%3Ddev"),
                None
            )
            .await
        ),
        ["inst-2"]
    );

    let (status, viewer) = env
        .call("GET", &format!("{P}/instances"), Some(VIEWER), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(names(&viewer), ["inst-1"]);
    let (status, nobody) = env
        .call("GET", &format!("{P}/instances"), Some(NOBODY), None)
        .await;
    assert_eq!(status, StatusCode::OK);
    assert_eq!(nobody["items"], json!([]));
    assert_eq!(nobody["pagination"]["total"], 0);
    let (status, body) = env
        .call("GET", &format!("{P}/instances/inst-1"), Some(NOBODY), None)
        .await;
    assert_eq!(error_of(status, &body), (403, 7));
    let (status, body) = env
        .call("GET", &format!("{P}/instances/inst-2"), Some(VIEWER), None)
        .await;
    assert_eq!(error_of(status, &body), (403, 7));
    assert_eq!(
        env.call("GET", &format!("{P}/instances/inst-1"), Some(VIEWER), None)
            .await
            .0,
        StatusCode::OK
    );

    // Conflicts and validation.
    let (status, body) = env.call("POST", &format!("{P}/instances"), Some(ADMIN), Some(json!({"metadata": {"name": "inst-2"},
        "spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": KAIRSHIP_NS, "name": "x"}}}))).await;
    assert_eq!(error_of(status, &body), (409, 6));
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances"),
            Some(ADMIN),
            Some(json!({"metadata": {"name": "inst-3"}, "spec": {"mode": "Adopt"}})),
        )
        .await;
    assert_eq!(error_of(status, &body), (400, 3));
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("kubeconfigSecretRef"),
        "{body}"
    );

    let mut current = env.ok("GET", &format!("{P}/instances/inst-2"), None).await;
    current["spec"]["alias"] = json!("Development");
    let updated = env
        .ok(
            "PUT",
            &format!("{P}/instances/inst-2"),
            Some(current.clone()),
        )
        .await;
    assert_eq!(updated["spec"]["alias"], "Development");
    current["spec"]["alias"] = json!("stale");
    let (status, body) = env
        .call(
            "PUT",
            &format!("{P}/instances/inst-2"),
            Some(ADMIN),
            Some(current),
        )
        .await;
    assert_eq!(
        error_of(status, &body),
        (412, 9),
        "a stale resourceVersion fails the precondition"
    );

    // Deleting an instance with members is refused; without members it goes.
    env.instance
        .add_member(&common::Member::new(
            "east",
            true,
            (1, 1),
            "4",
            "8Gi",
            "110",
        ))
        .await;
    let (status, body) = env
        .call(
            "DELETE",
            &format!("{P}/instances/inst-1"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (400, 9));
    assert!(body["message"].as_str().unwrap().contains("east"), "{body}");
    let (status, body) = env
        .call(
            "DELETE",
            &format!("{P}/instances/inst-2"),
            Some(VIEWER),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (403, 7));
    let (status, body) = env
        .call(
            "DELETE",
            &format!("{P}/instances/inst-2"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (400, 9));
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("cannot be reached"),
        "{body}"
    );
    env.ok("DELETE", &format!("{P}/instances/inst-2?force=true"), None)
        .await;
    let (status, body) = env
        .call("GET", &format!("{P}/instances/inst-2"), Some(ADMIN), None)
        .await;
    assert_eq!(error_of(status, &body), (404, 5));
    assert!(
        Api::<Instance>::all(env.host.client())
            .get_opt(INSTANCE)
            .await
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn every_resource_family_round_trips() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    let pp_yaml = "apiVersion: policy.karmada.io/v1alpha1\nkind: PropagationPolicy\nmetadata:\n  name: obj\nspec:\n  resourceSelectors:\n  - apiVersion: apps/v1\n    kind: Deployment\n";
    let namespaced: Vec<(&str, Value)> = vec![
        ("deployments", deployment("obj")),
        (
            "services",
            json!({"metadata": {"name": "obj"}, "spec": {"ports": [{"port": 80}]}}),
        ),
        (
            "configmaps",
            json!({"metadata": {"name": "obj"}, "data": {"k": "v"}}),
        ),
        (
            "secrets",
            json!({"metadata": {"name": "obj"}, "type": "Opaque", "stringData": {"k": "v"}}),
        ),
        (
            "jobs",
            json!({"metadata": {"name": "obj"}, "spec": {"template": {"spec": {"restartPolicy": "Never",
            "containers": [{"name": "c", "image": "busybox"}]}}}}),
        ),
        (
            "cronjobs",
            json!({"metadata": {"name": "obj"}, "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {
            "template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}}}),
        ),
        ("propagationpolicies", json!({"data": pp_yaml})),
        (
            "overridepolicies",
            json!({"metadata": {"name": "obj"}, "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]}}),
        ),
    ];
    for (kind, body) in namespaced {
        let created = env
            .ok("POST", &format!("{ns_path}/{kind}"), Some(body))
            .await;
        assert_eq!(created["metadata"]["namespace"], NS, "{kind}");
        let mut got = env.ok("GET", &format!("{ns_path}/{kind}/obj"), None).await;
        assert_eq!(got["metadata"]["uid"], created["metadata"]["uid"], "{kind}");
        assert_eq!(
            names(&env.ok("GET", &format!("{ns_path}/{kind}"), None).await),
            ["obj"],
            "{kind}"
        );
        // Instance-wide, beside what the API server itself publishes in kube-system (the
        // `extension-apiserver-authentication` ConfigMap, as kube-apiserver does).
        assert_eq!(
            names_outside_kube_system(
                &env.ok("GET", &format!("{P}/instances/{INSTANCE}/{kind}"), None)
                    .await
            ),
            ["obj"],
            "{kind}: instance-wide"
        );
        got["metadata"]["labels"] = json!({"touched": "yes"});
        let updated = env
            .ok("PUT", &format!("{ns_path}/{kind}/obj"), Some(got))
            .await;
        assert_eq!(updated["metadata"]["labels"]["touched"], "yes", "{kind}");
        let selected = env
            .ok(
                "GET",
                &format!("{ns_path}/{kind}?labelSelector=touched%3Dyes"),
                None,
            )
            .await;
        assert_eq!(names(&selected), ["obj"], "{kind}");
        env.ok("DELETE", &format!("{ns_path}/{kind}/obj"), None)
            .await;
        let (status, body) = env
            .call("GET", &format!("{ns_path}/{kind}/obj"), Some(ADMIN), None)
            .await;
        assert_eq!(error_of(status, &body), (404, 5), "{kind}");
    }
    for kind in ["clusterpropagationpolicies", "clusteroverridepolicies"] {
        let base = format!("{P}/instances/{INSTANCE}/{kind}");
        let body = json!({"metadata": {"name": "global"}, "spec": {"resourceSelectors": [{"apiVersion": "v1", "kind": "ConfigMap"}]}});
        env.ok("POST", &base, Some(body)).await;
        let mut got = env.ok("GET", &format!("{base}/global"), None).await;
        assert!(got["metadata"].get("namespace").is_none());
        assert_eq!(names(&env.ok("GET", &base, None).await), ["global"]);
        got["metadata"]["labels"] = json!({"touched": "yes"});
        let updated = env.ok("PUT", &format!("{base}/global"), Some(got)).await;
        assert_eq!(updated["metadata"]["labels"]["touched"], "yes", "{kind}");
        env.ok("DELETE", &format!("{base}/global"), None).await;
        assert_eq!(
            env.call("GET", &format!("{base}/global"), Some(ADMIN), None)
                .await
                .0,
            StatusCode::NOT_FOUND
        );
        // Cluster-scoped kinds have no namespace, namespaced ones need one.
        let (status, body) = env
            .call(
                "GET",
                &format!("{ns_path}/{kind}/global"),
                Some(ADMIN),
                None,
            )
            .await;
        assert_eq!(error_of(status, &body), (400, 3));
    }
    let (status, body) = env
        .call(
            "GET",
            &format!("{P}/instances/{INSTANCE}/deployments/obj"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (400, 3));

    // Member clusters: join, list with selectors, update, remove.
    let clusters = format!("{P}/instances/{INSTANCE}/clusters");
    for (name, region) in [("east", "eu"), ("west", "us")] {
        env.ok("POST", &clusters, Some(json!({"metadata": {"name": name, "labels": {"region": region}}, "spec": {"syncMode": "Push"}}))).await;
    }
    assert_eq!(
        names(&env.ok("GET", &clusters, None).await),
        ["east", "west"]
    );
    assert_eq!(
        names(
            &env.ok(
                "GET",
                &format!("{clusters}?labelSelector=region%3Dus"),
                None
            )
            .await
        ),
        ["west"]
    );
    assert_eq!(
        names(
            &env.ok(
                "GET",
                &format!("{clusters}?fieldSelector=metadata.name%3Deast"),
                None
            )
            .await
        ),
        ["east"]
    );
    let mut east = env.ok("GET", &format!("{clusters}/east"), None).await;
    east["spec"]["region"] = json!("eu-west-1");
    assert_eq!(
        env.ok("PUT", &format!("{clusters}/east"), Some(east)).await["spec"]["region"],
        "eu-west-1"
    );
    env.ok("DELETE", &format!("{clusters}/east"), None).await;
    assert_eq!(names(&env.ok("GET", &clusters, None).await), ["west"]);
}

#[tokio::test]
async fn deployment_verbs_and_the_workload_view() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    env.ok(
        "POST",
        &format!("{ns_path}/deployments"),
        Some(deployment("web")),
    )
    .await;
    env.ok(
        "POST",
        &format!("{ns_path}/deployments"),
        Some(deployment("db")),
    )
    .await;

    let paused = env
        .ok("POST", &format!("{ns_path}/deployments/web:pause"), None)
        .await;
    assert_eq!(paused["spec"]["paused"], true);
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/deployments/web:restart"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(
        error_of(status, &body),
        (400, 9),
        "a paused deployment is not restarted"
    );
    let resumed = env
        .ok("POST", &format!("{ns_path}/deployments/web:resume"), None)
        .await;
    assert_eq!(resumed["spec"]["paused"], false);
    let restarted = env
        .ok("POST", &format!("{ns_path}/deployments/web:restart"), None)
        .await;
    let stamp = restarted["spec"]["template"]["metadata"]["annotations"]["kubectl.kubernetes.io/restartedAt"].as_str().unwrap();
    assert!(stamp.parse::<jiff::Timestamp>().is_ok(), "{stamp}");
    for (path, code) in [("web:scale", 404), ("web", 404)] {
        assert_eq!(
            env.call(
                "POST",
                &format!("{ns_path}/deployments/{path}"),
                Some(ADMIN),
                None
            )
            .await
            .0
            .as_u16(),
            code,
            "{path}"
        );
    }
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/configmaps/x:pause"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (404, 5));
    let (status, body) = env
        .call(
            "POST",
            &format!("{ns_path}/deployments/web:pause"),
            Some(VIEWER),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (403, 7));

    // Karmada's binding of web: two members, one of them lagging.
    let bindings: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &kairship_core::api::resource_bindings_resource(),
    );
    let binding: DynamicObject = serde_json::from_value(json!({
        "apiVersion": "work.karmada.io/v1alpha2", "kind": "ResourceBinding",
        "metadata": {"name": "web-deployment", "namespace": NS,
            "annotations": {"propagationpolicy.karmada.io/name": "spread", "propagationpolicy.karmada.io/namespace": NS}},
        "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": NS},
                 "clusters": [{"name": "east", "replicas": 1}, {"name": "west", "replicas": 1}]}
    })).unwrap();
    let mut created = bindings
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
    created.data["status"] = json!({"aggregatedStatus": [
        {"clusterName": "east", "applied": true, "health": "Healthy", "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}},
        {"clusterName": "west", "applied": true, "health": "Unhealthy", "status": {"replicas": 1, "readyReplicas": 0, "availableReplicas": 0}}]});
    bindings
        .replace_status("web-deployment", &PostParams::default(), &created)
        .await
        .unwrap();

    // Read-your-writes does not cover writes made behind the API's back: wait for the cache.
    let web = common::eventually(
        "the workload view to show the binding",
        Duration::from_secs(10),
        || async {
            let w = env
                .ok("GET", &format!("{ns_path}/workloads/web"), None)
                .await;
            (w["clusters"].as_array().unwrap().len() == 2).then_some(w)
        },
    )
    .await;
    assert_eq!(web["binding"], "web-deployment");
    assert_eq!(web["policy"], format!("{NS}/spread"));
    assert_eq!(
        (web["replicas"].as_i64(), web["readyReplicas"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(web["clusters"][1]["health"], "Unhealthy");
    let list = env
        .ok("GET", &format!("{ns_path}/workloads?sortDir=desc"), None)
        .await;
    let listed: Vec<&str> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["name"].as_str().unwrap())
        .collect();
    assert_eq!(listed, ["web", "db"]);
    assert_eq!(
        list["items"][1]["clusters"],
        json!([]),
        "db is not propagated"
    );
    assert_eq!(list["pagination"]["total"], 2);
    let (status, body) = env
        .call(
            "GET",
            &format!("{ns_path}/workloads/nope"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (404, 5));
}

#[tokio::test]
async fn propagation_policies_in_use_are_kept() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    let selectors = json!({"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment"}]});
    env.ok(
        "POST",
        &format!("{ns_path}/propagationpolicies"),
        Some(json!({"metadata": {"name": "spread",
        "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-1"}}, "spec": selectors})),
    )
    .await;
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/clusterpropagationpolicies"),
        Some(json!({"metadata": {"name": "global"}, "spec": selectors})),
    )
    .await;

    let rb: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &kairship_core::api::resource_bindings_resource(),
    );
    let crb: Api<DynamicObject> = Api::all_with(
        env.instance.client(),
        &kairship_core::api::cluster_resource_bindings_resource(),
    );
    let binding = |kind: &str, ns: Option<&str>, meta: Value| -> DynamicObject {
        let mut metadata = meta;
        if let Some(ns) = ns {
            metadata["namespace"] = json!(ns);
        }
        serde_json::from_value(
            json!({"apiVersion": "work.karmada.io/v1alpha2", "kind": kind, "metadata": metadata,
            "spec": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}}}),
        )
        .unwrap()
    };
    rb.create(&PostParams::default(), &binding("ResourceBinding", Some(NS),
        json!({"name": "web-deployment", "labels": {"propagationpolicy.karmada.io/permanent-id": "pp-1"}}))).await.unwrap();
    crb.create(&PostParams::default(), &binding("ClusterResourceBinding", None,
        json!({"name": "ns-binding", "annotations": {"clusterpropagationpolicy.karmada.io/name": "global"}}))).await.unwrap();

    let cases = [
        (
            format!("{ns_path}/propagationpolicies/spread"),
            "ResourceBinding team-a/web-deployment",
        ),
        (
            format!("{P}/instances/{INSTANCE}/clusterpropagationpolicies/global"),
            "ClusterResourceBinding ns-binding",
        ),
    ];
    for (path, user) in &cases {
        let deleted = common::eventually(
            "the cache to see the binding",
            Duration::from_secs(10),
            || async {
                let (status, body) = env.call("DELETE", path, Some(ADMIN), None).await;
                assert_ne!(status, StatusCode::OK, "{path} was deleted while in use");
                (status == StatusCode::BAD_REQUEST).then_some(body)
            },
        )
        .await;
        assert_eq!(deleted["code"], 9);
        assert!(
            deleted["message"].as_str().unwrap().contains(user),
            "{deleted}"
        );
    }
    rb.delete("web-deployment", &DeleteParams::default())
        .await
        .unwrap();
    crb.delete("ns-binding", &DeleteParams::default())
        .await
        .unwrap();
    for (path, _) in &cases {
        common::eventually(
            "the policy to be deletable",
            Duration::from_secs(10),
            || async {
                let (status, _) = env.call("DELETE", path, Some(ADMIN), None).await;
                (status == StatusCode::OK).then_some(())
            },
        )
        .await;
        assert_eq!(
            env.call("GET", path, Some(ADMIN), None).await.0,
            StatusCode::NOT_FOUND
        );
    }
}

#[tokio::test]
async fn refused_writes_never_reach_the_instance() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    env.ok(
        "POST",
        &format!("{ns_path}/configmaps"),
        Some(json!({"metadata": {"name": "seed"}})),
    )
    .await;
    let before = env.writes();
    assert_eq!(before, 1);
    let attempts: Vec<(&str, String, Option<Value>)> = vec![
        (
            "POST",
            format!("{ns_path}/configmaps"),
            Some(json!({"metadata": {"name": "viewer-made"}})),
        ),
        (
            "PUT",
            format!("{ns_path}/configmaps/seed"),
            Some(json!({"metadata": {"name": "seed"}, "data": {"x": "y"}})),
        ),
        ("DELETE", format!("{ns_path}/configmaps/seed"), None),
        (
            "POST",
            format!("{P}/instances/{INSTANCE}/clusters"),
            Some(json!({"metadata": {"name": "m"}})),
        ),
        ("DELETE", format!("{P}/instances/{INSTANCE}"), None),
        (
            "POST",
            format!("{P}/instances"),
            Some(json!({"metadata": {"name": "x"}, "spec": {"mode": "Adopt"}})),
        ),
    ];
    for token in [VIEWER, NOBODY] {
        for (method, path, body) in &attempts {
            let (status, answer) = env.call(method, path, Some(token), body.clone()).await;
            assert_eq!(
                error_of(status, &answer),
                (403, 7),
                "{token} {method} {path}"
            );
        }
    }
    // The viewer reads; nobody does not.
    assert_eq!(
        names(
            &env.call("GET", &format!("{ns_path}/configmaps"), Some(VIEWER), None)
                .await
                .1
        ),
        ["seed"]
    );
    let (status, body) = env
        .call("GET", &format!("{ns_path}/configmaps"), Some(NOBODY), None)
        .await;
    assert_eq!(error_of(status, &body), (403, 7));
    assert_eq!(env.writes(), before, "no refused write was forwarded");
    let on_instance: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        ),
    );
    assert!(on_instance.get_opt("viewer-made").await.unwrap().is_none());
    assert!(
        on_instance
            .get("seed")
            .await
            .unwrap()
            .data
            .get("data")
            .is_none()
    );
    assert_eq!(
        Api::<Instance>::all(env.host.client())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );

    // Without credentials: 401 before anything else.
    for token in [None, Some("forged")] {
        let (status, body) = env
            .call("GET", &format!("{P}/instances"), token, None)
            .await;
        assert_eq!(error_of(status, &body), (401, 16), "{token:?}");
    }
    let resp = env
        .http
        .get(format!("{}{P}/instances", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.headers()["www-authenticate"], "Bearer");
}

#[tokio::test]
async fn create_then_list_always_shows_the_new_object() {
    let env = Env::start().await;
    let path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps");
    let mut expected = BTreeSet::new();
    for i in 0..25 {
        let name = format!("cm-{i:02}");
        env.ok("POST", &path, Some(json!({"metadata": {"name": name}})))
            .await;
        expected.insert(name.clone());
        let listed: BTreeSet<String> = names(&env.ok("GET", &path, None).await)
            .into_iter()
            .collect();
        assert_eq!(listed, expected, "list right after creating {name}");
        assert_eq!(
            env.ok("GET", &format!("{path}/{name}"), None).await["metadata"]["name"],
            name.as_str()
        );
    }
    let m = env.router.metrics().snapshot();
    assert!(m.cache_hits > 0, "the cache answered reads: {m:?}");
}

#[tokio::test]
async fn reads_fall_back_to_the_instance_while_the_cache_watch_fails() {
    let env = Env::start().await;
    let path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps");
    env.instance.cluster.faults().add(FaultRule {
        resource: Some("configmaps".into()),
        verbs: vec!["watch".into()],
        action: FaultAction::Status(500),
    });
    env.ok("POST", &path, Some(json!({"metadata": {"name": "before"}})))
        .await;
    assert_eq!(names(&env.ok("GET", &path, None).await), ["before"]);
    // Once the cache's watch has failed, it is unsynced and every read goes direct.
    let before_fallbacks = common::eventually(
        "the cache to report its watch failing",
        Duration::from_secs(10),
        || async {
            let m0 = env
                .router
                .metrics()
                .snapshot()
                .fallbacks_for(FallbackReason::Unsynced);
            env.ok("GET", &path, None).await;
            let m1 = env
                .router
                .metrics()
                .snapshot()
                .fallbacks_for(FallbackReason::Unsynced);
            (m1 > m0).then_some(m1)
        },
    )
    .await;
    // A write made directly on the instance: the failing cache cannot see it, the fallback can.
    let direct: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        ),
    );
    direct
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "behind"}})).unwrap(),
        )
        .await
        .unwrap();
    let listed = env.ok("GET", &path, None).await;
    assert_eq!(names(&listed), ["before", "behind"]);
    // Read direct, items carry their type as the cache's do.
    for item in listed["items"].as_array().unwrap() {
        assert_eq!(
            (&item["apiVersion"], &item["kind"]),
            (&json!("v1"), &json!("ConfigMap"))
        );
    }
    assert_eq!(
        env.ok("GET", &format!("{path}/behind"), None).await["metadata"]["name"],
        "behind"
    );
    assert!(
        env.router
            .metrics()
            .snapshot()
            .fallbacks_for(FallbackReason::Unsynced)
            >= before_fallbacks + 2
    );
}

#[tokio::test]
async fn bad_input_gets_400_with_a_readable_message() {
    let env = Env::start().await;
    let cms = format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps");
    let send_raw = |method: &str, path: String, body: Vec<u8>| {
        env.http
            .request(method.parse().unwrap(), format!("{}{path}", env.base))
            .bearer_auth(ADMIN)
            .header("content-type", "application/json")
            .body(body)
            .send()
    };
    let cases: Vec<(&str, String, Vec<u8>, &str)> = vec![
        (
            "POST",
            cms.clone(),
            b"{\"metadata\": {".to_vec(),
            "malformed JSON body",
        ),
        ("POST", cms.clone(), b"".to_vec(), "body is empty"),
        (
            "POST",
            cms.clone(),
            b"[1]".to_vec(),
            "must be a JSON object",
        ),
        (
            "POST",
            cms.clone(),
            br#"{"metadata": {"name": "a"}, "spek": {}}"#.to_vec(),
            r#"unknown field "spek""#,
        ),
        (
            "POST",
            cms.clone(),
            br#"{"metadata": {"name": "a", "namespace": "other"}}"#.to_vec(),
            "metadata.namespace",
        ),
        (
            "POST",
            cms.clone(),
            br#"{"kind": "Secret", "metadata": {"name": "a"}}"#.to_vec(),
            "kind",
        ),
        (
            "POST",
            format!("{P}/instances/{INSTANCE}/kubeconfig"),
            br#"{"serverr": "x"}"#.to_vec(),
            "unknown field `serverr`",
        ),
        (
            "POST",
            cms.clone(),
            vec![b' '; 5 * 1024 * 1024],
            "larger than 4 MiB",
        ),
        ("GET", format!("{cms}?page=0"), vec![], "page"),
        ("GET", format!("{cms}?pageSize=0"), vec![], "pageSize"),
        ("GET", format!("{cms}?pageSize=10001"), vec![], "pageSize"),
        (
            "GET",
            format!("{cms}?page=abc"),
            vec![],
            "invalid query parameters",
        ),
        (
            "GET",
            format!("{cms}?colour=blue"),
            vec![],
            "unknown field `colour`",
        ),
        ("GET", format!("{cms}?sortBy=state"), vec![], "sortBy"),
        (
            "GET",
            format!("{cms}?labelSelector=a%20in%20("),
            vec![],
            "labelSelector",
        ),
        ("GET", format!("{P}/instances?page=0"), vec![], "page"),
        (
            "POST",
            format!("{cms}?fieldValidation=Loose"),
            br#"{"metadata": {"name": "a"}}"#.to_vec(),
            "fieldValidation",
        ),
        ("GET", format!("{P}/instances/Bad_Name"), vec![], "instance"),
    ];
    for (method, path, body, want) in cases {
        let resp = send_raw(method, path.clone(), body).await.unwrap();
        let status = resp.status();
        let answer: Value = resp.json().await.unwrap();
        assert_eq!(
            error_of(status, &answer),
            (400, 3),
            "{method} {path}: {answer}"
        );
        assert!(
            answer["message"].as_str().unwrap().contains(want),
            "{method} {path}: {answer}"
        );
    }
    for (method, path, status) in [
        ("GET", format!("{P}/instances/{INSTANCE}/pods"), 404),
        ("GET", "/nowhere".to_owned(), 404),
        ("PATCH", format!("{P}/instances"), 405),
    ] {
        let (got, body) = env.call(method, &path, Some(ADMIN), None).await;
        assert_eq!(got.as_u16(), status, "{method} {path}: {body}");
        assert!(body["message"].as_str().is_some(), "{body}");
    }
    assert_eq!(env.writes(), 0, "nothing malformed was forwarded");

    // An object the instance's API server finds invalid (422): its causes come back as the
    // field violations of a BadRequest, beside the server's message.
    let mut invalid = deployment("negative");
    invalid["spec"]["replicas"] = json!(-1);
    let (status, answer) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/deployments"),
            Some(ADMIN),
            Some(invalid),
        )
        .await;
    assert_eq!(error_of(status, &answer), (400, 3), "{answer}");
    assert!(
        answer["message"].as_str().unwrap().contains("is invalid"),
        "{answer}"
    );
    let violations = &answer["details"][0]["fieldViolations"];
    assert_eq!(violations[0]["field"], "spec.replicas", "{answer}");
    assert!(
        violations[0]["description"]
            .as_str()
            .unwrap()
            .contains("greater than or equal to 0"),
        "{answer}"
    );
}

/// Fills a documented path's parameters with values that address existing objects.
fn fill(path: &str, kind: &str) -> String {
    let mut out = path.to_owned();
    for name in path_templates(path) {
        let value = match name {
            "instance" => INSTANCE,
            "namespace" => NS,
            "kind" => kind,
            "cluster" => "east",
            "path" => "api/v1/namespaces",
            "group" => "core",
            "version" => "v1",
            "resource" => "configmaps",
            _ => "obj",
        };
        out = out.replace(&format!("{{{name}}}"), value);
    }
    out
}

#[tokio::test]
async fn the_spec_describes_every_route_and_validates() {
    let env = Env::start().await;
    let resp = env
        .http
        .get(format!("{}/openapi.json", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK, "the spec needs no token");
    let spec: Value = resp.json().await.unwrap();
    assert_eq!(check_structure(&spec), Vec::<String>::new());
    assert!(spec["openapi"].as_str().unwrap().starts_with("3.1."));
    assert_eq!(spec, serde_json::to_value(rest::openapi()).unwrap());

    // Every registered route is documented, and every documented operation is served.
    let mut documented = BTreeSet::new();
    for (path, item) in spec["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.to_ascii_uppercase(), path.clone()));
        }
    }
    let mut registered = BTreeSet::new();
    for route in rest::routes() {
        for path in route.documented_as {
            registered.insert((route.method.clone(), path));
        }
    }
    let proxy: BTreeSet<_> = documented
        .iter()
        .filter(|(_, p)| p == rest::PROXY_PATH)
        .cloned()
        .collect();
    assert_eq!(proxy.len(), 5);
    assert_eq!(registered, documented.difference(&proxy).cloned().collect());

    let cluster_kinds = ["clusterpropagationpolicies", "clusteroverridepolicies"];
    for (method, path) in &documented {
        let kind = if path.ends_with("/{kind}/{name}") && !path.contains("/namespaces/") {
            cluster_kinds[0]
        } else {
            "configmaps"
        };
        let url = fill(path, kind);
        let body =
            matches!(method.as_str(), "POST" | "PUT").then(|| json!({"metadata": {"name": "obj"}}));
        let (status, answer) = env.call(method, &url, Some(ADMIN), body).await;
        // Our own 405 is `{code, message}`; the instance's (through the proxy) is a `kind: Status`.
        let unrouted = (status == StatusCode::METHOD_NOT_ALLOWED && answer["kind"] != "Status")
            || answer["message"]
                .as_str()
                .is_some_and(|m| m.starts_with("no route for"));
        assert!(
            !unrouted,
            "{method} {path} ({url}) is documented but not served: {status} {answer}"
        );
    }

    let ui = env
        .http
        .get(format!("{}/swagger-ui/", env.base))
        .send()
        .await
        .unwrap();
    assert_eq!(ui.status(), StatusCode::OK);
    assert!(
        ui.text().await.unwrap().contains("swagger"),
        "Swagger UI is served offline"
    );
}

#[tokio::test]
async fn kubeconfigs_reach_the_instance_through_the_proxy_as_the_caller() {
    let env = Env::start().await;
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps"),
        Some(json!({"metadata": {"name": "shared"}})),
    )
    .await;
    let (status, answer) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/kubeconfig"),
            Some(VIEWER),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    let server = format!("{}{P}/instances/{INSTANCE}/proxy", env.base);
    assert_eq!(
        answer["server"],
        server.as_str(),
        "the request's own URL is used"
    );
    let yaml = answer["kubeconfig"].as_str().unwrap();
    let raw: Value = serde_saphyr::from_str(yaml).unwrap();
    assert_eq!(
        raw["users"][0]["user"]["token"], VIEWER,
        "the caller's own token"
    );

    let explicit = env
        .ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/kubeconfig"),
            Some(json!({"server": "https://k.example.com"})),
        )
        .await;
    assert_eq!(
        explicit["server"],
        format!("https://k.example.com{P}/instances/{INSTANCE}/proxy").as_str()
    );
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/kubeconfig"),
            Some(NOBODY),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (403, 7));
    let (status, body) = env
        .call(
            "POST",
            &format!("{P}/instances/nope/kubeconfig"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(error_of(status, &body), (404, 5));

    // kube-rs works unchanged through the issued kubeconfig, as the viewer.
    let config = kube::Config::from_custom_kubeconfig(
        kube::config::Kubeconfig::from_yaml(yaml).unwrap(),
        &Default::default(),
    )
    .await
    .unwrap();
    let client = Client::try_from(config).unwrap();
    let cms: Api<DynamicObject> = Api::namespaced_with(
        client,
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("", "v1", "ConfigMap"),
            "configmaps",
        ),
    );
    let listed: Vec<String> = cms
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|c| c.metadata.name)
        .collect();
    assert_eq!(listed, ["shared"]);
    let refused = cms
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": "x"}})).unwrap(),
        )
        .await;
    assert!(
        matches!(refused, Err(kube::Error::Api(s)) if s.code == 403),
        "the viewer cannot write through the proxy"
    );
}

#[tokio::test]
async fn one_port_speaks_h2c_and_tls_with_h2() {
    let env = Env::start().await;
    let h2c = reqwest::Client::builder()
        .http2_prior_knowledge()
        .build()
        .unwrap();
    let resp = h2c
        .get(format!("{}{P}/instances", env.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.version(), http::Version::HTTP_2);
    assert_eq!(names(&resp.json().await.unwrap()), [INSTANCE]);
    drop(env);

    let dev = tls::generate_dev_certificate(&["127.0.0.1".into(), "localhost".into()]).unwrap();
    let config = tls::server_config(dev.cert_pem.as_bytes(), dev.key_pem.as_bytes()).unwrap();
    let env = Env::start_with(Some(config), Access::Fixed).await;
    assert!(env.base.starts_with("https://"));
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(dev.cert_pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    let resp = client
        .get(format!("{}{P}/instances", env.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert_eq!(resp.version(), http::Version::HTTP_2, "ALPN picked h2");
    let kubeconfig = client
        .post(format!("{}{P}/instances/{INSTANCE}/kubeconfig", env.base))
        .bearer_auth(ADMIN)
        .send()
        .await
        .unwrap();
    let server = kubeconfig.json::<Value>().await.unwrap()["server"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(server.starts_with("https://"), "{server}");
}

// ---- gRPC -----------------------------------------------------------------------------------

type GrpcClient = pb::kairship_service_client::KairshipServiceClient<
    tonic::service::interceptor::InterceptedService<tonic::transport::Channel, BearerMetadata>,
>;

/// Adds `authorization: Bearer <token>` to every call (none for `None`).
#[derive(Clone)]
struct BearerMetadata(Option<&'static str>);

impl tonic::service::Interceptor for BearerMetadata {
    fn call(&mut self, mut req: tonic::Request<()>) -> Result<tonic::Request<()>, tonic::Status> {
        if let Some(token) = self.0 {
            req.metadata_mut()
                .insert("authorization", format!("Bearer {token}").parse().unwrap());
        }
        Ok(req)
    }
}

impl Env {
    async fn channel(&self) -> tonic::transport::Channel {
        tonic::transport::Endpoint::from_shared(self.base.clone())
            .unwrap()
            .connect()
            .await
            .unwrap()
    }

    async fn grpc(&self, token: Option<&'static str>) -> GrpcClient {
        pb::kairship_service_client::KairshipServiceClient::with_interceptor(
            self.channel().await,
            BearerMetadata(token),
        )
    }
}

/// The REST error body and the gRPC status of the same failing call agree.
fn assert_same_error(rest: (StatusCode, Value), grpc: tonic::Status, what: &str) {
    let (status, body) = rest;
    let code = error_of(status, &body).1;
    assert_eq!(grpc.code() as i64, code, "{what}: {body} vs {grpc:?}");
    assert_eq!(
        grpc.message(),
        body["message"].as_str().unwrap(),
        "{what}: messages differ"
    );
    assert_eq!(
        status.as_u16(),
        grpc_convert::api_error(&grpc).http_status(),
        "{what}"
    );
}

fn options(page_size: Option<u32>, label_selector: Option<&str>) -> Option<pb::ListOptions> {
    Some(pb::ListOptions {
        page_size,
        label_selector: label_selector.map(str::to_owned),
        sort_dir: pb::SortDir::Desc as i32,
        ..Default::default()
    })
}

#[tokio::test]
async fn rest_and_grpc_answer_alike() {
    let env = Env::start().await;
    let ns_path = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    for name in ["web", "db"] {
        env.ok(
            "POST",
            &format!("{ns_path}/deployments"),
            Some(deployment(name)),
        )
        .await;
    }
    for (name, tier) in [("a", "front"), ("b", "back"), ("c", "front")] {
        env.ok(
            "POST",
            &format!("{ns_path}/configmaps"),
            Some(json!({"metadata": {"name": name, "labels": {"tier": tier}},
                        "data": {"k": "v"}})),
        )
        .await;
    }
    let mut admin = env.grpc(Some(ADMIN)).await;
    let object_list =
        |l: pb::ObjectList| serde_json::to_value(grpc_convert::object_list_from_pb(l)).unwrap();

    // Reads: the same JSON from both transports.
    let rest = env
        .ok("GET", &format!("{P}/instances?sortDir=desc"), None)
        .await;
    let grpc = admin
        .list_instances(pb::ListInstancesRequest {
            options: options(None, None),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(object_list(grpc), rest, "ListInstances");

    let rest = env
        .ok("GET", &format!("{P}/instances/{INSTANCE}"), None)
        .await;
    let grpc = admin
        .get_instance(pb::GetInstanceRequest {
            instance: INSTANCE.into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(grpc_convert::struct_to_json(grpc), rest, "GetInstance");

    let rest = env
        .ok(
            "GET",
            &format!("{ns_path}/configmaps?labelSelector=tier%3Dfront&pageSize=1&sortDir=desc"),
            None,
        )
        .await;
    assert_eq!(rest["pagination"]["total"], 2, "{rest}");
    let grpc = admin
        .list_resources(pb::ListResourcesRequest {
            instance: INSTANCE.into(),
            kind: pb::ResourceKind::Configmaps as i32,
            namespace: Some(NS.into()),
            options: options(Some(1), Some("tier=front")),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(object_list(grpc), rest, "ListResources");

    let rest = env
        .ok("GET", &format!("{ns_path}/deployments/web"), None)
        .await;
    let grpc = admin
        .get_resource(pb::GetResourceRequest {
            instance: INSTANCE.into(),
            kind: pb::ResourceKind::Deployments as i32,
            namespace: Some(NS.into()),
            name: "web".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(grpc_convert::struct_to_json(grpc), rest, "GetResource");

    let rest = env
        .ok("GET", &format!("{ns_path}/workloads?sortDir=desc"), None)
        .await;
    let grpc = admin
        .list_workloads(pb::ListWorkloadsRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            options: options(None, None),
        })
        .await
        .unwrap()
        .into_inner();
    let grpc = serde_json::to_value(grpc::workloads::workload_list_from_pb(grpc)).unwrap();
    assert_eq!(grpc, rest, "ListWorkloads");
    assert_eq!(rest["items"].as_array().unwrap().len(), 2);

    let rest = env
        .ok("GET", &format!("{P}/instances/{INSTANCE}/clusters"), None)
        .await;
    let grpc = admin
        .list_clusters(pb::ListClustersRequest {
            instance: INSTANCE.into(),
            options: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(object_list(grpc), rest, "ListClusters");

    // Writes through gRPC reach the instance and read back through REST.
    let writes = env.writes();
    let created = admin
        .create_resource(pb::CreateResourceRequest {
            instance: INSTANCE.into(),
            kind: pb::ResourceKind::Configmaps as i32,
            namespace: Some(NS.into()),
            body: Some(
                grpc_convert::json_to_struct(
                    json!({"metadata": {"name": "from-grpc"}, "data": {"replicas": "3"}}),
                )
                .unwrap(),
            ),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(env.writes(), writes + 1);
    let rest = env
        .ok("GET", &format!("{ns_path}/configmaps/from-grpc"), None)
        .await;
    assert_eq!(
        grpc_convert::struct_to_json(created),
        rest,
        "read your gRPC write"
    );
    let paused = admin
        .deployment_action(pb::DeploymentActionRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            name: "db".into(),
            action: pb::DeploymentVerb::Pause as i32,
            kind: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(grpc_convert::struct_to_json(paused)["spec"]["paused"], true);
    let rest = env
        .ok("GET", &format!("{ns_path}/workloads/db"), None)
        .await;
    assert_eq!(rest["paused"], true);

    // Errors: the same code and message.
    let missing = admin
        .get_resource(pb::GetResourceRequest {
            instance: INSTANCE.into(),
            kind: pb::ResourceKind::Deployments as i32,
            namespace: Some(NS.into()),
            name: "missing".into(),
        })
        .await
        .unwrap_err();
    assert_same_error(
        env.call(
            "GET",
            &format!("{ns_path}/deployments/missing"),
            Some(ADMIN),
            None,
        )
        .await,
        missing,
        "not found",
    );

    let writes = env.writes();
    let mut viewer = env.grpc(Some(VIEWER)).await;
    let refused = viewer
        .deployment_action(pb::DeploymentActionRequest {
            instance: INSTANCE.into(),
            namespace: NS.into(),
            name: "web".into(),
            action: pb::DeploymentVerb::Pause as i32,
            kind: None,
        })
        .await
        .unwrap_err();
    assert_same_error(
        env.call(
            "POST",
            &format!("{ns_path}/deployments/web:pause"),
            Some(VIEWER),
            None,
        )
        .await,
        refused,
        "viewer write",
    );
    assert_eq!(
        env.writes(),
        writes,
        "a refused write never reaches the instance"
    );

    let mut nobody = env.grpc(Some(NOBODY)).await;
    let listed = nobody
        .list_instances(pb::ListInstancesRequest { options: None })
        .await
        .unwrap()
        .into_inner();
    assert!(listed.items.is_empty(), "no binding, no instance");

    let mut anonymous = env.grpc(None).await;
    let unauthenticated = anonymous
        .list_instances(pb::ListInstancesRequest { options: None })
        .await
        .unwrap_err();
    assert_eq!(unauthenticated.code(), tonic::Code::Unauthenticated);
    assert_eq!(
        env.call("GET", &format!("{P}/instances"), None, None)
            .await
            .0,
        StatusCode::UNAUTHORIZED
    );

    let unspecified = admin
        .list_resources(pb::ListResourcesRequest {
            instance: INSTANCE.into(),
            kind: 0,
            namespace: Some(NS.into()),
            options: None,
        })
        .await
        .unwrap_err();
    assert_eq!(unspecified.code(), tonic::Code::InvalidArgument);
    assert!(
        unspecified.message().starts_with("kind:"),
        "{unspecified:?}"
    );
    let bad_page = admin
        .list_instances(pb::ListInstancesRequest {
            options: Some(pb::ListOptions {
                page_size: Some(0),
                ..Default::default()
            }),
        })
        .await
        .unwrap_err();
    assert_same_error(
        env.call(
            "GET",
            &format!("{P}/instances?pageSize=0"),
            Some(ADMIN),
            None,
        )
        .await,
        bad_page,
        "bad pagination",
    );
}

#[tokio::test]
async fn grpc_health_reflection_and_kubeconfig_share_the_port() {
    let env = Env::start().await;
    let channel = env.channel().await;
    let mut health = tonic_health::pb::health_client::HealthClient::new(channel.clone());
    for service in ["", grpc::SERVICE_NAME] {
        let answer = health
            .check(tonic_health::pb::HealthCheckRequest {
                service: service.into(),
            })
            .await
            .unwrap()
            .into_inner();
        assert_eq!(
            answer.status(),
            tonic_health::pb::health_check_response::ServingStatus::Serving,
            "{service:?}"
        );
    }

    use tonic_reflection::pb::v1::server_reflection_client::ServerReflectionClient;
    use tonic_reflection::pb::v1::server_reflection_request::MessageRequest;
    use tonic_reflection::pb::v1::server_reflection_response::MessageResponse;
    let mut reflection = ServerReflectionClient::new(channel);
    let request = tonic_reflection::pb::v1::ServerReflectionRequest {
        host: String::new(),
        message_request: Some(MessageRequest::ListServices(String::new())),
    };
    let mut answers = reflection
        .server_reflection_info(futures::stream::iter([request]))
        .await
        .unwrap()
        .into_inner();
    let answer = answers.message().await.unwrap().unwrap();
    let Some(MessageResponse::ListServicesResponse(list)) = answer.message_response else {
        panic!("unexpected reflection answer {answer:?}");
    };
    let services: BTreeSet<_> = list.service.into_iter().map(|s| s.name).collect();
    assert!(services.contains(grpc::SERVICE_NAME), "{services:?}");

    // A kubeconfig issued over gRPC points at the authority the call arrived at.
    let mut admin = env.grpc(Some(ADMIN)).await;
    let issued = admin
        .create_kubeconfig(pb::CreateKubeconfigRequest {
            instance: INSTANCE.into(),
            server: None,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(
        issued.server.starts_with(&env.base),
        "{} vs {}",
        issued.server,
        env.base
    );
    assert!(
        issued.kubeconfig.contains(ADMIN),
        "the kubeconfig carries the caller's token"
    );
    // A REST route is still REST, and an unknown gRPC method is not found.
    assert_eq!(
        env.call("GET", &format!("{P}/instances"), Some(ADMIN), None)
            .await
            .0,
        StatusCode::OK
    );
}

/// Asks a reflection service of the given version, over `channel`, for its services and for
/// the files defining the health and Kairship services: (the listed services, each returned
/// file's package and services).
macro_rules! reflect {
    ($version:ident, $channel:expr) => {{
        use prost::Message as _;
        use tonic_reflection::pb::$version::ServerReflectionRequest;
        use tonic_reflection::pb::$version::server_reflection_client::ServerReflectionClient;
        use tonic_reflection::pb::$version::server_reflection_request::MessageRequest;
        use tonic_reflection::pb::$version::server_reflection_response::MessageResponse;
        let requests = [
            MessageRequest::ListServices(String::new()),
            MessageRequest::FileContainingSymbol("grpc.health.v1.Health".into()),
            MessageRequest::FileContainingSymbol(grpc::SERVICE_NAME.into()),
        ]
        .map(|request| ServerReflectionRequest {
            host: String::new(),
            message_request: Some(request),
        });
        let mut answers = ServerReflectionClient::new($channel)
            .server_reflection_info(futures::stream::iter(requests))
            .await
            .unwrap()
            .into_inner();
        let mut services = BTreeSet::new();
        let mut files = Vec::new();
        for _ in 0..3 {
            let answer = answers.message().await.unwrap().unwrap();
            match answer.message_response {
                Some(MessageResponse::ListServicesResponse(list)) => {
                    services = list.service.into_iter().map(|s| s.name).collect();
                }
                Some(MessageResponse::FileDescriptorResponse(found)) => {
                    let file = prost_types::FileDescriptorProto::decode(
                        found.file_descriptor_proto[0].as_slice(),
                    )
                    .unwrap();
                    let names: Vec<String> =
                        file.service.iter().map(|s| s.name().to_owned()).collect();
                    files.push((file.package().to_owned(), names));
                }
                other => panic!("unexpected reflection answer {other:?}"),
            }
        }
        (services, files)
    }};
}

#[tokio::test]
async fn grpc_reflection_v1_and_v1alpha_describe_every_served_service() {
    let env = Env::start().await;
    let want: BTreeSet<String> = grpc::SERVED_SERVICES.map(str::to_owned).into();
    assert!(want.contains("grpc.health.v1.Health"));
    let want_files = vec![
        ("grpc.health.v1".to_owned(), vec!["Health".to_owned()]),
        ("kairship.v1".to_owned(), vec!["KairshipService".to_owned()]),
    ];

    let (services, files) = reflect!(v1, env.channel().await);
    assert_eq!(services, want, "v1");
    assert_eq!(files, want_files, "v1");

    // grpcurl before 1.8.8 speaks only v1alpha.
    let (services, files) = reflect!(v1alpha, env.channel().await);
    assert_eq!(services, want, "v1alpha");
    assert_eq!(files, want_files, "v1alpha");
}

#[tokio::test]
async fn each_call_checks_the_instance_or_the_objects_inside_it() {
    use InstanceResource::{Instances, Proxy};
    let env = Env::start().await;
    let i = format!("{P}/instances/{INSTANCE}");
    let ns = format!("{i}/namespaces/{NS}");
    let body = || Some(json!({"metadata": {"name": "obj"}}));
    let inst = Some(INSTANCE.to_owned());
    // (method, path, body, the checks made in order). Denied callers stop at the first check,
    // except listing instances, which asks per instance when `list` on all is refused.
    let cases: Vec<(&str, String, Option<Value>, Vec<Check>)> = vec![
        (
            "GET",
            format!("{P}/instances"),
            None,
            vec![
                (Verb::List, Instances, None),
                (Verb::Get, Instances, inst.clone()),
            ],
        ),
        (
            "POST",
            format!("{P}/instances"),
            body(),
            vec![(Verb::Create, Instances, None)],
        ),
        (
            "GET",
            i.clone(),
            None,
            vec![(Verb::Get, Instances, inst.clone())],
        ),
        (
            "PUT",
            i.clone(),
            body(),
            vec![(Verb::Update, Instances, inst.clone())],
        ),
        (
            "DELETE",
            i.clone(),
            None,
            vec![(Verb::Delete, Instances, inst.clone())],
        ),
        (
            "POST",
            format!("{i}/kubeconfig"),
            Some(json!({})),
            vec![(Verb::Get, Instances, inst.clone())],
        ),
        (
            "GET",
            format!("{i}/clusters"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{i}/clusters"),
            body(),
            vec![(Verb::Create, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{i}/clusters/east"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "PUT",
            format!("{i}/clusters/east"),
            body(),
            vec![(Verb::Update, Proxy, inst.clone())],
        ),
        (
            "DELETE",
            format!("{i}/clusters/east"),
            None,
            vec![(Verb::Delete, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{ns}/deployments"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{ns}/deployments"),
            body(),
            vec![(Verb::Create, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{ns}/configmaps/obj"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "PUT",
            format!("{ns}/secrets/obj"),
            body(),
            vec![(Verb::Update, Proxy, inst.clone())],
        ),
        (
            "DELETE",
            format!("{ns}/propagationpolicies/obj"),
            None,
            vec![(Verb::Delete, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{i}/configmaps"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{i}/clusterpropagationpolicies"),
            body(),
            vec![(Verb::Create, Proxy, inst.clone())],
        ),
        (
            "PUT",
            format!("{i}/clusteroverridepolicies/obj"),
            body(),
            vec![(Verb::Update, Proxy, inst.clone())],
        ),
        (
            "DELETE",
            format!("{i}/clusterpropagationpolicies/obj"),
            None,
            vec![(Verb::Delete, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{ns}/deployments/web:pause"),
            None,
            vec![(Verb::Patch, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{ns}/deployments/web:resume"),
            None,
            vec![(Verb::Patch, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{ns}/deployments/web:restart"),
            None,
            vec![(Verb::Patch, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{ns}/workloads"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{ns}/workloads/web"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        // The generic resource paths and events, before the instance's discovery is asked.
        (
            "GET",
            format!("{ns}/resources/apps/v1/deployments"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{ns}/resources/apps/v1/deployments"),
            body(),
            vec![(Verb::Create, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{i}/resources/core/v1/namespaces/obj"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "PUT",
            format!("{i}/resources/rbac.authorization.k8s.io/v1/clusterroles/obj"),
            body(),
            vec![(Verb::Update, Proxy, inst.clone())],
        ),
        (
            "DELETE",
            format!("{ns}/resources/example.com/v1/gizmos/obj"),
            None,
            vec![(Verb::Delete, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{i}/events"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        (
            "GET",
            format!("{ns}/resources/apps/v1/deployments/web/events"),
            None,
            vec![(Verb::Get, Proxy, inst.clone())],
        ),
        // The native proxy checks the same subresource as the REST calls inside the instance.
        (
            "GET",
            format!("{i}/proxy/api/v1/namespaces/{NS}/configmaps"),
            None,
            vec![(Verb::List, Proxy, inst.clone())],
        ),
        (
            "POST",
            format!("{i}/proxy/api/v1/namespaces/{NS}/configmaps"),
            body(),
            vec![(Verb::Create, Proxy, inst.clone())],
        ),
        (
            "DELETE",
            format!("{i}/proxy/api/v1/namespaces/{NS}/configmaps/obj"),
            None,
            vec![(Verb::Delete, Proxy, inst.clone())],
        ),
    ];
    env.rights.take();
    for (method, path, body, want) in cases {
        let (status, answer) = env.call(method, &path, Some(NOBODY), body).await;
        let checks = env.rights.take();
        assert_eq!(checks, want, "{method} {path}: {status} {answer}");
        if method != "GET" || !path.ends_with("/instances") {
            assert_eq!(status, StatusCode::FORBIDDEN, "{method} {path}: {answer}");
        }
    }
    assert_eq!(env.writes(), 0, "no refused call reached the instance");
}

#[tokio::test]
async fn editors_write_inside_their_instance_and_viewers_do_not() {
    let env = Env::start_with(None, Access::HostRbac).await;
    let ns = format!("{P}/instances/{INSTANCE}/namespaces/{NS}");
    let deployments: Api<DynamicObject> = Api::namespaced_with(
        env.instance.client(),
        NS,
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apps", "v1", "Deployment"),
            "deployments",
        ),
    );

    // The viewer reads but may not write: nothing reaches the instance.
    let (status, list) = env
        .call("GET", &format!("{ns}/deployments"), Some(VIEWER), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert!(names(&list).is_empty());
    for (method, path, body) in [
        ("POST", format!("{ns}/deployments"), Some(deployment("web"))),
        (
            "POST",
            format!("{ns}/configmaps"),
            Some(json!({"metadata": {"name": "cfg"}})),
        ),
    ] {
        let (status, answer) = env.call(method, &path, Some(VIEWER), body).await;
        assert_eq!(error_of(status, &answer), (403, 7), "{method} {path}");
        assert!(
            answer["message"]
                .as_str()
                .unwrap()
                .contains("instances/proxy"),
            "{answer}"
        );
    }
    assert_eq!(env.writes(), 0);
    assert!(deployments.get_opt("web").await.unwrap().is_none());

    // The editor creates, replaces, restarts and deletes inside the instance.
    let (status, created) = env
        .call(
            "POST",
            &format!("{ns}/deployments"),
            Some(EDITOR),
            Some(deployment("web")),
        )
        .await;
    assert!(status.is_success(), "{status} {created}");
    assert_eq!(created["metadata"]["name"], "web");
    let on_instance = deployments.get("web").await.unwrap();
    assert_eq!(on_instance.data["spec"]["replicas"], 2);
    let (status, answer) = env
        .call(
            "POST",
            &format!("{ns}/deployments/web:pause"),
            Some(EDITOR),
            None,
        )
        .await;
    assert!(status.is_success(), "{status} {answer}");
    assert_eq!(
        deployments.get("web").await.unwrap().data["spec"]["paused"],
        true
    );
    let (status, answer) = env
        .call(
            "POST",
            &format!("{ns}/configmaps"),
            Some(EDITOR),
            Some(json!({"metadata": {"name": "cfg"}})),
        )
        .await;
    assert!(status.is_success(), "{status} {answer}");
    let (status, answer) = env
        .call(
            "DELETE",
            &format!("{ns}/configmaps/cfg"),
            Some(EDITOR),
            None,
        )
        .await;
    assert!(status.is_success(), "{status} {answer}");

    // The viewer sees the editor's Deployment, and still may not delete it.
    let (status, list) = env
        .call("GET", &format!("{ns}/deployments"), Some(VIEWER), None)
        .await;
    assert_eq!(status, StatusCode::OK, "{list}");
    assert_eq!(names(&list), ["web"]);
    let writes = env.writes();
    let (status, answer) = env
        .call(
            "DELETE",
            &format!("{ns}/deployments/web"),
            Some(VIEWER),
            None,
        )
        .await;
    assert_eq!(error_of(status, &answer), (403, 7));
    assert_eq!(env.writes(), writes);
    assert!(deployments.get_opt("web").await.unwrap().is_some());

    // The edit role does not include deleting the Instance itself; the checks tell the two
    // apart.
    let (status, answer) = env
        .call(
            "DELETE",
            &format!("{P}/instances/{INSTANCE}"),
            Some(EDITOR),
            None,
        )
        .await;
    assert_eq!(error_of(status, &answer), (403, 7));
    assert_eq!(
        Api::<Instance>::all(env.host.client())
            .list(&Default::default())
            .await
            .unwrap()
            .items
            .len(),
        1
    );
    // A user without any role sees nothing inside.
    let (status, answer) = env
        .call("GET", &format!("{ns}/deployments"), Some(NOBODY), None)
        .await;
    assert_eq!(error_of(status, &answer), (403, 7));
}

#[tokio::test]
async fn unknown_fields_at_any_depth_follow_field_validation() {
    let env = Env::start().await;
    let deployments = format!("{P}/instances/{INSTANCE}/namespaces/{NS}/deployments");
    let mut body = deployment("web");
    body["spec"]["bogus"] = json!(1);
    body["metadata"]["bogusMeta"] = json!("x");
    body["spec"]["template"]["spec"]["containers"][0]["bogusC"] = json!(true);

    // Strict (the default, and asked for): 400 naming every unknown field; nothing written.
    for query in ["", "?fieldValidation=Strict"] {
        let (status, answer) = env
            .call(
                "POST",
                &format!("{deployments}{query}"),
                Some(ADMIN),
                Some(body.clone()),
            )
            .await;
        assert_eq!(error_of(status, &answer), (400, 3), "{answer}");
        let message = answer["message"].as_str().unwrap();
        assert!(message.starts_with("strict decoding error: "), "{message}");
        for field in [
            "metadata.bogusMeta",
            "spec.bogus",
            "spec.template.spec.containers[0].bogusC",
        ] {
            assert!(
                message.contains(&format!("unknown field \"{field}\"")),
                "{field}: {message}"
            );
        }
        let violations = &answer["details"][0]["fieldViolations"];
        assert_eq!(violations.as_array().unwrap().len(), 3, "{answer}");
    }
    assert_eq!(env.writes(), 0, "a rejected body is not written");
    let (status, _) = env
        .call("GET", &format!("{deployments}/web"), Some(ADMIN), None)
        .await;
    assert_eq!(status, StatusCode::NOT_FOUND);

    // Warn: written without the fields, one Warning header per field.
    let resp = env
        .http
        .post(format!("{}{deployments}?fieldValidation=Warn", env.base))
        .bearer_auth(ADMIN)
        .json(&body)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    let warnings: Vec<String> = resp
        .headers()
        .get_all("warning")
        .iter()
        .map(|v| v.to_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        warnings,
        [
            r#"299 - "unknown field \"metadata.bogusMeta\"""#,
            r#"299 - "unknown field \"spec.bogus\"""#,
            r#"299 - "unknown field \"spec.template.spec.containers[0].bogusC\"""#,
        ]
    );
    let stored = env.ok("GET", &format!("{deployments}/web"), None).await;
    assert!(stored["metadata"].get("bogusMeta").is_none(), "{stored}");
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");
    let container = &stored["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["image"], "nginx");
    assert!(container.get("bogusC").is_none(), "{stored}");

    // Ignore on replace: dropped without a word.
    let mut replaced = stored.clone();
    replaced["spec"]["replicas"] = json!(3);
    replaced["spec"]["bogus"] = json!(2);
    let resp = env
        .http
        .put(format!(
            "{}{deployments}/web?fieldValidation=Ignore",
            env.base
        ))
        .bearer_auth(ADMIN)
        .json(&replaced)
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::OK);
    assert!(resp.headers().get("warning").is_none());
    let stored = env.ok("GET", &format!("{deployments}/web"), None).await;
    assert_eq!(stored["spec"]["replicas"], 3);
    assert!(stored["spec"].get("bogus").is_none(), "{stored}");

    // Policies (Karmada CRD schemas) and instances (the Instance CRD) alike.
    let policy = json!({"metadata": {"name": "p"}, "spec": {
        "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "nme": "web"}]}});
    let (status, answer) = env
        .call(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/propagationpolicies"),
            Some(ADMIN),
            Some(policy),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains(r#"unknown field "spec.resourceSelectors[0].nme""#),
        "{answer}"
    );
    let (status, answer) = env
        .call(
            "POST",
            &format!("{P}/instances"),
            Some(ADMIN),
            Some(
                json!({"metadata": {"name": "inst-3"}, "spec": {"mode": "Adopt", "bogus": 1,
                "kubeconfigSecretRef": {"namespace": KAIRSHIP_NS, "name": "missing"}}}),
            ),
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{answer}");
    assert!(
        answer["message"]
            .as_str()
            .unwrap()
            .contains(r#"unknown field "spec.bogus""#)
    );
    let instances: Api<Instance> = Api::all(env.host.client());
    assert!(instances.get_opt("inst-3").await.unwrap().is_none());

    // gRPC goes through the same check, Strict.
    let mut admin = env.grpc(Some(ADMIN)).await;
    let err = admin
        .create_resource(pb::CreateResourceRequest {
            instance: INSTANCE.into(),
            kind: pb::ResourceKind::Deployments as i32,
            namespace: Some(NS.into()),
            body: Some(grpc_convert::json_to_struct(body.clone()).unwrap()),
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(
        err.message().contains(r#"unknown field "spec.bogus""#),
        "{}",
        err.message()
    );
    assert_eq!(
        env.writes(),
        2,
        "only the Warn create and the Ignore replace were written"
    );
}

/// Every call inside an instance checks what it names before asking whether the caller may,
/// and checks its body only once the caller may.
#[tokio::test]
async fn calls_inside_an_instance_check_names_before_access_and_bodies_after() {
    let env = Env::start().await;
    let inst = format!("{P}/instances/{INSTANCE}");
    let ns = format!("{inst}/namespaces/{NS}");
    env.rights.take();
    // Malformed names and scopes: invalid for anyone, and nobody was asked.
    for (method, path, body) in [
        ("GET", format!("{ns}/configmaps/Not_A_Name"), None),
        ("DELETE", format!("{inst}/clusters/Not_A_Name"), None),
        ("GET", format!("{inst}/deployments/obj"), None),
        (
            "PUT",
            format!("{ns}/configmaps/Not_A_Name"),
            Some(json!({"metadata": {"name": "Not_A_Name"}})),
        ),
    ] {
        for token in [NOBODY, ADMIN] {
            let (status, answer) = env.call(method, &path, Some(token), body.clone()).await;
            assert_eq!(
                error_of(status, &answer),
                (400, 3),
                "{token} {method} {path}"
            );
            assert!(
                env.rights.take().is_empty(),
                "{token} {method} {path}: access was checked"
            );
        }
    }
    // A body of another kind: forbidden to who may not create, invalid to who may.
    let wrong = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"}});
    let path = format!("{ns}/configmaps");
    let (status, answer) = env
        .call("POST", &path, Some(NOBODY), Some(wrong.clone()))
        .await;
    assert_eq!(error_of(status, &answer), (403, 7), "{answer}");
    let (status, answer) = env.call("POST", &path, Some(ADMIN), Some(wrong)).await;
    assert_eq!(error_of(status, &answer), (400, 3), "{answer}");
    assert_eq!(env.writes(), 0, "no refused call reached the instance");
}

/// One resource of the generic API's table test.
struct GenericCase {
    group: &'static str,
    version: &'static str,
    resource: &'static str,
    namespaced: bool,
    /// Served from a CustomResourceDefinition (no strategic merge patches).
    crd: bool,
    /// The object's fields besides `metadata`.
    fields: Value,
}

fn generic_cases() -> Vec<GenericCase> {
    let pod_template = json!({"metadata": {"labels": {"app": "g"}},
        "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
    let job_template = json!({"spec": {"restartPolicy": "Never",
        "containers": [{"name": "c", "image": "busybox"}]}});
    let rules = json!([{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]);
    let subjects = json!([{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"}]);
    let selectors = |kind: &str| json!({"resourceSelectors": [{"apiVersion": "v1", "kind": kind}]});
    let case = |group, version, resource, namespaced, crd, fields| GenericCase {
        group,
        version,
        resource,
        namespaced,
        crd,
        fields,
    };
    vec![
        case(
            "core",
            "v1",
            "configmaps",
            true,
            false,
            json!({"data": {"k": "v"}}),
        ),
        case(
            "core",
            "v1",
            "secrets",
            true,
            false,
            json!({"data": {"k": "dg=="}}),
        ),
        case(
            "core",
            "v1",
            "services",
            true,
            false,
            json!({"spec": {"ports": [{"port": 80}], "selector": {"app": "g"}}}),
        ),
        case("core", "v1", "serviceaccounts", true, false, json!({})),
        case(
            "apps",
            "v1",
            "deployments",
            true,
            false,
            json!({"spec": {"replicas": 0, "selector": {"matchLabels": {"app": "g"}},
                            "template": pod_template}}),
        ),
        case(
            "apps",
            "v1",
            "statefulsets",
            true,
            false,
            json!({"spec": {"replicas": 0, "serviceName": "g",
                            "selector": {"matchLabels": {"app": "g"}}, "template": pod_template}}),
        ),
        case(
            "apps",
            "v1",
            "daemonsets",
            true,
            false,
            json!({"spec": {"selector": {"matchLabels": {"app": "g"}}, "template": pod_template}}),
        ),
        case(
            "batch",
            "v1",
            "jobs",
            true,
            false,
            json!({"spec": {"suspend": true, "template": job_template}}),
        ),
        case(
            "batch",
            "v1",
            "cronjobs",
            true,
            false,
            json!({"spec": {"schedule": "*/5 * * * *", "suspend": true,
                            "jobTemplate": {"spec": {"template": job_template}}}}),
        ),
        case(
            "rbac.authorization.k8s.io",
            "v1",
            "roles",
            true,
            false,
            json!({"rules": rules}),
        ),
        case(
            "rbac.authorization.k8s.io",
            "v1",
            "rolebindings",
            true,
            false,
            json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                               "name": "g"}, "subjects": subjects}),
        ),
        case(
            "coordination.k8s.io",
            "v1",
            "leases",
            true,
            false,
            json!({"spec": {"holderIdentity": "g"}}),
        ),
        case(
            "policy.karmada.io",
            "v1alpha1",
            "propagationpolicies",
            true,
            true,
            json!({"spec": selectors("ConfigMap")}),
        ),
        case(
            "policy.karmada.io",
            "v1alpha1",
            "overridepolicies",
            true,
            true,
            json!({"spec": selectors("ConfigMap")}),
        ),
        case(
            "work.karmada.io",
            "v1alpha2",
            "resourcebindings",
            true,
            true,
            json!({"spec": {"resource": {"apiVersion": "v1", "kind": "ConfigMap",
                                         "namespace": NS, "name": "g"}}}),
        ),
        case(
            "example.com",
            "v1",
            "widgets",
            true,
            true,
            json!({"spec": {"size": 3}}),
        ),
        case("core", "v1", "namespaces", false, false, json!({})),
        case(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterroles",
            false,
            false,
            json!({"rules": rules}),
        ),
        case(
            "rbac.authorization.k8s.io",
            "v1",
            "clusterrolebindings",
            false,
            false,
            json!({"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                               "name": "g"}, "subjects": subjects}),
        ),
        case(
            "scheduling.k8s.io",
            "v1",
            "priorityclasses",
            false,
            false,
            json!({"value": 1000}),
        ),
        case(
            "storage.k8s.io",
            "v1",
            "storageclasses",
            false,
            false,
            json!({"provisioner": "example.com/g"}),
        ),
        case(
            "policy.karmada.io",
            "v1alpha1",
            "clusterpropagationpolicies",
            false,
            true,
            json!({"spec": selectors("Namespace")}),
        ),
        case(
            "policy.karmada.io",
            "v1alpha1",
            "clusteroverridepolicies",
            false,
            true,
            json!({"spec": selectors("Namespace")}),
        ),
    ]
}

/// An object as both transports must show it: what controllers and the simulator change
/// meanwhile (status, resourceVersion, annotations, managed fields) left out.
fn stable(mut object: Value) -> Value {
    if let Some(map) = object.as_object_mut() {
        map.remove("status");
    }
    if let Some(meta) = object["metadata"].as_object_mut() {
        for field in [
            "resourceVersion",
            "managedFields",
            "annotations",
            "generation",
        ] {
            meta.remove(field);
        }
    }
    object
}

fn stable_list(mut list: Value) -> Value {
    if let Some(items) = list["items"].as_array_mut() {
        for item in items.iter_mut() {
            *item = stable(item.take());
        }
    }
    list
}

/// A patch of each type that sets the label `patched` to `value`.
fn label_patch(patch_type: pb::PatchType, value: &str) -> Value {
    match patch_type {
        pb::PatchType::Json => {
            json!([{"op": "add", "path": "/metadata/labels/patched", "value": value}])
        }
        _ => json!({"metadata": {"labels": {"patched": value}}}),
    }
}

#[tokio::test]
async fn generic_resources_answer_alike_over_rest_and_grpc() {
    let env = Env::start().await;
    let crds: Api<DynamicObject> = Api::all_with(
        env.instance.client(),
        &ApiResource::from_gvk_with_plural(
            &GroupVersionKind::gvk("apiextensions.k8s.io", "v1", "CustomResourceDefinition"),
            "customresourcedefinitions",
        ),
    );
    let widgets = json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {"group": "example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": true, "storage": true,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                   "x-kubernetes-preserve-unknown-fields": true}}}]}});
    crds.create(
        &PostParams::default(),
        &serde_json::from_value(widgets).unwrap(),
    )
    .await
    .unwrap();
    let mut grpc = env.grpc(Some(ADMIN)).await;
    let types = [
        pb::PatchType::Merge,
        pb::PatchType::Json,
        pb::PatchType::Strategic,
        pb::PatchType::Apply,
    ];
    let cases = generic_cases();
    assert!(cases.len() >= 15);
    assert!(cases.iter().filter(|c| !c.namespaced).count() >= 5);
    assert!(cases.iter().filter(|c| c.crd).count() >= 5);
    for (i, c) in cases.iter().enumerate() {
        let what = format!("{}/{}/{}", c.group, c.version, c.resource);
        let namespace = c.namespaced.then(|| NS.to_owned());
        let collection = match &namespace {
            Some(ns) => format!(
                "{P}/instances/{INSTANCE}/namespaces/{ns}/resources/{}/{}/{}",
                c.group, c.version, c.resource
            ),
            None => format!(
                "{P}/instances/{INSTANCE}/resources/{}/{}/{}",
                c.group, c.version, c.resource
            ),
        };
        let body = |name: &str| {
            let mut body = c.fields.clone();
            body["metadata"] = json!({"name": name, "labels": {"generic": c.resource}});
            body
        };
        let (group, version, resource) = (
            c.group.to_owned(),
            c.version.to_owned(),
            c.resource.to_owned(),
        );

        // Create: one object through each transport.
        let created = env.ok("POST", &collection, Some(body("rest-obj"))).await;
        assert_eq!(created["metadata"]["name"], "rest-obj", "{what}");
        let from_grpc = grpc
            .create_object(pb::CreateObjectRequest {
                instance: INSTANCE.into(),
                group: group.clone(),
                version: version.clone(),
                resource: resource.clone(),
                namespace: namespace.clone(),
                body: Some(grpc_convert::json_to_struct(body("grpc-obj")).unwrap()),
            })
            .await
            .unwrap_or_else(|e| panic!("{what}: {e:?}"));
        // The write's resourceVersion, for the caller to bring to reads through any replica.
        let written = from_grpc
            .metadata()
            .get("kairship-written")
            .map(|v| v.to_str().unwrap().to_owned());
        let from_grpc = grpc_convert::struct_to_json(from_grpc.into_inner());
        assert_eq!(
            written.as_deref(),
            from_grpc["metadata"]["resourceVersion"].as_str(),
            "{what}"
        );
        assert_eq!(from_grpc["metadata"]["name"], "grpc-obj", "{what}");
        assert_eq!(from_grpc["kind"], created["kind"], "{what}");
        assert_eq!(from_grpc["apiVersion"], created["apiVersion"], "{what}");

        // Get and list: the same answers.
        for name in ["rest-obj", "grpc-obj"] {
            let rest = env.ok("GET", &format!("{collection}/{name}"), None).await;
            let answer = grpc
                .get_object(pb::GetObjectRequest {
                    instance: INSTANCE.into(),
                    group: group.clone(),
                    version: version.clone(),
                    resource: resource.clone(),
                    namespace: namespace.clone(),
                    name: name.into(),
                })
                .await
                .unwrap()
                .into_inner();
            assert_eq!(
                stable(grpc_convert::struct_to_json(answer)),
                stable(rest),
                "{what} {name}"
            );
        }
        let query = format!(
            "labelSelector=generic%3D{}&sortBy=name&sortDir=desc&pageSize=1",
            c.resource
        );
        let rest = env.ok("GET", &format!("{collection}?{query}"), None).await;
        let answer = grpc
            .list_objects(pb::ListObjectsRequest {
                instance: INSTANCE.into(),
                group: group.clone(),
                version: version.clone(),
                resource: resource.clone(),
                namespace: namespace.clone(),
                options: Some(pb::ListOptions {
                    page_size: Some(1),
                    sort_by: pb::SortBy::Name as i32,
                    sort_dir: pb::SortDir::Desc as i32,
                    label_selector: Some(format!("generic={}", c.resource)),
                    ..Default::default()
                }),
            })
            .await
            .unwrap()
            .into_inner();
        let answer = serde_json::to_value(grpc_convert::object_list_from_pb(answer)).unwrap();
        assert_eq!(
            stable_list(answer),
            stable_list(rest.clone()),
            "{what} list"
        );
        assert_eq!(
            names(&rest),
            ["rest-obj"],
            "{what}: desc by name, one per page"
        );
        assert_eq!(rest["pagination"]["total"], 2, "{what}");

        // Patch: each transport patches its own object with the same patch type.
        let mut patch_type = types[i % types.len()];
        if c.crd && patch_type == pb::PatchType::Strategic {
            patch_type = pb::PatchType::Merge;
        }
        let content_type = match patch_type {
            pb::PatchType::Json => "application/json-patch+json",
            pb::PatchType::Strategic => "application/strategic-merge-patch+json",
            pb::PatchType::Apply => "application/apply-patch+yaml",
            _ => "application/merge-patch+json",
        };
        let resp = env
            .http
            .patch(format!("{}{collection}/rest-obj", env.base))
            .bearer_auth(ADMIN)
            .header("content-type", content_type)
            .body(label_patch(patch_type, "rest").to_string())
            .send()
            .await
            .unwrap();
        let status = resp.status();
        let patched: Value = resp.json().await.unwrap();
        assert_eq!(status, StatusCode::OK, "{what} {content_type}: {patched}");
        assert_eq!(patched["metadata"]["labels"]["patched"], "rest", "{what}");
        assert_eq!(
            patched["metadata"]["labels"]["generic"], c.resource,
            "{what}"
        );
        let answer = grpc
            .patch_object(pb::PatchObjectRequest {
                instance: INSTANCE.into(),
                group: group.clone(),
                version: version.clone(),
                resource: resource.clone(),
                namespace: namespace.clone(),
                name: "grpc-obj".into(),
                patch_type: patch_type as i32,
                patch: Some(grpc_convert::json_to_value(label_patch(patch_type, "grpc"))),
                field_manager: None,
                force: None,
            })
            .await
            .unwrap_or_else(|e| panic!("{what} {patch_type:?}: {e:?}"))
            .into_inner();
        let answer = grpc_convert::struct_to_json(answer);
        assert_eq!(answer["metadata"]["labels"]["patched"], "grpc", "{what}");
        assert_eq!(
            answer["metadata"]["labels"]["generic"], c.resource,
            "{what}"
        );

        // Delete through each transport; then both read the same absence.
        env.ok("DELETE", &format!("{collection}/rest-obj"), None)
            .await;
        grpc.delete_object(pb::DeleteObjectRequest {
            instance: INSTANCE.into(),
            group: group.clone(),
            version: version.clone(),
            resource: resource.clone(),
            namespace: namespace.clone(),
            name: "grpc-obj".into(),
        })
        .await
        .unwrap();
        let rest = env
            .call("GET", &format!("{collection}/grpc-obj"), Some(ADMIN), None)
            .await;
        if rest.0 == StatusCode::OK {
            // Deleting a Namespace (or an object with finalizers) only begins it.
            assert!(
                rest.1["metadata"]["deletionTimestamp"].is_string(),
                "{what}: {}",
                rest.1
            );
        } else {
            let err = grpc
                .get_object(pb::GetObjectRequest {
                    instance: INSTANCE.into(),
                    group: group.clone(),
                    version: version.clone(),
                    resource: resource.clone(),
                    namespace: namespace.clone(),
                    name: "grpc-obj".into(),
                })
                .await
                .unwrap_err();
            assert_eq!(rest.0, StatusCode::NOT_FOUND, "{what}");
            assert_same_error(rest, err, &what);
        }
    }

    // The typed routes are aliases: the same object, the same list.
    env.ok(
        "POST",
        &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps"),
        Some(json!({"metadata": {"name": "typed"}, "data": {"a": "b"}})),
    )
    .await;
    let typed = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/configmaps/typed"),
            None,
        )
        .await;
    let generic = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/resources/core/v1/configmaps/typed"),
            None,
        )
        .await;
    assert_eq!(typed, generic);
    let typed = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/configmaps?name=typ"),
            None,
        )
        .await;
    let generic = env
        .ok(
            "GET",
            &format!("{P}/instances/{INSTANCE}/resources/core/v1/configmaps?name=typ"),
            None,
        )
        .await;
    assert_eq!(typed, generic);
    assert_eq!(names(&generic), ["typed"]);

    // Several namespaces, sorted by namespace: the same over both transports.
    for ns in ["team-b", "team-c"] {
        ensure_namespace(&env.instance.client(), ns).await;
    }
    for (ns, name) in [
        ("team-c", "m-1"),
        ("team-a", "m-2"),
        ("team-b", "m-3"),
        ("team-c", "m-0"),
    ] {
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{ns}/resources/core/v1/configmaps"),
            Some(json!({"metadata": {"name": name, "labels": {"multi": "ns"}}})),
        )
        .await;
    }
    let rest = env
        .ok(
            "GET",
            &format!(
                "{P}/instances/{INSTANCE}/resources/core/v1/configmaps\
                 ?namespaces=team-a,team-c&sortBy=namespace&labelSelector=multi%3Dns"
            ),
            None,
        )
        .await;
    assert_eq!(names(&rest), ["m-2", "m-0", "m-1"]);
    let answer = grpc
        .list_objects(pb::ListObjectsRequest {
            instance: INSTANCE.into(),
            group: "core".into(),
            version: "v1".into(),
            resource: "configmaps".into(),
            namespace: None,
            options: Some(pb::ListOptions {
                sort_by: pb::SortBy::Namespace as i32,
                namespaces: Some("team-a,team-c".into()),
                label_selector: Some("multi=ns".into()),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    let answer = serde_json::to_value(grpc_convert::object_list_from_pb(answer)).unwrap();
    assert_eq!(stable_list(answer), stable_list(rest));
    // Sorting by a printer column's field: numbers by value, objects without it first.
    for (name, replicas) in [("r-ten", Some(10)), ("r-two", Some(2)), ("r-zero", Some(0))] {
        let mut body = deployment(name);
        body["metadata"]["labels"] = json!({"sorted": "yes"});
        body["spec"]["replicas"] = json!(replicas);
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{NS}/resources/apps/v1/deployments"),
            Some(body),
        )
        .await;
    }
    let sorted = |dir: &str| {
        format!(
            "{P}/instances/{INSTANCE}/resources/apps/v1/deployments\
             ?labelSelector=sorted%3Dyes&sortField=.spec.replicas&sortDir={dir}"
        )
    };
    let asc = env.ok("GET", &sorted("asc"), None).await;
    assert_eq!(names(&asc), ["r-zero", "r-two", "r-ten"]);
    let desc = env.ok("GET", &sorted("desc"), None).await;
    assert_eq!(names(&desc), ["r-ten", "r-two", "r-zero"]);
    let answer = grpc
        .list_objects(pb::ListObjectsRequest {
            instance: INSTANCE.into(),
            group: "apps".into(),
            version: "v1".into(),
            resource: "deployments".into(),
            namespace: None,
            options: Some(pb::ListOptions {
                sort_field: Some(".spec.replicas".into()),
                sort_dir: pb::SortDir::Desc as i32,
                label_selector: Some("sorted=yes".into()),
                ..Default::default()
            }),
        })
        .await
        .unwrap()
        .into_inner();
    let answer = serde_json::to_value(grpc_convert::object_list_from_pb(answer)).unwrap();
    assert_eq!(stable_list(answer), stable_list(desc));
    for path in [
        format!(
            "{P}/instances/{INSTANCE}/resources/apps/v1/deployments?sortField=.status.conditions[0]"
        ),
        format!("{P}/instances?sortField=.spec"),
        format!(
            "{P}/instances/{INSTANCE}/namespaces/{NS}/resources/core/v1/configmaps?namespaces=team-b"
        ),
        format!("{P}/instances/{INSTANCE}/resources/core/v1/namespaces?namespaces=team-b"),
        format!("{P}/instances/{INSTANCE}/resources/core/v1/configmaps?namespaces=Team-B"),
        format!("{P}/instances?namespaces=team-b"),
        format!("{P}/instances?sortBy=namespace"),
    ] {
        let (status, body) = env.call("GET", &path, Some(ADMIN), None).await;
        assert_eq!(status, StatusCode::BAD_REQUEST, "{path}: {body}");
    }
}

#[tokio::test]
async fn unknown_resources_are_404_and_misspelt_ones_400_on_both_transports() {
    let env = Env::start().await;
    let mut grpc = env.grpc(Some(ADMIN)).await;
    let list = |group: &str, version: &str, resource: &str, namespace: Option<&str>| {
        pb::ListObjectsRequest {
            instance: INSTANCE.into(),
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
            namespace: namespace.map(str::to_owned),
            options: None,
        }
    };
    let at = |path: &str| format!("{P}/instances/{INSTANCE}/{path}");
    for (path, req, status, needle) in [
        (
            at("resources/example.com/v1/gizmos"),
            list("example.com", "v1", "gizmos", None),
            StatusCode::NOT_FOUND,
            "serves no resource \"gizmos\" in example.com/v1",
        ),
        (
            at("namespaces/team-a/resources/apps/v7/deployments"),
            list("apps", "v7", "deployments", Some(NS)),
            StatusCode::NOT_FOUND,
            "serves no resource \"deployments\" in apps/v7",
        ),
        (
            at("resources/core/v1/deployments"),
            list("core", "v1", "deployments", None),
            StatusCode::NOT_FOUND,
            "serves no resource",
        ),
        (
            at("namespaces/team-a/resources/core/v1/nodes"),
            list("core", "v1", "nodes", Some(NS)),
            StatusCode::BAD_REQUEST,
            "are cluster-scoped",
        ),
        (
            at("resources/Apps/v1/deployments"),
            list("Apps", "v1", "deployments", None),
            StatusCode::BAD_REQUEST,
            "group",
        ),
        (
            at("resources/apps/1/deployments"),
            list("apps", "1", "deployments", None),
            StatusCode::BAD_REQUEST,
            "not an API version",
        ),
    ] {
        let rest = env.call("GET", &path, Some(ADMIN), None).await;
        assert_eq!(rest.0, status, "{path}: {}", rest.1);
        assert!(
            rest.1["message"].as_str().unwrap().contains(needle),
            "{path}: {}",
            rest.1
        );
        let err = grpc.list_objects(req).await.unwrap_err();
        assert_same_error(rest, err, &path);
    }
    // gRPC spells the core group as REST does; an empty group is refused with a hint.
    let err = grpc
        .list_objects(list("", "v1", "configmaps", None))
        .await
        .unwrap_err();
    assert_eq!(err.code(), tonic::Code::InvalidArgument);
    assert!(err.message().contains("\"core\""), "{err:?}");
    // A namespaced resource read without its namespace.
    let (status, body) = env
        .call(
            "GET",
            &at("resources/core/v1/configmaps/x"),
            Some(ADMIN),
            None,
        )
        .await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{body}");
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("name the namespace"),
        "{body}"
    );
    // A viewer may read but not patch; the refusal comes before the instance is asked.
    let before = env.writes();
    let resp = env
        .http
        .patch(format!(
            "{}{}",
            env.base,
            at("namespaces/team-a/resources/core/v1/configmaps/x")
        ))
        .bearer_auth(VIEWER)
        .header("content-type", "application/merge-patch+json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::FORBIDDEN);
    assert_eq!(env.writes(), before);
    // A PATCH without a patch media type, and `force` outside apply.
    let resp = env
        .http
        .patch(format!(
            "{}{}",
            env.base,
            at("namespaces/team-a/resources/core/v1/configmaps/x")
        ))
        .bearer_auth(ADMIN)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: Value = resp.json().await.unwrap();
    assert!(
        body["message"]
            .as_str()
            .unwrap()
            .contains("application/merge-patch+json"),
        "{body}"
    );
    let resp = env
        .http
        .patch(format!(
            "{}{}?force=true",
            env.base,
            at("namespaces/team-a/resources/core/v1/configmaps/x")
        ))
        .bearer_auth(ADMIN)
        .header("content-type", "application/merge-patch+json")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    assert_eq!(env.writes(), before);
}

#[tokio::test]
async fn events_of_an_instance_a_namespace_and_an_object() {
    let env = Env::start().await;
    let mut grpc = env.grpc(Some(ADMIN)).await;
    ensure_namespace(&env.instance.client(), "default").await;
    let event = |ns: &str, name: &str, about: Value, type_: &str, reason: &str| {
        (
            ns.to_owned(),
            json!({"metadata": {"name": name}, "involvedObject": about, "type": type_,
                   "reason": reason, "message": format!("{reason} happened")}),
        )
    };
    let web =
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web", "namespace": NS});
    let db = json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "db", "namespace": NS});
    let ns_object = json!({"apiVersion": "v1", "kind": "Namespace", "name": NS});
    for (ns, body) in [
        event(NS, "web.1", web.clone(), "Warning", "FailedCreate"),
        event(NS, "web.2", web, "Normal", "ScalingReplicaSet"),
        event(NS, "db.1", db, "Normal", "ScalingReplicaSet"),
        event("default", "ns.1", ns_object, "Warning", "FailedDelete"),
    ] {
        env.ok(
            "POST",
            &format!("{P}/instances/{INSTANCE}/namespaces/{ns}/resources/core/v1/events"),
            Some(body),
        )
        .await;
    }
    let at = |path: &str| format!("{P}/instances/{INSTANCE}/{path}");
    for (path, want) in [
        ("events", vec!["db.1", "ns.1", "web.1", "web.2"]),
        ("events?type=Warning", vec!["ns.1", "web.1"]),
        ("events?kind=Namespace", vec!["ns.1"]),
        ("events?namespaces=default", vec!["ns.1"]),
        (
            "namespaces/team-a/events?reason=ScalingReplicaSet",
            vec!["db.1", "web.2"],
        ),
        (
            "namespaces/team-a/resources/apps/v1/deployments/web/events",
            vec!["web.1", "web.2"],
        ),
        (
            "namespaces/team-a/resources/apps/v1/deployments/web/events?type=Normal",
            vec!["web.2"],
        ),
        ("resources/core/v1/namespaces/team-a/events", vec!["ns.1"]),
    ] {
        let list = env.ok("GET", &at(path), None).await;
        assert_eq!(names(&list), want, "{path}");
        assert!(
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .all(|e| e["kind"] == "Event")
        );
    }
    // gRPC answers the same.
    let rest = env
        .ok(
            "GET",
            &at("namespaces/team-a/resources/apps/v1/deployments/web/events?type=Warning"),
            None,
        )
        .await;
    let answer = grpc
        .list_events(pb::ListEventsRequest {
            instance: INSTANCE.into(),
            namespace: Some(NS.into()),
            group: Some("apps".into()),
            version: Some("v1".into()),
            resource: Some("deployments".into()),
            name: Some("web".into()),
            r#type: Some("Warning".into()),
            ..Default::default()
        })
        .await
        .unwrap()
        .into_inner();
    let answer = serde_json::to_value(grpc_convert::object_list_from_pb(answer)).unwrap();
    assert_eq!(stable_list(answer), stable_list(rest));
    // Bad filters and objects: 400 or 404, the same over gRPC.
    for (path, status, req) in [
        (
            "events?type=Error",
            StatusCode::BAD_REQUEST,
            pb::ListEventsRequest {
                r#type: Some("Error".into()),
                ..Default::default()
            },
        ),
        (
            "events?reason=a%20b",
            StatusCode::BAD_REQUEST,
            pb::ListEventsRequest {
                reason: Some("a b".into()),
                ..Default::default()
            },
        ),
        (
            "resources/example.com/v1/gizmos/g/events",
            StatusCode::NOT_FOUND,
            pb::ListEventsRequest {
                group: Some("example.com".into()),
                version: Some("v1".into()),
                resource: Some("gizmos".into()),
                name: Some("g".into()),
                ..Default::default()
            },
        ),
        (
            "resources/apps/v1/deployments/web/events",
            StatusCode::BAD_REQUEST,
            pb::ListEventsRequest {
                group: Some("apps".into()),
                version: Some("v1".into()),
                resource: Some("deployments".into()),
                name: Some("web".into()),
                ..Default::default()
            },
        ),
    ] {
        let rest = env.call("GET", &at(path), Some(ADMIN), None).await;
        assert_eq!(rest.0, status, "{path}: {}", rest.1);
        let err = grpc
            .list_events(pb::ListEventsRequest {
                instance: INSTANCE.into(),
                ..req
            })
            .await
            .unwrap_err();
        assert_same_error(rest, err, path);
    }
}
