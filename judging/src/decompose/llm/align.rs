//! Mapping paraphrases to exact spans: auditors judge the audited model's own words, so a
//! segment the decomposer rewrote is mapped to the closest span of the trace by a token
//! alignment, within a bounded amount of work, or not at all.

use std::collections::HashMap;

use trust_protocol::trace::Trace;

/// Alignment work allowed for one segment (content tokens × trace tokens).
const MAX_ALIGN_CELLS: usize = 64 * 1024 * 1024;
/// Alignment work allowed for a whole decomposition.
const MAX_TOTAL_ALIGN_CELLS: usize = 512 * 1024 * 1024;
/// A paraphrase maps to a span when at least this share of its tokens is found there...
pub(super) const MIN_COVERAGE: f64 = 0.5;
/// ...and at least this share of the span's tokens is matched.
const MIN_PRECISION: f64 = 0.4;

type Token = (String, usize, usize);

/// A word or number of a text, lower-cased, with its byte range. LaTeX commands
/// (`\frac`, `\times`) are skipped, and letters and digits split (`0.96D` is `0.96`,
/// `d`), so notation differences do not hide a match.
fn tokens(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == '\\' {
            while it.peek().is_some_and(|(_, d)| d.is_ascii_alphabetic()) {
                it.next();
            }
            continue;
        }
        if !c.is_alphanumeric() {
            continue;
        }
        let digit = c.is_numeric();
        let mut end = i.saturating_add(c.len_utf8());
        let mut text: String = c.to_lowercase().collect();
        while let Some(&(j, d)) = it.peek() {
            let more = if digit {
                d.is_numeric()
                    || (d == '.'
                        && s.get(j.saturating_add(1)..)
                            .and_then(|r| r.chars().next())
                            .is_some_and(char::is_numeric))
            } else {
                d.is_alphabetic()
            };
            if !more {
                break;
            }
            text.extend(d.to_lowercase());
            end = j.saturating_add(d.len_utf8());
            it.next();
        }
        out.push((text, i, end));
    }
    out
}

/// The best local alignment of `q` in `t`: `(first, last, matched)` trace-token
/// positions, scoring +2 a match, -1 a mismatch or gap.
fn align(q: &[u32], t: &[u32]) -> Option<(usize, usize, usize)> {
    #[derive(Clone, Copy, Default)]
    struct Cell {
        score: i32,
        start: usize,
        matched: usize,
    }
    let m = q.len();
    let mut prev = vec![Cell::default(); m.saturating_add(1)];
    let mut cur = prev.clone();
    let mut best: Option<(i32, usize, usize, usize)> = None;
    for (j, &tj) in t.iter().enumerate() {
        if let Some(c) = cur.first_mut() {
            *c = Cell::default();
        }
        for (i, &qi) in q.iter().enumerate() {
            let (Some(&d), Some(&up), Some(&left)) =
                (prev.get(i), prev.get(i.saturating_add(1)), cur.get(i))
            else {
                continue;
            };
            let hit = qi == tj;
            let diag = if d.score > 0 {
                Cell {
                    score: d.score.saturating_add(if hit { 2 } else { -1 }),
                    start: d.start,
                    matched: d.matched.saturating_add(usize::from(hit)),
                }
            } else if hit {
                Cell {
                    score: 2,
                    start: j,
                    matched: 1,
                }
            } else {
                Cell::default()
            };
            let mut c = diag;
            for g in [up, left] {
                if g.score.saturating_sub(1) > c.score {
                    c = Cell {
                        score: g.score.saturating_sub(1),
                        ..g
                    };
                }
            }
            if c.score <= 0 {
                c = Cell::default();
            }
            if hit && c.score > best.map_or(0, |b| b.0) {
                best = Some((c.score, c.start, j, c.matched));
            }
            if let Some(slot) = cur.get_mut(i.saturating_add(1)) {
                *slot = c;
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    best.map(|(_, s, e, k)| (s, e, k))
}

/// How a segment's text was placed in the trace.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Placement {
    /// Found verbatim.
    Exact(String),
    /// The closest span, with the share of the model's tokens it contains.
    Mapped(String, f64),
}

/// A trace field, its tokens and their vocabulary ids.
struct Field<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    ids: Vec<u32>,
}

pub(super) struct Mapper<'t> {
    fields: Vec<Field<'t>>,
    vocab: HashMap<String, u32>,
    pub(super) budget: usize,
}

impl<'t> Mapper<'t> {
    pub(super) fn new(trace: &'t Trace) -> Self {
        let mut vocab = HashMap::new();
        let fields = [
            trace.problem.as_str(),
            trace.thinking.as_str(),
            trace.output.as_str(),
        ]
        .into_iter()
        .map(|text| {
            let tokens = tokens(text);
            let ids = intern(&mut vocab, &tokens);
            Field { text, tokens, ids }
        })
        .collect();
        Self {
            fields,
            vocab,
            budget: MAX_TOTAL_ALIGN_CELLS,
        }
    }

