//! Trace → HDAG decomposition (pure: no I/O, no async).
//!
//! The default is the heuristic, template-based builder the paper's latency discussion
//! proposes (0.0.5.1): no model call, linear in the trace length.
//!
//! - **GOAL**: the problem statement.
//! - **STRATEGY**: an opening paragraph of the thinking that plans without calculating.
//! - **TACTIC**: a paragraph with several step units (its steps hang below it).
//! - **STEP**: one unit — a numbered item, a line, or a sentence of a long line.
//! - **OPERATION**: a unit that is pure mathematics (an equation or calculation).
//! - The final output is a STEP of type `conclusion`.
//!
//! Long traces (up to the 1 MiB trace limit): no segment exceeds the segment limit (a
//! long paragraph's TACTIC is cut at line boundaries, a long sentence at clause ends or
//! spaces), and a trace of more units than one session's seats can vote on
//! ([`MAX_DECOMPOSED_SEGMENTS`]) has its consecutive steps grouped into STEP segments of
//! type `step_group`, which a Computer seat judges step by step.
//!
//! Every segment's content is an exact span of the trace, so auditors judge the model's
//! own words; [`place`] finds where each one sits (its own occurrence when the text
//! repeats). `depends_on` edges come from the symbols and values each unit uses: for each
//! of its symbols, a unit depends on the latest earlier unit that mentions it (failing
//! any, for each non-trivial number, on the latest one that mentions it), and on the GOAL
//! when it uses a number stated in the problem, in digits or in words (`twice`, `a
//! dozen`). A rule application depends on the step that derived its antecedent and on
//! the problem that states the rules; a truth-table step on the problem (the assignment)
//! and on the steps that evaluated its parts.
//!
//! Routing follows one rule: **a tier judges a segment only when its check covers the
//! segment's whole claim.**
//! - The problem statement is the GOAL node of type [`PROBLEM_KIND`]: a given, the
//!   context of every seat, never a segment to judge.
//! - The Computer tier takes what its checkers verify whole: a bare calculation or an
//!   equation (OPERATION), a rule application, a truth-table evaluation, a `FROM` step,
//!   a definition of a name; in a formal problem (its answer a fact of mathematics or
//!   logic, [`readable::is_formal`]) every step it reads, whose words only narrate the
//!   mathematics, and the final answer, checked against the problem itself.
//! - A unit that says something in words and contains a calculation (`Mike has 21+3 = 24
//!   points.`) becomes two segments: the STEP (the claim in context, LLM, then Human)
//!   and below it, by `decomposes_to`, its OPERATION (the bare calculation `21+3 = 24`,
//!   Computer), resting on what the STEP rests on. The OPERATION is evidence for the
//!   STEP, never its verdict.
//! - Other prose → LLM; anything the heuristics are unsure of (very long units) or that
//!   carries the final answer of a high-stakes trace → Human.
//!
//! A provider may instead supply its own HDAG ([`from_provider`]), which is validated
//! and checked span by span against the trace.
//!
//! What the checkers read (step units, the links between steps, whether a text is
//! readable) is asked of [`readable`], their one public reading: the decomposer cuts and
//! routes; it never judges.

mod agent;
mod bridge;
pub mod llm;
pub use agent::enforce_tools;
pub mod place;
pub mod proof;
pub mod sample;
mod text;

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    hdag::{
        AbstractionLevel, AuditorType, Complexity, Hdag, HdagEdge, HdagError, HdagNode, MAX_NODES,
        MAX_SEGMENT_BYTES, Relationship, Strength,
    },
    trace::Trace,
};

use self::text::offset_in;
use crate::computer::readable::{self, Links, Unit, paragraphs};

/// Units longer than this are routed to a person: the heuristics could not cut them.
const LONG_UNIT_BYTES: usize = 600;

/// The type of the GOAL node that is the problem statement itself: a given, the context
/// every seat judges in, and never a segment to judge (a GOAL that restates the goal in
/// the model's own words is a claim like any other).
pub const PROBLEM_KIND: &str = "problem_statement";

/// Most segments the heuristic decomposer makes of one trace, all levels together.
///
/// Every segment becomes one entry of the session's manifest, audited or left out. What
/// bound a long trace first was once the seats' own transactions: a seat committed and
/// revealed one segment per transaction, the mempool takes at most 65 of one account's
/// transactions per block, and on a four-node network a 5,000-step trace cut into 500
/// segments lost 240 votes (125 was the most that held). Seats now batch their votes, up
/// to [`MAX_BATCH_VOTES`](trust_protocol::tx::MAX_BATCH_VOTES) per transaction, so a seat
/// on every segment of a session sends two commit and two reveal transactions at 512.
/// What binds next is the `OpenSession` transaction
/// ([`MAX_TX_BYTES`](trust_protocol::block::MAX_TX_BYTES): an entry takes up to 150 bytes
/// with [`MAX_DEPENDENCIES`](trust_protocol::tx::MAX_DEPENDENCIES) premises, so about 870
/// of them) and the session's [`MAX_SEGMENTS`](trust_protocol::tx::MAX_SEGMENTS) (1,024,
/// planted honeypots included); 512 keeps a margin below both. Measured on a four-node
/// network (`network::long`): a 1,000-step trace in more than 128 segments and the
/// 5,000-step trace at the 1 MiB limit, with no vote missing. A trace with more step
/// units than this has its consecutive steps grouped (see [`decompose`]).
pub const MAX_DECOMPOSED_SEGMENTS: usize = 512;

