//! The kubelet API paths the proxier serves, parsed into typed requests, and the worker API
//! server paths they become.
//!
//! Query parameters are accepted both as kube-apiserver sends them to kubelets
//! (`input=1&output=1&error=1&tty=1`, `port=8080`) and as they are written against the API
//! server (`stdin=true`, `ports=8080`); the worker always receives the API server's form.

use http::{Method, StatusCode};

use super::query::{encode, encode_query, parse_query};

/// A pod as a kubelet path names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PodPath {
    /// Namespace of the (virtual) pod.
    pub namespace: String,
    /// Name of the (virtual) pod.
    pub name: String,
    /// UID, when the path carries one (`/exec/{ns}/{pod}/{uid}/{container}`).
    pub uid: Option<String>,
}

/// Options of `/containerLogs`, as `PodLogOptions` names them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LogOptions {
    /// Keep streaming new lines.
    pub follow: bool,
    /// Logs of the previous container instance.
    pub previous: bool,
    /// Prefix each line with its RFC 3339 timestamp.
    pub timestamps: bool,
    /// Only lines newer than this many seconds.
    pub since_seconds: Option<i64>,
    /// Only lines newer than this RFC 3339 time.
    pub since_time: Option<String>,
    /// Only this many lines from the end.
    pub tail_lines: Option<i64>,
    /// At most this many bytes.
    pub limit_bytes: Option<i64>,
    /// `All`, `Stdout` or `Stderr` (newer API servers).
    pub stream: Option<String>,
}

/// Options of `/exec` and `/attach`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamOptions {
    /// Attach standard input.
    pub stdin: bool,
    /// Attach standard output.
    pub stdout: bool,
    /// Attach standard error.
    pub stderr: bool,
    /// Allocate a terminal.
    pub tty: bool,
    /// The command to run (exec only).
    pub command: Vec<String>,
}

/// Whether a stream request runs a command or attaches to the container's process.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamKind {
    /// `/exec`: run a command.
    Exec,
    /// `/attach`: attach to the main process.
    Attach,
}

/// One request to the kubelet API of a virtual node.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum KubeletRequest {
    /// `/healthz`.
    Healthz,
    /// `/containerLogs/{ns}/{pod}/{container}`.
    ContainerLogs {
        /// The virtual pod.
        pod: PodPath,
        /// Container name.
        container: String,
        /// Log options.
        options: LogOptions,
    },
    /// `/exec/...` or `/attach/...`.
    Stream {
        /// Exec or attach.
        kind: StreamKind,
        /// The virtual pod.
        pod: PodPath,
        /// Container name.
        container: String,
        /// Stream options.
        options: StreamOptions,
    },
    /// `/portForward/{ns}/{pod}`.
    PortForward {
        /// The virtual pod.
        pod: PodPath,
        /// Ports from the query (SPDY clients name them in stream headers instead).
        ports: Vec<u16>,
    },
    /// `/stats/summary`.
    StatsSummary {
        /// `only_cpu_and_memory=true`.
        only_cpu_and_memory: bool,
    },
    /// `/metrics/resource`.
    MetricsResource,
    /// `/metrics/cadvisor`.
    MetricsCadvisor,
}

/// The endpoint a request is for: the metrics label and the authorization subresource.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Endpoint {
    /// `/healthz`.
    Healthz,
    /// `/containerLogs`.
    ContainerLogs,
    /// `/exec`.
    Exec,
    /// `/attach`.
    Attach,
    /// `/portForward`.
    PortForward,
    /// `/stats/summary`.
    StatsSummary,
    /// `/metrics/resource`.
    MetricsResource,
    /// `/metrics/cadvisor`.
    MetricsCadvisor,
    /// Anything else.
    Unknown,
}

