//! Checking that an outcome is about a trace: the inverse of [`prepare`](super::prepare)
//! for whoever holds the trace and the provider's [`TraceOpening`] (`proof verify
//! --trace FILE`).
//!
//! The outcome carries each segment's blinded id, `H(salt, doc)` where `doc` is the
//! claim with its givens and OPERATIONs ([`prepare::blinded_id`]). Given the trace and
//! the opening (the mapping document: each segment's HDAG node and salt, whose hash the
//! provider revealed on chain), [`match_trace`] cuts the trace again (the node's own
//! decomposer, or the provider's HDAG checked against the trace), keeps the nodes the
//! mapping names, rebuilds each one's document exactly as the provider had to
//! ([`prepare::restrict_nodes`], [`prepare::step_doc`]) and requires it to reproduce the
//! id the outcome carries; every other step of the trace must be one of the outcome's
//! left-out segments, with its tier, and the conclusion marks must be the trace's.
//!
//! Adversary first. A provider who wants a PASS to pass for another trace, or a FAIL to
//! hide a step: a segment whose document is not that step's (another text, other
//! givens) does not reproduce its id; a step hidden among the honeypots, or not sent at
//! all, leaves the trace with more steps than the outcome's segments and left-out ones;
//! the conclusion moved to a step that holds shows in the conclusion marks; a mapping
//! other than the one revealed on chain is refused by its hash. What is not re-derived:
//! the `depends_on` edges and weights of the manifest (the outcome does not carry them),
//! and with the provider's own HDAG, how it cut the trace (every node is a span of the
//! trace, but the cut need not cover every step: the report says which cut was used).

use std::collections::BTreeSet;

use trust_contracts::Outcome;
use trust_protocol::{
    TraceOpening, mapping_document_hash,
    trace::{Trace, TraceError},
    tx::Tier,
};

use super::prepare::{self, blinded_id, restrict_nodes, step_doc};
use crate::decompose::{self, DecomposeError};

/// What [`match_trace`] found: the outcome is about the trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceMatch {
    /// Per session segment, in manifest order: the trace step (HDAG node id) it is, or
    /// `None` for a planted honeypot or a honeypot's calculation.
    pub steps: Vec<Option<String>>,
    /// Per left-out segment, in manifest order: the trace step it is.
    pub left_out: Vec<String>,
    /// Whether the trace was cut by the provider's own HDAG (else by this node's
    /// decomposer, which covers every step).
    pub provider_cut: bool,
    /// Whether the provider had revealed the mapping's hash on chain (and the opening
    /// matched it); without it the ids alone tie the segments to the trace.
    pub mapping_on_chain: bool,
}

