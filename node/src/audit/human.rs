//! The Human tier: a person judges the segments this node's Human seats hold, at the
//! node's audit form (`/audit`, served by `crate::web::audit`).
//!
//! [`HumanDesk`] is the seat pipeline's judge for the Human tier. When the pipeline asks it
//! to judge a seat, the seat joins a bounded queue and waits for a person's judgement
//! until a safety margin ([`DEFAULT_MARGIN_BLOCKS`]) before its commit window closes; then
//! it abstains with the reason [`NO_JUDGEMENT`], so a session decides whether or not
//! anybody answers. A person's judgement (vote and note) is flushed to sled before it is
//! handed to the waiting seat, and a seat judged again after a restart takes the stored
//! judgement at once; from there the pipeline persists vote and salt, commits and reveals
//! on the person's behalf, as for every tier.
//!
//! Time here is the chain's height ([`HumanDesk::on_block`], called by the daemon for each
//! decided block), so the deadline is the contract's own and a test drives it block by
//! block instead of sleeping. What the desk remembers of each seat ([`SeatRecord`]: what
//! the person saw, the judgement, and what the chain did with it) is kept for the audit
//! form's progress page, bounded to [`MAX_RECORDS`] seats.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use tokio::sync::watch;
use trust_contracts::Event;
use trust_protocol::{AccountId, Hash, Vote, tx::Tier};

use trust_judging::judge::{Auditor, Decision, SeatRef, SegmentView};

/// The reason a Human seat abstains with when nobody judged it in time.
pub const NO_JUDGEMENT: &str = "no human judgement before the deadline";
/// Seats waiting for a person at once; one more abstains at once.
pub const DEFAULT_CAPACITY: usize = 64;
/// Blocks before the commit window closes at which a waiting seat gives up: its
/// commitment must still reach a block in time.
pub const DEFAULT_MARGIN_BLOCKS: u64 = 3;
/// Longest note a person may attach, in characters.
pub const MAX_NOTE_CHARS: usize = 2_000;
/// Seats the desk remembers (waiting, judged, expired); the oldest finished ones go first.
pub const MAX_RECORDS: usize = 1_024;

/// A seat: which segment of which session, in which round.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct SeatKey {
    /// Session.
    pub session: Hash,
    /// Segment index in the session.
    pub segment: u16,
    /// Voting round (1 after an escalation).
    pub round: u8,
}

impl SeatKey {
    fn bytes(&self) -> Vec<u8> {
        let mut k = self.session.as_ref().to_vec();
        k.extend_from_slice(&self.segment.to_be_bytes());
        k.push(self.round);
        k
    }
}

/// What a person may answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    /// The step holds.
    Valid,
    /// The step is wrong.
    Invalid,
    /// The step rests on something never established.
    Ungrounded,
    /// The person cannot tell: the seat abstains.
    Unsure,
}

impl Choice {
    /// Every choice, in the order the form lists them.
    pub const ALL: [Choice; 4] = [
        Choice::Valid,
        Choice::Invalid,
        Choice::Ungrounded,
        Choice::Unsure,
    ];

    /// The vote committed for it.
    pub fn vote(self) -> Vote {
        match self {
            Choice::Valid => Vote::Valid,
            Choice::Invalid => Vote::Invalid,
            Choice::Ungrounded => Vote::Ungrounded,
            Choice::Unsure => Vote::Abstain,
        }
    }

    /// Its form value.
    pub fn value(self) -> &'static str {
        match self {
            Choice::Valid => "valid",
            Choice::Invalid => "invalid",
            Choice::Ungrounded => "ungrounded",
            Choice::Unsure => "unsure",
        }
    }

    /// Its label.
    pub fn label(self) -> &'static str {
        match self {
            Choice::Valid => "Valid",
            Choice::Invalid => "Invalid",
            Choice::Ungrounded => "Ungrounded",
            Choice::Unsure => "Unsure",
        }
    }
}

impl std::str::FromStr for Choice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Choice::ALL
            .into_iter()
            .find(|c| c.value() == s)
            .ok_or_else(|| format!("{s:?} is not a choice: valid, invalid, ungrounded or unsure"))
    }
}

/// A person's judgement of one seat's segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// The vote to commit (`Abstain` for Unsure).
    pub vote: Vote,
    /// The person's note (may be empty).
    pub note: String,
}

