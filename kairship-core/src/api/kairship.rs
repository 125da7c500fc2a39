//! [`KairshipService`], the implementation of [`KairshipApi`]: Instances on the host cluster,
//! everything inside an instance through the read-write split router.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::{ApiResource, DynamicObject};
use kube::{Api, Client};
use kube_kit::client::describe_kube_error;
use serde_json::Value;

use super::actions::deployment_patch;
use super::applications::{ApplicationResult, CreateApplicationRequest};
use super::body::{Expected, check_name, expand_policy_text, prepare_patch, prepare_write};
use super::error::ApiError;
use super::inside::{Checked, Gvr, Inside, Of, Resolved, check_gvr, check_scope};
use super::job_actions::{CronJobActionRequest, RestartJobRequest};
use super::kinds::{
    ResourceKind, cluster_resource_bindings_resource, clusters_resource, resource_bindings_resource,
};
use super::kubeconfig::{KubeconfigParts, proxy_url, render};
use super::list::{pagination, select_instances, to_list_query};
use super::members::types::{
    JoinMemberRequest, RegisterMemberRequest, RegisterMemberResponse, UpdateMemberRequest,
};
use super::references::{PolicyRef, binding_label, binding_uses};
use super::service::{BearerToken, KairshipApi};
use super::types::{
    CORE_GROUP, CreateInstanceRequest, CreateKubeconfigRequest, CreateObjectRequest,
    CreateResourceRequest, DeleteInstanceRequest, DeleteObjectRequest, DeleteResourceRequest,
    DeploymentAction, DeploymentActionRequest, GetClusterRequest, GetInstanceRequest,
    GetObjectRequest, GetResourceRequest, GetWorkloadRequest, JoinClusterRequest,
    KubeconfigResponse, ListClustersRequest, ListEventsRequest, ListInstancesRequest,
    ListObjectsRequest, ListResourcesRequest, ListWorkloadsRequest, Object, ObjectList,
    PatchObjectRequest, PatchType, RemoveClusterRequest, UpdateClusterRequest,
    UpdateInstanceRequest, UpdateObjectRequest, UpdateResourceRequest, Workload, WorkloadList,
};
use super::workload::{deployment_binding_name, named_objects, parse_binding, workload};
use crate::access::{Authorizer, Caller, InstanceResource, Verb};
use crate::instance::{FORCE_DELETE_ANNOTATION, Instance};
use crate::router::{
    DiscoveredResource, DiscoveryCache, InstanceClients, ListQuery, ObjectPage, ReadWriteRouter,
    ResourceTarget, RouterError,
};

#[path = "member_views.rs"]
mod member_views;
#[path = "promote.rs"]
mod promote;
#[path = "kairship_steps.rs"]
mod steps;

/// Settings of [`KairshipService`].
#[derive(Clone, Debug)]
pub struct ServiceConfig {
    /// Base URL clients reach the API server at, written into kubeconfigs when the request
    /// does not say (`https://kairship.example.com`).
    pub external_url: Option<String>,
    /// CA certificate (PEM) written into kubeconfigs, for servers whose certificate is not
    /// publicly trusted.
    pub ca_pem: Option<String>,
    /// Time one call to the host cluster may take.
    pub host_timeout: Duration,
    /// How long unjoining a member waits for Karmada to remove its `Cluster` before
    /// answering that Karmada is not done yet (`karmadactl unjoin --wait`'s default: 60 s).
    pub unjoin_wait: Duration,
}

impl Default for ServiceConfig {
    fn default() -> Self {
        ServiceConfig {
            external_url: None,
            ca_pem: None,
            host_timeout: Duration::from_secs(10),
            unjoin_wait: Duration::from_secs(60),
        }
    }
}

/// The Kairship API over a host cluster (Instances) and a [`ReadWriteRouter`] (everything
/// inside the instances), with an [`Authorizer`] deciding who may do what.
pub struct KairshipService {
    pub(super) host: Client,
    pub(super) router: Arc<dyn ReadWriteRouter>,
    authorizer: Arc<dyn Authorizer>,
    pub(super) config: ServiceConfig,
    discovery: Option<Discovery>,
}

