//! The mempool: signed transactions waiting for a block.
//!
//! Malachite has no mempool; ours is fed by gossip and the HTTP API and drained when this
//! node proposes. Admission checks what needs no execution: size, signature, format, a
//! nonce at or above the sender's next nonce and at most [`MAX_NONCE_AHEAD`] beyond it,
//! and that the call has not [`expired`] (a vote for a session already decided can never
//! apply). Entries are deduplicated by transaction id; for one (sender, nonce) the sender's
//! latest signature replaces the earlier one, so a sender can fill the nonce of a
//! transaction that can no longer apply and free the ones after it on every node. The pool
//! is bounded; when full, the oldest entry is evicted (transactions carry no gas fee to rank
//! by, so age is the order). After every block, included and expired entries are pruned.
//!
//! One task owns the pool ([`PoolTask`]); the rest of the node holds a [`Pool`] handle.

mod pool;

use std::collections::{BTreeMap, HashMap};

use trust_contracts::{Contract, Phase, State, TxError};
use trust_protocol::{
    AccountId, Hash,
    block::MAX_TX_BYTES,
    encoding,
    tx::{Call, SignedTx},
};

pub use self::pool::{AccountPool, COMMAND_CAPACITY, Pool, PoolTask};

/// How far beyond an account's next nonce a transaction may be queued. A seat node votes
/// once per segment it holds a seat on, in one block when it can: at 64, a node seated on
/// 400 segments at once (20 sessions of 20) needed 7 blocks for its commitments and 7 more
/// for its reveals, which set the session latency under load (`bench network`). The pool
/// as a whole stays bounded by `mempool_max`.
pub const MAX_NONCE_AHEAD: u64 = 512;

/// Why a transaction was not admitted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MempoolError {
    /// Encoded size above the limit.
    #[error("transaction of {0} bytes exceeds the limit of {MAX_TX_BYTES}")]
    TooLarge(usize),
    /// Signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// Malformed on its own.
    #[error("malformed transaction: {0}")]
    Format(String),
    /// Already included (nonce below the account's next).
    #[error("stale nonce {got}: the account's next nonce is {next}")]
    Stale {
        /// Transaction nonce.
        got: u64,
        /// Account's next nonce.
        next: u64,
    },
    /// Too far ahead of the account's next nonce.
    #[error("nonce {got} is more than {MAX_NONCE_AHEAD} ahead of the account's next nonce {next}")]
    TooFarAhead {
        /// Transaction nonce.
        got: u64,
        /// Account's next nonce.
        next: u64,
    },
    /// This exact transaction is already pooled.
    #[error("already in the mempool")]
    Duplicate,
    /// The call can never apply any more (see [`expired`]).
    #[error("can no longer apply: {0}")]
    Expired(&'static str),
    /// The mempool task has stopped (the node is shutting down).
    #[error("the mempool has stopped (the node is shutting down)")]
    Stopped,
}

