//! Honeypots (paper §0.0.5.2): known-error segments a provider plants in its own
//! sessions, so that a seat approving everything shows itself, on every tier the session
//! has auditors for ([`forge`]).
//!
//! On the Computer tier, a honeypot is a step of the trace's own kind made wrong: one of
//! the trace's Computer tier steps with one number changed (off by one or two: *subtle*;
//! ten times or ten more: *obvious*) or, in a rule chain, with the derived atom swapped
//! for another of the trace (*obvious*). The provider keeps a candidate only when the
//! Computer checker, given exactly what a seat would get (the premises it cites, see
//! below, and the givens of the step it copies), calls it Invalid or Ungrounded; that is the known verdict it
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
//! On the ledger a honeypot looks like any segment: it takes the level, tier and weight
//! of the step it copies, its ciphertext is sealed the same way with the same givens (and
//! it names the same left-out segments as resting under it), it sits at a random place
//! after its premises, and every real segment carries a honeypot commitment too (one
//! nobody can open). It is never a conclusion; once the provider opens it after voting,
//! the contract leaves it out of the trace verdict.
//!
//! # Shape: what a manifest shows of a honeypot
//!
//! A coalition of seats sees the public manifest (each segment's level, tier, weight,
//! `depends_on`, `supports`, conclusion flag) and may look for honeypots in its shape.
//! Three marks gave them away, and each is now closed where the trace allows:
//!
//! - **Twins.** A honeypot that cited exactly its source's premises made a pair of
//!   segments with the same `depends_on`, and as nothing of the trace may rest on a
//!   planted error, the one of the two without a dependent (or with only honeypot
//!   dependents) was the honeypot. A honeypot now cites premises of its own
//!   ([`Bait::premises`]): its source's with one dropped, or one added, or one swapped
//!   for another (`Graph::variants`), an added one being among the few steps nearest
//!   before its source that already have a dependent (so it neither hides one of the
//!   trace's dead ends nor becomes the only thing resting on a step). The candidate is
//!   kept only when the Computer checker, given exactly those premises (what its seats
//!   get), returns the same verdict as with the source's: the error stays the planted
//!   one, not a missing premise. A premise set some step of the trace cites is used only
//!   when no step citing it has a dependent (a honeypot among such twins is not told
//!   apart by dependents); a source whose every variant fails is not copied (a
//!   follower, whose premises hold a honeypot and so match no step's, may keep its
//!   source's). A worded
//!   honeypot and its OPERATION cite one such set together, as a real STEP and its
//!   OPERATION rest on the same premises, checked as their seats check them (see
//!   [`worded`]).
//! - **Orphan OPERATIONs.** The OPERATION of a worded step supports that step; a copy
//!   of one would support nothing (a honeypot supports no real step, whose verdict it
//!   would make wrong), so such OPERATIONs are not copied. A trace whose
//!   Computer tier holds only the OPERATIONs of worded steps gets no Computer honeypot
//!   when those steps are left out.
//! - **Dead ends.** A honeypot that nothing rests on is a dead end, and "no dependents
//!   and not the conclusion" would pick out every honeypot. So honeypots come in chains:
//!   after a honeypot `A` copied from step `S`, a *follower* `B` is forged from a Computer
//!   step `T` that rests on `S`, with `S` replaced by `A` among its premises (`B` depends
//!   on `A`, and its seats read `A`'s altered claim as a premise; the checker must still
//!   refute `B` given that premise). `A` then has a dependent like a real step, and only
//!   honeypots ever rest on honeypots, so no error is planted in the trace (the contract
//!   opens a honeypot only when whatever rests on it is an opened honeypot, and the
//!   provider opens the whole set at once). But a follower is itself a *tail*: a dead end
//!   resting on a segment whose only dependent it is, a shape rare among a trace's own
//!   steps. So a session chains its honeypots at the odds that make its honeypots' tails
//!   and other dead ends as common, relative to each other, as the trace's own
//!   (`Graph::chain_odds`), and plants the others alone.
//!
//! What remains possible: with two honeypots a session, at least one of them is a dead
//! end (only honeypots may rest on a honeypot), while a trace's own steps are dead ends
//! less often (about two in five over the repository's traces), so "flag the dead ends",
//! or "flag the tails" in a trace with few dead ends of its own, still does better than
//! chance (`judging/tests/it/honeypot_shape.rs` measures it: a review's classifier of
//! twins, tails and orphan OPERATIONs went from precision 0.70 at recall 0.89 to 0.36
//! at recall 0.33, against 0.24 by chance). More honeypots a session, in fans (two
//! followers on one base: two dead ends, no tail), would narrow it further. A seat that
//! reads a honeypot's premises and its source's claims side by side (it holds both keys
//! only where it sits on both) may still notice a near copy: that is the limit of decoys
//! built from the trace's own steps.

