//! The transaction set applied by the audit contract.
//!
//! Every transaction is a [`Tx`] (account nonce + [`Call`]) travelling as
//! `Signed<Tx>` under the [`Domain::TX`] tag. [`Tx::validate`] enforces the size bounds
//! that need no state, so a node can drop an oversized or malformed transaction before
//! it reaches the mempool; everything that needs state (balances, seats, windows) is the
//! contract's to check.
//!
//! Segments inside a session are referred to by their index in the manifest (`u16`); the
//! manifest itself carries only blinded segment ids, so the ledger never reveals which
//! part of which trace a segment is until the provider opens the mapping at tally time.

use serde::{Deserialize, Serialize};

use crate::{
    AccountId, Hash, SealingPublicKey, Signed, SignedMessage,
    badkey::{BadKeyProof, SharedSecret},
    cid::Cid,
    commit::{Commitment, Salt, Vote},
    hdag::AbstractionLevel,
    seal::SealedKey,
    signed::Domain,
    units::{Amount, Ppm},
};
pub use crate::{badkey::DeliveredKey, commit::Difficulty};

/// Most segments in one session.
pub const MAX_SEGMENTS: usize = 1024;
/// Most `depends_on` edges of one segment.
pub const MAX_DEPENDENCIES: usize = 16;
/// Largest segment weight.
pub const MAX_WEIGHT: u32 = 1000;
/// Most expertise domains an auditor declares, and their longest name in bytes.
pub const MAX_EXPERTISE: usize = 8;
/// Longest expertise domain name, in bytes.
pub const MAX_DOMAIN_BYTES: usize = 32;
/// Most sealed keys in one `DeliverKeys`.
pub const MAX_SEALED_KEYS: usize = 4096;
/// Most votes one batched commit or reveal ([`Call::Commits`], [`Call::Reveals`],
/// [`Call::Votes`]) carries. At the longest reason (280 bytes) a full batch of reveals is
/// about 85 KiB, and about 93 KiB with every opening in a session of its own, within
/// [`crate::block::MAX_TX_BYTES`].
pub const MAX_BATCH_VOTES: usize = 256;
/// Most honeypot openings one [`Call::RevealHoneypots`] carries (each is about 40 bytes,
/// so a full batch is about 10 KiB, within [`crate::block::MAX_TX_BYTES`]).
pub const MAX_BATCH_HONEYPOTS: usize = 256;
/// Largest sealed key ciphertext (a 32-byte key plus its 16-byte tag).
pub const MAX_SEALED_KEY_BYTES: usize = 48;
/// Most seats per segment for any tier (k_t + Delta).
pub const MAX_SEATS: u8 = 64;
/// Most segments one [`Call::Appeal`] names.
pub const MAX_APPEAL_SEGMENTS: usize = 64;
/// Most keys a [`Call::ReportBadKey`] carries: the most a seat has on record, its own
/// segment's and one per premise (at most [`MAX_DEPENDENCIES`]). About 1.7 KiB in all.
pub const MAX_REPORT_KEYS: usize = 1 + MAX_DEPENDENCIES;

/// An auditor tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum Tier {
    /// Deterministic checkers.
    #[serde(alias = "Computer")]
    Computer,
    /// Language models.
    #[serde(alias = "Llm")]
    Llm,
    /// People.
    #[serde(alias = "Human")]
    Human,
}

impl Tier {
    /// All tiers in order.
    pub const ALL: [Tier; 3] = [Tier::Computer, Tier::Llm, Tier::Human];
}

impl From<crate::hdag::AuditorType> for Tier {
    fn from(a: crate::hdag::AuditorType) -> Tier {
        match a {
            crate::hdag::AuditorType::Auto => Tier::Computer,
            crate::hdag::AuditorType::Llm => Tier::Llm,
            crate::hdag::AuditorType::Human => Tier::Human,
        }
    }
}

/// Quorum parameters of a session (paper §0.0.3.2).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuorumParams {
    /// Seats whose votes count per segment, per tier (Computer, LLM, Human): `k_t`.
    pub k: [u8; 3],
    /// Extra seats drawn per segment beyond `k_t` (auditor racing): `Delta`.
    pub extra_seats: u8,
    /// Seat quorum `tau`: a segment is decided by `q_t = ceil(tau k_t)` agreeing votes.
    pub tau: Ppm,
    /// Trace quorum `beta`: the trace passes when the weight of passing segments reaches
    /// `beta` of the total weight.
    pub beta: Ppm,
}

impl QuorumParams {
    /// `k_t` for a tier.
    pub fn k(&self, tier: Tier) -> u8 {
        let [c, l, h] = self.k;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }
}

/// What a provider chose for its session beyond the quorum, recorded in the manifest so
/// that every node, `query` and the outcome page show the terms the session ran under.
/// [`SessionTerms::default`] keeps the network's defaults.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTerms {
    /// Blocks each commit window stays open (0: the network's `commit_window`).
    pub commit_window: u16,
    /// Blocks each reveal window stays open (0: the network's `reveal_window`).
    pub reveal_window: u16,
    /// The exposure budget: the largest share of the session's segments any one account
    /// may receive keys for, counting the premises sealed with its seats
    /// (`1_000_000`: no budget beyond "never the whole trace").
    pub max_exposure: Ppm,
    /// Which tiers may judge (Computer, LLM, Human): no seat of a tier left out here is
    /// ever drawn, escalations included.
    pub tiers: [bool; 3],
    /// The weight each tier's segments carry (Computer, LLM, Human): every segment's weight
    /// must be its tier's here, so the trace quorum weighs what the terms say.
    pub tier_weights: [u32; 3],
    /// Whether only auditors declaring the session's `domain` may be drawn (otherwise the
    /// domain only doubles a declaring auditor's chance).
    pub domain_required: bool,
}

impl Default for SessionTerms {
    fn default() -> Self {
        Self {
            commit_window: 0,
            reveal_window: 0,
            max_exposure: Ppm::ONE,
            tiers: [true; 3],
            tier_weights: [1; 3],
            domain_required: false,
        }
    }
}

impl SessionTerms {
    /// Whether `tier` may judge in this session.
    pub fn allows(&self, tier: Tier) -> bool {
        let [c, l, h] = self.tiers;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }

    /// The weight every segment routed to `tier` carries (the contract refuses a manifest
    /// whose segment weights are not these).
    pub fn tier_weight(&self, tier: Tier) -> u32 {
        let [c, l, h] = self.tier_weights;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }

    /// The most segments of a trace of `segments` segments (the session's and the
    /// left-out ones) one account may receive keys or text of:
    /// `floor(max_exposure * segments)`, at least 1.
    pub fn exposure_cap(&self, segments: usize) -> usize {
        let n = u128::try_from(segments).unwrap_or(u128::MAX);
        let cap = n.saturating_mul(u128::from(self.max_exposure.0)) / 1_000_000;
        usize::try_from(cap).unwrap_or(usize::MAX).max(1)
    }
}

/// One segment of a session's manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentEntry {
    /// Blinded segment id: `H(provider salt, segment content)`, revealing nothing.
    pub id: Hash,
    /// Abstraction level.
    pub level: AbstractionLevel,
    /// The tier that audits it.
    pub tier: Tier,
    /// Weight in the trace quorum (1..=[`MAX_WEIGHT`]).
    pub weight: u32,
    /// Indices of earlier segments this one depends on (errors propagate along them).
    /// These are the premises its seats are shown; a premise left out of the session is
    /// bridged to the session segments behind it and named in `rests_on_left_out`.
    pub depends_on: Vec<u16>,
    /// Indices into [`SessionManifest::left_out`] of the left-out segments it rests on
    /// directly: an error reaches it through them, and it is not sound while they are
    /// unjudged.
    pub rests_on_left_out: Vec<u16>,
    /// For an OPERATION (a bare calculation checked on its own): the segment whose claim
    /// holds that calculation, as an index into the session's segments followed by the
    /// left-out ones. Its weight counts towards that segment, never on its own, and an
    /// error in it makes that segment wrong.
    pub supports: Option<u16>,
    /// Where its ciphertext lives.
    pub cid: Cid,
    /// For a honeypot: a commitment `H(verdict, salt)` to its known verdict.
    pub honeypot: Option<Commitment>,
    /// Whether this segment is (part of) the trace's final output: an error that reaches
    /// it fails the trace.
    pub conclusion: bool,
}

impl SegmentEntry {
    /// A STEP of weight 1 routed to `tier`, resting on nothing, not a honeypot and not the
    /// conclusion, whose ciphertext is addressed as `Cid::of(id)`: the plain entry that
    /// tests, benchmarks and the load generator change with struct update syntax.
    pub fn plain(id: Hash, tier: Tier) -> Self {
        SegmentEntry {
            id,
            level: AbstractionLevel::Step,
            tier,
            weight: 1,
            depends_on: Vec::new(),
            rests_on_left_out: Vec::new(),
            supports: None,
            cid: Cid::of(id.as_ref()),
            honeypot: None,
            conclusion: false,
        }
    }
}

/// A segment of the trace that is not audited in this session: its tier has too few
/// auditors on the network. It has no ciphertext and draws no seats, but it keeps its
/// place in the trace verdict: its weight counts as undecided (so a trace cannot pass on
/// the few steps that were judged), an error in a segment it rests on reaches it, and the
/// outcome's coverage names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LeftOut {
    /// The tier it was routed to.
    pub tier: Tier,
    /// Weight in the trace quorum (1..=[`MAX_WEIGHT`]).
    pub weight: u32,
    /// Indices of the session's segments it rests on (through other left-out segments).
    pub depends_on: Vec<u16>,
    /// Indices of the earlier left-out segments it rests on directly.
    pub rests_on_left_out: Vec<u16>,
    /// Whether it is (part of) the trace's final output.
    pub conclusion: bool,
    /// For a left-out OPERATION: the segment whose calculation it is (see
    /// [`SegmentEntry::supports`]).
    pub supports: Option<u16>,
}

/// What a provider submits to open an audit session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionManifest {
    /// The segments, in an order where dependencies come first.
    pub segments: Vec<SegmentEntry>,
    /// Commitment to the segment → trace mapping, opened at tally time.
    pub mapping_commitment: Hash,
    /// Quorum parameters (within the network's genesis limits).
    pub quorum: QuorumParams,
    /// The fee escrowed for rewards.
    pub fee: Amount,
    /// Expertise domain the seats should have (empty: any).
    pub domain: String,
    /// Segments of the trace left out of this session (no seats drawn for them).
    pub left_out: Vec<LeftOut>,
    /// The provider's other choices: windows, exposure budget, tiers, tier weights.
    pub terms: SessionTerms,
    /// Commitment to the set of segments that are honeypots
    /// ([`crate::honeypot_set_commitment`]; the empty set when there is none): fixed before
    /// any vote, opened all at once after voting ([`Call::RevealHoneypots`]).
    pub honeypot_set: Commitment,
}

