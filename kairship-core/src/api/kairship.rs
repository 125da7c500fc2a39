//! [`KairshipService`], the implementation of [`KairshipApi`](crate::api::KairshipApi): Instances on the host cluster,
//! everything inside an instance through the read-write split router.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kube::Client;
use kube::core::{ApiResource, DynamicObject};
use serde::de::IgnoredAny;
use serde_json::Value;

use crate::access::Authorizer;
use crate::api::inside::Gvr;
use crate::api::list::pagination;
use crate::api::{ApiError, Object, ObjectList, RenderedItems, RenderedObjectList};
use crate::instance::Instance;
use crate::router::{DiscoveryCache, InstanceClients, ObjectPage, ReadWriteRouter, RouterError};

#[path = "kairship_steps.rs"]
mod steps;

/// Settings of [`KairshipService`].
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Base URL clients reach the API server at, written into kubeconfigs when the request
    /// does not say (`https://kairship.example.com`).
    pub external_url: Option<String>,
    /// CA certificate (PEM) written into kubeconfigs, for servers whose certificate is not
    /// publicly trusted.
    pub ca_pem: Option<String>,
    /// Time one call to the host cluster may take.
    pub host_timeout: Duration,
    /// How long unjoining a member waits for Karmada to remove its `Cluster` before
    /// answering that Karmada is not done yet (`karmadactl unjoin --wait`'s default: 60 s).
    pub unjoin_wait: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            external_url: None,
            ca_pem: None,
            host_timeout: Duration::from_secs(10),
            unjoin_wait: Duration::from_secs(60),
        }
    }
}

/// The Kairship API over a host cluster (Instances) and a [`ReadWriteRouter`] (everything
/// inside the instances), with an [`Authorizer`] deciding who may do what.
pub struct KairshipService {
    pub(super) host: Client,
    pub(super) router: Arc<dyn ReadWriteRouter>,
    pub(super) authorizer: Arc<dyn Authorizer>,
    pub(super) config: ServiceConfig,
    pub(super) discovery: Option<Discovery>,
    /// Where writes made on the host for callers are recorded, and the trail is read.
    pub(super) audit: Option<crate::audit::log::HostAuditLog>,
    /// The embedded cache the router reads, which the fleet search answers from.
    pub(super) search_cache: Option<Arc<crate::router::EmbeddedCacheBackend>>,
}

/// How generic calls learn which resources an instance serves.
pub(super) struct Discovery {
    pub(super) clients: Arc<dyn InstanceClients>,
    pub(super) cache: Arc<DiscoveryCache>,
    /// Every resource each instance serves (`ListApiResources`).
    pub(super) served: crate::api::resources::ServedResources,
}

/// Field manager of apply patches that name none.
pub const DEFAULT_FIELD_MANAGER: &str = "kairship";

impl std::fmt::Debug for KairshipService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KairshipService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

pub(super) fn instance_resource() -> ApiResource {
    ApiResource::erase::<Instance>(&())
}

pub(super) const INSTANCE_API_VERSION: &str = "kairship.io/v1alpha1";

pub(super) fn to_object<T: serde::Serialize>(value: &T, what: &str) -> Result<Object, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal(format!("cannot encode {what}: {e}")))
}

pub(super) fn object_list(page: ObjectPage) -> Result<ObjectList, ApiError> {
    let items = page
        .items
        .iter()
        .map(|o| to_object(o.as_ref(), "a listed object"))
        .collect::<Result<_, _>>()?;
    Ok(ObjectList {
        items,
        pagination: pagination(page.pagination),
    })
}

/// `page` for an answer written out as JSON: the backend's JSON of each object when it has it
/// (a page from [`ReadWriteRouter::list_rendered`] then carries only names in `items`), with
/// the `apiVersion` and `kind` of `resource` where the JSON has none (as list items of
/// built-in kinds come), so that the document holds the fields the decoded objects would; the
/// decoded objects otherwise.
pub(super) fn rendered_object_list(
    page: ObjectPage,
    resource: &ApiResource,
) -> Result<RenderedObjectList, ApiError> {
    let pagination = pagination(page.pagination);
    match page.rendered {
        Some(json) if json.len() == page.items.len() => Ok(RenderedObjectList {
            items: RenderedItems::Json(
                json.into_iter()
                    .map(|json| with_type_meta(json, resource))
                    .collect::<Result<_, _>>()?,
            ),
            pagination,
        }),
        Some(_) => Err(ApiError::internal(
            "a listed page whose objects and their JSON differ in number",
        )),
        None => object_list(page).map(Into::into),
    }
}

