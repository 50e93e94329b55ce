//! Seat assignment: seeded sortition over stake x expertise within a tier.
//!
//! Who assigns auditors is an open question in the paper; this is our answer. The seed of
//! a draw is `H(block hash, session, segment, round, draw index)` where the block is the
//! one after the session was opened (or the block that closed the first round, for an
//! escalation), so anyone holding the ledger can redo every draw, and the provider, who
//! chose the session's contents one block earlier, cannot choose its seats.
//!
//! The seed is the block's [`trust_protocol::block::BlockHeader::seed`]: a hash of the
//! chain, the height and the VRF output of the block's proposer over the previous block's
//! seed, proven in the header and checked by every node that executes the block. It is
//! unique per proposer and parent seed, so neither the drawing block's proposer (by its
//! transactions or time) nor the previous block's (by its own block's contents) can try
//! seed after seed until the draw suits it, and nobody knows it before the drawing block's
//! proposer proves it. What remains (a proposer withholding its block so that the next
//! round's proposer gives another seed; two consecutive colluding proposers learning a
//! seed one block early) is in "Block seed" of `trust_protocol::block`.
//!
//! Eligible: the tier's index of drawable auditors ([`crate::State::eligible`]: active, not
//! flagged, a draw stake of at least the tier minimum), never the provider's account, never
//! a seat already on the segment. A draw reads the tier's index, not every registered
//! auditor. Weight: draw stake ([`crate::Auditor::draw_stake`]: the bonded stake, except
//! that a bond joins it, and an unbond leaves it, only `expertise_delay` blocks later, so
//! no stake change chosen by a proposer that knows the seed counts in that seed's draws),
//! doubled when the auditor declares the session's expertise domain. Seats are drawn
//! without replacement. To keep any single seat from seeing the whole trace, auditors that
//! already hold `segments - 1` segments of the session are set aside while enough others
//! remain.
//!
//! A session's exposure budget ([`trust_protocol::tx::SessionTerms::max_exposure`]) is a
//! hard limit instead: an account is eligible for a segment only if the keys it would then
//! hold (the segments of its seats and the premises sealed with each) cover at most
//! [`trust_protocol::tx::SessionTerms::exposure_cap`] of the session's segments. A draw
//! that cannot fill its seats within the budget draws nobody; it never falls back.

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    AccountId, Hash,
    tx::{LeftOut, SegmentEntry, Tier},
};

use crate::{
    events::Event,
    state::{Seat, Session, State},
};

/// The tiers above `tier`, next one up first: where an escalation or an appeal of one of
/// its segments may go when the session's terms allow them.
pub(crate) fn tiers_above(tier: Tier) -> &'static [Tier] {
    match tier {
        Tier::Computer => &[Tier::Llm, Tier::Human],
        Tier::Llm => &[Tier::Human],
        Tier::Human => &[],
    }
}

/// Segments of a session each account holds keys for: every segment it has a seat on and
/// the premises (`depends_on`) sealed with each.
pub(crate) type Coverage = BTreeMap<AccountId, BTreeSet<u16>>;

/// What a seat on segment `i` of a trace gets to read, by index (the session's segments
/// first, then the left-out ones numbered after them): segment `i` itself, the premises
/// whose keys are sealed to it (`depends_on`), the left-out segments whose text travels
/// with it as givens (`rests_on_left_out`), and the OPERATIONs checking its calculation
/// (`supports` = `i`), whose text is sealed in its document. This is what an exposure
/// budget counts; `entry(j)` is the session's segment `j`.
pub fn sight<'a>(
    segments: usize,
    entry: impl Fn(usize) -> Option<&'a SegmentEntry>,
    left_out: &[LeftOut],
    i: usize,
) -> Vec<u16> {
    let own = u16::try_from(i).unwrap_or(u16::MAX);
    let n = u16::try_from(segments).unwrap_or(u16::MAX);
    let Some(g) = entry(i) else {
        return vec![own];
    };
    let mut out: BTreeSet<u16> = BTreeSet::new();
    out.insert(own);
    out.extend(g.depends_on.iter().copied());
    out.extend(g.rests_on_left_out.iter().map(|l| n.saturating_add(*l)));
    for j in 0..segments {
        if entry(j).is_some_and(|e| e.supports == Some(own)) {
            out.insert(u16::try_from(j).unwrap_or(u16::MAX));
        }
    }
    for (l, e) in left_out.iter().enumerate() {
        if e.supports == Some(own) {
            out.insert(n.saturating_add(u16::try_from(l).unwrap_or(u16::MAX)));
        }
    }
    out.into_iter().collect()
}

