//! Text templates for the heuristic decomposer: paragraphs, step units, symbols and
//! numbers. Every returned `&str` is a slice of the input, so segment contents stay exact
//! spans of the trace.

use trust_protocol::hdag::MAX_SEGMENT_BYTES;

use crate::computer::read::words;
pub(crate) use crate::computer::read::{numbers_in, symbols_in};

/// One step unit of a paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Unit<'a> {
    /// The unit's text (a slice of the trace, list marker removed).
    pub(super) text: &'a str,
    /// Contains an equation or a calculation.
    pub(super) is_math: bool,
    /// Nothing but mathematics after a leading connective ("Therefore, 5x = 6x - 14").
    pub(super) is_pure_math: bool,
    /// Introduces a name ("Let the numerator be x").
    pub(super) is_definition: bool,
}

/// Paragraphs (runs of non-blank lines), each trimmed, as slices of `text`.
pub(super) fn paragraphs(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start: Option<usize> = None;
    let mut end = 0usize;
    let mut offset = 0usize;
    for line in text.split_inclusive('\n') {
        let line_start = offset;
        offset = offset.saturating_add(line.len());
        if line.trim().is_empty() {
            if let Some(s) = start.take() {
                push_trimmed(&mut out, text, s, end);
            }
        } else {
            if start.is_none() {
                start = Some(line_start);
            }
            end = offset;
        }
    }
    if let Some(s) = start {
        push_trimmed(&mut out, text, s, end);
    }
    out
}

fn push_trimmed<'a>(out: &mut Vec<&'a str>, text: &'a str, start: usize, end: usize) {
    if let Some(s) = text.get(start..end) {
        let t = s.trim();
        if !t.is_empty() {
            out.push(t);
        }
    }
}

/// Splits a line into sentences at `.`, `?` or `!` followed by whitespace and an
/// upper-case letter (so `0.96 D` and `e.g. x` stay whole).
fn sentences(line: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0usize;
    let chars: Vec<(usize, char)> = line.char_indices().collect();
    for w in chars.windows(3) {
        let [(i, c), (_, sp), (_, next)] = [w[0], w[1], w[2]];
        if matches!(c, '.' | '?' | '!') && sp.is_whitespace() && next.is_uppercase() {
            let end = i.saturating_add(c.len_utf8());
            if let Some(s) = line.get(start..end) {
                let s = s.trim();
                if !s.is_empty() {
                    out.push(s);
                }
            }
            start = end;
        }
    }
    if let Some(s) = line.get(start..) {
        let s = s.trim();
        if !s.is_empty() {
            out.push(s);
        }
    }
    out
}

/// The step units of a paragraph: each line (list marker removed), split into sentences.
pub(super) fn units_of(paragraph: &str) -> Vec<Unit<'_>> {
    lines_of(paragraph)
        .into_iter()
        .flat_map(|(_, units)| units)
        .collect()
}

/// The non-blank lines of a paragraph, each with its step units: sentences, list marker
/// removed, and a sentence longer than `MAX_SEGMENT_BYTES` cut into pieces (see
/// [`cut`]) so that every unit fits one segment.
pub(super) fn lines_of(paragraph: &str) -> Vec<(&str, Vec<Unit<'_>>)> {
    paragraph
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let units = sentences(crate::computer::read::strip_marker(l))
                .into_iter()
                .flat_map(|s| cut(s, MAX_SEGMENT_BYTES))
                .map(|text| Unit {
                    text,
                    is_math: is_math(text),
                    is_pure_math: is_pure_math(text),
                    is_definition: is_definition(text),
                })
                .collect();
            (l, units)
        })
        .collect()
}

/// The steps a segment holds, as the decomposer cut them: one for a single step, several
/// for a group of consecutive steps (see [`super::decompose`]).
pub(super) fn steps_of(segment: &str) -> Vec<&str> {
    paragraphs(segment)
        .into_iter()
        .flat_map(units_of)
        .map(|u| u.text)
        .collect()
}

/// Cuts `text` into trimmed pieces of at most `max` bytes, each a slice of it. A piece
/// ends after a sentence (`.`, `?`, `!` before whitespace), else after a clause (`;`,
/// `:`, `,`), else at whitespace, taking the last such place in the second half of the
/// allowed length (so each cut moves at least half of it along and the whole stays
/// linear); failing all of these, at a whitespace anywhere, and last at a character
/// boundary. Text within `max` is returned whole.
pub(super) fn cut(text: &str, max: usize) -> Vec<&str> {
    let mut out = Vec::new();
    let mut rest = text.trim();
    while rest.len() > max && max > 1 {
        let mut end = max;
        while !rest.is_char_boundary(end) {
            end = end.saturating_sub(1);
        }
        let window = rest.get(..end).unwrap_or("");
        let half = end / 2;
        let at = last_break(window, half, |b| matches!(b, b'.' | b'?' | b'!'))
            .or_else(|| last_break(window, half, |b| matches!(b, b';' | b':' | b',')))
            .or_else(|| last_space(window, half))
            .or_else(|| last_space(window, 1))
            .unwrap_or(end)
            .max(1);
        let (piece, tail) = rest.split_at(at.min(rest.len()));
        let piece = piece.trim();
        if !piece.is_empty() {
            out.push(piece);
        }
        rest = tail.trim();
    }
    if !rest.is_empty() {
        out.push(rest);
    }
    out
}

