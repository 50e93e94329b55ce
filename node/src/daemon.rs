//! `trust-node run`: one process that restores the chain from its ledger, joins the
//! network (our swarm for transactions and queries, Malachite's for ordering), and serves
//! the HTTP API until it is told to stop.
//!
//! Start-up order matters for crash safety: the ledger is opened and the contract state is
//! rebuilt (latest snapshot, then every later block replayed and checked against its
//! header's state root) before anything listens, so a node never serves or votes on a
//! state it has not verified.
//!
//! The node runs as named tasks ([`crate::tasks`]), each in its own span, each stopped by
//! one signal in stages, in this order:
//!
//! | stage | tasks | what they do |
//! |---|---|---|
//! | `intake` | `api`, `net`, `gossip`, `peers` (test builds: `spam`) | the HTTP API and the audit form; our libp2p swarm (gossip in, sync, Bitswap); gossiping this node's admitted transactions; polling peers' heights |
//! | `duties` | `seats`, `llm-probe` | provider and seat duties on each decided block (votes run as child tasks); the LLM endpoint's health |
//! | `consensus` | `consensus` | the Malachite engine and the driver that commits its decisions |
//! | `mempool` | `mempool` | the mempool's owner |
//!
//! On SIGINT/SIGTERM, or as soon as any task ends on its own (logged with its reason),
//! intake stops first so that nothing new comes in, then duties, then consensus, then
//! the mempool; the ledger is flushed last. The process exits 0 after a signal and
//! non-zero when a task died. Who writes which shared state is tabled in [`crate::view`].

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

use futures::FutureExt;
use libp2p::{Multiaddr, PeerId};
use tokio::sync::{broadcast, mpsc, watch};
use tracing::{Instrument, debug, info, warn};
use trust_contracts::Contract;
use trust_protocol::{
    AccountId, Hash,
    tx::{Call, SignedTx},
};

use crate::{
    api::{self, Api, ApiMetrics},
    audit::{
        human::{DEFAULT_CAPACITY, DEFAULT_MARGIN_BLOCKS, DeskSettings, HumanDesk},
        judge::{Auditor, ComputerAuditor},
        llm::{
            self, LlmAuditor, LlmStatus,
            client::{ChatClient, Endpoint, Limits, LlmMetrics},
        },
        outbox::Outbox,
        provider::Provider,
        seat::{BEHAVIOUR_ENV, FetchBlob, Seat, SeatMetrics},
    },
    blobs::{BlobStore, kubo::Kubo},
    chain::{Tip, execute_block},
    config::{self, GenesisDoc, NodeConfig},
    consensus::{self, ConsensusMetrics, ConsensusSetup, TimeoutConfig, driver::Decided},
    keys,
    ledger::Ledger,
    mempool::{self, MempoolError, Pool},
    metrics::MetricsSource,
    net::{
        self, NetConfig, NetHandle, NetHandler, NetMetrics, SyncStatus, TxCheck, TxVerdict,
        sync::MAX_BLOCKS_PER_REQUEST,
    },
    tasks::{Ended, Stop, TaskResult, Tasks},
    view::{ChainPublisher, ChainView, ChainWatch, PeerPublisher, PeerView, latest},
    web::{
        audit::{AuditWeb, router as audit_router},
        auth::Auth,
    },
};

/// Sessions judged at once by this node's seats (each may wait on a blob fetch).
const MAX_CONCURRENT_JUDGING: usize = 8;
/// How long each shutdown stage may take before its tasks are aborted.
pub const STOP_GRACE: Duration = Duration::from_secs(10);
/// Transactions admitted here (API, outbox) waiting to be gossiped.
const GOSSIP_QUEUE: usize = 1024;

/// Why the node stopped or did not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DaemonError {
    /// Home directory, config, genesis or keys.
    #[error("{0}")]
    Home(String),
    /// The ledger.
    #[error("ledger: {0}")]
    Ledger(String),
    /// The stored chain does not replay to its own state roots.
    #[error("ledger does not replay: {0}")]
    Replay(String),
    /// A listener or the network.
    #[error("network: {0}")]
    Net(String),
    /// The consensus engine.
    #[error(transparent)]
    Consensus(#[from] consensus::ConsensusError),
    /// A task ended while the node was running; the node stopped in order after it.
    #[error("task {task} died ({why}); the node stopped")]
    TaskDied {
        /// The task's name.
        task: &'static str,
        /// What it returned, or its panic message.
        why: String,
    },
}

/// Flags that override `config.toml`.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `api_listen`.
    pub api_listen: Option<String>,
    /// `p2p_listen`.
    pub p2p_listen: Option<String>,
    /// `consensus_listen`.
    pub consensus_listen: Option<String>,
    /// Least time between blocks.
    pub block_time: Option<Duration>,
    /// `ipfs_api`.
    pub ipfs_api: Option<String>,
    /// `llm_url`.
    pub llm_url: Option<String>,
    /// `llm_model`.
    pub llm_model: Option<String>,
    /// `llm_api_key_env`.
    pub llm_api_key_env: Option<String>,
    /// `human = true`: Human seats wait for a person at the audit form.
    pub human: bool,
}

/// What [`restore`] rebuilt from the ledger.
#[derive(Debug)]
pub struct Restored {
    /// The contract state at the tip.
    pub contract: Contract,
    /// The tip.
    pub tip: Tip,
    /// The state before the tip block (outcome proofs prove the tip certificate's stakes
    /// under it); `None` only at height 0.
    pub parent: Option<Contract>,
}

