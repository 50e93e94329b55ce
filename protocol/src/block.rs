//! Blocks of the ledger.
//!
//! A block carries its transactions as the canonical bytes of each signed transaction,
//! as submitted. Consensus orders bytes; the contract decodes and checks each one when it
//! applies the block, and a transaction that fails is recorded as failed without stopping
//! the block. That keeps ordering independent of the transaction set and lets every node
//! hash exactly what was agreed on.
//!
//! The header commits to the transactions (`txs_root`), to the previous block
//! (`prev_hash`, forming the hash chain) and to the contract state after this block
//! (`state_root`), so a node replaying the ledger can check every step.
//!
//! # Block time
//!
//! Every header carries the Unix time in milliseconds its proposer stamped (`time_ms`),
//! under this rule (BFT time):
//!
//! 1. the proposer stamps its own clock, or one millisecond after the parent block's time
//!    when its clock is not past it ([`next_block_time`]);
//! 2. every node executing the block, now or when it replays or syncs the chain, refuses a
//!    time not strictly after the parent's (monotonic; `chain::execute_block` in the node);
//! 3. a validator voting on a proposal refuses one stamped more than
//!    [`MAX_CLOCK_AHEAD_MS`] ahead of its own clock (the node's consensus driver), and
//!    votes nil.
//!
//! So a block's time is never earlier than its parent's, and never later than the clock of
//! the validators that certified it allowed. A proposer can stamp a time in the past, but
//! not before its parent's: with more than 2/3 of the power honest and clocks within a few
//! seconds of each other, a decided block's time lies between its parent's and the
//! honest validators' clocks plus the bound.

use serde::{Deserialize, Serialize};

use crate::{Hash, PublicKey, encoding};

/// Most transactions in one block.
pub const MAX_BLOCK_TXS: usize = 10_000;
/// Largest encoded transaction accepted anywhere (gossip, mempool, block).
pub const MAX_TX_BYTES: usize = 128 * 1024;
/// Largest encoded block; below [`encoding::MAX_MESSAGE_BYTES`] so a block with its
/// certificate always fits one message.
pub const MAX_BLOCK_BYTES: usize = 2 * 1024 * 1024;
/// Most a proposed block's time may run ahead of a validator's clock (see "Block time").
pub const MAX_CLOCK_AHEAD_MS: u64 = 5_000;

/// The time a proposer stamps on a block over a parent stamped `parent_ms`: its own clock
/// `clock_ms`, or `parent_ms + 1` when its clock is not past the parent's.
pub fn next_block_time(parent_ms: u64, clock_ms: u64) -> u64 {
    clock_ms.max(parent_ms.saturating_add(1))
}

/// The header of a block: everything the hash chain commits to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockHeader {
    /// Hash of the genesis document: blocks of one network never verify on another.
    pub chain: Hash,
    /// Height, starting at 1.
    pub height: u64,
    /// Hash of the block at `height - 1` ([`Hash::ZERO`] at height 1).
    pub prev_hash: Hash,
    /// When the proposer stamped the block: Unix time in milliseconds, strictly after the
    /// parent's (see "Block time" above).
    pub time_ms: u64,
    /// [`txs_root`] of the transactions.
    pub txs_root: Hash,
    /// Contract state root after applying this block and its end-of-block step.
    pub state_root: Hash,
    /// The validator that proposed the block.
    pub proposer: PublicKey,
}

/// A block: header plus the canonical bytes of each signed transaction.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Block {
    /// The header.
    pub header: BlockHeader,
    /// Transactions in execution order.
    pub txs: Vec<Vec<u8>>,
}

/// Why a block is malformed on its own (before any contract execution).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// More than [`MAX_BLOCK_TXS`] transactions.
    #[error("block has {0} transactions, more than the limit of {MAX_BLOCK_TXS}")]
    TooManyTxs(usize),
    /// A transaction is larger than [`MAX_TX_BYTES`].
    #[error("transaction {index} has {len} bytes, more than the limit of {MAX_TX_BYTES}")]
    TxTooLarge {
        /// Position in the block.
        index: usize,
        /// Its length.
        len: usize,
    },
    /// The encoded block is larger than [`MAX_BLOCK_BYTES`].
    #[error("block of {0} bytes exceeds the limit of {MAX_BLOCK_BYTES} bytes")]
    TooLarge(usize),
    /// `txs_root` does not match the transactions.
    #[error("block {height}: txs_root does not match its transactions")]
    TxsRootMismatch {
        /// Height of the block.
        height: u64,
    },
    /// Height 0 is not a block.
    #[error("block height must start at 1")]
    ZeroHeight,
}

/// `H("trust/v1/txs-root", tx_1, ..., tx_n)`: commits to the order and bytes of every
/// transaction (each part is length-prefixed by [`Hash::of_parts`]).
pub fn txs_root(txs: &[Vec<u8>]) -> Hash {
    let parts: Vec<&[u8]> = txs.iter().map(Vec::as_slice).collect();
    Hash::of_parts("trust/v1/txs-root", &parts)
}

impl BlockHeader {
    /// The block hash: a hash of the canonical encoding of the header.
    pub fn hash(&self) -> Hash {
        Hash::of_parts("trust/v1/block-header", &[&encoding::encode(self)])
    }

