//! The API's HTTP server: our own accept loop over hyper, because a node whose API is
//! published must survive clients that are slow on purpose.
//!
//! - **Connections**: at most [`Limits::max_connections`] at once; one more is answered
//!   `503` with the JSON error body and closed at once, without a task.
//! - **Headers**: a client has [`Limits::header_timeout`] to send a request's head (hyper's
//!   header-read timer, which also closes an idle keep-alive connection). The request line
//!   may be [`MAX_URI_BYTES`] long (`414` past it) and the head [`MAX_HEAD_BYTES`] (`431`).
//! - **Bodies**: a declared `Content-Length` over the route's limit ([`body_limit`]) is
//!   answered `413` before a byte of the body is read; a body is read within
//!   [`Limits::body_timeout`] (`408` past it) and never past the route's limit (`413`).
//! - **Credentials first**: a route that spends the node's funds ([`needs_token`]) checks
//!   the operator token before it reads the body, so an anonymous client cannot make the
//!   node buffer a large one.
//! - **One error shape**: every error, whoever produced it (a handler, an extractor, the
//!   router's 404 and 405), leaves as `{"code": "...", "message": "..."}` with one status
//!   per class ([`code_for`]); HTML pages keep their HTML error pages.
//!
//! Heads larger than hyper's own read buffer ([`MAX_HEAD_BYTES`] times 4) or request lines
//! over 64 KiB are refused by hyper itself, with a bare status line.

use std::{future::Future, io, sync::Arc, time::Duration};

use axum::{
    Router,
    body::Body,
    extract::{Request, State},
    http::{HeaderValue, Method, StatusCode, header},
    middleware::{self, Next},
    response::{IntoResponse, Response},
};
use hyper_util::{
    rt::{TokioIo, TokioTimer},
    server::graceful::GracefulShutdown,
    service::TowerToHyperService,
};
use tokio::{net::TcpListener, sync::Semaphore};
use tracing::Instrument;

use super::{MAX_BODY_BYTES, MAX_SESSION_BODY_BYTES, views::ErrorBody};
use crate::web::auth::Auth;

/// Longest request target (path and query) served.
pub const MAX_URI_BYTES: usize = 8 * 1024;
/// Largest request head (request line and headers) served.
pub const MAX_HEAD_BYTES: usize = 16 * 1024;
/// Most header fields in one request.
pub const MAX_HEADERS: usize = 64;
/// Largest body of the audit form's posts.
pub const MAX_FORM_BODY_BYTES: usize = 16 * 1024;
/// How long open connections get to finish when the node stops.
const DRAIN: Duration = Duration::from_secs(5);

/// The server's limits (`[api]` in `config.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Time to send a request head; also how long an idle connection stays open.
    pub header_timeout: Duration,
    /// Time to send a request body.
    pub body_timeout: Duration,
    /// Connections served at once.
    pub max_connections: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 256,
        }
    }
}

/// The largest body `method path` accepts.
pub fn body_limit(method: &Method, path: &str) -> usize {
    if method == Method::POST && (path == "/v1/sessions" || path == "/v1/sessions/plan") {
        MAX_SESSION_BODY_BYTES
    } else if path == "/audit" || path.starts_with("/audit/") {
        MAX_FORM_BODY_BYTES
    } else {
        MAX_BODY_BYTES
    }
}

/// Whether `method path` acts for the node (spends its funds) and so needs the operator
/// token.
pub fn needs_token(method: &Method, path: &str) -> bool {
    // A session's opening lets its holder test guesses of the trace against the ids.
    let opening = path
        .strip_prefix("/v1/sessions/")
        .is_some_and(|rest| rest.ends_with("/opening"));
    // The list of this node's sessions holds its labels, which are the provider's own.
    (method == Method::GET && (opening || path == "/v1/sessions"))
        || method == Method::POST
            && (path == "/v1/sessions"
            || path == "/v1/sessions/plan"
            // An appeal escrows the node's bond.
            || path
                .strip_prefix("/v1/sessions/")
                .is_some_and(|rest| rest.ends_with("/appeals")))
}

