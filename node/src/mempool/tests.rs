//! The mempool's admission, eviction and proposal rules, on a real contract state.

use trust_contracts::{Genesis, GenesisAccount, GenesisAuditor, Params};
use trust_protocol::{
    Hash, Keypair, Signed,
    tx::{Call, Tx},
};

use super::*;
use crate::chain::{Tip, build_block};

/// Three Computer auditors at genesis: enough to staff the sessions these tests open
/// (`OpenSession` is refused when a routed tier cannot fill its seats).
fn staff() -> (Vec<GenesisAccount>, Vec<GenesisAuditor>) {
    (0..3u8)
        .map(|i| {
            let id = Keypair::from_label(&format!("staff-{i}")).public();
            let account = GenesisAccount {
                id,
                balance: 0,
                stake: 1_000,
            };
            let auditor = GenesisAuditor {
                id,
                tier: trust_protocol::tx::Tier::Computer,
                expertise: vec!["math".into()],
                sealing_key: trust_protocol::seal::SealingSecret::from_bytes([i; 32]).public(),
            };
            (account, auditor)
        })
        .unzip()
}

fn setup() -> (Contract, Keypair, Keypair) {
    let a = Keypair::from_label("a");
    let b = Keypair::from_label("b");
    let (staff, auditors) = staff();
    let accounts = [&a, &b]
        .iter()
        .map(|k| GenesisAccount {
            id: k.public(),
            balance: 1_000,
            stake: 0,
        })
        .chain(staff)
        .collect();
    let c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors,
    })
    .unwrap();
    (c, a, b)
}

fn pay(k: &Keypair, to: &Keypair, nonce: u64) -> SignedTx {
    Signed::sign(
        k,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce,
            call: Call::Transfer {
                to: to.public(),
                amount: 1,
            },
        },
    )
}

#[test]
fn admission_rules() {
    let (c, a, b) = setup();
    let mut m = Mempool::new(100);
    m.insert(pay(&a, &b, 0), &c).unwrap();
    assert_eq!(m.insert(pay(&a, &b, 0), &c), Err(MempoolError::Duplicate));
    // The sender's second signature for a nonce replaces its first.
    let first = pay(&a, &b, 0).id();
    let mut other = pay(&a, &b, 0);
    other.body.call = Call::Transfer {
        to: a.public(),
        amount: 2,
    };
    let other = Signed::sign(&a, &trust_protocol::Hash::ZERO, other.body);
    assert_eq!(m.insert(other.clone(), &c), Ok(Some(first)));
    assert!(m.contains(&other.id()) && !m.contains(&first));
    assert!(matches!(
        m.insert(pay(&a, &b, MAX_NONCE_AHEAD + 1), &c),
        Err(MempoolError::TooFarAhead { .. })
    ));
    let mut forged = pay(&b, &a, 0);
    forged.body.nonce = 1;
    assert_eq!(m.insert(forged, &c), Err(MempoolError::BadSignature));
    let zero = Signed::sign(
        &b,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::Transfer {
                to: a.public(),
                amount: 0,
            },
        },
    );
    assert!(matches!(m.insert(zero, &c), Err(MempoolError::Format(_))));
    assert_eq!(m.len(), 1);
}

#[test]
fn candidates_follow_nonces_and_pruning_drops_included() {
    let (c, a, b) = setup();
    let mut m = Mempool::new(100);
    for n in [2, 0, 1, 5] {
        m.insert(pay(&a, &b, n), &c).unwrap();
    }
    m.insert(pay(&b, &a, 0), &c).unwrap();
    let cand = m.candidates(&c, 100);
    let nonces: Vec<(AccountId, u64)> = cand.iter().map(|t| (t.signer, t.body.nonce)).collect();
    // Senders take turns, the one whose oldest transaction came first leading.
    assert_eq!(
        nonces,
        vec![
            (a.public(), 0),
            (b.public(), 0),
            (a.public(), 1),
            (a.public(), 2),
        ]
    );
    let tip = Tip::genesis(Hash::ZERO);
    let (_, done, dropped) = build_block(&c, &tip, &a, 0, &cand).unwrap();
    assert!(dropped.is_empty());
    assert_eq!(m.prune(&done.contract), 4);
    assert_eq!(m.len(), 1, "nonce 5 waits for 3 and 4");
    assert!(m.candidates(&done.contract, 100).is_empty());
    assert!(matches!(
        m.insert(pay(&a, &b, 1), &done.contract),
        Err(MempoolError::Stale { got: 1, next: 3 })
    ));
}

