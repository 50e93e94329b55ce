use std::sync::Arc;

use malachitebft_app::{
    engine::host::SyncedValueOutcome,
    streaming::{StreamId, StreamMessage},
    types::PeerId,
};
use malachitebft_core_types::{Round, Validity};
use malachitebft_engine::util::streaming::StreamContent;
use tokio::sync::broadcast;
use trust_contracts::{Contract, Genesis, GenesisAccount, Params};
use trust_protocol::{
    Hash, Keypair,
    block::{MAX_CLOCK_AHEAD_MS, prove_seed},
    encoding,
};

use super::{
    ConsensusMetrics,
    codec::{TrustCodec, WireCertificate, WireCommitSignature},
    context::{Address, BlockId, Height, PartInit, ProposalPart, Validator, ValidatorSet},
    driver::{Driver, validator_set},
    proposals::{
        MAX_STREAM_PARTS, MAX_STREAMS_PER_PEER, StreamError, Streams, Undecided, stream_id,
        stream_parts,
    },
    signing::AccountSigner,
};
use crate::{
    chain::{Tip, build_block},
    ledger::Ledger,
    mempool::Pool,
    view::{ChainPublisher, ChainView},
};

struct Fixture {
    driver: Driver,
    key: Keypair,
    chain: Hash,
    contract: Contract,
    _dir: tempfile::TempDir,
}

fn fixture() -> Fixture {
    fixture_of(&[Keypair::from_label("validator")])
}

/// A driver run by `validators[0]`, on a genesis where each of `validators` has stake 500.
fn fixture_of(validators: &[Keypair]) -> Fixture {
    let key = validators[0].clone();
    let genesis = Genesis {
        params: Params::default(),
        accounts: validators
            .iter()
            .map(|k| GenesisAccount {
                id: k.public(),
                balance: 1_000,
                stake: 500,
            })
            .collect(),
        auditors: vec![],
    };
    let contract = Contract::new(&genesis).unwrap();
    let chain = Hash::sha256(b"consensus-test");
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    let ledger = Ledger::from_db(&db).unwrap();
    let tip = Tip::genesis(chain);
    let (view, watch) = ChainPublisher::new(ChainView::new(tip, contract.clone(), vec![]));
    // No mempool task runs: these tests never propose, and a pool whose task is gone
    // answers reaps with nothing.
    let (pool, _task) = Pool::new(10, watch);
    let (tx, _) = broadcast::channel(4);
    let driver = Driver::new(
        chain,
        Address::of(&key.public()),
        Some(AccountSigner::new(key.clone(), chain)),
        validators.iter().map(|k| k.public()).collect(),
        view,
        pool,
        ledger,
        Undecided::open(&db).unwrap(),
        Default::default(),
        std::time::Duration::from_millis(10),
        10,
        Arc::new(ConsensusMetrics::default()),
        tx,
    );
    Fixture {
        driver,
        key,
        chain,
        contract,
        _dir: dir,
    }
}

fn stream(parts: Vec<ProposalPart>) -> Vec<StreamMessage<ProposalPart>> {
    stream_as(StreamId::new(vec![1u8].into()), parts)
}

fn stream_as(id: StreamId, parts: Vec<ProposalPart>) -> Vec<StreamMessage<ProposalPart>> {
    let mut out: Vec<_> = parts
        .into_iter()
        .enumerate()
        .map(|(i, p)| StreamMessage::new(id.clone(), i as u64, StreamContent::Data(p)))
        .collect();
    let n = out.len() as u64;
    out.push(StreamMessage::new(id, n, StreamContent::Fin));
    out
}

