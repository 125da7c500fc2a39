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

// ---------------------------------------------------------------------------------------------
// Lexer

#[derive(Debug, Clone, PartialEq)]
enum Token {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    Ident(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Bang,
    Minus,
    Plus,
    Star,
    Slash,
    Percent,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    In,
}

fn syntax(offset: usize, message: impl Into<String>) -> CompileError {
    CompileError::Syntax {
        offset,
        message: message.into(),
    }
}

fn tokenize(src: &str) -> Result<Vec<(usize, Token)>, CompileError> {
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let offset = |i: usize| chars.get(i).map_or(src.len(), |(o, _)| *o);
    while let Some(c) = at(i) {
        let start = offset(i);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // Comments run to the end of the line.
        if c == '/' && at(i + 1) == Some('/') {
            while let Some(c) = at(i) {
                if c == '\n' {
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, next) = lex_number(&chars, i, start)?;
            out.push((start, tok));
            i = next;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let mut j = i;
            while let Some(c) = at(j) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    j += 1;
                } else {
                    break;
                }
            }
            let word: String = chars[i..j].iter().map(|(_, c)| *c).collect();
            let next = at(j);
            if matches!(next, Some('"' | '\'')) {
                let lower = word.to_ascii_lowercase();
                if lower == "r" {
                    let (s, end) = lex_string(&chars, j, true, start)?;
                    out.push((start, Token::Str(s)));
                    i = end;
                    continue;
                }
                if lower == "b" || lower == "rb" || lower == "br" {
                    return Err(CompileError::Unsupported("bytes literals".into()));
                }
            }
            out.push((
                start,
                if word == "in" {
                    Token::In
                } else {
                    Token::Ident(word)
                },
            ));
            i = j;
            continue;
        }
        if c == '"' || c == '\'' {
            let (s, end) = lex_string(&chars, i, false, start)?;
            out.push((start, Token::Str(s)));
            i = end;
            continue;
        }
        let two = |a: char, b: char| c == a && at(i + 1) == Some(b);
        let (tok, len) = if two('=', '=') {
            (Token::EqEq, 2)
        } else if two('!', '=') {
            (Token::NotEq, 2)
        } else if two('<', '=') {
            (Token::Le, 2)
        } else if two('>', '=') {
            (Token::Ge, 2)
        } else if two('&', '&') {
            (Token::AndAnd, 2)
        } else if two('|', '|') {
            (Token::OrOr, 2)
        } else {
            let tok = match c {
                '(' => Token::LParen,
                ')' => Token::RParen,
                '[' => Token::LBracket,
                ']' => Token::RBracket,
                '{' => Token::LBrace,
                '}' => Token::RBrace,
                '.' => Token::Dot,
                ',' => Token::Comma,
                ':' => Token::Colon,
                '?' => Token::Question,
                '!' => Token::Bang,
                '-' => Token::Minus,
                '+' => Token::Plus,
                '*' => Token::Star,
                '/' => Token::Slash,
                '%' => Token::Percent,
                '<' => Token::Lt,
                '>' => Token::Gt,
                other => return Err(syntax(start, format!("unexpected character {other:?}"))),
            };
            (tok, 1)
        };
        out.push((start, tok));
        i += len;
    }
    Ok(out)
}

