//! The seat pipeline: what this node does for the seats it holds.
//!
//! For each decided block: a `KeyDelivered` to this node is opened with the sealing key and
//! kept in sled; once a seat has the keys of its segment and of the premises it cites, the
//! ciphertexts are fetched (local blob store, else from peers), decrypted, judged by the
//! tier's auditor, and the vote and salt are **flushed to sled before** the `Commit` is
//! sent, so a node restarted between commit and reveal still reveals. When the commit
//! window closes, every unrevealed vote of that round is revealed.
//!
//! Judging is the tier's [`Auditor`]'s business; this pipeline only feeds it the segment
//! view. A seat that cannot judge (its judge abstains, or this node has no judge for the
//! seat's tier) commits and reveals an abstention: it is present, unrewarded, and the
//! segment escalates.
//!
//! A seat that cannot read its segment (no key yet, a key that does not open, a blob no
//! peer serves, a ciphertext that does not decrypt) is logged and counted, remembered as
//! *stuck*, and waits: the key or the blob may still come. Once the commit window is about
//! to close (the last [`GIVE_UP_BLOCKS`] blocks before the contract's commit deadline,
//! counted in blocks, not by a clock), a stuck seat tries once more with what this node
//! holds (no second fetch: a node catching up after a restart must not flood its peers
//! with fetches for sessions long over) and, failing, commits an **abstention** naming
//! what it could not read. It is then present rather than a no-show: a provider that withholds a
//! blob cannot get its seats slashed, and one that withholds keys pays them (the contract
//! records which keys were delivered; see `trust_contracts` sessions).
//!
//! A key that does not open is the provider's fault too, and this seat proves it: every
//! sealed key delivered to it is kept (per session, in order), and when its round's commit
//! window closes, each of its seats whose keys on record include one that does not open
//! (and that no other key of the same segment replaced) sends a `ReportBadKey` with the
//! shared secret of that key and its proof ([`trust_protocol::badkey`]) before it reveals.
//! The contract then counts the seat as starved: paid by the provider, never slashed.
//! Reporting at the window's close rather than at once leaves the round's deliveries time
//! to land, so that a key whose ephemeral key also came in another sealed key (a provider
//! copying another's to learn its shared secret) is seen and never reported: revealing its
//! shared secret would open that other key. The ephemeral keys of every key this node was
//! sent are kept for that (66 bytes each, never pruned).

use std::{
    collections::BTreeSet,
    sync::{Arc, atomic::Ordering},
};

use futures::{FutureExt, StreamExt, future::BoxFuture, stream::FuturesUnordered};
use rand::RngCore;
use trust_contracts::{Contract, Event, Phase, SegmentState};
use trust_protocol::{
    Hash, Salt,
    badkey::{find_record, prove_bad_key},
    cid::Cid,
    seal::{
        KEY_LEN, SealError, SealedKey, SealingSecret, SegmentDoc, SegmentDocError, decrypt_segment,
        key_context, open_key,
    },
    tx::{Call, DeliveredKey, MAX_SEALED_KEYS, Tier},
};

#[cfg(feature = "misbehave")]
use super::misbehave::Behaviour;
use trust_judging::{
    computer::formal::FormalView,
    duties::{self as plan, Duty, GIVE_UP_BLOCKS, gives_up},
    judge::{self, Auditor, ComputerAuditor, Decision, SeatRef, SegmentView},
};

pub use super::seat_metrics::SeatMetrics;
use super::{
    outbox::Outbox,
    sending::{Outgoing, VoteSender},
    votes::{VoteBook, VoteBookError, VoteRecord},
};
use crate::{
    blobs::{BlobError, BlobStore},
    net::NetError,
};

/// The environment variable that selects a test behaviour (see `audit::misbehave`, compiled
/// only into test builds). A build without them refuses to start when it is set.
pub const BEHAVIOUR_ENV: &str = "TRUST_TEST_BEHAVIOUR";

/// A seat a copy-cat tried to copy a commitment for: (session, segment, round).
#[cfg(feature = "misbehave")]
type CopiedSeat = (Hash, u16, u8);

/// Segments of one session a seat judges at once, unless its judges take more (a
/// person's queue holds every seat at once).
pub const MAX_CONCURRENT_JUDGEMENTS: usize = judge::DEFAULT_CONCURRENCY;
/// Most decisions persisted with one flush before their commitments go out.
pub const MAX_COMMIT_BATCH: usize = 256;
/// Most sealed keys kept per session for bad-key reports: a seat is sent one per segment
/// it needs and round, so this is far beyond an honest provider's, and it bounds what a
/// provider that floods a seat with keys costs the seat's search for its record.
pub const MAX_KEPT_KEYS: usize = MAX_SEALED_KEYS;

/// The seats a copy-cat already replayed a commitment for (test builds only).
#[cfg(feature = "misbehave")]
type CopiedSeats = std::sync::Mutex<BTreeSet<CopiedSeat>>;

/// A future that resolves once the node's tip reaches the given height: how a vote under
/// way learns that its seats must give up ([`Seat::vote_by`]).
pub type TipReaches = Arc<dyn Fn(u64) -> BoxFuture<'static, ()> + Send + Sync>;

/// Fetches a blob from peers.
pub type FetchBlob =
    Arc<dyn Fn(Cid) -> BoxFuture<'static, Result<Vec<u8>, FetchError>> + Send + Sync>;

/// Why a blob could not be fetched from peers.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FetchError {
    /// No peer sent it, or the network could not ask.
    #[error(transparent)]
    Net(#[from] NetError),
}

