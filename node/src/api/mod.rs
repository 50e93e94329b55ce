//! The HTTP JSON API (axum): what providers, users and operators ask a node.
//!
//! | route | answer |
//! |---|---|
//! | `GET /v1/status` | node id, height, tip hash, state root, peers, validator?, mempool size, the validators of the next height with their voting power |
//! | `POST /v1/tx` | a signed transaction, canonical bytes (`application/octet-stream`) or `{"tx": "<hex>"}`; admitted to the mempool |
//! | `GET /v1/tx/{id}` | the height and index of the block that includes a transaction, or `pending` |
//! | `GET /v1/accounts/{id}` | balance, stake, nonce and the next nonce to use (pooled ones counted) |
//! | `GET /v1/blocks/{height}` | the block, its hash and certificate size |
//! | `POST /v1/sessions` | `{"trace": "...", "hdag"?: "..."}`: this node, as provider, decomposes, encrypts and stores the segments and opens a session; answers the session id, its segments and those left out |
//! | `GET /v1/sessions/{id}` | a session's outcome with per-segment verdicts and the height and hash of the block that decided it, or its live phase with seats assigned, committed and revealed |
//! | `GET /v1/auditors/{id}` | stake, reputation, earnings, slashes, abstention rate, honeypot record |
//! | `GET /metrics` | Prometheus text |
//! | `GET /v1/openapi.json` | an OpenAPI 3 document of these routes |
//! | `GET /`, `/blocks`, `/blocks/{height-or-hash}`, `/accounts/{id}`, `/sessions/{id}`, `/auditors/{id}`, `/search?q=` | HTML pages (see [`crate::web`]) |
//!
//! The audit form (`/audit`, see `crate::web::audit`) is served on the same listener.
//!
//! Errors are JSON `{"code": "...", "message": "..."}` with a matching status. Request
//! bodies are capped at [`MAX_BODY_BYTES`]. The API binds to loopback by default
//! (`api_listen` in `config.toml`).
//!
//! The API writes none of the node's shared state: it reads the chain, peer and LLM views
//! (see [`crate::view`]) and sends transactions to the mempool task.

use std::{
    str::FromStr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Path, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
    routing::{get, post},
};
use serde::Serialize;
use serde_json::json;
use tokio::sync::watch;
use trust_contracts::Contract;
use trust_protocol::{
    AccountId, Hash, block::MAX_TX_BYTES, encoding, hdag::MAX_HDAG_JSON_BYTES,
    trace::MAX_TRACE_BYTES, tx::SignedTx,
};

pub use crate::metrics::MetricsSource;
use crate::{
    audit::{llm::LlmStatus, provider::Provider},
    ledger::Ledger,
    mempool::{MempoolError, Pool},
    query::{self, SessionLookup},
    view::{ChainWatch, PeerWatch, ValidatorPower, latest},
};

/// Largest request body accepted.
pub const MAX_BODY_BYTES: usize = 2 * MAX_TX_BYTES + 1024;
/// Largest `POST /v1/sessions` body: the largest trace and provider HDAG the protocol
/// accepts, with room for JSON string escaping.
pub const MAX_SESSION_BODY_BYTES: usize = 2 * (MAX_TRACE_BYTES + MAX_HDAG_JSON_BYTES);

/// Counters exported at `/metrics`.
#[derive(Debug, Default)]
pub struct ApiMetrics {
    /// Transactions admitted through the API.
    pub txs_accepted: AtomicU64,
    /// Transactions refused by the API.
    pub txs_rejected: AtomicU64,
    /// Request bodies that did not parse.
    pub bad_requests: AtomicU64,
}

