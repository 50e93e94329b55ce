//! A local preview of a network audit: what a network whose only auditors are Computer
//! seats would decide for a trace, without the network.
//!
//! The HDAG is cut down exactly as a provider cuts it for such a network
//! ([`crate::session::prepare::restrict`]): other tiers' segments are left out, their text travels
//! as givens. Each kept segment is judged by the same [`ComputerAuditor`] a seat runs, on
//! the same [`SegmentView`] (claim, cited claims in manifest order, givens). Every seat of
//! a Computer segment reaches the same decision, so a vote is the segment's verdict and an
//! abstention leaves it Undecided (no higher tier to escalate to). Propagation, the
//! conclusion and the three-valued trace verdict are the contract's own functions
//! ([`trust_contracts::tally`]). `trust-node check` and `trust-node bench quality` print
//! this; a network test checks that the network agrees with it.

pub mod turns;

use std::collections::BTreeMap;

use trust_contracts::{
    LocalVerdict, SegmentVerdict, TraceVerdict,
    tally::{self, TraceTally},
};
use trust_protocol::{
    Hash, Vote, hdag::Hdag, seal::SegmentDoc, trace::Trace, tx::Tier, units::Ppm,
};
use trust_sandbox::Execute;

use crate::{
    computer::formal::FormalView,
    decompose::{PROBLEM_KIND, dependency_order},
    judge::{ComputerAuditor, Decision, SegmentView},
    session::{
        DEFAULT_QUORUM,
        prepare::{self, Restricted},
    },
};

/// One segment of the preview, in HDAG order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreviewSegment {
    /// HDAG node id.
    pub id: String,
    /// The tier it is routed to.
    pub tier: Tier,
    /// Its text.
    pub content: String,
    /// The Computer judge's decision; `None` for a segment left out (another tier).
    pub decision: Option<Decision>,
    /// Its final verdict after propagation (`Undecided` when not judged).
    pub verdict: SegmentVerdict,
    /// Whether it holds the trace's final output.
    pub conclusion: bool,
    /// The problem statement: context for every seat, not a segment.
    pub given: bool,
    /// For an OPERATION: the id of the STEP whose calculation it is.
    pub supports: Option<String>,
}

impl PreviewSegment {
    /// Whether it is one of the trace's claims (not the problem, not an OPERATION of a
    /// STEP): what the coverage and the trace quorum count.
    pub fn is_claim(&self) -> bool {
        !self.given && self.supports.is_none()
    }
}

/// The whole preview.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Preview {
    /// Segments in HDAG order.
    pub segments: Vec<PreviewSegment>,
    /// The trace verdict and its weights.
    pub trace: TraceTally,
    /// Segments judged (a vote, not an abstention).
    pub judged: usize,
    /// The trace quorum used.
    pub beta: Ppm,
}

impl Preview {
    /// One line a person reads first: `FAIL: O2 is Invalid; 4 of the trace's 9 claims
    /// were decided here, by the Computer tier`, then why a trace did not pass.
    pub fn summary(&self) -> String {
        let failed: Vec<Failed> = self
            .segments
            .iter()
            .filter(|s| {
                s.decision
                    .as_ref()
                    .is_some_and(|d| matches!(d.vote, Vote::Invalid | Vote::Ungrounded))
            })
            .map(|s| Failed {
                name: s.id.clone(),
                verdict: s.verdict,
                of: s.supports.clone(),
            })
            .collect();
        let claims = self.segments.iter().filter(|s| s.is_claim()).count();
        let mut line = summary_line(
            self.trace.verdict,
            self.judged,
            claims,
            &failed,
            "here, by the Computer tier",
        );
        if let Some(why) = self.why_not_pass() {
            line.push_str("; ");
            line.push_str(&why);
        }
        line
    }

