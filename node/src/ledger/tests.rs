use trust_protocol::{
    Keypair, Signed,
    tx::{Call, Tx},
};

use super::*;

fn chain_id() -> Hash {
    Hash::sha256(b"ledger-test-chain")
}

/// The state root a test replay reports after the block at `height`.
fn root(height: u64) -> Hash {
    Hash::of_parts("test/state", &[&height.to_le_bytes()])
}

fn replay_ok(block: &Block) -> Result<Hash, String> {
    Ok(root(block.header.height))
}

fn tx(signer: &str, nonce: u64) -> Vec<u8> {
    let signed = Signed::sign(
        &Keypair::from_label(signer),
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce,
            call: Call::Transfer {
                to: Keypair::from_label("bob").public(),
                amount: 5,
            },
        },
    );
    encoding::encode(&signed)
}

fn tx_id(bytes: &[u8]) -> Hash {
    encoding::decode::<trust_protocol::tx::SignedTx>(bytes)
        .expect("test tx decodes")
        .id()
}

/// A stored block whose contents the ledger alone checks (links, encoding): its state root
/// is made up, and its seed proof is a valid proof over the parent's hash, which is not
/// the parent's seed (execution, which would check both, is not part of these tests).
fn make_block(chain: Hash, height: u64, prev: Hash, txs: Vec<Vec<u8>>) -> StoredBlock {
    let validator = Keypair::from_label("validator");
    StoredBlock {
        block: Block::new(
            chain,
            height,
            prev,
            height.saturating_mul(1_000),
            root(height),
            validator.public(),
            trust_protocol::block::prove_seed(&validator, &chain, height, &prev).unwrap(),
            txs,
        ),
        certificate: format!("cert-{height}").into_bytes(),
    }
}

/// A chain of `n` blocks, block `h` holding transactions of signer "a" with nonces
/// `2h` and `2h + 1`.
fn make_chain(n: u64) -> Vec<StoredBlock> {
    let mut prev = Hash::ZERO;
    let mut out = Vec::new();
    for h in 1..=n {
        let b = make_block(
            chain_id(),
            h,
            prev,
            vec![tx("a", 2 * h), tx("a", 2 * h + 1)],
        );
        prev = b.block.hash();
        out.push(b);
    }
    out
}

fn session(n: u8) -> Hash {
    Hash::sha256(&[n])
}

fn ledger_with(n: u64) -> (tempfile::TempDir, Ledger, Vec<StoredBlock>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(dir.path()).expect("open");
    let chain = make_chain(n);
    for b in &chain {
        ledger.append(b, &[]).expect("append");
    }
    (dir, ledger, chain)
}

/// Asserts a rejected block left no trace: same tip, none of its txs or outcomes indexed.
fn assert_untouched(ledger: &Ledger, tip: Option<(u64, Hash)>, rejected: &StoredBlock) {
    assert_eq!(ledger.tip().expect("tip"), tip);
    for t in &rejected.block.txs {
        if let Ok(signed) = encoding::decode::<trust_protocol::tx::SignedTx>(t) {
            assert_eq!(ledger.tx_location(&signed.id()).expect("index"), None);
        }
    }
    assert_eq!(ledger.outcome_height(&session(99)).expect("outcome"), None);
    let tip_height = tip.map_or(0, |(h, _)| h);
    assert!(ledger.block(tip_height + 1).expect("block read").is_none());
}

#[test]
fn append_and_reopen_keeps_tip_blocks_and_indices() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chain = make_chain(3);
    {
        let ledger = Ledger::open(dir.path()).expect("open");
        assert_eq!(ledger.tip().expect("tip"), None);
        assert_eq!(ledger.chain().expect("chain"), None);
        for (i, b) in chain.iter().enumerate() {
            let outcomes = if i == 1 {
                vec![session(1), session(2)]
            } else {
                vec![]
            };
            ledger.append(b, &outcomes).expect("append");
        }
    }
    let ledger = crate::reopen::when_unlocked(|| Ledger::open(dir.path())).expect("reopen");
    let last = chain.last().expect("three blocks");
    assert_eq!(ledger.tip().expect("tip"), Some((3, last.block.hash())));
    assert_eq!(ledger.chain().expect("chain"), Some(chain_id()));
    for b in &chain {
        let h = b.block.header.height;
        assert_eq!(ledger.block(h).expect("read").as_ref(), Some(b));
        for (i, t) in b.block.txs.iter().enumerate() {
            assert_eq!(
                ledger.tx_location(&tx_id(t)).expect("index"),
                Some((h, u32::try_from(i).expect("small")))
            );
        }
    }
    assert_eq!(ledger.block(4).expect("read"), None);
    assert_eq!(
        ledger.outcome_height(&session(1)).expect("outcome"),
        Some(2)
    );
    assert_eq!(
        ledger.outcome_height(&session(2)).expect("outcome"),
        Some(2)
    );
    assert_eq!(ledger.outcome_height(&session(3)).expect("outcome"), None);
    assert_eq!(
        ledger.tx_location(&Hash::sha256(b"nope")).expect("index"),
        None
    );
}

