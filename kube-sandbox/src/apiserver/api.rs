//! The API semantics of kube-apiserver on top of the store: create, update, patch and delete with
//! metadata handling, status subresources, schema validation of custom resources, finalizers,
//! garbage collection and namespace deletion. HTTP handling lives in `server`; the simulated
//! kubelet and scheduler call these functions directly.

use crate::apiserver::admission;
use crate::apiserver::conversion;
use crate::apiserver::error::{ApiError, Cause};
use crate::apiserver::meta::{self, finalizers, meta_str};
use crate::apiserver::namespace_deletion;
use crate::apiserver::resources::{self, GroupResource, ResourceType};
use crate::apiserver::state::ClusterState;
use crate::apiserver::store::{EventType, Stored, WriteOp};
use crate::apiserver::workload_defaults;
pub use crate::apiserver::write_options::{DeleteOptions, Deleted, PatchType, WriteContext};
use crate::patch;
use crate::validation::gocompat::go_quote;
use crate::validation::{labels, schema, workloads};
use serde_json::{Value, json};
use std::sync::Arc;

/// An object of the request's version (its `apiVersion`, else the URL's) in the storage version.
fn in_storage_version(rt: &ResourceType, version: &str, mut obj: Value) -> Value {
    if obj.get("apiVersion").is_none_or(Value::is_null)
        && let Some(map) = obj.as_object_mut()
    {
        map.insert("apiVersion".into(), json!(rt.api_version(version)));
    }
    conversion::to_storage(rt, obj)
}

fn kind_mismatch(rt: &ResourceType, version: &str, body: &Value) -> Option<ApiError> {
    let kind = body.get("kind").and_then(Value::as_str);
    let api_version = body.get("apiVersion").and_then(Value::as_str);
    match (kind, api_version) {
        (Some(k), _) if k != rt.kind => Some(ApiError::bad_request(format!(
            "the API version in the data ({}) does not match the expected API version ({})",
            api_version
                .map(|v| format!("{v}, Kind={k}"))
                .unwrap_or_default(),
            format_args!("{}, Kind={}", rt.api_version(version), rt.kind)
        ))),
        (_, Some(v)) if !rt.versions.iter().any(|s| rt.api_version(s) == v) => {
            Some(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({})",
                rt.api_version(version)
            )))
        }
        _ => None,
    }
}

/// `metadata.labels` of `obj` as `ValidateObjectMeta` checks it for every kind, create and
/// update alike: one `FieldValueInvalid` per problem, all on the path `metadata.labels`.
fn label_causes(obj: &Value) -> Vec<Cause> {
    labels::invalid_object_labels(obj)
        .into_iter()
        .map(|e| Cause {
            reason: "FieldValueInvalid".into(),
            message: format!("Invalid value: {}: {}", go_quote(&e.bad_value), e.detail),
            field: "metadata.labels".into(),
        })
        .collect()
}

/// The spec errors of a built-in workload, validated as kube-apiserver validates it: after the
/// kind's defaults (applied here to a copy; admission applies them to the stored object).
fn workload_causes(rt: &ResourceType, obj: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut defaulted = obj.clone();
    if workload_defaults::applies_to(&rt.group, &rt.plural) {
        workload_defaults::apply(&rt.group, &rt.plural, &mut defaulted, old.is_none());
    }
    workloads::validate(&rt.group, &rt.plural, &defaulted, old)
        .into_iter()
        .map(|e| Cause {
            reason: e.kind.reason().to_string(),
            message: e.error_body(),
            field: e.field,
        })
        .collect()
}

fn field_causes(errors: Vec<schema::FieldError>) -> Vec<Cause> {
    errors
        .into_iter()
        .map(|e| Cause {
            reason: e.reason().to_string(),
            message: e.error_body(),
            field: e.field.clone(),
        })
        .collect()
}

/// Whether everything but metadata and status (what bumps `metadata.generation` when it
/// changes) is equal.
fn same_spec(a: &Value, b: &Value) -> bool {
    // Compared in place: copying both specs on every write of a pod cost more than the
    // rest of the comparison.
    fn spec(obj: &Value) -> impl Iterator<Item = (&String, &Value)> {
        obj.as_object()
            .into_iter()
            .flatten()
            .filter(|(k, _)| !matches!(k.as_str(), "metadata" | "status" | "apiVersion" | "kind"))
    }
    spec(a).eq(spec(b))
}

/// Compares two objects ignoring what every write changes anyway.
fn same_content(a: &Value, b: &Value) -> bool {
    equal_except(a, b, &[], &["resourceVersion", "managedFields"])
}

/// Whether two maps are equal but for the keys in `skip`, values compared with `eq`.
fn map_equal_except(
    a: &serde_json::Map<String, Value>,
    b: &serde_json::Map<String, Value>,
    skip: &[&str],
    eq: impl Fn(&str, &Value, &Value) -> bool,
) -> bool {
    let kept = |m: &serde_json::Map<String, Value>| {
        m.keys().filter(|k| !skip.contains(&k.as_str())).count()
    };
    kept(a) == kept(b)
        && a.iter()
            .filter(|(k, _)| !skip.contains(&k.as_str()))
            .all(|(k, v)| b.get(k).is_some_and(|w| eq(k, v, w)))
}

