//! The windows of a session's rounds and the key deadline: how long a round's seats have
//! to commit and reveal, when its keys must have arrived, and when it was drawn. Pure
//! functions of the parameters and the session, read by the session transactions
//! ([`crate::sessions`]), the block's phase changes ([`crate::contract`]) and capacity
//! admission ([`crate::admission`]).

use trust_protocol::tx::Tier;

use crate::{
    params::Params,
    state::{Phase, Session},
};

/// The session's own reveal window: its terms', or the network's.
fn base_reveal_window(p: &Params, s: &Session) -> u64 {
    match s.manifest.terms.reveal_window {
        0 => p.reveal_window,
        w => u64::from(w),
    }
}

/// The tiers of the segments that have seats in `round`.
fn round_tiers(s: &Session, round: u8) -> impl Iterator<Item = Tier> + '_ {
    s.segments
        .iter()
        .filter(move |g| g.seats.iter().any(|x| x.round == round))
        .map(|g| g.tier)
}

/// The commit window of `round` of a session: its own, stretched to the floor of every
/// tier seated in the round ([`crate::Floors::min_commit_window`]), so that an escalation
/// or appeal into a slower tier still gets a window its honest seats can meet.
///
/// A window the provider asked for is capped first at the least cap of those tiers
/// ([`crate::Floors::max_commit_window`]), so that no session keeps its seats (and their
/// stake) waiting for longer. (What a round holds of the network's capacity is bounded
/// tighter, by the key deadline and the network's own window: [`crate::admission`].) The
/// network's own window is genesis', and not capped.
pub(crate) fn commit_window(p: &Params, s: &Session, round: u8) -> u64 {
    let asked = match s.manifest.terms.commit_window {
        0 => p.commit_window,
        w => round_tiers(s, round)
            .map(|t| p.floors.max_commit_window(t))
            .fold(u64::from(w), u64::min),
    };
    round_tiers(s, round)
        .map(|t| p.floors.min_commit_window(t))
        .fold(asked, u64::max)
}

/// The commit window `round` of a session would have under the network's own terms: the
/// network's window stretched to the floor of every tier seated in the round, as
/// [`commit_window`] gives a session that asks for none. This is what genesis says an
/// honest seat needs to judge, whatever window the provider asked for: a keyed seat holds
/// capacity no longer than this after the key deadline ([`crate::admission`]).
pub(crate) fn network_commit_window(p: &Params, s: &Session, round: u8) -> u64 {
    round_tiers(s, round)
        .map(|t| p.floors.min_commit_window(t))
        .fold(p.commit_window, u64::max)
}

/// The block `round` of a session was drawn in, from its commit deadline `until`: every
/// commit phase is entered in the block its seats are drawn in, closing
/// [`commit_window`] blocks later, and neither the terms, the parameters nor the round's
/// seats change while it lasts.
pub(crate) fn round_start(p: &Params, s: &Session, round: u8, until: u64) -> u64 {
    until.saturating_sub(commit_window(p, s, round))
}

/// The last block in which a key counts for the seats of the round `s` is committing
/// (`None` in any other phase): [`Params::key_window`] blocks after the round's draw, or
/// [`Params::key_lead`] blocks before its commit deadline if that comes first. A seat not
/// keyed by then is starved for good ([`crate::recording_round`]). A node's provider keys its
/// seats by then, and a node's seat stops waiting for keys after it.
pub fn key_deadline(p: &Params, s: &Session) -> Option<u64> {
    let Phase::Commit { round, until } = s.phase else {
        return None;
    };
    Some(round_key_deadline(p, s, round, until))
}

/// [`key_deadline`] of `round` of `s`, in a commit phase closing at `until`.
pub(crate) fn round_key_deadline(p: &Params, s: &Session, round: u8, until: u64) -> u64 {
    round_start(p, s, round, until)
        .saturating_add(p.key_window)
        .min(until.saturating_sub(p.key_lead))
}

/// The reveal window of `round` of a session, stretched as [`commit_window`].
pub(crate) fn reveal_window(p: &Params, s: &Session, round: u8) -> u64 {
    round_tiers(s, round)
        .map(|t| p.floors.min_reveal_window(t))
        .fold(base_reveal_window(p, s), u64::max)
}
