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
//!
//! Every transaction it signs is also written to a journal (sled tree [`JOURNAL_TREE`],
//! by nonce) before it is gossiped, and leaves it once a block includes its nonce. A node
//! killed with transactions of its own still in flight finds them there when it starts
//! again ([`Outbox::restore`]): they go back into its pool and out to its peers under the
//! nonces they were signed with, so a restart never signs a second transaction under a
//! nonce its peers already hold one for (which would make one of the two vanish). A
//! restored call the node's duties ask for again is answered with the transaction already
//! signed, not a second one. An acknowledged `OpenSession` ([`Outbox::send_at`]) is flushed
//! to disk before the provider answers. While the account's ledger nonce stands still with
//! transactions of ours pooled, they are gossiped again every [`REGOSSIP_BLOCKS`] blocks
//! (a node that has just started may have published them before any peer listened).
//!
//! The outbox writes no shared state itself beyond its journal: it reads the chain view
//! and hands what it signs to the mempool task. Its own backlog sits under one async lock,
//! held for the whole of each operation, so that two calls never pick the same nonce.

use std::collections::{HashMap, VecDeque};

use tokio::sync::{Mutex, mpsc};
use trust_contracts::BlockCtx;
use trust_protocol::{
    AccountId, Hash, Keypair, Signed, encoding,
    tx::{Call, SignedTx, Tx},
};

use crate::{
    mempool::{self, MAX_NONCE_AHEAD, MempoolError, Pool},
    view::{ChainWatch, latest},
};

/// Calls that may wait for the nonce window at once.
pub const MAX_BACKLOG: usize = 4096;
/// Blocks the account's ledger nonce may stand still, with transactions of ours pooled,
/// before the outbox checks whether the first of them is refused for good.
pub const STALL_BLOCKS: u32 = 4;
/// Blocks the account's ledger nonce may stand still, with transactions of ours pooled,
/// between two gossips of them.
pub const REGOSSIP_BLOCKS: u32 = 2;
/// Own pooled transactions gossiped again at most at once (the first ones by nonce: the
/// later ones cannot run before them anyway).
pub const REGOSSIP_MAX: usize = 64;
/// The sled tree of this node's own signed transactions not yet included, by nonce.
pub const JOURNAL_TREE: &str = "outbox/journal";

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

/// What the outbox keeps between calls.
#[derive(Debug, Default)]
struct Inner {
    backlog: VecDeque<Call>,
    stall: Stall,
    /// Transactions restored from the journal at start, by the digest of their call:
    /// (nonce, transaction id). A duty that asks for the same call again gets this id.
    restored: HashMap<Hash, (u64, Hash)>,
}

/// Calls that apply at most once (a session duty): asked for again after a restart,
/// the restored transaction answers. A transfer, a bond or an appeal may be meant twice
/// (an appellant may appeal a segment again after its first appeal round).
fn once_only(call: &Call) -> bool {
    matches!(
        call,
        Call::DeliverKeys { .. }
            | Call::Commit { .. }
            | Call::Reveal { .. }
            | Call::Commits { .. }
            | Call::Reveals { .. }
            | Call::Votes { .. }
            | Call::RevealMapping { .. }
            | Call::RevealHoneypot { .. }
            | Call::RevealHoneypots { .. }
    )
}

/// The digest a restored call is found by.
fn call_digest(call: &Call) -> Hash {
    Hash::sha256(&encoding::encode(call))
}

/// The parts of a call a restored transaction may answer one by one: a batch's votes each
/// on its own, a honeypot set whole (it opens all at once or not at all).
fn restorable_parts(call: &Call) -> Vec<Call> {
    match call {
        Call::RevealHoneypots { .. } => vec![call.clone()],
        _ => call.unbatched(),
    }
}

/// Signs and queues this node's own transactions.
#[derive(Debug, Clone)]
pub struct Outbox {
    key: Keypair,
    chain: ChainWatch,
    pool: Pool,
    gossip: Option<mpsc::Sender<SignedTx>>,
    journal: Option<sled::Tree>,
    inner: std::sync::Arc<Mutex<Inner>>,
}

