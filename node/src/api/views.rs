//! The API's request and reply bodies, public: the server builds them, the client
//! ([`super::client`]) reads them back, and the CLI prints from them, so a renamed field
//! breaks the build (or the api tests), not a command's output.
//!
//! Each type derives `Serialize`, `Deserialize` and `utoipa::ToSchema` once; the OpenAPI
//! document at `/v1/openapi.json` describes them from the same derives and doc comments.
//! Fields the server leaves out when empty are `Option`s that read back as `None`.
//!
//! Some fields hold the contract's own types (an outcome, a phase, a failure, a block
//! header) and have always been sent with their object keys in sorted order, as they went
//! through a `serde_json::Value`; [`sorted`] keeps those bytes as they were.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use trust_contracts::{Failure, HoneypotStats, Outcome, Phase};
use trust_protocol::{
    AccountId, Hash,
    block::BlockHeader,
    tx::{Call, Tier},
};
use utoipa::ToSchema;

/// Serializes `value` through a `serde_json::Value`, so every object in it comes out with
/// its keys sorted: how the fields that use it have always been sent.
pub fn sorted<T: Serialize, S: Serializer>(value: &T, s: S) -> Result<S::Ok, S::Error> {
    serde_json::to_value(value)
        .map_err(serde::ser::Error::custom)?
        .serialize(s)
}

/// The error body of every route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct ErrorBody {
    /// A stable code, one per status class.
    pub code: String,
    /// What went wrong, for people.
    pub message: String,
}

/// Node id, height, tip, state root, peers, the next validators.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct StatusView {
    #[schema(value_type = String)]
    /// The node's account id (its public key).
    pub node_id: AccountId,
    /// The chain id (the hash of the genesis document) transactions are signed for.
    #[schema(value_type = String)]
    pub chain_id: Hash,
    /// Height of the newest decided block.
    pub height: u64,
    #[schema(value_type = String)]
    /// Hash of the newest decided block.
    pub tip_hash: Hash,
    #[schema(value_type = String)]
    /// Root of the contract state after the newest block.
    pub state_root: Hash,
    /// Peers connected now.
    pub peers: usize,
    /// Each connected peer's reported height.
    pub peer_heights: Vec<PeerHeight>,
    /// Whether this node is a validator of the next height.
    pub validator: bool,
    /// Transactions waiting in this node's mempool.
    pub mempool: usize,
    #[schema(value_type = Vec<Object>)]
    /// The validators of the next height and their voting power.
    pub validators: Vec<ValidatorView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    /// The LLM tier's endpoint and calibration, when this node runs one.
    pub llm: Option<LlmView>,
    /// The oldest block this node's ledger holds (1 when it holds them all; none before
    /// the first block).
    #[serde(default)]
    pub oldest_block: Option<u64>,
    /// What the node holds: the contract state's entries and the database on disk.
    #[serde(default)]
    pub storage: StorageView,
}

/// The size of what a node holds: what to watch as months of sessions pass.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StorageView {
    /// Bytes the node's database (ledger, blobs, the roles' records) takes on disk.
    pub disk_bytes: u64,
    /// Accounts in the contract state.
    pub accounts: usize,
    /// Registered auditors.
    pub auditors: usize,
    /// Sessions not decided yet.
    pub live_sessions: usize,
    /// Decided sessions' outcomes held in the state.
    pub outcomes: usize,
    /// Failed sessions held in the state.
    pub failed: usize,
    /// Nodes of the state's Merkle tree held in memory.
    pub tree_nodes: usize,
}

impl StorageView {
    /// The state's entry counts (each read in constant time) and `disk_bytes`.
    pub fn of(contract: &trust_contracts::Contract, disk_bytes: u64) -> Self {
        let st = contract.state();
        StorageView {
            disk_bytes,
            accounts: st.accounts.len(),
            auditors: st.auditors.len(),
            live_sessions: st.sessions.len(),
            outcomes: st.outcomes.len(),
            failed: st.failed.len(),
            tree_nodes: contract.tree_nodes(),
        }
    }
}

/// A connected peer and the height it reported.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PeerHeight {
    /// The peer's libp2p id.
    pub peer: String,
    /// The height the peer last reported.
    pub height: u64,
}

