//! The node's append-only ledger: decided blocks, their commit certificates, and the
//! indices users query, kept in sled.
//!
//! # What a block's `state_root` means
//!
//! `header.state_root` is the contract state root **after** applying the block: after
//! every one of its transactions and the contract's end-of-block step, in that order. It
//! is never the root the block started from. [`Ledger::verify`] holds the caller's replay
//! to exactly that: the replay applies the block to the state left by the previous block
//! and returns the root it ends with, which must equal the header's.
//!
//! # Layout
//!
//! One sled database (its own, or shared with other subsystems; the trees are prefixed
//! `ledger/`) with nine trees:
//!
//! | tree | key | value |
//! |---|---|---|
//! | `ledger/blocks` | height, big-endian `u64` | canonical encoding of a [`StoredBlock`] |
//! | `ledger/hashes` | block hash | height, big-endian `u64` |
//! | `ledger/tx_index` | signed transaction id ([`Signed::id`]) | encoded `(height: u64, index: u32)` |
//! | `ledger/outcomes` | session id | encoded height of the block that decided it |
//! | `ledger/final` | session id | encoded final [`Outcome`], written by the block that let it go from the contract state ([`trust_contracts::Params::outcome_retention`]): what the node answers from then on; its proof is anchored at its `final_at` block |
//! | `ledger/events` | height, big-endian `u64` | the block's event feed ([`crate::feed`]): the JSON array of its [`FeedEvent`]s, at most [`MAX_FEED_BYTES`] |
//! | `ledger/snapshots` | height, big-endian `u64` | opaque contract state bytes |
//! | `ledger/power_changes` | height, big-endian `u64` | empty: the block's execution changed the validator powers |
//! | `ledger/meta` | `chain`, `tip`, `hashes_through`, `powers_unknown_through` | chain id; encoded `(height, block hash)` of the tip; the height the hash index covers; the height up to which power changes were not recorded |
//!
//! Heights are big-endian so that sled's key order is height order. The hash index makes a
//! lookup by block hash one read ([`Ledger::height_of`]); a ledger written before it existed
//! is indexed when it is opened, [`BACKFILL_BATCH`] blocks per write, resuming where it
//! stopped if interrupted.
//!
//! A height without an entry in `ledger/events` (a ledger written before the feed was
//! stored) answers `None` from [`Ledger::events`]: not available, which is not the same as
//! a block that told nothing (an empty array).
//!
//! Serving blocks to peers reads stored bytes as they are ([`Ledger::raw_blocks`]): their
//! sizes bound the answer before anything is decoded.
//!
//! # The chain of validator-power changes
//!
//! The consensus driver tells [`Ledger::append_with_feed`] whether the block's execution
//! changed the validator powers (their list before and after it differ); the heights of
//! the blocks that did are kept in `ledger/power_changes` (height 0 stands for the genesis
//! powers and is never stored), written in the same transaction as the block. Outcome
//! proofs walk these blocks from their anchor ([`crate::proof`], [`Ledger::power_changes`]).
//! The record is only complete above `powers_unknown_through`: a ledger that held blocks
//! before the record existed starts it above its tip when opened, and a block appended
//! without saying ([`Ledger::append`]) moves the mark up to it. A walk from below the mark
//! is refused ([`LedgerError::NoPowerHistory`]), never built from a partial record.
//!
//! # Guarantees
//!
//! [`Ledger::append`] checks the block and its links, then writes the block, its hash, its
//! transaction index entries, the session outcomes it decides, its event feed, whether it
//! changed the validator powers, the final outcomes it let go of and the new tip in one sled
//! transaction across eight trees,
//! and flushes before returning: when it returns `Ok` the block is on disk, and when it
//! fails nothing was written. Appending a block the ledger already holds is `Ok` (replay
//! after a crash); a different block at a height already taken is
//! [`LedgerError::Conflict`].
//!
//! Every byte read back is decoded with the protocol's size-limited canonical decoder, so a
//! corrupted disk gives [`LedgerError::Corrupt`] (or, from [`Ledger::verify`],
//! [`LedgerError::Broken`] naming the height), never a panic.
//!
//! [`Signed::id`]: trust_protocol::Signed::id

