use trust_contracts::{Genesis, GenesisAccount, Params};
use trust_protocol::{
    Keypair, Signed,
    tx::{Call, Tx},
};

use super::*;

fn genesis() -> (Contract, Tip, Keypair, Keypair) {
    let a = Keypair::from_label("alice");
    let b = Keypair::from_label("bob");
    let g = Genesis {
        params: Params::default(),
        accounts: vec![
            GenesisAccount {
                id: a.public(),
                balance: 100,
                stake: 0,
            },
            GenesisAccount {
                id: b.public(),
                balance: 0,
                stake: 0,
            },
        ],
        auditors: vec![],
    };
    let tip = Tip::genesis(Hash::sha256(b"test-chain"));
    (Contract::new(&g).unwrap(), tip, a, b)
}

/// `key`'s seed proof for the block after `tip`.
fn seed_proof(key: &Keypair, tip: &Tip) -> trust_protocol::vrf::VrfProof {
    prove_seed(key, &tip.chain, tip.height + 1, &tip.seed).unwrap()
}

fn pay(from: &Keypair, to: &Keypair, nonce: u64, amount: u64) -> SignedTx {
    Signed::sign(
        from,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce,
            call: Call::Transfer {
                to: to.public(),
                amount,
            },
        },
    )
}

#[test]
fn a_built_block_executes_to_the_same_root_elsewhere() {
    let (c, tip, a, b) = genesis();
    let proposer = Keypair::from_label("v");
    let cands = vec![
        pay(&a, &b, 0, 10),
        pay(&a, &b, 0, 10),  // replay: dropped
        pay(&a, &b, 1, 500), // too much: dropped
        pay(&a, &b, 1, 20),
    ];
    let (block, built, dropped) = build_block(&c, &tip, &proposer, 0, &cands).unwrap();
    assert_eq!(block.txs.len(), 2);
    assert_eq!(dropped.len(), 2);
    assert!(matches!(dropped[0].error, TxError::BadNonce { .. }));
    let other = execute_block(&c, &tip, &block).unwrap();
    assert_eq!(other.contract.state_root(), block.header.state_root);
    assert_eq!(other.contract.state_root(), built.contract.state_root());
    assert_eq!(other.events, built.events);
    assert_eq!(other.contract.state().accounts[&b.public()].balance, 30);
    // The input state is untouched.
    assert_eq!(c.state().accounts[&b.public()].balance, 0);
    // The next block links to it.
    let tip2 = tip.after(&block);
    let (b2, _, _) =
        build_block(&other.contract, &tip2, &proposer, 0, &[pay(&a, &b, 2, 1)]).unwrap();
    assert!(execute_block(&other.contract, &tip2, &b2).is_ok());
    assert!(matches!(
        execute_block(&other.contract, &tip, &b2),
        Err(ExecError::NotNext { .. })
    ));
}

/// Block time: the proposer stamps its clock, or just after the parent when its clock is
/// behind; every executor refuses a block not stamped after its parent.
#[test]
fn block_times_only_move_forward() {
    let (c, tip, a, b) = genesis();
    let proposer = Keypair::from_label("v");
    let (first, done, _) = build_block(&c, &tip, &proposer, 1_700_000_000_000, &[]).unwrap();
    assert_eq!(first.header.time_ms, 1_700_000_000_000);
    let tip1 = tip.after(&first);
    assert_eq!(tip1.time_ms, 1_700_000_000_000);
    // A proposer whose clock is behind its parent's stamps one millisecond after it.
    let (second, _, _) =
        build_block(&done.contract, &tip1, &proposer, 5, &[pay(&a, &b, 0, 1)]).unwrap();
    assert_eq!(second.header.time_ms, 1_700_000_000_001);
    assert!(execute_block(&done.contract, &tip1, &second).is_ok());
    // A block stamped at or before its parent's time is refused, whoever built it.
    for t in [1_700_000_000_000, 0] {
        let mut back = second.clone();
        back.header.time_ms = t;
        assert!(matches!(
            execute_block(&done.contract, &tip1, &back),
            Err(ExecError::TimeNotAfterParent {
                height: 2,
                parent_ms: 1_700_000_000_000,
                ..
            })
        ));
    }
}

