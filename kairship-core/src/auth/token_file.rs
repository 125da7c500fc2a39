//! Static bearer tokens from a file in kube-apiserver's `--token-auth-file` format, for
//! development servers.

use std::collections::HashMap;
use std::path::Path;

use async_trait::async_trait;

use super::cache::token_digest;
use crate::access::{AccessError, Authenticator, Caller};

/// Why a token file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum TokenFileError {
    /// The file could not be read.
    #[error("cannot read token file {path}: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A line is malformed.
    #[error("token file line {line}: {reason}")]
    Parse {
        /// 1-based line number.
        line: usize,
        /// What is wrong with it.
        reason: String,
    },
}

/// One line of a token file: `token,user,uid[,"group1,group2"]`.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenEntry {
    /// The bearer token.
    pub token: String,
    /// Who it identifies.
    pub caller: Caller,
}

impl std::fmt::Debug for TokenEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The token itself is never printed.
        f.debug_struct("TokenEntry")
            .field("caller", &self.caller)
            .finish_non_exhaustive()
    }
}

/// Splits one CSV line into fields: commas separate, double quotes enclose fields that hold
/// commas, `""` inside quotes is a literal quote.
fn csv_fields(line: &str) -> Result<Vec<String>, String> {
    let mut fields = Vec::new();
    let mut field = String::new();
    let mut chars = line.chars().peekable();
    let mut quoted = false;
    let mut at_field_start = true;
    while let Some(c) = chars.next() {
        match (quoted, c) {
            (false, '"') if at_field_start => {
                quoted = true;
                at_field_start = false;
            }
            (false, '"') => return Err("a quote in the middle of an unquoted field".into()),
            (false, ',') => {
                fields.push(std::mem::take(&mut field));
                at_field_start = true;
            }
            (false, c) => {
                field.push(c);
                at_field_start = false;
            }
            (true, '"') if chars.peek() == Some(&'"') => {
                chars.next();
                field.push('"');
            }
            (true, '"') => {
                quoted = false;
                match chars.peek() {
                    None | Some(',') => {}
                    Some(_) => return Err("text after a closing quote".into()),
                }
            }
            (true, c) => field.push(c),
        }
    }
    if quoted {
        return Err("unterminated quote".into());
    }
    fields.push(field);
    Ok(fields)
}

/// Parses a token file. Blank lines and lines starting with `#` are skipped; every other line
/// needs a token, a user name and a uid (possibly empty), and may list groups in a fourth
/// field separated by commas. A token listed twice keeps its last line, as kube-apiserver does.
pub fn parse_token_file(text: &str) -> Result<Vec<TokenEntry>, TokenFileError> {
    let mut entries = Vec::new();
    for (index, raw) in text.lines().enumerate() {
        let line_no = index + 1;
        let line = if index == 0 {
            raw.trim_start_matches('\u{feff}')
        } else {
            raw
        };
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let err = |reason: String| TokenFileError::Parse {
            line: line_no,
            reason,
        };
        let fields = csv_fields(line.trim_end_matches('\r')).map_err(err)?;
        if fields.len() < 3 {
            return Err(err(format!(
                "expected at least 3 columns (token, user name, uid), found {}",
                fields.len()
            )));
        }
        if fields.len() > 4 {
            return Err(err(format!(
                "expected at most 4 columns (token, user name, uid, groups), found {}; quote the groups",
                fields.len()
            )));
        }
        let token = fields[0].trim();
        if token.is_empty() {
            return Err(err("empty token".into()));
        }
        if token.chars().any(char::is_whitespace) {
            return Err(err("the token contains whitespace".into()));
        }
        let user = fields[1].trim();
        if user.is_empty() {
            return Err(err("empty user name".into()));
        }
        let uid = fields[2].trim();
        let groups = fields
            .get(3)
            .map(|g| {
                g.split(',')
                    .map(str::trim)
                    .filter(|g| !g.is_empty())
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        entries.push(TokenEntry {
            token: token.to_owned(),
            caller: Caller {
                user: user.to_owned(),
                groups,
                uid: (!uid.is_empty()).then(|| uid.to_owned()),
            },
        });
    }
    Ok(entries)
}

/// Authenticates bearer tokens listed in a token file (kube-apiserver's `--token-auth-file`
/// CSV format). Callers also get the group `system:authenticated`, as kube-apiserver adds it.
pub struct StaticTokenAuthenticator {
    /// Keyed by the token's digest: the tokens themselves are not kept.
    callers: HashMap<[u8; 32], Caller>,
}

impl std::fmt::Debug for StaticTokenAuthenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticTokenAuthenticator")
            .field("tokens", &self.callers.len())
            .finish()
    }
}

impl StaticTokenAuthenticator {
    /// From parsed entries.
    pub fn new(entries: Vec<TokenEntry>) -> Self {
        let callers = entries
            .into_iter()
            .map(|entry| {
                let mut caller = entry.caller;
                if !caller.groups.iter().any(|g| g == "system:authenticated") {
                    caller.groups.push("system:authenticated".to_owned());
                }
                (token_digest(&entry.token), caller)
            })
            .collect();
        StaticTokenAuthenticator { callers }
    }

