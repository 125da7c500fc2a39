//! The JSONPath subset CRD printer columns use: `.a.b`, `.a[0]`, `.a[?(@.k=="v")].f`.

use serde_json::Value;

/// Evaluates a printer column's path against an object; `None` when anything is missing.
pub fn eval_path<'a>(obj: &'a Value, path: &str) -> Option<&'a Value> {
    let mut cur = obj;
    let mut rest = path.trim_start_matches('{').trim_end_matches('}');
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix('.') {
            let end = r.find(['.', '[']).unwrap_or(r.len());
            cur = cur.get(&r[..end])?;
            rest = &r[end..];
        } else if let Some(r) = rest.strip_prefix('[') {
            let end = r.find(']')?;
            let inner = &r[..end];
            rest = &r[end + 1..];
            if let Some(filter) = inner.strip_prefix("?(@.").and_then(|f| f.strip_suffix(')')) {
                let (key, want) = filter.split_once("==")?;
                let want = want.trim_matches(['"', '\'']);
                cur = cur
                    .as_array()?
                    .iter()
                    .find(|item| item.get(key).and_then(Value::as_str) == Some(want))?;
            } else {
                cur = cur.get(inner.parse::<usize>().ok()?)?;
            }
        } else {
            return None;
        }
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn paths_evaluate() {
        let obj = json!({"spec": {"clusterID": "c1", "list": [{"a": 1}]},
            "status": {"conditions": [{"type": "Other", "status": "x"}, {"type": "Ready", "status": "True"}]}});
        let cases = [
            (".spec.clusterID", Some(json!("c1"))),
            (".spec.list[0].a", Some(json!(1))),
            (
                ".status.conditions[?(@.type==\"Ready\")].status",
                Some(json!("True")),
            ),
            (".spec.missing", None),
            ("{.spec.clusterID}", Some(json!("c1"))),
        ];
        for (path, want) in cases {
            assert_eq!(eval_path(&obj, path).cloned(), want, "{path}");
        }
    }
}