/// How the builder routes segments to tiers.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Options {
    /// The trace's conclusion matters enough that a person should check it.
    pub high_stakes: bool,
}

/// Why a trace could not be decomposed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum DecomposeError {
    /// The thinking has no content to audit.
    #[error("the thinking process has no reasoning steps to audit")]
    NoSteps,
    /// Even with its steps grouped, the trace needs more segments than a session holds.
    #[error(
        "the trace has {steps} reasoning steps in {bytes} bytes of thinking; grouped into segments of at most {MAX_SEGMENT_BYTES} bytes they still make {segments} segments, more than the {max} a session can hold"
    )]
    TooManySegments {
        /// Step units in the thinking.
        steps: usize,
        /// Bytes of thinking.
        bytes: usize,
        /// Segments the grouping needed (problem and final answer included).
        segments: usize,
        /// The most a session can hold.
        max: usize,
    },
    /// The problem statement is larger than a segment may be.
    #[error(
        "the problem statement is {len} bytes, more than the {MAX_SEGMENT_BYTES}-byte segment limit: it is a single segment (the GOAL the steps rest on) and is not cut"
    )]
    ProblemTooLong {
        /// Its length.
        len: usize,
    },
    /// A provider's HDAG routes to the Computer tier a segment whose claim the checkers
    /// do not cover.
    #[error(
        "segment {id} routes to the Computer tier (T_Auto) a claim in words the checkers cannot judge ({head:?}): they verify only calculations, rule applications and truth tables. Route it to T_LLM or T_Human, and give its bare calculation an OPERATION node of its own (decomposes_to from {id}) routed to T_Auto"
    )]
    NotCovered {
        /// The segment.
        id: String,
        /// The start of its text.
        head: String,
    },
    /// The thinking is a formal proof past a reader limit (size, nesting).
    #[error("the thinking is a formal proof the checkers refuse to read whole: {0}")]
    ProofOverLimit(String),
    /// The thinking is a formal proof of more steps than a session holds.
    #[error(
        "the thinking is a formal proof of {steps} primitive steps; a session checks at most {max} (one segment each, plus the proof's structure)"
    )]
    ProofTooLong {
        /// Primitive steps of the proof.
        steps: usize,
        /// The most a session holds.
        max: usize,
    },
    /// A step of a formal proof has no text of its own in the trace.
    #[error("step {step} of the formal proof (line {line}) has no text of its own in the trace")]
    ProofStep {
        /// The step, from 0.
        step: usize,
        /// Its line in the proof.
        line: usize,
    },
    /// The thinking's tool-call markers do not read ([`trust_protocol::trace::blocks`]).
    #[error("the thinking's tool-call markers do not read: {0}")]
    Blocks(String),
    /// A provider's HDAG does not give a tool call of the thinking one tool segment of its
    /// own, in trace order.
    #[error("{0}")]
    ToolSegments(String),
    /// The resulting or supplied HDAG is invalid.
    #[error(transparent)]
    Hdag(#[from] HdagError),
}

/// Builds the HDAG of a trace with the heuristic templates, in at most
/// [`MAX_DECOMPOSED_SEGMENTS`] segments.
///
/// Long parts are cut so that no segment exceeds [`MAX_SEGMENT_BYTES`]: a paragraph's
/// TACTIC at step (line) boundaries, a step at sentence boundaries (else clause ends,
/// whitespace), the final answer likewise. A trace whose segments would not fit a session
/// has its consecutive steps grouped instead: each group is one STEP segment, an exact
/// span of the thinking of roughly equal size, linked to the groups holding the steps its
/// own steps rest on; TACTIC and STRATEGY nodes are then left out. A Computer seat judges
/// a group step by step ([`check_claim`](crate::computer::check_claim), cutting it
/// with [`readable::steps_of`]). A trace of normal length decomposes exactly as
/// without these limits.
pub fn decompose(trace: &Trace, options: &Options) -> Result<Hdag, DecomposeError> {
    decompose_within(trace, options, MAX_DECOMPOSED_SEGMENTS)
}

