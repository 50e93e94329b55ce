//! Worded honeypots: known errors planted on the tiers that read words (LLM, then Human).
//!
//! A worded honeypot copies one of the trace's worded STEPs that holds a calculation
//! (`The muffins brought in 48 × $3 = $144.`: a STEP for the LLM tier and, below it, its
//! OPERATION `48 × $3 = $144` for the Computer tier) and makes it wrong the way real
//! reasoning goes wrong. Each kind keeps the words of the step and rewrites only its
//! calculation, so the honeypot reads like the step it copies:
//!
//! | kind | example (bakery) | difficulty | the Computer tier sees it |
//! |---|---|---|---|
//! | [`Kind::Slip`]: the result miscalculated | `The muffins brought in 48 × $3 = $154.` | obvious | yes |
//! | [`Kind::WrongOperation`]: another operation than the words call for | `Total sales were $144 − $45 = $99.` | obvious | no |
//! | [`Kind::WrongEntity`]: a quantity the problem gives for another entity | `The muffins brought in 36 × $3 = $108.` | subtle | no |
//! | [`Kind::MisappliedRate`]: a price per group of `n` used per item | `The cookies brought in 36 × $5 = $180.` | domain | no |
//!
//! Only the slip is visible to the arithmetic: the seats of the honeypot check its
//! calculation themselves (`SegmentView::failed_operation`) and vote Invalid without
//! asking their judge, as they do on a real step with a miscalculation. It is planted
//! first because it is the worded honeypot whose truth every honest seat confirms: on a
//! network whose LLM judges abstain (a small model that fails its calibration), the
//! contract scores a honeypot only when a quorum of its seats judged it, so only the
//! slip can show a rubber-stamping LLM seat there. The other kinds keep the arithmetic
//! right (the recomputed calculation holds, checked as a seat checks it), so only a
//! judge that reads the claim against the problem can reject them: they measure the
//! judgement itself, where the network's judges can judge.
//!
//! # Why each kind is wrong by construction
//!
//! A forgery is kept only when every condition below holds; anything short of that
//! plants nothing (precision before coverage: a "known error" that is in fact right would
//! get an honest seat scored against it). In every kind the calculation of the step it
//! copies must be a single `a op b = c` in whole numbers that holds, the forged claim
//! must differ in value (`c' ≠ c`), the decomposer must split the forged claim into
//! exactly the forged calculation (so that it carries an OPERATION like a real STEP,
//! [`crate::decompose::operation_of`]), and the seat must have the problem statement
//! among its givens.
//!
//! - **Slip.** The result is `c + 10` (or `c × 10`), and the Computer checker, given what
//!   the honeypot's seats are given, refutes the calculation: the claim states a false
//!   equality.
//! - **Wrong operation.** The words of the step name the operation and the step's own
//!   calculation agrees with them: a `total`/`altogether`/`in all`/`combined`/`sum` made
//!   by `+`, a `profit`/`left`/`remaining`/`difference` made by `−`, `groups of`/`split`/
//!   `shared`/`divided` made by `÷`, or a price the problem gives `each`/`per` item
//!   multiplied by a count. The forgery uses another operation (`−` for the total, `+`
//!   for the difference, `×` for the groups, `+` for the count and the price), so the
//!   claim states a total as a difference, a difference as a total, a number of groups
//!   as a product, or adds a count to a price: wrong on its face whatever the numbers.
//! - **Wrong entity.** The problem ties the number `n_E` to the entity `E` (`48
//!   muffins`) and the number `n_F` to another entity `F` (`36 cookies`), each entity to
//!   that one number and each number to nothing else in the problem; the step names `E`,
//!   not `F`, and uses `n_E` once, as a count (no `$`). The forgery puts `n_F` where
//!   `n_E` was and recomputes: it counts `E` with the count the problem gives for `F`.
//!   `n_F` appears nowhere else the seat reads (no premise, no other given, not in the
//!   step), so nothing but the problem speaks of it, and the problem speaks of it as
//!   `F`'s.
//! - **Misapplied rate.** The problem prices a group: `n for $p`, `$p for n`, `$p per
//!   n`, `$p a dozen` (`n ≥ 2`), and `$p` appears nowhere else in it (no price per item
//!   of the same amount). The step multiplies `$p` by a number of groups `g`, and `g × n`
//!   is the number the problem ties to an entity the step names (`36 cookies`, `9 × 4`).
//!   The forgery multiplies `$p` by the items (`g × n`) instead of the groups: it uses
//!   the price of `n` items as the price of one, and the result is `n` times too large.
//!
//! The known verdict of a worded honeypot is Invalid.
//!
//! # Premises
//!
//! Like a Computer honeypot (see the parent module's doc, on twins), a worded honeypot
//! does not cite exactly its source's premises: it and its OPERATION cite one variant of
//! them together (one dropped, added or swapped), kept only when the checks above still
//! hold with it: the calculation judged with those premises as the honeypot's seats and
//! its OPERATION's seats judge it, and no number the forgery brought in read in an
//! added premise (`premises_for`). A step whose every variant fails is not copied.

