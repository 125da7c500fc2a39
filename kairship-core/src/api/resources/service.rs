//! [`ResourcesApi`](super::ResourcesApi) as [`KairshipService`] implements it.

use async_trait::async_trait;
use kube::api::PatchParams;

use super::ResourcesApi;
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::body::check_name;
use crate::api::inside::{Gvr, Inside, check_gvr, check_scope};
use crate::api::kairship::{DEFAULT_FIELD_MANAGER, KairshipService, gvr, object_list};
use crate::api::{
    ApiError, ApiResourceList, CORE_GROUP, CreateObjectRequest, CreateResourceRequest,
    DeleteObjectRequest, DeleteResourceRequest, GetObjectRequest, GetResourceRequest,
    ListApiResourcesRequest, ListEventsRequest, ListObjectsRequest, ListOptions,
    ListResourcesRequest, Object, ObjectList, PatchObjectRequest, PatchType, RenderedObjectList,
    ResourceKind, UpdateObjectRequest, UpdateResourceRequest,
};
use crate::router::written_target;

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

/// What a resource call is about: a typed kind or a group/version/resource, in a namespace
/// (or none) of an instance. The typed and the generic methods differ only in this.
#[derive(Clone, Copy)]
struct At<'a> {
    instance: &'a str,
    of: Of<'a>,
    namespace: Option<&'a str>,
}

#[derive(Clone, Copy)]
enum Of<'a> {
    Kind(ResourceKind),
    Resource(Gvr<'a>),
}

impl<'a> At<'a> {
    /// A typed alias (`deployments`, ...).
    fn kind(instance: &'a str, kind: ResourceKind, namespace: Option<&'a str>) -> Self {
        At {
            instance,
            of: Of::Kind(kind),
            namespace,
        }
    }

    /// Any resource the instance serves.
    fn resource(
        instance: &'a str,
        group: &'a str,
        version: &'a str,
        resource: &'a str,
        namespace: Option<&'a str>,
    ) -> Self {
        At {
            instance,
            of: Of::Resource(gvr(group, version, resource)),
            namespace,
        }
    }

    /// The call `action` (`list`, `read`, ...) with `verb` on it.
    fn call(self, verb: Verb, action: &str) -> Inside<'a> {
        match self.of {
            Of::Kind(kind) => Inside::resource(self.instance, kind, self.namespace, verb, action),
            Of::Resource(gvr) => Inside::generic(self.instance, gvr, self.namespace, verb, action),
        }
    }
}

/// Where a generic request (its `instance`, `group`, `version`, `resource` and `namespace`)
/// points.
macro_rules! at_resource {
    ($req:expr) => {
        At::resource(
            &$req.instance,
            &$req.group,
            &$req.version,
            &$req.resource,
            $req.namespace.as_deref(),
        )
    };
}

/// The steps of each call, the same for typed kinds and generic resources.
impl KairshipService {
    async fn list_at(
        &self,
        caller: &Caller,
        at: At<'_>,
        options: &ListOptions,
    ) -> Result<ObjectList, ApiError> {
        let call = at.call(Verb::Get, "list").listing(options);
        self.list_inside(caller, call).await
    }

    async fn list_rendered_at(
        &self,
        caller: &Caller,
        at: At<'_>,
        options: &ListOptions,
    ) -> Result<RenderedObjectList, ApiError> {
        let call = at.call(Verb::Get, "list").listing(options);
        self.list_inside_rendered(caller, call).await
    }

    async fn get_at(&self, caller: &Caller, at: At<'_>, name: &str) -> Result<Object, ApiError> {
        let call = at.call(Verb::Get, "read").named("name", name);
        self.get_inside(caller, call, name, "an object").await
    }

    async fn create_at(
        &self,
        caller: &Caller,
        at: At<'_>,
        body: Object,
    ) -> Result<Object, ApiError> {
        let call = at.call(Verb::Create, "create").with_body(body);
        self.create_inside(caller, call).await
    }

    async fn replace_at(
        &self,
        caller: &Caller,
        at: At<'_>,
        name: &str,
        body: Object,
    ) -> Result<Object, ApiError> {
        let call = at
            .call(Verb::Update, "update")
            .named("name", name)
            .with_body(body);
        self.replace_inside(caller, call, name).await
    }

