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
use trust_contracts::{Contract, Outcome};
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

/// Most proofs of outcomes that left the contract state [`Replays`] keeps, by session and
/// trusted block: such a proof never changes (it is of the outcome's final block), and
/// building it replays the ledger, so a repeated request is answered from here.
pub const MAX_KEPT_RETIRED_PROOFS: usize = 1_024;

/// A kept proof's key: the session and the trusted block (height and hash; 0 and zero for
/// genesis).
type RetiredKey = (Hash, u64, Hash);

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
    /// Proofs of outcomes that left the state, built already.
    retired: Mutex<BTreeMap<RetiredKey, Arc<OutcomeProof>>>,
}

impl Replays {
    /// Replays of the ledger run so far (one replay may rebuild several heights).
    pub fn runs(&self) -> u64 {
        self.runs.load(Ordering::Relaxed)
    }

    fn retired_get(&self, key: &RetiredKey) -> Option<Arc<OutcomeProof>> {
        self.retired
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(key)
            .cloned()
    }

    fn retired_keep(&self, key: RetiredKey, proof: Arc<OutcomeProof>) {
        let mut kept = self.retired.lock().unwrap_or_else(|p| p.into_inner());
        while kept.len() >= MAX_KEPT_RETIRED_PROOFS && kept.pop_first().is_some() {}
        kept.insert(key, proof);
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
        let genesis = genesis_of(api)?;
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

impl Replays {
    /// The states after `parent` and `at` (`at - 1` and `at`; no parent at height 1) and
    /// the stake proofs after each of `walk` (ascending, all below `at`), rebuilt by one
    /// replay of the ledger under the replay lock: what the proof of an outcome that left
    /// the contract state needs, anchored at its final block `at`. The stake proofs are
    /// kept for later requests like [`Replays::stakes`]'.
    #[allow(clippy::type_complexity)]
    fn states_at(
        &self,
        api: &Api,
        chain: Hash,
        walk: &[u64],
        at: u64,
    ) -> Result<
        (
            BTreeMap<u64, Arc<Vec<StakeProof>>>,
            Option<(StoredBlock, Contract)>,
            (StoredBlock, Contract),
        ),
        ApiError,
    > {
        let genesis = genesis_of(api)?;
        let parent = at.saturating_sub(1);
        let mut heights: Vec<u64> = walk.to_vec();
        heights.extend([parent, at]);
        heights.retain(|h| *h > 0);
        heights.sort_unstable();
        heights.dedup();
        let _one = self.replaying.lock().unwrap_or_else(|p| p.into_inner());
        self.runs.fetch_add(1, Ordering::Relaxed);
        let mut stakes = BTreeMap::new();
        let mut before = None;
        let mut after = None;
        history::replay_to(
            &api.ledger,
            genesis,
            chain,
            &heights,
            |b, state| -> Result<(), ServeError> {
                let h = b.block.header.height;
                if walk.contains(&h) {
                    let s = match self.get(h) {
                        Some(s) => s,
                        None => {
                            let s = proof::stake_proofs(state, b, &api.validators)?;
                            self.keep(h, s.clone());
                            Arc::new(s)
                        }
                    };
                    stakes.insert(h, s);
                }
                if h == parent {
                    before = Some((b.clone(), state.clone()));
                }
                if h == at {
                    after = Some((b.clone(), state.clone()));
                }
                Ok(())
            },
        )?;
        let after = after.ok_or_else(|| {
            ApiError::internal(format!("the state after block {at} was not rebuilt"))
        })?;
        Ok((stakes, before, after))
    }
}

/// The genesis state replays start from.
fn genesis_of(api: &Api) -> Result<&Contract, ApiError> {
    api.genesis.as_deref().ok_or_else(|| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "this node holds no genesis state to replay the ledger from",
        )
    })
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
    if view.contract.outcome(sid).is_none()
        && let Some(o) = api.ledger.final_outcome(sid).map_err(ApiError::internal)?
    {
        return retired_outcome_proof(api, view, sid, &o, trust);
    }
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
            "this node holds no block below {oldest} ({}), so it cannot \
             walk the validator powers from {}: trust a block at or above {oldest}, or ask an \
             archive node",
            why_no_blocks_below(api),
            if from == 0 {
                "genesis".to_string()
            } else {
                format!("block {from}")
            }
        )));
    }
    let (changes, needed) = walk_heights(api, trust, h)?;
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
    let walk = walk_of(api, trust, &changes, &needed, &stakes)?;
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