    /// Why the trace did not pass, and how its calculations fared: `conclusion not
    /// judged (F1 is for the LLM tier, left out of this preview); 5 of 5 calculations
    /// hold`. `None` for a pass.
    pub fn why_not_pass(&self) -> Option<String> {
        let facts: Vec<Fact> = self
            .segments
            .iter()
            .filter(|s| !s.given)
            .map(|s| Fact {
                name: s.id.clone(),
                tier: s.tier,
                verdict: s.verdict,
                judged: s.decision.is_some(),
                conclusion: s.conclusion,
                operation: s.supports.is_some(),
                own_error: s
                    .decision
                    .as_ref()
                    .is_some_and(|d| matches!(d.vote, Vote::Invalid | Vote::Ungrounded)),
            })
            .collect();
        explain(&self.trace, self.beta, &facts, Where::Preview)
    }
}

/// A segment that failed on its own, as the verdict line names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Failed {
    /// How to name it (an HDAG id, or `#i`).
    pub name: String,
    /// Invalid or Ungrounded.
    pub verdict: SegmentVerdict,
    /// For an OPERATION: the segment whose calculation it is.
    pub of: Option<String>,
}

/// `FAIL: O2 is Invalid (a calculation in ST3) and B is Ungrounded; 4 of the trace's 9
/// claims were decided {by}` (`by their own seats` on the network, `here, by the Computer
/// tier` in a local preview): one wording for `check`, `query` and `submit --wait`. The
/// claims are the trace's segments (those left out included, honeypots and the
/// calculations inside a claim not counted apart), decided are those whose seats reached a
/// verdict of their own, and the segments named failed on their own.
pub fn summary_line(
    verdict: TraceVerdict,
    judged: usize,
    total: usize,
    failed: &[Failed],
    by: &str,
) -> String {
    let mut s = format!("{}: ", format!("{verdict:?}").to_uppercase());
    let said: Vec<String> = failed
        .iter()
        .map(|f| match &f.of {
            // A tool result's restatement (issue 54) checks a claim as a calculation
            // does, but it is no calculation.
            Some(step) if f.name.starts_with("RS") => {
                format!("{} is {:?} (a restatement in {step})", f.name, f.verdict)
            }
            Some(step) => format!("{} is {:?} (a calculation in {step})", f.name, f.verdict),
            None => format!("{} is {:?}", f.name, f.verdict),
        })
        .collect();
    if let Some((last, rest)) = said.split_last() {
        if !rest.is_empty() {
            s.push_str(&rest.join(", "));
            s.push_str(" and ");
        }
        s.push_str(last);
        s.push_str("; ");
    }
    s.push_str(&format!(
        "{judged} of the trace's {total} {} {} decided {by}",
        if total == 1 { "claim" } else { "claims" },
        if judged == 1 { "was" } else { "were" }
    ));
    s
}

/// One segment as [`explain`] sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    /// How to name it (an HDAG id, or `#i`).
    pub name: String,
    /// The tier it was routed to (or escalated to).
    pub tier: Tier,
    /// Its final verdict.
    pub verdict: SegmentVerdict,
    /// Whether it had seats (it was not left out).
    pub judged: bool,
    /// Whether it is (part of) the conclusion.
    pub conclusion: bool,
    /// Whether it is the OPERATION of a STEP.
    pub operation: bool,
    /// Whether it failed on its own (Invalid or Ungrounded, not by propagation).
    pub own_error: bool,
}

/// Where segments were left out: on the network (no auditors of their tier) or in the
/// local preview (only the Computer tier judges).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Where {
    /// A decided session.
    Network,
    /// `trust-node check`.
    Preview,
}