/// A segment key sealed to one seat.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SeatKey {
    /// Segment index.
    pub segment: u16,
    /// The seat's account.
    pub seat: AccountId,
    /// The sealed segment key.
    pub sealed: SealedKey,
}

/// What a transaction does.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Call {
    /// Send tokens to another account.
    Transfer {
        /// Recipient.
        to: AccountId,
        /// Amount.
        amount: Amount,
    },
    /// Become an auditor of a tier, bonding `stake` from the balance in the same act: a
    /// registration that does not bond at least the tier's minimum is refused, so every
    /// registered auditor has something to lose.
    RegisterAuditor {
        /// The tier.
        tier: Tier,
        /// Expertise domains.
        expertise: Vec<String>,
        /// X25519 key that segment keys are sealed to.
        sealing_key: SealingPublicKey,
        /// Stake bonded with the registration (at least the tier's minimum).
        stake: Amount,
    },
    /// Lock stake.
    Bond {
        /// Amount.
        amount: Amount,
    },
    /// Start unlocking stake (available after the unbonding delay).
    Unbond {
        /// Amount.
        amount: Amount,
    },
    /// Move stake whose unbonding delay has passed back to the balance.
    Withdraw,
    /// Open an audit session.
    OpenSession(SessionManifest),
    /// Deliver sealed segment keys to the drawn seats (provider only), each (segment,
    /// seat) once: a call naming one twice is refused whole.
    DeliverKeys {
        /// Session id.
        session: Hash,
        /// One entry per (segment, seat).
        keys: Vec<SeatKey>,
    },
    /// Commit to a vote.
    Commit {
        /// Session id.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// `commitment(session, segment id, seat, vote, salt, reason)`.
        commitment: Commitment,
    },
    /// Reveal a committed vote.
    Reveal {
        /// Session id.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The vote.
        vote: Vote,
        /// The salt used in the commitment.
        salt: Salt,
        /// Why the seat voted so: UTF-8, at most [`crate::MAX_REASON_BYTES`] bytes, no
        /// control characters but newline and tab. Its hash is bound into the commitment.
        reason: String,
    },
    /// Open the segment → trace mapping commitment (provider, at tally time).
    RevealMapping {
        /// Session id.
        session: Hash,
        /// The committed mapping document's hash.
        mapping: Hash,
        /// The salt of the commitment.
        salt: Salt,
    },
    /// Reveal a honeypot's known verdict after voting.
    RevealHoneypot {
        /// Session id.
        session: Hash,
        /// Segment index.
        segment: u16,
        /// The known verdict.
        verdict: Vote,
        /// How hard the planted error is to see (the paper's three difficulty tiers).
        difficulty: Difficulty,
        /// The salt of the commitment.
        salt: Salt,
    },
    /// Leave the network as an auditor: unbond all bonded stake and never be drawn again
    /// (bonding does not re-admit the account). Seats already held stay its duty, and the
    /// unbonding stake stays slashable until it is withdrawn. Appended last so that the
    /// other calls keep their encodings.
    Exit,
    /// Commit to the votes of several of the sender's seats in one session: one signature
    /// for up to [`MAX_BATCH_VOTES`] commitments. Each entry applies as a [`Call::Commit`]
    /// of its own would; an entry the contract refuses fails alone (an event says why),
    /// and the batch fails only when every entry does. Every entry must name a segment
    /// the sender holds a seat on, in a session not final, or the whole batch is refused.
    /// (Appended after `Exit`, like the next one, so that the other calls keep their
    /// encodings.)
    Commits {
        /// Session id.
        session: Hash,
        /// One per seat, distinct segments.
        entries: Vec<CommitEntry>,
    },
    /// Reveal several committed votes of one session at once, as [`Call::Commits`] commits
    /// them: each entry applies as a [`Call::Reveal`] would, and fails alone.
    Reveals {
        /// Session id.
        session: Hash,
        /// One per seat, distinct segments.
        entries: Vec<RevealEntry>,
    },
    /// Appeal the verdicts of decided segments of a session within its appeal window,
    /// escrowing the network's appeal bond per segment: each appealed segment is judged
    /// again by fresh seats, whose verdict replaces the old one. Any account may appeal.
    Appeal {
        /// Session id.
        session: Hash,
        /// Indices of the segments appealed: distinct, 1..=[`MAX_APPEAL_SEGMENTS`].
        segments: Vec<u16>,
    },
    /// Open the session's whole honeypot set (provider, after voting): the openings must
    /// be exactly the set committed in [`SessionManifest::honeypot_set`], each matching its
    /// segment's verdict commitment, none the conclusion nor a segment the trace rests on.
    /// All or nothing: one bad opening refuses the call. An empty set may be opened as
    /// soon as the votes are bound (the reveal window); a non-empty one in the disclosure
    /// window. A session whose set is not opened in time forfeits its honeypot bond.
    RevealHoneypots {
        /// Session id.
        session: Hash,
        /// One per honeypot, distinct segments, none abstaining: the whole committed set
        /// (empty when the session planted none).
        openings: Vec<HoneypotOpening>,
        /// The salt of the session's [`SessionManifest::honeypot_set`] commitment.
        set_salt: Salt,
    },
    /// Commit and reveal votes of the sender's seats in several sessions at once: one
    /// signature for up to [`MAX_BATCH_VOTES`] entries in all, so that a node seated in
    /// many sessions sends one transaction for what it has ready, not one per session.
    /// Each entry applies as its single [`Call::Commit`] or [`Call::Reveal`] would, in
    /// order (each group's commitments, then its openings); an entry the contract refuses
    /// fails alone (an event says why), and the call fails only when every entry does.
    /// Every entry must name a segment the sender holds a seat on, in a session not final,
    /// or the whole call is refused.
    /// Appended last so that the other calls keep their encodings.
    Votes {
        /// One per session, distinct sessions, none empty.
        groups: Vec<VoteGroup>,
    },
    /// Replace the sender's declared expertise domains (auditor only). The new domains
    /// take effect the network's `expertise_delay` blocks after the block that holds the
    /// call, longer than any draw seed is known in advance, so nobody declares a domain
    /// into a draw it has already seen.
    /// Appended last so that the other calls keep their encodings.
    DeclareExpertise {
        /// The domains, at most [`MAX_EXPERTISE`], each at most [`MAX_DOMAIN_BYTES`] bytes.
        expertise: Vec<String>,
    },
    /// A seat shows that a key the provider sealed to it does not open
    /// ([`crate::badkey`]): the keys on record for its seat on `segment` in the current
    /// round, as delivered, and for the one at `bad` the shared secret with its proof. If
    /// the contract finds the keys are the ones it recorded, the proof verifies against
    /// the seat's registered sealing key, and the key does not open, the seat counts as
    /// starved by the provider: never slashed, counted in the quorum's size, and paid by
    /// the provider. Accepted in the round's commit or reveal window.
    /// Appended last so that the other calls keep their encodings.
    ReportBadKey {
        /// Session id.
        session: Hash,
        /// The seat's segment index.
        segment: u16,
        /// Every key on record for the seat, in delivery order: 1..=[`MAX_REPORT_KEYS`],
        /// distinct segments.
        keys: Vec<DeliveredKey>,
        /// Index into `keys` of the key that does not open.
        bad: u8,
        /// The X25519 shared secret of that key and the seat's sealing key.
        shared: SharedSecret,
        /// The proof that `shared` is the seat's.
        proof: BadKeyProof,
    },
    /// Stop being drawn for new seats, from the network's `expertise_delay` blocks after
    /// the block that holds the call (longer than any draw seed is known in advance, so
    /// nobody leaves a draw it has already seen). Seats already held stay the auditor's
    /// duty and its stake stays slashable for them; while paused its stake counts in no
    /// pool (draws, staffing checks, appeals, capacity). Refused while an earlier pause or
    /// resume is still pending: a change, once asked for, happens, so that nobody can
    /// cancel it after seeing a seed. Appended last so that the other calls keep their
    /// encodings.
    Pause,
    /// Be drawn again, after the same delay as [`Call::Pause`] and under the same rule.
    /// Appended last so that the other calls keep their encodings.
    Resume,
}

/// One session's part of a [`Call::Votes`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct VoteGroup {
    /// Session id.
    pub session: Hash,
    /// Commitments, distinct segments.
    pub commits: Vec<CommitEntry>,
    /// Openings of committed votes, distinct segments.
    pub reveals: Vec<RevealEntry>,
}

/// One opening of a [`Call::RevealHoneypots`]: what a [`Call::RevealHoneypot`] carries
/// besides the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoneypotOpening {
    /// Segment index.
    pub segment: u16,
    /// The known verdict (a judgement, not an abstention).
    pub verdict: Vote,
    /// How hard the planted error is to see.
    pub difficulty: Difficulty,
    /// The salt of the commitment.
    pub salt: Salt,
}

/// One commitment of a [`Call::Commits`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CommitEntry {
    /// Segment index.
    pub segment: u16,
    /// `commitment(session, segment id, seat, vote, salt, reason)`.
    pub commitment: Commitment,
}

/// One opening of a [`Call::Reveals`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevealEntry {
    /// Segment index.
    pub segment: u16,
    /// The vote.
    pub vote: Vote,
    /// The salt used in the commitment.
    pub salt: Salt,
    /// Why the seat voted so (the limits of [`Call::Reveal`]'s reason).
    pub reason: String,
}

