//! A compiled rule: lexing, parsing and checking a rule, then evaluating it.

use super::checker::Checker;
use super::eval::{Env, eval};
use super::lexer::tokenize;
use super::parser::{Expr, Parser};
use super::value::{CelValue, CompileError, EvalError};

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
