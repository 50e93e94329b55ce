//! Walking the whole ledger at start-up: hash chain, indices and state roots.

use trust_protocol::{Hash, block::Block, encoding, tx::SignedTx};

use super::{Ledger, LedgerError, StoredBlock, VerifyReport, decode_outcome};

/// What [`Ledger::verify_with`] calls with a pruned ledger's base block and the snapshot
/// stored there: adopt it as the state to replay on, and return its state root.
pub type Adopt<'a, E> = dyn FnMut(&Block, &[u8]) -> Result<Hash, E> + 'a;

fn broken(height: u64, reason: impl Into<String>) -> LedgerError {
    LedgerError::Broken {
        height,
        reason: reason.into(),
    }
}

impl Ledger {
    /// Checks the whole ledger, block by block from height 1 to the tip.
    ///
    /// Each stored block must decode, pass [`Block::check`], belong to the ledger's chain,
    /// sit at the next height and link to the previous block's hash; each of its
    /// transactions must decode and be indexed at its own height and position. `replay` is
    /// then called with the block, in height order, and must return the contract state
    /// root after applying it (its transactions and end-of-block step), which has to equal
    /// `header.state_root`. Afterwards the stored tip must be the last block, the
    /// transaction index must hold no other entries, and every session outcome must point
    /// at a stored block.
    ///
    /// The first problem found is returned as [`LedgerError::Broken`] with its height. A
    /// pruned ledger (its oldest block above 1) is refused here: see
    /// [`Ledger::verify_with`].
    pub fn verify<E: std::fmt::Display>(
        &self,
        replay: &mut dyn FnMut(&Block) -> Result<Hash, E>,
    ) -> Result<VerifyReport, LedgerError> {
        self.verify_with(None, replay)
    }

    /// [`Ledger::verify`] from the ledger's oldest block: for a pruned ledger (oldest block
    /// `K > 1`, [`Ledger::prune`]) `from_snapshot` is called with block `K` and the
    /// snapshot stored at `K`, must adopt it as the state to replay on and return its
    /// state root, which has to equal block `K`'s header; block `K`'s own link to its
    /// parent is not checked (the parent is gone) and the walk goes on from there.
    pub fn verify_with<E: std::fmt::Display>(
        &self,
        mut from_snapshot: Option<&mut Adopt<'_, E>>,
        replay: &mut dyn FnMut(&Block) -> Result<Hash, E>,
    ) -> Result<VerifyReport, LedgerError> {
        let chain = self.chain()?;
        let oldest = self.oldest_block()?.unwrap_or(1).max(1);
        let mut height = oldest.saturating_sub(1);
        let mut prev = Hash::ZERO;
        let mut txs = 0u64;
        for kv in self.blocks.range(super::height_key(oldest)..) {
            let (key, bytes) = kv?;
            let expected = height.saturating_add(1);
            let Ok(key) = <[u8; 8]>::try_from(key.as_ref()) else {
                return Err(broken(
                    expected,
                    format!("blocks tree has a key of {} bytes", key.len()),
                ));
            };
            let key_height = u64::from_be_bytes(key);
            if key_height != expected {
                return Err(broken(
                    expected,
                    format!("block missing (the next stored block is at height {key_height})"),
                ));
            }
            let stored: StoredBlock = encoding::decode(&bytes)
                .map_err(|e| broken(expected, format!("stored block does not decode: {e}")))?;
            let block = &stored.block;
            let base = expected == oldest && oldest > 1;
            if base {
                // The base's parent was pruned: it starts the chain walked.
                prev = block.header.prev_hash;
            }
            self.check_block(block, expected, chain, prev)?;
            for (index, tx) in block.txs.iter().enumerate() {
                self.check_indexed(tx, expected, index)?;
            }
            let root = if base {
                let Some(adopt) = from_snapshot.as_mut() else {
                    return Err(broken(
                        expected,
                        format!(
                            "the ledger was pruned below block {oldest}: verify it from its snapshot there"
                        ),
                    ));
                };
                let snapshot = self
                    .snapshots
                    .get(super::height_key(expected))?
                    .ok_or_else(|| {
                        broken(
                            expected,
                            "the ledger was pruned below this block but holds no snapshot of it",
                        )
                    })?;
                adopt(block, &snapshot)
                    .map_err(|e| broken(expected, format!("snapshot unusable: {e}")))?
            } else {
                replay(block).map_err(|e| broken(expected, format!("replay failed: {e}")))?
            };
            if root != block.header.state_root {
                return Err(broken(
                    expected,
                    format!(
                        "state root after replay is {root}, the header says {}",
                        block.header.state_root
                    ),
                ));
            }
            height = expected;
            prev = block.hash();
            txs = txs.saturating_add(block.txs.len() as u64);
        }
        self.check_tip(height, prev)?;
        // Blocks below the base that a prune has yet to remove keep their index entries
        // until it does.
        let mut leftover = 0u64;
        for kv in self.blocks.range(..super::height_key(oldest)) {
            let (key, bytes) = kv?;
            let h = <[u8; 8]>::try_from(key.as_ref()).map_or(0, u64::from_be_bytes);
            let stored: StoredBlock = encoding::decode(&bytes)
                .map_err(|e| broken(h, format!("stored block does not decode: {e}")))?;
            leftover = leftover.saturating_add(stored.block.txs.len() as u64);
        }
        let indexed = self.tx_index.len() as u64;
        if indexed != txs.saturating_add(leftover) {
            return Err(broken(
                height,
                format!(
                    "transaction index holds {indexed} entries, the blocks hold {} transactions",
                    txs.saturating_add(leftover)
                ),
            ));
        }
        for kv in self.outcomes.iter() {
            let (key, value) = kv?;
            let session = <[u8; 32]>::try_from(key.as_ref())
                .map(Hash)
                .map_err(|_| broken(height, format!("outcome key of {} bytes", key.len())))?;
            let decided = decode_outcome(&session, &value)
                .map_err(|e| broken(height, format!("outcome entry: {e}")))?;
            if decided == 0 || decided > height {
                return Err(broken(
                    decided,
                    format!(
                        "session {session} is recorded as decided at a height the ledger does not hold"
                    ),
                ));
            }
        }
        Ok(VerifyReport {
            oldest: if height == 0 { 0 } else { oldest },
            blocks: height,
            txs,
            tip_hash: prev,
        })
    }