impl Call {
    /// The calls a batch stands for, one per entry, in order ([`Call::Commits`] as
    /// [`Call::Commit`]s, [`Call::Reveals`] as [`Call::Reveal`]s, [`Call::RevealHoneypots`]
    /// as [`Call::RevealHoneypot`]s); any other call alone.
    pub fn unbatched(&self) -> Vec<Call> {
        match self {
            Call::Commits { session, entries } => entries
                .iter()
                .map(|e| Call::Commit {
                    session: *session,
                    segment: e.segment,
                    commitment: e.commitment,
                })
                .collect(),
            Call::Reveals { session, entries } => entries
                .iter()
                .map(|e| Call::Reveal {
                    session: *session,
                    segment: e.segment,
                    vote: e.vote,
                    salt: e.salt,
                    reason: e.reason.clone(),
                })
                .collect(),
            Call::RevealHoneypots {
                session, openings, ..
            } => openings
                .iter()
                .map(|o| Call::RevealHoneypot {
                    session: *session,
                    segment: o.segment,
                    verdict: o.verdict,
                    difficulty: o.difficulty,
                    salt: o.salt,
                })
                .collect(),
            Call::Votes { groups } => groups
                .iter()
                .flat_map(|g| {
                    let commits = g.commits.iter().map(|e| Call::Commit {
                        session: g.session,
                        segment: e.segment,
                        commitment: e.commitment,
                    });
                    let reveals = g.reveals.iter().map(|e| Call::Reveal {
                        session: g.session,
                        segment: e.segment,
                        vote: e.vote,
                        salt: e.salt,
                        reason: e.reason.clone(),
                    });
                    commits.chain(reveals)
                })
                .collect(),
            other => vec![other.clone()],
        }
    }

    /// Commits and reveals of several sessions, or of both kinds, as one [`Call::Votes`]:
    /// grouped by session in the order the sessions first appear, each group's
    /// commitments before its openings. `None` when `calls` holds another kind of call.
    fn votes(calls: Vec<Call>) -> Option<Call> {
        let mut groups: Vec<VoteGroup> = Vec::new();
        for c in calls {
            let session = c.session()?;
            if !groups.iter().any(|g| g.session == session) {
                groups.push(VoteGroup {
                    session,
                    commits: Vec::new(),
                    reveals: Vec::new(),
                });
            }
            let g = groups.iter_mut().find(|g| g.session == session)?;
            match c {
                Call::Commit {
                    segment,
                    commitment,
                    ..
                } => g.commits.push(CommitEntry {
                    segment,
                    commitment,
                }),
                Call::Reveal {
                    segment,
                    vote,
                    salt,
                    reason,
                    ..
                } => g.reveals.push(RevealEntry {
                    segment,
                    vote,
                    salt,
                    reason,
                }),
                _ => return None,
            }
        }
        Some(Call::Votes { groups })
    }

    /// The one session a call names, if it names exactly one.
    pub fn session(&self) -> Option<Hash> {
        match self {
            Call::DeliverKeys { session, .. }
            | Call::Commit { session, .. }
            | Call::Reveal { session, .. }
            | Call::Commits { session, .. }
            | Call::Reveals { session, .. }
            | Call::RevealMapping { session, .. }
            | Call::RevealHoneypot { session, .. }
            | Call::RevealHoneypots { session, .. }
            | Call::ReportBadKey { session, .. }
            | Call::Appeal { session, .. } => Some(*session),
            Call::Votes { groups } => match groups.as_slice() {
                [one] => Some(one.session),
                _ => None,
            },
            Call::Transfer { .. }
            | Call::RegisterAuditor { .. }
            | Call::Bond { .. }
            | Call::Unbond { .. }
            | Call::Withdraw
            | Call::Exit
            | Call::DeclareExpertise { .. }
            | Call::Pause
            | Call::Resume
            | Call::OpenSession(_) => None,
        }
    }

    /// Commits and reveals as one call: the single call for one entry; for more, a
    /// [`Call::Commits`] or [`Call::Reveals`] when all are of one kind in one session, and
    /// a [`Call::Votes`] for commits and reveals of several sessions or of both kinds. At
    /// most [`MAX_BATCH_VOTES`] entries: the caller splits longer lists. `None` when
    /// `calls` is empty or holds another kind of call. (Honeypots are opened as one set,
    /// [`Call::RevealHoneypots`], never batched from single openings.)
    pub fn batch(calls: Vec<Call>) -> Option<Call> {
        let mixed_votes = calls
            .iter()
            .all(|c| matches!(c, Call::Commit { .. } | Call::Reveal { .. }))
            && calls.first().is_some_and(|first| {
                calls.iter().any(|c| {
                    std::mem::discriminant(c) != std::mem::discriminant(first)
                        || c.session() != first.session()
                })
            });
        if mixed_votes {
            return Call::votes(calls);
        }
        let mut it = calls.into_iter();
        let first = it.next()?;
        let rest: Vec<Call> = it.collect();
        if rest.is_empty() {
            return matches!(first, Call::Commit { .. } | Call::Reveal { .. }).then_some(first);
        }
        match first {
            Call::Commit {
                session,
                segment,
                commitment,
            } => {
                let mut entries = vec![CommitEntry {
                    segment,
                    commitment,
                }];
                for c in rest {
                    match c {
                        Call::Commit {
                            session: s,
                            segment,
                            commitment,
                        } if s == session => entries.push(CommitEntry {
                            segment,
                            commitment,
                        }),
                        _ => return None,
                    }
                }
                Some(Call::Commits { session, entries })
            }
            Call::Reveal {
                session,
                segment,
                vote,
                salt,
                reason,
            } => {
                let mut entries = vec![RevealEntry {
                    segment,
                    vote,
                    salt,
                    reason,
                }];
                for c in rest {
                    match c {
                        Call::Reveal {
                            session: s,
                            segment,
                            vote,
                            salt,
                            reason,
                        } if s == session => entries.push(RevealEntry {
                            segment,
                            vote,
                            salt,
                            reason,
                        }),
                        _ => return None,
                    }
                }
                Some(Call::Reveals { session, entries })
            }
            _ => None,
        }
    }
}

/// A transaction: the sender's next nonce and the call.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tx {
    /// Per-account sequence number, starting at 0: replays and reordering are rejected.
    pub nonce: u64,
    /// What to do.
    pub call: Call,
}

impl SignedMessage for Tx {
    const DOMAIN: Domain = Domain::TX;
}

/// A signed transaction.
pub type SignedTx = Signed<Tx>;

