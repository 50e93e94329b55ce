//! Equational proofs as the prompts write them: a first line `s = t0`, then one line per
//! step `[=] t_i by E1, ..., Ek`, with `#` comments.
//!
//! Each step is checked by [`super::eq`]'s rewriting relation against the identities it
//! cites, from the previous line's term.

use std::ops::Range;

use super::{
    eq::{Signature, check_rewrite},
    lex::{Tok, Token},
    limits::MAX_STEPS,
    ndl::syntax::SyntaxFault,
    problem::{Identity, Problem},
    report::{Fault, Stop},
    term::{Term, TermParser},
};

/// One step line.
#[derive(Debug, Clone)]
pub(crate) struct EqLine {
    pub(crate) span: Range<usize>,
    pub(crate) term: Term,
    pub(crate) cites: Vec<String>,
}

/// What the reader made of an equational proof.
#[derive(Debug, Clone)]
pub(crate) struct ParsedChain {
    pub(crate) start: Option<(Range<usize>, Term)>,
    pub(crate) steps: Vec<EqLine>,
    pub(crate) fault: Option<SyntaxFault>,
}

/// Whether the tokens at `pos` begin an equational proof (`s = ...`).
pub(crate) fn starts_chain(toks: &[Token], pos: usize) -> bool {
    matches!(
        (
            toks.get(pos).map(|t| &t.tok),
            toks.get(pos.saturating_add(1)).map(|t| &t.tok),
        ),
        (Some(Tok::Ident(s)), Some(Tok::Equals)) if s == "s"
    )
}

fn term_fault(e: super::term::TermError) -> SyntaxFault {
    SyntaxFault {
        at: e.at,
        public: e.public,
        detail: e.detail,
        over_limit: e.over_limit,
    }
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

    fn term(&mut self) -> Result<Term, SyntaxFault> {
        let mut p = TermParser::at(self.toks, self.pos, self.text.len());
        let t = p.term().map_err(term_fault)?;
        self.pos = p.pos;
        Ok(t)
    }

    fn newline_before_here(&self) -> bool {
        let prev_end = self.last_end();
        self.text
            .get(prev_end..self.here())
            .is_some_and(|gap| gap.contains('\n'))
    }

    fn fault(&self, public: &'static str, detail: &str) -> SyntaxFault {
        SyntaxFault {
            at: self.here(),
            public,
            detail: detail.into(),
            over_limit: false,
        }
    }

    /// `[=] term by E1, ..., Ek`
    fn step(&mut self) -> Result<EqLine, SyntaxFault> {
        if matches!(self.peek(), Some(Tok::Equals)) {
            self.pos = self.pos.saturating_add(1);
        }
        let start = self.here();
        let term = self.term()?;
        if !matches!(self.peek(), Some(Tok::Ident(w)) if w.eq_ignore_ascii_case("by")) {
            return Err(self.fault(
                "an equational step must cite identities with by",
                "the term is not followed by by",
            ));
        }
        self.pos = self.pos.saturating_add(1);
        let mut cites = Vec::new();
        loop {
            let Some(Tok::Ident(name)) = self.peek() else {
                return Err(self.fault("expected an identity name after by", "no identity name"));
            };
            cites.push(name.clone());
            self.pos = self.pos.saturating_add(1);
            if matches!(self.peek(), Some(Tok::Comma)) {
                self.pos = self.pos.saturating_add(1);
            } else {
                break;
            }
        }
        Ok(EqLine {
            span: start..self.last_end(),
            term,
            cites,
        })
    }
}

/// Reads one step's own text, `[=] term by E1, ..., Ek`.
pub(crate) fn parse_step(toks: &[Token], text: &str) -> Result<EqLine, SyntaxFault> {
    let mut r = Reader { toks, text, pos: 0 };
    let line = r.step()?;
    if r.peek().is_some() {
        return Err(r.fault(
            "unexpected text after the step",
            "the step's text continues after the step",
        ));
    }
    Ok(line)
}

/// Reads an equational proof from the tokens of `text` (which start at `s =`).
pub(crate) fn parse(toks: &[Token], text: &str) -> ParsedChain {
    let mut r = Reader { toks, text, pos: 0 };
    let mut out = ParsedChain {
        start: None,
        steps: Vec::new(),
        fault: None,
    };
    if !starts_chain(toks, 0) {
        out.fault = Some(r.fault(
            "an equational proof starts with s = term",
            "no starting term",
        ));
        return out;
    }
    r.pos = 2;
    let start = r.here();
    match r.term() {
        Ok(t) => out.start = Some((start..r.last_end(), t)),
        Err(f) => {
            out.fault = Some(f);
            return out;
        }
    }
    while let Some(tok) = r.peek() {
        let is_step = match tok {
            Tok::Equals => true,
            Tok::Ident(w) => w.starts_with(|c: char| c.is_ascii_lowercase()),
            _ => false,
        };
        if !is_step {
            if r.newline_before_here() {
                break;
            }
            out.fault = Some(r.fault(
                "unexpected text after a step",
                "a step is followed by more text",
            ));
            return out;
        }
        if out.steps.len() >= MAX_STEPS {
            out.fault = Some(SyntaxFault {
                at: r.here(),
                public: "the proof has more steps than the checker reads",
                detail: "too many steps".into(),
                over_limit: true,
            });
            return out;
        }
        if !matches!(tok, Tok::Equals) && !r.newline_before_here() {
            out.fault = Some(r.fault(
                "unexpected text after a step",
                "a step is followed by more text",
            ));
            return out;
        }
        match r.step() {
            Ok(s) => out.steps.push(s),
            Err(f) => {
                out.fault = Some(f);
                return out;
            }
        }
    }
    out
}

/// Judges the starting term.
pub(crate) fn check_start(t: &Term, problem: &Problem) -> Result<(), Stop> {
    let mut sig = Signature::of_identities(&problem.identities).unwrap_or_default();
    sig.check(t)?;
    Ok(())
}

/// Judges one step from `prev`.
pub(crate) fn check_step(prev: &Term, line: &EqLine, problem: &Problem) -> Result<(), Stop> {
    let mut ids: Vec<&Identity> = Vec::with_capacity(line.cites.len());
    for name in &line.cites {
        match problem.identities.iter().find(|e| e.name == *name) {
            Some(e) => ids.push(e),
            None => {
                return Err(Fault::syntax(
                    "cites an identity the problem does not state",
                    format!("{name} is not one of the identities"),
                )
                .into());
            }
        }
    }
    let mut sig = Signature::of_identities(&problem.identities).unwrap_or_default();
    sig.check(prev)?;
    sig.check(&line.term)?;
    check_rewrite(prev, &line.term, &ids)
}

/// The whole-chain checker: the last term, or the first failing step (0 is the start line).
pub(crate) fn evaluate(
    chain: &ParsedChain,
    problem: &Problem,
) -> Result<Option<Term>, (usize, Stop)> {
    let Some((_, start)) = &chain.start else {
        return Ok(None);
    };
    check_start(start, problem).map_err(|s| (0, s))?;
    let mut prev = start;
    for (i, line) in chain.steps.iter().enumerate() {
        check_step(prev, line, problem).map_err(|s| (i.saturating_add(1), s))?;
        prev = &line.term;
    }
    Ok(Some(prev.clone()))
}
