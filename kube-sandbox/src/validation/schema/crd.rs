//! CRD schema validation: structural-schema and CRD-API checks.

use super::*;

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Level {
    Root,
    Item,
    Field,
}

pub(super) const SCHEMA_TYPES: [&str; 6] =
    ["array", "boolean", "integer", "number", "object", "string"];

/// Checks a CRD version's `openAPIV3Schema` as the apiserver does when the CRD is created or
/// updated. Field paths are relative to the schema (`properties[spec].type`; `type` for the root
/// itself); see [`FieldError::with_prefix`]. The list is sorted like the apiserver's.
pub fn validate_crd_schema(schema: &Value) -> Vec<FieldError> {
    let mut errors = Vec::new();
    if !schema.is_object() {
        errors.push(FieldError::required(NIL_FIELD, "must be a schema object"));
        return errors;
    }
    check_schema_node(schema, "", Level::Root, false, &mut errors);
    errors.sort_by_key(FieldError::to_string_k8s);
    errors.dedup();
    errors
}

pub(super) fn check_schema_node(
    schema: &Value,
    path: &str,
    level: Level,
    inside_meta: bool,
    out: &mut Vec<FieldError>,
) {
    let Some(node) = schema.as_object() else {
        out.push(FieldError::invalid(
            nil_if_empty(path),
            Some(schema.clone()),
            "must be a schema object",
        ));
        return;
    };
    let at = |name: &str| path_child(path, name);
    check_generic_keywords(schema, path, out);

    let ty = str_of(schema, "type").unwrap_or_default();
    let int_or_string = flag(schema, INT_OR_STRING);
    let preserve = node.get(PRESERVE);
    let embedded = flag(schema, EMBEDDED);

    if let Some(Value::Bool(false)) = preserve {
        out.push(FieldError::invalid(
            at(PRESERVE),
            Some(Value::Bool(false)),
            "must be true or undefined",
        ));
    }
    if int_or_string && flag(schema, PRESERVE) {
        out.push(FieldError::invalid(
            at(PRESERVE),
            Some(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if int_or_string && embedded {
        out.push(FieldError::invalid(
            at(EMBEDDED),
            Some(Value::Bool(true)),
            "must be false if x-kubernetes-int-or-string is true",
        ));
    }
    if embedded && ty != "object" {
        if ty.is_empty() {
            out.push(FieldError::required(
                at("type"),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        } else {
            out.push(FieldError::invalid(
                at("type"),
                Some(Value::String(ty.into())),
                "must be object if x-kubernetes-embedded-resource is true",
            ));
        }
    } else if ty.is_empty() && !int_or_string && !flag(schema, PRESERVE) {
        let detail = match level {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        out.push(FieldError::required(at("type"), detail));
    }
    if embedded && !flag(schema, PRESERVE) && properties(schema).is_none_or(Map::is_empty) {
        out.push(FieldError::required(
            at("properties"),
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        ));
    }
    if level == Level::Root && !ty.is_empty() && ty != "object" {
        out.push(FieldError::invalid(
            at("type"),
            Some(Value::String(ty.into())),
            "must be object at the root",
        ));
    }
    if ty == "array" && node.get("items").is_none() {
        out.push(FieldError::required(at("items"), "must be specified"));
    }

    // additionalProperties
    if let Some(extra) = node.get("additionalProperties") {
        if level == Level::Root {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "must not be used at the root",
            ));
        }
        if embedded {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "must not be used if x-kubernetes-embedded-resource is set",
            ));
        }
        let has_props = properties(schema).is_some_and(|p| !p.is_empty());
        if has_props && !matches!(extra, Value::Bool(true)) {
            out.push(FieldError::forbidden(
                at("additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            ));
        }
        if extra.is_object() {
            check_schema_node(
                extra,
                &at("additionalProperties"),
                Level::Field,
                inside_meta,
                out,
            );
        }
    }

    // Root kind/apiVersion/metadata.
    if level == Level::Root || embedded {
        check_meta_types(schema, path, out);
    }
    if level == Level::Root
        && let Some(meta) = properties(schema).and_then(|p| p.get("metadata"))
        && !metadata_schema_allowed(meta)
    {
        out.push(FieldError::forbidden(
            path_sub(&at("properties"), "metadata"),
            "must not specify anything other than name and generateName, but metadata is implicitly specified",
        ));
    }

    check_list_and_map_types(schema, path, out);
    check_validation_rules(schema, path, out);

    if let Some(default) = node.get("default") {
        if inside_meta {
            out.push(FieldError::forbidden(
                at("default"),
                "must not be set inside metadata",
            ));
        } else {
            check_default(schema, default, &at("default"), out);
        }
    }

    // Value validations.
    let skip_any_of = is_int_or_string_any_of(schema.get("anyOf"));
    let skip_first_all_of_any_of = schema
        .get("allOf")
        .and_then(Value::as_array)
        .and_then(|a| a.first())
        .is_some_and(|first| is_int_or_string_any_of(first.get("anyOf")));
    check_value_validation(schema, path, skip_any_of, skip_first_all_of_any_of, out);
    check_completeness(schema, schema, path, path, out);

    // Children.
    if let Some(props) = properties(schema) {
        for (key, prop) in props {
            let child_path = path_sub(&at("properties"), key);
            let child_meta = inside_meta || (level == Level::Root && key == "metadata");
            check_schema_node(prop, &child_path, Level::Field, child_meta, out);
        }
    }
    match node.get("items") {
        Some(items @ Value::Object(_)) => {
            check_schema_node(items, &at("items"), Level::Item, inside_meta, out)
        }
        Some(Value::Array(_)) => out.push(FieldError::forbidden(
            at("items"),
            "items must be a schema object and not an array",
        )),
        _ => {}
    }
}

pub(super) fn check_generic_keywords(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let at = |name: &str| path_child(path, name);
    for (key, what) in [
        ("$ref", "$ref is not supported"),
        ("id", "id is not supported"),
        ("additionalItems", "additionalItems is not supported"),
        ("patternProperties", "patternProperties is not supported"),
        ("definitions", "definitions is not supported"),
        ("dependencies", "dependencies is not supported"),
    ] {
        if schema.get(key).is_some_and(|v| !v.is_null()) {
            out.push(FieldError::forbidden(at(key), what));
        }
    }
    if let Some(ty) = schema.get("type") {
        match ty.as_str() {
            Some("null") => out.push(FieldError::forbidden(
                at("type"),
                "type cannot be set to null, use nullable as an alternative",
            )),
            Some(t) if !SCHEMA_TYPES.contains(&t) => {
                let supported: Vec<String> = SCHEMA_TYPES.iter().map(|s| s.to_string()).collect();
                out.push(FieldError::not_supported(
                    at("type"),
                    ty.clone(),
                    &supported,
                ));
            }
            Some(_) => {}
            None => out.push(FieldError::invalid(
                at("type"),
                Some(ty.clone()),
                "must be a string",
            )),
        }
    }
    if flag(schema, "uniqueItems") {
        out.push(FieldError::forbidden(
            at("uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        ));
    }
    if let Some(pattern) = str_of(schema, "pattern")
        && let Err(e) = cached_regex(pattern)
    {
        out.push(FieldError::invalid(
            at("pattern"),
            Some(Value::String(pattern.into())),
            format!(
                "must be a valid regular expression, but isn't: {}",
                regex_error_text(&e, pattern)
            ),
        ));
    }
}

pub(super) fn check_meta_types(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(props) = properties(schema) else {
        return;
    };
    for (key, want) in [
        ("kind", "string"),
        ("apiVersion", "string"),
        ("metadata", "object"),
    ] {
        if let Some(prop) = props.get(key) {
            let ty = str_of(prop, "type").unwrap_or_default();
            if ty != want {
                out.push(FieldError::invalid(
                    path_child(&path_sub(&path_child(path, "properties"), key), "type"),
                    Some(Value::String(ty.into())),
                    format!("must be {want}"),
                ));
            }
        }
    }
}

/// Root `metadata` may only say it is an object and constrain `name`/`generateName`.
pub(super) fn metadata_schema_allowed(meta: &Value) -> bool {
    let Some(node) = meta.as_object() else {
        return false;
    };
    node.iter().all(|(k, v)| match k.as_str() {
        // The default is checked on its own; nothing else may be said about metadata (not even a
        // description: the structural schema keeps it, so the apiserver refuses it).
        "type" | "default" => true,
        "nullable" => v == &Value::Bool(false),
        "properties" => v
            .as_object()
            .is_some_and(|p| p.keys().all(|k| k == "name" || k == "generateName")),
        _ => false,
    })
}

pub(super) fn check_list_and_map_types(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let at = |name: &str| path_child(path, name);
    let ty = str_of(schema, "type").unwrap_or_default();
    let list_type = schema.get(LIST_TYPE);
    let map_keys = schema.get(LIST_MAP_KEYS).and_then(Value::as_array);
    if let Some(lt) = list_type {
        let supported = ["atomic", "set", "map"];
        match lt.as_str() {
            Some(s) if supported.contains(&s) => {
                if ty != "array" {
                    out.push(FieldError::invalid(
                        at(LIST_TYPE),
                        Some(lt.clone()),
                        "must only be used if type is array",
                    ));
                }
            }
            _ => {
                let supported: Vec<String> = supported.iter().map(|s| s.to_string()).collect();
                out.push(FieldError::not_supported(
                    at(LIST_TYPE),
                    lt.clone(),
                    &supported,
                ));
            }
        }
    }
    let is_map = list_type.and_then(Value::as_str) == Some("map");
    if map_keys.is_some_and(|k| !k.is_empty()) && !is_map {
        out.push(FieldError::invalid(
            at(LIST_TYPE),
            list_type.cloned(),
            "must be map if x-kubernetes-list-map-keys is non-empty",
        ));
    }
    let items = items_schema(schema);
    if is_map {
        match map_keys.filter(|k| !k.is_empty()) {
            None => out.push(FieldError::required(
                at(LIST_MAP_KEYS),
                "must not be empty if x-kubernetes-list-type is map",
            )),
            Some(keys) => {
                if let Some(items) = items {
                    if str_of(items, "type") != Some("object") {
                        out.push(FieldError::invalid(
                            path_child(&at("items"), "type"),
                            items.get("type").cloned(),
                            "must be object if parent array's x-kubernetes-list-type is map",
                        ));
                    } else {
                        check_map_keys(items, keys, path, out);
                    }
                }
            }
        }
    }
    if list_type.and_then(Value::as_str) == Some("set")
        && let Some(items) = items
        && str_of(items, "type") == Some("object")
        && str_of(items, MAP_TYPE) != Some("atomic")
    {
        out.push(FieldError::invalid(
            path_child(&at("items"), MAP_TYPE),
            items.get(MAP_TYPE).cloned(),
            "must be atomic as item of a list with x-kubernetes-list-type=set",
        ));
    }
    if let Some(mt) = schema.get(MAP_TYPE) {
        match mt.as_str() {
            Some("atomic" | "granular") => {
                if ty != "object" {
                    out.push(FieldError::invalid(
                        at(MAP_TYPE),
                        Some(mt.clone()),
                        "must only be used if type is object",
                    ));
                }
            }
            _ => {
                let supported = vec!["granular".to_string(), "atomic".to_string()];
                out.push(FieldError::not_supported(
                    at(MAP_TYPE),
                    mt.clone(),
                    &supported,
                ));
            }
        }
    }
}

pub(super) fn check_map_keys(items: &Value, keys: &[Value], path: &str, out: &mut Vec<FieldError>) {
    let at = path_child(path, LIST_MAP_KEYS);
    let required: Vec<&str> = items
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for key in keys {
        let Some(name) = key.as_str() else {
            out.push(FieldError::invalid(
                at.clone(),
                Some(key.clone()),
                "must be a string",
            ));
            continue;
        };
        let Some(prop) = properties(items).and_then(|p| p.get(name)) else {
            out.push(FieldError::invalid(
                at.clone(),
                Some(Value::Array(keys.to_vec())),
                "entries must all be names of item properties",
            ));
            continue;
        };
        if !matches!(
            str_of(prop, "type"),
            Some("string" | "integer" | "number" | "boolean")
        ) && !flag(prop, INT_OR_STRING)
        {
            out.push(FieldError::invalid(
                path_child(
                    &path_sub(&path_child(&path_child(path, "items"), "properties"), name),
                    "type",
                ),
                prop.get("type").cloned(),
                "must be a scalar type if parent array's x-kubernetes-list-type is map",
            ));
        }
        if !required.contains(&name) && prop.get("default").is_none() {
            out.push(FieldError::required(
                path_child(&path_sub(&path_child(&path_child(path, "items"), "properties"), name), "default"),
                "this property is in x-kubernetes-list-map-keys, so it must have a default or be a required property",
            ));
        }
    }
}

pub(super) fn check_validation_rules(schema: &Value, path: &str, out: &mut Vec<FieldError>) {
    let Some(rules) = schema.get(VALIDATIONS) else {
        return;
    };
    let Some(rules) = rules.as_array() else {
        out.push(FieldError::invalid(
            path_child(path, VALIDATIONS),
            Some(rules.clone()),
            "must be a list",
        ));
        return;
    };
    let reasons = [
        "FieldValueRequired",
        "FieldValueForbidden",
        "FieldValueInvalid",
        "FieldValueDuplicate",
    ];
    for (i, rule) in rules.iter().enumerate() {
        let at = path_sub(&path_child(path, VALIDATIONS), i);
        if str_of(rule, "rule").is_none_or(|r| r.trim().is_empty()) {
            out.push(FieldError::required(path_child(&at, "rule"), ""));
        }
        if let Some(reason) = rule.get("reason")
            && !reason.as_str().is_some_and(|r| reasons.contains(&r))
        {
            let supported: Vec<String> = reasons.iter().map(|s| s.to_string()).collect();
            out.push(FieldError::not_supported(
                path_child(&at, "reason"),
                reason.clone(),
                &supported,
            ));
        }
        if let Some(fp) = str_of(rule, "fieldPath")
            && normalize_field_path(fp).is_none()
        {
            out.push(FieldError::invalid(
                path_child(&at, "fieldPath"),
                Some(Value::String(fp.into())),
                "fieldPath must be a valid path",
            ));
        }
    }
}

/// A default must survive pruning unchanged and validate against its own schema (after the
/// defaults nested inside it are applied, as they would be on a real object).
pub(super) fn check_default(
    schema: &Value,
    default: &Value,
    path: &str,
    out: &mut Vec<FieldError>,
) {
    let mut copy = default.clone();
    if !prune_subtree(schema, &mut copy).is_empty() {
        out.push(FieldError::invalid(
            path,
            Some(default.clone()),
            "must not have unknown fields",
        ));
        return;
    }
    default_node(schema, &mut copy);
    let validator = OpenApi { prefix: Some(path) };
    validator.node(schema, &copy, None, "", false, out);
}

pub(super) fn prune_subtree(schema: &Value, v: &mut Value) -> Vec<String> {
    let mut pruned = Vec::new();
    prune_node(Some(schema), v, "", false, &mut pruned);
    pruned
}

pub(super) fn is_int_or_string_any_of(any_of: Option<&Value>) -> bool {
    let Some(Value::Array(branches)) = any_of else {
        return false;
    };
    branches.len() == 2
        && branches.iter().zip(["integer", "string"]).all(|(b, t)| {
            b.as_object()
                .is_some_and(|o| o.len() == 1 && o.get("type").and_then(Value::as_str) == Some(t))
        })
}

/// `allOf`/`anyOf`/`oneOf`/`not` may only hold value validations.
pub(super) fn check_value_validation(
    schema: &Value,
    path: &str,
    skip_any_of: bool,
    skip_first_all_of_any_of: bool,
    out: &mut Vec<FieldError>,
) {
    for (junction, skip) in [("anyOf", skip_any_of), ("allOf", false), ("oneOf", false)] {
        if skip {
            continue;
        }
        if let Some(Value::Array(branches)) = schema.get(junction) {
            for (i, branch) in branches.iter().enumerate() {
                let skip_nested_any_of = junction == "allOf" && i == 0 && skip_first_all_of_any_of;
                check_nested_value_validation(
                    branch,
                    &path_sub(&path_child(path, junction), i),
                    skip_nested_any_of,
                    out,
                );
            }
        }
    }
    if let Some(not) = schema.get("not") {
        check_nested_value_validation(not, &path_child(path, "not"), false, out);
    }
}

pub(super) fn check_nested_value_validation(
    v: &Value,
    path: &str,
    skip_any_of: bool,
    out: &mut Vec<FieldError>,
) {
    let at = |name: &str| path_child(path, name);
    if !v.is_object() {
        out.push(FieldError::invalid(
            path,
            Some(v.clone()),
            "must be a schema object",
        ));
        return;
    }
    check_generic_keywords(v, path, out);
    check_value_validation(v, path, skip_any_of, false, out);
    if let Some(items) = v.get("items") {
        check_nested_value_validation(items, &at("items"), false, out);
    }
    if let Some(props) = properties(v) {
        for (key, prop) in props {
            check_nested_value_validation(prop, &path_sub(&at("properties"), key), false, out);
        }
        if props.contains_key("metadata") {
            out.push(FieldError::forbidden(
                path_sub(&at("properties"), "metadata"),
                "must not be specified in a nested context",
            ));
        }
    }
    for (key, detail) in [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        (LIST_MAP_KEYS, "must be empty to be structural"),
        (LIST_TYPE, "must be undefined to be structural"),
    ] {
        if v.get(key).is_some_and(|x| !x.is_null()) {
            out.push(FieldError::forbidden(at(key), detail));
        }
    }
    for key in ["nullable", PRESERVE, EMBEDDED, INT_OR_STRING] {
        if flag(v, key) {
            out.push(FieldError::forbidden(
                at(key),
                "must be false to be structural",
            ));
        }
    }
}

/// Every property or items schema named inside a value validation must exist in the structural
/// schema at the same place.
pub(super) fn check_completeness(
    value_node: &Value,
    structural: &Value,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
) {
    for junction in ["allOf", "anyOf", "oneOf"] {
        if let Some(Value::Array(branches)) = value_node.get(junction) {
            for (i, branch) in branches.iter().enumerate() {
                nested_completeness(
                    branch,
                    Some(structural),
                    s_path,
                    &path_sub(&path_child(v_path, junction), i),
                    out,
                );
            }
        }
    }
    if let Some(not) = value_node.get("not") {
        nested_completeness(
            not,
            Some(structural),
            s_path,
            &path_child(v_path, "not"),
            out,
        );
    }
}

pub(super) fn nested_completeness(
    v: &Value,
    structural: Option<&Value>,
    s_path: &str,
    v_path: &str,
    out: &mut Vec<FieldError>,
) {
    let Some(s) = structural else {
        out.push(FieldError::required(
            nil_if_empty(s_path),
            format!("because it is defined in {v_path}"),
        ));
        return;
    };
    check_completeness(v, s, s_path, v_path, out);
    if let Some(items) = v.get("items") {
        nested_completeness(
            items,
            items_schema(s),
            &path_child(s_path, "items"),
            &path_child(v_path, "items"),
            out,
        );
    }
    if let Some(props) = properties(v) {
        for (key, prop) in props {
            let s_child = path_sub(&path_child(s_path, "properties"), key);
            let v_child = path_sub(&path_child(v_path, "properties"), key);
            match properties(s).and_then(|p| p.get(key)) {
                Some(sp) => nested_completeness(prop, Some(sp), &s_child, &v_child, out),
                None => out.push(FieldError::required(
                    s_child,
                    format!("because it is defined in {v_child}"),
                )),
            }
        }
    }
}
