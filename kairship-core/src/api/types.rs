//! Request and response messages of [`KairshipApi`](super::KairshipApi): plain serde structs,
//! the same for REST and gRPC (the proto files mirror them field by field). Kubernetes objects
//! travel as JSON ([`Object`]; `google.protobuf.Struct` in proto).

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

/// A Kubernetes object as JSON (`apiVersion`, `kind`, `metadata`, ...).
pub type Object = serde_json::Value;

/// What lists are sorted by.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub enum SortBy {
    /// `metadata.name` (the default).
    #[default]
    Name,
    /// `metadata.creationTimestamp`.
    CreationTimestamp,
    /// `status.state` (instances only).
    State,
    /// `metadata.namespace`, then name (objects inside an instance).
    Namespace,
}

/// Sort direction.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortDir {
    /// Ascending (the default).
    #[default]
    Asc,
    /// Descending.
    Desc,
}

/// Filtering, sorting and paging of a list (query parameters in REST).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListOptions {
    /// 1-based page number (default 1).
    #[param(minimum = 1)]
    #[schema(minimum = 1)]
    pub page: Option<u32>,
    /// Items per page, 1 to 10000; absent: 10000, the maximum (`pagination.pageSize` always
    /// reports the size applied).
    #[param(minimum = 1, maximum = 10000)]
    #[schema(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
    /// Sort key (default `name`; `state` only for instances, `namespace` only for objects
    /// inside an instance).
    pub sort_by: Option<SortBy>,
    /// Sort direction (default `asc`).
    pub sort_dir: Option<SortDir>,
    /// Sort objects inside an instance by this field instead of `sortBy`: a printer column's
    /// JSONPath of field names (`.spec.replicas`, `.status.readyReplicas`); ties by name;
    /// objects without the field first.
    #[param(max_length = 512)]
    #[schema(max_length = 512)]
    pub sort_field: Option<String>,
    /// Fuzzy name filter: case-insensitive substring of `metadata.name`.
    pub name: Option<String>,
    /// Kubernetes label selector (`app=web,tier!=db`).
    pub label_selector: Option<String>,
    /// Kubernetes field selector (`metadata.namespace=default`).
    pub field_selector: Option<String>,
    /// Only objects of these namespaces, comma-separated (`team-a,team-b`): lists of a
    /// namespaced resource across namespaces only.
    #[param(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    #[schema(pattern = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?(,[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")]
    pub namespaces: Option<String>,
}

/// Paging facts of a list answer.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Pagination {
    /// Matching objects over all pages.
    pub total: u64,
    /// This page (1-based).
    pub page: u32,
    /// The page size used (the total when everything is on one page).
    pub page_size: u32,
    /// Number of pages.
    pub pages: u32,
}

/// A page of objects.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectList {
    /// The objects of this page, in order.
    #[schema(value_type = Vec<Object>)]
    pub items: Vec<Object>,
    /// Paging facts.
    pub pagination: Pagination,
}

/// The accepted shape of an object body: these top-level fields and no others. Policy bodies
/// may instead be `{"data": "<the policy as YAML or JSON text>"}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KubeObject {
    /// `group/version` (filled in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api_version: Option<String>,
    /// Kind (filled in when absent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    /// Object metadata (`name`, `namespace`, `labels`, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub metadata: Option<serde_json::Value>,
    /// Desired state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub spec: Option<serde_json::Value>,
    /// Observed state (ignored by most writes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub status: Option<serde_json::Value>,
    /// ConfigMap/Secret data (an object), or a whole policy as YAML/JSON text (a string).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data: Option<serde_json::Value>,
    /// ConfigMap binary data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub binary_data: Option<serde_json::Value>,
    /// Secret string data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub string_data: Option<serde_json::Value>,
    /// Secret type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<String>,
    /// ConfigMap/Secret immutability.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub immutable: Option<bool>,
}

/// How the API spells the core group (`v1` objects: ConfigMaps, Pods, Namespaces, ...) in
/// generic resource paths and messages: `resources/core/v1/configmaps`.
pub const CORE_GROUP: &str = "core";
