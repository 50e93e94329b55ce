//! The pool itself: pending transactions by sender and nonce, bounded by count and bytes,
//! with each sender's failure record deciding who is evicted first and who proposes last.
//!
//! Pure state, no I/O: the task in `actor.rs` owns one and applies commands to it.

use std::collections::{BTreeMap, HashMap};

use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash, tx::SignedTx};

use super::{
    Cost, DEFAULT_MAX_BYTES, DEPRIORITISED_AT, DEPRIORITISED_POOL, MAX_CANDIDATES_PER_SENDER,
    MempoolError, Purse, Signature, expired, fits, precheck,
};

/// Senders whose failures are remembered. When full, the one with the fewest failures is
/// forgotten: a persistent offender keeps its record whatever a crowd of others does.
const MAX_SCORED_SENDERS: usize = 16_384;

#[derive(Debug, Clone)]
struct Entry {
    tx: SignedTx,
    id: Hash,
    seq: u64,
    bytes: usize,
    cost: Cost,
}

/// One sender's pooled transactions.
#[derive(Debug, Clone, Default)]
struct Queue {
    by_nonce: BTreeMap<u64, Entry>,
    bytes: usize,
}

impl Queue {
    /// Whether the sender can pay for every entry in nonce order, with `extra` in place of
    /// (or beside) the entry at its nonce.
    fn affordable(&self, purse: Purse, extra: Option<(u64, &Cost)>) -> Result<(), MempoolError> {
        let mut purse = purse;
        let mut pending = extra;
        for (n, e) in &self.by_nonce {
            if let Some((xn, xc)) = pending
                && xn <= *n
            {
                purse.pay(xc)?;
                pending = None;
                if xn == *n {
                    continue;
                }
            }
            purse.pay(&e.cost)?;
        }
        if let Some((_, xc)) = pending {
            purse.pay(xc)?;
        }
        Ok(())
    }

    fn oldest(&self) -> u64 {
        self.by_nonce
            .values()
            .map(|e| e.seq)
            .min()
            .unwrap_or(u64::MAX)
    }
}

/// How a sender ranks for eviction: the greatest is evicted from first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct EvictRank {
    deprioritised: bool,
    failures: u32,
    bytes: usize,
}

/// A bounded, deduplicated pool of pending transactions.
#[derive(Debug, Clone)]
pub struct Mempool {
    max: usize,
    max_bytes: usize,
    seq: u64,
    bytes: usize,
    queues: BTreeMap<AccountId, Queue>,
    /// Transaction id -> (sender, nonce).
    ids: HashMap<Hash, (AccountId, u64)>,
    /// Failures per sender (see [`Mempool::failed`]).
    failures: HashMap<AccountId, u32>,
}

impl Mempool {
    /// An empty pool holding at most `max` transactions (at least 1) and
    /// [`DEFAULT_MAX_BYTES`].
    pub fn new(max: usize) -> Self {
        Self::with_limits(max, DEFAULT_MAX_BYTES)
    }

    /// An empty pool holding at most `max` transactions and `max_bytes` of encoded
    /// transactions (each at least one transaction's worth).
    pub fn with_limits(max: usize, max_bytes: usize) -> Self {
        Self {
            max: max.max(1),
            max_bytes: max_bytes.max(trust_protocol::block::MAX_TX_BYTES),
            seq: 0,
            bytes: 0,
            queues: BTreeMap::new(),
            ids: HashMap::new(),
            failures: HashMap::new(),
        }
    }

    /// Pooled transactions.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether the pool is empty.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Encoded bytes of the pooled transactions.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// How many pooled transactions `sender` has (the nonces after its account's next).
    pub fn pending_from(&self, sender: &AccountId) -> u64 {
        self.queues
            .get(sender)
            .map_or(0, |q| u64::try_from(q.by_nonce.len()).unwrap_or(u64::MAX))
    }

    /// Failures on record for `sender`.
    pub fn failures_of(&self, sender: &AccountId) -> u32 {
        self.failures.get(sender).copied().unwrap_or(0)
    }

    /// Whether `sender` proposes after everyone else (see [`DEPRIORITISED_AT`]).
    pub fn deprioritised(&self, sender: &AccountId) -> bool {
        self.failures_of(sender) >= DEPRIORITISED_AT
    }

    /// The lowest nonce at or above `next` that `sender` has not pooled: where its next
    /// transaction goes (a hole left by a pruned or evicted entry is filled first).
    pub fn first_free(&self, sender: &AccountId, next: u64) -> u64 {
        let Some(q) = self.queues.get(sender) else {
            return next;
        };
        let mut want = next;
        for n in q.by_nonce.range(next..).map(|(n, _)| *n) {
            if n != want {
                break;
            }
            want = want.saturating_add(1);
        }
        want
    }