fn lex_number(
    chars: &[(usize, char)],
    mut i: usize,
    start: usize,
) -> Result<(Token, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let collect =
        |from: usize, to: usize| -> String { chars[from..to].iter().map(|(_, c)| *c).collect() };
    if at(i) == Some('0') && matches!(at(i + 1), Some('x' | 'X')) {
        let digits_start = i + 2;
        i = digits_start;
        while at(i).is_some_and(|c| c.is_ascii_hexdigit()) {
            i += 1;
        }
        let digits = collect(digits_start, i);
        if matches!(at(i), Some('u' | 'U')) {
            let v = u64::from_str_radix(&digits, 16)
                .map_err(|_| syntax(start, "invalid uint literal"))?;
            return Ok((Token::Uint(v), i + 1));
        }
        let v =
            i64::from_str_radix(&digits, 16).map_err(|_| syntax(start, "invalid int literal"))?;
        return Ok((Token::Int(v), i));
    }
    let int_start = i;
    while at(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    let mut is_double = false;
    if at(i) == Some('.') && at(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        is_double = true;
        i += 1;
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    if matches!(at(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some('+' | '-')) {
            j += 1;
        }
        if at(j).is_some_and(|c| c.is_ascii_digit()) {
            is_double = true;
            i = j;
            while at(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
        }
    }
    let text = collect(int_start, i);
    if is_double {
        let v: f64 = text
            .parse()
            .map_err(|_| syntax(start, "invalid double literal"))?;
        return Ok((Token::Double(v), i));
    }
    if matches!(at(i), Some('u' | 'U')) {
        let v: u64 = text
            .parse()
            .map_err(|_| syntax(start, "invalid uint literal"))?;
        return Ok((Token::Uint(v), i + 1));
    }
    let v: i64 = text
        .parse()
        .map_err(|_| syntax(start, "int literal out of range"))?;
    Ok((Token::Int(v), i))
}

fn lex_string(
    chars: &[(usize, char)],
    i: usize,
    raw: bool,
    start: usize,
) -> Result<(String, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let quote = at(i).ok_or_else(|| syntax(start, "missing quote"))?;
    let triple = at(i + 1) == Some(quote) && at(i + 2) == Some(quote);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = String::new();
    loop {
        let c = at(j).ok_or_else(|| syntax(start, "unterminated string literal"))?;
        if c == quote {
            if !triple {
                return Ok((out, j + 1));
            }
            if at(j + 1) == Some(quote) && at(j + 2) == Some(quote) {
                return Ok((out, j + 3));
            }
        }
        if !triple && (c == '\n' || c == '\r') {
            return Err(syntax(start, "newline in string literal"));
        }
        if c == '\\' && !raw {
            let (decoded, next) = lex_escape(chars, j + 1, start)?;
            out.push(decoded);
            j = next;
            continue;
        }
        out.push(c);
        j += 1;
    }
}

fn lex_escape(
    chars: &[(usize, char)],
    j: usize,
    start: usize,
) -> Result<(char, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let c = at(j).ok_or_else(|| syntax(start, "unterminated escape"))?;
    let simple = match c {
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'f' => Some('\x0c'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\x0b'),
        '\\' | '\'' | '"' | '`' | '?' => Some(c),
        _ => None,
    };
    if let Some(s) = simple {
        return Ok((s, j + 1));
    }
    let (radix, len, from) = match c {
        'x' | 'X' => (16, 2, j + 1),
        'u' => (16, 4, j + 1),
        'U' => (16, 8, j + 1),
        '0'..='3' => (8, 3, j),
        _ => return Err(syntax(start, format!("invalid escape \\{c}"))),
    };
    let digits: String = (from..from + len).filter_map(at).collect();
    if digits.chars().count() != len {
        return Err(syntax(start, "truncated escape"));
    }
    let code = u32::from_str_radix(&digits, radix).map_err(|_| syntax(start, "invalid escape"))?;
    let ch = char::from_u32(code).ok_or_else(|| syntax(start, "invalid code point"))?;
    Ok((ch, from + len))
}

// ---------------------------------------------------------------------------------------------
// Parser

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
    In,
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

#[derive(Debug, Clone)]
enum Expr {
    Lit(CelValue),
    Ident(String),
    Select(Box<Expr>, String),
    Has(Box<Expr>, String),
    Index(Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>),
    Method(Box<Expr>, String, Vec<Expr>),
    List(Vec<Expr>),
    Map(Vec<(Expr, Expr)>),
    Not(Box<Expr>),
    Neg(Box<Expr>),
    Binary(BinOp, Box<Expr>, Box<Expr>),
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Cond(Box<Expr>, Box<Expr>, Box<Expr>),
    Comprehension {
        kind: Macro,
        range: Box<Expr>,
        var: String,
        filter: Option<Box<Expr>>,
        body: Box<Expr>,
    },
}

struct Parser {
    tokens: Vec<(usize, Token)>,
    pos: usize,
    depth: usize,
    end: usize,
}

impl Parser {
    fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(o, _)| *o)
    }

    fn eat(&mut self, tok: &Token) -> bool {
        if self.peek() == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn expect(&mut self, tok: &Token) -> Result<(), CompileError> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(syntax(
                self.offset(),
                format!("expected {tok:?}, found {:?}", self.peek()),
            ))
        }
    }

    fn enter(&mut self) -> Result<(), CompileError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(self.offset(), "expression nested too deeply"));
        }
        Ok(())
    }

    fn parse_expr(&mut self) -> Result<Expr, CompileError> {
        self.enter()?;
        let cond = self.parse_binary(0)?;
        let result = if self.eat(&Token::Question) {
            let then = self.parse_binary(0)?;
            self.expect(&Token::Colon)?;
            let otherwise = self.parse_expr()?;
            Expr::Cond(Box::new(cond), Box::new(then), Box::new(otherwise))
        } else {
            cond
        };
        self.depth -= 1;
        Ok(result)
    }

    /// Binary operators by precedence climbing: `||` < `&&` < relations < `+ -` < `* / %`, all
    /// left-associative. One function for all levels keeps the parser's stack use small.
    fn parse_binary(&mut self, min_precedence: u8) -> Result<Expr, CompileError> {
        let mut left = self.parse_unary()?;
        let base = self.depth;
        loop {
            let (precedence, op) = match self.peek() {
                Some(Token::OrOr) => (1, None),
                Some(Token::AndAnd) => (2, None),
                Some(Token::EqEq) => (3, Some(BinOp::Eq)),
                Some(Token::NotEq) => (3, Some(BinOp::Ne)),
                Some(Token::Lt) => (3, Some(BinOp::Lt)),
                Some(Token::Le) => (3, Some(BinOp::Le)),
                Some(Token::Gt) => (3, Some(BinOp::Gt)),
                Some(Token::Ge) => (3, Some(BinOp::Ge)),
                Some(Token::In) => (3, Some(BinOp::In)),
                Some(Token::Plus) => (4, Some(BinOp::Add)),
                Some(Token::Minus) => (4, Some(BinOp::Sub)),
                Some(Token::Star) => (5, Some(BinOp::Mul)),
                Some(Token::Slash) => (5, Some(BinOp::Div)),
                Some(Token::Percent) => (5, Some(BinOp::Rem)),
                _ => break,
            };
            if precedence <= min_precedence {
                break;
            }
            self.pos += 1;
            // Every operator adds a level to the tree that evaluation recurses through.
            self.enter()?;
            let right = self.parse_binary(precedence)?;
            left = match (precedence, op) {
                (1, _) => Expr::Or(Box::new(left), Box::new(right)),
                (2, _) => Expr::And(Box::new(left), Box::new(right)),
                (_, Some(op)) => Expr::Binary(op, Box::new(left), Box::new(right)),
                (_, None) => return Err(syntax(self.offset(), "unknown operator")),
            };
        }
        self.depth = base;
        Ok(left)
    }

    fn parse_unary(&mut self) -> Result<Expr, CompileError> {
        self.enter()?;
        let result = if self.eat(&Token::Bang) {
            Expr::Not(Box::new(self.parse_unary()?))
        } else if self.eat(&Token::Minus) {
            match self.parse_unary()? {
                Expr::Lit(CelValue::Int(i)) => Expr::Lit(CelValue::Int(-i)),
                Expr::Lit(CelValue::Double(d)) => Expr::Lit(CelValue::Double(-d)),
                other => Expr::Neg(Box::new(other)),
            }
        } else {
            self.parse_member()?
        };
        self.depth -= 1;
        Ok(result)
    }

    fn parse_member(&mut self) -> Result<Expr, CompileError> {
        let mut expr = self.parse_primary()?;
        let base = self.depth;
        loop {
            self.enter()?;
            if self.eat(&Token::Dot) {
                let offset = self.offset();
                let name = match self.peek() {
                    Some(Token::Ident(name)) => name.clone(),
                    Some(Token::Question) => {
                        return Err(CompileError::Unsupported("optional field selection".into()));
                    }
                    other => {
                        return Err(syntax(
                            offset,
                            format!("expected field name, found {other:?}"),
                        ));
                    }
                };
                self.pos += 1;
                if self.eat(&Token::LParen) {
                    let args = self.parse_args(&Token::RParen)?;
                    expr = method_or_macro(expr, name, args, offset)?;
                } else {
                    expr = Expr::Select(Box::new(expr), name);
                }
            } else if self.eat(&Token::LBracket) {
                if self.peek() == Some(&Token::Question) {
                    return Err(CompileError::Unsupported("optional index".into()));
                }
                let index = self.parse_expr()?;
                self.expect(&Token::RBracket)?;
                expr = Expr::Index(Box::new(expr), Box::new(index));
            } else {
                self.depth = base;
                return Ok(expr);
            }
        }
    }

    fn parse_args(&mut self, close: &Token) -> Result<Vec<Expr>, CompileError> {
        let mut args = Vec::new();
        if self.eat(close) {
            return Ok(args);
        }
        loop {
            args.push(self.parse_expr()?);
            if self.eat(close) {
                return Ok(args);
            }
            self.expect(&Token::Comma)?;
            // CEL allows a trailing comma in list literals.
            if self.eat(close) {
                return Ok(args);
            }
        }
    }

    fn parse_primary(&mut self) -> Result<Expr, CompileError> {
        let offset = self.offset();
        let tok = self
            .peek()
            .cloned()
            .ok_or_else(|| syntax(offset, "unexpected end of expression"))?;
        self.pos += 1;
        match tok {
            Token::Int(i) => Ok(Expr::Lit(CelValue::Int(i))),
            Token::Uint(u) => Ok(Expr::Lit(CelValue::Uint(u))),
            Token::Double(d) => Ok(Expr::Lit(CelValue::Double(d))),
            Token::Str(s) => Ok(Expr::Lit(CelValue::String(s))),
            Token::Ident(name) => match name.as_str() {
                "true" => Ok(Expr::Lit(CelValue::Bool(true))),
                "false" => Ok(Expr::Lit(CelValue::Bool(false))),
                "null" => Ok(Expr::Lit(CelValue::Null)),
                _ if self.eat(&Token::LParen) => {
                    let args = self.parse_args(&Token::RParen)?;
                    if name == "has" {
                        return match <[Expr; 1]>::try_from(args) {
                            Ok([Expr::Select(target, field)]) => Ok(Expr::Has(target, field)),
                            _ => Err(syntax(offset, "invalid argument to has() macro")),
                        };
                    }
                    Ok(Expr::Call(name, args))
                }
                _ => Ok(Expr::Ident(name)),
            },
            Token::LParen => {
                let inner = self.parse_expr()?;
                self.expect(&Token::RParen)?;
                Ok(inner)
            }
            Token::LBracket => Ok(Expr::List(self.parse_args(&Token::RBracket)?)),
            Token::LBrace => {
                let mut entries = Vec::new();
                if self.eat(&Token::RBrace) {
                    return Ok(Expr::Map(entries));
                }
                loop {
                    let key = self.parse_expr()?;
                    self.expect(&Token::Colon)?;
                    let value = self.parse_expr()?;
                    entries.push((key, value));
                    if self.eat(&Token::RBrace) {
                        return Ok(Expr::Map(entries));
                    }
                    self.expect(&Token::Comma)?;
                    if self.eat(&Token::RBrace) {
                        return Ok(Expr::Map(entries));
                    }
                }
            }
            Token::Dot => Err(CompileError::Unsupported("leading-dot identifiers".into())),
            other => Err(syntax(offset, format!("unexpected {other:?}"))),
        }
    }
}