/// A validator of the next height and its voting power.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ValidatorView {
    /// The validator's account.
    pub id: AccountId,
    /// Its voting power (bonded stake, or 1 each when none has stake).
    pub power: u64,
}

impl From<&crate::view::ValidatorPower> for ValidatorView {
    fn from(v: &crate::view::ValidatorPower) -> Self {
        Self {
            id: v.id,
            power: v.power,
        }
    }
}

/// The health of the node's LLM endpoint, as its last probe found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LlmView {
    /// The endpoint's base URL.
    pub url: String,
    /// The model asked.
    pub model: String,
    /// Whether it answered the last health probe (`GET {url}/models`).
    pub answers: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

impl From<crate::audit::llm::LlmStatus> for LlmView {
    fn from(s: crate::audit::llm::LlmStatus) -> Self {
        Self {
            url: s.url,
            model: s.model,
            answers: s.answers,
            error: s.error,
        }
    }
}

/// A transaction as JSON: its canonical bytes in hex.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TxJson {
    /// The signed transaction's canonical encoding, hex.
    pub tx: String,
}

/// A transaction admitted to the mempool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TxAccepted {
    /// The transaction id.
    #[schema(value_type = String)]
    pub id: Hash,
}

/// A decided block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BlockView {
    #[schema(value_type = String)]
    /// The block's hash.
    pub hash: Hash,
    /// The header's `time_ms` as RFC 3339 in UTC (`2026-11-26T02:07:50.123Z`).
    pub time: String,
    /// The header: height, parent, time (`time_ms`, Unix milliseconds), roots, proposer,
    /// and the proposer's proof of the block's seed (`vrf`, hex).
    #[serde(serialize_with = "sorted")]
    #[schema(value_type = Object)]
    pub header: BlockHeader,
    /// Its transactions, decoded (or the decoding error).
    #[serde(serialize_with = "sorted")]
    #[schema(value_type = Vec<Object>)]
    pub txs: Vec<BlockTx>,
    /// Size of its commit certificate.
    pub certificate_bytes: usize,
}

/// One transaction of a [`BlockView`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BlockTx {
    /// It decoded.
    Decoded {
        /// Its id.
        id: Hash,
        /// Who signed it.
        signer: AccountId,
        /// Its nonce.
        nonce: u64,
        /// What it does (boxed: a session's manifest is far larger than an error).
        call: Box<Call>,
    },
    /// It did not (a ledger block's transactions always decode; an error is shown rather
    /// than hidden if one ever does not).
    Undecodable {
        /// The decoding error.
        error: String,
    },
}

/// `included` or `pending`: where a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TxStatus {
    /// In a decided block.
    Included,
    /// In the mempool.
    Pending,
}

/// Where a transaction is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TxLocation {
    #[schema(value_type = String)]
    /// The transaction's id (the hash of its encoding).
    pub id: Hash,
    /// `included` or `pending`.
    #[schema(value_type = String)]
    pub status: TxStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// The height of the block that includes it, once included.
    pub height: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Its position in that block, once included.
    pub index: Option<u32>,
}

/// An account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AccountView {
    #[schema(value_type = String)]
    /// The account id (its public key).
    pub id: AccountId,
    /// Liquid balance.
    pub balance: u64,
    /// Bonded stake (drawn on, slashable).
    pub stake: u64,
    /// The nonce its next transaction must carry, as the chain holds it (pooled ones
    /// not counted).
    pub nonce: u64,
    /// The nonce its next transaction should carry (pooled ones counted).
    pub next_nonce: u64,
}

/// `pending`, `live`, `decided` or `failed`: where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionStatus {
    /// Opened by this node and not yet in a block (only the node that opened it knows
    /// it then).
    Pending,
    /// Decided: it has an outcome.
    Decided,
    /// Still running.
    Live,
    /// Could not run.
    Failed,
}

impl SessionStatus {
    /// The word the API sends.
    pub fn as_str(self) -> &'static str {
        match self {
            SessionStatus::Pending => "pending",
            SessionStatus::Decided => "decided",
            SessionStatus::Live => "live",
            SessionStatus::Failed => "failed",
        }
    }
}

/// Seats of a live session and how far they got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatCounts {
    /// Seats drawn, both rounds.
    pub assigned: usize,
    /// Of those, seats that committed.
    pub committed: usize,
    /// Of those, seats that revealed.
    pub revealed: usize,
}

