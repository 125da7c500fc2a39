//! Messages of the applications feature: `CreateApplication` (a workload, optionally its
//! Service, where Karmada places it and what it changes per cluster) and `:promote`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;

use crate::api::Object;
use crate::api::members::view_types::WorkloadKind;

/// What an application consists of (the body of `POST …/namespaces/{ns}/applications`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationSpec {
    /// The workload: a Deployment, StatefulSet, DaemonSet (`apps/v1`), Job or CronJob
    /// (`batch/v1`) object. Its name names the application; pod labels default to
    /// `app: <name>` and an `apps/v1` selector to the pod labels.
    #[schema(value_type = Object)]
    pub workload: Value,
    /// A Service selecting the workload's pods, named as the workload.
    #[serde(default)]
    pub service: Option<ApplicationService>,
    /// Where Karmada places the workload (and its Service).
    pub placement: Placement,
    /// Per-cluster changes, one OverridePolicy each.
    #[serde(default)]
    pub overrides: Vec<ClusterOverride>,
    /// Validate everything (the instance too, with `dryRun=All`) and return the objects
    /// without creating any.
    #[serde(default)]
    pub dry_run: bool,
}

/// The Service of an application.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationService {
    /// `ClusterIP` (default), `NodePort` or `LoadBalancer`.
    #[serde(default, rename = "type")]
    pub type_: Option<String>,
    /// At least one port.
    pub ports: Vec<ApplicationPort>,
}

/// A port of an application's Service.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationPort {
    /// Port name (`port-<port>` when there are several and none is given).
    #[serde(default)]
    pub name: Option<String>,
    /// Service port, 1 to 65535.
    pub port: i32,
    /// Container port (default: `port`).
    #[serde(default)]
    pub target_port: Option<i32>,
    /// `TCP` (default), `UDP` or `SCTP`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// Where an application goes: member clusters by name, by label, by provider, region and zone
/// (all given criteria must hold), and optionally how its replicas are divided.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Placement {
    /// Member clusters by name.
    #[serde(default)]
    pub cluster_names: Vec<String>,
    /// Member clusters carrying all these labels.
    #[serde(default)]
    pub cluster_labels: BTreeMap<String, String>,
    /// Member clusters of one of these providers (`spec.provider`).
    #[serde(default)]
    pub providers: Vec<String>,
    /// Member clusters in one of these regions (`spec.region`).
    #[serde(default)]
    pub regions: Vec<String>,
    /// Member clusters in one of these zones (`spec.zones`, or the deprecated `spec.zone`).
    #[serde(default)]
    pub zones: Vec<String>,
    /// Static weight per cluster name: replicas are divided by them (Karmada `Divided`,
    /// `Weighted`); without weights every cluster runs all replicas (`Duplicated`).
    #[serde(default)]
    pub weights: BTreeMap<String, i64>,
}

/// What changes in one member cluster.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClusterOverride {
    /// The member cluster.
    pub cluster: String,
    /// Image of the first container (Karmada `imageOverrider`).
    #[serde(default)]
    pub image: Option<String>,
    /// Replicas (Deployment, StatefulSet; a `plaintext` overrider of `/spec/replicas`).
    #[serde(default)]
    pub replicas: Option<i32>,
    /// Environment variables added to the first container (`plaintext` overriders).
    #[serde(default)]
    pub env: Vec<EnvVar>,
    /// Arguments added to the first container (`argsOverrider`).
    #[serde(default)]
    pub args: Vec<String>,
}

/// An environment variable.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct EnvVar {
    /// Name.
    pub name: String,
    /// Value.
    #[serde(default)]
    pub value: String,
}

/// `CreateApplication`: `POST …/instances/{instance}/namespaces/{namespace}/applications`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CreateApplicationRequest {
    /// Instance name.
    pub instance: String,
    /// Namespace of every object.
    pub namespace: String,
    /// The application.
    pub application: ApplicationSpec,
}

/// What an application call created (or, in a dry run, would create), in creation order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ApplicationResult {
    /// Whether nothing was created.
    pub dry_run: bool,
    /// The objects as the instance answered them: workload, Service, PropagationPolicy,
    /// OverridePolicies.
    #[schema(value_type = Vec<Object>)]
    pub objects: Vec<Object>,
}

/// `PromoteWorkload`: takes a workload of a member cluster into the instance.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromoteWorkloadRequest {
    /// Instance name.
    pub instance: String,
    /// The member cluster the workload runs in.
    pub cluster: String,
    /// Namespace of the workload.
    pub namespace: String,
    /// Kind of the workload.
    pub kind: WorkloadKind,
    /// Workload name.
    pub name: String,
    /// Create nothing; answer what would be created.
    #[serde(default)]
    pub dry_run: bool,
}

/// What a promotion created (or, in a dry run, would create), in creation order.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PromoteWorkloadResponse {
    /// Whether this was a dry run (nothing created).
    pub dry_run: bool,
    /// The objects: the namespace (when it was missing), ConfigMaps, Secrets (their `data`
    /// left out), the workload and its PropagationPolicy.
    #[schema(value_type = Vec<Object>)]
    pub objects: Vec<Object>,
}
