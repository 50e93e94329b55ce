//! Appeals through the contract's public API, with real signed transactions: a wrong
//! verdict overturned (slashes, repayment, the trace recomputed, both rounds on record,
//! finality after the window), an upheld one (the bond pays the appeal seats), every
//! refusal, supply conservation and determinism.

use trust_contracts::{
    AppealResult, Contract, Event, Finality, LocalVerdict, Params, Phase, SegmentVerdict,
    SlashReason, TraceVerdict, TxError,
};
use trust_protocol::{
    Hash, Keypair, Salt, Vote, honeypot_commitment,
    tx::{Call, Difficulty, HoneypotOpening, SegmentEntry, SessionManifest, Tier, Tx},
};

use crate::common::{
    self, Chain, SupplyCheck, key, open_set, run_round, seats_of, segment, test_params,
    with_honeypot_set,
};

/// The appellant's genesis balance.
const APPELLANT_BALANCE: u64 = 1_000;

impl Chain {
    /// `auditors` per tier, each with 1000 staked; a provider, an appellant with
    /// [`APPELLANT_BALANCE`] and a poor account with 10. Every block checks that supply is
    /// conserved.
    fn for_appeals(params: Params, auditors: &[(Tier, usize)]) -> (Self, Vec<Keypair>) {
        Chain::with_accounts(
            params,
            auditors,
            &[
                ("provider", 1_000_000),
                ("appellant", APPELLANT_BALANCE),
                ("poor", 10),
            ],
            SupplyCheck::EachBlock,
        )
    }
}

/// A session of `segments`, `k` seats per tier and no extra seats.
fn manifest(segments: Vec<SegmentEntry>, k: u8) -> SessionManifest {
    common::manifest(segments, k, 0)
}

