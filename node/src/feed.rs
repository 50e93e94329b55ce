//! The event feed: what a finalized block tells auditors, providers and users, as
//! [`FeedEvent`]s a person or a program can follow (`GET /v1/events`, `trust-node watch`).
//!
//! A block's feed is a pure function of its contract events and the contract state after
//! it ([`derive`]), so every node tells the same story, and the ledger stores it with the
//! block (see [`crate::ledger`]). Each event has an id `H:I`: the block height and its
//! index in that block's feed. Ids are totally ordered ([`EventId`]), which is what lets a
//! client resume strictly after the last event it saw.
//!
//! | kind | when | carries |
//! |---|---|---|
//! | `session_opened` | a provider opened a session | session, account = provider, segments |
//! | `seat_drawn` | an auditor was drawn to a seat | session, segment, account = seat, round, tier, `commit_until` |
//! | `commit_due` | the provider delivered a seat every key it needs and its commit window is open | session, segment, account, `commit_until` (last height accepting commits) |
//! | `reveal_due` | a round's commit window closed: to each seat of it that committed | session, segment, account, round, `reveal_until` |
//! | `bad_key_proven` | a seat proved that a key the provider sealed it does not open: it counts as starved (never slashed, paid by the provider) | session, segment, account = seat |
//! | `vote_refused` | one vote of a seat's batch (`Commits`, `Reveals`, `Votes`) was refused; its other votes applied | session, segment, account = seat, reason |
//! | `honeypots_forfeited` | the provider did not open its committed honeypot set in time: its honeypot bond burned | session, account = provider, amount = burned |
//! | `segment_decided` | a segment's final verdict | session, segment, verdict |
//! | `session_decided` | the trace verdict | session, account = provider, verdict, passing and total weight |
//! | `appeal_opened` | an account appealed decided segments; fresh seats are drawn next block | session, account = appellant, round, `segments_appealed`, amount = bond escrowed |
//! | `appeal_queued` | an appeal was filed while another round of the session runs: its segments wait for the next round (a segment already waiting gains a backer) | session, account = appellant, `segments_appealed`, amount = bond escrowed, `position` (segments waiting before it) |
//! | `appeal_decided` | an appeal round decided one appealed segment | session, segment, round, `previous` (its verdict before), verdict, `overturned`, `trace` (the trace verdict after) |
//! | `appeal_cancelled` | an appeal could not be staffed; its bond went back | session, account = appellant, amount, reason |
//! | `session_failed` | a session could not run; its fee was refunded | session, reason |
//! | `session_final` | the appeal window passed with no appeal open: the outcome is final | session |
//! | `reward` | a seat was paid | session, segment, account, amount |
//! | `slash` | stake was slashed | session, account, amount, reason |
//! | `slash_restored` | an appeal decided a segment the way the seat had judged it: the slash it took for that judgement went back to its stake | session, segment, round, account, amount, reason (why it had been slashed) |
//! | `bonded`, `unbond_started`, `withdrawn` | an auditor's own stake moved | account, amount, `release_at` (unbonding) |
//! | `expertise_declared`, `expertise_changed` | an auditor declared expertise domains, counting from `release_at`; they took effect | account, `expertise`, `release_at` (declared) |
//!
//! Within one block the feed is in
//! that lifecycle order (stable within a kind, which keeps the contract's order), so a
//! subscriber sees a session opened before its seats, its seats before their deadlines,
//! and a verdict before its rewards.
//!
//! A stream that a client could not keep up with ends with one more event, `dropped`,
//! which is never stored: it carries `resume_after`, the id of the last event sent.

use std::{
    collections::{BTreeMap, BTreeSet},
    fmt,
    str::FromStr,
};

use serde::{Deserialize, Serialize};
use trust_contracts::{Contract, Event, Phase, SegmentVerdict, TraceVerdict};
use trust_protocol::{AccountId, Hash, tx::Tier, units::Amount};

