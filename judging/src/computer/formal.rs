//! The Computer tier on formal proofs (ProofGrid's NDL, NDL_f, Hilbert-style and
//! equational proofs), one segment at a time.
//!
//! A recognised proof is cut into its primitive steps ([`crate::proof::steps`]):
//! each step is one segment, and one more segment, the trace's final answer, carries the
//! proof's **structure**: the plan with every step's text removed and every formula a step
//! or hypothesis asserts replaced by an opaque atom ([`ProofPlan::skeleton`]), and the
//! manifest position of each step. Every step segment rests on the structure segment,
//! so all seats of the session read the same structure (the manifest names its blob).
//!
//! - The **structure seat** checks that the structure holds (scopes, citations, names,
//!   blocks, no hypothesis left open, the conclusion is exactly the goal:
//!   [`check_skeleton`]), that it is the structure of the problem the trace states, and
//!   that the manifest matches it: each step is a Computer segment resting on exactly the
//!   segments of what it cites and of its active hypotheses.
//! - A **step seat** checks that its document is the structure's step (its role, what it
//!   cites and how, its active hypotheses, its manifest position), that each result it
//!   cites is the claim of the step segment it cites (read from that segment), that each
//!   active hypothesis is assumed by the segment of its opening step, that the problem is
//!   the one the trace states, and then the step itself ([`check_step`]).
//!
//! So the facts that span steps are checked by the structure seat and bound to each
//! step's own document by its seat: a provider that cuts a wrong proof so that each piece
//! looks right (a result cited from a closed block, a hypothesis presented as a premise, a
//! step that cites one thing to its seat and another to the structure) gets a seat that
//! votes it invalid or abstains, never a PASS. A payload that does not read, or a
//! document that lacks what the check needs, is an abstention.

use std::collections::BTreeSet;

use crate::proof::{
    Claim, ProofPlan, Source, StepDoc, StepRole, StepVerdict, check_skeleton, check_step,
    limits::{MAX_BLOCK_DEPTH, MAX_NESTING, STRUCTURE_WORK_BUDGET},
    structure_work,
};
use serde::{Deserialize, Serialize};
use trust_protocol::{Vote, seal::SegmentDoc, tx::Tier};

/// What a segment of a formal proof carries besides its claim
/// ([`SegmentDoc::proof`](trust_protocol::seal::SegmentDoc)).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ProofDoc {
    /// One primitive step: what its seat needs to check it.
    Step {
        /// The step as its seat sees it.
        step: StepDoc,
    },
    /// The proof's structure, carried by the trace's final answer.
    Structure {
        /// The plan without its formulas ([`ProofPlan::skeleton`]).
        skeleton: ProofPlan,
        /// The manifest position of each step's segment, in step order.
        segments: Vec<u16>,
    },
}

impl ProofDoc {
    /// The payload as it travels in a segment document.
    pub fn to_value(&self) -> Option<serde_json::Value> {
        serde_json::to_value(self).ok()
    }

    /// Reads a payload; a reason when it is not one.
    pub fn from_value(v: &serde_json::Value) -> Result<Self, String> {
        serde_json::from_value(v.clone())
            .map_err(|e| format!("the proof payload does not read: {e}"))
    }
}

/// What a seat of a formal-proof segment knows: its document's payload, the payloads of
/// the segments it rests on, and the session's public manifest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FormalView {
    /// The segment's manifest position.
    pub position: u16,
    /// Its payload, or why it does not read.
    pub doc: Result<ProofDoc, String>,
    /// The segments it rests on: manifest position and payload (`None`: none, or not one
    /// that reads).
    pub cited: Vec<(u16, Option<ProofDoc>)>,
    /// Every segment of the session in manifest order: tier and `depends_on`.
    pub manifest: Vec<(Tier, Vec<u16>)>,
}

impl FormalView {
    /// The view of a segment whose document carries a proof payload (`None` for any
    /// other): `cited` are the segments it rests on with their documents, `manifest` the
    /// session's segments (tier and `depends_on`), kept only for the structure seat.
    pub fn of(
        position: u16,
        doc: &SegmentDoc,
        cited: &[(u16, Option<&SegmentDoc>)],
        manifest: impl FnOnce() -> Vec<(Tier, Vec<u16>)>,
    ) -> Option<Self> {
        let payload = doc.proof.as_ref()?;
        let doc = ProofDoc::from_value(payload);
        let manifest = if matches!(doc, Ok(ProofDoc::Structure { .. })) {
            manifest()
        } else {
            Vec::new()
        };
        Some(Self {
            position,
            doc,
            cited: cited
                .iter()
                .map(|(p, d)| {
                    (
                        *p,
                        d.and_then(|d| d.proof.as_ref())
                            .and_then(|v| ProofDoc::from_value(v).ok()),
                    )
                })
                .collect(),
            manifest,
        })
    }
}

