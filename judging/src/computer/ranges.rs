//! The runs of whole numbers a problem defines: `the integers from 1 to 60`, `the odd
//! numbers between 1 and 99`, `the first 60 positive integers`, `1 + 2 + 3 + ... + 60`.
//!
//! A number of such a run is given by the problem even though the problem never writes it
//! (`10 + 5 = 15` in a running sum of 1 to 60 adds 5, one of the integers the problem
//! names). The grounding rule (a calculation that uses a number nobody gave is not called
//! Valid) counts a number as given when it lies in a run read here. The reading is exact
//! or nothing, since an invented operand must still be caught: a run is read only from
//! the plain phrasings above, with whole-number ends written in digits; a run qualified
//! by anything but `odd`, `even`, `positive`, `natural`, `whole`, `counting` or
//! `consecutive` (`the prime numbers from 1 to 60`, `the multiples of 3 up to 60`) is not
//! read, and a number outside a run, or of the wrong parity, is not in it.

use super::expr::Rational;

/// Most characters of a problem looked at.
const MAX_PROBLEM_CHARS: usize = 6000;
/// Most runs read from one problem.
const MAX_RUNS: usize = 8;

/// Words that may stand right before a run's noun phrase (`the sum of [the] integers`).
const BEFORE: [&str; 12] = [
    "the", "all", "of", "add", "adding", "sum", "every", "each", "are", "list", "consider", "over",
];
/// Qualifiers that keep the run whole (`positive`, `consecutive`), and the two that set
/// its parity.
const PLAIN_QUALIFIERS: [&str; 5] = ["positive", "natural", "whole", "counting", "consecutive"];

/// A run of whole numbers `first, first + step, ..., last`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntRun {
    first: i128,
    last: i128,
    step: i128,
}

impl IntRun {
    /// Whether `v` is one of the run's numbers.
    pub(crate) fn contains(&self, v: Rational) -> bool {
        let Some(n) = v.as_int() else {
            return false;
        };
        n >= self.first
            && n <= self.last
            && n.checked_sub(self.first)
                .and_then(|d| d.checked_rem(self.step))
                .is_some_and(|r| r == 0)
    }
}

/// A token of the problem as the run reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Word(String),
    /// A whole number written in digits (thousands separators allowed).
    Int(i128),
    /// A number that is not a whole number as written (`1.5`), or too large.
    Other,
    /// `...`, `…`, `⋯`, `\cdots`, `\ldots`, `\dots`.
    Ellipsis,
    Sym(char),
}

fn tokens(text: &str) -> Vec<Tok> {
    let cs: Vec<char> = text.chars().take(MAX_PROBLEM_CHARS).collect();
    let mut out = Vec::new();
    let mut i = 0usize;
    let at = |k: usize| cs.get(k).copied();
    while let Some(c) = at(i) {
        if c.is_ascii_digit() {
            let mut digits = String::new();
            let mut whole = true;
            while let Some(d) = at(i) {
                let grouped = d == ','
                    && (1..=3).all(|k| at(i.saturating_add(k)).is_some_and(|x| x.is_ascii_digit()))
                    && !at(i.saturating_add(4)).is_some_and(|x| x.is_ascii_digit());
                if d.is_ascii_digit() {
                    digits.push(d);
                } else if d == '.' && at(i.saturating_add(1)).is_some_and(|x| x.is_ascii_digit()) {
                    whole = false;
                    digits.push(d);
                } else if !grouped {
                    break;
                }
                i = i.saturating_add(1);
            }
            out.push(match digits.parse::<i128>() {
                Ok(n) if whole && n < 1_000_000_000_000 => Tok::Int(n),
                _ => Tok::Other,
            });
        } else if c.is_alphabetic() || c == '\\' {
            let mut w = String::new();
            w.push(c);
            i = i.saturating_add(1);
            while let Some(d) = at(i).filter(|d| d.is_alphabetic()) {
                w.push(d);
                i = i.saturating_add(1);
            }
            let w = w.to_lowercase();
            out.push(match w.as_str() {
                "\\cdots" | "\\ldots" | "\\dots" => Tok::Ellipsis,
                _ if w.starts_with('\\') => Tok::Sym('\\'),
                _ => Tok::Word(w),
            });
        } else if c == '.' && at(i.saturating_add(1)) == Some('.') {
            while at(i) == Some('.') {
                i = i.saturating_add(1);
            }
            out.push(Tok::Ellipsis);
        } else if c == '…' || c == '⋯' {
            out.push(Tok::Ellipsis);
            i = i.saturating_add(1);
        } else {
            if !c.is_whitespace() && c != '$' {
                out.push(Tok::Sym(c));
            }
            i = i.saturating_add(1);
        }
    }
    out
}

fn word(t: Option<&Tok>) -> Option<&str> {
    match t {
        Some(Tok::Word(w)) => Some(w.as_str()),
        _ => None,
    }
}

