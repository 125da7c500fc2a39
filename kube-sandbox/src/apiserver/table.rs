//! `meta.k8s.io/v1` Table output (what `kubectl get` asks for): a CRD's printer columns, a few
//! built-in kinds' columns, and NAME/AGE for everything else.

use crate::apiserver::resources::ResourceType;
use serde_json::{Value, json};

/// Whether the Accept header asks for a Table.
pub fn wants_table(accept: &str) -> bool {
    accept
        .split(',')
        .next()
        .is_some_and(|first| first.contains("as=Table"))
}

struct Column {
    name: String,
    kind: String,
    path: String,
}

fn columns(rt: &ResourceType) -> Vec<Column> {
    let col = |name: &str, kind: &str, path: &str| Column {
        name: name.into(),
        kind: kind.into(),
        path: path.into(),
    };
    if let Some(custom) = &rt.custom
        && let Some(cols) = custom.printer_columns.as_array()
        && !cols.is_empty()
    {
        return cols
            .iter()
            .map(|c| Column {
                name: c["name"].as_str().unwrap_or("").to_string(),
                kind: c["type"].as_str().unwrap_or("string").to_string(),
                path: c["jsonPath"].as_str().unwrap_or("").to_string(),
            })
            .collect();
    }
    match (rt.group.as_str(), rt.plural.as_str()) {
        ("", "pods") => vec![
            col("Status", "string", ".status.phase"),
            col("Node", "string", ".spec.nodeName"),
            col("IP", "string", ".status.podIP"),
            col("Age", "date", ".metadata.creationTimestamp"),
        ],
        ("", "nodes") => vec![
            col(
                "Status",
                "string",
                ".status.conditions[?(@.type==\"Ready\")].status",
            ),
            col("Age", "date", ".metadata.creationTimestamp"),
            col("Version", "string", ".status.nodeInfo.kubeletVersion"),
        ],
        ("", "namespaces") => vec![
            col("Status", "string", ".status.phase"),
            col("Age", "date", ".metadata.creationTimestamp"),
        ],
        _ => vec![col("Age", "date", ".metadata.creationTimestamp")],
    }
}

/// Evaluates the JSONPath subset printer columns use: `.a.b`, `.a[0]`, `.a[?(@.k=="v")].f`.
pub fn eval_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    let mut rest = path.trim_start_matches('{').trim_end_matches('}');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim_matches(['"', '\'']);
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|item| item.get(key).and_then(Value::as_str) == Some(want))?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(cur)
}

/// The Table for these objects.
pub fn table(rt: &ResourceType, objects: &[&Value], resource_version: &str) -> Value {
    let cols = columns(rt);
    let mut defs = vec![json!({"name": "Name", "type": "string", "format": "name",
        "description": "Name must be unique within a namespace.", "priority": 0})];
    defs.extend(cols.iter().map(|c| {
        json!({"name": c.name, "type": c.kind, "format": "", "description": c.path, "priority": 0})
    }));
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let mut cells = vec![
                obj.pointer("/metadata/name")
                    .cloned()
                    .unwrap_or(Value::Null),
            ];
            cells.extend(
                cols.iter()
                    .map(|c| eval_path(obj, &c.path).cloned().unwrap_or(Value::Null)),
            );
            json!({
                "cells": cells,
                "object": {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                    "metadata": obj.get("metadata").cloned().unwrap_or_default()},
            })
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": resource_version},
        "columnDefinitions": defs,
        "rows": rows,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_evaluate() {
        let obj = json!({"spec": {"clusterID": "c1", "list": [{"a": 1}]},
            "status": {"conditions": [{"type": "Other", "status": "x"}, {"type": "Ready", "status": "True"}]}});
        let cases = [
            (".spec.clusterID", Some(json!("c1"))),
            (".spec.list[0].a", Some(json!(1))),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                Some(json!("True")),
            ),
            (".spec.missing", None),
            ("{.spec.clusterID}", Some(json!("c1"))),
        ];
        for (path, want) in cases {
            assert_eq!(eval_path(&obj, path).cloned(), want, "{path}");
        }
    }

    #[test]
    fn accept_headers() {
        assert!(wants_table(
            "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"
        ));
        assert!(!wants_table("application/json"));
    }
}