fn method_or_macro(
    target: Expr,
    name: String,
    mut args: Vec<Expr>,
    offset: usize,
) -> Result<Expr, CompileError> {
    let kind = match name.as_str() {
        "all" => Macro::All,
        "exists" => Macro::Exists,
        "exists_one" => Macro::ExistsOne,
        "map" => Macro::Map,
        "filter" => Macro::Filter,
        _ => return Ok(Expr::Method(Box::new(target), name, args)),
    };
    let arity_ok = match kind {
        Macro::Map => args.len() == 2 || args.len() == 3,
        _ => args.len() == 2,
    };
    if !arity_ok {
        return Err(syntax(
            offset,
            format!("wrong number of arguments to {name}()"),
        ));
    }
    let var = match args.first() {
        Some(Expr::Ident(v)) => v.clone(),
        _ => {
            return Err(syntax(
                offset,
                format!("argument to {name}() must be a simple name"),
            ));
        }
    };
    let body = args
        .pop()
        .ok_or_else(|| syntax(offset, "missing macro body"))?;
    let filter = if args.len() == 2 {
        args.pop().map(Box::new)
    } else {
        None
    };
    Ok(Expr::Comprehension {
        kind,
        range: Box::new(target),
        var,
        filter,
        body: Box::new(body),
    })
}

// ---------------------------------------------------------------------------------------------
// Checker

struct Checker {
    scope: Vec<String>,
    uses_old_self: bool,
}

fn global_arity_ok(name: &str, n: usize) -> bool {
    match name {
        "size" | "int" | "uint" | "double" | "string" | "bool" | "dyn" => n == 1,
        "matches" => n == 2,
        _ => false,
    }
}

fn method_arity_ok(name: &str, n: usize) -> bool {
    match name {
        "size" | "lowerAscii" | "upperAscii" | "trim" | "isSorted" | "sum" | "min" | "max" => {
            n == 0
        }
        "matches" | "startsWith" | "endsWith" | "contains" | "charAt" => n == 1,
        "substring" | "indexOf" | "lastIndexOf" | "split" => n == 1 || n == 2,
        "replace" => n == 2 || n == 3,
        "join" => n <= 1,
        _ => false,
    }
}

impl Checker {
    fn check_all(&mut self, exprs: &[Expr]) -> Result<(), CompileError> {
        for e in exprs {
            self.check(e)?;
        }
        Ok(())
    }

    fn check(&mut self, e: &Expr) -> Result<(), CompileError> {
        match e {
            Expr::Lit(_) => Ok(()),
            Expr::Ident(name) => {
                if name == "oldSelf" {
                    self.uses_old_self = true;
                }
                if self.scope.iter().any(|s| s == name) {
                    Ok(())
                } else {
                    Err(CompileError::Unsupported(format!(
                        "undeclared reference to '{name}'"
                    )))
                }
            }
            Expr::Select(t, _) | Expr::Has(t, _) | Expr::Not(t) | Expr::Neg(t) => self.check(t),
            Expr::Index(a, b) | Expr::Binary(_, a, b) | Expr::And(a, b) | Expr::Or(a, b) => {
                self.check(a)?;
                self.check(b)
            }
            Expr::Cond(a, b, c) => {
                self.check(a)?;
                self.check(b)?;
                self.check(c)
            }
            Expr::List(items) => self.check_all(items),
            Expr::Map(entries) => {
                for (k, v) in entries {
                    self.check(k)?;
                    self.check(v)?;
                }
                Ok(())
            }
            Expr::Call(name, args) => {
                if !global_arity_ok(name, args.len()) {
                    return Err(CompileError::Unsupported(format!(
                        "function {name}() with {} argument(s)",
                        args.len()
                    )));
                }
                self.check_all(args)
            }
            Expr::Method(target, name, args) => {
                if !method_arity_ok(name, args.len()) {
                    return Err(CompileError::Unsupported(format!(
                        "method .{name}() with {} argument(s)",
                        args.len()
                    )));
                }
                self.check(target)?;
                self.check_all(args)
            }
            Expr::Comprehension {
                range,
                var,
                filter,
                body,
                ..
            } => {
                self.check(range)?;
                self.scope.push(var.clone());
                let result = filter
                    .as_deref()
                    .map_or(Ok(()), |f| self.check(f))
                    .and_then(|()| self.check(body));
                self.scope.pop();
                result
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/// Evaluation steps after which a rule is given up on (and skipped); the apiserver enforces a
/// cost budget instead.
const MAX_STEPS: u64 = 1_000_000;

/// Variables in scope and the work done so far.
struct Env {
    vars: Vec<(String, CelValue)>,
    steps: u64,
}

impl Env {
    fn lookup(&self, name: &str) -> Result<CelValue, EvalError> {
        for (n, v) in self.vars.iter().rev() {
            if n == name {
                return Ok(v.clone());
            }
        }
        unsupported(format!("'{name}' is not bound"))
    }
}

fn unsupported<T>(what: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Unsupported(what.into()))
}

fn runtime<T>(what: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Runtime(what.into()))
}

fn no_overload<T>(op: &str, args: &[&CelValue]) -> Result<T, EvalError> {
    let types: Vec<&str> = args.iter().map(|a| a.type_name()).collect();
    unsupported(format!("no such overload: {op}({})", types.join(", ")))
}

/// Kubernetes escapes property names that are not CEL identifiers (`__dash__`, `__dot__`,
/// `__slash__`, `__underscores__`, `__<keyword>__`); a rule selects them by the escaped name.
fn unescape_field(name: &str) -> String {
    const KEYWORDS: [&str; 18] = [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
    ];
    if let Some(inner) = name.strip_prefix("__").and_then(|n| n.strip_suffix("__"))
        && KEYWORDS.contains(&inner)
    {
        return inner.to_string();
    }
    if !name.contains("__") {
        return name.to_string();
    }
    let mut out = String::new();
    let mut rest = name;
    'outer: while !rest.is_empty() {
        for (escaped, plain) in [
            ("__underscores__", "__"),
            ("__dot__", "."),
            ("__dash__", "-"),
            ("__slash__", "/"),
        ] {
            if let Some(after) = rest.strip_prefix(escaped) {
                out.push_str(plain);
                rest = after;
                continue 'outer;
            }
        }
        let mut chars = rest.chars();
        if let Some(c) = chars.next() {
            out.push(c);
        }
        rest = chars.as_str();
    }
    out
}

// Evaluation is split into small functions with plain loops: recursion goes through `eval`,
// and small frames keep deep (but accepted) rules far from the stack limit in debug builds.
fn eval(e: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    env.steps += 1;
    if env.steps > MAX_STEPS {
        return unsupported("evaluation step limit exceeded");
    }
    match e {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ident(name) => env.lookup(name),
        Expr::Select(target, field) => eval_select(e, target, field, env),
        Expr::Has(target, field) => eval_has(target, field, env),
        Expr::Index(target, index) => eval_index(target, index, env),
        Expr::List(items) => Ok(CelValue::List(eval_all(items, env)?)),
        Expr::Map(entries) => eval_map(entries, env),
        Expr::Not(inner) => eval_not(inner, env),
        Expr::Neg(inner) => eval_neg(inner, env),
        Expr::And(a, b) => logical(a, b, env, false),
        Expr::Or(a, b) => logical(a, b, env, true),
        Expr::Cond(cond, then, otherwise) => eval_cond(cond, then, otherwise, env),
        Expr::Binary(op, a, b) => eval_binary(*op, a, b, env),
        Expr::Call(name, args) => eval_call(name, args, env),
        Expr::Method(target, name, args) => eval_method(target, name, args, env),
        Expr::Comprehension {
            kind,
            range,
            var,
            filter,
            body,
        } => eval_comprehension(*kind, range, var, filter.as_deref(), body, env),
    }
}

fn eval_all(exprs: &[Expr], env: &mut Env) -> Result<Vec<CelValue>, EvalError> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        out.push(eval(e, env)?);
    }
    Ok(out)
}