use std::ops::Range;

use rand::{RngCore, seq::SliceRandom};
use trust_protocol::{
    Hash, Vote,
    hdag::AbstractionLevel,
    tx::{Difficulty, MAX_DEPENDENCIES, Tier},
};

use super::{Bait, Calculation, Graph, canonical};
use crate::{computer, decompose, session::restrict::Restricted};

/// How a worded honeypot is wrong.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    /// The result of the calculation is wrong.
    Slip,
    /// Another operation than the words call for, the arithmetic right.
    WrongOperation,
    /// A quantity the problem gives for another entity, the arithmetic right.
    WrongEntity,
    /// A price per group used per item, the arithmetic right.
    MisappliedRate,
}

impl Kind {
    /// How hard the error is to see.
    pub fn difficulty(self) -> Difficulty {
        match self {
            Kind::Slip | Kind::WrongOperation => Difficulty::Obvious,
            Kind::WrongEntity => Difficulty::Subtle,
            Kind::MisappliedRate => Difficulty::Domain,
        }
    }
}

/// The order kinds are planted in: the slip first (see the module doc), then one of each
/// difficulty.
const ROTATION: [Kind; 4] = [
    Kind::Slip,
    Kind::WrongEntity,
    Kind::MisappliedRate,
    Kind::WrongOperation,
];

/// A worded step made wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Forgery {
    /// How it is wrong.
    pub kind: Kind,
    /// The forged claim.
    pub claim: String,
    /// Its calculation (a span of `claim`): the honeypot's OPERATION.
    pub operation: String,
    /// Why it is wrong, for logs and tests.
    pub why: String,
}

