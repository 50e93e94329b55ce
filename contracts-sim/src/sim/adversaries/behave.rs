//! What every actor of the adversarial simulator does, and how each attack is mounted.
//!
//! - **Honest providers** open traces of 2-5 segments (about one in five wrong) on every
//!   tier with ordinary terms, sometimes plant a genuine honeypot (a known error outside
//!   the trace), key every seat at once and open their honeypot set and mapping when due.
//! - **The adversary's provider** opens traces of 3-5 segments in a chain with one known
//!   wrong step, all on one tier, at the extreme terms the floors allow
//!   (`extreme-terms`: `k` at the floor, `Delta` at the network's maximum, `tau` at the
//!   network's minimum, `beta` and both windows at the floors). Before each, it tries the
//!   same session with one term under its floor (`below-floor-terms`) or requiring a domain
//!   only its sybils declare (`private-domain`). Its attacks rotate over its sessions:
//!   keys (all good, `garbage-keys` to the honest seats, `withheld-keys` from them,
//!   `late-keys` to them after the key lead), honeypots (none, a genuine one, a
//!   `false-honeypot`: a correct step committed as a known error; `selective-honeypot`:
//!   every step carries a honeypot commitment, the set is empty, and after the votes it
//!   opens its judged-wrong step as a honeypot; a set holding the conclusion
//!   (`honeypot-set-with-conclusion`) or a step the trace rests on
//!   (`honeypot-set-with-rested-on-step`); a genuine set never opened
//!   (`honeypot-set-never-opened`)), a `self-appeal` of its own decided segment whose
//!   honest seats it starves; `appeal-spam` by two of its spammers, 18 appeals of its
//!   segments judged rightly Valid as soon as the session is decided (one opens, sixteen
//!   fill the queue, one is refused: `queued-appeal` counts those queued); an
//!   `appeal-reroll` by its third spammer, which appeals its wrong step judged (rightly)
//!   wrong, round after round while the step has appeal rounds left, each round a fresh
//!   panel its sybils may win; and `late-expertise`: its sybils declare the session's
//!   required domain in the very block that opens it (and take it back once the seats
//!   are drawn). Every appeal round of the watcher in its sessions, and of its own
//!   appeal, it starves of keys (`starved-appeal-round`).
//! - **Sybil auditors** approve every wrong step of the adversary (`sybil-collusion`
//!   counts each such vote), side with its honeypot claims, and judge the truth in every
//!   other session. They read what the adversary keys them (always good keys).
//! - **Honest auditors** vote the truth once they hold good keys for their segment and its
//!   premises, or abstain at their give-up block (two blocks before the commit deadline);
//!   they reveal as soon as the commit window closes.
//! - **Appellants who could know**: an honest seat of the round that decided a segment
//!   appeals it when its own judgement was on the other side (outvoted), or when the
//!   verdict is Valid and it could not judge (kept out by the provider); an honest
//!   provider appeals a Computer-tier verdict its own checks contradict. After a refusal a
//!   seat tries again once the session's appeal state has changed.
//! - **Issue 53's attacks**: `tau-ceiling` (tau at the tier's ceiling, and a probe at
//!   `tau = 1` that must be refused), extra seats and commit windows at both ends
//!   (0 and the maximum; the floor and the tier's cap), `withheld-ciphertext` (keys
//!   delivered, ciphertexts never served: honest seats abstain after their fetch patience,
//!   its sybils hold their seats uncommitted to their give-up block), `re-braced-proof`
//!   (see [`World::judge`]), `censorship` and `draw-grinding` (the proposer coalition, in
//!   `world.rs`), `domain-pool-at-floor` (its sybils bring a domain that a few honest
//!   auditors declare up to the floor, learnt from a refusal, and it requires the domain).

use std::collections::BTreeMap;

use rand::Rng;
use trust_protocol::{
    AccountId, Hash, Salt, Vote, commitment, honeypot_commitment, honeypot_set_commitment,
    mapping_commitment,
    seal::SealedKey,
    tx::{
        Call, Difficulty, HoneypotOpening, MAX_SEALED_KEYS, QuorumParams, SeatKey, SegmentEntry,
        SessionManifest, SessionTerms, Tier,
    },
    units::Ppm,
};

use super::{
    memory::{Case, HeldSeat, Honeypots, Keys, Plan, appeal_state},
    world::{Kind, Tag, World},
};
use crate::{Event, LocalVerdict, Phase, SlashReason, TraceVerdict, minimum_fee, tally};

/// The sealed bytes of a key that opens (the contract never opens a key; seats do).
const GOOD: u8 = 0x60;
/// The sealed bytes of a key that does not open.
const GARBAGE: u8 = 0xEE;
/// Appeals the spammers file on one session: more than a segment's bonded backers
/// ([`crate::MAX_BACKERS`]), to try to crowd out the watcher.
const SPAM_APPEALS: usize = crate::MAX_BACKERS + 2;

/// Which term a probe puts under its floor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Probe {
    K,
    CommitWindow,
    RevealWindow,
    Beta,
    PrivateDomain,
    TauAboveCeiling,
}

fn sealed(byte: u8) -> SealedKey {
    SealedKey {
        ephemeral: trust_protocol::SealingPublicKey([7; 32]),
        ciphertext: vec![byte; 48],
    }
}

fn slash_reason(r: SlashReason) -> &'static str {
    match r {
        SlashReason::WrongVote => "wrong-vote",
        SlashReason::NoShow => "no-show",
        SlashReason::RubberStamp => "rubber-stamp",
        SlashReason::Incoherent => "incoherent",
    }
}

impl World {
    fn actors_of(&self, pick: impl Fn(Kind) -> bool) -> Vec<usize> {
        (0..self.actors.len())
            .filter(|&i| pick(self.actors[i].kind))
            .collect()
    }