    /// The checks of one block that need only the block and its predecessor.
    fn check_block(
        &self,
        block: &Block,
        height: u64,
        chain: Option<Hash>,
        prev: Hash,
    ) -> Result<(), LedgerError> {
        if block.header.height != height {
            return Err(broken(
                height,
                format!("stored block claims height {}", block.header.height),
            ));
        }
        block
            .check()
            .map_err(|e| broken(height, format!("block is malformed: {e}")))?;
        match chain {
            None => return Err(broken(height, "the ledger holds blocks but no chain id")),
            Some(chain) if chain != block.header.chain => {
                return Err(broken(
                    height,
                    format!(
                        "block is for chain {}, the ledger's is {chain}",
                        block.header.chain
                    ),
                ));
            }
            Some(_) => {}
        }
        if block.header.prev_hash != prev {
            return Err(broken(
                height,
                format!(
                    "prev_hash {} is not the hash {prev} of the block before",
                    block.header.prev_hash
                ),
            ));
        }
        Ok(())
    }

    /// The transaction at `index` of the block at `height` is indexed there.
    fn check_indexed(&self, tx: &[u8], height: u64, index: usize) -> Result<(), LedgerError> {
        let signed: SignedTx = encoding::decode(tx)
            .map_err(|e| broken(height, format!("transaction {index} does not decode: {e}")))?;
        let id = signed.id();
        let location = self
            .tx_location(&id)
            .map_err(|e| broken(height, format!("transaction {index}: {e}")))?;
        let here = (height, u32::try_from(index).unwrap_or(u32::MAX));
        match location {
            Some(found) if found == here => Ok(()),
            Some((h, i)) => Err(broken(
                height,
                format!("transaction {index} ({id}) is indexed at height {h}, position {i}"),
            )),
            None => Err(broken(
                height,
                format!("transaction {index} ({id}) is missing from the index"),
            )),
        }
    }

    /// The stored tip is the last block walked.
    fn check_tip(&self, height: u64, hash: Hash) -> Result<(), LedgerError> {
        let tip = self
            .tip()
            .map_err(|e| broken(height, format!("stored tip: {e}")))?;
        match tip {
            None if height == 0 => Ok(()),
            None => Err(broken(height, "blocks are stored but the tip is not")),
            Some((h, _)) if h != height => Err(broken(
                height.min(h).saturating_add(1),
                format!("the stored tip is at height {h}, the blocks end at height {height}"),
            )),
            Some((_, tip_hash)) if tip_hash != hash => Err(broken(
                height,
                format!("the stored tip hash {tip_hash} is not the last block's hash {hash}"),
            )),
            Some(_) => Ok(()),
        }
    }
}
