//! Economics (paper Theorem 1) in fixed point: EMA reputation, the reward `R` per agreeing
//! counted vote, reputation-weighted slashing with deterministic draws, deactivation below
//! the stake minimum, and the rubber-stamp rule fed by honeypots.
//!
//! A honeypot's truth is the provider's word, so nothing here punishes a seat on it alone:
//! a honeypot whose judgements against it reach a quorum is not scored at all (the tally
//! decides that, and burns the provider's bond), and the rubber-stamp flag needs approved
//! known errors from several distinct providers that each paid fees
//! ([`crate::RubberStampRule::min_providers`], `min_provider_fees`), each miss backed by
//! the judgements of other seats of its round (`tally::recorded_on_evidence`).
//!
//! No session can take more than [`Params::max_session_loss`] of an auditor's stake, over
//! all its seats and rounds ([`slash_in_session`]); the rubber-stamp forfeit, which rests
//! on a record across many providers' sessions, is outside that bound.

use trust_protocol::{AccountId, Hash, Vote, tx::Difficulty, units::Ppm};

use crate::{
    events::Event,
    params::Params,
    registry,
    state::{SlashReason, State},
};

/// Eq. (3): `r' = (1 - gamma) r + gamma 1[agree]`, in ppm, rounded down.
pub fn update_reputation(gamma: Ppm, r: Ppm, agree: bool) -> Ppm {
    let g = u64::from(gamma.0.min(1_000_000));
    let r = u64::from(r.0.min(1_000_000));
    let kept = (1_000_000u64.saturating_sub(g)).saturating_mul(r) / 1_000_000;
    let gained = if agree { g } else { 0 };
    Ppm(u32::try_from(kept.saturating_add(gained).min(1_000_000)).unwrap_or(1_000_000))
}

/// Eq. (4): `p_slash(r) = p_min + (p_max - p_min)(1 - r)`, in ppm.
pub fn p_slash(params: &Params, r: Ppm) -> Ppm {
    let span = u64::from(params.p_max.0.saturating_sub(params.p_min.0));
    let miss = 1_000_000u64.saturating_sub(u64::from(r.0.min(1_000_000)));
    let extra = span.saturating_mul(miss) / 1_000_000;
    Ppm(params
        .p_min
        .0
        .saturating_add(u32::try_from(extra).unwrap_or(u32::MAX)))
}

/// The slash draw: `H(block hash, seat, session, segment, round) mod 10^6 < p_slash`.
pub fn slash_draw(
    block_hash: &Hash,
    seat: &AccountId,
    session: &Hash,
    segment: u16,
    round: u8,
) -> u32 {
    let h = Hash::of_parts(
        "trust/v1/slash-draw",
        &[
            block_hash.as_ref(),
            seat.as_ref(),
            session.as_ref(),
            &segment.to_le_bytes(),
            &[round],
        ],
    );
    u32::try_from(h.to_u64() % 1_000_000).unwrap_or(0)
}

/// Where a scored seat stands.
pub(crate) enum Score {
    /// Its judgement agrees with the verdict; `paid` when it was among the first `k`.
    Agree {
        /// Whether it earns the reward `R`.
        paid: bool,
    },
    /// It judged against the verdict, or did not show.
    Wrong(SlashReason),
    /// It judged against a revealed honeypot's truth that too few of its round backed for
    /// the provider's word to cost stake: its reputation falls as for a wrong vote, with
    /// no slash.
    Outvoted,
}

/// What a session's scoring draws on and keeps account of: the fee left in escrow, and
/// the stake each account has lost in the session so far.
pub(crate) struct Pot<'a> {
    /// Fee left to pay rewards from.
    pub escrow: &'a mut u64,
    /// Stake lost per account in this session ([`crate::Session::losses`]).
    pub losses: &'a mut std::collections::BTreeMap<AccountId, u64>,
}

/// Which seat is scored, and the block whose seed draws its slash.
pub(crate) struct SeatRef<'a> {
    /// The seed of the block scoring it.
    pub block_hash: &'a Hash,
    /// Its session.
    pub session: &'a Hash,
    /// Its segment.
    pub segment: u16,
    /// Its round.
    pub round: u8,
    /// Its account.
    pub seat: &'a AccountId,
}

/// Takes up to `amount` of `seat`'s stake for a slash in a session where it has lost
/// `losses[seat]` so far, never past [`Params::max_session_loss`] in all: one session can
/// cost an auditor at most that much, however many of its seats it holds. Returns what was
/// taken (burned).
pub(crate) fn slash_in_session(
    st: &mut State,
    losses: &mut std::collections::BTreeMap<AccountId, u64>,
    seat: &AccountId,
    amount: u64,
) -> u64 {
    let lost = losses.get(seat).copied().unwrap_or(0);
    let room = st.params.max_session_loss.saturating_sub(lost);
    let taken = registry::slash(st, seat, amount.min(room));
    if taken > 0 {
        losses.insert(*seat, lost.saturating_add(taken));
    }
    taken
}