/// Shared handles for the handlers.
#[derive(Debug, Clone)]
pub struct Api {
    /// This node's account.
    pub node_id: AccountId,
    /// Whether it is a genesis validator.
    pub validator: bool,
    /// The chain as the consensus driver last published it.
    pub chain: ChainWatch,
    /// Peers as the `peers` task last published them.
    pub peers: PeerWatch,
    /// The LLM endpoint's health as the `llm-probe` task last published it (`None`: no
    /// LLM judge here).
    pub llm: watch::Receiver<Option<LlmStatus>>,
    /// The mempool.
    pub pool: Pool,
    /// The ledger.
    pub ledger: Ledger,
    /// Counters.
    pub metrics: Arc<ApiMetrics>,
    /// Where admitted transactions go to be gossiped to peers (none in a node without a
    /// network, as in unit tests).
    pub gossip: Option<tokio::sync::mpsc::Sender<SignedTx>>,
    /// Other subsystems' counters.
    pub sources: Vec<Arc<dyn MetricsSource>>,
    /// This node's provider role (`POST /v1/sessions`), if it runs one.
    pub provider: Option<Arc<Provider>>,
    /// The contract at genesis, from which the web pages replay auditor histories (`None`:
    /// the auditor pages show no plots).
    pub genesis: Option<Arc<Contract>>,
}

/// An API error: status, stable code, message.
#[derive(Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self {
            status,
            code,
            message: message.into(),
        }
    }

    fn bad(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, code, message)
    }

    fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }

    fn internal(message: impl std::fmt::Display) -> Self {
        Self::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "internal",
            message.to_string(),
        )
    }

    fn pool(e: MempoolError) -> Self {
        match e {
            MempoolError::Stopped => {
                Self::new(StatusCode::SERVICE_UNAVAILABLE, "stopping", e.to_string())
            }
            e => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(json!({"code": self.code, "message": self.message})),
        )
            .into_response()
    }
}

type ApiResult<T> = Result<T, ApiError>;

/// The router.
pub fn router(api: Api) -> Router {
    Router::new()
        .route("/v1/status", get(status))
        .route("/v1/tx", post(submit_tx))
        .route("/v1/tx/{id}", get(tx_location))
        .route("/v1/blocks/{height}", get(block))
        .route(
            "/v1/sessions",
            post(open_session).layer(DefaultBodyLimit::max(MAX_SESSION_BODY_BYTES)),
        )
        .route("/v1/sessions/{id}", get(session))
        .route("/v1/auditors/{id}", get(auditor))
        .route("/v1/accounts/{id}", get(account))
        .route("/metrics", get(metrics))
        .route("/v1/openapi.json", get(openapi))
        .fallback(|| async { ApiError::not_found("no such route (see /v1/openapi.json)") })
        .layer(DefaultBodyLimit::max(MAX_BODY_BYTES))
        .with_state(api.clone())
        .merge(crate::web::router(pages(&api)))
}

/// The web pages' handles, taken from the API's (the pages import nothing from here).
fn pages(api: &Api) -> crate::web::Pages {
    crate::web::Pages::new(
        api.node_id,
        api.chain.clone(),
        api.peers.clone(),
        api.pool.clone(),
        api.ledger.clone(),
        api.provider.clone(),
        api.genesis.clone(),
    )
}

#[derive(Serialize)]
struct StatusView {
    node_id: AccountId,
    height: u64,
    tip_hash: Hash,
    state_root: Hash,
    peers: usize,
    peer_heights: Vec<PeerHeight>,
    validator: bool,
    mempool: usize,
    validators: Vec<ValidatorPower>,
    #[serde(skip_serializing_if = "Option::is_none")]
    llm: Option<LlmStatus>,
}

#[derive(Serialize)]
struct PeerHeight {
    peer: String,
    height: u64,
}

async fn status(State(api): State<Api>) -> ApiResult<Json<StatusView>> {
    let mempool = api.pool.count().await.map_err(ApiError::pool)?;
    let chain = latest(&api.chain);
    let peers = api.peers.borrow().clone();
    Ok(Json(StatusView {
        node_id: api.node_id,
        height: chain.tip.height,
        tip_hash: chain.tip.hash,
        state_root: chain.state_root,
        peers: peers.peers,
        peer_heights: peers
            .heights
            .into_iter()
            .map(|(peer, height)| PeerHeight { peer, height })
            .collect(),
        validator: api.validator,
        mempool,
        validators: chain.validators.to_vec(),
        llm: api.llm.borrow().clone(),
    }))
}

