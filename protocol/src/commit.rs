//! Votes and commit-reveal commitments.
//!
//! A seat first publishes `H(tag, session, segment, seat, vote, salt, H(reason))` and only
//! later the vote, its reason and the salt. The commitment binds every field, so a
//! commitment copied from another seat (a different `seat`) or another segment never
//! opens, and a reason cannot be rewritten after the other seats have revealed theirs.

use serde::{Deserialize, Serialize};

use crate::{AccountId, Hash};

crate::bytes::byte_array_newtype!(
    /// The 32-byte secret salt that hides a vote until it is revealed.
    Salt,
    32
);

/// Difficulty tier of a honeypot (paper §0.0.5.2): honest auditors approve known errors
/// less often as they get subtler to spot; rubber-stampers approve at every tier.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum Difficulty {
    /// Obvious errors (arithmetic contradictions).
    #[serde(alias = "Obvious")]
    Obvious,
    /// Subtle errors (sign flips, off-by-one, unit confusions).
    #[serde(alias = "Subtle")]
    Subtle,
    /// Domain-specific errors (e.g. a misapplied statute or contraindication).
    #[serde(alias = "Domain")]
    Domain,
}

impl Difficulty {
    /// All difficulty tiers in order.
    pub const ALL: [Difficulty; 3] = [Difficulty::Obvious, Difficulty::Subtle, Difficulty::Domain];

    /// Position in [`Difficulty::ALL`].
    pub fn index(self) -> usize {
        match self {
            Difficulty::Obvious => 0,
            Difficulty::Subtle => 1,
            Difficulty::Domain => 2,
        }
    }

    /// A stable one-byte code used in commitments.
    pub fn code(self) -> u8 {
        match self {
            Difficulty::Obvious => 1,
            Difficulty::Subtle => 2,
            Difficulty::Domain => 3,
        }
    }
}

/// A vote commitment.
pub type Commitment = Hash;

/// A seat's judgement of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
// One spelling in every JSON the node writes (API, files): snake_case; the Rust
// names earlier versions wrote are still read.
#[serde(rename_all = "snake_case")]
pub enum Vote {
    /// The step follows from its premises.
    #[serde(alias = "Valid")]
    Valid,
    /// The step does not follow from its premises (a wrong calculation or derivation).
    #[serde(alias = "Invalid")]
    Invalid,
    /// The step relies on a premise that was never established (ARES "ungrounded").
    #[serde(alias = "Ungrounded")]
    Ungrounded,
    /// The seat cannot judge the step (its checker cannot read it, its model is unsure or
    /// down, its person answered "Unsure"). Committed and revealed like any vote: the seat
    /// is present (never a no-show), unrewarded, and the segment escalates.
    #[serde(alias = "Abstain")]
    Abstain,
    /// The seat cannot judge the step because the segment's own payload cannot be judged
    /// within the network's published limits: the provider's code exceeded the sandbox's
    /// CPU, memory, wall-clock or output cap, reached something non-deterministic or
    /// forbidden, or a formal proof's structure needs more checking than the stated
    /// budget. An abstention in every count ([`Vote::is_abstain`]): it decides nothing and
    /// blocks nothing. Unlike [`Vote::Abstain`] the provider pays for it: when at least the
    /// round's quorum of the segment's seats cast it, each of them is paid one reward from
    /// the provider's escrow, as a seat the provider starved of its keys. Causes on the
    /// seat's side (no sandbox, execution turned off, a module its interpreter lacks, a
    /// dead model endpoint) stay [`Vote::Abstain`]. Appended last, so the encodings and
    /// commitment codes of the earlier votes never change.
    PayloadAbstain,
}

impl Vote {
    /// Whether the vote says the segment holds.
    pub fn is_valid(self) -> bool {
        matches!(self, Vote::Valid)
    }

    /// Whether the vote says the segment fails (Invalid or Ungrounded).
    pub fn is_error(self) -> bool {
        matches!(self, Vote::Invalid | Vote::Ungrounded)
    }

    /// Whether the seat abstained, for either reason ([`Vote::Abstain`] or
    /// [`Vote::PayloadAbstain`]).
    pub fn is_abstain(self) -> bool {
        matches!(self, Vote::Abstain | Vote::PayloadAbstain)
    }

