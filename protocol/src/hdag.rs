//! Hierarchical DAGs (HDAGs) of reasoning segments.
//!
//! The JSON shape is the paper's "Complete HDAG JSON" (appendix, Step 5): `nodes` with
//! `id, content, abstraction_level, type, summary, primary_auditor, secondary_auditors,
//! complexity`, and `edges` with `from, to, relationship, strength, confidence`. The paper's
//! own examples sometimes name the relationship `type`; that spelling is accepted too.
//!
//! [`Hdag::validate`] checks what every node relies on before a trace is split and sent to
//! auditors: ids unique and well formed, content present and bounded, every edge end
//! exists, and no cycle among `depends_on` / `decomposes_to` edges. Errors name the
//! offending id.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use crate::trace::Trace;

/// Longest segment content accepted, in bytes. Segments are single reasoning steps.
pub const MAX_SEGMENT_BYTES: usize = 64 * 1024;
/// Most nodes one HDAG may have.
pub const MAX_NODES: usize = 4096;
/// Most edges one HDAG may have.
pub const MAX_EDGES: usize = 32 * 1024;
/// Longest node id, in bytes.
pub const MAX_ID_BYTES: usize = 64;
/// Largest HDAG JSON document accepted by [`Hdag::from_json`].
pub const MAX_HDAG_JSON_BYTES: usize = 8 * 1024 * 1024;

/// The five abstraction levels of the paper, from the trace's goal down to single operations.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum AbstractionLevel {
    /// The problem to solve.
    Goal,
    /// The overall approach.
    Strategy,
    /// A method within the approach.
    Tactic,
    /// One inference or calculation step.
    Step,
    /// A single arithmetic or symbolic operation.
    Operation,
}

/// Who should audit a segment: the paper's auditor types.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum AuditorType {
    /// Deterministic checkers (the Computer tier).
    #[serde(rename = "T_Auto")]
    Auto,
    /// A language model.
    #[serde(rename = "T_LLM")]
    Llm,
    /// A person.
    #[serde(rename = "T_Human")]
    Human,
}

/// How hard a segment is to verify.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Complexity {
    /// Mechanical.
    Low,
    /// Needs some judgement.
    Medium,
    /// Needs expertise.
    High,
}

/// The relationship an edge expresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Relationship {
    /// `from` is broken down into `to` (parent to child level).
    DecomposesTo,
    /// `from` uses a result of `to`. Errors propagate along these edges.
    DependsOn,
    /// `from` makes `to` possible.
    Enables,
    /// `from` checks `to`.
    Validates,
    /// `from` is an example of `to`.
    Exemplifies,
    /// `from` refines `to`.
    Refines,
    /// `from` contradicts `to`.
    Contradicts,
}

impl Relationship {
    /// Edges that order the audit and therefore must not form a cycle. `decomposes_to`
    /// points from parent to part and `depends_on` from user to dependency, so the two are
    /// checked in opposite orientation: the paper's HDAGs have a child that both
    /// `depends_on` its parent and is the target of the parent's `decomposes_to`.
    pub fn is_ordering(self) -> bool {
        matches!(self, Relationship::DependsOn | Relationship::DecomposesTo)
    }
}

/// How strong a relationship is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Strength {
    /// Strong.
    Strong,
    /// Medium.
    Medium,
    /// Weak.
    Weak,
}

/// One segment of the trace.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HdagNode {
    /// Unique id within the HDAG (e.g. `G1`, `ST3`).
    pub id: String,
    /// The segment text. For provider-supplied HDAGs it must be an exact span of the trace.
    pub content: String,
    /// Abstraction level.
    pub abstraction_level: AbstractionLevel,
    /// Free-form segment type (`inference`, `calculation`, ...).
    #[serde(rename = "type", default)]
    pub kind: String,
    /// A short summary.
    #[serde(default)]
    pub summary: String,
    /// The tier that audits the segment.
    pub primary_auditor: AuditorType,
    /// Tiers that may audit it too.
    #[serde(default)]
    pub secondary_auditors: Vec<AuditorType>,
    /// Verification complexity.
    #[serde(default = "default_complexity")]
    pub complexity: Complexity,
}

fn default_complexity() -> Complexity {
    Complexity::Medium
}

/// A relationship between two segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HdagEdge {
    /// Source node id.
    pub from: String,
    /// Target node id.
    pub to: String,
    /// What the edge means.
    #[serde(alias = "type")]
    pub relationship: Relationship,
    /// Optional strength.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub strength: Option<Strength>,
    /// Optional confidence in `[0, 1]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub confidence: Option<f64>,
}