fn parse_tx(headers: &HeaderMap, body: &[u8]) -> ApiResult<SignedTx> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bytes = if is_json {
        #[derive(serde::Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Body {
            tx: String,
        }
        let b: Body = serde_json::from_slice(body).map_err(|e| {
            ApiError::bad("bad_json", format!("expected {{\"tx\": \"<hex>\"}}: {e}"))
        })?;
        hex::decode(b.tx.trim()).map_err(|e| ApiError::bad("bad_hex", e.to_string()))?
    } else {
        body.to_vec()
    };
    if bytes.len() > MAX_TX_BYTES {
        return Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!(
                "transaction of {} bytes exceeds {MAX_TX_BYTES}",
                bytes.len()
            ),
        ));
    }
    encoding::decode(&bytes).map_err(|e| ApiError::bad("bad_tx", e.to_string()))
}

async fn submit_tx(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Bytes, axum::extract::rejection::BytesRejection>,
) -> Response {
    let body = body.map_err(|e| {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "too_large",
            format!("request body refused ({e}); the limit is {MAX_BODY_BYTES} bytes"),
        )
    });
    let result = match body.and_then(|body| parse_tx(&headers, &body)) {
        Ok(tx) => api
            .pool
            .admit(tx.clone())
            .await
            .map(|_| (tx.id(), tx))
            .map_err(ApiError::pool),
        Err(e) => Err(e),
    };
    match result {
        Ok((id, tx)) => {
            if let Some(gossip) = &api.gossip
                && gossip.try_send(tx).is_err()
            {
                // The pool holds it; the next block this node proposes includes it.
                tracing::warn!(tx = %id, "gossip queue full; transaction kept for local proposal only");
            }
            api.metrics.txs_accepted.fetch_add(1, Ordering::Relaxed);
            tracing::info!(tx = %id, "transaction admitted via API");
            (StatusCode::ACCEPTED, Json(json!({"id": id}))).into_response()
        }
        Err(e) => {
            if e.status == StatusCode::UNPROCESSABLE_ENTITY {
                api.metrics.txs_rejected.fetch_add(1, Ordering::Relaxed);
            } else if e.status != StatusCode::SERVICE_UNAVAILABLE {
                api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
            }
            tracing::warn!(code = e.code, reason = %e.message, "transaction refused via API");
            e.into_response()
        }
    }
}

async fn block(
    State(api): State<Api>,
    Path(height): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let height: u64 = height
        .parse()
        .map_err(|_| ApiError::bad("bad_height", format!("not a height: {height:?}")))?;
    let stored = api
        .ledger
        .block(height)
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::not_found(format!("no block at height {height}")))?;
    let txs: Vec<serde_json::Value> = query::decode_txs(&stored)
        .into_iter()
        .map(|t| match t {
            Ok(t) => json!({"id": t.id(), "signer": t.signer, "nonce": t.body.nonce, "call": t.body.call}),
            Err(e) => json!({"error": e.to_string()}),
        })
        .collect();
    Ok(Json(json!({
        "hash": stored.block.hash(),
        "header": stored.block.header,
        "txs": txs,
        "certificate_bytes": stored.certificate.len(),
    })))
}

fn parse_hash(what: &str, s: &str) -> ApiResult<Hash> {
    Hash::from_str(s)
        .map_err(|_| ApiError::bad("bad_id", format!("{what} must be 64 hex characters")))
}

async fn session(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let sid = parse_hash("session id", &id)?;
    let found =
        query::session(&latest(&api.chain), &api.ledger, &sid).map_err(ApiError::internal)?;
    match found {
        Some(SessionLookup::Decided(d)) => Ok(Json(json!({
            "session": sid,
            "status": "decided",
            "outcome": d.outcome,
            "block_height": d.height,
            "block_hash": d.block_hash,
        }))),
        Some(SessionLookup::Live(x)) => Ok(Json(json!({
            "session": sid,
            "status": "live",
            "phase": x.phase,
            "segments": x.segments.len(),
            "seats": query::seat_counts(&x),
        }))),
        Some(SessionLookup::Failed(f)) => Ok(Json(
            json!({"session": sid, "status": "failed", "failure": f}),
        )),
        None => Err(ApiError::not_found(format!("no session {sid}"))),
    }
}