/// Why the seat role could not open its records.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SeatError {
    /// The vote book did not open.
    #[error(transparent)]
    Votes(#[from] VoteBookError),
    /// The key tree did not open.
    #[error(transparent)]
    Store(#[from] sled::Error),
}

/// Why a seat cannot read one segment yet.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ReadError {
    /// The session or segment is not in the contract.
    #[error("unknown segment")]
    UnknownSegment,
    /// The segment's key has not been delivered.
    #[error("no key yet")]
    NoKey,
    /// The ciphertext is not in the blob store, and this try may not fetch it.
    #[error("ciphertext {0} is not here")]
    NotHere(Cid),
    /// The blob store failed.
    #[error(transparent)]
    Blobs(#[from] BlobError),
    /// No peer served the ciphertext.
    #[error(transparent)]
    Fetch(#[from] FetchError),
    /// The ciphertext does not decrypt with the key.
    #[error(transparent)]
    Decrypt(#[from] SealError),
    /// The plaintext is not a segment document.
    #[error(transparent)]
    Doc(#[from] SegmentDocError),
}

/// Why a seat cannot put together the view its judge needs: what it could not read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ViewError {
    /// The session or segment is no longer in the contract.
    #[error("the session or segment is gone")]
    Gone,
    /// The segment itself is unreadable.
    #[error("segment {segment}: {source}")]
    Segment {
        /// Its index.
        segment: u16,
        /// Why.
        source: ReadError,
    },
    /// A premise it cites is unreadable.
    #[error("premise {premise}: {source}")]
    Premise {
        /// The premise's index.
        premise: u16,
        /// Why.
        source: ReadError,
    },
}

/// Where a running node's seats fetch ciphertexts it does not hold: the configured IPFS
/// node first (`kubo`), else its peers over Bitswap (`net`).
pub fn fetch_from(
    kubo: Option<Arc<crate::blobs::kubo::Kubo>>,
    net: crate::net::NetHandle,
) -> FetchBlob {
    Arc::new(move |cid| {
        let (n, k) = (net.clone(), kubo.clone());
        Box::pin(async move {
            if let Some(k) = k {
                match k.get(&cid).await {
                    Ok(b) => return Ok(b),
                    Err(e) => {
                        tracing::warn!(%cid, error = %e, "IPFS node could not serve the block; asking peers")
                    }
                }
            }
            n.fetch_blob(cid).await.map_err(FetchError::from)
        })
    })
}

/// Most bytes of fetched ciphertexts a seat keeps in memory.
const MAX_FETCHED_BYTES: usize = 64 << 20;

/// Fetched ciphertexts by session and CID, and their total size.
#[derive(Debug, Default)]
struct Fetched {
    by_session: std::collections::BTreeMap<Hash, std::collections::BTreeMap<Cid, Arc<[u8]>>>,
    bytes: usize,
}

/// The seat role of this node.
pub struct Seat {
    outbox: Outbox,
    sealing: SealingSecret,
    blobs: BlobStore,
    votes: VoteBook,
    keys: sled::Tree,
    /// Every sealed key delivered to this node, per session in delivery order: key
    /// `session || sequence (big-endian u32)`, value the encoded [`DeliveredKey`].
    delivered: sled::Tree,
    /// The ephemeral key of every sealed key delivered to this node: key the ephemeral
    /// key, value `session || segment (big-endian)` of the first key that carried it, or
    /// empty once two different keys did (then none of them is ever reported).
    ephemerals: sled::Tree,
    /// Seats whose bad key this node reported: key `session || segment || round`.
    reported: sled::Tree,
    fetch: Option<FetchBlob>,
    /// Ciphertexts fetched from peers, per session, kept in memory while the session runs
    /// (the segments that cite one need no second fetch) and dropped in `forget`; at most
    /// [`MAX_FETCHED_BYTES`] in all (past it a ciphertext is used and not kept).
    fetched: std::sync::Mutex<Fetched>,
    /// The sealed keys taken from pooled deliveries and kept, by (session, segment): when
    /// the decided delivery brings the same box, it is not opened a second time.
    pooled: std::sync::Mutex<std::collections::HashMap<(Hash, u16), SealedKey>>,
    judges: Vec<Arc<dyn Auditor>>,
    /// Seats (session, segment, round) that could not read their segment yet: the ones
    /// that give up with an abstention when their commit window is about to close.
    stuck: std::sync::Mutex<BTreeSet<(Hash, u16, u8)>>,
    /// Sends the commitments and openings of every session, batched.
    sender: Arc<VoteSender>,
    /// Counters.
    pub metrics: Arc<SeatMetrics>,
    /// A test behaviour, and the seats a copy-cat already tried to copy for.
    #[cfg(feature = "misbehave")]
    misbehave: Option<(Behaviour, CopiedSeats)>,
}

impl std::fmt::Debug for Seat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Seat").finish_non_exhaustive()
    }
}

fn key_of(session: &Hash, segment: u16) -> Vec<u8> {
    let mut k = session.as_ref().to_vec();
    k.extend_from_slice(&segment.to_be_bytes());
    k
}

impl Seat {
    /// The seat role over `db`.
    pub fn open(
        outbox: Outbox,
        sealing: SealingSecret,
        blobs: BlobStore,
        db: &sled::Db,
        fetch: Option<FetchBlob>,
        metrics: Arc<SeatMetrics>,
    ) -> Result<Self, SeatError> {
        let votes = VoteBook::open(db)?;
        Ok(Self {
            sender: Arc::new(VoteSender::new(
                outbox.clone(),
                votes.clone(),
                metrics.clone(),
            )),
            outbox,
            sealing,
            blobs,
            votes,
            keys: db.open_tree("seat/keys")?,
            delivered: db.open_tree("seat/delivered")?,
            ephemerals: db.open_tree("seat/ephemerals")?,
            reported: db.open_tree("seat/reported")?,
            fetch,
            judges: vec![Arc::new(ComputerAuditor)],
            fetched: std::sync::Mutex::default(),
            pooled: std::sync::Mutex::default(),
            stuck: std::sync::Mutex::default(),
            metrics,
            #[cfg(feature = "misbehave")]
            misbehave: None,
        })
    }

    /// Misbehaves on purpose, as `b` says (test builds only).
    #[cfg(feature = "misbehave")]
    pub fn with_behaviour(mut self, b: Behaviour) -> Self {
        self.misbehave = Some((b, std::sync::Mutex::default()));
        self
    }

    /// The vote to commit for the judge's `decision` on the segment with seat seed `seed`:
    /// the decision itself, unless a test behaviour twists it.
    fn twisted(&self, decision: Decision, seed: &Hash) -> Decision {
        #[cfg(feature = "misbehave")]
        if let Some((b, _)) = &self.misbehave {
            return b.twist(decision, seed, &self.outbox.key().public());
        }
        let _ = seed;
        decision
    }

    /// Whether this seat judges and commits its own votes (a copy-cat does not).
    #[cfg(feature = "misbehave")]
    fn judges_itself(&self) -> bool {
        self.misbehave
            .as_ref()
            .is_none_or(|(b, _)| b.commits_own_vote())
    }

    /// Whether this seat opens its commitments (a withholder does not).
    fn reveals(&self) -> bool {
        #[cfg(feature = "misbehave")]
        if let Some((b, _)) = &self.misbehave {
            return b.reveals();
        }
        true
    }

    /// Judges with these auditors (one per tier) instead of the Computer tier's alone.
    pub fn with_judges(mut self, judges: Vec<Arc<dyn Auditor>>) -> Self {
        self.judges = judges;
        self
    }

    fn judge_for(&self, tier: Tier) -> Option<&Arc<dyn Auditor>> {
        self.judges.iter().find(|j| j.tier() == tier)
    }

    /// Whether every judge of this node is the Computer tier's (milliseconds a segment;
    /// an LLM endpoint or a person takes seconds to minutes, and is not to be flooded).
    pub fn judges_only_computer(&self) -> bool {
        self.judges.iter().all(|j| j.tier() == Tier::Computer)
    }

    fn fail(&self, what: &str, session: &Hash, segment: u16, err: impl std::fmt::Display) {
        self.metrics.failures.fetch_add(1, Ordering::Relaxed);
        tracing::warn!(%session, segment, error = %err, "{what}");
    }

    /// After a restart: reveals what was left unrevealed in sessions now in their reveal
    /// window ([`plan::resume`]), and returns the sessions still taking commitments where
    /// this node may commit, to vote in.
    pub async fn resume(&self, contract: &Contract) -> Vec<Hash> {
        let mut committing = Vec::new();
        for d in plan::resume(&self.outbox.key().public(), contract.state()) {
            match d {
                Duty::Judge { session } => committing.push(session),
                d => self.perform(&d, contract).await,
            }
        }
        committing
    }

    /// Acts on one decided block: [`Seat::on_events`], then [`Seat::vote`] in each session
    /// it names, one after the other (a running node's duties task runs the votes as tasks
    /// instead, so that a slow fetch never holds up the next block's reveals).
    pub async fn on_block(&self, events: &[Event], contract: &Contract) {
        for session in self.on_events(events, contract).await {
            self.vote(&session, contract).await;
        }
    }

    /// The quick part of a block, as [`plan::plan_seat`] plans it: keys sealed to this node
    /// are opened and kept, closed commit windows are answered with reveals, finished
    /// sessions are forgotten. Returns the sessions in which this node may now vote.
    pub async fn on_events(&self, events: &[Event], contract: &Contract) -> BTreeSet<Hash> {
        let stuck = self.stuck_unvoted();
        let none = BTreeSet::new();
        let node = plan::Node {
            me: self.outbox.key().public(),
            desk: false,
            provided: &none,
            stuck: &stuck,
            copies: self.copies(),
        };
        let mut judge = BTreeSet::new();
        let mut reveals = Vec::new();
        for d in plan::plan_seat(&node, contract.state(), events) {
            match d {
                Duty::Judge { session } => {
                    judge.insert(session);
                }
                Duty::Reveal { session, round } => reveals.push((session, round)),
                d => self.perform(&d, contract).await,
            }
        }
        self.close_rounds(&reveals, contract).await;
        judge
    }

    /// Carries out one of the seat's duties; any other duty is not the seat's and is
    /// ignored ([`Duty::Judge`] is the caller's: [`Seat::vote`]).
    #[cfg_attr(not(feature = "misbehave"), allow(unused_variables))]
    pub async fn perform(&self, duty: &Duty, contract: &Contract) {
        match duty {
            Duty::OpenKey {
                session,
                segment,
                segment_id,
                sealed,
            } => {
                let me = self.outbox.key().public();
                self.keep_delivered(session, *segment, sealed);
                let taken = self
                    .pooled
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&(*session, *segment));
                if taken.as_ref() == Some(sealed) && self.key(session, *segment).is_some() {
                    // The box opened when it was pooled: the key kept is this one's.
                    return;
                }
                match open_key(
                    &self.sealing,
                    sealed,
                    &key_context(session, segment_id, &me),
                ) {
                    Ok(k) => {
                        let _ = self.keys.insert(key_of(session, *segment), k.to_vec());
                    }
                    // Its seats are stuck: they give up when the window closes, and
                    // report the key when it closes (`close_rounds`).
                    Err(e) => self.fail(
                        "a key sealed to this seat does not open",
                        session,
                        *segment,
                        e,
                    ),
                }
            }
            Duty::Reveal { session, round } => {
                self.close_rounds(&[(*session, *round)], contract).await;
            }
            #[cfg(feature = "misbehave")]
            Duty::CopyCommitment { session, segment } => {
                self.copy_commitment(session, *segment, contract).await;
            }
            Duty::SeatDone { session } => self.forget(session),
            _ => {}
        }
    }

    /// Opens the keys a pooled `DeliverKeys`, not decided yet, seals to this node's seats
    /// in `session` (as the chain has it at `state`), and keeps each that opens where this
    /// node keeps no key for the segment yet: the seats then judge while the delivery
    /// waits for its block, and their commitments can land in that same block. Returns
    /// whether any key was kept.
    ///
    /// Nothing of it is on record, so nothing of it counts against anyone: the delivery is
    /// not kept for a bad-key report, and a key that does not open is passed over (the
    /// decided delivery is opened again, and reported if it fails then). A decided key
    /// replaces a pooled one, and a pooled one never replaces any: a stranger's delivery
    /// cannot displace the provider's (its sender must be the session's provider, too).
    /// A segment that does not decrypt under a pooled key leaves its seat waiting
    /// ([`Seat::vote_by`] commits no abstention before the give-up block), so a provider
    /// that pools one key and has another decided cannot make honest seats abstain.
    pub fn take_pooled_keys(
        &self,
        state: &trust_contracts::State,
        pooled: &crate::mempool::PooledKeys,
    ) -> bool {
        let me = self.outbox.key().public();
        let Some(s) = state.sessions.get(&pooled.session) else {
            return false;
        };
        let Phase::Commit { round, .. } = s.phase else {
            return false;
        };
        let seated = s.segments.iter().any(|g| {
            g.seats
                .iter()
                .any(|x| x.account == me && x.round == round && x.commitment.is_none())
        });
        if s.provider != pooled.provider || !seated {
            return false;
        }
        let mut kept = false;
        for k in pooled.keys.iter().filter(|k| k.seat == me) {
            let Some(segment_id) = s.segments.get(usize::from(k.segment)).map(|g| g.entry.id)
            else {
                continue;
            };
            let Ok(key) = open_key(
                &self.sealing,
                &k.sealed,
                &key_context(&pooled.session, &segment_id, &me),
            ) else {
                tracing::debug!(session = %pooled.session, segment = k.segment, "a pooled key does not open; waiting for the decided delivery");
                continue;
            };
            let swapped = self.keys.compare_and_swap(
                key_of(&pooled.session, k.segment),
                None::<&[u8]>,
                Some(key.to_vec()),
            );
            if matches!(swapped, Ok(Ok(()))) {
                kept = true;
                self.pooled
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((pooled.session, k.segment), k.sealed.clone());
            }
        }
        kept
    }

    /// Whether this node copies other seats' commitments instead of judging (a test
    /// build's copy-cat).
    pub fn copies(&self) -> bool {
        #[cfg(feature = "misbehave")]
        return !self.judges_itself();
        #[cfg(not(feature = "misbehave"))]
        false
    }

    /// This node's seats that could not read their segment and have not voted yet:
    /// (session, segment, round). The planner gives their sessions one more try, and an
    /// abstention, when the commit window is about to close.
    pub fn stuck_unvoted(&self) -> BTreeSet<(Hash, u16, u8)> {
        let stuck = self.stuck.lock().unwrap_or_else(|e| e.into_inner());
        stuck
            .iter()
            .filter(|(s, i, round)| matches!(self.votes.get(s, *i, *round), Ok(None)))
            .copied()
            .collect()
    }

    /// Drops what this seat kept of a session that is over: its votes, keys and the
    /// ciphertexts it fetched.
    fn forget(&self, session: &Hash) {
        self.stuck
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(s, _, _)| s != session);
        if let Err(e) = self.votes.forget_session(session) {
            tracing::warn!(%session, error = %e, "votes of a finished session not dropped");
        }
        // Ciphertexts an earlier version kept pinned in the blob store for this seat.
        if let Err(e) = self.blobs.release(session) {
            tracing::warn!(%session, error = %e, "ciphertexts of a finished session not removed");
        }
        self.pooled
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .retain(|(s, _), _| s != session);
        {
            let mut f = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(gone) = f.by_session.remove(session) {
                let freed: usize = gone.values().map(|b| b.len()).sum();
                f.bytes = f.bytes.saturating_sub(freed);
            }
        }
        for tree in [&self.keys, &self.delivered, &self.reported] {
            for k in tree.scan_prefix(session.as_ref()).keys().flatten() {
                let _ = tree.remove(k);
            }
        }
    }

    /// Keeps a sealed key delivered to this node (at most [`MAX_KEPT_KEYS`] per session),
    /// and its ephemeral key.
    fn keep_delivered(&self, session: &Hash, segment: u16, sealed: &SealedKey) {
        let last = self
            .delivered
            .scan_prefix(session.as_ref())
            .keys()
            .next_back()
            .and_then(Result::ok)
            .and_then(|k| <[u8; 4]>::try_from(k.get(32..)?).ok())
            .map(u32::from_be_bytes);
        let seq = last.map_or(0, |l| l.saturating_add(1));
        if usize::try_from(seq).map_or(true, |n| n >= MAX_KEPT_KEYS) {
            tracing::warn!(%session, segment, "too many keys delivered to this node in one session; not kept");
            return;
        }
        let mut key = session.as_ref().to_vec();
        key.extend_from_slice(&seq.to_be_bytes());
        let value = trust_protocol::encode(&DeliveredKey {
            segment,
            sealed: sealed.clone(),
        });
        if let Err(e) = self.delivered.insert(key, value) {
            tracing::warn!(%session, segment, error = %e, "delivered key not kept");
        }
        let first = key_of(session, segment);
        let e = sealed.ephemeral.as_ref();
        let shared = match self.ephemerals.get(e) {
            Ok(None) => self.ephemerals.insert(e, first),
            Ok(Some(v)) if v.as_ref() != first.as_slice() && !v.is_empty() => {
                tracing::warn!(%session, segment, "an ephemeral key came in two sealed keys: neither will be reported");
                self.ephemerals.insert(e, Vec::new())
            }
            other => other,
        };
        if let Err(e) = shared {
            tracing::warn!(%session, segment, error = %e, "ephemeral key not kept");
        }
    }

    /// The sealed keys delivered to this node in `session`, in order.
    fn delivered(&self, session: &Hash) -> Vec<DeliveredKey> {
        self.delivered
            .scan_prefix(session.as_ref())
            .values()
            .flatten()
            .filter_map(|v| trust_protocol::decode::<DeliveredKey>(&v).ok())
            .collect()
    }

    /// Whether `sealed`'s ephemeral key came in this key of `session` and `segment` only.
    fn ephemeral_is_its_own(&self, session: &Hash, segment: u16, sealed: &SealedKey) -> bool {
        matches!(
            self.ephemerals.get(sealed.ephemeral.as_ref()),
            Ok(Some(v)) if v.as_ref() == key_of(session, segment).as_slice()
        )
    }

    /// A round's commit window closed: reports the keys on record for this node's seats of
    /// it that do not open ([`Seat::report_bad_keys`]), then reveals.
    pub async fn close_rounds(&self, closed: &[(Hash, u8)], contract: &Contract) {
        for (session, round) in closed {
            self.report_bad_keys(session, *round, contract).await;
        }
        self.reveal(closed).await;
    }

    /// For each seat of this node in `round` of `session`: if a key on record for it (the
    /// keys that set its key bits, found among those delivered) does not open, and no
    /// other key of that segment did, sends the proof (`ReportBadKey`), once. A key whose
    /// ephemeral key also came in another sealed key is never reported (see the module
    /// documentation).
    pub async fn report_bad_keys(&self, session: &Hash, round: u8, contract: &Contract) {
        let me = self.outbox.key().public();
        let Some(s) = contract.state().sessions.get(session) else {
            return;
        };
        if !matches!(s.phase, Phase::Commit { round: r, .. } | Phase::Reveal { round: r, .. } if r == round)
        {
            return;
        }
        let delivered = self.delivered(session);
        if delivered.is_empty() {
            return;
        }
        for (i, g) in s.segments.iter().enumerate() {
            let Ok(segment) = u16::try_from(i) else { break };
            let Some(seat) = g.seats.iter().find(|x| x.account == me && x.round == round) else {
                continue;
            };
            let mut marker = key_of(session, segment);
            marker.push(round);
            if seat.bad_key || matches!(self.reported.get(&marker), Ok(Some(_))) {
                continue;
            }
            let needs: Vec<u16> = std::iter::once(segment)
                .chain(g.entry.depends_on.iter().copied())
                .collect();
            let Some(keys) = find_record(&delivered, &needs, &seat.key_record) else {
                continue;
            };
            let context = |k: &DeliveredKey| {
                s.segments
                    .get(usize::from(k.segment))
                    .map(|g| key_context(session, &g.entry.id, &me))
            };
            let bad = keys.iter().enumerate().find_map(|(at, k)| {
                let ctx = context(k)?;
                let unread = self.key(session, k.segment).is_none()
                    && open_key(&self.sealing, &k.sealed, &ctx).is_err();
                unread.then_some((at, k, ctx))
            });
            let Some((at, k, ctx)) = bad else {
                continue;
            };
            if !self.ephemeral_is_its_own(session, k.segment, &k.sealed) {
                tracing::warn!(%session, segment, key = k.segment, "the key that does not open shares its ephemeral key with another sealed key: not reported, revealing its shared secret could open the other");
                continue;
            }
            let (shared, proof) = match prove_bad_key(&self.sealing, &k.sealed, &ctx) {
                Ok(p) => p,
                Err(e) => {
                    self.fail(
                        "a key that does not open could not be proven",
                        session,
                        segment,
                        e,
                    );
                    continue;
                }
            };
            let call = Call::ReportBadKey {
                session: *session,
                segment,
                bad: u8::try_from(at).unwrap_or(u8::MAX),
                keys,
                shared,
                proof,
            };
            match self.outbox.send(call).await {
                Ok(tx) => {
                    let _ = self.reported.insert(marker, Vec::new());
                    self.metrics
                        .bad_keys_reported
                        .fetch_add(1, Ordering::Relaxed);
                    tracing::warn!(%session, segment, round, %tx, "reported a key the provider sealed to this seat that does not open");
                }
                Err(e) => self.fail("bad-key report not sent", session, segment, e),
            }
        }
    }

    fn key(&self, session: &Hash, segment: u16) -> Option<[u8; KEY_LEN]> {
        let v = self.keys.get(key_of(session, segment)).ok()??;
        <[u8; KEY_LEN]>::try_from(v.as_ref()).ok()
    }

    /// The decrypted segment; its ciphertext from the blob store, else (when `fetch`) from
    /// peers.
    async fn plaintext(
        &self,
        session: &Hash,
        segment: u16,
        contract: &Contract,
        fetch: bool,
    ) -> Result<SegmentDoc, ReadError> {
        let entry = contract
            .state()
            .sessions
            .get(session)
            .and_then(|s| s.segments.get(usize::from(segment)))
            .map(|s| s.entry.clone())
            .ok_or(ReadError::UnknownSegment)?;
        let key = self.key(session, segment).ok_or(ReadError::NoKey)?;
        let kept = self
            .fetched
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .by_session
            .get(session)
            .and_then(|m| m.get(&entry.cid))
            .cloned();
        let blob: Vec<u8> = match kept {
            Some(b) => b.to_vec(),
            None => match self.blobs.get(&entry.cid)? {
                Some(b) => b,
                None => {
                    let f = self
                        .fetch
                        .as_ref()
                        .filter(|_| fetch)
                        .ok_or(ReadError::NotHere(entry.cid))?;
                    let b =
                        crate::cpu::Measured::new(crate::cpu::Part::Fetch, f(entry.cid)).await?;
                    if !entry.cid.matches(&b) {
                        return Err(ReadError::Blobs(BlobError::Mismatch(entry.cid)));
                    }
                    // Kept in memory while the session runs, so judging the segments
                    // that cite it needs no second fetch; dropped in `forget`.
                    let mut kept = self.fetched.lock().unwrap_or_else(|e| e.into_inner());
                    if kept.bytes.saturating_add(b.len()) <= MAX_FETCHED_BYTES {
                        kept.bytes = kept.bytes.saturating_add(b.len());
                        kept.by_session
                            .entry(*session)
                            .or_default()
                            .insert(entry.cid, Arc::from(b.as_slice()));
                    }
                    b
                }
            },
        };
        let plain = crate::cpu::measure(crate::cpu::Part::Decrypt, || {
            decrypt_segment(&key, &entry.id, &blob)
        })?;
        Ok(SegmentDoc::from_bytes(&plain)?)
    }

    /// Judges and commits every segment of `session` on which this node holds a seat,
    /// has every key it needs and has not voted yet.
    ///
    /// The seats are collected first (cheap, in manifest order), then judged at most
    /// [`MAX_CONCURRENT_JUDGEMENTS`] at once: an LLM judge may take half the commit window
    /// per segment, and a node holding several seats of one session must not spend the
    /// whole window judging them one after the other. Each decision is persisted and
    /// committed as soon as it is made.
    pub async fn vote(&self, session: &Hash, contract: &Contract) {
        self.vote_by(session, contract, None, false).await;
    }

    /// [`vote`](Self::vote), with a deadline: once `tip` says the chain reached the block
    /// where the seats give up ([`GIVE_UP_BLOCKS`] before the commit deadline, or the next
    /// block when the vote starts that late), every seat still reading or judging its
    /// segment (a fetch waiting its turn behind a burst of sessions, a slow judge) commits
    /// an abstention saying so, in time for it to land, instead of missing the window.
    ///
    /// A `delayed` vote (one that waited for a judging slot until its give-up block) gets
    /// no next block: past the give-up block, its seats judge what this node already
    /// holds and abstain at once on what would need a fetch. An abstention sent a block
    /// later lands, under load, after the window: refused, it leaves a hole in this
    /// node's nonces that holds back every later transaction of the node, other
    /// sessions' votes among them, until a no-op fills it.
    pub async fn vote_by(
        &self,
        session: &Hash,
        contract: &Contract,
        tip: Option<&TipReaches>,
        delayed: bool,
    ) {
        let me = self.outbox.key().public();
        let Some(s) = contract.state().sessions.get(session) else {
            return;
        };
        let (commit_until, committing) = match s.phase {
            Phase::Commit { until, round } => (until, Some(round)),
            _ => (contract.state().height, None),
        };
        let give_up = gives_up(contract.state().height, commit_until);
        let mut todo = Vec::new();
        let mut starved = Vec::new();
        for (i, seg) in s.segments.iter().enumerate() {
            let Ok(segment) = u16::try_from(i) else { break };
            // Only the round taking commitments: a seat this node held in an earlier round
            // (one an appeal now judges again) has had its turn.
            let Some(seat) = seg
                .seats
                .iter()
                .filter(|x| x.account == me && x.commitment.is_none())
                .filter(|x| committing.is_none_or(|r| x.round == r))
                .max_by_key(|x| x.round)
            else {
                continue;
            };
            let round = seat.round;
            if matches!(self.votes.get(session, segment, round), Ok(Some(_))) {
                continue;
            }
            if plan::starved_for_good(contract.state(), s, seg, seat) {
                // Its keys did not land by the key deadline and a later one never counts:
                // abstain now rather than wait for the window to close.
                starved.push(self.starved(session, segment, round, seg, contract));
                continue;
            }
            let needed: Vec<u16> = std::iter::once(segment)
                .chain(seg.entry.depends_on.iter().copied())
                .collect();
            if !give_up && needed.iter().any(|n| self.key(session, *n).is_none()) {
                // The rest of the keys may come in a later block.
                self.stuck
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert((*session, segment, round));
                continue;
            }
            todo.push((segment, round, seg));
        }
        #[cfg(feature = "misbehave")]
        if !self.judges_itself() {
            for (segment, _, _) in todo {
                self.copy_commitment(session, segment, contract).await;
            }
            return;
        }
        // A bounded set of judgements in flight, refilled as each one ends.
        let limit = todo
            .iter()
            .filter_map(|(_, _, seg)| self.judge_for(seg.tier))
            .map(|j| j.concurrency())
            .max()
            .unwrap_or(MAX_CONCURRENT_JUDGEMENTS)
            .max(MAX_CONCURRENT_JUDGEMENTS);
        let height = contract.state().height;
        let late_at = commit_until
            .saturating_sub(GIVE_UP_BLOCKS)
            .max(height.saturating_add(u64::from(!delayed)));
        let deadline = match tip {
            Some(tip) => tip(late_at),
            None => std::future::pending().boxed(),
        }
        .shared();
        let mut todo = todo.into_iter();
        let mut running = FuturesUnordered::new();
        // Decisions made and not yet committed: persisted together, with one flush,
        // whenever no further judgement is ready without waiting (a Computer judge
        // decides a whole session's seats at once; a slow LLM judge one by one).
        let mut made = starved;
        loop {
            while running.len() < limit {
                let Some((segment, round, seg)) = todo.next() else {
                    break;
                };
                let decide = self.decide(
                    session,
                    segment,
                    round,
                    commit_until,
                    give_up,
                    seg,
                    contract,
                );
                let deadline = deadline.clone();
                running.push(async move {
                    tokio::select! {
                        biased;
                        done = decide => done,
                        () = deadline => self.too_late(session, segment, round, seg, late_at),
                    }
                });
            }
            if let Some(Some(done)) = running.next().now_or_never() {
                made.push(done);
                if made.len() < MAX_COMMIT_BATCH {
                    continue;
                }
            }
            if !made.is_empty() {
                self.commit_all(std::mem::take(&mut made)).await;
                continue;
            }
            match running.next().await {
                Some(done) => made.push(done),
                None => break,
            }
        }
    }

    /// Persists decisions (votes and fresh salts, one flush for all) and only then sends
    /// their commitments.
    async fn commit_all(&self, made: Vec<(Hash, u16, u8, Hash, Option<Decision>)>) {
        let me = self.outbox.key().public();
        let mut records = Vec::with_capacity(made.len());
        for (session, segment, round, segment_id, decision) in made {
            let Some(Decision { vote, reason }) = decision else {
                continue;
            };
            if vote.is_abstain() {
                self.metrics.abstained.fetch_add(1, Ordering::Relaxed);
            }
            let mut salt = [0u8; 32];
            rand::rngs::OsRng.fill_bytes(&mut salt);
            records.push(VoteRecord {
                session,
                segment,
                round,
                segment_id,
                seat: me,
                vote,
                salt: Salt(salt),
                revealed: false,
                // The reason as committed: within the protocol's limit, cut on a
                // character boundary.
                reason: trust_protocol::fit_reason(&reason),
            });
        }
        let persisted = self.votes.record_all(&records);
        let mut ready = Vec::with_capacity(records.len());
        for (r, persisted) in records.into_iter().zip(persisted) {
            match persisted {
                Ok(c) => ready.push(Outgoing::Commit(r, c)),
                Err(e) => self.fail(
                    "vote not persisted; not committing",
                    &r.session,
                    r.segment,
                    e,
                ),
            }
        }
        self.send_votes(ready).await;
    }

    /// The judge's decision on one seat's segment, with the seat it is for. When the
    /// segment or a premise it cites cannot be read: `None` (logged; a later block tries
    /// again), or, once the seat `give_up`, an abstention that says what could not be read.
    #[allow(clippy::too_many_arguments)]
    async fn decide(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
        commit_until: u64,
        give_up: bool,
        seg: &SegmentState,
        contract: &Contract,
    ) -> (Hash, u16, u8, Hash, Option<Decision>) {
        let id = seg.entry.id;
        let seed = Hash::of_parts("trust/v1/seat-seed", &[session.as_ref(), id.as_ref()]);
        let Some(judge) = self.judge_for(seg.tier) else {
            let why = format!("this node has no {:?}-tier judge", seg.tier);
            let decision = self.twisted(Decision::abstain(why), &seed);
            return (*session, segment, round, id, Some(decision));
        };
        let seat_key = (*session, segment, round);
        let was_stuck = self
            .stuck
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .contains(&seat_key);
        // A stuck seat giving up tries what this node holds; a first try may fetch.
        let fetch = !(give_up && was_stuck);
        let view = match self.view(session, segment, contract, fetch).await {
            Ok(v) => {
                self.stuck
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&seat_key);
                v
            }
            Err(why) if give_up => {
                self.stuck
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .remove(&seat_key);
                let decision = Decision::abstain(format!(
                    "could not read the segment before the commit deadline (block {commit_until}): {why}"
                ));
                return (
                    *session,
                    segment,
                    round,
                    id,
                    Some(self.twisted(decision, &seed)),
                );
            }
            Err(_) => {
                self.stuck
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .insert(seat_key);
                return (*session, segment, round, id, None);
            }
        };
        let implications = if judge.wants_implications() {
            self.implications(session, segment, contract).await
        } else {
            Vec::new()
        };
        let seat = SeatRef {
            session: *session,
            segment,
            round,
            segment_id: id,
            commit_until,
            implications,
        };
        // A calculation inside the claim that does not hold makes the claim wrong: the
        // judge is not asked (its Computer seats decide the same, and the contract makes
        // the segment wrong from their votes).
        let decision = match view.failed_operation() {
            Some(d) => d,
            None => judge.judge_seat(&seat, &view, &seed).await,
        };
        let mut decision = self.twisted(decision, &seed);
        // The reveal is public and permanent: it says what was checked, not what the
        // segment says.
        decision.reason = judge::public_reason(&view, &decision.reason);
        (*session, segment, round, id, Some(decision))
    }

    /// The abstention of a seat starved for good ([`plan::starved_for_good`]): the
    /// provider's keys did not land by the round's key deadline, so nothing it could read
    /// later would count. It is present, never slashed, and paid by the provider.
    fn starved(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
        seg: &SegmentState,
        contract: &Contract,
    ) -> (Hash, u16, u8, Hash, Option<Decision>) {
        let deadline = contract
            .state()
            .sessions
            .get(session)
            .and_then(|s| trust_contracts::key_deadline(&contract.state().params, s))
            .unwrap_or_default();
        tracing::info!(%session, segment, round, deadline, "seat starved: its keys did not land by the key deadline; abstaining");
        self.gives_up_abstaining(
            session,
            segment,
            round,
            seg,
            format!("the provider's keys did not land by the key deadline (block {deadline})"),
        )
    }

    /// The abstention of a seat still reading or judging its segment when the chain
    /// reached block `late_at`, where it gives up.
    fn too_late(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
        seg: &SegmentState,
        late_at: u64,
    ) -> (Hash, u16, u8, Hash, Option<Decision>) {
        self.gives_up_abstaining(
            session,
            segment,
            round,
            seg,
            format!(
                "still reading or judging the segment at block {late_at}, the last to commit in"
            ),
        )
    }

    /// A seat that stops reading or judging: no longer stuck, counted as given up, and
    /// its abstention saying `why`.
    fn gives_up_abstaining(
        &self,
        session: &Hash,
        segment: u16,
        round: u8,
        seg: &SegmentState,
        why: String,
    ) -> (Hash, u16, u8, Hash, Option<Decision>) {
        let id = seg.entry.id;
        self.stuck
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&(*session, segment, round));
        self.metrics.gave_up.fetch_add(1, Ordering::Relaxed);
        let seed = Hash::of_parts("trust/v1/seat-seed", &[session.as_ref(), id.as_ref()]);
        (
            *session,
            segment,
            round,
            id,
            Some(self.twisted(Decision::abstain(why), &seed)),
        )
    }

    /// Hands commitments and openings to this node's one vote sender ([`VoteSender`]) and
    /// waits until they are sent.
    async fn send_votes(&self, votes: Vec<Outgoing>) {
        self.sender.send(votes).await;
    }

    /// The segment as its judge sees it: the decrypted claim with its givens, and the
    /// claims of the segments it cites. An error (logged) naming what is unavailable when
    /// any of them is: judging without a premise could call a sound step ungrounded.
    async fn view(
        &self,
        session: &Hash,
        segment: u16,
        contract: &Contract,
        fetch: bool,
    ) -> Result<SegmentView, ViewError> {
        let seg = contract
            .state()
            .sessions
            .get(session)
            .and_then(|s| s.segments.get(usize::from(segment)))
            .ok_or(ViewError::Gone)?;
        let doc = match self.plaintext(session, segment, contract, fetch).await {
            Ok(c) => c,
            Err(e) => {
                self.fail("segment unavailable", session, segment, &e);
                return Err(ViewError::Segment { segment, source: e });
            }
        };
        let mut cited = Vec::with_capacity(seg.entry.depends_on.len());
        for d in &seg.entry.depends_on {
            match self.plaintext(session, *d, contract, fetch).await {
                Ok(p) => cited.push((*d, p)),
                Err(e) => {
                    self.fail("premise unavailable; not voting", session, *d, &e);
                    return Err(ViewError::Premise {
                        premise: *d,
                        source: e,
                    });
                }
            }
        }
        // A segment of a formal proof is checked against the proof's structure and the
        // session's public manifest.
        let formal = {
            let refs: Vec<(u16, Option<&SegmentDoc>)> =
                cited.iter().map(|(p, d)| (*p, Some(d))).collect();
            FormalView::of(segment, &doc, &refs, || {
                contract
                    .state()
                    .sessions
                    .get(session)
                    .map(|s| {
                        s.segments
                            .iter()
                            .map(|x| (x.entry.tier, x.entry.depends_on.clone()))
                            .collect()
                    })
                    .unwrap_or_default()
            })
        };
        let premises = cited.into_iter().map(|(_, p)| p.claim).collect();
        Ok(SegmentView::new(doc, premises, seg.entry.conclusion).with_formal(formal))
    }

    /// The claims of the later segments of `session` that cite `segment` and whose keys
    /// this node holds (it sits on them too, or they cite what it sits on): what follows
    /// from the segment, as far as this seat may see. Unreadable ones are left out.
    async fn implications(&self, session: &Hash, segment: u16, contract: &Contract) -> Vec<String> {
        let Some(s) = contract.state().sessions.get(session) else {
            return Vec::new();
        };
        let mut out = Vec::new();
        for (j, seg) in s.segments.iter().enumerate() {
            let Ok(j) = u16::try_from(j) else { break };
            if !seg.entry.depends_on.contains(&segment) || self.key(session, j).is_none() {
                continue;
            }
            if let Ok(doc) = self.plaintext(session, j, contract, true).await {
                out.push(doc.claim);
            }
        }
        out
    }

    /// A copy-cat's commit: replays the commitment another seat of the same round
    /// published on `segment`, once per seat (test builds only).
    #[cfg(feature = "misbehave")]
    async fn copy_commitment(&self, session: &Hash, segment: u16, contract: &Contract) {
        let me = self.outbox.key().public();
        let Some(seg) = contract
            .state()
            .sessions
            .get(session)
            .and_then(|s| s.segments.get(usize::from(segment)))
        else {
            return;
        };
        let Some(round) = seg
            .seats
            .iter()
            .filter(|x| x.account == me && x.commitment.is_none())
            .map(|x| x.round)
            .max()
        else {
            return;
        };
        let Some(theirs) = seg
            .seats
            .iter()
            .find(|x| x.account != me && x.round == round)
            .and_then(|x| x.commitment)
        else {
            return; // nothing published yet: wait for a `Committed` event
        };
        let Some((_, tried)) = &self.misbehave else {
            return;
        };
        if !tried
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert((*session, segment, round))
        {
            return;
        }
        match self
            .outbox
            .send(trust_protocol::tx::Call::Commit {
                session: *session,
                segment,
                commitment: theirs,
            })
            .await
        {
            Ok(tx) => {
                tracing::warn!(%session, segment, %tx, "test behaviour copy-cat: replayed another seat's commitment")
            }
            Err(e) => {
                tracing::warn!(%session, segment, error = %e, "test behaviour copy-cat: replay not sent")
            }
        }
    }

    /// Opens every unrevealed vote of each (session, round) whose commit window closed,
    /// all of them in as few transactions as [`Seat::send_votes`] needs.
    pub async fn reveal(&self, closed: &[(Hash, u8)]) {
        let mut out = Vec::new();
        for (session, round) in closed {
            let Ok(records) = self.votes.unrevealed(session) else {
                continue;
            };
            if !self.reveals() {
                if !records.is_empty() {
                    tracing::warn!(%session, round, held = records.len(), "test behaviour: commitments left unopened on purpose");
                }
                continue;
            }
            out.extend(
                records
                    .into_iter()
                    .filter(|r| r.round == *round)
                    .map(Outgoing::Reveal),
            );
        }
        self.send_votes(out).await;
    }
}

