//! Honeypots (paper §0.0.5.2): known-error segments a provider plants in its own
//! sessions, so that a seat approving everything shows itself, on every tier the session
//! has auditors for ([`forge`]).
//!
//! On the Computer tier, a honeypot is a step of the trace's own kind made wrong: one of
//! the trace's Computer tier steps with one number changed (off by one or two: *subtle*;
//! ten times or ten more: *obvious*) or, in a rule chain, with the derived atom swapped
//! for another of the trace (*obvious*). The provider keeps a candidate only when the
//! Computer checker, given exactly what a seat would get (the same premises and givens as
//! the step it copies), calls it Invalid or Ungrounded; that is the known verdict it
//! commits to. So an honest Computer seat rejects it, and one that approves it is wrong
//! against a truth on record.
//!
//! On the LLM and Human tiers, a honeypot is one of the trace's worded steps made wrong
//! the ways real reasoning goes wrong, at all three difficulties (a miscalculation or a
//! wrong operation: *obvious*; a quantity the problem gives for another entity:
//! *subtle*; a price per group used per item: *domain*), each planted only when it is
//! wrong by construction, with its calculation planted beside it as an OPERATION like a
//! real worded step's: see [`worded`]. The chain shape below is the Computer tier's; a
//! worded honeypot has no follower.
//!
//! On the ledger a honeypot looks like any segment: it takes the level, tier, weight and
//! `depends_on` of the step it copies, its ciphertext is sealed the same way, it sits at a
//! random place after its premises, and every real segment carries a honeypot commitment
//! too (one nobody can open). It is never a conclusion; once the provider opens it after
//! voting, the contract leaves it out of the trace verdict.
//!
//! # Shape: honeypots that other honeypots rest on
//!
//! A honeypot that copies a step and rests on that step's premises has no dependents:
//! nothing of the trace may rest on a planted error. Had every honeypot that shape, "no
//! dependents and not the conclusion" would pick the honeypots out of a manifest, and a
//! seat could approve them differently from the rest. So honeypots come in chains where
//! the trace allows: after a honeypot `A` copied from step `S`, a *follower* `B` is forged
//! from a Computer step `T` that rests on `S`, with `S` replaced by `A` among its premises
//! (`B` depends on `A`, and its seats read `A`'s altered claim as a premise; the checker
//! must still refute `B` given that premise). `A` then has a dependent like a real step,
//! and only honeypots ever rest on honeypots, so no error is planted in the trace (the
//! contract opens a honeypot only when whatever rests on it is an opened honeypot, and the
//! provider opens chains from their end). What stays visible: a follower itself has no
//! dependents, so at most half of a session's honeypots look like dead ends, beside the
//! trace's own dead ends; a classifier looking deeper (a dead end resting on a segment
//! whose only dependent is that dead end) still finds chains more often than chance. That
//! is the limit of decoys built from the trace's own steps.

use std::collections::BTreeSet;

use rand::{Rng, RngCore, seq::SliceRandom};
use trust_protocol::{
    Hash, Vote,
    hdag::AbstractionLevel,
    tx::{Difficulty, Tier},
};

use super::restrict::Restricted;
use crate::{computer, decompose::dependency_order};

/// The Computer tier's vote on a candidate claim, if it decides one: the judgement a
/// Computer seat makes, so that a group of a long trace's steps with one step altered is
/// refuted as its seats would refute it.
fn computer_vote(claim: &str, premises: &[String], givens: &[String], seed: &Hash) -> Option<Vote> {
    computer::check_claim(claim, premises, givens, seed).as_vote()
}

pub mod worded;

/// Honeypots per session a provider plants unless configured otherwise. The paper asks for
/// known errors "at controlled rates" without a number; two per session (a chain where the
/// trace allows, see the module doc) cost `2 k_t` seat rewards and keep a seat's honeypot
/// record growing with every few sessions it serves.
pub const DEFAULT_PER_SESSION: usize = 2;
/// Most honeypots in one session (a provider setting above this is capped).
pub const MAX_PER_SESSION: usize = 8;

