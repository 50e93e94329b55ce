//! The duties planner: what this node owes the chain after a decided block, as a pure
//! function of the block's events and the state after it. No I/O, no clock, no async: the
//! node's duties task carries the plan out through its handles (outbox, provider,
//! seat, human desk, judges), in the order planned.
//!
//! Order within a block, as the node has always acted:
//! 1. own transactions that waited for the nonce window go to the pool ([`Duty::Flush`]);
//! 2. the human desk learns the height (deadlines) ([`Duty::Desk`]);
//! 3. the provider's duties ([`provider::plan`]), in event order: opening the mapping of a
//!    session whose reveal window closed, releasing a finished session's ciphertexts; then
//!    sealing keys to the seats the block drew, one delivery per session. The seats of a
//!    draw are known only once its block is decided (the block's seed is its proposer's
//!    VRF output, see "Block seed" in `trust_protocol::block`), so their keys land in a
//!    later block, the next one when the provider's delivery reaches its proposer in time;
//! 4. the seats' duties, in event order: opening keys sealed to this node, revealing when a
//!    commit window closes, forgetting a session whose round is over (decided, an appeal
//!    round decided or cancelled, final, failed; not on the node that provides it, whose
//!    ciphertexts stay until the session is final);
//! 5. judging, at most once per session, where this node holds a seat that may still
//!    commit ([`may_commit`]).

use std::collections::BTreeSet;

use trust_contracts::{Event, Phase, State};
use trust_protocol::{AccountId, Hash, seal::SealedKey, tx::Call};

pub mod provider;

pub use self::provider::ProviderDuty;

/// A seat that still cannot read its segment when the chain is within this many blocks
/// of its commit deadline commits an abstention instead of nothing. Two blocks: one for
/// the commitment to land in, one for a slow round of gossip.
pub const GIVE_UP_BLOCKS: u64 = 2;

/// Whether a seat whose commit window closes at `until` gives up reading at `height`.
pub fn gives_up(height: u64, until: u64) -> bool {
    height.saturating_add(GIVE_UP_BLOCKS) >= until
}

/// Whether `seat` of segment `segment` in `s` (in the round taking commitments) is
/// starved for good at `state`'s height: the round's key deadline
/// ([`trust_contracts::key_deadline`]) has passed and the contract's record says its keys
/// (its segment's and its premises') did not all land by then. A key that lands later
/// never counts, so such a seat need not wait for the window to close: it abstains at
/// once, is never slashed as a no-show, and the provider pays it.
pub fn starved_for_good(
    state: &State,
    s: &trust_contracts::Session,
    segment: &trust_contracts::SegmentState,
    seat: &trust_contracts::Seat,
) -> bool {
    let Phase::Commit { round, .. } = s.phase else {
        return false;
    };
    seat.round == round
        && trust_contracts::key_deadline(&state.params, s).is_some_and(|d| state.height > d)
        && !seat.keyed(segment.entry.depends_on.len())
}

/// One thing to do, in the order [`plan`] returns them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Duty {
    /// Pool own transactions that waited for the nonce window.
    Flush,
    /// Tell the human desk the chain reached `height` (its seats' deadlines count in
    /// blocks).
    Desk {
        /// The block's height.
        height: u64,
    },
    /// Provider: after a restart, finish the key deliveries and mapping openings it owes.
    ResumeProvider,
    /// One of the provider's duties ([`provider::plan`]).
    Provider(ProviderDuty),
    /// Seat: open a key sealed to this node and keep it.
    OpenKey {
        /// The session.
        session: Hash,
        /// The segment the key opens.
        segment: u16,
        /// The segment's id (the key's sealing context).
        segment_id: Hash,
        /// The sealed key.
        sealed: SealedKey,
    },
    /// Seat: reveal every unrevealed vote of `round` in `session`.
    Reveal {
        /// The session.
        session: Hash,
        /// The round whose commit window closed.
        round: u8,
    },
    /// Seat: copy the commitment another seat published (test builds' copy-cat only).
    #[cfg(feature = "misbehave")]
    CopyCommitment {
        /// The session.
        session: Hash,
        /// The segment.
        segment: u16,
    },
    /// Seat: `session` is over; forget its votes, keys and ciphertexts.
    SeatDone {
        /// The session.
        session: Hash,
    },
    /// Judge this node's seats in `session` and commit (beside the block loop).
    Judge {
        /// The session.
        session: Hash,
    },
}

