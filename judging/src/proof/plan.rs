//! Cutting a proof into primitive steps for distributed checking.
//!
//! A [`ProofPlan`] lists every primitive step of a proof in evaluation order — a rule
//! application or `from` step, a definition, the opening and the closing of a hypothetical
//! block, a numbered Hilbert line, an equational step — each with the verbatim span of its
//! text, what it concludes, what it cites (premises, hypotheses, earlier steps, axioms and
//! identities: the `depends_on` edges), the blocks that enclose it and the hypotheses active
//! there. Comments and braces are not steps.
//!
//! Each step is judged alone from a [`super::StepDoc`]; [`check_structure`] checks the facts
//! no single seat can see (every citation is visible where it is made, closing steps rest on
//! their own hypothesis and body, names mean what they last meant); [`verdict_from_steps`]
//! turns the per-step verdicts and the plan into the verdict on the whole proof, which is
//! the verdict [`super::check_proof`] gives.

use std::{collections::HashMap, ops::Range};

use serde::{Deserialize, Serialize};

use super::{
    equational::ParsedChain,
    formula::{Formula, PAREN_MARK},
    hilbert::{Justification, ParsedLines},
    ndl::{
        check::{
            Dialect, Scope, atom_like, check_define, check_hypothesis, check_primitive, close,
            resolve, subproofs,
        },
        syntax::{Arg, BlockNode, Element, HypKind, Parsed, StepBody, SyntaxFault},
    },
    problem::Problem,
    report::{Claim, ErrorKind, Failure, Language, StepVerdict, Verdict},
    source::Region,
};

/// What kind of primitive step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepRole {
    /// An NDL rule application or an NDL_f `from` step.
    Primitive,
    /// `I := p`: names a formula without asserting it.
    Definition,
    /// The header of `assume p { ... }` / `suppose-absurd p { ... }`: introduces `p`.
    OpenHypothesis(HypKind),
    /// The end of the block: discharges the hypothesis and concludes `(p ==> q)` / `(~ p)`.
    Close(HypKind),
    /// A numbered Hilbert line.
    HilbertLine,
    /// The first line of an equational proof, `s = t0`.
    EqStart,
    /// One equational step, `= t_i by E...`.
    EqStep,
}

/// What a citation points at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Source {
    /// The problem's premise with this index.
    Premise(usize),
    /// The plan's hypothesis with this index.
    Hypothesis(usize),
    /// The plan's step with this index.
    Step(usize),
    /// The problem's Hilbert axiom with this index.
    Axiom(usize),
    /// The problem's equational identity with this index.
    Identity(usize),
}

/// How a step uses what it cites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum CiteRole {
    /// The step writes this name.
    Name,
    /// An argument of the step is this formula, which holds.
    Holding,
    /// The hypothesis a closing step discharges.
    Hypothesis,
    /// The conclusion of the body a closing step rests on.
    BodyConclusion,
    /// A Hilbert premise or axiom the line is justified by.
    Justification,
    /// An earlier Hilbert line cited by `mp` (the name is the line number).
    EarlierLine,
    /// The previous term of an equational step.
    PreviousTerm,
    /// An identity an equational step cites.
    Identity,
    /// The conclusion of a deduction the step is given as an argument (one citation per
    /// such argument, in the order the arguments are written).
    Argument,
}

/// One `depends_on` edge, with the cited claim a seat needs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Citation {
    /// What is cited.
    pub source: Source,
    /// The name the step writes for it, if it writes one.
    pub name: Option<String>,
    /// The cited formula, term or equation.
    pub claim: Claim,
    /// Whether the claim holds where the step is (false for a definition's formula and
    /// for axiom schemas and identities, which are rules rather than facts).
    pub asserted: bool,
    /// How the step uses it.
    pub role: CiteRole,
}

/// One primitive step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanStep {
    /// Position in evaluation order.
    pub index: usize,
    /// What kind of step.
    pub role: StepRole,
    /// Byte span of the step's text in the text given to [`super::steps`].
    pub span: Range<usize>,
    /// The step's own text (for a hypothetical block: its header).
    pub text: String,
    /// 1-based line within the proof.
    pub line: usize,
    /// The Hilbert line number as written, for numbered lines.
    pub label: Option<String>,
    /// The name the step binds, if any.
    pub name: Option<String>,
    /// What the step concludes (or states), when that can be worked out.
    pub claim: Option<Claim>,
    /// What it cites.
    pub cites: Vec<Citation>,
    /// Ids of the enclosing blocks, outermost first.
    pub scope_path: Vec<usize>,
    /// Ids of the hypotheses active at the step, outermost first.
    pub active_hypotheses: Vec<usize>,
}

/// A proof block (`{ ... }`, or the body of a hypothetical block).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanBlock {
    /// Its id (its index in [`ProofPlan::blocks`]).
    pub id: usize,
    /// The enclosing block.
    pub parent: Option<usize>,
    /// The hypothesis whose scope this block is, for the body of `assume` / `suppose-absurd`.
    pub hypothesis: Option<usize>,
    /// Whether the reader saw the block close.
    pub complete: bool,
    /// Whether the block holds a deduction given as a rule's argument (`cases on d,
    /// assume p { ... }, ...`): its conclusion reaches only the rule application that
    /// follows its sibling argument blocks, never a later step.
    #[serde(default, skip_serializing_if = "is_false")]
    pub argument: bool,
}

/// Leaves the field out of a plan that has no argument blocks, so such plans serialize as
/// they did before argument blocks existed.
fn is_false(b: &bool) -> bool {
    !*b
}

/// A hypothesis of an `assume` / `suppose-absurd` block.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanHypothesis {
    /// Its id (its index in [`ProofPlan::hypotheses`]).
    pub id: usize,
    /// The name the proof gives it.
    pub name: Option<String>,
    /// The formula, when its names resolve.
    pub formula: Option<Formula>,
    /// The body block it scopes.
    pub block: usize,
    /// The step that opens it.
    pub open_step: usize,
}

