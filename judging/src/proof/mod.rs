//! Exact checking of formal proofs as ProofGrid writes them.
//!
//! Four languages, defined completely by ProofGrid's prompts: NDL (24 inference rules,
//! `assume`, `suppose-absurd`, blocks and names), NDL_f (the single step form
//! `p from p1, ..., pn`, n <= 5, decided by SAT), Hilbert-style proofs (three axiom schemas
//! and modus ponens over numbered lines) and equational proofs (term rewriting by named
//! identities).
//!
//! - [`recognize`] tells whether a text is such a proof for a problem (anything else —
//!   prose, LaTeX, unknown notation — is `None` and is never called wrong);
//! - [`check_proof`] gives the verdict ProofGrid's checker gives: pass, or the earliest
//!   error with its kind (syntax, type, logic), line, span and a public and a detailed reason;
//! - [`steps`] cuts a proof into primitive steps for distributed checking, [`check_step`]
//!   judges one step from what one seat sees, [`check_structure`] checks the facts that
//!   span steps, and [`verdict_from_steps`] recombines them into the same verdict;
//! - [`generate`] makes labelled problems, proofs and corrupted proofs from a seed.
//!
//! Every reader and checker is bounded (see [`limits`]): no input panics, overflows the
//! stack or hangs; past a limit the answer is "undecided", never a guess.

mod eq;
mod equational;
mod formula;
pub mod generate;
mod hilbert;
mod lex;
pub mod limits;
mod ndl;
mod plan;
mod problem;
mod report;
mod sat;
mod skeleton;
mod source;
mod step;
mod term;

pub use formula::{Formula, FormulaError, parse_formula};
pub use ndl::syntax::HypKind;
pub use plan::{
    Binding, Citation, CiteRole, PlanBlock, PlanFault, PlanHypothesis, PlanStep, ProofPlan, Source,
    StepRole, StructureError, check_structure, structure_work, verdict_from_steps,
};
pub use problem::{Axiom, Identity, Premise, Problem};
pub use report::{Claim, ErrorKind, Failure, Language, ProofReport, StepVerdict, Verdict};
pub use skeleton::check_skeleton;
pub use step::{StepDoc, check_step};
pub use term::{Term, TermError, parse_term};

use self::{
    lex::{Token, lex},
    limits::MAX_PROOF_BYTES,
    ndl::{
        check::Dialect,
        syntax::{Element, Parsed, StepBody},
    },
    plan::goal_verdict,
    report::Stop,
    source::Region,
};

/// Why a recognised proof was not cut into steps.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PlanError {
    /// A reader limit (size, nesting) refused the proof; it is not distributed.
    #[error("the proof exceeds a reader limit: {0}")]
    OverLimit(String),
}

/// A proof located and read.
struct Read {
    language: Language,
    problem: Problem,
    region: Region,
    toks: Vec<Token>,
}

fn first_primitive(e: &Element) -> Option<&StepBody> {
    match e {
        Element::Step(s) => Some(&s.body),
        Element::Define(_) => None,
        Element::Block(b) => b.elements.iter().find_map(first_primitive),
        Element::Assume(a) => a.body.elements.iter().find_map(first_primitive),
    }
}

fn dialect_of(language: Language) -> Dialect {
    if language == Language::NdlF {
        Dialect::NdlF
    } else {
        Dialect::Ndl
    }
}

