//! Propositional formulas in ProofGrid notation: the [`Formula`] tree, its canonical printing
//! and its reader.
//!
//! The reader is exact. Negation binds tightest, then `&`, `|`, `==>`, `<==>`; every binary
//! connective associates to the right. In a proof, a complex formula must carry an outer pair
//! of parentheses (`~B` and `A & B` are not formulas there, `(~ B)` and `(A & B)` are), and a
//! redundant pair is refused (`((A & B))`, `(A)`), as the prompts require. Every reader is
//! bounded: parenthesis nesting, tree depth and node count have hard limits, so no input can
//! overflow the stack or exhaust memory.
//!
//! NDL proofs are read as ProofGrid's checker (Athena) reads them ([`FormulaParser::top_ndl`]):
//! inside a formula its infix reader drops redundant parentheses, so `(((R & S)) ==> T)` is
//! `((R & S) ==> T)`; but a whole formula wrapped twice, `((R & S))`, is an application of
//! the sentence `(R & S)` to no arguments, which Athena refuses ("the leftmost expression of
//! an application failed to produce a procedure"). An identifier in parentheses, `(A)`, is
//! the nullary application of a symbol and reads as `A`, unless it names a compound formula;
//! the reader marks it ([`PAREN_MARK`]) so resolution can tell the two apart.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::{
    lex::{Tok, Token, lex},
    limits::{MAX_FORMULA_DEPTH, MAX_FORMULA_NODES, MAX_NESTING},
};

/// A propositional formula.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Formula {
    /// The constant `true`.
    True,
    /// The constant `false`.
    False,
    /// An atom such as `A`, `A1_2`.
    Atom(String),
    /// `(~ p)`
    Not(Box<Formula>),
    /// `(p & q)`
    And(Box<Formula>, Box<Formula>),
    /// `(p | q)`
    Or(Box<Formula>, Box<Formula>),
    /// `(p ==> q)`
    Implies(Box<Formula>, Box<Formula>),
    /// `(p <==> q)`
    Iff(Box<Formula>, Box<Formula>),
}

/// A binary connective.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Bin {
    And,
    Or,
    Implies,
    Iff,
}

impl Bin {
    fn symbol(self) -> &'static str {
        match self {
            Bin::And => "&",
            Bin::Or => "|",
            Bin::Implies => "==>",
            Bin::Iff => "<==>",
        }
    }
}

impl Formula {
    /// An atom.
    pub fn atom(name: &str) -> Formula {
        Formula::Atom(name.to_string())
    }

    /// `(~ p)`
    pub fn negate(p: Formula) -> Formula {
        Formula::Not(Box::new(p))
    }

    /// `(p & q)`
    pub fn and(p: Formula, q: Formula) -> Formula {
        Formula::And(Box::new(p), Box::new(q))
    }

    /// `(p | q)`
    pub fn or(p: Formula, q: Formula) -> Formula {
        Formula::Or(Box::new(p), Box::new(q))
    }

    /// `(p ==> q)`
    pub fn implies(p: Formula, q: Formula) -> Formula {
        Formula::Implies(Box::new(p), Box::new(q))
    }

    /// `(p <==> q)`
    pub fn iff(p: Formula, q: Formula) -> Formula {
        Formula::Iff(Box::new(p), Box::new(q))
    }

    pub(crate) fn bin(op: Bin, p: Formula, q: Formula) -> Formula {
        match op {
            Bin::And => Formula::and(p, q),
            Bin::Or => Formula::or(p, q),
            Bin::Implies => Formula::implies(p, q),
            Bin::Iff => Formula::iff(p, q),
        }
    }

    /// The complement as the prompts define it: `q` when the formula is `(~ q)`, else `(~ p)`.
    pub fn complement(&self) -> Formula {
        match self {
            Formula::Not(q) => (**q).clone(),
            other => Formula::negate(other.clone()),
        }
    }

    /// Whether one of the two formulas is the syntactic negation of the other (a symmetric
    /// relation, as the proof-checking prompt defines "complementary").
    pub fn complements(&self, other: &Formula) -> bool {
        matches!(self, Formula::Not(q) if **q == *other)
            || matches!(other, Formula::Not(q) if **q == *self)
    }

