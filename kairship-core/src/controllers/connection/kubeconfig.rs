//! Where an instance's kubeconfig is found in a Secret: the keys the karmada-operator and
//! Adopt-mode instances use, and the pure lookup.

use std::collections::BTreeMap;

use k8s_openapi::ByteString;

/// Keys the karmada-operator has used for the admin kubeconfig in the Secret named by
/// `status.secretRef`, newest first.
pub const OPERATOR_KUBECONFIG_KEYS: [&str; 3] = ["karmada.config", "kubeconfig", "config"];

/// Keys tried, in this order, in an Adopt-mode instance's Secret when
/// `kubeconfigSecretRef.key` is left out.
pub const ADOPT_KUBECONFIG_KEYS: [&str; 3] = ["kubeconfig", "karmada.config", "config"];

/// Which key of a Secret holds a kubeconfig.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KubeconfigKey<'a> {
    /// Exactly this key, named by the user: no other key stands in for it.
    Exactly(&'a str),
    /// The first of these keys with a non-empty value.
    FirstOf(&'a [&'a str]),
}

impl std::fmt::Display for KubeconfigKey<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            KubeconfigKey::Exactly(key) => write!(f, "key {key:?}"),
            KubeconfigKey::FirstOf(keys) => {
                let quoted: Vec<String> = keys.iter().map(|k| format!("{k:?}")).collect();
                write!(f, "keys {}", quoted.join(", "))
            }
        }
    }
}

/// The kubeconfig in a Secret's `data` under `key`; `Err` says what is missing (`has no key
/// "mine"`), to follow `Secret <namespace>/<name>` in a message.
pub fn kubeconfig_in<'a>(
    data: &'a BTreeMap<String, ByteString>,
    key: KubeconfigKey<'_>,
) -> Result<&'a [u8], String> {
    let value = |k: &str| data.get(k).map(|v| v.0.as_slice());
    match key {
        KubeconfigKey::Exactly(k) => match value(k) {
            Some(bytes) if !bytes.is_empty() => Ok(bytes),
            Some(_) => Err(format!("has an empty key {k:?}")),
            None => Err(format!("has no key {k:?}")),
        },
        KubeconfigKey::FirstOf(keys) => keys
            .iter()
            .filter_map(|k| value(k))
            .find(|bytes| !bytes.is_empty())
            .ok_or_else(|| format!("has none of the {key}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kubeconfig_key_selection() {
        let data = |pairs: &[(&str, &str)]| -> BTreeMap<String, ByteString> {
            pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), ByteString(v.as_bytes().to_vec())))
                .collect()
        };
        use KubeconfigKey::*;
        type Case<'a> = (
            &'a [(&'a str, &'a str)],
            KubeconfigKey<'a>,
            Result<&'a str, &'a str>,
        );
        let operator = FirstOf(&OPERATOR_KUBECONFIG_KEYS);
        let adopt = FirstOf(&ADOPT_KUBECONFIG_KEYS);
        let cases: &[Case] = &[
            (&[("karmada.config", "new")], operator, Ok("new")),
            (&[("kubeconfig", "old")], operator, Ok("old")),
            (
                &[("kubeconfig", "old"), ("karmada.config", "new")],
                operator,
                Ok("new"),
            ),
            (
                &[("kubeconfig", "a"), ("karmada.config", "b")],
                adopt,
                Ok("a"),
            ),
            (&[("config", "c")], adopt, Ok("c")),
            (
                &[("karmada.config", "")],
                operator,
                Err(r#"has none of the keys "karmada.config", "kubeconfig", "config""#),
            ),
            (
                &[("tls.crt", "x")],
                adopt,
                Err(r#"has none of the keys "kubeconfig", "karmada.config", "config""#),
            ),
            // A key named by the user is read exactly: no fallback.
            (
                &[("mine", "custom"), ("karmada.config", "new")],
                Exactly("mine"),
                Ok("custom"),
            ),
            (
                &[("kubeconfig", "there")],
                Exactly("mine"),
                Err(r#"has no key "mine""#),
            ),
            (
                &[("mine", "")],
                Exactly("mine"),
                Err(r#"has an empty key "mine""#),
            ),
        ];
        for (pairs, key, want) in cases {
            let d = data(pairs);
            let got = kubeconfig_in(&d, *key).map(|b| String::from_utf8_lossy(b).into_owned());
            assert_eq!(
                got.as_deref().map_err(String::as_str),
                *want,
                "{pairs:?} {key:?}"
            );
        }
    }
}