#[test]
fn iter_blocks_starts_at_the_given_height() {
    let (_dir, ledger, chain) = ledger_with(4);
    let from_two: Vec<StoredBlock> = ledger
        .iter_blocks(2)
        .collect::<Result<_, _>>()
        .expect("iterate");
    assert_eq!(from_two, chain[1..]);
    assert_eq!(ledger.iter_blocks(0).count(), 4);
    assert_eq!(ledger.iter_blocks(5).count(), 0);
}

#[test]
fn first_block_must_be_height_one_on_the_zero_hash() {
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(dir.path()).expect("open");
    let at_two = make_block(chain_id(), 2, Hash::ZERO, vec![tx("a", 1)]);
    assert!(matches!(
        ledger.append(&at_two, &[session(99)]),
        Err(LedgerError::NotNext {
            height: 2,
            expected: 1
        })
    ));
    assert_untouched(&ledger, None, &at_two);
    let bad_parent = make_block(chain_id(), 1, Hash::sha256(b"x"), vec![tx("a", 1)]);
    assert!(matches!(
        ledger.append(&bad_parent, &[session(99)]),
        Err(LedgerError::WrongParent { height: 1, .. })
    ));
    assert_untouched(&ledger, None, &bad_parent);
    // Rejected first blocks did not fix the chain id either.
    assert_eq!(ledger.chain().expect("chain"), None);
}

#[test]
fn wrong_height_is_rejected_and_changes_nothing() {
    let (_dir, ledger, chain) = ledger_with(2);
    let tip = ledger.tip().expect("tip");
    let skip = make_block(chain_id(), 4, chain[1].block.hash(), vec![tx("b", 1)]);
    assert!(matches!(
        ledger.append(&skip, &[session(99)]),
        Err(LedgerError::NotNext {
            height: 4,
            expected: 3
        })
    ));
    assert_untouched(&ledger, tip, &skip);
    assert!(ledger.block(4).expect("read").is_none());
}

#[test]
fn wrong_prev_hash_is_rejected_and_changes_nothing() {
    let (_dir, ledger, chain) = ledger_with(2);
    let tip = ledger.tip().expect("tip");
    let fork = make_block(chain_id(), 3, chain[0].block.hash(), vec![tx("b", 1)]);
    match ledger.append(&fork, &[session(99)]) {
        Err(LedgerError::WrongParent {
            height: 3,
            expected,
            got,
        }) => {
            assert_eq!(expected, chain[1].block.hash());
            assert_eq!(got, chain[0].block.hash());
        }
        other => panic!("expected WrongParent, got {other:?}"),
    }
    assert_untouched(&ledger, tip, &fork);
}

#[test]
fn wrong_chain_is_rejected_and_changes_nothing() {
    let (_dir, ledger, chain) = ledger_with(2);
    let tip = ledger.tip().expect("tip");
    let other = Hash::sha256(b"other-chain");
    let foreign = make_block(other, 3, chain[1].block.hash(), vec![tx("b", 1)]);
    assert!(matches!(
        ledger.append(&foreign, &[session(99)]),
        Err(LedgerError::WrongChain { expected, got }) if expected == chain_id() && got == other
    ));
    assert_untouched(&ledger, tip, &foreign);
}