/// What happened, in lifecycle order (the order of a block's feed).
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[value(rename_all = "snake_case")]
pub enum Kind {
    /// A provider opened a session.
    SessionOpened,
    /// A session's draw waits: the network is at capacity (at most one per block, the
    /// first session that waits; the later ones wait behind it).
    SessionDeferred,
    /// An auditor was drawn to a seat.
    SeatDrawn,
    /// A seat has its keys and may commit.
    CommitDue,
    /// A committed seat must reveal.
    RevealDue,
    /// A seat proved a key sealed to it does not open: it counts as starved.
    BadKeyProven,
    /// One vote of a seat's batch was refused (the batch's other votes applied).
    VoteRefused,
    /// A provider did not open its committed honeypot set in time: its bond burned.
    HoneypotsForfeited,
    /// A segment's final verdict.
    SegmentDecided,
    /// A trace verdict.
    SessionDecided,
    /// An appeal was opened: fresh seats will judge the segments again.
    AppealOpened,
    /// An appeal waits for the round before it.
    AppealQueued,
    /// An appeal round decided one appealed segment.
    AppealDecided,
    /// An appeal could not be staffed; its bond went back.
    AppealCancelled,
    /// A session could not run.
    SessionFailed,
    /// A session's appeal window passed with no appeal open: its outcome is final.
    SessionFinal,
    /// A seat was paid.
    Reward,
    /// Stake was slashed.
    Slash,
    /// A slash went back: an appeal decided the segment the way the seat had judged it.
    SlashRestored,
    /// Stake was bonded.
    Bonded,
    /// Unbonding started.
    UnbondStarted,
    /// Unbonded stake returned.
    Withdrawn,
    /// An auditor declared expertise domains (counting later).
    ExpertiseDeclared,
    /// Declared expertise took effect.
    ExpertiseChanged,
    /// An auditor asked to pause or resume (counting from `release_at`).
    PauseAsked,
    /// An auditor's pause or resume took effect.
    PauseChanged,
    /// The stream ends: the client fell behind (never stored).
    #[value(skip)]
    Dropped,
}

impl Kind {
    /// Every kind a block's feed may hold (all but [`Kind::Dropped`]).
    pub const STORED: [Kind; 26] = [
        Kind::SessionOpened,
        Kind::SessionDeferred,
        Kind::SeatDrawn,
        Kind::CommitDue,
        Kind::RevealDue,
        Kind::BadKeyProven,
        Kind::VoteRefused,
        Kind::HoneypotsForfeited,
        Kind::SegmentDecided,
        Kind::SessionDecided,
        Kind::AppealOpened,
        Kind::AppealQueued,
        Kind::AppealDecided,
        Kind::AppealCancelled,
        Kind::SessionFailed,
        Kind::SessionFinal,
        Kind::Reward,
        Kind::Slash,
        Kind::SlashRestored,
        Kind::Bonded,
        Kind::UnbondStarted,
        Kind::Withdrawn,
        Kind::ExpertiseDeclared,
        Kind::ExpertiseChanged,
        Kind::PauseAsked,
        Kind::PauseChanged,
    ];

    /// The snake_case name (the SSE `event:` field).
    pub fn name(self) -> &'static str {
        match self {
            Kind::SessionOpened => "session_opened",
            Kind::SessionDeferred => "session_deferred",
            Kind::SeatDrawn => "seat_drawn",
            Kind::CommitDue => "commit_due",
            Kind::RevealDue => "reveal_due",
            Kind::BadKeyProven => "bad_key_proven",
            Kind::VoteRefused => "vote_refused",
            Kind::HoneypotsForfeited => "honeypots_forfeited",
            Kind::SegmentDecided => "segment_decided",
            Kind::SessionDecided => "session_decided",
            Kind::AppealOpened => "appeal_opened",
            Kind::AppealQueued => "appeal_queued",
            Kind::AppealDecided => "appeal_decided",
            Kind::AppealCancelled => "appeal_cancelled",
            Kind::SessionFailed => "session_failed",
            Kind::SessionFinal => "session_final",
            Kind::Reward => "reward",
            Kind::Slash => "slash",
            Kind::SlashRestored => "slash_restored",
            Kind::Bonded => "bonded",
            Kind::UnbondStarted => "unbond_started",
            Kind::Withdrawn => "withdrawn",
            Kind::ExpertiseDeclared => "expertise_declared",
            Kind::ExpertiseChanged => "expertise_changed",
            Kind::PauseAsked => "pause_asked",
            Kind::PauseChanged => "pause_changed",
            Kind::Dropped => "dropped",
        }
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A kind name that is not one of [`Kind::STORED`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown event kind `{0}`; kinds are {kinds}", kinds = Kind::STORED.map(Kind::name).join(", "))]
pub struct UnknownKind(pub String);

impl FromStr for Kind {
    type Err = UnknownKind;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Kind::STORED
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| UnknownKind(s.to_string()))
    }
}

