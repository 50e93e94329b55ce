//! What the contract is told about the block it applies: its height and its seed. Below
//! every module that reads it (the contract, the tally, appeals), so that none of them
//! has to reach up into another for it.

use serde::{Deserialize, Serialize};
use trust_protocol::Hash;

/// What the contract knows about the block being applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct BlockCtx {
    /// Height of the block.
    pub height: u64,
    /// The block's seed (`BlockHeader::seed`: a hash of the chain, the height and the VRF
    /// output of the block's proposer over the parent's seed, which neither that proposer
    /// nor the parent's can choose): the only randomness the contract uses.
    /// [`Contract::begin_block`](crate::Contract::begin_block) and
    /// [`Contract::end_block`](crate::Contract::end_block) read it;
    /// [`Contract::apply`](crate::Contract::apply) depends on the height alone.
    pub block_hash: Hash,
}