#[test]
fn open_with_chain_fixes_and_checks_the_chain_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    {
        let ledger = Ledger::open_with_chain(dir.path(), chain_id()).expect("open");
        assert_eq!(ledger.chain().expect("chain"), Some(chain_id()));
        let foreign = make_block(Hash::sha256(b"other"), 1, Hash::ZERO, vec![]);
        assert!(matches!(
            ledger.append(&foreign, &[]),
            Err(LedgerError::WrongChain { .. })
        ));
        assert_eq!(ledger.tip().expect("tip"), None);
    }
    let reopened = crate::reopen::when_unlocked(|| {
        Ledger::open_with_chain(dir.path(), Hash::sha256(b"other"))
    });
    assert!(
        matches!(reopened, Err(LedgerError::WrongChain { .. })),
        "{reopened:?}"
    );
    let ledger = crate::reopen::when_unlocked(|| Ledger::open_with_chain(dir.path(), chain_id()))
        .expect("same chain reopens");
    ledger
        .append(&make_chain(1)[0], &[])
        .expect("own chain appends");
}

#[test]
fn undecodable_tx_rejects_the_block_and_changes_nothing() {
    let (_dir, ledger, chain) = ledger_with(1);
    let tip = ledger.tip().expect("tip");
    let bad = make_block(
        chain_id(),
        2,
        chain[0].block.hash(),
        vec![tx("b", 1), b"not a signed transaction".to_vec(), tx("b", 2)],
    );
    assert!(matches!(
        ledger.append(&bad, &[session(99)]),
        Err(LedgerError::BadTx {
            height: 2,
            index: 1,
            ..
        })
    ));
    assert_untouched(&ledger, tip, &bad);
}

#[test]
fn malformed_block_and_oversized_certificate_are_rejected() {
    let (_dir, ledger, chain) = ledger_with(1);
    let tip = ledger.tip().expect("tip");
    let mut tampered = make_block(chain_id(), 2, chain[0].block.hash(), vec![tx("b", 1)]);
    tampered.block.txs.push(tx("b", 2));
    assert!(matches!(
        ledger.append(&tampered, &[session(99)]),
        Err(LedgerError::Block(_))
    ));
    assert_untouched(&ledger, tip, &tampered);
    let mut big = make_block(chain_id(), 2, chain[0].block.hash(), vec![tx("b", 1)]);
    big.certificate = vec![0; MAX_CERTIFICATE_BYTES + 1];
    assert!(matches!(
        ledger.append(&big, &[session(99)]),
        Err(LedgerError::CertificateTooLarge { .. })
    ));
    assert_untouched(&ledger, tip, &big);
}

#[test]
fn duplicate_transactions_and_outcomes_are_rejected() {
    let (_dir, ledger, chain) = ledger_with(1);
    let tip = ledger.tip().expect("tip");
    let replayed = chain[0].block.txs[0].clone();
    let again = make_block(
        chain_id(),
        2,
        chain[0].block.hash(),
        vec![tx("b", 1), replayed],
    );
    assert!(matches!(
        ledger.append(&again, &[]),
        Err(LedgerError::DuplicateTx {
            height: 2,
            index: 1,
            ..
        })
    ));
    assert_eq!(ledger.tip().expect("tip"), tip);
    assert_eq!(
        ledger.tx_location(&tx_id(&tx("b", 1))).expect("index"),
        None
    );

    let twice = make_block(
        chain_id(),
        2,
        chain[0].block.hash(),
        vec![tx("b", 1), tx("b", 1)],
    );
    assert!(matches!(
        ledger.append(&twice, &[]),
        Err(LedgerError::DuplicateTx { index: 1, .. })
    ));

    let b2 = make_block(chain_id(), 2, chain[0].block.hash(), vec![tx("b", 1)]);
    ledger.append(&b2, &[session(7)]).expect("append");
    let b3 = make_block(chain_id(), 3, b2.block.hash(), vec![tx("b", 2)]);
    assert!(matches!(
        ledger.append(&b3, &[session(8), session(7)]),
        Err(LedgerError::DuplicateOutcome {
            height: 3,
            decided: 2,
            ..
        })
    ));
    assert_eq!(ledger.outcome_height(&session(8)).expect("outcome"), None);
    assert_eq!(
        ledger.tx_location(&tx_id(&tx("b", 2))).expect("index"),
        None
    );
    assert_eq!(ledger.tip().expect("tip").map(|t| t.0), Some(2));
}

