//! Seat assignment: seeded sortition over stake x expertise within a tier.
//!
//! Who assigns auditors is an open question in the paper; this is our answer. The seed of
//! a draw is `H(block hash, session, segment, round, draw index)` where the block is the
//! one after the session was opened (or the block that closed the first round, for an
//! escalation), so anyone holding the ledger can redo every draw, and the provider, who
//! chose the session's contents one block earlier, cannot choose its seats.
//!
//! The seed is the block's [`trust_protocol::block::BlockHeader::seed`]: a hash of the
//! chain, the height and the previous block's hash only, all fixed before the drawing
//! block's proposer picks its transactions, so that proposer cannot try transaction sets
//! until the draw suits it (see that function for what remains).
//!
//! Eligible: the tier's index of drawable auditors ([`crate::State::eligible`]: active, not
//! flagged, bonded at least the tier minimum), never the provider's account, never a seat
//! already on the segment. A draw reads the tier's index, not every registered auditor. Weight: bonded stake,
//! doubled when the auditor declares the session's expertise domain. Seats are drawn
//! without replacement. To keep any single seat from seeing the whole trace, auditors that
//! already hold `segments - 1` segments of the session are set aside while enough others
//! remain.

use std::collections::BTreeMap;

use trust_protocol::{AccountId, Hash, tx::Tier};

use crate::state::State;

/// One sortition draw request.
pub(crate) struct Draw<'a> {
    pub seed: &'a Hash,
    pub session: &'a Hash,
    pub provider: &'a AccountId,
    pub segment: u16,
    pub round: u8,
    pub tier: Tier,
    pub domain: &'a str,
    pub seats: u8,
    /// Accounts already seated on this segment.
    pub exclude: &'a [AccountId],
    /// Segments of this session each account already holds, and the cap.
    pub held: &'a BTreeMap<AccountId, usize>,
    pub cap: Option<usize>,
}

fn eligible(st: &State, d: &Draw<'_>, respect_cap: bool) -> Vec<(AccountId, u128)> {
    st.eligible(d.tier)
        .iter()
        .filter(|id| {
            *id != d.provider
                && !d.exclude.contains(id)
                && (!respect_cap
                    || d.cap
                        .is_none_or(|cap| d.held.get(*id).copied().unwrap_or(0) < cap))
        })
        .filter_map(|id| {
            let a = st.auditors.get(id)?;
            let stake = st.accounts.get(id).map_or(0, |x| x.stake);
            let bonus = if !d.domain.is_empty() && a.expertise.iter().any(|e| e == d.domain) {
                2
            } else {
                1
            };
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