mod append;
pub mod history;
mod prune;
pub mod restore;
mod verify;

#[cfg(test)]
mod tests;

use std::{
    path::Path,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use serde::{Deserialize, Serialize};
use trust_protocol::{
    DecodeError, Hash, MAX_MESSAGE_BYTES,
    block::{Block, BlockError, MAX_BLOCK_BYTES},
    encoding,
};

use trust_contracts::Outcome;

use crate::feed::FeedEvent;

pub use prune::{PRUNE_BATCH, PRUNE_PER_CALL, Pruned};
pub use verify::Adopt;

/// Largest commit certificate stored with a block. Together with [`MAX_BLOCK_BYTES`] it
/// keeps every encoded [`StoredBlock`] below the decoder's limit, so whatever was appended
/// can always be read back.
pub const MAX_CERTIFICATE_BYTES: usize = 1024 * 1024;

/// How many contract snapshots [`Ledger::put_snapshot`] keeps (the newest ones).
pub const SNAPSHOTS_KEPT: usize = 3;

/// Blocks indexed per write when an older ledger's hash index is built on open.
pub const BACKFILL_BATCH: u64 = 256;

// Block, certificate and their two length prefixes fit in one decodable message.
const _: () = assert!(MAX_BLOCK_BYTES + MAX_CERTIFICATE_BYTES + 64 <= MAX_MESSAGE_BYTES);

const BLOCKS_TREE: &str = "ledger/blocks";
const HASHES_TREE: &str = "ledger/hashes";
const TX_INDEX_TREE: &str = "ledger/tx_index";
const OUTCOMES_TREE: &str = "ledger/outcomes";
const SNAPSHOTS_TREE: &str = "ledger/snapshots";
const EVENTS_TREE: &str = "ledger/events";
const POWER_CHANGES_TREE: &str = "ledger/power_changes";
const FINALS_TREE: &str = "ledger/final";

/// Largest stored event feed of one block (JSON). A block's feed is bounded by its
/// transactions and seats far below this; a feed over it is not stored (and reads as not
/// available) rather than failing the block.
pub const MAX_FEED_BYTES: usize = 16 * 1024 * 1024;
const META_TREE: &str = "ledger/meta";

const CHAIN_KEY: &[u8] = b"chain";
const TIP_KEY: &[u8] = b"tip";
const HASHES_THROUGH_KEY: &[u8] = b"hashes_through";
const POWERS_UNKNOWN_THROUGH_KEY: &[u8] = b"powers_unknown_through";
/// The base a prune moved to (`ledger/meta`): blocks below it count as pruned, removed or
/// not yet ([`Ledger::prune`]).
const PRUNED_TO_KEY: &[u8] = b"pruned_to";

/// Why a ledger operation failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LedgerError {
    /// The block is malformed on its own (limits, `txs_root`, height 0).
    #[error(transparent)]
    Block(#[from] BlockError),
    /// The block belongs to another network than this ledger.
    #[error("block is for chain {got}, this ledger holds chain {expected}")]
    WrongChain {
        /// The ledger's chain id.
        expected: Hash,
        /// The block's.
        got: Hash,
    },
    /// The block is not at the height after the tip.
    #[error("block at height {height} does not extend the tip (expected height {expected})")]
    NotNext {
        /// The block's height.
        height: u64,
        /// The height the ledger expects next.
        expected: u64,
    },
    /// The block's `prev_hash` is not the tip's hash.
    #[error("block {height}: prev_hash {got} is not the tip hash {expected}")]
    WrongParent {
        /// The block's height.
        height: u64,
        /// The tip's hash ([`Hash::ZERO`] before the first block).
        expected: Hash,
        /// The block's `prev_hash`.
        got: Hash,
    },
    /// A different block is already stored at this height.
    #[error("block {height}: ledger holds {stored}, refusing the different block {offered}")]
    Conflict {
        /// The contested height.
        height: u64,
        /// Hash of the block the ledger holds.
        stored: Hash,
        /// Hash of the block offered.
        offered: Hash,
    },
    /// A transaction of the block does not decode as a signed transaction.
    #[error("block {height}, transaction {index} does not decode: {source}")]
    BadTx {
        /// The block's height.
        height: u64,
        /// Position of the transaction in the block.
        index: usize,
        /// The decoder's reason.
        #[source]
        source: DecodeError,
    },
    /// The same signed transaction is already in the ledger (or twice in the block).
    #[error("block {height}, transaction {index}: transaction {id} is already in the ledger")]
    DuplicateTx {
        /// The block's height.
        height: u64,
        /// Position of the transaction in the block.
        index: usize,
        /// Its id.
        id: Hash,
    },
    /// A session outcome was already decided by an earlier block.
    #[error("block {height}: session {session} was already decided at height {decided}")]
    DuplicateOutcome {
        /// The block's height.
        height: u64,
        /// The session.
        session: Hash,
        /// Height of the block that decided it first.
        decided: u64,
    },
    /// The commit certificate is larger than [`MAX_CERTIFICATE_BYTES`].
    #[error("commit certificate of {len} bytes exceeds the limit of {MAX_CERTIFICATE_BYTES}")]
    CertificateTooLarge {
        /// Its length.
        len: usize,
    },
    /// The block could not be encoded for storage.
    #[error("block does not encode: {0}")]
    Encode(#[source] DecodeError),
    /// A snapshot for a height the ledger has not reached.
    #[error("snapshot at height {height} is beyond the tip at height {tip}")]
    SnapshotAhead {
        /// The snapshot's height.
        height: u64,
        /// The tip height (0 before the first block).
        tip: u64,
    },
    /// Stored bytes do not decode (disk corruption or a foreign database).
    #[error("ledger tree {tree}, key {key}: corrupt entry: {reason}")]
    Corrupt {
        /// The tree holding the entry.
        tree: &'static str,
        /// The entry's key, readable (a height or a hash in hex).
        key: String,
        /// What is wrong with it.
        reason: String,
    },
    /// [`Ledger::verify`] found the chain broken at a height.
    #[error("ledger broken at height {height}: {reason}")]
    Broken {
        /// The first height that fails.
        height: u64,
        /// What is wrong there.
        reason: String,
    },
    /// The record of validator-power changes does not reach back far enough for a walk.
    #[error(
        "this node has no record of which blocks changed the validator powers up to block \
         {through} (its ledger holds blocks committed before it kept that record), so it \
         cannot walk them from block {from}: trust a block at or above {through}, or ask a \
         node that committed those blocks itself"
    )]
    NoPowerHistory {
        /// The height up to which changes were not recorded.
        through: u64,
        /// The height the walk was asked from.
        from: u64,
    },
    /// The block asked for is below the oldest this node keeps (`[ledger] keep_blocks`).
    #[error(
        "block {height} was pruned: this node keeps blocks from {oldest} on (an archive \
         node, one without `[ledger] keep_blocks`, keeps them all)"
    )]
    Pruned {
        /// The height asked for.
        height: u64,
        /// The oldest block kept.
        oldest: u64,
    },
    /// The database failed.
    #[error("ledger store: {0}")]
    Db(#[from] sled::Error),
}

