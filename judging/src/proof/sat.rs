//! Propositional entailment by SAT: `p1, ..., pn |= p` iff `p1 & ... & pn & ~p` is
//! unsatisfiable.
//!
//! Formulas are put in clause form by the Tseitin encoding (one fresh variable per
//! connective, so the clause set grows linearly with the formulas; no truth table, no atom
//! limit) and handed to `batsat`, a MiniSat descendant written in Rust. The solver is
//! deterministic (fixed seed, no random decisions), so the same question gets the same
//! counterexample on every node. Every call has a conflict budget; past it the answer is
//! [`Entailment::Unknown`].

use std::collections::HashMap;

use batsat::{Callbacks, Lit, SolverInterface, SolverOpts, Var, lbool};

use super::{formula::Formula, limits::SAT_CONFLICT_BUDGET};

/// The answer to an entailment question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Entailment {
    /// The conclusion holds in every model of the premises.
    Valid,
    /// An assignment of the atoms that satisfies every premise and falsifies the conclusion.
    Countermodel(Vec<(String, bool)>),
    /// The conflict budget ran out.
    Unknown,
}

/// Counts conflicts (every learnt clause is one) and asks the solver to stop past a budget.
struct Budget {
    conflicts: u64,
    limit: u64,
}

impl Callbacks for Budget {
    fn on_new_clause(&mut self, _c: &[Lit], src: batsat::ClauseKind) {
        if matches!(src, batsat::ClauseKind::Learnt) {
            self.conflicts = self.conflicts.saturating_add(1);
        }
    }

    fn stop(&self) -> bool {
        self.conflicts >= self.limit
    }
}

struct Encoder<S: SolverInterface> {
    solver: S,
    atoms: HashMap<String, Var>,
    order: Vec<String>,
    truth: Option<Lit>,
    clause: Vec<Lit>,
}

impl<S: SolverInterface> Encoder<S> {
    fn add(&mut self, lits: &[Lit]) {
        self.clause.clear();
        self.clause.extend_from_slice(lits);
        // a `false` return only means the clause set is already unsatisfiable; solving
        // will report it
        let _ = self.solver.add_clause_reuse(&mut self.clause);
    }

    fn truth(&mut self) -> Lit {
        if let Some(t) = self.truth {
            return t;
        }
        let t = Lit::new(self.solver.new_var_default(), true);
        self.add(&[t]);
        self.truth = Some(t);
        t
    }

    fn fresh(&mut self) -> Lit {
        Lit::new(self.solver.new_var_default(), true)
    }

    /// The literal equivalent to `f` (recursion is bounded by the formula depth limit).
    fn lit(&mut self, f: &Formula) -> Lit {
        match f {
            Formula::True => self.truth(),
            Formula::False => !self.truth(),
            Formula::Atom(a) => {
                if let Some(v) = self.atoms.get(a) {
                    return Lit::new(*v, true);
                }
                let v = self.solver.new_var_default();
                self.atoms.insert(a.clone(), v);
                self.order.push(a.clone());
                Lit::new(v, true)
            }
            Formula::Not(p) => !self.lit(p),
            Formula::And(p, q) => {
                let (a, b) = (self.lit(p), self.lit(q));
                let x = self.fresh();
                self.add(&[!x, a]);
                self.add(&[!x, b]);
                self.add(&[x, !a, !b]);
                x
            }
            Formula::Or(p, q) => {
                let (a, b) = (self.lit(p), self.lit(q));
                let x = self.fresh();
                self.add(&[!x, a, b]);
                self.add(&[x, !a]);
                self.add(&[x, !b]);
                x
            }
            Formula::Implies(p, q) => {
                let (a, b) = (self.lit(p), self.lit(q));
                let x = self.fresh();
                self.add(&[!x, !a, b]);
                self.add(&[x, a]);
                self.add(&[x, !b]);
                x
            }
            Formula::Iff(p, q) => {
                let (a, b) = (self.lit(p), self.lit(q));
                let x = self.fresh();
                self.add(&[!x, !a, b]);
                self.add(&[!x, a, !b]);
                self.add(&[x, a, b]);
                self.add(&[x, !a, !b]);
                x
            }
        }
    }
}