#[cfg(test)]
mod tests {
    use std::{collections::BTreeSet, sync::atomic::AtomicU64};

    use trust_contracts::SegmentVerdict;
    use trust_protocol::seal::seal_key;

    use super::*;
    use crate::audit::{
        provider::Provider,
        testkit::{Chain, auditor, from_store, provider_key, sealing, seat_of},
    };
    use trust_protocol::{Vote, tx::Call};

    const INCORRECT: &str = include_str!("../../../examples/traces/fraction-incorrect.txt");

    struct Node {
        seat: Seat,
        _dir: tempfile::TempDir,
    }

    /// Seat `i`, with its own sled and blob store; `fetch` plays the part of Bitswap.
    fn seat(chain: &Chain, i: usize, fetch: Option<FetchBlob>) -> Node {
        let (seat, dir) = seat_of(chain, i, fetch);
        Node { seat, _dir: dir }
    }

    /// Seats 0 to 3, each fetching from the provider's blob store `blobs`.
    fn four_seats(chain: &Chain, blobs: &BlobStore) -> Vec<Node> {
        (0..4)
            .map(|i| seat(chain, i, Some(from_store(blobs.clone()))))
            .collect()
    }

    fn provider(chain: &Chain) -> (Provider, BlobStore, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let blobs = BlobStore::open(&db).unwrap();
        let p = Provider::open(chain.outbox(provider_key()), blobs.clone(), &db).unwrap();
        (p, blobs, dir)
    }

