//! Block execution: the bridge between ordered blocks and the contract.
//!
//! The consensus driver calls [`build_block`] when this node proposes (prove the block's
//! seed with the node's key, then drain candidate transactions into the block, executing
//! each on a copy of the state and dropping the ones the contract rejects) and
//! [`execute_block`] when it validates a proposal or applies a decided or synced block,
//! and a replay of the ledger calls it for every stored block. Both run the contract with
//! the header's [`BlockHeader::seed`] as the block randomness, so the state root a header
//! carries is the root after its own transactions and end-of-block step.
//!
//! A block is valid only if its seed proof verifies against its proposer and the parent's
//! seed (the tip's, [`Tip::seed`]; see "Block seed" in `trust_protocol::block`) and every
//! transaction in it decodes canonically, verifies and applies: the ledger never holds a
//! transaction that did nothing, nor a seed its proposer could have chosen.
//!
//! [`BlockHeader::seed`]: trust_protocol::block::BlockHeader::seed

use trust_contracts::{BlockCtx, Contract, Event, Outcome, TxError};
use trust_protocol::{
    Hash, Keypair, PublicKey,
    block::{
        Block, BlockError, MAX_BLOCK_BYTES, MAX_BLOCK_TXS, MAX_TX_BYTES, genesis_seed,
        next_block_time, prove_seed, txs_root,
    },
    encoding,
    tx::SignedTx,
    vrf::VrfError,
};

/// Why a block cannot be executed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ExecError {
    /// Malformed on its own.
    #[error(transparent)]
    Block(#[from] BlockError),
    /// It belongs to another network.
    #[error("block is for chain {got}, this node runs {expected}")]
    WrongChain {
        /// Our chain id.
        expected: Hash,
        /// The block's.
        got: Hash,
    },
    /// Not the next height or not linked to our tip.
    #[error("block {height} does not extend the tip (expected height {expected_height})")]
    NotNext {
        /// The block's height.
        height: u64,
        /// The height we expect.
        expected_height: u64,
    },
    /// Wrong parent hash.
    #[error("block {height}: prev_hash {got} is not the tip {expected}")]
    WrongParent {
        /// The block's height.
        height: u64,
        /// Our tip hash.
        expected: Hash,
        /// The block's prev_hash.
        got: Hash,
    },
    /// The header's seed proof is not its proposer's VRF proof over the chain, the height
    /// and the parent's seed (see "Block seed" in `trust_protocol::block`).
    #[error("block {height}: the seed proof of proposer {proposer} does not verify: {error}")]
    BadSeedProof {
        /// The block's height.
        height: u64,
        /// The proposer the header names.
        proposer: PublicKey,
        /// Why.
        error: VrfError,
    },
    /// Stamped at or before its parent's time (the monotonic half of the BFT time rule,
    /// see `trust_protocol::block`).
    #[error("block {height} is stamped {time_ms} ms, not after its parent's {parent_ms} ms")]
    TimeNotAfterParent {
        /// The block's height.
        height: u64,
        /// Its time.
        time_ms: u64,
        /// The parent's time.
        parent_ms: u64,
    },
    /// A transaction does not decode.
    #[error("block {height}, transaction {index}: {reason}")]
    BadTx {
        /// Height.
        height: u64,
        /// Position.
        index: usize,
        /// Decoder message.
        reason: String,
    },
    /// The contract rejected a transaction.
    #[error("block {height}, transaction {index} rejected: {error}")]
    Rejected {
        /// Height.
        height: u64,
        /// Position.
        index: usize,
        /// Why.
        error: TxError,
    },
    /// Executing gives another state root than the header claims.
    #[error("block {height}: state root {got} after execution, header says {claimed}")]
    StateRootMismatch {
        /// Height.
        height: u64,
        /// Claimed.
        claimed: Hash,
        /// Computed.
        got: Hash,
    },
}

/// Where the chain stands: what the next block must extend.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Tip {
    /// Network id (hash of the genesis document).
    pub chain: Hash,
    /// Height of the last block (0 before the first).
    pub height: u64,
    /// Hash of the last block ([`Hash::ZERO`] before the first).
    pub hash: Hash,
    /// Time of the last block, Unix milliseconds (0 before the first); the next block's
    /// must be later.
    pub time_ms: u64,
    /// Seed of the last block (the chain's genesis seed before the first): the next
    /// block's seed proof is over it.
    pub seed: Hash,
}

impl Tip {
    /// Before the first block of `chain`.
    pub fn genesis(chain: Hash) -> Tip {
        Tip {
            chain,
            height: 0,
            hash: Hash::ZERO,
            time_ms: 0,
            seed: genesis_seed(&chain),
        }
    }

    /// The tip after `block`, a block that extends this tip and was checked
    /// ([`execute_block`]) or stored after it was.
    pub fn after(&self, block: &Block) -> Tip {
        Tip {
            chain: self.chain,
            height: block.header.height,
            hash: block.hash(),
            time_ms: block.header.time_ms,
            seed: block.header.seed(),
        }
    }
}

