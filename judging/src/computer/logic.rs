//! Logic steps: rule applications, derived atoms, truth-table evaluations and
//! propositional `p FROM p1, ..., pn`.
//!
//! - Rule applications in prose (`I use rule (A → B) to derive B`, `Since A holds, rule
//!   A -> B gives B`, `From A and A → B, we get B`): deriving anything but the rule's
//!   consequent is `Invalid`; the rule must be stated in the problem and `A` a fact of it
//!   or derived by a premise, else `Ungrounded` — or an abstention when the judge was not
//!   shown the problem (a missing rule cannot be told from an unseen one).
//! - `F is now derived.`: `F` must be a fact or derived by a premise.
//! - Truth-table evaluations (`Since P is false, Q is true, (P ∨ Q) is true.`, `**(P ∧
//!   Q)** = false`, `(Q ↔ Q): the biconditional of True and True gives True.`): the claimed
//!   value must be the formula's value under the assignment, or follow from the values
//!   the step and its premises state for its parts (a value carried from a wrong premise
//!   is propagated, not wrong here).
//! - `p FROM p1, ..., pn` (n ≤ 5, as ProofGrid's NDL_f): `p1 ∧ ... ∧ pn → p` must be a
//!   tautology, checked by truth table over at most 16 atoms; every `pi` must appear in the
//!   context or a premise.

use std::collections::BTreeMap;

use trust_protocol::Vote;

use super::{Judgement, StepInput};

/// Most premises of one `FROM` step.
const MAX_FROM: usize = 5;
/// Most atoms in a truth table.
const MAX_ATOMS: usize = 16;
/// Most tokens in one formula (see [`parse`]).
const MAX_TOKENS: usize = 512;

fn arrow_split(s: &str) -> Option<(&str, &str)> {
    ["→", "->", "=>", "⇒"].iter().find_map(|a| s.split_once(a))
}

fn norm(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Words that introduce what a rule application derives.
const DERIVE_WORDS: [&str; 16] = [
    "derive",
    "derives",
    "get",
    "gets",
    "obtain",
    "conclude",
    "infer",
    "deduce",
    "establish",
    "prove",
    "yields",
    "yield",
    "gives",
    "give",
    "produces",
    "implies",
];

/// A rule application read from a step: `I use rule (A → B) to derive B`, `Using rule
/// A -> B, I derive B`, `Apply (A → B) to get B`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RuleUse {
    /// The rule's antecedent.
    pub from: String,
    /// The rule's consequent.
    pub to: String,
    /// What the step says it derives.
    pub derived: String,
}

/// An atom of a rule chain: letters, digits and `_` (`A`, `H3`, `AZ`, `wet_grass`).
fn atom(s: &str) -> Option<String> {
    let t = s.trim().trim_matches(|c: char| {
        matches!(
            c,
            '(' | ')' | '.' | ',' | ';' | ':' | '*' | '`' | '"' | '\''
        )
    });
    (!t.is_empty() && t.chars().count() <= 40 && t.chars().all(|c| c.is_alphanumeric() || c == '_'))
        .then(|| t.to_string())
}

