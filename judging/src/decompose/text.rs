//! Text templates for the heuristic decomposer: planning language, summaries and the bare
//! calculation inside a worded step. Step units come from the checkers' reading
//! ([`readable`](crate::computer::readable)). Every returned `&str` is a slice of
//! the input, so segment contents stay exact spans of the trace.

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
