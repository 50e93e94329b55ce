//! `GET /v1/sessions/{id}/proof`: a session's outcome proof with the walk of validator
//! powers from the anchor the client trusts ([`crate::proof`]). The blocks that changed the
//! powers come from the ledger's record of them (`ledger/power_changes`); the states after
//! the anchor and after each of those blocks are rebuilt by replaying the ledger
//! ([`crate::ledger::history`]), except the one before the tip, which the chain view holds.
//!
//! What a replay yields for a height, the genesis validators' stake proofs under its state
//! root, is kept ([`Replays`]) and shared by every later request: a past height is
//! replayed once, by one request at a time, however many clients ask for proofs.

use std::{
    collections::BTreeMap,
    sync::{
        Arc, Mutex,
        atomic::{AtomicU64, Ordering},
    },
};

use axum::http::StatusCode;
use trust_protocol::Hash;

use crate::{
    api::{Api, ApiError, ApiResult},
    ledger::{LedgerError, StoredBlock, history},
    proof::{self, BuildError, OutcomeProof, ProofAnchor, StakeProof, TrustedBlock, Walk},
    view::ChainView,
};

/// Most stake proofs [`Replays`] keeps (each is a few hundred bytes): past it, the lowest
/// heights are forgotten first (a recent trusted block is the common anchor).
pub const MAX_KEPT_STAKE_PROOFS: usize = 65_536;

/// The stake proofs replays of the ledger rebuilt, by height, shared by the proof
/// requests; and the lock that lets one request at a time replay.
#[derive(Debug, Default)]
pub struct Replays {
    /// Held while a request replays: another one waits, then finds what it needs kept.
    replaying: Mutex<()>,
    /// Stake proofs after each height replayed (their blocks are final: they never change).
    kept: Mutex<BTreeMap<u64, Arc<Vec<StakeProof>>>>,
    /// Replays run so far.
    runs: AtomicU64,
}

impl Replays {
    /// Replays of the ledger run so far (one replay may rebuild several heights).
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    fn get(&self, height: u64) -> Option<Arc<Vec<StakeProof>>> {
        self.kept
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&height)
            .cloned()
    }

    fn keep(&self, height: u64, stakes: Vec<StakeProof>) {
        let mut kept = self.kept.lock().unwrap_or_else(|p| p.into_inner());
        let mut total: usize = kept.values().map(|v| v.len()).sum::<usize>() + stakes.len();
        while total > MAX_KEPT_STAKE_PROOFS {
            let Some((_, gone)) = kept.pop_first() else {
                break;
            };
            total = total.saturating_sub(gone.len());
        }
        kept.insert(height, Arc::new(stakes));
    }

    /// The stake proofs after each of `heights` (ascending), replaying the ledger for the
    /// ones not kept yet, one request at a time.
    fn stakes(
        &self,
        api: &Api,
        chain: Hash,
        heights: &[u64],
    ) -> Result<BTreeMap<u64, Arc<Vec<StakeProof>>>, ApiError> {
        let mut out = BTreeMap::new();
        let mut missing = Vec::new();
        for &h in heights {
            match self.get(h) {
                Some(s) => {
                    out.insert(h, s);
                }
                None => missing.push(h),
            }
        }
        if missing.is_empty() {
            return Ok(out);
        }
        let _one = self.replaying.lock().unwrap_or_else(|p| p.into_inner());
        // Another request may have replayed them while this one waited.
        missing.retain(|&h| match self.get(h) {
            Some(s) => {
                out.insert(h, s);
                false
            }
            None => true,
        });
        if missing.is_empty() {
            return Ok(out);
        }
        let genesis = api.genesis.as_deref().ok_or_else(|| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                "unavailable",
                "this node holds no genesis state to replay the ledger from",
            )
        })?;
        self.runs.fetch_add(1, Ordering::Relaxed);
        history::replay_to(
            &api.ledger,
            genesis,
            chain,
            &missing,
            |b, state| -> Result<(), ServeError> {
                let stakes = proof::stake_proofs(state, b, &api.validators)?;
                self.keep(b.block.header.height, stakes.clone());
                out.insert(b.block.header.height, Arc::new(stakes));
                Ok(())
            },
        )?;
        Ok(out)
    }
}

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
    if let Some(oldest) = api.ledger.pruned_below(from).map_err(ApiError::internal)? {
        return Err(refused(format!(
            "this node pruned its blocks below {oldest} (`[ledger] keep_blocks`), so it cannot \
             walk the validator powers from {}: trust a block at or above {oldest}, or ask an \
             archive node",
            if from == 0 {
                "genesis".to_string()
            } else {
                format!("block {from}")
            }
        )));
    }
    let changes = api
        .ledger
        .power_changes(from, h)
        .map_err(ServeError::from)?;

    // The states needed: after the anchor, and after each change.
    let mut needed: Vec<u64> = trust.iter().map(|t| t.height).collect();
    needed.extend(&changes);
    needed.sort_unstable();
    needed.dedup();
    // The state after the block below the tip is the view's; the others are replayed
    // (or were, by an earlier request).
    let below_tip = h.saturating_sub(1);
    let past: Vec<u64> = needed.iter().copied().filter(|&n| n < below_tip).collect();
    let mut stakes = api.replays.stakes(api, view.tip.chain, &past)?;
    if needed.contains(&below_tip) {
        let (Some(pstate), Some(pblock)) = (view.parent.as_deref(), parent.as_ref()) else {
            return Err(ServeError::Build(BuildError::NoParentState(h)).into());
        };
        let s = proof::stake_proofs(pstate, pblock, &api.validators).map_err(ServeError::from)?;
        stakes.insert(below_tip, Arc::new(s));
    }
    let mut walk = Walk::default();
    for height in needed {
        let b = block(height)?;
        let s = stakes
            .get(&height)
            .map(|s| s.as_ref().clone())
            .ok_or_else(|| {
                ApiError::internal(format!("the state after block {height} was not rebuilt"))
            })?;
        if trust.is_some_and(|t| t.height == height) {
            walk.anchor = proof::anchor_with(&b, s.clone());
        }
        if changes.binary_search(&height).is_ok() {
            walk.hops
                .push(proof::hop_with(&b, s).map_err(ServeError::from)?);
        }
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