/// Why a trace did not pass, in one line a person reads after the verdict, and how its
/// calculations fared; `None` for a pass. One function for `check`, `query`, `submit
/// --wait`, the API and the outcome page, so they say the same.
pub fn explain(t: &TraceTally, beta: Ppm, facts: &[Fact], at: Where) -> Option<String> {
    if t.verdict == TraceVerdict::Pass {
        return None;
    }
    let pct = beta.0 / 10_000;
    let mut why = if t.verdict == TraceVerdict::Fail {
        if t.error_at_conclusion {
            "an error reaches the conclusion".to_string()
        } else {
            format!(
                "even if every undecided segment held, {} of {} weight would pass, {pct}% needed",
                t.passing.saturating_add(t.undecided),
                t.total
            )
        }
    } else if let Some(c) = facts
        .iter()
        .find(|f| f.conclusion && !f.operation && f.verdict != SegmentVerdict::Valid)
    {
        let tier = tier_name(c.tier);
        match (c.judged, at) {
            (false, Where::Network) => format!(
                "conclusion not judged ({}: no {tier} auditors on the network)",
                c.name
            ),
            (false, Where::Preview) => format!(
                "conclusion not judged ({} is for the {tier} tier, left out of this preview)",
                c.name
            ),
            (true, _) => format!(
                "conclusion not judged ({}: its {tier} seats abstained or split)",
                c.name
            ),
        }
    } else if !t.conclusion_sound {
        "the conclusion rests on steps nobody judged".to_string()
    } else if let Some(e) = facts.iter().find(|f| f.own_error && !f.operation) {
        format!(
            "{} is wrong, though the conclusion does not rest on it",
            e.name
        )
    } else if let Some(e) = facts.iter().find(|f| f.own_error) {
        format!(
            "the calculation {} is wrong, though the conclusion does not rest on it",
            e.name
        )
    } else {
        format!(
            "too little judged Valid: {} of {} weight, {pct}% needed",
            t.passing, t.total
        )
    };
    why.push_str(&calculations(facts));
    Some(why)
}

/// How the calculations checked on their own fared: `; 5 of 6 calculations hold, 1 not
/// judged`. A calculation nobody judged (its seats abstained, or it was left out) is
/// counted as not judged, never as one that fails to hold: `; 1 calculation not judged`
/// when none was. Empty when the trace has none.
fn calculations(facts: &[Fact]) -> String {
    let ops: Vec<&Fact> = facts.iter().filter(|f| f.operation).collect();
    if ops.is_empty() {
        return String::new();
    }
    let count = |v: &[SegmentVerdict]| ops.iter().filter(|f| v.contains(&f.verdict)).count();
    let unjudged = count(&[SegmentVerdict::Undecided]);
    if unjudged == ops.len() {
        return match unjudged {
            1 => "; 1 calculation not judged".to_string(),
            n => format!("; {n} calculations, none judged"),
        };
    }
    let mut out = format!(
        "; {} of {} calculations hold",
        count(&[SegmentVerdict::Valid]),
        ops.len()
    );
    let wrong = count(&[SegmentVerdict::Invalid, SegmentVerdict::Ungrounded]);
    if wrong > 0 {
        out.push_str(&format!(", {wrong} wrong"));
    }
    let carried = count(&[SegmentVerdict::Propagated]);
    if carried > 0 {
        out.push_str(&format!(", {carried} rest on a step that failed"));
    }
    if unjudged > 0 {
        out.push_str(&format!(", {unjudged} not judged"));
    }
    out
}

fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Computer => "Computer",
        Tier::Llm => "LLM",
        Tier::Human => "Human",
    }
}

/// A kept segment in manifest order, as its seats receive it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestSegment {
    /// HDAG node id.
    pub id: String,
    /// What its judge sees.
    pub view: SegmentView,
    /// Manifest positions of the segments it cites.
    pub depends_on: Vec<u16>,
}