/// Up to `count` worded honeypots forged from the worded STEPs of `r` (one per step),
/// their kinds in [`ROTATION`] order as far as the steps allow. Consumes nothing of `rng`
/// when `r` has no step to forge from.
pub(super) fn forge(r: &Restricted, count: usize, rng: &mut impl RngCore) -> Vec<Bait> {
    let mut sources: Vec<(usize, usize, Vec<Forgery>)> = sources(r)
        .into_iter()
        .map(|(step, op)| (step, op, forgeries(r, step, op)))
        .filter(|(_, _, f)| !f.is_empty())
        .collect();
    if sources.is_empty() || count == 0 {
        return Vec::new();
    }
    sources.shuffle(rng);
    let graph = Graph::of(r);
    let mut used = vec![false; sources.len()];
    let mut out = Vec::new();
    let mut stalled = 0;
    for kind in ROTATION.iter().cycle() {
        if out.len() >= count || stalled >= ROTATION.len() {
            break;
        }
        // Of the steps left that offer this kind, the one whose other kinds are the
        // most common (the first such in the shuffled order): a step that alone offers
        // a rare kind is kept for it.
        let unused = |j: usize| !used.get(j).copied().unwrap_or(true);
        let offering = |k: Kind| {
            sources
                .iter()
                .enumerate()
                .filter(|(j, (_, _, f))| unused(*j) && f.iter().any(|x| x.kind == k))
                .count()
        };
        let cost = |f: &[Forgery]| -> f64 {
            let mut kinds: Vec<Kind> = f.iter().map(|x| x.kind).filter(|k| k != kind).collect();
            kinds.sort_unstable();
            kinds.dedup();
            kinds
                .into_iter()
                .map(|k| 1.0 / offering(k).max(1) as f64)
                .sum()
        };
        let found = sources
            .iter()
            .enumerate()
            .filter(|(j, (_, _, f))| unused(*j) && f.iter().any(|x| x.kind == *kind))
            .min_by(|(_, (_, _, a)), (_, (_, _, b))| cost(a).total_cmp(&cost(b)));
        let Some((j, (step, op, forged))) = found else {
            stalled = stalled.saturating_add(1);
            continue;
        };
        stalled = 0;
        let of_kind: Vec<&Forgery> = forged.iter().filter(|x| x.kind == *kind).collect();
        let Some(f) = of_kind.choose(rng) else {
            continue;
        };
        if let Some(u) = used.get_mut(j) {
            *u = true;
        }
        let (Some(step_node), Some(op_node)) = (r.hdag.nodes.get(*step), r.hdag.nodes.get(*op))
        else {
            continue;
        };
        let Some(set) = premises_for(r, &graph, *step, *op, f, rng) else {
            continue;
        };
        let ids: Vec<String> = set
            .iter()
            .filter_map(|&d| r.hdag.nodes.get(d).map(|n| n.id.clone()))
            .collect();
        out.push(Bait {
            source: step_node.id.clone(),
            claim: f.claim.clone(),
            verdict: Vote::Invalid,
            difficulty: f.kind.difficulty(),
            rests_on: None,
            premises: Some(ids.clone()),
            calculation: Some(Calculation {
                source: op_node.id.clone(),
                text: f.operation.clone(),
                premises: Some(ids),
            }),
        });
    }
    out
}

/// The premises (node indices, in dependency order) of a worded honeypot forged as `f`
/// from STEP `step` with OPERATION `op`, and of its own OPERATION: the first of the
/// STEP's premise variants ([`Graph::variants`]) under which the forgery stays what it was made to be: its calculation judged, with
/// those premises, as its seats and its OPERATION's seats judge it (refuted for a slip,
/// holding for the others), and no number the forgery brought in (the other entity's
/// count, the items, the new result) read in a premise it adds, so that nothing but the
/// problem speaks of them. `None` when no variant qualifies, or when the source's
/// OPERATION does not rest on exactly what its STEP rests on (a pair the honeypot would
/// not match).
fn premises_for(
    r: &Restricted,
    graph: &Graph,
    step: usize,
    op: usize,
    f: &Forgery,
    rng: &mut impl RngCore,
) -> Option<Vec<usize>> {
    let base = graph.premises(step).to_vec();
    if canonical(graph.premises(op)) != canonical(&base) {
        return None;
    }
    let step_givens = r
        .givens
        .get(&r.hdag.nodes.get(step)?.id)
        .cloned()
        .unwrap_or_default();
    let op_node = r.hdag.nodes.get(op)?;
    let op_givens = r.givens.get(&op_node.id).cloned().unwrap_or_default();
    let original: Vec<i128> = numbers(&op_node.content).iter().map(|n| n.value).collect();
    let brought: Vec<i128> = numbers(&f.operation)
        .iter()
        .map(|n| n.value)
        .filter(|v| !original.contains(v))
        .collect();
    let want = if f.kind == Kind::Slip {
        Vote::Invalid
    } else {
        Vote::Valid
    };
    let content = |d: usize| r.hdag.nodes.get(d).map(|n| n.content.clone());
    graph
        .variants(step, &base, Some(op), rng)
        .into_iter()
        .filter(|set| set.len() <= MAX_DEPENDENCIES)
        .find(|set| {
            let added_clean = set.iter().filter(|d| !base.contains(d)).all(|&d| {
                content(d).is_some_and(|t| numbers(&t).iter().all(|n| !brought.contains(&n.value)))
            });
            let texts: Vec<String> = set.iter().filter_map(|&d| content(d)).collect();
            added_clean
                && operation_vote(&f.operation, &texts, &step_givens) == Some(want)
                && operation_vote(&f.operation, &texts, &op_givens) == Some(want)
        })
}

