//! x-kubernetes-validations: CEL rules run against objects.

use super::*;

pub(super) fn cel_node(
    schema: &Value,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    root: bool,
    out: &mut Vec<FieldError>,
) {
    if value.is_null() || !schema.is_object() {
        return;
    }
    if let Some(Value::Array(rules)) = schema.get(VALIDATIONS) {
        let unchanged = old.is_some_and(|o| json_equal(o, value));
        let mut self_value: Option<CelValue> = None;
        let mut old_value: Option<CelValue> = None;
        for rule in rules {
            let Some(text) = str_of(rule, "rule") else {
                continue;
            };
            if flag(rule, "optionalOldSelf") {
                continue;
            }
            let Ok(program) = cel::compile(text) else {
                continue;
            };
            let old_self = match (program.uses_old_self(), old) {
                (true, None) => continue,
                (true, Some(o)) => {
                    Some(&*old_value.get_or_insert_with(|| cel_input(schema, o, root)))
                }
                (false, _) if unchanged => continue,
                (false, _) => None,
            };
            let this = self_value.get_or_insert_with(|| cel_input(schema, value, root));
            match program.eval(this, old_self) {
                Ok(CelValue::Bool(false)) => out.push(rule_failure(schema, rule, text, path)),
                Err(EvalError::Runtime(msg)) => out.push(FieldError::invalid(
                    nil_if_empty(path),
                    Some(Value::String(
                        str_of(schema, "type").unwrap_or_default().to_string(),
                    )),
                    format!("{msg} evaluating rule: {}", rule_error_string(rule, text)),
                )),
                // True, a non-bool result (a CRD the apiserver would have rejected) or
                // something outside the supported subset.
                _ => {}
            }
        }
    }
    let old_map = old.and_then(Value::as_object);
    match value {
        Value::Object(map) => {
            for (key, child) in sorted_entries(map) {
                let old_child = old_map.and_then(|o| o.get(key));
                if let Some(prop) = properties(schema).and_then(|p| p.get(key)) {
                    if !(root && key == "metadata") {
                        cel_node(prop, child, old_child, &path_child(path, key), false, out);
                    }
                } else if let Some(extra) = additional_schema(schema) {
                    cel_node(extra, child, old_child, &path_sub(path, key), false, out);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = items_schema(schema) {
                for (i, item) in items.iter().enumerate() {
                    // Only list-type map items correlate with old items for CEL.
                    let old_item = if str_of(schema, LIST_TYPE) == Some("map") {
                        correlate_item(schema, old, item)
                    } else {
                        None
                    };
                    cel_node(item_schema, item, old_item, &path_sub(path, i), false, out);
                }
            }
        }
        _ => {}
    }
}

/// `self` for a rule; at the resource root `metadata` only exposes `name` and `generateName`.
pub(super) fn cel_input(schema: &Value, value: &Value, root: bool) -> CelValue {
    if root
        && let Value::Object(map) = value
        && let Some(Value::Object(meta)) = map.get("metadata")
    {
        let mut copy = map.clone();
        let visible: Map<String, Value> = meta
            .iter()
            .filter(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName")
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        copy.insert("metadata".into(), Value::Object(visible));
        return cel::value_from_json(Some(schema), &Value::Object(copy));
    }
    cel::value_from_json(Some(schema), value)
}

pub(super) fn rule_error_string(rule: &Value, text: &str) -> String {
    match str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => m.to_string(),
        None => text.trim().to_string(),
    }
}

pub(super) fn rule_failure(schema: &Value, rule: &Value, text: &str, path: &str) -> FieldError {
    let message = match str_of(rule, "message")
        .map(str::trim)
        .filter(|m| !m.is_empty())
    {
        Some(m) => m.to_string(),
        None => format!("failed rule: {}", text.trim()),
    };
    let mut field = path.to_string();
    if let Some(extra) = str_of(rule, "fieldPath").and_then(normalize_field_path) {
        field = if field.is_empty() {
            extra
        } else if extra.starts_with('[') {
            format!("{field}{extra}")
        } else {
            format!("{field}.{extra}")
        };
    }
    let field = nil_if_empty(&field);
    let type_value = Value::String(str_of(schema, "type").unwrap_or_default().to_string());
    match str_of(rule, "reason") {
        Some("FieldValueForbidden") => FieldError::forbidden(field, message),
        Some("FieldValueRequired") => FieldError::required(field, message),
        Some("FieldValueDuplicate") => FieldError::duplicate(field, type_value),
        _ => FieldError::invalid(field, Some(type_value), message),
    }
}

/// Turns a rule `fieldPath` (`.spec.name`, `.labels['a.b']`, `.list[0]`) into field-path text
/// without the leading dot; `None` if it is not of that shape.
pub(super) fn normalize_field_path(fp: &str) -> Option<String> {
    let mut out = String::new();
    let mut rest = fp.trim();
    if rest.is_empty() {
        return None;
    }
    while !rest.is_empty() {
        if let Some(after) = rest.strip_prefix('.') {
            let end = after.find(['.', '[']).unwrap_or(after.len());
            let name = &after[..end];
            if name.is_empty() {
                return None;
            }
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(name);
            rest = &after[end..];
        } else if let Some(after) = rest.strip_prefix('[') {
            let close = after.find(']')?;
            let inner = after[..close].trim();
            let key = inner
                .strip_prefix('\'')
                .and_then(|k| k.strip_suffix('\''))
                .or_else(|| inner.strip_prefix('"').and_then(|k| k.strip_suffix('"')))
                .unwrap_or(inner);
            out.push('[');
            out.push_str(key);
            out.push(']');
            rest = &after[close + 1..];
        } else {
            return None;
        }
    }
    Some(out)
}

/// The `x-kubernetes-validations` rules [`validate_object`] skips because they do not compile
/// in the supported CEL subset (or use `optionalOldSelf`), as
/// `<schema path>.x-kubernetes-validations[i]: <rule>: <reason>` lines.
pub fn unsupported_rules(schema: &Value) -> Vec<String> {
    let mut out = Vec::new();
    collect_unsupported(schema, "", &mut out);
    out
}

pub(super) fn collect_unsupported(schema: &Value, path: &str, out: &mut Vec<String>) {
    if !schema.is_object() {
        return;
    }
    if let Some(Value::Array(rules)) = schema.get(VALIDATIONS) {
        for (i, rule) in rules.iter().enumerate() {
            let at = path_sub(&path_child(path, VALIDATIONS), i);
            let text = str_of(rule, "rule").unwrap_or_default();
            let problem = if flag(rule, "optionalOldSelf") {
                Some("optionalOldSelf is not supported".to_string())
            } else {
                cel::compile(text).err().map(|e| e.to_string())
            };
            if let Some(problem) = problem {
                out.push(format!("{at}: {text}: {problem}"));
            }
        }
    }
    if let Some(props) = properties(schema) {
        for (key, prop) in props {
            collect_unsupported(prop, &path_sub(&path_child(path, "properties"), key), out);
        }
    }
    if let Some(items) = items_schema(schema) {
        collect_unsupported(items, &path_child(path, "items"), out);
    }
    if let Some(extra) = additional_schema(schema) {
        collect_unsupported(extra, &path_child(path, "additionalProperties"), out);
    }
}