/// Reads a rule application; `None` when the text is not one.
pub(crate) fn rule_use(text: &str) -> Option<RuleUse> {
    let arrows = ["→", "->", "=>", "⇒"];
    let count: usize = arrows.iter().map(|a| text.matches(a).count()).sum();
    // `=>` is also found inside `==>`; one arrow, one rule.
    if count != 1 {
        return None;
    }
    let (before, after) = arrow_split(text)?;
    // The rule: the parenthesised `(A → B)`, else the words on each side of the arrow.
    let (from, to, rest) = match (before.rfind('('), after.find(')')) {
        (Some(open), Some(close))
            if before
                .get(open.saturating_add(1)..)
                .is_some_and(|s| !s.contains(')')) =>
        {
            (
                atom(before.get(open.saturating_add(1)..)?)?,
                atom(after.get(..close)?)?,
                after.get(close.saturating_add(1)..)?,
            )
        }
        _ => {
            let from = atom(before.split_whitespace().last()?)?;
            let mut words = after.split_whitespace();
            let to = atom(words.next()?)?;
            let used = after.find(words.clone().next().unwrap_or(""))?;
            (from, to, after.get(used..).unwrap_or(""))
        }
    };
    let lower = rest.to_lowercase();
    let mut words = lower.split_whitespace().peekable();
    let mut derived = None;
    while let Some(w) = words.next() {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        if DERIVE_WORDS.contains(&w) {
            // `to derive B`, `I derive that B`, `we get: B`.
            while words
                .peek()
                .is_some_and(|n| matches!(*n, "that" | "the" | "fact" | ":"))
            {
                words.next();
            }
            derived = words.next().and_then(atom);
            break;
        }
    }
    let derived = derived?;
    // `(Q → P): the implication of True and True gives True` evaluates a formula.
    if matches!(derived.as_str(), "true" | "false") || truth_claim(text).is_some() {
        return None;
    }
    // Report the derived atom as the step writes it.
    let derived = rest
        .split_whitespace()
        .filter_map(atom)
        .find(|a| a.to_lowercase() == derived)
        .unwrap_or(derived);
    Some(RuleUse { from, to, derived })
}

/// Whether the text is a rule application the checker reads.
pub(super) fn reads_rule(text: &str) -> bool {
    rule_use(text).is_some()
}

fn truth_word(w: &str) -> Option<bool> {
    match w
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase()
        .as_str()
    {
        "true" | "t" => Some(true),
        "false" | "f" => Some(false),
        _ => None,
    }
}

/// `(P ∨ Q) is true`, `**(P ∧ P)** = false`, `X = True`: a formula and a truth value.
fn formula_value(part: &str) -> Option<(F, String, bool)> {
    let t = part
        .replace("**", " ")
        .replace('`', " ")
        .trim()
        .trim_start_matches(['-', '*', '•'])
        .trim()
        .trim_end_matches(['.', ';', ','])
        .trim()
        .to_string();
    let (f, v) = t
        .rsplit_once(" is ")
        .or_else(|| t.rsplit_once('='))
        .or_else(|| t.rsplit_once(" gives "))?;
    let v = truth_word(v.trim())?;
    let f = f
        .trim()
        .trim_start_matches("since ")
        .trim_start_matches("Since ")
        .trim();
    Some((parse(f)?, norm(f), v))
}

/// Truth values a text states for formulas and atoms (`P = false`, `(P ∨ Q) is true`).
fn stated_values(text: &str) -> Vec<(F, bool)> {
    text.split([',', '\n', ';'])
        .flat_map(|p| p.split(". "))
        .filter_map(|p| {
            let p = p.trim().trim_start_matches("Assignment:").trim();
            formula_value(p).map(|(f, _, v)| (f, v))
        })
        .take(256)
        .collect()
}

/// Evaluates `f`, taking a stated value for any part that has one (not for `f` itself
/// when `top`); `None` when an atom has no value.
fn eval_with(f: &F, stated: &[(F, bool)], top: bool) -> Option<bool> {
    if !top && let Some((_, v)) = stated.iter().find(|(g, _)| g == f) {
        return Some(*v);
    }
    Some(match f {
        F::Atom(_) => return None,
        F::Not(a) => !eval_with(a, stated, false)?,
        F::And(a, b) => eval_with(a, stated, false)? && eval_with(b, stated, false)?,
        F::Or(a, b) => eval_with(a, stated, false)? || eval_with(b, stated, false)?,
        F::Imp(a, b) => !eval_with(a, stated, false)? || eval_with(b, stated, false)?,
        F::Iff(a, b) => eval_with(a, stated, false)? == eval_with(b, stated, false)?,
    })
}

