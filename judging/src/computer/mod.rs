//! Computer-tier checkers: deterministic judges of calculation, algebra and logic steps.
//!
//! Pure and synchronous. A checker sees only its segment (the claim), the segments it
//! depends on (premises: the givens sealed with it, then the claims it cites) and the
//! problem statement when the step rests on it (context; empty otherwise), and answers
//! with a vote or abstains: a claim it cannot parse or decide is never guessed.
//!
//! **Precision before coverage.** Text written by people and models admits several
//! readings (module `read`: units between numbers, `x` as a times sign, `÷` before a fraction,
//! number words, percentages, LaTeX, money, markdown, GSM8K annotations). A clause is
//! Valid when one reading holds, and Invalid or Ungrounded only when every reading that
//! can be read fails; a step is Valid when all its clauses are, wrong when one clause is
//! wrong under every reading, and undecided otherwise.
//!
//! What is decided:
//! - **Equality chains** `a = b = c`: every adjacent pair must be equal. Without names the
//!   sides are compared as exact rationals (`2/(3*0.96) = 0.694444...`). The tolerance
//!   rule for stated decimals: a decimal written on its own with `d` decimals matches when
//!   it is the exact value truncated or rounded to `d` decimals (so `0.6944` and `0.6945`
//!   ... only `0.6944` for 25/36, and `0.97` never for 0.96); after `≈` a whole number
//!   may be rounded too, and a value within a few percent is not called wrong. A rounded
//!   operand (`3 × 3.33 = 10`) and a result that restates what the premises computed
//!   (`Therefore 790/1290 = 158/129`: an error carried, not made) are not called wrong.
//!   With names, the pair is tested as a polynomial identity at seeded random points
//!   modulo 2^61 − 1; when a side holds an approximate decimal (a trailing `...`, or five
//!   or more decimals) the sides are compared numerically at a few points to that
//!   precision. The arithmetic inside a chain is decided on its own
//!   (`1615h = 80665 − 85 = 80750` is wrong at `80665 − 85`).
//! - **Derived equations** (`Therefore, 5x = 6x − 14` from `x / (3x − 7) = 2/5`): the
//!   claim must follow from a premise equation in the same single name (at its solution,
//!   or as a multiple of it); it is Valid when one premise equation gives it (a step that
//!   carries an earlier wrong equation forward is propagated, not wrong) and Invalid only
//!   when each of them decides against it.
//! - **Definitions** (`Let the numerator be x`, `Let t = 3`) introduce a fresh name and are valid.
//! - **Logic** (module `logic`): rule applications in prose, claims that an atom is derived,
//!   truth-table evaluations, and propositional `p FROM p1, ..., pn` steps.
//! - **Grounding**: a claim with no premise equation to derive it from, that uses a number
//!   found neither in the context nor in its premises (in digits or words, unit constants
//!   aside), is `Ungrounded` (ARES) — only when the judge was shown the problem. A
//!   calculation that holds but works on such a number is not called Valid (it abstains).
//!   A number in a run of whole numbers the problem defines (`the sum of the integers from
//!   1 to 60`, module `ranges`) is given by it.
//! - **Groups** of a long trace's steps (one segment): judged step by step, each with
//!   the premises it would have alone ([`check_claim`], [`step_links`]).
//!
//! The decomposer asks these checkers only what they can read ([`readable`](mod@readable)),
//! and routes a segment here only when that covers its whole claim.

pub mod answer;
mod claim;
pub(crate) mod expr;
pub mod formal;
mod logic;
mod poly;
mod ranges;
pub(crate) mod read;
pub mod readable;
pub mod tool;

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{Hash, Vote};

pub use self::{
    claim::{MAX_GROUP_STEPS, check_claim, step_links},
    readable::readable,
};
use self::{
    expr::{Expr, P, Rational},
    poly::RatFn,
    ranges::IntRun,
    read::Chain,
};

