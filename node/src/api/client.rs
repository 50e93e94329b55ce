//! A small HTTP/1.1 client for the node's own API (`status`, `query`, `auditor register`
//! talk to a node through it). Loopback, JSON, bounded responses; no TLS.
//!
//! [`Client`] asks one route per method and answers with the route's reply type from
//! [`super::views`]; [`get`], [`post`] and [`post_authorized`] answer any route's JSON as
//! it came.

use std::time::Duration;

use serde::de::DeserializeOwned;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
};
use trust_protocol::{AccountId, Hash, encoding, tx::SignedTx};

use super::views::{
    AccountView, AuditorView, ErrorBody, OpenSessionBody, SessionView, StatusView, SubmittedView,
    TxAccepted, TxJson, TxLocation,
};
use crate::proof::{OutcomeProof, TrustedBlock};

/// Largest response body read.
pub const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClientError {
    /// No connection.
    #[error("cannot reach the node API at {addr}: {source} (is `trust-node run` up?)")]
    Connect {
        /// Address.
        addr: String,
        /// Cause.
        #[source]
        source: std::io::Error,
    },
    /// The exchange failed or timed out.
    #[error("API request failed: {0}")]
    Io(#[source] std::io::Error),
    /// The node answered with an error.
    #[error("{code}: {message} (HTTP {status})")]
    Api {
        /// HTTP status.
        status: u16,
        /// Stable error code.
        code: String,
        /// Message.
        message: String,
    },
    /// The answer is not what the API sends.
    #[error("unexpected API response: {0}")]
    Protocol(String),
    /// A body (the answer's, an event's, or the request's own) is not the JSON it must be.
    #[error("unexpected API response: {what}: {source}")]
    Json {
        /// Which body, and what it must be.
        what: &'static str,
        /// Why it does not read or write.
        #[source]
        source: serde_json::Error,
    },
    /// The answer is JSON, but not the route's reply type.
    #[error("unexpected API response from {path}: {source}")]
    Reply {
        /// The route asked.
        path: String,
        /// Why it does not read as the reply type.
        #[source]
        source: serde_json::Error,
    },
}

/// A JSON answer.
pub type Json = serde_json::Value;

/// A node's API at one address, with a method per route that answers the route's reply
/// type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    addr: String,
}

impl Client {
    /// The API at `addr` (host:port).
    pub fn new(addr: impl Into<String>) -> Self {
        Self { addr: addr.into() }
    }

    /// The address it talks to.
    pub fn addr(&self) -> &str {
        &self.addr
    }

    /// `GET path` read as `T`.
    async fn get_as<T: DeserializeOwned>(&self, path: &str) -> Result<T, ClientError> {
        typed(path, get(&self.addr, path).await?)
    }

    /// `GET /v1/status`.
    pub async fn status(&self) -> Result<StatusView, ClientError> {
        self.get_as("/v1/status").await
    }

    /// `GET /v1/sessions/{id}`.
    pub async fn session(&self, id: &Hash) -> Result<SessionView, ClientError> {
        self.get_as(&format!("/v1/sessions/{id}")).await
    }

    /// `GET /v1/sessions/{id}` with the operator token: on the node that opened the
    /// session, with its steps (names, texts, spans).
    pub async fn session_as_operator(
        &self,
        id: &Hash,
        token: &str,
    ) -> Result<SessionView, ClientError> {
        let path = format!("/v1/sessions/{id}");
        typed(&path, get_authorized(&self.addr, &path, Some(token)).await?)
    }

    /// `GET /v1/sessions/{id}/proof`, walked from `trust` (`?trust=HEIGHT:HASH`) or from
    /// genesis.
    pub async fn session_proof(
        &self,
        id: &Hash,
        trust: Option<&TrustedBlock>,
    ) -> Result<OutcomeProof, ClientError> {
        match trust {
            Some(t) => {
                self.get_as(&format!("/v1/sessions/{id}/proof?trust={t}"))
                    .await
            }
            None => self.get_as(&format!("/v1/sessions/{id}/proof")).await,
        }
    }

    /// `GET /v1/auditors/{id}`.
    pub async fn auditor(&self, id: &AccountId) -> Result<AuditorView, ClientError> {
        self.get_as(&format!("/v1/auditors/{id}")).await
    }