#[test]
fn identical_reappend_is_idempotent() {
    let (_dir, ledger, chain) = ledger_with(3);
    let tip = ledger.tip().expect("tip");
    ledger
        .append(&chain[2], &[])
        .expect("same block at the tip");
    ledger
        .append(&chain[0], &[])
        .expect("same block below the tip");
    // A replay after a crash may carry another certificate for the same block.
    let mut recertified = chain[2].clone();
    recertified.certificate = b"another quorum".to_vec();
    ledger
        .append(&recertified, &[])
        .expect("same block, new certificate");
    assert_eq!(ledger.block(3).expect("read").as_ref(), Some(&chain[2]));
    assert_eq!(ledger.tip().expect("tip"), tip);
    let report = ledger.verify(&mut replay_ok).expect("still verifies");
    assert_eq!(report.blocks, 3);
}

#[test]
fn conflicting_block_at_an_existing_height_is_rejected() {
    let (_dir, ledger, chain) = ledger_with(3);
    let tip = ledger.tip().expect("tip");
    let rival = make_block(chain_id(), 3, chain[1].block.hash(), vec![tx("c", 1)]);
    match ledger.append(&rival, &[session(99)]) {
        Err(LedgerError::Conflict {
            height: 3,
            stored,
            offered,
        }) => {
            assert_eq!(stored, chain[2].block.hash());
            assert_eq!(offered, rival.block.hash());
        }
        other => panic!("expected Conflict, got {other:?}"),
    }
    let early = make_block(chain_id(), 1, Hash::ZERO, vec![]);
    assert!(matches!(
        ledger.append(&early, &[]),
        Err(LedgerError::Conflict { height: 1, .. })
    ));
    assert_untouched(&ledger, tip, &rival);
    assert_eq!(ledger.block(3).expect("read").as_ref(), Some(&chain[2]));
}

#[test]
fn verify_passes_on_a_good_chain() {
    let (_dir, ledger, chain) = ledger_with(5);
    let mut seen = Vec::new();
    let report = ledger
        .verify(&mut |b: &Block| {
            seen.push(b.header.height);
            replay_ok(b)
        })
        .expect("verifies");
    assert_eq!(
        report,
        VerifyReport {
            oldest: 1,
            blocks: 5,
            txs: 10,
            tip_hash: chain[4].block.hash()
        }
    );
    assert_eq!(seen, [1, 2, 3, 4, 5]);

    let dir = tempfile::tempdir().expect("tempdir");
    let empty = Ledger::open(dir.path()).expect("open");
    assert_eq!(
        empty.verify(&mut replay_ok).expect("empty verifies"),
        VerifyReport {
            oldest: 0,
            blocks: 0,
            txs: 0,
            tip_hash: Hash::ZERO
        }
    );
}

#[test]
fn verify_names_the_height_of_overwritten_block_bytes() {
    let (_dir, ledger, chain) = ledger_with(4);
    // Garbage where block 3 was.
    ledger
        .blocks
        .insert(height_key(3), b"\x01\x02 bit rot".as_slice())
        .expect("raw write");
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { height: 3, .. })
    ));
    assert!(matches!(ledger.block(3), Err(LedgerError::Corrupt { .. })));
    assert!(
        ledger
            .iter_blocks(1)
            .any(|b| matches!(b, Err(LedgerError::Corrupt { .. })))
    );

    // A well-formed block with a flipped transaction byte no longer matches txs_root.
    let mut flipped = chain[2].clone();
    if let Some(byte) = flipped.block.txs[0].last_mut() {
        *byte ^= 1;
    }
    ledger
        .blocks
        .insert(height_key(3), encoding::encode(&flipped))
        .expect("raw write");
    match ledger.verify(&mut replay_ok) {
        Err(LedgerError::Broken { height: 3, reason }) => {
            assert!(reason.contains("malformed"), "{reason}")
        }
        other => panic!("expected Broken at 3, got {other:?}"),
    }

    // A consistent rewrite of block 2 breaks the link from block 3.
    let mut forged = chain[1].clone();
    forged.block.header.proposer = Keypair::from_label("mallory").public();
    ledger
        .blocks
        .insert(height_key(2), encoding::encode(&forged))
        .expect("raw write");
    ledger
        .blocks
        .insert(height_key(3), encoding::encode(&chain[2]))
        .expect("raw write");
    match ledger.verify(&mut replay_ok) {
        Err(LedgerError::Broken { height: 3, reason }) => {
            assert!(reason.contains("prev_hash"), "{reason}")
        }
        other => panic!("expected Broken at 3, got {other:?}"),
    }

    // A removed block is a gap at its height.
    ledger
        .blocks
        .insert(height_key(2), encoding::encode(&chain[1]))
        .expect("raw write");
    ledger.verify(&mut replay_ok).expect("restored");
    ledger.blocks.remove(height_key(2)).expect("raw remove");
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { height: 2, .. })
    ));
}