#[test]
fn a_malformed_synced_block_is_a_peer_fault_and_changes_nothing() {
    let mut f = fixture();
    let root = f.driver.view.current().state_root;
    let out = f
        .driver
        .synced_value(Height(1), Round::new(0), Address([9; 32]), b"\x01garbage");
    assert!(matches!(out, SyncedValueOutcome::PeerFault));
    assert_eq!(
        f.driver
            .metrics
            .sync_rejected
            .load(std::sync::atomic::Ordering::Relaxed),
        1
    );
    assert_eq!(f.driver.view.current().state_root, root);
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());

    // A well-formed block that does not execute (a forged state root) is Invalid, not stored.
    let tip = Tip::genesis(f.chain);
    let (mut block, _, _) = build_block(&f.contract, &tip, &f.key, 0, &[]).unwrap();
    block.header.state_root = Hash([7; 32]);
    let out = f.driver.synced_value(
        Height(1),
        Round::new(0),
        Address::of(&f.key.public()),
        &encoding::encode(&block),
    );
    match out {
        SyncedValueOutcome::Verdict(v) => assert_eq!(v.validity, Validity::Invalid),
        _ => panic!("expected a verdict"),
    }
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());
    assert_eq!(f.driver.view.current().state_root, root);
}

#[test]
fn proposal_streams_reassemble_out_of_order_and_refuse_forgeries() {
    let f = fixture();
    let tip = Tip::genesis(f.chain);
    let (block, _, _) = build_block(&f.contract, &tip, &f.key, 0, &[]).unwrap();
    let init = PartInit {
        height: Height(1),
        round: Round::new(0),
        pol_round: Round::Nil,
        proposer: Address::of(&f.key.public()),
    };
    let signer = AccountSigner::new(f.key.clone(), f.chain);
    let parts = stream_parts(&f.chain, init.clone(), &block, |d| signer.sign(d));
    let peer = PeerId::from_bytes(&libp2p::PeerId::random().to_bytes()).unwrap();

    // Reversed delivery still assembles to the same block.
    let mut streams = Streams::default();
    let mut msgs = stream(parts.clone());
    msgs.reverse();
    let mut done = None;
    for m in msgs {
        if let Some(r) = streams.insert(&f.chain, peer, m) {
            done = Some(r);
        }
    }
    let got = done.expect("complete").expect("valid");
    assert_eq!(got.block, block);

    // Signed by someone else: refused.
    let other = AccountSigner::new(Keypair::from_label("mallory"), f.chain);
    let forged = stream_parts(&f.chain, init.clone(), &block, |d| other.sign(d));
    let mut streams = Streams::default();
    let r = stream(forged)
        .into_iter()
        .find_map(|m| streams.insert(&f.chain, peer, m))
        .expect("complete");
    assert!(matches!(r, Err(StreamError::BadSignature(_))));

    // Signed for another chain: refused.
    let foreign = stream_parts(&Hash([3; 32]), init, &block, |d| signer.sign(d));
    let mut streams = Streams::default();
    let r = stream(foreign)
        .into_iter()
        .find_map(|m| streams.insert(&f.chain, peer, m))
        .expect("complete");
    assert!(matches!(r, Err(StreamError::BadSignature(_))));
}

#[test]
fn validator_power_is_bonded_stake_and_proposers_follow_power() {
    let f = fixture();
    let set = validator_set(
        &[f.key.public(), Keypair::from_label("b").public()],
        &f.contract,
    );
    // Only the staked validator votes.
    assert_eq!(set.validators().len(), 1);
    assert_eq!(set.validators()[0].voting_power, 500);

    let a = Address([1; 32]);
    let b = Address([2; 32]);
    let set = ValidatorSet::new(vec![
        Validator {
            address: a,
            voting_power: 3,
        },
        Validator {
            address: b,
            voting_power: 1,
        },
    ]);
    let mut a_count = 0;
    for h in 1..=400 {
        let p = super::context::proposer_of(&set, Height(h), Round::new(0)).unwrap();
        if p.address == a {
            a_count += 1;
        }
    }
    assert!((250..350).contains(&a_count), "a proposed {a_count} of 400");
}

/// Within a height, a later round never goes back to a validator that already proposed in
/// the current cycle of rounds: with one validator down, round 1 always has a live one.
#[test]
fn each_round_of_a_cycle_has_a_new_proposer() {
    let set = ValidatorSet::new(
        (1..=4u8)
            .map(|i| Validator {
                address: Address([i; 32]),
                voting_power: u64::from(i) * 10,
            })
            .collect(),
    );
    for h in 1..=200 {
        let cycle = |from: u32| -> Vec<Address> {
            (from..from + 4)
                .map(|r| {
                    super::context::proposer_of(&set, Height(h), Round::new(r))
                        .unwrap()
                        .address
                })
                .collect()
        };
        for from in [0, 4, 40] {
            let mut c = cycle(from);
            c.sort_by_key(|a| a.0);
            c.dedup();
            assert_eq!(c.len(), 4, "height {h}, rounds from {from}: {c:?}");
        }
    }
}

