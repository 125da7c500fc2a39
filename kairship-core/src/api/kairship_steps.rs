//! The shared steps of [`KairshipService`]'s calls: discovery, authorization, the calls
//! inside an instance (authorize, target, prepare, route) and the reads of the host.

use std::collections::{HashMap, HashSet};
use std::future::Future;
use std::sync::Arc;

use kube::api::{DeleteParams, PostParams};
use kube::core::DynamicObject;
use kube::{Api, Client};
use kube_kit::client::describe_kube_error;
use serde_json::Value;

use super::{
    Discovery, KairshipService, ServiceConfig, instance_resource, items_or_none_served,
    object_list, rendered_object_list, to_object,
};
use crate::access::{Authorizer, Caller, InstanceResource, Verb};
use crate::api::body::{check_name, expand_policy_text, prepare_patch, prepare_write};
use crate::api::inside::{Checked, Gvr, Inside, Of, Resolved, check_gvr, check_scope};
use crate::api::kinds::{
    ResourceKind, cluster_resource_bindings_resource, clusters_resource, resource_bindings_resource,
};
use crate::api::list::to_list_query;
use crate::api::references::{PolicyRef, binding_label, binding_uses};
use crate::api::workloads::view::named_objects;
use crate::api::{ApiError, CORE_GROUP, Object, ObjectList, RenderedObjectList};
use crate::router::{
    DiscoveredResource, DiscoveryCache, InstanceClients, ListQuery, ReadWriteRouter, ResourceTarget,
};

impl KairshipService {
    /// A service reading and writing Instances through `host` and everything inside them
    /// through `router`.
    pub fn new(
        host: Client,
        router: Arc<dyn ReadWriteRouter>,
        authorizer: Arc<dyn Authorizer>,
        config: ServiceConfig,
    ) -> Self {
        KairshipService {
            host,
            router,
            authorizer,
            config,
            discovery: None,
            audit: None,
            search_cache: None,
        }
    }

    /// Records the writes this service makes on the host for callers (Instances) in
    /// `trail`, and answers the audit queries from it.
    pub fn with_audit(mut self, trail: crate::audit::log::HostAuditLog) -> Self {
        self.audit = Some(trail);
        self
    }

    /// Finds the resources of generic calls (`resources/{group}/{version}/{resource}`) with
    /// the instances' discovery, through `clients`, keeping answers in `cache` (per instance
    /// identity). Without it only the typed kinds are found.
    pub fn with_discovery(
        mut self,
        clients: Arc<dyn InstanceClients>,
        cache: Arc<DiscoveryCache>,
    ) -> Self {
        self.discovery = Some(Discovery {
            clients,
            cache,
            served: Default::default(),
        });
        self
    }

    /// The resource `gvr` of `instance`, from its discovery; `NotFound` when not served.
    pub(in crate::api) async fn discover(
        &self,
        instance: &str,
        gvr: Gvr<'_>,
    ) -> Result<Resolved, ApiError> {
        let group = if gvr.group == CORE_GROUP {
            ""
        } else {
            gvr.group
        };
        let found = match &self.discovery {
            Some(d) => {
                d.cache
                    .resolve_with(
                        d.clients.as_ref(),
                        instance,
                        group,
                        gvr.version,
                        gvr.resource,
                    )
                    .await?
            }
            None => ResourceKind::ALL
                .into_iter()
                .find(|k| {
                    let (g, v, _, plural) = k.gvk_plural();
                    (g, v, plural) == (group, gvr.version, gvr.resource)
                })
                .map(|k| DiscoveredResource {
                    resource: k.api_resource(),
                    namespaced: k.namespaced(),
                }),
        };
        found.map(Resolved::discovered).ok_or_else(|| {
            ApiError::not_found(format!(
                "instance {instance} serves no resource {:?} in {}/{} (see its discovery: \
                 kubectl api-resources)",
                gvr.resource, gvr.group, gvr.version
            ))
        })
    }

