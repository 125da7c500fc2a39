//! The logs page of a member pod's container: the container, previous, since and tail chosen
//! in a form (a plain GET), and the log followed over the page's WebSocket
//! (`…/logs/stream`): log bytes arrive as binary messages, a text message says why the stream
//! ended (the API's `{code, message}` when it was refused).

use std::collections::HashMap;

use axum::extract::{Path, Query, Request, State};
use axum::response::Response;
use futures::{SinkExt, StreamExt};
use http::StatusCode;
use tokio_tungstenite::tungstenite::Message;

use super::websocket;
use super::{PodPath, container_names, heading, pod_or_answer};
use crate::api::ApiError;
use crate::api::members::streams::LogOptions;
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, error_box, page};
use crate::console::request::{Shared, SignedIn, html, status_of};

/// The log choices of a request, as the page's form sends them (`container`, `previous`,
/// `sinceSeconds`, `tailLines`; empty fields are absent).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogChoice {
    /// The container (`None`: the pod's first).
    pub container: Option<String>,
    /// What to read, and following.
    pub options: LogOptions,
}

fn number(query: &HashMap<String, String>, key: &str, least: i64) -> Result<Option<i64>, ApiError> {
    match query.get(key).map(|v| v.trim()).filter(|v| !v.is_empty()) {
        None => Ok(None),
        Some(v) => v
            .parse::<i64>()
            .ok()
            .filter(|n| *n >= least)
            .map(Some)
            .ok_or_else(|| {
                ApiError::invalid_field(key, format!("{key} must be a whole number >= {least}"))
            }),
    }
}

/// The choices of a query; a malformed number is the API's InvalidArgument.
pub fn log_choice(query: &HashMap<String, String>) -> Result<LogChoice, ApiError> {
    Ok(LogChoice {
        container: query.get("container").filter(|c| !c.is_empty()).cloned(),
        options: LogOptions {
            follow: true,
            previous: query
                .get("previous")
                .is_some_and(|v| matches!(v.as_str(), "true" | "on" | "1")),
            since_seconds: number(query, "sinceSeconds", 1)?,
            tail_lines: number(query, "tailLines", 0)?,
            timestamps: false,
        },
    })
}

/// The query of the page's stream: the choices and the session's CSRF token.
pub fn stream_query(container: &str, choice: &LogChoice, csrf: &str) -> String {
    let mut q = format!("container={}", url_segment(container));
    if choice.options.previous {
        q.push_str("&previous=true");
    }
    if let Some(s) = choice.options.since_seconds {
        q.push_str(&format!("&sinceSeconds={s}"));
    }
    if let Some(t) = choice.options.tail_lines {
        q.push_str(&format!("&tailLines={t}"));
    }
    q.push_str("&csrf=");
    q.push_str(&url_segment(csrf));
    q
}

/// The logs page: the choices form, and the log (`#log`) the script fills from the stream;
/// `refused` instead of the log when the choices are malformed.
pub fn logs_page(
    viewer: &Viewer<'_>,
    p: &PodPath,
    containers: &[String],
    choice: &LogChoice,
    refused: Option<&ApiError>,
) -> String {
    let mut h = Html::new();
    heading(&mut h, "Logs of", p);
    let chosen = choice
        .container
        .clone()
        .or_else(|| containers.first().cloned())
        .unwrap_or_default();
    h.raw("<p><a href=\"")
        .text(&p.url())
        .raw("\">Back to the pod</a></p>");
    h.raw("<form id=\"log-options\" method=\"get\" class=\"toolbar\"><label>Container <select id=\"container\" name=\"container\">");
    for c in containers {
        let mut attrs = vec![("value", c.as_str())];
        if *c == chosen {
            attrs.push(("selected", "selected"));
        }
        h.el("option", &attrs, c);
    }
    h.raw("</select></label><label><input type=\"checkbox\" id=\"previous\" name=\"previous\" value=\"true\"");
    if choice.options.previous {
        h.raw(" checked");
    }
    h.raw("> Previous container</label><label>Since (seconds) ");
    let since = choice
        .options
        .since_seconds
        .map(|s| s.to_string())
        .unwrap_or_default();
    h.open(
        "input",
        &[
            ("type", "number"),
            ("id", "sinceSeconds"),
            ("name", "sinceSeconds"),
            ("min", "1"),
            ("value", &since),
        ],
    );
    h.raw("</label><label>Last lines ");
    let tail = choice
        .options
        .tail_lines
        .map(|t| t.to_string())
        .unwrap_or_default();
    h.open(
        "input",
        &[
            ("type", "number"),
            ("id", "tailLines"),
            ("name", "tailLines"),
            ("min", "0"),
            ("value", &tail),
        ],
    );
    h.raw("</label><button id=\"show-logs\" type=\"submit\">Show</button></form>");
    match refused {
        Some(err) => error_box(&mut h, err),
        None => {
            let stream = format!(
                "{}/logs/stream?{}",
                p.url(),
                stream_query(&chosen, choice, viewer.csrf)
            );
            h.raw("<p id=\"log-status\" class=\"muted\" role=\"status\">Connecting…</p>");
            h.open(
                "pre",
                &[("id", "log"), ("class", "yaml"), ("data-stream", &stream)],
            )
            .close("pre");
            h.raw("<script src=\"/ui/assets/pod-stream.js\"></script>");
        }
    }
    page(&format!("Logs of {}", p.pod), Some(viewer), h)
}

