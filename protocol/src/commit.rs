//! Votes and commit-reveal commitments.
//!
//! A seat first publishes `H(tag, session, segment, seat, vote, salt)` and only later the
//! vote and salt. The commitment binds every field, so a commitment copied from another
//! seat (a different `seat`) or another segment never opens.

use serde::{Deserialize, Serialize};

use crate::{AccountId, Hash};

crate::bytes::byte_array_newtype!(
    /// The 32-byte secret salt that hides a vote until it is revealed.
    Salt,
    32
);

/// A vote commitment.
pub type Commitment = Hash;

/// A seat's judgement of one segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Vote {
    /// The step follows from its premises.
    Valid,
    /// The step does not follow from its premises (a wrong calculation or derivation).
    Invalid,
    /// The step relies on a premise that was never established (ARES "ungrounded").
    Ungrounded,
    /// The seat cannot judge the step (its checker cannot read it, its model is unsure or
    /// down, its person answered "Unsure"). Committed and revealed like any vote: the seat
    /// is present (never a no-show), unrewarded, and the segment escalates.
    Abstain,
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

    /// Whether the seat abstained.
    pub fn is_abstain(self) -> bool {
        matches!(self, Vote::Abstain)
    }

    /// The byte that stands for this vote inside a commitment.
    pub fn code(self) -> u8 {
        match self {
            Vote::Valid => 1,
            Vote::Invalid => 2,
            Vote::Ungrounded => 3,
            Vote::Abstain => 4,
        }
    }
}

const COMMIT_TAG: &str = "trust/v1/vote-commitment";

/// `H(tag, session, segment, seat, vote, salt)`.
pub fn commitment(
    session: &Hash,
    segment: &Hash,
    seat: &AccountId,
    vote: Vote,
    salt: &Salt,
) -> Commitment {
    Hash::of_parts(
        COMMIT_TAG,
        &[
            session.as_ref(),
            segment.as_ref(),
            seat.as_ref(),
            &[vote.code()],
            salt.as_ref(),
        ],
    )
}

/// Whether `(vote, salt)` opens `c` for this session, segment and seat.
pub fn verify_commitment(
    c: &Commitment,
    session: &Hash,
    segment: &Hash,
    seat: &AccountId,
    vote: Vote,
    salt: &Salt,
) -> bool {
    commitment(session, segment, seat, vote, salt) == *c
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
    difficulty: crate::tx::Difficulty,
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
        let c = commitment(&s, &g, &seat, Vote::Valid, &salt);
        assert!(verify_commitment(&c, &s, &g, &seat, Vote::Valid, &salt));
        assert!(!verify_commitment(&c, &s, &g, &seat, Vote::Invalid, &salt));
        assert!(!verify_commitment(
            &c,
            &s,
            &g,
            &seat,
            Vote::Valid,
            &Salt([8; 32])
        ));
        let other = Keypair::from_label("copycat").public();
        assert!(!verify_commitment(&c, &s, &g, &other, Vote::Valid, &salt));
        assert!(!verify_commitment(&c, &g, &s, &seat, Vote::Valid, &salt));
    }
}
