//! The 24 inference rules of NDL, as the proof-checking prompt defines them: their names,
//! arities, which arguments must hold, and the conclusion each yields.
//!
//! Readings where the prompts leave room, decided once here: "complementary" is symmetric
//! (one formula is the syntactic negation of the other), as the checking prompt says. Every
//! rule builds negations literally, the way ProofGrid's checker (Athena) does: `~` is put in
//! front of each part as written, and a double negation stays until `dn` removes it. So `dm`
//! on `(~ ((~ P) & Q))` yields `((~ ~ P) | (~ Q))`, not `(P | (~ Q))`; `mt` on
//! `((~ C) ==> B)`, `(~ B)` yields `(~ ~ C)`, not `C`; `neg-cond` on `(~ (C ==> ~A))` yields
//! `(C & (~ ~A))`, as a worked example shows. (The prompts' own hand-written examples take
//! the other reading for `dm` and `mt`; Athena's labels on model-written proofs do not.) A
//! rule whose arguments do not have the form it needs, including a mismatch between
//! arguments, is a type error, except `dm` on a conjunction or disjunction that is not
//! negated: Athena's own De Morgan method rewrites those too, and whether ProofGrid's does is
//! not known, so that step gets no verdict.

use super::super::{
    formula::Formula,
    report::{Fault, Stop},
};

/// An NDL inference rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Rule {
    Claim,
    LeftAnd,
    RightAnd,
    Both,
    Mp,
    LeftEither,
    RightEither,
    Cases,
    Absurd,
    Dn,
    LeftIff,
    RightIff,
    Equiv,
    ExMiddle,
    Dm,
    Dsyl,
    NegCond,
    NegBicond,
    FromFalse,
    Mt,
    CondDef,
    BicondDef,
    FromComplements,
    ByContradiction,
}

/// Every rule, in the prompt's order.
pub(crate) const ALL_RULES: [Rule; 24] = [
    Rule::Claim,
    Rule::LeftAnd,
    Rule::RightAnd,
    Rule::Both,
    Rule::Mp,
    Rule::LeftEither,
    Rule::RightEither,
    Rule::Cases,
    Rule::Absurd,
    Rule::Dn,
    Rule::LeftIff,
    Rule::RightIff,
    Rule::Equiv,
    Rule::ExMiddle,
    Rule::Dm,
    Rule::Dsyl,
    Rule::NegCond,
    Rule::NegBicond,
    Rule::FromFalse,
    Rule::Mt,
    Rule::CondDef,
    Rule::BicondDef,
    Rule::FromComplements,
    Rule::ByContradiction,
];

fn ordinal(i: usize) -> &'static str {
    match i {
        0 => "first",
        1 => "second",
        2 => "third",
        _ => "later",
    }
}

impl Rule {
    pub(crate) fn from_name(name: &str) -> Option<Rule> {
        ALL_RULES.iter().copied().find(|r| r.name() == name)
    }