    /// Fails with `PermissionDenied` unless `caller` may apply `verb` to `resource` of
    /// `instance` (all instances when `None`): [`InstanceResource::Instances`] for the
    /// Instance object itself, [`InstanceResource::Proxy`] for anything inside the instance,
    /// as the per-instance roles grant them. `what` says what was attempted, for the message.
    pub(in crate::api) async fn authorize(
        &self,
        caller: &Caller,
        verb: Verb,
        resource: InstanceResource,
        instance: Option<&str>,
        what: &str,
    ) -> Result<(), ApiError> {
        if self
            .authorizer
            .allowed(caller, verb, resource, instance)
            .await?
        {
            return Ok(());
        }
        let scope = match instance {
            Some(i) => format!("{resource} of instance {i}"),
            None => resource.to_string(),
        };
        Err(ApiError::forbidden(format!(
            "user {:?} may not {what} ({} on {scope})",
            caller.user,
            verb.as_str()
        )))
    }

    /// The one path of every call inside an instance: the target, the object's name and the
    /// list options are checked first (a malformed call is refused before anyone is asked),
    /// then the caller is authorized on the instance's proxy, then the body is prepared (policy
    /// text expanded, `apiVersion`, `kind`, namespace and name checked or filled in), and only
    /// then `call` runs, usually one router call.
    pub(in crate::api) async fn inside<T, Fut>(
        &self,
        caller: &Caller,
        req: Inside<'_>,
        call: impl FnOnce(Checked) -> Fut,
    ) -> Result<T, ApiError>
    where
        Fut: Future<Output = Result<T, ApiError>>,
    {
        let one = req.options.is_none();
        check_name("instance", req.instance)?;
        match req.of {
            Of::Clusters => {}
            Of::Kind { kind, namespace } => {
                check_scope(kind.plural(), kind.namespaced(), namespace, one)?;
            }
            Of::Resource { gvr, namespace } => {
                check_gvr(gvr)?;
                if let Some(ns) = namespace {
                    check_name("namespace", ns)?;
                }
            }
        }
        if let Some((field, name)) = req.name {
            check_name(field, name)?;
        }
        let query = match req.options {
            Some(options) => to_list_query(options)?,
            None => ListQuery::default(),
        };
        self.authorize(
            caller,
            req.verb,
            InstanceResource::Proxy,
            Some(req.instance),
            &req.what,
        )
        .await?;
        let resolved = match req.of {
            Of::Clusters => Resolved::clusters(),
            Of::Kind { kind, .. } => Resolved::of_kind(kind),
            Of::Resource { gvr, namespace } => {
                let resolved = self.discover(req.instance, gvr).await?;
                check_scope(&resolved.describe(), resolved.namespaced, namespace, one)?;
                resolved
            }
        };
        if !query.namespaces.is_empty() && (!resolved.namespaced || req.namespace().is_some()) {
            return Err(ApiError::invalid_field(
                "namespaces",
                format!(
                    "selects namespaces of a list of {} across namespaces; this call has {}",
                    resolved.describe(),
                    if resolved.namespaced {
                        "its namespace in the path"
                    } else {
                        "a cluster-scoped resource"
                    }
                ),
            ));
        }
        let target = match req.namespace() {
            Some(ns) => ResourceTarget::namespaced(req.instance, resolved.resource.clone(), ns),
            None => ResourceTarget::all(req.instance, resolved.resource.clone()),
        }
        // Writes made for the caller can carry its identity (WriteIdentity::Impersonate).
        .acting_as(caller.clone());
        let expected = req.expected(&resolved);
        let policy = resolved.kind.is_some_and(ResourceKind::is_policy);
        let (body, patch) = match (req.body, req.patch) {
            (None, _) => (Value::Null, None),
            (Some(patch), Some(patch_type)) => (
                Value::Null,
                Some(prepare_patch(patch_type, patch, &expected)?),
            ),
            (Some(body), None) if policy => {
                (prepare_write(expand_policy_text(body)?, &expected)?, None)
            }
            (Some(body), None) => (prepare_write(body, &expected)?, None),
        };
        call(Checked {
            target,
            query,
            body,
            patch,
            resolved,
        })
        .await
    }

