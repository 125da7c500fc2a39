//! Conversions of the workloads feature's messages between proto and the API types (the
//! others are in [`super::convert`]).

use super::convert::{list_options, workload_kind};
use super::pb;
use crate::api::{ApiError, ListWorkloadPodsRequest};

/// `ListWorkloadPods`.
pub fn list_workload_pods(
    m: pb::ListWorkloadPodsRequest,
) -> Result<ListWorkloadPodsRequest, ApiError> {
    Ok(ListWorkloadPodsRequest {
        instance: m.instance,
        namespace: m.namespace,
        kind: workload_kind(&m.kind)?,
        name: m.name,
        options: list_options(m.options)?,
    })
}
