//! [`InstancesApi`](super::InstancesApi) as [`KairshipService`] implements it.

use std::sync::Arc;

use async_trait::async_trait;
use kube::api::{DeleteParams, ListParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use serde_json::Value;

use super::InstancesApi;
use crate::access::{Caller, InstanceResource, Verb};
use crate::api::body::{Expected, check_name, prepare_write};
use crate::api::instances::kubeconfig::{KubeconfigParts, proxy_url, render};
use crate::api::kairship::{INSTANCE_API_VERSION, KairshipService, dynamic, to_object};
use crate::api::list::select_instances;
use crate::api::{
    AdoptInstanceRequest, ApiError, BearerToken, CreateInstanceRequest, CreateKubeconfigRequest,
    DeleteInstanceRequest, GetInstanceRequest, KubeconfigResponse, ListInstancesRequest, Object,
    ObjectList, UpdateInstanceRequest,
};
use crate::audit::{AuditObject, AuditRecordSpec, AuditSink, current_door};
use crate::instance::{FORCE_DELETE_ANNOTATION, Instance};

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

impl KairshipService {
    /// Records a write of the Instance `name` made on the host for `caller` (none without an
    /// audit trail). Only the outcome is kept, never the body.
    fn record_instance_write<T>(
        &self,
        caller: &Caller,
        name: &str,
        verb: &str,
        result: &Result<T, ApiError>,
    ) {
        let Some(trail) = &self.audit else {
            return;
        };
        let (code, message) = match result {
            Ok(_) if verb == "create" || verb == "adopt" => (201, None),
            Ok(_) => (200, None),
            // An adopt's failure may quote the kubeconfig it was given.
            Err(err) if verb == "adopt" => (err.http_status(), None),
            Err(err) => (err.http_status(), Some(err.message.clone())),
        };
        let object = AuditObject {
            group: "kairship.io".into(),
            version: "v1alpha1".into(),
            resource: "instances".into(),
            name: name.into(),
            ..AuditObject::default()
        };
        trail.record(AuditRecordSpec::new(
            caller,
            "kairship",
            name,
            current_door(),
            verb,
            object,
            code,
            message,
        ));
    }
}

#[async_trait]
impl InstancesApi for KairshipService {
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
            .await;
        self.record_instance_write(caller, &name, "create", &created);
        to_object(&created?, "an instance")
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
            .await;
        self.record_instance_write(caller, &req.instance, "update", &updated);
        to_object(&updated?, "an instance")
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
        // The annotation and the delete are one write of the caller's: one record.
        let deleted = async {
            if req.force && !annotated {
                // The controller-manager's deletion check reads the annotation.
                let patch = serde_json::json!({"metadata": {"annotations": {FORCE_DELETE_ANNOTATION: "true"}}});
                self.host_call(
                    &format!("annotate instance {name} for a forced delete"),
                    self.instances()
                        .patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
                )
                .await?;
            }
            self.host_call(
                &format!("delete instance {name}"),
                self.instances().delete(name, &DeleteParams::default()),
            )
            .await
        }
        .await;
        self.record_instance_write(caller, name, "delete", &deleted);
        deleted?.either(
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

    async fn adopt_instance(
        &self,
        caller: &Caller,
        req: AdoptInstanceRequest,
    ) -> Result<Object, ApiError> {
        let instance = req.instance.clone();
        let adopted = self.adopt_instance_inline(caller, req).await;
        self.record_instance_write(caller, &instance, "adopt", &adopted);
        adopted
    }
}
