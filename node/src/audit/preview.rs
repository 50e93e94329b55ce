//! A local preview of a network audit: what a network whose only auditors are Computer
//! seats would decide for a trace, without the network.
//!
//! The HDAG is cut down exactly as a provider cuts it for such a network
//! ([`crate::submit::restrict`]): other tiers' segments are left out, their text travels
//! as givens. Each kept segment is judged by the same [`ComputerAuditor`] a seat runs, on
//! the same [`SegmentView`] (claim, cited claims in manifest order, givens). Every seat of
//! a Computer segment reaches the same decision, so a vote is the segment's verdict and an
//! abstention leaves it Undecided (no higher tier to escalate to). Propagation, the
//! conclusion and the three-valued trace verdict are the contract's own functions
//! ([`trust_contracts::tally`]). `trust-node check` and `trust-node bench quality` print
//! this; a network test checks that the network agrees with it.

use std::collections::BTreeMap;

use trust_contracts::{
    LocalVerdict, SegmentVerdict, TraceVerdict,
    tally::{self, TraceTally, Weighed},
};
use trust_protocol::{Hash, Vote, hdag::Hdag, trace::Trace, tx::Tier, units::Ppm};

use super::{
    judge::{ComputerAuditor, Decision, SegmentView},
    provider::DEFAULT_QUORUM,
};
use crate::{
    decompose::dependency_order,
    submit::{self, Restricted},
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
    /// One line a person reads first: `INCONCLUSIVE: 4 of 9 segments judged; O2 Invalid`.
    pub fn summary(&self) -> String {
        let failed: Vec<(String, SegmentVerdict)> = self
            .segments
            .iter()
            .filter(|s| {
                matches!(
                    s.verdict,
                    SegmentVerdict::Invalid | SegmentVerdict::Ungrounded
                )
            })
            .map(|s| (s.id.clone(), s.verdict))
            .collect();
        summary_line(
            self.trace.verdict,
            self.judged,
            self.segments.len(),
            &failed,
        )
    }
}

/// `VERDICT: J of N segments judged; A Invalid, B Ungrounded` (the segments that failed on
/// their own; those that only inherited an error are not named).
pub fn summary_line(
    verdict: TraceVerdict,
    judged: usize,
    total: usize,
    failed: &[(String, SegmentVerdict)],
) -> String {
    let mut s = format!(
        "{}: {judged} of {total} segments judged",
        format!("{verdict:?}").to_uppercase()
    );
    if !failed.is_empty() {
        let names: Vec<String> = failed.iter().map(|(n, v)| format!("{n} {v:?}")).collect();
        s.push_str("; ");
        s.push_str(&names.join(", "));
    }
    s
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
    let mut out = Vec::with_capacity(order.len());
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
        out.push(ManifestSegment {
            id: n.id.clone(),
            view: SegmentView {
                claim: n.content.clone(),
                premises: cited
                    .iter()
                    .filter_map(|(_, d)| r.hdag.nodes.iter().find(|m| m.id == *d))
                    .map(|m| m.content.clone())
                    .collect(),
                givens: r.givens.get(&n.id).cloned().unwrap_or_default(),
            },
            depends_on: cited
                .iter()
                .filter_map(|(p, _)| u16::try_from(*p).ok())
                .collect(),
        });
    }
    out
}

/// The preview of `hdag` (a decomposition of `trace`, or the provider's own).
pub fn preview(trace: &Trace, hdag: &Hdag) -> Preview {
    let r = submit::restrict(hdag, |t| t == Tier::Computer);
    let kept = manifest_views(&r);
    let position: BTreeMap<&str, usize> = kept
        .iter()
        .enumerate()
        .map(|(pos, k)| (k.id.as_str(), pos))
        .collect();
    let trace_id = Hash::of_parts("trust/v1/local-check", &[trace.thinking.as_bytes()]);

    // Kept segments in manifest order, judged as their seats would judge them.
    let mut decisions: BTreeMap<String, Decision> = BTreeMap::new();
    let mut local = Vec::with_capacity(kept.len());
    let mut deps: Vec<Vec<u16>> = Vec::with_capacity(kept.len());
    for k in &kept {
        let seed = Hash::of_parts(
            "trust/v1/local-check",
            &[trace_id.as_ref(), k.id.as_bytes()],
        );
        let d = ComputerAuditor.judge_now(&k.view, &seed);
        local.push(match d.vote {
            Vote::Valid => LocalVerdict::Valid,
            Vote::Invalid => LocalVerdict::Invalid,
            Vote::Ungrounded => LocalVerdict::Ungrounded,
            Vote::Abstain => LocalVerdict::Undecided,
        });
        deps.push(k.depends_on.clone());
        decisions.insert(k.id.clone(), d);
    }
    // Left-out segments follow, resting on the kept ones.
    for d in &r.dropped {
        local.push(LocalVerdict::Undecided);
        deps.push(
            d.depends_on
                .iter()
                .filter_map(|id| position.get(id.as_str()))
                .filter_map(|p| u16::try_from(*p).ok())
                .collect(),
        );
    }
    let dep_refs: Vec<&[u16]> = deps.iter().map(Vec::as_slice).collect();
    let finals = tally::propagate(&local, &dep_refs);
    let ids: Vec<&str> = kept
        .iter()
        .map(|k| k.id.as_str())
        .chain(r.dropped.iter().map(|d| d.id.as_str()))
        .collect();
    let flags: Vec<bool> = ids.iter().map(|id| r.conclusions.contains(*id)).collect();
    let is_conclusion = tally::conclusions(&flags, &dep_refs);
    let by_id: BTreeMap<&str, (SegmentVerdict, bool)> = ids
        .iter()
        .zip(finals.iter().zip(&is_conclusion))
        .map(|(id, (v, c))| (*id, (*v, *c)))
        .collect();
    let weighed: Vec<Weighed> = finals
        .iter()
        .zip(&is_conclusion)
        .map(|(v, c)| Weighed {
            verdict: *v,
            weight: 1,
            conclusion: *c,
        })
        .collect();
    let beta = DEFAULT_QUORUM.beta;
    let trace_tally = tally::trace_verdict(&weighed, beta);
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
            }
        })
        .collect();
    let judged = segments
        .iter()
        .filter(|s| s.decision.as_ref().is_some_and(|d| !d.vote.is_abstain()))
        .count();
    Preview {
        segments,
        trace: trace_tally,
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
        let p = run(include_str!(
            "../../../examples/traces/fraction-incorrect.txt"
        ));
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
        let p = run(include_str!(
            "../../../examples/traces/fraction-correct.txt"
        ));
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
            &[("O2".into(), SegmentVerdict::Invalid)],
        );
        assert_eq!(line, "INCONCLUSIVE: 4 of 9 segments judged; O2 Invalid");
    }
}
