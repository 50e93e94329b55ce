//! Step units: how a text is cut into the steps a checker judges one by one. The
//! decomposer makes its segments of these units, and a judge of a group of steps cuts the
//! group the same way ([`steps_of`]), so a grouped step is the step it would be as a
//! segment of its own. Every returned `&str` is a slice of the input, so segment contents
//! stay exact spans of the trace.

use trust_protocol::hdag::MAX_SEGMENT_BYTES;

use crate::computer::read::{strip_marker, words};

/// One step unit of a paragraph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unit<'a> {
    /// The unit's text (a slice of the trace, list marker removed).
    pub text: &'a str,
    /// Contains an equation or a calculation.
    pub is_math: bool,
    /// Nothing but mathematics after a leading connective ("Therefore, 5x = 6x - 14").
    pub is_pure_math: bool,
    /// Introduces a name ("Let the numerator be x").
    pub is_definition: bool,
}

/// Paragraphs (runs of non-blank lines), each trimmed, as slices of `text`.
pub fn paragraphs(text: &str) -> Vec<&str> {
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
        let &[(i, c), (_, sp), (_, next)] = w else {
            continue;
        };
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
pub fn units_of(paragraph: &str) -> Vec<Unit<'_>> {
    lines_of(paragraph)
        .into_iter()
        .flat_map(|(_, units)| units)
        .collect()
}

/// The non-blank lines of a paragraph, each with its step units: sentences, list marker
/// removed, and a sentence longer than `MAX_SEGMENT_BYTES` cut into pieces (see
/// [`cut`]) so that every unit fits one segment.
pub fn lines_of(paragraph: &str) -> Vec<(&str, Vec<Unit<'_>>)> {
    paragraph
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            let units = sentences(strip_marker(l))
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

/// The steps a segment holds, in order, as the decomposer cut them: one for a single
/// step, several for a group of consecutive steps. A judge of a group judges them one by
/// one.
pub fn steps_of(segment: &str) -> Vec<&str> {
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
pub fn cut(text: &str, max: usize) -> Vec<&str> {
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
fn is_math(text: &str) -> bool {
    if text.contains('=') || text.contains('⇒') {
        return true;
    }
    let cs: Vec<char> = text.chars().filter(|c| !c.is_whitespace()).collect();
    cs.windows(3).any(|w| {
        let &[left, op, right] = w else {
            return false;
        };
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
fn is_pure_math(text: &str) -> bool {
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
fn is_definition(text: &str) -> bool {
    let lower: String = text.chars().take(8).collect::<String>().to_lowercase();
    lower.starts_with("let ") || lower.starts_with("denote ") || lower.starts_with("define ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::computer::read::{numbers_in, symbols_in};

    #[test]
    fn text_helpers() {
        assert_eq!(
            symbols_in("5x = 6x − 14 and t1, 0.96D"),
            ["x", "x", "t1", "D"]
        );
        assert!(numbers_in("x / (3x − 7) = 2/5").contains(&"2/5".to_string()));
        assert!(is_pure_math("Therefore, 5x = 9x − 20"));
        assert!(!is_pure_math("The denominator is 3x − 7"));
        assert!(is_math("The denominator is 3x − 7"));
        assert!(!is_math("We think about the tunnel."));
        assert!(!is_math("a well-known two-step result"));
        assert_eq!(units_of("a = 1. Then b = 2.\n2) Step c").len(), 3);
    }

    #[test]
    fn thousands_separators_are_part_of_a_number() {
        assert!(numbers_in("$30,800 + $4,400").contains(&"30800".to_string()));
        assert!(numbers_in("f(1, 200)").contains(&"200".to_string()));
        assert!(!numbers_in("1,2345").contains(&"12345".to_string()));
    }
}