    /// Whether the seat abstained because the segment's payload exceeds the network's
    /// published limits ([`Vote::PayloadAbstain`], which the provider pays for when a
    /// quorum of the round casts it).
    pub fn is_payload_abstain(self) -> bool {
        matches!(self, Vote::PayloadAbstain)
    }

    /// Every vote, in encoding order.
    pub const ALL: [Vote; 5] = [
        Vote::Valid,
        Vote::Invalid,
        Vote::Ungrounded,
        Vote::Abstain,
        Vote::PayloadAbstain,
    ];

    /// The byte that stands for this vote inside a commitment.
    pub fn code(self) -> u8 {
        match self {
            Vote::Valid => 1,
            Vote::Invalid => 2,
            Vote::Ungrounded => 3,
            Vote::Abstain => 4,
            Vote::PayloadAbstain => 5,
        }
    }
}

/// The longest reason a vote may carry, in bytes of UTF-8 (a short paragraph; the length of
/// a checker's or a person's explanation, not of a report). A reason is free text except
/// for control characters (newline and tab are allowed, every other control character is
/// refused) and invisible format characters (bidi overrides and isolates, zero-width
/// characters: [`is_format_char`]), see [`reason_error`], so a reason prints as the seat
/// wrote it on a terminal and in a page, and reads there as it reads in its bytes.
pub const MAX_REASON_BYTES: usize = 280;

/// What is wrong with a vote's reason, if anything: longer than [`MAX_REASON_BYTES`],
/// holding a control character other than newline or tab, or an invisible format
/// character ([`is_format_char`]).
pub fn reason_error(reason: &str) -> Option<ReasonError> {
    if reason.len() > MAX_REASON_BYTES {
        return Some(ReasonError::TooLong { len: reason.len() });
    }
    reason.char_indices().find_map(|(at, c)| {
        if c.is_control() && c != '\n' && c != '\t' {
            Some(ReasonError::ControlCharacter { at })
        } else if is_format_char(c) {
            Some(ReasonError::FormatCharacter {
                at,
                code: u32::from(c),
            })
        } else {
            None
        }
    })
}

/// Whether `c` is a Unicode format character (general category `Cf`, Unicode 15): the
/// bidirectional embeddings, overrides, isolates and marks (U+202A..U+202E,
/// U+2066..U+2069, U+200E, U+200F, U+061C), which reorder how the text around them is
/// shown, and the invisible joiners, spaces and tags (U+200B..U+200D, U+2060..U+2064,
/// U+FEFF, U+E0001, U+E0020..U+E007F, ...), which hide text or change what compares
/// equal. A reason holding one can display as something other than what it says.
pub fn is_format_char(c: char) -> bool {
    matches!(
        u32::from(c),
        0x00AD
            | 0x0600..=0x0605
            | 0x061C
            | 0x06DD
            | 0x070F
            | 0x0890..=0x0891
            | 0x08E2
            | 0x180E
            | 0x200B..=0x200F
            | 0x202A..=0x202E
            | 0x2060..=0x2064
            | 0x2066..=0x206F
            | 0xFEFF
            | 0xFFF9..=0xFFFB
            | 0x110BD
            | 0x110CD
            | 0x13430..=0x1343F
            | 0x1BCA0..=0x1BCA3
            | 0x1D173..=0x1D17A
            | 0xE0001
            | 0xE0020..=0xE007F
    )
}

/// Why a vote's reason is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ReasonError {
    /// Longer than [`MAX_REASON_BYTES`].
    #[error("the vote's reason is {len} bytes, more than the {MAX_REASON_BYTES} allowed")]
    TooLong {
        /// Its length in bytes.
        len: usize,
    },
    /// A control character other than newline or tab.
    #[error(
        "the vote's reason holds a control character at byte {at} (only newline and tab are allowed)"
    )]
    ControlCharacter {
        /// Byte offset of the character.
        at: usize,
    },
    /// An invisible format character ([`is_format_char`]).
    #[error(
        "the vote's reason holds the invisible format character U+{code:04X} at byte {at} \
         (bidi controls and zero-width characters can make a reason display as something it \
         does not say)"
    )]
    FormatCharacter {
        /// Byte offset of the character.
        at: usize,
        /// Its code point.
        code: u32,
    },
}