/// A decided block as the ledger keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredBlock {
    /// The block.
    pub block: Block,
    /// The BFT commit certificate that decided it, opaque to the ledger (filled in by the
    /// consensus driver).
    pub certificate: Vec<u8>,
}

/// What [`Ledger::verify`] checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VerifyReport {
    /// The first block walked: 1, or a pruned ledger's base (0: no block).
    pub oldest: u64,
    /// The last block walked (the tip height).
    pub blocks: u64,
    /// Transactions in them.
    pub txs: u64,
    /// Hash of the last block ([`Hash::ZERO`] for an empty ledger).
    pub tip_hash: Hash,
}

/// An index of the ledger keyed by an id ([`Ledger::ids_between`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IdIndex {
    /// Block hashes ([`Ledger::height_of`]).
    BlockHash,
    /// Transaction ids ([`Ledger::tx_location`]).
    Tx,
    /// Sessions whose final outcome the ledger keeps ([`Ledger::final_outcome`]).
    FinalOutcome,
}

/// The append-only ledger. Cloning gives another handle to the same trees.
#[derive(Debug, Clone)]
pub struct Ledger {
    db: sled::Db,
    blocks: sled::Tree,
    hashes: sled::Tree,
    tx_index: sled::Tree,
    outcomes: sled::Tree,
    snapshots: sled::Tree,
    events: sled::Tree,
    power_changes: sled::Tree,
    meta: sled::Tree,
    finals: sled::Tree,
    /// Blocks decoded through this handle and its clones (what reads cost).
    decoded: Arc<AtomicU64>,
    /// Blocks to keep when pruning (0: keep every block), shared by the clones.
    keep_blocks: Arc<AtomicU64>,
}

