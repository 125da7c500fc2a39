//! The console's server-side cost: the instance list with 50 instances and the overview of an
//! instance holding 5,000 Deployments (one namespace; the overview reads a bounded sample of
//! them for its namespace menu and renders a page of 50 workloads), each request going through the whole
//! console router (session lookup, authentication, authorization of the controls, the pages'
//! API calls, rendering). The API behind it answers from memory, so this measures the
//! console, not the read path (the `router` bench measures that: a 5,000-object LIST through
//! the cache). The resource browser's list page of those 5,000 Deployments is measured too, at
//! its default page size and its largest. Targets: p99 <= 50 ms and <= 300 KB per page.
//!
//! `cargo bench -p kairship-core --bench console`; prints `BENCH name=value` lines.
#![allow(clippy::unwrap_used)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use axum::body::Body;
use kairship_core::access::{AccessError, AllowAll, Authenticator, Caller};
use kairship_core::api::*;
use kairship_core::console::{ConsoleParts, routes};
use serde_json::{Value, json};
use tower::ServiceExt as _;

const INSTANCES: usize = 50;
const WORKLOADS: usize = 5_000;
const ROUNDS: usize = 200;
const TOKEN: &str = "bench-token";

struct Token;

#[async_trait]
impl Authenticator for Token {
    async fn authenticate(&self, token: &str) -> Result<Caller, AccessError> {
        if token == TOKEN {
            Ok(Caller::new("bench", vec![]))
        } else {
            Err(AccessError::Unauthenticated("unknown token".into()))
        }
    }
}

/// An API answering from memory: 50 instances with summaries; in each, 3 member clusters,
/// 5,000 Deployments spread over them and one propagation policy.
struct InMemory {
    instances: Vec<Value>,
    deployments: Vec<Value>,
    workloads: Vec<Workload>,
    clusters: Vec<Value>,
    policies: Vec<Value>,
}

fn page_of<T: Clone>(items: &[T], options: &ListOptions) -> (Vec<T>, Pagination) {
    let size = options.page_size.unwrap_or(10_000).max(1);
    let page = options.page.unwrap_or(1).max(1);
    let start = ((page - 1) * size) as usize;
    let slice: Vec<T> = items
        .iter()
        .skip(start)
        .take(size as usize)
        .cloned()
        .collect();
    let total = items.len() as u64;
    (
        slice,
        Pagination {
            total,
            page,
            page_size: size,
            pages: total.div_ceil(u64::from(size)) as u32,
        },
    )
}

fn list(items: &[Value], options: &ListOptions) -> ObjectList {
    let (items, pagination) = page_of(items, options);
    ObjectList { items, pagination }
}

fn unused() -> ApiError {
    ApiError::internal("not used by the benchmark")
}