/// Longest claim the checker reads; longer ones are not calculations.
const MAX_CLAIM_CHARS: usize = 400;
/// Random points per identity test.
const PIT_POINTS: u64 = 3;
/// Whole numbers up to this may be an operand of a calculation called Valid without a
/// source (doubling, halving); larger ones must come from the problem, a premise, a unit
/// constant or a share of a hundred, or the step is not called Valid (a correct
/// calculation on a number from nowhere is ARES's "ungrounded").
const SMALL_OPERAND: i128 = 2;
/// Most premise equations a derived equation is tested against.
const MAX_PREMISE_EQUATIONS: usize = 16;
/// Relative difference within which a value written with `≈` is not called wrong.
const APPROX_SLACK: f64 = 0.05;
/// Numbers every reader knows without being told: conversions between units of time,
/// length, mass and counting. A step may use them without a premise stating them.
const UNIT_CONSTANTS: [i128; 17] = [
    2, 3, 4, 7, 10, 12, 16, 24, 30, 31, 52, 60, 100, 365, 1000, 1440, 3600,
];

/// What a checker is given.
#[derive(Debug, Clone, Copy)]
pub struct StepInput<'a> {
    /// The segment to judge.
    pub claim: &'a str,
    /// The segments it depends on, in trace order (the givens sealed with it first).
    pub premises: &'a [&'a str],
    /// The problem statement, when the step rests on it; empty otherwise.
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

    /// The vote, if one was cast (an abstention of either kind is none: a
    /// [`Vote::PayloadAbstain`] a checker casts is carried as a `Vote` only so that its
    /// kind reaches the seat's commitment).
    pub fn as_vote(&self) -> Option<Vote> {
        match self {
            Judgement::Vote { vote, .. } if !vote.is_abstain() => Some(*vote),
            Judgement::Vote { .. } | Judgement::Abstain(_) => None,
        }
    }

    /// An abstention because the segment's own payload exceeds the network's published
    /// limits ([`Vote::PayloadAbstain`]): the provider pays for it when a quorum of the
    /// segment's seats agrees.
    pub fn payload_abstain(reason: impl Into<String>) -> Self {
        Judgement::Vote {
            vote: Vote::PayloadAbstain,
            reason: reason.into(),
        }
    }

    fn is_valid(&self) -> bool {
        matches!(
            self,
            Judgement::Vote {
                vote: Vote::Valid,
                ..
            }
        )
    }

    fn is_failure(&self) -> bool {
        matches!(
            self,
            Judgement::Vote {
                vote: Vote::Invalid | Vote::Ungrounded,
                ..
            }
        )
    }
}

/// Parses `text` with the checkers' expression parser and evaluates the result as the
/// checkers do: exactly over rationals, modulo the identity-test prime and as a float,
/// every name bound to a value derived from `seed`. `None` when it does not parse;
/// otherwise the exact value written as the decomposer writes numbers, when it has one.
/// Public so the fuzz targets reach the parser and its evaluators on their own.
pub fn evaluate_expression(text: &str, seed: &Hash) -> Option<Option<String>> {
    let e = Expr::parse(text).ok()?;
    let mut names = BTreeSet::new();
    e.vars(&mut names);
    let point = |name: &str| -> u64 {
        let h = Hash::of_parts("trust/v1/expr-point", &[seed.as_ref(), name.as_bytes()]);
        h.0.iter()
            .take(8)
            .fold(0u64, |a, b| (a << 8) | u64::from(*b))
    };
    let exact: BTreeMap<String, Rational> = names
        .iter()
        .map(|n| (n.clone(), Rational::int(i128::from(point(n) % 1000))))
        .collect();
    let modular: BTreeMap<String, u64> = names.iter().map(|n| (n.clone(), point(n) % P)).collect();
    let float: BTreeMap<String, f64> = exact.iter().map(|(n, r)| (n.clone(), r.to_f64())).collect();
    let _ = e.eval_mod(&modular);
    let _ = e.eval_f64(&float);
    Some(e.eval_exact(&exact).map(show))
}

/// `Let ...`, `Denote ...`, `Define ...`.
fn is_definition(text: &str) -> bool {
    let lower: String = text.chars().take(12).collect::<String>().to_lowercase();
    // `Let me think`, `Let's see`, `Let us compute` plan; they define nothing.
    let plans = ["let me ", "let's ", "let’s ", "let us "]
        .iter()
        .any(|p| lower.starts_with(p));
    !plans
        && (lower.starts_with("let ")
            || lower.starts_with("denote ")
            || lower.starts_with("define "))
}

