//! What both policy forms share: the four policy kinds, reading a posted form's numbered rows,
//! the problems found in a form, and the resource selector rows.

use std::collections::HashMap;

use serde_json::{Map, Value, json};

use super::selector::{parse_selector, selector_text};
use crate::api::ApiError;

/// The Karmada policy kinds the form writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PolicyKind {
    /// `PropagationPolicy` (namespaced).
    Propagation,
    /// `ClusterPropagationPolicy`.
    ClusterPropagation,
    /// `OverridePolicy` (namespaced).
    Override,
    /// `ClusterOverridePolicy`.
    ClusterOverride,
}

/// The API group and version of every policy kind.
pub const POLICY_API_VERSION: &str = "policy.karmada.io/v1alpha1";

impl PolicyKind {
    /// Every kind, in the order the form offers them.
    pub const ALL: [PolicyKind; 4] = [
        PolicyKind::Propagation,
        PolicyKind::ClusterPropagation,
        PolicyKind::Override,
        PolicyKind::ClusterOverride,
    ];

    /// The kind's name (`PropagationPolicy`).
    pub fn kind(self) -> &'static str {
        match self {
            PolicyKind::Propagation => "PropagationPolicy",
            PolicyKind::ClusterPropagation => "ClusterPropagationPolicy",
            PolicyKind::Override => "OverridePolicy",
            PolicyKind::ClusterOverride => "ClusterOverridePolicy",
        }
    }

    /// The resource plural (`propagationpolicies`).
    pub fn resource(self) -> &'static str {
        match self {
            PolicyKind::Propagation => "propagationpolicies",
            PolicyKind::ClusterPropagation => "clusterpropagationpolicies",
            PolicyKind::Override => "overridepolicies",
            PolicyKind::ClusterOverride => "clusteroverridepolicies",
        }
    }

    /// The kind named by its name or its plural (case-insensitive).
    pub fn parse(text: &str) -> Option<PolicyKind> {
        PolicyKind::ALL.into_iter().find(|k| {
            k.kind().eq_ignore_ascii_case(text) || k.resource().eq_ignore_ascii_case(text)
        })
    }

    /// Whether its objects live in a namespace.
    pub fn namespaced(self) -> bool {
        matches!(self, PolicyKind::Propagation | PolicyKind::Override)
    }

    /// Whether it is a propagation (placement) policy, else an override policy.
    pub fn propagates(self) -> bool {
        matches!(
            self,
            PolicyKind::Propagation | PolicyKind::ClusterPropagation
        )
    }
}

/// A posted form's fields, read with blanks trimmed.
#[derive(Clone, Copy, Debug)]
pub struct Posted<'a>(pub &'a HashMap<String, String>);

/// The most rows of one table a posted form is read for.
pub const MAX_ROWS: usize = 64;

impl Posted<'_> {
    /// Field `name`, trimmed; empty when absent.
    pub fn get(&self, name: &str) -> String {
        self.0
            .get(name)
            .map(|v| v.trim().to_owned())
            .unwrap_or_default()
    }

    /// The number of rows `prefix_0_…`, `prefix_1_…` posted, found by their `probe` field.
    pub fn rows(&self, prefix: &str, probe: &str) -> usize {
        (0..MAX_ROWS)
            .take_while(|i| self.0.contains_key(&format!("{prefix}_{i}_{probe}")))
            .count()
    }

    /// Field `probe` of row `i` of `prefix`.
    pub fn cell(&self, prefix: &str, i: usize, field: &str) -> String {
        self.get(&format!("{prefix}_{i}_{field}"))
    }
}

/// What is wrong with a form, each problem naming the field as the form labels it.
#[derive(Debug, Default)]
pub struct Problems(pub Vec<String>);

impl Problems {
    /// Records a problem with `field`.
    pub fn add(&mut self, field: &str, problem: impl std::fmt::Display) {
        self.0.push(format!("{field}: {problem}"));
    }

