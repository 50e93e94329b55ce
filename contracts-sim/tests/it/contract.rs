//! Scenario tests of the contract through its public API, with real signed transactions.

use trust_contracts::{
    BlockCtx, Contract, Event, Genesis, GenesisAccount, Params, Phase, SegmentVerdict, SlashReason,
    TraceVerdict, TxError, Unbonding,
};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, SealingPublicKey, Signed, Vote, commitment,
    honeypot_commitment,
    seal::SealedKey,
    tx::{Call, Difficulty, HoneypotOpening, SeatKey, SegmentEntry, SessionManifest, Tier, Tx},
    units::Ppm,
};

use crate::common::{
    Chain, SupplyCheck, commit_votes, ctx, deliver_keys, find, key, manifest, open_set,
    reveal_votes, seats_of, segment, test_params, why, with_honeypot_set,
};

/// Parameters under which every wrong vote draws a slash (`p_min = p_max = 1`), so that a
/// test sees at once whether a seat is scored wrong.
fn always_slash() -> Params {
    Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    }
}

impl Chain {
    /// `auditors` per tier, each with 1000 staked; two providers with a large balance.
    pub(crate) fn new(params: Params, auditors: &[(Tier, usize)]) -> (Self, Vec<Keypair>) {
        Chain::with_accounts(
            params,
            auditors,
            &[("provider", 1_000_000), ("provider-b", 1_000_000)],
            SupplyCheck::OnRequest,
        )
    }
}

/// Opens a session and runs it with `votes(segment, seat_index) -> Option<Vote>` (None:
/// never commits); every seat gets its keys. Returns the session id and all events.
fn run_session(
    chain: &mut Chain,
    keys: &[Keypair],
    m: SessionManifest,
    votes: impl Fn(u16, usize) -> Option<Vote>,
) -> (Hash, Vec<Event>) {
    run_session_starving(chain, keys, m, votes, |_, _| false)
}

/// [`run_session`], with the provider keeping the keys from the seats `starve(segment,
/// seat_index)` names.
fn run_session_starving(
    chain: &mut Chain,
    keys: &[Keypair],
    m: SessionManifest,
    votes: impl Fn(u16, usize) -> Option<Vote>,
    starve: impl Fn(u16, usize) -> bool,
) -> (Hash, Vec<Event>) {
    run_session_with(chain, keys, m, votes, starve, |_, _, _| {})
}

/// [`run_session_starving`], calling `seated(chain, session, events)` once the seats are
/// drawn, before any of them acts.
fn run_session_with(
    chain: &mut Chain,
    keys: &[Keypair],
    m: SessionManifest,
    votes: impl Fn(u16, usize) -> Option<Vote>,
    starve: impl Fn(u16, usize) -> bool,
    seated: impl FnOnce(&mut Chain, Hash, &[Event]),
) -> (Hash, Vec<Event>) {
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    let ids: Vec<Hash> = m.segments.iter().map(|s| s.id).collect();
    chain.submit(&provider, Call::OpenSession(m));
    let mut all = chain.block();
    all.extend(chain.block()); // seats drawn at the end of the block after opening
    seated(chain, sid, &all);
    let starved: Vec<AccountId> = (0..ids.len())
        .flat_map(|s| {
            seats_of(&all, s as u16, 0)
                .into_iter()
                .enumerate()
                .filter(|(j, _)| starve(s as u16, *j))
                .map(|(_, a)| a)
                .collect::<Vec<_>>()
        })
        .collect();
    deliver_keys(chain, &provider, sid, 0, &starved);
    let plan = commit_votes(chain, keys, sid, &ids, &all, 0, &votes);
    all.extend(chain.block());
    while matches!(chain.phase(&sid), Some(Phase::Commit { .. })) {
        all.extend(chain.block());
    }
    reveal_votes(chain, sid, &plan);
    all.extend(chain.block());
    while chain.c.state().sessions.contains_key(&sid) {
        chain.reveal_mapping_when_due(&provider, sid);
        all.extend(chain.block());
        assert!(chain.height < 200, "session never finished");
    }
    (sid, all)
}

#[test]
fn correct_chain_passes_and_pays_the_seats() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let segs = (0..3)
        .map(|i| {
            segment(
                i,
                Tier::Computer,
                if i > 0 {
                    vec![u16::from(i) - 1]
                } else {
                    vec![]
                },
            )
        })
        .collect();
    let before: u64 = keys
        .iter()
        .map(|k| chain.c.state().accounts[&k.public()].balance)
        .sum();
    let (sid, ev) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |_, _| {
        Some(Vote::Valid)
    });
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Pass);
    assert!(
        o.segments
            .iter()
            .all(|s| s.verdict == SegmentVerdict::Valid)
    );
    assert_eq!(o.segments[0].votes.valid, 3);
    assert_eq!(o.rewards_paid, 3 * 3 * 6);
    assert!(o.bound.hoeffding_neg_ln_milli > 0);
    let after: u64 = keys
        .iter()
        .map(|k| chain.c.state().accounts[&k.public()].balance)
        .sum();
    assert_eq!(after - before, 54);
    assert!(ev.iter().any(|e| matches!(e, Event::TraceDecided { .. })));
    chain.assert_supply_conserved();
}

#[test]
fn a_wrong_step_is_invalid_and_later_steps_are_propagated() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
        segment(2, Tier::Computer, vec![1]),
        segment(3, Tier::Computer, vec![0]),
    ];
    let (sid, _) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |s, _| {
        Some(if s == 1 { Vote::Invalid } else { Vote::Valid })
    });
    let o = chain.c.outcome(&sid).unwrap();
    let v: Vec<_> = o.segments.iter().map(|s| s.verdict).collect();
    assert_eq!(
        v,
        [
            SegmentVerdict::Valid,
            SegmentVerdict::Invalid,
            SegmentVerdict::Propagated,
            SegmentVerdict::Valid
        ]
    );
    assert_eq!(o.trace, TraceVerdict::Fail);
}

/// A session staffed when it opens (one not staffed is refused: see
/// `adversary.rs`) fails at the draw when auditors leave in between, and is refunded.
#[test]
fn too_few_auditors_fails_the_session_and_refunds_the_fee() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let before = chain.c.state().accounts[&provider.public()].balance;
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    chain.submit(&provider, Call::OpenSession(m));
    chain.submit(&keys[0], Call::Exit);
    chain.block();
    assert!(chain.c.state().accounts[&provider.public()].balance < before);
    let ev = chain.block();
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::SessionFailed { reason, .. } if reason.contains("2 Computer auditors eligible")))
    );
    assert_eq!(chain.c.state().accounts[&provider.public()].balance, before);
    assert!(chain.c.state().sessions.is_empty());
}

#[test]
fn the_provider_never_sits_on_its_own_session() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    // Make the provider an auditor too: with 3 others and k = 3 it must not be drawn.
    let provider = key("provider");
    chain.submit(
        &provider,
        Call::RegisterAuditor {
            tier: Tier::Computer,
            expertise: vec![],
            sealing_key: SealingPublicKey([2; 32]),
            stake: 1_000,
        },
    );
    chain.block();
    for round in 0..10u8 {
        let m = manifest(vec![segment(round, Tier::Computer, vec![])], 3, 0);
        chain.submit(&provider, Call::OpenSession(m));
        chain.block();
        let ev = chain.block();
        let seats = seats_of(&ev, 0, 0);
        assert_eq!(seats.len(), 3);
        assert!(!seats.contains(&provider.public()));
        let _ = &keys;
    }
}

#[test]
fn replays_reordering_and_bad_signatures_change_nothing() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 2)]);
    let a = &keys[0];
    let b = keys[1].public();
    let tx0 = Signed::sign(
        a,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 1,
            call: Call::Transfer { to: b, amount: 5 },
        },
    );
    chain.c.apply(&ctx(2), &tx0).unwrap();
    let root = chain.c.state_root();
    assert_eq!(
        chain.c.apply(&ctx(2), &tx0),
        Err(TxError::BadNonce {
            expected: 2,
            got: 1
        })
    );
    let ahead = Signed::sign(
        a,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 5,
            call: Call::Transfer { to: b, amount: 1 },
        },
    );
    assert!(matches!(
        chain.c.apply(&ctx(2), &ahead),
        Err(TxError::BadNonce { .. })
    ));
    let mut forged = Signed::sign(
        a,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 2,
            call: Call::Transfer { to: b, amount: 1 },
        },
    );
    forged.body.call = Call::Transfer { to: b, amount: 9 };
    assert_eq!(chain.c.apply(&ctx(2), &forged), Err(TxError::BadSignature));
    // Signed for another network with the same key: refused here (issue 26, finding 7).
    let elsewhere = Signed::sign(
        a,
        &trust_protocol::Hash([0xEE; 32]),
        Tx {
            nonce: 2,
            call: Call::Transfer { to: b, amount: 1 },
        },
    );
    assert_eq!(
        chain.c.apply(&ctx(2), &elsewhere),
        Err(TxError::BadSignature)
    );
    // And a network whose genesis document hashes elsewhere refuses what this one takes.
    let other = chain.c.clone().with_chain(trust_protocol::Hash([0xEE; 32]));
    assert_eq!(other.chain_id(), trust_protocol::Hash([0xEE; 32]));
    let here = Signed::sign(
        a,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 2,
            call: Call::Transfer { to: b, amount: 1 },
        },
    );
    assert_eq!(
        other.clone().apply(&ctx(2), &here),
        Err(TxError::BadSignature)
    );
    assert!(other.clone().apply(&ctx(2), &elsewhere).is_ok());
    let broke = Signed::sign(
        a,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 2,
            call: Call::Transfer {
                to: b,
                amount: 1_000_000,
            },
        },
    );
    assert!(matches!(
        chain.c.apply(&ctx(2), &broke),
        Err(TxError::InsufficientBalance { .. })
    ));
    assert_eq!(
        chain.c.state_root(),
        root,
        "a rejected transaction changed the state"
    );
}

#[test]
fn commit_and_reveal_rules() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5), (Tier::Human, 9)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 1);
    let seg_id = m.segments[0].id;
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    // Before seats are drawn, nobody can commit.
    assert!(matches!(
        chain.try_apply(
            &keys[0],
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: Hash::ZERO
            }
        ),
        Err(TxError::WrongPhase(_))
    ));
    let ev = chain.block();
    let seats = seats_of(&ev, 0, 0);
    assert_eq!(seats.len(), 4);
    let outsider = keys.iter().find(|k| !seats.contains(&k.public())).unwrap();
    let salt = Salt([5; 32]);
    let c = |k: &Keypair, v| commitment(&sid, &seg_id, &k.public(), v, &salt, &why(v));
    assert_eq!(
        chain.try_apply(
            outsider,
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: c(outsider, Vote::Valid)
            }
        ),
        Err(TxError::NotASeat(outsider.public()))
    );
    let s: Vec<&Keypair> = seats.iter().map(|id| find(&keys, id)).collect();
    let commit = |k: &Keypair, v| Call::Commit {
        session: sid,
        segment: 0,
        commitment: c(k, v),
    };
    chain.try_apply(s[0], commit(s[0], Vote::Valid)).unwrap();
    chain
        .c
        .apply(
            &ctx(3),
            &Signed::sign(
                s[0],
                &trust_protocol::Hash::ZERO,
                Tx {
                    nonce: 1,
                    call: commit(s[0], Vote::Valid),
                },
            ),
        )
        .unwrap_err();
    assert_eq!(
        chain.try_apply(s[0], commit(s[0], Vote::Invalid)),
        Err(TxError::AlreadyCommitted)
    );
    // A copy-cat reusing another seat's commitment is refused.
    assert_eq!(
        chain.try_apply(
            s[1],
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: c(s[0], Vote::Valid)
            }
        ),
        Err(TxError::DuplicateCommitment)
    );
    for (i, k) in s.iter().enumerate().skip(1) {
        let v = if i == 3 { Vote::Invalid } else { Vote::Valid };
        chain.try_apply(k, commit(k, v)).unwrap();
    }
    // Every seat is in: the commit window closes early at the end of this block.
    chain.height += 1;
    let ev = chain.c.end_block(&ctx(chain.height));
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::CommitWindowClosed { .. }))
    );
    // Reveal with the wrong vote fails; right ones pass; the fourth is late (k = 3).
    assert_eq!(
        chain.try_apply(
            s[0],
            Call::Reveal {
                session: sid,
                segment: 0,
                vote: Vote::Invalid,
                salt,
                reason: why(Vote::Invalid),
            }
        ),
        Err(TxError::CommitmentMismatch)
    );
    let mut counted = Vec::new();
    for (i, k) in [s[3], s[0], s[1], s[2]].into_iter().enumerate() {
        let v = if i == 0 { Vote::Invalid } else { Vote::Valid };
        let ev = chain
            .try_apply(
                k,
                Call::Reveal {
                    session: sid,
                    segment: 0,
                    vote: v,
                    salt,
                    reason: why(v),
                },
            )
            .unwrap();
        if let Some(Event::Revealed { counted: c, .. }) = ev.first() {
            counted.push(*c);
        }
    }
    assert_eq!(counted, [true, true, true, false]);
    assert_eq!(
        chain.try_apply(
            s[0],
            Call::Reveal {
                session: sid,
                segment: 0,
                vote: Vote::Valid,
                salt,
                reason: why(Vote::Valid),
            }
        ),
        Err(TxError::AlreadyRevealed)
    );
}

