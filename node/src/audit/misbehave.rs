//! Test-only seat behaviours: a node that misbehaves on purpose, so that multi-node tests
//! can check on a live network what the simulator predicts (misbehaving seats lose stake
//! or reputation, verdicts stay right, honeypots flag the rubber-stamper).
//!
//! Compiled only with the `misbehave` cargo feature, which only test targets enable (the
//! crate's dev-dependency on itself): a `cargo build --release` has none of this, and a
//! node started with [`super::seat::BEHAVIOUR_ENV`] set refuses to run rather than run
//! honestly while its operator believes otherwise.
//!
//! Each behaviour is a small change at one point of the honest seat pipeline:
//!
//! | behaviour | after the judge decides | at commit | at reveal |
//! |---|---|---|---|
//! | `malicious` | inverts: Valid <-> Invalid, Ungrounded -> Valid | as honest | as honest |
//! | `rubber-stamp` | always Valid | as honest | as honest |
//! | `lazy` | always abstains | as honest | as honest |
//! | `random` | Valid or Invalid by a seeded coin | as honest | as honest |
//! | `withholder` | as honest | as honest | never reveals |
//! | `copy-cat` | does not judge | replays another seat's published commitment on its segment | has nothing to reveal |
//! | `griefing-provider` | as honest | as honest | as honest |
//!
//! `griefing-provider` misbehaves as a provider instead (issue 26, findings 1 and 2): in
//! every session it opens it plants *false* honeypots, unaltered copies of true
//! Computer-tier steps committed as known errors (as many as the network lets a session
//! open, [`false_baits`]), and it withholds the keys of some seats ([`starves`]). The
//! contract is what must defeat it: honest seats that contradict its honeypots are not
//! scored against them, and starved seats are paid, not slashed.
//!
//! A judge's abstention stays an abstention for `malicious` (it does not know which way
//! would hurt). A copy-cat that finds no commitment to copy commits nothing and ends a
//! no-show; one that copies is refused by the contract (a commitment binds its seat), so
//! it ends a no-show too, which is what the simulator's copy-cat does.

use std::str::FromStr;

use trust_protocol::{AccountId, Hash, Vote};

use trust_judging::judge::Decision;

/// A misbehaving seat's strategy.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behaviour {
    /// Votes against its own judgement.
    Malicious,
    /// Approves everything.
    RubberStamp,
    /// Commits its judgement and never reveals it.
    Withholder,
    /// Replays another seat's commitment instead of judging.
    CopyCat,
    /// Always abstains.
    Lazy,
    /// Guesses Valid or Invalid with a fair coin, seeded by the segment and the seat.
    Random,
    /// Seats as honest; as a provider, plants true steps as known errors and withholds
    /// some seats' keys.
    GriefingProvider,
}

impl Behaviour {
    /// Every behaviour.
    pub const ALL: [Behaviour; 7] = [
        Behaviour::Malicious,
        Behaviour::RubberStamp,
        Behaviour::Withholder,
        Behaviour::CopyCat,
        Behaviour::Lazy,
        Behaviour::Random,
        Behaviour::GriefingProvider,
    ];

