//! A structural check of an OpenAPI 3.1 document: the parts a generator or validator trips
//! over first (version, operations with responses, unique operation ids, declared path
//! parameters, resolvable `$ref`s).

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

const METHODS: [&str; 8] = [
    "get", "put", "post", "delete", "patch", "head", "options", "trace",
];

/// The `{name}` templates of a path, in order.
pub fn path_templates(path: &str) -> Vec<&str> {
    let mut names = Vec::new();
    let mut rest = path;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else { break };
        names.push(&after[..end]);
        rest = &after[end + 1..];
    }
    names
}

fn collect_refs<'a>(value: &'a Value, at: String, out: &mut Vec<(String, &'a str)>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                if key == "$ref"
                    && let Some(target) = child.as_str()
                {
                    out.push((at.clone(), target));
                }
                collect_refs(child, format!("{at}/{key}"), out);
            }
        }
        Value::Array(items) => {
            for (i, child) in items.iter().enumerate() {
                collect_refs(child, format!("{at}/{i}"), out);
            }
        }
        _ => {}
    }
}

fn path_params<'a>(item: &'a Value, operation: &'a Value) -> BTreeMap<&'a str, &'a Value> {
    let mut params = BTreeMap::new();
    for list in [item.get("parameters"), operation.get("parameters")]
        .into_iter()
        .flatten()
        .filter_map(Value::as_array)
    {
        for p in list {
            if p.get("in").and_then(Value::as_str) == Some("path")
                && let Some(name) = p.get("name").and_then(Value::as_str)
            {
                params.insert(name, p);
            }
        }
    }
    params
}

/// Every structural problem of `doc`; empty when it passes.
pub fn check_structure(doc: &Value) -> Vec<String> {
    let mut problems = Vec::new();
    match doc.get("openapi").and_then(Value::as_str) {
        Some(v) if v.starts_with("3.1.") => {}
        other => problems.push(format!("openapi is {other:?}, expected 3.1.x")),
    }
    for field in ["title", "version"] {
        if doc
            .pointer(&format!("/info/{field}"))
            .and_then(Value::as_str)
            .is_none()
        {
            problems.push(format!("info.{field} is missing"));
        }
    }
    let mut operation_ids = BTreeSet::new();
    match doc.get("paths").and_then(Value::as_object) {
        None => problems.push("paths is missing".into()),
        Some(paths) if paths.is_empty() => problems.push("paths is empty".into()),
        Some(paths) => {
            for (path, item) in paths {
                if !path.starts_with('/') {
                    problems.push(format!("path {path} does not start with /"));
                }
                let templates: BTreeSet<&str> = path_templates(path).into_iter().collect();
                let mut any = false;
                for method in METHODS {
                    let Some(operation) = item.get(method) else {
                        continue;
                    };
                    any = true;
                    let at = format!("{} {path}", method.to_ascii_uppercase());
                    match operation.get("responses").and_then(Value::as_object) {
                        Some(r) if !r.is_empty() => {}
                        _ => problems.push(format!("{at} has no responses")),
                    }
                    match operation.get("operationId").and_then(Value::as_str) {
                        Some(id) => {
                            if !operation_ids.insert(id.to_owned()) {
                                problems.push(format!("{at}: operationId {id} is not unique"));
                            }
                        }
                        None => problems.push(format!("{at} has no operationId")),
                    }
                    let params = path_params(item, operation);
                    for name in &templates {
                        match params.get(name) {
                            None => problems
                                .push(format!("{at}: path parameter {name} is not declared")),
                            Some(p) if p.get("required") != Some(&Value::Bool(true)) => problems
                                .push(format!("{at}: path parameter {name} is not required")),
                            Some(_) => {}
                        }
                    }
                    for name in params.keys() {
                        if !templates.contains(name) {
                            problems.push(format!("{at}: parameter {name} is not in the path"));
                        }
                    }
                }
                if !any {
                    problems.push(format!("path {path} has no operations"));
                }
            }
        }
    }
    let mut refs = Vec::new();
    collect_refs(doc, String::new(), &mut refs);
    for (at, target) in refs {
        let resolved = target
            .strip_prefix('#')
            .is_some_and(|pointer| doc.pointer(pointer).is_some());
        if !resolved {
            problems.push(format!("$ref {target} at {at} does not resolve"));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn valid() -> Value {
        json!({
            "openapi": "3.1.0",
            "info": {"title": "t", "version": "1"},
            "paths": {"/a/{x}": {"get": {
                "operationId": "A",
                "parameters": [{"name": "x", "in": "path", "required": true}],
                "responses": {"200": {"description": "ok",
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/S"}}}}}
            }}},
            "components": {"schemas": {"S": {"type": "object"}}}
        })
    }

    #[test]
    fn a_valid_document_passes() {
        assert_eq!(check_structure(&valid()), Vec::<String>::new());
    }

    #[test]
    fn each_defect_is_reported() {
        let cases: Vec<(&str, Value, &str)> = vec![
            ("/openapi", json!("3.0.3"), "expected 3.1.x"),
            ("/info", json!({}), "info.title is missing"),
            (
                "/paths/~1a~1{x}/get/responses",
                json!({}),
                "has no responses",
            ),
            (
                "/paths/~1a~1{x}/get/parameters",
                json!([]),
                "path parameter x is not declared",
            ),
            (
                "/paths/~1a~1{x}/get/parameters/0/required",
                json!(false),
                "is not required",
            ),
            ("/components/schemas", json!({}), "does not resolve"),
            (
                "/paths/~1a~1{x}/get/operationId",
                json!(null),
                "has no operationId",
            ),
        ];
        for (pointer, value, want) in cases {
            let mut doc = valid();
            *doc.pointer_mut(pointer).unwrap() = value;
            let problems = check_structure(&doc);
            assert!(
                problems.iter().any(|p| p.contains(want)),
                "{pointer}: {problems:?}"
            );
        }
        let mut doc = valid();
        doc["paths"]["/b"] = json!({"get": doc["paths"]["/a/{x}"]["get"].clone()});
        let problems = check_structure(&doc);
        assert!(
            problems.iter().any(|p| p.contains("not unique")),
            "{problems:?}"
        );
        assert!(
            problems
                .iter()
                .any(|p| p.contains("parameter x is not in the path")),
            "{problems:?}"
        );
    }

    #[test]
    fn templates_are_found_even_with_suffixes() {
        assert_eq!(path_templates("/a/{i}/b/{name}:pause"), ["i", "name"]);
        assert_eq!(path_templates("/plain"), Vec::<&str>::new());
    }
}
