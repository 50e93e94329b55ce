//! Hilbert-style proofs: numbered lines `k. s, justification;` whose justification is a
//! premise (`Premise1`), an axiom instance under a stated substitution
//! (`Axiom2, p := A, q := (A ==> A), r := A`) or modus ponens on two earlier lines
//! (`mp, j, k`: line j is `(p ==> q)`, line k is `p`, this line is `q`).
//!
//! The language has only `~` and `==>`. Lines are separated by `;` (as the prompt writes
//! them) or by line breaks; their numbers start at 0 or 1 and count up by one.

use std::ops::Range;

use super::{
    formula::{Formula, FormulaParser},
    lex::{Tok, Token},
    limits::MAX_STEPS,
    ndl::syntax::SyntaxFault,
    problem::Problem,
    report::{Fault, Stop},
};

/// How a line is justified.
#[derive(Debug, Clone)]
pub(crate) enum Justification {
    Premise(String),
    Axiom {
        name: String,
        subst: Vec<(String, Formula)>,
    },
    Mp(Vec<u64>),
    Unknown(String),
}

/// One numbered line.
#[derive(Debug, Clone)]
pub(crate) struct Line {
    pub(crate) span: Range<usize>,
    pub(crate) number: u64,
    pub(crate) formula: Formula,
    pub(crate) just: Justification,
}

/// What the reader made of a Hilbert proof.
#[derive(Debug, Clone)]
pub(crate) struct ParsedLines {
    pub(crate) lines: Vec<Line>,
    pub(crate) fault: Option<SyntaxFault>,
}

/// Whether the tokens at `pos` begin a numbered line: `k.`, then (up to the next `;` or
/// numbered line) a comma followed by a justification word (`Premise...`, `Axiom...` or
/// `mp`). A numbered sentence of prose ("1. Assume A.") is not one; a line whose formula is
/// garbled still is, so the reader can name its error.
pub(crate) fn starts_line(toks: &[Token], pos: usize) -> bool {
    let tok = |i: usize| toks.get(i).map(|t| &t.tok);
    if !matches!(
        (tok(pos), tok(pos.saturating_add(1))),
        (Some(Tok::Num(_)), Some(Tok::Dot))
    ) {
        return false;
    }
    let mut i = pos.saturating_add(2);
    while let Some(t) = tok(i) {
        match t {
            Tok::Semi => return false,
            Tok::Num(_) if matches!(tok(i.saturating_add(1)), Some(Tok::Dot)) => return false,
            Tok::Comma => {
                if matches!(
                    tok(i.saturating_add(1)),
                    Some(Tok::Ident(w)) if w.starts_with("Premise") || w.starts_with("Axiom") || w == "mp"
                ) {
                    return true;
                }
            }
            _ => {}
        }
        i = i.saturating_add(1);
    }
    false
}

struct Reader<'a> {
    toks: &'a [Token],
    text: &'a str,
    pos: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn here(&self) -> usize {
        self.toks
            .get(self.pos)
            .map_or(self.text.len(), |t| t.span.start)
    }

    fn last_end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.span.end)
    }

    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    fn fault(&self, public: &'static str, detail: &str) -> SyntaxFault {
        SyntaxFault {
            at: self.here(),
            public,
            detail: detail.into(),
            over_limit: false,
        }
    }

    fn expect_comma(&mut self, what: &'static str) -> Result<(), SyntaxFault> {
        if matches!(self.peek(), Some(Tok::Comma)) {
            self.bump();
            Ok(())
        } else {
            Err(self.fault(what, "a comma is missing"))
        }
    }

    fn formula(&mut self) -> Result<Formula, SyntaxFault> {
        let mut fp = FormulaParser::at(self.toks, self.pos, self.text.len());
        let f = fp.top(true).map_err(|e| SyntaxFault {
            at: e.at,
            public: e.public,
            detail: e.detail,
            over_limit: e.over_limit,
        })?;
        self.pos = fp.pos;
        Ok(f)
    }

    fn line(&mut self) -> Result<Line, SyntaxFault> {
        let start = self.here();
        let Some(Tok::Num(number)) = self.peek() else {
            return Err(self.fault(
                "expected a line number",
                "a line must start with its number",
            ));
        };
        let number = *number;
        self.bump();
        if !matches!(self.peek(), Some(Tok::Dot)) {
            return Err(self.fault(
                "expected a period after the line number",
                "no period after the line number",
            ));
        }
        self.bump();
        let formula = self.formula()?;
        self.expect_comma("expected a comma after the formula")?;
        let Some(Tok::Ident(word)) = self.peek() else {
            return Err(self.fault(
                "expected a justification",
                "no justification after the formula",
            ));
        };
        let word = word.clone();
        self.bump();
        let just = if word == "mp" {
            let mut cites = Vec::new();
            while matches!(self.peek(), Some(Tok::Comma)) {
                self.bump();
                match self.peek() {
                    Some(Tok::Num(n)) => {
                        cites.push(*n);
                        self.bump();
                    }
                    _ => {
                        return Err(self.fault(
                            "expected a line number after mp",
                            "mp cites something other than a line number",
                        ));
                    }
                }
            }
            Justification::Mp(cites)
        } else if word.starts_with("Axiom") {
            let mut subst = Vec::new();
            while matches!(self.peek(), Some(Tok::Comma)) {
                self.bump();
                let Some(Tok::Ident(letter)) = self.peek() else {
                    return Err(self.fault(
                        "expected a substitution",
                        "a substitution must read letter := formula",
                    ));
                };
                let letter = letter.clone();
                self.bump();
                if !matches!(self.peek(), Some(Tok::Assign)) {
                    return Err(self.fault(
                        "expected := in a substitution",
                        "a substitution must read letter := formula",
                    ));
                }
                self.bump();
                subst.push((letter, self.formula()?));
            }
            Justification::Axiom { name: word, subst }
        } else if word.starts_with("Premise") {
            Justification::Premise(word)
        } else {
            Justification::Unknown(word)
        };
        Ok(Line {
            span: start..self.last_end(),
            number,
            formula,
            just,
        })
    }

    fn newline_before(&self, pos: usize) -> bool {
        let prev_end = self.last_end();
        let next = self.toks.get(pos).map_or(self.text.len(), |t| t.span.start);
        self.text
            .get(prev_end..next)
            .is_some_and(|gap| gap.contains('\n'))
    }
}

