//! Appeals: any account may appeal decided segments of a session within its appeal
//! window; fresh seats judge them again and their verdict replaces the old one.
//!
//! # Who, when, and what is refused
//!
//! `Call::Appeal { session, segments }` is accepted from any account while the session is
//! decided (it has an [`Outcome`]) and not final, up to and including height
//! [`crate::AppealRecord::until`]: the decision (or the decision of its last appeal round) plus
//! [`crate::Params::appeal_window`]. It is refused, changing nothing and charging nothing, when
//! - the session is unknown or failed ([`TxError::UnknownSession`]), still live
//!   ([`TxError::NotDecided`]), or its window closed ([`TxError::AppealWindowClosed`],
//!   naming the last height that accepted one);
//! - an appeal of it is being judged ([`TxError::AppealOpen`]): one appeal per session at
//!   a time, which keeps every round's economics about one appellant and one bond;
//! - a segment is out of range, a revealed honeypot (its truth is the provider's word, not
//!   a verdict), or **Undecided**: an appeal overturns a verdict and slashes the majority
//!   that reached it, and an Undecided segment has neither. (Getting an Undecided segment
//!   judged is a new audit, not an appeal: the provider opens a session for it.) The
//!   verdict appealed is the segment's *own* verdict (after earlier appeal rounds), so a
//!   segment Propagated from an error upstream but Valid of its own may be appealed;
//! - a segment has had [`crate::Params::max_appeal_rounds`] appeal rounds already;
//! - a segment cannot be staffed now: `2k + 1` fresh seats are needed (`k` the session's
//!   `k` for the tier, capped at `MAX_SEATS`), eligible as for any draw (the tier's index,
//!   the session's exposure budget), excluding everyone who ever sat on that segment, the
//!   provider and the appellant, in the segment's tier or, when it has too few, in a
//!   higher tier the session's terms allow (next one up first);
//! - the appellant's balance is below `appeal_bond x segments`.
//!
//! # The round
//!
//! An accepted appeal escrows the bond ([`OpenAppeal::bond`], counted in the supply),
//! moves the session from [`State::appealable`] back into [`State::sessions`] in
//! `Phase::Assigning` with [`Session::appeal`] set, and marks [`crate::AppealRecord::open`]. At
//! the end of the next block its seats are drawn, seeded by that block's hash as a
//! session's first seats are (so the appellant cannot pick its block to pick its seats),
//! and the session runs the ordinary live machinery in round `2 + a` for its appeal `a`
//! (rounds 0 and 1 are the first round and its escalation): `SeatAssigned` events, key
//! delivery by the provider, the starved-seat rule, commit and reveal windows from the
//! session's terms, early close. If a segment can no longer be staffed at the draw
//! (auditors left in between), the appeal is cancelled: the bond goes back, the session
//! is appealable again until its old `until` ([`Event::AppealCancelled`]).
//!
//! When the round's reveal window closes, each appealed segment is decided with the
//! ordinary quorum `q = ceil(tau (2k + 1))` over the round's counted votes. A decided
//! appeal verdict replaces the segment's own verdict; an Undecided one leaves the previous
//! verdict standing. The outcome is then recomputed through the tally's own functions
//! (`tally::verdicts`: propagation, trace verdict, coverage, failure bound), the round is
//! recorded ([`AppealRound`]) and the session goes back to `appealable` with a fresh
//! window from this decision. The session is **final** at the end of the block at
//! `until` when no appeal is open ([`Event::SessionFinal`], [`crate::AppealRecord::final_at`]);
//! then its live copy is dropped and only the outcome remains.
//!
//! # Economics (integer, supply conserved)
//!
//! Per appealed segment, with `b = appeal_bond`:
//! - **Overturned** (the appeal decided the other side of Valid / not Valid): every seat
//!   of the round that had decided the segment and cast a counted vote on its side is
//!   slashed one penalty `P` for incoherence (deterministic, [`SlashReason::Incoherent`]),
//!   reputation down. Of the `S` slashed, the appellant gets `min(appeal_reward, S)` on
//!   top of `b` back; the rest of `S` is split equally among the appeal seats whose
//!   counted vote agrees with the new verdict; the integer remainder stays burned.
//! - **Upheld** (same side; the appeal's verdict still replaces the old one, which may
//!   change Invalid to Ungrounded): `b` is split equally among the appeal seats that
//!   agree with the verdict; the remainder is burned.
//! - **Undecided**: `b` is split equally among the appeal seats that cast a counted
//!   vote (they judged, no side won); if none did, `b` goes back to the appellant.
//!
//! Appeal seats are otherwise scored as in any round: agreeing seats gain reputation, a
//! counted vote against the appeal's verdict loses reputation and draws the ordinary
//! probabilistic slash, a no-show too. A seat the provider did not give its keys in time is
//! neither scored nor paid (the provider's escrow is gone; a provider that withholds keys
//! from appeal seats can leave an appeal Undecided, which costs the appellant nothing
//! more than its bond's split among the seats that judged). A flagged seat's share burns.
//!
//! Rounds are `u8`: a session accepts appeals while `2 + appeals` fits one.

