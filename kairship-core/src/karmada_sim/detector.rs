//! Karmada's resource detector (karmada-io/karmada `pkg/detector/detector.go`,
//! `pkg/detector/policy.go`, `pkg/detector/preemption.go`) and what its webhook adds to
//! policies (`pkg/webhook/propagationpolicy/mutating.go`): each resource template is claimed
//! by the best matching PropagationPolicy (else ClusterPropagationPolicy) and gets its
//! ResourceBinding (ClusterResourceBinding for cluster-scoped templates), named
//! `<name>-<kind>` and owned by the template.

use std::sync::Arc;

use kube::api::{DeleteParams, Patch, PatchParams, PostParams};
use kube::core::DynamicObject;
use kube::{Api, Client};
use serde_json::{Value, json};

use super::events::{EventType, ObjectRef, component};
use super::informers::{Pending, version, versions};
use super::interpreter;
use super::karmada::Karmada;
use super::objects::*;
use crate::scheduling::label_selector_matches;

/// `util.ImplicitPriority`: how specifically a selector picked the template.
pub fn selector_priority(template: &Value, selector: &Value, policy_namespace: &str) -> u8 {
    let api_version = text(template, "/apiVersion");
    let kind = text(template, "/kind");
    if selector["apiVersion"] != api_version || selector["kind"] != kind {
        return 0;
    }
    let namespace = text(template, "/metadata/namespace");
    let wanted_ns = selector["namespace"]
        .as_str()
        .filter(|n| !n.is_empty())
        .unwrap_or(policy_namespace);
    if !wanted_ns.is_empty() && wanted_ns != namespace {
        return 0;
    }
    let name = text(template, "/metadata/name");
    if let Some(wanted) = selector["name"].as_str().filter(|n| !n.is_empty()) {
        // A name match ignores the label selector (`ResourceSelectorPriority`).
        return if wanted == name { 3 } else { 0 };
    }
    match selector.get("labelSelector").filter(|l| !l.is_null()) {
        None => 1,
        Some(ls) => {
            let Ok(ls) = serde_json::from_value(ls.clone()) else {
                return 0;
            };
            let labels = template["metadata"]["labels"]
                .as_object()
                .map(|m| {
                    m.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                        .collect()
                })
                .unwrap_or_default();
            if label_selector_matches(&ls, &labels) {
                2
            } else {
                0
            }
        }
    }
}

/// The best of `policies` for `template` (`getHighestPriorityPropagationPolicy`): highest
/// explicit priority, then implicit priority, then name.
pub fn best_policy<'a>(template: &Value, policies: &'a [Value]) -> Option<&'a Value> {
    let mut best: Option<(&Value, i64, u8)> = None;
    for p in policies {
        if p["metadata"]["deletionTimestamp"].is_string() {
            continue;
        }
        let ns = text(p, "/metadata/namespace");
        let implicit = p["spec"]["resourceSelectors"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|s| selector_priority(template, s, ns))
            .max()
            .unwrap_or(0);
        if implicit == 0 {
            continue;
        }
        let explicit = p["spec"]["priority"].as_i64().unwrap_or(0);
        let better = match best {
            None => true,
            Some((b, be, bi)) => {
                (explicit, implicit) > (be, bi)
                    || ((explicit, implicit) == (be, bi)
                        && text(p, "/metadata/name") < text(b, "/metadata/name"))
            }
        };
        if better {
            best = Some((p, explicit, implicit));
        }
    }
    best.map(|(p, _, _)| p)
}

/// Which policy keeps `template`: the one claiming it while it still matches, unless a
/// higher-priority policy with `preemption: Always` matches (`preemption.go`); else the best.
fn choose<'a>(
    template: &Value,
    claimed: Option<&'a Value>,
    policies: &'a [Value],
) -> Option<&'a Value> {
    let best = best_policy(template, policies)?;
    match claimed {
        Some(c) if best_policy(template, std::slice::from_ref(c)).is_some() => {
            let takes_over = best["spec"]["preemption"] == "Always"
                && best["spec"]["priority"].as_i64().unwrap_or(0)
                    > c["spec"]["priority"].as_i64().unwrap_or(0);
            Some(if takes_over { best } else { c })
        }
        _ => Some(best),
    }
}