#[test]
fn verify_names_the_height_where_replay_disagrees() {
    let (_dir, ledger, _chain) = ledger_with(4);
    let mut diverging = |b: &Block| -> Result<Hash, String> {
        if b.header.height == 3 {
            Ok(Hash::sha256(b"another state"))
        } else {
            replay_ok(b)
        }
    };
    match ledger.verify(&mut diverging) {
        Err(LedgerError::Broken { height: 3, reason }) => {
            assert!(reason.contains("state root"), "{reason}")
        }
        other => panic!("expected Broken at 3, got {other:?}"),
    }
    let mut failing = |b: &Block| -> Result<Hash, String> {
        if b.header.height == 2 {
            Err("contract rejected tx 0".into())
        } else {
            replay_ok(b)
        }
    };
    assert!(matches!(
        ledger.verify(&mut failing),
        Err(LedgerError::Broken { height: 2, .. })
    ));
}

#[test]
fn verify_checks_the_indices_and_the_tip() {
    let (_dir, ledger, chain) = ledger_with(3);
    let id = tx_id(&chain[1].block.txs[1]);
    ledger
        .tx_index
        .insert(id.as_bytes(), encoding::encode(&(2u64, 0u32)))
        .expect("raw write");
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { height: 2, .. })
    ));
    ledger
        .tx_index
        .insert(id.as_bytes(), encoding::encode(&(2u64, 1u32)))
        .expect("raw write");
    ledger.verify(&mut replay_ok).expect("repaired");

    ledger
        .tx_index
        .insert(
            Hash::sha256(b"stray").as_bytes(),
            encoding::encode(&(1u64, 0u32)),
        )
        .expect("raw write");
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { .. })
    ));
    ledger
        .tx_index
        .remove(Hash::sha256(b"stray").as_bytes())
        .expect("raw remove");

    ledger
        .meta
        .insert(TIP_KEY, encoding::encode(&(5u64, chain[2].block.hash())))
        .expect("raw write");
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { height: 4, .. })
    ));
}

#[test]
fn corrupt_metadata_and_indices_are_errors_not_panics() {
    let (_dir, ledger, chain) = ledger_with(1);
    let id = tx_id(&chain[0].block.txs[0]);
    ledger
        .tx_index
        .insert(id.as_bytes(), b"short".as_slice())
        .expect("raw write");
    assert!(matches!(
        ledger.tx_location(&id),
        Err(LedgerError::Corrupt { .. })
    ));
    ledger
        .outcomes
        .insert(session(1).as_bytes(), b"\xff".as_slice())
        .expect("raw write");
    assert!(matches!(
        ledger.outcome_height(&session(1)),
        Err(LedgerError::Corrupt { .. })
    ));
    ledger
        .meta
        .insert(TIP_KEY, b"\x00".as_slice())
        .expect("raw write");
    assert!(matches!(ledger.tip(), Err(LedgerError::Corrupt { .. })));
    let next = make_block(chain_id(), 2, chain[0].block.hash(), vec![]);
    assert!(matches!(
        ledger.append(&next, &[]),
        Err(LedgerError::Corrupt { .. })
    ));
    assert!(matches!(
        ledger.verify(&mut replay_ok),
        Err(LedgerError::Broken { .. })
    ));
    ledger
        .snapshots
        .insert(b"odd".as_slice(), b"state".as_slice())
        .expect("raw write");
    assert!(matches!(
        ledger.latest_snapshot(),
        Err(LedgerError::Corrupt { .. })
    ));
}

