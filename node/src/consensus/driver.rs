//! The application side of Malachite: answers the engine's messages with our blocks, our
//! contract and our ledger.
//!
//! One task runs [`Driver::run`]; it alone applies decided blocks (its own and synced ones
//! alike), so the contract state, the tip and the ledger advance together. It is the only
//! writer of the [`ChainView`]: after each block is in the ledger it publishes the new tip,
//! state root, contract state and next validator set, and every other part of the node
//! reads them from there (see [`crate::view`]).
//!
//! A proposal is executed only once it has come, part by part, from the proposer of its
//! height and round (see [`super::proposals`]): anyone else's parts are dropped before
//! they are buffered, and a block that does not execute is answered invalid and not
//! stored. A transaction that made a proposal fail on its own is evicted from the mempool
//! and counted against its sender, as are those the contract refuses while this node
//! builds a proposal.

use std::{
    sync::{Arc, atomic::Ordering},
    time::{Duration, Instant},
};

use bytes::Bytes;
use malachitebft_app::{
    consensus::ProposedValue,
    engine::host::{HeightParams, Next, SyncedValueOutcome},
    streaming::StreamMessage,
    types::{LocallyProposedValue, PeerId, sync::RawDecidedValue},
};
use malachitebft_app_channel::{AppMsg, Channels, NetworkMsg};
use malachitebft_core_types::{CommitCertificate, LinearTimeouts, Round, Validity};
use malachitebft_engine::util::streaming::StreamContent;
use tokio::sync::{broadcast, mpsc::error::SendError};
use tracing::{debug, error, info, warn};
use trust_contracts::{BlockCtx, Contract, Event};
use trust_protocol::{
    AccountId, Hash,
    block::{Block, MAX_CLOCK_AHEAD_MS},
    encoding::{self, DecodeError},
    tx::SignedTx,
};

use super::{
    ConsensusMetrics,
    codec::{CodecError, WireCertificate, decode_borsh, encode_borsh},
    context::{Address, BlockId, Height, PartInit, TrustContext, Validator, ValidatorSet},
    proposals::{
        StreamError, Streams, Undecided, UndecidedEntry, UndecidedError, stream_id, stream_parts,
        stream_slot,
    },
    signing::AccountSigner,
    summary::BLOCKS_TARGET,
};
use crate::{
    chain::{
        ExecError, Executed, Tip, build_block, decided_sessions, execute_block, retired_outcomes,
    },
    feed::FeedEvent,
    ledger::{Ledger, LedgerError, StoredBlock},
    mempool::{self, Pool},
    tasks::{Stop, TaskResult},
    view::{ChainPublisher, ChainView, ValidatorPower},
};

/// Most transactions drawn from the mempool into one block.
pub const MAX_CANDIDATES: usize = mempool::MAX_CANDIDATES;
/// Most heights served in one sync answer.
pub const MAX_SYNC_BATCH: u64 = 20;
/// Most stored bytes served in one sync answer (half the consensus message limit, so the
/// answer with its certificates always encodes within it).
pub const MAX_SYNC_BYTES: usize = super::codec::MAX_CONSENSUS_MESSAGE_BYTES / 2;

/// A block that was decided and applied.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The block.
    pub block: Arc<Block>,
    /// Contract events, in order.
    pub events: Arc<Vec<Event>>,
    /// The block's event feed, as the ledger stored it with the block.
    pub feed: Arc<Vec<FeedEvent>>,
    /// State root after it.
    pub state_root: Hash,
}

/// Everything the driver owns or shares.
#[derive(Debug)]
pub struct Driver {
    /// Chain id.
    pub chain: Hash,
    /// This node's consensus address.
    pub me: Address,
    /// Its signer (validators only).
    pub signer: Option<AccountSigner>,
    /// Genesis validator accounts; their power is their bonded stake.
    pub validators: Vec<AccountId>,
    /// The chain view this driver alone publishes.
    pub view: ChainPublisher,
    /// The mempool: candidates for proposals, evictions of what the contract refused.
    pub pool: Pool,
    /// The ledger.
    pub ledger: Ledger,
    /// Undecided blocks.
    pub undecided: Undecided,
    /// Timeouts per round.
    pub timeouts: LinearTimeouts,
    /// Least time between blocks.
    pub block_time: Duration,
    /// Contract snapshot interval in blocks.
    pub snapshot_every: u64,
    /// Counters.
    pub metrics: Arc<ConsensusMetrics>,
    /// Decided blocks, for subscribers (audit pipeline, tests).
    pub decided_tx: broadcast::Sender<Decided>,
    streams: Streams,
    height: Height,
    round: Round,
    pending_finalize: Option<Height>,
    last_decided_at: Option<Instant>,
    /// Blocks this node already executed (built, or validated as a proposal), with the
    /// tip they were executed on, so that the decided one is not executed again: at most
    /// [`EXECUTED_CACHE`] entries, cleared at every decision.
    executed: Vec<(Tip, BlockId, Executed)>,
    /// Test builds: the key this node forges proposals with in rounds it does not propose
    /// (see [`super::forge`]).
    #[cfg(feature = "misbehave")]
    forge: Option<AccountSigner>,
}

