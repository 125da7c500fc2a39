//! `ResourceLeasingPolicy`: what a worker cluster lends, when and how much.

use k8s_openapi::api::core::v1::NodeSelector;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use super::schema;

/// Desired state of a ResourceLeasingPolicy, created in the worker cluster.
// kube's `printcolumn(...)` entries repeat `type_`/`json_path`, which is not duplication.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "cloud.tencent.com",
    version = "v1beta1",
    kind = "ResourceLeasingPolicy",
    plural = "resourceleasingpolicies",
    singular = "resourceleasingpolicy",
    shortname = "rlp",
    status = "ResourceLeasingPolicyStatus",
    derive = "Default",
    derive = "PartialEq",
    doc = "ResourceLeasingPolicy says which nodes of a worker cluster are lent to a ClusterBinding, during which time windows and how much of their resources.",
    printcolumn(name = "Cluster", type_ = "string", json_path = ".spec.cluster"),
    printcolumn(name = "Phase", type_ = "string", json_path = ".status.phase"),
    printcolumn(
        name = "Active",
        type_ = "boolean",
        json_path = ".status.activeTimeWindow"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLeasingPolicySpec {
    /// Name of the ClusterBinding this policy lends to.
    #[schemars(length(min = 1))]
    pub cluster: String,

    /// Selects the nodes this policy applies to; empty selects all nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_selector: Option<NodeSelector>,

    /// When resources are lent; none means always.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub time_windows: Vec<TimeWindow>,

    /// Caps on what is lent, per resource; resources without a cap are lent in full.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resource_limits: Vec<ResourceLimit>,

    /// Outside every window, taint virtual nodes `NoExecute` and delete the virtual pods
    /// that do not tolerate it once `gracefulReclaimPeriodSeconds` have passed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub force_reclaim: bool,

    /// Seconds between tainting a virtual node out of its windows and reclaiming its pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::non_negative_int32")]
    pub graceful_reclaim_period_seconds: Option<i32>,

    /// IANA time zone the time windows are read in (for example `Europe/Berlin`); UTC
    /// when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::timezone")]
    pub timezone: Option<String>,
}

/// A daily period during which resources are lent.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
pub struct TimeWindow {
    /// Start time, `HH:MM` (24-hour, inclusive).
    #[schemars(schema_with = "schema::time_of_day")]
    pub start: String,

    /// End time, `HH:MM` (24-hour, inclusive). Earlier than `start` means the window
    /// crosses midnight and belongs to the day on which it starts.
    #[schemars(schema_with = "schema::time_of_day")]
    pub end: String,

    /// Weekdays (`Monday` to `Sunday`, any case) on which the window starts; empty means
    /// every day.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(schema_with = "schema::weekdays")]
    pub days: Vec<String>,
}

/// A cap on one resource.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
pub struct ResourceLimit {
    /// Resource name, for example `cpu`, `memory` or `nvidia.com/gpu`.
    #[schemars(length(min = 1))]
    pub resource: String,

    /// Lend at most this much.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::quantity")]
    pub quantity: Option<Quantity>,

    /// Lend at most this percentage of what remains after the node's own pods (0 to 100).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(schema_with = "schema::percent")]
    pub percent: Option<i32>,
}

/// Lifecycle phase of a ResourceLeasingPolicy.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum ResourceLeasingPolicyPhase {
    /// Valid and inside one of its time windows.
    Active,
    /// Valid but outside every time window.
    #[default]
    Inactive,
    /// Invalid; not applied (see the `Valid` condition).
    Failed,
}

/// Observed state of a ResourceLeasingPolicy.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ResourceLeasingPolicyStatus {
    /// Current phase.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ResourceLeasingPolicyPhase>,

    /// Conditions `Valid` and `Active`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,

    /// When the policy was last applied to the nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_applied_time: Option<Time>,

    /// Whether the policy is inside one of its time windows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub active_time_window: Option<bool>,
}

/// Condition types reported on a ResourceLeasingPolicy.
pub mod condition {
    /// The spec passed validation.
    pub const VALID: &str = "Valid";
    /// The policy is inside one of its time windows.
    pub const ACTIVE: &str = "Active";
}
