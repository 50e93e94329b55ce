//! Decomposition of a formal proof (ProofGrid's NDL, NDL_f, Hilbert-style and equational
//! proofs): the proof's structure, not its lines.
//!
//! A thinking that [`crate::proof`] recognises as a proof of the problem is cut
//! into its primitive steps: a rule application, a `from` step, a definition, the header
//! and the close of a hypothetical block, a numbered Hilbert line, an equational step.
//! Comments, braces and the prose around the proof are no segments. Each step is a STEP
//! node of type [`PROOF_STEP_KIND`] routed to the Computer tier, its content the step's
//! own text in the trace; it `depends_on` the steps it cites, the opening steps of its
//! active hypotheses, and the structure node. The structure node is the trace's final
//! answer (type [`PROOF_STRUCTURE_KIND`], part of the conclusion, Computer tier): its seat checks the proof's structure
//! ([`crate::computer::formal`]). Step nodes are `P1`, `P2`, ... in step order,
//! so a provider's node can find each node's step again when it seals the session.

use crate::proof::{PlanError, ProofPlan, Source};
use trust_protocol::{
    hdag::{
        AbstractionLevel, AuditorType, Complexity, Hdag, HdagEdge, HdagNode, Relationship, Strength,
    },
    trace::Trace,
};

use super::{DecomposeError, MAX_DECOMPOSED_SEGMENTS, PROBLEM_KIND, text::summary};

/// The type of a node that is one primitive step of a formal proof.
pub const PROOF_STEP_KIND: &str = "proof_step";

/// The id of the node of step `i` (from 0).
pub fn step_id(i: usize) -> String {
    format!("P{}", i.saturating_add(1))
}

/// The step index of a node id made by [`step_id`].
pub fn step_of(id: &str) -> Option<usize> {
    id.strip_prefix('P')?.parse::<usize>().ok()?.checked_sub(1)
}

/// The id of the structure node.
pub const STRUCTURE_ID: &str = "F1";

/// The type of the structure node: the trace's final answer, carrying the proof's
/// structure.
pub const PROOF_STRUCTURE_KIND: &str = "proof_structure";

/// The plan of `trace`'s thinking when it is a formal proof of its problem.
pub fn plan_of(trace: &Trace) -> Option<Result<ProofPlan, PlanError>> {
    crate::proof::steps(trace.problem.trim(), &trace.thinking)
}

/// The HDAG of a trace whose thinking is a recognised proof, `None` when it is not one.
pub fn decompose(trace: &Trace) -> Option<Result<Hdag, DecomposeError>> {
    let plan = match plan_of(trace)? {
        Ok(p) => p,
        Err(PlanError::OverLimit(why)) => return Some(Err(DecomposeError::ProofOverLimit(why))),
    };
    Some(build(trace, &plan))
}

fn node(
    id: String,
    content: &str,
    level: AbstractionLevel,
    kind: &str,
    complexity: Complexity,
) -> HdagNode {
    HdagNode {
        summary: summary(content),
        id,
        content: content.to_string(),
        abstraction_level: level,
        kind: kind.to_string(),
        primary_auditor: if kind == PROBLEM_KIND {
            AuditorType::Human
        } else {
            AuditorType::Auto
        },
        secondary_auditors: if kind == PROBLEM_KIND {
            vec![AuditorType::Llm]
        } else {
            Vec::new()
        },
        complexity,
    }
}

fn depends(from: &str, to: &str) -> HdagEdge {
    HdagEdge {
        from: from.to_string(),
        to: to.to_string(),
        relationship: Relationship::DependsOn,
        strength: Some(Strength::Strong),
        confidence: Some(1.0),
    }
}

fn build(trace: &Trace, plan: &ProofPlan) -> Result<Hdag, DecomposeError> {
    let problem = trace.problem.trim();
    if problem.len() > trust_protocol::hdag::MAX_SEGMENT_BYTES {
        return Err(DecomposeError::ProblemTooLong { len: problem.len() });
    }
    let segments = plan.steps.len().saturating_add(1);
    if segments > MAX_DECOMPOSED_SEGMENTS {
        return Err(DecomposeError::ProofTooLong {
            steps: plan.steps.len(),
            max: MAX_DECOMPOSED_SEGMENTS.saturating_sub(1),
        });
    }
    let mut nodes = vec![node(
        "G1".into(),
        problem,
        AbstractionLevel::Goal,
        PROBLEM_KIND,
        Complexity::High,
    )];
    let mut edges = Vec::new();
    let output = trace.output.trim();
    let answer = if output.is_empty() {
        // The structure node needs a text of the trace: the last step's.
        plan.steps
            .last()
            .and_then(|s| trace.thinking.get(s.span.clone()))
            .unwrap_or(problem)
    } else {
        output
    };
    nodes.push(node(
        STRUCTURE_ID.into(),
        answer,
        AbstractionLevel::Step,
        PROOF_STRUCTURE_KIND,
        Complexity::Low,
    ));
    edges.push(HdagEdge {
        relationship: Relationship::DecomposesTo,
        ..depends("G1", STRUCTURE_ID)
    });
    edges.push(depends(STRUCTURE_ID, "G1"));
    for (i, s) in plan.steps.iter().enumerate() {
        let content = trace
            .thinking
            .get(s.span.clone())
            .filter(|c| !c.trim().is_empty())
            .ok_or(DecomposeError::ProofStep {
                step: i,
                line: s.line,
            })?;
        let id = step_id(i);
        nodes.push(node(
            id.clone(),
            content,
            AbstractionLevel::Step,
            PROOF_STEP_KIND,
            Complexity::Low,
        ));
        edges.push(depends(&id, STRUCTURE_ID));
        edges.push(depends(&id, "G1"));
        let mut cited: Vec<usize> = Vec::new();
        for c in &s.cites {
            match c.source {
                Source::Step(k) => cited.push(k),
                Source::Hypothesis(h) => {
                    if let Some(h) = plan.hypotheses.get(h) {
                        cited.push(h.open_step);
                    }
                }
                Source::Premise(_) | Source::Axiom(_) | Source::Identity(_) => {}
            }
        }
        for h in &s.active_hypotheses {
            if let Some(h) = plan.hypotheses.get(*h) {
                cited.push(h.open_step);
            }
        }
        cited.sort_unstable();
        cited.dedup();
        for k in cited.into_iter().filter(|k| *k < i) {
            edges.push(depends(&id, &step_id(k)));
        }
    }
    let hdag = Hdag {
        nodes,
        edges,
        metadata: None,
    };
    hdag.validate()?;
    Ok(hdag)
}