    /// Node count and depth, computed without recursion; stops counting past the limits.
    pub(crate) fn measure(&self) -> (usize, usize) {
        let mut nodes = 0usize;
        let mut max_depth = 0usize;
        let mut stack: Vec<(&Formula, usize)> = vec![(self, 1)];
        while let Some((f, d)) = stack.pop() {
            nodes = nodes.saturating_add(1);
            max_depth = max_depth.max(d);
            if nodes > MAX_FORMULA_NODES {
                break;
            }
            let next = d.saturating_add(1);
            match f {
                Formula::True | Formula::False | Formula::Atom(_) => {}
                Formula::Not(p) => stack.push((p, next)),
                Formula::And(p, q)
                | Formula::Or(p, q)
                | Formula::Implies(p, q)
                | Formula::Iff(p, q) => {
                    stack.push((p, next));
                    stack.push((q, next));
                }
            }
        }
        (nodes, max_depth)
    }

    /// Whether the formula is within the reader's size and depth limits.
    pub(crate) fn within_limits(&self) -> bool {
        let (nodes, depth) = self.measure();
        nodes <= MAX_FORMULA_NODES && depth <= MAX_FORMULA_DEPTH
    }

    /// The atoms of the formula, in first-occurrence order (no recursion).
    pub(crate) fn atoms_into(&self, out: &mut Vec<String>) {
        let mut stack = vec![self];
        while let Some(f) = stack.pop() {
            match f {
                Formula::True | Formula::False => {}
                Formula::Atom(a) => {
                    if !out.iter().any(|x| x == a) {
                        out.push(a.clone());
                    }
                }
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

    /// Whether the formula uses only `~` and `==>` (the Hilbert language).
    pub(crate) fn is_implicational(&self) -> bool {
        let mut stack = vec![self];
        while let Some(f) = stack.pop() {
            match f {
                Formula::Atom(_) => {}
                Formula::Not(p) => stack.push(p),
                Formula::Implies(p, q) => {
                    stack.push(p);
                    stack.push(q);
                }
                _ => return false,
            }
        }
        true
    }
}

impl fmt::Display for Formula {
    /// The canonical, fully parenthesized form: `(((~ A) & B) ==> (C | D))`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Formula::True => f.write_str("true"),
            Formula::False => f.write_str("false"),
            Formula::Atom(a) => f.write_str(a),
            Formula::Not(p) => write!(f, "(~ {p})"),
            Formula::And(p, q) => write!(f, "({p} {} {q})", Bin::And.symbol()),
            Formula::Or(p, q) => write!(f, "({p} {} {q})", Bin::Or.symbol()),
            Formula::Implies(p, q) => write!(f, "({p} {} {q})", Bin::Implies.symbol()),
            Formula::Iff(p, q) => write!(f, "({p} {} {q})", Bin::Iff.symbol()),
        }
    }
}

impl Serialize for Formula {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.to_string())
    }
}

impl<'de> Deserialize<'de> for Formula {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let text = String::deserialize(deserializer)?;
        parse_formula(&text).map_err(serde::de::Error::custom)
    }
}

/// Why a formula could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{public} (at byte {at}): {detail}")]
pub struct FormulaError {
    /// Byte offset of the offending token in the text that was read.
    pub at: usize,
    /// A reason that quotes nothing from the text.
    pub public: &'static str,
    /// A reason that may quote the text.
    pub detail: String,
    /// Whether a size or nesting limit (rather than the grammar) refused the text.
    pub over_limit: bool,
}

/// Reads a whole formula from `text`, leniently at the top level (a problem statement may
/// write `A & B` for `(A & B)`); redundant parentheses are still refused.
pub fn parse_formula(text: &str) -> Result<Formula, FormulaError> {
    let toks = lex(text);
    let mut p = FormulaParser::new(&toks, text.len());
    let f = p.top(false)?;
    if let Some(t) = p.peek_token() {
        return Err(p.error_at(
            t.span.start,
            "unexpected text after the formula",
            format!("unexpected {:?}", t.tok),
        ));
    }
    Ok(f)
}

/// Prefix the NDL reader puts on an identifier written in parentheses, `(x)`: resolution
/// accepts it as an atom, or as a name bound to an atomic formula, and refuses it as a name
/// bound to a compound formula (Athena applies that formula to no arguments).
pub(crate) const PAREN_MARK: char = '(';

/// Words that cannot be atoms.
pub(crate) fn is_reserved(word: &str) -> bool {
    matches!(
        word.to_ascii_lowercase().as_str(),
        "by" | "on" | "from" | "assume" | "suppose-absurd" | "assert"
    )
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// An identifier, a constant or a parenthesized group.
    Primary,
    /// Anything with a connective at its top.
    Compound,
}

