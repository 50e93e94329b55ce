//! Pruning: a node may keep only its last blocks (`[ledger] keep_blocks`).
//!
//! The ledger's oldest block is then always one whose contract snapshot it holds (the
//! *base*): the state after the base is the snapshot, checked against the base's header,
//! and every later block replays on it. So a pruned ledger still restores, verifies
//! ([`Ledger::verify_with`]) and rebuilds past states ([`crate::ledger::history`]) from its
//! base; what lies below it answers [`LedgerError::Pruned`] (the node says so, and an
//! archive node, one without `keep_blocks`, keeps everything).
//!
//! Pruning runs when a snapshot is written: the new base is the newest snapshot at or below
//! `tip + 1 - keep_blocks`, so at least `keep_blocks` blocks stay. With pruning on, the
//! snapshots from the base up are all kept (without it, the newest
//! [`super::SNAPSHOTS_KEPT`]); the blocks below the base go with their hash, transaction,
//! feed and power-change entries, at most [`PRUNE_BATCH`] blocks per write and at most
//! [`PRUNE_PER_CALL`] per prune. The new base is recorded first (`pruned_to` in
//! `ledger/meta`): from then on the ledger's oldest block is the base, whose snapshot it
//! holds, however many blocks below it are still to go; a crash in the middle, or a first
//! prune of a long archive ledger, leaves the rest to the next prune, and the ledger
//! verifies, restores and replays from its base all along. The outcome
//! index (session -> deciding height) stays: it is what lets the node say *where* a pruned
//! outcome was decided.

use sled::{
    Transactional,
    transaction::{ConflictableTransactionError, TransactionError},
};
use trust_protocol::{encoding, tx::SignedTx};

use super::{
    BLOCKS_TREE, Ledger, LedgerError, POWERS_UNKNOWN_THROUGH_KEY, PRUNED_TO_KEY, SNAPSHOTS_TREE,
    height_key, parse_height_key,
};

/// Blocks removed per sled batch.
pub const PRUNE_BATCH: u64 = 512;

/// Most blocks one [`Ledger::prune`] removes: pruning runs in the consensus driver's
/// commit of a snapshot, so a long archive ledger switched to pruning is worked down over
/// several snapshots rather than in one long stall.
pub const PRUNE_PER_CALL: u64 = 16 * PRUNE_BATCH;

/// What one [`Ledger::prune`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Pruned {
    /// Blocks removed.
    pub blocks: u64,
    /// The oldest block kept now (0: none).
    pub oldest: u64,
}

impl Ledger {
    /// The height below which blocks are gone: `Some(oldest)` when `height` is below the
    /// oldest block held (1 for a ledger that keeps everything).
    pub fn pruned_below(&self, height: u64) -> Result<Option<u64>, LedgerError> {
        Ok(self
            .oldest_block()?
            .filter(|oldest| *oldest > 1 && height < *oldest))
    }

    /// [`LedgerError::Pruned`] when `height` is below the oldest block held.
    pub fn check_kept(&self, height: u64) -> Result<(), LedgerError> {
        match self.pruned_below(height)? {
            Some(oldest) => Err(LedgerError::Pruned { height, oldest }),
            None => Ok(()),
        }
    }

    /// Keeps at least the last `keep_blocks` blocks and moves the base up to the newest
    /// snapshot at or below `tip + 1 - keep_blocks` (nothing moves without such a
    /// snapshot), then drops up to [`PRUNE_PER_CALL`] of the blocks below the base, with
    /// their index entries, and the snapshots below it. Returns what it removed.
    pub fn prune(&self, keep_blocks: u64) -> Result<Pruned, LedgerError> {
        self.prune_at_most(keep_blocks, PRUNE_PER_CALL)
    }

    /// [`Ledger::prune`] removing at most `most` blocks.
    pub(crate) fn prune_at_most(&self, keep_blocks: u64, most: u64) -> Result<Pruned, LedgerError> {
        let tip = self.tip()?.map_or(0, |(h, _)| h);
        let (Some(first), Some(oldest)) = (self.first_stored()?, self.oldest_block()?) else {
            return Ok(Pruned::default());
        };
        let target = tip.saturating_add(1).checked_sub(keep_blocks.max(1));
        let newest = match target {
            Some(t) => match self.snapshots.range(..=height_key(t)).next_back() {
                Some(kv) => Some(parse_height_key(SNAPSHOTS_TREE, &kv?.0)?),
                None => None,
            },
            None => None,
        };
        // The base needs its own block (its header is what the snapshot is checked
        // against); it only moves up.
        let mut base = oldest;
        if let Some(b) = newest
            && b > oldest
            && self.blocks.get(height_key(b))?.is_some()
        {
            base = b;
            self.meta.insert(PRUNED_TO_KEY, encoding::encode(&base))?;
            // Walks of validator-power changes can only start at the base from now on.
            if self.powers_unknown_through()? < base {
                self.meta
                    .insert(POWERS_UNKNOWN_THROUGH_KEY, encoding::encode(&base))?;
            }
            self.meta.flush()?;
        }
        if first >= base {
            return Ok(Pruned { blocks: 0, oldest });
        }
        let mut removed = 0u64;
        let mut from = first;
        let end = base.min(first.saturating_add(most));
        while from < end {
            let to = from.saturating_add(PRUNE_BATCH).min(end);
            // Read first, then remove the blocks and every entry naming them in one
            // transaction: a crash leaves either all of a batch or none of it.
            let mut heights = Vec::new();
            let mut ids = Vec::new();
            let mut hashes = Vec::new();
            for kv in self.blocks.range(height_key(from)..height_key(to)) {
                let (key, bytes) = kv?;
                let h = parse_height_key(BLOCKS_TREE, &key)?;
                let stored = super::decode_block(h, &bytes)?;
                for tx in &stored.block.txs {
                    if let Ok(signed) = encoding::decode::<SignedTx>(tx) {
                        ids.push(signed.id());
                    }
                }
                hashes.push(stored.block.hash());
                heights.push(height_key(h));
            }
            (
                &self.blocks,
                &self.hashes,
                &self.tx_index,
                &self.events,
                &self.power_changes,
            )
                .transaction(|(blocks, by_hash, tx_index, events, powers)| {
                    for key in &heights {
                        blocks.remove(key)?;
                        events.remove(key)?;
                        powers.remove(key)?;
                    }
                    for hash in &hashes {
                        by_hash.remove(hash.as_bytes())?;
                    }
                    for id in &ids {
                        tx_index.remove(id.as_bytes())?;
                    }
                    Ok::<(), ConflictableTransactionError<LedgerError>>(())
                })
                .map_err(|e| match e {
                    TransactionError::Abort(e) => e,
                    TransactionError::Storage(e) => LedgerError::Db(e),
                })?;
            removed = removed.saturating_add(heights.len() as u64);
            from = to;
        }
        let mut old = sled::Batch::default();
        for key in self.snapshots.range(..height_key(base)).keys() {
            old.remove(key?);
        }
        self.snapshots.apply_batch(old)?;
        self.db.flush()?;
        Ok(Pruned {
            blocks: removed,
            oldest: base,
        })
    }
}