/// Runs the voting of `round` of a live session whose seats `drawn` (events) hold: keys
/// delivered, `votes(segment, seat_index)` committed (None: never commits) and revealed,
/// until the round's reveal window closes. Returns the events.
fn vote_round(
    chain: &mut Chain,
    keys: &[Keypair],
    sid: Hash,
    round: u8,
    drawn: &[Event],
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> Vec<Event> {
    run_round(chain, keys, sid, round, drawn, &[], votes)
}

/// Opens a session and runs it to its decision with `votes` for round 0; the provider
/// opens the honeypot `honeypot` (segment, truth, salt) when one is given, then its
/// mapping. Returns the session id and all events.
fn run_session(
    chain: &mut Chain,
    keys: &[Keypair],
    m: SessionManifest,
    honeypot: Option<(u16, Vote, Salt)>,
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> (Hash, Vec<Event>) {
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    let m = match honeypot {
        Some((segment, ..)) => with_honeypot_set(m, &[segment]),
        None => m,
    };
    chain.submit(&provider, Call::OpenSession(m));
    let mut all = chain.block();
    all.extend(chain.block());
    let drawn = all.clone();
    all.extend(vote_round(chain, keys, sid, 0, &drawn, votes));
    while chain.c.state().sessions.contains_key(&sid) {
        if chain.mapping_due(sid) {
            if let Some((segment, verdict, salt)) = honeypot {
                chain.submit(
                    &provider,
                    open_set(
                        sid,
                        vec![HoneypotOpening {
                            segment,
                            verdict,
                            difficulty: Difficulty::Obvious,
                            salt,
                        }],
                    ),
                );
            }
            chain.reveal_mapping(&provider, sid);
        }
        all.extend(chain.block());
        assert!(chain.height < 300, "session never finished");
    }
    (sid, all)
}

/// Appeals `segments` of `sid` from `appellant`, draws the appeal seats and runs the
/// appeal round with `votes`. Returns the events from the appeal on.
fn run_appeal(
    chain: &mut Chain,
    keys: &[Keypair],
    sid: Hash,
    appellant: &Keypair,
    segments: Vec<u16>,
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> Vec<Event> {
    chain.submit(
        appellant,
        Call::Appeal {
            session: sid,
            segments,
        },
    );
    let mut all = chain.block();
    let round = match chain.c.finality(&sid) {
        Some(Finality::Appealing { round }) => round,
        other => panic!("not appealing: {other:?}"),
    };
    assert_eq!(chain.phase(&sid), Some(Phase::Assigning));
    all.extend(chain.block());
    assert!(matches!(chain.phase(&sid), Some(Phase::Commit { round: r, .. }) if r == round));
    let drawn = all.clone();
    all.extend(vote_round(chain, keys, sid, round, &drawn, votes));
    assert!(!chain.c.state().sessions.contains_key(&sid));
    all
}

/// Two Computer segments, 1 resting on 0: three malicious seats call segment 0 Invalid
/// (it holds), so 1 is Propagated and the trace fails.
fn wrongly_failed(chain: &mut Chain, keys: &[Keypair]) -> (Hash, Vec<Event>) {
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
    ];
    run_session(chain, keys, manifest(segs, 3), None, &|s, _| {
        Some(if s == 0 { Vote::Invalid } else { Vote::Valid })
    })
}

#[test]
fn an_appeal_overturns_a_wrong_verdict_slashes_its_majority_and_repays_the_appellant() {
    let (mut chain, keys) = Chain::for_appeals(test_params(), &[(Tier::Computer, 12)]);
    let appellant = key("appellant");
    let (sid, ev) = wrongly_failed(&mut chain, &keys);
    let first = seats_of(&ev, 0, 0);
    assert_eq!(first.len(), 3);
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(o.trace, TraceVerdict::Fail);
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Invalid);
    assert_eq!(o.segments[1].verdict, SegmentVerdict::Propagated);
    let until = o.decided_at + test_params().appeal_window;
    assert_eq!(chain.c.finality(&sid), Some(Finality::Appealable { until }));
    let stake_before: Vec<u64> = first
        .iter()
        .map(|a| chain.c.state().accounts[a].stake)
        .collect();

    let ev = run_appeal(&mut chain, &keys, sid, &appellant, vec![0], &|_, _| {
        Some(Vote::Valid)
    });
    assert!(ev.iter().any(|e| matches!(e,
        Event::AppealOpened { session, round: 2, bond: 60, segments, .. }
            if *session == sid && segments == &vec![0])));
    let appeal_seats = seats_of(&ev, 0, 2);
    assert_eq!(appeal_seats.len(), 7, "2k + 1 fresh seats");
    for a in &appeal_seats {
        assert!(!first.contains(a), "a first-round seat sat on the appeal");
    }
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::AppealDecided {
            segment: 0,
            round: 2,
            previous: LocalVerdict::Invalid,
            verdict: LocalVerdict::Valid,
            overturned: true,
            trace: TraceVerdict::Pass,
            ..
        }
    )));

    // Nobody is slashed while an appeal can still take the overturn back: the appellant
    // has its bond back, and the slashes, the reward and the seats' pay wait for finality.
    let p = test_params();
    assert!(!ev.iter().any(|e| matches!(
        e,
        Event::Slashed {
            reason: SlashReason::Incoherent,
            ..
        }
    )));
    for (a, before) in first.iter().zip(&stake_before) {
        assert_eq!(chain.c.state().accounts[a].stake, *before);
    }
    assert_eq!(chain.balance(&appellant.public()), APPELLANT_BALANCE);

    // The trace is recomputed and both rounds are on record.
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Valid);
    assert_eq!(o.segments[1].verdict, SegmentVerdict::Valid);
    assert_eq!(o.trace, TraceVerdict::Pass);
    assert_eq!(o.segments[0].k, 7);
    assert_eq!(o.segments[0].votes.valid, 7);
    let rounds: Vec<u8> = o.segments[0].votes_cast.iter().map(|v| v.round).collect();
    assert_eq!(rounds, [0, 0, 0, 2, 2, 2, 2, 2, 2, 2]);
    assert_eq!(o.appeals.rounds.len(), 1);
    let r = &o.appeals.rounds[0];
    assert_eq!(r.round, 2);
    assert_eq!(r.appellant, appellant.public());
    assert_eq!(
        (r.trace_before, r.trace_after),
        (TraceVerdict::Fail, TraceVerdict::Pass)
    );
    let s = &r.segments[0];
    assert_eq!(s.result, AppealResult::Overturned);
    assert_eq!(
        (s.previous, s.verdict),
        (LocalVerdict::Invalid, LocalVerdict::Valid)
    );
    assert_eq!((s.slashed, s.refunded, s.paid, s.burned), (0, 60, 0, 0));
    assert!(s.pending.is_some());
    assert_eq!(o.appeals.open, None);

    // Appealable again, for a new window; final only once it has passed.
    let until = r.decided_at + p.appeal_window;
    assert_eq!(chain.c.finality(&sid), Some(Finality::Appealable { until }));
    assert!(chain.c.state().appealable.contains_key(&sid));
    let mut finals = Vec::new();
    while chain.height < until {
        assert_eq!(chain.c.finality(&sid), Some(Finality::Appealable { until }));
        finals.extend(chain.block());
    }
    assert_eq!(chain.c.finality(&sid), Some(Finality::Final { at: until }));
    assert!(
        finals
            .iter()
            .any(|e| matches!(e, Event::SessionFinal { session } if *session == sid))
    );
    assert!(!chain.c.state().appealable.contains_key(&sid));

    // Final, the overturn standing: the first round's majority is slashed one penalty
    // each, deterministically.
    for (a, before) in first.iter().zip(&stake_before) {
        assert!(finals.iter().any(|e| matches!(e,
            Event::Slashed { seat, reason: SlashReason::Incoherent, amount, .. }
                if seat == a && *amount == p.penalty)));
        assert_eq!(chain.c.state().accounts[a].stake, before - p.penalty);
    }
    // Repaid: the bond back (at the overturn) plus the reward, from the slashes.
    assert_eq!(
        chain.balance(&appellant.public()),
        APPELLANT_BALANCE + p.appeal_reward
    );
    // The rest of the slashes (54 - 30 = 24) split among the 7 agreeing appeal seats.
    let paid: u64 = finals
        .iter()
        .filter_map(|e| match e {
            Event::Rewarded { seat, amount, .. } if appeal_seats.contains(seat) => Some(*amount),
            _ => None,
        })
        .sum();
    assert_eq!(paid, 7 * 3);
    let s = &chain.c.outcome(&sid).unwrap().appeals.rounds[0].segments[0];
    assert_eq!((s.slashed, s.refunded, s.paid, s.burned), (54, 90, 21, 3));
    assert!(s.pending.is_none());
    chain.assert_supply_conserved();
}

