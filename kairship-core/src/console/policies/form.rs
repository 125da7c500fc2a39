//! Either policy form, by kind: read from a post or a stored policy, written as the policy,
//! merged into the stored policy on edit, and the placement preview's request.

use serde_json::{Value, json};

use super::fields::{PolicyKind, Posted};
use super::overrides::OverrideForm;
use super::propagation::PropagationForm;
use crate::api::placement::WorkloadReference;
use crate::api::{ApiError, PlacementPreviewSpec};
use crate::console::merge::edited_object;

/// The form of a propagation or an override policy.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PolicyForm {
    /// (Cluster)PropagationPolicy (boxed: it has many more fields).
    Propagation(Box<PropagationForm>),
    /// (Cluster)OverridePolicy.
    Override(OverrideForm),
}

impl PolicyForm {
    /// A new policy of `kind`.
    pub fn blank(kind: PolicyKind, namespace: &str) -> PolicyForm {
        if kind.propagates() {
            PolicyForm::Propagation(Box::new(PropagationForm::blank(kind, namespace)))
        } else {
            PolicyForm::Override(OverrideForm::blank(kind, namespace))
        }
    }

    /// The form as posted.
    pub fn posted(kind: PolicyKind, form: Posted<'_>) -> PolicyForm {
        if kind.propagates() {
            PolicyForm::Propagation(Box::new(PropagationForm::posted(kind, form)))
        } else {
            PolicyForm::Override(OverrideForm::posted(kind, form))
        }
    }

    /// The form showing a stored policy.
    pub fn of_policy(kind: PolicyKind, policy: &Value) -> PolicyForm {
        if kind.propagates() {
            PolicyForm::Propagation(Box::new(PropagationForm::of_policy(kind, policy)))
        } else {
            PolicyForm::Override(OverrideForm::of_policy(kind, policy))
        }
    }

    /// The policy's kind.
    pub fn kind(&self) -> PolicyKind {
        match self {
            PolicyForm::Propagation(f) => f.kind,
            PolicyForm::Override(f) => f.kind,
        }
    }

    /// Name and namespace as typed.
    pub fn name_and_namespace(&self) -> (&str, &str) {
        match self {
            PolicyForm::Propagation(f) => (&f.name, &f.namespace),
            PolicyForm::Override(f) => (&f.name, &f.namespace),
        }
    }

    /// The policy object, or every problem of the form.
    pub fn to_policy(&self) -> Result<Value, ApiError> {
        match self {
            PolicyForm::Propagation(f) => f.to_policy(),
            PolicyForm::Override(f) => f.to_policy(),
        }
    }

    /// The policy object, problems or not.
    pub fn shown(&self) -> Value {
        match self {
            PolicyForm::Propagation(f) => f.shown(),
            PolicyForm::Override(f) => f.shown(),
        }
    }

    /// One more blank row in every table.
    pub fn add_rows(&mut self) {
        match self {
            PolicyForm::Propagation(f) => f.add_rows(),
            PolicyForm::Override(f) => f.add_rows(),
        }
    }
}

/// The object an edit stores: `stored` with the change from the form as it showed `stored`
/// to the form as posted, carrying `resource_version` (the version the form was filled from)
/// so that a change made meanwhile is refused rather than overwritten.
pub fn edited_policy(
    stored: &Value,
    posted: &PolicyForm,
    resource_version: &str,
) -> Result<Value, ApiError> {
    let after = posted.to_policy()?;
    let before = PolicyForm::of_policy(posted.kind(), stored).shown();
    Ok(edited_object(stored, &before, &after, resource_version))
}

/// Where the stored policy's `spec` holds what the form does not show (JSON pointers, sorted):
/// an edit keeps these as stored.
pub fn not_shown(stored: &Value, form: &PolicyForm) -> Vec<String> {
    fn walk(stored: &Value, shown: Option<&Value>, at: String, out: &mut Vec<String>) {
        match (stored, shown) {
            (_, None) => out.push(at),
            (Value::Object(s), Some(Value::Object(f))) => {
                for (k, v) in s {
                    walk(v, f.get(k), format!("{at}/{k}"), out);
                }
            }
            (Value::Array(s), Some(Value::Array(f)))
                if s.iter().any(|v| v.is_object() || v.is_array()) =>
            {
                for (i, v) in s.iter().enumerate() {
                    walk(v, f.get(i), format!("{at}/{i}"), out);
                }
            }
            (s, Some(f)) if s != f => out.push(at),
            _ => {}
        }
    }
    let shown = form.shown();
    let mut out = Vec::new();
    if let Some(spec) = stored.get("spec") {
        walk(spec, shown.get("spec"), "/spec".into(), &mut out);
    }
    out.sort();
    out
}

/// `kind` as its resource plural, as Kubernetes names the built-in kinds (`Deployment` ->
/// `deployments`, `NetworkPolicy` -> `networkpolicies`, `Ingress` -> `ingresses`).
pub fn plural(kind: &str) -> String {
    let lower = kind.to_ascii_lowercase();
    if let Some(stem) = lower.strip_suffix('y')
        && !stem.ends_with(['a', 'e', 'o', 'u'])
    {
        return format!("{stem}ies");
    }
    if lower.ends_with('s') || lower.ends_with("ch") || lower.ends_with('x') {
        return format!("{lower}es");
    }
    format!("{lower}s")
}