/// The truth value of `f` from its connective applied to operand values written in the
/// step (`the disjunction of True and False gives True`).
fn connective_of(f: &F, operands: &[bool]) -> Option<bool> {
    Some(match (f, operands) {
        (F::Not(_), [a]) => !a,
        (F::And(..), [a, b]) => *a && *b,
        (F::Or(..), [a, b]) => *a || *b,
        (F::Imp(..), [a, b]) => !a || *b,
        (F::Iff(..), [a, b]) => a == b,
        _ => return None,
    })
}

/// What a truth-table evaluation step claims.
struct TruthClaim {
    /// The formula evaluated.
    formula: F,
    /// The value claimed for it.
    value: bool,
    /// Operand values the step writes (`the disjunction of True and False`).
    operands: Vec<bool>,
    /// Values the step states for parts (`Since P is false, ...`).
    given: Vec<(F, bool)>,
}

/// A truth-table evaluation step: `Since P is false, Q is true, (P ↔ Q) is false.`,
/// `**(P ∧ P)** = false`, `(Q ↔ Q): the biconditional of True and True gives False.`
fn truth_claim(claim: &str) -> Option<TruthClaim> {
    let t = claim.trim();
    if let Some((f, rest)) = t.split_once(':')
        && let Some(formula) = parse(
            f.replace("**", " ")
                .trim()
                .trim_start_matches(['-', '*', '•'])
                .trim(),
        )
        && let Some((of, value)) = rest.rsplit_once(" gives ")
    {
        let value = truth_word(value.trim().trim_end_matches('.'))?;
        let operands: Vec<bool> = of
            .rsplit_once(" of ")
            .map(|(_, ops)| {
                ops.split(" and ")
                    .filter_map(|w| truth_word(w.trim()))
                    .collect()
            })
            .unwrap_or_default();
        return Some(TruthClaim {
            formula,
            value,
            operands,
            given: Vec::new(),
        });
    }
    let parts: Vec<&str> = t.split(", ").collect();
    let (last, earlier) = parts.split_last()?;
    let (formula, _, value) = formula_value(last)?;
    let given: Vec<(F, bool)> = earlier
        .iter()
        .filter_map(|p| formula_value(p).map(|(f, _, v)| (f, v)))
        .collect();
    // Every earlier clause must be a stated value, or this is not such a step.
    (given.len() == earlier.len()).then_some(TruthClaim {
        formula,
        value,
        operands: Vec::new(),
        given,
    })
}

/// The formula a truth-table evaluation step evaluates, and its atoms, for linking it
/// to the steps that evaluated its parts.
pub(crate) fn truth_formula(text: &str) -> Option<(String, Vec<String>)> {
    let f = truth_claim(text)?.formula;
    let mut idx = BTreeMap::new();
    atoms(&f, &mut idx);
    Some((show_formula(&f), idx.into_keys().collect()))
}

/// A formula written uniformly (fully parenthesised), so the same formula written by
/// two steps compares equal.
fn show_formula(f: &F) -> String {
    match f {
        F::Atom(a) => a.clone(),
        F::Not(a) => format!("¬{}", show_formula(a)),
        F::And(a, b) => format!("({} ∧ {})", show_formula(a), show_formula(b)),
        F::Or(a, b) => format!("({} ∨ {})", show_formula(a), show_formula(b)),
        F::Imp(a, b) => format!("({} → {})", show_formula(a), show_formula(b)),
        F::Iff(a, b) => format!("({} ↔ {})", show_formula(a), show_formula(b)),
    }
}

/// Whether the text is a truth-table evaluation step the checker reads.
pub(super) fn reads_truth(text: &str) -> bool {
    truth_claim(text).is_some()
}

