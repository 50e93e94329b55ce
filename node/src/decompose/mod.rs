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
//! Every segment's content is an exact span of the trace, so auditors judge the model's
//! own words. `depends_on` edges come from the symbols and values each unit uses: for each
//! of its symbols, a unit depends on the latest earlier unit that mentions it (failing
//! any, for each non-trivial number, on the latest one that mentions it), and on the GOAL
//! when it uses a number stated in the problem, in digits or in words (`twice`, `a
//! dozen`). A rule application depends on the step that derived its antecedent and on
//! the problem that states the rules; a truth-table step on the problem (the assignment)
//! and on the steps that evaluated its parts.
//!
//! Routing: a unit the Computer tier can read ([`computer::readable`]) → Computer
//! (`T_Auto`), other prose → LLM, and anything the heuristics are unsure of (very long
//! units) or that carries the final answer of a high-stakes trace → Human.
//!
//! A provider may instead supply its own HDAG ([`from_provider`]), which is validated
//! and checked span by span against the trace.

pub mod llm;
pub(crate) mod text;

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    hdag::{
        AbstractionLevel, AuditorType, Complexity, Hdag, HdagEdge, HdagError, HdagNode, MAX_NODES,
        MAX_SEGMENT_BYTES, Relationship, Strength,
    },
    trace::Trace,
};

use self::text::{Unit, numbers_in, paragraphs, symbols_in, units_of};
use crate::computer::{self, RuleUse};

/// Most steps one unit is linked to through the numbers it shares with them.
const MAX_NUMBER_LINKS: usize = 4;
/// Units longer than this are routed to a person: the heuristics could not cut them.
const LONG_UNIT_BYTES: usize = 600;

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
    /// The trace yields more segments than an HDAG may have.
    #[error("the trace splits into more than {MAX_NODES} segments; submit a shorter trace")]
    TooManySegments,
    /// One unit is larger than a segment may be.
    #[error(
        "a reasoning step of {len} bytes starting with {start:?} exceeds the {MAX_SEGMENT_BYTES}-byte segment limit"
    )]
    UnitTooLong {
        /// Its length.
        len: usize,
        /// Its first characters.
        start: String,
    },
    /// The resulting or supplied HDAG is invalid.
    #[error(transparent)]
    Hdag(#[from] HdagError),
}

/// Builds the HDAG of a trace with the heuristic templates.
pub fn decompose(trace: &Trace, options: &Options) -> Result<Hdag, DecomposeError> {
    let mut b = Builder::new(trace);

    let goal = b.push(Seg {
        prefix: "G",
        content: trace.problem.trim(),
        level: AbstractionLevel::Goal,
        kind: "objective_statement",
        auditor: AuditorType::Human,
        secondary: vec![AuditorType::Llm],
        complexity: Complexity::High,
    })?;

    let paras = paragraphs(&trace.thinking);
    let mut parent = goal;
    let mut step_count = 0usize;
    for (pi, para) in paras.iter().enumerate() {
        let units = units_of(para);
        let is_plan = pi == 0
            && paras.len() > 1
            && units
                .iter()
                .all(|u| !u.is_math && !computer::readable(u.text))
            && text::plans(para);
        if is_plan {
            let s = b.push(Seg {
                prefix: "S",
                content: para,
                level: AbstractionLevel::Strategy,
                kind: "approach_description",
                auditor: AuditorType::Llm,
                secondary: vec![AuditorType::Human],
                complexity: Complexity::Medium,
            })?;
            b.edge(goal, s, Relationship::DecomposesTo, 1.0);
            parent = s;
            continue;
        }
        let under = if units.len() > 1 {
            let t = b.push(Seg {
                prefix: "T",
                content: para,
                level: AbstractionLevel::Tactic,
                kind: "method_definition",
                auditor: AuditorType::Llm,
                secondary: vec![AuditorType::Human],
                complexity: Complexity::Medium,
            })?;
            b.edge(parent, t, Relationship::DecomposesTo, 1.0);
            t
        } else {
            parent
        };
        for u in &units {
            let id = b.push_unit(u)?;
            b.edge(under, id, Relationship::DecomposesTo, 1.0);
            b.link_dependencies(id, u.text, goal);
            step_count = step_count.saturating_add(1);
        }
    }
    if step_count == 0 {
        return Err(DecomposeError::NoSteps);
    }

    let output = trace.output.trim();
    let conclusion = b.push(Seg {
        prefix: "F",
        content: output,
        level: AbstractionLevel::Step,
        kind: "conclusion",
        auditor: if options.high_stakes {
            AuditorType::Human
        } else if computer::readable(output) {
            AuditorType::Auto
        } else {
            AuditorType::Llm
        },
        secondary: vec![AuditorType::Llm],
        complexity: Complexity::Low,
    })?;
    b.edge(goal, conclusion, Relationship::DecomposesTo, 1.0);
    if !b.link_dependencies(conclusion, output, goal) {
        // An answer that shares no symbol with the steps still rests on the last one.
        if let Some(last) = b.last_step {
            b.edge(conclusion, last, Relationship::DependsOn, 0.6);
        }
    }

    let hdag = b.finish();
    hdag.validate()?;
    hdag.validate_spans(trace)?;
    Ok(hdag)
}