    pub(crate) fn name(self) -> &'static str {
        match self {
            Rule::Claim => "claim",
            Rule::LeftAnd => "left-and",
            Rule::RightAnd => "right-and",
            Rule::Both => "both",
            Rule::Mp => "mp",
            Rule::LeftEither => "left-either",
            Rule::RightEither => "right-either",
            Rule::Cases => "cases",
            Rule::Absurd => "absurd",
            Rule::Dn => "dn",
            Rule::LeftIff => "left-iff",
            Rule::RightIff => "right-iff",
            Rule::Equiv => "equiv",
            Rule::ExMiddle => "ex-middle",
            Rule::Dm => "dm",
            Rule::Dsyl => "dsyl",
            Rule::NegCond => "neg-cond",
            Rule::NegBicond => "neg-bicond",
            Rule::FromFalse => "from-false",
            Rule::Mt => "mt",
            Rule::CondDef => "cond-def",
            Rule::BicondDef => "bicond-def'",
            Rule::FromComplements => "from-complements",
            Rule::ByContradiction => "by-contradiction",
        }
    }

    pub(crate) fn arity(self) -> usize {
        match self {
            Rule::Claim
            | Rule::LeftAnd
            | Rule::RightAnd
            | Rule::Dn
            | Rule::LeftIff
            | Rule::RightIff
            | Rule::ExMiddle
            | Rule::Dm
            | Rule::NegCond
            | Rule::NegBicond
            | Rule::FromFalse
            | Rule::CondDef
            | Rule::BicondDef => 1,
            Rule::Both
            | Rule::Mp
            | Rule::LeftEither
            | Rule::RightEither
            | Rule::Absurd
            | Rule::Equiv
            | Rule::Dsyl
            | Rule::Mt
            | Rule::ByContradiction => 2,
            Rule::Cases | Rule::FromComplements => 3,
        }
    }

    /// Whether argument `i` (0-based) must hold when the rule is applied.
    pub(crate) fn must_hold(self, i: usize) -> bool {
        match self {
            Rule::ExMiddle | Rule::FromFalse => false,
            Rule::LeftEither => i == 0,
            Rule::RightEither | Rule::ByContradiction => i == 1,
            Rule::FromComplements => i >= 1,
            _ => true,
        }
    }

    fn form(self, public: &str, detail: String) -> Stop {
        Stop::Fault(Fault::typ(format!("{}: {public}", self.name()), detail))
    }

    /// The conclusion of the rule on `args` (already checked for arity and holding), or the
    /// type error. `false_holds` answers whether `false` is in the assumption base.
    pub(crate) fn apply(self, args: &[Formula], false_holds: bool) -> Result<Formula, Stop> {
        let arg = |i: usize| -> Result<&Formula, Stop> {
            args.get(i).ok_or_else(|| {
                Stop::Fault(Fault::typ(
                    format!("{}: wrong number of arguments", self.name()),
                    format!("{} is missing its {} argument", self.name(), ordinal(i)),
                ))
            })
        };
        use Formula as F;
        match self {
            Rule::Claim => Ok(arg(0)?.clone()),
            Rule::LeftAnd | Rule::RightAnd => match arg(0)? {
                F::And(p, q) => Ok(if self == Rule::LeftAnd { (**p).clone() } else { (**q).clone() }),
                other => Err(self.form(
                    "the argument is not a conjunction",
                    format!("{other} is not a conjunction"),
                )),
            },
            Rule::Both => Ok(F::and(arg(0)?.clone(), arg(1)?.clone())),
            Rule::Mp => {
                let (c, a) = (arg(0)?, arg(1)?);
                let F::Implies(p, q) = c else {
                    return Err(self.form(
                        "the first argument is not a conditional",
                        format!("{c} is not a conditional"),
                    ));
                };
                if **p != *a {
                    return Err(self.form(
                        "the second argument is not the antecedent of the first",
                        format!("{a} is not the antecedent of {c}"),
                    ));
                }
                Ok((**q).clone())
            }
            Rule::LeftEither | Rule::RightEither => Ok(F::or(arg(0)?.clone(), arg(1)?.clone())),
            Rule::Cases => {
                let (d, c1, c2) = (arg(0)?, arg(1)?, arg(2)?);
                let F::Or(p, q) = d else {
                    return Err(self.form(
                        "the first argument is not a disjunction",
                        format!("{d} is not a disjunction"),
                    ));
                };
                let F::Implies(a1, r1) = c1 else {
                    return Err(self.form(
                        "the second argument is not a conditional",
                        format!("{c1} is not a conditional"),
                    ));
                };
                let F::Implies(a2, r2) = c2 else {
                    return Err(self.form(
                        "the third argument is not a conditional",
                        format!("{c2} is not a conditional"),
                    ));
                };
                if a1 != p {
                    return Err(self.form(
                        "the antecedent of the second argument is not the left disjunct of the first",
                        format!("{a1} is not the left disjunct of {d}"),
                    ));
                }
                if a2 != q {
                    return Err(self.form(
                        "the antecedent of the third argument is not the right disjunct of the first",
                        format!("{a2} is not the right disjunct of {d}"),
                    ));
                }
                if r1 != r2 {
                    return Err(self.form(
                        "the second and third arguments have different consequents",
                        format!("{c1} and {c2} conclude different formulas"),
                    ));
                }
                Ok((**r1).clone())
            }
            Rule::Absurd => {
                let (p, q) = (arg(0)?, arg(1)?);
                if p.complements(q) {
                    Ok(F::False)
                } else {
                    Err(self.form(
                        "the two arguments are not complementary",
                        format!("{p} and {q} are not complementary"),
                    ))
                }
            }
            Rule::Dn => match arg(0)? {
                F::Not(inner) => match &**inner {
                    F::Not(p) => Ok((**p).clone()),
                    _ => Err(self.form(
                        "the argument is not a double negation",
                        format!("{} is a single negation", arg(0)?),
                    )),
                },
                other => Err(self.form(
                    "the argument is not a double negation",
                    format!("{other} is not a double negation"),
                )),
            },
            Rule::LeftIff | Rule::RightIff => match arg(0)? {
                F::Iff(p, q) => Ok(if self == Rule::LeftIff {
                    F::implies((**p).clone(), (**q).clone())
                } else {
                    F::implies((**q).clone(), (**p).clone())
                }),
                other => Err(self.form(
                    "the argument is not a biconditional",
                    format!("{other} is not a biconditional"),
                )),
            },
            Rule::Equiv => {
                let (c1, c2) = (arg(0)?, arg(1)?);
                let F::Implies(p, q) = c1 else {
                    return Err(self.form(
                        "the first argument is not a conditional",
                        format!("{c1} is not a conditional"),
                    ));
                };
                let F::Implies(q2, p2) = c2 else {
                    return Err(self.form(
                        "the second argument is not a conditional",
                        format!("{c2} is not a conditional"),
                    ));
                };
                if q != q2 || p != p2 {
                    return Err(self.form(
                        "the second argument is not the converse of the first",
                        format!("{c2} is not the converse of {c1}"),
                    ));
                }
                Ok(F::iff((**p).clone(), (**q).clone()))
            }
            Rule::ExMiddle => {
                let p = arg(0)?;
                Ok(F::or(p.clone(), F::negate(p.clone())))
            }
            Rule::Dm => match arg(0)? {
                F::Not(inner) => match &**inner {
                    F::And(p, q) => Ok(F::or(
                        F::negate((**p).clone()),
                        F::negate((**q).clone()),
                    )),
                    F::Or(p, q) => Ok(F::and(
                        F::negate((**p).clone()),
                        F::negate((**q).clone()),
                    )),
                    _ => Err(self.form(
                        "the argument is not a negated conjunction or disjunction",
                        format!("{} is not of the form (~ (p & q)) or (~ (p | q))", arg(0)?),
                    )),
                },
                // Athena's own De Morgan method also rewrites a plain conjunction or
                // disjunction; whether ProofGrid's dm does is not known
                F::And(..) | F::Or(..) => Err(Stop::Undecided(
                    "dm applied to a conjunction or disjunction that is not negated (whether the checker accepts it is not known)".into(),
                )),
                other => Err(self.form(
                    "the argument is not a negated conjunction or disjunction",
                    format!("{other} is not of the form (~ (p & q)) or (~ (p | q))"),
                )),
            },
            Rule::Dsyl => {
                let (d, r) = (arg(0)?, arg(1)?);
                let F::Or(p, q) = d else {
                    return Err(self.form(
                        "the first argument is not a disjunction",
                        format!("{d} is not a disjunction"),
                    ));
                };
                if r.complements(p) {
                    Ok((**q).clone())
                } else if r.complements(q) {
                    Ok((**p).clone())
                } else {
                    Err(self.form(
                        "the second argument complements neither disjunct of the first",
                        format!("{r} complements neither disjunct of {d}"),
                    ))
                }
            }
            Rule::NegCond => match arg(0)? {
                F::Not(inner) if matches!(**inner, F::Implies(..)) => {
                    let F::Implies(p, q) = &**inner else {
                        return Err(Stop::Undecided("internal".into()));
                    };
                    Ok(F::and((**p).clone(), F::negate((**q).clone())))
                }
                F::And(p, nq) if matches!(**nq, F::Not(_)) => {
                    let F::Not(q) = &**nq else {
                        return Err(Stop::Undecided("internal".into()));
                    };
                    Ok(F::negate(F::implies((**p).clone(), (**q).clone())))
                }
                other => Err(self.form(
                    "the argument is neither a negated conditional nor a conjunction with a negated right side",
                    format!("{other} is neither of the form (~ (p ==> q)) nor (p & (~ q))"),
                )),
            },
            Rule::NegBicond => {
                let a = arg(0)?;
                if let F::Not(inner) = a
                    && let F::Iff(p, q) = &**inner
                {
                    return Ok(F::or(
                        F::and((**p).clone(), F::negate((**q).clone())),
                        F::and(F::negate((**p).clone()), (**q).clone()),
                    ));
                }
                if let F::Or(l, r) = a
                    && let (F::And(p, nq), F::And(np, q2)) = (&**l, &**r)
                    && **nq == F::negate((**q2).clone())
                    && **np == F::negate((**p).clone())
                {
                    return Ok(F::negate(F::iff((**p).clone(), (**q2).clone())));
                }
                Err(self.form(
                    "the argument is neither a negated biconditional nor its disjunctive form",
                    format!("{a} is neither of the form (~ (p <==> q)) nor ((p & (~ q)) | ((~ p) & q))"),
                ))
            }
            Rule::FromFalse => {
                if false_holds {
                    Ok(arg(0)?.clone())
                } else {
                    Err(Stop::Fault(Fault::logic(
                        "from-false: false does not hold",
                        "from-false needs the constant false in the assumption base",
                    )))
                }
            }
            Rule::Mt => {
                let (c, r) = (arg(0)?, arg(1)?);
                let F::Implies(p, q) = c else {
                    return Err(self.form(
                        "the first argument is not a conditional",
                        format!("{c} is not a conditional"),
                    ));
                };
                if !r.complements(q) {
                    return Err(self.form(
                        "the second argument does not complement the consequent of the first",
                        format!("{r} does not complement the consequent of {c}"),
                    ));
                }
                Ok(F::negate((**p).clone()))
            }
            Rule::CondDef => match arg(0)? {
                F::Implies(p, q) => Ok(F::or(F::negate((**p).clone()), (**q).clone())),
                F::Or(np, q) if matches!(**np, F::Not(_)) => {
                    let F::Not(p) = &**np else {
                        return Err(Stop::Undecided("internal".into()));
                    };
                    Ok(F::implies((**p).clone(), (**q).clone()))
                }
                other => Err(self.form(
                    "the argument is neither a conditional nor a disjunction with a negated left side",
                    format!("{other} is neither of the form (p ==> q) nor ((~ p) | q)"),
                )),
            },
            Rule::BicondDef => {
                let a = arg(0)?;
                if let F::Iff(p, q) = a {
                    return Ok(F::or(
                        F::and((**p).clone(), (**q).clone()),
                        F::and(F::negate((**p).clone()), F::negate((**q).clone())),
                    ));
                }
                if let F::Or(l, r) = a
                    && let (F::And(p, q), F::And(np, nq)) = (&**l, &**r)
                    && **np == F::negate((**p).clone())
                    && **nq == F::negate((**q).clone())
                {
                    return Ok(F::iff((**p).clone(), (**q).clone()));
                }
                Err(self.form(
                    "the argument is neither a biconditional nor its disjunctive form",
                    format!("{a} is neither of the form (p <==> q) nor ((p & q) | ((~ p) & (~ q)))"),
                ))
            }
            Rule::FromComplements => {
                let (p, q, r) = (arg(0)?, arg(1)?, arg(2)?);
                if q.complements(r) {
                    Ok(p.clone())
                } else {
                    Err(self.form(
                        "the second and third arguments are not complementary",
                        format!("{q} and {r} are not complementary"),
                    ))
                }
            }
            Rule::ByContradiction => {
                let (p, c) = (arg(0)?, arg(1)?);
                match c {
                    F::Implies(q, f) if **f == F::False && q.complements(p) => Ok(p.clone()),
                    F::Implies(_, f) if **f == F::False => Err(self.form(
                        "the antecedent of the second argument does not complement the first",
                        format!("the antecedent of {c} does not complement {p}"),
                    )),
                    _ => Err(self.form(
                        "the second argument is not a conditional with consequent false",
                        format!("{c} is not of the form (q ==> false)"),
                    )),
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{super::super::formula::parse_formula, *};

    fn f(s: &str) -> Formula {
        parse_formula(s).unwrap()
    }

    fn ok(rule: &str, args: &[&str]) -> String {
        let r = Rule::from_name(rule).unwrap();
        let args: Vec<Formula> = args.iter().map(|a| f(a)).collect();
        r.apply(&args, true).unwrap().to_string()
    }

    fn type_err(rule: &str, args: &[&str]) -> bool {
        let r = Rule::from_name(rule).unwrap();
        let args: Vec<Formula> = args.iter().map(|a| f(a)).collect();
        matches!(
            r.apply(&args, true),
            Err(Stop::Fault(Fault {
                kind: super::super::super::report::ErrorKind::Type,
                ..
            }))
        )
    }

    #[test]
    fn every_rule_as_the_prompt_defines_it() {
        assert_eq!(ok("claim", &["A"]), "A");
        assert_eq!(ok("left-and", &["(A & B)"]), "A");
        assert_eq!(ok("right-and", &["(A & B)"]), "B");
        assert_eq!(ok("both", &["A", "(~ B)"]), "(A & (~ B))");
        assert_eq!(ok("mp", &["(A ==> C)", "A"]), "C");
        assert_eq!(ok("left-either", &["A", "B"]), "(A | B)");
        assert_eq!(ok("right-either", &["A", "B"]), "(A | B)");
        assert_eq!(ok("cases", &["(A | B)", "(A ==> C)", "(B ==> C)"]), "C");
        assert_eq!(ok("absurd", &["(~ A)", "A"]), "false");
        assert_eq!(ok("dn", &["(~ ~ A)"]), "A");
        assert_eq!(ok("left-iff", &["(A <==> B)"]), "(A ==> B)");
        assert_eq!(ok("right-iff", &["(A <==> B)"]), "(B ==> A)");
        assert_eq!(ok("equiv", &["(A ==> B)", "(B ==> A)"]), "(A <==> B)");
        assert_eq!(ok("ex-middle", &["A"]), "(A | (~ A))");
        assert_eq!(ok("dm", &["(~ (A & B))"]), "((~ A) | (~ B))");
        assert_eq!(ok("dm", &["(~ (B & ~A))"]), "((~ B) | (~ (~ A)))");
        assert_eq!(ok("dm", &["(~ (~A | B))"]), "((~ (~ A)) & (~ B))");
        assert_eq!(ok("dm", &["(~ (A | B))"]), "((~ A) & (~ B))");
        assert_eq!(ok("dsyl", &["(A | B)", "(~ B)"]), "A");
        assert_eq!(ok("dsyl", &["(~A | C)", "A"]), "C");
        assert_eq!(ok("neg-cond", &["(~ (A ==> B))"]), "(A & (~ B))");
        assert_eq!(ok("neg-cond", &["(A & ~ B)"]), "(~ (A ==> B))");
        assert_eq!(
            ok("neg-bicond", &["(~ (A <==> B))"]),
            "((A & (~ B)) | ((~ A) & B))"
        );
        assert_eq!(
            ok("neg-bicond", &["((A & ~B) | (~A & B))"]),
            "(~ (A <==> B))"
        );
        assert_eq!(ok("from-false", &["(A & B)"]), "(A & B)");
        assert_eq!(ok("mt", &["(A ==> B)", "(~ B)"]), "(~ A)");
        assert_eq!(ok("mt", &["(~C ==> B)", "(~ B)"]), "(~ (~ C))");
        assert_eq!(ok("mt", &["(A ==> ~B)", "B"]), "(~ A)");
        assert_eq!(ok("cond-def", &["(A ==> B)"]), "((~ A) | B)");
        assert_eq!(ok("cond-def", &["(~A | B)"]), "(A ==> B)");
        assert_eq!(
            ok("bicond-def'", &["(A <==> B)"]),
            "((A & B) | ((~ A) & (~ B)))"
        );
        assert_eq!(ok("bicond-def'", &["((A & B) | (~A & ~B))"]), "(A <==> B)");
        assert_eq!(ok("from-complements", &["C", "A", "(~ A)"]), "C");
        assert_eq!(ok("by-contradiction", &["A", "(~A ==> false)"]), "A");
        assert_eq!(ok("by-contradiction", &["(~ A)", "(A ==> false)"]), "(~ A)");
    }

    #[test]
    fn wrong_forms_are_type_errors() {
        assert!(type_err("dn", &["(~ ((B ==> C) ==> A))"]));
        assert!(type_err("left-and", &["(A | B)"]));
        assert!(type_err("mp", &["(A ==> B)", "B"]));
        assert!(type_err("cases", &["(A | B)", "(A ==> C)", "(B ==> D)"]));
        assert!(type_err("absurd", &["A", "B"]));
        assert!(type_err("equiv", &["(A ==> B)", "(A ==> B)"]));
        assert!(type_err("dsyl", &["(A | B)", "C"]));
        assert!(type_err("mt", &["(A ==> B)", "B"]));
        assert!(type_err("by-contradiction", &["A", "(A ==> false)"]));
        assert!(type_err("neg-cond", &["(A & B)"]));
        assert!(type_err("dm", &["(~ (A ==> B))"]));
        assert!(type_err("dm", &["A"]));
    }

    #[test]
    fn dm_on_a_plain_conjunction_or_disjunction_is_undecided() {
        for a in ["(A & B)", "(A | ~B)"] {
            let r = Rule::Dm.apply(&[f(a)], false);
            assert!(matches!(r, Err(Stop::Undecided(_))), "{a}: {r:?}");
        }
    }

    #[test]
    fn from_false_needs_false() {
        let r = Rule::FromFalse;
        assert!(matches!(
            r.apply(&[f("A")], false),
            Err(Stop::Fault(Fault {
                kind: super::super::super::report::ErrorKind::Logic,
                ..
            }))
        ));
    }
}
