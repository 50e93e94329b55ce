//! Which earlier steps a step rests on, read from what it mentions: for each of its
//! symbols the latest earlier step that mentions it (failing any, for each non-trivial
//! number, the latest one that mentions it, by value: `$15.00` and `$15` are one number),
//! the problem when it uses a number the problem states (in digits or in words: `twice`,
//! `a dozen`); a rule application rests on the step
//! that derived its antecedent and on the problem that states the rules; a truth-table
//! step on the problem (the assignment) and on the steps that evaluated its parts.
//!
//! The decomposer draws its `depends_on` edges from these links, and a judge of a group of
//! steps gives each step the same premises ([`step_links`](crate::computer::claim::step_links)),
//! so a grouped step is judged with what it would have been judged with on its own.

use std::collections::{BTreeMap, BTreeSet};

use super::{RuleUse, fact_claim, number_words, rule_use, truth_formula, unknowns};
use crate::computer::read::{numbers_in, symbols_in};

/// Most steps one unit is linked to through the numbers it shares with them.
const MAX_NUMBER_LINKS: usize = 4;

/// A number as its value reads, so that one value written two ways links the steps that
/// write it: `$15.00` and `$15` are both `15`, `0.50` is `0.5` (each side of a fraction
/// alike). A step is linked by both forms: `0.0` still links the steps that write `0.0`,
/// though the value 0 alone links nothing.
fn as_value(n: &str) -> String {
    n.split('/')
        .map(|part| {
            if part.contains('.') {
                part.trim_end_matches('0').trim_end_matches('.')
            } else {
                part
            }
        })
        .collect::<Vec<_>>()
        .join("/")
}

/// What a step mentions, for its links.
struct Mentions {
    symbols: BTreeSet<String>,
    numbers: BTreeSet<String>,
    /// The rule application the unit makes, if it is one.
    rule: Option<RuleUse>,
    /// The formula a truth-table step evaluates (written uniformly), and its atoms.
    formula: Option<(String, Vec<String>)>,
}

/// The links of a text's steps, read in order. Steps and the problem are nodes the
/// caller numbers; for each symbol, number, derived atom (lower case) and evaluated
/// formula it keeps the latest step that mentions it: "the latest earlier step" is one
/// lookup, so linking stays linear in the trace.
#[derive(Debug, Clone)]
pub struct Links {
    /// Numbers the problem states, in digits or in words (`twice` → 2, `a dozen` → 12).
    problem_numbers: BTreeSet<String>,
    problem: String,
    latest_symbol: BTreeMap<String, usize>,
    latest_number: BTreeMap<String, usize>,
    latest_derived: BTreeMap<String, usize>,
    latest_formula: BTreeMap<String, usize>,
}

impl Links {
    /// Links for the steps of a trace of `problem` (empty when the problem travels apart).
    pub fn new(problem: &str) -> Self {
        Self {
            problem_numbers: numbers_in(problem)
                .into_iter()
                .flat_map(|n| [as_value(&n), n])
                .chain(number_words(problem))
                .collect(),
            problem: problem.to_string(),
            latest_symbol: BTreeMap::new(),
            latest_number: BTreeMap::new(),
            latest_derived: BTreeMap::new(),
            latest_formula: BTreeMap::new(),
        }
    }

    /// The premises of step `id` (whose text is `text`; `goal` is the problem's node), as
    /// `(node, confidence)` in the order a seat reads them, and whether it rests on any
    /// step other than `id` itself. A step may be linked more than once under the same
    /// `id` (the steps of one group): a link of `id` to itself is the caller's to drop.
    /// Records what the step mentions, as the latest to mention it.
    pub fn premises(&mut self, id: usize, text: &str, goal: usize) -> (Vec<(usize, f64)>, bool) {
        let mut out = Vec::new();
        let found = self.link(id, text, goal, &mut out);
        (out, found)
    }

