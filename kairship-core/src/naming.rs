//! Names of the objects Kairship derives from an Instance, and the rules Instance names
//! follow.

use crate::instance::MAX_INSTANCE_NAME_LEN;

/// Prefix of every host-side object named after an instance.
pub const NAME_PREFIX: &str = "kairship";

/// Why a string is not a valid Instance name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstanceNameError {
    /// The name is empty.
    #[error("instance name must not be empty")]
    Empty,
    /// The name is longer than [`MAX_INSTANCE_NAME_LEN`].
    #[error("instance name {name:?} is {len} characters long, at most {max} are allowed", max = MAX_INSTANCE_NAME_LEN)]
    TooLong {
        /// The offending name.
        name: String,
        /// Its length.
        len: usize,
    },
    /// The name is not a DNS-1035 label.
    #[error(
        "instance name {0:?} must consist of lower-case letters, digits and '-', start with a letter and end with a letter or digit"
    )]
    Invalid(String),
}

/// Checks that `name` is a DNS-1035 label of at most 63 characters, as the Instance CRD
/// requires.
pub fn validate_instance_name(name: &str) -> Result<(), InstanceNameError> {
    if name.is_empty() {
        return Err(InstanceNameError::Empty);
    }
    if name.len() > MAX_INSTANCE_NAME_LEN {
        return Err(InstanceNameError::TooLong {
            name: name.to_owned(),
            len: name.len(),
        });
    }
    let bytes = name.as_bytes();
    let valid_chars = bytes
        .iter()
        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-');
    let starts_ok = bytes.first().is_some_and(u8::is_ascii_lowercase);
    let ends_ok = bytes
        .last()
        .is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit());
    if valid_chars && starts_ok && ends_ok {
        Ok(())
    } else {
        Err(InstanceNameError::Invalid(name.to_owned()))
    }
}

/// Name of the Clusterpedia `PediaCluster` registering an instance: `kairship-<instance>`.
pub fn pedia_cluster_name(instance: &str) -> String {
    format!("{NAME_PREFIX}-{instance}")
}

/// Name of the Secret (in Clusterpedia's namespace) holding the kubeconfig its
/// `PediaCluster` uses: `kairship-<instance>-kubeconfig`.
pub fn pedia_kubeconfig_secret_name(instance: &str) -> String {
    format!("{NAME_PREFIX}-{instance}-kubeconfig")
}

/// Name of the operator's `Karmada` object of a Provision-mode instance (in the instance's
/// host namespace): the instance name itself.
pub fn operator_karmada_name(instance: &str) -> String {
    instance.to_owned()
}

/// Lower-cases `input` and replaces every run of characters outside `[a-z0-9]` by a single
/// `-`, trimming `-` at both ends; the result is a DNS label fragment (possibly empty).
pub fn slugify(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    for ch in input.chars() {
        let ch = ch.to_ascii_lowercase();
        if ch.is_ascii_lowercase() || ch.is_ascii_digit() {
            out.push(ch);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    out.trim_matches('-').to_owned()
}

/// Lower-case hex SHA-256 of the parts, each terminated by a NUL byte so that
/// `("ab", "c")` and `("a", "bc")` hash differently.
pub fn hash_parts(parts: &[&str]) -> String {
    let mut ctx = ring::digest::Context::new(&ring::digest::SHA256);
    for part in parts {
        ctx.update(part.as_bytes());
        ctx.update(&[0]);
    }
    hex_encode(ctx.finish().as_ref())
}

/// Lower-case hex encoding.
pub fn hex_encode(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(DIGITS[usize::from(b >> 4)]));
        out.push(char::from(DIGITS[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn instance_names() {
        let cases: &[(&str, bool)] = &[
            ("prod", true),
            ("prod-1", true),
            ("a", true),
            ("", false),
            ("1prod", false),
            ("prod-", false),
            ("Prod", false),
            ("prod.eu", false),
            ("prod_eu", false),
            (&"a".repeat(63), true),
            (&"a".repeat(64), false),
        ];
        for (name, ok) in cases {
            assert_eq!(validate_instance_name(name).is_ok(), *ok, "{name:?}");
        }
    }

    #[test]
    fn derived_names() {
        assert_eq!(pedia_cluster_name("prod"), "kairship-prod");
        assert_eq!(
            pedia_kubeconfig_secret_name("prod"),
            "kairship-prod-kubeconfig"
        );
        assert_eq!(operator_karmada_name("prod"), "prod");
    }

    #[test]
    fn slugs() {
        let cases = [
            ("alice", "alice"),
            ("Alice@Example.com", "alice-example-com"),
            ("--x__y--", "x-y"),
            ("system:serviceaccount:ns:sa", "system-serviceaccount-ns-sa"),
            ("日本", ""),
        ];
        for (input, want) in cases {
            assert_eq!(slugify(input), want, "{input:?}");
        }
    }

    #[test]
    fn hashing_separates_parts() {
        assert_ne!(hash_parts(&["ab", "c"]), hash_parts(&["a", "bc"]));
        assert_eq!(hash_parts(&["x"]).len(), 64);
        // SHA-256 of the single byte 0x00.
        assert_eq!(
            hash_parts(&[""]),
            "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d"
        );
    }
}
