//! Who may use the node's audit form and its provider API: whoever presents the operator
//! token, as a bearer token (`Authorization: Bearer …`) or through an audit-form login.
//!
//! Logging in (`POST /audit/login` with the token) opens a login session: a random id in a
//! cookie (`HttpOnly; SameSite=Strict; Path=/`) and a random CSRF token that every form of
//! that session carries and every POST must send back. The token is compared in constant
//! time (both sides hashed first, so neither length nor content leaks through timing), as
//! is the CSRF token. A POST whose `Origin` names another site is refused outright.
//! Login sessions live in memory only (a restart logs everybody out), at most
//! [`MAX_LOGINS`] of them, each for [`LOGIN_TTL`]. The login form itself carries a CSRF
//! token too, before any login exists: a random value in a `SameSite=Strict` cookie and in
//! the form, which the POST must send back alike ([`LoginCsrf`]), so another site cannot
//! log a browser in to this node behind the person's back.

use std::{
    collections::BTreeMap,
    path::{Path, PathBuf},
    sync::Mutex,
    time::{Duration, Instant, SystemTime},
};

use axum::http::{HeaderMap, header};
use rand::{RngCore, rngs::OsRng};
use trust_protocol::Hash;

use crate::keys::{KeyError, OperatorToken};

/// The login cookie's name.
pub const COOKIE: &str = "trust_audit";
/// The login form's CSRF cookie.
pub const LOGIN_CSRF_COOKIE: &str = "trust_audit_login";
/// Login sessions kept at once; a new one pushes out the oldest.
pub const MAX_LOGINS: usize = 64;
/// How long a login lasts.
pub const LOGIN_TTL: Duration = Duration::from_secs(12 * 60 * 60);

/// One login session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Login {
    /// Its id (the cookie's value).
    pub id: String,
    /// The CSRF token its forms carry.
    pub csrf: String,
}

#[derive(Debug)]
struct Open {
    csrf: String,
    since: Instant,
}

/// The operator token and the login sessions opened with it.
#[derive(Debug)]
pub struct Auth {
    token: Mutex<Token>,
    /// The token file, read again whenever it changes (`None`: a fixed token).
    path: Option<PathBuf>,
    logins: Mutex<BTreeMap<String, Open>>,
}

/// The token in force: its hash (`None`: the file cannot be read, so nothing is accepted)
/// and the file's identity when it was read.
#[derive(Debug)]
struct Token {
    hash: Option<Hash>,
    stamp: Option<FileStamp>,
}

/// What tells a rewritten token file from the one read before: inode, size, mtime.
#[derive(Debug, Clone, PartialEq, Eq)]
struct FileStamp {
    ino: u64,
    len: u64,
    modified: Option<SystemTime>,
}

impl FileStamp {
    fn of(path: &Path) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        let meta = std::fs::metadata(path).ok()?;
        Some(Self {
            ino: meta.ino(),
            len: meta.len(),
            modified: meta.modified().ok(),
        })
    }
}

/// Whether `a` and `b` are equal, in time that depends only on their lengths.
pub fn ct_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn random_hex() -> String {
    let mut b = [0u8; 32];
    OsRng.fill_bytes(&mut b);
    hex::encode(b)
}

impl Auth {
    /// Logins checked against a fixed `token`.
    pub fn new(token: &OperatorToken) -> Self {
        Self {
            token: Mutex::new(Token {
                hash: Some(Hash::sha256(token.expose().as_bytes())),
                stamp: None,
            }),
            path: None,
            logins: Mutex::new(BTreeMap::new()),
        }
    }

    /// Logins and bearer tokens checked against the token in the file at `path`, read
    /// again whenever the file changes (`trust-node keys rotate-api-token`): the old token
    /// stops working at once and every login opened with it is closed. A file that can no
    /// longer be read (removed, garbled, readable by others) accepts nothing until fixed.
    /// The operator's login on a running node: the token at `path`, made (owner-only) for
    /// a home older than tokens, refused when others can read it (it logs a person in to
    /// the audit form and to the provider API). Read again whenever the file changes, so a
    /// rotated token is in force at once.
    pub fn for_operator(path: &Path) -> Result<Self, KeyError> {
        let (_, created) = crate::keys::operator_token(path)?;
        if created {
            tracing::info!(path = %path.display(), "operator token created (owner-only)");
        }
        Self::from_file(path)
    }

