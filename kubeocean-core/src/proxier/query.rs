//! `application/x-www-form-urlencoded` query strings: decoding what clients send and
//! encoding what the proxier sends to the worker's API server.

/// The `key=value` pairs of a query string, decoded, in order (repeated keys kept).
pub fn parse_query(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| match pair.split_once('=') {
            Some((key, value)) => (decode(key), decode(value)),
            None => (decode(pair), String::new()),
        })
        .collect()
}

/// Percent-decodes one component; `+` is a space. Invalid escapes are kept as written, and
/// bytes that are not UTF-8 are replaced, as Go's `url.ParseQuery` callers would see them.
pub fn decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => match (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                (Some(high), Some(low)) => {
                    out.push(high << 4 | low);
                    i += 2;
                }
                _ => out.push(b'%'),
            },
            other => out.push(other),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn hex(byte: u8) -> Option<u8> {
    match byte {
        b'0'..=b'9' => Some(byte - b'0'),
        b'a'..=b'f' => Some(byte - b'a' + 10),
        b'A'..=b'F' => Some(byte - b'A' + 10),
        _ => None,
    }
}

/// Percent-encodes one component (everything but RFC 3986 unreserved characters).
pub fn encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for byte in text.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

/// Encodes pairs as a query string (without the leading `?`).
pub fn encode_query<K: AsRef<str>, V: AsRef<str>>(pairs: &[(K, V)]) -> String {
    pairs
        .iter()
        .map(|(key, value)| format!("{}={}", encode(key.as_ref()), encode(value.as_ref())))
        .collect::<Vec<_>>()
        .join("&")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decode_table() {
        for (text, want) in [
            ("plain", "plain"),
            ("a+b", "a b"),
            ("a%20b", "a b"),
            ("%2Fetc%2fpasswd", "/etc/passwd"),
            ("100%", "100%"),
            ("%4", "%4"),
            ("%zz", "%zz"),
            ("%E2%9C%93", "\u{2713}"),
            ("", ""),
        ] {
            assert_eq!(decode(text), want, "{text:?}");
        }
    }

    #[test]
    fn parse_keeps_order_and_repeats() {
        assert_eq!(
            parse_query("command=echo&command=hello+world&tty&&input=1"),
            vec![
                ("command".to_owned(), "echo".to_owned()),
                ("command".to_owned(), "hello world".to_owned()),
                ("tty".to_owned(), String::new()),
                ("input".to_owned(), "1".to_owned()),
            ]
        );
        assert!(parse_query("").is_empty());
    }

    #[test]
    fn encode_round_trips() {
        for text in ["sh", "echo hi && ls /", "a=b&c", "ünï", "~-._"] {
            assert_eq!(decode(&encode(text)), text);
        }
        assert_eq!(
            encode_query(&[("command", "echo hi"), ("tty", "true")]),
            "command=echo%20hi&tty=true"
        );
    }
}
