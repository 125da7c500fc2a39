//! metrics-server's scrape loop (kubernetes-sigs/metrics-server `pkg/server/server.go`,
//! `runScrape`, and `pkg/scraper/scraper.go`, `Scrape`): every `--metric-resolution` it
//! reads `/metrics/resource` of every Node at once, each within `--kubelet-request-timeout`,
//! and stores the batch; a node that fails is logged and left out of that batch.
//!
//! Where metrics-server dials the node's address and kubelet port itself, the sandbox goes
//! through the API server's own node proxy (`nodes/{name}/proxy/metrics/resource`), which
//! dials the same address and port: a simulated node answers in process, any other node
//! (a virtual node's proxier) over HTTPS. The path is the node's
//! `metrics.k8s.io/resource-metrics-path` annotation when set, as in
//! `pkg/scraper/client/resource/client.go`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use http::StatusCode;
use serde_json::{Value, json};

use super::Simulator;
use super::metrics_server::{MetricsBatch, decode_resource_metrics};
use crate::apiserver::resources::GroupResource;
use crate::apiserver::write_options::WriteContext;
use crate::sim::controllers::objects::at;

/// The node annotation naming another resource metrics path.
pub const RESOURCE_METRICS_PATH_ANNOTATION: &str = "metrics.k8s.io/resource-metrics-path";

/// Largest `/metrics/resource` answer read.
const MAX_SCRAPE_BYTES: usize = 64 * 1024 * 1024;

/// Scrapes every node each `metric_resolution` until the cluster shuts down.
pub async fn run(sim: Arc<Simulator>) {
    let Some(options) = sim.state.options.metrics_server.clone() else {
        return;
    };
    register_api_service(&sim);
    let mut ticker = tokio::time::interval(options.metric_resolution);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            () = sim.state.shutdown.cancelled() => return,
            _ = ticker.tick() => {}
        }
        let batch = scrape(&sim, options.kubelet_request_timeout).await;
        sim.metrics_storage().store(batch);
    }
}

/// One scrape of every node.
pub async fn scrape(sim: &Arc<Simulator>, timeout: Duration) -> MetricsBatch {
    let nodes = sim
        .state
        .store
        .list(&GroupResource::new("", "nodes"), None, None, 0, &|_| true)
        .items;
    let calls = nodes
        .iter()
        .map(|node| scrape_node(sim.clone(), node.value.clone(), timeout));
    let mut batch = MetricsBatch::default();
    for node_batch in futures::future::join_all(calls).await.into_iter().flatten() {
        batch.merge(node_batch);
    }
    batch
}

fn is_ready(node: &Value) -> bool {
    at(node, &["status", "conditions"])
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .find(|c| c["type"] == "Ready")
        .is_some_and(|c| c["status"] == "True")
}

/// One node's batch; `None` (and a log line) when it cannot be read.
async fn scrape_node(sim: Arc<Simulator>, node: Value, timeout: Duration) -> Option<MetricsBatch> {
    let name = at(&node, &["metadata", "name"])?.as_str()?.to_owned();
    let path = at(
        &node,
        &["metadata", "annotations", RESOURCE_METRICS_PATH_ANNOTATION],
    )
    .and_then(Value::as_str)
    .filter(|p| p.starts_with('/'))
    .unwrap_or("/metrics/resource");
    let request = http::Request::get(format!("/api/v1/nodes/{name}/proxy{path}"))
        .body(Body::empty())
        .ok()?;
    let request_time = jiff::Timestamp::now().as_millisecond();
    let failed = |err: String| {
        // metrics-server logs failures of nodes that are not Ready at a low level only.
        if is_ready(&node) {
            tracing::warn!(node = name.as_str(), "Failed to scrape node: {err}");
        } else {
            tracing::debug!(
                node = name.as_str(),
                "Failed to scrape node, node is not ready: {err}"
            );
        }
        None
    };
    let scraped = async {
        let response = super::node_proxy::serve_node(sim.clone(), request, &name)
            .await
            .map_err(|e| e.message)?;
        let status = response.status();
        let body = axum::body::to_bytes(response.into_body(), MAX_SCRAPE_BYTES)
            .await
            .map_err(|e| format!("failed to read response body - {e}"))?;
        if status != StatusCode::OK {
            return Err(format!("request failed, status: {status}"));
        }
        Ok(body)
    };
    let body = match tokio::time::timeout(timeout, scraped).await {
        Ok(Ok(body)) => body,
        Ok(Err(err)) => return failed(err),
        Err(_) => {
            return failed(format!(
                "timeout to access kubelet (no answer within {timeout:?})"
            ));
        }
    };
    let text = String::from_utf8_lossy(&body);
    Some(decode_resource_metrics(&text, request_time, &name))
}

/// The APIService through which a real cluster serves `metrics.k8s.io` (metrics-server's
/// `manifests/base/apiservice.yaml`), Available as kube-aggregator reports it.
fn register_api_service(sim: &Simulator) {
    let state = &sim.state;
    let Some(rt) = state.resource_type("apiregistration.k8s.io", "apiservices") else {
        return;
    };
    let ctx = WriteContext::system("metrics-server");
    let body = json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": {"k8s-app": "metrics-server"}},
        "spec": {"service": {"name": "metrics-server", "namespace": "kube-system", "port": 443},
                 "group": "metrics.k8s.io", "version": "v1beta1",
                 "insecureSkipTLSVerify": true, "groupPriorityMinimum": 100,
                 "versionPriority": 100},
    });
    let Ok(created) = state.create(&rt, "v1", "", body, &ctx) else {
        return;
    };
    let mut with_status = created.value.clone();
    with_status["status"] = json!({"conditions": [{
        "type": "Available", "status": "True", "reason": "Passed",
        "message": "all checks passed",
        "lastTransitionTime": crate::apiserver::meta::now_rfc3339(),
    }]});
    let _ = state.update(
        &rt,
        "v1",
        "",
        "v1beta1.metrics.k8s.io",
        with_status,
        Some("status"),
        &ctx,
    );
}