/// Why `sender`'s `call` can never apply on `state` or any later state, if so.
///
/// Only what moves one way is judged here: a session leaves the live set once and for all,
/// phases only move forward, a seat commits and reveals once. What may still change (a
/// reveal sent while its commit window is open, a balance) is left to the contract.
pub fn expired(state: &State, sender: &AccountId, call: &Call) -> Option<&'static str> {
    let session = match call {
        Call::Commit { session, .. }
        | Call::Reveal { session, .. }
        | Call::DeliverKeys { session, .. }
        | Call::RevealMapping { session, .. }
        | Call::RevealHoneypot { session, .. } => session,
        _ => return None,
    };
    let Some(s) = state.sessions.get(session) else {
        return Some("the session is no longer live");
    };
    let seat_of = |segment: u16, round: u8| {
        let seg = s.segments.get(usize::from(segment))?;
        seg.seats
            .iter()
            .find(|x| x.account == *sender && x.round == round)
    };
    let seated_before = |segment: u16, round: u8| {
        s.segments.get(usize::from(segment)).is_some_and(|seg| {
            seg.seats
                .iter()
                .any(|x| x.account == *sender && x.round < round)
        })
    };
    if let Call::Commit { segment, .. } | Call::Reveal { segment, .. } = call
        && usize::from(*segment) >= s.segments.len()
    {
        return Some("the session has no such segment");
    }
    match (call, s.phase) {
        (Call::Commit { segment, .. }, Phase::Commit { round, .. }) => {
            match seat_of(*segment, round) {
                Some(seat) if seat.commitment.is_some() => Some("the seat committed already"),
                None if seated_before(*segment, round) => Some("its round's commit window closed"),
                _ => None,
            }
        }
        (Call::Commit { .. }, Phase::Reveal { .. } | Phase::Disclose { .. }) => {
            Some("the commit window closed")
        }
        (Call::Reveal { segment, .. }, Phase::Commit { round, .. }) => {
            (seat_of(*segment, round).is_none() && seated_before(*segment, round))
                .then_some("its round's reveal window closed")
        }
        (Call::Reveal { segment, .. }, Phase::Reveal { round, .. }) => {
            match seat_of(*segment, round) {
                Some(seat) if seat.vote.is_some() => Some("the seat revealed already"),
                Some(seat) if seat.commitment.is_none() => Some("the seat never committed"),
                None if seated_before(*segment, round) => Some("its round's reveal window closed"),
                _ => None,
            }
        }
        (Call::Reveal { .. } | Call::DeliverKeys { .. }, Phase::Disclose { .. }) => {
            Some("voting ended")
        }
        _ => None,
    }
}

/// Whether the contract refusing a transaction with `error` means it will refuse it on
/// every later state too (so a proposer may drop it). A wrong nonce, a short balance or a
/// phase not reached yet may change; [`expired`] judges phases that have passed.
pub fn refused_for_good(error: &TxError) -> bool {
    // Not `HoneypotHasDependents`: the honeypot resting on this one may be opened first.
    matches!(
        error,
        TxError::BadSignature
            | TxError::Format(_)
            | TxError::AlreadyRegistered
            | TxError::SessionExists(_)
            | TxError::QuorumOutOfLimits(_)
            | TxError::FeeTooLow { .. }
            | TxError::UnknownSession(_)
            | TxError::UnknownSegment(_)
            | TxError::NotProvider
            | TxError::NotASeat(_)
            | TxError::AlreadyCommitted
            | TxError::DuplicateCommitment
            | TxError::NotCommitted
            | TxError::AlreadyRevealed
            | TxError::CommitmentMismatch
            | TxError::NotAHoneypot(_)
            | TxError::TooManyHoneypots(_)
            | TxError::AlreadyDisclosed
    )
}

/// Whether a transaction's signature still has to be checked on admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signature {
    /// Check it.
    Unchecked,
    /// The caller checked it already (the gossip intake does, before anything else).
    Checked,
}

/// What admission checks without looking into the pool: size, signature, format, and the
/// nonce window on `state`.
fn precheck(tx: &SignedTx, state: &Contract, sig: Signature) -> Result<(), MempoolError> {
    let len = encoding::encode(tx).len();
    if len == 0 || len > MAX_TX_BYTES {
        return Err(MempoolError::TooLarge(len));
    }
    if sig == Signature::Unchecked {
        tx.verify().map_err(|_| MempoolError::BadSignature)?;
    }
    tx.body
        .validate()
        .map_err(|e| MempoolError::Format(e.to_string()))?;
    let next = state.nonce(&tx.signer);
    let nonce = tx.body.nonce;
    if nonce < next {
        return Err(MempoolError::Stale { got: nonce, next });
    }
    if nonce - next > MAX_NONCE_AHEAD {
        return Err(MempoolError::TooFarAhead { got: nonce, next });
    }
    Ok(())
}