/// Which of `apiVersion` and `kind` an object's JSON carries (read without decoding the rest).
#[derive(serde::Deserialize)]
struct TypeMetaProbe {
    #[serde(rename = "apiVersion")]
    api_version: Option<IgnoredAny>,
    kind: Option<IgnoredAny>,
}

/// An object's JSON with `resource`'s `apiVersion` and `kind` written first where it has
/// none, as the decoded object would carry them.
fn with_type_meta(json: Bytes, resource: &ApiResource) -> Result<Bytes, ApiError> {
    let not_object = |reason: String| ApiError::internal(format!("a listed object: {reason}"));
    let probe: TypeMetaProbe =
        serde_json::from_slice(&json).map_err(|e| not_object(e.to_string()))?;
    if probe.api_version.is_some() && probe.kind.is_some() {
        return Ok(json);
    }
    let inside = json
        .trim_ascii_start()
        .strip_prefix(b"{")
        .ok_or_else(|| not_object("not a JSON object".into()))?;
    let mut out = Vec::with_capacity(json.len() + 64);
    out.push(b'{');
    for (field, present, value) in [
        (
            "apiVersion",
            probe.api_version.is_some(),
            &resource.api_version,
        ),
        ("kind", probe.kind.is_some(), &resource.kind),
    ] {
        if !present {
            serde_json::to_writer(&mut out, field).map_err(|e| not_object(e.to_string()))?;
            out.push(b':');
            serde_json::to_writer(&mut out, value).map_err(|e| not_object(e.to_string()))?;
            out.push(b',');
        }
    }
    if inside.trim_ascii_start().starts_with(b"}") {
        // An empty object: no member follows the ones written.
        out.pop();
    }
    out.extend_from_slice(inside);
    Ok(Bytes::from(out))
}

pub(super) fn dynamic(body: Value, what: &str) -> Result<DynamicObject, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::invalid(format!("{what}: {e}")))
}

/// The objects of a list, where a not-found answer means "no such list": the resource type
/// itself is not served (a Karmada without bindings yet), so nothing refers to anything.
pub(super) fn items_or_none_served(
    result: Result<ObjectPage, RouterError>,
) -> Result<Vec<Arc<DynamicObject>>, ApiError> {
    match result {
        Ok(page) => Ok(page.items),
        Err(err) if err.is_not_found() => Ok(Vec::new()),
        Err(err) => Err(err.into()),
    }
}

pub(super) fn gvr<'a>(group: &'a str, version: &'a str, resource: &'a str) -> Gvr<'a> {
    Gvr {
        group,
        version,
        resource,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn with_type_meta_table() {
        let resource = ApiResource {
            group: "apps".into(),
            version: "v1".into(),
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            plural: "deployments".into(),
        };
        // (the backend's JSON, the JSON written out; None: an error)
        let cases: [(&str, Option<&str>); 6] = [
            (
                r#"{"metadata":{"name":"a"}}"#,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"a"}}"#),
            ),
            (
                r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{}}"#,
                Some(r#"{"kind":"Deployment","apiVersion":"apps/v1","metadata":{}}"#),
            ),
            (
                r#"{"kind":"Deployment","metadata":{}}"#,
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{}}"#),
            ),
            (
                " {}",
                Some(r#"{"apiVersion":"apps/v1","kind":"Deployment"}"#),
            ),
            ("[1]", None),
            (r#"{"metadata":"#, None),
        ];
        for (json, want) in cases {
            let got = with_type_meta(Bytes::from(json), &resource).ok();
            assert_eq!(got.as_deref(), want.map(str::as_bytes), "{json}");
        }
        // Each answer is the same object as the decoded one.
        let json = Bytes::from(r#"{"metadata":{"name":"a"},"spec":{"replicas":1}}"#);
        let written = with_type_meta(json, &resource).unwrap();
        let object: Value = serde_json::from_slice(&written).unwrap();
        assert_eq!(object["kind"], "Deployment");
        assert_eq!(object["spec"]["replicas"], 1);
    }

    #[test]
    fn a_rendered_list_writes_the_document_a_decoded_one_does() {
        let items = vec![
            Bytes::from(r#"{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"a"}}"#),
            Bytes::from(r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"b"}}"#),
        ];
        let pagination = crate::api::Pagination {
            total: 2,
            page: 1,
            page_size: 2,
            pages: 1,
        };
        let rendered = RenderedObjectList {
            items: RenderedItems::Json(items),
            pagination,
        };
        let written: Value = serde_json::to_value(&rendered).unwrap();
        let decoded = rendered.into_object_list().unwrap();
        assert_eq!(written, serde_json::to_value(&decoded).unwrap());
        assert_eq!(decoded.items.len(), 2);
        assert_eq!(decoded.items[1]["metadata"]["name"], "b");
    }
}