    /// `GET /v1/auditors/{id}/history`, the page below `before` (from the tip when `None`).
    pub async fn auditor_history(
        &self,
        id: &AccountId,
        before: Option<u64>,
    ) -> Result<crate::query::AuditorHistory, ClientError> {
        let path = match before {
            Some(b) => format!("/v1/auditors/{id}/history?before={b}"),
            None => format!("/v1/auditors/{id}/history"),
        };
        self.get_as(&path).await
    }

    /// `GET /v1/accounts/{id}`.
    pub async fn account(&self, id: &AccountId) -> Result<AccountView, ClientError> {
        self.get_as(&format!("/v1/accounts/{id}")).await
    }

    /// `GET /v1/tx/{id}`.
    pub async fn tx_location(&self, id: &Hash) -> Result<TxLocation, ClientError> {
        self.get_as(&format!("/v1/tx/{id}")).await
    }

    /// `POST /v1/tx` with the transaction's canonical bytes in hex.
    pub async fn submit_tx(&self, tx: &SignedTx) -> Result<TxAccepted, ClientError> {
        let path = "/v1/tx";
        let body = TxJson {
            tx: hex::encode(encoding::encode(tx)),
        };
        typed(path, post(&self.addr, path, &json_of(&body)?).await?)
    }

    /// `POST /v1/sessions` with the operator token (opening a session spends the node's
    /// funds).
    pub async fn open_session(
        &self,
        body: &OpenSessionBody,
        token: Option<&str>,
    ) -> Result<SubmittedView, ClientError> {
        self.open_session_keyed(body, token, None).await
    }

    /// `POST /v1/sessions` under an `Idempotency-Key` (when given): a retry with the same
    /// key and body answers the session the first one opened, charging nothing.
    pub async fn open_session_keyed(
        &self,
        body: &OpenSessionBody,
        token: Option<&str>,
        key: Option<&str>,
    ) -> Result<SubmittedView, ClientError> {
        let path = "/v1/sessions";
        let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
        typed(
            path,
            request_with(
                &self.addr,
                "POST",
                path,
                Some(json_of(body)?.to_string()),
                token,
                &headers,
            )
            .await?,
        )
    }

    /// [`Client::open_session_keyed`], and whether the node answered a replay: a repeat of
    /// an earlier request under the same idempotency key (200 with `Idempotent-Replayed`,
    /// where a new session is 202), which opened nothing and charged nothing.
    pub async fn open_session_replayed(
        &self,
        body: &OpenSessionBody,
        token: Option<&str>,
        key: Option<&str>,
    ) -> Result<(SubmittedView, bool), ClientError> {
        let path = "/v1/sessions";
        let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
        let (status, json) = request_status(
            &self.addr,
            "POST",
            path,
            Some(json_of(body)?.to_string()),
            token,
            &headers,
        )
        .await?;
        Ok((typed(path, json)?, status == 200))
    }

    /// `GET /v1/sessions?provider=me`, with labels to match (`NAME` or `NAME=VALUE`),
    /// newest first, before a time (Unix ms), at most `limit`.
    pub async fn listed_sessions(
        &self,
        token: Option<&str>,
        labels: &[String],
        before_ms: Option<u64>,
        limit: Option<usize>,
    ) -> Result<Vec<super::views::ListedView>, ClientError> {
        let mut path = "/v1/sessions?provider=me".to_string();
        for l in labels {
            path.push_str("&label=");
            path.push_str(&percent(l));
        }
        if let Some(b) = before_ms {
            path.push_str(&format!("&before={b}"));
        }
        if let Some(n) = limit {
            path.push_str(&format!("&limit={n}"));
        }
        typed(&path, get_authorized(&self.addr, &path, token).await?)
    }

    /// `POST /v1/sessions/plan`: what that session would be, nothing stored or sent.
    pub async fn plan_session(
        &self,
        body: &OpenSessionBody,
        token: Option<&str>,
    ) -> Result<super::views::Plan, ClientError> {
        let path = "/v1/sessions/plan";
        typed(
            path,
            post_authorized(&self.addr, path, &json_of(body)?, token).await?,
        )
    }

    /// `POST /v1/sessions/{id}/appeals` with the operator token: this node appeals those
    /// segments from its account (escrowing the bond).
    pub async fn appeal(
        &self,
        session: &Hash,
        body: &super::views::AppealBody,
        token: Option<&str>,
    ) -> Result<super::views::AppealAccepted, ClientError> {
        let path = format!("/v1/sessions/{session}/appeals");
        typed(
            &path,
            post_authorized(&self.addr, &path, &json_of(body)?, token).await?,
        )
    }
}

