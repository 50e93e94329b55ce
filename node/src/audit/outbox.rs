//! Transactions this node signs for itself (provider and seat duties): each takes the
//! account's next free nonce (ledger nonce plus what the pool already holds from it), goes
//! into the local mempool, and is gossiped to peers.
//!
//! Peers' mempools (and ours) take an account's transactions only up to
//! [`MAX_NONCE_AHEAD`] past its ledger nonce. A seat in many sessions can have more than
//! that to send in one block (a commitment per segment), so calls beyond the window wait
//! here, unsigned, in a bounded backlog, and are signed with the next free nonce as
//! blocks include the earlier ones ([`Outbox::flush`], after every decided block).

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, RwLock},
};

use tokio::sync::mpsc;
use trust_protocol::{
    Hash, Keypair, Signed,
    tx::{Call, SignedTx, Tx},
};

use crate::{
    api::NodeState,
    mempool::{MAX_NONCE_AHEAD, MempoolError},
};

/// Calls that may wait for the nonce window at once.
pub const MAX_BACKLOG: usize = 4096;

/// What became of a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    /// Signed, pooled and gossiped as this transaction.
    Pooled(Hash),
    /// Waiting for the account's nonce window; signed once earlier ones are included.
    Queued,
}

impl std::fmt::Display for Sent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Sent::Pooled(id) => write!(f, "{id}"),
            Sent::Queued => f.write_str("queued behind this node's earlier transactions"),
        }
    }
}

/// Signs and queues this node's own transactions.
#[derive(Debug, Clone)]
pub struct Outbox {
    key: Keypair,
    state: Arc<RwLock<NodeState>>,
    gossip: Option<mpsc::Sender<SignedTx>>,
    backlog: Arc<Mutex<VecDeque<Call>>>,
}

impl Outbox {
    /// An outbox for `key`'s account.
    pub fn new(
        key: Keypair,
        state: Arc<RwLock<NodeState>>,
        gossip: Option<mpsc::Sender<SignedTx>>,
    ) -> Self {
        Self {
            key,
            state,
            gossip,
            backlog: Arc::default(),
        }
    }

    /// The account key.
    pub fn key(&self) -> &Keypair {
        &self.key
    }

    /// The next nonce this account may use (ledger nonce plus its pooled transactions).
    pub fn next_nonce(&self) -> u64 {
        let me = self.key.public();
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        s.contract
            .nonce(&me)
            .saturating_add(s.mempool.pending_from(&me))
    }

    /// Calls waiting for the nonce window.
    pub fn backlog_len(&self) -> usize {
        self.backlog.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Signs `call` with the next free nonce, pools and gossips it; or, when the account's
    /// nonce window is full or earlier calls are still waiting, queues it behind them.
    pub fn send(&self, call: Call) -> Result<Sent, String> {
        {
            let mut backlog = self.backlog.lock().unwrap_or_else(|e| e.into_inner());
            if !backlog.is_empty() {
                if backlog.len() >= MAX_BACKLOG {
                    return Err(format!(
                        "{MAX_BACKLOG} of this node's transactions already wait for inclusion"
                    ));
                }
                backlog.push_back(call);
                drop(backlog);
                self.flush();
                return Ok(Sent::Queued);
            }
        }
        match self.sign_and_pool(None, call.clone()) {
            Ok(id) => Ok(Sent::Pooled(id)),
            Err(Refused::Window) => {
                self.backlog
                    .lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .push_back(call);
                Ok(Sent::Queued)
            }
            Err(Refused::Other(e)) => Err(e),
        }
    }

    /// Like [`Outbox::send`], but only if `nonce` is the next free one and nothing waits
    /// (a session id is derived from the nonce before the transaction is built).
    pub fn send_at(&self, nonce: u64, call: Call) -> Result<Hash, String> {
        if self.backlog_len() > 0 {
            return Err(
                "this node's earlier transactions are still waiting for inclusion; retry in a few blocks"
                    .into(),
            );
        }
        self.sign_and_pool(Some(nonce), call).map_err(|e| match e {
            Refused::Window => format!(
                "this node already has {MAX_NONCE_AHEAD} transactions waiting for inclusion; retry in a few blocks"
            ),
            Refused::Other(e) => e,
        })
    }

    /// Signs and pools what waits, as far as the nonce window allows. Returns how many
    /// went out.
    ///
    /// First it heals a gap: when a proposer evicted one of this node's transactions
    /// because the contract refused it (a commitment after its window closed, say), the
    /// later ones can never execute; they are taken back and their calls signed again
    /// from the ledger nonce, ahead of anything that waits.
    pub fn flush(&self) -> usize {
        self.heal();
        let mut sent = 0;
        loop {
            let Some(call) = self
                .backlog
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .pop_front()
            else {
                return sent;
            };
            match self.sign_and_pool(None, call.clone()) {
                Ok(_) => sent += 1,
                Err(Refused::Window) => {
                    self.backlog
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .push_front(call);
                    return sent;
                }
                Err(Refused::Other(e)) => {
                    tracing::warn!(error = %e, "a queued transaction of this node was refused; dropped");
                }
            }
        }
    }

    fn heal(&self) {
        let me = self.key.public();
        let taken = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let next = s.contract.nonce(&me);
            if s.mempool.runs_from(&me, next) {
                return;
            }
            s.mempool.take_from(&me)
        };
        tracing::warn!(
            count = taken.len(),
            "own pooled transactions stood behind a refused one; signing them again"
        );
        let mut backlog = self.backlog.lock().unwrap_or_else(|e| e.into_inner());
        for tx in taken.into_iter().rev() {
            backlog.push_front(tx.body.call);
        }
    }

