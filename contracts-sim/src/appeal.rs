//! Appeals: any account may appeal decided segments of a session within its appeal
//! window; fresh seats judge them again and their verdict replaces the old one.
//!
//! # Who, when, and what is refused
//!
//! `Call::Appeal { session, segments }` is accepted from any account while the session is
//! decided (it has an [`Outcome`]) and not final, up to and including height
//! [`crate::AppealRecord::until`]: the decision (or the decision of its last appeal round) plus
//! [`crate::Params::appeal_window`], and never past [`crate::Params::appeal_horizon`] after
//! the first decision. It is refused, changing nothing and charging nothing, when
//! - the session is unknown or failed ([`TxError::UnknownSession`]), still live
//!   ([`TxError::NotDecided`]), or its window closed ([`TxError::AppealWindowClosed`],
//!   naming the last height that accepted one);
//! - a segment is out of range, a revealed honeypot (its truth is the provider's word, not
//!   a verdict), or **Undecided**: an appeal overturns a verdict and slashes the majority
//!   that reached it, and an Undecided segment has neither. (Getting an Undecided segment
//!   judged is a new audit, not an appeal: the provider opens a session for it.) The
//!   verdict appealed is the segment's *own* verdict (after earlier appeal rounds), so a
//!   segment Propagated from an error upstream but Valid of its own may be appealed;
//! - a segment's verdict was upheld [`crate::Params::max_appeal_rounds`] times already
//!   (overturned, starved or undecided rounds do not count: the side an overturn went
//!   against may appeal it, before a larger panel);
//! - a segment cannot be staffed now (checked when the round opens): fresh seats are
//!   needed, `max(2k + 1, 2h + 1)` with `k` the session's `k` for the tier and `h` the
//!   judgements that reached the verdict ([`AppealTarget::held_by`]), capped at
//!   `MAX_SEATS`, eligible as for any draw (the tier's index, the session's exposure
//!   budget), excluding everyone who judged that segment in any round (committed and did
//!   not abstain) and everyone backing its appeal, in the segment's tier or, when it has too few, in a higher tier the session's
//!   terms allow (next one up first);
//! - the appellant's balance is below the bonds it owes, or it already backs the waiting
//!   appeal of a segment ([`TxError::AppealAlreadyFiled`]).
//!
//! # Waiting filings
//!
//! While a round is being judged, filings wait for the next round in
//! [`Session::queued`]: one entry per segment, with every account that filed against it
//! (its [`Backer`]s). The first [`crate::MAX_BACKERS`] of a segment escrow
//! `appeal_bond`; later ones are accepted, hold nothing and are not recorded (the segment
//! is heard all the same), so the queue is bounded by the session's segments and nobody is
//! crowded out. When the round ends, every waiting segment is heard together in the next
//! round; a segment whose verdict that round turned to the other side, or that can no
//! longer be heard, has its backers refunded ([`Event::AppealCancelled`]).
//!
//! # The round
//!
//! An accepted appeal escrows the bonds ([`OpenAppeal::bond`], counted in the supply),
//! moves the session from [`State::appealable`] back into [`State::sessions`] in
//! `Phase::Assigning` with [`Session::appeal`] set, and marks [`crate::AppealRecord::open`]. At
//! the start of the next block its seats are drawn, from the state its parent left and
//! seeded by that block's seed as a session's first seats are (so neither the appellant
//! nor that block's proposer, by choosing its transactions, can pick its seats),
//! and the session runs the ordinary live machinery in round `2 + a` for its appeal `a`
//! (rounds 0 and 1 are the first round and its escalation): `SeatAssigned` events, key
//! delivery by the provider, the starved-seat rule, commit and reveal windows from the
//! session's terms, early close. If a segment can no longer be staffed at the draw
//! (auditors left in between), the round is cancelled: the bonds go back, the session
//! is appealable again until its old `until` ([`Event::AppealCancelled`]).
//!
//! When the round's reveal window closes, each appealed segment is decided with the
//! ordinary quorum over the round's judgements. A decided verdict on the same side
//! replaces the segment's own verdict (Upheld); one on the other side replaces it only
//! with more judgements than [`AppealTarget::held_by`] (Overturned; short of that the
//! round counts as Undecided). An Undecided round leaves the previous verdict standing.
//! The outcome is then recomputed through the tally's own functions (`tally::verdicts`:
//! propagation, trace verdict, coverage, failure bound), the round is recorded
//! ([`AppealRound`]) and the session goes back to `appealable` with a fresh window from
//! this decision. The session is **final** at the end of the block at `until` when no
//! appeal is open ([`Event::SessionFinal`], [`crate::AppealRecord::final_at`]); then its
//! live copy is dropped and only the outcome remains.
//!
//! # Economics (integer, supply conserved)
//!
//! Per appealed segment, with `B` the bonds of its backers:
//! - **Overturned**: the backers get their bonds back at once. Seats of earlier rounds
//!   that judged the segment the way it is now decided get back the wrong-vote slash they
//!   took for it ([`Event::SlashRestored`], whole: it is still burned). The incoherence
//!   slashes are owed, not taken ([`crate::AppealedSegment::pending`]): when the session
//!   is final ([`settle_final`]), if the segment's own verdict is still this round's,
//!   every seat of the round that had decided it and judged on the other side is slashed
//!   one penalty `P` (deterministic, [`SlashReason::Incoherent`], within the session's
//!   loss cap), reputation down; of those slashes `S` the bonded backers share
//!   `min(appeal_reward, S)` and the overturning round's agreeing seats the rest; the
//!   integer remainder stays burned. An overturn a later round took back slashes nobody,
//!   so a panel an appellant drew by luck takes no stake while an appeal can still answer
//!   it; nor does an overturn decided less than a whole `appeal_window` before the
//!   session's horizon (nobody could have answered it), nor one short of a keyed quorum
//!   or beside seats the provider starved.
//! - **Upheld** (same side; the appeal's verdict still replaces the old one, which may
//!   change Invalid to Ungrounded): `B` is split equally among the appeal seats that
//!   agree with the verdict; the remainder is burned.
//! - **Undecided**: `B` is split equally among the appeal seats that judged (no side
//!   won); if none did, the bonds go back to the backers (but the provider's own).
//! - **Starved** (the provider did not key enough seats for a quorum): the provider pays
//!   each starved seat `R`; a Valid verdict falls to Undecided, and the wrong-vote slashes
//!   of the seats that had judged against it go back. A third party's bond comes back if
//!   it had standing (it sat in the round that reached the appealed verdict and did not
//!   judge on its side: outvoted, abstaining or starved); anyone else's is forfeit: it pays the provider
//!   back what the starved seats cost it and the rest burns (so a stranger cannot turn an
//!   offline provider's PASS Inconclusive, or make it pay for seats, for free).
//!
//! Appeal seats are otherwise scored as in any round: agreeing seats gain reputation, a
//! judgement against the appeal's verdict loses reputation and draws the ordinary
//! probabilistic slash, a no-show too. A seat the provider did not give its keys in time is
//! neither scored nor paid. A flagged seat's share burns.
//!
//! Rounds are `u8`: a session accepts appeals while `2 + appeals` fits one.

