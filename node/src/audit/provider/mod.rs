//! The provider's side of a session on a running node: its session and page records, the
//! spending cap, opening a session and following it to the end. Turning an HDAG into a
//! manifest and ciphertexts is [`prepare`]'s, forging honeypots [`honeypot`]'s, sealing
//! segment keys to seats [`keys`]'s.
//!
//! [`Provider::submit`] turns a trace into a session: decomposition (or the provider's
//! HDAG), encryption of every segment under its own key, ciphertexts into the blob store
//! (pinned), the session record (keys, mapping, salts) flushed to sled, and an
//! `OpenSession` transaction. Segments routed to a tier that has too few auditors on this
//! network are left out of the session (and reported), their `depends_on` edges bridged,
//! because the contract fails a session whose seats cannot all be drawn.
//!
//! [`Provider::on_block`] follows the session through decided blocks: when seats are
//! drawn it seals each segment key to that segment's seats and to the seats of the
//! segments that cite it (`DeliverKeys`); when voting is over it opens its honeypots
//! (all of a session's in one `RevealHoneypots`, or a `RevealHoneypot` for a lone one;
//! see [`honeypot`]) and then the mapping commitment (`RevealMapping`). A decided session
//! may be appealed until its appeal window passes: the provider keeps following it, seals
//! the appealed segments' keys (and their premises') to each appeal round's seats, and
//! removes the ciphertexts only once the session is final (`SessionFinal`) or failed.
//!
//! Staffing counts only the auditors the contract could draw (its per-tier index:
//! active, not flagged, bonded at least the tier minimum), never merely registered ones.
//!
//! What it keeps, and for how long: the session record (keys, salts) until the session is
//! final or failed; the page record (segment texts, shown on this node's outcome page)
//! for the newest [`MAX_PAGE_RECORDS`] sessions it opened, older ones pruned as new ones
//! open (their outcome pages then show what the ledger holds, without the texts); the fee
//! book for a day.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use rand::RngCore;
use serde::{Deserialize, Serialize};
use trust_contracts::{Contract, Event, Phase};
use trust_protocol::{
    AccountId, Hash, Salt, TraceOpening,
    hdag::{AbstractionLevel, Hdag, Relationship},
    seal::{KEY_LEN, SealError, SegmentDoc, SegmentDocError, decrypt_segment},
    trace::Trace,
    tx::{Call, QuorumParams, SessionManifest, Tier, Tx},
    units::Ppm,
};

use trust_judging::{
    decompose,
    duties::provider::{ProviderDuty, plan},
    session::{
        DEFAULT_QUORUM,
        exposure::{over_budget_segments, seal_sight},
        honeypot::{self, Bait},
        prepare::{self, MappingEntry, Planted, Restricted},
        terms, tier_index, tier_name,
    },
};

use super::outbox::{Outbox, OutboxError, Sent};
use crate::blobs::{BlobError, BlobStore, kubo::Kubo};

#[cfg(feature = "misbehave")]
pub mod grief;
pub mod keys;
pub mod listing;
pub mod reruns;
pub mod steps;

pub use steps::{StepView, TraceSpan};

/// Most page records kept: opening a session beyond it prunes the oldest (by the height
/// at which it was opened).
pub const MAX_PAGE_RECORDS: usize = 10_000;

/// How many times a submission is prepared again under the next nonce when this node's
/// own duties took the one it read.
const NONCE_RETRIES: u32 = 8;

/// What the provider keeps about an open session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionRecord {
    /// Segment keys, manifest order.
    pub keys: Vec<[u8; KEY_LEN]>,
    /// Blinded segment ids, manifest order.
    pub ids: Vec<Hash>,
    /// `depends_on` per segment.
    pub depends_on: Vec<Vec<u16>>,
    /// The mapping (HDAG node id and salt per segment).
    pub mapping: Vec<MappingEntry>,
    /// Salt of the mapping commitment.
    pub mapping_salt: Salt,
    /// Ciphertext CIDs (pinned while the session runs).
    pub cids: Vec<trust_protocol::cid::Cid>,
    /// (segment, seat) pairs already sent a key.
    pub delivered: BTreeSet<(u16, AccountId)>,
    /// (segment, seat) pairs sent a key again for a seat of an escalation round: the
    /// contract counts a key for the round whose commit window it lands in, so a seat
    /// drawn again needs it again even if the account had it before.
    #[serde(default)]
    pub delivered_again: BTreeSet<(u16, AccountId)>,
    /// (round, segment, seat) sent a key for a seat of an appeal round (round 2 and up):
    /// each appeal round's seats need their keys within that round's commit window.
    #[serde(default)]
    pub delivered_appeal: BTreeSet<(u8, u16, AccountId)>,
    /// Whether the mapping was opened.
    pub mapping_revealed: bool,
    /// The honeypots planted in the session, opened (as the committed set) just before
    /// the mapping.
    #[serde(default)]
    pub honeypots: Vec<Planted>,
    /// Salt of the manifest's honeypot set commitment.
    #[serde(default = "zero_salt")]
    pub honeypot_set_salt: Salt,
    /// Whether the honeypot set's opening was pooled.
    #[serde(default)]
    pub honeypots_revealed: bool,
}

fn zero_salt() -> Salt {
    Salt([0; 32])
}

/// What the provider's own node shows of a session it opened, kept after the session is
/// decided (the ciphertexts and keys are not): the text and HDAG names of every segment,
/// the levels of those left out, and the `decomposes_to` edges, none of which is on the
/// ledger. Indices are the outcome's: session segments in manifest order, then the
/// left-out ones in manifest order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRecord {
    /// HDAG node id per segment (`honeypot:<node>` for a planted one).
    pub nodes: Vec<String>,
    /// The segment text per segment (what its seats read as the claim).
    pub texts: Vec<String>,
    /// Abstraction level of each left-out segment (session segments carry theirs on the
    /// ledger).
    pub left_out_levels: Vec<AbstractionLevel>,
    /// `decomposes_to` edges (parent, part) between segments of the session.
    pub decomposes: Vec<(u16, u16)>,
    /// The problem statement: the context every seat judged in, not a segment.
    #[serde(default)]
    pub problem: String,
    /// For a formal proof cut by its structure: the thinking as the model wrote it, and
    /// per segment (same order as `nodes`) the line of it where that segment's step
    /// begins, so the page can show each step's verdict at its line.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub proof: Option<ProofText>,
    /// The mapping document (node and salt per segment) and the provider's own HDAG if
    /// it gave one: what `proof export --opening` hands to whoever holds the trace
    /// ([`opening`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub opening: Option<TraceOpening>,
    /// Per segment (same order as `nodes`), where its text sits in the submitted trace
    /// (`None` for a honeypot and for a text the trace does not hold verbatim). Empty in
    /// records kept before spans were.
    #[serde(default)]
    pub spans: Vec<Option<TraceSpan>>,
    /// The tier each left-out segment would have gone to.
    #[serde(default)]
    pub left_out_tiers: Vec<Tier>,
    /// For an agent transcript, its turns (tool calls, messages, the reasoning between
    /// them) as byte ranges of the thinking, so the page and `query` show the steps under
    /// the turn they sit in. Empty for a plain trace, and in records kept before turns were.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub turns: Vec<trust_judging::preview::turns::Turn>,
    /// Per segment (same order as `nodes`), what this node got re-running a tool call's
    /// code in its own sandbox after the session opened ([`reruns`]): the output, or why
    /// it was not re-run. Empty until the re-runs are done, and on a node without a
    /// Computer judge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reruns: Vec<Option<String>>,
}

/// The prefix of a planted honeypot's name (`honeypot:<node>`).
pub const HONEYPOT_PREFIX: &str = "honeypot:";

/// What a page record is built from besides the session's preparation: the submitted
/// trace (where each step sits in it; the thinking of a formal proof, shown with each
/// step's verdict) and the provider's own HDAG.
struct Sources<'a> {
    trace: Option<&'a Trace>,
    hdag_json: Option<&'a str>,
}

/// A formal proof's text on the provider's page (see [`PageRecord::proof`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofText {
    /// The thinking, verbatim.
    pub text: String,
    /// Per segment: the 1-based line of `text` where its step begins (`None` for the
    /// structure segment and anything that is no step).
    pub lines: Vec<Option<u32>>,
}

/// What `submit` reports.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Submitted {
    /// The session id.
    #[schema(value_type = String)]
    pub session: Hash,
    /// The `OpenSession` transaction id.
    #[schema(value_type = String)]
    pub tx: Hash,
    /// Segments in the session in manifest order (segment `i` of the outcome is entry
    /// `i`): (HDAG node id, tier).
    #[schema(value_type = Vec<Vec<String>>)]
    pub segments: Vec<(String, Tier)>,
    /// Segments left out: (HDAG node id, tier, why).
    #[schema(value_type = Vec<Vec<String>>)]
    pub left_out: Vec<(String, Tier, String)>,
    /// Fee escrowed.
    pub fee: u64,
    /// Honeypots planted among the segments (named `honeypot:<node>` in `segments`; the
    /// outcome leaves them out of the trace verdict).
    pub honeypots: usize,
}

/// A session prepared but not stored or sent ([`Provider::plan`], [`Provider::submit_with`]).
struct Preparation {
    hdag: Hdag,
    restricted: Restricted,
    prepared: prepare::PreparedSession,
    resolved: terms::Resolved,
    left_out: Vec<(String, Tier, String)>,
    staffed: [usize; 3],
    /// Auditors of each tier but this node's account, whatever their domain: who an
    /// appeal may draw from.
    in_tier: [usize; 3],
}

impl Preparation {
    fn plan(&self, params: &trust_contracts::Params) -> Plan {
        let m = &self.prepared.manifest;
        Plan {
            terms: TermsView::of(&m.quorum, &m.terms, &m.domain, params),
            segments: self
                .prepared
                .mapping
                .iter()
                .zip(&m.segments)
                .map(|(map, e)| PlannedSegment {
                    node: map.node.clone(),
                    tier: e.tier,
                    seats: u8::try_from(self.resolved.seats(e.tier)).unwrap_or(u8::MAX),
                })
                .collect(),
            left_out: self.left_out.clone(),
            fee: m.fee,
            honeypot_bond: trust_contracts::honeypot_bond(params, m.segments.len()).unwrap_or(0),
            honeypots: self.prepared.honeypots.len(),
            auditors: self.staffed,
            appeals: Tier::ALL
                .into_iter()
                .filter(|t| m.segments.iter().any(|e| e.tier == *t))
                .map(|tier| {
                    let k = self.resolved.quorum.k(tier);
                    let seated = self.resolved.seats(tier);
                    // A verdict all its seats reached, racing seats included: the appeal
                    // the contract makes sure can be staffed before it admits them.
                    let held_by = u16::try_from(seated).unwrap_or(u16::MAX);
                    let fresh = trust_contracts::seats_of_an_appeal(k, held_by);
                    AppealNeed {
                        tier,
                        fresh,
                        in_all: usize::from(fresh).saturating_add(seated),
                        auditors: self.in_tier.get(tier_index(tier)).copied().unwrap_or(0),
                    }
                })
                .collect(),
            // The session page reads the same function from the stored manifest.
            exposure: exposure(m),
        }
    }
}

