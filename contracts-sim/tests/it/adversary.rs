//! The integrity attacks of issue 39, each mounted against the contract with real signed
//! transactions: a provider (or a colluding minority, or a stranger) tries to pass a wrong
//! trace, pick its judges or take an honest auditor's stake, and fails. Each test names the
//! finding it answers. (Finding 7, the seed, is the block header's: see the node's chain
//! tests; finding 10, reasons, is the seats': see the node's judging tests.)

use trust_contracts::{
    AppealResult, Event, Finality, Floors, Params, Phase, SegmentVerdict, SlashReason,
    TraceVerdict, TxError,
};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, SealingPublicKey, Vote,
    badkey::{BadKeyError, BadKeyProof, prove_bad_key},
    commitment, honeypot_commitment,
    seal::{SealedKey, key_context, open_key, seal_key},
    tx::{
        Call, DeliveredKey, Difficulty, HoneypotOpening, SeatKey, SegmentEntry, SessionManifest,
        SessionTerms, Tier, Tx,
    },
    units::Ppm,
};

use crate::common::{
    self, Chain, SupplyCheck, VOTE_SALT, commit_votes, deliver_keys, find, key, manifest, open_set,
    reveal_votes, run_round, seats_of, segment, test_params, why, with_honeypot_set,
};

/// A chain with `auditors` per tier (1000 staked each, declaring `math`) and a rich
/// provider, checking supply after every block.
pub(crate) fn chain(params: Params, auditors: &[(Tier, usize)]) -> (Chain, Vec<Keypair>) {
    Chain::with_accounts(
        params,
        auditors,
        &[
            ("provider", 1_000_000),
            ("stranger", 100_000),
            ("sybil-0", 10_000),
            ("sybil-1", 10_000),
            ("sybil-2", 10_000),
        ],
        SupplyCheck::EachBlock,
    )
}

/// Opens `m` from the provider and runs blocks until its seats are drawn; returns the
/// session id and the events so far.
pub(crate) fn open(chain: &mut Chain, m: SessionManifest) -> (Hash, Vec<Event>) {
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(&provider, Call::OpenSession(m));
    let mut ev = chain.block();
    ev.extend(chain.block());
    (sid, ev)
}

/// Runs the session to its outcome, the provider opening its mapping when due (and its
/// honeypot set first when that is empty; a provider that must open a non-empty set does
/// so itself before, or leaves it closed and forfeits).
pub(crate) fn finish(chain: &mut Chain, sid: Hash) -> Vec<Event> {
    let provider = key("provider");
    let empty = trust_protocol::honeypot_set_commitment(&[], &common::SET_SALT);
    let mut all = Vec::new();
    while chain.c.state().sessions.contains_key(&sid) {
        let s = &chain.c.state().sessions[&sid];
        if s.honeypots_opened || s.manifest.honeypot_set == empty {
            chain.reveal_mapping_when_due(&provider, sid);
        }
        all.extend(chain.block());
        assert!(chain.height < 1_000, "session never finished");
    }
    all
}

pub(crate) fn slashed(ev: &[Event]) -> Vec<(AccountId, u64)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Slashed { seat, amount, .. } => Some((*seat, *amount)),
            _ => None,
        })
        .collect()
}

/// Finding 1: a provider asking for a 1-block window (or a k, or a beta, below the
/// network's floors) is refused at `OpenSession`, charging nothing; a window of 0 (the
/// network's own) is stretched to the floor of each tier seated in a round.
#[test]
fn finding_1_tiny_windows_and_weak_terms_are_refused_at_the_floor() {
    let params = Params::default();
    let floors = params.floors.clone();
    let (mut chain, _) = chain(params, &[(Tier::Computer, 5), (Tier::Llm, 5)]);
    let provider = key("provider");
    let before = chain.balance(&provider.public());
    let root = chain.c.state_root();
    let base = || manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let with_terms = |f: &dyn Fn(&mut SessionManifest)| {
        let mut m = base();
        f(&mut m);
        Call::OpenSession(m)
    };
    let cases: Vec<(Call, TxError)> = vec![
        (
            with_terms(&|m| m.terms.commit_window = 1),
            TxError::BelowFloor {
                term: "commit window",
                tier: Some(Tier::Computer),
                asked: 1,
                floor: floors.min_commit_window[0],
            },
        ),
        (
            with_terms(&|m| m.terms.reveal_window = 1),
            TxError::BelowFloor {
                term: "reveal window",
                tier: Some(Tier::Computer),
                asked: 1,
                floor: floors.min_reveal_window[0],
            },
        ),
        (
            with_terms(&|m| m.quorum.k = [1, 3, 3]),
            TxError::BelowFloor {
                term: "k",
                tier: Some(Tier::Computer),
                asked: 1,
                floor: 3,
            },
        ),
        // An allowed tier's k counts too: an escalation could go there.
        (
            with_terms(&|m| m.quorum.k = [3, 3, 1]),
            TxError::BelowFloor {
                term: "k",
                tier: Some(Tier::Human),
                asked: 1,
                floor: 3,
            },
        ),
        (
            with_terms(&|m| m.quorum.beta = Ppm(1)),
            TxError::BelowFloor {
                term: "beta (ppm)",
                tier: None,
                asked: 1,
                floor: u64::from(floors.min_beta.0),
            },
        ),
    ];
    for (call, want) in cases {
        let got = chain.try_apply(&provider, call).unwrap_err();
        assert_eq!(got, want);
        let text = got.to_string();
        assert!(text.contains("at least"), "{text}");
    }
    assert_eq!(chain.balance(&provider.public()), before, "nothing charged");
    assert_eq!(chain.c.state_root(), root, "nothing changed");
    // A tier the terms leave out may ask for anything: it is never seated.
    let ok = with_terms(&|m| {
        m.quorum.k = [3, 3, 1];
        m.terms.tiers = [true, true, false];
    });
    assert!(chain.try_apply(&provider, ok).is_ok());

    // The network's own window (0) is stretched to the floor of the tiers seated: an LLM
    // segment's round runs at least the LLM floor.
    let (sid, _) = open(
        &mut chain,
        manifest(vec![segment(1, Tier::Llm, vec![])], 3, 0),
    );
    let Some(Phase::Commit { until, .. }) = chain.phase(&sid) else {
        panic!("not committing");
    };
    assert_eq!(until, chain.height + floors.min_commit_window[1]);
    assert!(floors.min_commit_window[1] > Params::default().commit_window);
}

/// Finding 1, the slashes: honest seats whose keys come too late to judge are starved
/// (paid, never slashed), and however many seats an auditor holds in one session, it loses
/// at most `max_session_loss` there.
#[test]
fn finding_1_late_keys_starve_and_one_session_costs_at_most_the_cap() {
    let params = Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    };
    let cap = params.max_session_loss;
    let lead = params.key_lead;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 3)]);
    let provider = key("provider");
    // Five segments, k = 3 of the 3 auditors: each holds five seats.
    let segs: Vec<SegmentEntry> = (0..5).map(|i| segment(i, Tier::Computer, vec![])).collect();
    let (sid, drawn) = open(&mut chain, manifest(segs, 3, 0));
    let Some(Phase::Commit { until, .. }) = chain.phase(&sid) else {
        panic!("not committing");
    };
    // Keys sent `lead - 1` blocks before the deadline: too late to count.
    while chain.height + lead < until {
        chain.block();
    }
    deliver_keys(&mut chain, &provider, sid, 0, &[]);
    chain.block();
    let s = &chain.c.state().sessions[&sid];
    assert!(
        s.segments
            .iter()
            .flat_map(|g| &g.seats)
            .all(|x| !x.keyed(0)),
        "a key {} blocks before the deadline is late",
        lead - 1
    );
    let ev = finish(&mut chain, sid);
    assert!(slashed(&ev).is_empty(), "starved seats are never slashed");
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.starved_seats, 15);

    // A second session, keyed in time, where every seat stays away: each auditor is a
    // no-show five times over, and loses one cap.
    let segs: Vec<SegmentEntry> = (10..15)
        .map(|i| segment(i, Tier::Computer, vec![]))
        .collect();
    let (sid, drawn2) = open(&mut chain, manifest(segs, 3, 0));
    let _ = drawn;
    deliver_keys(&mut chain, &provider, sid, 0, &[]);
    let stakes: Vec<u64> = keys
        .iter()
        .map(|k| chain.c.state().accounts[&k.public()].stake)
        .collect();
    let ev = finish(&mut chain, sid);
    assert_eq!(seats_of(&drawn2, 0, 0).len(), 3);
    let no_shows = slashed(&ev);
    assert_eq!(no_shows.len(), 3, "one slash per auditor, not one per seat");
    for (k, before) in keys.iter().zip(stakes) {
        let after = chain.c.state().accounts[&k.public()].stake;
        assert_eq!(before - after, cap);
        assert_eq!(chain.c.state().appealable[&sid].losses[&k.public()], cap);
    }
}