/// Reads numbered lines from the tokens of `text`.
pub(crate) fn parse(toks: &[Token], text: &str) -> ParsedLines {
    let mut r = Reader { toks, text, pos: 0 };
    let mut lines = Vec::new();
    loop {
        if lines.len() >= MAX_STEPS {
            return ParsedLines {
                lines,
                fault: Some(SyntaxFault {
                    at: r.here(),
                    public: "the proof has more lines than the checker reads",
                    detail: "too many lines".into(),
                    over_limit: true,
                }),
            };
        }
        match r.line() {
            Ok(l) => lines.push(l),
            Err(fault) => {
                return ParsedLines {
                    lines,
                    fault: Some(fault),
                };
            }
        }
        let semi = matches!(r.peek(), Some(Tok::Semi));
        if semi {
            r.bump();
        }
        if r.peek().is_none() {
            break;
        }
        let numbered = matches!(
            (r.peek(), toks.get(r.pos.saturating_add(1)).map(|t| &t.tok)),
            (Some(Tok::Num(_)), Some(Tok::Dot))
        );
        if numbered {
            if semi || r.newline_before(r.pos) {
                continue;
            }
            return ParsedLines {
                lines,
                fault: Some(r.fault(
                    "missing semicolon between lines",
                    "two lines follow each other without a separator",
                )),
            };
        }
        if r.newline_before(r.pos) {
            // prose after the proof
            break;
        }
        return ParsedLines {
            lines,
            fault: Some(r.fault(
                "unexpected text after a line",
                "the justification is followed by more text",
            )),
        };
    }
    ParsedLines { lines, fault: None }
}

fn subst_schema(schema: &Formula, subst: &[(String, Formula)]) -> Formula {
    match schema {
        Formula::Atom(a) => subst
            .iter()
            .find(|(l, _)| l == a)
            .map_or_else(|| schema.clone(), |(_, f)| f.clone()),
        Formula::Not(p) => Formula::negate(subst_schema(p, subst)),
        Formula::Implies(p, q) => Formula::implies(subst_schema(p, subst), subst_schema(q, subst)),
        Formula::And(p, q) => Formula::and(subst_schema(p, subst), subst_schema(q, subst)),
        Formula::Or(p, q) => Formula::or(subst_schema(p, subst), subst_schema(q, subst)),
        Formula::Iff(p, q) => Formula::iff(subst_schema(p, subst), subst_schema(q, subst)),
        Formula::True | Formula::False => schema.clone(),
    }
}

