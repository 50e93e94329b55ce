//! `GET /v1/sessions/{id}/proof`: a session's outcome proof with the walk of validator
//! powers from the anchor the client trusts ([`crate::proof`]). The blocks that changed the
//! powers come from the ledger's record of them (`ledger/power_changes`); the states after
//! the anchor and after each of those blocks are rebuilt by replaying the ledger
//! ([`crate::ledger::history`]), except the one before the tip, which the chain view holds.

use axum::http::StatusCode;
use trust_contracts::Contract;
use trust_protocol::Hash;

use crate::{
    api::{Api, ApiError, ApiResult},
    ledger::{LedgerError, StoredBlock, history},
    proof::{self, BuildError, OutcomeProof, ProofAnchor, TrustedBlock, Walk},
    view::ChainView,
};

/// Why a proof could not be served.
#[derive(Debug, thiserror::Error)]
enum ServeError {
    /// Reading or replaying the ledger.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
    /// Building the proof from the states.
    #[error(transparent)]
    Build(#[from] BuildError),
}

impl From<ServeError> for ApiError {
    fn from(e: ServeError) -> Self {
        let unavailable =
            |m: String| ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "unavailable", m);
        match e {
            ServeError::Build(e @ BuildError::NoOutcome(_)) => ApiError::not_found(e.to_string()),
            ServeError::Build(e) => unavailable(e.to_string()),
            ServeError::Ledger(e @ LedgerError::NoPowerHistory { .. }) => {
                unavailable(e.to_string())
            }
            ServeError::Ledger(e) => ApiError::internal(e),
        }
    }
}

/// The route's query: `?trust=HEIGHT:HASH`, at most once; nothing else.
pub(crate) fn trust_query(pairs: &[(String, String)]) -> ApiResult<Option<TrustedBlock>> {
    let mut trust = None;
    for (key, value) in pairs {
        if key != "trust" {
            return Err(ApiError::bad(
                "bad_query",
                format!(
                    "unknown parameter `{}`; this route takes only trust",
                    key.chars().take(64).collect::<String>()
                ),
            ));
        }
        if trust.is_some() {
            return Err(ApiError::bad("bad_trust", "trust is given more than once"));
        }
        let block = value
            .parse::<TrustedBlock>()
            .map_err(|e| ApiError::bad("bad_trust", format!("trust: {e}")))?;
        trust = Some(block);
    }
    Ok(trust)
}

fn refused(message: String) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "rejected", message)
}

/// The proof of `sid`'s outcome at `view`'s tip, walked from `trust` (genesis if none).
/// Reads the ledger and may replay it: call off the async runtime.
pub(crate) fn outcome_proof(
    api: &Api,
    view: &ChainView,
    sid: &Hash,
    trust: Option<TrustedBlock>,
) -> ApiResult<OutcomeProof> {
    let h = view.tip.height;
    let block = |height: u64| -> ApiResult<StoredBlock> {
        api.ledger
            .block(height)
            .map_err(ApiError::internal)?
            .ok_or_else(|| ApiError::internal(format!("block {height} is not in the ledger")))
    };
    let tip = block(h)?;
    let parent = match h {
        0 | 1 => None,
        _ => Some(block(h.saturating_sub(1))?),
    };
    if let Some(t) = trust {
        if t.height >= h {
            return Err(refused(format!(
                "the trusted block {} is not below the block the proof is of ({h}, this node's \
                 tip): trust an earlier block",
                t.height
            )));
        }
        let held = block(t.height)?.block.hash();
        if held != t.hash {
            return Err(refused(format!(
                "block {} of this chain is {held}, not {}: the trusted block is not one of this \
                 node's",
                t.height, t.hash
            )));
        }
    }
    let from = trust.map_or(0, |t| t.height);
    let changes = api
        .ledger
        .power_changes(from, h)
        .map_err(ServeError::from)?;

    // The states needed: after the anchor, and after each change.
    let mut needed: Vec<u64> = trust.iter().map(|t| t.height).collect();
    needed.extend(&changes);
    needed.sort_unstable();
    needed.dedup();
    let mut walk = Walk::default();
    let mut visit = |b: &StoredBlock, state: &Contract| -> Result<(), ServeError> {
        let height = b.block.header.height;
        if trust.is_some_and(|t| t.height == height) {
            walk.anchor = proof::anchor_at(b, state, &api.validators)?;
        }
        if changes.binary_search(&height).is_ok() {
            walk.hops.push(proof::hop(b, state, &api.validators)?);
        }
        Ok(())
    };
    // The state after the block below the tip is the view's; the others are replayed.
    let below_tip = h.saturating_sub(1);
    let replayed: Vec<u64> = needed.iter().copied().filter(|&n| n < below_tip).collect();
    if !replayed.is_empty() {
        let genesis = api.genesis.as_deref().ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "this node holds no genesis state to replay the ledger from",
            )
        })?;
        history::replay_to(&api.ledger, genesis, view.tip.chain, &replayed, &mut visit)?;
    }
    if needed.contains(&below_tip) {
        let (Some(pstate), Some(pblock)) = (view.parent.as_deref(), parent.as_ref()) else {
            return Err(ServeError::Build(BuildError::NoParentState(h)).into());
        };
        visit(pblock, pstate)?;
    }
    if trust.is_some() && walk.anchor == ProofAnchor::Genesis {
        return Err(ApiError::internal(
            "the trusted block's state was not rebuilt",
        ));
    }
    proof::build(
        sid,
        &view.contract,
        &tip,
        view.parent.as_deref(),
        parent.as_ref(),
        &api.validators,
        walk,
    )
    .map_err(|e| ServeError::from(e).into())
}