/// A batch of votes applies entry by entry, as single calls would: a refused entry (a
/// copy-cat commitment, a reveal that does not open its commitment) fails alone with a
/// `VoteRefused` in its place; a batch whose every entry is refused fails as its first
/// entry would and changes nothing, nonce included.
#[test]
fn a_batch_of_votes_applies_each_entry_alone() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    let m = manifest(
        (0..4).map(|i| segment(i, Tier::Computer, vec![])).collect(),
        3,
        0,
    );
    let ids: Vec<Hash> = m.segments.iter().map(|g| g.id).collect();
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    chain.block();
    deliver_keys(&mut chain, &provider, sid, 0, &[]);
    let (a, b, c) = (&keys[0], &keys[1], &keys[2]);
    let salt = Salt([5; 32]);
    let cm = |k: &Keypair, seg: u16, v| {
        commitment(&sid, &ids[usize::from(seg)], &k.public(), v, &salt, &why(v))
    };
    let commits = |segs: &[(u16, trust_protocol::Commitment)]| {
        Call::batch(
            segs.iter()
                .map(|&(segment, commitment)| Call::Commit {
                    session: sid,
                    segment,
                    commitment,
                })
                .collect(),
        )
        .unwrap()
    };
    let reveals = |segs: &[(u16, Vote)]| {
        Call::batch(
            segs.iter()
                .map(|&(segment, vote)| Call::Reveal {
                    session: sid,
                    segment,
                    vote,
                    salt,
                    reason: why(vote),
                })
                .collect(),
        )
        .unwrap()
    };
    // Reveals before the reveal window: every entry waits, so the batch does.
    assert!(matches!(
        chain.try_apply(a, reveals(&[(0, Vote::Valid), (1, Vote::Valid)])),
        Err(TxError::WrongPhase(_))
    ));

    // b commits segment 3; a's batch copies b's commitment there: that entry alone fails.
    chain
        .try_apply(
            b,
            Call::Commit {
                session: sid,
                segment: 3,
                commitment: cm(b, 3, Vote::Valid),
            },
        )
        .unwrap();
    let ev = chain
        .try_apply(
            a,
            commits(&[
                (0, cm(a, 0, Vote::Valid)),
                (1, cm(a, 1, Vote::Valid)),
                (2, cm(a, 2, Vote::Invalid)),
                (3, cm(b, 3, Vote::Valid)),
            ]),
        )
        .unwrap();
    let committed: Vec<u16> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Committed { segment, seat, .. } if *seat == a.public() => Some(*segment),
            _ => None,
        })
        .collect();
    assert_eq!(committed, [0, 1, 2]);
    assert!(matches!(
        ev.last(),
        Some(Event::VoteRefused { segment: 3, seat, reason, .. })
            if *seat == a.public() && reason == &TxError::DuplicateCommitment.to_string()
    ));

    // A batch whose every entry is refused fails whole and changes nothing.
    let (root, nonce) = (chain.c.state_root(), chain.c.nonce(&a.public()));
    assert_eq!(
        chain.try_apply(
            a,
            commits(&[(0, cm(a, 0, Vote::Valid)), (1, cm(a, 1, Vote::Valid))])
        ),
        Err(TxError::AlreadyCommitted)
    );
    assert_eq!(chain.c.state_root(), root);
    assert_eq!(chain.c.nonce(&a.public()), nonce);

    // a commits segment 3 on its own; b and c commit the rest in one batch each.
    chain
        .try_apply(
            a,
            Call::Commit {
                session: sid,
                segment: 3,
                commitment: cm(a, 3, Vote::Valid),
            },
        )
        .unwrap();
    let b_rest: Vec<_> = (0..3).map(|g| (g, cm(b, g, Vote::Valid))).collect();
    chain.try_apply(b, commits(&b_rest)).unwrap();
    let c_all: Vec<_> = (0..4).map(|g| (g, cm(c, g, Vote::Valid))).collect();
    chain.try_apply(c, commits(&c_all)).unwrap();
    chain.height += 1;
    let ev = chain.c.end_block(&ctx(chain.height));
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::CommitWindowClosed { .. }))
    );

    // a reveals all four, one with the wrong vote: that one alone is refused.
    let ev = chain
        .try_apply(
            a,
            reveals(&[
                (0, Vote::Valid),
                (1, Vote::Valid),
                (2, Vote::Valid),
                (3, Vote::Valid),
            ]),
        )
        .unwrap();
    let revealed: Vec<u16> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Revealed { segment, .. } => Some(*segment),
            _ => None,
        })
        .collect();
    assert_eq!(revealed, [0, 1, 3]);
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::VoteRefused { segment: 2, reason, .. }
            if reason == &TxError::CommitmentMismatch.to_string()
    )));
    chain
        .try_apply(
            a,
            Call::Reveal {
                session: sid,
                segment: 2,
                vote: Vote::Invalid,
                salt,
                reason: why(Vote::Invalid),
            },
        )
        .unwrap();
    chain.assert_supply_conserved();
}

/// Votes of several sessions in one `Votes` call apply as the single calls would, entry by
/// entry: a refused entry (a copy-cat commitment, a reveal that does not open its
/// commitment) fails alone with a `VoteRefused` naming its session; a call whose every
/// entry is refused fails and changes nothing, nonce included; commitments and openings of
/// two sessions close both windows and open them as separate calls would.
#[test]
fn votes_across_sessions_apply_each_entry_alone() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let (s1, s2) = (
        Tx::session_id(&provider.public(), 0),
        Tx::session_id(&provider.public(), 1),
    );
    let m = manifest(
        (0..2).map(|i| segment(i, Tier::Computer, vec![])).collect(),
        3,
        0,
    );
    let ids: Vec<Hash> = m.segments.iter().map(|g| g.id).collect();
    chain.submit(&provider, Call::OpenSession(m.clone()));
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    chain.block();
    deliver_keys(&mut chain, &provider, s1, 0, &[]);
    deliver_keys(&mut chain, &provider, s2, 0, &[]);
    let (a, b, c) = (&keys[0], &keys[1], &keys[2]);
    let salt = Salt([5; 32]);
    let cm = |k: &Keypair, sid: Hash, seg: u16, v| {
        commitment(&sid, &ids[usize::from(seg)], &k.public(), v, &salt, &why(v))
    };
    let commit = |sid, segment, commitment| Call::Commit {
        session: sid,
        segment,
        commitment,
    };
    let open = |sid, segment, vote| Call::Reveal {
        session: sid,
        segment,
        vote,
        salt,
        reason: why(vote),
    };
    let votes = |calls: Vec<Call>| {
        let call = Call::batch(calls).unwrap();
        assert!(matches!(call, Call::Votes { .. }), "{call:?}");
        call
    };

    // b commits segment 1 of s2; a's call copies b's commitment there: that entry alone
    // fails, the three others of two sessions apply.
    chain
        .try_apply(b, commit(s2, 1, cm(b, s2, 1, Vote::Valid)))
        .unwrap();
    let ev = chain
        .try_apply(
            a,
            votes(vec![
                commit(s1, 0, cm(a, s1, 0, Vote::Valid)),
                commit(s2, 0, cm(a, s2, 0, Vote::Valid)),
                commit(s1, 1, cm(a, s1, 1, Vote::Invalid)),
                commit(s2, 1, cm(b, s2, 1, Vote::Valid)),
            ]),
        )
        .unwrap();
    let committed: Vec<(Hash, u16)> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Committed {
                session,
                segment,
                seat,
                ..
            } if *seat == a.public() => Some((*session, *segment)),
            _ => None,
        })
        .collect();
    assert_eq!(committed, [(s1, 0), (s1, 1), (s2, 0)]);
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::VoteRefused { session, segment: 1, seat, reason }
            if *session == s2
                && *seat == a.public()
                && reason == &TxError::DuplicateCommitment.to_string()
    )));

    // Every entry refused: the call fails whole and changes nothing.
    let (root, nonce) = (chain.c.state_root(), chain.c.nonce(&a.public()));
    assert_eq!(
        chain.try_apply(
            a,
            votes(vec![
                commit(s1, 0, cm(a, s1, 0, Vote::Valid)),
                commit(s2, 0, cm(a, s2, 0, Vote::Valid)),
            ])
        ),
        Err(TxError::AlreadyCommitted)
    );
    assert_eq!(chain.c.state_root(), root);
    assert_eq!(chain.c.nonce(&a.public()), nonce);

    // The rest commit: a its last seat alone, b and c theirs in one call each.
    chain
        .try_apply(a, commit(s2, 1, cm(a, s2, 1, Vote::Valid)))
        .unwrap();
    chain
        .try_apply(
            b,
            votes(vec![
                commit(s1, 0, cm(b, s1, 0, Vote::Valid)),
                commit(s1, 1, cm(b, s1, 1, Vote::Valid)),
                commit(s2, 0, cm(b, s2, 0, Vote::Valid)),
            ]),
        )
        .unwrap();
    let c_all = [s1, s2]
        .iter()
        .flat_map(|&sid| (0..2).map(move |g| (sid, g)))
        .map(|(sid, g)| commit(sid, g, cm(c, sid, g, Vote::Valid)))
        .collect();
    chain.try_apply(c, votes(c_all)).unwrap();
    chain.height += 1;
    let ev = chain.c.end_block(&ctx(chain.height));
    let closed: Vec<Hash> = ev
        .iter()
        .filter_map(|e| match e {
            Event::CommitWindowClosed { session, .. } => Some(*session),
            _ => None,
        })
        .collect();
    assert!(closed.contains(&s1) && closed.contains(&s2), "{closed:?}");

    // a opens all four in one call, one with the wrong vote: that one alone is refused.
    let ev = chain
        .try_apply(
            a,
            votes(vec![
                open(s1, 0, Vote::Valid),
                open(s1, 1, Vote::Valid),
                open(s2, 0, Vote::Valid),
                open(s2, 1, Vote::Valid),
            ]),
        )
        .unwrap();
    let revealed: Vec<(Hash, u16)> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Revealed {
                session, segment, ..
            } => Some((*session, *segment)),
            _ => None,
        })
        .collect();
    assert_eq!(revealed, [(s1, 0), (s2, 0), (s2, 1)]);
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::VoteRefused { session, segment: 1, reason, .. }
            if *session == s1 && reason == &TxError::CommitmentMismatch.to_string()
    )));
    chain.try_apply(a, open(s1, 1, Vote::Invalid)).unwrap();
    chain.assert_supply_conserved();
}

/// A provider with no honeypot to open may open its (empty) honeypot set and its mapping
/// once the votes are bound (the reveal window): the session is then tallied at the end of
/// the block of its last reveal, with no disclosure block after it. Not before the commit
/// window closes, and the mapping not before the set.
#[test]
fn a_mapping_opened_in_the_reveal_window_lets_the_last_reveal_decide_the_session() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let seg_id = m.segments[0].id;
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    chain.block();
    let mapping = Call::RevealMapping {
        session: sid,
        mapping: Hash::sha256(b"map"),
        salt: Salt([9; 32]),
    };
    deliver_keys(&mut chain, &provider, sid, 0, &[]);
    // The commit window is open: too early.
    assert!(matches!(
        chain.try_apply(&provider, mapping.clone()),
        Err(TxError::WrongPhase(_))
    ));
    let salt = Salt([5; 32]);
    for k in &keys {
        let c = commitment(
            &sid,
            &seg_id,
            &k.public(),
            Vote::Valid,
            &salt,
            &why(Vote::Valid),
        );
        chain.submit(
            k,
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: c,
            },
        );
    }
    chain.block();
    assert!(matches!(
        chain.c.state().sessions[&sid].phase,
        Phase::Reveal { .. }
    ));
    // The votes are bound: the mapping opens now (after the empty honeypot set), and
    // closes the disclosure.
    assert_eq!(
        chain.try_apply(&provider, mapping.clone()),
        Err(TxError::HoneypotsNotOpened)
    );
    chain.submit(&provider, open_set(sid, Vec::new()));
    chain.submit(&provider, mapping.clone());
    for k in &keys {
        chain.submit(
            k,
            Call::Reveal {
                session: sid,
                segment: 0,
                vote: Vote::Valid,
                salt,
                reason: why(Vote::Valid),
            },
        );
    }
    let ev = chain.block();
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::TraceDecided { session, .. } if *session == sid)),
        "tallied in the block of the last reveal: {ev:?}"
    );
    let o = &chain.c.state().outcomes[&sid];
    assert_eq!(o.decided_at, chain.height);
    assert_eq!(o.trace, TraceVerdict::Pass);
    chain.assert_supply_conserved();
}

/// A reason is bound into the commitment: a reveal with another reason (however close)
/// is refused and changes nothing, an over-long one is malformed, and the bound one opens.
#[test]
fn a_reveal_opens_its_commitment_only_with_the_reason_it_bound() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 4)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let seg_id = m.segments[0].id;
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let seats = seats_of(&chain.block(), 0, 0);
    assert_eq!(seats.len(), 3);
    let salt = Salt([5; 32]);
    let said = "the calculation 3/4 + 1/4 = 1 holds";
    for id in &seats {
        chain.submit(
            find(&keys, id),
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: commitment(&sid, &seg_id, id, Vote::Valid, &salt, said),
            },
        );
    }
    chain.block(); // every seat is in: the commit window closes
    let seat = find(&keys, &seats[0]);
    let reveal = |reason: String| Call::Reveal {
        session: sid,
        segment: 0,
        vote: Vote::Valid,
        salt,
        reason,
    };
    let root = chain.c.state_root();
    for other in [
        "the calculation 3/4 + 1/4 = 1 holds.".to_string(),
        String::new(),
        why(Vote::Valid),
    ] {
        assert_eq!(
            chain.try_apply(seat, reveal(other)),
            Err(TxError::CommitmentMismatch)
        );
        assert_eq!(
            chain.c.state_root(),
            root,
            "a refused reveal changed the state"
        );
    }
    let long = "x".repeat(trust_protocol::MAX_REASON_BYTES + 1);
    assert!(matches!(
        chain.try_apply(seat, reveal(long)),
        Err(TxError::Format(
            trust_protocol::tx::TxFormatError::BadReason(trust_protocol::ReasonError::TooLong {
                len: 281
            })
        ))
    ));
    assert_eq!(
        chain.c.state_root(),
        root,
        "a refused reveal changed the state"
    );
    let live = &chain.c.state().sessions[&sid].segments[0];
    assert!(
        live.seats
            .iter()
            .all(|x| x.vote.is_none() && x.reason.is_none())
    );
    let ev = chain.try_apply(seat, reveal(said.into())).unwrap();
    assert!(matches!(
        ev.first(),
        Some(Event::Revealed { reason, vote: Vote::Valid, .. }) if reason == said
    ));
    let live = &chain.c.state().sessions[&sid].segments[0];
    assert_eq!(live.seats[0].reason.as_deref(), Some(said));
}

