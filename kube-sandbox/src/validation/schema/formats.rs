//! String formats (date-time, uuid, ...) as kube-openapi checks them.

use std::net::IpAddr;
use std::sync::OnceLock;

use regex::Regex;

/// Whether `s` is valid for `format`; `None` when the apiserver ignores the format (it strips
/// every format but the ones below from CRD schemas).
pub(super) fn check_format(format: &str, s: &str) -> Option<bool> {
    let normalized = format.replace('-', "");
    let ok = match normalized.as_str() {
        "datetime" => is_datetime(s),
        "date" => is_date(s),
        "byte" => is_base64(s),
        "uuid" => is_uuid(s, None),
        "uuid3" => is_uuid(s, Some('3')),
        "uuid4" => is_uuid(s, Some('4')),
        "uuid5" => is_uuid(s, Some('5')),
        "ipv4" => s.parse::<IpAddr>().is_ok() && s.contains('.'),
        "ipv6" => s.parse::<IpAddr>().is_ok() && s.contains(':'),
        "cidr" => is_cidr(s),
        "mac" => is_mac(s),
        "hostname" => is_hostname(s),
        "email" => is_email(s),
        "uri" => is_uri(s),
        "duration" => is_duration(s),
        "hexcolor" => static_regex(&HEXCOLOR, r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$", s),
        "rgbcolor" => static_regex(
            &RGBCOLOR,
            r"^rgb\(\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*,\s*(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])\s*\)$",
            s,
        ),
        "bsonobjectid" => s.len() == 24 && s.chars().all(|c| c.is_ascii_hexdigit()),
        "ssn" => static_regex(&SSN, r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", s),
        "password" | "isbn" | "isbn10" | "isbn13" | "creditcard" => true,
        _ => return None,
    };
    Some(ok)
}

pub(super) static HEXCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
pub(super) static RGBCOLOR: OnceLock<Option<Regex>> = OnceLock::new();
pub(super) static SSN: OnceLock<Option<Regex>> = OnceLock::new();
pub(super) static HOSTNAME: OnceLock<Option<Regex>> = OnceLock::new();

pub(super) fn static_regex(cell: &OnceLock<Option<Regex>>, pattern: &str, s: &str) -> bool {
    // The patterns are constants; if one failed to compile the check is skipped.
    cell.get_or_init(|| Regex::new(pattern).ok())
        .as_ref()
        .is_none_or(|re| re.is_match(s))
}

pub(super) fn digits(s: &str) -> Option<u32> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

pub(super) fn is_date(s: &str) -> bool {
    let parts: Vec<&str> = s.split('-').collect();
    let [y, m, d] = parts.as_slice() else {
        return false;
    };
    if y.len() != 4 || m.len() != 2 || d.len() != 2 {
        return false;
    }
    let (Some(year), Some(month), Some(day)) = (digits(y), digits(m), digits(d)) else {
        return false;
    };
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    let days = match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        2 if leap => 29,
        2 => 28,
        _ => return false,
    };
    (1..=days).contains(&day)
}

/// RFC 3339 date-time as go-openapi's `IsDateTime` accepts it.
pub(super) fn is_datetime(s: &str) -> bool {
    let Some(split) = s.find(['T', 't']) else {
        return false;
    };
    let (date, time) = (&s[..split], &s[split + 1..]);
    if !is_date(date) {
        return false;
    }
    let (clock, zone) = match time.find(['Z', 'z', '+', '-']) {
        Some(i) => (&time[..i], &time[i..]),
        None => return false,
    };
    let (hms, fraction) = match clock.split_once('.') {
        Some((hms, f)) => (hms, Some(f)),
        None => (clock, None),
    };
    if fraction.is_some_and(|f| {
        digits(f).is_none() && !(f.len() > 9 && f.bytes().all(|b| b.is_ascii_digit()))
    }) {
        return false;
    }
    let two = |t: &str, max: u32| t.len() == 2 && digits(t).is_some_and(|v| v <= max);
    let hms: Vec<&str> = hms.split(':').collect();
    let [h, m, sec] = hms.as_slice() else {
        return false;
    };
    if !(two(h, 23) && two(m, 59) && two(sec, 60)) {
        return false;
    }
    match zone {
        "Z" | "z" => true,
        z => {
            let offset = &z[1..];
            match offset.split_once(':') {
                Some((oh, om)) => two(oh, 23) && two(om, 59),
                None => false,
            }
        }
    }
}

/// Go's `base64.StdEncoding.DecodeString`, which skips `\r` and `\n`.
pub(super) fn is_base64(s: &str) -> bool {
    let cleaned: Vec<u8> = s.bytes().filter(|b| *b != b'\r' && *b != b'\n').collect();
    if !cleaned.len().is_multiple_of(4) {
        return false;
    }
    let padding = cleaned.iter().rev().take_while(|b| **b == b'=').count();
    if padding > 2 {
        return false;
    }
    cleaned[..cleaned.len() - padding]
        .iter()
        .all(|b| b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/')
}

pub(super) fn is_uuid(s: &str, version: Option<char>) -> bool {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    let groups: Vec<&str> = s.split('-').collect();
    let dashed_ok = groups.len() == 1
        || (groups.len() == 5 && groups.iter().map(|g| g.len()).eq([8, 4, 4, 4, 12]));
    if !dashed_ok || hex.len() != 32 || !hex.chars().all(|c| c.is_ascii_hexdigit()) {
        return false;
    }
    match version {
        None => true,
        Some(v) => {
            let chars: Vec<char> = hex.chars().collect();
            let variant_ok =
                v == '3' || matches!(chars[16].to_ascii_lowercase(), '8' | '9' | 'a' | 'b');
            chars[12] == v && variant_ok
        }
    }
}

pub(super) fn is_cidr(s: &str) -> bool {
    let Some((ip, bits)) = s.split_once('/') else {
        return false;
    };
    let Some(bits) = digits(bits) else {
        return false;
    };
    match ip.parse::<IpAddr>() {
        Ok(IpAddr::V4(_)) => bits <= 32,
        Ok(IpAddr::V6(_)) => bits <= 128,
        Err(_) => false,
    }
}

/// Go's `net.ParseMAC`: 6, 8 or 20 octets separated by `:` or `-`, or dotted groups of four.
pub(super) fn is_mac(s: &str) -> bool {
    let valid_len = |n: usize| matches!(n, 6 | 8 | 20);
    if s.contains('.') {
        let groups: Vec<&str> = s.split('.').collect();
        return valid_len(groups.len() * 2)
            && groups
                .iter()
                .all(|g| g.len() == 4 && g.chars().all(|c| c.is_ascii_hexdigit()));
    }
    for sep in [':', '-'] {
        if s.contains(sep) {
            let groups: Vec<&str> = s.split(sep).collect();
            return valid_len(groups.len())
                && groups
                    .iter()
                    .all(|g| g.len() == 2 && g.chars().all(|c| c.is_ascii_hexdigit()));
        }
    }
    false
}

pub(super) fn is_hostname(s: &str) -> bool {
    const PATTERN: &str = r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$";
    s.len() <= 255
        && s.split('.').all(|label| label.len() <= 63)
        && static_regex(&HOSTNAME, PATTERN, s)
}

/// An approximation of Go's `net/mail.ParseAddress`: `local@domain`, optionally as
/// `Name <local@domain>`.
pub(super) fn is_email(s: &str) -> bool {
    let addr = match (s.find('<'), s.strip_suffix('>')) {
        (Some(i), Some(inner)) => &inner[i + 1..],
        (None, None) => s.trim(),
        _ => return false,
    };
    match addr.rsplit_once('@') {
        Some((local, domain)) => {
            !local.is_empty()
                && !domain.is_empty()
                && !addr
                    .chars()
                    .any(|c| c.is_whitespace() || c == '<' || c == '>')
                && !domain.starts_with('.')
                && !domain.ends_with('.')
        }
        None => false,
    }
}

/// An approximation of Go's `url.ParseRequestURI`: an absolute URI or an absolute path.
pub(super) fn is_uri(s: &str) -> bool {
    if s.is_empty() || s.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return false;
    }
    if s.starts_with('/') {
        return true;
    }
    match s.split_once(':') {
        Some((scheme, _)) => {
            let mut chars = scheme.chars();
            chars.next().is_some_and(|c| c.is_ascii_alphabetic())
                && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'))
        }
        None => false,
    }
}

/// Go's `time.ParseDuration` syntax, plus the day/week units go-openapi adds.
pub(super) fn is_duration(s: &str) -> bool {
    let body = s.strip_prefix(['+', '-']).unwrap_or(s).trim();
    if body == "0" {
        return true;
    }
    let units = [
        "ns", "us", "µs", "ms", "s", "m", "h", "d", "w", "sec", "secs", "second", "seconds", "min",
        "mins", "minute", "minutes", "hr", "hrs", "hour", "hours", "day", "days", "wk", "wks",
        "week", "weeks",
    ];
    let mut rest = body;
    let mut any = false;
    while !rest.is_empty() {
        let num_len = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(rest.len());
        let number = &rest[..num_len];
        if number.is_empty() || number == "." || number.matches('.').count() > 1 {
            return false;
        }
        rest = rest[num_len..].trim_start();
        let unit_len = rest
            .find(|c: char| c.is_ascii_digit() || c == '.' || c.is_whitespace())
            .unwrap_or(rest.len());
        let unit = &rest[..unit_len];
        if !units.contains(&unit) {
            return false;
        }
        rest = rest[unit_len..].trim_start();
        any = true;
    }
    any
}
