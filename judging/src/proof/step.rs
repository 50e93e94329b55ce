//! Judging one step alone, as an auditor seat does: [`StepDoc`] is everything the seat
//! sees, [`check_step`] its verdict.
//!
//! The seat sees the language, the problem (premises, goal, axioms, identities), the step's
//! own text, what the step cites (each with its kind and claim), the active hypotheses and
//! the plan's claim for the step. It re-reads the text, resolves names only through the
//! citations, treats as holding only premises, active hypotheses and cited results, and
//! applies the same step semantics as the whole-proof checker. A deduction the step is
//! given as an argument is judged by the seats of its own steps; this seat takes its
//! conclusion from the step's argument citations. A step whose text does not
//! yield the claim the plan states is invalid.

use serde::{Deserialize, Serialize};

use super::{
    equational,
    formula::Formula,
    hilbert,
    lex::lex,
    ndl::{
        check::{
            Dialect, SUPPOSE_ABSURD_IN_NDL_F, Scope, atom_like, check_define, check_hypothesis,
            check_primitive, close, resolve, subproofs,
        },
        syntax::{Element, HypKind, parse_header, parse_single},
    },
    plan::{CiteRole, ProofPlan, StepRole},
    problem::Problem,
    report::{Claim, ErrorKind, Fault, Language, StepVerdict, Stop},
    term::parse_term,
};

/// Everything one seat sees of one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepDoc {
    /// The proof language.
    pub language: Language,
    /// The problem: premises, goal, axioms, identities.
    pub problem: Problem,
    /// The step's index in its plan.
    pub index: usize,
    /// What kind of step.
    pub role: StepRole,
    /// The step's own text (for a hypothetical block, its header).
    pub text: String,
    /// The previous step's Hilbert line number, for numbered lines.
    pub previous_label: Option<String>,
    /// What the step cites, with the cited claims.
    pub cites: Vec<super::plan::Citation>,
    /// The formulas of the hypotheses active at the step.
    pub hypotheses: Vec<Formula>,
    /// What the plan says the step concludes.
    pub claim: Option<Claim>,
}

impl ProofPlan {
    /// The document the seat judging step `i` receives.
    pub fn step_doc(&self, i: usize) -> Option<StepDoc> {
        let s = self.steps.get(i)?;
        Some(StepDoc {
            language: self.language,
            problem: self.problem.clone(),
            index: i,
            role: s.role,
            text: s.text.clone(),
            previous_label: i
                .checked_sub(1)
                .and_then(|p| self.steps.get(p))
                .and_then(|p| p.label.clone()),
            cites: s.cites.clone(),
            hypotheses: s
                .active_hypotheses
                .iter()
                .filter_map(|h| self.hypotheses.get(*h).and_then(|h| h.formula.clone()))
                .collect(),
            claim: s.claim.clone(),
        })
    }
}

struct DocScope<'a> {
    doc: &'a StepDoc,
}

impl Scope for DocScope<'_> {
    fn lookup(&self, name: &str) -> Option<&Formula> {
        self.doc
            .cites
            .iter()
            .find(|c| c.role == CiteRole::Name && c.name.as_deref() == Some(name))
            .and_then(|c| match &c.claim {
                Claim::Formula(f) => Some(f),
                _ => None,
            })
    }

    fn holds(&self, f: &Formula) -> bool {
        self.doc.problem.premises.iter().any(|p| p.formula == *f)
            || self.doc.hypotheses.contains(f)
            || self
                .doc
                .cites
                .iter()
                .any(|c| c.asserted && matches!(&c.claim, Claim::Formula(g) if g == f))
    }

    fn declared_atom(&self, word: &str) -> bool {
        atom_like(word) || self.doc.problem.declares_atom(word)
    }
}

fn syntax_stop(f: super::ndl::syntax::SyntaxFault) -> Stop {
    if f.over_limit {
        Stop::Undecided(f.public.to_string())
    } else {
        Stop::Fault(Fault::syntax(f.public, f.detail))
    }
}

fn not_for(role: StepRole, language: Language) -> Stop {
    Stop::Undecided(format!(
        "a {role:?} step does not occur in {language} proofs"
    ))
}

fn cited_formula(doc: &StepDoc, role: CiteRole) -> Option<&Formula> {
    doc.cites
        .iter()
        .find(|c| c.role == role)
        .and_then(|c| match &c.claim {
            Claim::Formula(f) => Some(f),
            _ => None,
        })
}