/// Timeouts follow the block time unless configured; at 1 s blocks the vote timeouts and
/// deltas are Malachite's own defaults.
#[test]
fn timeouts_follow_the_block_time() {
    use std::time::Duration;

    use super::{TimeoutConfig, timeouts};
    let ms = Duration::from_millis;
    let t = timeouts(ms(300), TimeoutConfig::default());
    assert_eq!(
        (t.propose, t.prevote, t.precommit, t.propose_delta),
        (ms(600), ms(300), ms(300), ms(150))
    );
    let t = timeouts(ms(1_000), TimeoutConfig::default());
    assert_eq!(
        (t.propose, t.prevote, t.precommit, t.propose_delta),
        (ms(2_000), ms(1_000), ms(1_000), ms(500))
    );
    let t = timeouts(
        ms(300),
        TimeoutConfig {
            propose: Some(ms(3_000)),
            vote: None,
            delta: Some(ms(10)),
        },
    );
    assert_eq!(
        (t.propose, t.prevote, t.prevote_delta),
        (ms(3_000), ms(300), ms(10))
    );
}

#[test]
fn certificates_round_trip_through_the_codec() {
    use malachitebft_app::types::codec::Codec;
    let cert = WireCertificate {
        height: Height(5),
        round: Round::new(1),
        value_id: BlockId([4; 32]),
        signatures: vec![WireCommitSignature {
            address: Address([1; 32]),
            signature: super::context::ConsensusSignature([2; 64]),
            extension: None,
        }],
    };
    let ext = cert.to_extended();
    assert_eq!(WireCertificate::from(&ext), cert);
    let c = TrustCodec;
    let bytes = Codec::<ProposalPart>::encode(&c, &ProposalPart::Data(vec![1, 2, 3])).unwrap();
    let back: ProposalPart = c.decode(bytes).unwrap();
    assert_eq!(back, ProposalPart::Data(vec![1, 2, 3]));
    let bad: Result<ProposalPart, _> = c.decode(vec![9u8, 9, 9].into());
    assert!(bad.is_err());
}

fn peer_of(k: &Keypair) -> PeerId {
    Address::of(&k.public()).peer_id().expect("an ed25519 key")
}

fn count(c: &std::sync::atomic::AtomicU64) -> u64 {
    c.load(std::sync::atomic::Ordering::Relaxed)
}

/// The first round of height 1 that `who` proposes.
fn round_of(f: &Fixture, who: &Keypair) -> Round {
    let set = validator_set(&f.driver.validators, &f.contract);
    (0..64)
        .map(Round::new)
        .find(|r| {
            super::context::proposer_of(&set, Height(1), *r).map(|v| v.address)
                == Some(Address::of(&who.public()))
        })
        .expect("a round of its own")
}

/// `key`'s proposal stream for height 1, `round`, claiming `proposer`, signed by `key`.
fn proposal_by(
    f: &Fixture,
    key: &Keypair,
    proposer: &Keypair,
    round: Round,
) -> Vec<StreamMessage<ProposalPart>> {
    let tip = Tip::genesis(f.chain);
    let (block, _, _) = build_block(&f.contract, &tip, proposer, 0, &[]).unwrap();
    let init = PartInit {
        height: Height(1),
        round,
        pol_round: Round::Nil,
        proposer: Address::of(&proposer.public()),
    };
    let signer = AccountSigner::new(key.clone(), f.chain);
    let parts = stream_parts(&f.chain, init, &block, |d| signer.sign(d));
    stream_as(stream_id(Height(1), round), parts)
}