/// A bounded recursive-descent reader over tokens.
#[derive(Debug)]
pub(crate) struct FormulaParser<'a> {
    toks: &'a [Token],
    pub(crate) pos: usize,
    end: usize,
    nesting: usize,
    nodes: usize,
    /// Read as Athena does (redundant parentheses inside a formula are dropped).
    athena: bool,
    /// How many pairs of parentheses enclose the primary just read.
    wraps: usize,
}

type Parsed = (Formula, Shape, usize);

impl<'a> FormulaParser<'a> {
    /// A reader over `toks`; `end` is the byte offset used for errors at end of input.
    pub(crate) fn new(toks: &'a [Token], end: usize) -> Self {
        FormulaParser {
            toks,
            pos: 0,
            end,
            nesting: 0,
            nodes: 0,
            athena: false,
            wraps: 0,
        }
    }

    pub(crate) fn at(toks: &'a [Token], pos: usize, end: usize) -> Self {
        FormulaParser {
            toks,
            pos,
            end,
            nesting: 0,
            nodes: 0,
            athena: false,
            wraps: 0,
        }
    }

    pub(crate) fn peek_token(&self) -> Option<&'a Token> {
        self.toks.get(self.pos)
    }

    fn peek(&self) -> Option<&'a Tok> {
        self.toks.get(self.pos).map(|t| &t.tok)
    }

    fn here(&self) -> usize {
        self.toks.get(self.pos).map_or(self.end, |t| t.span.start)
    }

    fn bump(&mut self) {
        self.pos = self.pos.saturating_add(1);
    }

    fn error_at(&self, at: usize, public: &'static str, detail: String) -> FormulaError {
        FormulaError {
            at,
            public,
            detail,
            over_limit: false,
        }
    }

    fn limit(&self, public: &'static str) -> FormulaError {
        FormulaError {
            at: self.here(),
            public,
            detail: public.to_string(),
            over_limit: true,
        }
    }

    fn count_node(&mut self) -> Result<(), FormulaError> {
        self.nodes = self.nodes.saturating_add(1);
        if self.nodes > MAX_FORMULA_NODES {
            return Err(self.limit("formula exceeds the size limit"));
        }
        Ok(())
    }

    /// Reads one formula in a formula position of an NDL proof, as Athena reads it: the
    /// outer-parentheses rule of [`Self::top`], redundant parentheses inside the formula
    /// dropped, an identifier in parentheses marked with [`PAREN_MARK`], and a compound
    /// formula wrapped in two or more pairs refused.
    pub(crate) fn top_ndl(&mut self) -> Result<Formula, FormulaError> {
        self.athena = true;
        let start = self.here();
        let f = self.top(true)?;
        if self.wraps >= 2 && !matches!(f, Formula::Atom(_) | Formula::True | Formula::False) {
            return Err(self.error_at(
                start,
                "a formula in two pairs of parentheses is read as a procedure application",
                format!(
                    "{f} is wrapped in {} pairs of parentheses; the checker applies it to no arguments and refuses it (the leftmost expression of an application failed to produce a procedure)",
                    self.wraps
                ),
            ));
        }
        Ok(f)
    }

    /// Reads one formula in a formula position. `strict` applies the proof rules: a complex
    /// formula needs outer parentheses.
    pub(crate) fn top(&mut self, strict: bool) -> Result<Formula, FormulaError> {
        let (f, _, _) = if strict {
            match self.peek() {
                Some(Tok::Tilde) => {
                    return Err(self.error_at(
                        self.here(),
                        "a negation must be enclosed in parentheses",
                        "a top-level negation is written (~ p), not ~p".into(),
                    ));
                }
                _ => self.primary()?,
            }
        } else {
            self.expr()?
        };
        if strict
            && matches!(
                self.peek(),
                Some(Tok::Amp | Tok::Bar | Tok::Implies | Tok::Iff)
            )
        {
            return Err(self.error_at(
                self.here(),
                "a complex formula must be enclosed in parentheses",
                "a connective follows a formula that has no outer parentheses".into(),
            ));
        }
        Ok(f)
    }

    fn expr(&mut self) -> Result<Parsed, FormulaError> {
        self.level(0)
    }

    fn level(&mut self, level: usize) -> Result<Parsed, FormulaError> {
        let op = match level {
            0 => Bin::Iff,
            1 => Bin::Implies,
            2 => Bin::Or,
            3 => Bin::And,
            _ => return self.unary(),
        };
        let next = level.saturating_add(1);
        let first = self.level(next)?;
        if !self.is_op(op) {
            return Ok(first);
        }
        let mut operands = vec![first];
        while self.is_op(op) {
            self.bump();
            operands.push(self.level(next)?);
        }
        let Some((mut acc, _, mut depth)) = operands.pop() else {
            return Err(self.limit("internal reader state"));
        };
        while let Some((f, _, d)) = operands.pop() {
            depth = depth.max(d).saturating_add(1);
            if depth > MAX_FORMULA_DEPTH {
                return Err(self.limit("formula exceeds the depth limit"));
            }
            self.count_node()?;
            acc = Formula::bin(op, f, acc);
        }
        Ok((acc, Shape::Compound, depth))
    }

    fn is_op(&self, op: Bin) -> bool {
        matches!(
            (self.peek(), op),
            (Some(Tok::Amp), Bin::And)
                | (Some(Tok::Bar), Bin::Or)
                | (Some(Tok::Implies), Bin::Implies)
                | (Some(Tok::Iff), Bin::Iff)
        )
    }

    fn unary(&mut self) -> Result<Parsed, FormulaError> {
        let mut tildes = 0usize;
        while matches!(self.peek(), Some(Tok::Tilde)) {
            self.bump();
            tildes = tildes.saturating_add(1);
        }
        let (mut f, shape, mut depth) = self.primary()?;
        if tildes == 0 {
            return Ok((f, shape, depth));
        }
        for _ in 0..tildes {
            depth = depth.saturating_add(1);
            if depth > MAX_FORMULA_DEPTH {
                return Err(self.limit("formula exceeds the depth limit"));
            }
            self.count_node()?;
            f = Formula::negate(f);
        }
        Ok((f, Shape::Compound, depth))
    }

    fn primary(&mut self) -> Result<Parsed, FormulaError> {
        let start = self.here();
        match self.peek() {
            Some(Tok::Ident(word)) => {
                if is_reserved(word) {
                    return Err(self.error_at(
                        start,
                        "expected a formula",
                        format!("the keyword {word} stands where a formula is expected"),
                    ));
                }
                let f = match word.as_str() {
                    "true" => Formula::True,
                    "false" => Formula::False,
                    _ => Formula::Atom(word.clone()),
                };
                self.bump();
                self.count_node()?;
                self.wraps = 0;
                Ok((f, Shape::Primary, 1))
            }
            Some(Tok::LParen) => {
                self.nesting = self.nesting.saturating_add(1);
                if self.nesting > MAX_NESTING {
                    return Err(self.limit("parentheses nest too deeply"));
                }
                self.bump();
                let (f, shape, depth) = self.expr()?;
                if !matches!(self.peek(), Some(Tok::RParen)) {
                    return Err(self.error_at(
                        self.here(),
                        "unbalanced parentheses in a formula",
                        "expected a closing parenthesis".into(),
                    ));
                }
                self.bump();
                self.nesting = self.nesting.saturating_sub(1);
                if shape == Shape::Primary && self.athena {
                    self.wraps = self.wraps.saturating_add(1);
                    let f = match f {
                        Formula::Atom(w) if !w.starts_with(PAREN_MARK) => {
                            Formula::Atom(format!("{PAREN_MARK}{w}"))
                        }
                        other => other,
                    };
                    return Ok((f, Shape::Primary, depth));
                }
                self.wraps = 1;
                if shape == Shape::Primary {
                    return Err(self.error_at(
                        start,
                        "redundant parentheses around a formula",
                        "a pair of parentheses encloses only an atom, a constant or another parenthesized formula".into(),
                    ));
                }
                Ok((f, Shape::Primary, depth))
            }
            Some(t) => Err(self.error_at(
                start,
                "expected a formula",
                format!("found {t:?} where a formula is expected"),
            )),
            None => Err(self.error_at(
                start,
                "expected a formula",
                "the text ends where a formula is expected".into(),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strict(text: &str) -> Result<Formula, FormulaError> {
        let toks = lex(text);
        let mut p = FormulaParser::new(&toks, text.len());
        let f = p.top(true)?;
        assert!(p.peek_token().is_none(), "trailing tokens in {text}");
        Ok(f)
    }

    #[test]
    fn precedence_and_right_associativity() {
        let a = strict("(~A & B ==> C | D)").unwrap();
        let b = strict("(((~ A) & B) ==> (C | D))").unwrap();
        assert_eq!(a, b);
        assert_eq!(a.to_string(), "(((~ A) & B) ==> (C | D))");
        for same in [
            "(~A & B ==> (C | D))",
            "((~A & B) ==> C | D)",
            "((~A) & B ==> (C | D))",
        ] {
            assert_eq!(strict(same).unwrap(), a, "{same}");
        }
        assert_eq!(
            strict("(A & B & C)").unwrap(),
            strict("(A & (B & C))").unwrap()
        );
        assert_eq!(
            strict("(A ==> B ==> C)").unwrap(),
            strict("(A ==> (B ==> C))").unwrap()
        );
        assert_eq!(
            strict("(A <==> B | C & ~D)").unwrap().to_string(),
            "(A <==> (B | (C & (~ D))))"
        );
        assert_eq!(strict("(~ ~ A)").unwrap().to_string(), "(~ (~ A))");
    }

    #[test]
    fn proof_positions_need_outer_parentheses() {
        assert!(strict("~B").is_err());
        assert!(strict("A & B").is_err());
        assert!(strict("A").is_ok());
        assert!(strict("false").is_ok());
        assert_eq!(
            strict("(~ B)").unwrap(),
            Formula::negate(Formula::atom("B"))
        );
    }

    #[test]
    fn redundant_parentheses_are_refused() {
        for bad in ["((A & B))", "(A)", "(((~A)))", "((~A))", "(true)", "(~(A))"] {
            let e = strict(bad).unwrap_err();
            assert_eq!(e.public, "redundant parentheses around a formula", "{bad}");
        }
        assert!(strict("((A & B) ==> C)").is_ok());
        assert!(strict("((~A) & B)").is_ok());
    }

    fn ndl(text: &str) -> Result<Formula, FormulaError> {
        let toks = lex(text);
        let mut p = FormulaParser::new(&toks, text.len());
        let f = p.top_ndl()?;
        assert!(p.peek_token().is_none(), "trailing tokens in {text}");
        Ok(f)
    }

    #[test]
    fn ndl_formulas_drop_redundant_parentheses_inside_as_athena_does() {
        let f = |t: &str| strict(t).unwrap();
        assert_eq!(ndl("(((R & S)) ==> T)").unwrap(), f("((R & S) ==> T)"));
        assert_eq!(ndl("(~ ((A & B)))").unwrap(), f("(~ (A & B))"));
        assert_eq!(ndl("(A & ((~ B)))").unwrap(), f("(A & (~ B))"));
        // an identifier in parentheses is marked for resolution, once however deep
        let marked = Formula::atom(&format!("{PAREN_MARK}A"));
        assert_eq!(ndl("(A)").unwrap(), marked);
        assert_eq!(ndl("((A))").unwrap(), marked);
        assert_eq!(ndl("(true)").unwrap(), Formula::True);
        assert_eq!(
            ndl("((A) & B)").unwrap(),
            Formula::and(marked, Formula::atom("B"))
        );
    }

    #[test]
    fn ndl_formulas_wrapped_twice_at_the_top_are_refused() {
        for bad in ["((A & B))", "((~ A))", "(((A & B)))", "((((~ A) | B)))"] {
            let e = ndl(bad).unwrap_err();
            assert_eq!(
                e.public,
                "a formula in two pairs of parentheses is read as a procedure application",
                "{bad}"
            );
            assert!(!e.over_limit);
        }
        // the outer-parentheses rule still holds
        assert!(ndl("~B").is_err());
        assert!(ndl("A & B").is_err());
        // Hilbert lines keep the prompts' stricter reading
        assert!(strict("(((R & S)) ==> T)").is_err());
    }

    #[test]
    fn deep_nesting_is_refused_cleanly() {
        let deep = format!("{}A{}", "(~ ".repeat(10_000), ")".repeat(10_000));
        let e = strict(&deep).unwrap_err();
        assert!(e.over_limit);
        let tildes = format!("({}A)", "~".repeat(10_000));
        assert!(strict(&tildes).unwrap_err().over_limit);
        let chain = format!("(A{})", " & A".repeat(300_000));
        assert!(strict(&chain).unwrap_err().over_limit);
    }

    #[test]
    fn complements_and_complement() {
        let a = Formula::atom("A");
        let na = Formula::negate(a.clone());
        let nna = Formula::negate(na.clone());
        assert!(a.complements(&na) && na.complements(&a));
        assert!(na.complements(&nna));
        assert!(!a.complements(&nna));
        assert_eq!(na.complement(), a);
        assert_eq!(a.complement(), na);
    }

    #[test]
    fn serde_round_trip_uses_canonical_text() {
        let f = strict("(~A & B ==> C | D)").unwrap();
        let json = serde_json::to_string(&f).unwrap();
        assert_eq!(json, "\"(((~ A) & B) ==> (C | D))\"");
        let back: Formula = serde_json::from_str(&json).unwrap();
        assert_eq!(back, f);
    }
}