/// Finding 1, validators: a block's slashes cut an account's voting power by at most
/// `max_power_cut` of it; power follows stake down block by block, and up at once.
#[test]
fn finding_1_voting_power_falls_at_most_a_share_per_block() {
    let params = Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        penalty: 900,
        max_session_loss: 900,
        ..test_params()
    };
    let cut = params.max_power_cut;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 3)]);
    let victim = keys[0].public();
    assert_eq!(chain.c.voting_power(&victim), 1_000);
    let (sid, _) = open(
        &mut chain,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0),
    );
    deliver_keys(&mut chain, &key("provider"), sid, 0, &[]);
    finish(&mut chain, sid);
    let stake = chain.c.state().accounts[&victim].stake;
    assert_eq!(stake, 100, "a no-show slashed 900");
    let mut power = chain.c.voting_power(&victim);
    assert!(power > stake);
    let mut blocks = 0;
    while power > stake {
        let before = power;
        chain.block();
        power = chain.c.voting_power(&victim);
        assert!(power < before, "power keeps falling towards stake");
        let most = cut.ceil_mul(before).max(1);
        assert!(before - power <= most, "{before} -> {power}");
        blocks += 1;
    }
    assert!(blocks > 1, "not all at once");
    chain.submit(&keys[0], Call::Bond { amount: 5 });
    chain.block();
    assert_eq!(chain.c.voting_power(&victim), 105, "up at once");
}

/// Finding 2: honeypots are fixed before voting. A provider whose tail step was judged
/// wrong cannot open it as a honeypot afterwards (it is not in the committed set); had it
/// committed the conclusion, or a step the trace rests on, the set could never open, and
/// the bond is forfeited with the trace still failing.
#[test]
fn finding_2_selective_honeypot_opening_cannot_turn_fail_into_pass() {
    let params = test_params();
    let bond = params.honeypot_bond;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let salt = Salt([1; 32]);
    for committed in [vec![], vec![1u16], vec![0u16]] {
        // 0 <- 1: 1 is the conclusion, and wrong.
        let mut segs = vec![
            segment(0, Tier::Computer, vec![]),
            segment(1, Tier::Computer, vec![0]),
        ];
        segs[1].conclusion = true;
        for g in &mut segs {
            g.honeypot = Some(honeypot_commitment(
                &g.id,
                Vote::Invalid,
                Difficulty::Subtle,
                &salt,
            ));
        }
        let (sid, drawn) = open(
            &mut chain,
            with_honeypot_set(manifest(segs, 3, 0), &committed),
        );
        run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|s, _| {
            Some(if s == 0 { Vote::Valid } else { Vote::Invalid })
        });
        assert!(matches!(chain.phase(&sid), Some(Phase::Disclose { .. })));
        let tail = HoneypotOpening {
            segment: 1,
            verdict: Vote::Invalid,
            difficulty: Difficulty::Subtle,
            salt,
        };
        let first = HoneypotOpening {
            segment: 0,
            ..tail.clone()
        };
        let burned_before = chain.c.state().burned;
        match committed.as_slice() {
            [] => {
                // The votes are public: the wrong tail would make a convenient honeypot.
                assert_eq!(
                    chain.try_apply(&provider, open_set(sid, vec![tail])),
                    Err(TxError::HoneypotSetMismatch)
                );
            }
            [1] => assert_eq!(
                chain.try_apply(&provider, open_set(sid, vec![tail])),
                Err(TxError::HoneypotNotAllowed {
                    segment: 1,
                    why: "it is flagged as the trace's conclusion"
                })
            ),
            _ => assert_eq!(
                chain.try_apply(&provider, open_set(sid, vec![first])),
                Err(TxError::HoneypotHasDependents(0))
            ),
        }
        finish(&mut chain, sid);
        let o = chain.c.outcome(&sid).unwrap();
        assert_eq!(o.trace, TraceVerdict::Fail, "committed {committed:?}");
        assert!(o.segments.iter().all(|g| g.honeypot.is_none()));
        if committed.is_empty() {
            assert!(!o.honeypots_forfeited);
        } else {
            assert!(o.honeypots_forfeited);
            assert_eq!(o.bond_burned, 2 * bond);
            assert_eq!(chain.c.state().burned - burned_before, 2 * bond);
        }
    }
}

/// Finding 2, the record: a false "known error" whose honest judgements reach a quorum is
/// disputed at any tau (here tau at its ceiling, k = 5: three honest Valid votes against
/// two colluders), burning the bond and scoring nobody; and misses on honeypots of providers
/// that paid no fees never count towards the rubber-stamp rule's providers.
#[test]
fn finding_2_and_6_a_false_honeypot_never_slashes_or_flags_an_honest_seat() {
    let mut params = Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    };
    params.rubber_stamp.min_samples = 1;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let salt = Salt([2; 32]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 5, 0);
    m.quorum.tau = trust_contracts::DEFAULT_MAX_TAU;
    m.segments[0].honeypot = Some(honeypot_commitment(
        &m.segments[0].id,
        Vote::Invalid,
        Difficulty::Obvious,
        &salt,
    ));
    let m = with_honeypot_set(m, &[0]);
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    assert_eq!(seats.len(), 5);
    let colluders = [seats[0], seats[1]];
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j < 2 { Vote::Invalid } else { Vote::Valid })
    });
    chain.submit(
        &provider,
        open_set(
            sid,
            vec![HoneypotOpening {
                segment: 0,
                verdict: Vote::Invalid,
                difficulty: Difficulty::Obvious,
                salt,
            }],
        ),
    );
    let ev = finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.disputed_honeypots, 1);
    assert!(slashed(&ev).is_empty(), "{:?}", slashed(&ev));
    for s in &seats {
        let au = &chain.c.state().auditors[s];
        assert_eq!(au.honeypots, Default::default(), "no record either way");
        assert!(!au.flagged);
    }
    for c in colluders {
        assert_eq!(
            chain.c.state().auditors[&c].disagreed,
            0,
            "not scored either"
        );
    }
}

