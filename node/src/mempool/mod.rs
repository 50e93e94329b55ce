//! The mempool: signed transactions waiting for a block.
//!
//! Malachite has no mempool; ours is fed by gossip and the HTTP API and drained when this
//! node proposes. Transactions carry no fee, and none is added: spam is priced by
//! affordability, bounded per sender, and evicted when it fails, so that whoever sends
//! transactions that never apply loses their place to those whose transactions do.
//!
//! Admission checks, cheapest first: size, signature, format, a nonce at or above the
//! sender's next nonce and at most [`MAX_NONCE_AHEAD`] beyond it, that the call has not
//! [`expired`] (a vote for a session already decided can never apply), that it fits the
//! sender's standing ([`unfit`]: a commitment needs a seat, a key delivery the session's
//! provider, a withdrawal a released unbonding), and that the sender can pay for it
//! ([`Cost`]): the balance the contract would charge (a transfer's amount, a bond, a
//! session's fee in escrow) and the stake it would unbond, for this transaction and every
//! one of the sender's pooled before it, in nonce order. A sender with nothing can
//! therefore pool nothing but what its seats or sessions owe.
//!
//! Entries are deduplicated by transaction id; for one (sender, nonce) the sender's
//! latest signature replaces the earlier one, so a sender can fill the nonce of a
//! transaction that can no longer apply and free the ones after it on every node.
//!
//! The pool ([`Mempool`], in `state.rs`) is bounded by count and by bytes. When full, it
//! evicts from the sender ranked lowest: one whose transactions keep failing first, then
//! the one holding the most bytes, from its highest nonce down (never a hole at the front
//! of a sender's queue). A transaction refused when a proposal is built, or that makes a
//! proposed block fail on its own, is evicted and counts against its sender; a sender with
//! [`DEPRIORITISED_AT`] failures gets candidate slots only after everyone else and may pool
//! at most [`DEPRIORITISED_POOL`] transactions, until its transactions apply again.
//! Proposals take at most [`MAX_CANDIDATES_PER_SENDER`] transactions per sender,
//! interleaved one by one across senders, so a few senders cannot take every slot. After
//! every block, included, expired and no longer affordable entries are pruned.
//!
//! One task owns the pool ([`PoolTask`]); the rest of the node holds a [`Pool`] handle.
//!
//! Laid out as every actor of this crate (`net`, `mempool`, `audit::duties`): `actor.rs` is
//! the task's loop, `ingress.rs` its mailbox and messages, `state.rs` what the loop owns.
//! Beside them: the admission rules here, the gossip intake (`intake.rs`).

mod actor;
mod ingress;
pub mod intake;
mod state;

#[cfg(test)]
mod tests;

pub use trust_contracts::expired;
use trust_contracts::{Contract, Phase, State, TxError};
use trust_protocol::{
    AccountId,
    block::MAX_TX_BYTES,
    encoding,
    tx::{Call, SignedTx, TxFormatError},
};

pub use self::{
    actor::{Awaited, PoolTask},
    ingress::{
        AccountPool, COMMAND_CAPACITY, POOLED_CAPACITY, Pool, Pooled, PooledKeys, PooledReveals,
    },
    state::Mempool,
};

