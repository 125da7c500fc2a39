//! Label and field selectors in the Kubernetes query syntax, parsed into kube's own
//! [`Selector`]/[`Expression`] types (labels) and a small field matcher, evaluated on cached
//! objects.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};

use kube::core::{DynamicObject, Expression, Selector, SelectorExt};

use super::error::RouterError;

/// Parses a label selector (`app=web,tier!=db,env in (a,b),!legacy,owner`) into a [`Selector`].
/// An empty string selects everything.
pub fn parse_label_selector(input: &str) -> Result<Selector, RouterError> {
    let mut expressions = Vec::new();
    for requirement in split_requirements(input)? {
        expressions.push(parse_requirement(requirement)?);
    }
    Ok(expressions.into_iter().collect())
}

/// Whether `labels` satisfy `selector`.
pub fn labels_match(selector: &Selector, labels: Option<&BTreeMap<String, String>>) -> bool {
    if selector.selects_all() {
        return true;
    }
    static EMPTY: BTreeMap<String, String> = BTreeMap::new();
    selector.matches(labels.unwrap_or(&EMPTY))
}

/// Whether the labels that `label` looks up satisfy every one of `expressions`, with kube's
/// semantics (`!=` and `notin` match an absent label): the same answer as [`labels_match`] for
/// labels kept in any form.
pub fn expressions_match<'a>(
    expressions: &[Expression],
    label: impl Fn(&str) -> Option<&'a str>,
) -> bool {
    expressions.iter().all(|expression| match expression {
        Expression::In(key, values) => label(key).is_some_and(|v| values.contains(v)),
        Expression::NotIn(key, values) => label(key).is_none_or(|v| !values.contains(v)),
        Expression::Equal(key, value) => label(key) == Some(value.as_str()),
        Expression::NotEqual(key, value) => label(key) != Some(value.as_str()),
        Expression::Exists(key) => label(key).is_some(),
        Expression::DoesNotExist(key) => label(key).is_none(),
    })
}

fn invalid(reason: impl Into<String>) -> RouterError {
    RouterError::InvalidQuery {
        parameter: "labelSelector",
        reason: reason.into(),
    }
}

/// Splits at commas that are not inside a `(...)` value set.
fn split_requirements(input: &str) -> Result<Vec<&str>, RouterError> {
    let mut parts = Vec::new();
    let mut depth = 0usize;
    let mut start = 0usize;
    for (i, c) in input.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth
                    .checked_sub(1)
                    .ok_or_else(|| invalid(format!("unbalanced ')' in {input:?}")))?;
            }
            ',' if depth == 0 => {
                parts.push(&input[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    if depth != 0 {
        return Err(invalid(format!("unbalanced '(' in {input:?}")));
    }
    parts.push(&input[start..]);
    let parts: Vec<&str> = parts.into_iter().map(str::trim).collect();
    if parts.len() == 1 && parts[0].is_empty() {
        return Ok(Vec::new());
    }
    if parts.iter().any(|p| p.is_empty()) {
        return Err(invalid(format!("empty requirement in {input:?}")));
    }
    Ok(parts)
}

fn parse_requirement(req: &str) -> Result<Expression, RouterError> {
    if let Some(key) = req.strip_prefix('!') {
        return Ok(Expression::DoesNotExist(label_key(key.trim())?));
    }
    if let Some((key, value)) = req.split_once("!=") {
        return Ok(Expression::NotEqual(
            label_key(key.trim())?,
            label_value(value.trim())?,
        ));
    }
    if let Some((key, value)) = req.split_once("==").or_else(|| req.split_once('=')) {
        return Ok(Expression::Equal(
            label_key(key.trim())?,
            label_value(value.trim())?,
        ));
    }
    let mut words = req.splitn(2, char::is_whitespace);
    let key = words.next().unwrap_or_default();
    let Some(rest) = words.next().map(str::trim) else {
        return Ok(Expression::Exists(label_key(key)?));
    };
    let (notin, set) = if let Some(set) = rest.strip_prefix("notin") {
        (true, set)
    } else if let Some(set) = rest.strip_prefix("in") {
        (false, set)
    } else {
        return Err(invalid(format!("unsupported operator in {req:?}")));
    };
    let set = set
        .trim()
        .strip_prefix('(')
        .and_then(|s| s.strip_suffix(')'))
        .ok_or_else(|| invalid(format!("expected a (value,...) set in {req:?}")))?;
    let values = set
        .split(',')
        .map(|v| label_value(v.trim()))
        .collect::<Result<BTreeSet<String>, _>>()?;
    let key = label_key(key)?;
    Ok(if notin {
        Expression::NotIn(key, values)
    } else {
        Expression::In(key, values)
    })
}

fn label_key(key: &str) -> Result<String, RouterError> {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let name_ok = !name.is_empty()
        && name.len() <= 63
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '-' | '.'))
    });
    if name_ok && prefix_ok {
        Ok(key.to_owned())
    } else {
        Err(invalid(format!("invalid label key {key:?}")))
    }
}

