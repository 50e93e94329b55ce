//! The meaning of one NDL / NDL_f step, shared by the whole-proof checker and the per-step
//! checker of an auditor seat, so the two cannot disagree on a rule.
//!
//! A step is judged against a [`Scope`]: what names mean, which formulas hold, which
//! identifiers are atoms. The whole-proof checker's scope is the full assumption base; a
//! seat's scope is built from only what its step document shows. Checks run in one fixed
//! order, so both report the same first error: names in the stated conclusion, the rule,
//! names in the arguments, the argument count, arguments that must hold, their form, and
//! finally the stated conclusion.

use super::{
    super::{
        formula::{Formula, PAREN_MARK},
        report::{ErrorKind, Fault, Stop},
        sat::{Entailment, entails},
    },
    rules::Rule,
    syntax::{Arg, Element, HypKind, StepBody, StepNode},
};
use crate::proof::limits::MAX_FROM_JUSTIFIERS;

/// The two natural-deduction dialects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Dialect {
    Ndl,
    NdlF,
}

/// What a step is judged against.
pub(crate) trait Scope {
    /// The formula a name stands for here, if the name is bound.
    fn lookup(&self, name: &str) -> Option<&Formula>;
    /// Whether `f` holds here (premise, active hypothesis, or earlier result in scope).
    fn holds(&self, f: &Formula) -> bool;
    /// Whether an unbound identifier is an atom (a problem atom, or spelled like one).
    fn declared_atom(&self, word: &str) -> bool;
}

/// Why a `suppose-absurd` in an NDL_f proof gets no verdict: Athena, which evaluates NDL_f
/// proofs, has the construct, and whether ProofGrid's checker refuses it there is not known.
pub(crate) const SUPPOSE_ABSURD_IN_NDL_F: &str =
    "suppose-absurd in an NDL_f proof (whether the checker accepts it there is not known)";