/// Restores the contract state and tip from the ledger: the newest snapshot below the tip
/// (so that at least the tip block is replayed, and the state before it is at hand), then
/// each later block replayed.
pub fn restore(ledger: &Ledger, doc: &GenesisDoc) -> Result<Restored, DaemonError> {
    let chain = doc.chain_id();
    let tip_now = ledger
        .tip()
        .map_err(|e| DaemonError::Ledger(e.to_string()))?
        .unwrap_or((0, Hash::ZERO));
    let mut contract = Contract::new(&doc.genesis)
        .map_err(|e| DaemonError::Home(e.to_string()))?
        .with_chain(chain);
    let mut tip = Tip {
        chain,
        height: 0,
        hash: Hash::ZERO,
    };
    if tip_now.0 > 1
        && let Some((h, bytes)) = ledger
            .snapshot_at_or_below(tip_now.0 - 1)
            .map_err(|e| DaemonError::Ledger(e.to_string()))?
        && h > 0
    {
        let block = ledger
            .block(h)
            .map_err(|e| DaemonError::Ledger(e.to_string()))?
            .ok_or_else(|| DaemonError::Ledger(format!("snapshot at {h} has no block")))?;
        match Contract::from_snapshot(&bytes) {
            Ok(c) if c.state_root() == block.block.header.state_root => {
                contract = c;
                tip = Tip {
                    chain,
                    height: h,
                    hash: block.block.hash(),
                };
            }
            _ => warn!(height = h, "snapshot unusable; replaying from genesis"),
        }
    }
    let from = tip.height.saturating_add(1);
    let mut parent = None;
    for h in from..=tip_now.0 {
        let stored = ledger
            .block(h)
            .map_err(|e| DaemonError::Ledger(e.to_string()))?
            .ok_or_else(|| DaemonError::Replay(format!("block {h} missing below the tip")))?;
        let done = execute_block(&contract, &tip, &stored.block)
            .map_err(|e| DaemonError::Replay(e.to_string()))?;
        parent = Some(std::mem::replace(&mut contract, done.contract));
        tip = tip.after(&stored.block);
    }
    Ok(Restored {
        contract,
        tip,
        parent,
    })
}

/// Admits gossiped transactions into the mempool and serves blocks to peers. Runs inside
/// the swarm task, so it never waits: it judges a transaction on the latest chain view,
/// then hands it to the mempool task and gives the swarm the verdict to come (the pool
/// alone knows what the sender has pooled already).
#[derive(Debug)]
struct Handler {
    chain: ChainWatch,
    pool: Pool,
    ledger: Ledger,
}

/// How a transaction the mempool refused counts against the peer that gossiped it: not at
/// all when it is harmless or may fit once this node has seen the next block, a flood
/// point when it is junk on this state (an honest peer a block ahead causes a few), a
/// strike when it is invalid data.
fn gossip_verdict(e: &MempoolError) -> TxVerdict {
    match e {
        MempoolError::Duplicate
        | MempoolError::Stale { .. }
        | MempoolError::TooFarAhead { .. }
        | MempoolError::Expired(_)
        | MempoolError::NotYet(_)
        | MempoolError::Full(_)
        | MempoolError::Stopped => TxVerdict::Ignore,
        MempoolError::Unaffordable { .. } | MempoolError::Unfit(_) => {
            TxVerdict::Refuse(e.to_string())
        }
        _ => TxVerdict::Reject(e.to_string()),
    }
}

impl NetHandler for Handler {
    fn on_tx(&self, _from: PeerId, tx: SignedTx) -> TxCheck {
        let view = latest(&self.chain);
        // The swarm verified the signature before handing the transaction over
        // (net::gossip::check_tx); it is not verified twice more here and in the pool.
        let checked = mempool::Signature::Checked;
        if let Err(e) = mempool::admissible_as(&tx, &view.contract, checked) {
            return TxCheck::Now(Err(gossip_verdict(&e)));
        }
        match self.pool.offer_checked(tx) {
            Some(verdict) => TxCheck::Later(
                async move {
                    match verdict.await {
                        Ok(Ok(_)) => Ok(()),
                        Ok(Err(e)) => Err(gossip_verdict(&e)),
                        Err(_) => Err(TxVerdict::Ignore),
                    }
                }
                .boxed(),
            ),
            None => {
                // Not taken (the pool's queue is full, or it stopped): not forwarded
                // either, and the peer did nothing wrong.
                debug!("mempool busy; gossiped transaction ignored");
                TxCheck::Now(Err(TxVerdict::Ignore))
            }
        }
    }

    fn sync_status(&self) -> SyncStatus {
        let view = latest(&self.chain);
        SyncStatus {
            height: view.tip.height,
            tip: view.tip.hash,
        }
    }

    fn sync_blocks(&self, from: u64, max: u32, budget: usize) -> Vec<Vec<u8>> {
        // Stored bytes as they are: their sizes bound the answer before anything is decoded.
        self.ledger
            .raw_blocks(from, max.min(MAX_BLOCKS_PER_REQUEST), budget)
            .unwrap_or_default()
    }
}

#[derive(Debug)]
struct NetSource(Arc<NetMetrics>);

impl MetricsSource for NetSource {
    fn render(&self, out: &mut String) {
        self.0.render(out);
    }
}

fn parse_addrs(list: &[String], what: &str) -> Result<Vec<Multiaddr>, DaemonError> {
    list.iter()
        .map(|s| {
            s.parse::<Multiaddr>()
                .map_err(|e| DaemonError::Home(format!("{what} address {s:?}: {e}")))
        })
        .collect()
}

/// What a vote needs beside the session: who judges, for whom, how many at once, and where
/// to watch the chain. The votes run as child tasks of the `seats` task and end with it.
struct Judging {
    seat: Arc<Seat>,
    me: AccountId,
    slots: Arc<tokio::sync::Semaphore>,
    chain: ChainWatch,
    decided: broadcast::Sender<Decided>,
    votes: tokio::task::JoinSet<()>,
}

impl Judging {
    /// Whether our seats in `session` may still commit at the node's current tip.
    fn open(&self, session: &Hash) -> bool {
        may_commit(&latest(&self.chain).contract, &self.me, session)
    }