/// The worded STEPs of `r` a honeypot may copy, each with its OPERATION (node indices):
/// kept STEPs of the LLM or Human tier, not a conclusion, whose one OPERATION is kept too
/// and whose seats read the problem statement.
pub(crate) fn sources(r: &Restricted) -> Vec<(usize, usize)> {
    let hdag = &r.hdag;
    if r.problem.trim().is_empty() {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (op_id, step_id) in &r.supports {
        let (Some(step), Some(op)) = (hdag.index_of(step_id), hdag.index_of(op_id)) else {
            continue;
        };
        let (Some(n), Some(op_node)) = (hdag.nodes.get(step), hdag.nodes.get(op)) else {
            continue;
        };
        let one_operation = r
            .operations
            .get(step_id)
            .is_some_and(|o| o.len() == 1 && o.first() == Some(&op_node.content));
        let sees_problem = r
            .givens
            .get(step_id)
            .is_some_and(|g| g.contains(&r.problem));
        // A restatement of a tool result is no calculation to forge from.
        if Tier::from(n.primary_auditor) != Tier::Computer
            && op_node.kind != crate::computer::tool::RESTATEMENT_KIND
            && n.abstraction_level == AbstractionLevel::Step
            && !r.conclusions.contains(step_id)
            && one_operation
            && sees_problem
        {
            out.push((step, op));
        }
    }
    out.sort_unstable();
    out
}

/// Every forgery of step `step` of `r` (whose OPERATION is `op`) that passes its checks,
/// in a fixed order.
pub(crate) fn forgeries(r: &Restricted, step: usize, op: usize) -> Vec<Forgery> {
    let hdag = &r.hdag;
    let (Some(node), Some(op_node)) = (hdag.nodes.get(step), hdag.nodes.get(op)) else {
        return Vec::new();
    };
    let claim = node.content.as_str();
    let operation = op_node.content.as_str();
    let Some(at) = claim.find(operation) else {
        return Vec::new();
    };
    let Some(calc) = Calc::parse(operation) else {
        return Vec::new();
    };
    if calc.op.apply(calc.a.value, calc.b.value) != Some(calc.c.value) {
        return Vec::new();
    }
    let premises_of = |i: usize| -> Vec<String> {
        let Some(n) = hdag.nodes.get(i) else {
            return Vec::new();
        };
        hdag.dependencies_of(&n.id)
            .filter_map(|d| hdag.index_of(d))
            .filter_map(|d| hdag.nodes.get(d).map(|p| p.content.clone()))
            .collect()
    };
    let ctx = Context {
        problem: &r.problem,
        claim,
        step_premises: premises_of(step),
        step_givens: r.givens.get(&node.id).cloned().unwrap_or_default(),
        op_premises: premises_of(op),
        op_givens: r.givens.get(&op_node.id).cloned().unwrap_or_default(),
        unicode: hdag
            .nodes
            .iter()
            .map(|n| n.content.as_str())
            .chain([r.problem.as_str()])
            .any(|t| t.contains('×') || t.contains('−')),
    };
    let mut candidates: Vec<(Kind, Vec<Edit>, String)> = Vec::new();
    candidates.extend(slips(&calc));
    candidates.extend(wrong_operations(&calc, &ctx));
    candidates.extend(wrong_entities(&calc, &ctx));
    candidates.extend(misapplied_rates(&calc, &ctx));
    let mut out: Vec<Forgery> = Vec::new();
    for (kind, edits, why) in candidates {
        let forged_op = apply(operation, &edits);
        let forged = format!(
            "{}{forged_op}{}",
            &claim[..at],
            &claim[at.saturating_add(operation.len())..]
        );
        // Split as the decomposer splits a worded step: into exactly this calculation.
        if decompose::operation_of(&forged, &r.problem) != Some(forged_op.as_str()) {
            continue;
        }
        if hdag.nodes.iter().any(|n| n.content == forged) {
            continue;
        }
        // What the honeypot's seats and its OPERATION's seats make of the calculation.
        let want = if kind == Kind::Slip {
            Vote::Invalid
        } else {
            Vote::Valid
        };
        let by_step = operation_vote(&forged_op, &ctx.step_premises, &ctx.step_givens);
        let by_op = operation_vote(&forged_op, &ctx.op_premises, &ctx.op_givens);
        if by_step != Some(want) || by_op != Some(want) {
            continue;
        }
        if out.iter().any(|f| f.claim == forged) {
            continue;
        }
        out.push(Forgery {
            kind,
            claim: forged,
            operation: forged_op,
            why,
        });
    }
    out
}

/// The Computer tier's vote on a calculation, judged as a worded step's seats judge its
/// OPERATION (`SegmentView::new`: the same premises and givens, the same seed).
pub(crate) fn operation_vote(op: &str, premises: &[String], givens: &[String]) -> Option<Vote> {
    let seed = Hash::of_parts("trust/v1/operation", &[op.as_bytes()]);
    computer::check_claim(op, premises, givens, &seed).as_vote()
}

/// What a forgery is checked against.
struct Context<'a> {
    problem: &'a str,
    claim: &'a str,
    step_premises: Vec<String>,
    step_givens: Vec<String>,
    op_premises: Vec<String>,
    op_givens: Vec<String>,
    /// The trace writes `×` and `−`: a forged operator is written the same way.
    unicode: bool,
}