impl Endpoint {
    /// The name used in metrics and logs.
    pub fn as_str(self) -> &'static str {
        match self {
            Endpoint::Healthz => "healthz",
            Endpoint::ContainerLogs => "containerLogs",
            Endpoint::Exec => "exec",
            Endpoint::Attach => "attach",
            Endpoint::PortForward => "portForward",
            Endpoint::StatsSummary => "stats/summary",
            Endpoint::MetricsResource => "metrics/resource",
            Endpoint::MetricsCadvisor => "metrics/cadvisor",
            Endpoint::Unknown => "unknown",
        }
    }

    /// The endpoint a path belongs to, judged by its first segment only.
    pub fn of_path(path: &str) -> Endpoint {
        let mut segments = path.trim_start_matches('/').split('/');
        match (segments.next(), segments.next()) {
            (Some("healthz"), _) => Endpoint::Healthz,
            (Some("containerLogs"), _) => Endpoint::ContainerLogs,
            (Some("exec"), _) => Endpoint::Exec,
            (Some("attach"), _) => Endpoint::Attach,
            (Some("portForward"), _) => Endpoint::PortForward,
            (Some("stats"), Some("summary")) => Endpoint::StatsSummary,
            (Some("metrics"), Some("resource")) => Endpoint::MetricsResource,
            (Some("metrics"), Some("cadvisor")) => Endpoint::MetricsCadvisor,
            _ => Endpoint::Unknown,
        }
    }
}

/// Why a request could not be parsed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RequestError {
    /// No such kubelet path.
    #[error("the path {path} is not served by the kubelet API of virtual nodes")]
    NotFound {
        /// The request path.
        path: String,
    },
    /// The path exists but not with this method.
    #[error("method {method} is not allowed on {endpoint}")]
    MethodNotAllowed {
        /// The request method.
        method: String,
        /// The endpoint.
        endpoint: &'static str,
    },
    /// A query parameter has a value that cannot be used.
    #[error("invalid value {value:?} for parameter {name}: {reason}")]
    InvalidParameter {
        /// Parameter name.
        name: String,
        /// The value sent.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// The options contradict each other or lack something required.
    #[error("{0}")]
    InvalidOptions(&'static str),
}

impl RequestError {
    /// The HTTP status to answer with.
    pub fn status(&self) -> StatusCode {
        match self {
            RequestError::NotFound { .. } => StatusCode::NOT_FOUND,
            RequestError::MethodNotAllowed { .. } => StatusCode::METHOD_NOT_ALLOWED,
            RequestError::InvalidParameter { .. } | RequestError::InvalidOptions(_) => {
                StatusCode::BAD_REQUEST
            }
        }
    }
}

/// Parses a request line into a typed request.
pub fn parse_request(
    method: &Method,
    path: &str,
    query: Option<&str>,
) -> Result<KubeletRequest, RequestError> {
    let endpoint = Endpoint::of_path(path);
    let not_found = || RequestError::NotFound {
        path: path.to_owned(),
    };
    let segments: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(not_found());
    }
    let allowed: &[Method] = match endpoint {
        Endpoint::Healthz | Endpoint::ContainerLogs => &[Method::GET, Method::HEAD],
        Endpoint::Exec | Endpoint::Attach | Endpoint::PortForward => &[Method::GET, Method::POST],
        Endpoint::StatsSummary => &[Method::GET, Method::POST],
        Endpoint::MetricsResource | Endpoint::MetricsCadvisor => &[Method::GET],
        Endpoint::Unknown => return Err(not_found()),
    };
    if !allowed.contains(method) {
        return Err(RequestError::MethodNotAllowed {
            method: method.to_string(),
            endpoint: endpoint.as_str(),
        });
    }
    let params = parse_query(query.unwrap_or(""));
    let pod = |namespace: &str, name: &str, uid: Option<&str>| PodPath {
        namespace: namespace.to_owned(),
        name: name.to_owned(),
        uid: uid.map(str::to_owned),
    };
    match (endpoint, segments.as_slice()) {
        (Endpoint::Healthz, ["healthz"]) => Ok(KubeletRequest::Healthz),
        (Endpoint::ContainerLogs, [_, ns, name, container]) => Ok(KubeletRequest::ContainerLogs {
            pod: pod(ns, name, None),
            container: (*container).to_owned(),
            options: parse_log_options(&params)?,
        }),
        (Endpoint::Exec | Endpoint::Attach, [_, ns, name, rest @ ..]) => {
            let (uid, container) = match rest {
                [container] => (None, *container),
                [uid, container] => (Some(*uid), *container),
                _ => return Err(not_found()),
            };
            let kind = if endpoint == Endpoint::Exec {
                StreamKind::Exec
            } else {
                StreamKind::Attach
            };
            Ok(KubeletRequest::Stream {
                kind,
                pod: pod(ns, name, uid),
                container: container.to_owned(),
                options: parse_stream_options(kind, &params)?,
            })
        }
        (Endpoint::PortForward, [_, ns, name, rest @ ..]) if rest.len() <= 1 => {
            Ok(KubeletRequest::PortForward {
                pod: pod(ns, name, rest.first().copied()),
                ports: parse_ports(&params)?,
            })
        }
        (Endpoint::StatsSummary, ["stats", "summary"]) => Ok(KubeletRequest::StatsSummary {
            only_cpu_and_memory: flag(&params, &["only_cpu_and_memory"])?,
        }),
        (Endpoint::MetricsResource, ["metrics", "resource"]) => Ok(KubeletRequest::MetricsResource),
        (Endpoint::MetricsCadvisor, ["metrics", "cadvisor"]) => Ok(KubeletRequest::MetricsCadvisor),
        _ => Err(not_found()),
    }
}