/// `reason` cut to at most [`MAX_REASON_BYTES`] on a character boundary, with every
/// control character other than newline and tab replaced by a space and every format
/// character ([`is_format_char`]) left out: what a seat commits to, whatever its judge
/// wrote.
pub fn fit_reason(reason: &str) -> String {
    let mut out = String::with_capacity(reason.len().min(MAX_REASON_BYTES));
    for c in reason.chars().filter(|c| !is_format_char(*c)) {
        let c = if c.is_control() && c != '\n' && c != '\t' {
            ' '
        } else {
            c
        };
        if out.len().saturating_add(c.len_utf8()) > MAX_REASON_BYTES {
            break;
        }
        out.push(c);
    }
    out
}

// v2: the commitment binds the hash of the vote's reason.
const COMMIT_TAG: &str = "trust/v2/vote-commitment";

/// `H("trust/v2/vote-commitment", session, segment, seat, vote, salt, H(reason))`.
pub fn commitment(
    session: &Hash,
    segment: &Hash,
    seat: &AccountId,
    vote: Vote,
    salt: &Salt,
    reason: &str,
) -> Commitment {
    let reason = Hash::sha256(reason.as_bytes());
    Hash::of_parts(
        COMMIT_TAG,
        &[
            session.as_ref(),
            segment.as_ref(),
            seat.as_ref(),
            &[vote.code()],
            salt.as_ref(),
            reason.as_ref(),
        ],
    )
}

/// Whether `(vote, salt, reason)` opens `c` for this session, segment and seat.
pub fn verify_commitment(
    c: &Commitment,
    session: &Hash,
    segment: &Hash,
    seat: &AccountId,
    vote: Vote,
    salt: &Salt,
    reason: &str,
) -> bool {
    commitment(session, segment, seat, vote, salt, reason) == *c
}

/// One entry of a session's segment → trace mapping document, in manifest order: the
/// HDAG node the segment is (a honeypot's name for a planted one) and the salt of its
/// blinded id. The provider keeps the document, commits to it at opening
/// ([`mapping_commitment`]) and reveals its hash ([`mapping_document_hash`]) at tally.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MappingEntry {
    /// The HDAG node id.
    pub node: String,
    /// The salt of the blinded id.
    pub salt: Salt,
}

/// The hash a provider reveals on chain for its mapping: `sha256(encode(mapping))`.
pub fn mapping_document_hash(mapping: &[MappingEntry]) -> Hash {
    Hash::sha256(&crate::encoding::encode(mapping))
}

/// What a provider hands, with a session's outcome proof, to whoever holds the trace:
/// the mapping document itself, so that the holder can cut the trace into its steps
/// again, rebuild each step's document and check that it reproduces the segment id the
/// outcome carries. It opens the segments to anyone holding the trace (the salts are
/// what keeps a stranger from testing guesses of the trace's text against the ids), so
/// it is handed out only on the provider's word (`proof export --opening`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceOpening {
    /// The mapping document, in manifest order.
    pub mapping: Vec<MappingEntry>,
    /// The HDAG the provider cut the trace into, as JSON, when it gave its own at
    /// submission; without it the trace was cut by the node's own decomposer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hdag: Option<String>,
}

/// Commitment to a session's segment → trace mapping document:
/// `H("trust/v1/mapping", H(document), salt)`. The provider publishes it at opening and
/// opens it with `RevealMapping { mapping: H(document), salt }` at tally time.
pub fn mapping_commitment(document_hash: &Hash, salt: &Salt) -> Commitment {
    Hash::of_parts("trust/v1/mapping", &[document_hash.as_ref(), salt.as_ref()])
}

/// Commitment to a honeypot's known verdict and difficulty, bound to its blinded segment
/// id: `H("trust/v1/honeypot", segment, verdict, difficulty, salt)`.
pub fn honeypot_commitment(
    segment: &Hash,
    verdict: Vote,
    difficulty: Difficulty,
    salt: &Salt,
) -> Commitment {
    Hash::of_parts(
        "trust/v1/honeypot",
        &[
            segment.as_ref(),
            &[verdict.code(), difficulty.code()],
            salt.as_ref(),
        ],
    )
}