/// The runs of whole numbers `problem` defines (see the module note).
pub(crate) fn runs_in(problem: &str) -> Vec<IntRun> {
    let toks = tokens(problem);
    let mut out = Vec::new();
    for (i, t) in toks.iter().enumerate() {
        if out.len() >= MAX_RUNS {
            break;
        }
        let run = match t {
            Tok::Word(w) if w == "integers" || w == "numbers" => noun_run(&toks, i),
            Tok::Int(_) => progression(&toks, i),
            _ => None,
        };
        out.extend(run);
    }
    out
}

/// A run named by the plural noun at `toks[noun]`: `[the] [odd] integers [n] from A to B`
/// (`through`, `thru`, `-` for `to`; `between A and B`), or `the first N [odd]
/// positive integers` (`natural numbers`, `counting numbers`).
fn noun_run(toks: &[Tok], noun: usize) -> Option<IntRun> {
    // The qualifiers right before the noun, and what stands before them.
    let mut k = noun;
    let mut parity: Option<i128> = None;
    let mut kinds: Vec<&str> = Vec::new();
    while let Some(w) = k.checked_sub(1).and_then(|j| word(toks.get(j))) {
        match w {
            "odd" => parity = Some(1),
            "even" => parity = Some(0),
            _ if PLAIN_QUALIFIERS.contains(&w) => kinds.push(w),
            _ => break,
        }
        k = k.saturating_sub(1);
    }
    let before = k.checked_sub(1).map(|j| toks.get(j));
    if let Some(run) = first_n(toks, k, noun, parity, &kinds) {
        return Some(run);
    }
    // Only a plain noun phrase: `the prime numbers from 1 to 60` is not a run of all.
    match before {
        None => {}
        Some(t) => {
            let w = word(t)?;
            if !BEFORE.contains(&w) {
                return None;
            }
        }
    }
    let mut j = noun.saturating_add(1);
    // One name for the run's numbers (`integers n from 1 to 60`).
    if word(toks.get(j)).is_some_and(|w| w.chars().count() == 1) {
        j = j.saturating_add(1);
    }
    let opener = word(toks.get(j))?;
    let joiners: &[&str] = match opener {
        "from" => &["to", "through", "thru"],
        "between" => &["and"],
        _ => return None,
    };
    let (Some(Tok::Int(a)), Some(mid), Some(Tok::Int(b))) = (
        toks.get(j.saturating_add(1)),
        toks.get(j.saturating_add(2)),
        toks.get(j.saturating_add(3)),
    ) else {
        return None;
    };
    let joined = match mid {
        Tok::Word(w) => joiners.contains(&w.as_str()),
        Tok::Sym('-' | '–') => opener == "from",
        _ => false,
    };
    // `from 1 to 60.5`, `from 1 to 60%`: not a run of whole numbers.
    let clean_end = !matches!(
        toks.get(j.saturating_add(4)),
        Some(Tok::Sym('%' | '/' | '^'))
    );
    (joined && clean_end && a <= b).then(|| with_parity(*a, *b, parity))?
}

/// `the first N [odd|even] positive integers` (or `natural` / `counting numbers`, or
/// `odd` / `even` alone): the noun phrase runs from `toks[start]` to `toks[noun]`, and
/// `the first N` stands right before it.
fn first_n(
    toks: &[Tok],
    start: usize,
    noun: usize,
    parity: Option<i128>,
    kinds: &[&str],
) -> Option<IntRun> {
    let n = match toks.get(start.checked_sub(1)?) {
        Some(Tok::Int(n)) if *n >= 1 => *n,
        _ => return None,
    };
    if word(toks.get(start.checked_sub(2)?)) != Some("first") {
        return None;
    }
    let whole_from_one = kinds
        .iter()
        .any(|k| ["positive", "natural", "counting"].contains(k))
        && !kinds.contains(&"whole");
    let last = |step: i128, first: i128| n.checked_sub(1)?.checked_mul(step)?.checked_add(first);
    match parity {
        Some(1) if !kinds.contains(&"whole") => Some(IntRun {
            first: 1,
            last: last(2, 1)?,
            step: 2,
        }),
        // `the first 10 even numbers`: from 0 or from 2, as the writer counts.
        Some(0) if !kinds.contains(&"whole") => Some(IntRun {
            first: 0,
            last: last(2, 2)?,
            step: 2,
        }),
        None if whole_from_one
            && (word(toks.get(noun)) == Some("integers")
                || kinds.iter().any(|k| *k == "natural" || *k == "counting")) =>
        {
            Some(IntRun {
                first: 1,
                last: n,
                step: 1,
            })
        }
        _ => None,
    }
}

fn with_parity(a: i128, b: i128, parity: Option<i128>) -> Option<IntRun> {
    let Some(p) = parity else {
        return Some(IntRun {
            first: a,
            last: b,
            step: 1,
        });
    };
    let first = if a.checked_rem_euclid(2)? == p {
        a
    } else {
        a.checked_add(1)?
    };
    (first <= b).then_some(IntRun {
        first,
        last: b,
        step: 2,
    })
}