/// Whether an identifier is spelled like a propositional atom: an upper-case letter, then
/// letters, digits and underscores (`A`, `A1_2`, `E3_59`).
pub(crate) fn atom_like(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_uppercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn limits(f: Formula) -> Result<Formula, Stop> {
    if f.within_limits() {
        Ok(f)
    } else {
        Err(Stop::Undecided(
            "a formula grew past the size or depth limit".into(),
        ))
    }
}

/// Replaces every bound name in `f` by its formula; an identifier that is neither a name
/// nor an atom is a syntax error.
pub(crate) fn resolve(f: &Formula, scope: &dyn Scope, place: &str) -> Result<Formula, Stop> {
    fn go(f: &Formula, scope: &dyn Scope, place: &str) -> Result<Formula, Stop> {
        Ok(match f {
            Formula::Atom(marked) if marked.starts_with(PAREN_MARK) => {
                let w = marked.trim_start_matches(PAREN_MARK);
                match scope.lookup(w) {
                    Some(bound @ (Formula::Atom(_) | Formula::True | Formula::False)) => {
                        bound.clone()
                    }
                    Some(bound) => {
                        return Err(Fault::syntax(
                            format!("a name in parentheses in {place} is read as a procedure application"),
                            format!(
                                "({w}) applies {bound}, the formula {w} names, to no arguments; the checker refuses it (the leftmost expression of an application failed to produce a procedure)"
                            ),
                        )
                        .into());
                    }
                    None if scope.declared_atom(w) => Formula::atom(w),
                    None => {
                        return Err(Fault::syntax(
                            format!("undefined identifier in {place}"),
                            format!("{w} is neither a name in scope nor an atom"),
                        )
                        .into());
                    }
                }
            }
            Formula::Atom(w) => {
                if let Some(bound) = scope.lookup(w) {
                    bound.clone()
                } else if scope.declared_atom(w) {
                    f.clone()
                } else {
                    return Err(Fault::syntax(
                        format!("undefined identifier in {place}"),
                        format!("{w} is neither a name in scope nor an atom"),
                    )
                    .into());
                }
            }
            Formula::True | Formula::False => f.clone(),
            Formula::Not(p) => Formula::negate(go(p, scope, place)?),
            Formula::And(p, q) => Formula::and(go(p, scope, place)?, go(q, scope, place)?),
            Formula::Or(p, q) => Formula::or(go(p, scope, place)?, go(q, scope, place)?),
            Formula::Implies(p, q) => Formula::implies(go(p, scope, place)?, go(q, scope, place)?),
            Formula::Iff(p, q) => Formula::iff(go(p, scope, place)?, go(q, scope, place)?),
        })
    }
    if let Formula::Atom(w) = f
        && let Some(bound) = scope.lookup(w)
    {
        return Ok(bound.clone());
    }
    limits(go(f, scope, place)?)
}

fn ordinal_place(i: usize) -> String {
    format!("argument {}", i.saturating_add(1))
}

fn resolve_args(
    args: &[Arg],
    subs: &[Formula],
    scope: &dyn Scope,
    who: &str,
) -> Result<Vec<Formula>, Stop> {
    let mut out = Vec::with_capacity(args.len());
    let mut subs = subs.iter();
    for (i, a) in args.iter().enumerate() {
        match a {
            Arg::Application => {
                return Err(Fault::syntax(
                    format!("{who}: {} is a rule application; only formulas and deductions may stand as arguments", ordinal_place(i)),
                    format!("{who} is given a rule application as its {}; the checker's grammar has no rule application there", ordinal_place(i)),
                )
                .into());
            }
            Arg::Subproof(_) => match subs.next() {
                Some(c) => out.push(c.clone()),
                None => {
                    return Err(Stop::Undecided(format!(
                        "{who}: the conclusion of the deduction given as {} is not known here",
                        ordinal_place(i)
                    )));
                }
            },
            Arg::Formula(f) => {
                let place = format!("{who} {}", ordinal_place(i));
                out.push(resolve(f, scope, &place)?);
            }
        }
    }
    Ok(out)
}

/// The deductions given as arguments of a step, in order.
pub(crate) fn subproofs(step: &StepNode) -> Vec<&Element> {
    let args = match &step.body {
        StepBody::Rule { args, .. } => args,
        StepBody::From { justifiers } => justifiers,
    };
    args.iter()
        .filter_map(|a| match a {
            Arg::Subproof(e) => Some(&**e),
            _ => None,
        })
        .collect()
}

/// Judges a primitive step and returns its conclusion. `subs` are the conclusions of the
/// deductions the step is given as arguments, in order (see [`subproofs`]): each stands for
/// its argument and holds for this step only, as when Athena adds a deduction argument's
/// conclusion to the assumption base of the rule it is passed to.
pub(crate) fn check_primitive(
    step: &StepNode,
    dialect: Dialect,
    scope: &dyn Scope,
    subs: &[Formula],
) -> Result<Formula, Stop> {
    let holds = |f: &Formula| scope.holds(f) || subs.contains(f);
    let claimed = match &step.claimed {
        Some((f, _)) => Some(resolve(f, scope, "the stated conclusion")?),
        None => None,
    };
    match &step.body {
        StepBody::Rule { rule, args, .. } => {
            if dialect == Dialect::NdlF {
                // Athena evaluates NDL_f proofs and knows the rules: whether ProofGrid's
                // checker refuses a rule application in NDL_f is not known, so no verdict
                return Err(Stop::Undecided(format!(
                    "the rule application of {rule} in an NDL_f proof (whether the checker accepts it there is not known)"
                )));
            }
            let Some(r) = Rule::from_name(rule) else {
                return Err(Fault::syntax(
                    "unknown inference rule",
                    format!("{rule} is not one of the 24 NDL rules"),
                )
                .into());
            };
            let args = resolve_args(args, subs, scope, r.name())?;
            if args.len() != r.arity() {
                return Err(Fault::typ(
                    format!(
                        "{}: wrong number of arguments (expects {}, given {})",
                        r.name(),
                        r.arity(),
                        args.len()
                    ),
                    format!(
                        "{} takes {} arguments but is applied to {}",
                        r.name(),
                        r.arity(),
                        args.len()
                    ),
                )
                .into());
            }
            for (i, a) in args.iter().enumerate() {
                if r.must_hold(i) && !holds(a) {
                    return Err(Fault::logic(
                        format!("{}: {} does not hold", r.name(), ordinal_place(i)),
                        format!(
                            "{} is applied to {a}, which is not a premise, an active assumption or an earlier result in scope",
                            r.name()
                        ),
                    )
                    .into());
                }
            }
            let conclusion = limits(r.apply(&args, holds(&Formula::False))?)?;
            if let Some(p) = claimed
                && p != conclusion
            {
                return Err(Fault::logic(
                    format!(
                        "{}: the conclusion stated after BY is not what the rule yields",
                        r.name()
                    ),
                    format!("{} yields {conclusion}, not {p}", r.name()),
                )
                .into());
            }
            Ok(conclusion)
        }
        StepBody::From { justifiers } => {
            if dialect == Dialect::Ndl {
                // `p from ...` is Athena syntax in either dialect; whether ProofGrid's
                // checker refuses it in NDL is not known, so no verdict
                return Err(Stop::Undecided(
                    "a from step in an NDL proof (whether the checker accepts it there is not known)"
                        .into(),
                ));
            }
            let Some(p) = claimed else {
                return Err(Fault::syntax(
                    "a from step needs a conclusion",
                    "no conclusion before from",
                )
                .into());
            };
            let js = resolve_args(justifiers, subs, scope, "from")?;
            if js.len() > MAX_FROM_JUSTIFIERS {
                return Err(Fault::typ(
                    "from: more than 5 justifiers",
                    format!(
                        "the from step lists {} justifiers; at most 5 are allowed",
                        js.len()
                    ),
                )
                .into());
            }
            for (i, j) in js.iter().enumerate() {
                if !holds(j) {
                    return Err(Fault::logic(
                        format!("from: justifier {} does not hold", i.saturating_add(1)),
                        format!("{j} is not a premise, an active assumption or an earlier result in scope"),
                    )
                    .into());
                }
            }
            let refs: Vec<&Formula> = js.iter().collect();
            match entails(&refs, &p) {
                Entailment::Valid => Ok(p),
                Entailment::Countermodel(model) => {
                    let shown: Vec<String> =
                        model.iter().map(|(a, v)| format!("{a}: {v}")).collect();
                    let listed: Vec<String> = js.iter().map(ToString::to_string).collect();
                    Err(Fault::logic(
                        "from: the conclusion does not follow from the justifiers",
                        format!(
                            "{p} does not follow from {}. Counterexample: {{{}}}",
                            if listed.is_empty() {
                                "nothing".to_string()
                            } else {
                                listed.join(", ")
                            },
                            shown.join(", ")
                        ),
                    )
                    .into())
                }
                Entailment::Unknown => Err(Stop::Undecided(
                    "the SAT call for a from step exceeded its conflict budget".into(),
                )),
            }
        }
    }
}

/// Judges a definition `I := p` and returns the formula it names.
pub(crate) fn check_define(formula: &Formula, scope: &dyn Scope) -> Result<Formula, Stop> {
    resolve(formula, scope, "the defined formula")
}

/// Judges a hypothesis and returns it.
pub(crate) fn check_hypothesis(hyp: &Formula, scope: &dyn Scope) -> Result<Formula, Stop> {
    resolve(hyp, scope, "the hypothesis")
}

/// The conclusion of a closed `assume` / `suppose-absurd` whose body concluded `body`.
pub(crate) fn close(kind: HypKind, hyp: &Formula, body: &Formula) -> Result<Formula, Stop> {
    match kind {
        HypKind::Assume => limits(Formula::implies(hyp.clone(), body.clone())),
        HypKind::SupposeAbsurd => {
            if *body == Formula::False {
                limits(Formula::negate(hyp.clone()))
            } else {
                Err(Fault::new(
                    ErrorKind::Logic,
                    "suppose-absurd: the body does not derive false",
                    format!("the body of suppose-absurd {hyp} concludes {body}, not false"),
                )
                .into())
            }
        }
    }
}