    /// The randomness the contract draws seats and slashes with while executing this
    /// block: `H(chain, height, prev_hash)`.
    ///
    /// Why only these: every one of them is fixed before this block's proposer picks a
    /// single transaction. The transactions (`txs_root`), the proposer's key and the state
    /// root are left out on purpose: a proposer choosing, dropping or reordering
    /// transactions could otherwise try seed after seed (one hash each) and keep the block
    /// that seats its own auditors. With this seed the proposer of the drawing block has no
    /// choice at all, and a round change to another proposer gives the same seed.
    ///
    /// What is left: `prev_hash` is the hash of the block before, whose proposer chose its
    /// contents. That proposer can bias the draws of sessions already waiting to be seated
    /// one block later by trying contents for its own block, at the price of executing
    /// each candidate within its propose timeout and only while it holds the proposer
    /// slot. Closing that needs randomness no single validator can choose (a VRF output of
    /// the proposer or a threshold signature in the header); see README, Security.
    pub fn seed(&self) -> Hash {
        seed_for(&self.chain, self.height, &self.prev_hash)
    }
}

/// The seed of the block at `height` on `chain` over the block `prev_hash`
/// ([`BlockHeader::seed`]): known to everyone as soon as the parent is decided, which is
/// what lets a provider compute the seats the block will draw before it is proposed.
pub fn seed_for(chain: &Hash, height: u64, prev_hash: &Hash) -> Hash {
    Hash::of_parts(
        "trust/v1/block-seed",
        &[chain.as_ref(), &height.to_le_bytes(), prev_hash.as_ref()],
    )
}

impl Block {
    /// Builds a block over `txs`, filling in `txs_root`.
    pub fn new(
        chain: Hash,
        height: u64,
        prev_hash: Hash,
        time_ms: u64,
        state_root: Hash,
        proposer: PublicKey,
        txs: Vec<Vec<u8>>,
    ) -> Block {
        Block {
            header: BlockHeader {
                chain,
                height,
                prev_hash,
                time_ms,
                txs_root: txs_root(&txs),
                state_root,
                proposer,
            },
            txs,
        }
    }

    /// The block hash (the header's hash).
    pub fn hash(&self) -> Hash {
        self.header.hash()
    }

    /// Checks limits and that `txs_root` matches. Hash-chain links are checked by the
    /// ledger, which knows the previous block.
    pub fn check(&self) -> Result<(), BlockError> {
        if self.header.height == 0 {
            return Err(BlockError::ZeroHeight);
        }
        if self.txs.len() > MAX_BLOCK_TXS {
            return Err(BlockError::TooManyTxs(self.txs.len()));
        }
        if let Some((index, tx)) = self
            .txs
            .iter()
            .enumerate()
            .find(|(_, tx)| tx.len() > MAX_TX_BYTES)
        {
            return Err(BlockError::TxTooLarge {
                index,
                len: tx.len(),
            });
        }
        let size = encoding::encode(self).len();
        if size > MAX_BLOCK_BYTES {
            return Err(BlockError::TooLarge(size));
        }
        if txs_root(&self.txs) != self.header.txs_root {
            return Err(BlockError::TxsRootMismatch {
                height: self.header.height,
            });
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Keypair;

    fn sample() -> Block {
        Block::new(
            Hash::sha256(b"genesis"),
            1,
            Hash::ZERO,
            1_000,
            Hash::sha256(b"state"),
            Keypair::from_label("v0").public(),
            vec![b"tx-a".to_vec(), b"tx-b".to_vec()],
        )
    }

    #[test]
    fn round_trip_and_check() {
        let b = sample();
        assert_eq!(b.check(), Ok(()));
        let back: Block = encoding::decode(&encoding::encode(&b)).expect("decodes");
        assert_eq!(back, b);
        assert_eq!(back.hash(), b.hash());
    }

    #[test]
    fn hash_commits_to_every_field() {
        let b = sample();
        let mut c = b.clone();
        c.header.state_root = Hash::sha256(b"other");
        assert_ne!(b.hash(), c.hash());
        let mut d = b.clone();
        d.header.prev_hash = Hash::sha256(b"p");
        assert_ne!(b.hash(), d.hash());
    }

    /// The seed is fixed by the chain and the block before: a proposer changing its
    /// transactions, or another proposer taking the round, draws the same seats.
    #[test]
    fn seed_is_fixed_before_the_proposer_picks_transactions() {
        let b = sample();
        let mut c = b.clone();
        c.header.state_root = Hash::sha256(b"other");
        c.header.txs_root = Hash::sha256(b"t");
        c.header.proposer = Keypair::from_label("v1").public();
        c.txs.clear();
        assert_eq!(b.header.seed(), c.header.seed());
        let mut d = b.clone();
        d.header.prev_hash = Hash::sha256(b"p");
        assert_ne!(b.header.seed(), d.header.seed());
        let mut e = b.clone();
        e.header.height = 2;
        assert_ne!(b.header.seed(), e.header.seed());
        assert_ne!(b.header.seed(), b.hash());
    }

    #[test]
    fn tampered_txs_detected() {
        let mut b = sample();
        b.txs.swap(0, 1);
        assert_eq!(b.check(), Err(BlockError::TxsRootMismatch { height: 1 }));
        let mut z = sample();
        z.header.height = 0;
        assert_eq!(z.check(), Err(BlockError::ZeroHeight));
    }

    #[test]
    fn oversized_tx_rejected() {
        let b = Block::new(
            Hash::ZERO,
            1,
            Hash::ZERO,
            1_000,
            Hash::ZERO,
            Keypair::from_label("v").public(),
            vec![vec![0u8; MAX_TX_BYTES + 1]],
        );
        assert!(matches!(
            b.check(),
            Err(BlockError::TxTooLarge { index: 0, .. })
        ));
    }
}