impl Judgement {
    /// The vote with the person's note as its reason (the seat commits the note's first
    /// `MAX_REASON_BYTES`; the whole note stays in this node's record).
    fn decision(&self) -> Decision {
        Decision {
            vote: self.vote,
            reason: if self.note.is_empty() {
                "judged by a person at the audit form (no note)".to_string()
            } else {
                self.note.clone()
            },
        }
    }
}

/// What the desk keeps of one seat: what the person sees, the judgement, and what the
/// chain did with it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatRecord {
    /// The seat.
    pub key: SeatKey,
    /// The segment's claim (the current reasoning).
    pub claim: String,
    /// The unaudited premises sealed with it (the prompt context).
    pub givens: Vec<String>,
    /// The claims of the audited segments it cites (the verified dependencies).
    pub premises: Vec<String>,
    /// The calculations inside the claim, as the Computer tier checked them
    /// (`` `21+3 = 24` holds (checked by the Computer tier: ...) ``).
    #[serde(default)]
    pub checked: Vec<String>,
    /// The claims of later segments citing it that this node can open (implications).
    pub implications: Vec<String>,
    /// Height the seat joined the queue at.
    pub queued_at: u64,
    /// Last height at which the seat may commit.
    pub commit_until: u64,
    /// Height at which the seat stops waiting and abstains.
    pub deadline: u64,
    /// The person's judgement, once given.
    pub judgement: Option<Judgement>,
    /// Height the judgement was given at.
    pub judged_at: Option<u64>,
    /// Whether the deadline passed without a judgement.
    pub expired: bool,
    /// Whether the seat's commitment is on the chain.
    pub committed: bool,
    /// The vote revealed on the chain, and whether it counted.
    pub revealed: Option<(Vote, bool)>,
    /// The segment's final verdict, once decided (its name).
    pub verdict: Option<String>,
    /// Paid for this seat's vote.
    pub reward: u64,
    /// Slashed from this node in the seat's session.
    pub slashed: u64,
}

/// Why a judgement was not taken.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum SubmitError {
    /// This node holds no seat on the segment (or forgot it).
    #[error("this node holds no seat on that segment")]
    NoSeat,
    /// The seat already has a judgement.
    #[error("this seat was already judged")]
    AlreadyJudged,
    /// The deadline passed; the seat abstained.
    #[error("too late: the seat's deadline passed and it abstained")]
    Expired,
    /// The note is too long.
    #[error("the note is longer than {MAX_NOTE_CHARS} characters")]
    NoteTooLong,
    /// The judgement could not be stored (sled's error, or the record's encoding).
    #[error("the judgement could not be stored: {0}")]
    Store(#[source] Arc<dyn std::error::Error + Send + Sync>),
}

/// Two answers are equal when they are the same refusal; two store failures, when they
/// are the same failure (its cause is shared, not compared).
impl PartialEq for SubmitError {
    fn eq(&self, other: &Self) -> bool {
        match (self, other) {
            (Self::Store(a), Self::Store(b)) => Arc::ptr_eq(a, b),
            (a, b) => std::mem::discriminant(a) == std::mem::discriminant(b),
        }
    }
}

impl Eq for SubmitError {}

/// Settings of a [`HumanDesk`].
#[derive(Debug, Clone, Copy)]
pub struct DeskSettings {
    /// Seats waiting at once.
    pub capacity: usize,
    /// Blocks before the commit window closes at which a seat gives up.
    pub margin_blocks: u64,
    /// The network's block time, to tell a person the deadline in seconds.
    pub block_time: Duration,
}

impl Default for DeskSettings {
    fn default() -> Self {
        Self {
            capacity: DEFAULT_CAPACITY,
            margin_blocks: DEFAULT_MARGIN_BLOCKS,
            block_time: Duration::from_secs(1),
        }
    }
}

#[derive(Debug)]
struct Inner {
    me: AccountId,
    settings: DeskSettings,
    records: sled::Tree,
    /// Seats waiting for a person, each with where its judgement goes. A seat judged
    /// twice at once (two votes of one session in flight) shares one entry.
    waiting: Mutex<BTreeMap<SeatKey, Waiting>>,
    /// The chain's height, as decided blocks arrive.
    height: watch::Sender<u64>,
    /// Judgements a person gave.
    judged: AtomicU64,
    /// Seats that abstained at their deadline.
    expired: AtomicU64,
}

/// Where a waiting seat's judgement goes, to every wait on it.
type Waiting = watch::Sender<Option<Judgement>>;

