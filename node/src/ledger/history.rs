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

    const CHAIN: Hash = Hash([9; 32]);

    /// Ten real blocks, each with one transfer, in a fresh ledger: the directory, the
    /// ledger, the contract at genesis and the state root after each block (index 0:
    /// genesis).
    fn ten_blocks() -> (tempfile::TempDir, Ledger, Contract, Vec<Contract>) {
        let key = Keypair::from_label("history-a");
        let genesis = Contract::new(&Genesis {
            params: Params::default(),
            accounts: vec![GenesisAccount {
                id: key.public(),
                balance: 10_000,
                stake: 100,
            }],
            auditors: vec![],
        })
        .unwrap()
        .with_chain(CHAIN);
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        let mut states = vec![genesis.clone()];
        let mut tip = Tip::genesis(CHAIN);
        for n in 0..10u64 {
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
}