/// A seat's commitment pooled in its window expires when the window closes: every
/// node prunes it after that block, and a node refuses it from then on. A reveal
/// waits while the commit window is open and expires once it has closed without a
/// commitment; everything expires with the session.
#[test]
fn session_calls_expire_as_phases_pass_and_leave_the_pool() {
    use trust_contracts::{BlockCtx, GenesisAuditor, Phase};
    use trust_protocol::{
        Salt, Vote,
        seal::SealingSecret,
        tx::{QuorumParams, SegmentEntry, SessionManifest, Tier},
        units::Ppm,
    };

    let provider = Keypair::from_label("provider");
    let seats: Vec<Keypair> = (0..4)
        .map(|i| Keypair::from_label(&format!("seat{i}")))
        .collect();
    let mut accounts = vec![GenesisAccount {
        id: provider.public(),
        balance: 1_000_000,
        stake: 0,
    }];
    accounts.extend(seats.iter().map(|k| GenesisAccount {
        id: k.public(),
        balance: 10,
        stake: 1_000,
    }));
    let mut c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors: seats
            .iter()
            .enumerate()
            .map(|(i, k)| GenesisAuditor {
                id: k.public(),
                tier: Tier::Computer,
                expertise: vec!["math".into()],
                sealing_key: SealingSecret::from_bytes([u8::try_from(i).unwrap() + 1; 32]).public(),
            })
            .collect(),
    })
    .unwrap();
    let id = Hash::of_parts("segment", &[]);
    let mut manifest = SessionManifest {
        segments: vec![SegmentEntry {
            conclusion: true,
            ..SegmentEntry::plain(id, Tier::Computer)
        }],
        mapping_commitment: Hash::of_parts("mapping", &[]),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(800_000),
        },
        fee: 0,
        domain: "math".into(),
        left_out: vec![],
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &trust_protocol::Salt([0; 32])),
    };
    manifest.fee = trust_contracts::minimum_fee(&Params::default(), &manifest).unwrap() * 2;
    let session = Tx::session_id(&provider.public(), 0);
    let mut height = 0;
    let mut block = |c: &mut Contract, txs: &[SignedTx]| {
        height += 1;
        let ctx = BlockCtx {
            height,
            block_hash: Hash::of_parts("block", &[&height.to_le_bytes()]),
        };
        c.begin_block(&ctx);
        for tx in txs {
            c.apply(&ctx, tx).unwrap();
        }
        c.end_block(&ctx);
    };
    let open = Signed::sign(
        &provider,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::OpenSession(manifest),
        },
    );
    block(&mut c, &[open]);
    block(&mut c, &[]);
    let s = &c.state().sessions[&session];
    assert!(
        matches!(s.phase, Phase::Commit { round: 0, .. }),
        "{:?}",
        s.phase
    );
    let seat = s.segments[0].seats[0].account;
    let key = seats.iter().find(|k| k.public() == seat).unwrap();
    let commit = Signed::sign(
        key,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::Commit {
                session,
                segment: 0,
                commitment: Hash::of_parts("c", &[]),
            },
        },
    );
    let reveal = Call::Reveal {
        session,
        segment: 0,
        vote: Vote::Valid,
        salt: Salt([0; 32]),
        reason: String::new(),
    };
    assert_eq!(expired(c.state(), &seat, &commit.body.call), None);
    assert_eq!(expired(c.state(), &seat, &reveal), None, "a reveal waits");
    // A batch of votes lives while one of its entries does, and fits while one does.
    let batch = Call::batch(vec![
        Call::Commit {
            session,
            segment: 7,
            commitment: Hash::of_parts("c7", &[]),
        },
        commit.body.call.clone(),
    ])
    .unwrap();
    let none_left = Call::batch(vec![
        Call::Commit {
            session,
            segment: 7,
            commitment: Hash::of_parts("c7", &[]),
        },
        Call::Commit {
            session,
            segment: 8,
            commitment: Hash::of_parts("c8", &[]),
        },
    ])
    .unwrap();
    assert_eq!(expired(c.state(), &seat, &batch), None);
    assert_eq!(
        expired(c.state(), &seat, &none_left),
        Some("the session has no such segment")
    );
    // It fits only if every entry names a segment where its sender sits (the contract
    // refuses it whole otherwise): segment 7 does not exist, so this batch never fits,
    // while its seat's own commit alone does.
    assert!(matches!(
        crate::mempool::unfit(c.state(), &seat, &batch),
        Err(MempoolError::Refused(TxError::BatchNotSeated {
            segment: 7,
            ..
        }))
    ));
    assert_eq!(
        crate::mempool::unfit(c.state(), &seat, &commit.body.call),
        Ok(())
    );
    assert!(matches!(
        crate::mempool::unfit(c.state(), &provider.public(), &batch),
        Err(MempoolError::Refused(TxError::BatchNotSeated { .. }))
    ));
    // A honeypot set opening is live while the session is and its set is closed, fit
    // from its provider only.
    let honeypots = Call::RevealHoneypots {
        session,
        openings: [0u16, 1]
            .into_iter()
            .map(|segment| trust_protocol::tx::HoneypotOpening {
                segment,
                verdict: Vote::Invalid,
                difficulty: trust_protocol::tx::Difficulty::Obvious,
                salt: Salt([1; 32]),
            })
            .collect(),
        set_salt: Salt([2; 32]),
    };
    assert_eq!(expired(c.state(), &provider.public(), &honeypots), None);
    assert_eq!(
        crate::mempool::unfit(c.state(), &provider.public(), &honeypots),
        Ok(())
    );
    assert_eq!(
        crate::mempool::unfit(c.state(), &seat, &honeypots),
        Err(MempoolError::Unfit(
            "the sender is not the session's provider"
        ))
    );
    let mut m = Mempool::new(10);
    m.insert(commit.clone(), &c).unwrap();
    while matches!(c.state().sessions[&session].phase, Phase::Commit { .. }) {
        block(&mut c, &[]);
    }
    assert_eq!(
        expired(c.state(), &seat, &commit.body.call),
        Some("the commit window closed")
    );
    assert_eq!(
        expired(c.state(), &seat, &batch),
        Some("the session has no such segment"),
        "every entry expired: the batch does, with its first entry's reason"
    );
    assert_eq!(
        expired(c.state(), &seat, &reveal),
        Some("the seat never committed")
    );
    assert_eq!(m.prune(&c), 1);
    assert!(m.is_empty());
    assert_eq!(
        m.insert(commit.clone(), &c),
        Err(MempoolError::Expired("the commit window closed"))
    );
    while c.state().sessions.contains_key(&session) {
        block(&mut c, &[]);
    }
    assert_eq!(
        expired(c.state(), &seat, &commit.body.call),
        Some("the session is no longer live")
    );
    assert_eq!(
        expired(c.state(), &provider.public(), &honeypots),
        Some("the session is no longer live")
    );
}

