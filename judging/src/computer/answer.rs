//! Final answers to formal problems: the one claim of a trace that a deterministic
//! checker can judge against the problem itself.
//!
//! A word problem's answer ("Mike has 24 points") means something only in the world the
//! problem describes, which no checker reads. A formal problem's answer is a fact of
//! mathematics or logic that follows from the problem's own text, and these are decided
//! here, by computing the answer and comparing:
//! - **value**: `Calculate ( 3 * -4 ) + 7.`, `What is 12 × 7?`, `... problem: 80 + 87 =`
//!   (the whole problem, after the instruction, is an expression of numbers);
//! - **solve**: `Find the value of h in the equation: 1615*h - 85 = 80665`, `Solve for
//!   x: 3(x + 4) = 2x + 19` (one equation in one name); a value that satisfies it is
//!   Valid, one that does not is Invalid when the equation is linear (its only solution
//!   is missed), else an abstention;
//! - **simplify**: `Simplify the fraction 18486/20280 to its lowest terms`;
//! - **premises**: numbered propositional premises, an assignment, and `which premises
//!   are true?`;
//! - **derive**: rules `A → B` (one atom each side), facts, and `can I derive F?` / `is
//!   Rex a doctors?`: the answer's yes or no against the closure of the facts under the
//!   rules.
//!
//! Anything else, in the problem or in the answer, is not read ([`check_answer`] gives
//! `None`), and the answer goes to a tier that reads words. Precision before coverage:
//! a problem is read only when all of it is read, and an answer only when it states one
//! answer in a form listed here.

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::Vote;

use super::{
    Judgement,
    expr::{Expr, Rational, gcd},
    logic::{self, F},
    read, show,
};

/// Longest problem statement read as a formal problem.
const MAX_PROBLEM_CHARS: usize = 4_000;
/// Longest final answer read.
const MAX_ANSWER_CHARS: usize = 400;
/// Most rules of a derivation problem.
const MAX_RULES: usize = 256;

/// A formal problem, as read.
#[derive(Debug, Clone, PartialEq)]
enum Problem {
    /// The value of an expression of numbers.
    Value(Expr),
    /// The solution of `lhs = rhs` for `name`.
    Solve { name: String, lhs: Expr, rhs: Expr },
    /// The fraction `num/den` in lowest terms.
    Simplify { num: i128, den: i128 },
    /// Which of the numbered premises hold under the assignment.
    Premises {
        premises: Vec<F>,
        values: BTreeMap<String, bool>,
    },
    /// Whether `goal` follows from `facts` by `rules`.
    Derive {
        rules: Vec<(String, String)>,
        facts: BTreeSet<String>,
        goal: String,
    },
}

/// Whether `problem` is a formal problem this module reads: its answer, and the
/// mathematics of its steps, are the problem's own (no quantity of the world is named).
pub fn is_formal(problem: &str) -> bool {
    read_problem(problem).is_some()
}

/// The judgement of `answer` as the final answer to `problem`; `None` when the problem
/// is not a formal problem this module reads, or the answer is not in a form it reads.
pub fn check_answer(problem: &str, answer: &str) -> Option<Judgement> {
    if answer.chars().count() > MAX_ANSWER_CHARS {
        return None;
    }
    let answer = bare_answer(answer);
    match read_problem(problem)? {
        Problem::Value(e) => value_answer(&e, &answer),
        Problem::Solve { name, lhs, rhs } => solve_answer(&name, &lhs, &rhs, &answer),
        Problem::Simplify { num, den } => simplify_answer(num, den, &answer),
        Problem::Premises { premises, values } => premises_answer(&premises, &values, &answer),
        Problem::Derive { rules, facts, goal } => derive_answer(&rules, &facts, &goal, &answer),
    }
}