    /// The login checked against the token in the file at `path`.
    pub fn from_file(path: &Path) -> Result<Self, KeyError> {
        let token = crate::keys::load_operator_token(path)?;
        let auth = Self::new(&token);
        auth.token_state().stamp = FileStamp::of(path);
        Ok(Self {
            path: Some(path.to_path_buf()),
            ..auth
        })
    }

    fn token_state(&self) -> std::sync::MutexGuard<'_, Token> {
        self.token.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The hash of the token in force, after reading the file again if it changed.
    fn current(&self) -> Option<Hash> {
        let mut state = self.token_state();
        if let Some(path) = &self.path {
            let stamp = FileStamp::of(path);
            if stamp != state.stamp {
                state.hash = match crate::keys::load_operator_token(path) {
                    Ok(t) => {
                        tracing::info!(target: "trust::api", path = %path.display(), "operator token file changed: the new token is in force, every login closed");
                        Some(Hash::sha256(t.expose().as_bytes()))
                    }
                    Err(e) => {
                        tracing::warn!(target: "trust::api", error = %e, "operator token unreadable: nothing is accepted until it is fixed");
                        None
                    }
                };
                state.stamp = stamp;
                drop(state);
                self.logins().clear();
                return self.token_state().hash;
            }
        }
        state.hash
    }

    /// Whether `presented` is the operator token in force.
    pub fn token_ok(&self, presented: &str) -> bool {
        let presented = Hash::sha256(presented.trim().as_bytes());
        self.current()
            .is_some_and(|t| ct_eq(presented.as_ref(), t.as_ref()))
    }

    /// Whether a request carries the operator token: `Authorization: Bearer <token>`, or
    /// the cookie of an open audit-form login.
    pub fn authorized(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| {
                let (scheme, rest) = v.trim().split_once(' ')?;
                scheme.eq_ignore_ascii_case("bearer").then_some(rest)
            });
        match bearer {
            Some(t) => self.token_ok(t),
            None => self.session(headers).is_some(),
        }
    }

    fn logins(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Open>> {
        self.logins.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Opens a login session if `presented` is the operator token.
    pub fn login(&self, presented: &str) -> Option<Login> {
        if !self.token_ok(presented) {
            return None;
        }
        let login = Login {
            id: random_hex(),
            csrf: random_hex(),
        };
        let mut logins = self.logins();
        logins.retain(|_, o| o.since.elapsed() < LOGIN_TTL);
        while logins.len() >= MAX_LOGINS {
            let Some(oldest) = logins
                .iter()
                .min_by_key(|(_, o)| o.since)
                .map(|(k, _)| k.clone())
            else {
                break;
            };
            logins.remove(&oldest);
        }
        logins.insert(
            login.id.clone(),
            Open {
                csrf: login.csrf.clone(),
                since: Instant::now(),
            },
        );
        Some(login)
    }

    /// The login session the request's cookie names, if it is open.
    pub fn session(&self, headers: &HeaderMap) -> Option<Login> {
        let id = cookie(headers, COOKIE)?;
        // A rotated token closes the logins opened with the old one.
        self.current()?;
        let logins = self.logins();
        // Looked up by comparing every open id in constant time, not by map lookup.
        logins
            .iter()
            .find(|(k, o)| ct_eq(k.as_bytes(), id.as_bytes()) && o.since.elapsed() < LOGIN_TTL)
            .map(|(k, o)| Login {
                id: k.clone(),
                csrf: o.csrf.clone(),
            })
    }

    /// Closes a login session.
    pub fn logout(&self, login: &Login) {
        self.logins().remove(&login.id);
    }
}

impl Login {
    /// Whether `presented` is this session's CSRF token.
    pub fn csrf_ok(&self, presented: &str) -> bool {
        ct_eq(self.csrf.as_bytes(), presented.as_bytes())
    }

    /// The `Set-Cookie` value that opens it in the browser.
    pub fn set_cookie(&self) -> String {
        format!("{COOKIE}={}; HttpOnly; SameSite=Strict; Path=/", self.id)
    }
}

/// The login form's CSRF token: one random value, in a cookie and in the form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginCsrf(String);

impl LoginCsrf {
    /// A fresh one.
    pub fn new() -> Self {
        Self(random_hex())
    }

    /// The value the form carries.
    pub fn value(&self) -> &str {
        &self.0
    }

    /// The `Set-Cookie` value that gives it to the browser.
    pub fn set_cookie(&self) -> String {
        format!(
            "{LOGIN_CSRF_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/audit",
            self.0
        )
    }

    /// Whether a login POST sent back the same value in its cookie and its form.
    pub fn check(headers: &HeaderMap, presented: &str) -> bool {
        cookie(headers, LOGIN_CSRF_COOKIE)
            .is_some_and(|c| !c.is_empty() && ct_eq(c.as_bytes(), presented.as_bytes()))
    }
}

impl Default for LoginCsrf {
    fn default() -> Self {
        Self::new()
    }
}

/// The `Set-Cookie` value that removes the login cookie.
pub fn clear_cookie() -> String {
    format!("{COOKIE}=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0")
}

/// The value of cookie `name` in the request.
fn cookie(headers: &HeaderMap, name: &str) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v.trim().to_string())
}

