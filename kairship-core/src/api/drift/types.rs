//! Messages of the drift feature: `GetInstanceDrift` and `GetObjectDrift`.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;

use crate::drift::FieldDrift;

/// `GetInstanceDrift`: `GET …/instances/{instance}/drift`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetInstanceDriftRequest {
    /// Instance name.
    pub instance: String,
}

/// `GetObjectDrift`:
/// `GET …/instances/{instance}/namespaces/{namespace}/resources/{group}/{version}/{resource}/{name}/drift`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct GetObjectDriftRequest {
    /// Instance name.
    pub instance: String,
    /// API group (`core` for the core group).
    pub group: String,
    /// Version.
    pub version: String,
    /// Resource (plural).
    pub resource: String,
    /// Namespace (absent for cluster-scoped resources).
    #[serde(default)]
    pub namespace: Option<String>,
    /// Name of the resource template.
    pub name: String,
}

/// How a member's copy compares with what Karmada applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, ToSchema)]
pub enum DriftState {
    /// Every field Karmada applies holds, and nobody set others by hand.
    InSync,
    /// Some fields differ: see `fields`.
    Drifted,
    /// The member has no copy.
    Missing,
    /// The member could not be read: see `message`.
    Unreachable,
}

/// One member's copy of an object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct MemberDrift {
    /// Member cluster.
    pub cluster: String,
    /// How the copy compares.
    pub state: DriftState,
    /// The fields that differ, by path (`spec.template.spec.containers[name=web].image`,
    /// `metadata.labels.team`), with what Karmada applies and what the member holds.
    #[serde(default)]
    pub fields: Vec<FieldDrift>,
    /// Why the member could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

/// A propagated object and its members' copies.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct ObjectDrift {
    /// `apiVersion` of the template.
    pub api_version: String,
    /// Kind of the template.
    pub kind: String,
    /// Namespace (absent for cluster-scoped objects).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// Name.
    pub name: String,
    /// Per member cluster the object is applied to (for the instance's list: only the
    /// drifted and missing copies), in cluster order.
    pub members: Vec<MemberDrift>,
}

/// A member whose copies could not be read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct UnreachableMember {
    /// Member cluster.
    pub cluster: String,
    /// Why.
    pub message: String,
}

/// The drifted objects of an instance.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase")]
pub struct InstanceDrift {
    /// Member copies compared (objects times the members each is applied to).
    pub checked: u64,
    /// Objects with a drifted or missing copy, by kind, namespace and name.
    pub items: Vec<ObjectDrift>,
    /// Members that could not be read (their copies are not in `checked`).
    pub unreachable: Vec<UnreachableMember>,
}
