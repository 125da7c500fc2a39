//! [`DriftApi`](super::DriftApi) as [`KairshipService`] implements it.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;
use kube::api::ListParams;
use serde_json::Value;

use super::DriftApi;
use super::applied::{Applied, applied_manifests, drifted_objects, guess_resource, member_drift};
use super::types::{
    DriftState, GetInstanceDriftRequest, GetObjectDriftRequest, InstanceDrift, MemberDrift,
    ObjectDrift, UnreachableMember,
};
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::body::check_name;
use crate::api::inside::check_gvr;
use crate::api::kairship::{KairshipService, gvr, items_or_none_served};
use crate::api::kinds::works_resource;
use crate::api::members::views::{cluster_proxy_path, collection_path};
use crate::api::{ApiError, CORE_GROUP, Code};
use crate::router::{ListQuery, ResourceTarget};

/// A member's objects of one resource, by namespace and name.
type Copies = HashMap<(String, String), Value>;

impl KairshipService {
    /// Every Work of `instance` as JSON (none when the instance serves no Works).
    async fn works(&self, instance: &str) -> Result<Vec<Value>, ApiError> {
        let target = ResourceTarget::all(instance, works_resource());
        let works = items_or_none_served(self.router.list(&target, &ListQuery::default()).await)?;
        Ok(works
            .iter()
            .filter_map(|w| serde_json::to_value(w.as_ref()).ok())
            .collect())
    }

    /// Every object of `group/version/resource` in member `cluster`, read as `caller`.
    async fn member_copies(
        &self,
        caller: &Caller,
        instance: &str,
        cluster: &str,
        (group, version, resource): (&str, &str, &str),
    ) -> Result<Copies, ApiError> {
        let group = if group.is_empty() { CORE_GROUP } else { group };
        let path = format!(
            "{}{}",
            cluster_proxy_path(cluster),
            collection_path(gvr(group, version, resource), None)
        );
        let request = kube::core::Request::new(path).list(&ListParams::default());
        let list = self
            .member_request(
                caller,
                instance,
                cluster,
                request,
                &format!("list {resource}"),
            )
            .await?;
        let Value::Array(items) = list["items"].clone() else {
            return Ok(Copies::new());
        };
        Ok(items
            .into_iter()
            .map(|item| {
                let key = (
                    item["metadata"]["namespace"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                    item["metadata"]["name"]
                        .as_str()
                        .unwrap_or_default()
                        .to_owned(),
                );
                (key, item)
            })
            .collect())
    }
}

#[async_trait]
impl DriftApi for KairshipService {
    async fn instance_drift(
        &self,
        caller: &Caller,
        req: GetInstanceDriftRequest,
    ) -> Result<InstanceDrift, ApiError> {
        let instance = req.instance.as_str();
        check_name("instance", instance)?;
        self.authorize(
            caller,
            Verb::List,
            InstanceResource::Proxy,
            Some(instance),
            "read the drift of member copies",
        )
        .await?;
        let works = self.works(instance).await?;
        let applied = applied_manifests(&works);
        // One list per member and resource: (cluster, group, version, resource).
        let mut wanted: BTreeMap<(String, String, String, String), ()> = BTreeMap::new();
        for a in &applied {
            let (group, version) = a.group_version();
            wanted.insert(
                (
                    a.cluster.clone(),
                    group.to_owned(),
                    version.to_owned(),
                    guess_resource(&a.kind),
                ),
                (),
            );
        }
        let keys: Vec<_> = wanted.into_keys().collect();
        let lists =
            futures::future::join_all(keys.iter().map(|(cluster, g, v, r)| {
                self.member_copies(caller, instance, cluster, (g, v, r))
            }))
            .await;
        let mut copies: HashMap<&(String, String, String, String), Copies> = HashMap::new();
        let mut unreachable: BTreeMap<String, String> = BTreeMap::new();
        for (key, list) in keys.iter().zip(lists) {
            match list {
                Ok(list) => {
                    copies.insert(key, list);
                }
                Err(err) => {
                    unreachable.entry(key.0.clone()).or_insert(err.message);
                }
            }
        }
        let mut checked = 0u64;
        let mut found: Vec<(&Applied, MemberDrift)> = Vec::new();
        for a in &applied {
            let (group, version) = a.group_version();
            let key = (
                a.cluster.clone(),
                group.to_owned(),
                version.to_owned(),
                guess_resource(&a.kind),
            );
            let Some(list) = copies.get(&key) else {
                continue;
            };
            checked += 1;
            let live = list.get(&(a.namespace.clone(), a.name.clone()));
            found.push((a, member_drift(&a.cluster, &a.manifest, live)));
        }
        Ok(InstanceDrift {
            checked,
            items: drifted_objects(found),
            unreachable: unreachable
                .into_iter()
                .map(|(cluster, message)| UnreachableMember { cluster, message })
                .collect(),
        })
    }

    async fn object_drift(
        &self,
        caller: &Caller,
        req: GetObjectDriftRequest,
    ) -> Result<ObjectDrift, ApiError> {
        let instance = req.instance.as_str();
        let target_gvr = gvr(&req.group, &req.version, &req.resource);
        check_name("instance", instance)?;
        check_gvr(target_gvr)?;
        check_name("name", &req.name)?;
        if let Some(ns) = &req.namespace {
            check_name("namespace", ns)?;
        }
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Proxy,
            Some(instance),
            &format!("read the drift of {} {}", req.resource, req.name),
        )
        .await?;
        let resolved = self.discover(instance, target_gvr).await?;
        let target = match (&req.namespace, resolved.namespaced) {
            (Some(ns), true) => ResourceTarget::namespaced(instance, resolved.resource.clone(), ns),
            (None, false) => ResourceTarget::all(instance, resolved.resource.clone()),
            (_, namespaced) => {
                return Err(ApiError::invalid_field(
                    "namespace",
                    if namespaced {
                        format!("{} are namespaced: give the namespace", req.resource)
                    } else {
                        format!("{} are cluster-scoped: give no namespace", req.resource)
                    },
                ));
            }
        };
        // The template must exist: a 404 otherwise, as for reading it.
        self.router.get(&target, &req.name).await?;
        let kind = resolved.resource.kind.clone();
        let group = resolved.resource.group.clone();
        let namespace = req.namespace.clone().unwrap_or_default();
        let works = self.works(instance).await?;
        let applied: Vec<Applied> = applied_manifests(&works)
            .into_iter()
            .filter(|a| {
                a.kind == kind
                    && a.group_version().0 == group
                    && a.namespace == namespace
                    && a.name == req.name
            })
            .collect();
        let reads = futures::future::join_all(applied.iter().map(|a| {
            self.member_get(
                caller,
                instance,
                &a.cluster,
                target_gvr,
                req.namespace.as_deref(),
                &req.name,
            )
        }))
        .await;
        let mut members: Vec<MemberDrift> = applied
            .iter()
            .zip(reads)
            .map(|(a, read)| match read {
                Ok(live) => member_drift(&a.cluster, &a.manifest, Some(&live)),
                Err(err) if err.code == Code::NotFound => {
                    member_drift(&a.cluster, &a.manifest, None)
                }
                Err(err) => MemberDrift {
                    cluster: a.cluster.clone(),
                    state: DriftState::Unreachable,
                    fields: Vec::new(),
                    message: Some(err.message),
                },
            })
            .collect();
        members.sort_by(|a, b| a.cluster.cmp(&b.cluster));
        Ok(ObjectDrift {
            api_version: resolved.resource.api_version.clone(),
            kind,
            namespace: req.namespace.clone(),
            name: req.name.clone(),
            members,
        })
    }
}