impl Ledger {
    /// Opens (or creates) a ledger in its own sled database at `path`. The chain id is
    /// taken from the first block appended, unless it was set already.
    pub fn open(path: &Path) -> Result<Ledger, LedgerError> {
        Ledger::from_db(&sled::open(path)?)
    }

    /// Prunes to the last `keep` blocks at each snapshot from now on (`None`: keep every
    /// block, the default); see [`Ledger::prune`].
    pub fn set_keep_blocks(&self, keep: Option<u64>) {
        self.keep_blocks.store(keep.unwrap_or(0), Ordering::Relaxed);
    }

    /// The pruning setting ([`Ledger::set_keep_blocks`]).
    pub fn keep_blocks(&self) -> Option<u64> {
        Some(self.keep_blocks.load(Ordering::Relaxed)).filter(|k| *k > 0)
    }

    /// The lowest height whose block this ledger holds (`None`: no block yet): its base
    /// once it was pruned ([`Ledger::prune`]), even while blocks below the base still wait
    /// to be removed.
    pub fn oldest_block(&self) -> Result<Option<u64>, LedgerError> {
        let Some(first) = self.first_stored()? else {
            return Ok(None);
        };
        let marked = self
            .meta
            .get(PRUNED_TO_KEY)?
            .and_then(|b| encoding::decode::<u64>(&b).ok())
            .unwrap_or(0);
        Ok(Some(first.max(marked)))
    }

    /// The lowest height with a block stored (below the base while a prune is unfinished).
    fn first_stored(&self) -> Result<Option<u64>, LedgerError> {
        Ok(self
            .blocks
            .first()?
            .and_then(|(k, _)| <[u8; 8]>::try_from(k.as_ref()).ok())
            .map(u64::from_be_bytes))
    }

    /// Bytes the database holding this ledger takes on disk (0 if the file system does
    /// not say).
    pub fn disk_bytes(&self) -> u64 {
        self.db.size_on_disk().unwrap_or(0)
    }

    /// Opens (or creates) a ledger at `path` for `chain`: a new ledger records the chain
    /// id at once; an existing one must hold the same chain.
    pub fn open_with_chain(path: &Path, chain: Hash) -> Result<Ledger, LedgerError> {
        let ledger = Ledger::open(path)?;
        ledger.set_chain(chain)?;
        Ok(ledger)
    }

    /// Opens (or creates) the ledger's trees in a database shared with other subsystems,
    /// and indexes by hash the blocks of a ledger written before that index existed.
    pub fn from_db(db: &sled::Db) -> Result<Ledger, LedgerError> {
        let ledger = Ledger {
            db: db.clone(),
            blocks: db.open_tree(BLOCKS_TREE)?,
            hashes: db.open_tree(HASHES_TREE)?,
            tx_index: db.open_tree(TX_INDEX_TREE)?,
            outcomes: db.open_tree(OUTCOMES_TREE)?,
            snapshots: db.open_tree(SNAPSHOTS_TREE)?,
            events: db.open_tree(EVENTS_TREE)?,
            power_changes: db.open_tree(POWER_CHANGES_TREE)?,
            meta: db.open_tree(META_TREE)?,
            finals: db.open_tree(FINALS_TREE)?,
            decoded: Arc::new(AtomicU64::new(0)),
            keep_blocks: Arc::new(AtomicU64::new(0)),
        };
        ledger.backfill_hashes()?;
        ledger.start_power_record()?;
        Ok(ledger)
    }

