//! The contract's state: accounts, auditors, live sessions and decided outcomes.
//!
//! Everything is in `BTreeMap`s and integers so that the canonical encoding, and so the
//! state root, is the same on every node.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trust_protocol::{
    AccountId, Commitment, Hash, SealingPublicKey, Vote,
    tx::{Difficulty, SegmentEntry, SessionManifest, Tier},
    units::{Amount, Ppm},
};

use crate::params::Params;

/// One canonical encoding config for the state: the protocol's, without the message limit
/// (a state grows with the network; it is hashed and snapshotted, never read from peers).
pub(crate) const STATE_CONFIG: bincode::config::Configuration<
    bincode::config::LittleEndian,
    bincode::config::Fixint,
> = bincode::config::standard()
    .with_little_endian()
    .with_fixed_int_encoding();

/// A pending unbonding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Unbonding {
    /// Height from which it can be withdrawn.
    pub release_at: u64,
    /// Amount.
    pub amount: Amount,
}

/// Most unbondings pending at once per account.
pub const MAX_UNBONDINGS: usize = 16;

/// An account.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Account {
    /// The next nonce this account must use.
    pub nonce: u64,
    /// Liquid balance.
    pub balance: Amount,
    /// Bonded stake (seat eligibility, voting power, slashable).
    pub stake: Amount,
    /// Stake on its way out.
    pub unbonding: Vec<Unbonding>,
    /// Voting power as a validator: the bonded stake, except that it falls at most
    /// [`crate::Params::max_power_cut`] of itself per block (it rises at once), so that a
    /// burst of slashes cannot strip a validator of its power in one block.
    #[serde(default)]
    pub power: Amount,
    /// Fees this account has paid out to seats as a provider, over all its sessions: what
    /// makes its honeypots count towards another auditor's rubber-stamp record
    /// ([`crate::RubberStampRule::min_provider_fees`]).
    #[serde(default)]
    pub fees_paid: Amount,
    /// The record of the auditor entry this account once had and that left the state
    /// ([`Auditor::retire_at`]); `None` for an account that never had one, or has one now.
    #[serde(default)]
    pub past: Option<PastAuditor>,
}

/// Honeypot statistics of one auditor, by difficulty tier (paper §0.0.5.2).
///
/// An abstention on a known error is neither a catch nor a miss: it counts in
/// `errors_seen` (the sample size, so a seat cannot keep its record under the rule's
/// minimum by abstaining) and in `errors_abstained`, and the approval rates are taken over
/// the known errors it *judged* (seen minus abstained), so abstaining never dilutes the
/// rate of a seat that approves what it does judge. Counting an abstention as a miss
/// would let a provider that withholds a honeypot's ciphertext (a seat that cannot read
/// abstains) make honest seats look like rubber-stampers.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoneypotStats {
    /// Known-error honeypots voted on (abstentions included), per difficulty.
    pub errors_seen: [u32; 3],
    /// Of those, how many it approved (voted Valid), per difficulty.
    pub errors_approved: [u32; 3],
    /// Of those, how many it abstained on, per difficulty.
    pub errors_abstained: [u32; 3],
    /// Distinct providers whose known errors it approved where other seats' judgements
    /// backed the provider's truth (`tally::recorded_on_evidence`), and that had paid
    /// fees; at most [`crate::params::MAX_MIN_PROVIDERS`] (enough for the rule; bounded).
    pub miss_providers: Vec<AccountId>,
    /// Known-correct honeypots judged.
    pub correct_seen: u32,
    /// Of those, how many it approved.
    pub correct_approved: u32,
}

impl HoneypotStats {
    /// Approval rate of the known errors it judged at a difficulty, in ppm (`None`
    /// before any judged sample).
    pub fn error_approval(&self, d: Difficulty) -> Option<Ppm> {
        let i = d.index();
        let seen = *self.errors_seen.get(i)?;
        let abstained = *self.errors_abstained.get(i)?;
        let approved = *self.errors_approved.get(i)?;
        ratio_ppm(approved, seen.saturating_sub(abstained))
    }

    /// Approval rate of the known errors it judged, over all difficulties.
    pub fn total_error_approval(&self) -> Option<Ppm> {
        let sum = |x: &[u32; 3]| x.iter().fold(0u32, |a, b| a.saturating_add(*b));
        let judged = sum(&self.errors_seen).saturating_sub(sum(&self.errors_abstained));
        ratio_ppm(sum(&self.errors_approved), judged)
    }

    /// Known-error honeypots voted on, abstentions included (the rule's sample size).
    pub fn errors_total(&self) -> u32 {
        self.errors_seen
            .iter()
            .fold(0u32, |a, b| a.saturating_add(*b))
    }
}

fn ratio_ppm(num: u32, den: u32) -> Option<Ppm> {
    if den == 0 {
        return None;
    }
    let r = u64::from(num)
        .saturating_mul(1_000_000)
        .checked_div(u64::from(den))?;
    Some(Ppm(u32::try_from(r).unwrap_or(u32::MAX)))
}

