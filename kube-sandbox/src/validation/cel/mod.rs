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

mod checker;
mod eval;
mod lexer;
mod parser;
mod program;
#[cfg(test)]
mod tests;
mod value;

pub use program::{Program, compile};
pub use value::{CelValue, CompileError, EvalError, OpaqueKind, value_from_json};