/// Commitment to the set of a session's honeypot segments, made when the session opens:
/// `H("trust/v1/honeypot-set", i_1, ..., i_n, salt)` over the distinct indices in
/// increasing order (each as two little-endian bytes). The provider opens the whole set
/// at once after voting; it cannot choose, once the votes are public, which segments were
/// honeypots.
pub fn honeypot_set_commitment(indices: &[u16], salt: &Salt) -> Commitment {
    let set: std::collections::BTreeSet<u16> = indices.iter().copied().collect();
    let bytes: Vec<u8> = set.iter().flat_map(|i| i.to_le_bytes()).collect();
    Hash::of_parts("trust/v1/honeypot-set", &[&bytes, salt.as_ref()])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Keypair;

    #[test]
    fn commitment_binds_every_field() {
        let s = Hash::sha256(b"session");
        let g = Hash::sha256(b"segment");
        let seat = Keypair::from_label("seat").public();
        let salt = Salt([7; 32]);
        let why = "2 + 2 is 4";
        let c = commitment(&s, &g, &seat, Vote::Valid, &salt, why);
        assert!(verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Valid,
            &salt,
            why
        ));
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Invalid,
            &salt,
            why
        ));
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Valid,
            &Salt([8; 32]),
            why
        ));
        let other = Keypair::from_label("copycat").public();
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &other,
            Vote::Valid,
            &salt,
            why
        ));
        assert!(!verify_commitment(
            &c,
            &g,
            &s,
            &seat,
            Vote::Valid,
            &salt,
            why
        ));
        // The reason is bound: another one, even an empty one, does not open it.
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Valid,
            &salt,
            "2 + 2 is 5"
        ));
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Valid,
            &salt,
            ""
        ));
    }

    #[test]
    fn reasons_are_bounded_in_bytes_and_free_of_control_characters() {
        assert_eq!(reason_error(""), None);
        assert_eq!(reason_error("line one\nline\ttwo"), None);
        assert_eq!(reason_error(&"x".repeat(MAX_REASON_BYTES)), None);
        assert_eq!(
            reason_error(&"x".repeat(MAX_REASON_BYTES + 1)),
            Some(ReasonError::TooLong {
                len: MAX_REASON_BYTES + 1
            })
        );
        assert_eq!(
            reason_error("ok\u{1b}[31m"),
            Some(ReasonError::ControlCharacter { at: 2 })
        );
        // Cut on a character boundary: 'é' is two bytes, so 141 of them (282 bytes)
        // keep 140.
        let long = "é".repeat(141);
        let fit = fit_reason(&long);
        assert_eq!(fit, "é".repeat(140));
        assert_eq!(reason_error(&fit), None);
        assert_eq!(fit_reason("a\u{7}b\nc"), "a b\nc");
        assert_eq!(fit_reason("short"), "short");
    }

    /// "valid" written so that it shows as "invalid... no: valid" or with hidden text:
    /// a right-to-left override, an isolate, a zero-width space, a tag character. Each
    /// is refused where it stands, and `fit_reason` leaves it out; ordinary non-ASCII
    /// text (accents, Arabic, CJK, an emoji) stays.
    #[test]
    fn reasons_refuse_bidi_and_invisible_format_characters() {
        for (reason, at, code) in [
            ("the sum \u{202E}dilav si", 8, 0x202E),
            ("x = \u{2066}2\u{2069}", 4, 0x2066),
            ("ok\u{200B}", 2, 0x200B),
            ("a\u{200F}b", 1, 0x200F),
            ("\u{FEFF}bom", 0, 0xFEFF),
            ("tag\u{E0041}", 3, 0xE0041),
            ("soft\u{AD}hyphen", 4, 0xAD),
        ] {
            assert_eq!(
                reason_error(reason),
                Some(ReasonError::FormatCharacter { at, code }),
                "{reason:?}"
            );
            let fit = fit_reason(reason);
            assert_eq!(reason_error(&fit), None, "{fit:?}");
            assert!(!fit.chars().any(is_format_char), "{fit:?}");
        }
        for fine in ["déjà vu", "القيمة صحيحة", "答案正确", "👍 ok", "x ≤ y → z"]
        {
            assert_eq!(reason_error(fine), None, "{fine:?}");
            assert_eq!(fit_reason(fine), fine);
        }
        let e = reason_error("a\u{202E}b").unwrap().to_string();
        assert!(e.contains("U+202E at byte 1"), "{e}");
    }
}