/// A full pool evicts from the sender holding the most, from its highest nonce, and
/// refuses a newcomer that would itself be what goes.
#[test]
fn a_full_pool_evicts_from_the_largest_holder_top_down() {
    let (c, a, b) = setup();
    let mut m = Mempool::new(4);
    for n in 0..3 {
        m.insert(pay(&a, &b, n), &c).unwrap();
    }
    m.insert(pay(&b, &a, 0), &c).unwrap();
    let evicted = m.insert(pay(&b, &a, 1), &c).unwrap();
    assert_eq!(evicted, Some(pay(&a, &b, 2).id()), "a held three of four");
    assert_eq!(m.len(), 4);
    assert!(m.contains(&pay(&a, &b, 1).id()), "a keeps its front");
    // a and b now hold two each: a third from b would be what goes.
    assert_eq!(
        m.insert(pay(&b, &a, 2), &c),
        Err(MempoolError::Full(
            "its sender holds the largest share of a full pool"
        ))
    );
    // A sender filling a hole below what it holds evicts its own top to make room.
    let mut m = Mempool::new(3);
    m.insert(pay(&b, &a, 1), &c).unwrap();
    m.insert(pay(&b, &a, 2), &c).unwrap();
    m.insert(pay(&a, &b, 0), &c).unwrap();
    assert_eq!(m.insert(pay(&b, &a, 0), &c), Ok(Some(pay(&b, &a, 2).id())));
    assert_eq!(m.candidates(&c, 10).len(), 3);
}

/// A contract where `funded` hold `balance` each (and nothing else exists).
fn funded(keys: &[&Keypair], balance: u64) -> Contract {
    let (staff, auditors) = staff();
    Contract::new(&Genesis {
        params: Params::default(),
        accounts: keys
            .iter()
            .map(|k| GenesisAccount {
                id: k.public(),
                balance,
                stake: 0,
            })
            .chain(staff)
            .collect(),
        auditors,
    })
    .unwrap()
}

fn tip() -> Tip {
    Tip::genesis(Hash::ZERO)
}

fn transfer(k: &Keypair, to: AccountId, amount: u64, nonce: u64) -> SignedTx {
    Signed::sign(
        k,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce,
            call: Call::Transfer { to, amount },
        },
    )
}

