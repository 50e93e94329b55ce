//! The NDL and NDL_f proof reader: blocks, `assume` / `suppose-absurd`, names, `BY`
//! annotations, rule applications, `from` steps and definitions (`I := p`).
//!
//! The reader accepts both dialects' step forms; the checker refuses the foreign one at
//! its step, so earlier steps are still judged first. A rule's argument may be a whole
//! deduction, as in Athena, where NDL proofs are evaluated: `assume p { ... }`,
//! `suppose-absurd p { ... }` (bare or in parentheses) or a block `{ ... }`; the checker
//! evaluates it where the rule stands and passes its conclusion. A rule application written
//! as an argument (`mp on h, (left-and on g)`) is not a deduction in Athena's grammar; the
//! reader reads it so the checker can name that step a syntax error instead of failing the
//! whole text. On a syntax error the reader returns the tree built so far (blocks left open
//! are marked incomplete) together with the fault.

use std::ops::Range;

use super::super::{
    formula::{Formula, FormulaParser, is_reserved},
    lex::{Tok, Token},
    limits::MAX_BLOCK_DEPTH,
};

/// A name written in the proof, with where it stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Name {
    pub(crate) text: String,
    pub(crate) span: Range<usize>,
}

/// One element of a proof block, or the whole proof.
#[derive(Debug, Clone)]
pub(crate) enum Element {
    Step(StepNode),
    Define(DefineNode),
    Block(BlockNode),
    Assume(AssumeNode),
}

/// A primitive step: a rule application or a `from` step.
#[derive(Debug, Clone)]
pub(crate) struct StepNode {
    pub(crate) span: Range<usize>,
    pub(crate) name: Option<Name>,
    /// The conclusion advertised after `BY` (for rule applications) or before `from`.
    pub(crate) claimed: Option<(Formula, Range<usize>)>,
    pub(crate) body: StepBody,
}

/// What a primitive step applies.
#[derive(Debug, Clone)]
pub(crate) enum StepBody {
    /// `R on p1, ..., pn` (NDL).
    Rule { rule: String, args: Vec<Arg> },
    /// `p from p1, ..., pn` (NDL_f).
    From { justifiers: Vec<Arg> },
}

/// One argument of a step.
#[derive(Debug, Clone)]
pub(crate) enum Arg {
    Formula(Formula),
    /// A deduction given as the argument (`assume p { ... }`, `suppose-absurd p { ... }` or
    /// a block): evaluated where the step stands, it passes its conclusion.
    Subproof(Box<Element>),
    /// A rule application written where a formula or a deduction must stand (not NDL).
    Application,
}

/// `I := p`: names a formula without asserting it.
#[derive(Debug, Clone)]
pub(crate) struct DefineNode {
    pub(crate) span: Range<usize>,
    pub(crate) name: Name,
    pub(crate) formula: Formula,
}

/// `{ D1; ...; Dn }`
#[derive(Debug, Clone)]
pub(crate) struct BlockNode {
    pub(crate) span: Range<usize>,
    pub(crate) name: Option<Name>,
    pub(crate) elements: Vec<Element>,
    /// False when a syntax error stopped the reader inside this block.
    pub(crate) complete: bool,
}

/// Which hypothetical construct.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum HypKind {
    /// `assume p { ... }` concludes `(p ==> q)`.
    Assume,
    /// `suppose-absurd p { ... }` concludes `(~ p)` from a body that derives `false`.
    SupposeAbsurd,
}

/// `[I :=] assume [J :=] p { ... }`
#[derive(Debug, Clone)]
pub(crate) struct AssumeNode {
    /// From the element's name (or keyword) to the end of the hypothesis formula.
    pub(crate) header: Range<usize>,
    pub(crate) name: Option<Name>,
    pub(crate) kind: HypKind,
    pub(crate) hyp_name: Option<Name>,
    pub(crate) hyp: Formula,
    pub(crate) body: BlockNode,
}

impl Element {
    pub(crate) fn name(&self) -> Option<&Name> {
        match self {
            Element::Step(s) => s.name.as_ref(),
            Element::Define(d) => Some(&d.name),
            Element::Block(b) => b.name.as_ref(),
            Element::Assume(a) => a.name.as_ref(),
        }
    }
}

/// A syntax error: where it is, and the element it stopped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SyntaxFault {
    pub(crate) at: usize,
    pub(crate) public: &'static str,
    pub(crate) detail: String,
    pub(crate) over_limit: bool,
}