/// How far beyond an account's next nonce a transaction may be queued. A seat node votes
/// once per segment it holds a seat on, in one block when it can: at 64, a node seated on
/// 400 segments at once (20 sessions of 20) needed 7 blocks for its commitments and 7 more
/// for its reveals, which set the session latency under load (`bench network`). The pool
/// as a whole stays bounded by `mempool_max` and `mempool_max_bytes`.
pub const MAX_NONCE_AHEAD: u64 = 512;
/// Most transactions a proposal draws from the pool.
pub const MAX_CANDIDATES: usize = 2_000;
/// Most transactions of one sender in one proposal: a seat's whole nonce window fits in
/// one block, and four busy senders cannot take all [`MAX_CANDIDATES`] slots between them
/// (senders are interleaved, so every other sender gets its turn first anyway).
pub const MAX_CANDIDATES_PER_SENDER: usize = 512;
/// Failures (transactions evicted because the contract refused them when tried) after
/// which a sender is deprioritised. One or two happen to honest senders (a copy-cat's
/// commitment taken first, a restart that signed again).
pub const DEPRIORITISED_AT: u32 = 3;
/// Most transactions a deprioritised sender may hold in the pool.
pub const DEPRIORITISED_POOL: usize = 16;
/// Default bound on the pool's bytes (encoded transactions): 512 transactions of the
/// largest size, a minute of blocks at the block byte limit.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024 * 1024;

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
    Format(#[source] TxFormatError),
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
    /// The sender cannot pay for it, with what it has pooled before it.
    #[error(
        "the sender cannot pay: it needs {need} {what}, it has {have} after its pooled transactions"
    )]
    Unaffordable {
        /// `balance` or `stake`.
        what: &'static str,
        /// What the transaction needs.
        need: u64,
        /// What the sender has left after its pooled transactions before this one.
        have: u64,
    },
    /// The call does not fit the sender's standing on the current state (see [`unfit`]).
    #[error("does not apply on the current state: {0}")]
    Unfit(&'static str),
    /// The contract would refuse the call on the current state, for this reason (a
    /// withdrawal or an exit, checked by the contract's own rule).
    #[error("the contract refuses it: {0}")]
    Refused(TxError),
    /// The call cannot apply yet on this node's state and may once a block arrives (the
    /// sender may be a block ahead of this node).
    #[error("cannot apply yet: {0}")]
    NotYet(&'static str),
    /// The pool is full and the sender ranks lowest, or it is deprioritised and holds its
    /// share already.
    #[error("the mempool is full for this sender: {0}")]
    Full(&'static str),
    /// The mempool task has stopped (the node is shutting down).
    #[error("the mempool has stopped (the node is shutting down)")]
    Stopped,
}

/// Why `sender`'s `call` does not fit its standing on `state`, if so: `Err(NotYet)` when a
/// block this node has not seen yet may change that (seats not drawn yet), `Err(Unfit)`
/// otherwise. Checked after [`expired`], so the session named is live.
///
/// These are the calls that cost nothing: without this, a key that holds nothing could
/// pool votes and key deliveries that the contract refuses only once a proposer tries them.
pub fn unfit(state: &State, sender: &AccountId, call: &Call) -> Result<(), MempoolError> {
    match call {
        // A batch of votes names only segments where its sender holds a seat (else the
        // contract refuses it whole), and fits when one of its entries does (the contract
        // refuses the others alone); otherwise the first entry says why not.
        Call::Commits { .. } | Call::Reveals { .. } | Call::Votes { .. } => {
            // Seats this node has not seen drawn yet: a seat a block ahead of it may hold
            // them (it commits as soon as its keys are pooled), so it waits for the block.
            let undrawn = call.unbatched().iter().any(|single| {
                single
                    .session()
                    .and_then(|id| state.sessions.get(&id))
                    .is_some_and(|s| matches!(s.phase, Phase::Assigning))
            });
            if undrawn {
                return Err(MempoolError::NotYet("seats are not drawn yet"));
            }
            let named = call
                .unbatched()
                .into_iter()
                .filter_map(|single| match single {
                    Call::Commit {
                        session, segment, ..
                    }
                    | Call::Reveal {
                        session, segment, ..
                    } => Some((session, segment)),
                    _ => None,
                });
            trust_contracts::batch_seated(state, sender, named).map_err(MempoolError::Refused)?;
            let mut first = None;
            for single in call.unbatched() {
                match unfit(state, sender, &single) {
                    Ok(()) => return Ok(()),
                    Err(e) => {
                        first.get_or_insert(e);
                    }
                }
            }
            first.map_or(Ok(()), Err)
        }
        Call::Commit {
            session, segment, ..
        }
        | Call::Reveal {
            session, segment, ..
        } => {
            let Some(s) = state.sessions.get(session) else {
                return Ok(());
            };
            let round = match s.phase {
                Phase::Assigning => return Err(MempoolError::NotYet("seats are not drawn yet")),
                Phase::Commit { round, .. } | Phase::Reveal { round, .. } => round,
                // `expired` refused what the disclosure ends.
                Phase::Disclose { .. } => return Ok(()),
            };
            let seated = s.segments.get(usize::from(*segment)).is_some_and(|g| {
                g.seats
                    .iter()
                    .any(|x| x.account == *sender && x.round == round)
            });
            if seated {
                Ok(())
            } else {
                Err(MempoolError::Unfit(
                    "the sender holds no seat on this segment in this round",
                ))
            }
        }
        Call::DeliverKeys { session, .. }
        | Call::RevealMapping { session, .. }
        | Call::RevealHoneypot { session, .. }
        | Call::RevealHoneypots { session, .. } => match state.sessions.get(session) {
            Some(s) if s.provider != *sender => Err(MempoolError::Unfit(
                "the sender is not the session's provider",
            )),
            _ => Ok(()),
        },
        Call::Withdraw => {
            // The block that takes it is at least the next one.
            let height = state.height.saturating_add(1);
            trust_contracts::withdrawable(state, sender, height)
                .map(|_| ())
                .map_err(MempoolError::Refused)
        }
        Call::Exit => trust_contracts::exit_refused(state, sender)
            .map_or(Ok(()), |e| Err(MempoolError::Refused(e))),
        // Free to send: only a registered auditor that is not leaving and has no
        // declaration pending may declare.
        Call::DeclareExpertise { .. } => match state.auditors.get(sender) {
            Some(a) if a.exiting => Err(MempoolError::Refused(TxError::AlreadyExiting)),
            Some(a) => match &a.pending_expertise {
                Some(p) => Err(MempoolError::Refused(TxError::ExpertisePending(p.at))),
                None => Ok(()),
            },
            None => Err(MempoolError::Refused(TxError::NotAnAuditor)),
        },
        // Free to send too, and checked as the contract will.
        Call::Pause => trust_contracts::pause_refused(state, sender, true)
            .map_or(Ok(()), |e| Err(MempoolError::Refused(e))),
        Call::Resume => trust_contracts::pause_refused(state, sender, false)
            .map_or(Ok(()), |e| Err(MempoolError::Refused(e))),
        Call::Bond { .. } => trust_contracts::bond_refused(state, sender)
            .map_or(Ok(()), |e| Err(MempoolError::Refused(e))),
        Call::RegisterAuditor { tier, stake, .. } => {
            // An auditor is drawn for its stake, which it bonds in the registration itself
            // (paid for as its cost); one below the tier's minimum would be refused for good.
            // (A second registration is left to the contract, which refuses it for good:
            // the proposer evicts it as its sender's failure.)
            if *stake < state.params.min_stake(*tier) {
                Err(MempoolError::Unfit(
                    "a registration bonds at least the tier's minimum stake",
                ))
            } else {
                Ok(())
            }
        }
        // The bond is escrowed from the balance; whether the segments may be appealed is
        // the contract's to say (and `refused_for_good` tells a proposer when never).
        Call::Appeal { segments, .. } => {
            let n = u64::try_from(segments.len()).unwrap_or(u64::MAX);
            let need = state.params.appeal_bond.saturating_mul(n);
            let have = state.accounts.get(sender).map_or(0, |a| a.balance);
            if have < need {
                Err(MempoolError::Unaffordable {
                    what: "balance",
                    need,
                    have,
                })
            } else {
                Ok(())
            }
        }
        // A session below the network's floors (or requiring a domain too few declare)
        // is refused for good: checked here, cheaply, before it takes a place in a block.
        Call::OpenSession(m) => {
            trust_contracts::check_terms(state, sender, m).map_err(MempoolError::Refused)
        }
        // Free to send, so checked in full, as the contract will: a report that does not
        // hold now never will, unless keys it carries have yet to land in a block this
        // node has not seen.
        Call::ReportBadKey { .. } => {
            let Some(report) = trust_contracts::BadKeyReport::of(call) else {
                return Ok(());
            };
            match trust_contracts::check_bad_key_report(state, sender, &report) {
                Ok(_) | Err(TxError::UnknownSession(_)) => Ok(()),
                Err(TxError::KeysNotOnRecord) => Err(MempoolError::NotYet(
                    "the reported keys are not on record (yet)",
                )),
                Err(TxError::WrongPhase(_))
                    if matches!(
                        state.sessions.get(&report.session).map(|s| s.phase),
                        Some(Phase::Assigning)
                    ) =>
                {
                    Err(MempoolError::NotYet("seats are not drawn yet"))
                }
                Err(TxError::NotASeat(_)) => Err(MempoolError::Unfit(
                    "the sender holds no seat on this segment in this round",
                )),
                Err(e) => Err(MempoolError::Refused(e)),
            }
        }
        Call::Transfer { .. } | Call::Unbond { .. } => Ok(()),
    }
}

/// What a call needs and takes from its sender's account, as the contract charges it: a
/// transfer needs its amount (and takes it unless it goes to the sender itself), a bond,
/// a session's fee and honeypot bond, and an appeal's bond (all escrowed) take their
/// amount from the balance, an unbond takes its amount from the stake. Other calls cost
/// nothing. Bonds count like fees: a sender cannot pool more sessions or appeals than its
/// balance escrows, each admitted on the balance the others already spoke for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Cost {
    /// Balance the call needs at its turn.
    pub need_balance: u64,
    /// Balance it takes.
    pub take_balance: u64,
    /// Stake it takes (and needs).
    pub take_stake: u64,
}

impl Cost {
    /// The cost of `sender`'s `call` on a network with `params`.
    pub fn of(sender: &AccountId, call: &Call, params: &trust_contracts::Params) -> Cost {
        let escrow = |amount: u64| Cost {
            need_balance: amount,
            take_balance: amount,
            take_stake: 0,
        };
        match call {
            Call::Transfer { to, amount } => Cost {
                need_balance: *amount,
                take_balance: if to == sender { 0 } else { *amount },
                take_stake: 0,
            },
            Call::Bond { amount } | Call::RegisterAuditor { stake: amount, .. } => Cost {
                need_balance: *amount,
                take_balance: *amount,
                take_stake: 0,
            },
            Call::OpenSession(m) => {
                let bond =
                    trust_contracts::honeypot_bond(params, m.segments.len()).unwrap_or(u64::MAX);
                escrow(m.fee.saturating_add(bond))
            }
            Call::Appeal { segments, .. } => {
                let n = u64::try_from(segments.len()).unwrap_or(u64::MAX);
                escrow(params.appeal_bond.saturating_mul(n))
            }
            Call::Unbond { amount } => Cost {
                need_balance: 0,
                take_balance: 0,
                take_stake: *amount,
            },
            _ => Cost::default(),
        }
    }
}

/// What an account has to pay with, taken down by each cost in turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Purse {
    balance: u64,
    stake: u64,
}