/// Applies one scored seat: reward from the escrow or reputation loss plus the slash draw
/// (within the session's loss cap). Returns the reward paid.
pub(crate) fn score_seat(
    st: &mut State,
    pot: &mut Pot<'_>,
    at: &SeatRef<'_>,
    score: Score,
    events: &mut Vec<Event>,
) -> u64 {
    let params = st.params.clone();
    let seat = at.seat;
    let Some(au) = st.auditors.get_mut(seat) else {
        return 0;
    };
    let r = au.reputation;
    match score {
        Score::Agree { paid } => {
            // A flagged seat keeps zero reputation and earns nothing more, even for votes
            // cast in sessions that were already running when it was flagged.
            if !au.flagged {
                au.reputation = update_reputation(params.gamma, r, true);
            }
            au.agreed = au.agreed.saturating_add(1);
            let pay = if au.flagged || !paid {
                0
            } else {
                params.reward.min(*pot.escrow)
            };
            *pot.escrow = pot.escrow.saturating_sub(pay);
            au.earned = au.earned.saturating_add(pay);
            if pay > 0 {
                registry::credit(st, seat, pay);
                events.push(Event::Rewarded {
                    session: *at.session,
                    segment: at.segment,
                    seat: *seat,
                    amount: pay,
                });
            }
            pay
        }
        Score::Outvoted => {
            au.reputation = update_reputation(params.gamma, r, false);
            au.disagreed = au.disagreed.saturating_add(1);
            0
        }
        Score::Wrong(reason) => {
            au.reputation = update_reputation(params.gamma, r, false);
            au.disagreed = au.disagreed.saturating_add(1);
            let tier = au.tier;
            let draw = slash_draw(at.block_hash, seat, at.session, at.segment, at.round);
            if draw < p_slash(&params, r).0 {
                let amount = slash_in_session(st, pot.losses, seat, params.penalty);
                if amount > 0 {
                    events.push(Event::Slashed {
                        session: *at.session,
                        seat: *seat,
                        amount,
                        reason,
                    });
                }
                deactivate_if_under(st, seat, params.min_stake(tier), events);
            }
            0
        }
    }
}

/// Slashes a seat that voted with the majority of a round whose verdict an appeal
/// overturned: one penalty `P` from its stake (then its unbonding), within the session's
/// loss cap, with no draw, and its reputation falls as for a wrong vote. Returns the
/// amount taken (burned).
pub(crate) fn slash_incoherent(
    st: &mut State,
    losses: &mut std::collections::BTreeMap<AccountId, u64>,
    session: &Hash,
    seat: &AccountId,
    events: &mut Vec<Event>,
) -> u64 {
    let (gamma, penalty) = (st.params.gamma, st.params.penalty);
    let Some(au) = st.auditors.get_mut(seat) else {
        return 0;
    };
    au.reputation = update_reputation(gamma, au.reputation, false);
    au.disagreed = au.disagreed.saturating_add(1);
    let min = st.params.min_stake(au.tier);
    let amount = slash_in_session(st, losses, seat, penalty);
    if amount > 0 {
        events.push(Event::Slashed {
            session: *session,
            seat: *seat,
            amount,
            reason: SlashReason::Incoherent,
        });
    }
    deactivate_if_under(st, seat, min, events);
    amount
}

/// Pays an appeal seat `amount` (its share of a bond or of slashes): credited and counted
/// as earned. A flagged seat earns nothing; returns what was paid.
pub(crate) fn pay_seat(
    st: &mut State,
    session: &Hash,
    segment: u16,
    seat: &AccountId,
    amount: u64,
    events: &mut Vec<Event>,
) -> u64 {
    let Some(au) = st.auditors.get_mut(seat) else {
        return 0;
    };
    if au.flagged || amount == 0 {
        return 0;
    }
    au.earned = au.earned.saturating_add(amount);
    registry::credit(st, seat, amount);
    events.push(Event::Rewarded {
        session: *session,
        segment,
        seat: *seat,
        amount,
    });
    amount
}

fn deactivate_if_under(st: &mut State, seat: &AccountId, min: u64, events: &mut Vec<Event>) {
    let stake = st.accounts.get(seat).map_or(0, |a| a.stake);
    if let Some(au) = st.auditors.get_mut(seat)
        && au.active
        && stake < min
    {
        au.active = false;
        events.push(Event::AuditorDeactivated {
            account: *seat,
            reason: format!("stake {stake} fell below the tier minimum {min}"),
        });
    }
    registry::reindex(st, seat);
}