use std::collections::{BTreeMap, BTreeSet};

use rand::{Rng, RngCore, seq::SliceRandom};
use trust_protocol::{
    Hash, Vote,
    hdag::{AbstractionLevel, Relationship},
    tx::{Difficulty, MAX_DEPENDENCIES, Tier},
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
    /// The HDAG ids of the trace's steps it cites (its `depends_on`): the honeypot's own
    /// premises, as a real OPERATION rests on what its STEP rests on. `None`: those of
    /// the source STEP's OPERATION.
    pub premises: Option<Vec<String>>,
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
    /// The HDAG ids of the trace's steps it cites (its `depends_on`, besides the
    /// honeypot a follower rests on): premises of its own, not a copy of its source's
    /// (see the module doc). `None`: exactly its source's (but the premise `rests_on`
    /// replaces).
    pub premises: Option<Vec<String>>,
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

/// The shape of the kept graph of `r` that forging reads: each node's place in dependency
/// order, its premises (in that order), how many kept or left-out nodes rest on it, and
/// every premise set a node of the trace cites.
pub(crate) struct Graph {
    /// Place of each node in dependency order.
    position: Vec<usize>,
    /// Premises of each node (indices), in dependency order.
    premises: Vec<Vec<usize>>,
    /// How many nodes, kept or left out, rest on each node.
    dependents: Vec<usize>,
    /// Whether each node may be cited by a honeypot besides its own premises: not a
    /// conclusion, not an OPERATION of another node, and with a dependent already (so that
    /// citing it neither hides one of the trace's dead ends nor makes a honeypot the only
    /// thing resting on it).
    citable: Vec<bool>,
    /// The premise sets (sorted indices) the trace's own nodes cite, each with whether
    /// one of the nodes citing it has a dependent.
    taken: BTreeMap<Vec<usize>, bool>,
}

impl Graph {
    pub(crate) fn of(r: &Restricted) -> Graph {
        let hdag = &r.hdag;
        let n = hdag.nodes.len();
        let index = hdag.positions();
        let mut position = vec![usize::MAX; n];
        for (pos, &node) in dependency_order(hdag).iter().enumerate() {
            if let Some(p) = position.get_mut(node) {
                *p = pos;
            }
        }
        let mut premises: Vec<Vec<usize>> = vec![Vec::new(); n];
        let mut dependents = vec![0usize; n];
        for e in &hdag.edges {
            if e.relationship == Relationship::DependsOn
                && let (Some(&from), Some(&to)) =
                    (index.get(e.from.as_str()), index.get(e.to.as_str()))
                && let Some(p) = premises.get_mut(from)
                && !p.contains(&to)
            {
                p.push(to);
                if let Some(d) = dependents.get_mut(to) {
                    *d = d.saturating_add(1);
                }
            }
        }
        for d in &r.dropped {
            for id in &d.depends_on {
                if let Some(x) = index.get(id.as_str()).and_then(|&i| dependents.get_mut(i)) {
                    *x = x.saturating_add(1);
                }
            }
        }
        for p in &mut premises {
            p.sort_by_key(|&d| position.get(d).copied().unwrap_or(usize::MAX));
        }
        let citable = hdag
            .nodes
            .iter()
            .enumerate()
            .map(|(i, node)| {
                !r.conclusions.contains(&node.id)
                    && !r.supports.contains_key(&node.id)
                    && dependents.get(i).is_some_and(|&d| d > 0)
            })
            .collect();
        let mut taken: BTreeMap<Vec<usize>, bool> = BTreeMap::new();
        for (p, d) in premises.iter().zip(&dependents) {
            let cited = taken.entry(canonical(p)).or_default();
            *cited = *cited || *d > 0;
        }
        Graph {
            position,
            premises,
            dependents,
            citable,
            taken,
        }
    }

    /// The premises of node `i`.
    pub(crate) fn premises(&self, i: usize) -> &[usize] {
        self.premises.get(i).map_or(&[], Vec::as_slice)
    }

    /// `set` in the order a seat reads it (dependency order).
    fn ordered(&self, set: &[usize]) -> Vec<usize> {
        let mut out = set.to_vec();
        out.sort_by_key(|&d| self.position.get(d).copied().unwrap_or(usize::MAX));
        out
    }

    /// The odds that a honeypot gets a follower (see the module doc), chosen so that the
    /// honeypots' dead ends look like the trace's own. Among the trace's candidate steps
    /// (not a conclusion, no OPERATION of a step), `tails` are dead ends resting on a
    /// node whose only dependent they are, `ends` the other dead ends. A chain makes one
    /// honeypot with a dependent and one tail, two lone honeypots make two plain dead
    /// ends; chains at odds `q` make tails `q/2` of the honeypots and plain dead ends
    /// `1 − q`, in the trace's proportion when `q = 2·tails / (2·tails + ends)`. A trace
    /// without dead ends gets chains always (one honeypot of the two then has a
    /// dependent).
    fn chain_odds(&self, r: &Restricted) -> f64 {
        let (mut tails, mut ends) = (0usize, 0usize);
        for (i, node) in r.hdag.nodes.iter().enumerate() {
            if r.conclusions.contains(&node.id)
                || r.supports.contains_key(&node.id)
                || self.dependents.get(i).is_some_and(|&d| d > 0)
            {
                continue;
            }
            let tail = self
                .premises(i)
                .iter()
                .any(|&d| self.dependents.get(d) == Some(&1));
            if tail {
                tails = tails.saturating_add(1);
            } else {
                ends = ends.saturating_add(1);
            }
        }
        let twice = tails.saturating_mul(2);
        if twice.saturating_add(ends) == 0 {
            return 1.0;
        }
        twice as f64 / twice.saturating_add(ends) as f64
    }

    /// The premise sets a honeypot copying node `source`, whose premises would be `base`,
    /// may cite, in the order to try them: `base` with one premise dropped or one added
    /// (of the few citable nodes nearest before `source` in dependency order, or after it
    /// where too few are before; not `source` nor `avoid`), then with one swapped for another, each group in a random order,
    /// those that no node of the trace cites first. A set some node of the trace cites
    /// (`base` among them, tried first of those) comes after, and only when none of the
    /// nodes citing it has a dependent: a honeypot citing it then has twins, but no twin
    /// that a dependent tells from it.
    fn variants(
        &self,
        source: usize,
        base: &[usize],
        avoid: Option<usize>,
        rng: &mut impl RngCore,
    ) -> Vec<Vec<usize>> {
        /// How many of the nearest citable nodes a honeypot may add to its premises.
        const NEAREST: usize = 3;
        let at = self.position.get(source).copied().unwrap_or(0);
        let mut pool: Vec<usize> = (0..self.position.len())
            .filter(|&j| {
                j != source
                    && Some(j) != avoid
                    && !base.contains(&j)
                    && self.citable.get(j).copied().unwrap_or(false)
            })
            .collect();
        // The nearest before the source first; after it only where too few are before
        // (the manifest does not show where the source stands, only that the honeypot
        // comes after what it cites).
        pool.sort_by_key(|&j| {
            let p = self.position.get(j).copied().unwrap_or(usize::MAX);
            (p > at, p.abs_diff(at))
        });
        pool.truncate(NEAREST);
        let mut once: Vec<Vec<usize>> = Vec::new();
        for k in base {
            once.push(base.iter().copied().filter(|d| d != k).collect());
        }
        for &j in &pool {
            once.push(base.iter().copied().chain([j]).collect());
        }
        let mut twice: Vec<Vec<usize>> = Vec::new();
        for k in base {
            for &j in &pool {
                twice.push(base.iter().copied().filter(|d| d != k).chain([j]).collect());
            }
        }
        once.shuffle(rng);
        twice.shuffle(rng);
        let mut seen: BTreeSet<Vec<usize>> = BTreeSet::new();
        let all: Vec<Vec<usize>> = once
            .into_iter()
            .chain(twice)
            .filter(|s| seen.insert(canonical(s)))
            .collect();
        let free = all
            .iter()
            .filter(|s| !self.taken.contains_key(&canonical(s)));
        let twinned = std::iter::once(base)
            .chain(all.iter().map(Vec::as_slice))
            .filter(|s| self.taken.get(&canonical(s)) == Some(&false));
        free.map(|s| self.ordered(s))
            .chain(twinned.map(|s| self.ordered(s)))
            .collect()
    }
}

/// A premise set as compared with others: sorted, without repeats.
fn canonical(set: &[usize]) -> Vec<usize> {
    let mut c = set.to_vec();
    c.sort_unstable();
    c.dedup();
    c
}

/// Up to `count` honeypots forged from the kept Computer-tier steps of `r` (one per step
/// at most, conclusions, OPERATIONs and the problem statement never copied), obvious and
/// subtle ones in turn where the step allows, each citing premises of its own (see the
/// module doc) and followed, at the odds that make the honeypots' dead ends look like
/// the trace's, by a honeypot forged from a step that rests on its source. Fewer, or
/// none, when the checker cannot refute enough altered steps: a honeypot whose verdict
/// is not known for sure is never planted.
pub fn forge_computer(r: &Restricted, count: usize, rng: &mut impl RngCore) -> Vec<Bait> {
    let hdag = &r.hdag;
    let g = Graph::of(r);
    let copyable = |i: usize| {
        hdag.nodes.get(i).is_some_and(|n| {
            Tier::from(n.primary_auditor) == Tier::Computer
                && n.abstraction_level != AbstractionLevel::Goal
                && !r.conclusions.contains(&n.id)
                // An OPERATION supports the step whose calculation it is: a copy would
                // support nothing, which no OPERATION of the trace does.
                && !r.supports.contains_key(&n.id)
                // A tool call is judged by re-running it, and a restatement against its
                // result: a number changed in either has no verdict the checker knows.
                && n.kind != computer::tool::TOOL_KIND
                && n.kind != computer::tool::RESTATEMENT_KIND
        })
    };
    let mut sources: Vec<usize> = (0..hdag.nodes.len()).filter(|&i| copyable(i)).collect();
    sources.shuffle(rng);
    // Sources that a copyable step rests on first: they can start a chain.
    let mut starts_chain = vec![false; hdag.nodes.len()];
    for t in (0..hdag.nodes.len()).filter(|&t| copyable(t)) {
        for &d in g.premises(t) {
            if let Some(x) = starts_chain.get_mut(d) {
                *x = true;
            }
        }
    }
    sources.sort_by_key(|&i| !starts_chain.get(i).copied().unwrap_or(false));
    let odds = g.chain_odds(r);
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
        let wanted = if out.len() % 2 == 0 {
            Difficulty::Obvious
        } else {
            Difficulty::Subtle
        };
        let Some(base) = bait_for(r, &g, i, None, wanted, rng) else {
            continue;
        };
        used.insert(i);
        let base_claim = base.claim.clone();
        out.push(base);
        if out.len() >= limit || !rng.gen_bool(odds) {
            continue;
        }
        // A follower: a step resting on the source, its copy resting on the honeypot.
        let mut followers: Vec<usize> = (0..hdag.nodes.len())
            .filter(|&t| copyable(t) && !used.contains(&t) && g.premises(t).contains(&i))
            .collect();
        followers.shuffle(rng);
        for t in followers {
            let wanted = if out.len() % 2 == 0 {
                Difficulty::Obvious
            } else {
                Difficulty::Subtle
            };
            let stand_in = (i, base_claim.as_str());
            if let Some(b) = bait_for(r, &g, t, Some(stand_in), wanted, rng) {
                used.insert(t);
                out.push(b);
                break;
            }
        }
    }
    out
}