    /// Judges `sessions` beside the block loop (a vote may wait on a blob fetch), at most
    /// [`MAX_CONCURRENT_JUDGING`] at once. A session whose commit window for our seats has
    /// passed is not judged, and a vote under way is abandoned as soon as a block closes
    /// it: after a restart the node replays blocks whose sessions are long decided (their
    /// ciphertexts gone), and a fetch that can only time out must not hold a judging slot
    /// while live sessions wait.
    async fn spawn(&mut self, contract: &Arc<Contract>, sessions: impl IntoIterator<Item = Hash>) {
        // Votes that ended are reaped here, so the set holds only those running.
        while self.votes.try_join_next().is_some() {}
        for session in sessions {
            if !may_commit(contract, &self.me, &session) || !self.open(&session) {
                debug!(%session, "not judged: this node's seats can no longer commit in it");
                continue;
            }
            let Ok(permit) = self.slots.clone().acquire_owned().await else {
                return;
            };
            if !self.open(&session) {
                continue;
            }
            let (seat, contract, chain, me) = (
                self.seat.clone(),
                contract.clone(),
                self.chain.clone(),
                self.me,
            );
            let mut blocks = self.decided.subscribe();
            let closed = async move {
                loop {
                    match blocks.recv().await {
                        Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                            if !may_commit(&latest(&chain).contract, &me, &session) {
                                return;
                            }
                        }
                        Err(broadcast::error::RecvError::Closed) => {
                            std::future::pending::<()>().await;
                        }
                    }
                }
            };
            self.votes.spawn(
                async move {
                    tokio::select! {
                        () = seat.vote(&session, &contract) => {}
                        () = closed => debug!("abandoned: the commit window closed first"),
                    }
                    drop(permit);
                }
                .instrument(tracing::debug_span!("vote", %session)),
            );
        }
    }
}

/// Whether `me` holds a seat in `session` that may still commit on `contract` (the tip).
fn may_commit(contract: &Contract, me: &AccountId, session: &Hash) -> bool {
    let Some(s) = contract.state().sessions.get(session) else {
        return false;
    };
    s.segments.iter().enumerate().any(|(i, seg)| {
        let Ok(segment) = u16::try_from(i) else {
            return false;
        };
        seg.seats
            .iter()
            .any(|x| x.account == *me && x.commitment.is_none())
            && mempool::expired(
                contract.state(),
                me,
                &Call::Commit {
                    session: *session,
                    segment,
                    commitment: Hash::ZERO,
                },
            )
            .is_none()
    })
}

/// The LLM judge `cfg` asks for, if any; a bad setting (URL, missing API key variable,
/// ARES ranges) stops the node at start rather than leaving its LLM seats to fail later.
fn llm_judge(
    cfg: &NodeConfig,
    commit_window: u64,
    block_time: Duration,
) -> Result<Option<LlmAuditor>, DaemonError> {
    let Some(url) = &cfg.llm_url else {
        return Ok(None);
    };
    let endpoint = Endpoint::new(
        url,
        cfg.llm_model.as_deref().unwrap_or("default"),
        cfg.llm_api_key_env.as_deref(),
    )
    .map_err(DaemonError::Home)?;
    let defaults = Limits::default();
    let limits = Limits {
        request_timeout: cfg
            .llm_timeout_ms
            .map_or(defaults.request_timeout, Duration::from_millis),
        retries: cfg.llm_retries.unwrap_or(defaults.retries),
        max_concurrent: cfg
            .llm_max_concurrent
            .unwrap_or(defaults.max_concurrent)
            .clamp(1, 64),
        max_reply_bytes: cfg
            .llm_max_reply_bytes
            .unwrap_or(defaults.max_reply_bytes)
            .clamp(1024, 16 * 1024 * 1024),
        ..defaults
    };
    let ares = cfg.llm_ares.unwrap_or_default();
    ares.validate().map_err(DaemonError::Home)?;
    let deadline = cfg.llm_deadline_ms.map_or_else(
        || llm::default_deadline(commit_window, block_time),
        Duration::from_millis,
    );
    info!(
        url = %endpoint.url,
        model = %endpoint.model,
        key = endpoint.auth.is_some(),
        samples = ares.samples(),
        deadline_ms = u64::try_from(deadline.as_millis()).unwrap_or(u64::MAX),
        "LLM seats judge through this endpoint"
    );
    let client = ChatClient::new(endpoint, limits, Arc::new(LlmMetrics::default()))
        .map_err(DaemonError::Home)?;
    let judge = LlmAuditor::new(client, ares, deadline);
    judge.warm_up();
    Ok(Some(judge))
}

/// How often the LLM endpoint's health is probed for `status`.
const LLM_PROBE_EVERY: Duration = Duration::from_secs(10);

/// The `llm-probe` task: the one writer of the LLM endpoint's health.
async fn probe_llm(
    client: ChatClient,
    status: watch::Sender<Option<LlmStatus>>,
    mut stop: Stop,
) -> TaskResult {
    let mut tick = tokio::time::interval(LLM_PROBE_EVERY);
    loop {
        let r = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            r = async {
                tick.tick().await;
                client.probe().await
            } => r,
        };
        if let Err(e) = &r {
            warn!(target: "trust::llm", error = %e, "LLM endpoint does not answer");
        }
        status.send_replace(Some(LlmStatus {
            url: client.endpoint().url.clone(),
            model: client.endpoint().model.clone(),
            answers: r.is_ok(),
            error: r.err().map(|e| e.to_string()),
        }));
    }
}

/// How often peers are asked for their height.
const PEERS_EVERY: Duration = Duration::from_secs(2);

/// The `peers` task: the one writer of the [`PeerView`].
async fn watch_peers(net: NetHandle, publisher: PeerPublisher, mut stop: Stop) -> TaskResult {
    let mut tick = tokio::time::interval(PEERS_EVERY);
    loop {
        let view = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            v = async {
                tick.tick().await;
                let peers = net
                    .peers()
                    .await
                    .map_err(|e| format!("the network task does not answer: {e}"))?;
                // Ask each peer where it stands over our request-response protocol: status
                // shows it, and an operator sees at once whether this node is behind.
                let mut heights = Vec::with_capacity(peers.len());
                for p in &peers {
                    if let Ok(st) = net.status_of(*p).await {
                        heights.push((p.to_string(), st.height));
                    }
                }
                Ok::<_, String>(PeerView {
                    peers: peers.len(),
                    heights,
                })
            } => v?,
        };
        publisher.publish(view);
    }
}

