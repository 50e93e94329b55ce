//! Appending a decided block: every check that needs no stored data runs first, then one
//! sled transaction re-reads the tip, checks the links and writes the block, its indices,
//! its session outcomes, its event feed, whether it changed the validator powers, the final
//! outcomes it let go of and the new tip together.

use std::collections::BTreeSet;

use sled::{
    Transactional,
    transaction::{ConflictableTransactionError, TransactionError, TransactionalTree},
};
use trust_contracts::Outcome;
use trust_protocol::{Hash, encoding, tx::SignedTx};

use crate::feed::FeedEvent;

use crate::ledger::{
    BLOCKS_TREE, CHAIN_KEY, HASHES_THROUGH_KEY, Ledger, LedgerError, MAX_CERTIFICATE_BYTES,
    MAX_FEED_BYTES, POWERS_UNKNOWN_THROUGH_KEY, StoredBlock, TIP_KEY, decode_chain, decode_outcome,
    decode_tip, height_key,
};

type TxResult<T> = Result<T, ConflictableTransactionError<LedgerError>>;

fn abort<T>(error: LedgerError) -> TxResult<T> {
    Err(ConflictableTransactionError::Abort(error))
}

impl Ledger {
    /// Appends a decided block with the sessions it decides, without an event feed (its
    /// height's events read as not available) and without saying whether it changed the
    /// validator powers (the record of those changes is incomplete up to it from then on):
    /// see [`Ledger::append_with_feed`].
    pub fn append(
        &self,
        stored: &StoredBlock,
        session_outcomes: &[Hash],
    ) -> Result<(), LedgerError> {
        self.append_inner(stored, session_outcomes, None, None, &[], false)
    }

    /// Starts an empty ledger at `stored` (a block above 1, whose parent it will never
    /// hold) with `snapshot`, the contract state after it, as a pruned ledger's base
    /// ([`Ledger::prune`]): what a node that joins by state sync keeps of the history
    /// before it. The caller has checked the block (its certificate) and the snapshot (its
    /// state root against the block's header); the block's own checks and its transaction
    /// index are as in [`Ledger::append`]. Refused on a ledger that holds a block.
    pub fn install_base(&self, stored: &StoredBlock, snapshot: &[u8]) -> Result<(), LedgerError> {
        let height = stored.block.header.height;
        if let Some((tip, _)) = self.tip()? {
            return Err(LedgerError::NotNext {
                height,
                expected: tip.saturating_add(1),
            });
        }
        self.append_inner(stored, &[], None, None, &[], true)?;
        self.snapshots.insert(height_key(height), snapshot)?;
        self.db.flush()?;
        Ok(())
    }

    /// Appends a decided block with the sessions it decides, its event feed
    /// ([`crate::feed::derive`]), whether its execution changed the validator powers
    /// (`powers_changed`: recorded in `ledger/power_changes`) and the final outcomes it
    /// let go of from the contract state (`retired`, [`crate::chain::retired_outcomes`]:
    /// kept in `ledger/final`, [`Ledger::final_outcome`]), all in one transaction, then
    /// flushes: what the consensus driver does for every decided block, whether it was
    /// proposed here, received or synced.
    ///
    /// The block must pass [`Block::check`], belong to the ledger's chain (a ledger
    /// without a chain id takes the first block's), sit at the height after the tip
    /// (1 for the first block) and link to the tip's hash ([`Hash::ZERO`] for the first).
    /// Every transaction must decode as a [`SignedTx`] that is not in the ledger yet, and
    /// no session may have been decided by an earlier block. On any error nothing is
    /// written.
    ///
    /// A block the ledger already holds at its height is accepted without writing (replay
    /// after a crash); the certificate stored first is kept. A different block at a height
    /// already taken is [`LedgerError::Conflict`].
    ///
    /// [`Block::check`]: trust_protocol::block::Block::check
    pub fn append_with_feed(
        &self,
        stored: &StoredBlock,
        session_outcomes: &[Hash],
        feed: &[FeedEvent],
        powers_changed: bool,
        retired: &[(Hash, Outcome)],
    ) -> Result<(), LedgerError> {
        self.append_inner(
            stored,
            session_outcomes,
            Some(feed),
            Some(powers_changed),
            retired,
            false,
        )
    }