/// Whether a pool on `state` would take `tx`, judged without the pool: every admission
/// rule but the duplicate check. The gossip intake decides with it whether to forward a
/// transaction before it hands it to the pool.
pub fn admissible(tx: &SignedTx, state: &Contract) -> Result<(), MempoolError> {
    admissible_as(tx, state, Signature::Unchecked)
}

/// [`admissible`] for a transaction whose signature the caller checked.
pub(crate) fn admissible_as(
    tx: &SignedTx,
    state: &Contract,
    sig: Signature,
) -> Result<(), MempoolError> {
    precheck(tx, state, sig)?;
    match expired(state.state(), &tx.signer, &tx.body.call) {
        Some(why) => Err(MempoolError::Expired(why)),
        None => Ok(()),
    }
}

#[derive(Debug, Clone)]
struct Entry {
    tx: SignedTx,
    seq: u64,
}

/// A bounded, deduplicated pool of pending transactions.
#[derive(Debug, Clone)]
pub struct Mempool {
    max: usize,
    seq: u64,
    /// Per sender, by nonce.
    by_sender: BTreeMap<AccountId, BTreeMap<u64, Entry>>,
    /// Transaction id -> (sender, nonce).
    ids: HashMap<Hash, (AccountId, u64)>,
    /// Arrival order -> (sender, nonce), for eviction and fair draining.
    order: BTreeMap<u64, (AccountId, u64)>,
}