/// The finding: a few fresh keys each send 513 unpayable transfers (their whole nonce
/// window). None is admitted, so the pool holds none of their bytes and the honest
/// sender's transactions are in the next proposal, and in its block.
#[test]
fn unpayable_spam_from_fresh_keys_is_refused_and_honest_transactions_are_proposed() {
    let honest = Keypair::from_label("honest");
    let bob = Keypair::from_label("bob").public();
    let c = funded(&[&honest], 1_000);
    let mut m = Mempool::new(10_000);
    let attackers: Vec<Keypair> = (0..4)
        .map(|i| Keypair::from_label(&format!("fresh{i}")))
        .collect();
    let (mut offered, mut offered_bytes) = (0usize, 0usize);
    for k in &attackers {
        for n in 0..=MAX_NONCE_AHEAD {
            let tx = transfer(k, bob, 1, n);
            offered_bytes += encoding::encode(&tx).len();
            offered += 1;
            assert!(matches!(
                m.insert(tx, &c),
                Err(MempoolError::Unaffordable { have: 0, .. })
            ));
        }
    }
    assert_eq!(offered, 4 * 513);
    // A transfer is 148 bytes: 296 KiB offered.
    assert_eq!(offered_bytes, 4 * 513 * 148);
    assert_eq!(
        (m.len(), m.bytes()),
        (0, 0),
        "nothing of the attack is pooled"
    );

    let mine: Vec<SignedTx> = (0..3).map(|n| transfer(&honest, bob, 10, n)).collect();
    for tx in &mine {
        m.insert(tx.clone(), &c).unwrap();
    }
    let cands = m.candidates(&c, MAX_CANDIDATES);
    assert_eq!(cands, mine);
    let (block, _, dropped) = build_block(&c, &tip(), &honest, 0, &cands).unwrap();
    assert!(dropped.is_empty());
    assert_eq!(block.txs.len(), 3);
}

/// An honest key and four keys named `name0..3`, each holding `balance`, and a pool in
/// which the four filled their nonce windows with transfers of 1 to a sink.
fn four_full_windows(
    name: &str,
    balance: u64,
) -> (Keypair, Vec<Keypair>, AccountId, Contract, Mempool) {
    let honest = Keypair::from_label("honest");
    // The sink has an account already: a transfer creating one would also pay its fee.
    let sink_key = Keypair::from_label("sink");
    let sink = sink_key.public();
    let four: Vec<Keypair> = (0..4)
        .map(|i| Keypair::from_label(&format!("{name}{i}")))
        .collect();
    let mut keys: Vec<&Keypair> = four.iter().collect();
    keys.push(&honest);
    keys.push(&sink_key);
    let c = funded(&keys, balance);
    let mut m = Mempool::new(10_000);
    for k in &four {
        for n in 0..=MAX_NONCE_AHEAD {
            m.insert(transfer(k, sink, 1, n), &c).unwrap();
        }
    }
    (honest, four, sink, c, m)
}

/// Senders that could pay when their transactions were pooled, then spent elsewhere what
/// they had promised (a second signature for their first nonce, included by another
/// proposer): the block that includes it prunes everything they can no longer pay for,
/// and each is charged a failure.
#[test]
fn senders_that_spend_elsewhere_lose_their_pooled_transactions() {
    let (honest, attackers, sink, c, mut m) = four_full_windows("spender", 513);
    for k in &attackers {
        // The 514th unit is not there.
        assert!(matches!(
            m.insert(transfer(k, sink, 2, 0), &c),
            Err(MempoolError::Unaffordable { .. })
        ));
    }
    let spam_bytes = m.bytes();
    assert_eq!(spam_bytes, 4 * 513 * 148);
    assert_eq!(m.len(), 4 * 513);
    // Elsewhere, each attacker's nonce 0 went to a version that sends everything away.
    let elsewhere: Vec<SignedTx> = attackers
        .iter()
        .map(|k| transfer(k, sink, 513, 0))
        .collect();
    let (_, done, dropped) = build_block(&c, &tip(), &honest, 0, &elsewhere).unwrap();
    assert!(dropped.is_empty());
    assert_eq!(m.prune(&done.contract), 4 * 513);
    assert_eq!((m.len(), m.bytes()), (0, 0), "{spam_bytes} bytes freed");
    for k in &attackers {
        assert_eq!(m.failures_of(&k.public()), 1);
    }
    m.insert(transfer(&honest, sink, 1, 0), &done.contract)
        .unwrap();
    assert_eq!(m.candidates(&done.contract, MAX_CANDIDATES).len(), 1);
}