/// Whether a POST may come from this page: no `Origin` header (a same-origin form in an
/// older browser, or a tool), or one whose host is the request's `Host`.
pub fn same_origin(headers: &HeaderMap) -> bool {
    let Some(origin) = headers.get(header::ORIGIN) else {
        return true;
    };
    let (Ok(origin), Some(host)) = (
        origin.to_str(),
        headers.get(header::HOST).and_then(|h| h.to_str().ok()),
    ) else {
        return false;
    };
    origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
        .is_some_and(|o| o.eq_ignore_ascii_case(host))
}

#[cfg(test)]
mod tests {
    use axum::http::HeaderValue;

    use super::*;

    fn token() -> OperatorToken {
        let dir = tempfile::tempdir().unwrap();
        crate::keys::operator_token(&dir.path().join("t"))
            .unwrap()
            .0
    }

    #[test]
    fn only_the_token_logs_in_and_the_cookie_names_the_session() {
        let t = token();
        let auth = Auth::new(&t);
        assert!(auth.login("").is_none());
        assert!(auth.login(&t.expose()[..63]).is_none());
        assert!(auth.login(&format!("{}0", t.expose())).is_none());
        let login = auth.login(t.expose()).expect("the token logs in");
        let cookie = login.set_cookie();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
        let mut h = HeaderMap::new();
        assert!(auth.session(&h).is_none());
        h.insert(
            header::COOKIE,
            HeaderValue::from_str(&format!("a=b; {COOKIE}={}", login.id)).unwrap(),
        );
        let s = auth.session(&h).expect("logged in");
        assert!(s.csrf_ok(&login.csrf));
        assert!(!s.csrf_ok(""));
        assert!(!s.csrf_ok(&random_hex()));
        auth.logout(&s);
        assert!(auth.session(&h).is_none());
    }

    #[test]
    fn logins_are_bounded() {
        let t = token();
        let auth = Auth::new(&t);
        let first = auth.login(t.expose()).unwrap();
        for _ in 0..MAX_LOGINS {
            auth.login(t.expose()).unwrap();
        }
        assert_eq!(auth.logins().len(), MAX_LOGINS);
        assert!(!auth.logins().contains_key(&first.id), "the oldest went");
    }

    #[test]
    fn a_post_from_another_site_is_not_same_origin() {
        let mut h = HeaderMap::new();
        h.insert(header::HOST, HeaderValue::from_static("127.0.0.1:8480"));
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://127.0.0.1:8480"),
        );
        assert!(same_origin(&h));
        h.insert(
            header::ORIGIN,
            HeaderValue::from_static("http://evil.example"),
        );
        assert!(!same_origin(&h));
        h.insert(header::ORIGIN, HeaderValue::from_static("null"));
        assert!(!same_origin(&h));
    }
}