/// Feeds a stream as published by `publisher`; the last outcome.
fn feed(
    f: &mut Fixture,
    publisher: &PeerId,
    msgs: Vec<StreamMessage<ProposalPart>>,
) -> Option<malachitebft_app::consensus::ProposedValue<super::context::TrustContext>> {
    let from = PeerId::from_bytes(&libp2p::PeerId::random().to_bytes()).unwrap();
    let mut last = None;
    for m in msgs {
        last = f.driver.received_part(from, Some(*publisher), m);
    }
    last
}

/// Finding 5: a proposal for a slot streamed by anyone but that slot's proposer (another
/// validator with its own signature, one claiming to be the proposer, a stranger) is
/// dropped part by part before anything is buffered or executed, and nothing is stored.
/// The proposer's own stream is executed and kept.
#[test]
fn proposals_from_anyone_but_the_slots_proposer_are_dropped_before_execution() {
    let (a, b) = (Keypair::from_label("val-a"), Keypair::from_label("val-b"));
    let stranger = Keypair::from_label("stranger");
    let mut f = fixture_of(&[a.clone(), b.clone()]);
    let slot = round_of(&f, &a);
    let m = f.driver.metrics.clone();

    // b proposes in a's slot under its own name, then under a's; a stranger does too.
    let forged = [
        (peer_of(&b), proposal_by(&f, &b, &b, slot)),
        (peer_of(&b), proposal_by(&f, &b, &a, slot)),
        (
            peer_of(&stranger),
            proposal_by(&f, &stranger, &stranger, slot),
        ),
    ];
    let mut parts = 0;
    for (publisher, msgs) in forged {
        parts += msgs.len() as u64;
        assert!(feed(&mut f, &publisher, msgs).is_none());
    }
    assert_eq!(count(&m.proposal_parts_refused), parts);
    assert_eq!(f.driver.streams_open(), 0, "nothing buffered");
    // Published under a's id (gossipsub would not let anyone but a) yet signed by b: the
    // Fin signature stops it, still before execution.
    let impostor = proposal_by(&f, &b, &a, slot);
    assert!(feed(&mut f, &peer_of(&a), impostor).is_none());
    assert_eq!(count(&m.proposals_rejected), 1);
    assert_eq!(count(&m.proposals_executed), 0);
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());

    // a's own proposal for its slot is executed and kept.
    let genuine = proposal_by(&f, &a, &a, slot);
    let v = feed(&mut f, &peer_of(&a), genuine).expect("complete");
    assert_eq!((v.validity, v.round), (Validity::Valid, slot));
    assert_eq!(count(&m.proposals_executed), 1);
    assert_eq!(f.driver.undecided.at_height(Height(1)).len(), 1);
}

/// The slot's proposer streaming a block that does not execute: answered invalid, not
/// stored.
#[test]
fn an_invalid_block_from_the_proposer_is_answered_and_not_stored() {
    let a = Keypair::from_label("val-a");
    let mut f = fixture_of(std::slice::from_ref(&a));
    let tip = Tip::genesis(f.chain);
    let (mut block, _, _) = build_block(&f.contract, &tip, &a, 0, &[]).unwrap();
    block.header.state_root = Hash([7; 32]);
    let init = PartInit {
        height: Height(1),
        round: Round::new(0),
        pol_round: Round::Nil,
        proposer: Address::of(&a.public()),
    };
    let signer = AccountSigner::new(a.clone(), f.chain);
    let msgs = stream_as(
        stream_id(Height(1), Round::new(0)),
        stream_parts(&f.chain, init, &block, |d| signer.sign(d)),
    );
    let v = feed(&mut f, &peer_of(&a), msgs).expect("answered");
    assert_eq!(v.validity, Validity::Invalid);
    assert_eq!(count(&f.driver.metrics.proposals_executed), 1);
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());
}