/// Finding 6, the second key: misses on known errors planted by providers that never paid
/// fees name no provider, so a griefer cannot reach `min_providers` with fresh keys.
#[test]
fn finding_6_a_second_provider_key_does_not_count_without_fees() {
    let mut params = test_params();
    params.rubber_stamp.min_samples = 2;
    let floor = params.rubber_stamp.min_provider_fees;
    let (mut chain, keys) = Chain::with_accounts(
        params,
        &[(Tier::Computer, 3)],
        &[("provider", 1_000_000), ("griefer-2", 1_000_000)],
        SupplyCheck::EachBlock,
    );
    let target = keys[0].public();
    let salt = Salt([3; 32]);
    for (n, who) in ["provider", "griefer-2"].iter().enumerate() {
        let griefer = key(who);
        let mut m = manifest(vec![segment(20 + n as u8, Tier::Computer, vec![])], 3, 0);
        m.segments[0].honeypot = Some(honeypot_commitment(
            &m.segments[0].id,
            Vote::Invalid,
            Difficulty::Obvious,
            &salt,
        ));
        let m = with_honeypot_set(m, &[0]);
        let sid = Tx::session_id(&griefer.public(), chain.c.nonce(&griefer.public()));
        chain.submit(&griefer, Call::OpenSession(m));
        chain.block();
        let drawn = chain.block();
        deliver_keys(&mut chain, &griefer, sid, 0, &[]);
        let ids = vec![chain.c.state().sessions[&sid].segments[0].entry.id];
        // The target approves; the two others reject (the honeypot holds up).
        let plan = commit_votes(&mut chain, &keys, sid, &ids, &drawn, 0, &|_, j| {
            let seat = seats_of(&drawn, 0, 0)[j];
            Some(if seat == target {
                Vote::Valid
            } else {
                Vote::Invalid
            })
        });
        chain.block();
        while matches!(chain.phase(&sid), Some(Phase::Commit { .. })) {
            chain.block();
        }
        reveal_votes(&mut chain, sid, &plan);
        chain.block();
        chain.submit(
            &griefer,
            open_set(
                sid,
                vec![HoneypotOpening {
                    segment: 0,
                    verdict: Vote::Invalid,
                    difficulty: Difficulty::Obvious,
                    salt,
                }],
            ),
        );
        chain.reveal_mapping(&griefer, sid);
        chain.block();
        assert!(chain.c.outcome(&sid).is_some());
        assert!(chain.c.state().accounts[&griefer.public()].fees_paid < floor);
    }
    let au = &chain.c.state().auditors[&target];
    assert_eq!(au.honeypots.errors_approved[0], 2, "both misses on record");
    assert!(
        au.honeypots.miss_providers.is_empty(),
        "no provider paid fees"
    );
    assert!(!au.flagged, "two fresh keys flag nobody");
}

/// Finding 3: a required domain that only the provider's own accounts declare is refused
/// at `OpenSession` (its pool holds less than the floor of stake), charging nothing; a
/// domain declared later counts only after the network's delay.
#[test]
fn finding_3_a_private_required_domain_is_refused_and_new_expertise_waits() {
    let params = Params {
        floors: Floors {
            min_domain_stake: 2_500,
            ..Floors::dev()
        },
        ..Params::default()
    };
    let delay = params.expertise_delay;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 3)]);
    let provider = key("provider");
    // Two sybils declare a private domain, 1000 staked each.
    for s in ["sybil-0", "sybil-1"] {
        chain.submit(
            &key(s),
            Call::RegisterAuditor {
                tier: Tier::Computer,
                expertise: vec!["private".into()],
                sealing_key: SealingPublicKey([1; 32]),
                stake: 1_000,
            },
        );
    }
    chain.block();
    // Registrations are drawn (and count in a domain's pool) after their warm-up.
    for _ in 0..delay {
        chain.block();
    }
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 1, 0);
    m.domain = "private".into();
    m.terms = SessionTerms {
        domain_required: true,
        ..SessionTerms::default()
    };
    let before = chain.balance(&provider.public());
    let e = chain
        .try_apply(&provider, Call::OpenSession(m.clone()))
        .unwrap_err();
    assert_eq!(
        e,
        TxError::DomainPoolTooSmall {
            domain: "private".into(),
            tier: Tier::Computer,
            stake: 2_000,
            floor: 2_500,
        }
    );
    assert!(e.to_string().contains("at least 2500"), "{e}");
    assert_eq!(chain.balance(&provider.public()), before);
    // An honest auditor declares it too: it counts only `expertise_delay` blocks later.
    chain.submit(
        &keys[0],
        Call::DeclareExpertise {
            expertise: vec!["math".into(), "private".into()],
        },
    );
    let ev = chain.block();
    let at = chain.height + delay;
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::ExpertiseDeclared { at: a, .. } if *a == at))
    );
    assert!(matches!(
        chain.try_apply(&provider, Call::OpenSession(m.clone())),
        Err(TxError::DomainPoolTooSmall { stake: 2_000, .. })
    ));
    while chain.height + 1 < at {
        chain.block();
    }
    let ev = chain.block();
    assert!(ev.iter().any(
        |e| matches!(e, Event::ExpertiseChanged { account, .. } if *account == keys[0].public())
    ));
    assert!(chain.try_apply(&provider, Call::OpenSession(m)).is_ok());
    // A declaration by a non-auditor is refused.
    assert_eq!(
        chain.try_apply(
            &key("stranger"),
            Call::DeclareExpertise {
                expertise: vec!["x".into()]
            }
        ),
        Err(TxError::NotAnAuditor)
    );
}

/// Finding 4: a segment's verdict is a function of the set of its round's judgements,
/// never of their order. Eight honest Invalid reveals and one colluding Valid (k = 1,
/// dev floors): wherever the proposer puts the colluder, the verdict is Invalid.
#[test]
fn finding_4_the_verdict_does_not_depend_on_reveal_order() {
    for position in 0..9usize {
        let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 9), (Tier::Human, 19)]);
        let m = manifest(vec![segment(0, Tier::Computer, vec![])], 1, 8);
        let id = m.segments[0].id;
        let (sid, drawn) = open(&mut chain, m);
        let seats = seats_of(&drawn, 0, 0);
        assert_eq!(seats.len(), 9);
        let colluder = seats[0];
        deliver_keys(&mut chain, &key("provider"), sid, 0, &[]);
        let vote = |s: &AccountId| {
            if *s == colluder {
                Vote::Valid
            } else {
                Vote::Invalid
            }
        };
        for s in &seats {
            chain.submit(
                find(&keys, s),
                Call::Commit {
                    session: sid,
                    segment: 0,
                    commitment: commitment(&sid, &id, s, vote(s), &VOTE_SALT, &why(vote(s))),
                },
            );
        }
        chain.block();
        // The reveals land in the order the proposer chose: the colluder at `position`.
        let mut order: Vec<AccountId> = seats.iter().copied().filter(|s| *s != colluder).collect();
        order.insert(position, colluder);
        for s in &order {
            chain.submit(
                find(&keys, s),
                Call::Reveal {
                    session: sid,
                    segment: 0,
                    vote: vote(s),
                    salt: VOTE_SALT,
                    reason: why(vote(s)),
                },
            );
        }
        chain.block();
        finish(&mut chain, sid);
        let o = chain.c.outcome(&sid).unwrap();
        assert_eq!(
            o.segments[0].verdict,
            SegmentVerdict::Invalid,
            "colluder at {position}"
        );
        assert_eq!(
            (o.segments[0].votes.valid, o.segments[0].votes.invalid),
            (1, 8)
        );
    }
}

/// Finding 4, starvation: a provider that keys only the seats it controls cannot let
/// them decide: the seats it starved count in the quorum's size, so two votes of five
/// seats decide nothing, and the provider pays the three it starved.
#[test]
fn finding_4_keying_only_a_minority_decides_nothing() {
    let params = test_params();
    let reward = params.reward;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 5), (Tier::Human, 11)]);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 2);
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    let starved = [seats[2], seats[3], seats[4]];
    run_round(&mut chain, &keys, sid, 0, &drawn, &starved, &|_, j| {
        (j < 2).then_some(Vote::Valid)
    });
    let ev = finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!(o.segments[0].votes.starved, 3);
    assert_eq!(o.segments[0].q, 3, "ceil(0.6 x 5)");
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
    assert_eq!((o.starved_seats, o.starved_paid), (3, 3 * reward));
    assert!(slashed(&ev).is_empty());
}