/// A truth-table evaluation: the claimed value must be the formula's value under the
/// assignment, or follow from the values the step and its premises state for the
/// formula's parts (a value carried from a wrong premise is propagated, not wrong here).
pub(super) fn truth_step(input: &StepInput<'_>) -> Option<Judgement> {
    let TruthClaim {
        formula,
        value: claimed,
        operands,
        given,
    } = truth_claim(input.claim)?;
    // The assignment: atom values the problem and the premises state.
    let mut outside = stated_values(input.context);
    for p in input.premises {
        outside.extend(stated_values(p));
    }
    let assignment: Vec<(F, bool)> = outside
        .iter()
        .filter(|(f, _)| matches!(f, F::Atom(_)))
        .cloned()
        .collect();
    // What the step says it rests on (`Since P is false, ...`) must be so: under the
    // assignment, or as a premise states it (carried, perhaps wrongly, from there).
    for (f, v) in &given {
        let carried = outside.iter().any(|(g, w)| g == f && w == v);
        if !carried && eval_with(f, &assignment, false).is_some_and(|x| x != *v) {
            return Some(Judgement::Vote {
                vote: Vote::Invalid,
                reason: format!(
                    "the step rests on {} being {v}, which it is not under the assignment",
                    show_formula(f)
                ),
            });
        }
    }
    let mut stated = given;
    stated.extend(outside);
    let mut readings = Vec::new();
    // The formula under the assignment (atom values from the problem and premises).
    readings.push(eval_with(&formula, &assignment, true));
    // Under the values stated for its parts (what the step rests on).
    readings.push(eval_with(&formula, &stated, true));
    if !operands.is_empty() {
        readings.push(connective_of(&formula, &operands));
    }
    let decided: Vec<bool> = readings.into_iter().flatten().collect();
    if decided.is_empty() {
        return Some(Judgement::Abstain(
            "the formula's atoms have no stated values".into(),
        ));
    }
    let show = |v: bool| if v { "true" } else { "false" };
    Some(if decided.contains(&claimed) {
        Judgement::Vote {
            vote: Vote::Valid,
            reason: format!("the formula is {} under the stated values", show(claimed)),
        }
    } else {
        Judgement::Vote {
            vote: Vote::Invalid,
            reason: format!(
                "the formula is {}, not {}, under the stated values",
                show(!claimed),
                show(claimed)
            ),
        }
    })
}

/// `F is now derived.`, `humans holds.`: a claim that an atom has been established.
pub(crate) fn fact_claim(text: &str) -> Option<String> {
    let t = text.trim().trim_end_matches(['.', '!']).trim();
    let lower = t.to_lowercase();
    let subject = [
        " is now derived",
        " is derived",
        " has been derived",
        " can be derived",
        " is now established",
        " is established",
        " now holds",
        " holds",
    ]
    .iter()
    .find_map(|suffix| {
        lower
            .strip_suffix(suffix)
            .and_then(|_| t.get(..t.len().checked_sub(suffix.len())?))
    })?;
    atom(subject)
}

/// A claim that an atom is established: it must be a fact of the problem or derived by a
/// premise.
pub(super) fn fact_step(input: &StepInput<'_>) -> Option<Judgement> {
    let a = fact_claim(input.claim)?;
    let have = establishes(input.context, &a) || input.premises.iter().any(|p| establishes(p, &a));
    Some(if have {
        Judgement::Vote {
            vote: Vote::Valid,
            reason: format!("{a} is established before this step"),
        }
    } else if input.context.trim().is_empty() {
        Judgement::Abstain(format!(
            "{a} is not established by the premises, and the problem was not given"
        ))
    } else {
        Judgement::Vote {
            vote: Vote::Ungrounded,
            reason: format!("{a} is neither a fact of the problem nor derived by an earlier step"),
        }
    })
}

/// Whether the text is a `p FROM p1, ..., pn` step the checker reads.
pub(super) fn reads_from(text: &str) -> bool {
    text.split_once(" FROM ").is_some_and(|(g, f)| {
        parse(g.trim()).is_some() && f.split(',').all(|p| parse(p.trim()).is_some())
    })
}