fn eval_select(
    whole: &Expr,
    target: &Expr,
    field: &str,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    // `self.a.b` is resolved in place, so only the selected value is copied.
    if let Some(found) = path_ref(whole, &env.vars) {
        return found.cloned();
    }
    let target = eval(target, env)?;
    select(&target, &unescape_field(field))
}

/// Resolves a chain of field selections on a variable without copying; `None` when the
/// expression is not such a chain.
fn path_ref<'a>(
    e: &Expr,
    vars: &'a [(String, CelValue)],
) -> Option<Result<&'a CelValue, EvalError>> {
    match e {
        Expr::Ident(name) => vars
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| Ok(v)),
        Expr::Select(target, field) => {
            let base = path_ref(target, vars)?;
            Some(base.and_then(|b| match b {
                CelValue::Map(m) => {
                    let field = unescape_field(field);
                    m.get(&field)
                        .map_or_else(|| runtime(format!("no such key: {field}")), Ok)
                }
                other => unsupported(format!("field selection on {}", other.type_name())),
            }))
        }
        _ => None,
    }
}

fn eval_has(target: &Expr, field: &str, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(target, env)? {
        CelValue::Map(m) => Ok(CelValue::Bool(m.contains_key(&unescape_field(field)))),
        other => no_overload("has", &[&other]),
    }
}

fn eval_index(target: &Expr, index: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    let target = eval(target, env)?;
    let index = eval(index, env)?;
    index_value(&target, &index)
}

fn eval_map(entries: &[(Expr, Expr)], env: &mut Env) -> Result<CelValue, EvalError> {
    let mut map = BTreeMap::new();
    for (k, v) in entries {
        let key = match eval(k, env)? {
            CelValue::String(s) => s,
            other => return unsupported(format!("map key of type {}", other.type_name())),
        };
        let value = eval(v, env)?;
        if map.contains_key(&key) {
            return runtime(format!("Failed with repeated key: {key}"));
        }
        map.insert(key, value);
    }
    Ok(CelValue::Map(map))
}

fn eval_not(inner: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(inner, env)? {
        CelValue::Bool(b) => Ok(CelValue::Bool(!b)),
        other => no_overload("!_", &[&other]),
    }
}

fn eval_neg(inner: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(inner, env)? {
        CelValue::Int(i) => int_result(i.checked_neg()),
        CelValue::Double(d) => Ok(CelValue::Double(-d)),
        other => no_overload("-_", &[&other]),
    }
}

fn eval_cond(
    cond: &Expr,
    then: &Expr,
    otherwise: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    match eval(cond, env)? {
        CelValue::Bool(true) => eval(then, env),
        CelValue::Bool(false) => eval(otherwise, env),
        other => no_overload("_?_:_", &[&other]),
    }
}

fn eval_binary(op: BinOp, a: &Expr, b: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    let a = eval(a, env)?;
    let b = eval(b, env)?;
    binary(op, &a, &b)
}

fn eval_call(name: &str, args: &[Expr], env: &mut Env) -> Result<CelValue, EvalError> {
    let args = eval_all(args, env)?;
    call_global(name, &args)
}

fn eval_method(
    target: &Expr,
    name: &str,
    args: &[Expr],
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let target = eval(target, env)?;
    let args = eval_all(args, env)?;
    call_method(&target, name, &args)
}

fn eval_comprehension(
    kind: Macro,
    range: &Expr,
    var: &str,
    filter: Option<&Expr>,
    body: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let range = eval(range, env)?;
    comprehension(kind, &range, var, filter, body, env)
}

/// `&&` and `||` are commutative in CEL: a decisive operand wins even if the other errors.
fn logical(a: &Expr, b: &Expr, env: &mut Env, is_or: bool) -> Result<CelValue, EvalError> {
    let decisive = is_or;
    let left = eval(a, env);
    if matches!(left, Ok(CelValue::Bool(v)) if v == decisive) {
        return Ok(CelValue::Bool(decisive));
    }
    let right = eval(b, env);
    if matches!(right, Ok(CelValue::Bool(v)) if v == decisive) {
        return Ok(CelValue::Bool(decisive));
    }
    match (left, right) {
        (Ok(CelValue::Bool(_)), Ok(CelValue::Bool(_))) => Ok(CelValue::Bool(!decisive)),
        (Err(e), _) | (_, Err(e)) => Err(e),
        (Ok(l), Ok(r)) => no_overload(if is_or { "_||_" } else { "_&&_" }, &[&l, &r]),
    }
}

fn select(target: &CelValue, field: &str) -> Result<CelValue, EvalError> {
    match target {
        CelValue::Map(m) => m
            .get(field)
            .cloned()
            .map_or_else(|| runtime(format!("no such key: {field}")), Ok),
        other => unsupported(format!("field selection on {}", other.type_name())),
    }
}

fn index_value(target: &CelValue, index: &CelValue) -> Result<CelValue, EvalError> {
    match (target, index) {
        (CelValue::List(items), _) => {
            let i = match index {
                CelValue::Int(i) => *i,
                CelValue::Uint(u) => i64::try_from(*u).unwrap_or(i64::MAX),
                CelValue::Double(d) if d.fract() == 0.0 => *d as i64,
                other => return no_overload("_[_]", &[target, other]),
            };
            usize::try_from(i)
                .ok()
                .and_then(|u| items.get(u))
                .cloned()
                .map_or_else(
                    || {
                        runtime(format!(
                            "index '{i}' out of range in list size '{}'",
                            items.len()
                        ))
                    },
                    Ok,
                )
        }
        (CelValue::Map(m), CelValue::String(k)) => m
            .get(k)
            .cloned()
            .map_or_else(|| runtime(format!("no such key: {k}")), Ok),
        _ => no_overload("_[_]", &[target, index]),
    }
}