/// A registered auditor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Auditor {
    /// Tier it serves.
    pub tier: Tier,
    /// Expertise domains.
    pub expertise: Vec<String>,
    /// Key that segment keys are sealed to.
    pub sealing_key: SealingPublicKey,
    /// EMA reputation in ppm.
    pub reputation: Ppm,
    /// Eligible for seats (false after its stake fell below the minimum or it was flagged).
    pub active: bool,
    /// Total rewards received.
    pub earned: Amount,
    /// Total stake slashed.
    pub slashed: Amount,
    /// Counted votes that agreed with the verdict.
    pub agreed: u64,
    /// Scored votes that disagreed, or seats that never committed or revealed.
    pub disagreed: u64,
    /// Votes cast (revealed) in total, and how many of them were Valid.
    pub votes: u64,
    /// Revealed Valid votes.
    pub approvals: u64,
    /// Revealed abstentions (counted in `votes`): the seat was present but could not
    /// judge. Public, so a provider can see how often an auditor abstains.
    pub abstentions: u64,
    /// Honeypot record.
    pub honeypots: HoneypotStats,
    /// Flagged as a rubber-stamper.
    pub flagged: bool,
    /// Leaving the network (`Call::Exit`): all its stake was unbonded, it is never drawn
    /// again and bonding does not re-admit it. The seats it already holds stay its duty (its
    /// unbonding stake stays slashable). Its entry stays until it retires
    /// ([`Auditor::retire_at`]); then [`Account::past`] keeps the exit, so the account can
    /// never register or bond again (a new account can). An exit leaves the draws at once,
    /// unlike a pause or an unbond.
    pub exiting: bool,
    /// Expertise declared with `DeclareExpertise`, waiting to replace `expertise` at the
    /// height it names (the network's `expertise_delay` after the declaration).
    #[serde(default)]
    pub pending_expertise: Option<PendingExpertise>,
    /// Paused (`Call::Pause`): not drawn for new seats, its stake in no pool. The seats it
    /// holds stay its duty and its stake stays slashable for them.
    #[serde(default)]
    pub paused: bool,
    /// A pause or resume asked for that does not count yet.
    #[serde(default)]
    pub pending_pause: Option<PendingPause>,
    /// The bonded stake that counts in draws (eligibility, weight, a domain's pool, the
    /// network's capacity): the account's stake, except that what a `Bond` adds joins it
    /// only at the height its [`PendingStake`] names, and what an `Unbond` takes leaves it
    /// only then (that stake stays at risk meanwhile, in the unbonding). A slash takes
    /// from it at once. Equal to the stake whenever nothing is pending.
    #[serde(default)]
    pub draw_stake: Amount,
    /// Stake changes that do not count in draws yet, one entry per height at which they
    /// do (at most [`MAX_PENDING_STAKE`]), in height order.
    #[serde(default)]
    pub pending_stake: Vec<PendingStake>,
    /// Height at whose start the entry is checked for removal: set when its stake reaches
    /// zero (an exit, or everything unbonded). Removed then if it still has no stake,
    /// nothing pending, no seat in a session not final and nothing left unbonding but
    /// what has freed (paid to its balance); its record stays behind in
    /// [`Account::past`].
    #[serde(default)]
    pub retire_at: Option<u64>,
}

/// Most [`PendingStake`] entries per auditor: changes pending for one height share an
/// entry, and no change waits longer than the network's `expertise_delay`, so there are
/// at most that many; past this bound a change joins the latest entry (it then counts at
/// that entry's height or later, never sooner).
pub const MAX_PENDING_STAKE: usize = 16;

/// Bonds and unbonds of an auditor that count in draws from one height on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingStake {
    /// The first height at whose start they count.
    pub at: u64,
    /// Bonded: joins the draw stake then.
    pub bonded: Amount,
    /// Unbonded: leaves the draw stake then.
    pub unbonded: Amount,
}

/// What an auditor entry leaves behind in its account when it is removed (see
/// [`Auditor::retire_at`]): enough that registering again never starts from a better
/// record than the one it left, nor undoes a flag or an exit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PastAuditor {
    /// Its reputation when it left: a new registration of the account starts from the
    /// lower of this and the network's initial reputation.
    pub reputation: Ppm,
    /// It was flagged as a rubber-stamper: the account can never register again.
    pub flagged: bool,
    /// It exited (`Call::Exit`): the account can never register or bond again.
    pub exited: bool,
}

/// A pause or resume an auditor asked for that does not count yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingPause {
    /// The first height at whose start it counts.
    pub at: u64,
    /// Paused from then (true) or drawn again (false).
    pub paused: bool,
}

/// Expertise an auditor declared that does not count yet.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingExpertise {
    /// The first height at whose start it counts.
    pub at: u64,
    /// The domains, sorted and without repeats.
    pub expertise: Vec<String>,
}

