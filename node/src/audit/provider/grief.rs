//! The griefing provider, a test behaviour (`crate::audit::misbehave`, test builds only):
//! it plants true steps as known errors and withholds about half its seats' keys.

use trust_protocol::{
    AccountId, Hash, Vote,
    hdag::AbstractionLevel,
    tx::{Difficulty, Tier},
};

use super::{honeypot::Bait, prepare::Restricted};

/// A griefing provider's honeypots: up to `count` Computer-tier steps of `r` (never a
/// conclusion), each copied *unaltered* and committed as an obvious known error. Every
/// one is a true step an honest seat approves.
pub fn false_baits(r: &Restricted, count: usize) -> Vec<Bait> {
    r.hdag
        .nodes
        .iter()
        .filter(|n| {
            Tier::from(n.primary_auditor) == Tier::Computer
                && n.abstraction_level != AbstractionLevel::Goal
                && !r.conclusions.contains(&n.id)
        })
        .take(count)
        .map(|n| Bait {
            source: n.id.clone(),
            claim: n.content.clone(),
            verdict: Vote::Invalid,
            difficulty: Difficulty::Obvious,
            rests_on: None,
            premises: None,
            calculation: None,
        })
        .collect()
}

/// Whether a griefing provider withholds the keys of `seat` in `session`: about half the
/// seats, by a hash of both, so that each session starves some and serves others.
pub fn starves(session: &Hash, seat: &AccountId) -> bool {
    let h = Hash::of_parts(
        "trust/test/griefing-starve",
        &[session.as_ref(), seat.as_ref()],
    );
    h.as_ref().first().is_some_and(|b| b & 1 == 1)
}