    /// Starts the record of validator-power changes of a ledger that has none: complete
    /// from genesis for an empty ledger, from above the tip for one that holds blocks
    /// already (their changes were not recorded).
    fn start_power_record(&self) -> Result<(), LedgerError> {
        if self.meta.get(POWERS_UNKNOWN_THROUGH_KEY)?.is_some() {
            return Ok(());
        }
        let tip = self.tip()?.map_or(0, |(h, _)| h);
        self.meta
            .insert(POWERS_UNKNOWN_THROUGH_KEY, encoding::encode(&tip))?;
        self.db.flush()?;
        Ok(())
    }

    /// The height up to which this ledger has no record of validator-power changes (0:
    /// the record is complete from genesis).
    pub fn powers_unknown_through(&self) -> Result<u64, LedgerError> {
        self.meta
            .get(POWERS_UNKNOWN_THROUGH_KEY)?
            .map(|b| decode_meta_height("powers_unknown_through", &b))
            .transpose()
            .map(Option::unwrap_or_default)
    }

    /// The heights of the blocks above `from` and below `to` whose execution changed the
    /// validator powers, ascending: what a walk from the powers after block `from` (0:
    /// genesis) to the powers certifying block `to` must step through. Refused when the
    /// record does not reach back to `from` ([`LedgerError::NoPowerHistory`]).
    pub fn power_changes(&self, from: u64, to: u64) -> Result<Vec<u64>, LedgerError> {
        let through = self.powers_unknown_through()?;
        if from < through {
            return Err(LedgerError::NoPowerHistory { through, from });
        }
        let lo = from.saturating_add(1);
        if lo >= to {
            return Ok(Vec::new());
        }
        self.power_changes
            .range(height_key(lo)..height_key(to))
            .keys()
            .map(|k| parse_height_key(POWER_CHANGES_TREE, &k?))
            .collect()
    }

    /// Indexes the hashes of the blocks above `hashes_through`, in batches, each batch
    /// recording how far it got.
    fn backfill_hashes(&self) -> Result<(), LedgerError> {
        let tip = self.tip()?.map_or(0, |(h, _)| h);
        let mut done = match self.meta.get(HASHES_THROUGH_KEY)? {
            Some(b) => decode_height_meta(&b)?,
            // A fresh ledger's appends index themselves; an old one starts at 0.
            None if tip == 0 => {
                self.meta
                    .insert(HASHES_THROUGH_KEY, encoding::encode(&0u64))?;
                return Ok(());
            }
            None => 0,
        };
        while done < tip {
            let end = done.saturating_add(BACKFILL_BATCH).min(tip);
            let mut batch = sled::Batch::default();
            for h in done.saturating_add(1)..=end {
                if let Some(b) = self.block(h)? {
                    batch.insert(b.block.hash().as_bytes(), &height_key(h));
                }
            }
            self.hashes.apply_batch(batch)?;
            self.meta
                .insert(HASHES_THROUGH_KEY, encoding::encode(&end))?;
            done = end;
        }
        self.db.flush()?;
        Ok(())
    }