/// Namespaces Karmada never propagates from (`util.IsReservedNamespace`).
pub fn reserved_namespace(ns: &str) -> bool {
    ns == "karmada-system"
        || ns == "karmada-cluster"
        || ns.starts_with("karmada-es-")
        || ns.starts_with("kube-")
}

/// The binding Karmada builds for `template` under `policy` (`BuildResourceBinding`).
pub fn binding_for(template: &Value, policy: &Value, cluster_scoped_policy: bool) -> Value {
    let kind = text(template, "/kind");
    let name = text(template, "/metadata/name");
    let namespace = text(template, "/metadata/namespace");
    let spec = &policy["spec"];
    let mut resource = json!({
        "apiVersion": text(template, "/apiVersion"), "kind": kind, "name": name,
        "uid": text(template, "/metadata/uid"),
        "resourceVersion": text(template, "/metadata/resourceVersion"),
    });
    if !namespace.is_empty() {
        resource["namespace"] = json!(namespace);
    }
    let mut binding_spec = json!({
        "resource": resource,
        "placement": spec["placement"],
        "conflictResolution": spec["conflictResolution"].as_str().unwrap_or("Abort"),
        "schedulerName": spec["schedulerName"].as_str().unwrap_or("default-scheduler"),
    });
    for f in [
        "propagateDeps",
        "failover",
        "suspension",
        "preserveResourcesOnDeletion",
    ] {
        if let Some(v) = spec.get(f).filter(|v| !v.is_null()) {
            binding_spec[f] = v.clone();
        }
    }
    if let Some((replicas, requirements)) = interpreter::replicas(template) {
        binding_spec["replicas"] = json!(replicas);
        binding_spec["replicaRequirements"] = requirements;
    }
    let (id_key, id) = if cluster_scoped_policy {
        (
            CPP_PERMANENT_ID,
            label(policy, CPP_PERMANENT_ID).unwrap_or_default(),
        )
    } else {
        (
            PP_PERMANENT_ID,
            label(policy, PP_PERMANENT_ID).unwrap_or_default(),
        )
    };
    let annotations = if cluster_scoped_policy {
        json!({CPP_NAME: text(policy, "/metadata/name")})
    } else {
        json!({PP_NAME: text(policy, "/metadata/name"), PP_NAMESPACE: text(policy, "/metadata/namespace")})
    };
    let mut metadata = json!({
        "name": binding_name(kind, name),
        "labels": {id_key: id},
        "annotations": annotations,
        "ownerReferences": [{
            "apiVersion": text(template, "/apiVersion"), "kind": kind, "name": name,
            "uid": text(template, "/metadata/uid"), "controller": true, "blockOwnerDeletion": true,
        }],
    });
    if !namespace.is_empty() {
        metadata["namespace"] = json!(namespace);
    }
    json!({"metadata": metadata, "spec": binding_spec})
}

fn policy_api(client: &Client, cluster_scoped: bool, namespace: &str) -> Api<DynamicObject> {
    if cluster_scoped {
        Api::all_with(client.clone(), &cluster_propagation_policies())
    } else {
        Api::namespaced_with(client.clone(), namespace, &propagation_policies())
    }
}

async fn merge(api: &Api<DynamicObject>, name: &str, patch: Value) -> Result<(), String> {
    match api
        .patch(name, &PatchParams::default(), &Patch::Merge(&patch))
        .await
    {
        Ok(_) => Ok(()),
        Err(kube::Error::Api(s)) if s.code == 404 => Ok(()),
        Err(e) => Err(format!("{name}: {e}")),
    }
}