impl Outbox {
    /// An outbox for `key`'s account that reads `chain` and pools into `pool`.
    pub fn new(
        key: Keypair,
        chain: ChainWatch,
        pool: Pool,
        gossip: Option<mpsc::Sender<SignedTx>>,
    ) -> Self {
        Self {
            key,
            chain,
            pool,
            gossip,
            journal: None,
            inner: std::sync::Arc::default(),
        }
    }

    /// Keeps a journal of this account's signed transactions in `db` (tree
    /// [`JOURNAL_TREE`]), for [`Outbox::restore`] after a restart.
    pub fn with_journal(mut self, db: &sled::Db) -> Result<Self, sled::Error> {
        self.journal = Some(db.open_tree(JOURNAL_TREE)?);
        Ok(self)
    }

    /// Puts the journal's transactions that no block has included yet back into the pool
    /// and gossips them, in nonce order; drops the ones a block included meanwhile or that
    /// can no longer apply (the next flush fills the nonce of the latter with a no-op).
    /// Call it once at start, before any duty sends. Returns how many were pooled again.
    pub async fn restore(&self) -> usize {
        let Some(journal) = &self.journal else {
            return 0;
        };
        let mut inner = self.inner.lock().await;
        let me = self.me();
        let next = match self.pool.account(me).await {
            Ok(a) => a.next,
            Err(e) => {
                tracing::warn!(error = %e, "cannot read the pool; the journal of own transactions is not restored");
                return 0;
            }
        };
        self.prune(journal, next);
        let mut restored = 0;
        for entry in journal.iter() {
            let Ok((key, bytes)) = entry else { break };
            let tx = match encoding::decode::<SignedTx>(&bytes) {
                Ok(tx) if tx.signer == me && tx.body.nonce.to_be_bytes() == *key => tx,
                Ok(_) | Err(_) => {
                    tracing::warn!(
                        key = hex::encode(&key),
                        "an unreadable entry in the journal of own transactions; dropped"
                    );
                    let _ = journal.remove(&key);
                    continue;
                }
            };
            let (nonce, id) = (tx.body.nonce, tx.id());
            // A batch (of votes, of honeypot openings) is found by each of its entries:
            // after a restart the duties may ask for them in other groupings.
            let digests: Vec<Hash> = if once_only(&tx.body.call) {
                restorable_parts(&tx.body.call)
                    .iter()
                    .map(call_digest)
                    .collect()
            } else {
                Vec::new()
            };
            match self.pool.admit(tx.clone()).await {
                Ok(_) => {
                    restored += 1;
                    for d in digests {
                        inner.restored.insert(d, (nonce, id));
                    }
                    self.gossip(tx);
                }
                Err(e) => {
                    tracing::info!(nonce, tx = %id, error = %e, "a journaled transaction of ours no longer applies; dropped");
                    let _ = journal.remove(&key);
                }
            }
        }
        if restored > 0 {
            tracing::info!(
                count = restored,
                from = next,
                "own transactions signed before the restart pooled and gossiped again"
            );
        }
        restored
    }

    /// Records `tx` in the journal (replacing what its nonce held).
    fn record(&self, tx: &SignedTx) {
        if let Some(j) = &self.journal
            && let Err(e) = j.insert(tx.body.nonce.to_be_bytes(), encoding::encode(tx))
        {
            tracing::warn!(tx = %tx.id(), error = %e, "could not journal an own transaction");
        }
    }

    /// The transaction the journal holds under `nonce`, if any.
    fn journaled(&self, nonce: u64) -> Option<SignedTx> {
        let bytes = self.journal.as_ref()?.get(nonce.to_be_bytes()).ok()??;
        encoding::decode(&bytes).ok()
    }

    /// Drops the journal's entries below `next` (included by the ledger).
    fn prune(&self, journal: &sled::Tree, next: u64) {
        for key in journal
            .range(..next.to_be_bytes())
            .keys()
            .filter_map(Result::ok)
        {
            let _ = journal.remove(key);
        }
    }