fn judge(doc: &StepDoc) -> Result<Claim, Stop> {
    let dialect = match doc.language {
        Language::Ndl => Some(Dialect::Ndl),
        Language::NdlF => Some(Dialect::NdlF),
        _ => None,
    };
    let toks = lex(&doc.text);
    let scope = DocScope { doc };
    match doc.role {
        StepRole::Primitive | StepRole::Definition => {
            let Some(dialect) = dialect else {
                return Err(not_for(doc.role, doc.language));
            };
            let element = parse_single(&toks, doc.text.len()).map_err(syntax_stop)?;
            match (doc.role, element) {
                (StepRole::Primitive, Element::Step(s)) => {
                    let subs: Vec<Formula> = doc
                        .cites
                        .iter()
                        .filter(|c| c.role == CiteRole::Argument)
                        .filter_map(|c| match &c.claim {
                            Claim::Formula(f) => Some(f.clone()),
                            _ => None,
                        })
                        .collect();
                    if subs.len() != subproofs(&s).len() {
                        return Err(Stop::Undecided(
                            "the step does not cite one conclusion for each deduction it is given"
                                .into(),
                        ));
                    }
                    check_primitive(&s, dialect, &scope, &subs).map(Claim::Formula)
                }
                (StepRole::Definition, Element::Define(d)) => {
                    check_define(&d.formula, &scope).map(Claim::Formula)
                }
                _ => Err(Fault::syntax(
                    "the step's text is not a step of this kind",
                    "the text does not read as the plan says",
                )
                .into()),
            }
        }
        StepRole::OpenHypothesis(kind) | StepRole::Close(kind) => {
            let Some(dialect) = dialect else {
                return Err(not_for(doc.role, doc.language));
            };
            let header = parse_header(&toks, doc.text.len()).map_err(syntax_stop)?;
            if header.kind != kind {
                return Err(Fault::syntax(
                    "the step's text is not a step of this kind",
                    "the header does not open the kind of block the plan says",
                )
                .into());
            }
            if matches!(doc.role, StepRole::OpenHypothesis(_)) {
                if kind == HypKind::SupposeAbsurd && dialect == Dialect::NdlF {
                    return Err(Stop::Undecided(SUPPOSE_ABSURD_IN_NDL_F.into()));
                }
                return check_hypothesis(&header.hyp, &scope).map(Claim::Formula);
            }
            let hyp = resolve(&header.hyp, &scope, "the hypothesis")?;
            let (Some(cited), Some(body)) = (
                cited_formula(doc, CiteRole::Hypothesis),
                cited_formula(doc, CiteRole::BodyConclusion),
            ) else {
                return Err(Stop::Undecided(
                    "the closing step does not cite its hypothesis and body".into(),
                ));
            };
            if *cited != hyp {
                return Err(Fault::logic(
                    "the closing step's hypothesis is not the one its block assumed",
                    format!("the header assumes {hyp}, the cited hypothesis is {cited}"),
                )
                .into());
            }
            close(kind, &hyp, body).map(Claim::Formula)
        }
        StepRole::HilbertLine => {
            if doc.language != Language::Hilbert {
                return Err(not_for(doc.role, doc.language));
            }
            let parsed = hilbert::parse(&toks, &doc.text);
            if let Some(f) = parsed.fault {
                return Err(syntax_stop(f));
            }
            let [line] = parsed.lines.as_slice() else {
                return Err(Fault::syntax(
                    "the step's text is not one numbered line",
                    "the text holds more or less than one line",
                )
                .into());
            };
            let prev = match &doc.previous_label {
                Some(l) => Some(l.parse::<u64>().map_err(|_| {
                    Stop::Undecided("the previous line's number is not a number".into())
                })?),
                None => None,
            };
            let earlier = |n: u64| {
                let label = n.to_string();
                doc.cites
                    .iter()
                    .find(|c| {
                        c.role == CiteRole::EarlierLine && c.name.as_deref() == Some(label.as_str())
                    })
                    .and_then(|c| match &c.claim {
                        Claim::Formula(f) => Some(f.clone()),
                        _ => None,
                    })
            };
            hilbert::check_line(line, prev, &earlier, &doc.problem).map(Claim::Formula)
        }
        StepRole::EqStart => {
            if doc.language != Language::Equational {
                return Err(not_for(doc.role, doc.language));
            }
            let t = parse_term(&doc.text).map_err(|e| {
                if e.over_limit {
                    Stop::Undecided(e.public.to_string())
                } else {
                    Stop::Fault(Fault::syntax(e.public, e.detail))
                }
            })?;
            equational::check_start(&t, &doc.problem)?;
            Ok(Claim::Term(t))
        }
        StepRole::EqStep => {
            if doc.language != Language::Equational {
                return Err(not_for(doc.role, doc.language));
            }
            let line = equational::parse_step(&toks, &doc.text).map_err(syntax_stop)?;
            let prev = doc
                .cites
                .iter()
                .find(|c| c.role == CiteRole::PreviousTerm)
                .and_then(|c| match &c.claim {
                    Claim::Term(t) | Claim::Equation(_, t) => Some(t.clone()),
                    Claim::Formula(_) => None,
                })
                .ok_or_else(|| {
                    Stop::Undecided("the step does not cite the previous term".into())
                })?;
            equational::check_step(&prev, &line, &doc.problem)?;
            Ok(Claim::Equation(prev, line.term))
        }
    }
}

/// Judges one step from its document alone.
pub fn check_step(doc: &StepDoc) -> StepVerdict {
    match judge(doc) {
        Ok(claim) => {
            if doc.claim.as_ref() == Some(&claim) {
                StepVerdict::Valid
            } else {
                StepVerdict::Invalid {
                    kind: ErrorKind::Logic,
                    public_reason: "the step does not conclude what the plan states".into(),
                    detailed_reason: format!(
                        "the step concludes {claim}, the plan states {}",
                        doc.claim
                            .as_ref()
                            .map_or("nothing".to_string(), ToString::to_string)
                    ),
                }
            }
        }
        Err(Stop::Fault(f)) => StepVerdict::Invalid {
            kind: f.kind,
            public_reason: f.public,
            detailed_reason: f.detail,
        },
        Err(Stop::Undecided(reason)) => StepVerdict::Abstain { reason },
    }
}
