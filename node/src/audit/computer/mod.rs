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
    let Some(chain) = extract_chain(claim) else {
        return Judgement::Abstain("no equation or calculation found".into());
    };

    let mut pairs: Vec<(usize, &Expr, &Expr)> = chain
        .windows(2)
        .enumerate()
        .filter_map(|(i, w)| Some((i, w.first()?, w.get(1)?)))
        .collect();
    // `t1 = (1/3)/D = ...` names a fresh quantity: the first equality is a definition.
    if let Some(Expr::Var(name)) = chain.first()
        && chain.len() > 2
        && !premise_names.contains(name)
    {
        pairs.remove(0);
    }
    let last = chain.len().saturating_sub(2);
    for (i, a, b) in pairs {
        match identity(a, b, seed) {
            Identity::Holds => {}
            Identity::Unknown(why) => return Judgement::Abstain(why),
            Identity::Fails(why) => {
                let mut names = BTreeSet::new();
                a.vars(&mut names);
                b.vars(&mut names);
                // A final `= 185` (a condition), or a lone equation, is derived from the
                // premises; a failing rewrite inside a longer chain is a wrong step.
                let mut rhs_names = BTreeSet::new();
                b.vars(&mut rhs_names);
                let condition = chain.len() == 2 || rhs_names.is_empty();
                if i == last && !names.is_empty() && condition {
                    return derived_equation(a, b, &names, &premise_chains, input, seed);
                }
                return Judgement::vote(Vote::Invalid, why);
            }
        }
    }
    Judgement::vote(Vote::Valid, "every equality in the step holds")
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
    let premise = premise_chains.iter().rev().find_map(|chain| {
        let (a, b) = (chain.get(chain.len().checked_sub(2)?)?, chain.last()?);
        let mut ns = BTreeSet::new();
        a.vars(&mut ns);
        b.vars(&mut ns);
        if ns.len() != 1 || !ns.contains(&var) || matches!(identity(a, b, seed), Identity::Holds) {
            return None;
        }
        RatFn::equation(a, b, &var)
    });
    let Some(premise) = premise else {
        return grounding(input);
    };
    if let Some(root) = premise.linear_root() {
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

/// Nothing to derive the claim from: every number it states must come from somewhere.
fn grounding(input: &StepInput<'_>) -> Judgement {
    let mut known = numbers(input.context);
    for p in input.premises {
        known.extend(numbers(p));
    }
    let unknown: Vec<String> = numbers(input.claim)
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

/// Short names a text uses (as the decomposer counts them).
fn names_in(text: &str) -> BTreeSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter_map(|w| {
            let n = w.trim_start_matches(|c: char| c.is_ascii_digit());
            let mut cs = n.chars();
            let first = cs.next()?;
            let len = n.chars().count();
            (first.is_alphabetic()
                && ((len == 1 && !matches!(first, 'a' | 'A' | 'I'))
                    || ((2..=3).contains(&len)
                        && n.chars().skip(1).all(|c| c.is_ascii_digit() || c == '_'))))
            .then(|| n.to_string())
        })
        .collect()
}

/// Numbers as written, and fractions `a/b`.
fn numbers(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let cleaned: String = text
        .chars()
        .map(|c| if c == '−' { '-' } else { c })
        .collect();
    let mut prev: Option<String> = None;
    let mut slash = false;
    let mut cur = String::new();
    let flush = |cur: &mut String,
                 prev: &mut Option<String>,
                 slash: &mut bool,
                 out: &mut BTreeSet<String>| {
        if cur.is_empty() {
            return;
        }
        let n = cur.trim_end_matches('.').to_string();
        if *slash && let Some(p) = prev.as_ref() {
            out.insert(format!("{p}/{n}"));
        }
        out.insert(n.clone());
        *prev = Some(n);
        *slash = false;
        cur.clear();
    };
    for c in cleaned.chars() {
        if c.is_ascii_digit() || (c == '.' && !cur.is_empty()) {
            cur.push(c);
        } else {
            flush(&mut cur, &mut prev, &mut slash, &mut out);
            if c == '/' {
                slash = prev.is_some();
            } else if !c.is_whitespace() {
                prev = None;
                slash = false;
            }
        }
    }
    flush(&mut cur, &mut prev, &mut slash, &mut out);
    out
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