/// The stable error code of a status: one per class, the same on every route.
pub fn code_for(status: StatusCode) -> &'static str {
    match status.as_u16() {
        400 => "bad_request",
        401 => "unauthorized",
        403 => "forbidden",
        404 => "not_found",
        405 => "method_not_allowed",
        408 => "timeout",
        413 => "too_large",
        414 => "uri_too_long",
        415 => "unsupported_media_type",
        422 => "rejected",
        429 => "too_many_requests",
        431 => "headers_too_large",
        501 => "not_implemented",
        503 => "unavailable",
        s if s >= 500 => "internal",
        _ => "error",
    }
}

/// The JSON error response every route answers with.
pub fn error(status: StatusCode, code: &str, message: impl Into<String>) -> Response {
    let mut r = (
        status,
        axum::Json(ErrorBody {
            code: code.to_string(),
            message: message.into(),
        }),
    )
        .into_response();
    if status == StatusCode::UNAUTHORIZED {
        r.headers_mut().insert(
            header::WWW_AUTHENTICATE,
            HeaderValue::from_static("Bearer realm=\"trust-node\""),
        );
    }
    r
}

/// What the request guard needs.
#[derive(Debug, Clone)]
pub(crate) struct Guard {
    pub(crate) limits: Limits,
    pub(crate) auth: Arc<Auth>,
}

/// Applies the guard and the one error shape to `app`.
pub(crate) fn harden(app: Router, guard: Guard) -> Router {
    app.layer(middleware::from_fn_with_state(guard, guard_request))
        .layer(middleware::from_fn(json_errors))
}

/// Refuses what is too long, unauthorised or too slow before a handler sees it, and
/// hands the handler a body already read.
async fn guard_request(State(g): State<Guard>, req: Request, next: Next) -> Response {
    let uri_len = req.uri().path_and_query().map_or(0, |p| p.as_str().len());
    if uri_len > MAX_URI_BYTES {
        return error(
            StatusCode::URI_TOO_LONG,
            "uri_too_long",
            format!("request target of {uri_len} bytes; the limit is {MAX_URI_BYTES}"),
        );
    }
    let head_len: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + v.len() + 4)
        .sum::<usize>()
        + uri_len;
    if head_len > MAX_HEAD_BYTES || req.headers().len() > MAX_HEADERS {
        return error(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            "headers_too_large",
            format!(
                "request head of {head_len} bytes in {} fields; the limits are {MAX_HEAD_BYTES} bytes and {MAX_HEADERS} fields",
                req.headers().len()
            ),
        );
    }
    let (method, path) = (req.method().clone(), req.uri().path().to_string());
    if needs_token(&method, &path) && !g.auth.authorized(req.headers()) {
        tracing::warn!(target: "trust::api", %method, %path, "refused: no valid operator token");
        return error(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            format!(
                "{method} {path} acts for this node and needs its operator token: send `Authorization: Bearer <token>` (`trust-node keys show --api-token` prints it; `trust-node submit` reads it from the home, --api-token or TRUST_API_TOKEN)"
            ),
        );
    }
    let limit = body_limit(&method, &path);
    let declared = req
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    if let Some(n) = declared
        && n > limit as u64
    {
        return too_large(n, limit);
    }
    let (parts, body) = req.into_parts();
    let bytes = match tokio::time::timeout(g.limits.body_timeout, axum::body::to_bytes(body, limit))
        .await
    {
        Err(_) => {
            tracing::warn!(target: "trust::api", %method, %path, "request body not received in time");
            return error(
                StatusCode::REQUEST_TIMEOUT,
                "timeout",
                format!(
                    "the request body did not arrive within {} ms",
                    g.limits.body_timeout.as_millis()
                ),
            );
        }
        Ok(Err(e)) => {
            if std::error::Error::source(&e)
                .is_some_and(|s| s.is::<http_body_util::LengthLimitError>())
            {
                return too_large(0, limit);
            }
            return error(
                StatusCode::BAD_REQUEST,
                "bad_body",
                format!("the request body could not be read: {e}"),
            );
        }
        Ok(Ok(b)) => b,
    };
    next.run(Request::from_parts(parts, Body::from(bytes)))
        .await
}

