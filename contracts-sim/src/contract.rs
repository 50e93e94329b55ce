//! The contract: `begin_block` to draw the seats due, `apply` one signed transaction,
//! `end_block` to move sessions through their phases, `state_root` to compare states
//! across nodes.
//!
//! The state root is the root of a Merkle tree over the state's entries
//! ([`crate::commitment`]). `begin_block`, `apply` and `end_block` name the entries they
//! may change; the end of each block writes just those to the tree, so a block's root costs
//! what the block did, not what the ledger holds.
//!
//! Phases of a session, all counted in blocks:
//!
//! 1. `Assigning`: opened at height `h`; at the start of block `h + 1`, before its
//!    transactions, seats are drawn with that block's seed ([`crate::assign`]), or at the
//!    start of a later block when the network is at capacity ([`crate::admission`]: the
//!    draw waits, in the order sessions were opened, and a session that waits past
//!    [`crate::Params::draw_patience`] fails, refunded). Nobody knows a block's seed
//!    before its proposer proves it, so the provider learns the seats from the block's
//!    events and its keys land in a later block (the next one when its delivery reaches
//!    that block's proposer in time).
//! 2. `Commit { round, until }`: seats commit; closes at `until` or as soon as every seat of
//!    the round has committed.
//! 3. `Reveal { round, until }`: committed seats reveal; the first `k` valid reveals per
//!    segment count (auditor racing); closes at `until` or when every committed seat has
//!    revealed. Then each segment of the round gets its own verdict; undecided segments of
//!    round 0 escalate once (next tier up when it has enough auditors, else the same tier
//!    with [`crate::params::Params::escalation_extra_seats`] more seats) and the session
//!    goes back to `Commit` for round 1.
//! 4. `Disclose { until }`: the provider opens its honeypots, then the mapping; closes at
//!    `until` or once the mapping is open.
//! 5. Tally ([`Contract::end_block`]): verdicts, propagation, trace quorum, failure bound,
//!    rewards, reputation, slashing, honeypot statistics, refund; the session becomes an
//!    [`Outcome`], and the session itself (with its seats) moves to
//!    [`State::appealable`].
//! 6. Appeals (see the `appeal` module): until [`crate::AppealRecord::until`] any account
//!    may appeal decided segments. An appeal takes the session back into the live
//!    sessions, `Assigning` then `Commit`/`Reveal` in round `2 + a` for its appeal `a`
//!    with `2k + 1` fresh seats; at the close of that reveal window the appealed segments
//!    are decided again, the outcome recomputed and the round recorded on it, and the
//!    session is appealable again for a new window. When a window passes with no appeal
//!    open the session is final ([`Contract::finality`], [`Event::SessionFinal`]): its
//!    live copy is dropped and its outcome never changes again. The outcome leaves the
//!    state [`crate::Params::outcome_retention`] blocks later ([`Event::OutcomeRetired`]):
//!    the blocks up to its final one prove it from then on.
//!
//! The tally never punishes a seat on the provider's word alone: a seat whose keys the
//! provider did not deliver in time (on record, see [`crate::Seat::keyed`]), or one of
//! whose keys it proved does not open (`ReportBadKey`), and that did not judge is
//! *starved*, neither slashed nor scored, and paid one reward from the
//! provider's escrow; a revealed honeypot whose seats contradict its truth by a clear
//! majority is *disputed*, its seats scored as for any segment, and one honeypot bond of
//! the provider burned; and a honeypot fewer than a quorum of whose seats judged (the
//! others starved or abstaining) scores its seats as any segment too, since they could not
//! have disputed it.
//!
//! Outcomes are never pruned (an outcome changes only through its appeals, until final):
//! they are what the ledger is for, a user proves one against a
//! certified state root, and each was paid for by its provider's fee.
//! Failures are: a session that could not be drawn was refunded, so nothing paid for its
//! record, which leaves the state [`crate::Params::failure_retention`] blocks after it.

use std::collections::BTreeMap;

use trust_protocol::{
    AccountId, Hash,
    tx::{Call, SignedTx, Tier, Tx},
};

use crate::{
    admission, appeal,
    assign::{self, Draw, exposure_cap, seat_picked},
    block::BlockCtx,
    commitment::{EntryProof, StateKey, Tree},
    error::TxError,
    events::Event,
    params::{Genesis, GenesisError, Params},
    registry, sessions,
    state::{
        Account, Failure, Finality, LocalVerdict, Outcome, Phase, STATE_CONFIG, SegmentState,
        Session, State, TraceVerdict,
    },
    tally, windows,
};

/// The audit contract.
#[derive(Debug, Clone)]
pub struct Contract {
    pub(crate) state: State,
    /// The commitment to `state`: a function of it, so equality looks at the state alone.
    pub(crate) tree: Tree,
}

impl PartialEq for Contract {
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
    }
}

impl Eq for Contract {}

/// Why a state snapshot could not be loaded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("state snapshot does not decode: {0}")]
pub struct SnapshotError(String);

impl Contract {
    /// The state at genesis.
    pub fn new(genesis: &Genesis) -> Result<Self, GenesisError> {
        genesis.params.validate()?;
        let mut accounts = BTreeMap::new();
        let mut supply = 0u64;
        for a in &genesis.accounts {
            let total = a
                .balance
                .checked_add(a.stake)
                .ok_or(GenesisError::SupplyOverflow)?;
            supply = supply
                .checked_add(total)
                .ok_or(GenesisError::SupplyOverflow)?;
            let prev = accounts.insert(
                a.id,
                Account {
                    nonce: 0,
                    balance: a.balance,
                    stake: a.stake,
                    unbonding: Vec::new(),
                    power: a.stake,
                    fees_paid: 0,
                    past: None,
                },
            );
            if prev.is_some() {
                return Err(GenesisError::DuplicateAccount(a.id));
            }
        }
        let mut auditors = BTreeMap::new();
        for a in &genesis.auditors {
            let Some(account) = accounts.get(&a.id) else {
                return Err(GenesisError::BadAuditor(a.id));
            };
            if auditors.contains_key(&a.id) {
                return Err(GenesisError::BadAuditor(a.id));
            }
            // Genesis auditors bond like any registration.
            if account.stake < genesis.params.min_stake(a.tier) {
                return Err(GenesisError::UnderStakedAuditor(a.id));
            }
            let mut expertise = a.expertise.clone();
            expertise.sort();
            expertise.dedup();
            let mut auditor =
                registry::new_auditor(&genesis.params, a.tier, expertise, a.sealing_key);
            // Genesis stake counts in draws from the start.
            auditor.draw_stake = account.stake;
            auditors.insert(a.id, auditor);
        }
        Ok(Self::from_state(State {
            chain: Hash::ZERO,
            params: genesis.params.clone(),
            height: 0,
            accounts: accounts.into_iter().collect(),
            auditors: auditors.into_iter().collect(),
            sessions: Default::default(),
            outcomes: Default::default(),
            appealable: Default::default(),
            failed: Default::default(),
            burned: 0,
            supply,
            eligible: Default::default(),
            seated: Default::default(),
            standing_due: Default::default(),
            power_due: Default::default(),
            failed_due: Default::default(),
            outcomes_due: Default::default(),
            judging: Default::default(),
        }))
    }

