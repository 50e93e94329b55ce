//! What the contract tells the world: every state change a user, provider or auditor may
//! need to react to is an [`Event`].

use serde::{Deserialize, Serialize};
use trust_protocol::{AccountId, Hash, Vote, seal::SealedKey, tx::Tier, units::Amount};

use crate::state::{LocalVerdict, SegmentVerdict, SlashReason, TraceVerdict};

/// A contract event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Event {
    /// Tokens moved.
    Transferred {
        /// Sender.
        from: AccountId,
        /// Recipient.
        to: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// An auditor's pending bonds and unbonds count in draws from this block on.
    DrawStakeChanged {
        /// Account.
        account: AccountId,
        /// Its stake that counts in draws now.
        draw_stake: Amount,
    },
    /// An auditor entry with no stake, duties or pending change left the state; its
    /// record stays in its account ([`crate::Account::past`]).
    AuditorRetired {
        /// Account.
        account: AccountId,
    },
    /// An auditor registered.
    AuditorRegistered {
        /// Account.
        account: AccountId,
        /// Tier.
        tier: Tier,
    },
    /// Stake bonded.
    Bonded {
        /// Account.
        account: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// Unbonding started.
    UnbondStarted {
        /// Account.
        account: AccountId,
        /// Amount.
        amount: Amount,
        /// Withdrawable from this height.
        release_at: u64,
    },
    /// Unbonded stake returned to the balance.
    Withdrawn {
        /// Account.
        account: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// A session was opened and its fee escrowed.
    SessionOpened {
        /// Session.
        session: Hash,
        /// Provider.
        provider: AccountId,
        /// Number of segments.
        segments: u16,
    },
    /// A session could not run; its fee was refunded.
    SessionFailed {
        /// Session.
        session: Hash,
        /// Why.
        reason: String,
    },
    /// A session's round-0 draw waits: the seats of `tier` being judged now (`judging`)
    /// and the session's would exceed the tier's `capacity` ([`crate::admission`]). At
    /// most one per block: the first session that waits (the later ones wait behind it).
    SessionDeferred {
        /// Session.
        session: Hash,
        /// The tier at capacity.
        tier: Tier,
        /// Its seats in a commit window now.
        judging: u64,
        /// Its capacity.
        capacity: u64,
    },
    /// A seat was drawn.
    SeatAssigned {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The auditor.
        seat: AccountId,
        /// Round (1 after an escalation).
        round: u8,
        /// Tier.
        tier: Tier,
    },
    /// The provider delivered a sealed segment key to a seat.
    KeyDelivered {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
        /// The sealed key.
        sealed: SealedKey,
    },
    /// A seat committed.
    Committed {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
    },
    /// The commit window of a round closed; reveals are open until `reveal_until`.
    CommitWindowClosed {
        /// Session.
        session: Hash,
        /// Round.
        round: u8,
        /// Last height accepting reveals.
        reveal_until: u64,
    },
    /// A seat revealed.
    Revealed {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
        /// Its vote.
        vote: Vote,
        /// The reason revealed with it.
        reason: String,
        /// Whether it was among the first `k` (counted).
        counted: bool,
    },
    /// The reveal window of a round closed.
    RevealWindowClosed {
        /// Session.
        session: Hash,
        /// Round.
        round: u8,
    },
    /// An undecided segment went to a second round.
    SegmentEscalated {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The tier of the new round.
        tier: Tier,
    },
    /// The provider opened the segment → trace mapping.
    MappingRevealed {
        /// Session.
        session: Hash,
        /// The mapping document hash.
        mapping: Hash,
    },
    /// The provider opened a honeypot.
    HoneypotRevealed {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// Its known verdict.
        verdict: Vote,
    },
    /// A revealed honeypot's seats contradicted its truth by a clear majority: they were
    /// scored as for any segment and one honeypot bond of the provider burned.
    HoneypotDisputed {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// Bond burned.
        burned: Amount,
    },
    /// The provider did not deliver a seat its keys in time: the seat is not slashed and
    /// is paid from the provider's escrow.
    SeatStarved {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
        /// Paid to it.
        paid: Amount,
    },
    /// At least the round's quorum of a segment's seats abstained because the segment's
    /// own payload cannot be judged within the network's published limits: this seat is
    /// paid one reward from the provider's escrow, as a starved seat.
    PayloadAbstentionPaid {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
        /// Paid to it.
        paid: Amount,
    },
    /// A segment's final verdict.
    SegmentDecided {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// Verdict.
        verdict: SegmentVerdict,
    },
    /// The trace verdict.
    TraceDecided {
        /// Session.
        session: Hash,
        /// Verdict.
        verdict: TraceVerdict,
        /// Passing weight.
        passing_weight: u64,
        /// Total weight.
        total_weight: u64,
    },
    /// A seat was paid for an agreeing vote.
    Rewarded {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// Stake was slashed (and burned).
    Slashed {
        /// Session.
        session: Hash,
        /// The auditor.
        seat: AccountId,
        /// Amount.
        amount: Amount,
        /// Why.
        reason: SlashReason,
    },
    /// An auditor can no longer be drawn.
    AuditorDeactivated {
        /// The auditor.
        account: AccountId,
        /// Why.
        reason: String,
    },
    /// Unused fee returned to the provider.
    Refunded {
        /// Session.
        session: Hash,
        /// Provider.
        provider: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// An auditor is leaving the network (`Call::Exit`): never drawn again; its bonded
    /// stake unbonds (an `UnbondStarted` follows when it had any).
    AuditorExiting {
        /// Account.
        account: AccountId,
    },
    /// An appeal was opened: the bond is escrowed and fresh seats are drawn at the end of
    /// the next block (`SeatAssigned` events of `round`).
    AppealOpened {
        /// Session.
        session: Hash,
        /// Who appealed.
        appellant: AccountId,
        /// The segments appealed.
        segments: Vec<u16>,
        /// The round its seats vote in.
        round: u8,
        /// Bond escrowed.
        bond: Amount,
    },
    /// An appeal could not be staffed when its seats were drawn (auditors left in
    /// between): its bond went back to the appellant, the session is appealable again.
    AppealCancelled {
        /// Session.
        session: Hash,
        /// Who appealed.
        appellant: AccountId,
        /// Bond returned.
        refunded: Amount,
        /// Why.
        reason: String,
    },
    /// An appeal round decided one appealed segment.
    AppealDecided {
        /// Session.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The appeal's round.
        round: u8,
        /// The segment's own verdict before the round.
        previous: LocalVerdict,
        /// The appeal seats' verdict (`Undecided`: the previous one stands).
        verdict: LocalVerdict,
        /// Whether the verdict went to the other side of Valid / not Valid.
        overturned: bool,
        /// The trace verdict after the round.
        trace: TraceVerdict,
    },
    /// A session's appeal window passed with no appeal open: its outcome is final.
    SessionFinal {
        /// Session.
        session: Hash,
    },
    /// A final outcome left the contract state, [`crate::Params::outcome_retention`]
    /// blocks after it became final: it lives on in the blocks, and its proof is anchored
    /// at `final_at`, the block it became final in.
    OutcomeRetired {
        /// Session.
        session: Hash,
        /// The block it became final in.
        final_at: u64,
    },
    /// One entry of a batch of votes (`Call::Commits`, `Call::Reveals`) was refused; the
    /// batch's other entries applied.
    VoteRefused {
        /// Session.
        session: Hash,
        /// The entry's segment.
        segment: u16,
        /// The seat that sent it.
        seat: AccountId,
        /// Why, as the contract refuses the single call.
        reason: String,
    },
    /// The provider did not open its committed honeypot set before the tally: what was
    /// left of its honeypot bond burned.
    HoneypotsForfeited {
        /// Session.
        session: Hash,
        /// Bond burned.
        burned: Amount,
    },
    /// An auditor declared new expertise domains, counting from height `at`.
    ExpertiseDeclared {
        /// The auditor.
        account: AccountId,
        /// The domains.
        expertise: Vec<String>,
        /// The first height whose draws see them.
        at: u64,
    },
    /// Declared expertise took effect at the start of this block.
    ExpertiseChanged {
        /// The auditor.
        account: AccountId,
        /// Its domains now.
        expertise: Vec<String>,
    },
    /// An appeal was filed while another round of the session was being judged: its bond
    /// is escrowed and it opens when the rounds before it end.
    AppealQueued {
        /// Session.
        session: Hash,
        /// Who appealed.
        appellant: AccountId,
        /// Segments appealed.
        segments: Vec<u16>,
        /// Segments waiting for the next round before this filing (a filing of a segment
        /// already waiting joins it).
        position: u16,
        /// Bond escrowed.
        bond: Amount,
    },
    /// An appeal decided a segment the way a seat had judged it, so the slash that seat
    /// took for that judgement (a wrong vote, or incoherence after an earlier overturn)
    /// is given back to its stake.
    SlashRestored {
        /// Session.
        session: Hash,
        /// Segment.
        segment: u16,
        /// The round the seat judged in.
        round: u8,
        /// The auditor.
        seat: AccountId,
        /// Amount given back.
        amount: Amount,
        /// Why it had been slashed.
        reason: SlashReason,
    },
    /// A seat proved that a key the provider sealed to it does not open: it counts as
    /// starved by the provider (never slashed, paid from the provider's escrow).
    BadKeyProven {
        /// Session.
        session: Hash,
        /// The seat's segment index.
        segment: u16,
        /// The seat.
        seat: AccountId,
    },
    /// An auditor asked to pause (`paused`) or resume, counting from height `at`.
    PauseAsked {
        /// The auditor.
        account: AccountId,
        /// Paused from `at` (true) or drawn again from `at` (false).
        paused: bool,
        /// The first height whose draws see the change.
        at: u64,
    },
    /// A pause or resume took effect at the start of this block.
    PauseChanged {
        /// The auditor.
        account: AccountId,
        /// Whether it is paused now.
        paused: bool,
    },
}

impl Event {
    /// A drawn seat as `(session, segment, seat, round)`, if this is a `SeatAssigned`.
    pub fn seat_assigned(&self) -> Option<(Hash, u16, AccountId, u8)> {
        match self {
            Event::SeatAssigned {
                session,
                segment,
                seat,
                round,
                ..
            } => Some((*session, *segment, *seat, *round)),
            _ => None,
        }
    }
}