/// [`decompose`] with at most `max_segments` segments (at least 3: the problem, one group
/// of steps and the final answer).
pub fn decompose_within(
    trace: &Trace,
    options: &Options,
    max_segments: usize,
) -> Result<Hdag, DecomposeError> {
    // A formal proof is cut by its structure, one primitive step per segment.
    if let Some(hdag) = proof::decompose(trace) {
        return hdag;
    }
    let problem = trace.problem.trim();
    if problem.len() > MAX_SEGMENT_BYTES {
        return Err(DecomposeError::ProblemTooLong { len: problem.len() });
    }
    let thinking = trace.thinking.as_str();
    // A transcript's tool calls and code are cut by their blocks, each one unit.
    if agent::applies(thinking) {
        return agent::decompose(trace, options, max_segments);
    }
    let paras: Vec<Para<'_>> = paragraphs(thinking)
        .into_iter()
        .map(|text| Para {
            text,
            lines: readable::lines_of(text),
        })
        .collect();
    let steps: usize = paras.iter().map(Para::unit_count).sum();
    if steps == 0 {
        return Err(DecomposeError::NoSteps);
    }
    let outputs = readable::cut(trace.output.trim(), MAX_SEGMENT_BYTES);
    let plan = paras.first().is_some_and(|p| {
        paras.len() > 1
            && p.text.len() <= MAX_SEGMENT_BYTES
            && p.units().all(|u| !u.is_math && !readable::readable(u.text))
            && text::plans(p.text)
    });
    let tactics: Vec<Vec<Chunk>> = paras
        .iter()
        .enumerate()
        .map(|(i, p)| {
            if i == 0 && plan {
                Vec::new()
            } else {
                p.chunks(thinking)
            }
        })
        .collect();
    let plan_units = if plan {
        paras.first().map_or(0, Para::unit_count)
    } else {
        0
    };
    if steps <= plan_units {
        return Err(DecomposeError::NoSteps);
    }
    let whole = 1usize
        .saturating_add(usize::from(plan))
        .saturating_add(
            tactics
                .iter()
                .flatten()
                .filter(|c| c.units.len() > 1)
                .count(),
        )
        .saturating_add(steps.saturating_sub(plan_units))
        .saturating_add(outputs.len().max(1));
    let mut b = Builder::new(trace);
    let goal = b.push(Seg {
        prefix: "G",
        content: problem,
        level: AbstractionLevel::Goal,
        kind: PROBLEM_KIND,
        auditor: AuditorType::Human,
        secondary: vec![AuditorType::Llm],
        complexity: Complexity::High,
    })?;
    if whole <= max_segments {
        b.steps_one_by_one(&paras, &tactics, plan, goal)?;
    } else {
        let room = max_segments.saturating_sub(outputs.len().max(1).saturating_add(1));
        let units: Vec<Placed<'_>> = paras.iter().flat_map(|p| p.placed(thinking)).collect();
        let groups = group(&units, room);
        if groups.len() > room || room == 0 {
            return Err(DecomposeError::TooManySegments {
                steps,
                bytes: thinking.len(),
                segments: groups
                    .len()
                    .saturating_add(outputs.len().max(1).saturating_add(1)),
                max: max_segments,
            });
        }
        b.steps_grouped(thinking, &units, &groups, goal)?;
    }

    b.conclude(trace, options, &outputs, goal)?;

    let hdag = b.finish();
    hdag.validate()?;
    Ok(hdag)
}

/// Whether the Computer tier's check covers the whole claim of a unit: a rule
/// application, a fact, a truth-table evaluation or a `FROM` step; a definition of a name
/// with no number in it; pure mathematics it reads; and, in a `formal` problem, any step
/// it reads (its words narrate the mathematics).
fn unit_covered(u: &Unit<'_>, formal: bool) -> bool {
    let t = u.text;
    if readable::rule_use(t).is_some()
        || readable::fact_claim(t).is_some()
        || readable::truth_formula(t).is_some()
        || readable::reads_from(t)
    {
        return true;
    }
    if u.is_definition && !u.is_math && !t.chars().any(|c| c.is_ascii_digit()) {
        return readable::readable(t);
    }
    (u.is_pure_math || formal) && readable::readable(t)
}

/// A paragraph of the thinking with its lines and their step units.
struct Para<'a> {
    text: &'a str,
    lines: Vec<(&'a str, Vec<Unit<'a>>)>,
}

/// A run of a paragraph's units under one TACTIC (the whole paragraph when it fits one
/// segment).
struct Chunk<'a> {
    content: &'a str,
    units: Vec<Unit<'a>>,
}

/// A unit with its place in the thinking: the bytes `start..end`, and `from`, where a
/// span beginning with it may start (its line's start, list marker included, when it
/// opens the line).
#[derive(Clone)]
struct Placed<'a> {
    unit: Unit<'a>,
    from: usize,
    start: usize,
    end: usize,
}

impl<'a> Para<'a> {
    fn unit_count(&self) -> usize {
        self.lines.iter().map(|(_, u)| u.len()).sum()
    }

