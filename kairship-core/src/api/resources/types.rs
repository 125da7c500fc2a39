//! Messages of the resources feature: typed kinds and any resource by group, version and
//! resource inside an instance, and their events.

use bytes::Bytes;
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use utoipa::ToSchema;

use crate::api::{ApiError, KubeObject, ListOptions, Object, ObjectList, Pagination, ResourceKind};

/// `ListResources`: objects of one kind in one namespace, or in all namespaces
/// (`namespace` absent), or of a cluster-scoped kind.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListResourcesRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace; absent for all namespaces or cluster-scoped kinds.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetResource`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `CreateResource`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object; policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `UpdateResource`: replaces an object (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// The new object; policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = KubeObject)]
    pub body: Object,
}

/// `DeleteResource`: a (Cluster)PropagationPolicy still used by a ResourceBinding is kept.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteResourceRequest {
    /// Instance name.
    pub instance: String,
    /// The kind.
    pub kind: ResourceKind,
    /// Namespace (required for namespaced kinds, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `ListObjects`: objects of any resource the instance serves, named by group, version and
/// plural, in one namespace, in all namespaces (`namespace` absent), or cluster-scoped.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListObjectsRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version (`v1`, `v1alpha1`).
    pub version: String,
    /// Resource plural (`deployments`, `nodes`).
    pub resource: String,
    /// Namespace; absent for all namespaces or cluster-scoped resources.
    #[serde(default)]
    pub namespace: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// `GetObject`: one object of any resource.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `CreateObject`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object (`apiVersion`, `kind` and the namespace are filled in when absent); Karmada
    /// policies may be given as `{"data": "<YAML or JSON>"}`.
    #[schema(value_type = Object)]
    pub body: Object,
}

/// `UpdateObject`: replaces an object (pass `metadata.resourceVersion` to guard against
/// concurrent changes).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UpdateObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// The new object.
    #[schema(value_type = Object)]
    pub body: Object,
}

/// How a patch is to be applied (in REST, the request's `Content-Type`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum PatchType {
    /// JSON merge patch (RFC 7386), `application/merge-patch+json`.
    #[default]
    Merge,
    /// JSON patch (RFC 6902, an array of operations), `application/json-patch+json`.
    Json,
    /// Kubernetes strategic merge patch (built-in kinds only),
    /// `application/strategic-merge-patch+json`.
    Strategic,
    /// Server-side apply of the whole intended object, `application/apply-patch+yaml` (YAML
    /// or JSON).
    Apply,
}

impl PatchType {
    /// Every patch type.
    pub const ALL: [PatchType; 4] = [
        PatchType::Merge,
        PatchType::Json,
        PatchType::Strategic,
        PatchType::Apply,
    ];

    /// The media type of the patch type.
    pub fn content_type(self) -> &'static str {
        match self {
            PatchType::Merge => "application/merge-patch+json",
            PatchType::Json => "application/json-patch+json",
            PatchType::Strategic => "application/strategic-merge-patch+json",
            PatchType::Apply => "application/apply-patch+yaml",
        }
    }

    /// The patch type of a media type (parameters such as `; charset=utf-8` ignored).
    pub fn from_content_type(content_type: &str) -> Option<PatchType> {
        let essence = content_type.split(';').next().unwrap_or_default().trim();
        if essence.eq_ignore_ascii_case("application/apply-patch+json") {
            return Some(PatchType::Apply);
        }
        PatchType::ALL
            .into_iter()
            .find(|t| essence.eq_ignore_ascii_case(t.content_type()))
    }
}

/// `PatchObject`: changes an object with a merge, JSON, strategic merge or apply patch.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PatchObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
    /// How `patch` applies.
    #[serde(default)]
    pub patch_type: PatchType,
    /// The patch: an object, or for `json` an array of operations.
    pub patch: serde_json::Value,
    /// Who manages the fields (apply; default `kairship`).
    #[serde(default)]
    pub field_manager: Option<String>,
    /// Apply only: take over fields other managers own.
    #[serde(default)]
    pub force: Option<bool>,
}

/// `DeleteObject`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DeleteObjectRequest {
    /// Instance name.
    pub instance: String,
    /// API group; `core` for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Resource plural.
    pub resource: String,
    /// Namespace (required for namespaced resources, absent for cluster-scoped ones).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Object name.
    pub name: String,
}

