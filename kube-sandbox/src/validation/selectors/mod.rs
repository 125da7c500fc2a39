//! Label and field selectors with the semantics of kube-apiserver.
//!
//! [`LabelSelector`] parses the string syntax of `k8s.io/apimachinery/pkg/labels`
//! (`a=b`, `a!=b`, `a in (x,y)`, `!a`, `a>3`, ...) and reports syntax errors with
//! the apiserver's wording, so that the server can answer `400 BadRequest` with
//! the message a real cluster would give. [`FieldSelector`] follows
//! `k8s.io/apimachinery/pkg/fields`, including its `\,` `\=` `\\` escapes, and
//! [`supported_field`] / [`field_value`] mirror the per-resource field label
//! conversion functions and selectable field sets of the built-in registries.

mod field_labels;
mod fields;
mod label_parser;
mod label_selector;
mod requirements;
#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests;

pub use field_labels::*;
pub use fields::*;
pub use label_selector::LabelSelector;
pub use requirements::{Operator, Requirement, SelectorError};