/// Every revealed vote reaches the outcome with its reason, in seat order, counted or
/// late; a seat that never revealed is not listed.
#[test]
fn the_outcome_lists_each_revealed_vote_with_its_reason() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6), (Tier::Human, 9)]);
    // k = 3 with one extra seat: segment 0's fourth seat never commits.
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
    ];
    let (sid, ev) = run_session(&mut chain, &keys, manifest(segs, 3, 1), |s, j| {
        match (s, j) {
            (0, 3) => None,
            (1, 2) => Some(Vote::Invalid),
            _ => Some(Vote::Valid),
        }
    });
    let o = chain.c.outcome(&sid).unwrap();
    for (s, seg) in o.segments.iter().enumerate() {
        let drawn = seats_of(&ev, s as u16, 0);
        let listed: Vec<AccountId> = seg.votes_cast.iter().map(|v| v.seat).collect();
        let revealed: Vec<AccountId> = drawn
            .iter()
            .copied()
            .filter(|id| !(s == 0 && *id == drawn[3]))
            .collect();
        assert_eq!(listed, revealed, "segment {s}: seats in draw order");
        for v in &seg.votes_cast {
            assert_eq!(v.reason, why(v.vote), "segment {s}");
            assert_eq!(v.round, 0);
        }
    }
    assert_eq!(o.segments[1].votes_cast[2].vote, Vote::Invalid);
    assert_eq!(
        o.segments[1].votes_cast[2].reason,
        "the test seat finds it Invalid"
    );
    // Four reveals on segment 1: the first three counted, the last one late.
    let counted: Vec<bool> = o.segments[1].votes_cast.iter().map(|v| v.counted).collect();
    assert_eq!(counted.iter().filter(|c| **c).count(), 3);
    assert_eq!(o.segments[1].votes.late, 1);
}

#[test]
fn an_undecided_segment_escalates_to_the_next_tier() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 4), (Tier::Llm, 4)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 2, 0);
    m.quorum.tau = Ppm(500_000);
    m.fee *= 4;
    // k = 2, tau = 1/2: one Valid and one Invalid reach q = 1 on both sides: undecided.
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let ev = chain.block();
    let salt = Salt([1; 32]);
    let seg_id = segment(0, Tier::Computer, vec![]).id;
    let vote_round = |chain: &mut Chain, seats: Vec<AccountId>, votes: &[Vote]| {
        for (id, v) in seats.iter().zip(votes) {
            let k = find(&keys, id);
            chain.submit(
                k,
                Call::Commit {
                    session: sid,
                    segment: 0,
                    commitment: commitment(&sid, &seg_id, id, *v, &salt, &why(*v)),
                },
            );
        }
        chain.block();
        for (id, v) in seats.iter().zip(votes) {
            chain.submit(
                find(&keys, id),
                Call::Reveal {
                    session: sid,
                    segment: 0,
                    vote: *v,
                    salt,
                    reason: why(*v),
                },
            );
        }
        chain.block()
    };
    let mut ev = vote_round(
        &mut chain,
        seats_of(&ev, 0, 0),
        &[Vote::Valid, Vote::Invalid],
    );
    // The escalation's seats are drawn at the start of the next block.
    ev.extend(chain.block());
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::SegmentEscalated {
            tier: Tier::Llm,
            ..
        }
    )));
    let round1 = seats_of(&ev, 0, 1);
    assert_eq!(round1.len(), 2);
    for id in &round1 {
        assert_eq!(chain.c.state().auditors[id].tier, Tier::Llm);
    }
    vote_round(&mut chain, round1, &[Vote::Invalid, Vote::Invalid]);
    chain.reveal_mapping(&provider, sid);
    chain.block();
    let o = chain.c.outcome(&sid).expect("decided");
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Invalid);
    assert!(o.segments[0].escalated);
    assert_eq!(o.segments[0].tier, Tier::Llm);
}

#[test]
fn no_shows_are_treated_as_wrong_and_slashing_deactivates() {
    let params = Params {
        penalty: 950,
        max_session_loss: 950,
        ..always_slash()
    };
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 4), (Tier::Human, 9)]);
    let (sid, ev) = run_session(
        &mut chain,
        &keys,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3, 1),
        |_, j| (j != 0).then_some(Vote::Valid),
    );
    let no_show = seats_of(&ev, 0, 0)[0];
    assert!(
        ev.iter().any(|e| matches!(e,
        Event::Slashed { seat, reason: SlashReason::NoShow, amount: 950, .. } if *seat == no_show))
    );
    let au = &chain.c.state().auditors[&no_show];
    assert!(!au.active, "stake 50 is below the minimum 100");
    assert!(au.reputation < test_params().initial_reputation);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    chain.assert_supply_conserved();
}

/// Runs a one-segment honeypot session of `provider` to its end: its truth is `truth`
/// (an obvious one), every seat gets its keys and votes `vote_of(seat)`, and the provider
/// opens the honeypot and the mapping. Returns the session, its seats and the events of
/// the block that decided it.
pub(crate) fn honeypot_session(
    chain: &mut Chain,
    keys: &[Keypair],
    provider: &Keypair,
    tier: Tier,
    truth: Vote,
    n: u8,
    vote_of: impl Fn(&AccountId) -> Vote,
) -> (Hash, Vec<AccountId>, Vec<Event>) {
    honeypot_session_starving(chain, keys, provider, tier, truth, n, vote_of, |_| {
        Vec::new()
    })
}

/// [`honeypot_session`], the provider keeping the keys from the seats `starve` picks
/// among those drawn (they cannot read the segment, so they commit nothing).
#[allow(clippy::too_many_arguments)]
fn honeypot_session_starving(
    chain: &mut Chain,
    keys: &[Keypair],
    provider: &Keypair,
    tier: Tier,
    truth: Vote,
    n: u8,
    vote_of: impl Fn(&AccountId) -> Vote,
    starve: impl Fn(&[AccountId]) -> Vec<AccountId>,
) -> (Hash, Vec<AccountId>, Vec<Event>) {
    let salt = Salt([n; 32]);
    let mut seg = segment(100 + n, tier, vec![]);
    seg.honeypot = Some(honeypot_commitment(
        &seg.id,
        truth,
        Difficulty::Obvious,
        &salt,
    ));
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    let seg_id = seg.id;
    chain.submit(
        provider,
        Call::OpenSession(with_honeypot_set(manifest(vec![seg], 3, 0), &[0])),
    );
    chain.block();
    let seats = seats_of(&chain.block(), 0, 0);
    let starved = starve(&seats);
    deliver_keys(chain, provider, sid, 0, &starved);
    let vsalt = Salt([7; 32]);
    let voting: Vec<AccountId> = seats
        .iter()
        .filter(|id| !starved.contains(id))
        .copied()
        .collect();
    for id in &voting {
        chain.submit(
            find(keys, id),
            Call::Commit {
                session: sid,
                segment: 0,
                commitment: commitment(&sid, &seg_id, id, vote_of(id), &vsalt, &why(vote_of(id))),
            },
        );
    }
    chain.block();
    // With seats starved, the commit window runs its course instead of closing early.
    for _ in 0..64 {
        if matches!(chain.c.state().sessions[&sid].phase, Phase::Reveal { .. }) {
            break;
        }
        chain.block();
    }
    for id in &voting {
        chain.submit(
            find(keys, id),
            Call::Reveal {
                session: sid,
                segment: 0,
                vote: vote_of(id),
                salt: vsalt,
                reason: why(vote_of(id)),
            },
        );
    }
    chain.block();
    // A wrong opening is refused; the right one lands.
    let wrong = if truth.is_valid() {
        Vote::Invalid
    } else {
        Vote::Valid
    };
    assert_eq!(
        chain.try_apply(
            provider,
            open_set(sid, vec![opening(0, wrong, Difficulty::Obvious, salt)])
        ),
        Err(TxError::CommitmentMismatch)
    );
    chain.submit(
        provider,
        open_set(sid, vec![opening(0, truth, Difficulty::Obvious, salt)]),
    );
    chain.reveal_mapping(provider, sid);
    let ev = chain.block();
    assert!(chain.c.outcome(&sid).is_some(), "decided");
    (sid, seats, ev)
}

/// One opening of a honeypot set.
fn opening(segment: u16, verdict: Vote, difficulty: Difficulty, salt: Salt) -> HoneypotOpening {
    HoneypotOpening {
        segment,
        verdict,
        difficulty,
        salt,
    }
}

fn rubber_stamp_slashes(ev: &[Event]) -> Vec<AccountId> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Slashed {
                seat,
                reason: SlashReason::RubberStamp,
                ..
            } => Some(*seat),
            _ => None,
        })
        .collect()
}

/// A seat approving known errors that two honest seats reject is scored against the truth
/// each time, but flagged only once its approved known errors come from two providers: a
/// honeypot's truth is only its provider's word.
#[test]
fn a_rubber_stamper_is_flagged_only_on_known_errors_from_several_providers() {
    let mut params = test_params();
    params.rubber_stamp.min_samples = 3;
    // Each provider here has paid fees by its second session (3 seats x R); the fee floor
    // itself has a test of its own.
    params.rubber_stamp.min_provider_fees = 0;
    assert_eq!(params.rubber_stamp.min_providers, 2);
    let (mut chain, keys) = Chain::new(params, &[(Tier::Human, 3)]);
    let stamper = keys[0].public();
    let vote = |id: &AccountId| {
        if *id == stamper {
            Vote::Valid
        } else {
            Vote::Invalid
        }
    };
    let (a, b) = (key("provider"), key("provider-b"));
    for n in 0..4u8 {
        let provider = if n < 3 { &a } else { &b };
        let (sid, _, ev) = honeypot_session(
            &mut chain,
            &keys,
            provider,
            Tier::Human,
            Vote::Invalid,
            n,
            vote,
        );
        let o = chain.c.outcome(&sid).unwrap();
        assert_eq!(o.segments[0].honeypot, Some(Vote::Invalid));
        assert_eq!(
            o.disputed_honeypots, 0,
            "one seat does not dispute a honeypot"
        );
        let h = &chain.c.state().auditors[&stamper].honeypots;
        assert_eq!(h.errors_approved[0], u32::from(n) + 1);
        if n < 3 {
            // Three samples from one provider: enough samples, not enough providers.
            assert!(
                rubber_stamp_slashes(&ev).is_empty(),
                "flagged on one provider's word"
            );
            assert_eq!(h.miss_providers, vec![a.public()]);
        } else {
            assert_eq!(rubber_stamp_slashes(&ev), vec![stamper]);
        }
    }
    for k in &keys {
        let au = &chain.c.state().auditors[&k.public()];
        assert_eq!(au.flagged, k.public() == stamper);
        assert_eq!(au.active, k.public() != stamper);
        if k.public() == stamper {
            assert!(au.earned < au.slashed, "a flagged seat keeps no profit");
            assert!(!chain.c.state().eligible(Tier::Human).contains(&stamper));
        }
    }
}

/// The attack of finding 1: a provider commits true steps as known errors and the honest
/// seats, all voting Valid, would be slashed and flagged against its word. Their
/// judgements against the truth reach a quorum, so the honeypot is disputed: nobody is
/// scored on it (never slashed, no honeypot record, no reward), and each false honeypot
/// burns the provider's bond. Two colluding griefers change nothing: there is no record to
/// flag on.
#[test]
fn a_griefing_providers_false_honeypots_slash_and_flag_no_honest_seat_and_burn_its_bond() {
    let mut params = always_slash();
    params.rubber_stamp.min_samples = 1;
    let bond = params.honeypot_bond;
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 3)]);
    let stakes: Vec<u64> = keys
        .iter()
        .map(|k| chain.c.state().accounts[&k.public()].stake)
        .collect();
    let (a, b) = (key("provider"), key("provider-b"));
    for n in 0..6u8 {
        let provider = if n % 2 == 0 { &a } else { &b };
        let before = chain.c.state().accounts[&provider.public()].balance;
        let burned = chain.c.state().burned;
        let (sid, seats, ev) = honeypot_session(
            &mut chain,
            &keys,
            provider,
            Tier::Computer,
            Vote::Invalid,
            n,
            |_| Vote::Valid,
        );
        let o = chain.c.outcome(&sid).unwrap();
        assert_eq!((o.disputed_honeypots, o.bond_burned), (1, bond));
        assert!(
            ev.iter()
                .any(|e| matches!(e, Event::HoneypotDisputed { burned, .. } if *burned == bond))
        );
        assert!(
            !ev.iter().any(|e| matches!(e, Event::Slashed { .. })),
            "{ev:?}"
        );
        assert_eq!(seats.len(), 3);
        assert!(
            !ev.iter().any(|e| matches!(e, Event::Rewarded { .. })),
            "nobody is scored on a disputed honeypot"
        );
        assert_eq!(o.rewards_paid, 0);
        assert_eq!(chain.c.state().burned - burned, bond);
        assert_eq!(
            before - chain.c.state().accounts[&provider.public()].balance,
            bond,
            "the provider lost one bond"
        );
    }
    for (k, stake) in keys.iter().zip(stakes) {
        let au = &chain.c.state().auditors[&k.public()];
        assert!(!au.flagged && au.active);
        assert_eq!(
            au.honeypots,
            Default::default(),
            "no record on a disputed honeypot"
        );
        assert_eq!(chain.c.state().accounts[&k.public()].stake, stake);
        assert_eq!(au.reputation, test_params().initial_reputation);
    }
    chain.assert_supply_conserved();
}