/// An event's place in the feed: block height, then index in that block's feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct EventId {
    /// Block height.
    pub height: u64,
    /// Index in the block's feed.
    pub index: u32,
}

impl EventId {
    /// The position after every event of block `height` (what `?after=H` means).
    pub fn end_of(height: u64) -> Self {
        Self {
            height,
            index: u32::MAX,
        }
    }
}

impl fmt::Display for EventId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}", self.height, self.index)
    }
}

/// An event id that is neither `H:I` nor `H`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("event id `{0}` is not HEIGHT:INDEX (as `412:3`) or HEIGHT")]
pub struct BadEventId(pub String);

impl FromStr for EventId {
    type Err = BadEventId;
    /// `H:I`, or `H` alone for the end of block `H`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let bad = || BadEventId(s.chars().take(64).collect());
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        match s.trim().split_once(':') {
            Some((h, i)) if digits(h) && digits(i) => Ok(EventId {
                height: h.parse().map_err(|_| bad())?,
                index: i.parse().map_err(|_| bad())?,
            }),
            None if digits(s.trim()) => Ok(EventId::end_of(s.trim().parse().map_err(|_| bad())?)),
            _ => Err(bad()),
        }
    }
}

/// One event of the feed, as the API sends it (JSON) and the ledger stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEvent {
    /// `H:I`: block height and index in that block's feed.
    pub id: String,
    /// Block height.
    pub height: u64,
    /// What happened.
    pub kind: Kind,
    /// The session it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<Hash>,
    /// The segment it concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segment: Option<u16>,
    /// The account it is for: the seat, the provider, the auditor.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub account: Option<AccountId>,
    /// Voting round (1 after an escalation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub round: Option<u8>,
    /// The seat's tier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tier: Option<Tier>,
    /// Number of segments (session opened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments: Option<u16>,
    /// Last height accepting commits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_until: Option<u64>,
    /// Last height accepting reveals.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal_until: Option<u64>,
    /// A segment or trace verdict, snake_case.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Passing weight (session decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub passing_weight: Option<u64>,
    /// Total weight (session decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_weight: Option<u64>,
    /// Tokens moved (reward, slash, bond, unbond, withdraw).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub amount: Option<Amount>,
    /// Why (slash, failed session).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Height from which unbonding stake may be withdrawn.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub release_at: Option<u64>,
    /// The segments an appeal names (appeal opened).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub segments_appealed: Option<Vec<u16>>,
    /// A segment's own verdict before an appeal round, snake_case (appeal decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous: Option<String>,
    /// Whether an appeal round put the segment on the other side of Valid / not Valid.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overturned: Option<bool>,
    /// The trace verdict after an appeal round, snake_case (appeal decided).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<String>,
    /// Appeals waiting before this one (appeal queued).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub position: Option<u16>,
    /// Expertise domains (expertise declared or changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expertise: Option<Vec<String>>,
    /// Paused (true) or drawn again (pause asked or changed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paused: Option<bool>,
    /// `dropped` only: the id of the last event sent; resume after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_after: Option<String>,
}

impl FeedEvent {
    fn new(kind: Kind) -> Self {
        Self {
            id: String::new(),
            height: 0,
            kind,
            session: None,
            segment: None,
            account: None,
            round: None,
            tier: None,
            segments: None,
            commit_until: None,
            reveal_until: None,
            verdict: None,
            passing_weight: None,
            total_weight: None,
            amount: None,
            reason: None,
            release_at: None,
            segments_appealed: None,
            previous: None,
            overturned: None,
            trace: None,
            position: None,
            expertise: None,
            paused: None,
            resume_after: None,
        }
    }