/// A block executed on a copy of the state.
#[derive(Debug, Clone)]
pub struct Executed {
    /// The state after the block.
    pub contract: Contract,
    /// Every event, in order: the start-of-block draws, per transaction, then the
    /// end-of-block step.
    pub events: Vec<Event>,
}

/// Checks that `block` extends `tip` and that its seed proof verifies; returns its seed.
fn check_link(tip: &Tip, block: &Block) -> Result<Hash, ExecError> {
    block.check()?;
    let h = &block.header;
    if h.chain != tip.chain {
        return Err(ExecError::WrongChain {
            expected: tip.chain,
            got: h.chain,
        });
    }
    let expected_height = tip.height.saturating_add(1);
    if h.height != expected_height {
        return Err(ExecError::NotNext {
            height: h.height,
            expected_height,
        });
    }
    if h.prev_hash != tip.hash {
        return Err(ExecError::WrongParent {
            height: h.height,
            expected: tip.hash,
            got: h.prev_hash,
        });
    }
    if h.time_ms <= tip.time_ms {
        return Err(ExecError::TimeNotAfterParent {
            height: h.height,
            time_ms: h.time_ms,
            parent_ms: tip.time_ms,
        });
    }
    h.verify_seed(&tip.seed)
        .map_err(|error| ExecError::BadSeedProof {
            height: h.height,
            proposer: h.proposer,
            error,
        })
}

/// Validates and executes `block` on a copy of `state`; `state` is untouched.
pub fn execute_block(state: &Contract, tip: &Tip, block: &Block) -> Result<Executed, ExecError> {
    crate::cpu::measure(crate::cpu::Part::Execute, || execute(state, tip, block))
}

fn execute(state: &Contract, tip: &Tip, block: &Block) -> Result<Executed, ExecError> {
    let seed = check_link(tip, block)?;
    let height = block.header.height;
    let ctx = BlockCtx {
        height,
        block_hash: seed,
    };
    let mut contract = state.clone();
    let mut events = contract.begin_block(&ctx);
    for (index, bytes) in block.txs.iter().enumerate() {
        let tx: SignedTx = encoding::decode(bytes).map_err(|e| ExecError::BadTx {
            height,
            index,
            reason: e.to_string(),
        })?;
        let ev = contract
            .apply(&ctx, &tx)
            .map_err(|error| ExecError::Rejected {
                height,
                index,
                error,
            })?;
        events.extend(ev);
    }
    events.extend(contract.end_block_rules(&ctx));
    let got = crate::cpu::measure(crate::cpu::Part::StateRoot, || {
        contract.commit_tree();
        contract.state_root()
    });
    if got != block.header.state_root {
        return Err(ExecError::StateRootMismatch {
            height,
            claimed: block.header.state_root,
            got,
        });
    }
    Ok(Executed { contract, events })
}

/// The sessions whose outcome `events` decide (what the ledger's outcome index records).
pub fn decided_sessions(events: &[Event]) -> Vec<Hash> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::TraceDecided { session, .. } => Some(*session),
            _ => None,
        })
        .collect()
}

/// The final outcomes a block let go of from the contract state ([`Event::OutcomeRetired`]),
/// as the state before it (`before`) holds them: what the ledger keeps from then on
/// ([`crate::ledger::Ledger::final_outcome`]). Taken when they leave rather than when they
/// become final, so a ledger that starts from a snapshot holding final outcomes keeps them
/// too.
pub fn retired_outcomes(events: &[Event], before: &Contract) -> Vec<(Hash, Outcome)> {
    events
        .iter()
        .filter_map(|e| match e {
            Event::OutcomeRetired { session, .. } => {
                before.outcome(session).map(|o| (*session, o.clone()))
            }
            _ => None,
        })
        .collect()
}

/// A candidate the contract refused while building a block, with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Signed transaction id.
    pub id: Hash,
    /// Why.
    pub error: TxError,
}

/// This machine's clock as Unix milliseconds: what a proposer stamps, and what a validator
/// bounds a proposal's time by (see "Block time" in `trust_protocol::block`). A clock
/// before 1970 reads 0.
pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// A block time (Unix milliseconds) as RFC 3339 in UTC, to the millisecond:
/// `2026-11-26T02:07:50.123Z`.
pub fn format_time(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        ms % 1000
    )
}

/// Year, month (1-12) and day (1-31) of the proleptic Gregorian calendar, `days` days
/// after 1970-01-01 (the days-to-civil algorithm: 400-year eras of 146,097 days, years
/// counted from March so the leap day ends the year).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

