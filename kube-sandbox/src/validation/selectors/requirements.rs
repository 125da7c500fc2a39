//! Requirement validation: labels.NewRequirement and the content package.

use super::*;
use crate::validation::labels::{label_key_errors, label_value_errors};

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
