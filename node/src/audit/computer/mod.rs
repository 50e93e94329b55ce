//! Computer-tier checkers: deterministic judges of calculation and algebra steps.
//!
//! Pure and synchronous. A checker sees only its segment (the claim), the segments it
//! depends on (premises) and the problem statement (context), and answers with a vote or
//! abstains: a claim it cannot parse or decide is never guessed.
//!
//! What is decided:
//! - **Equality chains** `a = b = c`: every adjacent pair must be equal. Without names the
//!   sides are compared as exact rationals (`2/(3*0.96) = 0.694444...`). The tolerance
//!   rule for stated decimals: a decimal written on its own with `d` decimals matches when
//!   it is the exact value truncated or rounded to `d` decimals (so `0.6944` and `0.6945`
//!   ... only `0.6944` for 25/36, and `0.97` never for 0.96). With names, the pair is tested
//!   as a polynomial identity at seeded random points modulo 2^61 − 1; when a side holds an
//!   approximate decimal (a trailing `...`, or five or more decimals) the sides are compared
//!   numerically at a few points to that precision.
//! - **Derived equations** (`Therefore, 5x = 6x − 14` from `x / (3x − 7) = 2/5`): when the
//!   latest premise equation in the same single name has one solution, the claim must hold
//!   there; when both are proportional it holds everywhere the premise does.
//! - **Definitions** (`Let the numerator be x`, `Let t = 3`) introduce a fresh name and are valid.
//! - **Logic** ([`logic`]): ClaimTrees rule applications and propositional
//!   `p FROM p1, ..., pn` steps by truth table.
//! - **Grounding**: a claim with no premise equation to derive it from, that uses a number
//!   found neither in the context nor in its premises, is `Ungrounded` (ARES).

pub(crate) mod expr;
mod logic;
mod poly;

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{Hash, Vote};

use self::{
    expr::{Expr, P, Rational},
    poly::RatFn,
};

/// Longest claim the checker reads; longer ones are not calculations.
const MAX_CLAIM_CHARS: usize = 400;
/// Random points per identity test.
const PIT_POINTS: u64 = 3;

/// What a checker is given.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The segment to judge.
    pub claim: &'a str,
    /// The segments it depends on, in trace order.
    pub premises: &'a [&'a str],
    /// The problem statement.
    pub context: &'a str,
}

/// A checker's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Judgement {
    /// A decided vote with the reason a person can read.
    Vote {
        /// The vote.
        vote: Vote,
        /// Why.
        reason: String,
    },
    /// The checker cannot decide this segment.
    Abstain(String),
}

impl Judgement {
    fn vote(vote: Vote, reason: impl Into<String>) -> Self {
        Judgement::Vote {
            vote,
            reason: reason.into(),
        }
    }

    /// The vote, if one was cast.
    pub fn as_vote(&self) -> Option<Vote> {
        match self {
            Judgement::Vote { vote, .. } => Some(*vote),
            Judgement::Abstain(_) => None,
        }
    }
}