/// Rules a text states (`Rules: A → B; B → C.`), as (antecedent, consequent).
pub(crate) fn stated_rules(text: &str) -> Vec<(String, String)> {
    text.split([';', '.', '\n', ','])
        .filter_map(|part| {
            let (a, b) = arrow_split(part)?;
            let a = atom(a.split_whitespace().last()?)?;
            let b = atom(b.split_whitespace().next()?)?;
            Some((a, b))
        })
        .take(512)
        .collect()
}

/// Whether a text establishes `atom` as a fact: `Fact: I have A.`, `Facts: A, B.`, `I have
/// A and B`, or a rule application that derives it.
pub(crate) fn establishes(text: &str, a: &str) -> bool {
    if rule_use(text).is_some_and(|r| r.derived.eq_ignore_ascii_case(a)) {
        return true;
    }
    // Any statement that names the atom states it (`Fact: I have A.`, `Rex is a
    // insects.`), except rules, conditions and questions, which only mention it.
    text.split(['.', ';', '\n']).any(|sentence| {
        let lower = format!(" {} ", sentence.to_lowercase());
        let mentions_only = arrow_split(sentence).is_some()
            || sentence.contains('?')
            || [
                " if ",
                " whether ",
                " derive",
                " prove",
                "question",
                " can ",
                " rule",
            ]
            .iter()
            .any(|w| lower.contains(w));
        !mentions_only && words_of(sentence).any(|w| w.eq_ignore_ascii_case(a))
    })
}