impl Purse {
    /// `sender`'s liquid balance and bonded stake on `state`.
    pub(crate) fn of(state: &State, sender: &AccountId) -> Purse {
        state.accounts.get(sender).map_or(
            Purse {
                balance: 0,
                stake: 0,
            },
            |a| Purse {
                balance: a.balance,
                stake: a.stake,
            },
        )
    }

    /// Pays `cost`, or says what is missing.
    pub(crate) fn pay(&mut self, cost: &Cost) -> Result<(), MempoolError> {
        if cost.need_balance > self.balance || cost.take_balance > self.balance {
            return Err(MempoolError::Unaffordable {
                what: "balance",
                need: cost.need_balance.max(cost.take_balance),
                have: self.balance,
            });
        }
        if cost.take_stake > self.stake {
            return Err(MempoolError::Unaffordable {
                what: "stake",
                need: cost.take_stake,
                have: self.stake,
            });
        }
        self.balance -= cost.take_balance;
        self.stake -= cost.take_stake;
        Ok(())
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
            | TxError::AlreadyExiting
            | TxError::SessionExists(_)
            | TxError::QuorumOutOfLimits(_)
            | TxError::FeeTooLow { .. }
            // The manifest alone decides it. (Not `TierUnstaffed` or
            // `RacingSeatsUnappealable`: auditors join.)
            | TxError::ExposureUnmeetable { .. }
            | TxError::UnknownSession(_)
            | TxError::UnknownSegment(_)
            | TxError::NotProvider
            | TxError::NotASeat(_)
            | TxError::DuplicateSeatKey { .. }
            | TxError::AlreadyCommitted
            | TxError::DuplicateCommitment
            | TxError::NotCommitted
            | TxError::AlreadyRevealed
            | TxError::CommitmentMismatch
            | TxError::NotAHoneypot(_)
            | TxError::TooManyHoneypots(_)
            | TxError::AlreadyDisclosed
            // An appeal after its window, of a honeypot, of an Undecided segment or of one
            // that had every round it may: none of that changes. (Not `AppealOpen`,
            // `NotDecided` or `AppealUnstaffed`: a round ends, a session is decided,
            // auditors join.)
            | TxError::AppealWindowClosed { .. }
            | TxError::AppealHoneypot(_)
            | TxError::AppealUndecided(_)
            | TxError::AppealRoundsExhausted { .. }
            // A proof that fails fails on every state (the seat's key and the box are
            // fixed), and a seat proves a bad key once. (Not `KeysNotOnRecord`: keys still
            // to land may complete the record.)
            | TxError::BadKeyNotProven(_)
            | TxError::BadKeyAlreadyProven
    )
}