#[test]
fn an_upheld_verdict_pays_the_bond_to_the_appeal_seats() {
    let (mut chain, keys) = Chain::for_appeals(test_params(), &[(Tier::Computer, 12)]);
    let appellant = key("appellant");
    let segs = vec![segment(0, Tier::Computer, vec![])];
    let (sid, ev) = run_session(&mut chain, &keys, manifest(segs, 3), None, &|_, _| {
        Some(Vote::Valid)
    });
    let first = seats_of(&ev, 0, 0);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let burned = chain.c.state().burned;
    let ev = run_appeal(&mut chain, &keys, sid, &appellant, vec![0], &|_, j| {
        // One appeal seat disagrees: scored wrong, paid nothing.
        Some(if j == 6 { Vote::Invalid } else { Vote::Valid })
    });
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::AppealDecided {
            overturned: false,
            verdict: LocalVerdict::Valid,
            ..
        }
    )));
    assert!(!ev.iter().any(|e| matches!(
        e,
        Event::Slashed {
            reason: SlashReason::Incoherent,
            ..
        }
    )));
    for a in &first {
        assert_eq!(
            chain.c.state().accounts[a].stake,
            1_000,
            "the first round was right"
        );
    }
    assert_eq!(chain.balance(&appellant.public()), APPELLANT_BALANCE - 60);
    // 60 among the 6 agreeing seats: 10 each.
    let appeal_seats = seats_of(&ev, 0, 2);
    let paid: Vec<u64> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Rewarded { seat, amount, .. } if appeal_seats.contains(seat) => Some(*amount),
            _ => None,
        })
        .collect();
    assert_eq!(paid, vec![10; 6]);
    let o = chain.c.outcome(&sid).unwrap();
    let s = &o.appeals.rounds[0].segments[0];
    assert_eq!(s.result, AppealResult::Upheld);
    assert_eq!((s.paid, s.refunded, s.burned, s.slashed), (60, 0, 0, 0));
    assert_eq!(o.trace, TraceVerdict::Pass);
    // Only the disagreeing appeal seat's probabilistic slash (if drawn) burned anything.
    let dissenter = appeal_seats[6];
    let slashed = chain.c.state().auditors[&dissenter].slashed;
    assert_eq!(chain.c.state().burned, burned + slashed);
    chain.assert_supply_conserved();
}

