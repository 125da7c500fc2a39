//! How a proxied request is handled: which verb it is on the instance, and whether the
//! router's read side answers it or it is forwarded to the instance as is. Pure.

use std::collections::HashMap;
use std::time::Duration;

use http::Method;

use super::path::{KubePath, ResourcePath};
use crate::access::Verb;
use crate::router::{ContinueToken, MAX_PAGE_SIZE, WatchQuery};

/// The query parameters of a read that the read side honours.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReadParams {
    /// `labelSelector`.
    pub label_selector: Option<String>,
    /// `fieldSelector`.
    pub field_selector: Option<String>,
    /// `limit` (0 or absent: no limit).
    pub limit: Option<u32>,
    /// `continue`.
    pub continue_token: Option<String>,
    /// `resourceVersion`.
    pub resource_version: Option<String>,
    /// `resourceVersionMatch`.
    pub resource_version_match: Option<String>,
    /// `watch`.
    pub watch: bool,
    /// `timeoutSeconds`.
    pub timeout_seconds: Option<u64>,
    /// `sendInitialEvents`.
    pub send_initial_events: bool,
}

/// Go's `strconv.ParseBool`, which kube-apiserver uses for boolean parameters; anything else
/// is false.
fn parse_bool(value: &str) -> bool {
    matches!(value, "1" | "t" | "T" | "true" | "TRUE" | "True")
}

impl ReadParams {
    /// From the decoded query string. Unparsable numbers count as absent (the instance would
    /// reject them; such reads are forwarded, see [`plan`]).
    pub fn from_query(query: &HashMap<String, String>) -> Self {
        let text = |key: &str| query.get(key).filter(|v| !v.is_empty()).cloned();
        ReadParams {
            label_selector: text("labelSelector"),
            field_selector: text("fieldSelector"),
            limit: query
                .get("limit")
                .and_then(|l| l.parse::<u64>().ok())
                .filter(|l| *l > 0)
                .map(|l| u32::try_from(l).unwrap_or(u32::MAX)),
            continue_token: text("continue"),
            resource_version: text("resourceVersion"),
            resource_version_match: text("resourceVersionMatch"),
            watch: query.get("watch").is_some_and(|w| parse_bool(w)),
            timeout_seconds: query.get("timeoutSeconds").and_then(|t| t.parse().ok()),
            send_initial_events: query
                .get("sendInitialEvents")
                .is_some_and(|s| parse_bool(s)),
        }
    }

    /// Whether the read asks for a specific resourceVersion (not "any" / "most recent").
    fn pins_version(&self) -> bool {
        self.resource_version
            .as_deref()
            .is_some_and(|rv| !rv.is_empty() && rv != "0")
            || self.resource_version_match.is_some()
    }
}

/// What the proxy does with a request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Handling {
    /// Read one object from the read side.
    Get {
        /// Object name.
        name: String,
    },
    /// List from the read side, in chunks of `limit` after `after`.
    List {
        /// Most objects in the answer.
        limit: Option<u32>,
        /// Resume after this object.
        after: Option<ContinueToken>,
    },
    /// Stream changes from the read side.
    Watch {
        /// Selectors and starting resourceVersion.
        query: WatchQuery,
        /// When the stream ends (`timeoutSeconds`).
        timeout: Option<Duration>,
    },
    /// Send the request to the instance apiserver unchanged.
    Forward,
}

/// Whether the caller accepts the plain JSON the read side produces: no `Accept`, or a first
/// choice of JSON (or a wildcard) and no transformed form (`as=Table`,
/// `as=PartialObjectMetadataList`) anywhere in the list.
pub fn accepts_plain_json(accept: Option<&str>) -> bool {
    let Some(accept) = accept.map(str::trim).filter(|a| !a.is_empty()) else {
        return true;
    };
    let mut first = true;
    let mut first_ok = false;
    for range in accept.split(',') {
        let mut parts = range.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        if parts.any(|p| {
            p.split_once('=')
                .is_some_and(|(k, _)| k.trim().eq_ignore_ascii_case("as"))
        }) {
            return false;
        }
        if first {
            first_ok = matches!(media.as_str(), "application/json" | "*/*" | "application/*");
            first = false;
        }
    }
    first_ok
}

/// The verb the request applies to the instance, as authorized on `kairship.io/instances/proxy`;
/// `None` for methods the proxy does not carry.
pub fn verb_of(method: &Method, path: &KubePath, watch: bool) -> Option<Verb> {
    let resource = match path {
        KubePath::Resource(r) => Some(r),
        _ => None,
    };
    Some(match *method {
        Method::GET | Method::HEAD => match resource {
            Some(r) if watch || r.watch_prefix => Verb::Watch,
            Some(r) if r.is_collection() => Verb::List,
            _ => Verb::Get,
        },
        Method::POST => Verb::Create,
        Method::PUT => Verb::Update,
        Method::PATCH => Verb::Patch,
        Method::DELETE => Verb::Delete,
        _ => return None,
    })
}