    fn units(&self) -> impl Iterator<Item = &Unit<'a>> {
        self.lines.iter().flat_map(|(_, u)| u)
    }

    /// Its units placed in `thinking` (of which it is a slice).
    fn placed(&self, thinking: &'a str) -> Vec<Placed<'a>> {
        let mut out = Vec::with_capacity(self.unit_count());
        for (line, units) in &self.lines {
            let line_at = offset_in(thinking, line.trim_start()).unwrap_or(0);
            for (k, u) in units.iter().enumerate() {
                let start = offset_in(thinking, u.text).unwrap_or(line_at);
                let end = start.saturating_add(u.text.len());
                let from = if k == 0 && end.saturating_sub(line_at) <= MAX_SEGMENT_BYTES {
                    line_at.min(start)
                } else {
                    start
                };
                out.push(Placed {
                    unit: u.clone(),
                    from,
                    start,
                    end,
                });
            }
        }
        out
    }

    /// The TACTIC runs of the paragraph: the whole of it when it fits one segment, else
    /// runs of whole lines (of units, for a line longer than a segment), each within
    /// [`MAX_SEGMENT_BYTES`].
    fn chunks(&self, thinking: &'a str) -> Vec<Chunk<'a>> {
        if self.text.len() <= MAX_SEGMENT_BYTES {
            return vec![Chunk {
                content: self.text,
                units: self.units().cloned().collect(),
            }];
        }
        let placed = self.placed(thinking);
        let mut out = Vec::new();
        let mut i = 0usize;
        while let Some(first) = placed.get(i) {
            let mut j = i;
            while let Some(next) = placed.get(j.saturating_add(1))
                && next.end.saturating_sub(first.from) <= MAX_SEGMENT_BYTES
            {
                j = j.saturating_add(1);
            }
            let last_end = placed.get(j).map_or(first.end, |p| p.end);
            out.push(Chunk {
                content: thinking.get(first.from..last_end).unwrap_or("").trim(),
                units: placed
                    .get(i..=j)
                    .unwrap_or(&[])
                    .iter()
                    .map(|p| p.unit.clone())
                    .collect(),
            });
            i = j.saturating_add(1);
        }
        out
    }
}

/// Consecutive runs of `units`, at most `room` of them when the sizes allow: each run
/// closes once it holds its share of the bytes (`1/(room - 1)` of them), or when the
/// next unit would take its span past [`MAX_SEGMENT_BYTES`]. If capped runs make too
/// many, the share doubles. Linear in the number of units per pass.
fn group(units: &[Placed<'_>], room: usize) -> Vec<std::ops::Range<usize>> {
    let total: usize = units.iter().map(|u| u.end.saturating_sub(u.start)).sum();
    let mut share = total.div_ceil(room.saturating_sub(1).max(1)).max(1);
    loop {
        let mut out = Vec::new();
        let mut i = 0usize;
        while let Some(first) = units.get(i) {
            let mut j = i;
            let mut bytes = first.end.saturating_sub(first.start);
            while bytes < share
                && let Some(next) = units.get(j.saturating_add(1))
                && next.end.saturating_sub(first.start) <= MAX_SEGMENT_BYTES
            {
                j = j.saturating_add(1);
                bytes = bytes.saturating_add(next.end.saturating_sub(next.start));
            }
            out.push(i..j.saturating_add(1));
            i = j.saturating_add(1);
        }
        if out.len() <= room || share >= total {
            return out;
        }
        share = share.saturating_mul(2);
    }
}

/// Validates a provider-supplied HDAG: structure, bounds, and that every segment is an
/// exact span of the trace.
///
/// A GOAL node that is the problem statement itself becomes the given it is
/// ([`PROBLEM_KIND`]). A node routed to the Computer tier whose claim the checkers do
/// not cover whole (a claim in words around a calculation) is refused, naming it: the
/// provider knows its trace and chooses the split, so nothing is re-routed silently.
pub fn from_provider(trace: &Trace, json: &str) -> Result<Hdag, DecomposeError> {
    let mut hdag = Hdag::from_json(json)?;
    hdag.validate_spans(trace)?;
    mark_problem(&mut hdag, trace);
    agent::check_tool_segments(&hdag, trace)?;
    let conclusions = conclusion_nodes(&hdag);
    for (i, n) in hdag.nodes.iter().enumerate() {
        if n.primary_auditor == AuditorType::Auto
            && n.kind != PROBLEM_KIND
            && !computer_covers(&n.content, &trace.problem, conclusions.contains(&i))
            && !agent::restates_a_call(&hdag, n)
        {
            return Err(DecomposeError::NotCovered {
                id: n.id.clone(),
                head: text::summary(&n.content),
            });
        }
    }
    Ok(hdag)
}

/// Marks a GOAL node whose text is the trace's problem statement as [`PROBLEM_KIND`]: a
/// given, not a claim.
pub fn mark_problem(hdag: &mut Hdag, trace: &Trace) {
    let problem = trace.problem.trim();
    for n in &mut hdag.nodes {
        if n.abstraction_level == AbstractionLevel::Goal && n.content.trim() == problem {
            n.kind = PROBLEM_KIND.to_string();
        }
    }
}

/// Indices of the conclusion nodes: those of type `conclusion`, else the sinks of
/// `depends_on` below the GOAL level.
fn conclusion_nodes(hdag: &Hdag) -> BTreeSet<usize> {
    let ids = conclusion_ids(hdag);
    hdag.nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| ids.contains(&n.id))
        .map(|(i, _)| i)
        .collect()
}

/// Whether the Computer tier's check covers the whole claim of `content` in a trace of
/// `problem`: the final answer of a formal problem ([`answer`](crate::computer::answer)), else every
/// step of it as the heuristic builder would route it ([`Builder::covers`]).
pub fn computer_covers(content: &str, problem: &str, conclusion: bool) -> bool {
    if conclusion && readable::reads_answer(problem, content) {
        return true;
    }
    // A whole tool call: judged by re-running it.
    if crate::computer::tool::is_tool(content) {
        return true;
    }
    let formal = readable::is_formal(problem);
    let units: Vec<Unit<'_>> = paragraphs(content)
        .into_iter()
        .flat_map(readable::units_of)
        .collect();
    !units.is_empty() && units.iter().all(|u| unit_covered(u, formal))
}

/// Re-routes an HDAG that another decomposer made (the paper's LLM pipeline) by the rule
/// that a tier judges a segment only when its check covers the whole claim: the problem
/// statement becomes a given; a node routed to the Computer tier that it does not cover
/// goes to the LLM tier, and its bare calculation, when it has one the checkers read,
/// becomes an OPERATION below it for the Computer tier. Returns what was changed, for the
/// provider to read.
pub fn enforce_coverage(hdag: &mut Hdag, trace: &Trace) -> Vec<String> {
    mark_problem(hdag, trace);
    let conclusions = conclusion_nodes(hdag);
    let mut notes = Vec::new();
    let mut added: Vec<(HdagNode, usize)> = Vec::new();
    let taken: BTreeSet<String> = hdag.nodes.iter().map(|n| n.id.clone()).collect();
    for (i, n) in hdag.nodes.iter_mut().enumerate() {
        if n.primary_auditor != AuditorType::Auto
            || n.kind == PROBLEM_KIND
            || computer_covers(&n.content, &trace.problem, conclusions.contains(&i))
        {
            continue;
        }
        n.primary_auditor = AuditorType::Llm;
        n.secondary_auditors = vec![AuditorType::Human];
        let mut note = format!(
            "{} is a claim in words the Computer tier cannot judge: routed to the LLM tier",
            n.id
        );
        let single = paragraphs(&n.content)
            .into_iter()
            .flat_map(readable::units_of)
            .count()
            == 1;
        if let Some(span) =
            text::calculation_span(&n.content).filter(|s| single && readable::readable(s))
        {
            let mut k = 1usize;
            let id = loop {
                let id = format!("{}-op{k}", n.id);
                if !taken.contains(&id) {
                    break id;
                }
                k = k.saturating_add(1);
            };
            note.push_str(&format!(
                ", its calculation {span:?} to the Computer tier as {id}"
            ));
            added.push((
                HdagNode {
                    id,
                    content: span.to_string(),
                    abstraction_level: AbstractionLevel::Operation,
                    kind: "calculation".into(),
                    summary: text::summary(span),
                    primary_auditor: AuditorType::Auto,
                    secondary_auditors: vec![AuditorType::Llm],
                    complexity: Complexity::Low,
                },
                i,
            ));
        }
        notes.push(note);
    }
    for (op, parent) in added {
        if hdag.nodes.len() >= MAX_NODES {
            break;
        }
        let Some(step) = hdag.nodes.get(parent).map(|n| n.id.clone()) else {
            continue;
        };
        // The OPERATION rests on what its STEP rests on.
        let premises: Vec<HdagEdge> = hdag
            .edges
            .iter()
            .filter(|e| e.relationship == Relationship::DependsOn && e.from == step)
            .map(|e| HdagEdge {
                from: op.id.clone(),
                ..e.clone()
            })
            .collect();
        hdag.edges.push(HdagEdge {
            from: step,
            to: op.id.clone(),
            relationship: Relationship::DecomposesTo,
            strength: Some(Strength::Strong),
            confidence: Some(1.0),
        });
        hdag.edges.extend(premises);
        // An OPERATION checks a STEP's calculation; a node at another level keeps its
        // level and its calculation is still checked.
        if let Some(p) = hdag.nodes.get_mut(parent)
            && p.abstraction_level == AbstractionLevel::Operation
        {
            p.abstraction_level = AbstractionLevel::Step;
        }
        hdag.nodes.push(op);
    }
    notes
}

/// The nodes that hold the trace's final output: those of type `conclusion`, a formal
/// proof's structure node, and every step of the proof (a proof holds only when each of its steps does, used or not:
/// a step left unjudged keeps it from passing, a wrong one fails it); in an HDAG
/// without one (a provider's own), the sinks of `depends_on` below the GOAL level (the
/// steps nothing else rests on), OPERATIONs that check a STEP's calculation aside.
pub fn conclusion_ids(hdag: &Hdag) -> BTreeSet<String> {
    let flagged: BTreeSet<String> = hdag
        .nodes
        .iter()
        .filter(|n| {
            n.kind == "conclusion"
                || n.kind == proof::PROOF_STEP_KIND
                || n.kind == proof::PROOF_STRUCTURE_KIND
        })
        .map(|n| n.id.clone())
        .collect();
    if !flagged.is_empty() {
        return flagged;
    }
    let checks = supported_steps(hdag);
    let used: BTreeSet<&str> = hdag
        .edges
        .iter()
        .filter(|e| e.relationship == Relationship::DependsOn)
        .filter(|e| {
            hdag.index_of(&e.from)
                .is_none_or(|i| !checks.contains_key(&i))
        })
        .map(|e| e.to.as_str())
        .collect();
    hdag.nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| {
            n.abstraction_level != AbstractionLevel::Goal
                && !checks.contains_key(i)
                && !used.contains(n.id.as_str())
        })
        .map(|(_, n)| n.id.clone())
        .collect()
}