/// The Human tier's judge and the queue of seats a person judges (cheap to clone).
#[derive(Debug, Clone)]
pub struct HumanDesk(Arc<Inner>);

fn store_err(e: impl Into<crate::Cause>) -> SubmitError {
    SubmitError::Store(Arc::from(e.into()))
}

impl HumanDesk {
    /// The desk of a running node, with the default capacity and margin: says in the log
    /// how long a person has for a seat (the commit window less the margin, at
    /// `block_time`), and warns when the window leaves no time at all.
    pub fn for_node(
        db: &sled::Db,
        me: AccountId,
        block_time: Duration,
        commit_window: u64,
    ) -> Result<Self, sled::Error> {
        let settings = DeskSettings {
            capacity: DEFAULT_CAPACITY,
            margin_blocks: DEFAULT_MARGIN_BLOCKS,
            block_time,
        };
        if commit_window <= settings.margin_blocks {
            tracing::warn!(
                commit_window,
                margin = settings.margin_blocks,
                "the commit window is too short for a person: every Human seat will abstain"
            );
        }
        let for_a_person = block_time.saturating_mul(
            u32::try_from(commit_window.saturating_sub(settings.margin_blocks)).unwrap_or(u32::MAX),
        );
        tracing::info!(
            commit_window,
            margin = settings.margin_blocks,
            seconds_per_seat = for_a_person.as_secs(),
            "Human seats wait for a person at the audit form (/audit on the API address)"
        );
        Self::open(db, me, settings)
    }

    /// The desk of the node `me`, keeping its records in `db`.
    pub fn open(db: &sled::Db, me: AccountId, settings: DeskSettings) -> Result<Self, sled::Error> {
        Ok(Self(Arc::new(Inner {
            me,
            settings: DeskSettings {
                capacity: settings.capacity.max(1),
                ..settings
            },
            records: db.open_tree("human/seats")?,
            waiting: Mutex::new(BTreeMap::new()),
            height: watch::channel(0).0,
            judged: AtomicU64::new(0),
            expired: AtomicU64::new(0),
        })))
    }

    /// Its settings.
    pub fn settings(&self) -> DeskSettings {
        self.0.settings
    }

    /// The chain's height as the desk last heard it.
    pub fn height(&self) -> u64 {
        *self.0.height.borrow()
    }

    fn waiting(&self) -> std::sync::MutexGuard<'_, BTreeMap<SeatKey, Waiting>> {
        self.0.waiting.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The record of `key`.
    pub fn record(&self, key: &SeatKey) -> Option<SeatRecord> {
        let v = self.0.records.get(key.bytes()).ok()??;
        serde_json::from_slice(&v).ok()
    }

    fn put(&self, r: &SeatRecord) -> Result<(), SubmitError> {
        let bytes = serde_json::to_vec(r).map_err(store_err)?;
        self.0
            .records
            .insert(r.key.bytes(), bytes)
            .map_err(store_err)?;
        self.0.records.flush().map_err(store_err)?;
        Ok(())
    }

    fn update(&self, key: &SeatKey, f: impl FnOnce(&mut SeatRecord)) {
        if let Some(mut r) = self.record(key) {
            f(&mut r);
            if let Err(e) = self.put(&r) {
                tracing::warn!(session = %key.session, segment = key.segment, error = %e, "human seat record not updated");
            }
        }
    }

    /// Every record, in key order.
    fn all(&self) -> Vec<SeatRecord> {
        self.0
            .records
            .iter()
            .values()
            .flatten()
            .filter_map(|v| serde_json::from_slice(&v).ok())
            .collect()
    }

    /// The seats waiting for a person, soonest deadline first.
    pub fn queue(&self) -> Vec<SeatRecord> {
        let keys: Vec<SeatKey> = self.waiting().keys().copied().collect();
        let mut out: Vec<SeatRecord> = keys.iter().filter_map(|k| self.record(k)).collect();
        out.sort_by_key(|r| (r.deadline, r.key));
        out
    }

    /// The seats judged or expired, most recent first (at most `n`).
    pub fn history(&self, n: usize) -> Vec<SeatRecord> {
        let waiting = self.waiting().keys().copied().collect::<Vec<_>>();
        let mut out: Vec<SeatRecord> = self
            .all()
            .into_iter()
            .filter(|r| !waiting.contains(&r.key))
            .collect();
        out.sort_by_key(|r| std::cmp::Reverse((r.judged_at.unwrap_or(r.deadline), r.key)));
        out.truncate(n);
        out
    }