/// The webhook's and policy controller's part: a permanent id and the finalizer on every
/// policy; a deleted policy's claims released, then its finalizer dropped.
async fn tend_policies(
    k: &Karmada,
    cluster_scoped: bool,
    policies: &[Value],
    templates: &[Value],
) -> Result<(), String> {
    let (id_key, finalizer) = if cluster_scoped {
        (CPP_PERMANENT_ID, CPP_FINALIZER)
    } else {
        (PP_PERMANENT_ID, PP_FINALIZER)
    };
    for p in policies {
        let name = text(p, "/metadata/name");
        let api = policy_api(&k.client, cluster_scoped, text(p, "/metadata/namespace"));
        if p["metadata"]["deletionTimestamp"].is_string() {
            let id = label(p, id_key).unwrap_or_default();
            for t in templates
                .iter()
                .filter(|t| !id.is_empty() && label(t, id_key) == Some(id))
            {
                release(k, t).await?;
            }
            if let Some(kept) = super::execution_space::without_finalizer(p, finalizer) {
                merge(&api, name, json!({"metadata": {"finalizers": kept}})).await?;
            }
            continue;
        }
        let mut patch = json!({});
        if label(p, id_key).is_none() {
            // Fresh read: an id is never replaced.
            let fresh = api
                .get_opt(name)
                .await
                .map_err(|e| e.to_string())?
                .map(|o| json_of(&o));
            if fresh.as_ref().is_some_and(|f| label(f, id_key).is_none()) {
                patch["metadata"]["labels"] = json!({id_key: permanent_id()});
            }
        }
        if let Some(all) = super::execution_space::with_finalizer(p, finalizer) {
            patch["metadata"]["finalizers"] = json!(all);
        }
        if patch != json!({}) {
            merge(&api, name, patch).await?;
        }
    }
    Ok(())
}

fn template_api(client: &Client, template: &Value) -> Option<Api<DynamicObject>> {
    let kind = template_kind(text(template, "/apiVersion"), text(template, "/kind"))?;
    let ns = text(template, "/metadata/namespace");
    Some(if kind.namespaced {
        Api::namespaced_with(client.clone(), ns, &kind.resource())
    } else {
        Api::all_with(client.clone(), &kind.resource())
    })
}

/// Removes a policy's claim from a template (`CleanupResourceTemplateClaimMetadata`).
async fn release(k: &Karmada, template: &Value) -> Result<(), String> {
    let Some(api) = template_api(&k.client, template) else {
        return Ok(());
    };
    let patch = json!({"metadata": {
        "labels": {PP_PERMANENT_ID: null, CPP_PERMANENT_ID: null},
        "annotations": {PP_NAME: null, PP_NAMESPACE: null, CPP_NAME: null},
    }});
    merge(&api, text(template, "/metadata/name"), patch).await
}

/// One pass over the templates `pending` names (every template after a resync or a change
/// of a policy).
pub async fn pass(k: &Karmada, pending: &Pending) -> Result<bool, String> {
    let pps = k.pps.values();
    let cpps = k.cpps.values();
    let deleting = pps
        .iter()
        .chain(&cpps)
        .any(|p| p["metadata"]["deletionTimestamp"].is_string());
    // Every template only when a policy releases its claims.
    let claimed: Vec<Value> = if deleting {
        k.templates.iter().flat_map(|(_, i)| i.values()).collect()
    } else {
        Vec::new()
    };
    tend_policies(k, false, &pps, &claimed).await?;
    tend_policies(k, true, &cpps, &claimed).await?;
    let policies = format!("{}|{}", versions(&k.pps), versions(&k.cpps));
    let mut again = false;
    for (kind, informer) in &k.templates {
        for object in informer.pending(pending) {
            let ns = object.metadata.namespace.as_deref().unwrap_or_default();
            let name = object.metadata.name.as_deref().unwrap_or_default();
            if reserved_namespace(ns) || object.metadata.deletion_timestamp.is_some() {
                continue;
            }
            let binding = binding_name(kind.kind, name);
            let existing = if ns.is_empty() {
                k.crbs.get("", &binding)
            } else {
                k.rbs.get(ns, &binding)
            };
            let key = format!("{}/{ns}/{name}", kind.kind);
            let fingerprint = format!(
                "{}|{policies}|{:?}",
                version(&object),
                existing.map(|b| version(&b))
            );
            if k.memo.unchanged("detector", &key, &fingerprint) {
                continue;
            }
            let template = informer.value(&object);
            match detect(k, &template, &pps, &cpps).await {
                Ok(()) => k.memo.record("detector", &key, fingerprint),
                Err(why) => {
                    tracing::debug!(template = %name, reason = %why, "detector");
                    again = true;
                }
            }
        }
    }
    Ok(again)
}