impl KubeletRequest {
    /// The endpoint this request is for.
    pub fn endpoint(&self) -> Endpoint {
        match self {
            KubeletRequest::Healthz => Endpoint::Healthz,
            KubeletRequest::ContainerLogs { .. } => Endpoint::ContainerLogs,
            KubeletRequest::Stream {
                kind: StreamKind::Exec,
                ..
            } => Endpoint::Exec,
            KubeletRequest::Stream {
                kind: StreamKind::Attach,
                ..
            } => Endpoint::Attach,
            KubeletRequest::PortForward { .. } => Endpoint::PortForward,
            KubeletRequest::StatsSummary { .. } => Endpoint::StatsSummary,
            KubeletRequest::MetricsResource => Endpoint::MetricsResource,
            KubeletRequest::MetricsCadvisor => Endpoint::MetricsCadvisor,
        }
    }

    /// The virtual pod the request is about, if any.
    pub fn pod(&self) -> Option<&PodPath> {
        match self {
            KubeletRequest::ContainerLogs { pod, .. }
            | KubeletRequest::Stream { pod, .. }
            | KubeletRequest::PortForward { pod, .. } => Some(pod),
            _ => None,
        }
    }

    /// Whether the client must ask for a protocol upgrade (exec, attach, port-forward).
    pub fn is_upgrade(&self) -> bool {
        matches!(
            self,
            KubeletRequest::Stream { .. } | KubeletRequest::PortForward { .. }
        )
    }

    /// The worker API server path (with query) of a pod request, for the physical pod
    /// `namespace/name`; `None` for requests that are not about one pod.
    pub fn worker_pod_path(&self, namespace: &str, name: &str) -> Option<String> {
        let (subresource, query) = match self {
            KubeletRequest::ContainerLogs {
                container, options, ..
            } => ("log", log_query(container, options)),
            KubeletRequest::Stream {
                kind,
                container,
                options,
                ..
            } => {
                let subresource = match kind {
                    StreamKind::Exec => "exec",
                    StreamKind::Attach => "attach",
                };
                (subresource, stream_query(container, options))
            }
            KubeletRequest::PortForward { ports, .. } => ("portforward", port_query(ports)),
            _ => return None,
        };
        let base = format!(
            "/api/v1/namespaces/{}/pods/{}/{subresource}",
            encode(namespace),
            encode(name)
        );
        Some(if query.is_empty() {
            base
        } else {
            format!("{base}?{query}")
        })
    }
}