    /// The event feed of the block at `height`, in feed order; `None` when this ledger does
    /// not hold it (no such block, or one stored before feeds were).
    pub fn events(&self, height: u64) -> Result<Option<Vec<FeedEvent>>, LedgerError> {
        let Some(bytes) = self.events.get(height_key(height))? else {
            return Ok(None);
        };
        serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| LedgerError::Corrupt {
                tree: EVENTS_TREE,
                key: height.to_string(),
                reason: e.to_string(),
            })
    }

    /// Height of the block whose hash is `hash`, in one read of the hash index.
    pub fn height_of(&self, hash: &Hash) -> Result<Option<u64>, LedgerError> {
        self.hashes
            .get(hash.as_bytes())?
            .map(|k| parse_height_key(HASHES_TREE, &k))
            .transpose()
    }

    /// The stored block whose hash is `hash`.
    pub fn block_by_hash(&self, hash: &Hash) -> Result<Option<StoredBlock>, LedgerError> {
        match self.height_of(hash)? {
            Some(h) => Ok(self.block(h)?.filter(|b| b.block.hash() == *hash)),
            None => Ok(None),
        }
    }

    /// The stored bytes (a canonically encoded [`StoredBlock`]) of up to `max` blocks from
    /// height `from`, whose lengths sum to at most `budget`: it stops before the first
    /// block that would go over, or the first height it does not hold. Nothing is decoded.
    pub fn raw_blocks(
        &self,
        from: u64,
        max: u32,
        budget: usize,
    ) -> Result<Vec<Vec<u8>>, LedgerError> {
        let mut out = Vec::new();
        let mut used = 0usize;
        for h in from..from.saturating_add(u64::from(max)) {
            let Some(bytes) = self.blocks.get(height_key(h))? else {
                break;
            };
            used = used.saturating_add(bytes.len());
            if used > budget {
                break;
            }
            out.push(bytes.to_vec());
        }
        Ok(out)
    }

    /// Blocks decoded through this ledger handle and its clones since it was opened.
    pub fn blocks_decoded(&self) -> u64 {
        self.decoded.load(Ordering::Relaxed)
    }

    /// Records the chain id of an empty ledger, or checks it against the recorded one.
    pub fn set_chain(&self, chain: Hash) -> Result<(), LedgerError> {
        let swapped =
            self.meta
                .compare_and_swap(CHAIN_KEY, None::<&[u8]>, Some(encoding::encode(&chain)))?;
        match swapped {
            Ok(()) => {
                self.db.flush()?;
                Ok(())
            }
            Err(current) => {
                let expected = decode_chain(current.current.as_deref())?;
                match expected {
                    Some(expected) if expected != chain => Err(LedgerError::WrongChain {
                        expected,
                        got: chain,
                    }),
                    _ => Ok(()),
                }
            }
        }
    }

    /// The chain id, once set.
    pub fn chain(&self) -> Result<Option<Hash>, LedgerError> {
        decode_chain(self.meta.get(CHAIN_KEY)?.as_deref())
    }

    /// Height and hash of the last block, or `None` before the first.
    pub fn tip(&self) -> Result<Option<(u64, Hash)>, LedgerError> {
        decode_tip(self.meta.get(TIP_KEY)?.as_deref())
    }

    /// The stored block at `height`.
    pub fn block(&self, height: u64) -> Result<Option<StoredBlock>, LedgerError> {
        self.blocks
            .get(height_key(height))?
            .map(|bytes| {
                self.decoded.fetch_add(1, Ordering::Relaxed);
                decode_block(height, &bytes)
            })
            .transpose()
    }

    /// Where a signed transaction sits: the height of its block and its position there.
    pub fn tx_location(&self, id: &Hash) -> Result<Option<(u64, u32)>, LedgerError> {
        self.tx_index
            .get(id.as_bytes())?
            .map(|bytes| decode_tx_location(id, &bytes))
            .transpose()
    }

    /// The ids `index` holds from `lo` to `hi` (both included), in order, at most
    /// `limit` of them: what a search for the start of an id reads (`lo` and `hi` are the
    /// prefix padded with zeros and with ones). One seek, then at most `limit` keys,
    /// however many the index holds.
    pub fn ids_between(
        &self,
        index: IdIndex,
        lo: &Hash,
        hi: &Hash,
        limit: usize,
    ) -> Result<Vec<Hash>, LedgerError> {
        let (tree, name) = match index {
            IdIndex::BlockHash => (&self.hashes, HASHES_TREE),
            IdIndex::Tx => (&self.tx_index, TX_INDEX_TREE),
            IdIndex::FinalOutcome => (&self.finals, FINALS_TREE),
        };
        let mut out = Vec::new();
        for kv in tree
            .range::<&[u8], _>(lo.as_bytes().as_slice()..=hi.as_bytes().as_slice())
            .take(limit)
        {
            let (key, _) = kv?;
            let id = <[u8; 32]>::try_from(key.as_ref()).map_err(|_| LedgerError::Corrupt {
                tree: name,
                key: hex::encode(&key),
                reason: format!("key of {} bytes is not an id", key.len()),
            })?;
            out.push(Hash(id));
        }
        Ok(out)
    }

    /// Height of the block that decided a session, once decided.
    pub fn outcome_height(&self, session: &Hash) -> Result<Option<u64>, LedgerError> {
        self.outcomes
            .get(session.as_bytes())?
            .map(|bytes| decode_outcome(session, &bytes))
            .transpose()
    }

    /// A session's final outcome once the contract state let it go, as the block that made
    /// it final left it (`None`: still in the state, unknown, or let go before this
    /// ledger's first block). The contract state holds an outcome
    /// [`trust_contracts::Params::outcome_retention`] blocks after it became final; this
    /// record stays.
    pub fn final_outcome(&self, session: &Hash) -> Result<Option<Outcome>, LedgerError> {
        self.finals
            .get(session.as_bytes())?
            .map(|bytes| {
                encoding::decode::<Outcome>(&bytes).map_err(|e| LedgerError::Corrupt {
                    tree: FINALS_TREE,
                    key: session.to_string(),
                    reason: e.to_string(),
                })
            })
            .transpose()
    }

    /// Stores the contract state after the block at `height` (0: the genesis state) and
    /// flushes. Only the newest [`SNAPSHOTS_KEPT`] snapshots are kept (and a pruned
    /// ledger's base); a snapshot older than all of those is dropped at once. With pruning
    /// on ([`Ledger::set_keep_blocks`]) every snapshot from the base up is kept and the
    /// ledger is pruned ([`Ledger::prune`]). A snapshot at a height already held replaces it.
    pub fn put_snapshot(&self, height: u64, state: &[u8]) -> Result<(), LedgerError> {
        let tip = self.tip()?.map_or(0, |(h, _)| h);
        if height > tip {
            return Err(LedgerError::SnapshotAhead { height, tip });
        }
        // Pruning keeps every snapshot from its base up and drops the rest itself.
        if let Some(keep) = self.keep_blocks() {
            self.snapshots.insert(height_key(height), state)?;
            self.prune(keep)?;
            self.db.flush()?;
            return Ok(());
        }
        let mut heights = vec![height];
        for key in self.snapshots.iter().keys() {
            heights.push(parse_height_key(SNAPSHOTS_TREE, &key?)?);
        }
        heights.sort_unstable_by(|a, b| b.cmp(a));
        heights.dedup();
        let mut batch = sled::Batch::default();
        let dropped = heights.get(SNAPSHOTS_KEPT..).unwrap_or_default();
        if !dropped.contains(&height) {
            batch.insert(&height_key(height), state);
        }
        // A pruned ledger's base snapshot is what it verifies and restores from: kept.
        let base = self.oldest_block()?.filter(|h| *h > 1);
        for old in dropped.iter().filter(|&&h| h != height && Some(h) != base) {
            batch.remove(&height_key(*old));
        }
        self.snapshots.apply_batch(batch)?;
        self.db.flush()?;
        Ok(())
    }

    /// The newest snapshot and its height.
    pub fn latest_snapshot(&self) -> Result<Option<(u64, Vec<u8>)>, LedgerError> {
        match self.snapshots.last()? {
            None => Ok(None),
            Some((key, state)) => Ok(Some((
                parse_height_key(SNAPSHOTS_TREE, &key)?,
                state.to_vec(),
            ))),
        }
    }

    /// The newest snapshot at or below `height`, and its height.
    pub fn snapshot_at_or_below(&self, height: u64) -> Result<Option<(u64, Vec<u8>)>, LedgerError> {
        match self.snapshots.range(..=height_key(height)).next_back() {
            None => Ok(None),
            Some(kv) => {
                let (key, state) = kv?;
                Ok(Some((
                    parse_height_key(SNAPSHOTS_TREE, &key)?,
                    state.to_vec(),
                )))
            }
        }
    }

    /// The stored blocks from height `from` on, in height order.
    pub fn iter_blocks(
        &self,
        from: u64,
    ) -> impl Iterator<Item = Result<StoredBlock, LedgerError>> + use<> {
        let decoded = self.decoded.clone();
        self.blocks.range(height_key(from)..).map(move |kv| {
            let (key, bytes) = kv?;
            decoded.fetch_add(1, Ordering::Relaxed);
            decode_block(parse_height_key(BLOCKS_TREE, &key)?, &bytes)
        })
    }

    /// Writes everything to disk (appends and snapshots already flush).
    pub fn flush(&self) -> Result<(), LedgerError> {
        self.db.flush()?;
        Ok(())
    }
}