fn words_of(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Whether a text states the rule `a → b` in words (`if something is a whales, it is a
/// adults`): an `if` sentence naming `a` and then `b`.
fn states_in_words(text: &str, a: &str, b: &str) -> bool {
    text.split(['.', ';', '\n']).any(|sentence| {
        let lower = format!(" {} ", sentence.to_lowercase());
        if !lower.contains(" if ") {
            return false;
        }
        let ws: Vec<&str> = words_of(sentence).collect();
        let pa = ws.iter().position(|w| w.eq_ignore_ascii_case(a));
        let pb = ws.iter().rposition(|w| w.eq_ignore_ascii_case(b));
        matches!((pa, pb), (Some(x), Some(y)) if x < y)
    })
}

/// A rule application: the rule must be stated in the problem, its antecedent a fact or
/// derived by a premise, and the derived claim its consequent.
pub(super) fn rule_step(input: &StepInput<'_>) -> Option<Judgement> {
    let r = rule_use(input.claim)?;
    let (a, b) = (&r.from, &r.to);
    // Deriving anything but the consequent is wrong whatever the problem says.
    if !r.derived.eq_ignore_ascii_case(b) {
        return Some(Judgement::Vote {
            vote: Vote::Invalid,
            reason: format!("the rule ({a} → {b}) yields {b}, not {}", r.derived),
        });
    }
    let sources = || {
        std::iter::once(input.context).chain(
            input
                .premises
                .iter()
                .copied()
                .filter(|p| rule_use(p).is_none()),
        )
    };
    let stated = sources().any(|t| {
        stated_rules(t)
            .iter()
            .any(|(x, y)| x.eq_ignore_ascii_case(a) && y.eq_ignore_ascii_case(b))
            || states_in_words(t, a, b)
    });
    // A judge that was not shown the problem cannot tell a missing rule from an unseen
    // one, nor can one whose problem writes no rule it reads.
    let blind = input.context.trim().is_empty() || stated_rules(input.context).is_empty();
    if !stated {
        return Some(if blind {
            Judgement::Abstain(format!(
                "the rule ({a} → {b}) is not in the premises, and the problem was not given"
            ))
        } else {
            Judgement::Vote {
                vote: Vote::Ungrounded,
                reason: format!("the rule ({a} → {b}) is not among the stated rules"),
            }
        });
    }
    let have = establishes(input.context, a) || input.premises.iter().any(|p| establishes(p, a));
    if !have {
        return Some(if blind {
            Judgement::Abstain(format!(
                "{a} is not established by the premises, and the problem was not given"
            ))
        } else {
            Judgement::Vote {
                vote: Vote::Ungrounded,
                reason: format!("{a} has not been established before this step"),
            }
        });
    }
    Some(Judgement::Vote {
        vote: Vote::Valid,
        reason: format!("applies the stated rule ({a} → {b}) to the established {a}"),
    })
}

/// A propositional formula.
/// A propositional formula.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum F {
    Atom(String),
    Not(Box<F>),
    And(Box<F>, Box<F>),
    Or(Box<F>, Box<F>),
    Imp(Box<F>, Box<F>),
    Iff(Box<F>, Box<F>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum T {
    Atom(String),
    Not,
    And,
    Or,
    Imp,
    Iff,
    L,
    R,
}

fn lex(s: &str) -> Option<Vec<T>> {
    let mut out = Vec::new();
    let cs: Vec<char> = s.chars().collect();
    let mut i = 0;
    while let Some(&c) = cs.get(i) {
        let two: String = cs.iter().skip(i).take(3).collect();
        if c.is_whitespace() {
            i = i.saturating_add(1);
        } else if two.starts_with("<->") {
            out.push(T::Iff);
            i = i.saturating_add(3);
        } else if two.starts_with("->") {
            out.push(T::Imp);
            i = i.saturating_add(2);
        } else {
            let t = match c {
                '¬' | '~' | '!' => T::Not,
                '∧' | '&' => T::And,
                '∨' | '|' => T::Or,
                '→' | '⇒' => T::Imp,
                '↔' | '⇔' => T::Iff,
                '(' => T::L,
                ')' => T::R,
                c if c.is_alphanumeric() || c == '_' => {
                    let mut name = String::new();
                    while let Some(&d) = cs.get(i) {
                        if d.is_alphanumeric() || d == '_' {
                            name.push(d);
                            i = i.saturating_add(1);
                        } else {
                            break;
                        }
                    }
                    out.push(T::Atom(name));
                    continue;
                }
                _ => return None,
            };
            out.push(t);
            i = i.saturating_add(1);
        }
    }
    Some(out)
}

struct Parser<'a> {
    t: &'a [T],
    i: usize,
    depth: usize,
}

impl Parser<'_> {
    /// iff < imp (right assoc) < or < and < not.
    fn iff(&mut self) -> Option<F> {
        self.depth = self.depth.saturating_add(1);
        if self.depth > 64 {
            return None;
        }
        let mut l = self.imp()?;
        while self.t.get(self.i) == Some(&T::Iff) {
            self.i = self.i.saturating_add(1);
            l = F::Iff(Box::new(l), Box::new(self.imp()?));
        }
        self.depth = self.depth.saturating_sub(1);
        Some(l)
    }

    fn imp(&mut self) -> Option<F> {
        let l = self.or()?;
        if self.t.get(self.i) == Some(&T::Imp) {
            self.i = self.i.saturating_add(1);
            return Some(F::Imp(Box::new(l), Box::new(self.imp()?)));
        }
        Some(l)
    }

    fn or(&mut self) -> Option<F> {
        let mut l = self.and()?;
        while self.t.get(self.i) == Some(&T::Or) {
            self.i = self.i.saturating_add(1);
            l = F::Or(Box::new(l), Box::new(self.and()?));
        }
        Some(l)
    }

    fn and(&mut self) -> Option<F> {
        let mut l = self.not()?;
        while self.t.get(self.i) == Some(&T::And) {
            self.i = self.i.saturating_add(1);
            l = F::And(Box::new(l), Box::new(self.not()?));
        }
        Some(l)
    }

    fn not(&mut self) -> Option<F> {
        match self.t.get(self.i)? {
            T::Not => {
                self.i = self.i.saturating_add(1);
                Some(F::Not(Box::new(self.not()?)))
            }
            T::L => {
                self.i = self.i.saturating_add(1);
                let f = self.iff()?;
                (self.t.get(self.i) == Some(&T::R)).then_some(())?;
                self.i = self.i.saturating_add(1);
                Some(f)
            }
            T::Atom(a) => {
                self.i = self.i.saturating_add(1);
                Some(F::Atom(a.clone()))
            }
            _ => None,
        }
    }
}

