//! An HDAG cut down to the nodes a network can audit ([`Restricted`]): what a session's
//! segments are prepared from (`prepare.rs`), what honeypots are forged against
//! (`honeypot.rs`), and what an opening reproduces.

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    hdag::{Hdag, HdagEdge, Relationship},
    tx::{MAX_DEPENDENCIES, Tier},
};

use crate::decompose::{self, conclusion_ids};

/// Longest problem statement repeated as context with every segment (a longer one reaches
/// only the segments that cite it).
pub const MAX_CONTEXT_BYTES: usize = 16 * 1024;

/// A node of the HDAG left out of the session.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped {
    /// Its HDAG id.
    pub id: String,
    /// The tier it was routed to.
    pub tier: Tier,
    /// The kept nodes it rests on, through other dropped ones.
    pub depends_on: Vec<String>,
    /// The dropped nodes it rests on directly.
    pub rests_on_dropped: Vec<String>,
}

/// An HDAG cut down to the nodes a network can audit.
#[derive(Debug, Clone)]
pub struct Restricted {
    /// The HDAG of the kept nodes, `depends_on` edges bridged across dropped ones.
    pub hdag: Hdag,
    /// Dropped nodes, in HDAG order (the problem statement is no node: it is a given).
    pub dropped: Vec<Dropped>,
    /// For each kept node, the text of the dropped nodes its dependencies pass through:
    /// they travel with its ciphertext as givens.
    pub givens: BTreeMap<String, Vec<String>>,
    /// For each kept node, the dropped nodes it rests on directly.
    pub rests_on_dropped: BTreeMap<String, Vec<String>>,
    /// For each OPERATION that checks the calculation of a STEP, that STEP (kept or
    /// dropped): see [`supported_steps`](decompose::supported_steps).
    pub supports: BTreeMap<String, String>,
    /// For each STEP, the text of its OPERATIONs: they travel with its ciphertext, so
    /// that its seats see what the Computer tier checks of it.
    pub operations: BTreeMap<String, Vec<String>>,
    /// The trace's conclusion nodes (kept or dropped): see [`conclusion_ids`].
    pub conclusions: BTreeSet<String>,
    /// The problem statement (the text of the HDAG's problem node; empty without one):
    /// what worded honeypots are forged against ([`super::honeypot`]).
    pub problem: String,
    /// For each kept node, every dropped node whose text travels with it as a given
    /// (directly or through other dropped ones): what an exposure budget counts.
    pub passes_dropped: BTreeMap<String, Vec<String>>,
    /// For each kept node, the kept nodes whose text travels with it as givens rather
    /// than as sealed premises (the older ones of a node resting on more than
    /// [`MAX_DEPENDENCIES`]): its seats read them, but the contract's count of what a seat
    /// sees ([`trust_contracts::sight`]) does not name them, so a session under an
    /// exposure budget leaves such a node out ([`super::exposure::hidden_sight`]).
    pub passes_kept: BTreeMap<String, Vec<String>>,
    /// For a trace whose thinking is a formal proof cut by its structure
    /// ([`decompose::proof`]): the plan its nodes were cut from. Each step's segment and
    /// the structure segment carry their part of it ([`proof_payload`]).
    pub proof: Option<std::sync::Arc<crate::proof::ProofPlan>>,
    /// For each tool segment of a persistent kernel (kept or dropped), the code of that
    /// kernel's earlier calls, in trace order: its seats replay them, so they travel in
    /// its document and are bound to its id ([`tool_cells`]).
    pub cells: BTreeMap<String, Vec<String>>,
}

impl Restricted {
    /// Attaches the plan of `trace` when `trace` is a formal proof and the HDAG is the
    /// one [`decompose::proof`] makes of it (its structure node and step nodes).
    pub fn with_proof_of(self, trace: &trust_protocol::trace::Trace) -> Self {
        let plan = decompose::proof::plan_of(trace)
            .and_then(Result::ok)
            .map(std::sync::Arc::new);
        self.with_proof(plan)
    }

    /// [`Restricted::with_proof_of`] with the trace's plan already read (`None` when its
    /// thinking is no formal proof).
    pub fn with_proof(mut self, plan: Option<std::sync::Arc<crate::proof::ProofPlan>>) -> Self {
        let cut_by_steps = self.hdag.nodes.iter().any(|n| {
            n.kind == decompose::proof::PROOF_STEP_KIND
                || n.kind == decompose::proof::PROOF_STRUCTURE_KIND
        });
        if cut_by_steps {
            self.proof = plan;
        }
        self
    }
}