pub use crate::chain::waits;

/// Whether a transaction's signature still has to be checked on admission.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Signature {
    /// Check it.
    Unchecked,
    /// The caller checked it already (the gossip intake does, before anything else).
    Checked,
}

/// What admission checks without looking into the pool: size, signature, format, and the
/// nonce window on `state`. Returns the encoded size.
fn precheck(tx: &SignedTx, state: &Contract, sig: Signature) -> Result<usize, MempoolError> {
    let len = encoding::encode(tx).len();
    if len == 0 || len > MAX_TX_BYTES {
        return Err(MempoolError::TooLarge(len));
    }
    // Cheapest first: a replayed or far-ahead nonce is refused before any signature is
    // checked or any field walked (most spam is a replay).
    let next = state.nonce(&tx.signer);
    let nonce = tx.body.nonce;
    if nonce < next {
        return Err(MempoolError::Stale { got: nonce, next });
    }
    if nonce - next > MAX_NONCE_AHEAD {
        return Err(MempoolError::TooFarAhead { got: nonce, next });
    }
    tx.body.validate().map_err(MempoolError::Format)?;
    if sig == Signature::Unchecked {
        crate::cpu::measure(crate::cpu::Part::Verify, || tx.verify(&state.chain_id()))
            .map_err(|_| MempoolError::BadSignature)?;
    }
    Ok(len)
}

/// The stateful rules that need no pool: not [`expired`], not [`unfit`], and affordable
/// on its own.
fn fits(tx: &SignedTx, state: &State) -> Result<(), MempoolError> {
    if let Some(why) = expired(state, &tx.signer, &tx.body.call) {
        return Err(MempoolError::Expired(why));
    }
    unfit(state, &tx.signer, &tx.body.call)?;
    Purse::of(state, &tx.signer).pay(&Cost::of(&tx.signer, &tx.body.call, &state.params))
}

/// Whether a pool on `state` would take `tx`, judged without the pool: every admission
/// rule but the duplicate check, the sender's earlier pooled transactions and the pool's
/// bounds. The gossip intake judges with it before it asks the pool.
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
    fits(tx, state.state())
}