#[test]
fn appeals_are_refused_with_the_reason_and_charge_nothing() {
    let params = Params {
        max_appeal_rounds: 1,
        ..test_params()
    };
    let (mut chain, keys) = Chain::for_appeals(params, &[(Tier::Computer, 20)]);
    let appellant = key("appellant");
    let poor = key("poor");
    let provider = key("provider");

    // Unknown session.
    let nope = Hash::sha256(b"nope");
    assert_eq!(
        chain.try_apply(
            &appellant,
            Call::Appeal {
                session: nope,
                segments: vec![0]
            }
        ),
        Err(TxError::UnknownSession(nope))
    );

    // A live session is not decided yet.
    let live = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(
        &provider,
        Call::OpenSession(manifest(vec![segment(7, Tier::Computer, vec![])], 3)),
    );
    chain.block();
    assert_eq!(
        chain.try_apply(
            &appellant,
            Call::Appeal {
                session: live,
                segments: vec![0]
            }
        ),
        Err(TxError::NotDecided(live))
    );
    while chain.c.state().sessions.contains_key(&live) {
        chain.block();
    }

    // Segment 0 wrongly Invalid, 1 Propagated, 2 a honeypot (opened), 3 undecided (its
    // seats abstained and no higher tier is staffed).
    let hp_salt = Salt([5; 32]);
    let mut hp = segment(2, Tier::Computer, vec![]);
    hp.honeypot = Some(honeypot_commitment(
        &hp.id,
        Vote::Valid,
        Difficulty::Obvious,
        &hp_salt,
    ));
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
        hp,
        segment(3, Tier::Computer, vec![]),
    ];
    let (sid, _) = run_session(
        &mut chain,
        &keys,
        manifest(segs, 3),
        Some((2, Vote::Valid, hp_salt)),
        &|s, _| {
            Some(match s {
                0 => Vote::Invalid,
                3 => Vote::Abstain,
                _ => Vote::Valid,
            })
        },
    );
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(o.segments[2].honeypot, Some(Vote::Valid));
    assert_eq!(o.segments[3].verdict, SegmentVerdict::Undecided);
    let balance = chain.balance(&appellant.public());
    let nonce = chain.c.nonce(&appellant.public());
    let root = chain.c.state_root();
    let refuse = |chain: &mut Chain, who: &Keypair, segments: Vec<u16>| {
        chain
            .try_apply(
                who,
                Call::Appeal {
                    session: sid,
                    segments,
                },
            )
            .unwrap_err()
    };
    assert_eq!(
        refuse(&mut chain, &appellant, vec![9]),
        TxError::UnknownSegment(9)
    );
    assert_eq!(
        refuse(&mut chain, &appellant, vec![2]),
        TxError::AppealHoneypot(2)
    );
    assert_eq!(
        refuse(&mut chain, &appellant, vec![0, 3]),
        TxError::AppealUndecided(3)
    );
    let e = refuse(&mut chain, &appellant, vec![3]);
    assert!(e.to_string().contains("segment 3 was not decided"), "{e}");
    let e = refuse(&mut chain, &poor, vec![0]);
    assert_eq!(e, TxError::InsufficientBalance { have: 10, need: 60 });
    let e = refuse(&mut chain, &appellant, vec![0, 1, 2]);
    assert_eq!(e, TxError::AppealHoneypot(2));
    // Refusals changed nothing: no bond taken, no nonce used, the same state.
    assert_eq!(chain.balance(&appellant.public()), balance);
    assert_eq!(chain.balance(&poor.public()), 10);
    assert_eq!(chain.c.nonce(&appellant.public()), nonce);
    assert_eq!(chain.c.state_root(), root);

    // While a round is judged, another appeal waits its turn (its bond escrowed at once):
    // nobody is refused because someone else appealed first.
    chain.submit(
        &appellant,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    let e = refuse(&mut chain, &poor, vec![1]);
    assert_eq!(e, TxError::InsufficientBalance { have: 10, need: 60 });
    let second = key("appellant-2");
    chain.submit(
        &appellant,
        Call::Transfer {
            to: second.public(),
            amount: 100,
        },
    );
    chain.block();
    let queued = chain
        .try_apply(
            &second,
            Call::Appeal {
                session: sid,
                segments: vec![1],
            },
        )
        .unwrap();
    assert!(queued.iter().any(|e| matches!(e,
        Event::AppealQueued { session, position: 0, bond: 60, .. } if *session == sid)));
    assert_eq!(chain.c.state().sessions[&sid].queued.len(), 1);
    // The provider keys none of the appeal seats: the round is starved. Segment 0's error
    // verdict stands, the provider pays the starved seats, the appellant (no seat of the
    // deciding round, so no standing) forfeits its bond, which pays the provider back for
    // them (the rest burns), and the round does not use up the segment's appeal rounds.
    let provider_before = chain.balance(&key("provider").public());
    let mut starved_ev = Vec::new();
    while chain.c.outcome(&sid).unwrap().appeals.rounds.is_empty() {
        starved_ev.extend(chain.block());
    }
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        AppealResult::Starved
    );
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Invalid);
    // 100 sent to a new account, the fee for creating it, and the bond.
    assert_eq!(
        chain.balance(&appellant.public()),
        balance - 100 - test_params().new_account_fee - test_params().appeal_bond
    );
    let paid: u64 = starved_ev
        .iter()
        .filter_map(|e| match e {
            Event::SeatStarved { paid, .. } => Some(*paid),
            _ => None,
        })
        .sum();
    assert_eq!(paid, 7 * test_params().reward, "seven starved appeal seats");
    // Paid back out of the forfeit bond (60 covers 7 x 6 = 42).
    assert_eq!(chain.balance(&key("provider").public()), provider_before);
    // The queued appeal opened next, on segment 1 (Valid of its own): starved too, so its
    // Valid verdict no longer stands.
    assert!(starved_ev.iter().any(|e| matches!(e,
        Event::AppealOpened { session, round: 3, segments, .. } if *session == sid && segments == &vec![1])));
    while chain.c.outcome(&sid).unwrap().appeals.rounds.len() < 2 {
        chain.block();
    }
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(
        o.appeals.rounds[1].segments[0].result,
        AppealResult::Starved
    );
    assert_eq!(
        o.appeals.rounds[1].segments[0].previous,
        LocalVerdict::Valid
    );
    // Its own verdict is Undecided now; it rests on segment 0's error: Propagated.
    assert_eq!(o.segments[1].verdict, SegmentVerdict::Propagated);
    // A keyed round that decides uses up segment 0's one round.
    run_appeal(&mut chain, &keys, sid, &appellant, vec![0], &|_, _| {
        Some(Vote::Invalid)
    });
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(o.appeals.rounds[2].segments[0].result, AppealResult::Upheld);
    assert_eq!(
        refuse(&mut chain, &appellant, vec![0]),
        TxError::AppealRoundsExhausted {
            segment: 0,
            rounds: 1
        }
    );
    let e = refuse(&mut chain, &appellant, vec![0]);
    assert!(
        e.to_string()
            .contains("segment 0 already had 1 appeal rounds"),
        "{e}"
    );

    // After the window: closed, naming the last height that accepted an appeal.
    let until = o.appeals.until;
    while chain.height < until {
        chain.block();
    }
    let e = refuse(&mut chain, &appellant, vec![1]);
    assert_eq!(
        e,
        TxError::AppealWindowClosed {
            session: sid,
            closed_at: until
        }
    );
    assert!(
        e.to_string().contains(&format!("closed at block {until}")),
        "{e}"
    );
    assert_eq!(chain.c.finality(&sid), Some(Finality::Final { at: until }));
    chain.assert_supply_conserved();
}