    /// From the text of a token file.
    pub fn parse(text: &str) -> Result<Self, TokenFileError> {
        Ok(Self::new(parse_token_file(text)?))
    }

    /// Reads and parses a token file.
    pub fn from_file(path: &Path) -> Result<Self, TokenFileError> {
        let text = std::fs::read_to_string(path).map_err(|source| TokenFileError::Read {
            path: path.display().to_string(),
            source,
        })?;
        Self::parse(&text)
    }

    /// How many tokens are known.
    pub fn len(&self) -> usize {
        self.callers.len()
    }

    /// Whether no token is known.
    pub fn is_empty(&self) -> bool {
        self.callers.is_empty()
    }
}

#[async_trait]
impl Authenticator for StaticTokenAuthenticator {
    async fn authenticate(&self, bearer_token: &str) -> Result<Caller, AccessError> {
        self.callers
            .get(&token_digest(bearer_token))
            .cloned()
            .ok_or_else(|| AccessError::Unauthenticated("unknown bearer token".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caller(user: &str, uid: Option<&str>, groups: &[&str]) -> Caller {
        Caller {
            user: user.into(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            uid: uid.map(str::to_owned),
        }
    }

    #[test]
    fn parses_kube_apiserver_token_files() {
        let cases: Vec<(&str, Vec<(&str, Caller)>)> = vec![
            (
                "t1,alice,u1",
                vec![("t1", caller("alice", Some("u1"), &[]))],
            ),
            (
                "t1,alice,u1,\"admins,dev\"\n",
                vec![("t1", caller("alice", Some("u1"), &["admins", "dev"]))],
            ),
            (
                "t1,alice,,viewers",
                vec![("t1", caller("alice", None, &["viewers"]))],
            ),
            (
                "\u{feff}# comment\n\n t2 , bob , u2 ,\" a , b ,\"\r\n",
                vec![("t2", caller("bob", Some("u2"), &["a", "b"]))],
            ),
            (
                "t1,alice,u1\nt3,\"carol, jr\",u3,\"x\"\"y\"",
                vec![
                    ("t1", caller("alice", Some("u1"), &[])),
                    ("t3", caller("carol, jr", Some("u3"), &["x\"y"])),
                ],
            ),
        ];
        for (text, want) in cases {
            let got = parse_token_file(text).unwrap();
            let got: Vec<(&str, Caller)> = got
                .iter()
                .map(|e| (e.token.as_str(), e.caller.clone()))
                .collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn reports_malformed_lines_with_their_number() {
        for (text, line, reason) in [
            ("t1,alice", 1, "at least 3 columns"),
            ("ok,a,1\n\nt1", 3, "found 1"),
            ("t1,a,1,g1,g2", 1, "at most 4 columns"),
            (",alice,u1", 1, "empty token"),
            ("t1,,u1", 1, "empty user"),
            ("ok,a,1\nt1,\"alice,u1", 2, "unterminated quote"),
            ("t1,al\"ice,u1", 1, "middle of an unquoted"),
            ("t1,\"alice\"x,u1", 1, "after a closing quote"),
            ("t 1,alice,u1", 1, "whitespace"),
        ] {
            match parse_token_file(text) {
                Err(TokenFileError::Parse { line: l, reason: r }) => {
                    assert_eq!(l, line, "{text:?}: {r}");
                    assert!(r.contains(reason), "{text:?}: {r}");
                }
                other => panic!("{text:?}: {other:?}"),
            }
        }
    }

    #[tokio::test]
    async fn authenticates_known_tokens_only_and_never_prints_them() {
        let auth = StaticTokenAuthenticator::parse(
            "tok-admin,admin,1,system:masters\ntok-view,viewer,2\ntok-view,viewer2,3",
        )
        .unwrap();
        assert_eq!(auth.len(), 2);
        let admin = auth.authenticate("tok-admin").await.unwrap();
        assert_eq!(admin.user, "admin");
        assert_eq!(admin.groups, ["system:masters", "system:authenticated"]);
        // The last line of a duplicated token wins.
        assert_eq!(auth.authenticate("tok-view").await.unwrap().user, "viewer2");
        assert!(matches!(
            auth.authenticate("nope").await,
            Err(AccessError::Unauthenticated(_))
        ));
        let printed = format!("{auth:?} {:?}", parse_token_file("tok-admin,a,1").unwrap());
        assert!(!printed.contains("tok-admin"), "{printed}");
    }

    #[test]
    fn missing_files_are_reported_with_their_path() {
        let err =
            StaticTokenAuthenticator::from_file(Path::new("/nonexistent/tokens.csv")).unwrap_err();
        assert!(err.to_string().contains("/nonexistent/tokens.csv"), "{err}");
    }
}
