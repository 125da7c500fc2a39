//! A parsed label selector (`labels.Selector`) and its metav1 `LabelSelector` form.

use std::fmt;

use serde_json::{Map, Value};

use crate::validation::gocompat::go_quote;

use super::label_parser::Parser;
use super::requirements::{Operator, Requirement, SelectorError};

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