/// CEL equality: numbers compare across int, uint and double; values of different types are
/// unequal.
fn equals(a: &CelValue, b: &CelValue) -> bool {
    use CelValue as V;
    match (a, b) {
        (V::Null, V::Null) => true,
        (V::Bool(x), V::Bool(y)) => x == y,
        (V::String(x), V::String(y)) => x == y,
        (V::List(x), V::List(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| equals(p, q))
        }
        (V::Map(x), V::Map(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| equals(v, w)))
        }
        (V::Opaque { kind: k1, raw: r1 }, V::Opaque { kind: k2, raw: r2 }) => k1 == k2 && r1 == r2,
        _ => numeric_cmp(a, b) == Some(Ordering::Equal),
    }
}

fn numeric_cmp(a: &CelValue, b: &CelValue) -> Option<Ordering> {
    use CelValue as V;
    match (a, b) {
        (V::Int(x), V::Int(y)) => Some(x.cmp(y)),
        (V::Uint(x), V::Uint(y)) => Some(x.cmp(y)),
        (V::Int(x), V::Uint(y)) => Some(if *x < 0 {
            Ordering::Less
        } else {
            (*x as u64).cmp(y)
        }),
        (V::Uint(_), V::Int(_)) => numeric_cmp(b, a).map(Ordering::reverse),
        (V::Double(x), V::Double(y)) => x.partial_cmp(y),
        (V::Double(x), V::Int(y)) => x.partial_cmp(&(*y as f64)),
        (V::Double(x), V::Uint(y)) => x.partial_cmp(&(*y as f64)),
        (V::Int(_) | V::Uint(_), V::Double(_)) => numeric_cmp(b, a).map(Ordering::reverse),
        _ => None,
    }
}

fn compare(a: &CelValue, b: &CelValue, op: &str) -> Result<Ordering, EvalError> {
    use CelValue as V;
    match (a, b) {
        (V::String(x), V::String(y)) => Ok(x.cmp(y)),
        (V::Bool(x), V::Bool(y)) => Ok(x.cmp(y)),
        _ => match numeric_cmp(a, b) {
            Some(o) => Ok(o),
            None => no_overload(op, &[a, b]),
        },
    }
}

fn binary(op: BinOp, a: &CelValue, b: &CelValue) -> Result<CelValue, EvalError> {
    use CelValue as V;
    let ordering = |name: &str, accept: fn(Ordering) -> bool| -> Result<CelValue, EvalError> {
        // NaN compares false against everything.
        if matches!(a, V::Double(x) if x.is_nan()) || matches!(b, V::Double(y) if y.is_nan()) {
            return Ok(V::Bool(false));
        }
        compare(a, b, name).map(|o| V::Bool(accept(o)))
    };
    match op {
        BinOp::Eq => Ok(V::Bool(equals(a, b))),
        BinOp::Ne => Ok(V::Bool(!equals(a, b))),
        BinOp::Lt => ordering("_<_", |o| o == Ordering::Less),
        BinOp::Le => ordering("_<=_", |o| o != Ordering::Greater),
        BinOp::Gt => ordering("_>_", |o| o == Ordering::Greater),
        BinOp::Ge => ordering("_>=_", |o| o != Ordering::Less),
        BinOp::In => match b {
            V::List(items) => Ok(V::Bool(items.iter().any(|i| equals(a, i)))),
            V::Map(m) => match a {
                V::String(k) => Ok(V::Bool(m.contains_key(k))),
                _ => Ok(V::Bool(false)),
            },
            _ => no_overload("@in", &[a, b]),
        },
        BinOp::Add => match (a, b) {
            (V::Int(x), V::Int(y)) => int_result(x.checked_add(*y)),
            (V::Uint(x), V::Uint(y)) => uint_result(x.checked_add(*y)),
            (V::Double(x), V::Double(y)) => Ok(V::Double(x + y)),
            (V::String(x), V::String(y)) => Ok(V::String(format!("{x}{y}"))),
            (V::List(x), V::List(y)) => Ok(V::List(x.iter().chain(y).cloned().collect())),
            _ => no_overload("_+_", &[a, b]),
        },
        BinOp::Sub => match (a, b) {
            (V::Int(x), V::Int(y)) => int_result(x.checked_sub(*y)),
            (V::Uint(x), V::Uint(y)) => uint_result(x.checked_sub(*y)),
            (V::Double(x), V::Double(y)) => Ok(V::Double(x - y)),
            _ => no_overload("_-_", &[a, b]),
        },
        BinOp::Mul => match (a, b) {
            (V::Int(x), V::Int(y)) => int_result(x.checked_mul(*y)),
            (V::Uint(x), V::Uint(y)) => uint_result(x.checked_mul(*y)),
            (V::Double(x), V::Double(y)) => Ok(V::Double(x * y)),
            _ => no_overload("_*_", &[a, b]),
        },
        BinOp::Div => match (a, b) {
            (V::Int(_) | V::Uint(_), V::Int(0) | V::Uint(0)) => runtime("division by zero"),
            (V::Int(x), V::Int(y)) => int_result(x.checked_div(*y)),
            (V::Uint(x), V::Uint(y)) => uint_result(x.checked_div(*y)),
            (V::Double(x), V::Double(y)) => Ok(V::Double(x / y)),
            _ => no_overload("_/_", &[a, b]),
        },
        BinOp::Rem => match (a, b) {
            (V::Int(_) | V::Uint(_), V::Int(0) | V::Uint(0)) => runtime("modulus by zero"),
            (V::Int(x), V::Int(y)) => int_result(x.checked_rem(*y)),
            (V::Uint(x), V::Uint(y)) => uint_result(x.checked_rem(*y)),
            _ => no_overload("_%_", &[a, b]),
        },
    }
}

fn int_result(v: Option<i64>) -> Result<CelValue, EvalError> {
    v.map(CelValue::Int)
        .map_or_else(|| runtime("integer overflow"), Ok)
}

fn uint_result(v: Option<u64>) -> Result<CelValue, EvalError> {
    v.map(CelValue::Uint)
        .map_or_else(|| runtime("unsigned integer overflow"), Ok)
}

fn regex_matches(s: &str, pattern: &str) -> Result<CelValue, EvalError> {
    match cached_regex(pattern) {
        Ok(re) => Ok(CelValue::Bool(re.is_match(s))),
        Err(e) => unsupported(format!("regular expression {pattern:?}: {e}")),
    }
}

fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