impl Context<'_> {
    /// Whether `value` appears in anything the seat reads besides the problem: its
    /// premises and its other givens.
    fn elsewhere(&self, value: i128) -> bool {
        self.step_premises
            .iter()
            .chain(self.step_givens.iter().filter(|g| *g != self.problem))
            .any(|t| numbers(t).iter().any(|n| n.value == value))
    }
}

/// The arithmetic operation of a calculation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
}

impl Op {
    /// `a op b` in whole, non-negative numbers (`None` on overflow, a negative
    /// difference or an inexact quotient).
    fn apply(self, a: i128, b: i128) -> Option<i128> {
        let v = match self {
            Op::Add => a.checked_add(b)?,
            Op::Sub => a.checked_sub(b)?,
            Op::Mul => a.checked_mul(b)?,
            Op::Div => {
                if b == 0 || a.checked_rem(b)? != 0 {
                    return None;
                }
                a.checked_div(b)?
            }
        };
        (v >= 0).then_some(v)
    }

    fn symbol(self, unicode: bool) -> &'static str {
        match (self, unicode) {
            (Op::Add, _) => "+",
            (Op::Sub, true) => "−",
            (Op::Sub, false) => "-",
            (Op::Mul, true) => "×",
            (Op::Mul, false) => "*",
            (Op::Div, true) => "÷",
            (Op::Div, false) => "/",
        }
    }
}

/// A whole number as written: where its digits are, its value, whether a `$` stands
/// before it.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Num {
    at: Range<usize>,
    value: i128,
    money: bool,
}

/// A calculation `a op b = c` in whole numbers (byte ranges within its text).
#[derive(Debug, Clone)]
struct Calc {
    a: Num,
    op: Op,
    op_at: Range<usize>,
    b: Num,
    c: Num,
}

impl Calc {
    /// Reads `text` as exactly `a op b = c` (spaces and `$` signs allowed, nothing else).
    fn parse(text: &str) -> Option<Calc> {
        let mut i = 0;
        let skip = |i: &mut usize| {
            while let Some(c) = text.get(*i..).and_then(|t| t.chars().next()) {
                if !c.is_whitespace() {
                    break;
                }
                *i = i.saturating_add(c.len_utf8());
            }
        };
        let num = |i: &mut usize| -> Option<Num> {
            let money = text.get(*i..)?.starts_with('$');
            if money {
                *i = i.saturating_add(1);
            }
            let start = *i;
            while text.as_bytes().get(*i).is_some_and(u8::is_ascii_digit) {
                *i = i.saturating_add(1);
            }
            let end = *i;
            if end == start || end.saturating_sub(start) > 12 {
                return None;
            }
            // Not a decimal, a grouped number, a percentage or part of a word.
            if text
                .get(end..)
                .and_then(|t| t.chars().next())
                .is_some_and(|c| c.is_alphanumeric() || matches!(c, '.' | ',' | '%' | '_'))
            {
                return None;
            }
            Some(Num {
                at: start..end,
                value: text.get(start..end)?.parse().ok()?,
                money,
            })
        };
        skip(&mut i);
        let a = num(&mut i)?;
        skip(&mut i);
        let c0 = text.get(i..)?.chars().next()?;
        let op = match c0 {
            '+' => Op::Add,
            '-' | '−' => Op::Sub,
            '×' | '*' => Op::Mul,
            '÷' | '/' => Op::Div,
            _ => return None,
        };
        let op_at = i..i.saturating_add(c0.len_utf8());
        i = op_at.end;
        skip(&mut i);
        let b = num(&mut i)?;
        skip(&mut i);
        if !text.get(i..)?.starts_with('=') {
            return None;
        }
        i = i.saturating_add(1);
        skip(&mut i);
        let c = num(&mut i)?;
        skip(&mut i);
        (i == text.len()).then_some(Calc { a, op, op_at, b, c })
    }
}