/// How generic calls learn which resources an instance serves.
struct Discovery {
    clients: Arc<dyn InstanceClients>,
    cache: Arc<DiscoveryCache>,
}

/// Field manager of apply patches that name none.
pub const DEFAULT_FIELD_MANAGER: &str = "kairship";

impl std::fmt::Debug for KairshipService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KairshipService")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

fn instance_resource() -> ApiResource {
    ApiResource::erase::<Instance>(&())
}

const INSTANCE_API_VERSION: &str = "kairship.io/v1alpha1";

fn to_object<T: serde::Serialize>(value: &T, what: &str) -> Result<Object, ApiError> {
    serde_json::to_value(value)
        .map_err(|e| ApiError::internal(format!("cannot encode {what}: {e}")))
}

fn object_list(page: ObjectPage) -> Result<ObjectList, ApiError> {
    let items = page
        .items
        .iter()
        .map(|o| to_object(o.as_ref(), "a listed object"))
        .collect::<Result<_, _>>()?;
    Ok(ObjectList {
        items,
        pagination: pagination(page.pagination),
    })
}

fn dynamic(body: Value, what: &str) -> Result<DynamicObject, ApiError> {
    serde_json::from_value(body).map_err(|e| ApiError::invalid(format!("{what}: {e}")))
}

/// The objects of a list, where a not-found answer means "no such list": the resource type
/// itself is not served (a Karmada without bindings yet), so nothing refers to anything.
fn items_or_none_served(
    result: Result<ObjectPage, RouterError>,
) -> Result<Vec<Arc<DynamicObject>>, ApiError> {
    match result {
        Ok(page) => Ok(page.items),
        Err(err) if err.is_not_found() => Ok(Vec::new()),
        Err(err) => Err(err.into()),
    }
}

fn gvr<'a>(group: &'a str, version: &'a str, resource: &'a str) -> Gvr<'a> {
    Gvr {
        group,
        version,
        resource,
    }
}

/// The parameters of a patch call: apply takes a field manager (default
/// [`DEFAULT_FIELD_MANAGER`]) and may force; the other types may name a manager and never
/// force.
fn patch_params(req: &PatchObjectRequest) -> Result<PatchParams, ApiError> {
    if let Some(manager) = &req.field_manager
        && (manager.is_empty() || manager.len() > 128)
    {
        return Err(ApiError::invalid_field(
            "fieldManager",
            "must be 1 to 128 characters",
        ));
    }
    let force = req.force.unwrap_or(false);
    match req.patch_type {
        PatchType::Apply => {
            let manager = req
                .field_manager
                .as_deref()
                .unwrap_or(DEFAULT_FIELD_MANAGER);
            let params = PatchParams::apply(manager);
            Ok(if force { params.force() } else { params })
        }
        _ if force => Err(ApiError::invalid_field(
            "force",
            "may only be set for apply patches",
        )),
        _ => Ok(PatchParams {
            field_manager: req.field_manager.clone(),
            ..PatchParams::default()
        }),
    }
}

/// The field selectors of an event list's `type`, `reason` and `kind` filters, checked: a
/// type is `Normal` or `Warning`, a reason or kind letters, digits, `_`, `-` and `.`.
fn event_filters(req: &ListEventsRequest) -> Result<Vec<String>, ApiError> {
    let mut fields = Vec::new();
    if let Some(t) = &req.type_ {
        if !matches!(t.as_str(), "Normal" | "Warning") {
            return Err(ApiError::invalid_field(
                "type",
                format!("{t:?} is not an event type: Normal or Warning"),
            ));
        }
        fields.push(format!("type={t}"));
    }
    for (field, value, path) in [
        ("reason", &req.reason, "reason"),
        ("kind", &req.kind, "involvedObject.kind"),
    ] {
        let Some(value) = value else { continue };
        let ok = !value.is_empty()
            && value.len() <= 128
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'));
        if !ok {
            return Err(ApiError::invalid_field(
                field,
                format!("{value:?} is not valid: 1 to 128 letters, digits, '_', '-' and '.'"),
            ));
        }
        fields.push(format!("{path}={value}"));
    }
    Ok(fields)
}