/// What the planner knows besides the block: who this node is and what it remembers.
#[derive(Debug, Clone, Copy)]
pub struct Node<'a> {
    /// This node's account.
    pub me: AccountId,
    /// Whether a person's desk (Human seats) runs here.
    pub desk: bool,
    /// The sessions this node opened as provider and still keeps records of.
    pub provided: &'a BTreeSet<Hash>,
    /// This node's seats that could not read their segment and have not voted:
    /// (session, segment, round).
    pub stuck: &'a BTreeSet<(Hash, u16, u8)>,
    /// Whether this node copies other seats' commitments instead of judging (test builds'
    /// copy-cat).
    pub copies: bool,
}

/// The duties a decided block with `events` gives this node; `state` is the contract state
/// after the block, at `height`.
pub fn plan(node: &Node<'_>, state: &State, height: u64, events: &[Event]) -> Vec<Duty> {
    let mut out = vec![Duty::Flush];
    if node.desk {
        out.push(Duty::Desk { height });
    }
    out.extend(
        provider::plan(node.provided, events)
            .into_iter()
            .map(Duty::Provider),
    );
    out.extend(plan_seat(node, state, events));
    out
}

/// The seats' part of [`plan`]: in event order, keys sealed to this node to open, reveals
/// where a commit window closed, sessions to forget; then the sessions to judge.
pub fn plan_seat(node: &Node<'_>, state: &State, events: &[Event]) -> Vec<Duty> {
    let mut out = Vec::new();
    let mut judge = BTreeSet::new();
    let mut done = BTreeSet::new();
    for e in events {
        match e {
            Event::KeyDelivered {
                session,
                segment,
                seat,
                sealed,
            } if *seat == node.me => {
                let Some(segment_id) = state
                    .sessions
                    .get(session)
                    .and_then(|s| s.segments.get(usize::from(*segment)))
                    .map(|s| s.entry.id)
                else {
                    continue;
                };
                out.push(Duty::OpenKey {
                    session: *session,
                    segment: *segment,
                    segment_id,
                    sealed: sealed.clone(),
                });
                judge.insert(*session);
            }
            Event::CommitWindowClosed { session, round, .. } => out.push(Duty::Reveal {
                session: *session,
                round: *round,
            }),
            #[cfg(feature = "misbehave")]
            Event::Committed {
                session,
                segment,
                seat,
            } if node.copies && *seat != node.me => out.push(Duty::CopyCommitment {
                session: *session,
                segment: *segment,
            }),
            // A seat's part ends with its round: the first round's at the decision, an
            // appeal round's when that round is decided (or cancelled). The provider's
            // node keeps the session's ciphertexts until it is final: its own duty
            // ([`ProviderDuty::Done`]) releases them.
            Event::TraceDecided { session, .. }
            | Event::SessionFailed { session, .. }
            | Event::AppealDecided { session, .. }
            | Event::AppealCancelled { session, .. }
            | Event::SessionFinal { session }
                if !node.provided.contains(session) && done.insert(*session) =>
            {
                out.push(Duty::SeatDone { session: *session });
            }
            _ => {}
        }
    }
    judge.extend(about_to_close(node, state));
    out.extend(
        judge
            .into_iter()
            .filter(|s| may_commit(state, &node.me, s))
            .map(|session| Duty::Judge { session }),
    );
    out
}

/// What a restart owes: the provider's key deliveries and mapping openings
/// ([`Duty::ResumeProvider`]), reveals in sessions now in their reveal window, and votes in
/// sessions still taking commitments where this node may commit.
pub fn resume(me: &AccountId, state: &State) -> Vec<Duty> {
    let mut out = vec![Duty::ResumeProvider];
    for (session, s) in &state.sessions {
        match s.phase {
            Phase::Reveal { round, .. } => out.push(Duty::Reveal {
                session: *session,
                round,
            }),
            Phase::Commit { .. } if may_commit(state, me, session) => {
                out.push(Duty::Judge { session: *session });
            }
            _ => {}
        }
    }
    out
}