/// The OPERATIONs that check the calculation of a STEP (the paper's STEP → OPERATION
/// decomposition: a `decomposes_to` edge from a STEP-level node to an OPERATION-level
/// one), each with that STEP, by node index. Such an OPERATION is evidence for its STEP,
/// not a claim of the trace: its weight counts towards the STEP, and an error in it makes
/// the STEP wrong. An OPERATION with several STEP parents checks the first.
pub fn supported_steps(hdag: &Hdag) -> BTreeMap<usize, usize> {
    let index = hdag.positions();
    let level = |i: usize| hdag.nodes.get(i).map(|n| n.abstraction_level);
    let mut out = BTreeMap::new();
    for e in &hdag.edges {
        if e.relationship != Relationship::DecomposesTo {
            continue;
        }
        if let (Some(&step), Some(&op)) = (index.get(e.from.as_str()), index.get(e.to.as_str()))
            && level(step) == Some(AbstractionLevel::Step)
            && level(op) == Some(AbstractionLevel::Operation)
        {
            out.entry(op).or_insert(step);
        }
    }
    out
}

/// The OPERATION the decomposer gives a worded STEP of text `text` in a trace whose
/// problem is `problem`: the bare calculation inside it, or the whole text where the bare
/// calculation reads differently from it (a value before the first `=` that belongs to
/// the words before it, judged on the problem alone); `None` when the text holds no
/// calculation the checkers read. A provider forging a worded honeypot splits it by the
/// same rule, so that the honeypot and its OPERATION look like a real STEP and its own.
pub fn operation_of<'a>(text: &'a str, problem: &str) -> Option<&'a str> {
    let span = text::calculation_span(text)?;
    let content = if span.len() == text.len() || readable::reads_alike(span, text, problem) {
        span
    } else {
        text
    };
    readable::readable(content).then_some(content)
}

