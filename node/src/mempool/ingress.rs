//! The mempool task's mailbox: the cloneable [`Pool`] handle everyone else holds, and the
//! commands it sends the task, each with the sender of its reply.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash, tx::SignedTx};

use super::MempoolError;
use crate::view::ChainView;

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
pub(super) enum Command {
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
    pub(super) tx: mpsc::Sender<Command>,
}

// `Pool::new` and `Pool::with_limits`, which make the task too, are in `actor.rs`.
impl Pool {
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
    /// [`Mempool::candidates`](super::Mempool::candidates)); none if the pool has stopped.
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
    /// counts each against its sender (see [`Mempool::failed`](super::Mempool::failed));
    /// returns those that were pooled.
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