async fn detect(
    k: &Karmada,
    template: &Value,
    pps: &[Value],
    cpps: &[Value],
) -> Result<(), String> {
    let ns = text(template, "/metadata/namespace");
    let in_ns: Vec<Value> = pps
        .iter()
        .filter(|p| text(p, "/metadata/namespace") == ns)
        .cloned()
        .collect();
    let claimed_pp = annotation(template, PP_NAME)
        .and_then(|n| in_ns.iter().find(|p| text(p, "/metadata/name") == n));
    let claimed_cpp = annotation(template, CPP_NAME)
        .and_then(|n| cpps.iter().find(|p| text(p, "/metadata/name") == n));
    // Namespaced templates take a PropagationPolicy over a ClusterPropagationPolicy.
    let (policy, cluster_scoped) = match (ns.is_empty(), choose(template, claimed_pp, &in_ns)) {
        (false, Some(p)) => (p, false),
        _ => match choose(template, claimed_cpp, cpps) {
            Some(p) => (p, true),
            None => {
                if annotation(template, PP_NAME).is_some()
                    || annotation(template, CPP_NAME).is_some()
                {
                    release(k, template).await?;
                }
                return Ok(());
            }
        },
    };
    let id_key = if cluster_scoped {
        CPP_PERMANENT_ID
    } else {
        PP_PERMANENT_ID
    };
    let Some(id) = label(policy, id_key) else {
        // The policy gets its id first.
        return Err("policy without permanent id yet".into());
    };
    // Claim (`ClaimPolicyForObject`).
    let claim = if cluster_scoped {
        json!({"metadata": {"labels": {CPP_PERMANENT_ID: id, PP_PERMANENT_ID: null},
            "annotations": {CPP_NAME: text(policy, "/metadata/name"), PP_NAME: null, PP_NAMESPACE: null}}})
    } else {
        json!({"metadata": {"labels": {PP_PERMANENT_ID: id, CPP_PERMANENT_ID: null},
            "annotations": {PP_NAME: text(policy, "/metadata/name"), PP_NAMESPACE: text(policy, "/metadata/namespace"), CPP_NAME: null}}})
    };
    let mut claimed = template.clone();
    merge_patch(&mut claimed, &claim);
    if &claimed != template
        && let Some(api) = template_api(&k.client, template)
    {
        merge(&api, text(template, "/metadata/name"), claim).await?;
    }
    let about = ObjectRef::of(template);
    if interpreter::replicas(template).is_some() {
        // `BuildResourceBinding` interprets the replicas each time it runs.
        k.events.record_about(
            component::RESOURCE_DETECTOR,
            about.clone(),
            EventType::Normal,
            "GetReplicasSucceed",
            "Get replicas of resource template successfully.",
        );
    }
    let policy_name = if cluster_scoped {
        format!("cluster policy({})", text(policy, "/metadata/name"))
    } else {
        format!(
            "policy({}/{})",
            text(policy, "/metadata/namespace"),
            text(policy, "/metadata/name")
        )
    };
    let applied = ensure_binding(k, template, policy, cluster_scoped || ns.is_empty()).await;
    // `ApplyPolicy` / `ApplyClusterPolicy`: an event when the binding was written or failed.
    match &applied {
        Ok(true) => k.events.record_about(
            component::RESOURCE_DETECTOR,
            about,
            EventType::Normal,
            "ApplyPolicySucceed",
            format!("Apply {policy_name} succeed"),
        ),
        Ok(false) => {}
        Err(e) => k.events.record_about(
            component::RESOURCE_DETECTOR,
            about,
            EventType::Warning,
            "ApplyPolicyFailed",
            format!("Apply {policy_name} failed: {e}"),
        ),
    }
    applied.map(|_| ())
}