    fn sign_and_pool(&self, want: Option<u64>, call: Call) -> Result<Hash, Refused> {
        let me = self.key.public();
        let tx = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if !s.mempool.runs_from(&me, s.contract.nonce(&me)) {
                // Behind a gap nothing executes: wait for `flush` to heal it.
                return Err(Refused::Window);
            }
            let nonce = s
                .contract
                .nonce(&me)
                .saturating_add(s.mempool.pending_from(&me));
            if want.is_some_and(|w| w != nonce) {
                return Err(Refused::Other(
                    "another transaction of this account took the nonce; retry".into(),
                ));
            }
            let tx = Signed::sign(&self.key, Tx { nonce, call });
            let NodeState {
                mempool, contract, ..
            } = &mut *s;
            match mempool.insert(tx.clone(), contract) {
                Ok(_) => tx,
                Err(MempoolError::TooFarAhead { .. }) => return Err(Refused::Window),
                Err(e) => return Err(Refused::Other(e.to_string())),
            }
        };
        let id = tx.id();
        if let Some(g) = &self.gossip
            && g.try_send(tx).is_err()
        {
            tracing::warn!(tx = %id, "gossip queue full; own transaction kept for local proposal");
        }
        Ok(id)
    }
}

/// Why a transaction did not go into the pool.
enum Refused {
    /// Past the account's nonce window: wait for inclusion of earlier ones.
    Window,
    /// Anything else.
    Other(String),
}

#[cfg(test)]
mod tests {
    use trust_protocol::tx::Call;

    use super::*;
    use crate::audit::testkit::{Chain, auditor, provider_key};

    fn transfer() -> Call {
        Call::Transfer {
            to: auditor(1).public(),
            amount: 1,
        }
    }

    /// More calls than the window holds: the rest wait, unsigned, and go out in order as
    /// blocks include the earlier ones; nothing is lost and no nonce is skipped.
    #[test]
    fn calls_past_the_nonce_window_wait_and_go_out_as_blocks_include_earlier_ones() {
        let mut chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let n = usize::try_from(MAX_NONCE_AHEAD).unwrap() + 40;
        let sent: Vec<Sent> = (0..n).map(|_| out.send(transfer()).unwrap()).collect();
        let pooled = sent.iter().filter(|s| matches!(s, Sent::Pooled(_))).count();
        assert_eq!(pooled, usize::try_from(MAX_NONCE_AHEAD).unwrap() + 1);
        assert_eq!(out.backlog_len(), n - pooled);
        // send_at refuses while calls wait: the nonce it was promised is not next.
        assert!(out.send_at(out.next_nonce(), transfer()).is_err());
        let me = provider_key().public();
        for _ in 0..5 {
            chain.block();
            out.flush();
            if out.backlog_len() == 0 && chain.state.read().unwrap().mempool.is_empty() {
                break;
            }
        }
        assert_eq!(out.backlog_len(), 0);
        assert_eq!(chain.contract.nonce(&me), u64::try_from(n).unwrap());
    }

    /// A proposer evicts one of our transactions that the contract refused; the ones
    /// after it would wait forever behind the gap. The next flush takes them back and
    /// signs them again from the ledger nonce, so every call still lands.
    #[test]
    fn a_gap_left_by_an_evicted_transaction_is_healed() {
        let mut chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let me = provider_key().public();
        let ids: Vec<Hash> = (0..5)
            .map(|_| match out.send(transfer()).unwrap() {
                Sent::Pooled(id) => id,
                Sent::Queued => panic!("the window has room"),
            })
            .collect();
        assert!(chain.state.write().unwrap().mempool.evict(&ids[0]));
        // Behind the gap a new call waits instead of taking a nonce that cannot execute.
        assert_eq!(out.send(transfer()).unwrap(), Sent::Queued);
        chain.block();
        assert_eq!(
            chain.contract.nonce(&me),
            0,
            "nothing of ours could execute"
        );
        out.flush();
        chain.block();
        assert_eq!(
            chain.contract.nonce(&me),
            5,
            "four re-signed and the queued one"
        );
        assert_eq!(out.backlog_len(), 0);
    }
}