/// A griefing provider starves all but one seat of its false honeypot (a true step
/// committed as a known error), so that the one honest seat left cannot reach the quorum
/// that disputes it. That seat is still not scored against the provider's word: with
/// fewer judging votes than a quorum, a honeypot's truth scores nobody and records
/// nothing; the starved seats are paid by the provider.
#[test]
fn starving_all_but_one_seat_of_a_false_honeypot_slashes_nobody() {
    let params = always_slash();
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let (sid, seats, ev) = honeypot_session_starving(
        &mut chain,
        &keys,
        &provider,
        Tier::Computer,
        Vote::Invalid,
        1,
        |_| Vote::Valid,
        |seats| seats.iter().skip(1).copied().collect(),
    );
    assert_eq!(seats.len(), 3);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.starved_seats, 2, "{o:?}");
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Slashed { .. })),
        "the lone honest seat was slashed on the provider's word: {ev:?}"
    );
    let lone = &chain.c.state().auditors[&seats[0]];
    assert_eq!(lone.honeypots, Default::default(), "nothing recorded");
    assert_eq!(chain.c.state().accounts[&seats[0]].stake, 1_000);
}

/// An abstention on a known error counts in the sample but is neither a catch nor a miss:
/// with it, a seat that approved the two known errors it judged reaches the sample
/// minimum of 3, and its approval rate is 2 of 2 judged (not 2 of 3 seen), which flags it
/// at an 80% threshold.
#[test]
fn an_abstention_on_a_honeypot_counts_in_the_sample_but_never_as_a_miss() {
    let mut params = test_params();
    params.rubber_stamp.min_samples = 3;
    // Every provider counts from its first session here (the fee floor has its own test).
    params.rubber_stamp.min_provider_fees = 0;
    params.rubber_stamp.approval = Ppm(800_000);
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 3)]);
    let seat = keys[0].public();
    let (a, b) = (key("provider"), key("provider-b"));
    let plan = [(&a, Vote::Abstain), (&b, Vote::Valid), (&a, Vote::Valid)];
    for (n, (provider, mine)) in plan.into_iter().enumerate() {
        let vote = |id: &AccountId| if *id == seat { mine } else { Vote::Invalid };
        let (_, _, ev) = honeypot_session(
            &mut chain,
            &keys,
            provider,
            Tier::Computer,
            Vote::Invalid,
            n as u8,
            vote,
        );
        let h = chain.c.state().auditors[&seat].honeypots.clone();
        assert_eq!(
            h.errors_seen[0],
            n as u32 + 1,
            "the abstention is in the sample"
        );
        assert_eq!(h.errors_abstained[0], 1);
        match n {
            0 => {
                assert_eq!(h.errors_approved, [0; 3]);
                assert_eq!(h.total_error_approval(), None, "nothing judged yet");
                assert!(h.miss_providers.is_empty(), "an abstention is no miss");
            }
            1 => assert!(rubber_stamp_slashes(&ev).is_empty(), "2 samples < 3"),
            _ => {
                assert_eq!(h.total_error_approval(), Some(Ppm(1_000_000)));
                assert_eq!(rubber_stamp_slashes(&ev), vec![seat]);
            }
        }
    }
}

/// A provider blinds its honeypot: every segment carries a honeypot commitment, the real
/// ones commitments nobody opens, and the manifest commits to the set {2}. Only that set
/// opens (another set, or the empty one, does not match); the session closes with the
/// mapping, the honeypot stays out of the trace verdict, and the seat that approved it is
/// scored against the truth. A provider that never paid fees names nobody's record.
#[test]
fn a_blinded_honeypot_is_judged_like_any_segment_and_stays_out_of_the_trace() {
    let mut params = test_params();
    params.rubber_stamp.min_samples = 1;
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 3)]);
    let provider = key("provider");
    // 0 <- 1 are the trace: a sound step, then a wrong last step. 2 is the honeypot,
    // citing the last step.
    let mut segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
        segment(2, Tier::Computer, vec![1]),
    ];
    let (hp_salt, fake_salt) = (Salt([5; 32]), Salt([6; 32]));
    for (i, g) in segs.iter_mut().enumerate() {
        g.honeypot = Some(match i {
            2 => honeypot_commitment(&g.id, Vote::Invalid, Difficulty::Obvious, &hp_salt),
            // An opening the provider keeps for segment 0, which step 1 rests on.
            0 => honeypot_commitment(&g.id, Vote::Invalid, Difficulty::Obvious, &fake_salt),
            _ => Hash::sha256(b"a commitment nobody opens"),
        });
    }
    let ids: Vec<Hash> = segs.iter().map(|g| g.id).collect();
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(
        &provider,
        Call::OpenSession(with_honeypot_set(manifest(segs, 3, 0), &[2])),
    );
    let mut ev = chain.block();
    ev.extend(chain.block());
    let stamper = seats_of(&ev, 2, 0)[0];
    let vsalt = Salt([7; 32]);
    let vote_of = |seg: usize, seat: &AccountId| match seg {
        0 => Vote::Valid,
        2 if *seat == stamper => Vote::Valid,
        _ => Vote::Invalid,
    };
    for (seg, id) in ids.iter().enumerate() {
        for seat in seats_of(&ev, seg as u16, 0) {
            let c = commitment(
                &sid,
                id,
                &seat,
                vote_of(seg, &seat),
                &vsalt,
                &why(vote_of(seg, &seat)),
            );
            chain.submit(
                find(&keys, &seat),
                Call::Commit {
                    session: sid,
                    segment: seg as u16,
                    commitment: c,
                },
            );
        }
    }
    chain.block();
    for seg in 0..ids.len() {
        for seat in seats_of(&ev, seg as u16, 0) {
            chain.submit(
                find(&keys, &seat),
                Call::Reveal {
                    session: sid,
                    segment: seg as u16,
                    vote: vote_of(seg, &seat),
                    salt: vsalt,
                    reason: why(vote_of(seg, &seat)),
                },
            );
        }
    }
    chain.block();
    assert!(matches!(
        chain.c.state().sessions[&sid].phase,
        Phase::Disclose { .. }
    ));
    // The set is what was committed: adding the step the trace rests on, or opening
    // nothing, is not it; one by one is not how a set opens.
    let hp = opening(2, Vote::Invalid, Difficulty::Obvious, hp_salt);
    let fake = opening(0, Vote::Invalid, Difficulty::Obvious, fake_salt);
    for wrong in [vec![fake, hp.clone()], vec![]] {
        assert_eq!(
            chain.try_apply(&provider, open_set(sid, wrong)),
            Err(TxError::HoneypotSetMismatch)
        );
    }
    assert_eq!(
        chain.try_apply(
            &provider,
            Call::RevealHoneypot {
                session: sid,
                segment: 2,
                verdict: Vote::Invalid,
                difficulty: Difficulty::Obvious,
                salt: hp_salt,
            }
        ),
        Err(TxError::HoneypotSetRequired)
    );
    chain.submit(&provider, open_set(sid, vec![hp]));
    // Opened, the honeypot does not end the disclosure: the mapping does.
    chain.block();
    assert!(chain.c.state().sessions.contains_key(&sid));
    chain.reveal_mapping(&provider, sid);
    let ev = chain.block();
    let o = chain
        .c
        .outcome(&sid)
        .expect("decided in the block that opened the mapping");
    assert_eq!(o.segments[2].honeypot, Some(Vote::Invalid));
    assert_eq!(o.segments[2].verdict, SegmentVerdict::Invalid);
    assert_eq!(
        o.segments[0].honeypot, None,
        "an unopened commitment is a real segment"
    );
    assert!(!o.honeypots_forfeited);
    // Weighed without the honeypot, 1 of 2 pass; the wrong last step is the trace's
    // conclusion (the honeypot citing it does not make it less of a sink): Fail.
    assert_eq!((o.passing_weight, o.total_weight), (1, 2));
    assert!(o.error_at_conclusion);
    assert_eq!(o.trace, TraceVerdict::Fail);
    // The approving seat was scored against the truth; one provider's word flags nobody.
    assert!(rubber_stamp_slashes(&ev).is_empty());
    for k in &keys {
        let au = &chain.c.state().auditors[&k.public()];
        let approved = if k.public() == stamper { 1 } else { 0 };
        assert_eq!(au.honeypots.errors_approved, [approved, 0, 0]);
        assert!(!au.flagged);
    }
    // A provider that has paid no fees yet does not count towards `min_providers`: a
    // fresh key costs nothing.
    assert!(
        chain.c.state().auditors[&stamper]
            .honeypots
            .miss_providers
            .is_empty()
    );
}

#[test]
fn unbonding_waits_and_cannot_dodge_a_slash() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 1)]);
    let k = &keys[0];
    chain.submit(k, Call::Unbond { amount: 400 });
    chain.block();
    assert_eq!(chain.c.state().accounts[&k.public()].stake, 600);
    let frees_at = chain.height + test_params().unbond_delay;
    assert_eq!(
        chain.c.state().accounts[&k.public()].unbonding,
        vec![Unbonding {
            release_at: frees_at,
            amount: 400
        }]
    );
    let early = chain.try_apply(k, Call::Withdraw).unwrap_err();
    assert_eq!(early, TxError::NotYetWithdrawable { frees_at });
    assert!(early.to_string().contains(&format!("height {frees_at}")));
    while chain.height + 1 < frees_at {
        chain.block();
    }
    let ev = chain.try_apply(k, Call::Withdraw).unwrap();
    assert!(matches!(ev[0], Event::Withdrawn { amount: 400, .. }));
    assert_eq!(chain.c.state().accounts[&k.public()].balance, 10 + 400);
    // Withdrawing twice: nothing is unbonding any more.
    assert_eq!(
        chain.try_apply(k, Call::Withdraw),
        Err(TxError::NothingToWithdraw)
    );
    chain.assert_supply_conserved();
}

/// An exit unbonds everything and takes the auditor out of every draw for good: bonding
/// again does not re-admit it, and neither a second exit nor a second registration is
/// accepted.
#[test]
fn an_exit_unbonds_all_stake_and_is_never_drawn_again() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5)]);
    let out = keys[0].public();
    let ev = chain.try_apply(&keys[0], Call::Exit).unwrap();
    assert!(ev.iter().any(|e| matches!(e,
        Event::UnbondStarted { account, amount: 1_000, .. } if *account == out)));
    assert!(ev.iter().any(|e| matches!(e,
        Event::AuditorExiting { account } if *account == out)));
    chain.block();
    let st = chain.c.state();
    assert_eq!(st.accounts[&out].stake, 0);
    assert_eq!(st.accounts[&out].unbonding[0].amount, 1_000);
    assert!(st.auditors[&out].exiting);
    assert!(!st.eligible(Tier::Computer).contains(&out));
    assert_eq!(
        chain.try_apply(&keys[0], Call::Exit),
        Err(TxError::AlreadyExiting)
    );
    // Bonding its last 10 again is refused: it would lock them in an account no draw uses
    // while adding to its voting power.
    let e = chain
        .try_apply(&keys[0], Call::Bond { amount: 10 })
        .unwrap_err();
    assert_eq!(e, TxError::AlreadyExiting);
    assert_eq!(chain.balance(&out), 10);
    assert_eq!(chain.c.state().accounts[&out].stake, 0);
    chain.block();
    assert!(!chain.c.state().eligible(Tier::Computer).contains(&out));
    assert_eq!(
        chain.try_apply(
            &keys[0],
            Call::RegisterAuditor {
                tier: Tier::Computer,
                expertise: vec![],
                sealing_key: SealingPublicKey([1; 32]),
                stake: 10,
            }
        ),
        Err(TxError::AlreadyRegistered)
    );
    let provider = key("provider");
    for n in 0..6u8 {
        chain.submit(
            &provider,
            Call::OpenSession(manifest(vec![segment(n, Tier::Computer, vec![])], 4, 0)),
        );
        chain.block();
        let seats = seats_of(&chain.block(), 0, 0);
        assert_eq!(seats.len(), 4);
        assert!(!seats.contains(&out), "an exiting auditor was drawn");
    }
    // Not an auditor: nothing to exit from.
    assert_eq!(
        chain.try_apply(&provider, Call::Exit),
        Err(TxError::NotAnAuditor)
    );
    chain.assert_supply_conserved();
}

/// A seat held when its auditor exits stays its duty: it cannot withdraw while the session
/// is live, a no-show is slashed from the unbonding stake, and only the rest comes back,
/// once the unbonding frees.
#[test]
fn an_exiting_auditor_keeps_its_seats_duty_and_is_slashed_from_its_unbonding() {
    let params = Params {
        penalty: 950,
        max_session_loss: 950,
        unbond_delay: 100,
        ..always_slash()
    };
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 4), (Tier::Human, 9)]);
    let mut leaver = None;
    let (sid, ev) = run_session_with(
        &mut chain,
        &keys,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3, 1),
        |_, j| (j != 0).then_some(Vote::Valid),
        |_, _| false,
        |chain, _, ev| {
            let seat = seats_of(ev, 0, 0)[0];
            let k = find(&keys, &seat);
            assert_eq!(
                chain.try_apply(k, Call::Withdraw),
                Err(TxError::NothingToWithdraw)
            );
            chain.try_apply(k, Call::Exit).unwrap();
            assert!(matches!(
                chain.try_apply(k, Call::Withdraw),
                Err(TxError::NotYetWithdrawable { .. })
            ));
            chain.assert_supply_conserved();
            leaver = Some(seat);
        },
    );
    let leaver = leaver.unwrap();
    assert!(ev.iter().any(|e| matches!(e,
        Event::Slashed { seat, reason: SlashReason::NoShow, amount: 950, .. } if *seat == leaver)));
    let acct = &chain.c.state().accounts[&leaver];
    assert_eq!(acct.stake, 0);
    assert_eq!(acct.unbonding.len(), 1);
    assert_eq!(
        acct.unbonding[0].amount, 50,
        "the slash took from the unbonding"
    );
    let frees_at = acct.unbonding[0].release_at;
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    chain.assert_supply_conserved();
    let k = find(&keys, &leaver).clone();
    while chain.c.state().appealable.contains_key(&sid) {
        chain.block();
    }
    assert_eq!(
        chain.try_apply(&k, Call::Withdraw),
        Err(TxError::NotYetWithdrawable { frees_at })
    );
    while chain.height + 1 < frees_at {
        chain.block();
    }
    let ev = chain.try_apply(&k, Call::Withdraw).unwrap();
    assert!(matches!(ev[0], Event::Withdrawn { amount: 50, .. }));
    assert_eq!(chain.c.state().accounts[&leaver].balance, 10 + 50);
    assert_eq!(
        chain.try_apply(&k, Call::Withdraw),
        Err(TxError::NothingToWithdraw)
    );
    assert_eq!(chain.c.state().auditors[&leaver].slashed, 950);
    chain.assert_supply_conserved();
}

