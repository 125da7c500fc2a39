//! Small helpers on object metadata: names, timestamps, uids.

use serde_json::{Map, Value};

/// The current time as kube-apiserver writes `creationTimestamp` (RFC 3339, seconds).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now()
        .round(jiff::Unit::Second)
        .unwrap_or_else(|_| jiff::Timestamp::now())
        .strftime("%Y-%m-%dT%H:%M:%SZ")
        .to_string()
}

/// The current time with microseconds (`MicroTime`).
pub fn now_micro() -> String {
    jiff::Timestamp::now()
        .strftime("%Y-%m-%dT%H:%M:%S.%6fZ")
        .to_string()
}

/// A time `seconds` from now as an RFC 3339 timestamp.
pub fn rfc3339_in(seconds: i64) -> String {
    let ts = jiff::Timestamp::now()
        .checked_add(jiff::SignedDuration::from_secs(seconds))
        .unwrap_or_else(|_| jiff::Timestamp::now());
    ts.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// Random bytes from the system's generator.
pub fn random_bytes<const N: usize>() -> [u8; N] {
    use ring::rand::SecureRandom;
    let mut out = [0u8; N];
    // The system generator does not fail on supported platforms; zeros would still be unique
    // enough for names combined with the counter-based resourceVersion.
    let _ = ring::rand::SystemRandom::new().fill(&mut out);
    out
}

/// A random version-4 UUID, as kube-apiserver assigns to `metadata.uid`.
pub fn new_uid() -> String {
    let mut b = random_bytes::<16>();
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    )
}

/// The five random characters kube-apiserver appends to a `generateName`.
pub fn random_suffix() -> String {
    const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
    random_bytes::<5>()
        .iter()
        .map(|b| ALPHABET[(*b as usize) % ALPHABET.len()] as char)
        .collect()
}

/// Lowercase alphanumerics plus `extra`, starting and ending alphanumeric.
fn dns1123_shaped(name: &str, extra: &[char]) -> bool {
    let alnum = |c: char| c.is_ascii_lowercase() || c.is_ascii_digit();
    name.chars().all(|c| alnum(c) || extra.contains(&c))
        && name.chars().next().is_some_and(alnum)
        && name.chars().last().is_some_and(alnum)
}

/// Why a name is not a valid DNS-1123 subdomain, if it is not.
pub fn dns1123_subdomain_error(name: &str) -> Option<String> {
    if name.len() > 253 {
        return Some("must be no more than 253 characters".into());
    }
    if !dns1123_shaped(name, &['-', '.']) {
        return Some("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')".into());
    }
    None
}

/// Why a name is not a valid DNS-1123 label, if it is not.
pub fn dns1123_label_error(name: &str) -> Option<String> {
    if name.len() > 63 {
        return Some("must be no more than 63 characters".into());
    }
    if !dns1123_shaped(name, &['-']) {
        return Some("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')".into());
    }
    None
}

/// `metadata` as a mutable map, created if missing.
pub fn metadata_mut(obj: &mut Value) -> Option<&mut Map<String, Value>> {
    let map = obj.as_object_mut()?;
    let meta = map
        .entry("metadata")
        .or_insert_with(|| Value::Object(Map::new()));
    if meta.is_null() {
        *meta = Value::Object(Map::new());
    }
    meta.as_object_mut()
}

/// A string field of `metadata`.
pub fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj.get("metadata")?.get(field)?.as_str()
}

/// The strings of a JSON array (other items and a missing array give nothing).
pub fn string_list(value: Option<&Value>) -> Vec<String> {
    value
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect()
        })
        .unwrap_or_default()
}

/// `metadata.finalizers`.
pub fn finalizers(obj: &Value) -> Vec<String> {
    string_list(obj.pointer("/metadata/finalizers"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uids_look_like_uuid_v4() {
        let uid = new_uid();
        assert_eq!(uid.len(), 36);
        assert_eq!(&uid[14..15], "4");
        assert_ne!(uid, new_uid());
    }

    #[test]
    fn name_validation() {
        let cases = [
            ("web", true, true),
            ("web-1.example", true, false),
            ("Web", false, false),
            ("-web", false, false),
            ("web-", false, false),
            ("", false, false),
        ];
        for (name, subdomain_ok, label_ok) in cases {
            assert_eq!(
                dns1123_subdomain_error(name).is_none(),
                subdomain_ok,
                "{name}"
            );
            assert_eq!(dns1123_label_error(name).is_none(), label_ok, "{name}");
        }
        assert!(dns1123_label_error(&"a".repeat(64)).is_some());
    }

    #[test]
    fn suffixes_are_five_safe_characters() {
        let s = random_suffix();
        assert_eq!(s.len(), 5);
        assert!(s.chars().all(|c| "bcdfghjklmnpqrstvwxz2456789".contains(c)));
    }
}
