//! The HTTP JSON API (axum): what providers, users and operators ask a node.
//!
//! | route | answer |
//! |---|---|
//! | `GET /v1/status` | node id, height, tip hash, state root, peers, validator?, mempool size, the validators of the next height with their voting power |
//! | `POST /v1/tx` | a signed transaction, canonical bytes (`application/octet-stream`) or `{"tx": "<hex>"}`; admitted to the mempool |
//! | `GET /v1/tx/{id}` | the height and index of the block that includes a transaction, or `pending` |
//! | `GET /v1/accounts/{id}` | balance, stake, nonce and the next nonce to use (pooled ones counted) |
//! | `GET /v1/blocks/{height}` | the block, its hash and certificate size |
//! | `POST /v1/sessions` | `{"trace": "...", "hdag"?: "...", "session"?: {...}}`, with the operator token (`Authorization: Bearer …`): this node, as provider, decomposes, encrypts and stores the segments and opens a session on the assurance asked for in `session` (seats, racing seats, τ, β, tiers, weights, domain, fee, windows, exposure budget; over the node's `[session]` defaults), within its spending cap; answers the session id, its segments and those left out. Settings out of the network's limits or seats a tier cannot staff: 422 naming the limit, nothing charged |
//! | `POST /v1/sessions/plan` | the same body and token: what that session would be (each segment's tier and seats, or why it is left out; the fee; the most of the trace one auditor could see), nothing stored or sent |
//! | `GET /v1/sessions/{id}` | a session's outcome with per-segment verdicts and the height and hash of the block that decided it, or its live phase with seats assigned, committed and revealed |
//! | `POST /v1/sessions/{id}/appeals` | `{"segments": [3, 4]}`, with the operator token: this node appeals those decided segments from its account, escrowing the appeal bond per segment; answers the transaction id, the bond and the appeal's round. Unknown session: 404; not appealable (still live, window closed, an appeal open, a segment undecided or a honeypot, too few fresh auditors, balance short): 422 with the contract's reason |
//! | `GET /v1/sessions/{id}/proof` | a decided session's outcome with its Merkle proof, the certified tip header, the validators' proven stakes and the walk of validator-power changes from genesis, or from the block `?trust=HEIGHT:HASH` names ([`crate::proof`], `api::proofs`): checkable against a genesis file (and that block) alone |
//! | `GET /v1/sessions/{id}/opening` | with the operator token, on the session's provider node: the mapping of each segment to its HDAG node with the salt of its id (and the provider's own HDAG), which ties the outcome to the trace (`proof export --opening`, `proof verify --trace`) |
//! | `GET /v1/auditors/{id}/history` | the auditor's sessions, newest first: seats, votes, counted judgements, rewards, slashes and their reasons, appeals, status and verdict (at most 10,000 blocks and 100 sessions a call; `?before=H` pages down) |
//! | `GET /v1/auditors/{id}` | bonded stake, unbondings and the height each frees at, whether a withdrawal would apply now, exiting or not, seats held in live sessions (phase, deadline), reputation, earnings, slashes, abstention rate, honeypot record |
//! | `GET /v1/events` | the event feed of finalized blocks as Server-Sent Events, filtered by `account`, `session`, `kind`; resumes after `Last-Event-ID` or `?after=H:I` (see [`events`]) |
//! | `GET /v1/snapshot` | a chunk of the newest contract snapshot below the tip (`?height=&offset=`), with its block and the next one as stored: what `run --state-sync` fetches and checks (see [`snapshot`], [`crate::statesync`]) |
//! | `GET /metrics` | Prometheus text |
//! | `GET /v1/openapi.json` | the OpenAPI 3 document of these routes, generated from the handlers' annotations and types (the router is built from the same list) |
//! | `GET /`, `/blocks`, `/blocks/{height-or-hash}`, `/accounts/{id}`, `/sessions/{id}`, `/auditors/{id}`, `/search?q=` | HTML pages (see [`crate::web`]) |
//!
//! The audit form (`/audit`, see `crate::web::audit`) is served on the same listener.
//!
//! Every request and reply body is a public type in [`views`]; [`client`] asks these
//! routes and answers with those types, which is what the CLI prints from.
//!
//! Errors are JSON `{"code": "...", "message": "..."}` with one status per class on every
//! route (see [`server::code_for`]): 400 malformed, 401 no operator token, 403 over the
//! spending cap, 404 unknown, 405, 408 too slow, 413 too large, 414, 415, 422 refused,
//! 431, 503 busy or stopping. Request bodies are capped per route ([`server::body_limit`]);
//! timeouts and the connection cap are in [`server`]. The API binds to loopback by default
//! (`[api] listen` in `config.toml`); reads are open, and whatever spends the node's funds
//! needs the operator token.
//!
//! The API writes none of the node's shared state: it reads the chain, peer and LLM views
//! (see [`crate::view`]) and sends transactions to the mempool task.

use std::{
    fmt::Write as _,
    str::FromStr,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{DefaultBodyLimit, Path, Query, State},
    http::{HeaderMap, StatusCode, header},
    response::{IntoResponse, Response},
};
use tokio::sync::watch;
use trust_contracts::Contract;
use trust_protocol::{
    AccountId, Hash, block::MAX_TX_BYTES, encoding, hdag::MAX_HDAG_JSON_BYTES,
    trace::MAX_TRACE_BYTES, tx::SignedTx,
};
use utoipa::OpenApi;
use utoipa_axum::{router::OpenApiRouter, routes};

pub use crate::metrics::MetricsSource;
use crate::{
    audit::{
        llm::LlmStatus,
        outbox::{Outbox, OutboxError, Sent},
        provider::{Provider, SubmitError},
    },
    ledger::Ledger,
    mempool::{MempoolError, Pool},
    proof::OutcomeProof,
    query::{self, AuditorHistory, SessionLookup},
    view::{ChainWatch, PeerWatch, latest},
    web::auth::Auth,
};