/// One seat on one segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seat {
    /// The auditor.
    pub account: AccountId,
    /// Voting round: 0, 1 after an escalation, `2 + a` for the session's appeal `a`
    /// ([`crate::APPEAL_ROUND0`]).
    pub round: u8,
    /// Its commitment, once committed.
    pub commitment: Option<Commitment>,
    /// Its vote, once revealed.
    pub vote: Option<Vote>,
    /// The reason revealed with the vote (bound into its commitment), once revealed.
    pub reason: Option<String>,
    /// What this seat lost to a slash for its judgement here (a wrong vote, or incoherence
    /// after an overturn): given back if a later appeal decides the segment its way.
    #[serde(default)]
    pub slash: Option<SeatSlash>,
    /// Whether its judgement (a revealed vote that is not an abstention) was among the
    /// first `k` of its round (auditor racing): only these are paid. Every judgement of
    /// the round counts towards the segment's verdict, whatever its order.
    pub counted: bool,
    /// Which keys the provider delivered to it in time (in its round's commit window, at
    /// least one block before the window closes): bit 0 its own segment's key, bit
    /// `j + 1` the key of the segment's `depends_on[j]`. See [`Seat::keyed`].
    pub keys: u32,
    /// The sealed keys behind `keys`, as a running digest
    /// ([`trust_protocol::badkey::record_key`] from [`Hash::ZERO`]): for each bit, the key
    /// that set it, in delivery order. A seat's report of a key that does not open must
    /// carry exactly these keys, so the contract checks what it delivered without keeping
    /// every sealed key.
    #[serde(default)]
    pub key_record: Hash,
    /// The seat proved that a key on record for it does not open
    /// ([`trust_protocol::tx::Call::ReportBadKey`]): it counts as not keyed, starved by the
    /// provider.
    #[serde(default)]
    pub bad_key: bool,
}

/// Why stake was slashed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum SlashReason {
    /// A counted vote disagreed with the verdict and the slash draw hit.
    #[serde(alias = "WrongVote")]
    WrongVote,
    /// The seat never committed, or committed and never revealed, and the draw hit.
    #[serde(alias = "NoShow")]
    NoShow,
    /// Flagged as a rubber-stamper by its honeypot record.
    #[serde(alias = "RubberStamp")]
    RubberStamp,
    /// Voted with the majority of a round whose verdict an appeal overturned: slashed one
    /// penalty, deterministically (no draw).
    #[serde(alias = "Incoherent")]
    Incoherent,
}

/// A slash a seat took for its judgement of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatSlash {
    /// Why.
    pub reason: SlashReason,
    /// How much stake it lost (burned).
    pub amount: Amount,
}

impl Seat {
    /// Whether the provider delivered this seat every key it needs (its segment's and its
    /// premises') in time, each one that opens. A seat that was not is *starved*: it is
    /// never slashed as a no-show, and the provider pays it (see the tally). A key that
    /// does not open, proven so ([`Seat::bad_key`]), is no key.
    pub fn keyed(&self, deps: usize) -> bool {
        let want = 1u32
            .checked_shl(u32::try_from(deps.saturating_add(1)).unwrap_or(u32::MAX))
            .map_or(u32::MAX, |b| b.saturating_sub(1));
        !self.bad_key && self.keys & want == want
    }
}

/// A segment's own verdict from its seats' votes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum LocalVerdict {
    /// At least `q` counted votes Valid.
    #[serde(alias = "Valid")]
    Valid,
    /// At least `q` counted votes not Valid, more Invalid than Ungrounded.
    #[serde(alias = "Invalid")]
    Invalid,
    /// At least `q` counted votes not Valid, Ungrounded at least as many as Invalid.
    #[serde(alias = "Ungrounded")]
    Ungrounded,
    /// Neither side reached `q`.
    #[serde(alias = "Undecided")]
    Undecided,
}

impl LocalVerdict {
    /// The vote this verdict scores seats against; `None` when undecided.
    pub fn as_vote(self) -> Option<Vote> {
        match self {
            LocalVerdict::Valid => Some(Vote::Valid),
            LocalVerdict::Invalid => Some(Vote::Invalid),
            LocalVerdict::Ungrounded => Some(Vote::Ungrounded),
            LocalVerdict::Undecided => None,
        }
    }
}

/// A segment of a live session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentState {
    /// The manifest entry.
    pub entry: SegmentEntry,
    /// The tier auditing it now (differs from the entry's after a tier escalation).
    pub tier: Tier,
    /// Seats whose first `k` reveals count in the current round.
    pub k: u8,
    /// Seats of both rounds.
    pub seats: Vec<Seat>,
    /// Verdict of round 0, and of round 1 if it was escalated.
    pub rounds: Vec<LocalVerdict>,
    /// The honeypot truth, once revealed.
    pub honeypot: Option<(Vote, Difficulty)>,
}

