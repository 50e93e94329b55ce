//! The contract state after past blocks, rebuilt on demand: from the newest usable snapshot
//! at or below each height asked for (or genesis), every later block replayed and checked
//! against its header's state root, as a restore does. Outcome proofs prove the stakes
//! after their anchor and after each change of the validator powers under those states.

use trust_contracts::Contract;
use trust_protocol::Hash;

use crate::{
    chain::{Tip, execute_block},
    ledger::{Ledger, LedgerError, StoredBlock},
};

/// Where a replay stands: the state after `tip`.
struct Replay {
    contract: Contract,
    tip: Tip,
}

/// Calls `visit` with each block of `heights` (ascending, each at least 1; repeats are
/// visited once) and the contract state after it, rebuilt from `genesis` (the contract at
/// genesis) and the ledger's blocks of `chain`. A snapshot is used where one lies between the
/// last height visited and the next; otherwise the blocks in between are replayed. A block
/// missing, or one that does not replay to its own state root, is [`LedgerError::Broken`].
pub fn replay_to<E: From<LedgerError>>(
    ledger: &Ledger,
    genesis: &Contract,
    chain: Hash,
    heights: &[u64],
    mut visit: impl FnMut(&StoredBlock, &Contract) -> Result<(), E>,
) -> Result<(), E> {
    let mut at: Option<Replay> = None;
    let mut last = 0u64;
    for &target in heights {
        if target == 0 || target <= last {
            continue;
        }
        let from = at.as_ref().map_or(0, |r| r.tip.height);
        if let Some(jump) = usable_snapshot(ledger, target, from, chain)? {
            at = Some(jump);
        }
        let mut r = at.take().unwrap_or_else(|| Replay {
            contract: genesis.clone(),
            tip: Tip::genesis(chain),
        });
        let mut target_block = None;
        for h in r.tip.height.saturating_add(1)..=target {
            let stored = block_at(ledger, h)?;
            let done = execute_block(&r.contract, &r.tip, &stored.block).map_err(|e| {
                LedgerError::Broken {
                    height: h,
                    reason: e.to_string(),
                }
            })?;
            r.contract = done.contract;
            r.tip = r.tip.after(&stored.block);
            if h == target {
                target_block = Some(stored);
            }
        }
        // A snapshot at the target itself leaves nothing to replay.
        let stored = match target_block {
            Some(b) => b,
            None => block_at(ledger, target)?,
        };
        visit(&stored, &r.contract)?;
        last = target;
        at = Some(r);
    }
    Ok(())
}

fn block_at(ledger: &Ledger, height: u64) -> Result<StoredBlock, LedgerError> {
    ledger.check_kept(height)?;
    ledger.block(height)?.ok_or_else(|| LedgerError::Broken {
        height,
        reason: "block missing below the tip".into(),
    })
}