impl From<crate::query::SeatCounts> for SeatCounts {
    fn from(c: crate::query::SeatCounts) -> Self {
        Self {
            assigned: c.assigned,
            committed: c.committed,
            revealed: c.revealed,
        }
    }
}

/// A session: decided (with its outcome and the block that decided it), live (with its
/// phase and seats), or failed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionView {
    #[schema(value_type = String)]
    /// The session id.
    pub session: Hash,
    /// `pending` (opened by this node, not yet in a block), `live`, `decided` or
    /// `failed`.
    #[schema(value_type = String)]
    pub status: SessionStatus,
    /// A decided session's trace verdict: `pass`, `fail` or `inconclusive` (the same as
    /// `outcome.trace`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// The outcome: verdict, per-segment verdicts and vote counts, coverage, bound. Each
    /// segment's `votes_cast` lists its revealed votes in seat order, each a `CastVote`
    /// with the reason its seat bound into its commitment.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "sorted")]
    #[schema(value_type = Option<Object>)]
    pub outcome: Option<Outcome>,
    /// Why a decided trace did not pass, and how its calculations fared (`conclusion not
    /// judged (#7: no LLM auditors on the network); 6 of 6 calculations hold`); segments
    /// are named `#i`, session segments first, then the left-out ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub explanation: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Height of the block that decided it.
    pub block_height: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    /// Hash of the block that decided it.
    pub block_hash: Option<Hash>,
    /// When it was decided: the deciding block's time, Unix milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_time_ms: Option<u64>,
    /// The same as RFC 3339 in UTC (`2026-11-26T02:07:50.123Z`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub decided_time: Option<String>,
    /// The live phase, always an object: `{"name": "commit", "round": 0, "until": 12}`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub phase: Option<PhaseView>,
    #[serde(skip_serializing_if = "Option::is_none")]
    /// Segments of a live session.
    pub segments: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    /// Seats of a live session: drawn, committed, revealed.
    pub seats: Option<SeatCounts>,
    /// Why a failed session failed.
    #[serde(skip_serializing_if = "Option::is_none", serialize_with = "sorted")]
    #[schema(value_type = Option<Value>)]
    pub failure: Option<Failure>,
    /// The assurance the provider chose: seats, racing seats, τ, β, weights, tiers,
    /// domain, windows, exposure budget.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub terms: Option<TermsView>,
    /// Where a decided session stands with respect to appeals: `{"state": "final", "at":
    /// H}`, `{"state": "appealable", "until": H}` or `{"state": "appealing", "round": r}`.
    /// Every appeal round is in `outcome.appeals.rounds`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub finality: Option<FinalityView>,
    /// On the node that opened the session, asked with its operator token: the model's own
    /// steps, each under its stable name (the HDAG node id `submit` printed) with its text
    /// verbatim, its span in the trace and its verdict, in trace order (where their text
    /// first sits: problem, thinking, output; a calculation the trace does not hold
    /// verbatim right after the step it checks). Left-out steps are among them
    /// (`left_out`); the honeypots the node planted are not (see `honeypots`). `index`
    /// is each step's place in the outcome. Absent on every other node and without the
    /// token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steps: Option<Vec<StepView>>,
    /// Beside `steps`, on the same terms: what the node planted among the model's steps
    /// (honeypots, and the calculation planted beside a worded one), in outcome order.
    /// None of them is part of the trace or counts in its verdict.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub honeypots: Option<Vec<StepView>>,
    /// A decided session's failure bound as a probability, written as a decimal (`"0.446"`,
    /// `"1.0e-4"`: the same figure `query` and the page show; `outcome.bound` holds it in
    /// fixed point as `exp(-hoeffding_neg_ln_milli / 1000)`): the chance, at most, that a
    /// trace whose segments are all correct would be failed, if each seat errs no more
    /// often than the network assumes (Hoeffding's bound). Absent when there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_bound: Option<String>,
}

/// Where a decided session stands with respect to appeals (the contract's `Finality`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum FinalityView {
    /// Final since block `at`: its appeal window passed with no appeal open.
    Final {
        /// Height at which it became final.
        at: u64,
    },
    /// Decided; any account may appeal its decided segments up to and including block
    /// `until`.
    Appealable {
        /// Last height accepting an appeal.
        until: u64,
    },
    /// An appeal is being judged in `round` (2 for the first appeal).
    Appealing {
        /// The appeal's voting round.
        round: u8,
    },
}