#[test]
fn an_appeal_needs_enough_fresh_auditors() {
    // Six Computer auditors, three sat on the segment: 2k + 1 = 7 fresh are needed.
    let (mut chain, keys) = Chain::for_appeals(test_params(), &[(Tier::Computer, 6)]);
    let appellant = key("appellant");
    let (sid, _) = run_session(
        &mut chain,
        &keys,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3),
        None,
        &|_, _| Some(Vote::Valid),
    );
    let e = chain
        .try_apply(
            &appellant,
            Call::Appeal {
                session: sid,
                segments: vec![0],
            },
        )
        .unwrap_err();
    assert_eq!(
        e,
        TxError::AppealUnstaffed {
            segment: 0,
            tier: Tier::Computer,
            needed: 7,
            eligible: 3
        }
    );
    assert!(
        e.to_string()
            .contains("7 fresh Computer auditors needed, 3 eligible"),
        "{e}"
    );
    assert_eq!(chain.balance(&appellant.public()), APPELLANT_BALANCE);
}

#[test]
fn an_appeal_goes_up_a_tier_when_its_own_is_exhausted() {
    // Not enough fresh Computer auditors, enough LLM ones (2k + 1 = 7 of them).
    let (mut chain, keys) =
        Chain::for_appeals(test_params(), &[(Tier::Computer, 6), (Tier::Llm, 8)]);
    let appellant = key("appellant");
    let (sid, _) = run_session(
        &mut chain,
        &keys,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3),
        None,
        &|_, _| Some(Vote::Invalid),
    );
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Fail);
    let ev = run_appeal(&mut chain, &keys, sid, &appellant, vec![0], &|_, _| {
        Some(Vote::Valid)
    });
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::SeatAssigned {
            round: 2,
            tier: Tier::Llm,
            ..
        }
    )));
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].tier, Tier::Llm);
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Valid);
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        AppealResult::Overturned
    );
    assert_eq!(o.trace, TraceVerdict::Pass);
    chain.assert_supply_conserved();
}