/// How many segments a seat on each segment of a trace reads: the size of [`sight`] of
/// every session segment, in O(manifest) rather than [`sight`]'s O(segments) per segment,
/// so that `OpenSession` can check an exposure budget against a manifest of any size.
pub(crate) fn sight_sizes(segments: &[SegmentEntry], left_out: &[LeftOut]) -> Vec<usize> {
    let n = u16::try_from(segments.len()).unwrap_or(u16::MAX);
    let mut sights: Vec<BTreeSet<u16>> = segments
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let mut out = BTreeSet::new();
            out.insert(u16::try_from(i).unwrap_or(u16::MAX));
            out.extend(g.depends_on.iter().copied());
            out.extend(g.rests_on_left_out.iter().map(|l| n.saturating_add(*l)));
            out
        })
        .collect();
    let supporters = segments
        .iter()
        .enumerate()
        .map(|(j, g)| (g.supports, u16::try_from(j).unwrap_or(u16::MAX)))
        .chain(left_out.iter().enumerate().map(|(l, e)| {
            let l = u16::try_from(l).unwrap_or(u16::MAX);
            (e.supports, n.saturating_add(l))
        }));
    for (supports, who) in supporters {
        if let Some(set) = supports.and_then(|s| sights.get_mut(usize::from(s))) {
            set.insert(who);
        }
    }
    sights.iter().map(BTreeSet::len).collect()
}

/// [`sight`] of segment `i` of a live session.
pub(crate) fn keys_of(s: &Session, i: usize) -> Vec<u16> {
    sight(
        s.segments.len(),
        |j| s.segments.get(j).map(|g| &g.entry),
        &s.manifest.left_out,
        i,
    )
}

/// What every account seated in `s` holds keys for so far.
pub(crate) fn coverage(s: &Session) -> Coverage {
    let mut out = Coverage::new();
    for (i, g) in s.segments.iter().enumerate() {
        let keys = keys_of(s, i);
        for x in &g.seats {
            out.entry(x.account)
                .or_default()
                .extend(keys.iter().copied());
        }
    }
    out
}

/// Adds the keys of a seat on a segment needing `keys` to `account`'s coverage.
pub(crate) fn cover(c: &mut Coverage, account: AccountId, keys: &[u16]) {
    c.entry(account).or_default().extend(keys.iter().copied());
}

/// One sortition draw request.
pub(crate) struct Draw<'a> {
    pub seed: &'a Hash,
    pub session: &'a Hash,
    pub provider: &'a AccountId,
    pub segment: u16,
    pub round: u8,
    pub tier: Tier,
    pub domain: &'a str,
    /// Only auditors declaring `domain` may be drawn.
    pub domain_required: bool,
    pub seats: u8,
    /// Accounts already seated on this segment.
    pub exclude: &'a [AccountId],
    /// Segments of this session each account already holds, and the cap.
    pub held: &'a BTreeMap<AccountId, usize>,
    pub cap: Option<usize>,
    /// The exposure budget, when the session set one: what each account holds keys for,
    /// the keys a seat on this segment receives, and the most segments one account may
    /// cover.
    pub budget: Option<Budget<'a>>,
}

/// A hard exposure budget for one draw.
pub(crate) struct Budget<'a> {
    pub covered: &'a Coverage,
    pub keys: &'a [u16],
    pub cap: usize,
}

impl Budget<'_> {
    /// Whether `who` may take a seat on the segment without covering more than the cap.
    fn admits(&self, who: &AccountId) -> bool {
        match self.covered.get(who) {
            None => self.keys.len() <= self.cap,
            Some(have) => {
                let new = self.keys.iter().filter(|k| !have.contains(k)).count();
                have.len().saturating_add(new) <= self.cap
            }
        }
    }
}

fn eligible(st: &State, d: &Draw<'_>, respect_cap: bool) -> Vec<(AccountId, u128)> {
    st.eligible(d.tier)
        .iter()
        .filter(|id| {
            *id != d.provider
                && !d.exclude.contains(id)
                && d.budget.as_ref().is_none_or(|b| b.admits(id))
                && (!respect_cap
                    || d.cap
                        .is_none_or(|cap| d.held.get(*id).copied().unwrap_or(0) < cap))
        })
        .filter_map(|id| {
            let a = st.auditors.get(id)?;
            // The stake that counts in draws: a bond joins it only after the delay.
            let stake = a.draw_stake;
            let declares = !d.domain.is_empty() && a.expertise.iter().any(|e| e == d.domain);
            if d.domain_required && !declares {
                return None;
            }
            let bonus = if declares { 2 } else { 1 };
            Some((*id, u128::from(stake).saturating_mul(bonus)))
        })
        .collect()
}

