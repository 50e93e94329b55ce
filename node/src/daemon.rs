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
//! | `duties` | `seats`, `llm-probe` | provider and seat duties on each decided block (votes run as child tasks); the LLM endpoint's health |
//! | `consensus` | `consensus` | the Malachite engine and the driver that commits its decisions |
//! | `mempool` | `mempool` | the mempool's owner |
//!
//! On SIGINT/SIGTERM, or as soon as any task ends on its own (logged with its reason),
//! intake stops first so that nothing new comes in, then duties, then consensus, then
//! the mempool; the ledger is flushed last. The process exits 0 after a signal and
//! non-zero when a task died. Who writes which shared state is tabled in [`crate::view`].

use std::{path::Path, sync::Arc, time::Duration};

use tokio::sync::{mpsc, watch};
use tracing::info;
use trust_contracts::Contract;
use trust_protocol::tx::SignedTx;

pub use crate::config::{Overrides, wal_dir};
use crate::{
    api::{self, Api, ApiMetrics},
    audit::{
        duties::{self, Duties},
        human::HumanDesk,
        llm,
        outbox::Outbox,
        provider::Provider,
        seat::{self, Seat, SeatMetrics},
    },
    behaviour,
    blobs::{BlobStore, kubo::Kubo},
    config::{self, NodeConfig},
    consensus::{self, ConsensusMetrics},
    keys,
    ledger::{
        Ledger,
        restore::{RestoreError, restore},
    },
    mempool::{Pool, intake::Intake},
    metrics::MetricsSource,
    net::{self, NetMetrics},
    tasks::{Ended, Tasks},
    view::{ChainPublisher, ChainView, PeerPublisher, latest},
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
    Home(String),
    /// The ledger.
    #[error("ledger: {0}")]
    Ledger(String),
    /// A listener or the network.
    #[error("network: {0}")]
    Net(String),
    /// The consensus engine.
    #[error(transparent)]
    Consensus(#[from] consensus::ConsensusError),
    /// The ledger could not be restored.
    #[error(transparent)]
    Restore(#[from] RestoreError),
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
    let home_err = |e: &dyn std::fmt::Display| DaemonError::Home(e.to_string());
    let ledger_err = |e: &dyn std::fmt::Display| DaemonError::Ledger(e.to_string());
    // Settings, keys and the test-behaviour switch: a bad one stops the node at start.
    let doc = config::load_genesis(home).map_err(|e| home_err(&e))?;
    let cfg = NodeConfig::load(home, &overrides, &doc).map_err(|e| home_err(&e))?;
    #[cfg(feature = "misbehave")]
    let behaviour = behaviour::from_env().map_err(|e| home_err(&e))?;
    #[cfg(not(feature = "misbehave"))]
    behaviour::refuse().map_err(|e| home_err(&e))?;
    let keys = keys::load(home).map_err(|e| home_err(&e))?;
    let me = keys.account_id();
    let auth =
        Arc::new(Auth::for_operator(&cfg.operator_token_path(home)).map_err(|e| home_err(&e))?);
    let kubo = match &cfg.ipfs_api {
        Some(url) => Some(Arc::new(Kubo::new(url).map_err(|e| home_err(&e))?)),
        None => None,
    };
    let commit_window = doc.genesis.params.commit_window;
    let llm = llm::setup::judge(&cfg.llm_settings(), commit_window, cfg.block_time())
        .map_err(|e| home_err(&e))?;
    let signal = shutdown_signal();
    let api_addr = cfg.api_addr().map_err(|e| home_err(&e))?;

    // The ledger and the state it restores, before anything listens.
    let db = sled::open(config::ledger_dir(home)).map_err(|e| ledger_err(&e))?;
    let ledger = Ledger::from_db(&db).map_err(|e| ledger_err(&e))?;
    ledger
        .set_chain(doc.chain_id())
        .map_err(|e| ledger_err(&e))?;
    let blobs = BlobStore::open(&db).map_err(|e| ledger_err(&e))?;
    let restored = restore(&ledger, &doc.genesis, doc.chain_id())?;
    let validators = consensus::driver::validator_powers(&doc.validators, &restored.contract);
    let mut view = ChainView::new(restored.tip, restored.contract, validators);
    view.parent = restored.parent.map(Arc::new);
    info!(height = view.tip.height, state_root = %view.state_root, chain = %doc.chain_id(), "state restored from the ledger");
    // The chain view's one writer is the consensus driver; it gets the publisher below.
    let (chain_view, chain) = ChainPublisher::new(view);
    let (pool, pool_task) =
        Pool::with_limits(cfg.mempool_max, cfg.mempool_max_bytes, chain.clone());
    let (peer_view, peers) = PeerPublisher::new();
    let (llm_status, llm_watch) = watch::channel(None);

    let mut tasks = Tasks::new();
    let (intake, duty, ordering, pooling) = (
        tasks.stage("intake"),
        tasks.stage("duties"),
        tasks.stage("consensus"),
        tasks.stage("mempool"),
    );
    tasks.spawn(pooling, "mempool", |stop| pool_task.run(stop));
    // The API's socket is bound now, so that a port in use stops the node at start.
    let listener = tokio::net::TcpListener::bind(api_addr)
        .await
        .map_err(|e| DaemonError::Net(format!("cannot listen on {api_addr}: {e}")))?;

    // Our swarm: transactions, block queries and ciphertexts.
    let net_metrics = Arc::new(NetMetrics::default());
    let intake_handler = Intake {
        chain: chain.clone(),
        pool: pool.clone(),
        ledger: ledger.clone(),
    };
    let net_cfg = cfg
        .net_config(&keys, &doc, blobs.clone())
        .map_err(|e| home_err(&e))?;
    let (net, net_task) = net::spawn(net_cfg, Arc::new(intake_handler), net_metrics.clone())
        .map_err(|e| DaemonError::Net(e.to_string()))?;
    let swarm = net.clone();
    tasks.spawn(intake, "net", move |stop| {
        net::run_swarm(swarm, net_task, stop)
    });

    // Ordering.
    #[allow(unused_mut)]
    let mut setup = cfg
        .consensus_setup(home, &keys, &doc)
        .map_err(|e| home_err(&e))?;
    #[cfg(feature = "misbehave")]
    {
        setup.forge = behaviour.is_some_and(|b| b.forger);
    }
    let consensus_metrics = Arc::new(ConsensusMetrics::default());
    let running = consensus::start(
        setup,
        &db,
        chain_view,
        pool.clone(),
        ledger.clone(),
        consensus_metrics.clone(),
    )
    .await?;
    let decided = running.decided.clone();
    // Subscribed before the driver runs, so that the duties miss no block.
    let blocks = decided.subscribe();
    tasks.spawn(ordering, "consensus", |stop| running.run(stop));
    #[cfg(feature = "misbehave")]
    if behaviour.is_some_and(|b| b.spammer) {
        let (spam_net, spammer) = (
            net.clone(),
            net::spam::Spammer::new(me.as_bytes(), doc.chain_id()),
        );
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

    // Provider and seat duties, driven by decided blocks.
    let outbox = Outbox::new(
        keys.account.clone(),
        chain.clone(),
        pool.clone(),
        Some(gossip_tx.clone()),
    )
    .with_journal(&db)
    .map_err(|e| ledger_err(&e))?;
    // Own transactions signed before a kill and not yet included go back into the pool
    // under their nonces before anything (the API's submits, the resumed duties) signs
    // anew: those then take the nonces after them, or find them.
    outbox.restore().await;
    let mut provider = Provider::open(outbox.clone(), blobs.clone(), &db)
        .map_err(|e| ledger_err(&e))?
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
    let provider = match behaviour.and_then(|b| b.seat) {
        Some(b) => provider.with_griefing(b.griefs_as_provider()),
        None => provider,
    };
    let provider = Arc::new(provider);
    let desk = match cfg.human {
        true => Some(
            HumanDesk::for_node(&db, me, cfg.block_time(), commit_window)
                .map_err(|e| ledger_err(&e))?,
        ),
        false => None,
    };
    let seat_metrics = Arc::new(SeatMetrics::default());
    let fetch = seat::fetch_from(kubo, net.clone());
    let seat = Seat::open(
        outbox.clone(),
        keys.sealing.clone(),
        blobs,
        &db,
        Some(fetch),
        seat_metrics.clone(),
    )
    .map_err(|e| ledger_err(&e))?
    .with_judges(duties::judges(llm.clone(), desk.clone()));
    #[cfg(feature = "misbehave")]
    let seat = match behaviour.and_then(|b| b.seat) {
        Some(b) => seat.with_behaviour(b),
        None => seat,
    };
    let duties = Duties::new(duties::Config {
        me,
        chain: chain.clone(),
        decided: decided.clone(),
        blocks,
        outbox,
        provider: provider.clone(),
        seat: Arc::new(seat),
        desk: desk.clone(),
    });
    tasks.spawn(duty, "seats", move |stop| duties.run(stop));

    let mut sources: Vec<Arc<dyn MetricsSource>> =
        vec![consensus_metrics, net_metrics, seat_metrics];
    if let Some(desk) = &desk {
        sources.push(Arc::new(desk.clone()));
    }
    if let Some(judge) = &llm {
        sources.push(judge.client().metrics().clone());
        let client = judge.client().clone();
        tasks.spawn(duty, "llm-probe", move |stop| {
            llm::setup::health(client, llm_status, stop)
        });
    }

    // The HTTP API and the audit form.
    let events = api::EventHub::new(decided);
    let api = Api {
        node_id: me,
        validator: doc.validators.contains(&me),
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
        desk,
        chain: chain.clone(),
        me,
    };
    let (app, limits) = (api::app(api, audit_router(audit_web)), cfg.api_limits());
    tasks.spawn(intake, "api", move |mut stop| async move {
        // Event streams never end on their own: they end when the node stops, so that the
        // server's graceful shutdown has only ordinary requests to wait for.
        let stopping = async move {
            stop.wait().await;
            events.close();
        };
        api::server::serve(listener, app, limits, stopping)
            .await
            .map_err(|e| format!("api server: {e}").into())
    });
    let p2p = net.listen_addrs().await.unwrap_or_default();
    info!(node = %me, validator = doc.validators.contains(&me), api = %api_addr, p2p = ?p2p, consensus = %cfg.consensus_listen, "node running");

    // Until a signal or a task's end; then the stages stop in order and the ledger flushes.
    let ended = tasks.wait(signal).await;
    tasks.shutdown(STOP_GRACE).await;
    ledger.flush().map_err(|e| ledger_err(&e))?;
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