/// The worker API server path of a node-level request through the node proxy of the
/// physical node `node`; `None` for pod requests.
pub fn worker_node_path(request: &KubeletRequest, node: &str) -> Option<String> {
    let node = encode(node);
    match request {
        KubeletRequest::StatsSummary {
            only_cpu_and_memory,
        } => {
            let query = if *only_cpu_and_memory {
                "?only_cpu_and_memory=true"
            } else {
                ""
            };
            Some(format!("/api/v1/nodes/{node}/proxy/stats/summary{query}"))
        }
        KubeletRequest::MetricsResource => {
            Some(format!("/api/v1/nodes/{node}/proxy/metrics/resource"))
        }
        KubeletRequest::MetricsCadvisor => {
            Some(format!("/api/v1/nodes/{node}/proxy/metrics/cadvisor"))
        }
        _ => None,
    }
}

/// Values of the parameters named `names`, in order.
fn values<'a>(params: &'a [(String, String)], names: &[&str]) -> Vec<(&'a str, &'a str)> {
    params
        .iter()
        .filter(|(key, _)| names.contains(&key.as_str()))
        .map(|(key, value)| (key.as_str(), value.as_str()))
        .collect()
}

/// A boolean parameter (Go's `strconv.ParseBool` spellings); the last one given wins.
fn flag(params: &[(String, String)], names: &[&str]) -> Result<bool, RequestError> {
    let mut out = false;
    for (name, value) in values(params, names) {
        out = match value {
            "1" | "t" | "T" | "true" | "TRUE" | "True" => true,
            "0" | "f" | "F" | "false" | "FALSE" | "False" => false,
            _ => {
                return Err(RequestError::InvalidParameter {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    reason: "not a boolean",
                });
            }
        };
    }
    Ok(out)
}

/// An integer parameter at least `min`.
fn integer(params: &[(String, String)], name: &str, min: i64) -> Result<Option<i64>, RequestError> {
    let Some((_, value)) = values(params, &[name]).pop() else {
        return Ok(None);
    };
    let invalid = |reason| RequestError::InvalidParameter {
        name: name.to_owned(),
        value: value.to_owned(),
        reason,
    };
    let number: i64 = value.parse().map_err(|_| invalid("not an integer"))?;
    if number < min {
        return Err(invalid(if min == 0 {
            "must not be negative"
        } else {
            "must be positive"
        }));
    }
    Ok(Some(number))
}

fn parse_log_options(params: &[(String, String)]) -> Result<LogOptions, RequestError> {
    let since_time = match values(params, &["sinceTime"]).pop() {
        Some((name, value)) => {
            value
                .parse::<jiff::Timestamp>()
                .map_err(|_| RequestError::InvalidParameter {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    reason: "not an RFC 3339 time",
                })?;
            Some(value.to_owned())
        }
        None => None,
    };
    let stream = match values(params, &["stream"]).pop() {
        Some((_, value @ ("All" | "Stdout" | "Stderr"))) => Some(value.to_owned()),
        Some((name, value)) => {
            return Err(RequestError::InvalidParameter {
                name: name.to_owned(),
                value: value.to_owned(),
                reason: "must be All, Stdout or Stderr",
            });
        }
        None => None,
    };
    let options = LogOptions {
        follow: flag(params, &["follow"])?,
        previous: flag(params, &["previous"])?,
        timestamps: flag(params, &["timestamps"])?,
        since_seconds: integer(params, "sinceSeconds", 1)?,
        since_time,
        tail_lines: integer(params, "tailLines", 0)?,
        limit_bytes: integer(params, "limitBytes", 1)?,
        stream,
    };
    if options.since_seconds.is_some() && options.since_time.is_some() {
        return Err(RequestError::InvalidOptions(
            "at most one of sinceTime or sinceSeconds may be specified",
        ));
    }
    Ok(options)
}