/// A honeypot copied from node `i` of `r.hdag`: its first alteration (those of
/// difficulty `wanted` first) that the Computer checker refutes given the premises of
/// `i` (for a follower, `stand_in` names the premise whose honeypot it rests on instead,
/// with that honeypot's claim), and that it still refutes, with the same verdict, given a
/// premise set of its own (the first of [`Graph::variants`] that does). A follower,
/// whose premises hold a honeypot and so match no step's, may keep its source's premises
/// when no variant is refuted.
fn bait_for(
    r: &Restricted,
    g: &Graph,
    i: usize,
    stand_in: Option<(usize, &str)>,
    wanted: Difficulty,
    rng: &mut impl RngCore,
) -> Option<Bait> {
    let node = r.hdag.nodes.get(i)?;
    let givens = r.givens.get(&node.id).cloned().unwrap_or_default();
    let replaced = stand_in.map(|(s, _)| s);
    let base: Vec<usize> = g
        .premises(i)
        .iter()
        .copied()
        .filter(|&d| Some(d) != replaced)
        .collect();
    // What a seat reads as premises, in dependency order: the stand-in honeypot's claim
    // where the premise it replaces stood.
    let texts = |set: &[usize]| -> Vec<String> {
        let mut all: Vec<usize> = set.to_vec();
        all.extend(replaced);
        g.ordered(&all)
            .into_iter()
            .filter_map(|d| match stand_in {
                Some((s, claim)) if s == d => Some(claim.to_string()),
                _ => r.hdag.nodes.get(d).map(|n| n.content.clone()),
            })
            .collect()
    };
    let premises = texts(&base);
    let mut atoms: BTreeSet<char> = BTreeSet::new();
    for text in premises.iter().chain(&givens) {
        atoms.extend(atoms_of(text).into_iter().map(|(_, c)| c));
    }
    let mut candidates = alterations(&node.content, &atoms);
    candidates.shuffle(rng);
    // Obvious and subtle errors in turn (the rubber-stamp rule reads both).
    candidates.sort_by_key(|(_, d)| *d != wanted);
    let mut sets = g.variants(i, &base, replaced, rng);
    if stand_in.is_some() {
        sets.push(base.clone());
    }
    // A manifest entry cites at most MAX_DEPENDENCIES segments (a follower's base among
    // them).
    sets.retain(|s| s.len().saturating_add(usize::from(stand_in.is_some())) <= MAX_DEPENDENCIES);
    for (claim, difficulty) in candidates {
        let seed = Hash::of_parts("trust/v1/honeypot-check", &[claim.as_bytes()]);
        let Some(vote) = computer_vote(&claim, &premises, &givens, &seed).filter(|v| v.is_error())
        else {
            continue;
        };
        let Some(set) = sets
            .iter()
            .find(|s| computer_vote(&claim, &texts(s), &givens, &seed) == Some(vote))
        else {
            continue;
        };
        return Some(Bait {
            source: node.id.clone(),
            claim,
            verdict: vote,
            difficulty,
            rests_on: stand_in
                .and_then(|(s, _)| r.hdag.nodes.get(s))
                .map(|n| n.id.clone()),
            premises: Some(
                set.iter()
                    .filter_map(|&d| r.hdag.nodes.get(d).map(|n| n.id.clone()))
                    .collect(),
            ),
            calculation: None,
        });
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
                    // What its seats read: the premises it was forged with (its own, not
                    // its source's), and a follower's base honeypot.
                    let own = b.premises.as_ref().expect("premises of its own");
                    let mut premises: Vec<String> = own
                        .iter()
                        .map(|d| r.hdag.nodes[r.hdag.index_of(d).unwrap()].content.clone())
                        .collect();
                    premises.extend(base.map(|(_, claim)| claim));
                    // No twin a dependent tells from it: a step citing exactly its
                    // premises has no dependent (a follower cites a honeypot, no step).
                    fn sorted(mut v: Vec<&str>) -> Vec<&str> {
                        v.sort_unstable();
                        v
                    }
                    let mine = sorted(own.iter().map(String::as_str).collect());
                    for n in &r.hdag.nodes {
                        let twin = sorted(r.hdag.dependencies_of(&n.id).collect()) == mine;
                        let cited = r
                            .hdag
                            .nodes
                            .iter()
                            .any(|x| r.hdag.dependencies_of(&x.id).any(|d| d == n.id));
                        assert!(
                            b.rests_on.is_some() || !twin || !cited,
                            "{file}: {b:?} twins {}, which has a dependent",
                            n.id
                        );
                    }
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