/// What one auditor account of the session `m` describes could read, by the contract's
/// rule: its exposure budget in segments when its terms set one (below the whole trace,
/// as the contract's draw enforces it), else the most one account could be drawn to read.
/// The one computation behind `submit --plan` and the session page.
pub fn exposure(m: &SessionManifest) -> ExposureView {
    let trace = m.segments.len().saturating_add(m.left_out.len());
    let budget = (m.terms.max_exposure < trust_protocol::units::Ppm::ONE)
        .then(|| m.terms.exposure_cap(trace));
    ExposureView {
        trace_segments: trace,
        budget,
        most_seen: trust_judging::session::exposure::most_seen(m, budget),
    }
}

/// One segment of a [`Plan`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct PlannedSegment {
    /// Its HDAG node id (`honeypot:<node>` for a planted one).
    pub node: String,
    /// The tier that judges it.
    #[schema(value_type = String)]
    pub tier: Tier,
    /// Seats drawn for it (`k + Δ`).
    pub seats: u8,
}

/// How much of a trace one auditor may see.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct ExposureView {
    /// Segments of the trace (the session's and the left-out ones).
    pub trace_segments: usize,
    /// The budget in segments, when the session set one.
    pub budget: Option<usize>,
    /// The most segments one auditor could read (its seats' segments, the premises and
    /// left-out text sealed with them).
    pub most_seen: usize,
}

/// The terms a session runs (or would run) under, as people read them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct TermsView {
    /// Seats whose votes count per segment (`k`): Computer, LLM, Human.
    pub seats: [u8; 3],
    /// Racing seats beyond `k` (`Δ`).
    pub racing_seats: u8,
    /// Seat quorum `τ`.
    pub tau: f64,
    /// Trace quorum `β`.
    pub beta: f64,
    /// Segment weight per tier: Computer, LLM, Human.
    pub tier_weights: [u32; 3],
    /// The tiers that may judge: `computer`, `llm`, `human`.
    pub tiers: Vec<String>,
    /// Expertise domain.
    pub domain: String,
    /// Whether only auditors declaring the domain are drawn.
    pub domain_required: bool,
    /// Blocks of each commit window.
    pub commit_window: u64,
    /// Blocks of each reveal window.
    pub reveal_window: u64,
    /// The exposure budget, as a share of the trace (1: none).
    pub max_exposure: f64,
}

// Its fractions are parts per million over 1e6: never NaN.
impl Eq for TermsView {}

impl TermsView {
    /// The terms of a manifest's `quorum`, `terms` and `domain` on a network with `params`.
    pub fn of(
        quorum: &QuorumParams,
        terms: &trust_protocol::tx::SessionTerms,
        domain: &str,
        params: &trust_contracts::Params,
    ) -> Self {
        let window = |w: u16, default: u64| if w == 0 { default } else { u64::from(w) };
        Self {
            seats: quorum.k,
            racing_seats: quorum.extra_seats,
            tau: f64::from(quorum.tau.0) / 1e6,
            beta: f64::from(quorum.beta.0) / 1e6,
            tier_weights: terms.tier_weights,
            tiers: Tier::ALL
                .into_iter()
                .filter(|t| terms.allows(*t))
                .map(|t| steps::tier_word(t).to_string())
                .collect(),
            domain: domain.to_string(),
            domain_required: terms.domain_required,
            commit_window: window(terms.commit_window, params.commit_window),
            reveal_window: window(terms.reveal_window, params.reveal_window),
            max_exposure: f64::from(terms.max_exposure.0) / 1e6,
        }
    }
}

/// What a session would be, before it is submitted (`submit --plan`,
/// `POST /v1/sessions/plan`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Plan {
    /// The terms it would run under.
    pub terms: TermsView,
    /// Its segments in manifest order, with their tier and seats.
    pub segments: Vec<PlannedSegment>,
    /// Segments left out: (HDAG node id, tier, why).
    #[schema(value_type = Vec<Vec<String>>)]
    pub left_out: Vec<(String, Tier, String)>,
    /// The fee it would escrow.
    pub fee: u64,
    /// The honeypot bond it would escrow (returned unless its honeypots are disputed).
    pub honeypot_bond: u64,
    /// Honeypots it would plant.
    pub honeypots: usize,
    /// Auditors the draw could take per tier (Computer, LLM, Human), the provider's own
    /// account and, with a required domain, those not declaring it excluded.
    pub auditors: [usize; 3],
    /// How much of the trace one auditor could see.
    pub exposure: ExposureView,
    /// What an appeal of one of its segments would need, per tier it uses.
    pub appeals: Vec<AppealNeed>,
}

/// What an appeal of a segment of one tier needs: `fresh` seats (2k + 1, or twice the
/// segment's seats plus one when racing seats are asked and they all reach the verdict;
/// none of whom sat on the segment), so `in_all` auditors of the tier (the fresh ones and
/// the seats that judged it), of whom the network has `auditors`. With fewer, the appeal
/// draws from a higher tier the terms allow, or is refused (and a session asking for
/// racing seats is refused before it is paid: `RacingSeatsUnappealable`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct AppealNeed {
    /// The tier of the appealed segment.
    #[schema(value_type = String)]
    pub tier: Tier,
    /// Fresh seats the appeal draws.
    pub fresh: u8,
    /// Auditors of the tier it takes: the fresh seats and those the segment had.
    pub in_all: usize,
    /// Auditors of the tier on the network now (this node's account excluded).
    pub auditors: usize,
}

/// How much this node may spend on session fees as a provider (`max_fee_per_session`,
/// `max_fee_per_day` in `config.toml`; `None`: no cap).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SpendingCap {
    /// Largest fee of one session.
    pub per_session: Option<u64>,
    /// Largest sum of the fees of the sessions opened in the last 24 hours.
    pub per_day: Option<u64>,
}

/// Seconds in the window of [`SpendingCap::per_day`].
pub const SPENDING_WINDOW_SECS: u64 = 24 * 60 * 60;

