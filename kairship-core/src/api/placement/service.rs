//! [`PlacementApi`](super::PlacementApi) as [`KairshipService`] implements it.

use async_trait::async_trait;

use super::PlacementApi;
use super::preview::{answer, check_workload, placement_of};
use super::types::{PlacementPreview, PreviewPlacementRequest};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::ApiError;
use crate::api::body::check_name;
use crate::api::inside::check_gvr;
use crate::api::kairship::{KairshipService, gvr};
use crate::api::kinds::clusters_resource;
use crate::models::cluster::Cluster;
use crate::router::{ListQuery, ResourceTarget};
use crate::scheduling::{schedule, workload_of_template};

#[async_trait]
impl PlacementApi for KairshipService {
    async fn preview_placement(
        &self,
        caller: &Caller,
        req: PreviewPlacementRequest,
    ) -> Result<PlacementPreview, ApiError> {
        let instance = req.instance.as_str();
        let spec = &req.preview;
        // Everything the request says is checked before anyone is asked.
        check_name("instance", instance)?;
        let placement = placement_of(spec)?;
        match (&spec.workload, &spec.workload_ref) {
            (Some(_), Some(_)) => {
                return Err(ApiError::invalid_field(
                    "workloadRef",
                    "give a workload or a workloadRef, not both",
                ));
            }
            (None, None) => {
                return Err(ApiError::invalid_field(
                    "workload",
                    "give the workload as an object or as a workloadRef",
                ));
            }
            (Some(workload), None) => check_workload(workload)?,
            (None, Some(r)) => {
                check_gvr(gvr(&r.group, &r.version, &r.resource))?;
                check_name("workloadRef.name", &r.name)?;
                if let Some(ns) = &r.namespace {
                    check_name("workloadRef.namespace", ns)?;
                }
            }
        }
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Proxy,
            Some(instance),
            "preview placements",
        )
        .await?;
        let template = match (&spec.workload, &spec.workload_ref) {
            (Some(workload), _) => workload.clone(),
            (None, Some(r)) => {
                let resolved = self
                    .discover(instance, gvr(&r.group, &r.version, &r.resource))
                    .await?;
                let target = match (&r.namespace, resolved.namespaced) {
                    (Some(ns), true) => {
                        ResourceTarget::namespaced(instance, resolved.resource.clone(), ns)
                    }
                    (None, false) => ResourceTarget::all(instance, resolved.resource.clone()),
                    (_, namespaced) => {
                        return Err(ApiError::invalid_field(
                            "workloadRef.namespace",
                            if namespaced {
                                "the resource is namespaced: give the namespace"
                            } else {
                                "the resource is cluster-scoped: give no namespace"
                            },
                        ));
                    }
                };
                let object = self.router.get(&target, &r.name).await?;
                serde_json::to_value(object.as_ref())
                    .map_err(|e| ApiError::internal(format!("the workload: {e}")))?
            }
            (None, None) => return Err(ApiError::internal("a preview without a workload")),
        };
        let target = ResourceTarget::all(instance, clusters_resource());
        let clusters: Vec<Cluster> = match self.router.list(&target, &ListQuery::default()).await {
            Ok(page) => page
                .items
                .iter()
                .filter_map(|c| serde_json::to_value(c.as_ref()).ok())
                .filter_map(|c| serde_json::from_value(c).ok())
                .collect(),
            // An instance serving no Clusters has no member to place anything on.
            Err(err) if err.is_not_found() => Vec::new(),
            Err(err) => return Err(err.into()),
        };
        let workload = workload_of_template(&template);
        let outcome = schedule(&placement, &workload, &clusters);
        Ok(answer(&placement, &workload, outcome))
    }
}
