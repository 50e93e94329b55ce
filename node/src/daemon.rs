//! `trust-node run`: the composition root. It loads the node's settings
//! ([`NodeConfig::load`]), builds each part, starts it as a named task, and waits; it
//! decides no audit rule. One process restores the chain from its ledger, joins the
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
//! | `duties` | `seats`, `alerts`, `llm-probe` | provider and seat duties on each decided block (votes run as child tasks); what happened to this node's auditor account (slashes, missed seats); the LLM endpoint's health |
//! | `consensus` | `consensus`, `summary` | the Malachite engine and the driver that commits its decisions; the chain summary logged once a minute |
//! | `mempool` | `mempool` | the mempool's owner |
//!
//! On SIGINT/SIGTERM the node first *drains* (up to `[auditor] drain_timeout`, default 2
//! minutes; a second signal ends it): everything keeps running, but the seats take no new
//! sessions, until every seat that owed a commitment or an opening at the signal has its
//! vote on chain or its window closed. Then, as when a task ends on its own (logged with
//! its reason), intake stops first so that nothing new comes in, then duties, then
//! consensus, then the mempool; the ledger is flushed last. The process exits 0 after a signal and
//! non-zero when a task died. Who writes which shared state is tabled in [`crate::view`].

use std::{path::Path, sync::Arc, time::Duration};

use tokio::sync::{broadcast, mpsc, watch};
use tracing::info;
use trust_contracts::Contract;
use trust_protocol::{
    AccountId,
    tx::{SignedTx, Tier},
};