/// The same blocks give the same state root, appeals included.
#[test]
fn appeals_are_deterministic() {
    let run = || {
        let (mut chain, keys) = Chain::for_appeals(test_params(), &[(Tier::Computer, 12)]);
        let (sid, _) = wrongly_failed(&mut chain, &keys);
        let mid = chain.c.state_root();
        run_appeal(
            &mut chain,
            &keys,
            sid,
            &key("appellant"),
            vec![0],
            &|_, j| Some(if j == 0 { Vote::Invalid } else { Vote::Valid }),
        );
        for _ in 0..25 {
            chain.block();
        }
        assert_eq!(
            chain.c.state_root(),
            Contract::from_state(chain.c.state().clone()).state_root(),
            "the incremental root differs from a rebuild"
        );
        (mid, chain.c.state_root(), chain.c.snapshot())
    };
    let (a_mid, a, snap) = run();
    let (b_mid, b, _) = run();
    assert_eq!(a_mid, b_mid);
    assert_eq!(a, b);
    assert_eq!(Contract::from_snapshot(&snap).unwrap().state_root(), a);
}

/// The simulator's appellant experiment: appealing the verdicts that are wrong pays,
/// appealing at random costs.
#[cfg(feature = "sim")]
#[test]
fn a_right_appellant_profits_and_a_random_one_loses() {
    use trust_contracts::sim::{AppealExperiment, appeal_experiment};
    let cfg = AppealExperiment::default();
    let r = appeal_experiment(&cfg).unwrap();
    eprintln!("{}", serde_json::to_string_pretty(&r).unwrap());
    assert_eq!(r.sessions_decided, u64::from(cfg.sim.sessions));
    assert!(r.wrongly_decided > 0, "no wrong verdict to appeal");
    assert!(r.right.appeals > 0 && r.random.appeals > 0);
    assert!(
        r.right.overturned > r.right.upheld + r.right.undecided,
        "{r:?}"
    );
    assert!(r.random.upheld > r.random.overturned, "{r:?}");
    assert!(r.right.profit > 0, "{r:?}");
    assert!(r.random.profit < 0, "{r:?}");
    // Seeded: the same settings, the same run.
    assert_eq!(appeal_experiment(&cfg).unwrap(), r);
}