/// Node indices with every `depends_on` target before its user (Kahn's algorithm, linear
/// in nodes and edges; validation has ruled out cycles, and any node left over by a cycle
/// is simply not judged).
pub fn dependency_order(hdag: &Hdag) -> Vec<usize> {
    let index: BTreeMap<&str, usize> = hdag.positions();
    let mut waiting = vec![0usize; hdag.nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); hdag.nodes.len()];
    for e in &hdag.edges {
        if e.relationship != Relationship::DependsOn {
            continue;
        }
        if let (Some(&user), Some(&dep)) = (index.get(e.from.as_str()), index.get(e.to.as_str()))
            && let (Some(w), Some(us)) = (waiting.get_mut(user), users.get_mut(dep))
        {
            *w = w.saturating_add(1);
            us.push(user);
        }
    }
    let mut ready: std::collections::VecDeque<usize> = waiting
        .iter()
        .enumerate()
        .filter(|&(_, &w)| w == 0)
        .map(|(i, _)| i)
        .collect();
    let mut order = Vec::with_capacity(hdag.nodes.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &u in users.get(i).map(Vec::as_slice).unwrap_or_default() {
            let Some(w) = waiting.get_mut(u) else {
                continue;
            };
            *w = w.saturating_sub(1);
            if *w == 0 {
                ready.push_back(u);
            }
        }
    }
    order
}

struct Seg<'a> {
    prefix: &'static str,
    content: &'a str,
    level: AbstractionLevel,
    kind: &'static str,
    auditor: AuditorType,
    secondary: Vec<AuditorType>,
    complexity: Complexity,
}

struct Builder<'t> {
    /// The problem is formal ([`readable::is_formal`]): its steps' words only
    /// narrate mathematics, so a step the checkers read is covered by them whole.
    formal: bool,
    problem: String,
    nodes: Vec<HdagNode>,
    edges: Vec<HdagEdge>,
    /// Edges made so far (from, to, kind): a group of steps links to another once.
    made: BTreeSet<(usize, usize, Relationship)>,
    counters: Vec<(&'static str, usize)>,
    /// What each step-level node rests on, read as the checkers read it.
    links: Links,
    last_step: Option<usize>,
    trace: &'t Trace,
    /// The tool segments made so far, in trace order (an agent transcript's; empty
    /// otherwise): the steps after one that use its result rest on it.
    tools: Vec<agent::Tool>,
}

impl<'t> Builder<'t> {
    fn new(trace: &'t Trace) -> Self {
        Self {
            formal: readable::is_formal(&trace.problem),
            problem: trace.problem.clone(),
            nodes: Vec::new(),
            edges: Vec::new(),
            made: BTreeSet::new(),
            counters: Vec::new(),
            links: Links::new(&trace.problem),
            last_step: None,
            trace,
            tools: Vec::new(),
        }
    }

