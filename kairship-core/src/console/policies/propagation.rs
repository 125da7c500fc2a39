//! The PropagationPolicy / ClusterPropagationPolicy form: every field as typed (so a refused
//! form comes back as sent), read from a posted form or from a stored policy, and written as
//! the policy object with the problems of each field named.

use serde_json::{Map, Value, json};

use super::fields::{
    PolicyKind, Posted, Problems, SelectorRow, list_or_null, number_at, object_or_null,
    policy_head, put, text_at, text_or_null,
};
use super::selector::{comma_list, selector_text, string_list};

/// `spec.placement.clusterAffinity.fieldSelector` keys the form shows as lists (`In`).
pub const FIELD_KEYS: [&str; 3] = ["provider", "region", "zone"];

/// One toleration of cluster taints.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TolerationRow {
    /// Taint key.
    pub key: String,
    /// `Equal` or `Exists`.
    pub operator: String,
    /// Taint value (`Equal`).
    pub value: String,
    /// `NoSchedule`, `PreferNoSchedule` or `NoExecute`; blank for all.
    pub effect: String,
    /// How long a `NoExecute` taint is tolerated.
    pub seconds: String,
}

/// One spread constraint.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SpreadRow {
    /// `cluster`, `region`, `zone` or `provider`.
    pub field: String,
    /// Or a cluster label to spread by.
    pub label: String,
    /// Fewest groups.
    pub min: String,
    /// Most groups.
    pub max: String,
}

/// One static weight: clusters and their weight.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct WeightRow {
    /// Cluster names, comma separated.
    pub clusters: String,
    /// The weight (a whole number, at least 1).
    pub weight: String,
}

/// The propagation policy form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PropagationForm {
    /// PropagationPolicy or ClusterPropagationPolicy.
    pub kind: PolicyKind,
    /// Policy name.
    pub name: String,
    /// Namespace (namespaced kind).
    pub namespace: String,
    /// What it selects.
    pub selectors: Vec<SelectorRow>,
    /// Cluster names, comma separated.
    pub cluster_names: String,
    /// Clusters left out, comma separated.
    pub exclude: String,
    /// Cluster label selector text.
    pub cluster_labels: String,
    /// Providers, comma separated.
    pub providers: String,
    /// Regions, comma separated.
    pub regions: String,
    /// Zones, comma separated.
    pub zones: String,
    /// Tolerated cluster taints.
    pub tolerations: Vec<TolerationRow>,
    /// Spread constraints.
    pub spread: Vec<SpreadRow>,
    /// `Duplicated` or `Divided` (blank: not set).
    pub scheduling: String,
    /// `Weighted` or `Aggregated` (blank: not set).
    pub division: String,
    /// `static` (the weight rows) or `AvailableReplicas` (dynamic weights).
    pub weighting: String,
    /// Static weights.
    pub weights: Vec<WeightRow>,
    /// Priority (a whole number).
    pub priority: String,
    /// `Always` or `Never`.
    pub preemption: String,
    /// `Abort` or `Overwrite`.
    pub conflict_resolution: String,
    /// Application failover: seconds a workload may be unhealthy before it moves.
    pub failover_after: String,
    /// Application failover: `Directly`, `Gracefully` or `Never`.
    pub failover_purge: String,
    /// Application failover: grace period (with `Gracefully`).
    pub failover_grace: String,
    /// The placement preview's workload: replicas of a Deployment to preview with; blank: the
    /// first object a selector names.
    pub preview_replicas: String,
}

/// Blank rows each table shows beyond its filled ones.
const SPARE_ROWS: usize = 1;

fn pad<T: Default + PartialEq>(mut rows: Vec<T>, at_least: usize) -> Vec<T> {
    rows.retain(|r| r != &T::default());
    let want = (rows.len() + SPARE_ROWS).max(at_least);
    rows.resize_with(want, T::default);
    rows
}

