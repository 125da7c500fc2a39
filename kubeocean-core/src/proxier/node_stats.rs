//! Serving `/stats/summary` and `/metrics/resource`: ask the worker's node proxy for each
//! physical node behind the selected virtual nodes, then keep and rename what belongs to
//! virtual pods (see [`super::stats`]). A node the worker cannot answer for contributes an
//! empty summary (or no series) and a logged warning, so the answer is partial rather than
//! an error: metrics pipelines prefer a partial scrape to a failed one.

use std::collections::BTreeMap;
use std::time::Duration;

use http::{Request, Response, StatusCode};
use kube::Client;

use super::mapping::PodIndex;
use super::request::{KubeletRequest, worker_node_path};
use super::response::{ResponseBody, fixed};
use super::stats::{
    combine_metrics, combine_summaries, empty_summary, parse_metrics, render_metrics,
    rewrite_metrics, rewrite_summary,
};

/// Content type of the Prometheus text format the kubelet serves.
const PROMETHEUS_TEXT: &str = "text/plain; version=0.0.4; charset=utf-8";

/// What each selected node's fetch produced: `(virtual node, text or None)`.
pub type Fetched = Vec<(String, Option<String>)>;

/// Asks the worker for `request` on each physical node of `nodes` (virtual -> physical), at
/// once, each within `timeout`; `worker` is `None` when the worker cannot be reached at all.
/// `on_error` is called for each failed fetch.
pub async fn fetch(
    worker: Option<&Client>,
    request: &KubeletRequest,
    nodes: &BTreeMap<String, String>,
    timeout: Duration,
    on_error: impl Fn(&str, &str, &str),
) -> Fetched {
    let on_error = &on_error;
    let calls = nodes.iter().map(|(virtual_node, physical)| async move {
        let (Some(worker), Some(path)) = (worker, worker_node_path(request, physical)) else {
            return (virtual_node.clone(), None);
        };
        let call = match Request::get(path).body(Vec::new()) {
            Ok(call) => call,
            Err(err) => {
                on_error(virtual_node, physical, &err.to_string());
                return (virtual_node.clone(), None);
            }
        };
        match tokio::time::timeout(timeout, worker.request_text(call)).await {
            Ok(Ok(text)) => (virtual_node.clone(), Some(text)),
            Ok(Err(err)) => {
                on_error(
                    virtual_node,
                    physical,
                    &kube_kit::client::describe_kube_error(&err),
                );
                (virtual_node.clone(), None)
            }
            Err(_) => {
                on_error(
                    virtual_node,
                    physical,
                    &format!("no answer within {timeout:?}"),
                );
                (virtual_node.clone(), None)
            }
        }
    });
    futures::future::join_all(calls).await
}

/// The answer for node-level `request` from what was fetched.
pub fn answer(
    binding: &str,
    request: &KubeletRequest,
    fetched: Fetched,
    pods: &PodIndex,
) -> Response<ResponseBody> {
    match request {
        KubeletRequest::MetricsResource | KubeletRequest::MetricsCadvisor => {
            let per_node = fetched
                .into_iter()
                .filter_map(|(_, text)| text)
                .map(|text| rewrite_metrics(parse_metrics(&text), pods))
                .collect();
            fixed(
                StatusCode::OK,
                PROMETHEUS_TEXT,
                render_metrics(&combine_metrics(per_node)),
            )
        }
        _ => {
            let summaries = fetched
                .into_iter()
                .map(|(virtual_node, text)| {
                    match text.and_then(|t| serde_json::from_str(&t).ok()) {
                        Some(summary) => rewrite_summary(summary, &virtual_node, pods),
                        None => empty_summary(&virtual_node),
                    }
                })
                .collect();
            let body = combine_summaries(binding, summaries).to_string();
            fixed(StatusCode::OK, "application/json", body)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxier::mapping::VirtualPodRef;
    use http_body_util::BodyExt;
    use serde_json::{Value, json};

    async fn body(response: Response<ResponseBody>) -> String {
        let bytes = response.into_body().collect().await.unwrap().to_bytes();
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    #[tokio::test]
    async fn answers_are_partial_when_a_node_fails() {
        let pods = PodIndex::from([(
            ("m".to_owned(), "p-1".to_owned()),
            VirtualPodRef {
                namespace: "v".into(),
                name: "p".into(),
                uid: "u".into(),
            },
        )]);
        let summary = json!({"node": {"nodeName": "n1"}, "pods": [
            {"podRef": {"namespace": "m", "name": "p-1", "uid": "x"}}]});
        let fetched = vec![
            ("vnode-1".to_owned(), Some(summary.to_string())),
            ("vnode-2".to_owned(), None),
        ];
        let request = KubeletRequest::StatsSummary {
            only_cpu_and_memory: false,
        };
        let got: Value =
            serde_json::from_str(&body(answer("b1", &request, fetched, &pods)).await).unwrap();
        assert_eq!(got["node"]["nodeName"], "b1");
        assert_eq!(got["pods"][0]["podRef"]["name"], "p");

        let only_failed = vec![("vnode-2".to_owned(), Some("not json".to_owned()))];
        let got: Value =
            serde_json::from_str(&body(answer("b1", &request, only_failed, &pods)).await).unwrap();
        assert_eq!(got, empty_summary("vnode-2"));

        let metrics = vec![
            ("vnode-1".to_owned(), Some("node_cpu_usage_seconds_total 1 5\npod_memory_working_set_bytes{namespace=\"m\",pod=\"p-1\"} 7\n".to_owned())),
            ("vnode-2".to_owned(), None),
        ];
        let text = body(answer(
            "b1",
            &KubeletRequest::MetricsResource,
            metrics,
            &pods,
        ))
        .await;
        assert_eq!(
            text,
            "node_cpu_usage_seconds_total 1 5\npod_memory_working_set_bytes{namespace=\"v\",pod=\"p\"} 7\n"
        );
    }

    #[tokio::test]
    async fn no_worker_means_nothing_fetched() {
        let nodes = BTreeMap::from([("vnode-1".to_owned(), "n1".to_owned())]);
        let request = KubeletRequest::MetricsResource;
        let fetched = fetch(None, &request, &nodes, Duration::from_secs(1), |_, _, _| {
            panic!("no call expected")
        })
        .await;
        assert_eq!(fetched, vec![("vnode-1".to_owned(), None)]);
    }
}