#[test]
fn bad_blocks_are_refused_with_a_reason() {
    let (c, tip, a, b) = genesis();
    let proposer = Keypair::from_label("v");
    let (block, _, _) = build_block(&c, &tip, &proposer, 0, &[pay(&a, &b, 0, 10)]).unwrap();

    let mut wrong_root = block.clone();
    wrong_root.header.state_root = Hash::sha256(b"lie");
    assert!(matches!(
        execute_block(&c, &tip, &wrong_root),
        Err(ExecError::StateRootMismatch { height: 1, .. })
    ));

    let other_chain = Tip {
        chain: Hash::sha256(b"other"),
        ..tip
    };
    assert!(matches!(
        execute_block(&c, &other_chain, &block),
        Err(ExecError::WrongChain { .. })
    ));

    let mut wrong_parent = block.clone();
    wrong_parent.header.prev_hash = Hash::sha256(b"p");
    assert!(matches!(
        execute_block(&c, &tip, &wrong_parent),
        Err(ExecError::WrongParent { .. })
    ));

    let garbage = Block::new(
        tip.chain,
        1,
        Hash::ZERO,
        1,
        c.state_root(),
        proposer.public(),
        seed_proof(&proposer, &tip),
        vec![vec![1, 2, 3]],
    );
    assert!(matches!(
        execute_block(&c, &tip, &garbage),
        Err(ExecError::BadTx { index: 0, .. })
    ));

    let failing = Block::new(
        tip.chain,
        1,
        Hash::ZERO,
        1,
        c.state_root(),
        proposer.public(),
        seed_proof(&proposer, &tip),
        vec![encoding::encode(&pay(&a, &b, 0, 5_000))],
    );
    assert!(matches!(
        execute_block(&c, &tip, &failing),
        Err(ExecError::Rejected { index: 0, .. })
    ));

    let mut tampered = block.clone();
    tampered.txs[0] = encoding::encode(&pay(&a, &b, 0, 11));
    assert!(matches!(
        execute_block(&c, &tip, &tampered),
        Err(ExecError::Block(BlockError::TxsRootMismatch { .. }))
    ));
}

#[test]
fn block_times_read_as_utc_dates() {
    use super::format_time;
    assert_eq!(format_time(0), "1970-01-01T00:00:00.000Z");
    assert_eq!(format_time(951_782_400_000), "2000-02-29T00:00:00.000Z");
    assert_eq!(format_time(1_709_251_199_999), "2024-02-29T23:59:59.999Z");
    assert_eq!(format_time(1_795_658_870_123), "2026-11-26T02:07:50.123Z");
    assert_eq!(format_time(4_102_444_800_000), "2100-01-01T00:00:00.000Z");
}

/// A contract with a funded provider and `n` Computer auditors of equal stake, and the
/// provider's `OpenSession` of four Computer segments (three seats each) at nonce 0.
fn audit_genesis(n: u8) -> (Contract, Keypair, Vec<Keypair>, SignedTx) {
    use trust_contracts::{GenesisAuditor, minimum_fee};
    use trust_protocol::{
        Salt,
        commit::mapping_commitment,
        tx::{QuorumParams, SegmentEntry, SessionManifest, SessionTerms, Tier},
        units::Ppm,
    };
    let provider = Keypair::from_label("grind-provider");
    let auditors: Vec<Keypair> = (0..n)
        .map(|i| Keypair::from_label(&format!("grind-auditor-{i}")))
        .collect();
    let mut accounts = vec![GenesisAccount {
        id: provider.public(),
        balance: 1_000_000,
        stake: 0,
    }];
    accounts.extend(auditors.iter().map(|a| GenesisAccount {
        id: a.public(),
        balance: 1_000,
        stake: 1_000,
    }));
    let c = Contract::new(&Genesis {
        params: Params::default(),
        accounts,
        auditors: auditors
            .iter()
            .enumerate()
            .map(|(i, a)| GenesisAuditor {
                id: a.public(),
                tier: Tier::Computer,
                expertise: vec!["math".into()],
                sealing_key: trust_protocol::SealingPublicKey([u8::try_from(i).unwrap() + 1; 32]),
            })
            .collect(),
    })
    .unwrap();
    let mut m = SessionManifest {
        segments: (0..4u8)
            .map(|i| SegmentEntry::plain(Hash::sha256(&[i]), Tier::Computer))
            .collect(),
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
        terms: SessionTerms::default(),
        honeypot_set: Hash::ZERO,
    };
    m.fee = minimum_fee(&Params::default(), &m).unwrap();
    let open = Signed::sign(
        &provider,
        &Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::OpenSession(m),
        },
    );
    (c, provider, auditors, open)
}

