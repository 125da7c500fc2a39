//! Label and field selectors with the semantics of kube-apiserver.
//!
//! [`LabelSelector`] parses the string syntax of `k8s.io/apimachinery/pkg/labels`
//! (`a=b`, `a!=b`, `a in (x,y)`, `!a`, `a>3`, ...) and reports syntax errors with
//! the apiserver's wording, so that the server can answer `400 BadRequest` with
//! the message a real cluster would give. [`FieldSelector`] follows
//! `k8s.io/apimachinery/pkg/fields`, including its `\,` `\=` `\\` escapes, and
//! [`supported_field`] / [`field_value`] mirror the per-resource field label
//! conversion functions and selectable field sets of the built-in registries.

use std::collections::BTreeSet;
use std::fmt;

use serde_json::{Map, Value};

use super::gocompat::{go_quote, go_string_slice};

mod field_labels;
mod fields;
mod label_parser;
mod requirements;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

pub use field_labels::*;
pub use fields::*;
use label_parser::*;
use requirements::*;

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
    key: String,
    operator: Operator,
    values: Vec<String>,
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

/// A parsed label selector: the AND of its requirements.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LabelSelector {
    requirements: Vec<Requirement>,
    /// Set for a nil metav1 LabelSelector, which selects nothing.
    nothing: bool,
}

impl LabelSelector {
    /// The selector that matches every object (the empty string).
    pub fn everything() -> Self {
        Self::default()
    }

    /// The selector that matches no object (a nil metav1 LabelSelector).
    pub fn nothing() -> Self {
        Self {
            requirements: Vec::new(),
            nothing: true,
        }
    }

    /// Parses the string form (`?labelSelector=`), as `labels.Parse` does.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut requirements = Parser::new(selector)
            .parse()
            .map_err(SelectorError::Label)?;
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Builds a selector from a metav1 LabelSelector (`matchLabels`, `matchExpressions`),
    /// as `metav1.LabelSelectorAsSelector` does: `null` selects nothing, `{}` everything.
    pub fn from_metav1(selector: &Value) -> Result<Self, SelectorError> {
        let obj = match selector {
            Value::Null => return Ok(Self::nothing()),
            Value::Object(obj) => obj,
            other => {
                return Err(SelectorError::Label(format!(
                    "a label selector must be an object, got {other}"
                )));
            }
        };
        let mut requirements = Vec::new();
        if let Some(labels) = obj.get("matchLabels").filter(|v| !v.is_null()) {
            let Value::Object(labels) = labels else {
                return Err(SelectorError::Label(
                    "matchLabels must be a map of strings".to_string(),
                ));
            };
            for (key, value) in labels {
                let Some(value) = value.as_str() else {
                    return Err(SelectorError::Label(format!(
                        "matchLabels[{key}] must be a string"
                    )));
                };
                requirements.push(Requirement::new(
                    key,
                    Operator::Equals,
                    vec![value.to_string()],
                )?);
            }
        }
        if let Some(exprs) = obj.get("matchExpressions").filter(|v| !v.is_null()) {
            let Value::Array(exprs) = exprs else {
                return Err(SelectorError::Label(
                    "matchExpressions must be a list".to_string(),
                ));
            };
            for expr in exprs {
                let key = expr.get("key").and_then(Value::as_str).unwrap_or_default();
                let op = expr
                    .get("operator")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let operator = match op {
                    "In" => Operator::In,
                    "NotIn" => Operator::NotIn,
                    "Exists" => Operator::Exists,
                    "DoesNotExist" => Operator::DoesNotExist,
                    other => {
                        return Err(SelectorError::Label(format!(
                            "{} is not a valid label selector operator",
                            go_quote(other)
                        )));
                    }
                };
                let values = match expr.get("values") {
                    None | Some(Value::Null) => Vec::new(),
                    Some(Value::Array(values)) => values
                        .iter()
                        .map(|v| {
                            v.as_str().map(str::to_string).ok_or_else(|| {
                                SelectorError::Label(format!(
                                    "matchExpressions values for {key} must be strings"
                                ))
                            })
                        })
                        .collect::<Result<_, _>>()?,
                    Some(_) => {
                        return Err(SelectorError::Label(format!(
                            "matchExpressions values for {key} must be a list"
                        )));
                    }
                };
                requirements.push(Requirement::new(key, operator, values)?);
            }
        }
        requirements.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(Self {
            requirements,
            nothing: false,
        })
    }

    /// Whether an object whose `metadata.labels` are `labels` is selected.
    pub fn matches(&self, labels: Option<&Map<String, Value>>) -> bool {
        !self.nothing && self.requirements.iter().all(|r| r.matches(labels))
    }

    /// True for the selector that selects everything.
    pub fn is_empty(&self) -> bool {
        !self.nothing && self.requirements.is_empty()
    }

    /// The requirements, sorted by key.
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }
}

impl fmt::Display for LabelSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, r) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{r}")?;
        }
        Ok(())
    }
}