impl SegmentState {
    /// Every revealed vote of both rounds, with its reason, in seat order (what the
    /// outcome records, and what a live session shows so far).
    pub fn votes_cast(&self) -> Vec<CastVote> {
        self.seats
            .iter()
            .filter_map(|x| {
                x.vote.map(|vote| CastVote {
                    seat: x.account,
                    round: x.round,
                    vote,
                    reason: x.reason.clone().unwrap_or_default(),
                    counted: x.counted,
                })
            })
            .collect()
    }
}

/// Where a session is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// Opened; seats are drawn at the end of the next block, seeded by its hash.
    Assigning,
    /// Seats of `round` may commit up to and including height `until`.
    Commit {
        /// Round.
        round: u8,
        /// Last height accepting commits.
        until: u64,
    },
    /// Committed seats of `round` may reveal up to and including height `until`.
    Reveal {
        /// Round.
        round: u8,
        /// Last height accepting reveals.
        until: u64,
    },
    /// The provider may open the mapping and honeypots up to and including `until`.
    Disclose {
        /// Last height accepting disclosures.
        until: u64,
    },
}

/// A session being audited.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Session {
    /// Who opened it.
    pub provider: AccountId,
    /// Height of the block that opened it.
    pub opened_at: u64,
    /// Height of the block that drew its round-0 seats (0 until then): later than the
    /// block after `opened_at` when the network was at capacity and the draw waited
    /// ([`crate::Params::seat_capacity`]).
    #[serde(default)]
    pub drawn_at: u64,
    /// Phase.
    pub phase: Phase,
    /// Fee left in escrow.
    pub escrow: Amount,
    /// Honeypot bond left in escrow ([`crate::Params::honeypot_bond`] per honeypot the
    /// session may open).
    pub bond: Amount,
    /// The manifest without its segments (those live in `segments`).
    pub manifest: SessionManifest,
    /// Segments.
    pub segments: Vec<SegmentState>,
    /// Mapping document hash, once opened.
    pub mapping: Option<Hash>,
    /// The appeal being judged, while the session is live again for an appeal round;
    /// `None` otherwise.
    #[serde(default)]
    pub appeal: Option<OpenAppeal>,
    /// Segments appealed while a round of the session was being judged, each once with
    /// everyone who backs its appeal, in the order they were first filed; all of them are
    /// judged together in the next round.
    #[serde(default)]
    pub queued: Vec<QueuedSegment>,
    /// Whether the provider opened its committed honeypot set.
    #[serde(default)]
    pub honeypots_opened: bool,
    /// Stake each account has lost in this session so far, over all its seats and rounds:
    /// at most [`crate::Params::max_session_loss`].
    #[serde(default)]
    pub losses: BTreeMap<AccountId, Amount>,
}

/// Most accounts whose bond backs the appeal of one segment in one round. Later filings
/// of the segment are still accepted (the segment is heard all the same) and escrow no
/// bond: a filing is never refused because others filed first.
pub const MAX_BACKERS: usize = 8;

/// An account backing the appeal of a segment, and the bond it escrowed for it
/// ([`crate::Params::appeal_bond`], or nothing past [`MAX_BACKERS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Backer {
    /// Who filed.
    pub appellant: AccountId,
    /// Its bond for this segment.
    pub bond: Amount,
}

/// A segment appealed while a round of its session was being judged: it waits for the
/// next round, with everyone who filed against it (each once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueuedSegment {
    /// Segment index.
    pub segment: u16,
    /// Whether the verdict appealed was Valid (the filings are against that side; if the
    /// round being judged turns the verdict over, they are refunded, not heard).
    pub against_valid: bool,
    /// Height of the first filing.
    pub filed_at: u64,
    /// Who backs it, in filing order.
    pub backers: Vec<Backer>,
}

impl QueuedSegment {
    /// The bonds it holds in escrow.
    pub fn bond(&self) -> Amount {
        self.backers.iter().fold(0, |t, b| t.saturating_add(b.bond))
    }
}

/// An appeal being judged: who appealed, which segments, and the bond it escrows.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenAppeal {
    /// Who filed first (each segment names its own backers).
    pub appellant: AccountId,
    /// The round its seats vote in (`2 +` the session's earlier appeals).
    pub round: u8,
    /// Height of the block holding the appeal; seats are drawn at the start of a later one.
    pub opened_at: u64,
    /// The bonds held in escrow, over every segment's backers.
    pub bond: Amount,
    /// The segments appealed, in the order they were first filed.
    pub segments: Vec<AppealTarget>,
}

/// One segment of an open appeal, with the verdict it is appealed from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealTarget {
    /// Segment index.
    pub segment: u16,
    /// The segment's own verdict when it was appealed.
    pub previous: LocalVerdict,
    /// The round that decided `previous` (its majority is slashed if it is overturned).
    pub decided_in: u8,
    /// How many judgements of `decided_in` were on the side of `previous`: an appeal
    /// overturns it only with more judgements on the other side.
    #[serde(default)]
    pub held_by: u16,
    /// The tier that decided `previous` (the segment's again if the appeal is undecided).
    pub tier: Tier,
    /// The `k` of the round that decided `previous`.
    pub k: u8,
    /// Who backs this segment's appeal, with their bonds (the first is who filed first).
    #[serde(default)]
    pub backers: Vec<Backer>,
}

