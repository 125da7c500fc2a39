//! Upstream Kubeocean's single-port cAdvisor endpoint: `GET http://{proxier}:9006/{vnode}/metrics`
//! answers the cAdvisor metrics of one virtual node, which users' Prometheus scrape jobs
//! reach through the virtual node's `kubeocean.io/prometheus-url` annotation
//! (`{proxierPodIP}:9006/{vnode}`; upstream `docs/metrics/vnode-cadvisor-metrics.md`,
//! "Solution 1"). As upstream (`pkg/proxier/vnode_http_server.go`, `createVNodeHandler`) it
//! is plain HTTP without authentication, on one port for every virtual node of the binding,
//! and answers 400 for a path of another shape and 404 for an unknown node.
//!
//! The metrics are the worker kubelet's `/metrics/cadvisor` of the physical node, reduced as
//! upstream's `MetricsParser.WritePrometheusMetrics` writes them: only containers of pods
//! mapped from virtual pods, labelled with the virtual pod's `namespace` and `pod`, the
//! virtual `node`, and `container` (`POD` as `pause`); the physical identifiers (`id`,
//! `image`, `name`) are left out.

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::sync::Arc;

use http::{Method, Request, Response, StatusCode};
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use super::mapping::{PodIndex, list_binding_nodes, list_virtual_pods};
use super::node_stats;
use super::request::KubeletRequest;
use super::response::{ResponseBody, fixed, text};
use super::server::Context;
use super::stats::{Family, parse_metrics, render_metrics};

/// The default port (upstream's `--prometheus-vnode-base-port`).
pub const DEFAULT_PORT: u16 = 9006;

/// Labels of the physical container that say nothing about the virtual one.
const PHYSICAL_LABELS: [&str; 3] = ["id", "image", "name"];

/// The virtual node a path `/{vnode}/metrics` names; `Err` with the status and message
/// upstream answers otherwise.
pub fn vnode_of_path(path: &str) -> Result<&str, (StatusCode, String)> {
    let parts: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    match parts.as_slice() {
        [vnode, "metrics"] if !vnode.is_empty() => Ok(vnode),
        [vnode, other, ..] if !vnode.is_empty() => Err((
            StatusCode::NOT_FOUND,
            format!("Endpoint '{other}' not found. Only /metrics is supported"),
        )),
        _ => Err((
            StatusCode::BAD_REQUEST,
            "Invalid path format. Expected: /{vnodename}/metrics".to_owned(),
        )),
    }
}

/// One physical node's cAdvisor families as upstream serves them for virtual node `vnode`.
pub fn vnode_cadvisor_metrics(
    mut families: Vec<Family>,
    pods: &PodIndex,
    vnode: &str,
) -> Vec<Family> {
    for family in &mut families {
        family.samples.retain_mut(|sample| {
            let (Some(namespace), Some(name), Some(container)) = (
                sample.label("namespace"),
                sample.label("pod"),
                sample.label("container"),
            ) else {
                return false;
            };
            if container.is_empty() {
                // The pod's own cgroup: upstream keeps containers only.
                return false;
            }
            let Some(virtual_pod) = pods.get(&(namespace.to_owned(), name.to_owned())) else {
                return false;
            };
            let container = if container == "POD" {
                "pause".to_owned()
            } else {
                container.to_owned()
            };
            let (namespace, name) = (virtual_pod.namespace.clone(), virtual_pod.name.clone());
            sample
                .labels
                .retain(|(key, _)| !PHYSICAL_LABELS.contains(&key.as_str()));
            sample.put_label("namespace", &namespace);
            sample.put_label("pod", &name);
            sample.put_label("container", &container);
            sample.put_label("node", vnode);
            true
        });
    }
    families.retain(|f| !f.samples.is_empty());
    families
}