fn label_value(value: &str) -> Result<String, RouterError> {
    let ok = value.is_empty()
        || (value.len() <= 63
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')));
    if ok {
        Ok(value.to_owned())
    } else {
        Err(invalid(format!("invalid label value {value:?}")))
    }
}

/// One field requirement: `path=value`, `path==value` or `path!=value`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldRequirement {
    /// Dotted path into the object (`metadata.name`, `spec.replicas`, `status.phase`).
    pub path: String,
    /// The value compared against the field rendered as a string (missing fields are `""`).
    pub value: String,
    /// `!=` rather than `=`.
    pub negated: bool,
}

/// A parsed field selector: every requirement must hold.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FieldSelector(pub Vec<FieldRequirement>);

impl FieldSelector {
    /// Parses `metadata.name=web,status.phase!=Running`. An empty string selects everything.
    pub fn parse(input: &str) -> Result<Self, RouterError> {
        let mut requirements = Vec::new();
        for part in input.split(',').map(str::trim) {
            if part.is_empty() {
                if input.trim().is_empty() {
                    continue;
                }
                return Err(RouterError::InvalidQuery {
                    parameter: "fieldSelector",
                    reason: format!("empty requirement in {input:?}"),
                });
            }
            let (path, value, negated) = if let Some((p, v)) = part.split_once("!=") {
                (p, v, true)
            } else if let Some((p, v)) = part.split_once("==").or_else(|| part.split_once('=')) {
                (p, v, false)
            } else {
                return Err(RouterError::InvalidQuery {
                    parameter: "fieldSelector",
                    reason: format!("{part:?} is not field=value or field!=value"),
                });
            };
            let path = path.trim();
            if path.is_empty() || path.split('.').any(str::is_empty) {
                return Err(RouterError::InvalidQuery {
                    parameter: "fieldSelector",
                    reason: format!("invalid field path {path:?}"),
                });
            }
            requirements.push(FieldRequirement {
                path: path.to_owned(),
                value: value.trim().to_owned(),
                negated,
            });
        }
        Ok(FieldSelector(requirements))
    }

    /// Whether the selector selects everything.
    pub fn selects_all(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `object` satisfies every requirement.
    pub fn matches(&self, object: &DynamicObject) -> bool {
        self.matches_with(|path| Cow::Owned(field_value(object, path)))
    }

    /// Whether the fields that `value` renders (as [`field_value`] does) satisfy every
    /// requirement.
    pub fn matches_with<'a>(&self, value: impl Fn(&str) -> Cow<'a, str>) -> bool {
        self.0
            .iter()
            .all(|req| (value(&req.path) == req.value.as_str()) != req.negated)
    }

