//! The mempool's one owner: a task that holds the [`Mempool`] and takes bounded commands.
//!
//! Everyone else holds a cloneable [`Pool`] handle: the API and the gossip intake admit
//! transactions, the outbox admits this node's own and asks where its account stands, the
//! consensus driver reaps candidates for a proposal and reports what the contract refused
//! when it tried them. The task checks admission against the newest [`ChainView`] and prunes the
//! pool against each new view before it answers anything, so whoever has seen a block
//! never sees the pool as it was before it.

use std::sync::Arc;

use tokio::sync::mpsc;
use tracing::debug;
use trust_protocol::{Hash, tx::SignedTx};

use super::{
    Mempool,
    ingress::{
        AccountPool, COMMAND_CAPACITY, Command, POOLED_CAPACITY, Pool, Pooled, PooledKeys,
        PooledReveals,
    },
};
use crate::{
    chain::Tip,
    tasks::{Stop, TaskResult},
    view::{ChainView, ChainWatch},
};

/// The mempool task, not yet running.
#[derive(Debug)]
pub struct PoolTask {
    pool: Mempool,
    view: ChainWatch,
    synced: Option<Tip>,
    rx: mpsc::Receiver<Command>,
    watch: Option<Watch>,
    /// Transactions that may apply once the next block is seen ([`PoolTask::park`]).
    parked: Vec<(SignedTx, super::Signature)>,
    parked_bytes: usize,
}

/// Most transactions kept for the next block ([`PoolTask::park`]).
pub(super) const MAX_PARKED: usize = 512;
/// Most bytes of them.
pub(super) const MAX_PARKED_BYTES: usize = 4 << 20;

/// What the task hands on of what it pools, and to whom ([`PoolTask::watch`]).
#[derive(Debug)]
struct Watch {
    me: trust_protocol::AccountId,
    awaited: tokio::sync::watch::Receiver<Awaited>,
    out: mpsc::Sender<Pooled>,
}

/// The sessions whose provider (this node) awaits their reveals in the pool; its one
/// writer is the node's duties task.
pub type Awaited = Arc<std::collections::BTreeSet<Hash>>;

impl Pool {
    /// A pool of at most `max` transactions and the default byte bound, admitting
    /// against the views in `view`. Nothing runs until [`PoolTask::run`] is spawned.
    pub fn new(max: usize, view: ChainWatch) -> (Pool, PoolTask) {
        Self::with_limits(max, super::DEFAULT_MAX_BYTES, view)
    }

    /// A pool of at most `max` transactions and `max_bytes` of them.
    pub fn with_limits(max: usize, max_bytes: usize, view: ChainWatch) -> (Pool, PoolTask) {
        let (tx, rx) = mpsc::channel(COMMAND_CAPACITY);
        (
            Pool { tx },
            PoolTask {
                pool: Mempool::with_limits(max, max_bytes),
                view,
                synced: None,
                rx,
                watch: None,
                parked: Vec::new(),
                parked_bytes: 0,
            },
        )
    }
}

impl PoolTask {
    /// Hands on, from now, what the duties of account `me` may act on before a block
    /// decides it ([`Pooled`]): the keys every admitted `DeliverKeys` seals to `me`'s
    /// seats, so that they judge while the delivery waits for its block, and the reveals
    /// in the sessions `awaited` names, so that their provider can open its honeypots in
    /// the block of the last reveal. The queue is bounded ([`POOLED_CAPACITY`]); when it
    /// is full, nothing is handed on (the block brings it anyway) and the pool never waits.
    pub fn watch(
        mut self,
        me: trust_protocol::AccountId,
        awaited: tokio::sync::watch::Receiver<Awaited>,
    ) -> (Self, mpsc::Receiver<Pooled>) {
        let (out, rx) = mpsc::channel(POOLED_CAPACITY);
        self.watch = Some(Watch { me, awaited, out });
        (self, rx)
    }