/// The answer with its dressing removed: `#### 72`, `$\boxed{72}$`, `**Answer: 72**`,
/// `Final answer: 72`, `The answer is 72.` all give `72`.
fn bare_answer(answer: &str) -> String {
    let mut t = answer.trim().replace("**", "").replace('`', "");
    if let Some(i) = t.find("\\boxed{") {
        let inner = t.get(i.saturating_add("\\boxed{".len())..).unwrap_or("");
        let mut depth = 1usize;
        let mut end = inner.len();
        for (k, c) in inner.char_indices() {
            match c {
                '{' => depth = depth.saturating_add(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = k;
                        break;
                    }
                }
                _ => {}
            }
        }
        let before = t.get(..i).unwrap_or("").to_string();
        t = format!("{before}{}", inner.get(..end).unwrap_or(""));
    }
    let mut t = t.trim().trim_start_matches('#').trim().to_string();
    for prefix in [
        "final answer:",
        "final answer is",
        "answer:",
        "the answer is:",
        "the answer is",
        "the final answer is",
        "so the answer is",
        "therefore, the answer is",
        "therefore the answer is",
    ] {
        if t.to_lowercase().starts_with(prefix) {
            t = t.get(prefix.len()..).unwrap_or("").trim().to_string();
        }
    }
    t.trim()
        .trim_matches('$')
        .trim()
        .trim_end_matches(['.', '!'])
        .trim()
        .trim_matches('$')
        .trim()
        .to_string()
}

fn read_problem(problem: &str) -> Option<Problem> {
    let p = problem.trim();
    if p.is_empty() || p.chars().count() > MAX_PROBLEM_CHARS {
        return None;
    }
    derive_problem(p)
        .or_else(|| premises_problem(p))
        .or_else(|| simplify_problem(p))
        .or_else(|| solve_problem(p))
        .or_else(|| value_problem(p))
}

/// An expression (or equation) written after an instruction, with the instruction's
/// words gone: `Calculate 3 + 4.` gives `3 + 4`.
fn after_instruction<'a>(p: &'a str, instructions: &[&str]) -> Option<&'a str> {
    let lower = p.to_lowercase();
    // `State the final answer to the following arithmetic problem: 80 + 87 =`: the
    // instruction ends at its colon.
    if let Some((head, tail)) = p.rsplit_once(':') {
        let head = head.to_lowercase();
        if instructions
            .iter()
            .any(|i| head.trim_start().starts_with(i))
            || head.contains("problem")
            || head.contains("equation")
            || head.contains("expression")
            || head.contains("satisfies")
        {
            return Some(tail);
        }
    }
    instructions
        .iter()
        .find_map(|i| lower.starts_with(i).then(|| p.get(i.len()..)).flatten())
}

fn parse_math(text: &str) -> Option<Expr> {
    let t = text
        .trim()
        .trim_end_matches(['?', '.', '='])
        .trim()
        .trim_matches('$')
        .trim();
    if t.is_empty() {
        return None;
    }
    let (cleaned, notes) = read::clean(t);
    if !notes.is_empty() {
        return None;
    }
    Expr::parse(cleaned.trim()).ok()
}

fn names(e: &Expr) -> BTreeSet<String> {
    let mut n = BTreeSet::new();
    e.vars(&mut n);
    n
}

fn value_problem(p: &str) -> Option<Problem> {
    let body = after_instruction(
        p,
        &[
            "calculate",
            "compute",
            "evaluate",
            "what is",
            "what's",
            "work out",
            "find the value of",
            "find",
        ],
    )?;
    let e = parse_math(body)?;
    (names(&e).is_empty() && !is_number(&e)).then_some(Problem::Value(e))
}

fn solve_problem(p: &str) -> Option<Problem> {
    let body = after_instruction(
        p,
        &[
            "solve for",
            "solve",
            "find the value of",
            "determine the value of",
            "find",
        ],
    )?;
    // `Solve for x: ...` leaves `x: 3x + 5 = 20` when the colon is not the split.
    let body = body.trim();
    let body = match body.split_once(':') {
        Some((head, tail)) if head.split_whitespace().count() <= 1 => tail,
        _ => body,
    };
    let (l, r) = body.trim().trim_end_matches(['.', '?']).split_once('=')?;
    if r.contains('=') {
        return None;
    }
    let (lhs, rhs) = (parse_math(l)?, parse_math(r)?);
    let mut all = names(&lhs);
    all.extend(names(&rhs));
    let [name] = <[String; 1]>::try_from(all.into_iter().collect::<Vec<_>>()).ok()?;
    // The name the question asks for, when it names one, is the equation's.
    let lower = p.to_lowercase();
    let asked = ["value of ", "solve for "]
        .iter()
        .find_map(|k| lower.split_once(k).map(|(_, a)| a))
        .and_then(|a| a.split(|c: char| !c.is_alphanumeric()).next())
        .map(str::to_string);
    if asked.is_some_and(|a| a != name.to_lowercase()) {
        return None;
    }
    Some(Problem::Solve { name, lhs, rhs })
}