/// The OPERATION of a worded honeypot: its bare calculation, planted beside it as the
/// decomposer plants a real worded STEP's (a Computer-tier segment that `supports` the
/// honeypot, resting on what the source STEP's OPERATION rests on). It is no honeypot
/// itself (its commitment opens to nothing, like a real segment's) and, supporting a
/// honeypot, it stays outside the trace verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calculation {
    /// The HDAG node id of the source STEP's OPERATION (level, tier, weight, premises,
    /// givens).
    pub source: String,
    /// Its text: a span of the honeypot's claim, and the one operation sealed with it.
    pub text: String,
}

/// A forged honeypot, before it is placed in a manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Bait {
    /// The HDAG node id of the step it copies (level, tier, weight, premises, givens).
    pub source: String,
    /// Its (wrong) text.
    pub claim: String,
    /// The known verdict: what the Computer checker says of it.
    pub verdict: Vote,
    /// How hard the error is to see.
    pub difficulty: Difficulty,
    /// For a follower: the HDAG id of the source's premise it rests on in the form of
    /// that premise's honeypot (`honeypot:<id>`), planted before it.
    pub rests_on: Option<String>,
    /// For a worded honeypot ([`worded`]): its OPERATION.
    pub calculation: Option<Calculation>,
}

impl Bait {
    /// The name the provider's node gives it in its own segment list.
    pub fn name(&self) -> String {
        format!("honeypot:{}", self.source)
    }

    /// The name the provider's node gives its OPERATION, if it has one
    /// (`calculation-of-honeypot:<id>`: not an opened honeypot, but not the trace's
    /// either).
    pub fn calculation_name(&self) -> Option<String> {
        self.calculation
            .as_ref()
            .map(|_| format!("calculation-of-honeypot:{}", self.source))
    }
}

/// Up to `count` honeypots (at most [`MAX_PER_SESSION`]) on every tier `r` keeps: where
/// `r` has worded steps to forge from ([`worded`]), half of them (rounded up) worded,
/// the rest forged from its Computer-tier steps ([`forge_computer`]), and more worded
/// ones where the Computer tier has too few. Fewer, or none, when too few steps can be
/// made wrong for sure: a honeypot whose verdict is not known for sure is never planted.
/// Deterministic given `rng`.
pub fn forge(r: &Restricted, count: usize, rng: &mut impl RngCore) -> Vec<Bait> {
    let limit = count.min(MAX_PER_SESSION);
    let mut out = worded::forge(r, limit, rng);
    if out.is_empty() {
        return forge_computer(r, limit, rng);
    }
    let more = out.split_off(limit.div_ceil(2).min(out.len()));
    out.extend(forge_computer(r, limit.saturating_sub(out.len()), rng));
    let room = limit.saturating_sub(out.len());
    out.extend(more.into_iter().take(room));
    out
}

