//! Label selectors as the policy form writes them (`app=web,tier in (a,b),!legacy`), to and
//! from Kubernetes' `LabelSelector` object (`matchLabels` and `matchExpressions`), keeping the
//! order of keys and values so a stored selector comes back unchanged.

use serde_json::{Map, Value, json};

/// The selector text of a `LabelSelector` object: `matchLabels` as `k=v`, then each
/// expression (`k in (a,b)`, `k notin (a)`, `k`, `!k`); empty for none.
pub fn selector_text(selector: &Value) -> String {
    let mut parts = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            parts.push(format!("{key}={}", value.as_str().unwrap_or_default()));
        }
    }
    for e in selector
        .get("matchExpressions")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let key = e.get("key").and_then(Value::as_str).unwrap_or_default();
        let values = string_list(e.get("values")).join(",");
        match e
            .get("operator")
            .and_then(Value::as_str)
            .unwrap_or_default()
        {
            "In" => parts.push(format!("{key} in ({values})")),
            "NotIn" => parts.push(format!("{key} notin ({values})")),
            "Exists" => parts.push(key.to_owned()),
            "DoesNotExist" => parts.push(format!("!{key}")),
            other => parts.push(format!("{key} {other} ({values})")),
        }
    }
    parts.join(",")
}

/// The strings of a JSON list (other items skipped).
pub fn string_list(list: Option<&Value>) -> Vec<String> {
    list.and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// Splits at commas outside `(...)`.
fn requirements(text: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let (mut depth, mut start) = (0i32, 0usize);
    for (i, c) in text.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth -= 1,
            ',' if depth <= 0 => {
                parts.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&text[start..]);
    parts
        .into_iter()
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect()
}

fn valid_key(key: &str) -> bool {
    !key.is_empty()
        && key
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'))
}

/// `(a, b)` as its values.
fn value_set(text: &str) -> Option<Vec<Value>> {
    let inner = text.trim().strip_prefix('(')?.strip_suffix(')')?;
    Some(
        inner
            .split(',')
            .map(str::trim)
            .filter(|v| !v.is_empty())
            .map(|v| json!(v))
            .collect(),
    )
}

/// The `LabelSelector` object of a selector text; `None` for an empty text; the reason when a
/// requirement is not `k=v`, `k==v`, `k!=v`, `k in (..)`, `k notin (..)`, `k` or `!k`.
pub fn parse_selector(text: &str) -> Result<Option<Value>, String> {
    let mut labels = Map::new();
    let mut expressions = Vec::new();
    for requirement in requirements(text) {
        let bad = || {
            format!(
                "{requirement:?} is not key=value, key!=value, key in (a,b), key notin (a,b), key or !key"
            )
        };
        if let Some(key) = requirement.strip_prefix('!') {
            let key = key.trim();
            if !valid_key(key) {
                return Err(bad());
            }
            expressions.push(json!({"key": key, "operator": "DoesNotExist"}));
        } else if let Some((key, value)) = requirement.split_once("!=") {
            let key = key.trim();
            if !valid_key(key) {
                return Err(bad());
            }
            expressions.push(json!({"key": key, "operator": "NotIn", "values": [value.trim()]}));
        } else if let Some((key, value)) = requirement.split_once('=') {
            let key = key.trim();
            let value = value.strip_prefix('=').unwrap_or(value).trim();
            if !valid_key(key) {
                return Err(bad());
            }
            labels.insert(key.to_owned(), json!(value));
        } else if let Some((key, rest)) = split_word(requirement, "notin") {
            let values = value_set(rest).ok_or_else(bad)?;
            expressions.push(json!({"key": key, "operator": "NotIn", "values": values}));
        } else if let Some((key, rest)) = split_word(requirement, "in") {
            let values = value_set(rest).ok_or_else(bad)?;
            expressions.push(json!({"key": key, "operator": "In", "values": values}));
        } else if valid_key(requirement) {
            expressions.push(json!({"key": requirement, "operator": "Exists"}));
        } else {
            return Err(bad());
        }
    }
    let mut selector = Map::new();
    if !labels.is_empty() {
        selector.insert("matchLabels".into(), Value::Object(labels));
    }
    if !expressions.is_empty() {
        selector.insert("matchExpressions".into(), Value::Array(expressions));
    }
    Ok((!selector.is_empty()).then_some(Value::Object(selector)))
}

/// `key <word> (...)` split into the key and what follows the word.
fn split_word<'a>(requirement: &'a str, word: &str) -> Option<(&'a str, &'a str)> {
    let (key, rest) = requirement.split_once(char::is_whitespace)?;
    let rest = rest.trim_start().strip_prefix(word)?;
    (valid_key(key) && rest.trim_start().starts_with('(')).then_some((key, rest))
}

/// A comma-separated list as its items (blank items dropped).
pub fn comma_list(text: &str) -> Vec<String> {
    text.split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(str::to_owned)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn selectors_parse_and_print_back() {
        for (text, want) in [
            ("", Value::Null),
            ("app=web", json!({"matchLabels": {"app": "web"}})),
            ("app==web", json!({"matchLabels": {"app": "web"}})),
            (
                "env in (prod, staging),!legacy,owner",
                json!({"matchExpressions": [
                    {"key": "env", "operator": "In", "values": ["prod", "staging"]},
                    {"key": "legacy", "operator": "DoesNotExist"},
                    {"key": "owner", "operator": "Exists"}]}),
            ),
            (
                "tier!=db, region notin (us,eu)",
                json!({"matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["db"]},
                    {"key": "region", "operator": "NotIn", "values": ["us", "eu"]}]}),
            ),
        ] {
            let got = parse_selector(text).unwrap().unwrap_or(Value::Null);
            assert_eq!(got, want, "{text}");
        }
        // Printing and parsing again gives the same object, values in their order.
        let stored = json!({"matchLabels": {"a": "1", "b": "2"}, "matchExpressions": [
            {"key": "z", "operator": "In", "values": ["y", "x"]},
            {"key": "k", "operator": "DoesNotExist"}]});
        let text = selector_text(&stored);
        assert_eq!(text, "a=1,b=2,z in (y,x),!k");
        assert_eq!(parse_selector(&text).unwrap(), Some(stored));
        for bad in ["a b", "=x", "k in x", "k in (a", "<s>=1"] {
            let err = parse_selector(bad).unwrap_err();
            assert!(err.contains("is not key=value"), "{bad}: {err}");
        }
        assert_eq!(comma_list(" a, ,b "), ["a", "b"]);
    }
}
