//! What a check says: the [`Language`] a proof is written in, the [`ProofReport`] of a whole
//! proof, the [`Failure`] at its earliest wrong step with ProofGrid's error kinds, and a
//! seat's [`StepVerdict`] on one step.

use std::{fmt, ops::Range};

use serde::{Deserialize, Serialize};

use super::{formula::Formula, term::Term};

/// The proof languages of ProofGrid.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Language {
    /// NDL: natural deduction with 24 inference rules, `assume` and `suppose-absurd`.
    Ndl,
    /// NDL_f: natural deduction whose only primitive step is `p from p1, ..., pn` (n <= 5).
    NdlF,
    /// Hilbert-style: three axiom schemas, premises and modus ponens over numbered lines.
    Hilbert,
    /// Equational logic: chains of term rewrites by named identities.
    Equational,
}

impl fmt::Display for Language {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Language::Ndl => "NDL",
            Language::NdlF => "NDL_f",
            Language::Hilbert => "Hilbert",
            Language::Equational => "equational",
        })
    }
}

/// ProofGrid's three error kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum ErrorKind {
    /// Text that is not in the language: unparsable, undefined names, unknown rules.
    Syntax,
    /// A rule applied to the wrong number of arguments or to arguments of the wrong form.
    Type,
    /// An argument that does not hold, a conclusion that does not follow or is not the one
    /// advertised, or a proof that does not derive its goal.
    Logic,
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ErrorKind::Syntax => "syntax",
            ErrorKind::Type => "type",
            ErrorKind::Logic => "logic",
        })
    }
}

/// What a step concludes (or, for the first line of an equational proof, states).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Claim {
    /// A propositional formula (NDL, NDL_f, Hilbert).
    Formula(Formula),
    /// The starting term of an equational proof.
    Term(Term),
    /// `lhs = rhs`: one equational step, from the previous term to this step's term.
    Equation(Term, Term),
}

impl fmt::Display for Claim {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Claim::Formula(p) => write!(f, "{p}"),
            Claim::Term(t) => write!(f, "{t}"),
            Claim::Equation(l, r) => write!(f, "{l} = {r}"),
        }
    }
}

/// The earliest error of a proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Failure {
    /// ProofGrid's kind of the error.
    pub kind: ErrorKind,
    /// Index of the failing step in the proof's [`super::ProofPlan`]; `None` for a fault
    /// between steps (a syntax error) or a proof that does not derive its goal.
    pub step: Option<usize>,
    /// 1-based line of the error within the proof (the extracted proof text); 0 when no
    /// single line is at fault, as ProofGrid reports a wrong final conclusion.
    pub line: usize,
    /// Byte span in the text given to the checker, when a place is at fault.
    pub span: Option<Range<usize>>,
    /// A reason naming the rule, the kind of error and argument positions; it quotes no
    /// formula, term or name from the proof.
    pub public_reason: String,
    /// A reason that may quote formulas.
    pub detailed_reason: String,
}

/// The verdict on a whole proof.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Verdict {
    /// Every step checks and the proof derives exactly the goal.
    Pass,
    /// The earliest error.
    Fail(Failure),
    /// A hard limit (size, nesting, SAT budget) was reached before a verdict: the checker
    /// refuses to judge rather than guess.
    Undecided {
        /// Why.
        reason: String,
        /// The step that hit the limit, if one did.
        step: Option<usize>,
    },
}

/// A seat's verdict on one step.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum StepVerdict {
    /// The step is correct in its context.
    Valid,
    /// The step is wrong.
    Invalid {
        /// ProofGrid's kind of the error.
        kind: ErrorKind,
        /// A reason that quotes nothing from the proof.
        public_reason: String,
        /// A reason that may quote formulas.
        detailed_reason: String,
    },
    /// No verdict (a limit was reached, or the document does not fit the language).
    Abstain {
        /// Why.
        reason: String,
    },
}

/// The report of [`super::check_proof`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProofReport {
    /// The language the proof was read in.
    pub language: Language,
    /// The verdict.
    pub verdict: Verdict,
    /// How many primitive steps the proof has (as far as it could be read).
    pub steps: usize,
    /// What the proof concludes, when it could be evaluated to the end.
    pub conclusion: Option<Claim>,
}

impl ProofReport {
    /// Whether the verdict is [`Verdict::Pass`].
    pub fn passed(&self) -> bool {
        matches!(self.verdict, Verdict::Pass)
    }

    /// The failure, if the verdict is [`Verdict::Fail`].
    pub fn failure(&self) -> Option<&Failure> {
        match &self.verdict {
            Verdict::Fail(f) => Some(f),
            _ => None,
        }
    }
}

/// An error of one step, before it is placed in the proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Fault {
    pub(crate) kind: ErrorKind,
    pub(crate) public: String,
    pub(crate) detail: String,
}

impl Fault {
    pub(crate) fn new(
        kind: ErrorKind,
        public: impl Into<String>,
        detail: impl Into<String>,
    ) -> Self {
        Fault {
            kind,
            public: public.into(),
            detail: detail.into(),
        }
    }

    pub(crate) fn syntax(public: impl Into<String>, detail: impl Into<String>) -> Self {
        Fault::new(ErrorKind::Syntax, public, detail)
    }

    pub(crate) fn typ(public: impl Into<String>, detail: impl Into<String>) -> Self {
        Fault::new(ErrorKind::Type, public, detail)
    }

    pub(crate) fn logic(public: impl Into<String>, detail: impl Into<String>) -> Self {
        Fault::new(ErrorKind::Logic, public, detail)
    }
}

/// Why checking one step stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The step is wrong.
    Fault(Fault),
    /// A limit was reached; no verdict.
    Undecided(String),
}

impl From<Fault> for Stop {
    fn from(f: Fault) -> Self {
        Stop::Fault(f)
    }
}