/// What a name means from some step on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Binding {
    /// The name.
    pub name: String,
    /// What it stands for.
    pub source: Source,
    /// The block it is visible in (`None`: the whole proof).
    pub block: Option<usize>,
    /// Steps with this index or later may use it.
    pub from_step: usize,
}

/// A syntax error that stopped the cutting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanFault {
    /// How many steps precede it.
    pub before_step: usize,
    /// Byte offset in the text given to [`super::steps`].
    pub at: usize,
    /// 1-based line within the proof.
    pub line: usize,
    /// A reason that quotes nothing.
    pub public_reason: String,
    /// A reason that may quote the text.
    pub detailed_reason: String,
    /// Whether a limit of the reader (not the language) stopped it.
    pub over_limit: bool,
}

/// A proof cut into primitive steps.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofPlan {
    /// The language.
    pub language: Language,
    /// The problem statement as given.
    pub problem_text: String,
    /// The problem as read.
    pub problem: Problem,
    /// The steps in evaluation order.
    pub steps: Vec<PlanStep>,
    /// The blocks.
    pub blocks: Vec<PlanBlock>,
    /// The hypotheses.
    pub hypotheses: Vec<PlanHypothesis>,
    /// The name bindings.
    pub bindings: Vec<Binding>,
    /// The step whose claim is the proof's conclusion.
    pub conclusion: Option<usize>,
    /// The syntax error after the last step, if one stopped the reader.
    pub fault: Option<PlanFault>,
}

/// Why a plan is not a faithful cut of a proof.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StructureError {
    /// Step indexes are not 0, 1, 2, ...
    #[error("step {0} is out of order")]
    StepOrder(usize),
    /// A scope path that is not a chain of nested blocks.
    #[error("step {0} has an invalid scope path")]
    ScopePath(usize),
    /// The active hypotheses do not match the enclosing blocks.
    #[error("step {0} lists hypotheses that are not the active ones")]
    ActiveHypotheses(usize),
    /// A citation of something that does not exist or is not visible at the step.
    #[error("step {step} cites a source that is not visible there")]
    NotVisible {
        /// The citing step.
        step: usize,
    },
    /// A citation whose claim is not the claim of its source (a hypothesis presented as
    /// a premise, a formula that is not the cited step's conclusion, ...).
    #[error("step {step} cites a claim its source does not have")]
    ClaimMismatch {
        /// The citing step.
        step: usize,
    },
    /// A named citation that is not what the name last meant at the step.
    #[error("step {step} resolves a name to the wrong source")]
    NameMismatch {
        /// The citing step.
        step: usize,
    },
    /// A binding that does not fit its source.
    #[error("binding {0} does not fit its source")]
    Binding(usize),
    /// A closing or opening step that does not rest on its own block.
    #[error("step {0} does not open or close its own block")]
    Block(usize),
    /// The conclusion step is missing or not the final step of the whole proof.
    #[error("the plan's conclusion is not the final step of the proof")]
    Conclusion,
    /// The proof's conclusion rests inside a block that is still open.
    #[error("the proof's conclusion leaves a hypothesis open")]
    OpenHypothesis,
    /// The plan's problem is not the problem its text states.
    #[error("the plan's problem does not match its problem text")]
    Problem,
}

// ---------------------------------------------------------------------------------------
// Building plans

#[derive(Debug, Clone)]
struct Bound {
    formula: Formula,
    source: Source,
}

enum Built {
    Concluded {
        formula: Option<Formula>,
        step: usize,
    },
    Defined {
        formula: Option<Formula>,
    },
}

struct NdlBuilder<'a> {
    region: &'a Region,
    problem: &'a Problem,
    dialect: Dialect,
    atoms: std::collections::HashSet<String>,
    plan: ProofPlan,
    path: Vec<usize>,
    names: Vec<(String, Bound)>,
    base: Vec<(Formula, Source)>,
    index: HashMap<Formula, Vec<Source>>,
}

impl Scope for NdlBuilder<'_> {
    fn lookup(&self, name: &str) -> Option<&Formula> {
        self.names
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, b)| &b.formula)
    }

    fn holds(&self, f: &Formula) -> bool {
        self.index.get(f).is_some_and(|v| !v.is_empty())
    }

    fn declared_atom(&self, word: &str) -> bool {
        atom_like(word) || self.atoms.contains(word)
    }
}

fn identifiers(f: &Formula, out: &mut Vec<String>) {
    let mut stack = vec![f];
    while let Some(f) = stack.pop() {
        match f {
            Formula::Atom(a) => {
                let a = a.trim_start_matches(PAREN_MARK);
                if !out.iter().any(|o| o == a) {
                    out.push(a.to_string());
                }
            }
            Formula::True | Formula::False => {}
            Formula::Not(p) => stack.push(p),
            Formula::And(p, q)
            | Formula::Or(p, q)
            | Formula::Implies(p, q)
            | Formula::Iff(p, q) => {
                stack.push(q);
                stack.push(p);
            }
        }
    }
}