impl PropagationForm {
    /// A new policy of `kind` in `namespace`, with Karmada's defaults shown.
    pub fn blank(kind: PolicyKind, namespace: &str) -> PropagationForm {
        PropagationForm {
            kind,
            name: String::new(),
            namespace: if kind.namespaced() {
                namespace.to_owned()
            } else {
                String::new()
            },
            selectors: vec![SelectorRow::default(); 2],
            cluster_names: String::new(),
            exclude: String::new(),
            cluster_labels: String::new(),
            providers: String::new(),
            regions: String::new(),
            zones: String::new(),
            tolerations: vec![TolerationRow::default()],
            spread: vec![SpreadRow::default()],
            scheduling: "Divided".into(),
            division: "Weighted".into(),
            weighting: "static".into(),
            weights: vec![WeightRow::default(); 2],
            priority: "0".into(),
            preemption: "Never".into(),
            conflict_resolution: "Abort".into(),
            failover_after: String::new(),
            failover_purge: String::new(),
            failover_grace: String::new(),
            preview_replicas: String::new(),
        }
    }

    /// The form as posted (every row kept, blank ones too).
    pub fn posted(kind: PolicyKind, form: Posted<'_>) -> PropagationForm {
        PropagationForm {
            kind,
            name: form.get("name"),
            namespace: form.get("namespace"),
            selectors: SelectorRow::posted(form),
            cluster_names: form.get("cluster_names"),
            exclude: form.get("exclude"),
            cluster_labels: form.get("cluster_labels"),
            providers: form.get("providers"),
            regions: form.get("regions"),
            zones: form.get("zones"),
            tolerations: (0..form.rows("tol", "key"))
                .map(|i| TolerationRow {
                    key: form.cell("tol", i, "key"),
                    operator: form.cell("tol", i, "operator"),
                    value: form.cell("tol", i, "value"),
                    effect: form.cell("tol", i, "effect"),
                    seconds: form.cell("tol", i, "seconds"),
                })
                .collect(),
            spread: (0..form.rows("spread", "field"))
                .map(|i| SpreadRow {
                    field: form.cell("spread", i, "field"),
                    label: form.cell("spread", i, "label"),
                    min: form.cell("spread", i, "min"),
                    max: form.cell("spread", i, "max"),
                })
                .collect(),
            scheduling: form.get("scheduling"),
            division: form.get("division"),
            weighting: form.get("weighting"),
            weights: (0..form.rows("weight", "clusters"))
                .map(|i| WeightRow {
                    clusters: form.cell("weight", i, "clusters"),
                    weight: form.cell("weight", i, "weight"),
                })
                .collect(),
            priority: form.get("priority"),
            preemption: form.get("preemption"),
            conflict_resolution: form.get("conflict_resolution"),
            failover_after: form.get("failover_after"),
            failover_purge: form.get("failover_purge"),
            failover_grace: form.get("failover_grace"),
            preview_replicas: form.get("preview_replicas"),
        }
    }