    /// The name used in [`super::seat::BEHAVIOUR_ENV`] and in logs (the simulator's names).
    pub fn name(self) -> &'static str {
        match self {
            Behaviour::Malicious => "malicious",
            Behaviour::RubberStamp => "rubber-stamp",
            Behaviour::Withholder => "withholder",
            Behaviour::CopyCat => "copy-cat",
            Behaviour::Lazy => "lazy",
            Behaviour::Random => "random",
            Behaviour::GriefingProvider => "griefing-provider",
        }
    }

    /// The vote this seat commits in place of its judge's `honest` decision; `seed` is
    /// the seat seed of the segment (session and segment ids), `seat` this node's account.
    pub fn twist(self, honest: Decision, seed: &Hash, seat: &AccountId) -> Decision {
        let because = |vote: Vote, why: &str| Decision {
            vote,
            reason: format!(
                "test behaviour {}: {why} (the judge said {:?}: {})",
                self.name(),
                honest.vote,
                honest.reason
            ),
        };
        match self {
            Behaviour::Malicious => match honest.vote {
                Vote::Valid => because(Vote::Invalid, "inverted"),
                Vote::Invalid | Vote::Ungrounded => because(Vote::Valid, "inverted"),
                Vote::Abstain | Vote::PayloadAbstain => honest,
            },
            Behaviour::RubberStamp => because(Vote::Valid, "approves everything"),
            Behaviour::Lazy => because(Vote::Abstain, "never judges"),
            Behaviour::Random => {
                let coin =
                    Hash::of_parts("trust/test/random-vote", &[seed.as_ref(), seat.as_ref()]);
                let heads = coin.as_ref().first().is_some_and(|b| b & 1 == 1);
                because(if heads { Vote::Valid } else { Vote::Invalid }, "a coin")
            }
            Behaviour::Withholder | Behaviour::CopyCat | Behaviour::GriefingProvider => honest,
        }
    }

    /// Whether this seat judges and commits its own vote.
    pub fn commits_own_vote(self) -> bool {
        self != Behaviour::CopyCat
    }

    /// Whether this seat opens its commitments.
    pub fn reveals(self) -> bool {
        !matches!(self, Behaviour::Withholder | Behaviour::CopyCat)
    }

    /// Whether this node, as a provider, grief its seats.
    pub fn griefs_as_provider(self) -> bool {
        self == Behaviour::GriefingProvider
    }
}

pub use super::provider::grief::{false_baits, starves};

impl std::fmt::Display for Behaviour {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// A behaviour name that is none of [`Behaviour::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown test behaviour {got:?}; one of: malicious, rubber-stamp, withholder, copy-cat, lazy, random, griefing-provider"
)]
pub struct UnknownBehaviour {
    got: String,
}

impl FromStr for Behaviour {
    type Err = UnknownBehaviour;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Behaviour::ALL
            .into_iter()
            .find(|b| b.name() == s.trim())
            .ok_or_else(|| UnknownBehaviour { got: s.to_string() })
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::{
        Keypair,
        tx::{Difficulty, Tier},
    };

    use super::*;

    fn said(vote: Vote) -> Decision {
        Decision {
            vote,
            reason: "checked".into(),
        }
    }

    #[test]
    fn names_parse_back_and_anything_else_is_a_clear_error() {
        for b in Behaviour::ALL {
            assert_eq!(b.name().parse::<Behaviour>(), Ok(b));
        }
        let e = "honest-ish".parse::<Behaviour>().unwrap_err().to_string();
        assert!(
            e.contains("honest-ish") && e.contains("rubber-stamp"),
            "{e}"
        );
    }

    #[test]
    fn each_behaviour_twists_the_judgement_its_own_way() {
        let seat = Keypair::from_label("seat").public();
        let seed = Hash::sha256(b"segment");
        let twist = |b: Behaviour, v: Vote| b.twist(said(v), &seed, &seat).vote;
        assert_eq!(twist(Behaviour::Malicious, Vote::Valid), Vote::Invalid);
        assert_eq!(twist(Behaviour::Malicious, Vote::Invalid), Vote::Valid);
        assert_eq!(twist(Behaviour::Malicious, Vote::Ungrounded), Vote::Valid);
        assert_eq!(twist(Behaviour::Malicious, Vote::Abstain), Vote::Abstain);
        for v in [Vote::Valid, Vote::Invalid, Vote::Abstain] {
            assert_eq!(twist(Behaviour::RubberStamp, v), Vote::Valid);
            assert_eq!(twist(Behaviour::Lazy, v), Vote::Abstain);
            assert_eq!(twist(Behaviour::Withholder, v), v);
        }
        assert!(!Behaviour::Withholder.reveals() && !Behaviour::CopyCat.reveals());
        assert!(!Behaviour::CopyCat.commits_own_vote());
        assert!(Behaviour::Malicious.reveals() && Behaviour::Malicious.commits_own_vote());
    }