/// [`check`] on a segment as a seat sees it: its claim, the claims it cites (in order)
/// and the givens sealed with it. The givens come first among the premises (they are the
/// earliest facts: the problem statement, unaudited setup steps), then the cited claims;
/// the givens alone are the context whose numbers ground a claim.
pub fn check_segment(
    claim: &str,
    premises: &[String],
    givens: &[String],
    seed: &Hash,
) -> Judgement {
    let all: Vec<&str> = givens.iter().chain(premises).map(String::as_str).collect();
    let context = givens.join("\n");
    // The problem statement travels first among the givens; the runs of numbers it
    // defines are read from it alone, never from a step's words.
    let problem = givens.first().map_or("", String::as_str);
    check_with(
        &StepInput {
            claim,
            premises: &all,
            context: &context,
        },
        seed,
        &ranges::runs_in(problem),
    )
}

/// Judges one step. `seed` makes the random points of identity tests reproducible (use
/// data every seat agrees on, e.g. the session and segment ids).
pub fn check(input: &StepInput<'_>, seed: &Hash) -> Judgement {
    check_with(input, seed, &ranges::runs_in(input.context))
}

/// [`check`], with the runs of whole numbers the problem defines (`the integers from 1 to
/// 60`): a number in one of them is given.
fn check_with(input: &StepInput<'_>, seed: &Hash, runs: &[IntRun]) -> Judgement {
    let claim = input.claim.trim();
    if claim.chars().count() > MAX_CLAIM_CHARS {
        return Judgement::Abstain("too long to be a single calculation".into());
    }
    if let Some(j) = logic::truth_step(input)
        .or_else(|| logic::rule_step(input))
        .or_else(|| logic::fact_step(input))
        .or_else(|| logic::from_step(input))
    {
        return j;
    }
    let mut premise_names = BTreeSet::new();
    for p in input.premises {
        premise_names.extend(read::unknowns(p));
    }
    // Names the problem or a premise uses are unknowns: never units, never times signs.
    let mut known_names = premise_names.clone();
    known_names.extend(read::unknowns(input.context));
    let premise_chains: Vec<Chain> = input
        .premises
        .iter()
        .flat_map(|p| read::stated_chains(p, &known_names))
        .collect();

    if let Some(j) = definition(claim, &premise_names) {
        return j;
    }
    let (cleaned, notes) = read::clean(claim);
    let clauses: Vec<String> = notes.into_iter().chain(read::clauses(&cleaned)).collect();
    // Each clause on its own; a step is Valid only when every clause that states an
    // equality holds, and wrong when one clause is wrong under every reading of it. The
    // clauses before one are premises of it (`x = 2, so 3x + 1 = 7`).
    let mut valid = Vec::new();
    let mut undecided: Option<String> = None;
    let mut chains = premise_chains.clone();
    let mut names = premise_names.clone();
    for (k, clause) in clauses.iter().enumerate() {
        let readings = read::readings(clause, &known_names);
        if readings.is_empty() {
            continue;
        }
        let earlier = clauses.get(..k).unwrap_or(&[]);
        let mut premises: Vec<&str> = input.premises.to_vec();
        premises.extend(earlier.iter().map(String::as_str));
        let step = StepInput {
            claim: input.claim,
            premises: &premises,
            context: input.context,
        };
        let ctx = Ctx {
            definitions: premise_definitions(&chains),
            premise_results: chains
                .iter()
                .flat_map(|c| c.parts.iter().skip(1))
                .flat_map(|e| {
                    let mut v = Vec::new();
                    e.literals(&mut v);
                    v
                })
                .collect(),
            premise_names: &names,
            premise_chains: &chains,
            input: &step,
            runs,
            seed,
        };
        match judge_clause(clause, &readings, &ctx) {
            j @ Judgement::Vote { .. } if j.is_failure() => return j,
            Judgement::Vote { reason, .. } => valid.push(reason),
            Judgement::Abstain(why) => {
                undecided.get_or_insert(why);
            }
        }
        chains.extend(read::stated_chains(clause, &known_names));
        names.extend(read::unknowns(clause));
    }
    if let Some(why) = undecided {
        return Judgement::Abstain(why);
    }
    if valid.is_empty() {
        if is_definition(claim) {
            return Judgement::Abstain("a definition in words: nothing to calculate".into());
        }
        return Judgement::Abstain("no equation or calculation found".into());
    }
    valid.dedup();
    Judgement::vote(Vote::Valid, valid.join("; "))
}

