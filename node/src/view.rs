//! The node's shared view: what several tasks read, and who alone writes it.
//!
//! Every piece of mutable state that more than one task touches has exactly one writer.
//! A writer publishes through a `tokio::sync::watch` channel (readers `borrow()` the
//! latest value, clone the `Arc` out and drop the borrow at once, never across an
//! `.await`), or owns the state inside a task that takes commands over a bounded channel.
//! Nothing else can write: the sending halves below are not `Clone`, and each is created
//! once, in `daemon::run`, and handed to its writer.
//!
//! | state | its one writer | how readers see it | readers |
//! |---|---|---|---|
//! | tip, state root, contract state (and the one before the tip block, for outcome proofs), next validator set ([`ChainView`]) | the consensus driver (`consensus::driver`), once per committed block (its own and synced ones alike); `ledger::restore` builds the first view from the ledger before the driver starts | [`ChainWatch`] from a [`ChainPublisher`] | API, seats, provider, outbox, mempool task, gossip intake, sync server |
//! | the mempool | the mempool task (`mempool::actor`): admits, reaps, evicts, and prunes itself against each new [`ChainView`] | commands with replies through `mempool::Pool` | API (`POST /v1/tx`, reads), outbox (own transactions), gossip intake, driver (proposals) |
//! | connected peers and their heights ([`PeerView`]) | the `peers` task (`daemon`) | [`PeerWatch`] from a [`PeerPublisher`] | API |
//! | LLM endpoint health (`audit::llm::LlmStatus`) | the `llm-probe` task (`daemon`) | `watch::Receiver<Option<LlmStatus>>` | API |
//! | blocks, certificates, tx index, outcomes, snapshots, the heights where the validator powers changed (the ledger) | the consensus driver (`Ledger::append_with_feed`, flushed before the view moves) | reads of the sled trees | API (outcome proofs walk the power changes), sync server, `ledger verify` |
//! | this account's transactions not yet signed (backlog, stall count) | the outbox (`audit::outbox`), under its own lock, one sequence at a time | none: private | - |
//! | votes and salts, opened keys | the seat pipeline (`audit::seat`) | none: private | - |
//! | sessions this node provides | the provider (`audit::provider`) | none: private | - |
//! | the provider's page records (segment texts of the sessions it opened, sled tree `provider/pages`) | the provider, when it opens a session | `Provider::page_record` | the outcome page (`web::session`) |
//! | the auditor-history index (a replay of the ledger through the contract) | the web pages' `History`, advanced under its own lock by at most `BLOCKS_PER_REQUEST` blocks per request | `History::auditor` | the auditor page (`web::auditor`) |
//!
//! Counters (`*Metrics`) are atomics, each bumped by the subsystem that owns it and read
//! by `/metrics`. The blob store is content-addressed: provider, seats and Bitswap may all
//! put a block, but only ever the same bytes under the same CID, so the writes commute.

use std::sync::Arc;

use serde::Serialize;
use tokio::sync::watch;
use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash};

use crate::chain::Tip;

/// A validator and its voting power at the next height.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ValidatorPower {
    /// The validator's account.
    pub id: AccountId,
    /// Its voting power (bonded stake, or 1 each when none has stake).
    pub power: u64,
}

/// The chain as of the last committed block.
#[derive(Debug, Clone)]
pub struct ChainView {
    /// What the next block must extend.
    pub tip: Tip,
    /// The state root at the tip (the header's, computed once per block).
    pub state_root: Hash,
    /// The contract state at the tip.
    pub contract: Arc<Contract>,
    /// The contract state before the tip block: outcome proofs prove the stakes behind
    /// the tip's certificate under its root (`crate::proof`). Kept one block longer than
    /// before, not copied; a restart rebuilds it by replaying at least the tip block
    /// (`None` only at height 0).
    pub parent: Option<Arc<Contract>>,
    /// The validators that vote on the next height, by address.
    pub validators: Arc<[ValidatorPower]>,
}

impl ChainView {
    /// The view at `tip` of `contract`, with `validators` voting next.
    pub fn new(tip: Tip, contract: Contract, validators: Vec<ValidatorPower>) -> Self {
        Self {
            tip,
            state_root: contract.state_root(),
            contract: Arc::new(contract),
            parent: None,
            validators: validators.into(),
        }
    }

    /// Height of the last block (0 before the first).
    pub fn height(&self) -> u64 {
        self.tip.height
    }
}

/// Where readers watch the chain.
pub type ChainWatch = watch::Receiver<Arc<ChainView>>;

/// The one writer of the [`ChainView`]: held by the consensus driver.
#[derive(Debug)]
pub struct ChainPublisher {
    tx: watch::Sender<Arc<ChainView>>,
}

impl ChainPublisher {
    /// A publisher whose readers first see `first`.
    pub fn new(first: ChainView) -> (Self, ChainWatch) {
        let (tx, rx) = watch::channel(Arc::new(first));
        (Self { tx }, rx)
    }

    /// Makes `view` the one every reader sees from now on.
    pub fn publish(&self, view: ChainView) {
        self.tx.send_replace(Arc::new(view));
    }

    /// The view readers see now.
    pub fn current(&self) -> Arc<ChainView> {
        self.tx.borrow().clone()
    }

    /// A new reader.
    pub fn subscribe(&self) -> ChainWatch {
        self.tx.subscribe()
    }
}

/// The latest view in `watch`, without holding the borrow.
pub fn latest(watch: &ChainWatch) -> Arc<ChainView> {
    watch.borrow().clone()
}

/// The node's peers on its own swarm.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PeerView {
    /// Connected peers.
    pub peers: usize,
    /// Each peer's height as it last answered our sync status query (`/trust/sync/1`).
    pub heights: Vec<(String, u64)>,
}

/// Where readers watch the peers.
pub type PeerWatch = watch::Receiver<PeerView>;

/// The one writer of the [`PeerView`]: held by the `peers` task.
#[derive(Debug)]
pub struct PeerPublisher {
    tx: watch::Sender<PeerView>,
}

impl PeerPublisher {
    /// A publisher whose readers first see no peers.
    pub fn new() -> (Self, PeerWatch) {
        let (tx, rx) = watch::channel(PeerView::default());
        (Self { tx }, rx)
    }

    /// Makes `view` the one every reader sees from now on.
    pub fn publish(&self, view: PeerView) {
        self.tx.send_replace(view);
    }
}
