//! What can never apply again: a call whose session, phase or seat has moved past it.
//!
//! The node's mempool drops such a call (and refuses it from a peer), its outbox stops
//! resending it, and its duties planner judges a session only where a seat may still
//! commit. The answer depends only on what moves one way in the contract's state, so it
//! holds on every later state too.

use trust_protocol::{AccountId, Hash, tx::Call};

use crate::{Phase, State};

/// Why `sender`'s `call` can never apply on `state` or any later state, if so.
///
/// Only what moves one way is judged here: a session leaves the live set once and for all,
/// phases only move forward, a seat commits and reveals once. What may still change (a
/// reveal sent while its commit window is open, a balance) is left to the node's mempool
/// (its admission checks and costs) and the contract.
pub fn expired(state: &State, sender: &AccountId, call: &Call) -> Option<&'static str> {
    if let Call::Commits { .. } | Call::Reveals { .. } | Call::Votes { .. } = call {
        // A batch of votes expires when every entry has: the contract refuses the expired
        // entries alone and applies the others.
        let mut why = None;
        for single in call.unbatched() {
            match expired(state, sender, &single) {
                None => return None,
                Some(w) => {
                    why.get_or_insert(w);
                }
            }
        }
        return why;
    }
    if let Call::Appeal { session, .. } = call {
        return appeal_expired(state, session);
    }
    // A honeypot set opens once, whole, while its session is live. One sent in the first
    // round's reveal window, early, to land with the last reveal, is dropped once an
    // escalation began instead (a reveal it counted on did not land): waiting through the
    // escalation would hold back every later transaction of its provider. The provider
    // sends the set again in the disclosure, under a new nonce; the mapping it sent with
    // the set goes the same way.
    if let Call::RevealHoneypots { session, .. } | Call::RevealMapping { session, .. } = call {
        let escalated = |s: &crate::Session| {
            !s.honeypots_opened
                && matches!(
                    s.phase,
                    Phase::Commit { round: 1.., .. } | Phase::Reveal { round: 1.., .. }
                )
        };
        return match (state.sessions.get(session), call) {
            (None, _) => Some("the session is no longer live"),
            (Some(s), Call::RevealHoneypots { .. }) if s.honeypots_opened => {
                Some("the honeypot set is open already")
            }
            (Some(s), Call::RevealMapping { .. }) if s.mapping.is_some() => {
                Some("the mapping is open already")
            }
            (Some(s), _) if escalated(s) => {
                Some("an escalation began: the honeypot set and the mapping open after it")
            }
            (Some(_), _) => None,
        };
    }
    let session = match call {
        Call::Commit { session, .. }
        | Call::Reveal { session, .. }
        | Call::DeliverKeys { session, .. }
        | Call::RevealHoneypot { session, .. }
        | Call::ReportBadKey { session, .. } => session,
        _ => return None,
    };
    let Some(s) = state.sessions.get(session) else {
        return Some("the session is no longer live");
    };
    let seat_of = |segment: u16, round: u8| {
        let seg = s.segments.get(usize::from(segment))?;
        seg.seats
            .iter()
            .find(|x| x.account == *sender && x.round == round)
    };
    let seated_before = |segment: u16, round: u8| {
        s.segments.get(usize::from(segment)).is_some_and(|seg| {
            seg.seats
                .iter()
                .any(|x| x.account == *sender && x.round < round)
        })
    };
    if let Call::Commit { segment, .. } | Call::Reveal { segment, .. } = call
        && usize::from(*segment) >= s.segments.len()
    {
        return Some("the session has no such segment");
    }
    match (call, s.phase) {
        (Call::Commit { segment, .. }, Phase::Commit { round, .. }) => {
            match seat_of(*segment, round) {
                Some(seat) if seat.commitment.is_some() => Some("the seat committed already"),
                None if seated_before(*segment, round) => Some("its round's commit window closed"),
                _ => None,
            }
        }
        (Call::Commit { .. }, Phase::Reveal { .. } | Phase::Disclose { .. }) => {
            Some("the commit window closed")
        }
        (Call::Reveal { segment, .. }, Phase::Commit { round, .. }) => {
            (seat_of(*segment, round).is_none() && seated_before(*segment, round))
                .then_some("its round's reveal window closed")
        }
        (Call::Reveal { segment, .. }, Phase::Reveal { round, .. }) => {
            match seat_of(*segment, round) {
                Some(seat) if seat.vote.is_some() => Some("the seat revealed already"),
                Some(seat) if seat.commitment.is_none() => Some("the seat never committed"),
                None if seated_before(*segment, round) => Some("its round's reveal window closed"),
                _ => None,
            }
        }
        (
            Call::Reveal { .. } | Call::DeliverKeys { .. } | Call::ReportBadKey { .. },
            Phase::Disclose { .. },
        ) => Some("voting ended"),
        // A seat proves a bad key once per round, while the round votes.
        (
            Call::ReportBadKey { segment, .. },
            Phase::Commit { round, .. } | Phase::Reveal { round, .. },
        ) => match seat_of(*segment, round) {
            Some(seat) if seat.bad_key => Some("the seat proved a bad key already"),
            None if seated_before(*segment, round) => Some("its round voted already"),
            _ => None,
        },
        _ => None,
    }
}

/// Why an appeal of `session` can never apply on `state` or later, if so: the session
/// failed, or it is decided and its appeal window closed (it is final, or no appeal is
/// open and the next block is past its last appealable height). An appeal of a session
/// not decided yet, or with an appeal being judged, may still apply later.
fn appeal_expired(state: &State, session: &Hash) -> Option<&'static str> {
    if state.failed.contains_key(session) {
        return Some("the session failed: there is no verdict to appeal");
    }
    let o = state.outcomes.get(session)?;
    if o.appeals.final_at.is_some() {
        return Some("the session is final: its appeal window closed");
    }
    let next = state.height.saturating_add(1);
    (o.appeals.open.is_none() && next > o.appeals.until)
        .then_some("the session's appeal window closed")
}