pub mod addr;
pub mod client;
pub mod proofs;
pub mod server;
pub mod views;

pub use events::EventHub;
use views::{
    AccountView, AppealAccepted, AppealBody, AuditorView, BlockTx, BlockView, CastVoteDoc,
    ErrorBody, OpenSessionBody, OpeningView, PeerHeight, Plan, SeatPhase, SeatView, SessionStatus,
    SessionView, StatusView, StorageView, SubmittedView, TermsView, TxAccepted, TxJson, TxLocation,
    TxStatus, UnbondingView, WithdrawView,
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
    /// The genesis validators: an outcome proof proves each one's stake.
    pub validators: Arc<[AccountId]>,
    /// The operator token, which routes that act for the node require.
    pub auth: Arc<Auth>,
    /// Timeouts and the connection cap.
    pub limits: server::Limits,
    /// The event streams' shared state (`None`: no `/v1/events` here, it answers 503).
    pub events: Option<EventHub>,
    /// This node's own transactions (`POST /v1/sessions/{id}/appeals` sends an `Appeal`
    /// from its account); `None`: that route answers 501.
    pub outbox: Option<Outbox>,
    /// The states outcome proofs replayed, kept for the next request.
    pub replays: Arc<proofs::Replays>,
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
            MempoolError::Stopped => Self::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                e.to_string(),
            ),
            e => Self::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", e.to_string()),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        server::error(self.status, self.code, self.message)
    }
}

type ApiResult<T> = Result<T, ApiError>;

#[derive(OpenApi)]
#[openapi(
    info(
        title = "TRUST node API",
        description = "What providers, users and operators ask a TRUST node. Reads are open; `POST /v1/sessions` needs the node's operator token."
    ),
    components(schemas(ErrorBody, CastVoteDoc)),
    modifiers(&OperatorTokenScheme)
)]
struct ApiDoc;

/// Declares the operator token as the bearer scheme `operator_token`.
struct OperatorTokenScheme;

impl utoipa::Modify for OperatorTokenScheme {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        use utoipa::openapi::security::{Http, HttpAuthScheme, SecurityScheme};
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "operator_token",
            SecurityScheme::Http(Http::new(HttpAuthScheme::Bearer)),
        );
    }
}

/// The API's routes with their OpenAPI document, built from one list.
fn documented() -> (Router<Api>, utoipa::openapi::OpenApi) {
    OpenApiRouter::with_openapi(ApiDoc::openapi())
        .routes(routes!(status))
        .routes(routes!(submit_tx))
        .routes(routes!(tx_location))
        .routes(routes!(block))
        .routes(routes!(open_session, list_sessions))
        .routes(routes!(plan_session))
        .routes(routes!(session))
        .routes(routes!(session_proof))
        .routes(routes!(session_opening))
        .routes(routes!(appeal))
        .routes(routes!(auditor))
        .routes(routes!(auditor_history))
        .routes(routes!(account))
        .routes(routes!(events::events))
        .routes(routes!(snapshot::snapshot))
        .routes(routes!(metrics))
        .routes(routes!(openapi))
        .split_for_parts()
}

/// The OpenAPI document of the API (also served at `/v1/openapi.json`).
pub fn openapi_document() -> utoipa::openapi::OpenApi {
    documented().1
}

/// The router: the JSON API and the web pages, hardened ([`server`]).
pub fn router(api: Api) -> Router {
    app(api, Router::new())
}

/// The router with `extra` routes (the audit form) served beside the API and the pages,
/// all behind the same guard and error shape.
pub fn app(api: Api, extra: Router) -> Router {
    let guard = server::Guard {
        limits: api.limits,
        auth: api.auth.clone(),
    };
    let (routes, _) = documented();
    let app = routes
        .layer(DefaultBodyLimit::max(MAX_SESSION_BODY_BYTES))
        .fallback(|| async { ApiError::not_found("no such route (see /v1/openapi.json)") })
        .with_state(api.clone())
        .merge(crate::web::router(pages(&api)))
        .merge(extra);
    server::harden(app, guard)
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
    .with_auth(api.auth.clone())
}

/// The answers every route may give besides its own (documented once, used by all).
macro_rules! documented_errors {
    () => {
        "bad input (400), unknown (404), too slow (408), too large (413), request line or head too long (414, 431), stopping (503)"
    };
}

pub mod events;
pub mod snapshot;