/// Judges one step. `seed` makes the random points of identity tests reproducible (use
/// data every seat agrees on, e.g. the session and segment ids).
pub fn check(input: &StepInput<'_>, seed: &Hash) -> Judgement {
    let claim = input.claim.trim();
    if claim.chars().count() > MAX_CLAIM_CHARS {
        return Judgement::Abstain("too long to be a single calculation".into());
    }
    let premise_chains: Vec<Vec<Expr>> = input
        .premises
        .iter()
        .filter_map(|p| extract_chain(p))
        .collect();
    let mut premise_names = BTreeSet::new();
    for p in input.premises {
        premise_names.extend(names_in(p));
    }

    if let Some(j) = logic::rule_step(input).or_else(|| logic::from_step(input)) {
        return j;
    }
    if let Some(j) = definition(claim, &premise_names) {
        return j;
    }
    // Every clause that states an equality must be checked: a step is Valid only when all
    // of them hold (`So D = 1.027777/185 = 0.0055555 and 1/D = 180`).
    let clauses: Vec<&str> = claim
        .split(';')
        .flat_map(|c| c.split(" and "))
        .filter(|c| c.contains('='))
        .collect();
    if clauses.is_empty() {
        return Judgement::Abstain("no equation or calculation found".into());
    }
    let definitions = premise_definitions(&premise_chains);
    let mut reasons = Vec::new();
    for clause in clauses {
        let Some(chain) = extract_chain(clause) else {
            return Judgement::Abstain(format!(
                "cannot read the calculation in {:?}",
                clause.trim()
            ));
        };
        match check_chain(
            &chain,
            &definitions,
            &premise_names,
            &premise_chains,
            input,
            seed,
        ) {
            Judgement::Vote {
                vote: Vote::Valid,
                reason,
            } => reasons.push(reason),
            other => return other,
        }
    }
    reasons.dedup();
    Judgement::vote(Vote::Valid, reasons.join("; "))
}

/// Names a premise defines (`t1 = (1/3)/D = 1/(3D)`, `D = 1.027777/185`): the name and
/// the last expression of its chain, unless that expression uses the name itself.
fn premise_definitions(premise_chains: &[Vec<Expr>]) -> BTreeMap<String, Expr> {
    let mut defs = BTreeMap::new();
    for chain in premise_chains {
        if let (Some(Expr::Var(name)), Some(last)) = (chain.first(), chain.last())
            && chain.len() >= 2
        {
            let mut used = BTreeSet::new();
            last.vars(&mut used);
            if !used.contains(name) {
                defs.insert(name.clone(), last.clone());
            }
        }
    }
    defs
}

fn check_chain(
    chain: &[Expr],
    definitions: &BTreeMap<String, Expr>,
    premise_names: &BTreeSet<String>,
    premise_chains: &[Vec<Expr>],
    input: &StepInput<'_>,
    seed: &Hash,
) -> Judgement {
    // `t1 = (1/3)/D = ...` names a fresh quantity: the first equality is a definition.
    let fresh_definition = matches!(chain.first(), Some(Expr::Var(name)) if !premise_names.contains(name))
        && chain.len() > 2;
    let last = chain.len().saturating_sub(2);
    let mut derived = false;
    for (i, w) in chain.windows(2).enumerate() {
        let (Some(a0), Some(b0)) = (w.first(), w.get(1)) else {
            continue;
        };
        if i == 0 && fresh_definition {
            continue;
        }
        let (a, b) = (a0.substitute(definitions), b0.substitute(definitions));
        match identity(&a, &b, seed) {
            Identity::Holds => {}
            Identity::Unknown(why) => return Judgement::Abstain(why),
            Identity::Fails(why) => {
                let mut names = BTreeSet::new();
                a0.vars(&mut names);
                b0.vars(&mut names);
                let mut rhs_names = BTreeSet::new();
                b0.vars(&mut rhs_names);
                // An equation rather than a rewrite: a lone equation, one that solves for a
                // name (`D = ...` first), or a final condition (`... = 185`). It must follow
                // from the premises; a failing rewrite inside a longer chain is a wrong step.
                let equation = chain.len() == 2
                    || (i == 0 && matches!(a0, Expr::Var(_)))
                    || (i == last && rhs_names.is_empty());
                if names.is_empty() || !equation {
                    // Names on one side only, never defined in a premise: the rewrite
                    // relies on definitions this seat was not shown.
                    let (mut left, mut right) = (BTreeSet::new(), BTreeSet::new());
                    a.vars(&mut left);
                    b.vars(&mut right);
                    if let Some(n) = left.symmetric_difference(&right).next() {
                        return Judgement::Abstain(format!(
                            "{n} appears on one side only and no premise defines it"
                        ));
                    }
                    return Judgement::vote(Vote::Invalid, why);
                }
                match derived_equation(a0, b0, &names, premise_chains, chain, input, seed) {
                    Judgement::Vote {
                        vote: Vote::Valid, ..
                    } => derived = true,
                    other => return other,
                }
            }
        }
    }
    Judgement::vote(
        Vote::Valid,
        if derived {
            "follows from the premises, and every equality in the step holds"
        } else {
            "every equality in the step holds"
        },
    )
}

