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
use trust_protocol::{Hash, Keypair, encoding};

use super::{
    ConsensusMetrics,
    codec::{TrustCodec, WireCertificate, WireCommitSignature},
    context::{Address, BlockId, Height, PartInit, ProposalPart, Validator, ValidatorSet},
    driver::{Driver, validator_set},
    proposals::{StreamError, Streams, Undecided, stream_parts},
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
    let key = Keypair::from_label("validator");
    let genesis = Genesis {
        params: Params::default(),
        accounts: vec![GenesisAccount {
            id: key.public(),
            balance: 1_000,
            stake: 500,
        }],
        auditors: vec![],
    };
    let contract = Contract::new(&genesis).unwrap();
    let chain = Hash::sha256(b"consensus-test");
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    let ledger = Ledger::from_db(&db).unwrap();
    let tip = Tip {
        chain,
        height: 0,
        hash: Hash::ZERO,
    };
    let (view, watch) = ChainPublisher::new(ChainView::new(tip, contract.clone(), vec![]));
    // No mempool task runs: these tests never propose, and a pool whose task is gone
    // answers reaps with nothing.
    let (pool, _task) = Pool::new(10, watch);
    let (tx, _) = broadcast::channel(4);
    let driver = Driver::new(
        chain,
        Address::of(&key.public()),
        Some(AccountSigner::new(key.clone(), chain)),
        vec![key.public()],
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
    let id = StreamId::new(vec![1u8].into());
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
    let tip = Tip {
        chain: f.chain,
        height: 0,
        hash: Hash::ZERO,
    };
    let (mut block, _, _) = build_block(&f.contract, &tip, f.key.public(), &[]);
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
    let tip = Tip {
        chain: f.chain,
        height: 0,
        hash: Hash::ZERO,
    };
    let (block, _, _) = build_block(&f.contract, &tip, f.key.public(), &[]);
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
