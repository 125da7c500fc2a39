//! Member pods in the console, reached from a workload's pods per cluster: a pod page (its
//! containers, each with a link to its logs and, for who may run commands in the instance,
//! to a terminal), a logs page that follows a container's log ([`logs`]) and a terminal page
//! with a shell in the container ([`terminal`]). Both stream over WebSocket endpoints
//! ([`websocket`]: same origin, valid session, CSRF token) to a small script served with the
//! console (`assets/pod-stream.js`), and reach the member through Karmada's cluster proxy as
//! the signed-in user ([`KairshipApi::member_pod_log`](crate::api::WorkloadsApi::member_pod_log),
//! [`member_pod_exec`](crate::api::WorkloadsApi::member_pod_exec)). Nothing of a stream is
//! logged.

pub mod logs;
pub mod terminal;
pub mod websocket;

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, StatusCode, header};
use serde_json::Value;

use crate::access::{InstanceResource, Verb};
use crate::api::members::streams::MemberPod;
use crate::api::{ApiError, GetMemberObjectRequest, Object};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, live_error, live_open, page};
use crate::console::request::{
    Console, Shared, SignedIn, allowed, error_answer, html, is_htmx, status_of,
};

/// The id of the pod page's live part.
const LIVE_ID: &str = "pod-live";

/// The script of the logs and terminal pages.
pub const POD_STREAM_JS: &str = include_str!("../assets/pod-stream.js");

/// Where the page of a member pod is.
pub fn pod_url(instance: &str, cluster: &str, namespace: &str, pod: &str) -> String {
    format!(
        "/ui/instances/{}/members/{}/namespaces/{}/pods/{}",
        url_segment(instance),
        url_segment(cluster),
        url_segment(namespace),
        url_segment(pod)
    )
}

/// The path parameters of every pod route: which member pod.
#[derive(Clone, Debug, serde::Deserialize)]
pub struct PodPath {
    /// Instance name.
    pub instance: String,
    /// Member cluster name.
    pub cluster: String,
    /// Namespace of the pod.
    pub namespace: String,
    /// Pod name.
    pub pod: String,
}

impl PodPath {
    fn url(&self) -> String {
        pod_url(&self.instance, &self.cluster, &self.namespace, &self.pod)
    }

    fn member_pod(&self, container: Option<String>) -> MemberPod {
        MemberPod {
            instance: self.instance.clone(),
            cluster: self.cluster.clone(),
            namespace: self.namespace.clone(),
            pod: self.pod.clone(),
            container: container.filter(|c| !c.is_empty()),
        }
    }
}

/// The pod, read from its member as the caller.
async fn load_pod(
    console: &Console,
    caller: &crate::access::Caller,
    p: &PodPath,
) -> Result<Object, ApiError> {
    console
        .api
        .get_member_object(
            caller,
            GetMemberObjectRequest {
                instance: p.instance.clone(),
                cluster: p.cluster.clone(),
                group: "core".into(),
                version: "v1".into(),
                resource: "pods".into(),
                namespace: Some(p.namespace.clone()),
                name: p.pod.clone(),
            },
        )
        .await
}

/// The names of a pod's containers (init containers after the others).
pub fn container_names(pod: &Value) -> Vec<String> {
    ["/spec/containers", "/spec/initContainers"]
        .iter()
        .filter_map(|p| pod.pointer(p).and_then(Value::as_array))
        .flatten()
        .filter_map(|c| c["name"].as_str().map(str::to_owned))
        .collect()
}

/// Whether the caller may run commands in pods of the instance (`create` on its proxy, as
/// `pods/exec` is authorized).
async fn may_exec(console: &Console, caller: &crate::access::Caller, instance: &str) -> bool {
    allowed(
        console,
        caller,
        Verb::Create,
        InstanceResource::Proxy,
        instance,
    )
    .await
}

/// The heading every pod page shares: the pod, its member cluster and namespace.
fn heading(h: &mut Html, title: &str, p: &PodPath) {
    h.open("h1", &[])
        .text(title)
        .raw(" ")
        .text(&p.pod)
        .close("h1");
    h.raw("<p class=\"facts muted\">member cluster ")
        .el("strong", &[("id", "pod-cluster")], &p.cluster)
        .raw(" · namespace ")
        .el("strong", &[], &p.namespace)
        .raw(" · instance ")
        .open(
            "a",
            &[(
                "href",
                &format!("/ui/instances/{}", url_segment(&p.instance)),
            )],
        )
        .text(&p.instance)
        .raw("</a></p>");
}

