//! Object validation against a schema, as kube-openapi does it.

use super::*;

/// Validates a custom resource against the schema as the apiserver does on create (`old` is
/// `None`) or update (`old` is the stored object): OpenAPI value validation, list-type
/// uniqueness, then the CEL rules. Call it after [`prune_unknown`] and [`default_object`].
pub fn validate_object(schema: &Value, obj: &Value, old: Option<&Value>) -> Vec<FieldError> {
    let mut errors = Vec::new();
    let validator = OpenApi { prefix: None };
    validator.node(schema, obj, old, "", true, &mut errors);
    list_types(schema, obj, "", &mut errors);
    if !has_rules(schema) {
        return errors;
    }
    if errors.iter().any(is_blocking) {
        errors.push(FieldError::invalid(
            NIL_FIELD,
            None,
            "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation",
        ));
    } else {
        cel_node(schema, obj, old, "", true, &mut errors);
    }
    errors
}

/// Whether any node of the schema carries `x-kubernetes-validations` (the apiserver only has a
/// CEL validator then).
pub(super) fn has_rules(schema: &Value) -> bool {
    schema
        .get(VALIDATIONS)
        .and_then(Value::as_array)
        .is_some_and(|r| !r.is_empty())
        || properties(schema).is_some_and(|p| p.values().any(has_rules))
        || items_schema(schema).is_some_and(has_rules)
        || additional_schema(schema).is_some_and(has_rules)
}

/// Errors after which the apiserver does not run CEL rules.
pub(super) fn is_blocking(e: &FieldError) -> bool {
    matches!(
        e.kind,
        FieldErrorKind::NotSupported
            | FieldErrorKind::Required
            | FieldErrorKind::TooLong
            | FieldErrorKind::TooMany
            | FieldErrorKind::TypeInvalid
    )
}

/// kube-openapi's schema validator, with its errors converted to field errors the way the
/// apiextensions apiserver converts them.
pub(super) struct OpenApi<'p> {
    /// Field path in front of every error (set when validating a `default`).
    pub(super) prefix: Option<&'p str>,
}

