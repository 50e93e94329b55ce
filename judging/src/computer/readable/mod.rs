//! What the checkers can read: the only questions the decomposer asks of the Computer
//! tier. It routes a segment by them ([`readable`], [`reads_answer`], [`reads_alike`] and
//! the logic readers), cuts a text into the step units a checker judges one by one
//! ([`steps_of`], [`lines_of`]) and links each step to the earlier ones it rests on
//! ([`Links`]), the way a judge of a group of steps cuts and links it
//! ([`check_claim`](super::check_claim)). Every answer here is a reading (a yes or no, a
//! name, a span), never a vote.

mod links;
mod steps;

use std::collections::BTreeSet;

use trust_protocol::{Hash, Vote};

pub use self::{
    links::Links,
    steps::{Unit, cut, lines_of, paragraphs, steps_of, units_of},
};
use super::{
    Judgement, MAX_CLAIM_CHARS, answer, check_segment, expr::Expr, is_definition, logic, read, show,
};
pub use super::{answer::is_formal, claim::MAX_GROUP_STEPS, logic::RuleUse};

/// Whether the checker can read `text`: a calculation or equation it parses under at
/// least one reading, a rule application, a `p FROM p1, ..., pn` step, or a definition
/// (`Let x be ...`, `The denominator is 3x − 7`). The decomposer routes a step to the
/// Computer tier only then.
pub fn readable(text: &str) -> bool {
    let t = text.trim();
    if t.is_empty() || t.chars().count() > MAX_CLAIM_CHARS {
        return false;
    }
    if logic::reads_truth(t)
        || logic::reads_rule(t)
        || logic::fact_claim(t).is_some()
        || logic::reads_from(t)
        || is_definition(t)
        || names_expression(t)
    {
        return true;
    }
    let (cleaned, notes) = read::clean(t);
    let none = BTreeSet::new();
    notes.iter().chain(read::clauses(&cleaned).iter()).any(|c| {
        read::readings(c, &none)
            .iter()
            .any(|r| r.as_ref().is_some_and(|chains| !chains.is_empty()))
    })
}

/// `The denominator is 3x − 7`: a quantity named in words and given as an expression in
/// a name.
fn names_expression(text: &str) -> bool {
    let Some((_, rhs)) = text.rsplit_once(" is ") else {
        return false;
    };
    let rhs = rhs.trim().trim_end_matches(['.', ',', ';']);
    let Ok(e) = Expr::parse(&read::clean(rhs).0) else {
        return false;
    };
    let mut names = BTreeSet::new();
    e.vars(&mut names);
    !names.is_empty() && !matches!(e, Expr::Var(_) | Expr::Num(..))
}

/// Whether the checkers read `answer` as the final answer to a formal problem
/// ([`is_formal`]), and so judge it against `problem` itself.
pub fn reads_answer(problem: &str, answer: &str) -> bool {
    answer::check_answer(problem, answer).is_some()
}

/// Whether the bare calculation `span` of `text` is judged as the whole text is, on the
/// problem alone: never wrong where the whole is not.
pub fn reads_alike(span: &str, text: &str, problem: &str) -> bool {
    let givens = [problem.to_string()];
    let seed = Hash::ZERO;
    let failure = |j: &Judgement| matches!(j.as_vote(), Some(Vote::Invalid | Vote::Ungrounded));
    let part = check_segment(span, &[], &givens, &seed);
    if !failure(&part) {
        return true;
    }
    let whole = check_segment(text, &[], &givens, &seed);
    failure(&whole) && whole.as_vote() == part.as_vote()
}

/// Reads a rule application (`I use rule (A → B) to derive B`), for linking it to the
/// step that derived its antecedent.
pub fn rule_use(text: &str) -> Option<RuleUse> {
    logic::rule_use(text)
}

/// The formula a truth-table evaluation step evaluates (written uniformly) and its
/// atoms: `(P ∨ Q)` and `[P, Q]` for `Since P is false, Q is true, (P ∨ Q) is true.`
pub fn truth_formula(text: &str) -> Option<(String, Vec<String>)> {
    logic::truth_formula(text)
}

/// Whether the text is a propositional `p FROM p1, ..., pn` step.
pub fn reads_from(text: &str) -> bool {
    logic::reads_from(text)
}

/// The atom a step claims is established (`F is now derived.`).
pub fn fact_claim(text: &str) -> Option<String> {
    logic::fact_claim(text)
}

/// Short names a text uses as unknowns (`x` in `3x + 2`, not in `3 x 4`).
pub fn unknowns(text: &str) -> BTreeSet<String> {
    read::unknowns(text)
}

/// Numbers a text states in words (`twice` → `2`, `a dozen` → `12`, `half` → `1/2` and
/// `2`), written as the decomposer writes numbers.
pub fn number_words(text: &str) -> Vec<String> {
    read::word_values(text).into_iter().map(show).collect()
}
