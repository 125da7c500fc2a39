//! Kubeconfig download: `/ui/instances/{i}/kubeconfig` offers what `CreateKubeconfig` offers
//! (a kubeconfig reaching the instance through Kairship's native proxy with the signed-in
//! user's own token; the address clients reach Kairship at), and its CSRF-checked POST answers
//! the API's kubeconfig as a file. The file holds the user's token: it is never written into a
//! page, never logged, and answered with `Cache-Control: no-store`.

use axum::Router;
use axum::extract::{Path, State};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use http::{HeaderMap, HeaderValue, StatusCode, header};

use crate::api::{ApiError, CreateKubeconfigRequest, KubeconfigResponse};
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, page, post_form};
use crate::console::request::{Shared, SignedForm, SignedIn, html, status_of};
use crate::transport::{ServedOverTls, request_base_url};

/// The kubeconfig routes.
pub(in crate::console) fn routes() -> Router<Shared> {
    Router::new().route(
        "/ui/instances/{instance}/kubeconfig",
        get(form).post(download),
    )
}

/// Where the kubeconfig page of `instance` is.
pub fn kubeconfig_url(instance: &str) -> String {
    format!("/ui/instances/{}/kubeconfig", url_segment(instance))
}

/// The file name a kubeconfig of `instance` is saved as: `<instance>.kubeconfig`, with
/// anything but letters, digits, `-`, `_` and `.` replaced (an instance name is a DNS label
/// already; this keeps the header well-formed whatever it is).
pub fn file_name(instance: &str) -> String {
    let safe: String = instance
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("{safe}.kubeconfig")
}

/// The `server` field as the API takes it: absent when left empty.
pub fn server_field(value: Option<&String>) -> Option<String> {
    value
        .map(|v| v.trim())
        .filter(|v| !v.is_empty())
        .map(str::to_owned)
}

/// The kubeconfig page: what the file gives, and the form.
pub fn kubeconfig_page(
    viewer: &Viewer<'_>,
    instance: &str,
    request_server: Option<&str>,
    server: &str,
    err: Option<&ApiError>,
) -> String {
    let base = format!("/ui/instances/{}", url_segment(instance));
    let mut h = Html::new();
    h.open("h1", &[])
        .raw("Kubeconfig of ")
        .text(instance)
        .close("h1");
    h.open("p", &[("class", "crumbs")])
        .el("a", &[("href", &base)], instance)
        .close("p");
    h.raw("<p>A kubeconfig for <code>kubectl</code> and any Kubernetes client: it reaches the instance through Kairship's native proxy with <strong>your own token</strong>, so Kairship's rules and the instance's RBAC apply to it as to this console. Keep it as safe as the token. Its context's namespace is <code>default</code>.</p>");
    post_form(&mut h, err, &kubeconfig_url(instance), viewer.csrf);
    h.raw("<label>Server: the address clients reach Kairship at (empty: the server's configured external address, else ");
    h.text(request_server.unwrap_or("the one this page came from"));
    h.raw(") ");
    h.open(
        "input",
        &[
            ("name", "server"),
            ("id", "server"),
            ("value", server),
            (
                "placeholder",
                request_server.unwrap_or("https://kairship.example.com"),
            ),
        ],
    );
    h.raw("</label>");
    h.raw("<button id=\"kubeconfig-download\" type=\"submit\">Download kubeconfig</button> ");
    crate::console::page::cancel_form(&mut h, &base);
    page(&format!("Kubeconfig of {instance}"), Some(viewer), h)
}

/// The kubeconfig as a file to save: never cached, named after the instance.
pub fn attachment(answer: &KubeconfigResponse) -> Response {
    let mut response = (StatusCode::OK, answer.kubeconfig.clone()).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/yaml; charset=utf-8"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    if let Ok(v) = HeaderValue::from_str(&format!(
        "attachment; filename=\"{}\"",
        file_name(&answer.instance)
    )) {
        headers.insert(header::CONTENT_DISPOSITION, v);
    }
    response
}

async fn form(
    headers: HeaderMap,
    uri: http::Uri,
    tls: Option<axum::Extension<ServedOverTls>>,
    Path(instance): Path<String>,
    signed: SignedIn,
) -> Response {
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let request_server = request_base_url(&headers, &uri, tls);
    html(
        StatusCode::OK,
        kubeconfig_page(
            &signed.viewer(),
            &instance,
            request_server.as_deref(),
            "",
            None,
        ),
    )
}

/// `POST /ui/instances/{i}/kubeconfig`: the API's `CreateKubeconfig` with the session's token,
/// answered as a file; a refusal shows the form again with the API's message.
async fn download(
    State(console): State<Shared>,
    headers: HeaderMap,
    uri: http::Uri,
    tls: Option<axum::Extension<ServedOverTls>>,
    Path(instance): Path<String>,
    SignedForm { signed, fields }: SignedForm,
) -> Response {
    let tls = tls.is_some_and(|axum::Extension(t)| t.0);
    let request_server = request_base_url(&headers, &uri, tls);
    let server = server_field(fields.get("server"));
    let req = CreateKubeconfigRequest {
        instance: instance.clone(),
        server: server.clone(),
        request_server: request_server.clone(),
    };
    match console
        .api
        .create_kubeconfig(&signed.caller, &signed.session.token, req)
        .await
    {
        Ok(answer) => attachment(&answer),
        Err(err) => html(
            status_of(&err),
            kubeconfig_page(
                &signed.viewer(),
                &instance,
                request_server.as_deref(),
                server.as_deref().unwrap_or_default(),
                Some(&err),
            ),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_stay_inside_the_header() {
        for (instance, want) in [
            ("karmada-a", "karmada-a.kubeconfig"),
            ("a\"b", "a_b.kubeconfig"),
            ("x;y\r\nz", "x_y__z.kubeconfig"),
        ] {
            assert_eq!(file_name(instance), want, "{instance}");
        }
    }

    #[test]
    fn an_empty_server_is_left_to_the_api() {
        assert_eq!(server_field(None), None);
        assert_eq!(server_field(Some(&"  ".to_owned())), None);
        assert_eq!(
            server_field(Some(&" https://k.example.com ".to_owned())).as_deref(),
            Some("https://k.example.com")
        );
    }

    #[test]
    fn the_file_is_an_uncached_attachment() {
        let r = attachment(&KubeconfigResponse {
            instance: "karmada-a".into(),
            server: "http://x/proxy".into(),
            kubeconfig: "apiVersion: v1\n".into(),
        });
        let h = r.headers();
        assert_eq!(
            h[header::CONTENT_DISPOSITION],
            "attachment; filename=\"karmada-a.kubeconfig\""
        );
        assert_eq!(h[header::CACHE_CONTROL], "no-store");
        assert!(
            h[header::CONTENT_TYPE]
                .to_str()
                .unwrap()
                .starts_with("application/yaml")
        );
    }

    #[test]
    fn the_page_escapes_and_carries_the_csrf_token() {
        let viewer = Viewer {
            user: "u",
            csrf: "tok",
        };
        let page = kubeconfig_page(
            &viewer,
            "i<1>",
            Some("http://h\"x"),
            "",
            Some(&ApiError::invalid_field("server", "bad <url>")),
        );
        assert!(page.contains("value=\"tok\""), "{page}");
        assert!(
            page.contains("bad &lt;url&gt;") && !page.contains("i<1>"),
            "{page}"
        );
        assert!(page.contains("http://h&quot;x"), "{page}");
        assert!(
            page.contains("action=\"/ui/instances/i%3C1%3E/kubeconfig\""),
            "{page}"
        );
    }
}
