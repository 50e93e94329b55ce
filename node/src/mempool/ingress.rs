//! The mempool task's mailbox: the cloneable [`Pool`] handle everyone else holds, and the
//! commands it sends the task, each with the sender of its reply.

use std::sync::Arc;

use tokio::sync::{mpsc, oneshot};
use trust_contracts::Contract;
use trust_protocol::{
    AccountId, Hash,
    tx::{Call, SeatKey, SignedTx},
};

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

/// Pooled transactions the mempool hands a node's duties at once, before any block
/// decides them. A full queue drops the newest: the decided block brings the same one
/// block later.
pub const POOLED_CAPACITY: usize = 256;

/// What a node's duties may act on before a block decides it, as the mempool task hands it
/// on once the transaction is admitted ([`crate::mempool::PoolTask::watch`]). Nothing here
/// is on record yet: its reader checks it against the chain before it acts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pooled {
    /// Keys sealed to the watched account's seats.
    Keys(PooledKeys),
    /// Reveals in sessions whose provider awaits them.
    Reveals(PooledReveals),
}

/// The keys one pooled `DeliverKeys` seals to one account's seats.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledKeys {
    /// Who signed the delivery.
    pub provider: AccountId,
    /// Its session.
    pub session: Hash,
    /// The entries sealed to the watched account, in delivery order.
    pub keys: Vec<SeatKey>,
}

impl PooledKeys {
    /// The entries of `tx` sealed to `me`, if it is a key delivery naming any.
    pub fn of(tx: &SignedTx, me: &AccountId) -> Option<PooledKeys> {
        let Call::DeliverKeys { session, keys } = &tx.body.call else {
            return None;
        };
        let mine: Vec<SeatKey> = keys.iter().filter(|k| k.seat == *me).cloned().collect();
        (!mine.is_empty()).then_some(PooledKeys {
            provider: tx.signer,
            session: *session,
            keys: mine,
        })
    }
}

/// The reveals one pooled transaction carries in the sessions a provider awaits them in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PooledReveals {
    /// The seat that signed them.
    pub seat: AccountId,
    /// Each a single [`Call::Reveal`].
    pub reveals: Vec<Call>,
}

impl PooledReveals {
    /// The reveals `tx` carries (alone or batched) in the sessions `awaited` names.
    pub fn of(tx: &SignedTx, awaited: &std::collections::BTreeSet<Hash>) -> Option<PooledReveals> {
        if awaited.is_empty()
            || !matches!(
                tx.body.call,
                Call::Reveal { .. } | Call::Reveals { .. } | Call::Votes { .. }
            )
        {
            return None;
        }
        let reveals: Vec<Call> = tx
            .body
            .call
            .unbatched()
            .into_iter()
            .filter(|c| matches!(c, Call::Reveal { session, .. } if awaited.contains(session)))
            .collect();
        (!reveals.is_empty()).then_some(PooledReveals {
            seat: tx.signer,
            reveals,
        })
    }
}

type Reply<T> = oneshot::Sender<T>;

#[derive(Debug)]
pub(super) enum Command {
    Admit {
        tx: Box<SignedTx>,
        sig: super::Signature,
        reply: Option<Reply<Result<Option<Hash>, MempoolError>>>,
    },
    /// Keep for the next block (see `PoolTask::park`).
    Park {
        tx: Box<SignedTx>,
        sig: super::Signature,
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

    /// Hands the pool `tx`, whose signature the caller checked and which cannot apply on
    /// the caller's view yet but may once the next block arrives (a peer a block ahead
    /// sent it), to be tried again then. Never waits; `false` when the pool's queue is
    /// full or the pool has stopped.
    pub(crate) fn park_checked(&self, tx: SignedTx) -> bool {
        self.tx
            .try_send(Command::Park {
                tx: Box::new(tx),
                sig: super::Signature::Checked,
            })
            .is_ok()
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