/// Why the driver could not answer one of the engine's messages (logged; the engine goes
/// on).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DriverError {
    /// The engine's network channel is closed.
    #[error(transparent)]
    Network(#[from] SendError<()>),
    /// Asked to propose at a height that does not follow the tip.
    #[error("asked to propose height {height} while the tip is {tip}")]
    NotNext {
        /// The height asked for.
        height: Height,
        /// The tip's height.
        tip: u64,
    },
    /// This node has no consensus key.
    #[error("a full node cannot propose")]
    FullNode,
    /// The decided block is not among the undecided ones kept here.
    #[error("decided block {0} is not known here")]
    UnknownDecided(BlockId),
    /// A kept block does not decode.
    #[error(transparent)]
    Decode(#[from] DecodeError),
    /// The decided block does not execute.
    #[error(transparent)]
    Exec(#[from] ExecError),
    /// This node could not prove the seed of the block it proposes.
    #[error("block seed not proven: {0}")]
    Seed(#[from] trust_protocol::vrf::VrfError),
    /// A certificate does not encode.
    #[error(transparent)]
    Codec(#[from] CodecError),
    /// An undecided block could not be stored.
    #[error(transparent)]
    Undecided(#[from] UndecidedError),
    /// The ledger did not take the decided block.
    #[error(transparent)]
    Ledger(#[from] LedgerError),
}

/// Executions kept for the decision (one per round a height may take before deciding).
const EXECUTED_CACHE: usize = 4;

/// Streams `block` as signed proposal parts under the stream id of `init`'s slot.
pub(super) async fn stream_out(
    chain: &Hash,
    signer: &AccountSigner,
    init: PartInit,
    block: &Block,
    channels: &Channels<TrustContext>,
) -> Result<(), DriverError> {
    let stream = stream_id(init.height, init.round);
    let parts = stream_parts(chain, init, block, |d| signer.sign(d));
    let mut seq = 0u64;
    for part in parts {
        let msg = StreamMessage::new(stream.clone(), seq, StreamContent::Data(part));
        channels
            .network
            .send(NetworkMsg::PublishProposalPart(msg))
            .await
            .map_err(|_| SendError(()))?;
        seq = seq.saturating_add(1);
    }
    let fin = StreamMessage::new(stream, seq, StreamContent::Fin);
    channels
        .network
        .send(NetworkMsg::PublishProposalPart(fin))
        .await
        .map_err(|_| SendError(()).into())
}

/// The validator set that votes at the height after `contract`'s: every genesis validator
/// with positive voting power, weighted by it ([`Contract::voting_power`]: the bonded
/// stake, falling at most the network's `max_power_cut` per block, so one session's
/// slashes cannot strip a validator of its power at once); if none has power, all of them
/// with power 1 (a network must never stop because its validators unbonded).
pub fn validator_set(validators: &[AccountId], contract: &Contract) -> ValidatorSet {
    let staked: Vec<Validator> = validators
        .iter()
        .map(|v| Validator {
            address: Address::of(v),
            voting_power: contract.voting_power(v),
        })
        .collect();
    let set = ValidatorSet::new(staked);
    if set.validators().is_empty() {
        return ValidatorSet::new(
            validators
                .iter()
                .map(|v| Validator {
                    address: Address::of(v),
                    voting_power: 1,
                })
                .collect(),
        );
    }
    set
}

/// [`validator_set`] as plain accounts and powers, for readers of the [`ChainView`].
pub fn validator_powers(validators: &[AccountId], contract: &Contract) -> Vec<ValidatorPower> {
    validator_set(validators, contract)
        .validators()
        .iter()
        .map(|v| ValidatorPower {
            id: v.address.account(),
            power: v.voting_power,
        })
        .collect()
}

impl Driver {
    /// A driver over restored state.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        chain: Hash,
        me: Address,
        signer: Option<AccountSigner>,
        validators: Vec<AccountId>,
        view: ChainPublisher,
        pool: Pool,
        ledger: Ledger,
        undecided: Undecided,
        timeouts: LinearTimeouts,
        block_time: Duration,
        snapshot_every: u64,
        metrics: Arc<ConsensusMetrics>,
        decided_tx: broadcast::Sender<Decided>,
    ) -> Self {
        Self {
            chain,
            me,
            signer,
            validators,
            view,
            pool,
            ledger,
            undecided,
            timeouts,
            block_time,
            snapshot_every,
            metrics,
            decided_tx,
            streams: Streams::default(),
            height: Height(0),
            round: Round::Nil,
            pending_finalize: None,
            last_decided_at: None,
            executed: Vec::new(),
            #[cfg(feature = "misbehave")]
            forge: None,
        }
    }

    /// Test builds: forge proposals signed by `signer` for the rounds this node does not
    /// propose (a misbehaving node, see [`super::forge`]).
    #[cfg(feature = "misbehave")]
    pub fn forging(mut self, signer: AccountSigner) -> Self {
        self.forge = Some(signer);
        self
    }

    /// The contract state and tip as last published.
    fn snapshot(&self) -> (Arc<Contract>, Tip) {
        let v = self.view.current();
        (v.contract.clone(), v.tip)
    }

    fn tip(&self) -> Tip {
        self.view.current().tip
    }

    fn params(&self) -> HeightParams<TrustContext> {
        HeightParams::new(
            validator_set(&self.validators, &self.view.current().contract),
            self.timeouts,
            Some(self.block_time),
        )
    }

    /// Answers the engine until `stop` fires (`Ok`) or the engine closes its channel (an
    /// error: the engine stopped on its own). A message being handled when `stop` fires is
    /// handled to the end first.
    pub async fn run(mut self, mut channels: Channels<TrustContext>, mut stop: Stop) -> TaskResult {
        loop {
            let msg = tokio::select! {
                biased;
                () = stop.wait() => {
                    info!("consensus driver stopped");
                    return Ok(());
                }
                msg = channels.consensus.recv() => msg,
            };
            let Some(msg) = msg else {
                return Err("the consensus engine closed its channel".into());
            };
            if let Err(e) = self.handle(msg, &channels).await {
                error!(error = %e, "consensus driver step failed");
            }
        }
    }

    async fn handle(
        &mut self,
        msg: AppMsg<TrustContext>,
        channels: &Channels<TrustContext>,
    ) -> Result<(), DriverError> {
        match msg {
            AppMsg::ConsensusReady { reply } => {
                let start = Height(self.tip().height.saturating_add(1));
                info!(height = %start, "consensus ready");
                self.height = start;
                let _ = reply.send((start, self.params()));
            }
            AppMsg::StartedRound {
                height,
                round,
                proposer,
                role,
                reply_value,
            } => {
                debug!(%height, %round, %proposer, ?role, "started round");
                self.height = height;
                self.round = round;
                #[cfg(feature = "misbehave")]
                if proposer != self.me
                    && let Some(signer) = self.forge.clone()
                {
                    self.forge_proposal(&signer, height, round, channels).await;
                }
                let values = self
                    .undecided
                    .at_height(height)
                    .into_iter()
                    .filter(|(_, e)| e.round == round)
                    .map(|(id, e)| ProposedValue {
                        height,
                        round,
                        valid_round: e.pol_round,
                        proposer: e.proposer,
                        value: id,
                        validity: Validity::from_bool(e.valid),
                    })
                    .collect();
                let _ = reply_value.send(values);
            }
            AppMsg::GetValue {
                height,
                round,
                timeout: _,
                reply,
            } => {
                let value = self.propose(height, round, channels).await?;
                let _ = reply.send(value);
            }
            AppMsg::ExtendVote { reply, .. } => {
                let _ = reply.send(None);
            }
            AppMsg::VerifyVoteExtensions {
                extensions, reply, ..
            } => {
                let _ = reply.send(extensions.into_iter().map(|(a, _)| (a, Ok(()))).collect());
            }
            AppMsg::RestreamProposal {
                height,
                round,
                valid_round,
                address,
                value_id,
            } => {
                if address != self.me {
                    debug!(%height, %round, "restream asked for another proposer's block; skipped");
                    return Ok(());
                }
                let Some(entry) = self.undecided.find(height, &value_id) else {
                    debug!(%height, %round, %value_id, "no block to restream");
                    return Ok(());
                };
                let block: Block = encoding::decode(&entry.block)?;
                self.publish(height, round, valid_round, &block, channels)
                    .await?;
            }
            AppMsg::GetHistoryMinHeight { reply } => {
                // A pruned ledger serves from its base (`[ledger] keep_blocks`).
                let oldest = self.ledger.oldest_block().ok().flatten().unwrap_or(1);
                let _ = reply.send(Height(oldest.max(1)));
            }
            AppMsg::ReceivedProposalPart {
                from,
                published_by,
                part,
                reply,
            } => {
                let value = self.received_part(from, published_by, part);
                let _ = reply.send(value);
            }
            AppMsg::Decided {
                certificate, reply, ..
            } => {
                match self.commit(&certificate) {
                    Ok(()) => self.pending_finalize = Some(certificate.height),
                    Err(e) => {
                        error!(height = %certificate.height, error = %e, "could not commit decided block");
                        self.pending_finalize = None;
                    }
                }
                let _ = reply.send(());
            }
            AppMsg::Finalized {
                certificate, reply, ..
            } => {
                let committed = self.tip().height >= certificate.height.0;
                let next = if committed {
                    Next::Start(
                        Height(certificate.height.0.saturating_add(1)),
                        self.params(),
                    )
                } else {
                    warn!(height = %certificate.height, "decided block not committed; restarting the height");
                    Next::Restart(certificate.height, self.params())
                };
                self.pending_finalize = None;
                let _ = reply.send(next);
            }
            AppMsg::GetDecidedValues { range, reply } => {
                let _ = reply.send(self.decided_values(*range.start(), *range.end()));
            }
            AppMsg::ProcessSyncedValue {
                height,
                round,
                proposer,
                value_bytes,
                reply,
            } => {
                let _ = reply.send(self.synced_value(height, round, proposer, &value_bytes));
            }
        }
        Ok(())
    }

    async fn propose(
        &mut self,
        height: Height,
        round: Round,
        channels: &Channels<TrustContext>,
    ) -> Result<LocallyProposedValue<TrustContext>, DriverError> {
        let (contract, tip) = self.snapshot();
        if tip.height.saturating_add(1) != height.0 {
            return Err(DriverError::NotNext {
                height,
                tip: tip.height,
            });
        }
        let Some(signer) = &self.signer else {
            return Err(DriverError::FullNode);
        };
        let key = signer.key().clone();
        let candidates = self.pool.reap(contract.clone(), MAX_CANDIDATES).await;
        let (block, executed, dropped) =
            build_block(&contract, &tip, &key, crate::chain::now_ms(), &candidates)?;
        // Refused when tried: out of the pool, and held against its sender. Only one that
        // waits (a reveal before its window, a nonce behind one refused in this block)
        // stays for a later block.
        let failed: Vec<_> = dropped
            .iter()
            .filter(|d| !mempool::waits(&d.error))
            .collect();
        if !failed.is_empty() {
            let evicted = self
                .pool
                .failed(failed.iter().map(|d| d.id).collect())
                .await;
            for d in failed.iter().filter(|d| evicted.contains(&d.id)) {
                info!(tx = %d.id, error = %d.error, "transaction refused by the contract; removed from the mempool");
            }
        }
        let id = BlockId::of(block.hash());
        self.remember(tip, id, executed);
        debug!(%height, %round, txs = block.txs.len(), block = %id, "proposing");
        self.undecided.put(
            height,
            &id,
            &UndecidedEntry {
                round,
                pol_round: Round::Nil,
                proposer: self.me,
                valid: true,
                block: encoding::encode(&block),
            },
        )?;
        self.publish(height, round, Round::Nil, &block, channels)
            .await?;
        Ok(LocallyProposedValue::new(height, round, id))
    }

    async fn publish(
        &self,
        height: Height,
        round: Round,
        pol_round: Round,
        block: &Block,
        channels: &Channels<TrustContext>,
    ) -> Result<(), DriverError> {
        let Some(signer) = &self.signer else {
            return Err(DriverError::FullNode);
        };
        let init = PartInit {
            height,
            round,
            pol_round,
            proposer: self.me,
        };
        stream_out(&self.chain, signer, init, block, channels).await
    }

    /// Takes one proposal part from the engine; returns the proposed value once a stream
    /// from the slot's proposer is complete and executed (valid or not).
    pub(crate) fn received_part(
        &mut self,
        from: PeerId,
        published_by: Option<PeerId>,
        part: StreamMessage<super::context::ProposalPart>,
    ) -> Option<ProposedValue<TrustContext>> {
        // Gossipsub authenticates the author; a transport without one names the neighbour.
        let publisher = published_by.unwrap_or(from);
        let (contract, tip) = self.snapshot();
        let Some((height, round)) = stream_slot(&part.stream_id) else {
            self.refuse_part(&publisher, "a stream id that names no slot");
            return None;
        };
        if height.0 != tip.height.saturating_add(1) {
            // A decided height (a late part) or one this node has not reached: nothing it
            // could vote on now; the engine asks again through `StartedRound`.
            debug!(%height, tip = tip.height, "proposal part for another height dropped");
            return None;
        }
        let set = validator_set(&self.validators, &contract);
        let Some(proposer) = super::context::proposer_of(&set, height, round).map(|v| v.address)
        else {
            self.refuse_part(&publisher, "no validator proposes this slot");
            return None;
        };
        if proposer.peer_id() != Some(publisher) {
            self.refuse_part(
                &publisher,
                "published by someone other than the slot's proposer",
            );
            return None;
        }
        let outcome = self.streams.insert(&self.chain, publisher, part)?;
        let assembled = outcome.and_then(|a| {
            let i = &a.init;
            if (i.height, i.round, i.proposer) != (height, round, proposer) {
                Err(StreamError::Mismatch(
                    "its Init names another slot or proposer",
                ))
            } else {
                Ok(a)
            }
        });
        let assembled = match assembled {
            Ok(a) => a,
            Err(e) => {
                self.metrics
                    .proposals_rejected
                    .fetch_add(1, Ordering::Relaxed);
                warn!(%publisher, error = %e, "proposal stream refused");
                return None;
            }
        };
        let init = assembled.init;
        let block = assembled.block;
        let id = BlockId::of(block.hash());
        // The validator's half of the BFT time rule (`trust_protocol::block`, "Block
        // time"): a proposal stamped too far ahead of this node's clock gets a nil vote,
        // unexecuted. Only here, when voting: a decided block is never refused for it.
        let clock = crate::chain::now_ms();
        if block.header.time_ms > clock.saturating_add(MAX_CLOCK_AHEAD_MS) {
            self.metrics
                .proposals_rejected
                .fetch_add(1, Ordering::Relaxed);
            warn!(height = %init.height, round = %init.round, proposer = %init.proposer,
                time_ms = block.header.time_ms, clock_ms = clock,
                "proposed block is stamped too far ahead of this node's clock; voting nil");
            return Some(ProposedValue {
                height: init.height,
                round: init.round,
                valid_round: init.pol_round,
                proposer: init.proposer,
                value: id,
                validity: Validity::from_bool(false),
            });
        }
        self.metrics
            .proposals_executed
            .fetch_add(1, Ordering::Relaxed);
        let valid = match execute_block(&contract, &tip, &block) {
            Ok(done) => {
                self.remember(tip, id, done);
                true
            }
            Err(e) => {
                self.metrics
                    .proposals_rejected
                    .fetch_add(1, Ordering::Relaxed);
                warn!(height = %init.height, round = %init.round, proposer = %init.proposer, error = %e, "proposed block does not execute");
                self.evict_culprit(&contract, &block, &e);
                false
            }
        };
        // Only a block that executed is kept for the decision (and for a restart); an
        // invalid one is answered so the engine can vote nil at once, and forgotten.
        if valid {
            let entry = UndecidedEntry {
                round: init.round,
                pol_round: init.pol_round,
                proposer: init.proposer,
                valid,
                block: encoding::encode(&block),
            };
            if let Err(e) = self.undecided.put(init.height, &id, &entry) {
                error!(error = %e, "could not store proposal");
                return None;
            }
        }
        Some(ProposedValue {
            height: init.height,
            round: init.round,
            valid_round: init.pol_round,
            proposer: init.proposer,
            value: id,
            validity: Validity::from_bool(valid),
        })
    }

    /// Proposal streams being reassembled.
    pub fn streams_open(&self) -> usize {
        self.streams.len()
    }

    fn refuse_part(&self, publisher: &PeerId, why: &'static str) {
        self.metrics
            .proposal_parts_refused
            .fetch_add(1, Ordering::Relaxed);
        debug!(%publisher, why, "proposal part dropped before it was buffered");
    }

    /// When a proposed block failed because the contract refused one of its transactions,
    /// and that transaction is refused on the tip's state on its own too (so no ordering
    /// chosen by the proposer made it fail), it leaves the mempool as a failure.
    fn evict_culprit(&self, contract: &Contract, block: &Block, error: &ExecError) {
        let ExecError::Rejected { index, error, .. } = error else {
            return;
        };
        if mempool::waits(error) {
            return;
        }
        let Some(tx) = block
            .txs
            .get(*index)
            .and_then(|b| encoding::decode::<SignedTx>(b).ok())
        else {
            return;
        };
        // On its own means as the block's first transaction: after the block's start
        // (the seats it draws), which a key delivery may need.
        let ctx = BlockCtx {
            height: block.header.height,
            block_hash: block.header.seed(),
        };
        let mut trial = contract.clone();
        trial.begin_block(&ctx);
        if let Err(alone) = trial.apply(&ctx, &tx)
            && !mempool::waits(&alone)
            && !self.pool.report_failed(vec![tx.id()])
        {
            debug!(tx = %tx.id(), "mempool busy; a failing transaction stays pooled for now");
        }
    }

    /// Keeps the execution of block `id` on `tip` for its decision (bounded; the oldest
    /// goes first).
    fn remember(&mut self, tip: Tip, id: BlockId, done: Executed) {
        self.executed.retain(|(t, i, _)| !(*t == tip && *i == id));
        if self.executed.len() >= EXECUTED_CACHE {
            self.executed.remove(0);
        }
        self.executed.push((tip, id, done));
    }

    /// Applies the decided block: ledger first (flushed), then the published view.
    fn commit(&mut self, cert: &CommitCertificate<TrustContext>) -> Result<(), DriverError> {
        let (contract, tip) = self.snapshot();
        if cert.height.0 <= tip.height {
            return Ok(()); // already applied (replay after restart)
        }
        let entry = self
            .undecided
            .find(cert.height, &cert.value_id)
            .ok_or(DriverError::UnknownDecided(cert.value_id))?;
        let block: Block = encoding::decode(&entry.block)?;
        // Executed already when it was built or validated on this same tip: the result is
        // a function of (state at the tip, block), so it is taken as it is.
        let cached = self
            .executed
            .iter()
            .position(|(t, id, _)| *t == tip && *id == cert.value_id)
            .map(|i| self.executed.swap_remove(i).2);
        self.executed.clear();
        let done = match cached {
            Some(done) => {
                self.metrics
                    .executions_reused
                    .fetch_add(1, Ordering::Relaxed);
                done
            }
            None => execute_block(&contract, &tip, &block)?,
        };
        let sessions = decided_sessions(&done.events);
        let retired = retired_outcomes(&done.events, &contract);
        let feed = crate::feed::derive(block.header.height, &done.events, &done.contract);
        let certificate = encode_borsh(&WireCertificate::from(cert))?.to_vec();
        let stored = StoredBlock {
            block: block.clone(),
            certificate,
        };
        // The validators that vote next, and whether the block changed them: a change is
        // recorded with the block, for outcome proofs to walk (`crate::proof`).
        let validators = validator_powers(&self.validators, &done.contract);
        let powers_changed = validator_powers(&self.validators, &contract) != validators;
        self.ledger
            .append_with_feed(&stored, &sessions, &feed, powers_changed, &retired)?;
        let height = block.header.height;
        if self.snapshot_every > 0
            && height.is_multiple_of(self.snapshot_every)
            && let Err(e) = self.ledger.put_snapshot(height, &done.contract.snapshot())
        {
            warn!(error = %e, "contract snapshot not written");
        }
        let state_root = block.header.state_root;
        let hash = block.hash();
        let txs = block.txs.len();
        // The mempool prunes itself against this view before it answers anyone again.
        self.view.publish(ChainView {
            tip: tip.after(&block),
            state_root,
            contract: Arc::new(done.contract),
            parent: Some(contract),
            validators: validators.into(),
        });
        self.undecided.prune_through(cert.height);
        let now = Instant::now();
        if let Some(prev) = self.last_decided_at.replace(now) {
            let ms = u64::try_from(now.duration_since(prev).as_millis()).unwrap_or(u64::MAX);
            self.metrics.last_block_ms.store(ms, Ordering::Relaxed);
        }
        self.metrics.height.store(height, Ordering::Relaxed);
        self.metrics.blocks.fetch_add(1, Ordering::Relaxed);
        self.metrics
            .txs
            .fetch_add(u64::try_from(txs).unwrap_or(0), Ordering::Relaxed);
        // An idle chain's blocks at DEBUG: at INFO, a summary a minute says how it goes
        // (`super::summary`); a block that carries transactions or decides sessions is
        // worth its own line.
        let (round, signatures) = (cert.round, cert.commit_signatures.len());
        if txs > 0 || !sessions.is_empty() {
            info!(target: BLOCKS_TARGET, height, txs, decided = sessions.len(), block = %hash, %state_root, %round, signatures, "block committed");
        } else {
            debug!(target: BLOCKS_TARGET, height, txs, block = %hash, %state_root, %round, signatures, "block committed");
        }
        let _ = self.decided_tx.send(Decided {
            block: Arc::new(block),
            events: Arc::new(done.events),
            feed: Arc::new(feed),
            state_root,
        });
        Ok(())
    }

    fn decided_values(&self, from: Height, to: Height) -> Vec<RawDecidedValue<TrustContext>> {
        let to =
            to.0.min(from.0.saturating_add(MAX_SYNC_BATCH.saturating_sub(1)));
        let count = u32::try_from(to.saturating_sub(from.0).saturating_add(1)).unwrap_or(0);
        // Sizes first: blocks past the byte budget are neither read whole nor decoded.
        let raws = match self.ledger.raw_blocks(from.0, count, MAX_SYNC_BYTES) {
            Ok(r) => r,
            Err(e) => {
                error!(error = %e, "stored blocks not readable for sync");
                return Vec::new();
            }
        };
        let mut out = Vec::new();
        for (h, raw) in (from.0..).zip(raws) {
            let Ok(stored) = encoding::decode::<StoredBlock>(&raw) else {
                error!(height = h, "stored block does not decode");
                break;
            };
            let Ok(cert) = decode_borsh::<WireCertificate>(&stored.certificate) else {
                error!(height = h, "stored certificate does not decode");
                break;
            };
            out.push(RawDecidedValue::new(
                Bytes::from(encoding::encode(&stored.block)),
                cert.to_extended(),
            ));
        }
        self.metrics
            .sync_served
            .fetch_add(u64::try_from(out.len()).unwrap_or(0), Ordering::Relaxed);
        out
    }

    pub(crate) fn synced_value(
        &mut self,
        height: Height,
        round: Round,
        proposer: Address,
        bytes: &[u8],
    ) -> SyncedValueOutcome<TrustContext> {
        let block: Block = match encoding::decode(bytes) {
            Ok(b) => b,
            Err(e) => {
                self.metrics.sync_rejected.fetch_add(1, Ordering::Relaxed);
                warn!(%height, error = %e, "synced block does not decode; peer penalised");
                return SyncedValueOutcome::PeerFault;
            }
        };
        if block.header.height != height.0 {
            self.metrics.sync_rejected.fetch_add(1, Ordering::Relaxed);
            warn!(%height, got = block.header.height, "synced block is for another height; peer penalised");
            return SyncedValueOutcome::PeerFault;
        }
        let (contract, tip) = self.snapshot();
        let valid = match execute_block(&contract, &tip, &block) {
            Ok(_) => true,
            Err(e) => {
                self.metrics.sync_rejected.fetch_add(1, Ordering::Relaxed);
                warn!(%height, error = %e, "synced block does not execute");
                false
            }
        };
        let id = BlockId::of(block.hash());
        if valid {
            let entry = UndecidedEntry {
                round,
                pol_round: Round::Nil,
                proposer,
                valid,
                block: encoding::encode(&block),
            };
            if let Err(e) = self.undecided.put(height, &id, &entry) {
                error!(error = %e, "could not store synced block");
                return SyncedValueOutcome::LocalTransientError;
            }
        }
        debug!(%height, block = %id, valid, "synced block processed");
        SyncedValueOutcome::Verdict(ProposedValue {
            height,
            round,
            valid_round: Round::Nil,
            proposer,
            value: id,
            validity: Validity::from_bool(valid),
        })
    }
}
