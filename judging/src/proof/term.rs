//! First-order terms, the language of equational proofs: [`Term`] and its bounded reader
//! ([`parse_term`]). Variables start with an upper-case letter; function symbols and
//! constants with a lower-case one.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    lex::{Tok, Token, lex},
    limits::{MAX_FORMULA_DEPTH, MAX_FORMULA_NODES, MAX_NESTING},
};

/// A first-order term.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Term {
    /// A variable (upper-case initial).
    Var(String),
    /// A function symbol applied to arguments; a constant has none.
    App(String, Vec<Term>),
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Var(v) => f.write_str(v),
            Term::App(name, args) => {
                f.write_str(name)?;
                if !args.is_empty() {
                    f.write_str("(")?;
                    for (i, a) in args.iter().enumerate() {
                        if i > 0 {
                            f.write_str(",")?;
                        }
                        write!(f, "{a}")?;
                    }
                    f.write_str(")")?;
                }
                Ok(())
            }
        }
    }
}

impl Serialize for Term {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Term {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_term(&text).map_err(|e| serde::de::Error::custom(e.detail))
    }
}

/// Why a term could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{public} (at byte {at}): {detail}")]
pub struct TermError {
    /// Byte offset of the offending token.
    pub at: usize,
    /// A reason that quotes nothing.
    pub public: &'static str,
    /// A reason that may quote the text.
    pub detail: String,
    /// Whether a limit (not the grammar) refused the text.
    pub over_limit: bool,
}

/// Reads a whole term.
pub fn parse_term(text: &str) -> Result<Term, TermError> {
    let toks = lex(text);
    let mut p = TermParser::at(&toks, 0, text.len());
    let t = p.term()?;
    if let Some(tok) = toks.get(p.pos) {
        return Err(TermError {
            at: tok.span.start,
            public: "unexpected text after the term",
            detail: format!("unexpected {:?}", tok.tok),
            over_limit: false,
        });
    }
    Ok(t)
}

/// A bounded reader of terms over tokens.
#[derive(Debug)]
pub(crate) struct TermParser<'a> {
    toks: &'a [Token],
    pub(crate) pos: usize,
    end: usize,
    nodes: usize,
}

impl<'a> TermParser<'a> {
    pub(crate) fn at(toks: &'a [Token], pos: usize, end: usize) -> Self {
        TermParser {
            toks,
            pos,
            end,
            nodes: 0,
        }
    }

    fn here(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.span.start)
    }

    fn err(&self, public: &'static str, detail: String) -> TermError {
        TermError {
            at: self.here(),
            public,
            detail,
            over_limit: false,
        }
    }

    pub(crate) fn term(&mut self) -> Result<Term, TermError> {
        self.term_at(0).map(|(t, _)| t)
    }

    fn term_at(&mut self, nesting: usize) -> Result<(Term, usize), TermError> {
        if nesting > MAX_NESTING {
            return Err(TermError {
                at: self.here(),
                public: "terms nest too deeply",
                detail: "terms nest too deeply".into(),
                over_limit: true,
            });
        }
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > MAX_FORMULA_NODES {
            return Err(TermError {
                at: self.here(),
                public: "term exceeds the size limit",
                detail: "term exceeds the size limit".into(),
                over_limit: true,
            });
        }
        let Some(Tok::Ident(name)) = self.toks.get(self.pos).map(|t| &t.tok) else {
            return Err(self.err(
                "expected a term",
                "no symbol where a term is expected".into(),
            ));
        };
        let name = name.clone();
        if name.contains(['-', '\'']) {
            return Err(self.err(
                "a symbol of a term may hold only letters, digits and underscores",
                format!("{name} is not a term symbol"),
            ));
        }
        self.pos = self.pos.saturating_add(1);
        let is_var = name.starts_with(|c: char| c.is_ascii_uppercase());
        if !matches!(self.toks.get(self.pos).map(|t| &t.tok), Some(Tok::LParen)) {
            return Ok((
                if is_var {
                    Term::Var(name)
                } else {
                    Term::App(name, Vec::new())
                },
                1,
            ));
        }
        if is_var {
            return Err(self.err(
                "a variable cannot be applied to arguments",
                format!("{name} is a variable and takes no arguments"),
            ));
        }
        self.pos = self.pos.saturating_add(1);
        let mut args = Vec::new();
        let mut depth = 0usize;
        loop {
            let (a, d) = self.term_at(nesting.saturating_add(1))?;
            depth = depth.max(d);
            args.push(a);
            match self.toks.get(self.pos).map(|t| &t.tok) {
                Some(Tok::Comma) => self.pos = self.pos.saturating_add(1),
                Some(Tok::RParen) => {
                    self.pos = self.pos.saturating_add(1);
                    break;
                }
                _ => {
                    return Err(self.err(
                        "unbalanced parentheses in a term",
                        "expected a comma or a closing parenthesis".into(),
                    ));
                }
            }
        }
        let depth = depth.saturating_add(1);
        if depth > MAX_FORMULA_DEPTH {
            return Err(TermError {
                at: self.here(),
                public: "term exceeds the depth limit",
                detail: "term exceeds the depth limit".into(),
                over_limit: true,
            });
        }
        Ok((Term::App(name, args), depth))
    }
}
