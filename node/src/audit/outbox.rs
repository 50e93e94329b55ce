//! Transactions this node signs for itself (provider and seat duties): each takes the
//! account's next free nonce (ledger nonce plus what the pool already holds from it), goes
//! into the local mempool, and is gossiped to peers.

use std::sync::{Arc, RwLock};

use tokio::sync::mpsc;
use trust_protocol::{
    Hash, Keypair, Signed,
    tx::{Call, SignedTx, Tx},
};

use crate::api::NodeState;

/// Signs and queues this node's own transactions.
#[derive(Debug, Clone)]
pub struct Outbox {
    key: Keypair,
    state: Arc<RwLock<NodeState>>,
    gossip: Option<mpsc::Sender<SignedTx>>,
}

impl Outbox {
    /// An outbox for `key`'s account.
    pub fn new(
        key: Keypair,
        state: Arc<RwLock<NodeState>>,
        gossip: Option<mpsc::Sender<SignedTx>>,
    ) -> Self {
        Self { key, state, gossip }
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

    /// Signs `call` with the next free nonce, pools and gossips it; returns its id.
    pub fn send(&self, call: Call) -> Result<Hash, String> {
        self.send_inner(None, call)
    }

    /// Like [`Outbox::send`], but only if `nonce` is still the next free one (a session id
    /// is derived from it before the transaction is built).
    pub fn send_at(&self, nonce: u64, call: Call) -> Result<Hash, String> {
        self.send_inner(Some(nonce), call)
    }

    fn send_inner(&self, want: Option<u64>, call: Call) -> Result<Hash, String> {
        let me = self.key.public();
        let tx = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let nonce = s
                .contract
                .nonce(&me)
                .saturating_add(s.mempool.pending_from(&me));
            if want.is_some_and(|w| w != nonce) {
                return Err("another transaction of this account took the nonce; retry".into());
            }
            let tx = Signed::sign(&self.key, Tx { nonce, call });
            let NodeState {
                mempool, contract, ..
            } = &mut *s;
            mempool
                .insert(tx.clone(), contract)
                .map_err(|e| e.to_string())?;
            tx
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
