//! `:promote`: takes a workload that runs in one member cluster (made there before Karmada
//! managed it) into the instance. The workload and the ConfigMaps and Secrets its pods refer to
//! are read from the member through Karmada's cluster proxy, stripped of what the member's
//! API server wrote (status, uid, resourceVersion, managedFields, ownerReferences, ...), and
//! created in the instance with a PropagationPolicy that keeps them on that member and takes
//! over the member's copies (`conflictResolution: Overwrite`). All or nothing: when a create
//! fails, what the call created is deleted again. A dry run creates nothing and answers what
//! would be created (failing as the real call would when an object already exists).

use std::collections::BTreeMap;

use kube::api::{DeleteParams, PostParams};
use kube::core::ApiResource;
use serde_json::{Map, Value, json};

use crate::access::{Caller, InstanceResource, Verb};
use crate::api::body::check_name;
use crate::api::error::{ApiError, Code};
use crate::api::kairship::{KairshipService, gvr};
use crate::api::{
    CLUSTER_ANNOTATION, PromoteWorkloadRequest, PromoteWorkloadResponse, WorkloadKind,
};
use crate::api::{CORE_GROUP, Object};
use crate::router::ResourceTarget;

/// Label of the PropagationPolicy a promotion creates: the member it came from.
pub const PROMOTED_FROM_LABEL: &str = "kairship.io/promoted-from";

/// Annotations the member's controllers or clients wrote, not part of what the user declared.
const MEMBER_ANNOTATIONS: &[&str] = &[
    "deployment.kubernetes.io/revision",
    "kubectl.kubernetes.io/last-applied-configuration",
    CLUSTER_ANNOTATION,
];

/// Template labels a Job controller adds (they carry the member Job's uid).
const JOB_CONTROLLER_LABELS: &[&str] = &["controller-uid", "batch.kubernetes.io/controller-uid"];

/// The object as the instance should get it: `apiVersion`, `kind`, the user's metadata (name,
/// namespace, labels, annotations) and the rest of the body without `status`. A Job loses the
/// selector and template labels its controller generated from the member Job's uid.
pub fn strip(object: &Value, kind: Option<WorkloadKind>) -> Value {
    let mut out = Map::new();
    if let Value::Object(fields) = object {
        for (key, value) in fields {
            if key != "status" && key != "metadata" {
                out.insert(key.clone(), value.clone());
            }
        }
    }
    let meta = &object["metadata"];
    let mut metadata = Map::new();
    for key in ["name", "namespace", "labels"] {
        if let Some(value) = meta.get(key).filter(|v| !v.is_null()) {
            metadata.insert(key.to_owned(), value.clone());
        }
    }
    if let Some(Value::Object(annotations)) = meta.get("annotations") {
        let kept: Map<String, Value> = annotations
            .iter()
            .filter(|(k, _)| !MEMBER_ANNOTATIONS.contains(&k.as_str()))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if !kept.is_empty() {
            metadata.insert("annotations".to_owned(), Value::Object(kept));
        }
    }
    out.insert("metadata".to_owned(), Value::Object(metadata));
    let mut out = Value::Object(out);
    if kind == Some(WorkloadKind::Jobs) {
        if let Some(spec) = out["spec"].as_object_mut() {
            spec.remove("selector");
            spec.remove("manualSelector");
        }
        if let Some(labels) = out
            .pointer_mut("/spec/template/metadata/labels")
            .and_then(Value::as_object_mut)
        {
            for label in JOB_CONTROLLER_LABELS {
                labels.remove(*label);
            }
        }
    }
    out
}

/// ConfigMaps and Secrets a workload's pods refer to, by name, each with whether every
/// reference to it is optional.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct References {
    /// ConfigMaps.
    pub config_maps: BTreeMap<String, bool>,
    /// Secrets.
    pub secrets: BTreeMap<String, bool>,
}

impl References {
    fn add(map: &mut BTreeMap<String, bool>, name: Option<&str>, optional: &Value) {
        let Some(name) = name.filter(|n| !n.is_empty()) else {
            return;
        };
        let optional = optional.as_bool().unwrap_or(false);
        let entry = map.entry(name.to_owned()).or_insert(optional);
        *entry = *entry && optional;
    }
}