/// Up to `count` honeypots forged from the kept Computer-tier steps of `r` (one per step
/// at most, conclusions and the problem statement never copied), obvious and subtle ones
/// in turn where the step allows, each followed where possible by a honeypot forged from
/// a step that rests on its source (see the module doc). Fewer, or none, when the
/// checker cannot refute enough altered steps: a honeypot whose verdict is not known for
/// sure is never planted.
pub fn forge_computer(r: &Restricted, count: usize, rng: &mut impl RngCore) -> Vec<Bait> {
    let hdag = &r.hdag;
    let order = dependency_order(hdag);
    let mut position = vec![usize::MAX; hdag.nodes.len()];
    for (pos, &node) in order.iter().enumerate() {
        if let Some(p) = position.get_mut(node) {
            *p = pos;
        }
    }
    let copyable = |i: usize| {
        hdag.nodes.get(i).is_some_and(|n| {
            Tier::from(n.primary_auditor) == Tier::Computer
                && n.abstraction_level != AbstractionLevel::Goal
                && !r.conclusions.contains(&n.id)
                // A tool call is judged by re-running it, and a restatement against its
                // result: a number changed in either has no verdict the checker knows.
                && n.kind != computer::tool::TOOL_KIND
                && n.kind != computer::tool::RESTATEMENT_KIND
        })
    };
    let premises_of = |i: usize| -> Vec<usize> {
        let Some(node) = hdag.nodes.get(i) else {
            return Vec::new();
        };
        let mut deps: Vec<usize> = hdag
            .dependencies_of(&node.id)
            .filter_map(|d| hdag.index_of(d))
            .collect();
        deps.sort_by_key(|&d| position.get(d).copied().unwrap_or(usize::MAX));
        deps.dedup();
        deps
    };
    let mut sources: Vec<usize> = (0..hdag.nodes.len()).filter(|&i| copyable(i)).collect();
    sources.shuffle(rng);
    // Sources that a copyable step rests on first: they can start a chain.
    let mut starts_chain = vec![false; hdag.nodes.len()];
    for t in (0..hdag.nodes.len()).filter(|&t| copyable(t)) {
        for d in premises_of(t) {
            if let Some(x) = starts_chain.get_mut(d) {
                *x = true;
            }
        }
    }
    sources.sort_by_key(|&i| !starts_chain.get(i).copied().unwrap_or(false));
    let limit = count.min(MAX_PER_SESSION);
    let mut used: BTreeSet<usize> = BTreeSet::new();
    let mut out = Vec::new();
    for i in sources {
        if out.len() >= limit {
            break;
        }
        if used.contains(&i) {
            continue;
        }
        let premises: Vec<String> = premises_of(i)
            .iter()
            .filter_map(|&d| hdag.nodes.get(d).map(|n| n.content.clone()))
            .collect();
        let wanted = if out.len() % 2 == 0 {
            Difficulty::Obvious
        } else {
            Difficulty::Subtle
        };
        let Some(base) = bait_for(r, i, &premises, wanted, None, rng) else {
            continue;
        };
        used.insert(i);
        let base_claim = base.claim.clone();
        out.push(base);
        if out.len() >= limit {
            break;
        }
        // A follower: a step resting on the source, its copy resting on the honeypot.
        let mut followers: Vec<usize> = (0..hdag.nodes.len())
            .filter(|&t| copyable(t) && !used.contains(&t) && premises_of(t).contains(&i))
            .collect();
        followers.shuffle(rng);
        for t in followers {
            let premises: Vec<String> = premises_of(t)
                .iter()
                .filter_map(|&d| {
                    if d == i {
                        Some(base_claim.clone())
                    } else {
                        hdag.nodes.get(d).map(|n| n.content.clone())
                    }
                })
                .collect();
            let wanted = if out.len() % 2 == 0 {
                Difficulty::Obvious
            } else {
                Difficulty::Subtle
            };
            let rests_on = hdag.nodes.get(i).map(|n| n.id.clone());
            if let Some(b) = bait_for(r, t, &premises, wanted, rests_on, rng) {
                used.insert(t);
                out.push(b);
                break;
            }
        }
    }
    out
}

/// A honeypot copied from node `i` of `r.hdag`, judged against `premises`: its first
/// alteration (those of difficulty `wanted` first) that the Computer checker refutes.
fn bait_for(
    r: &Restricted,
    i: usize,
    premises: &[String],
    wanted: Difficulty,
    rests_on: Option<String>,
    rng: &mut impl RngCore,
) -> Option<Bait> {
    let node = r.hdag.nodes.get(i)?;
    let givens = r.givens.get(&node.id).cloned().unwrap_or_default();
    let mut atoms: BTreeSet<char> = BTreeSet::new();
    for text in premises.iter().chain(&givens) {
        atoms.extend(atoms_of(text).into_iter().map(|(_, c)| c));
    }
    let mut candidates = alterations(&node.content, &atoms);
    candidates.shuffle(rng);
    // Obvious and subtle errors in turn (the rubber-stamp rule reads both).
    candidates.sort_by_key(|(_, d)| *d != wanted);
    for (claim, difficulty) in candidates {
        let seed = Hash::of_parts("trust/v1/honeypot-check", &[claim.as_bytes()]);
        let vote = computer_vote(&claim, premises, &givens, &seed);
        if let Some(vote) = vote.filter(|v| v.is_error()) {
            return Some(Bait {
                source: node.id.clone(),
                claim,
                verdict: vote,
                difficulty,
                rests_on,
                calculation: None,
            });
        }
    }
    None
}