fn too_large(declared: u64, limit: usize) -> Response {
    let what = if declared > 0 {
        format!("a body of {declared} bytes")
    } else {
        "the body".to_string()
    };
    error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "too_large",
        format!("{what} is over this route's limit of {limit} bytes"),
    )
}

/// Gives every error response that is neither JSON nor an HTML page the JSON error body,
/// keeping its status and headers (a 405's `Allow`) and its text as the message.
async fn json_errors(req: Request, next: Next) -> Response {
    let r = next.run(req).await;
    let status = r.status();
    if !(status.is_client_error() || status.is_server_error()) {
        return r;
    }
    let kind = r
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_ascii_lowercase();
    if kind.starts_with("application/json") || kind.starts_with("text/html") {
        return r;
    }
    let (mut parts, body) = r.into_parts();
    let text = axum::body::to_bytes(body, 4096)
        .await
        .ok()
        .and_then(|b| String::from_utf8(b.to_vec()).ok())
        .map(|t| t.trim().to_string())
        .filter(|t| !t.is_empty())
        .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_string());
    let fresh = error(status, code_for(status), text);
    parts.headers.remove(header::CONTENT_LENGTH);
    parts.headers.remove(header::CONTENT_TYPE);
    let (fresh_parts, fresh_body) = fresh.into_parts();
    for (k, v) in fresh_parts.headers {
        if let Some(k) = k {
            parts.headers.insert(k, v);
        }
    }
    Response::from_parts(parts, fresh_body)
}