impl NdlBuilder<'_> {
    fn assert(&mut self, f: Formula, source: Source) {
        self.index.entry(f.clone()).or_default().push(source);
        self.base.push((f, source));
    }

    fn bind(&mut self, name: &str, formula: Formula, source: Source, from_step: usize) {
        if name == "_" {
            return;
        }
        self.names
            .push((name.to_string(), Bound { formula, source }));
        self.plan.bindings.push(Binding {
            name: name.to_string(),
            source,
            block: self.path.last().copied(),
            from_step,
        });
    }

    fn mark(&self) -> (usize, usize) {
        (self.names.len(), self.base.len())
    }

    fn restore(&mut self, (names, base): (usize, usize)) {
        self.names.truncate(names);
        while self.base.len() > base {
            if let Some((f, _)) = self.base.pop()
                && let Some(v) = self.index.get_mut(&f)
            {
                v.pop();
            }
        }
    }

    fn claim_of(&self, source: Source) -> Option<(Claim, bool)> {
        match source {
            Source::Premise(i) => self
                .problem
                .premises
                .get(i)
                .map(|p| (Claim::Formula(p.formula.clone()), true)),
            Source::Hypothesis(h) => self
                .plan
                .hypotheses
                .get(h)
                .and_then(|h| h.formula.clone())
                .map(|f| (Claim::Formula(f), true)),
            Source::Step(k) => self
                .plan
                .steps
                .get(k)
                .and_then(|s| s.claim.clone().map(|c| (c, s.role != StepRole::Definition))),
            Source::Axiom(_) | Source::Identity(_) => None,
        }
    }

    /// Citations for every bound name written in `formulas`.
    fn name_cites(&self, formulas: &[&Formula]) -> Vec<Citation> {
        let mut words = Vec::new();
        for f in formulas {
            identifiers(f, &mut words);
        }
        let mut out = Vec::new();
        for w in words {
            if let Some((_, b)) = self.names.iter().rev().find(|(n, _)| *n == w) {
                let (claim, asserted) = self
                    .claim_of(b.source)
                    .unwrap_or((Claim::Formula(b.formula.clone()), true));
                out.push(Citation {
                    source: b.source,
                    name: Some(w),
                    claim,
                    asserted,
                    role: CiteRole::Name,
                });
            }
        }
        out
    }

    /// A citation of where `f` holds, preferring a premise, then the innermost hypothesis,
    /// then the latest result.
    fn holding_cite(&self, f: &Formula) -> Option<Citation> {
        let sources = self.index.get(f)?;
        let pick = sources
            .iter()
            .find(|s| matches!(s, Source::Premise(_)))
            .or_else(|| {
                sources
                    .iter()
                    .rev()
                    .find(|s| matches!(s, Source::Hypothesis(_)))
            })
            .or_else(|| sources.last())?;
        Some(Citation {
            source: *pick,
            name: None,
            claim: Claim::Formula(f.clone()),
            asserted: true,
            role: CiteRole::Holding,
        })
    }

    fn push_step(
        &mut self,
        role: StepRole,
        span: &Range<usize>,
        name: Option<String>,
        claim: Option<Formula>,
        cites: Vec<Citation>,
    ) -> usize {
        let index = self.plan.steps.len();
        let active = self
            .path
            .iter()
            .filter_map(|b| self.plan.blocks.get(*b).and_then(|b| b.hypothesis))
            .collect();
        self.plan.steps.push(PlanStep {
            index,
            role,
            span: self.region.raw_span(span),
            text: self.region.text_of(span),
            line: self.region.line(span.start),
            label: None,
            name,
            claim: claim.map(Claim::Formula),
            cites,
            scope_path: self.path.clone(),
            active_hypotheses: active,
        });
        index
    }

    fn new_block(&mut self, hypothesis: Option<usize>, complete: bool) -> usize {
        let id = self.plan.blocks.len();
        self.plan.blocks.push(PlanBlock {
            id,
            parent: self.path.last().copied(),
            hypothesis,
            complete,
            argument: false,
        });
        id
    }

    /// Builds the deductions a step is given as arguments, each in an argument block of
    /// its own and in the step's scope; returns their conclusions and concluding steps.
    /// `None` when the reader stopped inside one.
    fn argument_blocks(&mut self, subs: &[&Element]) -> Option<Vec<(Option<Formula>, usize)>> {
        let mut out = Vec::new();
        for e in subs {
            let complete = match e {
                Element::Block(b) => b.complete,
                Element::Assume(a) => a.body.complete,
                Element::Step(_) | Element::Define(_) => true,
            };
            let id = self.new_block(None, complete);
            if let Some(b) = self.plan.blocks.get_mut(id) {
                b.argument = true;
            }
            self.path.push(id);
            let mark = self.mark();
            let built = self.element(e);
            self.restore(mark);
            self.path.pop();
            match built? {
                Built::Concluded { formula, step } => out.push((formula, step)),
                Built::Defined { .. } => return None,
            }
        }
        Some(out)
    }

    /// Returns `None` when the reader stopped inside the element.
    fn element(&mut self, e: &Element) -> Option<Built> {
        match e {
            Element::Step(s) => {
                let built = self.argument_blocks(&subproofs(s))?;
                let mut written: Vec<&Formula> = Vec::new();
                if let Some((f, _)) = &s.claimed {
                    written.push(f);
                }
                let (args, is_from_false) = match &s.body {
                    StepBody::Rule { args, rule, .. } => (args, rule == "from-false"),
                    StepBody::From { justifiers } => (justifiers, false),
                };
                for a in args {
                    if let Arg::Formula(f) = a {
                        written.push(f);
                    }
                }
                let mut cites = self.name_cites(&written);
                for a in args {
                    if let Arg::Formula(f) = a
                        && let Ok(r) = resolve(f, self, "an argument")
                        && let Some(c) = self.holding_cite(&r)
                        && !cites.contains(&c)
                    {
                        cites.push(c);
                    }
                }
                if is_from_false && let Some(c) = self.holding_cite(&Formula::False) {
                    cites.push(c);
                }
                let mut subs = Vec::new();
                for (formula, step) in built {
                    if let Some(f) = formula {
                        cites.push(Citation {
                            source: Source::Step(step),
                            name: None,
                            claim: Claim::Formula(f.clone()),
                            asserted: true,
                            role: CiteRole::Argument,
                        });
                        subs.push(f);
                    }
                }
                let claim = match check_primitive(s, self.dialect, self, &subs) {
                    Ok(c) => Some(c),
                    Err(_) => s
                        .claimed
                        .as_ref()
                        .and_then(|(f, _)| resolve(f, self, "the stated conclusion").ok()),
                };
                let i = self.push_step(
                    StepRole::Primitive,
                    &s.span,
                    s.name.as_ref().map(|n| n.text.clone()),
                    claim.clone(),
                    cites,
                );
                Some(Built::Concluded {
                    formula: claim,
                    step: i,
                })
            }
            Element::Define(d) => {
                let cites = self.name_cites(&[&d.formula]);
                let formula = check_define(&d.formula, self).ok();
                self.push_step(
                    StepRole::Definition,
                    &d.span,
                    Some(d.name.text.clone()),
                    formula.clone(),
                    cites,
                );
                Some(Built::Defined { formula })
            }
            Element::Block(b) => {
                let id = self.new_block(None, b.complete);
                self.path.push(id);
                let mark = self.mark();
                let out = self.items(b);
                self.restore(mark);
                self.path.pop();
                let (formula, step) = out?;
                Some(Built::Concluded { formula, step })
            }
            Element::Assume(a) => {
                let cites = self.name_cites(&[&a.hyp]);
                let hyp = check_hypothesis(&a.hyp, self).ok();
                let open = self.push_step(
                    StepRole::OpenHypothesis(a.kind),
                    &a.header,
                    a.name.as_ref().map(|n| n.text.clone()),
                    hyp.clone(),
                    cites.clone(),
                );
                let h = self.plan.hypotheses.len();
                let block = self.new_block(Some(h), a.body.complete);
                self.plan.hypotheses.push(PlanHypothesis {
                    id: h,
                    name: a.hyp_name.as_ref().map(|n| n.text.clone()),
                    formula: hyp.clone(),
                    block,
                    open_step: open,
                });
                self.path.push(block);
                let mark = self.mark();
                if let Some(f) = &hyp {
                    self.assert(f.clone(), Source::Hypothesis(h));
                    if let Some(n) = &a.hyp_name {
                        let from = self.plan.steps.len();
                        self.bind(&n.text, f.clone(), Source::Hypothesis(h), from);
                    }
                }
                let out = self.items(&a.body);
                self.restore(mark);
                self.path.pop();
                let (body, last) = out?;
                let mut close_cites = cites;
                if let Some(f) = &hyp {
                    close_cites.push(Citation {
                        source: Source::Hypothesis(h),
                        name: None,
                        claim: Claim::Formula(f.clone()),
                        asserted: true,
                        role: CiteRole::Hypothesis,
                    });
                }
                if let Some(q) = &body {
                    close_cites.push(Citation {
                        source: Source::Step(last),
                        name: None,
                        claim: Claim::Formula(q.clone()),
                        asserted: true,
                        role: CiteRole::BodyConclusion,
                    });
                }
                let claim = match (&hyp, &body) {
                    (Some(p), Some(q)) => close(a.kind, p, q).ok(),
                    _ => None,
                };
                let i = self.push_step(
                    StepRole::Close(a.kind),
                    &a.header,
                    a.name.as_ref().map(|n| n.text.clone()),
                    claim.clone(),
                    close_cites,
                );
                Some(Built::Concluded {
                    formula: claim,
                    step: i,
                })
            }
        }
    }

    /// The elements of a block; returns its conclusion and the step that concluded it.
    fn items(&mut self, b: &BlockNode) -> Option<(Option<Formula>, usize)> {
        let mut last = None;
        for e in &b.elements {
            match self.element(e)? {
                Built::Concluded { formula, step } => {
                    if let Some(f) = &formula {
                        if let Some(n) = e.name() {
                            let text = n.text.clone();
                            let from = self.plan.steps.len();
                            self.bind(&text, f.clone(), Source::Step(step), from);
                        }
                        self.assert(f.clone(), Source::Step(step));
                    }
                    last = Some((formula, step));
                }
                Built::Defined { formula } => {
                    if let (Some(f), Some(n)) = (formula, e.name()) {
                        let text = n.text.clone();
                        let from = self.plan.steps.len();
                        let step = from.saturating_sub(1);
                        self.bind(&text, f, Source::Step(step), from);
                    }
                    last = None;
                }
            }
        }
        if !b.complete {
            return None;
        }
        last
    }
}