    /// The latest-round record of this node's seat on `segment` of `session`, if it holds
    /// (or held) one.
    pub fn seat(&self, session: &Hash, segment: u16) -> Option<SeatRecord> {
        // Rounds are 0, and 1 after an escalation; a few more cost nothing to look at.
        (0..=3u8)
            .rev()
            .map(|round| SeatKey {
                session: *session,
                segment,
                round,
            })
            .find_map(|k| self.record(&k))
    }

    /// Whether `key` is waiting for a person.
    pub fn is_waiting(&self, key: &SeatKey) -> bool {
        self.waiting().contains_key(key)
    }

    /// Takes a person's judgement of this node's waiting seat on `segment` of `session`:
    /// flushed to sled, then handed to the seat, which commits it.
    pub fn submit(
        &self,
        session: &Hash,
        segment: u16,
        choice: Choice,
        note: &str,
    ) -> Result<SeatKey, SubmitError> {
        let note = note.trim();
        if note.chars().count() > MAX_NOTE_CHARS {
            return Err(SubmitError::NoteTooLong);
        }
        let mut waiting = self.waiting();
        let Some(key) = waiting
            .keys()
            .filter(|k| k.session == *session && k.segment == segment)
            .max_by_key(|k| k.round)
            .copied()
        else {
            return Err(match self.seat(session, segment) {
                None => SubmitError::NoSeat,
                Some(r) if r.judgement.is_some() => SubmitError::AlreadyJudged,
                Some(_) => SubmitError::Expired,
            });
        };
        let mut r = self.record(&key).ok_or(SubmitError::NoSeat)?;
        let judgement = Judgement {
            vote: choice.vote(),
            note: note.to_string(),
        };
        r.judgement = Some(judgement.clone());
        r.judged_at = Some(self.height());
        self.put(&r)?;
        if let Some(reply) = waiting.remove(&key) {
            // A seat that stopped waiting (its vote abandoned) finds the judgement in its
            // record if it is judged again.
            reply.send_replace(Some(judgement));
        }
        self.0.judged.fetch_add(1, Ordering::Relaxed);
        tracing::info!(target: "trust::human", session = %key.session, segment = key.segment, round = key.round, vote = ?choice.vote(), "a person judged a seat");
        Ok(key)
    }

    /// One decided block: the height moves on (deadlines fall due), and what the chain did
    /// with this node's seats is noted in their records.
    pub fn on_block(&self, height: u64, events: &[Event]) {
        self.0.height.send_if_modified(|h| {
            let moved = height > *h;
            *h = (*h).max(height);
            moved
        });
        let me = self.0.me;
        for e in events {
            match e {
                Event::Committed {
                    session,
                    segment,
                    seat,
                } if *seat == me => {
                    if let Some(r) = self.seat(session, *segment) {
                        self.update(&r.key, |r| r.committed = true);
                    }
                }
                Event::Revealed {
                    session,
                    segment,
                    seat,
                    vote,
                    counted,
                    ..
                } if *seat == me => {
                    if let Some(r) = self.seat(session, *segment) {
                        self.update(&r.key, |r| r.revealed = Some((*vote, *counted)));
                    }
                }
                Event::SegmentDecided {
                    session,
                    segment,
                    verdict,
                } => {
                    if let Some(r) = self.seat(session, *segment) {
                        self.update(&r.key, |r| r.verdict = Some(format!("{verdict:?}")));
                    }
                }
                Event::Rewarded {
                    session,
                    segment,
                    seat,
                    amount,
                } if *seat == me => {
                    if let Some(r) = self.seat(session, *segment) {
                        self.update(&r.key, |r| r.reward = r.reward.saturating_add(*amount));
                    }
                }
                Event::Slashed {
                    session,
                    seat,
                    amount,
                    ..
                } if *seat == me => {
                    let keys: Vec<SeatKey> = self
                        .all()
                        .into_iter()
                        .filter(|r| r.key.session == *session)
                        .map(|r| r.key)
                        .collect();
                    for k in keys {
                        self.update(&k, |r| r.slashed = r.slashed.saturating_add(*amount));
                    }
                }
                _ => {}
            }
        }
    }