enum Identity {
    Holds,
    Fails(String),
    Unknown(String),
}

fn pit_point(seed: &Hash, name: &str, i: u64) -> u64 {
    Hash::of_parts(
        "trust/v1/pit",
        &[seed.as_ref(), name.as_bytes(), &i.to_le_bytes()],
    )
    .to_u64()
        % P
}

/// Whether `a = b` holds identically (for all values of any names).
fn identity(a: &Expr, b: &Expr, seed: &Hash) -> Identity {
    let mut names = BTreeSet::new();
    a.vars(&mut names);
    b.vars(&mut names);
    let approx = match (a.approx_digits(), b.approx_digits()) {
        (Some(x), Some(y)) => Some(x.min(y)),
        (x, y) => x.or(y),
    };
    if names.is_empty() {
        let empty = BTreeMap::new();
        let (Some(x), Some(y)) = (a.eval_exact(&empty), b.eval_exact(&empty)) else {
            return Identity::Unknown(
                "a side cannot be evaluated exactly (division by zero or overflow)".into(),
            );
        };
        if x == y {
            return Identity::Holds;
        }
        // A decimal written on its own stands for the exact value truncated or rounded
        // to the decimals it shows.
        for (literal, exact) in [(b, x), (a, y)] {
            if let Expr::Num(stated, _) = literal
                && let Some(d) = literal.decimals()
                && d > 0
                && exact
                    .to_decimals(d)
                    .is_some_and(|(t, r)| t == *stated || r == *stated)
            {
                return Identity::Holds;
            }
        }
        return Identity::Fails(format!("{} ≠ {}", show(x), show(y)));
    }
    let mut all_zero = true;
    for i in 0..PIT_POINTS {
        let env: BTreeMap<String, u64> = names
            .iter()
            .map(|n| (n.clone(), pit_point(seed, n, i)))
            .collect();
        match (a.eval_mod(&env), b.eval_mod(&env)) {
            (Some(x), Some(y)) if x == y => {}
            (Some(_), Some(_)) => {
                all_zero = false;
                break;
            }
            _ => return Identity::Unknown("a random point hit a pole".into()),
        }
    }
    if all_zero {
        return Identity::Holds;
    }
    if let Some(d) = approx {
        // Rounded decimals with names: compare numerically at a few points.
        let tol = 10f64.powi(1 - i32::try_from(d).unwrap_or(1));
        let close = (2..5).all(|k| {
            let env: BTreeMap<String, f64> = names
                .iter()
                .enumerate()
                .map(|(j, n)| (n.clone(), f64::from(k) + 0.37 * j as f64))
                .collect();
            match (a.eval_f64(&env), b.eval_f64(&env)) {
                (Some(x), Some(y)) => (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0),
                _ => false,
            }
        });
        if close {
            return Identity::Holds;
        }
    }
    Identity::Fails("the two sides differ as expressions".into())
}

