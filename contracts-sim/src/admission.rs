//! Admission of round-0 draws by the network's capacity: a deferred draw.
//!
//! A seat must judge its segment inside its commit window or abstain; a seat that does
//! neither is a keyed no-show and is slashed. Draws are by stake, so a burst of sessions
//! lands on the auditors in proportion to their stake whatever their hardware, and a burst
//! larger than they can judge in a window would turn honest seats into no-shows. So the
//! round-0 draw of a session waits (stays `Assigning`) while the seats of its tiers being
//! judged now, its own included, would exceed the tier's capacity:
//!
//! `capacity_t = seat_capacity[t] * S_t / s_max_t`
//!
//! where `S_t` is the eligible stake of tier `t` and `s_max_t` its largest eligible stake.
//! Under stake-weighted draws the largest auditor expects `judging_t * s_max_t / S_t`
//! seats, so within capacity it expects at most `seat_capacity[t]`: the limit protects the
//! auditor most exposed to a burst, and many small sybils add little to `S_t` (a thousand
//! auditors of the minimum stake beside one of a hundred times it raise capacity tenfold,
//! not a thousandfold).
//!
//! Who abuses it, and why it holds:
//! - *A provider picking its judges*: the draw itself never looks at load. A session is
//!   drawn from the whole eligible pool by stake or not drawn at all; filling the honest
//!   auditors' windows with one's own sessions only delays every session, the filler's
//!   included, and each filler pays its fee.
//! - *A provider jumping the queue*: sessions wait in the order they were opened (height,
//!   then id), and a block draws none past the first that does not fit, so a small session
//!   never overtakes a large one that waits.
//! - *A provider holding capacity*: a seat leaves the count as soon as it commits, and
//!   every seat when its round's commit phase ends; holding capacity for the whole window
//!   needs seats that do not commit (key starvation is paid by the provider), and the
//!   window itself is capped per tier at genesis (`floors.max_commit_window`), so nothing
//!   holds a seat's capacity longer than its tier's cap.
//! - *Escrow held forever*: a session that waits past [`crate::Params::draw_patience`]
//!   blocks fails and is refunded in full.
//! - *Cost*: one pass over each tier's eligible set per block that has a draw due, like the
//!   draw itself; the count of seats being judged is kept per phase change, never rescanned.

use trust_protocol::tx::Tier;

use crate::{
    params::Params,
    state::{Phase, Session, State},
};

/// Seats per tier (Computer, LLM, Human).
pub(crate) type PerTier = [u64; 3];

/// The seats of `s`'s current round in commit phase `phase` that have not committed yet,
/// per tier: what `s` adds to [`State::judging`] while it is in that phase (nothing in
/// any other phase). A seat that committed has judged: it holds no capacity, so a
/// provider cannot keep honest sessions waiting with seats that are done.
pub(crate) fn judging_seats(s: &Session, phase: Phase) -> PerTier {
    let mut out = [0u64; 3];
    let Phase::Commit { round, .. } = phase else {
        return out;
    };
    for seg in &s.segments {
        let n = seg
            .seats
            .iter()
            .filter(|x| x.round == round && x.commitment.is_none())
            .count();
        add(&mut out, seg.tier, n as u64);
    }
    out
}

/// A seat of `tier` committed: it has judged, and no longer holds capacity.
pub(crate) fn committed(judging: &mut PerTier, tier: Tier) {
    let mut one = [0u64; 3];
    add(&mut one, tier, 1);
    shift(judging, &one, &[0; 3]);
}

/// Seats the round-0 draw of `s` would fill, per tier.
pub(crate) fn round0_seats(s: &Session) -> PerTier {
    let mut out = [0u64; 3];
    for seg in &s.segments {
        let n = seg.k.saturating_add(s.manifest.quorum.extra_seats);
        add(&mut out, seg.tier, u64::from(n));
    }
    out
}

/// Each tier's capacity now: `seat_capacity[t] * S_t / s_max_t` over its eligible
/// auditors (0 for a tier with no eligible stake).
pub(crate) fn capacity(st: &State) -> PerTier {
    let mut out = [0u64; 3];
    for tier in Tier::ALL {
        let (mut sum, mut max) = (0u128, 0u128);
        for id in st.eligible(tier) {
            let stake = u128::from(st.auditors.get(id).map_or(0, |a| a.draw_stake));
            sum = sum.saturating_add(stake);
            max = max.max(stake);
        }
        let per = u128::from(
            st.params
                .seat_capacity
                .get(Params::tier_index(tier))
                .copied()
                .unwrap_or(1),
        );
        let cap = per
            .saturating_mul(sum)
            .checked_div(max)
            .unwrap_or(0)
            .min(u128::from(u64::MAX));
        add(&mut out, tier, u64::try_from(cap).unwrap_or(u64::MAX));
    }
    out
}

/// The first tier (and its load and capacity) where `need` more seats do not fit: a tier
/// with nothing being judged always admits, so that a session larger than a whole tier's
/// capacity still runs, alone.
pub(crate) fn refusing_tier(
    judging: &PerTier,
    need: &PerTier,
    capacity: &PerTier,
) -> Option<(Tier, u64, u64)> {
    Tier::ALL.into_iter().find_map(|t| {
        let i = Params::tier_index(t);
        let (load, n, cap) = (
            judging.get(i).copied().unwrap_or(0),
            need.get(i).copied().unwrap_or(0),
            capacity.get(i).copied().unwrap_or(0),
        );
        (n > 0 && load > 0 && load.saturating_add(n) > cap).then_some((t, load, cap))
    })
}

/// `judging += after - before`, per tier (saturating: the count never wraps).
pub(crate) fn shift(judging: &mut PerTier, before: &PerTier, after: &PerTier) {
    for ((j, b), a) in judging.iter_mut().zip(before).zip(after) {
        *j = j.saturating_sub(*b).saturating_add(*a);
    }
}

/// The count [`State::judging`] must hold, by a scan of the live sessions (restore, and
/// the invariant tests).
pub fn judging_by_scan(st: &State) -> PerTier {
    let mut out = [0u64; 3];
    for s in st.sessions.values() {
        shift(&mut out, &[0; 3], &judging_seats(s, s.phase));
    }
    out
}

fn add(out: &mut PerTier, tier: Tier, n: u64) {
    if let Some(x) = out.get_mut(Params::tier_index(tier)) {
        *x = x.saturating_add(n);
    }
}