/// Why [`Provider::submit`] opened no session. Either way nothing was stored or sent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// The trace, the HDAG or the network's auditors do not allow a session.
    #[error("{0}")]
    Refused(String),
    /// The session's fee is over this node's [`SpendingCap`].
    #[error("{0}")]
    OverCap(String),
    /// The session's settings are out of the network's limits.
    #[error("{0}")]
    Terms(#[source] crate::Cause),
    /// A tier has auditors, but fewer than the seats asked for.
    #[error("{0}")]
    Unstaffable(String),
    /// The contract would refuse the session's terms (a term below the network's floor,
    /// a required domain whose pool is too small, weights that are not the terms'):
    /// nothing was signed or charged.
    #[error("refused before signing: {0}")]
    Network(#[from] trust_contracts::TxError),
    /// The trace cannot be read.
    #[error("trace: {0}")]
    Trace(#[from] trust_protocol::trace::TraceError),
    /// The provider's HDAG cannot be used, or the trace cannot be decomposed.
    #[error("{}: {source}", if *.provided { "hdag" } else { "decomposition" })]
    Decompose {
        /// Whether the HDAG was the provider's own.
        provided: bool,
        /// Why.
        source: decompose::DecomposeError,
    },
    /// The session cannot be prepared from the HDAG.
    #[error("{0}")]
    Prepare(#[from] prepare::PrepareError),
    /// The prepared manifest breaks a wire-format rule.
    #[error("{0}")]
    Manifest(#[from] trust_protocol::tx::TxFormatError),
    /// The blob store refused a ciphertext.
    #[error("{0}")]
    Blob(#[from] BlobError),
    /// The provider's own records (or handing the session to the outbox).
    #[error(transparent)]
    Record(#[from] RecordError),
    /// A label or idempotency key that cannot be taken, or a key reused for another
    /// request.
    #[error(transparent)]
    Listing(#[from] listing::ListingError),
    /// The list of this node's sessions cannot be read or written.
    #[error("the list of this node's sessions: {0}")]
    ListingStore(#[from] listing::StoreError),
}

/// Why the provider could not read or write its own records (sled, JSON, the blob store,
/// the sealed blocks it reads its page record from), or hand a session's `OpenSession` to
/// the outbox.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RecordError {
    /// The database failed.
    #[error(transparent)]
    Db(#[from] sled::Error),
    /// A record did not encode or decode.
    #[error(transparent)]
    Json(#[from] serde_json::Error),
    /// The blob store failed.
    #[error(transparent)]
    Blobs(#[from] BlobError),
    /// A prepared block did not open with its own key.
    #[error(transparent)]
    Seal(#[from] SealError),
    /// A prepared block did not hold a segment document.
    #[error(transparent)]
    Doc(#[from] SegmentDocError),
    /// A left-out node is missing from the HDAG it was cut from.
    #[error("a left-out node is not in the HDAG")]
    LeftOutMissing,
    /// The blob store keyed a block under another CID than the manifest's.
    #[error("blob store computed another CID")]
    CidMismatch,
    /// The outbox did not take the `OpenSession`.
    #[error(transparent)]
    Outbox(OutboxError),
}

impl From<String> for SubmitError {
    fn from(e: String) -> Self {
        Self::Refused(e)
    }
}

impl From<&str> for SubmitError {
    fn from(e: &str) -> Self {
        Self::Refused(e.to_string())
    }
}

/// The provider role of this node.
#[derive(Debug, Clone)]
pub struct Provider {
    outbox: Outbox,
    blobs: BlobStore,
    kubo: Option<Arc<Kubo>>,
    book: sled::Tree,
    pages: sled::Tree,
    /// The page records by age: key `height (big-endian) || session`, no value.
    pages_by_age: sled::Tree,
    /// Fees of the sessions this node opened: session id -> (unix seconds, fee).
    spent: sled::Tree,
    /// The sessions this node opened, with their labels and idempotency keys.
    listing: listing::Listing,
    /// Held through a request that carries an idempotency key, so that two retries
    /// racing each other open one session.
    keyed: Arc<tokio::sync::Mutex<()>>,
    /// Held from the cap check until the fee is booked, so two submissions cannot both
    /// pass a cap that only one fits under.
    spending: Arc<tokio::sync::Mutex<()>>,
    cap: SpendingCap,
    honeypots: usize,
    quorum: QuorumParams,
    /// This node's `[session]` defaults (a request's settings win over them).
    defaults: terms::SessionOptions,
    /// Re-runs this node's own tool calls for its session pages ([`reruns`]), when it
    /// has a Computer judge.
    reruns: Option<reruns::Reruns>,
    /// A test behaviour: a griefing provider (test builds only, see `audit::misbehave`).
    #[cfg(feature = "misbehave")]
    griefing: bool,
    /// A test behaviour: seats whose keys this provider seals to a key that is not theirs
    /// (test builds only), so that they cannot open them.
    #[cfg(feature = "misbehave")]
    missealed: std::collections::BTreeSet<AccountId>,
}

/// Seconds since the Unix epoch (0 if the clock is before it).
fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl Provider {
    /// The provider role over `db`.
    pub fn open(outbox: Outbox, blobs: BlobStore, db: &sled::Db) -> Result<Self, sled::Error> {
        Ok(Self {
            outbox,
            blobs,
            kubo: None,
            book: db.open_tree("provider/sessions")?,
            pages: db.open_tree("provider/pages")?,
            pages_by_age: db.open_tree("provider/pages-by-age")?,
            spent: db.open_tree("provider/spent")?,
            listing: listing::Listing::open(db)?,
            keyed: Arc::new(tokio::sync::Mutex::new(())),
            spending: Arc::new(tokio::sync::Mutex::new(())),
            cap: SpendingCap::default(),
            honeypots: honeypot::DEFAULT_PER_SESSION,
            quorum: DEFAULT_QUORUM,
            defaults: terms::SessionOptions::default(),
            reruns: None,
            #[cfg(feature = "misbehave")]
            griefing: false,
            #[cfg(feature = "misbehave")]
            missealed: std::collections::BTreeSet::new(),
        })
    }

    /// Seals `seat`'s keys to a key that is not its own, on purpose (test builds only):
    /// the seat is keyed on record and cannot open them.
    #[cfg(feature = "misbehave")]
    pub fn with_missealing(mut self, seat: AccountId) -> Self {
        self.missealed.insert(seat);
        self
    }

    /// Griefs on purpose as a provider when `griefing` ([`grief`], test builds only).
    #[cfg(feature = "misbehave")]
    pub fn with_griefing(mut self, griefing: bool) -> Self {
        self.griefing = griefing;
        self
    }

    /// The honeypots to plant in a session of `r`: forged ones, or a griefing provider's
    /// false ones (as many as a session may open).
    fn baits(
        &self,
        r: &Restricted,
        wanted: usize,
        cap: usize,
        rng: &mut impl RngCore,
    ) -> Vec<Bait> {
        #[cfg(feature = "misbehave")]
        if self.griefing {
            let baits = grief::false_baits(r, cap);
            tracing::warn!(
                planted = baits.len(),
                "test behaviour griefing-provider: true steps planted as known errors"
            );
            return baits;
        }
        let _ = cap;
        if r.proof.is_some() {
            // A formal proof's steps are checked exactly against its structure; an
            // altered copy of a step would carry no structure and tell itself apart.
            return Vec::new();
        }
        honeypot::forge(r, wanted, rng)
    }

    /// Asks for `k` seats per segment in every tier (instead of [`DEFAULT_QUORUM`]'s 3).
    pub fn with_seats_per_segment(mut self, k: u8) -> Self {
        self.quorum.k = [k; 3];
        self
    }

    /// Asks for `k` seats per segment of `tier` (after [`Provider::with_seats_per_segment`]).
    pub fn with_tier_seats(mut self, tier: Tier, k: u8) -> Self {
        self.quorum.k[tier_index(tier)] = k;
        self
    }

    /// This node's defaults for the sessions it opens (`[session]` in `config.toml`).
    pub fn with_session_defaults(mut self, defaults: terms::SessionOptions) -> Self {
        self.defaults = defaults;
        self
    }

    /// This node's `[session]` defaults.
    pub fn session_defaults(&self) -> &terms::SessionOptions {
        &self.defaults
    }

    /// Plants up to `n` honeypots in each session it opens (0: none; capped at
    /// [`honeypot::MAX_PER_SESSION`]).
    pub fn with_honeypots(mut self, n: usize) -> Self {
        self.honeypots = n.min(honeypot::MAX_PER_SESSION);
        self
    }

    /// Refuses sessions whose fee is over `cap`.
    pub fn with_spending_cap(mut self, cap: SpendingCap) -> Self {
        self.cap = cap;
        self
    }

    /// Fees of the sessions opened in the last [`SPENDING_WINDOW_SECS`] before `now` (unix
    /// seconds); older records are dropped on the way.
    pub fn spent_since_yesterday(&self, now: u64) -> Result<u64, RecordError> {
        let mut sum = 0u64;
        for item in self.spent.iter() {
            let (k, v) = item?;
            let (at, fee): (u64, u64) = serde_json::from_slice(&v)?;
            if at.saturating_add(SPENDING_WINDOW_SECS) <= now {
                self.spent.remove(k)?;
            } else {
                sum = sum.saturating_add(fee);
            }
        }
        Ok(sum)
    }

    /// Refuses `fee` if it is over the cap, given what was spent in the last day.
    fn check_cap(&self, fee: u64, now: u64) -> Result<(), SubmitError> {
        if let Some(max) = self.cap.per_session
            && fee > max
        {
            return Err(SubmitError::OverCap(format!(
                "the session's fee of {fee} is over this node's cap of {max} per session (`max_fee_per_session` in config.toml's [provider])"
            )));
        }
        // Also prunes the fees older than a day, so the record stays a day's worth of
        // sessions whether or not a daily cap is set.
        let spent = self.spent_since_yesterday(now)?;
        if let Some(max) = self.cap.per_day
            && spent.saturating_add(fee) > max
        {
            return Err(SubmitError::OverCap(format!(
                "the session's fee of {fee} on top of the {spent} spent in the last 24 hours is over this node's cap of {max} per day (`max_fee_per_day` in config.toml's [provider])"
            )));
        }
        Ok(())
    }

    /// Re-runs the tool calls of each session this node opens through `judge`, for its
    /// session pages ([`reruns`]). Needs a tokio runtime.
    pub fn with_reruns(mut self, judge: crate::audit::computer::ComputerJudge) -> Self {
        self.reruns = Some(reruns::Reruns::start(self.pages.clone(), judge));
        self
    }

    /// Also stores ciphertexts in this external IPFS node.
    pub fn with_kubo(mut self, kubo: Arc<Kubo>) -> Self {
        self.kubo = Some(kubo);
        self
    }

    fn load(&self, session: &Hash) -> Option<SessionRecord> {
        let v = self.book.get(session.as_ref()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    fn store(&self, session: &Hash, r: &SessionRecord) -> Result<(), RecordError> {
        let bytes = serde_json::to_vec(r)?;
        self.book.insert(session.as_ref(), bytes)?;
        self.book.flush()?;
        Ok(())
    }

    /// Books a session's `fee`, paid at `now`, against the daily cap.
    fn book_fee(&self, session: &Hash, now: u64, fee: u64) -> Result<(), RecordError> {
        let v = serde_json::to_vec(&(now, fee))?;
        self.spent.insert(session.as_ref(), v)?;
        Ok(())
    }

    /// Opens a session as [`Provider::submit_with`] does, under `labels` and, if given, an
    /// idempotency `key` ([`listing`]): a key seen before with the same request answers
    /// the session that request opened (`true`: nothing new was opened or charged); with
    /// another request it is refused. The session goes on this node's list either way.
    pub async fn open_listed(
        &self,
        trace_text: &str,
        hdag_json: Option<&str>,
        options: &terms::SessionOptions,
        labels: &BTreeMap<String, String>,
        key: Option<&str>,
        contract: &Contract,
    ) -> Result<(Submitted, bool), SubmitError> {
        listing::check_labels(labels)?;
        if let Some(k) = key {
            listing::check_key(k)?;
        }
        let terms = serde_json::to_string(options).map_err(RecordError::Json)?;
        let request = listing::request_hash(trace_text, hdag_json, &terms, labels);
        let _one_at_a_time = match key {
            Some(_) => Some(self.keyed.lock().await),
            None => None,
        };
        if let Some(k) = key
            && let Some(first) = self.listing.by_key(k)?
        {
            if first.request == request {
                return Ok((first.submitted, true));
            }
            return Err(listing::ListingError::KeyReused {
                key: k.to_string(),
                session: first.submitted.session,
            }
            .into());
        }
        let submitted = self
            .submit_with(trace_text, hdag_json, options, contract)
            .await?;
        let entry = listing::Listed {
            submitted: submitted.clone(),
            labels: labels.clone(),
            key: key.map(str::to_string),
            request,
            opened_ms: unix_now().saturating_mul(1000),
        };
        // The session is open and paid: a list that cannot be written is logged, not
        // turned into an error the client would retry (and pay again) on.
        if let Err(e) = self.listing.insert(&entry, listing::MAX_LISTED) {
            tracing::error!(session = %submitted.session, error = %e, "session opened but not listed");
        }
        Ok((submitted, false))
    }

    /// The sessions this node opened, newest first: those matching `filter`, opened
    /// before `before_ms`, at most `limit`.
    pub fn listed(
        &self,
        filter: &listing::LabelFilter,
        before_ms: Option<u64>,
        limit: usize,
    ) -> Result<Vec<listing::Listed>, listing::StoreError> {
        self.listing.list(filter, before_ms, limit)
    }

    /// Opens a session for `trace_text` (JSON or the paper's headings), with the
    /// provider's HDAG JSON if given, on this node's defaults.
    pub async fn submit(
        &self,
        trace_text: &str,
        hdag_json: Option<&str>,
        contract: &Contract,
    ) -> Result<Submitted, SubmitError> {
        self.submit_with(
            trace_text,
            hdag_json,
            &terms::SessionOptions::default(),
            contract,
        )
        .await
    }

    /// What a session of `trace_text` with `options` (over this node's defaults) would
    /// be, without storing or sending anything: each segment's tier and seats or why it
    /// is left out, the fee, and the most of the trace one auditor could see.
    pub fn plan(
        &self,
        trace_text: &str,
        hdag_json: Option<&str>,
        options: &terms::SessionOptions,
        contract: &Contract,
    ) -> Result<Plan, SubmitError> {
        let mut rng = rand::rngs::OsRng;
        let p = self.prepare_session(trace_text, hdag_json, options, contract, &mut rng)?;
        Ok(p.plan(&contract.state().params))
    }

    /// Resolves `options` over this node's defaults: a tier's seats not asked for
    /// anywhere are the node's `seats_per_segment` ones.
    fn resolve(
        &self,
        options: &terms::SessionOptions,
        contract: &Contract,
    ) -> Result<terms::Resolved, SubmitError> {
        let mut r = options
            .over(&self.defaults)
            .resolve(&contract.state().params)
            .map_err(|e| SubmitError::Terms(e.into()))?;
        for t in Tier::ALL {
            let i = tier_index(t);
            if !r.explicit_seats.get(i).copied().unwrap_or(false)
                && let (Some(slot), Some(k)) = (r.quorum.k.get_mut(i), self.quorum.k.get(i))
            {
                *slot = *k;
            }
        }
        Ok(r)
    }

    /// Decomposes, checks the settings against the network, leaves out what cannot be
    /// staffed (or would break the exposure budget), plants honeypots and prepares the
    /// manifest and ciphertexts: everything of [`Provider::submit_with`] but storing and
    /// sending.
    fn prepare_session(
        &self,
        trace_text: &str,
        hdag_json: Option<&str>,
        options: &terms::SessionOptions,
        contract: &Contract,
        rng: &mut impl RngCore,
    ) -> Result<Preparation, SubmitError> {
        let trace = Trace::parse(trace_text)?;
        let hdag =
            match hdag_json {
                Some(j) => decompose::from_provider(&trace, j).map_err(|source| {
                    SubmitError::Decompose {
                        provided: true,
                        source,
                    }
                })?,
                None => decompose::decompose(&trace, &decompose::Options::default()).map_err(
                    |source| SubmitError::Decompose {
                        provided: false,
                        source,
                    },
                )?,
            };
        let resolved = self.resolve(options, contract)?;
        let me = self.outbox.key().public();
        let st = contract.state();
        // Only auditors the contract can draw: registered but unbonded, flagged or
        // deactivated ones would fail the session at the draw; with a required domain,
        // only those declaring it.
        let domain = resolved.domain.as_str();
        let in_tier = Tier::ALL.map(|t| st.eligible(t).iter().filter(|id| **id != me).count());
        let staffed = Tier::ALL.map(|t| {
            st.eligible(t)
                .iter()
                .filter(|id| **id != me)
                .filter(|id| {
                    !resolved.terms.domain_required
                        || st
                            .auditors
                            .get(*id)
                            .is_some_and(|a| a.expertise.iter().any(|e| e == domain))
                })
                .count()
        });
        let used: BTreeSet<Tier> = hdag
            .nodes
            .iter()
            .filter(|n| n.kind != decompose::PROBLEM_KIND)
            .map(|n| Tier::from(n.primary_auditor))
            .collect();
        let declaring = if resolved.terms.domain_required {
            format!(" declaring {domain}")
        } else {
            String::new()
        };
        let mut tier_out: BTreeMap<Tier, String> = BTreeMap::new();
        for t in Tier::ALL {
            let (i, need) = (tier_index(t), resolved.seats(t));
            let have = staffed.get(i).copied().unwrap_or(0);
            if !resolved.terms.allows(t) {
                tier_out.insert(
                    t,
                    format!(
                        "the {} tier is not allowed by this session's terms",
                        tier_name(t)
                    ),
                );
            } else if have < need {
                let explicit = resolved.explicit_seats.get(i).copied().unwrap_or(false);
                if explicit && have > 0 && used.contains(&t) {
                    return Err(SubmitError::Unstaffable(format!(
                        "k = {} {} seats asked{}, {have} {} auditors{declaring} registered",
                        resolved.quorum.k(t),
                        tier_name(t),
                        match resolved.quorum.extra_seats {
                            0 => String::new(),
                            x => format!(" with {x} racing seats"),
                        },
                        tier_name(t),
                    )));
                }
                let why = if have == 0 {
                    format!("no {} auditors{declaring} on this network", tier_name(t))
                } else {
                    format!(
                        "fewer than {need} {} auditors{declaring} on this network",
                        tier_name(t)
                    )
                };
                tier_out.insert(t, why);
            }
        }
        // The claims in words of a tier nobody staffs (no LLM auditors, or the LLM tier
        // not allowed) go to people where the Human tier is staffed and allowed.
        let mut hdag = hdag;
        let to_people = prepare::route_to_people(&mut hdag, |t| !tier_out.contains_key(&t));
        if to_people > 0 {
            tracing::info!(
                claims = to_people,
                "no LLM auditor takes this trace's claims in words: the Human tier judges them"
            );
        }
        let budgeted = resolved.terms.max_exposure < Ppm::ONE;
        let wanted = self.honeypots.min(usize::from(st.params.max_honeypots));
        let cap = usize::from(st.params.max_honeypots).min(honeypot::MAX_PER_SESSION);
        // Under an exposure budget, segments the draw could not staff within it are left
        // out, and the session prepared again without them (a left-out segment's text
        // then travels with the segments resting on it, which the next pass counts).
        let mut over_budget: BTreeSet<String> = BTreeSet::new();
        let mut baits_allowed = wanted;
        // A formal proof's plan, read once for every pass below.
        let plan = decompose::proof::plan_of(&trace)
            .and_then(Result::ok)
            .map(std::sync::Arc::new);
        loop {
            let restricted = prepare::restrict_nodes(&hdag, |n| {
                !tier_out.contains_key(&Tier::from(n.primary_auditor))
                    && !over_budget.contains(&n.id)
            })
            .with_proof(plan.clone());
            // Under a budget, a segment whose seats would read segments the contract does
            // not count (older premises as givens, replayed cells past its premises) is
            // left out: the budget holds for what is sealed, not only what is named.
            if budgeted {
                let before = over_budget.len();
                over_budget.extend(trust_judging::session::exposure::hidden_sight(&restricted));
                if over_budget.len() > before {
                    continue;
                }
            }
            if restricted.hdag.nodes.is_empty() {
                return Err(format!(
                    "no segment can be audited here: auditors{declaring} per tier (computer, llm, human) = {staffed:?}, {} needed per segment{}",
                    resolved.seats(Tier::Computer),
                    if over_budget.is_empty() { "" } else { ", within the exposure budget" }
                )
                .into());
            }
            let baits = self.baits(&restricted, baits_allowed, cap, rng);
            if baits.len() < baits_allowed && over_budget.is_empty() {
                tracing::info!(
                    wanted = baits_allowed,
                    planted = baits.len(),
                    "fewer honeypots than configured: the checker could not refute enough altered steps of this trace"
                );
            }
            let mut prepared = prepare::prepare_with(
                &restricted,
                &baits,
                resolved.quorum.clone(),
                resolved.weights,
                0,
                &resolved.domain,
                rng,
            )?;
            prepared.manifest.terms = resolved.terms.clone();
            // The contract's rule: a share of the session's segments (honeypots among
            // them: a seat that reads one reads a copy of a real step) and left-out ones.
            let m = &prepared.manifest;
            let budget = budgeted.then(|| {
                resolved
                    .terms
                    .exposure_cap(m.segments.len().saturating_add(m.left_out.len()))
            });
            if budget.is_some() {
                seal_sight(&mut prepared, &restricted);
            }
            prepared.manifest.validate()?;
            let over = match budget {
                Some(b) => over_budget_segments(&prepared.manifest, &staffed, &resolved, b),
                None => Vec::new(),
            };
            if !over.is_empty() {
                let before = over_budget.len();
                for i in over {
                    match prepared.mapping.get(i).map(|m| m.node.as_str()) {
                        // A honeypot, or a worded honeypot's OPERATION: one honeypot fewer.
                        Some(n)
                            if n.starts_with(HONEYPOT_PREFIX)
                                || n.starts_with("calculation-of-honeypot:") =>
                        {
                            baits_allowed = baits_allowed.saturating_sub(1);
                        }
                        Some(n) => {
                            over_budget.insert(n.to_string());
                        }
                        None => {}
                    }
                }
                if over_budget.len() > before || baits_allowed < wanted {
                    continue;
                }
            }
            let least = trust_contracts::minimum_fee(&st.params, &prepared.manifest)
                .ok_or("fee overflows")?;
            let fee = match resolved.fee {
                Some(f) if f < least => {
                    return Err(SubmitError::Terms(format!(
                        "fee {f} is below this session's least fee of {least} (one reward of {} per counted seat)",
                        st.params.reward
                    ).into()));
                }
                Some(f) => f,
                None => least,
            };
            prepared.manifest.fee = fee;
            // The network's floors, as the contract will check them: a session below one
            // is refused here, before anything is signed, stored or charged.
            trust_contracts::check_terms(st, &me, &prepared.manifest)?;
            let left_out = restricted
                .dropped
                .iter()
                .map(|d| {
                    let why = if over_budget.contains(&d.id) {
                        format!(
                            "an auditor drawn for it could see more than the exposure budget of {} of the trace's segments",
                            budget.unwrap_or(0)
                        )
                    } else {
                        tier_out.get(&d.tier).cloned().unwrap_or_else(|| "left out".into())
                    };
                    (d.id.clone(), d.tier, why)
                })
                .collect();
            return Ok(Preparation {
                hdag,
                restricted,
                prepared,
                resolved,
                left_out,
                staffed,
                in_tier,
            });
        }
    }

    /// Opens a session for `trace_text` (JSON or the paper's headings), with the
    /// provider's HDAG JSON if given, and `options` over this node's defaults. Settings out
    /// of the network's limits, or seats a tier cannot staff, are refused before anything
    /// is stored or charged. With an external IPFS node configured, the ciphertexts go
    /// there first; if it fails, nothing is stored and no session opens.
    pub async fn submit_with(
        &self,
        trace_text: &str,
        hdag_json: Option<&str>,
        options: &terms::SessionOptions,
        contract: &Contract,
    ) -> Result<Submitted, SubmitError> {
        let mut rng = rand::rngs::OsRng;
        let Preparation {
            hdag,
            restricted,
            prepared,
            left_out,
            ..
        } = self.prepare_session(trace_text, hdag_json, options, contract, &mut rng)?;
        let st = contract.state();
        let fee = prepared.manifest.fee;
        // The page shows where each step sits in the trace (a formal proof with each
        // step's verdict at its line).
        let trace = Trace::parse(trace_text).ok();
        // From the cap check until the fee is booked, no other submission runs.
        let _spending = self.spending.lock().await;
        let now = unix_now();
        self.check_cap(fee, now)?;
        if let Some(kubo) = &self.kubo {
            for (cid, bytes) in &prepared.blocks {
                let got = kubo.put(bytes).await?;
                if got != *cid {
                    return Err(format!("{} stored {cid} as {got}", kubo.url()).into());
                }
            }
        }
        // The session id is derived from the nonce the `OpenSession` will carry. This
        // node's own duties (key deliveries, disclosures) may take that nonce between the
        // read and the signature: then the session is prepared again under the next one,
        // a few times, rather than the user told to retry.
        let me = self.outbox.key().public();
        let cids: Vec<_> = prepared.blocks.iter().map(|(cid, _)| *cid).collect();
        let mut tries = 0u32;
        let (session, tx) = loop {
            let nonce = self
                .outbox
                .next_nonce()
                .await
                .map_err(RecordError::Outbox)?;
            let session = Tx::session_id(&me, nonce);
            let opened = match self.keep_page_record(
                &session,
                st.height,
                &hdag,
                &restricted,
                &prepared,
                Sources {
                    trace: trace.as_ref(),
                    hdag_json,
                },
            ) {
                Ok(()) => self.keep_and_open(&session, nonce, &prepared).await,
                Err(e) => Err(e),
            };
            match opened {
                Ok(tx) => break (session, tx),
                Err(e) => {
                    // Nothing of a refused session stays behind: blocks, pins, records.
                    let _ = self.blobs.release(&session);
                    let _ = self.book.remove(session.as_ref());
                    self.drop_page_record(&session);
                    if matches!(e, RecordError::Outbox(OutboxError::NonceTaken))
                        && tries < NONCE_RETRIES
                    {
                        tries += 1;
                        tracing::debug!(%session, tries, "the nonce was taken by this node's own duty; opening under the next one");
                        continue;
                    }
                    tracing::warn!(%session, error = %e, "session not opened");
                    return Err(e.into());
                }
            }
        };
        if let (Some(reruns), Some(record)) = (&self.reruns, self.page_record(&session)) {
            reruns.ask(session, &record, &restricted.cells);
        }
        if let Err(e) = self.book_fee(&session, now, fee) {
            tracing::warn!(%session, error = %e, "the session's fee was not booked against the spending cap");
        }
        let q = &prepared.manifest.quorum;
        tracing::info!(%session, segments = cids.len(), honeypots = prepared.honeypots.len(), left_out = restricted.dropped.len(), fee, k = ?q.k, racing = q.extra_seats, tau = q.tau.0, beta = q.beta.0, domain = %prepared.manifest.domain, "session opened");
        Ok(Submitted {
            session,
            tx,
            // In manifest order: segment i of the outcome is `segments[i]`.
            segments: prepared
                .mapping
                .iter()
                .zip(&prepared.manifest.segments)
                .map(|(m, e)| (m.node.clone(), e.tier))
                .collect(),
            left_out,
            fee,
            honeypots: prepared.honeypots.len(),
        })
    }

    /// What this node shows of `session` on its web page, if it opened it.
    pub fn page_record(&self, session: &Hash) -> Option<PageRecord> {
        let v = self.pages.get(session.as_ref()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    fn age_key(height: u64, session: &Hash) -> Vec<u8> {
        let mut k = height.to_be_bytes().to_vec();
        k.extend_from_slice(session.as_ref());
        k
    }

    fn drop_page_record(&self, session: &Hash) {
        let _ = self.pages.remove(session.as_ref());
        for k in self.pages_by_age.iter().keys().flatten() {
            if k.ends_with(session.as_ref()) {
                let _ = self.pages_by_age.remove(k);
            }
        }
    }

    /// Prunes the oldest page records beyond [`MAX_PAGE_RECORDS`] (`keep` of them, for
    /// tests); returns how many went.
    fn prune_page_records(&self, keep: usize) -> usize {
        let mut pruned = 0;
        while self.pages_by_age.len() > keep {
            let Ok(Some((k, _))) = self.pages_by_age.pop_min() else {
                break;
            };
            if let Some(session) = k.get(8..) {
                let _ = self.pages.remove(session);
            }
            pruned += 1;
        }
        pruned
    }

    /// Keeps the [`PageRecord`] of a session about to open at `height`, and prunes the
    /// oldest ones beyond [`MAX_PAGE_RECORDS`]. The texts are read back from the sealed
    /// blocks, so the page shows exactly what the seats read.
    fn keep_page_record(
        &self,
        session: &Hash,
        height: u64,
        hdag: &Hdag,
        restricted: &Restricted,
        prepared: &prepare::PreparedSession,
        sources: Sources<'_>,
    ) -> Result<(), RecordError> {
        let Sources { trace, hdag_json } = sources;
        let thinking = trace.map(|t| t.thinking.as_str());
        let mut nodes: Vec<String> = prepared.mapping.iter().map(|m| m.node.clone()).collect();
        let mut texts = Vec::with_capacity(nodes.len());
        for ((key, (_, blob)), entry) in prepared
            .keys
            .iter()
            .zip(&prepared.blocks)
            .zip(&prepared.manifest.segments)
        {
            let plain = decrypt_segment(key, &entry.id, blob)?;
            texts.push(SegmentDoc::from_bytes(&plain)?.claim);
        }
        let content = |id: &str| hdag.nodes.iter().find(|n| n.id == id);
        let mut left_out_levels = Vec::with_capacity(restricted.dropped.len());
        let mut left_out_tiers = Vec::with_capacity(restricted.dropped.len());
        for d in &restricted.dropped {
            let node = content(&d.id).ok_or(RecordError::LeftOutMissing)?;
            nodes.push(d.id.clone());
            texts.push(node.content.clone());
            left_out_levels.push(node.abstraction_level);
            left_out_tiers.push(d.tier);
        }
        // Each segment at its own occurrence (repeated text included), not the first.
        let placed = trace.map(|t| decompose::place::places(t, hdag));
        let at = hdag.positions();
        let spans = nodes
            .iter()
            .map(|id| {
                let placed = placed.as_ref()?;
                if id.starts_with(HONEYPOT_PREFIX) {
                    return None;
                }
                let p = placed.get(*at.get(id.as_str())?).copied().flatten()?;
                Some(TraceSpan {
                    part: p.part.as_str().to_string(),
                    start: p.start,
                    end: p.end,
                    line: p.line,
                })
            })
            .collect();
        let index = |id: &str| {
            nodes
                .iter()
                .position(|n| n == id)
                .and_then(|i| u16::try_from(i).ok())
        };
        let decomposes = hdag
            .edges
            .iter()
            .filter(|e| e.relationship == Relationship::DecomposesTo)
            .filter_map(|e| Some((index(&e.from)?, index(&e.to)?)))
            .collect();
        let problem = hdag
            .nodes
            .iter()
            .find(|n| n.kind == decompose::PROBLEM_KIND)
            .map(|n| n.content.clone())
            .unwrap_or_default();
        let proof = match (restricted.proof.as_deref(), thinking) {
            (Some(plan), Some(text)) => Some(ProofText {
                text: text.to_string(),
                lines: nodes
                    .iter()
                    .map(|id| {
                        let step = plan.steps.get(decompose::proof::step_of(id)?)?;
                        let before = text.get(..step.span.start)?;
                        u32::try_from(before.matches('\n').count().saturating_add(1)).ok()
                    })
                    .collect(),
            }),
            _ => None,
        };
        let record = PageRecord {
            nodes,
            texts,
            left_out_levels,
            decomposes,
            problem,
            proof,
            opening: Some(TraceOpening {
                mapping: prepared.mapping.clone(),
                hdag: hdag_json.map(str::to_string),
            }),
            spans,
            left_out_tiers,
            turns: trace.map_or_else(Vec::new, |t| {
                trust_judging::preview::turns::turns(&t.thinking)
            }),
            reruns: Vec::new(),
        };
        let bytes = serde_json::to_vec(&record)?;
        self.pages.insert(session.as_ref(), bytes)?;
        self.pages_by_age
            .insert(Self::age_key(height, session), &[])?;
        let pruned = self.prune_page_records(MAX_PAGE_RECORDS);
        if pruned > 0 {
            tracing::info!(pruned, "oldest page records pruned");
        }
        Ok(())
    }

    /// Stores and pins the ciphertexts, keeps the session record, and sends the
    /// `OpenSession` at `nonce`.
    async fn keep_and_open(
        &self,
        session: &Hash,
        nonce: u64,
        prepared: &prepare::PreparedSession,
    ) -> Result<Hash, RecordError> {
        let mut cids = Vec::new();
        for (cid, bytes) in &prepared.blocks {
            let got = self.blobs.put(bytes)?;
            if got != *cid {
                return Err(RecordError::CidMismatch);
            }
            cids.push(*cid);
        }
        self.blobs.pin(session, &cids)?;
        let record = SessionRecord {
            keys: prepared.keys.clone(),
            ids: prepared.manifest.segments.iter().map(|s| s.id).collect(),
            depends_on: prepared
                .manifest
                .segments
                .iter()
                .map(|s| s.depends_on.clone())
                .collect(),
            mapping: prepared.mapping.clone(),
            mapping_salt: prepared.mapping_salt,
            cids,
            delivered: BTreeSet::new(),
            delivered_again: BTreeSet::new(),
            delivered_appeal: BTreeSet::new(),
            mapping_revealed: false,
            honeypots: prepared.honeypots.clone(),
            honeypot_set_salt: prepared.honeypot_set_salt,
            honeypots_revealed: false,
        };
        self.store(session, &record)?;
        self.outbox
            .send_at(nonce, Call::OpenSession(prepared.manifest.clone()))
            .await
            .map_err(RecordError::Outbox)
    }

    /// The sessions this node opened and still keeps records of.
    pub fn sessions(&self) -> BTreeSet<Hash> {
        self.book
            .iter()
            .keys()
            .flatten()
            .filter_map(|k| <[u8; 32]>::try_from(k.as_ref()).ok().map(Hash))
            .collect()
    }

    /// After a restart: delivers the keys of every drawn seat not yet served (an appeal
    /// round's too), and opens the mapping of sessions now disclosing, for each session
    /// this node still runs; forgets those that became final or failed meanwhile.
    pub async fn resume(&self, contract: &Contract) {
        for session in self.sessions() {
            let over = contract.state().failed.contains_key(&session)
                || matches!(
                    contract.finality(&session),
                    Some(trust_contracts::Finality::Final { .. })
                );
            if over {
                self.perform(&ProviderDuty::Done { session }, contract)
                    .await;
                continue;
            }
            let Some(s) = contract.state().sessions.get(&session) else {
                continue;
            };
            let seats: Vec<(u16, AccountId, u8)> = s
                .segments
                .iter()
                .enumerate()
                .filter_map(|(i, g)| u16::try_from(i).ok().map(|i| (i, g)))
                .flat_map(|(i, g)| g.seats.iter().map(move |x| (i, x.account, x.round)))
                .collect();
            self.deliver(&session, &seats, contract).await;
            self.reveal_mapping(&session, contract).await;
        }
    }

    /// Follows this node's sessions through one decided block, as [`plan`] plans it.
    pub async fn on_block(&self, events: &[Event], contract: &Contract) {
        for d in plan(&self.sessions(), events) {
            self.perform(&d, contract).await;
        }
    }

    /// Carries out one of the provider's duties.
    pub async fn perform(&self, duty: &ProviderDuty, contract: &Contract) {
        match duty {
            ProviderDuty::DeliverKeys { session, seats } => {
                self.deliver(session, seats, contract).await;
            }
            ProviderDuty::RevealMapping { session } => {
                self.reveal_mapping(session, contract).await;
            }
            ProviderDuty::Done { session } => {
                if self.load(session).is_none() {
                    return;
                }
                if let Err(e) = self.blobs.release(session) {
                    tracing::warn!(%session, error = %e, "ciphertexts of a finished session not removed");
                }
                let _ = self.book.remove(session.as_ref());
                tracing::info!(%session, "session over; its ciphertexts removed");
            }
        }
    }

    async fn reveal_mapping(&self, session: &Hash, contract: &Contract) {
        let Some(mut r) = self.load(session) else {
            return;
        };
        let Some(s) = contract.state().sessions.get(session) else {
            return;
        };
        // Honeypots are opened after voting (the disclosure), and the mapping after them;
        // with none, the mapping opens as soon as the votes are bound. (A set may open
        // earlier still, with the last reveal: `open_early`.)
        let due = match s.phase {
            Phase::Disclose { .. } => true,
            Phase::Reveal { .. } => r.honeypots.is_empty(),
            _ => false,
        };
        if matches!(s.phase, Phase::Disclose { .. })
            && !s.honeypots_opened
            && r.honeypots_revealed
            && s.segments
                .iter()
                .any(|g| g.seats.iter().any(|x| x.round >= 1))
        {
            // A set sent early, for a first round that then escalated, was dropped when
            // the escalation began (`trust_contracts::expired`), with its mapping: both
            // go again, under new nonces.
            tracing::info!(%session, "the honeypot set sent early was dropped by the escalation; opening it again");
            r.honeypots_revealed = false;
            r.mapping_revealed = false;
        }
        if r.mapping_revealed || !due {
            return;
        }
        self.disclose(session, &mut r).await;
    }

    /// Whether this node provides `session`, planted honeypots in it and has not sent
    /// their opening yet: its duties then watch the pool for the first round's last
    /// reveals ([`Provider::open_early`]).
    pub fn awaits_reveals(&self, session: &Hash) -> bool {
        self.load(session)
            .is_some_and(|r| !r.honeypots.is_empty() && !r.honeypots_revealed)
    }

    /// Opens `session`'s honeypot set, then its mapping, before the first round's reveal
    /// window closes: the caller found that the reveals its mempool holds settle the round
    /// ([`trust_contracts::settles_with`]), so both can land in the block of the last
    /// reveal, right after it, and the session is decided there instead of a block later.
    /// A set that lands too early waits in the pool for the disclosure (it applies only
    /// once the round is settled); one whose round escalates instead is dropped and sent
    /// again in the disclosure ([`Provider::reveal_mapping`]).
    pub async fn open_early(&self, session: &Hash) {
        let Some(mut r) = self.load(session) else {
            return;
        };
        if r.honeypots.is_empty() || r.honeypots_revealed || r.mapping_revealed {
            return;
        }
        tracing::debug!(%session, "the first round's reveals are pooled; opening the honeypots with them");
        self.disclose(session, &mut r).await;
    }

    /// Sends the honeypot set (unless sent) and then the mapping, and records each as it
    /// is pooled.
    async fn disclose(&self, session: &Hash, r: &mut SessionRecord) {
        // The honeypot set first (empty when none was planted): the mapping follows it
        // and closes the disclosure.
        if !r.honeypots_revealed {
            let call = honeypot_set_opening(session, &r.honeypots, r.honeypot_set_salt);
            let segments: Vec<u16> = r.honeypots.iter().map(|h| h.segment).collect();
            match self.outbox.send(call).await {
                Ok(tx) => {
                    if matches!(tx, Sent::Pooled(_)) {
                        r.honeypots_revealed = true;
                        let _ = self.store(session, r);
                    }
                    tracing::info!(%session, ?segments, %tx, "honeypot set opened");
                }
                Err(e) => {
                    tracing::warn!(%session, ?segments, error = %e, "honeypot set not opened");
                }
            }
        }
        let call = Call::RevealMapping {
            session: *session,
            mapping: prepare::mapping_document_hash(&r.mapping),
            salt: r.mapping_salt,
        };
        match self.outbox.send(call).await {
            Ok(tx) => {
                if matches!(tx, Sent::Pooled(_)) {
                    r.mapping_revealed = true;
                    let _ = self.store(session, r);
                }
                tracing::info!(%session, %tx, "mapping opened");
            }
            Err(e) => tracing::warn!(%session, error = %e, "RevealMapping not sent"),
        }
    }
}

/// The call that opens a session's committed honeypot set: every `planted` honeypot (none,
/// for a session that planted none) under the set's salt, all at once.
fn honeypot_set_opening(session: &Hash, planted: &[Planted], set_salt: Salt) -> Call {
    Call::RevealHoneypots {
        session: *session,
        openings: planted
            .iter()
            .map(|h| trust_protocol::tx::HoneypotOpening {
                segment: h.segment,
                verdict: h.verdict,
                difficulty: h.difficulty,
                salt: h.salt,
            })
            .collect(),
        set_salt,
    }
}

#[cfg(test)]
mod assurance_tests;

#[cfg(test)]
mod tests {
    use trust_protocol::hdag::Hdag;

    use super::*;
    use crate::audit::testkit::{Chain, auditor, provider_key};

    /// A provider on a chain with `auditors` Computer auditors besides itself.
    pub(super) fn provider(auditors: usize) -> (Provider, Chain, tempfile::TempDir) {
        provider_on(Chain::new(auditors))
    }

    /// A provider on `chain`.
    pub(super) fn provider_on(chain: Chain) -> (Provider, Chain, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let p = Provider::open(
            chain.outbox(provider_key()),
            BlobStore::open(&db).unwrap(),
            &db,
        )
        .unwrap();
        (p, chain, dir)
    }

    /// Keys delivered in a block's events.
    pub(super) fn keys_delivered(events: &[Event]) -> usize {
        events
            .iter()
            .filter(|e| matches!(e, Event::KeyDelivered { .. }))
            .count()
    }

    /// Seats drawn in a session, over all its segments.
    pub(super) fn seat_count(session: &trust_contracts::Session) -> usize {
        session.segments.iter().map(|g| g.seats.len()).sum()
    }

    /// A trace long enough for two honeypots: a honeypot cites premises of its own, never
    /// a set a real step with dependents cites, which a three-step chain leaves room for
    /// only once.
    const TWO_HONEYPOTS_TRACE: &str =
        include_str!("../../../../examples/traces/fraction-correct.txt");

    pub(super) const TRACE: &str = "## Problem Statement\nThe denominator of a fraction is 7 less than 3 times the numerator. If the fraction is equivalent to 2/5, what is the numerator?\n## Thinking Process\n1. Let the numerator be x\n2. So x / (3x - 7) = 2/5\n3. Therefore, 5x = 6x - 14\n## Final Output\nx = 14\n";

    #[tokio::test]
    async fn submit_opens_a_session_with_only_staffed_tiers_and_keeps_the_keys() {
        let (p, chain, _dir) = provider(3);
        let s = p
            .submit(TRACE, None, &chain.contract)
            .await
            .expect("submitted");
        assert!(!s.segments.is_empty());
        assert!(s.segments.iter().all(|(_, t)| *t == Tier::Computer));
        assert!(!s.left_out.is_empty(), "the GOAL goes to another tier");
        let r = p.load(&s.session).expect("record kept");
        assert_eq!(r.keys.len(), s.segments.len());
        assert!(r.cids.iter().all(|c| p.blobs.has(c).unwrap()));
        assert!(s.fee > 0);
        // The page record names every segment, session ones first, with the text the
        // seats read; it outlives the session record.
        let page = p.page_record(&s.session).expect("page record kept");
        assert_eq!(page.nodes.len(), s.segments.len() + s.left_out.len());
        assert_eq!(page.texts.len(), page.nodes.len());
        assert_eq!(page.left_out_levels.len(), s.left_out.len());
        for (i, (node, _)) in s.segments.iter().enumerate() {
            assert_eq!(&page.nodes[i], node);
            assert!(TRACE.contains(&page.texts[i]) || node.starts_with("honeypot:"));
        }
        assert!(
            !page.decomposes.is_empty(),
            "the GOAL decomposes into the steps"
        );
    }

    /// Issue 26 (finding 6): a segment's id binds the context sealed with it. With the
    /// opened mapping, each segment's document (honeypots included) reproduces the id on
    /// the ledger, and the same claim with another given or another operation does not.
    #[tokio::test]
    async fn the_opened_mapping_and_a_segments_document_reproduce_its_id() {
        let (p, mut chain, _dir) = provider(3);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        chain.block().await; // OpenSession included
        let r = p.load(&s.session).unwrap();
        assert!(!r.honeypots.is_empty(), "honeypots are checked too");
        // The mapping is the one the ledger's commitment opens to.
        let sess = &chain.contract.state().sessions[&s.session];
        assert_eq!(
            prepare::mapping_commitment(&r.mapping, &r.mapping_salt),
            sess.manifest.mapping_commitment
        );
        for (i, g) in sess.segments.iter().enumerate() {
            let blob = p.blobs.get(&r.cids[i]).unwrap().unwrap();
            let plain = decrypt_segment(&r.keys[i], &g.entry.id, &blob).unwrap();
            let doc = SegmentDoc::from_bytes(&plain).unwrap();
            assert!(
                !doc.given.is_empty(),
                "the problem statement is sealed with it"
            );
            let salt = &r.mapping[i].salt;
            assert_eq!(prepare::blinded_id(salt, &doc), g.entry.id, "segment {i}");
            let mut other = doc.clone();
            other.given[0].push_str(" And x is 15.");
            assert_ne!(prepare::blinded_id(salt, &other), g.entry.id);
            let mut other = doc.clone();
            other.operations.push("2 + 2 = 4".into());
            assert_ne!(prepare::blinded_id(salt, &other), g.entry.id);
            // A given moved into the operations is another document too.
            let mut other = doc.clone();
            other.operations.insert(0, other.given.remove(0));
            assert_ne!(prepare::blinded_id(salt, &other), g.entry.id);
        }
    }

    /// Finding 4: staffing counts the auditors the contract can draw. One of three
    /// Computer auditors unbonds below the tier minimum: still registered and active, but
    /// once the unbond counts in draws (`expertise_delay` blocks later, issue 53) the
    /// session would fail at the draw, so the provider refuses it up front.
    #[tokio::test]
    async fn staffing_counts_only_auditors_the_contract_can_draw() {
        let (p, mut chain, _dir) = provider(3);
        assert!(p.submit(TRACE, None, &chain.contract).await.is_ok());
        let leaving = auditor(0);
        let out = chain.outbox(leaving.clone());
        out.send(Call::Unbond { amount: 950 }).await.unwrap();
        for _ in 0..=chain.contract.state().params.expertise_delay {
            chain.block().await;
        }
        let st = chain.contract.state();
        assert!(
            st.auditors[&leaving.public()].active,
            "registered and active"
        );
        assert_eq!(st.eligible(Tier::Computer).len(), 2);
        let e = p
            .submit(TRACE, None, &chain.contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("no segment can be audited") && e.contains("[2, 0, 0]"),
            "{e}"
        );
    }

    /// The griefing provider (a test behaviour) plants true steps as known errors, as many
    /// as a session may open, and keeps some seats' keys from them.
    #[tokio::test]
    async fn a_griefing_provider_plants_false_honeypots_and_starves_some_seats() {
        let (p, mut chain, _dir) = provider(4);
        let p = p.with_griefing(true);
        let s = p.submit(TRACE, None, &chain.contract).await.unwrap();
        assert!(s.honeypots >= 2, "{} planted", s.honeypots);
        let page = p.page_record(&s.session).unwrap();
        for (i, (name, _)) in s.segments.iter().enumerate() {
            if let Some(source) = name.strip_prefix("honeypot:") {
                let j = s.segments.iter().position(|(n, _)| n == source).unwrap();
                assert_eq!(page.texts[i], page.texts[j], "a true step, unaltered");
            }
        }
        let record = p.load(&s.session).unwrap();
        assert!(
            record
                .honeypots
                .iter()
                .all(|h| h.verdict == trust_protocol::Vote::Invalid)
        );
        chain.block().await;
        let seated = chain.block().await;
        p.on_block(&seated, &chain.contract).await;
        let ev = chain.block().await;
        let sess = &chain.contract.state().sessions[&s.session];
        let all_seats: BTreeSet<AccountId> = sess
            .segments
            .iter()
            .flat_map(|g| g.seats.iter().map(|x| x.account))
            .collect();
        let served: BTreeSet<AccountId> = ev
            .iter()
            .filter_map(|e| match e {
                Event::KeyDelivered { seat, .. } => Some(*seat),
                _ => None,
            })
            .collect();
        assert!(served.len() < all_seats.len(), "no seat starved");
        assert!(
            served
                .iter()
                .all(|a| !crate::audit::misbehave::starves(&s.session, a))
        );
    }

    /// Page records beyond the bound go oldest first; the newest stay.
    #[tokio::test]
    async fn the_oldest_page_records_are_pruned_beyond_the_bound() {
        let (p, mut chain, _dir) = provider(3);
        let mut sessions = Vec::new();
        for _ in 0..3 {
            sessions.push(
                p.submit(TRACE, None, &chain.contract)
                    .await
                    .unwrap()
                    .session,
            );
            chain.block().await;
        }
        assert!(sessions.iter().all(|s| p.page_record(s).is_some()));
        assert_eq!(p.prune_page_records(MAX_PAGE_RECORDS), 0, "under the bound");
        assert_eq!(p.prune_page_records(1), 2);
        assert!(p.page_record(&sessions[0]).is_none());
        assert!(p.page_record(&sessions[1]).is_none());
        assert!(p.page_record(&sessions[2]).is_some(), "the newest stays");
        assert_eq!((p.pages.len(), p.pages_by_age.len()), (1, 1));
    }

    #[tokio::test]
    async fn bad_input_is_refused_and_nothing_is_stored() {
        let (p, chain, _dir) = provider(3);
        let contract = &chain.contract;
        let e = p
            .submit("{not json", None, contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("trace:"), "{e}");
        let cyclic = r#"{"nodes": [
            {"id": "A", "content": "Let the numerator be x", "abstraction_level": "STEP", "primary_auditor": "T_Auto"},
            {"id": "B", "content": "x = 14", "abstraction_level": "STEP", "primary_auditor": "T_Auto"}
        ], "edges": [
            {"from": "A", "to": "B", "relationship": "depends_on"},
            {"from": "B", "to": "A", "relationship": "depends_on"}
        ]}"#;
        let e = p
            .submit(TRACE, Some(cyclic), contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("hdag:"), "{e}");
        let dangling = r#"{"nodes": [
            {"id": "A", "content": "x = 14", "abstraction_level": "STEP", "primary_auditor": "T_Auto"}
        ], "edges": [{"from": "A", "to": "Z", "relationship": "depends_on"}]}"#;
        let e = p
            .submit(TRACE, Some(dangling), contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("hdag:"), "{e}");
        // Too few auditors for any tier.
        let (p2, c2, _d2) = provider(2);
        let e = p2
            .submit(TRACE, None, &c2.contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("no segment can be audited"), "{e}");
        assert!(p.book.is_empty() && p2.book.is_empty());
        assert!(p.pages.is_empty() && p2.pages.is_empty());
        assert!(p.blobs.is_empty() && p2.blobs.is_empty());
    }

    /// A session that cannot be opened (this node's transactions already wait for the
    /// nonce window) leaves no ciphertext, pin or record behind.
    #[tokio::test]
    async fn a_submit_refused_at_the_last_step_leaves_nothing_behind() {
        let (p, chain, _dir) = provider(3);
        let to = auditor(0).public();
        for _ in 0..=crate::mempool::MAX_NONCE_AHEAD + 1 {
            p.outbox
                .send(Call::Transfer { to, amount: 1 })
                .await
                .unwrap();
        }
        assert!(p.outbox.backlog_len().await > 0);
        let e = p
            .submit(TRACE, None, &chain.contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains("retry"), "{e}");
        assert!(p.book.is_empty() && p.blobs.is_empty() && p.pages.is_empty());
    }

    /// A session over the per-session cap, or over what is left of the daily one, is
    /// refused before anything is stored or sent; under the cap it opens and its fee counts.
    #[tokio::test]
    async fn spending_caps_refuse_a_session_and_change_nothing() {
        let (p, chain, _dir) = provider(3);
        let fee = p.submit(TRACE, None, &chain.contract).await.unwrap().fee;
        let pooled = chain.pooled().await;
        let now = unix_now();
        assert_eq!(p.spent_since_yesterday(now).unwrap(), fee);
        let (books, pages, blobs) = (p.book.len(), p.pages.len(), p.blobs.len());

        let per_session = p.clone().with_spending_cap(SpendingCap {
            per_session: Some(fee - 1),
            per_day: None,
        });
        let e = per_session
            .submit(TRACE, None, &chain.contract)
            .await
            .unwrap_err();
        assert!(matches!(e, SubmitError::OverCap(_)), "{e}");
        assert!(e.to_string().contains("per session"), "{e}");

        // One more session fits a daily cap of two fees, a third does not.
        let per_day = p.clone().with_spending_cap(SpendingCap {
            per_session: Some(fee),
            per_day: Some(2 * fee),
        });
        let e = per_day.submit(TRACE, None, &chain.contract).await;
        assert!(e.is_ok(), "{e:?}");
        let e = per_day
            .submit(TRACE, None, &chain.contract)
            .await
            .unwrap_err();
        assert!(matches!(e, SubmitError::OverCap(_)), "{e}");
        assert!(e.to_string().contains("per day"), "{e}");
        assert_eq!(p.spent_since_yesterday(now).unwrap(), 2 * fee);
        // The refused ones stored and sent nothing: only the second session's records.
        assert_eq!(chain.pooled().await, pooled + 1);
        assert_eq!(p.book.len(), books + 1);
        assert_eq!(p.pages.len(), pages + 1);
        assert!(p.blobs.len() > blobs);
        // A day later the window is empty again.
        assert_eq!(
            p.spent_since_yesterday(now + SPENDING_WINDOW_SECS + 1)
                .unwrap(),
            0
        );
    }

    #[tokio::test]
    async fn a_dead_ipfs_node_fails_the_submit_and_stores_nothing() {
        let (p, chain, _dir) = provider(3);
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let dead = format!("http://{}", l.local_addr().unwrap());
        drop(l);
        let p = p.with_kubo(Arc::new(Kubo::new(&dead).unwrap()));
        let e = p
            .submit(TRACE, None, &chain.contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(&dead), "{e}");
        assert!(p.book.is_empty() && p.blobs.is_empty());
        assert_eq!(chain.pooled().await, 0, "no OpenSession");
    }

    /// A session's honeypots are opened as its committed set, in one call (none for a
    /// session that planted none): every planted honeypot, under the set's salt, whose
    /// commitment is the manifest's.
    #[test]
    fn the_honeypot_set_opens_in_one_call() {
        let session = Hash::sha256(b"s");
        let salt = Salt([2; 32]);
        let planted = |n: u16| -> Vec<Planted> {
            (0..n)
                .map(|segment| Planted {
                    segment,
                    verdict: trust_protocol::Vote::Invalid,
                    difficulty: trust_protocol::tx::Difficulty::Obvious,
                    salt: Salt([1; 32]),
                })
                .collect()
        };
        for n in [0u16, 1, 3] {
            let call = honeypot_set_opening(&session, &planted(n), salt);
            let Call::RevealHoneypots {
                openings, set_salt, ..
            } = &call
            else {
                panic!("{call:?}");
            };
            assert_eq!(openings.len(), usize::from(n));
            assert_eq!(*set_salt, salt);
            let segments: Vec<u16> = openings.iter().map(|o| o.segment).collect();
            assert_eq!(
                trust_protocol::honeypot_set_commitment(&segments, set_salt),
                trust_protocol::honeypot_set_commitment(&(0..n).collect::<Vec<_>>(), &salt)
            );
            assert_eq!(Tx { nonce: 0, call }.validate(), Ok(()));
        }
    }

    /// Seats for auditors `0..n`, reading the ciphertexts from `p`'s store (standing in
    /// for Bitswap), each as `twist(seat, account)` makes it, having seen the drawing
    /// block `drawn`.
    async fn seats(
        p: &Provider,
        chain: &Chain,
        n: usize,
        drawn: &[Event],
        twist: impl Fn(crate::audit::seat::Seat, AccountId) -> crate::audit::seat::Seat,
    ) -> Vec<(crate::audit::seat::Seat, tempfile::TempDir)> {
        use crate::audit::testkit::{from_store, seat_of};
        let fetch = from_store(p.blobs.clone());
        let mut seats = Vec::new();
        for i in 0..n {
            let (seat, dir) = seat_of(chain, i, Some(fetch.clone()));
            let seat = twist(seat, auditor(i).public());
            seat.on_block(drawn, &chain.contract).await;
            seats.push((seat, dir));
        }
        seats
    }

    /// The honeypot openings `who` has pooled: (transaction id, call).
    async fn pooled_openings(chain: &Chain, who: &AccountId) -> Vec<(Hash, Call)> {
        chain
            .pool
            .reap(Arc::new(chain.contract.clone()), 1000)
            .await
            .into_iter()
            .filter(|tx| {
                tx.signer == *who
                    && matches!(
                        tx.body.call,
                        Call::RevealHoneypot { .. } | Call::RevealHoneypots { .. }
                    )
            })
            .map(|tx| (tx.id(), tx.body.call))
            .collect()
    }

    /// A session with two honeypots, judged by seats one of which rubber-stamps: once the
    /// reveal window closes, the provider opens both honeypots in ONE transaction
    /// (`RevealHoneypots`, never a `RevealHoneypot`), and the tally still counts them: the
    /// outcome holds both known verdicts, the honest seats rejected them, and the
    /// rubber-stamper is scored against the truth for each one it approved.
    #[cfg(feature = "misbehave")]
    #[tokio::test]
    async fn a_sessions_two_honeypots_open_in_one_transaction_and_still_score_the_seats() {
        use crate::audit::misbehave::Behaviour;

        let (p, mut chain, _dir) = provider(4);
        let p = p.with_honeypots(2);
        let s = p
            .submit(TWO_HONEYPOTS_TRACE, None, &chain.contract)
            .await
            .unwrap();
        assert_eq!(s.honeypots, 2, "two honeypots planted");
        let planted = p.load(&s.session).unwrap().honeypots;
        let ev = chain.block().await; // OpenSession included
        p.on_block(&ev, &chain.contract).await;
        let drawn = chain.block().await; // seats drawn, their keys sealed in that block
        p.on_block(&drawn, &chain.contract).await;
        let sess = chain.contract.state().sessions[&s.session].clone();
        let seats_of = |segment: u16| -> BTreeSet<AccountId> {
            sess.segments[usize::from(segment)]
                .seats
                .iter()
                .map(|x| x.account)
                .collect()
        };
        // The rubber-stamper: a seat of the first honeypot.
        let stamper = *seats_of(planted[0].segment).iter().next().unwrap();
        let seats = seats(&p, &chain, 4, &drawn, |seat, who| {
            if who == stamper {
                seat.with_behaviour(Behaviour::RubberStamp)
            } else {
                seat
            }
        })
        .await;
        // Run the session to its tally, watching what the provider pools to open its
        // honeypots and the phase the session is in when it does.
        let me = provider_key().public();
        let mut openings: BTreeMap<Hash, (Call, Option<Phase>)> = BTreeMap::new();
        for _ in 0..40 {
            let phase = chain
                .contract
                .state()
                .sessions
                .get(&s.session)
                .map(|x| x.phase);
            for (id, call) in pooled_openings(&chain, &me).await {
                openings.entry(id).or_insert((call, phase));
            }
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for (seat, _) in &seats {
                seat.on_block(&ev, &chain.contract).await;
            }
            if !chain.contract.state().sessions.contains_key(&s.session) {
                break;
            }
        }
        let o = chain
            .contract
            .state()
            .outcomes
            .get(&s.session)
            .expect("decided")
            .clone();
        let txs: Vec<&(Call, Option<Phase>)> = openings.values().collect();
        let [
            (
                Call::RevealHoneypots {
                    session, openings, ..
                },
                phase,
            ),
        ] = txs.as_slice()
        else {
            panic!("not one RevealHoneypots: {txs:?}");
        };
        assert_eq!(*session, s.session);
        assert!(
            matches!(phase, Some(Phase::Disclose { .. })),
            "sent once the reveal window closed: {phase:?}"
        );
        let mut opened: Vec<u16> = openings.iter().map(|o| o.segment).collect();
        let mut wanted: Vec<u16> = planted.iter().map(|h| h.segment).collect();
        opened.sort_unstable();
        wanted.sort_unstable();
        assert_eq!(opened, wanted, "both honeypots in the one transaction");
        // The tally counted both: their known verdicts are on the outcome, the honest
        // seats rejected them, and each seat is scored on the honeypots it judged.
        let st = chain.contract.state();
        for h in &planted {
            let g = &o.segments[usize::from(h.segment)];
            assert_eq!(g.honeypot, Some(h.verdict), "segment {}", h.segment);
            assert!(
                g.verdict.is_error(),
                "segment {}: {:?}",
                h.segment,
                g.verdict
            );
        }
        for i in 0..4 {
            let who = auditor(i).public();
            let on: Vec<&Planted> = planted
                .iter()
                .filter(|h| !h.verdict.is_valid() && seats_of(h.segment).contains(&who))
                .collect();
            let record = &st.auditors[&who].honeypots;
            assert_eq!(
                record.errors_seen.iter().sum::<u32>(),
                u32::try_from(on.len()).unwrap(),
                "auditor {i}"
            );
            let approved: u32 = record.errors_approved.iter().sum();
            if who == stamper {
                assert!(!on.is_empty());
                assert_eq!(approved, u32::try_from(on.len()).unwrap(), "the stamper");
                // A provider that had paid no fees before names nobody's record.
                assert!(record.miss_providers.is_empty());
                let _ = me;
            } else {
                assert_eq!(approved, 0, "honest auditor {i}");
            }
        }
    }

    /// A provider killed after its honeypot set opening was signed and before it recorded
    /// it opened: its journal puts that transaction back, and resuming signs it no second
    /// time (the restored transaction answers it). The set opens in the next block, and the
    /// session is decided.
    #[tokio::test]
    async fn a_restarted_provider_does_not_sign_its_honeypot_set_twice() {
        let mut chain = Chain::new(4);
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let open = |chain: &Chain| {
            let outbox = chain.outbox(provider_key()).with_journal(&db).unwrap();
            let p = Provider::open(outbox.clone(), BlobStore::open(&db).unwrap(), &db)
                .unwrap()
                .with_honeypots(2);
            (p, outbox)
        };
        let (p, out) = open(&chain);
        let s = p
            .submit(TWO_HONEYPOTS_TRACE, None, &chain.contract)
            .await
            .unwrap();
        let planted = p.load(&s.session).unwrap().honeypots;
        assert_eq!(planted.len(), 2);
        let ev = chain.block().await;
        p.on_block(&ev, &chain.contract).await;
        let drawn = chain.block().await;
        p.on_block(&drawn, &chain.contract).await;
        let seats = seats(&p, &chain, 4, &drawn, |seat, _| seat).await;
        // Vote; stop at the block that closes the reveal window, before the provider
        // reacts to it.
        for _ in 0..40 {
            let ev = chain.block().await;
            if ev.iter().any(
                |e| matches!(e, Event::RevealWindowClosed { session, .. } if *session == s.session),
            ) {
                break;
            }
            p.on_block(&ev, &chain.contract).await;
            for (seat, _) in &seats {
                seat.on_block(&ev, &chain.contract).await;
            }
        }
        assert!(matches!(
            chain.contract.state().sessions[&s.session].phase,
            Phase::Disclose { .. }
        ));
        let set = honeypot_set_opening(
            &s.session,
            &planted,
            p.load(&s.session).unwrap().honeypot_set_salt,
        );
        let Sent::Pooled(first) = out.send(set.clone()).await.unwrap() else {
            panic!("the window has room");
        };

        // Killed: the pool is gone, sled (journal and records) is not.
        drop((p, out));
        chain.restart_pool();
        let (p, out) = open(&chain);
        assert_eq!(out.restore().await, 1);
        let me = provider_key().public();
        p.resume(&chain.contract).await;
        let pooled = pooled_openings(&chain, &me).await;
        assert_eq!(
            pooled,
            vec![(first, set)],
            "the restored transaction answers the set; nothing is signed again"
        );

        let ev = chain.block().await;
        let opened: BTreeSet<u16> = ev
            .iter()
            .filter_map(|e| match e {
                Event::HoneypotRevealed { segment, .. } => Some(*segment),
                _ => None,
            })
            .collect();
        let wanted: BTreeSet<u16> = planted.iter().map(|h| h.segment).collect();
        assert_eq!(opened, wanted);
        // Resuming also sent the mapping, right behind the set: decided in that block.
        assert!(
            ev.iter()
                .any(|e| matches!(e, Event::TraceDecided { session, .. } if *session == s.session)),
            "decided with the mapping that follows the set"
        );
        let o = chain
            .contract
            .state()
            .outcomes
            .get(&s.session)
            .expect("decided");
        for h in &planted {
            assert_eq!(o.segments[usize::from(h.segment)].honeypot, Some(h.verdict));
        }
        assert!(!o.honeypots_forfeited);
    }

    #[test]
    fn dropping_a_tier_bridges_dependencies() {
        let json = r#"{"nodes": [
            {"id": "A", "content": "a", "abstraction_level": "STEP", "primary_auditor": "T_Auto"},
            {"id": "B", "content": "b", "abstraction_level": "STEP", "primary_auditor": "T_LLM"},
            {"id": "C", "content": "c", "abstraction_level": "STEP", "primary_auditor": "T_Auto"}
        ], "edges": [
            {"from": "C", "to": "B", "relationship": "depends_on"},
            {"from": "B", "to": "A", "relationship": "depends_on"}
        ]}"#;
        let h: Hdag = serde_json::from_str(json).unwrap();
        let r = prepare::restrict(&h, |t| t == Tier::Computer);
        assert_eq!(
            r.dropped,
            vec![prepare::Dropped {
                id: "B".to_string(),
                tier: Tier::Llm,
                depends_on: vec!["A".to_string()],
                rests_on_dropped: Vec::new(),
            }]
        );
        // C rests on B directly: the contract learns it, to propagate through it.
        assert_eq!(r.rests_on_dropped.get("C"), Some(&vec!["B".to_string()]));
        // C rests on nothing, so it is the conclusion.
        assert_eq!(r.conclusions, BTreeSet::from(["C".to_string()]));
        assert_eq!(r.hdag.nodes.len(), 2);
        let deps: Vec<&str> = r.hdag.dependencies_of("C").collect();
        assert_eq!(deps, vec!["A"]);
        // B's text travels with C, the node that rested on it; A cites nothing dropped.
        assert_eq!(r.givens.get("C"), Some(&vec!["b".to_string()]));
        assert!(!r.givens.contains_key("A"));
    }
}