/// Four senders with 513 payable transactions each and one honest sender who came last:
/// the proposal takes at most [`MAX_CANDIDATES_PER_SENDER`] from each, one sender at a
/// time, so the honest transactions are in it, near the front.
#[test]
fn proposals_interleave_senders_and_cap_each() {
    let (honest, busy, sink, c, mut m) = four_full_windows("busy", 1_000_000);
    let mine: Vec<SignedTx> = (0..5).map(|n| transfer(&honest, sink, 1, n)).collect();
    for tx in &mine {
        m.insert(tx.clone(), &c).unwrap();
    }
    let cands = m.candidates(&c, MAX_CANDIDATES);
    assert_eq!(cands.len(), MAX_CANDIDATES);
    for k in &busy {
        let n = cands.iter().filter(|t| t.signer == k.public()).count();
        assert!(n <= MAX_CANDIDATES_PER_SENDER, "{n}");
    }
    let at: Vec<usize> = mine
        .iter()
        .map(|t| cands.iter().position(|c| c == t).expect("honest proposed"))
        .collect();
    // Round i of the interleaving holds each sender's i-th transaction.
    assert_eq!(at, vec![4, 9, 14, 19, 24]);
}

/// A sender whose transactions keep failing when tried loses them, proposes after
/// everyone else, and may pool only a few; once one of its transactions applies, its
/// record halves.
#[test]
fn failing_senders_are_evicted_and_deprioritised() {
    let (c, a, b) = setup();
    let mut m = Mempool::new(1_000);
    // a's transactions came first, and fail three times when tried.
    for n in 0..3 {
        let tx = pay(&a, &b, n);
        m.insert(tx.clone(), &c).unwrap();
        assert!(m.failed(&tx.id()));
        assert!(!m.contains(&tx.id()));
    }
    assert!(!m.failed(&pay(&a, &b, 0).id()), "not pooled any more");
    assert!(m.deprioritised(&a.public()));
    for n in 0..DEPRIORITISED_POOL as u64 {
        m.insert(pay(&a, &b, n), &c).unwrap();
    }
    assert!(matches!(
        m.insert(pay(&a, &b, 100), &c),
        Err(MempoolError::Full(_))
    ));
    m.insert(pay(&b, &a, 0), &c).unwrap();
    let cands = m.candidates(&c, 100);
    assert_eq!(
        cands.first(),
        Some(&pay(&b, &a, 0)),
        "b first though a came first"
    );
    assert_eq!(cands.len(), 1 + DEPRIORITISED_POOL);
    let (_, done, dropped) = build_block(&c, &tip(), &a, 0, &cands).unwrap();
    assert!(dropped.is_empty());
    m.prune(&done.contract);
    assert_eq!(m.failures_of(&a.public()), 1, "3 halved");
    assert!(!m.deprioritised(&a.public()));
}

/// A provider's session with `segments` segments (about 100 bytes each: a large
/// transaction) and `fee` (0: the contract's minimum).
fn session_with_fee(k: &Keypair, nonce: u64, segments: usize, fee: u64) -> SignedTx {
    use trust_protocol::{
        tx::{QuorumParams, SegmentEntry, SessionManifest, Tier},
        units::Ppm,
    };
    let manifest = SessionManifest {
        segments: (0..segments)
            .map(|i| {
                let id = Hash::of_parts("segment", &[&i.to_le_bytes(), &nonce.to_le_bytes()]);
                SegmentEntry {
                    conclusion: i + 1 == segments,
                    ..SegmentEntry::plain(id, Tier::Computer)
                }
            })
            .collect(),
        mapping_commitment: Hash::of_parts("mapping", &[]),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(800_000),
        },
        fee,
        domain: "math".into(),
        left_out: vec![],
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &trust_protocol::Salt([0; 32])),
    };
    let mut manifest = manifest;
    if fee == 0 {
        manifest.fee = trust_contracts::minimum_fee(&Params::default(), &manifest).unwrap();
    }
    manifest.validate().unwrap();
    Signed::sign(
        k,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce,
            call: Call::OpenSession(manifest),
        },
    )
}

/// [`session_with_fee`] with a fee of 1 (the pool does not check the contract's minimum).
fn session(k: &Keypair, nonce: u64, segments: usize) -> SignedTx {
    session_with_fee(k, nonce, segments, 1)
}