    /// The exact span for `content`, or the closest one, or `None`.
    pub(super) fn place(&mut self, content: &str) -> Option<Placement> {
        let c = content.trim().trim_matches('*').trim();
        if c.is_empty() {
            return None;
        }
        if self.fields.iter().any(|f| f.text.contains(c)) {
            return Some(Placement::Exact(c.to_string()));
        }
        let q_toks = tokens(c);
        let q = intern(&mut self.vocab, &q_toks);
        if q.is_empty() {
            return None;
        }
        let mut best: Option<(f64, String, f64)> = None;
        for f in &self.fields {
            let (field, toks) = (f.text, &f.tokens);
            let cells = q.len().saturating_mul(toks.len());
            if cells > MAX_ALIGN_CELLS || cells > self.budget {
                continue;
            }
            self.budget = self.budget.saturating_sub(cells);
            let Some((s, e, matched)) = align(&q, &f.ids) else {
                continue;
            };
            let precision = matched as f64 / (e.saturating_sub(s).saturating_add(1)) as f64;
            if matched < q.len().min(2) || precision < MIN_PRECISION {
                continue;
            }
            let (Some(&(_, from, _)), Some(&(_, _, to))) = (toks.get(s), toks.get(e)) else {
                continue;
            };
            let (from, to) = widen(field, from, to);
            let Some(span) = field.get(from..to).map(str::trim) else {
                continue;
            };
            // Coverage counts the model's tokens found anywhere in the sentence(s).
            let mut bag: HashMap<String, usize> = HashMap::new();
            for (t, _, _) in tokens(span) {
                let n = bag.entry(t).or_default();
                *n = n.saturating_add(1);
            }
            let found = q_toks
                .iter()
                .filter(|(t, _, _)| match bag.get_mut(t) {
                    Some(n) if *n > 0 => {
                        *n = n.saturating_sub(1);
                        true
                    }
                    _ => false,
                })
                .count();
            let coverage = found as f64 / q.len() as f64;
            if coverage < MIN_COVERAGE {
                continue;
            }
            let f1 = 2.0 * coverage * precision / (coverage + precision);
            if best.as_ref().is_none_or(|b| f1 > b.0) {
                best = Some((f1, span.to_string(), coverage));
            }
        }
        best.map(|(_, s, c)| Placement::Mapped(s, c))
    }
}

/// How far a span is widened, at most, to reach a sentence boundary.
const MAX_WIDEN_BYTES: usize = 240;

/// Widens `from..to` to whole sentences (a `.`, `?` or `!` before whitespace, a blank
/// line, or the field's ends) when one is near, else to whole words (`$\frac{1}{3D}$.`).
fn widen(field: &str, from: usize, to: usize) -> (usize, usize) {
    let b = field.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(b' ');
    // An ellipsis (`0.694444...`) does not end a sentence.
    let ends_sentence = |i: usize| {
        matches!(at(i), b'.' | b'?' | b'!') && !(i > 0 && at(i.saturating_sub(1)) == b'.')
    };
    let mut start = None;
    let mut i = from;
    while i > 0 && from.saturating_sub(i) <= MAX_WIDEN_BYTES {
        let prev = at(i.saturating_sub(1));
        if (prev.is_ascii_whitespace() && i >= 2 && ends_sentence(i.saturating_sub(2)))
            || (prev == b'\n' && i >= 2 && at(i.saturating_sub(2)) == b'\n')
        {
            start = Some(i);
            break;
        }
        i = i.saturating_sub(1);
    }
    let start = start.unwrap_or(if i == 0 { 0 } else { usize::MAX });
    let start = if start == usize::MAX {
        let mut s = from;
        while s > 0 && !at(s.saturating_sub(1)).is_ascii_whitespace() {
            s = s.saturating_sub(1);
        }
        s
    } else {
        start
    };
    let mut end = None;
    let mut j = to;
    while j < b.len() && j.saturating_sub(to) <= MAX_WIDEN_BYTES {
        let next = j.saturating_add(1);
        if ends_sentence(j) && (next == b.len() || at(next).is_ascii_whitespace()) {
            end = Some(next);
            break;
        }
        if at(j) == b'\n' && at(next) == b'\n' {
            end = Some(j);
            break;
        }
        j = next;
    }
    let end = match end {
        Some(e) => e,
        None if j >= b.len() => b.len(),
        None => {
            let mut e = to;
            while e < b.len() && !at(e).is_ascii_whitespace() {
                e = e.saturating_add(1);
            }
            e
        }
    };
    (start, end.max(start))
}

/// Vocabulary ids of `toks`, adding new words to `vocab`.
fn intern(vocab: &mut HashMap<String, u32>, toks: &[Token]) -> Vec<u32> {
    toks.iter()
        .map(|(t, _, _)| {
            let next = u32::try_from(vocab.len()).unwrap_or(u32::MAX);
            *vocab.entry(t.clone()).or_insert(next)
        })
        .collect()
}