    /// Reacts to a block's events: seats taken, keys received, windows closed, decisions,
    /// finality, slashes.
    pub(super) fn react(&mut self, events: &[Event]) {
        let mut drawn: BTreeMap<(Hash, u8), Vec<(u16, AccountId)>> = BTreeMap::new();
        for e in events {
            match e {
                Event::SeatAssigned {
                    session,
                    segment,
                    seat,
                    round,
                    ..
                } => {
                    drawn
                        .entry((*session, *round))
                        .or_default()
                        .push((*segment, *seat));
                    if let Some(&actor) = self.by_id.get(seat) {
                        self.behave
                            .seats
                            .entry(*session)
                            .or_default()
                            .push(HeldSeat {
                                actor,
                                segment: *segment,
                                round: *round,
                                commit: None,
                                revealed: false,
                                drawn_at: self.height,
                            });
                    }
                    if *round == 0
                        && let Some(c) = self.cases.get_mut(session)
                        && c.drawn_at.is_none()
                    {
                        c.drawn_at = Some(self.height);
                        if !c.adversary {
                            let waited = self.height.saturating_sub(c.opened_at);
                            self.counts.max_blocks_to_draw =
                                self.counts.max_blocks_to_draw.max(waited);
                        }
                    }
                }
                Event::KeyDelivered {
                    session,
                    segment,
                    seat,
                    sealed,
                } => {
                    if let Some(c) = self.cases.get_mut(session) {
                        let good = sealed.ciphertext.first() == Some(&GOOD);
                        c.keys.insert((*seat, *segment), good);
                    }
                }
                Event::CommitWindowClosed { session, round, .. } => self.reveal(*session, *round),
                Event::ExpertiseDeclared { account, at, .. } => {
                    let declared = at.saturating_sub(self.cfg.params.expertise_delay);
                    self.behave.declared.insert(*account, declared);
                }
                Event::ExpertiseChanged { account, .. } => {
                    if let Some(h) = self.behave.declared.remove(account) {
                        self.behave.counting.insert(*account, h);
                    }
                }
                Event::TraceDecided { session, .. } => self.on_decided(*session),
                Event::AppealOpened {
                    session,
                    appellant,
                    round,
                    ..
                } => {
                    let who = self.by_id.get(appellant).copied();
                    if let (Some(c), Some(who)) = (self.cases.get_mut(session), who) {
                        c.appellants.insert(*round, who);
                    }
                }
                Event::AppealQueued { appellant, .. }
                    if self.kind_of(appellant) == Some(Kind::Spammer) =>
                {
                    self.counts.attack("queued-appeal");
                }
                Event::SessionFinal { session } => self.on_final(*session),
                Event::SessionFailed { session, reason } => {
                    self.counts.diag.sessions_failed += 1;
                    if self.cases.get(session).is_some_and(|c| !c.adversary) {
                        self.counts.honest_sessions_refused += 1;
                        self.counts.incident(format!(
                            "block {}: honest session {} failed: {reason}",
                            self.height,
                            session.to_hex()
                        ));
                    }
                    self.cases.remove(session);
                    self.behave.seats.remove(session);
                }
                Event::SessionDeferred { .. } => self.counts.diag.deferred_draws += 1,
                Event::Slashed {
                    session,
                    seat,
                    amount,
                    reason,
                } => {
                    if matches!(self.kind_of(seat), Some(Kind::Honest(_))) {
                        let context = self.slash_context(session, seat);
                        self.counts.incident(format!(
                            "block {}: honest seat slashed {amount} for {} in session {}: {context}; {}",
                            self.height,
                            slash_reason(*reason),
                            session.to_hex(),
                            self.story(session)
                        ));
                        self.counts.honest_slashed += 1;
                        self.counts.honest_stake_lost += amount;
                        *self
                            .counts
                            .diag
                            .honest_slashes_by_reason
                            .entry(slash_reason(*reason).to_string())
                            .or_insert(0) += 1;
                    }
                }
                // A later appeal decided the segment the way the seat judged it: the slash
                // is given back, so it is not a slash the adversary bought.
                Event::SlashRestored {
                    seat,
                    amount,
                    reason,
                    ..
                } => {
                    self.counts.diag.slashes_restored += 1;
                    if matches!(self.kind_of(seat), Some(Kind::Honest(_))) {
                        self.counts.honest_slashed = self.counts.honest_slashed.saturating_sub(1);
                        self.counts.honest_stake_lost =
                            self.counts.honest_stake_lost.saturating_sub(*amount);
                        let by = &mut self.counts.diag.honest_slashes_by_reason;
                        let key = slash_reason(*reason).to_string();
                        if let Some(n) = by.get_mut(&key) {
                            *n = n.saturating_sub(1);
                            if *n == 0 {
                                by.remove(&key);
                            }
                        }
                    }
                }
                Event::HoneypotDisputed { .. } => self.counts.diag.honeypots_disputed += 1,
                Event::HoneypotsForfeited { .. } => self.counts.diag.honeypot_sets_forfeited += 1,
                Event::SeatStarved { .. } => self.counts.diag.seats_starved += 1,
                _ => {}
            }
        }
        for ((session, round), seats) in drawn {
            self.on_drawn(session, round, &seats);
        }
    }

    /// Seats of `round` of `session` were drawn: its provider keys them as its plan says.
    fn on_drawn(&mut self, session: Hash, round: u8, seats: &[(u16, AccountId)]) {
        let Some(c) = self.cases.get(&session) else {
            return;
        };
        let (provider, adversary, plan, opened_at) = (c.provider, c.adversary, c.plan, c.opened_at);
        let appellant = c.appellants.get(&round).map(|&a| self.actors[a].kind);
        if round == 0 {
            if adversary {
                self.counts.first_round_seats += seats.len() as u64;
                let sybils = seats.iter().filter(|(_, s)| self.is_sybil(s)).count();
                self.counts.sybil_seats += sybils as u64;
                // A sybil seated on the domain it declared for this very session (its
                // domains counting from a declaration made once the session opened, in a
                // block whose successor's seed, the draw's, its proposer knew): the delay
                // did not hold. One declared long enough before the draw is in the pool by
                // right (a draw that waited for capacity may come long after the opening).
                let drawn = self.height;
                let late = seats.iter().any(|(_, s)| {
                    self.is_sybil(s)
                        && self
                            .behave
                            .counting
                            .get(s)
                            .is_some_and(|h| *h >= opened_at && h + 1 >= drawn)
                });
                if plan.late_expertise && late {
                    self.counts.breach("late-expertise-seated");
                }
            }
            match plan.keys {
                Keys::Good => {}
                Keys::Garbage => self.counts.attack("garbage-keys"),
                Keys::Withhold => self.counts.attack("withheld-keys"),
                Keys::Late => self.counts.attack("late-keys"),
                Keys::Unserved => self.counts.attack("withheld-ciphertext"),
            }
        }
        let policy = if !adversary {
            Keys::Good
        } else if round < crate::APPEAL_ROUND0 {
            plan.keys
        } else {
            match appellant {
                Some(Kind::Honest(_) | Kind::Adversary) => {
                    self.counts.attack("starved-appeal-round");
                    Keys::Withhold
                }
                _ => Keys::Good,
            }
        };
        let until = match self
            .contract
            .state()
            .sessions
            .get(&session)
            .map(|s| s.phase)
        {
            Some(Phase::Commit { until, .. }) => until,
            _ => self.height,
        };
        let late_at = (until + 1)
            .saturating_sub(self.cfg.params.key_lead)
            .max(self.height + 1);
        let mut now = Vec::new();
        let mut later = Vec::new();
        // Each (segment, seat) once (the contract refuses a delivery naming a pair twice).
        let mut named = std::collections::BTreeSet::new();
        for &(segment, seat) in seats {
            let honest = !self.is_sybil(&seat);
            let deps = c_deps(&self.cases, &session, segment);
            for k in std::iter::once(segment).chain(deps) {
                if !named.insert((k, seat)) {
                    continue;
                }
                let key = |byte| SeatKey {
                    segment: k,
                    seat,
                    sealed: sealed(byte),
                };
                match (honest, policy) {
                    (false, _) | (true, Keys::Good | Keys::Unserved) => now.push(key(GOOD)),
                    (true, Keys::Garbage) => now.push(key(GARBAGE)),
                    (true, Keys::Withhold) => {}
                    (true, Keys::Late) => later.push(key(GOOD)),
                }
            }
        }
        for batch in now.chunks(MAX_SEALED_KEYS) {
            self.send(
                provider,
                Call::DeliverKeys {
                    session,
                    keys: batch.to_vec(),
                },
                Tag::Plain,
            );
        }
        for batch in later.chunks(MAX_SEALED_KEYS) {
            self.behave.delayed.push((
                late_at,
                provider,
                Call::DeliverKeys {
                    session,
                    keys: batch.to_vec(),
                },
            ));
        }
    }

    /// Every seat of ours that committed in `round` of `session` reveals.
    fn reveal(&mut self, session: Hash, round: u8) {
        let mut out = Vec::new();
        if let Some(seats) = self.behave.seats.get_mut(&session) {
            for s in seats.iter_mut().filter(|s| s.round == round && !s.revealed) {
                if let Some((vote, salt)) = s.commit {
                    s.revealed = true;
                    out.push((
                        s.actor,
                        Call::Reveal {
                            session,
                            segment: s.segment,
                            vote,
                            salt,
                            reason: String::new(),
                        },
                    ));
                }
            }
        }
        for (actor, call) in out {
            self.send(actor, call, Tag::Plain);
        }
    }

    /// A round of `session` closed its reveal window: counts a segment the sybils decided
    /// against the truth.
    pub(super) fn behave_round_closed(&mut self, session: Hash, round: u8) {
        let Some(c) = self.cases.get(&session) else {
            return;
        };
        if !c.adversary {
            return;
        }
        let st = self.contract.state();
        let Some(s) = st
            .sessions
            .get(&session)
            .or_else(|| st.appealable.get(&session))
        else {
            return;
        };
        let tau = s.manifest.quorum.tau;
        let mut decided = 0;
        for (i, g) in s.segments.iter().enumerate() {
            if !g.seats.iter().any(|x| x.round == round) {
                continue;
            }
            let truth = c.truth.get(i).copied().unwrap_or(Vote::Valid);
            let counts = tally::round_counts(g, round);
            let q = tally::round_quorum(tau, g.k, &counts);
            let against = g
                .seats
                .iter()
                .filter(|x| x.round == round && self.is_sybil(&x.account))
                .filter(|x| {
                    x.vote
                        .is_some_and(|v| !v.is_abstain() && v.is_valid() != truth.is_valid())
                })
                .count();
            if against >= usize::from(q) {
                decided += 1;
            }
        }
        self.counts.diag.sybil_decided_segments += decided;
    }