impl From<trust_contracts::Finality> for FinalityView {
    fn from(f: trust_contracts::Finality) -> Self {
        match f {
            trust_contracts::Finality::Final { at } => FinalityView::Final { at },
            trust_contracts::Finality::Appealable { until } => FinalityView::Appealable { until },
            trust_contracts::Finality::Appealing { round } => FinalityView::Appealing { round },
        }
    }
}

/// `POST /v1/sessions/{id}/appeals`: the segments to appeal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AppealBody {
    /// Indices of decided segments of the session (as `GET /v1/sessions/{id}` numbers
    /// them), distinct, 1 to 64.
    pub segments: Vec<u16>,
}

/// What `POST /v1/sessions/{id}/appeals` did: the node signed and sent an `Appeal` from
/// its account.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AppealAccepted {
    /// The session appealed.
    #[schema(value_type = String)]
    pub session: Hash,
    /// The `Appeal` transaction's id; absent when it waits behind this node's earlier
    /// transactions (it is signed once they are included).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<String>)]
    pub tx: Option<Hash>,
    /// The appellant: this node's account.
    #[schema(value_type = String)]
    pub appellant: AccountId,
    /// The segments appealed.
    pub segments: Vec<u16>,
    /// The bond escrowed from the appellant's balance (the network's appeal bond per
    /// segment).
    pub bond: u64,
    /// The voting round of the appeal's seats (2 for a session's first appeal).
    pub round: u8,
    /// The last height of the session's appeal window when it was appealed (the appeal
    /// applies in a block up to it).
    pub until: u64,
}

impl SessionView {
    /// A session with `status` and nothing else yet.
    pub fn new(session: Hash, status: SessionStatus) -> Self {
        Self {
            session,
            status,
            outcome: None,
            explanation: None,
            block_height: None,
            block_hash: None,
            decided_time_ms: None,
            decided_time: None,
            phase: None,
            segments: None,
            seats: None,
            failure: None,
            terms: None,
            finality: None,
            steps: None,
            honeypots: None,
            verdict: None,
            failure_bound: None,
        }
    }

    /// The session with the provider's steps (`None`: not shown here), the model's own
    /// apart from what the node planted.
    pub fn with_steps(self, split: Option<crate::query::steps::Split>) -> Self {
        let (steps, honeypots) = split.map_or((None, None), |s| (Some(s.steps), Some(s.honeypots)));
        Self {
            steps,
            honeypots,
            ..self
        }
    }

    /// The provider's name of every segment, by its place in the outcome (session
    /// segments, then the left-out ones), from `steps` and `honeypots`; `#i` where
    /// neither names it. Empty when the node showed no steps.
    pub fn step_names(&self) -> Vec<String> {
        let all: Vec<&StepView> = self.steps.iter().chain(&self.honeypots).flatten().collect();
        let n = all
            .iter()
            .map(|s| s.index.saturating_add(1))
            .max()
            .unwrap_or(0);
        let mut names: Vec<String> = (0..n).map(|i| format!("#{i}")).collect();
        for s in all {
            if let Some(slot) = names.get_mut(s.index) {
                slot.clone_from(&s.name);
            }
        }
        names
    }
}

/// One revealed vote of a decided segment: `outcome.segments[i].votes_cast[j]` of a
/// session reply (the contract's `CastVote`, described here for the OpenAPI document).
#[derive(ToSchema)]
#[schema(as = CastVote)]
#[allow(dead_code)] // never built: it describes JSON the contract's type serializes to
pub(super) struct CastVoteDoc {
    /// The seat's account id, 64 hex characters.
    seat: String,
    /// 0, or 1 after an escalation.
    round: u8,
    /// `valid`, `invalid`, `ungrounded`, `abstain`, or `payload_abstain` (an abstention
    /// because the provider's payload cannot be judged within the network's published
    /// limits: its code exceeded the sandbox's caps or ran non-deterministically, or its
    /// proof's structure exceeds the check budget; counted with the abstentions, and paid
    /// from the provider's escrow when at least the round's quorum cast it).
    vote: String,
    /// Why, as the seat wrote it: UTF-8 of at most 280 bytes (`MAX_REASON_BYTES`), no
    /// control characters but newline and tab. Its hash is bound into the commitment.
    reason: String,
    /// Whether it was among the first `k` reveals of its round (counted towards the
    /// quorum).
    counted: bool,
}

