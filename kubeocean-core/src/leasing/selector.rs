//! Node selector matching with Kubeocean's semantics: a missing or empty selector matches
//! every node; a term without requirements matches none; terms are ORed, requirements ANDed.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Node, NodeSelector, NodeSelectorRequirement, NodeSelectorTerm};

/// The only field `matchFields` may select on.
pub const FIELD_METADATA_NAME: &str = "metadata.name";

/// Whether `selector` selects `node`.
pub fn node_matches(selector: Option<&NodeSelector>, node: &Node) -> bool {
    let Some(selector) = selector else {
        return true;
    };
    if selector.node_selector_terms.is_empty() {
        return true;
    }
    let labels = node.metadata.labels.as_ref();
    let name = node.metadata.name.as_deref().unwrap_or_default();
    selector
        .node_selector_terms
        .iter()
        .any(|term| term_matches(term, labels, name))
}

/// Whether one term selects a node with these labels and name.
pub fn term_matches(
    term: &NodeSelectorTerm,
    labels: Option<&BTreeMap<String, String>>,
    name: &str,
) -> bool {
    let expressions = term.match_expressions.as_deref().unwrap_or_default();
    let fields = term.match_fields.as_deref().unwrap_or_default();
    if expressions.is_empty() && fields.is_empty() {
        return false;
    }
    expressions
        .iter()
        .all(|req| label_requirement_matches(req, labels))
        && fields
            .iter()
            .all(|req| field_requirement_matches(req, name))
}

/// A requirement on labels: `In`, `NotIn`, `Exists`, `DoesNotExist`, `Gt`, `Lt`.
/// Unknown operators and malformed `Gt`/`Lt` values match nothing.
pub fn label_requirement_matches(
    req: &NodeSelectorRequirement,
    labels: Option<&BTreeMap<String, String>>,
) -> bool {
    let value = labels
        .and_then(|labels| labels.get(&req.key))
        .map(String::as_str);
    value_matches(
        &req.operator,
        value,
        req.values.as_deref().unwrap_or_default(),
    )
}

/// A requirement on fields: only `metadata.name` is known; other keys match nothing.
pub fn field_requirement_matches(req: &NodeSelectorRequirement, node_name: &str) -> bool {
    if req.key != FIELD_METADATA_NAME {
        return false;
    }
    value_matches(
        &req.operator,
        Some(node_name),
        req.values.as_deref().unwrap_or_default(),
    )
}

fn value_matches(operator: &str, value: Option<&str>, values: &[String]) -> bool {
    match operator {
        "In" => value.is_some_and(|v| values.iter().any(|candidate| candidate == v)),
        "NotIn" => value.is_none_or(|v| values.iter().all(|candidate| candidate != v)),
        "Exists" => value.is_some(),
        "DoesNotExist" => value.is_none(),
        "Gt" | "Lt" => {
            let (Some(actual), [bound]) = (value.and_then(|v| v.parse::<i64>().ok()), values)
            else {
                return false;
            };
            let Ok(bound) = bound.parse::<i64>() else {
                return false;
            };
            if operator == "Gt" {
                actual > bound
            } else {
                actual < bound
            }
        }
        _ => false,
    }
}

/// Problems with a selector that would make it match differently than its author meant,
/// as readable messages prefixed with `path`.
pub fn validate_selector(selector: &NodeSelector, path: &str) -> Vec<String> {
    let mut problems = Vec::new();
    for (t, term) in selector.node_selector_terms.iter().enumerate() {
        let term_path = format!("{path}.nodeSelectorTerms[{t}]");
        for (r, req) in term.match_expressions.iter().flatten().enumerate() {
            let req_path = format!("{term_path}.matchExpressions[{r}]");
            problems.extend(validate_requirement(req, &req_path));
        }
        for (r, req) in term.match_fields.iter().flatten().enumerate() {
            let req_path = format!("{term_path}.matchFields[{r}]");
            if req.key != FIELD_METADATA_NAME {
                problems.push(format!(
                    "{req_path}.key {:?} is not supported (only {FIELD_METADATA_NAME})",
                    req.key
                ));
            }
            problems.extend(validate_requirement(req, &req_path));
        }
    }
    problems
}

fn validate_requirement(req: &NodeSelectorRequirement, path: &str) -> Option<String> {
    let values = req.values.as_deref().unwrap_or_default();
    match req.operator.as_str() {
        "In" | "NotIn" if values.is_empty() => Some(format!(
            "{path}: operator {} needs at least one value",
            req.operator
        )),
        "Exists" | "DoesNotExist" if !values.is_empty() => {
            Some(format!("{path}: operator {} takes no values", req.operator))
        }
        "Gt" | "Lt" => match values {
            [v] if v.parse::<i64>().is_ok() => None,
            _ => Some(format!(
                "{path}: operator {} needs exactly one integer value",
                req.operator
            )),
        },
        "In" | "NotIn" | "Exists" | "DoesNotExist" => None,
        other => Some(format!(
            "{path}: unknown operator {other:?} (expected In, NotIn, Exists, DoesNotExist, Gt or Lt)"
        )),
    }
}
