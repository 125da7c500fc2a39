//! Requirements of a label selector (`labels.Requirement`): the type, its matching and printing,
//! and its validation (labels.NewRequirement and the content package).

use std::fmt;

use serde_json::{Map, Value};

use crate::validation::gocompat::{go_quote, go_string_slice};
use crate::validation::labels::{label_key_errors, label_value_errors};

/// A selector that could not be parsed or used; the message is the one kube-apiserver gives.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The label selector string (or metav1 LabelSelector) is invalid.
    #[error("{0}")]
    Label(String),
    /// The field selector string is invalid.
    #[error("{0}")]
    Field(String),
    /// The field selector names a field the resource does not support.
    #[error("{0}")]
    UnsupportedField(String),
}

/// The operator of one label selector requirement.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `key in (v1,v2)`
    In,
    /// `key notin (v1,v2)`; also matches objects without the key.
    NotIn,
    /// `key=value`
    Equals,
    /// `key==value`
    DoubleEquals,
    /// `key!=value`; also matches objects without the key.
    NotEquals,
    /// `key`
    Exists,
    /// `!key`
    DoesNotExist,
    /// `key>3` (integers)
    GreaterThan,
    /// `key<3` (integers)
    LessThan,
}

/// One requirement of a label selector: a key, an operator and its values.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Requirement {
    pub(super) key: String,
    pub(super) operator: Operator,
    pub(super) values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validating key and values as `labels.NewRequirement` does.
    pub fn new(key: &str, operator: Operator, values: Vec<String>) -> Result<Self, SelectorError> {
        new_requirement(key, operator, values).map_err(SelectorError::Label)
    }

    /// The label key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values (empty for `Exists` / `DoesNotExist`).
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether an object with these labels satisfies the requirement.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        let value = labels
            .and_then(|l| l.get(&self.key))
            .and_then(Value::as_str);
        match self.operator {
            Operator::In | Operator::Equals | Operator::DoubleEquals => {
                value.is_some_and(|v| self.values.iter().any(|x| x == v))
            }
            Operator::NotIn | Operator::NotEquals => {
                value.is_none_or(|v| !self.values.iter().any(|x| x == v))
            }
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(actual), [wanted]) = (value, self.values.as_slice()) else {
                    return false;
                };
                let (Ok(actual), Ok(wanted)) = (actual.parse::<i64>(), wanted.parse::<i64>())
                else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    actual > wanted
                } else {
                    actual < wanted
                }
            }
        }
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.operator == Operator::DoesNotExist {
            f.write_str("!")?;
        }
        f.write_str(&self.key)?;
        let op = match self.operator {
            Operator::Exists | Operator::DoesNotExist => return Ok(()),
            Operator::Equals => "=",
            Operator::DoubleEquals => "==",
            Operator::NotEquals => "!=",
            Operator::In => " in ",
            Operator::NotIn => " notin ",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        };
        f.write_str(op)?;
        let set = matches!(self.operator, Operator::In | Operator::NotIn);
        if set {
            f.write_str("(")?;
        }
        let mut sorted = self.values.clone();
        sorted.sort();
        f.write_str(&sorted.join(","))?;
        if set {
            f.write_str(")")?;
        }
        Ok(())
    }
}

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
