//! The real kubectl (v1.36) forwards ports of a pod of `kube-sandbox serve --tls`, in both of
//! its forms: by default SPDY tunnelled in a WebSocket (`SPDY/3.1+portforward.k8s.io`), which
//! the API server turns into a SPDY upgrade to the simulated kubelet, and with
//! `KUBECTL_PORT_FORWARD_WEBSOCKETS=false` a plain `Upgrade: SPDY/3.1` spliced through to it.
//! A port the pod declares as `http` answers HTTP (the sandbox's HTTP echo server, which names
//! the pod and port it runs in); another port echoes bytes. `kubectl exec` over SPDY
//! (`KUBECTL_REMOTE_COMMAND_WEBSOCKETS=false`) reaches the same simulated kubelet.
//!
//! kubectl is found as `kube_sandbox::testing::kubectl` says; without it that test prints a
//! notice and passes, unless `KUBEOCEAN_REQUIRE_TOOLS` is set (CI). The tunnel is also driven
//! without kubectl, with the sandbox's own SPDY framing over a WebSocket.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod common;

use std::io::{Read, Write};
use std::net::{Shutdown, TcpStream};
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use kube_sandbox::testing::kubectl::{Kubectl, kubectl_or_skip};
use kube_sandbox::testing::process::Background;
use serde_json::Value;

const LIMIT: Duration = Duration::from_secs(60);

/// A pod with an HTTP port and a plain one.
const POD: &str = r#"
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: default}
spec:
  containers:
  - name: server
    image: nginx:1.27
    ports:
    - {name: http, containerPort: 8080}
    - {name: raw, containerPort: 9000}
"#;