#[test]
fn snapshots_restore_the_same_state_root() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 4)]);
    let segs = vec![segment(0, Tier::Computer, vec![])];
    run_session(&mut chain, &keys, manifest(segs, 3, 0), |_, _| {
        Some(Vote::Valid)
    });
    let bytes = chain.c.snapshot();
    let back = Contract::from_snapshot(&bytes).unwrap();
    assert_eq!(back.state_root(), chain.c.state_root());
    assert!(Contract::from_snapshot(&bytes[..bytes.len() - 1]).is_err());
}

#[test]
fn commit_order_inside_a_block_does_not_change_the_state() {
    let build = |reverse: bool| {
        let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5)]);
        let provider = key("provider");
        let sid = Tx::session_id(&provider.public(), 0);
        let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
        let seg_id = m.segments[0].id;
        chain.submit(&provider, Call::OpenSession(m));
        chain.block();
        let mut seats = seats_of(&chain.block(), 0, 0);
        if reverse {
            seats.reverse();
        }
        for id in &seats {
            chain.submit(
                find(&keys, id),
                Call::Commit {
                    session: sid,
                    segment: 0,
                    commitment: commitment(
                        &sid,
                        &seg_id,
                        id,
                        Vote::Valid,
                        &Salt([1; 32]),
                        &why(Vote::Valid),
                    ),
                },
            );
        }
        chain.block();
        chain.c.state_root()
    };
    assert_eq!(build(false), build(false));
    assert_eq!(build(false), build(true));
}

#[test]
fn genesis_auditors_hold_seats_from_the_start() {
    let keys: Vec<Keypair> = (0..3).map(|i| key(&format!("g{i}"))).collect();
    let provider = key("provider");
    let mut accounts: Vec<GenesisAccount> = keys
        .iter()
        .map(|k| GenesisAccount {
            id: k.public(),
            balance: 0,
            stake: 500,
        })
        .collect();
    accounts.push(GenesisAccount {
        id: provider.public(),
        balance: 1_000,
        stake: 0,
    });
    let auditors: Vec<trust_contracts::GenesisAuditor> = keys
        .iter()
        .map(|k| trust_contracts::GenesisAuditor {
            id: k.public(),
            tier: Tier::Computer,
            expertise: vec![],
            sealing_key: SealingPublicKey([3; 32]),
        })
        .collect();
    let mut c = Contract::new(&Genesis {
        params: test_params(),
        accounts: accounts.clone(),
        auditors: auditors.clone(),
    })
    .unwrap();
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    c.apply(
        &ctx(1),
        &Signed::sign(
            &provider,
            &trust_protocol::Hash::ZERO,
            Tx {
                nonce: 0,
                call: Call::OpenSession(m),
            },
        ),
    )
    .unwrap();
    c.end_block(&ctx(1));
    let mut ev = c.begin_block(&ctx(2));
    ev.extend(c.end_block(&ctx(2)));
    assert_eq!(seats_of(&ev, 0, 0).len(), 3);

    let stranger = key("stranger").public();
    let mut bad = auditors;
    bad[0].id = stranger;
    assert_eq!(
        Contract::new(&Genesis {
            params: test_params(),
            accounts,
            auditors: bad,
        }),
        Err(trust_contracts::GenesisError::BadAuditor(stranger))
    );
}

#[test]
fn keys_go_to_a_segments_seats_and_to_the_seats_that_cite_it() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    // Segment 1 depends on segment 0; segment 2 on nothing.
    let m = manifest(
        vec![
            segment(0, Tier::Computer, vec![]),
            segment(1, Tier::Computer, vec![0]),
            segment(2, Tier::Computer, vec![]),
        ],
        2,
        0,
    );
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let ev = chain.block();
    let (s0, s1, s2) = (
        seats_of(&ev, 0, 0),
        seats_of(&ev, 1, 0),
        seats_of(&ev, 2, 0),
    );
    let sealed = trust_protocol::seal::SealedKey {
        ephemeral: SealingPublicKey([2; 32]),
        ciphertext: vec![0; 48],
    };
    let deliver = |segment: u16, seat: AccountId| Call::DeliverKeys {
        session: sid,
        keys: vec![trust_protocol::tx::SeatKey {
            segment,
            seat,
            sealed: sealed.clone(),
        }],
    };
    // Own seat, and the premise's key to a seat of the segment that cites it.
    chain.try_apply(&provider, deliver(0, s0[0])).unwrap();
    let ev = chain.try_apply(&provider, deliver(0, s1[0])).unwrap();
    assert!(matches!(ev[0], Event::KeyDelivered { segment: 0, .. }));
    // Segment 1's key to a seat that only holds segment 2 (which cites nothing): refused.
    let only_2 = s2
        .iter()
        .find(|a| !s1.contains(a) && !s0.contains(a))
        .copied()
        .expect("the seeded draw seats someone on segment 2 only");
    assert_eq!(
        chain.try_apply(&provider, deliver(1, only_2)),
        Err(TxError::NotASeat(only_2))
    );
    // An auditor with no seat at all, and a sender who is not the provider: refused.
    let outsider = keys
        .iter()
        .map(Keypair::public)
        .find(|a| !s0.contains(a) && !s1.contains(a) && !s2.contains(a))
        .expect("six auditors, at most six seats: the seeded draw leaves one out");
    assert_eq!(
        chain.try_apply(&provider, deliver(0, outsider)),
        Err(TxError::NotASeat(outsider))
    );
    assert_eq!(
        chain.try_apply(&keys[0], deliver(0, s0[0])),
        Err(TxError::NotProvider)
    );
}

/// Commitments made between the seat draw and the close of the commit window.
fn commits_before_close(ev: &[Event]) -> usize {
    let drawn = ev
        .iter()
        .position(|e| matches!(e, Event::SeatAssigned { .. }))
        .unwrap();
    let closed = ev
        .iter()
        .position(|e| matches!(e, Event::CommitWindowClosed { .. }))
        .unwrap();
    ev[drawn..closed]
        .iter()
        .filter(|e| matches!(e, Event::Committed { .. }))
        .count()
}

#[test]
fn abstaining_seats_are_present_unpaid_and_unpunished_and_close_the_window_early() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![0]),
    ];
    let before: Vec<_> = keys
        .iter()
        .map(|k| chain.c.state().auditors[&k.public()].clone())
        .collect();
    let start = chain.height;
    // Segment 0 is judged; every seat of segment 1 abstains (its checker cannot read it).
    let (sid, ev) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |s, _| {
        Some(if s == 0 { Vote::Valid } else { Vote::Abstain })
    });
    assert_eq!(
        commits_before_close(&ev),
        6,
        "every seat committed, abstentions included"
    );
    // The commit window closed as soon as all had committed: in the block after the
    // commits, long before its deadline.
    let closed_at = ev
        .iter()
        .filter(|e| matches!(e, Event::CommitWindowClosed { .. }))
        .count();
    assert_eq!(closed_at, 1, "one round: nothing to escalate to");
    let o = chain.c.outcome(&sid).unwrap();
    assert!(
        o.decided_at - start <= 6,
        "decided in {} blocks",
        o.decided_at - start
    );
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Valid);
    assert_eq!(o.segments[1].verdict, SegmentVerdict::Undecided);
    assert!(!o.segments[1].escalated, "no higher tier has auditors");
    assert_eq!(o.segments[1].votes.abstained, 3);
    assert_eq!(
        o.segments[1].votes.missing, 0,
        "an abstention is not a no-show"
    );
    // Half the weight is undecided: neither Pass nor Fail.
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
    assert_eq!((o.coverage.judged, o.coverage.segments), (1, 2));
    assert!(
        !ev.iter().any(|e| matches!(e, Event::Slashed { .. })),
        "nobody is slashed"
    );
    for (k, b) in keys.iter().zip(&before) {
        let a = &chain.c.state().auditors[&k.public()];
        let abstained = a.abstentions - b.abstentions;
        if abstained > 0 {
            assert_eq!(
                a.reputation, b.reputation,
                "an abstention leaves reputation alone"
            );
            assert_eq!(a.slashed, b.slashed);
            assert_eq!(a.disagreed, b.disagreed);
            if a.agreed == b.agreed {
                assert_eq!(a.earned, b.earned, "an abstention earns nothing");
            }
        }
    }
    let abstentions: u64 = keys
        .iter()
        .map(|k| chain.c.state().auditors[&k.public()].abstentions)
        .sum();
    assert_eq!(abstentions, 3, "the abstention rate is on record");
}

#[test]
fn an_abstained_segment_escalates_to_the_next_tier_that_has_auditors() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 4), (Tier::Llm, 4)]);
    let segs = vec![segment(0, Tier::Computer, vec![])];
    let (sid, ev) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |_, _| {
        Some(Vote::Abstain)
    });
    assert!(ev.iter().any(|e| matches!(
        e,
        Event::SegmentEscalated {
            tier: Tier::Llm,
            ..
        }
    )));
    // Nobody votes in round 1 here: the round-1 seats are no-shows, the round-0 seats
    // that abstained are not.
    let o = chain.c.outcome(&sid).unwrap();
    assert!(o.segments[0].escalated);
    assert_eq!(o.segments[0].tier, Tier::Llm);
    let round0: Vec<AccountId> = seats_of(&ev, 0, 0);
    for e in &ev {
        if let Event::Slashed { seat, reason, .. } = e {
            assert!(!round0.contains(seat), "an abstaining seat was slashed");
            assert_eq!(*reason, SlashReason::NoShow);
        }
    }
}

#[test]
fn a_split_segment_may_get_more_seats_of_its_tier_but_an_abstained_one_may_not() {
    // Computer auditors only: a split (1 Valid, 1 Invalid, 1 abstaining) round escalates
    // to more Computer seats; a fully abstained one stays undecided.
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 12)]);
    let segs = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![]),
    ];
    let (_, ev) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |s, j| {
        Some(match (s, j) {
            (0, 0) => Vote::Valid,
            (0, 1) => Vote::Invalid,
            _ => Vote::Abstain,
        })
    });
    let escalated: Vec<u16> = ev
        .iter()
        .filter_map(|e| match e {
            Event::SegmentEscalated { segment, .. } => Some(*segment),
            _ => None,
        })
        .collect();
    assert_eq!(escalated, vec![0]);
}

#[test]
fn left_out_segments_weigh_as_undecided_and_inherit_errors() {
    use trust_protocol::tx::LeftOut;
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let left = |deps: Vec<u16>, conclusion| LeftOut {
        tier: Tier::Llm,
        weight: 1,
        depends_on: deps,
        rests_on_left_out: Vec::new(),
        supports: None,
        conclusion,
    };
    // Two judged steps hold, but five prose steps and the answer were left out: the
    // trace cannot pass on the strength of the two.
    let mut m = manifest(
        vec![
            segment(0, Tier::Computer, vec![]),
            segment(1, Tier::Computer, vec![0]),
        ],
        3,
        0,
    );
    m.left_out = (0..5).map(|_| left(vec![1], false)).collect();
    m.left_out.push(left(vec![1], true));
    let (sid, _) = run_session(&mut chain, &keys, m.clone(), |_, _| Some(Vote::Valid));
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
    assert_eq!(
        (o.passing_weight, o.undecided_weight, o.total_weight),
        (2, 6, 8)
    );
    assert_eq!(o.coverage.left_out, [0, 6, 0]);
    assert_eq!((o.coverage.judged, o.coverage.segments), (2, 8));
    assert!(
        o.left_out
            .iter()
            .all(|l| l.verdict == SegmentVerdict::Undecided)
    );
    assert_eq!(o.bound.hoeffding_neg_ln_milli > 0, o.coverage.judged > 0);

    // The same trace with its last judged step wrong: the left-out answer rests on it,
    // so the error reaches the conclusion and the trace fails.
    let (sid, _) = run_session(&mut chain, &keys, m, |s, _| {
        Some(if s == 1 { Vote::Invalid } else { Vote::Valid })
    });
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Fail);
    assert!(o.error_at_conclusion);
    assert!(
        o.left_out
            .iter()
            .all(|l| l.verdict == SegmentVerdict::Propagated)
    );
}

#[test]
fn a_trace_whose_seats_all_abstained_gets_no_failure_bound() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let segs = (0..3).map(|i| segment(i, Tier::Computer, vec![])).collect();
    let (sid, _) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |_, _| {
        Some(Vote::Abstain)
    });
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
    assert_eq!(o.coverage.judged, 0);
    assert_eq!(
        o.bound.hoeffding_neg_ln_milli, 0,
        "no counted vote, no bound"
    );
}

#[test]
fn a_restore_mid_session_keeps_the_root_block_after_block() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), 0);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let seg = m.segments[0].id;
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let seats = seats_of(&chain.block(), 0, 0);
    let mut restored = Chain {
        c: Contract::from_snapshot(&chain.c.snapshot()).unwrap(),
        height: chain.height,
        pending: Vec::new(),
        supply_check: chain.supply_check,
    };
    assert!(!restored.c.state().sessions.is_empty(), "a live session");
    assert_eq!(restored.c.state_root(), chain.c.state_root());
    for c in [&mut chain, &mut restored] {
        for id in &seats {
            let salt = Salt([3; 32]);
            let k = find(&keys, id);
            let commitment = commitment(&sid, &seg, id, Vote::Valid, &salt, &why(Vote::Valid));
            c.submit(
                k,
                Call::Commit {
                    session: sid,
                    segment: 0,
                    commitment,
                },
            );
        }
    }
    for _ in 0..8 {
        chain.block();
        restored.block();
        assert_eq!(restored.c.state_root(), chain.c.state_root());
    }
}