    /// `value` as a whole number (`None` when blank); a problem when it is not one.
    pub fn number(&mut self, field: &str, value: &str) -> Option<i64> {
        if value.is_empty() {
            return None;
        }
        match value.parse::<i64>() {
            Ok(n) => Some(n),
            Err(_) => {
                self.add(field, format!("{value:?} is not a whole number"));
                None
            }
        }
    }

    /// `text` as a label selector object (`None` when blank); a problem when malformed.
    pub fn selector(&mut self, field: &str, text: &str) -> Option<Value> {
        match parse_selector(text) {
            Ok(selector) => selector,
            Err(problem) => {
                self.add(field, problem);
                None
            }
        }
    }

    /// `value` must be one of `allowed` (or blank).
    pub fn one_of(&mut self, field: &str, value: &str, allowed: &[&str]) {
        if !value.is_empty() && !allowed.contains(&value) {
            self.add(
                field,
                format!("{value:?} is not one of {}", allowed.join(", ")),
            );
        }
    }

    /// `Ok(value)` when nothing is wrong, else one `InvalidArgument` listing every problem.
    pub fn into_result<T>(self, value: T) -> Result<T, ApiError> {
        if self.0.is_empty() {
            Ok(value)
        } else {
            Err(ApiError::invalid(self.0.join("; ")))
        }
    }
}

/// `map[key] = value` unless `value` is null.
pub fn put(map: &mut Map<String, Value>, key: &str, value: Value) {
    if !value.is_null() {
        map.insert(key.to_owned(), value);
    }
}

/// A non-blank string as JSON, else null.
pub fn text_or_null(text: &str) -> Value {
    if text.is_empty() {
        Value::Null
    } else {
        json!(text)
    }
}

/// A list as JSON, null when empty.
pub fn list_or_null(items: Vec<String>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        json!(items)
    }
}

/// An object as JSON, null when empty.
pub fn object_or_null(map: Map<String, Value>) -> Value {
    if map.is_empty() {
        Value::Null
    } else {
        Value::Object(map)
    }
}

/// The string at `pointer`, empty when absent.
pub fn text_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

/// The number at `pointer` as text, empty when absent.
pub fn number_at(v: &Value, pointer: &str) -> String {
    v.pointer(pointer)
        .and_then(Value::as_i64)
        .map(|n| n.to_string())
        .unwrap_or_default()
}

/// One resource selector row: what the policy selects.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SelectorRow {
    /// `apps/v1`.
    pub api_version: String,
    /// `Deployment`.
    pub kind: String,
    /// One object by name; blank for all (or by labels).
    pub name: String,
    /// Namespace of the objects (cluster-wide policies; blank: the policy's own).
    pub namespace: String,
    /// Label selector text.
    pub labels: String,
}

impl SelectorRow {
    /// Whether nothing was typed in the row.
    pub fn is_blank(&self) -> bool {
        self == &SelectorRow::default()
    }

    /// The rows of a posted form.
    pub fn posted(form: Posted<'_>) -> Vec<SelectorRow> {
        (0..form.rows("sel", "kind"))
            .map(|i| SelectorRow {
                api_version: form.cell("sel", i, "api"),
                kind: form.cell("sel", i, "kind"),
                name: form.cell("sel", i, "name"),
                namespace: form.cell("sel", i, "ns"),
                labels: form.cell("sel", i, "labels"),
            })
            .collect()
    }