use trust_protocol::{
    AccountId, Hash, Vote,
    tx::{MAX_SEATS, Tier},
    units::Amount,
};

use crate::{
    assign::{self, Draw},
    contract::{BlockCtx, exposure_cap, seat_picked},
    econ::{self, Score},
    error::TxError,
    events::{Event, SlashReason},
    registry,
    state::{
        AppealResult, AppealRound, AppealTarget, AppealedSegment, LocalVerdict, MAX_QUEUED_APPEALS,
        OpenAppeal, Outcome, Phase, QueuedAppeal, Session, State,
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

/// Appeal rounds that judged segment `segment` ([`AppealResult::counts`]): a round the
/// provider starved of keys, or one left undecided, does not use up the segment's rounds.
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

/// Seats of an appeal in `tier`: `2k + 1` for the session's `k` there.
fn appeal_seats(s: &Session, tier: Tier) -> u8 {
    s.manifest
        .quorum
        .k(tier)
        .saturating_mul(2)
        .saturating_add(1)
        .min(MAX_SEATS)
}

/// Where an appeal of segment `i` may draw, in order: its tier, then each higher tier the
/// session's terms allow, with the seats each needs.
fn options(s: &Session, i: usize) -> Vec<(Tier, u8)> {
    let Some(g) = s.segments.get(i) else {
        return Vec::new();
    };
    let up: &[Tier] = match g.tier {
        Tier::Computer => &[Tier::Llm, Tier::Human],
        Tier::Llm => &[Tier::Human],
        Tier::Human => &[],
    };
    std::iter::once(g.tier)
        .chain(up.iter().copied())
        .filter(|t| s.manifest.terms.allows(*t))
        .map(|t| (t, appeal_seats(s, t)))
        .collect()
}

/// Everyone who ever sat on segment `i`, and the appellant: none of them sits on its appeal.
fn excluded(s: &Session, i: usize, appellant: AccountId) -> Vec<AccountId> {
    s.segments
        .get(i)
        .into_iter()
        .flat_map(|g| g.seats.iter().map(|x| x.account))
        .chain(std::iter::once(appellant))
        .collect()
}

/// Tries, in order, the tiers that may hear an appeal of `segment` of session `id` (`s`)
/// in `round` ([`options`]): for each, the draw of its seats seeded by `seed`, from the
/// auditors neither seated on the segment nor `appellant`, within the session's exposure
/// budget as `covered` stands. Returns what `f` makes of the first draw it accepts.
/// [`appeal`] counts the eligible with it before it admits an appeal and [`draw_seats`]
/// draws with it, so the two agree on who may sit.
#[allow(clippy::too_many_arguments)]
fn first_tier<T>(
    s: &Session,
    id: &Hash,
    seed: &Hash,
    segment: u16,
    round: u8,
    appellant: AccountId,
    covered: &assign::Coverage,
    mut f: impl FnMut(&Draw<'_>) -> Option<T>,
) -> Option<T> {
    let i = usize::from(segment);
    let budget_cap = exposure_cap(s);
    let held = Default::default();
    let exclude = excluded(s, i, appellant);
    let keys = assign::keys_of(s, i);
    options(s, i).into_iter().find_map(|(tier, seats)| {
        f(&Draw {
            seed,
            session: id,
            provider: &s.provider,
            segment,
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

/// The targets of an appeal of `segments` of session `id` (`s`, decided as `o`) by
/// `appellant` judged in `round`, or why it cannot be heard: every segment must exist, not
/// be a revealed honeypot, have a verdict, have rounds left, and be staffable now.
fn targets(
    st: &State,
    id: Hash,
    s: &Session,
    o: &Outcome,
    appellant: AccountId,
    segments: &[u16],
    round: u8,
) -> Result<Vec<AppealTarget>, TxError> {
    let p = &st.params;
    let current = current_verdicts(s, o);
    let covered = assign::coverage(s);
    let mut targets = Vec::with_capacity(segments.len());
    for &segment in segments {
        let i = usize::from(segment);
        let g = s.segments.get(i).ok_or(TxError::UnknownSegment(segment))?;
        if g.honeypot.is_some() {
            return Err(TxError::AppealHoneypot(segment));
        }
        let (previous, decided_in) = current
            .get(i)
            .copied()
            .unwrap_or((LocalVerdict::Undecided, 0));
        if previous == LocalVerdict::Undecided {
            return Err(TxError::AppealUndecided(segment));
        }
        let rounds = rounds_of(o, segment);
        if rounds >= p.max_appeal_rounds {
            return Err(TxError::AppealRoundsExhausted { segment, rounds });
        }
        let mut first = None;
        let staffed = first_tier(
            s,
            &id,
            &Hash::ZERO,
            segment,
            round,
            appellant,
            &covered,
            |d| {
                let eligible = assign::eligible_count(st, d);
                if eligible >= usize::from(d.seats) {
                    return Some(());
                }
                first.get_or_insert((d.tier, d.seats, eligible));
                None
            },
        )
        .is_some();
        if !staffed {
            let (tier, needed, eligible) = first.unwrap_or((g.tier, appeal_seats(s, g.tier), 0));
            return Err(TxError::AppealUnstaffed {
                segment,
                tier,
                needed,
                eligible,
            });
        }
        targets.push(AppealTarget {
            segment,
            previous,
            decided_in,
            tier: g.tier,
            k: g.k,
        });
    }
    Ok(targets)
}

/// The round the next appeal of a session decided as `o` is judged in.
fn next_round(o: &Outcome) -> Result<u8, TxError> {
    u8::try_from(o.appeals.rounds.len())
        .ok()
        .and_then(|a| a.checked_add(APPEAL_ROUND0))
        .ok_or(TxError::Overflow)
}

/// Opens an appeal of `segments` of `session` by `appellant` at `height` (see the module
/// docs for what is checked), or queues it behind the round being judged. Changes nothing
/// when it refuses.
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
    let n = u64::try_from(segments.len()).map_err(|_| TxError::Overflow)?;
    let bond = st
        .params
        .appeal_bond
        .checked_mul(n)
        .ok_or(TxError::Overflow)?;
    let have = st.accounts.get(&appellant).map_or(0, |a| a.balance);
    let left = have
        .checked_sub(bond)
        .ok_or(TxError::InsufficientBalance { have, need: bond })?;

    // A round is being judged: the appeal waits its turn (checked in full when it opens),
    // so nobody is refused because someone else appealed first.
    if let Some(s) = st.sessions.get(&session)
        && s.appeal.is_some()
    {
        if s.queued.len() >= MAX_QUEUED_APPEALS {
            return Err(TxError::AppealQueueFull(s.queued.len()));
        }
        for &segment in segments {
            let g = s
                .segments
                .get(usize::from(segment))
                .ok_or(TxError::UnknownSegment(segment))?;
            if g.honeypot.is_some() {
                return Err(TxError::AppealHoneypot(segment));
            }
        }
        let position = u16::try_from(s.queued.len()).unwrap_or(u16::MAX);
        st.accounts.entry(appellant).or_default().balance = left;
        if let Some(s) = st.sessions.get_mut(&session) {
            s.queued.push(QueuedAppeal {
                appellant,
                filed_at: height,
                bond,
                segments: segments.to_vec(),
            });
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
    let round = next_round(o)?;
    let targets = targets(st, session, s, o, appellant, segments, round)?;

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

/// After a round of session `id` ended (decided or cancelled), opens the first queued
/// appeal that can still be heard, with its seats drawn at the end of the next block; an
/// appeal that cannot (a segment now undecided, out of rounds or unstaffable) gets its
/// bond back. Returns the session to put back: live when an appeal opened, otherwise
/// appealable (the caller decides where it goes from `s.appeal`).
fn open_queued(
    st: &mut State,
    id: &Hash,
    mut s: Session,
    height: u64,
    ev: &mut Vec<Event>,
) -> Session {
    while !s.queued.is_empty() {
        let q = s.queued.remove(0);
        let Some(o) = st.outcomes.get(id) else {
            registry::credit(st, &q.appellant, q.bond);
            continue;
        };
        let heard = next_round(o).and_then(|round| {
            targets(st, *id, &s, o, q.appellant, &q.segments, round).map(|t| (round, t))
        });
        match heard {
            Ok((round, segments)) => {
                s.phase = Phase::Assigning;
                s.appeal = Some(OpenAppeal {
                    appellant: q.appellant,
                    round,
                    opened_at: height,
                    bond: q.bond,
                    segments,
                });
                if let Some(o) = st.outcomes.get_mut(id) {
                    o.appeals.open = Some(round);
                }
                ev.push(Event::AppealOpened {
                    session: *id,
                    appellant: q.appellant,
                    segments: q.segments,
                    round,
                    bond: q.bond,
                });
                return s;
            }
            Err(e) => {
                registry::credit(st, &q.appellant, q.bond);
                ev.push(Event::AppealCancelled {
                    session: *id,
                    appellant: q.appellant,
                    refunded: q.bond,
                    reason: e.to_string(),
                });
            }
        }
    }
    s
}

/// Puts `s` back after a round ended: live when a queued appeal opened, appealable
/// otherwise.
fn put_back(st: &mut State, id: &Hash, s: Session, height: u64, ev: &mut Vec<Event>) {
    let s = open_queued(st, id, s, height, ev);
    if s.appeal.is_some() {
        st.sessions.insert(*id, s);
    } else {
        st.appealable.insert(*id, s);
    }
}

/// Whether an open appeal's seats are due: at the end of a block after the appeal's.
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
        let chosen = first_tier(
            s,
            id,
            &ctx.block_hash,
            t.segment,
            a.round,
            a.appellant,
            &covered,
            |d| assign::draw(st, d).map(|picked| (d.tier, d.seats, picked)),
        );
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

/// Cancels the open appeal of `s` (its seats could not be drawn): the bond goes back and
/// the session is appealable again.
pub(crate) fn cancel(
    st: &mut State,
    id: &Hash,
    mut s: Session,
    reason: String,
    height: u64,
    ev: &mut Vec<Event>,
) {
    if let Some(a) = s.appeal.take() {
        registry::credit(st, &a.appellant, a.bond);
        ev.push(Event::AppealCancelled {
            session: *id,
            appellant: a.appellant,
            refunded: a.bond,
            reason,
        });
    }
    if let Some(o) = st.outcomes.get_mut(id) {
        o.appeals.open = None;
    }
    put_back(st, id, s, height, ev);
}

/// The accounts an appeal round's end (decided or cancelled) may change: the appellant,
/// the provider, the queued appellants and every seat, of any round, of the appealed
/// segments.
pub(crate) fn decision_accounts(s: &Session) -> Vec<AccountId> {
    let Some(a) = &s.appeal else {
        return Vec::new();
    };
    // The provider pays seats it starved; queued appellants may be refunded when their
    // appeal can no longer be heard.
    let mut out = vec![a.appellant, s.provider];
    out.extend(s.queued.iter().map(|q| q.appellant));
    for t in &a.segments {
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

/// Decides the open appeal of `s` at the close of its round's reveal window: each
/// appealed segment's verdict, the economics, the recomputed outcome and the round's
/// record; then the session is appealable again with a new window (or the next queued
/// appeal opens).
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
        // Unreachable: an appeal is only opened on a decided session. Return the bond.
        registry::credit(st, &a.appellant, a.bond);
        return;
    };
    let params = st.params.clone();
    let tau = s.manifest.quorum.tau;
    let by_provider = a.appellant == s.provider;
    let mut local = current_verdicts(&s, &o);
    let mut bond = a.bond;
    let mut losses = std::mem::take(&mut s.losses);
    let mut records = Vec::with_capacity(a.segments.len());
    for t in &a.segments {
        let i = usize::from(t.segment);
        let Some(g) = s.segments.get_mut(i) else {
            continue;
        };
        let counts = tally::round_counts(g, a.round);
        let q = tally::round_quorum(tau, g.k, &counts);
        let verdict = tally::local_verdict(&counts, q);
        let (tier, k) = (g.tier, g.k);
        let deps = g.entry.depends_on.len();
        let round_seats = || g.seats.iter().filter(|x| x.round == a.round);
        let keyed_judgements = round_seats()
            .filter(|x| x.keyed(deps) && x.vote.is_some_and(|v| !v.is_abstain()))
            .count();
        let starved: Vec<AccountId> = round_seats()
            .filter(|x| !x.keyed(deps) && x.vote.is_none_or(|v| v.is_abstain()))
            .map(|x| x.account)
            .collect();
        let previous_valid = t.previous == LocalVerdict::Valid;
        let result = match verdict.as_vote() {
            None if !starved.is_empty() => AppealResult::Starved,
            None => AppealResult::Undecided,
            Some(v) if v.is_valid() != previous_valid => AppealResult::Overturned,
            Some(_) => AppealResult::Upheld,
        };
        let share = params.appeal_bond.min(bond);
        bond = bond.saturating_sub(share);

        // The appeal seats, scored as in any round (every judgement); who shares the pot.
        let mut payees = Vec::new();
        for seat in g.seats.iter().filter(|x| x.round == a.round) {
            let judged = matches!(seat.vote, Some(v) if !v.is_abstain());
            if !seat.keyed(deps) && !judged {
                continue;
            }
            let score = match (seat.commitment, seat.vote) {
                (None, _) | (Some(_), None) => Some(Score::Wrong(SlashReason::NoShow)),
                (Some(_), Some(Vote::Abstain)) => None,
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
        }

        let mut m = Money::default();
        let pot = match result {
            // The majority of the round that had decided it answers for it, but only on
            // the word of a quorum of seats the provider keyed: an overturn carried by
            // seats that judged without keys slashes nobody.
            AppealResult::Overturned => {
                if keyed_judgements >= usize::from(q) {
                    for seat in g.seats.iter().filter(|x| x.round == t.decided_in) {
                        let with_majority = seat
                            .vote
                            .is_some_and(|v| !v.is_abstain() && v.is_valid() == previous_valid);
                        if with_majority {
                            let taken =
                                econ::slash_incoherent(st, &mut losses, id, &seat.account, ev);
                            m.slashed = m.slashed.saturating_add(taken);
                        }
                    }
                }
                let reward = params.appeal_reward.min(m.slashed);
                m.refunded = share.saturating_add(reward);
                // The reward and the seats' pay come out of what was just burned.
                st.burned = st.burned.saturating_sub(reward);
                m.slashed.saturating_sub(reward)
            }
            AppealResult::Upheld => share,
            // Who owed the keys pays: each starved seat one reward `R` from the provider's
            // balance (as much as it holds); a third party's bond comes back whole.
            AppealResult::Starved => {
                for seat in &starved {
                    let paid = registry::debit_up_to(st, &s.provider, params.reward);
                    registry::credit(st, seat, paid);
                    ev.push(Event::SeatStarved {
                        session: *id,
                        segment: t.segment,
                        seat: *seat,
                        paid,
                    });
                }
                if by_provider {
                    share
                } else {
                    m.refunded = share;
                    0
                }
            }
            // Nobody judged: a third party gets its bond back; a provider appealing its
            // own session bears it.
            AppealResult::Undecided if payees.is_empty() && !by_provider => {
                m.refunded = share;
                0
            }
            AppealResult::Undecided => share,
        };
        let n = u64::try_from(payees.len()).unwrap_or(u64::MAX);
        let each = pot.checked_div(n).unwrap_or(0);
        for seat in &payees {
            let paid = econ::pay_seat(st, id, t.segment, seat, each, ev);
            m.paid = m.paid.saturating_add(paid);
        }
        m.burned = pot.saturating_sub(m.paid);
        if result == AppealResult::Overturned {
            st.burned = st.burned.saturating_sub(m.paid);
            // What stays burned of the slashes is reported; the bond share went back.
        } else {
            st.burned = st.burned.saturating_add(m.burned);
        }
        if m.refunded > 0 {
            registry::credit(st, &a.appellant, m.refunded);
        }

        match result {
            // A Valid verdict the provider kept its appeal from judging no longer stands.
            AppealResult::Starved if previous_valid => {
                if let Some(x) = local.get_mut(i) {
                    *x = (LocalVerdict::Undecided, a.round);
                }
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
        });
    }
    s.losses = losses;
    if bond > 0 {
        // Unreachable (the bond is `appeal_bond` per segment); never lost either way.
        registry::credit(st, &a.appellant, bond);
    }

    let trace_before = o.trace;
    let v = tally::verdicts(&params, &s, &local);
    o.segments = v.outcomes;
    o.left_out = v.left_out;
    o.trace = v.tally.verdict;
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
