//! The checker: which identifiers, functions and macros a compiled rule may use.

use super::parser::*;
use super::value::CompileError;

pub(super) struct Checker {
    pub(super) scope: Vec<String>,
    pub(super) uses_old_self: bool,
}

pub(super) fn global_arity_ok(name: &str, n: usize) -> bool {
    match name {
        "size" | "int" | "uint" | "double" | "string" | "bool" | "dyn" => n == 1,
        "matches" => n == 2,
        _ => false,
    }
}

pub(super) fn method_arity_ok(name: &str, n: usize) -> bool {
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
    pub(super) fn check_all(&mut self, exprs: &[Expr]) -> Result<(), CompileError> {
        for e in exprs {
            self.check(e)?;
        }
        Ok(())
    }

    pub(super) fn check(&mut self, e: &Expr) -> Result<(), CompileError> {
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
