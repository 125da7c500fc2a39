//! A small interpreter for the subset of CEL that CustomResourceDefinition
//! `x-kubernetes-validations` rules use in practice.
//!
//! [`compile`] parses a rule and checks that every identifier, function and macro in it is
//! supported; [`Program::eval`] runs it against `self` (and `oldSelf` for transition rules).
//! Anything outside the subset yields [`CompileError`] (or [`EvalError::Unsupported`] when only
//! the runtime types reveal it), so callers can skip the rule instead of rejecting objects the
//! real apiserver would accept. Runtime failures the apiserver reports as well (missing key,
//! index out of range, division by zero, overflow) are [`EvalError::Runtime`].
//!
//! Supported: int, uint, double, string (quotes, triple quotes, raw strings, escapes), bool and
//! null literals, list and map literals; `self`, `oldSelf`; field selection, indexing; `has()`;
//! `!`, unary `-`, `* / %`, `+ -`, `== != < <= > >= in`, `&&`, `||` (with CEL's commutative
//! error handling), `? :`; `size`, `int`, `uint`, `double`, `string`, `bool`, `dyn`, `matches`,
//! `startsWith`, `endsWith`, `contains`, the Kubernetes string library (`lowerAscii`,
//! `upperAscii`, `trim`, `substring`, `charAt`, `indexOf`, `lastIndexOf`, `replace`, `split`,
//! `join`), the list library (`isSorted`, `sum`, `min`, `max`) and the macros `all`, `exists`,
//! `exists_one`, `map`, `filter`. Not supported: bytes literals, optionals, timestamps and
//! durations (values of fields with `format: date-time`/`duration`/`byte` only support `==`),
//! `type()`, quantities, URLs, IPs and `messageExpression`.
//!
//! Regular expressions (`matches`, and schema `pattern`s) follow Go's RE2 dialect (ASCII-only
//! `\d`, `\w`, `\s`; `\Q...\E`). Rules nested more than 64 levels deep are refused, and an
//! evaluation that takes more than a million steps is abandoned as unsupported, so a hostile
//! rule can neither overflow the stack nor spin (the apiserver bounds rules by a cost budget).

use std::cmp::Ordering;
use std::collections::BTreeMap;

use serde_json::Value;

use super::gocompat::{cached_regex, go_format_float, go_quote};

mod checker;
mod eval;
mod lexer;
mod parser;
#[cfg(test)]
mod tests;

use checker::*;
use eval::*;
use lexer::*;
use parser::*;

/// Nesting deeper than this is refused so user-supplied rules cannot exhaust the stack.
const MAX_DEPTH: usize = 64;

/// A CEL value.
#[derive(Debug, Clone)]
pub enum CelValue {
    /// `null`.
    Null,
    /// A bool.
    Bool(bool),
    /// A signed 64-bit integer (`type: integer` fields).
    Int(i64),
    /// An unsigned 64-bit integer.
    Uint(u64),
    /// A double (`type: number` fields).
    Double(f64),
    /// A string.
    String(String),
    /// A list (`type: array`).
    List(Vec<CelValue>),
    /// A map with string keys (`type: object`).
    Map(BTreeMap<String, CelValue>),
    /// A value of a CEL type this interpreter does not model; it keeps its JSON text so that
    /// equality (as in `self == oldSelf`) still works, every other operation is unsupported.
    Opaque {
        /// Which CEL type the value has.
        kind: OpaqueKind,
        /// The JSON string the value came from.
        raw: String,
    },
}

/// CEL types that are carried but not interpreted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpaqueKind {
    /// `format: date-time` / `date` strings.
    Timestamp,
    /// `format: duration` strings.
    Duration,
    /// `format: byte` strings.
    Bytes,
}

impl CelValue {
    fn type_name(&self) -> &'static str {
        match self {
            CelValue::Null => "null_type",
            CelValue::Bool(_) => "bool",
            CelValue::Int(_) => "int",
            CelValue::Uint(_) => "uint",
            CelValue::Double(_) => "double",
            CelValue::String(_) => "string",
            CelValue::List(_) => "list",
            CelValue::Map(_) => "map",
            CelValue::Opaque { kind, .. } => match kind {
                OpaqueKind::Timestamp => "google.protobuf.Timestamp",
                OpaqueKind::Duration => "google.protobuf.Duration",
                OpaqueKind::Bytes => "bytes",
            },
        }
    }
}