fn plan_fault(region: &Region, fault: &SyntaxFault, before_step: usize) -> PlanFault {
    PlanFault {
        before_step,
        at: region.raw(fault.at),
        line: region.line(fault.at),
        public_reason: fault.public.to_string(),
        detailed_reason: fault.detail.clone(),
        over_limit: fault.over_limit,
    }
}

fn empty_plan(language: Language, problem_text: &str, problem: &Problem) -> ProofPlan {
    ProofPlan {
        language,
        problem_text: problem_text.to_string(),
        problem: problem.clone(),
        steps: Vec::new(),
        blocks: Vec::new(),
        hypotheses: Vec::new(),
        bindings: Vec::new(),
        conclusion: None,
        fault: None,
    }
}

/// Cuts an NDL / NDL_f proof.
pub(crate) fn build_ndl(
    language: Language,
    problem_text: &str,
    problem: &Problem,
    region: &Region,
    parsed: &Parsed,
    dialect: Dialect,
) -> ProofPlan {
    let mut b = NdlBuilder {
        region,
        problem,
        dialect,
        atoms: problem.declared_atoms(),
        plan: empty_plan(language, problem_text, problem),
        path: Vec::new(),
        names: Vec::new(),
        base: Vec::new(),
        index: HashMap::new(),
    };
    for (i, p) in problem.premises.iter().enumerate() {
        b.bind(&p.name, p.formula.clone(), Source::Premise(i), 0);
        b.assert(p.formula.clone(), Source::Premise(i));
    }
    if let Some(root) = &parsed.root
        && let Some(Built::Concluded { step, .. }) = b.element(root)
    {
        b.plan.conclusion = Some(step);
    }
    if let Some(f) = &parsed.fault {
        let n = b.plan.steps.len();
        b.plan.fault = Some(plan_fault(region, f, n));
    }
    b.plan
}