/// Why an outcome is not about a trace.
#[derive(Debug, thiserror::Error)]
pub enum TraceMismatch {
    /// The trace file does not parse.
    #[error("the trace cannot be read")]
    Trace(#[source] TraceError),
    /// The trace does not decompose.
    #[error("the trace cannot be cut into steps")]
    Decompose(#[source] DecomposeError),
    /// The provider's HDAG in the opening does not fit the trace.
    #[error("the provider's HDAG in the bundle does not fit this trace")]
    ProviderHdag(#[source] DecomposeError),
    /// The opening's length is not the outcome's.
    #[error("the opening names {opening} segments, the outcome has {outcome}")]
    Count {
        /// Entries in the opening.
        opening: usize,
        /// Segments in the outcome.
        outcome: usize,
    },
    /// The opening is not the mapping the provider revealed on chain.
    #[error(
        "the opening is not the mapping the provider revealed on chain (its hash is {got}, the outcome's {expected})"
    )]
    NotTheMapping {
        /// The hash the outcome carries.
        expected: trust_protocol::Hash,
        /// The opening's hash.
        got: trust_protocol::Hash,
    },
    /// A segment names no step of the trace.
    #[error("segment {index} names {node:?}, which is no step of this trace{}", if *.forfeited {
        " (the provider never opened its honeypots, so the outcome counted its honeypots as steps of the trace)"
    } else { "" })]
    NoSuchStep {
        /// The segment.
        index: usize,
        /// The node it names.
        node: String,
        /// Whether the outcome's honeypots were never opened.
        forfeited: bool,
    },
    /// Two segments name one step.
    #[error("segments {first} and {index} both name step {node:?}")]
    Twice {
        /// The first segment naming it.
        first: usize,
        /// The second.
        index: usize,
        /// The step.
        node: String,
    },
    /// A segment's id is not that of the step it names.
    #[error(
        "segment {index} is not step {node:?} of this trace: the step's text and context do not reproduce the segment's id"
    )]
    NotTheStep {
        /// The segment.
        index: usize,
        /// The step it names.
        node: String,
    },
    /// The trace has steps the outcome neither judged nor left out, or fewer.
    #[error(
        "this trace has {steps} steps; the outcome judged {judged} of them and left out {left_out}{}",
        if .steps > &(.judged + .left_out) { ": a step of the trace is in no segment" } else { "" }
    )]
    Uncovered {
        /// Steps of the trace (the problem statement is none).
        steps: usize,
        /// Steps the outcome's segments are.
        judged: usize,
        /// Left-out segments in the outcome.
        left_out: usize,
    },
    /// A left-out segment's tier is not its step's.
    #[error(
        "left-out segment {index} is step {node:?} of the {trace:?} tier, the outcome says {outcome:?}"
    )]
    LeftOutTier {
        /// The left-out segment.
        index: usize,
        /// Its step.
        node: String,
        /// The step's tier.
        trace: Tier,
        /// The outcome's.
        outcome: Tier,
    },
    /// The conclusion marks are not the trace's.
    #[error(
        "{what} {index} ({node:?}) is {}marked as the trace's conclusion in the outcome, {}in the trace",
        if *.outcome { "" } else { "not " }, if *.outcome { "not " } else { "" }
    )]
    Conclusion {
        /// "segment" or "left-out segment".
        what: &'static str,
        /// Its index.
        index: usize,
        /// Its step.
        node: String,
        /// The outcome's mark.
        outcome: bool,
    },
}

/// Checks that `outcome` is about the trace `trace_text` (JSON or the paper's headings,
/// as submitted), given the provider's `opening` (see the module doc).
pub fn match_trace(
    trace_text: &str,
    opening: &TraceOpening,
    outcome: &Outcome,
) -> Result<TraceMatch, TraceMismatch> {
    let segments = &outcome.segments;
    if opening.mapping.len() != segments.len() {
        return Err(TraceMismatch::Count {
            opening: opening.mapping.len(),
            outcome: segments.len(),
        });
    }
    if let Some(expected) = outcome.mapping {
        let got = mapping_document_hash(&opening.mapping);
        if got != expected {
            return Err(TraceMismatch::NotTheMapping { expected, got });
        }
    }
    let trace = Trace::parse(trace_text).map_err(TraceMismatch::Trace)?;
    let hdag = match &opening.hdag {
        Some(json) => {
            decompose::from_provider(&trace, json).map_err(TraceMismatch::ProviderHdag)?
        }
        None => decompose::decompose(&trace, &decompose::Options::default())
            .map_err(TraceMismatch::Decompose)?,
    };
    // A planted honeypot, or the calculation planted beside a worded one: no step.
    let honeypot = |i: usize| segments.get(i).is_some_and(|s| s.honeypot.is_some());
    let planted = |i: usize| {
        honeypot(i)
            || segments
                .get(i)
                .and_then(|s| s.supports)
                .is_some_and(|j| honeypot(usize::from(j)))
    };
    let mut steps: Vec<Option<String>> = Vec::with_capacity(segments.len());
    let mut kept: BTreeSet<&str> = BTreeSet::new();
    for (i, entry) in opening.mapping.iter().enumerate() {
        if planted(i) {
            steps.push(None);
            continue;
        }
        let is_step = hdag
            .nodes
            .iter()
            .any(|n| n.id == entry.node && n.kind != decompose::PROBLEM_KIND);
        if !is_step {
            return Err(TraceMismatch::NoSuchStep {
                index: i,
                node: entry.node.clone(),
                forfeited: outcome.honeypots_forfeited,
            });
        }
        if !kept.insert(entry.node.as_str()) {
            let first = steps
                .iter()
                .position(|s| s.as_deref() == Some(entry.node.as_str()))
                .unwrap_or(i);
            return Err(TraceMismatch::Twice {
                first,
                index: i,
                node: entry.node.clone(),
            });
        }
        steps.push(Some(entry.node.clone()));
    }
    let r = restrict_nodes(&hdag, |n| kept.contains(n.id.as_str())).with_proof_of(&trace);
    // A formal proof's payloads are rebuilt from this trace's text, with each step's
    // manifest position as the mapping gives it: order, blocks and citations included.
    let position = |id: &str| {
        steps
            .iter()
            .position(|s| s.as_deref() == Some(id))
            .and_then(|p| u16::try_from(p).ok())
    };
    for (i, ((entry, segment), step)) in
        opening.mapping.iter().zip(segments).zip(&steps).enumerate()
    {
        let Some(node) = step else { continue };
        let text = r
            .hdag
            .nodes
            .iter()
            .find(|n| n.id == *node)
            .map(|n| n.content.clone())
            .unwrap_or_default();
        let mut doc = step_doc(&r, node, text);
        doc.proof = prepare::proof_payload(&r, node, position);
        if blinded_id(&entry.salt, &doc) != segment.id {
            return Err(TraceMismatch::NotTheStep {
                index: i,
                node: node.clone(),
            });
        }
    }
    if r.dropped.len() != outcome.left_out.len() {
        return Err(TraceMismatch::Uncovered {
            steps: kept.len().saturating_add(r.dropped.len()),
            judged: kept.len(),
            left_out: outcome.left_out.len(),
        });
    }
    for (j, (d, l)) in r.dropped.iter().zip(&outcome.left_out).enumerate() {
        if d.tier != l.tier {
            return Err(TraceMismatch::LeftOutTier {
                index: j,
                node: d.id.clone(),
                trace: d.tier,
                outcome: l.tier,
            });
        }
    }
    check_conclusions(&r, &steps, outcome)?;
    Ok(TraceMatch {
        steps,
        left_out: r.dropped.iter().map(|d| d.id.clone()).collect(),
        provider_cut: opening.hdag.is_some(),
        mapping_on_chain: outcome.mapping.is_some(),
    })
}