/// The newest snapshot at or below `target` and above `from`, when its state is the one
/// its block's header commits to.
fn usable_snapshot(
    ledger: &Ledger,
    target: u64,
    from: u64,
    chain: Hash,
) -> Result<Option<Replay>, LedgerError> {
    let Some((h, bytes)) = ledger.snapshot_at_or_below(target)? else {
        return Ok(None);
    };
    if h <= from || h == 0 {
        return Ok(None);
    }
    let Some(block) = ledger.block(h)? else {
        return Ok(None);
    };
    match Contract::from_snapshot(&bytes) {
        Ok(contract) if contract.state_root() == block.block.header.state_root => {
            Ok(Some(Replay {
                contract,
                tip: Tip::genesis(chain).after(&block.block),
            }))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use trust_contracts::{Genesis, GenesisAccount, Params};
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, Tx},
    };

    use super::*;
    use crate::chain::build_block;
    use trust_protocol::block::Block;

    const CHAIN: Hash = Hash([9; 32]);

    /// The genesis of these tests: one funded, staked account.
    fn genesis_doc() -> Genesis {
        Genesis {
            params: Params::default(),
            accounts: vec![GenesisAccount {
                id: Keypair::from_label("history-a").public(),
                balance: 10_000,
                stake: 100,
            }],
            auditors: vec![],
        }
    }

    /// Ten real blocks, each with one transfer, in a fresh ledger: the directory, the
    /// ledger, the contract at genesis and the state root after each block (index 0:
    /// genesis).
    fn ten_blocks() -> (tempfile::TempDir, Ledger, Contract, Vec<Contract>) {
        blocks(10)
    }

    /// [`ten_blocks`] with `n` blocks.
    fn blocks(n: u64) -> (tempfile::TempDir, Ledger, Contract, Vec<Contract>) {
        let key = Keypair::from_label("history-a");
        let genesis = Contract::new(&genesis_doc()).unwrap().with_chain(CHAIN);
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        let mut states = vec![genesis.clone()];
        let mut tip = Tip::genesis(CHAIN);
        for n in 0..n {
            let tx = Signed::sign(
                &key,
                &CHAIN,
                Tx {
                    nonce: n,
                    call: Call::Transfer {
                        to: Keypair::from_label("history-b").public(),
                        // Enough to create the recipient's account.
                        amount: Params::default().min_new_account,
                    },
                },
            );
            let last = states.last().unwrap();
            let (block, done, dropped) = build_block(last, &tip, &key, n + 1, &[tx]).unwrap();
            assert!(dropped.is_empty());
            ledger
                .append_with_feed(
                    &StoredBlock {
                        block: block.clone(),
                        certificate: vec![1],
                    },
                    &[],
                    &[],
                    false,
                    &[],
                )
                .unwrap();
            tip = tip.after(&block);
            states.push(done.contract);
        }
        (dir, ledger, genesis, states)
    }

    /// The heights visited and the state roots handed over.
    fn replay(ledger: &Ledger, genesis: &Contract, heights: &[u64]) -> Vec<(u64, Hash)> {
        let mut seen = Vec::new();
        replay_to::<LedgerError>(ledger, genesis, CHAIN, heights, |b, c| {
            assert_eq!(c.state_root(), b.block.header.state_root);
            seen.push((b.block.header.height, c.state_root()));
            Ok(())
        })
        .unwrap();
        seen
    }

    #[test]
    fn each_height_is_visited_once_with_the_state_after_its_block() {
        let (_dir, ledger, genesis, states) = ten_blocks();
        let want = |hs: &[u64]| -> Vec<(u64, Hash)> {
            hs.iter()
                .map(|&h| (h, states[usize::try_from(h).unwrap()].state_root()))
                .collect()
        };
        // From genesis alone.
        assert_eq!(
            replay(&ledger, &genesis, &[0, 2, 2, 5, 10]),
            want(&[2, 5, 10])
        );
        // With snapshots: one below the first height, one between, one at a height asked.
        ledger.put_snapshot(1, &states[1].snapshot()).unwrap();
        ledger.put_snapshot(4, &states[4].snapshot()).unwrap();
        ledger.put_snapshot(7, &states[7].snapshot()).unwrap();
        let decoded = ledger.blocks_decoded();
        assert_eq!(replay(&ledger, &genesis, &[3, 7, 9]), want(&[3, 7, 9]));
        // Blocks 2 and 3 from the snapshot at 1, block 7 read once at the snapshot, 8 and
        // 9 replayed (and the snapshots' own blocks read to check them).
        assert!(ledger.blocks_decoded() - decoded <= 8);
        // A snapshot that is not its block's state is passed over.
        ledger.put_snapshot(7, &states[6].snapshot()).unwrap();
        assert_eq!(replay(&ledger, &genesis, &[8]), want(&[8]));
    }

    #[test]
    fn a_block_that_does_not_replay_is_named() {
        let (_dir, ledger, genesis, _) = ten_blocks();
        // Another genesis: block 1 does not replay to its root.
        let other = Contract::new(&Genesis {
            params: Params::default(),
            accounts: vec![],
            auditors: vec![],
        })
        .unwrap()
        .with_chain(CHAIN);
        let e = replay_to::<LedgerError>(&ledger, &other, CHAIN, &[3], |_, _| Ok(())).unwrap_err();
        assert!(matches!(e, LedgerError::Broken { height: 1, .. }), "{e}");
        // A height beyond the tip.
        let e =
            replay_to::<LedgerError>(&ledger, &genesis, CHAIN, &[11], |_, _| Ok(())).unwrap_err();
        assert!(matches!(e, LedgerError::Broken { height: 11, .. }), "{e}");
    }

    /// [`Ledger::verify_with`] as `ledger verify` runs it: from `start` (genesis) for an
    /// unpruned ledger, from the base's snapshot for a pruned one, every later block
    /// replayed.
    fn verify_from_snapshot(
        ledger: &Ledger,
        start: Contract,
        start_tip: Tip,
    ) -> Result<crate::ledger::VerifyReport, LedgerError> {
        let state = std::cell::RefCell::new((start, start_tip));
        let mut adopt = |b: &Block, bytes: &[u8]| -> Result<Hash, String> {
            let c = Contract::from_snapshot(bytes).map_err(|e| e.to_string())?;
            let root = c.state_root();
            *state.borrow_mut() = (c, Tip::genesis(CHAIN).after(b));
            Ok(root)
        };
        let mut step = |b: &Block| -> Result<Hash, String> {
            let mut s = state.borrow_mut();
            let done = execute_block(&s.0, &s.1, b).map_err(|e| e.to_string())?;
            s.0 = done.contract;
            s.1 = s.1.after(b);
            Ok(s.0.state_root())
        };
        ledger.verify_with(Some(&mut adopt), &mut step)
    }

    /// A prune that removes only part of what lies below its new base (its cap, or a crash
    /// in the middle) leaves a ledger whose oldest block is already the base: blocks below
    /// it are pruned to every reader though some are still stored, and the ledger verifies
    /// and replays from the base's snapshot; the next prunes remove the rest.
    #[test]
    fn a_prune_cut_short_leaves_a_ledger_that_starts_at_its_base() {
        let (_dir, ledger, genesis, states) = blocks(30);
        for h in [10u64, 20, 30] {
            ledger
                .put_snapshot(h, &states[h as usize].snapshot())
                .unwrap();
        }
        let done = ledger.prune_at_most(10, 5).unwrap();
        assert_eq!((done.blocks, done.oldest), (5, 20));
        assert_eq!(ledger.oldest_block().unwrap(), Some(20));
        assert!(ledger.block(5).unwrap().is_none());
        assert!(
            ledger.block(6).unwrap().is_some(),
            "still stored, not yet removed"
        );
        assert!(matches!(
            ledger.check_kept(6),
            Err(LedgerError::Pruned {
                height: 6,
                oldest: 20
            })
        ));
        assert!(
            ledger.power_changes(0, 30).is_err(),
            "no walk from below the base"
        );
        // Verifies from the base's snapshot, not from the leftovers below it.
        let report = verify_from_snapshot(&ledger, genesis.clone(), Tip::genesis(CHAIN)).unwrap();
        assert_eq!((report.oldest, report.blocks), (20, 30));
        assert_eq!(
            replay(&ledger, &genesis, &[25]),
            vec![(25, states[25].state_root())]
        );
        // The next prunes take the rest, and the base stays.
        assert_eq!(ledger.prune_at_most(10, 5).unwrap().blocks, 5);
        assert_eq!(ledger.prune(10).unwrap().blocks, 9);
        assert!(ledger.block(19).unwrap().is_none());
        assert_eq!(ledger.oldest_block().unwrap(), Some(20));
        assert_eq!(ledger.prune(10).unwrap().blocks, 0);
    }

    /// `[ledger] keep_blocks`: snapshots every 10 blocks and 10 blocks kept. At block 30
    /// the ledger drops blocks 1..=19 with their transaction index entries and the
    /// snapshot at 10, and keeps block 20 and its snapshot as its base; it still verifies
    /// (from the base's snapshot, checked against its header), restores and rebuilds
    /// every later state, and names the pruned heights as pruned. A snapshot that is not
    /// the base block's state fails verification at the base.
    #[test]
    fn a_pruned_ledger_verifies_restores_and_replays_from_its_base() {
        let (_dir, ledger, genesis, states) = blocks(30);
        let early_tx = ledger.block(5).unwrap().unwrap().block.txs[0].clone();
        let early_id = trust_protocol::encoding::decode::<trust_protocol::tx::SignedTx>(&early_tx)
            .unwrap()
            .id();
        assert_eq!(ledger.tx_location(&early_id).unwrap(), Some((5, 0)));
        ledger.set_keep_blocks(Some(10));
        // Each snapshot prunes down to the newest one that leaves 10 blocks (the tip is
        // 30 throughout): 10, then 20; the one at 30 leaves the base at 20 (21 is the
        // lowest height that keeps 10 blocks).
        for (h, base) in [(10u64, 10u64), (20, 20), (30, 20)] {
            ledger
                .put_snapshot(h, &states[h as usize].snapshot())
                .unwrap();
            assert_eq!(ledger.oldest_block().unwrap(), Some(base), "after {h}");
        }
        assert!(ledger.block(19).unwrap().is_none());
        assert!(ledger.block(20).unwrap().is_some());
        assert_eq!(ledger.tx_location(&early_id).unwrap(), None);
        assert!(ledger.events(5).unwrap().is_none());
        assert!(matches!(
            ledger.check_kept(19),
            Err(LedgerError::Pruned {
                height: 19,
                oldest: 20
            })
        ));
        ledger.check_kept(20).unwrap();
        assert_eq!(ledger.snapshot_at_or_below(19).unwrap(), None);
        assert_eq!(ledger.snapshot_at_or_below(29).unwrap().unwrap().0, 20);
        assert!(
            ledger.power_changes(0, 30).is_err(),
            "no walk from below the base"
        );

        // Verify: refused without the snapshot, passes from it.
        let replay_from =
            |start: Contract, start_tip: Tip| verify_from_snapshot(&ledger, start, start_tip);
        let e = ledger
            .verify(&mut |_: &Block| Ok::<Hash, String>(Hash::ZERO))
            .unwrap_err();
        assert!(
            matches!(&e, LedgerError::Broken { height: 20, reason } if reason.contains("pruned")),
            "{e}"
        );
        let report = replay_from(genesis.clone(), Tip::genesis(CHAIN)).unwrap();
        assert_eq!((report.oldest, report.blocks, report.txs), (20, 30, 11));

        // Restore, and past states above the base; below it, pruned.
        let restored = crate::ledger::restore::restore(&ledger, &genesis_doc(), CHAIN).unwrap();
        assert_eq!(restored.tip.height, 30);
        assert_eq!(restored.contract.state_root(), states[30].state_root());
        assert_eq!(
            replay(&ledger, &genesis, &[20, 25]),
            vec![(20, states[20].state_root()), (25, states[25].state_root())]
        );
        let e =
            replay_to::<LedgerError>(&ledger, &genesis, CHAIN, &[5], |_, _| Ok(())).unwrap_err();
        assert!(
            matches!(
                e,
                LedgerError::Pruned {
                    height: 1,
                    oldest: 20
                }
            ),
            "{e}"
        );

        // A base snapshot that is not block 20's state is caught there.
        ledger
            .snapshots
            .insert(crate::ledger::height_key(20), states[19].snapshot())
            .unwrap();
        let e = replay_from(genesis, Tip::genesis(CHAIN)).unwrap_err();
        assert!(matches!(e, LedgerError::Broken { height: 20, .. }), "{e}");
    }

    /// Without `keep_blocks` nothing is pruned and the newest three snapshots stay.
    #[test]
    fn an_archive_ledger_keeps_every_block() {
        let (_dir, ledger, _genesis, states) = blocks(30);
        for h in [5u64, 10, 15, 20, 25, 30] {
            ledger
                .put_snapshot(h, &states[h as usize].snapshot())
                .unwrap();
        }
        assert_eq!(ledger.oldest_block().unwrap(), Some(1));
        assert_eq!(ledger.pruned_below(1).unwrap(), None);
        assert_eq!(ledger.snapshot_at_or_below(19).unwrap(), None);
        assert_eq!(ledger.snapshot_at_or_below(30).unwrap().unwrap().0, 30);
        assert_eq!(ledger.keep_blocks(), None);
    }
}