/// The answer to a connection over the cap: a complete `503` with the JSON error body.
fn busy_response() -> Vec<u8> {
    // Serializing two strings cannot fail.
    let body = serde_json::to_string(&ErrorBody {
        code: "unavailable".into(),
        message: "too many connections; retry shortly".into(),
    })
    .unwrap_or_default();
    format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nretry-after: 1\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Serves `app` on `listener` within `limits` until `stop` resolves, then lets open
/// connections finish for a few seconds.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    limits: Limits,
    stop: impl Future<Output = ()>,
) -> io::Result<()> {
    let slots = Arc::new(Semaphore::new(limits.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(MAX_HEAD_BYTES * 4)
        .keep_alive(true);
    let busy = busy_response();
    tokio::pin!(stop);
    loop {
        let (stream, peer) = tokio::select! {
            biased;
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: wait a moment rather than spin.
                    tracing::warn!(target: "trust::api", error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            tracing::warn!(target: "trust::api", %peer, max = limits.max_connections, "connection refused: too many open");
            // A fresh socket's send buffer takes a few hundred bytes without blocking.
            let _ = stream.try_write(&busy);
            continue;
        };
        let _ = stream.set_nodelay(true);
        let service = TowerToHyperService::new(app.clone());
        let conn = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(
            async move {
                if let Err(e) = conn.await {
                    tracing::debug!(target: "trust::api", error = %e, "connection closed");
                }
                drop(slot);
            }
            .instrument(tracing::debug_span!("api-conn", %peer)),
        );
    }
    drop(listener);
    if tokio::time::timeout(DRAIN, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!(target: "trust::api", "open API connections cut after {DRAIN:?}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    //! The server on a real loopback socket, against clients that are slow on purpose.

    use std::time::Instant;

    use axum::routing::{get, post};
    use tokio::{
        io::{AsyncReadExt, AsyncWriteExt},
        net::TcpStream,
    };

    use super::*;
    use crate::keys::OperatorToken;

    /// Starts the hardened server with `limits` on an echo route; its address and the
    /// sender that stops it.
    async fn start(limits: Limits) -> (std::net::SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let app = Router::new()
            .route("/ok", get(|| async { "ok" }))
            .route("/echo", post(|body: axum::body::Bytes| async move { body }));
        let guard = Guard {
            limits,
            auth: Arc::new(Auth::new(&OperatorToken::for_tests("t"))),
        };
        let app = harden(app, guard);
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, app, limits, async move {
            let _ = stop_rx.await;
        }));
        (addr, stop_tx)
    }

    /// Reads until the server closes the connection (or `deadline` passes: then the test
    /// fails, as the server never closed it); what it sent and when it closed.
    async fn until_closed(mut s: TcpStream, deadline: Duration) -> (String, Duration) {
        let start = Instant::now();
        let mut out = Vec::new();
        let read = tokio::time::timeout(deadline, s.read_to_end(&mut out)).await;
        assert!(
            read.is_ok(),
            "the server kept a slow connection open past {deadline:?}"
        );
        (String::from_utf8_lossy(&out).into_owned(), start.elapsed())
    }

    async fn get_ok(addr: std::net::SocketAddr) -> String {
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    }

    /// 20 clients that send half a head and 20 that send half a body are cut off at the
    /// configured timeouts (the body ones with a JSON 408), while the API keeps answering
    /// everyone else.
    #[tokio::test]
    async fn slow_clients_are_closed_at_the_timeouts_while_others_are_served() {
        let limits = Limits {
            header_timeout: Duration::from_millis(800),
            body_timeout: Duration::from_millis(800),
            max_connections: 64,
        };
        let (addr, _stop) = start(limits).await;
        let mut heads = Vec::new();
        let mut bodies = Vec::new();
        for _ in 0..20 {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nX-Slow: ")
                .await
                .unwrap();
            heads.push(s);
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nhalf")
                .await
                .unwrap();
            bodies.push(s);
        }
        // With all 40 slow ones open, another client is served.
        assert!(get_ok(addr).await.contains("200 OK"));
        // Closed by the server: at most a few timeouts after (the outer deadline is only
        // there so that a server that never closes fails the test instead of hanging it).
        let deadline = Duration::from_secs(30);
        let mut slowest = Duration::ZERO;
        for s in heads {
            let (answer, took) = until_closed(s, deadline).await;
            assert!(!answer.contains("200 OK"), "{answer}");
            slowest = slowest.max(took);
        }
        for s in bodies {
            let (answer, took) = until_closed(s, deadline).await;
            assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
            assert!(answer.contains("\"code\":\"timeout\""), "{answer}");
            slowest = slowest.max(took);
        }
        println!("40 slow connections closed; the last after {slowest:?} (timeouts 800 ms)");
        assert!(get_ok(addr).await.contains("200 OK"));
    }

    /// A declared body over the route's limit gets 413 before the body is sent.
    #[tokio::test]
    async fn an_oversized_content_length_is_refused_before_the_body() {
        let (addr, _stop) = start(Limits::default()).await;
        let mut s = TcpStream::connect(addr).await.unwrap();
        s.write_all(b"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 52428800\r\n\r\n")
            .await
            .unwrap();
        // No body follows; the answer comes anyway (a server that waited for the body
        // would hold the connection until the body timeout of 30 s instead).
        let mut buf = vec![0u8; 1024];
        let n = tokio::time::timeout(Duration::from_secs(20), s.read(&mut buf))
            .await
            .expect("an answer before the body")
            .unwrap();
        let answer = String::from_utf8_lossy(&buf[..n]);
        assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
        assert!(answer.contains("\"code\":\"too_large\""), "{answer}");
    }

    /// Over the connection cap, a client gets a JSON 503 at once, and the connections
    /// already open are unaffected.
    #[tokio::test]
    async fn connections_over_the_cap_get_503_and_the_open_ones_are_served() {
        let limits = Limits {
            max_connections: 4,
            ..Limits::default()
        };
        let (addr, _stop) = start(limits).await;
        let mut open = Vec::new();
        for _ in 0..4 {
            open.push(TcpStream::connect(addr).await.unwrap());
        }
        // Accepted in order: the four above hold the slots when this one is accepted.
        let extra = TcpStream::connect(addr).await.unwrap();
        let (answer, _) = until_closed(extra, Duration::from_secs(20)).await;
        assert!(answer.starts_with("HTTP/1.1 503"), "{answer}");
        assert!(answer.contains("\"code\":\"unavailable\""), "{answer}");
        let mut s = open.pop().unwrap();
        s.write_all(b"GET /ok HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        assert!(out.contains("200 OK"), "{out}");
    }
}