fn simplify_problem(p: &str) -> Option<Problem> {
    let lower = p.to_lowercase();
    let rest = lower.strip_prefix("simplify")?;
    let start = p.len().checked_sub(rest.len())?;
    let tail = p.get(start..)?;
    let tail = tail
        .trim_start()
        .strip_prefix("the fraction")
        .unwrap_or(tail);
    let fraction = tail
        .split(" to ")
        .next()?
        .split(". ")
        .next()?
        .trim()
        .replace("\\dfrac", "\\frac");
    // The rest may only ask for lowest terms and how to write the answer.
    let e = parse_math(&fraction)?;
    let (num, den) = written_fraction(&e)?;
    (den != 0).then_some(Problem::Simplify { num, den })
}

/// `p/q` with whole `p` and `q` as written (a sign before either).
fn written_fraction(e: &Expr) -> Option<(i128, i128)> {
    match e {
        Expr::Div(a, b) => Some((whole(a)?, whole(b)?)),
        Expr::Neg(a) => written_fraction(a).and_then(|(p, q)| Some((p.checked_neg()?, q))),
        _ => None,
    }
}

fn whole(e: &Expr) -> Option<i128> {
    match e {
        Expr::Num(r, w) if w.decimals == 0 => r.as_int(),
        Expr::Neg(a) => whole(a)?.checked_neg(),
        _ => None,
    }
}

fn is_number(e: &Expr) -> bool {
    match e {
        Expr::Num(..) => true,
        Expr::Neg(a) => matches!(a.as_ref(), Expr::Num(..)),
        _ => false,
    }
}

fn premises_problem(p: &str) -> Option<Problem> {
    let lower = p.to_lowercase();
    if !lower.contains("which premises are true") {
        return None;
    }
    let mut premises = Vec::new();
    let mut values = BTreeMap::new();
    for line in p.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let l = line.to_lowercase();
        if l.starts_with("premises:") || l.contains("which premises are true") {
            continue;
        }
        if let Some(rest) = line.strip_prefix("Assignment:") {
            for pair in rest.split(',') {
                let (name, v) = pair.split_once('=')?;
                let v = match v.trim().to_lowercase().as_str() {
                    "true" | "t" => true,
                    "false" | "f" => false,
                    _ => return None,
                };
                values.insert(name.trim().to_string(), v);
            }
            continue;
        }
        // `3. (P ∨ Q)`: numbered in order from 1.
        let (n, f) = line.split_once(". ")?;
        if n.trim().parse::<usize>().ok()? != premises.len().saturating_add(1) {
            return None;
        }
        premises.push(logic::parse(f.trim())?);
    }
    let mut atoms = BTreeMap::new();
    for f in &premises {
        logic::atoms(f, &mut atoms);
    }
    (!premises.is_empty() && atoms.keys().all(|a| values.contains_key(a)))
        .then_some(Problem::Premises { premises, values })
}