/// A trace to audit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct OpenSessionBody {
    /// The trace: an object `{"problem", "thinking", "output"}`, or text (that object as a
    /// JSON string, or the paper's `##` headings).
    #[schema(value_type = Value)]
    pub trace: TextOrJson,
    /// The provider's HDAG (optional): an object `{"nodes", "edges"}`, or that JSON as a
    /// string.
    #[serde(default)]
    #[schema(value_type = Option<Value>)]
    pub hdag: Option<TextOrJson>,
    /// The session's assurance (seats, quorums, tiers, weights, domain, fee, windows,
    /// exposure budget), over the node's `[session]` defaults; absent: those defaults.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionOptions>,
    /// Labels kept with the session on this node, never on chain (`model`, `run`,
    /// `dataset_row`...): at most 16, names of letters, digits and `_-./` up to 64 bytes,
    /// values up to 256 bytes. `GET /v1/sessions?provider=me&label=NAME=VALUE` lists by
    /// them.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
}

/// A document given as JSON text or as the JSON itself.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum TextOrJson {
    /// Text, as it was given.
    Text(String),
    /// A JSON value (an object), read as its compact JSON text.
    Json(Value),
}

impl TextOrJson {
    /// The document as text.
    pub fn text(&self) -> String {
        match self {
            TextOrJson::Text(s) => s.clone(),
            TextOrJson::Json(v) => v.to_string(),
        }
    }
}

impl From<String> for TextOrJson {
    fn from(s: String) -> Self {
        TextOrJson::Text(s)
    }
}

pub use trust_judging::session::terms::SessionOptions;

pub use crate::audit::provider::{
    ExposureView, Plan, PlannedSegment, StepView, TermsView, TraceSpan, listing::ListedView,
};
/// An auditor's history (`GET /v1/auditors/{id}/history`).
pub use crate::query::{AuditorHistory, SessionHistory, VoteTally};

/// What `submit` reports: the provider's own record of what it opened (one type, on both
/// sides of the wire).
pub use crate::audit::provider::Submitted as SubmittedView;

/// Stake on its way out of an account.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct UnbondingView {
    /// Stake unbonding.
    pub amount: u64,
    /// The first height at which a `Withdraw` can take it.
    pub frees_at: u64,
}

/// A live session's phase: its name, its voting round (commit and reveal) and the last
/// block of its window (commit, reveal and disclose).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PhaseView {
    /// `assigning`, `commit`, `reveal` or `disclose`.
    #[schema(value_type = String)]
    pub name: SeatPhase,
    /// The voting round (0, 1 after an escalation, 2 and up for appeals).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u8>,
    /// The last block of the phase's window.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<u64>,
}

impl From<Phase> for PhaseView {
    fn from(p: Phase) -> Self {
        let (name, round, until) = match p {
            Phase::Assigning => (SeatPhase::Assigning, None, None),
            Phase::Commit { round, until } => (SeatPhase::Commit, Some(round), Some(until)),
            Phase::Reveal { round, until } => (SeatPhase::Reveal, Some(round), Some(until)),
            Phase::Disclose { until } => (SeatPhase::Disclose, None, Some(until)),
        };
        Self { name, round, until }
    }
}

/// `assigning`, `commit`, `reveal` or `disclose`: the phase of a seat's session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SeatPhase {
    /// Seats are being drawn.
    Assigning,
    /// Seats commit.
    Commit,
    /// Seats reveal.
    Reveal,
    /// The provider discloses the mapping and honeypots.
    Disclose,
}

impl SeatPhase {
    /// The word the API sends.
    pub fn as_str(self) -> &'static str {
        match self {
            SeatPhase::Assigning => "assigning",
            SeatPhase::Commit => "commit",
            SeatPhase::Reveal => "reveal",
            SeatPhase::Disclose => "disclose",
        }
    }
}

/// A seat an auditor holds in a live (undecided) session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SeatView {
    #[schema(value_type = String)]
    /// The session.
    pub session: Hash,
    /// The segment's index in the session's manifest.
    pub segment: u16,
    /// 0, or 1 after an escalation.
    pub round: u8,
    /// `assigning`, `commit`, `reveal` or `disclose`.
    #[schema(value_type = String)]
    pub phase: SeatPhase,
    /// The last height of the phase (none while seats are being drawn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub deadline: Option<u64>,
    /// Whether its commitment is on chain.
    pub committed: bool,
    /// Whether its vote is revealed.
    pub revealed: bool,
}