/// Final verdict of a segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum SegmentVerdict {
    /// Holds.
    #[serde(alias = "Valid")]
    Valid,
    /// Wrong.
    #[serde(alias = "Invalid")]
    Invalid,
    /// Not supported by its premises.
    #[serde(alias = "Ungrounded")]
    Ungrounded,
    /// Locally fine, but depends on a segment that failed (ARES propagation).
    #[serde(alias = "Propagated")]
    Propagated,
    /// The seats did not reach a quorum, even after escalation (or it was not audited).
    #[serde(alias = "Undecided")]
    Undecided,
}

impl SegmentVerdict {
    /// Whether it counts as passing in the trace quorum.
    pub fn passes(self) -> bool {
        matches!(self, SegmentVerdict::Valid)
    }

    /// Whether a segment depending on this one inherits an error.
    pub fn is_error(self) -> bool {
        matches!(
            self,
            SegmentVerdict::Invalid | SegmentVerdict::Ungrounded | SegmentVerdict::Propagated
        )
    }
}

/// Vote counts of one segment (all rounds).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteCounts {
    /// Valid votes (deciding round): every judgement counts, in any order.
    pub valid: u16,
    /// Invalid votes (deciding round).
    pub invalid: u16,
    /// Ungrounded votes (deciding round).
    pub ungrounded: u16,
    /// Revealed abstentions (deciding round): present; they count in the quorum's size,
    /// not on either side.
    pub abstained: u16,
    /// Judgements revealed after the first `k` of their round (counted towards the
    /// verdict, not paid: auditor racing decides rewards, never the verdict).
    pub late: u16,
    /// Seats that never committed or never revealed although keyed in time.
    pub missing: u16,
    /// Seats of the deciding round that the provider did not key in time and that did not
    /// reveal: they count in the quorum's size, and the provider pays them.
    #[serde(default)]
    pub starved: u16,
}

/// One revealed vote of a segment, with the reason its commitment bound.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CastVote {
    /// The seat that cast it.
    pub seat: AccountId,
    /// Its round: 0, 1 after an escalation, 2 and up for appeal rounds.
    pub round: u8,
    /// The vote.
    pub vote: Vote,
    /// Why, as the seat wrote it (at most `MAX_REASON_BYTES` bytes).
    pub reason: String,
    /// Whether it was among the first `k` judgements of its round (paid if it agrees;
    /// every judgement counts towards the verdict).
    pub counted: bool,
}

/// The outcome of one segment.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentOutcome {
    /// The segment's blinded id, as the manifest gave it: what ties the verdict to the
    /// step of the trace it judged, for whoever holds the trace and the provider's
    /// opening of the mapping (`proof verify --trace`).
    pub id: Hash,
    /// Final verdict.
    pub verdict: SegmentVerdict,
    /// The tier that decided it.
    pub tier: Tier,
    /// Whether it went to a second round.
    pub escalated: bool,
    /// `k` and `q` of the deciding round.
    pub k: u8,
    /// Quorum of the deciding round.
    pub q: u8,
    /// Vote counts.
    pub votes: VoteCounts,
    /// The honeypot truth if this was a revealed honeypot (excluded from the trace).
    pub honeypot: Option<Vote>,
    /// For an OPERATION: the segment whose calculation it checks (session segments
    /// first, then left-out ones); it carries no weight of its own.
    pub supports: Option<u16>,
    /// Whether it is (part of) the trace's conclusion.
    pub conclusion: bool,
    /// Every revealed vote of every round with its reason, in seat order (round 0's seats
    /// as drawn, then round 1's): why the seats judged as they did.
    pub votes_cast: Vec<CastVote>,
}

/// Trace verdict: three-valued, so that segments nobody could judge never count as
/// failures, and a trace never passes on the strength of the few that were judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum TraceVerdict {
    /// Passing weight `W >= beta * sum w`, no error reaches the conclusion, and the
    /// conclusion was judged Valid with everything it rests on.
    #[serde(alias = "Pass")]
    Pass,
    /// An error reaches the conclusion, or `W` plus the undecided weight is still below
    /// `beta * sum w`.
    #[serde(alias = "Fail")]
    Fail,
    /// Neither: too much was left undecided to say.
    #[serde(alias = "Inconclusive")]
    Inconclusive,
}

/// How much of the trace was judged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// Segments whose seats reached a verdict of their own (Valid, Invalid, Ungrounded).
    pub judged: u16,
    /// All segments of the trace: those in the session (honeypots excluded) and those
    /// left out of it.
    pub segments: u16,
    /// Segments left out of the session, per tier (Computer, LLM, Human).
    pub left_out: [u16; 3],
}