    /// Drops the oldest finished records beyond [`MAX_RECORDS`].
    fn prune(&self) {
        let len = self.0.records.len();
        if len <= MAX_RECORDS {
            return;
        }
        let waiting = self.waiting().keys().copied().collect::<Vec<_>>();
        let mut done: Vec<SeatRecord> = self
            .all()
            .into_iter()
            .filter(|r| !waiting.contains(&r.key))
            .collect();
        done.sort_by_key(|r| (r.queued_at, r.key));
        for r in done.into_iter().take(len - MAX_RECORDS) {
            let _ = self.0.records.remove(r.key.bytes());
        }
    }

    /// Waits for a person's judgement of `seat` until its deadline.
    async fn wait(&self, seat: &SeatRef, view: &SegmentView) -> Decision {
        let key = SeatKey {
            session: seat.session,
            segment: seat.segment,
            round: seat.round,
        };
        let deadline = seat
            .commit_until
            .saturating_sub(self.0.settings.margin_blocks);
        let mut rx = {
            let mut waiting = self.waiting();
            let known = self.record(&key);
            if let Some(j) = known.as_ref().and_then(|r| r.judgement.as_ref()) {
                // Judged before a restart (or before the vote was abandoned).
                return j.decision();
            }
            if self.height() >= deadline {
                return Decision::abstain(NO_JUDGEMENT);
            }
            match waiting.get(&key) {
                Some(shared) => shared.subscribe(),
                None => {
                    if waiting.len() >= self.0.settings.capacity {
                        return Decision::abstain(format!(
                            "the audit queue is full ({} seats wait for a person)",
                            waiting.len()
                        ));
                    }
                    let record = known.unwrap_or_else(|| SeatRecord {
                        key,
                        claim: view.claim.clone(),
                        givens: view.givens.clone(),
                        premises: view.premises.clone(),
                        checked: view.operations.iter().map(|o| o.describe()).collect(),
                        implications: seat.implications.clone(),
                        queued_at: self.height(),
                        commit_until: seat.commit_until,
                        deadline,
                        judgement: None,
                        judged_at: None,
                        expired: false,
                        committed: false,
                        revealed: None,
                        verdict: None,
                        reward: 0,
                        slashed: 0,
                    });
                    if let Err(e) = self.put(&record) {
                        return Decision::abstain(format!(
                            "the audit queue cannot store the seat: {e}"
                        ));
                    }
                    let (tx, rx) = watch::channel(None);
                    waiting.insert(key, tx);
                    tracing::info!(target: "trust::human", session = %key.session, segment = key.segment, round = key.round, deadline, "a seat waits for a person at the audit form");
                    rx
                }
            }
        };
        self.prune();
        // Whatever ends the wait (judgement, deadline, or the vote being abandoned), the
        // seat leaves the queue unless another wait on it goes on. Declared after `rx`, so
        // dropped before it: the count of waits still includes this one.
        let _leave = Leave {
            desk: self.clone(),
            key,
        };
        let mut clock = self.0.height.subscribe();
        let judged = tokio::select! {
            biased;
            j = rx.wait_for(Option::is_some) => j.ok().and_then(|j| Option::clone(&j)),
            _ = clock.wait_for(|h| *h >= deadline) => None,
        };
        let judged = judged.or_else(|| {
            // Under the queue's lock: a judgement submitted just now still counts, and
            // none can be submitted once the seat is off the queue.
            let mut waiting = self.waiting();
            let j = Option::clone(&rx.borrow());
            if j.is_none() {
                waiting.remove(&key);
            }
            j
        });
        match judged {
            Some(j) => j.decision(),
            None => {
                self.expire(&key);
                Decision::abstain(NO_JUDGEMENT)
            }
        }
    }

    /// Marks a seat taken off the queue at its deadline.
    fn expire(&self, key: &SeatKey) {
        self.0.expired.fetch_add(1, Ordering::Relaxed);
        self.update(key, |r| r.expired = true);
        tracing::info!(target: "trust::human", session = %key.session, segment = key.segment, "{NO_JUDGEMENT}: the seat abstains");
    }
}

impl crate::metrics::MetricsSource for HumanDesk {
    fn render(&self, out: &mut String) {
        let waiting = self.waiting().len();
        out.push_str(&format!(
            "# HELP trust_human_waiting Human seats waiting for a person.\n# TYPE trust_human_waiting gauge\ntrust_human_waiting {waiting}\n\
# HELP trust_human_judged_total Judgements a person gave at the audit form.\n# TYPE trust_human_judged_total counter\ntrust_human_judged_total {}\n\
# HELP trust_human_expired_total Human seats that abstained at their deadline.\n# TYPE trust_human_expired_total counter\ntrust_human_expired_total {}\n",
            self.0.judged.load(Ordering::Relaxed),
            self.0.expired.load(Ordering::Relaxed),
        ));
    }
}

