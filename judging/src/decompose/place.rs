//! Where each segment of an HDAG sits in its trace: the byte range of that segment's own
//! occurrence, for anything that points at the text (a highlighter, `part:line` in a
//! listing).
//!
//! A segment's content is an exact span of the trace, but text repeats: three code-fence
//! lines read the same, and `5.0` is also the tail of `15.0` on the line above. The first
//! occurrence of the text is then the wrong one. Segments are placed as they were cut,
//! in order: the problem statement in the problem, the final answer in the output, every
//! other segment in the thinking (failing that, in another part). A segment below another by `decomposes_to` (a step of a
//! paragraph, the calculation of a step) is looked for inside its parent, after the
//! siblings placed before it; any other segment after the last one placed in its part.
//! Within that window an occurrence that starts and ends on a word boundary is preferred
//! (`5.0` is not the tail of `15.0`). A segment not found there is looked for from the
//! start of its part, and one the trace does not hold is not placed.

use std::{cmp::Reverse, collections::BinaryHeap};

use trust_protocol::{
    hdag::{AbstractionLevel, Hdag, Relationship},
    trace::Trace,
};

use super::PROBLEM_KIND;

/// A part of a trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    /// The problem statement.
    Problem,
    /// The thinking process.
    Thinking,
    /// The final output.
    Output,
}

impl Part {
    /// The part as the trace's JSON names it: `problem`, `thinking`, `output`.
    pub fn as_str(self) -> &'static str {
        match self {
            Part::Problem => "problem",
            Part::Thinking => "thinking",
            Part::Output => "output",
        }
    }

    fn of(self, trace: &Trace) -> &str {
        match self {
            Part::Problem => &trace.problem,
            Part::Thinking => &trace.thinking,
            Part::Output => &trace.output,
        }
    }

    fn index(self) -> usize {
        match self {
            Part::Problem => 0,
            Part::Thinking => 1,
            Part::Output => 2,
        }
    }
}

/// Where one segment sits: bytes `start..end` of a part, starting on `line` (1-based) of
/// that part.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The part that holds it.
    pub part: Part,
    /// Its first byte in that part.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// The line of the part (1-based) where it starts.
    pub line: u32,
}

/// The place of every node of `hdag` in `trace`, by node index; `None` for a node whose
/// text the trace does not hold (or an empty one). Linear in the trace for an HDAG cut
/// from it in order; a segment out of order costs a search from the start of its part.
pub fn places(trace: &Trace, hdag: &Hdag) -> Vec<Option<Place>> {
    let n = hdag.nodes.len();
    let index = hdag.positions();
    // The first parent of each node by `decomposes_to`, and the children of each.
    let mut parent: Vec<Option<usize>> = vec![None; n];
    let mut waiting = vec![0usize; n];
    let mut children: Vec<Vec<usize>> = vec![Vec::new(); n];
    for e in &hdag.edges {
        if e.relationship != Relationship::DecomposesTo {
            continue;
        }
        let (Some(&from), Some(&to)) = (index.get(e.from.as_str()), index.get(e.to.as_str()))
        else {
            continue;
        };
        if from == to {
            continue;
        }
        if let Some(p) = parent.get_mut(to) {
            p.get_or_insert(from);
        }
        if let (Some(w), Some(c)) = (waiting.get_mut(to), children.get_mut(from)) {
            *w = w.saturating_add(1);
            c.push(to);
        }
    }
    // Parents before their parts, otherwise in HDAG order (the order they were cut in).
    let mut ready: BinaryHeap<Reverse<usize>> = waiting
        .iter()
        .enumerate()
        .filter(|&(_, &w)| w == 0)
        .map(|(i, _)| Reverse(i))
        .collect();
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    while let Some(Reverse(i)) = ready.pop() {
        order.push(i);
        if let Some(s) = seen.get_mut(i) {
            *s = true;
        }
        for &c in children.get(i).map(Vec::as_slice).unwrap_or_default() {
            if let Some(w) = waiting.get_mut(c) {
                *w = w.saturating_sub(1);
                if *w == 0 {
                    ready.push(Reverse(c));
                }
            }
        }
    }
    // A validated HDAG has no cycle; any node left over is placed in HDAG order.
    order.extend((0..n).filter(|&i| !seen.get(i).copied().unwrap_or(true)));

    let mut out: Vec<Option<Place>> = vec![None; n];
    // For each placed node, where its next part may start (after the parts placed so far).
    let mut inner_cursor: Vec<usize> = vec![0; n];
    // For each part: the start and end of the last segment placed in it outside a parent.
    let mut cursor = [(0usize, 0usize); 3];
    for i in order {
        let Some(node) = hdag.nodes.get(i) else {
            continue;
        };
        let content = node.content.as_str();
        if content.is_empty() {
            continue;
        }
        let in_problem =
            node.kind == PROBLEM_KIND || node.abstraction_level == AbstractionLevel::Goal;
        let parts = if in_problem {
            [Part::Problem, Part::Thinking, Part::Output]
        } else if node.kind == "conclusion" {
            [Part::Output, Part::Thinking, Part::Problem]
        } else {
            [Part::Thinking, Part::Output, Part::Problem]
        };
        // Inside the parent, after the siblings placed before it; never inside the problem
        // statement for a segment of the model's own (the GOAL is every step's parent).
        let within = parent
            .get(i)
            .copied()
            .flatten()
            .and_then(|p| Some((p, out.get(p).copied().flatten()?)))
            .filter(|(_, pp)| in_problem || pp.part != Part::Problem);
        let mut found: Option<(Part, usize)> = None;
        if let Some((p, pp)) = within {
            let text = pp.part.of(trace);
            let from = inner_cursor
                .get(p)
                .copied()
                .unwrap_or(pp.start)
                .max(pp.start);
            found = find_in(text, content, from, pp.end)
                .or_else(|| find_in(text, content, pp.start, pp.end))
                .map(|at| (pp.part, at));
            if let (Some((_, at)), Some(c)) = (found, inner_cursor.get_mut(p)) {
                *c = at.saturating_add(content.len());
            }
        }
        if found.is_none() {
            for part in parts {
                let text = part.of(trace);
                let (last_start, last_end) = cursor.get(part.index()).copied().unwrap_or((0, 0));
                let at = find_in(text, content, last_end, text.len())
                    .or_else(|| find_in(text, content, last_start, text.len()))
                    .or_else(|| find_in(text, content, 0, text.len()));
                if let Some(at) = at {
                    if let Some(c) = cursor.get_mut(part.index()) {
                        *c = (at, at.saturating_add(content.len()));
                    }
                    found = Some((part, at));
                    break;
                }
            }
        }
        let Some((part, start)) = found else {
            continue;
        };
        let text = part.of(trace);
        if let Some(c) = inner_cursor.get_mut(i) {
            *c = start;
        }
        let line = text
            .get(..start)
            .map_or(0, |before| before.matches('\n').count())
            .saturating_add(1);
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(Place {
                part,
                start,
                end: start.saturating_add(content.len()),
                line: u32::try_from(line).unwrap_or(u32::MAX),
            });
        }
    }
    out
}

