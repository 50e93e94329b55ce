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
    let proposer = Keypair::from_label("v").public();
    let cands = vec![
        pay(&a, &b, 0, 10),
        pay(&a, &b, 0, 10),  // replay: dropped
        pay(&a, &b, 1, 500), // too much: dropped
        pay(&a, &b, 1, 20),
    ];
    let (block, built, dropped) = build_block(&c, &tip, proposer, 0, &cands);
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
    let (b2, _, _) = build_block(&other.contract, &tip2, proposer, 0, &[pay(&a, &b, 2, 1)]);
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
    let proposer = Keypair::from_label("v").public();
    let (first, done, _) = build_block(&c, &tip, proposer, 1_700_000_000_000, &[]);
    assert_eq!(first.header.time_ms, 1_700_000_000_000);
    let tip1 = tip.after(&first);
    assert_eq!(tip1.time_ms, 1_700_000_000_000);
    // A proposer whose clock is behind its parent's stamps one millisecond after it.
    let (second, _, _) = build_block(&done.contract, &tip1, proposer, 5, &[pay(&a, &b, 0, 1)]);
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
    let proposer = Keypair::from_label("v").public();
    let (block, _, _) = build_block(&c, &tip, proposer, 0, &[pay(&a, &b, 0, 10)]);

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
        proposer,
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
        proposer,
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