fn wait_running(kubectl: &Kubectl, pod: &str) {
    let deadline = Instant::now() + LIMIT;
    loop {
        let out = kubectl.run(&["get", "pod", pod, "-o", "jsonpath={.status.phase}"]);
        if out.stdout == b"Running" {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "pod {pod} is not running: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// `kubectl -v=4 port-forward pod/<pod> :<port>...` with its log on standard output, and the
/// local port of each remote port once it listens.
pub fn port_forward(
    binary: &Path,
    kubeconfig: &Path,
    websockets: bool,
    pod: &str,
    ports: &[u16],
) -> (Background, Vec<u16>) {
    let mut command = Command::new("sh");
    command
        .args(["-c", "exec \"$0\" \"$@\" 2>&1"])
        .arg(binary)
        .args(["-v=4", "port-forward", &format!("pod/{pod}")])
        .args(ports.iter().map(|p| format!(":{p}")))
        .env("KUBECONFIG", kubeconfig)
        .env("KUBECACHEDIR", kubeconfig.with_extension("pf-cache"))
        .env(
            "KUBECTL_PORT_FORWARD_WEBSOCKETS",
            if websockets { "true" } else { "false" },
        );
    let mut forward = Background::spawn(command);
    let mut local = Vec::new();
    for port in ports {
        let suffix = format!(" -> {port}");
        let line = forward.wait_for_line(LIMIT, |l| {
            l.starts_with("Forwarding from 127.0.0.1:") && l.ends_with(&suffix)
        });
        let address = line
            .trim_start_matches("Forwarding from ")
            .trim_end_matches(&suffix);
        local.push(address.rsplit(':').next().unwrap().parse().unwrap());
    }
    (forward, local)
}

/// One HTTP/1.1 request to a local port: the status line and the body.
pub fn http_get(port: u16, path: &str) -> (String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer
        .split_once("\r\n\r\n")
        .unwrap_or_else(|| panic!("not an HTTP answer: {answer:?}"));
    (
        head.lines().next().unwrap_or_default().to_string(),
        body.to_string(),
    )
}

/// Bytes sent to a local port and what came back before the far side closed.
pub fn echo(port: u16, payload: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream.set_read_timeout(Some(LIMIT)).unwrap();
    stream.write_all(payload).unwrap();
    stream.shutdown(Shutdown::Write).unwrap();
    let mut back = Vec::new();
    stream.read_to_end(&mut back).unwrap();
    back
}

#[test]
fn kubectl_port_forward_reaches_pod_ports_tunnelled_and_over_spdy() {
    let test = "kubectl_port_forward_reaches_pod_ports_tunnelled_and_over_spdy";
    let Some(binary) = kubectl_or_skip(test) else {
        return;
    };
    let dir =
        std::env::temp_dir().join(format!("kube-sandbox-port-forward-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    let mut command = Command::new(env!("CARGO_BIN_EXE_kube-sandbox"));
    command.args(["serve", "--tls", "--nodes", "1", "--kubeconfig"]);
    command.arg(&kubeconfig);
    let mut server = Background::spawn(command);
    server.wait_for_line(LIMIT, |line| line.starts_with("kubeconfig written to"));
    let kubectl = Kubectl::new(&binary, &kubeconfig);
    kubectl.ok_with_input(&["apply", "-f", "-"], POD);
    wait_running(&kubectl, "web");

    for websockets in [true, false] {
        let (forward, local) = port_forward(&binary, &kubeconfig, websockets, "web", &[8080, 9000]);
        // Two connections through one forwarding session, each answered by the pod's port.
        for path in ["/hello?from=kubectl", "/again"] {
            let (status, body) = http_get(local[0], path);
            assert_eq!(status, "HTTP/1.1 200 OK", "{body}");
            let answer: Value = serde_json::from_str(&body).unwrap();
            assert_eq!(answer["pod"], "web", "{answer}");
            assert_eq!(answer["namespace"], "default");
            assert_eq!(answer["container"], "server");
            assert_eq!(answer["port"], 8080);
            assert_eq!(answer["method"], "GET");
            assert_eq!(answer["path"], path);
        }
        // More than one frame's worth comes back whole.
        let payload: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
        assert_eq!(echo(local[1], &payload), payload);
        // The form used is the one asked for: kubectl logs the tunnel's protocol, and never
        // falls back from it.
        let log = &forward.printed;
        assert!(!log.contains("fallback to secondary dialer"), "{log}");
        assert_eq!(
            log.contains("negotiated protocol: portforward.k8s.io"),
            websockets,
            "{log}"
        );
        drop(forward);
    }

    // Exec over SPDY too (what kubectl falls back to, here asked for): the upgrade is a POST.
    let spdy_exec = |args: &[&str], stdin: &str| {
        let mut child = Command::new(&binary)
            .env("KUBECONFIG", &kubeconfig)
            .env("KUBECACHEDIR", kubeconfig.with_extension("exec-cache"))
            .env("KUBECTL_REMOTE_COMMAND_WEBSOCKETS", "false")
            .args(["-v=6", "exec"])
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(stdin.as_bytes())
            .unwrap();
        child.wait_with_output().unwrap()
    };
    let out = spdy_exec(&["web", "--", "echo", "hello"], "");
    let log = String::from_utf8_lossy(&out.stderr);
    assert_eq!(String::from_utf8_lossy(&out.stdout), "hello\n", "{log}");
    assert!(
        log.contains(r#"verb="POST""#) && log.contains("/pods/web/exec?"),
        "{log}"
    );
    let out = spdy_exec(&["-i", "web", "--", "sh"], "echo one\nhostname\n");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "one\nweb\n");
    let out = spdy_exec(&["web", "--", "sh", "-c", "echo out; exit 3"], "");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "out\n");
    assert_eq!(out.status.code(), Some(3));

    // A port-forward the kubelet cannot serve (no such pod) fails as kube-apiserver answers.
    let err = kubectl.fails(&["port-forward", "pod/missing", ":8080"]);
    assert!(err.contains("pods \"missing\" not found"), "{err}");

    drop(server);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A served cluster running pod `web` (HTTP on 8080), and a client of it.
async fn served_web(name: &str) -> (kube_sandbox::Cluster, kube_sandbox::Served, kube::Client) {
    use k8s_openapi::api::core::v1::Pod;
    let cluster = kube_sandbox::Cluster::with_options(
        name,
        kube_sandbox::ClusterOptions {
            pod_start_delay: Duration::from_millis(20),
            ..Default::default()
        },
    );
    cluster
        .add_node(&kube_sandbox::SimNode::new("n1", "4", "8Gi"))
        .unwrap();
    let served = cluster
        .serve(kube_sandbox::ServeOptions {
            tls: true,
            ..Default::default()
        })
        .await
        .unwrap();
    let client = served.client().await.unwrap();
    let pods: kube::Api<Pod> = kube::Api::namespaced(client.clone(), "default");
    let pod: Pod = serde_saphyr::from_str(POD).unwrap();
    pods.create(&Default::default(), &pod).await.unwrap();
    common::eventually("web running", || {
        let pods = pods.clone();
        async move {
            pods.get("web")
                .await
                .unwrap()
                .status
                .and_then(|s| s.phase)
                .as_deref()
                == Some("Running")
        }
    })
    .await;
    (cluster, served, client)
}

/// A port-forward WebSocket offering `protocol`, as client-go's tunneling dialer sends it.
fn tunnel_request(protocol: &str) -> http::Request<kube::client::Body> {
    http::Request::get("/api/v1/namespaces/default/pods/web/portforward")
        .header("connection", "Upgrade")
        .header("upgrade", "websocket")
        .header("sec-websocket-version", "13")
        .header("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")
        .header("sec-websocket-protocol", protocol)
        .body(kube::client::Body::empty())
        .unwrap()
}

#[tokio::test]
async fn the_api_server_tunnels_spdy_in_a_websocket_to_the_kubelet() {
    use futures::{SinkExt, StreamExt};
    use kube_sandbox::sim::spdy::{Frame, FrameReader, FrameWriter};
    use tokio_tungstenite::tungstenite::Message;

    let (_cluster, _served, client) = served_web("pf-tunnel").await;
    let mut response = client
        .send(tunnel_request("SPDY/3.1+portforward.k8s.io"))
        .await
        .unwrap();
    assert_eq!(response.status(), http::StatusCode::SWITCHING_PROTOCOLS);
    assert_eq!(
        response.headers()["sec-websocket-protocol"],
        "SPDY/3.1+portforward.k8s.io"
    );
    let upgraded = hyper::upgrade::on(&mut response).await.unwrap();
    let mut ws = tokio_tungstenite::WebSocketStream::from_raw_socket(
        hyper_util::rt::TokioIo::new(upgraded),
        tokio_tungstenite::tungstenite::protocol::Role::Client,
        None,
    )
    .await;
    // kubectl's frames for one connection to port 8080, each in its own binary message.
    let headers = |kind: &str| {
        [("streamtype", kind), ("port", "8080"), ("requestid", "0")]
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect()
    };
    let syn = |stream_id, kind| Frame::SynStream {
        stream_id,
        associated_to: 0,
        priority: 0,
        fin: false,
        unidirectional: false,
        headers: headers(kind),
    };
    let data = |stream_id, fin, bytes: &[u8]| Frame::Data {
        stream_id,
        fin,
        data: bytes.to_vec(),
    };
    let mut writer = FrameWriter::default();
    for frame in [
        syn(1, "error"),
        data(1, true, b""),
        syn(3, "data"),
        data(
            3,
            false,
            b"GET /tunnelled HTTP/1.1\r\nHost: h\r\nConnection: close\r\n\r\n",
        ),
    ] {
        let bytes = writer.encode(&frame).unwrap();
        ws.send(Message::binary(bytes)).await.unwrap();
    }
    let mut reader = FrameReader::default();
    let mut buf = Vec::new();
    let mut answer = Vec::new();
    let mut replies = Vec::new();
    'read: while let Some(message) = tokio::time::timeout(LIMIT, ws.next()).await.unwrap() {
        let Message::Binary(bytes) = message.unwrap() else {
            continue;
        };
        buf.extend_from_slice(&bytes);
        while let Some(frame) = reader.next_frame(&mut buf).unwrap() {
            match frame {
                Frame::SynReply { stream_id, .. } => replies.push(stream_id),
                Frame::Data {
                    stream_id: 3,
                    fin,
                    data,
                } => {
                    answer.extend(data);
                    if fin {
                        break 'read;
                    }
                }
                Frame::Data {
                    stream_id: 1, data, ..
                } => assert!(data.is_empty(), "{}", String::from_utf8_lossy(&data)),
                other => panic!("unexpected {other:?}"),
            }
        }
    }
    assert_eq!(replies, [1, 3]);
    let answer = String::from_utf8(answer).unwrap();
    assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
    assert!(answer.contains("\"path\":\"/tunnelled\""), "{answer}");
    assert!(answer.contains("\"pod\":\"web\""), "{answer}");

    // A tunnel offering no Kubernetes protocol is refused before the kubelet is called, as
    // kube-apiserver's tunnel refuses it.
    let refused = client
        .send(tunnel_request("SPDY/3.1+other.example"))
        .await
        .unwrap();
    assert_eq!(refused.status(), http::StatusCode::BAD_REQUEST);
    let body = http_body_util::BodyExt::collect(refused.into_body())
        .await
        .unwrap()
        .to_bytes();
    let status: Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(status["kind"], "Status");
    assert_eq!(
        status["message"],
        "unable to upgrade: no tunneling spdy protocols provided"
    );
}
