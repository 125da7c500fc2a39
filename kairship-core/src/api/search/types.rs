//! Messages of the fleet search.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};

use crate::api::{Pagination, SortBy, SortDir};

/// What to search for (query parameters in REST). `kind`, or `group`, `version` and
/// `resource`, is required; every other filter is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema, IntoParams)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct SearchRequest {
    /// The kind searched (`Deployment`, or its plural `deployments`): one of the kinds the
    /// API serves by name.
    pub kind: Option<String>,
    /// The API group of the resource searched (`apps`; `core` for the core group), with
    /// `version` and `resource`, instead of `kind`.
    pub group: Option<String>,
    /// The API version of the resource searched (`v1`).
    pub version: Option<String>,
    /// The plural resource searched (`deployments`).
    pub resource: Option<String>,
    /// Only objects whose name contains this text, ignoring case.
    pub name: Option<String>,
    /// Only objects whose labels match this Kubernetes label selector.
    pub label_selector: Option<String>,
    /// Only objects of this namespace.
    pub namespace: Option<String>,
    /// Only these instances: one name or a comma-separated list.
    pub instance: Option<String>,
    /// Only objects of this member cluster (member views); member views are not cached, so
    /// a search naming a cluster is refused.
    pub cluster: Option<String>,
    /// 1-based page number (default 1).
    #[param(minimum = 1)]
    #[schema(minimum = 1)]
    pub page: Option<u32>,
    /// Hits per page, 1 to 10000 (default 10000).
    #[param(minimum = 1, maximum = 10000)]
    #[schema(minimum = 1, maximum = 10000)]
    pub page_size: Option<u32>,
    /// `name` (the default), `namespace` or `creationTimestamp`; ties by instance,
    /// namespace and name.
    pub sort_by: Option<SortBy>,
    /// `asc` (the default) or `desc`.
    pub sort_dir: Option<SortDir>,
}

/// One object found.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchHit {
    /// The instance holding the object.
    pub instance: String,
    /// The member cluster, for an object of a member view.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cluster: Option<String>,
    /// `apiVersion` of the object.
    pub api_version: String,
    /// `kind` of the object.
    pub kind: String,
    /// `metadata.namespace` (none for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// `metadata.name`.
    pub name: String,
    /// `metadata.labels`.
    #[serde(default)]
    pub labels: BTreeMap<String, String>,
    /// `metadata.creationTimestamp` (RFC 3339).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub creation_timestamp: Option<String>,
}

/// How many objects of one instance matched (over all pages).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceTotal {
    /// The instance.
    pub instance: String,
    /// Its matching objects.
    pub total: u64,
}

/// An instance the search could not read, and why (its cache has not synced yet, the
/// instance cannot be reached, it does not serve the resource).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct UnavailableInstance {
    /// The instance.
    pub instance: String,
    /// Why it was not searched.
    pub reason: String,
}

/// A page of hits across the instances searched.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SearchResult {
    /// The hits of this page.
    pub items: Vec<SearchHit>,
    /// Matching objects per instance searched (instances with none included), by instance.
    pub totals: Vec<InstanceTotal>,
    /// Instances the caller may read that were not searched, by instance.
    pub unavailable: Vec<UnavailableInstance>,
    /// Paging facts over all hits.
    pub pagination: Pagination,
}