    /// The final event of a stream the client fell behind on.
    pub fn dropped(resume_after: Option<EventId>) -> Self {
        let mut e = Self::new(Kind::Dropped);
        e.height = resume_after.map_or(0, |i| i.height);
        e.resume_after = resume_after.map(|i| i.to_string());
        e.id = resume_after.map(|i| i.to_string()).unwrap_or_default();
        e
    }

    /// Its id (`None` for a malformed one, which [`derive`] never makes).
    pub fn event_id(&self) -> Option<EventId> {
        self.id.parse().ok()
    }
}

/// Which events a subscriber wants; every given condition must hold.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Filter {
    /// Only events for this account.
    pub account: Option<AccountId>,
    /// Only events of this session.
    pub session: Option<Hash>,
    /// Only these kinds (empty: all).
    pub kinds: BTreeSet<Kind>,
}

impl Filter {
    /// Whether `e` passes.
    pub fn matches(&self, e: &FeedEvent) -> bool {
        self.account.is_none_or(|a| e.account == Some(a))
            && self.session.is_none_or(|s| e.session == Some(s))
            && (self.kinds.is_empty() || self.kinds.contains(&e.kind))
    }
}

fn snake(debug: impl fmt::Debug) -> String {
    let name = format!("{debug:?}");
    let mut out = String::with_capacity(name.len() + 4);
    for (i, c) in name.chars().enumerate() {
        if c.is_ascii_uppercase() {
            if i > 0 {
                out.push('_');
            }
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

pub(crate) fn segment_verdict(v: SegmentVerdict) -> String {
    snake(v)
}

pub(crate) fn trace_verdict(v: TraceVerdict) -> String {
    snake(v)
}

/// The feed of the block at `height`, from its contract `events` and the contract state
/// `after` it: in lifecycle order, ids assigned.
pub fn derive(height: u64, events: &[Event], after: &Contract) -> Vec<FeedEvent> {
    let state = after.state();
    let mut out = Vec::new();
    // Per session whose keys arrived in this block: each account's segments with an
    // uncommitted seat in the committing round, built once per session (one pass over its
    // seats); a key then costs its own account's seats, not the whole session's, and an
    // account is looked at once per session however many keys it got.
    let mut uncommitted: BTreeMap<Hash, BTreeMap<AccountId, Vec<u16>>> = BTreeMap::new();
    let mut looked = BTreeSet::new();
    for ev in events {
        match ev {
            Event::SessionOpened {
                session,
                provider,
                segments,
            } => {
                let mut e = FeedEvent::new(Kind::SessionOpened);
                e.session = Some(*session);
                e.account = Some(*provider);
                e.segments = Some(*segments);
                out.push(e);
            }
            Event::SessionDeferred {
                session,
                tier,
                judging,
                capacity,
            } => {
                let mut e = FeedEvent::new(Kind::SessionDeferred);
                e.session = Some(*session);
                e.tier = Some(*tier);
                e.reason = Some(format!(
                    "{judging} {tier:?} seats being judged, capacity {capacity}: the draw waits"
                ));
                out.push(e);
            }
            Event::SeatAssigned {
                session,
                segment,
                seat,
                round,
                tier,
            } => {
                let mut e = FeedEvent::new(Kind::SeatDrawn);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.account = Some(*seat);
                e.round = Some(*round);
                e.tier = Some(*tier);
                e.commit_until = state.sessions.get(session).and_then(|s| match s.phase {
                    Phase::Commit { round: r, until } if r == *round => Some(until),
                    _ => None,
                });
                out.push(e);
            }
            Event::KeyDelivered { session, seat, .. } => {
                // A key reaches the seats of its segment and of those citing it: every one
                // of this account's seats in the committing round that now holds all its
                // keys and has not committed is due, once per block.
                let Some(s) = state.sessions.get(session) else {
                    continue;
                };
                let Phase::Commit { round, until } = s.phase else {
                    continue;
                };
                if !looked.insert((*session, *seat)) {
                    continue;
                }
                let index = uncommitted.entry(*session).or_insert_with(|| {
                    let mut by: BTreeMap<AccountId, Vec<u16>> = BTreeMap::new();
                    for (i, g) in s.segments.iter().enumerate() {
                        let Ok(segment) = u16::try_from(i) else {
                            break;
                        };
                        for x in g
                            .seats
                            .iter()
                            .filter(|x| x.round == round && x.commitment.is_none())
                        {
                            let mine = by.entry(x.account).or_default();
                            if mine.last() != Some(&segment) {
                                mine.push(segment);
                            }
                        }
                    }
                    by
                });
                for &segment in index.get(seat).into_iter().flatten() {
                    let Some(g) = s.segments.get(usize::from(segment)) else {
                        continue;
                    };
                    let due = g.seats.iter().any(|x| {
                        x.account == *seat
                            && x.round == round
                            && x.commitment.is_none()
                            && x.keyed(g.entry.depends_on.len())
                    });
                    if due {
                        let mut e = FeedEvent::new(Kind::CommitDue);
                        e.session = Some(*session);
                        e.segment = Some(segment);
                        e.account = Some(*seat);
                        e.round = Some(round);
                        e.commit_until = Some(until);
                        out.push(e);
                    }
                }
            }
            Event::CommitWindowClosed {
                session,
                round,
                reveal_until,
            } => {
                let Some(s) = state.sessions.get(session) else {
                    continue;
                };
                for (i, g) in s.segments.iter().enumerate() {
                    let Ok(segment) = u16::try_from(i) else {
                        break;
                    };
                    for x in g
                        .seats
                        .iter()
                        .filter(|x| x.round == *round && x.commitment.is_some())
                    {
                        let mut e = FeedEvent::new(Kind::RevealDue);
                        e.session = Some(*session);
                        e.segment = Some(segment);
                        e.account = Some(x.account);
                        e.round = Some(*round);
                        e.reveal_until = Some(*reveal_until);
                        out.push(e);
                    }
                }
            }
            Event::SegmentDecided {
                session,
                segment,
                verdict,
            } => {
                let mut e = FeedEvent::new(Kind::SegmentDecided);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.verdict = Some(segment_verdict(*verdict));
                out.push(e);
            }
            Event::TraceDecided {
                session,
                verdict,
                passing_weight,
                total_weight,
            } => {
                let mut e = FeedEvent::new(Kind::SessionDecided);
                e.session = Some(*session);
                e.account = after.outcome(session).map(|o| o.provider);
                e.verdict = Some(trace_verdict(*verdict));
                e.passing_weight = Some(*passing_weight);
                e.total_weight = Some(*total_weight);
                out.push(e);
            }
            Event::AppealOpened {
                session,
                appellant,
                segments,
                round,
                bond,
            } => {
                let mut e = FeedEvent::new(Kind::AppealOpened);
                e.session = Some(*session);
                e.account = Some(*appellant);
                e.round = Some(*round);
                e.segments_appealed = Some(segments.clone());
                e.amount = Some(*bond);
                out.push(e);
            }
            Event::AppealDecided {
                session,
                segment,
                round,
                previous,
                verdict,
                overturned,
                trace,
            } => {
                let mut e = FeedEvent::new(Kind::AppealDecided);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.round = Some(*round);
                e.previous = Some(snake(previous));
                e.verdict = Some(snake(verdict));
                e.overturned = Some(*overturned);
                e.trace = Some(trace_verdict(*trace));
                out.push(e);
            }
            Event::AppealCancelled {
                session,
                appellant,
                refunded,
                reason,
            } => {
                let mut e = FeedEvent::new(Kind::AppealCancelled);
                e.session = Some(*session);
                e.account = Some(*appellant);
                e.amount = Some(*refunded);
                e.reason = Some(reason.clone());
                out.push(e);
            }
            Event::SessionFinal { session } => {
                let mut e = FeedEvent::new(Kind::SessionFinal);
                e.session = Some(*session);
                out.push(e);
            }
            // Housekeeping, not news: the outcome reads the same from the node's record
            // of final outcomes (`GET /v1/sessions/{id}`), and its proof is anchored at
            // its final block either way.
            Event::OutcomeRetired { .. } => {}
            Event::SessionFailed { session, reason } => {
                let mut e = FeedEvent::new(Kind::SessionFailed);
                e.session = Some(*session);
                e.reason = Some(reason.clone());
                out.push(e);
            }
            Event::Rewarded {
                session,
                segment,
                seat,
                amount,
            } => {
                let mut e = FeedEvent::new(Kind::Reward);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.account = Some(*seat);
                e.amount = Some(*amount);
                out.push(e);
            }
            Event::Slashed {
                session,
                seat,
                amount,
                reason,
            } => {
                let mut e = FeedEvent::new(Kind::Slash);
                e.session = Some(*session);
                e.account = Some(*seat);
                e.amount = Some(*amount);
                e.reason = Some(snake(reason));
                out.push(e);
            }
            Event::SlashRestored {
                session,
                segment,
                round,
                seat,
                amount,
                reason,
            } => {
                let mut e = FeedEvent::new(Kind::SlashRestored);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.round = Some(*round);
                e.account = Some(*seat);
                e.amount = Some(*amount);
                e.reason = Some(snake(reason));
                out.push(e);
            }
            Event::Bonded { account, amount } => {
                let mut e = FeedEvent::new(Kind::Bonded);
                e.account = Some(*account);
                e.amount = Some(*amount);
                out.push(e);
            }
            Event::UnbondStarted {
                account,
                amount,
                release_at,
            } => {
                let mut e = FeedEvent::new(Kind::UnbondStarted);
                e.account = Some(*account);
                e.amount = Some(*amount);
                e.release_at = Some(*release_at);
                out.push(e);
            }
            Event::Withdrawn { account, amount } => {
                let mut e = FeedEvent::new(Kind::Withdrawn);
                e.account = Some(*account);
                e.amount = Some(*amount);
                out.push(e);
            }
            Event::VoteRefused {
                session,
                segment,
                seat,
                reason,
            } => {
                let mut e = FeedEvent::new(Kind::VoteRefused);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.account = Some(*seat);
                e.reason = Some(reason.clone());
                out.push(e);
            }
            Event::BadKeyProven {
                session,
                segment,
                seat,
            } => {
                let mut e = FeedEvent::new(Kind::BadKeyProven);
                e.session = Some(*session);
                e.segment = Some(*segment);
                e.account = Some(*seat);
                out.push(e);
            }
            Event::HoneypotsForfeited { session, burned } => {
                let mut e = FeedEvent::new(Kind::HoneypotsForfeited);
                e.session = Some(*session);
                e.account = after
                    .outcome(session)
                    .map(|o| o.provider)
                    .or_else(|| after.state().sessions.get(session).map(|s| s.provider));
                e.amount = Some(*burned);
                out.push(e);
            }
            Event::AppealQueued {
                session,
                appellant,
                segments,
                position,
                bond,
            } => {
                let mut e = FeedEvent::new(Kind::AppealQueued);
                e.session = Some(*session);
                e.account = Some(*appellant);
                e.segments_appealed = Some(segments.clone());
                e.amount = Some(*bond);
                e.position = Some(*position);
                out.push(e);
            }
            Event::ExpertiseDeclared {
                account,
                expertise,
                at,
            } => {
                let mut e = FeedEvent::new(Kind::ExpertiseDeclared);
                e.account = Some(*account);
                e.expertise = Some(expertise.clone());
                e.release_at = Some(*at);
                out.push(e);
            }
            Event::ExpertiseChanged { account, expertise } => {
                let mut e = FeedEvent::new(Kind::ExpertiseChanged);
                e.account = Some(*account);
                e.expertise = Some(expertise.clone());
                out.push(e);
            }
            Event::PauseAsked {
                account,
                paused,
                at,
            } => {
                let mut e = FeedEvent::new(Kind::PauseAsked);
                e.account = Some(*account);
                e.paused = Some(*paused);
                e.release_at = Some(*at);
                out.push(e);
            }
            Event::PauseChanged { account, paused } => {
                let mut e = FeedEvent::new(Kind::PauseChanged);
                e.account = Some(*account);
                e.paused = Some(*paused);
                out.push(e);
            }
            _ => {}
        }
    }
    // Stable: within a kind the contract's order stays.
    out.sort_by_key(|e| e.kind);
    for (index, e) in out.iter_mut().enumerate() {
        let id = EventId {
            height,
            index: u32::try_from(index).unwrap_or(u32::MAX),
        };
        e.height = height;
        e.id = id.to_string();
    }
    out
}

#[cfg(test)]
mod tests;