    /// Gossips again the first [`REGOSSIP_MAX`] journaled transactions from `next` on.
    fn regossip(&self, journal: &sled::Tree, next: u64) -> usize {
        let mut sent = 0;
        for (_, bytes) in journal
            .range(next.to_be_bytes()..)
            .filter_map(Result::ok)
            .take(REGOSSIP_MAX)
        {
            if let Ok(tx) = encoding::decode::<SignedTx>(&bytes) {
                self.gossip(tx);
                sent += 1;
            }
        }
        sent
    }

    /// The account key.
    pub fn key(&self) -> &Keypair {
        &self.key
    }

    fn me(&self) -> AccountId {
        self.key.public()
    }

    /// The next nonce this account may use (the first its pool does not hold, from the
    /// ledger nonce on).
    pub async fn next_nonce(&self) -> Result<u64, OutboxError> {
        let _held = self.inner.lock().await;
        Ok(self.pool.account(self.me()).await?.first_free)
    }

    /// Calls waiting for the nonce window.
    pub async fn backlog_len(&self) -> usize {
        self.inner.lock().await.backlog.len()
    }

    /// Signs `call` with the next free nonce, pools and gossips it; or, when the account's
    /// nonce window is full or earlier calls are still waiting, queues it behind them. A
    /// call that can no longer apply is refused unsigned.
    pub async fn send(&self, call: Call) -> Result<Sent, OutboxError> {
        let mut inner = self.inner.lock().await;
        let call = if !inner.restored.is_empty() && once_only(&call) {
            // What a restored transaction already carries is answered by it; a batch
            // goes out with the entries it does not carry (`Call::batch` regroups them:
            // one left goes as its single call).
            let mut answered = None;
            let rest: Vec<Call> = restorable_parts(&call)
                .into_iter()
                .filter(|single| match inner.restored.remove(&call_digest(single)) {
                    Some((_, id)) => {
                        answered = Some(id);
                        false
                    }
                    None => true,
                })
                .collect();
            match (answered, Call::batch(rest.clone())) {
                (Some(id), None) if rest.is_empty() => return Ok(Sent::Pooled(id)),
                (Some(_), Some(smaller)) => smaller,
                _ => call,
            }
        } else {
            call
        };
        if let Some(why) = self.expired(&call) {
            return Err(OutboxError::Expired(why));
        }
        if !inner.backlog.is_empty() {
            if inner.backlog.len() >= MAX_BACKLOG {
                return Err(OutboxError::BacklogFull);
            }
            inner.backlog.push_back(call);
            self.flush_backlog(&mut inner).await;
            return Ok(Sent::Queued);
        }
        match self.sign_and_pool(None, call.clone()).await {
            Ok(id) => Ok(Sent::Pooled(id)),
            Err(Refused::Window) => {
                inner.backlog.push_back(call);
                Ok(Sent::Queued)
            }
            Err(Refused::Expired(why)) => Err(OutboxError::Expired(why)),
            Err(Refused::Other(e)) => Err(e),
        }
    }

    /// Like [`Outbox::send`], but only if `nonce` is the next free one and nothing waits
    /// (a session id is derived from the nonce before the transaction is built).
    pub async fn send_at(&self, nonce: u64, call: Call) -> Result<Hash, OutboxError> {
        let inner = self.inner.lock().await;
        if !inner.backlog.is_empty() {
            return Err(OutboxError::Waiting);
        }
        let r = self.sign_and_pool(Some(nonce), call).await;
        // The caller acknowledges this one to a client: it must survive a kill.
        if r.is_ok()
            && let Some(j) = &self.journal
            && let Err(e) = j.flush_async().await
        {
            tracing::warn!(error = %e, "could not flush the journal of own transactions");
        }
        drop(inner);
        r.map_err(|e| match e {
            Refused::Window => OutboxError::Window,
            Refused::Expired(why) => OutboxError::Expired(why),
            Refused::Other(e) => e,
        })
    }

