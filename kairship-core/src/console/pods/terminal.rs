//! The terminal page of a member pod's container: a shell (`sh`, or `bash`) run through the
//! member's `pods/exec` with a terminal, over the page's WebSocket (`…/terminal/stream`).
//! What the page sends (text) is the shell's input; the shell's output comes back as binary
//! messages, and a text message says how the session ended. Only who may run commands in the
//! instance (`create` on its proxy, as `pods/exec` is authorized) sees the page's controls,
//! and the stream refuses anyone else before upgrading.

use std::collections::HashMap;

use axum::extract::{Path, Query, Request, State};
use axum::response::{IntoResponse, Response};
use futures::{SinkExt, StreamExt};
use http::StatusCode;
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

use super::websocket;
use super::{PodPath, container_names, heading, may_exec, pod_or_answer};
use crate::api::members::streams::ExecOptions;
use crate::console::html::{Html, url_segment};
use crate::console::page::{Viewer, notice_box, page};
use crate::console::request::{Shared, SignedIn, html};

/// The shells the page offers.
pub const SHELLS: [&str; 2] = ["sh", "bash"];

/// Channels of the Kubernetes stream protocols (`v4`/`v5.channel.k8s.io`).
const STDIN: u8 = 0;
const STDOUT: u8 = 1;
const STDERR: u8 = 2;
const STATUS: u8 = 3;
/// `v5.channel.k8s.io`: closes the stream named by the next byte.
const CLOSE: u8 = 255;

/// The shell asked for (`sh` unless `bash`).
pub fn shell_of(query: &HashMap<String, String>) -> &'static str {
    match query.get("shell").map(String::as_str) {
        Some("bash") => "bash",
        _ => "sh",
    }
}

/// How a session ended, from the exit `Status` sent on channel 3.
pub fn ending(status: &[u8]) -> String {
    match serde_json::from_slice::<Value>(status) {
        Ok(v) if v["status"] == "Success" => "The shell exited.".to_owned(),
        Ok(v) => v["message"]
            .as_str()
            .map_or_else(|| "The shell ended.".to_owned(), str::to_owned),
        // Protocols before v4 send the error's text.
        Err(_) => String::from_utf8_lossy(status).into_owned(),
    }
}

/// The terminal page: the container and shell chosen in a form, the terminal (`#terminal`)
/// the script fills from the stream and the line sent to it (`#terminal-input`); for who may
/// not run commands, a notice instead.
pub fn terminal_page(
    viewer: &Viewer<'_>,
    p: &PodPath,
    containers: &[String],
    container: Option<&str>,
    shell: &str,
    can_exec: bool,
) -> String {
    let mut h = Html::new();
    heading(&mut h, "Terminal in", p);
    h.raw("<p><a href=\"")
        .text(&p.url())
        .raw("\">Back to the pod</a></p>");
    if !can_exec {
        notice_box(
            &mut h,
            "You may not run commands in the pods of this instance.",
        );
        return page(&format!("Terminal in {}", p.pod), Some(viewer), h);
    }
    let chosen = container
        .map(str::to_owned)
        .or_else(|| containers.first().cloned())
        .unwrap_or_default();
    h.raw("<form id=\"terminal-options\" method=\"get\" class=\"toolbar\"><label>Container <select id=\"container\" name=\"container\">");
    for c in containers {
        let mut attrs = vec![("value", c.as_str())];
        if *c == chosen {
            attrs.push(("selected", "selected"));
        }
        h.el("option", &attrs, c);
    }
    h.raw("</select></label><label>Shell <select id=\"shell\" name=\"shell\">");
    for s in SHELLS {
        let mut attrs = vec![("value", s)];
        if s == shell {
            attrs.push(("selected", "selected"));
        }
        h.el("option", &attrs, s);
    }
    h.raw("</select></label><button type=\"submit\">Open</button></form>");
    let stream = format!(
        "{}/terminal/stream?container={}&shell={}&csrf={}",
        p.url(),
        url_segment(&chosen),
        url_segment(shell),
        url_segment(viewer.csrf)
    );
    h.raw("<p id=\"terminal-status\" class=\"muted\" role=\"status\">Connecting…</p>");
    h.open(
        "pre",
        &[
            ("id", "terminal"),
            ("class", "yaml"),
            ("data-stream", &stream),
            ("aria-live", "polite"),
        ],
    )
    .close("pre");
    h.raw("<form id=\"terminal-form\" class=\"toolbar\"><label>Command <input id=\"terminal-input\" autocomplete=\"off\" spellcheck=\"false\" size=\"60\"></label><button id=\"terminal-send\" type=\"submit\">Send</button><button id=\"terminal-interrupt\" type=\"button\">Ctrl-C</button></form>");
    h.raw("<script src=\"/ui/assets/pod-stream.js\"></script>");
    page(&format!("Terminal in {}", p.pod), Some(viewer), h)
}