#[test]
fn the_root_commits_to_every_entry_and_only_to_the_current_state() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 4)]);
    let segs = vec![segment(0, Tier::Computer, vec![])];
    let (sid, _) = run_session(&mut chain, &keys, manifest(segs, 3, 0), |_, _| {
        Some(Vote::Valid)
    });
    let st = chain.c.state().clone();
    let root = chain.c.state_root();
    let who = keys[0].public();
    type Change = Box<dyn Fn(&mut trust_contracts::State)>;
    let changes: Vec<(&str, Change)> = vec![
        ("height", Box::new(|s| s.height += 1)),
        ("burned", Box::new(|s| s.burned += 1)),
        ("params", Box::new(|s| s.params.commit_window += 1)),
        (
            "account",
            Box::new(move |s| s.accounts.get_mut(&who).unwrap().nonce += 1),
        ),
        (
            "auditor",
            Box::new(move |s| s.auditors.get_mut(&who).unwrap().agreed += 1),
        ),
        (
            "outcome",
            Box::new(move |s| s.outcomes.get_mut(&sid).unwrap().rewards_paid += 1),
        ),
        (
            "failed",
            Box::new(move |s| {
                s.failed.insert(
                    Hash::sha256(b"x"),
                    trust_contracts::Failure {
                        at: 1,
                        reason: "r".into(),
                    },
                );
            }),
        ),
    ];
    for (what, change) in &changes {
        let mut changed = st.clone();
        change(&mut changed);
        assert_ne!(
            Contract::from_state(changed).state_root(),
            root,
            "{what} is not committed"
        );
    }
    // The root is a function of the current state, not of the way there.
    assert_eq!(Contract::from_state(st.clone()).state_root(), root);

    // Every entry proves against the root; a changed value or an absent key does not.
    let key = trust_contracts::StateKey::Outcome(sid);
    let (value, proof) = chain.c.prove(&key).unwrap();
    let value = value.unwrap();
    trust_contracts::verify_entry(root, &key, Some(&value), &proof).unwrap();
    let mut tampered = value.clone();
    *tampered.last_mut().unwrap() ^= 1;
    assert!(trust_contracts::verify_entry(root, &key, Some(&tampered), &proof).is_err());
    assert!(trust_contracts::verify_entry(Hash([1; 32]), &key, Some(&value), &proof).is_err());
    let absent = trust_contracts::StateKey::Outcome(Hash::sha256(b"nobody"));
    let (none, proof) = chain.c.prove(&absent).unwrap();
    assert!(none.is_none());
    trust_contracts::verify_entry(root, &absent, None, &proof).unwrap();
    assert!(trust_contracts::verify_entry(root, &absent, Some(&value), &proof).is_err());
}

#[test]
fn a_transfer_and_its_return_leave_only_the_nonces_changed() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 2)]);
    let (a, b) = (&keys[0], &keys[1]);
    let mut expected = chain.c.state().clone();
    chain.submit(
        a,
        Call::Transfer {
            to: b.public(),
            amount: 5,
        },
    );
    chain.block();
    chain.submit(
        b,
        Call::Transfer {
            to: a.public(),
            amount: 5,
        },
    );
    chain.block();
    expected.height = chain.height;
    expected.accounts.get_mut(&a.public()).unwrap().nonce += 1;
    expected.accounts.get_mut(&b.public()).unwrap().nonce += 1;
    assert_eq!(chain.c.state(), &expected);
    assert_eq!(
        chain.c.state_root(),
        Contract::from_state(expected).state_root()
    );
}

/// A session opens at most `max_honeypots` honeypots. The bond escrowed at opening covers
/// `min(cap, segments)` honeypots: a committed set within the cap opens and the bond comes
/// back when none is disputed; a set beyond it can never be opened, so the provider
/// forfeits its bond and every segment stays part of its own trace.
#[test]
fn honeypots_beyond_the_cap_are_refused_and_the_bond_comes_back() {
    let params = Params {
        max_honeypots: 2,
        ..test_params()
    };
    let bond = params.honeypot_bond;
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let salt = |i: usize| Salt([40 + i as u8; 32]);
    for set in [vec![0u16, 1], vec![0, 1, 2]] {
        let mut segs: Vec<SegmentEntry> =
            (0..3).map(|i| segment(i, Tier::Computer, vec![])).collect();
        for (i, g) in segs.iter_mut().enumerate() {
            g.honeypot = Some(honeypot_commitment(
                &g.id,
                Vote::Invalid,
                Difficulty::Subtle,
                &salt(i),
            ));
        }
        let m = with_honeypot_set(manifest(segs, 3, 0), &set);
        let fee = m.fee;
        let before = chain.c.state().accounts[&provider.public()].balance;
        let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
        chain.submit(&provider, Call::OpenSession(m));
        chain.block();
        assert_eq!(
            chain.c.state().sessions[&sid].bond,
            2 * bond,
            "min(cap 2, 3 segments)"
        );
        assert_eq!(
            before - chain.c.state().accounts[&provider.public()].balance,
            fee + 2 * bond
        );
        let ev = chain.block();
        deliver_keys(&mut chain, &provider, sid, 0, &[]);
        let ids: Vec<Hash> = chain.c.state().sessions[&sid]
            .segments
            .iter()
            .map(|g| g.entry.id)
            .collect();
        let plan = commit_votes(&mut chain, &keys, sid, &ids, &ev, 0, &|_, _| {
            Some(Vote::Invalid)
        });
        chain.block();
        reveal_votes(&mut chain, sid, &plan);
        chain.block();
        let openings: Vec<HoneypotOpening> = set
            .iter()
            .map(|i| opening(*i, Vote::Invalid, Difficulty::Subtle, salt(usize::from(*i))))
            .collect();
        if set.len() > 2 {
            assert_eq!(
                chain.try_apply(&provider, open_set(sid, openings)),
                Err(TxError::TooManyHoneypots(3))
            );
            while chain.c.outcome(&sid).is_none() {
                chain.block();
            }
        } else {
            chain.submit(&provider, open_set(sid, openings));
            chain.block();
            chain.reveal_mapping(&provider, sid);
            chain.block();
        }
        let o = chain.c.outcome(&sid).unwrap();
        let opened: Vec<bool> = o.segments.iter().map(|g| g.honeypot.is_some()).collect();
        if set.len() > 2 {
            assert_eq!(opened, [false, false, false]);
            assert!(o.honeypots_forfeited);
            assert_eq!(o.bond_burned, 2 * bond);
            // Its own (wrong) steps are its trace: it fails.
            assert_eq!(o.trace, TraceVerdict::Fail);
            assert_eq!(
                before - chain.c.state().accounts[&provider.public()].balance,
                o.rewards_paid + 2 * bond,
                "fee left refunded, bond forfeited"
            );
        } else {
            assert_eq!(opened, [true, true, false]);
            // The unopened one is the provider's own (wrong) step: its trace fails.
            assert_eq!(o.trace, TraceVerdict::Fail);
            assert_eq!(o.bond_burned, 0);
            assert_eq!(
                before - chain.c.state().accounts[&provider.public()].balance,
                o.rewards_paid,
                "fee left and bond refunded"
            );
        }
        chain.assert_supply_conserved();
    }
}

/// Finding 2: a provider that keeps a seat's key from it cannot get it slashed as a
/// no-show. The contract knows which seats got their keys in time; a starved seat is
/// paid `R` from the provider's escrow and keeps its reputation, while a seat that got its
/// keys and stayed away is still slashed.
#[test]
fn a_seat_starved_of_its_keys_is_not_slashed_and_the_provider_pays_it() {
    let params = Params {
        penalty: 950,
        ..always_slash()
    };
    let reward = params.reward;
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 5), (Tier::Human, 11)]);
    let provider = key("provider");
    let before = chain.c.state().accounts[&provider.public()].balance;
    // Two segments, the second citing the first; seat 0 of segment 1 never gets that
    // segment's key, seat 1 of segment 1 gets its keys and stays away.
    let m = manifest(
        vec![
            segment(0, Tier::Computer, vec![]),
            segment(1, Tier::Computer, vec![0]),
        ],
        3,
        2,
    );
    let provider_id = provider.public();
    let sid = Tx::session_id(&provider_id, chain.c.nonce(&provider_id));
    let ids: Vec<Hash> = m.segments.iter().map(|g| g.id).collect();
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let ev = chain.block();
    let seats = seats_of(&ev, 1, 0);
    let (starved, absent) = (seats[0], seats[1]);
    let mut delivered = Vec::new();
    for s in 0..2u16 {
        for seat in seats_of(&ev, s, 0) {
            for seg in std::iter::once(s).chain((s == 1).then_some(0)) {
                // A seat on both segments takes segment 0's key once.
                let again = delivered
                    .iter()
                    .any(|k: &SeatKey| k.segment == seg && k.seat == seat);
                if again || (seat == starved && s == 1 && seg == 1) {
                    continue;
                }
                delivered.push(SeatKey {
                    segment: seg,
                    seat,
                    sealed: SealedKey {
                        ephemeral: SealingPublicKey([4; 32]),
                        ciphertext: vec![0; 48],
                    },
                });
            }
        }
    }
    chain.submit(
        &provider,
        Call::DeliverKeys {
            session: sid,
            keys: delivered,
        },
    );
    let vsalt = Salt([7; 32]);
    let voters: Vec<(u16, AccountId)> = (0..2u16)
        .flat_map(|s| seats_of(&ev, s, 0).into_iter().map(move |a| (s, a)))
        .filter(|(s, a)| !(*s == 1 && (*a == starved || *a == absent)))
        .collect();
    for (s, seat) in &voters {
        chain.submit(
            find(&keys, seat),
            Call::Commit {
                session: sid,
                segment: *s,
                commitment: commitment(
                    &sid,
                    &ids[usize::from(*s)],
                    seat,
                    Vote::Valid,
                    &vsalt,
                    &why(Vote::Valid),
                ),
            },
        );
    }
    chain.block();
    let s = &chain.c.state().sessions[&sid];
    let seat_of = |a: AccountId| s.segments[1].seats.iter().find(|x| x.account == a).unwrap();
    assert!(!seat_of(starved).keyed(1), "its segment's key is missing");
    assert!(seat_of(absent).keyed(1));
    while matches!(chain.c.state().sessions[&sid].phase, Phase::Commit { .. }) {
        chain.block();
    }
    for (s, seat) in &voters {
        chain.submit(
            find(&keys, seat),
            Call::Reveal {
                session: sid,
                segment: *s,
                vote: Vote::Valid,
                salt: vsalt,
                reason: why(Vote::Valid),
            },
        );
    }
    let mut ev = chain.block();
    while chain.c.state().sessions.contains_key(&sid) {
        chain.reveal_mapping_when_due(&provider, sid);
        ev.extend(chain.block());
    }
    let slashed: Vec<AccountId> = ev
        .iter()
        .filter_map(|e| match e {
            Event::Slashed { seat, .. } => Some(*seat),
            _ => None,
        })
        .collect();
    assert_eq!(slashed, vec![absent], "only the keyed no-show is slashed");
    assert!(ev.iter().any(|e| matches!(e,
        Event::SeatStarved { seat, segment: 1, paid, .. } if *seat == starved && *paid == reward)));
    // Starved on segment 1, it lost nothing there (its judgement of segment 0 is scored
    // as any judgement).
    let au = &chain.c.state().auditors[&starved];
    assert!(au.reputation >= test_params().initial_reputation);
    assert_eq!((au.disagreed, au.slashed), (0, 0));
    // Paid for segment 1 as starved, and for segment 0 if its judgement there was among
    // the first k (which seats those are depends on the draw).
    let counted_on_0 = chain.c.state().appealable[&sid].segments[0]
        .seats
        .iter()
        .any(|x| x.account == starved && x.counted);
    assert_eq!(
        chain.c.state().accounts[&starved].balance,
        1_010 - 1_000 + reward + if counted_on_0 { reward } else { 0 }
    );
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!((o.starved_seats, o.starved_paid), (1, reward));
    assert_eq!(
        before - chain.c.state().accounts[&provider_id].balance,
        o.rewards_paid + reward,
        "the provider paid for the seat it starved"
    );
    chain.assert_supply_conserved();
}

/// A key sent in the last block of the commit window leaves its seat no block to commit
/// in: it is not on record, and the seat counts as starved.
#[test]
fn a_key_delivered_in_the_last_block_of_the_commit_window_does_not_count() {
    let (mut chain, _keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(
        &provider,
        Call::OpenSession(manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0)),
    );
    chain.block();
    chain.block();
    let Phase::Commit { until, .. } = chain.c.state().sessions[&sid].phase else {
        panic!("seats drawn");
    };
    while chain.height + 1 < until {
        chain.block();
    }
    deliver_keys(&mut chain, &provider, sid, 0, &[]);
    let ev = chain.block();
    assert!(ev.iter().any(|e| matches!(e, Event::KeyDelivered { .. })));
    assert!(
        chain.c.state().sessions[&sid].segments[0]
            .seats
            .iter()
            .all(|x| x.keys == 0),
        "delivered at the window's last height: not in time"
    );
}