use trust_protocol::{
    AccountId, Hash, Vote,
    tx::{MAX_SEATS, QuorumParams, SessionTerms, Tier},
    units::Amount,
};

use std::collections::BTreeMap;

use crate::{
    assign::{self, Draw, exposure_cap, seat_picked},
    block::BlockCtx,
    econ::{self, Score},
    error::TxError,
    events::Event,
    registry,
    state::{
        AppealResult, AppealRound, AppealTarget, AppealedSegment, Backer, LocalVerdict,
        MAX_BACKERS, OpenAppeal, Outcome, PendingIncoherence, Phase, QueuedSegment, SeatSlash,
        SegmentState, Session, SlashReason, State, TraceVerdict,
    },
    tally,
};

/// The round of a session's first appeal; its appeal `a` votes in round `APPEAL_ROUND0 + a`.
pub const APPEAL_ROUND0: u8 = 2;

/// Each segment's own verdict now and the round that decided it: the first round's (0 or
/// its escalation 1), replaced by every later appeal round that decided the segment, and
/// by Undecided where a Valid verdict's appeal round was starved of keys.
pub(crate) fn current_verdicts(s: &Session, o: &Outcome) -> Vec<(LocalVerdict, u8)> {
    let mut local = tally::deciding_verdicts(s);
    for r in &o.appeals.rounds {
        for a in r.segments.iter().filter(|a| {
            a.verdict != LocalVerdict::Undecided
                || (a.result == AppealResult::Starved && a.previous == LocalVerdict::Valid)
        }) {
            if let Some(x) = local.get_mut(usize::from(a.segment)) {
                *x = (a.verdict, r.round);
            }
        }
    }
    local
}

/// Whether a segment's verdict now is Undecided because an appeal round of its Valid
/// verdict was starved of keys ([`current_verdicts`] sets it so, from an appeal round;
/// an appeal round that decides nothing otherwise leaves the earlier verdict in place).
fn withheld_from_appeal(local: &[(LocalVerdict, u8)]) -> bool {
    local
        .iter()
        .any(|(v, round)| *v == LocalVerdict::Undecided && *round >= APPEAL_ROUND0)
}

/// Appeal rounds that used up one of segment `segment`'s rounds ([`AppealResult::counts`]):
/// only rounds that upheld its verdict do.
fn rounds_of(o: &Outcome, segment: u16) -> u8 {
    let n = o
        .appeals
        .rounds
        .iter()
        .filter(|r| {
            r.segments
                .iter()
                .any(|a| a.segment == segment && a.result.counts())
        })
        .count();
    u8::try_from(n).unwrap_or(u8::MAX)
}

/// Seats of an appeal in `tier` of a verdict `held_by` judgements reached: `2k + 1` for
/// the session's `k` there, and at least `2 held_by + 1`, so that the appeal can only
/// overturn it with more judgements than reached it (capped at `MAX_SEATS`).
fn appeal_seats(s: &Session, tier: Tier, held_by: u16) -> u8 {
    seats_of_an_appeal(s.manifest.quorum.k(tier), held_by)
}

/// Fresh seats an appeal draws in a tier whose `k` is `k`, of a verdict `held_by`
/// judgements reached: `max(2k + 1, 2 held_by + 1)`, capped at `MAX_SEATS`. None of them
/// judged the segment before, nor backs the appeal; what `submit --plan` and `appeal`
/// tell a provider before it pays.
pub fn seats_of_an_appeal(k: u8, held_by: u16) -> u8 {
    let by_k = u16::from(k).saturating_mul(2).saturating_add(1);
    let by_verdict = held_by.saturating_mul(2).saturating_add(1);
    u8::try_from(by_k.max(by_verdict))
        .unwrap_or(u8::MAX)
        .min(MAX_SEATS)
}

/// Where an appeal of segment `i` of a verdict `held_by` judgements reached may draw, in
/// order: its tier, then each higher tier the session's terms allow, with the seats each
/// needs ([`appeal_options`]).
fn options(s: &Session, i: usize, held_by: u16) -> Vec<(Tier, u8)> {
    let Some(g) = s.segments.get(i) else {
        return Vec::new();
    };
    appeal_options(&s.manifest.terms, &s.manifest.quorum, g.tier, held_by)
}

/// Where an appeal of a verdict `held_by` judgements reached on a segment judged in `tier`
/// of a session under `terms` and `quorum` may draw, in order: `tier`, then each higher
/// tier the terms allow, with the fresh seats each needs ([`seats_of_an_appeal`] at the
/// session's `k` there). The one rule an appeal is staffed by, and the one
/// [`crate::check_terms`] weighs before it admits racing seats.
pub(crate) fn appeal_options(
    terms: &SessionTerms,
    quorum: &QuorumParams,
    tier: Tier,
    held_by: u16,
) -> Vec<(Tier, u8)> {
    std::iter::once(tier)
        .chain(assign::tiers_above(tier).iter().copied())
        .filter(|t| terms.allows(*t))
        .map(|t| (t, seats_of_an_appeal(quorum.k(t), held_by)))
        .collect()
}

/// Everyone who committed on segment `i` in any round and did not reveal an abstention
/// (it judged, or hid its judgement as a no-show), and whoever backs its appeal: none of them
/// sits on it. A seat that abstained, was starved or never answered judged nothing, and
/// may be drawn again: otherwise an adversary's appeals that nobody could judge (its
/// keys withheld, its seats abstaining) would use up a tier's fresh auditors and leave an
/// honest seat's appeal with nobody to hear it.
fn excluded(s: &Session, i: usize, backers: &[Backer]) -> Vec<AccountId> {
    s.segments
        .get(i)
        .into_iter()
        .flat_map(|g| {
            g.seats
                .iter()
                .filter(|x| x.commitment.is_some() && !x.vote.is_some_and(|v| v.is_abstain()))
                .map(|x| x.account)
        })
        .chain(backers.iter().map(|b| b.appellant))
        .collect()
}

