//! Pod logs and a terminal in the console, in a real Chromium against `kairship sandbox`: a
//! container writing a line every 300 ms on member a-east is reached from its workload's
//! pods, its logs page follows it while it writes (and honours the last-lines choice), and a
//! command typed in its terminal (`echo hello`, run by the container's shell through exec)
//! shows its output. The WebSocket endpoints refuse an upgrade without a session, without or
//! with a wrong CSRF token, or from a foreign origin (and accept the same request with all
//! three, so the refusals are the guard's own). The viewer sees no terminal control, and
//! their forged upgrade is refused.
//!
//! Needs `chromium` and `chromedriver` on PATH; without them the test prints a notice and
//! passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI), where it fails.
#![allow(clippy::unwrap_used)]

use std::time::{Duration, Instant};

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

mod support;

use support::*;

/// A Deployment printing a line every 300 ms, and its policy placing it on member a-east.
fn ticker() -> (serde_json::Value, serde_json::Value) {
    let deployment = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "ticker", "namespace": "demo", "labels": {"app": "ticker"}},
        "spec": {
            "replicas": 1,
            "selector": {"matchLabels": {"app": "ticker"}},
            "template": {
                "metadata": {"labels": {"app": "ticker"}},
                "spec": {"containers": [{
                    "name": "ticker", "image": "busybox:1.36",
                    "command": ["sh", "-c", "echo started; while true; do echo tick $(date); sleep 0.3; done"]
                }]}
            }
        }
    });
    let policy = json!({
        "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
        "metadata": {"name": "ticker", "namespace": "demo"},
        "spec": {
            "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "ticker"}],
            "placement": {"clusterAffinity": {"clusterNames": ["a-east"]}}
        }
    });
    (deployment, policy)
}

/// The status code of a WebSocket handshake for `path` on `base`, with `extra` headers.
async fn handshake(base: &str, path: &str, extra: &[(&str, &str)]) -> u16 {
    let authority = base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(authority).await.unwrap();
    let mut request = format!(
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\
         Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
    );
    for (name, value) in extra {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut answer = Vec::new();
    let mut buf = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let n = stream.read(&mut buf).await.unwrap();
        assert!(n > 0, "{}", String::from_utf8_lossy(&answer));
        answer.extend_from_slice(&buf[..n]);
    }
    let line = String::from_utf8_lossy(&answer);
    line.split(' ').nth(1).unwrap().parse().unwrap()
}

/// The CSRF token of the page the browser shows.
async fn csrf(browser: &Browser) -> String {
    let headers = browser
        .script(
            "return document.body.getAttribute('hx-headers');",
            json!([]),
        )
        .await;
    let headers: serde_json::Value = serde_json::from_str(headers.as_str().unwrap()).unwrap();
    headers["X-CSRF-Token"].as_str().unwrap().to_owned()
}

