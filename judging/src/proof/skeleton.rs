//! The structure of a proof without its formulas: what the one seat that checks the
//! facts spanning steps sees.
//!
//! Step seats each see one step ([`super::StepDoc`]); none of them sees which blocks are
//! open where, whether a cited result is still in scope, or whether the last step is the
//! goal. [`ProofPlan::skeleton`] keeps exactly that: the blocks, hypotheses, bindings,
//! citations and roles of every step, with each step's text removed and each formula a
//! step or hypothesis asserts replaced by an opaque atom (equal formulas by the same
//! atom, so "the cited claim is the claim of its source" can still be checked). The
//! problem stays (every seat sees it), and so does the proof's conclusion (and, for an
//! equational proof, its starting term): the goal check needs them, and they are the
//! trace's final answer anyway. [`check_skeleton`] is the structure seat's verdict.

use super::{
    formula::Formula,
    plan::{ProofPlan, Source, check_structure, verdict_from_steps},
    report::{Claim, ErrorKind, StepVerdict, Verdict},
};

/// The start of every opaque atom: a word the formula reader reads as an atom. A plan
/// whose problem or kept claims use it gets a longer one ([`opaque_prefix`]).
const OPAQUE: &str = "_opaque";

struct Blind {
    keep: Vec<Claim>,
    names: Vec<Claim>,
    prefix: String,
}

/// An atom prefix no text of the problem or of the kept claims contains, so an opaque
/// atom never equals a real formula.
fn opaque_prefix(problem_text: &str, keep: &[Claim]) -> String {
    let mut prefix = OPAQUE.to_string();
    let kept: Vec<String> = keep.iter().map(ToString::to_string).collect();
    while problem_text.contains(&prefix) || kept.iter().any(|k| k.contains(&prefix)) {
        prefix.push('_');
    }
    prefix
}

impl Blind {
    fn claim(&mut self, c: &Claim) -> Claim {
        if self.keep.contains(c) {
            return c.clone();
        }
        let n = match self.names.iter().position(|x| x == c) {
            Some(n) => n,
            None => {
                self.names.push(c.clone());
                self.names.len().saturating_sub(1)
            }
        };
        Claim::Formula(Formula::Atom(format!("{}{n}", self.prefix)))
    }

    fn formula(&mut self, f: &Formula) -> Formula {
        match self.claim(&Claim::Formula(f.clone())) {
            Claim::Formula(g) => g,
            _ => f.clone(),
        }
    }
}

impl ProofPlan {
    /// The plan with every step's text removed and every claim of a step or hypothesis
    /// replaced by an opaque atom, except the conclusion's (and an equational proof's
    /// starting term): see the module docs.
    pub fn skeleton(&self) -> ProofPlan {
        let mut keep = Vec::new();
        if let Some(c) = self
            .conclusion
            .and_then(|k| self.steps.get(k))
            .and_then(|s| s.claim.clone())
        {
            keep.push(c);
        }
        if self.language == super::Language::Equational
            && let Some(c) = self.steps.first().and_then(|s| s.claim.clone())
        {
            keep.push(c);
        }
        let prefix = opaque_prefix(&self.problem_text, &keep);
        let mut blind = Blind {
            keep,
            names: Vec::new(),
            prefix,
        };
        let mut out = self.clone();
        for s in &mut out.steps {
            s.text = String::new();
            s.span = 0..0;
            s.claim = s.claim.as_ref().map(|c| blind.claim(c));
            for c in &mut s.cites {
                if matches!(c.source, Source::Step(_) | Source::Hypothesis(_)) {
                    c.claim = blind.claim(&c.claim);
                }
            }
        }
        for h in &mut out.hypotheses {
            h.formula = h.formula.as_ref().map(|f| blind.formula(f));
        }
        if let Some(f) = &mut out.fault {
            f.detailed_reason = f.public_reason.clone();
        }
        out
    }

