//! `application/x-www-form-urlencoded` bodies, parsed by hand so a malformed or missing body
//! still reaches the CSRF check (and its 403) instead of a decoding rejection.

use std::collections::HashMap;

/// Percent-decodes one form component (`+` is a space); invalid escapes are kept as written.
pub fn decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(h), Some(l)) => {
                    out.push(h << 4 | l);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(b: u8) -> Option<u8> {
    match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        b'A'..=b'F' => Some(b - b'A' + 10),
        _ => None,
    }
}

/// The fields of a form body; a repeated field keeps its first value.
pub fn parse(body: &[u8]) -> HashMap<String, String> {
    let text = String::from_utf8_lossy(body);
    let mut fields = HashMap::new();
    for pair in text.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        fields.entry(decode(k)).or_insert_with(|| decode(v));
    }
    fields
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_table() {
        for (input, want) in [
            ("abc", "abc"),
            ("a+b", "a b"),
            ("a%20b%2Fc", "a b/c"),
            ("%C3%A9", "é"),
            ("100%", "100%"),
            ("%zz", "%zz"),
            ("%4", "%4"),
            ("%41", "A"),
        ] {
            assert_eq!(decode(input), want, "{input}");
        }
    }

    #[test]
    fn parse_table() {
        let f = parse(b"_csrf=abc&yaml=kind%3A+Deployment%0A&empty=&flag&_csrf=second");
        assert_eq!(f["_csrf"], "abc");
        assert_eq!(f["yaml"], "kind: Deployment\n");
        assert_eq!(f["empty"], "");
        assert_eq!(f["flag"], "");
        assert!(parse(b"").is_empty());
    }
}