/// Parses a propositional formula (`((P ∨ Q) → ¬R)`); `None` unless all of it is one.
pub(super) fn parse(s: &str) -> Option<F> {
    let t = lex(s)?;
    // Every recursion of the parser (a sign, an implication's right side, a parenthesis)
    // and every level of the tree the checkers walk consumes a token: bounding the tokens
    // bounds the stack.
    if t.len() > MAX_TOKENS {
        return None;
    }
    let mut p = Parser {
        t: &t,
        i: 0,
        depth: 0,
    };
    let f = p.iff()?;
    (p.i == t.len()).then_some(f)
}

/// The atoms of `f`, numbered in the order first met.
pub(super) fn atoms(f: &F, out: &mut BTreeMap<String, usize>) {
    match f {
        F::Atom(a) => {
            let n = out.len();
            out.entry(a.clone()).or_insert(n);
        }
        F::Not(a) => atoms(a, out),
        F::And(a, b) | F::Or(a, b) | F::Imp(a, b) | F::Iff(a, b) => {
            atoms(a, out);
            atoms(b, out);
        }
    }
}

/// The value of `f` under an assignment; `None` when an atom has no value.
pub(super) fn value(f: &F, values: &BTreeMap<String, bool>) -> Option<bool> {
    Some(match f {
        F::Atom(a) => *values.get(a)?,
        F::Not(a) => !value(a, values)?,
        F::And(a, b) => value(a, values)? && value(b, values)?,
        F::Or(a, b) => value(a, values)? || value(b, values)?,
        F::Imp(a, b) => !value(a, values)? || value(b, values)?,
        F::Iff(a, b) => value(a, values)? == value(b, values)?,
    })
}

fn eval(f: &F, idx: &BTreeMap<String, usize>, row: u32) -> bool {
    match f {
        F::Atom(a) => idx.get(a).is_some_and(|i| row >> i & 1 == 1),
        F::Not(a) => !eval(a, idx, row),
        F::And(a, b) => eval(a, idx, row) && eval(b, idx, row),
        F::Or(a, b) => eval(a, idx, row) || eval(b, idx, row),
        F::Imp(a, b) => !eval(a, idx, row) || eval(b, idx, row),
        F::Iff(a, b) => eval(a, idx, row) == eval(b, idx, row),
    }
}