/// Seed grinding (issue 39, finding 7), mounted on block execution. The proposer of block
/// h-1 includes a provider's `OpenSession` (whose seats block h draws) and tries hundreds
/// of times and several transaction sets for its block, hoping one gives block h a seed
/// that seats its own auditors. Every try is another block h-1, and the scheduled proposer
/// of block h draws the same seats after each of them.
#[test]
fn the_draw_seed_cannot_be_ground_by_the_parent_proposer() {
    use std::collections::BTreeSet;

    let (c, provider, auditors, open) = audit_genesis(12);
    let (p_h2, p_h1, p_h) = (
        Keypair::from_label("proposer of h-2"),
        Keypair::from_label("proposer of h-1"),
        Keypair::from_label("proposer of h"),
    );
    let tip0 = Tip::genesis(Hash::sha256(b"grind-chain"));
    // Block h-2: fixed.
    let (fixed, done, _) = build_block(&c, &tip0, &p_h2, 1_000, &[]).unwrap();
    let tip1 = tip0.after(&fixed);
    let pay = |from: &Keypair, nonce, amount| {
        Signed::sign(
            from,
            &Hash::ZERO,
            Tx {
                nonce,
                call: Call::Transfer {
                    to: auditors[0].public(),
                    amount,
                },
            },
        )
    };
    let tx_sets = [
        vec![open.clone()],
        vec![open.clone(), pay(&provider, 1, 1)],
        vec![open.clone(), pay(&provider, 1, 2), pay(&provider, 2, 3)],
        vec![pay(&auditors[5], 0, 7), open.clone()],
    ];
    let mut parents = BTreeSet::new();
    let mut draws = BTreeSet::new();
    for time_ms in 1_001..1_101 {
        for txs in &tx_sets {
            let (parent, parent_done, dropped) =
                build_block(&done.contract, &tip1, &p_h1, time_ms, txs).unwrap();
            assert!(dropped.is_empty(), "{dropped:?}");
            parents.insert(parent.hash());
            let tip2 = tip1.after(&parent);
            let (drawing, _, _) =
                build_block(&parent_done.contract, &tip2, &p_h, 5_000, &[]).unwrap();
            // What every other node executes.
            let executed = execute_block(&parent_done.contract, &tip2, &drawing).unwrap();
            let seats: Vec<_> = executed
                .events
                .iter()
                .filter_map(Event::seat_assigned)
                .collect();
            assert_eq!(seats.len(), 12, "four segments, three seats each");
            draws.insert(seats);
        }
    }
    assert_eq!(
        parents.len(),
        100 * tx_sets.len(),
        "every try is another block h-1"
    );
    assert_eq!(draws.len(), 1, "the seats moved with block h-1's contents");
}

/// Execution refuses a block whose seed proof is another validator's, is over another
/// input (another parent seed, height or chain), or names another proposer than the one
/// that proved it: before any transaction runs.
#[test]
fn a_block_with_another_validators_seed_proof_or_a_proof_over_another_input_is_refused() {
    let (c, tip, a, b) = genesis();
    let (v, w) = (Keypair::from_label("v"), Keypair::from_label("w"));
    let (block, _, _) = build_block(&c, &tip, &v, 0, &[pay(&a, &b, 0, 10)]).unwrap();
    assert!(execute_block(&c, &tip, &block).is_ok());
    let refused = |b: &Block, proposer: &Keypair| {
        matches!(
            execute_block(&c, &tip, b),
            Err(ExecError::BadSeedProof { height: 1, proposer: p, error: VrfError::Invalid(k) })
                if p == proposer.public() && k == proposer.public()
        )
    };
    // W's valid proof of the same input, under V's name.
    let mut stolen = block.clone();
    stolen.header.vrf = seed_proof(&w, &tip);
    assert!(refused(&stolen, &v));
    // V's proofs over other inputs.
    let other_inputs = [
        (tip.chain, 1, tip.hash), // the parent's hash, not its seed
        (tip.chain, 2, tip.seed), // another height
        (Hash::sha256(b"other chain"), 1, tip.seed), // another chain
    ];
    for (chain, height, parent_seed) in other_inputs {
        let mut moved = block.clone();
        moved.header.vrf = prove_seed(&v, &chain, height, &parent_seed).unwrap();
        assert!(refused(&moved, &v), "{height}");
    }
    // W named as the proposer of V's block.
    let mut renamed = block.clone();
    renamed.header.proposer = w.public();
    assert!(refused(&renamed, &w));
    // And the right proof against another parent seed (a node whose tip is not the block's
    // parent in the seed chain).
    let elsewhere = Tip {
        seed: Hash::sha256(b"another seed"),
        ..tip
    };
    assert!(matches!(
        execute_block(&c, &elsewhere, &block),
        Err(ExecError::BadSeedProof { .. })
    ));
}

/// Each block's seed proof is over its parent's seed, so a chain of blocks replays from
/// genesis with each proof checked against the seed the block before left.
#[test]
fn seeds_chain_from_the_genesis_seed() {
    let (c, tip0, a, b) = genesis();
    let v = Keypair::from_label("v");
    assert_eq!(tip0.seed, genesis_seed(&tip0.chain));
    let (b1, d1, _) = build_block(&c, &tip0, &v, 0, &[pay(&a, &b, 0, 1)]).unwrap();
    let tip1 = tip0.after(&b1);
    let (b2, _, _) = build_block(&d1.contract, &tip1, &v, 0, &[]).unwrap();
    assert_eq!(b1.header.verify_seed(&tip0.seed), Ok(tip1.seed));
    assert_eq!(tip0.after(&b1).after(&b2).seed, b2.header.seed());
    assert!(execute_block(&d1.contract, &tip1, &b2).is_ok());
    // The same proposer's seeds differ from block to block.
    assert_ne!(b1.header.seed(), b2.header.seed());
    // Block 2's proof is over block 1's seed, not over the genesis seed.
    assert!(b2.header.verify_seed(&tip0.seed).is_err());
}
