//! Evaluation of a compiled rule against CEL values.

use std::cmp::Ordering;
use std::collections::BTreeMap;

use super::parser::*;
use super::value::{CelValue, EvalError};
use crate::validation::gocompat::{cached_regex, go_format_float, go_quote};

/// Evaluation steps after which a rule is given up on (and skipped); the apiserver enforces a
/// cost budget instead.
pub(super) const MAX_STEPS: u64 = 1_000_000;

/// Variables in scope and the work done so far.
pub(super) struct Env {
    pub(super) vars: Vec<(String, CelValue)>,
    pub(super) steps: u64,
}

impl Env {
    pub(super) fn lookup(&self, name: &str) -> Result<CelValue, EvalError> {
        for (n, v) in self.vars.iter().rev() {
            if n == name {
                return Ok(v.clone());
            }
        }
        unsupported(format!("'{name}' is not bound"))
    }
}

pub(super) fn unsupported<T>(what: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Unsupported(what.into()))
}

pub(super) fn runtime<T>(what: impl Into<String>) -> Result<T, EvalError> {
    Err(EvalError::Runtime(what.into()))
}

pub(super) fn no_overload<T>(op: &str, args: &[&CelValue]) -> Result<T, EvalError> {
    let types: Vec<&str> = args.iter().map(|a| a.type_name()).collect();
    unsupported(format!("no such overload: {op}({})", types.join(", ")))
}

/// Kubernetes escapes property names that are not CEL identifiers (`__dash__`, `__dot__`,
/// `__slash__`, `__underscores__`, `__<keyword>__`); a rule selects them by the escaped name.
pub(super) fn unescape_field(name: &str) -> String {
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
pub(super) fn eval(e: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
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

pub(super) fn eval_all(exprs: &[Expr], env: &mut Env) -> Result<Vec<CelValue>, EvalError> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        out.push(eval(e, env)?);
    }
    Ok(out)
}

pub(super) fn eval_select(
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
pub(super) fn path_ref<'a>(
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

pub(super) fn eval_has(target: &Expr, field: &str, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(target, env)? {
        CelValue::Map(m) => Ok(CelValue::Bool(m.contains_key(&unescape_field(field)))),
        other => no_overload("has", &[&other]),
    }
}

pub(super) fn eval_index(
    target: &Expr,
    index: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let target = eval(target, env)?;
    let index = eval(index, env)?;
    index_value(&target, &index)
}

pub(super) fn eval_map(entries: &[(Expr, Expr)], env: &mut Env) -> Result<CelValue, EvalError> {
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

pub(super) fn eval_not(inner: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(inner, env)? {
        CelValue::Bool(b) => Ok(CelValue::Bool(!b)),
        other => no_overload("!_", &[&other]),
    }
}

pub(super) fn eval_neg(inner: &Expr, env: &mut Env) -> Result<CelValue, EvalError> {
    match eval(inner, env)? {
        CelValue::Int(i) => int_result(i.checked_neg()),
        CelValue::Double(d) => Ok(CelValue::Double(-d)),
        other => no_overload("-_", &[&other]),
    }
}

pub(super) fn eval_cond(
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

pub(super) fn eval_binary(
    op: BinOp,
    a: &Expr,
    b: &Expr,
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let a = eval(a, env)?;
    let b = eval(b, env)?;
    binary(op, &a, &b)
}

pub(super) fn eval_call(name: &str, args: &[Expr], env: &mut Env) -> Result<CelValue, EvalError> {
    let args = eval_all(args, env)?;
    call_global(name, &args)
}

pub(super) fn eval_method(
    target: &Expr,
    name: &str,
    args: &[Expr],
    env: &mut Env,
) -> Result<CelValue, EvalError> {
    let target = eval(target, env)?;
    let args = eval_all(args, env)?;
    call_method(&target, name, &args)
}

pub(super) fn eval_comprehension(
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
pub(super) fn logical(
    a: &Expr,
    b: &Expr,
    env: &mut Env,
    is_or: bool,
) -> Result<CelValue, EvalError> {
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

pub(super) fn select(target: &CelValue, field: &str) -> Result<CelValue, EvalError> {
    match target {
        CelValue::Map(m) => m
            .get(field)
            .cloned()
            .map_or_else(|| runtime(format!("no such key: {field}")), Ok),
        other => unsupported(format!("field selection on {}", other.type_name())),
    }
}

pub(super) fn index_value(target: &CelValue, index: &CelValue) -> Result<CelValue, EvalError> {
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
pub(super) fn equals(a: &CelValue, b: &CelValue) -> bool {
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

pub(super) fn numeric_cmp(a: &CelValue, b: &CelValue) -> Option<Ordering> {
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

pub(super) fn compare(a: &CelValue, b: &CelValue, op: &str) -> Result<Ordering, EvalError> {
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

pub(super) fn binary(op: BinOp, a: &CelValue, b: &CelValue) -> Result<CelValue, EvalError> {
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

pub(super) fn int_result(v: Option<i64>) -> Result<CelValue, EvalError> {
    v.map(CelValue::Int)
        .map_or_else(|| runtime("integer overflow"), Ok)
}

pub(super) fn uint_result(v: Option<u64>) -> Result<CelValue, EvalError> {
    v.map(CelValue::Uint)
        .map_or_else(|| runtime("unsigned integer overflow"), Ok)
}

pub(super) fn regex_matches(s: &str, pattern: &str) -> Result<CelValue, EvalError> {
    match cached_regex(pattern) {
        Ok(re) => Ok(CelValue::Bool(re.is_match(s))),
        Err(e) => unsupported(format!("regular expression {pattern:?}: {e}")),
    }
}

pub(super) fn go_parse_bool(s: &str) -> Option<bool> {
    match s {
        "1" | "t" | "T" | "TRUE" | "true" | "True" => Some(true),
        "0" | "f" | "F" | "FALSE" | "false" | "False" => Some(false),
        _ => None,
    }
}

pub(super) fn call_global(name: &str, args: &[CelValue]) -> Result<CelValue, EvalError> {
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

pub(super) fn size(v: &CelValue) -> Result<CelValue, EvalError> {
    let n = match v {
        CelValue::String(s) => s.chars().count(),
        CelValue::List(l) => l.len(),
        CelValue::Map(m) => m.len(),
        other => return no_overload("size", &[other]),
    };
    Ok(CelValue::Int(i64::try_from(n).unwrap_or(i64::MAX)))
}

pub(super) fn char_index(chars_len: usize, i: i64) -> Result<usize, EvalError> {
    usize::try_from(i)
        .ok()
        .filter(|u| *u <= chars_len)
        .map_or_else(|| runtime(format!("index out of range: {i}")), Ok)
}

pub(super) fn to_cel_index(i: usize) -> CelValue {
    CelValue::Int(i64::try_from(i).unwrap_or(i64::MAX))
}

pub(super) fn string_index_of(
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

pub(super) fn call_method(
    target: &CelValue,
    name: &str,
    args: &[CelValue],
) -> Result<CelValue, EvalError> {
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
pub(super) fn split(s: &str, sep: &str, limit: i64) -> Result<CelValue, EvalError> {
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

pub(super) fn bind_and_eval(
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

pub(super) fn comprehension(
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