/// The kept segments of `r` in the order a provider puts them in the manifest
/// (dependencies first), each with the view its seats get: its claim, the claims it cites
/// in manifest order, and its givens.
pub fn manifest_views(r: &Restricted) -> Vec<ManifestSegment> {
    let order = dependency_order(&r.hdag);
    let position: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .filter_map(|(pos, &i)| r.hdag.nodes.get(i).map(|n| (n.id.as_str(), pos)))
        .collect();
    let mut docs = Vec::with_capacity(order.len());
    for &i in &order {
        let Some(n) = r.hdag.nodes.get(i) else {
            continue;
        };
        let mut cited: Vec<(usize, &str)> = r
            .hdag
            .dependencies_of(&n.id)
            .filter_map(|d| position.get(d).map(|p| (*p, d)))
            .collect();
        cited.sort_unstable();
        cited.dedup();
        let doc = SegmentDoc {
            claim: n.content.clone(),
            given: r.givens.get(&n.id).cloned().unwrap_or_default(),
            operations: r.operations.get(&n.id).cloned().unwrap_or_default(),
            proof: prepare::proof_payload(r, &n.id, |id| {
                position.get(id).and_then(|p| u16::try_from(*p).ok())
            }),
            cells: r.cells.get(&n.id).cloned().unwrap_or_default(),
        };
        let depends_on: Vec<u16> = cited
            .iter()
            .filter_map(|(p, _)| u16::try_from(*p).ok())
            .collect();
        docs.push((n, doc, depends_on));
    }
    let manifest = || {
        docs.iter()
            .map(|(n, _, d)| (Tier::from(n.primary_auditor), d.clone()))
            .collect::<Vec<_>>()
    };
    let mut out = Vec::with_capacity(docs.len());
    for (pos, (n, doc, depends_on)) in docs.iter().enumerate() {
        let cited: Vec<(u16, Option<&SegmentDoc>)> = depends_on
            .iter()
            .map(|p| (*p, docs.get(usize::from(*p)).map(|(_, d, _)| d)))
            .collect();
        let formal = FormalView::of(
            u16::try_from(pos).unwrap_or(u16::MAX),
            doc,
            &cited,
            manifest,
        );
        let premises = cited
            .iter()
            .filter_map(|(_, d)| d.map(|d| d.claim.clone()))
            .collect();
        out.push(ManifestSegment {
            id: n.id.clone(),
            view: SegmentView::new(doc.clone(), premises, r.conclusions.contains(&n.id))
                .with_formal(formal),
            depends_on: depends_on.clone(),
        });
    }
    out
}

/// The preview of `hdag` (a decomposition of `trace`, or the provider's own), on a node
/// without a sandbox (its tool segments' seats abstain): [`preview_with`].
pub fn preview(trace: &Trace, hdag: &Hdag) -> Preview {
    preview_with(trace, hdag, None)
}

/// The preview of `hdag`, tool calls re-run through `exec` as the node's Computer seats
/// re-run them ([`ComputerAuditor::judge_with`]).
pub fn preview_with(trace: &Trace, hdag: &Hdag, exec: Option<&dyn Execute>) -> Preview {
    let r = prepare::restrict(hdag, |t| t == Tier::Computer).with_proof_of(trace);
    preview_restricted_with(trace, hdag, &r, exec)
}

/// [`preview`] of an HDAG already cut down to its Computer segments (`r`): what a
/// provider's node would seal, judged as its seats judge it.
pub fn preview_restricted(trace: &Trace, hdag: &Hdag, r: &Restricted) -> Preview {
    preview_restricted_with(trace, hdag, r, None)
}

