//! What a simulated pod's port answers when the kubelet forwards a connection to it (port
//! forwarding, over WebSocket or SPDY):
//!
//! - a port a container declares with the name `http` or `http-…` (as in
//!   `ports: [{name: http, containerPort: 8080}]`) is an HTTP/1.1 echo server: every request
//!   gets `200 OK` with a JSON body naming the pod, container and port and repeating the
//!   request's method, path, headers and body;
//! - every other port echoes the bytes it receives, and closes when its client does.
//!
//! Either way the connection is an in-memory byte stream; no socket is opened.

use axum::body::Body;
use http::{Request, Response, StatusCode, header};
use http_body_util::BodyExt;
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::io::{AsyncWriteExt, DuplexStream};

/// Largest request body the HTTP echo server reads and repeats.
const HTTP_BODY_LIMIT: usize = 1 << 20;

/// Buffer of the in-memory connection between the forwarder and the port.
pub const CONNECTION_BUFFER: usize = 64 * 1024;

/// How a simulated port answers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PortService {
    /// Bytes in, the same bytes out.
    Echo,
    /// An HTTP/1.1 server describing each request it gets.
    HttpEcho {
        /// The container declaring the port.
        container: String,
        /// The port's name.
        name: String,
    },
}

/// Whether a declared port name makes the port an HTTP server.
fn is_http_name(name: &str) -> bool {
    name == "http" || name.starts_with("http-")
}

/// How port `port` of `pod` answers (see the module documentation).
pub fn service_of(pod: &Value, port: u16) -> PortService {
    let containers = pod
        .pointer("/spec/containers")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    for container in containers {
        let declared = container
            .get("ports")
            .and_then(Value::as_array)
            .map(Vec::as_slice)
            .unwrap_or_default();
        for p in declared {
            let name = p.get("name").and_then(Value::as_str).unwrap_or_default();
            if p.get("containerPort").and_then(Value::as_u64) == Some(u64::from(port))
                && is_http_name(name)
            {
                return PortService::HttpEcho {
                    container: container
                        .get("name")
                        .and_then(Value::as_str)
                        .unwrap_or_default()
                        .to_string(),
                    name: name.to_string(),
                };
            }
        }
    }
    PortService::Echo
}

/// The pod a forwarded connection reaches.
#[derive(Clone, Debug)]
pub struct PortTarget {
    /// Namespace of the pod.
    pub namespace: String,
    /// Name of the pod.
    pub pod: String,
    /// The pod's port.
    pub port: u16,
    /// How the port answers.
    pub service: PortService,
}

impl PortTarget {
    /// Port `port` of `pod` (its stored object).
    pub fn new(pod: &Value, namespace: &str, name: &str, port: u16) -> PortTarget {
        PortTarget {
            namespace: namespace.to_string(),
            pod: name.to_string(),
            port,
            service: service_of(pod, port),
        }
    }
}

/// Serves one forwarded connection until either side ends it.
pub async fn serve_connection(target: PortTarget, io: DuplexStream) {
    match target.service.clone() {
        PortService::Echo => {
            let (mut rd, mut wr) = tokio::io::split(io);
            let _ = tokio::io::copy(&mut rd, &mut wr).await;
            let _ = wr.shutdown().await;
        }
        PortService::HttpEcho { container, name } => {
            let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let (target, container, name) = (target.clone(), container.clone(), name.clone());
                async move {
                    Ok::<_, std::convert::Infallible>(
                        http_echo(&target, &container, &name, req).await,
                    )
                }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(io), service)
                .await;
        }
    }
}

