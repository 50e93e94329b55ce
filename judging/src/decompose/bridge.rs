//! Editing an HDAG's edges when nodes leave it: shared by the LLM decomposition's checks
//! ([`super::llm`]) and the tool segments of agent transcripts ([`super::agent`]).

use std::collections::BTreeSet;

use trust_protocol::hdag::{HdagEdge, MAX_EDGES, Relationship, Strength};

/// The edges without those touching a dropped node; a `depends_on` or `decomposes_to`
/// chain through one is kept by joining its ends (`A -> X -> B` becomes `A -> B`).
pub(crate) fn bridge(edges: Vec<HdagEdge>, dropped: &[String]) -> Vec<HdagEdge> {
    let gone: BTreeSet<&str> = dropped.iter().map(String::as_str).collect();
    let mut out: Vec<HdagEdge> = Vec::new();
    for x in &gone {
        for rel in [Relationship::DependsOn, Relationship::DecomposesTo] {
            let ins: Vec<&HdagEdge> = edges
                .iter()
                .filter(|e| e.relationship == rel && e.to == *x && !gone.contains(e.from.as_str()))
                .collect();
            let outs: Vec<&HdagEdge> = edges
                .iter()
                .filter(|e| e.relationship == rel && e.from == *x && !gone.contains(e.to.as_str()))
                .collect();
            for a in &ins {
                for b in &outs {
                    if a.from != b.to && out.len() < MAX_EDGES {
                        out.push(HdagEdge {
                            from: a.from.clone(),
                            to: b.to.clone(),
                            relationship: rel,
                            strength: Some(Strength::Weak),
                            confidence: None,
                        });
                    }
                }
            }
        }
    }
    let mut kept: Vec<HdagEdge> = edges
        .into_iter()
        .filter(|e| !gone.contains(e.from.as_str()) && !gone.contains(e.to.as_str()))
        .collect();
    kept.extend(out);
    kept
}