    /// One segment per unit: STRATEGY for an opening plan, a TACTIC per paragraph (per
    /// run of its lines when it is longer than a segment) with its units below.
    fn steps_one_by_one(
        &mut self,
        paras: &[Para<'_>],
        tactics: &[Vec<Chunk<'_>>],
        plan: bool,
        goal: usize,
    ) -> Result<(), DecomposeError> {
        let mut parent = goal;
        for (pi, (para, chunks)) in paras.iter().zip(tactics).enumerate() {
            if pi == 0 && plan {
                let s = self.push(Seg {
                    prefix: "S",
                    content: para.text,
                    level: AbstractionLevel::Strategy,
                    kind: "approach_description",
                    auditor: AuditorType::Llm,
                    secondary: vec![AuditorType::Human],
                    complexity: Complexity::Medium,
                })?;
                self.edge(goal, s, Relationship::DecomposesTo, 1.0);
                parent = s;
                continue;
            }
            for chunk in chunks {
                let under = if chunk.units.len() > 1 {
                    let t = self.push(Seg {
                        prefix: "T",
                        content: chunk.content,
                        level: AbstractionLevel::Tactic,
                        kind: "method_definition",
                        auditor: AuditorType::Llm,
                        secondary: vec![AuditorType::Human],
                        complexity: Complexity::Medium,
                    })?;
                    self.edge(parent, t, Relationship::DecomposesTo, 1.0);
                    t
                } else {
                    parent
                };
                for u in &chunk.units {
                    let id = self.push_unit(u)?;
                    self.edge(under, id, Relationship::DecomposesTo, 1.0);
                    self.link_dependencies(id, u.text, goal);
                    if self.is_worded_step(id) {
                        self.split_calculation(id, u.text)?;
                    }
                    self.after_tools(id, u.text)?;
                }
            }
        }
        Ok(())
    }

    /// One segment per run of consecutive units (see [`group`]), under the GOAL. A run of
    /// one unit is that unit's own segment. A group goes to the Computer tier when it can
    /// read every step of it, to a person when one step is too long for the heuristics,
    /// else to the LLM tier. Each unit is linked as on its own, from its group: a group
    /// rests on the groups holding what its steps rest on.
    fn steps_grouped(
        &mut self,
        thinking: &str,
        units: &[Placed<'_>],
        groups: &[std::ops::Range<usize>],
        goal: usize,
    ) -> Result<(), DecomposeError> {
        for range in groups {
            let members = units.get(range.clone()).unwrap_or(&[]);
            let id = match members {
                [one] => self.push_unit(&one.unit)?,
                [first, .., last] => {
                    let content = thinking.get(first.start..last.end).unwrap_or("").trim();
                    let (auditor, complexity) =
                        if members.iter().any(|p| p.unit.text.len() > LONG_UNIT_BYTES) {
                            (AuditorType::Human, Complexity::High)
                        } else if members.len() <= readable::MAX_GROUP_STEPS
                            && members.iter().all(|p| self.covers(&p.unit))
                        {
                            (AuditorType::Auto, Complexity::Low)
                        } else {
                            (AuditorType::Llm, Complexity::Medium)
                        };
                    let id = self.push(Seg {
                        prefix: "SG",
                        content,
                        level: AbstractionLevel::Step,
                        kind: "step_group",
                        secondary: if auditor == AuditorType::Auto {
                            vec![AuditorType::Llm]
                        } else {
                            vec![AuditorType::Human]
                        },
                        auditor,
                        complexity,
                    })?;
                    self.last_step = Some(id);
                    id
                }
                [] => continue,
            };
            self.edge(goal, id, Relationship::DecomposesTo, 1.0);
            for p in members {
                self.link_dependencies(id, p.unit.text, goal);
            }
        }
        Ok(())
    }

    fn next_id(&mut self, prefix: &'static str) -> String {
        let n = match self.counters.iter_mut().find(|(p, _)| *p == prefix) {
            Some((_, n)) => {
                *n = n.saturating_add(1);
                *n
            }
            None => {
                self.counters.push((prefix, 1));
                1
            }
        };
        format!("{prefix}{n}")
    }

    fn push(&mut self, seg: Seg<'_>) -> Result<usize, DecomposeError> {
        let id = self.next_id(seg.prefix);
        // Every content is cut from the trace itself: checked here by where it lies, in
        // constant time, rather than by searching the trace for it.
        let t = self.trace;
        let within = [&t.problem, &t.thinking, &t.output]
            .iter()
            .any(|f| offset_in(f, seg.content).is_some());
        if !within {
            return Err(DecomposeError::Hdag(HdagError::NotASpan(id)));
        }
        if seg.content.len() > MAX_SEGMENT_BYTES {
            return Err(DecomposeError::Hdag(HdagError::OversizedContent {
                id,
                len: seg.content.len(),
                max: MAX_SEGMENT_BYTES,
            }));
        }
        if self.nodes.len() >= MAX_NODES {
            return Err(DecomposeError::Hdag(HdagError::TooMany {
                what: "nodes",
                count: self.nodes.len().saturating_add(1),
                max: MAX_NODES,
            }));
        }
        self.nodes.push(HdagNode {
            summary: text::summary(seg.content),
            id,
            content: seg.content.to_string(),
            abstraction_level: seg.level,
            kind: seg.kind.to_string(),
            primary_auditor: seg.auditor,
            secondary_auditors: seg.secondary,
            complexity: seg.complexity,
        });
        Ok(self.nodes.len().saturating_sub(1))
    }

    /// The final output's STEP nodes (type `conclusion`, one per piece of an output longer
    /// than a segment), each resting on the problem when the checkers read it as the
    /// answer to a formal problem, else on the steps it shares symbols or numbers with (or
    /// the last step); a worded one gets its calculation's OPERATION. Returns their indices.
    fn conclude(
        &mut self,
        trace: &Trace,
        options: &Options,
        outputs: &[&'t str],
        goal: usize,
    ) -> Result<Vec<usize>, DecomposeError> {
        let problem = trace.problem.trim();
        let mut made = Vec::new();
        let parts: Vec<&str> = if outputs.is_empty() {
            vec![trace.output.trim()]
        } else {
            outputs.to_vec()
        };
        for output in parts {
            // The final answer of a formal problem is checked against the problem itself;
            // any other answer means something only in the problem's words.
            let answered = readable::reads_answer(problem, output);
            let auditor = if options.high_stakes {
                AuditorType::Human
            } else if answered {
                AuditorType::Auto
            } else {
                AuditorType::Llm
            };
            let conclusion = self.push(Seg {
                prefix: "F",
                content: output,
                level: AbstractionLevel::Step,
                kind: "conclusion",
                secondary: if auditor == AuditorType::Auto {
                    vec![AuditorType::Llm]
                } else {
                    vec![AuditorType::Human]
                },
                auditor,
                complexity: Complexity::Low,
            })?;
            self.edge(goal, conclusion, Relationship::DecomposesTo, 1.0);
            made.push(conclusion);
            if answered {
                // Checked against the problem itself, the answer rests on the problem alone:
                // a wrong step that leads to a wrong answer is caught here, and one that does
                // not still keeps the trace from passing.
                self.edge(conclusion, goal, Relationship::DependsOn, 1.0);
            } else if !self.link_dependencies(conclusion, output, goal) {
                // An answer that shares no symbol with the steps still rests on the last one.
                if let Some(last) = self.last_step {
                    self.edge(conclusion, last, Relationship::DependsOn, 0.6);
                }
            }
            if auditor != AuditorType::Auto {
                self.split_calculation(conclusion, output)?;
            }
        }
        Ok(made)
    }

    /// Whether the Computer tier's check covers the whole claim of a unit: a rule
    /// application, a fact, a truth-table evaluation or a `FROM` step; a definition of a
    /// name with no number in it; pure mathematics it reads; and, in a formal problem,
    /// any step it reads (its words narrate the mathematics).
    fn covers(&self, u: &Unit<'_>) -> bool {
        unit_covered(u, self.formal)
    }

    fn push_unit(&mut self, u: &Unit<'_>) -> Result<usize, DecomposeError> {
        let (prefix, level, kind, auditor, complexity) = if u.text.len() > LONG_UNIT_BYTES {
            (
                "ST",
                AbstractionLevel::Step,
                "inference",
                AuditorType::Human,
                Complexity::High,
            )
        } else if u.is_math && u.is_pure_math {
            // Pure mathematics is an OPERATION; only a checker that can read it takes it.
            let readable = readable::readable(u.text);
            (
                "O",
                AbstractionLevel::Operation,
                "calculation",
                if readable {
                    AuditorType::Auto
                } else {
                    AuditorType::Llm
                },
                if readable {
                    Complexity::Low
                } else {
                    Complexity::Medium
                },
            )
        } else if self.covers(u) {
            (
                "ST",
                AbstractionLevel::Step,
                if u.is_definition {
                    "definition"
                } else {
                    "inference"
                },
                AuditorType::Auto,
                Complexity::Low,
            )
        } else {
            (
                "ST",
                AbstractionLevel::Step,
                "inference",
                AuditorType::Llm,
                Complexity::Medium,
            )
        };
        let secondary = if auditor == AuditorType::Auto {
            vec![AuditorType::Llm]
        } else {
            vec![AuditorType::Human]
        };
        let id = self.push(Seg {
            prefix,
            content: u.text,
            level,
            kind,
            auditor,
            secondary,
            complexity,
        })?;
        self.last_step = Some(id);
        Ok(id)
    }

    /// Whether node `id` is a STEP judged by a tier that reads words.
    fn is_worded_step(&self, id: usize) -> bool {
        self.nodes.get(id).is_some_and(|n| {
            n.abstraction_level == AbstractionLevel::Step && n.primary_auditor != AuditorType::Auto
        })
    }

    /// Gives the worded STEP `step` (already linked) its OPERATION: the bare calculation
    /// inside its text ([`text::calculation_span`]), for the Computer tier, below it by
    /// `decomposes_to` and resting on what it rests on. Where the bare calculation reads
    /// differently from the whole text (a value before the first `=` that belongs to the
    /// words before it), the OPERATION is the whole text. Nothing when the text holds no
    /// calculation the checkers read.
    fn split_calculation(&mut self, step: usize, text: &str) -> Result<(), DecomposeError> {
        let Some(content) = operation_of(text, &self.problem) else {
            return Ok(());
        };
        let op = self.push(Seg {
            prefix: "O",
            content,
            level: AbstractionLevel::Operation,
            kind: "calculation",
            auditor: AuditorType::Auto,
            secondary: vec![AuditorType::Llm],
            complexity: Complexity::Low,
        })?;
        self.edge(step, op, Relationship::DecomposesTo, 1.0);
        let premises: Vec<(String, Option<f64>)> = self
            .edges
            .iter()
            .filter(|e| e.relationship == Relationship::DependsOn)
            .filter(|e| self.nodes.get(step).is_some_and(|n| n.id == e.from))
            .map(|e| (e.to.clone(), e.confidence))
            .collect();
        for (to, confidence) in premises {
            if let Some(to) = self.nodes.iter().position(|n| n.id == to) {
                self.edge(op, to, Relationship::DependsOn, confidence.unwrap_or(0.8));
            }
        }
        Ok(())
    }

    /// Adds `depends_on` edges from `id` to what the checkers' reading links it to
    /// ([`Links::premises`]): the latest earlier step sharing a symbol (or else a number),
    /// a rule's antecedent, a truth table's parts, and the GOAL when it uses a number the
    /// problem states. Returns whether any step dependency was found.
    fn link_dependencies(&mut self, id: usize, text: &str, goal: usize) -> bool {
        let (premises, found) = self.links.premises(id, text, goal);
        for (to, confidence) in premises {
            self.edge(id, to, Relationship::DependsOn, confidence);
        }
        found
    }

    fn edge(&mut self, from: usize, to: usize, relationship: Relationship, confidence: f64) {
        if from == to || !self.made.insert((from, to, relationship)) {
            return;
        }
        let (Some(f), Some(t)) = (self.nodes.get(from), self.nodes.get(to)) else {
            return;
        };
        self.edges.push(HdagEdge {
            from: f.id.clone(),
            to: t.id.clone(),
            relationship,
            strength: Some(if confidence >= 0.85 {
                Strength::Strong
            } else {
                Strength::Medium
            }),
            confidence: Some(confidence),
        });
    }

    fn finish(self) -> Hdag {
        Hdag {
            nodes: self.nodes,
            edges: self.edges,
            metadata: None,
        }
    }
}

#[cfg(test)]
mod tests;