/// A formal-proof seat's vote and its reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The vote (an abstention when the seat cannot check the step).
    pub vote: Vote,
    /// Why, in words that quote no formula.
    pub reason: String,
}

fn abstain(why: impl Into<String>) -> Decision {
    Decision {
        vote: Vote::Abstain,
        reason: why.into(),
    }
}

/// An abstention because the proof's own payload exceeds a stated limit of the network
/// (a structure larger than a proof of its steps can be, or one whose check exceeds
/// [`STRUCTURE_WORK_BUDGET`]): the provider pays for it when a quorum of the segment's
/// seats agrees, so a provider cannot hold seats with a skeleton built to be slow for free.
fn payload_abstain(why: impl Into<String>) -> Decision {
    Decision {
        vote: Vote::PayloadAbstain,
        reason: format!(
            "{}; the provider's proof is at fault (the provider pays when a quorum of seats agrees)",
            why.into()
        ),
    }
}

fn invalid(why: impl Into<String>) -> Decision {
    Decision {
        vote: Vote::Invalid,
        reason: why.into(),
    }
}

fn decision(v: StepVerdict) -> Decision {
    match v {
        StepVerdict::Valid => Decision {
            vote: Vote::Valid,
            reason: "the proof step checks (formal proof checker)".into(),
        },
        StepVerdict::Invalid {
            kind,
            public_reason,
            ..
        } => invalid(format!("{kind} error: {public_reason}")),
        StepVerdict::Abstain { reason } => abstain(reason),
    }
}

/// Whether `problem` is the problem the trace states: its text is among the seat's
/// givens and reads as `problem`.
fn states(givens: &[String], problem_text: &str, problem: &crate::proof::Problem) -> bool {
    givens.iter().any(|g| g.trim() == problem_text.trim())
        && crate::proof::Problem::parse(problem_text) == *problem
}

/// Most citations one step of an honest cut carries (a `from` step over its five
/// justifications, each named, is about a dozen): a document with more is refused
/// unread, so a provider cannot make a seat's check quadratic in its payload.
const MAX_CITES: usize = 64;

/// Whether a skeleton's tables are no larger than a proof of its steps makes them: every
/// step cites at most [`MAX_CITES`], every block and hypothesis and name belongs to a
/// step or a premise, and the session holds its steps.
fn within_bounds(sk: &ProofPlan) -> bool {
    let n = sk.steps.len();
    n <= trust_protocol::tx::MAX_SEGMENTS
        && sk.steps.iter().all(|s| {
            s.cites.len() <= MAX_CITES
                && s.scope_path.len() <= MAX_BLOCK_DEPTH.saturating_add(MAX_NESTING)
        })
        && sk.blocks.len() <= n.saturating_mul(2).saturating_add(1)
        && sk.hypotheses.len() <= n
        && sk.bindings.len() <= n.saturating_add(sk.problem.premises.len())
}

/// The Computer tier's decision on a segment of a formal proof whose text is `claim`.
pub fn judge(view: &FormalView, claim: &str, givens: &[String]) -> Decision {
    match &view.doc {
        Err(why) => abstain(why.clone()),
        Ok(ProofDoc::Structure { skeleton, segments }) => {
            let d = judge_structure(view, skeleton, segments, givens);
            if d.vote != Vote::Valid || answer_agrees(skeleton, claim) {
                return d;
            }
            invalid("the stated final answer is not the formula the proof derives")
        }
        // What the outcome shows as the segment's text is the step that was checked.
        Ok(ProofDoc::Step { step }) if claim.trim() != step.text.trim() => {
            invalid("the segment's text is not the step its document holds")
        }
        Ok(ProofDoc::Step { step }) => judge_step(view, step, givens),
    }
}

