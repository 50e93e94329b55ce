//! Transactions this node signs for itself (provider and seat duties): each takes the
//! account's first free nonce (from the ledger nonce, past what the pool already holds from
//! it), goes into the local mempool, and is gossiped to peers.
//!
//! Peers' mempools (and ours) take an account's transactions only up to
//! [`MAX_NONCE_AHEAD`] past its ledger nonce. A seat in many sessions can have more than
//! that to send in one block (a commitment per segment), so calls beyond the window wait
//! here, unsigned, in a bounded backlog, and are signed with the next free nonce as
//! blocks include the earlier ones ([`Outbox::flush`], after every decided block).
//!
//! A call that can no longer apply (a vote for a session already decided, a reveal after
//! its window) is dropped before it is signed, here and when it leaves the backlog. One
//! signed in time can still expire before a block takes it; every node then prunes it
//! from its pool, and [`Outbox::flush`] fills the nonce it held with a no-op (a transfer of
//! 1 to itself), so the account's later transactions run again everywhere without being
//! signed anew. Nothing is ever signed twice under two nonces.

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, RwLock},
};

use tokio::sync::mpsc;
use trust_contracts::BlockCtx;
use trust_protocol::{
    Hash, Keypair, Signed,
    tx::{Call, SignedTx, Tx},
};

use crate::{
    api::NodeState,
    mempool::{self, MAX_NONCE_AHEAD, MempoolError},
};

/// Calls that may wait for the nonce window at once.
pub const MAX_BACKLOG: usize = 4096;
/// Blocks the account's ledger nonce may stand still, with transactions of ours pooled,
/// before the outbox checks whether the first of them is refused for good.
pub const STALL_BLOCKS: u32 = 4;

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

/// How long the account's ledger nonce has stood still.
#[derive(Debug, Default)]
struct Stall {
    nonce: u64,
    blocks: u32,
}

/// Signs and queues this node's own transactions.
#[derive(Debug, Clone)]
pub struct Outbox {
    key: Keypair,
    state: Arc<RwLock<NodeState>>,
    gossip: Option<mpsc::Sender<SignedTx>>,
    backlog: Arc<Mutex<VecDeque<Call>>>,
    stall: Arc<Mutex<Stall>>,
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
            stall: Arc::default(),
        }
    }

    /// The account key.
    pub fn key(&self) -> &Keypair {
        &self.key
    }

    /// The next nonce this account may use (the first its pool does not hold, from the
    /// ledger nonce on).
    pub fn next_nonce(&self) -> u64 {
        let me = self.key.public();
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        s.mempool.first_free(&me, s.contract.nonce(&me))
    }

    /// Calls waiting for the nonce window.
    pub fn backlog_len(&self) -> usize {
        self.backlog.lock().unwrap_or_else(|e| e.into_inner()).len()
    }

    /// Signs `call` with the next free nonce, pools and gossips it; or, when the account's
    /// nonce window is full or earlier calls are still waiting, queues it behind them. A
    /// call that can no longer apply is refused unsigned.
    pub fn send(&self, call: Call) -> Result<Sent, String> {
        if let Some(why) = self.expired(&call) {
            return Err(format!("not signed: it can no longer apply ({why})"));
        }
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
                self.flush_backlog();
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
            Err(Refused::Expired(why)) => {
                Err(format!("not signed: it can no longer apply ({why})"))
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
            Refused::Expired(why) => format!("not signed: it can no longer apply ({why})"),
            Refused::Other(e) => e,
        })
    }

    /// Runs after every decided block: fills the holes the block left among this
    /// account's pooled nonces, then signs and pools what waits, as far as the nonce window
    /// allows. Returns how many transactions went out.
    pub fn flush(&self) -> usize {
        self.repair().saturating_add(self.flush_backlog())
    }

    fn flush_backlog(&self) -> usize {
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
                Err(Refused::Expired(why)) => {
                    tracing::debug!(
                        reason = why,
                        "a queued call of this node expired; dropped unsigned"
                    );
                }
                Err(Refused::Other(e)) => {
                    tracing::warn!(error = %e, "a queued transaction of this node was refused; dropped");
                }
            }
        }
    }

    /// Keeps this account's pooled nonces without holes. A hole is left by one of our
    /// transactions that every node pruned as expired, or that a proposer dropped as
    /// refused for good; each is filled with a no-op, so the ones after it run as signed.
    /// When the ledger nonce stands still for [`STALL_BLOCKS`] blocks, the first pooled
    /// transaction is tried on a copy of the state: refused for good (a proposer elsewhere
    /// dropped it, ours still holds it), it is replaced by a no-op too.
    fn repair(&self) -> usize {
        let me = self.key.public();
        let mut filled = 0;
        let mut out = Vec::new();
        {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            let next = s.contract.nonce(&me);
            let mut holes = s.mempool.holes(&me, next);
            let stalled = {
                let mut st = self.stall.lock().unwrap_or_else(|e| e.into_inner());
                if st.nonce != next || s.mempool.pending_from(&me) == 0 {
                    *st = Stall {
                        nonce: next,
                        blocks: 0,
                    };
                } else {
                    st.blocks = st.blocks.saturating_add(1);
                }
                st.blocks >= STALL_BLOCKS
            };
            if stalled && let Some(head) = s.mempool.get(&me, next) {
                let ctx = BlockCtx {
                    height: s.contract.state().height.saturating_add(1),
                    block_hash: Hash::ZERO,
                };
                let mut trial = s.contract.clone();
                if let Err(e) = trial.apply(&ctx, head)
                    && mempool::refused_for_good(&e)
                {
                    tracing::info!(nonce = next, error = %e, "our first pooled transaction is refused for good; replacing it with a no-op");
                    holes.insert(0, next);
                    *self.stall.lock().unwrap_or_else(|e| e.into_inner()) = Stall {
                        nonce: next,
                        blocks: 0,
                    };
                }
            }
            for nonce in holes {
                let tx = Signed::sign(
                    &self.key,
                    Tx {
                        nonce,
                        call: Call::Transfer { to: me, amount: 1 },
                    },
                );
                let NodeState {
                    mempool, contract, ..
                } = &mut *s;
                match mempool.insert(tx.clone(), contract) {
                    Ok(_) => {
                        filled += 1;
                        out.push(tx);
                    }
                    Err(e) => {
                        tracing::warn!(nonce, error = %e, "could not fill a hole among our pooled nonces");
                        break;
                    }
                }
            }
        }
        if filled > 0 {
            tracing::info!(
                count = filled,
                "filled nonces of our transactions that can no longer apply with no-ops"
            );
        }
        for tx in out {
            self.gossip(tx);
        }
        filled
    }

    fn expired(&self, call: &Call) -> Option<&'static str> {
        let s = self.state.read().unwrap_or_else(|e| e.into_inner());
        mempool::expired(s.contract.state(), &self.key.public(), call)
    }

    fn sign_and_pool(&self, want: Option<u64>, call: Call) -> Result<Hash, Refused> {
        let me = self.key.public();
        let tx = {
            let mut s = self.state.write().unwrap_or_else(|e| e.into_inner());
            if let Some(why) = mempool::expired(s.contract.state(), &me, &call) {
                return Err(Refused::Expired(why));
            }
            let nonce = s.mempool.first_free(&me, s.contract.nonce(&me));
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
                Err(MempoolError::Expired(why)) => return Err(Refused::Expired(why)),
                Err(e) => return Err(Refused::Other(e.to_string())),
            }
        };
        let id = tx.id();
        self.gossip(tx);
        Ok(id)
    }

    fn gossip(&self, tx: SignedTx) {
        let id = tx.id();
        if let Some(g) = &self.gossip
            && g.try_send(tx).is_err()
        {
            tracing::warn!(tx = %id, "gossip queue full; own transaction kept for local proposal");
        }
    }
}