/// What the pod template of `workload` refers to: volumes (`configMap`, `secret`, `projected`
/// sources), `envFrom`, `env[].valueFrom` of every container and init container, and image
/// pull Secrets.
pub fn references(workload: &Value, kind: WorkloadKind) -> References {
    let pod = match kind {
        WorkloadKind::Cronjobs => workload.pointer("/spec/jobTemplate/spec/template/spec"),
        _ => workload.pointer("/spec/template/spec"),
    };
    let mut refs = References::default();
    let Some(pod) = pod else {
        return refs;
    };
    let items = |v: &Value| v.as_array().cloned().unwrap_or_default();
    for volume in items(&pod["volumes"]) {
        let cm = &volume["configMap"];
        References::add(&mut refs.config_maps, cm["name"].as_str(), &cm["optional"]);
        let secret = &volume["secret"];
        References::add(
            &mut refs.secrets,
            secret["secretName"].as_str(),
            &secret["optional"],
        );
        for source in items(&volume["projected"]["sources"]) {
            let cm = &source["configMap"];
            References::add(&mut refs.config_maps, cm["name"].as_str(), &cm["optional"]);
            let secret = &source["secret"];
            References::add(
                &mut refs.secrets,
                secret["name"].as_str(),
                &secret["optional"],
            );
        }
    }
    let containers = items(&pod["containers"])
        .into_iter()
        .chain(items(&pod["initContainers"]));
    for container in containers {
        for from in items(&container["envFrom"]) {
            let cm = &from["configMapRef"];
            References::add(&mut refs.config_maps, cm["name"].as_str(), &cm["optional"]);
            let secret = &from["secretRef"];
            References::add(
                &mut refs.secrets,
                secret["name"].as_str(),
                &secret["optional"],
            );
        }
        for env in items(&container["env"]) {
            let cm = &env["valueFrom"]["configMapKeyRef"];
            References::add(&mut refs.config_maps, cm["name"].as_str(), &cm["optional"]);
            let secret = &env["valueFrom"]["secretKeyRef"];
            References::add(
                &mut refs.secrets,
                secret["name"].as_str(),
                &secret["optional"],
            );
        }
    }
    for pull in items(&pod["imagePullSecrets"]) {
        References::add(
            &mut refs.secrets,
            pull["name"].as_str(),
            &Value::Bool(false),
        );
    }
    refs
}

/// The name of the PropagationPolicy promoting workload `name` of `kind`.
pub fn policy_name(kind: WorkloadKind, name: &str) -> String {
    format!("{name}-{}-promoted", kind.kind().to_lowercase())
}

/// The PropagationPolicy keeping the promoted objects on `cluster`, taking over the member's
/// own copies.
pub fn policy(
    kind: WorkloadKind,
    name: &str,
    namespace: &str,
    cluster: &str,
    refs: &References,
) -> Value {
    let mut selectors =
        vec![json!({"apiVersion": kind.api_version(), "kind": kind.kind(), "name": name})];
    for cm in refs.config_maps.keys() {
        selectors.push(json!({"apiVersion": "v1", "kind": "ConfigMap", "name": cm}));
    }
    for secret in refs.secrets.keys() {
        selectors.push(json!({"apiVersion": "v1", "kind": "Secret", "name": secret}));
    }
    json!({
        "apiVersion": "policy.karmada.io/v1alpha1",
        "kind": "PropagationPolicy",
        "metadata": {
            "name": policy_name(kind, name),
            "namespace": namespace,
            "labels": {PROMOTED_FROM_LABEL: cluster}
        },
        "spec": {
            "conflictResolution": "Overwrite",
            "resourceSelectors": selectors,
            "placement": {"clusterAffinity": {"clusterNames": [cluster]}}
        }
    })
}

/// A Secret as a promotion reports it: without its data.
pub fn redact(object: &Value) -> Value {
    let mut out = object.clone();
    if out["kind"] == "Secret"
        && let Some(fields) = out.as_object_mut()
    {
        fields.remove("data");
        fields.remove("stringData");
    }
    out
}

fn resource(group: &str, version: &str, kind: &str, plural: &str) -> ApiResource {
    ApiResource {
        group: group.to_owned(),
        version: version.to_owned(),
        api_version: if group.is_empty() {
            version.to_owned()
        } else {
            format!("{group}/{version}")
        },
        kind: kind.to_owned(),
        plural: plural.to_owned(),
    }
}

/// One object a promotion creates.
struct Planned {
    resource: ApiResource,
    namespaced: bool,
    body: Value,
}

impl Planned {
    fn name(&self) -> String {
        self.body["metadata"]["name"]
            .as_str()
            .unwrap_or_default()
            .to_owned()
    }

    fn describe(&self) -> String {
        format!("{} {}", self.resource.kind, self.name())
    }
}