#[derive(serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenSessionBody {
    /// The trace: JSON `{problem, thinking, output}` or the paper's headings.
    trace: String,
    /// The provider's HDAG JSON (optional).
    #[serde(default)]
    hdag: Option<String>,
}

async fn open_session(
    State(api): State<Api>,
    body: Result<Json<OpenSessionBody>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(StatusCode, Json<serde_json::Value>)> {
    let Json(body) = body.map_err(|e| {
        api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
        ApiError::bad(
            "bad_json",
            format!("expected {{\"trace\": \"...\", \"hdag\"?: \"...\"}}: {e}"),
        )
    })?;
    let provider = api.provider.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "no_provider",
            "this node does not open sessions",
        )
    })?;
    let contract = latest(&api.chain).contract.clone();
    let submitted = provider
        .submit(&body.trace, body.hdag.as_deref(), &contract)
        .await
        .map_err(|e| {
            api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", e)
        })?;
    Ok((
        StatusCode::ACCEPTED,
        Json(serde_json::to_value(&submitted).map_err(ApiError::internal)?),
    ))
}

async fn tx_location(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let tid = parse_hash("transaction id", &id)?;
    match api.ledger.tx_location(&tid).map_err(ApiError::internal)? {
        Some((height, index)) => Ok(Json(
            json!({"id": tid, "status": "included", "height": height, "index": index}),
        )),
        None => {
            let pooled = api.pool.contains(tid).await.map_err(ApiError::pool)?;
            if pooled {
                Ok(Json(json!({"id": tid, "status": "pending"})))
            } else {
                Err(ApiError::not_found(format!("no transaction {tid}")))
            }
        }
    }
}

async fn account(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let who = AccountId::from_str(&id)
        .map_err(|_| ApiError::bad("bad_id", "account id must be 64 hex characters"))?;
    let pooled = api.pool.account(who).await.map_err(ApiError::pool)?;
    let acct = pooled
        .view
        .contract
        .state()
        .accounts
        .get(&who)
        .cloned()
        .ok_or_else(|| ApiError::not_found(format!("no account {who}")))?;
    Ok(Json(json!({
        "id": who,
        "balance": acct.balance,
        "stake": acct.stake,
        "nonce": acct.nonce,
        "next_nonce": acct.nonce.saturating_add(pooled.pending),
    })))
}