/// An auditor's record: its standing, its stake on the way out and the seats it holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AuditorView {
    #[schema(value_type = String)]
    /// The auditor's account id.
    pub id: AccountId,
    /// Height of the state this answer reads.
    pub height: u64,
    /// `Computer`, `Llm` or `Human`.
    #[schema(value_type = String)]
    pub tier: Tier,
    /// Domains it declared (drawn first for sessions that prefer them).
    pub expertise: Vec<String>,
    /// Eligible for seats (false after its stake fell below the minimum or it was flagged).
    pub active: bool,
    /// Flagged by the honeypot rule (it approved known errors): not drawn.
    pub flagged: bool,
    /// Leaving the network (`Exit`): never drawn again.
    pub exiting: bool,
    /// Paused (`auditor pause`): not drawn for new seats; the seats it holds stay its duty.
    #[serde(default)]
    pub paused: bool,
    /// A pause or resume asked for that does not count yet.
    #[serde(default)]
    pub pending_pause: Option<PendingPauseView>,
    /// Whether it can be drawn for new seats now (active, not flagged, not exiting, not
    /// paused, bonded at least the tier minimum).
    pub drawable: bool,
    /// Bonded stake (drawn on, slashable).
    pub stake: u64,
    /// The tier's minimum bonded stake to be drawn.
    pub min_stake: u64,
    /// Liquid balance.
    pub balance: u64,
    /// Sum of `unbonding`.
    pub unbonding_total: u64,
    /// Pending unbondings, still slashable until withdrawn.
    pub unbonding: Vec<UnbondingView>,
    /// What a `Withdraw` in the next block would take, or why not.
    pub withdraw: WithdrawView,
    /// Seats held in sessions not decided yet.
    pub seats: Vec<SeatView>,
    /// Between 0 and 1.
    pub reputation: f64,
    /// Rewards earned, in total.
    pub earned: u64,
    /// Stake slashed, in total.
    pub slashed: u64,
    /// Votes revealed.
    pub votes: u64,
    /// Revealed Valid votes.
    pub approvals: u64,
    /// Revealed abstentions (counted in `votes`).
    pub abstentions: u64,
    /// Share of revealed votes that were abstentions (public: a provider can see how
    /// often an auditor declines to judge).
    pub abstention_rate: f64,
    /// Counted votes that agreed with their segment's verdict.
    pub agreed: u64,
    /// Counted votes that disagreed, or seats that never committed or revealed.
    pub disagreed: u64,
    /// Honeypot record.
    #[serde(serialize_with = "sorted")]
    #[schema(value_type = Value)]
    pub honeypots: HoneypotStats,
    /// The honeypot record read as the rubber-stamp rule reads it, per difficulty, for
    /// this auditor's tier.
    #[serde(default)]
    pub honeypot_record: HoneypotRecordView,
    /// Expertise declared with `DeclareExpertise` that does not count yet.
    #[serde(default)]
    pub pending_expertise: Option<PendingExpertiseView>,
    /// Blocks a declared expertise waits before it counts (the network's).
    #[serde(default)]
    pub expertise_delay: u64,
    /// Stake that must stay within a slash's reach for the seats it holds in sessions not
    /// final yet (the network's `max_session_loss` per session, less what each already
    /// took): a withdrawal leaves this much behind.
    #[serde(default)]
    pub held_stake: u64,
}

/// A pause or resume waiting to count.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PendingPauseView {
    /// Paused from `from` (true) or drawn again from `from` (false).
    pub paused: bool,
    /// The first height whose draws see the change.
    pub from: u64,
}

/// Declared expertise waiting to count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct PendingExpertiseView {
    /// The domains.
    pub expertise: Vec<String>,
    /// The first height whose draws see them.
    pub from: u64,
}