/// Just after the last punctuation mark `mark` followed by whitespace in `window`, at or
/// after byte `min`.
fn last_break(window: &str, min: usize, mark: impl Fn(u8) -> bool) -> Option<usize> {
    let bytes = window.as_bytes();
    (min.max(1)..bytes.len()).rev().find(|&i| {
        bytes.get(i).is_some_and(u8::is_ascii_whitespace)
            && bytes.get(i.saturating_sub(1)).is_some_and(|&b| mark(b))
    })
}

/// The last ASCII whitespace in `window` at or after byte `min`.
fn last_space(window: &str, min: usize) -> Option<usize> {
    let bytes = window.as_bytes();
    (min.max(1)..bytes.len())
        .rev()
        .find(|&i| bytes.get(i).is_some_and(u8::is_ascii_whitespace))
}

const OPERATORS: [char; 12] = ['=', '+', '*', '/', '^', '×', '÷', '−', '≤', '≥', '<', '>'];

/// Contains an equation, or an operator between operands.
pub(super) fn is_math(text: &str) -> bool {
    if text.contains('=') || text.contains('⇒') {
        return true;
    }
    let cs: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    cs.windows(3).any(|w| {
        let (left, op, right) = (w[0], w[1], w[2]);
        // An ASCII hyphen between letters is a hyphenated word, not a minus.
        let left_ok = left.is_ascii_digit() || left == ')' || (left.is_alphabetic() && op != '-');
        let right_ok = right.is_alphanumeric() || right == '(';
        left_ok && (OPERATORS.contains(&op) || op == '-') && right_ok
    })
}

const CONNECTIVES: [&str; 18] = [
    "so",
    "therefore",
    "thus",
    "hence",
    "then",
    "finally",
    "we",
    "get",
    "have",
    "obtain",
    "gives",
    "which",
    "means",
    "and",
    "now",
    "i.e.",
    "solving",
    "simplifying",
];

/// Mathematics only, after leading connective words.
pub(super) fn is_pure_math(text: &str) -> bool {
    if !is_math(text) {
        return false;
    }
    let mut rest = text.trim();
    loop {
        let word_end = rest.find(char::is_whitespace).unwrap_or(rest.len());
        let word = rest.get(..word_end).unwrap_or("");
        let bare = word.trim_end_matches([',', ':', ';']).to_ascii_lowercase();
        if !bare.is_empty() && CONNECTIVES.contains(&bare.as_str()) {
            rest = rest.get(word_end..).unwrap_or("").trim_start();
        } else {
            break;
        }
    }
    !words(rest).any(|w| {
        let lower = w.to_ascii_lowercase();
        w.chars().filter(|c| c.is_alphabetic()).count() >= 3
            && !MATH_WORDS.contains(&lower.as_str())
            && !CONNECTIVES.contains(&lower.as_str())
    })
}

const MATH_WORDS: [&str; 8] = ["sqrt", "log", "ln", "sin", "cos", "tan", "exp", "mod"];

/// Introduces a name: "Let ...", "Denote ...", "Define ...".
pub(super) fn is_definition(text: &str) -> bool {
    let lower: String = text.chars().take(8).collect::<String>().to_lowercase();
    lower.starts_with("let ") || lower.starts_with("denote ") || lower.starts_with("define ")
}

/// Planning language in an opening paragraph.
pub(super) fn plans(paragraph: &str) -> bool {
    let lower = paragraph.to_lowercase();
    [
        "let's",
        "let us",
        "we need",
        "we will",
        "we'll",
        "plan",
        "approach",
        "strategy",
        "first,",
        "i need",
        "we should",
        "we want",
        "goal",
    ]
    .iter()
    .any(|k| lower.contains(k))
}

/// A short summary: the first words of the content.
pub(super) fn summary(content: &str) -> String {
    let mut s = String::new();
    for w in content.split_whitespace().take(8) {
        if s.len().saturating_add(w.len()) > 60 {
            break;
        }
        if !s.is_empty() {
            s.push(' ');
        }
        s.push_str(w);
    }
    s
}

/// Operator characters of a calculation written in text.
const CALC_OPERATORS: &str = "=+×÷*/^−–≈<>·⋅";

/// Words that stand for an operation between two quantities (`3 times 4`, `50% of $20`).
const WORD_OPERATORS: [&str; 10] = [
    "times",
    "plus",
    "minus",
    "divided",
    "multiplied",
    "by",
    "of",
    "over",
    "per",
    "x",
];

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece {
    /// A number, an operator, a bracket, LaTeX or an annotation.
    Math,
    /// A name between operators (`x` in `x + 3 = 5`).
    Name,
    /// An operation in words.
    Connector,
    /// Anything else.
    Word,
}

fn has_operator(w: &str) -> bool {
    w.chars().any(|c| CALC_OPERATORS.contains(c)) || w == "-"
}

