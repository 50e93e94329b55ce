//! Why a transaction was rejected. A rejected transaction changes nothing.

use trust_protocol::{
    AccountId, Hash,
    badkey::BadKeyError,
    tx::{Tier, TxFormatError},
    units::{Amount, Ppm},
};

/// Why the contract rejected a transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxError {
    /// The signature does not verify.
    #[error("bad signature")]
    BadSignature,
    /// The transaction is malformed on its own.
    #[error("malformed transaction: {0}")]
    Format(#[from] TxFormatError),
    /// Wrong nonce: a replay (lower) or out of order (higher).
    #[error("nonce {got} but account expects {expected}")]
    BadNonce {
        /// The account's next nonce.
        expected: u64,
        /// The transaction's nonce.
        got: u64,
    },
    /// A transfer to a key with no account moves less than the network's minimum for a
    /// new account ([`crate::Params::min_new_account`]).
    #[error(
        "the recipient has no account, and a transfer that creates one must move at least {min} (this one moves {amount})"
    )]
    NewAccountTooSmall {
        /// What the transfer moves.
        amount: Amount,
        /// The minimum.
        min: Amount,
    },
    /// Not enough liquid balance.
    #[error("balance {have} is less than {need}")]
    InsufficientBalance {
        /// Balance.
        have: Amount,
        /// Needed.
        need: Amount,
    },
    /// Not enough bonded stake.
    #[error("stake {have} is less than {need}")]
    InsufficientStake {
        /// Stake.
        have: Amount,
        /// Needed.
        need: Amount,
    },
    /// The account is already an auditor.
    #[error("account is already a registered auditor")]
    AlreadyRegistered,
    /// The account is not an auditor.
    #[error("account is not a registered auditor")]
    NotAnAuditor,
    /// Too many pending unbondings.
    #[error("too many pending unbondings")]
    TooManyUnbondings,
    /// Nothing is unbonding: there is nothing to withdraw, now or later.
    #[error("nothing to withdraw: no stake is unbonding (unbond or exit first)")]
    NothingToWithdraw,
    /// Stake is unbonding but none of it is released yet.
    #[error("nothing to withdraw yet: the earliest unbonding frees at height {frees_at}")]
    NotYetWithdrawable {
        /// Height from which the earliest pending unbonding can be withdrawn.
        frees_at: u64,
    },
    /// What is released must stay within a slash's reach: the account holds seats in
    /// sessions that are not final (live, or decided and still appealable), each of which
    /// may still take up to `max_session_loss` of its stake.
    #[error(
        "the account holds a seat in session {session}, which is not final yet: the stake its seats may still lose stays until they are final"
    )]
    SeatHeld {
        /// The session.
        session: Hash,
    },
    /// The auditor is leaving the network already.
    #[error("the auditor is exiting already: withdraw its stake once the unbonding frees")]
    AlreadyExiting,
    /// The account's auditor entry exited and has left the state: an exit is for good.
    #[error(
        "the account exited the network for good: it cannot register or bond again (a new account can)"
    )]
    ExitedForGood,
    /// The account's auditor entry was flagged as a rubber-stamper and has left the state:
    /// a flag is for good.
    #[error(
        "the account was flagged as a rubber-stamper: it cannot register again (its record stays)"
    )]
    FlaggedForGood,
    /// A session with this id exists already.
    #[error("session {0} exists already")]
    SessionExists(Hash),
    /// Quorum parameters outside the genesis limits.
    #[error("quorum parameters outside the network limits: {0}")]
    QuorumOutOfLimits(&'static str),
    /// The seat quorum `tau` is above the ceiling of a tier the session allows: at such a
    /// tau a minority of a panel (one abstaining seat at the least `k`) could block every
    /// verdict.
    #[error(
        "tau {} is above the {tier:?} tier's ceiling {}: a seat quorum that high would let one seat block a verdict (ask for tau <= {})",
        decimal(*.asked), decimal(*.ceiling), decimal(*.ceiling)
    )]
    TauAboveCeiling {
        /// The tier whose ceiling it exceeds.
        tier: Tier,
        /// The tau the session asked for.
        asked: Ppm,
        /// The ceiling.
        ceiling: Ppm,
    },
    /// The fee cannot pay one reward per counted seat.
    #[error("fee {fee} is below the minimum {min} (reward x counted seats)")]
    FeeTooLow {
        /// Offered.
        fee: Amount,
        /// Needed.
        min: Amount,
    },
    /// No live session with this id (unknown, decided or failed).
    #[error("no live session {0}")]
    UnknownSession(Hash),
    /// The segment index is out of range.
    #[error("session has no segment {0}")]
    UnknownSegment(u16),
    /// The action is not allowed in the session's current phase.
    #[error("not allowed now: {0}")]
    WrongPhase(&'static str),
    /// Only the provider may do this.
    #[error("only the session's provider may do this")]
    NotProvider,
    /// A `DeliverKeys` names the same segment's key for the same seat twice.
    #[error(
        "the delivery names segment {segment}'s key for seat {seat} twice: send each (segment, seat) once"
    )]
    DuplicateSeatKey {
        /// The segment.
        segment: u16,
        /// The seat.
        seat: AccountId,
    },
    /// The sender holds no seat of the current round on this segment.
    #[error("{0} holds no seat on this segment in this round")]
    NotASeat(AccountId),
    /// A batch of votes names a segment on which the sender holds no seat, in a session
    /// not final: a batch carries only its sender's own seats' votes.
    #[error(
        "the batch names segment {segment} of session {session}, where the sender holds no seat: batch only your own seats' votes"
    )]
    BatchNotSeated {
        /// The session.
        session: Hash,
        /// The segment.
        segment: u16,
    },
    /// The seat committed already.
    #[error("seat committed already")]
    AlreadyCommitted,
    /// Another seat committed the same commitment (a copy-cat).
    #[error("commitment duplicates another seat's commitment")]
    DuplicateCommitment,
    /// The seat has no commitment to reveal.
    #[error("seat has not committed")]
    NotCommitted,
    /// The seat revealed already.
    #[error("seat revealed already")]
    AlreadyRevealed,
    /// The reveal does not open the commitment.
    #[error("reveal does not match the commitment")]
    CommitmentMismatch,
    /// The segment is not a honeypot.
    #[error("segment {0} is not a honeypot")]
    NotAHoneypot(u16),
    /// A segment that is not an opened honeypot rests on this one: only honeypots may rest
    /// on a honeypot (opened first), so that a planted error never reaches the trace.
    #[error(
        "segment {0} cannot be a honeypot: segments that are not opened honeypots depend on it"
    )]
    HoneypotHasDependents(u16),
    /// The session has opened as many honeypots as the network allows
    /// ([`crate::Params::max_honeypots`]).
    #[error("the session opened {0} honeypots already, the most a session may")]
    TooManyHoneypots(u16),
    /// It was opened already.
    #[error("already revealed")]
    AlreadyDisclosed,
    /// The session is not decided yet: only a decided segment can be appealed.
    #[error("session {0} is not decided yet: appeal it once its outcome is on record")]
    NotDecided(Hash),
    /// The session's appeal window has closed (it is final, or will be at the end of
    /// this block).
    #[error("the appeal window of session {session} closed at block {closed_at}")]
    AppealWindowClosed {
        /// The session.
        session: Hash,
        /// Last height that accepted an appeal.
        closed_at: u64,
    },
    /// An appeal of the session is being judged; one appeal per session at a time.
    #[error(
        "an appeal of session {session} is being judged in round {round}: appeal again once it is decided"
    )]
    AppealOpen {
        /// The session.
        session: Hash,
        /// The open appeal's round.
        round: u8,
    },
    /// The segment is a revealed honeypot: its truth is the provider's, not a verdict.
    #[error("segment {0} is a honeypot: it has no verdict to appeal")]
    AppealHoneypot(u16),
    /// The segment's seats reached no verdict: there is nothing to overturn.
    #[error("segment {0} was not decided: there is no verdict to appeal")]
    AppealUndecided(u16),
    /// The segment has had as many appeal rounds as the network allows.
    #[error("segment {segment} already had {rounds} appeal rounds, the most a segment may")]
    AppealRoundsExhausted {
        /// The segment.
        segment: u16,
        /// Its appeal rounds so far.
        rounds: u8,
    },
    /// Too few fresh auditors (none who sat on the segment before, not the provider, not
    /// the appellant) are eligible in the segment's tier or any higher tier its session
    /// allows.
    #[error(
        "segment {segment}: {needed} fresh {tier:?} auditors needed, {eligible} eligible (and no higher tier the session allows has enough)"
    )]
    AppealUnstaffed {
        /// The segment.
        segment: u16,
        /// Its tier.
        tier: Tier,
        /// Seats an appeal needs there (`2k + 1`).
        needed: u8,
        /// Fresh auditors eligible there.
        eligible: usize,
    },
    /// A term of the session is below the network's floor for it ([`crate::Floors`]).
    #[error(
        "{term} {asked}{} is below the network's floor: at least {floor} (genesis floors)",
        tier.map(|t| format!(" for the {t:?} tier")).unwrap_or_default()
    )]
    BelowFloor {
        /// Which term (`k`, `commit window`, `reveal window`, `beta` in ppm).
        term: &'static str,
        /// The tier it is a floor of, if per tier.
        tier: Option<Tier>,
        /// What the session asked for.
        asked: u64,
        /// The floor.
        floor: u64,
    },
    /// A required domain whose declaring auditors in a tier the session routes to hold
    /// less draw stake than the network's floor (the provider's own excluded): a domain
    /// only a few accounts declare would let whoever holds them fill every draw. The floor
    /// is the larger of `floors.min_domain_stake` and `floors.min_domain_share` of the
    /// tier's draw stake ([`crate::domain_floor`]).
    #[error(
        "domain {domain:?} is required, but the {tier:?} auditors declaring it (other than the provider) hold {stake} of stake: the pool must hold at least {floor} (the larger of the genesis floors.min_domain_stake and floors.min_domain_share of the tier's stake)"
    )]
    DomainPoolTooSmall {
        /// The domain.
        domain: String,
        /// The tier.
        tier: Tier,
        /// Bonded stake of the eligible auditors of that tier declaring it.
        stake: Amount,
        /// The floor ([`crate::domain_floor`]).
        floor: Amount,
    },
    /// A tier the session routes segments to has fewer eligible auditors (registered,
    /// active, not flagged, not exiting, not paused, bonded at least the tier minimum, other than the
    /// provider, and declaring the domain when it is required) than the seats the draw
    /// fills on each of its segments (`k` plus the racing seats): the draw would fail.
    #[error(
        "the {tier:?} tier has {eligible} eligible auditors{}, but each of the session's {tier:?} segments needs {needed} seats (k plus extra seats): ask for fewer seats or route the segments to a staffed tier",
        domain.as_ref().map(|d| format!(" declaring the required domain {d:?}")).unwrap_or_default()
    )]
    TierUnstaffed {
        /// The tier.
        tier: Tier,
        /// Seats each of its segments needs in round 0.
        needed: u16,
        /// Auditors eligible for them.
        eligible: usize,
        /// The required domain the count is restricted to, if any.
        domain: Option<String>,
    },
    /// The session asks for racing seats (`extra_seats`) in a tier where a verdict all its
    /// first round's `k + extra_seats` seats reach could not be appealed: an appeal draws
    /// `max(2k + 1, 2 held_by + 1)` fresh seats ([`crate::seats_of_an_appeal`]) from the
    /// auditors who never sat on the segment (other than the provider), in its tier or a
    /// higher one the terms allow, and too few are left in any of them. A provider would
    /// otherwise buy a verdict nobody can appeal by asking for seats. Fewer racing seats
    /// (`most` at most; 0: none) are accepted.
    #[error(
        "{extra_seats} racing seats would make a verdict on the session's {tier:?} segments unappealable: an appeal of a verdict all k + {extra_seats} seats reached needs {needed} fresh {tier:?} auditors and {eligible} would be left (nor does a higher tier the session allows have enough): ask for fewer racing seats (at most {most} on this network now)"
    )]
    RacingSeatsUnappealable {
        /// The tier the session routes the segments to.
        tier: Tier,
        /// Racing seats asked for.
        extra_seats: u8,
        /// Auditors of the tier eligible for the appeal (not the provider, not seated).
        eligible: usize,
        /// Fresh seats the appeal needs there.
        needed: u8,
        /// The most racing seats a session may ask for in this tier now (0: none).
        most: u8,
    },
    /// A segment whose seats would see more segments than the session's exposure budget
    /// allows one account: no auditor could ever take a seat on it.
    #[error(
        "segment {segment}: a seat on it sees {sees} segments of the trace, above the session's exposure cap of {cap}: raise max_exposure or give the segment fewer premises"
    )]
    ExposureUnmeetable {
        /// Segment index.
        segment: usize,
        /// Segments a seat on it reads (itself, its premises, givens and OPERATIONs).
        sees: usize,
        /// The most segments one account may read ([`trust_protocol::tx::SessionTerms::exposure_cap`]).
        cap: usize,
    },
    /// A segment's weight is not the weight the session's terms give its tier.
    #[error(
        "segment {index}: weight {weight}, but the terms give {tier:?} segments weight {expected}"
    )]
    WeightNotTierWeight {
        /// Segment index (session segments first, then left-out ones).
        index: usize,
        /// Its weight.
        weight: u32,
        /// Its tier.
        tier: Tier,
        /// The terms' weight for that tier.
        expected: u32,
    },
    /// The openings are not the honeypot set the session committed to.
    #[error("the openings are not the honeypot set committed when the session opened")]
    HoneypotSetMismatch,
    /// Honeypots are opened all at once ([`trust_protocol::tx::Call::RevealHoneypots`]).
    #[error("honeypots are opened as one set with RevealHoneypots, never one by one")]
    HoneypotSetRequired,
    /// A segment of the committed set cannot be a honeypot.
    #[error("segment {segment} cannot be a honeypot: {why}")]
    HoneypotNotAllowed {
        /// The segment.
        segment: u16,
        /// Why not.
        why: &'static str,
    },
    /// The mapping is opened after the honeypot set.
    #[error("open the honeypot set (RevealHoneypots, empty if none) before the mapping")]
    HoneypotsNotOpened,
    /// The account already backs the appeal of this segment waiting for the next round.
    #[error("segment {0}: this account already backs its appeal for the next round")]
    AppealAlreadyFiled(u16),
    /// The seat already proved a key of this round does not open.
    #[error("the seat already proved a key of this round does not open")]
    BadKeyAlreadyProven,
    /// The keys a bad-key report carries are not the ones on record for the seat (the
    /// first of each it needs that landed in time, in delivery order).
    #[error(
        "the reported keys are not the keys on record for this seat (those delivered in time, in order)"
    )]
    KeysNotOnRecord,
    /// The report of a key that does not open does not hold.
    #[error("the report of a key that does not open does not hold: {0}")]
    BadKeyNotProven(#[source] BadKeyError),
    /// An arithmetic limit was hit (amounts near `u64::MAX`).
    #[error("amount overflow")]
    Overflow,
    /// A pause or resume the auditor asked for earlier has not taken effect yet.
    #[error(
        "this auditor's earlier {} takes effect at block {at}; ask again after it",
        if *paused { "pause" } else { "resume" }
    )]
    PausePending {
        /// Whether the pending change pauses (true) or resumes.
        paused: bool,
        /// The height it takes effect at.
        at: u64,
    },
    /// `Pause` from an auditor that is paused already, or `Resume` from one that is not.
    #[error(
        "the auditor is {} already",
        if *paused { "paused" } else { "drawn (not paused)" }
    )]
    PauseUnchanged {
        /// What it asked for, and already is.
        paused: bool,
    },
    /// Expertise the auditor declared earlier has not taken effect yet.
    #[error(
        "this auditor's earlier expertise declaration takes effect at block {0}; declare again after it"
    )]
    ExpertisePending(u64),
}

/// A fraction in ppm as a decimal of up to six places (`666666` reads `0.666666`).
fn decimal(p: Ppm) -> String {
    let s = format!("{}.{:06}", p.0 / 1_000_000, p.0 % 1_000_000);
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
