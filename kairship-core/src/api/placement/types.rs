//! Messages of the placement feature: `PreviewPlacement`.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::applications::Placement;
use crate::scheduling::Exclusion;

/// A resource template of the instance, by group, version, resource and name (group `core`
/// for the core group, as in the `resources/{group}/{version}/{resource}` paths).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkloadReference {
    /// API group (`apps`; `core` for the core group).
    pub group: String,
    /// Version (`v1`).
    pub version: String,
    /// Resource (plural, `deployments`).
    pub resource: String,
    /// Namespace (absent for cluster-scoped resources).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
}

/// What to preview (the body of `POST …/instances/{instance}/placements:preview`): a policy
/// or an application's placement, and a workload as an object or a reference.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PlacementPreviewSpec {
    /// A PropagationPolicy or ClusterPropagationPolicy object: its `spec.placement` is
    /// previewed (it need not exist in the instance).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub policy: Option<Value>,
    /// Or the placement of the application call (`CreateApplication`'s `placement`).
    #[serde(default)]
    pub placement: Option<Placement>,
    /// The workload as an object (a Deployment, Job, ...; it need not exist).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub workload: Option<Value>,
    /// Or a resource template of the instance.
    #[serde(default)]
    pub workload_ref: Option<WorkloadReference>,
}

/// `PreviewPlacement`: `POST …/instances/{instance}/placements:preview`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PreviewPlacementRequest {
    /// Instance name.
    pub instance: String,
    /// The policy (or placement) and the workload.
    pub preview: PlacementPreviewSpec,
}

/// A chosen cluster and its replicas.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewTarget {
    /// Member cluster.
    pub cluster: String,
    /// Replicas it would run (for objects without replicas, 0: the object goes whole).
    pub replicas: i32,
}

/// A cluster left out and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PreviewLeftOut {
    /// Member cluster.
    pub cluster: String,
    /// The rule that left it out.
    pub exclusion: Exclusion,
    /// Karmada's reason, as its scheduler words it.
    pub reason: String,
}

/// Where the workload would go.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct PlacementPreview {
    /// The workload's replicas (0 for objects without replicas).
    pub replicas: i32,
    /// `Duplicated` or `Divided`.
    pub replica_scheduling_type: String,
    /// The chosen clusters in name order; empty when nothing can be scheduled.
    pub clusters: Vec<PreviewTarget>,
    /// Every other cluster, in name order, with its reason.
    pub left_out: Vec<PreviewLeftOut>,
    /// When nothing can be scheduled, the message Karmada's scheduler would put in the
    /// binding's `Scheduled` condition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}