/// The HTTP echo server's answer to one request.
async fn http_echo(
    target: &PortTarget,
    container: &str,
    port_name: &str,
    req: Request<hyper::body::Incoming>,
) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let body = match http_body_util::Limited::new(body, HTTP_BODY_LIMIT)
        .collect()
        .await
    {
        Ok(collected) => collected.to_bytes(),
        Err(_) => {
            return text(
                StatusCode::PAYLOAD_TOO_LARGE,
                "request body over 1 MiB\n".into(),
            );
        }
    };
    let headers: serde_json::Map<String, Value> = parts
        .headers
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_string(),
                Value::String(String::from_utf8_lossy(v.as_bytes()).into_owned()),
            )
        })
        .collect();
    let answer = echo_body(
        target,
        container,
        port_name,
        parts.method.as_str(),
        &parts.uri.to_string(),
        Value::Object(headers),
        &body,
    );
    let mut response = text(StatusCode::OK, answer.to_string() + "\n");
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

/// What the HTTP echo server says about a request.
pub fn echo_body(
    target: &PortTarget,
    container: &str,
    port_name: &str,
    method: &str,
    path: &str,
    headers: Value,
    body: &[u8],
) -> Value {
    json!({
        "namespace": target.namespace,
        "pod": target.pod,
        "container": container,
        "port": target.port,
        "portName": port_name,
        "method": method,
        "path": path,
        "headers": headers,
        "body": String::from_utf8_lossy(body),
    })
}

fn text(code: StatusCode, body: String) -> Response<Body> {
    let mut response = Response::new(Body::from(body));
    *response.status_mut() = code;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncReadExt;

    fn pod() -> Value {
        json!({"spec": {"containers": [
            {"name": "web", "ports": [
                {"name": "http", "containerPort": 8080},
                {"name": "metrics", "containerPort": 9090},
                {"name": "http-admin", "containerPort": 8081},
            ]},
            {"name": "side", "ports": [{"name": "https", "containerPort": 8443}]},
        ]}})
    }

    #[test]
    fn ports_named_http_answer_http_and_others_echo() {
        let http = |container: &str, name: &str| PortService::HttpEcho {
            container: container.into(),
            name: name.into(),
        };
        let cases = [
            (pod(), 8080, http("web", "http")),
            (pod(), 8081, http("web", "http-admin")),
            (pod(), 9090, PortService::Echo),
            (pod(), 8443, PortService::Echo),
            (pod(), 1234, PortService::Echo),
            (json!({}), 8080, PortService::Echo),
        ];
        for (pod, port, want) in cases {
            assert_eq!(service_of(&pod, port), want, "{port}");
        }
    }

    #[tokio::test]
    async fn the_echo_port_repeats_bytes_and_the_http_port_describes_requests() {
        let (mut client, server) = tokio::io::duplex(CONNECTION_BUFFER);
        tokio::spawn(serve_connection(
            PortTarget::new(&pod(), "ns", "p", 9090),
            server,
        ));
        client.write_all(b"ping").await.unwrap();
        client.shutdown().await.unwrap();
        let mut echoed = Vec::new();
        client.read_to_end(&mut echoed).await.unwrap();
        assert_eq!(echoed, b"ping");

        let (mut client, server) = tokio::io::duplex(CONNECTION_BUFFER);
        tokio::spawn(serve_connection(
            PortTarget::new(&pod(), "ns", "p", 8080),
            server,
        ));
        client
            .write_all(b"POST /a?b=1 HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nConnection: close\r\n\r\nhi")
            .await
            .unwrap();
        let mut answer = Vec::new();
        client.read_to_end(&mut answer).await.unwrap();
        let answer = String::from_utf8(answer).unwrap();
        assert!(answer.starts_with("HTTP/1.1 200 OK\r\n"), "{answer}");
        let (_, body) = answer.split_once("\r\n\r\n").unwrap();
        let body: Value = serde_json::from_str(body).unwrap();
        assert_eq!(body["pod"], "p");
        assert_eq!(body["namespace"], "ns");
        assert_eq!(body["container"], "web");
        assert_eq!(body["port"], 8080);
        assert_eq!(body["method"], "POST");
        assert_eq!(body["path"], "/a?b=1");
        assert_eq!(body["headers"]["host"], "x");
        assert_eq!(body["body"], "hi");
    }
}