/// What every chain of a step is judged against.
struct Ctx<'a> {
    definitions: BTreeMap<String, Expr>,
    /// Values the premises computed (every side of a premise chain after the first).
    premise_results: BTreeSet<Rational>,
    premise_names: &'a BTreeSet<String>,
    premise_chains: &'a [Chain],
    input: &'a StepInput<'a>,
    /// The runs of whole numbers the problem defines: their numbers are given.
    runs: &'a [IntRun],
    seed: &'a Hash,
}

/// One clause under all its readings: Valid when one reading holds; Invalid or
/// Ungrounded only when every reading that can be read fails; otherwise abstain.
fn judge_clause(clause: &str, readings: &[Option<Vec<Chain>>], ctx: &Ctx<'_>) -> Judgement {
    let mut failures = Vec::new();
    let mut undecided: Option<String> = None;
    for reading in readings {
        let Some(chains) = reading else { continue };
        let mut verdict: Option<Judgement> = None;
        let mut reasons = Vec::new();
        for chain in chains {
            let j = check_chain(chain, ctx);
            if j.is_failure() {
                verdict = Some(j);
                break;
            }
            match j {
                Judgement::Vote { reason, .. } => reasons.push(reason),
                abstain => {
                    verdict.get_or_insert(abstain);
                }
            }
        }
        match verdict {
            None => {
                reasons.dedup();
                return Judgement::vote(Vote::Valid, reasons.join("; "));
            }
            Some(j) if j.is_failure() => failures.push(j),
            Some(Judgement::Abstain(why)) => {
                undecided.get_or_insert(why);
            }
            Some(_) => {}
        }
    }
    if let Some(why) = undecided {
        return Judgement::Abstain(why);
    }
    if failures.is_empty() {
        return Judgement::Abstain(format!(
            "cannot read the calculation in {:?}",
            clause.trim()
        ));
    }
    // Every reading fails: report an invalid calculation before a missing ground.
    let pos = failures
        .iter()
        .position(|j| j.as_vote() == Some(Vote::Invalid))
        .unwrap_or(0);
    failures.swap_remove(pos)
}