/// Whether a status write may also change metadata (labels, annotations, finalizers): true
/// for pods, whose status strategy in kube-apiserver resets only `spec`,
/// `metadata.deletionTimestamp` and `metadata.ownerReferences`; other types keep everything
/// but `status`.
pub fn metadata_writable_through_status(rt: &ResourceType) -> bool {
    rt.group.is_empty() && rt.plural == "pods"
}

/// Whether two objects are equal but for the top-level keys `top` and the metadata keys
/// `meta`. Compared in place: every write compares, and copying both objects to strip the
/// keys cost more than the comparison.
fn equal_except(a: &Value, b: &Value, top: &[&str], meta: &[&str]) -> bool {
    match (a.as_object(), b.as_object()) {
        (Some(a), Some(b)) => map_equal_except(a, b, top, |key, v, w| {
            match (key, v.as_object(), w.as_object()) {
                ("metadata", Some(v), Some(w)) => map_equal_except(v, w, meta, |_, x, y| x == y),
                _ => v == w,
            }
        }),
        _ => a == b,
    }
}

impl ClusterState {
    /// Validates an object: its metadata (`meta_causes`, reported first as kube-apiserver's
    /// strategies do), a custom resource against its CRD schema (defaulted first), and the
    /// spec of a built-in workload written through the object itself or `/scale`
    /// (`spec_write`; a status write is validated as its status).
    #[allow(clippy::too_many_arguments)]
    fn check_object(
        &self,
        rt: &ResourceType,
        version: &str,
        obj: &mut Value,
        old: Option<&Value>,
        name: &str,
        meta_causes: Vec<Cause>,
        spec_write: bool,
    ) -> Result<(), ApiError> {
        let mut causes = meta_causes;
        if spec_write && rt.custom.is_none() && workloads::validates(&rt.group, &rt.plural) {
            causes.extend(workload_causes(rt, obj, old));
        }
        if rt.custom.is_some()
            && let Some(schema) = rt
                .schema(version)
                .or_else(|| rt.schema(rt.storage_version()))
        {
            schema::prune_unknown(schema, obj);
            schema::default_object(schema, obj);
            causes.extend(field_causes(schema::validate_object(schema, obj, old)));
        }
        if causes.is_empty() {
            Ok(())
        } else {
            Err(ApiError::invalid(&rt.group, &rt.kind, name, causes))
        }
    }

    /// Namespace checks for a write of `name` into `namespace`.
    fn check_namespace(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        creating: bool,
    ) -> Result<(), ApiError> {
        if !rt.namespaced {
            return Ok(());
        }
        let ns_gr = GroupResource::new("", "namespaces");
        match self.store.get(&ns_gr, "", namespace) {
            None => Err(ApiError::not_found("", "namespaces", namespace)),
            Some(ns) if creating && ns.value.pointer("/metadata/deletionTimestamp").is_some() => {
                // The NamespaceLifecycle admission plugin (kubernetes
                // `plugin/pkg/admission/namespace/lifecycle/admission.go`, `Admit`).
                Err(ApiError::forbidden(
                    &rt.group,
                    &rt.plural,
                    name,
                    format!(
                        "unable to create new content in namespace {namespace} because it is being terminated"
                    ),
                ))
            }
            Some(_) => Ok(()),
        }
    }

    /// POST a new object.
    pub fn create(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: &str,
        obj: Value,
        ctx: &WriteContext,
    ) -> Result<Arc<Stored>, ApiError> {
        self.create_with(rt, version, namespace, obj, ctx, false)
    }