/// Decides whether `premises` entail `conclusion`.
pub(crate) fn entails(premises: &[&Formula], conclusion: &Formula) -> Entailment {
    entails_with_budget(premises, conclusion, SAT_CONFLICT_BUDGET)
}

pub(crate) fn entails_with_budget(
    premises: &[&Formula],
    conclusion: &Formula,
    budget: u64,
) -> Entailment {
    let solver = batsat::Solver::new(
        SolverOpts::default(),
        Budget {
            conflicts: 0,
            limit: budget,
        },
    );
    let mut enc = Encoder {
        solver,
        atoms: HashMap::new(),
        order: Vec::new(),
        truth: None,
        clause: Vec::new(),
    };
    for p in premises {
        let l = enc.lit(p);
        enc.add(&[l]);
    }
    let c = enc.lit(conclusion);
    enc.add(&[!c]);
    let result = enc.solver.solve_limited(&[]);
    if result == lbool::FALSE {
        Entailment::Valid
    } else if result == lbool::TRUE {
        let model = enc
            .order
            .iter()
            .filter_map(|a| {
                let v = enc.atoms.get(a)?;
                Some((a.clone(), enc.solver.value_var(*v) == lbool::TRUE))
            })
            .collect();
        Entailment::Countermodel(model)
    } else {
        Entailment::Unknown
    }
}

#[cfg(test)]
mod tests {
    use super::{super::formula::parse_formula, *};

    fn f(s: &str) -> Formula {
        parse_formula(s).unwrap()
    }

    #[test]
    fn decides_small_entailments() {
        assert_eq!(
            entails(&[&f("(A ==> B)"), &f("A")], &f("B")),
            Entailment::Valid
        );
        let Entailment::Countermodel(m) = entails(&[&f("(A ==> B)"), &f("(~ A)")], &f("(~ B)"))
        else {
            panic!("valid?")
        };
        let val = |a: &str| m.iter().find(|(x, _)| x == a).map(|(_, v)| *v).unwrap();
        assert!(!val("A") && val("B"));
        assert_eq!(entails(&[&f("false")], &f("C")), Entailment::Valid);
        assert_eq!(entails(&[], &f("(A | ~ A)")), Entailment::Valid);
        assert!(matches!(
            entails(&[], &f("true ==> A")),
            Entailment::Countermodel(_)
        ));
    }

    /// Pigeonhole: n+1 pigeons in n holes is unsatisfiable, so it entails `false`.
    fn pigeonhole(n: usize) -> Vec<Formula> {
        let p = |i: usize, j: usize| Formula::atom(&format!("P{i}_{j}"));
        let mut out = Vec::new();
        for i in 0..=n {
            let mut clause = p(i, 0);
            for j in 1..n {
                clause = Formula::or(clause, p(i, j));
            }
            out.push(clause);
        }
        for j in 0..n {
            for i in 0..=n {
                for k in (i + 1)..=n {
                    out.push(Formula::implies(p(i, j), Formula::negate(p(k, j))));
                }
            }
        }
        out
    }

    #[test]
    fn pigeonhole_sized_problems_are_decided() {
        let php = pigeonhole(6);
        let refs: Vec<&Formula> = php.iter().collect();
        assert_eq!(entails(&refs, &Formula::False), Entailment::Valid);
        // a tiny budget gives up instead of searching on
        let php = pigeonhole(9);
        let refs: Vec<&Formula> = php.iter().collect();
        assert_eq!(
            entails_with_budget(&refs, &Formula::False, 10),
            Entailment::Unknown
        );
    }
}