/// An auditor's known-error honeypots as the rubber-stamp rule reads them. An auditor
/// serves one tier and its record holds the honeypots its seats judged, so these are its
/// tier's figures: an LLM auditor's come from the honeypots planted on LLM segments (or
/// escalated to them), a Human auditor's from those on Human segments.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct HoneypotRecordView {
    /// The tier the record is of: `Computer`, `Llm` or `Human`.
    #[schema(value_type = Option<String>)]
    pub tier: Option<Tier>,
    /// Per difficulty, obvious, subtle and domain in that order.
    pub difficulties: Vec<DifficultyRecordView>,
    /// Known errors voted on (abstentions included): the rule's sample.
    pub seen: u32,
    /// Known errors judged (seen minus abstained).
    pub judged: u32,
    /// Known errors approved (voted Valid).
    pub approved: u32,
    /// `approved / judged` (none before any judged).
    pub approval_rate: Option<f64>,
    /// Distinct providers whose known errors it approved.
    pub providers: u32,
    /// The rule: flagged at `approval` or more over at least `min_samples` known errors
    /// (and of the obvious ones), approved from at least `min_providers` providers.
    pub min_samples: u32,
    /// The rule's approval threshold, between 0 and 1.
    pub approval_threshold: f64,
    /// Providers the rule needs.
    pub min_providers: u32,
    /// Whether the record meets the rule now.
    pub meets_rule: bool,
    /// Whether the contract flagged it as a rubber-stamper.
    pub flagged: bool,
}

/// One difficulty of a honeypot record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct DifficultyRecordView {
    /// `Obvious`, `Subtle` or `Domain`.
    pub difficulty: String,
    /// Known errors voted on, abstentions included.
    pub seen: u32,
    /// Abstentions among them.
    pub abstained: u32,
    /// Judged: seen minus abstained.
    pub judged: u32,
    /// Approved (voted Valid).
    pub approved: u32,
    /// `approved / judged` (none before any judged).
    pub approval_rate: Option<f64>,
}

impl HoneypotRecordView {
    /// The record of `a` under the rule of `params`.
    pub fn of(a: &trust_contracts::Auditor, params: &trust_contracts::Params) -> Self {
        let h = &a.honeypots;
        let rate = |p: Option<trust_protocol::units::Ppm>| p.map(|p| f64::from(p.0) / 1e6);
        let at = |x: &[u32; 3], i: usize| x.get(i).copied().unwrap_or(0);
        let difficulties: Vec<DifficultyRecordView> = trust_protocol::tx::Difficulty::ALL
            .iter()
            .map(|d| {
                let i = d.index();
                let (seen, abstained) = (at(&h.errors_seen, i), at(&h.errors_abstained, i));
                DifficultyRecordView {
                    difficulty: format!("{d:?}"),
                    seen,
                    abstained,
                    judged: seen.saturating_sub(abstained),
                    approved: at(&h.errors_approved, i),
                    approval_rate: rate(h.error_approval(*d)),
                }
            })
            .collect();
        let sum = |f: fn(&DifficultyRecordView) -> u32| {
            difficulties
                .iter()
                .fold(0u32, |s, d| s.saturating_add(f(d)))
        };
        let rule = &params.rubber_stamp;
        HoneypotRecordView {
            tier: Some(a.tier),
            seen: sum(|d| d.seen),
            judged: sum(|d| d.judged),
            approved: sum(|d| d.approved),
            approval_rate: rate(h.total_error_approval()),
            difficulties,
            providers: u32::try_from(h.miss_providers.len()).unwrap_or(u32::MAX),
            min_samples: rule.min_samples,
            approval_threshold: f64::from(rule.approval.0) / 1e6,
            min_providers: rule.min_providers,
            meets_rule: trust_contracts::econ::is_rubber_stamper(params, h),
            flagged: a.flagged,
        }
    }
}

/// Whether a `Withdraw` in the next block would apply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WithdrawView {
    /// What it would move back to the balance (0 when refused).
    pub amount: u64,
    /// The contract's reason for refusing it, if it would.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
}

/// A session's opening, as its provider's node hands it to its operator
/// (`GET /v1/sessions/{id}/opening`, `proof export --opening`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct OpeningView {
    /// The session.
    #[schema(value_type = String)]
    pub session: Hash,
    /// The mapping document (`mapping`: per segment, in manifest order, its HDAG node and
    /// the salt of its id) and the provider's own HDAG (`hdag`, JSON) if it gave one.
    #[schema(value_type = Object)]
    pub opening: trust_protocol::TraceOpening,
}