/// The occurrence of `needle` in `text` within bytes `from..to`: the first that starts
/// and ends on a word boundary, else the first. `None` when there is none (or the window
/// does not fall on character boundaries).
fn find_in(text: &str, needle: &str, from: usize, to: usize) -> Option<usize> {
    let window = text.get(from..to.min(text.len()))?;
    let mut first: Option<usize> = None;
    for (k, _) in window.match_indices(needle) {
        let at = from.saturating_add(k);
        first.get_or_insert(at);
        if on_boundary(text, needle, at) {
            return Some(at);
        }
    }
    first
}

/// Whether `needle` at byte `at` of `text` neither continues the word or number before it
/// nor runs into the one after it (`5.0` in `15.0`, `5` in `50`).
fn on_boundary(text: &str, needle: &str, at: usize) -> bool {
    let joins = |c: char| c.is_alphanumeric() || c == '_';
    let before = text.get(..at).and_then(|s| s.chars().next_back());
    let after = text
        .get(at.saturating_add(needle.len())..)
        .and_then(|s| s.chars().next());
    let head = needle.chars().next();
    let tail = needle.chars().next_back();
    let numeric_head = head.is_some_and(|c| c.is_ascii_digit());
    let clean_before = match (head, before) {
        (Some(h), Some(b)) if joins(h) => {
            // `.5` after `1` is a decimal's tail: a number goes on through `.` and `,`.
            let decimal = numeric_head && matches!(b, '.' | ',');
            !joins(b) && !decimal
        }
        _ => true,
    };
    let clean_after = match (tail, after) {
        (Some(t), Some(a)) if joins(t) => !joins(a),
        _ => true,
    };
    clean_before && clean_after
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decompose::{Options, decompose};

    fn trace(problem: &str, thinking: &str, output: &str) -> Trace {
        Trace {
            problem: problem.into(),
            thinking: thinking.into(),
            output: output.into(),
        }
    }

    #[test]
    fn the_boundary_rule_skips_the_tail_of_a_longer_number() {
        let t = "a = 15.0\nb = 5.0";
        assert_eq!(
            find_in(t, "5.0", 0, t.len()),
            t.find("= 5.0").map(|k| k + 2)
        );
        // With no occurrence on a boundary, the first one.
        assert_eq!(find_in("15.0", "5.0", 0, 4), Some(1));
        assert_eq!(find_in("x", "y", 0, 1), None);
        // A window that does not fall on a character boundary finds nothing.
        assert_eq!(find_in("é5", "5", 1, 3), None);
    }

    #[test]
    fn every_segment_of_a_decomposition_is_placed_on_its_own_text() {
        let t = trace(
            "Add 2 and 3.",
            "First, 2 + 3 = 5.\n\n```\nx = 1\n```\n\n```\ny = 2\n```\n\nSo the sum is 5.",
            "The sum is 5.",
        );
        let h = decompose(&t, &Options::default()).expect("decomposes");
        let placed = places(&t, &h);
        for (n, p) in h.nodes.iter().zip(&placed) {
            let p = p.unwrap_or_else(|| panic!("{} not placed", n.id));
            assert_eq!(p.part.of(&t).get(p.start..p.end), Some(n.content.as_str()));
        }
        let starts: Vec<(Part, usize)> =
            placed.iter().flatten().map(|p| (p.part, p.start)).collect();
        let mut unique = starts.clone();
        unique.sort_unstable();
        unique.dedup();
        // Only a segment and its own calculation (the same text) may share a start.
        assert!(unique.len() + 2 >= starts.len(), "{placed:?}");
    }
}