    fn append_inner(
        &self,
        stored: &StoredBlock,
        session_outcomes: &[Hash],
        feed: Option<&[FeedEvent]>,
        powers_changed: Option<bool>,
        retired: &[(Hash, Outcome)],
        base: bool,
    ) -> Result<(), LedgerError> {
        let block = &stored.block;
        let height = block.header.height;
        block.check()?;
        if stored.certificate.len() > MAX_CERTIFICATE_BYTES {
            return Err(LedgerError::CertificateTooLarge {
                len: stored.certificate.len(),
            });
        }
        let bytes = encoding::try_encode(stored).map_err(LedgerError::Encode)?;
        let hash = block.hash();
        let chain_bytes = encoding::encode(&block.header.chain);
        let tip_bytes = encoding::encode(&(height, hash));
        let height_bytes = encoding::encode(&height);

        let mut seen = BTreeSet::new();
        let mut tx_entries = Vec::with_capacity(block.txs.len());
        for (index, tx) in block.txs.iter().enumerate() {
            let signed: SignedTx = encoding::decode(tx).map_err(|source| LedgerError::BadTx {
                height,
                index,
                source,
            })?;
            let id = signed.id();
            if !seen.insert(id) {
                return Err(LedgerError::DuplicateTx { height, index, id });
            }
            // `Block::check` bounds the count far below `u32::MAX`.
            let position = u32::try_from(index).unwrap_or(u32::MAX);
            tx_entries.push((index, id, encoding::encode(&(height, position))));
        }
        let sessions: BTreeSet<&Hash> = session_outcomes.iter().collect();
        let retired: Vec<(Hash, Vec<u8>)> = retired
            .iter()
            .map(|(id, o)| (*id, encoding::encode(o)))
            .collect();
        let feed_bytes = feed.and_then(|feed| {
            let b = serde_json::to_vec(feed)
                .ok()
                .filter(|b| b.len() <= MAX_FEED_BYTES);
            if b.is_none() {
                tracing::warn!(
                    height,
                    events = feed.len(),
                    "block's event feed not stored: over {MAX_FEED_BYTES} bytes"
                );
            }
            b
        });

        let result = (
            &self.blocks,
            &self.hashes,
            &self.tx_index,
            &self.outcomes,
            &self.events,
            &self.power_changes,
            &self.meta,
            &self.finals,
        )
            .transaction(|trees| {
                let (blocks, hashes, tx_index, outcomes, events, power_changes, meta, finals) =
                    trees;
                let chain = decode_chain(meta.get(CHAIN_KEY)?.as_deref())
                    .map_err(ConflictableTransactionError::Abort)?;
                if let Some(expected) = chain
                    && expected != block.header.chain
                {
                    return abort(LedgerError::WrongChain {
                        expected,
                        got: block.header.chain,
                    });
                }
                let tip = decode_tip(meta.get(TIP_KEY)?.as_deref())
                    .map_err(ConflictableTransactionError::Abort)?;
                // A base starts an empty ledger where its parent would have been.
                let (tip_height, tip_hash) = match tip {
                    None if base => (height.saturating_sub(1), block.header.prev_hash),
                    None => (0, Hash::ZERO),
                    Some(_) if base => {
                        return abort(LedgerError::NotNext {
                            height,
                            expected: tip.map_or(1, |(h, _)| h.saturating_add(1)),
                        });
                    }
                    Some(t) => t,
                };
                if height <= tip_height {
                    return already_held(blocks, height, hash);
                }
                let expected = tip_height.checked_add(1);
                if expected != Some(height) {
                    return abort(LedgerError::NotNext {
                        height,
                        expected: expected.unwrap_or(u64::MAX),
                    });
                }
                if block.header.prev_hash != tip_hash {
                    return abort(LedgerError::WrongParent {
                        height,
                        expected: tip_hash,
                        got: block.header.prev_hash,
                    });
                }
                for (index, id, location) in &tx_entries {
                    if tx_index.get(id.as_bytes())?.is_some() {
                        return abort(LedgerError::DuplicateTx {
                            height,
                            index: *index,
                            id: *id,
                        });
                    }
                    tx_index.insert(id.as_bytes(), location.as_slice())?;
                }
                for session in &sessions {
                    if let Some(old) = outcomes.get(session.as_bytes())? {
                        let decided = decode_outcome(session, &old)
                            .map_err(ConflictableTransactionError::Abort)?;
                        return abort(LedgerError::DuplicateOutcome {
                            height,
                            session: **session,
                            decided,
                        });
                    }
                    outcomes.insert(session.as_bytes(), height_bytes.as_slice())?;
                }
                for (session, outcome) in &retired {
                    finals.insert(session.as_bytes(), outcome.as_slice())?;
                }
                blocks.insert(&height_key(height), bytes.as_slice())?;
                if let Some(f) = &feed_bytes {
                    events.insert(&height_key(height), f.as_slice())?;
                }
                hashes.insert(hash.as_bytes(), &height_key(height))?;
                match powers_changed {
                    Some(true) => {
                        power_changes.insert(&height_key(height), &[])?;
                    }
                    Some(false) => {}
                    // Not known: the record says nothing up to this block.
                    None => {
                        meta.insert(POWERS_UNKNOWN_THROUGH_KEY, height_bytes.as_slice())?;
                    }
                }
                if chain.is_none() {
                    meta.insert(CHAIN_KEY, chain_bytes.as_slice())?;
                }
                meta.insert(TIP_KEY, tip_bytes.as_slice())?;
                // The index covers this block now, so a later open has nothing to backfill
                // (the mark only moves if it was at the previous tip).
                let through = meta
                    .get(HASHES_THROUGH_KEY)?
                    .and_then(|b| encoding::decode::<u64>(&b).ok());
                if base || through.is_none_or(|t| t == tip_height) {
                    meta.insert(HASHES_THROUGH_KEY, height_bytes.as_slice())?;
                }
                Ok(())
            });
        match result {
            Ok(()) => {}
            Err(TransactionError::Abort(e)) => return Err(e),
            Err(TransactionError::Storage(e)) => return Err(LedgerError::Db(e)),
        }
        self.db.flush()?;
        Ok(())
    }
}

/// A block at a height the ledger has passed: fine if it is the block held there.
fn already_held(blocks: &TransactionalTree, height: u64, offered: Hash) -> TxResult<()> {
    let Some(bytes) = blocks.get(height_key(height))? else {
        return abort(LedgerError::Corrupt {
            tree: BLOCKS_TREE,
            key: height.to_string(),
            reason: "no block below the tip".into(),
        });
    };
    let held = super::decode_block(height, &bytes).map_err(ConflictableTransactionError::Abort)?;
    let stored = held.block.hash();
    if stored == offered {
        Ok(())
    } else {
        abort(LedgerError::Conflict {
            height,
            stored,
            offered,
        })
    }
}