impl Mempool {
    /// An empty pool holding at most `max` transactions (at least 1).
    pub fn new(max: usize) -> Self {
        Self {
            max: max.max(1),
            seq: 0,
            by_sender: BTreeMap::new(),
            ids: HashMap::new(),
            order: BTreeMap::new(),
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

    /// How many pooled transactions `sender` has (the nonces after its account's next).
    pub fn pending_from(&self, sender: &AccountId) -> u64 {
        self.by_sender
            .get(sender)
            .map_or(0, |m| u64::try_from(m.len()).unwrap_or(u64::MAX))
    }

    /// The lowest nonce at or above `next` that `sender` has not pooled: where its next
    /// transaction goes (a hole left by a pruned or evicted entry is filled first).
    pub fn first_free(&self, sender: &AccountId, next: u64) -> u64 {
        let Some(m) = self.by_sender.get(sender) else {
            return next;
        };
        let mut want = next;
        for n in m.range(next..).map(|(n, _)| *n) {
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
        let Some(m) = self.by_sender.get(sender) else {
            return Vec::new();
        };
        let Some(&top) = m.keys().next_back() else {
            return Vec::new();
        };
        (next..top).filter(|n| !m.contains_key(n)).collect()
    }

    /// `sender`'s pooled transaction with `nonce`.
    pub fn get(&self, sender: &AccountId, nonce: u64) -> Option<&SignedTx> {
        self.by_sender.get(sender)?.get(&nonce).map(|e| &e.tx)
    }

    /// Whether a transaction id is pooled.
    pub fn contains(&self, id: &Hash) -> bool {
        self.ids.contains_key(id)
    }

    /// Admits a transaction; returns the id of the entry it replaced (the sender's earlier
    /// transaction with this nonce) or evicted to make room, if any.
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
        precheck(&tx, state, sig)?;
        let sender = tx.signer;
        let nonce = tx.body.nonce;
        let id = tx.id();
        if self.ids.contains_key(&id) {
            return Err(MempoolError::Duplicate);
        }
        if let Some(why) = expired(state.state(), &sender, &tx.body.call) {
            return Err(MempoolError::Expired(why));
        }
        // Only the sender signs for its nonces: a second signature for one means it
        // replaced a transaction that can no longer apply (or it restarted and lost track
        // of what it pooled before). Its latest word wins, so its later nonces can run.
        let replaced = self.remove(&sender, nonce);
        let evicted = if replaced.is_some() {
            replaced
        } else if self.ids.len() >= self.max {
            self.evict_oldest()
        } else {
            None
        };
        self.seq += 1;
        let seq = self.seq;
        self.by_sender
            .entry(sender)
            .or_default()
            .insert(nonce, Entry { tx, seq });
        self.ids.insert(id, (sender, nonce));
        self.order.insert(seq, (sender, nonce));
        Ok(evicted)
    }

    /// Drops a transaction the contract refused for good (when a block was built); later
    /// nonces of its sender stay pooled until the sender fills the hole (its outbox does).
    /// Returns whether it was pooled.
    pub fn evict(&mut self, id: &Hash) -> bool {
        match self.ids.get(id).copied() {
            Some((sender, nonce)) => self.remove(&sender, nonce).is_some(),
            None => false,
        }
    }

    fn remove(&mut self, sender: &AccountId, nonce: u64) -> Option<Hash> {
        let m = self.by_sender.get_mut(sender)?;
        let e = m.remove(&nonce)?;
        if m.is_empty() {
            self.by_sender.remove(sender);
        }
        let id = e.tx.id();
        self.ids.remove(&id);
        self.order.remove(&e.seq);
        Some(id)
    }

    fn evict_oldest(&mut self) -> Option<Hash> {
        let (&_, &(sender, nonce)) = self.order.iter().next()?;
        self.remove(&sender, nonce)
    }

    /// Up to `max` transactions that can execute in order on `state`: per sender, the run
    /// of consecutive nonces starting at its next nonce; senders in the order their oldest
    /// transaction arrived.
    pub fn candidates(&self, state: &Contract, max: usize) -> Vec<SignedTx> {
        let mut senders: Vec<(u64, &AccountId)> = self
            .by_sender
            .iter()
            .filter_map(|(s, m)| m.values().map(|e| e.seq).min().map(|seq| (seq, s)))
            .collect();
        senders.sort();
        let mut out = Vec::new();
        for (_, sender) in senders {
            let Some(m) = self.by_sender.get(sender) else {
                continue;
            };
            let next = state.nonce(sender);
            for (want, (n, e)) in (next..).zip(m.range(next..)) {
                if *n != want || out.len() >= max {
                    break;
                }
                out.push(e.tx.clone());
            }
            if out.len() >= max {
                break;
            }
        }
        out
    }

    /// Drops every entry whose nonce is below its sender's next nonce in `state` (included
    /// in a block, or replaced by one that was) and every entry whose call has [`expired`]
    /// on `state` (its sender fills the hole). Returns how many were dropped.
    pub fn prune(&mut self, state: &Contract) -> usize {
        let stale: Vec<(AccountId, u64)> = self
            .by_sender
            .iter()
            .flat_map(|(s, m)| {
                let next = state.nonce(s);
                m.iter()
                    .filter(move |(n, e)| {
                        **n < next || expired(state.state(), s, &e.tx.body.call).is_some()
                    })
                    .map(move |(n, _)| (*s, *n))
            })
            .collect();
        for (s, n) in &stale {
            self.remove(s, *n);
        }
        stale.len()
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
    use crate::chain::{Tip, build_block};

    fn setup() -> (Contract, Keypair, Keypair) {
        let a = Keypair::from_label("a");
        let b = Keypair::from_label("b");
        let accounts = [&a, &b]
            .iter()
            .map(|k| GenesisAccount {
                id: k.public(),
                balance: 1_000,
                stake: 0,
            })
            .collect();
        let c = Contract::new(&Genesis {
            params: Params::default(),
            accounts,
            auditors: vec![],
        })
        .unwrap();
        (c, a, b)
    }

    fn pay(k: &Keypair, to: &Keypair, nonce: u64) -> SignedTx {
        Signed::sign(
            k,
            Tx {
                nonce,
                call: Call::Transfer {
                    to: to.public(),
                    amount: 1,
                },
            },
        )
    }

    #[test]
    fn admission_rules() {
        let (c, a, b) = setup();
        let mut m = Mempool::new(100);
        m.insert(pay(&a, &b, 0), &c).unwrap();
        assert_eq!(m.insert(pay(&a, &b, 0), &c), Err(MempoolError::Duplicate));
        // The sender's second signature for a nonce replaces its first.
        let first = pay(&a, &b, 0).id();
        let mut other = pay(&a, &b, 0);
        other.body.call = Call::Transfer {
            to: a.public(),
            amount: 2,
        };
        let other = Signed::sign(&a, other.body);
        assert_eq!(m.insert(other.clone(), &c), Ok(Some(first)));
        assert!(m.contains(&other.id()) && !m.contains(&first));
        assert!(matches!(
            m.insert(pay(&a, &b, MAX_NONCE_AHEAD + 1), &c),
            Err(MempoolError::TooFarAhead { .. })
        ));
        let mut forged = pay(&b, &a, 0);
        forged.body.nonce = 1;
        assert_eq!(m.insert(forged, &c), Err(MempoolError::BadSignature));
        let zero = Signed::sign(
            &b,
            Tx {
                nonce: 0,
                call: Call::Transfer {
                    to: a.public(),
                    amount: 0,
                },
            },
        );
        assert!(matches!(m.insert(zero, &c), Err(MempoolError::Format(_))));
        assert_eq!(m.len(), 1);
    }

    #[test]
    fn candidates_follow_nonces_and_pruning_drops_included() {
        let (c, a, b) = setup();
        let mut m = Mempool::new(100);
        for n in [2, 0, 1, 5] {
            m.insert(pay(&a, &b, n), &c).unwrap();
        }
        m.insert(pay(&b, &a, 0), &c).unwrap();
        let cand = m.candidates(&c, 100);
        let nonces: Vec<(AccountId, u64)> = cand.iter().map(|t| (t.signer, t.body.nonce)).collect();
        assert_eq!(
            nonces,
            vec![
                (a.public(), 0),
                (a.public(), 1),
                (a.public(), 2),
                (b.public(), 0)
            ]
        );
        let tip = Tip {
            chain: Hash::ZERO,
            height: 0,
            hash: Hash::ZERO,
        };
        let (_, done, dropped) = build_block(&c, &tip, a.public(), &cand);
        assert!(dropped.is_empty());
        assert_eq!(m.prune(&done.contract), 4);
        assert_eq!(m.len(), 1, "nonce 5 waits for 3 and 4");
        assert!(m.candidates(&done.contract, 100).is_empty());
        assert!(matches!(
            m.insert(pay(&a, &b, 1), &done.contract),
            Err(MempoolError::Stale { got: 1, next: 3 })
        ));
    }

    /// A seat's commitment pooled in its window expires when the window closes: every
    /// node prunes it after that block, and a node refuses it from then on. A reveal
    /// waits while the commit window is open and expires once it has closed without a
    /// commitment; everything expires with the session.
    #[test]
    fn session_calls_expire_as_phases_pass_and_leave_the_pool() {
        use trust_contracts::{BlockCtx, GenesisAuditor, Phase};
        use trust_protocol::{
            Salt, Vote,
            cid::Cid,
            hdag::AbstractionLevel,
            seal::SealingSecret,
            tx::{QuorumParams, SegmentEntry, SessionManifest, Tier},
            units::Ppm,
        };

        let provider = Keypair::from_label("provider");
        let seats: Vec<Keypair> = (0..4)
            .map(|i| Keypair::from_label(&format!("seat{i}")))
            .collect();
        let mut accounts = vec![GenesisAccount {
            id: provider.public(),
            balance: 1_000_000,
            stake: 0,
        }];
        accounts.extend(seats.iter().map(|k| GenesisAccount {
            id: k.public(),
            balance: 10,
            stake: 1_000,
        }));
        let mut c = Contract::new(&Genesis {
            params: Params::default(),
            accounts,
            auditors: seats
                .iter()
                .enumerate()
                .map(|(i, k)| GenesisAuditor {
                    id: k.public(),
                    tier: Tier::Computer,
                    expertise: vec!["math".into()],
                    sealing_key: SealingSecret::from_bytes([u8::try_from(i).unwrap() + 1; 32])
                        .public(),
                })
                .collect(),
        })
        .unwrap();
        let id = Hash::of_parts("segment", &[]);
        let mut manifest = SessionManifest {
            segments: vec![SegmentEntry {
                id,
                level: AbstractionLevel::Step,
                tier: Tier::Computer,
                weight: 1,
                depends_on: vec![],
                rests_on_left_out: Vec::new(),
                supports: None,
                cid: Cid::of(id.as_ref()),
                honeypot: None,
                conclusion: true,
            }],
            mapping_commitment: Hash::of_parts("mapping", &[]),
            quorum: QuorumParams {
                k: [3, 3, 3],
                extra_seats: 0,
                tau: Ppm(600_000),
                beta: Ppm(800_000),
            },
            fee: 0,
            domain: "math".into(),
            left_out: vec![],
        };
        manifest.fee = trust_contracts::minimum_fee(&Params::default(), &manifest).unwrap() * 2;
        let session = Tx::session_id(&provider.public(), 0);
        let mut height = 0;
        let mut block = |c: &mut Contract, txs: &[SignedTx]| {
            height += 1;
            let ctx = BlockCtx {
                height,
                block_hash: Hash::of_parts("block", &[&height.to_le_bytes()]),
            };
            for tx in txs {
                c.apply(&ctx, tx).unwrap();
            }
            c.end_block(&ctx);
        };
        let open = Signed::sign(
            &provider,
            Tx {
                nonce: 0,
                call: Call::OpenSession(manifest),
            },
        );
        block(&mut c, &[open]);
        block(&mut c, &[]);
        let s = &c.state().sessions[&session];
        assert!(
            matches!(s.phase, Phase::Commit { round: 0, .. }),
            "{:?}",
            s.phase
        );
        let seat = s.segments[0].seats[0].account;
        let key = seats.iter().find(|k| k.public() == seat).unwrap();
        let commit = Signed::sign(
            key,
            Tx {
                nonce: 0,
                call: Call::Commit {
                    session,
                    segment: 0,
                    commitment: Hash::of_parts("c", &[]),
                },
            },
        );
        let reveal = Call::Reveal {
            session,
            segment: 0,
            vote: Vote::Valid,
            salt: Salt([0; 32]),
        };
        assert_eq!(expired(c.state(), &seat, &commit.body.call), None);
        assert_eq!(expired(c.state(), &seat, &reveal), None, "a reveal waits");
        let mut m = Mempool::new(10);
        m.insert(commit.clone(), &c).unwrap();
        while matches!(c.state().sessions[&session].phase, Phase::Commit { .. }) {
            block(&mut c, &[]);
        }
        assert_eq!(
            expired(c.state(), &seat, &commit.body.call),
            Some("the commit window closed")
        );
        assert_eq!(
            expired(c.state(), &seat, &reveal),
            Some("the seat never committed")
        );
        assert_eq!(m.prune(&c), 1);
        assert!(m.is_empty());
        assert_eq!(
            m.insert(commit.clone(), &c),
            Err(MempoolError::Expired("the commit window closed"))
        );
        while c.state().sessions.contains_key(&session) {
            block(&mut c, &[]);
        }
        assert_eq!(
            expired(c.state(), &seat, &commit.body.call),
            Some("the session is no longer live")
        );
    }

    #[test]
    fn a_full_pool_evicts_the_oldest() {
        let (c, a, b) = setup();
        let mut m = Mempool::new(3);
        let first = pay(&a, &b, 0);
        m.insert(first.clone(), &c).unwrap();
        m.insert(pay(&a, &b, 1), &c).unwrap();
        m.insert(pay(&b, &a, 0), &c).unwrap();
        let evicted = m.insert(pay(&b, &a, 1), &c).unwrap();
        assert_eq!(evicted, Some(first.id()));
        assert_eq!(m.len(), 3);
        assert!(!m.contains(&first.id()));
    }
}