/// Why a transaction is malformed on its own.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TxFormatError {
    /// A list or string is longer than allowed.
    #[error("{what}: {got} exceeds the limit of {max}")]
    TooLong {
        /// What was too long.
        what: &'static str,
        /// Its length.
        got: usize,
        /// The limit.
        max: usize,
    },
    /// A session has no segments.
    #[error("a session needs at least one segment")]
    NoSegments,
    /// A segment weight is zero or too large.
    #[error("segment {index}: weight {weight} is outside 1..={MAX_WEIGHT}")]
    BadWeight {
        /// Segment index.
        index: usize,
        /// The weight.
        weight: u32,
    },
    /// A dependency points at itself, a later segment, or twice at one segment.
    #[error("segment {index}: depends_on {target} must name a distinct earlier segment")]
    BadDependency {
        /// Segment index.
        index: usize,
        /// The offending target.
        target: u16,
    },
    /// A left-out dependency names no left-out segment, itself, or one twice.
    #[error(
        "segment {index}: rests_on_left_out {target} must name a distinct left-out segment other than itself"
    )]
    BadLeftOutDependency {
        /// Segment index (session segments first, then left-out ones).
        index: usize,
        /// The offending target.
        target: u16,
    },
    /// An operation supports no segment, itself, or another operation.
    #[error(
        "segment {index}: supports {target} must name another segment that is not itself an operation"
    )]
    BadSupports {
        /// Segment index (session segments first, then left-out ones).
        index: usize,
        /// The offending target.
        target: u16,
    },
    /// The dependencies between session and left-out segments form a cycle.
    #[error(
        "the dependencies between the session's segments and the left-out ones form a cycle through segment {index}"
    )]
    DependencyCycle {
        /// A segment on the cycle (session segments first, then left-out ones).
        index: usize,
    },
    /// A fraction is above one.
    #[error("{0} must be at most 1 (1_000_000 ppm)")]
    NotAFraction(&'static str),
    /// A tier's seat count is zero or too large.
    #[error("k for {tier:?} must be 1..={MAX_SEATS} with the extra seats, got {k} + {extra}")]
    BadSeats {
        /// The tier.
        tier: Tier,
        /// Its k.
        k: u8,
        /// Extra seats.
        extra: u8,
    },
    /// A zero amount where a positive one is needed.
    #[error("{0} must be positive")]
    ZeroAmount(&'static str),
    /// A honeypot's known verdict must be a judgement, not an abstention.
    #[error("a honeypot's known verdict must be Valid, Invalid or Ungrounded, not an abstention")]
    AbstainingHoneypot,
    /// A batch (of votes or of honeypot openings) with fewer than two entries (one goes
    /// as a single call).
    #[error("a batch needs at least two entries; send one entry as a single call")]
    ShortBatch,
    /// A batch (of votes or of honeypot openings) names one segment twice.
    #[error("a batch names segment {0} twice")]
    RepeatedSegment(u16),
    /// A batch of votes across sessions ([`Call::Votes`]) has two groups for one session.
    #[error("a batch of votes has two groups for session {0}")]
    RepeatedSession(Hash),
    /// A batch of votes across sessions has a group with neither commitments nor openings.
    #[error("a batch of votes has an empty group for session {0}")]
    EmptyGroup(Hash),
    /// A revealed vote's reason is too long or holds a control character.
    #[error("{0}; shorten the reason or drop the character, then commit and reveal again")]
    BadReason(#[source] crate::commit::ReasonError),
    /// Session terms out of their ranges.
    #[error("session terms: {0}")]
    BadTerms(&'static str),
    /// An appeal names no segment, or one segment twice.
    #[error("an appeal names 1..={MAX_APPEAL_SEGMENTS} distinct segments")]
    BadAppeal,
    /// A report of a key that does not open carries no key, or names one it does not
    /// carry.
    #[error("a bad-key report carries 1..={MAX_REPORT_KEYS} keys and names one of them")]
    BadReport,
}

/// A batch holds 2 to `max` entries ([`MAX_BATCH_VOTES`] votes, [`MAX_BATCH_HONEYPOTS`]
/// honeypot openings) on distinct segments (one entry goes as a single call).
fn check_batch(
    segments: impl Iterator<Item = u16>,
    len: usize,
    max: usize,
) -> Result<(), TxFormatError> {
    if len < 2 {
        return Err(TxFormatError::ShortBatch);
    }
    check_len("batch entries", len, max)?;
    let mut seen = std::collections::BTreeSet::new();
    for s in segments {
        if !seen.insert(s) {
            return Err(TxFormatError::RepeatedSegment(s));
        }
    }
    Ok(())
}

/// A [`Call::Votes`] holds 2 to [`MAX_BATCH_VOTES`] entries in all, in groups of distinct
/// sessions, none empty, each naming a segment at most once among its commitments and
/// once among its openings, every reason within the protocol's limits.
fn check_votes(groups: &[VoteGroup]) -> Result<(), TxFormatError> {
    let entries = groups
        .iter()
        .map(|g| g.commits.len().saturating_add(g.reveals.len()))
        .fold(0usize, usize::saturating_add);
    if entries < 2 {
        return Err(TxFormatError::ShortBatch);
    }
    check_len("batch entries", entries, MAX_BATCH_VOTES)?;
    let mut sessions = std::collections::BTreeSet::new();
    for g in groups {
        if !sessions.insert(g.session) {
            return Err(TxFormatError::RepeatedSession(g.session));
        }
        if g.commits.is_empty() && g.reveals.is_empty() {
            return Err(TxFormatError::EmptyGroup(g.session));
        }
        for segments in [
            g.commits.iter().map(|e| e.segment).collect::<Vec<_>>(),
            g.reveals.iter().map(|e| e.segment).collect(),
        ] {
            let mut seen = std::collections::BTreeSet::new();
            if let Some(s) = segments.into_iter().find(|s| !seen.insert(*s)) {
                return Err(TxFormatError::RepeatedSegment(s));
            }
        }
        if let Some(e) = g
            .reveals
            .iter()
            .find_map(|e| crate::commit::reason_error(&e.reason))
        {
            return Err(TxFormatError::BadReason(e));
        }
    }
    Ok(())
}

fn check_len(what: &'static str, got: usize, max: usize) -> Result<(), TxFormatError> {
    if got > max {
        Err(TxFormatError::TooLong { what, got, max })
    } else {
        Ok(())
    }
}

impl SessionManifest {
    /// Bounds and structure that need no state.
    pub fn validate(&self) -> Result<(), TxFormatError> {
        if self.segments.is_empty() {
            return Err(TxFormatError::NoSegments);
        }
        check_len("segments", self.segments.len(), MAX_SEGMENTS)?;
        check_len("domain", self.domain.len(), MAX_DOMAIN_BYTES)?;
        check_len("left_out", self.left_out.len(), MAX_SEGMENTS)?;
        for (index, s) in self.segments.iter().enumerate() {
            if s.weight == 0 || s.weight > MAX_WEIGHT {
                return Err(TxFormatError::BadWeight {
                    index,
                    weight: s.weight,
                });
            }
            check_len("depends_on", s.depends_on.len(), MAX_DEPENDENCIES)?;
            let mut seen = Vec::with_capacity(s.depends_on.len());
            for &t in &s.depends_on {
                if usize::from(t) >= index || seen.contains(&t) {
                    return Err(TxFormatError::BadDependency { index, target: t });
                }
                seen.push(t);
            }
            self.check_left_out_deps(index, &s.rests_on_left_out, None)?;
        }
        for (i, l) in self.left_out.iter().enumerate() {
            let index = self.segments.len().saturating_add(i);
            if l.weight == 0 || l.weight > MAX_WEIGHT {
                return Err(TxFormatError::BadWeight {
                    index,
                    weight: l.weight,
                });
            }
            check_len("depends_on", l.depends_on.len(), MAX_DEPENDENCIES)?;
            let mut seen = Vec::with_capacity(l.depends_on.len());
            for &t in &l.depends_on {
                if usize::from(t) >= self.segments.len() || seen.contains(&t) {
                    return Err(TxFormatError::BadDependency { index, target: t });
                }
                seen.push(t);
            }
            self.check_left_out_deps(index, &l.rests_on_left_out, Some(i))?;
        }
        let all = self.segments.len().saturating_add(self.left_out.len());
        for index in 0..all {
            let Some(target) = self.supports(index) else {
                continue;
            };
            let t = usize::from(target);
            if t >= all || t == index || self.supports(t).is_some() {
                return Err(TxFormatError::BadSupports { index, target });
            }
        }
        self.evaluation_order()?;
        let q = &self.quorum;
        if !q.tau.is_fraction() || q.tau == Ppm::ZERO {
            return Err(TxFormatError::NotAFraction("tau"));
        }
        if !q.beta.is_fraction() || q.beta == Ppm::ZERO {
            return Err(TxFormatError::NotAFraction("beta"));
        }
        for tier in Tier::ALL {
            let k = q.k(tier);
            if k == 0 || k.saturating_add(q.extra_seats) > MAX_SEATS {
                return Err(TxFormatError::BadSeats {
                    tier,
                    k,
                    extra: q.extra_seats,
                });
            }
        }
        let t = &self.terms;
        if !t.max_exposure.is_fraction() || t.max_exposure == Ppm::ZERO {
            return Err(TxFormatError::NotAFraction("max_exposure"));
        }
        if !t.tiers.contains(&true) {
            return Err(TxFormatError::BadTerms(
                "at least one tier must be allowed to judge",
            ));
        }
        if t.domain_required && self.domain.is_empty() {
            return Err(TxFormatError::BadTerms("a required domain must be named"));
        }
        if t.tier_weights.iter().any(|w| *w == 0 || *w > MAX_WEIGHT) {
            return Err(TxFormatError::BadTerms("tier weights must be 1..=1000"));
        }
        if self.segments.iter().any(|s| !t.allows(s.tier)) {
            return Err(TxFormatError::BadTerms(
                "a segment is routed to a tier the terms do not allow",
            ));
        }
        Ok(())
    }

    /// `rests_on_left_out` of the entry at `index` (left-out entry `this`, if it is one):
    /// distinct left-out indices other than its own (cycles are found by
    /// [`Self::evaluation_order`]).
    fn check_left_out_deps(
        &self,
        index: usize,
        deps: &[u16],
        this: Option<usize>,
    ) -> Result<(), TxFormatError> {
        check_len("rests_on_left_out", deps.len(), MAX_DEPENDENCIES)?;
        let mut seen = Vec::with_capacity(deps.len());
        for &t in deps {
            let t_at = usize::from(t);
            if t_at >= self.left_out.len() || Some(t_at) == this || seen.contains(&t) {
                return Err(TxFormatError::BadLeftOutDependency { index, target: t });
            }
            seen.push(t);
        }
        Ok(())
    }

    /// The segment an entry supports, by its index among the session's segments followed
    /// by the left-out ones.
    pub fn supports(&self, index: usize) -> Option<u16> {
        match self.segments.get(index) {
            Some(s) => s.supports,
            None => {
                self.left_out
                    .get(index.checked_sub(self.segments.len())?)?
                    .supports
            }
        }
    }

    /// What the entry at `index` rests on, as indices among the session's segments
    /// followed by the left-out ones: its `depends_on` and its `rests_on_left_out`.
    pub fn rests_on(&self, index: usize) -> Vec<usize> {
        let n = self.segments.len();
        let (deps, left): (&[u16], &[u16]) = match self.segments.get(index) {
            Some(s) => (&s.depends_on, &s.rests_on_left_out),
            None => match index.checked_sub(n).and_then(|i| self.left_out.get(i)) {
                Some(l) => (&l.depends_on, &l.rests_on_left_out),
                None => (&[], &[]),
            },
        };
        deps.iter()
            .map(|d| usize::from(*d))
            .chain(left.iter().map(|d| n.saturating_add(usize::from(*d))))
            .collect()
    }

    /// Every entry (session segments, then left-out ones) in an order where what an
    /// entry rests on comes before it ([`dependency_order`]), or the cycle that prevents
    /// one.
    pub fn evaluation_order(&self) -> Result<Vec<usize>, TxFormatError> {
        let all = self.segments.len().saturating_add(self.left_out.len());
        dependency_order(all, |i| self.rests_on(i))
            .map_err(|index| TxFormatError::DependencyCycle { index })
    }
}

/// The indices `0..n` in an order where every index comes after the ones `rests_on`
/// names (Kahn's algorithm, linear in indices and edges; the smallest ready index first,
/// so indices already in such an order keep it). Names out of range are ignored. On a
/// cycle: `Err` with the smallest index on or behind it.
pub fn dependency_order(
    n: usize,
    rests_on: impl Fn(usize) -> Vec<usize>,
) -> Result<Vec<usize>, usize> {
    use std::{cmp::Reverse, collections::BinaryHeap};
    let mut waiting = vec![0usize; n];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (i, w) in waiting.iter_mut().enumerate() {
        for d in rests_on(i) {
            if let Some(u) = users.get_mut(d) {
                u.push(i);
                *w = w.saturating_add(1);
            }
        }
    }
    let mut ready: BinaryHeap<Reverse<usize>> = (0..n)
        .filter(|&i| waiting.get(i) == Some(&0))
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(n);
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        for &u in users.get(i).map(Vec::as_slice).unwrap_or(&[]) {
            if let Some(w) = waiting.get_mut(u) {
                *w = w.saturating_sub(1);
                if *w == 0 {
                    ready.push(Reverse(u));
                }
            }
        }
    }
    if order.len() < n {
        return Err((0..n)
            .find(|i| waiting.get(*i).is_some_and(|w| *w > 0))
            .unwrap_or(0));
    }
    Ok(order)
}

impl Tx {
    /// Bounds and structure that need no state.
    pub fn validate(&self) -> Result<(), TxFormatError> {
        match &self.call {
            Call::Transfer { amount, .. } if *amount == 0 => {
                Err(TxFormatError::ZeroAmount("amount"))
            }
            Call::Bond { amount } | Call::Unbond { amount } if *amount == 0 => {
                Err(TxFormatError::ZeroAmount("amount"))
            }
            Call::RegisterAuditor { stake, .. } if *stake == 0 => {
                Err(TxFormatError::ZeroAmount("stake"))
            }
            Call::RegisterAuditor { expertise, .. } | Call::DeclareExpertise { expertise } => {
                check_len("expertise", expertise.len(), MAX_EXPERTISE)?;
                for d in expertise {
                    check_len("expertise domain", d.len(), MAX_DOMAIN_BYTES)?;
                }
                Ok(())
            }
            Call::OpenSession(m) => m.validate(),
            Call::RevealHoneypot { verdict, .. } if verdict.is_abstain() => {
                Err(TxFormatError::AbstainingHoneypot)
            }
            Call::Reveal { reason, .. } => match crate::commit::reason_error(reason) {
                Some(e) => Err(TxFormatError::BadReason(e)),
                None => Ok(()),
            },
            Call::Commits { entries, .. } => check_batch(
                entries.iter().map(|e| e.segment),
                entries.len(),
                MAX_BATCH_VOTES,
            ),
            Call::Reveals { entries, .. } => {
                check_batch(
                    entries.iter().map(|e| e.segment),
                    entries.len(),
                    MAX_BATCH_VOTES,
                )?;
                match entries
                    .iter()
                    .find_map(|e| crate::commit::reason_error(&e.reason))
                {
                    Some(e) => Err(TxFormatError::BadReason(e)),
                    None => Ok(()),
                }
            }
            Call::Votes { groups } => check_votes(groups),
            // The whole set (possibly empty), distinct segments, every known verdict a
            // judgement.
            Call::RevealHoneypots { openings, .. } => {
                check_len("honeypot openings", openings.len(), MAX_BATCH_HONEYPOTS)?;
                let mut seen = std::collections::BTreeSet::new();
                if let Some(o) = openings.iter().find(|o| !seen.insert(o.segment)) {
                    return Err(TxFormatError::RepeatedSegment(o.segment));
                }
                if openings.iter().any(|o| o.verdict.is_abstain()) {
                    return Err(TxFormatError::AbstainingHoneypot);
                }
                Ok(())
            }
            Call::Appeal { segments, .. } => {
                let mut seen = std::collections::BTreeSet::new();
                if segments.is_empty()
                    || segments.len() > MAX_APPEAL_SEGMENTS
                    || !segments.iter().all(|s| seen.insert(*s))
                {
                    return Err(TxFormatError::BadAppeal);
                }
                Ok(())
            }
            // The keys on record for one seat (distinct segments, none too long), one of
            // them named.
            Call::ReportBadKey { keys, bad, .. } => {
                check_len("reported keys", keys.len(), MAX_REPORT_KEYS)?;
                if keys.is_empty() || usize::from(*bad) >= keys.len() {
                    return Err(TxFormatError::BadReport);
                }
                let mut seen = std::collections::BTreeSet::new();
                if let Some(k) = keys.iter().find(|k| !seen.insert(k.segment)) {
                    return Err(TxFormatError::RepeatedSegment(k.segment));
                }
                for k in keys {
                    check_len(
                        "sealed key",
                        k.sealed.ciphertext.len(),
                        MAX_SEALED_KEY_BYTES,
                    )?;
                }
                Ok(())
            }
            Call::DeliverKeys { keys, .. } => {
                check_len("keys", keys.len(), MAX_SEALED_KEYS)?;
                for k in keys {
                    check_len(
                        "sealed key",
                        k.sealed.ciphertext.len(),
                        MAX_SEALED_KEY_BYTES,
                    )?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// The id of a session opened by `provider` with this transaction's nonce:
    /// `H("trust/v1/session", provider, nonce)`, unique per account and nonce.
    pub fn session_id(provider: &AccountId, nonce: u64) -> Hash {
        Hash::of_parts(
            "trust/v1/session",
            &[provider.as_ref(), &nonce.to_le_bytes()],
        )
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::{Keypair, encoding};

    fn hash() -> impl Strategy<Value = Hash> {
        any::<[u8; 32]>().prop_map(Hash)
    }

    fn vote() -> impl Strategy<Value = Vote> {
        prop_oneof![
            Just(Vote::Valid),
            Just(Vote::Invalid),
            Just(Vote::Ungrounded),
            Just(Vote::Abstain),
            Just(Vote::PayloadAbstain)
        ]
    }

    fn tier() -> impl Strategy<Value = Tier> {
        prop_oneof![Just(Tier::Computer), Just(Tier::Llm), Just(Tier::Human)]
    }

    fn level() -> impl Strategy<Value = AbstractionLevel> {
        prop_oneof![
            Just(AbstractionLevel::Goal),
            Just(AbstractionLevel::Strategy),
            Just(AbstractionLevel::Tactic),
            Just(AbstractionLevel::Step),
            Just(AbstractionLevel::Operation),
        ]
    }

    fn manifest() -> impl Strategy<Value = SessionManifest> {
        let seg = (
            hash(),
            level(),
            tier(),
            1u32..=MAX_WEIGHT,
            prop::collection::vec(any::<u16>(), 0..3),
            hash(),
            prop::option::of(hash()),
            any::<bool>(),
        )
            .prop_map(
                |(id, level, tier, weight, depends_on, cid, honeypot, conclusion)| SegmentEntry {
                    level,
                    weight,
                    depends_on,
                    cid: Cid(cid),
                    honeypot,
                    conclusion,
                    ..SegmentEntry::plain(id, tier)
                },
            );
        let left = (
            tier(),
            1u32..=MAX_WEIGHT,
            prop::collection::vec(any::<u16>(), 0..3),
            any::<bool>(),
        )
            .prop_map(|(tier, weight, depends_on, conclusion)| LeftOut {
                tier,
                weight,
                depends_on,
                rests_on_left_out: vec![0],
                conclusion,
                supports: Some(0),
            });
        (
            prop::collection::vec(seg, 1..5),
            hash(),
            any::<[u8; 3]>(),
            any::<u8>(),
            any::<u32>(),
            any::<u32>(),
            any::<u64>(),
            "[a-z]{0,8}",
            prop::collection::vec(left, 0..3),
        )
            .prop_map(
                |(
                    segments,
                    mapping_commitment,
                    k,
                    extra_seats,
                    tau,
                    beta,
                    fee,
                    domain,
                    left_out,
                )| {
                    SessionManifest {
                        segments,
                        mapping_commitment,
                        quorum: QuorumParams {
                            k,
                            extra_seats,
                            tau: Ppm(tau),
                            beta: Ppm(beta),
                        },
                        fee,
                        domain,
                        left_out,
                        terms: SessionTerms::default(),
                        honeypot_set: Hash::ZERO,
                    }
                },
            )
    }

    fn call() -> impl Strategy<Value = Call> {
        let account = any::<[u8; 32]>().prop_map(crate::PublicKey);
        prop_oneof![
            (account.clone(), any::<u64>()).prop_map(|(to, amount)| Call::Transfer { to, amount }),
            (
                tier(),
                prop::collection::vec("[a-z]{1,10}", 0..4),
                any::<[u8; 32]>(),
                any::<u64>()
            )
                .prop_map(|(tier, expertise, k, stake)| Call::RegisterAuditor {
                    tier,
                    expertise,
                    sealing_key: SealingPublicKey(k),
                    stake,
                }),
            any::<u64>().prop_map(|amount| Call::Bond { amount }),
            any::<u64>().prop_map(|amount| Call::Unbond { amount }),
            Just(Call::Withdraw),
            Just(Call::Exit),
            Just(Call::Pause),
            Just(Call::Resume),
            manifest().prop_map(Call::OpenSession),
            (
                hash(),
                prop::collection::vec(
                    (
                        any::<u16>(),
                        account.clone(),
                        any::<[u8; 32]>(),
                        prop::collection::vec(any::<u8>(), 48)
                    ),
                    0..4
                )
            )
                .prop_map(|(session, keys)| Call::DeliverKeys {
                    session,
                    keys: keys
                        .into_iter()
                        .map(|(segment, seat, e, c)| SeatKey {
                            segment,
                            seat,
                            sealed: SealedKey {
                                ephemeral: SealingPublicKey(e),
                                ciphertext: c,
                            },
                        })
                        .collect(),
                }),
            (hash(), any::<u16>(), hash()).prop_map(|(session, segment, commitment)| {
                Call::Commit {
                    session,
                    segment,
                    commitment,
                }
            }),
            // Reveals carry their reason (any text within the limit, multi-byte included).
            (
                hash(),
                any::<u16>(),
                vote(),
                any::<[u8; 32]>(),
                "[a-zé→ \n\t0-9.]{0,90}"
            )
                .prop_map(|(session, segment, vote, s, reason)| {
                    Call::Reveal {
                        session,
                        segment,
                        vote,
                        salt: Salt(s),
                        reason,
                    }
                }),
            (hash(), hash(), any::<[u8; 32]>()).prop_map(|(session, mapping, s)| {
                Call::RevealMapping {
                    session,
                    mapping,
                    salt: Salt(s),
                }
            }),
            (hash(), any::<u16>(), vote(), any::<[u8; 32]>()).prop_map(
                |(session, segment, verdict, s)| {
                    Call::RevealHoneypot {
                        session,
                        segment,
                        verdict,
                        difficulty: Difficulty::Subtle,
                        salt: Salt(s),
                    }
                }
            ),
            (hash(), prop::collection::vec(any::<u16>(), 1..4))
                .prop_map(|(session, segments)| Call::Appeal { session, segments }),
            (
                hash(),
                prop::collection::vec((any::<u16>(), vote(), any::<[u8; 32]>()), 0..4)
            )
                .prop_map(|(session, openings)| Call::RevealHoneypots {
                    session,
                    openings: openings
                        .into_iter()
                        .map(|(segment, verdict, s)| HoneypotOpening {
                            segment,
                            verdict,
                            difficulty: Difficulty::Obvious,
                            salt: Salt(s),
                        })
                        .collect(),
                    set_salt: Salt([3; 32]),
                }),
            prop::collection::vec("[a-z]{1,12}", 0..4)
                .prop_map(|expertise| Call::DeclareExpertise { expertise }),
            (
                hash(),
                any::<u16>(),
                prop::collection::vec(
                    (
                        any::<u16>(),
                        any::<[u8; 32]>(),
                        prop::collection::vec(any::<u8>(), 0..48)
                    ),
                    1..4
                ),
                any::<u8>(),
                any::<[u8; 32]>(),
                prop::collection::vec(any::<u8>(), 96),
            )
                .prop_map(|(session, segment, keys, bad, shared, proof)| {
                    Call::ReportBadKey {
                        session,
                        segment,
                        keys: keys
                            .into_iter()
                            .map(|(segment, eph, ciphertext)| DeliveredKey {
                                segment,
                                sealed: SealedKey {
                                    ephemeral: SealingPublicKey(eph),
                                    ciphertext,
                                },
                            })
                            .collect(),
                        bad,
                        shared: SharedSecret(shared),
                        proof: BadKeyProof(proof.try_into().unwrap()),
                    }
                }),
        ]
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

        /// Every transaction kind round-trips through the canonical encoding, signed.
        #[test]
        fn every_call_round_trips(nonce in any::<u64>(), call in call(), seed in any::<[u8; 32]>()) {
            let tx = Signed::sign(&Keypair::from_seed(seed), &GOLDEN_CHAIN, Tx { nonce, call });
            let bytes = encoding::encode(&tx);
            let back: SignedTx = encoding::decode(&bytes).expect("decodes");
            prop_assert_eq!(&back, &tx);
            prop_assert!(back.verify(&GOLDEN_CHAIN).is_ok());
        }

        /// Arbitrary bytes never panic the decoder.
        #[test]
        fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
            let _ = encoding::decode::<SignedTx>(&bytes);
        }
    }

    fn sample_manifest() -> SessionManifest {
        SessionManifest {
            segments: vec![
                SegmentEntry {
                    cid: Cid::of(b"segment-0"),
                    ..SegmentEntry::plain(Hash([1; 32]), Tier::Computer)
                },
                SegmentEntry {
                    level: AbstractionLevel::Operation,
                    weight: 2,
                    depends_on: vec![0],
                    cid: Cid::of(b"segment-1"),
                    honeypot: Some(Hash([3; 32])),
                    ..SegmentEntry::plain(Hash([2; 32]), Tier::Llm)
                },
            ],
            mapping_commitment: Hash([4; 32]),
            quorum: QuorumParams {
                k: [1, 3, 5],
                extra_seats: 1,
                tau: Ppm(500_000),
                beta: Ppm(800_000),
            },
            fee: 100,
            domain: "math".into(),
            left_out: Vec::new(),
            terms: SessionTerms::default(),
            honeypot_set: Hash([6; 32]),
        }
    }

    #[test]
    fn manifest_validation_names_the_problem() {
        assert_eq!(sample_manifest().validate(), Ok(()));
        let mut m = sample_manifest();
        m.segments[1].depends_on = vec![1];
        assert_eq!(
            m.validate(),
            Err(TxFormatError::BadDependency {
                index: 1,
                target: 1
            })
        );
        let mut m = sample_manifest();
        m.segments[0].weight = 0;
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::BadWeight { index: 0, .. })
        ));
        let mut m = sample_manifest();
        m.quorum.tau = Ppm(1_000_001);
        assert_eq!(m.validate(), Err(TxFormatError::NotAFraction("tau")));
        let mut m = sample_manifest();
        m.quorum.k = [0, 3, 5];
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::BadSeats {
                tier: Tier::Computer,
                ..
            })
        ));
        let mut m = sample_manifest();
        m.segments.clear();
        assert_eq!(m.validate(), Err(TxFormatError::NoSegments));
        let tx = Tx {
            nonce: 0,
            call: Call::Bond { amount: 0 },
        };
        assert_eq!(tx.validate(), Err(TxFormatError::ZeroAmount("amount")));
        // Left-out segments: weights in range, dependencies on session segments only.
        let mut m = sample_manifest();
        m.left_out = vec![LeftOut {
            tier: Tier::Llm,
            weight: 1,
            depends_on: vec![1],
            rests_on_left_out: vec![],
            conclusion: true,
            supports: None,
        }];
        assert_eq!(m.validate(), Ok(()));
        m.left_out[0].depends_on = vec![2];
        assert_eq!(
            m.validate(),
            Err(TxFormatError::BadDependency {
                index: 2,
                target: 2
            })
        );
        m.left_out[0].depends_on = vec![];
        m.left_out[0].weight = 0;
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::BadWeight { index: 2, .. })
        ));
        // Left-out dependencies: distinct left-out segments, never itself.
        let mut m = sample_manifest();
        let left = |rests_on_left_out: Vec<u16>| LeftOut {
            tier: Tier::Llm,
            weight: 1,
            depends_on: vec![],
            rests_on_left_out,
            conclusion: false,
            supports: None,
        };
        m.left_out = vec![left(vec![]), left(vec![0])];
        m.segments[1].rests_on_left_out = vec![1];
        assert_eq!(m.validate(), Ok(()));
        m.left_out[0].rests_on_left_out = vec![0];
        assert_eq!(
            m.validate(),
            Err(TxFormatError::BadLeftOutDependency {
                index: 2,
                target: 0
            })
        );
        m.left_out[0].rests_on_left_out = vec![];
        m.segments[0].rests_on_left_out = vec![2];
        assert_eq!(
            m.validate(),
            Err(TxFormatError::BadLeftOutDependency {
                index: 0,
                target: 2
            })
        );
        // A cycle among left-out segments, then through the session and a left-out one.
        m.segments[0].rests_on_left_out = vec![];
        m.left_out[0].rests_on_left_out = vec![1];
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::DependencyCycle { .. })
        ));
        m.left_out[0].rests_on_left_out = vec![];
        m.segments[0].rests_on_left_out = vec![0];
        m.left_out[0].depends_on = vec![1];
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::DependencyCycle { .. })
        ));
        // An operation supports a segment that is not itself an operation.
        let mut m = sample_manifest();
        m.left_out = vec![left(vec![])];
        m.segments[1].supports = Some(2);
        assert_eq!(m.validate(), Ok(()));
        assert_eq!(m.supports(1), Some(2));
        m.segments[1].supports = Some(1);
        assert_eq!(
            m.validate(),
            Err(TxFormatError::BadSupports {
                index: 1,
                target: 1
            })
        );
        m.segments[1].supports = Some(3);
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::BadSupports { target: 3, .. })
        ));
        m.segments[1].supports = Some(0);
        m.segments[0].supports = Some(2);
        assert!(matches!(
            m.validate(),
            Err(TxFormatError::BadSupports { .. })
        ));
        // A honeypot's known verdict is a judgement.
        let tx = Tx {
            nonce: 0,
            call: Call::RevealHoneypot {
                session: Hash([1; 32]),
                segment: 0,
                verdict: Vote::Abstain,
                difficulty: Difficulty::Obvious,
                salt: Salt([2; 32]),
            },
        };
        assert_eq!(tx.validate(), Err(TxFormatError::AbstainingHoneypot));
        // Nor is the provider-paid abstention a known verdict.
        let tx = Tx {
            nonce: 0,
            call: Call::RevealHoneypot {
                session: Hash([1; 32]),
                segment: 0,
                verdict: Vote::PayloadAbstain,
                difficulty: Difficulty::Obvious,
                salt: Salt([2; 32]),
            },
        };
        assert_eq!(tx.validate(), Err(TxFormatError::AbstainingHoneypot));
    }

    /// A reveal's reason is bounded in bytes and holds no control characters but newline
    /// and tab; the error says what was wrong.
    #[test]
    fn a_reveal_with_an_overlong_or_garbled_reason_is_malformed() {
        let reveal = |reason: String| Tx {
            nonce: 0,
            call: Call::Reveal {
                session: Hash([1; 32]),
                segment: 0,
                vote: Vote::Valid,
                salt: Salt([2; 32]),
                reason,
            },
        };
        assert_eq!(
            reveal("x".repeat(crate::MAX_REASON_BYTES)).validate(),
            Ok(())
        );
        assert_eq!(reveal("two lines\n\tindented".into()).validate(), Ok(()));
        let long = reveal("x".repeat(crate::MAX_REASON_BYTES + 1)).validate();
        assert_eq!(
            long,
            Err(TxFormatError::BadReason(crate::ReasonError::TooLong {
                len: crate::MAX_REASON_BYTES + 1
            }))
        );
        let said = long.unwrap_err().to_string();
        assert!(said.contains("281 bytes") && said.contains("280"), "{said}");
        assert_eq!(
            reveal("bell\u{7}".into()).validate(),
            Err(TxFormatError::BadReason(
                crate::ReasonError::ControlCharacter { at: 4 }
            ))
        );
    }

    /// Pins the wire format of signed transactions: a changed encoding fails on purpose.
    #[test]
    fn golden_signed_transactions() {
        let key = Keypair::from_seed([9; 32]);
        let reveal = Signed::sign(
            &key,
            &GOLDEN_CHAIN,
            Tx {
                nonce: 3,
                call: Call::Reveal {
                    session: Hash([5; 32]),
                    segment: 1,
                    vote: Vote::Invalid,
                    salt: Salt([6; 32]),
                    reason: "2 + 2 is 4, not 5".into(),
                },
            },
        );
        let bytes = encoding::encode(&reveal);
        // Changed on purpose when reveals began to carry their reason (issue 28):
        // signer(32) | nonce(8) | variant(4) | session(32) | segment(2) | vote(4) | salt(32)
        // | reason length(8) | reason(17) | signature(64)
        assert_eq!(bytes.len(), 32 + 8 + 4 + 32 + 2 + 4 + 32 + 8 + 17 + 64);
        assert_eq!(
            &bytes[122..139],
            b"2 + 2 is 4, not 5",
            "the reason follows the salt"
        );
        assert_eq!(hex::encode(&bytes[32..44]), "030000000000000008000000");
        assert_eq!(
            Hash::sha256(&bytes).to_hex(),
            GOLDEN_REVEAL_SHA256,
            "the encoding of a signed Reveal changed"
        );
        let open = Signed::sign(
            &key,
            &GOLDEN_CHAIN,
            Tx {
                nonce: 0,
                call: Call::OpenSession(sample_manifest()),
            },
        );
        assert_eq!(
            Hash::sha256(&encoding::encode(&open)).to_hex(),
            GOLDEN_OPEN_SHA256,
            "the encoding of a signed OpenSession changed"
        );
        let register = Signed::sign(
            &key,
            &GOLDEN_CHAIN,
            Tx {
                nonce: 0,
                call: Call::RegisterAuditor {
                    tier: Tier::Llm,
                    expertise: vec!["math".into()],
                    sealing_key: SealingPublicKey([7; 32]),
                    stake: 100,
                },
            },
        );
        let bytes = encoding::encode(&register);
        // The stake bonded with the registration is the last field of the call.
        assert_eq!(
            hex::encode(&bytes[bytes.len() - 72..bytes.len() - 64]),
            "6400000000000000"
        );
        assert_eq!(
            Hash::sha256(&bytes).to_hex(),
            GOLDEN_REGISTER_SHA256,
            "the encoding of a signed RegisterAuditor changed"
        );
    }

    /// A batch stands for its entries: `batch` then `unbatched` gives the calls back in
    /// order; a single call is not made a batch; several sessions make a `Votes` call; a
    /// batch names each segment once, holds 2 to `MAX_BATCH_VOTES` entries, and every
    /// reveal's reason keeps the single reveal's limits.
    #[test]
    fn batches_of_votes_stand_for_their_entries_and_keep_the_single_calls_limits() {
        let (s1, s2) = (Hash([1; 32]), Hash([2; 32]));
        let commit = |session, segment: u16| Call::Commit {
            session,
            segment,
            commitment: Hash([segment as u8; 32]),
        };
        let reveal = |segment: u16, reason: &str| Call::Reveal {
            session: s1,
            segment,
            vote: Vote::Valid,
            salt: Salt([segment as u8; 32]),
            reason: reason.into(),
        };
        let commits: Vec<Call> = (0..5).map(|i| commit(s1, i)).collect();
        let batch = Call::batch(commits.clone()).expect("one session, one kind");
        assert!(matches!(&batch, Call::Commits { entries, .. } if entries.len() == 5));
        assert_eq!(batch.unbatched(), commits);
        let tx = |call| Tx { nonce: 0, call };
        assert_eq!(tx(batch.clone()).validate(), Ok(()));
        let reveals: Vec<Call> = (0..3).map(|i| reveal(i, "holds")).collect();
        let rb = Call::batch(reveals.clone()).expect("reveals");
        assert_eq!(rb.unbatched(), reveals);
        assert_eq!(tx(rb).validate(), Ok(()));

        assert_eq!(Call::batch(vec![commit(s1, 0)]), Some(commit(s1, 0)));
        assert_eq!(Call::batch(vec![]), None);
        assert!(matches!(
            Call::batch(vec![commit(s1, 0), commit(s2, 1)]),
            Some(Call::Votes { .. })
        ));
        assert_eq!(Call::batch(vec![Call::Exit, Call::Exit]), None);

        let twice = Call::Commits {
            session: s1,
            entries: vec![
                CommitEntry {
                    segment: 3,
                    commitment: Hash::ZERO,
                },
                CommitEntry {
                    segment: 3,
                    commitment: Hash::ZERO,
                },
            ],
        };
        assert_eq!(tx(twice).validate(), Err(TxFormatError::RepeatedSegment(3)));
        let one = Call::Commits {
            session: s1,
            entries: vec![CommitEntry {
                segment: 3,
                commitment: Hash::ZERO,
            }],
        };
        assert_eq!(tx(one).validate(), Err(TxFormatError::ShortBatch));
        let many: Vec<Call> = (0..=MAX_BATCH_VOTES as u16)
            .map(|i| commit(s1, i))
            .collect();
        assert!(matches!(
            tx(Call::batch(many).unwrap()).validate(),
            Err(TxFormatError::TooLong {
                what: "batch entries",
                ..
            })
        ));
        let long = "x".repeat(crate::MAX_REASON_BYTES + 1);
        let bad = Call::batch(vec![reveal(0, "fine"), reveal(1, &long)]).unwrap();
        assert!(matches!(
            tx(bad).validate(),
            Err(TxFormatError::BadReason(_))
        ));
    }

    /// Votes of several sessions, or of both kinds, batch as one `Votes` call grouped by
    /// session in first-appearance order, commitments before openings in each group; it
    /// stands for its entries (`unbatched`), names one session once, and keeps every
    /// single call's limit; honeypot openings and other calls do not mix in.
    #[test]
    fn votes_across_sessions_batch_by_session_and_keep_every_limit() {
        let (s1, s2, s3) = (Hash([1; 32]), Hash([2; 32]), Hash([3; 32]));
        let commit = |session, segment: u16| Call::Commit {
            session,
            segment,
            commitment: Hash([segment as u8; 32]),
        };
        let reveal = |session, segment: u16, reason: &str| Call::Reveal {
            session,
            segment,
            vote: Vote::Invalid,
            salt: Salt([segment as u8; 32]),
            reason: reason.into(),
        };
        let tx = |call| Tx { nonce: 0, call };
        let calls = vec![
            commit(s1, 0),
            reveal(s2, 4, "a premise is missing"),
            commit(s2, 1),
            commit(s1, 2),
            reveal(s3, 0, "holds"),
        ];
        let Some(Call::Votes { groups }) = Call::batch(calls.clone()) else {
            panic!("three sessions make a Votes call");
        };
        let sessions: Vec<Hash> = groups.iter().map(|g| g.session).collect();
        assert_eq!(sessions, vec![s1, s2, s3]);
        let votes = Call::Votes { groups };
        assert_eq!(votes.session(), None);
        assert_eq!(
            votes.unbatched(),
            vec![
                commit(s1, 0),
                commit(s1, 2),
                commit(s2, 1),
                reveal(s2, 4, "a premise is missing"),
                reveal(s3, 0, "holds"),
            ]
        );
        assert_eq!(tx(votes.clone()).validate(), Ok(()));
        // Both kinds in one session are a Votes call of one group.
        let both = Call::batch(vec![commit(s1, 0), reveal(s1, 1, "x")]).unwrap();
        assert!(matches!(&both, Call::Votes { groups } if groups.len() == 1));
        assert_eq!(both.session(), Some(s1));
        // Honeypot openings and other calls are no vote batch.
        let open = Call::RevealHoneypot {
            session: s1,
            segment: 1,
            verdict: Vote::Invalid,
            difficulty: Difficulty::Obvious,
            salt: Salt([0; 32]),
        };
        assert_eq!(Call::batch(vec![commit(s2, 0), open]), None);
        assert_eq!(Call::batch(vec![commit(s2, 0), Call::Exit]), None);

        let group = |session, commits: &[u16], reveals: &[u16]| VoteGroup {
            session,
            commits: commits
                .iter()
                .map(|&segment| CommitEntry {
                    segment,
                    commitment: Hash::ZERO,
                })
                .collect(),
            reveals: reveals
                .iter()
                .map(|&segment| RevealEntry {
                    segment,
                    vote: Vote::Valid,
                    salt: Salt([0; 32]),
                    reason: String::new(),
                })
                .collect(),
        };
        let check = |groups| tx(Call::Votes { groups }).validate();
        assert_eq!(
            check(vec![group(s1, &[0], &[]), group(s1, &[1], &[])]),
            Err(TxFormatError::RepeatedSession(s1))
        );
        assert_eq!(
            check(vec![group(s1, &[0, 1], &[]), group(s2, &[], &[])]),
            Err(TxFormatError::EmptyGroup(s2))
        );
        assert_eq!(
            check(vec![group(s1, &[0], &[]), group(s2, &[], &[3, 3])]),
            Err(TxFormatError::RepeatedSegment(3))
        );
        // A segment committed in a later round and opened in an earlier one may share a batch.
        assert_eq!(check(vec![group(s1, &[2], &[2])]), Ok(()));
        assert_eq!(
            check(vec![group(s1, &[2], &[])]),
            Err(TxFormatError::ShortBatch)
        );
        let full: Vec<u16> = (0..=(MAX_BATCH_VOTES / 2) as u16).collect();
        assert!(matches!(
            check(vec![group(s1, &full, &[]), group(s2, &[], &full)]),
            Err(TxFormatError::TooLong {
                what: "batch entries",
                ..
            })
        ));
        let long = "x".repeat(crate::MAX_REASON_BYTES + 1);
        let bad = Call::batch(vec![commit(s1, 0), reveal(s2, 1, &long)]).unwrap();
        assert!(matches!(
            tx(bad).validate(),
            Err(TxFormatError::BadReason(_))
        ));
    }

    /// The largest batch of reveals, every reason at its limit, fits one transaction; so
    /// does the largest `Votes` call, each opening in a session of its own.
    #[test]
    fn a_full_batch_of_reveals_fits_a_transaction() {
        let k = Keypair::from_label("seat");
        let across = Call::Votes {
            groups: (0..MAX_BATCH_VOTES as u16)
                .map(|i| VoteGroup {
                    session: Hash::of_parts("session", &[&i.to_be_bytes()]),
                    commits: Vec::new(),
                    reveals: vec![RevealEntry {
                        segment: i,
                        vote: Vote::Invalid,
                        salt: Salt([7; 32]),
                        reason: "é".repeat(crate::MAX_REASON_BYTES / 2),
                    }],
                })
                .collect(),
        };
        let tx = crate::Signed::sign(
            &k,
            &Hash::ZERO,
            Tx {
                nonce: u64::MAX,
                call: across,
            },
        );
        assert_eq!(tx.body.validate(), Ok(()));
        let len = encoding::encode(&tx).len();
        assert!(len <= crate::block::MAX_TX_BYTES, "{len} bytes");

        let k = Keypair::from_label("seat");
        let entries = (0..MAX_BATCH_VOTES as u16)
            .map(|segment| RevealEntry {
                segment,
                vote: Vote::Invalid,
                salt: Salt([7; 32]),
                reason: "é".repeat(crate::MAX_REASON_BYTES / 2),
            })
            .collect();
        let tx = crate::Signed::sign(
            &k,
            &Hash::ZERO,
            Tx {
                nonce: u64::MAX,
                call: Call::Reveals {
                    session: Hash([9; 32]),
                    entries,
                },
            },
        );
        assert_eq!(tx.body.validate(), Ok(()));
        let len = encoding::encode(&tx).len();
        assert!(len <= crate::block::MAX_TX_BYTES, "{len} bytes");
    }

    /// A honeypot set is opened as one call, never batched from single openings: it holds
    /// 0 to `MAX_BATCH_HONEYPOTS` openings (the whole set, possibly empty) of distinct
    /// segments, none abstaining, and a full one fits a transaction; `unbatched` shows its
    /// openings one by one.
    #[test]
    fn a_honeypot_set_opening_keeps_its_rules() {
        let (s1, s2) = (Hash([1; 32]), Hash([2; 32]));
        let open = |session, segment: u16, verdict| Call::RevealHoneypot {
            session,
            segment,
            verdict,
            difficulty: Difficulty::Subtle,
            salt: Salt([segment as u8; 32]),
        };
        // Single openings do not batch: a set carries its own salt.
        let singles: Vec<Call> = (0..4).rev().map(|i| open(s1, i, Vote::Invalid)).collect();
        assert_eq!(Call::batch(singles), None);
        assert_eq!(Call::batch(vec![open(s1, 0, Vote::Valid)]), None);
        assert_eq!(
            Call::batch(vec![open(s1, 0, Vote::Valid), open(s2, 1, Vote::Valid)]),
            None
        );
        let tx = |call| Tx { nonce: 0, call };
        let opening = |segment: u16, verdict| HoneypotOpening {
            segment,
            verdict,
            difficulty: Difficulty::Obvious,
            salt: Salt([9; 32]),
        };
        let set = |openings| Call::RevealHoneypots {
            session: s1,
            openings,
            set_salt: Salt([8; 32]),
        };
        let raw = |openings| tx(set(openings)).validate();
        assert_eq!(raw(vec![]), Ok(()), "the empty set is opened too");
        assert_eq!(raw(vec![opening(2, Vote::Invalid)]), Ok(()));
        assert_eq!(
            set(vec![opening(2, Vote::Invalid), opening(0, Vote::Valid)]).unbatched(),
            vec![
                Call::RevealHoneypot {
                    session: s1,
                    segment: 2,
                    verdict: Vote::Invalid,
                    difficulty: Difficulty::Obvious,
                    salt: Salt([9; 32]),
                },
                Call::RevealHoneypot {
                    session: s1,
                    segment: 0,
                    verdict: Vote::Valid,
                    difficulty: Difficulty::Obvious,
                    salt: Salt([9; 32]),
                },
            ]
        );
        assert_eq!(
            raw(vec![opening(2, Vote::Invalid), opening(2, Vote::Valid)]),
            Err(TxFormatError::RepeatedSegment(2))
        );
        assert_eq!(
            raw(vec![opening(2, Vote::Invalid), opening(3, Vote::Abstain)]),
            Err(TxFormatError::AbstainingHoneypot)
        );
        let many = |n: usize| {
            (0..n)
                .map(|i| opening(u16::try_from(i).unwrap(), Vote::Ungrounded))
                .collect::<Vec<_>>()
        };
        assert!(matches!(
            raw(many(MAX_BATCH_HONEYPOTS + 1)),
            Err(TxFormatError::TooLong {
                what: "honeypot openings",
                max: MAX_BATCH_HONEYPOTS,
                ..
            })
        ));
        assert_eq!(raw(many(MAX_BATCH_HONEYPOTS)), Ok(()));
        let full = crate::Signed::sign(
            &Keypair::from_label("provider"),
            &Hash::ZERO,
            Tx {
                nonce: u64::MAX,
                call: set(many(MAX_BATCH_HONEYPOTS)),
            },
        );
        let len = encoding::encode(&full).len();
        assert!(len <= crate::block::MAX_TX_BYTES, "{len} bytes");
    }

    /// Pins the wire format of a signed `RevealHoneypots`: appended as the last call
    /// (variant 15, after `Appeal`), so every older call keeps its index and encoding.
    #[test]
    fn golden_signed_honeypot_openings() {
        let tx = Signed::sign(
            &Keypair::from_seed([9; 32]),
            &GOLDEN_CHAIN,
            Tx {
                nonce: 4,
                call: Call::RevealHoneypots {
                    session: Hash([5; 32]),
                    openings: vec![
                        HoneypotOpening {
                            segment: 3,
                            verdict: Vote::Invalid,
                            difficulty: Difficulty::Subtle,
                            salt: Salt([6; 32]),
                        },
                        HoneypotOpening {
                            segment: 1,
                            verdict: Vote::Ungrounded,
                            difficulty: Difficulty::Obvious,
                            salt: Salt([7; 32]),
                        },
                    ],
                    set_salt: Salt([8; 32]),
                },
            },
        );
        let bytes = encoding::encode(&tx);
        // signer(32) | nonce(8) | variant(4) | session(32) | openings length(8)
        // | 2 x (segment(2) | verdict(4) | difficulty(4) | salt(32)) | set salt(32)
        // | signature(64)
        assert_eq!(
            bytes.len(),
            32 + 8 + 4 + 32 + 8 + 2 * (2 + 4 + 4 + 32) + 32 + 64
        );
        assert_eq!(
            hex::encode(&bytes[32..44]),
            "04000000000000000f000000",
            "nonce 4, variant 15"
        );
        assert_eq!(hex::encode(&bytes[76..84]), "0200000000000000");
        assert_eq!(
            Hash::sha256(&bytes).to_hex(),
            GOLDEN_HONEYPOTS_SHA256,
            "the encoding of a signed RevealHoneypots changed"
        );
        // The single opening it batches keeps its own index (10).
        let single = encoding::encode(&Call::RevealHoneypot {
            session: Hash([5; 32]),
            segment: 3,
            verdict: Vote::Invalid,
            difficulty: Difficulty::Subtle,
            salt: Salt([6; 32]),
        });
        assert_eq!(hex::encode(&single[..4]), "0a000000");
    }

    /// A bad-key report for the golden vector: two keys on record, the second bad.
    fn sample_report() -> Call {
        let key = |segment: u16, b: u8| DeliveredKey {
            segment,
            sealed: SealedKey {
                ephemeral: SealingPublicKey([b; 32]),
                ciphertext: vec![b.wrapping_add(1); 48],
            },
        };
        Call::ReportBadKey {
            session: Hash([5; 32]),
            segment: 2,
            keys: vec![key(2, 0x10), key(0, 0x20)],
            bad: 1,
            shared: SharedSecret([0x30; 32]),
            proof: BadKeyProof([0x40; 96]),
        }
    }

    /// Pins the wire format of a signed `ReportBadKey`: appended as the last call
    /// (variant 18, after `DeclareExpertise`), so every older call keeps its index and
    /// encoding (the other golden vectors are unchanged).
    #[test]
    fn golden_signed_bad_key_report() {
        let tx = Signed::sign(
            &Keypair::from_seed([9; 32]),
            &GOLDEN_CHAIN,
            Tx {
                nonce: 6,
                call: sample_report(),
            },
        );
        let bytes = encoding::encode(&tx);
        // signer(32) | nonce(8) | variant(4) | session(32) | segment(2) | keys length(8)
        // | 2 x (segment(2) | ephemeral(32) | ciphertext length(8) | ciphertext(48))
        // | bad(1) | shared(32) | proof(96) | signature(64)
        assert_eq!(
            bytes.len(),
            32 + 8 + 4 + 32 + 2 + 8 + 2 * (2 + 32 + 8 + 48) + 1 + 32 + 96 + 64
        );
        assert_eq!(
            hex::encode(&bytes[32..44]),
            "060000000000000012000000",
            "nonce 6, variant 18"
        );
        assert_eq!(
            Hash::sha256(&bytes).to_hex(),
            GOLDEN_REPORT_SHA256,
            "the encoding of a signed ReportBadKey changed"
        );
        let back: SignedTx = encoding::decode(&bytes).unwrap();
        assert_eq!(back, tx);
        // The call just before it keeps its index (17).
        let declare = encoding::encode(&Call::DeclareExpertise {
            expertise: Vec::new(),
        });
        assert_eq!(hex::encode(&declare[..4]), "11000000");
        // The calls appended after it take the next indices and carry nothing.
        assert_eq!(hex::encode(encoding::encode(&Call::Pause)), "13000000");
        assert_eq!(hex::encode(encoding::encode(&Call::Resume)), "14000000");
    }

    // New: the bad-key report (issue 39: key starvation is the provider's cost).
    const GOLDEN_REPORT_SHA256: &str =
        "8f743049b4d5c01ee404539526b0b954b124ecd757f5093c69f7c9e56a93e0ac";

    /// A report carries 1..=MAX_REPORT_KEYS keys of distinct segments, none longer than a
    /// sealed key, and names one of them.
    #[test]
    fn a_bad_key_report_is_bounded() {
        let tx = |call| Tx { nonce: 0, call };
        assert_eq!(tx(sample_report()).validate(), Ok(()));
        let with = |f: &dyn Fn(&mut Vec<DeliveredKey>, &mut u8)| {
            let mut c = sample_report();
            if let Call::ReportBadKey { keys, bad, .. } = &mut c {
                f(keys, bad);
            }
            tx(c).validate()
        };
        assert_eq!(with(&|_, b| *b = 2), Err(TxFormatError::BadReport));
        assert_eq!(
            with(&|k, b| {
                k.clear();
                *b = 0
            }),
            Err(TxFormatError::BadReport)
        );
        assert_eq!(
            with(&|k, _| k[1].segment = 2),
            Err(TxFormatError::RepeatedSegment(2))
        );
        assert!(matches!(
            with(&|k, _| k[0].sealed.ciphertext.push(0)),
            Err(TxFormatError::TooLong {
                what: "sealed key",
                ..
            })
        ));
        let full = |n: usize| {
            with(&move |k, _| {
                let first = k[0].clone();
                k.clear();
                for s in 0..n {
                    let mut e = first.clone();
                    e.segment = s as u16;
                    k.push(e);
                }
            })
        };
        assert_eq!(full(MAX_REPORT_KEYS), Ok(()));
        assert!(matches!(
            full(MAX_REPORT_KEYS + 1),
            Err(TxFormatError::TooLong {
                what: "reported keys",
                ..
            })
        ));
        // A full report is small beside the transaction limit.
        let mut c = sample_report();
        if let Call::ReportBadKey { keys, .. } = &mut c {
            let first = keys[0].clone();
            *keys = (0..MAX_REPORT_KEYS as u16)
                .map(|segment| DeliveredKey {
                    segment,
                    ..first.clone()
                })
                .collect();
        }
        assert!(encoding::encode(&tx(c)).len() < 2 * 1024);
    }

    // Changed on purpose: the opening names the salt of the session's committed honeypot
    // set (issue 39, finding 2: the set is fixed before voting and opened whole).
    const GOLDEN_HONEYPOTS_SHA256: &str =
        "5e64928f4050c1fea17c9278751f6e3d47544d20889c03afdb45604b5a196181";

    // Every signature below changed on purpose: the signed bytes name the chain (issue 26,
    // finding 7: a transaction signed for one network is refused by another).

    // New on purpose: a registration bonds its stake in the same transaction (issue 26,
    // finding 4), so the call carries the amount.
    const GOLDEN_REGISTER_SHA256: &str =
        "433640021a034ea189f33777fafb56e1f681f4ec0c90072252576e439a37a943";

    /// The chain the golden transactions are signed for.
    const GOLDEN_CHAIN: Hash = Hash([0xC4; 32]);

    // Changed on purpose: a reveal carries its vote's reason (issue 28).
    const GOLDEN_REVEAL_SHA256: &str =
        "4d6d6ae9cd9769a38ed3f65b1bd63bc7ee077fb7d06e4937df2ee41638d5d6d0";
    // Changed on purpose: the manifest commits to its honeypot set (issue 39, finding 2),
    // after carrying the session's terms (issue 27).
    const GOLDEN_OPEN_SHA256: &str =
        "a121ba4e7754304c9ab87b304e6c94654ea786eb45658a2d5938cc1d47ec7a72";
}