impl OpenApi<'_> {
    pub(super) fn field(&self, name: &str) -> String {
        match (self.prefix, name.is_empty()) {
            (None, true) => NIL_FIELD.to_string(),
            (None, false) => name.to_string(),
            (Some(p), true) => p.to_string(),
            (Some(p), false) => format!("{p}.{name}"),
        }
    }

    pub(super) fn type_error(&self, name: &str, expected: &str, actual: &str) -> FieldError {
        FieldError::type_invalid(
            self.field(name),
            Some(Value::String(actual.to_string())),
            format!(
                "{name} in body must be of type {expected}: {}",
                go_quote(actual)
            ),
        )
    }

    /// An error kube-openapi does not attribute to a field (anyOf/oneOf/allOf/not summaries).
    pub(super) fn composite(&self, message: String) -> FieldError {
        FieldError::invalid(self.field(""), Some(Value::String(String::new())), message)
    }

    pub(super) fn node(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        // Ratcheting: an unchanged value keeps passing even if the schema got stricter.
        if old.is_some_and(|o| json_equal(o, value)) {
            return;
        }
        if !schema.is_object() {
            return;
        }
        let types = schema_types(schema);
        if value.is_null() {
            if !types.is_empty() && !flag(schema, "nullable") {
                out.push(self.type_error(name, &types.join(","), "null"));
            }
            return;
        }
        if !types.is_empty() && !type_matches(&types, value) {
            out.push(self.type_error(name, &types.join(","), json_type(value)));
            return;
        }
        self.junctions(schema, value, old, name, root, out);
        match value {
            Value::String(s) => self.string(schema, s, value, name, out),
            Value::Number(n) => self.number(schema, n, value, name, out),
            Value::Array(items) => self.array(schema, items, old, name, out),
            _ => {}
        }
        if let Some(Value::Array(allowed)) = schema.get("enum")
            && !allowed.iter().any(|a| json_equal(a, value))
        {
            let supported: Vec<String> = allowed
                .iter()
                .map(|a| match a {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                })
                .collect();
            out.push(FieldError::not_supported(
                self.field(name),
                value.clone(),
                &supported,
            ));
        }
        if let Value::Object(map) = value {
            self.object(schema, map, old, name, root, out);
        }
    }

    pub(super) fn branch(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
    ) -> Vec<FieldError> {
        let mut errs = Vec::new();
        self.node(schema, value, old, name, root, &mut errs);
        errs
    }

    pub(super) fn junctions(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        let quoted = go_quote(name);
        if let Some(Value::Array(any_of)) = schema.get("anyOf")
            && !any_of.is_empty()
        {
            let results: Vec<Vec<FieldError>> = any_of
                .iter()
                .map(|s| self.branch(s, value, old, name, root))
                .collect();
            if !results.iter().any(Vec::is_empty) {
                out.push(self.composite(format!(
                    "{quoted} must validate at least one schema (anyOf)"
                )));
                if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                    out.extend(best);
                }
            }
        }
        if let Some(Value::Array(one_of)) = schema.get("oneOf")
            && !one_of.is_empty()
        {
            let results: Vec<Vec<FieldError>> = one_of
                .iter()
                .map(|s| self.branch(s, value, old, name, root))
                .collect();
            let valid = results.iter().filter(|r| r.is_empty()).count();
            if valid != 1 {
                let detail = if valid == 0 {
                    "Found none valid".to_string()
                } else {
                    format!("Found {valid} valid alternatives")
                };
                out.push(self.composite(format!(
                    "{quoted} must validate one and only one schema (oneOf). {detail}"
                )));
                if valid == 0
                    && let Some(best) = results.into_iter().min_by_key(Vec::len)
                {
                    out.extend(best);
                }
            }
        }
        if let Some(Value::Array(all_of)) = schema.get("allOf")
            && !all_of.is_empty()
        {
            let mut validated = 0;
            let mut collected = Vec::new();
            for s in all_of {
                let errs = self.branch(s, value, old, name, root);
                if errs.is_empty() {
                    validated += 1;
                }
                collected.extend(errs);
            }
            out.extend(collected);
            if validated != all_of.len() {
                let extra = if validated == 0 {
                    ". None validated"
                } else {
                    ""
                };
                out.push(self.composite(format!(
                    "{quoted} must validate all the schemas (allOf){extra}"
                )));
            }
        }
        if let Some(not) = schema.get("not").filter(|n| n.is_object())
            && self.branch(not, value, old, name, root).is_empty()
        {
            out.push(self.composite(format!("{quoted} must not validate the schema (not)")));
        }
    }

    pub(super) fn string(
        &self,
        schema: &Value,
        s: &str,
        value: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let len = i64::try_from(s.chars().count()).unwrap_or(i64::MAX);
        if let Some(max) = int_of(schema, "maxLength")
            && len > max
        {
            out.push(FieldError::too_long(self.field(name), value.clone(), max));
        }
        if let Some(min) = int_of(schema, "minLength")
            && len < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(value.clone()),
                format!("{name} in body should be at least {min} chars long"),
            ));
        }
        if let Some(pattern) = str_of(schema, "pattern") {
            let failure = match cached_regex(pattern) {
                Ok(re) if re.is_match(s) => None,
                Ok(_) => Some(pattern.to_string()),
                Err(e) => Some(format!(
                    "{pattern}, but pattern is invalid: {}",
                    regex_error_text(&e, pattern)
                )),
            };
            if let Some(shown) = failure {
                out.push(FieldError::invalid(
                    self.field(name),
                    Some(value.clone()),
                    format!("{name} in body should match '{shown}'"),
                ));
            }
        }
        if let Some(format) = str_of(schema, "format")
            && check_format(format, s) == Some(false)
        {
            out.push(FieldError::type_invalid(
                self.field(name),
                Some(value.clone()),
                format!("{name} in body must be of type {format}: {}", go_quote(s)),
            ));
        }
    }

    pub(super) fn number(
        &self,
        schema: &Value,
        n: &serde_json::Number,
        value: &Value,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let int = n.as_i64();
        let data = n.as_f64().unwrap_or(f64::NAN);
        let invalid =
            |message: String| FieldError::invalid(self.field(name), Some(value.clone()), message);
        if let Some(factor) = num_of(schema, "multipleOf")
            && factor > 0.0
        {
            let failed = match int {
                Some(i) if factor >= 1.0 && factor.fract() == 0.0 => {
                    let f = factor as i64;
                    (f != 0 && i % f != 0).then(|| f.to_string())
                }
                _ => {
                    let mult = if factor < 1.0 {
                        1.0 / factor * data
                    } else {
                        data / factor
                    };
                    (!is_json_integer(mult)).then(|| go_format_float(factor))
                }
            };
            if let Some(shown) = failed {
                out.push(invalid(format!(
                    "{name} in body should be a multiple of {shown}"
                )));
            }
        }
        // Integer data is compared with the bound truncated to an integer, as kube-openapi does.
        let bound_text = |bound: f64| match int {
            Some(_) => (bound as i64).to_string(),
            None => go_format_float(bound),
        };
        // Whether the value lies beyond the bound on the given side (or on it, if exclusive).
        let exceeds = |bound: f64, exclusive: bool, beyond: std::cmp::Ordering| -> bool {
            let ordering = match int {
                Some(i) => Some(i.cmp(&(bound as i64))),
                None => data.partial_cmp(&bound),
            };
            ordering.is_some_and(|o| o == beyond || (exclusive && o == std::cmp::Ordering::Equal))
        };
        if let Some(max) = num_of(schema, "maximum") {
            let exclusive = flag(schema, "exclusiveMaximum");
            if exceeds(max, exclusive, std::cmp::Ordering::Greater) {
                let relation = if exclusive {
                    "less than"
                } else {
                    "less than or equal to"
                };
                out.push(invalid(format!(
                    "{name} in body should be {relation} {}",
                    bound_text(max)
                )));
            }
        }
        if let Some(min) = num_of(schema, "minimum") {
            let exclusive = flag(schema, "exclusiveMinimum");
            if exceeds(min, exclusive, std::cmp::Ordering::Less) {
                let relation = if exclusive {
                    "greater than"
                } else {
                    "greater than or equal to"
                };
                out.push(invalid(format!(
                    "{name} in body should be {relation} {}",
                    bound_text(min)
                )));
            }
        }
    }

    pub(super) fn array(
        &self,
        schema: &Value,
        items: &[Value],
        old: Option<&Value>,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let len = items.len();
        let len_i64 = i64::try_from(len).unwrap_or(i64::MAX);
        if let Some(min) = int_of(schema, "minItems")
            && len_i64 < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(Value::from(len)),
                format!("{name} in body should have at least {min} items"),
            ));
        }
        if let Some(max) = int_of(schema, "maxItems")
            && len_i64 > max
        {
            out.push(FieldError::too_many(self.field(name), len, max));
        }
        if flag(schema, "uniqueItems") {
            let mut seen = std::collections::HashSet::new();
            if !items.iter().all(|i| seen.insert(canonical(i))) {
                out.push(FieldError::invalid(
                    self.field(name),
                    Some(Value::String(String::new())),
                    format!("{name} in body shouldn't contain duplicates"),
                ));
            }
        }
        if let Some(item_schema) = items_schema(schema) {
            for (i, item) in items.iter().enumerate() {
                let old_item = correlate_item(schema, old, item);
                self.node(
                    item_schema,
                    item,
                    old_item,
                    &format!("{name}[{i}]"),
                    false,
                    out,
                );
            }
        }
    }

    pub(super) fn object(
        &self,
        schema: &Value,
        map: &Map<String, Value>,
        old: Option<&Value>,
        name: &str,
        root: bool,
        out: &mut Vec<FieldError>,
    ) {
        let count = map.len();
        let count_i64 = i64::try_from(count).unwrap_or(i64::MAX);
        if let Some(min) = int_of(schema, "minProperties")
            && count_i64 < min
        {
            out.push(FieldError::invalid(
                self.field(name),
                Some(Value::from(count)),
                format!("{name} in body should have at least {min} properties"),
            ));
            return;
        }
        if let Some(max) = int_of(schema, "maxProperties")
            && count_i64 > max
        {
            out.push(FieldError::too_many(self.field(name), count, max));
            return;
        }
        let props = properties(schema);
        let old_map = old.and_then(Value::as_object);
        for (key, child) in sorted_entries(map) {
            let child_name = join_name(name, key);
            let old_child = old_map.and_then(|o| o.get(key));
            if let Some(prop) = props.and_then(|p| p.get(key)) {
                if root && key == "metadata" {
                    self.metadata(prop, child, old_child, &child_name, out);
                } else {
                    self.node(prop, child, old_child, &child_name, false, out);
                }
                continue;
            }
            if root && is_meta_field(key) {
                continue;
            }
            match additional(schema) {
                Additional::Bool(false) => out.push(FieldError::invalid(
                    self.field(name),
                    Some(Value::String(key.clone())),
                    format!("{name}.{key} in body is a forbidden property"),
                )),
                Additional::Schema(a) => self.node(a, child, old_child, &child_name, false, out),
                Additional::Bool(true) | Additional::Unset => {}
            }
        }
        if let Some(Value::Array(required)) = schema.get("required") {
            for key in required.iter().filter_map(Value::as_str) {
                if !map.contains_key(key) {
                    out.push(FieldError::required(self.field(&join_name(name, key)), ""));
                }
            }
        }
    }

    /// Root `metadata` belongs to the apiserver; only the `name`/`generateName` constraints a
    /// schema may declare apply.
    pub(super) fn metadata(
        &self,
        schema: &Value,
        value: &Value,
        old: Option<&Value>,
        name: &str,
        out: &mut Vec<FieldError>,
    ) {
        let mut restricted = Map::new();
        restricted.insert("type".into(), Value::String("object".into()));
        if let Some(props) = properties(schema) {
            let kept: Map<String, Value> = props
                .iter()
                .filter(|(k, _)| k.as_str() == "name" || k.as_str() == "generateName")
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            restricted.insert("properties".into(), Value::Object(kept));
        }
        self.node(&Value::Object(restricted), value, old, name, false, out);
    }
}

/// A one-line description of a regex compile error, phrased like Go's `regexp` errors.
pub(super) fn regex_error_text(e: &regex::Error, pattern: &str) -> String {
    let reason = match e {
        regex::Error::Syntax(text) => text
            .lines()
            .rev()
            .find_map(|l| l.strip_prefix("error: "))
            .unwrap_or("invalid syntax")
            .to_string(),
        regex::Error::CompiledTooBig(_) => "expression too large".to_string(),
        other => other.to_string(),
    };
    format!("error parsing regexp: {reason}: `{pattern}`")
}