/// Creates or updates the template's binding; `Ok(true)` when it wrote one.
async fn ensure_binding(
    k: &Karmada,
    template: &Value,
    policy: &Value,
    cluster_binding: bool,
) -> Result<bool, String> {
    let cpp =
        policy["kind"] == "ClusterPropagationPolicy" || policy["metadata"]["namespace"].is_null();
    let desired = binding_for(template, policy, cpp);
    let name = text(&desired, "/metadata/name").to_owned();
    let ns = text(template, "/metadata/namespace");
    let (api, informer, id_key, finalizer): (Api<DynamicObject>, _, _, _) = if cluster_binding {
        (
            Api::all_with(k.client.clone(), &cluster_resource_bindings()),
            &k.crbs,
            CRB_PERMANENT_ID,
            CLUSTER_BINDING_FINALIZER,
        )
    } else {
        (
            Api::namespaced_with(k.client.clone(), ns, &resource_bindings()),
            &k.rbs,
            RB_PERMANENT_ID,
            BINDING_FINALIZER,
        )
    };
    match informer.get_value(if cluster_binding { "" } else { ns }, &name) {
        None => {
            let mut body = desired.clone();
            body["apiVersion"] = json!("work.karmada.io/v1alpha2");
            body["kind"] = json!(if cluster_binding {
                "ClusterResourceBinding"
            } else {
                "ResourceBinding"
            });
            body["metadata"]["finalizers"] = json!([if cluster_binding {
                CLUSTER_BINDING_FINALIZER
            } else {
                finalizer
            }]);
            // The binding webhook's permanent id.
            body["metadata"]["labels"][id_key] = json!(permanent_id());
            let object: DynamicObject = serde_json::from_value(body).map_err(|e| e.to_string())?;
            match api.create(&PostParams::default(), &object).await {
                Ok(_) => Ok(true),
                Err(kube::Error::Api(s)) if s.code == 409 => Ok(false),
                Err(e) => Err(format!("binding {name}: {e}")),
            }
        }
        Some(current) => {
            if current["metadata"]["deletionTimestamp"].is_string() {
                return Ok(false);
            }
            if current.pointer("/spec/resource/uid") != desired.pointer("/spec/resource/uid") {
                // A binding left from an earlier object of that name: replaced.
                let _ = api.delete(&name, &DeleteParams::background()).await;
                return Err("stale binding being replaced".into());
            }
            let mut patch = json!({});
            for f in [
                "resource",
                "placement",
                "conflictResolution",
                "schedulerName",
                "replicas",
                "replicaRequirements",
                "propagateDeps",
                "failover",
                "suspension",
                "preserveResourcesOnDeletion",
            ] {
                let want = desired["spec"].get(f).cloned().unwrap_or(Value::Null);
                let mut have = current["spec"].get(f).cloned().unwrap_or(Value::Null);
                let mut compared = want.clone();
                if f == "resource" {
                    // A template whose specification did not change leaves its binding alone
                    // (`eventfilter.SpecificationChanged`): the resourceVersion alone is no change.
                    for v in [&mut have, &mut compared] {
                        if let Some(o) = v.as_object_mut() {
                            o.remove("resourceVersion");
                        }
                    }
                }
                if have != compared {
                    patch["spec"][f] = want;
                }
            }
            for field in ["labels", "annotations"] {
                for (key, v) in desired["metadata"][field].as_object().into_iter().flatten() {
                    if current["metadata"][field].get(key) != Some(v) {
                        patch["metadata"][field][key] = v.clone();
                    }
                }
            }
            if patch == json!({}) {
                return Ok(false);
            }
            merge(&api, &name, patch).await.map(|()| true)
        }
    }
}