/// What the reader made of a proof text.
#[derive(Debug, Clone)]
pub(crate) struct Parsed {
    pub(crate) root: Option<Element>,
    pub(crate) fault: Option<SyntaxFault>,
}

struct Partial {
    element: Option<Box<Element>>,
    fault: SyntaxFault,
}

impl From<SyntaxFault> for Partial {
    fn from(fault: SyntaxFault) -> Self {
        Partial {
            element: None,
            fault,
        }
    }
}

fn is_kw(tok: Option<&Tok>, kw: &str) -> bool {
    matches!(tok, Some(Tok::Ident(w)) if w.eq_ignore_ascii_case(kw))
}

fn is_exact(tok: Option<&Tok>, kw: &str) -> bool {
    matches!(tok, Some(Tok::Ident(w)) if w == kw)
}

/// Reads one NDL / NDL_f proof from the tokens of `text`.
pub(crate) fn parse(toks: &[Token], text_len: usize) -> Parsed {
    let mut p = Parser {
        toks,
        pos: 0,
        end: text_len,
        depth: 0,
    };
    match p.element() {
        Err(partial) => Parsed {
            root: partial.element.map(|e| *e),
            fault: Some(partial.fault),
        },
        Ok(root) => {
            if let Element::Define(d) = &root {
                let fault = p.fault(
                    d.span.start,
                    "a definition cannot be the last element of a proof",
                    "the proof ends with a definition, which concludes nothing".into(),
                );
                return Parsed {
                    root: None,
                    fault: Some(fault),
                };
            }
            let fault = p.trailing();
            Parsed {
                root: Some(root),
                fault,
            }
        }
    }
}

/// Whether the tokens at `pos` begin an NDL element (used to find where a proof starts and
/// to tell trailing prose from a trailing step).
pub(crate) fn starts_element(toks: &[Token], pos: usize) -> bool {
    let tok = toks.get(pos).map(|t| &t.tok);
    let next = toks.get(pos.saturating_add(1)).map(|t| &t.tok);
    match tok {
        Some(Tok::LBrace) => true,
        Some(Tok::Ident(w)) if w == "assume" || w == "suppose-absurd" => true,
        Some(Tok::Ident(w)) if !is_reserved(w) && matches!(next, Some(Tok::Assign)) => true,
        Some(Tok::Ident(w)) if !is_reserved(w) && is_kw(next, "on") => true,
        Some(Tok::Ident(_) | Tok::LParen) => {
            let mut fp = FormulaParser::at(toks, pos, usize::MAX);
            match fp.top_ndl() {
                Ok(_) => {
                    let after = toks.get(fp.pos).map(|t| &t.tok);
                    is_kw(after, "by") || is_kw(after, "from") || garbled_step(toks, pos)
                }
                // a formula too large to read still starts a step: the reader refuses it
                Err(e) if e.over_limit => true,
                Err(_) => garbled_step(toks, pos),
            }
        }
        Some(Tok::Tilde) => garbled_step(toks, pos),
        _ => false,
    }
}

/// A step whose formula does not read but whose shape does: an upper-case `BY`, a rule
/// name and `on` before the next `;` or brace. Prose rarely has that shape, and reading
/// such a line as a step lets the checker name its syntax error.
fn garbled_step(toks: &[Token], pos: usize) -> bool {
    let mut i = pos;
    while let Some(t) = toks.get(i).map(|t| &t.tok) {
        match t {
            Tok::Semi | Tok::LBrace | Tok::RBrace => return false,
            Tok::Ident(w) if w == "BY" => {
                let next = toks.get(i.saturating_add(1)).map(|t| &t.tok);
                let after = toks.get(i.saturating_add(2)).map(|t| &t.tok);
                return matches!(next, Some(Tok::Ident(r)) if !is_reserved(r))
                    && is_kw(after, "on");
            }
            _ => {}
        }
        i = i.saturating_add(1);
    }
    false
}

/// Reads exactly one element (a step or a definition) from the tokens of a step's own text.
pub(crate) fn parse_single(toks: &[Token], text_len: usize) -> Result<Element, SyntaxFault> {
    let mut p = Parser {
        toks,
        pos: 0,
        end: text_len,
        depth: 0,
    };
    let e = p.element().map_err(|partial| partial.fault)?;
    if p.peek().is_some() {
        return Err(p.fault(
            p.here(),
            "unexpected text after the step",
            "the step's text continues after the step".into(),
        ));
    }
    Ok(e)
}

