//! A tiny HTML builder that escapes by construction: text and attribute values are always
//! escaped; the only unescaped markup is `&'static str` written in this crate's source, so a
//! value read from a cluster (a name, a label, a message) can never become markup.

use std::fmt::Write as _;

/// HTML being written.
#[derive(Debug, Default)]
pub struct Html {
    out: String,
}

/// `s` with `& < > " '` replaced by entities: safe as element text and inside a quoted
/// attribute value.
pub fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    escape_into(&mut out, s);
    out
}

fn escape_into(out: &mut String, s: &str) {
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
}

/// `s` percent-encoded as one URL path segment or query value: everything but the unreserved
/// characters of RFC 3986 is encoded, so `/`, `?`, `#` and `&` in a name stay inside it.
pub fn url_segment(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(char::from(b));
        } else {
            let _ = write!(out, "%{b:02X}");
        }
    }
    out
}

impl Html {
    /// An empty document part.
    pub fn new() -> Html {
        Html::default()
    }

    /// An empty part with room for `bytes`.
    pub fn with_capacity(bytes: usize) -> Html {
        Html {
            out: String::with_capacity(bytes),
        }
    }

    /// Markup written in this crate's source (never a value from outside).
    pub fn raw(&mut self, markup: &'static str) -> &mut Html {
        self.out.push_str(markup);
        self
    }

    /// Text, escaped.
    pub fn text(&mut self, text: &str) -> &mut Html {
        escape_into(&mut self.out, text);
        self
    }

    /// A number as text.
    pub fn num(&mut self, n: impl std::fmt::Display) -> &mut Html {
        let _ = write!(self.out, "{n}");
        self
    }

    /// `<tag a="v" ...>` with every value escaped; attribute names are static.
    pub fn open(&mut self, tag: &'static str, attrs: &[(&'static str, &str)]) -> &mut Html {
        self.out.push('<');
        self.out.push_str(tag);
        for (name, value) in attrs {
            self.out.push(' ');
            self.out.push_str(name);
            self.out.push_str("=\"");
            escape_into(&mut self.out, value);
            self.out.push('"');
        }
        self.out.push('>');
        self
    }

    /// `</tag>`.
    pub fn close(&mut self, tag: &'static str) -> &mut Html {
        self.out.push_str("</");
        self.out.push_str(tag);
        self.out.push('>');
        self
    }

    /// `<tag attrs>text</tag>`.
    pub fn el(
        &mut self,
        tag: &'static str,
        attrs: &[(&'static str, &str)],
        text: &str,
    ) -> &mut Html {
        self.open(tag, attrs).text(text).close(tag)
    }

    /// Another part, already built (and so already escaped).
    pub fn append(&mut self, part: Html) -> &mut Html {
        self.out.push_str(&part.out);
        self
    }

    /// The HTML written.
    pub fn finish(self) -> String {
        self.out
    }

    /// Bytes written so far.
    pub fn len(&self) -> usize {
        self.out.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.out.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escape_table() {
        for (input, want) in [
            ("web", "web"),
            (
                "<script>alert(1)</script>",
                "&lt;script&gt;alert(1)&lt;/script&gt;",
            ),
            ("a&b", "a&amp;b"),
            ("\"x\" 'y'", "&quot;x&quot; &#39;y&#39;"),
            ("héllo", "héllo"),
        ] {
            assert_eq!(escape(input), want, "{input}");
        }
    }

    #[test]
    fn values_never_become_markup() {
        let evil = "<script>alert('x')</script>\"><img src=x onerror=alert(1)>";
        let mut h = Html::new();
        h.open("a", &[("href", evil), ("title", evil)])
            .text(evil)
            .close("a")
            .el("td", &[], evil);
        let out = h.finish();
        assert!(!out.contains("<script"), "{out}");
        assert!(!out.contains("<img"), "{out}");
        assert_eq!(
            out.matches('"').count(),
            4,
            "only the attributes' own quotes: {out}"
        );
        assert_eq!(
            out.matches('<').count(),
            4,
            "only the builder's own tags: {out}"
        );
    }

    #[test]
    fn url_segment_table() {
        for (input, want) in [
            ("web", "web"),
            ("a/b", "a%2Fb"),
            ("x?y#z&w", "x%3Fy%23z%26w"),
            ("<s> ", "%3Cs%3E%20"),
            ("é", "%C3%A9"),
        ] {
            assert_eq!(url_segment(input), want, "{input}");
        }
    }
}