/// Seed grinding (issue 39, finding 7) at the vote: the slot's proposer streaming a block
/// whose seed proof is another validator's, or its own over another parent seed, is
/// answered invalid (before its transactions run) and not stored; the same block with its
/// own proof is valid. A synced block with a borrowed proof is refused the same way.
#[test]
fn a_proposal_whose_seed_proof_is_not_its_proposers_over_the_parent_seed_is_answered_invalid() {
    let a = Keypair::from_label("val-a");
    let b = Keypair::from_label("val-b");
    let mut f = fixture_of(std::slice::from_ref(&a));
    let tip = Tip::genesis(f.chain);
    let signer = AccountSigner::new(a.clone(), f.chain);
    let (block, _, _) = build_block(&f.contract, &tip, &a, 0, &[]).unwrap();
    let mut borrowed = block.clone();
    borrowed.header.vrf = prove_seed(&b, &f.chain, 1, &tip.seed).unwrap();
    let mut elsewhere = block.clone();
    elsewhere.header.vrf = prove_seed(&a, &f.chain, 1, &Hash([3; 32])).unwrap();
    for (round, bad) in [(0, &borrowed), (1, &elsewhere)] {
        let init = PartInit {
            height: Height(1),
            round: Round::new(round),
            pol_round: Round::Nil,
            proposer: Address::of(&a.public()),
        };
        let msgs = stream_as(
            stream_id(Height(1), Round::new(round)),
            stream_parts(&f.chain, init, bad, |d| signer.sign(d)),
        );
        let v = feed(&mut f, &peer_of(&a), msgs).expect("answered");
        assert_eq!(v.validity, Validity::Invalid, "round {round}");
        assert!(f.driver.undecided.at_height(Height(1)).is_empty());
    }
    let out = f.driver.synced_value(
        Height(1),
        Round::new(0),
        Address::of(&a.public()),
        &encoding::encode(&borrowed),
    );
    match out {
        SyncedValueOutcome::Verdict(v) => assert_eq!(v.validity, Validity::Invalid),
        _ => panic!("expected a verdict"),
    }
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());
    let init = PartInit {
        height: Height(1),
        round: Round::new(2),
        pol_round: Round::Nil,
        proposer: Address::of(&a.public()),
    };
    let msgs = stream_as(
        stream_id(Height(1), Round::new(2)),
        stream_parts(&f.chain, init, &block, |d| signer.sign(d)),
    );
    let v = feed(&mut f, &peer_of(&a), msgs).expect("answered");
    assert_eq!(v.validity, Validity::Valid);
    assert_eq!(f.driver.undecided.at_height(Height(1)).len(), 1);
}

/// The validator's half of the BFT time rule: the slot's proposer stamping its block more
/// than `MAX_CLOCK_AHEAD_MS` ahead of this node's clock gets a nil vote, unexecuted and not
/// stored; the same proposer stamping its clock gets a valid one.
#[test]
fn a_proposal_stamped_too_far_ahead_of_the_validators_clock_is_voted_nil_unexecuted() {
    let a = Keypair::from_label("val-a");
    let mut f = fixture_of(std::slice::from_ref(&a));
    let tip = Tip::genesis(f.chain);
    let signer = AccountSigner::new(a.clone(), f.chain);
    let init = PartInit {
        height: Height(1),
        round: Round::new(0),
        pol_round: Round::Nil,
        proposer: Address::of(&a.public()),
    };
    let ahead = crate::chain::now_ms() + MAX_CLOCK_AHEAD_MS + 60_000;
    let (block, _, _) = build_block(&f.contract, &tip, &a, ahead, &[]).unwrap();
    assert_eq!(block.header.time_ms, ahead);
    // It would execute: only its time is wrong.
    assert!(crate::chain::execute_block(&f.contract, &tip, &block).is_ok());
    let msgs = stream_as(
        stream_id(Height(1), Round::new(0)),
        stream_parts(&f.chain, init.clone(), &block, |d| signer.sign(d)),
    );
    let v = feed(&mut f, &peer_of(&a), msgs).expect("answered");
    assert_eq!(v.validity, Validity::Invalid);
    assert_eq!(count(&f.driver.metrics.proposals_executed), 0);
    assert_eq!(count(&f.driver.metrics.proposals_rejected), 1);
    assert!(f.driver.undecided.at_height(Height(1)).is_empty());

    let init = PartInit {
        round: Round::new(1),
        ..init
    };
    let (block, _, _) = build_block(&f.contract, &tip, &a, crate::chain::now_ms(), &[]).unwrap();
    let msgs = stream_as(
        stream_id(Height(1), Round::new(1)),
        stream_parts(&f.chain, init, &block, |d| signer.sign(d)),
    );
    let v = feed(&mut f, &peer_of(&a), msgs).expect("answered");
    assert_eq!(v.validity, Validity::Valid);
    assert_eq!(count(&f.driver.metrics.proposals_executed), 1);
}