/// Judges one line. `prev` is the previous line's number; `earlier(n)` the formula of an
/// earlier line numbered `n`.
pub(crate) fn check_line(
    line: &Line,
    prev: Option<u64>,
    earlier: &dyn Fn(u64) -> Option<Formula>,
    problem: &Problem,
) -> Result<Formula, Stop> {
    let expected_ok = match prev {
        None => line.number <= 1,
        Some(p) => p.checked_add(1) == Some(line.number),
    };
    if !expected_ok {
        return Err(Fault::syntax(
            "line numbers must start at 0 or 1 and count up by one",
            format!(
                "line {} does not follow {}",
                line.number,
                prev.map_or("the start".to_string(), |p| p.to_string())
            ),
        )
        .into());
    }
    if !line.formula.is_implicational() {
        return Err(Fault::syntax(
            "a formula uses a connective outside the Hilbert language (only ~ and ==>)",
            format!("{} uses a connective other than ~ and ==>", line.formula),
        )
        .into());
    }
    match &line.just {
        Justification::Unknown(word) => Err(Fault::syntax(
            "unknown justification (expected a premise, an axiom or mp)",
            format!("{word} is not PremiseN, AxiomN or mp"),
        )
        .into()),
        Justification::Premise(name) => {
            let Some((_, p)) = problem.premise_named(name) else {
                return Err(Fault::syntax(
                    "cites a premise the problem does not state",
                    format!("{name} is not a premise of the problem"),
                )
                .into());
            };
            if p.formula != line.formula {
                return Err(Fault::logic(
                    "premise: the line is not the cited premise",
                    format!("{name} is {}, not {}", p.formula, line.formula),
                )
                .into());
            }
            Ok(line.formula.clone())
        }
        Justification::Axiom { name, subst } => {
            let Some(axiom) = problem.axioms.iter().find(|a| a.name == *name) else {
                return Err(Fault::syntax(
                    "cites an axiom that does not exist",
                    format!("{name} is not one of the axioms"),
                )
                .into());
            };
            let mut letters = Vec::new();
            axiom.schema.atoms_into(&mut letters);
            for (i, (l, v)) in subst.iter().enumerate() {
                if !letters.contains(l) {
                    return Err(Fault::typ(
                        format!("{name}: the substitution names a letter the axiom does not have"),
                        format!("{name} has no letter {l}"),
                    )
                    .into());
                }
                if subst.iter().take(i).any(|(m, _)| m == l) {
                    return Err(Fault::typ(
                        format!("{name}: the substitution assigns a letter twice"),
                        format!("{l} is assigned twice"),
                    )
                    .into());
                }
                if !v.is_implicational() {
                    return Err(Fault::syntax(
                        "a formula uses a connective outside the Hilbert language (only ~ and ==>)",
                        format!("{v} uses a connective other than ~ and ==>"),
                    )
                    .into());
                }
            }
            if let Some(missing) = letters.iter().find(|l| !subst.iter().any(|(m, _)| m == *l)) {
                return Err(Fault::typ(
                    format!("{name}: the substitution leaves a letter of the axiom unassigned"),
                    format!("{missing} is not assigned"),
                )
                .into());
            }
            let instance = subst_schema(&axiom.schema, subst);
            if instance != line.formula {
                return Err(Fault::logic(
                    format!("{name}: the line is not the axiom under the stated substitution"),
                    format!("the substitution gives {instance}, not {}", line.formula),
                )
                .into());
            }
            Ok(line.formula.clone())
        }
        Justification::Mp(cites) => {
            let [j, k] = cites.as_slice() else {
                return Err(Fault::typ(
                    format!(
                        "mp: wrong number of cited lines (expects 2, given {})",
                        cites.len()
                    ),
                    format!("mp cites {} lines", cites.len()),
                )
                .into());
            };
            let Some(first) = earlier(*j) else {
                return Err(Fault::logic(
                    "mp: the first cited line is not an earlier line",
                    format!("line {j} is not an earlier line"),
                )
                .into());
            };
            let Some(second) = earlier(*k) else {
                return Err(Fault::logic(
                    "mp: the second cited line is not an earlier line",
                    format!("line {k} is not an earlier line"),
                )
                .into());
            };
            let Formula::Implies(p, q) = &first else {
                return Err(Fault::typ(
                    "mp: the first cited line is not a conditional",
                    format!("line {j}, {first}, is not a conditional"),
                )
                .into());
            };
            if **p != second {
                return Err(Fault::typ(
                    "mp: the second cited line is not the antecedent of the first",
                    format!("line {k}, {second}, is not the antecedent of {first}"),
                )
                .into());
            }
            if **q != line.formula {
                return Err(Fault::logic(
                    "mp: the line is not the consequent of the first cited line",
                    format!("mp on lines {j} and {k} gives {q}, not {}", line.formula),
                )
                .into());
            }
            Ok(line.formula.clone())
        }
    }
}

/// The whole-proof Hilbert checker: returns the last line's formula, or the first failing
/// line's index with its error.
pub(crate) fn evaluate(
    lines: &[Line],
    problem: &Problem,
) -> Result<Option<Formula>, (usize, Stop)> {
    let mut done: Vec<(u64, Formula)> = Vec::new();
    let mut prev = None;
    for (i, line) in lines.iter().enumerate() {
        let earlier = |n: u64| {
            done.iter()
                .rev()
                .find(|(m, _)| *m == n)
                .map(|(_, f)| f.clone())
        };
        let f = check_line(line, prev, &earlier, problem).map_err(|s| (i, s))?;
        done.push((line.number, f));
        prev = Some(line.number);
    }
    Ok(done.pop().map(|(_, f)| f))
}
