//! Ordering with Malachite BFT (the `arc-malachitebft-app-channel` 0.8 engine).
//!
//! The engine runs its own libp2p swarm on `[consensus] listen`, its write-ahead log under
//! `<home>/data/consensus/`, and value sync for nodes that fell behind. This module gives
//! it a [`TrustContext`](context::TrustContext) (block ids as values, account keys as
//! validator keys, stake-weighted validator sets), a [`TrustCodec`](codec::TrustCodec),
//! signing, and the [`Driver`](driver::Driver) that turns decisions into ledger blocks and
//! contract state. A one-validator network is the dev mode; there is no other ordering
//! path.

pub mod codec;
pub mod context;
pub mod driver;
#[cfg(feature = "misbehave")]
pub mod forge;
pub mod proposals;
pub mod signing;
pub mod summary;

use std::{
    path::PathBuf,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
    time::Duration,
};

use malachitebft_app::config::{
    ConsensusConfig, DiscoveryConfig, NodeConfig, P2pConfig, PubSubProtocol, ValuePayload,
    ValueSyncConfig,
};
use malachitebft_app_channel::{
    Channels, ConsensusContext, EngineBuilder, EngineHandle, NetworkContext, NetworkIdentity,
    RequestContext, SyncContext, WalContext,
};
use malachitebft_core_types::LinearTimeouts;
use tokio::sync::broadcast;
use tracing::{Instrument, info, warn};
use trust_protocol::{AccountId, Hash, Keypair};

use self::{
    codec::TrustCodec,
    context::{Address, TrustContext},
    driver::{Decided, Driver},
    proposals::Undecided,
    signing::{AccountSigner, AccountVerifier},
};
use crate::{
    ledger::Ledger,
    mempool::Pool,
    metrics::MetricsSource,
    tasks::{Stop, TaskResult},
    view::ChainPublisher,
};

/// Consensus counters exported at `/metrics`.
#[derive(Debug, Default)]
pub struct ConsensusMetrics {
    /// Height of the last committed block.
    pub height: AtomicU64,
    /// Blocks committed since start.
    pub blocks: AtomicU64,
    /// Transactions committed since start.
    pub txs: AtomicU64,
    /// Milliseconds between the last two commits.
    pub last_block_ms: AtomicU64,
    /// Proposal streams or blocks refused.
    pub proposals_rejected: AtomicU64,
    /// Proposal parts dropped before they were buffered: not from the proposer of the
    /// slot their stream names, or naming no slot.
    pub proposal_parts_refused: AtomicU64,
    /// Proposed blocks executed (each came complete and signed from its slot's proposer).
    pub proposals_executed: AtomicU64,
    /// Synced blocks refused (malformed, wrong height, not executing).
    pub sync_rejected: AtomicU64,
    /// Decided blocks served to syncing peers.
    pub sync_served: AtomicU64,
    /// Decided blocks applied from this node's own earlier execution of them (built or
    /// validated on the same tip) instead of being executed again.
    pub executions_reused: AtomicU64,
}

impl ConsensusMetrics {
    /// Prometheus text.
    pub fn render(&self, out: &mut String) {
        let rows: [(&str, &str, &str, &AtomicU64); 9] = [
            (
                "trust_blocks_committed_total",
                "counter",
                "Blocks committed since start.",
                &self.blocks,
            ),
            (
                "trust_txs_committed_total",
                "counter",
                "Transactions committed since start.",
                &self.txs,
            ),
            (
                "trust_block_interval_ms",
                "gauge",
                "Milliseconds between the last two committed blocks.",
                &self.last_block_ms,
            ),
            (
                "trust_proposals_rejected_total",
                "counter",
                "Proposal streams or blocks refused.",
                &self.proposals_rejected,
            ),
            (
                "trust_proposal_parts_refused_total",
                "counter",
                "Proposal parts dropped unbuffered: not from the slot's proposer.",
                &self.proposal_parts_refused,
            ),
            (
                "trust_proposals_executed_total",
                "counter",
                "Proposed blocks executed after their proposer's stream was complete.",
                &self.proposals_executed,
            ),
            (
                "trust_sync_rejected_total",
                "counter",
                "Synced blocks refused.",
                &self.sync_rejected,
            ),
            (
                "trust_sync_served_total",
                "counter",
                "Decided blocks served to syncing peers.",
                &self.sync_served,
            ),
            (
                "trust_executions_reused_total",
                "counter",
                "Decided blocks applied from this node's earlier execution instead of again.",
                &self.executions_reused,
            ),
        ];
        for (name, kind, help, v) in rows {
            out.push_str(&format!(
                "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {}\n",
                v.load(Ordering::Relaxed)
            ));
        }
    }
}