/// Keeps the nodes whose tier passes `keep`; bridges `depends_on` edges across the others
/// and keeps their text as givens of the kept nodes that rest on them. The problem
/// statement (a node of type [`PROBLEM_KIND`](decompose::PROBLEM_KIND)) is no
/// segment: it is the context every segment is judged in, a given of every kept node (up
/// to [`MAX_CONTEXT_BYTES`]; a longer one reaches the nodes that rest on it). A kept node
/// resting on more than [`MAX_DEPENDENCIES`] kept nodes (a group of a long trace's steps)
/// keeps the latest of them as dependencies and the text of the others as givens: its
/// seats still read every premise. A provider calls it with the tiers the network has
/// auditors for; `trust-node check` with the Computer tier alone, so that its preview
/// judges exactly what Computer seats would receive. Linear in nodes and edges (times the
/// bridging walks).
pub fn restrict(hdag: &Hdag, keep: impl Fn(Tier) -> bool) -> Restricted {
    restrict_nodes(hdag, |n| keep(Tier::from(n.primary_auditor)))
}

/// Sends to the Human tier the claims routed to a tier nobody staffs here, where the HDAG
/// names the Human tier among their second auditors (the decomposer does so for every
/// claim in words it routes to the LLM tier) and `staffed(Tier::Human)` holds: a network
/// without LLM auditors still has its worded claims judged, by people. Calculations
/// (routed to the Computer tier) never move: a person is asked about claims, and a
/// calculation nobody can check stays left out. Returns how many nodes moved. The
/// moved node keeps its id and text, so its segment's blinded id and the trace opening
/// are those of the unmoved node (neither binds a tier).
pub fn route_to_people(hdag: &mut Hdag, staffed: impl Fn(Tier) -> bool) -> usize {
    use trust_protocol::hdag::AuditorType;
    if !staffed(Tier::Human) {
        return 0;
    }
    let mut moved: usize = 0;
    for n in &mut hdag.nodes {
        let tier = Tier::from(n.primary_auditor);
        if n.kind == decompose::PROBLEM_KIND
            || matches!(tier, Tier::Computer | Tier::Human)
            || staffed(tier)
            || !n.secondary_auditors.contains(&AuditorType::Human)
        {
            continue;
        }
        n.primary_auditor = AuditorType::Human;
        n.secondary_auditors.retain(|a| *a != AuditorType::Human);
        moved = moved.saturating_add(1);
    }
    moved
}