/// The pod page: phase, node and, per container, its image and links.
pub fn pod_page(viewer: &Viewer<'_>, p: &PodPath, pod: &Value, can_exec: bool) -> String {
    let mut h = Html::new();
    heading(&mut h, "Pod", p);
    let base = p.url();
    live_open(&mut h, "div", LIVE_ID, &base);
    let text = |ptr: &str| pod.pointer(ptr).and_then(Value::as_str).unwrap_or("–");
    h.raw("<dl class=\"facts\"><dt>Phase</dt>")
        .el("dd", &[("id", "pod-phase")], text("/status/phase"))
        .raw("<dt>Node</dt>")
        .el("dd", &[], text("/spec/nodeName"))
        .raw("<dt>Pod IP</dt>")
        .el("dd", &[], text("/status/podIP"))
        .raw("</dl>");
    h.raw("<section><h2>Containers</h2><table id=\"containers\" class=\"list\"><thead><tr><th>Name</th><th>Image</th><th></th></tr></thead><tbody>");
    let images: Vec<(String, String)> = ["/spec/containers", "/spec/initContainers"]
        .iter()
        .filter_map(|ptr| pod.pointer(ptr).and_then(Value::as_array))
        .flatten()
        .map(|c| {
            (
                c["name"].as_str().unwrap_or_default().to_owned(),
                c["image"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    for (name, image) in &images {
        let q = url_segment(name);
        h.open("tr", &[("data-container", name)])
            .el("td", &[], name)
            .el("td", &[], image)
            .raw("<td>")
            .el(
                "a",
                &[
                    ("class", "logs"),
                    ("href", &format!("{base}/logs?container={q}")),
                ],
                "Logs",
            );
        if can_exec {
            h.raw(" · ").el(
                "a",
                &[
                    ("class", "terminal"),
                    ("href", &format!("{base}/terminal?container={q}")),
                ],
                "Terminal",
            );
        }
        h.raw("</td></tr>");
    }
    h.raw("</tbody></table></section></div>");
    page(&format!("Pod {}", p.pod), Some(viewer), h)
}

/// The pod a page of it is about, read as the signed-in caller; else the answer: the API's
/// error page, or (`refreshing`, a live part's refresh) that part holding the error.
async fn pod_or_answer(
    console: &Console,
    signed: &SignedIn,
    p: &PodPath,
    refreshing: bool,
) -> Result<Object, Response> {
    load_pod(console, &signed.caller, p)
        .await
        .map_err(|err| match refreshing {
            true => html(status_of(&err), live_error(LIVE_ID, &p.url(), &err)),
            false => error_answer(signed, &p.pod, &err),
        })
}

/// `GET …/members/{cluster}/namespaces/{namespace}/pods/{pod}` (also the refresh of its
/// live part).
async fn pod(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(p): Path<PodPath>,
    signed: SignedIn,
) -> Response {
    let object = match pod_or_answer(&console, &signed, &p, is_htmx(&headers)).await {
        Ok(object) => object,
        Err(answer) => return answer,
    };
    let can_exec = may_exec(&console, &signed.caller, &p.instance).await;
    html(
        StatusCode::OK,
        pod_page(&signed.viewer(), &p, &object, can_exec),
    )
}

async fn script() -> Response {
    (
        [
            (header::CONTENT_TYPE, "text/javascript; charset=utf-8"),
            (header::CACHE_CONTROL, "public, max-age=3600"),
        ],
        POD_STREAM_JS,
    )
        .into_response()
}

/// The pod routes (under `/ui/instances/{instance}/members/{cluster}`).
pub(super) fn routes() -> Router<Shared> {
    let p = "/ui/instances/{instance}/members/{cluster}/namespaces/{namespace}/pods/{pod}";
    Router::new()
        .route("/ui/assets/pod-stream.js", get(script))
        .route(p, get(pod))
        .route(&format!("{p}/logs"), get(logs::show))
        .route(&format!("{p}/logs/stream"), get(logs::stream))
        .route(&format!("{p}/terminal"), get(terminal::show))
        .route(&format!("{p}/terminal/stream"), get(terminal::stream))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn path() -> PodPath {
        PodPath {
            instance: "karmada-a".into(),
            cluster: "a-east".into(),
            namespace: "demo".into(),
            pod: "web-1<b>".into(),
        }
    }

    #[test]
    fn the_pod_page_links_logs_and_a_terminal_only_for_who_may_exec() {
        let viewer = Viewer {
            user: "admin",
            csrf: "t",
        };
        let pod = json!({
            "spec": {"nodeName": "n1", "containers": [{"name": "app", "image": "nginx<1>"}]},
            "status": {"phase": "Running"}
        });
        let with = pod_page(&viewer, &path(), &pod, true);
        assert!(
            with.contains("/pods/web-1%3Cb%3E/logs?container=app"),
            "{with}"
        );
        assert!(
            with.contains("/pods/web-1%3Cb%3E/terminal?container=app"),
            "{with}"
        );
        assert!(
            with.contains("web-1&lt;b&gt;") && !with.contains("web-1<b>"),
            "{with}"
        );
        assert!(with.contains("nginx&lt;1&gt;"), "{with}");
        let without = pod_page(&viewer, &path(), &pod, false);
        assert!(without.contains("/logs?container=app"), "{without}");
        assert!(!without.contains("terminal"), "{without}");
    }

    #[test]
    fn containers_are_listed_init_last() {
        let pod = json!({"spec": {
            "initContainers": [{"name": "setup"}],
            "containers": [{"name": "app"}, {"name": "sidecar"}]
        }});
        assert_eq!(container_names(&pod), ["app", "sidecar", "setup"]);
        assert!(container_names(&json!({})).is_empty());
    }
}