/// Number of auditors that could be drawn for a tier, ignoring the per-session cap.
pub(crate) fn eligible_count(st: &State, d: &Draw<'_>) -> usize {
    eligible(st, d, false).len()
}

/// Draws `d.seats` distinct seats, or `None` when too few auditors are eligible.
pub(crate) fn draw(st: &State, d: &Draw<'_>) -> Option<Vec<AccountId>> {
    let want = usize::from(d.seats);
    let mut pool = eligible(st, d, true);
    if pool.len() < want {
        pool = eligible(st, d, false);
    }
    if pool.len() < want {
        return None;
    }
    let mut total: u128 = pool.iter().fold(0u128, |s, (_, w)| s.saturating_add(*w));
    let mut out = Vec::with_capacity(want);
    for j in 0..d.seats {
        let h = Hash::of_parts(
            "trust/v1/sortition",
            &[
                d.seed.as_ref(),
                d.session.as_ref(),
                &d.segment.to_le_bytes(),
                &[d.round, j],
            ],
        );
        let mut b = [0u8; 16];
        b.copy_from_slice(h.as_ref().get(..16)?);
        let mut ticket = u128::from_le_bytes(b).checked_rem(total)?;
        let mut pick = None;
        for (i, (_, w)) in pool.iter().enumerate() {
            if ticket < *w {
                pick = Some(i);
                break;
            }
            ticket = ticket.saturating_sub(*w);
        }
        let i = pick?;
        let (id, w) = pool.remove(i);
        total = total.saturating_sub(w);
        out.push(id);
    }
    Some(out)
}

/// The session's exposure budget in segments, when it set one (below the whole trace).
pub(crate) fn exposure_cap(s: &Session) -> Option<usize> {
    let t = &s.manifest.terms;
    let trace = s.segments.len().saturating_add(s.manifest.left_out.len());
    (t.max_exposure < trust_protocol::units::Ppm::ONE).then(|| t.exposure_cap(trace))
}

/// Seats the `picked` accounts on segment `segment` (whose seats are `seats`) of session
/// `id` in `round`, as `tier` auditors: a fresh seat each, announced by `SeatAssigned`.
pub(crate) fn seat_picked(
    id: &Hash,
    segment: u16,
    round: u8,
    tier: Tier,
    seats: &mut Vec<Seat>,
    picked: Vec<AccountId>,
    ev: &mut Vec<Event>,
) {
    for account in picked {
        ev.push(Event::SeatAssigned {
            session: *id,
            segment,
            seat: account,
            round,
            tier,
        });
        seats.push(new_seat(account, round));
    }
}

fn new_seat(account: AccountId, round: u8) -> Seat {
    Seat {
        account,
        round,
        commitment: None,
        vote: None,
        reason: None,
        slash: None,
        counted: false,
        keys: 0,
        key_record: Hash::ZERO,
        bad_key: false,
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::{Hash, tx::Tier};

    use super::*;

    fn seg(i: u8, depends_on: Vec<u16>, supports: Option<u16>) -> SegmentEntry {
        SegmentEntry {
            depends_on,
            supports,
            ..SegmentEntry::plain(Hash::of_parts("s", &[&[i]]), Tier::Computer)
        }
    }

    #[test]
    fn sight_sizes_are_the_sizes_of_each_sight() {
        let segments = vec![
            seg(0, vec![], None),
            seg(1, vec![0], None),
            seg(2, vec![0, 1], Some(1)),
            seg(3, vec![2], Some(1)),
            seg(4, vec![1], Some(9)),
        ];
        let mut left = LeftOut {
            tier: Tier::Computer,
            weight: 1,
            depends_on: vec![],
            rests_on_left_out: vec![],
            conclusion: false,
            supports: Some(2),
        };
        let left_out = vec![left.clone(), {
            left.supports = Some(0);
            left
        }];
        let mut with_givens = segments.clone();
        with_givens[3].rests_on_left_out = vec![0, 1];
        for segs in [&segments, &with_givens] {
            let each: Vec<usize> = (0..segs.len())
                .map(|i| sight(segs.len(), |j| segs.get(j), &left_out, i).len())
                .collect();
            assert_eq!(sight_sizes(segs, &left_out), each);
        }
    }
}
