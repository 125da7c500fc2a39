//! The lexer: rule text to tokens.

use super::value::CompileError;

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Token {
    Int(i64),
    Uint(u64),
    Double(f64),
    Str(String),
    Ident(String),
    LParen,
    RParen,
    LBracket,
    RBracket,
    LBrace,
    RBrace,
    Dot,
    Comma,
    Colon,
    Question,
    Bang,
    Minus,
    Plus,
    Star,
    Slash,
    Percent,
    EqEq,
    NotEq,
    Lt,
    Le,
    Gt,
    Ge,
    AndAnd,
    OrOr,
    In,
}

pub(super) fn syntax(offset: usize, message: impl Into<String>) -> CompileError {
    CompileError::Syntax {
        offset,
        message: message.into(),
    }
}

pub(super) fn tokenize(src: &str) -> Result<Vec<(usize, Token)>, CompileError> {
    let chars: Vec<(usize, char)> = src.char_indices().collect();
    let mut out = Vec::new();
    let mut i = 0;
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let offset = |i: usize| chars.get(i).map_or(src.len(), |(o, _)| *o);
    while let Some(c) = at(i) {
        let start = offset(i);
        if c.is_whitespace() {
            i += 1;
            continue;
        }
        // Comments run to the end of the line.
        if c == '/' && at(i + 1) == Some('/') {
            while let Some(c) = at(i) {
                if c == '\n' {
                    break;
                }
                i += 1;
            }
            continue;
        }
        if c.is_ascii_digit() {
            let (tok, next) = lex_number(&chars, i, start)?;
            out.push((start, tok));
            i = next;
            continue;
        }
        if c.is_ascii_alphabetic() || c == '_' {
            let mut j = i;
            while let Some(c) = at(j) {
                if c.is_ascii_alphanumeric() || c == '_' {
                    j += 1;
                } else {
                    break;
                }
            }
            let word: String = chars[i..j].iter().map(|(_, c)| *c).collect();
            let next = at(j);
            if matches!(next, Some('"' | '\'')) {
                let lower = word.to_ascii_lowercase();
                if lower == "r" {
                    let (s, end) = lex_string(&chars, j, true, start)?;
                    out.push((start, Token::Str(s)));
                    i = end;
                    continue;
                }
                if lower == "b" || lower == "rb" || lower == "br" {
                    return Err(CompileError::Unsupported("bytes literals".into()));
                }
            }
            out.push((
                start,
                if word == "in" {
                    Token::In
                } else {
                    Token::Ident(word)
                },
            ));
            i = j;
            continue;
        }
        if c == '"' || c == '\'' {
            let (s, end) = lex_string(&chars, i, false, start)?;
            out.push((start, Token::Str(s)));
            i = end;
            continue;
        }
        let two = |a: char, b: char| c == a && at(i + 1) == Some(b);
        let (tok, len) = if two('=', '=') {
            (Token::EqEq, 2)
        } else if two('!', '=') {
            (Token::NotEq, 2)
        } else if two('<', '=') {
            (Token::Le, 2)
        } else if two('>', '=') {
            (Token::Ge, 2)
        } else if two('&', '&') {
            (Token::AndAnd, 2)
        } else if two('|', '|') {
            (Token::OrOr, 2)
        } else {
            let tok = match c {
                '(' => Token::LParen,
                ')' => Token::RParen,
                '[' => Token::LBracket,
                ']' => Token::RBracket,
                '{' => Token::LBrace,
                '}' => Token::RBrace,
                '.' => Token::Dot,
                ',' => Token::Comma,
                ':' => Token::Colon,
                '?' => Token::Question,
                '!' => Token::Bang,
                '-' => Token::Minus,
                '+' => Token::Plus,
                '*' => Token::Star,
                '/' => Token::Slash,
                '%' => Token::Percent,
                '<' => Token::Lt,
                '>' => Token::Gt,
                other => return Err(syntax(start, format!("unexpected character {other:?}"))),
            };
            (tok, 1)
        };
        out.push((start, tok));
        i += len;
    }
    Ok(out)
}