/// `p FROM p1, ..., pn`.
pub(super) fn from_step(input: &StepInput<'_>) -> Option<Judgement> {
    let (goal, from) = input.claim.split_once(" FROM ")?;
    let goal = parse(goal.trim())?;
    let parts: Vec<&str> = from
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .collect();
    if parts.is_empty() || parts.len() > MAX_FROM {
        return Some(Judgement::Vote {
            vote: Vote::Invalid,
            reason: format!("FROM takes 1 to {MAX_FROM} premises, got {}", parts.len()),
        });
    }
    let premises: Vec<F> = parts.iter().map(|p| parse(p)).collect::<Option<_>>()?;
    let known = |p: &str| {
        let n = norm(p);
        norm(input.context).contains(&n) || input.premises.iter().any(|q| norm(q).contains(&n))
    };
    if let Some(p) = parts.iter().find(|p| !known(p)) {
        if input.context.trim().is_empty() {
            return Some(Judgement::Abstain(format!(
                "premise {p} is not among the premises, and the problem was not given"
            )));
        }
        return Some(Judgement::Vote {
            vote: Vote::Ungrounded,
            reason: format!("premise {p} is neither given nor derived earlier"),
        });
    }
    let mut idx = BTreeMap::new();
    atoms(&goal, &mut idx);
    for p in &premises {
        atoms(p, &mut idx);
    }
    if idx.len() > MAX_ATOMS {
        return Some(Judgement::Abstain(format!("more than {MAX_ATOMS} atoms")));
    }
    let rows = 1u32 << idx.len();
    let counterexample = (0..rows)
        .find(|&row| premises.iter().all(|p| eval(p, &idx, row)) && !eval(&goal, &idx, row));
    Some(match counterexample {
        None => Judgement::Vote {
            vote: Vote::Valid,
            reason: "the conclusion holds in every row where the premises hold".into(),
        },
        Some(row) => {
            let assignment: Vec<String> = idx
                .iter()
                .map(|(a, i)| format!("{a}={}", if row >> i & 1 == 1 { "T" } else { "F" }))
                .collect();
            Judgement::Vote {
                vote: Vote::Invalid,
                reason: format!("does not follow: counterexample {}", assignment.join(", ")),
            }
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const RULES: &str = "Rules: H3 → AZ; SG → C6; C6 → GM; VD → H3; G8 → VD; D8 → U8; U8 → DG; DG → G8. Fact: I have D8.";

    fn rule(claim: &str, premises: &[&str]) -> Option<Vote> {
        rule_step(&StepInput {
            claim,
            premises,
            context: RULES,
        })
        .and_then(|j| j.as_vote())
    }

    #[test]
    fn formulas_too_long_to_walk_are_refused_not_recursed_into() {
        // Each recursed once per symbol: signs, right-nested implications, a long chain.
        for deep in [
            "¬".repeat(100_000) + "P",
            "P → ".repeat(100_000) + "P",
            "P ∧ ".repeat(100_000) + "P",
        ] {
            assert_eq!(parse(&deep), None);
        }
        assert!(parse(&("¬".repeat(100) + "P")).is_some());
        assert!(parse(&("P → ".repeat(100) + "P")).is_some());
    }

    #[test]
    fn claimtrees_example() {
        assert_eq!(
            rule("I use rule (D8 → U8) to derive U8", &[]),
            Some(Vote::Valid)
        );
        assert_eq!(
            rule(
                "I use rule (VD → H3) to derive H3",
                &["I use rule (G8 → VD) to derive VD"]
            ),
            Some(Vote::Valid)
        );
        assert_eq!(
            rule(
                "I use rule (H3 → AZ) to derive AZ",
                &["I use rule (VD → H3) to derive H3"]
            ),
            Some(Vote::Valid)
        );
        // Claim 7 of the ARES example: the rule AZ → SG was never stated.
        assert_eq!(
            rule(
                "I use rule (AZ → SG) to derive SG",
                &["I use rule (H3 → AZ) to derive AZ"]
            ),
            Some(Vote::Ungrounded)
        );
        // Antecedent never derived.
        assert_eq!(
            rule("I use rule (SG → C6) to derive C6", &[]),
            Some(Vote::Ungrounded)
        );
        // Wrong consequent.
        assert_eq!(
            rule("I use rule (D8 → U8) to derive DG", &[]),
            Some(Vote::Invalid)
        );
    }

    fn from(claim: &str, context: &str) -> Option<Vote> {
        from_step(&StepInput {
            claim,
            premises: &[],
            context,
        })
        .and_then(|j| j.as_vote())
    }

    #[test]
    fn propositional_from() {
        let ctx = "Premises: p → q, p, q ∨ r, ¬r, (a ∧ b)";
        assert_eq!(from("q FROM p → q, p", ctx), Some(Vote::Valid));
        assert_eq!(from("q FROM q ∨ r, ¬r", ctx), Some(Vote::Valid));
        assert_eq!(from("a FROM (a ∧ b)", ctx), Some(Vote::Valid));
        assert_eq!(from("p FROM p → q", ctx), Some(Vote::Invalid));
        assert_eq!(from("r FROM q ∨ r", ctx), Some(Vote::Invalid));
        assert_eq!(from("q FROM s → q, s", ctx), Some(Vote::Ungrounded));
        assert_eq!(from("q FROM p, p, p, p, p, p", ctx), Some(Vote::Invalid));
        assert_eq!(from("q FROM p →", ctx), None);
    }
}
