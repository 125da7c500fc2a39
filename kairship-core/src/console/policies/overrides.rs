//! The OverridePolicy / ClusterOverridePolicy form: resource selectors and override rules,
//! each with its target clusters and overriders (image, command, args, labels, annotations,
//! plaintext), read from a posted form or a stored policy and written as the policy object.

use serde_json::{Map, Value, json};

use super::fields::{
    PolicyKind, Posted, Problems, SelectorRow, list_or_null, object_or_null, policy_head, put,
    text_at, text_or_null,
};
use super::selector::{comma_list, selector_text, string_list};

/// Image components an image overrider changes.
pub const IMAGE_COMPONENTS: [&str; 3] = ["Registry", "Repository", "Tag"];
/// Operators of image, labels, annotations and plaintext overriders.
pub const OPERATORS: [&str; 3] = ["add", "remove", "replace"];
/// Operators of command and args overriders.
pub const LIST_OPERATORS: [&str; 2] = ["add", "remove"];

/// An image overrider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImageRow {
    /// `Registry`, `Repository` or `Tag`.
    pub component: String,
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// The new component.
    pub value: String,
    /// Only the image at this path (`/spec/template/spec/containers/0/image`); blank: every
    /// image of the workload.
    pub path: String,
}

/// A command or args overrider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ListRow {
    /// The container.
    pub container: String,
    /// `add` or `remove`.
    pub operator: String,
    /// The items, comma separated.
    pub values: String,
}

/// A labels or annotations overrider.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MapRow {
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// `key=value` pairs, comma separated.
    pub pairs: String,
}

/// A plaintext overrider (a JSON patch operation).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PlainRow {
    /// JSON pointer (`/spec/replicas`).
    pub path: String,
    /// `add`, `remove` or `replace`.
    pub operator: String,
    /// The value: JSON (`3`, `["a"]`, `{"k": "v"}`), or else a string.
    pub value: String,
}

/// One override rule.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RuleForm {
    /// Target cluster names, comma separated (blank: every cluster).
    pub clusters: String,
    /// Target cluster label selector text.
    pub cluster_labels: String,
    /// Image overriders.
    pub images: Vec<ImageRow>,
    /// Command overriders.
    pub commands: Vec<ListRow>,
    /// Args overriders.
    pub args: Vec<ListRow>,
    /// Labels overriders.
    pub labels: Vec<MapRow>,
    /// Annotations overriders.
    pub annotations: Vec<MapRow>,
    /// Plaintext overriders.
    pub plaintext: Vec<PlainRow>,
}

/// The override policy form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OverrideForm {
    /// OverridePolicy or ClusterOverridePolicy.
    pub kind: PolicyKind,
    /// Policy name.
    pub name: String,
    /// Namespace (namespaced kind).
    pub namespace: String,
    /// What it selects.
    pub selectors: Vec<SelectorRow>,
    /// Its rules.
    pub rules: Vec<RuleForm>,
}

fn spare<T: Default + PartialEq>(mut rows: Vec<T>) -> Vec<T> {
    rows.retain(|r| r != &T::default());
    rows.push(T::default());
    rows
}