/// Cuts a Hilbert proof: one step per numbered line.
pub(crate) fn build_hilbert(
    problem_text: &str,
    problem: &Problem,
    region: &Region,
    parsed: &ParsedLines,
) -> ProofPlan {
    let mut plan = empty_plan(Language::Hilbert, problem_text, problem);
    for (i, line) in parsed.lines.iter().enumerate() {
        let mut cites = Vec::new();
        match &line.just {
            Justification::Premise(name) => {
                if let Some((k, p)) = problem.premise_named(name) {
                    cites.push(Citation {
                        source: Source::Premise(k),
                        name: Some(name.clone()),
                        claim: Claim::Formula(p.formula.clone()),
                        asserted: true,
                        role: CiteRole::Justification,
                    });
                }
            }
            Justification::Axiom { name, .. } => {
                if let Some((k, a)) = problem
                    .axioms
                    .iter()
                    .enumerate()
                    .find(|(_, a)| a.name == *name)
                {
                    cites.push(Citation {
                        source: Source::Axiom(k),
                        name: Some(name.clone()),
                        claim: Claim::Formula(a.schema.clone()),
                        asserted: false,
                        role: CiteRole::Justification,
                    });
                }
            }
            Justification::Mp(lines) => {
                for n in lines {
                    let earlier = parsed
                        .lines
                        .iter()
                        .take(i)
                        .enumerate()
                        .rev()
                        .find(|(_, l)| l.number == *n);
                    if let Some((k, l)) = earlier
                        && !cites.iter().any(|c: &Citation| c.source == Source::Step(k))
                    {
                        cites.push(Citation {
                            source: Source::Step(k),
                            name: Some(n.to_string()),
                            claim: Claim::Formula(l.formula.clone()),
                            asserted: true,
                            role: CiteRole::EarlierLine,
                        });
                    }
                }
            }
            Justification::Unknown(_) => {}
        }
        plan.steps.push(PlanStep {
            index: i,
            role: StepRole::HilbertLine,
            span: region.raw_span(&line.span),
            text: region.text_of(&line.span),
            line: region.line(line.span.start),
            label: Some(line.number.to_string()),
            name: None,
            claim: Some(Claim::Formula(line.formula.clone())),
            cites,
            scope_path: Vec::new(),
            active_hypotheses: Vec::new(),
        });
    }
    plan.conclusion = plan.steps.len().checked_sub(1);
    if let Some(f) = &parsed.fault {
        plan.fault = Some(plan_fault(region, f, plan.steps.len()));
    }
    plan
}

/// Cuts an equational proof: the starting line, then one step per rewrite.
pub(crate) fn build_equational(
    problem_text: &str,
    problem: &Problem,
    region: &Region,
    parsed: &ParsedChain,
) -> ProofPlan {
    let mut plan = empty_plan(Language::Equational, problem_text, problem);
    if let Some((span, t)) = &parsed.start {
        plan.steps.push(PlanStep {
            index: 0,
            role: StepRole::EqStart,
            span: region.raw_span(span),
            text: region.text_of(span),
            line: region.line(span.start),
            label: None,
            name: None,
            claim: Some(Claim::Term(t.clone())),
            cites: Vec::new(),
            scope_path: Vec::new(),
            active_hypotheses: Vec::new(),
        });
        let mut prev = t.clone();
        for line in &parsed.steps {
            let index = plan.steps.len();
            let mut cites = vec![Citation {
                source: Source::Step(index.saturating_sub(1)),
                name: None,
                claim: plan
                    .steps
                    .last()
                    .and_then(|s| s.claim.clone())
                    .unwrap_or_else(|| Claim::Term(prev.clone())),
                asserted: true,
                role: CiteRole::PreviousTerm,
            }];
            for name in &line.cites {
                if let Some((k, e)) = problem
                    .identities
                    .iter()
                    .enumerate()
                    .find(|(_, e)| e.name == *name)
                    && !cites.iter().any(|c| c.source == Source::Identity(k))
                {
                    cites.push(Citation {
                        source: Source::Identity(k),
                        name: Some(name.clone()),
                        claim: Claim::Equation(e.lhs.clone(), e.rhs.clone()),
                        asserted: false,
                        role: CiteRole::Identity,
                    });
                }
            }
            plan.steps.push(PlanStep {
                index,
                role: StepRole::EqStep,
                span: region.raw_span(&line.span),
                text: region.text_of(&line.span),
                line: region.line(line.span.start),
                label: None,
                name: None,
                claim: Some(Claim::Equation(prev.clone(), line.term.clone())),
                cites,
                scope_path: Vec::new(),
                active_hypotheses: Vec::new(),
            });
            prev = line.term.clone();
        }
    }
    plan.conclusion = plan.steps.len().checked_sub(1);
    if let Some(f) = &parsed.fault {
        plan.fault = Some(plan_fault(region, f, plan.steps.len()));
    }
    plan
}

// ---------------------------------------------------------------------------------------
// Structure

impl ProofPlan {
    /// The last step whose scope path contains `block`.
    fn final_step_of(&self, block: usize) -> Option<usize> {
        self.steps
            .iter()
            .rev()
            .find(|s| s.scope_path.contains(&block))
            .map(|s| s.index)
    }

    /// The outermost block a step's result is available in (`None`: the whole proof).
    fn export_of(&self, k: usize) -> Option<Option<usize>> {
        let step = self.steps.get(k)?;
        let mut block = step.scope_path.last().copied();
        while let Some(b) = block {
            let info = self.blocks.get(b)?;
            if info.hypothesis.is_some() || !info.complete || self.final_step_of(b) != Some(k) {
                break;
            }
            block = info.parent;
        }
        Some(block)
    }

