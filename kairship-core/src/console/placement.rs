//! The console's placement preview: the application form posted to
//! `/ui/instances/{i}/applications/placement` (CSRF-checked like every form) answers where
//! Karmada would place the workload, with the replicas per cluster and why each other cluster
//! is left out, through [`PlacementApi`](crate::api::PlacementApi); the form comes back as
//! typed, ready to create.

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::response::Response;
use axum::routing::post;
use http::{HeaderMap, StatusCode};

use super::applications::{AppForm, application_page};
use super::html::Html;
use super::page::{error_box, notice_box};
use super::request::{Shared, allowed, html, signed_post, status_of};
use crate::access::{InstanceResource, Verb};
use crate::api::{ApiError, PlacementPreview, PlacementPreviewSpec, PreviewPlacementRequest};

/// The console routes of this module (merged into [`super::routes`]): the form's
/// [`placement_preview_url`](super::applications::placement_preview_url).
pub(super) fn routes() -> Router<Shared> {
    Router::new().route(
        "/ui/instances/{instance}/applications/placement",
        post(preview_submit),
    )
}

/// The preview's table: chosen clusters with their replicas, then every other cluster with its
/// reason.
pub fn preview_html(preview: &Result<PlacementPreview, ApiError>) -> Html {
    let mut h = Html::new();
    h.open("section", &[("id", "placement-preview")]);
    h.raw("<h2>Placement preview</h2>");
    match preview {
        Err(err) => error_box(&mut h, err),
        Ok(p) => {
            match &p.message {
                Some(message) => {
                    notice_box(&mut h, &format!("Nothing would be scheduled: {message}"))
                }
                None => notice_box(
                    &mut h,
                    "Where Karmada would place the workload; nothing was created.",
                ),
            }
            h.raw("<table id=\"placement\" class=\"list\"><thead><tr><th>Cluster</th><th>Replicas</th><th>Why not</th></tr></thead><tbody>");
            for t in &p.clusters {
                h.open("tr", &[("data-cluster", &t.cluster), ("class", "chosen")])
                    .el("td", &[], &t.cluster)
                    .raw("<td class=\"replicas\">")
                    .num(t.replicas)
                    .raw("</td><td></td></tr>");
            }
            for l in &p.left_out {
                let exclusion = serde_json::to_value(l.exclusion)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_owned))
                    .unwrap_or_default();
                h.open("tr", &[("data-cluster", &l.cluster), ("class", "left-out")])
                    .el("td", &[], &l.cluster)
                    .raw("<td class=\"replicas\">–</td>")
                    .open("td", &[("class", "reason"), ("data-exclusion", &exclusion)])
                    .text(&l.reason)
                    .close("td")
                    .close("tr");
            }
            h.raw("</tbody></table>");
        }
    }
    h.close("section");
    h
}

/// The application page with the preview where the form shows its outcomes.
pub fn page_with_preview(form_page: String, preview: Html) -> String {
    const RESULT: &str = "<div id=\"app-result\">";
    match form_page.find(RESULT) {
        Some(at) => {
            let mut out = form_page;
            out.insert_str(at + RESULT.len(), &preview.finish());
            out
        }
        None => form_page,
    }
}

async fn preview_submit(
    State(console): State<Shared>,
    headers: HeaderMap,
    Path(instance): Path<String>,
    body: Bytes,
) -> Response {
    let (signed, fields) = match signed_post(&console, &headers, &body).await {
        Ok(s) => s,
        Err(r) => return r,
    };
    let form = AppForm::from_fields(&fields);
    let preview = match form.spec(true) {
        Ok(spec) => {
            let req = PreviewPlacementRequest {
                instance: instance.clone(),
                preview: PlacementPreviewSpec {
                    placement: Some(spec.placement),
                    workload: Some(spec.workload),
                    ..PlacementPreviewSpec::default()
                },
            };
            console.api.preview_placement(&signed.caller, req).await
        }
        Err(err) => Err(err),
    };
    let status = match &preview {
        Ok(_) => StatusCode::OK,
        Err(err) => status_of(err),
    };
    let can_create = allowed(
        &console,
        &signed.caller,
        Verb::Create,
        InstanceResource::Proxy,
        &instance,
    )
    .await;
    let form_page = application_page(&signed.viewer(), &instance, &form, can_create, None);
    html(status, page_with_preview(form_page, preview_html(&preview)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::placement::{PreviewLeftOut, PreviewTarget};
    use crate::scheduling::Exclusion;

    #[test]
    fn the_preview_lists_clusters_replicas_and_reasons() {
        let preview = Ok(PlacementPreview {
            replicas: 3,
            replica_scheduling_type: "Divided".into(),
            clusters: vec![PreviewTarget {
                cluster: "east".into(),
                replicas: 3,
            }],
            left_out: vec![PreviewLeftOut {
                cluster: "<west>".into(),
                exclusion: Exclusion::Taint,
                reason: "cluster(s) had untolerated taint {a=<b>:NoSchedule}".into(),
            }],
            message: None,
        });
        let section = preview_html(&preview).finish();
        assert!(section.contains("data-cluster=\"east\""), "{section}");
        assert!(section.contains("data-exclusion=\"Taint\""), "{section}");
        assert!(section.contains("&lt;west&gt;"), "{section}");
        assert!(!section.contains("<b>"), "{section}");
        let page = page_with_preview(
            "<main><div id=\"app-result\"></div></main>".into(),
            preview_html(&preview),
        );
        assert!(
            page.contains("<div id=\"app-result\"><section id=\"placement-preview\">"),
            "{page}"
        );
    }
}