    /// The form showing a stored policy (fields the form does not know are left out; an edit
    /// keeps them, [`crate::console::merge`]).
    pub fn of_policy(kind: PolicyKind, policy: &Value) -> PropagationForm {
        let affinity = policy
            .pointer("/spec/placement/clusterAffinity")
            .cloned()
            .unwrap_or(Value::Null);
        let field_values = |key: &str| {
            affinity
                .pointer("/fieldSelector/matchExpressions")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter(|e| e["key"] == key && e["operator"] == "In")
                .flat_map(|e| string_list(e.get("values")))
                .collect::<Vec<_>>()
                .join(", ")
        };
        let scheduling = policy
            .pointer("/spec/placement/replicaScheduling")
            .cloned()
            .unwrap_or(Value::Null);
        let tolerations = policy
            .pointer("/spec/placement/clusterTolerations")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|t| TolerationRow {
                key: text_at(t, "/key"),
                operator: text_at(t, "/operator"),
                value: text_at(t, "/value"),
                effect: text_at(t, "/effect"),
                seconds: number_at(t, "/tolerationSeconds"),
            })
            .collect();
        let spread = policy
            .pointer("/spec/placement/spreadConstraints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|c| SpreadRow {
                field: text_at(c, "/spreadByField"),
                label: text_at(c, "/spreadByLabel"),
                min: number_at(c, "/minGroups"),
                max: number_at(c, "/maxGroups"),
            })
            .collect();
        let weights = scheduling
            .pointer("/weightPreference/staticWeightList")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|w| WeightRow {
                clusters: string_list(w.pointer("/targetCluster/clusterNames")).join(", "),
                weight: number_at(w, "/weight"),
            })
            .collect();
        let dynamic = text_at(&scheduling, "/weightPreference/dynamicWeight");
        let failover = policy
            .pointer("/spec/failover/application")
            .cloned()
            .unwrap_or(Value::Null);
        PropagationForm {
            kind,
            name: text_at(policy, "/metadata/name"),
            namespace: text_at(policy, "/metadata/namespace"),
            selectors: pad(SelectorRow::of_policy(policy), 1),
            cluster_names: string_list(affinity.get("clusterNames")).join(", "),
            exclude: string_list(affinity.get("exclude")).join(", "),
            cluster_labels: affinity
                .get("labelSelector")
                .map(selector_text)
                .unwrap_or_default(),
            providers: field_values("provider"),
            regions: field_values("region"),
            zones: field_values("zone"),
            tolerations: pad(tolerations, 1),
            spread: pad(spread, 1),
            scheduling: text_at(&scheduling, "/replicaSchedulingType"),
            division: text_at(&scheduling, "/replicaDivisionPreference"),
            weighting: if dynamic.is_empty() {
                "static".into()
            } else {
                dynamic
            },
            weights: pad(weights, 1),
            priority: number_at(policy, "/spec/priority"),
            preemption: text_at(policy, "/spec/preemption"),
            conflict_resolution: text_at(policy, "/spec/conflictResolution"),
            failover_after: number_at(&failover, "/decisionConditions/tolerationSeconds"),
            failover_purge: text_at(&failover, "/purgeMode"),
            failover_grace: number_at(&failover, "/gracePeriodSeconds"),
            preview_replicas: String::new(),
        }
    }

    /// Adds a blank row to every table (the form's "More rows").
    pub fn add_rows(&mut self) {
        self.selectors.push(SelectorRow::default());
        self.tolerations.push(TolerationRow::default());
        self.spread.push(SpreadRow::default());
        self.weights.push(WeightRow::default());
    }

    /// `spec.placement` of the form (also what the placement preview previews).
    fn placement(&self, problems: &mut Problems) -> Value {
        let mut affinity = Map::new();
        put(
            &mut affinity,
            "clusterNames",
            list_or_null(comma_list(&self.cluster_names)),
        );
        put(
            &mut affinity,
            "exclude",
            list_or_null(comma_list(&self.exclude)),
        );
        let labels = problems
            .selector("cluster labels", &self.cluster_labels)
            .unwrap_or(Value::Null);
        put(&mut affinity, "labelSelector", labels);
        let expressions: Vec<Value> = FIELD_KEYS
            .iter()
            .zip([&self.providers, &self.regions, &self.zones])
            .filter_map(|(key, text)| {
                let values = comma_list(text);
                (!values.is_empty())
                    .then(|| json!({"key": key, "operator": "In", "values": values}))
            })
            .collect();
        if !expressions.is_empty() {
            affinity.insert(
                "fieldSelector".into(),
                json!({ "matchExpressions": expressions }),
            );
        }
        let mut placement = Map::new();
        put(&mut placement, "clusterAffinity", object_or_null(affinity));

        let mut tolerations = Vec::new();
        for (i, t) in self.tolerations.iter().enumerate() {
            if t == &TolerationRow::default() {
                continue;
            }
            let field = format!("toleration {}", i + 1);
            problems.one_of(
                &format!("{field} operator"),
                &t.operator,
                &["Equal", "Exists"],
            );
            problems.one_of(
                &format!("{field} effect"),
                &t.effect,
                &["NoSchedule", "PreferNoSchedule", "NoExecute"],
            );
            if t.operator == "Exists" && !t.value.is_empty() {
                problems.add(&field, "a toleration with operator Exists takes no value");
            }
            if t.key.is_empty() && t.operator != "Exists" {
                problems.add(&field, "a toleration without a key needs operator Exists");
            }
            let mut row = Map::new();
            put(&mut row, "key", text_or_null(&t.key));
            put(&mut row, "operator", text_or_null(&t.operator));
            put(&mut row, "value", text_or_null(&t.value));
            put(&mut row, "effect", text_or_null(&t.effect));
            if let Some(s) = problems.number(&format!("{field} seconds"), &t.seconds) {
                row.insert("tolerationSeconds".into(), json!(s));
            }
            tolerations.push(Value::Object(row));
        }
        if !tolerations.is_empty() {
            placement.insert("clusterTolerations".into(), Value::Array(tolerations));
        }

        let mut spread = Vec::new();
        let mut by_field = false;
        let mut by_cluster = false;
        for (i, c) in self.spread.iter().enumerate() {
            if c == &SpreadRow::default() {
                continue;
            }
            let field = format!("spread constraint {}", i + 1);
            problems.one_of(
                &format!("{field} spread by"),
                &c.field,
                &["cluster", "region", "zone", "provider"],
            );
            match (c.field.is_empty(), c.label.is_empty()) {
                (true, true) => problems.add(&field, "spread by a field or by a label"),
                (false, false) => problems.add(&field, "spread by a field or by a label, not both"),
                _ => {}
            }
            by_field |= !c.field.is_empty();
            by_cluster |= c.field == "cluster";
            let mut row = Map::new();
            put(&mut row, "spreadByField", text_or_null(&c.field));
            put(&mut row, "spreadByLabel", text_or_null(&c.label));
            let max = problems.number(&format!("{field} max groups"), &c.max);
            let min = problems.number(&format!("{field} min groups"), &c.min);
            if let (Some(max), Some(min)) = (max, min)
                && max > 0
                && min > max
            {
                problems.add(
                    &field,
                    format!("min groups {min} is above max groups {max}"),
                );
            }
            if let Some(max) = max {
                row.insert("maxGroups".into(), json!(max));
            }
            if let Some(min) = min {
                row.insert("minGroups".into(), json!(min));
            }
            spread.push(Value::Object(row));
        }
        // Karmada's webhook: spreading by region, zone or provider needs a cluster constraint
        // too (pkg/util/validation ValidateSpreadConstraint).
        if by_field && !by_cluster {
            problems.add(
                "spread constraints",
                "spreading by region, zone or provider needs a constraint spreading by cluster too",
            );
        }
        if !spread.is_empty() {
            placement.insert("spreadConstraints".into(), Value::Array(spread));
        }

        let mut scheduling = Map::new();
        problems.one_of(
            "replica scheduling",
            &self.scheduling,
            &["Duplicated", "Divided"],
        );
        problems.one_of("division", &self.division, &["Weighted", "Aggregated"]);
        problems.one_of("weights", &self.weighting, &["static", "AvailableReplicas"]);
        put(
            &mut scheduling,
            "replicaSchedulingType",
            text_or_null(&self.scheduling),
        );
        put(
            &mut scheduling,
            "replicaDivisionPreference",
            text_or_null(&self.division),
        );
        let mut static_weights = Vec::new();
        for (i, w) in self.weights.iter().enumerate() {
            if w == &WeightRow::default() {
                continue;
            }
            let field = format!("weight {}", i + 1);
            let clusters = comma_list(&w.clusters);
            if clusters.is_empty() {
                problems.add(&field, "name the clusters the weight is for");
            }
            let weight = problems.number(&format!("{field} weight"), &w.weight);
            match weight {
                Some(n) if n < 1 => problems.add(&field, format!("weight {n} is below 1")),
                None if w.weight.is_empty() => problems.add(&field, "give the weight"),
                _ => {}
            }
            static_weights.push(json!({
                "targetCluster": {"clusterNames": clusters},
                "weight": weight.unwrap_or(0),
            }));
        }
        let mut preference = Map::new();
        if !static_weights.is_empty() {
            if self.scheduling == "Duplicated" {
                problems.add("weights", "weights divide replicas: choose Divided");
            }
            preference.insert("staticWeightList".into(), Value::Array(static_weights));
        }
        if self.weighting == "AvailableReplicas" {
            preference.insert("dynamicWeight".into(), json!("AvailableReplicas"));
        }
        put(
            &mut scheduling,
            "weightPreference",
            object_or_null(preference),
        );
        put(
            &mut placement,
            "replicaScheduling",
            object_or_null(scheduling),
        );
        Value::Object(placement)
    }

    /// The policy object the form describes, or every problem found, each naming its field.
    pub fn to_policy(&self) -> Result<Value, crate::api::ApiError> {
        let (policy, problems) = self.build();
        problems.into_result(policy)
    }

    /// The policy object the form describes, problems or not (what an edit merges from).
    pub fn shown(&self) -> Value {
        self.build().0
    }

    fn build(&self) -> (Value, Problems) {
        let mut problems = Problems::default();
        let mut object = policy_head(self.kind, &self.name, &self.namespace, &mut problems);
        let mut spec = Map::new();
        spec.insert(
            "resourceSelectors".into(),
            SelectorRow::to_spec(&self.selectors, &mut problems),
        );
        let placement = self.placement(&mut problems);
        if placement.as_object().is_some_and(|p| !p.is_empty()) {
            spec.insert("placement".into(), placement);
        }
        if let Some(p) = problems.number("priority", &self.priority) {
            spec.insert("priority".into(), json!(p));
        }
        problems.one_of("preemption", &self.preemption, &["Always", "Never"]);
        put(&mut spec, "preemption", text_or_null(&self.preemption));
        problems.one_of(
            "conflict resolution",
            &self.conflict_resolution,
            &["Abort", "Overwrite"],
        );
        put(
            &mut spec,
            "conflictResolution",
            text_or_null(&self.conflict_resolution),
        );
        let mut application = Map::new();
        if let Some(s) = problems.number("failover after", &self.failover_after) {
            application.insert(
                "decisionConditions".into(),
                json!({ "tolerationSeconds": s }),
            );
        }
        problems.one_of(
            "failover purge mode",
            &self.failover_purge,
            &["Directly", "Gracefully", "Never"],
        );
        put(
            &mut application,
            "purgeMode",
            text_or_null(&self.failover_purge),
        );
        if let Some(s) = problems.number("failover grace period", &self.failover_grace) {
            if self.failover_purge != "Gracefully" {
                problems.add("failover grace period", "only with purge mode Gracefully");
            }
            application.insert("gracePeriodSeconds".into(), json!(s));
        }
        if !application.is_empty() {
            spec.insert("failover".into(), json!({ "application": application }));
        }
        problems.number("preview replicas", &self.preview_replicas);
        object.insert("spec".into(), Value::Object(spec));
        (Value::Object(object), problems)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn posted(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn a_posted_form_becomes_the_policy() {
        let fields = posted(&[
            ("name", "weighted"),
            ("namespace", "demo"),
            ("sel_0_api", "apps/v1"),
            ("sel_0_kind", "Deployment"),
            ("sel_0_name", "web"),
            ("sel_0_ns", ""),
            ("sel_0_labels", ""),
            ("sel_1_api", ""),
            ("sel_1_kind", ""),
            ("cluster_names", "a-east, a-west"),
            ("regions", "eu"),
            ("tol_0_key", "dedicated"),
            ("tol_0_operator", "Equal"),
            ("tol_0_value", "gpu"),
            ("tol_0_effect", "NoSchedule"),
            ("spread_0_field", "cluster"),
            ("spread_0_max", "2"),
            ("spread_0_min", "1"),
            ("scheduling", "Divided"),
            ("division", "Weighted"),
            ("weighting", "static"),
            ("weight_0_clusters", "a-east"),
            ("weight_0_weight", "2"),
            ("weight_1_clusters", "a-west"),
            ("weight_1_weight", "1"),
            ("weight_2_clusters", ""),
            ("weight_2_weight", ""),
            ("priority", "5"),
            ("preemption", "Always"),
            ("conflict_resolution", "Overwrite"),
            ("failover_after", "60"),
            ("failover_purge", "Gracefully"),
            ("failover_grace", "30"),
        ]);
        let form = PropagationForm::posted(PolicyKind::Propagation, Posted(&fields));
        let policy = form.to_policy().unwrap();
        assert_eq!(
            policy,
            json!({
                "apiVersion": "policy.karmada.io/v1alpha1", "kind": "PropagationPolicy",
                "metadata": {"name": "weighted", "namespace": "demo"},
                "spec": {
                    "resourceSelectors": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}],
                    "placement": {
                        "clusterAffinity": {"clusterNames": ["a-east", "a-west"],
                            "fieldSelector": {"matchExpressions": [{"key": "region", "operator": "In", "values": ["eu"]}]}},
                        "clusterTolerations": [{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                        "spreadConstraints": [{"spreadByField": "cluster", "maxGroups": 2, "minGroups": 1}],
                        "replicaScheduling": {"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                            "weightPreference": {"staticWeightList": [
                                {"targetCluster": {"clusterNames": ["a-east"]}, "weight": 2},
                                {"targetCluster": {"clusterNames": ["a-west"]}, "weight": 1}]}}
                    },
                    "priority": 5, "preemption": "Always", "conflictResolution": "Overwrite",
                    "failover": {"application": {"decisionConditions": {"tolerationSeconds": 60},
                        "purgeMode": "Gracefully", "gracePeriodSeconds": 30}}
                }
            })
        );
        // The policy shown in the form again gives the same policy.
        let again = PropagationForm::of_policy(PolicyKind::Propagation, &policy);
        assert_eq!(again.to_policy().unwrap(), policy);
        // A cluster-wide policy has no namespace, and dynamic weights replace the rows.
        let mut cluster = PropagationForm::blank(PolicyKind::ClusterPropagation, "demo");
        cluster.name = "all".into();
        cluster.selectors[0] = SelectorRow {
            api_version: "v1".into(),
            kind: "ConfigMap".into(),
            namespace: "demo".into(),
            labels: "app=web".into(),
            ..SelectorRow::default()
        };
        cluster.weighting = "AvailableReplicas".into();
        let policy = cluster.to_policy().unwrap();
        assert_eq!(policy["metadata"], json!({"name": "all"}));
        assert_eq!(
            policy["spec"]["resourceSelectors"][0]["labelSelector"],
            json!({"matchLabels": {"app": "web"}})
        );
        assert_eq!(
            policy["spec"]["placement"]["replicaScheduling"],
            json!({"replicaSchedulingType": "Divided", "replicaDivisionPreference": "Weighted",
                "weightPreference": {"dynamicWeight": "AvailableReplicas"}})
        );
    }

    #[test]
    fn every_problem_names_its_field() {
        let mut form = PropagationForm::blank(PolicyKind::Propagation, "");
        form.tolerations[0] = TolerationRow {
            key: "k".into(),
            operator: "Exists".into(),
            value: "v".into(),
            effect: "Sometimes".into(),
            seconds: "soon".into(),
        };
        form.spread[0] = SpreadRow {
            field: "region".into(),
            min: "3".into(),
            max: "2".into(),
            ..SpreadRow::default()
        };
        form.weights[0] = WeightRow {
            clusters: "a".into(),
            weight: "0".into(),
        };
        form.weights[1] = WeightRow {
            clusters: String::new(),
            weight: "x".into(),
        };
        form.priority = "high".into();
        form.failover_grace = "10".into();
        form.cluster_labels = "a b".into();
        let err = form.to_policy().unwrap_err();
        for want in [
            "name: give the policy a name",
            "namespace: give the policy's namespace",
            "resource selectors: select at least one resource",
            "cluster labels: \"a b\" is not key=value",
            "toleration 1 effect: \"Sometimes\" is not one of NoSchedule, PreferNoSchedule, NoExecute",
            "toleration 1: a toleration with operator Exists takes no value",
            "toleration 1 seconds: \"soon\" is not a whole number",
            "spread constraint 1: min groups 3 is above max groups 2",
            "spread constraints: spreading by region, zone or provider needs a constraint spreading by cluster too",
            "weight 1: weight 0 is below 1",
            "weight 2: name the clusters the weight is for",
            "weight 2 weight: \"x\" is not a whole number",
            "priority: \"high\" is not a whole number",
            "failover grace period: only with purge mode Gracefully",
        ] {
            assert!(err.message.contains(want), "{want}\nin: {}", err.message);
        }
        assert_eq!(err.code, crate::api::Code::InvalidArgument);
    }
}