    /// Runs blocks until the session is no longer live (at most `max`).
    async fn run(chain: &mut Chain, p: &Provider, seats: &[Node], session: &Hash, max: usize) {
        for _ in 0..max {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            if !chain.contract.state().sessions.contains_key(session) {
                return;
            }
        }
        panic!("session still live after {max} blocks");
    }

    /// The outcome of `session`, decided, with no seat a no-show and none of the four
    /// auditors slashed.
    fn no_show_nor_slash(chain: &Chain, session: &Hash) -> trust_contracts::Outcome {
        let st = chain.contract.state();
        let o = st.outcomes.get(session).expect("decided").clone();
        for g in &o.segments {
            assert_eq!(g.votes.missing, 0, "no seat was a no-show: {g:?}");
        }
        for i in 0..4 {
            assert_eq!(st.auditors[&auditor(i).public()].slashed, 0);
        }
        o
    }

    fn count(n: &Node, f: impl Fn(&SeatMetrics) -> &AtomicU64) -> u64 {
        f(&n.seat.metrics).load(Ordering::Relaxed)
    }

    #[tokio::test]
    async fn seats_judge_commit_and_reveal_and_the_wrong_step_fails_with_those_after_it() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let seats = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        run(&mut chain, &p, &seats, &s.session, 40).await;
        let o = chain
            .contract
            .state()
            .outcomes
            .get(&s.session)
            .expect("decided");
        let verdict = |name: &str| {
            let i = s.segments.iter().position(|(n, _)| n == name).unwrap();
            o.segments[i].verdict
        };
        assert_eq!(verdict("O2"), SegmentVerdict::Invalid);
        assert_eq!(verdict("O3"), SegmentVerdict::Propagated);
        // The final answer is for the LLM tier, which this network lacks: it is left out,
        // and the error reaches it through the steps it rests on.
        assert!(!s.segments.iter().any(|(n, _)| n == "F1"));
        assert!(
            o.left_out
                .iter()
                .any(|l| l.supports.is_none() && l.verdict == SegmentVerdict::Propagated)
        );
        assert!(o.error_at_conclusion);
        assert_eq!(o.trace, trust_contracts::TraceVerdict::Fail);
        // The provider's honeypot was opened, and the honest seats rejected it.
        assert!(s.honeypots >= 1, "a honeypot planted");
        for (i, (name, _)) in s.segments.iter().enumerate() {
            let g = &o.segments[i];
            assert_eq!(
                g.honeypot.is_some(),
                name.starts_with("honeypot:"),
                "{name}"
            );
            if g.honeypot.is_some() {
                assert!(g.verdict.is_error(), "{name}: {:?}", g.verdict);
                assert_eq!(g.votes.valid, 0, "{name}: an honest seat approved it");
            }
        }
        let committed: u64 = seats.iter().map(|n| count(n, |m| &m.committed)).sum();
        let revealed: u64 = seats.iter().map(|n| count(n, |m| &m.revealed)).sum();
        assert!(committed > 0);
        assert_eq!(committed, revealed, "every commitment was opened");
        assert!(seats.iter().all(|n| count(n, |m| &m.failures) == 0));
        // The decided session's votes and keys are gone from every seat.
        for n in &seats {
            assert!(n.seat.votes.unrevealed(&s.session).unwrap().is_empty());
            assert_eq!(n.seat.keys.scan_prefix(s.session.as_ref()).count(), 0);
            assert!(
                n.seat.blobs.is_empty(),
                "fetched ciphertexts never written to disk"
            );
            assert!(
                n.seat.fetched.lock().unwrap().by_session.is_empty(),
                "fetched ciphertexts dropped"
            );
        }
        // The provider keeps its ciphertexts while the session may be appealed, and
        // removes them once it is final.
        assert!(
            !blobs.is_empty(),
            "the provider's ciphertexts kept for appeals"
        );
        let window = chain.contract.state().params.appeal_window;
        for _ in 0..=window {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            if ev
                .iter()
                .any(|e| matches!(e, Event::SessionFinal { session } if *session == s.session))
            {
                break;
            }
        }
        assert!(
            matches!(
                chain.contract.finality(&s.session),
                Some(trust_contracts::Finality::Final { .. })
            ),
            "final after its window"
        );
        assert!(
            blobs.is_empty(),
            "the provider's ciphertexts removed once final"
        );
    }

    /// The crash the vote book exists for: a seat commits, its node dies before the
    /// commit window closes, and the restarted node still reveals from what it flushed.
    #[tokio::test]
    async fn a_seat_restarted_between_commit_and_reveal_still_reveals() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let mut seats = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let mut committed_before_crash = 0;
        for _ in 0..20 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in &seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            committed_before_crash = count(&seats[0], |m| &m.committed);
            if committed_before_crash > 0 {
                break;
            }
        }
        assert!(committed_before_crash > 0, "seat 0 never committed");
        assert_eq!(count(&seats[0], |m| &m.revealed), 0);

        // Kill seat 0's node: drop everything it held in memory, reopen its sled.
        let Node {
            seat: old,
            _dir: dir,
        } = seats.remove(0);
        drop(old);
        let db = sled::open(dir.path()).unwrap();
        let restarted = Seat::open(
            chain.outbox(auditor(0)),
            sealing(0),
            BlobStore::open(&db).unwrap(),
            &db,
            Some(from_store(blobs.clone())),
            Arc::new(SeatMetrics::default()),
        )
        .unwrap();
        for session in restarted.resume(&chain.contract).await {
            restarted.vote(&session, &chain.contract).await;
        }
        assert_eq!(
            restarted.metrics.committed.load(Ordering::Relaxed),
            0,
            "nothing is judged or committed twice"
        );
        seats.insert(
            0,
            Node {
                seat: restarted,
                _dir: dir,
            },
        );
        run(&mut chain, &p, &seats, &s.session, 40).await;
        assert_eq!(
            count(&seats[0], |m| &m.revealed),
            committed_before_crash,
            "every commitment made before the crash was opened after it"
        );
        assert!(chain.contract.state().outcomes.contains_key(&s.session));
    }

    #[tokio::test]
    async fn a_key_sealed_to_another_seat_or_a_ciphertext_that_does_not_decrypt_is_refused() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        chain.block().await;
        chain.block().await; // seats drawn
        let me = auditor(0).public();
        let sess = chain.contract.state().sessions[&s.session].clone();
        let (j, seg) = sess
            .segments
            .iter()
            .enumerate()
            .find(|(_, g)| g.seats.iter().any(|x| x.account == me))
            .expect("seat 0 sits somewhere");
        let j = u16::try_from(j).unwrap();
        let ctx = key_context(&s.session, &seg.entry.id, &me);
        let n = seat(&chain, 0, None);

        // Sealed to seat 1's key but addressed to seat 0: it does not open.
        let wrong = seal_key(&sealing(1).public(), &[7; KEY_LEN], [3; 32], &ctx).unwrap();
        let ev = Event::KeyDelivered {
            session: s.session,
            segment: j,
            seat: me,
            sealed: wrong,
        };
        n.seat.on_block(&[ev], &chain.contract).await;
        assert_eq!(count(&n, |m| &m.failures), 1);
        assert!(n.seat.key(&s.session, j).is_none(), "nothing kept");

        // Sealed to seat 0, but not the segment's key: the ciphertext does not decrypt,
        // so the seat does not vote.
        let n = seat(&chain, 0, Some(from_store(blobs.clone())));
        let mut events = Vec::new();
        for k in std::iter::once(j).chain(seg.entry.depends_on.iter().copied()) {
            let id = sess.segments[usize::from(k)].entry.id;
            let sealed = seal_key(
                &sealing(0).public(),
                &[9; KEY_LEN],
                [4; 32],
                &key_context(&s.session, &id, &me),
            )
            .unwrap();
            events.push(Event::KeyDelivered {
                session: s.session,
                segment: k,
                seat: me,
                sealed,
            });
        }
        n.seat.on_block(&events, &chain.contract).await;
        assert!(count(&n, |m| &m.failures) >= 1);
        assert_eq!(count(&n, |m| &m.committed), 0);
        assert!(n.seat.votes.get(&s.session, j, 0).unwrap().is_none());
    }

    /// The provider's pooled key deliveries, as the mempool holds them before a block.
    async fn pooled_deliveries(chain: &Chain) -> Vec<trust_protocol::tx::SignedTx> {
        chain
            .pool
            .reap(Arc::new(chain.contract.clone()), 1000)
            .await
            .into_iter()
            .filter(|tx| matches!(tx.body.call, Call::DeliverKeys { .. }))
            .collect()
    }

    /// Opens and draws `session`; returns the draw's events once the provider has pooled
    /// its key delivery (not decided yet).
    async fn drawn_with_keys_pooled(chain: &mut Chain, p: &Provider, session: &Hash) {
        for _ in 0..5 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            if !pooled_deliveries(chain).await.is_empty() {
                return;
            }
        }
        panic!("the provider never pooled its keys for {session}");
    }

    /// A watched pool hands on the keys an admitted `DeliverKeys` seals to the watched
    /// account, and only those (not the other seats' entries, not a delivery it refused
    /// as a duplicate); and the reveals of a session once, and only while, it is awaited.
    #[tokio::test]
    async fn a_watched_pool_hands_on_keys_sealed_to_its_account_and_awaited_reveals() {
        use crate::mempool::{Awaited, Pool, Pooled, PooledKeys};
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        drawn_with_keys_pooled(&mut chain, &p, &s.session).await;
        let delivery = pooled_deliveries(&chain).await.remove(0);
        let me = auditor(0).public();
        let (awaiting, awaited) = tokio::sync::watch::channel(Awaited::default());
        let (pool, task) = Pool::new(100, chain.view.subscribe());
        let (task, mut handed) = task.watch(me, awaited);
        tokio::spawn(task.run(crate::tasks::Stop::never()));
        pool.admit(delivery.clone()).await.unwrap();
        assert!(pool.admit(delivery.clone()).await.is_err(), "pooled once");
        let Call::DeliverKeys { keys, .. } = &delivery.body.call else {
            unreachable!()
        };
        let mine: Vec<_> = keys.iter().filter(|k| k.seat == me).cloned().collect();
        assert!(!mine.is_empty() && mine.len() < keys.len());
        assert_eq!(
            handed.try_recv().unwrap(),
            Pooled::Keys(PooledKeys {
                provider: delivery.signer,
                session: s.session,
                keys: mine,
            })
        );
        assert!(handed.try_recv().is_err(), "nothing else handed on");
        // A reveal, pooled before and after its session is awaited.
        let seat = auditor(1);
        let segment = chain.contract.state().sessions[&s.session]
            .segments
            .iter()
            .position(|g| g.seats.iter().any(|x| x.account == seat.public()))
            .map(|i| u16::try_from(i).unwrap())
            .expect("seat 1 sits somewhere");
        let reveal = |nonce| {
            trust_protocol::Signed::sign(
                &seat,
                &chain.contract.chain_id(),
                trust_protocol::tx::Tx {
                    nonce,
                    call: Call::Reveal {
                        session: s.session,
                        segment,
                        vote: Vote::Valid,
                        salt: Salt([1; 32]),
                        reason: "checked".into(),
                    },
                },
            )
        };
        let next = chain.contract.nonce(&seat.public());
        pool.admit(reveal(next)).await.unwrap();
        assert!(handed.try_recv().is_err(), "not awaited: not handed on");
        awaiting.send_replace(Arc::new([s.session].into()));
        pool.admit(reveal(next + 1)).await.unwrap();
        assert!(
            matches!(handed.try_recv(), Ok(Pooled::Reveals(r)) if r.seat == seat.public() && r.reveals.len() == 1)
        );
    }

    /// A node a block behind its peers receives commitments for seats it has not seen
    /// drawn yet: they wait for its next block (`NotYet`, never held against the peer that
    /// gossiped them, which is a block ahead, not lying) and are pooled once that block
    /// shows the seats; those whose sender is not seated are refused then.
    #[tokio::test]
    async fn commitments_for_seats_not_drawn_here_yet_wait_for_the_draw() {
        use crate::mempool::{MempoolError, intake::gossip_verdict};
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        chain.block().await; // opened; seats are drawn at the start of the next block
        assert!(matches!(
            chain.contract.state().sessions[&s.session].phase,
            Phase::Assigning
        ));
        let sign = |i: usize, call: Call| {
            let k = auditor(i);
            trust_protocol::Signed::sign(
                &k,
                &chain.contract.chain_id(),
                trust_protocol::tx::Tx {
                    nonce: chain.contract.nonce(&k.public()),
                    call,
                },
            )
        };
        let commitment = |i: usize, segment: u16| {
            Hash::of_parts(
                "early",
                &[&[u8::try_from(i).unwrap()], &segment.to_be_bytes()],
            )
        };
        // A batch waits as a single commitment does.
        let batch = Call::Commits {
            session: s.session,
            entries: (0..2)
                .map(|segment| trust_protocol::tx::CommitEntry {
                    segment,
                    commitment: commitment(0, segment),
                })
                .collect(),
        };
        let batch = sign(0, batch);
        let single = |i: usize| {
            sign(
                i,
                Call::Commit {
                    session: s.session,
                    segment: 0,
                    commitment: commitment(i, 0),
                },
            )
        };
        let early = crate::mempool::admissible(&batch, &chain.contract);
        assert_eq!(early, Err(MempoolError::NotYet("seats are not drawn yet")));
        assert_eq!(
            gossip_verdict(&early.unwrap_err()),
            crate::net::TxVerdict::Ignore
        );
        assert_eq!(
            crate::mempool::admissible(&single(0), &chain.contract),
            Err(MempoolError::NotYet("seats are not drawn yet"))
        );
        for i in 0..4 {
            assert!(chain.pool.park_checked(single(i)));
        }
        assert_eq!(chain.pooled().await, 0, "kept apart, not pooled");
        chain.block().await; // the draw
        let seated = (0..4)
            .filter(|i| {
                chain.contract.state().sessions[&s.session].segments[0]
                    .seats
                    .iter()
                    .any(|x| x.account == auditor(*i).public())
            })
            .count();
        assert!(seated > 0 && seated < 4);
        assert_eq!(
            chain.pooled().await,
            seated,
            "the seated ones pooled on the block that drew them"
        );
        chain.block().await;
        assert_eq!(chain.pooled().await, 0, "tried once: nothing waits longer");
    }

    /// Seats that take their keys from the provider's pooled delivery judge and commit
    /// before the delivery is decided, so that their commitments land in the very block
    /// that decides the keys: the commit window closes there, a block earlier than when
    /// the seats wait for the keys' block, and the verdict is the same.
    #[tokio::test]
    async fn seats_judging_on_pooled_keys_commit_in_the_block_of_the_keys() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let seats = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        drawn_with_keys_pooled(&mut chain, &p, &s.session).await;
        let deliveries = pooled_deliveries(&chain).await;
        for n in &seats {
            let me = n.seat.outbox.key().public();
            for tx in &deliveries {
                if let Some(keys) = crate::mempool::PooledKeys::of(tx, &me) {
                    assert!(n.seat.take_pooled_keys(chain.contract.state(), &keys));
                    n.seat.vote(&s.session, &chain.contract).await;
                }
            }
        }
        let committed: u64 = seats.iter().map(|n| count(n, |m| &m.committed)).sum();
        assert!(committed > 0, "seats committed on pooled keys");
        let ev = chain.block().await;
        let keyed = ev
            .iter()
            .filter(|e| matches!(e, Event::KeyDelivered { .. }))
            .count();
        let commits = ev
            .iter()
            .filter(|e| matches!(e, Event::Committed { .. }))
            .count();
        assert!(keyed > 0, "the keys landed in this block");
        assert_eq!(
            u64::try_from(commits).unwrap(),
            committed,
            "and every commitment with them"
        );
        assert!(
            ev.iter().any(
                |e| matches!(e, Event::CommitWindowClosed { session, .. } if *session == s.session)
            ),
            "the commit window closed in the keys' block"
        );
        p.on_block(&ev, &chain.contract).await;
        for n in &seats {
            n.seat.on_block(&ev, &chain.contract).await;
        }
        run(&mut chain, &p, &seats, &s.session, 40).await;
        let o = no_show_nor_slash(&chain, &s.session);
        assert_eq!(o.trace, trust_contracts::TraceVerdict::Fail);
        assert!(seats.iter().all(|n| count(n, |m| &m.failures) == 0));
        // Judged once: the keys' block asked for the same votes again.
        let again: u64 = seats.iter().map(|n| count(n, |m| &m.committed)).sum();
        assert_eq!(again, committed, "nothing judged twice");
    }

    /// Adversary: a provider pools keys that open but do not decrypt the segments (and
    /// would have other keys decided), hoping honest seats abstain on what the record
    /// says they could read. Pooled keys are on nobody's record: the seats commit nothing
    /// on them, and judge once the decided keys come. A stranger's delivery, or one in a
    /// session the sender does not provide, is not taken at all, and a pooled key never
    /// displaces a kept one.
    #[tokio::test]
    async fn pooled_keys_that_do_not_decrypt_or_come_from_a_stranger_make_no_vote() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        drawn_with_keys_pooled(&mut chain, &p, &s.session).await;
        let deliveries = pooled_deliveries(&chain).await;
        let me = auditor(0).public();
        let n = seat(&chain, 0, Some(from_store(blobs.clone())));
        let real = deliveries
            .iter()
            .find_map(|tx| crate::mempool::PooledKeys::of(tx, &me))
            .expect("seat 0 is keyed");
        let sess = chain.contract.state().sessions[&s.session].clone();
        // The same entries, sealed to seat 0 under the right context, but of a key that
        // is not the segments'.
        let mut garbage = real.clone();
        for k in &mut garbage.keys {
            let id = sess.segments[usize::from(k.segment)].entry.id;
            k.sealed = seal_key(
                &sealing(0).public(),
                &[9; KEY_LEN],
                [5; 32],
                &key_context(&s.session, &id, &me),
            )
            .unwrap();
        }
        let mut stranger = garbage.clone();
        stranger.provider = auditor(1).public();
        assert!(
            !n.seat.take_pooled_keys(chain.contract.state(), &stranger),
            "not the session's provider"
        );
        assert!(
            garbage
                .keys
                .iter()
                .all(|k| n.seat.key(&s.session, k.segment).is_none())
        );
        assert!(n.seat.take_pooled_keys(chain.contract.state(), &garbage));
        n.seat.vote(&s.session, &chain.contract).await;
        assert_eq!(
            count(&n, |m| &m.committed),
            0,
            "no vote on keys that do not decrypt"
        );
        assert_eq!(count(&n, |m| &m.abstained), 0, "and no abstention");
        // The real delivery, decided: its keys replace the pooled ones, and the seat votes.
        let ev = chain.block().await;
        n.seat.on_block(&ev, &chain.contract).await;
        assert!(
            count(&n, |m| &m.committed) > 0,
            "judged on the decided keys"
        );
        // A pooled key now displaces nothing.
        let kept: Vec<_> = real
            .keys
            .iter()
            .map(|k| n.seat.key(&s.session, k.segment))
            .collect();
        assert!(!n.seat.take_pooled_keys(chain.contract.state(), &garbage));
        let after: Vec<_> = real
            .keys
            .iter()
            .map(|k| n.seat.key(&s.session, k.segment))
            .collect();
        assert_eq!(kept, after);
    }

    /// Runs blocks until the session is no longer live (at most `max`); returns every
    /// event.
    async fn run_collecting(
        chain: &mut Chain,
        p: &Provider,
        seats: &[Node],
        session: &Hash,
        max: usize,
    ) -> Vec<Event> {
        let mut all = Vec::new();
        for _ in 0..max {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            all.extend(ev);
            if !chain.contract.state().sessions.contains_key(session) {
                return all;
            }
        }
        panic!("session still live after {max} blocks");
    }

    /// A provider node seals every key of seat 0 to a key that is not seat 0's: seat 0 is
    /// keyed on record and cannot read a thing. Its node proves each such key does not
    /// open, on its own, and is paid one reward per seat as starved by the provider,
    /// never slashed; the other seats judge as before.
    #[tokio::test]
    async fn a_seat_sealed_keys_that_do_not_open_proves_it_and_is_paid_as_starved() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let victim = auditor(0).public();
        let p = p.with_missealing(victim);
        let seats = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let before = chain.contract.state().accounts[&victim].balance;
        let ev = run_collecting(&mut chain, &p, &seats, &s.session, 60).await;
        let held: BTreeSet<(u16, u8)> = ev
            .iter()
            .filter_map(|e| e.seat_assigned())
            .filter(|(_, _, seat, _)| *seat == victim)
            .map(|(_, segment, _, round)| (segment, round))
            .collect();
        assert!(!held.is_empty(), "seat 0 sits in the session");
        let proven: BTreeSet<u16> = ev
            .iter()
            .filter_map(|e| match e {
                Event::BadKeyProven { seat, segment, .. } if *seat == victim => Some(*segment),
                _ => None,
            })
            .collect();
        let held_segments: BTreeSet<u16> = held.iter().map(|(s, _)| *s).collect();
        assert_eq!(
            proven, held_segments,
            "every seat of seat 0 proved its bad key"
        );
        assert_eq!(
            count(&seats[0], |m| &m.bad_keys_reported),
            held.len() as u64
        );
        let reward = chain.contract.state().params.reward;
        let starved: Vec<u64> = ev
            .iter()
            .filter_map(|e| match e {
                Event::SeatStarved { seat, paid, .. } if *seat == victim => Some(*paid),
                _ => None,
            })
            .collect();
        assert_eq!(starved, vec![reward; held.len()], "paid R per seat");
        assert!(
            !ev.iter()
                .any(|e| matches!(e, Event::Slashed { seat, .. } if *seat == victim)),
            "never slashed"
        );
        assert!(
            !ev.iter()
                .any(|e| matches!(e, Event::Rewarded { seat, .. } if *seat == victim)),
            "it judged nothing"
        );
        assert_eq!(
            chain.contract.state().accounts[&victim].balance,
            before + reward * held.len() as u64
        );
        let o = &chain.contract.state().outcomes[&s.session];
        assert!(o.starved_seats as usize >= held.len());
        // Its abstentions were revealed (present, not no-shows); the others reported nothing.
        assert!(count(&seats[0], |m| &m.revealed) >= held.len() as u64);
        for n in &seats[1..] {
            assert_eq!(count(n, |m| &m.bad_keys_reported), 0);
            assert_eq!(count(n, |m| &m.failures), 0);
        }
        // Forgotten with the session.
        assert_eq!(
            seats[0]
                .seat
                .delivered
                .scan_prefix(s.session.as_ref())
                .count(),
            0
        );
    }

    /// A key that does not open whose ephemeral key also came in another sealed key is
    /// never reported: its shared secret would open the other key. Seat 0 abstains unpaid,
    /// as before this report existed.
    #[tokio::test]
    async fn a_bad_key_sharing_its_ephemeral_key_with_another_is_not_reported() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let victim = auditor(0).public();
        let p = p.with_missealing(victim);
        let seats = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let mut all = Vec::new();
        let mut copied = false;
        for _ in 0..60 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in &seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            // Every ephemeral key sent to seat 0 also arrives in another sealed key (as
            // a copy another provider made would).
            for e in &ev {
                if let Event::KeyDelivered {
                    seat,
                    segment,
                    sealed,
                    ..
                } = e
                    && *seat == victim
                {
                    let other = Hash::of_parts("another session", &[&segment.to_le_bytes()]);
                    seats[0].seat.keep_delivered(&other, *segment, sealed);
                    copied = true;
                }
            }
            all.extend(ev);
            if !chain.contract.state().sessions.contains_key(&s.session) {
                break;
            }
        }
        assert!(copied);
        assert!(!chain.contract.state().sessions.contains_key(&s.session));
        assert_eq!(count(&seats[0], |m| &m.bad_keys_reported), 0);
        assert!(
            !all.iter().any(|e| matches!(e, Event::BadKeyProven { .. })),
            "nothing reported"
        );
        assert!(
            !all.iter()
                .any(|e| matches!(e, Event::SeatStarved { seat, .. } if *seat == victim)),
            "keyed on record, and not proven otherwise"
        );
    }

    /// A stand-in judge (no real judge blocks on purpose): each judgement waits until
    /// `together` judgements have started, then votes Valid; one that waits past the
    /// deadline abstains. Judged one after the other, the first would wait alone.
    #[derive(Debug)]
    struct WaitsForOthers {
        started: tokio::sync::watch::Sender<usize>,
        together: usize,
    }

    #[async_trait::async_trait]
    impl Auditor for WaitsForOthers {
        fn tier(&self) -> Tier {
            Tier::Computer
        }

        async fn judge(&self, _: &SegmentView, _: &Hash) -> Decision {
            let mut rx = self.started.subscribe();
            self.started.send_modify(|n| *n += 1);
            let deadline = std::time::Duration::from_secs(30);
            match tokio::time::timeout(deadline, rx.wait_for(|n| *n >= self.together)).await {
                Ok(Ok(_)) => Decision {
                    vote: trust_protocol::Vote::Valid,
                    reason: "judged while others were judged".into(),
                },
                _ => Decision::abstain("judged alone: no other judgement started"),
            }
        }
    }

    /// A stand-in for an LLM judge (named as such: no model runs in this test): votes
    /// Valid on everything and records each view it is shown.
    #[derive(Debug, Default)]
    struct RecordingJudge {
        seen: std::sync::Mutex<Vec<SegmentView>>,
    }

    #[async_trait::async_trait]
    impl Auditor for RecordingJudge {
        fn tier(&self) -> Tier {
            Tier::Llm
        }

        async fn judge(&self, segment: &SegmentView, _seed: &Hash) -> Decision {
            self.seen
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(segment.clone());
            Decision {
                vote: Vote::Valid,
                reason: "stand-in judge: always Valid".into(),
            }
        }
    }

    /// A word problem on a network of Computer and LLM seats: each STEP's LLM seat is
    /// shown its calculation with the Computer tier's verdict on it, the same verdict the
    /// Computer seats reach on the OPERATION; a STEP whose calculation is wrong is voted
    /// Invalid without asking the judge, and the trace fails.
    #[tokio::test]
    async fn a_steps_seat_sees_its_calculations_as_the_computer_seats_judge_them() {
        let tiers = [
            Tier::Computer,
            Tier::Computer,
            Tier::Computer,
            Tier::Llm,
            Tier::Llm,
            Tier::Llm,
        ];
        for (trace, wrong) in [
            (
                include_str!("../../../examples/traces/bakery-correct.txt"),
                false,
            ),
            (
                include_str!("../../../examples/traces/bakery-wrong.txt"),
                true,
            ),
        ] {
            let mut chain = Chain::with_tiers(&tiers);
            let (p, blobs, _pd) = provider(&chain);
            let judge = Arc::new(RecordingJudge::default());
            let seats: Vec<Node> = (0..tiers.len())
                .map(|i| {
                    let n = seat(&chain, i, Some(from_store(blobs.clone())));
                    if tiers[i] == Tier::Llm {
                        let j: Arc<dyn Auditor> = judge.clone();
                        Node {
                            seat: n.seat.with_judges(vec![j]),
                            _dir: n._dir,
                        }
                    } else {
                        n
                    }
                })
                .collect();
            let s = p.submit(trace, None, &chain.contract).await.unwrap();
            run(&mut chain, &p, &seats, &s.session, 60).await;
            let o = chain.contract.state().outcomes[&s.session].clone();
            let verdict = |name: &str| {
                let i = s.segments.iter().position(|(n, _)| n == name).unwrap();
                o.segments[i].verdict
            };
            let seen = judge.seen.lock().unwrap().clone();
            let muffins = seen
                .iter()
                .find(|v| v.claim.starts_with("The muffins brought in") && !v.claim.contains('\n'));
            if wrong {
                // 48 × $3 = $154 does not hold: its STEP's seats vote Invalid on their
                // own, the judge is never asked, and the error reaches the answer.
                assert!(muffins.is_none(), "the judge was asked: {muffins:?}");
                assert_eq!(verdict("O1"), SegmentVerdict::Invalid);
                assert_eq!(verdict("ST1"), SegmentVerdict::Invalid);
                assert_eq!(verdict("F1"), SegmentVerdict::Propagated);
                assert_eq!(o.trace, trust_contracts::TraceVerdict::Fail);
            } else {
                let view = muffins.expect("the STEP's seat was shown its claim");
                assert_eq!(view.operations.len(), 1, "{view:?}");
                assert_eq!(view.operations[0].text, "48 × $3 = $144");
                assert_eq!(view.operations[0].decision.vote, Vote::Valid);
                assert!(
                    view.operations[0]
                        .describe()
                        .starts_with("`48 × $3 = $144` holds (checked by the Computer tier"),
                    "{}",
                    view.operations[0].describe()
                );
                // The Computer seats reached the same verdict on the OPERATION, and each
                // revealed the reason its checker gave, as the judge was shown it.
                assert_eq!(verdict("O1"), SegmentVerdict::Valid);
                let o1 = s.segments.iter().position(|(n, _)| n == "O1").unwrap();
                let checker_said = trust_protocol::fit_reason(&view.operations[0].decision.reason);
                assert!(!checker_said.is_empty());
                let cast = &o.segments[o1].votes_cast;
                assert_eq!(cast.len(), 3, "{cast:?}");
                for v in cast {
                    assert_eq!(v.vote, Vote::Valid);
                    assert_eq!(v.reason, checker_said);
                }
                // The LLM seats revealed their judge's reason.
                let st1 = s.segments.iter().position(|(n, _)| n == "ST1").unwrap();
                assert!(
                    o.segments[st1]
                        .votes_cast
                        .iter()
                        .all(|v| v.reason == "stand-in judge: always Valid"),
                    "{:?}",
                    o.segments[st1].votes_cast
                );
                // Every claim judged by a tier that covers it, the conclusion included:
                // the trace passes (the judge here is a stand-in that approves all).
                assert_eq!(verdict("F1"), SegmentVerdict::Valid);
                assert!(o.conclusion_sound);
                assert_eq!(o.trace, trust_contracts::TraceVerdict::Pass);
            }
        }
    }

    #[tokio::test]
    async fn a_seat_judges_its_segments_of_a_session_concurrently() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let n = seat(&chain, 0, Some(from_store(blobs.clone())));
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        // Blocks until seat 0 holds the keys of every segment it sits on (keys only: no
        // vote yet).
        let me = auditor(0).public();
        let ready = |chain: &Chain, n: &Node| {
            let sess = &chain.contract.state().sessions[&s.session];
            let mine: Vec<u16> = sess
                .segments
                .iter()
                .enumerate()
                .filter(|(_, g)| g.seats.iter().any(|x| x.account == me))
                .map(|(i, _)| u16::try_from(i).unwrap())
                .collect();
            let all_keys = mine.iter().all(|i| {
                std::iter::once(*i)
                    .chain(sess.segments[usize::from(*i)].entry.depends_on.clone())
                    .all(|k| n.seat.key(&s.session, k).is_some())
            });
            (!mine.is_empty() && all_keys).then_some(mine.len())
        };
        let mut held = None;
        for _ in 0..10 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            n.seat.on_events(&ev, &chain.contract).await;
            held = ready(&chain, &n);
            if held.is_some() {
                break;
            }
        }
        let held = held.expect("seat 0 never got its keys");
        let together = held.min(MAX_CONCURRENT_JUDGEMENTS);
        assert!(
            together >= 2,
            "seat 0 holds {held} segments: nothing to overlap"
        );
        let seat = n.seat.with_judges(vec![Arc::new(WaitsForOthers {
            started: tokio::sync::watch::channel(0).0,
            together,
        })]);
        seat.vote(&s.session, &chain.contract).await;
        let committed = seat.metrics.committed.load(Ordering::Relaxed);
        let abstained = seat.metrics.abstained.load(Ordering::Relaxed);
        assert_eq!(
            committed,
            u64::try_from(held).unwrap(),
            "every seat committed"
        );
        assert_eq!(abstained, 0, "no judgement waited alone");
    }

    /// A node seated in several sessions at once sends their votes together: the
    /// commitments handed over while its sender is busy go out as one `Votes`
    /// transaction spanning every session, and the reveals of every session whose window
    /// closed in a block go out as one more. Each vote applies as its single call would:
    /// every session is decided.
    #[tokio::test]
    async fn a_node_seated_in_several_sessions_sends_their_votes_together() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let nodes = four_seats(&chain, &blobs);
        let mut sessions = Vec::new();
        for _ in 0..3 {
            let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
            sessions.push(s.session);
        }
        let me = auditor(0).public();
        // Seat 0's seats in each session, once it holds every key they need.
        let held = |chain: &Chain, n: &Node| -> Option<usize> {
            let mut all = 0;
            for sid in &sessions {
                let sess = chain.contract.state().sessions.get(sid)?;
                for (i, g) in sess.segments.iter().enumerate() {
                    if !g.seats.iter().any(|x| x.account == me) {
                        continue;
                    }
                    let i = u16::try_from(i).unwrap();
                    let keys = std::iter::once(i)
                        .chain(g.entry.depends_on.clone())
                        .all(|k| n.seat.key(sid, k).is_some());
                    if !keys {
                        return None;
                    }
                    all += 1;
                }
            }
            (all > 0).then_some(all)
        };
        let mut mine = None;
        for _ in 0..10 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in &nodes {
                n.seat.on_events(&ev, &chain.contract).await;
            }
            mine = held(&chain, &nodes[0]);
            if mine.is_some() {
                break;
            }
        }
        let mine = mine.expect("seat 0 never got its keys");
        let pooled = |chain: &Chain| {
            let pool = chain.pool.clone();
            async move { pool.account(me).await.unwrap() }
        };
        assert_eq!(pooled(&chain).await.pending, 0);

        // Seat 0's sender is busy while the three sessions are judged: their commitments
        // wait, then leave in one transaction.
        let busy = nodes[0].seat.sender.turn.lock().await;
        let votes = futures::future::join_all(
            sessions
                .iter()
                .map(|sid| nodes[0].seat.vote(sid, &chain.contract)),
        );
        let release = async {
            for _ in 0..100_000 {
                let waiting = nodes[0].seat.sender.unsent.lock().unwrap().len();
                if waiting == mine {
                    break;
                }
                tokio::task::yield_now().await;
            }
            drop(busy);
        };
        tokio::join!(votes, release);
        assert_eq!(
            count(&nodes[0], |m| &m.committed),
            u64::try_from(mine).unwrap()
        );
        let a = pooled(&chain).await;
        assert_eq!(a.pending, 1, "one transaction for {mine} commitments");
        let Some(Call::Votes { groups }) = a.head.map(|tx| tx.body.call) else {
            panic!("the commitments of three sessions go as one Votes call");
        };
        assert_eq!(groups.len(), 3);
        assert_eq!(groups.iter().map(|g| g.commits.len()).sum::<usize>(), mine);

        // The others vote; the block that takes every commitment closes the three
        // windows, and seat 0 reveals all it holds in one transaction.
        for n in &nodes[1..] {
            for sid in &sessions {
                n.seat.vote(sid, &chain.contract).await;
            }
        }
        let ev = chain.block().await;
        let closed = ev
            .iter()
            .filter(|e| matches!(e, Event::CommitWindowClosed { .. }))
            .count();
        assert_eq!(closed, 3, "{ev:?}");
        nodes[0].seat.on_events(&ev, &chain.contract).await;
        let a = pooled(&chain).await;
        assert_eq!(a.pending, 1, "one transaction for {mine} reveals");
        let Some(Call::Votes { groups }) = a.head.map(|tx| tx.body.call) else {
            panic!("the reveals of three sessions go as one Votes call");
        };
        assert_eq!(groups.iter().map(|g| g.reveals.len()).sum::<usize>(), mine);
        assert!(groups.iter().all(|g| g.commits.is_empty()));
        for n in &nodes[1..] {
            n.seat.on_events(&ev, &chain.contract).await;
        }
        p.on_block(&ev, &chain.contract).await;

        for _ in 0..10 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for n in &nodes {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            if sessions
                .iter()
                .all(|sid| !chain.contract.state().sessions.contains_key(sid))
            {
                break;
            }
        }
        for sid in &sessions {
            let o = chain.contract.state().outcomes.get(sid).expect("decided");
            assert!(
                o.segments
                    .iter()
                    .any(|g| g.verdict == SegmentVerdict::Invalid),
                "each session finds the wrong step"
            );
            assert_eq!(o.trace, trust_contracts::TraceVerdict::Fail);
        }
    }

    /// A vote that only starts at its give-up block (it waited for a judging slot) gets no
    /// block more: what would need a fetch is abstained on at once, in that block, and
    /// lands in the window; no seat is missing and none is slashed.
    #[tokio::test]
    async fn a_vote_delayed_to_its_give_up_block_abstains_in_that_block() {
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let hangs: FetchBlob = Arc::new(|_| Box::pin(std::future::pending()));
        let seats: Vec<(Seat, tempfile::TempDir)> = (0..4)
            .map(|i| seat_of(&chain, i, Some(hangs.clone())))
            .collect();
        let tip = crate::audit::duties::tip_reaches(&chain.view.subscribe());
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        // Blocks go by with the keys delivered and nobody voting, up to the give-up block.
        let mut at_give_up = false;
        for _ in 0..40 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            for (seat, _) in &seats {
                seat.on_events(&ev, &chain.contract).await;
            }
            if let Some(sess) = chain.contract.state().sessions.get(&s.session)
                && let Phase::Commit { until, .. } = sess.phase
                && gives_up(chain.contract.state().height, until)
            {
                at_give_up = true;
                break;
            }
        }
        assert!(at_give_up, "the session reached its seats' give-up block");
        // Each delayed vote ends without another block: the tip never moves here.
        for (seat, _) in &seats {
            let vote = seat.vote_by(&s.session, &chain.contract, Some(&tip), true);
            let stalls = async {
                for _ in 0..10_000 {
                    tokio::task::yield_now().await;
                }
            };
            tokio::select! {
                biased;
                () = vote => {}
                () = stalls => panic!("a delayed vote waited for a block more"),
            }
            let m = &seat.metrics;
            let c = m.committed.load(Ordering::Relaxed);
            assert!(c > 0);
            assert_eq!(
                m.abstained.load(Ordering::Relaxed),
                c,
                "every seat abstained"
            );
        }
        let nodes: Vec<Node> = seats
            .into_iter()
            .map(|(seat, dir)| Node { seat, _dir: dir })
            .collect();
        run(&mut chain, &p, &nodes, &s.session, 40).await;
        no_show_nor_slash(&chain, &s.session);
    }

    /// Votes handed to the sender are sent even when the one who handed them over stops
    /// waiting: a vote abandoned because its window closed must not take with it what
    /// it carried, such as a block's openings of other sessions.
    #[tokio::test]
    async fn votes_handed_over_are_sent_when_the_one_who_handed_them_stops_waiting() {
        let mut chain = Chain::new(4);
        let (p, blobs, _pd) = provider(&chain);
        let nodes = four_seats(&chain, &blobs);
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        // Every seat commits; the block that takes the commitments closes the window.
        let mut closed = None;
        for _ in 0..20 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            if ev
                .iter()
                .any(|e| matches!(e, Event::CommitWindowClosed { .. }))
            {
                closed = Some(ev);
                break;
            }
            for n in &nodes {
                for sid in n.seat.on_events(&ev, &chain.contract).await {
                    n.seat.vote(&sid, &chain.contract).await;
                }
            }
        }
        let closed = closed.expect("the commit window closed");
        let me = auditor(0).public();
        let held = nodes[0].seat.votes.unrevealed(&s.session).unwrap().len();
        assert!(held > 0, "seat 0 holds seats");
        // Seat 0's sender is busy; the openings are handed over, and the one who handed
        // them over gives up waiting.
        let busy = nodes[0].seat.sender.turn.lock().await;
        let gave_up = tokio::time::timeout(
            std::time::Duration::from_millis(50),
            nodes[0].seat.on_events(&closed, &chain.contract),
        )
        .await;
        assert!(gave_up.is_err(), "the openings waited for the sender");
        assert_eq!(chain.pool.account(me).await.unwrap().pending, 0);
        drop(busy);
        // The turn they started sends them all the same.
        let mut pooled = 0;
        for _ in 0..100_000 {
            pooled = chain.pool.account(me).await.unwrap().pending;
            if pooled > 0 {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert_eq!(pooled, 1, "the openings went out in one transaction");
        assert_eq!(
            count(&nodes[0], |m| &m.revealed),
            u64::try_from(held).unwrap()
        );
    }

    /// Seats whose segment no peer serves wait for it, then, once the commit window is
    /// about to close, commit an abstention naming what they could not read, in time:
    /// present, so none is a no-show and none is slashed.
    #[tokio::test]
    async fn seats_that_cannot_fetch_their_segment_abstain_before_the_deadline() {
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let dead: FetchBlob =
            Arc::new(|cid| Box::pin(async move { Err(NetError::FetchTimeout(cid).into()) }));
        let seats: Vec<Node> = (0..4)
            .map(|i| seat(&chain, i, Some(dead.clone())))
            .collect();
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let me: Vec<_> = (0..4).map(|i| auditor(i).public()).collect();
        let mut until = None;
        for _ in 0..80 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            let height = chain.contract.state().height;
            if let Some(sess) = chain.contract.state().sessions.get(&s.session)
                && let Phase::Commit { until: u, .. } = sess.phase
            {
                until = Some(u);
                // Before the last blocks of the window, nobody has given up.
                if !gives_up(height, u) {
                    assert!(seats.iter().all(|n| count(n, |m| &m.committed) == 0));
                }
            }
            for n in &seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            if !chain.contract.state().sessions.contains_key(&s.session) {
                break;
            }
        }
        assert!(until.is_some(), "seats were drawn");
        let st = chain.contract.state();
        let o = st.outcomes.get(&s.session).expect("decided, not stuck");
        let committed: u64 = seats.iter().map(|n| count(n, |m| &m.committed)).sum();
        let abstained: u64 = seats.iter().map(|n| count(n, |m| &m.abstained)).sum();
        assert!(committed > 0);
        assert_eq!(abstained, committed, "every seat abstained");
        assert!(seats.iter().all(|n| count(n, |m| &m.failures) > 0));
        for g in &o.segments {
            assert_eq!(g.votes.missing, 0, "no seat was a no-show: {g:?}");
            assert!(!g.verdict.passes());
        }
        for a in &me {
            assert_eq!(
                st.auditors[a].slashed, 0,
                "an unreadable segment slashed {a}"
            );
        }
    }

    /// A provider that keys its seats late (offline from the draw until past the round's
    /// key deadline): its keys land, but a key after the deadline never counts, so each
    /// seat abstains at once, saying why, instead of judging a vote that cannot count
    /// (issue 53); all of it long before the window closes. None is a no-show and none is
    /// slashed.
    #[tokio::test]
    async fn a_seat_keyed_after_its_key_deadline_abstains_at_once() {
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let p = p.with_session_defaults(trust_judging::session::terms::SessionOptions {
            commit_window: Some(40),
            ..Default::default()
        });
        let seats: Vec<Node> = (0..4).map(|i| seat(&chain, i, None)).collect();
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let mut deadline = None;
        let mut first_commit = None;
        let mut held = Vec::new();
        for _ in 0..80 {
            let ev = chain.block().await;
            // The provider acts on no block until the key deadline has passed, then on
            // every block it missed.
            held.push(ev.clone());
            if deadline.is_some_and(|(d, _)| chain.contract.state().height > d) {
                for ev in held.drain(..) {
                    p.on_block(&ev, &chain.contract).await;
                }
            }
            let st = chain.contract.state();
            if let Some(sess) = st.sessions.get(&s.session)
                && deadline.is_none()
            {
                deadline = trust_contracts::key_deadline(&st.params, sess).zip(match sess.phase {
                    Phase::Commit { until, .. } => Some(until),
                    _ => None,
                });
            }
            for n in &seats {
                n.seat.on_block(&ev, &chain.contract).await;
            }
            if first_commit.is_none() && seats.iter().any(|n| count(n, |m| &m.committed) > 0) {
                first_commit = Some(chain.contract.state().height);
            }
            if !chain.contract.state().sessions.contains_key(&s.session) {
                break;
            }
        }
        let (deadline, until) = deadline.expect("seats were drawn");
        let first = first_commit.expect("the seats committed");
        assert!(
            first > deadline,
            "committed at {first}: key deadline {deadline}, window closes at {until}"
        );
        assert!(
            !gives_up(first, until),
            "{first} is in the window's last blocks ({until})"
        );
        let o = no_show_nor_slash(&chain, &s.session);
        let reasons: Vec<&str> = o
            .segments
            .iter()
            .flat_map(|g| g.votes_cast.iter().map(|v| v.reason.as_str()))
            .collect();
        assert!(!reasons.is_empty());
        assert!(
            reasons
                .iter()
                .all(|r| r.contains("did not land by the key deadline")),
            "{reasons:?}"
        );
    }

    /// A fetch that never answers (a burst of sessions queued ahead of it) holds no seat
    /// past its window: at the block where the seats give up, each commits an abstention
    /// saying it was still reading, in time for the commitment to land. No seat is a
    /// no-show and none is slashed. (The fetch is a stand-in for a Bitswap that never
    /// answers; the tip comes from the chain view the test chain publishes.)
    #[tokio::test]
    async fn a_seat_still_fetching_when_its_window_is_about_to_close_abstains_in_time() {
        let mut chain = Chain::new(4);
        let (p, _blobs, _pd) = provider(&chain);
        let hangs: FetchBlob = Arc::new(|_| Box::pin(std::future::pending()));
        let seats: Vec<(Arc<Seat>, tempfile::TempDir)> = (0..4)
            .map(|i| {
                let (seat, dir) = seat_of(&chain, i, Some(hangs.clone()));
                (Arc::new(seat), dir)
            })
            .collect();
        let tip = crate::audit::duties::tip_reaches(&chain.view.subscribe());
        let s = p.submit(INCORRECT, None, &chain.contract).await.unwrap();
        let committed = |seats: &[(Arc<Seat>, tempfile::TempDir)]| -> u64 {
            seats
                .iter()
                .map(|(x, _)| x.metrics.committed.load(Ordering::Relaxed))
                .sum()
        };
        let mut votes = tokio::task::JoinSet::new();
        let mut gave_up_at = None;
        for _ in 0..80 {
            let ev = chain.block().await;
            p.on_block(&ev, &chain.contract).await;
            let height = chain.contract.state().height;
            let contract = Arc::new(chain.contract.clone());
            for (seat, _) in &seats {
                for session in seat.on_events(&ev, &contract).await {
                    let (seat, contract, tip) = (seat.clone(), contract.clone(), tip.clone());
                    votes.spawn(async move {
                        seat.vote_by(&session, &contract, Some(&tip), false).await
                    });
                }
            }
            if let Some(sess) = chain.contract.state().sessions.get(&s.session)
                && let Phase::Commit { until, .. } = sess.phase
            {
                if gives_up(height, until) {
                    // The tip reached the give-up block: every vote ends, its abstentions
                    // pooled before the next block.
                    gave_up_at.get_or_insert(height);
                    let all = tokio::time::timeout(std::time::Duration::from_secs(30), async {
                        while votes.join_next().await.is_some() {}
                    });
                    all.await.expect("the votes ended at the give-up block");
                } else {
                    assert_eq!(
                        committed(&seats),
                        0,
                        "nothing read, nothing committed early"
                    );
                }
            }
            if !chain.contract.state().sessions.contains_key(&s.session) {
                break;
            }
        }
        assert!(
            gave_up_at.is_some(),
            "the seats reached their give-up block"
        );
        let st = chain.contract.state();
        let o = st.outcomes.get(&s.session).expect("decided, not stuck");
        assert!(committed(&seats) > 0);
        for (seat, _) in &seats {
            let m = &seat.metrics;
            let c = m.committed.load(Ordering::Relaxed);
            assert_eq!(
                m.abstained.load(Ordering::Relaxed),
                c,
                "every seat abstained"
            );
            assert_eq!(
                m.gave_up.load(Ordering::Relaxed),
                c,
                "because it was still reading"
            );
        }
        for g in &o.segments {
            assert_eq!(g.votes.missing, 0, "no seat was a no-show: {g:?}");
            assert!(
                g.votes_cast
                    .iter()
                    .all(|v| v.reason.starts_with("still reading or judging")),
                "{:?}",
                g.votes_cast
            );
        }
        for i in 0..4 {
            assert_eq!(st.auditors[&auditor(i).public()].slashed, 0);
        }
    }
}