/// The `gossip` task: publishes what this node admitted (API, outbox) to its peers.
async fn gossip_out(
    net: NetHandle,
    mut rx: mpsc::Receiver<SignedTx>,
    mut stop: Stop,
) -> TaskResult {
    loop {
        let tx = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            tx = rx.recv() => tx.ok_or("every producer of transactions to gossip is gone")?,
        };
        if let Err(e) = net.publish_tx(&tx).await {
            warn!(tx = %tx.id(), error = %e, "could not gossip transaction");
        }
    }
}

/// The `seats` task: provider and seat duties, resumed from what a restart interrupted and
/// then driven by decided blocks.
async fn duties(
    mut decided: broadcast::Receiver<Decided>,
    chain: ChainWatch,
    outbox: Outbox,
    provider: Arc<Provider>,
    mut judging: Judging,
    human: Option<HumanDesk>,
    mut stop: Stop,
) -> TaskResult {
    let seat = judging.seat.clone();
    if let Some(desk) = &human {
        // Deadlines count from the restored tip, before any seat waits.
        desk.on_block(latest(&chain).tip.height, &[]);
    }
    let resume = async {
        // What a restart interrupted: key deliveries and mapping openings the provider
        // owes, reveals now, votes in sessions still committing.
        let contract = latest(&chain).contract.clone();
        provider.resume(&contract).await;
        let sessions = seat.resume(&contract).await;
        judging.spawn(&contract, sessions).await;
    };
    tokio::select! {
        biased;
        () = stop.wait() => return Ok(()),
        () = resume => {}
    }
    loop {
        let d = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            d = decided.recv() => d,
        };
        let d = match d {
            Ok(d) => d,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                warn!(
                    skipped = n,
                    "audit duties fell behind the chain; some blocks' events were skipped"
                );
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => {
                return Err("the consensus driver no longer announces blocks".into());
            }
        };
        // A block's duties are cut short by a stop: what they had done is on record (the
        // vote book and the provider's book are written before anything is sent), and a
        // restart resumes the rest.
        let step = async {
            let contract = latest(&chain).contract.clone();
            // Own transactions that waited for the nonce window go first.
            let released = outbox.flush().await;
            if released > 0 {
                let left = outbox.backlog_len().await;
                debug!(released, left, "queued own transactions pooled");
            }
            if let Some(desk) = &human {
                desk.on_block(d.block.header.height, &d.events);
            }
            provider.on_block(&d.events, &contract).await;
            let sessions = seat.on_events(&d.events, &contract).await;
            judging.spawn(&contract, sessions).await;
        };
        tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            () = step => {}
        }
    }
}

/// What a test build's node does wrong on purpose ([`BEHAVIOUR_ENV`]): a
/// comma-separated list, at most one of them a seat (or provider) behaviour
/// (`griefing-provider,spammer,proposal-forger` runs one node as every adversary).
#[cfg(feature = "misbehave")]
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct TestBehaviour {
    /// Its seats (or, for `griefing-provider`, its sessions) misbehave
    /// (`crate::audit::misbehave`).
    seat: Option<crate::audit::misbehave::Behaviour>,
    /// It floods the network with unpayable transactions from fresh keys
    /// (`crate::net::spam`).
    spammer: bool,
    /// It streams forged proposals in rounds it does not propose
    /// (`crate::consensus::forge`).
    forger: bool,
}

#[cfg(feature = "misbehave")]
impl TestBehaviour {
    fn parse(names: &str) -> Result<Self, String> {
        let mut b = TestBehaviour::default();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            match name {
                "spammer" => b.spammer = true,
                "proposal-forger" => b.forger = true,
                other => {
                    let seat = other.parse().map_err(|e| {
                        format!("{e}; or a node behaviour: spammer, proposal-forger")
                    })?;
                    if b.seat.replace(seat).is_some() {
                        return Err(format!(
                            "{names}: at most one seat or provider behaviour at a time"
                        ));
                    }
                }
            }
        }
        if b == TestBehaviour::default() {
            return Err("no behaviour named".into());
        }
        Ok(b)
    }
}

/// The test behaviour [`BEHAVIOUR_ENV`] names, announced loudly (test builds only). A
/// name that is not a behaviour stops the node.
#[cfg(feature = "misbehave")]
fn test_behaviour() -> Result<Option<TestBehaviour>, DaemonError> {
    let Ok(name) = std::env::var(BEHAVIOUR_ENV) else {
        return Ok(None);
    };
    let b = TestBehaviour::parse(&name)
        .map_err(|e| DaemonError::Home(format!("{BEHAVIOUR_ENV}: {e}")))?;
    warn!(
        behaviour = %name.trim(),
        "THIS NODE IS SET TO MISBEHAVE ON PURPOSE ({BEHAVIOUR_ENV}={}): a test build, never for a real network",
        name.trim()
    );
    Ok(Some(b))
}

/// A build without test behaviours refuses to start with [`BEHAVIOUR_ENV`] set, rather
/// than run honestly while whoever set it believes otherwise.
#[cfg(not(feature = "misbehave"))]
fn refuse_test_behaviour() -> Result<(), DaemonError> {
    match std::env::var_os(BEHAVIOUR_ENV) {
        None => Ok(()),
        Some(v) => Err(DaemonError::Home(format!(
            "{BEHAVIOUR_ENV}={} is set, but this build of trust-node has no test behaviours: they are compiled only into test builds (cargo feature `misbehave`). Unset it to run this node.",
            v.to_string_lossy()
        ))),
    }
}

/// The consensus WAL directory.
pub fn wal_dir(home: &Path) -> PathBuf {
    home.join("data").join("consensus")
}