    /// Runs after every decided block: fills the holes the block left among this
    /// account's pooled nonces, then signs and pools what waits, as far as the nonce window
    /// allows. Returns how many transactions went out.
    pub async fn flush(&self) -> usize {
        let mut inner = self.inner.lock().await;
        let filled = self.repair(&mut inner).await;
        filled.saturating_add(self.flush_backlog(&mut inner).await)
    }

    async fn flush_backlog(&self, inner: &mut Inner) -> usize {
        let mut sent = 0;
        while let Some(call) = inner.backlog.pop_front() {
            match self.sign_and_pool(None, call.clone()).await {
                Ok(_) => sent += 1,
                Err(Refused::Window) => {
                    inner.backlog.push_front(call);
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
        sent
    }

    /// Keeps this account's pooled nonces without holes. A hole is left by one of our
    /// transactions that every node pruned as expired, or that a proposer dropped as
    /// refused for good; each is filled with a no-op, so the ones after it run as signed.
    /// When the ledger nonce stands still for [`STALL_BLOCKS`] blocks, the first pooled
    /// transaction is tried on a copy of the state: refused for good (a proposer elsewhere
    /// dropped it, ours still holds it), it is replaced by a no-op too.
    async fn repair(&self, inner: &mut Inner) -> usize {
        let me = self.me();
        let Ok(acct) = self.pool.account(me).await else {
            return 0;
        };
        let next = acct.next;
        let mut holes = acct.holes;
        if let Some(j) = &self.journal {
            self.prune(j, next);
        }
        inner.restored.retain(|_, (nonce, _)| *nonce >= next);
        let stalled = {
            let st = &mut inner.stall;
            if st.nonce != next || acct.pending == 0 {
                *st = Stall {
                    nonce: next,
                    blocks: 0,
                };
            } else {
                st.blocks = st.blocks.saturating_add(1);
            }
            if st.blocks > 0
                && st.blocks.is_multiple_of(REGOSSIP_BLOCKS)
                && let Some(j) = &self.journal
            {
                let n = self.regossip(j, next);
                tracing::debug!(
                    count = n,
                    nonce = next,
                    "the ledger nonce stands still; own pooled transactions gossiped again"
                );
            }
            st.blocks >= STALL_BLOCKS
        };
        if stalled && let Some(head) = &acct.head {
            let contract = &acct.view.contract;
            let ctx = BlockCtx {
                height: contract.state().height.saturating_add(1),
                block_hash: Hash::ZERO,
            };
            let mut trial = (**contract).clone();
            if let Err(e) = trial.apply(&ctx, head)
                && mempool::refused_for_good(&e)
            {
                tracing::info!(nonce = next, error = %e, "our first pooled transaction is refused for good; replacing it with a no-op");
                holes.insert(0, next);
                inner.stall = Stall {
                    nonce: next,
                    blocks: 0,
                };
            }
        }
        let mut filled = 0;
        let chain = latest(&self.chain).contract.chain_id();
        for nonce in holes {
            if tracing::enabled!(tracing::Level::DEBUG)
                && let Some(lost) = self.journaled(nonce)
            {
                let sessions: std::collections::BTreeSet<Hash> = lost
                    .body
                    .call
                    .unbatched()
                    .iter()
                    .filter_map(Call::session)
                    .collect();
                tracing::debug!(
                    nonce,
                    tx = %lost.id(),
                    calls = lost.body.call.unbatched().len(),
                    sessions = sessions.len(),
                    "our transaction can no longer apply; its nonce gets a no-op"
                );
            }
            let tx = crate::cpu::measure(crate::cpu::Part::Sign, || {
                Signed::sign(
                    &self.key,
                    &chain,
                    Tx {
                        nonce,
                        call: Call::Transfer { to: me, amount: 1 },
                    },
                )
            });
            match self.pool.admit(tx.clone()).await {
                Ok(_) => {
                    filled += 1;
                    self.record(&tx);
                    self.gossip(tx);
                }
                // A block took the nonce since we looked: nothing to fill any more.
                Err(MempoolError::Stale { .. }) => break,
                Err(e) => {
                    tracing::warn!(nonce, error = %e, "could not fill a hole among our pooled nonces");
                    break;
                }
            }
        }
        if filled > 0 {
            tracing::info!(
                count = filled,
                "filled nonces of our transactions that can no longer apply with no-ops"
            );
        }
        filled
    }

    fn expired(&self, call: &Call) -> Option<&'static str> {
        mempool::expired(latest(&self.chain).contract.state(), &self.me(), call)
    }

    /// Signs `call` with the account's first free nonce (which must be `want`, if given)
    /// and pools it. Called with the outbox's lock held, so no other call of ours can take
    /// the same nonce in between.
    async fn sign_and_pool(&self, want: Option<u64>, call: Call) -> Result<Hash, Refused> {
        let me = self.me();
        let acct = self
            .pool
            .account(me)
            .await
            .map_err(|e| Refused::Other(e.into()))?;
        if let Some(why) = mempool::expired(acct.view.contract.state(), &me, &call) {
            return Err(Refused::Expired(why));
        }
        let nonce = acct.first_free;
        if want.is_some_and(|w| w != nonce) {
            return Err(Refused::Other(OutboxError::NonceTaken));
        }
        let tx = crate::cpu::measure(crate::cpu::Part::Sign, || {
            Signed::sign(
                &self.key,
                &acct.view.contract.chain_id(),
                Tx { nonce, call },
            )
        });
        match self.pool.admit(tx.clone()).await {
            Ok(_) => {}
            Err(MempoolError::TooFarAhead { .. }) => return Err(Refused::Window),
            Err(MempoolError::Expired(why)) => return Err(Refused::Expired(why)),
            Err(e) => return Err(Refused::Other(e.into())),
        }
        let id = tx.id();
        self.record(&tx);
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
    Other(OutboxError),
}

/// Why the outbox did not sign or pool a call of this node.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum OutboxError {
    /// The call can no longer apply (its session or window is over).
    #[error("not signed: it can no longer apply ({0})")]
    Expired(&'static str),
    /// The backlog of calls waiting for the nonce window is full.
    #[error("{MAX_BACKLOG} of this node's transactions already wait for inclusion")]
    BacklogFull,
    /// Earlier calls still wait for the nonce window, so no nonce can be promised.
    #[error(
        "this node's earlier transactions are still waiting for inclusion; retry in a few blocks"
    )]
    Waiting,
    /// The account's nonce window is full.
    #[error(
        "this node already has {MAX_NONCE_AHEAD} transactions waiting for inclusion; retry in a few blocks"
    )]
    Window,
    /// The nonce asked for was taken in between.
    #[error("another transaction of this account took the nonce; retry")]
    NonceTaken,
    /// The mempool refused the transaction or did not answer.
    #[error(transparent)]
    Mempool(#[from] MempoolError),
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

    /// A transaction of ours that no block takes (here: no block is made at all) is
    /// gossiped again every [`REGOSSIP_BLOCKS`] flushes while the ledger nonce stands
    /// still, from the journal; once a block includes it, it leaves the journal and is not
    /// gossiped again.
    #[tokio::test]
    async fn a_stalled_transaction_of_ours_is_gossiped_again_until_a_block_takes_it() {
        let mut chain = Chain::new(2);
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let (gossip, mut gossiped) = mpsc::channel(16);
        let out = Outbox::new(
            provider_key(),
            chain.view.subscribe(),
            chain.pool.clone(),
            Some(gossip),
        )
        .with_journal(&db)
        .unwrap();
        let Sent::Pooled(id) = out.send(transfer()).await.unwrap() else {
            panic!("the window has room");
        };
        assert_eq!(gossiped.try_recv().unwrap().id(), id);
        let journal = db.open_tree(JOURNAL_TREE).unwrap();
        assert_eq!(journal.len(), 1);
        for flush in 1..=REGOSSIP_BLOCKS * 2 {
            out.flush().await;
            let again = gossiped.try_recv().ok().map(|t| t.id());
            if flush.is_multiple_of(REGOSSIP_BLOCKS) {
                assert_eq!(again, Some(id), "gossiped again after {flush} still blocks");
            } else {
                assert_eq!(again, None, "not after {flush}");
            }
        }
        chain.block().await;
        for _ in 0..REGOSSIP_BLOCKS * 2 {
            out.flush().await;
        }
        assert!(gossiped.try_recv().is_err(), "included: not gossiped again");
        assert_eq!(journal.len(), 0, "included: out of the journal");
    }

    /// A journal written by something else (a torn write, another key's transaction, a
    /// nonce the ledger passed already) restores nothing it should not: each such entry
    /// is dropped with a warning and the node starts; a good entry beside them is pooled.
    #[tokio::test]
    async fn a_journal_with_garbage_foreign_and_stale_entries_restores_only_what_is_ours() {
        let mut chain = Chain::new(2);
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path()).unwrap();
        let out = chain.outbox(provider_key()).with_journal(&db).unwrap();
        out.send(transfer()).await.unwrap();
        chain.block().await;
        let journal = db.open_tree(JOURNAL_TREE).unwrap();
        let sign = |key: &Keypair, nonce: u64| {
            Signed::sign(
                key,
                &trust_protocol::Hash::ZERO,
                Tx {
                    nonce,
                    call: transfer(),
                },
            )
        };
        // Nonce 0 is included already; 1 is ours and pending; 2 holds garbage; 3 holds
        // another account's transaction; 4 is keyed under the wrong nonce.
        journal
            .insert(
                0u64.to_be_bytes(),
                encoding::encode(&sign(&provider_key(), 0)),
            )
            .unwrap();
        let good = sign(&provider_key(), 1);
        journal
            .insert(1u64.to_be_bytes(), encoding::encode(&good))
            .unwrap();
        journal
            .insert(2u64.to_be_bytes(), &b"\xff\x00torn"[..])
            .unwrap();
        journal
            .insert(3u64.to_be_bytes(), encoding::encode(&sign(&auditor(0), 3)))
            .unwrap();
        journal
            .insert(
                4u64.to_be_bytes(),
                encoding::encode(&sign(&provider_key(), 9)),
            )
            .unwrap();

        chain.restart_pool();
        let out = chain.outbox(provider_key()).with_journal(&db).unwrap();
        assert_eq!(out.restore().await, 1);
        assert!(chain.pool.contains(good.id()).await.unwrap());
        assert_eq!(chain.pooled().await, 1);
        let left: Vec<u64> = journal
            .iter()
            .keys()
            .map(|k| u64::from_be_bytes(k.unwrap().as_ref().try_into().unwrap()))
            .collect();
        assert_eq!(left, vec![1], "only the good entry stays");
        assert_eq!(out.next_nonce().await.unwrap(), 2);
    }

    /// After a restart, the votes a restored transaction carries are answered by it
    /// whichever grouping the duties ask for them in: a batch wholly restored gets the
    /// restored id and nothing is signed; a batch partly restored goes on with only the
    /// votes no restored transaction carries.
    #[tokio::test]
    async fn restored_votes_answer_a_batch_and_the_rest_go_on_alone() {
        let chain = Chain::new(2);
        let out = chain.outbox(auditor(0));
        let session = Hash::of_parts("gone", &[]);
        let commit = |segment: u16| Call::Commit {
            session,
            segment,
            commitment: Hash::of_parts("c", &[&segment.to_le_bytes()]),
        };
        let restored_id = Hash::of_parts("restored", &[]);
        {
            let mut inner = out.inner.lock().await;
            for c in Call::batch(vec![commit(0), commit(1), commit(2)])
                .unwrap()
                .unbatched()
            {
                inner.restored.insert(call_digest(&c), (0, restored_id));
            }
        }
        let both = Call::batch(vec![commit(0), commit(1)]).unwrap();
        assert_eq!(out.send(both).await.unwrap(), Sent::Pooled(restored_id));
        assert_eq!(chain.pooled().await, 0, "nothing new was signed");
        // Segment 2 was restored, 3 was not: 3 goes on alone (and, its session being
        // unknown here, is refused unsigned as expired, not answered by the restored id).
        let mixed = Call::batch(vec![commit(2), commit(3)]).unwrap();
        assert!(matches!(
            out.send(mixed).await,
            Err(OutboxError::Expired("the session is no longer live"))
        ));
        assert!(out.inner.lock().await.restored.is_empty());
    }

    /// A restored honeypot set opening answers the same set asked for again, whole: the
    /// set opens all at once, so it is never split into what was restored and what was
    /// not (the empty set included).
    #[tokio::test]
    async fn a_restored_honeypot_set_answers_the_same_set() {
        let chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let session = Hash::of_parts("gone", &[]);
        let set = |segments: &[u16]| Call::RevealHoneypots {
            session,
            openings: segments
                .iter()
                .map(|&segment| trust_protocol::tx::HoneypotOpening {
                    segment,
                    verdict: trust_protocol::Vote::Invalid,
                    difficulty: trust_protocol::tx::Difficulty::Obvious,
                    salt: trust_protocol::Salt([segment as u8; 32]),
                })
                .collect(),
            set_salt: trust_protocol::Salt([9; 32]),
        };
        let restored_id = Hash::of_parts("restored", &[]);
        {
            let mut inner = out.inner.lock().await;
            for c in [set(&[3, 2, 1]), set(&[])] {
                for part in restorable_parts(&c) {
                    inner.restored.insert(call_digest(&part), (0, restored_id));
                }
            }
        }
        assert_eq!(
            out.send(set(&[3, 2, 1])).await.unwrap(),
            Sent::Pooled(restored_id)
        );
        assert_eq!(out.send(set(&[])).await.unwrap(), Sent::Pooled(restored_id));
        assert_eq!(chain.pooled().await, 0, "nothing new was signed");
        assert!(out.inner.lock().await.restored.is_empty());
        // Another set is not answered (here: refused unsigned, its session being unknown).
        assert!(matches!(
            out.send(set(&[3, 1])).await,
            Err(OutboxError::Expired("the session is no longer live"))
        ));
    }

    /// More calls than the window holds: the rest wait, unsigned, and go out in order as
    /// blocks include the earlier ones; nothing is lost and no nonce is skipped.
    #[tokio::test]
    async fn calls_past_the_nonce_window_wait_and_go_out_as_blocks_include_earlier_ones() {
        let mut chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let n = usize::try_from(MAX_NONCE_AHEAD).unwrap() + 40;
        let mut sent = Vec::new();
        for _ in 0..n {
            sent.push(out.send(transfer()).await.unwrap());
        }
        let pooled = sent.iter().filter(|s| matches!(s, Sent::Pooled(_))).count();
        assert_eq!(pooled, usize::try_from(MAX_NONCE_AHEAD).unwrap() + 1);
        assert_eq!(out.backlog_len().await, n - pooled);
        // send_at refuses while calls wait: the nonce it was promised is not next.
        let next = out.next_nonce().await.unwrap();
        assert!(out.send_at(next, transfer()).await.is_err());
        let me = provider_key().public();
        for _ in 0..5 {
            chain.block().await;
            out.flush().await;
            if out.backlog_len().await == 0 && chain.pooled().await == 0 {
                break;
            }
        }
        assert_eq!(out.backlog_len().await, 0);
        assert_eq!(chain.contract.nonce(&me), u64::try_from(n).unwrap());
    }

    /// One of our transactions leaves every pool (expired, or dropped by a proposer as
    /// refused for good); the ones after it would wait forever behind the hole. The next
    /// flush fills the hole with a no-op, and the later ones land exactly as signed.
    #[tokio::test]
    async fn a_hole_left_by_a_dropped_transaction_is_filled_with_a_no_op() {
        let mut chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let me = provider_key().public();
        let mut ids = Vec::new();
        for _ in 0..5 {
            match out.send(transfer()).await.unwrap() {
                Sent::Pooled(id) => ids.push(id),
                Sent::Queued => panic!("the window has room"),
            }
        }
        assert_eq!(chain.pool.evict(vec![ids[0]]).await, vec![ids[0]]);
        chain.block().await;
        assert_eq!(
            chain.contract.nonce(&me),
            0,
            "nothing of ours could execute"
        );
        assert_eq!(out.flush().await, 1, "one no-op fills nonce 0");
        // The next call takes the first free nonce after the pooled ones.
        assert_eq!(out.next_nonce().await.unwrap(), 5);
        chain.block().await;
        assert_eq!(chain.contract.nonce(&me), 5);
        assert_eq!(chain.pooled().await, 0);
        for id in &ids[1..] {
            assert!(!chain.pool.contains(*id).await.unwrap());
        }
    }

    /// Our first pooled transaction is refused for good (here: registering an auditor that
    /// is registered already) and no proposer of ours dropped it: once the ledger nonce has
    /// stood still for [`STALL_BLOCKS`] flushes, it is replaced by a no-op, and what
    /// follows it lands.
    #[tokio::test]
    async fn a_first_transaction_refused_for_good_is_replaced_after_a_stall() {
        let mut chain = Chain::new(2);
        let key = auditor(0);
        let me = key.public();
        // A second registration, which the contract refuses for good: the pool admits it
        // only when the sender can bond the stake it names.
        let funder = chain.outbox(crate::audit::testkit::provider_key());
        funder
            .send(Call::Transfer {
                to: me,
                amount: 1_000,
            })
            .await
            .unwrap();
        chain.block().await;
        let out = chain.outbox(key);
        let doomed = Call::RegisterAuditor {
            tier: trust_protocol::tx::Tier::Computer,
            expertise: vec!["math".into()],
            sealing_key: crate::audit::testkit::sealing(0).public(),
            stake: 100,
        };
        assert!(matches!(out.send(doomed).await.unwrap(), Sent::Pooled(_)));
        assert!(matches!(
            out.send(transfer()).await.unwrap(),
            Sent::Pooled(_)
        ));
        for _ in 1..STALL_BLOCKS {
            assert_eq!(out.flush().await, 0);
        }
        assert_eq!(out.flush().await, 1, "the doomed one is replaced");
        chain.block().await;
        assert_eq!(chain.contract.nonce(&me), 2);
        assert_eq!(chain.pooled().await, 0);
    }

    /// A vote for a session that is not live (decided, or never opened) is refused before
    /// it is signed: no nonce is taken, nothing is pooled.
    #[tokio::test]
    async fn a_call_that_can_no_longer_apply_is_not_signed() {
        let chain = Chain::new(2);
        let out = chain.outbox(auditor(0));
        let call = Call::Commit {
            session: Hash::of_parts("decided", &[]),
            segment: 0,
            commitment: Hash::ZERO,
        };
        let err = out.send(call.clone()).await.unwrap_err();
        assert!(err.to_string().contains("no longer apply"), "{err}");
        assert!(out.send_at(0, call).await.is_err());
        assert_eq!(chain.pooled().await, 0);
        assert_eq!(out.next_nonce().await.unwrap(), 0);
    }

    /// Many seats' vote tasks send at once through one outbox: each call gets its own
    /// nonce, none replaces another in the pool, and a block includes them all.
    #[tokio::test]
    async fn concurrent_sends_never_share_a_nonce() {
        let mut chain = Chain::new(2);
        let out = chain.outbox(provider_key());
        let mut set = tokio::task::JoinSet::new();
        for _ in 0..20 {
            let out = out.clone();
            set.spawn(async move { out.send(transfer()).await });
        }
        let mut ids = std::collections::BTreeSet::new();
        while let Some(r) = set.join_next().await {
            match r.unwrap().unwrap() {
                Sent::Pooled(id) => assert!(ids.insert(id)),
                Sent::Queued => panic!("the window has room"),
            }
        }
        assert_eq!(chain.pooled().await, 20);
        chain.block().await;
        assert_eq!(chain.contract.nonce(&provider_key().public()), 20);
    }
}