/// A replacement of a byte range of a calculation's text.
type Edit = (Range<usize>, String);

/// `text` with `edits` (disjoint ranges) made.
fn apply(text: &str, edits: &[Edit]) -> String {
    let mut edits: Vec<&Edit> = edits.iter().collect();
    edits.sort_by_key(|(r, _)| std::cmp::Reverse(r.start));
    let mut out = text.to_string();
    for (r, with) in edits {
        if out.get(r.clone()).is_some() {
            out.replace_range(r.clone(), with);
        }
    }
    out
}

/// Whole numbers in `text`, `$` amounts included; decimals, grouped numbers
/// (`1,000`) and percentages are left out (so a value never matches part of one).
fn numbers(text: &str) -> Vec<Num> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i = i.saturating_add(1);
            continue;
        }
        let start = i;
        while bytes.get(i).is_some_and(u8::is_ascii_digit) {
            i = i.saturating_add(1);
        }
        let before = start.checked_sub(1).and_then(|p| bytes.get(p)).copied();
        let after = bytes.get(i).copied();
        let next_digit = bytes
            .get(i.saturating_add(1))
            .is_some_and(u8::is_ascii_digit);
        let digit_before_separator = start
            .checked_sub(2)
            .and_then(|p| bytes.get(p))
            .is_some_and(u8::is_ascii_digit);
        let part_of_more = matches!(before, Some(b'.' | b',')) && digit_before_separator
            || matches!(after, Some(b'.' | b',')) && next_digit
            || after == Some(b'%')
            || before.is_some_and(|b| b.is_ascii_alphabetic())
            || after.is_some_and(|b| b.is_ascii_alphabetic());
        if part_of_more || i.saturating_sub(start) > 12 {
            continue;
        }
        if let Ok(value) = text[start..i].parse::<i128>() {
            out.push(Num {
                at: start..i,
                value,
                money: before == Some(b'$'),
            });
        }
    }
    out
}

/// Lower-case words of `text` (letters only).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// Whether two lower-case words name the same thing (`muffin`, `muffins`).
fn same_word(a: &str, b: &str) -> bool {
    let plural = |x: &str, y: &str| {
        x.strip_suffix('s').is_some_and(|s| s == y) || x.strip_suffix("es").is_some_and(|s| s == y)
    };
    a == b || plural(a, b) || plural(b, a)
}

fn names(text: &str, word: &str) -> bool {
    words(text).iter().any(|w| same_word(w, word))
}

/// Words after a number that say what kind of number it is rather than what it counts.
const NOT_ENTITIES: [&str; 40] = [
    "and", "or", "for", "of", "to", "in", "on", "at", "by", "the", "a", "an", "is", "are", "was",
    "were", "each", "per", "every", "times", "more", "less", "fewer", "than", "percent", "dollars",
    "dollar", "cents", "cent", "hours", "hour", "minutes", "minute", "days", "day", "weeks",
    "years", "dozen", "groups", "total",
];

/// A number the problem gives for an entity: `48 muffins`.
#[derive(Debug, Clone)]
struct Tie {
    value: i128,
    word: String,
}