/// The proof of the outcome of `sid`, which left the contract state after its retention
/// (`o`, as the ledger keeps it): anchored at the block it became final in, whose state
/// still held it, final, and which never changes again. The states after that block and
/// the one before it are rebuilt by replaying the ledger. Reads the ledger and replays it:
/// call off the async runtime.
fn retired_outcome_proof(
    api: &Api,
    view: &ChainView,
    sid: &Hash,
    o: &Outcome,
    trust: Option<TrustedBlock>,
) -> ApiResult<OutcomeProof> {
    let Some(at) = o.appeals.final_at else {
        return Err(ApiError::internal(format!(
            "the ledger keeps session {sid}'s outcome as final, but it has no final block"
        )));
    };
    let key = (
        *sid,
        trust.map_or(0, |t| t.height),
        trust.map_or(Hash::ZERO, |t| t.hash),
    );
    if let Some(p) = api.replays.retired_get(&key) {
        return Ok(p.as_ref().clone());
    }
    if let Some(t) = trust {
        if t.height >= at {
            return Err(refused(format!(
                "session {sid}'s outcome left the contract state after its retention, so its \
                 proof is of block {at}, where it became final; the trusted block {} is not \
                 below it: trust an earlier block",
                t.height
            )));
        }
        let held = api
            .ledger
            .block(t.height)
            .map_err(ApiError::internal)?
            .map(|b| b.block.hash());
        if held != Some(t.hash) {
            return Err(refused(format!(
                "block {} of this chain is not {}: the trusted block is not one of this node's",
                t.height, t.hash
            )));
        }
    }
    let from = trust.map_or(0, |t| t.height);
    let lowest = from.min(at.saturating_sub(1));
    if let Some(oldest) = api
        .ledger
        .pruned_below(lowest)
        .map_err(ApiError::internal)?
    {
        return Err(ApiError::not_found(format!(
            "session {sid} became final at block {at}, and this node holds no block below \
             {oldest} ({}), so it cannot prove it{}: ask an archive node",
            why_no_blocks_below(api),
            if from < oldest && at > oldest {
                format!(
                    " from {}",
                    if from == 0 {
                        "genesis".to_string()
                    } else {
                        format!("block {from}")
                    }
                )
            } else {
                String::new()
            }
        )));
    }
    let (changes, needed) = walk_heights(api, trust, at)?;
    let (stakes, parent, (block, state)) =
        api.replays.states_at(api, view.tip.chain, &needed, at)?;
    let walk = walk_of(api, trust, &changes, &needed, &stakes)?;
    let p = proof::build(
        sid,
        &state,
        &block,
        parent.as_ref().map(|(_, c)| c),
        parent.as_ref().map(|(b, _)| b),
        &api.validators,
        walk,
    )
    .map_err(ServeError::from)?;
    api.replays.retired_keep(key, Arc::new(p.clone()));
    Ok(p)
}

/// The blocks that changed the validator powers between the trusted block (genesis if
/// none) and block `to`, and the heights whose states a proof's walk needs: the trusted
/// block's and each change's, ascending.
fn walk_heights(
    api: &Api,
    trust: Option<TrustedBlock>,
    to: u64,
) -> ApiResult<(Vec<u64>, Vec<u64>)> {
    let from = trust.map_or(0, |t| t.height);
    let changes = api
        .ledger
        .power_changes(from, to)
        .map_err(ServeError::from)?;
    let mut needed: Vec<u64> = trust.iter().map(|t| t.height).collect();
    needed.extend(&changes);
    needed.sort_unstable();
    needed.dedup();
    Ok((changes, needed))
}

/// The walk of a proof: the anchor at the trusted block (genesis if none) and a hop at
/// each of `changes`, from the blocks at `heights` (the trusted one and the changes,
/// ascending) and the stake proofs after each.
fn walk_of(
    api: &Api,
    trust: Option<TrustedBlock>,
    changes: &[u64],
    heights: &[u64],
    stakes: &BTreeMap<u64, Arc<Vec<StakeProof>>>,
) -> ApiResult<Walk> {
    let mut walk = Walk::default();
    for &height in heights {
        let b = api
            .ledger
            .block(height)
            .map_err(ApiError::internal)?
            .ok_or_else(|| ApiError::internal(format!("block {height} is not in the ledger")))?;
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
    Ok(walk)
}

/// Why a node holds no block below its oldest one: it prunes (`[ledger] keep_blocks` is
/// set), or else it joined by state sync, its ledger starting at a snapshot's block.
fn why_no_blocks_below(api: &Api) -> &'static str {
    if api.ledger.keep_blocks().is_some() {
        "it prunes them: `[ledger] keep_blocks`"
    } else {
        "it joined by state sync: its ledger starts at a snapshot's block"
    }
}