/// The provider's `DeliverKeys` for every seat of `round`, sealed for real to each seat's
/// registered key under its context; the keys of the seats in `garbage` are sealed bytes
/// that do not open (the right length, random content). Returns what each seat was sent,
/// in order.
fn deliver_sealed(
    chain: &mut Chain,
    sid: Hash,
    round: u8,
    garbage: &[AccountId],
) -> Vec<(AccountId, DeliveredKey)> {
    let s = chain.c.state().sessions[&sid].clone();
    let mut keys = Vec::new();
    for (i, g) in s.segments.iter().enumerate() {
        for x in g.seats.iter().filter(|x| x.round == round) {
            for seg in std::iter::once(i as u16).chain(g.entry.depends_on.iter().copied()) {
                let id = s.segments[usize::from(seg)].entry.id;
                let eph = Hash::of_parts("eph", &[x.account.as_ref(), &seg.to_le_bytes()]).0;
                let mut sealed = seal_key(
                    &common::sealing(&x.account).public(),
                    &[seg as u8; 32],
                    eph,
                    &key_context(&sid, &id, &x.account),
                )
                .unwrap();
                if garbage.contains(&x.account) {
                    sealed.ciphertext =
                        Hash::of_parts("garbage", &[&eph]).0.repeat(2)[..48].to_vec();
                }
                keys.push(SeatKey {
                    segment: seg,
                    seat: x.account,
                    sealed,
                });
            }
        }
    }
    let sent = keys
        .iter()
        .map(|k| {
            (
                k.seat,
                DeliveredKey {
                    segment: k.segment,
                    sealed: k.sealed.clone(),
                },
            )
        })
        .collect();
    chain.submit(&key("provider"), Call::DeliverKeys { session: sid, keys });
    sent
}

/// The report a seat makes from what it was sent: its keys on record (the first of each
/// segment it needs), and the proof for the one of `bad_segment`.
fn report_of(
    chain: &Chain,
    sid: Hash,
    seat: AccountId,
    segment: u16,
    sent: &[(AccountId, DeliveredKey)],
    bad_segment: u16,
) -> Call {
    let s = &chain.c.state().sessions[&sid];
    let mut needs: Vec<u16> = vec![segment];
    needs.extend(
        s.segments[usize::from(segment)]
            .entry
            .depends_on
            .iter()
            .copied(),
    );
    let mut keys: Vec<DeliveredKey> = Vec::new();
    for (to, k) in sent {
        if *to == seat && needs.contains(&k.segment) && !keys.iter().any(|e| e.segment == k.segment)
        {
            keys.push(k.clone());
        }
    }
    let bad = keys.iter().position(|k| k.segment == bad_segment).unwrap();
    let id = s.segments[usize::from(bad_segment)].entry.id;
    let (shared, proof) = prove_bad_key(
        &common::sealing(&seat),
        &keys[bad].sealed,
        &key_context(&sid, &id, &seat),
    )
    .unwrap();
    Call::ReportBadKey {
        session: sid,
        segment,
        keys,
        bad: bad as u8,
        shared,
        proof,
    }
}

/// Finding 4, keys that do not open: a provider seals three honest seats of five garbage
/// (keyed on record, unable to read) and keys its two colluders. Before, the honest seats
/// that could not judge were unpaid, those that stayed away were slashed as no-shows and
/// dropped out of the quorum's size, so the colluders' two votes decided. Now each honest
/// seat proves its key does not open: it is paid `R` by the provider as starved, never
/// slashed, and counts in the quorum's size, so two votes of five decide nothing.
#[test]
fn finding_4_a_key_that_does_not_open_is_the_providers_cost() {
    let params = Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    };
    let reward = params.reward;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 5), (Tier::Human, 11)]);

    // The attack as it stood: no report. Honest 0 abstains unpaid, honest 1 and 2 stay
    // away, the two colluders decide Valid and the absent honest seats are slashed.
    let m = manifest(vec![segment(40, Tier::Computer, vec![])], 1, 4);
    let (sid, drawn) = open(&mut chain, m.clone());
    let seats = seats_of(&drawn, 0, 0);
    let honest = [seats[0], seats[1], seats[2]];
    deliver_sealed(&mut chain, sid, 0, &honest);
    chain.block();
    let s = &chain.c.state().sessions[&sid];
    assert!(
        s.segments[0].seats.iter().all(|x| x.keyed(0)),
        "garbage is keyed on record"
    );
    let ev = vote_and_finish(&mut chain, &keys, sid, &drawn);
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(
        o.segments[0].verdict,
        SegmentVerdict::Valid,
        "the minority won"
    );
    assert_eq!(o.starved_seats, 0);
    let lost: Vec<AccountId> = slashed(&ev).into_iter().map(|(a, _)| a).collect();
    assert!(
        lost.contains(&seats[1]) && lost.contains(&seats[2]),
        "{lost:?}"
    );

    // The same attack, reported.
    let m = manifest(vec![segment(41, Tier::Computer, vec![])], 1, 4);
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    let honest = [seats[0], seats[1], seats[2]];
    let sent = deliver_sealed(&mut chain, sid, 0, &honest);
    chain.block();
    let before: Vec<u64> = honest.iter().map(|h| chain.balance(h)).collect();
    for h in honest {
        let r = report_of(&chain, sid, h, 0, &sent, 0);
        chain.submit(find(&keys, &h), r);
    }
    let ev = chain.block();
    let proven: Vec<AccountId> = ev
        .iter()
        .filter_map(|e| match e {
            Event::BadKeyProven {
                session,
                segment: 0,
                seat,
            } if *session == sid => Some(*seat),
            _ => None,
        })
        .collect();
    assert_eq!(proven, honest.to_vec());
    let s = &chain.c.state().sessions[&sid];
    for x in &s.segments[0].seats {
        assert_eq!(x.bad_key, honest.contains(&x.account));
        assert_eq!(x.keyed(0), !honest.contains(&x.account));
    }
    // A second report of the same seat changes nothing.
    let again = report_of(&chain, sid, honest[0], 0, &sent, 0);
    assert_eq!(
        chain.try_apply(find(&keys, &honest[0]), again),
        Err(TxError::BadKeyAlreadyProven)
    );
    let ev = vote_and_finish(&mut chain, &keys, sid, &drawn);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.segments[0].verdict,
        SegmentVerdict::Undecided,
        "two votes of five"
    );
    assert_eq!(o.segments[0].votes.valid, 2);
    // The reporter that abstained (its key did not open) is starved as the two absent
    // ones are: the provider's doing, which raises the quorum instead of shrinking it.
    assert_eq!(o.segments[0].votes.abstained, 0);
    assert_eq!(o.segments[0].votes.starved, 3, "the reporters");
    assert_eq!(o.segments[0].votes.missing, 0);
    assert_eq!(o.segments[0].q, 3, "ceil(0.6 x 5): every seat counts");
    assert_eq!((o.starved_seats, o.starved_paid), (3, 3 * reward));
    assert!(slashed(&ev).is_empty(), "{:?}", slashed(&ev));
    for (h, b) in honest.iter().zip(before) {
        assert_eq!(chain.balance(h), b + reward, "paid R as starved");
        assert!(ev.iter().any(|e| matches!(e,
            Event::SeatStarved { seat, paid, .. } if seat == h && *paid == reward)));
    }
}

/// Honest 0 abstains, honest 1 and 2 never commit, the colluders (3, 4) vote Valid; then
/// the session runs to its outcome. Returns the events.
fn vote_and_finish(chain: &mut Chain, keys: &[Keypair], sid: Hash, drawn: &[Event]) -> Vec<Event> {
    let ids = vec![chain.c.state().sessions[&sid].segments[0].entry.id];
    let plan = common::commit_votes(chain, keys, sid, &ids, drawn, 0, &|_, j| match j {
        0 => Some(Vote::Abstain),
        1 | 2 => None,
        _ => Some(Vote::Valid),
    });
    let mut all = chain.block();
    while matches!(chain.phase(&sid), Some(Phase::Commit { .. })) {
        all.extend(chain.block());
    }
    reveal_votes(chain, sid, &plan);
    all.extend(chain.block());
    all.extend(finish(chain, sid));
    all
}