/// Whether the trace's stated final answer (`claim`, the structure segment's text) agrees
/// with what the proof derives, compared as formulas read literally (`(~ ~ P)` is not `P`,
/// as Athena reads it). An answer that reads as no formula over the problem's atoms (prose,
/// `QED`, the decomposer's stand-in step line for an empty answer, an equational answer)
/// is not compared: only such a formula that differs from the conclusion's is a wrong
/// answer.
fn answer_agrees(sk: &ProofPlan, claim: &str) -> bool {
    let Some(Claim::Formula(derived)) = sk
        .conclusion
        .and_then(|c| sk.steps.get(c))
        .and_then(|s| s.claim.as_ref())
    else {
        return true;
    };
    let text = claim.trim();
    let text = text.strip_prefix("Final Output:").unwrap_or(text).trim();
    let text = text.trim_matches('`').trim().trim_end_matches('.').trim();
    // A proof whose conclusion is not its goal fails at the step that says so; the answer
    // is compared only with a conclusion the proof may stand on.
    if matches!(&sk.problem.goal, Some(Claim::Formula(goal)) if goal != derived) {
        return true;
    }
    let Ok(stated) = crate::proof::parse_formula(text) else {
        return true;
    };
    // Only a formula over the problem's own atoms is an answer: `QED` or `Done` read as
    // atoms, and say nothing about the goal.
    let mut known = Vec::new();
    for p in &sk.problem.premises {
        p.formula.atoms_into(&mut known);
    }
    if let Some(Claim::Formula(goal)) = &sk.problem.goal {
        goal.atoms_into(&mut known);
    }
    derived.atoms_into(&mut known);
    let mut used = Vec::new();
    stated.atoms_into(&mut used);
    !used.iter().all(|a| known.contains(a)) || stated == *derived
}

/// The segments step `t` of `sk` must rest on: those of what it cites and of its active
/// hypotheses' opening steps, and the structure's own.
fn expected_deps(
    sk: &ProofPlan,
    segments: &[u16],
    t: usize,
    structure: u16,
) -> Option<BTreeSet<u16>> {
    let step = sk.steps.get(t)?;
    let open = |h: usize| {
        sk.hypotheses
            .get(h)
            .and_then(|h| segments.get(h.open_step))
            .copied()
    };
    let mut out = BTreeSet::from([structure]);
    for c in &step.cites {
        match c.source {
            Source::Step(k) => {
                out.insert(*segments.get(k)?);
            }
            Source::Hypothesis(h) => {
                out.insert(open(h)?);
            }
            Source::Premise(_) | Source::Axiom(_) | Source::Identity(_) => {}
        }
    }
    for h in &step.active_hypotheses {
        out.insert(open(*h)?);
    }
    Some(out)
}

fn judge_structure(
    view: &FormalView,
    sk: &ProofPlan,
    segments: &[u16],
    givens: &[String],
) -> Decision {
    if !within_bounds(sk) {
        return payload_abstain("the proof's structure is larger than a proof of its steps can be");
    }
    // Past the stated budget the seat abstains rather than run a check whose cost the
    // provider chose; it never votes Invalid on a structure it did not check.
    if structure_work(sk) > STRUCTURE_WORK_BUDGET {
        return payload_abstain(
            "checking the proof's structure needs more work than the network's stated budget",
        );
    }
    if !states(givens, &sk.problem_text, &sk.problem) {
        return abstain("the proof's problem is not among what this seat received");
    }
    if segments.len() != sk.steps.len() {
        return invalid("the proof's structure does not place every step in a segment");
    }
    let distinct: BTreeSet<u16> = segments
        .iter()
        .copied()
        .filter(|p| *p != u16::MAX)
        .collect();
    let audited = segments.iter().filter(|p| **p != u16::MAX).count();
    if distinct.len() < audited || distinct.contains(&view.position) {
        return invalid("the proof's structure places two steps in one segment");
    }
    for t in 0..sk.steps.len() {
        let Some(&pos) = segments.get(t) else {
            return invalid("the proof's structure does not place every step in a segment");
        };
        if pos == u16::MAX {
            return abstain("a step of the proof is not audited in this session");
        }
        let Some((tier, deps)) = view.manifest.get(usize::from(pos)) else {
            return invalid("the proof's structure places a step outside the session");
        };
        if *tier != Tier::Computer {
            return abstain("a step of the proof is not judged by the Computer tier");
        }
        let Some(expected) = expected_deps(sk, segments, t, view.position) else {
            return invalid("a step of the proof cites what the structure does not hold");
        };
        if expected.len() > trust_protocol::tx::MAX_DEPENDENCIES {
            return payload_abstain(
                "a step of the proof rests on more segments than a segment may cite",
            );
        }
        let actual: BTreeSet<u16> = deps.iter().copied().collect();
        if actual != expected {
            return invalid(
                "a step's segment does not rest on exactly the segments of what it cites",
            );
        }
    }
    decision(check_skeleton(sk))
}