    async fn delete_at(&self, caller: &Caller, at: At<'_>, name: &str) -> Result<Object, ApiError> {
        let call = at.call(Verb::Delete, "delete").named("name", name);
        self.delete_inside(caller, call, name).await
    }
}

#[async_trait]
impl ResourcesApi for KairshipService {
    async fn list_resources(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<ObjectList, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.list_at(caller, at, &req.options).await
    }

    async fn list_resources_rendered(
        &self,
        caller: &Caller,
        req: ListResourcesRequest,
    ) -> Result<RenderedObjectList, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.list_rendered_at(caller, at, &req.options).await
    }

    async fn get_resource(
        &self,
        caller: &Caller,
        req: GetResourceRequest,
    ) -> Result<Object, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.get_at(caller, at, &req.name).await
    }

    async fn create_resource(
        &self,
        caller: &Caller,
        req: CreateResourceRequest,
    ) -> Result<Object, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.create_at(caller, at, req.body).await
    }

    async fn update_resource(
        &self,
        caller: &Caller,
        req: UpdateResourceRequest,
    ) -> Result<Object, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.replace_at(caller, at, &req.name, req.body).await
    }

    async fn delete_resource(
        &self,
        caller: &Caller,
        req: DeleteResourceRequest,
    ) -> Result<Object, ApiError> {
        let at = At::kind(&req.instance, req.kind, req.namespace.as_deref());
        self.delete_at(caller, at, &req.name).await
    }

    async fn list_objects(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<ObjectList, ApiError> {
        let at = at_resource!(req);
        self.list_at(caller, at, &req.options).await
    }

    async fn list_objects_rendered(
        &self,
        caller: &Caller,
        req: ListObjectsRequest,
    ) -> Result<RenderedObjectList, ApiError> {
        let at = at_resource!(req);
        self.list_rendered_at(caller, at, &req.options).await
    }

    fn await_written(
        &self,
        instance: &str,
        group: &str,
        version: &str,
        resource: &str,
        resource_version: &str,
    ) {
        let group = if group == CORE_GROUP { "" } else { group };
        let target = written_target(instance, group, version, resource);
        self.router.await_version(&target, resource_version);
    }

    async fn get_object(&self, caller: &Caller, req: GetObjectRequest) -> Result<Object, ApiError> {
        let at = at_resource!(req);
        self.get_at(caller, at, &req.name).await
    }

    async fn create_object(
        &self,
        caller: &Caller,
        req: CreateObjectRequest,
    ) -> Result<Object, ApiError> {
        let at = at_resource!(req);
        self.create_at(caller, at, req.body).await
    }

    async fn update_object(
        &self,
        caller: &Caller,
        req: UpdateObjectRequest,
    ) -> Result<Object, ApiError> {
        let at = at_resource!(req);
        self.replace_at(caller, at, &req.name, req.body).await
    }

    async fn patch_object(
        &self,
        caller: &Caller,
        req: PatchObjectRequest,
    ) -> Result<Object, ApiError> {
        let params = patch_params(&req)?;
        let name = req.name.as_str();
        let at = at_resource!(req);
        let call = at
            .call(Verb::Patch, "patch")
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
        let at = at_resource!(req);
        self.delete_at(caller, at, &req.name).await
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

    async fn list_api_resources(
        &self,
        caller: &Caller,
        req: ListApiResourcesRequest,
    ) -> Result<ApiResourceList, ApiError> {
        let instance = req.instance.as_str();
        check_name("instance", instance)?;
        self.authorize(
            caller,
            Verb::Get,
            InstanceResource::Proxy,
            Some(instance),
            "list the resources the instance serves",
        )
        .await?;
        let Some(discovery) = &self.discovery else {
            return Err(ApiError::unavailable(
                "the resources of instances cannot be listed: this server has no instance clients",
            ));
        };
        let items = discovery
            .served
            .list(discovery.clients.as_ref(), instance)
            .await?;
        Ok(ApiResourceList {
            items: items.as_ref().clone(),
        })
    }
}