fn summary_members(instance: &DynamicObject) -> i64 {
    instance
        .data
        .pointer("/status/summary/clusterSummary/totalNum")
        .and_then(Value::as_i64)
        .unwrap_or(0)
}

fn force_delete_requested(instance: &DynamicObject) -> bool {
    instance
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(FORCE_DELETE_ANNOTATION))
        .is_some_and(|v| v == "true")
}

/// Checks an Instance body's spec as the CRD's rules would, for a readable early error.
fn check_instance_spec(body: &Value, old: Option<&DynamicObject>) -> Result<(), ApiError> {
    let instance: Instance = serde_json::from_value(body.clone())
        .map_err(|e| ApiError::invalid(format!("not a valid Instance: {e}")))?;
    let old_spec: Option<Instance> = old.and_then(|o| {
        serde_json::to_value(o)
            .ok()
            .and_then(|v| serde_json::from_value(v).ok())
    });
    instance
        .spec
        .validate(old_spec.as_ref().map(|o| &o.spec))
        .map_err(|e| ApiError::invalid(format!("spec: {e}")))
}

#[async_trait]
impl KairshipApi for KairshipService {
    async fn list_instances(
        &self,
        caller: &Caller,
        req: ListInstancesRequest,
    ) -> Result<ObjectList, ApiError> {
        // Refuse bad options before any call.
        select_instances(Vec::new(), &req.options)?;
        let list = self
            .host_call(
                "list instances",
                self.instances().list(&ListParams::default()),
            )
            .await?;
        let everything = self
            .authorizer
            .allowed(caller, Verb::List, InstanceResource::Instances, None)
            .await?;
        let mut visible = Vec::with_capacity(list.items.len());
        if everything {
            visible.extend(list.items.into_iter().map(Arc::new));
        } else {
            let checks = list.items.into_iter().map(|item| async move {
                let name = item.metadata.name.clone().unwrap_or_default();
                let allowed = self
                    .authorizer
                    .allowed(caller, Verb::Get, InstanceResource::Instances, Some(&name))
                    .await;
                (item, allowed)
            });
            for (item, allowed) in futures::future::join_all(checks).await {
                if allowed? {
                    visible.push(Arc::new(item));
                }
            }
        }
        let (items, pagination) = select_instances(visible, &req.options)?;
        Ok(ObjectList {
            items: items
                .iter()
                .map(|o| to_object(o.as_ref(), "an instance"))
                .collect::<Result<_, _>>()?,
            pagination,
        })
    }