async fn auditor(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<serde_json::Value>> {
    let who = AccountId::from_str(&id)
        .map_err(|_| ApiError::bad("bad_id", "auditor id must be 64 hex characters"))?;
    let chain = latest(&api.chain);
    let st = chain.contract.state();
    let a = st
        .auditors
        .get(&who)
        .ok_or_else(|| ApiError::not_found(format!("no auditor {who}")))?;
    let acct = st.accounts.get(&who).cloned().unwrap_or_default();
    Ok(Json(json!({
        "id": who,
        "tier": a.tier,
        "active": a.active,
        "flagged": a.flagged,
        "stake": acct.stake,
        "balance": acct.balance,
        "reputation": f64::from(a.reputation.0) / 1e6,
        "earned": a.earned,
        "slashed": a.slashed,
        "votes": a.votes,
        "approvals": a.approvals,
        "abstentions": a.abstentions,
        // Share of revealed votes that were abstentions (public: a provider can see how
        // often an auditor declines to judge).
        "abstention_rate": query::abstention_rate(a),
        "agreed": a.agreed,
        "disagreed": a.disagreed,
        "honeypots": a.honeypots,
    })))
}

async fn metrics(State(api): State<Api>) -> ApiResult<Response> {
    let mempool = api.pool.count().await.map_err(ApiError::pool)?;
    let height = latest(&api.chain).tip.height;
    let peers = api.peers.borrow().peers;
    let m = &api.metrics;
    let mut text = format!(
        "# HELP trust_height Height of the last decided block.\n# TYPE trust_height gauge\ntrust_height {height}\n\
# HELP trust_peers Connected peers.\n# TYPE trust_peers gauge\ntrust_peers {peers}\n\
# HELP trust_mempool_txs Transactions in the mempool.\n# TYPE trust_mempool_txs gauge\ntrust_mempool_txs {mempool}\n\
# HELP trust_api_txs_accepted_total Transactions admitted via the API.\n# TYPE trust_api_txs_accepted_total counter\ntrust_api_txs_accepted_total {}\n\
# HELP trust_api_txs_rejected_total Transactions refused by the mempool via the API.\n# TYPE trust_api_txs_rejected_total counter\ntrust_api_txs_rejected_total {}\n\
# HELP trust_api_bad_requests_total Request bodies that did not parse.\n# TYPE trust_api_bad_requests_total counter\ntrust_api_bad_requests_total {}\n",
        m.txs_accepted.load(Ordering::Relaxed),
        m.txs_rejected.load(Ordering::Relaxed),
        m.bad_requests.load(Ordering::Relaxed),
    );
    for source in &api.sources {
        source.render(&mut text);
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

async fn openapi() -> Json<serde_json::Value> {
    let err = json!({"$ref": "#/components/schemas/Error"});
    let get_op = |summary: &str, param: Option<(&str, &str)>| {
        let mut op = json!({
            "summary": summary,
            "responses": {
                "200": {"description": "OK", "content": {"application/json": {}}},
                "400": {"description": "bad input", "content": {"application/json": {"schema": err}}},
                "404": {"description": "not found", "content": {"application/json": {"schema": err}}}
            }
        });
        if let Some((name, desc)) = param {
            op["parameters"] = json!([{"name": name, "in": "path", "required": true,
                "description": desc, "schema": {"type": "string"}}]);
        }
        json!({"get": op})
    };
    Json(json!({
        "openapi": "3.0.3",
        "info": {"title": "TRUST node API", "version": env!("CARGO_PKG_VERSION")},
        "paths": {
            "/v1/status": get_op("Node id, height, tip hash, state root, peers, validator flag, mempool size, next validators with voting power", None),
            "/v1/tx": {"post": {
                "summary": "Submit a signed transaction (canonical bytes, or JSON {\"tx\": hex})",
                "requestBody": {"required": true, "content": {
                    "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
                    "application/json": {"schema": {"type": "object", "required": ["tx"],
                        "properties": {"tx": {"type": "string"}}}}}},
                "responses": {
                    "202": {"description": "admitted to the mempool"},
                    "400": {"description": "malformed", "content": {"application/json": {"schema": err}}},
                    "413": {"description": "too large", "content": {"application/json": {"schema": err}}},
                    "422": {"description": "refused by the mempool", "content": {"application/json": {"schema": err}}}
                }}},
            "/v1/blocks/{height}": get_op("A decided block", Some(("height", "block height, from 1"))),
            "/v1/sessions/{id}": get_op("A session's outcome or phase", Some(("id", "session id, hex"))),
            "/v1/tx/{id}": get_op("Where a transaction is: the block height and index that include it, or pending", Some(("id", "signed transaction id, hex"))),
            "/v1/accounts/{id}": get_op("An account's balance, stake and next nonce", Some(("id", "account id, hex"))),
            "/v1/auditors/{id}": get_op("An auditor's stake, reputation and record", Some(("id", "account id, hex"))),
            "/metrics": {"get": {"summary": "Prometheus metrics", "responses": {"200": {"description": "text"}}}}
        },
        "components": {"schemas": {"Error": {"type": "object", "required": ["code", "message"],
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}}}}}
    }))
}

#[cfg(test)]
mod tests;