fn bare_word(w: &str) -> String {
    w.trim_matches(|c: char| !c.is_alphanumeric())
        .to_ascii_lowercase()
}

/// The bare calculation of a unit that says something in words around it: from the
/// first number, name or operator of the first run of mathematics holding an equality
/// to the last of the last such run (`21+3 = 24` of `Mike has 21+3 = 24 points.`). A run
/// continues across one or two words when an operator stands beside them (`320 guests *
/// 2 seats/guest = 640`), and across operations in words (`50% of $20 = $10`); a run
/// that opens with an operator takes the word before it (`Total = 15 + 3 = 18`). `None`
/// when no run holds an equality.
pub(super) fn calculation_span(text: &str) -> Option<&str> {
    let words: Vec<(usize, &str)> = text
        .split_whitespace()
        .filter_map(|w| Some((offset_in(text, w)?, w)))
        .collect();
    let kind = |i: usize| -> Piece {
        let Some((_, w)) = words.get(i) else {
            return Piece::Word;
        };
        let bare = bare_word(w);
        if w.chars().any(|c| c.is_ascii_digit())
            || has_operator(w)
            || w.starts_with(['\\', '$', '(', ')', '€', '£'])
            || w.contains("<<")
        {
            return Piece::Math;
        }
        if WORD_OPERATORS.contains(&bare.as_str()) {
            return Piece::Connector;
        }
        let near_operator = |j: Option<usize>| {
            j.and_then(|j| words.get(j))
                .is_some_and(|(_, n)| has_operator(n))
        };
        if bare.len() == 1
            && bare.chars().all(|c| c.is_ascii_alphabetic())
            && (near_operator(i.checked_sub(1)) || near_operator(i.checked_add(1)))
        {
            return Piece::Name;
        }
        Piece::Word
    };
    let kinds: Vec<Piece> = (0..words.len()).map(kind).collect();
    let line_break_before =
        |j: usize| match (j.checked_sub(1).and_then(|p| words.get(p)), words.get(j)) {
            (Some((at, w)), Some((next, _))) => text
                .get(at.saturating_add(w.len())..*next)
                .is_some_and(|gap| gap.contains('\n')),
            _ => false,
        };
    let is_math = |k: Piece| matches!(k, Piece::Math | Piece::Name);
    let operator_at = |i: usize| {
        kinds.get(i) == Some(&Piece::Connector)
            || words.get(i).is_some_and(|(_, w)| has_operator(w))
    };
    // Runs as (first, last) word indices, both mathematics.
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0usize;
    while i < words.len() {
        if !kinds.get(i).copied().is_some_and(is_math) {
            i = i.saturating_add(1);
            continue;
        }
        let (first, mut last) = (i, i);
        let mut j = i.saturating_add(1);
        while j < words.len() {
            // A calculation never runs across a line break.
            if line_break_before(j) {
                break;
            }
            match kinds.get(j).copied() {
                Some(k) if is_math(k) => {
                    last = j;
                    j = j.saturating_add(1);
                }
                Some(Piece::Connector) => j = j.saturating_add(1),
                _ => {
                    // One or two words, then mathematics, with an operator beside them.
                    let next = (j..words.len().min(j.saturating_add(3)))
                        .take_while(|&k| k == j || !line_break_before(k))
                        .find(|&k| kinds.get(k).copied().is_some_and(is_math));
                    match next {
                        Some(k) if operator_at(last) || operator_at(k) => {
                            last = k;
                            j = k.saturating_add(1);
                        }
                        _ => break,
                    }
                }
            }
        }
        runs.push((first, last));
        i = j.max(last.saturating_add(1));
    }
    let holds_equality = |(a, b): &(usize, usize)| {
        words
            .get(*a..=*b)
            .is_some_and(|ws| ws.iter().any(|(_, w)| w.contains(['=', '≈'])))
    };
    let calc: Vec<&(usize, usize)> = runs.iter().filter(|r| holds_equality(r)).collect();
    let (&&(mut first, _), &&(_, last)) = (calc.first()?, calc.last()?);
    if words
        .get(first)
        .is_some_and(|(_, w)| w.starts_with(['=', '≈']))
        && first > 0
    {
        first = first.saturating_sub(1);
    }
    let start = words.get(first)?.0;
    let (at, w) = words.get(last)?;
    let end = at.saturating_add(w.len());
    let span = text.get(start..end)?;
    let span = span.trim_end_matches(['.', ',', ';', ':', '!', '?']);
    // Brackets and braces must close within it (`\text{` cut off is no calculation).
    let balanced = [('(', ')'), ('[', ']'), ('{', '}')]
        .iter()
        .all(|(o, c)| span.matches(*o).count() == span.matches(*c).count());
    (!span.trim().is_empty() && balanced).then_some(span)
}

/// Byte offset of `inner` in `outer`, when `inner` is a slice of it.
pub(super) fn offset_in(outer: &str, inner: &str) -> Option<usize> {
    let at = (inner.as_ptr() as usize).checked_sub(outer.as_ptr() as usize)?;
    (at.checked_add(inner.len())? <= outer.len()).then_some(at)
}
