//! Rebuilding the contract state from the ledger at start: the newest usable snapshot
//! below the tip, then every later block replayed and checked against its header's state
//! root, so that a node never serves or votes on a state it has not verified.

use tracing::warn;
use trust_contracts::{Contract, Genesis};
use trust_protocol::Hash;

use super::Ledger;
use crate::chain::{Tip, execute_block};

/// Why the ledger could not be restored.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum RestoreError {
    /// The genesis does not make a contract.
    #[error("{0}")]
    Genesis(#[source] crate::Cause),
    /// The ledger.
    #[error("ledger: {0}")]
    Ledger(#[source] crate::Cause),
    /// The stored chain does not replay to its own state roots.
    #[error("ledger does not replay: {0}")]
    Replay(#[source] crate::Cause),
}

/// What [`restore`] rebuilt from the ledger.
#[derive(Debug)]
pub struct Restored {
    /// The contract state at the tip.
    pub contract: Contract,
    /// The tip.
    pub tip: Tip,
    /// The state before the tip block (outcome proofs prove the tip certificate's stakes
    /// under it); `None` only at height 0.
    pub parent: Option<Contract>,
}

/// Restores the contract state and tip from the ledger: the newest snapshot below the tip
/// (so that at least the tip block is replayed, and the state before it is at hand), then
/// each later block replayed.
pub fn restore(ledger: &Ledger, genesis: &Genesis, chain: Hash) -> Result<Restored, RestoreError> {
    let tip_now = ledger
        .tip()
        .map_err(|e| RestoreError::Ledger(e.into()))?
        .unwrap_or((0, Hash::ZERO));
    let mut contract = Contract::new(genesis)
        .map_err(|e| RestoreError::Genesis(e.into()))?
        .with_chain(chain);
    let mut tip = Tip::genesis(chain);
    // A ledger that holds only its base (a node that joined by state sync, before its
    // next block) starts from the base's own snapshot: there is nothing below to replay.
    let oldest = ledger
        .oldest_block()
        .map_err(|e| RestoreError::Ledger(e.into()))?
        .unwrap_or(1);
    let newest_usable = if oldest > 1 && oldest == tip_now.0 {
        tip_now.0
    } else {
        tip_now.0.saturating_sub(1)
    };
    if tip_now.0 > 1
        && let Some((h, bytes)) = ledger
            .snapshot_at_or_below(newest_usable)
            .map_err(|e| RestoreError::Ledger(e.into()))?
        && h > 0
    {
        let block = ledger
            .block(h)
            .map_err(|e| RestoreError::Ledger(e.into()))?
            .ok_or_else(|| RestoreError::Ledger(format!("snapshot at {h} has no block").into()))?;
        match Contract::from_snapshot(&bytes) {
            Ok(c) if c.state_root() == block.block.header.state_root => {
                contract = c;
                tip = Tip::genesis(chain).after(&block.block);
            }
            _ => warn!(height = h, "snapshot unusable; replaying from genesis"),
        }
    }
    let from = tip.height.saturating_add(1);
    let mut parent = None;
    for h in from..=tip_now.0 {
        let stored = ledger
            .block(h)
            .map_err(|e| RestoreError::Ledger(e.into()))?
            .ok_or_else(|| {
                RestoreError::Replay(format!("block {h} missing below the tip").into())
            })?;
        let done = execute_block(&contract, &tip, &stored.block)
            .map_err(|e| RestoreError::Replay(e.into()))?;
        parent = Some(std::mem::replace(&mut contract, done.contract));
        tip = tip.after(&stored.block);
    }
    Ok(Restored {
        contract,
        tip,
        parent,
    })
}

#[cfg(test)]
mod tests {
    use trust_contracts::{GenesisAccount, Params};
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, Tx},
    };

    use super::*;
    use crate::{chain::build_block, ledger::StoredBlock};

    /// The chain id the test chain is signed for.
    const CHAIN: Hash = Hash([7; 32]);

    fn doc() -> (Genesis, Keypair) {
        let a = Keypair::from_label("restore-a");
        let doc = Genesis {
            params: Params::default(),
            accounts: vec![GenesisAccount {
                id: a.public(),
                balance: 10_000,
                stake: 100,
            }],
            auditors: vec![],
        };
        (doc, a)
    }

    /// Ten real blocks, each with one transfer, appended to a fresh ledger.
    fn chain(ledger: &Ledger, doc: &Genesis, key: &Keypair) -> (Hash, Vec<Contract>) {
        let mut contract = Contract::new(doc).unwrap().with_chain(CHAIN);
        let mut tip = Tip::genesis(CHAIN);
        let mut states = Vec::new();
        for n in 0..10u64 {
            let tx = Signed::sign(
                key,
                &CHAIN,
                Tx {
                    nonce: n,
                    call: Call::Transfer {
                        to: Keypair::from_label("bob").public(),
                        // Enough to create the recipient's account.
                        amount: Params::default().min_new_account,
                    },
                },
            );
            let (block, done, dropped) = build_block(&contract, &tip, key, 0, &[tx]).unwrap();
            assert!(dropped.is_empty());
            ledger
                .append(
                    &StoredBlock {
                        block: block.clone(),
                        certificate: vec![1],
                    },
                    &[],
                )
                .unwrap();
            contract = done.contract;
            tip = tip.after(&block);
            states.push(contract.clone());
        }
        (contract.state_root(), states)
    }

    /// A fresh ledger in a temporary directory holding [`chain`]'s ten blocks: the
    /// directory (kept alive), the ledger, the genesis, the sender, the tip's state root
    /// and the state after each block.
    fn ten_blocks() -> (
        tempfile::TempDir,
        Ledger,
        Genesis,
        Keypair,
        Hash,
        Vec<Contract>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        let (doc, key) = doc();
        let (root, states) = chain(&ledger, &doc, &key);
        (dir, ledger, doc, key, root, states)
    }

    #[test]
    fn restore_uses_a_snapshot_and_replays_the_blocks_after_it() {
        let (_dir, ledger, doc, key, root, states) = ten_blocks();
        // A snapshot at height 6; blocks 7..=10 are replayed on top of it.
        ledger.put_snapshot(6, &states[5].snapshot()).unwrap();
        let r = restore(&ledger, &doc, CHAIN).unwrap();
        assert_eq!(r.tip.height, 10);
        assert_eq!(r.contract.state_root(), root);
        assert_eq!(r.contract.nonce(&key.public()), 10);
        assert_eq!(
            r.parent.map(|p| p.state_root()),
            Some(states[8].state_root()),
            "the state before the tip block is kept"
        );
    }

    /// A snapshot at the tip itself would leave no state before the tip block (outcome
    /// proofs need it right after a restart): the newest one below the tip is used.
    #[test]
    fn restore_starts_below_the_tip_so_the_state_before_it_is_at_hand() {
        let (_dir, ledger, doc, _, root, states) = ten_blocks();
        ledger.put_snapshot(6, &states[5].snapshot()).unwrap();
        ledger.put_snapshot(10, &states[9].snapshot()).unwrap();
        let r = restore(&ledger, &doc, CHAIN).unwrap();
        assert_eq!((r.tip.height, r.contract.state_root()), (10, root));
        assert_eq!(
            r.parent.map(|p| p.state_root()),
            Some(states[8].state_root())
        );
    }

    #[test]
    fn an_unusable_snapshot_falls_back_to_a_full_replay() {
        let (_dir, ledger, doc, _, root, states) = ten_blocks();
        // Height 6's block, but the state of height 3: its root does not match the header.
        ledger.put_snapshot(6, &states[2].snapshot()).unwrap();
        let r = restore(&ledger, &doc, CHAIN).unwrap();
        assert_eq!((r.tip.height, r.contract.state_root()), (10, root));
        // Garbage bytes: the same.
        ledger.put_snapshot(8, b"not a snapshot").unwrap();
        let r = restore(&ledger, &doc, CHAIN).unwrap();
        assert_eq!(r.contract.state_root(), root);
    }
}