    /// The blocks from `k`'s innermost scope out to its export scope.
    fn export_chain(&self, k: usize) -> Vec<Option<usize>> {
        let mut out = Vec::new();
        let Some(step) = self.steps.get(k) else {
            return out;
        };
        let Some(export) = self.export_of(k) else {
            return out;
        };
        let mut block = step.scope_path.last().copied();
        loop {
            out.push(block);
            if block == export {
                break;
            }
            match block.and_then(|b| self.blocks.get(b)) {
                Some(info) => block = info.parent,
                None => break,
            }
        }
        out
    }

    fn in_path(&self, block: Option<usize>, t: usize) -> bool {
        match block {
            None => true,
            Some(b) => self.steps.get(t).is_some_and(|s| s.scope_path.contains(&b)),
        }
    }

    fn source_claim(&self, source: Source) -> Option<(Claim, bool)> {
        match source {
            Source::Premise(i) => self
                .problem
                .premises
                .get(i)
                .map(|p| (Claim::Formula(p.formula.clone()), true)),
            Source::Hypothesis(h) => self
                .hypotheses
                .get(h)
                .and_then(|h| h.formula.clone())
                .map(|f| (Claim::Formula(f), true)),
            Source::Step(k) => self
                .steps
                .get(k)
                .and_then(|s| s.claim.clone().map(|c| (c, s.role != StepRole::Definition))),
            Source::Axiom(i) => self
                .problem
                .axioms
                .get(i)
                .map(|a| (Claim::Formula(a.schema.clone()), false)),
            Source::Identity(i) => self
                .problem
                .identities
                .get(i)
                .map(|e| (Claim::Equation(e.lhs.clone(), e.rhs.clone()), false)),
        }
    }

    fn visible(&self, source: Source, t: usize) -> bool {
        match source {
            Source::Premise(i) => i < self.problem.premises.len(),
            Source::Axiom(i) => i < self.problem.axioms.len(),
            Source::Identity(i) => i < self.problem.identities.len(),
            Source::Hypothesis(h) => self
                .hypotheses
                .get(h)
                .is_some_and(|h| h.open_step < t && self.in_path(Some(h.block), t)),
            Source::Step(k) => {
                k < t
                    && match self.language {
                        Language::Hilbert | Language::Equational => true,
                        Language::Ndl | Language::NdlF => {
                            self.export_of(k).is_some_and(|e| self.in_path(e, t))
                                && self
                                    .through_arguments(k)
                                    .iter()
                                    .all(|b| self.arguments_of(t).contains(b))
                        }
                    }
            }
        }
    }

    /// The argument blocks a result of step `k` leaves on its way to its export scope.
    fn through_arguments(&self, k: usize) -> Vec<usize> {
        let chain = self.export_chain(k);
        let n = chain.len().saturating_sub(1);
        chain
            .into_iter()
            .take(n)
            .flatten()
            .filter(|b| self.blocks.get(*b).is_some_and(|info| info.argument))
            .collect()
    }

    /// The argument blocks of step `t`: the argument blocks directly inside `t`'s block
    /// whose steps run, without a step between, up to `t`; in order.
    fn arguments_of(&self, t: usize) -> Vec<usize> {
        let Some(step) = self.steps.get(t) else {
            return Vec::new();
        };
        let depth = step.scope_path.len();
        let parent = step.scope_path.last().copied();
        let mut out: Vec<usize> = Vec::new();
        for j in (0..t).rev() {
            let Some(s) = self.steps.get(j) else { break };
            let arg = s
                .scope_path
                .get(depth)
                .copied()
                .filter(|_| s.scope_path.starts_with(&step.scope_path))
                .filter(|b| {
                    self.blocks
                        .get(*b)
                        .is_some_and(|info| info.argument && info.parent == parent)
                });
            match arg {
                Some(b) => {
                    if out.last() != Some(&b) {
                        out.push(b);
                    }
                }
                None => break,
            }
        }
        out.reverse();
        out
    }
}

/// An upper bound on the work [`check_structure`] does on `plan`, in units of one scope
/// lookup or one formula node: every citation, binding and step looks its source's scope
/// up against every step at every depth (`export_of`, `export_chain`, `arguments_of`:
/// steps x depth^2 each, a few times), a named citation scans the bindings, and a citation
/// copies and compares its source's claim. Computed from the plan's sizes alone, in
/// linear time, so a seat can refuse a plan before running the check
/// ([`super::limits::STRUCTURE_WORK_BUDGET`]).
pub fn structure_work(plan: &ProofPlan) -> u64 {
    let n = |x: usize| u64::try_from(x).unwrap_or(u64::MAX);
    let steps = n(plan.steps.len()).saturating_add(1);
    let depth = plan
        .steps
        .iter()
        .map(|s| n(s.scope_path.len()))
        .max()
        .unwrap_or(0)
        .saturating_add(1);
    let cites = plan
        .steps
        .iter()
        .fold(0u64, |a, s| a.saturating_add(n(s.cites.len())));
    let bindings = n(plan.bindings.len());
    let formula_nodes = |f: &Formula| n(f.measure().0);
    let claim_nodes = |c: &Claim| match c {
        Claim::Formula(f) => formula_nodes(f),
        Claim::Term(_) | Claim::Equation(..) => 1,
    };
    let largest_claim = plan
        .steps
        .iter()
        .filter_map(|s| s.claim.as_ref().map(claim_nodes))
        .chain(
            plan.problem
                .premises
                .iter()
                .map(|p| formula_nodes(&p.formula)),
        )
        .chain(plan.problem.axioms.iter().map(|a| formula_nodes(&a.schema)))
        .chain(
            plan.hypotheses
                .iter()
                .filter_map(|h| h.formula.as_ref().map(formula_nodes)),
        )
        .max()
        .unwrap_or(1)
        .max(1);
    let lookup = steps.saturating_mul(depth).saturating_mul(depth);
    cites
        .saturating_add(bindings)
        .saturating_add(steps)
        .saturating_mul(lookup)
        .saturating_mul(4)
        .saturating_add(cites.saturating_mul(bindings))
        .saturating_add(cites.saturating_mul(largest_claim).saturating_mul(2))
}