/// The sessions whose commit window is about to close ([`gives_up`]), or past whose key
/// deadline a seat was not keyed ([`starved_for_good`]), while this node holds such a stuck
/// seat in them that has not voted: each gets one more try, and an abstention where the
/// segment still cannot be read.
fn about_to_close(node: &Node<'_>, state: &State) -> BTreeSet<Hash> {
    state
        .sessions
        .iter()
        .filter_map(|(id, s)| {
            let Phase::Commit { round, until } = s.phase else {
                return None;
            };
            let closing = gives_up(state.height, until);
            let waiting = s.segments.iter().enumerate().any(|(i, g)| {
                u16::try_from(i).is_ok_and(|i| {
                    node.stuck.contains(&(*id, i, round))
                        && g.seats.iter().any(|x| {
                            x.account == node.me
                                && x.round == round
                                && x.commitment.is_none()
                                && (closing || starved_for_good(state, s, g, x))
                        })
                })
            });
            waiting.then_some(*id)
        })
        .collect()
}

/// Whether `me` holds a seat in `session` that may still commit on `state` (the tip).
pub fn may_commit(state: &State, me: &AccountId, session: &Hash) -> bool {
    let Some(s) = state.sessions.get(session) else {
        return false;
    };
    s.segments.iter().enumerate().any(|(i, seg)| {
        let Ok(segment) = u16::try_from(i) else {
            return false;
        };
        seg.seats
            .iter()
            .any(|x| x.account == *me && x.commitment.is_none())
            && trust_contracts::expired(
                state,
                me,
                &Call::Commit {
                    session: *session,
                    segment,
                    commitment: Hash::ZERO,
                },
            )
            .is_none()
    })
}

/// One of this node's seats: (session, segment, round).
pub type SeatId = (Hash, u16, u8);