/// `ListEvents`: `core/v1` Events of an instance, of one namespace, or of one object, filtered
/// by type, reason and the kind of object they are about.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListEventsRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace of the events (and of the object, if namespaced); absent: all namespaces.
    #[serde(default)]
    pub namespace: Option<String>,
    /// The object's API group (`core` for the core group); with `version`, `resource` and
    /// `name`, only the events of that object.
    #[serde(default)]
    pub group: Option<String>,
    /// The object's API version.
    #[serde(default)]
    pub version: Option<String>,
    /// The object's resource plural.
    #[serde(default)]
    pub resource: Option<String>,
    /// The object's name.
    #[serde(default)]
    pub name: Option<String>,
    /// Only events of this type: `Normal` or `Warning`.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// Only events with this reason (`FailedScheduling`).
    #[serde(default)]
    pub reason: Option<String>,
    /// Only events about objects of this kind (`Deployment`).
    #[serde(default)]
    pub kind: Option<String>,
    /// Selectors, fuzzy name, sorting and paging.
    #[serde(default)]
    pub options: ListOptions,
}

/// A page of objects to be written out as JSON: the same document as [`ObjectList`]
/// (`{"items": [...], "pagination": {...}}`), whose items are either decoded objects or, when
/// the read backend keeps objects as JSON (the embedded cache), those bytes copied as they are,
/// so that a REST list costs what the native proxy's does instead of a decode and an encode per
/// object.
#[derive(Clone, Debug, PartialEq)]
pub struct RenderedObjectList {
    /// The objects of this page, in order.
    pub items: RenderedItems,
    /// Paging facts.
    pub pagination: Pagination,
}

/// The items of a [`RenderedObjectList`].
#[derive(Clone, Debug, PartialEq)]
pub enum RenderedItems {
    /// Decoded objects.
    Objects(Vec<Object>),
    /// Each object's JSON, as the backend keeps it.
    Json(Vec<Bytes>),
}

impl RenderedObjectList {
    /// The page with every item decoded, as the other transports carry it.
    pub fn into_object_list(self) -> Result<ObjectList, ApiError> {
        let items = match self.items {
            RenderedItems::Objects(items) => items,
            RenderedItems::Json(items) => items
                .iter()
                .map(|json| {
                    serde_json::from_slice(json).map_err(|e| {
                        ApiError::internal(format!("cannot decode a listed object: {e}"))
                    })
                })
                .collect::<Result<_, _>>()?,
        };
        Ok(ObjectList {
            items,
            pagination: self.pagination,
        })
    }
}

impl From<ObjectList> for RenderedObjectList {
    fn from(list: ObjectList) -> Self {
        RenderedObjectList {
            items: RenderedItems::Objects(list.items),
            pagination: list.pagination,
        }
    }
}

impl Serialize for RenderedObjectList {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut list = serializer.serialize_struct("ObjectList", 2)?;
        list.serialize_field("items", &self.items)?;
        list.serialize_field("pagination", &self.pagination)?;
        list.end()
    }
}

impl Serialize for RenderedItems {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{Error as _, SerializeSeq as _};
        match self {
            RenderedItems::Objects(items) => items.serialize(serializer),
            RenderedItems::Json(items) => {
                let mut seq = serializer.serialize_seq(Some(items.len()))?;
                for json in items {
                    // Borrowed, so checked but neither copied nor decoded into a tree.
                    let raw: &RawValue = serde_json::from_slice(json).map_err(|e| {
                        S::Error::custom(format!("a listed object is not JSON: {e}"))
                    })?;
                    seq.serialize_element(raw)?;
                }
                seq.end()
            }
        }
    }
}

/// `ListApiResources`: the resources an instance serves, from its discovery.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListApiResourcesRequest {
    /// Instance name.
    pub instance: String,
}

/// One resource an instance serves at one version, as its discovery describes it
/// (`kubectl api-resources`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceInfo {
    /// API group; `core` for the core group, as the generic paths spell it.
    pub group: String,
    /// API version.
    pub version: String,
    /// Whether `version` is the group's preferred version (listed first of the group's).
    pub preferred: bool,
    /// Resource plural (`deployments`), the `{resource}` of the generic paths.
    pub resource: String,
    /// Singular name (`deployment`); empty when discovery gives none.
    pub singular: String,
    /// Kind of its objects.
    pub kind: String,
    /// Whether its objects live in namespaces.
    pub namespaced: bool,
    /// Verbs it supports (`get`, `list`, `watch`, `create`, ...).
    pub verbs: Vec<String>,
    /// Short names (`deploy`).
    pub short_names: Vec<String>,
    /// Categories (`all`).
    pub categories: Vec<String>,
    /// Its subresources (`status`, `scale`), which are not listed as resources of their own.
    pub subresources: Vec<String>,
}

/// The answer of `ListApiResources`: every resource of every served group version, the core
/// group first, then the groups in the instance's discovery order (by priority), each group's
/// preferred version first.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ApiResourceList {
    /// The resources.
    pub items: Vec<ApiResourceInfo>,
}