    /// The nonces from `next` up to `sender`'s highest pooled one that it has not pooled:
    /// holes that keep its later transactions from executing until they are filled.
    pub fn holes(&self, sender: &AccountId, next: u64) -> Vec<u64> {
        let Some(q) = self.queues.get(sender) else {
            return Vec::new();
        };
        let Some(&top) = q.by_nonce.keys().next_back() else {
            return Vec::new();
        };
        (next..top)
            .filter(|n| !q.by_nonce.contains_key(n))
            .collect()
    }

    /// `sender`'s pooled transaction with `nonce`.
    pub fn get(&self, sender: &AccountId, nonce: u64) -> Option<&SignedTx> {
        self.queues.get(sender)?.by_nonce.get(&nonce).map(|e| &e.tx)
    }

    /// Whether a transaction id is pooled.
    pub fn contains(&self, id: &Hash) -> bool {
        self.ids.contains_key(id)
    }

    /// Admits a transaction; returns the id of the entry it replaced (the sender's earlier
    /// transaction with this nonce) or the first one evicted to make room, if any.
    pub fn insert(&mut self, tx: SignedTx, state: &Contract) -> Result<Option<Hash>, MempoolError> {
        self.insert_as(tx, state, Signature::Unchecked)
    }

    /// [`Mempool::insert`] of a transaction whose signature the caller may have checked.
    pub(crate) fn insert_as(
        &mut self,
        tx: SignedTx,
        state: &Contract,
        sig: Signature,
    ) -> Result<Option<Hash>, MempoolError> {
        // A transaction pooled already (the same bytes, signature included) is the most
        // common arrival, by gossip: refused before anything is checked again.
        let id = tx.id();
        if self.ids.contains_key(&id) {
            return Err(MempoolError::Duplicate);
        }
        let bytes = precheck(&tx, state, sig)?;
        fits(&tx, state.state())?;
        let sender = tx.signer;
        let nonce = tx.body.nonce;
        let cost = Cost::of(&sender, &tx.body.call, &state.state().params);
        let queue = self.queues.get(&sender);
        let held = queue.map_or(0, |q| q.by_nonce.len());
        let replaces = queue.is_some_and(|q| q.by_nonce.contains_key(&nonce));
        if let Some(q) = queue {
            q.affordable(Purse::of(state.state(), &sender), Some((nonce, &cost)))?;
        }
        if self.deprioritised(&sender) && !replaces && held >= DEPRIORITISED_POOL {
            return Err(MempoolError::Full(
                "its transactions keep failing and it holds its share",
            ));
        }
        // Only the sender signs for its nonces: a second signature for one means it
        // replaced a transaction that can no longer apply (or it restarted and lost track
        // of what it pooled before). Its latest word wins, so its later nonces can run.
        let replaced = self.remove(&sender, nonce);
        let evicted = self.make_room(&sender, nonce, bytes)?;
        self.seq = self.seq.saturating_add(1);
        let q = self.queues.entry(sender).or_default();
        q.bytes = q.bytes.saturating_add(bytes);
        q.by_nonce.insert(
            nonce,
            Entry {
                tx,
                id,
                seq: self.seq,
                bytes,
                cost,
            },
        );
        self.bytes = self.bytes.saturating_add(bytes);
        self.ids.insert(id, (sender, nonce));
        Ok(replaced.or(evicted))
    }

    fn rank(&self, sender: &AccountId, extra_bytes: usize) -> EvictRank {
        let failures = self.failures_of(sender);
        EvictRank {
            deprioritised: failures >= DEPRIORITISED_AT,
            failures,
            bytes: self
                .queues
                .get(sender)
                .map_or(0, |q| q.bytes)
                .saturating_add(extra_bytes),
        }
    }

    /// Evicts until a transaction of `bytes` from `sender` at `nonce` fits, lowest ranked
    /// sender first, each from its highest nonce; refuses the newcomer when it is itself
    /// what would go. Returns the first id evicted.
    fn make_room(
        &mut self,
        sender: &AccountId,
        nonce: u64,
        bytes: usize,
    ) -> Result<Option<Hash>, MempoolError> {
        let mut first = None;
        while self.ids.len() >= self.max || self.bytes.saturating_add(bytes) > self.max_bytes {
            let ours = self.rank(sender, bytes);
            let victim = self
                .queues
                .keys()
                .filter(|s| *s != sender)
                .map(|s| (self.rank(s, 0), *s))
                .max();
            let from = match victim {
                Some((rank, other)) if rank > ours => other,
                _ => *sender,
            };
            let top = self
                .queues
                .get(&from)
                .and_then(|q| q.by_nonce.keys().next_back().copied());
            let Some(top) = top else {
                return Err(MempoolError::Full("nothing left to evict"));
            };
            if from == *sender && top < nonce {
                return Err(MempoolError::Full(
                    "its sender holds the largest share of a full pool",
                ));
            }
            let gone = self.remove(&from, top);
            first = first.or(gone);
        }
        Ok(first)
    }

