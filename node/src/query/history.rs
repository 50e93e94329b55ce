//! An auditor's history, session by session: the seats it was drawn to, the votes it
//! revealed, what it earned and lost, the appeals it filed, read from the event feed the
//! ledger stores with each block and from each session's outcome.
//!
//! Bounded: one call reads at most [`MAX_HISTORY_BLOCKS`] blocks' events, newest first,
//! and stops once it has [`MAX_HISTORY_SESSIONS`] sessions; `earlier` says where the next
//! call starts. A pruning node holds no events below its oldest block.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trust_protocol::{AccountId, Hash, Vote};
use utoipa::ToSchema;

use super::{SessionLookup, session};
use crate::{
    feed::{FeedEvent, Kind},
    ledger::{Ledger, LedgerError},
    view::ChainView,
};

/// Most blocks one history call reads.
pub const MAX_HISTORY_BLOCKS: u64 = 10_000;
/// Most sessions one history call returns.
pub const MAX_HISTORY_SESSIONS: usize = 100;

/// A page of an auditor's history: the sessions it took part in within blocks
/// `from..=to`, newest first.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct AuditorHistory {
    /// The auditor's account.
    #[schema(value_type = String)]
    pub account: AccountId,
    /// The lowest block read.
    pub from: u64,
    /// The highest block read.
    pub to: u64,
    /// Ask again with `before` this height for the page before this one; absent when the
    /// node holds no earlier block.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub earlier: Option<u64>,
    /// The sessions, newest first (by the last block that concerned this auditor).
    pub sessions: Vec<SessionHistory>,
}

/// What one session meant for one auditor.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SessionHistory {
    /// The session.
    #[schema(value_type = String)]
    pub session: Hash,
    /// The first block of it that concerned this auditor.
    pub first_block: u64,
    /// The last such block.
    pub last_block: u64,
    /// `decided`, `live`, `failed`, or `unknown` (not held by this node).
    pub status: String,
    /// The trace verdict, when decided: `pass`, `fail` or `inconclusive`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// Seats it was drawn to, every round (appeal rounds too).
    pub seats: u32,
    /// Its revealed votes, when decided, by kind.
    pub votes: VoteTally,
    /// Of those, the judgements among the first `k` of their round (paid if they agreed).
    pub counted: u32,
    /// Rewards paid to it.
    pub rewards: u64,
    /// Stake slashed from it.
    pub slashed: u64,
    /// Why, one entry per slash.
    pub slash_reasons: Vec<String>,
    /// Slashes given back after an appeal decided a segment its way.
    pub restored: u64,
    /// Appeals it filed (opened or queued).
    pub appeals: u32,
}

/// Votes by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct VoteTally {
    /// Valid.
    pub valid: u32,
    /// Invalid.
    pub invalid: u32,
    /// Ungrounded.
    pub ungrounded: u32,
    /// Abstentions.
    pub abstain: u32,
}

/// `who`'s history in the blocks below `before` (the tip when `None`), at most `blocks` of
/// them (at most [`MAX_HISTORY_BLOCKS`]).
pub fn auditor_history(
    chain: &ChainView,
    ledger: &Ledger,
    who: &AccountId,
    before: Option<u64>,
    blocks: u64,
) -> Result<AuditorHistory, LedgerError> {
    let tip = ledger.tip()?.map_or(0, |(h, _)| h);
    let to = before.map_or(tip, |b| b.saturating_sub(1)).min(tip);
    let oldest = ledger.oldest_block()?.unwrap_or(1).max(1);
    let span = blocks.clamp(1, MAX_HISTORY_BLOCKS);
    let mut found: BTreeMap<Hash, SessionHistory> = BTreeMap::new();
    let mut from = to.saturating_add(1);
    let mut height = to;
    while height >= oldest && to.saturating_sub(height) < span {
        if found.len() >= MAX_HISTORY_SESSIONS {
            break;
        }
        if let Some(feed) = ledger.events(height)? {
            for e in feed.iter().filter(|e| e.account == Some(*who)) {
                add(&mut found, e);
            }
        }
        from = height;
        if height == 0 {
            break;
        }
        height = height.saturating_sub(1);
    }
    let earlier = (from > oldest).then_some(from);
    let mut sessions: Vec<SessionHistory> = found.into_values().collect();
    for s in &mut sessions {
        fill_outcome(chain, ledger, who, s)?;
    }
    sessions.sort_by(|a, b| {
        b.last_block
            .cmp(&a.last_block)
            .then(a.session.cmp(&b.session))
    });
    Ok(AuditorHistory {
        account: *who,
        from: from.min(to),
        to,
        earlier,
        sessions,
    })
}

/// Adds one of the auditor's events to its session's entry.
fn add(found: &mut BTreeMap<Hash, SessionHistory>, e: &FeedEvent) {
    let Some(session) = e.session else {
        return;
    };
    let s = found.entry(session).or_insert_with(|| SessionHistory {
        session,
        first_block: e.height,
        last_block: e.height,
        status: "unknown".into(),
        ..SessionHistory::default()
    });
    s.first_block = s.first_block.min(e.height);
    s.last_block = s.last_block.max(e.height);
    let amount = e.amount.unwrap_or(0);
    match e.kind {
        Kind::SeatDrawn => s.seats = s.seats.saturating_add(1),
        Kind::Reward => s.rewards = s.rewards.saturating_add(amount),
        Kind::Slash => {
            s.slashed = s.slashed.saturating_add(amount);
            s.slash_reasons
                .push(e.reason.clone().unwrap_or_else(|| "?".into()));
        }
        Kind::SlashRestored => s.restored = s.restored.saturating_add(amount),
        Kind::AppealOpened | Kind::AppealQueued => s.appeals = s.appeals.saturating_add(1),
        _ => {}
    }
}

/// The session's status and verdict, and the auditor's votes in its outcome.
fn fill_outcome(
    chain: &ChainView,
    ledger: &Ledger,
    who: &AccountId,
    s: &mut SessionHistory,
) -> Result<(), LedgerError> {
    match session(chain, ledger, &s.session)? {
        Some(SessionLookup::Decided(d)) => {
            s.status = "decided".into();
            s.verdict = Some(crate::feed::trace_verdict(d.outcome.trace));
            for v in d
                .outcome
                .segments
                .iter()
                .flat_map(|g| g.votes_cast.iter())
                .filter(|v| v.seat == *who)
            {
                let slot = match v.vote {
                    Vote::Valid => &mut s.votes.valid,
                    Vote::Invalid => &mut s.votes.invalid,
                    Vote::Ungrounded => &mut s.votes.ungrounded,
                    // Counted with the abstentions (the provider paid for it when a
                    // quorum of the round cast it).
                    Vote::Abstain | Vote::PayloadAbstain => &mut s.votes.abstain,
                };
                *slot = slot.saturating_add(1);
                if v.counted {
                    s.counted = s.counted.saturating_add(1);
                }
            }
        }
        Some(SessionLookup::Live(_)) => s.status = "live".into(),
        Some(SessionLookup::Failed(_)) => s.status = "failed".into(),
        None => {}
    }
    Ok(())
}