/// How to handle a request: GETs of collections and objects (not subresources) in plain JSON
/// are read from the read side, unless they pin a resourceVersion, carry a continue token the
/// proxy did not issue, or ask for the streaming initial list; everything else is forwarded.
pub fn plan(
    method: &Method,
    path: &KubePath,
    params: &ReadParams,
    accept: Option<&str>,
) -> Handling {
    let KubePath::Resource(resource) = path else {
        return Handling::Forward;
    };
    if *method != Method::GET || resource.subresource.is_some() || !accepts_plain_json(accept) {
        return Handling::Forward;
    }
    if params.watch || resource.watch_prefix {
        return plan_watch(resource, params);
    }
    if params.pins_version() {
        return Handling::Forward;
    }
    match &resource.name {
        Some(name) => Handling::Get { name: name.clone() },
        None => {
            let after = match params.continue_token.as_deref().map(ContinueToken::decode) {
                None => None,
                Some(Ok(token)) => Some(token),
                // A token of the instance's own (an earlier page was forwarded).
                Some(Err(_)) => return Handling::Forward,
            };
            Handling::List {
                limit: params.limit.map(|l| l.min(MAX_PAGE_SIZE)),
                after,
            }
        }
    }
}

fn plan_watch(resource: &ResourcePath, params: &ReadParams) -> Handling {
    if params.send_initial_events {
        return Handling::Forward;
    }
    let mut field_selector = params.field_selector.clone();
    // A watch on one object is a watch on its collection narrowed by name, as kube-apiserver
    // does for `/watch/.../{name}`.
    if let Some(name) = &resource.name {
        let by_name = format!("metadata.name={name}");
        field_selector = Some(match field_selector {
            Some(fs) => format!("{fs},{by_name}"),
            None => by_name,
        });
    }
    Handling::Watch {
        query: WatchQuery {
            label_selector: params.label_selector.clone(),
            field_selector,
            resource_version: params.resource_version.clone(),
        },
        timeout: params.timeout_seconds.map(Duration::from_secs),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proxy::path::parse_kube_path;

    fn query(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn reads_query_parameters() {
        let p = ReadParams::from_query(&query(&[
            ("labelSelector", "app=web"),
            ("fieldSelector", ""),
            ("limit", "500"),
            ("continue", "abc"),
            ("watch", "1"),
            ("timeoutSeconds", "290"),
            ("resourceVersion", "0"),
        ]));
        assert_eq!(p.label_selector.as_deref(), Some("app=web"));
        assert_eq!(p.field_selector, None);
        assert_eq!(p.limit, Some(500));
        assert_eq!(p.continue_token.as_deref(), Some("abc"));
        assert!(p.watch);
        assert_eq!(p.timeout_seconds, Some(290));
        assert!(!p.pins_version());
        for (watch, want) in [
            ("true", true),
            ("True", true),
            ("false", false),
            ("yes", false),
        ] {
            assert_eq!(
                ReadParams::from_query(&query(&[("watch", watch)])).watch,
                want
            );
        }
        for (limit, want) in [
            ("0", None),
            ("-1", None),
            ("x", None),
            ("99999999999", Some(u32::MAX)),
        ] {
            assert_eq!(
                ReadParams::from_query(&query(&[("limit", limit)])).limit,
                want,
                "{limit}"
            );
        }
    }

    #[test]
    fn accept_headers_table() {
        for (accept, want) in [
            (None, true),
            (Some(""), true),
            (Some("application/json"), true),
            (Some("application/json, */*"), true),
            (Some("*/*"), true),
            (Some("application/json;charset=utf-8"), true),
            (
                Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"),
                false,
            ),
            (
                Some("application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"),
                false,
            ),
            (
                Some("application/vnd.kubernetes.protobuf, application/json"),
                false,
            ),
            (Some("application/yaml"), false),
        ] {
            assert_eq!(accepts_plain_json(accept), want, "{accept:?}");
        }
    }

    #[test]
    fn verbs_table() {
        let collection = parse_kube_path("/apis/apps/v1/namespaces/a/deployments");
        let object = parse_kube_path("/apis/apps/v1/namespaces/a/deployments/web");
        let watch_prefix = parse_kube_path("/api/v1/watch/pods");
        let discovery = parse_kube_path("/apis");
        for (method, path, watch, want) in [
            (Method::GET, &collection, false, Some(Verb::List)),
            (Method::GET, &collection, true, Some(Verb::Watch)),
            (Method::GET, &watch_prefix, false, Some(Verb::Watch)),
            (Method::GET, &object, false, Some(Verb::Get)),
            (Method::HEAD, &object, false, Some(Verb::Get)),
            (Method::GET, &discovery, false, Some(Verb::Get)),
            (Method::POST, &collection, false, Some(Verb::Create)),
            (Method::PUT, &object, false, Some(Verb::Update)),
            (Method::PATCH, &object, false, Some(Verb::Patch)),
            (Method::DELETE, &object, false, Some(Verb::Delete)),
            (Method::DELETE, &collection, false, Some(Verb::Delete)),
            (Method::OPTIONS, &object, false, None),
        ] {
            assert_eq!(verb_of(&method, path, watch), want, "{method} {path:?}");
        }
    }

    #[test]
    fn plans_table() {
        let token = ContinueToken {
            namespace: Some("a".into()),
            name: "web".into(),
        }
        .encode();
        let list = "/apis/apps/v1/namespaces/a/deployments";
        let object = "/apis/apps/v1/namespaces/a/deployments/web";
        let json = Some("application/json");
        let table = Some("application/json;as=Table;v=v1;g=meta.k8s.io,application/json");
        // (method, path, query, accept, handling)
        type Case<'a> = (
            Method,
            &'a str,
            Vec<(&'a str, &'a str)>,
            Option<&'a str>,
            Handling,
        );
        let cases: Vec<Case> = vec![
            (
                Method::GET,
                list,
                vec![],
                None,
                Handling::List {
                    limit: None,
                    after: None,
                },
            ),
            (
                Method::GET,
                list,
                vec![
                    ("limit", "500"),
                    ("continue", &token),
                    ("resourceVersion", "0"),
                ],
                json,
                Handling::List {
                    limit: Some(500),
                    after: Some(ContinueToken::decode(&token).unwrap()),
                },
            ),
            (
                Method::GET,
                list,
                vec![("limit", "50000")],
                json,
                Handling::List {
                    limit: Some(MAX_PAGE_SIZE),
                    after: None,
                },
            ),
            (
                Method::GET,
                object,
                vec![],
                json,
                Handling::Get { name: "web".into() },
            ),
            (
                Method::GET,
                list,
                vec![
                    ("watch", "true"),
                    ("labelSelector", "app=x"),
                    ("timeoutSeconds", "5"),
                ],
                None,
                Handling::Watch {
                    query: WatchQuery {
                        label_selector: Some("app=x".into()),
                        ..WatchQuery::default()
                    },
                    timeout: Some(Duration::from_secs(5)),
                },
            ),
            (
                Method::GET,
                "/apis/apps/v1/watch/namespaces/a/deployments/web",
                vec![("resourceVersion", "17"), ("fieldSelector", "x=y")],
                None,
                Handling::Watch {
                    query: WatchQuery {
                        field_selector: Some("x=y,metadata.name=web".into()),
                        resource_version: Some("17".into()),
                        ..WatchQuery::default()
                    },
                    timeout: None,
                },
            ),
            // Forwarded: writes, subresources, tables, pinned versions, foreign tokens,
            // streaming lists, discovery, unknown paths.
            (Method::POST, list, vec![], json, Handling::Forward),
            (Method::PATCH, object, vec![], json, Handling::Forward),
            (Method::DELETE, object, vec![], json, Handling::Forward),
            (
                Method::GET,
                "/api/v1/namespaces/a/pods/p/log",
                vec![],
                None,
                Handling::Forward,
            ),
            (Method::GET, list, vec![], table, Handling::Forward),
            (
                Method::GET,
                list,
                vec![("resourceVersion", "12")],
                None,
                Handling::Forward,
            ),
            (
                Method::GET,
                list,
                vec![
                    ("resourceVersionMatch", "NotOlderThan"),
                    ("resourceVersion", "0"),
                ],
                None,
                Handling::Forward,
            ),
            (
                Method::GET,
                object,
                vec![("resourceVersion", "12")],
                None,
                Handling::Forward,
            ),
            (
                Method::GET,
                list,
                vec![("continue", "eyJ2IjoibWV0YS")],
                None,
                Handling::Forward,
            ),
            (
                Method::GET,
                list,
                vec![("watch", "1"), ("sendInitialEvents", "true")],
                None,
                Handling::Forward,
            ),
            (Method::GET, "/apis", vec![], None, Handling::Forward),
            (Method::GET, "/metrics", vec![], None, Handling::Forward),
        ];
        for (method, path, pairs, accept, want) in cases {
            let params = ReadParams::from_query(&query(&pairs));
            assert_eq!(
                plan(&method, &parse_kube_path(path), &params, accept),
                want,
                "{method} {path} {pairs:?} {accept:?}"
            );
        }
    }
}