/// The pool never holds more than its byte bound: a sender flooding it with large
/// transactions is refused once it holds it all, and another sender's transactions take
/// its newest places until the two share the pool.
#[test]
fn the_byte_bound_holds_and_the_largest_holder_pays_for_it() {
    // Funded for every session's honeypot bond: the bound here is bytes, not balance.
    let (_, a, b) = setup();
    let c = funded(&[&a, &b], 100_000_000);
    let max_bytes = 1024 * 1024;
    let mut m = Mempool::with_limits(10_000, max_bytes);
    let big = session(&a, 0, 1000);
    let size = encoding::encode(&big).len();
    assert!(size > 90_000, "{size}");
    let mut refused = 0;
    for n in 0..40 {
        match m.insert(session(&a, n, 1000), &c) {
            Ok(_) => {}
            Err(MempoolError::Full(_)) => refused += 1,
            Err(e) => panic!("{e}"),
        }
        assert!(m.bytes() <= max_bytes);
    }
    let held = (max_bytes / size) as u64;
    assert_eq!(m.pending_from(&a.public()), held);
    assert_eq!(refused, 40 - held as usize);
    // Another sender's large transaction takes a's newest place: a holds the most.
    assert_eq!(
        m.insert(session(&b, 0, 1000), &c),
        Ok(Some(session(&a, held - 1, 1000).id()))
    );
    for n in 1..40 {
        let _ = m.insert(session(&b, n, 1000), &c);
        assert!(m.bytes() <= max_bytes);
    }
    // They end up sharing the pool.
    let (ours, theirs) = (m.pending_from(&a.public()), m.pending_from(&b.public()));
    assert!(ours.abs_diff(theirs) <= 1, "{ours} and {theirs}");
    assert_eq!(ours + theirs, held);
}

/// What the zero-cost calls need: a seat for a vote, the provider for a key delivery, a
/// released unbonding for a withdrawal, something to bond for a registration, and stake
/// for an unbonding; seats not drawn yet is "not yet", not a fault.
#[test]
fn calls_that_cost_nothing_need_the_standing_they_act_on() {
    let (c, a, b) = setup();
    let nobody = Keypair::from_label("nobody");
    let sign = |k: &Keypair, call: Call| {
        Signed::sign(k, &trust_protocol::Hash::ZERO, Tx { nonce: 0, call })
    };
    let mut m = Mempool::new(10);
    assert!(matches!(
        m.insert(sign(&a, Call::Withdraw), &c),
        Err(MempoolError::Refused(TxError::NothingToWithdraw))
    ));
    assert!(matches!(
        m.insert(sign(&a, Call::Unbond { amount: 1 }), &c),
        Err(MempoolError::Unaffordable { what: "stake", .. })
    ));
    let register = |stake| Call::RegisterAuditor {
        tier: trust_protocol::tx::Tier::Computer,
        expertise: vec!["math".into()],
        sealing_key: trust_protocol::seal::SealingSecret::from_bytes([1; 32]).public(),
        stake,
    };
    let min = c
        .state()
        .params
        .min_stake(trust_protocol::tx::Tier::Computer);
    // The stake is bonded in the registration: the sender must hold it, and at least the
    // tier's minimum.
    assert!(matches!(
        m.insert(sign(&nobody, register(min)), &c),
        Err(MempoolError::Unaffordable {
            what: "balance",
            ..
        })
    ));
    assert!(matches!(
        m.insert(sign(&b, register(min - 1)), &c),
        Err(MempoolError::Unfit(
            "a registration bonds at least the tier's minimum stake"
        ))
    ));
    m.insert(sign(&b, register(min)), &c).unwrap();
    // A session opened by a provider, whose seats are not drawn yet.
    let provider = Keypair::from_label("provider");
    let mut c2 = funded(&[&provider], 1_000_000);
    let open = session_with_fee(&provider, 0, 1, 0);
    let ctx = trust_contracts::BlockCtx {
        height: 1,
        block_hash: Hash::ZERO,
    };
    c2.apply(&ctx, &open).unwrap();
    let sid = Tx::session_id(&provider.public(), 0);
    let commit = Call::Commit {
        session: sid,
        segment: 0,
        commitment: Hash::ZERO,
    };
    assert!(matches!(
        m.insert(sign(&nobody, commit), &c2),
        Err(MempoolError::NotYet(_))
    ));
    let deliver = Call::DeliverKeys {
        session: sid,
        keys: vec![],
    };
    assert!(matches!(
        m.insert(sign(&nobody, deliver.clone()), &c2),
        Err(MempoolError::Unfit(
            "the sender is not the session's provider"
        ))
    ));
    assert_eq!(
        unfit(c2.state(), &provider.public(), &deliver),
        Ok(()),
        "the provider may"
    );
    // A batch of commits naming a session whose seats are not drawn on this state waits
    // for the block that draws them, as a single commit does: its sender may be a seat a
    // block ahead of this node (a drawn session's batch from a sender without a seat is
    // refused whole, above).
    let batch = Call::Commits {
        session: sid,
        entries: (0..2)
            .map(|i| trust_protocol::tx::CommitEntry {
                segment: u16::from(i),
                commitment: Hash::sha256(&[i]),
            })
            .collect(),
    };
    let got = m.insert(sign(&nobody, batch), &c2);
    assert_eq!(got, Err(MempoolError::NotYet("seats are not drawn yet")));
}