/// `1 + 2 + 3 + ... + 60` or `2, 4, 6, …, 100` starting at `toks[i]`: at least two terms
/// with one difference between them, an ellipsis, and a last term the progression
/// reaches. `1 + 2 + ... + 60` reads as the integers 1 to 60.
fn progression(toks: &[Tok], i: usize) -> Option<IntRun> {
    // Not a continuation of an earlier progression or a number in a sum (`5 + 1 + 2 ...`).
    if let Some(Tok::Sym('+' | ',' | '-')) = i.checked_sub(1).and_then(|j| toks.get(j)) {
        return None;
    }
    let sep = match toks.get(i.saturating_add(1)) {
        Some(Tok::Sym(c @ ('+' | ','))) => *c,
        _ => return None,
    };
    let mut terms: Vec<i128> = Vec::new();
    let mut j = i;
    loop {
        match toks.get(j) {
            Some(Tok::Int(n)) => terms.push(*n),
            Some(Tok::Ellipsis) => break,
            _ => return None,
        }
        if toks.get(j.saturating_add(1)) != Some(&Tok::Sym(sep)) {
            return None;
        }
        j = j.saturating_add(2);
        if terms.len() > 16 {
            return None;
        }
    }
    // After the ellipsis: the separator, then the last term, and nothing that goes on
    // calculating with it (`... + 60 * 2`).
    if toks.get(j.saturating_add(1)) != Some(&Tok::Sym(sep)) {
        return None;
    }
    let Some(Tok::Int(last)) = toks.get(j.saturating_add(2)) else {
        return None;
    };
    if let Some(Tok::Sym('*' | '×' | '/' | '^' | '·')) = toks.get(j.saturating_add(3)) {
        return None;
    }
    let (&a, &b) = (terms.first()?, terms.get(1)?);
    let step = b.checked_sub(a)?;
    if step <= 0
        || terms
            .windows(2)
            .any(|w| matches!(w, [x, y] if y.checked_sub(*x) != Some(step)))
    {
        return None;
    }
    let reaches = last
        .checked_sub(a)
        .and_then(|d| d.checked_rem(step))
        .is_some_and(|r| r == 0);
    (reaches && *last >= b).then_some(IntRun {
        first: a,
        last: *last,
        step,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn holds(problem: &str, n: i128) -> bool {
        runs_in(problem)
            .iter()
            .any(|r| r.contains(Rational::int(n)))
    }

    #[test]
    fn reads_the_plain_phrasings_of_a_run() {
        let p = "What is the sum of the integers from 1 to 60?";
        assert!((1..=60).all(|n| holds(p, n)));
        assert!(!holds(p, 61) && !holds(p, 0));
        assert!(holds("Add all numbers between 10 and 20.", 15));
        assert!(holds("Find the sum of the first 60 positive integers.", 37));
        assert!(!holds(
            "Find the sum of the first 60 positive integers.",
            61
        ));
        assert!(holds("Compute 1 + 2 + 3 + ... + 60.", 44));
        assert!(holds("Compute $1 + 2 + \\cdots + 100$.", 99));
        assert!(holds("Sum the integers n from 1 through 1,000.", 999));
    }

    #[test]
    fn parity_and_steps_are_kept() {
        let odd = "What is the sum of the odd integers from 1 to 59?";
        assert!(holds(odd, 37) && !holds(odd, 38) && !holds(odd, 61));
        let even = "What is the sum of the even numbers from 1 to 100?";
        assert!(holds(even, 2) && holds(even, 100) && !holds(even, 51));
        let by_three = "Compute 3 + 6 + 9 + ... + 99.";
        assert!(holds(by_three, 27) && !holds(by_three, 28) && !holds(by_three, 102));
        assert!(holds("the first 10 odd numbers", 19) && !holds("the first 10 odd numbers", 21));
    }

    #[test]
    fn nothing_is_read_from_what_only_resembles_a_run() {
        // A qualifier that picks some of the numbers: not all of them are given.
        assert!(!holds("Sum the prime numbers from 1 to 60.", 4));
        assert!(!holds("Sum the multiples of 7 from 1 to 60.", 5));
        // A range of something else, or ends that are not whole numbers.
        assert!(!holds("He read pages from 1 to 60 of the book.", 37));
        assert!(!holds("the integers from 1.5 to 60", 37));
        assert!(!holds("the integers from 1 to 60.5", 37));
        // `the first 10 numbers` may start at 0 or 1: not read.
        assert!(!holds("the first 10 numbers", 5));
        // A sum that is not a progression.
        assert!(!holds("Compute 1 + 2 + 4 + ... + 64.", 3));
        assert!(!holds("Compute 5 + 7 = 12.", 6));
        assert!(runs_in("").is_empty());
    }
}