fn derive_problem(p: &str) -> Option<Problem> {
    let mut rules = Vec::new();
    let mut facts = BTreeSet::new();
    let mut goal = None;
    let rules_of = |body: &str, rules: &mut Vec<(String, String)>| -> Option<()> {
        for part in body.split(';') {
            let part = part.trim().trim_end_matches('.').trim();
            if !part.is_empty() {
                rules.push(rule_of(part)?);
            }
            if rules.len() > MAX_RULES {
                return None;
            }
        }
        Some(())
    };
    if !p.contains('\n') {
        // `Rules: A → B; B → C. Fact: I have A. Can I derive C?`
        let (r, rest) = p.strip_prefix("Rules:")?.split_once("Fact:")?;
        rules_of(r, &mut rules)?;
        let (f, q) = rest.split_once('.')?;
        facts.extend(fact_atoms(f)?);
        goal = Some(question_goal(q.trim())?);
    } else {
        let mut in_rules = false;
        for line in p.lines().map(str::trim).filter(|l| !l.is_empty()) {
            let lower = line.to_lowercase();
            if let Some(q) = lower.strip_prefix("question:") {
                goal = Some(question_goal(
                    line.get(line.len().checked_sub(q.len())?..)?,
                )?);
                in_rules = false;
            } else if lower.starts_with("can i derive") || lower.starts_with("is ") {
                goal = Some(question_goal(line)?);
                in_rules = false;
            } else if let Some(rest) = line
                .strip_prefix("Fact:")
                .or_else(|| line.strip_prefix("Facts:"))
            {
                facts.extend(fact_atoms(rest)?);
                in_rules = false;
            } else if let Some(rest) = line.strip_prefix("Rules:") {
                in_rules = true;
                rules_of(rest, &mut rules)?;
            } else if in_rules {
                rules_of(line, &mut rules)?;
            } else {
                return None;
            }
        }
    }
    let goal = goal?;
    (!rules.is_empty() && !facts.is_empty()).then_some(Problem::Derive { rules, facts, goal })
}

/// One rule, one atom on each side: `A → B`, `- if something is a birds, it is a doctors
/// (birds -> doctors)`. A rule with more to it (`A and B → C`) is not read.
fn rule_of(part: &str) -> Option<(String, String)> {
    let part = part.trim().trim_start_matches('-').trim();
    let (words, inner) = match (part.rfind('('), part.rfind(')')) {
        (Some(o), Some(c))
            if o < c
                && part
                    .get(c.saturating_add(1)..)
                    .is_some_and(|r| r.trim().is_empty()) =>
        {
            (part.get(..o)?, part.get(o.saturating_add(1)..c)?)
        }
        _ => ("", part),
    };
    let (a, b) = ["→", "->", "=>", "⇒"]
        .iter()
        .find_map(|arrow| inner.split_once(arrow))?;
    let (a, b) = (a.trim(), b.trim());
    let ok = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_alphanumeric() || c == '_');
    // Words before a bracketed rule must name the same two atoms, in order.
    let said = |x: &str| {
        words
            .split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .position(|w| w == x)
    };
    let consistent =
        words.trim().is_empty() || matches!((said(a), said(b)), (Some(i), Some(j)) if i < j);
    (ok(a) && ok(b) && consistent).then(|| (a.to_string(), b.to_string()))
}