/// `GET …/pods/{pod}/terminal`.
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
    let can_exec = may_exec(&console, &signed.caller, &p.instance).await;
    let container = query.get("container").filter(|c| !c.is_empty());
    html(
        StatusCode::OK,
        terminal_page(
            &signed.viewer(),
            &p,
            &container_names(&pod),
            container.map(String::as_str),
            shell_of(&query),
            can_exec,
        ),
    )
}

/// `GET …/pods/{pod}/terminal/stream`: the WebSocket of a shell in the container.
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
    if !may_exec(&console, &accepted.signed.caller, &p.instance).await {
        return (
            StatusCode::FORBIDDEN,
            "you may not run commands in the pods of this instance",
        )
            .into_response();
    }
    let api = console.api.clone();
    let container = query.get("container").cloned();
    let options = ExecOptions {
        command: vec![shell_of(&query).to_owned()],
        stdin: true,
        tty: true,
    };
    websocket::upgrade(accepted, move |signed, mut socket| async move {
        let connection = match api
            .member_pod_exec(&signed.caller, p.member_pod(container), options)
            .await
        {
            Ok(connection) => connection,
            Err(err) => return websocket::close_refused(&mut socket, &err).await,
        };
        let closes_stdin = connection.supports_stream_close();
        let mut member = connection.into_stream();
        let end = loop {
            tokio::select! {
                message = socket.next() => {
                    let input = match message {
                        Some(Ok(Message::Text(text))) => text.as_bytes().to_vec(),
                        Some(Ok(Message::Binary(bytes))) => bytes.to_vec(),
                        Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                            // The page went away: end the shell's input, then the session.
                            if closes_stdin {
                                let _ = member.send(Message::binary(vec![CLOSE, STDIN])).await;
                            }
                            let _ = member.close(None).await;
                            return;
                        }
                        Some(Ok(_)) => continue,
                    };
                    let mut frame = Vec::with_capacity(input.len() + 1);
                    frame.push(STDIN);
                    frame.extend_from_slice(&input);
                    if member.send(Message::binary(frame)).await.is_err() {
                        break "The connection to the container ended.".to_owned();
                    }
                }
                message = member.next() => match message {
                    Some(Ok(Message::Binary(bytes))) => match bytes.split_first() {
                        Some((&(STDOUT | STDERR), data)) if !data.is_empty() => {
                            let sent = socket.send(Message::binary(data.to_vec())).await;
                            if sent.is_err() {
                                // The page went away.
                                let _ = member.close(None).await;
                                return;
                            }
                        }
                        Some((&STATUS, status)) => break ending(status),
                        _ => {}
                    },
                    Some(Ok(Message::Close(_))) | None | Some(Err(_)) => {
                        break "The connection to the container ended.".to_owned();
                    }
                    Some(Ok(_)) => {}
                },
            }
        };
        let _ = member.close(None).await;
        websocket::close(&mut socket, Some(end), true).await;
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endings_read_the_exit_status() {
        for (status, want) in [
            (&br#"{"metadata":{},"status":"Success"}"#[..], "The shell exited."),
            (
                br#"{"status":"Failure","message":"command terminated with non-zero exit code: exit code 3"}"#,
                "command terminated with non-zero exit code: exit code 3",
            ),
            (b"exit code 2", "exit code 2"),
        ] {
            assert_eq!(ending(status), want);
        }
    }

    #[test]
    fn shells_are_sh_unless_bash() {
        let q = |v: &str| HashMap::from([("shell".to_owned(), v.to_owned())]);
        assert_eq!(shell_of(&q("bash")), "bash");
        assert_eq!(shell_of(&q("rm -rf /")), "sh");
        assert_eq!(shell_of(&HashMap::new()), "sh");
    }

    #[test]
    fn the_page_has_controls_only_for_who_may_exec() {
        let viewer = Viewer {
            user: "admin",
            csrf: "t0k",
        };
        let p = PodPath {
            instance: "i".into(),
            cluster: "m1".into(),
            namespace: "demo".into(),
            pod: "web-1".into(),
        };
        let with = terminal_page(&viewer, &p, &["app".into()], None, "sh", true);
        assert!(with.contains("id=\"terminal-input\""), "{with}");
        assert!(
            with.contains("/terminal/stream?container=app&amp;shell=sh&amp;csrf=t0k"),
            "{with}"
        );
        let without = terminal_page(&viewer, &p, &["app".into()], None, "sh", false);
        assert!(!without.contains("terminal-input") && !without.contains("data-stream"));
        assert!(without.contains("may not run commands"), "{without}");
    }
}