    /// The selector in query syntax.
    pub fn to_query(&self) -> String {
        self.0
            .iter()
            .map(|r| {
                let op = if r.negated { "!=" } else { "=" };
                format!("{}{op}{}", r.path, r.value)
            })
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// The field at dotted `path` of `object` rendered as a string; `""` when missing or not a
/// scalar.
pub fn field_value(object: &DynamicObject, path: &str) -> String {
    let meta = &object.metadata;
    match path {
        "metadata.name" => return meta.name.clone().unwrap_or_default(),
        "metadata.namespace" => return meta.namespace.clone().unwrap_or_default(),
        "metadata.uid" => return meta.uid.clone().unwrap_or_default(),
        "metadata.resourceVersion" => return meta.resource_version.clone().unwrap_or_default(),
        _ => {}
    }
    let mut current = &object.data;
    for segment in path.split('.') {
        match current.get(segment) {
            Some(next) => current = next,
            None => return String::new(),
        }
    }
    match current {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => n.to_string(),
        serde_json::Value::Bool(b) => b.to_string(),
        _ => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn label_selector_table() {
        let web = labels(&[("app", "web"), ("tier", "front"), ("env", "prod")]);
        let db = labels(&[("app", "db"), ("tier", "back")]);
        for (selector, want_web, want_db) in [
            ("", true, true),
            ("app=web", true, false),
            ("app==web", true, false),
            ("app!=web", false, true),
            ("env", true, false),
            ("!env", false, true),
            ("tier in (front,back)", true, true),
            ("tier in (back)", false, true),
            ("tier notin (back)", true, false),
            ("app=web,tier=back", false, false),
            ("app in (web, db), !env", false, true),
            ("example.com/owner", false, false),
        ] {
            let sel = parse_label_selector(selector).unwrap();
            assert_eq!(
                labels_match(&sel, Some(&web)),
                want_web,
                "{selector} on web"
            );
            assert_eq!(labels_match(&sel, Some(&db)), want_db, "{selector} on db");
        }
        assert!(labels_match(&parse_label_selector("!x").unwrap(), None));
        assert!(!labels_match(&parse_label_selector("x").unwrap(), None));
    }

    #[test]
    fn expressions_match_answers_as_kube_does() {
        let label_sets = [
            labels(&[("app", "web"), ("tier", "front"), ("env", "prod")]),
            labels(&[("app", "db"), ("tier", "back")]),
            labels(&[("app", "")]),
            labels(&[]),
        ];
        for selector in [
            "",
            "app=web",
            "app!=web",
            "app=",
            "app!=",
            "env",
            "!env",
            "tier in (front,back)",
            "tier notin (back)",
            "app in (web, db), !env",
            "app notin (web),tier",
        ] {
            let parsed = parse_label_selector(selector).unwrap();
            let expressions: Vec<Expression> = parsed.clone().into_iter().collect();
            for set in &label_sets {
                let lookup = |key: &str| set.get(key).map(String::as_str);
                assert_eq!(
                    expressions_match(&expressions, lookup),
                    labels_match(&parsed, Some(set)),
                    "{selector} on {set:?}"
                );
            }
        }
    }

    #[test]
    fn bad_label_selectors_are_rejected() {
        for bad in [
            "app=",
            "=web",
            "app in web",
            "app in (web",
            "a,,b",
            "app>3",
            "bad key=1",
            "app=we b",
            "-app=1",
        ] {
            // `app=` is valid (empty value) in Kubernetes; every other entry is not.
            let result = parse_label_selector(bad);
            if bad == "app=" {
                assert!(result.is_ok(), "{bad}");
            } else {
                let err = result.unwrap_err();
                assert_eq!(err.http_status(), 400, "{bad}");
                assert!(err.to_string().contains("labelSelector"), "{err}");
            }
        }
    }

    #[test]
    fn field_selector_table() {
        let obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "prod"},
            "spec": {"replicas": 3, "paused": false},
            "status": {"phase": "Running"}
        }))
        .unwrap();
        for (selector, want) in [
            ("", true),
            ("metadata.name=web", true),
            ("metadata.name==web", true),
            ("metadata.name!=web", false),
            ("metadata.namespace=prod,metadata.name=web", true),
            ("metadata.namespace=dev", false),
            ("spec.replicas=3", true),
            ("spec.paused=false", true),
            ("status.phase!=Running", false),
            ("spec.missing=", true),
            ("spec=x", false),
        ] {
            let sel = FieldSelector::parse(selector).unwrap();
            assert_eq!(sel.matches(&obj), want, "{selector}");
        }
        for bad in ["metadata.name", "a..b=1", "=x", "a=1,,b=2"] {
            assert!(FieldSelector::parse(bad).is_err(), "{bad}");
        }
        let sel = FieldSelector::parse("a.b=1, c!=2").unwrap();
        assert_eq!(sel.to_query(), "a.b=1,c!=2");
    }
}
