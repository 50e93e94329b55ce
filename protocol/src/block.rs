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
//! (`state_root`), so a node replaying the ledger can check every step. It also carries
//! the proof of the block's seed (`vrf`, see "Block seed").
//!
//! # Block seed
//!
//! The contract's only randomness (seat draws, slash draws) is the executing block's seed,
//! a chain of VRF outputs ([`crate::vrf`]) of the blocks' proposers:
//!
//! - `seed(0) = H("trust/v1/genesis-seed", chain)` ([`genesis_seed`]);
//! - `seed(h) = H("trust/v1/block-seed", chain, h, beta(h))` ([`BlockHeader::seed`]), where
//!   `beta(h)` is the output of the VRF of block `h`'s proposer over the input
//!   `(chain, h, seed(h - 1))` ([`seed_input`]), and the header's `vrf` is its proof.
//!
//! Every node that executes a block (validating a proposal, applying a decided or synced
//! block, replaying the ledger) checks the proof against the header's proposer and the
//! parent's seed ([`BlockHeader::verify_seed`]) and refuses the block when it fails.
//!
//! What this gives:
//!
//! - **Nobody grinds the seed.** A VRF output is unique per key and input, and the input
//!   is fixed by the parent's seed, so the proposer of block `h` has no choice of
//!   `seed(h)`: not by its transactions, nor its time, nor anything else in its block (none
//!   of it is hashed into the seed). The proposer of block `h - 1` has no lever either:
//!   whatever it puts in its block (time, transactions) leaves `seed(h - 1)`, and so
//!   `seed(h)`, as they were.
//! - **Nobody knows it early.** Before block `h` is proposed, only its proposer can compute
//!   `seed(h)`; sessions opened in block `h - 1` are drawn in block `h`, so their seats are
//!   known to the provider once block `h` is decided, and its keys land in block `h + 1`.
//!
//! What is left:
//!
//! - **Withholding.** A proposer that dislikes its own seed can decline to propose; after
//!   the round's timeout the next round's proposer, with another key, gives another seed.
//!   Each such try costs a round timeout and offers one other seed, not a free choice.
//! - **Look-ahead of colluding proposers.** The proposer of block `h` knows `seed(h)` as
//!   soon as block `h - 1` is decided, and while it builds block `h`. Colluding with the
//!   proposer of block `h - 1` (or proposing both), it learns `seed(h)` one block early and
//!   can choose which openings or bonds block `h - 1` includes (so which draws `seed(h)`
//!   makes), at the price of censoring the others for a block. And a proposer knows the
//!   slash draws its own block's end will make while it picks the block's transactions
//!   (seats are drawn before any transaction, [`BlockHeader::seed`]).
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

use crate::{
    Hash, Keypair, PublicKey, encoding,
    vrf::{self, VrfError, VrfOutput, VrfProof},
};

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
    /// The proposer's VRF proof of the block's seed over `(chain, height, parent's seed)`
    /// (see "Block seed").
    pub vrf: VrfProof,
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
    /// block: `H("trust/v1/block-seed", chain, height, beta)`, with `beta` the output of the
    /// header's VRF proof (see "Block seed"). The proof is read, not checked: a header's
    /// seed counts only once [`BlockHeader::verify_seed`] accepted it, as execution does.
    ///
    /// Nothing the proposer picks enters it: not the transactions (`txs_root`), the time,
    /// the state root, the parent's hash nor the block hash. The contract draws a block's
    /// seats at its start, before its transactions, so even the proposer, which knows the
    /// seed while it builds the block, cannot sway the draw with a transaction of its own
    /// block (a bond, a registration).
    pub fn seed(&self) -> Hash {
        seed_of(&self.chain, self.height, self.vrf.output())
    }

    /// Checks the header's VRF proof: made by `proposer` over `(chain, height,
    /// parent_seed)`. Returns the block's seed.
    pub fn verify_seed(&self, parent_seed: &Hash) -> Result<Hash, VrfError> {
        let alpha = seed_input(&self.chain, self.height, parent_seed);
        let output = self.vrf.verify(&self.proposer, &alpha)?;
        Ok(seed_of(&self.chain, self.height, &output))
    }
}

