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
//! - *A provider holding capacity*: a seat holds capacity only while it may still be
//!   judging. It leaves the count as soon as it commits, and every seat when its round's
//!   commit phase ends; before that, a seat its provider has not keyed by the round's key
//!   deadline ([`crate::key_deadline`], [`crate::Params::key_window`] blocks
//!   after the draw; a later key never counts) leaves it the block after, and a keyed seat
//!   that has not committed leaves it once an honest seat would have judged: the key
//!   deadline plus the commit window the network itself gives the round
//!   (`hold_ends`). So neither seats the provider never keys nor keyed seats that never
//!   commit (its own sybils in a session whose ciphertexts nobody serves) hold capacity
//!   for the long window their provider asked for. An honest seat keyed in time holds its
//!   place until it commits or an honest seat's time has run out, so a burst still never
//!   hands an honest auditor more seats than it judges in a window; and since a key after
//!   the deadline does not count, a provider cannot let a hold lapse, have more sessions
//!   drawn on the same auditors and then key them all at once.
//! - *How long an honest session waits*: every seat drawn at block `b` holds nothing
//!   after `b + key_window + W`, with `W` the network's commit window stretched to the
//!   floors of the round's tiers (`max(commit_window, floors.min_commit_window[t])`), so
//!   a session first in line is drawn at most `key_window + W + 1` blocks after it became
//!   first (plus the seats of appeal and escalation rounds drawn meanwhile, which are
//!   bonded or paid for), whatever windows the sessions ahead of it asked for; with `q`
//!   sessions before it in line, at most `(q + 1) (key_window + W + 1)`. At the default
//!   genesis that is 41 blocks per place in line (10 + 30 + 1, the Human tier).
//! - *Escrow held forever*: a session that waits past [`crate::Params::draw_patience`]
//!   blocks fails and is refunded in full.
//! - *Cost*: one pass over each tier's eligible set per block that has a draw due, like the
//!   draw itself; the count of seats being judged is kept per phase change, commitment,
//!   proven bad key and end of a hold, never rescanned: at the end of each block one cheap
//!   test per live session (`hold_ends_at`), and a count of a session's seats only in
//!   the blocks where one of its holds ends.

use trust_protocol::tx::Tier;

use crate::{
    params::Params,
    state::{Phase, Seat, SegmentState, Session, State},
};

/// Seats per tier (Computer, LLM, Human).
pub(crate) type PerTier = [u64; 3];

/// The last blocks of a round's hold on capacity, for a round in its commit phase
/// (closing at `until`): `(keys_by, judged_by)`. Up to `keys_by` (the round's key
/// deadline, [`crate::key_deadline`]) every seat that has not committed holds
/// capacity; from then on only a keyed one ([`crate::Seat::keyed`]), up to `judged_by`,
/// the key deadline plus the commit window the round would have under the network's own
/// terms ([`crate::windows::network_commit_window`]): what an honest seat keyed at the
/// deadline needs to judge. Past `judged_by` a seat that has not committed holds nothing:
/// it is slow or absent (a keyed no-show is slashed at the tally as ever), and whatever
/// window its provider asked for, its session no longer keeps others from being drawn.
pub(crate) fn hold_ends(p: &Params, s: &Session, round: u8, until: u64) -> (u64, u64) {
    let keys_by = crate::windows::round_key_deadline(p, s, round, until);
    let judged_by = keys_by.saturating_add(crate::windows::network_commit_window(p, s, round));
    (keys_by, judged_by)
}

/// Whether `seat` (of `seg`, in its round's commit phase, its hold ending as
/// [`hold_ends`] says) holds capacity during the block at `height`.
fn holds(seg: &SegmentState, seat: &Seat, ends: (u64, u64), height: u64) -> bool {
    let (keys_by, judged_by) = ends;
    seat.commitment.is_none()
        && (height <= keys_by || (height <= judged_by && seat.keyed(seg.entry.depends_on.len())))
}

/// The seats of `s`'s current round in commit phase `phase` that hold capacity during
/// the block at `height` ([`hold_ends`]), per tier: what `s` adds to [`State::judging`]
/// then (nothing in any other phase). A seat that committed has judged: it holds no
/// capacity, so a provider cannot keep honest sessions waiting with seats that are done;
/// nor with seats it never keyed, past the key deadline, or keyed seats that do not
/// commit, past the time an honest seat needs.
pub(crate) fn judging_seats(p: &Params, s: &Session, phase: Phase, height: u64) -> PerTier {
    let mut out = [0u64; 3];
    let Phase::Commit { round, until } = phase else {
        return out;
    };
    let ends = hold_ends(p, s, round, until);
    for seg in &s.segments {
        let n = seg
            .seats
            .iter()
            .filter(|x| x.round == round && holds(seg, x, ends, height))
            .count();
        add(&mut out, seg.tier, n as u64);
    }
    out
}

/// Whether what `s` holds in `phase` changes between the block at `height` and the next:
/// `height` is the last block of one of its round's holds ([`hold_ends`]). Cheap enough
/// to ask of every live session at the end of every block.
pub(crate) fn hold_ends_at(p: &Params, s: &Session, phase: Phase, height: u64) -> bool {
    let Phase::Commit { round, until } = phase else {
        return false;
    };
    if height >= until {
        return false;
    }
    let (keys_by, judged_by) = hold_ends(p, s, round, until);
    height == keys_by || height == judged_by
}

/// Whether the seat of `account` on segment `segment` of `s`, in its round's commit
/// phase, holds capacity during the block at `height`: what a commitment or a proven bad
/// key takes off [`State::judging`].
pub(crate) fn seat_holds(
    p: &Params,
    s: &Session,
    segment: usize,
    account: &trust_protocol::AccountId,
    height: u64,
) -> bool {
    let Phase::Commit { round, until } = s.phase else {
        return false;
    };
    let ends = hold_ends(p, s, round, until);
    s.segments.get(segment).is_some_and(|seg| {
        seg.seats
            .iter()
            .find(|x| x.account == *account && x.round == round)
            .is_some_and(|x| holds(seg, x, ends, height))
    })
}

/// A seat of `tier` stopped holding capacity (it committed, or proved a bad key past the
/// key deadline).
pub(crate) fn released(judging: &mut PerTier, tier: Tier) {
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
/// the invariant tests): the seats that hold capacity during the block after the last
/// one applied ([`State::height`]), which is what the count says between blocks (and,
/// during a block, about that block).
pub fn judging_by_scan(st: &State) -> PerTier {
    let mut out = [0u64; 3];
    let now = st.height.saturating_add(1);
    for s in st.sessions.values() {
        shift(
            &mut out,
            &[0; 3],
            &judging_seats(&st.params, s, s.phase, now),
        );
    }
    out
}

fn add(out: &mut PerTier, tier: Tier, n: u64) {
    if let Some(x) = out.get_mut(Params::tier_index(tier)) {
        *x = x.saturating_add(n);
    }
}
