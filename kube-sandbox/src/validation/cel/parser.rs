//! The parser: tokens to an expression tree.

use super::lexer::{Token, syntax};
use super::value::{CelValue, CompileError, MAX_DEPTH};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BinOp {
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
pub(super) enum Macro {
    All,
    Exists,
    ExistsOne,
    Map,
    Filter,
}

#[derive(Debug, Clone)]
pub(super) enum Expr {
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

pub(super) struct Parser {
    pub(super) tokens: Vec<(usize, Token)>,
    pub(super) pos: usize,
    pub(super) depth: usize,
    pub(super) end: usize,
}

impl Parser {
    pub(super) fn peek(&self) -> Option<&Token> {
        self.tokens.get(self.pos).map(|(_, t)| t)
    }

    pub(super) fn offset(&self) -> usize {
        self.tokens.get(self.pos).map_or(self.end, |(o, _)| *o)
    }

    pub(super) fn eat(&mut self, tok: &Token) -> bool {
        if self.peek() == Some(tok) {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    pub(super) fn expect(&mut self, tok: &Token) -> Result<(), CompileError> {
        if self.eat(tok) {
            Ok(())
        } else {
            Err(syntax(
                self.offset(),
                format!("expected {tok:?}, found {:?}", self.peek()),
            ))
        }
    }

    pub(super) fn enter(&mut self) -> Result<(), CompileError> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return Err(syntax(self.offset(), "expression nested too deeply"));
        }
        Ok(())
    }

    pub(super) fn parse_expr(&mut self) -> Result<Expr, CompileError> {
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
    pub(super) fn parse_binary(&mut self, min_precedence: u8) -> Result<Expr, CompileError> {
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

    pub(super) fn parse_unary(&mut self) -> Result<Expr, CompileError> {
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

    pub(super) fn parse_member(&mut self) -> Result<Expr, CompileError> {
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

    pub(super) fn parse_args(&mut self, close: &Token) -> Result<Vec<Expr>, CompileError> {
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

    pub(super) fn parse_primary(&mut self) -> Result<Expr, CompileError> {
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

pub(super) fn method_or_macro(
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