/// The seed before the first block of `chain`: `H("trust/v1/genesis-seed", chain)`.
pub fn genesis_seed(chain: &Hash) -> Hash {
    Hash::of_parts("trust/v1/genesis-seed", &[chain.as_ref()])
}

/// The VRF input of the block at `height` on `chain` over a parent of seed `parent_seed`:
/// the tag `trust/v1/block-vrf-input`, then the chain, the height (little-endian) and the
/// parent's seed (fixed lengths, so the bytes name one triple).
pub fn seed_input(chain: &Hash, height: u64, parent_seed: &Hash) -> Vec<u8> {
    let mut alpha = b"trust/v1/block-vrf-input".to_vec();
    alpha.extend_from_slice(chain.as_ref());
    alpha.extend_from_slice(&height.to_le_bytes());
    alpha.extend_from_slice(parent_seed.as_ref());
    alpha
}

/// The proof a proposer holding `key` puts in the header of the block at `height` on
/// `chain` over a parent of seed `parent_seed` (its seed is then fixed: see "Block seed").
pub fn prove_seed(
    key: &Keypair,
    chain: &Hash,
    height: u64,
    parent_seed: &Hash,
) -> Result<VrfProof, VrfError> {
    vrf::prove(key, &seed_input(chain, height, parent_seed))
}

fn seed_of(chain: &Hash, height: u64, output: &VrfOutput) -> Hash {
    Hash::of_parts(
        "trust/v1/block-seed",
        &[chain.as_ref(), &height.to_le_bytes(), output.as_ref()],
    )
}

impl Block {
    /// Builds a block over `txs`, filling in `txs_root`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        chain: Hash,
        height: u64,
        prev_hash: Hash,
        time_ms: u64,
        state_root: Hash,
        proposer: PublicKey,
        vrf: VrfProof,
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
                vrf,
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
    use std::collections::BTreeSet;

    use super::*;

    const CHAIN: Hash = Hash([9; 32]);

    /// Block `height` over `parent` (of seed `parent_seed`), proposed by `key`.
    fn block(
        key: &Keypair,
        height: u64,
        parent: &Hash,
        parent_seed: &Hash,
        time_ms: u64,
        txs: Vec<Vec<u8>>,
    ) -> Block {
        Block::new(
            CHAIN,
            height,
            *parent,
            time_ms,
            Hash::sha256(b"state"),
            key.public(),
            prove_seed(key, &CHAIN, height, parent_seed).unwrap(),
            txs,
        )
    }