    /// Pushes onto `out` the premises of step `id`: the latest earlier step sharing a
    /// symbol (or else a number), and the GOAL when it uses a number the problem states.
    /// Returns whether any step dependency was found.
    fn link(&mut self, id: usize, text: &str, goal: usize, out: &mut Vec<(usize, f64)>) -> bool {
        // An `x` written as a times sign (`20 questions x 0.5`) is not a symbol.
        let unknowns = unknowns(text);
        let m = Mentions {
            symbols: symbols_in(text)
                .into_iter()
                .filter(|s| unknowns.contains(s))
                .collect(),
            numbers: numbers_in(text)
                .into_iter()
                .flat_map(|n| [as_value(&n), n])
                .filter(|n| n != "0" && n != "1")
                .collect(),
            rule: rule_use(text),
            formula: truth_formula(text),
        };
        if let Some(r) = &m.rule {
            return self.link_rule(id, r.clone(), m, goal, out);
        }
        if let Some(a) = fact_claim(text) {
            // `F is now derived.` rests like a rule whose consequent is F.
            let r = RuleUse {
                from: a.clone(),
                to: a.clone(),
                derived: a,
            };
            return self.link_rule(id, r, m, goal, out);
        }
        if let Some(f) = &m.formula {
            return self.link_truth(id, f.clone(), m, goal, out);
        }
        // The problem first: a seat's premises put the givens before the steps, and the
        // local check reads them in this order too.
        if !m.numbers.is_disjoint(&self.problem_numbers) {
            out.push((goal, 0.8));
        }
        // For each symbol, the latest earlier step that mentions it; failing any, for each
        // number, the latest earlier step that mentions it (`239/260` rests on both the
        // step that found 239 and the one that found 260).
        let mut targets: Vec<(usize, f64)> = Vec::new();
        for sym in &m.symbols {
            if let Some(&i) = self.latest_symbol.get(sym)
                && !targets.iter().any(|(t, _)| *t == i)
            {
                targets.push((i, 0.9));
            }
        }
        if targets.is_empty() {
            for n in &m.numbers {
                if let Some(&i) = self.latest_number.get(n)
                    && !targets.iter().any(|(t, _)| *t == i)
                    && targets.len() < MAX_NUMBER_LINKS
                {
                    targets.push((i, 0.7));
                }
            }
            // In trace order, as a seat reads its premises.
            targets.sort_by_key(|(i, _)| *i);
        }
        // A step of the same group is no premise of the group: it is inside it.
        let found = targets.iter().any(|(to, _)| *to != id);
        out.extend(targets);
        self.record(id, m);
        found
    }

    /// Notes what step `id` mentions, as the latest to mention it.
    fn record(&mut self, id: usize, m: Mentions) {
        for sym in m.symbols {
            self.latest_symbol.insert(sym, id);
        }
        for n in m.numbers {
            self.latest_number.insert(n, id);
        }
        if let Some(r) = m.rule {
            self.latest_derived
                .insert(r.derived.to_ascii_lowercase(), id);
        }
        if let Some((f, _)) = m.formula {
            self.latest_formula.insert(f, id);
        }
    }

    /// A rule application rests on the step that derived its antecedent and on the
    /// problem, where the rules and facts are stated.
    fn link_rule(
        &mut self,
        id: usize,
        r: RuleUse,
        m: Mentions,
        goal: usize,
        out: &mut Vec<(usize, f64)>,
    ) -> bool {
        let source = self
            .latest_derived
            .get(&r.from.to_ascii_lowercase())
            .copied();
        if let Some(to) = source {
            out.push((to, 0.9));
        }
        let in_problem = |atom: &str| {
            self.problem
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w.eq_ignore_ascii_case(atom))
        };
        if in_problem(&r.from) || in_problem(&r.to) {
            out.push((goal, 0.8));
        }
        self.record(id, m);
        source.is_some_and(|to| to != id)
    }

    /// A truth-table step rests on the problem (the assignment) and on the latest step
    /// that evaluated each of its proper parts (the latest few such parts).
    fn link_truth(
        &mut self,
        id: usize,
        (formula, atoms): (String, Vec<String>),
        m: Mentions,
        goal: usize,
        out: &mut Vec<(usize, f64)>,
    ) -> bool {
        let in_problem = atoms.iter().any(|a| {
            self.problem
                .split(|c: char| !(c.is_alphanumeric() || c == '_'))
                .any(|w| w == a)
        });
        if in_problem {
            out.push((goal, 0.8));
        }
        let mut parts: Vec<usize> = self
            .latest_formula
            .iter()
            .filter(|(f, _)| **f != formula && formula.contains(f.as_str()))
            .map(|(_, &i)| i)
            .collect();
        parts.sort_unstable_by(|a, b| b.cmp(a));
        parts.dedup();
        parts.truncate(MAX_NUMBER_LINKS * 2);
        parts.sort_unstable();
        out.extend(parts.iter().map(|&to| (to, 0.9)));
        self.record(id, m);
        parts.iter().any(|&to| to != id)
    }
}