    /// Serves commands until `stop` fires or every [`Pool`] handle is gone.
    pub async fn run(mut self, mut stop: Stop) -> TaskResult {
        loop {
            tokio::select! {
                biased;
                () = stop.wait() => return Ok(()),
                changed = self.view.changed() => {
                    if changed.is_err() {
                        // The driver is gone; keep serving on the last view until stopped.
                        self.serve_until_closed(stop).await;
                        return Ok(());
                    }
                    self.sync();
                }
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => self.handle(cmd),
                    None => return Ok(()),
                },
            }
        }
    }

    async fn serve_until_closed(&mut self, mut stop: Stop) {
        loop {
            tokio::select! {
                biased;
                () = stop.wait() => return,
                cmd = self.rx.recv() => match cmd {
                    Some(cmd) => self.handle(cmd),
                    None => return,
                },
            }
        }
    }

    /// Prunes against the newest view if the pool has not seen it yet; returns it.
    fn sync(&mut self) -> Arc<ChainView> {
        let view = self.view.borrow_and_update().clone();
        if self.synced != Some(view.tip) {
            let dropped = self.pool.prune(&view.contract);
            if dropped > 0 {
                debug!(
                    height = view.tip.height,
                    dropped,
                    left = self.pool.len(),
                    "mempool pruned: included or expired"
                );
            }
            self.synced = Some(view.tip);
            // What waited for this block is tried once more on it; what still cannot
            // apply is dropped (its sender's node gossips it again if it must).
            let parked = std::mem::take(&mut self.parked);
            self.parked_bytes = 0;
            let tried = parked.len();
            let mut pooled = 0usize;
            for (tx, sig) in parked {
                if self.insert(tx, sig, &view).is_ok() {
                    pooled = pooled.saturating_add(1);
                }
            }
            if tried > 0 {
                debug!(
                    height = view.tip.height,
                    tried, pooled, "transactions that waited for this block tried again"
                );
            }
        }
        view
    }

    /// Inserts `tx`, and hands on what the watch asks for ([`PoolTask::watch`]).
    fn insert(
        &mut self,
        tx: SignedTx,
        sig: super::Signature,
        view: &ChainView,
    ) -> Result<Option<Hash>, super::MempoolError> {
        let handed = self.watch.as_ref().and_then(|w| {
            let pooled = PooledKeys::of(&tx, &w.me)
                .map(Pooled::Keys)
                .or_else(|| PooledReveals::of(&tx, &w.awaited.borrow()).map(Pooled::Reveals))?;
            Some((pooled, &w.out))
        });
        let r = self.pool.insert_as(tx, &view.contract, sig);
        if let (Ok(_), Some((pooled, out))) = (&r, handed)
            && out.try_send(pooled).is_err()
        {
            debug!(
                "a pooled transaction not handed to the duties (their queue is full); its block brings it"
            );
        }
        r
    }

    /// Keeps `tx`, which cannot apply on this node's view yet and may on the next (a peer
    /// a block ahead gossiped it: a seat committing on keys its provider just delivered;
    /// this node's own transactions are never parked, their outbox owns their nonces),
    /// to be tried once more when the next block arrives, within [`MAX_PARKED`]
    /// transactions and [`MAX_PARKED_BYTES`]; beyond them it is dropped.
    fn park(&mut self, tx: SignedTx, sig: super::Signature) {
        let len = trust_protocol::encoding::encode(&tx).len();
        if self.parked.len() >= MAX_PARKED
            || self.parked_bytes.saturating_add(len) > MAX_PARKED_BYTES
        {
            debug!("a transaction for the next block not kept: the waiting room is full");
            return;
        }
        self.parked_bytes = self.parked_bytes.saturating_add(len);
        self.parked.push((tx, sig));
    }

    fn handle(&mut self, cmd: Command) {
        let view = self.sync();
        match cmd {
            Command::Admit { tx, sig, reply } => {
                let r = self.insert(*tx, sig, &view);
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
            Command::Park { tx, sig } => self.park(*tx, sig),
            Command::Reap {
                contract,
                max,
                reply,
            } => {
                let _ = reply.send(self.pool.candidates(&contract, max));
            }
            Command::Evict { ids, reply } => {
                let gone = ids.into_iter().filter(|id| self.pool.evict(id)).collect();
                let _ = reply.send(gone);
            }
            Command::Failed { ids, reply } => {
                let gone: Vec<Hash> = ids.into_iter().filter(|id| self.pool.failed(id)).collect();
                if let Some(reply) = reply {
                    let _ = reply.send(gone);
                }
            }
            Command::Account { sender, reply } => {
                let next = view.contract.nonce(&sender);
                let _ = reply.send(AccountPool {
                    next,
                    first_free: self.pool.first_free(&sender, next),
                    pending: self.pool.pending_from(&sender),
                    holes: self.pool.holes(&sender, next),
                    head: self.pool.get(&sender, next).cloned(),
                    view,
                });
            }
            Command::Contains { id, reply } => {
                let _ = reply.send(self.pool.contains(&id));
            }
            Command::Len { reply } => {
                let _ = reply.send(self.pool.len());
            }
            Command::Bytes { reply } => {
                let _ = reply.send(self.pool.bytes());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use trust_contracts::{Contract, Genesis, GenesisAccount, Params};
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, SignedTx, Tx},
    };

    use super::*;
    use crate::{
        chain::build_block,
        mempool::MempoolError,
        view::{ChainPublisher, latest},
    };

    fn pay(k: &Keypair, nonce: u64) -> SignedTx {
        Signed::sign(
            k,
            &trust_protocol::Hash::ZERO,
            Tx {
                nonce,
                call: Call::Transfer {
                    to: Keypair::from_label("bob").public(),
                    // Enough to create the recipient's account.
                    amount: Params::default().min_new_account,
                },
            },
        )
    }

    fn chain(a: &Keypair) -> (ChainPublisher, ChainWatch) {
        let contract = Contract::new(&Genesis {
            params: Params::default(),
            accounts: vec![GenesisAccount {
                id: a.public(),
                balance: 1_000,
                stake: 0,
            }],
            auditors: vec![],
        })
        .unwrap();
        let tip = Tip::genesis(Hash::ZERO);
        ChainPublisher::new(ChainView::new(tip, contract, vec![]))
    }

    /// A block of `txs` on the view `publisher` shows, published as the driver would.
    fn commit(publisher: &ChainPublisher, txs: &[SignedTx]) {
        let v = publisher.current();
        let proposer = Keypair::from_label("proposer");
        let (block, done, dropped) = build_block(&v.contract, &v.tip, &proposer, 0, txs).unwrap();
        assert!(dropped.is_empty());
        publisher.publish(ChainView::new(v.tip.after(&block), done.contract, vec![]));
    }

    /// Whoever has seen a block never sees the pool as it was before it: the first command
    /// after a new view finds the included transactions gone, and admission judges
    /// against that view.
    #[tokio::test]
    async fn the_pool_follows_the_published_view() {
        let a = Keypair::from_label("a");
        let (publisher, watch) = chain(&a);
        let (pool, task) = Pool::new(10, watch.clone());
        tokio::spawn(task.run(Stop::never()));
        for n in [0, 1, 3] {
            pool.admit(pay(&a, n)).await.unwrap();
        }
        assert_eq!(pool.admit(pay(&a, 0)).await, Err(MempoolError::Duplicate));
        let acct = pool.account(a.public()).await.unwrap();
        assert_eq!(
            (acct.next, acct.first_free, acct.pending, acct.holes.clone()),
            (0, 2, 3, vec![2])
        );
        assert_eq!(acct.head.map(|t| t.body.nonce), Some(0));

        let cands = pool.reap(latest(&watch).contract.clone(), 10).await;
        assert_eq!(cands.len(), 2, "nonce 3 waits behind the hole at 2");
        commit(&publisher, &cands);
        assert_eq!(pool.count().await.unwrap(), 1, "0 and 1 were pruned");
        assert!(matches!(
            pool.admit(pay(&a, 1)).await,
            Err(MempoolError::Stale { got: 1, next: 2 })
        ));
        let acct = pool.account(a.public()).await.unwrap();
        assert_eq!((acct.next, acct.first_free, acct.pending), (2, 2, 1));
        assert_eq!(acct.view.tip.height, 1);
        assert_eq!(
            pool.evict(vec![pay(&a, 3).id(), pay(&a, 9).id()]).await,
            vec![pay(&a, 3).id()]
        );
        assert_eq!(pool.count().await.unwrap(), 0);
    }

    /// Once the task has stopped, every command says so instead of hanging, and an offer
    /// is refused.
    #[tokio::test]
    async fn a_stopped_pool_answers_stopped() {
        let a = Keypair::from_label("a");
        let (_publisher, watch) = chain(&a);
        let contract = latest(&watch).contract.clone();
        let (pool, task) = Pool::new(10, watch);
        drop(task);
        assert_eq!(pool.admit(pay(&a, 0)).await, Err(MempoolError::Stopped));
        assert_eq!(pool.count().await, Err(MempoolError::Stopped));
        assert!(!pool.offer(pay(&a, 0)));
        assert!(pool.reap(contract, 5).await.is_empty());
    }
}
