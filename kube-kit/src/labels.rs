//! Label syntax as apimachinery checks it (`k8s.io/apimachinery/pkg/util/validation`
//! `IsValidLabelValue`).

/// Whether `value` is a valid label value: empty, or at most 63 bytes of alphanumerics, `-`,
/// `_` and `.`, starting and ending with an alphanumeric.
pub fn is_label_value(value: &str) -> bool {
    let b = value.as_bytes();
    match (b.first(), b.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            b.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && b.iter()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.'))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_values() {
        for (value, valid) in [
            ("", true),
            ("a", true),
            ("prod-1.eu_west", true),
            (&"a".repeat(63), true),
            (&"a".repeat(64), false),
            ("-a", false),
            ("a-", false),
            ("a b", false),
            ("system:masters", false),
            ("é", false),
        ] {
            assert_eq!(is_label_value(value), valid, "{value:?}");
        }
    }
}