/// Records a vote on a revealed honeypot of `provider` (see [`crate::HoneypotStats`] for
/// what an abstention counts as). A missed known error names its provider towards the
/// rubber-stamp rule's `min_providers` only when `provider_counts`: the provider has paid
/// at least [`crate::RubberStampRule::min_provider_fees`] to seats before, and other
/// seats' judgements back its truth (the tally's evidence rule).
pub(crate) fn record_honeypot(
    st: &mut State,
    seat: &AccountId,
    provider: &AccountId,
    provider_counts: bool,
    vote: Vote,
    truth: Vote,
    d: Difficulty,
) {
    let Some(au) = st.auditors.get_mut(seat) else {
        return;
    };
    let h = &mut au.honeypots;
    let i = d.index();
    if truth.is_valid() {
        // A known-correct honeypot says nothing about rubber-stamping; an abstention on it
        // says nothing at all.
        if !vote.is_abstain() {
            h.correct_seen = h.correct_seen.saturating_add(1);
            if vote.is_valid() {
                h.correct_approved = h.correct_approved.saturating_add(1);
            }
        }
        return;
    }
    if let Some(x) = h.errors_seen.get_mut(i) {
        *x = x.saturating_add(1);
    }
    if vote.is_abstain() {
        if let Some(x) = h.errors_abstained.get_mut(i) {
            *x = x.saturating_add(1);
        }
        return;
    }
    if vote.is_valid() {
        if let Some(x) = h.errors_approved.get_mut(i) {
            *x = x.saturating_add(1);
        }
        let cap = usize::try_from(crate::params::MAX_MIN_PROVIDERS).unwrap_or(usize::MAX);
        if provider_counts && !h.miss_providers.contains(provider) && h.miss_providers.len() < cap {
            h.miss_providers.push(*provider);
        }
    }
}

/// Whether a seat's honeypot record matches the rubber-stamp rule ([`crate::params::RubberStampRule`]).
pub fn is_rubber_stamper(params: &Params, stats: &crate::state::HoneypotStats) -> bool {
    let rule = &params.rubber_stamp;
    if stats.errors_total() < rule.min_samples {
        return false;
    }
    let providers = u32::try_from(stats.miss_providers.len()).unwrap_or(u32::MAX);
    if providers < rule.min_providers {
        return false;
    }
    let total_ok = stats
        .total_error_approval()
        .is_some_and(|p| p >= rule.approval);
    let obvious_ok = stats
        .error_approval(Difficulty::Obvious)
        .is_some_and(|p| p >= rule.approval);
    total_ok && obvious_ok
}

/// Applies the rubber-stamp rule to a seat: a flagged seat forfeits everything it earned
/// plus one penalty `P` from its stake, loses its reputation (set to zero: the network now
/// knows it does not judge), and is deactivated for good.
pub(crate) fn check_rubber_stamp(
    st: &mut State,
    session: &Hash,
    seat: &AccountId,
    events: &mut Vec<Event>,
) {
    let params = st.params.clone();
    let Some(au) = st.auditors.get(seat) else {
        return;
    };
    if au.flagged || !is_rubber_stamper(&params, &au.honeypots) {
        return;
    }
    let forfeit = au.earned.saturating_add(params.penalty);
    let amount = registry::slash(st, seat, forfeit);
    if let Some(au) = st.auditors.get_mut(seat) {
        au.flagged = true;
        au.active = false;
        au.reputation = Ppm::ZERO;
    }
    registry::reindex(st, seat);
    events.push(Event::Slashed {
        session: *session,
        seat: *seat,
        amount,
        reason: SlashReason::RubberStamp,
    });
    events.push(Event::AuditorDeactivated {
        account: *seat,
        reason: "flagged as a rubber-stamper by its honeypot record".into(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reputation_ema_matches_eq_3() {
        let g = Ppm(100_000);
        assert_eq!(update_reputation(g, Ppm(500_000), true), Ppm(550_000));
        assert_eq!(update_reputation(g, Ppm(500_000), false), Ppm(450_000));
        assert_eq!(update_reputation(g, Ppm(1_000_000), true), Ppm(1_000_000));
        assert_eq!(update_reputation(g, Ppm(0), false), Ppm(0));
    }

    #[test]
    fn slash_probability_matches_eq_4() {
        let p = Params::paper_example();
        assert_eq!(p_slash(&p, Ppm(1_000_000)), Ppm(200_000));
        assert_eq!(p_slash(&p, Ppm(0)), Ppm(500_000));
        assert_eq!(p_slash(&p, Ppm(500_000)), Ppm(350_000));
        let p = Params::default();
        assert_eq!(p_slash(&p, Ppm(1_000_000)), Ppm(710_000));
        assert_eq!(p_slash(&p, Ppm(0)), Ppm(730_000));
        assert_eq!(p_slash(&p, Ppm(672_060)), Ppm(716_558));
    }

    #[test]
    fn slash_draws_are_roughly_uniform() {
        let mut hits = 0;
        let seat = trust_protocol::Keypair::from_label("s").public();
        for i in 0..10_000u32 {
            let b = Hash::sha256(&i.to_le_bytes());
            if slash_draw(&b, &seat, &Hash::ZERO, 0, 0) < 350_000 {
                hits += 1;
            }
        }
        assert!((3_200..3_800).contains(&hits), "{hits}");
    }
}