    async fn get_instance(
        &self,
        caller: &Caller,
        req: GetInstanceRequest,
    ) -> Result<Object, ApiError> {
        check_name("instance", &req.instance)?;
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Instances,
            Some(&req.instance),
            "read the instance",
        )
        .await?;
        let instance = self.read_instance(&req.instance).await?;
        to_object(&instance, "an instance")
    }

    async fn create_instance(
        &self,
        caller: &Caller,
        req: CreateInstanceRequest,
    ) -> Result<Object, ApiError> {
        self.authorize(
            caller,
            Verb::Create,
            InstanceResource::Instances,
            None,
            "create instances",
        )
        .await?;
        let body = prepare_write(
            req.body,
            &Expected {
                api_version: INSTANCE_API_VERSION,
                kind: "Instance",
                namespace: None,
                name: None,
            },
        )?;
        check_instance_spec(&body, None)?;
        let object = dynamic(body, "instance")?;
        let name = object.metadata.name.clone().unwrap_or_default();
        let created = self
            .host_call(
                &format!("create instance {name}"),
                self.instances().create(&PostParams::default(), &object),
            )
            .await?;
        to_object(&created, "an instance")
    }

    async fn update_instance(
        &self,
        caller: &Caller,
        req: UpdateInstanceRequest,
    ) -> Result<Object, ApiError> {
        check_name("instance", &req.instance)?;
        self.authorize(
            caller,
            Verb::Update,
            InstanceResource::Instances,
            Some(&req.instance),
            "update the instance",
        )
        .await?;
        let body = prepare_write(
            req.body,
            &Expected {
                api_version: INSTANCE_API_VERSION,
                kind: "Instance",
                namespace: None,
                name: Some(&req.instance),
            },
        )?;
        let old = self.read_instance(&req.instance).await?;
        check_instance_spec(&body, Some(&old))?;
        let object = dynamic(body, "instance")?;
        let updated = self
            .host_call(
                &format!("update instance {}", req.instance),
                self.instances()
                    .replace(&req.instance, &PostParams::default(), &object),
            )
            .await?;
        to_object(&updated, "an instance")
    }

    async fn delete_instance(
        &self,
        caller: &Caller,
        req: DeleteInstanceRequest,
    ) -> Result<Object, ApiError> {
        let name = req.instance.as_str();
        check_name("instance", name)?;
        self.authorize(
            caller,
            Verb::Delete,
            InstanceResource::Instances,
            Some(name),
            "delete the instance",
        )
        .await?;
        let instance = self.read_instance(name).await?;
        let annotated = force_delete_requested(&instance);
        if !req.force && !annotated {
            // Ask the instance itself: its cache and its status summary may be what it held
            // before it stopped answering.
            let how = format!(
                "delete with force=true (or annotate the instance {FORCE_DELETE_ANNOTATION}=true)"
            );
            // Bounded: an instance that does not answer in time cannot count its members.
            let names = tokio::time::timeout(self.config.host_timeout, self.member_names(name))
                .await
                .ok()
                .flatten();
            match names {
                Some(names) if !names.is_empty() => {
                    return Err(ApiError::failed_precondition(format!(
                        "instance {name} still has {} member cluster(s) ({}): remove them \
                         first, or {how}",
                        names.len(),
                        names.join(", ")
                    )));
                }
                Some(_) => {}
                None => {
                    let last = summary_members(&instance);
                    return Err(ApiError::failed_precondition(format!(
                        "instance {name} cannot be reached, so its member clusters cannot be \
                         counted (its last status counted {last}): make it reachable, or {how}"
                    )));
                }
            }
        }
        if req.force && !annotated {
            // The controller-manager's deletion check reads the annotation.
            let patch =
                serde_json::json!({"metadata": {"annotations": {FORCE_DELETE_ANNOTATION: "true"}}});
            self.host_call(
                &format!("annotate instance {name} for a forced delete"),
                self.instances()
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await?;
        }
        let deleted = self
            .host_call(
                &format!("delete instance {name}"),
                self.instances().delete(name, &DeleteParams::default()),
            )
            .await?;
        deleted.either(
            |object| to_object(&object, "an instance"),
            |status| to_object(&status, "a status"),
        )
    }

    async fn create_kubeconfig(
        &self,
        caller: &Caller,
        token: &BearerToken,
        req: CreateKubeconfigRequest,
    ) -> Result<KubeconfigResponse, ApiError> {
        check_name("instance", &req.instance)?;
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Instances,
            Some(&req.instance),
            "reach the instance",
        )
        .await?;
        self.read_instance(&req.instance).await?;
        let server = req
            .server
            .as_deref()
            .or(self.config.external_url.as_deref())
            .or(req.request_server.as_deref())
            .ok_or_else(|| {
                ApiError::invalid_field(
                    "server",
                    "unknown: pass the URL clients reach this API server at",
                )
            })?;
        let url = proxy_url(server, &req.instance)?;
        let kubeconfig = render(&KubeconfigParts {
            instance: &req.instance,
            server: &url,
            token: token.expose(),
            ca_pem: self.config.ca_pem.as_deref(),
            namespace: "default",
        })?;
        Ok(KubeconfigResponse {
            instance: req.instance,
            server: url,
            kubeconfig,
        })
    }

    async fn list_clusters(
        &self,
        caller: &Caller,
        req: ListClustersRequest,
    ) -> Result<ObjectList, ApiError> {
        let call = Inside::clusters(&req.instance, Verb::Get, "list member clusters")
            .listing(&req.options);
        self.list_inside(caller, call).await
    }

    async fn get_cluster(
        &self,
        caller: &Caller,
        req: GetClusterRequest,
    ) -> Result<Object, ApiError> {
        let cluster = req.cluster.as_str();
        let call = Inside::clusters(&req.instance, Verb::Get, "read member clusters")
            .named("cluster", cluster);
        self.get_inside(caller, call, cluster, "a cluster").await
    }

    async fn join_cluster(
        &self,
        caller: &Caller,
        req: JoinClusterRequest,
    ) -> Result<Object, ApiError> {
        let call = Inside::clusters(&req.instance, Verb::Create, "join member clusters")
            .with_body(req.body);
        self.create_inside(caller, call).await
    }

    async fn update_cluster(
        &self,
        caller: &Caller,
        req: UpdateClusterRequest,
    ) -> Result<Object, ApiError> {
        let cluster = req.cluster.as_str();
        let call = Inside::clusters(&req.instance, Verb::Update, "update member clusters")
            .named("cluster", cluster)
            .with_body(req.body);
        self.replace_inside(caller, call, cluster).await
    }

    async fn remove_cluster(
        &self,
        caller: &Caller,
        req: RemoveClusterRequest,
    ) -> Result<Object, ApiError> {
        self.unjoin(caller, req).await
    }

    async fn join_member(
        &self,
        caller: &Caller,
        req: JoinMemberRequest,
    ) -> Result<Object, ApiError> {
        self.push_join(caller, req).await
    }

    async fn register_member(
        &self,
        caller: &Caller,
        req: RegisterMemberRequest,
    ) -> Result<RegisterMemberResponse, ApiError> {
        self.pull_register(caller, req).await
    }

    async fn update_member(
        &self,
        caller: &Caller,
        req: UpdateMemberRequest,
    ) -> Result<Object, ApiError> {
        self.member_update(caller, req).await
    }

    async fn list_resources(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<ObjectList, ApiError> {
        let call = Inside::resource(
            &req.instance,
            req.kind,
            req.namespace.as_deref(),
            Verb::Get,
            "list",
        )
        .listing(&req.options);
        self.list_inside(caller, call).await
    }

    async fn get_resource(
        &self,
        caller: &Caller,
        req: GetResourceRequest,
    ) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let call = Inside::resource(
            &req.instance,
            req.kind,
            req.namespace.as_deref(),
            Verb::Get,
            "read",
        )
        .named("name", name);
        self.get_inside(caller, call, name, "an object").await
    }

    async fn create_resource(
        &self,
        caller: &Caller,
        req: CreateResourceRequest,
    ) -> Result<Object, ApiError> {
        let call = Inside::resource(
            &req.instance,
            req.kind,
            req.namespace.as_deref(),
            Verb::Create,
            "create",
        )
        .with_body(req.body);
        self.create_inside(caller, call).await
    }

    async fn update_resource(
        &self,
        caller: &Caller,
        req: UpdateResourceRequest,
    ) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let call = Inside::resource(
            &req.instance,
            req.kind,
            req.namespace.as_deref(),
            Verb::Update,
            "update",
        )
        .named("name", name)
        .with_body(req.body);
        self.replace_inside(caller, call, name).await
    }

    async fn delete_resource(
        &self,
        caller: &Caller,
        req: DeleteResourceRequest,
    ) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let call = Inside::resource(
            &req.instance,
            req.kind,
            req.namespace.as_deref(),
            Verb::Delete,
            "delete",
        )
        .named("name", name);
        self.delete_inside(caller, call, name).await
    }

    async fn list_objects(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Get,
            "list",
        )
        .listing(&req.options);
        self.list_inside(caller, call).await
    }

    async fn get_object(&self, caller: &Caller, req: GetObjectRequest) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Get,
            "read",
        )
        .named("name", name);
        self.get_inside(caller, call, name, "an object").await
    }

    async fn create_object(
        &self,
        caller: &Caller,
        req: CreateObjectRequest,
    ) -> Result<Object, ApiError> {
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Create,
            "create",
        )
        .with_body(req.body);
        self.create_inside(caller, call).await
    }

    async fn update_object(
        &self,
        caller: &Caller,
        req: UpdateObjectRequest,
    ) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Update,
            "update",
        )
        .named("name", name)
        .with_body(req.body);
        self.replace_inside(caller, call, name).await
    }

    async fn patch_object(
        &self,
        caller: &Caller,
        req: PatchObjectRequest,
    ) -> Result<Object, ApiError> {
        let params = patch_params(&req)?;
        let name = req.name.as_str();
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Patch,
            "patch",
        )
        .named("name", name)
        .with_patch(req.patch_type, req.patch);
        self.inside(caller, call, |c| async move {
            let patch = c
                .patch
                .ok_or_else(|| ApiError::internal("a patch call carries no patch"))?;
            let outcome = self.router.patch(&c.target, name, &patch, &params).await?;
            Ok(outcome.object)
        })
        .await
    }

    async fn delete_object(
        &self,
        caller: &Caller,
        req: DeleteObjectRequest,
    ) -> Result<Object, ApiError> {
        let name = req.name.as_str();
        let gvr = gvr(&req.group, &req.version, &req.resource);
        let call = Inside::generic(
            &req.instance,
            gvr,
            req.namespace.as_deref(),
            Verb::Delete,
            "delete",
        )
        .named("name", name);
        self.delete_inside(caller, call, name).await
    }

    async fn list_events(
        &self,
        caller: &Caller,
        req: ListEventsRequest,
    ) -> Result<ObjectList, ApiError> {
        let filters = event_filters(&req)?;
        let object = match (&req.group, &req.version, &req.resource, &req.name) {
            (None, None, None, None) => None,
            (Some(g), Some(v), Some(r), Some(name)) => {
                let object = gvr(g, v, r);
                check_gvr(object)?;
                check_name("name", name)?;
                Some((object, name.as_str()))
            }
            _ => {
                return Err(ApiError::invalid(
                    "the events of one object need its group, version, resource and name",
                ));
            }
        };
        let (instance, namespace) = (req.instance.as_str(), req.namespace.as_deref());
        let call = Inside::generic(
            instance,
            gvr("core", "v1", "events"),
            namespace,
            Verb::Get,
            "list",
        )
        .listing(&req.options);
        self.inside(caller, call, |c| async move {
            let mut fields = filters;
            if let Some((object, name)) = object {
                let resolved = self.discover(instance, object).await?;
                check_scope(&resolved.describe(), resolved.namespaced, namespace, true)?;
                fields.push(format!("involvedObject.kind={}", resolved.resource.kind));
                fields.push(format!("involvedObject.name={name}"));
                if let Some(ns) = namespace {
                    fields.push(format!("involvedObject.namespace={ns}"));
                }
            }
            let mut query = c.query;
            query.field_selector = query
                .field_selector
                .into_iter()
                .filter(|s| !s.trim().is_empty())
                .chain(fields)
                .reduce(|a, b| format!("{a},{b}"));
            object_list(self.router.list(&c.target, &query).await?)
        })
        .await
    }

    async fn deployment_action(
        &self,
        caller: &Caller,
        req: DeploymentActionRequest,
    ) -> Result<Object, ApiError> {
        let (namespace, name, action) = (req.namespace.as_str(), req.name.as_str(), req.action);
        let call = Inside::kind(
            &req.instance,
            ResourceKind::Deployments,
            Some(namespace),
            Verb::Patch,
            format!("{} deployments", action.as_str()),
        )
        .named("name", name);
        self.inside(caller, call, |c| async move {
            if action == DeploymentAction::Restart {
                // As kubectl: a paused Deployment would not roll out the restart.
                let current = self.router.get(&c.target, name).await?;
                if current.data.pointer("/spec/paused") == Some(&Value::Bool(true)) {
                    return Err(ApiError::failed_precondition(format!(
                        "deployment {namespace}/{name} is paused: resume it before restarting"
                    )));
                }
            }
            let patch = deployment_patch(action, jiff::Timestamp::now());
            let outcome = self
                .router
                .patch(
                    &c.target,
                    name,
                    &Patch::Merge(patch),
                    &PatchParams::default(),
                )
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    async fn list_workloads(
        &self,
        caller: &Caller,
        req: ListWorkloadsRequest,
    ) -> Result<WorkloadList, ApiError> {
        let (instance, namespace) = (req.instance.as_str(), req.namespace.as_str());
        let call = Inside::kind(
            instance,
            ResourceKind::Deployments,
            Some(namespace),
            Verb::Get,
            "list workloads",
        )
        .listing(&req.options);
        self.inside(caller, call, |c| async move {
            let page = self.router.list(&c.target, &c.query).await?;
            let wanted: HashSet<String> = page
                .items
                .iter()
                .filter_map(|d| d.metadata.name.as_deref().map(deployment_binding_name))
                .collect();
            let bindings = self.bindings_named(instance, namespace, &wanted).await?;
            let items = page
                .items
                .iter()
                .map(|deployment| {
                    let name = deployment.metadata.name.as_deref().unwrap_or_default();
                    let binding = bindings
                        .get(&deployment_binding_name(name))
                        .and_then(|b| parse_binding(b));
                    workload(deployment, binding.as_ref())
                })
                .collect();
            Ok(WorkloadList {
                items,
                pagination: pagination(page.pagination),
            })
        })
        .await
    }

    async fn get_workload(
        &self,
        caller: &Caller,
        req: GetWorkloadRequest,
    ) -> Result<Workload, ApiError> {
        let (instance, namespace, name) = (
            req.instance.as_str(),
            req.namespace.as_str(),
            req.name.as_str(),
        );
        let call = Inside::kind(
            instance,
            ResourceKind::Deployments,
            Some(namespace),
            Verb::Get,
            "read workloads",
        )
        .named("name", name);
        self.inside(caller, call, |c| async move {
            let deployment = self.router.get(&c.target, name).await?;
            let bindings =
                ResourceTarget::namespaced(instance, resource_bindings_resource(), namespace);
            let binding = match self
                .router
                .get(&bindings, &deployment_binding_name(name))
                .await
            {
                Ok(b) => parse_binding(&b),
                Err(err) if err.is_not_found() => None,
                Err(err) => return Err(err.into()),
            };
            Ok(workload(&deployment, binding.as_ref()))
        })
        .await
    }

    async fn create_application(
        &self,
        caller: &Caller,
        req: CreateApplicationRequest,
    ) -> Result<ApplicationResult, ApiError> {
        self.run_create_application(caller, req).await
    }

    async fn restart_job(
        &self,
        caller: &Caller,
        req: RestartJobRequest,
    ) -> Result<Object, ApiError> {
        self.run_restart_job(caller, req).await
    }

    async fn cronjob_action(
        &self,
        caller: &Caller,
        req: CronJobActionRequest,
    ) -> Result<Object, ApiError> {
        self.run_cronjob_action(caller, req).await
    }

    async fn list_workload_pods(
        &self,
        caller: &Caller,
        req: super::member_types::ListWorkloadPodsRequest,
    ) -> Result<ObjectList, ApiError> {
        self.workload_pods(caller, req).await
    }

    async fn list_member_nodes(
        &self,
        caller: &Caller,
        req: super::member_types::ListMemberNodesRequest,
    ) -> Result<ObjectList, ApiError> {
        self.member_nodes(caller, req).await
    }

    async fn list_member_objects(
        &self,
        caller: &Caller,
        req: super::member_types::ListMemberObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        self.member_objects(caller, req).await
    }

    async fn get_member_object(
        &self,
        caller: &Caller,
        req: super::member_types::GetMemberObjectRequest,
    ) -> Result<Object, ApiError> {
        self.member_object(caller, req).await
    }

    async fn promote_workload(
        &self,
        caller: &Caller,
        req: super::member_types::PromoteWorkloadRequest,
    ) -> Result<super::member_types::PromoteWorkloadResponse, ApiError> {
        self.promote(caller, req).await
    }

    async fn adopt_instance(
        &self,
        caller: &Caller,
        req: super::instance_create::AdoptInstanceRequest,
    ) -> Result<Object, ApiError> {
        self.adopt_instance_inline(caller, req).await
    }
}
