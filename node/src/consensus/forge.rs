//! Test builds only (cargo feature `misbehave`): a node that forges proposals.
//!
//! Selected by `TRUST_TEST_BEHAVIOUR=proposal-forger` (see `daemon.rs`). At the start of
//! every round this node does not propose, it builds a block on its tip as if it were the
//! proposer and streams it, signed with its own key, under the slot's stream id: exactly
//! what an honest node must drop before executing anything (see [`super::proposals`]).
//! The block is a real one (it would execute), so only the proposer check stops it.

use malachitebft_app_channel::Channels;
use malachitebft_core_types::Round;
use tracing::{debug, warn};
use trust_contracts::Contract;
use trust_protocol::{Hash, block::Block};

use super::{
    context::{Height, PartInit, ProposalPart, TrustContext},
    driver::{Driver, stream_out},
    proposals::stream_parts,
    signing::AccountSigner,
};
use crate::chain::{Tip, build_block};

/// The block and signed parts a forger streams for `(tip + 1, round)`: an empty block
/// naming the forger as proposer, and an `Init` that claims the slot.
pub fn forged(
    chain: &Hash,
    signer: &AccountSigner,
    contract: &Contract,
    tip: &Tip,
    round: Round,
) -> (PartInit, Block, Vec<ProposalPart>) {
    let (block, _, _) = build_block(
        contract,
        tip,
        signer.address().account(),
        crate::chain::now_ms(),
        &[],
    );
    let init = PartInit {
        height: Height(tip.height.saturating_add(1)),
        round,
        pol_round: Round::Nil,
        proposer: signer.address(),
    };
    let parts = stream_parts(chain, init.clone(), &block, |d| signer.sign(d));
    (init, block, parts)
}

impl Driver {
    /// Streams a forged proposal for `(height, round)`, which another validator proposes.
    pub(super) async fn forge_proposal(
        &self,
        signer: &AccountSigner,
        height: Height,
        round: Round,
        channels: &Channels<TrustContext>,
    ) {
        let v = self.view.current();
        if v.tip.height.saturating_add(1) != height.0 {
            return;
        }
        let (init, block, _) = forged(&self.chain, signer, &v.contract, &v.tip, round);
        match stream_out(&self.chain, signer, init, &block, channels).await {
            Ok(()) => debug!(%height, %round, "TEST BEHAVIOUR: forged proposal streamed"),
            Err(e) => warn!(%height, %round, error = %e, "forged proposal not streamed"),
        }
    }
}