    /// Lists what `req` names, as [`inside`](Self::inside) checks it.
    pub(in crate::api) async fn list_inside(
        &self,
        caller: &Caller,
        req: Inside<'_>,
    ) -> Result<ObjectList, ApiError> {
        self.inside(caller, req, |c| async move {
            object_list(self.router.list(&c.target, &c.query).await?)
        })
        .await
    }

    /// Lists what `req` names for an answer written out as JSON (see
    /// [`rendered_object_list`]).
    pub(in crate::api) async fn list_inside_rendered(
        &self,
        caller: &Caller,
        req: Inside<'_>,
    ) -> Result<RenderedObjectList, ApiError> {
        self.inside(caller, req, |c| async move {
            let page = self.router.list_rendered(&c.target, &c.query).await?;
            rendered_object_list(page, &c.target.resource)
        })
        .await
    }

    /// Reads the object `name` of what `req` names; `what` is the object in the error when the
    /// answer is not one.
    pub(in crate::api) async fn get_inside(
        &self,
        caller: &Caller,
        req: Inside<'_>,
        name: &str,
        what: &str,
    ) -> Result<Object, ApiError> {
        self.inside(caller, req, |c| async move {
            let object = self.router.get(&c.target, name).await?;
            to_object(object.as_ref(), what)
        })
        .await
    }