/// Whether a transaction the contract refused with `error` when a block was built only
/// waits (and stays pooled, not held against its sender): one behind an earlier refused
/// transaction of its sender (a nonce gap inside the block), or a reveal pooled while its
/// commit window is still open. Every other refusal evicts it and counts as its sender's
/// failure. A block's builder tries what waits once more after the rest ([`build_block`]).
pub fn waits(error: &TxError) -> bool {
    matches!(error, TxError::BadNonce { .. } | TxError::WrongPhase(_))
}

/// Builds the next block from `candidates` in order, proposed by `key`: first the
/// block's seed proof (the VRF of `key` over the tip's seed), then each candidate applied
/// to a copy of the state and kept only if it applies; the block stops growing at the
/// transaction and byte limits. It is stamped `clock_ms` (the proposer's clock, Unix
/// milliseconds), or just after the tip when that clock is not past it
/// (`block::next_block_time`). Returns the block, its execution, and the refused
/// candidates; fails only if the seed cannot be proven (no curve point for the VRF input,
/// a chance of about 2^-256).
pub fn build_block(
    state: &Contract,
    tip: &Tip,
    key: &Keypair,
    clock_ms: u64,
    candidates: &[SignedTx],
) -> Result<(Block, Executed, Vec<Dropped>), VrfError> {
    crate::cpu::measure(crate::cpu::Part::Execute, || {
        build(state, tip, key, clock_ms, candidates)
    })
}

fn build(
    state: &Contract,
    tip: &Tip,
    key: &Keypair,
    clock_ms: u64,
    candidates: &[SignedTx],
) -> Result<(Block, Executed, Vec<Dropped>), VrfError> {
    let height = tip.height.saturating_add(1);
    let mut contract = state.clone();
    let mut txs: Vec<Vec<u8>> = Vec::new();
    let mut dropped = Vec::new();
    // Header overhead plus per-transaction length prefixes stay far below this margin.
    let budget = MAX_BLOCK_BYTES.saturating_sub(4096);
    let mut size = 0usize;
    // The seed is the proposer's VRF output over the parent's seed: fixed before a
    // transaction is picked, so the round-0 draws run first, then each candidate is
    // applied once, in order, exactly as `execute_block` will replay them.
    let vrf = prove_seed(key, &tip.chain, height, &tip.seed)?;
    let mut block = Block::new(
        tip.chain,
        height,
        tip.hash,
        next_block_time(tip.time_ms, clock_ms),
        Hash::ZERO,
        key.public(),
        vrf,
        Vec::new(),
    );
    let block_ctx = BlockCtx {
        height,
        block_hash: block.header.seed(),
    };
    let mut events = contract.begin_block(&block_ctx);
    // A candidate that only waits (on a phase, or on its sender's earlier nonce) may be
    // able to apply once the rest of the block has: a provider's honeypot set, sent as the
    // last reveals were pooled, applies after them. One more pass tries those, in order.
    let mut waiting: Vec<(usize, &SignedTx, TxError)> = Vec::new();
    // Refused, with each one's place among the candidates (reported in that order).
    let mut refused: Vec<(usize, Dropped)> = Vec::new();
    for pass in 0..2 {
        let list: Vec<(usize, &SignedTx)> = if pass == 0 {
            candidates.iter().enumerate().collect()
        } else {
            std::mem::take(&mut waiting)
                .into_iter()
                .map(|(i, tx, _)| (i, tx))
                .collect()
        };
        let mut applied_any = false;
        for (i, tx) in list {
            if txs.len() >= MAX_BLOCK_TXS {
                break;
            }
            let bytes = encoding::encode(tx);
            if bytes.is_empty() || bytes.len() > MAX_TX_BYTES {
                continue;
            }
            if size.saturating_add(bytes.len()).saturating_add(8) > budget {
                break;
            }
            match contract.apply(&block_ctx, tx) {
                Ok(ev) => {
                    size = size.saturating_add(bytes.len()).saturating_add(8);
                    txs.push(bytes);
                    events.extend(ev);
                    applied_any = true;
                }
                Err(error) if pass == 0 && waits(&error) => {
                    waiting.push((i, tx, error));
                }
                Err(error) => refused.push((i, Dropped { id: tx.id(), error })),
            }
        }
        if pass == 0 && !applied_any {
            break;
        }
    }
    // Left untried when the first pass changed nothing they wait on.
    refused.extend(
        waiting
            .into_iter()
            .map(|(i, tx, error)| (i, Dropped { id: tx.id(), error })),
    );
    refused.sort_by_key(|(i, _)| *i);
    dropped.extend(refused.into_iter().map(|(_, d)| d));
    block.header.txs_root = txs_root(&txs);
    block.txs = txs;
    events.extend(contract.end_block_rules(&block_ctx));
    block.header.state_root = crate::cpu::measure(crate::cpu::Part::StateRoot, || {
        contract.commit_tree();
        contract.state_root()
    });
    Ok((block, Executed { contract, events }, dropped))
}

#[cfg(test)]
mod tests;