/// Finding 4, false and foreign reports: a report whose key opens, one by a stranger or
/// by an auditor without that seat, one naming keys the seat was never sent (or sent
/// late, or in another order, or not all of them), a tampered proof, and a report after
/// the round: each is refused with its own error and changes nothing. A seat whose
/// premise's key is the bad one proves it with both keys on record.
#[test]
fn finding_4_a_false_or_foreign_bad_key_report_is_refused() {
    let params = test_params();
    let lead = params.key_lead;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 4)]);
    // Segment 1 rests on segment 0: its seat is sent both keys.
    let m = manifest(
        vec![
            segment(50, Tier::Computer, vec![]),
            segment(51, Tier::Computer, vec![0]),
        ],
        1,
        0,
    );
    let (sid, drawn) = open(&mut chain, m);
    let a = seats_of(&drawn, 0, 0)[0];
    let b = seats_of(&drawn, 1, 0)[0];
    assert_ne!(a, b);
    // `a` is keyed well; `b` is sent garbage for both its keys.
    let sent = deliver_sealed(&mut chain, sid, 0, &[b]);
    chain.block();
    let root = chain.c.state_root();
    let refused = |chain: &mut Chain, who: &Keypair, call: Call| {
        let r = chain.try_apply(who, call);
        assert_eq!(
            chain.c.state_root(),
            root,
            "a refused report changed the state"
        );
        r.unwrap_err()
    };

    // The key opens: the report is false.
    let e = ephemeral_report_of_good_key(&chain, sid, a, &sent);
    assert_eq!(
        refused(&mut chain, find(&keys, &a), e),
        TxError::BadKeyNotProven(BadKeyError::Opens)
    );
    // A stranger, and an auditor holding no seat on the segment, with `b`'s own report.
    let good = report_of(&chain, sid, b, 1, &sent, 0);
    assert_eq!(
        refused(&mut chain, &key("stranger"), good.clone()),
        TxError::NotAnAuditor
    );
    let other = keys
        .iter()
        .find(|k| k.public() != a && k.public() != b)
        .unwrap();
    assert_eq!(
        refused(&mut chain, other, good.clone()),
        TxError::NotASeat(other.public())
    );
    // `a` sending `b`'s report: not `a`'s seat on segment 1.
    assert_eq!(
        refused(&mut chain, find(&keys, &a), good.clone()),
        TxError::NotASeat(a)
    );
    let with = |f: &dyn Fn(&mut Vec<DeliveredKey>, &mut u8, &mut BadKeyProof)| {
        let mut c = good.clone();
        if let Call::ReportBadKey {
            keys, bad, proof, ..
        } = &mut c
        {
            f(keys, bad, proof);
        }
        c
    };
    let kb = find(&keys, &b);
    // Keys never delivered: a box of the seat's own making, with a proof that is true of it.
    let made_up = {
        let id = chain.c.state().sessions[&sid].segments[0].entry.id;
        let ctx = key_context(&sid, &id, &b);
        let sealed = SealedKey {
            ephemeral: seal_key(&common::sealing(&b).public(), &[1; 32], [77; 32], &ctx)
                .unwrap()
                .ephemeral,
            ciphertext: vec![0; 48],
        };
        let (shared, proof) = prove_bad_key(&common::sealing(&b), &sealed, &ctx).unwrap();
        Call::ReportBadKey {
            session: sid,
            segment: 1,
            keys: vec![DeliveredKey { segment: 0, sealed }],
            bad: 0,
            shared,
            proof,
        }
    };
    assert_eq!(refused(&mut chain, kb, made_up), TxError::KeysNotOnRecord);
    // Only one of the two keys on record, or both in the other order.
    assert_eq!(
        refused(
            &mut chain,
            kb,
            with(&|k, bad, _| {
                k.retain(|e| e.segment == 0);
                *bad = 0;
            })
        ),
        TxError::KeysNotOnRecord
    );
    assert_eq!(
        refused(
            &mut chain,
            kb,
            with(&|k, bad, _| {
                k.reverse();
                *bad = 1 - *bad;
            })
        ),
        TxError::KeysNotOnRecord
    );
    // A tampered proof.
    assert_eq!(
        refused(&mut chain, kb, with(&|_, _, p| p.0[40] ^= 1)),
        TxError::BadKeyNotProven(BadKeyError::Invalid)
    );
    // The proof of one key offered for the other.
    assert!(matches!(
        refused(&mut chain, kb, with(&|_, bad, _| *bad = 1 - *bad)),
        TxError::BadKeyNotProven(_)
    ));

    // The record is the first key of each bit: good keys sent after the garbage change
    // nothing on record, and the garbage stays provable.
    let record = chain.c.state().sessions[&sid].segments[1].seats[0].key_record;
    deliver_sealed(&mut chain, sid, 0, &[]);
    chain.block();
    assert_eq!(
        chain.c.state().sessions[&sid].segments[1].seats[0].key_record,
        record
    );

    // The true report holds: the premise's key is the bad one.
    chain.submit(kb, good);
    let ev = chain.block();
    assert!(ev.iter().any(|e| matches!(e,
        Event::BadKeyProven { segment: 1, seat, .. } if *seat == b)));
    assert!(chain.c.state().sessions[&sid].segments[1].seats[0].bad_key);
    assert!(!chain.c.state().sessions[&sid].segments[0].seats[0].bad_key);

    // A key sent late is not on record: a report of it is refused (its seat is starved
    // already, as one never keyed).
    let m = manifest(vec![segment(52, Tier::Computer, vec![])], 1, 0);
    let (sid2, drawn2) = open(&mut chain, m);
    let c = seats_of(&drawn2, 0, 0)[0];
    let Some(Phase::Commit { until, .. }) = chain.phase(&sid2) else {
        panic!("not committing");
    };
    while chain.height + lead < until {
        chain.block();
    }
    let late = deliver_sealed(&mut chain, sid2, 0, &[c]);
    chain.block();
    assert!(!chain.c.state().sessions[&sid2].segments[0].seats[0].keyed(0));
    let r = report_of(&chain, sid2, c, 0, &late, 0);
    let root = chain.c.state_root();
    assert_eq!(
        chain.try_apply(find(&keys, &c), r.clone()),
        Err(TxError::KeysNotOnRecord)
    );
    assert_eq!(chain.c.state_root(), root);

    // After its round, no report is taken.
    finish(&mut chain, sid2);
    assert!(matches!(
        chain.try_apply(find(&keys, &c), r),
        Err(TxError::UnknownSession(_) | TxError::WrongPhase(_))
    ));
}

/// `a`'s report of its own key, which opens: the proof is a true one (made as the seat's
/// prover would, were the box bad), so only the opening check refuses it.
fn ephemeral_report_of_good_key(
    chain: &Chain,
    sid: Hash,
    a: AccountId,
    sent: &[(AccountId, DeliveredKey)],
) -> Call {
    let k = sent
        .iter()
        .find(|(to, k)| *to == a && k.segment == 0)
        .unwrap()
        .1
        .clone();
    let id = chain.c.state().sessions[&sid].segments[0].entry.id;
    let ctx = key_context(&sid, &id, &a);
    let secret = common::sealing(&a);
    assert!(open_key(&secret, &k.sealed, &ctx).is_ok());
    // The prover refuses a box that opens; the same proof is made over a garbage twin of
    // the box (same ephemeral key, so the same shared secret and statement) and offered
    // with the real box.
    assert_eq!(
        prove_bad_key(&secret, &k.sealed, &ctx),
        Err(BadKeyError::Opens)
    );
    let twin = SealedKey {
        ciphertext: vec![0; 48],
        ..k.sealed.clone()
    };
    let (shared, proof) = prove_bad_key(&secret, &twin, &ctx).unwrap();
    Call::ReportBadKey {
        session: sid,
        segment: 0,
        keys: vec![k],
        bad: 0,
        shared,
        proof,
    }
}