/// A claimed equation in names: it must follow from the latest premise equation.
fn derived_equation(
    lhs: &Expr,
    rhs: &Expr,
    names: &BTreeSet<String>,
    premise_chains: &[Vec<Expr>],
    chain: &[Expr],
    input: &StepInput<'_>,
    seed: &Hash,
) -> Judgement {
    let var = match names.iter().next() {
        Some(v) if names.len() == 1 => v.clone(),
        _ => return Judgement::Abstain("equations in several unknowns are not decided".into()),
    };
    let Some(claim) = RatFn::equation(lhs, rhs, &var) else {
        return Judgement::Abstain("the equation is not a rational function of one unknown".into());
    };
    // The latest premise equation (not an identity) in the same unknown.
    let premise = premise_chains.iter().rev().find_map(|pchain| {
        let (a, b) = (pchain.get(pchain.len().checked_sub(2)?)?, pchain.last()?);
        let mut ns = BTreeSet::new();
        a.vars(&mut ns);
        b.vars(&mut ns);
        if ns.len() != 1 || !ns.contains(&var) || matches!(identity(a, b, seed), Identity::Holds) {
            return None;
        }
        let approx = a.approx_digits().or(b.approx_digits());
        Some((RatFn::equation(a, b, &var)?, approx))
    });
    let Some((premise, premise_approx)) = premise else {
        return grounding(input, chain);
    };
    let approx = [premise_approx, lhs.approx_digits(), rhs.approx_digits()]
        .into_iter()
        .flatten()
        .min();
    if let Some(root) = premise.linear_root() {
        if let Some(d) = approx {
            // Rounded numbers: compare at the root to the precision they were written with.
            let env = BTreeMap::from([(var.clone(), root.to_f64())]);
            let tol = 10f64.powi(1 - i32::try_from(d).unwrap_or(1));
            return match (lhs.eval_f64(&env), rhs.eval_f64(&env)) {
                (Some(x), Some(y)) if (x - y).abs() <= tol * x.abs().max(y.abs()).max(1.0) => {
                    Judgement::vote(
                        Vote::Valid,
                        format!("follows from the premise ({var} ≈ {:.6})", root.to_f64()),
                    )
                }
                (Some(x), Some(y)) => Judgement::vote(
                    Vote::Invalid,
                    format!(
                        "does not follow: at the premise's solution {var} ≈ {:.6} the sides are {x:.6} and {y:.6}",
                        root.to_f64()
                    ),
                ),
                _ => Judgement::Abstain("cannot evaluate at the premise's solution".into()),
            };
        }
        return match claim.holds_at(root) {
            Some(true) => Judgement::vote(
                Vote::Valid,
                format!(
                    "follows from the premise, whose solution {var} = {} satisfies it",
                    show(root)
                ),
            ),
            Some(false) => Judgement::vote(
                Vote::Invalid,
                format!(
                    "does not follow: the premise gives {var} = {}, which does not satisfy it",
                    show(root)
                ),
            ),
            None => Judgement::Abstain("evaluation overflowed".into()),
        };
    }
    if proportional(claim.num.coeffs(), premise.num.coeffs()) == Some(true) {
        return Judgement::vote(Vote::Valid, "a multiple of the premise equation");
    }
    Judgement::Abstain("the premise is not linear and the claim is not a multiple of it".into())
}

/// Whether `a = c b` for a non-zero constant `c`.
fn proportional(a: &[Rational], b: &[Rational]) -> Option<bool> {
    if a.len() != b.len() || a.is_empty() {
        return Some(false);
    }
    let (i, bi) = b.iter().enumerate().find(|(_, c)| !c.is_zero())?;
    let c = a.get(i)?.div(*bi)?;
    if c.is_zero() {
        return Some(false);
    }
    for (x, y) in a.iter().zip(b) {
        if *x != y.mul(c)? {
            return Some(false);
        }
    }
    Some(true)
}