fn height_key(height: u64) -> [u8; 8] {
    height.to_be_bytes()
}

fn parse_height_key(tree: &'static str, key: &[u8]) -> Result<u64, LedgerError> {
    <[u8; 8]>::try_from(key)
        .map(u64::from_be_bytes)
        .map_err(|_| LedgerError::Corrupt {
            tree,
            key: hex::encode(key),
            reason: format!("key of {} bytes is not a big-endian height", key.len()),
        })
}

/// Decodes the block stored at `height`, checking it claims that height.
fn decode_block(height: u64, bytes: &[u8]) -> Result<StoredBlock, LedgerError> {
    let corrupt = |reason: String| LedgerError::Corrupt {
        tree: BLOCKS_TREE,
        key: height.to_string(),
        reason,
    };
    let stored: StoredBlock = encoding::decode(bytes).map_err(|e| corrupt(e.to_string()))?;
    if stored.block.header.height != height {
        return Err(corrupt(format!(
            "holds a block with height {}",
            stored.block.header.height
        )));
    }
    Ok(stored)
}

fn decode_tx_location(id: &Hash, bytes: &[u8]) -> Result<(u64, u32), LedgerError> {
    encoding::decode(bytes).map_err(|e| LedgerError::Corrupt {
        tree: TX_INDEX_TREE,
        key: id.to_hex(),
        reason: e.to_string(),
    })
}