/// Optional summary counts a decomposer may attach. Informational only: validation
/// recomputes everything from `nodes` and `edges`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct HdagMetadata {
    /// Number of nodes claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_nodes: Option<u64>,
    /// Number of edges claimed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total_edges: Option<u64>,
    /// Segments per auditor type claimed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub auditor_distribution: BTreeMap<String, u64>,
}

/// A hierarchical DAG of reasoning segments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Hdag {
    /// Segments.
    pub nodes: Vec<HdagNode>,
    /// Relationships.
    #[serde(default)]
    pub edges: Vec<HdagEdge>,
    /// Optional summary counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metadata: Option<HdagMetadata>,
}

/// Why an HDAG was rejected. Each variant names the offending id or edge.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum HdagError {
    /// The JSON could not be parsed into an HDAG.
    #[error("malformed HDAG JSON: {0}")]
    Json(String),
    /// The JSON document is larger than [`MAX_HDAG_JSON_BYTES`].
    #[error("HDAG JSON of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Document length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// There are no nodes.
    #[error("HDAG has no nodes")]
    Empty,
    /// Too many nodes or edges.
    #[error("HDAG has {count} {what}, more than the limit of {max}")]
    TooMany {
        /// `nodes` or `edges`.
        what: &'static str,
        /// How many there are.
        count: usize,
        /// The limit.
        max: usize,
    },
    /// An id is empty, too long, or has characters outside `[A-Za-z0-9_.-]`.
    #[error("invalid node id {0:?}: use 1-64 characters from A-Z a-z 0-9 _ . -")]
    BadId(String),
    /// Two nodes share an id.
    #[error("duplicate node id {0:?}")]
    DuplicateId(String),
    /// A node has no content.
    #[error("node {0:?} has empty content")]
    EmptyContent(String),
    /// A node's content is too long.
    #[error("node {id:?} has {len} bytes of content, more than the limit of {max}")]
    OversizedContent {
        /// Node id.
        id: String,
        /// Content length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// An edge names a node that does not exist.
    #[error("edge {index} ({from} -> {to}) refers to unknown node {missing:?}")]
    DanglingEdge {
        /// Position of the edge in `edges`.
        index: usize,
        /// Source id as written.
        from: String,
        /// Target id as written.
        to: String,
        /// The id that is missing.
        missing: String,
    },
    /// An edge goes from a node to itself.
    #[error("edge {index} is a self-loop on node {id:?}")]
    SelfLoop {
        /// Position of the edge.
        index: usize,
        /// Node id.
        id: String,
    },
    /// An edge confidence is not a number in `[0, 1]`.
    #[error("edge {index} ({from} -> {to}) has confidence {confidence}, outside [0, 1]")]
    BadConfidence {
        /// Position of the edge.
        index: usize,
        /// Source id.
        from: String,
        /// Target id.
        to: String,
        /// The value given.
        confidence: f64,
    },
    /// `depends_on` / `decomposes_to` edges admit no order: the nodes listed each have to
    /// come before the next (a parent before its parts, a dependency before its user).
    #[error("cycle among depends_on/decomposes_to edges: {}", .0.join(" -> "))]
    Cycle(Vec<String>),
    /// A node's content is not an exact span of the trace.
    #[error("node {0:?}: content is not an exact span of the trace")]
    NotASpan(String),
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

impl Hdag {
    /// Each node's position in [`Hdag::nodes`], by id.
    pub fn positions(&self) -> BTreeMap<&str, usize> {
        self.nodes
            .iter()
            .enumerate()
            .map(|(i, n)| (n.id.as_str(), i))
            .collect()
    }

    /// Parses and validates an HDAG from JSON.
    pub fn from_json(json: &str) -> Result<Hdag, HdagError> {
        if json.len() > MAX_HDAG_JSON_BYTES {
            return Err(HdagError::TooLarge {
                len: json.len(),
                max: MAX_HDAG_JSON_BYTES,
            });
        }
        let hdag: Hdag = serde_json::from_str(json).map_err(|e| HdagError::Json(e.to_string()))?;
        hdag.validate()?;
        Ok(hdag)
    }

    /// Position of the node with this id.
    pub fn index_of(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// Checks structure and bounds; see the module docs.
    pub fn validate(&self) -> Result<(), HdagError> {
        if self.nodes.is_empty() {
            return Err(HdagError::Empty);
        }
        if self.nodes.len() > MAX_NODES {
            return Err(HdagError::TooMany {
                what: "nodes",
                count: self.nodes.len(),
                max: MAX_NODES,
            });
        }
        if self.edges.len() > MAX_EDGES {
            return Err(HdagError::TooMany {
                what: "edges",
                count: self.edges.len(),
                max: MAX_EDGES,
            });
        }
        let mut index: BTreeMap<&str, usize> = BTreeMap::new();
        for (i, n) in self.nodes.iter().enumerate() {
            if !valid_id(&n.id) {
                return Err(HdagError::BadId(n.id.clone()));
            }
            if index.insert(n.id.as_str(), i).is_some() {
                return Err(HdagError::DuplicateId(n.id.clone()));
            }
            if n.content.trim().is_empty() {
                return Err(HdagError::EmptyContent(n.id.clone()));
            }
            if n.content.len() > MAX_SEGMENT_BYTES {
                return Err(HdagError::OversizedContent {
                    id: n.id.clone(),
                    len: n.content.len(),
                    max: MAX_SEGMENT_BYTES,
                });
            }
        }
        let mut succ: Vec<Vec<usize>> = vec![Vec::new(); self.nodes.len()];
        for (i, e) in self.edges.iter().enumerate() {
            let dangling = |missing: &str| HdagError::DanglingEdge {
                index: i,
                from: e.from.clone(),
                to: e.to.clone(),
                missing: missing.to_string(),
            };
            let from = *index
                .get(e.from.as_str())
                .ok_or_else(|| dangling(&e.from))?;
            let to = *index.get(e.to.as_str()).ok_or_else(|| dangling(&e.to))?;
            if from == to {
                return Err(HdagError::SelfLoop {
                    index: i,
                    id: e.from.clone(),
                });
            }
            if let Some(c) = e.confidence
                && !(0.0..=1.0).contains(&c)
            {
                return Err(HdagError::BadConfidence {
                    index: i,
                    from: e.from.clone(),
                    to: e.to.clone(),
                    confidence: c,
                });
            }
            // Orient both ordering kinds as "must come before": a parent before the parts
            // it decomposes into, a dependency before what depends on it.
            let (before, after) = match e.relationship {
                Relationship::DecomposesTo => (from, to),
                Relationship::DependsOn => (to, from),
                _ => continue,
            };
            if let Some(s) = succ.get_mut(before) {
                s.push(after);
            }
        }
        if let Some(cycle) = find_cycle(&succ) {
            return Err(HdagError::Cycle(
                cycle
                    .into_iter()
                    .filter_map(|i| self.nodes.get(i).map(|n| n.id.clone()))
                    .collect(),
            ));
        }
        Ok(())
    }

    /// Checks that every node's content is an exact span of the trace (problem, thinking
    /// or output), as provider-supplied HDAGs must be: auditors judge the model's own words.
    pub fn validate_spans(&self, trace: &Trace) -> Result<(), HdagError> {
        for n in &self.nodes {
            let c = n.content.as_str();
            if !(trace.problem.contains(c)
                || trace.thinking.contains(c)
                || trace.output.contains(c))
            {
                return Err(HdagError::NotASpan(n.id.clone()));
            }
        }
        Ok(())
    }

    /// Ids of the nodes that `id` depends on directly (targets of its `depends_on` edges).
    pub fn dependencies_of<'a>(&'a self, id: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.edges
            .iter()
            .filter(move |e| e.relationship == Relationship::DependsOn && e.from == id)
            .map(|e| e.to.as_str())
    }

    /// Distinct relationship kinds present (for summaries).
    pub fn relationship_kinds(&self) -> BTreeSet<Relationship> {
        self.edges.iter().map(|e| e.relationship).collect()
    }
}

/// Returns the nodes of one cycle (first node repeated at the end), if any, using an
/// iterative three-colour depth-first search (no recursion: inputs come from outside).
fn find_cycle(succ: &[Vec<usize>]) -> Option<Vec<usize>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        White,
        Grey,
        Black,
    }
    let n = succ.len();
    let mut colour = vec![Colour::White; n];
    let mut parent: Vec<Option<usize>> = vec![None; n];
    for root in 0..n {
        if colour.get(root) != Some(&Colour::White) {
            continue;
        }
        // Stack of (node, next successor position).
        let mut stack: Vec<(usize, usize)> = vec![(root, 0)];
        if let Some(c) = colour.get_mut(root) {
            *c = Colour::Grey;
        }
        while let Some(top) = stack.last_mut() {
            let (v, pos) = *top;
            let next = succ.get(v).and_then(|s| s.get(pos)).copied();
            match next {
                Some(w) => {
                    top.1 = pos.saturating_add(1);
                    match colour.get(w).copied() {
                        Some(Colour::White) => {
                            if let Some(c) = colour.get_mut(w) {
                                *c = Colour::Grey;
                            }
                            if let Some(p) = parent.get_mut(w) {
                                *p = Some(v);
                            }
                            stack.push((w, 0));
                        }
                        Some(Colour::Grey) => {
                            // Back edge v -> w: walk parents from v up to w.
                            let mut path = vec![v];
                            let mut cur = v;
                            while cur != w {
                                match parent.get(cur).copied().flatten() {
                                    Some(p) => {
                                        path.push(p);
                                        cur = p;
                                    }
                                    None => break,
                                }
                            }
                            path.reverse();
                            path.push(w);
                            return Some(path);
                        }
                        _ => {}
                    }
                }
                None => {
                    if let Some(c) = colour.get_mut(v) {
                        *c = Colour::Black;
                    }
                    stack.pop();
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(id: &str, content: &str) -> serde_json::Value {
        serde_json::json!({
            "id": id, "content": content, "abstraction_level": "STEP", "type": "inference",
            "summary": "", "primary_auditor": "T_Auto", "secondary_auditors": ["T_LLM"],
            "complexity": "Low"
        })
    }

    fn doc(nodes: Vec<serde_json::Value>, edges: serde_json::Value) -> String {
        serde_json::json!({ "nodes": nodes, "edges": edges }).to_string()
    }

    #[test]
    fn paper_shape_parses() {
        let json = r#"{
          "nodes": [
            {"id": "G1", "content": "find the days", "abstraction_level": "GOAL",
             "type": "objective_statement", "summary": "find missing days",
             "primary_auditor": "T_Human", "secondary_auditors": ["T_LLM"], "complexity": "High"},
            {"id": "S1", "content": "model speed", "abstraction_level": "STRATEGY",
             "type": "approach_description", "summary": "model", "primary_auditor": "T_LLM",
             "secondary_auditors": ["T_Auto"], "complexity": "Medium"}
          ],
          "edges": [
            {"from": "G1", "to": "S1", "relationship": "decomposes_to", "strength": "strong", "confidence": 0.95},
            {"from": "S1", "to": "G1", "type": "validates", "strength": "medium", "confidence": 0.8}
          ],
          "metadata": {"total_nodes": 2, "total_edges": 2, "auditor_distribution": {"T_LLM": 1, "T_Human": 1}}
        }"#;
        let h = Hdag::from_json(json).expect("valid");
        assert_eq!(h.nodes.len(), 2);
        assert_eq!(h.nodes[0].abstraction_level, AbstractionLevel::Goal);
        assert_eq!(h.nodes[1].primary_auditor, AuditorType::Llm);
        assert_eq!(h.edges[1].relationship, Relationship::Validates);
        // Serializes back with the paper's field names.
        let back = serde_json::to_string(&h).expect("json");
        assert!(back.contains("\"primary_auditor\":\"T_Human\""));
        assert!(back.contains("\"relationship\":\"decomposes_to\""));
        assert!(back.contains("\"abstraction_level\":\"STRATEGY\""));
    }

    #[test]
    fn duplicate_id_named() {
        let e = Hdag::from_json(&doc(
            vec![node("A", "x"), node("A", "y")],
            serde_json::json!([]),
        ));
        assert_eq!(e, Err(HdagError::DuplicateId("A".into())));
    }

    #[test]
    fn dangling_edge_named() {
        let e = Hdag::from_json(&doc(
            vec![node("A", "x")],
            serde_json::json!([{"from": "A", "to": "B", "relationship": "depends_on"}]),
        ));
        assert!(matches!(e, Err(HdagError::DanglingEdge { ref missing, .. }) if missing == "B"));
        assert!(
            e.err()
                .map(|e| e.to_string())
                .unwrap_or_default()
                .contains("\"B\"")
        );
    }

    #[test]
    fn cycle_named_and_non_ordering_cycles_allowed() {
        let nodes = vec![node("A", "a"), node("B", "b"), node("C", "c")];
        let cyc = serde_json::json!([
            {"from": "A", "to": "B", "relationship": "depends_on"},
            {"from": "B", "to": "C", "relationship": "depends_on"},
            {"from": "C", "to": "A", "relationship": "depends_on"}
        ]);
        match Hdag::from_json(&doc(nodes.clone(), cyc)) {
            Err(HdagError::Cycle(path)) => {
                assert_eq!(path.first(), path.last());
                for id in ["A", "B", "C"] {
                    assert!(path.iter().any(|p| p == id), "{path:?}");
                }
            }
            other => panic!("expected cycle, got {other:?}"),
        }
        // A parent that depends on its own part admits no order.
        let mixed = serde_json::json!([
            {"from": "A", "to": "B", "relationship": "decomposes_to"},
            {"from": "A", "to": "B", "relationship": "depends_on"}
        ]);
        assert!(matches!(
            Hdag::from_json(&doc(nodes.clone(), mixed)),
            Err(HdagError::Cycle(_))
        ));
        // The paper's shape: a part that depends on its parent is fine.
        let paper = serde_json::json!([
            {"from": "A", "to": "B", "relationship": "decomposes_to"},
            {"from": "B", "to": "A", "relationship": "depends_on"},
            {"from": "B", "to": "C", "relationship": "decomposes_to"},
            {"from": "C", "to": "A", "relationship": "depends_on"}
        ]);
        assert!(Hdag::from_json(&doc(nodes.clone(), paper)).is_ok());
        // The same loop through `validates` is not an ordering cycle.
        let ok = serde_json::json!([
            {"from": "A", "to": "B", "relationship": "depends_on"},
            {"from": "B", "to": "C", "relationship": "depends_on"},
            {"from": "C", "to": "A", "relationship": "validates"}
        ]);
        assert!(Hdag::from_json(&doc(nodes, ok)).is_ok());
    }

    #[test]
    fn content_checks() {
        assert_eq!(
            Hdag::from_json(&doc(vec![node("A", "  ")], serde_json::json!([]))),
            Err(HdagError::EmptyContent("A".into()))
        );
        let big = "x".repeat(MAX_SEGMENT_BYTES + 1);
        assert!(matches!(
            Hdag::from_json(&doc(vec![node("A", &big)], serde_json::json!([]))),
            Err(HdagError::OversizedContent { ref id, .. }) if id == "A"
        ));
        assert_eq!(
            Hdag::from_json(&doc(vec![node("a b", "x")], serde_json::json!([]))),
            Err(HdagError::BadId("a b".into()))
        );
        assert_eq!(
            Hdag::from_json(&doc(vec![], serde_json::json!([]))),
            Err(HdagError::Empty)
        );
    }

    #[test]
    fn bad_confidence_and_self_loop() {
        let nodes = vec![node("A", "a"), node("B", "b")];
        assert!(matches!(
            Hdag::from_json(&doc(
                nodes.clone(),
                serde_json::json!([{"from": "A", "to": "B", "relationship": "enables", "confidence": 1.5}])
            )),
            Err(HdagError::BadConfidence { .. })
        ));
        assert!(matches!(
            Hdag::from_json(&doc(
                nodes,
                serde_json::json!([{"from": "A", "to": "A", "relationship": "refines"}])
            )),
            Err(HdagError::SelfLoop { .. })
        ));
    }

    #[test]
    fn unknown_enum_values_are_clear_errors() {
        let mut n = node("A", "x");
        n["primary_auditor"] = serde_json::json!("T_Robot");
        let e = Hdag::from_json(&doc(vec![n], serde_json::json!([])));
        assert!(matches!(e, Err(HdagError::Json(ref m)) if m.contains("T_Robot")));
    }

    #[test]
    fn spans_checked_against_trace() {
        let h = Hdag::from_json(&doc(vec![node("A", "2 + 2 = 4")], serde_json::json!([])))
            .expect("valid");
        let t = Trace {
            problem: "add".into(),
            thinking: "We have 2 + 2 = 4.".into(),
            output: "4".into(),
        };
        assert!(h.validate_spans(&t).is_ok());
        let t2 = Trace {
            thinking: "We have 2+2=4.".into(),
            ..t
        };
        assert_eq!(h.validate_spans(&t2), Err(HdagError::NotASpan("A".into())));
    }

    #[test]
    fn long_chain_has_no_stack_overflow() {
        let n = MAX_NODES;
        let nodes: Vec<_> = (0..n).map(|i| node(&format!("N{i}"), "s")).collect();
        let edges: Vec<_> = (1..n)
            .map(|i| serde_json::json!({"from": format!("N{i}"), "to": format!("N{}", i - 1), "relationship": "depends_on"}))
            .collect();
        assert!(Hdag::from_json(&doc(nodes, serde_json::Value::Array(edges))).is_ok());
    }
}