/// `json` read as the reply type of `path`.
fn typed<T: DeserializeOwned>(path: &str, json: Json) -> Result<T, ClientError> {
    serde_json::from_value(json).map_err(|source| ClientError::Reply {
        path: path.to_string(),
        source,
    })
}

/// A request body as JSON.
fn json_of(body: &impl serde::Serialize) -> Result<Json, ClientError> {
    serde_json::to_value(body).map_err(|source| ClientError::Json {
        what: "request body",
        source,
    })
}

/// `GET path` against `addr` (host:port).
pub async fn get(addr: &str, path: &str) -> Result<Json, ClientError> {
    request(addr, "GET", path, None, None).await
}

/// `GET path` with the node's operator token as the bearer token (routes that hand out
/// what only the operator may see, such as a session's opening).
pub async fn get_authorized(
    addr: &str,
    path: &str,
    token: Option<&str>,
) -> Result<Json, ClientError> {
    request(addr, "GET", path, None, token).await
}

/// `POST path` with a JSON body.
pub async fn post(addr: &str, path: &str, body: &Json) -> Result<Json, ClientError> {
    request(addr, "POST", path, Some(body.to_string()), None).await
}

/// `POST path` with a JSON body and the node's operator token as the bearer token (routes
/// that act for the node, such as `POST /v1/sessions`, need it).
pub async fn post_authorized(
    addr: &str,
    path: &str,
    body: &Json,
    token: Option<&str>,
) -> Result<Json, ClientError> {
    request(addr, "POST", path, Some(body.to_string()), token).await
}

async fn request(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<String>,
    token: Option<&str>,
) -> Result<Json, ClientError> {
    request_with(addr, method, path, body, token, &[]).await
}

/// A query value with the characters a query cannot hold as they are escaped.
fn percent(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~' | b'=' | b'/') {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

async fn request_with(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<String>,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Result<Json, ClientError> {
    request_status(addr, method, path, body, token, headers)
        .await
        .map(|(_, json)| json)
}

/// [`request_with`], with the success status the node answered (200 or 202, ...).
async fn request_status(
    addr: &str,
    method: &str,
    path: &str,
    body: Option<String>,
    token: Option<&str>,
    headers: &[(&str, &str)],
) -> Result<(u16, Json), ClientError> {
    let fut = async {
        let mut stream = TcpStream::connect(addr)
            .await
            .map_err(|source| ClientError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        let body = body.unwrap_or_default();
        let mut auth = token
            .map(|t| format!("Authorization: Bearer {}\r\n", t.trim()))
            .unwrap_or_default();
        for (name, value) in headers {
            // A value that could end the line would forge another header: never sent.
            if value.bytes().any(|b| b == b'\r' || b == b'\n') {
                continue;
            }
            auth.push_str(&format!("{name}: {value}\r\n"));
        }
        let head = format!(
            "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: application/json\r\nContent-Type: application/json\r\n{auth}Content-Length: {}\r\n\r\n",
            body.len()
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(ClientError::Io)?;
        stream
            .write_all(body.as_bytes())
            .await
            .map_err(ClientError::Io)?;
        let mut buf = Vec::new();
        let limit = u64::try_from(MAX_RESPONSE_BYTES).unwrap_or(u64::MAX);
        (&mut stream)
            .take(limit)
            .read_to_end(&mut buf)
            .await
            .map_err(ClientError::Io)?;
        parse_response_status(&buf)
    };
    tokio::time::timeout(Duration::from_secs(30), fut)
        .await
        .map_err(|_| {
            ClientError::Io(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!("no answer from {addr} within 30 s"),
            ))
        })?
}

fn parse_response(buf: &[u8]) -> Result<Json, ClientError> {
    parse_response_status(buf).map(|(_, json)| json)
}

fn parse_response_status(buf: &[u8]) -> Result<(u16, Json), ClientError> {
    let split = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| ClientError::Protocol("no header terminator".into()))?;
    let head = String::from_utf8_lossy(buf.get(..split).unwrap_or_default());
    let body = buf.get(split.saturating_add(4)..).unwrap_or_default();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| ClientError::Protocol("no status line".into()))?;
    let chunked = head.lines().any(|l| {
        l.to_ascii_lowercase()
            .starts_with("transfer-encoding: chunked")
    });
    let body = if chunked {
        dechunk(body)?
    } else {
        body.to_vec()
    };
    let json: Json = serde_json::from_slice(&body).map_err(|source| ClientError::Json {
        what: "body is not JSON",
        source,
    })?;
    if (200..300).contains(&status) {
        Ok((status, json))
    } else {
        // Anything but the API's error body (another server answering) reads as a bare
        // `error`.
        let body = serde_json::from_value::<ErrorBody>(json).unwrap_or_else(|_| ErrorBody {
            code: "error".into(),
            message: String::new(),
        });
        Err(ClientError::Api {
            status,
            code: body.code,
            message: body.message,
        })
    }
}

fn dechunk(mut body: &[u8]) -> Result<Vec<u8>, ClientError> {
    let mut out = Vec::new();
    loop {
        let line_end = body
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or_else(|| ClientError::Protocol("bad chunk".into()))?;
        let size_str = String::from_utf8_lossy(body.get(..line_end).unwrap_or_default());
        let size = usize::from_str_radix(size_str.trim(), 16)
            .map_err(|_| ClientError::Protocol("bad chunk size".into()))?;
        let start = line_end.saturating_add(2);
        if size == 0 {
            return Ok(out);
        }
        let end = start.saturating_add(size);
        out.extend_from_slice(
            body.get(start..end)
                .ok_or_else(|| ClientError::Protocol("truncated chunk".into()))?,
        );
        body = body.get(end.saturating_add(2)..).unwrap_or_default();
    }
}

/// Largest event frame or response head an [`EventStream`] buffers.
pub const MAX_EVENT_BYTES: usize = 1024 * 1024;

/// One Server-Sent Event: its `id:`, `event:` and `data:` lines.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SseFrame {
    /// The event id (`H:I`), empty if none.
    pub id: String,
    /// The event name (the feed kind).
    pub event: String,
    /// The data lines, joined by newlines.
    pub data: String,
}