/// Runs a one-segment session of three seats to its decision with `votes`, then returns
/// the session id (appealable).
/// `who` appeals segment 0 of `sid`; the events of the block that draws its seats (the
/// one after the appeal's).
pub(crate) fn appeal_drawn(chain: &mut Chain, who: &Keypair, sid: Hash) -> Vec<Event> {
    chain.submit(
        who,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    chain.block()
}

pub(crate) fn decided(chain: &mut Chain, keys: &[Keypair], tag: u8, votes: Vote) -> Hash {
    let m = manifest(vec![segment(tag, Tier::Computer, vec![])], 1, 0);
    let (sid, drawn) = open(chain, m);
    run_round(chain, keys, sid, 0, &drawn, &[], &|_, _| Some(votes));
    finish(chain, sid);
    sid
}

/// Finding 5: the provider cannot steer appeals. Its own appeal that nobody judges costs
/// it the bond (a third party's would come back); a round whose seats it did not key does
/// not use up the segment's rounds, its Valid verdict falls to Undecided, and it pays the
/// starved seats; an overturn needs a quorum of keyed judgements before anyone is slashed.
#[test]
fn finding_5_a_provider_self_appeal_and_starved_appeals_buy_nothing() {
    let params = Params {
        max_appeal_rounds: 1,
        ..test_params()
    };
    let bond = params.appeal_bond;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 12)]);
    let provider = key("provider");
    let stranger = key("stranger");

    // (a) A self-appeal nobody judges (the provider keys nobody): its bond is gone, the
    // Valid verdict falls, and the round is not counted.
    let sid = decided(&mut chain, &keys, 0, Vote::Valid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let before = chain.balance(&provider.public());
    chain.submit(
        &provider,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    while chain.c.outcome(&sid).unwrap().appeals.rounds.is_empty() {
        chain.block();
    }
    let o = chain.c.outcome(&sid).unwrap().clone();
    let r = &o.appeals.rounds[0].segments[0];
    assert_eq!(r.result, AppealResult::Starved);
    assert_eq!(r.refunded, 0, "a provider's own appeal bears its bond");
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!(o.trace, TraceVerdict::Inconclusive, "its PASS is gone");
    let starved_paid = 3 * test_params().reward;
    assert_eq!(
        before - chain.balance(&provider.public()),
        bond + starved_paid,
        "the bond and the starved seats"
    );

    // (b) A third party's appeal the provider starves: the Valid verdict falls all the
    // same, and the round is not counted.
    let sid = decided(&mut chain, &keys, 1, Vote::Valid);
    let before = chain.balance(&stranger.public());
    chain.submit(
        &stranger,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    while chain.c.outcome(&sid).unwrap().appeals.rounds.is_empty() {
        chain.block();
    }
    let o = chain.c.outcome(&sid).unwrap().clone();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        AppealResult::Starved
    );
    // A stranger (no seat in the deciding round) pays its bond for a round the provider
    // starved: otherwise it could turn an offline provider's PASS Inconclusive for free
    // (issue 53, finding 11; `integrity::finding_11_*`).
    assert_eq!(
        before - chain.balance(&stranger.public()),
        test_params().appeal_bond,
        "bond forfeit"
    );
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!(
        chain.try_apply(
            &stranger,
            Call::Appeal {
                session: sid,
                segments: vec![0]
            }
        ),
        Err(TxError::AppealUndecided(0)),
        "nothing is left to appeal: the verdict fell"
    );
}

/// Finding 5, overturning with unkeyed seats: seats that judged without their keys (the
/// provider keyed only some) may make a verdict, but an overturn slashes the first round's
/// majority only on the word of a quorum of keyed seats.
#[test]
fn finding_5_an_incoherence_slash_needs_a_keyed_quorum() {
    let params = Params {
        max_appeal_rounds: 1,
        ..test_params()
    };
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 12)]);
    let stranger = key("stranger");
    // First round: 1 seat, Invalid (honestly: the step is wrong).
    let sid = decided(&mut chain, &keys, 2, Vote::Invalid);
    let drawn = appeal_drawn(&mut chain, &stranger, sid);
    let appeal_seats = seats_of(&drawn, 0, 2);
    assert_eq!(appeal_seats.len(), 3);
    // The provider keys one seat; all three judge Valid anyway (colluders with the text).
    let starve = [appeal_seats[1], appeal_seats[2]];
    let ev = run_round(&mut chain, &keys, sid, 2, &drawn, &starve, &|_, _| {
        Some(Vote::Valid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    let r = &o.appeals.rounds[0].segments[0];
    assert_eq!(r.result, AppealResult::Overturned);
    assert_eq!(r.slashed, 0, "one keyed judgement is not a quorum of two");
    assert!(
        !ev.iter().any(|e| matches!(
            e,
            Event::Slashed {
                reason: SlashReason::Incoherent,
                ..
            }
        )),
        "nobody slashed for incoherence"
    );
}

/// Finding 5, refusals: an appeal filed while another round runs waits its turn instead of
/// being refused; appeal seats come from the whole tier, never the provider's domain; and
/// no appeal is accepted past the session's horizon, however many rounds ran.
#[test]
fn finding_5_appeals_queue_draw_from_the_whole_tier_and_stop_at_the_horizon() {
    let params = Params {
        floors: Floors {
            min_domain_stake: 0,
            ..Floors::dev()
        },
        ..Params::default()
    };
    let horizon = params.appeal_horizon;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 12)]);
    // Three sybils declare the provider's private domain (the floor is off here).
    for s in ["sybil-0", "sybil-1", "sybil-2"] {
        chain.submit(
            &key(s),
            Call::RegisterAuditor {
                tier: Tier::Computer,
                expertise: vec!["private".into()],
                sealing_key: SealingPublicKey([1; 32]),
                stake: 1_000,
            },
        );
    }
    chain.block();
    for _ in 0..chain.c.state().params.expertise_delay {
        chain.block();
    }
    let mut all_keys = keys.clone();
    all_keys.extend(["sybil-0", "sybil-1", "sybil-2"].map(key));
    let mut m = manifest(vec![segment(3, Tier::Computer, vec![])], 1, 0);
    m.domain = "private".into();
    m.terms.domain_required = true;
    let (sid, drawn) = open(&mut chain, m);
    let sybils: Vec<AccountId> = ["sybil-0", "sybil-1", "sybil-2"]
        .iter()
        .map(|s| key(s).public())
        .collect();
    assert!(
        sybils.contains(&seats_of(&drawn, 0, 0)[0]),
        "round 0 is the domain's"
    );
    run_round(&mut chain, &all_keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    finish(&mut chain, sid);
    let decided_at = chain.c.outcome(&sid).unwrap().decided_at;

    let (a, b) = (key("stranger"), key("sybil-0"));
    chain.submit(
        &a,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    // While the first is judged, a second appellant is queued, not refused.
    let ev = chain
        .try_apply(
            &b,
            Call::Appeal {
                session: sid,
                segments: vec![0],
            },
        )
        .unwrap();
    assert!(ev.iter().any(|e| matches!(e, Event::AppealQueued { .. })));
    let drawn = chain.block();
    let appeal_seats = seats_of(&drawn, 0, 2);
    assert_eq!(appeal_seats.len(), 3);
    // The whole tier: at least one appeal seat does not declare the domain.
    assert!(appeal_seats.iter().any(|s| {
        !chain.c.state().auditors[s]
            .expertise
            .contains(&"private".to_string())
    }));
    // Past the horizon no appeal is accepted.
    while chain.height <= decided_at + horizon {
        chain.block();
    }
    assert!(matches!(
        chain.try_apply(
            &a,
            Call::Appeal {
                session: sid,
                segments: vec![0]
            }
        ),
        Err(TxError::AppealWindowClosed { .. })
    ));
}

fn stake(chain: &Chain, who: &AccountId) -> u64 {
    chain.c.state().accounts[who].stake
}

/// Finding 5, re-rolls: a fresh panel of a fixed size can be re-rolled until colluders
/// win one. An appeal panel is at least twice the judgements that reached the verdict,
/// plus one, so every overturn needs a larger panel than the last; and an overturn gives
/// back the slashes of the seats that had judged the segment the way it is now decided.
#[test]
fn finding_5_each_overturn_needs_a_larger_panel_and_gives_back_the_right_seats_stake() {
    let params = Params {
        // Every wrong vote is slashed, so a slash that is given back was certainly taken.
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    };
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 30)]);
    // Round 0: three seats (k = 1, two extra), all rightly Invalid.
    let m = manifest(vec![segment(7, Tier::Computer, vec![])], 1, 2);
    let (sid, drawn) = open(&mut chain, m);
    let first = seats_of(&drawn, 0, 0);
    assert_eq!(first.len(), 3);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Invalid)
    });
    finish(&mut chain, sid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Fail);
    let before: Vec<u64> = first.iter().map(|s| stake(&chain, s)).collect();

    // The adversary's third party appeals: 2 x 3 + 1 = 7 seats, not 2k + 1 = 3. Here all
    // seven collude (the draw will rarely give them that): the verdict turns, and the
    // first round's majority owes an incoherence slash, due only if the overturn still
    // stands when the session is final.
    let drawn = appeal_drawn(&mut chain, &key("sybil-0"), sid);
    let colluders = seats_of(&drawn, 0, 2);
    assert_eq!(colluders.len(), 7, "twice the 3 judgements, plus one");
    run_round(&mut chain, &keys, sid, 2, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        AppealResult::Overturned
    );
    assert_eq!(o.trace, TraceVerdict::Pass);
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(
            stake(&chain, s),
            *b,
            "nothing taken while it can be answered"
        );
    }
    let colluders_before: Vec<u64> = colluders.iter().map(|s| stake(&chain, s)).collect();

    // The watcher appeals back: 2 x 7 + 1 = 15 seats judge it Invalid. The verdict turns
    // again: the first three never lose anything, and the seven's wrong votes in round 2
    // are what they answer for now (their incoherence slash waits for finality).
    let drawn = appeal_drawn(&mut chain, &key("stranger"), sid);
    let panel = seats_of(&drawn, 0, 3);
    assert_eq!(panel.len(), 15, "twice the 7 judgements, plus one");
    let ev = run_round(&mut chain, &keys, sid, 3, &drawn, &[], &|_, _| {
        Some(Vote::Invalid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.appeals.rounds[1].segments[0].result,
        AppealResult::Overturned
    );
    assert_eq!(o.trace, TraceVerdict::Fail);
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(stake(&chain, s), *b, "never taken");
    }
    assert!(!ev.iter().any(|e| matches!(
        e,
        Event::Slashed {
            reason: SlashReason::Incoherent,
            ..
        }
    )));
    // Neither overturn used up the segment's appeal rounds: the side that lost may still
    // appeal, before a panel of 31 (which this network of 30 cannot staff).
    assert!(matches!(
        chain.try_apply(
            &key("sybil-1"),
            Call::Appeal {
                session: sid,
                segments: vec![0]
            }
        ),
        Err(TxError::AppealUnstaffed { needed: 31, .. })
    ));
    // Final: the overturn that stood answers for the one it replaced.
    let mut finals = Vec::new();
    while !matches!(chain.c.finality(&sid), Some(Finality::Final { .. })) {
        finals.extend(chain.block());
    }
    for (s, b) in colluders.iter().zip(&colluders_before) {
        assert!(stake(&chain, s) < *b, "the colluding panel answers for it");
        assert!(finals.iter().any(|e| matches!(e,
            Event::Slashed { seat, reason: SlashReason::Incoherent, .. } if seat == s)));
    }
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(stake(&chain, s), *b, "never taken");
    }
}