/// A bad-key report costs nothing to send, so it is checked in full before it is pooled:
/// a seat's true report fits; one by a seat of another segment does not fit, one whose
/// proof fails is refused for good, one naming keys not on record may fit once more keys
/// land; a proven seat's second report and any report after voting expire.
#[test]
fn bad_key_reports_are_checked_before_they_are_pooled() {
    use trust_contracts::{BlockCtx, GenesisAuditor, Phase};
    use trust_protocol::{
        Salt,
        badkey::prove_bad_key,
        seal::{SealingSecret, key_context, seal_key},
        tx::{DeliveredKey, QuorumParams, SeatKey, SegmentEntry, SessionManifest, Tier},
        units::Ppm,
    };

    let provider = Keypair::from_label("provider");
    let seats: Vec<Keypair> = (0..4)
        .map(|i| Keypair::from_label(&format!("seat{i}")))
        .collect();
    let sealing = |i: usize| SealingSecret::from_bytes([u8::try_from(i).unwrap() + 1; 32]);
    let mut accounts = vec![GenesisAccount {
        id: provider.public(),
        balance: 1_000_000,
        stake: 0,
    }];
    accounts.extend(seats.iter().map(|k| GenesisAccount {
        id: k.public(),
        balance: 10,
        stake: 1_000,
    }));
    let mut c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors: seats
            .iter()
            .enumerate()
            .map(|(i, k)| GenesisAuditor {
                id: k.public(),
                tier: Tier::Computer,
                expertise: vec!["math".into()],
                sealing_key: sealing(i).public(),
            })
            .collect(),
    })
    .unwrap();
    let id = Hash::of_parts("segment", &[]);
    let mut manifest = SessionManifest {
        segments: vec![SegmentEntry {
            conclusion: true,
            ..SegmentEntry::plain(id, Tier::Computer)
        }],
        mapping_commitment: Hash::of_parts("mapping", &[]),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(800_000),
        },
        fee: 0,
        domain: "math".into(),
        left_out: vec![],
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &Salt([0; 32])),
    };
    manifest.fee = trust_contracts::minimum_fee(&Params::default(), &manifest).unwrap() * 2;
    let session = Tx::session_id(&provider.public(), 0);
    let mut height = 0;
    let mut block = |c: &mut Contract, txs: &[SignedTx]| {
        height += 1;
        let ctx = BlockCtx {
            height,
            block_hash: Hash::of_parts("block", &[&height.to_le_bytes()]),
        };
        c.begin_block(&ctx);
        for tx in txs {
            c.apply(&ctx, tx).unwrap();
        }
        c.end_block(&ctx);
    };
    let sign = |k: &Keypair, nonce, call| Signed::sign(k, &Hash::ZERO, Tx { nonce, call });
    block(&mut c, &[sign(&provider, 0, Call::OpenSession(manifest))]);
    block(&mut c, &[]);
    let drawn: Vec<AccountId> = c.state().sessions[&session].segments[0]
        .seats
        .iter()
        .map(|x| x.account)
        .collect();
    let index = |a: &AccountId| seats.iter().position(|k| k.public() == *a).unwrap();
    let victim = drawn[0];
    let outsider = seats
        .iter()
        .map(|k| k.public())
        .find(|a| !drawn.contains(a))
        .unwrap();
    // Every seat is sent a sealed key; the victim's does not open.
    let ctx = |a: &AccountId| key_context(&session, &id, a);
    let keys: Vec<SeatKey> = drawn
        .iter()
        .map(|a| {
            let mut sealed =
                seal_key(&sealing(index(a)).public(), &[7; 32], [9; 32], &ctx(a)).unwrap();
            if *a == victim {
                sealed.ciphertext = vec![0xEE; 48];
            }
            SeatKey {
                segment: 0,
                seat: *a,
                sealed,
            }
        })
        .collect();
    let bad_box = keys[0].sealed.clone();
    block(
        &mut c,
        &[sign(&provider, 1, Call::DeliverKeys { session, keys })],
    );
    let (shared, proof) = prove_bad_key(&sealing(index(&victim)), &bad_box, &ctx(&victim)).unwrap();
    let report = |keys: Vec<DeliveredKey>, proof| Call::ReportBadKey {
        session,
        segment: 0,
        keys,
        bad: 0,
        shared,
        proof,
    };
    let on_record = vec![DeliveredKey {
        segment: 0,
        sealed: bad_box.clone(),
    }];
    let good = report(on_record.clone(), proof);
    assert_eq!(expired(c.state(), &victim, &good), None);
    assert_eq!(crate::mempool::unfit(c.state(), &victim, &good), Ok(()));
    assert_eq!(
        crate::mempool::unfit(c.state(), &outsider, &good),
        Err(MempoolError::Unfit(
            "the sender holds no seat on this segment in this round"
        ))
    );
    let mut forged = proof;
    forged.0[70] ^= 1;
    let e = crate::mempool::unfit(c.state(), &victim, &report(on_record.clone(), forged));
    let Err(MempoolError::Refused(e)) = e else {
        panic!("{e:?}");
    };
    assert!(matches!(e, TxError::BadKeyNotProven(_)), "{e}");
    assert!(refused_for_good(&e));
    let mut twice = on_record.clone();
    twice.push(DeliveredKey {
        segment: 1,
        sealed: bad_box.clone(),
    });
    assert_eq!(
        crate::mempool::unfit(c.state(), &victim, &report(twice, proof)),
        Err(MempoolError::NotYet(
            "the reported keys are not on record (yet)"
        ))
    );
    assert!(!refused_for_good(&TxError::KeysNotOnRecord));
    // Proven once: a second report expires.
    let victim_key = &seats[index(&victim)];
    block(&mut c, &[sign(victim_key, 0, good.clone())]);
    assert!(c.state().sessions[&session].segments[0].seats[0].bad_key);
    assert_eq!(
        expired(c.state(), &victim, &good),
        Some("the seat proved a bad key already")
    );
    let mut m = Mempool::new(10);
    assert_eq!(
        m.insert(sign(victim_key, 1, good.clone()), &c),
        Err(MempoolError::Expired("the seat proved a bad key already"))
    );
    while !matches!(
        c.state().sessions.get(&session).map(|s| s.phase),
        Some(Phase::Disclose { .. }) | None
    ) {
        block(&mut c, &[]);
    }
    let after_voting = expired(c.state(), &outsider, &good);
    assert!(
        matches!(
            after_voting,
            Some("voting ended" | "the session is no longer live")
        ),
        "{after_voting:?}"
    );
}

