//! How each simulated strategy votes.

use rand::Rng;
use trust_protocol::{Vote, units::Ppm};

use super::Strategy;

/// The opposite judgement: approve what is wrong, reject what holds.
fn wrong(truth: Vote) -> Vote {
    if truth.is_valid() {
        Vote::Invalid
    } else {
        Vote::Valid
    }
}

/// The vote an agent with `strategy` casts on a segment whose truth is `truth`; honest
/// agents err with probability `eps`, random guessers vote Valid with probability
/// `guess_valid` and Invalid otherwise, never looking at the segment.
pub(crate) fn choose_vote<R: Rng>(
    strategy: Strategy,
    truth: Vote,
    eps: Ppm,
    guess_valid: Ppm,
    rng: &mut R,
) -> Vote {
    match strategy {
        Strategy::Honest | Strategy::Withholder | Strategy::CopyCat => {
            if rng.gen_range(0..1_000_000) < eps.0 {
                wrong(truth)
            } else {
                truth
            }
        }
        Strategy::Malicious => wrong(truth),
        Strategy::Random => {
            if rng.gen_range(0..1_000_000) < guess_valid.0 {
                Vote::Valid
            } else {
                Vote::Invalid
            }
        }
        Strategy::RubberStamp => Vote::Valid,
    }
}
