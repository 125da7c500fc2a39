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

// ---------------------------------------------------------------------------
// Label selector lexer and parser (a port of labels/selector.go).

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Token {
    Error,
    EndOfString,
    ClosedPar,
    Comma,
    DoesNotExist,
    DoubleEquals,
    Equals,
    GreaterThan,
    Identifier,
    In,
    LessThan,
    NotEquals,
    NotIn,
    OpenPar,
}

fn string_to_token(s: &str) -> Option<Token> {
    Some(match s {
        ")" => Token::ClosedPar,
        "," => Token::Comma,
        "!" => Token::DoesNotExist,
        "==" => Token::DoubleEquals,
        "=" => Token::Equals,
        ">" => Token::GreaterThan,
        "in" => Token::In,
        "<" => Token::LessThan,
        "!=" => Token::NotEquals,
        "notin" => Token::NotIn,
        "(" => Token::OpenPar,
        _ => return None,
    })
}

fn is_whitespace(ch: u8) -> bool {
    matches!(ch, b' ' | b'\t' | b'\r' | b'\n')
}

fn is_special_symbol(ch: u8) -> bool {
    matches!(ch, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

/// Splits a selector into tokens; identifiers end only at ASCII bytes, so
/// every slice taken falls on a UTF-8 boundary.
fn lex(s: &str) -> Vec<(Token, String)> {
    let bytes = s.as_bytes();
    let mut pos = 0;
    let mut items = Vec::new();
    loop {
        while pos < bytes.len() && is_whitespace(bytes[pos]) {
            pos += 1;
        }
        if pos >= bytes.len() {
            items.push((Token::EndOfString, String::new()));
            return items;
        }
        let start = pos;
        if is_special_symbol(bytes[pos]) {
            let mut last: Option<(Token, usize)> = None;
            while pos < bytes.len() && is_special_symbol(bytes[pos]) {
                pos += 1;
                if let Some(tok) = string_to_token(&s[start..pos]) {
                    last = Some((tok, pos));
                } else if last.is_some() {
                    pos -= 1;
                    break;
                }
            }
            match last {
                Some((tok, end)) => {
                    pos = end;
                    items.push((tok, s[start..end].to_string()));
                }
                None => items.push((
                    Token::Error,
                    format!("error expected: keyword found '{}'", &s[start..pos]),
                )),
            }
        } else {
            while pos < bytes.len() && !is_special_symbol(bytes[pos]) && !is_whitespace(bytes[pos])
            {
                pos += 1;
            }
            let word = &s[start..pos];
            let tok = string_to_token(word).unwrap_or(Token::Identifier);
            items.push((tok, word.to_string()));
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Context {
    KeyAndOperator,
    Values,
}

struct Parser {
    items: Vec<(Token, String)>,
    position: usize,
}

const BINARY_OPERATORS: &str = "in, notin, =, ==, !=, gt, lt";

impl Parser {
    fn new(selector: &str) -> Self {
        Self {
            items: lex(selector),
            position: 0,
        }
    }

    fn item(&self, index: usize, ctx: Context) -> (Token, String) {
        let (tok, lit) = self
            .items
            .get(index)
            .cloned()
            .unwrap_or((Token::EndOfString, String::new()));
        let tok = match (ctx, tok) {
            (Context::Values, Token::In | Token::NotIn) => Token::Identifier,
            (_, tok) => tok,
        };
        (tok, lit)
    }

    fn lookahead(&self, ctx: Context) -> (Token, String) {
        self.item(self.position, ctx)
    }

    fn consume(&mut self, ctx: Context) -> (Token, String) {
        let item = self.item(self.position, ctx);
        if self.position < self.items.len() {
            self.position += 1;
        }
        item
    }

    fn parse(&mut self) -> Result<Vec<Requirement>, String> {
        let mut requirements = Vec::new();
        loop {
            let (tok, lit) = self.lookahead(Context::Values);
            match tok {
                Token::Identifier | Token::DoesNotExist => {
                    let r = self
                        .parse_requirement()
                        .map_err(|e| format!("unable to parse requirement: {e}"))?;
                    requirements.push(r);
                    let (t, l) = self.consume(Context::Values);
                    match t {
                        Token::EndOfString => return Ok(requirements),
                        Token::Comma => {
                            let (t2, l2) = self.lookahead(Context::Values);
                            if t2 != Token::Identifier && t2 != Token::DoesNotExist {
                                return Err(format!(
                                    "found '{l2}', expected: identifier after ','"
                                ));
                            }
                        }
                        _ => return Err(format!("found '{l}', expected: ',' or 'end of string'")),
                    }
                }
                Token::EndOfString => return Ok(requirements),
                _ => {
                    return Err(format!(
                        "found '{lit}', expected: !, identifier, or 'end of string'"
                    ));
                }
            }
        }
    }

    fn parse_requirement(&mut self) -> Result<Requirement, String> {
        let (key, operator) = self.parse_key_and_infer_operator()?;
        if let Some(op @ (Operator::Exists | Operator::DoesNotExist)) = operator {
            return new_requirement(&key, op, Vec::new());
        }
        let operator = self.parse_operator()?;
        let values = match operator {
            Operator::In | Operator::NotIn => self.parse_values()?,
            _ => self.parse_exact_value()?,
        };
        new_requirement(&key, operator, values.into_iter().collect())
    }

    fn parse_key_and_infer_operator(&mut self) -> Result<(String, Option<Operator>), String> {
        let mut operator = None;
        let (mut tok, mut literal) = self.consume(Context::Values);
        if tok == Token::DoesNotExist {
            operator = Some(Operator::DoesNotExist);
            (tok, literal) = self.consume(Context::Values);
        }
        if tok != Token::Identifier {
            return Err(format!("found '{literal}', expected: identifier"));
        }
        if let Some(err) = validate_label_key(&literal, "<nil>") {
            return Err(err);
        }
        let (next, _) = self.lookahead(Context::Values);
        if (next == Token::EndOfString || next == Token::Comma) && operator.is_none() {
            operator = Some(Operator::Exists);
        }
        Ok((literal, operator))
    }

    fn parse_operator(&mut self) -> Result<Operator, String> {
        let (tok, lit) = self.consume(Context::KeyAndOperator);
        Ok(match tok {
            Token::In => Operator::In,
            Token::Equals => Operator::Equals,
            Token::DoubleEquals => Operator::DoubleEquals,
            Token::GreaterThan => Operator::GreaterThan,
            Token::LessThan => Operator::LessThan,
            Token::NotIn => Operator::NotIn,
            Token::NotEquals => Operator::NotEquals,
            _ => return Err(format!("found '{lit}', expected: {BINARY_OPERATORS}")),
        })
    }

    fn parse_values(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, lit) = self.consume(Context::Values);
        if tok != Token::OpenPar {
            // The missing comma is the apiserver's wording.
            return Err(format!("found '{lit}' expected: '('"));
        }
        let (tok, lit) = self.lookahead(Context::Values);
        match tok {
            Token::Identifier | Token::Comma => {
                let set = self.parse_identifiers_list()?;
                let (tok, _) = self.consume(Context::Values);
                if tok != Token::ClosedPar {
                    return Err(format!("found '{lit}', expected: ')'"));
                }
                Ok(set)
            }
            Token::ClosedPar => {
                self.consume(Context::Values);
                Ok(BTreeSet::from([String::new()]))
            }
            _ => Err(format!("found '{lit}', expected: ',', ')' or identifier")),
        }
    }

    fn parse_identifiers_list(&mut self) -> Result<BTreeSet<String>, String> {
        let mut set = BTreeSet::new();
        loop {
            let (tok, lit) = self.consume(Context::Values);
            match tok {
                Token::Identifier => {
                    set.insert(lit);
                    let (tok2, lit2) = self.lookahead(Context::Values);
                    match tok2 {
                        Token::Comma => continue,
                        Token::ClosedPar => return Ok(set),
                        _ => return Err(format!("found '{lit2}', expected: ',' or ')'")),
                    }
                }
                Token::Comma => {
                    if set.is_empty() {
                        set.insert(String::new());
                    }
                    let (tok2, _) = self.lookahead(Context::Values);
                    if tok2 == Token::ClosedPar {
                        set.insert(String::new());
                        return Ok(set);
                    }
                    if tok2 == Token::Comma {
                        self.consume(Context::Values);
                        set.insert(String::new());
                    }
                }
                _ => return Err(format!("found '{lit}', expected: ',', or identifier")),
            }
        }
    }

    fn parse_exact_value(&mut self) -> Result<BTreeSet<String>, String> {
        let (tok, _) = self.lookahead(Context::Values);
        if tok == Token::EndOfString || tok == Token::Comma {
            return Ok(BTreeSet::from([String::new()]));
        }
        let (tok, lit) = self.consume(Context::Values);
        if tok == Token::Identifier {
            return Ok(BTreeSet::from([lit]));
        }
        Err(format!("found '{lit}', expected: identifier"))
    }
}

// ---------------------------------------------------------------------------
// Validation (labels.NewRequirement and the content package).

fn new_requirement(
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
fn aggregate(errs: Vec<String>) -> String {
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

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `content.RegexError`: the message, examples and regex, with the apiserver's spacing.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
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
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-')
}

fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
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
fn label_key_errors(key: &str) -> Vec<String> {
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
fn label_value_errors(value: &str) -> Vec<String> {
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
fn validate_label_key(key: &str, field: &str) -> Option<String> {
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

// ---------------------------------------------------------------------------
// Field selectors (a port of fields/selector.go).

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FieldTerm {
    field: String,
    value: String,
    negated: bool,
}

/// A parsed field selector: the AND of `field=value` / `field!=value` terms.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FieldSelector {
    terms: Vec<FieldTerm>,
}

impl FieldSelector {
    /// Parses the string form (`?fieldSelector=`), as `fields.ParseSelector` does.
    pub fn parse(selector: &str) -> Result<Self, SelectorError> {
        let mut parts = split_terms(selector);
        parts.sort();
        let mut terms = Vec::new();
        for part in parts {
            if part.is_empty() {
                continue;
            }
            let Some((field, op, raw)) = split_term(part) else {
                return Err(SelectorError::Field(format!(
                    "invalid selector: '{selector}'; can't understand '{part}'"
                )));
            };
            terms.push(FieldTerm {
                field: field.to_string(),
                value: unescape_value(raw)?,
                negated: op == "!=",
            });
        }
        Ok(Self { terms })
    }

    /// The field names the selector refers to (one per term, in sorted term order).
    pub fn fields(&self) -> impl Iterator<Item = &str> {
        self.terms.iter().map(|t| t.field.as_str())
    }

    /// True when the selector has no terms and selects everything.
    pub fn is_empty(&self) -> bool {
        self.terms.is_empty()
    }

    /// The value an `=`/`==` term requires for `field`, if any (useful for indexed lookups).
    pub fn requires_exact_match(&self, field: &str) -> Option<&str> {
        self.terms
            .iter()
            .find(|t| !t.negated && t.field == field)
            .map(|t| t.value.as_str())
    }

    /// Whether an object is selected; `get` returns a field's value, and a missing
    /// value compares as the empty string, as in the apiserver.
    pub fn matches(&self, get: impl Fn(&str) -> Option<String>) -> bool {
        self.terms.iter().all(|t| {
            let actual = get(&t.field).unwrap_or_default();
            (actual == t.value) != t.negated
        })
    }
}

impl fmt::Display for FieldSelector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, t) in self.terms.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            let op = if t.negated { "!=" } else { "=" };
            let escaped = t
                .value
                .replace('\\', "\\\\")
                .replace(',', "\\,")
                .replace('=', "\\=");
            write!(f, "{}{op}{escaped}", t.field)?;
        }
        Ok(())
    }
}

/// Splits on commas that are not escaped with a backslash.
fn split_terms(selector: &str) -> Vec<&str> {
    if selector.is_empty() {
        return Vec::new();
    }
    let mut terms = Vec::new();
    let mut start = 0;
    let mut in_slash = false;
    for (i, c) in selector.char_indices() {
        if in_slash {
            in_slash = false;
        } else if c == '\\' {
            in_slash = true;
        } else if c == ',' {
            terms.push(&selector[start..i]);
            start = i + 1;
        }
    }
    terms.push(&selector[start..]);
    terms
}

/// Finds the first operator (`!=`, `==`, `=`, tried in that order at each position).
fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
    for (i, _) in term.char_indices() {
        let rest = &term[i..];
        for op in ["!=", "==", "="] {
            if let Some(value) = rest.strip_prefix(op) {
                return Some((&term[..i], op, value));
            }
        }
    }
    None
}

fn unescape_value(s: &str) -> Result<String, SelectorError> {
    let mut out = String::with_capacity(s.len());
    let mut in_slash = false;
    for c in s.chars() {
        if in_slash {
            if matches!(c, '\\' | ',' | '=') {
                out.push(c);
            } else {
                return Err(SelectorError::Field(format!(
                    "invalid field selector: invalid escape sequence: \\{c}"
                )));
            }
            in_slash = false;
            continue;
        }
        match c {
            '\\' => in_slash = true,
            // Go prints the rune with %v, i.e. as its code point number.
            ',' | '=' => {
                return Err(SelectorError::Field(format!(
                    "invalid field selector: unescaped character in value: {}",
                    c as u32
                )));
            }
            c => out.push(c),
        }
    }
    if in_slash {
        return Err(SelectorError::Field(
            "invalid field selector: invalid escape sequence: \\".to_string(),
        ));
    }
    Ok(out)
}

// ---------------------------------------------------------------------------
// Per-resource field labels.

/// The extra field labels a resource supports, beyond `metadata.name` /
/// `metadata.namespace` (from the field label conversion functions).
fn resource_fields(resource: &str) -> &'static [&'static str] {
    match resource {
        "pods" => &[
            "spec.nodeName",
            "spec.restartPolicy",
            "spec.schedulerName",
            "spec.serviceAccountName",
            "spec.hostNetwork",
            "status.phase",
            "status.podIP",
            "status.podIPs",
            "status.nominatedNodeName",
            "spec.host",
        ],
        "events" => &[
            "involvedObject.kind",
            "involvedObject.namespace",
            "involvedObject.name",
            "involvedObject.uid",
            "involvedObject.apiVersion",
            "involvedObject.resourceVersion",
            "involvedObject.fieldPath",
            "reason",
            "reportingComponent",
            "source",
            "type",
        ],
        "secrets" => &["type"],
        "nodes" => &["spec.unschedulable"],
        "namespaces" => &["status.phase"],
        "services" => &["spec.clusterIP", "spec.type"],
        "replicationcontrollers" => &["status.replicas"],
        "jobs" => &["status.successful"],
        "certificatesigningrequests" => &["spec.signerName"],
        _ => &[],
    }
}

/// Cluster-scoped resources whose conversion function rejects `metadata.namespace`.
fn rejects_namespace_field(resource: &str) -> bool {
    matches!(
        resource,
        "nodes" | "namespaces" | "certificatesigningrequests"
    )
}

/// Whether `?fieldSelector=` may name `field` for `resource` (a plural such as `pods`).
/// Every resource supports `metadata.name`; all but nodes, namespaces and CSRs support
/// `metadata.namespace`; custom resources support only those two.
pub fn supported_field(resource: &str, field: &str) -> bool {
    match field {
        "metadata.name" => true,
        "metadata.namespace" => !rejects_namespace_field(resource),
        other => resource_fields(resource).contains(&other),
    }
}

/// The message kube-apiserver gives (with 400) for an unsupported field label.
pub fn unsupported_field_message(resource: &str, field: &str) -> String {
    match resource {
        "pods"
        | "events"
        | "secrets"
        | "nodes"
        | "namespaces"
        | "services"
        | "replicationcontrollers" => format!("field label not supported: {field}"),
        "jobs" => format!(
            "field label {} not supported for batchv1.Job",
            go_quote(field)
        ),
        _ => format!(
            "{} is not a known field selector: only \"metadata.name\", \"metadata.namespace\"",
            go_quote(field)
        ),
    }
}

/// Checks every field of `selector` against [`supported_field`].
pub fn validate_fields(resource: &str, selector: &FieldSelector) -> Result<(), SelectorError> {
    match selector.fields().find(|f| !supported_field(resource, f)) {
        Some(field) => Err(SelectorError::UnsupportedField(unsupported_field_message(
            resource, field,
        ))),
        None => Ok(()),
    }
}

fn str_at(obj: &Value, path: &[&str]) -> Option<String> {
    let mut cur = obj;
    for p in path {
        cur = cur.get(p)?;
    }
    cur.as_str().map(str::to_string)
}

fn bool_at(obj: &Value, path: &[&str]) -> String {
    let mut cur = Some(obj);
    for p in path {
        cur = cur.and_then(|c| c.get(p));
    }
    cur.and_then(Value::as_bool).unwrap_or(false).to_string()
}

fn int_at(obj: &Value, path: &[&str]) -> String {
    let mut cur = Some(obj);
    for p in path {
        cur = cur.and_then(|c| c.get(p));
    }
    cur.and_then(Value::as_i64).unwrap_or(0).to_string()
}

/// The value of a field label of `obj` (a `resource` object as JSON), as the
/// registry's selectable field set computes it; `None` when the object lacks it
/// or the field is not supported (both match as the empty string).
pub fn field_value(resource: &str, obj: &Value, field: &str) -> Option<String> {
    if !supported_field(resource, field) {
        return None;
    }
    match field {
        "metadata.name" => return str_at(obj, &["metadata", "name"]),
        "metadata.namespace" => return str_at(obj, &["metadata", "namespace"]),
        _ => {}
    }
    match (resource, field) {
        ("pods", "spec.nodeName" | "spec.host") => str_at(obj, &["spec", "nodeName"]),
        ("pods", "spec.hostNetwork") => Some(bool_at(obj, &["spec", "hostNetwork"])),
        ("pods", "status.podIP") => obj
            .pointer("/status/podIPs/0/ip")
            .and_then(Value::as_str)
            .map(str::to_string)
            .or_else(|| str_at(obj, &["status", "podIP"])),
        // Accepted by the conversion function but absent from the selectable set.
        ("pods", "status.podIPs") => None,
        ("events", "source") => str_at(obj, &["source", "component"])
            .filter(|s| !s.is_empty())
            .or_else(|| str_at(obj, &["reportingComponent"])),
        ("nodes", "spec.unschedulable") => Some(bool_at(obj, &["spec", "unschedulable"])),
        ("replicationcontrollers", "status.replicas") => Some(int_at(obj, &["status", "replicas"])),
        ("jobs", "status.successful") => Some(int_at(obj, &["status", "succeeded"])),
        _ => {
            let path: Vec<&str> = field.split('.').collect();
            str_at(obj, &path)
        }
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    fn labels(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn label_selector_matching_table() {
        // (selector, labels, expected match)
        let cases: &[(&str, Value, bool)] = &[
            ("", json!({}), true),
            ("", json!({"a": "b"}), true),
            ("a=b", json!({"a": "b"}), true),
            ("a=b", json!({"a": "c"}), false),
            ("a=b", json!({}), false),
            ("a==b", json!({"a": "b"}), true),
            ("a==b", json!({"a": "bb"}), false),
            ("a!=b", json!({"a": "b"}), false),
            ("a!=b", json!({"a": "c"}), true),
            ("a!=b", json!({}), true),
            ("a in (x,y)", json!({"a": "y"}), true),
            ("a in (x,y)", json!({"a": "z"}), false),
            ("a in (x,y)", json!({}), false),
            ("a notin (x)", json!({"a": "x"}), false),
            ("a notin (x)", json!({"a": "z"}), true),
            ("a notin (x)", json!({}), true),
            ("a", json!({"a": ""}), true),
            ("a", json!({"b": "a"}), false),
            ("!a", json!({"b": "a"}), true),
            ("!a", json!({"a": "x"}), false),
            ("a>3", json!({"a": "4"}), true),
            ("a>3", json!({"a": "3"}), false),
            ("a>3", json!({"a": "four"}), false),
            ("a>3", json!({}), false),
            ("a<3", json!({"a": "-7"}), true),
            ("a<3", json!({"a": "3"}), false),
            ("a=b,c!=d", json!({"a": "b", "c": "e"}), true),
            ("a=b,c!=d", json!({"a": "b", "c": "d"}), false),
            ("  a = b ,\tc  ", json!({"a": "b", "c": "1"}), true),
            ("  a = b ,\tc  ", json!({"a": "b"}), false),
            ("x in (in,notin)", json!({"x": "notin"}), true),
            ("in=notin", json!({"in": "notin"}), true),
            ("a in ()", json!({"a": ""}), true),
            ("a in ()", json!({"a": "x"}), false),
            ("a in (,x)", json!({"a": ""}), true),
            ("a=", json!({"a": ""}), true),
            (
                "example.com/app=web",
                json!({"example.com/app": "web"}),
                true,
            ),
            ("a.b_c-d=E.f_G-1", json!({"a.b_c-d": "E.f_G-1"}), true),
        ];
        for (selector, lbls, expected) in cases {
            let sel = LabelSelector::parse(selector).unwrap();
            let lbls = labels(lbls.clone());
            assert_eq!(
                sel.matches(Some(&lbls)),
                *expected,
                "{selector:?} on {lbls:?}"
            );
        }
    }

    #[test]
    fn missing_labels_map_behaves_like_empty_labels() {
        let cases = [
            ("a!=b", true),
            ("a notin (x)", true),
            ("!a", true),
            ("a", false),
            ("", true),
        ];
        for (selector, expected) in cases {
            let sel = LabelSelector::parse(selector).unwrap();
            assert_eq!(sel.matches(None), expected, "{selector}");
        }
    }

    #[test]
    fn label_selector_errors_use_apiserver_wording() {
        let key_regex = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let value_regex = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
        let cases: Vec<(&str, String)> = vec![
            ("a b", "unable to parse requirement: found 'b', expected: in, notin, =, ==, !=, gt, lt".into()),
            ("a in x", "unable to parse requirement: found 'x' expected: '('".into()),
            ("a in (x", "unable to parse requirement: found '', expected: ',' or ')'".into()),
            ("a in (x y)", "unable to parse requirement: found 'y', expected: ',' or ')'".into()),
            ("a in (=)", "unable to parse requirement: found '=', expected: ',', ')' or identifier".into()),
            ("a=b,", "found '', expected: identifier after ','".into()),
            ("a=b,,c", "found ',', expected: identifier after ','".into()),
            ("a=b c", "found 'c', expected: ',' or 'end of string'".into()),
            ("!a=b", "found '=', expected: ',' or 'end of string'".into()),
            ("(a)", "found '(', expected: !, identifier, or 'end of string'".into()),
            ("a=(", "unable to parse requirement: found '(', expected: identifier".into()),
            ("!", "unable to parse requirement: found '', expected: identifier".into()),
            ("-a=b", format!("unable to parse requirement: <nil>: Invalid value: \"-a\": {key_regex}")),
            ("a=b/c", format!("unable to parse requirement: values[0][a]: Invalid value: \"b/c\": {value_regex}")),
            ("a>x", "unable to parse requirement: values[0]: Invalid value: \"x\": for 'Gt', 'Lt' operators, the value must be an integer".into()),
            ("a>-1", format!("unable to parse requirement: values[0][a]: Invalid value: \"-1\": {value_regex}")),
            (
                "a>x/y",
                format!("unable to parse requirement: [values[0]: Invalid value: \"x/y\": for 'Gt', 'Lt' operators, the value must be an integer, values[0][a]: Invalid value: \"x/y\": {value_regex}]"),
            ),
            (
                "Example.com/app",
                "unable to parse requirement: <nil>: Invalid value: \"Example.com/app\": prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into(),
            ),
            ("/app", "unable to parse requirement: <nil>: Invalid value: \"/app\": prefix part must be non-empty".into()),
            (
                "a/b/c",
                "unable to parse requirement: <nil>: Invalid value: \"a/b/c\": a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')".into(),
            ),
        ];
        for (selector, expected) in cases {
            let err = LabelSelector::parse(selector).unwrap_err();
            assert_eq!(err.to_string(), expected, "{selector:?}");
        }
        let long_key = "k".repeat(64);
        let err = LabelSelector::parse(&long_key).unwrap_err().to_string();
        assert!(
            err.ends_with("name part must be no more than 63 bytes"),
            "{err}"
        );
        let long_value = format!("a={}", "v".repeat(64));
        let err = LabelSelector::parse(&long_value).unwrap_err().to_string();
        assert!(
            err.contains("values[0][a]: Invalid value:")
                && err.contains("must be no more than 63 bytes"),
            "{err}"
        );
    }

    #[test]
    fn label_selector_display_is_sorted_and_normalised() {
        let sel = LabelSelector::parse("z notin (b,a), a==x , !m, k>2").unwrap();
        assert_eq!(sel.to_string(), "a==x,k>2,!m,z notin (a,b)");
        assert!(LabelSelector::parse("").unwrap().is_empty());
    }

    #[test]
    fn metav1_label_selectors() {
        let app_web = labels(json!({"app": "web", "tier": "front"}));
        let app_db = labels(json!({"app": "db"}));
        let cases: &[(Value, bool, bool)] = &[
            (json!(null), false, false),
            (json!({}), true, true),
            (json!({"matchLabels": {"app": "web"}}), true, false),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "In", "values": ["web", "api"]}]}),
                true,
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "app", "operator": "NotIn", "values": ["web"]}]}),
                false,
                true,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}),
                true,
                false,
            ),
            (
                json!({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}),
                false,
                true,
            ),
            (
                json!({"matchLabels": {"app": "web"}, "matchExpressions": [{"key": "tier", "operator": "In", "values": ["back"]}]}),
                false,
                false,
            ),
        ];
        for (selector, web, db) in cases {
            let sel = LabelSelector::from_metav1(selector).unwrap();
            assert_eq!(sel.matches(Some(&app_web)), *web, "{selector} on web");
            assert_eq!(sel.matches(Some(&app_db)), *db, "{selector} on db");
        }
        let err = LabelSelector::from_metav1(
            &json!({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "\"Gt\" is not a valid label selector operator"
        );
        let err = LabelSelector::from_metav1(
            &json!({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty"
        );
        let err =
            LabelSelector::from_metav1(&json!({"matchLabels": {"bad key": "x"}})).unwrap_err();
        assert!(
            err.to_string()
                .starts_with("key: Invalid value: \"bad key\": name part"),
            "{err}"
        );
    }

    #[test]
    fn field_selector_parsing_and_matching() {
        let get = |f: &str| match f {
            "metadata.name" => Some("a,b".to_string()),
            "status.phase" => Some("Running".to_string()),
            "x" => Some("a=b\\c".to_string()),
            _ => None,
        };
        // (selector, expected match)
        let cases = [
            ("", true),
            ("status.phase=Running", true),
            ("status.phase==Running", true),
            ("status.phase!=Running", false),
            ("status.phase=Pending", false),
            ("metadata.name=a\\,b", true),
            ("metadata.name=a\\,b,status.phase=Running", true),
            ("metadata.name=a\\,b,status.phase!=Running", false),
            ("x=a\\=b\\\\c", true),
            ("spec.nodeName=", true),
            ("spec.nodeName!=", false),
            ("spec.nodeName=node-1", false),
            ("spec.nodeName!=node-1", true),
        ];
        for (selector, expected) in cases {
            let sel = FieldSelector::parse(selector).unwrap();
            assert_eq!(sel.matches(get), expected, "{selector:?}");
        }
    }

    #[test]
    fn field_selector_errors_and_accessors() {
        let cases = [
            ("x", "invalid selector: 'x'; can't understand 'x'"),
            ("a=b,c", "invalid selector: 'a=b,c'; can't understand 'c'"),
            (
                "x=a\\q",
                "invalid field selector: invalid escape sequence: \\q",
            ),
            (
                "x=a\\",
                "invalid field selector: invalid escape sequence: \\",
            ),
            (
                "x=a=b",
                "invalid field selector: unescaped character in value: 61",
            ),
            (
                "x!==b",
                "invalid field selector: unescaped character in value: 61",
            ),
        ];
        for (selector, expected) in cases {
            let err = FieldSelector::parse(selector).unwrap_err();
            assert_eq!(err.to_string(), expected, "{selector:?}");
        }
        let sel = FieldSelector::parse("status.phase!=Failed,spec.nodeName=n1").unwrap();
        assert_eq!(
            sel.fields().collect::<Vec<_>>(),
            vec!["spec.nodeName", "status.phase"]
        );
        assert_eq!(sel.requires_exact_match("spec.nodeName"), Some("n1"));
        assert_eq!(sel.requires_exact_match("status.phase"), None);
        assert_eq!(sel.to_string(), "spec.nodeName=n1,status.phase!=Failed");
    }

    #[test]
    fn supported_fields_per_resource() {
        let cases = [
            ("pods", "spec.nodeName", true),
            ("pods", "spec.host", true),
            ("pods", "status.podIP", true),
            ("pods", "spec.containers", false),
            ("events", "involvedObject.uid", true),
            ("events", "reportingComponent", true),
            ("events", "message", false),
            ("secrets", "type", true),
            ("configmaps", "type", false),
            ("nodes", "spec.unschedulable", true),
            ("nodes", "metadata.name", true),
            ("nodes", "metadata.namespace", false),
            ("namespaces", "status.phase", true),
            ("namespaces", "metadata.namespace", false),
            ("persistentvolumeclaims", "metadata.namespace", true),
            ("persistentvolumeclaims", "status.phase", false),
            ("replicasets", "metadata.name", true),
            ("replicasets", "status.replicas", false),
            ("widgets", "metadata.name", true),
            ("widgets", "spec.size", false),
        ];
        for (resource, field, expected) in cases {
            assert_eq!(
                supported_field(resource, field),
                expected,
                "{resource} {field}"
            );
        }
        let sel = FieldSelector::parse("spec.foo=1").unwrap();
        assert_eq!(
            validate_fields("pods", &sel).unwrap_err().to_string(),
            "field label not supported: spec.foo"
        );
        assert_eq!(
            validate_fields("configmaps", &sel).unwrap_err().to_string(),
            "\"spec.foo\" is not a known field selector: only \"metadata.name\", \"metadata.namespace\""
        );
        assert!(validate_fields("pods", &FieldSelector::parse("spec.nodeName=a").unwrap()).is_ok());
    }

    #[test]
    fn field_values_per_resource() {
        let pod = json!({
            "metadata": {"name": "p", "namespace": "ns"},
            "spec": {"restartPolicy": "Always", "serviceAccountName": "sa"},
            "status": {"phase": "Running", "podIP": "10.0.0.9", "podIPs": [{"ip": "10.0.0.1"}]}
        });
        let event = json!({
            "metadata": {"name": "e", "namespace": "ns"},
            "involvedObject": {"kind": "Pod", "name": "p", "uid": "u1"},
            "reason": "Started", "type": "Normal", "reportingComponent": "kubelet", "source": {}
        });
        let node = json!({"metadata": {"name": "n"}, "spec": {}});
        let cases: Vec<(&str, &Value, &str, Option<&str>)> = vec![
            ("pods", &pod, "metadata.name", Some("p")),
            ("pods", &pod, "metadata.namespace", Some("ns")),
            ("pods", &pod, "spec.nodeName", None),
            ("pods", &pod, "spec.host", None),
            ("pods", &pod, "spec.hostNetwork", Some("false")),
            ("pods", &pod, "spec.restartPolicy", Some("Always")),
            ("pods", &pod, "spec.serviceAccountName", Some("sa")),
            ("pods", &pod, "status.phase", Some("Running")),
            ("pods", &pod, "status.podIP", Some("10.0.0.1")),
            ("pods", &pod, "spec.containers", None),
            ("events", &event, "involvedObject.kind", Some("Pod")),
            ("events", &event, "involvedObject.uid", Some("u1")),
            ("events", &event, "reason", Some("Started")),
            ("events", &event, "type", Some("Normal")),
            ("events", &event, "source", Some("kubelet")),
            ("events", &event, "reportingComponent", Some("kubelet")),
            ("nodes", &node, "spec.unschedulable", Some("false")),
            ("nodes", &node, "metadata.namespace", None),
        ];
        for (resource, obj, field, expected) in cases {
            assert_eq!(
                field_value(resource, obj, field).as_deref(),
                expected,
                "{resource} {field}"
            );
        }
        let secret = json!({"metadata": {"name": "s"}, "type": "kubernetes.io/tls"});
        assert_eq!(
            field_value("secrets", &secret, "type").as_deref(),
            Some("kubernetes.io/tls")
        );
        let ns = json!({"metadata": {"name": "default"}, "status": {"phase": "Active"}});
        assert_eq!(
            field_value("namespaces", &ns, "status.phase").as_deref(),
            Some("Active")
        );
        let job = json!({"metadata": {"name": "j"}, "status": {"succeeded": 2}});
        assert_eq!(
            field_value("jobs", &job, "status.successful").as_deref(),
            Some("2")
        );
        let cordoned = json!({"metadata": {"name": "n"}, "spec": {"unschedulable": true}});
        assert_eq!(
            field_value("nodes", &cordoned, "spec.unschedulable").as_deref(),
            Some("true")
        );
    }

    #[test]
    fn unscheduled_pods_match_empty_node_name() {
        let pods = [
            json!({"metadata": {"name": "a"}, "spec": {}}),
            json!({"metadata": {"name": "b"}, "spec": {"nodeName": "n1"}}),
        ];
        let sel = FieldSelector::parse("spec.nodeName=").unwrap();
        let selected: Vec<&str> = pods
            .iter()
            .filter(|p| sel.matches(|f| field_value("pods", p, f)))
            .filter_map(|p| p.pointer("/metadata/name").and_then(Value::as_str))
            .collect();
        assert_eq!(selected, vec!["a"]);
    }
}