    /// The contract of the network whose genesis document hashes to `chain`: transactions
    /// must be signed for it ([`trust_protocol::Signed::sign`]). The tree is built anew
    /// (O(state), once, at genesis).
    pub fn with_chain(mut self, chain: Hash) -> Self {
        self.state.chain = chain;
        Self::from_state(self.state)
    }

    /// The chain id transactions are signed for.
    pub fn chain_id(&self) -> Hash {
        self.state.chain
    }

    /// A contract over a given state, its tree built from scratch (O(state)). This is what
    /// a restore does; it gives the root of the contract that produced the state.
    pub fn from_state(mut state: State) -> Self {
        registry::reindex_all(&mut state);
        let tree = Tree::build(&state);
        Self { state, tree }
    }

    /// The whole state (read only).
    pub fn state(&self) -> &State {
        &self.state
    }

    /// The root of the Merkle tree over the state's entries ([`crate::commitment`]).
    ///
    /// After [`Contract::end_block`] this is the committed root, read in O(1). Between
    /// transactions of a block it is computed from the entries touched so far, without
    /// writing them.
    pub fn state_root(&self) -> Hash {
        self.tree.root(&self.state)
    }

    /// The canonical encoding of one state entry (`None` when absent) and its Merkle proof
    /// against [`Contract::state_root`]; `None` while the current block is not ended (its
    /// changes are not in the tree yet).
    pub fn prove(&self, key: &StateKey) -> Option<(Option<Vec<u8>>, EntryProof)> {
        if self.tree.has_pending() {
            return None;
        }
        self.tree.prove(&self.state, key)
    }

    /// Number of tree nodes held in memory: one tree version, O(entries).
    pub fn tree_nodes(&self) -> usize {
        self.tree.node_count()
    }

    /// The state as snapshot bytes.
    pub fn snapshot(&self) -> Vec<u8> {
        bincode::serde::encode_to_vec(&self.state, STATE_CONFIG).unwrap_or_default()
    }

    /// Restores a snapshot taken by [`Contract::snapshot`].
    pub fn from_snapshot(bytes: &[u8]) -> Result<Self, SnapshotError> {
        let (state, used): (State, usize) = bincode::serde::decode_from_slice(bytes, STATE_CONFIG)
            .map_err(|e| SnapshotError(e.to_string()))?;
        if used != bytes.len() {
            return Err(SnapshotError("trailing bytes".into()));
        }
        Ok(Self::from_state(state))
    }

    /// The next nonce of an account.
    pub fn nonce(&self, who: &AccountId) -> u64 {
        self.state.accounts.get(who).map_or(0, |a| a.nonce)
    }

    /// Applies one transaction. On error nothing changes, the nonce included.
    pub fn apply(&mut self, ctx: &BlockCtx, tx: &SignedTx) -> Result<Vec<Event>, TxError> {
        tx.verify(&self.state.chain)
            .map_err(|_| TxError::BadSignature)?;
        self.apply_verified(ctx, tx.signer, &tx.body)
    }