/// Finding 5, crowding out: filings against a segment while a round runs merge into one
/// waiting entry, however many there are: the first `MAX_BACKERS` escrow a bond each,
/// later ones nothing, nobody is refused for being late, and every waiting segment is
/// heard together in the next round.
#[test]
fn finding_5_appeals_of_a_segment_merge_and_nobody_is_crowded_out() {
    let backers: Vec<String> = (0..10).map(|i| format!("backer-{i}")).collect();
    let mut others: Vec<(&str, u64)> = vec![("provider", 1_000_000), ("stranger", 100_000)];
    others.extend(backers.iter().map(|b| (b.as_str(), 1_000)));
    let params = test_params();
    let bond = params.appeal_bond;
    let (mut chain, keys) = Chain::with_accounts(
        params,
        &[(Tier::Computer, 20)],
        &others,
        SupplyCheck::EachBlock,
    );
    let sid = decided(&mut chain, &keys, 9, Vote::Valid);
    chain.submit(
        &key("stranger"),
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    assert!(chain.c.state().sessions[&sid].appeal.is_some());
    for b in &backers {
        let ev = chain
            .try_apply(
                &key(b),
                Call::Appeal {
                    session: sid,
                    segments: vec![0],
                },
            )
            .unwrap_or_else(|e| panic!("{b} refused: {e}"));
        assert!(ev.iter().any(|e| matches!(e, Event::AppealQueued { .. })));
    }
    let queued = &chain.c.state().sessions[&sid].queued;
    assert_eq!(queued.len(), 1, "one entry per segment");
    assert_eq!(queued[0].backers.len(), trust_contracts::MAX_BACKERS);
    for (i, b) in backers.iter().enumerate() {
        let charged = if i < trust_contracts::MAX_BACKERS {
            bond
        } else {
            0
        };
        assert_eq!(chain.balance(&key(b).public()), 1_000 - charged, "{b}");
    }
    assert_eq!(
        chain.try_apply(
            &key("backer-0"),
            Call::Appeal {
                session: sid,
                segments: vec![0]
            }
        ),
        Err(TxError::AppealAlreadyFiled(0))
    );
    // The open round upholds the verdict; the waiting segment opens the next round at once,
    // in every bonded backer's name.
    let drawn = chain.block();
    let ev = run_round(&mut chain, &keys, sid, 2, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    let opened: Vec<AccountId> = ev
        .iter()
        .filter_map(|e| match e {
            Event::AppealOpened {
                appellant,
                round: 3,
                ..
            } => Some(*appellant),
            _ => None,
        })
        .collect();
    let bonded: Vec<AccountId> = backers[..trust_contracts::MAX_BACKERS]
        .iter()
        .map(|b| key(b).public())
        .collect();
    assert_eq!(opened, bonded);
    let drawn = chain.block();
    run_round(&mut chain, &keys, sid, 3, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    let r = &o.appeals.rounds[1];
    assert_eq!(r.appellants, bonded);
    assert_eq!(r.segments[0].result, AppealResult::Upheld);
    assert_eq!(r.bond, bond * trust_contracts::MAX_BACKERS as u64);
}

/// Finding 2, the small panel: a provider whose colluders hold two of a honeypot's three
/// seats backs its false "known error" with a quorum, so the honest seat cannot dispute
/// it. The provider's word costs that seat stake only when more than two thirds of the
/// round's judgements side with it: here its reputation falls, its stake does not.
#[test]
fn finding_2_a_false_honeypot_backed_by_a_bare_majority_takes_no_stake() {
    let params = Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    };
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let salt = Salt([3; 32]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.segments[0].honeypot = Some(honeypot_commitment(
        &m.segments[0].id,
        Vote::Invalid,
        Difficulty::Obvious,
        &salt,
    ));
    let m = with_honeypot_set(m, &[0]);
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    assert_eq!(seats.len(), 3);
    let honest = seats[2];
    let reputation = chain.c.state().auditors[&honest].reputation;
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j < 2 { Vote::Invalid } else { Vote::Valid })
    });
    chain.submit(
        &provider,
        open_set(
            sid,
            vec![HoneypotOpening {
                segment: 0,
                verdict: Vote::Invalid,
                difficulty: Difficulty::Obvious,
                salt,
            }],
        ),
    );
    let ev = finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.disputed_honeypots, 0,
        "one vote is not a quorum to dispute"
    );
    assert!(
        !slashed(&ev).iter().any(|(s, _)| *s == honest),
        "{:?}",
        slashed(&ev)
    );
    assert_eq!(stake(&chain, &honest), 1_000);
    assert!(chain.c.state().auditors[&honest].reputation < reputation);
}