/// [`restrict`] by node: keeps the nodes (never the problem statement) `keep` accepts.
pub fn restrict_nodes(
    hdag: &Hdag,
    keep: impl Fn(&trust_protocol::hdag::HdagNode) -> bool,
) -> Restricted {
    let index: BTreeMap<&str, usize> = hdag.positions();
    let mut deps: Vec<Vec<usize>> = vec![Vec::new(); hdag.nodes.len()];
    for e in &hdag.edges {
        if e.relationship != Relationship::DependsOn {
            continue;
        }
        if let (Some(&from), Some(&to)) = (index.get(e.from.as_str()), index.get(e.to.as_str()))
            && let Some(d) = deps.get_mut(from)
        {
            d.push(to);
        }
    }
    let given: Vec<bool> = hdag
        .nodes
        .iter()
        .map(|n| n.kind == decompose::PROBLEM_KIND)
        .collect();
    let is_given = |i: usize| given.get(i).copied().unwrap_or(false);
    let kept: Vec<bool> = hdag
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| !is_given(i) && keep(n))
        .collect();
    let is_kept = |i: usize| kept.get(i).copied().unwrap_or(false);
    // The kept nodes a node rests on, walking through dropped ones, and the dropped
    // nodes met on the way, in the order met.
    let walk = |from: usize| {
        let mut seen = BTreeSet::new();
        let mut stack: Vec<usize> = deps.get(from).cloned().unwrap_or_default();
        let mut targets = BTreeSet::new();
        let mut passed = Vec::new();
        while let Some(d) = stack.pop() {
            if !seen.insert(d) {
                continue;
            }
            if is_kept(d) {
                targets.insert(d);
            } else {
                passed.push(d);
                stack.extend(deps.get(d).into_iter().flatten());
            }
        }
        (targets, passed)
    };
    let name = |i: usize| hdag.nodes.get(i).map(|n| n.id.clone()).unwrap_or_default();
    let text = |i: usize| {
        hdag.nodes
            .get(i)
            .map(|n| n.content.clone())
            .unwrap_or_default()
    };
    // The dropped nodes (not the problem) a node rests on directly, in HDAG order.
    let dropped_deps = |i: usize| -> Vec<String> {
        let mut d: Vec<usize> = deps
            .get(i)
            .into_iter()
            .flatten()
            .copied()
            .filter(|&d| !is_kept(d) && !is_given(d))
            .collect();
        d.sort_unstable();
        d.dedup();
        d.into_iter().map(name).collect()
    };
    let mut edges: Vec<HdagEdge> = hdag
        .edges
        .iter()
        .filter(|e| {
            e.relationship != Relationship::DependsOn
                && index.get(e.from.as_str()).is_some_and(|&i| is_kept(i))
                && index.get(e.to.as_str()).is_some_and(|&i| is_kept(i))
        })
        .cloned()
        .collect();
    let problems: Vec<&trust_protocol::hdag::HdagNode> = hdag
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, _)| is_given(*i))
        .map(|(_, n)| n)
        .collect();
    let mut givens: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut rests_on_dropped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut passes_dropped: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut passes_kept: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut dropped = Vec::new();
    for (i, n) in hdag.nodes.iter().enumerate() {
        if is_given(i) {
            continue;
        }
        let (targets, passed) = walk(i);
        if !is_kept(i) {
            dropped.push(Dropped {
                id: n.id.clone(),
                tier: Tier::from(n.primary_auditor),
                depends_on: targets
                    .into_iter()
                    .map(name)
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect(),
                rests_on_dropped: dropped_deps(i),
            });
            continue;
        }
        let direct = dropped_deps(i);
        if !direct.is_empty() {
            rests_on_dropped.insert(n.id.clone(), direct);
        }
        let mut through: Vec<String> = passed
            .iter()
            .copied()
            .filter(|&d| !is_given(d))
            .map(name)
            .collect();
        through.sort_unstable();
        through.dedup();
        if !through.is_empty() {
            passes_dropped.insert(n.id.clone(), through);
        }
        let mut passed: Vec<String> = passed.into_iter().map(text).collect();
        // The nearest premises stay dependencies (errors propagate along them); older
        // ones beyond the manifest's limit travel as givens, earliest first.
        let extra = targets.len().saturating_sub(MAX_DEPENDENCIES);
        let mut targets: Vec<usize> = targets.into_iter().collect();
        let older: Vec<usize> = targets.drain(..extra).collect();
        if !older.is_empty() {
            passes_kept.insert(n.id.clone(), older.iter().copied().map(name).collect());
        }
        passed.splice(0..0, older.into_iter().map(text));
        // The problem statement is every step's context (the paper's audit form shows the
        // prompt context for every segment): without it a judge cannot tell a number the
        // problem gives from one nobody gave. It travels with each segment, first, when
        // it is short enough to repeat, else with those that rest on it.
        passed.retain(|p| !problems.iter().any(|g| g.content == *p));
        for g in problems.iter().rev() {
            let rests = deps
                .get(i)
                .is_some_and(|d| d.iter().any(|&t| name(t) == g.id));
            if rests || g.content.len() <= MAX_CONTEXT_BYTES {
                passed.insert(0, g.content.clone());
            }
        }
        if !passed.is_empty() {
            givens.insert(n.id.clone(), passed);
        }
        let targets: BTreeSet<String> = targets.into_iter().map(name).collect();
        for to in targets {
            edges.push(HdagEdge {
                from: n.id.clone(),
                to,
                relationship: Relationship::DependsOn,
                strength: None,
                confidence: None,
            });
        }
    }
    let checks = decompose::supported_steps(hdag);
    let mut operations: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (&op, &step) in &checks {
        operations.entry(name(step)).or_default().push(text(op));
    }
    Restricted {
        hdag: Hdag {
            nodes: hdag
                .nodes
                .iter()
                .enumerate()
                .filter(|(i, _)| is_kept(*i))
                .map(|(_, n)| n.clone())
                .collect(),
            edges,
            metadata: None,
        },
        dropped,
        givens,
        rests_on_dropped,
        supports: checks
            .into_iter()
            .map(|(op, step)| (name(op), name(step)))
            .collect(),
        operations,
        conclusions: conclusion_ids(hdag),
        passes_dropped,
        passes_kept,
        problem: problems
            .first()
            .map(|g| g.content.clone())
            .unwrap_or_default(),
        proof: None,
        cells: tool_cells(hdag),
    }
}

/// The earlier cells of each tool segment of `hdag` that runs in a persistent kernel
/// ([`ToolKind::Code`](crate::computer::tool::ToolKind) with cell semantics): the code of
/// every earlier call, in node order (the decomposer's is the trace's; a provider's HDAG
/// must list its tool segments in trace order, see
/// [`decompose::from_provider`]), to the same tool (one kernel per tool name). A
/// script-semantics call replays nothing.
pub fn tool_cells(hdag: &Hdag) -> BTreeMap<String, Vec<String>> {
    use crate::computer::tool::{self, TOOL_KIND, ToolKind};
    use trust_sandbox::Mode;
    let mut kernels: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut out = BTreeMap::new();
    for n in hdag.nodes.iter().filter(|n| n.kind == TOOL_KIND) {
        let Some(t) = tool::read_tool(&n.content) else {
            continue;
        };
        if t.kind() != ToolKind::Code(Mode::Cell) {
            continue;
        }
        let earlier = kernels.entry(t.name.clone()).or_default();
        if !earlier.is_empty() {
            out.insert(n.id.clone(), earlier.clone());
        }
        earlier.push(t.input.to_string());
    }
    out
}
