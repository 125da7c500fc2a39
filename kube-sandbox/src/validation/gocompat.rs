//! Go compatibility: the apiserver's messages and regular expressions come from Go, so the
//! validators format strings and floats, and compile patterns, as Go does.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock, PoisonError};

/// Quotes a string the way Go's `strconv.Quote` (and so `%q`) does.
pub(crate) fn go_quote(s: &str) -> String {
    use std::fmt::Write as _;
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\x07' => out.push_str("\\a"),
            '\x08' => out.push_str("\\b"),
            '\x0c' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\x0b' => out.push_str("\\v"),
            c if (c as u32) < 0x20 || c as u32 == 0x7f => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if c.is_control() => {
                if (c as u32) < 0x10000 {
                    let _ = write!(out, "\\u{:04x}", c as u32);
                } else {
                    let _ = write!(out, "\\U{:08x}", c as u32);
                }
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Formats a float the way Go's `%v` / `strconv.FormatFloat(f, 'g', -1, 64)` does: shortest
/// digits, exponent form when the decimal exponent is below -4 or at least 6.
pub(crate) fn go_format_float(f: f64) -> String {
    if f.is_nan() {
        return "NaN".to_string();
    }
    if f.is_infinite() {
        return if f > 0.0 { "+Inf" } else { "-Inf" }.to_string();
    }
    if f == 0.0 {
        return if f.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{f:e}");
    let (mantissa, exp) = match sci.split_once('e') {
        Some((m, e)) => (m.to_string(), e.parse::<i32>().unwrap_or(0)),
        None => return sci,
    };
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    format!("{f}")
}

/// Go's `%#v` for a `[]string`.
pub(crate) fn go_string_slice(values: &[String]) -> String {
    let inner: Vec<String> = values.iter().map(|v| go_quote(v)).collect();
    format!("[]string{{{}}}", inner.join(", "))
}

/// Compiles a regular expression (RE2 syntax, like Go's `regexp`), reusing earlier
/// compilations of the same pattern.
pub(crate) fn cached_regex(pattern: &str) -> Result<regex::Regex, regex::Error> {
    type Cache = Mutex<HashMap<String, Result<regex::Regex, regex::Error>>>;
    static CACHE: OnceLock<Cache> = OnceLock::new();
    let mut cache = CACHE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(PoisonError::into_inner);
    if let Some(compiled) = cache.get(pattern) {
        return compiled.clone();
    }
    let compiled = regex::Regex::new(&go_regex_to_rust(pattern));
    // Patterns come from CRDs, so the set is small; the bound only guards against churn.
    if cache.len() >= 1024 {
        cache.clear();
    }
    cache.insert(pattern.to_string(), compiled.clone());
    compiled
}

/// Rewrites a Go (RE2) pattern into the `regex` crate's dialect: Go's `\d`, `\w`, `\s` and
/// their negations are ASCII-only, `\Q...\E` quotes literally, and inside a class `[` is a
/// plain character and `&&`/`~~` are not set operators.
fn go_regex_to_rust(pattern: &str) -> String {
    fn shorthand(c: char) -> Option<&'static str> {
        Some(match c {
            'd' => "[0-9]",
            'D' => "[^0-9]",
            'w' => "[0-9A-Za-z_]",
            'W' => "[^0-9A-Za-z_]",
            's' => "[\\t\\n\\f\\r ]",
            'S' => "[^\\t\\n\\f\\r ]",
            _ => return None,
        })
    }
    let chars: Vec<char> = pattern.chars().collect();
    let mut out = String::with_capacity(pattern.len() + 8);
    let mut in_class = false;
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\\' if i + 1 < chars.len() => {
                let next = chars[i + 1];
                if let Some(class) = shorthand(next) {
                    out.push_str(class);
                    i += 2;
                } else if next == 'Q' && !in_class {
                    let rest: String = chars[i + 2..].iter().collect();
                    let (literal, after) = match rest.find("\\E") {
                        Some(end) => (rest[..end].to_string(), end + 2),
                        None => (rest.clone(), rest.len()),
                    };
                    out.push_str(&regex::escape(&literal));
                    i += 2 + rest[..after].chars().count();
                } else {
                    out.push(c);
                    out.push(next);
                    i += 2;
                }
            }
            '[' if !in_class => {
                in_class = true;
                out.push('[');
                i += 1;
                // A `^` and then a `]` right after the opening bracket are part of the class.
                if chars.get(i) == Some(&'^') {
                    out.push('^');
                    i += 1;
                }
                if chars.get(i) == Some(&']') {
                    out.push_str("\\]");
                    i += 1;
                }
            }
            '[' if chars.get(i + 1) == Some(&':') => {
                // A POSIX class such as `[:alpha:]`, copied up to its `:]`.
                let rest: String = chars[i..].iter().collect();
                let len = rest
                    .find(":]")
                    .map_or(1, |end| rest[..end + 2].chars().count());
                out.extend(&chars[i..i + len]);
                i += len;
            }
            '[' | '&' | '~' if in_class => {
                out.push('\\');
                out.push(c);
                i += 1;
            }
            ']' if in_class => {
                in_class = false;
                out.push(']');
                i += 1;
            }
            _ => {
                out.push(c);
                i += 1;
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regexes_follow_go_semantics() {
        let cases: &[(&str, &str, bool)] = &[
            (r"^\d+$", "123", true),
            (r"^\d+$", "١٢٣", false),
            (r"^[\w.-]+$", "a.b-c_1", true),
            (r"^\w+$", "äb", false),
            (r"^\S+\s\S+$", "a b", true),
            (r"^[[]$", "[", true),
            (r"^[]a]+$", "]a", true),
            (r"^[^]a]$", "b", true),
            (r"^\Q.*\E$", ".*", true),
            (r"^\Q.*\E$", "ab", false),
            (r"^[a&&b]$", "&", true),
            (r"^[[:alpha:]]+$", "abc", true),
            (r"^[\d[:alpha:]]+$", "a1", true),
            (r"^[^\D]$", "7", true),
            (r"(?i)^abc$", "ABC", true),
        ];
        for (pattern, input, want) in cases {
            let re = cached_regex(pattern).map_err(|e| e.to_string());
            assert_eq!(
                re.map(|r| r.is_match(input)),
                Ok(*want),
                "{pattern} on {input}"
            );
        }
    }

    #[test]
    fn go_formatting() {
        assert_eq!(go_quote("a\"b\n\u{1}"), "\"a\\\"b\\n\\x01\"");
        assert_eq!(go_format_float(1.5), "1.5");
        assert_eq!(go_format_float(1.0), "1");
        assert_eq!(go_format_float(1e21), "1e+21");
        assert_eq!(go_format_float(1e6), "1e+06");
        assert_eq!(go_format_float(1_234_567.5), "1.2345675e+06");
        assert_eq!(go_format_float(0.00001), "1e-05");
        assert_eq!(go_format_float(0.0001), "0.0001");
        assert_eq!(go_format_float(123456.0), "123456");
    }
}