#[test]
fn snapshots_keep_the_newest_three() {
    let (dir, ledger, _chain) = ledger_with(6);
    assert_eq!(ledger.latest_snapshot().expect("read"), None);
    for h in 1..=5u64 {
        ledger
            .put_snapshot(h, format!("state-{h}").as_bytes())
            .expect("snapshot");
    }
    let heights = |l: &Ledger| -> Vec<u64> {
        l.snapshots
            .iter()
            .keys()
            .map(|k| parse_height_key(SNAPSHOTS_TREE, &k.expect("key")).expect("height"))
            .collect()
    };
    assert_eq!(heights(&ledger), [3, 4, 5]);
    assert_eq!(
        ledger.latest_snapshot().expect("read"),
        Some((5, b"state-5".to_vec()))
    );
    // Older than every kept one: dropped at once.
    ledger.put_snapshot(1, b"late").expect("snapshot");
    assert_eq!(heights(&ledger), [3, 4, 5]);
    // Replacing a kept one keeps three.
    ledger.put_snapshot(4, b"state-4b").expect("snapshot");
    assert_eq!(heights(&ledger), [3, 4, 5]);
    assert!(matches!(
        ledger.put_snapshot(7, b"future"),
        Err(LedgerError::SnapshotAhead { height: 7, tip: 6 })
    ));
    ledger.put_snapshot(6, b"state-6").expect("snapshot");
    drop(ledger);

    let ledger = crate::reopen::when_unlocked(|| Ledger::open(dir.path())).expect("reopen");
    assert_eq!(heights(&ledger), [4, 5, 6]);
    assert_eq!(
        ledger.latest_snapshot().expect("read"),
        Some((6, b"state-6".to_vec()))
    );
}

#[test]
fn shares_a_database_with_other_subsystems() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path()).expect("sled");
    let blobs = crate::blobs::BlobStore::open(&db).expect("blobs");
    let ledger = Ledger::from_db(&db).expect("ledger");
    blobs.put(b"segment").expect("blob");
    for b in make_chain(2) {
        ledger.append(&b, &[]).expect("append");
    }
    assert_eq!(ledger.verify(&mut replay_ok).expect("verify").blocks, 2);
    assert_eq!(blobs.len(), 1);
}

/// Every block is found by its hash in one index read; a ledger written before the index
/// existed is indexed when it is opened, once, one decode per block, in batches.
#[test]
fn blocks_are_found_by_hash_and_an_older_ledger_is_indexed_on_open() {
    let n = BACKFILL_BATCH + 44;
    let (_dir, ledger, chain) = ledger_with(n);
    let decoded = ledger.blocks_decoded();
    for b in &chain {
        let h = b.block.header.height;
        assert_eq!(ledger.height_of(&b.block.hash()).expect("index"), Some(h));
    }
    assert_eq!(ledger.blocks_decoded(), decoded, "the index alone answers");
    let last = chain.last().expect("blocks");
    assert_eq!(
        ledger.block_by_hash(&last.block.hash()).expect("read"),
        Some(last.clone())
    );
    assert_eq!(
        ledger.block_by_hash(&Hash::sha256(b"none")).expect("read"),
        None
    );

    // As a ledger from before the index: no hashes, no mark.
    ledger.hashes.clear().expect("clear");
    ledger.meta.remove(HASHES_THROUGH_KEY).expect("unmark");
    assert_eq!(ledger.height_of(&last.block.hash()).expect("index"), None);
    let reopened = Ledger::from_db(&ledger.db).expect("reopen");
    assert_eq!(reopened.blocks_decoded(), n, "one decode per block, once");
    for b in &chain {
        assert_eq!(
            reopened.height_of(&b.block.hash()).expect("index"),
            Some(b.block.header.height)
        );
    }
    let again = Ledger::from_db(&ledger.db).expect("reopen");
    assert_eq!(again.blocks_decoded(), 0, "nothing left to index");
    // Appends keep the index whole.
    let next = make_block(chain_id(), n + 1, last.block.hash(), vec![tx("z", 0)]);
    again.append(&next, &[]).expect("append");
    assert_eq!(
        again.height_of(&next.block.hash()).expect("index"),
        Some(n + 1)
    );
    assert_eq!(
        Ledger::from_db(&ledger.db)
            .expect("reopen")
            .blocks_decoded(),
        0
    );
}