    /// Drops a transaction whatever the reason; returns whether it was pooled. Later
    /// nonces of its sender stay pooled until the sender fills the hole (its outbox does).
    pub fn evict(&mut self, id: &Hash) -> bool {
        match self.ids.get(id).copied() {
            Some((sender, nonce)) => self.remove(&sender, nonce).is_some(),
            None => false,
        }
    }

    /// Drops a transaction the contract refused when it was tried (building a proposal, or
    /// executing one it failed in on its own) and counts the failure against its sender.
    /// Returns whether it was pooled.
    pub fn failed(&mut self, id: &Hash) -> bool {
        let Some((sender, nonce)) = self.ids.get(id).copied() else {
            return false;
        };
        self.remove(&sender, nonce);
        self.count_failure(sender);
        true
    }

    fn count_failure(&mut self, sender: AccountId) {
        if !self.failures.contains_key(&sender)
            && self.failures.len() >= MAX_SCORED_SENDERS
            && let Some(least) = self
                .failures
                .iter()
                .min_by_key(|(_, n)| **n)
                .map(|(s, _)| *s)
        {
            self.failures.remove(&least);
        }
        let n = self.failures.entry(sender).or_insert(0);
        *n = n.saturating_add(1);
    }

    fn remove(&mut self, sender: &AccountId, nonce: u64) -> Option<Hash> {
        let q = self.queues.get_mut(sender)?;
        let e = q.by_nonce.remove(&nonce)?;
        q.bytes = q.bytes.saturating_sub(e.bytes);
        if q.by_nonce.is_empty() {
            self.queues.remove(sender);
        }
        self.bytes = self.bytes.saturating_sub(e.bytes);
        self.ids.remove(&e.id);
        Some(e.id)
    }

    /// Up to `max` transactions that can execute in order on `state`: per sender, the run
    /// of consecutive nonces starting at its next nonce, at most
    /// [`MAX_CANDIDATES_PER_SENDER`]; senders interleaved one transaction at a time, in the
    /// order their oldest transaction arrived, deprioritised senders after all others.
    pub fn candidates(&self, state: &Contract, max: usize) -> Vec<SignedTx> {
        let mut runs: Vec<((bool, u64), Vec<&SignedTx>)> = self
            .queues
            .iter()
            .filter_map(|(sender, q)| {
                let next = state.nonce(sender);
                let run: Vec<&SignedTx> = (next..)
                    .zip(q.by_nonce.range(next..))
                    .take_while(|(want, (n, _))| *want == **n)
                    .take(MAX_CANDIDATES_PER_SENDER)
                    .map(|(_, (_, e))| &e.tx)
                    .collect();
                (!run.is_empty()).then(|| ((self.deprioritised(sender), q.oldest()), run))
            })
            .collect();
        runs.sort_by_key(|(rank, _)| *rank);
        let mut out = Vec::new();
        for tier in [false, true] {
            let tier_runs: Vec<&Vec<&SignedTx>> = runs
                .iter()
                .filter(|((d, _), _)| *d == tier)
                .map(|(_, r)| r)
                .collect();
            let longest = tier_runs.iter().map(|r| r.len()).max().unwrap_or(0);
            for i in 0..longest {
                for run in &tier_runs {
                    if out.len() >= max {
                        return out;
                    }
                    if let Some(tx) = run.get(i) {
                        out.push((*tx).clone());
                    }
                }
            }
        }
        out
    }

    /// Drops every entry whose nonce is below its sender's next nonce in `state` (included
    /// in a block, or replaced by one that was), every entry whose call has [`expired`] on
    /// `state` (its sender fills the hole), and each sender's entries from the first one
    /// it can no longer pay for (it spent elsewhere what it had promised here: a failure).
    /// A sender whose nonce moved past a pooled entry had a transaction apply: its failure
    /// count halves. Returns how many entries were dropped.
    pub fn prune(&mut self, state: &Contract) -> usize {
        let st = state.state();
        let mut stale: Vec<(AccountId, u64)> = Vec::new();
        let mut applied: Vec<AccountId> = Vec::new();
        let mut broke: Vec<AccountId> = Vec::new();
        for (s, q) in &self.queues {
            let next = state.nonce(s);
            if q.by_nonce.keys().next().is_some_and(|n| *n < next) {
                applied.push(*s);
            }
            let mut purse = Purse::of(st, s);
            let mut cannot_pay = false;
            for (n, e) in &q.by_nonce {
                if *n < next || expired(st, s, &e.tx.body.call).is_some() {
                    stale.push((*s, *n));
                } else if cannot_pay || purse.pay(&e.cost).is_err() {
                    cannot_pay = true;
                    stale.push((*s, *n));
                }
            }
            if cannot_pay {
                broke.push(*s);
            }
        }
        for (s, n) in &stale {
            self.remove(s, *n);
        }
        for s in applied {
            if let Some(f) = self.failures.get_mut(&s) {
                *f /= 2;
                if *f == 0 {
                    self.failures.remove(&s);
                }
            }
        }
        for s in broke {
            self.count_failure(s);
        }
        stale.len()
    }
}