fn call_global(name: &str, args: &[CelValue]) -> Result<CelValue, EvalError> {
    use CelValue as V;
    let [arg, rest @ ..] = args else {
        return unsupported(format!("{name}() without arguments"));
    };
    match (name, arg, rest) {
        ("size", v, []) => size(v),
        ("matches", V::String(s), [V::String(re)]) => regex_matches(s, re),
        ("dyn", v, []) => Ok(v.clone()),
        ("int", v, []) => match v {
            V::Int(i) => Ok(V::Int(*i)),
            V::Uint(u) => i64::try_from(*u)
                .map(V::Int)
                .or_else(|_| runtime("integer overflow")),
            V::Double(d) => {
                if d.is_finite() && *d >= -9.223_372_036_854_776e18 && *d < 9.223_372_036_854_776e18
                {
                    Ok(V::Int(d.trunc() as i64))
                } else {
                    runtime("integer overflow")
                }
            }
            V::String(s) => s.parse::<i64>().map(V::Int).or_else(|_| {
                runtime(format!(
                    "strconv.ParseInt: parsing {}: invalid syntax",
                    go_quote(s)
                ))
            }),
            other => no_overload("int", &[other]),
        },
        ("uint", v, []) => match v {
            V::Uint(u) => Ok(V::Uint(*u)),
            V::Int(i) => u64::try_from(*i)
                .map(V::Uint)
                .or_else(|_| runtime("unsigned integer overflow")),
            V::Double(d) => {
                if d.is_finite() && *d >= 0.0 && *d < 1.844_674_407_370_955_2e19 {
                    Ok(V::Uint(d.trunc() as u64))
                } else {
                    runtime("unsigned integer overflow")
                }
            }
            V::String(s) => s.parse::<u64>().map(V::Uint).or_else(|_| {
                runtime(format!(
                    "strconv.ParseUint: parsing {}: invalid syntax",
                    go_quote(s)
                ))
            }),
            other => no_overload("uint", &[other]),
        },
        ("double", v, []) => match v {
            V::Double(d) => Ok(V::Double(*d)),
            V::Int(i) => Ok(V::Double(*i as f64)),
            V::Uint(u) => Ok(V::Double(*u as f64)),
            V::String(s) => s.parse::<f64>().map(V::Double).or_else(|_| {
                runtime(format!(
                    "strconv.ParseFloat: parsing {}: invalid syntax",
                    go_quote(s)
                ))
            }),
            other => no_overload("double", &[other]),
        },
        ("string", v, []) => match v {
            V::String(s) => Ok(V::String(s.clone())),
            V::Int(i) => Ok(V::String(i.to_string())),
            V::Uint(u) => Ok(V::String(u.to_string())),
            V::Double(d) => Ok(V::String(go_format_float(*d))),
            V::Bool(b) => Ok(V::String(b.to_string())),
            other => no_overload("string", &[other]),
        },
        ("bool", v, []) => match v {
            V::Bool(b) => Ok(V::Bool(*b)),
            V::String(s) => go_parse_bool(s).map(V::Bool).map_or_else(
                || {
                    runtime(format!(
                        "strconv.ParseBool: parsing {}: invalid syntax",
                        go_quote(s)
                    ))
                },
                Ok,
            ),
            other => no_overload("bool", &[other]),
        },
        _ => {
            let mut all: Vec<&CelValue> = vec![arg];
            all.extend(rest.iter());
            no_overload(name, &all)
        }
    }
}