/// Blocks served raw stop at the byte budget, judged by stored sizes; nothing is decoded.
#[test]
fn raw_blocks_stop_at_the_budget_and_decode_nothing() {
    let (_dir, ledger, chain) = ledger_with(10);
    let size = encoding::encode(&chain[0]).len();
    let decoded = ledger.blocks_decoded();
    let three = ledger.raw_blocks(1, 10, 3 * size + size / 2).expect("read");
    assert_eq!(three.len(), 3);
    for (raw, b) in three.iter().zip(&chain) {
        assert_eq!(raw, &encoding::encode(b), "the stored encoding as it is");
    }
    assert_eq!(ledger.raw_blocks(9, 10, usize::MAX).expect("read").len(), 2);
    assert!(ledger.raw_blocks(1, 10, size - 1).expect("read").is_empty());
    assert_eq!(ledger.blocks_decoded(), decoded);
}

/// The record of validator-power changes: the heights of the blocks appended as changing
/// the powers, in the block's own transaction, kept across a reopen; walks from below
/// what the record covers are refused.
#[test]
fn power_changes_are_recorded_with_their_blocks_and_survive_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let chain = make_chain(8);
    let changed = [2u64, 5, 6];
    {
        let ledger = Ledger::open(dir.path()).expect("open");
        assert_eq!(ledger.powers_unknown_through().expect("mark"), 0);
        for b in &chain {
            let h = b.block.header.height;
            ledger
                .append_with_feed(b, &[], &[], changed.contains(&h), &[])
                .expect("append");
        }
        // Appending a block held already records nothing new.
        ledger
            .append_with_feed(&chain[2], &[], &[], true, &[])
            .expect("re-append");
    }
    let ledger = crate::reopen::when_unlocked(|| Ledger::open(dir.path())).expect("reopen");
    assert_eq!(ledger.powers_unknown_through().expect("mark"), 0);
    // Strictly between the anchor and the proven block.
    assert_eq!(ledger.power_changes(0, 9).expect("walk"), [2, 5, 6]);
    assert_eq!(ledger.power_changes(0, 6).expect("walk"), [2, 5]);
    assert_eq!(ledger.power_changes(2, 8).expect("walk"), [5, 6]);
    assert_eq!(ledger.power_changes(5, 6).expect("walk"), [] as [u64; 0]);
    assert_eq!(ledger.power_changes(7, 3).expect("walk"), [] as [u64; 0]);

    // A block appended without saying: the record is incomplete up to it.
    let next = make_block(chain_id(), 9, chain[7].block.hash(), vec![tx("z", 0)]);
    ledger.append(&next, &[]).expect("append");
    assert_eq!(ledger.powers_unknown_through().expect("mark"), 9);
    let e = ledger.power_changes(0, 10).unwrap_err();
    assert!(
        matches!(
            e,
            LedgerError::NoPowerHistory {
                through: 9,
                from: 0
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("trust a block at or above 9"), "{e}");
    assert_eq!(ledger.power_changes(9, 11).expect("walk"), [] as [u64; 0]);
}

/// A ledger that held blocks before the record existed starts it above its tip.
#[test]
fn an_older_ledger_records_power_changes_only_above_its_tip() {
    let (_dir, ledger, chain) = ledger_with(4);
    // As a ledger from before the record: no mark.
    ledger
        .meta
        .remove(POWERS_UNKNOWN_THROUGH_KEY)
        .expect("unmark");
    let reopened = Ledger::from_db(&ledger.db).expect("reopen");
    assert_eq!(reopened.powers_unknown_through().expect("mark"), 4);
    let next = make_block(chain_id(), 5, chain[3].block.hash(), vec![tx("z", 0)]);
    reopened
        .append_with_feed(&next, &[], &[], true, &[])
        .expect("append");
    assert!(matches!(
        reopened.power_changes(3, 6),
        Err(LedgerError::NoPowerHistory {
            through: 4,
            from: 3
        })
    ));
    assert_eq!(reopened.power_changes(4, 6).expect("walk"), [5]);
    // A fresh ledger's record is whole from genesis.
    let dir = tempfile::tempdir().expect("tempdir");
    let fresh = Ledger::open(dir.path()).expect("open");
    assert_eq!(fresh.powers_unknown_through().expect("mark"), 0);
}
