//! Requirement validation: labels.NewRequirement and the content package.

use super::*;

pub(super) fn new_requirement(
    key: &str,
    operator: Operator,
    values: Vec<String>,
) -> Result<Requirement, String> {
    let mut errs = Vec::new();
    if let Some(err) = validate_label_key(key, "key") {
        errs.push(err);
    }
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: for 'in', 'notin' operators, values set can't be empty",
            go_string_slice(&values)
        )),
        Operator::Equals | Operator::DoubleEquals | Operator::NotEquals if values.len() != 1 => {
            errs.push(format!(
                "values: Invalid value: {}: exact-match compatibility requires one single value",
                go_string_slice(&values)
            ));
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => errs.push(format!(
            "values: Invalid value: {}: values set must be empty for exists and does not exist",
            go_string_slice(&values)
        )),
        Operator::GreaterThan | Operator::LessThan => {
            if values.len() != 1 {
                errs.push(format!(
                    "values: Invalid value: {}: for 'Gt', 'Lt' operators, exactly one value is required",
                    go_string_slice(&values)
                ));
            }
            for (i, v) in values.iter().enumerate() {
                if v.parse::<i64>().is_err() {
                    errs.push(format!(
                        "values[{i}]: Invalid value: {}: for 'Gt', 'Lt' operators, the value must be an integer",
                        go_quote(v)
                    ));
                }
            }
        }
        _ => {}
    }
    for (i, v) in values.iter().enumerate() {
        let problems = label_value_errors(v);
        if !problems.is_empty() {
            errs.push(format!(
                "values[{i}][{key}]: Invalid value: {}: {}",
                go_quote(v),
                problems.join("; ")
            ));
        }
    }
    if errs.is_empty() {
        return Ok(Requirement {
            key: key.to_string(),
            operator,
            values,
        });
    }
    Err(aggregate(errs))
}

/// Formats errors as `utilerrors.NewAggregate` does: one error alone, several in brackets.
pub(super) fn aggregate(errs: Vec<String>) -> String {
    let mut unique: Vec<String> = Vec::new();
    for e in errs {
        if !unique.contains(&e) {
            unique.push(e);
        }
    }
    if unique.len() == 1 {
        unique.remove(0)
    } else {
        format!("[{}]", unique.join(", "))
    }
}

pub(super) const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
pub(super) const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
pub(super) const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
pub(super) const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
pub(super) const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `content.RegexError`: the message, examples and regex, with the apiserver's spacing.
pub(super) fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{ex}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
pub(super) fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

pub(super) fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-')
}

pub(super) fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `content.IsLabelKey`.
pub(super) fn label_key_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `content.IsLabelValue`.
pub(super) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !is_label_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// A `field.Invalid` error for a bad key, or `None` when the key is valid.
pub(super) fn validate_label_key(key: &str, field: &str) -> Option<String> {
    let errs = label_key_errors(key);
    if errs.is_empty() {
        return None;
    }
    Some(format!(
        "{field}: Invalid value: {}: {}",
        go_quote(key),
        errs.join("; ")
    ))
}