#[async_trait]
impl InstancesApi for InMemory {
    async fn list_instances(
        &self,
        _: &Caller,
        r: ListInstancesRequest,
    ) -> Result<ObjectList, ApiError> {
        Ok(list(&self.instances, &r.options))
    }
    async fn get_instance(&self, _: &Caller, r: GetInstanceRequest) -> Result<Object, ApiError> {
        self.instances
            .iter()
            .find(|i| i["metadata"]["name"] == r.instance.as_str())
            .cloned()
            .ok_or_else(|| ApiError::not_found("no such instance"))
    }
    async fn create_instance(
        &self,
        _: &Caller,
        _: CreateInstanceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn update_instance(
        &self,
        _: &Caller,
        _: UpdateInstanceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn delete_instance(
        &self,
        _: &Caller,
        _: DeleteInstanceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn create_kubeconfig(
        &self,
        _: &Caller,
        _: &BearerToken,
        _: CreateKubeconfigRequest,
    ) -> Result<KubeconfigResponse, ApiError> {
        Err(unused())
    }
    async fn adopt_instance(
        &self,
        _: &Caller,
        _: AdoptInstanceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
}

#[async_trait]
impl MembersApi for InMemory {
    async fn list_clusters(
        &self,
        _: &Caller,
        r: ListClustersRequest,
    ) -> Result<ObjectList, ApiError> {
        Ok(list(&self.clusters, &r.options))
    }
    async fn get_cluster(&self, _: &Caller, _: GetClusterRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn create_cluster(&self, _: &Caller, _: JoinClusterRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn join_member(
        &self,
        _: &Caller,
        _: kairship_core::api::JoinMemberRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn register_member(
        &self,
        _: &Caller,
        _: kairship_core::api::RegisterMemberRequest,
    ) -> Result<kairship_core::api::RegisterMemberResponse, ApiError> {
        Err(unused())
    }
    async fn update_member(
        &self,
        _: &Caller,
        _: kairship_core::api::UpdateMemberRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn update_cluster(
        &self,
        _: &Caller,
        _: UpdateClusterRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn remove_cluster(
        &self,
        _: &Caller,
        _: RemoveClusterRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
}

#[async_trait]
impl ResourcesApi for InMemory {
    async fn list_objects(
        &self,
        _: &Caller,
        r: ListObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        Ok(match (r.group.as_str(), r.resource.as_str()) {
            ("apps", "deployments") => list(&self.deployments, &r.options),
            _ => list(&[], &r.options),
        })
    }
    async fn get_object(&self, _: &Caller, _: GetObjectRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn create_object(&self, _: &Caller, _: CreateObjectRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn update_object(&self, _: &Caller, _: UpdateObjectRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn patch_object(&self, _: &Caller, _: PatchObjectRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn delete_object(&self, _: &Caller, _: DeleteObjectRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn list_events(&self, _: &Caller, _: ListEventsRequest) -> Result<ObjectList, ApiError> {
        Err(unused())
    }
    async fn list_resources(
        &self,
        _: &Caller,
        r: ListResourcesRequest,
    ) -> Result<ObjectList, ApiError> {
        Ok(match r.kind {
            ResourceKind::Deployments => list(&self.deployments, &r.options),
            ResourceKind::Propagationpolicies => list(&self.policies, &r.options),
            _ => list(&[], &r.options),
        })
    }
    async fn get_resource(&self, _: &Caller, _: GetResourceRequest) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn create_resource(
        &self,
        _: &Caller,
        _: CreateResourceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn update_resource(
        &self,
        _: &Caller,
        _: UpdateResourceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn delete_resource(
        &self,
        _: &Caller,
        _: DeleteResourceRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
}

#[async_trait]
impl WorkloadsApi for InMemory {
    async fn deployment_action(
        &self,
        _: &Caller,
        _: DeploymentActionRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn restart_job(
        &self,
        _: &Caller,
        _: kairship_core::api::RestartJobRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn cronjob_action(
        &self,
        _: &Caller,
        _: kairship_core::api::CronJobActionRequest,
    ) -> Result<Object, ApiError> {
        Err(unused())
    }
    async fn list_workloads(
        &self,
        _: &Caller,
        r: ListWorkloadsRequest,
    ) -> Result<WorkloadList, ApiError> {
        let (items, pagination) = page_of(&self.workloads, &r.options);
        Ok(WorkloadList { items, pagination })
    }
    async fn get_workload(&self, _: &Caller, _: GetWorkloadRequest) -> Result<Workload, ApiError> {
        Err(unused())
    }
}

#[async_trait]
impl ApplicationsApi for InMemory {
    async fn create_application(
        &self,
        _: &Caller,
        _: kairship_core::api::CreateApplicationRequest,
    ) -> Result<kairship_core::api::ApplicationResult, ApiError> {
        Err(unused())
    }
}

// Placement previews and drift are not on the pages this bench measures.
impl PlacementApi for InMemory {}
impl DriftApi for InMemory {}
impl SearchApi for InMemory {}
#[async_trait]
impl AuditApi for InMemory {
    async fn list_audit(
        &self,
        _: &Caller,
        _: ListAuditRequest,
    ) -> Result<AuditRecordList, ApiError> {
        Err(unused())
    }
}

fn instance(i: usize) -> Value {
    json!({
        "apiVersion": "kairship.io/v1alpha1", "kind": "Instance",
        "metadata": {"name": format!("karmada-{i:02}"), "creationTimestamp": "2026-01-01T00:00:00Z",
            "labels": {"team": "platform"}},
        "spec": {"mode": "Adopt", "kubeconfigSecretRef": {"namespace": "kairship-system", "name": format!("karmada-{i:02}")}},
        "status": {"state": "RUNNING", "phase": "Active", "controlPlaneReady": true,
            "karmadaVersion": "v1.14.0", "kubernetesVersion": "v1.31.2",
            "summary": {
                "clusterSummary": {"totalNum": 3, "readyNum": 3},
                "nodeSummary": {"totalNum": 30, "readyNum": 29},
                "resourceSummary": {"allocatable": {"cpu": "240", "memory": "960Gi", "pods": "3300"},
                    "allocated": {"cpu": "87500m", "memory": "301Gi", "pods": "1200"}},
                "resourceTotalNum": {"services": 40, "secrets": 80, "configmaps": 60, "persistentvolumeclaims": 5},
                "policyTotalNum": {"propagationpolicies": 12, "overridepolicies": 4},
                "workloadSummary": {"deployments": {"totalNum": 5000, "readyNum": 4990}}}}
    })
}

fn deployment(i: usize) -> Value {
    let name = format!("app-{i:05}");
    json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": name, "namespace": "bench", "labels": {"app": name, "team": "bench"},
            "generation": 1},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": name}},
            "template": {"metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "web", "image": "nginx:1.27",
                    "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}},
        "status": {"replicas": 3, "readyReplicas": 3}
    })
}

fn workload(i: usize, deployment: Value) -> Workload {
    let clusters = ["member-1", "member-2", "member-3"]
        .iter()
        .map(|c| ClusterWorkloadStatus {
            cluster: (*c).to_owned(),
            scheduled_replicas: Some(1),
            replicas: Some(1),
            ready_replicas: Some(1),
            available_replicas: Some(1),
            updated_replicas: Some(1),
            applied: Some(true),
            health: Some("Healthy".into()),
            message: None,
        })
        .collect();
    Workload {
        name: format!("app-{i:05}"),
        namespace: "bench".into(),
        replicas: 3,
        ready_replicas: 3,
        available_replicas: 3,
        paused: false,
        binding: Some(format!("app-{i:05}-deployment")),
        policy: Some("bench/spread".into()),
        clusters,
        deployment,
    }
}

fn cluster(i: usize) -> Value {
    json!({
        "apiVersion": "cluster.karmada.io/v1alpha1", "kind": "Cluster",
        "metadata": {"name": format!("member-{i}")},
        "spec": {"syncMode": "Push", "provider": "aws", "region": "eu-west-1", "zone": format!("eu-west-1{}", ['a', 'b', 'c'][i % 3])},
        "status": {"kubernetesVersion": "v1.31.2",
            "conditions": [{"type": "Ready", "status": "True"}],
            "nodeSummary": {"totalNum": 10, "readyNum": 10},
            "resourceSummary": {"allocatable": {"cpu": "80", "memory": "320Gi"}, "allocated": {"cpu": "29", "memory": "100Gi"}}}
    })
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

async fn get(app: &axum::Router, path: &str, cookie: &str) -> (Duration, usize) {
    let start = Instant::now();
    let response = app
        .clone()
        .oneshot(
            http::Request::get(path)
                .header("cookie", cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await
        .unwrap();
    assert_eq!(response.status(), 200, "{path}");
    let body = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (start.elapsed(), body.len())
}

async fn measure(app: &axum::Router, path: &str, cookie: &str, name: &str) {
    let mut samples = Vec::with_capacity(ROUNDS);
    let mut bytes = 0;
    for _ in 0..ROUNDS {
        let (took, len) = get(app, path, cookie).await;
        samples.push(took);
        bytes = len;
    }
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!("BENCH {name}_p50_ms={:.2}", ms(percentile(&samples, 50.0)));
    println!("BENCH {name}_p99_ms={:.2}", ms(percentile(&samples, 99.0)));
    println!("BENCH {name}_bytes={bytes}");
    // Served uncompressed: the body is what goes over the wire (plus headers).
    println!("BENCH {name}_kb={:.1}", bytes as f64 / 1000.0);
}

async fn run() {
    let deployments: Vec<Value> = (0..WORKLOADS).map(deployment).collect();
    let api = InMemory {
        instances: (0..INSTANCES).map(instance).collect(),
        workloads: deployments
            .iter()
            .enumerate()
            .map(|(i, d)| workload(i, d.clone()))
            .collect(),
        deployments,
        clusters: (1..=3).map(cluster).collect(),
        policies: vec![
            json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "spread", "namespace": "bench"},
            "spec": {"resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"team": "bench"}}}],
                "placement": {"clusterAffinity": {"clusterNames": ["member-1", "member-2", "member-3"]}}}}),
        ],
    };
    let app = routes(ConsoleParts {
        api: Arc::new(api),
        authenticator: Arc::new(Token),
        authorizer: Arc::new(AllowAll),
        session_ttl: Duration::from_secs(3600),
        session_store: Arc::new(kairship_core::console::session::LocalSessionStore::new().unwrap()),
        oidc: None,
    });
    let signed_in = app
        .clone()
        .oneshot(
            http::Request::post("/ui/signin")
                .header("content-type", "application/x-www-form-urlencoded")
                .body(Body::from(format!("token={TOKEN}")))
                .unwrap(),
        )
        .await
        .unwrap();
    let cookie = signed_in.headers()["set-cookie"]
        .to_str()
        .unwrap()
        .split(';')
        .next()
        .unwrap()
        .to_owned();
    measure(&app, "/ui/instances?size=50", &cookie, "console_instances").await;
    measure(
        &app,
        "/ui/instances/karmada-00?ns=bench",
        &cookie,
        "console_overview",
    )
    .await;
    // The resource browser's list of the 5,000 Deployments: a default page (50) and the
    // largest page it shows (500).
    measure(
        &app,
        "/ui/instances/karmada-00/resources/apps/v1/deployments?ns=bench",
        &cookie,
        "console_browser_list",
    )
    .await;
    measure(
        &app,
        "/ui/instances/karmada-00/resources/apps/v1/deployments?ns=bench&size=500",
        &cookie,
        "console_browser_list_500",
    )
    .await;
}

fn main() {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
        .block_on(run());
}
