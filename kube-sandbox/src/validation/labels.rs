//! Label keys and values as apimachinery's `util/validation` checks them (`IsQualifiedName`,
//! an alias of `IsLabelKey` since v1.34, and `IsValidLabelValue`), with its messages, and
//! `metadata.labels` of an object as `ValidateLabels` of
//! `apimachinery/pkg/apis/meta/v1/validation` checks it for every kind on create and update.

use serde_json::{Map, Value};

const LABEL_KEY_FMT: &str = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]";
const LABEL_KEY_ERR: &str = "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const LABEL_VALUE_ERR: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character";
const DNS1123_SUBDOMAIN_FMT: &str =
    "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*";
const DNS1123_SUBDOMAIN_ERR: &str = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character";

/// `validation.RegexError`: the message, examples and regex, with the apiserver's spacing.
fn regex_error(msg: &str, re: &str, examples: &[&str]) -> String {
    let mut out = format!("{msg} (e.g. ");
    for (i, ex) in examples.iter().enumerate() {
        if i > 0 {
            out.push_str(" or ");
        }
        out.push_str(&format!("'{ex}', "));
    }
    out.push_str(&format!("regex used for validation is '{re}')"));
    out
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`
fn is_label_name(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    first.is_ascii_alphanumeric()
        && last.is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
}

fn is_dns1123_label(s: &str) -> bool {
    let b = s.as_bytes();
    let (Some(first), Some(last)) = (b.first(), b.last()) else {
        return false;
    };
    let ok = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    ok(first) && ok(last) && b.iter().all(|c| ok(c) || *c == b'-')
}

/// `validation.IsDNS1123Subdomain`.
fn dns1123_subdomain_errors(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push("must be no more than 253 bytes".to_string());
    }
    if !s.split('.').all(is_dns1123_label) {
        errs.push(regex_error(
            DNS1123_SUBDOMAIN_ERR,
            DNS1123_SUBDOMAIN_FMT,
            &["example.com"],
        ));
    }
    errs
}

/// `validation.IsLabelKey` (= `IsQualifiedName`): every problem of `key`, empty when valid.
pub(crate) fn label_key_errors(key: &str) -> Vec<String> {
    let parts: Vec<&str> = key.split('/').collect();
    let mut errs = Vec::new();
    let name = match parts.as_slice() {
        [name] => *name,
        [prefix, name] => {
            if prefix.is_empty() {
                errs.push("prefix part must be non-empty".to_string());
            } else {
                errs.extend(
                    dns1123_subdomain_errors(prefix)
                        .into_iter()
                        .map(|e| format!("prefix part {e}")),
                );
            }
            *name
        }
        _ => {
            return vec![format!(
                "a valid label key {} with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')",
                regex_error(
                    LABEL_KEY_ERR,
                    LABEL_KEY_FMT,
                    &["MyName", "my.name", "123-abc"]
                )
            )];
        }
    };
    if name.is_empty() {
        errs.push("name part must be non-empty".to_string());
    } else if name.len() > 63 {
        errs.push("name part must be no more than 63 bytes".to_string());
    }
    if !is_label_name(name) {
        errs.push(format!(
            "name part {}",
            regex_error(
                LABEL_KEY_ERR,
                LABEL_KEY_FMT,
                &["MyName", "my.name", "123-abc"]
            )
        ));
    }
    errs
}

/// `validation.IsValidLabelValue`: every problem of `value`, empty when valid.
pub(crate) fn label_value_errors(value: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if value.len() > 63 {
        errs.push("must be no more than 63 bytes".to_string());
    }
    if !value.is_empty() && !is_label_name(value) {
        errs.push(regex_error(
            LABEL_VALUE_ERR,
            &format!("({LABEL_KEY_FMT})?"),
            &["MyValue", "my_value", "12345"],
        ));
    }
    errs
}

/// One `field.Invalid` of `metadata.labels`: the bad key or value and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidLabel {
    /// The key or value that is invalid (the error's `BadValue`).
    pub bad_value: String,
    /// One message of `IsQualifiedName` or `IsValidLabelValue`.
    pub detail: String,
}

/// `ValidateLabels(labels, "metadata.labels")`: for each label (in key order), one error
/// per problem of its key, then one per problem of its value; the path is
/// `metadata.labels` for all of them, as kube-apiserver reports it. Non-string values are
/// left to the decoder.
pub fn invalid_labels(labels: &Map<String, Value>) -> Vec<InvalidLabel> {
    let mut out = Vec::new();
    let mut sorted: Vec<(&String, &Value)> = labels.iter().collect();
    sorted.sort_by_key(|(key, _)| *key);
    for (key, value) in sorted {
        for detail in label_key_errors(key) {
            out.push(InvalidLabel {
                bad_value: key.clone(),
                detail,
            });
        }
        if let Some(value) = value.as_str() {
            for detail in label_value_errors(value) {
                out.push(InvalidLabel {
                    bad_value: value.to_owned(),
                    detail,
                });
            }
        }
    }
    out
}

/// [`invalid_labels`] of an object's `metadata.labels` (none when it has no labels).
pub fn invalid_object_labels(object: &Value) -> Vec<InvalidLabel> {
    object
        .pointer("/metadata/labels")
        .and_then(Value::as_object)
        .map(invalid_labels)
        .unwrap_or_default()
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use serde_json::json;

    const VALUE_REGEX: &str = "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')";
    const NAME_REGEX: &str = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    const PREFIX_REGEX: &str = "prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";

    #[test]
    fn label_values_as_is_valid_label_value() {
        let long = "a".repeat(64);
        let longest = "a".repeat(63);
        let long_and_bad = format!("{}-", "a".repeat(63));
        // (value, messages of IsValidLabelValue)
        let table: Vec<(&str, Vec<&str>)> = vec![
            ("", vec![]),
            ("kubeocean", vec![]),
            ("kubeocean.io-syncer", vec![]),
            ("My_Value.1", vec![]),
            (&longest, vec![]),
            ("kubeocean.io/syncer", vec![VALUE_REGEX]),
            ("-lead", vec![VALUE_REGEX]),
            ("trail.", vec![VALUE_REGEX]),
            ("sp ace", vec![VALUE_REGEX]),
            ("10.0.0.1:9006/vnode-a", vec![VALUE_REGEX]),
            (&long, vec!["must be no more than 63 bytes"]),
            (
                &long_and_bad,
                vec!["must be no more than 63 bytes", VALUE_REGEX],
            ),
        ];
        for (value, want) in table {
            assert_eq!(label_value_errors(value), want, "{value:?}");
        }
    }

    #[test]
    fn label_keys_as_is_qualified_name() {
        let too_many = "a valid label key must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')";
        let long_name = format!("example.com/{}", "a".repeat(64));
        let long_prefix = format!("{}/a", "a".repeat(254));
        let table: Vec<(&str, Vec<&str>)> = vec![
            ("app", vec![]),
            ("kubeocean.io/proxier_port", vec![]),
            ("endpointslice.kubernetes.io/managed-by", vec![]),
            ("A.b_c-D", vec![]),
            ("", vec!["name part must be non-empty", NAME_REGEX]),
            ("/a", vec!["prefix part must be non-empty"]),
            (
                "example.com/",
                vec!["name part must be non-empty", NAME_REGEX],
            ),
            ("Example.com/a", vec![PREFIX_REGEX]),
            ("a/b/c", vec![too_many]),
            ("-a", vec![NAME_REGEX]),
            (&long_name, vec!["name part must be no more than 63 bytes"]),
            (
                &long_prefix,
                vec!["prefix part must be no more than 253 bytes"],
            ),
        ];
        for (key, want) in table {
            assert_eq!(label_key_errors(key), want, "{key:?}");
        }
    }

    #[test]
    fn object_labels_are_checked_key_then_value_in_key_order() {
        let object = json!({"metadata": {"labels": {
            "z": "ok",
            "endpointslice.kubernetes.io/managed-by": "kubeocean.io/syncer",
            "-bad": "-worse",
        }}});
        let got = invalid_object_labels(&object);
        let want = vec![
            InvalidLabel {
                bad_value: "-bad".into(),
                detail: NAME_REGEX.into(),
            },
            InvalidLabel {
                bad_value: "-worse".into(),
                detail: VALUE_REGEX.into(),
            },
            InvalidLabel {
                bad_value: "kubeocean.io/syncer".into(),
                detail: VALUE_REGEX.into(),
            },
        ];
        assert_eq!(got, want);
        assert!(invalid_object_labels(&json!({"metadata": {}})).is_empty());
        assert!(invalid_object_labels(&json!({})).is_empty());
    }
}