/// Informers the detector needs woken on.
pub fn informers(k: &Arc<Karmada>) -> Vec<&super::informers::Informer> {
    let mut all = vec![&k.pps, &k.cpps, &k.rbs, &k.crbs];
    all.extend(k.templates.iter().map(|(_, i)| i));
    all
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "shop", "namespace": "demo", "uid": "u1", "resourceVersion": "7",
                         "labels": {"app": "shop"}},
            "spec": {"replicas": 4, "template": {"spec": {"containers": [{"resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}})
    }

    fn policy(name: &str, priority: i64, selector: Value) -> Value {
        json!({"kind": "PropagationPolicy", "metadata": {"name": name, "namespace": "demo", "labels": {PP_PERMANENT_ID: format!("id-{name}")}},
               "spec": {"priority": priority, "resourceSelectors": [selector], "placement": {"clusterAffinity": {"clusterNames": ["m"]}}}})
    }

    #[test]
    fn policies_are_chosen_as_karmada_does() {
        let t = template();
        let by_name = policy(
            "z-by-name",
            0,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"}),
        );
        let by_label = policy(
            "a-by-label",
            0,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "labelSelector": {"matchLabels": {"app": "shop"}}}),
        );
        let all = policy(
            "b-all",
            0,
            json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        );
        let other = policy("c-other", 9, json!({"apiVersion": "v1", "kind": "Service"}));
        let high = policy(
            "d-high",
            5,
            json!({"apiVersion": "apps/v1", "kind": "Deployment"}),
        );
        // Implicit priority: name over labels over all (pkg/util/selector_test.go
        // TestResourceSelectorPriority).
        let list = vec![
            all.clone(),
            by_label.clone(),
            by_name.clone(),
            other.clone(),
        ];
        assert_eq!(best_policy(&t, &list), Some(&by_name));
        let list = vec![all.clone(), by_label.clone()];
        assert_eq!(best_policy(&t, &list), Some(&by_label));
        // Explicit priority first.
        let list = vec![by_name.clone(), high.clone()];
        assert_eq!(best_policy(&t, &list), Some(&high));
        // A claimed policy keeps the template unless the better one preempts.
        assert_eq!(choose(&t, Some(&by_name), &list), Some(&by_name));
        let mut preempting = high.clone();
        preempting["spec"]["preemption"] = json!("Always");
        let list = vec![by_name.clone(), preempting.clone()];
        assert_eq!(choose(&t, Some(&by_name), &list), Some(&preempting));
        assert_eq!(best_policy(&t, &[other]), None);
    }

    #[test]
    fn the_binding_is_named_labelled_and_owned_as_recorded() {
        // kairship-core/tests/data/karmada-v1.19/resourcebinding-shop-deployment.json.
        let p = policy(
            "shop",
            0,
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop"}),
        );
        let b = binding_for(&template(), &p, false);
        assert_eq!(b["metadata"]["name"], "shop-deployment");
        assert_eq!(b["metadata"]["labels"][PP_PERMANENT_ID], "id-shop");
        assert_eq!(
            b["metadata"]["annotations"],
            json!({PP_NAME: "shop", PP_NAMESPACE: "demo"})
        );
        assert_eq!(b["metadata"]["ownerReferences"][0]["controller"], true);
        assert_eq!(b["spec"]["replicas"], 4);
        assert_eq!(b["spec"]["conflictResolution"], "Abort");
        assert_eq!(b["spec"]["schedulerName"], "default-scheduler");
        assert_eq!(
            b["spec"]["replicaRequirements"]["resourceRequest"]["cpu"],
            "100m"
        );
        assert_eq!(
            b["spec"]["resource"],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "shop",
            "namespace": "demo", "uid": "u1", "resourceVersion": "7"})
        );
        assert!(
            reserved_namespace("karmada-es-m1")
                && reserved_namespace("kube-system")
                && !reserved_namespace("demo")
        );
    }
}