/// What became of a segment left out of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOutOutcome {
    /// The tier it was routed to.
    pub tier: Tier,
    /// `Propagated` when a segment it rests on failed; `Invalid` or `Ungrounded` when an
    /// OPERATION of it was; else `Undecided`.
    pub verdict: SegmentVerdict,
    /// For a left-out OPERATION: the segment whose calculation it is.
    pub supports: Option<u16>,
    /// Whether it is (part of) the trace's conclusion.
    pub conclusion: bool,
}

/// The failure bound for the parameters used, from the genesis assumptions
/// (`eps_t`, `rho`): Hoeffding's bound on the probability that a trace whose segments are
/// all correct fails the trace quorum, as `exp(-ln_bound_milli / 1000)`, computed in
/// fixed point so every node stores the same number.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FailureBound {
    /// Expected passing weight under the assumptions, in millionths of a weight unit.
    pub expected_pass_weight_micro: u64,
    /// `-ln(bound) * 1000`, 0 when the expectation is below the threshold (no bound).
    pub hoeffding_neg_ln_milli: u64,
}

/// What a decided session stores.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Outcome {
    /// The provider.
    pub provider: AccountId,
    /// Height at which it was opened.
    pub opened_at: u64,
    /// Height at which its round-0 seats were drawn: more than one block after
    /// `opened_at` when its draw waited for the network's capacity
    /// ([`crate::Params::seat_capacity`]).
    #[serde(default)]
    pub drawn_at: u64,
    /// Height at which it was decided.
    pub decided_at: u64,
    /// Per-segment outcomes, in manifest order.
    pub segments: Vec<SegmentOutcome>,
    /// Segments left out of the session, in manifest order.
    pub left_out: Vec<LeftOutOutcome>,
    /// Trace verdict (honeypots excluded).
    pub trace: TraceVerdict,
    /// Weight of passing segments.
    pub passing_weight: u64,
    /// Weight of undecided segments, left-out ones included.
    pub undecided_weight: u64,
    /// Total weight counted (left-out segments included).
    pub total_weight: u64,
    /// Whether an error (Invalid, Ungrounded, Propagated) reached the conclusion.
    pub error_at_conclusion: bool,
    /// Whether the conclusion was judged Valid (by the tier it was routed to, whose check
    /// covers its claim).
    pub conclusion_judged: bool,
    /// Whether the conclusion and everything it rests on were judged Valid.
    pub conclusion_sound: bool,
    /// How much of the trace was judged.
    pub coverage: Coverage,
    /// Trace quorum used.
    pub beta: Ppm,
    /// Failure bound.
    pub bound: FailureBound,
    /// The opened mapping document hash, if the provider opened it.
    pub mapping: Option<Hash>,
    /// Fee paid out as rewards.
    pub rewards_paid: Amount,
    /// Fee and bond returned to the provider.
    pub refunded: Amount,
    /// Honeypots whose seats contradicted their revealed truth by a clear majority: each
    /// burned one bond, and its seats were scored as for any segment.
    pub disputed_honeypots: u16,
    /// Honeypot bond burned.
    pub bond_burned: Amount,
    /// Whether the provider failed to open its committed honeypot set in time: its whole
    /// honeypot bond burned, and every segment counted as part of the trace.
    #[serde(default)]
    pub honeypots_forfeited: bool,
    /// Seats the provider did not deliver their keys in time (not slashed; paid from the
    /// provider's escrow).
    pub starved_seats: u16,
    /// Paid to starved seats.
    pub starved_paid: Amount,
    /// Seats paid for a payload abstention (`Vote::PayloadAbstain` cast by at least the
    /// quorum of their round): the provider's payload could not be judged within the
    /// network's published limits.
    #[serde(default)]
    pub payload_seats: u16,
    /// Paid to them, from the provider's escrow (then its bond), one reward each.
    #[serde(default)]
    pub payload_paid: Amount,
    /// Appeals: the window, the open appeal, every appeal round, and finality.
    #[serde(default)]
    pub appeals: AppealRecord,
    /// What the provider asked for: seats per tier, racing seats, `tau`, `beta`.
    pub quorum: trust_protocol::tx::QuorumParams,
    /// The rest of the session's terms: windows, exposure budget, tiers, weights.
    pub terms: trust_protocol::tx::SessionTerms,
    /// The expertise domain asked for.
    pub domain: String,
}

/// The appeal history and finality of a decided session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealRecord {
    /// Last height at which an appeal may be opened: the decision (or the last appeal
    /// round's decision) plus [`crate::Params::appeal_window`].
    pub until: u64,
    /// The round of the appeal being judged, if one is open.
    pub open: Option<u8>,
    /// Height at which the session became final (its window passed with no appeal
    /// open); `None` while it may still change.
    pub final_at: Option<u64>,
    /// Every decided appeal round, in order.
    pub rounds: Vec<AppealRound>,
}