impl KairshipService {
    /// [`KairshipApi::promote_workload`](crate::api::KairshipApi::promote_workload).
    pub(in crate::api) async fn promote(
        &self,
        caller: &Caller,
        req: PromoteWorkloadRequest,
    ) -> Result<PromoteWorkloadResponse, ApiError> {
        check_name("instance", &req.instance)?;
        check_name("cluster", &req.cluster)?;
        check_name("namespace", &req.namespace)?;
        check_name("name", &req.name)?;
        self.authorize(
            caller,
            Verb::Create,
            InstanceResource::Proxy,
            Some(&req.instance),
            &format!(
                "promote {} {} of member cluster {}",
                req.kind.kind(),
                req.name,
                req.cluster
            ),
        )
        .await?;
        let ns = req.namespace.as_str();
        let workload = self
            .member_get(
                caller,
                &req.instance,
                &req.cluster,
                gvr(req.kind.group(), "v1", req.kind.plural()),
                Some(ns),
                &req.name,
            )
            .await?;
        let refs = references(&workload, req.kind);
        let mut plan = Vec::new();
        let namespaces = resource("", "v1", "Namespace", "namespaces");
        let namespace_target = ResourceTarget::all(&req.instance, namespaces.clone());
        match self.router.get(&namespace_target, ns).await {
            Ok(_) => {}
            Err(err) if err.is_not_found() => plan.push(Planned {
                resource: namespaces,
                namespaced: false,
                body: json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}),
            }),
            Err(err) => return Err(err.into()),
        }
        for (kind, plural, names) in [
            ("ConfigMap", "configmaps", &refs.config_maps),
            ("Secret", "secrets", &refs.secrets),
        ] {
            for (name, optional) in names {
                let read = self
                    .member_get(
                        caller,
                        &req.instance,
                        &req.cluster,
                        gvr(CORE_GROUP, "v1", plural),
                        Some(ns),
                        name,
                    )
                    .await;
                let object = match read {
                    Ok(object) => object,
                    Err(err) if err.code == Code::NotFound && *optional => continue,
                    Err(err) if err.code == Code::NotFound => {
                        return Err(ApiError::failed_precondition(format!(
                            "{} {} refers to {kind} {name}, which member cluster {} does not hold in namespace {ns}",
                            req.kind.kind(),
                            req.name,
                            req.cluster
                        )));
                    }
                    Err(err) => return Err(err),
                };
                plan.push(Planned {
                    resource: resource("", "v1", kind, plural),
                    namespaced: true,
                    body: strip(&object, None),
                });
            }
        }
        plan.push(Planned {
            resource: resource(req.kind.group(), "v1", req.kind.kind(), req.kind.plural()),
            namespaced: true,
            body: strip(&workload, Some(req.kind)),
        });
        plan.push(Planned {
            resource: resource(
                "policy.karmada.io",
                "v1alpha1",
                "PropagationPolicy",
                "propagationpolicies",
            ),
            namespaced: true,
            body: policy(req.kind, &req.name, ns, &req.cluster, &refs),
        });
        let target = |p: &Planned| {
            let t = if p.namespaced {
                ResourceTarget::namespaced(&req.instance, p.resource.clone(), ns)
            } else {
                ResourceTarget::all(&req.instance, p.resource.clone())
            };
            t.acting_as(caller.clone())
        };
        if req.dry_run {
            for planned in &plan {
                match self.router.get(&target(planned), &planned.name()).await {
                    Ok(_) => {
                        return Err(ApiError::new(
                            Code::AlreadyExists,
                            format!(
                                "{} already exists in instance {}",
                                planned.describe(),
                                req.instance
                            ),
                        ));
                    }
                    Err(err) if err.is_not_found() => {}
                    Err(err) => return Err(err.into()),
                }
            }
            return Ok(PromoteWorkloadResponse {
                dry_run: true,
                objects: plan.iter().map(|p| redact(&p.body)).collect(),
            });
        }
        let mut created: Vec<(&Planned, Object)> = Vec::new();
        for planned in &plan {
            match self
                .router
                .create(&target(planned), &planned.body, &PostParams::default())
                .await
            {
                Ok(outcome) => created.push((planned, outcome.object)),
                Err(err) => {
                    let err = ApiError::from(err);
                    for (done, _) in created.iter().rev() {
                        if let Err(undo) = self
                            .router
                            .delete(&target(done), &done.name(), &DeleteParams::default())
                            .await
                        {
                            tracing::warn!(instance = %req.instance, object = %done.describe(), error = %undo,
                                "could not remove an object of a failed promotion");
                        }
                    }
                    return Err(ApiError::new(
                        err.code,
                        format!(
                            "promoting {} {}: creating {} failed, nothing was kept: {}",
                            req.kind.kind(),
                            req.name,
                            planned.describe(),
                            err.message
                        ),
                    ));
                }
            }
        }
        Ok(PromoteWorkloadResponse {
            dry_run: false,
            objects: created.iter().map(|(_, o)| redact(o)).collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_the_member_wrote_is_stripped() {
        let member = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {
                "name": "pi", "namespace": "demo", "uid": "u1", "resourceVersion": "7",
                "generation": 2, "creationTimestamp": "2024-01-01T00:00:00Z",
                "managedFields": [{"manager": "kubectl"}],
                "ownerReferences": [{"kind": "CronJob", "name": "c"}],
                "labels": {"app": "pi"},
                "annotations": {"deployment.kubernetes.io/revision": "3", "team": "a"}
            },
            "spec": {
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u1"}},
                "template": {"metadata": {"labels": {"batch.kubernetes.io/controller-uid": "u1", "controller-uid": "u1", "app": "pi"}},
                             "spec": {"containers": [{"name": "c", "image": "perl"}]}}
            },
            "status": {"succeeded": 1}
        });
        let stripped = strip(&member, Some(WorkloadKind::Jobs));
        assert_eq!(
            stripped,
            json!({
                "apiVersion": "batch/v1", "kind": "Job",
                "metadata": {"name": "pi", "namespace": "demo", "labels": {"app": "pi"}, "annotations": {"team": "a"}},
                "spec": {"template": {"metadata": {"labels": {"app": "pi"}},
                         "spec": {"containers": [{"name": "c", "image": "perl"}]}}}
            })
        );
        // Other kinds keep their selector.
        let deployment = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "w", "uid": "x"}, "spec": {"selector": {"matchLabels": {"a": "b"}}}});
        assert_eq!(
            strip(&deployment, Some(WorkloadKind::Deployments))["spec"]["selector"],
            json!({"matchLabels": {"a": "b"}})
        );
    }

    #[test]
    fn every_kind_of_reference_is_found() {
        let workload = json!({"spec": {"template": {"spec": {
            "volumes": [
                {"name": "a", "configMap": {"name": "cm-vol"}},
                {"name": "b", "secret": {"secretName": "s-vol", "optional": true}},
                {"name": "c", "projected": {"sources": [{"configMap": {"name": "cm-proj"}}, {"secret": {"name": "s-proj"}}]}}
            ],
            "initContainers": [{"name": "i", "envFrom": [{"configMapRef": {"name": "cm-init"}}]}],
            "containers": [{"name": "m",
                "envFrom": [{"secretRef": {"name": "s-from"}}],
                "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm-vol", "key": "k", "optional": true}}},
                        {"name": "Y", "valueFrom": {"secretKeyRef": {"name": "s-key", "key": "k"}}}]}],
            "imagePullSecrets": [{"name": "pull"}]
        }}}});
        let refs = references(&workload, WorkloadKind::Deployments);
        assert_eq!(
            refs.config_maps,
            BTreeMap::from([
                ("cm-init".to_owned(), false),
                ("cm-proj".to_owned(), false),
                // One required reference makes it required.
                ("cm-vol".to_owned(), false),
            ])
        );
        assert_eq!(
            refs.secrets,
            BTreeMap::from([
                ("pull".to_owned(), false),
                ("s-from".to_owned(), false),
                ("s-key".to_owned(), false),
                ("s-proj".to_owned(), false),
                ("s-vol".to_owned(), true),
            ])
        );
        let cron = json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {
            "containers": [{"name": "c", "envFrom": [{"configMapRef": {"name": "cron-cm"}}]}]}}}}}});
        assert_eq!(
            references(&cron, WorkloadKind::Cronjobs)
                .config_maps
                .keys()
                .collect::<Vec<_>>(),
            ["cron-cm"]
        );
    }

    #[test]
    fn the_policy_keeps_everything_on_the_member_and_takes_it_over() {
        let refs = References {
            config_maps: BTreeMap::from([("cfg".to_owned(), false)]),
            secrets: BTreeMap::from([("key".to_owned(), false)]),
        };
        let p = policy(WorkloadKind::Deployments, "web", "demo", "east", &refs);
        assert_eq!(p["metadata"]["name"], "web-deployment-promoted");
        assert_eq!(p["spec"]["conflictResolution"], "Overwrite");
        assert_eq!(
            p["spec"]["placement"]["clusterAffinity"]["clusterNames"],
            json!(["east"])
        );
        assert_eq!(
            p["spec"]["resourceSelectors"],
            json!([
                {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                {"apiVersion": "v1", "kind": "ConfigMap", "name": "cfg"},
                {"apiVersion": "v1", "kind": "Secret", "name": "key"}
            ])
        );
        let secret = json!({"kind": "Secret", "metadata": {"name": "key"}, "data": {"k": "dg=="}});
        assert_eq!(
            redact(&secret),
            json!({"kind": "Secret", "metadata": {"name": "key"}})
        );
    }
}