/// Where a honeypot citing premises up to position `after` (exclusive lower bound, `None`
/// for none) may go in a manifest of `len` entries: a random index in `after+1..=len`.
pub(crate) fn place(after: Option<usize>, len: usize, rng: &mut impl RngCore) -> usize {
    let lo = after.map_or(0, |a| a.saturating_add(1)).min(len);
    rng.gen_range(lo..=len)
}

/// Whole numbers in `text`: (byte range, value).
fn numbers_of(text: &str) -> Vec<(std::ops::Range<usize>, i128)> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes.get(i).is_some_and(u8::is_ascii_digit) {
            let start = i;
            while bytes.get(i).is_some_and(u8::is_ascii_digit) {
                i = i.saturating_add(1);
            }
            // A decimal's digits are left alone: changing one may still round to the
            // same stated value.
            let decimal = bytes.get(i) == Some(&b'.')
                && bytes
                    .get(i.saturating_add(1))
                    .is_some_and(u8::is_ascii_digit)
                || start.checked_sub(1).and_then(|p| bytes.get(p)) == Some(&b'.');
            if !decimal
                && i.saturating_sub(start) <= 12
                && let Ok(v) = text[start..i].parse::<i128>()
            {
                out.push((start..i, v));
            }
        } else {
            i = i.saturating_add(1);
        }
    }
    out
}

/// Single capital letters standing alone (propositional atoms): (byte offset, letter).
fn atoms_of(text: &str) -> Vec<(usize, char)> {
    let chars: Vec<(usize, char)> = text.char_indices().collect();
    chars
        .iter()
        .enumerate()
        .filter(|(k, (_, c))| {
            c.is_ascii_uppercase()
                && !k
                    .checked_sub(1)
                    .and_then(|p| chars.get(p))
                    .is_some_and(|(_, b)| b.is_alphanumeric())
                && !chars
                    .get(k.saturating_add(1))
                    .is_some_and(|(_, a)| a.is_alphanumeric())
        })
        .map(|(_, x)| *x)
        .collect()
}

