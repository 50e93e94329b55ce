//! Test fixture shared by the provider and seat tests: a contract whose genesis registers
//! Computer auditors with known sealing keys, one running mempool task that every
//! in-process role pools its transactions into, and a block function that orders what
//! is pooled, ends the block, publishes the new chain view (as the consensus driver does)
//! and returns the events.

use trust_contracts::{BlockCtx, Contract, Event, Genesis, GenesisAccount, GenesisAuditor, Params};
use trust_protocol::{Hash, Keypair, seal::SealingSecret, tx::Tier};

use super::{
    outbox::Outbox,
    seat::{FetchBlob, Seat},
};
use crate::{
    blobs::BlobStore,
    chain::Tip,
    mempool::Pool,
    net::NetError,
    tasks::Stop,
    view::{ChainPublisher, ChainView},
};

/// Auditor `i`'s sealing key.
pub(crate) fn sealing(i: usize) -> SealingSecret {
    SealingSecret::from_bytes([u8::try_from(i).expect("few auditors") + 1; 32])
}

/// Auditor `i`'s account key.
pub(crate) fn auditor(i: usize) -> Keypair {
    Keypair::from_label(&format!("aud{i}"))
}

/// The provider's account key.
pub(crate) fn provider_key() -> Keypair {
    Keypair::from_label("provider")
}

/// A chain with a funded provider and `auditors` Computer auditors.
pub(crate) struct Chain {
    pub(crate) contract: Contract,
    /// Stands in for the consensus driver as the view's one writer.
    pub(crate) view: ChainPublisher,
    pub(crate) pool: Pool,
    height: u64,
}

impl Chain {
    /// Must be called inside a Tokio runtime: it starts the mempool task.
    pub(crate) fn new(auditors: usize) -> Self {
        Self::with_tiers(&vec![Tier::Computer; auditors])
    }

    /// A chain whose auditor `i` is of tier `tiers[i]`.
    pub(crate) fn with_tiers(tiers: &[Tier]) -> Self {
        Self::with_expertise(tiers, |_| vec!["math".into()])
    }

    /// A chain whose auditor `i` is of tier `tiers[i]` and declares `expertise(i)`, under
    /// the dev floors ([`trust_contracts::Floors::dev`]): these scenarios ask for `k = 1`
    /// or `2`, short windows and small domains on purpose. The floor scenarios use
    /// [`Chain::with_params`].
    pub(crate) fn with_expertise(tiers: &[Tier], expertise: impl Fn(usize) -> Vec<String>) -> Self {
        let params = Params {
            floors: trust_contracts::Floors::dev(),
            ..Params::default()
        };
        Self::with_params(params, tiers, expertise)
    }

    /// [`Chain::with_expertise`] under `params`.
    pub(crate) fn with_params(
        params: Params,
        tiers: &[Tier],
        expertise: impl Fn(usize) -> Vec<String>,
    ) -> Self {
        let auditors = tiers.len();
        let me = provider_key();
        let mut accounts = vec![GenesisAccount {
            id: me.public(),
            balance: 1_000_000,
            stake: 0,
        }];
        accounts.extend((0..auditors).map(|i| GenesisAccount {
            id: auditor(i).public(),
            balance: 10,
            stake: 1_000,
        }));
        let contract = Contract::new(&Genesis {
            params,
            accounts,
            auditors: (0..auditors)
                .map(|i| GenesisAuditor {
                    id: auditor(i).public(),
                    tier: tiers[i],
                    expertise: expertise(i),
                    sealing_key: sealing(i).public(),
                })
                .collect(),
        })
        .expect("genesis");
        let tip = Tip::genesis(Hash::ZERO);
        let (view, watch) = ChainPublisher::new(ChainView::new(tip, contract.clone(), vec![]));
        let (pool, task) = Pool::new(1000, watch);
        tokio::spawn(task.run(Stop::never()));
        Self {
            contract,
            view,
            pool,
            height: 0,
        }
    }

    /// An outbox for `key` that pools into this chain's mempool.
    pub(crate) fn outbox(&self, key: Keypair) -> Outbox {
        Outbox::new(key, self.view.subscribe(), self.pool.clone(), None)
    }

    /// What a restart leaves of the mempool: a new, empty one on the current chain view
    /// (the node's sled data, held by the test, outlives it).
    pub(crate) fn restart_pool(&mut self) {
        let (pool, task) = Pool::new(1000, self.view.subscribe());
        tokio::spawn(task.run(Stop::never()));
        self.pool = pool;
    }

    /// Transactions pooled.
    pub(crate) async fn pooled(&self) -> usize {
        self.pool.count().await.expect("pool runs")
    }

    /// Orders every pooled transaction into the next block, ends it, publishes the view,
    /// returns its events. The contract runs without block execution, so the block's seed
    /// is a stand-in derived from its height (on the chain it is the proposer's VRF
    /// output, unknown before the block).
    pub(crate) async fn block(&mut self) -> Vec<Event> {
        self.height += 1;
        let h = self.height;
        let ctx = BlockCtx {
            height: h,
            block_hash: Hash::of_parts("audit-testkit", &[&h.to_le_bytes()]),
        };
        let txs = self
            .pool
            .reap(std::sync::Arc::new(self.contract.clone()), 1000)
            .await;
        let mut ev = self.contract.begin_block(&ctx);
        for tx in txs {
            ev.extend(self.contract.apply(&ctx, &tx).expect("pooled tx applies"));
        }
        ev.extend(self.contract.end_block(&ctx));
        let tip = Tip {
            chain: Hash::ZERO,
            height: h,
            hash: ctx.block_hash,
            time_ms: h.saturating_mul(1_000),
            seed: ctx.block_hash,
        };
        self.view
            .publish(ChainView::new(tip, self.contract.clone(), vec![]));
        ev
    }
}

/// A seat of auditor `i`, with its own sled and blob store (kept alive by the returned
/// directory); `fetch` plays the part of Bitswap.
pub(crate) fn seat_of(
    chain: &Chain,
    i: usize,
    fetch: Option<FetchBlob>,
) -> (Seat, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let db = sled::open(dir.path()).unwrap();
    let seat = Seat::open(
        chain.outbox(auditor(i)),
        sealing(i),
        BlobStore::open(&db).unwrap(),
        &db,
        fetch,
        std::sync::Arc::default(),
    )
    .unwrap();
    (seat, dir)
}

/// A stand-in for Bitswap: reads `store` (the provider's blob store) directly.
pub(crate) fn from_store(store: BlobStore) -> FetchBlob {
    std::sync::Arc::new(move |cid| {
        let s = store.clone();
        Box::pin(async move {
            s.get(&cid)
                .map_err(|e| NetError::Bitswap(e.into()))?
                .ok_or(NetError::FetchTimeout(cid).into())
        })
    })
}