fn parse_stream_options(
    kind: StreamKind,
    params: &[(String, String)],
) -> Result<StreamOptions, RequestError> {
    let options = StreamOptions {
        stdin: flag(params, &["input", "stdin"])?,
        stdout: flag(params, &["output", "stdout"])?,
        stderr: flag(params, &["error", "stderr"])?,
        tty: flag(params, &["tty"])?,
        command: values(params, &["command"])
            .into_iter()
            .map(|(_, value)| value.to_owned())
            .collect(),
    };
    if kind == StreamKind::Exec && options.command.is_empty() {
        return Err(RequestError::InvalidOptions(
            "you must specify at least 1 command",
        ));
    }
    if !(options.stdin || options.stdout || options.stderr) {
        return Err(RequestError::InvalidOptions(
            "you must specify at least 1 of stdin, stdout, stderr",
        ));
    }
    Ok(options)
}

fn parse_ports(params: &[(String, String)]) -> Result<Vec<u16>, RequestError> {
    let mut ports = Vec::new();
    for (name, value) in values(params, &["port", "ports"]) {
        for part in value.split(',') {
            let port = part
                .trim()
                .parse::<u16>()
                .ok()
                .filter(|port| *port > 0)
                .ok_or_else(|| RequestError::InvalidParameter {
                    name: name.to_owned(),
                    value: value.to_owned(),
                    reason: "ports must be integers between 1 and 65535",
                })?;
            ports.push(port);
        }
    }
    Ok(ports)
}

/// The worker's `pods/log` query for these options.
pub fn log_query(container: &str, options: &LogOptions) -> String {
    let mut pairs: Vec<(&str, String)> = vec![("container", container.to_owned())];
    for (name, on) in [
        ("follow", options.follow),
        ("previous", options.previous),
        ("timestamps", options.timestamps),
    ] {
        if on {
            pairs.push((name, "true".to_owned()));
        }
    }
    for (name, value) in [
        ("sinceSeconds", options.since_seconds),
        ("tailLines", options.tail_lines),
        ("limitBytes", options.limit_bytes),
    ] {
        if let Some(value) = value {
            pairs.push((name, value.to_string()));
        }
    }
    if let Some(since_time) = &options.since_time {
        pairs.push(("sinceTime", since_time.clone()));
    }
    if let Some(stream) = &options.stream {
        pairs.push(("stream", stream.clone()));
    }
    encode_query(&pairs)
}

/// The worker's `pods/exec` or `pods/attach` query for these options.
pub fn stream_query(container: &str, options: &StreamOptions) -> String {
    let mut pairs: Vec<(&str, &str)> = vec![("container", container)];
    for (name, on) in [
        ("stdin", options.stdin),
        ("stdout", options.stdout),
        ("stderr", options.stderr),
        ("tty", options.tty),
    ] {
        if on {
            pairs.push((name, "true"));
        }
    }
    pairs.extend(options.command.iter().map(|c| ("command", c.as_str())));
    encode_query(&pairs)
}

