//! Test builds only (cargo feature `misbehave`): a node that forges proposals.
//!
//! Selected by `TRUST_TEST_BEHAVIOUR=proposal-forger` (see `misbehave.rs`). At the start of
//! every round this node does not propose, it builds a block on its tip as if it were the
//! proposer and streams it, signed with its own key, under the slot's stream id: exactly
//! what an honest node must drop before executing anything (see [`super::proposals`]).
//! The block is a real one (it would execute), so only the proposer check stops it.
//!
//! It also claims round 0 of the next [`AHEAD`] heights. A forger that runs behind the
//! honest validators (three of four decide without it, and a loaded node starts its rounds
//! late) would otherwise only ever stream parts for heights they have already decided,
//! which they drop as late without looking at who sent them; the heights ahead land on
//! their `tip + 1`, where the proposer check runs.

use malachitebft_app_channel::Channels;
use malachitebft_core_types::Round;
use tracing::{debug, warn};
use trust_contracts::Contract;
use trust_protocol::{Hash, block::Block, vrf::VrfError};

use super::{
    context::{Height, PartInit, ProposalPart, TrustContext, proposer_of},
    driver::{Driver, stream_out, validator_set},
    proposals::stream_parts,
    signing::AccountSigner,
};
use crate::chain::{Tip, build_block};

/// Heights past the current one whose round 0 the forger also claims.
pub const AHEAD: u64 = 2;

/// The block and signed parts a forger streams for `(height, round)`: an empty block built
/// on `tip` naming the forger as proposer (with its own valid seed proof), and an `Init`
/// that claims the slot.
pub fn forged(
    chain: &Hash,
    signer: &AccountSigner,
    contract: &Contract,
    tip: &Tip,
    height: Height,
    round: Round,
) -> Result<(PartInit, Block, Vec<ProposalPart>), VrfError> {
    let (block, _, _) = build_block(contract, tip, signer.key(), crate::chain::now_ms(), &[])?;
    let init = PartInit {
        height,
        round,
        pol_round: Round::Nil,
        proposer: signer.address(),
    };
    let parts = stream_parts(chain, init.clone(), &block, |d| signer.sign(d));
    Ok((init, block, parts))
}

impl Driver {
    /// Streams forged proposals for `(height, round)`, which another validator proposes,
    /// and for round 0 of the next [`AHEAD`] heights where another validator proposes it.
    pub(super) async fn forge_proposal(
        &self,
        signer: &AccountSigner,
        height: Height,
        round: Round,
        channels: &Channels<TrustContext>,
    ) {
        let v = self.view.current();
        let set = validator_set(&self.validators, &v.contract);
        let slots = (0..=AHEAD).map(|k| {
            let r = if k == 0 { round } else { Round::new(0) };
            (Height(height.0.saturating_add(k)), r)
        });
        for (h, r) in slots {
            // Never its own slot: a forged stream there would collide with its real one.
            if proposer_of(&set, h, r).map(|p| p.address) == Some(signer.address()) {
                continue;
            }
            let (init, block, _) = match forged(&self.chain, signer, &v.contract, &v.tip, h, r) {
                Ok(f) => f,
                Err(e) => {
                    warn!(height = %h, round = %r, error = %e, "no forged proposal");
                    continue;
                }
            };
            match stream_out(&self.chain, signer, init, &block, channels).await {
                Ok(()) => {
                    debug!(height = %h, round = %r, "TEST BEHAVIOUR: forged proposal streamed")
                }
                Err(e) => {
                    warn!(height = %h, round = %r, error = %e, "forged proposal not streamed")
                }
            }
        }
    }
}