    /// A session was decided for the first time.
    fn on_decided(&mut self, session: Hash) {
        let Some(o) = self.contract.outcome(&session).cloned() else {
            return;
        };
        let Some(c) = self.cases.get_mut(&session) else {
            return;
        };
        c.decided = true;
        if c.wrong_on(&o) && o.trace == TraceVerdict::Pass {
            self.counts.wrong_pass_at_decision += 1;
        }
        if !c.adversary {
            return;
        }
        let (plan, provider) = (c.plan, c.provider);
        let st = self.contract.state();
        let Some(s) = st.appealable.get(&session) else {
            return;
        };
        // Lemma 1 at the run's sybil share, for the wrong steps of this trace's round 0.
        let rho = self.cfg.sybil_share_f64();
        let tau = s.manifest.quorum.tau;
        for (i, g) in s.segments.iter().enumerate() {
            let wrong = c.truth.get(i).is_some_and(|t| !t.is_valid());
            if !wrong || o.segments.get(i).is_none_or(|x| x.honeypot.is_some()) {
                continue;
            }
            let n = g.seats.iter().filter(|x| x.round == 0).count() as u32;
            if n == 0 {
                continue;
            }
            // q = ceil(tau n): the quorum the sybils must reach alone when every seat judges.
            let q = u32::try_from(tau.ceil_mul(u64::from(n))).unwrap_or(u32::MAX);
            let l = &mut self.counts.lemma1;
            l.wrong_traces += 1;
            l.mean_panel += f64::from(n);
            l.expected_unwatched += super::Lemma1::unwatched_rate(rho, n);
            l.expected_sybil_decided += super::Lemma1::sybil_quorum_rate(rho, n, q);
        }
        // Each segment's own verdict (what an appeal re-judges) and whether it is right.
        let own: Vec<(u16, LocalVerdict, bool)> = crate::appeal::current_verdicts(s, &o)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| o.segments.get(*i).is_some_and(|g| g.honeypot.is_none()))
            .filter_map(|(i, (v, _))| {
                let truth = c.truth.get(i)?.is_valid();
                Some((u16::try_from(i).ok()?, v, truth))
            })
            .collect();
        if plan.self_appeal {
            // Its own segment judged wrong (rightly), hoping fresh seats it keys only
            // partly will flip it; else any decided one.
            let target = own
                .iter()
                .find(|(_, v, t)| *v != LocalVerdict::Valid && *v != LocalVerdict::Undecided && !t)
                .or_else(|| own.iter().find(|(_, v, _)| *v != LocalVerdict::Undecided));
            if let Some(&(segment, _, _)) = target {
                self.counts.attack("self-appeal");
                self.send(
                    provider,
                    Call::Appeal {
                        session,
                        segments: vec![segment],
                    },
                    Tag::MayFail,
                );
            }
        }
        if plan.spam {
            // Segments judged rightly Valid: appeals that cannot win, to fill the queue
            // (and use up the segments' rounds). The wrong step judged wrong is the
            // re-roller's ([`World::reroll`]).
            let mut targets: Vec<u16> = own
                .iter()
                .filter(|(_, v, t)| *v == LocalVerdict::Valid && *t)
                .map(|(i, _, _)| *i)
                .collect();
            if targets.is_empty() {
                targets = own
                    .iter()
                    .filter(|(_, v, t)| *v != LocalVerdict::Undecided && *t)
                    .map(|(i, _, _)| *i)
                    .collect();
            }
            let fillers: Vec<usize> = self
                .actors_of(|k| k == Kind::Spammer)
                .into_iter()
                .skip(1)
                .collect();
            if !targets.is_empty() && !fillers.is_empty() {
                for j in 0..SPAM_APPEALS {
                    self.counts.attack("appeal-spam");
                    self.send(
                        fillers[j % fillers.len()],
                        Call::Appeal {
                            session,
                            segments: vec![targets[j % targets.len()]],
                        },
                        Tag::MayFail,
                    );
                }
            }
        }
    }

    /// The adversary's re-roller (its first spammer) appeals its wrong step while the step's
    /// own verdict is (rightly) an error and the step has appeal rounds left: every round
    /// draws a fresh panel, and one its sybils win turns the verdict.
    fn reroll(&mut self, next: u64) {
        let Some(roller) = self.actors_of(|k| k == Kind::Spammer).first().copied() else {
            return;
        };
        let me = self.actors[roller].id;
        let params = &self.cfg.params;
        let st = self.contract.state();
        let mut out = Vec::new();
        for (id, c) in self.cases.iter().filter(|(_, c)| c.decided && c.plan.spam) {
            let Some(o) = st.outcomes.get(id) else {
                continue;
            };
            let live = st.sessions.get(id);
            let Some(s) = live.or_else(|| st.appealable.get(id)) else {
                continue;
            };
            let pending = live.is_some_and(|l| {
                l.appeal.as_ref().is_some_and(|a| {
                    a.segments
                        .iter()
                        .any(|t| t.backers.iter().any(|b| b.appellant == me))
                }) || l
                    .queued
                    .iter()
                    .any(|q| q.backers.iter().any(|b| b.appellant == me))
            });
            let open = live.is_some_and(|l| l.appeal.is_some());
            let horizon = o.decided_at.saturating_add(params.appeal_horizon);
            if pending
                || o.appeals.final_at.is_some()
                || next > horizon
                || (!open && next > o.appeals.until)
            {
                continue;
            }
            let current = crate::appeal::current_verdicts(s, o);
            let step = c.truth.iter().enumerate().find_map(|(i, t)| {
                let judged_wrong = matches!(
                    current.get(i).map(|v| v.0),
                    Some(LocalVerdict::Invalid | LocalVerdict::Ungrounded)
                );
                let honeypot = o.segments.get(i).is_none_or(|g| g.honeypot.is_some());
                (!t.is_valid() && judged_wrong && !honeypot).then_some(i)
            });
            let Some(step) = step.and_then(|i| u16::try_from(i).ok()) else {
                continue;
            };
            let used = o
                .appeals
                .rounds
                .iter()
                .filter(|r| {
                    r.segments
                        .iter()
                        .any(|a| a.segment == step && a.result.counts())
                })
                .count();
            if used >= usize::from(params.max_appeal_rounds) {
                continue;
            }
            if self.behave.roller_blocked.get(id) == Some(&appeal_state(&self.contract, id)) {
                continue;
            }
            out.push((*id, step));
        }
        for (session, step) in out {
            self.counts.attack("appeal-reroll");
            self.behave
                .roller_blocked
                .insert(session, appeal_state(&self.contract, &session));
            self.send(
                roller,
                Call::Appeal {
                    session,
                    segments: vec![step],
                },
                Tag::MayFail,
            );
        }
    }

    /// A session became final: its trace verdict is now for good.
    fn on_final(&mut self, session: Hash) {
        self.behave.seats.remove(&session);
        self.behave.seat_blocked.retain(|(id, _), _| *id != session);
        self.behave.roller_blocked.remove(&session);
        let Some(c) = self.cases.remove(&session) else {
            return;
        };
        let Some(o) = self.contract.outcome(&session) else {
            return;
        };
        if c.plan.re_braced && o.trace != TraceVerdict::Pass {
            self.counts.diag.re_braced_caught += 1;
        }
        if c.wrong_on(o) {
            self.counts.diag.traces_with_wrong_step += 1;
            if o.trace == TraceVerdict::Pass {
                let story = self.story_of(&c, &session);
                let kind = if c.watched {
                    self.counts.wrong_pass_final += 1;
                    if c.plan.re_braced {
                        self.counts.breach("re-braced-proof-passed");
                    }
                    "although an honest seat of a deciding round could have appealed"
                } else {
                    self.counts.wrong_pass_unwatched += 1;
                    "unwatched: no honest seat sat in a round that decided a wrong step"
                };
                self.counts.incident(format!(
                    "block {}: session {} became final with a PASS although its truth is {:?} ({kind}); {story}",
                    self.height,
                    session.to_hex(),
                    c.truth
                ));
            }
        }
        for r in &o.appeals.rounds {
            let turned = r
                .segments
                .iter()
                .filter(|a| a.result == crate::AppealResult::Overturned)
                .count() as u64;
            if turned > 0 {
                let by = self
                    .kind_of(&r.appellant)
                    .map_or("someone".to_string(), |k| format!("{k:?}"));
                *self.counts.diag.overturned_by.entry(by).or_insert(0) += turned;
            }
        }
        let blocks = self.height.saturating_sub(c.opened_at);
        self.counts.max_blocks_to_final = self.counts.max_blocks_to_final.max(blocks);
    }

    /// Where `seat` sits in `session` as the contract holds it now: per segment, its round,
    /// its vote, the truth, whether it is a revealed honeypot, and its round's votes.
    fn slash_context(&self, session: &Hash, seat: &AccountId) -> String {
        let st = self.contract.state();
        let Some(s) = st
            .sessions
            .get(session)
            .or_else(|| st.appealable.get(session))
        else {
            return "session no longer held".into();
        };
        let truth = self.cases.get(session).map(|c| c.truth.clone());
        let mut out = Vec::new();
        for (i, g) in s.segments.iter().enumerate() {
            for x in g.seats.iter().filter(|x| x.account == *seat) {
                let c = tally::round_counts(g, x.round);
                out.push(format!(
                    "segment {i} round {} vote {:?} truth {:?} honeypot {:?} ({} valid / {} not valid / {} abstained / {} starved)",
                    x.round,
                    x.vote,
                    truth.as_ref().and_then(|t| t.get(i)),
                    g.honeypot.map(|(t, _)| t),
                    c.valid,
                    c.invalid + c.ungrounded,
                    c.abstained,
                    c.starved
                ));
            }
        }
        out.join(", ")
    }

    /// What the simulation knows of a session, told for an incident.
    pub(super) fn story(&self, session: &Hash) -> String {
        match self.cases.get(session) {
            Some(c) => self.story_of(c, session),
            None => "a session the simulation does not follow".into(),
        }
    }

    /// [`World::story`] of case `c`: who opened it and with which plan, each appeal round
    /// (who filed it, and each segment's result), the segments' verdicts now.
    fn story_of(&self, c: &Case, session: &Hash) -> String {
        let who = |i: usize| format!("{:?}", self.actors[i].kind);
        let mut out = format!(
            "opened at block {} by {} (plan {:?})",
            c.opened_at,
            who(c.provider),
            c.plan
        );
        if let Some(o) = self.contract.outcome(session) {
            out.push_str(&format!("; first decided at block {}", o.decided_at));
            for r in &o.appeals.rounds {
                let by = self
                    .by_id
                    .get(&r.appellant)
                    .map_or("someone".to_string(), |&i| who(i));
                let segs: Vec<String> = r
                    .segments
                    .iter()
                    .map(|a| {
                        format!(
                            "segment {} {:?} -> {:?} ({:?}, {} valid / {} invalid / {} ungrounded / {} abstained / {} starved, q {})",
                            a.segment,
                            a.previous,
                            a.verdict,
                            a.result,
                            a.votes.valid,
                            a.votes.invalid,
                            a.votes.ungrounded,
                            a.votes.abstained,
                            a.votes.starved,
                            a.q
                        )
                    })
                    .collect();
                out.push_str(&format!(
                    "; appeal round {} by {by} decided at block {}: {}",
                    r.round,
                    r.decided_at,
                    segs.join(", ")
                ));
            }
            let verdicts: Vec<String> = o
                .segments
                .iter()
                .map(|g| format!("{:?}", g.verdict))
                .collect();
            out.push_str(&format!(
                "; verdicts now [{}], trace {:?}",
                verdicts.join(", "),
                o.trace
            ));
        }
        out
    }

    /// Everything actors send into the next block, decided on the state after this one.
    pub(super) fn act(&mut self) {
        let next = self.height + 1;
        let due: Vec<(usize, Call)> = {
            let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.behave.delayed)
                .into_iter()
                .partition(|(at, _, _)| *at <= next);
            self.behave.delayed = later;
            now.into_iter().map(|(_, s, c)| (s, c)).collect()
        };
        for (sender, call) in due {
            self.send(sender, call, Tag::Plain);
        }
        self.take_back_expertise(next);
        self.commit_seats(next);
        self.disclose();
        self.appeal_outvoted(next);
        self.provider_checks(next);
        self.reroll(next);
        self.declare_floor_domain();
        for _ in 0..self.cfg.sessions_per_block {
            if self.opened >= self.cfg.sessions {
                break;
            }
            let adversary = self.rng.gen_range(0..1_000_000) < self.cfg.adversary_share.0;
            if adversary {
                self.open_adversary(next);
            } else {
                self.open_honest();
            }
            self.opened += 1;
        }
    }

    /// Sybils that declared a domain to slip into a draw try to take it back once the seats
    /// are drawn, by declaring again: refused while the first is pending (replacing it would
    /// cancel it at once, after the seed is known), so the declaration, once made, counts.
    fn take_back_expertise(&mut self, next: u64) {
        let (now, later): (Vec<_>, Vec<_>) = std::mem::take(&mut self.behave.cancels)
            .into_iter()
            .partition(|(at, _)| *at <= next);
        self.behave.cancels = later;
        for (_, tier) in now {
            for s in self.actors_of(|k| k == Kind::Sybil(tier)) {
                // Only a declaration still pending when the next block runs can be taken
                // back: a sybil whose declaration was not applied (a block left it out),
                // or counts from that block on, would be declaring anew, no take-back.
                let id = self.actors[s].id;
                let pending = self
                    .contract
                    .state()
                    .auditors
                    .get(&id)
                    .and_then(|a| a.pending_expertise.as_ref())
                    .is_some_and(|p| p.at > next);
                if !pending {
                    continue;
                }
                self.counts.attack("expertise-take-back");
                self.send(
                    s,
                    Call::DeclareExpertise {
                        expertise: vec!["math".into()],
                    },
                    Tag::MustRefuse("expertise-take-back-accepted"),
                );
            }
        }
    }

    /// Seats that can judge commit their vote; seats that cannot, and whose give-up block
    /// has come, commit an abstention.
    fn commit_seats(&mut self, next: u64) {
        let mut out = Vec::new();
        let sessions: Vec<Hash> = self.behave.seats.keys().copied().collect();
        for session in sessions {
            let (round, until) = match self
                .contract
                .state()
                .sessions
                .get(&session)
                .map(|s| s.phase)
            {
                Some(Phase::Commit { round, until }) => (round, until),
                _ => continue,
            };
            let Some(seats) = self.behave.seats.get(&session) else {
                continue;
            };
            for (n, s) in seats.iter().enumerate() {
                if s.round != round || s.commit.is_some() {
                    continue;
                }
                let seat = self.actors[s.actor].id;
                let sybil = self.is_sybil(&seat);
                let unserved = self
                    .cases
                    .get(&session)
                    .is_some_and(|c| c.adversary && c.plan.keys == Keys::Unserved);
                let give_up = next + 1 >= until;
                // The adversary's sybils in a session whose ciphertexts it never serves
                // hold their seats uncommitted (and so the tier's capacity) until their
                // own give-up block.
                if unserved
                    && sybil
                    && self.cfg.hold_capacity
                    && round < crate::APPEAL_ROUND0
                    && !give_up
                {
                    continue;
                }
                let vote = match self.cases.get(&session) {
                    // An honest seat cannot fetch a ciphertext nobody serves.
                    Some(_) if unserved && !sybil => None,
                    Some(c) => {
                        let need = std::iter::once(s.segment).chain(
                            c.deps
                                .get(usize::from(s.segment))
                                .into_iter()
                                .flatten()
                                .copied(),
                        );
                        let readable = need
                            .into_iter()
                            .all(|k| c.keys.get(&(seat, k)) == Some(&true));
                        readable.then(|| self.judge(c, s.actor, s.segment))
                    }
                    None => None,
                };
                let vote = match vote {
                    Some(v) => v,
                    // A keyed seat whose ciphertext no peer serves gives up after its
                    // fetch patience, as the node's seat does.
                    None if unserved
                        && !sybil
                        && next >= s.drawn_at.saturating_add(self.cfg.fetch_patience) =>
                    {
                        self.counts.diag.unserved_abstentions += 1;
                        Vote::Abstain
                    }
                    // The give-up block: two blocks before the deadline, as a node's seat.
                    None if give_up => Vote::Abstain,
                    None => continue,
                };
                out.push((session, n, vote));
            }
        }
        for (session, n, vote) in out {
            let colludes = self.cases.get(&session).is_some_and(|c| {
                let seat = self.behave.seats.get(&session).and_then(|v| v.get(n));
                seat.is_some_and(|s| {
                    c.adversary
                        && self.is_sybil(&self.actors[s.actor].id)
                        && !vote.is_abstain()
                        && c.truth
                            .get(usize::from(s.segment))
                            .is_some_and(|t| t.is_valid() != vote.is_valid())
                })
            });
            if colludes {
                self.counts.attack("sybil-collusion");
            }
            let re_braced = self.cases.get(&session).is_some_and(|c| {
                let seat = self.behave.seats.get(&session).and_then(|v| v.get(n));
                c.plan.re_braced
                    && seat.is_some_and(|s| {
                        matches!(self.actors[s.actor].kind, Kind::Honest(_))
                            && c.truth
                                .get(usize::from(s.segment))
                                .is_some_and(|t| !t.is_valid())
                    })
            });
            if re_braced && !vote.is_abstain() && !vote.is_valid() {
                self.counts.diag.re_braced_refusals += 1;
            }
            let salt = Salt(self.rng.r#gen());
            let Some(seat) = self
                .behave
                .seats
                .get_mut(&session)
                .and_then(|v| v.get_mut(n))
            else {
                continue;
            };
            seat.commit = Some((vote, salt));
            let (actor, segment) = (seat.actor, seat.segment);
            let id = self
                .cases
                .get(&session)
                .and_then(|c| c.ids.get(usize::from(segment)).copied())
                .unwrap_or(Hash::ZERO);
            let me = self.actors[actor].id;
            let c = commitment(&session, &id, &me, vote, &salt, "");
            self.send(
                actor,
                Call::Commit {
                    session,
                    segment,
                    commitment: c,
                },
                Tag::Plain,
            );
        }
    }

    /// The vote of seat holder `actor` on `segment` of case `c`, once it can read it.
    ///
    /// A re-braced step (`re-braced-proof`) is the adversary's formal step whose text as
    /// shown is a valid NDL step but whose sealed structure (the braces before it, which
    /// its seat sees since issue 53) puts a result outside the block it was derived in:
    /// an honest seat judges what it is sealed, so it votes Invalid. What this models is
    /// only the seat's view: the judging crate's check of the braces and the offline
    /// verifier's rebuild of each document from the trace are tested in `judging`; here
    /// the step is a wrong step whose sybils approve it, like any other.
    fn judge(&self, c: &Case, actor: usize, segment: u16) -> Vote {
        let i = usize::from(segment);
        let truth = c.truth.get(i).copied().unwrap_or(Vote::Valid);
        if !c.adversary || !matches!(self.actors[actor].kind, Kind::Sybil(_)) {
            return truth;
        }
        let claim = c.claims.get(i).cloned().flatten();
        let opens = matches!(c.plan.honeypots, Honeypots::Genuine | Honeypots::False);
        match claim {
            Some(h) if opens && c.set.contains(&segment) => h.verdict,
            _ => Vote::Valid,
        }
    }

    /// Providers whose sessions are in disclosure open their honeypot set and mapping,
    /// as their plan says.
    fn disclose(&mut self) {
        let due: Vec<Hash> = self
            .cases
            .iter()
            .filter(|(_, c)| !c.disclosed)
            .filter(|(id, _)| {
                matches!(
                    self.contract.state().sessions.get(*id).map(|s| s.phase),
                    Some(Phase::Disclose { .. })
                )
            })
            .map(|(id, _)| *id)
            .collect();
        for session in due {
            let Some(c) = self.cases.get_mut(&session) else {
                continue;
            };
            c.disclosed = true;
            let (provider, plan) = (c.provider, c.plan);
            let openings: Vec<HoneypotOpening> = c
                .set
                .iter()
                .filter_map(|i| c.claims.get(usize::from(*i)).cloned().flatten())
                .collect();
            let set_salt = c.set_salt;
            let mapping = c.mapping;
            let judged_wrong = self.contract.state().sessions.get(&session).and_then(|s| {
                s.segments.iter().enumerate().find_map(|(i, g)| {
                    let wrong = matches!(
                        g.rounds.last(),
                        Some(LocalVerdict::Invalid | LocalVerdict::Ungrounded)
                    );
                    (wrong && g.entry.honeypot.is_some()).then_some(i)
                })
            });
            let open_set = |openings: Vec<HoneypotOpening>| Call::RevealHoneypots {
                session,
                openings,
                set_salt,
            };
            let open_mapping = Call::RevealMapping {
                session,
                mapping: mapping.0,
                salt: mapping.1,
            };
            match plan.honeypots {
                Honeypots::Selective => {
                    // The votes are public: its step judged wrong would make a convenient
                    // honeypot (it carries a honeypot commitment like every step).
                    let pick = judged_wrong.and_then(|i| c.claims.get(i).cloned().flatten());
                    let pick = pick.or_else(|| c.claims.iter().flatten().next().cloned());
                    if let Some(h) = pick {
                        self.counts.attack("selective-honeypot");
                        self.send(
                            provider,
                            open_set(vec![h]),
                            Tag::MustRefuse("honeypot-opened-after-votes"),
                        );
                    }
                    self.send(provider, open_set(openings), Tag::Plain);
                    self.send(provider, open_mapping, Tag::Plain);
                }
                Honeypots::WithConclusion | Honeypots::WithRestedOn => {
                    self.send(
                        provider,
                        open_set(openings),
                        Tag::MustRefuse("bad-honeypot-set-opened"),
                    );
                    self.send(provider, open_mapping, Tag::MayFail);
                }
                // It keeps the set closed (the bond is forfeited at the tally).
                Honeypots::NeverOpened => {}
                Honeypots::None | Honeypots::Genuine | Honeypots::False => {
                    self.send(provider, open_set(openings), Tag::Plain);
                    self.send(provider, open_mapping, Tag::Plain);
                }
            }
        }
    }

    /// The parties who could know appeal (there is no omniscient watcher): in every
    /// decided session, for each segment whose own verdict is decided, an honest seat of
    /// the round that decided it whose revealed judgement is on the other side (it was
    /// outvoted) appeals it, as soon as it may and with the bond; after a refusal it tries
    /// again once the session's appeal state has changed. It does not appeal a segment
    /// whose appeal rounds honest appeals have used up. Also notes, per session, whether a
    /// round that decided a wrong step held an honest seat that judged
    /// ([`Case::watched`]).
    fn appeal_outvoted(&mut self, next: u64) {
        let params = &self.cfg.params;
        let st = self.contract.state();
        let mut out: BTreeMap<(Hash, usize), Vec<u16>> = BTreeMap::new();
        let mut watched: Vec<(Hash, bool)> = Vec::new();
        for (id, c) in self.cases.iter().filter(|(_, c)| c.decided) {
            let Some(o) = st.outcomes.get(id) else {
                continue;
            };
            if o.appeals.final_at.is_some() {
                continue;
            }
            let live = st.sessions.get(id);
            let Some(s) = live.or_else(|| st.appealable.get(id)) else {
                continue;
            };
            let current = crate::appeal::current_verdicts(s, o);
            // An honest seat in the round, whether it judged or was kept from judging: either
            // way it could appeal (see below).
            let honest_sat = |i: usize, round: u8| {
                s.segments.get(i).is_some_and(|g| {
                    g.seats.iter().any(|x| {
                        x.round == round
                            && matches!(self.kind_of(&x.account), Some(Kind::Honest(_)))
                    })
                })
            };
            let w = current.iter().enumerate().any(|(i, (v, round))| {
                let wrong = c.truth.get(i).is_some_and(|t| !t.is_valid());
                let honeypot = o.segments.get(i).is_none_or(|g| g.honeypot.is_some());
                wrong
                    && !honeypot
                    && !matches!(v, LocalVerdict::Invalid | LocalVerdict::Ungrounded)
                    && honest_sat(i, *round)
            });
            watched.push((*id, w));
            let open = live.is_some_and(|l| l.appeal.is_some());
            let horizon = o.decided_at.saturating_add(params.appeal_horizon);
            if next > horizon || (!open && next > o.appeals.until) {
                continue;
            }
            let pending_by = |seg: u16| -> bool {
                let honest = |a: &AccountId| matches!(self.kind_of(a), Some(Kind::Honest(_)));
                live.is_some_and(|l| {
                    l.appeal.as_ref().is_some_and(|a| {
                        a.segments.iter().any(|t| {
                            t.segment == seg && t.backers.iter().any(|b| honest(&b.appellant))
                        })
                    }) || l
                        .queued
                        .iter()
                        .any(|q| q.segment == seg && q.backers.iter().any(|b| honest(&b.appellant)))
                })
            };
            for (i, (v, round)) in current.iter().enumerate() {
                if *v == LocalVerdict::Undecided
                    || o.segments.get(i).is_none_or(|g| g.honeypot.is_some())
                {
                    continue;
                }
                let Ok(seg) = u16::try_from(i) else {
                    continue;
                };
                if pending_by(seg) {
                    continue;
                }
                // Rounds honest appeals used up: nobody honest has one left to ask for.
                let used_by_honest = o
                    .appeals
                    .rounds
                    .iter()
                    .filter(|r| {
                        matches!(self.kind_of(&r.appellant), Some(Kind::Honest(_)))
                            && r.segments
                                .iter()
                                .any(|a| a.segment == seg && a.result.counts())
                    })
                    .count();
                if used_by_honest >= usize::from(params.max_appeal_rounds) {
                    continue;
                }
                let valid = *v == LocalVerdict::Valid;
                // Outvoted: it judged the other side. Or kept out: the verdict is Valid and
                // it could not judge (no key in time, a key that did not open, a ciphertext
                // nobody served: honest seats here abstain for no other reason), so it knows
                // the Valid verdict was reached without it, by the provider's doing.
                let outvoted = s.segments.get(i).and_then(|g| {
                    g.seats
                        .iter()
                        .filter(|x| x.round == *round)
                        .filter(|x| matches!(self.kind_of(&x.account), Some(Kind::Honest(_))))
                        .find(|x| match x.vote {
                            Some(vote) if !vote.is_abstain() => vote.is_valid() != valid,
                            _ => valid,
                        })
                        .and_then(|x| self.by_id.get(&x.account).copied())
                });
                let Some(who) = outvoted else {
                    continue;
                };
                if self.behave.seat_blocked.get(&(*id, who))
                    == Some(&appeal_state(&self.contract, id))
                {
                    continue;
                }
                out.entry((*id, who)).or_default().push(seg);
            }
        }
        for (id, w) in watched {
            if let Some(c) = self.cases.get_mut(&id) {
                c.watched = w;
            }
        }
        for ((session, who), segments) in out {
            // Measured, not known to the seat: whether a verdict it appeals is wrong.
            let wrong = self.verdict_wrong(&session, &segments);
            self.send(
                who,
                Call::Appeal { session, segments },
                Tag::SeatAppeal(wrong),
            );
        }
    }

    /// Whether the current verdict of any of `segments` of `session` contradicts the
    /// truth (a measurement: no actor reads it).
    fn verdict_wrong(&self, session: &Hash, segments: &[u16]) -> bool {
        let st = self.contract.state();
        let (Some(c), Some(o)) = (self.cases.get(session), st.outcomes.get(session)) else {
            return false;
        };
        let Some(s) = st
            .sessions
            .get(session)
            .or_else(|| st.appealable.get(session))
        else {
            return false;
        };
        let current = crate::appeal::current_verdicts(s, o);
        segments.iter().any(|&i| {
            let i = usize::from(i);
            let truth = c.truth.get(i).is_some_and(|t| t.is_valid());
            current.get(i).is_some_and(|(v, _)| {
                *v != LocalVerdict::Undecided && (*v == LocalVerdict::Valid) != truth
            })
        })
    }

    /// An honest provider runs the Computer tier's checks itself (the node's `check`
    /// preview calls the same judges): it appeals a decided Computer-tier segment of its
    /// own whose verdict contradicts them, once per segment.
    fn provider_checks(&mut self, next: u64) {
        let params = &self.cfg.params;
        let st = self.contract.state();
        let mut out = Vec::new();
        for (id, c) in self.cases.iter().filter(|(_, c)| c.decided && !c.adversary) {
            let Some(o) = st.outcomes.get(id) else {
                continue;
            };
            let live = st.sessions.get(id);
            let Some(s) = live.or_else(|| st.appealable.get(id)) else {
                continue;
            };
            let open = live.is_some_and(|l| l.appeal.is_some());
            let horizon = o.decided_at.saturating_add(params.appeal_horizon);
            if o.appeals.final_at.is_some() || next > horizon || (!open && next > o.appeals.until) {
                continue;
            }
            if !o.appeals.rounds.is_empty()
                || live.is_some_and(|l| l.appeal.is_some() || !l.queued.is_empty())
            {
                continue;
            }
            let wrong: Vec<u16> = crate::appeal::current_verdicts(s, o)
                .iter()
                .enumerate()
                .filter(|(i, _)| {
                    s.segments
                        .get(*i)
                        .is_some_and(|g| g.entry.tier == Tier::Computer)
                        && o.segments.get(*i).is_some_and(|g| g.honeypot.is_none())
                })
                .filter(|(i, (v, _))| {
                    let truth = c.truth.get(*i).is_some_and(|t| t.is_valid());
                    *v != LocalVerdict::Undecided && (*v == LocalVerdict::Valid) != truth
                })
                .filter_map(|(i, _)| u16::try_from(i).ok())
                .collect();
            if !wrong.is_empty()
                && self.behave.seat_blocked.get(&(*id, c.provider))
                    != Some(&appeal_state(&self.contract, id))
            {
                out.push((*id, c.provider, wrong));
            }
        }
        for (session, provider, segments) in out {
            self.behave
                .seat_blocked
                .insert((session, provider), appeal_state(&self.contract, &session));
            self.send(
                provider,
                Call::Appeal { session, segments },
                Tag::ProviderAppeal,
            );
        }
    }

    /// The manifest of a trace: entries with their honeypot commitments, the committed
    /// set, the mapping.
    #[allow(clippy::too_many_arguments)]
    fn manifest(
        &mut self,
        entries: Vec<SegmentEntry>,
        claims: &[Option<HoneypotOpening>],
        set: &[u16],
        quorum: QuorumParams,
        terms: SessionTerms,
        domain: &str,
        fee_factor: u64,
    ) -> (SessionManifest, Salt, (Hash, Salt)) {
        let tag = u64::from(self.opened);
        let mapping = (
            Hash::of_parts(
                "adv-mapping",
                &[&self.cfg.seed.to_le_bytes(), &tag.to_le_bytes()],
            ),
            Salt(self.rng.r#gen()),
        );
        let set_salt = Salt(self.rng.r#gen());
        let entries = entries
            .into_iter()
            .zip(claims)
            .map(|(e, h)| SegmentEntry {
                honeypot: h
                    .as_ref()
                    .map(|h| honeypot_commitment(&e.id, h.verdict, h.difficulty, &h.salt)),
                ..e
            })
            .collect();
        let mut m = SessionManifest {
            segments: entries,
            mapping_commitment: mapping_commitment(&mapping.0, &mapping.1),
            quorum,
            fee: 0,
            domain: domain.into(),
            left_out: Vec::new(),
            terms,
            honeypot_set: honeypot_set_commitment(set, &set_salt),
        };
        m.fee = minimum_fee(&self.cfg.params, &m)
            .unwrap_or(0)
            .saturating_mul(fee_factor);
        (m, set_salt, mapping)
    }

    fn segment_id(&self, s: usize) -> Hash {
        Hash::of_parts(
            "adv-seg",
            &[
                &self.cfg.seed.to_le_bytes(),
                &u64::from(self.opened).to_le_bytes(),
                &(s as u64).to_le_bytes(),
            ],
        )
    }

    fn claim(&mut self, segment: usize, verdict: Vote) -> HoneypotOpening {
        HoneypotOpening {
            segment: u16::try_from(segment).unwrap_or(u16::MAX),
            verdict,
            difficulty: Difficulty::ALL[self.rng.gen_range(0..3)],
            salt: Salt(self.rng.r#gen()),
        }
    }

    /// An honest provider's session: 2-5 segments on any tier, about one in five wrong,
    /// sometimes a genuine honeypot; ordinary terms.
    fn open_honest(&mut self) {
        let providers = self.actors_of(|k| k == Kind::Provider);
        let provider = providers[self.rng.gen_range(0..providers.len())];
        let n = self.rng.gen_range(2..=5usize);
        let mut entries = Vec::new();
        let (mut truth, mut deps, mut ids, mut claims) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..n {
            let tier = Tier::ALL[self.rng.gen_range(0..3)];
            let d: Vec<u16> = if s > 0 && self.rng.gen_bool(0.6) {
                vec![self.rng.gen_range(0..s) as u16]
            } else {
                Vec::new()
            };
            let ok = self.rng.gen_bool(0.8);
            let id = self.segment_id(s);
            entries.push(SegmentEntry {
                depends_on: d.clone(),
                conclusion: s + 1 == n,
                ..SegmentEntry::plain(id, tier)
            });
            truth.push(if ok { Vote::Valid } else { Vote::Invalid });
            deps.push(d);
            ids.push(id);
            claims.push(None);
        }
        let mut set = Vec::new();
        if self.rng.gen_bool(0.3) {
            let tier = Tier::ALL[self.rng.gen_range(0..3)];
            let id = self.segment_id(n);
            entries.push(SegmentEntry::plain(id, tier));
            truth.push(Vote::Invalid);
            deps.push(Vec::new());
            ids.push(id);
            let h = self.claim(n, Vote::Invalid);
            claims.push(Some(h));
            set.push(n as u16);
        }
        let quorum = QuorumParams {
            k: [3, 3, 3],
            extra_seats: 1,
            tau: Ppm(600_000),
            beta: Ppm(800_000),
        };
        let (m, set_salt, mapping) = self.manifest(
            entries,
            &claims,
            &set,
            quorum,
            SessionTerms::default(),
            "math",
            2,
        );
        let case = Case {
            provider,
            adversary: false,
            plan: Plan::honest(),
            truth,
            deps,
            ids,
            claims,
            set,
            set_salt,
            mapping,
            opened_at: 0,
            keys: BTreeMap::new(),
            disclosed: false,
            decided: false,
            watched: false,
            drawn_at: None,
            appellants: BTreeMap::new(),
        };
        self.opening.insert(m.mapping_commitment, case);
        self.send(provider, Call::OpenSession(m), Tag::Plain);
    }

    /// The adversary's session (see the module docs): a chain of 3-5 steps on one tier
    /// with one known wrong step, at the extreme terms, after a probe under the floors.
    fn open_adversary(&mut self, next: u64) {
        let a = self.adversary_opened;
        self.adversary_opened += 1;
        let providers = self.actors_of(|k| k == Kind::Adversary);
        let provider = providers[(a as usize / 7) % providers.len()];
        let tier = Tier::ALL[a as usize % 3];
        // A false honeypot is planted to be approved: its honest seats get good keys.
        // False honeypots twice in the rotation: getting honest seats' records to say they
        // approved a known error is worth a second try.
        let honeypots = [
            Honeypots::None,
            Honeypots::Genuine,
            Honeypots::False,
            Honeypots::Selective,
            Honeypots::WithConclusion,
            Honeypots::WithRestedOn,
            Honeypots::NeverOpened,
            Honeypots::False,
        ][a as usize % 8];
        let false_honeypot = honeypots == Honeypots::False;
        // A false honeypot is planted to be approved: its honest seats get good keys.
        let keys = if false_honeypot {
            Keys::Good
        } else {
            [
                Keys::Good,
                Keys::Garbage,
                Keys::Withhold,
                Keys::Late,
                Keys::Unserved,
            ][a as usize % 5]
        };
        let plan = Plan {
            keys,
            honeypots,
            self_appeal: a % 3 == 1,
            spam: a % 3 == 2,
            late_expertise: a % 6 == 3,
            tau_at_ceiling: (a / 2) % 2 == 1,
            // The smallest panel when it plants a false honeypot: its sybils hold it most
            // often, and an undisputed honeypot is scored.
            max_extra_seats: (a / 4).is_multiple_of(2) && !false_honeypot,
            // Sessions whose honest seats cannot commit hold capacity longest at the cap.
            commit_at_cap: (keys == Keys::Unserved || (a / 3) % 4 == 1) && self.cfg.hold_capacity,
            // Keyed, so that its honest seats see what it sealed.
            re_braced: keys == Keys::Good && (a / 5) % 2 == 1,
            domain_at_floor: a % 9 == 4,
        };
        // A re-braced proof is a formal proof: the Computer tier's.
        let tier = if plan.re_braced { Tier::Computer } else { tier };
        let probe = [
            Probe::K,
            Probe::CommitWindow,
            Probe::RevealWindow,
            Probe::Beta,
            Probe::PrivateDomain,
            Probe::TauAboveCeiling,
        ][a as usize % 6];

        let n = self.rng.gen_range(3..=5usize);
        let wrong = self.rng.gen_range(0..n - 1);
        let mut entries = Vec::new();
        let (mut truth, mut deps, mut ids, mut claims) =
            (Vec::new(), Vec::new(), Vec::new(), Vec::new());
        for s in 0..n {
            let d: Vec<u16> = if s > 0 {
                vec![(s - 1) as u16]
            } else {
                Vec::new()
            };
            let id = self.segment_id(s);
            entries.push(SegmentEntry {
                depends_on: d.clone(),
                conclusion: s + 1 == n,
                ..SegmentEntry::plain(id, tier)
            });
            truth.push(if s != wrong {
                Vote::Valid
            } else if self.rng.gen_bool(0.7) {
                Vote::Invalid
            } else {
                Vote::Ungrounded
            });
            deps.push(d);
            ids.push(id);
            claims.push(None);
        }
        let mut set = Vec::new();
        match plan.honeypots {
            Honeypots::None => {}
            Honeypots::Genuine | Honeypots::False | Honeypots::NeverOpened => {
                let id = self.segment_id(n);
                entries.push(SegmentEntry::plain(id, tier));
                let real = plan.honeypots != Honeypots::False;
                truth.push(if real { Vote::Invalid } else { Vote::Valid });
                deps.push(Vec::new());
                ids.push(id);
                let mut h = self.claim(n, Vote::Invalid);
                if !real {
                    // The rubber-stamp rule needs a missed obvious error: a false honeypot
                    // claims to be one.
                    h.difficulty = Difficulty::Obvious;
                }
                claims.push(Some(h));
                set.push(n as u16);
                match plan.honeypots {
                    Honeypots::False => self.counts.attack("false-honeypot"),
                    Honeypots::NeverOpened => self.counts.attack("honeypot-set-never-opened"),
                    _ => {}
                }
            }
            Honeypots::Selective => {
                for (s, c) in claims.iter_mut().enumerate().take(n) {
                    let verdict = if truth[s].is_valid() {
                        Vote::Invalid
                    } else {
                        truth[s]
                    };
                    *c = Some(HoneypotOpening {
                        segment: s as u16,
                        verdict,
                        difficulty: Difficulty::Subtle,
                        salt: Salt(self.rng.r#gen()),
                    });
                }
            }
            Honeypots::WithConclusion => {
                claims[n - 1] = Some(self.claim(n - 1, Vote::Invalid));
                set.push((n - 1) as u16);
                self.counts.attack("honeypot-set-with-conclusion");
            }
            Honeypots::WithRestedOn => {
                claims[0] = Some(self.claim(0, Vote::Invalid));
                set.push(0);
                self.counts.attack("honeypot-set-with-rested-on-step");
            }
        }
        let p = &self.cfg.params;
        let f = &p.floors;
        let floor_k = f.min_k;
        let ceiling =
            crate::sessions::tau_ceiling(p, &SessionTerms::default()).map_or(p.min_tau, |(_, c)| c);
        let quorum = QuorumParams {
            k: floor_k,
            extra_seats: if plan.max_extra_seats {
                p.max_extra_seats
            } else {
                0
            },
            tau: if plan.tau_at_ceiling {
                ceiling
            } else {
                p.min_tau
            },
            beta: f.min_beta,
        };
        if plan.tau_at_ceiling {
            self.counts.attack("tau-ceiling");
        }
        if plan.re_braced {
            self.counts.attack("re-braced-proof");
        }
        let window = |w: u64| u16::try_from(w).unwrap_or(u16::MAX);
        let floor_commit = window(f.min_commit_window(tier));
        let floor_reveal = window(f.min_reveal_window(tier));
        let terms = SessionTerms {
            commit_window: if plan.commit_at_cap {
                window(f.max_commit_window(tier))
            } else {
                window(f.min_commit_window(tier))
            },
            reveal_window: window(f.min_reveal_window(tier)),
            domain_required: plan.late_expertise || plan.domain_at_floor,
            ..SessionTerms::default()
        };
        let domain = if plan.domain_at_floor {
            super::world::FLOOR_DOMAIN
        } else if plan.late_expertise {
            "geometry"
        } else {
            "math"
        };
        if plan.domain_at_floor {
            self.counts.attack("domain-pool-at-floor");
        }
        let (mut m, set_salt, mapping) =
            self.manifest(entries, &claims, &set, quorum, terms, domain, 1);
        if plan.max_extra_seats
            && let Err(crate::TxError::RacingSeatsUnappealable { most, .. }) =
                crate::check_terms(self.contract.state(), &self.actors[provider].id, &m)
        {
            // The most racing seats the network admits: more would let its seats reach a
            // verdict nobody could appeal, and the contract (as the node before it signs)
            // refuses that, naming how many it would take.
            m.quorum.extra_seats = most;
        }

        // The probe: the same session with one term under its floor.
        let mut bad = m.clone();
        bad.mapping_commitment = Hash::of_parts("adv-probe", &[m.mapping_commitment.as_ref()]);
        let ti = crate::Params::tier_index(tier);
        let (attack, breach) = match probe {
            Probe::K => {
                bad.quorum.k[ti] = floor_k[ti].saturating_sub(1);
                ("below-floor-terms", "below-floor-terms-accepted")
            }
            Probe::CommitWindow => {
                bad.terms.commit_window = floor_commit.saturating_sub(1);
                ("below-floor-terms", "below-floor-terms-accepted")
            }
            Probe::RevealWindow => {
                bad.terms.reveal_window = floor_reveal.saturating_sub(1);
                ("below-floor-terms", "below-floor-terms-accepted")
            }
            Probe::Beta => {
                bad.quorum.beta = Ppm(bad.quorum.beta.0.saturating_sub(1));
                ("below-floor-terms", "below-floor-terms-accepted")
            }
            Probe::PrivateDomain => {
                bad.domain = "private".into();
                bad.terms.domain_required = true;
                ("private-domain", "private-domain-accepted")
            }
            // Finding 1's veto: tau = 1, above any ceiling the network may set.
            Probe::TauAboveCeiling => {
                bad.quorum.tau = Ppm::ONE;
                ("tau-ceiling", "tau-above-ceiling-accepted")
            }
        };
        bad.fee = minimum_fee(&self.cfg.params, &bad).unwrap_or(0);
        self.counts.attack(attack);
        self.send(provider, Call::OpenSession(bad), Tag::MustRefuse(breach));

        if plan.late_expertise {
            // Its sybils declare the required domain in the block that opens the session,
            // to be in the pool the next block draws from.
            self.counts.attack("late-expertise");
            for s in self.actors_of(|k| k == Kind::Sybil(tier)) {
                self.send(
                    s,
                    Call::DeclareExpertise {
                        expertise: vec!["geometry".into(), "math".into(), "private".into()],
                    },
                    Tag::Plain,
                );
            }
            self.behave.cancels.push((next + 1, tier));
        }
        self.counts.attack("extreme-terms");
        // A session on a domain pool held at the floor is refused while the pool is under
        // it (the refusal names the floor, and the sybils bring their stake up to it).
        let tag = if plan.domain_at_floor {
            Tag::MayFail
        } else {
            Tag::Plain
        };
        let case = Case {
            provider,
            adversary: true,
            plan,
            truth,
            deps,
            ids,
            claims,
            set,
            set_salt,
            mapping,
            opened_at: 0,
            keys: BTreeMap::new(),
            disclosed: false,
            decided: false,
            watched: false,
            drawn_at: None,
            appellants: BTreeMap::new(),
        };
        self.opening.insert(m.mapping_commitment, case);
        self.send(provider, Call::OpenSession(m), tag);
    }

    /// The sybils of each tier bring the pool of [`super::world::FLOOR_DOMAIN`] up to
    /// the domain floor (once a refusal has named it) and no further: each block, while
    /// the pool's stake, declarations pending included, is under the floor, one more sybil
    /// declares it (it counts `expertise_delay` blocks later).
    fn declare_floor_domain(&mut self) {
        let Some(floor) = self.behave.domain_floor else {
            return;
        };
        let domain = super::world::FLOOR_DOMAIN;
        let st = self.contract.state();
        let mut out = Vec::new();
        for tier in Tier::ALL {
            let mut pool = 0u64;
            let mut next = None;
            for (id, a) in st
                .auditors
                .iter()
                .filter(|(_, a)| a.tier == tier && a.active)
            {
                let stake = st.accounts.get(id).map_or(0, |x| x.stake);
                let pending = a
                    .pending_expertise
                    .as_ref()
                    .is_some_and(|p| p.expertise.iter().any(|e| e == domain));
                if a.expertise.iter().any(|e| e == domain) || pending {
                    pool = pool.saturating_add(stake);
                } else if next.is_none() && a.pending_expertise.is_none() && self.is_sybil(id) {
                    let mut list = a.expertise.clone();
                    list.push(domain.to_string());
                    next = Some((*id, list));
                }
            }
            if pool >= floor {
                continue;
            }
            if let Some((id, list)) = next
                && let Some(&actor) = self.by_id.get(&id)
            {
                out.push((actor, list));
            }
        }
        for (actor, expertise) in out {
            self.send(actor, Call::DeclareExpertise { expertise }, Tag::MayFail);
        }
    }
}

/// The premises of `segment` of `session`.
fn c_deps(cases: &BTreeMap<Hash, Case>, session: &Hash, segment: u16) -> Vec<u16> {
    cases
        .get(session)
        .and_then(|c| c.deps.get(usize::from(segment)).cloned())
        .unwrap_or_default()
}
