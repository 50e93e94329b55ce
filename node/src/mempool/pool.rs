//! The mempool's one owner: a task that holds the [`Mempool`] and takes bounded commands.
//!
//! Everyone else holds a cloneable [`Pool`] handle: the API and the gossip intake admit
//! transactions, the outbox admits this node's own and asks where its account stands, the
//! consensus driver reaps candidates for a proposal and reports what the contract refused
//! when it tried them. The task checks admission against the newest [`ChainView`] and prunes the
//! pool against each new view before it answers anything, so whoever has seen a block
//! never sees the pool as it was before it.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use tracing::debug;
use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash, tx::SignedTx};

use super::{Mempool, MempoolError};
use crate::{
    chain::Tip,
    tasks::{Stop, TaskResult},
    view::{ChainView, ChainWatch},
};

/// Commands waiting for the mempool task at once.
pub const COMMAND_CAPACITY: usize = 1024;

/// What the pool holds of one account, as of the view it was pruned against.
#[derive(Debug, Clone)]
pub struct AccountPool {
    /// The view the answer was computed on.
    pub view: Arc<ChainView>,
    /// The account's next nonce on that view.
    pub next: u64,
    /// The lowest nonce at or above `next` not pooled (where a new transaction goes).
    pub first_free: u64,
    /// How many of its transactions are pooled.
    pub pending: u64,
    /// Nonces from `next` up to its highest pooled one that are not pooled.
    pub holes: Vec<u64>,
    /// Its pooled transaction at `next`, if any (the one the chain waits for).
    pub head: Option<SignedTx>,
}

type Reply<T> = oneshot::Sender<T>;

#[derive(Debug)]
enum Command {
    Admit {
        tx: Box<SignedTx>,
        sig: super::Signature,
        reply: Option<Reply<Result<Option<Hash>, MempoolError>>>,
    },
    Reap {
        contract: Arc<Contract>,
        max: usize,
        reply: Reply<Vec<SignedTx>>,
    },
    Evict {
        ids: Vec<Hash>,
        reply: Reply<Vec<Hash>>,
    },
    Failed {
        ids: Vec<Hash>,
        reply: Option<Reply<Vec<Hash>>>,
    },
    Account {
        sender: AccountId,
        reply: Reply<AccountPool>,
    },
    Contains {
        id: Hash,
        reply: Reply<bool>,
    },
    Len {
        reply: Reply<usize>,
    },
    Bytes {
        reply: Reply<usize>,
    },
}

/// A handle to the mempool task.
#[derive(Debug, Clone)]
pub struct Pool {
    tx: mpsc::Sender<Command>,
}

/// The mempool task, not yet running.
#[derive(Debug)]
pub struct PoolTask {
    pool: Mempool,
    view: ChainWatch,
    synced: Option<Tip>,
    rx: mpsc::Receiver<Command>,
}

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
            },
        )
    }

    async fn ask<T>(&self, make: impl FnOnce(Reply<T>) -> Command) -> Result<T, MempoolError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| MempoolError::Stopped)?;
        rx.await.map_err(|_| MempoolError::Stopped)
    }

    /// Admits `tx`; returns the id of the entry it replaced or evicted, if any.
    pub async fn admit(&self, tx: SignedTx) -> Result<Option<Hash>, MempoolError> {
        self.ask(|reply| Command::Admit {
            tx: Box::new(tx),
            sig: super::Signature::Unchecked,
            reply: Some(reply),
        })
        .await?
    }

    /// Hands `tx` to the pool without waiting for the verdict (the gossip intake, which
    /// runs inside the swarm task and must not wait). Returns `false` when the pool's
    /// queue is full or the pool has stopped: the transaction was not taken.
    pub fn offer(&self, tx: SignedTx) -> bool {
        self.offer_as(tx, super::Signature::Unchecked)
    }

    /// [`Pool::offer`] of a transaction whose signature the caller may have checked (the
    /// gossip intake checks it first thing, so the pool need not check it again).
    pub(crate) fn offer_as(&self, tx: SignedTx, sig: super::Signature) -> bool {
        self.tx
            .try_send(Command::Admit {
                tx: Box::new(tx),
                sig,
                reply: None,
            })
            .is_ok()
    }

    /// Hands `tx`, whose signature the caller checked, to the pool without waiting; the
    /// verdict comes on the returned receiver (the gossip intake reports it to gossipsub
    /// when it arrives). `None` when the pool's queue is full or the pool has stopped.
    pub(crate) fn offer_checked(
        &self,
        tx: SignedTx,
    ) -> Option<oneshot::Receiver<Result<Option<Hash>, MempoolError>>> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .try_send(Command::Admit {
                tx: Box::new(tx),
                sig: super::Signature::Checked,
                reply: Some(reply),
            })
            .ok()
            .map(|()| rx)
    }

    /// Up to `max` transactions that can execute in order on `contract` (see
    /// [`Mempool::candidates`]); none if the pool has stopped.
    pub async fn reap(&self, contract: Arc<Contract>, max: usize) -> Vec<SignedTx> {
        self.ask(|reply| Command::Reap {
            contract,
            max,
            reply,
        })
        .await
        .unwrap_or_default()
    }

    /// Drops the transactions `ids`; returns those that were pooled.
    pub async fn evict(&self, ids: Vec<Hash>) -> Vec<Hash> {
        self.ask(|reply| Command::Evict { ids, reply })
            .await
            .unwrap_or_default()
    }

    /// Drops the transactions `ids`, which the contract refused when they were tried, and
    /// counts each against its sender (see [`Mempool::failed`]); returns those that were
    /// pooled.
    pub async fn failed(&self, ids: Vec<Hash>) -> Vec<Hash> {
        self.ask(|reply| Command::Failed {
            ids,
            reply: Some(reply),
        })
        .await
        .unwrap_or_default()
    }

    /// [`Pool::failed`] without waiting (for callers that must not, such as the driver
    /// while it validates a proposal). Returns `false` when the pool's queue is full.
    pub fn report_failed(&self, ids: Vec<Hash>) -> bool {
        self.tx
            .try_send(Command::Failed { ids, reply: None })
            .is_ok()
    }

    /// Where `sender` stands in the pool.
    pub async fn account(&self, sender: AccountId) -> Result<AccountPool, MempoolError> {
        self.ask(|reply| Command::Account { sender, reply }).await
    }

    /// Whether transaction `id` is pooled.
    pub async fn contains(&self, id: Hash) -> Result<bool, MempoolError> {
        self.ask(|reply| Command::Contains { id, reply }).await
    }

    /// How many transactions are pooled.
    pub async fn count(&self) -> Result<usize, MempoolError> {
        self.ask(|reply| Command::Len { reply }).await
    }

    /// Encoded bytes of the pooled transactions.
    pub async fn bytes(&self) -> Result<usize, MempoolError> {
        self.ask(|reply| Command::Bytes { reply }).await
    }
}

impl PoolTask {
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
        }
        view
    }

    fn handle(&mut self, cmd: Command) {
        let view = self.sync();
        match cmd {
            Command::Admit { tx, sig, reply } => {
                let r = self.pool.insert_as(*tx, &view.contract, sig);
                if let Some(reply) = reply {
                    let _ = reply.send(r);
                }
            }
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
    use trust_contracts::{Genesis, GenesisAccount, Params};
    use trust_protocol::{
        Keypair, Signed,
        tx::{Call, Tx},
    };

    use super::*;
    use crate::{
        chain::build_block,
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