/// A plaintext value as the form shows it: a string that would not read as JSON as it is,
/// anything else as JSON (so `"3"` stays a string and `3` a number).
pub fn plain_value_text(value: &Value) -> String {
    match value {
        Value::String(s) if serde_json::from_str::<Value>(s).is_err() => s.clone(),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// A plaintext value typed in the form: JSON when it reads as JSON, else the text as a string.
pub fn plain_value(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|_| json!(text))
}

/// `k=v` pairs of a labels or annotations overrider's value, in its order.
fn pairs_text(value: Option<&Value>) -> String {
    value
        .and_then(Value::as_object)
        .map(|m| {
            m.iter()
                .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

impl RuleForm {
    fn spare_rows(self) -> RuleForm {
        RuleForm {
            images: spare(self.images),
            commands: spare(self.commands),
            args: spare(self.args),
            labels: spare(self.labels),
            annotations: spare(self.annotations),
            plaintext: spare(self.plaintext),
            ..self
        }
    }

    fn posted(form: Posted<'_>, r: usize) -> RuleForm {
        let p = |table: &str| format!("rule_{r}_{table}");
        let lists = |table: &str| {
            let prefix = p(table);
            (0..form.rows(&prefix, "container"))
                .map(|i| ListRow {
                    container: form.cell(&prefix, i, "container"),
                    operator: form.cell(&prefix, i, "operator"),
                    values: form.cell(&prefix, i, "values"),
                })
                .collect()
        };
        let maps = |table: &str| {
            let prefix = p(table);
            (0..form.rows(&prefix, "operator"))
                .map(|i| MapRow {
                    operator: form.cell(&prefix, i, "operator"),
                    pairs: form.cell(&prefix, i, "pairs"),
                })
                .collect()
        };
        let images = p("image");
        let plain = p("plain");
        RuleForm {
            clusters: form.get(&format!("rule_{r}_clusters")),
            cluster_labels: form.get(&format!("rule_{r}_cluster_labels")),
            images: (0..form.rows(&images, "component"))
                .map(|i| ImageRow {
                    component: form.cell(&images, i, "component"),
                    operator: form.cell(&images, i, "operator"),
                    value: form.cell(&images, i, "value"),
                    path: form.cell(&images, i, "path"),
                })
                .collect(),
            commands: lists("command"),
            args: lists("args"),
            labels: maps("labels"),
            annotations: maps("annotations"),
            plaintext: (0..form.rows(&plain, "path"))
                .map(|i| PlainRow {
                    path: form.cell(&plain, i, "path"),
                    operator: form.cell(&plain, i, "operator"),
                    value: form.cell(&plain, i, "value"),
                })
                .collect(),
        }
    }

    fn of_rule(rule: &Value) -> RuleForm {
        let overriders = rule.get("overriders").cloned().unwrap_or(Value::Null);
        let each = |key: &str| -> Vec<Value> {
            overriders
                .get(key)
                .and_then(Value::as_array)
                .cloned()
                .unwrap_or_default()
        };
        let lists = |key: &str| {
            each(key)
                .iter()
                .map(|o| ListRow {
                    container: text_at(o, "/containerName"),
                    operator: text_at(o, "/operator"),
                    values: string_list(o.get("value")).join(", "),
                })
                .collect()
        };
        let maps = |key: &str| {
            each(key)
                .iter()
                .map(|o| MapRow {
                    operator: text_at(o, "/operator"),
                    pairs: pairs_text(o.get("value")),
                })
                .collect()
        };
        RuleForm {
            clusters: string_list(rule.pointer("/targetCluster/clusterNames")).join(", "),
            cluster_labels: rule
                .pointer("/targetCluster/labelSelector")
                .map(selector_text)
                .unwrap_or_default(),
            images: each("imageOverrider")
                .iter()
                .map(|o| ImageRow {
                    component: text_at(o, "/component"),
                    operator: text_at(o, "/operator"),
                    value: text_at(o, "/value"),
                    path: text_at(o, "/predicate/path"),
                })
                .collect(),
            commands: lists("commandOverrider"),
            args: lists("argsOverrider"),
            labels: maps("labelsOverrider"),
            annotations: maps("annotationsOverrider"),
            plaintext: each("plaintext")
                .iter()
                .map(|o| PlainRow {
                    path: text_at(o, "/path"),
                    operator: text_at(o, "/operator"),
                    value: o.get("value").map(plain_value_text).unwrap_or_default(),
                })
                .collect(),
        }
    }

    fn is_blank(&self) -> bool {
        self.clone().spare_rows() == RuleForm::default().spare_rows()
    }

    fn to_rule(&self, n: usize, problems: &mut Problems) -> Value {
        let rule_field = format!("rule {n}");
        let mut target = Map::new();
        put(
            &mut target,
            "clusterNames",
            list_or_null(comma_list(&self.clusters)),
        );
        let labels = problems
            .selector(
                &format!("{rule_field} cluster labels"),
                &self.cluster_labels,
            )
            .unwrap_or(Value::Null);
        put(&mut target, "labelSelector", labels);

        let mut overriders = Map::new();
        let mut images = Vec::new();
        for (i, row) in self.images.iter().enumerate() {
            if row == &ImageRow::default() {
                continue;
            }
            let field = format!("{rule_field} image {}", i + 1);
            if row.component.is_empty() {
                problems.add(&field, "choose the component: Registry, Repository or Tag");
            }
            problems.one_of(
                &format!("{field} component"),
                &row.component,
                &IMAGE_COMPONENTS,
            );
            if row.operator.is_empty() {
                problems.add(&field, "choose the operator: add, remove or replace");
            }
            problems.one_of(&format!("{field} operator"), &row.operator, &OPERATORS);
            if row.operator != "remove" && row.value.is_empty() {
                problems.add(&field, "give the value");
            }
            if !row.path.is_empty() && !row.path.starts_with('/') {
                problems.add(&field, "the path is a JSON pointer starting with /");
            }
            let mut o = Map::new();
            put(&mut o, "component", json!(row.component));
            put(&mut o, "operator", json!(row.operator));
            put(&mut o, "value", text_or_null(&row.value));
            if !row.path.is_empty() {
                o.insert("predicate".into(), json!({"path": row.path}));
            }
            images.push(Value::Object(o));
        }
        put(&mut overriders, "imageOverrider", array_or_null(images));
        for (key, label, rows) in [
            ("commandOverrider", "command", &self.commands),
            ("argsOverrider", "args", &self.args),
        ] {
            let mut out = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                if row == &ListRow::default() {
                    continue;
                }
                let field = format!("{rule_field} {label} {}", i + 1);
                if row.container.is_empty() {
                    problems.add(&field, "name the container");
                }
                if row.operator.is_empty() {
                    problems.add(&field, "choose the operator: add or remove");
                }
                problems.one_of(&format!("{field} operator"), &row.operator, &LIST_OPERATORS);
                out.push(json!({
                    "containerName": row.container,
                    "operator": row.operator,
                    "value": comma_list(&row.values),
                }));
            }
            put(&mut overriders, key, array_or_null(out));
        }
        for (key, label, rows) in [
            ("labelsOverrider", "labels", &self.labels),
            ("annotationsOverrider", "annotations", &self.annotations),
        ] {
            let mut out = Vec::new();
            for (i, row) in rows.iter().enumerate() {
                if row == &MapRow::default() {
                    continue;
                }
                let field = format!("{rule_field} {label} {}", i + 1);
                if row.operator.is_empty() {
                    problems.add(&field, "choose the operator: add, remove or replace");
                }
                problems.one_of(&format!("{field} operator"), &row.operator, &OPERATORS);
                let mut value = Map::new();
                for pair in comma_list(&row.pairs) {
                    match pair.split_once('=') {
                        Some((k, v)) if !k.trim().is_empty() => {
                            value.insert(k.trim().to_owned(), json!(v.trim()));
                        }
                        _ => problems.add(&field, format!("{pair:?} is not key=value")),
                    }
                }
                out.push(json!({"operator": row.operator, "value": value}));
            }
            put(&mut overriders, key, array_or_null(out));
        }
        let mut plain = Vec::new();
        for (i, row) in self.plaintext.iter().enumerate() {
            if row == &PlainRow::default() {
                continue;
            }
            let field = format!("{rule_field} plaintext {}", i + 1);
            if !row.path.starts_with('/') {
                problems.add(
                    &field,
                    "the path is a JSON pointer starting with / (/spec/replicas)",
                );
            }
            if row.operator.is_empty() {
                problems.add(&field, "choose the operator: add, remove or replace");
            }
            problems.one_of(&format!("{field} operator"), &row.operator, &OPERATORS);
            let mut o = Map::new();
            put(&mut o, "path", json!(row.path));
            put(&mut o, "operator", json!(row.operator));
            if !row.value.is_empty() {
                o.insert("value".into(), plain_value(&row.value));
            } else if row.operator != "remove" {
                problems.add(&field, "give the value");
            }
            plain.push(Value::Object(o));
        }
        put(&mut overriders, "plaintext", array_or_null(plain));
        if overriders.is_empty() {
            problems.add(&rule_field, "give at least one overrider");
        }
        let mut rule = Map::new();
        put(&mut rule, "targetCluster", object_or_null(target));
        rule.insert("overriders".into(), Value::Object(overriders));
        Value::Object(rule)
    }
}

fn array_or_null(items: Vec<Value>) -> Value {
    if items.is_empty() {
        Value::Null
    } else {
        Value::Array(items)
    }
}

impl OverrideForm {
    /// A new policy of `kind` in `namespace`: one rule.
    pub fn blank(kind: PolicyKind, namespace: &str) -> OverrideForm {
        OverrideForm {
            kind,
            name: String::new(),
            namespace: if kind.namespaced() {
                namespace.to_owned()
            } else {
                String::new()
            },
            selectors: vec![SelectorRow::default(); 2],
            rules: vec![RuleForm::default().spare_rows()],
        }
    }

    /// The form as posted.
    pub fn posted(kind: PolicyKind, form: Posted<'_>) -> OverrideForm {
        let rules = (0..super::fields::MAX_ROWS)
            .take_while(|r| form.0.contains_key(&format!("rule_{r}_clusters")))
            .map(|r| RuleForm::posted(form, r))
            .collect();
        OverrideForm {
            kind,
            name: form.get("name"),
            namespace: form.get("namespace"),
            selectors: SelectorRow::posted(form),
            rules,
        }
    }

    /// The form showing a stored policy (`spec.overrideRules`; the deprecated top-level
    /// `targetCluster` and `overriders` are left to the merge).
    pub fn of_policy(kind: PolicyKind, policy: &Value) -> OverrideForm {
        let mut selectors = SelectorRow::of_policy(policy);
        selectors.push(SelectorRow::default());
        let mut rules: Vec<RuleForm> = policy
            .pointer("/spec/overrideRules")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .map(|r| RuleForm::of_rule(r).spare_rows())
            .collect();
        if rules.is_empty() {
            rules.push(RuleForm::default().spare_rows());
        }
        OverrideForm {
            kind,
            name: text_at(policy, "/metadata/name"),
            namespace: text_at(policy, "/metadata/namespace"),
            selectors,
            rules,
        }
    }

    /// Adds a blank row to every table and a blank rule (the form's "More rows").
    pub fn add_rows(&mut self) {
        self.selectors.push(SelectorRow::default());
        for rule in &mut self.rules {
            rule.images.push(ImageRow::default());
            rule.commands.push(ListRow::default());
            rule.args.push(ListRow::default());
            rule.labels.push(MapRow::default());
            rule.annotations.push(MapRow::default());
            rule.plaintext.push(PlainRow::default());
        }
        self.rules.push(RuleForm::default().spare_rows());
    }

    /// The policy object the form describes, or every problem found.
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
        let rules: Vec<Value> = self
            .rules
            .iter()
            .enumerate()
            .filter(|(_, r)| !r.is_blank())
            .map(|(i, r)| r.to_rule(i + 1, &mut problems))
            .collect();
        if rules.is_empty() {
            problems.add("rules", "give at least one override rule");
        }
        spec.insert("overrideRules".into(), Value::Array(rules));
        object.insert("spec".into(), Value::Object(spec));
        (Value::Object(object), problems)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    #[test]
    fn a_posted_form_becomes_the_policy() {
        let fields: HashMap<String, String> = [
            ("name", "tag"),
            ("namespace", "demo"),
            ("sel_0_api", "apps/v1"),
            ("sel_0_kind", "Deployment"),
            ("sel_0_name", "web"),
            ("rule_0_clusters", "a-east"),
            ("rule_0_image_0_component", "Tag"),
            ("rule_0_image_0_operator", "replace"),
            ("rule_0_image_0_value", "1.28"),
            ("rule_0_image_1_component", ""),
            ("rule_0_args_0_container", "web"),
            ("rule_0_args_0_operator", "add"),
            ("rule_0_args_0_values", "--v=2, --x"),
            ("rule_0_labels_0_operator", "add"),
            ("rule_0_labels_0_pairs", "tier=edge"),
            ("rule_0_plain_0_path", "/spec/replicas"),
            ("rule_0_plain_0_operator", "replace"),
            ("rule_0_plain_0_value", "3"),
            ("rule_1_clusters", ""),
        ]
        .iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect();
        let form = OverrideForm::posted(PolicyKind::Override, Posted(&fields));
        assert_eq!(form.rules.len(), 2);
        let policy = form.to_policy().unwrap();
        assert_eq!(
            policy["spec"]["overrideRules"],
            json!([{"targetCluster": {"clusterNames": ["a-east"]}, "overriders": {
                "imageOverrider": [{"component": "Tag", "operator": "replace", "value": "1.28"}],
                "argsOverrider": [{"containerName": "web", "operator": "add", "value": ["--v=2", "--x"]}],
                "labelsOverrider": [{"operator": "add", "value": {"tier": "edge"}}],
                "plaintext": [{"path": "/spec/replicas", "operator": "replace", "value": 3}]}}])
        );
        let again = OverrideForm::of_policy(PolicyKind::Override, &policy);
        assert_eq!(again.to_policy().unwrap(), policy);
    }

    #[test]
    fn plaintext_values_keep_their_type() {
        for value in [
            json!("eu"),
            json!("3"),
            json!(3),
            json!(true),
            json!([{"name": "REGION", "value": "us"}]),
            json!({"a": "b"}),
            json!("with \"quotes\""),
        ] {
            let text = plain_value_text(&value);
            assert_eq!(plain_value(&text), value, "{text}");
        }
        assert_eq!(plain_value_text(&json!("eu")), "eu");
        assert_eq!(plain_value_text(&json!("3")), "\"3\"");
    }

    #[test]
    fn every_problem_names_its_field() {
        let mut form = OverrideForm::blank(PolicyKind::ClusterOverride, "demo");
        form.name = "x".into();
        form.selectors[0].api_version = "v1".into();
        form.selectors[0].kind = "ConfigMap".into();
        let err = form.to_policy().unwrap_err();
        assert!(
            err.message
                .contains("rules: give at least one override rule"),
            "{}",
            err.message
        );
        form.rules[0].clusters = "a".into();
        form.rules[0].images[0] = ImageRow {
            component: "Digest".into(),
            operator: "replace".into(),
            ..ImageRow::default()
        };
        form.rules[0].commands[0].values = "sh".into();
        form.rules[0].annotations[0] = MapRow {
            operator: "add".into(),
            pairs: "novalue".into(),
        };
        form.rules[0].plaintext[0] = PlainRow {
            path: "spec.replicas".into(),
            operator: "replace".into(),
            value: String::new(),
        };
        let err = form.to_policy().unwrap_err();
        for want in [
            "rule 1 image 1 component: \"Digest\" is not one of Registry, Repository, Tag",
            "rule 1 image 1: give the value",
            "rule 1 command 1: name the container",
            "rule 1 command 1: choose the operator: add or remove",
            "rule 1 annotations 1: \"novalue\" is not key=value",
            "rule 1 plaintext 1: the path is a JSON pointer starting with /",
            "rule 1 plaintext 1: give the value",
        ] {
            assert!(err.message.contains(want), "{want}\nin: {}", err.message);
        }
        // A cluster-wide policy's object has no namespace.
        assert!(!form.kind.namespaced());
    }
}