/// Why a rule cannot be compiled.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum CompileError {
    /// The rule is not valid CEL as far as this parser understands it.
    #[error("syntax error at offset {offset}: {message}")]
    Syntax {
        /// Byte offset into the rule.
        offset: usize,
        /// What was wrong.
        message: String,
    },
    /// The rule uses something outside the supported subset.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// Why evaluating a rule failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum EvalError {
    /// A failure the apiserver reports too (`no such key: x`, division by zero, ...).
    #[error("{0}")]
    Runtime(String),
    /// The operation is outside the supported subset (or is a type error the apiserver's type
    /// checker would have rejected when the CRD was created); the rule should be skipped.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

/// A compiled rule.
#[derive(Debug, Clone)]
pub struct Program {
    expr: Expr,
    uses_old_self: bool,
}

/// Parses and checks a rule.
pub fn compile(rule: &str) -> Result<Program, CompileError> {
    let tokens = tokenize(rule)?;
    let mut parser = Parser {
        tokens,
        pos: 0,
        depth: 0,
        end: rule.len(),
    };
    let expr = parser.parse_expr()?;
    if let Some((offset, tok)) = parser.tokens.get(parser.pos) {
        return Err(CompileError::Syntax {
            offset: *offset,
            message: format!("unexpected {tok:?}"),
        });
    }
    let mut checker = Checker {
        scope: vec!["self".to_string(), "oldSelf".to_string()],
        uses_old_self: false,
    };
    checker.check(&expr)?;
    Ok(Program {
        expr,
        uses_old_self: checker.uses_old_self,
    })
}

impl Program {
    /// Whether the rule mentions `oldSelf` (a transition rule, evaluated only on update).
    pub fn uses_old_self(&self) -> bool {
        self.uses_old_self
    }

    /// Evaluates the rule with `self` bound to `self_value` and, when given, `oldSelf` to
    /// `old_self`.
    pub fn eval(
        &self,
        self_value: &CelValue,
        old_self: Option<&CelValue>,
    ) -> Result<CelValue, EvalError> {
        let mut env = Env {
            vars: vec![("self".to_string(), self_value.clone())],
            steps: 0,
        };
        if let Some(old) = old_self {
            env.vars.push(("oldSelf".to_string(), old.clone()));
        }
        eval(&self.expr, &mut env)
    }
}

/// Converts JSON to a CEL value the way the apiserver types it from the schema: `integer`
/// fields are ints, `number` fields doubles, int-or-string fields either; strings with
/// `format: date-time`, `date`, `duration` or `byte` become [`CelValue::Opaque`]. Without a
/// schema (preserved unknown fields) integral numbers are ints.
pub fn value_from_json(schema: Option<&Value>, json: &Value) -> CelValue {
    let schema = schema.filter(|s| s.is_object());
    let ty = schema.and_then(|s| s.get("type")).and_then(Value::as_str);
    let int_or_string = schema
        .and_then(|s| s.get("x-kubernetes-int-or-string"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    match json {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => {
            if ty == Some("number") && !int_or_string {
                return CelValue::Double(n.as_f64().unwrap_or(f64::NAN));
            }
            if let Some(i) = n.as_i64() {
                CelValue::Int(i)
            } else if let Some(u) = n.as_u64() {
                CelValue::Uint(u)
            } else {
                let f = n.as_f64().unwrap_or(f64::NAN);
                let integral_schema = ty == Some("integer") || int_or_string;
                if integral_schema && f.fract() == 0.0 && f.abs() < 9.2e18 {
                    CelValue::Int(f as i64)
                } else {
                    CelValue::Double(f)
                }
            }
        }
        Value::String(s) => {
            let format = schema.and_then(|s| s.get("format")).and_then(Value::as_str);
            let kind = match (ty, format) {
                (Some("string"), Some("date-time" | "datetime" | "date")) => {
                    Some(OpaqueKind::Timestamp)
                }
                (Some("string"), Some("duration")) => Some(OpaqueKind::Duration),
                (Some("string"), Some("byte")) => Some(OpaqueKind::Bytes),
                _ => None,
            };
            match kind {
                Some(kind) => CelValue::Opaque {
                    kind,
                    raw: s.clone(),
                },
                None => CelValue::String(s.clone()),
            }
        }
        Value::Array(items) => {
            let item_schema = schema.and_then(|s| s.get("items"));
            CelValue::List(
                items
                    .iter()
                    .map(|v| value_from_json(item_schema, v))
                    .collect(),
            )
        }
        Value::Object(map) => {
            let props = schema.and_then(|s| s.get("properties"));
            let additional = schema
                .and_then(|s| s.get("additionalProperties"))
                .filter(|a| a.is_object());
            CelValue::Map(
                map.iter()
                    .map(|(k, v)| {
                        let sub = props.and_then(|p| p.get(k)).or(additional);
                        (k.clone(), value_from_json(sub, v))
                    })
                    .collect(),
            )
        }
    }
}