/// Tries, in order, the tiers that may hear the appeal `t` of session `id` (`s`) in
/// `round` ([`options`]): for each, the draw of its seats seeded by `seed`, from the
/// auditors neither seated on the segment nor backing its appeal, within the session's
/// exposure budget as `covered` stands. Returns what `f` makes of the first draw it
/// accepts. [`target`] counts the eligible with it before it admits an appeal and
/// [`draw_seats`] draws with it, so the two agree on who may sit.
fn first_tier<T>(
    s: &Session,
    id: &Hash,
    seed: &Hash,
    t: &AppealTarget,
    round: u8,
    covered: &assign::Coverage,
    mut f: impl FnMut(&Draw<'_>) -> Option<T>,
) -> Option<T> {
    let i = usize::from(t.segment);
    let budget_cap = exposure_cap(s);
    let held = Default::default();
    let exclude = excluded(s, i, &t.backers);
    let keys = assign::keys_of(s, i);
    options(s, i, t.held_by)
        .into_iter()
        .find_map(|(tier, seats)| {
            f(&Draw {
                seed,
                session: id,
                provider: &s.provider,
                segment: t.segment,
                round,
                tier,
                // Appeal seats come from the whole tier: a domain the provider chose never
                // narrows who judges its appeal.
                domain: "",
                domain_required: false,
                seats,
                exclude: &exclude,
                held: &held,
                cap: None,
                budget: budget_cap.map(|cap| assign::Budget {
                    covered,
                    keys: &keys,
                    cap,
                }),
            })
        })
}

/// Why a session that is not appealable now refuses an appeal.
fn not_appealable(st: &State, session: Hash) -> TxError {
    if let Some(s) = st.sessions.get(&session) {
        return match &s.appeal {
            Some(a) => TxError::AppealOpen {
                session,
                round: a.round,
            },
            None => TxError::NotDecided(session),
        };
    }
    match st.outcomes.get(&session) {
        Some(o) => TxError::AppealWindowClosed {
            session,
            closed_at: o.appeals.until,
        },
        None => TxError::UnknownSession(session),
    }
}

/// The last height at which an appeal of a session decided at `decided_at` may be filed,
/// however many rounds ran: [`crate::Params::appeal_horizon`] after its first decision.
fn horizon(st: &State, o: &Outcome) -> u64 {
    o.decided_at.saturating_add(st.params.appeal_horizon)
}

/// The verdict of segment `segment` of session `s` (decided as `o`) an appeal would be
/// heard against, if it may be appealed now at all: it must exist, not be a revealed
/// honeypot, have a verdict, and have rounds left. Returns the target without backers.
fn appealable_segment(
    st: &State,
    s: &Session,
    o: &Outcome,
    current: &[(LocalVerdict, u8)],
    segment: u16,
) -> Result<AppealTarget, TxError> {
    let i = usize::from(segment);
    let g = s.segments.get(i).ok_or(TxError::UnknownSegment(segment))?;
    if g.honeypot.is_some() {
        return Err(TxError::AppealHoneypot(segment));
    }
    let (previous, decided_in) = current
        .get(i)
        .copied()
        .unwrap_or((LocalVerdict::Undecided, 0));
    let Some(side) = previous.as_vote() else {
        return Err(TxError::AppealUndecided(segment));
    };
    let rounds = rounds_of(o, segment);
    if rounds >= st.params.max_appeal_rounds {
        return Err(TxError::AppealRoundsExhausted { segment, rounds });
    }
    let c = tally::round_counts(g, decided_in);
    let held_by = if side.is_valid() {
        c.valid
    } else {
        c.invalid.saturating_add(c.ungrounded)
    };
    Ok(AppealTarget {
        segment,
        previous,
        decided_in,
        held_by,
        tier: g.tier,
        k: g.k,
        backers: Vec::new(),
    })
}

/// The target of an appeal of `segment` of session `id` (`s`, decided as `o`) backed by
/// `backers` and judged in `round`, or why it cannot be heard: [`appealable_segment`],
/// and enough fresh auditors to staff it now.
#[allow(clippy::too_many_arguments)]
fn target(
    st: &State,
    id: Hash,
    s: &Session,
    o: &Outcome,
    current: &[(LocalVerdict, u8)],
    covered: &assign::Coverage,
    segment: u16,
    backers: Vec<Backer>,
    round: u8,
) -> Result<AppealTarget, TxError> {
    let mut t = appealable_segment(st, s, o, current, segment)?;
    t.backers = backers;
    let mut first = None;
    let staffed = first_tier(s, &id, &Hash::ZERO, &t, round, covered, |d| {
        let eligible = assign::eligible_count(st, d);
        if eligible >= usize::from(d.seats) {
            return Some(());
        }
        first.get_or_insert((d.tier, d.seats, eligible));
        None
    })
    .is_some();
    if !staffed {
        let (tier, needed, eligible) =
            first.unwrap_or((t.tier, appeal_seats(s, t.tier, t.held_by), 0));
        return Err(TxError::AppealUnstaffed {
            segment,
            tier,
            needed,
            eligible,
        });
    }
    Ok(t)
}

/// The round the next appeal of a session decided as `o` is judged in.
fn next_round(o: &Outcome) -> Result<u8, TxError> {
    u8::try_from(o.appeals.rounds.len())
        .ok()
        .and_then(|a| a.checked_add(APPEAL_ROUND0))
        .ok_or(TxError::Overflow)
}

/// Opens an appeal of `segments` of `session` by `appellant` at `height` (see the module
/// docs for what is checked), or queues its segments for the round after the one being
/// judged. Changes nothing when it refuses.
pub(crate) fn appeal(
    st: &mut State,
    appellant: AccountId,
    session: Hash,
    segments: &[u16],
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let Some(o) = st.outcomes.get(&session) else {
        return Err(not_appealable(st, session));
    };
    let last = horizon(st, o);
    if o.appeals.final_at.is_some() || height > last {
        return Err(TxError::AppealWindowClosed {
            session,
            closed_at: o.appeals.until.min(last),
        });
    }
    let bond_each = st.params.appeal_bond;
    let have = st.accounts.get(&appellant).map_or(0, |a| a.balance);

    // A round is being judged: the segments wait for the next round, each once with all
    // its backers, so nobody is refused because someone else appealed first.
    if let Some(s) = st.sessions.get(&session)
        && s.appeal.is_some()
    {
        let current = current_verdicts(s, o);
        let mut joins = Vec::with_capacity(segments.len());
        let mut bond: Amount = 0;
        for &segment in segments {
            let t = appealable_segment(st, s, o, &current, segment)?;
            let waiting = s.queued.iter().position(|q| q.segment == segment);
            let backers = waiting.map_or(0, |w| s.queued.get(w).map_or(0, |q| q.backers.len()));
            if waiting
                .and_then(|w| s.queued.get(w))
                .is_some_and(|q| q.backers.iter().any(|b| b.appellant == appellant))
            {
                return Err(TxError::AppealAlreadyFiled(segment));
            }
            let pays = if backers < MAX_BACKERS { bond_each } else { 0 };
            bond = bond.checked_add(pays).ok_or(TxError::Overflow)?;
            joins.push((
                segment,
                t.previous.as_vote().is_some_and(|v| v.is_valid()),
                pays,
            ));
        }
        let left = have
            .checked_sub(bond)
            .ok_or(TxError::InsufficientBalance { have, need: bond })?;
        let position = u16::try_from(s.queued.len()).unwrap_or(u16::MAX);
        st.accounts.entry(appellant).or_default().balance = left;
        if let Some(s) = st.sessions.get_mut(&session) {
            for (segment, against_valid, pays) in joins {
                let backer = Backer {
                    appellant,
                    bond: pays,
                };
                match s.queued.iter_mut().find(|q| q.segment == segment) {
                    // Past MAX_BACKERS the filing is heard with the others and holds
                    // nothing: the queue never grows with the number of filers.
                    Some(_) if pays == 0 => {}
                    Some(q) => q.backers.push(backer),
                    None => s.queued.push(QueuedSegment {
                        segment,
                        against_valid,
                        filed_at: height,
                        backers: vec![backer],
                    }),
                }
            }
        }
        events.push(Event::AppealQueued {
            session,
            appellant,
            segments: segments.to_vec(),
            position,
            bond,
        });
        return Ok(());
    }

    let Some(s) = st.appealable.get(&session) else {
        return Err(not_appealable(st, session));
    };
    if height > o.appeals.until {
        return Err(TxError::AppealWindowClosed {
            session,
            closed_at: o.appeals.until,
        });
    }
    let n = u64::try_from(segments.len()).map_err(|_| TxError::Overflow)?;
    let bond = bond_each.checked_mul(n).ok_or(TxError::Overflow)?;
    let left = have
        .checked_sub(bond)
        .ok_or(TxError::InsufficientBalance { have, need: bond })?;
    let round = next_round(o)?;
    let current = current_verdicts(s, o);
    let covered = assign::coverage(s);
    let backers = vec![Backer {
        appellant,
        bond: bond_each,
    }];
    let targets = segments
        .iter()
        .map(|&g| {
            target(
                st,
                session,
                s,
                o,
                &current,
                &covered,
                g,
                backers.clone(),
                round,
            )
        })
        .collect::<Result<Vec<_>, _>>()?;

    // Every check passed: nothing below refuses.
    let Some(mut s) = st.appealable.remove(&session) else {
        return Err(TxError::UnknownSession(session));
    };
    st.accounts.entry(appellant).or_default().balance = left;
    s.phase = Phase::Assigning;
    s.appeal = Some(OpenAppeal {
        appellant,
        round,
        opened_at: height,
        bond,
        segments: targets,
    });
    st.sessions.insert(session, s);
    if let Some(o) = st.outcomes.get_mut(&session) {
        o.appeals.open = Some(round);
    }
    events.push(Event::AppealOpened {
        session,
        appellant,
        segments: segments.to_vec(),
        round,
        bond,
    });
    Ok(())
}

/// Gives every backer of a segment that will not be heard its bond back.
fn refund_backers(
    st: &mut State,
    id: &Hash,
    backers: &[Backer],
    reason: &str,
    ev: &mut Vec<Event>,
) {
    for b in backers {
        registry::credit(st, &b.appellant, b.bond);
        ev.push(Event::AppealCancelled {
            session: *id,
            appellant: b.appellant,
            refunded: b.bond,
            reason: reason.to_string(),
        });
    }
}

/// The distinct backers of `targets`, in filing order, each with the segments it backs
/// and the bond it holds on them.
fn appellants(targets: &[AppealTarget]) -> Vec<(AccountId, Vec<u16>, Amount)> {
    let mut out: Vec<(AccountId, Vec<u16>, Amount)> = Vec::new();
    for t in targets {
        for b in &t.backers {
            match out.iter_mut().find(|(a, _, _)| *a == b.appellant) {
                Some((_, segments, bond)) => {
                    segments.push(t.segment);
                    *bond = bond.saturating_add(b.bond);
                }
                None => out.push((b.appellant, vec![t.segment], b.bond)),
            }
        }
    }
    out
}

/// After a round of session `id` ended (decided or cancelled), opens the next round with
/// every queued segment that can still be heard, its seats drawn at the end of the next
/// block; the backers of a segment that cannot (its verdict turned over by the round
/// before, now undecided, out of rounds or unstaffable) get their bonds back. Returns the
/// session to put back: live when a round opened, otherwise appealable (the caller
/// decides where it goes from `s.appeal`).
fn open_queued(
    st: &mut State,
    id: &Hash,
    mut s: Session,
    height: u64,
    ev: &mut Vec<Event>,
) -> Session {
    let queued = std::mem::take(&mut s.queued);
    if queued.is_empty() {
        return s;
    }
    let Some(o) = st.outcomes.get(id).cloned() else {
        for q in &queued {
            refund_backers(st, id, &q.backers, "the session has no outcome", ev);
        }
        return s;
    };
    let round = match next_round(&o) {
        Ok(r) => r,
        Err(e) => {
            for q in &queued {
                refund_backers(st, id, &q.backers, &e.to_string(), ev);
            }
            return s;
        }
    };
    let current = current_verdicts(&s, &o);
    let covered = assign::coverage(&s);
    let mut targets = Vec::with_capacity(queued.len());
    for q in queued {
        let side_now = current
            .get(usize::from(q.segment))
            .and_then(|(v, _)| v.as_vote())
            .map(|v| v.is_valid());
        if side_now.is_some_and(|valid| valid != q.against_valid) {
            let reason = format!(
                "segment {}: the round before turned over the verdict this appeal was against",
                q.segment
            );
            refund_backers(st, id, &q.backers, &reason, ev);
            continue;
        }
        let backers = q.backers.clone();
        match target(
            st, *id, &s, &o, &current, &covered, q.segment, q.backers, round,
        ) {
            Ok(t) => targets.push(t),
            Err(e) => refund_backers(st, id, &backers, &e.to_string(), ev),
        }
    }
    if targets.is_empty() {
        return s;
    }
    let bond = targets
        .iter()
        .flat_map(|t| t.backers.iter())
        .fold(0u64, |t, b| t.saturating_add(b.bond));
    let first = targets
        .first()
        .and_then(|t| t.backers.first())
        .map(|b| b.appellant)
        .unwrap_or(s.provider);
    let who = appellants(&targets);
    s.phase = Phase::Assigning;
    s.appeal = Some(OpenAppeal {
        appellant: first,
        round,
        opened_at: height,
        bond,
        segments: targets,
    });
    if let Some(o) = st.outcomes.get_mut(id) {
        o.appeals.open = Some(round);
    }
    for (appellant, segments, bond) in who {
        ev.push(Event::AppealOpened {
            session: *id,
            appellant,
            segments,
            round,
            bond,
        });
    }
    s
}

/// Puts `s` back after a round ended: live when queued segments opened a round,
/// appealable otherwise.
fn put_back(st: &mut State, id: &Hash, s: Session, height: u64, ev: &mut Vec<Event>) {
    let s = open_queued(st, id, s, height, ev);
    if s.appeal.is_some() {
        st.sessions.insert(*id, s);
    } else {
        st.appealable.insert(*id, s);
    }
}

/// Whether an open appeal's seats are due: at the start of a block after the appeal's,
/// from the state its parent left.
pub(crate) fn draw_due(s: &Session, height: u64) -> bool {
    s.appeal.as_ref().is_some_and(|a| a.opened_at < height)
}

/// Draws the seats of `s`'s open appeal, seeded by the block's hash; returns the round, or
/// why a segment could not be staffed (then nothing was drawn).
pub(crate) fn draw_seats(
    st: &State,
    ctx: &BlockCtx,
    id: &Hash,
    s: &mut Session,
    ev: &mut Vec<Event>,
) -> Result<u8, String> {
    let Some(a) = s.appeal.clone() else {
        return Err("no appeal is open".into());
    };
    let mut covered = assign::coverage(s);
    let mut drawn = Vec::with_capacity(a.segments.len());
    for t in &a.segments {
        let i = usize::from(t.segment);
        let chosen = first_tier(s, id, &ctx.block_hash, t, a.round, &covered, |d| {
            assign::draw(st, d).map(|picked| (d.tier, d.seats, picked))
        });
        let Some((tier, seats, picked)) = chosen else {
            return Err(format!(
                "segment {}: too few fresh auditors in its tier or any higher tier allowed",
                t.segment
            ));
        };
        let keys = assign::keys_of(s, i);
        for x in &picked {
            assign::cover(&mut covered, *x, &keys);
        }
        drawn.push((i, tier, seats, picked));
    }
    for (i, tier, seats, picked) in drawn {
        let Some(g) = s.segments.get_mut(i) else {
            continue;
        };
        g.tier = tier;
        g.k = seats;
        let segment = u16::try_from(i).unwrap_or(u16::MAX);
        seat_picked(id, segment, a.round, tier, &mut g.seats, picked, ev);
    }
    Ok(a.round)
}

/// Cancels the open appeal of `s` (its seats could not be drawn): every bond goes back
/// and the session is appealable again.
pub(crate) fn cancel(
    st: &mut State,
    id: &Hash,
    mut s: Session,
    reason: String,
    height: u64,
    ev: &mut Vec<Event>,
) {
    if let Some(a) = s.appeal.take() {
        for (appellant, _, bond) in appellants(&a.segments) {
            registry::credit(st, &appellant, bond);
            ev.push(Event::AppealCancelled {
                session: *id,
                appellant,
                refunded: bond,
                reason: reason.clone(),
            });
        }
    }
    if let Some(o) = st.outcomes.get_mut(id) {
        o.appeals.open = None;
    }
    put_back(st, id, s, height, ev);
}

/// The accounts an appeal round's end (decided or cancelled) may change: the backers,
/// the provider, the backers of queued segments and every seat, of any round, of the
/// appealed segments.
pub(crate) fn decision_accounts(s: &Session) -> Vec<AccountId> {
    let Some(a) = &s.appeal else {
        return Vec::new();
    };
    // The provider pays seats it starved; backers of queued segments may be refunded
    // when their segment can no longer be heard.
    let mut out = vec![a.appellant, s.provider];
    out.extend(
        s.queued
            .iter()
            .flat_map(|q| q.backers.iter().map(|b| b.appellant)),
    );
    for t in &a.segments {
        out.extend(t.backers.iter().map(|b| b.appellant));
        if let Some(g) = s.segments.get(usize::from(t.segment)) {
            out.extend(g.seats.iter().map(|x| x.account));
        }
    }
    out.sort();
    out.dedup();
    out
}

/// Money of one appealed segment.
#[derive(Default)]
struct Money {
    slashed: Amount,
    paid: Amount,
    refunded: Amount,
    burned: Amount,
}

/// The stake `seat` lost in this session since `before` (its entry in `losses` then).
fn lost_since(losses: &BTreeMap<AccountId, Amount>, seat: &AccountId, before: Amount) -> Amount {
    losses
        .get(seat)
        .copied()
        .unwrap_or(0)
        .saturating_sub(before)
}

/// Records on seat `j` of `g` a slash of `amount` for `reason` (added to one it had).
fn record_slash(g: &mut SegmentState, j: usize, reason: SlashReason, amount: Amount) {
    if amount == 0 {
        return;
    }
    if let Some(seat) = g.seats.get_mut(j) {
        let had = seat.slash.map_or(0, |x| x.amount);
        seat.slash = Some(SeatSlash {
            reason,
            amount: had.saturating_add(amount),
        });
    }
}

/// Gives back, to every seat of segment `g` (index `segment`) that judged it in a round
/// before `round` on the side `valid` (the side an appeal in `round` has now decided, or
/// the side against a Valid verdict that fell), the slash it took for that judgement, and
/// makes room for it again under the session's loss cap. A wrong-vote slash is still
/// burned and comes back whole; an incoherence slash was paid out to the appeal that made
/// it, so it comes back out of `fund` (this round's own slashes) as far as that reaches.
/// Returns what `fund` paid.
#[allow(clippy::too_many_arguments)]
fn restore_slashes(
    st: &mut State,
    losses: &mut BTreeMap<AccountId, Amount>,
    id: &Hash,
    segment: u16,
    g: &mut SegmentState,
    round: u8,
    valid: bool,
    mut fund: Amount,
    ev: &mut Vec<Event>,
) -> Amount {
    let mut used = 0u64;
    for seat in g.seats.iter_mut().filter(|x| x.round < round) {
        let on_side = seat
            .vote
            .is_some_and(|v| !v.is_abstain() && v.is_valid() == valid);
        let Some(x) = seat.slash.filter(|_| on_side) else {
            continue;
        };
        let owed = match x.reason {
            SlashReason::Incoherent => x.amount.min(fund),
            _ => x.amount,
        };
        let amount = registry::restore(st, &seat.account, owed);
        if x.reason == SlashReason::Incoherent {
            fund = fund.saturating_sub(amount);
            used = used.saturating_add(amount);
        }
        let left = x.amount.saturating_sub(amount);
        seat.slash = (left > 0).then_some(SeatSlash {
            reason: x.reason,
            amount: left,
        });
        if let Some(l) = losses.get_mut(&seat.account) {
            *l = l.saturating_sub(amount);
        }
        if amount > 0 {
            ev.push(Event::SlashRestored {
                session: *id,
                segment,
                round: seat.round,
                seat: seat.account,
                amount,
                reason: x.reason,
            });
        }
    }
    used
}

/// Decides the open appeal of `s` at the close of its round's reveal window: each
/// appealed segment's verdict, the economics, the recomputed outcome and the round's
/// record; then the session is appealable again with a new window (or the queued segments
/// open the next round).
pub(crate) fn decide(
    st: &mut State,
    ctx: &BlockCtx,
    id: &Hash,
    mut s: Session,
    ev: &mut Vec<Event>,
) {
    let Some(a) = s.appeal.take() else {
        st.appealable.insert(*id, s);
        return;
    };
    let Some(mut o) = st.outcomes.remove(id) else {
        // Unreachable: an appeal is only opened on a decided session. Return the bonds.
        for (appellant, _, bond) in appellants(&a.segments) {
            registry::credit(st, &appellant, bond);
        }
        return;
    };
    let params = st.params.clone();
    let tau = s.manifest.quorum.tau;
    let provider = s.provider;
    let mut local = current_verdicts(&s, &o);
    let mut losses = std::mem::take(&mut s.losses);
    // Whether the side an overturn decided now goes against keeps a whole appeal window
    // before the session's horizon to answer it.
    let answerable = ctx.height.saturating_add(params.appeal_window)
        <= o.decided_at.saturating_add(params.appeal_horizon);
    let mut records = Vec::with_capacity(a.segments.len());
    for t in &a.segments {
        let i = usize::from(t.segment);
        let Some(g) = s.segments.get_mut(i) else {
            refund_backers(st, id, &t.backers, "unknown segment", ev);
            continue;
        };
        let counts = tally::round_counts(g, a.round);
        let q = tally::round_quorum(tau, g.k, &counts);
        let decided = tally::local_verdict(&counts, q);
        let (tier, k) = (g.tier, g.k);
        let deps = g.entry.depends_on.len();
        let previous_valid = t.previous == LocalVerdict::Valid;
        // An appeal overturns a verdict only with more judgements on the other side than
        // reached it: short of that it leaves it standing, as an undecided round would.
        let verdict = match decided.as_vote() {
            Some(v) if v.is_valid() != previous_valid => {
                let other = if v.is_valid() {
                    counts.valid
                } else {
                    counts.invalid.saturating_add(counts.ungrounded)
                };
                if other > t.held_by {
                    decided
                } else {
                    LocalVerdict::Undecided
                }
            }
            _ => decided,
        };
        let round_seats = || g.seats.iter().filter(|x| x.round == a.round);
        let keyed_judgements = round_seats()
            .filter(|x| x.keyed(deps) && x.vote.is_some_and(|v| !v.is_abstain()))
            .count();
        let starved: Vec<AccountId> = round_seats()
            .filter(|x| !x.keyed(deps) && x.vote.is_none_or(|v| v.is_abstain()))
            .map(|x| x.account)
            .collect();
        // A Valid verdict reached only by the seats its provider chose to key, beside
        // seats it starved, was not examined: a provider keying its own sybils among the
        // appeal seats and starving the rest would otherwise keep a wrong Valid for good
        // (upheld) or buy one (overturned), and have the honest seats it did key slashed
        // for judging against it. It is starved like a round nobody judged: nobody is
        // scored, a Valid it was asked to examine no longer stands, and any other verdict
        // stands as it was.
        let verdict = match verdict.as_vote() {
            Some(v) if v.is_valid() && !starved.is_empty() => LocalVerdict::Undecided,
            _ => verdict,
        };
        let result = match verdict.as_vote() {
            None if !starved.is_empty() => AppealResult::Starved,
            None => AppealResult::Undecided,
            Some(v) if v.is_valid() != previous_valid => AppealResult::Overturned,
            Some(_) => AppealResult::Upheld,
        };
        let bonds = t.backers.iter().fold(0u64, |x, b| x.saturating_add(b.bond));

        // The appeal seats, scored as in any round (every judgement); who shares the pot.
        let mut payees = Vec::new();
        let mut slashed_seats = Vec::new();
        for (j, seat) in g.seats.iter().enumerate() {
            if seat.round != a.round {
                continue;
            }
            let judged = matches!(seat.vote, Some(v) if !v.is_abstain());
            if !seat.keyed(deps) && !judged {
                continue;
            }
            let score = match (seat.commitment, seat.vote) {
                (None, _) | (Some(_), None) => Some(Score::Wrong(SlashReason::NoShow)),
                (Some(_), Some(Vote::Abstain | Vote::PayloadAbstain)) => None,
                (Some(_), Some(vote)) => match verdict.as_vote() {
                    None => {
                        payees.push(seat.account);
                        None
                    }
                    Some(v) if v.is_valid() == vote.is_valid() => {
                        payees.push(seat.account);
                        // Paid below, from the pot, not from an escrow.
                        Some(Score::Agree { paid: false })
                    }
                    Some(_) => Some(Score::Wrong(SlashReason::WrongVote)),
                },
            };
            let wrong_vote = matches!(score, Some(Score::Wrong(SlashReason::WrongVote)));
            let before = losses.get(&seat.account).copied().unwrap_or(0);
            if let Some(score) = score {
                let mut nothing = 0;
                econ::score_seat(
                    st,
                    &mut econ::Pot {
                        escrow: &mut nothing,
                        losses: &mut losses,
                    },
                    &econ::SeatRef {
                        block_hash: &ctx.block_hash,
                        session: id,
                        segment: t.segment,
                        round: a.round,
                        seat: &seat.account,
                    },
                    score,
                    ev,
                );
            }
            if wrong_vote {
                slashed_seats.push((j, lost_since(&losses, &seat.account, before)));
            }
        }
        for (j, amount) in slashed_seats {
            record_slash(g, j, SlashReason::WrongVote, amount);
        }

        let mut m = Money::default();
        let mut pending = None;
        // What each backer gets back, by position in `t.backers`.
        let mut refunds = vec![0u64; t.backers.len()];
        let pot = match result {
            // The majority of the round that had decided it answers for it, but only on
            // the word of a quorum of seats the provider keyed, in a round where it kept
            // no seat from judging: an overturn carried by seats that judged without keys,
            // or beside seats the provider starved (whose votes could have held the old
            // verdict), slashes nobody. Whoever an earlier round slashed for judging it
            // the way it is now decided gets that slash back.
            //
            // Nobody is slashed for incoherence now: the slashes (and the reward and the
            // seats' pay that come out of them) fall due when the session is final, and
            // only if the segment's verdict then is still this round's ([`settle_final`]).
            // A panel an appellant drew by luck cannot take honest stake for as long as
            // an appeal can still take its verdict back.
            //
            // And only an overturn that leaves the side it went against a whole appeal
            // window to answer it ever slashes: one decided so close to the session's
            // horizon that no counter-appeal could be heard in full replaces the verdict
            // but slashes nobody (an adversary's panel timed to decide last takes no
            // stake).
            AppealResult::Overturned => {
                if keyed_judgements >= usize::from(q) && starved.is_empty() && answerable {
                    pending = Some(PendingIncoherence {
                        overturned: t.decided_in,
                        backers: t
                            .backers
                            .iter()
                            .filter(|b| b.bond > 0)
                            .map(|b| b.appellant)
                            .collect(),
                    });
                }
                restore_slashes(
                    st,
                    &mut losses,
                    id,
                    t.segment,
                    g,
                    a.round,
                    !previous_valid,
                    0,
                    ev,
                );
                // Every backer gets its bond back.
                for (r, b) in refunds.iter_mut().zip(&t.backers) {
                    *r = b.bond;
                }
                0
            }
            AppealResult::Upheld => bonds,
            // Who owed the keys pays: each starved seat one reward `R` from the provider's
            // balance (as much as it holds); a third party's bond comes back whole.
            //
            // A third party gets its bond back only if it had standing: it sat in the
            // round that reached the appealed verdict and did not judge on its side there
            // (it judged against it, abstained or was starved). Anyone else's bond is forfeit: it first pays the provider
            // back what the starved seats cost it, and the rest burns. So a stranger who
            // appeals a PASS while its provider is offline, to turn its Valid segments
            // Undecided, pays for it (and the provider is made whole for the seats), while
            // an outvoted or starved seat can still take a wrong Valid down for free.
            AppealResult::Starved => {
                let mut owed_back = 0u64;
                for seat in &starved {
                    let paid = registry::debit_up_to(st, &provider, params.reward);
                    registry::credit(st, seat, paid);
                    owed_back = owed_back.saturating_add(paid);
                    ev.push(Event::SeatStarved {
                        session: *id,
                        segment: t.segment,
                        seat: *seat,
                        paid,
                    });
                }
                let standing = |who: &AccountId| {
                    g.seats.iter().any(|x| {
                        x.round == t.decided_in
                            && x.account == *who
                            && !x
                                .vote
                                .is_some_and(|v| !v.is_abstain() && v.is_valid() == previous_valid)
                    })
                };
                let mut kept = 0u64;
                let mut forfeit = 0u64;
                for (r, b) in refunds.iter_mut().zip(&t.backers) {
                    if b.appellant == provider {
                        kept = kept.saturating_add(b.bond);
                    } else if standing(&b.appellant) {
                        *r = b.bond;
                    } else {
                        forfeit = forfeit.saturating_add(b.bond);
                    }
                }
                let back = forfeit.min(owed_back);
                registry::credit(st, &provider, back);
                // Burned below with the rest of the round's money.
                m.burned = forfeit.saturating_sub(back);
                kept
            }
            // Nobody judged: a third party gets its bond back; a provider appealing its
            // own session bears it.
            AppealResult::Undecided if payees.is_empty() => {
                let mut kept = 0u64;
                for (r, b) in refunds.iter_mut().zip(&t.backers) {
                    if b.appellant == provider {
                        kept = kept.saturating_add(b.bond);
                    } else {
                        *r = b.bond;
                    }
                }
                kept
            }
            AppealResult::Undecided => bonds,
        };
        let n = u64::try_from(payees.len()).unwrap_or(u64::MAX);
        let each = pot.checked_div(n).unwrap_or(0);
        for seat in &payees {
            let paid = econ::pay_seat(st, id, t.segment, seat, each, ev);
            m.paid = m.paid.saturating_add(paid);
        }
        m.burned = m.burned.saturating_add(pot.saturating_sub(m.paid));
        if result == AppealResult::Overturned {
            st.burned = st.burned.saturating_sub(m.paid);
            // What stays burned of the slashes is reported; the bonds went back.
        } else {
            st.burned = st.burned.saturating_add(m.burned);
        }
        for (r, b) in refunds.iter().zip(&t.backers) {
            if *r > 0 {
                registry::credit(st, &b.appellant, *r);
                m.refunded = m.refunded.saturating_add(*r);
            }
        }

        match result {
            // A Valid verdict the provider kept its appeal from judging no longer stands,
            // and neither do the slashes of the seats that judged against it.
            AppealResult::Starved if previous_valid => {
                if let Some(x) = local.get_mut(i) {
                    *x = (LocalVerdict::Undecided, a.round);
                }
                restore_slashes(st, &mut losses, id, t.segment, g, a.round, false, 0, ev);
            }
            AppealResult::Starved | AppealResult::Undecided => {
                // The previous verdict stands, with the tier and seats that reached it.
                g.tier = t.tier;
                g.k = t.k;
            }
            AppealResult::Overturned | AppealResult::Upheld => {
                if let Some(x) = local.get_mut(i) {
                    *x = (verdict, a.round);
                }
            }
        }
        records.push(AppealedSegment {
            segment: t.segment,
            previous: t.previous,
            verdict,
            result,
            tier,
            k,
            q,
            votes: counts,
            slashed: m.slashed,
            paid: m.paid,
            refunded: m.refunded,
            burned: m.burned,
            pending,
        });
    }
    s.losses = losses;

    let trace_before = o.trace;
    let v = tally::verdicts(&params, &s, &local);
    o.segments = v.outcomes;
    o.left_out = v.left_out;
    // A trace whose provider kept an appeal of one of its Valid verdicts from being
    // judged (it starved the appeal seats) does not PASS while that verdict stands
    // unexamined: at best it is Inconclusive. Otherwise a provider could answer an honest
    // seat's appeal of a wrong dead-end step by withholding keys, and keep its PASS.
    o.trace = match v.tally.verdict {
        TraceVerdict::Pass if withheld_from_appeal(&local) => TraceVerdict::Inconclusive,
        t => t,
    };
    o.passing_weight = v.tally.passing;
    o.undecided_weight = v.tally.undecided;
    o.total_weight = v.tally.total;
    o.error_at_conclusion = v.tally.error_at_conclusion;
    o.conclusion_judged = v.tally.conclusion_judged;
    o.conclusion_sound = v.tally.conclusion_sound;
    o.coverage = v.coverage;
    o.bound = v.bound;
    for r in &records {
        ev.push(Event::AppealDecided {
            session: *id,
            segment: r.segment,
            round: a.round,
            previous: r.previous,
            verdict: r.verdict,
            overturned: r.result == AppealResult::Overturned,
            trace: o.trace,
        });
    }
    o.appeals.rounds.push(AppealRound {
        round: a.round,
        appellant: a.appellant,
        appellants: appellants(&a.segments)
            .into_iter()
            .map(|(x, _, _)| x)
            .collect(),
        opened_at: a.opened_at,
        decided_at: ctx.height,
        bond: a.bond,
        segments: records,
        trace_before,
        trace_after: o.trace,
    });
    o.appeals.open = None;
    // A fresh window after each round, never past the session's horizon.
    o.appeals.until = ctx
        .height
        .saturating_add(params.appeal_window)
        .min(o.decided_at.saturating_add(params.appeal_horizon))
        .max(ctx.height);
    st.outcomes.insert(*id, o);
    put_back(st, id, s, ctx.height, ev);
}

/// Settles, when session `id` (`s`, decided as `o`) becomes final, the incoherence slashes
/// its overturns left pending ([`AppealedSegment::pending`]), in the order of its rounds.
/// An overturn whose verdict is still the segment's own at finality slashes the majority of
/// the round it overturned one penalty each (within the session's loss cap, reputation
/// down); its bonded backers share `min(appeal_reward, S)` of those slashes `S` and the
/// overturning round's agreeing seats the rest (the integer remainder stays burned). An
/// overturn a later round took back, or whose segment ended Undecided, slashes nobody.
/// Returns the accounts it changed.
pub(crate) fn settle_final(
    st: &mut State,
    id: &Hash,
    s: &mut Session,
    o: &mut Outcome,
    ev: &mut Vec<Event>,
) -> Vec<AccountId> {
    let final_sides: Vec<Option<bool>> = current_verdicts(s, o)
        .iter()
        .map(|(v, _)| v.as_vote().map(|v| v.is_valid()))
        .collect();
    let reward_cap = st.params.appeal_reward;
    let mut losses = std::mem::take(&mut s.losses);
    let mut touched = Vec::new();
    for r in &mut o.appeals.rounds {
        let round = r.round;
        for a in &mut r.segments {
            let Some(p) = a.pending.take() else {
                continue;
            };
            let Some(side) = a.verdict.as_vote().map(|v| v.is_valid()) else {
                continue;
            };
            let i = usize::from(a.segment);
            if final_sides.get(i).copied().flatten() != Some(side) {
                continue;
            }
            let Some(g) = s.segments.get_mut(i) else {
                continue;
            };
            let mut incoherent = Vec::new();
            let mut slashed = 0u64;
            for (j, seat) in g.seats.iter().enumerate() {
                let with_majority = seat.round == p.overturned
                    && seat
                        .vote
                        .is_some_and(|v| !v.is_abstain() && v.is_valid() != side);
                if with_majority {
                    let taken = econ::slash_incoherent(st, &mut losses, id, &seat.account, ev);
                    slashed = slashed.saturating_add(taken);
                    incoherent.push((j, taken));
                    touched.push(seat.account);
                }
            }
            for (j, taken) in incoherent {
                record_slash(g, j, SlashReason::Incoherent, taken);
            }
            // The reward comes out of what was just burned, as does the seats' pay.
            let reward = reward_cap.min(slashed);
            let each = reward
                .checked_div(u64::try_from(p.backers.len()).unwrap_or(u64::MAX))
                .unwrap_or(0);
            let mut rewarded = 0u64;
            for b in &p.backers {
                if each > 0 {
                    registry::credit(st, b, each);
                    rewarded = rewarded.saturating_add(each);
                    touched.push(*b);
                }
            }
            st.burned = st.burned.saturating_sub(rewarded);
            let left = slashed.saturating_sub(rewarded);
            let payees: Vec<AccountId> = g
                .seats
                .iter()
                .filter(|x| {
                    x.round == round
                        && x.vote
                            .is_some_and(|v| !v.is_abstain() && v.is_valid() == side)
                })
                .map(|x| x.account)
                .collect();
            let share = left
                .checked_div(u64::try_from(payees.len()).unwrap_or(u64::MAX))
                .unwrap_or(0);
            let mut paid = 0u64;
            for seat in &payees {
                paid = paid.saturating_add(econ::pay_seat(st, id, a.segment, seat, share, ev));
                touched.push(*seat);
            }
            st.burned = st.burned.saturating_sub(paid);
            a.slashed = a.slashed.saturating_add(slashed);
            a.refunded = a.refunded.saturating_add(rewarded);
            a.paid = a.paid.saturating_add(paid);
            a.burned = a.burned.saturating_add(left.saturating_sub(paid));
        }
    }
    s.losses = losses;
    touched.sort();
    touched.dedup();
    touched
}