/// Nothing to derive the equation from: every number it states must come from somewhere
/// (the problem, a premise, or a part of the same chain that was verified before it).
fn grounding(input: &StepInput<'_>, chain: &[Expr]) -> Judgement {
    let mut known = numbers(input.context);
    for p in input.premises {
        known.extend(numbers(p));
    }
    // In a longer chain every part before the last was reached by verified rewrites, so
    // only the last part states something new; a lone equation states both sides.
    let mut stated = BTreeSet::new();
    let split = if chain.len() > 2 { chain.len() - 1 } else { 0 };
    for (i, e) in chain.iter().enumerate() {
        if i < split {
            e.numbers(&mut known);
        } else {
            e.numbers(&mut stated);
        }
    }
    let unknown: Vec<String> = stated
        .into_iter()
        .filter(|n| n != "0" && n != "1" && !known.contains(n))
        .collect();
    if let Some(n) = unknown.first() {
        return Judgement::vote(
            Vote::Ungrounded,
            format!(
                "uses {n}, which appears neither in the problem nor in the steps it depends on"
            ),
        );
    }
    Judgement::Abstain(
        "no premise equation to derive it from; its numbers all come from the context".into(),
    )
}

/// `Let the numerator be x`, `Let t = 3`: a definition of a fresh name.
fn definition(claim: &str, premise_names: &BTreeSet<String>) -> Option<Judgement> {
    let lower = claim.to_lowercase();
    let rest = lower
        .strip_prefix("let ")
        .or_else(|| lower.strip_prefix("denote "))
        .or_else(|| lower.strip_prefix("define "))?;
    let name = if let Some((_, after)) = rest.rsplit_once(" be ") {
        after.trim().trim_end_matches('.').to_string()
    } else if let Some((before, _)) = rest.split_once('=') {
        before.trim().rsplit(' ').next().unwrap_or("").to_string()
    } else {
        return None;
    };
    // Report the name as the claim writes it (the lower-cased copy is only for matching).
    let original = names_in(claim)
        .into_iter()
        .find(|n| n.to_lowercase() == name)
        .unwrap_or(name);
    if original.is_empty() || original.chars().count() > 3 {
        return None;
    }
    if premise_names.contains(&original) {
        return Some(Judgement::Abstain(format!(
            "{original} is already in use by an earlier step: not a fresh definition"
        )));
    }
    Some(Judgement::vote(
        Vote::Valid,
        format!("defines the fresh name {original}"),
    ))
}

/// Short names a text uses, counted as the decomposer counts them.
fn names_in(text: &str) -> BTreeSet<String> {
    crate::decompose::text::symbols_in(text)
        .into_iter()
        .collect()
}

/// Numbers as written, and fractions `a/b`, counted as the decomposer counts them.
fn numbers(text: &str) -> BTreeSet<String> {
    crate::decompose::text::numbers_in(text)
        .into_iter()
        .collect()
}

fn show(r: Rational) -> String {
    format!("{r:?}")
        .replace("Rational { num: ", "")
        .replace(", den: 1 }", "")
        .replace(", den: ", "/")
        .replace(" }", "")
}

/// Finds the longest equality chain in a text: the leftmost start (after leading words)
/// and the rightmost end (before trailing words) at which every `=`-separated part parses.
fn extract_chain(text: &str) -> Option<Vec<Expr>> {
    let t = text.trim();
    if !t.contains('=') || t.chars().count() > MAX_CLAIM_CHARS {
        return None;
    }
    let starts: Vec<usize> = std::iter::once(0)
        .chain(
            t.char_indices()
                .filter(|(_, c)| c.is_whitespace() || *c == ':')
                .map(|(i, c)| i + c.len_utf8()),
        )
        .collect();
    let ends: Vec<usize> = std::iter::once(t.len())
        .chain(
            t.char_indices()
                .rev()
                .filter(|(_, c)| c.is_whitespace())
                .map(|(i, _)| i),
        )
        .collect();
    for &s in &starts {
        for &e in &ends {
            if e <= s {
                break;
            }
            let Some(part) = t.get(s..e) else { continue };
            let part = part.trim().trim_end_matches(['.', ',', ';']);
            if !part.contains('=') {
                continue;
            }
            let exprs: Option<Vec<Expr>> = part
                .split(['=', '≈'])
                .map(|p| Expr::parse(p).ok())
                .collect();
            if let Some(exprs) = exprs
                && exprs.len() >= 2
            {
                return Some(exprs);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests;