/// One decided appeal round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealRound {
    /// The round its seats voted in (2 for the session's first appeal).
    pub round: u8,
    /// Who filed first.
    pub appellant: AccountId,
    /// Everyone whose filing was heard in this round, in filing order.
    #[serde(default)]
    pub appellants: Vec<AccountId>,
    /// Height of the appeal.
    pub opened_at: u64,
    /// Height of its decision.
    pub decided_at: u64,
    /// The bond escrowed.
    pub bond: Amount,
    /// What became of each appealed segment.
    pub segments: Vec<AppealedSegment>,
    /// The trace verdict before the round.
    pub trace_before: TraceVerdict,
    /// The trace verdict after it.
    pub trace_after: TraceVerdict,
}

/// How an appeal round ended for one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum AppealResult {
    /// The appeal seats decided the other side of Valid / not Valid: the verdict is
    /// replaced, the deciding round's majority slashed and the appellant repaid.
    #[serde(alias = "Overturned")]
    Overturned,
    /// The appeal seats decided the same side (the verdict is replaced by theirs, which
    /// may name the other error kind): the bond pays the appeal seats.
    #[serde(alias = "Upheld")]
    Upheld,
    /// The appeal seats reached no quorum: the verdict stands and the bond pays the seats
    /// that judged.
    #[serde(alias = "Undecided")]
    Undecided,
    /// The provider did not key enough appeal seats for a quorum to judge: a Valid
    /// verdict falls to Undecided (a provider cannot keep its verdict by hiding the
    /// segment from its appeal), an error verdict stands; the provider pays the starved
    /// seats, a third party with standing (a seat of the deciding round that did not judge
    /// on the verdict's side) gets its bond back, anyone else's bond pays the provider back
    /// for the seats and burns, and the round does not count against the segment's appeal
    /// rounds.
    #[serde(alias = "Starved")]
    Starved,
}

impl AppealResult {
    /// Whether the round uses up one of the segment's appeal rounds
    /// ([`crate::Params::max_appeal_rounds`]): only an Upheld verdict does. An overturned
    /// verdict may be appealed again (by the side that lost, before a larger panel), and
    /// a round starved of keys or left undecided judged nothing.
    pub fn counts(self) -> bool {
        matches!(self, AppealResult::Upheld)
    }
}

/// One appealed segment of a decided appeal round.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppealedSegment {
    /// Segment index.
    pub segment: u16,
    /// Its own verdict before the round.
    pub previous: LocalVerdict,
    /// The appeal seats' verdict (`Undecided`: the previous verdict stands).
    pub verdict: LocalVerdict,
    /// Overturned, upheld or undecided.
    pub result: AppealResult,
    /// Tier of the appeal seats.
    pub tier: Tier,
    /// Appeal seats (`2k + 1`), all counted.
    pub k: u8,
    /// Quorum of the appeal round.
    pub q: u8,
    /// The round's votes.
    pub votes: VoteCounts,
    /// Slashed from the deciding round's majority (overturned only, once the session is
    /// final and only if the overturn stood: see [`AppealedSegment::pending`]).
    pub slashed: Amount,
    /// Paid to the appeal seats.
    pub paid: Amount,
    /// Paid to the appellant: its bond share back plus the reward (overturned), or the
    /// bond share back when nobody judged.
    pub refunded: Amount,
    /// Burned: bond or slashes nobody was paid.
    pub burned: Amount,
    /// An overturn's incoherence slashes, not yet taken: they fall due when the session
    /// is final, and only if the segment's final verdict is still this round's (a later
    /// round that took the verdict back drops them). `None` once settled, or when the
    /// round slashes nobody (not an overturn, or one short of a keyed quorum).
    #[serde(default)]
    pub pending: Option<PendingIncoherence>,
}

/// The incoherence slashes an overturn owes, settled at finality
/// ([`AppealedSegment::pending`]): the majority of `overturned` (the round whose verdict
/// the overturn replaced) is slashed one penalty each, the bonded `backers` share the
/// appeal reward out of it and the overturning round's agreeing seats the rest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingIncoherence {
    /// The round whose majority answers for the overturned verdict.
    pub overturned: u8,
    /// The backers of the overturn that held a bond (they share the reward).
    pub backers: Vec<AccountId>,
}

impl Outcome {
    /// Where this outcome stands with respect to appeals, as the state that holds it says:
    /// `Final` once its appeal window passed with no appeal open, `Appealing` while an
    /// appeal round runs, `Appealable` until then.
    pub fn finality(&self) -> Finality {
        match (self.appeals.final_at, self.appeals.open) {
            (Some(at), _) => Finality::Final { at },
            (None, Some(round)) => Finality::Appealing { round },
            (None, None) => Finality::Appealable {
                until: self.appeals.until,
            },
        }
    }
}

/// Where a decided session stands with respect to appeals ([`crate::Contract::finality`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Finality {
    /// Final since height `at`: nothing can change it any more.
    Final {
        /// Height at which its appeal window passed.
        at: u64,
    },
    /// Decided; an appeal may be opened up to and including height `until`.
    Appealable {
        /// Last height accepting an appeal.
        until: u64,
    },
    /// An appeal is being judged in `round`.
    Appealing {
        /// The appeal's round.
        round: u8,
    },
}