/// Names a premise defines (`t1 = (1/3)/D = 1/(3D)`, `D = 1.027777/185`): the name and
/// the last expression of its chain, unless that expression uses the name itself.
fn premise_definitions(premise_chains: &[Chain]) -> BTreeMap<String, Expr> {
    let mut defs = BTreeMap::new();
    for chain in premise_chains {
        let parts = &chain.parts;
        if let (Some(Expr::Var(name)), Some(last)) = (parts.first(), parts.last())
            && parts.len() >= 2
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

/// Whether every number of `e` (and there is one) is a value the premises computed.
fn restates(e: &Expr, premise_results: &BTreeSet<Rational>) -> bool {
    let mut v = Vec::new();
    e.literals(&mut v);
    // A bare result (`72 - 1 = 72`) is what the step computes, not a restatement.
    !is_literal(e) && !v.is_empty() && v.iter().all(|x| premise_results.contains(x))
}

/// A number as written, with nothing computed: `48`, `-3`.
fn is_literal(e: &Expr) -> bool {
    match e {
        Expr::Num(..) => true,
        Expr::Neg(a) => matches!(a.as_ref(), Expr::Num(..)),
        _ => false,
    }
}

fn check_chain(chain: &Chain, ctx: &Ctx<'_>) -> Judgement {
    let parts = &chain.parts;
    // `48 = 24` states two values and no calculation: what related them (`half of`,
    // `a total of`) was lost around it, so it is not a step to judge.
    let bare = parts.iter().all(is_literal);
    // `t1 = (1/3)/D = ...` names a fresh quantity: the first equality is a definition.
    let fresh_definition = matches!(parts.first(), Some(Expr::Var(name)) if !ctx.premise_names.contains(name))
        && parts.len() > 2;
    let last = parts.len().saturating_sub(2);
    let named = |e: &Expr| {
        let mut n = BTreeSet::new();
        e.vars(&mut n);
        !n.is_empty()
    };
    // The arithmetic in a chain is decided on its own, whatever the names before it do:
    // `1615h = 80665 − 85 = 80750` is wrong at `80665 − 85 = 80750`.
    for (i, w) in parts.windows(2).enumerate() {
        if let [a, b] = w
            && !named(a)
            && !named(b)
            && let Identity::Fails(why) = identity(
                a,
                b,
                chain.approx.get(i).copied().unwrap_or(false),
                ctx.seed,
            )
            && !bare
            && !(i == 0 && chain.after_words && is_literal(a))
            && !restates(b, &ctx.premise_results)
        {
            return Judgement::vote(Vote::Invalid, format!("{}: {why}", chain.text));
        }
    }
    // `1615h = 80665 + 85 = 83980`: a name only in the first side states an equation.
    let first_is_equation = parts.iter().skip(1).all(|e| !named(e));
    let mut derived = false;
    for (i, w) in parts.windows(2).enumerate() {
        let (Some(a0), Some(b0)) = (w.first(), w.get(1)) else {
            continue;
        };
        if i == 0 && fresh_definition {
            continue;
        }
        let approx = chain.approx.get(i).copied().unwrap_or(false);
        let (a, b) = (
            a0.substitute(&ctx.definitions),
            b0.substitute(&ctx.definitions),
        );
        match identity(&a, &b, approx, ctx.seed) {
            Identity::Holds => {}
            Identity::Unknown(why) => return Judgement::Abstain(why),
            Identity::Fails(_) if i == 0 && chain.after_words && is_literal(a0) => {
                return Judgement::Abstain(format!(
                    "{}: the value before the first = may belong to the words before it",
                    chain.text
                ));
            }
            Identity::Fails(_) if bare => {
                return Judgement::Abstain(format!(
                    "{} states values without the calculation that relates them",
                    chain.text
                ));
            }
            Identity::Fails(why) => {
                let mut names = BTreeSet::new();
                a0.vars(&mut names);
                b0.vars(&mut names);
                let mut rhs_names = BTreeSet::new();
                b0.vars(&mut rhs_names);
                // An equation rather than a rewrite: a lone equation, one that solves for a
                // name (`D = ...` first), or a final condition (`... = 185`). It must follow
                // from the premises; a failing rewrite inside a longer chain is a wrong step.
                let equation = parts.len() == 2
                    || (i == 0 && (first_is_equation || matches!(a0, Expr::Var(_))))
                    || (i == last && rhs_names.is_empty());
                if names.is_empty() && restates(b0, &ctx.premise_results) {
                    // `Therefore 790/1290 = 158/129` after `790/5 = 158` and `1290/10 =
                    // 129`: the result side only restates what the premises computed, so an
                    // error there was made in a premise and is carried here (propagated).
                    return Judgement::Abstain(format!(
                        "{}: {why}, but its result restates values the premises computed",
                        chain.text
                    ));
                }
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
                    return Judgement::vote(Vote::Invalid, format!("{}: {why}", chain.text));
                }
                match derived_equation(a0, b0, &names, parts, ctx) {
                    j if j.is_valid() => derived = true,
                    other => return other,
                }
            }
        }
    }
    if !derived && let Some(n) = unexplained_operand(parts, ctx) {
        return Judgement::Abstain(format!(
            "{}: holds, but calculates with {}, which neither the problem nor the premises give",
            chain.text,
            show(n)
        ));
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

/// Whether `a = b` holds identically (for all values of any names); `approx` when it was
/// written `a ≈ b`.
fn identity(a: &Expr, b: &Expr, approx_sign: bool, seed: &Hash) -> Identity {
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
        // to the decimals it shows (to a whole number too after `≈`).
        for (literal, exact) in [(b, x), (a, y)] {
            if let Expr::Num(stated, _) = literal
                && let Some(d) = literal.decimals()
                && (d > 0 || approx_sign)
                && exact
                    .to_decimals(d)
                    .is_some_and(|(t, r)| t == *stated || r == *stated)
            {
                return Identity::Holds;
            }
        }
        if let Some(why) = rounded_operands(a, b, &empty) {
            return Identity::Unknown(why);
        }
        if approx_sign {
            let (fx, fy) = (x.to_f64(), y.to_f64());
            if (fx - fy).abs() <= APPROX_SLACK * fx.abs().max(fy.abs()) {
                return Identity::Unknown(format!(
                    "{} ≈ {} is a rounding this checker does not decide",
                    show(x),
                    show(y)
                ));
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
        let tol = 10f64.powi(1i32.saturating_sub(i32::try_from(d).unwrap_or(1)));
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
    if approx_sign {
        return Identity::Unknown("an approximation in names is not decided".into());
    }
    Identity::Fails("the two sides differ as expressions".into())
}

/// A decimal such as `3.33` or `0.67` is often a fraction rounded earlier (10/3, 2/3):
/// the fraction with a small denominator it rounds or truncates, if there is one.
fn rounded_fraction(value: Rational, written: &expr::Written) -> Option<Rational> {
    if written.decimals < 2 {
        return None;
    }
    (2..=12).find_map(|q| {
        let scaled = value.mul(Rational::int(q))?;
        // The nearest numerator; the fraction must differ from the literal.
        let p = (scaled.to_f64()).round() as i128;
        let f = Rational::new(p, q)?;
        let (t, r) = f.to_decimals(written.decimals)?;
        (f != value && (t == value || r == value)).then_some(f)
    })
}

/// `3 × 3.33 = 10`: wrong as written, but right if 3.33 stands for 10/3 rounded. Such a
/// step is not called wrong; returns why.
fn rounded_operands(a: &Expr, b: &Expr, empty: &BTreeMap<String, Rational>) -> Option<String> {
    let f = |v: Rational, w: &expr::Written| rounded_fraction(v, w);
    let (a2, b2) = (a.map_literals(&f), b.map_literals(&f));
    if (&a2, &b2) == (a, b) {
        return None;
    }
    let (x, y) = (a2.eval_exact(empty)?, b2.eval_exact(empty)?);
    let close = x == y
        || [(b, x), (a, y)].iter().any(|(lit, exact)| {
            matches!(lit, Expr::Num(..))
                && lit.decimals().is_some_and(|d| {
                    exact
                        .to_decimals(d)
                        .is_some_and(|(t, r)| matches!(lit, Expr::Num(s, _) if *s == t || *s == r))
                })
        });
    close.then(|| "holds if its rounded decimals stand for the fractions they round".into())
}

/// A claimed equation in names: it must follow from the latest premise equation.
fn derived_equation(
    lhs: &Expr,
    rhs: &Expr,
    names: &BTreeSet<String>,
    chain: &[Expr],
    ctx: &Ctx<'_>,
) -> Judgement {
    let var = match names.iter().next() {
        Some(v) if names.len() == 1 => v.clone(),
        _ => return Judgement::Abstain("equations in several unknowns are not decided".into()),
    };
    let Some(claim) = RatFn::equation(lhs, rhs, &var) else {
        return Judgement::Abstain("the equation is not a rational function of one unknown".into());
    };
    // Premise equations (not identities) in the same unknown, latest first. The claim
    // may rest on any of them (a step that carries an earlier wrong equation forward is
    // propagated, not wrong): it is Valid when one of them gives it, and Invalid only when
    // each of them decides against it.
    let premises: Vec<(RatFn, Option<u32>)> = ctx
        .premise_chains
        .iter()
        .rev()
        .flat_map(|pchain| {
            // `1615h = 80665 + 85 = 83980` states `1615h = 83980`: its first and last
            // sides, as well as its last equality.
            let parts = &pchain.parts;
            let n = parts.len();
            let approx = pchain.approx.iter().any(|a| *a);
            [
                (0, n.saturating_sub(1)),
                (n.saturating_sub(2), n.saturating_sub(1)),
            ]
            .into_iter()
            .filter(move |(i, j)| i < j && !approx)
            .filter_map(move |(i, j)| Some((parts.get(i)?, parts.get(j)?)))
        })
        .filter_map(|(a, b)| {
            let mut ns = BTreeSet::new();
            a.vars(&mut ns);
            b.vars(&mut ns);
            if ns.len() != 1
                || !ns.contains(&var)
                || matches!(identity(a, b, false, ctx.seed), Identity::Holds)
            {
                return None;
            }
            let approx = a.approx_digits().or(b.approx_digits());
            Some((RatFn::equation(a, b, &var)?, approx))
        })
        .take(MAX_PREMISE_EQUATIONS)
        .collect();
    if premises.is_empty() {
        // Equations that use the name with others (`x + y = 10`) may give it; only a
        // claim whose name no premise equation uses can be ungrounded.
        let used_elsewhere = ctx.premise_chains.iter().any(|c| {
            let mut ns = BTreeSet::new();
            c.parts.iter().for_each(|e| e.vars(&mut ns));
            ns.contains(&var)
        });
        if used_elsewhere {
            return Judgement::Abstain(format!(
                "the premise equations that use {var} use other unknowns too"
            ));
        }
        return grounding(ctx.input, chain, ctx.runs);
    }
    let mut against: Option<Judgement> = None;
    let mut undecided: Option<Judgement> = None;
    for (premise, premise_approx) in &premises {
        let j = follows_from(&claim, lhs, rhs, &var, premise, *premise_approx);
        if j.is_valid() {
            return j;
        }
        if j.is_failure() {
            against.get_or_insert(j);
        } else {
            undecided.get_or_insert(j);
        }
    }
    undecided
        .or(against)
        .unwrap_or_else(|| Judgement::Abstain("no premise decides it".into()))
}

/// Whether the claimed equation `lhs = rhs` (as `claim`) follows from one premise
/// equation.
fn follows_from(
    claim: &RatFn,
    lhs: &Expr,
    rhs: &Expr,
    var: &str,
    premise: &RatFn,
    premise_approx: Option<u32>,
) -> Judgement {
    let approx = [premise_approx, lhs.approx_digits(), rhs.approx_digits()]
        .into_iter()
        .flatten()
        .min();
    if let Some(root) = premise.linear_root() {
        if let Some(d) = approx {
            // Rounded numbers: compare at the root to the precision they were written with.
            let env = BTreeMap::from([(var.to_string(), root.to_f64())]);
            let tol = 10f64.powi(1i32.saturating_sub(i32::try_from(d).unwrap_or(1)));
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

/// Values a text states: its numbers (each also as a percentage, and as 1 plus or minus
/// that percentage), its number words
/// (`twice`, `a dozen`, `half`), and the constants of units every reader knows.
fn known_values(texts: &[&str]) -> BTreeSet<Rational> {
    let mut known: BTreeSet<Rational> = UNIT_CONSTANTS
        .iter()
        .map(|&n| Rational::int(n))
        .chain([Rational::ZERO, Rational::int(1)])
        .collect();
    let empty = BTreeMap::new();
    for t in texts {
        for n in read::numbers_in(t) {
            if let Some(v) = Expr::parse(&n).ok().and_then(|e| e.eval_exact(&empty)) {
                known.insert(v);
                if let Some(share) = v.div(Rational::int(100)) {
                    // A percentage, and 1 plus or minus it (`20% faster` gives 1.2).
                    known.insert(share);
                    known.extend(Rational::int(1).add(share));
                    known.extend(Rational::int(1).sub(share));
                }
            }
        }
        known.extend(read::word_values(t));
    }
    known
}

/// An operand of a calculation that nothing the judge was shown gives: not a number of
/// the problem or the premises (in digits or words), not one of a run of whole numbers
/// the problem defines (`the integers from 1 to 60`), not a unit constant, not 0, 1 or 2,
/// not the whole quotient of two numbers it works on (`20474 − 25 × 812`), not a share of
/// a hundred (`0.99` for 1 − 1%). Such a calculation may hold and still rest on a number
/// from nowhere (ARES "ungrounded": `20 × 30 = 600` where the family eats 5 + 3 + 7 a
/// day), so it is not called Valid; nor is it called Ungrounded, since people introduce
/// numbers for good reasons the checker cannot see. Only a judge shown the problem asks.
fn unexplained_operand(parts: &[Expr], ctx: &Ctx<'_>) -> Option<Rational> {
    if ctx.input.context.trim().is_empty() {
        return None;
    }
    let mut texts = vec![ctx.input.context];
    texts.extend(ctx.input.premises.iter().copied());
    let known = known_values(&texts);
    let (_, operands) = parts.split_last()?;
    let mut used = Vec::new();
    for e in operands {
        e.literals(&mut used);
    }
    let hundred = Rational::int(100);
    let grounded: Vec<Rational> = used
        .iter()
        .copied()
        .filter(|v| known.contains(v))
        .take(16)
        .collect();
    // `20474 − 25 × 812`: 25 is the whole quotient of two numbers the step works on.
    let quotient = |v: Rational| {
        grounded.iter().any(|a| {
            grounded.iter().any(|b| {
                a.div(*b)
                    .and_then(|q| q.to_decimals(0))
                    .is_some_and(|(whole, _)| whole == v)
            })
        })
    };
    used.into_iter().find(|v| {
        let small = (0..=SMALL_OPERAND).any(|k| *v == Rational::int(k));
        let percent = v
            .mul(hundred)
            .is_some_and(|p| (0..=100).any(|k| p == Rational::int(k)));
        let in_run = ctx.runs.iter().any(|r| r.contains(*v));
        !small && !percent && !known.contains(v) && !in_run && !quotient(*v)
    })
}

/// Nothing to derive the equation from: every number it states must come from somewhere
/// (the problem, a premise, or a part of the same chain that was verified before it). A
/// judge that was not shown the problem cannot tell: it abstains.
fn grounding(input: &StepInput<'_>, chain: &[Expr], runs: &[IntRun]) -> Judgement {
    if input.context.trim().is_empty() {
        return Judgement::Abstain(
            "no premise equation to derive it from, and the problem was not given to this judge"
                .into(),
        );
    }
    // `x = 5` states a value (a solution, a guess to try): a new number is its point.
    if let [a, b] = chain
        && ((matches!(a, Expr::Var(_)) && is_literal(b))
            || (matches!(b, Expr::Var(_)) && is_literal(a)))
    {
        return Judgement::Abstain(
            "states a value with nothing to derive it from; not a condition to ground".into(),
        );
    }
    // A longer chain calculates; its numbers may come from arithmetic done in the head
    // (`d² = 25 + 16 = 41` from sides 5 and 4). Only a lone equation states a condition.
    let [a, b] = chain else {
        return Judgement::Abstain(
            "a calculation in names with no premise equation to derive it from".into(),
        );
    };
    let mut texts = vec![input.context];
    texts.extend(input.premises.iter().copied());
    let known = known_values(&texts);
    // The numbers it states: those in a side with a name (`x / (3x − 7)`), and a side that
    // is a value (`3/5`); a side that calculates (`17 − 4`) may rest on head arithmetic.
    let mut stated = Vec::new();
    for side in [a, b] {
        let mut names = BTreeSet::new();
        side.vars(&mut names);
        let value =
            is_literal(side) || matches!(side, Expr::Div(x, y) if is_literal(x) && is_literal(y));
        if !names.is_empty() || value {
            side.values(&mut stated);
        }
    }
    let given = |v: &Rational| known.contains(v) || runs.iter().any(|r| r.contains(*v));
    if let Some(n) = stated.into_iter().find(|v| !given(v)) {
        return Judgement::vote(
            Vote::Ungrounded,
            format!(
                "uses {}, which appears neither in the problem nor in the steps it depends on",
                show(n)
            ),
        );
    }
    Judgement::Abstain(
        "no premise equation to derive it from; its numbers all come from the context".into(),
    )
}

/// `Let the numerator be x`, `Let t = 3`: a definition of a fresh name. A definition that
/// also calculates (`Let t = 3 + 4 = 8`) is checked as a calculation.
fn definition(claim: &str, premise_names: &BTreeSet<String>) -> Option<Judgement> {
    if !is_definition(claim) {
        return None;
    }
    let lower = claim.to_lowercase();
    let rest = lower
        .strip_prefix("let ")
        .or_else(|| lower.strip_prefix("denote "))
        .or_else(|| lower.strip_prefix("define "))?;
    if rest.matches('=').count() > 1 {
        return None;
    }
    let name = if let Some((_, after)) = rest.rsplit_once(" be ") {
        after.trim().trim_end_matches('.').to_string()
    } else if let Some((before, after)) = rest.split_once('=') {
        // `Let t = 3 + 4`: a value with a calculation in it is not only a name.
        if Expr::parse(&read::clean(after.trim().trim_end_matches('.')).0)
            .is_ok_and(|e| !is_literal(&e) && !matches!(e, Expr::Var(_)))
        {
            return None;
        }
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
    read::symbols_in(text).into_iter().collect()
}

fn show(r: Rational) -> String {
    format!("{r:?}")
        .replace("Rational { num: ", "")
        .replace(", den: 1 }", "")
        .replace(", den: ", "/")
        .replace(" }", "")
}

#[cfg(test)]
mod tests;