/// The seats `me` holds in live sessions that still owe the chain their vote: a seat of the
/// round under way without a revealed vote, while its commit window is open (it owes a
/// commitment, then the opening) or its reveal window is open and it committed (it owes
/// the opening). What a node that was told to stop finishes before it exits.
pub fn owed(state: &State, me: &AccountId) -> BTreeSet<SeatId> {
    let mut out = BTreeSet::new();
    for (session, s) in &state.sessions {
        let (round, committing) = match s.phase {
            Phase::Commit { round, .. } => (round, true),
            Phase::Reveal { round, .. } => (round, false),
            Phase::Assigning | Phase::Disclose { .. } => continue,
        };
        for (i, g) in s.segments.iter().enumerate() {
            let Ok(segment) = u16::try_from(i) else {
                continue;
            };
            let owes = g.seats.iter().any(|x| {
                x.account == *me
                    && x.round == round
                    && x.vote.is_none()
                    && (committing || x.commitment.is_some())
            });
            if owes {
                out.insert((*session, segment, round));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    //! The planner on a real contract driven block by block, with no I/O: no runtime, no
    //! database, no network.

    use trust_contracts::{
        BlockCtx, Contract, Genesis, GenesisAccount, GenesisAuditor, Params, minimum_fee,
    };
    use trust_protocol::{
        Keypair, Salt, Signed,
        commit::mapping_commitment,
        seal::{SealingSecret, seal_key},
        tx::{QuorumParams, SegmentEntry, SessionManifest, Tier, Tx},
        units::Ppm,
    };

    use super::*;

    fn provider() -> Keypair {
        Keypair::from_label("plan-provider")
    }
    fn auditor(i: u8) -> Keypair {
        Keypair::from_label(&format!("plan-auditor-{i}"))
    }
    fn sealing(i: u8) -> SealingSecret {
        SealingSecret::from_bytes([i + 1; 32])
    }

    /// A contract with a funded provider and four Computer auditors, a session of two
    /// segments (k = 3) opened in block 1, and blocks ended until its seats are drawn.
    /// Returns the contract, the session, the next height and the draw's events.
    fn drawn() -> (Contract, Hash, u64, Vec<Event>) {
        drawn_with(trust_protocol::tx::SessionTerms::default())
    }

    /// [`drawn`], the session opened on `terms`.
    fn drawn_with(terms: trust_protocol::tx::SessionTerms) -> (Contract, Hash, u64, Vec<Event>) {
        let mut accounts = vec![GenesisAccount {
            id: provider().public(),
            balance: 1_000_000,
            stake: 0,
        }];
        accounts.extend((0..4).map(|i| GenesisAccount {
            id: auditor(i).public(),
            balance: 10,
            stake: 1_000,
        }));
        let mut c = Contract::new(&Genesis {
            params: Params::default(),
            accounts,
            auditors: (0..4)
                .map(|i| GenesisAuditor {
                    id: auditor(i).public(),
                    tier: Tier::Computer,
                    expertise: vec!["math".into()],
                    sealing_key: sealing(i).public(),
                })
                .collect(),
        })
        .unwrap();
        let segments = vec![
            SegmentEntry::plain(Hash::sha256(b"a"), Tier::Computer),
            SegmentEntry {
                depends_on: vec![0],
                ..SegmentEntry::plain(Hash::sha256(b"b"), Tier::Computer)
            },
        ];
        let mut m = SessionManifest {
            segments,
            mapping_commitment: mapping_commitment(&Hash::ZERO, &Salt([2; 32])),
            quorum: QuorumParams {
                k: [3, 3, 3],
                extra_seats: 0,
                tau: Ppm(600_000),
                beta: Ppm(600_000),
            },
            fee: 0,
            domain: "math".into(),
            left_out: Vec::new(),
            terms,
            honeypot_set: trust_protocol::honeypot_set_commitment(
                &[],
                &trust_protocol::Salt([0; 32]),
            ),
        };
        m.fee = minimum_fee(&Params::default(), &m).unwrap();
        let open = Signed::sign(
            &provider(),
            &Hash::ZERO,
            Tx {
                nonce: 0,
                call: Call::OpenSession(m),
            },
        );
        let session = Tx::session_id(&provider().public(), 0);
        let mut events = Vec::new();
        for h in 1..=6u64 {
            let ctx = ctx(h);
            events.extend(c.begin_block(&ctx));
            if h == 1 {
                events.extend(c.apply(&ctx, &open).unwrap());
            }
            events.extend(c.end_block(&ctx));
            if events
                .iter()
                .any(|e| matches!(e, Event::SeatAssigned { .. }))
            {
                return (c, session, h + 1, events);
            }
        }
        panic!("no seats drawn in six blocks: {events:?}");
    }

    fn ctx(height: u64) -> BlockCtx {
        BlockCtx {
            height,
            block_hash: Hash::of_parts("plan-test", &[&height.to_le_bytes()]),
        }
    }

    fn node<'a>(
        me: AccountId,
        provided: &'a BTreeSet<Hash>,
        stuck: &'a BTreeSet<(Hash, u16, u8)>,
    ) -> Node<'a> {
        Node {
            me,
            desk: false,
            provided,
            stuck,
            copies: false,
        }
    }

    /// The accounts seated on `segment` of `session`.
    fn seated(c: &Contract, session: &Hash, segment: usize) -> Vec<AccountId> {
        c.state().sessions[session].segments[segment]
            .seats
            .iter()
            .map(|s| s.account)
            .collect()
    }

    fn sealed_to(me: u8, session: &Hash, segment_id: &Hash) -> SealedKey {
        seal_key(
            &sealing(me).public(),
            &[9; 32],
            [me + 50; 32],
            &trust_protocol::seal::key_context(session, segment_id, &auditor(me).public()),
        )
        .unwrap()
    }

    /// A seat owes its vote while its commit window is open; in the reveal window only a
    /// seat that committed owes its opening, and a node without seats owes nothing.
    #[test]
    fn a_seat_owes_its_vote_while_it_can_still_land() {
        let (mut c, session, mut height, _) = drawn();
        let me = seated(&c, &session, 0)[0];
        let mine: BTreeSet<SeatId> = (0..2u16)
            .filter(|i| seated(&c, &session, usize::from(*i)).contains(&me))
            .map(|i| (session, i, 0))
            .collect();
        assert!(!mine.is_empty());
        assert_eq!(owed(c.state(), &me), mine);
        let nobody = (0..4)
            .map(|i| auditor(i).public())
            .find(|a| (0..2).all(|i| !seated(&c, &session, i).contains(a)));
        if let Some(a) = nobody {
            assert!(owed(c.state(), &a).is_empty());
        }
        assert!(owed(c.state(), &provider().public()).is_empty());
        // Nobody committed: once the commit window closes nothing is owed any more.
        while matches!(
            c.state().sessions.get(&session).map(|s| s.phase),
            Some(Phase::Commit { .. })
        ) {
            let ctx = ctx(height);
            c.begin_block(&ctx);
            c.end_block(&ctx);
            height += 1;
            assert!(height < 100, "the commit window never closed");
        }
        assert!(owed(c.state(), &me).is_empty());
    }

    #[test]
    fn the_provider_delivers_keys_to_the_seats_a_block_drew_and_no_one_else_does() {
        let (c, session, height, events) = drawn();
        let none: BTreeSet<Hash> = BTreeSet::new();
        let no_stuck = BTreeSet::new();
        let provided = BTreeSet::from([session]);
        let plan_p = plan(
            &node(provider().public(), &provided, &no_stuck),
            c.state(),
            height,
            &events,
        );
        let drawn: Vec<(u16, AccountId, u8)> = events
            .iter()
            .filter_map(Event::seat_assigned)
            .map(|(_, segment, seat, round)| (segment, seat, round))
            .collect();
        assert_eq!(drawn.len(), 6, "two segments, three seats each");
        assert_eq!(
            plan_p,
            vec![
                Duty::Flush,
                Duty::Provider(ProviderDuty::DeliverKeys {
                    session,
                    seats: drawn
                })
            ]
        );
        // A node that did not open the session delivers nothing, and with no key yet it
        // judges nothing either: it only flushes.
        let seat = seated(&c, &session, 0)[0];
        assert_eq!(
            plan(&node(seat, &none, &no_stuck), c.state(), height, &events),
            vec![Duty::Flush]
        );
    }

    /// A block that opens a session gives its provider nothing to seal: the seats are
    /// drawn by the next block, with that block's seed, which nobody can compute before it
    /// exists. The keys follow the draw's own events.
    #[test]
    fn the_provider_seals_no_key_before_the_seats_are_drawn() {
        let (c, session, height, events) = drawn();
        let no_stuck = BTreeSet::new();
        let provided = BTreeSet::from([session]);
        let me = node(provider().public(), &provided, &no_stuck);
        let opened: Vec<Event> = events
            .iter()
            .take_while(|e| !matches!(e, Event::SeatAssigned { .. }))
            .cloned()
            .collect();
        assert!(
            opened
                .iter()
                .any(|e| matches!(e, Event::SessionOpened { session: s, .. } if *s == session)),
            "{opened:?}"
        );
        assert_eq!(plan(&me, c.state(), height, &opened), vec![Duty::Flush]);
        assert!(
            plan(&me, c.state(), height, &events)
                .iter()
                .any(|d| matches!(d, Duty::Provider(ProviderDuty::DeliverKeys { .. }))),
            "the draw's events ask for the keys"
        );
    }

    #[test]
    fn a_key_sealed_to_this_seat_is_opened_and_its_session_judged_once() {
        let (c, session, height, _) = drawn();
        let none: BTreeSet<Hash> = BTreeSet::new();
        let no_stuck = BTreeSet::new();
        let seats0 = seated(&c, &session, 0);
        let me_i = (0..4u8)
            .find(|i| seats0.contains(&auditor(*i).public()))
            .unwrap();
        let me = auditor(me_i).public();
        let id0 = c.state().sessions[&session].segments[0].entry.id;
        let key = sealed_to(me_i, &session, &id0);
        let mine = Event::KeyDelivered {
            session,
            segment: 0,
            seat: me,
            sealed: key.clone(),
        };
        let other = (0..4u8)
            .map(|i| auditor(i).public())
            .find(|a| *a != me)
            .unwrap();
        let theirs = Event::KeyDelivered {
            session,
            segment: 0,
            seat: other,
            sealed: key.clone(),
        };
        // Two keys for this node in one block (the segment twice, as a re-delivery would
        // be) still judge the session once; a key for another seat is not this node's.
        let events = vec![mine.clone(), theirs, mine];
        let p = plan(&node(me, &none, &no_stuck), c.state(), height, &events);
        let open = Duty::OpenKey {
            session,
            segment: 0,
            segment_id: id0,
            sealed: key,
        };
        assert_eq!(
            p,
            vec![Duty::Flush, open.clone(), open, Duty::Judge { session }]
        );
        // With the desk on, the height comes right after the flush.
        let with_desk = Node {
            desk: true,
            ..node(me, &none, &no_stuck)
        };
        assert_eq!(
            plan(&with_desk, c.state(), height, &[])[..2],
            [Duty::Flush, Duty::Desk { height }]
        );
    }

    #[test]
    fn a_closed_commit_window_is_revealed_and_a_finished_session_forgotten_by_both_roles() {
        let (c, session, height, _) = drawn();
        let no_stuck = BTreeSet::new();
        let provided = BTreeSet::from([session]);
        let me = seated(&c, &session, 0)[0];
        let events = vec![
            Event::CommitWindowClosed {
                session,
                round: 0,
                reveal_until: height + 3,
            },
            Event::RevealWindowClosed { session, round: 0 },
            Event::SessionFailed {
                session,
                reason: "test".into(),
            },
        ];
        // The provider releases the ciphertexts itself (its seat role leaves them alone).
        let p = plan(&node(me, &provided, &no_stuck), c.state(), height, &events);
        assert_eq!(
            p,
            vec![
                Duty::Flush,
                Duty::Provider(ProviderDuty::RevealMapping { session }),
                Duty::Provider(ProviderDuty::Done { session }),
                Duty::Reveal { session, round: 0 },
            ]
        );
        let none = BTreeSet::new();
        let p = plan(&node(me, &none, &no_stuck), c.state(), height, &events);
        assert_eq!(
            p,
            vec![
                Duty::Flush,
                Duty::Reveal { session, round: 0 },
                Duty::SeatDone { session },
            ]
        );
    }

    /// A decided session may still be appealed: the provider keeps its keys and
    /// ciphertexts (no `Done`) until `SessionFinal`, its seats are forgotten at the
    /// decision, an appeal round's seats once that round is decided or cancelled (once per
    /// session and block), and the provider's node never drops the ciphertexts as a seat.
    #[test]
    fn the_provider_keeps_a_decided_session_until_final_and_seats_forget_their_round() {
        use trust_contracts::{LocalVerdict, TraceVerdict};
        let (c, session, height, _) = drawn();
        let no_stuck = BTreeSet::new();
        let none = BTreeSet::new();
        let provided = BTreeSet::from([session]);
        let provider_node = node(provider().public(), &provided, &no_stuck);
        let seat = seated(&c, &session, 0)[0];
        let seat_node = node(seat, &none, &no_stuck);
        let decided = [Event::TraceDecided {
            session,
            verdict: TraceVerdict::Pass,
            passing_weight: 2,
            total_weight: 2,
        }];
        assert_eq!(
            plan(&provider_node, c.state(), height, &decided),
            vec![Duty::Flush]
        );
        assert_eq!(
            plan(&seat_node, c.state(), height, &decided),
            vec![Duty::Flush, Duty::SeatDone { session }]
        );
        let appeal_decided = |segment| Event::AppealDecided {
            session,
            segment,
            round: 2,
            previous: LocalVerdict::Valid,
            verdict: LocalVerdict::Invalid,
            overturned: true,
            trace: TraceVerdict::Fail,
        };
        let round_over = [appeal_decided(0), appeal_decided(1)];
        assert_eq!(
            plan(&provider_node, c.state(), height, &round_over),
            vec![Duty::Flush]
        );
        assert_eq!(
            plan(&seat_node, c.state(), height, &round_over),
            vec![Duty::Flush, Duty::SeatDone { session }]
        );
        let cancelled = [Event::AppealCancelled {
            session,
            appellant: seat,
            refunded: 60,
            reason: "test".into(),
        }];
        assert_eq!(
            plan(&seat_node, c.state(), height, &cancelled),
            vec![Duty::Flush, Duty::SeatDone { session }]
        );
        let final_ = [Event::SessionFinal { session }];
        assert_eq!(
            plan(&provider_node, c.state(), height, &final_),
            vec![Duty::Flush, Duty::Provider(ProviderDuty::Done { session })]
        );
        // An appeal round's draw: the provider seals the keys to its seats.
        let drawn = [Event::SeatAssigned {
            session,
            segment: 1,
            seat,
            round: 2,
            tier: Tier::Computer,
        }];
        assert_eq!(
            plan(&provider_node, c.state(), height, &drawn),
            vec![
                Duty::Flush,
                Duty::Provider(ProviderDuty::DeliverKeys {
                    session,
                    seats: vec![(1, seat, 2)]
                })
            ]
        );
    }

    /// A stuck seat is woken again only when waiting longer cannot help: its keys missed
    /// the key deadline (a later key never counts), or its commit window is about to close.
    /// Never keyed here, it is woken from the block after the key deadline, well before
    /// the window's close, and not before.
    #[test]
    fn a_stuck_seat_gets_one_more_try_once_its_keys_cannot_count_or_its_window_closes() {
        // A window the provider asked to be long: the key deadline comes long before it
        // closes.
        let (mut c, session, mut height, _) = drawn_with(trust_protocol::tx::SessionTerms {
            commit_window: 40,
            ..Default::default()
        });
        let none: BTreeSet<Hash> = BTreeSet::new();
        let no_stuck = BTreeSet::new();
        let me = seated(&c, &session, 1)[0];
        let stuck = BTreeSet::from([(session, 1u16, 0u8)]);
        let s = &c.state().sessions[&session];
        let Phase::Commit { until, .. } = s.phase else {
            panic!("the session takes commitments");
        };
        let deadline = trust_contracts::key_deadline(&c.state().params, s).unwrap();
        assert!(
            deadline + 1 + GIVE_UP_BLOCKS < until,
            "the key deadline {deadline} comes well before the window closes at {until}"
        );
        let mut tried = Vec::new();
        while height <= until {
            let _ = c.end_block(&ctx(height));
            let p = plan(&node(me, &none, &stuck), c.state(), height, &[]);
            if p.contains(&Duty::Judge { session }) {
                tried.push(c.state().height);
            }
            // A node with no stuck seat is never woken this way.
            assert_eq!(
                plan(&node(me, &none, &no_stuck), c.state(), height, &[]),
                vec![Duty::Flush]
            );
            height += 1;
        }
        assert!(
            !tried.is_empty(),
            "the stuck seat got no last try before {until}"
        );
        assert_eq!(
            tried.first(),
            Some(&(deadline + 1)),
            "tried at {tried:?}, key deadline {deadline}, window closes at {until}"
        );
        assert!(
            tried.iter().all(|h| *h > deadline || gives_up(*h, until)),
            "tried at {tried:?}, key deadline {deadline}, window closes at {until}"
        );
    }

    #[test]
    fn a_restart_resumes_the_provider_reveals_and_votes_where_this_node_may_still_commit() {
        let (c, session, _, _) = drawn();
        let me = seated(&c, &session, 0)[0];
        assert_eq!(
            resume(&me, c.state()),
            vec![Duty::ResumeProvider, Duty::Judge { session }]
        );
        // Not seated: nothing to vote in.
        let stranger = Keypair::from_label("plan-stranger").public();
        assert_eq!(resume(&stranger, c.state()), vec![Duty::ResumeProvider]);
        assert!(!may_commit(c.state(), &stranger, &session));
        assert!(may_commit(c.state(), &me, &session));
    }
}