/// Validates a provider-supplied HDAG: structure, bounds, and that every segment is an
/// exact span of the trace.
pub fn from_provider(trace: &Trace, json: &str) -> Result<Hdag, DecomposeError> {
    let hdag = Hdag::from_json(json)?;
    hdag.validate_spans(trace)?;
    Ok(hdag)
}

/// Node indices with every `depends_on` target before its user (Kahn's algorithm, linear
/// in nodes and edges; validation has ruled out cycles, and any node left over by a cycle
/// is simply not judged).
pub fn dependency_order(hdag: &Hdag) -> Vec<usize> {
    let index: BTreeMap<&str, usize> = hdag
        .nodes
        .iter()
        .enumerate()
        .map(|(i, n)| (n.id.as_str(), i))
        .collect();
    let mut waiting = vec![0usize; hdag.nodes.len()];
    let mut users: Vec<Vec<usize>> = vec![Vec::new(); hdag.nodes.len()];
    for e in &hdag.edges {
        if e.relationship != Relationship::DependsOn {
            continue;
        }
        if let (Some(&user), Some(&dep)) = (index.get(e.from.as_str()), index.get(e.to.as_str())) {
            waiting[user] += 1;
            users[dep].push(user);
        }
    }
    let mut ready: std::collections::VecDeque<usize> =
        (0..hdag.nodes.len()).filter(|&i| waiting[i] == 0).collect();
    let mut order = Vec::with_capacity(hdag.nodes.len());
    while let Some(i) = ready.pop_front() {
        order.push(i);
        for &u in &users[i] {
            waiting[u] -= 1;
            if waiting[u] == 0 {
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

/// What a unit mentions, for dependency edges.
struct Mentions {
    symbols: BTreeSet<String>,
    numbers: BTreeSet<String>,
    /// The rule application the unit makes, if it is one.
    rule: Option<RuleUse>,
    /// The formula a truth-table step evaluates (written uniformly), and its atoms.
    formula: Option<(String, Vec<String>)>,
}

struct Builder<'t> {
    /// Numbers the problem states, in digits or in words (`twice` → 2, `a dozen` → 12).
    problem_numbers: BTreeSet<String>,
    problem: String,
    nodes: Vec<HdagNode>,
    edges: Vec<HdagEdge>,
    counters: Vec<(&'static str, usize)>,
    /// Step-level units so far, in order, with what they mention.
    steps: Vec<(usize, Mentions)>,
    last_step: Option<usize>,
    _trace: &'t Trace,
}

impl<'t> Builder<'t> {
    fn new(trace: &'t Trace) -> Self {
        Self {
            problem_numbers: numbers_in(&trace.problem)
                .into_iter()
                .chain(computer::number_words(&trace.problem))
                .collect(),
            problem: trace.problem.clone(),
            nodes: Vec::new(),
            edges: Vec::new(),
            counters: Vec::new(),
            steps: Vec::new(),
            last_step: None,
            _trace: trace,
        }
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
        if self.nodes.len() >= MAX_NODES {
            return Err(DecomposeError::TooManySegments);
        }
        if seg.content.len() > MAX_SEGMENT_BYTES {
            return Err(DecomposeError::UnitTooLong {
                len: seg.content.len(),
                start: seg.content.chars().take(40).collect(),
            });
        }
        let id = self.next_id(seg.prefix);
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
            let readable = computer::readable(u.text);
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
        } else if computer::readable(u.text) {
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

    /// Adds `depends_on` edges from `id` to the latest earlier step sharing a symbol (or
    /// else a number), and to the GOAL when it uses a number the problem states. Returns
    /// whether any step dependency was found.
    fn link_dependencies(&mut self, id: usize, text: &str, goal: usize) -> bool {
        // An `x` written as a times sign (`20 questions x 0.5`) is not a symbol.
        let unknowns = computer::unknowns(text);
        let m = Mentions {
            symbols: symbols_in(text)
                .into_iter()
                .filter(|s| unknowns.contains(s))
                .collect(),
            numbers: numbers_in(text)
                .into_iter()
                .filter(|n| n != "0" && n != "1")
                .collect(),
            rule: computer::rule_use(text),
            formula: computer::truth_formula(text),
        };
        if let Some(r) = &m.rule {
            return self.link_rule(id, r.clone(), m, goal);
        }
        if let Some(a) = computer::fact_claim(text) {
            // `F is now derived.` rests like a rule whose consequent is F.
            let r = RuleUse {
                from: a.clone(),
                to: a.clone(),
                derived: a,
            };
            return self.link_rule(id, r, m, goal);
        }
        if let Some(f) = &m.formula {
            return self.link_truth(id, f.clone(), m, goal);
        }
        // The problem first: a seat's premises put the givens before the steps, and the
        // local check reads them in this order too.
        if !m.numbers.is_disjoint(&self.problem_numbers) {
            self.edge(id, goal, Relationship::DependsOn, 0.8);
        }
        // For each symbol, the latest earlier step that mentions it; failing any, for each
        // number, the latest earlier step that mentions it (`239/260` rests on both the
        // step that found 239 and the one that found 260).
        let mut targets: Vec<(usize, f64)> = Vec::new();
        for sym in &m.symbols {
            if let Some((i, _)) = self
                .steps
                .iter()
                .rev()
                .find(|(_, prev)| prev.symbols.contains(sym))
                && !targets.iter().any(|(t, _)| t == i)
            {
                targets.push((*i, 0.9));
            }
        }
        if targets.is_empty() {
            for n in &m.numbers {
                if let Some((i, _)) = self
                    .steps
                    .iter()
                    .rev()
                    .find(|(_, prev)| prev.numbers.contains(n))
                    && !targets.iter().any(|(t, _)| t == i)
                    && targets.len() < MAX_NUMBER_LINKS
                {
                    targets.push((*i, 0.7));
                }
            }
            // In trace order, as a seat reads its premises.
            targets.sort_by_key(|(i, _)| *i);
        }
        let found = !targets.is_empty();
        for (to, confidence) in targets {
            self.edge(id, to, Relationship::DependsOn, confidence);
        }
        self.steps.push((id, m));
        found
    }

    /// A rule application rests on the step that derived its antecedent and on the
    /// problem, where the rules and facts are stated.
    fn link_rule(&mut self, id: usize, r: RuleUse, m: Mentions, goal: usize) -> bool {
        let source = self
            .steps
            .iter()
            .rev()
            .find(|(_, prev)| {
                prev.rule
                    .as_ref()
                    .is_some_and(|p| p.derived.eq_ignore_ascii_case(&r.from))
            })
            .map(|(i, _)| *i);
        if let Some(to) = source {
            self.edge(id, to, Relationship::DependsOn, 0.9);
        }
        let in_problem = |atom: &str| {
            self.problem
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w.eq_ignore_ascii_case(atom))
        };
        if in_problem(&r.from) || in_problem(&r.to) {
            self.edge(id, goal, Relationship::DependsOn, 0.8);
        }
        self.steps.push((id, m));
        source.is_some()
    }

    /// A truth-table step rests on the problem (the assignment) and on the latest step
    /// that evaluated each of its proper parts.
    fn link_truth(
        &mut self,
        id: usize,
        (formula, atoms): (String, Vec<String>),
        m: Mentions,
        goal: usize,
    ) -> bool {
        let in_problem = atoms.iter().any(|a| {
            self.problem
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == a)
        });
        if in_problem {
            self.edge(id, goal, Relationship::DependsOn, 0.8);
        }
        let mut parts: Vec<usize> = Vec::new();
        for (i, prev) in self.steps.iter().rev() {
            if let Some((f, _)) = &prev.formula
                && *f != formula
                && formula.contains(f.as_str())
                && !self
                    .steps
                    .iter()
                    .any(|(j, p)| j > i && p.formula.as_ref().is_some_and(|(g, _)| g == f))
            {
                parts.push(*i);
            }
            if parts.len() >= MAX_NUMBER_LINKS * 2 {
                break;
            }
        }
        parts.sort_unstable();
        for &to in &parts {
            self.edge(id, to, Relationship::DependsOn, 0.9);
        }
        self.steps.push((id, m));
        !parts.is_empty()
    }

    fn edge(&mut self, from: usize, to: usize, relationship: Relationship, confidence: f64) {
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