fn ticks(text: &str) -> usize {
    text.lines().filter(|l| l.starts_with("tick ")).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn logs_follow_a_member_pod_and_its_terminal_runs_commands() {
    let Some(s) = SignedIn::start(
        "logs_follow_a_member_pod_and_its_terminal_runs_commands",
        "console-logs",
    )
    .await
    else {
        return;
    };
    let b = &s.browser;
    let (deployment, policy) = ticker();
    let resources = "/instances/karmada-a/namespaces/demo/resources";
    for (path, body) in [
        ("apps/v1/deployments", deployment),
        ("policy.karmada.io/v1alpha1/propagationpolicies", policy),
    ] {
        rest_create(&s.base, &s.admin, &format!("{resources}/{path}"), body).await;
    }

    // The workload page lists the member's pod; its name leads to the pod's page.
    let workload = format!(
        "{}/ui/instances/karmada-a/namespaces/demo/workloads/ticker",
        s.base
    );
    let deadline = Instant::now() + LIMIT;
    loop {
        b.goto(&workload).await;
        b.find("#pods").await;
        let phase = b
            .script(
                "const r = document.querySelector('#pods tr[data-pod]'); \
                 return r ? r.querySelector('.phase').textContent : '';",
                json!([]),
            )
            .await;
        if phase == "Running" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the ticker pod is not running: {phase}"
        );
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    b.click("#pods a.pod").await;
    assert_eq!(b.text("#pod-cluster").await, "a-east");
    assert_eq!(b.text("#pod-phase").await, "Running");
    let pod_page = b.url().await;

    // The logs page follows the container while it writes.
    b.click("#containers a.logs").await;
    let first = b
        .wait_text("#log", |t| t.contains("started") && ticks(t) >= 1)
        .await;
    let seen = ticks(&first);
    let later = b.wait_text("#log", |t| ticks(t) >= seen + 3).await;
    assert!(
        later.starts_with(&first),
        "the log was replaced, not followed"
    );
    assert_eq!(b.text("#log-status").await, "Connected.");
    b.screenshot(&s.shots, "pod-logs").await;
    // The last line only: the first line is gone, new ones keep coming.
    b.goto(&format!("{pod_page}/logs?container=ticker&tailLines=1"))
        .await;
    let tail = b.wait_text("#log", |t| ticks(t) >= 3).await;
    assert!(!tail.contains("started"), "{tail}");
    // A malformed choice is the API's error, and no stream.
    b.goto(&format!("{pod_page}/logs?container=ticker&tailLines=x"))
        .await;
    let refused = b.text("[role=alert]").await;
    assert!(refused.contains("tailLines"), "{refused}");
    assert!(b.find_all("#log").await.is_empty());

    // The terminal runs a command in the container's shell.
    b.goto(&pod_page).await;
    b.click("#containers a.terminal").await;
    b.wait_text("#terminal-status", |t| t == "Connected.").await;
    b.wait_text("#terminal", |t| t.contains("$")).await;
    b.type_into("#terminal-input", "echo hello").await;
    b.click("#terminal-send").await;
    let shown = b
        .wait_text("#terminal", |t| t.contains("$ echo hello\nhello\n$"))
        .await;
    assert!(!shown.contains('\r'), "{shown:?}");
    b.screenshot(&s.shots, "pod-terminal").await;
    b.assert_same_origin(&s.base).await;

    // The WebSocket guard: a valid session, its CSRF token and this origin, or no upgrade.
    let token = csrf(b).await;
    let cookie = format!("kairship_session={}", b.session_cookie().await.unwrap());
    let path = pod_page.trim_start_matches(&s.base).to_owned();
    let stream = |csrf: &str| format!("{path}/terminal/stream?container=ticker&csrf={csrf}");
    let here = ("Origin", s.base.as_str());
    let with_cookie = ("Cookie", cookie.as_str());
    for (what, target, headers, want) in [
        ("no session", stream(&token), vec![here], 401),
        (
            "no CSRF token",
            format!("{path}/terminal/stream?container=ticker"),
            vec![here, with_cookie],
            403,
        ),
        (
            "a wrong CSRF token",
            stream("forged"),
            vec![here, with_cookie],
            403,
        ),
        (
            "a foreign origin",
            stream(&token),
            vec![("Origin", "http://evil.example"), with_cookie],
            403,
        ),
        ("no origin", stream(&token), vec![with_cookie], 403),
        (
            "a valid upgrade",
            stream(&token),
            vec![here, with_cookie],
            101,
        ),
        (
            "a valid log upgrade",
            format!("{path}/logs/stream?container=ticker&csrf={token}"),
            vec![here, with_cookie],
            101,
        ),
    ] {
        assert_eq!(handshake(&s.base, &target, &headers).await, want, "{what}");
    }

    // The viewer reads the logs, sees no terminal control, and their forged upgrade is refused.
    b.sign_out().await;
    b.sign_in(&s.base, &s.viewer).await;
    b.goto(&pod_page).await;
    b.find("#containers a.logs").await;
    assert!(b.find_all("a.terminal").await.is_empty());
    b.goto(&format!("{pod_page}/terminal")).await;
    let notice = b.text("[role=status]").await;
    assert!(notice.contains("may not run commands"), "{notice}");
    assert!(b.find_all("#terminal-input").await.is_empty());
    let token = csrf(b).await;
    let cookie = format!("kairship_session={}", b.session_cookie().await.unwrap());
    let status = handshake(
        &s.base,
        &stream(&token),
        &[("Origin", s.base.as_str()), ("Cookie", cookie.as_str())],
    )
    .await;
    assert_eq!(status, 403, "the viewer's forged terminal upgrade");
    b.goto(&format!("{pod_page}/logs?container=ticker")).await;
    b.wait_text("#log", |t| ticks(t) >= 1).await;
    b.quit().await;
}