fn read(problem_text: &str, proof_text: &str) -> Option<(Read, Option<Parsed>)> {
    if proof_text.len() > MAX_PROOF_BYTES {
        return None;
    }
    let problem = Problem::parse(problem_text);
    let has_goal = problem.goal_formula().is_some();
    let mut order: Vec<Language> = Vec::new();
    match problem.named_language {
        Some(Language::Equational) => order.push(Language::Equational),
        Some(Language::Hilbert) => order.push(Language::Hilbert),
        Some(l @ (Language::Ndl | Language::NdlF)) => order.push(l),
        None => {
            if problem.style == problem::PremiseStyle::Hilbert {
                order.push(Language::Hilbert);
            }
            if !problem.identities.is_empty() {
                order.push(Language::Equational);
            }
            order.push(Language::Ndl);
            if !order.contains(&Language::Hilbert) {
                order.push(Language::Hilbert);
            }
        }
    }
    for lang in order {
        let ok = match lang {
            Language::Equational => !problem.identities.is_empty(),
            _ => has_goal,
        };
        if !ok {
            continue;
        }
        let Some(region) = source::locate(proof_text, lang) else {
            continue;
        };
        let toks = lex(&region.text);
        let mut language = lang;
        let mut parsed = None;
        if matches!(lang, Language::Ndl | Language::NdlF) {
            let p = ndl::syntax::parse(&toks, region.text.len());
            if lang == Language::Ndl
                && let Some(root) = &p.root
                && let Some(StepBody::From { .. }) = first_primitive(root)
            {
                language = Language::NdlF;
            }
            parsed = Some(p);
        }
        return Some((
            Read {
                language,
                problem,
                region,
                toks,
            },
            parsed,
        ));
    }
    None
}

/// The language `proof_text` is written in, if it is a ProofGrid proof for `problem`: the
/// problem states premises and a goal (or identities) in ProofGrid style, and a line of the
/// text begins a proof in that language. `None` for anything else.
pub fn recognize(problem: &str, proof_text: &str) -> Option<Language> {
    read(problem, proof_text).map(|(r, _)| r.language)
}

fn fault_verdict(region: &Region, fault: &ndl::syntax::SyntaxFault) -> Verdict {
    if fault.over_limit {
        return Verdict::Undecided {
            reason: fault.public.to_string(),
            step: None,
        };
    }
    let at = region.raw(fault.at);
    Verdict::Fail(Failure {
        kind: ErrorKind::Syntax,
        step: None,
        line: region.line(fault.at),
        span: Some(at..at),
        public_reason: fault.public.to_string(),
        detailed_reason: fault.detail.clone(),
    })
}

fn stop_verdict(
    region: &Region,
    stop: Stop,
    step: usize,
    span: &std::ops::Range<usize>,
) -> Verdict {
    match stop {
        Stop::Fault(f) => Verdict::Fail(Failure {
            kind: f.kind,
            step: Some(step),
            line: region.line(span.start),
            span: Some(region.raw_span(span)),
            public_reason: f.public,
            detailed_reason: f.detail,
        }),
        Stop::Undecided(reason) => Verdict::Undecided {
            reason,
            step: Some(step),
        },
    }
}