/// Finding 4: registration bonds at least the tier minimum in the same transaction, and
/// a refused registration changes nothing.
#[test]
fn registration_bonds_at_least_the_tier_minimum_or_is_refused() {
    let (mut chain, _keys) = Chain::new(test_params(), &[(Tier::Computer, 1)]);
    let newcomer = key("provider-b");
    let register = |stake| Call::RegisterAuditor {
        tier: Tier::Llm,
        expertise: vec![],
        sealing_key: SealingPublicKey([3; 32]),
        stake,
    };
    let root = chain.c.state_root();
    assert_eq!(
        chain.try_apply(&newcomer, register(99)),
        Err(TxError::InsufficientStake {
            have: 99,
            need: 100
        })
    );
    assert!(matches!(
        chain.try_apply(&newcomer, register(0)),
        Err(TxError::Format(_))
    ));
    assert!(matches!(
        chain.try_apply(&newcomer, register(2_000_000)),
        Err(TxError::InsufficientBalance { .. })
    ));
    assert_eq!(
        chain.c.state_root(),
        root,
        "refused registrations change nothing"
    );
    assert!(!chain.c.state().auditors.contains_key(&newcomer.public()));
    chain.submit(&newcomer, register(100));
    let ev = chain.block();
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::Bonded { amount: 100, .. }))
    );
    let acct = &chain.c.state().accounts[&newcomer.public()];
    assert_eq!((acct.balance, acct.stake), (1_000_000 - 100, 100));
    // Drawn only after its warm-up (issue 53, finding 8): a registration in the block
    // whose seed its proposer knows cannot be drawn by that seed, nor by the next.
    let delay = chain.c.state().params.expertise_delay;
    for _ in 1..delay {
        assert!(
            !chain
                .c
                .state()
                .eligible(Tier::Llm)
                .contains(&newcomer.public()),
            "drawable during its warm-up"
        );
        chain.block();
    }
    chain.block();
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Llm)
            .contains(&newcomer.public())
    );
    // A genesis auditor bonds like any other.
    let bad = Genesis {
        params: test_params(),
        accounts: vec![GenesisAccount {
            id: newcomer.public(),
            balance: 1_000,
            stake: 99,
        }],
        auditors: vec![trust_contracts::GenesisAuditor {
            id: newcomer.public(),
            tier: Tier::Computer,
            expertise: vec![],
            sealing_key: SealingPublicKey([3; 32]),
        }],
    };
    assert!(matches!(
        Contract::new(&bad),
        Err(trust_contracts::GenesisError::UnderStakedAuditor(_))
    ));
}

/// Draws read the per-tier index of eligible auditors: one that unbonded below the
/// minimum leaves it once the unbond counts in draws (after `expertise_delay`) and is never
/// drawn, bonding back returns it (after the delay too), and a session that needs more
/// seats than the index holds is refused naming how many are eligible.
#[test]
fn only_eligible_auditors_are_indexed_and_drawn() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5)]);
    let out = keys[0].public();
    let delay = chain.c.state().params.expertise_delay;
    assert_eq!(chain.c.state().eligible(Tier::Computer).len(), 5);
    chain.submit(&keys[0], Call::Unbond { amount: 950 });
    chain.block();
    assert!(
        chain.c.state().eligible(Tier::Computer).contains(&out),
        "an unbond leaves the draws only after the delay"
    );
    for _ in 0..delay {
        chain.block();
    }
    let index = chain.c.state().eligible(Tier::Computer).clone();
    assert_eq!(index.len(), 4);
    assert!(!index.contains(&out));
    assert!(
        chain.c.state().auditors[&out].active,
        "registered and active, but not bonded enough"
    );
    let provider = key("provider");
    for n in 0..8u8 {
        chain.submit(
            &provider,
            Call::OpenSession(manifest(vec![segment(n, Tier::Computer, vec![])], 4, 0)),
        );
        chain.block();
        let seats = seats_of(&chain.block(), 0, 0);
        assert_eq!(seats.len(), 4);
        assert!(!seats.contains(&out));
    }
    let refused = chain.try_apply(
        &provider,
        Call::OpenSession(manifest(vec![segment(50, Tier::Computer, vec![])], 5, 0)),
    );
    assert!(matches!(
        refused,
        Err(TxError::TierUnstaffed {
            tier: Tier::Computer,
            needed: 5,
            eligible: 4,
            domain: None,
        })
    ));
    chain.submit(
        &provider,
        Call::Transfer {
            to: out,
            amount: 950,
        },
    );
    chain.submit(&keys[0], Call::Bond { amount: 950 });
    chain.block();
    assert!(!chain.c.state().eligible(Tier::Computer).contains(&out));
    for _ in 0..delay {
        chain.block();
    }
    assert!(chain.c.state().eligible(Tier::Computer).contains(&out));
    // The index is derived state: a restore rebuilds the same one.
    let restored = Contract::from_snapshot(&chain.c.snapshot()).unwrap();
    assert_eq!(restored.state().eligible, chain.c.state().eligible);
}

/// Finding 9, and finding 7 of issue 39: the drawing block's seed is its proposer's VRF
/// output over the parent's seed, so whatever transactions or time that proposer puts in
/// the block, and whatever the parent block holds, the same seats are drawn; only another
/// proposer (a later round) or another parent seed draws others.
#[test]
fn seats_do_not_depend_on_the_transactions_of_the_drawing_block() {
    use trust_protocol::block::{BlockHeader, prove_seed, txs_root};
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 20)]);
    let provider = key("provider");
    let segs = (0..6).map(|i| segment(i, Tier::Computer, vec![])).collect();
    chain.submit(&provider, Call::OpenSession(manifest(segs, 5, 0)));
    chain.submit(
        &provider,
        Call::Transfer {
            to: keys[3].public(),
            amount: 5_000,
        },
    );
    chain.block();
    let h = chain.height + 1;
    let net = Hash::sha256(b"chain");
    let header = |parent: (&[u8], &[u8]), proposer: &str, txs: &[Vec<u8>]| {
        let (prev, parent_seed) = parent;
        let k = key(proposer);
        BlockHeader {
            chain: net,
            height: h,
            prev_hash: Hash::sha256(prev),
            // The proposer picks the time too; blocks of other contents get other times here.
            time_ms: 1_000 + txs.len() as u64,
            txs_root: txs_root(txs),
            state_root: Hash::ZERO,
            proposer: k.public(),
            vrf: prove_seed(&k, &net, h, &Hash::sha256(parent_seed)).unwrap(),
        }
    };
    let draw = |header: BlockHeader, extra: Option<(&Keypair, Call)>| {
        let mut c = chain.c.clone();
        let ctx = BlockCtx {
            height: h,
            block_hash: header.seed(),
        };
        let mut ev = c.begin_block(&ctx);
        if let Some((k, call)) = extra {
            let tx = Signed::sign(
                k,
                &trust_protocol::Hash::ZERO,
                Tx {
                    nonce: c.nonce(&k.public()),
                    call,
                },
            );
            c.apply(&ctx, &tx).unwrap();
        }
        ev.extend(c.end_block(&ctx));
        (0..6).map(|s| seats_of(&ev, s, 0)).collect::<Vec<_>>()
    };
    let parent = (&b"block h-1"[..], &b"seed of block h-1"[..]);
    let plain = draw(header(parent, "v0", &[]), None);
    assert_eq!(plain.iter().map(Vec::len).sum::<usize>(), 30);
    let pay = Call::Transfer {
        to: keys[1].public(),
        amount: 1,
    };
    let ground = draw(
        header(
            parent,
            "v0",
            &[b"any tx".to_vec(), b"in any order".to_vec()],
        ),
        Some((&keys[0], pay)),
    );
    assert_eq!(plain, ground, "the proposer's transactions moved the seats");
    // Not even a bond that would change the stakes the draw weighs: the seats are drawn
    // before the block's transactions.
    let bond = draw(
        header(parent, "v0", &[b"a bond".to_vec()]),
        Some((&keys[3], Call::Bond { amount: 5_000 })),
    );
    assert_eq!(
        plain, bond,
        "a transaction of the drawing block moved the seats"
    );
    // Another block h-1 with the same seed (other contents, time or hash): same seats.
    let regrown = draw(
        header((b"another block h-1", b"seed of block h-1"), "v0", &[]),
        None,
    );
    assert_eq!(
        plain, regrown,
        "the parent block's contents moved the seats"
    );
    let other = draw(header((b"block h-1", b"another seed"), "v0", &[]), None);
    assert_ne!(plain, other, "the seed must depend on the parent's seed");
    // What is left: a round change hands the block to another proposer, whose VRF gives
    // another seed (at the price of a round timeout).
    let next_round = draw(header(parent, "v1", &[]), None);
    assert_ne!(plain, next_round);
}

/// The salt of test honeypot `i`'s commitment.
fn honeypot_salt(i: u16) -> Salt {
    Salt([60 + i as u8; 32])
}

/// Test honeypot `i`'s known verdict: segment 3 is a known-correct step, the others
/// known errors.
fn honeypot_truth(i: u16) -> Vote {
    if i == 3 { Vote::Valid } else { Vote::Invalid }
}

/// The opening of test honeypot `i` (with its true verdict).
fn true_opening(i: u16) -> HoneypotOpening {
    opening(i, honeypot_truth(i), Difficulty::Obvious, honeypot_salt(i))
}

/// The test honeypots `segments` of session `sid` opened as one set.
fn openings(sid: Hash, segments: &[u16]) -> Call {
    open_set(sid, segments.iter().map(|&i| true_opening(i)).collect())
}

/// A session of four Computer segments, the last three honeypots committed as the set
/// {1, 2, 3} (segment 2 rests on honeypot 1), every seat voting each honeypot's truth and
/// Valid on segment 0, run to its disclosure. Returns the session id.
fn disclosing_honeypots(chain: &mut Chain, keys: &[Keypair]) -> Hash {
    batch_honeypot_session(chain, keys, true)
}

/// [`disclosing_honeypots`], stopped in the reveal window (nothing revealed) unless
/// `to_disclosure`.
fn batch_honeypot_session(chain: &mut Chain, keys: &[Keypair], to_disclosure: bool) -> Hash {
    let truth = |s: u16, _| {
        Some(if s == 0 {
            Vote::Valid
        } else {
            honeypot_truth(s)
        })
    };
    let (sid, plan) = honeypot_session_voting(chain, keys, &truth);
    if !to_disclosure {
        return sid;
    }
    reveal_votes(chain, sid, &plan);
    chain.block();
    assert!(matches!(chain.phase(&sid), Some(Phase::Disclose { .. })));
    sid
}

/// The session of [`disclosing_honeypots`], its seats committing `votes(segment, seat)`,
/// stopped in the reveal window with nothing revealed. Returns it and what was committed.
fn honeypot_session_voting(
    chain: &mut Chain,
    keys: &[Keypair],
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> (Hash, Vec<crate::common::Planned>) {
    let provider = key("provider");
    let mut segs: Vec<SegmentEntry> = vec![
        segment(0, Tier::Computer, vec![]),
        segment(1, Tier::Computer, vec![]),
        segment(2, Tier::Computer, vec![1]),
        segment(3, Tier::Computer, vec![]),
    ];
    for (i, g) in segs.iter_mut().enumerate().skip(1) {
        let i = i as u16;
        g.honeypot = Some(honeypot_commitment(
            &g.id,
            honeypot_truth(i),
            Difficulty::Obvious,
            &honeypot_salt(i),
        ));
    }
    let m = with_honeypot_set(manifest(segs, 3, 0), &[1, 2, 3]);
    let ids: Vec<Hash> = m.segments.iter().map(|g| g.id).collect();
    let sid = Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(&provider, Call::OpenSession(m));
    chain.block();
    let drawn = chain.block();
    deliver_keys(chain, &provider, sid, 0, &[]);
    let plan = commit_votes(chain, keys, sid, &ids, &drawn, 0, votes);
    chain.block();
    assert!(matches!(chain.phase(&sid), Some(Phase::Reveal { .. })));
    (sid, plan)
}

/// The honeypot set opens in the block of the first round's last reveal, right after it,
/// and the session is decided in that block: but only once no seat is left to vote on it.
/// Before every committed seat has revealed, the set waits (a seat still to reveal would
/// learn which segments were planted and could withhold a wrong vote on one); with a
/// segment undecided (an escalation will draw seats that must not know the set), it waits
/// too, and once the escalation begins the set sent early is dropped from the pool
/// (`expired`), its mapping with it, so that it holds back none of its provider's later
/// transactions. `settles_with` tells the provider's node the same from pooled reveals.
#[test]
fn a_honeypot_set_opens_with_the_last_reveal_once_no_seat_is_left_to_vote() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 12)]);
    let provider = key("provider");
    let truth = |s: u16, _| {
        Some(if s == 0 {
            Vote::Valid
        } else {
            honeypot_truth(s)
        })
    };
    let (sid, plan) = honeypot_session_voting(&mut chain, &keys, &truth);
    let reveal = |p: &crate::common::Planned| Call::Reveal {
        session: sid,
        segment: p.1,
        vote: p.2,
        salt: crate::common::VOTE_SALT,
        reason: why(p.2),
    };
    let (first, last) = plan.split_at(plan.len() - 1);
    reveal_votes(&mut chain, sid, first);
    chain.block();
    assert!(matches!(
        chain.phase(&sid),
        Some(Phase::Reveal { round: 0, .. })
    ));
    assert!(
        matches!(
            chain.try_apply(&provider, openings(sid, &[1, 2, 3])),
            Err(TxError::WrongPhase(_))
        ),
        "one seat is still to reveal"
    );
    let s = chain.c.state().sessions[&sid].clone();
    assert!(!trust_contracts::settles_with(&s, &sid, []));
    let pooled: Vec<(AccountId, Call)> = last.iter().map(|p| (p.0.public(), reveal(p))).collect();
    assert!(trust_contracts::settles_with(
        &s,
        &sid,
        pooled.iter().map(|(a, c)| (*a, c))
    ));
    // A reveal that does not open its commitment settles nothing.
    let mut forged = pooled.clone();
    if let Call::Reveal { vote, reason, .. } = &mut forged[0].1 {
        *vote = if *vote == Vote::Valid {
            Vote::Invalid
        } else {
            Vote::Valid
        };
        *reason = why(*vote);
    }
    assert!(!trust_contracts::settles_with(
        &s,
        &sid,
        forged.iter().map(|(a, c)| (*a, c))
    ));
    // The last reveal, then the set and the mapping, in one block: decided there.
    reveal_votes(&mut chain, sid, last);
    chain.submit(&provider, openings(sid, &[1, 2, 3]));
    chain.reveal_mapping(&provider, sid);
    let ev = chain.block();
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::HoneypotRevealed { .. }))
    );
    assert!(
        ev.iter()
            .any(|e| matches!(e, Event::TraceDecided { session, .. } if *session == sid))
    );
    let o = chain
        .c
        .outcome(&sid)
        .expect("decided in the block of the last reveal");
    assert!(!o.honeypots_forfeited);
    assert!(o.segments.iter().skip(1).all(|g| g.honeypot.is_some()));

    // Segment 0 split 1-1 with an abstention: every seat revealed, but it is undecided.
    let split = |s: u16, j: usize| {
        Some(match (s, j) {
            (0, 0) => Vote::Valid,
            (0, 1) => Vote::Invalid,
            (0, _) => Vote::Abstain,
            _ => honeypot_truth(s),
        })
    };
    let (sid, plan) = honeypot_session_voting(&mut chain, &keys, &split);
    reveal_votes(&mut chain, sid, &plan);
    let s = chain.c.state().sessions[&sid].clone();
    let pooled: Vec<(AccountId, Call)> = plan
        .iter()
        .map(|p| {
            (
                p.0.public(),
                Call::Reveal {
                    session: sid,
                    segment: p.1,
                    vote: p.2,
                    salt: crate::common::VOTE_SALT,
                    reason: why(p.2),
                },
            )
        })
        .collect();
    assert!(
        !trust_contracts::settles_with(&s, &sid, pooled.iter().map(|(a, c)| (*a, c))),
        "an undecided segment escalates"
    );
    // The contract says the same with every reveal applied, in their block.
    let cx = ctx(chain.height + 1);
    let mut trial = chain.c.clone();
    trial.begin_block(&cx);
    for tx in &chain.pending {
        trial.apply(&cx, tx).unwrap();
    }
    let p = provider.public();
    let early = Signed::sign(
        &provider,
        &Hash::ZERO,
        Tx {
            nonce: trial.nonce(&p),
            call: openings(sid, &[1, 2, 3]),
        },
    );
    assert!(matches!(
        trial.apply(&cx, &early),
        Err(TxError::WrongPhase(_))
    ));
    chain.block();
    assert!(
        matches!(chain.phase(&sid), Some(Phase::Commit { round: 1, .. })),
        "escalated: {:?}",
        chain.phase(&sid)
    );
    for call in [
        openings(sid, &[1, 2, 3]),
        Call::RevealMapping {
            session: sid,
            mapping: Hash::sha256(b"map"),
            salt: Salt([9; 32]),
        },
    ] {
        assert!(
            trust_contracts::expired(chain.c.state(), &p, &call).is_some(),
            "dropped once the escalation began: {call:?}"
        );
    }
}