/// `GET …/pods/{pod}/logs`.
pub(super) async fn show(
    State(console): State<Shared>,
    Path(p): Path<PodPath>,
    Query(query): Query<HashMap<String, String>>,
    signed: SignedIn,
) -> Response {
    let pod = match pod_or_answer(&console, &signed, &p, false).await {
        Ok(pod) => pod,
        Err(answer) => return answer,
    };
    let containers = container_names(&pod);
    let (choice, refused) = match log_choice(&query) {
        Ok(choice) => (choice, None),
        Err(err) => (LogChoice::default(), Some(err)),
    };
    let status = refused.as_ref().map_or(StatusCode::OK, status_of);
    html(
        status,
        logs_page(&signed.viewer(), &p, &containers, &choice, refused.as_ref()),
    )
}

/// `GET …/pods/{pod}/logs/stream`: the WebSocket following the log.
pub(super) async fn stream(
    State(console): State<Shared>,
    Path(p): Path<PodPath>,
    Query(query): Query<HashMap<String, String>>,
    mut request: Request,
) -> Response {
    let accepted = match websocket::accept(&console, &query, &mut request).await {
        Ok(accepted) => accepted,
        Err(refusal) => return refusal,
    };
    let choice = log_choice(&query);
    let api = console.api.clone();
    websocket::upgrade(accepted, move |signed, mut socket| async move {
        let log = match choice {
            Ok(choice) => {
                api.member_pod_log(
                    &signed.caller,
                    p.member_pod(choice.container),
                    choice.options,
                )
                .await
            }
            Err(err) => Err(err),
        };
        let mut log = match log {
            Ok(log) => log,
            Err(err) => return websocket::close_refused(&mut socket, &err).await,
        };
        let end = loop {
            tokio::select! {
                chunk = log.next() => match chunk {
                    Some(Ok(bytes)) => {
                        if socket.send(Message::binary(bytes)).await.is_err() {
                            return;
                        }
                    }
                    Some(Err(err)) => break Some(format!("{:?}: {}", err.code, err.message)),
                    None => break Some("The log ended.".to_owned()),
                },
                // The page went away: stop reading the member.
                message = socket.next() => match message {
                    None | Some(Err(_)) | Some(Ok(Message::Close(_))) => return,
                    Some(Ok(_)) => {}
                },
            }
        };
        websocket::close(&mut socket, end, true).await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn choices_of_the_form() {
        let c = log_choice(&q(&[
            ("container", "app"),
            ("previous", "on"),
            ("sinceSeconds", "60"),
            ("tailLines", "0"),
        ]))
        .unwrap();
        assert_eq!(c.container.as_deref(), Some("app"));
        assert!(c.options.follow && c.options.previous);
        assert_eq!(
            (c.options.since_seconds, c.options.tail_lines),
            (Some(60), Some(0))
        );
        let empty = log_choice(&q(&[
            ("container", ""),
            ("sinceSeconds", ""),
            ("tailLines", " "),
        ]))
        .unwrap();
        assert_eq!(empty.container, None);
        assert_eq!(
            (empty.options.since_seconds, empty.options.tail_lines),
            (None, None)
        );
        for bad in [
            ("sinceSeconds", "0"),
            ("sinceSeconds", "x"),
            ("tailLines", "-1"),
        ] {
            let err = log_choice(&q(&[bad])).unwrap_err();
            assert!(err.message.contains(bad.0), "{bad:?}: {}", err.message);
        }
    }

    #[test]
    fn the_stream_carries_the_choices_and_the_csrf_token() {
        let c = LogChoice {
            container: None,
            options: LogOptions {
                previous: true,
                since_seconds: Some(30),
                tail_lines: Some(5),
                ..LogOptions::default()
            },
        };
        assert_eq!(
            stream_query("a b", &c, "tok/en"),
            "container=a%20b&previous=true&sinceSeconds=30&tailLines=5&csrf=tok%2Fen"
        );
    }

    #[test]
    fn the_page_escapes_and_keeps_the_choices() {
        let viewer = Viewer {
            user: "admin",
            csrf: "t0k",
        };
        let p = PodPath {
            instance: "i".into(),
            cluster: "m<1>".into(),
            namespace: "demo".into(),
            pod: "web-1".into(),
        };
        let c = LogChoice {
            container: Some("side<car>".into()),
            options: LogOptions {
                tail_lines: Some(10),
                ..LogOptions::default()
            },
        };
        let html = logs_page(&viewer, &p, &["app".into(), "side<car>".into()], &c, None);
        assert!(
            html.contains("m&lt;1&gt;") && !html.contains("m<1>"),
            "{html}"
        );
        assert!(
            html.contains("<option value=\"side&lt;car&gt;\" selected=\"selected\">"),
            "{html}"
        );
        assert!(html.contains("data-stream=\"/ui/instances/i/members/m%3C1%3E/namespaces/demo/pods/web-1/logs/stream?container=side%3Ccar%3E&amp;tailLines=10&amp;csrf=t0k\""), "{html}");
        let err = ApiError::invalid_field("tailLines", "bad");
        let refused = logs_page(
            &viewer,
            &p,
            &["app".into()],
            &LogChoice::default(),
            Some(&err),
        );
        assert!(
            !refused.contains("data-stream") && refused.contains("role=\"alert\""),
            "{refused}"
        );
    }
}