pub use crate::config::{Overrides, wal_dir};
use crate::{
    Cause,
    alerts::Alerts,
    api::{self, Api, ApiMetrics},
    audit::{
        computer::ComputerJudge,
        duties::{self, Duties},
        human::HumanDesk,
        llm::{self, LlmAuditor},
        outbox::Outbox,
        provider::Provider,
        seat::{self, Seat, SeatMetrics},
    },
    blobs::{BlobStore, kubo::Kubo},
    config::{self, GenesisDoc, NodeConfig},
    consensus::{self, ConsensusMetrics, driver::Decided},
    keys::{self, NodeKeys},
    ledger::{
        Ledger,
        restore::{RestoreError, restore},
    },
    mempool::{Pool, intake::Intake},
    metrics::MetricsSource,
    misbehave,
    net::{self, NetHandle, NetMetrics},
    tasks::{Ended, Stage, Stop, TaskResult, Tasks},
    view::{ChainPublisher, ChainView, ChainWatch, PeerPublisher, latest},
    web::{
        audit::{AuditWeb, router as audit_router},
        auth::Auth,
    },
};

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
    Home(#[source] Cause),
    /// The ledger.
    #[error("ledger: {0}")]
    Ledger(#[source] Cause),
    /// A listener or the network.
    #[error("network: {0}")]
    Net(#[source] Cause),
    /// The API's address could not be bound.
    #[error("network: cannot listen on {addr}: {source}")]
    Listen {
        /// The address (`[api] listen`).
        addr: std::net::SocketAddr,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The consensus engine.
    #[error(transparent)]
    Consensus(#[from] consensus::ConsensusError),
    /// The ledger could not be restored.
    #[error(transparent)]
    Restore(#[from] RestoreError),
    /// The data directory cannot be made, or others may read it.
    #[error(transparent)]
    DataDir(#[from] config::DataDirError),
    /// The home's database cannot be opened: another process holds it, or it fails.
    #[error(transparent)]
    Store(#[from] config::StoreError),
    /// A task ended while the node was running; the node stopped in order after it.
    #[error("task {task} died ({why}); the node stopped")]
    TaskDied {
        /// The task's name.
        task: &'static str,
        /// What it returned, or its panic message.
        why: String,
    },
}

/// Runs the node until SIGINT/SIGTERM, or until one of its tasks dies.
pub async fn run(home: &Path, overrides: Overrides) -> Result<(), DaemonError> {
    let s = Settings::load(home, &overrides)?;
    let signal = shutdown_signal();
    // The ledger and the state it restores, before anything listens.
    let keep = s
        .cfg
        .ledger
        .keep_blocks()
        .map_err(|e| DaemonError::Home(e.into()))?;
    if !overrides.state_sync.is_empty() {
        crate::statesync::sync_home(
            home,
            &s.doc,
            &overrides.state_sync,
            overrides.state_sync_trust,
        )
        .await
        .map_err(|e| match e {
            crate::statesync::StateSyncError::Store(e) => DaemonError::Store(e),
            e => DaemonError::Ledger(e.into()),
        })?;
    }
    let (store, view) = Store::open(home, &s.doc)?;
    store.ledger.set_keep_blocks(keep);
    if let Some(n) = keep {
        let oldest = store
            .ledger
            .oldest_block()
            .map_err(ledger_err)?
            .unwrap_or(0);
        info!(
            keep_blocks = n,
            oldest_block = oldest,
            "pruning: the ledger keeps the last {n} blocks (from its snapshots)"
        );
    }
    // The chain view's one writer is the consensus driver; it gets the publisher below.
    let (chain_view, chain) = ChainPublisher::new(view);
    let (pool, pool_task) = Pool::with_limits(
        s.cfg.mempool.max_txs,
        s.cfg.mempool.max_bytes,
        chain.clone(),
    );
    // Seats judge from key deliveries as soon as they are pooled, and a provider opens
    // its honeypots as soon as the last reveals are, not a block later.
    let (awaiting, awaited) = watch::channel(crate::mempool::Awaited::default());
    let (pool_task, pooled) = pool_task.watch(s.me(), awaited);
    let (peer_view, peers) = PeerPublisher::new();

    let mut tasks = Tasks::new();
    let (intake, duty, ordering, pooling) = (
        tasks.stage("intake"),
        tasks.stage("duties"),
        tasks.stage("consensus"),
        tasks.stage("mempool"),
    );
    tasks.spawn(pooling, "mempool", |stop| pool_task.run(stop));
    // The API's socket is bound now, so that a port in use stops the node at start.
    let api_addr = s.cfg.api_addr().map_err(home_err)?;
    let listener = tokio::net::TcpListener::bind(api_addr)
        .await
        .map_err(|source| DaemonError::Listen {
            addr: api_addr,
            source,
        })?;

    // Our swarm (transactions, block queries, ciphertexts), then ordering.
    let (net, net_metrics) = start_net(&mut tasks, intake, &s, &store, &chain, &pool)?;
    let (decided, consensus_metrics) =
        start_consensus(&mut tasks, ordering, home, &s, &store, chain_view, &pool).await?;
    let (summary_metrics, summary_peers) = (consensus_metrics.clone(), peers.clone());
    tasks.spawn(ordering, "summary", move |stop| {
        consensus::summary::run(summary_metrics, summary_peers, stop)
    });
    // Subscribed before any block is decided, so that the duties and alerts miss none.
    let blocks = decided.subscribe();
    let alert_blocks = decided.subscribe();
    #[cfg(feature = "misbehave")]
    if s.behaviour.is_some_and(|b| b.spammer) {
        let spammer = net::spam::Spammer::new(s.me().as_bytes(), s.doc.chain_id());
        let spam_net = net.clone();
        tasks.spawn(intake, "spam", move |stop| {
            net::spam::run(spam_net, spammer, stop)
        });
    }

    // Transactions admitted through the API or signed by the outbox are gossiped.
    let (gossip_tx, gossip_rx) = mpsc::channel::<SignedTx>(GOSSIP_QUEUE);
    let (gossip_net, peers_net) = (net.clone(), net.clone());
    tasks.spawn(intake, "gossip", move |stop| {
        net::tasks::gossip_out(gossip_net, gossip_rx, stop)
    });
    tasks.spawn(intake, "peers", move |stop| {
        net::tasks::watch_peers(peers_net, peer_view, stop)
    });

    // Provider and seat duties, driven by decided blocks; the LLM endpoint's health.
    let outbox = Outbox::new(
        s.keys.account.clone(),
        chain.clone(),
        pool.clone(),
        Some(gossip_tx.clone()),
    )
    .with_journal(&store.db)
    .map_err(ledger_err)?;
    // Own transactions signed before a kill and not yet included go back into the pool
    // under their nonces before anything (the API's submits, the resumed duties) signs
    // anew: those then take the nonces after them, or find them.
    outbox.restore().await;
    let api_outbox = outbox.clone();
    let (drain, draining) = watch::channel(None);
    let audit = start_duties(
        &mut tasks,
        duty,
        &s,
        &store,
        &chain,
        &net,
        outbox,
        (blocks, pooled, awaiting),
        &decided,
        draining,
    )?;
    let (llm_status, llm_watch) = watch::channel(None);
    let alerts = Arc::new(Alerts::new(s.me(), chain.clone()));
    let alerting = alerts.clone();
    tasks.spawn(duty, "alerts", move |stop| alerting.run(alert_blocks, stop));
    let mut sources: Vec<Arc<dyn MetricsSource>> = vec![
        consensus_metrics,
        net_metrics,
        audit.seat_metrics,
        alerts,
        Arc::new(crate::cpu::CpuProfile),
    ];
    if let Some(desk) = &audit.desk {
        sources.push(Arc::new(desk.clone()));
    }
    if let Some(judge) = &s.llm {
        sources.push(judge.client().metrics().clone());
        let client = judge.client().clone();
        tasks.spawn(duty, "llm-probe", move |stop| {
            llm::setup::health(client, llm_status, stop)
        });
    }

    // The HTTP API and the audit form.
    let events = api::EventHub::new(decided);
    let api = Api {
        node_id: s.me(),
        validator: s.doc.validators.contains(&s.me()),
        chain: chain.clone(),
        peers,
        llm: llm_watch,
        pool,
        ledger: store.ledger.clone(),
        metrics: Arc::new(ApiMetrics::default()),
        gossip: Some(gossip_tx),
        sources,
        provider: Some(audit.provider),
        genesis: Contract::new(&s.doc.genesis)
            .ok()
            .map(|c| Arc::new(c.with_chain(s.doc.chain_id()))),
        validators: s.doc.validators.clone().into(),
        auth: s.auth.clone(),
        limits: s.cfg.api_limits(),
        events: Some(events.clone()),
        outbox: Some(api_outbox),
        replays: Default::default(),
    };
    let form = AuditWeb {
        auth: s.auth.clone(),
        desk: audit.desk,
        chain: chain.clone(),
        me: s.me(),
    };
    let (app, limits) = (api::app(api, audit_router(form)), s.cfg.api_limits());
    tasks.spawn(intake, "api", move |stop| {
        serve_api(listener, app, limits, events, stop)
    });
    let p2p = net.listen_addrs().await.unwrap_or_default();
    info!(node = %s.me(), validator = s.doc.validators.contains(&s.me()), api = %api_addr, p2p = ?p2p, consensus = %s.cfg.consensus.listen, "node running");

    // Until a signal or a task's end; then, after a signal, the votes this node's seats owe
    // (up to the drain timeout); then the stages stop in order and the ledger flushes.
    let ended = tasks.wait(signal).await;
    if ended == Ended::Signal {
        drain_seats(&chain, s.me(), &drain, s.cfg.auditor.drain_timeout).await;
    }
    tasks.shutdown(STOP_GRACE).await;
    store.ledger.flush().map_err(ledger_err)?;
    info!(
        height = latest(&chain).tip.height,
        "shutdown: ledger flushed; node stopped"
    );
    match ended {
        Ended::Signal => Ok(()),
        Ended::Died { task, why } => Err(DaemonError::TaskDied { task, why }),
    }
}

fn home_err(e: impl Into<Cause>) -> DaemonError {
    DaemonError::Home(e.into())
}

fn ledger_err(e: impl Into<Cause>) -> DaemonError {
    DaemonError::Ledger(e.into())
}

/// What the node starts from: the network's genesis, its settings with the flags applied,
/// its keys and operator login, the IPFS node and LLM judge they name, and (test builds)
/// the behaviour switch. A bad one stops the node before anything is opened.
struct Settings {
    doc: GenesisDoc,
    cfg: NodeConfig,
    keys: NodeKeys,
    auth: Arc<Auth>,
    kubo: Option<Arc<Kubo>>,
    llm: Option<LlmAuditor>,
    /// The Computer tier's judge, with the sandbox when it started (its probe ran here,
    /// before anything was opened; the log says whether tool calls are re-run).
    computer: ComputerJudge,
    #[cfg(feature = "misbehave")]
    behaviour: Option<misbehave::TestBehaviour>,
}

impl Settings {
    fn load(home: &Path, overrides: &Overrides) -> Result<Self, DaemonError> {
        let doc = config::load_genesis(home).map_err(home_err)?;
        let cfg = NodeConfig::load(home, overrides, &doc).map_err(home_err)?;
        #[cfg(feature = "misbehave")]
        let behaviour = misbehave::from_env().map_err(home_err)?;
        #[cfg(not(feature = "misbehave"))]
        misbehave::refuse().map_err(home_err)?;
        let keys = keys::load(home).map_err(home_err)?;
        let auth = Arc::new(Auth::for_operator(&cfg.operator_token_path(home)).map_err(home_err)?);
        let kubo = match &cfg.ipfs.api {
            Some(url) => Some(Arc::new(Kubo::new(url).map_err(home_err)?)),
            None => None,
        };
        let commit_window = doc.genesis.params.commit_window;
        let llm = llm::setup::judge(&cfg.llm_settings(), commit_window, cfg.block_time())
            .map_err(home_err)?;
        let computer = ComputerJudge::start(&cfg.computer.sandbox());
        Ok(Self {
            doc,
            cfg,
            keys,
            auth,
            kubo,
            llm,
            computer,
            #[cfg(feature = "misbehave")]
            behaviour,
        })
    }

    fn me(&self) -> AccountId {
        self.keys.account_id()
    }

    /// The seat or provider behaviour of a test build, if any.
    #[cfg(feature = "misbehave")]
    fn seat_behaviour(&self) -> Option<crate::audit::misbehave::Behaviour> {
        self.behaviour.and_then(|b| b.seat)
    }
}

/// The node's storage: one sled database holding the ledger, the blob store and every
/// part's own trees.
struct Store {
    db: sled::Db,
    ledger: Ledger,
    blobs: BlobStore,
}

impl Store {
    /// Opens the store under `home` for the network of `doc`, and the chain view restored
    /// from its ledger.
    fn open(home: &Path, doc: &GenesisDoc) -> Result<(Self, ChainView), DaemonError> {
        config::secure_data_dir(home)?;
        let db = config::open_store(home)?;
        let ledger = Ledger::from_db(&db).map_err(ledger_err)?;
        ledger.set_chain(doc.chain_id()).map_err(ledger_err)?;
        let blobs = BlobStore::open(&db).map_err(ledger_err)?;
        let restored = restore(&ledger, &doc.genesis, doc.chain_id())?;
        let validators = consensus::driver::validator_powers(&doc.validators, &restored.contract);
        let mut view = ChainView::new(restored.tip, restored.contract, validators);
        view.parent = restored.parent.map(Arc::new);
        info!(height = view.tip.height, state_root = %view.state_root, chain = %doc.chain_id(), "state restored from the ledger");
        Ok((Self { db, ledger, blobs }, view))
    }
}

/// The `net` task: our libp2p swarm, with the mempool's gossip intake as its handler.
fn start_net(
    tasks: &mut Tasks,
    stage: Stage,
    s: &Settings,
    store: &Store,
    chain: &ChainWatch,
    pool: &Pool,
) -> Result<(NetHandle, Arc<NetMetrics>), DaemonError> {
    let metrics = Arc::new(NetMetrics::default());
    let handler = Intake {
        chain: chain.clone(),
        pool: pool.clone(),
        ledger: store.ledger.clone(),
    };
    let cfg = s
        .cfg
        .net_config(&s.keys, &s.doc, store.blobs.clone())
        .map_err(home_err)?;
    let (net, task) = net::spawn(cfg, Arc::new(handler), metrics.clone())
        .map_err(|e| DaemonError::Net(e.into()))?;
    let swarm = net.clone();
    tasks.spawn(stage, "net", move |stop| net::run_swarm(swarm, task, stop));
    Ok((net, metrics))
}

/// The `consensus` task: the Malachite engine and the driver that commits its decisions
/// (the chain view's one writer). Returns where decided blocks are announced.
async fn start_consensus(
    tasks: &mut Tasks,
    stage: Stage,
    home: &Path,
    s: &Settings,
    store: &Store,
    chain_view: ChainPublisher,
    pool: &Pool,
) -> Result<(broadcast::Sender<Decided>, Arc<ConsensusMetrics>), DaemonError> {
    #[allow(unused_mut)]
    let mut setup = s
        .cfg
        .consensus_setup(home, &s.keys, &s.doc)
        .map_err(home_err)?;
    #[cfg(feature = "misbehave")]
    {
        setup.forge = s.behaviour.is_some_and(|b| b.forger);
    }
    let metrics = Arc::new(ConsensusMetrics::default());
    let running = consensus::start(
        setup,
        &store.db,
        chain_view,
        pool.clone(),
        store.ledger.clone(),
        metrics.clone(),
    )
    .await?;
    let decided = running.decided.clone();
    tasks.spawn(stage, "consensus", |stop| running.run(stop));
    Ok((decided, metrics))
}

/// What the audit parts give the API.
struct Audit {
    provider: Arc<Provider>,
    desk: Option<HumanDesk>,
    seat_metrics: Arc<SeatMetrics>,
}

/// The `seats` task: this node's provider and seats, with a judge for each tier it serves,
/// carrying out what each decided block asks ([`Duties`]).
#[allow(clippy::too_many_arguments)]
fn start_duties(
    tasks: &mut Tasks,
    stage: Stage,
    s: &Settings,
    store: &Store,
    chain: &ChainWatch,
    net: &NetHandle,
    outbox: Outbox,
    (blocks, pooled, awaiting): (
        broadcast::Receiver<Decided>,
        tokio::sync::mpsc::Receiver<crate::mempool::Pooled>,
        watch::Sender<crate::mempool::Awaited>,
    ),
    decided: &broadcast::Sender<Decided>,
    draining: duties::Draining,
) -> Result<Audit, DaemonError> {
    let cfg = &s.cfg;
    let mut provider = Provider::open(outbox.clone(), store.blobs.clone(), &store.db)
        .map_err(ledger_err)?
        .with_honeypots(cfg.provider.honeypots_per_session)
        .with_seats_per_segment(cfg.provider.seats_per_segment)
        .with_session_defaults(cfg.session.clone())
        .with_spending_cap(cfg.spending_cap())
        .with_reruns(s.computer.clone());
    if let Some(k) = cfg.provider.human_seats_per_segment {
        provider = provider.with_tier_seats(Tier::Human, k);
    }
    if let Some(k) = &s.kubo {
        info!(ipfs_api = k.url(), "ciphertexts also go to this IPFS node");
        provider = provider.with_kubo(k.clone());
    }
    #[cfg(feature = "misbehave")]
    let provider = match s.seat_behaviour() {
        Some(b) => provider.with_griefing(b.griefs_as_provider()),
        None => provider,
    };
    let provider = Arc::new(provider);
    let commit_window = s.doc.genesis.params.commit_window;
    let desk = match cfg.auditor.human {
        true => Some(
            HumanDesk::for_node(&store.db, s.me(), cfg.block_time(), commit_window)
                .map_err(ledger_err)?,
        ),
        false => None,
    };
    let seat_metrics = Arc::new(SeatMetrics::default());
    let fetch = seat::fetch_from(s.kubo.clone(), net.clone());
    let seat = Seat::open(
        outbox.clone(),
        s.keys.sealing.clone(),
        store.blobs.clone(),
        &store.db,
        Some(fetch),
        seat_metrics.clone(),
    )
    .map_err(ledger_err)?
    .with_judges(duties::judges(
        s.computer.clone(),
        s.llm.clone(),
        desk.clone(),
    ));
    #[cfg(feature = "misbehave")]
    let seat = match s.seat_behaviour() {
        Some(b) => seat.with_behaviour(b),
        None => seat,
    };
    let duties = Duties::new(duties::Config {
        me: s.me(),
        chain: chain.clone(),
        decided: decided.clone(),
        blocks,
        pooled,
        awaiting,
        outbox,
        provider: provider.clone(),
        seat: Arc::new(seat),
        desk: desk.clone(),
        draining,
    });
    tasks.spawn(stage, "seats", move |stop| duties.run(stop));
    Ok(Audit {
        provider,
        desk,
        seat_metrics,
    })
}

/// The `api` task: the HTTP API and the audit form until `stop`. Event streams never end
/// on their own: they end when the node stops, so that the server's graceful shutdown has
/// only ordinary requests to wait for.
async fn serve_api(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    limits: api::server::Limits,
    events: api::EventHub,
    mut stop: Stop,
) -> TaskResult {
    let stopping = async move {
        stop.wait().await;
        events.close();
    };
    api::server::serve(listener, app, limits, stopping)
        .await
        .map_err(|e| format!("api server: {e}").into())
}

/// After a stop signal, before anything stops: keeps the node running until every seat
/// that owed a vote at the signal ([`duties::plan::owed`]) has its vote on chain or its
/// window closed, taking no new seats meanwhile ([`duties::Draining`]), for at most
/// `timeout`; a second signal ends it at once. A seat still owed at the end can vote after
/// a restart within its window (the duties resume it).
async fn drain_seats(
    chain: &ChainWatch,
    me: AccountId,
    drain: &watch::Sender<Option<Arc<std::collections::BTreeSet<duties::plan::SeatId>>>>,
    timeout: Duration,
) {
    let owed = duties::plan::owed(latest(chain).contract.state(), &me);
    if owed.is_empty() || timeout.is_zero() {
        if !owed.is_empty() {
            tracing::warn!(
                seats = owed.len(),
                "shutdown: not draining (drain timeout 0): these seats vote only if the node restarts within their windows"
            );
        }
        return;
    }
    let owed = Arc::new(owed);
    drain.send_replace(Some(owed.clone()));
    info!(
        seats = owed.len(),
        timeout = %humantime_serde::re::humantime::format_duration(timeout),
        "shutdown: draining: finishing the commits and reveals this node's seats owe, taking no new seats (a second signal stops at once)"
    );
    let left = |v: &ChainView| {
        duties::plan::owed(v.contract.state(), &me)
            .intersection(&owed)
            .count()
    };
    let mut view = chain.clone();
    let done = view.wait_for(|v| left(v) == 0);
    tokio::select! {
        r = tokio::time::timeout(timeout, done) => match r {
            Ok(_) => info!(seats = owed.len(), "shutdown: drained: every vote owed is on chain or past its window"),
            Err(_) => tracing::warn!(
                left = left(&latest(chain)),
                "shutdown: drain timed out; the seats still owed vote only if the node restarts within their windows"
            ),
        },
        () = shutdown_signal() => tracing::warn!(
            left = left(&latest(chain)),
            "shutdown: a second signal: stopping without draining"
        ),
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