/// A provider whose balance covers its sessions' fees but not their honeypot bonds (or
/// an appellant whose balance covers one appeal's bond, not two) cannot fill the pool
/// with transactions the contract will refuse: the bonds are part of each sender's cost,
/// each transaction admitted on the balance its earlier ones left.
#[test]
fn bonds_count_in_a_senders_cost() {
    let (c, a, _) = setup();
    let params = &c.state().params;
    let fee = 100;
    let bond = trust_contracts::honeypot_bond(params, 4).unwrap();
    assert!(bond > 0, "sessions carry a honeypot bond");
    let balance = c.state().accounts.get(&a.public()).unwrap().balance;
    // Sessions whose fees alone fit the balance, with room to spare.
    let fit = balance / (fee + bond);
    assert!(fit >= 1 && balance / fee > fit, "{balance} {fee} {bond}");
    let mut m = Mempool::new(100);
    for n in 0..fit {
        m.insert(session_with_fee(&a, n, 4, fee), &c).unwrap();
    }
    match m.insert(session_with_fee(&a, fit, 4, fee), &c) {
        Err(MempoolError::Unaffordable {
            what: "balance", ..
        }) => {}
        other => panic!("a session whose bond the balance cannot escrow: {other:?}"),
    }
    assert_eq!(m.len(), usize::try_from(fit).unwrap());

    // Appeals: each escrows its bond per segment.
    let appeal = |nonce: u64, segments: Vec<u16>| {
        Signed::sign(
            &a,
            &trust_protocol::Hash::ZERO,
            Tx {
                nonce,
                call: Call::Appeal {
                    session: Hash::sha256(b"a decided session"),
                    segments,
                },
            },
        )
    };
    let per = params.appeal_bond;
    assert_eq!(
        Cost::of(&a.public(), &appeal(0, vec![0, 1, 2]).body.call, params),
        Cost {
            need_balance: 3 * per,
            take_balance: 3 * per,
            take_stake: 0,
        }
    );
    let open = session_with_fee(&a, 0, 4, fee);
    assert_eq!(
        Cost::of(&a.public(), &open.body.call, params).take_balance,
        fee + bond
    );
}