/// The outcome's conclusion marks against the trace's, as the contract reads them:
/// the flagged steps that are no OPERATION (when the trace flags none, the contract takes
/// the sinks of the manifest's edges, which the outcome does not carry: not checked).
fn check_conclusions(
    r: &prepare::Restricted,
    steps: &[Option<String>],
    outcome: &Outcome,
) -> Result<(), TraceMismatch> {
    let flagged =
        |node: &str, supports: Option<u16>| supports.is_none() && r.conclusions.contains(node);
    let mut marks: Vec<(&'static str, usize, &str, bool, bool)> = Vec::new();
    for (i, (s, step)) in outcome.segments.iter().zip(steps).enumerate() {
        if let Some(node) = step {
            marks.push(("segment", i, node, flagged(node, s.supports), s.conclusion));
        }
    }
    for (j, (d, l)) in r.dropped.iter().zip(&outcome.left_out).enumerate() {
        marks.push((
            "left-out segment",
            j,
            &d.id,
            flagged(&d.id, l.supports),
            l.conclusion,
        ));
    }
    if !marks.iter().any(|m| m.3) {
        return Ok(());
    }
    match marks.into_iter().find(|m| m.3 != m.4) {
        Some((what, index, node, _, outcome)) => Err(TraceMismatch::Conclusion {
            what,
            index,
            node: node.to_string(),
            outcome,
        }),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use rand::{SeedableRng, rngs::StdRng};
    use trust_contracts::{LeftOutOutcome, SegmentOutcome};
    use trust_protocol::{
        Keypair, MappingEntry,
        tx::{QuorumParams, Tier},
        units::Ppm,
    };

    use super::*;
    use crate::session::{
        honeypot,
        prepare::{PreparedSession, TierWeights, prepare_with},
    };

    fn example(name: &str) -> String {
        std::fs::read_to_string(format!(
            "{}/../examples/traces/{name}",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("example trace")
    }

    /// A session of `trace` as the provider prepares it (Computer steps audited, the
    /// others left out, with `baits` honeypots forged when the checker can), and the
    /// outcome the contract would record of it: each segment's id, the honeypots the
    /// provider opened, the conclusion marks as the tally reads them, the mapping's hash.
    fn session(trace: &str, baits: usize) -> (PreparedSession, Outcome) {
        let t = Trace::parse(trace).unwrap();
        let h = decompose::decompose(&t, &decompose::Options::default()).unwrap();
        let r = restrict_nodes(&h, |n| Tier::from(n.primary_auditor) == Tier::Computer)
            .with_proof_of(&t);
        let mut rng = StdRng::seed_from_u64(7);
        let baits = honeypot::forge(&r, baits, &mut rng);
        let quorum = QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(500_000),
            beta: Ppm(800_000),
        };
        let p = prepare_with(&r, &baits, quorum, TierWeights::EQUAL, 0, "", &mut rng).unwrap();
        let mut o = decided(Keypair::from_label("provider").public());
        let outside = |e: &trust_protocol::tx::SegmentEntry, i: usize| {
            p.honeypots.iter().any(|h| usize::from(h.segment) == i) || e.supports.is_some()
        };
        let flagged = p.manifest.segments.iter().any(|e| e.conclusion)
            || p.manifest.left_out.iter().any(|l| l.conclusion);
        o.segments = p
            .manifest
            .segments
            .iter()
            .enumerate()
            .map(|(i, e)| SegmentOutcome {
                id: e.id,
                tier: e.tier,
                honeypot: p
                    .honeypots
                    .iter()
                    .find(|h| usize::from(h.segment) == i)
                    .map(|h| h.verdict),
                supports: e.supports,
                conclusion: flagged && e.conclusion && !outside(e, i),
                ..o.segments[0].clone()
            })
            .collect();
        o.left_out = p
            .manifest
            .left_out
            .iter()
            .map(|l| LeftOutOutcome {
                tier: l.tier,
                verdict: trust_contracts::SegmentVerdict::Undecided,
                supports: l.supports,
                conclusion: l.conclusion && l.supports.is_none(),
            })
            .collect();
        o.mapping = Some(mapping_document_hash(&p.mapping));
        (p, o)
    }

    /// A decided outcome of `provider` whose segments, left-out steps and mapping the
    /// caller fills in.
    fn decided(provider: trust_protocol::AccountId) -> Outcome {
        Outcome {
            provider,
            opened_at: 1,
            drawn_at: 2,
            decided_at: 2,
            segments: vec![SegmentOutcome {
                id: trust_protocol::Hash::ZERO,
                verdict: trust_contracts::SegmentVerdict::Valid,
                tier: Tier::Computer,
                escalated: false,
                k: 3,
                q: 2,
                votes: Default::default(),
                honeypot: None,
                supports: None,
                conclusion: false,
                votes_cast: Vec::new(),
            }],
            left_out: Vec::new(),
            trace: trust_contracts::TraceVerdict::Pass,
            passing_weight: 1,
            undecided_weight: 0,
            total_weight: 1,
            error_at_conclusion: false,
            conclusion_judged: true,
            conclusion_sound: true,
            coverage: Default::default(),
            beta: Ppm(700_000),
            bound: trust_contracts::FailureBound {
                expected_pass_weight_micro: 0,
                hoeffding_neg_ln_milli: 0,
            },
            mapping: None,
            rewards_paid: 0,
            refunded: 0,
            disputed_honeypots: 0,
            bond_burned: 0,
            honeypots_forfeited: false,
            starved_seats: 0,
            starved_paid: 0,
            payload_seats: 0,
            payload_paid: 0,
            appeals: Default::default(),
            quorum: crate::session::DEFAULT_QUORUM,
            terms: Default::default(),
            domain: "math".into(),
        }
    }

    fn opening(p: &PreparedSession) -> TraceOpening {
        TraceOpening {
            mapping: p.mapping.clone(),
            hdag: None,
        }
    }

    /// A transcript of two calls to one persistent kernel: the second replays the first.
    fn kernel_transcript() -> String {
        use trust_protocol::trace::blocks::{Semantics, render_tool};
        let first = render_tool("c1", "python", Some(Semantics::Cell), "x = 4\nx", "4").unwrap();
        let second =
            render_tool("c2", "python", Some(Semantics::Cell), "y = x * 3\ny", "12").unwrap();
        serde_json::json!({
            "problem": "A box holds 4 apples. How many apples are in 3 such boxes?",
            "thinking": format!("One box first.\n{first}\nOne box holds 4 apples.\n{second}\nThree boxes hold 12 apples."),
            "output": "There are \\(\\boxed{12}\\) apples.",
        })
        .to_string()
    }

    /// Issue 54: everything a tool segment's seat judges is bound to its id: its code, the
    /// result the transcript reports, and the earlier cells it replays. A provider that
    /// seals the second call with another earlier cell (one under which its reported result
    /// would come out, say) has an outcome that is not about the trace: `match_trace`
    /// rebuilds the cells from the trace and the id does not match. The replayed cell is
    /// also in what the contract counts against the exposure budget: the call rests on it.
    #[test]
    fn a_tool_call_sealed_with_other_replayed_cells_is_not_the_traces() {
        use trust_protocol::seal::{SegmentDoc, decrypt_segment};
        let trace = kernel_transcript();
        let (p, o) = session(&trace, 0);
        let m = match_trace(&trace, &opening(&p), &o).expect("the honest outcome matches");
        let at = |node: &str| {
            m.steps
                .iter()
                .position(|s| s.as_deref() == Some(node))
                .unwrap()
        };
        let (tc1, tc2) = (at("TC1"), at("TC2"));
        let doc = SegmentDoc::from_bytes(
            &decrypt_segment(&p.keys[tc2], &p.manifest.segments[tc2].id, &p.blocks[tc2].1).unwrap(),
        )
        .unwrap();
        assert_eq!(
            doc.cells,
            vec!["x = 4\nx".to_string()],
            "the trace's earlier cell"
        );
        assert!(doc.claim.contains("y = x * 3") && doc.claim.contains("12"));
        assert!(crate::session::exposure::sight(&p.manifest, tc2).contains(&(tc1 as u16)));
        // The forged document: same claim, another earlier cell.
        let forged = SegmentDoc {
            cells: vec!["x = 5\nx".into()],
            ..doc.clone()
        };
        assert_ne!(
            blinded_id(&p.mapping[tc2].salt, &forged),
            p.manifest.segments[tc2].id
        );
        let mut sealed = o.clone();
        sealed.segments[tc2].id = blinded_id(&p.mapping[tc2].salt, &forged);
        let e = match_trace(&trace, &opening(&p), &sealed).unwrap_err();
        assert!(
            matches!(e, TraceMismatch::NotTheStep { ref node, .. } if node == "TC2"),
            "{e}"
        );
        // Nor may the cells be dropped: a document without them is another document.
        let mut dropped = o.clone();
        dropped.segments[tc2].id = blinded_id(
            &p.mapping[tc2].salt,
            &SegmentDoc {
                cells: Vec::new(),
                ..doc
            },
        );
        assert!(matches!(
            match_trace(&trace, &opening(&p), &dropped),
            Err(TraceMismatch::NotTheStep { .. })
        ));
    }

    /// Issue 53, finding 2: a provider whose NDL proof fails as written (here `e` is
    /// derived from `c` before `c` is) seals the step documents and skeleton of a
    /// reordered text with the same step lines and the same citations, and commits to a
    /// mapping that names, for each segment, the step of the text it shows that has the
    /// same line. Every claim and given matches; only the formal payload (order, blocks,
    /// what is derived before what) differs, and it is bound in the id, so the outcome of
    /// what it sealed is not about the text it shows.
    #[test]
    fn finding_2_a_reordered_proof_is_not_the_proof_the_outcome_is_about() {
        let right = example("proof-ndl-correct.txt");
        let (c_line, e_line) = (
            "  c := C BY cases on premise-1, premise-2, bc;\n",
            "  e := E BY mp on premise-5, c;\n",
        );
        let wrong = right.replace(&format!("{c_line}{e_line}"), &format!("{e_line}{c_line}"));
        assert_ne!(wrong, right);
        let (p, mut o) = session(&right, 0);
        assert!(match_trace(&right, &opening(&p), &o).is_ok());
        // The mapping the provider commits to names the shown text's steps by their lines.
        let nodes = |text: &str| {
            let t = Trace::parse(text).unwrap();
            decompose::decompose(&t, &decompose::Options::default())
                .unwrap()
                .nodes
        };
        let (sealed, shown) = (nodes(&right), nodes(&wrong));
        // Equal lines pair up in the order they occur.
        let nth = |ns: &[trust_protocol::hdag::HdagNode], id: &str| {
            let at = ns.iter().position(|n| n.id == id).unwrap();
            let c = &ns[at].content;
            (
                c.clone(),
                ns[..at].iter().filter(|n| &n.content == c).count(),
            )
        };
        let mut forged = opening(&p);
        for e in &mut forged.mapping {
            let (content, k) = nth(&sealed, &e.node);
            e.node = shown
                .iter()
                .filter(|n| n.content == content)
                .nth(k)
                .unwrap()
                .id
                .clone();
        }
        assert_ne!(
            forged.mapping, p.mapping,
            "the shown text reorders two steps"
        );
        o.mapping = Some(mapping_document_hash(&forged.mapping));
        let e = match_trace(&wrong, &forged, &o).expect_err("the shown text is not the one sealed");
        assert!(matches!(e, TraceMismatch::NotTheStep { .. }), "{e}");
    }

    #[test]
    fn the_trace_submitted_matches_step_by_step_and_honeypots_are_no_steps() {
        let trace = example("fraction-incorrect.txt");
        let (p, o) = session(&trace, 2);
        assert!(!p.honeypots.is_empty(), "the test needs a planted honeypot");
        let m = match_trace(&trace, &opening(&p), &o).unwrap();
        assert_eq!(m.steps.len(), o.segments.len());
        let named: Vec<&str> = m.steps.iter().flatten().map(String::as_str).collect();
        assert!(named.contains(&"O2") && named.contains(&"O3"), "{named:?}");
        for h in &p.honeypots {
            assert_eq!(m.steps[usize::from(h.segment)], None);
        }
        assert_eq!(m.left_out.len(), o.left_out.len());
        assert!(!m.left_out.is_empty(), "the LLM-tier steps are left out");
        assert!(m.mapping_on_chain && !m.provider_cut);
        // Without the mapping's hash on chain the ids alone decide.
        let mut unopened = o.clone();
        unopened.mapping = None;
        let m = match_trace(&trace, &opening(&p), &unopened).unwrap();
        assert!(!m.mapping_on_chain);
    }

    #[test]
    fn another_trace_or_a_changed_step_does_not_match() {
        let trace = example("fraction-incorrect.txt");
        let (p, o) = session(&trace, 0);
        // The same problem worked correctly: its steps O4, O5 are other text.
        let e = match_trace(&example("fraction-correct.txt"), &opening(&p), &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::NotTheStep { .. }), "{e}");
        eprintln!("MISMATCH {e}");
        // One character of one step changed.
        let changed = trace.replace("3x − 7", "3x − 8");
        assert_ne!(changed, trace);
        let e = match_trace(&changed, &opening(&p), &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::NotTheStep { .. }), "{e}");
        eprintln!("MISMATCH {e}");
        // A trace of another problem altogether.
        let e = match_trace(&example("bakery-wrong.txt"), &opening(&p), &o).unwrap_err();
        assert!(
            matches!(
                e,
                TraceMismatch::NotTheStep { .. } | TraceMismatch::NoSuchStep { .. }
            ),
            "{e}"
        );
        // Not a trace at all.
        let e = match_trace("no headings here", &opening(&p), &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::Trace(_)), "{e}");
    }

    #[test]
    fn a_forged_opening_is_refused() {
        let trace = example("fraction-incorrect.txt");
        let (p, o) = session(&trace, 0);
        // Two salts swapped: not the mapping revealed on chain.
        let mut swapped = opening(&p);
        let first = swapped.mapping[0].salt;
        swapped.mapping[0].salt = swapped.mapping[1].salt;
        swapped.mapping[1].salt = first;
        let e = match_trace(&trace, &swapped, &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::NotTheMapping { .. }), "{e}");
        // And with no hash on chain to compare with, the ids refuse it.
        let mut unopened = o.clone();
        unopened.mapping = None;
        let e = match_trace(&trace, &swapped, &unopened).unwrap_err();
        assert!(
            matches!(e, TraceMismatch::NotTheStep { index: 0, .. }),
            "{e}"
        );
        // Two segments naming one step.
        let mut twice = opening(&p);
        twice.mapping[1].node = twice.mapping[0].node.clone();
        let e = match_trace(&trace, &twice, &unopened).unwrap_err();
        assert!(
            matches!(
                e,
                TraceMismatch::Twice {
                    first: 0,
                    index: 1,
                    ..
                }
            ),
            "{e}"
        );
        // A segment more or less than the outcome has.
        let mut short = opening(&p);
        short.mapping.pop();
        let e = match_trace(&trace, &short, &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::Count { .. }), "{e}");
        let mut named = opening(&p);
        named.mapping.push(MappingEntry {
            node: "O9".into(),
            salt: trust_protocol::Salt([9; 32]),
        });
        let e = match_trace(&trace, &named, &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::Count { .. }), "{e}");
    }

    /// The provider's ways to have an outcome pass for the trace while it judged less of
    /// it: a step hidden as a honeypot (its verdict then counts for nothing), a step
    /// dropped from the session without a left-out entry, a left-out entry of another
    /// tier, the conclusion moved to a step that holds.
    #[test]
    fn an_outcome_that_hides_a_step_or_moves_the_conclusion_is_not_about_the_trace() {
        let trace = example("fraction-incorrect.txt");
        let (p, o) = session(&trace, 0);
        let real = |name: &str| p.mapping.iter().position(|m| m.node == name).unwrap();
        let wrong = real("O2");
        let mut hidden = o.clone();
        hidden.segments[wrong].honeypot = Some(trust_protocol::Vote::Invalid);
        // Caught twice over: the steps resting on it were sealed with it as a segment, not
        // as a given, so their documents differ; and the trace has a step more than the
        // outcome accounts for.
        let e = match_trace(&trace, &opening(&p), &hidden).unwrap_err();
        assert!(
            matches!(e, TraceMismatch::NotTheStep { ref node, .. } if node == "O3"),
            "{e}"
        );
        let rested_on = |i: usize| {
            let i = u16::try_from(i).ok();
            o.segments.iter().any(|s| s.supports == i)
                || p.manifest
                    .segments
                    .iter()
                    .any(|e| i.is_some_and(|i| e.depends_on.contains(&i)))
        };
        let last = (0..o.segments.len())
            .rfind(|&i| !rested_on(i))
            .expect("a segment nothing rests on");
        let mut hidden = o.clone();
        hidden.segments[last].honeypot = Some(trust_protocol::Vote::Invalid);
        let e = match_trace(&trace, &opening(&p), &hidden).unwrap_err();
        assert!(
            matches!(e, TraceMismatch::Uncovered { steps, judged, left_out } if steps == judged + left_out + 1),
            "{e}"
        );
        let mut missing = o.clone();
        missing.left_out.pop();
        let e = match_trace(&trace, &opening(&p), &missing).unwrap_err();
        assert!(matches!(e, TraceMismatch::Uncovered { .. }), "{e}");
        let mut tier = o.clone();
        tier.left_out[0].tier = Tier::Human;
        let e = match_trace(&trace, &opening(&p), &tier).unwrap_err();
        assert!(
            matches!(e, TraceMismatch::LeftOutTier { index: 0, .. }),
            "{e}"
        );
        // The conclusion: wherever the trace puts it, the outcome must too.
        let marked = o
            .segments
            .iter()
            .map(|s| s.conclusion)
            .chain(o.left_out.iter().map(|l| l.conclusion))
            .filter(|c| *c)
            .count();
        assert!(marked > 0, "the trace flags its conclusion");
        let mut moved = o.clone();
        for l in &mut moved.left_out {
            l.conclusion = false;
        }
        for s in &mut moved.segments {
            s.conclusion = false;
        }
        moved.segments[real("O1")].conclusion = true;
        let e = match_trace(&trace, &opening(&p), &moved).unwrap_err();
        assert!(matches!(e, TraceMismatch::Conclusion { .. }), "{e}");
    }

    #[test]
    fn a_provider_cut_is_checked_against_the_trace_and_said() {
        let trace = example("fraction-incorrect.txt");
        let t = Trace::parse(&trace).unwrap();
        let h = decompose::decompose(&t, &decompose::Options::default()).unwrap();
        let (p, o) = session(&trace, 0);
        let mut given = opening(&p);
        given.hdag = Some(serde_json::to_string(&h).unwrap());
        let m = match_trace(&trace, &given, &o).unwrap();
        assert!(m.provider_cut);
        // An HDAG whose node is no span of the trace.
        let mut forged = h.clone();
        forged.nodes[1].content = "x = 14".into();
        given.hdag = Some(serde_json::to_string(&forged).unwrap());
        let e = match_trace(&trace, &given, &o).unwrap_err();
        assert!(matches!(e, TraceMismatch::ProviderHdag(_)), "{e}");
    }
}