/// A second chain from `chain`'s state, as if another node had followed it.
fn fork(chain: &Chain) -> Chain {
    Chain {
        c: chain.c.clone(),
        height: chain.height,
        pending: Vec::new(),
        supply_check: chain.supply_check,
    }
}

/// A provider opens its committed honeypot set in one `RevealHoneypots`, in whatever
/// order it lists it (honeypot 2 rests on honeypot 1: both are in the set): the same
/// state either way, every honeypot opened with its event, the state root naming every
/// entry the opening touched, and the tally scoring the seats on each.
#[test]
fn a_honeypot_set_opens_whole_in_any_order() {
    let (mut forward, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let provider = key("provider");
    let sid = disclosing_honeypots(&mut forward, &keys);
    let mut backward = fork(&forward);
    let opened = |ev: &[Event]| -> Vec<(u16, Vote)> {
        ev.iter()
            .filter_map(|e| match e {
                Event::HoneypotRevealed {
                    session,
                    segment,
                    verdict,
                } if *session == sid => Some((*segment, *verdict)),
                _ => None,
            })
            .collect()
    };
    forward.submit(&provider, openings(sid, &[1, 2, 3]));
    backward.submit(&provider, openings(sid, &[3, 2, 1]));
    let ev = forward.block();
    assert_eq!(opened(&ev), [1, 2, 3].map(|i| (i, honeypot_truth(i))));
    backward.block();
    assert_eq!(forward.c.state(), backward.c.state());
    assert_eq!(
        forward.c.state_root(),
        Contract::from_state(forward.c.state().clone()).state_root(),
        "the opening touched the entries it changed"
    );
    // Opened twice: refused.
    assert_eq!(
        forward.try_apply(&provider, openings(sid, &[1, 2, 3])),
        Err(TxError::AlreadyDisclosed)
    );
    forward.reveal_mapping(&provider, sid);
    forward.block();
    let o = forward.c.outcome(&sid).expect("decided");
    let truths: Vec<Option<Vote>> = o.segments.iter().map(|g| g.honeypot).collect();
    assert_eq!(
        truths,
        [
            None,
            Some(Vote::Invalid),
            Some(Vote::Invalid),
            Some(Vote::Valid)
        ]
    );
    assert!(!o.honeypots_forfeited);
    let seen: u32 = keys
        .iter()
        .map(|k| {
            let h = &forward.c.state().auditors[&k.public()].honeypots;
            h.errors_seen.iter().sum::<u32>() + h.correct_seen
        })
        .sum();
    assert_eq!(seen, 3 * 3, "three seats on each of three honeypots");
    forward.assert_supply_conserved();
}

/// Opening a honeypot set is all or nothing, and only the committed set opens: one bad
/// salt refuses the whole call (nothing changes, nonce included); a subset, a superset or
/// the empty set is not the committed set; only the provider opens it, never before the
/// disclosure (the votes must be public first); malformed calls (a segment twice, an
/// abstaining verdict) are refused as malformed.
#[test]
fn a_honeypot_set_opening_is_all_or_nothing() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 6)]);
    let provider = key("provider");
    let p = provider.public();
    let early = batch_honeypot_session(&mut chain, &keys, false);
    assert!(matches!(
        chain.try_apply(&provider, openings(early, &[3, 2, 1])),
        Err(TxError::WrongPhase(_))
    ));
    let sid = disclosing_honeypots(&mut chain, &keys);
    let (root, nonce) = (chain.c.state_root(), chain.c.nonce(&p));
    let mut bad = openings(sid, &[1, 2, 3]);
    if let Call::RevealHoneypots { openings, .. } = &mut bad {
        openings[2].salt = Salt([0; 32]);
    }
    assert_eq!(
        chain.try_apply(&provider, bad),
        Err(TxError::CommitmentMismatch)
    );
    for set in [&[1u16, 2][..], &[0, 1, 2, 3], &[]] {
        assert_eq!(
            chain.try_apply(&provider, openings(sid, set)),
            Err(TxError::HoneypotSetMismatch),
            "{set:?}"
        );
    }
    assert_eq!(
        chain.try_apply(&keys[0], openings(sid, &[1, 2, 3])),
        Err(TxError::NotProvider)
    );
    let malformed = |e| Err(TxError::Format(e));
    assert_eq!(
        chain.try_apply(&provider, openings(sid, &[3, 3])),
        malformed(trust_protocol::tx::TxFormatError::RepeatedSegment(3))
    );
    let mut abstaining = openings(sid, &[1, 2, 3]);
    if let Call::RevealHoneypots { openings, .. } = &mut abstaining {
        openings[1].verdict = Vote::Abstain;
    }
    assert_eq!(
        chain.try_apply(&provider, abstaining),
        malformed(trust_protocol::tx::TxFormatError::AbstainingHoneypot)
    );
    assert_eq!(chain.c.state_root(), root);
    assert_eq!(chain.c.nonce(&p), nonce);
    let s = &chain.c.state().sessions[&sid];
    assert!(!s.honeypots_opened);
    assert!(s.segments.iter().all(|g| g.honeypot.is_none()));
}

/// Seats drawn by `open`ing one single-segment session of `k` Computer seats.
fn draw_one(chain: &mut Chain, n: u8, k: u8) -> Vec<AccountId> {
    let provider = key("provider");
    chain.submit(
        &provider,
        Call::OpenSession(manifest(vec![segment(n, Tier::Computer, vec![])], k, 0)),
    );
    chain.block();
    seats_of(&chain.block(), 0, 0)
}

/// `Pause` takes an auditor out of the draws and out of every pool count, but only
/// `expertise_delay` blocks after it is asked (longer than any draw seed is known), and a
/// change once asked cannot be taken back before it happens: neither a second pause nor a
/// resume is accepted while it is pending. `Resume` brings it back under the same rule.
#[test]
fn a_pause_counts_only_after_the_delay_cannot_be_taken_back_and_keeps_the_auditor_out_of_every_pool()
 {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 5)]);
    let delay = chain.c.state().params.expertise_delay;
    let me = keys[0].public();
    let asked_at = chain.height + 1;
    let ev = chain.try_apply(&keys[0], Call::Pause).unwrap();
    assert!(ev.iter().any(|e| matches!(e,
        Event::PauseAsked { account, paused: true, at } if *account == me && *at == asked_at + delay)));
    // Pending: still drawn, and nothing can change it now.
    assert_eq!(
        chain.try_apply(&keys[0], Call::Resume),
        Err(TxError::PausePending {
            paused: true,
            at: asked_at + delay
        })
    );
    assert!(matches!(
        chain.try_apply(&keys[0], Call::Pause),
        Err(TxError::PausePending { .. })
    ));
    chain.block();
    assert!(chain.c.state().eligible(Tier::Computer).contains(&me));
    while chain.height + 1 < asked_at + delay {
        chain.block();
        assert!(chain.c.state().eligible(Tier::Computer).contains(&me));
    }
    let ev = chain.block();
    assert!(ev.iter().any(|e| matches!(e,
        Event::PauseChanged { account, paused: true } if *account == me)));
    let st = chain.c.state();
    assert!(st.auditors[&me].paused);
    assert!(!st.eligible(Tier::Computer).contains(&me));
    assert_eq!(st.accounts[&me].stake, 1_000, "a pause unbonds nothing");
    // Not drawn, and not counted: a session needing all five is refused as unstaffable.
    for n in 0..4u8 {
        let seats = draw_one(&mut chain, n, 4);
        assert_eq!(seats.len(), 4);
        assert!(!seats.contains(&me), "a paused auditor was drawn");
    }
    let five = manifest(vec![segment(9, Tier::Computer, vec![])], 5, 0);
    assert!(matches!(
        chain.try_apply(&key("provider"), Call::OpenSession(five)),
        Err(TxError::TierUnstaffed { eligible: 4, .. })
    ));
    assert_eq!(
        chain.try_apply(&keys[0], Call::Pause),
        Err(TxError::PauseUnchanged { paused: true })
    );
    // Resume: the same delay.
    let resumed_at = chain.height + 1 + delay;
    chain.submit(&keys[0], Call::Resume);
    chain.block();
    assert!(!chain.c.state().eligible(Tier::Computer).contains(&me));
    while chain.height + 1 < resumed_at {
        chain.block();
    }
    let ev = chain.block();
    assert!(ev.iter().any(|e| matches!(e,
        Event::PauseChanged { account, paused: false } if *account == me)));
    assert!(chain.c.state().eligible(Tier::Computer).contains(&me));
    assert_eq!(draw_one(&mut chain, 20, 5).len(), 5);
    assert_eq!(
        chain.try_apply(&keys[0], Call::Resume),
        Err(TxError::PauseUnchanged { paused: false })
    );
    // Only an auditor that is staying may pause.
    assert_eq!(
        chain.try_apply(&key("provider"), Call::Pause),
        Err(TxError::NotAnAuditor)
    );
    chain.submit(&keys[1], Call::Exit);
    chain.block();
    assert_eq!(
        chain.try_apply(&keys[1], Call::Pause),
        Err(TxError::AlreadyExiting)
    );
    chain.assert_supply_conserved();
}

/// A seat held when its auditor's pause takes effect stays its duty: a no-show on it is
/// slashed from the paused stake.
#[test]
fn a_paused_auditor_still_owes_the_seats_it_holds() {
    let params = Params {
        penalty: 950,
        max_session_loss: 950,
        expertise_delay: 2,
        ..always_slash()
    };
    let (mut chain, keys) = Chain::new(params, &[(Tier::Computer, 4), (Tier::Human, 9)]);
    let mut pauser = None;
    let (_, ev) = run_session_with(
        &mut chain,
        &keys,
        manifest(vec![segment(0, Tier::Computer, vec![])], 3, 1),
        |_, j| (j != 0).then_some(Vote::Valid),
        |_, _| false,
        |chain, _, ev| {
            let seat = seats_of(ev, 0, 0)[0];
            chain.submit(find(&keys, &seat), Call::Pause);
            pauser = Some(seat);
        },
    );
    let pauser = pauser.unwrap();
    let changed = ev.iter().position(|e| {
        matches!(e,
        Event::PauseChanged { account, paused: true } if *account == pauser)
    });
    let slashed = ev.iter().position(|e| {
        matches!(e,
        Event::Slashed { seat, reason: SlashReason::NoShow, amount: 950, .. } if *seat == pauser)
    });
    assert!(
        changed.is_some() && slashed.is_some() && changed < slashed,
        "paused while seated, then slashed for the no-show: {changed:?} {slashed:?}"
    );
    assert!(chain.c.state().auditors[&pauser].paused);
    assert_eq!(chain.c.state().accounts[&pauser].stake, 50);
    chain.assert_supply_conserved();
}

/// A pending expertise declaration cannot be replaced before it counts: replacing it
/// would cancel it at once, so a proposer that knows the next seed could choose, inside
/// the delay, whether its domains change for a draw it has seen.
#[test]
fn a_pending_expertise_declaration_cannot_be_replaced_before_it_counts() {
    let (mut chain, keys) = Chain::new(test_params(), &[(Tier::Computer, 3)]);
    let delay = chain.c.state().params.expertise_delay;
    let me = keys[0].public();
    let declare = |d: &str| Call::DeclareExpertise {
        expertise: vec![d.into()],
    };
    let at = chain.height + 1 + delay;
    chain.submit(&keys[0], declare("medicine"));
    chain.block();
    assert_eq!(
        chain.try_apply(&keys[0], declare("law")),
        Err(TxError::ExpertisePending(at))
    );
    while chain.height < at {
        chain.block();
    }
    assert_eq!(
        chain.c.state().auditors[&me].expertise,
        vec!["medicine".to_string()]
    );
    // Once it counts, the next one is accepted.
    assert!(chain.try_apply(&keys[0], declare("law")).is_ok());
}