    fn sample() -> Block {
        block(
            &Keypair::from_label("v0"),
            1,
            &Hash::ZERO,
            &genesis_seed(&CHAIN),
            1_000,
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
        let mut e = b.clone();
        e.header.vrf = prove_seed(&Keypair::from_label("v0"), &CHAIN, 1, &Hash::ZERO).unwrap();
        assert_ne!(b.hash(), e.hash());
    }

    /// The seed is the proposer's VRF output over the parent's seed: the transactions,
    /// time, state root and parent hash a proposer puts in its block leave it as it is;
    /// another proposer (a later round) or another height gives another one.
    #[test]
    fn the_seed_is_the_proposers_vrf_output_and_nothing_it_picks() {
        let b = sample();
        let parent_seed = genesis_seed(&CHAIN);
        assert_eq!(b.header.verify_seed(&parent_seed), Ok(b.header.seed()));
        let mut c = b.clone();
        c.header.state_root = Hash::sha256(b"other");
        c.header.txs_root = Hash::sha256(b"t");
        c.header.time_ms = 99_999;
        c.header.prev_hash = Hash::sha256(b"p");
        c.txs.clear();
        assert_eq!(b.header.seed(), c.header.seed());
        assert_eq!(c.header.verify_seed(&parent_seed), Ok(b.header.seed()));
        let other = block(
            &Keypair::from_label("v1"),
            1,
            &Hash::ZERO,
            &parent_seed,
            1_000,
            vec![],
        );
        assert_ne!(b.header.seed(), other.header.seed());
        let higher = block(
            &Keypair::from_label("v0"),
            2,
            &b.hash(),
            &parent_seed,
            2_000,
            vec![],
        );
        assert_ne!(b.header.seed(), higher.header.seed());
        assert_ne!(b.header.seed(), b.hash());
        assert_ne!(genesis_seed(&CHAIN), genesis_seed(&Hash::ZERO));
    }

    /// Seed grinding (issue 39, finding 7): the proposer of block h-1 tries thousands of
    /// times and several transaction sets for its block, hoping one of them gives block h
    /// a seed that seats its own auditors. Every one is a different block h-1 (another
    /// hash), and block h's seed is the same for all of them.
    #[test]
    fn the_draw_seed_cannot_be_ground_by_the_parent_proposer() {
        let (p_h2, p_h1, p_h) = (
            Keypair::from_label("proposer of h-2"),
            Keypair::from_label("proposer of h-1"),
            Keypair::from_label("proposer of h"),
        );
        let g = genesis_seed(&CHAIN);
        let fixed = block(&p_h2, 1, &Hash::ZERO, &g, 1_000, vec![b"t".to_vec()]);
        let fixed_seed = fixed.header.verify_seed(&g).unwrap();
        let tx_sets: [Vec<Vec<u8>>; 3] = [
            vec![],
            vec![b"open session".to_vec()],
            vec![b"bond".to_vec(), b"open session".to_vec()],
        ];
        let mut parents = BTreeSet::new();
        let mut seeds = BTreeSet::new();
        for time_ms in 1_001..1_501 {
            for txs in &tx_sets {
                let parent = block(&p_h1, 2, &fixed.hash(), &fixed_seed, time_ms, txs.clone());
                let parent_seed = parent.header.verify_seed(&fixed_seed).unwrap();
                let next = block(&p_h, 3, &parent.hash(), &parent_seed, time_ms + 1, vec![]);
                parents.insert(parent.hash());
                seeds.insert(next.header.verify_seed(&parent_seed).unwrap());
            }
        }
        assert_eq!(parents.len(), 500 * 3, "every try is another block h-1");
        assert_eq!(
            seeds.len(),
            1,
            "block h's seed moved with block h-1's contents"
        );
    }

    /// A header whose proof is another validator's, or over another parent seed or height,
    /// is refused.
    #[test]
    fn a_seed_proof_by_another_key_or_over_another_input_is_refused() {
        let b = sample();
        let g = genesis_seed(&CHAIN);
        let v1 = Keypair::from_label("v1");
        // Another validator's own valid proof, under v0's name.
        let mut stolen = b.clone();
        stolen.header.vrf = prove_seed(&v1, &CHAIN, 1, &g).unwrap();
        assert_eq!(
            stolen.header.verify_seed(&g),
            Err(VrfError::Invalid(b.header.proposer))
        );
        // v0's proof of another parent seed, another height, another chain.
        for (chain, height, seed) in [
            (CHAIN, 1, Hash::sha256(b"another parent")),
            (CHAIN, 2, g),
            (Hash::ZERO, 1, g),
        ] {
            let mut moved = b.clone();
            moved.header.vrf =
                prove_seed(&Keypair::from_label("v0"), &chain, height, &seed).unwrap();
            assert!(moved.header.verify_seed(&g).is_err());
        }
        // The right proof checked against the wrong parent seed.
        assert!(b.header.verify_seed(&Hash::sha256(b"x")).is_err());
        // A header naming v1 as proposer with v0's proof.
        let mut renamed = b.clone();
        renamed.header.proposer = v1.public();
        assert_eq!(
            renamed.header.verify_seed(&g),
            Err(VrfError::Invalid(v1.public()))
        );
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
        let key = Keypair::from_label("v");
        let b = Block::new(
            Hash::ZERO,
            1,
            Hash::ZERO,
            1_000,
            Hash::ZERO,
            key.public(),
            prove_seed(&key, &Hash::ZERO, 1, &genesis_seed(&Hash::ZERO)).unwrap(),
            vec![vec![0u8; MAX_TX_BYTES + 1]],
        );
        assert!(matches!(
            b.check(),
            Err(BlockError::TxTooLarge { index: 0, .. })
        ));
    }
}