    /// The griefing provider's honeypots are true steps of the trace, unaltered, committed
    /// as obvious known errors, as many as asked (the trace has enough steps), none a
    /// conclusion; an honest Computer seat judges each Valid.
    #[test]
    fn a_griefing_provider_commits_true_steps_as_known_errors() {
        use trust_protocol::trace::Trace;

        use trust_judging::decompose::{Options, decompose};
        let text = include_str!("../../../examples/traces/fraction-correct.txt");
        let h = decompose(&Trace::parse(text).unwrap(), &Options::default()).unwrap();
        let r = trust_judging::session::prepare::restrict(&h, |t| t == Tier::Computer);
        let baits = false_baits(&r, 8);
        assert!(baits.len() >= 2, "{baits:?}");
        assert!(baits.len() <= 8);
        let steps: Vec<&str> = r.hdag.nodes.iter().map(|n| n.content.as_str()).collect();
        for b in &baits {
            assert!(
                steps.contains(&b.claim.as_str()),
                "not a step of the trace: {b:?}"
            );
            assert_eq!(
                (b.verdict, b.difficulty),
                (Vote::Invalid, Difficulty::Obvious)
            );
            assert!(!r.conclusions.contains(&b.source));
            let premises: Vec<String> = r
                .hdag
                .dependencies_of(&b.source)
                .map(|d| r.hdag.nodes[r.hdag.index_of(d).unwrap()].content.clone())
                .collect();
            let givens = r.givens.get(&b.source).cloned().unwrap_or_default();
            let honest =
                trust_judging::computer::check_claim(&b.claim, &premises, &givens, &Hash::ZERO);
            assert!(
                !matches!(honest, trust_judging::computer::Judgement::Vote { vote, .. } if vote.is_error()),
                "an honest seat would reject {b:?}: {honest:?}"
            );
        }
        assert_eq!(false_baits(&r, 1).len(), 1);
    }

    #[test]
    fn a_griefing_provider_starves_some_seats_and_serves_others() {
        let session = Hash::sha256(b"session");
        let starved = (0..200)
            .filter(|i| starves(&session, &Keypair::from_label(&format!("s{i}")).public()))
            .count();
        assert!((60..140).contains(&starved), "{starved} of 200 starved");
        assert!(Behaviour::GriefingProvider.griefs_as_provider());
        assert!(
            Behaviour::ALL
                .iter()
                .filter(|b| b.griefs_as_provider())
                .count()
                == 1
        );
        // As a seat it judges honestly.
        let seat = Keypair::from_label("seat").public();
        let d = Behaviour::GriefingProvider.twist(said(Vote::Invalid), &session, &seat);
        assert_eq!(d.vote, Vote::Invalid);
    }

    #[test]
    fn the_random_seat_flips_a_fair_seeded_coin() {
        let seat = Keypair::from_label("seat").public();
        let votes: Vec<Vote> = (0..400u32)
            .map(|i| {
                let seed = Hash::sha256(&i.to_le_bytes());
                Behaviour::Random
                    .twist(said(Vote::Valid), &seed, &seat)
                    .vote
            })
            .collect();
        let valid = votes.iter().filter(|v| **v == Vote::Valid).count();
        assert!((150..250).contains(&valid), "{valid} of 400 Valid");
        assert!(
            votes
                .iter()
                .all(|v| matches!(v, Vote::Valid | Vote::Invalid))
        );
        // The same segment and seat give the same vote.
        let seed = Hash::sha256(&7u32.to_le_bytes());
        assert_eq!(
            Behaviour::Random
                .twist(said(Vote::Invalid), &seed, &seat)
                .vote,
            votes[7]
        );
    }
}