/// Runs the node until SIGINT/SIGTERM, or until one of its tasks dies.
pub async fn run(home: &Path, overrides: Overrides) -> Result<(), DaemonError> {
    let mut cfg: NodeConfig =
        config::load_config(home).map_err(|e| DaemonError::Home(e.to_string()))?;
    if let Some(a) = overrides.api_listen {
        cfg.api_listen = a;
    }
    if let Some(a) = overrides.p2p_listen {
        cfg.p2p_listen = a;
    }
    if let Some(a) = overrides.consensus_listen {
        cfg.consensus_listen = a;
    }
    if let Some(a) = overrides.ipfs_api {
        cfg.ipfs_api = Some(a);
    }
    if let Some(a) = overrides.llm_url {
        cfg.llm_url = Some(a);
    }
    if let Some(a) = overrides.llm_model {
        cfg.llm_model = Some(a);
    }
    if let Some(a) = overrides.llm_api_key_env {
        cfg.llm_api_key_env = Some(a);
    }
    cfg.human |= overrides.human;
    // The operator token: made for a home older than tokens, refused when others can read
    // it (it logs a person in to the audit form, and later to the provider API).
    let token_path = cfg.operator_token_path(home);
    let (_, created) =
        keys::operator_token(&token_path).map_err(|e| DaemonError::Home(e.to_string()))?;
    if created {
        info!(path = %token_path.display(), "operator token created (owner-only)");
    }
    // Read again whenever the file changes, so a rotated token is in force at once.
    let auth =
        Arc::new(Auth::from_file(&token_path).map_err(|e| DaemonError::Home(e.to_string()))?);
    if cfg.api_max_connections == 0
        || cfg.api_header_timeout_ms == 0
        || cfg.api_body_timeout_ms == 0
    {
        return Err(DaemonError::Home(
            "api_max_connections, api_header_timeout_ms and api_body_timeout_ms in config.toml must be at least 1".into(),
        ));
    }
    let kubo = match &cfg.ipfs_api {
        Some(url) => Some(Arc::new(
            Kubo::new(url).map_err(|e| DaemonError::Home(e.to_string()))?,
        )),
        None => None,
    };
    let block_time = overrides
        .block_time
        .unwrap_or(Duration::from_millis(cfg.block_time_ms));
    // Test builds may misbehave on purpose; any other build refuses the switch.
    #[cfg(feature = "misbehave")]
    let behaviour = test_behaviour()?;
    #[cfg(not(feature = "misbehave"))]
    refuse_test_behaviour()?;
    let doc = config::load_genesis(home).map_err(|e| DaemonError::Home(e.to_string()))?;
    let max_k = doc.genesis.params.max_k.into_iter().min().unwrap_or(0);
    if cfg.seats_per_segment == 0 || cfg.seats_per_segment > max_k {
        return Err(DaemonError::Home(format!(
            "seats_per_segment = {} in config.toml: must be between 1 and the network's max_k ({max_k})",
            cfg.seats_per_segment
        )));
    }
    if let Some(k) = cfg.human_seats_per_segment
        && (k == 0 || k > max_k)
    {
        return Err(DaemonError::Home(format!(
            "human_seats_per_segment = {k} in config.toml: must be between 1 and the network's max_k ({max_k})"
        )));
    }
    if cfg.honeypots_per_session > crate::audit::provider::honeypot::MAX_PER_SESSION {
        return Err(DaemonError::Home(format!(
            "honeypots_per_session = {} in config.toml: at most {}",
            cfg.honeypots_per_session,
            crate::audit::provider::honeypot::MAX_PER_SESSION
        )));
    }
    let llm = llm_judge(&cfg, doc.genesis.params.commit_window, block_time)?;
    let keys = keys::load(home).map_err(|e| DaemonError::Home(e.to_string()))?;
    let chain_id = doc.chain_id();
    let signal = shutdown_signal();
    let api_addr: SocketAddr = cfg
        .api_listen
        .parse()
        .map_err(|e| DaemonError::Home(format!("api_listen {:?}: {e}", cfg.api_listen)))?;

    let db =
        sled::open(config::ledger_dir(home)).map_err(|e| DaemonError::Ledger(e.to_string()))?;
    let ledger = Ledger::from_db(&db).map_err(|e| DaemonError::Ledger(e.to_string()))?;
    ledger
        .set_chain(chain_id)
        .map_err(|e| DaemonError::Ledger(e.to_string()))?;
    let blobs = BlobStore::open(&db).map_err(|e| DaemonError::Ledger(e.to_string()))?;
    let Restored {
        contract,
        tip,
        parent,
    } = restore(&ledger, &doc)?;
    let is_validator = doc.validators.contains(&keys.account_id());
    let validators = consensus::driver::validator_powers(&doc.validators, &contract);
    let mut restored = ChainView::new(tip, contract, validators);
    restored.parent = parent.map(Arc::new);
    info!(height = tip.height, state_root = %restored.state_root, chain = %chain_id, "state restored from the ledger");
    // The chain view's one writer is the consensus driver; it gets the publisher below.
    let (chain_view, chain) = ChainPublisher::new(restored);
    let (pool, pool_task) =
        Pool::with_limits(cfg.mempool_max, cfg.mempool_max_bytes, chain.clone());
    let (peer_view, peers) = PeerPublisher::new();
    let (llm_status, llm_watch) = watch::channel(None);

    let mut tasks = Tasks::new();
    let intake = tasks.stage("intake");
    let duty = tasks.stage("duties");
    let ordering = tasks.stage("consensus");
    let pooling = tasks.stage("mempool");
    tasks.spawn(pooling, "mempool", |stop| pool_task.run(stop));

    // The API's socket is bound now, so that a port in use stops the node at start.
    let listener = tokio::net::TcpListener::bind(api_addr)
        .await
        .map_err(|e| DaemonError::Net(format!("cannot listen on {api_addr}: {e}")))?;

    // Our swarm: transactions and block queries.
    let identity = libp2p::identity::Keypair::ed25519_from_bytes(keys.account.seed())
        .map_err(|e| DaemonError::Home(e.to_string()))?;
    let net_metrics = Arc::new(NetMetrics::default());
    let (net, net_task) = net::spawn(
        NetConfig {
            keypair: identity,
            listen: cfg
                .p2p_listen
                .parse()
                .map_err(|e| DaemonError::Home(format!("p2p_listen {:?}: {e}", cfg.p2p_listen)))?,
            bootstrap: parse_addrs(&cfg.bootstrap, "bootstrap")?,
            chain_id,
            max_peers: net::DEFAULT_MAX_PEERS,
            blobs: Some(blobs.clone()),
            blob_fetch_timeout: net::BLOB_FETCH_TIMEOUT,
            max_peers_per_ip: cfg.max_peers_per_ip,
            // The validators' node ids are their account keys: known from genesis.
            reserved: doc
                .validators
                .iter()
                .filter_map(net::validator_peer)
                .collect(),
            sync_rate: net::DEFAULT_SYNC_RATE,
            ban_duration: net::BAN_DURATION,
        },
        Arc::new(Handler {
            chain: chain.clone(),
            pool: pool.clone(),
            ledger: ledger.clone(),
        }),
        net_metrics.clone(),
    )
    .map_err(|e| DaemonError::Net(e.to_string()))?;
    {
        let net = net.clone();
        tasks.spawn(intake, "net", move |mut stop| async move {
            let mut swarm = net_task;
            tokio::select! {
                biased;
                () = stop.wait() => {
                    net.shutdown().await;
                    let _ = swarm.await;
                    Ok(())
                }
                r = &mut swarm => Err(match r {
                    Ok(()) => "the swarm task ended".to_string(),
                    Err(e) => format!("the swarm task failed: {e}"),
                }),
            }
        });
    }

    // Ordering.
    let consensus_metrics = Arc::new(ConsensusMetrics::default());
    let running = consensus::start(
        ConsensusSetup {
            moniker: cfg.moniker.clone(),
            chain: chain_id,
            key: keys.account.clone(),
            validators: doc.validators.clone(),
            listen: cfg.consensus_listen.parse().map_err(|e| {
                DaemonError::Home(format!("consensus_listen {:?}: {e}", cfg.consensus_listen))
            })?,
            peers: parse_addrs(&cfg.consensus_bootstrap, "consensus_bootstrap")?,
            wal_dir: wal_dir(home),
            block_time,
            timeouts: consensus::timeouts(
                block_time,
                TimeoutConfig {
                    propose: cfg.propose_timeout_ms.map(Duration::from_millis),
                    vote: cfg.vote_timeout_ms.map(Duration::from_millis),
                    delta: cfg.timeout_delta_ms.map(Duration::from_millis),
                },
            ),
            snapshot_every: cfg.snapshot_every,
            sync_interval: Duration::from_millis(cfg.sync_interval_ms),
            #[cfg(feature = "misbehave")]
            forge: behaviour.is_some_and(|b| b.forger),
        },
        &db,
        chain_view,
        pool.clone(),
        ledger.clone(),
        consensus_metrics.clone(),
    )
    .await?;
    let decided = running.decided.clone();
    let decided_events = running.decided.clone();
    let blocks = decided.subscribe();
    tasks.spawn(ordering, "consensus", |stop| running.run(stop));

    #[cfg(feature = "misbehave")]
    if behaviour.is_some_and(|b| b.spammer) {
        let (spam_net, spammer) = (
            net.clone(),
            net::spam::Spammer::new(keys.account_id().as_bytes(), chain_id),
        );
        tasks.spawn(intake, "spam", move |stop| {
            net::spam::run(spam_net, spammer, stop)
        });
    }

    // Transactions admitted through the API or signed by the outbox are gossiped.
    let (gossip_tx, gossip_rx) = mpsc::channel::<SignedTx>(GOSSIP_QUEUE);
    {
        let (gossip_net, peers_net) = (net.clone(), net.clone());
        tasks.spawn(intake, "gossip", move |stop| {
            gossip_out(gossip_net, gossip_rx, stop)
        });
        tasks.spawn(intake, "peers", move |stop| {
            watch_peers(peers_net, peer_view, stop)
        });
    }

    // Provider and seat duties, driven by decided blocks.
    let outbox = Outbox::new(
        keys.account.clone(),
        chain.clone(),
        pool.clone(),
        Some(gossip_tx.clone()),
    )
    .with_journal(&db)
    .map_err(|e| DaemonError::Ledger(e.to_string()))?;
    // Own transactions signed before a kill and not yet included go back into the pool
    // under their nonces before anything (the API's submits, the resumed duties) signs
    // anew: those then take the nonces after them, or find them.
    outbox.restore().await;
    let mut provider = Provider::open(outbox.clone(), blobs.clone(), &db)
        .map_err(|e| DaemonError::Ledger(e.to_string()))?
        .with_honeypots(cfg.honeypots_per_session)
        .with_seats_per_segment(cfg.seats_per_segment)
        .with_spending_cap(cfg.spending_cap());
    if let Some(k) = cfg.human_seats_per_segment {
        provider = provider.with_tier_seats(trust_protocol::tx::Tier::Human, k);
    }
    if let Some(k) = &kubo {
        info!(ipfs_api = k.url(), "ciphertexts also go to this IPFS node");
        provider = provider.with_kubo(k.clone());
    }
    #[cfg(feature = "misbehave")]
    if let Some(b) = behaviour.and_then(|b| b.seat) {
        provider = provider.with_behaviour(b);
    }
    let provider = Arc::new(provider);
    let seat_metrics = Arc::new(SeatMetrics::default());
    // Ciphertexts this node does not hold come from the configured IPFS node, else from
    // peers over Bitswap.
    let fetch_net = net.clone();
    let fetch: Option<FetchBlob> = Some(Arc::new(move |cid| {
        let n = fetch_net.clone();
        let k = kubo.clone();
        Box::pin(async move {
            if let Some(k) = k {
                match k.get(&cid).await {
                    Ok(b) => return Ok(b),
                    Err(e) => {
                        warn!(%cid, error = %e, "IPFS node could not serve the block; asking peers")
                    }
                }
            }
            n.fetch_blob(cid).await.map_err(|e| e.to_string())
        })
    }));
    let seat = Seat::open(
        outbox.clone(),
        keys.sealing.clone(),
        blobs.clone(),
        &db,
        fetch,
        seat_metrics.clone(),
    )
    .map_err(DaemonError::Ledger)?;
    let human = if cfg.human {
        let settings = DeskSettings {
            capacity: DEFAULT_CAPACITY,
            margin_blocks: DEFAULT_MARGIN_BLOCKS,
            block_time,
        };
        let commit_window = doc.genesis.params.commit_window;
        if commit_window <= settings.margin_blocks {
            warn!(
                commit_window,
                margin = settings.margin_blocks,
                "the commit window is too short for a person: every Human seat will abstain"
            );
        }
        let for_a_person = block_time.saturating_mul(
            u32::try_from(commit_window.saturating_sub(settings.margin_blocks)).unwrap_or(u32::MAX),
        );
        info!(
            commit_window,
            margin = settings.margin_blocks,
            seconds_per_seat = for_a_person.as_secs(),
            "Human seats wait for a person at the audit form (/audit on the API address)"
        );
        Some(
            HumanDesk::open(&db, keys.account_id(), settings)
                .map_err(|e| DaemonError::Ledger(e.to_string()))?,
        )
    } else {
        None
    };
    let mut judges: Vec<Arc<dyn Auditor>> = vec![Arc::new(ComputerAuditor)];
    if let Some(judge) = &llm {
        judges.push(Arc::new(judge.clone()));
    }
    if let Some(desk) = &human {
        judges.push(Arc::new(desk.clone()));
    }
    let seat = seat.with_judges(judges);
    #[cfg(feature = "misbehave")]
    let seat = match behaviour.and_then(|b| b.seat) {
        Some(b) => seat.with_behaviour(b),
        None => seat,
    };
    let judging = Judging {
        seat: Arc::new(seat),
        me: keys.account_id(),
        slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONCURRENT_JUDGING)),
        chain: chain.clone(),
        decided,
        votes: tokio::task::JoinSet::new(),
    };
    {
        let (chain, provider, desk) = (chain.clone(), provider.clone(), human.clone());
        tasks.spawn(duty, "seats", move |stop| {
            duties(blocks, chain, outbox, provider, judging, desk, stop)
        });
    }

    let mut sources: Vec<Arc<dyn MetricsSource>> = vec![
        consensus_metrics,
        Arc::new(NetSource(net_metrics)),
        seat_metrics,
    ];
    if let Some(desk) = &human {
        sources.push(Arc::new(desk.clone()));
    }
    if let Some(judge) = &llm {
        sources.push(judge.client().metrics().clone());
        let client = judge.client().clone();
        tasks.spawn(duty, "llm-probe", move |stop| {
            probe_llm(client, llm_status, stop)
        });
    }
    let events = api::EventHub::new(decided_events);
    let api = Api {
        node_id: keys.account_id(),
        validator: is_validator,
        chain: chain.clone(),
        peers,
        llm: llm_watch,
        pool,
        ledger: ledger.clone(),
        metrics: Arc::new(ApiMetrics::default()),
        gossip: Some(gossip_tx),
        sources,
        provider: Some(provider),
        genesis: Contract::new(&doc.genesis)
            .ok()
            .map(|c| Arc::new(c.with_chain(doc.chain_id()))),
        validators: doc.validators.clone().into(),
        auth: auth.clone(),
        limits: cfg.api_limits(),
        events: Some(events.clone()),
    };
    let audit_web = AuditWeb {
        auth,
        desk: human,
        chain: chain.clone(),
        me: keys.account_id(),
    };
    let limits = cfg.api_limits();
    let app = api::app(api, audit_router(audit_web));
    tasks.spawn(intake, "api", move |mut stop| async move {
        // Event streams never end on their own: they end when the node stops, so that the
        // server's graceful shutdown has only ordinary requests to wait for.
        let stopping = async move {
            stop.wait().await;
            events.close();
        };
        api::server::serve(listener, app, limits, stopping)
            .await
            .map_err(|e| format!("api server: {e}"))
    });
    let p2p = net.listen_addrs().await.unwrap_or_default();
    info!(
        node = %keys.account_id(),
        validator = is_validator,
        api = %api_addr,
        p2p = ?p2p,
        consensus = %cfg.consensus_listen,
        "node running"
    );

    let ended = tasks.wait(signal).await;
    tasks.shutdown(STOP_GRACE).await;
    ledger
        .flush()
        .map_err(|e| DaemonError::Ledger(e.to_string()))?;
    info!(
        height = latest(&chain).tip.height,
        "shutdown: ledger flushed; node stopped"
    );
    match ended {
        Ended::Signal => Ok(()),
        Ended::Died { task, why } => Err(DaemonError::TaskDied { task, why }),
    }
}

