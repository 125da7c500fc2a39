//! Field selectors, a port of fields/selector.go.

use std::fmt;

use super::requirements::SelectorError;

/// One `field=value` or `field!=value` term.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldTerm {
    pub(super) field: String,
    pub(super) value: String,
    pub(super) negated: bool,
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
pub(super) fn split_terms(selector: &str) -> Vec<&str> {
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
pub(super) fn split_term(term: &str) -> Option<(&str, &'static str, &str)> {
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

pub(super) fn unescape_value(s: &str) -> Result<String, SelectorError> {
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
