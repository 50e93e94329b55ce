//! The node's web pages: server-rendered HTML with inline CSS and SVG, no external assets
//! and no script, served by the node's own HTTP server beside the JSON API (the API's
//! router merges [`router`]). The read-only pages below show the network; the audit form
//! ([`audit`], behind [`auth`], merged by `daemon::run` on a node with Human seats) is
//! where a person judges the segments this node's Human seats hold.
//!
//! | page | shows |
//! |---|---|
//! | `GET /` | height, tip hash, state root, validators and their power, peers, mempool size, live and recent sessions with verdicts |
//! | `GET /blocks?before=H` | recent blocks, newest first, [`explorer::BLOCKS_PER_PAGE`] per page: height, hash, proposer, transactions |
//! | `GET /blocks/{height-or-hash}` | a block's header and its transactions decoded: kind, sender, nonce, main fields |
//! | `GET /accounts/{id}` | balance, stake, nonce, unbondings; a link to the auditor page when registered |
//! | `GET /sessions/{id}` | a session's HDAG as a layered SVG coloured by verdict, trace verdict, coverage, failure bound, deciding block; phase and seats while live (refreshing every 2 s). On the node that opened it, and only to its operator (the operator token as a bearer token, or the login cookie of `POST /audit/login`): the problem, each step's text in trace order, the honeypots it planted apart, the proof |
//! | `GET /auditors/{id}` | stake, tier, expertise, reputation and cumulative profit over time (SVG plots), abstention rate, honeypot record |
//! | `GET /search?q=` | 303 to the page of a session id, block height or hash, account id or transaction id, or of the one id that starts with `q` (8 hex characters or more); a list when several do (at most 10 of each kind); 404 when nothing matches, 400 when `q` is too short |
//!
//! Unknown ids answer a 404 page, malformed ones a 400 page, both in the shared
//! [`layout`]. Every piece of data on a page goes through [`layout::esc`].
//!
//! This module reads the node's shared view and ledger through the handles in [`Pages`];
//! it imports nothing from `api` (the API imports this module), so the two never import
//! each other.

pub mod audit;
pub mod auditor;
pub mod auth;
pub mod explorer;
pub mod hdag_svg;
pub mod history;
pub mod layout;
pub mod network;
pub mod session;

#[cfg(test)]
mod tests;

use std::{str::FromStr, sync::Arc};

use axum::{
    Router,
    http::StatusCode,
    response::{IntoResponse, Response},
    routing::get,
};
use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash};

use crate::{
    audit::provider::Provider,
    ledger::Ledger,
    mempool::Pool,
    view::{ChainWatch, PeerWatch},
};

/// What the pages read: the node's published views, its ledger and mempool, and (on the
/// node that opens sessions) the provider role, which alone holds segment plaintext.
#[derive(Debug, Clone)]
pub struct Pages {
    /// This node's account.
    pub node_id: AccountId,
    /// The chain as the consensus driver last published it.
    pub chain: ChainWatch,
    /// Peers as the `peers` task last published them.
    pub peers: PeerWatch,
    /// The mempool.
    pub pool: Pool,
    /// The ledger.
    pub ledger: Ledger,
    /// This node's provider role, if it runs one: its own sessions' segment text.
    pub provider: Option<Arc<Provider>>,
    /// Auditor histories replayed from the ledger (see [`history`]).
    pub history: Arc<history::History>,
    /// The operator token and its logins: a page shows the provider's plaintext only to a
    /// request that carries it (`None`: to nobody).
    pub auth: Option<Arc<auth::Auth>>,
}

impl Pages {
    /// The pages over these handles; `genesis` (the contract at height 0) lets the auditor
    /// page replay the ledger for its plots, `None` leaves the plots out.
    pub fn new(
        node_id: AccountId,
        chain: ChainWatch,
        peers: PeerWatch,
        pool: Pool,
        ledger: Ledger,
        provider: Option<Arc<Provider>>,
        genesis: Option<Arc<Contract>>,
    ) -> Self {
        Self {
            node_id,
            chain,
            peers,
            pool,
            ledger,
            provider,
            history: Arc::new(history::History::new(genesis)),
            auth: None,
        }
    }