impl MetricsSource for ConsensusMetrics {
    fn render(&self, out: &mut String) {
        ConsensusMetrics::render(self, out);
    }
}

/// The engine's configuration (Malachite's `NodeConfig`).
#[derive(Debug, Clone)]
pub struct EngineConfig {
    moniker: String,
    consensus: ConsensusConfig,
    value_sync: ValueSyncConfig,
}

impl NodeConfig for EngineConfig {
    fn moniker(&self) -> &str {
        &self.moniker
    }

    fn consensus(&self) -> &ConsensusConfig {
        &self.consensus
    }

    fn consensus_mut(&mut self) -> &mut ConsensusConfig {
        &mut self.consensus
    }

    fn value_sync(&self) -> &ValueSyncConfig {
        &self.value_sync
    }

    fn value_sync_mut(&mut self) -> &mut ValueSyncConfig {
        &mut self.value_sync
    }
}

/// What [`start`] needs.
#[derive(Debug)]
pub struct ConsensusSetup {
    /// Log name.
    pub moniker: String,
    /// Chain id.
    pub chain: Hash,
    /// The account key (validator key and consensus network identity).
    pub key: Keypair,
    /// Genesis validators.
    pub validators: Vec<AccountId>,
    /// Engine swarm listen address.
    pub listen: libp2p::Multiaddr,
    /// Engine peers to keep connected.
    pub peers: Vec<libp2p::Multiaddr>,
    /// WAL directory.
    pub wal_dir: PathBuf,
    /// Least time between blocks.
    pub block_time: Duration,
    /// Round timeouts (see [`timeouts`]).
    pub timeouts: LinearTimeouts,
    /// Contract snapshot interval.
    pub snapshot_every: u64,
    /// How often peers exchange sync status.
    pub sync_interval: Duration,
    /// Test builds: forge proposals in rounds this node does not propose
    /// ([`forge`]).
    #[cfg(feature = "misbehave")]
    pub forge: bool,
}

/// A running engine and the driver that answers it (not yet driving: see
/// [`Running::run`]).
pub struct Running {
    /// Engine handle.
    pub engine: EngineHandle,
    driver: Driver,
    channels: Channels<TrustContext>,
    span: tracing::Span,
    /// Decided blocks.
    pub decided: broadcast::Sender<Decided>,
}

impl Running {
    /// Drives the engine until `stop` fires, then stops the engine. An error means the
    /// engine stopped on its own.
    pub async fn run(self, stop: Stop) -> TaskResult {
        let Running {
            engine,
            driver,
            channels,
            span,
            decided: _,
        } = self;
        let result = driver.run(channels, stop).instrument(span).await;
        if let Err(e) = engine.actor.kill_and_wait(None).await {
            warn!(error = ?e, "consensus engine did not stop cleanly");
        } else {
            info!("consensus engine stopped");
        }
        result
    }
}

impl std::fmt::Debug for Running {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Running").finish_non_exhaustive()
    }
}