    /// Applies a transaction whose signature the caller has already checked (a node
    /// verifies once at the mempool and again when executing a proposal on a copy).
    pub fn apply_verified(
        &mut self,
        ctx: &BlockCtx,
        sender: AccountId,
        tx: &Tx,
    ) -> Result<Vec<Event>, TxError> {
        tx.validate()?;
        let expected = self.nonce(&sender);
        if tx.nonce != expected {
            return Err(TxError::BadNonce {
                expected,
                got: tx.nonce,
            });
        }
        let next = expected.checked_add(1).ok_or(TxError::Overflow)?;
        touched_by(&mut self.tree, sender, tx);
        let st = &mut self.state;
        let h = ctx.height;
        let mut ev = Vec::new();
        match &tx.call {
            Call::Transfer { to, amount } => registry::transfer(st, sender, *to, *amount, &mut ev),
            Call::RegisterAuditor {
                tier,
                expertise,
                sealing_key,
                stake,
            } => registry::register(
                st,
                sender,
                *tier,
                expertise,
                *sealing_key,
                *stake,
                h,
                &mut ev,
            ),
            Call::Bond { amount } => registry::bond(st, sender, *amount, h, &mut ev),
            Call::Unbond { amount } => registry::unbond(st, sender, *amount, h, &mut ev),
            Call::Withdraw => registry::withdraw(st, sender, h, &mut ev),
            Call::Exit => registry::exit(st, sender, h, &mut ev),
            Call::OpenSession(m) => {
                let id = Tx::session_id(&sender, tx.nonce);
                sessions::open(st, sender, id, m, h, &mut ev)
            }
            Call::DeliverKeys { session, keys } => {
                sessions::deliver_keys(st, sender, *session, keys, h, &mut ev)
            }
            Call::Commit {
                session,
                segment,
                commitment,
            } => sessions::commit(st, sender, *session, *segment, *commitment, h, &mut ev),
            Call::Reveal {
                session,
                segment,
                vote,
                salt,
                reason,
            } => sessions::reveal(
                st,
                sender,
                sessions::Opening {
                    session: *session,
                    segment: *segment,
                    vote: *vote,
                    salt,
                    reason,
                },
                &mut ev,
            ),
            Call::Commits { session, entries } => {
                sessions::batch_seated(st, &sender, entries.iter().map(|e| (*session, e.segment)))
                    .and_then(|()| {
                        sessions::each_vote(
                            sender,
                            entries,
                            |e| (*session, e.segment),
                            |e, ev| {
                                sessions::commit(
                                    st,
                                    sender,
                                    *session,
                                    e.segment,
                                    e.commitment,
                                    h,
                                    ev,
                                )
                            },
                            &mut ev,
                        )
                    })
            }
            Call::Reveals { session, entries } => {
                sessions::batch_seated(st, &sender, entries.iter().map(|e| (*session, e.segment)))
                    .and_then(|()| {
                        sessions::each_vote(
                            sender,
                            entries,
                            |e| (*session, e.segment),
                            |e, ev| {
                                sessions::reveal(
                                    st,
                                    sender,
                                    sessions::Opening {
                                        session: *session,
                                        segment: e.segment,
                                        vote: e.vote,
                                        salt: &e.salt,
                                        reason: &e.reason,
                                    },
                                    ev,
                                )
                            },
                            &mut ev,
                        )
                    })
            }
            Call::RevealMapping {
                session,
                mapping,
                salt,
            } => sessions::reveal_mapping(st, sender, *session, *mapping, salt, &mut ev),
            // Honeypots are opened as the committed set, never one by one.
            Call::RevealHoneypot { .. } => Err(TxError::HoneypotSetRequired),
            Call::Appeal { session, segments } => {
                appeal::appeal(st, sender, *session, segments, h, &mut ev)
            }
            Call::RevealHoneypots {
                session,
                openings,
                set_salt,
            } => sessions::reveal_honeypot_set(st, sender, *session, openings, set_salt, &mut ev),
            Call::DeclareExpertise { expertise } => {
                registry::declare_expertise(st, sender, expertise, h, &mut ev)
            }
            Call::Pause => registry::ask_pause(st, sender, true, h, &mut ev),
            Call::Resume => registry::ask_pause(st, sender, false, h, &mut ev),
            Call::ReportBadKey {
                session,
                segment,
                keys,
                bad,
                shared,
                proof,
            } => sessions::report_bad_key(
                st,
                sender,
                &sessions::BadKeyReport {
                    session: *session,
                    segment: *segment,
                    keys,
                    bad: *bad,
                    shared,
                    proof,
                },
                h,
                &mut ev,
            ),
            // Each entry as its single call would apply, in the order `unbatched` gives:
            // group by group, the commitments before the openings.
            Call::Votes { groups } => {
                let entries: Vec<(Hash, sessions::VoteEntry<'_>)> = groups
                    .iter()
                    .flat_map(|g| {
                        let commits = g
                            .commits
                            .iter()
                            .map(|e| (g.session, sessions::VoteEntry::Commit(e)));
                        let reveals = g
                            .reveals
                            .iter()
                            .map(|e| (g.session, sessions::VoteEntry::Reveal(e)));
                        commits.chain(reveals)
                    })
                    .collect();
                sessions::batch_seated(
                    st,
                    &sender,
                    entries.iter().map(|(s, e)| (*s, e.segment())),
                )?;
                sessions::each_vote(
                    sender,
                    &entries,
                    |(session, e)| (*session, e.segment()),
                    |(session, e), ev| match e {
                        sessions::VoteEntry::Commit(c) => {
                            sessions::commit(st, sender, *session, c.segment, c.commitment, h, ev)
                        }
                        sessions::VoteEntry::Reveal(r) => sessions::reveal(
                            st,
                            sender,
                            sessions::Opening {
                                session: *session,
                                segment: r.segment,
                                vote: r.vote,
                                salt: &r.salt,
                                reason: &r.reason,
                            },
                            ev,
                        ),
                    },
                    &mut ev,
                )
            }
        }?;
        self.state.accounts.entry(sender).or_default().nonce = next;
        Ok(ev)
    }

    /// Begins a block, before its transactions: draws the round-0 seats of every session
    /// opened in an earlier block.
    ///
    /// Why here and not at the end of the block: the draw then depends only on the state
    /// the parent block left and on this block's seed. The block's proposer knows that
    /// seed while it picks the block's transactions (the seed is its VRF output over the
    /// parent's seed), but no transaction of the drawing block (a bond, a registration it
    /// chose) can sway a draw made before them. Nobody else knows the seed before the block
    /// exists, so the provider seals the keys to the seats after the draw, in a later
    /// block.
    pub fn begin_block(&mut self, ctx: &BlockCtx) -> Vec<Event> {
        let mut ev = Vec::new();
        // Expertise declared, pauses and resumes asked, and stake bonded or unbonded,
        // `expertise_delay` blocks ago count from this block's draws; auditor entries due
        // for removal leave the state.
        for (who, change) in registry::apply_standing(&mut self.state, ctx.height) {
            self.tree.touch(StateKey::Auditor(who));
            match change {
                registry::StandingChange::Expertise => {
                    if let Some(a) = self.state.auditors.get(&who) {
                        ev.push(Event::ExpertiseChanged {
                            account: who,
                            expertise: a.expertise.clone(),
                        });
                    }
                }
                registry::StandingChange::Pause(paused) => {
                    ev.push(Event::PauseChanged {
                        account: who,
                        paused,
                    });
                }
                registry::StandingChange::Stake(draw_stake) => {
                    ev.push(Event::DrawStakeChanged {
                        account: who,
                        draw_stake,
                    });
                }
                registry::StandingChange::Retired(paid) => {
                    self.tree.touch(StateKey::Account(who));
                    if paid > 0 {
                        ev.push(Event::Withdrawn {
                            account: who,
                            amount: paid,
                        });
                    }
                    ev.push(Event::AuditorRetired { account: who });
                }
                registry::StandingChange::RetireChecked => {}
            }
        }
        // Appeal panels, like round-0 seats, are drawn at the start of a block after the
        // one that made them due, from the parent's state: the proposer that knows this
        // block's seed cannot change whom the draw reads by choosing this block's
        // transactions (bonds, registrations).
        let appeals: Vec<Hash> = self
            .state
            .sessions
            .iter()
            .filter(|(_, s)| matches!(s.phase, Phase::Assigning) && appeal::draw_due(s, ctx.height))
            .map(|(id, _)| *id)
            .collect();
        for id in appeals {
            let Some(mut s) = self.state.sessions.remove(&id) else {
                continue;
            };
            let next = match appeal::draw_seats(&self.state, ctx, &id, &mut s, &mut ev) {
                Ok(round) => {
                    let p = &self.state.params;
                    s.phase = Phase::Commit {
                        round,
                        until: ctx
                            .height
                            .saturating_add(windows::commit_window(p, &s, round)),
                    };
                    Next::Keep
                }
                Err(reason) => Next::AppealCancelled(reason),
            };
            self.settle(ctx, id, s, Phase::Assigning, next, &mut ev);
        }
        self.draw_escalations(ctx, &mut ev);
        // Due sessions in the order they were opened; none past the first that does not
        // fit the network's capacity ([`crate::admission`]).
        let mut due: Vec<(u64, Hash)> = self
            .state
            .sessions
            .iter()
            .filter(|(_, s)| draw_due(s, ctx.height))
            .map(|(id, s)| (s.opened_at, *id))
            .collect();
        due.sort_unstable();
        let mut capacity = None;
        for (opened_at, id) in due {
            let Some(s) = self.state.sessions.get(&id) else {
                continue;
            };
            let need = admission::round0_seats(s);
            let cap = *capacity.get_or_insert_with(|| admission::capacity(&self.state));
            let refusing = admission::refusing_tier(&self.state.judging, &need, &cap);
            let waited = ctx.height.saturating_sub(opened_at.saturating_add(1));
            let patient = waited < self.state.params.draw_patience;
            if let (Some((tier, judging, capacity)), true) = (refusing, patient) {
                ev.push(Event::SessionDeferred {
                    session: id,
                    tier,
                    judging,
                    capacity,
                });
                break;
            }
            let Some(mut s) = self.state.sessions.remove(&id) else {
                continue;
            };
            let next = match refusing {
                Some(_) => Next::Fail(format!(
                    "not admitted: the network stayed at capacity for {waited} blocks"
                )),
                None => match assign_round0(&self.state, ctx, &id, &mut s, &mut ev) {
                    Ok(()) => {
                        let p = &self.state.params;
                        s.phase = Phase::Commit {
                            round: 0,
                            until: ctx.height.saturating_add(windows::commit_window(p, &s, 0)),
                        };
                        s.drawn_at = ctx.height;
                        Next::Keep
                    }
                    Err(reason) => Next::Fail(reason.to_string()),
                },
            };
            self.settle(ctx, id, s, Phase::Assigning, next, &mut ev);
        }
        self.record_seats(&ev);
        ev
    }

    /// Records every seat `events` assigned in the index of who sits in which session.
    fn record_seats(&mut self, events: &[Event]) {
        for (session, _, seat, _) in events.iter().filter_map(Event::seat_assigned) {
            registry::seat_in(&mut self.state, seat, session);
        }
    }

    /// Moves every account whose stake changed in this block (or whose voting power is
    /// still above its stake) one step: power rises to the stake at once, and falls towards
    /// it by at most [`crate::Params::max_power_cut`] of itself per block.
    fn follow_power(&mut self) {
        let cut = self.state.params.max_power_cut;
        let due = std::mem::take(&mut self.state.power_due);
        for id in due {
            let Some(a) = self.state.accounts.get_mut(&id) else {
                continue;
            };
            let next = if a.stake >= a.power {
                a.stake
            } else {
                let drop = cut.ceil_mul(a.power).max(1);
                a.power.saturating_sub(drop).max(a.stake)
            };
            if next != a.power {
                a.power = next;
                self.tree.touch(StateKey::Account(id));
            }
            if a.power > a.stake {
                self.state.power_due.insert(id);
            }
        }
    }

    /// Per tier (Computer, LLM, Human): the seats in a commit window now and the
    /// capacity a round-0 draw is admitted against ([`crate::admission`]). Reads each
    /// tier's eligible set once.
    pub fn admission(&self) -> ([u64; 3], [u64; 3]) {
        (self.state.judging, admission::capacity(&self.state))
    }

    /// The voting power of an account as a validator ([`crate::Account::power`]).
    pub fn voting_power(&self, who: &AccountId) -> u64 {
        self.state.accounts.get(who).map_or(0, |a| a.power)
    }

    /// Ends a block: moves every live session whose window closed to its next phase, then
    /// brings the state's Merkle tree up to date ([`Contract::end_block_rules`], then
    /// [`Contract::commit_tree`]).
    pub fn end_block(&mut self, ctx: &BlockCtx) -> Vec<Event> {
        let ev = self.end_block_rules(ctx);
        self.commit_tree();
        ev
    }

    /// [`Contract::end_block`] but for the tree: the block's rules alone. The caller then
    /// calls [`Contract::commit_tree`] before it reads the state root (a node that profiles
    /// the two apart, `trust_node::cpu`).
    pub fn end_block_rules(&mut self, ctx: &BlockCtx) -> Vec<Event> {
        let mut ev = Vec::new();
        let ids: Vec<Hash> = self.state.sessions.keys().copied().collect();
        for id in ids {
            let Some(mut s) = self.state.sessions.remove(&id) else {
                continue;
            };
            let phase = s.phase;
            let next = self.advance(ctx, &id, &mut s, &mut ev);
            self.settle(ctx, id, s, phase, next, &mut ev);
        }
        self.lapse_holds(ctx.height);
        self.finalize(ctx, &mut ev);
        self.forget_failures(ctx);
        self.retire_outcomes(ctx, &mut ev);
        self.record_seats(&ev);
        self.follow_power();
        self.state.height = ctx.height;
        self.tree.touch(StateKey::Global);
        ev
    }

    /// Writes every state entry touched since the last commit into the Merkle tree: what
    /// [`Contract::state_root`] and [`Contract::prove`] read.
    pub fn commit_tree(&mut self) {
        self.tree.commit(&self.state);
    }

    /// The seats whose hold on capacity ends with the block at `height` (the key deadline
    /// of their round, for seats not keyed; the time an honest seat needs after it, for
    /// keyed seats that have not committed: [`admission::hold_ends`]) leave the count, so
    /// that it says what holds during the next block. One cheap test per live session; a
    /// count of its seats only for a session whose hold ends now.
    fn lapse_holds(&mut self, height: u64) {
        let next = height.saturating_add(1);
        let p = &self.state.params;
        let mut judging = self.state.judging;
        for s in self.state.sessions.values() {
            if admission::hold_ends_at(p, s, s.phase, height) {
                let before = admission::judging_seats(p, s, s.phase, height);
                let after = admission::judging_seats(p, s, s.phase, next);
                admission::shift(&mut judging, &before, &after);
            }
        }
        self.state.judging = judging;
    }

    /// Puts session `id`, taken out of the live set in `phase` and stepped to `next`, where
    /// `next` says: back in the live set, failed and refunded, tallied, or its appeal round
    /// ended.
    fn settle(
        &mut self,
        ctx: &BlockCtx,
        id: Hash,
        s: Session,
        phase: Phase,
        next: Next,
        ev: &mut Vec<Event>,
    ) {
        // The seats being judged: those of the phase left out, those of the phase entered in.
        let stays = matches!(next, Next::Keep);
        if !stays || s.phase != phase {
            let p = &self.state.params;
            let before = admission::judging_seats(p, &s, phase, ctx.height);
            let after = if stays {
                admission::judging_seats(p, &s, s.phase, ctx.height)
            } else {
                [0; 3]
            };
            admission::shift(&mut self.state.judging, &before, &after);
        }
        match next {
            Next::Keep => {
                // `advance` changes a session only when it moves it to another phase.
                if s.phase != phase {
                    self.tree.touch(StateKey::Session(id));
                }
                self.state.sessions.insert(id, s);
            }
            Next::Fail(reason) => {
                self.tree.touch(StateKey::Session(id));
                self.tree.touch(StateKey::Failed(id));
                self.tree.touch(StateKey::Account(s.provider));
                registry::release_seats(&mut self.state, &id, &s);
                let refund = s.escrow.saturating_add(s.bond);
                registry::credit(&mut self.state, &s.provider, refund);
                ev.push(Event::Refunded {
                    session: id,
                    provider: s.provider,
                    amount: refund,
                });
                ev.push(Event::SessionFailed {
                    session: id,
                    reason: reason.clone(),
                });
                self.state.failed.insert(
                    id,
                    Failure {
                        at: ctx.height,
                        reason,
                    },
                );
                let due = ctx
                    .height
                    .saturating_add(self.state.params.failure_retention);
                self.state.failed_due.entry(due).or_default().insert(id);
            }
            Next::Tally => {
                // The tally pays, slashes and scores every seat and refunds the provider.
                self.tree.touch(StateKey::Session(id));
                self.tree.touch(StateKey::Outcome(id));
                self.tree.touch(StateKey::Account(s.provider));
                for seat in s.segments.iter().flat_map(|g| g.seats.iter()) {
                    self.tree.touch(StateKey::Account(seat.account));
                    self.tree.touch(StateKey::Auditor(seat.account));
                }
                // The session stays, with its seats, until it is final: an appeal
                // draws fresh seats against them and slashes those it overturns.
                let mut kept = s;
                let outcome = tally::tally(&mut self.state, ctx, &id, &mut kept, ev);
                self.state.outcomes.insert(id, outcome);
                kept.escrow = 0;
                kept.bond = 0;
                self.tree.touch(StateKey::Appealable(id));
                self.state.appealable.insert(id, kept);
            }
            Next::AppealDecided => {
                self.touch_appeal(&id, &s);
                for a in appeal::decision_accounts(&s) {
                    self.tree.touch(StateKey::Account(a));
                    self.tree.touch(StateKey::Auditor(a));
                }
                appeal::decide(&mut self.state, ctx, &id, s, ev);
            }
            Next::AppealCancelled(reason) => {
                self.touch_appeal(&id, &s);
                for a in appeal::decision_accounts(&s) {
                    self.tree.touch(StateKey::Account(a));
                }
                appeal::cancel(&mut self.state, &id, s, reason, ctx.height, ev);
            }
        }
    }

    /// Touches what ending an appeal round (decided or cancelled) changes besides seats.
    fn touch_appeal(&mut self, id: &Hash, s: &Session) {
        self.tree.touch(StateKey::Session(*id));
        self.tree.touch(StateKey::Appealable(*id));
        self.tree.touch(StateKey::Outcome(*id));
        if let Some(a) = &s.appeal {
            self.tree.touch(StateKey::Account(a.appellant));
        }
    }

    /// Makes final every decided session whose appeal window has passed with no appeal
    /// open (an open appeal's session is live, not appealable): its live copy is dropped.
    fn finalize(&mut self, ctx: &BlockCtx, ev: &mut Vec<Event>) {
        let st = &self.state;
        let due: Vec<Hash> = st
            .appealable
            .keys()
            .filter(|id| {
                st.outcomes
                    .get(*id)
                    .is_none_or(|o| o.appeals.until <= ctx.height)
            })
            .copied()
            .collect();
        for id in due {
            if let Some(mut s) = self.state.appealable.remove(&id) {
                // The overturns that stood answer for the verdicts they replaced now, and
                // only now: before this block an appeal could still take them back.
                if let Some(mut o) = self.state.outcomes.remove(&id) {
                    for a in appeal::settle_final(&mut self.state, &id, &mut s, &mut o, ev) {
                        self.tree.touch(StateKey::Account(a));
                        self.tree.touch(StateKey::Auditor(a));
                    }
                    self.state.outcomes.insert(id, o);
                }
                registry::release_seats(&mut self.state, &id, &s);
            }
            self.tree.touch(StateKey::Appealable(id));
            self.tree.touch(StateKey::Outcome(id));
            if let Some(o) = self.state.outcomes.get_mut(&id) {
                o.appeals.final_at = Some(ctx.height);
                let due = ctx
                    .height
                    .saturating_add(self.state.params.outcome_retention);
                self.state.outcomes_due.entry(due).or_default().insert(id);
            }
            ev.push(Event::SessionFinal { session: id });
        }
    }

    /// Drops the final outcomes whose retention ends with this block
    /// ([`crate::Params::outcome_retention`]): reads only those, through the index by
    /// height. A final outcome never changes again, so the blocks up to its final one
    /// prove it for good.
    fn retire_outcomes(&mut self, ctx: &BlockCtx, ev: &mut Vec<Event>) {
        for id in take_due(&mut self.state.outcomes_due, ctx.height) {
            let Some(o) = self.state.outcomes.remove(&id) else {
                continue;
            };
            self.tree.touch(StateKey::Outcome(id));
            ev.push(Event::OutcomeRetired {
                session: id,
                final_at: o.appeals.final_at.unwrap_or(ctx.height),
            });
        }
    }

    /// Drops the failures whose retention ends with this block
    /// ([`crate::Params::failure_retention`]): reads only those, through the index by
    /// height.
    fn forget_failures(&mut self, ctx: &BlockCtx) {
        for id in take_due(&mut self.state.failed_due, ctx.height) {
            self.state.failed.remove(&id);
            self.tree.touch(StateKey::Failed(id));
        }
    }

    fn advance(&self, ctx: &BlockCtx, id: &Hash, s: &mut Session, ev: &mut Vec<Event>) -> Next {
        let h = ctx.height;
        let p = &self.state.params;
        match s.phase {
            Phase::Commit { round, until } if h >= until || all_committed(s, round) => {
                let reveal_until = h.saturating_add(windows::reveal_window(p, s, round));
                s.phase = Phase::Reveal {
                    round,
                    until: reveal_until,
                };
                ev.push(Event::CommitWindowClosed {
                    session: *id,
                    round,
                    reveal_until,
                });
                Next::Keep
            }
            Phase::Reveal { round, until }
                if round >= appeal::APPEAL_ROUND0
                    && (h >= until || tally::all_revealed(s, round)) =>
            {
                ev.push(Event::RevealWindowClosed {
                    session: *id,
                    round,
                });
                Next::AppealDecided
            }
            Phase::Reveal { round, until } if h >= until || tally::all_revealed(s, round) => {
                ev.push(Event::RevealWindowClosed {
                    session: *id,
                    round,
                });
                let mut undecided = Vec::new();
                for (i, seg) in s.segments.iter_mut().enumerate() {
                    if !seg.seats.iter().any(|x| x.round == round) {
                        continue;
                    }
                    let counts = tally::round_counts(seg, round);
                    let q = tally::round_quorum(s.manifest.quorum.tau, seg.k, &counts);
                    let v = tally::local_verdict(&counts, q);
                    seg.rounds.push(v);
                    if v == LocalVerdict::Undecided {
                        undecided.push((i, tally::abstained(&counts, q)));
                    }
                }
                if round == 0 && self.may_escalate(s, &undecided) {
                    // The escalation's seats are drawn at the start of the next block, from
                    // the state this block leaves ([`Contract::draw_escalations`]): until
                    // then the session waits in round 1's commit phase with no seats.
                    s.phase = Phase::Commit {
                        round: 1,
                        until: h
                            .saturating_add(1)
                            .saturating_add(windows::commit_window(p, s, 1)),
                    };
                } else if all_disclosed(s) {
                    // The provider opened its mapping during the reveal window (it had no
                    // honeypot to open): nothing is left to wait for.
                    return Next::Tally;
                } else {
                    s.phase = Phase::Disclose {
                        until: h.saturating_add(p.disclose_window),
                    };
                }
                Next::Keep
            }
            Phase::Disclose { until } if h >= until || all_disclosed(s) => Next::Tally,
            _ => Next::Keep,
        }
    }

    /// Whether an escalation of the `undecided` segments of `s` may find seats: some
    /// segment has a tier to go to with eligible auditors (a higher one the terms allow,
    /// or its own when its seats split rather than abstained). Only whether the draw is
    /// tried depends on it; whom it draws is read at the start of the next block.
    fn may_escalate(&self, s: &Session, undecided: &[(usize, bool)]) -> bool {
        undecided.iter().any(|&(i, abstained)| {
            let Some(seg) = s.segments.get(i) else {
                return false;
            };
            let options = escalation_options(&self.state, s, seg, abstained);
            let extra = s.manifest.quorum.extra_seats;
            options.into_iter().any(|(t, k)| {
                let fresh = self
                    .state
                    .eligible(t)
                    .iter()
                    .filter(|a| **a != s.provider && !seg.seats.iter().any(|x| x.account == **a))
                    .count();
                fresh >= usize::from(k.saturating_add(extra))
            })
        })
    }

    /// Draws the seats of every escalation that the end of the parent block made due (a
    /// session in round 1's commit phase whose segments have no round-1 seat yet), from
    /// the state that block left and with this block's seed: the proposer of this block
    /// cannot steer whom it draws by choosing the block's transactions. A session whose
    /// segments find no seats goes on to its disclosure (or its tally) as it would have.
    fn draw_escalations(&mut self, ctx: &BlockCtx, ev: &mut Vec<Event>) {
        let due: Vec<Hash> = self
            .state
            .sessions
            .iter()
            .filter(|(_, s)| escalation_due(s))
            .map(|(id, _)| *id)
            .collect();
        for id in due {
            let Some(mut s) = self.state.sessions.remove(&id) else {
                continue;
            };
            let undecided = round0_undecided(&s);
            let p = &self.state.params;
            let next = if self.escalate(ctx, &id, &mut s, &undecided, ev) {
                s.phase = Phase::Commit {
                    round: 1,
                    until: ctx.height.saturating_add(windows::commit_window(p, &s, 1)),
                };
                Next::Keep
            } else if all_disclosed(&s) {
                Next::Tally
            } else {
                s.phase = Phase::Disclose {
                    until: ctx.height.saturating_add(p.disclose_window),
                };
                Next::Keep
            };
            // Nothing of round 1 was being judged before this draw.
            self.settle(ctx, id, s, Phase::Assigning, next, ev);
        }
    }

    /// Draws round-1 seats for undecided segments; true when any segment escalated.
    ///
    /// A segment goes to the next tier up that has enough auditors. One whose seats split
    /// may instead get more seats of its own tier; one whose seats abstained may not (the
    /// same kind of judge would abstain again), so with no higher tier staffed it stays
    /// Undecided.
    fn escalate(
        &self,
        ctx: &BlockCtx,
        id: &Hash,
        s: &mut Session,
        undecided: &[(usize, bool)],
        ev: &mut Vec<Event>,
    ) -> bool {
        let held = BTreeMap::new();
        let budget_cap = exposure_cap(s);
        let mut covered = assign::coverage(s);
        let mut any = false;
        for &(i, abstained) in undecided {
            let Some(seg) = s.segments.get(i) else {
                continue;
            };
            let segment = u16::try_from(i).unwrap_or(u16::MAX);
            let exclude: Vec<AccountId> = seg.seats.iter().map(|x| x.account).collect();
            let options = escalation_options(&self.state, s, seg, abstained);
            let keys = assign::keys_of(s, i);
            let mut chosen = None;
            for (tier, k) in options {
                // An escalation keeps a required domain only in a tier where it counts;
                // elsewhere it draws from the whole tier.
                let counts =
                    sessions::domain_counts(&self.state, tier, &s.manifest.domain, &s.provider);
                let d = Draw {
                    seed: &ctx.block_hash,
                    session: id,
                    provider: &s.provider,
                    segment,
                    round: 1,
                    tier,
                    domain: if counts { &s.manifest.domain } else { "" },
                    domain_required: s.manifest.terms.domain_required && counts,
                    seats: k.saturating_add(s.manifest.quorum.extra_seats),
                    exclude: &exclude,
                    held: &held,
                    cap: None,
                    budget: budget_cap.map(|cap| assign::Budget {
                        covered: &covered,
                        keys: &keys,
                        cap,
                    }),
                };
                if let Some(picked) = assign::draw(&self.state, &d) {
                    chosen = Some((tier, k, picked));
                    break;
                }
            }
            let Some((tier, k, picked)) = chosen else {
                continue;
            };
            let Some(seg) = s.segments.get_mut(i) else {
                continue;
            };
            seg.tier = tier;
            seg.k = k;
            ev.push(Event::SegmentEscalated {
                session: *id,
                segment,
                tier,
            });
            for account in &picked {
                assign::cover(&mut covered, *account, &keys);
            }
            seat_picked(id, segment, 1, tier, &mut seg.seats, picked, ev);
            any = true;
        }
        any
    }

    /// Sum of every balance, stake, unbonding, escrow and burned amount; always equals the
    /// genesis supply (rewards come out of escrow, slashes are burned).
    pub fn accounted_supply(&self) -> u128 {
        let st = &self.state;
        let mut total = u128::from(st.burned);
        for a in st.accounts.values() {
            total = total
                .saturating_add(u128::from(a.balance))
                .saturating_add(u128::from(a.stake));
            for u in &a.unbonding {
                total = total.saturating_add(u128::from(u.amount));
            }
        }
        for s in st.sessions.values().chain(st.appealable.values()) {
            total = total
                .saturating_add(u128::from(s.escrow))
                .saturating_add(u128::from(s.bond))
                .saturating_add(u128::from(s.appeal.as_ref().map_or(0, |a| a.bond)));
            for q in &s.queued {
                total = total.saturating_add(u128::from(q.bond()));
            }
        }
        total
    }

    /// The trace verdict of a decided session.
    pub fn outcome(&self, session: &Hash) -> Option<&Outcome> {
        self.state.outcomes.get(session)
    }

    /// Where a decided session stands with respect to appeals: `Final` once its appeal
    /// window passed with no appeal open, `Appealing` while an appeal round runs,
    /// `Appealable` until then; `None` for a session not decided (live, failed, unknown).
    pub fn finality(&self, session: &Hash) -> Option<Finality> {
        self.outcome(session).map(Outcome::finality)
    }

    /// Whether a session is decided with a passing trace.
    pub fn passed(&self, session: &Hash) -> Option<bool> {
        self.outcome(session).map(|o| o.trace == TraceVerdict::Pass)
    }
}

/// The entries a transaction may change: the sender's account (nonce, balance, stake) and
/// registry entry, a transfer's recipient, and the session it names or opens.
///
/// A commitment and a transfer change no registry entry (a commitment only its seat and
/// the sender's nonce, `sessions::commit`; a transfer only balances), so they leave the
/// sender's out: every touched entry rewrites its path in the tree, and commitments are
/// half of all vote traffic. (Touching more than changes costs time, never correctness;
/// touching less would leave the root behind, which the state-root checks against a
/// rebuilt tree catch.)
fn touched_by(tree: &mut Tree, sender: AccountId, tx: &Tx) {
    tree.touch(StateKey::Account(sender));
    if !matches!(
        tx.call,
        Call::Commit { .. } | Call::Commits { .. } | Call::Transfer { .. }
    ) {
        tree.touch(StateKey::Auditor(sender));
    }
    match &tx.call {
        Call::Transfer { to, .. } => tree.touch(StateKey::Account(*to)),
        Call::RegisterAuditor { .. }
        | Call::Bond { .. }
        | Call::Unbond { .. }
        | Call::Withdraw
        | Call::Exit
        | Call::DeclareExpertise { .. }
        | Call::Pause
        | Call::Resume => {}
        Call::OpenSession(_) => tree.touch(StateKey::Session(Tx::session_id(&sender, tx.nonce))),
        Call::DeliverKeys { session, .. }
        | Call::Commit { session, .. }
        | Call::Reveal { session, .. }
        | Call::Commits { session, .. }
        | Call::Reveals { session, .. }
        | Call::RevealMapping { session, .. }
        | Call::RevealHoneypot { session, .. }
        | Call::RevealHoneypots { session, .. }
        | Call::ReportBadKey { session, .. } => tree.touch(StateKey::Session(*session)),
        Call::Votes { groups } => {
            for g in groups {
                tree.touch(StateKey::Session(g.session));
            }
        }
        // An appeal moves the session from `appealable` back to the live sessions and
        // marks its outcome.
        Call::Appeal { session, .. } => {
            tree.touch(StateKey::Session(*session));
            tree.touch(StateKey::Appealable(*session));
            tree.touch(StateKey::Outcome(*session));
        }
    }
}

/// Removes from an index by height the entries due at or below `height` and returns their
/// ids, in height order: what a block reads of a retention index, and nothing else.
fn take_due(index: &mut crate::state::Map<u64, crate::state::Set<Hash>>, height: u64) -> Vec<Hash> {
    let due: Vec<u64> = index.range(..=height).map(|(h, _)| *h).collect();
    due.into_iter()
        .flat_map(|h| index.remove(&h).unwrap_or_default())
        .collect()
}

/// Where an escalation of the undecided segment `seg` of session `s` may go, in the order
/// it tries them, with the `k` of each (its seats are that plus the session's racing
/// seats): each higher tier the terms allow at the session's `k` there, then, unless its
/// seats `abstained` (the same kind of judge would abstain again), its own tier with
/// [`Params::escalation_extra_seats`] more. What [`Contract::may_escalate`] and
/// [`Contract::escalate`] both read.
///
/// A provider that kept keys from a seat of the first round (it starved it) may have left
/// the segment Undecided on purpose, to have it escalate: the escalation's racing seats
/// would join the first round's among those an appeal may not draw, and buy a verdict
/// nobody can appeal. A session with racing seats whose first round was starved
/// escalates only where a verdict all the escalation's seats reach could still be
/// appealed ([`escalated_verdict_appealable`]); elsewhere the Undecided it caused stands.
/// A segment whose keyed seats split, or a session without racing seats, escalates as it
/// always did.
pub(crate) fn escalation_options(
    st: &State,
    s: &Session,
    seg: &SegmentState,
    abstained: bool,
) -> Vec<(Tier, u8)> {
    let (terms, quorum) = (&s.manifest.terms, &s.manifest.quorum);
    let extra = quorum.extra_seats;
    // The provider kept keys from a seat of the round that left the segment undecided.
    let starved = tally::round_counts(seg, 0).starved > 0;
    let same_k = seg
        .k
        .saturating_add(st.params.escalation_extra_seats)
        .min(trust_protocol::tx::MAX_SEATS.saturating_sub(extra));
    assign::tiers_above(seg.tier)
        .iter()
        .filter(|t| terms.allows(**t))
        .map(|t| (*t, quorum.k(*t)))
        .chain((!abstained).then_some((seg.tier, same_k)))
        .filter(|&(to, k)| {
            extra == 0 || !starved || escalated_verdict_appealable(st, s, seg, to, k, extra)
        })
        .collect()
}

/// Whether a verdict all the `k + extra` seats of an escalation of `seg` (of session `s`)
/// to `to` reach could be appealed on `st`: some tier an appeal of it may draw from
/// ([`appeal::appeal_options`]) holds the fresh seats it needs among its auditors, less
/// the provider, everyone seated on the segment so far and the escalation's own seats.
fn escalated_verdict_appealable(
    st: &State,
    s: &Session,
    seg: &SegmentState,
    to: Tier,
    k: u8,
    extra: u8,
) -> bool {
    let quorum = &s.manifest.quorum;
    let held_by = u16::from(k).saturating_add(u16::from(extra));
    appeal::appeal_options(&s.manifest.terms, quorum, to, held_by)
        .iter()
        .any(|(t, seats)| {
            let fresh = st
                .eligible(*t)
                .iter()
                .filter(|a| **a != s.provider && !seg.seats.iter().any(|x| x.account == **a))
                .count();
            let drawn = if *t == to { usize::from(held_by) } else { 0 };
            fresh.saturating_sub(drawn) >= usize::from(*seats)
        })
}

/// Whether `s` waits for its escalation's seats: in round 1's commit phase with no
/// round-1 seat yet (see [`Contract::draw_escalations`]).
fn escalation_due(s: &Session) -> bool {
    matches!(s.phase, Phase::Commit { round: 1, .. })
        && s.appeal.is_none()
        && !s
            .segments
            .iter()
            .any(|g| g.seats.iter().any(|x| x.round == 1))
}

/// The segments left undecided by round 0, each with whether its seats abstained (then
/// only a higher tier may take it), as the end of that round recorded them.
fn round0_undecided(s: &Session) -> Vec<(usize, bool)> {
    s.segments
        .iter()
        .enumerate()
        .filter(|(_, g)| g.rounds.first() == Some(&LocalVerdict::Undecided))
        .map(|(i, g)| {
            let counts = tally::round_counts(g, 0);
            let q = tally::round_quorum(s.manifest.quorum.tau, g.k, &counts);
            (i, tally::abstained(&counts, q))
        })
        .collect()
}

/// Whether `s` is drawn (round 0) at the start of the block at `height`: it waits for its
/// seats and was opened in an earlier block. (An appeal's seats are drawn at the start of
/// a block too, see [`appeal::draw_due`].)
fn draw_due(s: &Session, height: u64) -> bool {
    matches!(s.phase, Phase::Assigning) && s.appeal.is_none() && s.opened_at < height
}

/// Draws the round-0 seats of session `id` on `state` with `ctx`'s seed: every segment's
/// seats (no account on more than all but one segment of a multi-segment session, and none
/// past the session's exposure budget), as `SeatAssigned` events in `ev`.
fn assign_round0(
    state: &State,
    ctx: &BlockCtx,
    id: &Hash,
    s: &mut Session,
    ev: &mut Vec<Event>,
) -> Result<(), AssignError> {
    let n = s.segments.len();
    let cap = (n >= 2).then(|| n.saturating_sub(1));
    let budget_cap = exposure_cap(s);
    let mut held: BTreeMap<AccountId, usize> = BTreeMap::new();
    let mut covered = assign::Coverage::new();
    let mut drawn: Vec<Vec<AccountId>> = Vec::with_capacity(n);
    // A domain counts in a tier only while its declaring pool holds the floor of stake; a
    // required domain that no longer does leaves nobody to draw, and the session fails.
    let counts: Vec<bool> = Tier::ALL
        .iter()
        .map(|t| sessions::domain_counts(state, *t, &s.manifest.domain, &s.provider))
        .collect();
    let domain_in = |tier: Tier| {
        if counts
            .get(Params::tier_index(tier))
            .copied()
            .unwrap_or(false)
        {
            s.manifest.domain.as_str()
        } else {
            ""
        }
    };
    for (i, seg) in s.segments.iter().enumerate() {
        let idx = u16::try_from(i).map_err(|_| AssignError::TooManySegments)?;
        let seats = seg.k.saturating_add(s.manifest.quorum.extra_seats);
        let keys = assign::keys_of(s, i);
        let d = Draw {
            seed: &ctx.block_hash,
            session: id,
            provider: &s.provider,
            segment: idx,
            round: 0,
            tier: seg.tier,
            domain: domain_in(seg.tier),
            domain_required: s.manifest.terms.domain_required,
            seats,
            exclude: &[],
            held: &held,
            cap,
            budget: budget_cap.map(|cap| assign::Budget {
                covered: &covered,
                keys: &keys,
                cap,
            }),
        };
        let Some(picked) = assign::draw(state, &d) else {
            return Err(AssignError::TooFewAuditors {
                segment: i,
                eligible: assign::eligible_count(state, &d),
                tier: seg.tier,
                seats,
            });
        };
        for a in &picked {
            let c = held.entry(*a).or_insert(0);
            *c = c.saturating_add(1);
            assign::cover(&mut covered, *a, &keys);
        }
        drawn.push(picked);
    }
    for (i, (seg, picked)) in s.segments.iter_mut().zip(drawn).enumerate() {
        let segment = u16::try_from(i).unwrap_or(u16::MAX);
        seat_picked(id, segment, 0, seg.tier, &mut seg.seats, picked, ev);
    }
    Ok(())
}

/// Why a session's first seats could not be drawn: the reason its `SessionFailed` event
/// carries.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
enum AssignError {
    /// More segments than a seat can name.
    #[error("too many segments")]
    TooManySegments,
    /// Too few auditors of a segment's tier are eligible to fill its seats.
    #[error("segment {segment}: {eligible} {tier:?} auditors eligible, {seats} seats needed")]
    TooFewAuditors {
        /// The segment's index.
        segment: usize,
        /// Auditors eligible for it.
        eligible: usize,
        /// Its tier.
        tier: Tier,
        /// Seats it needs.
        seats: u8,
    },
}

enum Next {
    Keep,
    Fail(String),
    Tally,
    /// An appeal round's reveal window closed.
    AppealDecided,
    /// An appeal's seats could not be drawn.
    AppealCancelled(String),
}

fn all_committed(s: &Session, round: u8) -> bool {
    s.segments
        .iter()
        .flat_map(|g| g.seats.iter())
        .filter(|x| x.round == round)
        .all(|x| x.commitment.is_some())
}

/// The mapping closes the disclosure: a provider opens its honeypots before it (see
/// `sessions::reveal_honeypot`).
fn all_disclosed(s: &Session) -> bool {
    s.mapping.is_some()
}