/// An open `GET /v1/events` stream: frames as they arrive, keep-alive comments skipped.
#[derive(Debug)]
pub struct EventStream {
    stream: TcpStream,
    buf: Vec<u8>,
    chunked: bool,
    /// Body bytes decoded (de-chunked) and not yet parsed into frames.
    body: Vec<u8>,
    ended: bool,
}

impl EventStream {
    /// Opens `path_and_query` on `addr`, resuming after `last_event_id` if given. An error
    /// answer (400, 404, 503) is [`ClientError::Api`].
    pub async fn open(
        addr: &str,
        path_and_query: &str,
        last_event_id: Option<&str>,
    ) -> Result<Self, ClientError> {
        let stream = TcpStream::connect(addr)
            .await
            .map_err(|source| ClientError::Connect {
                addr: addr.to_string(),
                source,
            })?;
        Self::open_on(stream, addr, path_and_query, last_event_id).await
    }

    /// As [`EventStream::open`], on a connection already made (as with a chosen receive
    /// buffer).
    pub async fn open_on(
        mut stream: TcpStream,
        addr: &str,
        path_and_query: &str,
        last_event_id: Option<&str>,
    ) -> Result<Self, ClientError> {
        let resume = last_event_id
            .map(|id| format!("Last-Event-ID: {id}\r\n"))
            .unwrap_or_default();
        let head = format!(
            "GET {path_and_query} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAccept: text/event-stream\r\n{resume}\r\n"
        );
        stream
            .write_all(head.as_bytes())
            .await
            .map_err(ClientError::Io)?;
        let mut es = EventStream {
            stream,
            buf: Vec::new(),
            chunked: false,
            body: Vec::new(),
            ended: false,
        };
        let split = loop {
            if let Some(p) = es.buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break p;
            }
            if es.buf.len() > MAX_EVENT_BYTES || !es.read_more().await? {
                return Err(ClientError::Protocol("no response head".into()));
            }
        };
        let head = String::from_utf8_lossy(es.buf.get(..split).unwrap_or_default()).into_owned();
        es.buf.drain(..split.saturating_add(4));
        es.chunked = head.lines().any(|l| {
            l.to_ascii_lowercase()
                .starts_with("transfer-encoding: chunked")
        });
        let status: u16 = head
            .split_whitespace()
            .nth(1)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| ClientError::Protocol("no status line".into()))?;
        if !(200..300).contains(&status) {
            // An error answer is a complete JSON body: read it to its end.
            let mut rest = std::mem::take(&mut es.buf);
            let _ = tokio::time::timeout(
                Duration::from_secs(30),
                (&mut es.stream)
                    .take(MAX_RESPONSE_BYTES as u64)
                    .read_to_end(&mut rest),
            )
            .await;
            let mut whole = head.into_bytes();
            whole.extend_from_slice(b"\r\n\r\n");
            whole.extend_from_slice(&rest);
            return match parse_response(&whole) {
                Err(e) => Err(e),
                Ok(_) => Err(ClientError::Protocol(format!("HTTP {status}"))),
            };
        }
        Ok(es)
    }

    async fn read_more(&mut self) -> Result<bool, ClientError> {
        let mut chunk = [0u8; 16 * 1024];
        let n = self
            .stream
            .read(&mut chunk)
            .await
            .map_err(ClientError::Io)?;
        self.buf
            .extend_from_slice(chunk.get(..n).unwrap_or_default());
        Ok(n > 0)
    }

    /// Moves whole chunks (or, unchunked, everything) from the wire buffer to the body.
    fn decode(&mut self) -> Result<(), ClientError> {
        if !self.chunked {
            self.body.append(&mut self.buf);
            return Ok(());
        }
        loop {
            let Some(line_end) = self.buf.windows(2).position(|w| w == b"\r\n") else {
                return Ok(());
            };
            let size_str = String::from_utf8_lossy(self.buf.get(..line_end).unwrap_or_default())
                .trim()
                .to_string();
            let size = usize::from_str_radix(&size_str, 16)
                .map_err(|_| ClientError::Protocol("bad chunk size".into()))?;
            if size == 0 {
                self.ended = true;
                self.buf.clear();
                return Ok(());
            }
            let start = line_end.saturating_add(2);
            let end = start.saturating_add(size);
            if self.buf.len() < end.saturating_add(2) {
                return Ok(());
            }
            self.body
                .extend_from_slice(self.buf.get(start..end).unwrap_or_default());
            self.buf.drain(..end.saturating_add(2));
        }
    }

    /// The next event; `None` when the server ended the stream.
    pub async fn next(&mut self) -> Result<Option<SseFrame>, ClientError> {
        loop {
            self.decode()?;
            if let Some(p) = self.body.windows(2).position(|w| w == b"\n\n") {
                let raw: Vec<u8> = self.body.drain(..p.saturating_add(2)).collect();
                let text = String::from_utf8_lossy(&raw);
                let mut f = SseFrame::default();
                let mut data = Vec::new();
                for line in text.lines() {
                    let (field, value) = line.split_once(':').unwrap_or((line, ""));
                    let value = value.strip_prefix(' ').unwrap_or(value);
                    match field {
                        "id" => f.id = value.to_string(),
                        "event" => f.event = value.to_string(),
                        "data" => data.push(value),
                        _ => {} // comments (keep-alive) and unknown fields
                    }
                }
                if data.is_empty() && f.event.is_empty() {
                    continue;
                }
                f.data = data.join("\n");
                return Ok(Some(f));
            }
            if self.ended {
                return Ok(None);
            }
            if self.body.len() > MAX_EVENT_BYTES {
                return Err(ClientError::Protocol("event frame too large".into()));
            }
            if !self.read_more().await? {
                return Ok(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_chunked_and_error_answers() {
        let ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n{\"a\":1}";
        assert_eq!(parse_response(ok).unwrap(), serde_json::json!({"a": 1}));
        let chunked = b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{\"a\"\r\n3\r\n:2}\r\n0\r\n\r\n";
        assert_eq!(
            parse_response(chunked).unwrap(),
            serde_json::json!({"a": 2})
        );
        let err = b"HTTP/1.1 404 Not Found\r\n\r\n{\"code\":\"not_found\",\"message\":\"no such\"}";
        match parse_response(err) {
            Err(ClientError::Api { status, code, .. }) => {
                assert_eq!(status, 404);
                assert_eq!(code, "not_found");
            }
            other => panic!("{other:?}"),
        }
        assert!(parse_response(b"garbage").is_err());
    }
}