/// A session that could not run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// Height.
    pub at: u64,
    /// Why.
    pub reason: String,
}

/// An ordered map that shares structure with its copies: a copy costs O(1), and a change
/// to it copies only the path to the entry changed (and that entry), so a block's working
/// copy of the state costs what the block touches, not what the state holds. Iteration is
/// in key order and the encoding is a `BTreeMap`'s, so roots and snapshots are unchanged.
pub type Map<K, V> = imbl::OrdMap<K, V>;

/// The set of [`Map`]'s kind.
pub type Set<T> = imbl::OrdSet<T>;

/// The whole state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// The chain id: the hash of the genesis document of the network this state belongs
    /// to ([`Hash::ZERO`] for a contract built from a bare genesis, as in tests and the
    /// simulator). Every transaction's signature covers it, so one signed for another
    /// network is refused here.
    pub chain: Hash,
    /// Parameters.
    pub params: Params,
    /// Last height applied (0 before the first block).
    pub height: u64,
    /// Accounts.
    pub accounts: Map<AccountId, Account>,
    /// Auditors.
    pub auditors: Map<AccountId, Auditor>,
    /// Live sessions.
    pub sessions: Map<Hash, Session>,
    /// Decided sessions: while they may change (appealable, or an appeal open) and for
    /// [`crate::Params::outcome_retention`] blocks after they became final; then they
    /// leave the state and live on in the blocks that carry them.
    pub outcomes: Map<Hash, Outcome>,
    /// Decided sessions that are not final and have no appeal being judged, kept (with
    /// their seats) until their appeal window passes: an appeal takes one from here back
    /// into `sessions`, the end of its round puts it back.
    #[serde(default)]
    pub appealable: Map<Hash, Session>,
    /// Sessions that failed to run, with the fee refunded, each for
    /// [`crate::Params::failure_retention`] blocks after it failed.
    ///
    /// An id that left this map (or [`State::outcomes`]) is never opened again, so
    /// forgetting it cannot let a session be replayed: a session's id is `Tx::session_id(provider, nonce)` of the
    /// transaction that opened it, an account's nonce only ever rises (by one per
    /// transaction applied) and accounts are never removed, so no later transaction of
    /// that provider carries that nonce again.
    pub failed: Map<Hash, Failure>,
    /// Tokens removed by slashing.
    pub burned: Amount,
    /// Total supply at genesis (constant).
    pub supply: Amount,
    /// Auditors that can be drawn, per tier (Computer, LLM, Human): active, not flagged,
    /// bonded at least the tier minimum. Derived from `accounts` and `auditors` (kept in
    /// step by every change to them, rebuilt on restore), so it is neither encoded nor
    /// committed; draws and a provider's staffing read it instead of scanning every
    /// auditor.
    #[serde(skip)]
    pub eligible: [Set<AccountId>; 3],
    /// The sessions not yet final (live or appealable) in which each account holds a
    /// seat: what holds its stake back from a withdrawal. Derived from `sessions` and
    /// `appealable` (rebuilt on restore), neither encoded nor committed.
    #[serde(skip)]
    pub seated: Map<AccountId, Set<Hash>>,
    /// Auditors whose declared expertise, pause or resume, or pending stake takes effect at
    /// each height, or whose entry is checked for removal then. Derived from the auditors'
    /// `pending_expertise`, `pending_pause`, `pending_stake` and `retire_at` (rebuilt on
    /// restore).
    #[serde(skip)]
    pub standing_due: Map<u64, Set<AccountId>>,
    /// Accounts whose voting power is above their stake (falling towards it block by
    /// block), or whose stake changed in the block being applied. Derived (rebuilt on
    /// restore).
    #[serde(skip)]
    pub power_due: Set<AccountId>,
    /// The failures in `failed` by the height at whose end they leave the state (their
    /// `at` plus [`crate::Params::failure_retention`]), so a block drops the due ones
    /// without reading the others. Derived (rebuilt on restore).
    #[serde(skip)]
    pub failed_due: Map<u64, Set<Hash>>,
    /// The final outcomes in `outcomes` by the height at whose end they leave the state
    /// (their `final_at` plus [`crate::Params::outcome_retention`]). Derived (rebuilt on
    /// restore).
    #[serde(skip)]
    pub outcomes_due: Map<u64, Set<Hash>>,
    /// Seats of each tier (Computer, LLM, Human) in a commit window now: the seats of the
    /// current round of every live session in its commit phase. What the round-0 draw's
    /// admission reads ([`crate::Params::seat_capacity`]). Derived from `sessions`
    /// (kept in step by every phase change, rebuilt on restore).
    #[serde(skip)]
    pub judging: [u64; 3],
}

impl State {
    /// The auditors of `tier` that can be drawn now.
    pub fn eligible(&self, tier: Tier) -> &Set<AccountId> {
        let [c, l, h] = &self.eligible;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }
}