    /// Creates an object; `applied` objects already carry their managedFields.
    fn create_with(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: &str,
        obj: Value,
        ctx: &WriteContext,
        applied: bool,
    ) -> Result<Arc<Stored>, ApiError> {
        if !obj.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        if let Some(err) = kind_mismatch(rt, version, &obj) {
            return Err(err);
        }
        let mut obj = in_storage_version(rt, version, obj);
        let body_ns = meta_str(&obj, "namespace").unwrap_or("").to_string();
        if rt.namespaced && !body_ns.is_empty() && body_ns != namespace {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let mut name = meta_str(&obj, "name").unwrap_or("").to_string();
        if name.is_empty() {
            match meta_str(&obj, "generateName") {
                Some(prefix) if !prefix.is_empty() => {
                    name = format!("{prefix}{}", meta::random_suffix());
                }
                _ => {
                    return Err(ApiError::invalid(
                        &rt.group,
                        &rt.kind,
                        "",
                        vec![Cause {
                            reason: "FieldValueRequired".into(),
                            message:
                                "metadata.name: Required value: name or generateName is required"
                                    .into(),
                            field: "metadata.name".into(),
                        }],
                    ));
                }
            }
        }
        let name_error = if matches!(rt.plural.as_str(), "namespaces" | "services") {
            meta::dns1123_label_error(&name)
        } else if rt.group == "rbac.authorization.k8s.io" {
            // RBAC names are path segments; kube-apiserver allows ':' in them.
            (name.contains('/') || name.contains('%'))
                .then(|| "may not contain '/' or '%'".to_string())
        } else {
            meta::dns1123_subdomain_error(&name)
        };
        let meta_causes = label_causes(&obj);
        if let Some(why) = name_error {
            let mut causes = vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: format!("metadata.name: Invalid value: \"{name}\": {why}"),
                field: "metadata.name".into(),
            }];
            causes.extend(meta_causes);
            return Err(ApiError::invalid(&rt.group, &rt.kind, &name, causes));
        }
        self.check_namespace(rt, namespace, &name, true)?;
        let api_version = rt.api_version(rt.storage_version());
        {
            let map = obj
                .as_object_mut()
                .ok_or_else(|| ApiError::bad_request("not an object"))?;
            map.insert("apiVersion".into(), json!(api_version));
            map.insert("kind".into(), json!(rt.kind));
        }
        let uid = meta::new_uid();
        let now = meta::now_rfc3339();
        if let Some(m) = meta::metadata_mut(&mut obj) {
            m.insert("name".into(), json!(name));
            if rt.namespaced {
                m.insert("namespace".into(), json!(namespace));
            } else {
                m.remove("namespace");
            }
            m.insert("uid".into(), json!(uid));
            m.insert("creationTimestamp".into(), json!(now));
            m.remove("deletionTimestamp");
            m.remove("deletionGracePeriodSeconds");
            m.remove("resourceVersion");
            m.remove("selfLink");
            if !applied {
                m.remove("managedFields");
            }
            if rt.has_generation {
                m.insert("generation".into(), json!(1));
            } else {
                m.remove("generation");
            }
        }
        if let Some(map) = obj.as_object_mut() {
            if rt.custom.is_some() && rt.has_status() {
                map.remove("status");
            } else if let Some(status) = resources::status_on_create(&rt.group, &rt.plural) {
                map.insert("status".into(), status);
            }
        }
        self.check_object(rt, version, &mut obj, None, &name, meta_causes, true)?;
        admission::on_create(self, rt, &mut obj)?;
        if !applied {
            patch::record_update(None, &mut obj, &ctx.field_manager, &api_version, &now);
        }
        let gr = rt.group_resource();
        let ns_key = if rt.namespaced { namespace } else { "" };
        if ctx.dry_run {
            // As kube-apiserver's dry-run storage: validated, and refused if the name is taken.
            if self.store.get(&gr, ns_key, &name).is_some() {
                return Err(ApiError::already_exists(&rt.group, &rt.plural, &name));
            }
            return Ok(Arc::new(Stored {
                json: serde_json::to_vec(&obj).unwrap_or_default().into(),
                value: obj,
                rv: 0,
            }));
        }
        let outcome = self
            .store
            .write(&gr, ns_key, &name, |current| match current {
                Some(_) => Err(ApiError::already_exists(&rt.group, &rt.plural, &name)),
                None => Ok(WriteOp::Put(obj)),
            })?;
        self.after_write(rt, &outcome.object, outcome.event);
        Ok(outcome.object)
    }

    /// PUT an object or its status.
    #[allow(clippy::too_many_arguments)]
    pub fn update(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: &str,
        name: &str,
        body: Value,
        subresource: Option<&str>,
        ctx: &WriteContext,
    ) -> Result<Arc<Stored>, ApiError> {
        if !body.is_object() {
            return Err(ApiError::bad_request(
                "the body of the request must be a JSON object",
            ));
        }
        if let Some(err) = kind_mismatch(rt, version, &body) {
            return Err(err);
        }
        if let Some(body_name) = meta_str(&body, "name")
            && body_name != name
        {
            return Err(ApiError::bad_request(format!(
                "the name of the object ({body_name}) does not match the name on the URL ({name})"
            )));
        }
        if rt.namespaced
            && let Some(body_ns) = meta_str(&body, "namespace")
            && !body_ns.is_empty()
            && body_ns != namespace
        {
            return Err(ApiError::bad_request(
                "the namespace of the provided object does not match the namespace sent on the request",
            ));
        }
        let expected_rv = meta_str(&body, "resourceVersion")
            .filter(|s| !s.is_empty())
            .map(str::to_string);
        self.update_with(
            rt,
            version,
            namespace,
            name,
            subresource,
            ctx,
            expected_rv,
            move |_| Ok(body),
        )
    }

    /// The shared path of PUT and PATCH: `compute` turns the current object into the new one.
    #[allow(clippy::too_many_arguments)]
    pub fn update_with(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: &str,
        name: &str,
        subresource: Option<&str>,
        ctx: &WriteContext,
        expected_rv: Option<String>,
        compute: impl FnOnce(&Value) -> Result<Value, ApiError>,
    ) -> Result<Arc<Stored>, ApiError> {
        let gr = rt.group_resource();
        let ns_key = if rt.namespaced { namespace } else { "" };
        let status_write = subresource == Some("status");
        // pods/binding sets spec.nodeName and the PodScheduled condition in one write, as
        // kube-apiserver's binding storage does, so the status it computes is kept.
        let binding_write = subresource == Some("binding");
        let api_version = rt.api_version(rt.storage_version());
        let mut dry_result = None;
        let outcome = self.store.write(&gr, ns_key, name, |current| {
            let Some(current) = current else {
                return Err(ApiError::not_found(&rt.group, &rt.plural, name));
            };
            let old = &current.value;
            if let Some(rv) = &expected_rv
                && *rv != current.rv.to_string()
            {
                return Err(ApiError::stale(&rt.group, &rt.plural, name));
            }
            // The request's version sees (and changes) the object as that version serves it.
            let mut new = compute(&conversion::to_version(rt, old, version))?;
            if !new.is_object() {
                return Err(ApiError::bad_request("the object must be a JSON object"));
            }
            new = in_storage_version(rt, version, new);
            if subresource == Some("ephemeralcontainers") {
                new = crate::apiserver::subresources::ephemeral_containers_write(old, &new, name)?;
            }
            if subresource == Some("resize") {
                new = crate::apiserver::subresources::resize_write(old, &new);
            }
            if let Some(new_name) = meta_str(&new, "name")
                && new_name != name
            {
                return Err(ApiError::bad_request(format!(
                    "the name of the object ({new_name}) does not match the name on the URL ({name})"
                )));
            }
            if let Some(map) = new.as_object_mut() {
                map.insert("apiVersion".into(), json!(api_version));
                map.insert("kind".into(), json!(rt.kind));
            }
            if status_write && equal_except(old, &new, &["status"], &["managedFields"]) {
                // Only status changes through the status subresource; the body is the old
                // object with another status (as internal writers build it), so it is kept
                // instead of copying the old object once more.
                if new.pointer("/metadata/managedFields").is_none()
                    && let (Some(m), Some(mf)) = (
                        meta::metadata_mut(&mut new),
                        old.pointer("/metadata/managedFields").cloned(),
                    )
                {
                    m.insert("managedFields".into(), mf);
                }
            } else if status_write && rt.group == "apps" && rt.plural == "deployments" {
                // deploymentStatusStrategy.PrepareForUpdate (kubernetes
                // `pkg/registry/apps/deployment/strategy.go`) puts back the spec and the labels
                // only: the deployment controller writes the revision annotation with the status.
                if let Some(map) = new.as_object_mut() {
                    match old.get("spec") {
                        Some(spec) => map.insert("spec".into(), spec.clone()),
                        None => map.remove("spec"),
                    };
                }
                let old_labels = old.pointer("/metadata/labels").cloned();
                if let Some(m) = meta::metadata_mut(&mut new) {
                    match old_labels {
                        Some(labels) => m.insert("labels".into(), labels),
                        None => m.remove("labels"),
                    };
                }
            } else if status_write && !metadata_writable_through_status(rt) {
                // Only status changes through the status subresource.
                let status = new.get("status").cloned();
                let mut merged = old.clone();
                if let Some(map) = merged.as_object_mut() {
                    match status {
                        Some(s) => map.insert("status".into(), s),
                        None => map.remove("status"),
                    };
                }
                if let (Some(m), Some(mf)) = (
                    meta::metadata_mut(&mut merged),
                    new.pointer("/metadata/managedFields").cloned(),
                ) {
                    m.insert("managedFields".into(), mf);
                }
                new = merged;
            } else {
                // A pod status write keeps the old spec (and owner references, below); a
                // write of the object keeps the old status.
                let (kept_part, kept_owners) = match status_write {
                    true => ("spec", Some("ownerReferences")),
                    false => ("status", None),
                };
                if (status_write || rt.has_status())
                    && !binding_write
                    && let Some(map) = new.as_object_mut()
                {
                    match old.get(kept_part) {
                        Some(s) => map.insert(kept_part.into(), s.clone()),
                        None => map.remove(kept_part),
                    };
                }
                let old_meta = old.get("metadata").cloned().unwrap_or_default();
                if let Some(m) = meta::metadata_mut(&mut new) {
                    for kept in kept_owners.into_iter().chain([
                        "uid",
                        "creationTimestamp",
                        "deletionTimestamp",
                        "deletionGracePeriodSeconds",
                        "generation",
                        "namespace",
                        "name",
                    ]) {
                        match old_meta.get(kept) {
                            Some(v) => m.insert(kept.into(), v.clone()),
                            None => m.remove(kept),
                        };
                    }
                }
                if old.pointer("/metadata/deletionTimestamp").is_some() {
                    let before = finalizers(old);
                    if let Some(added) = finalizers(&new).into_iter().find(|f| !before.contains(f)) {
                        return Err(ApiError::invalid(
                            &rt.group,
                            &rt.kind,
                            name,
                            vec![Cause {
                                reason: "FieldValueForbidden".into(),
                                message: format!("metadata.finalizers: Forbidden: no new finalizers can be added if the object is being deleted, found new finalizers []string{{\"{added}\"}}"),
                                field: "metadata.finalizers".into(),
                            }],
                        ));
                    }
                }
                if rt.has_generation && !same_spec(old, &new) {
                    let generation = old
                        .pointer("/metadata/generation")
                        .and_then(Value::as_i64)
                        .unwrap_or(0);
                    if let Some(m) = meta::metadata_mut(&mut new) {
                        m.insert("generation".into(), json!(generation + 1));
                    }
                }
            }
            let meta_causes = label_causes(&new);
            self.check_object(
                rt,
                version,
                &mut new,
                Some(old),
                name,
                meta_causes,
                subresource.is_none(),
            )?;
            admission::on_update(self, rt, old, &mut new, status_write)?;
            if same_content(old, &new) {
                return Ok(WriteOp::Noop);
            }
            patch::record_update_subresource(
                Some(old),
                &mut new,
                &ctx.field_manager,
                subresource.unwrap_or(""),
                &api_version,
                &meta::now_rfc3339(),
            );
            let deleting = new.pointer("/metadata/deletionTimestamp").is_some();
            if ctx.dry_run {
                dry_result = Some(new);
                return Ok(WriteOp::Noop);
            }
            if deleting && finalizers(&new).is_empty() {
                return Ok(WriteOp::Remove);
            }
            Ok(WriteOp::Put(new))
        })?;
        if let Some(value) = dry_result {
            return Ok(Arc::new(Stored {
                json: serde_json::to_vec(&value).unwrap_or_default().into(),
                value,
                rv: outcome.object.rv,
            }));
        }
        self.after_write(rt, &outcome.object, outcome.event);
        Ok(outcome.object)
    }

    /// PATCH an object or its status.
    #[allow(clippy::too_many_arguments)]
    pub fn patch(
        &self,
        rt: &ResourceType,
        version: &str,
        namespace: &str,
        name: &str,
        patch_type: PatchType,
        body: &[u8],
        subresource: Option<&str>,
        ctx: &WriteContext,
    ) -> Result<Arc<Stored>, ApiError> {
        let parsed: Value = match patch_type {
            PatchType::Apply { .. } => serde_saphyr::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?,
            _ => serde_json::from_slice(body)
                .map_err(|e| ApiError::bad_request(format!("error decoding patch: {e}")))?,
        };
        if patch_type == PatchType::StrategicMerge && !patch::supports_strategic_merge(&rt.kind) {
            return Err(ApiError::unsupported_media_type(
                "application/strategic-merge-patch+json",
            ));
        }
        let gr = rt.group_resource();
        let ns_key = if rt.namespaced { namespace } else { "" };
        if let PatchType::Apply { force } = patch_type {
            if !parsed.is_object() {
                return Err(ApiError::bad_request(
                    "the applied configuration must be an object",
                ));
            }
            if let Some(err) = kind_mismatch(rt, version, &parsed) {
                return Err(err);
            }
            if parsed.get("kind").is_none() || parsed.get("apiVersion").is_none() {
                return Err(ApiError::bad_request(
                    "invalid object type: apiVersion and kind must be set in an applied configuration",
                ));
            }
            if ctx.field_manager.is_empty() {
                return Err(ApiError::bad_request(
                    "PATCH, application/apply-patch+yaml requests require fieldManager to be set",
                ));
            }
            if self.store.get(&gr, ns_key, name).is_none() {
                if subresource.is_some() {
                    return Err(ApiError::not_found(&rt.group, &rt.plural, name));
                }
                let created = patch::server_side_apply(
                    None,
                    &parsed,
                    &rt.kind,
                    &ctx.field_manager,
                    force,
                    &meta::now_rfc3339(),
                )
                .map_err(|e| apply_error(rt, name, e))?;
                let mut created = created;
                if let Some(m) = meta::metadata_mut(&mut created) {
                    m.insert("name".into(), json!(name));
                }
                return self.create_with(rt, version, namespace, created, ctx, true);
            }
            let kind = rt.kind.clone();
            let manager = ctx.field_manager.clone();
            let sub = subresource.unwrap_or("").to_string();
            return self.update_with(
                rt,
                version,
                namespace,
                name,
                subresource,
                ctx,
                None,
                |old| {
                    patch::server_side_apply_subresource(
                        Some(old),
                        &parsed,
                        &kind,
                        &manager,
                        &sub,
                        force,
                        &meta::now_rfc3339(),
                    )
                    .map_err(|e| apply_error(rt, name, e))
                },
            );
        }
        let expected_rv = parsed
            .pointer("/metadata/resourceVersion")
            .and_then(Value::as_str)
            .map(str::to_string);
        let kind = rt.kind.clone();
        self.update_with(
            rt,
            version,
            namespace,
            name,
            subresource,
            ctx,
            expected_rv,
            |old| {
                let mut new = old.clone();
                match patch_type {
                    PatchType::Merge => patch::merge_patch(&mut new, &parsed),
                    PatchType::Json => {
                        new = patch::json_patch(&new, &parsed)
                            .map_err(|e| patch_error(rt, name, e))?;
                    }
                    PatchType::StrategicMerge => {
                        new = patch::strategic_merge_patch(&new, &parsed, &kind)
                            .map_err(|e| patch_error(rt, name, e))?;
                    }
                    PatchType::Apply { .. } => {}
                }
                Ok(new)
            },
        )
    }

    /// DELETE an object, honouring finalizers, grace periods and propagation.
    pub fn delete(
        &self,
        rt: &ResourceType,
        namespace: &str,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<Deleted, ApiError> {
        let gr = rt.group_resource();
        let ns_key = if rt.namespaced { namespace } else { "" };
        let policy = opts
            .propagation_policy
            .clone()
            .unwrap_or_else(|| "Background".to_string());
        if !matches!(policy.as_str(), "Background" | "Foreground" | "Orphan") {
            return Err(ApiError::bad_request(format!(
                "propagationPolicy: Unsupported value: \"{policy}\": supported values: \"Foreground\", \"Background\", \"Orphan\""
            )));
        }
        // Looked up before the write: the store's lock is held while `decide` runs.
        let has_dependents = self
            .store
            .get(&gr, ns_key, name)
            .is_some_and(|o| !self.store.dependents(o.uid()).is_empty());
        let mut removed = false;
        let outcome = self.store.write(&gr, ns_key, name, |current| {
            let Some(current) = current else {
                return Err(ApiError::not_found(&rt.group, &rt.plural, name));
            };
            let obj = &current.value;
            if let Some(uid) = &opts.precondition_uid
                && uid != current.uid()
            {
                return Err(ApiError::conflict(&rt.group, &rt.plural, name, &format!(
                    "Precondition failed: UID in precondition: {uid}, UID in object meta: {}",
                    current.uid()
                )));
            }
            if let Some(rv) = &opts.precondition_rv
                && *rv != current.rv.to_string()
            {
                return Err(ApiError::conflict(&rt.group, &rt.plural, name, &format!(
                    "Precondition failed: ResourceVersion in precondition: {rv}, ResourceVersion in object meta: {}",
                    current.rv
                )));
            }
            if opts.dry_run {
                return Ok(WriteOp::Noop);
            }
            let already_deleting = obj.pointer("/metadata/deletionTimestamp").is_some();
            let mut fins = finalizers(obj);
            let graceful = admission::grace_period(rt, obj, opts.grace_period_seconds);
            if already_deleting {
                // A second delete can only shorten a pod's grace period to zero (force).
                if graceful == Some(0) && fins.is_empty() {
                    removed = true;
                    return Ok(WriteOp::Remove);
                }
                return Ok(WriteOp::Noop);
            }
            match policy.as_str() {
                "Foreground" if has_dependents => {
                    fins.push("foregroundDeletion".into());
                }
                "Orphan" if has_dependents && !fins.is_empty() => {
                    fins.push("orphan".into());
                }
                _ => {}
            }
            let namespace_delete = rt.group.is_empty() && rt.plural == "namespaces";
            if fins.is_empty() && graceful.is_none_or(|g| g == 0) && !namespace_delete {
                removed = true;
                return Ok(WriteOp::Remove);
            }
            let mut new = obj.clone();
            if let Some(m) = meta::metadata_mut(&mut new) {
                let grace = graceful.unwrap_or(0);
                m.insert("deletionTimestamp".into(), json!(meta::rfc3339_in(grace)));
                m.insert("deletionGracePeriodSeconds".into(), json!(grace));
                if !fins.is_empty() {
                    m.insert("finalizers".into(), json!(fins));
                }
            }
            if namespace_delete {
                new["status"]["phase"] = json!("Terminating");
            }
            Ok(WriteOp::Put(new))
        })?;
        if policy == "Orphan" {
            self.orphan_dependents(outcome.object.uid());
        }
        self.after_write(rt, &outcome.object, outcome.event);
        Ok(Deleted {
            object: outcome.object,
            removed,
        })
    }

    /// Removes ownerReferences to `owner_uid` from its dependents.
    fn orphan_dependents(&self, owner_uid: &str) {
        for (gr, (ns, name)) in self.store.dependents(owner_uid) {
            self.retain_in_metadata_list(&gr, &ns, &name, "/metadata/ownerReferences", |r| {
                r.get("uid").and_then(Value::as_str) != Some(owner_uid)
            });
        }
        // The orphan finalizer has done its job.
        self.remove_finalizer_by_uid(owner_uid, "orphan");
    }

    fn remove_finalizer_by_uid(&self, uid: &str, finalizer: &str) {
        if let Some((gr, (ns, name))) = self.store.locate(uid) {
            self.retain_in_metadata_list(&gr, &ns, &name, "/metadata/finalizers", |f| {
                f.as_str() != Some(finalizer)
            });
        }
    }

    /// The garbage collector's edit of a metadata list (finalizers, ownerReferences).
    fn retain_in_metadata_list(
        &self,
        gr: &GroupResource,
        namespace: &str,
        name: &str,
        pointer: &str,
        keep: impl Fn(&Value) -> bool,
    ) {
        let Some(rt) = self.resource_type(&gr.group, &gr.resource) else {
            return;
        };
        let _ = self.update_with(
            &rt,
            rt.storage_version(),
            namespace,
            name,
            None,
            // The garbage collector runs in kube-controller-manager, under its field manager.
            &WriteContext::system("kube-controller-manager"),
            None,
            |old| {
                let mut new = old.clone();
                if let Some(list) = new.pointer_mut(pointer).and_then(Value::as_array_mut) {
                    list.retain(|item| keep(item));
                }
                Ok(new)
            },
        );
    }

    /// Follow-ups of a committed write: CRD registration, garbage collection, namespace cleanup.
    pub(crate) fn after_write(
        &self,
        rt: &ResourceType,
        object: &Arc<Stored>,
        event: Option<EventType>,
    ) {
        let Some(event) = event else { return };
        let is_crd = rt.group == "apiextensions.k8s.io" && rt.plural == "customresourcedefinitions";
        if is_crd {
            match event {
                EventType::Deleted => self.unregister_crd(&object.value),
                _ => self.register_crd(&object.value),
            }
        }
        match event {
            EventType::Deleted => {
                self.collect_garbage(object);
                self.release_foreground_owners(&object.value);
            }
            _ => {
                let deleting = object
                    .value
                    .pointer("/metadata/deletionTimestamp")
                    .is_some();
                if deleting
                    && finalizers(&object.value)
                        .iter()
                        .any(|f| f == "foregroundDeletion")
                {
                    self.delete_dependents(object.uid());
                    self.release_foreground_owners_of(object);
                }
                if deleting && rt.group.is_empty() && rt.plural == "namespaces" {
                    self.spawn_namespace_cleanup(meta_str(&object.value, "name").unwrap_or(""));
                }
            }
        }
    }

    /// Deletes the dependents of a removed owner whose every owner is gone.
    fn collect_garbage(&self, owner: &Arc<Stored>) {
        for (gr, (ns, name)) in self.store.dependents(owner.uid()) {
            let Some(dependent) = self.store.get(&gr, &ns, &name) else {
                continue;
            };
            let other_owner_alive = dependent
                .value
                .pointer("/metadata/ownerReferences")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(|r| r.get("uid").and_then(Value::as_str))
                .any(|uid| uid != owner.uid() && self.uid_exists(uid));
            if other_owner_alive {
                continue;
            }
            if let Some(rt) = self.resource_type(&gr.group, &gr.resource) {
                let _ = self.delete(&rt, &ns, &name, &DeleteOptions::default());
            }
        }
    }

    fn delete_dependents(&self, owner_uid: &str) {
        for (gr, (ns, name)) in self.store.dependents(owner_uid) {
            if let Some(rt) = self.resource_type(&gr.group, &gr.resource) {
                let _ = self.delete(&rt, &ns, &name, &DeleteOptions::default());
            }
        }
    }

    /// Whether any live object has this uid (owners are looked up through their dependents).
    fn uid_exists(&self, uid: &str) -> bool {
        self.store.locate(uid).is_some()
    }

    /// When a dependent goes away, an owner waiting in foreground deletion may be done.
    fn release_foreground_owners(&self, dependent: &Value) {
        let refs: Vec<String> = dependent
            .pointer("/metadata/ownerReferences")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(|r| r.get("uid").and_then(Value::as_str).map(str::to_string))
            .collect();
        for uid in refs {
            if let Some((gr, (ns, name))) = self.store.locate(&uid)
                && let Some(owner) = self.store.get(&gr, &ns, &name)
            {
                self.release_foreground_owners_of(&owner);
            }
        }
    }

    fn release_foreground_owners_of(&self, owner: &Arc<Stored>) {
        let waiting = owner.value.pointer("/metadata/deletionTimestamp").is_some()
            && finalizers(&owner.value)
                .iter()
                .any(|f| f == "foregroundDeletion");
        if !waiting || !self.store.dependents(owner.uid()).is_empty() {
            return;
        }
        self.remove_finalizer_by_uid(owner.uid(), "foregroundDeletion");
    }

    /// The namespace controller: delete everything in a terminating namespace, then the namespace.
    fn spawn_namespace_cleanup(&self, namespace: &str) {
        let Some(state) = self.self_ref.upgrade() else {
            return;
        };
        let namespace = namespace.to_string();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                loop {
                    if state.namespace_cleanup_pass(&namespace) || state.shutdown.is_cancelled() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                }
            });
        }
    }

    /// Writes what still holds a terminating namespace into its status conditions, when that
    /// changed.
    fn record_deletion_conditions(
        &self,
        namespace: &str,
        remaining: &namespace_deletion::Remaining,
    ) {
        let ns_gr = GroupResource::new("", "namespaces");
        let now = meta::now_rfc3339();
        let _ = self.store.write(&ns_gr, "", namespace, |current| {
            let Some(current) = current else {
                return Ok(WriteOp::Noop);
            };
            let old: Vec<Value> = current
                .value
                .pointer("/status/conditions")
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default();
            let conditions = namespace_deletion::conditions(&old, remaining, &now);
            if conditions == old {
                return Ok(WriteOp::Noop);
            }
            let mut new = current.value.clone();
            new["status"]["conditions"] = Value::Array(conditions);
            Ok(WriteOp::Put(new))
        });
    }

    /// One pass of namespace cleanup; true once its content is gone (and the namespace with it,
    /// unless finalizers of its own keep it).
    pub(crate) fn namespace_cleanup_pass(&self, namespace: &str) -> bool {
        let keys = self.store.keys_in_namespace(namespace);
        for (gr, (ns, name)) in &keys {
            if let Some(rt) = self.resource_type(&gr.group, &gr.resource)
                && let Some(obj) = self.store.get(gr, ns, name)
                && obj.value.pointer("/metadata/deletionTimestamp").is_none()
            {
                let _ = self.delete(&rt, ns, name, &DeleteOptions::default());
            }
        }
        let left = self.store.keys_in_namespace(namespace);
        let mut remaining = namespace_deletion::Remaining::default();
        for (gr, (ns, name)) in &left {
            *remaining
                .resources
                .entry((gr.resource.clone(), gr.group.clone()))
                .or_default() += 1;
            if let Some(obj) = self.store.get(gr, ns, name) {
                for finalizer in finalizers(&obj.value) {
                    *remaining.finalizers.entry(finalizer).or_default() += 1;
                }
            }
        }
        self.record_deletion_conditions(namespace, &remaining);
        if !left.is_empty() {
            return false;
        }
        // Emptied: the controller takes `kubernetes` out of `spec.finalizers` (the `finalize`
        // subresource), and the namespace goes once no finalizer of either list is left
        // (kubernetes `pkg/controller/namespace/deletion/namespaced_resources_deleter.go`,
        // `Delete` and `finalizeNamespace`; `pkg/registry/core/namespace/storage`, `Delete`).
        let ns_gr = GroupResource::new("", "namespaces");
        let _ = self.store.write(&ns_gr, "", namespace, |current| {
            let Some(current) = current else {
                return Ok(WriteOp::Noop);
            };
            if finalizers(&current.value).is_empty() {
                return Ok(WriteOp::Remove);
            }
            let mut new = current.value.clone();
            let spec_finalizers = new
                .pointer_mut("/spec/finalizers")
                .and_then(Value::as_array_mut);
            match spec_finalizers {
                Some(list) if list.iter().any(|f| f == "kubernetes") => {
                    list.retain(|f| f != "kubernetes");
                    Ok(WriteOp::Put(new))
                }
                _ => Ok(WriteOp::Noop),
            }
        });
        true
    }
}