/// The worker's `pods/portforward` query for these ports (comma-joined, which both
/// kube-apiserver and kube-rs accept).
pub fn port_query(ports: &[u16]) -> String {
    if ports.is_empty() {
        return String::new();
    }
    let joined = ports
        .iter()
        .map(u16::to_string)
        .collect::<Vec<_>>()
        .join(",");
    encode_query(&[("ports", joined)])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(ns: &str, name: &str, uid: Option<&str>) -> PodPath {
        PodPath {
            namespace: ns.into(),
            name: name.into(),
            uid: uid.map(Into::into),
        }
    }

    #[test]
    fn paths_parse_into_requests() {
        let exec = |uid: Option<&str>| KubeletRequest::Stream {
            kind: StreamKind::Exec,
            pod: pod("ns", "p", uid),
            container: "c".into(),
            options: StreamOptions {
                stdout: true,
                stderr: true,
                command: vec!["echo".into(), "hello world".into()],
                ..StreamOptions::default()
            },
        };
        // (method, path, query, request or status)
        type Case<'a> = (
            Method,
            &'a str,
            Option<&'a str>,
            Result<KubeletRequest, StatusCode>,
        );
        let cases: Vec<Case> = vec![
            (Method::GET, "/healthz", None, Ok(KubeletRequest::Healthz)),
            (Method::HEAD, "/healthz", None, Ok(KubeletRequest::Healthz)),
            (
                Method::POST,
                "/healthz",
                None,
                Err(StatusCode::METHOD_NOT_ALLOWED),
            ),
            (
                Method::GET,
                "/containerLogs/ns/p/c",
                Some("follow=true&tailLines=3"),
                Ok(KubeletRequest::ContainerLogs {
                    pod: pod("ns", "p", None),
                    container: "c".into(),
                    options: LogOptions {
                        follow: true,
                        tail_lines: Some(3),
                        ..LogOptions::default()
                    },
                }),
            ),
            (
                Method::GET,
                "/containerLogs/ns/p",
                None,
                Err(StatusCode::NOT_FOUND),
            ),
            (
                Method::GET,
                "/containerLogs/ns//c",
                None,
                Err(StatusCode::NOT_FOUND),
            ),
            (
                Method::POST,
                "/exec/ns/p/c",
                Some("command=echo&command=hello+world&output=1&error=1"),
                Ok(exec(None)),
            ),
            (
                Method::GET,
                "/exec/ns/p/uid-1/c",
                Some("command=echo&command=hello%20world&stdout=true&stderr=true"),
                Ok(exec(Some("uid-1"))),
            ),
            (
                Method::GET,
                "/exec/ns/p/c",
                Some("output=1"),
                Err(StatusCode::BAD_REQUEST),
            ),
            (
                Method::GET,
                "/exec/ns/p/c",
                Some("command=ls"),
                Err(StatusCode::BAD_REQUEST),
            ),
            (
                Method::DELETE,
                "/exec/ns/p/c",
                None,
                Err(StatusCode::METHOD_NOT_ALLOWED),
            ),
            (
                Method::GET,
                "/exec/ns/p/a/b/c",
                Some("command=ls&output=1"),
                Err(StatusCode::NOT_FOUND),
            ),
            (
                Method::GET,
                "/attach/ns/p/c",
                Some("input=1&output=1&tty=1"),
                Ok(KubeletRequest::Stream {
                    kind: StreamKind::Attach,
                    pod: pod("ns", "p", None),
                    container: "c".into(),
                    options: StreamOptions {
                        stdin: true,
                        stdout: true,
                        tty: true,
                        ..StreamOptions::default()
                    },
                }),
            ),
            (
                Method::POST,
                "/portForward/ns/p",
                Some("port=8080&ports=80,443"),
                Ok(KubeletRequest::PortForward {
                    pod: pod("ns", "p", None),
                    ports: vec![8080, 80, 443],
                }),
            ),
            (
                Method::GET,
                "/portForward/ns/p/uid-1",
                None,
                Ok(KubeletRequest::PortForward {
                    pod: pod("ns", "p", Some("uid-1")),
                    ports: vec![],
                }),
            ),
            (
                Method::GET,
                "/portForward/ns/p",
                Some("port=0"),
                Err(StatusCode::BAD_REQUEST),
            ),
            (
                Method::GET,
                "/portForward/ns/p",
                Some("port=http"),
                Err(StatusCode::BAD_REQUEST),
            ),
            (
                Method::GET,
                "/metrics/cadvisor",
                None,
                Ok(KubeletRequest::MetricsCadvisor),
            ),
            (
                Method::GET,
                "/stats/summary",
                Some("only_cpu_and_memory=true"),
                Ok(KubeletRequest::StatsSummary {
                    only_cpu_and_memory: true,
                }),
            ),
            (
                Method::GET,
                "/metrics/resource",
                None,
                Ok(KubeletRequest::MetricsResource),
            ),
            (
                Method::GET,
                "/metrics/probes",
                None,
                Err(StatusCode::NOT_FOUND),
            ),
            (Method::GET, "/pods", None, Err(StatusCode::NOT_FOUND)),
            (Method::GET, "/", None, Err(StatusCode::NOT_FOUND)),
        ];
        for (method, path, query, want) in cases {
            let got = parse_request(&method, path, query).map_err(|e| e.status());
            assert_eq!(got, want, "{method} {path}?{query:?}");
        }
    }

    #[test]
    fn log_options_are_validated() {
        let parse = |q: &str| {
            parse_request(&Method::GET, "/containerLogs/ns/p/c", Some(q)).map(|r| match r {
                KubeletRequest::ContainerLogs { options, .. } => options,
                other => panic!("unexpected {other:?}"),
            })
        };
        let all = parse(
            "follow=1&previous=true&timestamps=T&sinceSeconds=60&tailLines=0&limitBytes=10&stream=Stdout",
        )
        .unwrap();
        assert_eq!(
            all,
            LogOptions {
                follow: true,
                previous: true,
                timestamps: true,
                since_seconds: Some(60),
                since_time: None,
                tail_lines: Some(0),
                limit_bytes: Some(10),
                stream: Some("Stdout".into()),
            }
        );
        assert_eq!(
            parse("sinceTime=2024-01-02T03:04:05Z")
                .unwrap()
                .since_time
                .as_deref(),
            Some("2024-01-02T03:04:05Z")
        );
        for bad in [
            "follow=yes",
            "tailLines=-1",
            "tailLines=ten",
            "sinceSeconds=0",
            "limitBytes=0",
            "sinceTime=yesterday",
            "stream=both",
            "sinceSeconds=5&sinceTime=2024-01-02T03:04:05Z",
        ] {
            assert!(parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn worker_paths_use_the_api_server_form() {
        let request =
            |path: &str, query: &str| parse_request(&Method::GET, path, Some(query)).unwrap();
        let cases = [
            (
                request(
                    "/containerLogs/vns/vp/app",
                    "follow=true&tailLines=2&sinceTime=2024-01-02T03:04:05Z&unknown=x",
                ),
                "/api/v1/namespaces/pns/pods/pp/log?container=app&follow=true&tailLines=2&sinceTime=2024-01-02T03%3A04%3A05Z",
            ),
            (
                request(
                    "/exec/vns/vp/app",
                    "command=sh&command=-c&command=echo+hi&input=1&output=1&tty=1",
                ),
                "/api/v1/namespaces/pns/pods/pp/exec?container=app&stdin=true&stdout=true&tty=true&command=sh&command=-c&command=echo%20hi",
            ),
            (
                request("/attach/vns/vp/app", "output=1&error=1"),
                "/api/v1/namespaces/pns/pods/pp/attach?container=app&stdout=true&stderr=true",
            ),
            (
                request("/portForward/vns/vp", "port=8080,9090"),
                "/api/v1/namespaces/pns/pods/pp/portforward?ports=8080%2C9090",
            ),
            (
                request("/portForward/vns/vp", ""),
                "/api/v1/namespaces/pns/pods/pp/portforward",
            ),
        ];
        for (request, want) in cases {
            assert_eq!(request.worker_pod_path("pns", "pp").as_deref(), Some(want));
            assert!(worker_node_path(&request, "n").is_none());
        }
        let summary = request("/stats/summary", "only_cpu_and_memory=true");
        assert_eq!(summary.worker_pod_path("pns", "pp"), None);
        assert_eq!(
            worker_node_path(&summary, "node-1").as_deref(),
            Some("/api/v1/nodes/node-1/proxy/stats/summary?only_cpu_and_memory=true")
        );
        assert_eq!(
            worker_node_path(&KubeletRequest::MetricsResource, "node-1").as_deref(),
            Some("/api/v1/nodes/node-1/proxy/metrics/resource")
        );
    }

    #[test]
    fn endpoints_name_themselves() {
        for (path, want) in [
            ("/healthz", "healthz"),
            ("/containerLogs/a/b/c", "containerLogs"),
            ("/exec/a/b/c", "exec"),
            ("/attach/a/b/c", "attach"),
            ("/portForward/a/b", "portForward"),
            ("/stats/summary", "stats/summary"),
            ("/metrics/resource", "metrics/resource"),
            ("/metrics", "unknown"),
            ("/configz", "unknown"),
        ] {
            assert_eq!(Endpoint::of_path(path).as_str(), want, "{path}");
        }
    }
}