#[utoipa::path(
    get, path = "/v1/status",
    description = "Node id, height, tip hash, state root, peers, validator flag, mempool size, next validators with voting power.",
    responses(
        (status = 200, body = StatusView),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn status(State(api): State<Api>) -> ApiResult<Json<StatusView>> {
    let mempool = api.pool.count().await.map_err(ApiError::pool)?;
    let chain = latest(&api.chain);
    let peers = api.peers.borrow().clone();
    Ok(Json(StatusView {
        node_id: api.node_id,
        chain_id: chain.contract.chain_id(),
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
        validators: chain.validators.iter().map(Into::into).collect(),
        llm: api.llm.borrow().clone().map(Into::into),
        oldest_block: api.ledger.oldest_block().map_err(ApiError::internal)?,
        storage: StorageView::of(&chain.contract, api.ledger.disk_bytes()),
    }))
}

fn parse_tx(headers: &HeaderMap, body: &[u8]) -> ApiResult<SignedTx> {
    let is_json = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("application/json"));
    let bytes = if is_json {
        let b: TxJson = serde_json::from_slice(body).map_err(|e| {
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

#[utoipa::path(
    post, path = "/v1/tx",
    description = "Submit a signed transaction: its canonical bytes, or JSON {\"tx\": hex}. Open to anyone: transactions are signed by their senders.",
    request_body(content(
        (Vec<u8> = "application/octet-stream"),
        (TxJson = "application/json"),
    )),
    responses(
        (status = 202, description = "admitted to the mempool", body = TxAccepted),
        (status = 422, description = "refused by the mempool (signature, nonce, balance)", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn submit_tx(State(api): State<Api>, headers: HeaderMap, body: Bytes) -> Response {
    let result = match parse_tx(&headers, &body) {
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
            (StatusCode::ACCEPTED, Json(TxAccepted { id })).into_response()
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

#[utoipa::path(
    get, path = "/v1/blocks/{height}",
    description = "A decided block.",
    params(("height" = u64, Path, description = "block height, from 1", minimum = 1)),
    responses(
        (status = 200, body = BlockView),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn block(State(api): State<Api>, Path(height): Path<String>) -> ApiResult<Json<BlockView>> {
    let height: u64 = height
        .parse()
        .map_err(|_| ApiError::bad("bad_height", format!("not a height: {height:?}")))?;
    if let Err(e @ crate::ledger::LedgerError::Pruned { .. }) = api.ledger.check_kept(height) {
        return Err(ApiError::not_found(e.to_string()));
    }
    let stored = api
        .ledger
        .block(height)
        .map_err(ApiError::internal)?
        .ok_or_else(|| ApiError::not_found(format!("no block at height {height}")))?;
    let txs = query::decode_txs(&stored)
        .into_iter()
        .map(|t| match t {
            Ok(t) => BlockTx::Decoded {
                id: t.id(),
                signer: t.signer,
                nonce: t.body.nonce,
                call: Box::new(t.body.call),
            },
            Err(e) => BlockTx::Undecodable {
                error: e.to_string(),
            },
        })
        .collect();
    Ok(Json(BlockView {
        hash: stored.block.hash(),
        time: crate::chain::format_time(stored.block.header.time_ms),
        header: stored.block.header.clone(),
        txs,
        certificate_bytes: stored.certificate.len(),
    }))
}

fn parse_hash(what: &str, s: &str) -> ApiResult<Hash> {
    Hash::from_str(s)
        .map_err(|_| ApiError::bad("bad_id", format!("{what} must be 64 hex characters")))
}

#[utoipa::path(
    get, path = "/v1/sessions/{id}",
    description = "A session's outcome, or its live phase with seats assigned, committed and revealed; on the node that opened it, `pending` from its 202 until a block holds it. A decided session's trace verdict is at the top (`verdict`). With the operator token, on that node: `steps`, the model's own steps in trace order, each under its name with its text, span and verdict, and apart from them `honeypots`, what the node planted (401 for a token that is not this node's).",
    params(("id" = String, Path, description = "session id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$")),
    responses(
        (status = 200, body = SessionView),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn session(
    State(api): State<Api>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> ApiResult<Json<SessionView>> {
    let sid = parse_hash("session id", &id)?;
    // The operator of the node that opened the session sees its own steps; a token that
    // does not hold is refused rather than ignored, so a client knows it was not read.
    let operator = match headers.get(header::AUTHORIZATION) {
        Some(_) if !api.auth.authorized(&headers) => {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "the operator token given is not this node's",
            ));
        }
        Some(_) => true,
        None => api.auth.authorized(&headers),
    };
    let record = operator
        .then(|| api.provider.as_ref()?.page_record(&sid))
        .flatten();
    let view = latest(&api.chain);
    let found = query::session(&view, &api.ledger, &sid).map_err(ApiError::internal)?;
    let params = &view.contract.state().params;
    // The model's own steps in trace order, what the node planted apart.
    let steps = |tiers: Vec<trust_protocol::tx::Tier>,
                 supports: &[Option<u16>],
                 planted: &dyn Fn(usize) -> bool,
                 o: Option<&trust_contracts::Outcome>| {
        record
            .as_ref()
            .map(|r| query::steps::split(r.steps(&tiers, o), supports, planted))
    };
    match found {
        Some(SessionLookup::Decided(d)) => {
            let shown = {
                let o = &d.outcome;
                let (supports, planted) = query::steps::of_outcome(o);
                steps(
                    o.segments.iter().map(|g| g.tier).collect(),
                    &supports,
                    &planted,
                    Some(o),
                )
            };
            Ok(Json(
                SessionView {
                    verdict: Some(crate::feed::trace_verdict(d.outcome.trace)),
                    terms: Some(TermsView::of(
                        &d.outcome.quorum,
                        &d.outcome.terms,
                        &d.outcome.domain,
                        params,
                    )),
                    explanation: query::explain(&d.outcome, &|i| format!("#{i}")),
                    failure_bound: crate::report::words::bound_probability(
                        d.outcome.bound.hoeffding_neg_ln_milli,
                    ),
                    finality: Some(d.outcome.finality().into()),
                    // A node that joined by state sync holds no block below its snapshot:
                    // the outcome still names the height that decided it.
                    block_height: d.height.or(Some(d.outcome.decided_at)),
                    outcome: Some(d.outcome),
                    block_hash: d.block_hash,
                    decided_time_ms: d.time_ms,
                    decided_time: d.time_ms.map(crate::chain::format_time),
                    ..SessionView::new(sid, SessionStatus::Decided)
                }
                .with_steps(shown),
            ))
        }
        Some(SessionLookup::Live(x)) => Ok(Json(
            SessionView {
                terms: Some(TermsView::of(
                    &x.manifest.quorum,
                    &x.manifest.terms,
                    &x.manifest.domain,
                    params,
                )),
                phase: Some(x.phase.into()),
                segments: Some(x.segments.len()),
                seats: Some(query::seat_counts(&x).into()),
                ..SessionView::new(sid, SessionStatus::Live)
            }
            .with_steps(steps(
                x.segments.iter().map(|g| g.tier).collect(),
                &x.segments
                    .iter()
                    .map(|g| g.entry.supports)
                    .collect::<Vec<_>>(),
                &|_| false,
                None,
            )),
        )),
        Some(SessionLookup::Failed(f)) => Ok(Json(SessionView {
            failure: Some(f),
            ..SessionView::new(sid, SessionStatus::Failed)
        })),
        // Opened here and not in a block yet: pending, for whoever asks this node.
        None if api
            .provider
            .as_ref()
            .is_some_and(|p| p.page_record(&sid).is_some()) =>
        {
            Ok(Json(
                SessionView::new(sid, SessionStatus::Pending).with_steps(steps(
                    Vec::new(),
                    &[],
                    &|_| false,
                    None,
                )),
            ))
        }
        None => Err(ApiError::not_found(format!("no session {sid}"))),
    }
}

#[utoipa::path(
    post, path = "/v1/sessions/{id}/appeals",
    description = "This node appeals decided segments of a session from its own account, escrowing the network's appeal bond per segment: fresh seats (2k + 1 at least, and more than twice the judgements that reached the verdict; none who sat on the segment before) judge each segment again and their verdict replaces the old one. Needs the operator token. The call is tried on the node's state first, so a refusal names the contract's reason.",
    params(("id" = String, Path, description = "session id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$")),
    request_body = AppealBody,
    security(("operator_token" = [])),
    responses(
        (status = 202, description = "the Appeal was signed and sent", body = AppealAccepted),
        (status = 401, description = "no valid operator token", body = ErrorBody),
        (status = 404, description = "no such session", body = ErrorBody),
        (status = 415, description = "not application/json", body = ErrorBody),
        (status = 422, description = "not appealable: the contract's reason (not decided, window closed, an appeal open, a segment undecided, a honeypot, out of range or out of rounds, too few fresh auditors, balance short)", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, no account here to appeal from, or stopping", body = ErrorBody),
    )
)]
async fn appeal(
    State(api): State<Api>,
    Path(id): Path<String>,
    body: Result<Json<AppealBody>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(StatusCode, Json<AppealAccepted>)> {
    use trust_contracts::{BlockCtx, Event, TxError};
    use trust_protocol::tx::{Call, Tx};

    let sid = parse_hash("session id", &id)?;
    let Json(body) = body.map_err(|e| {
        api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
        json_rejection(e, "{\"segments\": [3, 4]}")
    })?;
    let outbox = api.outbox.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "this node sends no transactions of its own",
        )
    })?;
    let view = latest(&api.chain);
    let st = view.contract.state();
    let known = st.outcomes.contains_key(&sid)
        || st.sessions.contains_key(&sid)
        || st.failed.contains_key(&sid);
    if !known {
        // An outcome that left the state after its retention is final: say so.
        if let Some(o) = api.ledger.final_outcome(&sid).map_err(ApiError::internal)? {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "rejected",
                format!(
                    "session {sid} is final (since block {}): its appeal window closed",
                    o.appeals.final_at.unwrap_or(o.decided_at)
                ),
            ));
        }
        return Err(ApiError::not_found(format!("no session {sid}")));
    }
    let call = Call::Appeal {
        session: sid,
        segments: body.segments.clone(),
    };
    // Tried on a copy of the state first: a refusal is answered with the contract's reason
    // rather than found out when a block is built.
    let me = outbox.key().public();
    let mut trial = (*view.contract).clone();
    let ctx = BlockCtx {
        height: st.height.saturating_add(1),
        block_hash: Hash::ZERO,
    };
    let tx = Tx {
        nonce: trial.nonce(&me),
        call: call.clone(),
    };
    let refused = |e: String| ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", e);
    let events = trial.apply_verified(&ctx, me, &tx).map_err(|e| match e {
        TxError::UnknownSession(_) => ApiError::not_found(format!("no session {sid}")),
        TxError::Format(e) => ApiError::bad("bad_appeal", e.to_string()),
        e => refused(e.to_string()),
    })?;
    let (bond, round) = events
        .iter()
        .find_map(|e| match e {
            Event::AppealOpened { bond, round, .. } => Some((*bond, *round)),
            _ => None,
        })
        .ok_or_else(|| ApiError::internal("the contract opened no appeal"))?;
    let until = st.outcomes.get(&sid).map_or(0, |o| o.appeals.until);
    let sent = outbox.send(call).await.map_err(|e| match e {
        OutboxError::Expired(why) => refused(why.to_string()),
        OutboxError::Mempool(e) => ApiError::pool(e),
        e => ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            e.to_string(),
        ),
    })?;
    let tx = match sent {
        Sent::Pooled(id) => Some(id),
        Sent::Queued => None,
    };
    tracing::info!(session = %sid, segments = ?body.segments, bond, round, tx = ?tx, "appeal sent");
    Ok((
        StatusCode::ACCEPTED,
        Json(AppealAccepted {
            session: sid,
            tx,
            appellant: me,
            segments: body.segments,
            bond,
            round,
            until,
        }),
    ))
}

#[utoipa::path(
    get, path = "/v1/sessions/{id}/proof",
    description = "A decided session's outcome with what lets a client check it against its own genesis file (and a block it trusts): the outcome's Merkle proof under the tip block's state root, that header and its commit certificate, the parent header with every genesis validator's stake proven under the parent's state root, the anchor the validator powers are walked from (genesis, or the trusted block's header with the stakes proven under its state root) and the walk: every block after the anchor and before the tip whose execution changed the validator powers, with its header, its commit certificate and the stakes proven under its state root (`trust-node proof export`, `trust-node query ID --verify`).",
    params(
        ("id" = String, Path, description = "session id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$"),
        ("trust" = Option<String>, Query, description = "A block the client trusts, HEIGHT:HASH (a height of at least 1 below the tip, a colon, the block's hash): the proof walks the validator powers from it instead of from genesis. Malformed: 400. Not this node's block at that height, or not below the tip: 422.", pattern = "^[1-9][0-9]{0,18}:[0-9a-fA-F]{64}$"),
    ),
    responses(
        (status = 200, body = OutcomeProof),
        (status = 422, description = "the trusted block is not this chain's block at that height, or not below the tip", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, stopping, or no proof here (the state before the tip is not held right after a restart; the node has no record of the validator-power changes since the anchor)", body = ErrorBody),
    )
)]
async fn session_proof(
    State(api): State<Api>,
    Path(id): Path<String>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<OutcomeProof>> {
    let sid = parse_hash("session id", &id)?;
    let Query(pairs) = query.map_err(|e| ApiError::bad("bad_query", e.body_text()))?;
    let trust = proofs::trust_query(&pairs)?;
    let view = latest(&api.chain);
    // Decided: in the state, or final and let go of (then the ledger keeps it).
    if view.contract.outcome(&sid).is_none()
        && api
            .ledger
            .final_outcome(&sid)
            .map_err(ApiError::internal)?
            .is_none()
    {
        return Err(ApiError::not_found(format!("no decided session {sid}")));
    }
    // The walk may replay the ledger: off the runtime's threads.
    tokio::task::spawn_blocking(move || proofs::outcome_proof(&api, &view, &sid, trust))
        .await
        .map_err(ApiError::internal)?
        .map(Json)
}

#[utoipa::path(
    get, path = "/v1/sessions/{id}/opening",
    description = "The opening of a session this node opened as provider: per segment, in manifest order, its HDAG node and the salt of its blinded id, and the provider's own HDAG if it gave one. With it and the trace, a client cuts the trace again and checks that each step reproduces the segment id the proven outcome carries (`trust-node proof export --opening`, then `proof verify --trace FILE`). It lets its holder test guesses of the trace's text against the ids, so it needs the operator token.",
    params(
        ("id" = String, Path, description = "session id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$"),
    ),
    security(("operator_token" = [])),
    responses(
        (status = 200, body = OpeningView),
        (status = 401, description = "no valid operator token", body = ErrorBody),
        (status = 404, description = "this node holds no opening of the session: it did not open it, or its record was pruned", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, no provider role, or stopping", body = ErrorBody),
    )
)]
async fn session_opening(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<OpeningView>> {
    let sid = parse_hash("session id", &id)?;
    let opening = provider_role(&api)?
        .page_record(&sid)
        .and_then(|r| r.opening)
        .ok_or_else(|| {
            ApiError::not_found(format!(
                "this node holds no opening of session {sid}: it did not open it, or its record was pruned"
            ))
        })?;
    Ok(Json(OpeningView {
        session: sid,
        opening,
    }))
}

#[utoipa::path(
    post, path = "/v1/sessions",
    description = "This node, as provider, decomposes the trace (or takes the HDAG), encrypts and stores the segments, and opens a session paid from its account. Needs the operator token; refused with 403 over the node's spending cap ([provider] max_fee_per_session, max_fee_per_day). With an `Idempotency-Key` header, a repeat of the same request answers the session the first one opened (200, `Idempotent-Replayed: true`), opening and charging nothing; the same key with another request is refused (422).",
    request_body = OpenSessionBody,
    params(
        ("Idempotency-Key" = Option<String>, Header, description = "1 to 128 printable ASCII characters: a retry with the same key and request opens nothing new."),
    ),
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "the session this key opened before (nothing charged)", body = SubmittedView),
        (status = 202, description = "session opened", body = SubmittedView),
        (status = 401, description = "no valid operator token", body = ErrorBody),
        (status = 403, description = "over the spending cap", body = ErrorBody),
        (status = 415, description = "not application/json", body = ErrorBody),
        (status = 422, description = "the trace or HDAG cannot be audited here", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, no provider role, or stopping", body = ErrorBody),
    )
)]
async fn open_session(
    State(api): State<Api>,
    headers: HeaderMap,
    body: Result<Json<OpenSessionBody>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(StatusCode, HeaderMap, Json<SubmittedView>)> {
    let (provider, body, contract) = provider_request(&api, body)?;
    let key = match headers.get("idempotency-key") {
        Some(v) => Some(v.to_str().map_err(|_| {
            ApiError::bad(
                "bad_idempotency_key",
                "Idempotency-Key is 1 to 128 printable ASCII characters",
            )
        })?),
        None => None,
    };
    let options = body.session.unwrap_or_default();
    let hdag = body.hdag.as_ref().map(views::TextOrJson::text);
    let (submitted, again) = provider
        .open_listed(
            &body.trace.text(),
            hdag.as_deref(),
            &options,
            &body.labels,
            key,
            &contract,
        )
        .await
        .map_err(|e| submit_error(&api, e))?;
    let mut out = HeaderMap::new();
    if again {
        out.insert(
            "idempotent-replayed",
            axum::http::HeaderValue::from_static("true"),
        );
    }
    let status = if again {
        StatusCode::OK
    } else {
        StatusCode::ACCEPTED
    };
    Ok((status, out, Json(submitted)))
}

#[utoipa::path(
    get, path = "/v1/sessions",
    description = "The sessions this node opened, newest first, with their labels, fee, status and verdict. Needs the operator token (labels are the provider's own, kept on this node and never on chain). `provider=me` is required (a node lists only its own sessions); `label=NAME` or `label=NAME=VALUE` (repeated: all must hold) filters; `before=MS` (Unix milliseconds, the `opened_ms` of the last one seen) pages; `limit` is 1 to 1000, default 100.",
    params(
        ("provider" = String, Query, pattern = "^me$", description = "`me`: this node's own sessions (a node lists no other provider's)."),
        ("label" = Option<String>, Query, description = "NAME or NAME=VALUE; repeat for several."),
        ("before" = Option<u64>, Query, description = "Only sessions opened before this time (Unix milliseconds)."),
        ("limit" = Option<usize>, Query, minimum = 1, maximum = 1000, description = "At most this many, 1 to 1000 (default 100)."),
    ),
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "the sessions", body = Vec<views::ListedView>),
        (status = 401, description = "no valid operator token", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, no provider role, or stopping", body = ErrorBody),
    )
)]
async fn list_sessions(
    State(api): State<Api>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<Vec<views::ListedView>>> {
    let Query(pairs) = query.map_err(|e| ApiError::bad("bad_query", e.body_text()))?;
    let mut filter = crate::audit::provider::listing::LabelFilter::default();
    let (mut mine, mut before, mut limit) = (false, None, 100usize);
    for (key, value) in &pairs {
        let number = || {
            value
                .trim()
                .parse::<u64>()
                .map_err(|_| ApiError::bad("bad_query", format!("{key} must be a whole number")))
        };
        match key.as_str() {
            "provider" if value == "me" => mine = true,
            "provider" => {
                return Err(ApiError::bad(
                    "bad_query",
                    "a node lists only the sessions it opened: provider=me",
                ));
            }
            "label" => filter.add(value),
            "before" => before = Some(number()?),
            "limit" => match number()? {
                n @ 1..=1000 => limit = usize::try_from(n).unwrap_or(1000),
                _ => return Err(ApiError::bad("bad_query", "limit must be 1 to 1000")),
            },
            other => {
                return Err(ApiError::bad(
                    "bad_query",
                    format!(
                        "unknown parameter `{}`; this route takes provider, label, before and limit",
                        other.chars().take(64).collect::<String>()
                    ),
                ));
            }
        }
    }
    if !mine {
        return Err(ApiError::bad(
            "bad_query",
            "provider=me is required: a node lists only the sessions it opened",
        ));
    }
    let provider = provider_role(&api)?;
    let listed = tokio::task::spawn_blocking(move || provider.listed(&filter, before, limit))
        .await
        .map_err(ApiError::internal)?
        .map_err(ApiError::internal)?;
    let view = latest(&api.chain);
    let mut out = Vec::with_capacity(listed.len());
    for l in listed {
        let sid = l.submitted.session;
        let (status, verdict) =
            match query::session(&view, &api.ledger, &sid).map_err(ApiError::internal)? {
                Some(SessionLookup::Decided(d)) => (
                    SessionStatus::Decided,
                    Some(crate::feed::trace_verdict(d.outcome.trace)),
                ),
                Some(SessionLookup::Live(_)) => (SessionStatus::Live, None),
                Some(SessionLookup::Failed(_)) => (SessionStatus::Failed, None),
                None => (SessionStatus::Pending, None),
            };
        out.push(views::ListedView {
            session: sid,
            opened_ms: l.opened_ms,
            opened: crate::chain::format_time(l.opened_ms),
            labels: l.labels,
            fee: l.submitted.fee,
            status: status.as_str().to_string(),
            verdict,
        });
    }
    Ok(Json(out))
}

/// A provider request's body, the provider role that serves it and the contract as of
/// now: 400/415 for a body that does not parse, 501 on a node without the role.
fn provider_request(
    api: &Api,
    body: Result<Json<OpenSessionBody>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<(
    Arc<Provider>,
    OpenSessionBody,
    Arc<trust_contracts::Contract>,
)> {
    let Json(body) = body.map_err(|e| {
        api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
        json_rejection(
            e,
            "{\"trace\": \"...\", \"hdag\"?: \"...\", \"session\"?: {...}}",
        )
    })?;
    Ok((
        provider_role(api)?,
        body,
        latest(&api.chain).contract.clone(),
    ))
}

/// This node's provider role: 501 on a node without one.
fn provider_role(api: &Api) -> ApiResult<Arc<Provider>> {
    api.provider.clone().ok_or_else(|| {
        ApiError::new(
            StatusCode::NOT_IMPLEMENTED,
            "not_implemented",
            "this node does not open sessions",
        )
    })
}

fn submit_error(api: &Api, e: SubmitError) -> ApiError {
    api.metrics.bad_requests.fetch_add(1, Ordering::Relaxed);
    match e {
        SubmitError::OverCap(m) => ApiError::new(StatusCode::FORBIDDEN, "forbidden", m),
        e @ SubmitError::ListingStore(_) => ApiError::internal(e),
        e => ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", e.to_string()),
    }
}

#[utoipa::path(
    post, path = "/v1/sessions/plan",
    description = "What `POST /v1/sessions` with the same body would open, without storing or sending anything: each segment's tier and seats (or why it is left out), the fee and honeypot bond, and the most of the trace one auditor could see. Needs the operator token.",
    request_body = OpenSessionBody,
    security(("operator_token" = [])),
    responses(
        (status = 200, description = "the plan", body = Plan),
        (status = 401, description = "no valid operator token", body = ErrorBody),
        (status = 415, description = "not application/json", body = ErrorBody),
        (status = 422, description = "the trace, the HDAG or the settings cannot be audited here", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error, no provider role, or stopping", body = ErrorBody),
    )
)]
async fn plan_session(
    State(api): State<Api>,
    body: Result<Json<OpenSessionBody>, axum::extract::rejection::JsonRejection>,
) -> ApiResult<Json<Plan>> {
    let (provider, body, contract) = provider_request(&api, body)?;
    let options = body.session.unwrap_or_default();
    // Decomposition and sealing are CPU work: off the async workers.
    let plan = tokio::task::spawn_blocking(move || {
        let hdag = body.hdag.as_ref().map(views::TextOrJson::text);
        provider.plan(&body.trace.text(), hdag.as_deref(), &options, &contract)
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| submit_error(&api, e))?;
    Ok(Json(plan))
}

/// A JSON body that did not parse: 415 when it is not JSON at all, else 400.
fn json_rejection(e: axum::extract::rejection::JsonRejection, expected: &str) -> ApiError {
    use axum::extract::rejection::JsonRejection as R;
    match e {
        R::MissingJsonContentType(_) => ApiError::new(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            format!("send Content-Type: application/json with {expected}"),
        ),
        e => ApiError::bad("bad_json", format!("expected {expected}: {e}")),
    }
}

#[utoipa::path(
    get, path = "/v1/tx/{id}",
    description = "Where a transaction is: the block height and index that include it, or pending.",
    params(("id" = String, Path, description = "signed transaction id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$")),
    responses(
        (status = 200, body = TxLocation),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn tx_location(
    State(api): State<Api>,
    Path(id): Path<String>,
) -> ApiResult<Json<TxLocation>> {
    let tid = parse_hash("transaction id", &id)?;
    match api.ledger.tx_location(&tid).map_err(ApiError::internal)? {
        Some((height, index)) => Ok(Json(TxLocation {
            id: tid,
            status: TxStatus::Included,
            height: Some(height),
            index: Some(index),
        })),
        None => {
            let pooled = api.pool.contains(tid).await.map_err(ApiError::pool)?;
            if pooled {
                Ok(Json(TxLocation {
                    id: tid,
                    status: TxStatus::Pending,
                    height: None,
                    index: None,
                }))
            } else {
                Err(ApiError::not_found(format!("no transaction {tid}")))
            }
        }
    }
}

#[utoipa::path(
    get, path = "/v1/accounts/{id}",
    description = "An account's balance, stake and next nonce.",
    params(("id" = String, Path, description = "account id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$")),
    responses(
        (status = 200, body = AccountView),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn account(State(api): State<Api>, Path(id): Path<String>) -> ApiResult<Json<AccountView>> {
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
    Ok(Json(AccountView {
        id: who,
        balance: acct.balance,
        stake: acct.stake,
        nonce: acct.nonce,
        next_nonce: acct.nonce.saturating_add(pooled.pending),
    }))
}

#[utoipa::path(
    get, path = "/v1/auditors/{id}",
    description = "An auditor's stake (bonded and unbonding, with the height each unbonding frees at), whether it is exiting, the seats it holds now, its reputation and record.",
    params(("id" = String, Path, description = "account id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$")),
    responses(
        (status = 200, body = AuditorView),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn auditor(State(api): State<Api>, Path(id): Path<String>) -> ApiResult<Json<AuditorView>> {
    let who = AccountId::from_str(&id)
        .map_err(|_| ApiError::bad("bad_id", "auditor id must be 64 hex characters"))?;
    let chain = latest(&api.chain);
    let st = chain.contract.state();
    let a = st
        .auditors
        .get(&who)
        .ok_or_else(|| ApiError::not_found(format!("no auditor {who}")))?;
    let acct = st.accounts.get(&who).cloned().unwrap_or_default();
    let min_stake = st.params.min_stake(a.tier);
    let withdraw = match trust_contracts::withdrawable(st, &who, st.height.saturating_add(1)) {
        Ok(amount) => WithdrawView {
            amount,
            refused: None,
        },
        Err(e) => WithdrawView {
            amount: 0,
            refused: Some(e.to_string()),
        },
    };
    Ok(Json(AuditorView {
        id: who,
        height: st.height,
        tier: a.tier,
        expertise: a.expertise.clone(),
        active: a.active,
        flagged: a.flagged,
        exiting: a.exiting,
        paused: a.paused,
        pending_pause: a.pending_pause.map(|p| views::PendingPauseView {
            paused: p.paused,
            from: p.at,
        }),
        drawable: st.eligible(a.tier).contains(&who),
        stake: acct.stake,
        min_stake,
        balance: acct.balance,
        unbonding_total: acct
            .unbonding
            .iter()
            .fold(0u64, |s, u| s.saturating_add(u.amount)),
        unbonding: acct
            .unbonding
            .iter()
            .map(|u| UnbondingView {
                amount: u.amount,
                frees_at: u.release_at,
            })
            .collect(),
        withdraw,
        seats: seats_of(st, &who),
        reputation: f64::from(a.reputation.0) / 1e6,
        earned: a.earned,
        slashed: a.slashed,
        votes: a.votes,
        approvals: a.approvals,
        abstentions: a.abstentions,
        abstention_rate: query::abstention_rate(a),
        agreed: a.agreed,
        disagreed: a.disagreed,
        honeypots: a.honeypots.clone(),
        honeypot_record: views::HoneypotRecordView::of(a, &st.params),
        pending_expertise: a
            .pending_expertise
            .as_ref()
            .map(|p| views::PendingExpertiseView {
                expertise: p.expertise.clone(),
                from: p.at,
            }),
        expertise_delay: st.params.expertise_delay,
        held_stake: trust_contracts::held_stake(st, &who),
    }))
}

#[utoipa::path(
    get, path = "/v1/auditors/{id}/history",
    description = "An auditor's history, session by session, newest first: seats drawn, votes revealed (when decided), judgements counted, rewards, slashes with their reasons, slashes given back, appeals filed, and the session's status and verdict. Read from the events the node stores with each block: at most 10,000 blocks and 100 sessions a call, from the block below `before` down; `earlier` is the `before` of the page below (absent when no earlier block is held). A pruning node holds no events below its oldest block.",
    params(
        ("id" = String, Path, description = "account id, 64 hex characters", pattern = "^[0-9a-fA-F]{64}$"),
        ("before" = Option<u64>, Query, description = "Read the blocks below this height (default: up to the tip)."),
        ("blocks" = Option<u64>, Query, minimum = 1, maximum = 10000, description = "Read at most this many blocks (1 to 10000, default 10000)."),
    ),
    responses(
        (status = 200, body = AuditorHistory),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn auditor_history(
    State(api): State<Api>,
    Path(id): Path<String>,
    query: Result<Query<Vec<(String, String)>>, axum::extract::rejection::QueryRejection>,
) -> ApiResult<Json<AuditorHistory>> {
    let who = AccountId::from_str(&id)
        .map_err(|_| ApiError::bad("bad_id", "auditor id must be 64 hex characters"))?;
    let Query(pairs) = query.map_err(|e| ApiError::bad("bad_query", e.body_text()))?;
    let (mut before, mut blocks) = (None, query::MAX_HISTORY_BLOCKS);
    for (key, value) in &pairs {
        let n = value
            .trim()
            .parse::<u64>()
            .map_err(|_| ApiError::bad("bad_query", format!("{key} must be a whole number")));
        match key.as_str() {
            "before" => before = Some(n?),
            "blocks" => match n? {
                b @ 1..=query::MAX_HISTORY_BLOCKS => blocks = b,
                _ => {
                    return Err(ApiError::bad(
                        "bad_query",
                        format!("blocks must be 1 to {}", query::MAX_HISTORY_BLOCKS),
                    ));
                }
            },
            other => {
                return Err(ApiError::bad(
                    "bad_query",
                    format!(
                        "unknown parameter `{}`; this route takes before and blocks",
                        other.chars().take(64).collect::<String>()
                    ),
                ));
            }
        }
    }
    let view = latest(&api.chain);
    if !view.contract.state().auditors.contains_key(&who) {
        return Err(ApiError::not_found(format!("no auditor {who}")));
    }
    // Up to 10,000 block reads: off the runtime's threads, two requests at a time.
    let Ok(_scan) = HISTORY_SCANS.try_acquire() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "two auditor histories are being read, the most this node reads at once; retry shortly",
        ));
    };
    tokio::task::spawn_blocking(move || {
        query::auditor_history(&view, &api.ledger, &who, before, blocks).map_err(ApiError::internal)
    })
    .await
    .map_err(ApiError::internal)?
    .map(Json)
}

/// Auditor histories read at once (each up to [`query::MAX_HISTORY_BLOCKS`] block reads).
static HISTORY_SCANS: tokio::sync::Semaphore = tokio::sync::Semaphore::const_new(2);

/// The seats `who` holds in live sessions, in session then segment order.
fn seats_of(st: &trust_contracts::State, who: &AccountId) -> Vec<SeatView> {
    use trust_contracts::Phase;
    let mut out = Vec::new();
    for (sid, s) in &st.sessions {
        let (phase, deadline) = match s.phase {
            Phase::Assigning => (SeatPhase::Assigning, None),
            Phase::Commit { until, .. } => (SeatPhase::Commit, Some(until)),
            Phase::Reveal { until, .. } => (SeatPhase::Reveal, Some(until)),
            Phase::Disclose { until } => (SeatPhase::Disclose, Some(until)),
        };
        for (i, g) in s.segments.iter().enumerate() {
            for x in g.seats.iter().filter(|x| x.account == *who) {
                out.push(SeatView {
                    session: *sid,
                    segment: u16::try_from(i).unwrap_or(u16::MAX),
                    round: x.round,
                    phase,
                    deadline,
                    committed: x.commitment.is_some(),
                    revealed: x.vote.is_some(),
                });
            }
        }
    }
    out
}

#[utoipa::path(
    get, path = "/metrics",
    description = "Prometheus metrics (text exposition format 0.0.4).",
    responses(
        (status = 200, description = "metrics", body = String, content_type = "text/plain"),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "internal error or stopping", body = ErrorBody),
    )
)]
async fn metrics(State(api): State<Api>) -> ApiResult<Response> {
    let mempool = api.pool.count().await.map_err(ApiError::pool)?;
    let chain = latest(&api.chain);
    let height = chain.tip.height;
    let peers = api.peers.borrow().peers;
    let m = &api.metrics;
    let st = StorageView::of(&chain.contract, api.ledger.disk_bytes());
    let oldest = api
        .ledger
        .oldest_block()
        .map_err(ApiError::internal)?
        .unwrap_or(0);
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
    let _ = write!(
        text,
        "# HELP trust_oldest_block Oldest block the ledger holds (0: none yet).\n# TYPE trust_oldest_block gauge\ntrust_oldest_block {oldest}\n\
# HELP trust_disk_bytes Bytes the node's database takes on disk.\n# TYPE trust_disk_bytes gauge\ntrust_disk_bytes {}\n\
# HELP trust_state_entries Entries of the contract state, by kind.\n# TYPE trust_state_entries gauge\n\
trust_state_entries{{kind=\"accounts\"}} {}\ntrust_state_entries{{kind=\"auditors\"}} {}\n\
trust_state_entries{{kind=\"live_sessions\"}} {}\ntrust_state_entries{{kind=\"outcomes\"}} {}\n\
trust_state_entries{{kind=\"failed\"}} {}\n\
# HELP trust_state_tree_nodes Nodes of the state's Merkle tree held in memory.\n# TYPE trust_state_tree_nodes gauge\ntrust_state_tree_nodes {}\n",
        st.disk_bytes,
        st.accounts,
        st.auditors,
        st.live_sessions,
        st.outcomes,
        st.failed,
        st.tree_nodes,
    );
    let (judging, capacity) = chain.contract.admission();
    let _ = write!(
        text,
        "# HELP trust_seats_judging Seats in a commit window now, by tier: what a new session's draw is admitted against.\n# TYPE trust_seats_judging gauge\n"
    );
    for (tier, n) in ["computer", "llm", "human"].iter().zip(judging) {
        let _ = writeln!(text, "trust_seats_judging{{tier=\"{tier}\"}} {n}");
    }
    let _ = write!(
        text,
        "# HELP trust_seat_capacity Seats a tier may have in a commit window before new sessions wait for their draw.\n# TYPE trust_seat_capacity gauge\n"
    );
    for (tier, n) in ["computer", "llm", "human"].iter().zip(capacity) {
        let _ = writeln!(text, "trust_seat_capacity{{tier=\"{tier}\"}} {n}");
    }
    for source in &api.sources {
        source.render(&mut text);
    }
    Ok(([(header::CONTENT_TYPE, "text/plain; version=0.0.4")], text).into_response())
}

#[utoipa::path(
    get, path = "/v1/openapi.json",
    description = "This document.",
    responses((status = 200, description = "the OpenAPI 3 document", body = Object))
)]
async fn openapi() -> Json<utoipa::openapi::OpenApi> {
    Json(openapi_document())
}

#[cfg(test)]
mod tests;