fn decode_outcome(session: &Hash, bytes: &[u8]) -> Result<u64, LedgerError> {
    encoding::decode(bytes).map_err(|e| LedgerError::Corrupt {
        tree: OUTCOMES_TREE,
        key: session.to_hex(),
        reason: e.to_string(),
    })
}

fn decode_chain(bytes: Option<&[u8]>) -> Result<Option<Hash>, LedgerError> {
    bytes
        .map(|b| {
            encoding::decode::<Hash>(b).map_err(|e| LedgerError::Corrupt {
                tree: META_TREE,
                key: "chain".into(),
                reason: e.to_string(),
            })
        })
        .transpose()
}

fn decode_height_meta(bytes: &[u8]) -> Result<u64, LedgerError> {
    decode_meta_height("hashes_through", bytes)
}

fn decode_meta_height(key: &str, bytes: &[u8]) -> Result<u64, LedgerError> {
    encoding::decode::<u64>(bytes).map_err(|e| LedgerError::Corrupt {
        tree: META_TREE,
        key: key.into(),
        reason: e.to_string(),
    })
}

fn decode_tip(bytes: Option<&[u8]>) -> Result<Option<(u64, Hash)>, LedgerError> {
    bytes
        .map(|b| {
            encoding::decode::<(u64, Hash)>(b).map_err(|e| LedgerError::Corrupt {
                tree: META_TREE,
                key: "tip".into(),
                reason: e.to_string(),
            })
        })
        .transpose()
}