pub(super) fn lex_number(
    chars: &[(usize, char)],
    mut i: usize,
    start: usize,
) -> Result<(Token, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let collect =
        |from: usize, to: usize| -> String { chars[from..to].iter().map(|(_, c)| *c).collect() };
    if at(i) == Some('0') && matches!(at(i + 1), Some('x' | 'X')) {
        let digits_start = i + 2;
        i = digits_start;
        while at(i).is_some_and(|c| c.is_ascii_hexdigit()) {
            i += 1;
        }
        let digits = collect(digits_start, i);
        if matches!(at(i), Some('u' | 'U')) {
            let v = u64::from_str_radix(&digits, 16)
                .map_err(|_| syntax(start, "invalid uint literal"))?;
            return Ok((Token::Uint(v), i + 1));
        }
        let v =
            i64::from_str_radix(&digits, 16).map_err(|_| syntax(start, "invalid int literal"))?;
        return Ok((Token::Int(v), i));
    }
    let int_start = i;
    while at(i).is_some_and(|c| c.is_ascii_digit()) {
        i += 1;
    }
    let mut is_double = false;
    if at(i) == Some('.') && at(i + 1).is_some_and(|c| c.is_ascii_digit()) {
        is_double = true;
        i += 1;
        while at(i).is_some_and(|c| c.is_ascii_digit()) {
            i += 1;
        }
    }
    if matches!(at(i), Some('e' | 'E')) {
        let mut j = i + 1;
        if matches!(at(j), Some('+' | '-')) {
            j += 1;
        }
        if at(j).is_some_and(|c| c.is_ascii_digit()) {
            is_double = true;
            i = j;
            while at(i).is_some_and(|c| c.is_ascii_digit()) {
                i += 1;
            }
        }
    }
    let text = collect(int_start, i);
    if is_double {
        let v: f64 = text
            .parse()
            .map_err(|_| syntax(start, "invalid double literal"))?;
        return Ok((Token::Double(v), i));
    }
    if matches!(at(i), Some('u' | 'U')) {
        let v: u64 = text
            .parse()
            .map_err(|_| syntax(start, "invalid uint literal"))?;
        return Ok((Token::Uint(v), i + 1));
    }
    let v: i64 = text
        .parse()
        .map_err(|_| syntax(start, "int literal out of range"))?;
    Ok((Token::Int(v), i))
}

pub(super) fn lex_string(
    chars: &[(usize, char)],
    i: usize,
    raw: bool,
    start: usize,
) -> Result<(String, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let quote = at(i).ok_or_else(|| syntax(start, "missing quote"))?;
    let triple = at(i + 1) == Some(quote) && at(i + 2) == Some(quote);
    let mut j = if triple { i + 3 } else { i + 1 };
    let mut out = String::new();
    loop {
        let c = at(j).ok_or_else(|| syntax(start, "unterminated string literal"))?;
        if c == quote {
            if !triple {
                return Ok((out, j + 1));
            }
            if at(j + 1) == Some(quote) && at(j + 2) == Some(quote) {
                return Ok((out, j + 3));
            }
        }
        if !triple && (c == '\n' || c == '\r') {
            return Err(syntax(start, "newline in string literal"));
        }
        if c == '\\' && !raw {
            let (decoded, next) = lex_escape(chars, j + 1, start)?;
            out.push(decoded);
            j = next;
            continue;
        }
        out.push(c);
        j += 1;
    }
}

pub(super) fn lex_escape(
    chars: &[(usize, char)],
    j: usize,
    start: usize,
) -> Result<(char, usize), CompileError> {
    let at = |i: usize| chars.get(i).map(|(_, c)| *c);
    let c = at(j).ok_or_else(|| syntax(start, "unterminated escape"))?;
    let simple = match c {
        'a' => Some('\x07'),
        'b' => Some('\x08'),
        'f' => Some('\x0c'),
        'n' => Some('\n'),
        'r' => Some('\r'),
        't' => Some('\t'),
        'v' => Some('\x0b'),
        '\\' | '\'' | '"' | '`' | '?' => Some(c),
        _ => None,
    };
    if let Some(s) = simple {
        return Ok((s, j + 1));
    }
    let (radix, len, from) = match c {
        'x' | 'X' => (16, 2, j + 1),
        'u' => (16, 4, j + 1),
        'U' => (16, 8, j + 1),
        '0'..='3' => (8, 3, j),
        _ => return Err(syntax(start, format!("invalid escape \\{c}"))),
    };
    let digits: String = (from..from + len).filter_map(at).collect();
    if digits.chars().count() != len {
        return Err(syntax(start, "truncated escape"));
    }
    let code = u32::from_str_radix(&digits, radix).map_err(|_| syntax(start, "invalid escape"))?;
    let ch = char::from_u32(code).ok_or_else(|| syntax(start, "invalid code point"))?;
    Ok((ch, from + len))
}