    /// The rows of a policy's `spec.resourceSelectors`.
    pub fn of_policy(policy: &Value) -> Vec<SelectorRow> {
        policy
            .pointer("/spec/resourceSelectors")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|s| SelectorRow {
                api_version: text_at(s, "/apiVersion"),
                kind: text_at(s, "/kind"),
                name: text_at(s, "/name"),
                namespace: text_at(s, "/namespace"),
                labels: s
                    .get("labelSelector")
                    .map(selector_text)
                    .unwrap_or_default(),
            })
            .collect()
    }

    /// `spec.resourceSelectors` of the rows (blank rows skipped); at least one is required.
    pub fn to_spec(rows: &[SelectorRow], problems: &mut Problems) -> Value {
        let mut out = Vec::new();
        for (i, row) in rows.iter().enumerate().filter(|(_, r)| !r.is_blank()) {
            let field = format!("resource selector {}", i + 1);
            if row.api_version.is_empty() {
                problems.add(&field, "give the apiVersion (apps/v1, v1, ...)");
            }
            if row.kind.is_empty() {
                problems.add(&field, "give the kind (Deployment, ConfigMap, ...)");
            }
            let mut s = Map::new();
            put(&mut s, "apiVersion", json!(row.api_version));
            put(&mut s, "kind", json!(row.kind));
            put(&mut s, "namespace", text_or_null(&row.namespace));
            put(&mut s, "name", text_or_null(&row.name));
            let labels = problems
                .selector(&format!("{field} labels"), &row.labels)
                .unwrap_or(Value::Null);
            put(&mut s, "labelSelector", labels);
            out.push(Value::Object(s));
        }
        if out.is_empty() {
            problems.add(
                "resource selectors",
                "select at least one resource (apiVersion and kind)",
            );
        }
        Value::Array(out)
    }
}

/// The policy object's `apiVersion`, `kind` and `metadata` (name, and namespace for
/// namespaced kinds).
pub fn policy_head(
    kind: PolicyKind,
    name: &str,
    namespace: &str,
    problems: &mut Problems,
) -> Map<String, Value> {
    if name.is_empty() {
        problems.add("name", "give the policy a name");
    }
    let mut metadata = Map::new();
    put(&mut metadata, "name", json!(name));
    if kind.namespaced() {
        if namespace.is_empty() {
            problems.add("namespace", "give the policy's namespace");
        }
        put(&mut metadata, "namespace", json!(namespace));
    }
    let mut object = Map::new();
    object.insert("apiVersion".into(), json!(POLICY_API_VERSION));
    object.insert("kind".into(), json!(kind.kind()));
    object.insert("metadata".into(), Value::Object(metadata));
    object
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kinds_parse_by_name_or_plural() {
        for (text, want) in [
            ("PropagationPolicy", Some(PolicyKind::Propagation)),
            (
                "clusterpropagationpolicies",
                Some(PolicyKind::ClusterPropagation),
            ),
            ("overridepolicy", Some(PolicyKind::Override)),
            ("ClusterOverridePolicy", Some(PolicyKind::ClusterOverride)),
            ("Deployment", None),
        ] {
            assert_eq!(PolicyKind::parse(text), want, "{text}");
        }
    }

    #[test]
    fn selector_rows_say_what_is_missing() {
        let rows = vec![
            SelectorRow {
                api_version: "apps/v1".into(),
                kind: "Deployment".into(),
                name: "web".into(),
                ..SelectorRow::default()
            },
            SelectorRow::default(),
            SelectorRow {
                kind: "ConfigMap".into(),
                labels: "app in (x".into(),
                ..SelectorRow::default()
            },
        ];
        let mut problems = Problems::default();
        let spec = SelectorRow::to_spec(&rows, &mut problems);
        assert_eq!(
            spec[0],
            json!({"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"})
        );
        assert_eq!(problems.0.len(), 2, "{:?}", problems.0);
        assert!(problems.0[0].starts_with("resource selector 3: give the apiVersion"));
        assert!(problems.0[1].starts_with("resource selector 3 labels: "));
        let mut problems = Problems::default();
        SelectorRow::to_spec(&[SelectorRow::default()], &mut problems);
        assert_eq!(
            problems.0,
            ["resource selectors: select at least one resource (apiVersion and kind)"]
        );
    }
}