/// Finding 8: a PASS certifies what the terms say. Segment weights must be their tier's
/// weight in the terms; and at least `beta` of the claims (each counted once) must be
/// judged Valid, so heavy judged claims cannot carry many unjudged ones.
#[test]
fn finding_8_weights_follow_the_terms_and_a_pass_needs_the_claims() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let mut m = manifest(
        vec![
            segment(0, Tier::Computer, vec![]),
            segment(1, Tier::Computer, vec![0]),
        ],
        3,
        0,
    );
    m.segments[0].weight = 1000;
    assert_eq!(
        chain.try_apply(&provider, Call::OpenSession(m.clone())),
        Err(TxError::WeightNotTierWeight {
            index: 0,
            weight: 1000,
            tier: Tier::Computer,
            expected: 1
        })
    );
    // The Computer tier weighs 1000, the LLM tier 1: three worded claims left out, one
    // calculation judged Valid as the conclusion. By weight 1000/1003 passes beta = 0.6;
    // by count 1 of 4 does not: no PASS.
    let mut m = manifest(vec![segment(2, Tier::Computer, vec![])], 3, 0);
    m.terms.tier_weights = [1000, 1, 1];
    m.segments[0].weight = 1000;
    m.segments[0].conclusion = true;
    m.terms.tiers = [true, false, true];
    m.left_out = (0..3)
        .map(|_| trust_protocol::tx::LeftOut {
            tier: Tier::Llm,
            weight: 1,
            depends_on: vec![],
            rests_on_left_out: vec![],
            conclusion: false,
            supports: None,
        })
        .collect();
    let (sid, drawn) = open(&mut chain, m);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Valid);
    assert_eq!((o.passing_weight, o.total_weight), (1000, 1003));
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
}

/// Finding 9: a busy auditor can always leave. With sixteen unbondings pending it can
/// still unbond and exit (the new unbonding merges into the last); seated in a session
/// that is not final, it withdraws everything but what that session may still take.
#[test]
fn finding_9_exit_always_works_and_a_seat_holds_only_its_cap() {
    let params = Params {
        unbond_delay: 2,
        ..test_params()
    };
    let cap = params.max_session_loss;
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 3)]);
    let k = &keys[0];
    let me = k.public();
    for _ in 0..trust_contracts::MAX_UNBONDINGS {
        chain.submit(k, Call::Unbond { amount: 1 });
    }
    chain.block();
    assert_eq!(
        chain.c.state().accounts[&me].unbonding.len(),
        trust_contracts::MAX_UNBONDINGS
    );
    chain.submit(k, Call::Unbond { amount: 1 });
    chain.block();
    assert_eq!(
        chain.c.state().accounts[&me].unbonding.len(),
        trust_contracts::MAX_UNBONDINGS,
        "merged into the last"
    );
    // Seated in a live session, it exits and withdraws all but the session's cap.
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let (sid, drawn) = open(&mut chain, m);
    assert!(seats_of(&drawn, 0, 0).contains(&me));
    chain.submit(k, Call::Exit);
    chain.block();
    chain.block();
    chain.block();
    let acct = chain.c.state().accounts[&me].clone();
    let unbonding: u64 = acct.unbonding.iter().map(|u| u.amount).sum();
    assert_eq!(unbonding, 1_000);
    assert_eq!(trust_contracts::held_stake(chain.c.state(), &me), cap);
    let ev = chain.try_apply(k, Call::Withdraw).unwrap();
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::Withdrawn { amount, .. } if *amount == 1_000 - cap))
    );
    assert!(matches!(
        chain.try_apply(k, Call::Withdraw),
        Err(TxError::SeatHeld { session }) if session == sid
    ));
}

/// Found by the simulator (`wrong_pass_final`, seed 7 at its default sybil share): a
/// provider answers an appeal of its wrong Valid by keying only the appeal seats it holds
/// (its sybils uphold the verdict) and starving the rest. A verdict for Valid reached
/// beside seats the provider starved was not examined: the round is starved, the Valid no
/// longer stands, nobody is scored in it, and the trace does not PASS.
#[test]
fn a_provider_keying_only_its_own_appeal_seats_keeps_no_valid() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 12)]);
    let stranger = key("stranger");
    // Three seats, two of them the provider's: Valid, one honest seat outvoted.
    let (sid, drawn) = open(
        &mut chain,
        manifest(vec![segment(30, Tier::Computer, vec![])], 3, 0),
    );
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j == 2 { Vote::Invalid } else { Vote::Valid })
    });
    finish(&mut chain, sid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let drawn = appeal_drawn(&mut chain, &stranger, sid);
    let appeal_seats = seats_of(&drawn, 0, 2);
    let n = appeal_seats.len();
    assert_eq!(n, 7, "{appeal_seats:?}");
    // The provider keys all but two; the keyed seats uphold its Valid.
    let starve = appeal_seats[n - 2..].to_vec();
    let ev = run_round(&mut chain, &keys, sid, 2, &drawn, &starve, &|_, j| {
        (j < n - 2).then_some(Vote::Valid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    let r = &o.appeals.rounds[0].segments[0];
    assert_eq!(r.result, AppealResult::Starved, "{r:?}");
    assert_ne!(o.trace, TraceVerdict::Pass);
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Slashed { .. })),
        "nobody is scored against a verdict its provider chose the judges of"
    );
}

/// Found by the simulator (`wrong_pass_final`, seed 5): an outvoted honest seat appeals a
/// wrong Valid on a step the conclusion does not rest on, and the provider starves the
/// appeal. The Valid falls to Undecided, which alone would leave the trace's weight enough
/// to PASS; a trace whose provider kept an appeal of its Valid from being judged does not
/// PASS while that verdict stands unexamined.
#[test]
fn a_starved_appeal_of_a_dead_end_step_leaves_no_pass() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 12)]);
    let stranger = key("stranger");
    let mut segments: Vec<SegmentEntry> = (0..4)
        .map(|i| segment(20 + i, Tier::Computer, vec![]))
        .collect();
    // Segment 0 is a dead end; 3 rests on 1 and 2 and is the conclusion.
    segments[3].depends_on = vec![1, 2];
    segments[3].conclusion = true;
    let (sid, drawn) = open(&mut chain, manifest(segments, 1, 0));
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    finish(&mut chain, sid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let drawn = appeal_drawn(&mut chain, &stranger, sid);
    let starve = seats_of(&drawn, 0, 2);
    assert!(!starve.is_empty());
    run_round(&mut chain, &keys, sid, 2, &drawn, &starve, &|_, _| None);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        AppealResult::Starved
    );
    // Three of four segments Valid reach beta (0.6): the rule, not the weight, holds it.
    assert_eq!(o.passing_weight, 3);
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
}