/// Checks a whole proof. `None` when the text is not recognised as a proof for the
/// problem. The verdict is [`Verdict::Pass`] only when every step checks and the proof
/// derives exactly the goal with no hypothesis open; otherwise the earliest error.
pub fn check_proof(problem: &str, proof_text: &str) -> Option<ProofReport> {
    let (r, parsed) = read(problem, proof_text)?;
    let (verdict, steps, conclusion) = match r.language {
        Language::Ndl | Language::NdlF => {
            let parsed = parsed?;
            let (end, n) =
                ndl::eval::evaluate(parsed.root.as_ref(), &r.problem, dialect_of(r.language));
            match end {
                ndl::eval::End::Stopped { stop, step, span } => {
                    (stop_verdict(&r.region, stop, step, &span), n, None)
                }
                ndl::eval::End::Incomplete => {
                    let v = match &parsed.fault {
                        Some(f) => fault_verdict(&r.region, f),
                        None => Verdict::Undecided {
                            reason: "the proof ended early".into(),
                            step: None,
                        },
                    };
                    (v, n, None)
                }
                ndl::eval::End::Done(c) => {
                    let claim = Claim::Formula(c);
                    let v = match &parsed.fault {
                        Some(f) => fault_verdict(&r.region, f),
                        None => goal_verdict(r.language, &r.problem, Some(&claim), None),
                    };
                    (v, n, Some(claim))
                }
            }
        }
        Language::Hilbert => {
            let parsed = hilbert::parse(&r.toks, &r.region.text);
            match hilbert::evaluate(&parsed.lines, &r.problem) {
                Err((i, stop)) => {
                    let span = parsed.lines.get(i).map_or(0..0, |l| l.span.clone());
                    (
                        stop_verdict(&r.region, stop, i, &span),
                        i.saturating_add(1),
                        None,
                    )
                }
                Ok(last) => {
                    let claim = last.map(Claim::Formula);
                    let v = match &parsed.fault {
                        Some(f) => fault_verdict(&r.region, f),
                        None => goal_verdict(r.language, &r.problem, claim.as_ref(), None),
                    };
                    (v, parsed.lines.len(), claim)
                }
            }
        }
        Language::Equational => {
            let parsed = equational::parse(&r.toks, &r.region.text);
            match equational::evaluate(&parsed, &r.problem) {
                Err((i, stop)) => {
                    let span = match i.checked_sub(1) {
                        None => parsed.start.as_ref().map_or(0..0, |(s, _)| s.clone()),
                        Some(k) => parsed.steps.get(k).map_or(0..0, |l| l.span.clone()),
                    };
                    (
                        stop_verdict(&r.region, stop, i, &span),
                        i.saturating_add(1),
                        None,
                    )
                }
                Ok(last) => {
                    let start = parsed.start.as_ref().map(|(_, t)| Claim::Term(t.clone()));
                    let claim = match (&start, last) {
                        (Some(Claim::Term(s)), Some(t)) if !parsed.steps.is_empty() => {
                            Some(Claim::Equation(
                                parsed
                                    .steps
                                    .len()
                                    .checked_sub(2)
                                    .and_then(|k| parsed.steps.get(k))
                                    .map_or_else(|| s.clone(), |l| l.term.clone()),
                                t,
                            ))
                        }
                        (Some(s), _) => Some(s.clone()),
                        _ => None,
                    };
                    let v = match &parsed.fault {
                        Some(f) => fault_verdict(&r.region, f),
                        None => {
                            goal_verdict(r.language, &r.problem, claim.as_ref(), start.as_ref())
                        }
                    };
                    let n = parsed
                        .steps
                        .len()
                        .saturating_add(usize::from(parsed.start.is_some()));
                    (v, n, claim)
                }
            }
        }
    };
    Some(ProofReport {
        language: r.language,
        verdict,
        steps,
        conclusion,
    })
}

/// Cuts a recognised proof into primitive steps. `None` when the text is not recognised;
/// an error when a reader limit refused it.
pub fn steps(problem: &str, proof_text: &str) -> Option<Result<ProofPlan, PlanError>> {
    let (r, parsed) = read(problem, proof_text)?;
    let plan = match r.language {
        Language::Ndl | Language::NdlF => {
            let parsed = parsed?;
            plan::build_ndl(
                r.language,
                problem,
                &r.problem,
                &r.region,
                &parsed,
                dialect_of(r.language),
            )
        }
        Language::Hilbert => {
            let parsed = hilbert::parse(&r.toks, &r.region.text);
            plan::build_hilbert(problem, &r.problem, &r.region, &parsed)
        }
        Language::Equational => {
            let parsed = equational::parse(&r.toks, &r.region.text);
            plan::build_equational(problem, &r.problem, &r.region, &parsed)
        }
    };
    if let Some(f) = &plan.fault
        && f.over_limit
    {
        return Some(Err(PlanError::OverLimit(f.public_reason.clone())));
    }
    Some(Ok(plan))
}

/// Checks every step of a plan alone and recombines the verdicts (what the network does,
/// run in one place).
pub fn check_plan(plan: &ProofPlan) -> Verdict {
    let verdicts: Vec<StepVerdict> = (0..plan.steps.len())
        .filter_map(|i| plan.step_doc(i))
        .map(|d| check_step(&d))
        .collect();
    verdict_from_steps(plan, &verdicts)
}