fn apply_error(rt: &ResourceType, name: &str, err: patch::ApplyError) -> ApiError {
    match &err {
        patch::ApplyError::Conflict(conflicts) => {
            let mut e = ApiError::conflict(&rt.group, &rt.plural, name, "");
            e.message = err.to_string();
            e.causes = conflicts
                .iter()
                .map(|c| Cause {
                    reason: "FieldManagerConflict".into(),
                    message: c.message(),
                    field: c.field.clone(),
                })
                .collect();
            e
        }
        _ => ApiError::bad_request(err.to_string()),
    }
}

pub(crate) fn patch_error(rt: &ResourceType, name: &str, err: patch::PatchError) -> ApiError {
    match err.status_code() {
        415 => ApiError::unsupported_media_type("application/strategic-merge-patch+json"),
        422 => ApiError::invalid(
            &rt.group,
            &rt.kind,
            name,
            vec![Cause {
                reason: "FieldValueInvalid".into(),
                message: err.to_string(),
                field: String::new(),
            }],
        ),
        500 => ApiError::internal(err.to_string()),
        _ => ApiError::bad_request(err.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spec_equality_ignores_metadata_and_status() {
        let base = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
            "spec": {"n": 1}, "status": {"phase": "Pending"}});
        let table = [
            (
                "same",
                json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "a"},
                "spec": {"n": 1}, "status": {"phase": "Pending"}}),
                true,
            ),
            (
                "other metadata, status and kind",
                json!({"apiVersion": "v2", "kind": "X",
                "metadata": {"name": "b"}, "spec": {"n": 1}, "status": {"phase": "Running"}}),
                true,
            ),
            (
                "spec changed",
                json!({"metadata": {"name": "a"}, "spec": {"n": 2}}),
                false,
            ),
            ("spec removed", json!({"metadata": {"name": "a"}}), false),
            (
                "field added beside spec",
                json!({"spec": {"n": 1}, "data": {"k": "v"}}),
                false,
            ),
            ("not an object", json!("spec"), false),
        ];
        for (case, other, want) in table {
            assert_eq!(same_spec(&base, &other), want, "{case}");
            assert_eq!(same_spec(&other, &base), want, "{case} (swapped)");
        }
        assert!(same_spec(&json!(1), &json!({"metadata": {}})));
    }

    #[test]
    fn equality_but_for_some_keys() {
        let base = json!({"kind": "Pod", "metadata": {"name": "a", "resourceVersion": "1",
            "managedFields": [{"manager": "x"}]}, "spec": {"n": 1}, "status": {"phase": "Pending"}});
        let with = |path: &str, value: Value| {
            let mut v = base.clone();
            if let Some(slot) = v.pointer_mut(path) {
                *slot = value;
            }
            v
        };
        let no_mf = {
            let mut v = base.clone();
            v["metadata"]
                .as_object_mut()
                .map(|m| m.remove("managedFields"));
            v
        };
        let skip_rv = ["resourceVersion", "managedFields"];
        // (case, other object, top-level keys skipped, metadata keys skipped, equal)
        #[allow(clippy::type_complexity)]
        let cases: Vec<(&str, Value, &[&str], &[&str], bool)> = vec![
            ("same", base.clone(), &[], &[], true),
            (
                "other version",
                with("/metadata/resourceVersion", json!("2")),
                &[],
                &skip_rv,
                true,
            ),
            (
                "other version, not skipped",
                with("/metadata/resourceVersion", json!("2")),
                &[],
                &[],
                false,
            ),
            ("managedFields gone", no_mf.clone(), &[], &skip_rv, true),
            ("managedFields gone, not skipped", no_mf, &[], &[], false),
            (
                "other spec",
                with("/spec/n", json!(2)),
                &["status"],
                &skip_rv,
                false,
            ),
            (
                "other status",
                with("/status/phase", json!("Running")),
                &["status"],
                &[],
                true,
            ),
            (
                "other status, not skipped",
                with("/status/phase", json!("Running")),
                &[],
                &skip_rv,
                false,
            ),
            (
                "metadata not an object",
                with("/metadata", json!(1)),
                &[],
                &skip_rv,
                false,
            ),
        ];
        for (case, other, top, meta, want) in cases {
            assert_eq!(equal_except(&base, &other, top, meta), want, "{case}");
            assert_eq!(
                equal_except(&other, &base, top, meta),
                want,
                "{case} (swapped)"
            );
        }
    }
}