    /// The pages with the operator's login: with it, the session page shows the text of
    /// this node's own sessions to the operator (and only to the operator).
    pub fn with_auth(mut self, auth: Arc<auth::Auth>) -> Self {
        self.auth = Some(auth);
        self
    }

    /// Whether a request is the operator's: it carries the operator token as a bearer
    /// token or the cookie of an open login. Never a token in the query string, which
    /// would leak into logs, history and `Referer`.
    pub fn operator(&self, headers: &axum::http::HeaderMap) -> bool {
        self.auth.as_ref().is_some_and(|a| a.authorized(headers))
    }
}

/// The pages' routes, with their state applied (no fallback: the API's router, which
/// merges this one, keeps its own).
pub fn router(pages: Pages) -> Router {
    Router::new()
        .route("/", get(network::page))
        .route("/blocks", get(explorer::blocks))
        .route("/blocks/{id}", get(explorer::block))
        .route("/accounts/{id}", get(explorer::account))
        .route("/search", get(explorer::search))
        .route("/sessions/{id}", get(session::page))
        .route("/auditors/{id}", get(auditor::page))
        .with_state(pages)
}

/// The path of every kind of page, with `height`, `session` and `account` filled in: what
/// a browser test loads to check each page renders.
pub fn page_paths(height: u64, session: &Hash, account: &AccountId) -> Vec<String> {
    vec![
        "/".into(),
        "/blocks".into(),
        format!("/blocks?before={}", height.saturating_add(1)),
        format!("/blocks/{height}"),
        format!("/accounts/{account}"),
        format!("/auditors/{account}"),
        format!("/sessions/{session}"),
        format!("/search?q={height}"),
    ]
}

/// Why a page cannot be shown; answered as an error page in the shared layout.
#[derive(Debug)]
pub enum PageError {
    /// A malformed id or parameter (400).
    BadRequest(String),
    /// Nothing with that id (404).
    NotFound(String),
    /// The node failed to read its own data (500): the error it failed with.
    Internal(crate::Cause),
}

impl PageError {
    /// A failure reading the node's own data.
    pub fn internal(e: impl Into<crate::Cause>) -> Self {
        Self::Internal(e.into())
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        match self {
            PageError::BadRequest(m) => layout::error_page(StatusCode::BAD_REQUEST, &m),
            PageError::NotFound(m) => layout::error_page(StatusCode::NOT_FOUND, &m),
            PageError::Internal(e) => {
                let m = e.to_string();
                tracing::warn!(error = %m, "web page failed");
                layout::error_page(StatusCode::INTERNAL_SERVER_ERROR, &m)
            }
        }
    }
}

/// What a page handler answers.
pub type PageResult = Result<Response, PageError>;

/// Parses a 64-hex-character id named `what`, or a 400 naming it.
pub fn parse_id<T: FromStr>(what: &str, s: &str) -> Result<T, PageError> {
    T::from_str(s.trim())
        .map_err(|_| PageError::BadRequest(format!("{what} must be 64 hex characters")))
}

/// The first 12 hex characters of an id and an ellipsis, for tables.
pub fn short(id: &impl std::fmt::Display) -> String {
    let s = id.to_string();
    match s.get(..12) {
        Some(head) if s.len() > 12 => format!("{head}…"),
        _ => s,
    }
}

/// A link to the account page of `id`, showing its short form.
pub fn account_link(id: &AccountId) -> String {
    format!(
        "<a class=\"mono\" href=\"/accounts/{id}\" title=\"{id}\">{}</a>",
        short(id)
    )
}

/// A link to the session page of `id`, showing its short form.
pub fn session_link(id: &Hash) -> String {
    format!(
        "<a class=\"mono\" href=\"/sessions/{id}\" title=\"{id}\">{}</a>",
        short(id)
    )
}

/// A link to the block page at `height`.
pub fn block_link(height: u64) -> String {
    format!("<a href=\"/blocks/{height}\">{height}</a>")
}

/// A labelled figure for the stat grid (`value` is HTML, already escaped).
pub fn stat(label: &str, value: &str) -> String {
    format!(
        "<div class=\"stat\"><div class=\"k\">{}</div><div class=\"v\">{value}</div></div>",
        layout::esc(label)
    )
}