/// What the placement preview of a propagation form asks: the form's policy, and the workload
/// to place: a Deployment of `preview_replicas` when given, else the first object a resource
/// selector names.
pub fn preview_request(form: &PropagationForm) -> Result<PlacementPreviewSpec, ApiError> {
    let policy = form.to_policy()?;
    let replicas = form.preview_replicas.trim();
    if !replicas.is_empty() {
        let replicas: i64 = replicas.parse().map_err(|_| {
            ApiError::invalid_field(
                "preview replicas",
                format!("{replicas:?} is not a whole number"),
            )
        })?;
        let workload = json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "preview", "namespace": form.namespace},
            "spec": {"replicas": replicas, "template": {"spec": {"containers": [
                {"name": "preview", "image": "preview"}]}}}
        });
        return Ok(PlacementPreviewSpec {
            policy: Some(policy),
            workload: Some(workload),
            ..PlacementPreviewSpec::default()
        });
    }
    let Some(named) = form
        .selectors
        .iter()
        .find(|s| !s.name.is_empty() && !s.kind.is_empty())
    else {
        return Err(ApiError::invalid_field(
            "preview replicas",
            "name an object in a resource selector, or give replicas to preview with",
        ));
    };
    let (group, version) = match named.api_version.split_once('/') {
        Some((g, v)) => (g.to_owned(), v.to_owned()),
        None => (crate::api::CORE_GROUP.to_owned(), named.api_version.clone()),
    };
    let namespace = Some(named.namespace.as_str())
        .filter(|ns| !ns.is_empty())
        .or(Some(form.namespace.as_str()).filter(|ns| !ns.is_empty()))
        .map(str::to_owned);
    Ok(PlacementPreviewSpec {
        policy: Some(policy),
        workload_ref: Some(WorkloadReference {
            group,
            version,
            resource: plural(&named.kind),
            namespace,
            name: named.name.clone(),
        }),
        ..PlacementPreviewSpec::default()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::console::policies::fields::SelectorRow;

    #[test]
    fn plurals_of_kinds() {
        for (kind, want) in [
            ("Deployment", "deployments"),
            ("NetworkPolicy", "networkpolicies"),
            ("Ingress", "ingresses"),
            ("ConfigMap", "configmaps"),
            ("Gateway", "gateways"),
        ] {
            assert_eq!(plural(kind), want);
        }
    }

    #[test]
    fn the_preview_asks_for_the_named_workload_or_replicas() {
        let mut form = PropagationForm::blank(PolicyKind::Propagation, "demo");
        form.name = "p".into();
        form.selectors[0] = SelectorRow {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            name: "web".into(),
            ..SelectorRow::default()
        };
        let spec = preview_request(&form).unwrap();
        assert_eq!(
            spec.workload_ref,
            Some(WorkloadReference {
                group: "apps".into(),
                version: "v1".into(),
                resource: "deployments".into(),
                namespace: Some("demo".into()),
                name: "web".into(),
            })
        );
        assert_eq!(spec.policy.unwrap()["kind"], "PropagationPolicy");
        form.preview_replicas = "6".into();
        let spec = preview_request(&form).unwrap();
        assert_eq!(spec.workload.unwrap()["spec"]["replicas"], 6);
        form.preview_replicas = String::new();
        form.selectors[0].name = String::new();
        form.selectors[0].labels = "app=web".into();
        let err = preview_request(&form).unwrap_err();
        assert!(err.message.contains("name an object"), "{}", err.message);
    }

    #[test]
    fn an_edit_keeps_what_the_form_does_not_show() {
        let stored = json!({"apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
            "metadata": {"name": "p", "namespace": "demo", "resourceVersion": "9",
                "annotations": {"note": "kept"}, "managedFields": [{"manager": "m"}]},
            "spec": {"activationPreference": "Lazy", "schedulerName": "default-scheduler",
                "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                "placement": {"clusterAffinity": {"clusterNames": ["a", "b"]},
                    "replicaScheduling": {"replicaSchedulingType": "Divided",
                        "replicaDivisionPreference": "Weighted",
                        "weightPreference": {"staticWeightList": [
                            {"targetCluster": {"clusterNames": ["a"]}, "weight": 2},
                            {"targetCluster": {"clusterNames": ["b"]}, "weight": 1}]}}}}});
        let PolicyForm::Propagation(mut form) =
            PolicyForm::of_policy(PolicyKind::Propagation, &stored)
        else {
            panic!("a propagation form")
        };
        form.weights[1].weight = "3".into();
        let edited = edited_policy(&stored, &PolicyForm::Propagation(form), "9").unwrap();
        let mut want = stored.clone();
        want["spec"]["placement"]["replicaScheduling"]["weightPreference"]["staticWeightList"][1]
            ["weight"] = json!(3);
        want["metadata"]
            .as_object_mut()
            .unwrap()
            .remove("managedFields");
        assert_eq!(edited, want);
    }
}