fn size(v: &CelValue) -> Result<CelValue, EvalError> {
    let n = match v {
        CelValue::String(s) => s.chars().count(),
        CelValue::List(l) => l.len(),
        CelValue::Map(m) => m.len(),
        other => return no_overload("size", &[other]),
    };
    Ok(CelValue::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

fn char_index(chars_len: usize, i: i64) -> Result<usize, EvalError> {
    usize::try_from(i)
        .ok()
        .filter(|u| *u <= chars_len)
        .map_or_else(|| runtime(format!("index out of range: {i}")), Ok)
}

fn to_cel_index(i: usize) -> CelValue {
    CelValue::Int(i64::try_from(i).unwrap_or(i64::MAX))
}

fn string_index_of(
    s: &str,
    sub: &str,
    offset: Option<i64>,
    last: bool,
) -> Result<CelValue, EvalError> {
    let chars: Vec<char> = s.chars().collect();
    let needle: Vec<char> = sub.chars().collect();
    let start = match offset {
        Some(o) => char_index(chars.len(), o)?,
        None if last => chars.len(),
        None => 0,
    };
    if needle.is_empty() {
        return Ok(to_cel_index(start));
    }
    let fits =
        |i: usize| i + needle.len() <= chars.len() && chars[i..i + needle.len()] == needle[..];
    let found = if last {
        (0..=start).rev().find(|&i| fits(i))
    } else {
        (start..chars.len()).find(|&i| fits(i))
    };
    Ok(found.map_or(CelValue::Int(-1), to_cel_index))
}

fn call_method(target: &CelValue, name: &str, args: &[CelValue]) -> Result<CelValue, EvalError> {
    use CelValue as V;
    match (target, name, args) {
        (v, "size", []) => size(v),
        (V::String(s), "matches", [V::String(re)]) => regex_matches(s, re),
        (V::String(s), "startsWith", [V::String(p)]) => Ok(V::Bool(s.starts_with(p.as_str()))),
        (V::String(s), "endsWith", [V::String(p)]) => Ok(V::Bool(s.ends_with(p.as_str()))),
        (V::String(s), "contains", [V::String(p)]) => Ok(V::Bool(s.contains(p.as_str()))),
        (V::String(s), "lowerAscii", []) => Ok(V::String(s.to_ascii_lowercase())),
        (V::String(s), "upperAscii", []) => Ok(V::String(s.to_ascii_uppercase())),
        (V::String(s), "trim", []) => Ok(V::String(s.trim().to_string())),
        (V::String(s), "charAt", [V::Int(i)]) => {
            let chars: Vec<char> = s.chars().collect();
            let i = char_index(chars.len(), *i)?;
            Ok(V::String(
                chars.get(i).map(|c| c.to_string()).unwrap_or_default(),
            ))
        }
        (V::String(s), "substring", [V::Int(start), rest @ ..]) => {
            let chars: Vec<char> = s.chars().collect();
            let from = char_index(chars.len(), *start)?;
            let to = match rest {
                [] => chars.len(),
                [V::Int(end)] => char_index(chars.len(), *end)?,
                _ => return no_overload("substring", &[target]),
            };
            if from > to {
                return runtime(format!("invalid substring range. start: {from}, end: {to}"));
            }
            Ok(V::String(chars[from..to].iter().collect()))
        }
        (V::String(s), "indexOf", [V::String(sub)]) => string_index_of(s, sub, None, false),
        (V::String(s), "indexOf", [V::String(sub), V::Int(o)]) => {
            string_index_of(s, sub, Some(*o), false)
        }
        (V::String(s), "lastIndexOf", [V::String(sub)]) => string_index_of(s, sub, None, true),
        (V::String(s), "lastIndexOf", [V::String(sub), V::Int(o)]) => {
            string_index_of(s, sub, Some(*o), true)
        }
        (V::String(s), "replace", [V::String(from), V::String(to)]) => {
            Ok(V::String(s.replace(from.as_str(), to)))
        }
        (V::String(s), "replace", [V::String(from), V::String(to), V::Int(n)]) => {
            Ok(V::String(match usize::try_from(*n) {
                Ok(n) => s.replacen(from.as_str(), to, n),
                Err(_) => s.replace(from.as_str(), to),
            }))
        }
        (V::String(s), "split", [V::String(sep), rest @ ..]) => {
            let limit = match rest {
                [] => -1,
                [V::Int(n)] => *n,
                _ => return no_overload("split", &[target]),
            };
            split(s, sep, limit)
        }
        (V::List(items), "join", rest) => {
            let sep = match rest {
                [] => "",
                [V::String(sep)] => sep.as_str(),
                _ => return no_overload("join", &[target]),
            };
            let parts = items
                .iter()
                .map(|i| match i {
                    V::String(s) => Ok(s.as_str()),
                    other => no_overload("join", &[other]),
                })
                .collect::<Result<Vec<_>, _>>()?;
            Ok(V::String(parts.join(sep)))
        }
        (V::List(items), "isSorted", []) => {
            for pair in items.windows(2) {
                if compare(&pair[0], &pair[1], "isSorted")? == Ordering::Greater {
                    return Ok(V::Bool(false));
                }
            }
            Ok(V::Bool(true))
        }
        (V::List(items), "sum", []) => {
            let mut acc = match items.first() {
                Some(V::Double(_)) => V::Double(0.0),
                Some(V::Uint(_)) => V::Uint(0),
                _ => V::Int(0),
            };
            for i in items {
                acc = binary(BinOp::Add, &acc, i)?;
            }
            Ok(acc)
        }
        (V::List(items), "min" | "max", []) => {
            let want = if name == "min" {
                Ordering::Less
            } else {
                Ordering::Greater
            };
            let mut best = match items.first() {
                Some(first) => first,
                None => return runtime(format!("{name}(list) argument must not be empty")),
            };
            for i in &items[1..] {
                if compare(i, best, name)? == want {
                    best = i;
                }
            }
            Ok(best.clone())
        }
        _ => {
            let mut all = vec![target];
            all.extend(args.iter());
            no_overload(name, &all)
        }
    }
}

/// Go's `strings.SplitN` semantics, which the Kubernetes `split` function follows.
fn split(s: &str, sep: &str, limit: i64) -> Result<CelValue, EvalError> {
    let parts: Vec<String> = match limit {
        0 => Vec::new(),
        n if n < 0 => {
            if sep.is_empty() {
                s.chars().map(|c| c.to_string()).collect()
            } else {
                s.split(sep).map(str::to_string).collect()
            }
        }
        n => {
            let n = usize::try_from(n).unwrap_or(usize::MAX);
            if sep.is_empty() {
                let chars: Vec<char> = s.chars().collect();
                let mut out: Vec<String> = chars
                    .iter()
                    .take(n.saturating_sub(1))
                    .map(|c| c.to_string())
                    .collect();
                let rest: String = chars.iter().skip(n.saturating_sub(1)).collect();
                if !rest.is_empty() {
                    out.push(rest);
                }
                out
            } else {
                s.splitn(n, sep).map(str::to_string).collect()
            }
        }
    };
    Ok(CelValue::List(
        parts.into_iter().map(CelValue::String).collect(),
    ))
}

fn bind_and_eval(
    var: &str,
    element: CelValue,
    expr: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    env.vars.push((var.to_string(), element));
    let result = eval(expr, env);
    env.vars.pop();
    result
}

fn comprehension(
    kind: Macro,
    range: &CelValue,
    var: &str,
    filter: Option<&Expr>,
    body: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let elements: Vec<CelValue> = match range {
        CelValue::List(items) => items.clone(),
        CelValue::Map(m) => m.keys().cloned().map(CelValue::String).collect(),
        other => return no_overload("comprehension", &[other]),
    };
    let mut run = |element: CelValue, expr: &Expr| bind_and_eval(var, element, expr, env);
    match kind {
        Macro::All | Macro::Exists => {
            let decisive = kind == Macro::Exists;
            let mut first_error = None;
            for element in elements {
                match run(element, body) {
                    Ok(CelValue::Bool(b)) if b == decisive => return Ok(CelValue::Bool(decisive)),
                    Ok(CelValue::Bool(_)) => {}
                    Ok(other) => return no_overload("comprehension predicate", &[&other]),
                    Err(e) => {
                        first_error.get_or_insert(e);
                    }
                }
            }
            match first_error {
                Some(e) => Err(e),
                None => Ok(CelValue::Bool(!decisive)),
            }
        }
        Macro::ExistsOne => {
            let mut count = 0usize;
            for element in elements {
                match run(element, body)? {
                    CelValue::Bool(true) => count += 1,
                    CelValue::Bool(false) => {}
                    other => return no_overload("exists_one predicate", &[&other]),
                }
            }
            Ok(CelValue::Bool(count == 1))
        }
        Macro::Filter => {
            let mut out = Vec::new();
            for element in elements {
                match run(element.clone(), body)? {
                    CelValue::Bool(true) => out.push(element),
                    CelValue::Bool(false) => {}
                    other => return no_overload("filter predicate", &[&other]),
                }
            }
            Ok(CelValue::List(out))
        }
        Macro::Map => {
            let mut out = Vec::new();
            for element in elements {
                if let Some(f) = filter {
                    match run(element.clone(), f)? {
                        CelValue::Bool(true) => {}
                        CelValue::Bool(false) => continue,
                        other => return no_overload("map filter", &[&other]),
                    }
                }
                out.push(run(element, body)?);
            }
            Ok(CelValue::List(out))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rule: &str, self_json: Value) -> Result<CelValue, EvalError> {
        let program = match compile(rule) {
            Ok(p) => p,
            Err(e) => return Err(EvalError::Unsupported(format!("compile: {e}"))),
        };
        program.eval(&value_from_json(None, &self_json), None)
    }

    fn truth(rule: &str, self_json: Value) -> Option<bool> {
        match run(rule, self_json) {
            Ok(CelValue::Bool(b)) => Some(b),
            _ => None,
        }
    }

    #[test]
    fn evaluates_table_of_rules() {
        let obj = json!({
            "name": "web-1", "minReplicas": 2, "maxReplicas": 5, "ratio": 0.5,
            "days": ["monday", "tuesday"], "labels": {"app": "web"}, "empty": ""
        });
        let cases: &[(&str, bool)] = &[
            ("self.minReplicas <= self.maxReplicas", true),
            ("self.minReplicas > self.maxReplicas", false),
            ("self.name.size() <= 24 && size(self.name) == 5", true),
            ("self.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')", true),
            ("matches(self.name, '^[A-Z]')", false),
            (
                "self.name.startsWith('web') && self.name.endsWith('-1')",
                true,
            ),
            ("self.name.contains('b-')", true),
            ("!has(self.quantity) || self.quantity != ''", true),
            ("has(self.empty) && self.empty == ''", true),
            (
                "self.days.all(d, d in ['monday', 'tuesday', 'friday'])",
                true,
            ),
            ("self.days.all(d, d in ['monday'])", false),
            ("self.days.exists(d, d == 'tuesday')", true),
            ("self.days.exists_one(d, d.startsWith('t'))", true),
            ("self.days.map(d, d.size()).sum() == 13", true),
            ("self.days.filter(d, d.size() > 6) == ['tuesday']", true),
            ("'app' in self.labels && self.labels['app'] == 'web'", true),
            ("self.labels.all(k, k.lowerAscii() == k)", true),
            ("self.days[1] == 'tuesday'", true),
            ("self.minReplicas + 3 == self.maxReplicas", true),
            (
                "self.maxReplicas % 2 == 1 && self.maxReplicas / 2 == 2",
                true,
            ),
            ("self.ratio < 1.0 && self.ratio * 2.0 == 1.0", true),
            ("self.ratio == 0.5 && 1 == 1.0 && 2u == 2", true),
            (
                "int('42') == 42 && string(7) == '7' && double(1) == 1.0",
                true,
            ),
            ("self.minReplicas > 3 ? false : true", true),
            (
                "'abc'.substring(1) == 'bc' && 'a,b'.split(',') == ['a', 'b']",
                true,
            ),
            (
                "'Hello'.upperAscii() == 'HELLO' && '  x '.trim() == 'x'",
                true,
            ),
            (
                "['a', 'b'].join('-') == 'a-b' && 'abcb'.lastIndexOf('b') == 3",
                true,
            ),
            ("[3, 1].isSorted() == false && [1, 3].max() == 3", true),
            ("\"esc\\n\".size() == 4 && r'\\d'.size() == 2", true),
            ("'''multi\nline'''.contains('\\n')", true),
            ("{'a': 1}.a == 1 && size({'a': 1, 'b': 2}) == 2", true),
            ("null == null && self.name != null", true),
            ("-self.minReplicas == -2 && 0x10 == 16", true),
        ];
        for (rule, want) in cases {
            assert_eq!(truth(rule, obj.clone()), Some(*want), "rule {rule}");
        }
    }

    #[test]
    fn runtime_errors_match_cel_wording() {
        let obj = json!({"a": 1, "l": [1]});
        let cases: &[(&str, &str)] = &[
            ("self.missing == 1", "no such key: missing"),
            ("self.l[3] == 1", "index '3' out of range in list size '1'"),
            ("self.a / 0 == 1", "division by zero"),
            ("self.a % 0 == 1", "modulus by zero"),
            ("9223372036854775807 + self.a > 0", "integer overflow"),
        ];
        for (rule, want) in cases {
            assert_eq!(
                run(rule, obj.clone()).err(),
                Some(EvalError::Runtime(want.to_string())),
                "rule {rule}"
            );
        }
    }

    #[test]
    fn logical_operators_absorb_errors() {
        let obj = json!({"a": 1});
        assert_eq!(truth("self.missing == 1 || true", obj.clone()), Some(true));
        assert_eq!(
            truth("false && self.missing == 1", obj.clone()),
            Some(false)
        );
        assert_eq!(
            truth("self.missing == 1 && false", obj.clone()),
            Some(false)
        );
        assert!(matches!(
            run("self.missing == 1 || false", obj),
            Err(EvalError::Runtime(_))
        ));
    }

    #[test]
    fn unsupported_constructs_are_compile_errors() {
        for rule in [
            "self.x == timestamp('2020-01-01T00:00:00Z')",
            "duration('1h') > duration('1m')",
            "self.?x.orValue(1) == 1",
            "b'abc' == self.x",
            "quantity(self.q).isGreaterThan(quantity('1'))",
            "type(self) == int",
            "foo == 1",
            "self.x ==",
            "(self.x",
            "self.x = 1",
        ] {
            assert!(compile(rule).is_err(), "rule {rule} should not compile");
        }
    }

    #[test]
    fn type_mismatches_are_unsupported_not_runtime_errors() {
        let obj = json!({"s": "x", "n": 1});
        assert!(matches!(
            run("self.s + self.n == 'x1'", obj.clone()),
            Err(EvalError::Unsupported(_))
        ));
        assert!(matches!(
            run("self.s < self.n", obj),
            Err(EvalError::Unsupported(_))
        ));
    }

    #[test]
    fn old_self_marks_transition_rules() {
        let p = compile("self == oldSelf").map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(Program::uses_old_self), Ok(true));
        let p = compile("self.all(x, x > 0)").map_err(|e| e.to_string());
        assert_eq!(p.as_ref().map(Program::uses_old_self), Ok(false));
        // A macro variable named like a bound identifier is still in scope only inside the macro.
        assert!(compile("self.all(x, x > 0) && x > 0").is_err());
    }

    #[test]
    fn schema_types_drive_conversion() {
        let schema = json!({"type": "object", "properties": {
            "n": {"type": "number"}, "i": {"type": "integer"},
            "t": {"type": "string", "format": "date-time"},
            "q": {"x-kubernetes-int-or-string": true}
        }});
        let v = value_from_json(
            Some(&schema),
            &json!({"n": 3, "i": 3.0, "t": "2024-01-01T00:00:00Z", "q": "5"}),
        );
        let CelValue::Map(m) = v else {
            panic!("expected map")
        };
        assert!(matches!(m.get("n"), Some(CelValue::Double(d)) if *d == 3.0));
        assert!(matches!(m.get("i"), Some(CelValue::Int(3))));
        assert!(matches!(
            m.get("t"),
            Some(CelValue::Opaque {
                kind: OpaqueKind::Timestamp,
                ..
            })
        ));
        assert!(matches!(m.get("q"), Some(CelValue::String(s)) if s == "5"));
    }

    #[test]
    fn escaped_property_names_resolve() {
        let obj = json!({"namespace": "a", "x-y": 1, "a.b": 2});
        assert_eq!(truth("self.__namespace__ == 'a'", obj.clone()), Some(true));
        assert_eq!(
            truth("self.x__dash__y == 1 && self.a__dot__b == 2", obj),
            Some(true)
        );
    }

    #[test]
    fn deep_nesting_is_rejected_without_overflow() {
        let rule = format!("{}1{}", "(".repeat(5000), ")".repeat(5000));
        assert!(compile(&rule).is_err());
        let rule = format!("{}true", "!".repeat(5000));
        assert!(compile(&rule).is_err());
        let rule = format!("1{}", " + 1".repeat(5000));
        assert!(compile(&rule).is_err());
        let rule = format!("self{}", ".a".repeat(5000));
        assert!(compile(&rule).is_err());
        let rule = format!("true{}", " && true".repeat(60));
        assert!(compile(&rule).is_ok());
    }

    #[test]
    fn deepest_accepted_rules_evaluate_on_a_small_stack() {
        // The deepest rules the parser accepts must compile and evaluate well within a 2 MiB
        // async worker stack, even in unoptimised builds.
        let shapes: [(&str, &str, &str); 6] = [
            ("!(", "self.all(x, x > 0)", ")"),
            ("[", "1", "]"),
            ("self.all(x, ", "x > 0", ")"),
            ("(1 + ", "1", ")"),
            ("true ? (", "1", ") : 2"),
            ("size(", "'a'", ")"),
        ];
        for (open, core, close) in shapes {
            let rule_at = |d: usize| format!("{}{core}{}", open.repeat(d), close.repeat(d));
            let depth = (0..=MAX_DEPTH)
                .rev()
                .find(|d| compile(&rule_at(*d)).is_ok())
                .unwrap_or(0);
            assert!(depth >= 10, "{open}: depth {depth}");
            let rule = rule_at(depth);
            let handle = std::thread::Builder::new()
                .stack_size(512 * 1024)
                .spawn(move || {
                    let program = compile(&rule).map_err(|e| e.to_string())?;
                    // Type errors are fine here; only the stack matters.
                    let _ = program.eval(&value_from_json(None, &json!([1, 2])), None);
                    Ok::<(), String>(())
                })
                .expect("spawn");
            assert_eq!(handle.join().ok(), Some(Ok(())), "{open}");
        }
    }

    #[test]
    fn runaway_rules_hit_the_step_limit() {
        let depth = 12;
        let rule = format!("{}true{}", "self.all(x, ".repeat(depth), ")".repeat(depth));
        let started = std::time::Instant::now();
        let result = run(&rule, json!([1, 2, 3]));
        assert!(
            matches!(result, Err(EvalError::Unsupported(ref m)) if m.contains("step limit")),
            "{result:?}"
        );
        assert!(started.elapsed() < std::time::Duration::from_secs(10));
    }
}