/// Altered versions of `claim`, each with its difficulty: the last two whole numbers
/// changed, and the last atom swapped for another of `atoms`.
fn alterations(claim: &str, atoms: &BTreeSet<char>) -> Vec<(String, Difficulty)> {
    let mut out = Vec::new();
    let numbers = numbers_of(claim);
    for (range, v) in numbers.iter().rev().take(2) {
        let mut changed = vec![
            (v.saturating_add(1), Difficulty::Subtle),
            (v.saturating_add(2), Difficulty::Subtle),
            (v.saturating_mul(10), Difficulty::Obvious),
            (v.saturating_add(10), Difficulty::Obvious),
        ];
        if *v >= 2 {
            changed.push((v.saturating_sub(1), Difficulty::Subtle));
        }
        for (w, d) in changed {
            if w != *v {
                let text = format!("{}{w}{}", &claim[..range.start], &claim[range.end..]);
                out.push((text, d));
            }
        }
    }
    if let Some(&(at, atom)) = atoms_of(claim).last() {
        for other in atoms.iter().filter(|a| **a != atom) {
            let text = format!(
                "{}{other}{}",
                &claim[..at],
                &claim[at.saturating_add(atom.len_utf8())..]
            );
            out.push((text, Difficulty::Obvious));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng, rngs::StdRng};
    use trust_protocol::trace::Trace;

    use super::*;
    use crate::{
        decompose::{Options, decompose},
        session::prepare::restrict,
    };

    fn restricted(file: &str) -> Restricted {
        let text = std::fs::read_to_string(format!(
            "{}/../examples/traces/{file}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("trace");
        let h = decompose(&Trace::parse(&text).expect("parse"), &Options::default())
            .expect("decompose");
        restrict(&h, |t| t == Tier::Computer)
    }

    #[test]
    fn numbers_and_atoms_are_found_where_they_stand_alone() {
        let n: Vec<i128> = numbers_of("So 12 + 30 = 42, and 0.96 stays")
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(n, vec![12, 30, 42]);
        let a: Vec<char> = atoms_of("I use rule (A → B) to derive B.")
            .into_iter()
            .map(|(_, c)| c)
            .collect();
        assert_eq!(a, vec!['I', 'A', 'B', 'B']);
        let alt = alterations("So 12 + 30 = 42", &BTreeSet::new());
        assert!(alt.contains(&("So 12 + 30 = 43".to_string(), Difficulty::Subtle)));
        assert!(alt.contains(&("So 12 + 30 = 420".to_string(), Difficulty::Obvious)));
    }

    /// Every honeypot forged from the sample traces is refuted by an honest Computer seat
    /// judging what a seat receives, and differs from every real step.
    #[test]
    fn honest_computer_seats_judge_every_honeypot_wrong() {
        let mut planted = 0;
        for file in [
            "bakery-correct.txt",
            "fraction-correct.txt",
            "fraction-incorrect.txt",
            "rules-correct.txt",
            "rules-wrong.txt",
        ] {
            let r = restricted(file);
            for seed in 0..5 {
                let baits = forge(&r, 2, &mut StdRng::seed_from_u64(seed));
                for b in &baits {
                    let source = r
                        .hdag
                        .nodes
                        .iter()
                        .find(|n| n.id == b.source)
                        .expect("source");
                    assert!(!r.conclusions.contains(&b.source), "{file}: {b:?}");
                    assert!(
                        r.hdag.nodes.iter().all(|n| n.content != b.claim),
                        "{file}: {b:?}"
                    );
                    assert_ne!(source.content, b.claim);
                    // A follower's seats read its base honeypot in place of the premise
                    // the base copies.
                    let base = b.rests_on.as_ref().map(|s| {
                        let base = baits
                            .iter()
                            .find(|x| x.source == *s && x.rests_on.is_none())
                            .expect("a follower's base is planted");
                        (s.clone(), base.claim.clone())
                    });
                    let premises: Vec<String> = r
                        .hdag
                        .dependencies_of(&b.source)
                        .map(|d| match &base {
                            Some((s, claim)) if s == d => claim.clone(),
                            _ => r.hdag.nodes[r.hdag.index_of(d).unwrap()].content.clone(),
                        })
                        .collect();
                    let givens = r.givens.get(&b.source).cloned().unwrap_or_default();
                    let vote =
                        computer_vote(&b.claim, &premises, &givens, &Hash::sha256(b"any seat"));
                    assert_eq!(vote, Some(b.verdict), "{file}: {b:?}");
                    assert!(b.verdict.is_error(), "{file}: {b:?}");
                }
                planted += baits.len();
            }
        }
        assert!(
            planted >= 5 * 5,
            "only {planted} honeypots forged from 5 traces x 5 seeds"
        );
    }

    #[test]
    fn a_trace_with_nothing_to_alter_gets_no_honeypot() {
        let r = restricted("fraction-correct.txt");
        assert!(forge(&r, 0, &mut StdRng::seed_from_u64(1)).is_empty());
        let mut only_words = r.clone();
        for n in &mut only_words.hdag.nodes {
            n.content = "We should look at the problem again.".into();
        }
        assert!(forge(&only_words, 3, &mut StdRng::seed_from_u64(1)).is_empty());
    }
}