/// Every `<count> <entity>` of `problem` (a whole number, not an amount of money or a
/// percentage, followed by a word that names a thing).
fn ties(problem: &str) -> Vec<Tie> {
    numbers(problem)
        .into_iter()
        .filter(|n| !n.money)
        .filter_map(|n| {
            let rest = problem.get(n.at.end..)?;
            let rest = rest.strip_prefix(' ')?;
            let word: String = rest.chars().take_while(|c| c.is_alphabetic()).collect();
            let word = word.to_lowercase();
            (word.chars().count() >= 3 && !NOT_ENTITIES.contains(&word.as_str())).then_some(Tie {
                value: n.value,
                word,
            })
        })
        .collect()
}

/// The tie of `problem` for this entity when it is the only one, and its number appears
/// only there.
fn sole_tie<'a>(all: &'a [Tie], nums: &[Num], t: &Tie) -> Option<&'a Tie> {
    let same: Vec<&Tie> = all.iter().filter(|x| same_word(&x.word, &t.word)).collect();
    let once = nums.iter().filter(|n| n.value == t.value).count() == 1;
    match same.as_slice() {
        [only] if once => Some(*only),
        _ => None,
    }
}

/// The result made wrong: `c + 10`, `c × 10`.
fn slips(calc: &Calc) -> Vec<(Kind, Vec<Edit>, String)> {
    let c = calc.c.value;
    [c.checked_add(10), c.checked_mul(10)]
        .into_iter()
        .flatten()
        .filter(|w| *w != c)
        .map(|w| {
            (
                Kind::Slip,
                vec![(calc.c.at.clone(), w.to_string())],
                format!("the result {c} made {w}: the calculation does not hold"),
            )
        })
        .collect()
}

/// Words that call for each operation, as (operation, phrases).
const CUES: [(Op, &[&str]); 3] = [
    (
        Op::Add,
        &["total", "altogether", "in all", "combined", "sum"],
    ),
    (
        Op::Sub,
        &["profit", "left", "remaining", "remain", "difference"],
    ),
    (
        Op::Div,
        &["groups of", "split", "shared", "divided", "each group"],
    ),
];

/// Another operation than the words call for, recomputed.
fn wrong_operations(calc: &Calc, ctx: &Context<'_>) -> Vec<(Kind, Vec<Edit>, String)> {
    let spaced = format!(" {} ", words(ctx.claim).join(" "));
    let cued = |op: Op| {
        CUES.iter().any(|(o, phrases)| {
            *o == op && phrases.iter().any(|p| spaced.contains(&format!(" {p} ")))
        })
    };
    let (a, b) = (&calc.a, &calc.b);
    let replacement = match calc.op {
        Op::Add if cued(Op::Add) && a.value > b.value => {
            Some((Op::Sub, "a total made a difference"))
        }
        Op::Sub if cued(Op::Sub) && b.value > 0 => Some((Op::Add, "a difference made a total")),
        Op::Div if cued(Op::Div) && b.value > 1 => {
            Some((Op::Mul, "a number of groups made a product"))
        }
        Op::Mul if a.money != b.money => {
            // A count times a price the problem gives per item.
            let price = if a.money { a } else { b };
            let lower = ctx.problem.to_lowercase();
            let per_item = ["each", "per", "apiece"]
                .iter()
                .any(|w| lower.contains(&format!("${} {w}", price.value)));
            per_item.then_some((Op::Add, "a count added to a price"))
        }
        _ => None,
    };
    let Some((op, why)) = replacement else {
        return Vec::new();
    };
    let Some(value) = op.apply(a.value, b.value).filter(|v| *v != calc.c.value) else {
        return Vec::new();
    };
    vec![(
        Kind::WrongOperation,
        vec![
            (calc.op_at.clone(), op.symbol(ctx.unicode).to_string()),
            (calc.c.at.clone(), value.to_string()),
        ],
        format!("{why}: {} replaced by {}", calc.c.value, value),
    )]
}