/// Why the engine did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConsensusError {
    /// Key conversion.
    #[error("consensus key: {0}")]
    Key(#[source] crate::Cause),
    /// The engine failed to start (`{0:#}`: the engine's error with its whole chain).
    #[error("consensus engine: {0:#}")]
    Engine(#[source] crate::Cause),
    /// Local storage.
    #[error("consensus store: {0}")]
    Store(#[source] crate::Cause),
}

/// Round timeouts explicitly configured; the rest follow the block time.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TimeoutConfig {
    /// How long round 0 waits for a proposal.
    pub propose: Option<Duration>,
    /// How long a round waits after seeing 2/3 of prevotes, and of precommits, that do not
    /// agree.
    pub vote: Option<Duration>,
    /// How much each of those grows with every further round of a height.
    pub delta: Option<Duration>,
}

/// Round timeouts for blocks every `block_time`, unless configured otherwise: a proposal
/// is awaited two block times (400 ms to 3 s), votes that do not agree one block time
/// (200 ms to 1 s), and each further round of a height adds half a block time (100 to
/// 500 ms).
///
/// A height whose proposer is down costs the wait for the previous height's block time,
/// the propose timeout, then the precommit timeout (Tendermint waits it out even when 2/3
/// precommitted nil), then one round with a live proposer: about 0.3 + 0.6 + 0.3 s at
/// 300 ms blocks, against 0.3 + 3 + 1 s with Malachite's defaults.
pub fn timeouts(block_time: Duration, configured: TimeoutConfig) -> LinearTimeouts {
    let clamp = |d: Duration, lo: u64, hi: u64| {
        d.clamp(Duration::from_millis(lo), Duration::from_millis(hi))
    };
    let propose = configured
        .propose
        .unwrap_or_else(|| clamp(block_time.saturating_mul(2), 400, 3_000));
    let vote = configured
        .vote
        .unwrap_or_else(|| clamp(block_time, 200, 1_000));
    let delta = configured
        .delta
        .unwrap_or_else(|| clamp(block_time / 2, 100, 500));
    LinearTimeouts {
        propose,
        propose_delta: delta,
        prevote: vote,
        prevote_delta: delta,
        precommit: vote,
        precommit_delta: delta,
        rebroadcast: propose.saturating_add(vote).saturating_add(vote),
        ..LinearTimeouts::default()
    }
}

/// Starts the engine; the driver runs once [`Running::run`] is spawned.
pub async fn start(
    setup: ConsensusSetup,
    db: &sled::Db,
    view: ChainPublisher,
    pool: Pool,
    ledger: Ledger,
    metrics: Arc<ConsensusMetrics>,
) -> Result<Running, ConsensusError> {
    let me = Address::of(&setup.key.public());
    let is_validator = setup.validators.contains(&setup.key.public());
    let keypair = libp2p::identity::Keypair::ed25519_from_bytes(setup.key.seed())
        .map_err(|e| ConsensusError::Key(e.into()))?;
    let identity = NetworkIdentity::new(
        setup.moniker.clone(),
        keypair,
        is_validator.then(|| hex::encode(me.0)),
    );
    let p2p = P2pConfig {
        listen_addr: setup.listen.clone(),
        persistent_peers: setup.peers.clone(),
        discovery: DiscoveryConfig::default(),
        protocol: PubSubProtocol::default(),
        ..P2pConfig::default()
    };
    let config = EngineConfig {
        moniker: setup.moniker.clone(),
        consensus: ConsensusConfig {
            p2p,
            value_payload: ValuePayload::ProposalAndParts,
            ..ConsensusConfig::default()
        },
        value_sync: ValueSyncConfig {
            status_update_interval: setup.sync_interval,
            request_timeout: Duration::from_secs(5),
            ..ValueSyncConfig::default()
        },
    };
    std::fs::create_dir_all(&setup.wal_dir).map_err(|e| ConsensusError::Store(e.into()))?;
    let verifier = Box::new(AccountVerifier::new(setup.chain));
    let signer = AccountSigner::new(setup.key.clone(), setup.chain);
    let consensus_ctx = if is_validator {
        ConsensusContext::new_validator(me, verifier, Box::new(signer.clone()))
    } else {
        ConsensusContext::new_full_node(me, verifier)
    };
    let span = tracing::info_span!("consensus", node = %setup.moniker);
    let (channels, engine) = EngineBuilder::new(TrustContext, config)
        .with_default_wal(WalContext::new(
            setup.wal_dir.join("consensus.wal"),
            TrustCodec,
        ))
        .with_default_network(NetworkContext::new(identity, TrustCodec))
        .with_default_consensus(consensus_ctx)
        .with_default_sync(SyncContext::new(TrustCodec))
        .with_default_request(RequestContext::new(64))
        .build()
        .instrument(span.clone())
        .await
        .map_err(|e| ConsensusError::Engine(e.into()))?;
    let undecided = Undecided::open(db).map_err(|e| ConsensusError::Store(e.into()))?;
    let (decided, _) = broadcast::channel(256);
    let timeouts = setup.timeouts;
    let driver = Driver::new(
        setup.chain,
        me,
        is_validator.then_some(signer),
        setup.validators,
        view,
        pool,
        ledger,
        undecided,
        timeouts,
        setup.block_time,
        setup.snapshot_every,
        metrics,
        decided.clone(),
    );
    #[cfg(feature = "misbehave")]
    let driver = if setup.forge {
        driver.forging(AccountSigner::new(setup.key.clone(), setup.chain))
    } else {
        driver
    };
    Ok(Running {
        engine,
        driver,
        channels,
        span,
        decided,
    })
}

#[cfg(test)]
mod tests;