fn judge_step(view: &FormalView, step: &StepDoc, givens: &[String]) -> Decision {
    if step.cites.len() > MAX_CITES || step.hypotheses.len() > MAX_BLOCK_DEPTH {
        return payload_abstain("the step cites more than a proof step can");
    }
    // The structure every seat of the session reads, from the segment it rests on.
    let mut structures = view.cited.iter().filter_map(|(pos, d)| match d {
        Some(ProofDoc::Structure { skeleton, segments }) => Some((*pos, skeleton, segments)),
        _ => None,
    });
    let Some((structure, sk, segments)) = structures.next() else {
        return abstain("the step does not rest on the proof's structure");
    };
    if structures.next().is_some() {
        return invalid("the step rests on two structures of one proof");
    }
    if !states(givens, &sk.problem_text, &sk.problem) || step.problem != sk.problem {
        return abstain("the step's problem is not among what this seat received");
    }
    let Some(shape) = sk.steps.get(step.index) else {
        return invalid("the step is not a step of the proof's structure");
    };
    if segments.get(step.index) != Some(&view.position) {
        return invalid("the step is not where the proof's structure places it");
    }
    if step.language != sk.language || step.role != shape.role {
        return invalid("the step is not the kind of step the proof's structure says");
    }
    // What it cites, and how, is what the structure says.
    let same_shape = step.cites.len() == shape.cites.len()
        && step.cites.iter().zip(&shape.cites).all(|(a, b)| {
            a.source == b.source && a.name == b.name && a.asserted == b.asserted && a.role == b.role
        });
    if !same_shape {
        return invalid("the step cites other things than the proof's structure says");
    }
    if step.hypotheses.len() != shape.active_hypotheses.len() {
        return invalid("the step's active hypotheses are not those of the proof's structure");
    }
    let previous_label = step
        .index
        .checked_sub(1)
        .and_then(|p| sk.steps.get(p))
        .and_then(|p| p.label.clone());
    if step.previous_label != previous_label {
        return invalid("the step's previous line is not the one of the proof's structure");
    }
    // The structure keeps the real claim of the conclusion (and of an equational start).
    let kept = |k: usize| {
        Some(k) == sk.conclusion || (sk.language == crate::proof::Language::Equational && k == 0)
    };
    if kept(step.index) && step.claim != shape.claim {
        return invalid("the step's claim is not the proof's conclusion the structure states");
    }
    // The segments it rests on are exactly those of what it cites.
    let Some(expected) = expected_deps(sk, segments, step.index, structure) else {
        return invalid("the step cites what the proof's structure does not hold");
    };
    let actual: BTreeSet<u16> = view.cited.iter().map(|(p, _)| *p).collect();
    if actual != expected {
        return abstain("the step's segment does not rest on exactly the segments it cites");
    }
    let doc_at = |pos: u16| {
        view.cited.iter().find_map(|(p, d)| match d {
            Some(ProofDoc::Step { step }) if *p == pos => Some(step),
            _ => None,
        })
    };
    // Each cited claim is what its source says.
    for c in &step.cites {
        let ok = match c.source {
            Source::Premise(i) => step
                .problem
                .premises
                .get(i)
                .is_some_and(|p| c.claim == Claim::Formula(p.formula.clone()) && c.asserted),
            Source::Axiom(i) => step
                .problem
                .axioms
                .get(i)
                .is_some_and(|a| c.claim == Claim::Formula(a.schema.clone())),
            Source::Identity(i) => step
                .problem
                .identities
                .get(i)
                .is_some_and(|e| c.claim == Claim::Equation(e.lhs.clone(), e.rhs.clone())),
            Source::Step(k) => segments.get(k).and_then(|p| doc_at(*p)).is_some_and(|d| {
                d.index == k
                    && d.claim.as_ref() == Some(&c.claim)
                    && (d.role != StepRole::Definition) == c.asserted
            }),
            Source::Hypothesis(h) => sk
                .hypotheses
                .get(h)
                .and_then(|h| segments.get(h.open_step))
                .and_then(|p| doc_at(*p))
                .is_some_and(|d| {
                    matches!(d.role, StepRole::OpenHypothesis(_))
                        && d.claim.as_ref() == Some(&c.claim)
                }),
        };
        if !ok {
            return invalid("a result the step cites is not what its source states");
        }
    }
    // Each active hypothesis is assumed by its opening step.
    for (f, h) in step.hypotheses.iter().zip(&shape.active_hypotheses) {
        let assumed = sk
            .hypotheses
            .get(*h)
            .and_then(|h| segments.get(h.open_step))
            .and_then(|p| doc_at(*p))
            .is_some_and(|d| {
                matches!(d.role, StepRole::OpenHypothesis(_))
                    && d.claim == Some(Claim::Formula(f.clone()))
            });
        if !assumed {
            return invalid("an active hypothesis of the step is not assumed by its block");
        }
    }
    decision(check_step(step))
}