/// The header of a hypothetical proof: `[I :=] assume|suppose-absurd [J :=] p`.
#[derive(Debug, Clone)]
pub(crate) struct Header {
    pub(crate) kind: HypKind,
    pub(crate) hyp: Formula,
}

/// Reads a header from the tokens of its text (as a plan step shows it).
pub(crate) fn parse_header(toks: &[Token], text_len: usize) -> Result<Header, SyntaxFault> {
    let mut p = Parser {
        toks,
        pos: 0,
        end: text_len,
        depth: 0,
    };
    p.name_prefix();
    let kind = if is_exact(p.peek(), "assume") {
        HypKind::Assume
    } else if is_exact(p.peek(), "suppose-absurd") {
        HypKind::SupposeAbsurd
    } else {
        return Err(p.fault(
            p.here(),
            "expected assume or suppose-absurd",
            "the header does not open a hypothetical proof".into(),
        ));
    };
    p.bump();
    p.name_prefix();
    let (hyp, _) = p.formula()?;
    if p.peek().is_some() {
        return Err(p.fault(
            p.here(),
            "unexpected text after the hypothesis",
            "the header continues after the hypothesis".into(),
        ));
    }
    Ok(Header { kind, hyp })
}

struct Parser<'a> {
    toks: &'a [Token],
    pos: usize,
    end: usize,
    depth: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn peek_at(&self, ahead: usize) -> Option<&Tok> {
        self.toks
            .get(self.pos.saturating_add(ahead))
            .map(|t| &t.tok)
    }

    fn here(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.span.start)
    }

    /// End of the last token consumed.
    fn last_end(&self) -> usize {
        self.pos
            .checked_sub(1)
            .and_then(|i| self.toks.get(i))
            .map_or(0, |t| t.span.end)
    }

    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    fn fault(&self, at: usize, public: &'static str, detail: String) -> SyntaxFault {
        SyntaxFault {
            at,
            public,
            detail,
            over_limit: false,
        }
    }

    fn formula(&mut self) -> Result<(Formula, Range<usize>), SyntaxFault> {
        let start = self.here();
        let mut fp = FormulaParser::at(self.toks, self.pos, self.end);
        match fp.top_ndl() {
            Ok(f) => {
                self.pos = fp.pos;
                Ok((f, start..self.last_end()))
            }
            Err(e) => Err(SyntaxFault {
                at: e.at,
                public: e.public,
                detail: e.detail,
                over_limit: e.over_limit,
            }),
        }
    }

    fn name_prefix(&mut self) -> Option<Name> {
        if let (Some(Tok::Ident(w)), Some(Tok::Assign)) = (self.peek(), self.peek_at(1))
            && !is_reserved(w)
        {
            let text = w.clone();
            let span = self.toks.get(self.pos).map_or(0..0, |t| t.span.clone());
            self.bump();
            self.bump();
            return Some(Name { text, span });
        }
        None
    }

    fn element(&mut self) -> Result<Element, Partial> {
        let start = self.here();
        let name = self.name_prefix();
        match self.peek() {
            Some(Tok::LBrace) => self.block(start, name).map(Element::Block),
            Some(Tok::Ident(w)) if w == "assume" || w == "suppose-absurd" => {
                self.assume(start, name)
            }
            Some(Tok::Ident(w)) if !is_reserved(w) && is_kw(self.peek_at(1), "on") => {
                let body = self.rule_application()?;
                Ok(Element::Step(StepNode {
                    span: start..self.last_end(),
                    name,
                    claimed: None,
                    body,
                }))
            }
            None => Err(self
                .fault(
                    start,
                    "expected a proof step",
                    "the text ends where a proof step is expected".into(),
                )
                .into()),
            _ => {
                let (f, fspan) = self.formula()?;
                if is_kw(self.peek(), "by") {
                    self.bump();
                    if matches!(self.peek(), Some(Tok::LBrace))
                        || is_exact(self.peek(), "assume")
                        || is_exact(self.peek(), "suppose-absurd")
                    {
                        return Err(self
                            .fault(
                                self.here(),
                                "only an inference rule can follow BY",
                                "a compound proof follows BY".into(),
                            )
                            .into());
                    }
                    let body = self.rule_application()?;
                    Ok(Element::Step(StepNode {
                        span: start..self.last_end(),
                        name,
                        claimed: Some((f, fspan)),
                        body,
                    }))
                } else if is_kw(self.peek(), "from") {
                    self.bump();
                    let justifiers = self.args()?;
                    Ok(Element::Step(StepNode {
                        span: start..self.last_end(),
                        name,
                        claimed: Some((f, fspan)),
                        body: StepBody::From { justifiers },
                    }))
                } else if let Some(name) = name {
                    Ok(Element::Define(DefineNode {
                        span: start..self.last_end(),
                        name,
                        formula: f,
                    }))
                } else {
                    Err(self
                        .fault(
                            self.here(),
                            "expected BY, from or a rule application after a formula",
                            "a formula stands alone where a proof step is expected".into(),
                        )
                        .into())
                }
            }
        }
    }

    /// `R on a1, ..., an`, with the rule name at the current token.
    fn rule_application(&mut self) -> Result<StepBody, Partial> {
        let Some(Tok::Ident(rule)) = self.peek() else {
            return Err(self
                .fault(
                    self.here(),
                    "expected an inference rule name",
                    "no rule name where one is expected".into(),
                )
                .into());
        };
        let rule = rule.clone();
        self.bump();
        if !is_kw(self.peek(), "on") {
            return Err(self
                .fault(
                    self.here(),
                    "expected 'on' after the rule name",
                    "the rule name is not followed by 'on'".into(),
                )
                .into());
        }
        self.bump();
        let args = self.args()?;
        Ok(StepBody::Rule { rule, args })
    }

    fn args(&mut self) -> Result<Vec<Arg>, Partial> {
        let mut args = vec![self.arg()?];
        while matches!(self.peek(), Some(Tok::Comma)) {
            self.bump();
            args.push(self.arg()?);
        }
        Ok(args)
    }

    fn arg(&mut self) -> Result<Arg, Partial> {
        let inline_rule = |tok: Option<&Tok>, next: Option<&Tok>| {
            matches!(tok, Some(Tok::Ident(w)) if !is_reserved(w)) && is_kw(next, "on")
        };
        let hypothetical =
            |tok: Option<&Tok>| is_exact(tok, "assume") || is_exact(tok, "suppose-absurd");
        if matches!(self.peek(), Some(Tok::LBrace)) || hypothetical(self.peek()) {
            let start = self.here();
            let e = self.nested(|p| p.element())?;
            return Ok(Arg::Subproof(Box::new(match e {
                Element::Block(b) => Element::Block(BlockNode {
                    span: start..b.span.end,
                    ..b
                }),
                other => other,
            })));
        }
        if inline_rule(self.peek(), self.peek_at(1)) {
            self.nested(|p| p.element().map(|_| ()))?;
            return Ok(Arg::Application);
        }
        if matches!(self.peek(), Some(Tok::LParen))
            && (inline_rule(self.peek_at(1), self.peek_at(2))
                || hypothetical(self.peek_at(1))
                || matches!(self.peek_at(1), Some(Tok::LBrace)))
        {
            let open = self.here();
            self.bump();
            let braced = matches!(self.peek(), Some(Tok::LBrace));
            let application = inline_rule(self.peek(), self.peek_at(1));
            let e = self.nested(|p| p.element())?;
            if !matches!(self.peek(), Some(Tok::RParen)) {
                return Err(self
                    .fault(
                        self.here(),
                        "unbalanced parentheses around a subproof",
                        "expected a closing parenthesis".into(),
                    )
                    .into());
            }
            self.bump();
            if application {
                return Ok(Arg::Application);
            }
            if braced {
                // `({ ... })` applies the block's conclusion to no arguments
                return Err(self
                    .fault(
                        open,
                        "a block in parentheses is read as a procedure application",
                        "a proof block is wrapped in parentheses; the checker applies its conclusion to no arguments and refuses it".into(),
                    )
                    .into());
            }
            return Ok(Arg::Subproof(Box::new(e)));
        }
        let (f, _) = self.formula()?;
        Ok(Arg::Formula(f))
    }

    fn nested<T>(
        &mut self,
        inner: impl FnOnce(&mut Self) -> Result<T, Partial>,
    ) -> Result<T, Partial> {
        self.depth = self.depth.saturating_add(1);
        if self.depth > MAX_BLOCK_DEPTH {
            return Err(SyntaxFault {
                at: self.here(),
                public: "proof blocks nest too deeply",
                detail: "proof blocks nest too deeply".into(),
                over_limit: true,
            }
            .into());
        }
        let out = inner(self);
        self.depth = self.depth.saturating_sub(1);
        out
    }

    fn assume(&mut self, start: usize, name: Option<Name>) -> Result<Element, Partial> {
        let kind = if is_exact(self.peek(), "assume") {
            HypKind::Assume
        } else {
            HypKind::SupposeAbsurd
        };
        self.bump();
        let hyp_name = self.name_prefix();
        let (hyp, _) = self.formula()?;
        let header = start..self.last_end();
        if !matches!(self.peek(), Some(Tok::LBrace)) {
            return Err(self
                .fault(
                    self.here(),
                    "expected a block after the hypothesis",
                    "the hypothesis is not followed by an opening brace".into(),
                )
                .into());
        }
        let body_start = self.here();
        match self.block(body_start, None) {
            Ok(body) => Ok(Element::Assume(AssumeNode {
                header,
                name,
                kind,
                hyp_name,
                hyp,
                body,
            })),
            Err(partial) => {
                let body = match partial.element.map(|e| *e) {
                    Some(Element::Block(b)) => b,
                    _ => BlockNode {
                        span: body_start..self.here(),
                        name: None,
                        elements: Vec::new(),
                        complete: false,
                    },
                };
                Err(Partial {
                    element: Some(Box::new(Element::Assume(AssumeNode {
                        header,
                        name,
                        kind,
                        hyp_name,
                        hyp,
                        body,
                    }))),
                    fault: partial.fault,
                })
            }
        }
    }

    /// `{ D1; ...; Dn }` with the opening brace at the current token.
    fn block(&mut self, start: usize, name: Option<Name>) -> Result<BlockNode, Partial> {
        self.bump();
        let mut node = BlockNode {
            span: start..start,
            name,
            elements: Vec::new(),
            complete: false,
        };
        self.depth = self.depth.saturating_add(1);
        let out = self.block_items(&mut node);
        self.depth = self.depth.saturating_sub(1);
        match out {
            Ok(()) => {
                node.complete = true;
                node.span = start..self.last_end();
                Ok(node)
            }
            Err(fault) => {
                node.span = start..self.here();
                Err(Partial {
                    element: Some(Box::new(Element::Block(node))),
                    fault,
                })
            }
        }
    }

    fn block_items(&mut self, node: &mut BlockNode) -> Result<(), SyntaxFault> {
        if self.depth > MAX_BLOCK_DEPTH {
            return Err(SyntaxFault {
                at: self.here(),
                public: "proof blocks nest too deeply",
                detail: "proof blocks nest too deeply".into(),
                over_limit: true,
            });
        }
        if matches!(self.peek(), Some(Tok::RBrace)) {
            return Err(self.fault(
                self.here(),
                "a proof block cannot be empty",
                "the block closes before any step".into(),
            ));
        }
        loop {
            match self.element() {
                Ok(e) => node.elements.push(e),
                Err(partial) => {
                    if let Some(e) = partial.element {
                        node.elements.push(*e);
                    }
                    return Err(partial.fault);
                }
            }
            let last_is_definition = matches!(node.elements.last(), Some(Element::Define(_)));
            let closing = |p: &Self| -> Result<(), SyntaxFault> {
                if last_is_definition {
                    let at = match node.elements.last() {
                        Some(Element::Define(d)) => d.span.start,
                        _ => p.here(),
                    };
                    return Err(p.fault(
                        at,
                        "a definition cannot be the last element of a block",
                        "the block ends with a definition, which concludes nothing".into(),
                    ));
                }
                Ok(())
            };
            match self.peek() {
                Some(Tok::RBrace) => {
                    closing(self)?;
                    self.bump();
                    return Ok(());
                }
                Some(Tok::Semi) => {
                    self.bump();
                    if matches!(self.peek(), Some(Tok::RBrace)) {
                        closing(self)?;
                        self.bump();
                        return Ok(());
                    }
                }
                None => {
                    return Err(self.fault(
                        self.end,
                        "unclosed proof block",
                        "the text ends inside a proof block".into(),
                    ));
                }
                Some(_) => {
                    return Err(self.fault(
                        self.here(),
                        "missing semicolon between steps",
                        "two steps follow each other without a semicolon".into(),
                    ));
                }
            }
        }
    }

    /// After the root element: a trailing semicolon is harmless, prose is left alone, and
    /// anything that reads as another step means an unbraced composite proof.
    fn trailing(&mut self) -> Option<SyntaxFault> {
        let mut had_semi = false;
        if matches!(self.peek(), Some(Tok::Semi)) {
            self.bump();
            had_semi = true;
        }
        self.peek()?;
        if starts_element(self.toks, self.pos) || matches!(self.peek(), Some(Tok::RBrace)) {
            let public = if had_semi {
                "a composite proof must be enclosed in braces"
            } else {
                "unexpected text after the proof"
            };
            return Some(self.fault(
                self.here(),
                public,
                "more proof text follows the end of the proof".into(),
            ));
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::{super::super::lex::lex, *};

    fn parse_text(text: &str) -> Parsed {
        parse(&lex(text), text.len())
    }

    #[test]
    fn reads_blocks_names_and_assumptions() {
        let text = "{\n  F-or-not-F := ex-middle on F;\n  h := assume hyp := (A & B) {\n    left-and on hyp;\n    B BY right-and on hyp\n  };\n  d := (A ==> B);\n  (C & ~B) BY both on C, (~ B);\n}";
        let p = parse_text(text);
        assert!(p.fault.is_none(), "{:?}", p.fault);
        let Some(Element::Block(b)) = p.root else {
            panic!("not a block")
        };
        assert_eq!(b.elements.len(), 4);
        assert!(
            matches!(&b.elements[1], Element::Assume(a) if a.hyp_name.as_ref().map(|n| n.text.as_str()) == Some("hyp") && a.body.elements.len() == 2)
        );
        assert!(matches!(&b.elements[2], Element::Define(_)));
    }

    #[test]
    fn reads_from_steps_in_either_case() {
        let p = parse_text("{ A2 from premise-1, premise-2; A3 FROM A2, premise-3 }");
        assert!(p.fault.is_none());
    }

    #[test]
    fn faults_are_positioned() {
        let text = "{\n  A BY claim on A\n  B BY claim on B\n}";
        let p = parse_text(text);
        let f = p.fault.unwrap();
        assert_eq!(f.public, "missing semicolon between steps");
        assert_eq!(&text[f.at..f.at + 1], "B");
        let Some(Element::Block(b)) = p.root else {
            panic!()
        };
        assert!(!b.complete);
        assert_eq!(b.elements.len(), 1);
    }

    #[test]
    fn subproof_arguments_are_read_and_marked() {
        let args_of = |text: &str| {
            let p = parse_text(text);
            assert!(p.fault.is_none(), "{text}: {:?}", p.fault);
            let Some(Element::Step(s)) = p.root else {
                panic!("{text}: not a step")
            };
            let StepBody::Rule { args, .. } = s.body else {
                panic!("{text}: not a rule application")
            };
            args
        };
        let args = args_of("C BY mp on assume A { claim on A }, A");
        assert!(matches!(&args[0], Arg::Subproof(e) if matches!(**e, Element::Assume(_))));
        assert!(matches!(args[1], Arg::Formula(_)));
        let args = args_of(
            "cases on (P | Q), assume P { right-either on P, Q }, (assume h := Q { left-either on Q, P })",
        );
        assert!(matches!(&args[1], Arg::Subproof(e) if matches!(**e, Element::Assume(_))));
        assert!(matches!(&args[2], Arg::Subproof(e) if matches!(**e, Element::Assume(_))));
        let args = args_of("both on { claim on A }, B");
        assert!(matches!(&args[0], Arg::Subproof(e) if matches!(**e, Element::Block(_))));
        let args = args_of("B BY mp on premise-1, (left-and on premise-2)");
        assert!(matches!(args[1], Arg::Application));
        // a block in parentheses is an application of its conclusion to nothing
        let p = parse_text("both on ({ claim on A }), B");
        assert_eq!(
            p.fault.unwrap().public,
            "a block in parentheses is read as a procedure application"
        );
    }

    #[test]
    fn unbraced_sequence_and_trailing_definition_are_faults() {
        let p = parse_text("A BY claim on A;\nB BY claim on B");
        assert_eq!(
            p.fault.unwrap().public,
            "a composite proof must be enclosed in braces"
        );
        let p = parse_text("{ A BY claim on A; d := (A & B) }");
        assert_eq!(
            p.fault.unwrap().public,
            "a definition cannot be the last element of a block"
        );
        let p = parse_text("(A & B) BY both on A, B\n\nThis completes the proof.");
        assert!(p.fault.is_none());
    }

    #[test]
    fn deep_blocks_are_refused() {
        let text = format!(
            "{}A BY claim on A{}",
            "{ ".repeat(10_000),
            " }".repeat(10_000)
        );
        let p = parse_text(&text);
        assert!(p.fault.unwrap().over_limit);
        let text = format!(
            "{}A BY claim on A{}",
            "assume A { ".repeat(10_000),
            " }".repeat(10_000)
        );
        assert!(parse_text(&text).fault.unwrap().over_limit);
    }
}