/// Takes a seat off the queue when its wait ends, however it ends.
struct Leave {
    desk: HumanDesk,
    key: SeatKey,
}

impl Drop for Leave {
    fn drop(&mut self) {
        let mut waiting = self.desk.waiting();
        if waiting
            .get(&self.key)
            .is_some_and(|w| w.receiver_count() <= 1)
        {
            waiting.remove(&self.key);
        }
    }
}

#[async_trait]
impl Auditor for HumanDesk {
    fn tier(&self) -> Tier {
        Tier::Human
    }

    /// Without a seat there is nobody to ask: an abstention (the local preview).
    async fn judge(&self, _segment: &SegmentView, _seed: &Hash) -> Decision {
        Decision::abstain("a person judges only the seats of a running node")
    }

    async fn judge_seat(&self, seat: &SeatRef, segment: &SegmentView, _seed: &Hash) -> Decision {
        self.wait(seat, segment).await
    }

    fn concurrency(&self) -> usize {
        self.0.settings.capacity
    }

    fn wants_implications(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desk(capacity: usize) -> (HumanDesk, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let d = HumanDesk::open(
            &db,
            trust_protocol::Keypair::from_label("human").public(),
            DeskSettings {
                capacity,
                margin_blocks: 3,
                block_time: Duration::from_millis(500),
            },
        )
        .unwrap();
        (d, dir)
    }

    fn seat(segment: u16, commit_until: u64) -> SeatRef {
        SeatRef {
            session: Hash::sha256(b"session"),
            segment,
            round: 0,
            segment_id: Hash::sha256(&segment.to_be_bytes()),
            commit_until,
            implications: vec!["So she needs 4 packages.".into()],
        }
    }

    fn view(claim: &str) -> SegmentView {
        SegmentView {
            claim: claim.into(),
            premises: vec!["She needs 4 cups per quart.".into()],
            givens: vec!["Martha needs 4 cups of berries.".into()],
            ..SegmentView::default()
        }
    }

    /// Yields until `desk` has `n` seats waiting (the judge runs on the same runtime).
    async fn until_waiting(desk: &HumanDesk, n: usize) {
        while desk.queue().len() < n {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_submitted_judgement_is_the_seats_decision() {
        let (d, _dir) = desk(4);
        d.on_block(10, &[]);
        let judge = tokio::spawn({
            let d = d.clone();
            async move {
                d.judge_seat(&seat(2, 40), &view("8 cups in all"), &Hash::ZERO)
                    .await
            }
        });
        until_waiting(&d, 1).await;
        let q = d.queue();
        assert_eq!(q[0].claim, "8 cups in all");
        assert_eq!(q[0].deadline, 37, "three blocks before the window closes");
        assert_eq!(q[0].implications, ["So she needs 4 packages."]);
        let session = Hash::sha256(b"session");
        assert_eq!(
            d.submit(&session, 7, Choice::Invalid, ""),
            Err(SubmitError::NoSeat)
        );
        d.submit(
            &session,
            2,
            Choice::Invalid,
            "  8 is right, but not from these  ",
        )
        .unwrap();
        let decision = judge.await.unwrap();
        assert_eq!(decision.vote, Vote::Invalid);
        assert!(decision.reason.ends_with("8 is right, but not from these"));
        assert!(d.queue().is_empty());
        // Judged once: a second post is refused, and the record keeps the judgement.
        assert_eq!(
            d.submit(&session, 2, Choice::Valid, ""),
            Err(SubmitError::AlreadyJudged)
        );
        let r = d.seat(&session, 2).unwrap();
        assert_eq!(r.judgement.unwrap().vote, Vote::Invalid);
        assert_eq!(r.judged_at, Some(10));
        // Unsure is an abstention.
        assert_eq!(Choice::Unsure.vote(), Vote::Abstain);
        assert_eq!("ungrounded".parse::<Choice>(), Ok(Choice::Ungrounded));
        assert!("maybe".parse::<Choice>().is_err());
    }

    #[tokio::test]
    async fn nobody_answers_and_the_seat_abstains_at_the_deadline() {
        let (d, _dir) = desk(4);
        d.on_block(10, &[]);
        let mut judge = tokio::spawn({
            let d = d.clone();
            async move { d.judge_seat(&seat(0, 20), &view("x"), &Hash::ZERO).await }
        });
        until_waiting(&d, 1).await;
        // Blocks pass, but not the deadline (20 - 3): still waiting.
        for h in 11..17 {
            d.on_block(h, &[]);
            tokio::task::yield_now().await;
        }
        assert!(
            futures::poll!(&mut judge).is_pending(),
            "abstained before the deadline"
        );
        assert_eq!(d.queue().len(), 1);
        d.on_block(17, &[]);
        let decision = judge.await.unwrap();
        assert_eq!(decision, Decision::abstain(NO_JUDGEMENT));
        assert!(d.queue().is_empty());
        let mut m = String::new();
        crate::metrics::MetricsSource::render(&d, &mut m);
        assert!(m.contains("trust_human_expired_total 1\n"), "{m}");
        assert!(m.contains("trust_human_waiting 0\n"), "{m}");
        let session = Hash::sha256(b"session");
        assert!(d.seat(&session, 0).unwrap().expired);
        assert_eq!(
            d.submit(&session, 0, Choice::Valid, ""),
            Err(SubmitError::Expired)
        );
        // A seat that arrives after its deadline abstains at once.
        let late = d.judge_seat(&seat(1, 19), &view("y"), &Hash::ZERO).await;
        assert_eq!(late, Decision::abstain(NO_JUDGEMENT));
    }

    #[tokio::test]
    async fn the_queue_is_bounded_and_a_seat_beyond_it_abstains_at_once() {
        let (d, _dir) = desk(2);
        let mut judges = Vec::new();
        for i in 0..2 {
            let d = d.clone();
            judges.push(tokio::spawn(async move {
                d.judge_seat(&seat(i, 100), &view("x"), &Hash::ZERO).await
            }));
        }
        until_waiting(&d, 2).await;
        let third = d.judge_seat(&seat(2, 100), &view("x"), &Hash::ZERO).await;
        assert_eq!(third.vote, Vote::Abstain);
        assert!(third.reason.contains("queue is full"), "{}", third.reason);
        assert_eq!(d.queue().len(), 2);
        // An abandoned wait (the pipeline dropped the vote) leaves the queue.
        judges.pop().unwrap().abort();
        while d.queue().len() != 1 {
            tokio::task::yield_now().await;
        }
    }

    #[tokio::test]
    async fn a_judgement_survives_a_restart_and_is_taken_at_once() {
        let dir = tempfile::tempdir().unwrap();
        let me = trust_protocol::Keypair::from_label("human").public();
        let session = Hash::sha256(b"session");
        {
            let db = sled::open(dir.path()).unwrap();
            let d = HumanDesk::open(&db, me, DeskSettings::default()).unwrap();
            let waiting = tokio::spawn({
                let d = d.clone();
                async move { d.judge_seat(&seat(3, 50), &view("x"), &Hash::ZERO).await }
            });
            until_waiting(&d, 1).await;
            d.submit(&session, 3, Choice::Ungrounded, "no source for 8")
                .unwrap();
            // The node dies before the pipeline commits: the seat's wait never returns.
            waiting.abort();
            let _ = waiting.await;
        }
        let db = crate::reopen::when_unlocked(|| sled::open(dir.path())).unwrap();
        let d = HumanDesk::open(&db, me, DeskSettings::default()).unwrap();
        let again = d.judge_seat(&seat(3, 50), &view("x"), &Hash::ZERO).await;
        assert_eq!(again.vote, Vote::Ungrounded);
        assert!(again.reason.contains("no source for 8"));
        // The chain's events land in the record.
        d.on_block(
            20,
            &[
                Event::Committed {
                    session,
                    segment: 3,
                    seat: me,
                },
                Event::Revealed {
                    session,
                    segment: 3,
                    seat: me,
                    vote: Vote::Ungrounded,
                    reason: "no source for 8".into(),
                    counted: true,
                },
                Event::Rewarded {
                    session,
                    segment: 3,
                    seat: me,
                    amount: 6,
                },
            ],
        );
        let r = d.seat(&session, 3).unwrap();
        assert!(r.committed);
        assert_eq!(r.revealed, Some((Vote::Ungrounded, true)));
        assert_eq!(r.reward, 6);
    }
}