/// A publisher cannot grow a stream's memory with tiny parts, repeated parts or many
/// streams: parts are counted with their overhead, sequence numbers are bounded, and each
/// publisher keeps a few streams open at most.
#[test]
fn streams_are_bounded_in_parts_bytes_and_per_publisher() {
    let chain = Hash::sha256(b"bounds");
    let peer = PeerId::from_bytes(&libp2p::PeerId::random().to_bytes()).unwrap();
    let id = stream_id(Height(1), Round::new(0));
    let tiny = |seq: u64| {
        StreamMessage::new(
            id.clone(),
            seq,
            StreamContent::Data(ProposalPart::Data(vec![0])),
        )
    };

    let mut streams = Streams::default();
    let outcomes: Vec<_> = (0..=MAX_STREAM_PARTS)
        .filter_map(|seq| streams.insert(&chain, peer, tiny(seq)))
        .collect();
    assert_eq!(outcomes.len(), 1);
    assert!(matches!(outcomes[0], Err(StreamError::TooManyParts)));
    assert!(streams.is_empty());

    // The same part sent over and over counts every time.
    let mut sent = 0u64;
    let r = loop {
        sent += 1;
        if let Some(r) = streams.insert(&chain, peer, tiny(1)) {
            break r;
        }
    };
    assert!(matches!(r, Err(StreamError::TooLarge)));
    assert!(
        sent <= (super::proposals::MAX_STREAM_BYTES / super::proposals::PART_OVERHEAD) as u64 + 1
    );

    for round in 0..10 {
        let msg = StreamMessage::new(
            stream_id(Height(1), Round::new(round)),
            0,
            StreamContent::Data(ProposalPart::Data(vec![0])),
        );
        assert!(streams.insert(&chain, peer, msg).is_none());
    }
    assert_eq!(streams.len(), MAX_STREAMS_PER_PEER);
}

/// The forger (test builds) streams, for a slot another validator proposes, a complete
/// proposal signed with its own key; an honest node drops every part of it unexecuted.
#[cfg(feature = "misbehave")]
#[test]
fn the_forger_streams_a_signed_proposal_for_a_slot_it_does_not_own() {
    let (a, b) = (Keypair::from_label("val-a"), Keypair::from_label("val-b"));
    let mut f = fixture_of(&[a.clone(), b.clone()]);
    let slot = round_of(&f, &a);
    let tip = Tip::genesis(f.chain);
    let forger = AccountSigner::new(b.clone(), f.chain);
    let (init, block, parts) =
        super::forge::forged(&f.chain, &forger, &f.contract, &tip, Height(1), slot).unwrap();
    assert_eq!((init.height, init.round), (Height(1), slot));
    assert_eq!(init.proposer, Address::of(&b.public()));
    assert_ne!(
        super::context::proposer_of(
            &validator_set(&f.driver.validators, &f.contract),
            Height(1),
            slot
        )
        .map(|v| v.address),
        Some(init.proposer),
        "the slot is someone else's"
    );
    // What it streams is a whole, correctly signed proposal of a block that executes.
    let msgs = stream_as(stream_id(Height(1), slot), parts);
    let mut streams = Streams::default();
    let assembled = msgs
        .clone()
        .into_iter()
        .find_map(|m| streams.insert(&f.chain, peer_of(&b), m))
        .expect("complete")
        .expect("well signed");
    assert_eq!(assembled.block, block);
    assert!(crate::chain::execute_block(&f.contract, &tip, &block).is_ok());
    // An honest node drops it.
    let n = msgs.len() as u64;
    assert!(feed(&mut f, &peer_of(&b), msgs).is_none());
    assert_eq!(count(&f.driver.metrics.proposal_parts_refused), n);
    assert_eq!(count(&f.driver.metrics.proposals_executed), 0);
}