/// [`preview_restricted`], tool calls re-run through `exec`.
pub fn preview_restricted_with(
    trace: &Trace,
    hdag: &Hdag,
    r: &Restricted,
    exec: Option<&dyn Execute>,
) -> Preview {
    let kept = manifest_views(r);
    let trace_id = Hash::of_parts("trust/v1/local-check", &[trace.thinking.as_bytes()]);

    // Entries as the contract numbers them: the kept segments in manifest order, then
    // the left-out ones.
    let ids: Vec<&str> = kept
        .iter()
        .map(|k| k.id.as_str())
        .chain(r.dropped.iter().map(|d| d.id.as_str()))
        .collect();
    let at: BTreeMap<&str, usize> = ids.iter().enumerate().map(|(i, id)| (*id, i)).collect();
    let entry_of = |id: &String| at.get(id.as_str()).copied();
    let mut decisions: BTreeMap<String, Decision> = BTreeMap::new();
    let mut entries = Vec::with_capacity(ids.len());
    for k in &kept {
        let seed = Hash::of_parts(
            "trust/v1/local-check",
            &[trace_id.as_ref(), k.id.as_bytes()],
        );
        let d = ComputerAuditor.judge_with(&k.view, &seed, exec);
        let mut rests_on: Vec<usize> = k.depends_on.iter().map(|d| usize::from(*d)).collect();
        rests_on.extend(
            r.rests_on_dropped
                .get(&k.id)
                .into_iter()
                .flatten()
                .filter_map(entry_of),
        );
        entries.push(tally::Entry {
            local: match d.vote {
                Vote::Valid => LocalVerdict::Valid,
                Vote::Invalid => LocalVerdict::Invalid,
                Vote::Ungrounded => LocalVerdict::Ungrounded,
                Vote::Abstain | Vote::PayloadAbstain => LocalVerdict::Undecided,
            },
            weight: 1,
            rests_on,
            conclusion: r.conclusions.contains(&k.id),
            supports: r.supports.get(&k.id).and_then(entry_of),
            honeypot: false,
        });
        decisions.insert(k.id.clone(), d);
    }
    for d in &r.dropped {
        entries.push(tally::Entry {
            local: LocalVerdict::Undecided,
            weight: 1,
            rests_on: d
                .depends_on
                .iter()
                .chain(&d.rests_on_dropped)
                .filter_map(entry_of)
                .collect(),
            conclusion: r.conclusions.contains(&d.id),
            supports: r.supports.get(&d.id).and_then(entry_of),
            honeypot: false,
        });
    }
    let beta = DEFAULT_QUORUM.beta;
    let decided = tally::decide(&entries, beta);
    let by_id: BTreeMap<&str, (SegmentVerdict, bool)> = ids
        .iter()
        .zip(decided.finals.iter().zip(&decided.conclusions))
        .map(|(id, (v, c))| (*id, (*v, *c)))
        .collect();
    let segments: Vec<PreviewSegment> = hdag
        .nodes
        .iter()
        .map(|n| {
            let (verdict, conclusion) = by_id
                .get(n.id.as_str())
                .copied()
                .unwrap_or((SegmentVerdict::Undecided, false));
            PreviewSegment {
                id: n.id.clone(),
                tier: Tier::from(n.primary_auditor),
                content: n.content.clone(),
                decision: decisions.get(&n.id).cloned(),
                verdict,
                conclusion,
                given: n.kind == PROBLEM_KIND,
                supports: r.supports.get(&n.id).cloned(),
            }
        })
        .collect();
    let judged = segments
        .iter()
        .filter(|s| s.is_claim())
        .filter(|s| s.decision.as_ref().is_some_and(|d| !d.vote.is_abstain()))
        .count();
    Preview {
        segments,
        trace: decided.tally,
        judged,
        beta,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decompose::{Options, decompose};

    fn run(text: &str) -> Preview {
        let t = Trace::parse(text).expect("trace");
        let h = decompose(&t, &Options::default()).expect("decompose");
        preview(&t, &h)
    }

    #[test]
    fn the_incorrect_fraction_chain_fails_at_its_wrong_step() {
        let p = run(include_str!("../../examples/traces/fraction-incorrect.txt"));
        assert_eq!(p.trace.verdict, TraceVerdict::Fail, "{}", p.summary());
        let invalid: Vec<&str> = p
            .segments
            .iter()
            .filter(|s| s.verdict == SegmentVerdict::Invalid)
            .map(|s| s.id.as_str())
            .collect();
        assert!(!invalid.is_empty(), "{}", p.summary());
        assert!(p.summary().starts_with("FAIL: "));
        // Everything resting on the wrong step is Propagated, the final answer included.
        let last = p
            .segments
            .iter()
            .rfind(|s| s.conclusion)
            .expect("a conclusion");
        assert_eq!(last.verdict, SegmentVerdict::Propagated, "{}", p.summary());
    }

    #[test]
    fn the_correct_fraction_chain_never_fails() {
        let p = run(include_str!("../../examples/traces/fraction-correct.txt"));
        assert_ne!(p.trace.verdict, TraceVerdict::Fail, "{}", p.summary());
        assert!(
            p.segments.iter().all(|s| !s.verdict.is_error()),
            "{}",
            p.summary()
        );
    }

    #[test]
    fn summary_names_the_segments_that_failed_on_their_own() {
        let line = summary_line(
            TraceVerdict::Inconclusive,
            4,
            9,
            &[
                Failed {
                    name: "O2".into(),
                    verdict: SegmentVerdict::Invalid,
                    of: Some("ST3".into()),
                },
                Failed {
                    name: "ST4".into(),
                    verdict: SegmentVerdict::Ungrounded,
                    of: None,
                },
            ],
            "by their own seats",
        );
        assert_eq!(
            line,
            "INCONCLUSIVE: O2 is Invalid (a calculation in ST3) and ST4 is Ungrounded; 4 of the trace's 9 claims were decided by their own seats"
        );
    }
}