    /// Creates the body of `req`.
    pub(in crate::api) async fn create_inside(
        &self,
        caller: &Caller,
        req: Inside<'_>,
    ) -> Result<Object, ApiError> {
        self.inside(caller, req, |c| async move {
            let outcome = self
                .router
                .create(&c.target, &c.body, &PostParams::default())
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    /// Replaces the object `name` with the body of `req`.
    pub(in crate::api) async fn replace_inside(
        &self,
        caller: &Caller,
        req: Inside<'_>,
        name: &str,
    ) -> Result<Object, ApiError> {
        self.inside(caller, req, |c| async move {
            let outcome = self
                .router
                .replace(&c.target, name, &c.body, &PostParams::default())
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    /// Deletes the object `name` of what `req` names; a (Cluster)PropagationPolicy that a
    /// binding still uses is kept (`FailedPrecondition`).
    pub(in crate::api) async fn delete_inside(
        &self,
        caller: &Caller,
        req: Inside<'_>,
        name: &str,
    ) -> Result<Object, ApiError> {
        let instance = req.instance;
        let namespace = req.namespace();
        self.inside(caller, req, |c| async move {
            if let Some(
                kind @ (ResourceKind::Propagationpolicies
                | ResourceKind::Clusterpropagationpolicies),
            ) = c.resolved.kind
            {
                let users = self.policy_users(instance, namespace, name, kind).await?;
                if !users.is_empty() {
                    let policy = match namespace {
                        Some(ns) => format!("{} {ns}/{name}", kind.kind()),
                        None => format!("{} {name}", kind.kind()),
                    };
                    return Err(ApiError::failed_precondition(format!(
                        "{policy} is still used by {}: delete or re-target those first",
                        users.join(", ")
                    )));
                }
            }
            let outcome = self
                .router
                .delete(&c.target, name, &DeleteParams::default())
                .await?;
            Ok(outcome.object)
        })
        .await
    }

    pub(in crate::api) fn instances(&self) -> Api<DynamicObject> {
        Api::all_with(self.host.clone(), &instance_resource())
    }

    /// Runs a host-cluster call with the configured timeout, mapping its errors.
    pub(in crate::api) async fn host_call<T>(
        &self,
        context: &str,
        call: impl Future<Output = Result<T, kube::Error>>,
    ) -> Result<T, ApiError> {
        match tokio::time::timeout(self.config.host_timeout, call).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(kube::Error::Api(status))) => Err(ApiError::from_kube_status(&status, context)),
            Ok(Err(other)) => Err(ApiError::unavailable(format!(
                "{context}: the host cluster did not answer: {}",
                describe_kube_error(&other)
            ))),
            Err(_) => Err(ApiError::unavailable(format!(
                "{context}: the host cluster did not answer within {:?}",
                self.config.host_timeout
            ))),
        }
    }

    pub(in crate::api) async fn read_instance(
        &self,
        name: &str,
    ) -> Result<DynamicObject, ApiError> {
        self.host_call(&format!("instance {name}"), self.instances().get(name))
            .await
    }

    /// The target of `kind` in `instance`: `namespace` must be given for namespaced kinds when
    /// `named` (one object), and never for cluster-scoped kinds.
    pub(in crate::api) fn resource_target(
        instance: &str,
        kind: ResourceKind,
        namespace: Option<&str>,
        named: bool,
    ) -> Result<ResourceTarget, ApiError> {
        check_name("instance", instance)?;
        check_scope(kind.plural(), kind.namespaced(), namespace, named)?;
        Ok(match namespace {
            Some(ns) => ResourceTarget::namespaced(instance, kind.api_resource(), ns),
            None => ResourceTarget::all(instance, kind.api_resource()),
        })
    }

    /// Names of the member clusters of `instance`, from the router, or `None` when the instance
    /// cannot be asked (then the Instance's status summary decides).
    pub(in crate::api) async fn member_names(&self, instance: &str) -> Option<Vec<String>> {
        let target = ResourceTarget::all(instance, clusters_resource());
        match self.router.list(&target, &ListQuery::default()).await {
            Ok(page) => Some(
                page.items
                    .iter()
                    .filter_map(|c| c.metadata.name.clone())
                    .collect(),
            ),
            Err(err) if err.is_not_found() => Some(Vec::new()),
            Err(err) => {
                tracing::debug!(instance, error = %err, "cannot list member clusters; using the status summary");
                None
            }
        }
    }

    /// Bindings that still use the (Cluster)PropagationPolicy `name` (namespace `namespace`).
    pub(in crate::api) async fn policy_users(
        &self,
        instance: &str,
        namespace: Option<&str>,
        name: &str,
        kind: ResourceKind,
    ) -> Result<Vec<String>, ApiError> {
        let target = Self::resource_target(instance, kind, namespace, true)?;
        let policy = self.router.get(&target, name).await?;
        let reference = PolicyRef::of(&policy, namespace);
        let bindings = match namespace {
            Some(ns) => ResourceTarget::namespaced(instance, resource_bindings_resource(), ns),
            None => ResourceTarget::all(instance, resource_bindings_resource()),
        };
        let mut users: Vec<String> =
            items_or_none_served(self.router.list(&bindings, &ListQuery::default()).await)?
                .iter()
                .filter(|b| binding_uses(&reference, b, false))
                .map(|b| format!("ResourceBinding {}", binding_label(b)))
                .collect();
        if namespace.is_none() {
            let cluster_bindings =
                ResourceTarget::all(instance, cluster_resource_bindings_resource());
            users.extend(
                items_or_none_served(
                    self.router
                        .list(&cluster_bindings, &ListQuery::default())
                        .await,
                )?
                .iter()
                .filter(|b| binding_uses(&reference, b, true))
                .map(|b| format!("ClusterResourceBinding {}", binding_label(b))),
            );
        }
        Ok(users)
    }

    /// The ResourceBindings of `namespace` by name (empty when Karmada serves none).
    /// The namespace's ResourceBindings named in `wanted` (none when the instance serves no
    /// ResourceBindings).
    pub(in crate::api) async fn bindings_named(
        &self,
        instance: &str,
        namespace: &str,
        wanted: &HashSet<String>,
    ) -> Result<HashMap<String, Arc<DynamicObject>>, ApiError> {
        let target = ResourceTarget::namespaced(instance, resource_bindings_resource(), namespace);
        match self
            .router
            .list_rendered(&target, &ListQuery::default())
            .await
        {
            Ok(page) => Ok(named_objects(&page, wanted)),
            Err(err) if err.is_not_found() => Ok(HashMap::new()),
            Err(err) => Err(err.into()),
        }
    }
}