/// Checks the facts of a plan that no single seat sees. A plan made by [`super::steps`]
/// passes; a plan whose citations reach into closed blocks, present a hypothesis as a
/// premise, or misstate scopes or names does not.
pub fn check_structure(plan: &ProofPlan) -> Result<(), StructureError> {
    if Problem::parse(&plan.problem_text) != plan.problem {
        return Err(StructureError::Problem);
    }
    for (i, b) in plan.blocks.iter().enumerate() {
        if b.id != i || b.parent.is_some_and(|p| p >= i) {
            return Err(StructureError::ScopePath(i));
        }
    }
    for (i, h) in plan.hypotheses.iter().enumerate() {
        let ok = h.id == i
            && plan
                .blocks
                .get(h.block)
                .is_some_and(|b| b.hypothesis == Some(i))
            && plan.steps.get(h.open_step).is_some_and(|s| {
                matches!(s.role, StepRole::OpenHypothesis(_))
                    && s.claim == h.formula.clone().map(Claim::Formula)
                    && plan.blocks.get(h.block).and_then(|b| b.parent)
                        == s.scope_path.last().copied()
            });
        if !ok {
            return Err(StructureError::Block(h.open_step));
        }
    }
    for (i, b) in plan.bindings.iter().enumerate() {
        let ok = match b.source {
            Source::Premise(k) => {
                b.block.is_none()
                    && plan
                        .problem
                        .premises
                        .get(k)
                        .is_some_and(|p| p.name == b.name)
            }
            Source::Hypothesis(h) => plan.hypotheses.get(h).is_some_and(|h| {
                Some(h.block) == b.block && h.name.as_deref() == Some(b.name.as_str())
            }),
            Source::Step(k) => {
                k < b.from_step
                    && plan.steps.get(k).is_some_and(|s| {
                        if s.role == StepRole::Definition {
                            s.scope_path.last().copied() == b.block
                        } else {
                            plan.export_chain(k).contains(&b.block)
                        }
                    })
            }
            Source::Axiom(_) | Source::Identity(_) => false,
        };
        if !ok {
            return Err(StructureError::Binding(i));
        }
    }
    for (t, s) in plan.steps.iter().enumerate() {
        if s.index != t {
            return Err(StructureError::StepOrder(t));
        }
        let mut parent = None;
        for &b in &s.scope_path {
            match plan.blocks.get(b) {
                Some(info) if info.parent == parent => parent = Some(b),
                _ => return Err(StructureError::ScopePath(t)),
            }
        }
        let active: Vec<usize> = s
            .scope_path
            .iter()
            .filter_map(|b| plan.blocks.get(*b).and_then(|b| b.hypothesis))
            .collect();
        if active != s.active_hypotheses {
            return Err(StructureError::ActiveHypotheses(t));
        }
        for c in &s.cites {
            let closing = matches!(c.role, CiteRole::Hypothesis | CiteRole::BodyConclusion);
            if !closing && !plan.visible(c.source, t) {
                return Err(StructureError::NotVisible { step: t });
            }
            match plan.source_claim(c.source) {
                Some((claim, asserted)) if claim == c.claim && asserted == c.asserted => {}
                _ => return Err(StructureError::ClaimMismatch { step: t }),
            }
            if let Some(name) = &c.name {
                let name_ok = match c.role {
                    CiteRole::Name => plan
                        .bindings
                        .iter()
                        .filter(|b| b.name == *name && b.from_step <= t && plan.in_path(b.block, t))
                        .max_by_key(|b| b.from_step)
                        .is_some_and(|b| b.source == c.source),
                    CiteRole::EarlierLine => {
                        matches!(c.source, Source::Step(k) if plan.steps.get(k).and_then(|s| s.label.as_deref()) == Some(name.as_str()))
                    }
                    CiteRole::Justification => match c.source {
                        Source::Premise(k) => plan
                            .problem
                            .premises
                            .get(k)
                            .is_some_and(|p| p.name == *name),
                        Source::Axiom(k) => {
                            plan.problem.axioms.get(k).is_some_and(|a| a.name == *name)
                        }
                        _ => false,
                    },
                    CiteRole::Identity => {
                        matches!(c.source, Source::Identity(k) if plan.problem.identities.get(k).is_some_and(|e| e.name == *name))
                    }
                    _ => false,
                };
                if !name_ok {
                    return Err(StructureError::NameMismatch { step: t });
                }
            }
            let role_ok = match c.role {
                CiteRole::PreviousTerm => c.source == Source::Step(t.saturating_sub(1)) && t > 0,
                CiteRole::Hypothesis | CiteRole::BodyConclusion => {
                    matches!(s.role, StepRole::Close(_))
                }
                CiteRole::EarlierLine => matches!(c.source, Source::Step(_)),
                CiteRole::Identity => matches!(c.source, Source::Identity(_)),
                CiteRole::Justification => {
                    matches!(c.source, Source::Premise(_) | Source::Axiom(_))
                }
                CiteRole::Holding => c.asserted,
                CiteRole::Argument => c.asserted && matches!(c.source, Source::Step(_)),
                CiteRole::Name => true,
            };
            if !role_ok {
                return Err(StructureError::NotVisible { step: t });
            }
        }
        // a step's argument citations are exactly the conclusions of its argument blocks
        // (a block whose conclusion is unknown is not cited; its own steps fail first)
        let cited: Vec<Source> = s
            .cites
            .iter()
            .filter(|c| c.role == CiteRole::Argument)
            .map(|c| c.source)
            .collect();
        if !cited.is_empty() {
            let blocks: Vec<Source> = plan
                .arguments_of(t)
                .into_iter()
                .filter_map(|b| plan.final_step_of(b))
                .filter(|k| plan.steps.get(*k).is_some_and(|f| f.claim.is_some()))
                .map(Source::Step)
                .collect();
            if cited != blocks || !matches!(s.role, StepRole::Primitive) {
                return Err(StructureError::Block(t));
            }
        }
        if let StepRole::Close(_) = s.role {
            // the closing step discharges the hypothesis of the block that ends just before it
            let Some(prev) = t.checked_sub(1).and_then(|p| plan.steps.get(p)) else {
                return Err(StructureError::Block(t));
            };
            let body_block = prev
                .scope_path
                .get(s.scope_path.len())
                .copied()
                .filter(|_| prev.scope_path.starts_with(&s.scope_path));
            let Some(block) = body_block else {
                return Err(StructureError::Block(t));
            };
            let Some(h) = plan.blocks.get(block).and_then(|b| b.hypothesis) else {
                return Err(StructureError::Block(t));
            };
            let hyp_ok = s
                .cites
                .iter()
                .filter(|c| c.role == CiteRole::Hypothesis)
                .all(|c| c.source == Source::Hypothesis(h))
                && s.cites.iter().any(|c| c.role == CiteRole::Hypothesis)
                    == plan.hypotheses.get(h).is_some_and(|h| h.formula.is_some());
            let last = plan.final_step_of(block);
            let body_ok = s
                .cites
                .iter()
                .filter(|c| c.role == CiteRole::BodyConclusion)
                .all(|c| Some(c.source) == last.map(Source::Step));
            if !hyp_ok || !body_ok {
                return Err(StructureError::Block(t));
            }
        }
    }
    match plan.language {
        Language::Ndl | Language::NdlF => {
            if plan.fault.is_none() {
                let Some(k) = plan.conclusion else {
                    return Err(StructureError::Conclusion);
                };
                if Some(k) != plan.steps.len().checked_sub(1) {
                    return Err(StructureError::Conclusion);
                }
                if plan.export_of(k) != Some(None) {
                    return Err(StructureError::OpenHypothesis);
                }
            }
        }
        Language::Hilbert | Language::Equational => {
            if plan.conclusion != plan.steps.len().checked_sub(1) {
                return Err(StructureError::Conclusion);
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Verdict

/// The verdict on the whole proof from the verdicts of its steps (in plan order) and the
/// plan's structure: the first invalid step, else the syntax error that stopped the
/// reader, else whether the conclusion is exactly the goal.
pub fn verdict_from_steps(plan: &ProofPlan, verdicts: &[StepVerdict]) -> Verdict {
    let limit = plan
        .fault
        .as_ref()
        .map_or(plan.steps.len(), |f| f.before_step.min(plan.steps.len()));
    for (i, step) in plan.steps.iter().enumerate().take(limit) {
        match verdicts.get(i) {
            Some(StepVerdict::Valid) => {}
            Some(StepVerdict::Invalid {
                kind,
                public_reason,
                detailed_reason,
            }) => {
                return Verdict::Fail(Failure {
                    kind: *kind,
                    step: Some(i),
                    line: step.line,
                    span: Some(step.span.clone()),
                    public_reason: public_reason.clone(),
                    detailed_reason: detailed_reason.clone(),
                });
            }
            Some(StepVerdict::Abstain { reason }) => {
                return Verdict::Undecided {
                    reason: reason.clone(),
                    step: Some(i),
                };
            }
            None => {
                return Verdict::Undecided {
                    reason: "a step has no verdict".into(),
                    step: Some(i),
                };
            }
        }
    }
    if let Some(f) = &plan.fault {
        if f.over_limit {
            return Verdict::Undecided {
                reason: f.public_reason.clone(),
                step: None,
            };
        }
        return Verdict::Fail(Failure {
            kind: ErrorKind::Syntax,
            step: None,
            line: f.line,
            span: Some(f.at..f.at),
            public_reason: f.public_reason.clone(),
            detailed_reason: f.detailed_reason.clone(),
        });
    }
    let conclusion = plan
        .conclusion
        .and_then(|k| plan.steps.get(k))
        .and_then(|s| s.claim.clone());
    let start = plan.steps.first().and_then(|s| s.claim.clone());
    goal_verdict(
        plan.language,
        &plan.problem,
        conclusion.as_ref(),
        start.as_ref(),
    )
}

/// Whether the proof's conclusion is the problem's goal.
pub(crate) fn goal_verdict(
    language: Language,
    problem: &Problem,
    conclusion: Option<&Claim>,
    start: Option<&Claim>,
) -> Verdict {
    let wrong = |detail: String| {
        Verdict::Fail(Failure {
            kind: ErrorKind::Logic,
            step: None,
            line: 0,
            span: None,
            public_reason: "the proof does not derive its goal".into(),
            detailed_reason: detail,
        })
    };
    match language {
        Language::Equational => {
            let Some(Claim::Equation(l, r)) = &problem.goal else {
                return Verdict::Pass;
            };
            let first = match start {
                Some(Claim::Term(t)) => Some(t),
                _ => None,
            };
            let last = match conclusion {
                Some(Claim::Equation(_, t)) | Some(Claim::Term(t)) => Some(t),
                _ => None,
            };
            match (first, last) {
                (Some(a), Some(b)) if a == l && b == r => Verdict::Pass,
                (Some(a), Some(b)) => wrong(format!(
                    "the proof shows {a} = {b}, but the goal is {l} = {r}"
                )),
                _ => wrong("the proof has no conclusion".into()),
            }
        }
        _ => {
            let Some(goal) = problem.goal_formula() else {
                return wrong("the problem states no goal".into());
            };
            match conclusion {
                Some(Claim::Formula(c)) if c == goal => Verdict::Pass,
                Some(c) => wrong(format!(
                    "the expected conclusion was {goal}, but the derived conclusion was {c}"
                )),
                None => wrong(format!(
                    "the proof derives no conclusion; the goal was {goal}"
                )),
            }
        }
    }
}