    /// Whether no step of this plan carries text or a formula other than the conclusion
    /// (and an equational start): what a structure seat may be sent.
    pub fn is_skeleton(&self) -> bool {
        self.steps.iter().all(|s| s.text.is_empty())
            && self
                .hypotheses
                .iter()
                .all(|h| h.formula.as_ref().is_none_or(is_opaque))
    }
}

fn is_opaque(f: &Formula) -> bool {
    matches!(f, Formula::Atom(a) if a.starts_with(OPAQUE))
}

/// The structure seat's verdict on a skeleton: its scopes, citations, bindings and blocks
/// hold ([`check_structure`]), and with every step valid it derives exactly the goal with
/// no hypothesis open and no syntax error stopping it ([`verdict_from_steps`]).
pub fn check_skeleton(skeleton: &ProofPlan) -> StepVerdict {
    if let Err(e) = check_structure(skeleton) {
        return StepVerdict::Invalid {
            kind: ErrorKind::Logic,
            public_reason: format!("the proof's structure does not hold: {e}"),
            detailed_reason: format!("the proof's structure does not hold: {e}"),
        };
    }
    let all_valid = vec![StepVerdict::Valid; skeleton.steps.len()];
    match verdict_from_steps(skeleton, &all_valid) {
        Verdict::Pass => StepVerdict::Valid,
        Verdict::Fail(f) => StepVerdict::Invalid {
            kind: f.kind,
            public_reason: f.public_reason,
            detailed_reason: f.detailed_reason,
        },
        Verdict::Undecided { reason, .. } => StepVerdict::Abstain { reason },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proof::steps;

    const PROBLEM: &str = "premise-1 := (A ==> B)\npremise-2 := (B ==> C)\nGoal: (A ==> C)";

    fn plan(proof: &str) -> ProofPlan {
        steps(PROBLEM, proof)
            .expect("a proof")
            .expect("within limits")
    }

    #[test]
    fn a_skeleton_hides_every_step_formula_but_the_conclusion_and_still_checks() {
        let p = plan(
            "{\n  assume A {\n    B BY mp on premise-1, A;\n    C BY mp on premise-2, B\n  }\n}",
        );
        let sk = p.skeleton();
        assert!(sk.is_skeleton());
        let last = sk.steps.len() - 1;
        for s in &sk.steps[..last] {
            assert!(
                matches!(&s.claim, Some(Claim::Formula(f)) if is_opaque(f)),
                "{s:?}"
            );
        }
        assert_eq!(sk.steps[last].claim, p.steps[last].claim);
        // it travels as JSON and reads back the same
        let json = serde_json::to_string(&sk).expect("serialises");
        let back: ProofPlan = serde_json::from_str(&json).expect("reads back");
        assert_eq!(back, sk);
        assert_eq!(check_skeleton(&sk), StepVerdict::Valid);
    }

    #[test]
    fn a_result_cited_after_its_block_closed_fails_the_skeleton() {
        // The whole proof fails at the citation; a provider's plan that presents the
        // citation as visible is caught by the structure check.
        let p = plan(
            "{\n  assume A {\n    B BY mp on premise-1, A;\n    C BY mp on premise-2, B\n  };\n  C BY claim on C\n}",
        );
        assert!(matches!(
            crate::proof::check_plan(&p),
            Verdict::Fail(_) | Verdict::Undecided { .. }
        ));
        let mut forged = p.clone();
        // make the last step cite the in-block C as if it were visible
        let last = forged.steps.len() - 1;
        if let Some(c) = forged.steps[last].cites.first_mut() {
            c.source = Source::Step(2);
        }
        assert!(matches!(
            check_skeleton(&forged.skeleton()),
            StepVerdict::Invalid { .. }
        ));
    }

    #[test]
    fn a_proof_that_stops_short_of_the_goal_fails_the_skeleton() {
        let p = plan("{\n  assume A {\n    B BY mp on premise-1, A\n  }\n}");
        assert!(matches!(
            check_skeleton(&p.skeleton()),
            StepVerdict::Invalid {
                kind: ErrorKind::Logic,
                ..
            }
        ));
    }
}