/// A count the problem gives for another entity, recomputed.
fn wrong_entities(calc: &Calc, ctx: &Context<'_>) -> Vec<(Kind, Vec<Edit>, String)> {
    let all = ties(ctx.problem);
    let nums = numbers(ctx.problem);
    let in_claim = numbers(ctx.claim);
    let mut out = Vec::new();
    for e in &all {
        let Some(e) = sole_tie(&all, &nums, e) else {
            continue;
        };
        if !names(ctx.claim, &e.word) || in_claim.iter().filter(|n| n.value == e.value).count() != 1
        {
            continue;
        }
        for (operand, other, first) in [(&calc.a, &calc.b, true), (&calc.b, &calc.a, false)] {
            if operand.money || operand.value != e.value {
                continue;
            }
            for f in &all {
                let Some(f) = sole_tie(&all, &nums, f) else {
                    continue;
                };
                if same_word(&f.word, &e.word)
                    || f.value == e.value
                    || names(ctx.claim, &f.word)
                    || in_claim.iter().any(|n| n.value == f.value)
                    || ctx.elsewhere(f.value)
                {
                    continue;
                }
                let value = if first {
                    calc.op.apply(f.value, other.value)
                } else {
                    calc.op.apply(other.value, f.value)
                };
                let Some(value) = value.filter(|v| *v != calc.c.value) else {
                    continue;
                };
                out.push((
                    Kind::WrongEntity,
                    vec![
                        (operand.at.clone(), f.value.to_string()),
                        (calc.c.at.clone(), value.to_string()),
                    ],
                    format!(
                        "the problem gives {} {} and {} {}: the step counts the {} with {}",
                        e.value, e.word, f.value, f.word, e.word, f.value
                    ),
                ));
            }
        }
    }
    out
}

/// The prices of groups in `problem`: (items per group, price), from `4 for $5`, `$5 for
/// 4`, `$5 per 4`, `$5 a dozen`, `$5 per dozen`, `a dozen for $5`.
fn group_prices(problem: &str) -> Vec<(i128, i128)> {
    let lower = problem.to_lowercase();
    let nums = numbers(&lower);
    let at = |start: usize, money: bool| {
        nums.iter()
            .find(|m| m.at.start == start && m.money == money)
    };
    let mut out = Vec::new();
    for n in &nums {
        let after = lower.get(n.at.end..).unwrap_or("");
        if n.money {
            for lead in [" for ", " per "] {
                if after.starts_with(lead)
                    && let Some(m) = at(n.at.end.saturating_add(lead.len()), false)
                {
                    out.push((m.value, n.value));
                }
            }
            let before = lower.get(..n.at.start).unwrap_or("");
            if [" a dozen", " per dozen", " for a dozen"]
                .iter()
                .any(|p| after.starts_with(p))
                || before.ends_with("dozen for $")
            {
                out.push((12, n.value));
            }
        } else if after.starts_with(" for $")
            && let Some(m) = at(n.at.end.saturating_add(" for $".len()), true)
        {
            out.push((n.value, m.value));
        }
    }
    out.retain(|(n, _)| *n >= 2);
    out
}

/// The price of a group used as the price of one item, recomputed.
fn misapplied_rates(calc: &Calc, ctx: &Context<'_>) -> Vec<(Kind, Vec<Edit>, String)> {
    if calc.op != Op::Mul || calc.a.money == calc.b.money {
        return Vec::new();
    }
    let (price, groups) = if calc.a.money {
        (&calc.a, &calc.b)
    } else {
        (&calc.b, &calc.a)
    };
    let all = ties(ctx.problem);
    let nums = numbers(ctx.problem);
    let in_claim = numbers(ctx.claim);
    // The price is stated once in the problem, as the price of a group.
    if nums.iter().filter(|n| n.value == price.value).count() != 1 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for (size, p) in group_prices(ctx.problem) {
        if p != price.value {
            continue;
        }
        let Some(items) = groups.value.checked_mul(size) else {
            continue;
        };
        let tied = all.iter().find(|t| {
            t.value == items && sole_tie(&all, &nums, t).is_some() && names(ctx.claim, &t.word)
        });
        let Some(t) = tied else {
            continue;
        };
        if in_claim.iter().any(|n| n.value == items) {
            continue;
        }
        let Some(value) = Op::Mul
            .apply(items, price.value)
            .filter(|v| *v != calc.c.value)
        else {
            continue;
        };
        out.push((
            Kind::MisappliedRate,
            vec![
                (groups.at.clone(), items.to_string()),
                (calc.c.at.clone(), value.to_string()),
            ],
            format!(
                "${p} is the price of {size} {}: the step prices {items} of them at ${p} each",
                t.word
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests;