/// SIGINT or SIGTERM. The SIGTERM handler is installed at once, so a stop requested while
/// the node is still starting is not lost (nor does it kill the process unflushed).
fn shutdown_signal() -> impl std::future::Future<Output = ()> {
    #[cfg(unix)]
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
    async move {
        let ctrl_c = async {
            let _ = tokio::signal::ctrl_c().await;
        };
        #[cfg(unix)]
        let term = async {
            match &mut term {
                Some(s) => {
                    s.recv().await;
                }
                None => std::future::pending::<()>().await,
            }
        };
        #[cfg(not(unix))]
        let term = std::future::pending::<()>();
        tokio::select! {
            () = ctrl_c => {},
            () = term => {},
        }
    }
}

#[cfg(test)]
mod tests {
    use trust_contracts::{Genesis, GenesisAccount, Params};
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, Tx},
    };

    use super::*;
    use crate::{chain::build_block, ledger::StoredBlock};

    fn doc() -> (GenesisDoc, Keypair) {
        let a = Keypair::from_label("restore-a");
        let doc = GenesisDoc {
            chain_name: "restore-test".into(),
            validators: vec![a.public()],
            genesis: Genesis {
                params: Params::default(),
                accounts: vec![GenesisAccount {
                    id: a.public(),
                    balance: 10_000,
                    stake: 100,
                }],
                auditors: vec![],
            },
        };
        (doc, a)
    }

    /// Ten real blocks, each with one transfer, appended to a fresh ledger.
    fn chain(ledger: &Ledger, doc: &GenesisDoc, key: &Keypair) -> (Hash, Vec<Contract>) {
        let mut contract = Contract::new(&doc.genesis)
            .unwrap()
            .with_chain(doc.chain_id());
        let mut tip = Tip {
            chain: doc.chain_id(),
            height: 0,
            hash: Hash::ZERO,
        };
        let mut states = Vec::new();
        for n in 0..10u64 {
            let tx = Signed::sign(
                key,
                &doc.chain_id(),
                Tx {
                    nonce: n,
                    call: Call::Transfer {
                        to: Keypair::from_label("bob").public(),
                        amount: 1,
                    },
                },
            );
            let (block, done, dropped) = build_block(&contract, &tip, key.public(), &[tx]);
            assert!(dropped.is_empty());
            ledger
                .append(
                    &StoredBlock {
                        block: block.clone(),
                        certificate: vec![1],
                    },
                    &[],
                )
                .unwrap();
            contract = done.contract;
            tip = tip.after(&block);
            states.push(contract.clone());
        }
        (contract.state_root(), states)
    }

    /// A fresh ledger in a temporary directory holding [`chain`]'s ten blocks: the
    /// directory (kept alive), the ledger, the genesis, the sender, the tip's state root
    /// and the state after each block.
    fn ten_blocks() -> (
        tempfile::TempDir,
        Ledger,
        GenesisDoc,
        Keypair,
        Hash,
        Vec<Contract>,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let ledger = Ledger::open(dir.path()).unwrap();
        let (doc, key) = doc();
        let (root, states) = chain(&ledger, &doc, &key);
        (dir, ledger, doc, key, root, states)
    }

    /// A gossiped transaction the mempool refuses counts against its forwarder by what
    /// it is: harmless (or "not yet") costs nothing, junk a flood point, bad data a strike.
    #[test]
    fn refusals_count_against_the_forwarder_by_kind() {
        let cases = [
            (MempoolError::Duplicate, TxVerdict::Ignore),
            (
                MempoolError::TooFarAhead { got: 900, next: 0 },
                TxVerdict::Ignore,
            ),
            (MempoolError::NotYet("seats"), TxVerdict::Ignore),
            (MempoolError::Full("share"), TxVerdict::Ignore),
        ];
        for (e, v) in cases {
            assert_eq!(gossip_verdict(&e), v, "{e}");
        }
        let junk = MempoolError::Unaffordable {
            what: "balance",
            need: 1,
            have: 0,
        };
        assert!(matches!(gossip_verdict(&junk), TxVerdict::Refuse(_)));
        assert!(matches!(
            gossip_verdict(&MempoolError::Unfit("no seat")),
            TxVerdict::Refuse(_)
        ));
        assert!(matches!(
            gossip_verdict(&MempoolError::BadSignature),
            TxVerdict::Reject(_)
        ));
    }

    #[cfg(feature = "misbehave")]
    #[test]
    fn node_and_seat_behaviours_are_named_alike() {
        use crate::audit::misbehave::Behaviour;
        assert_eq!(
            TestBehaviour::parse("spammer"),
            Ok(TestBehaviour {
                spammer: true,
                ..TestBehaviour::default()
            })
        );
        assert_eq!(
            TestBehaviour::parse(" proposal-forger "),
            Ok(TestBehaviour {
                forger: true,
                ..TestBehaviour::default()
            })
        );
        assert_eq!(
            TestBehaviour::parse("rubber-stamp"),
            Ok(TestBehaviour {
                seat: Some(Behaviour::RubberStamp),
                ..TestBehaviour::default()
            })
        );
        // One node can be every adversary at once.
        assert_eq!(
            TestBehaviour::parse("griefing-provider, spammer,proposal-forger"),
            Ok(TestBehaviour {
                seat: Some(Behaviour::GriefingProvider),
                spammer: true,
                forger: true,
            })
        );
        let e = TestBehaviour::parse("forger").unwrap_err();
        assert!(
            e.contains("proposal-forger") && e.contains("malicious"),
            "{e}"
        );
        assert!(TestBehaviour::parse("lazy,random").is_err());
        assert!(TestBehaviour::parse(" , ").is_err());
    }

    #[test]
    fn restore_uses_a_snapshot_and_replays_the_blocks_after_it() {
        let (_dir, ledger, doc, key, root, states) = ten_blocks();
        // A snapshot at height 6; blocks 7..=10 are replayed on top of it.
        ledger.put_snapshot(6, &states[5].snapshot()).unwrap();
        let r = restore(&ledger, &doc).unwrap();
        assert_eq!(r.tip.height, 10);
        assert_eq!(r.contract.state_root(), root);
        assert_eq!(r.contract.nonce(&key.public()), 10);
        assert_eq!(
            r.parent.map(|p| p.state_root()),
            Some(states[8].state_root()),
            "the state before the tip block is kept"
        );
    }

    /// A snapshot at the tip itself would leave no state before the tip block (outcome
    /// proofs need it right after a restart): the newest one below the tip is used.
    #[test]
    fn restore_starts_below_the_tip_so_the_state_before_it_is_at_hand() {
        let (_dir, ledger, doc, _, root, states) = ten_blocks();
        ledger.put_snapshot(6, &states[5].snapshot()).unwrap();
        ledger.put_snapshot(10, &states[9].snapshot()).unwrap();
        let r = restore(&ledger, &doc).unwrap();
        assert_eq!((r.tip.height, r.contract.state_root()), (10, root));
        assert_eq!(
            r.parent.map(|p| p.state_root()),
            Some(states[8].state_root())
        );
    }

    #[test]
    fn an_unusable_snapshot_falls_back_to_a_full_replay() {
        let (_dir, ledger, doc, _, root, states) = ten_blocks();
        // Height 6's block, but the state of height 3: its root does not match the header.
        ledger.put_snapshot(6, &states[2].snapshot()).unwrap();
        let r = restore(&ledger, &doc).unwrap();
        assert_eq!((r.tip.height, r.contract.state_root()), (10, root));
        // Garbage bytes: the same.
        ledger.put_snapshot(8, b"not a snapshot").unwrap();
        let r = restore(&ledger, &doc).unwrap();
        assert_eq!(r.contract.state_root(), root);
    }
}