/// Content type of the Prometheus text format.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// Serves `listener` until `stop`.
pub(crate) async fn serve(context: Arc<Context>, listener: TcpListener, stop: CancellationToken) {
    let connections = TaskTracker::new();
    loop {
        let accepted = tokio::select! {
            () = stop.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let stream = match accepted {
            Ok((stream, _)) => stream,
            Err(err) => {
                tracing::warn!(error = %err, "accepting a metrics connection failed");
                tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                continue;
            }
        };
        let context = context.clone();
        let stop = stop.clone();
        connections.spawn(async move {
            let service = service_fn(move |request| {
                let context = context.clone();
                async move { Ok::<_, Infallible>(handle(&context, request).await) }
            });
            let builder = auto::Builder::new(TokioExecutor::new());
            let conn = builder.serve_connection(TokioIo::new(stream), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                () = stop.cancelled() => conn.as_mut().graceful_shutdown(),
            }
        });
    }
    connections.close();
    connections.wait().await;
}

async fn handle(context: &Context, request: Request<Incoming>) -> Response<ResponseBody> {
    if request.method() != Method::GET {
        return text(StatusCode::METHOD_NOT_ALLOWED, "Only GET is supported");
    }
    let vnode = match vnode_of_path(request.uri().path()) {
        Ok(vnode) => vnode.to_owned(),
        Err((status, message)) => {
            return text(status, format!("Error {}: {message}", status.as_u16()));
        }
    };
    let computing_failure = |what: &str, e: kube::Error| {
        text(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!(
                "cannot list {what} in the computing cluster: {}",
                kube_kit::client::describe_kube_error(&e)
            ),
        )
    };
    let nodes = match list_binding_nodes(&context.computing, &context.binding).await {
        Ok(nodes) => nodes,
        Err(e) => return computing_failure("virtual nodes", e),
    };
    let Some(physical) = nodes.get(&vnode) else {
        return text(
            StatusCode::NOT_FOUND,
            format!("Error 404: VNode '{vnode}' not found"),
        );
    };
    let selected = BTreeMap::from([(vnode.clone(), physical.clone())]);
    let pods = match list_virtual_pods(&context.computing, selected.keys()).await {
        Ok(pods) => pods,
        Err(e) => return computing_failure("virtual pods", e),
    };
    let worker = match context.worker.get().await {
        Ok(worker) => worker,
        Err(err) => {
            return text(
                StatusCode::SERVICE_UNAVAILABLE,
                format!("worker cluster unavailable: {err}"),
            );
        }
    };
    let fetched = node_stats::fetch(
        Some(&worker),
        &KubeletRequest::MetricsCadvisor,
        &selected,
        context.stats_timeout,
        |virtual_node, physical, error| {
            tracing::warn!(
                virtual_node,
                physical_node = physical,
                error,
                "worker did not answer the node's cAdvisor metrics"
            );
        },
    )
    .await;
    let Some(text_body) = fetched.into_iter().find_map(|(_, text)| text) else {
        return text(
            StatusCode::BAD_GATEWAY,
            format!(
                "the worker cluster did not answer the cAdvisor metrics of {physical}, the physical node of {vnode}"
            ),
        );
    };
    let families = vnode_cadvisor_metrics(parse_metrics(&text_body), &pods, &vnode);
    fixed(StatusCode::OK, PROMETHEUS_TEXT, render_metrics(&families))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxier::mapping::VirtualPodRef;

    #[test]
    fn paths() {
        assert_eq!(vnode_of_path("/vnode-a/metrics"), Ok("vnode-a"));
        for (path, status) in [
            ("/vnode-a/stats", StatusCode::NOT_FOUND),
            ("/vnode-a", StatusCode::BAD_REQUEST),
            ("/", StatusCode::BAD_REQUEST),
            ("//metrics", StatusCode::BAD_REQUEST),
        ] {
            assert_eq!(vnode_of_path(path).map_err(|e| e.0), Err(status), "{path}");
        }
    }

    #[test]
    fn only_mapped_containers_under_their_virtual_names() {
        let text = r#"# HELP container_cpu_usage_seconds_total Cumulative cpu time consumed in seconds.
# TYPE container_cpu_usage_seconds_total counter
container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/burstable/pod1/abc",image="nginx",name="abc",namespace="mount",pod="web-123"} 12.5 1700000000000
container_cpu_usage_seconds_total{container="POD",cpu="total",id="/kubepods/burstable/pod1/def",image="pause",name="def",namespace="mount",pod="web-123"} 0.1 1700000000000
container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/burstable/pod1",image="",name="",namespace="mount",pod="web-123"} 12.6 1700000000000
container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/x",image="db",name="x",namespace="default",pod="online-1"} 3 1700000000000
container_cpu_usage_seconds_total{cpu="total",id="/"} 100 1700000000000
# HELP machine_cpu_cores Number of logical CPU cores.
# TYPE machine_cpu_cores gauge
machine_cpu_cores 8
"#;
        let pods = PodIndex::from([(
            ("mount".to_owned(), "web-123".to_owned()),
            VirtualPodRef {
                namespace: "team".into(),
                name: "web".into(),
                uid: "u".into(),
            },
        )]);
        let rendered = render_metrics(&vnode_cadvisor_metrics(
            parse_metrics(text),
            &pods,
            "vnode-w1-n1",
        ));
        let series: Vec<&str> = rendered.lines().filter(|l| !l.starts_with('#')).collect();
        assert_eq!(series.len(), 2, "{rendered}");
        for line in &series {
            assert!(line.contains(r#"namespace="team""#), "{line}");
            assert!(line.contains(r#"pod="web""#), "{line}");
            assert!(line.contains(r#"node="vnode-w1-n1""#), "{line}");
            for physical in ["id=", "image=", "name=", "mount", "web-123"] {
                assert!(!line.contains(physical), "{line}");
            }
        }
        assert!(series[0].contains(r#"container="app""#));
        assert!(series[1].contains(r#"container="pause""#));
        assert!(!rendered.contains("machine_cpu_cores"), "{rendered}");
        assert!(!rendered.contains("online-1"), "{rendered}");
    }
}