/// `I have A.`, `I have A and B.`, `A, B.`, `Rex is a humans.`
fn fact_atoms(text: &str) -> Option<Vec<String>> {
    let t = text.trim().trim_end_matches('.').trim();
    let t = t
        .strip_prefix("I have ")
        .or_else(|| t.split_once(" is a ").map(|(_, x)| x))
        .or_else(|| t.split_once(" is an ").map(|(_, x)| x))
        .unwrap_or(t);
    let atoms: Vec<String> = t
        .split(',')
        .flat_map(|x| x.split(" and "))
        .map(|x| x.trim().to_string())
        .collect();
    atoms
        .iter()
        .all(|a| !a.is_empty() && a.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then_some(atoms)
}

/// `can I derive F?`, `Can I derive F?`, `is Rex a doctors?`
fn question_goal(q: &str) -> Option<String> {
    let q = q.trim().strip_suffix('?')?.trim();
    let lower = q.to_lowercase();
    let atom = if let Some(rest) = lower.strip_prefix("can i derive ") {
        q.get(q.len().checked_sub(rest.len())?..)?
    } else if lower.starts_with("is ") {
        let (_, x) = q.split_once(" a ").or_else(|| q.split_once(" an "))?;
        x
    } else {
        return None;
    };
    let atom = atom.trim();
    (!atom.is_empty() && atom.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| atom.to_string())
}

fn vote(vote: Vote, reason: String) -> Judgement {
    Judgement::Vote { vote, reason }
}

/// The one number an answer states, read as the checkers read numbers.
fn answer_number(answer: &str) -> Option<Expr> {
    let e = parse_math(answer)?;
    (is_number(&e) || written_fraction(&e).is_some()).then_some(e)
}

/// Whether the written `stated` equals `exact`: exactly, or as its decimals truncated or
/// rounded to the places written.
fn matches(stated: &Expr, exact: Rational) -> Option<bool> {
    let empty = BTreeMap::new();
    let v = stated.eval_exact(&empty)?;
    if v == exact {
        return Some(true);
    }
    if let Some(d) = stated.decimals()
        && d > 0
        && exact.to_decimals(d).is_some_and(|(t, r)| t == v || r == v)
    {
        return Some(true);
    }
    Some(false)
}

fn value_answer(e: &Expr, answer: &str) -> Option<Judgement> {
    let exact = e.eval_exact(&BTreeMap::new())?;
    // `80 + 87 + 85 - 83 = 169`: the answer restates the problem and ends in its value.
    let stated = match answer.rsplit_once('=') {
        Some((before, last)) if parse_math(before).as_ref() == Some(e) => answer_number(last)?,
        Some(_) => return None,
        None => answer_number(answer)?,
    };
    Some(if matches(&stated, exact)? {
        vote(
            Vote::Valid,
            format!("the problem's expression is {}", show(exact)),
        )
    } else {
        vote(
            Vote::Invalid,
            format!("the problem's expression is {}, not {answer}", show(exact)),
        )
    })
}

fn solve_answer(name: &str, lhs: &Expr, rhs: &Expr, answer: &str) -> Option<Judgement> {
    let value = match answer.split_once('=') {
        Some((n, v)) => {
            if n.trim().trim_matches('$').trim() != name {
                return None;
            }
            answer_number(v)?
        }
        None => answer_number(answer)?,
    };
    let empty = BTreeMap::new();
    let f = |x: Rational| -> Option<Rational> {
        let env = BTreeMap::from([(name.to_string(), x)]);
        lhs.eval_exact(&env)?.sub(rhs.eval_exact(&env)?)
    };
    let v = value.eval_exact(&empty)?;
    if f(v)?.is_zero() {
        return Some(vote(
            Vote::Valid,
            format!("{name} = {} satisfies the equation", show(v)),
        ));
    }
    // Linear in the name: f(2) - 2 f(1) + f(0) = 0 at three points and some slope (a
    // rational function with the name below a bar could pass this at three points, but
    // then f(x) - f(0) - x (f(1) - f(0)) vanishes at a fourth only by chance: checked).
    let (f0, f1, f2, f7) = (
        f(Rational::int(0))?,
        f(Rational::int(1))?,
        f(Rational::int(2))?,
        f(Rational::int(7))?,
    );
    let slope = f1.sub(f0)?;
    let linear = f2.sub(f1)? == slope && f7.sub(f0)? == slope.mul(Rational::int(7))?;
    if !linear || slope.is_zero() {
        return Some(Judgement::Abstain(format!(
            "{name} = {} does not satisfy the equation, which is not linear in {name}",
            show(v)
        )));
    }
    let solution = f0.neg()?.div(slope)?;
    Some(if matches(&value, solution)? {
        vote(
            Vote::Valid,
            format!(
                "the equation's solution is {name} = {}, written to the places shown",
                show(solution)
            ),
        )
    } else {
        vote(
            Vote::Invalid,
            format!(
                "the equation's only solution is {name} = {}, not {}",
                show(solution),
                show(v)
            ),
        )
    })
}

fn simplify_answer(num: i128, den: i128, answer: &str) -> Option<Judgement> {
    let e = parse_math(answer)?;
    let (p, q) = match written_fraction(&e) {
        Some(f) => f,
        None => (whole(&e)?, 1),
    };
    let target = Rational::new(num, den)?;
    let value = Rational::new(p, q)?;
    let lowest = gcd(p, q) == 1 && q > 0;
    Some(if value != target {
        vote(
            Vote::Invalid,
            format!("{num}/{den} is {}, not {p}/{q}", show(target)),
        )
    } else if !lowest {
        vote(
            Vote::Invalid,
            format!("{p}/{q} equals {num}/{den} but is not in lowest terms"),
        )
    } else {
        vote(
            Vote::Valid,
            format!("{num}/{den} in lowest terms is {}", show(target)),
        )
    })
}

fn premises_answer(
    premises: &[F],
    values: &BTreeMap<String, bool>,
    answer: &str,
) -> Option<Judgement> {
    let truth: BTreeSet<usize> = premises
        .iter()
        .enumerate()
        .filter(|(_, f)| logic::value(f, values) == Some(true))
        .map(|(i, _)| i.saturating_add(1))
        .collect();
    let lower = answer.to_lowercase();
    let claimed: BTreeSet<usize> = if lower == "all premises are true" {
        (1..=premises.len()).collect()
    } else if lower == "none of the premises is true"
        || lower == "none of the premises are true"
        || lower == "no premise is true"
    {
        BTreeSet::new()
    } else {
        let list = lower
            .strip_prefix("premises ")
            .and_then(|r| r.strip_suffix(" are true"))
            .or_else(|| {
                lower
                    .strip_prefix("premise ")
                    .and_then(|r| r.strip_suffix(" is true"))
            })?;
        let mut out = BTreeSet::new();
        for n in list.split(',').flat_map(|x| x.split(" and ")) {
            let n: usize = n.trim().parse().ok()?;
            if n == 0 || n > premises.len() || !out.insert(n) {
                return None;
            }
        }
        out
    };
    let list = |s: &BTreeSet<usize>| {
        if s.is_empty() {
            "none".to_string()
        } else {
            s.iter()
                .map(|n| n.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        }
    };
    Some(if claimed == truth {
        vote(
            Vote::Valid,
            format!(
                "under the assignment the true premises are {}",
                list(&truth)
            ),
        )
    } else {
        vote(
            Vote::Invalid,
            format!(
                "under the assignment the true premises are {}, not {}",
                list(&truth),
                list(&claimed)
            ),
        )
    })
}

/// `A by the rules A → B and B → C` after `D follows from`: the atoms named are facts,
/// and every rule named is one the problem states.
fn follows_from(text: &str, rules: &[(String, String)], facts: &BTreeSet<String>) -> bool {
    let (from, cited) = match text
        .split_once(" by the rules ")
        .or_else(|| text.split_once(" by the rule "))
    {
        Some((f, r)) => (f, Some(r)),
        None => (text, None),
    };
    let atoms_ok = from
        .split([',', ' '])
        .filter(|w| !w.is_empty() && *w != "and")
        .all(|w| facts.iter().any(|f| f.to_lowercase() == w));
    let rules_ok = cited.is_none_or(|r| {
        r.split(',')
            .flat_map(|x| x.split(" and "))
            .map(str::trim)
            .all(|x| {
                rule_of(x).is_some_and(|(a, b)| {
                    rules
                        .iter()
                        .any(|(p, q)| p.to_lowercase() == a && q.to_lowercase() == b)
                })
            })
    });
    atoms_ok && rules_ok
}

fn derive_answer(
    rules: &[(String, String)],
    facts: &BTreeSet<String>,
    goal: &str,
    answer: &str,
) -> Option<Judgement> {
    let lower = answer.to_lowercase();
    let (yes, rest) = if let Some(r) = lower.strip_prefix("yes") {
        (true, r)
    } else if let Some(r) = lower.strip_prefix("no") {
        (false, r)
    } else {
        return None;
    };
    // What follows the yes or no may only restate it about the goal.
    let rest = rest.trim_start_matches([',', ':', ';', '.', ' ']).trim();
    let g = goal.to_lowercase();
    let restates = rest.is_empty()
        || [
            format!("{g} can be derived"),
            format!("{g} cannot be derived"),
            format!("{g} can't be derived"),
            format!("{g} is derived"),
            format!("{g} is not derived"),
        ]
        .contains(&rest.to_string())
        || rest
            .split_once(" is a ")
            .or_else(|| rest.split_once(" is an "))
            .is_some_and(|(_, x)| x == g)
        || rest
            .split_once(" is not shown to be a ")
            .or_else(|| rest.split_once(" is not shown to be an "))
            .is_some_and(|(_, x)| x == g)
        || rest
            .strip_prefix(&format!("{g} follows from "))
            .is_some_and(|from| follows_from(from, rules, facts));
    let negated = rest.contains("cannot") || rest.contains("can't") || rest.contains(" not ");
    if !restates || negated == yes && !rest.is_empty() {
        return None;
    }
    let mut have: BTreeSet<&str> = facts.iter().map(String::as_str).collect();
    loop {
        let before = have.len();
        for (a, b) in rules {
            if have.contains(a.as_str()) {
                have.insert(b.as_str());
            }
        }
        if have.len() == before {
            break;
        }
    }
    let derivable = have.contains(goal);
    Some(if derivable == yes {
        vote(
            Vote::Valid,
            format!(
                "{goal} {} from the facts by the stated rules",
                if derivable {
                    "follows"
                } else {
                    "does not follow"
                }
            ),
        )
    } else {
        vote(
            Vote::Invalid,
            format!(
                "{goal} {} from the facts by the stated rules",
                if derivable {
                    "does follow"
                } else {
                    "does not follow"
                }
            ),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(problem: &str, answer: &str) -> Option<Vote> {
        check_answer(problem, answer).and_then(|j| j.as_vote())
    }

    #[test]
    fn values_of_expressions() {
        let p = "State the final answer to the following arithmetic problem: 80 + 87 + 85 - 83 =";
        assert!(is_formal(p));
        assert_eq!(v(p, "The answer is 169."), Some(Vote::Valid));
        assert_eq!(v(p, "#### 169"), Some(Vote::Valid));
        assert_eq!(v(p, "$\\boxed{169}$"), Some(Vote::Valid));
        assert_eq!(v(p, "**Answer: 170**"), Some(Vote::Invalid));
        assert_eq!(v(p, "80 + 87 + 85 - 83 = 169"), Some(Vote::Valid));
        let q = "Calculate ( ( -4 * 6 ) + -3 ) - 2.";
        assert_eq!(v(q, "Final answer: -29"), Some(Vote::Valid));
        assert_eq!(v(q, "Final answer: 29"), Some(Vote::Invalid));
        assert_eq!(v("What is 2 / 3?", "0.67"), Some(Vote::Valid));
        assert_eq!(v("What is 2 / 3?", "0.7"), Some(Vote::Valid));
        assert_eq!(v("What is 2 / 3?", "0.5"), Some(Vote::Invalid));
        // An answer that is not one number is not read.
        assert_eq!(check_answer(q, "It is -29 or 29."), None);
        assert_eq!(check_answer(q, "-29 apples"), None);
    }

    #[test]
    fn word_problems_are_not_formal() {
        for p in [
            "Mike has 21 points and Jim has 3 more than Mike. How many points does Jim have?",
            "A bakery sells muffins for $3 each. It sold 48 muffins. What is the revenue?",
            "The denominator of a fraction is 7 less than 3 times the numerator. If the fraction is equivalent to 2/5, what is the numerator?",
            "What is the total cost of 3 apples at $2 each?",
            "Find the number of apples if 3x + 2 = 11 apples.",
        ] {
            assert!(!is_formal(p), "{p}");
            assert_eq!(check_answer(p, "24"), None, "{p}");
        }
    }

    #[test]
    fn solutions_of_equations() {
        let p = "Find the value of h in the equation: 1615*h - 85 = 80665";
        assert!(is_formal(p));
        assert_eq!(v(p, "The answer is h = 50."), Some(Vote::Valid));
        assert_eq!(v(p, "$\\boxed{h = 50}$"), Some(Vote::Valid));
        assert_eq!(v(p, "h = 51"), Some(Vote::Invalid));
        assert_eq!(v(p, "50"), Some(Vote::Valid));
        assert_eq!(check_answer(p, "x = 50"), None, "another name");
        let q = "Solve for x: 3(x + 4) = 2x + 19";
        assert_eq!(v(q, "x = 7"), Some(Vote::Valid));
        assert_eq!(v(q, "x = 5"), Some(Vote::Invalid));
        let r = "Determine the value of b that satisfies: 3*b + 1 = 11";
        assert_eq!(v(r, "b = 3.33"), Some(Vote::Valid));
        assert_eq!(v(r, "b = 3.4"), Some(Vote::Invalid));
        // Not linear: a value that misses is not called wrong.
        let s = "Solve for x: x^2 = 9";
        assert_eq!(v(s, "x = 3"), Some(Vote::Valid));
        assert_eq!(check_answer(s, "x = 4").map(|j| j.as_vote()), Some(None));
    }

    #[test]
    fn simplified_fractions() {
        let p = "Simplify the fraction $18486/20280$ to its lowest terms. Give only the simplified fraction as your final answer.";
        assert!(is_formal(p));
        assert_eq!(v(p, "$\\boxed{\\frac{237}{260}}$"), Some(Vote::Valid));
        assert_eq!(v(p, "The answer is 237/260."), Some(Vote::Valid));
        assert_eq!(v(p, "474/520"), Some(Vote::Invalid));
        assert_eq!(v(p, "237/261"), Some(Vote::Invalid));
        let q = "Simplify the fraction $\\dfrac{12}{18}$ to its lowest terms.";
        assert_eq!(v(q, "2/3"), Some(Vote::Valid));
    }

    #[test]
    fn premises_under_an_assignment() {
        let p = "Premises:\n1. (P ↔ Q)\n2. ((P ∨ Q) ∨ (P ↔ P))\n3. (¬P ∨ (Q ∨ Q))\n4. ((P → P) ∧ (P ∧ P))\nAssignment: P = false, Q = true\nUnder this assignment, which premises are true?";
        assert!(is_formal(p));
        assert_eq!(v(p, "Premises 2, 3 are true."), Some(Vote::Valid));
        assert_eq!(v(p, "Premises 2, 3, 4 are true."), Some(Vote::Invalid));
        assert_eq!(v(p, "Premise 2 is true."), Some(Vote::Invalid));
        assert_eq!(v(p, "All premises are true."), Some(Vote::Invalid));
        assert_eq!(check_answer(p, "The second and third."), None);
    }

    #[test]
    fn derivations_by_rules() {
        let p = "Rules: A → B; B → C; C → D; E → F. Fact: I have A. Can I derive D?";
        assert!(is_formal(p));
        assert_eq!(v(p, "Yes, D can be derived."), Some(Vote::Valid));
        assert_eq!(v(p, "No, D cannot be derived."), Some(Vote::Invalid));
        assert_eq!(v(p, "Yes: D follows from A."), Some(Vote::Valid));
        assert_eq!(
            v(
                p,
                "Yes: D follows from A by the rules A → B, B → C and C → D."
            ),
            Some(Vote::Valid)
        );
        // A rule the problem does not state is not read.
        assert_eq!(
            check_answer(p, "Yes: D follows from A by the rules A → D."),
            None
        );
        let q = "Rules: A → B; B → C; C → D; E → F. Fact: I have A. Can I derive F?";
        assert_eq!(v(q, "Yes: F follows from A."), Some(Vote::Invalid));
        assert_eq!(v(q, "No, F cannot be derived."), Some(Vote::Valid));
        let r = "Rules:\n- if something is a birds, it is a doctors (birds -> doctors)\n- if something is a humans, it is a birds (humans -> birds)\nFact: Rex is a humans.\nQuestion: is Rex a doctors?";
        assert_eq!(v(r, "Yes, Rex is a doctors."), Some(Vote::Valid));
        assert_eq!(
            v(r, "No, Rex is not shown to be a doctors."),
            Some(Vote::Invalid)
        );
        // A rule with a conjunction is not read: the problem is not formal.
        assert!(!is_formal(
            "Rules: A and B → C. Fact: I have A. Can I derive C?"
        ));
        // An answer about another atom is not read.
        assert_eq!(check_answer(p, "Yes, C can be derived."), None);
    }
}