/// Why a transaction did not go into the pool.
enum Refused {
    /// Past the account's nonce window: wait for inclusion of earlier ones.
    Window,
    /// It can no longer apply.
    Expired(&'static str),
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

    /// One of our transactions leaves every pool (expired, or dropped by a proposer as
    /// refused for good); the ones after it would wait forever behind the hole. The next
    /// flush fills the hole with a no-op, and the later ones land exactly as signed.
    #[test]
    fn a_hole_left_by_a_dropped_transaction_is_filled_with_a_no_op() {
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
        chain.block();
        assert_eq!(
            chain.contract.nonce(&me),
            0,
            "nothing of ours could execute"
        );
        assert_eq!(out.flush(), 1, "one no-op fills nonce 0");
        // The next call takes the first free nonce after the pooled ones.
        assert_eq!(out.next_nonce(), 5);
        chain.block();
        assert_eq!(chain.contract.nonce(&me), 5);
        let s = chain.state.read().unwrap();
        assert!(s.mempool.is_empty());
        assert!(ids[1..].iter().all(|id| !s.mempool.contains(id)));
    }

    /// Our first pooled transaction is refused for good (here: registering an auditor that
    /// is registered already) and no proposer of ours dropped it: once the ledger nonce has
    /// stood still for [`STALL_BLOCKS`] flushes, it is replaced by a no-op, and what
    /// follows it lands.
    #[test]
    fn a_first_transaction_refused_for_good_is_replaced_after_a_stall() {
        let mut chain = Chain::new(2);
        let key = auditor(0);
        let me = key.public();
        let out = chain.outbox(key);
        let doomed = Call::RegisterAuditor {
            tier: trust_protocol::tx::Tier::Computer,
            expertise: vec!["math".into()],
            sealing_key: crate::audit::testkit::sealing(0).public(),
        };
        assert!(matches!(out.send(doomed).unwrap(), Sent::Pooled(_)));
        assert!(matches!(out.send(transfer()).unwrap(), Sent::Pooled(_)));
        for _ in 1..STALL_BLOCKS {
            assert_eq!(out.flush(), 0);
        }
        assert_eq!(out.flush(), 1, "the doomed one is replaced");
        chain.block();
        assert_eq!(chain.contract.nonce(&me), 2);
        assert!(chain.state.read().unwrap().mempool.is_empty());
    }

    /// A vote for a session that is not live (decided, or never opened) is refused before
    /// it is signed: no nonce is taken, nothing is pooled.
    #[test]
    fn a_call_that_can_no_longer_apply_is_not_signed() {
        let chain = Chain::new(2);
        let out = chain.outbox(auditor(0));
        let call = Call::Commit {
            session: Hash::of_parts("decided", &[]),
            segment: 0,
            commitment: Hash::ZERO,
        };
        let err = out.send(call.clone()).unwrap_err();
        assert!(err.contains("no longer apply"), "{err}");
        assert!(out.send_at(0, call).is_err());
        assert!(chain.state.read().unwrap().mempool.is_empty());
        assert_eq!(out.next_nonce(), 0);
    }
}
