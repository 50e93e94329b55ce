//! A recorded tool result against a re-run, under the recorders' rules.
//!
//! A transcript's tool output went through a recorder (an agent harness, a notebook) that
//! may have cut it, re-flowed it, kept only a traceback's last line or printed floats its
//! own way. None of that is the model's doing, so none of it may make a seat vote Invalid:
//! such differences are [`Comparison::Unsure`]. Only a difference in a value — the same
//! token shape with a number beyond tolerance or another word — is [`Comparison::Differs`].

use crate::{Mode, Ran};

/// The verdict of [`compare`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Comparison {
    /// Equal after removing surrounding whitespace.
    Same,
    /// A value differs. `detail` says which token (its index and both values): it is for
    /// the provider only, never for a public reason.
    Differs {
        /// Which token differs, with both values.
        detail: String,
    },
    /// They differ only in a way a recorder could explain, or cannot be aligned.
    Unsure {
        /// Why, without quoting either side.
        why: String,
    },
}

/// The relative tolerance under which two numbers count as one value printed two ways.
const REL_TOL: f64 = 1e-9;
/// The marker ToRA's executor (and many harnesses) put where they cut a long output.
const CUT: &str = "...";
/// Recorders cut only long outputs: a shorter re-run with the marker in the record is a
/// value, not a cut.
const CUT_MIN: usize = 100;

/// Compares a reported result with a re-run's output under the recorder rules of `mode`.
///
/// `Same` when equal after removing surrounding whitespace; `Unsure` (never `Differs`)
/// where the two differ only by what a recorder does: truncation (ToRA cuts outputs longer
/// than 400 characters to the first and last 200 joined by `...`), whitespace and line
/// breaks (pretty-printing), a traceback cut to its last line, float formatting (numbers
/// equal to about 1e-9 relative, or a printed value rounded to the recorder's digits), a
/// set printed in another hash order, the same exception worded by another interpreter
/// version; `Differs` when a value differs: the same token shape but a numeric token
/// beyond tolerance, or a word or string that differs.
pub fn compare(mode: Mode, recorded: &str, rerun: &Ran) -> Comparison {
    // Notebooks colour tracebacks with terminal escapes; a recorder may keep them.
    let plain = strip_ansi(recorded);
    let rec = plain.trim();
    let out = rerun.output.trim();
    if rec == out {
        return Comparison::Same;
    }
    // An empty cell: the recorder may write nothing where the kernel shows the marker.
    if mode == Mode::Cell
        && ((rec.is_empty() && out == "<empty_execution>")
            || (out.is_empty() && rec == "<empty_execution>"))
    {
        return unsure("an empty result recorded as nothing rather than the empty marker");
    }
    // A traceback cut to its last line (or a full one recorded where we keep the last).
    if rerun.raised && traceback_cut(rec, out) {
        return unsure(
            "the error is the same; the recorder kept a different part of its traceback",
        );
    }
    // Truncation at a marker: what the recorder kept is the start and end of the re-run.
    if truncated(rec, out) {
        return unsure("the recorder cut a long output; the parts it kept match");
    }
    let rt = tokens(rec);
    let ot = tokens(out);
    if rt.len() != ot.len() || rt.iter().zip(&ot).any(|(a, b)| a.kind() != b.kind()) {
        return unsure(match mode {
            Mode::Script => "the two outputs have different shapes and cannot be aligned",
            Mode::Cell => "the two displays have different shapes and cannot be aligned",
        });
    }
    // A set (or a dict built from one) prints in hash order, which depends on the hash
    // seed of the recorder's run: the same elements in another order are not a value.
    if rec.contains('{') && out.contains('{') && same_elements(&rt, &ot) && rt != ot {
        return unsure(
            "the same elements in another order (a set's order depends on the hash seed)",
        );
    }
    // Both the same exception: its message's words change between interpreter versions,
    // so only a number in it can be a different value.
    let same_error =
        rerun.raised && error_name(rec).is_some() && error_name(rec) == error_name(out);
    let mut reworded = false;
    let mut formatting = false;
    for (i, (a, b)) in rt.iter().zip(&ot).enumerate() {
        match (a, b) {
            (Tok::Num(x), Tok::Num(y)) => match numbers(x, y) {
                Num::Equal => {}
                Num::Formatted => formatting = true,
                Num::Differ => {
                    return Comparison::Differs {
                        detail: format!("token {i}: recorded {x}, re-run {y}"),
                    };
                }
            },
            (Tok::Word(x), Tok::Word(y)) | (Tok::Punct(x), Tok::Punct(y))
                if x != y && same_error =>
            {
                reworded = true;
            }
            (Tok::Word(x), Tok::Word(y)) | (Tok::Punct(x), Tok::Punct(y)) if x != y => {
                return Comparison::Differs {
                    detail: format!("token {i}: recorded {x}, re-run {y}"),
                };
            }
            _ => {}
        }
    }
    if reworded {
        unsure(
            "the same exception, worded differently (messages change between interpreter versions)",
        )
    } else if formatting {
        unsure("the numbers are equal, printed with different formatting")
    } else {
        unsure("the values are equal; only whitespace or line breaks differ")
    }
}

/// `s` without ANSI colour sequences (ESC `[` parameters, a final letter).
fn strip_ansi(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains('\u{1b}') {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' && chars.peek() == Some(&'[') {
            chars.next();
            for d in chars.by_ref() {
                if d.is_ascii_alphabetic() {
                    break;
                }
            }
        } else {
            out.push(c);
        }
    }
    std::borrow::Cow::Owned(out)
}

fn unsure(why: &str) -> Comparison {
    Comparison::Unsure {
        why: why.to_string(),
    }
}

/// `rec` and `out` end in the same traceback line, one of them holding more of it.
fn traceback_cut(rec: &str, out: &str) -> bool {
    let last = |s: &str| {
        s.lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .map(str::trim)
            .map(String::from)
    };
    match (last(rec), last(out)) {
        (Some(a), Some(b)) => a == b && looks_like_error(&a),
        _ => false,
    }
}

/// The exception named by the last line of `s`, when it is one.
fn error_name(s: &str) -> Option<&str> {
    let line = s.lines().rev().find(|l| !l.trim().is_empty())?.trim();
    looks_like_error(line).then(|| line.split(':').next().unwrap_or_default().trim())
}

/// A Python exception line: `Name: message` or a bare `Name` ending in Error/Exception.
fn looks_like_error(line: &str) -> bool {
    let name = line.split(':').next().unwrap_or_default().trim();
    let name = name.rsplit('.').next().unwrap_or_default();
    !name.is_empty()
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
        && (name.ends_with("Error")
            || name.ends_with("Exception")
            || name.ends_with("Interrupt")
            || name == "StopIteration"
            || name == "SystemExit")
}

/// `rec` is `out` with its middle (or its end) replaced by `...`: every piece of `rec`
/// between markers occurs in `out` in order, the first at its start and the last at its
/// end (unless `rec` ends with the marker), and something was left out.
fn truncated(rec: &str, out: &str) -> bool {
    if !rec.contains(CUT) || out.len() < CUT_MIN || out.len() <= rec.len().saturating_sub(CUT.len())
    {
        return false;
    }
    let pieces: Vec<&str> = rec.split(CUT).collect();
    let Some(first) = pieces.first() else {
        return false;
    };
    // The pieces the recorder kept, trimmed: it may have cut at a line break.
    if first.trim().is_empty() || !out.starts_with(first.trim_end()) {
        return false;
    }
    let mut at = first.trim_end().len();
    let n = pieces.len();
    for (k, p) in pieces.iter().enumerate().skip(1) {
        let p = p.trim();
        if p.is_empty() {
            continue;
        }
        if k + 1 == n {
            // The last piece ends the output.
            return out.ends_with(p) && out.len() >= at + p.len();
        }
        match out.get(at..).and_then(|rest| rest.find(p)) {
            Some(i) => at += i + p.len(),
            None => return false,
        }
    }
    true
}

fn same_elements(a: &[Tok<'_>], b: &[Tok<'_>]) -> bool {
    let mut a: Vec<&Tok<'_>> = a.iter().collect();
    let mut b: Vec<&Tok<'_>> = b.iter().collect();
    a.sort();
    b.sort();
    a == b
}

#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Tok<'a> {
    Num(&'a str),
    Word(&'a str),
    Punct(&'a str),
}

impl Tok<'_> {
    fn kind(&self) -> u8 {
        match self {
            Tok::Num(_) => 0,
            Tok::Word(_) => 1,
            Tok::Punct(_) => 2,
        }
    }
}

/// Numbers (a unary minus, digits, a fraction, an exponent), words (letters, digits,
/// underscores) and single punctuation characters; whitespace separates and is dropped.
fn tokens(s: &str) -> Vec<Tok<'_>> {
    let b = s.as_bytes();
    let mut v = Vec::new();
    let mut i = 0;
    let word = |c: u8| c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80;
    while let Some(&c) = b.get(i) {
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let prev = i.checked_sub(1).and_then(|p| b.get(p)).copied();
        let unary = c == b'-'
            && b.get(i + 1)
                .is_some_and(|d| d.is_ascii_digit() || *d == b'.')
            && !prev.is_some_and(|p| word(p) || p == b')' || p == b']' || p == b'.');
        let starts_num = c.is_ascii_digit()
            || unary
            || (c == b'.'
                && b.get(i + 1).is_some_and(u8::is_ascii_digit)
                && !prev.is_some_and(word));
        if starts_num {
            let start = i;
            if unary {
                i += 1;
            }
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i += 1;
            }
            if b.get(i) == Some(&b'.') && b.get(i + 1).is_none_or(|d| !d.is_ascii_alphabetic()) {
                i += 1;
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
            }
            if matches!(b.get(i), Some(b'e' | b'E')) {
                let mut j = i + 1;
                if matches!(b.get(j), Some(b'+' | b'-')) {
                    j += 1;
                }
                if b.get(j).is_some_and(u8::is_ascii_digit) {
                    i = j;
                    while b.get(i).is_some_and(u8::is_ascii_digit) {
                        i += 1;
                    }
                }
            }
            // A number glued to letters (`3rd`, `0x1f`, `2j`) is a word.
            if b.get(i).is_some_and(|&d| word(d)) {
                while b.get(i).is_some_and(|&d| word(d)) {
                    i += 1;
                }
                v.push(Tok::Word(s.get(start..i).unwrap_or_default()));
            } else {
                v.push(Tok::Num(s.get(start..i).unwrap_or_default()));
            }
        } else if word(c) {
            let start = i;
            while b.get(i).is_some_and(|&d| word(d)) {
                i += 1;
            }
            v.push(Tok::Word(s.get(start..i).unwrap_or_default()));
        } else {
            v.push(Tok::Punct(s.get(i..i + 1).unwrap_or_default()));
            i += 1;
        }
    }
    v
}

enum Num {
    Equal,
    Formatted,
    Differ,
}

fn is_integer(s: &str) -> bool {
    let d = s.strip_prefix('-').unwrap_or(s);
    !d.is_empty() && d.bytes().all(|c| c.is_ascii_digit())
}

/// Two numeric tokens: the same text, the same value printed two ways, or two values.
/// Integers compare exactly (a float cannot hold a long one); otherwise equal to 1e-9
/// relative, or the recorded one is the re-run rounded or cut to the recorded one's
/// decimals when it keeps at least six significant digits (C's `%g`, a harness's rounding).
fn numbers(rec: &str, out: &str) -> Num {
    if rec == out {
        return Num::Equal;
    }
    if is_integer(rec) && is_integer(out) {
        let strip = |s: &str| {
            let (neg, d) = s.strip_prefix('-').map_or((false, s), |d| (true, d));
            let d = d.trim_start_matches('0');
            (neg && !d.is_empty(), d.to_string())
        };
        return if strip(rec) == strip(out) {
            Num::Formatted
        } else {
            Num::Differ
        };
    }
    let (Ok(a), Ok(b)) = (rec.parse::<f64>(), out.parse::<f64>()) else {
        return Num::Differ;
    };
    if a == b || (a - b).abs() <= REL_TOL * a.abs().max(b.abs()) {
        return Num::Formatted;
    }
    let mantissa = rec.split(['e', 'E']).next().unwrap_or_default();
    let significant = mantissa
        .bytes()
        .filter(u8::is_ascii_digit)
        .skip_while(|&c| c == b'0')
        .count();
    let decimals = mantissa.split_once('.').map_or(0, |(_, f)| f.len());
    if significant >= 6 && !rec.contains(['e', 'E']) && !out.contains(['e', 'E']) {
        let scale = 10f64.powi(i32::try_from(decimals).unwrap_or(i32::MAX));
        let half_ulp = 0.5 / scale;
        // Rounded: within half a unit of the last kept digit; cut: below one unit.
        let toward_zero = (b - a) * a.signum();
        if (a - b).abs() <= half_ulp * (1.0 + 1e-9) || (0.0..1.0 / scale).contains(&toward_zero) {
            return Num::Formatted;
        }
    }
    Num::Differ
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Display;

    fn ran(s: &str) -> Ran {
        Ran {
            output: s.to_string(),
            raised: false,
            display: Display::None,
        }
    }
    fn raised(s: &str) -> Ran {
        Ran {
            output: s.to_string(),
            raised: true,
            display: Display::None,
        }
    }
    fn is_unsure(c: &Comparison) -> bool {
        matches!(c, Comparison::Unsure { .. })
    }

    #[test]
    fn equal_after_trimming_is_same() {
        assert_eq!(
            compare(Mode::Script, "  43500.0\n", &ran("43500.0")),
            Comparison::Same
        );
        assert_eq!(
            compare(Mode::Cell, "[1, 2]", &ran("\n[1, 2]\n\n")),
            Comparison::Same
        );
    }

    #[test]
    fn a_changed_number_differs_and_says_which_token() {
        let c = compare(Mode::Script, "43000.0", &ran("43500.0"));
        assert_eq!(
            c,
            Comparison::Differs {
                detail: "token 0: recorded 43000.0, re-run 43500.0".into()
            }
        );
        // The tampered list element of the corpus: one element in a pretty-printed list.
        let rerun = "[11,\n 13,\n 83,\n 89,\n 97]";
        let rec = "[11,\n 13,\n 87,\n 89,\n 97]";
        match compare(Mode::Cell, rec, &ran(rerun)) {
            Comparison::Differs { detail } => {
                assert!(detail.contains("87") && detail.contains("83"), "{detail}")
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            compare(Mode::Script, "150", &ran("100")),
            Comparison::Differs { .. }
        ));
        assert!(matches!(
            compare(Mode::Script, "6.0", &ran("5.0")),
            Comparison::Differs { .. }
        ));
    }

    #[test]
    fn a_changed_sign_or_word_differs() {
        assert!(matches!(
            compare(Mode::Script, "12", &ran("-12")),
            Comparison::Differs { .. }
        ));
        assert!(matches!(
            compare(Mode::Script, "(2, -3)", &ran("(2, 3)")),
            Comparison::Differs { .. }
        ));
        assert!(matches!(
            compare(Mode::Cell, "True", &ran("False")),
            Comparison::Differs { .. }
        ));
        assert!(matches!(
            compare(Mode::Cell, "'abc'", &ran("'abd'")),
            Comparison::Differs { .. }
        ));
        // Subtraction is not a sign: `5-3` and `5 -3` have different shapes, never a value.
        assert_eq!(
            tokens("5-3"),
            vec![Tok::Num("5"), Tok::Punct("-"), Tok::Num("3")]
        );
    }

    #[test]
    fn long_integers_compare_exactly() {
        let a = "123456789012345678901234567890";
        let b = "123456789012345678901234567891";
        assert!(matches!(
            compare(Mode::Script, a, &ran(b)),
            Comparison::Differs { .. }
        ));
    }

    #[test]
    fn pretty_printing_whitespace_is_unsure_not_differs() {
        let c = compare(Mode::Cell, "[1, 2, 3]", &ran("[1,\n 2,\n 3]"));
        assert!(is_unsure(&c), "{c:?}");
    }

    #[test]
    fn float_formatting_is_unsure() {
        assert!(is_unsure(&compare(Mode::Script, "3", &ran("3.0"))));
        assert!(is_unsure(&compare(
            Mode::Script,
            "0.30000000000000004",
            &ran("0.3")
        )));
        assert!(is_unsure(&compare(Mode::Script, "1e-05", &ran("0.00001"))));
        // Rounded or cut to six significant digits by the recorder.
        assert!(is_unsure(&compare(
            Mode::Script,
            "0.333333",
            &ran("0.3333333333333333")
        )));
        assert!(is_unsure(&compare(
            Mode::Script,
            "0.666667",
            &ran("0.6666666666666666")
        )));
        assert!(is_unsure(&compare(
            Mode::Script,
            "0.666666",
            &ran("0.6666666666666666")
        )));
        // Too few digits to call it rounding: a value.
        assert!(matches!(
            compare(Mode::Script, "0.3", &ran("0.34")),
            Comparison::Differs { .. }
        ));
        assert!(matches!(
            compare(Mode::Script, "0.333334", &ran("0.3333333333333333")),
            Comparison::Differs { .. }
        ));
    }

    #[test]
    fn tora_truncation_is_unsure() {
        let out: String = (0..300).map(|i| format!("{i} ")).collect();
        let out = out.trim();
        let cut = format!("{}...{}", &out[..200], &out[out.len() - 200..]);
        assert!(is_unsure(&compare(Mode::Script, &cut, &ran(out))));
        // A cut whose kept end does not match the re-run is a shape problem, not Same.
        let bad = format!("{}...{}", &out[..200], "999 1000");
        assert_ne!(compare(Mode::Script, &bad, &ran(out)), Comparison::Same);
        // Dots in a short value are not a cut.
        assert!(!truncated("1...5", "12345"));
    }

    #[test]
    fn a_traceback_cut_to_its_last_line_is_unsure() {
        let full = "Traceback (most recent call last):\n  File \"<cell>\", line 1, in <module>\nZeroDivisionError: division by zero";
        assert!(is_unsure(&compare(
            Mode::Cell,
            full,
            &raised("ZeroDivisionError: division by zero")
        )));
        assert!(is_unsure(&compare(
            Mode::Script,
            "ZeroDivisionError: division by zero",
            &raised(full)
        )));
        // A different error is a different value.
        assert_ne!(
            compare(
                Mode::Script,
                "ZeroDivisionError: division by zero",
                &raised("NameError: name 'x' is not defined")
            ),
            Comparison::Same
        );
    }

    #[test]
    fn a_set_in_another_order_is_unsure_but_a_changed_element_differs() {
        assert!(is_unsure(&compare(
            Mode::Script,
            "{'b', 'a', 'c'}",
            &ran("{'a', 'c', 'b'}")
        )));
        let c = compare(Mode::Script, "{'b', 'a', 'd'}", &ran("{'a', 'c', 'b'}"));
        assert!(!is_unsure(&c) && c != Comparison::Same, "{c:?}");
        // Outside braces order is a value: a tuple's two numbers swapped differ.
        assert!(matches!(
            compare(Mode::Script, "(4, 6)", &ran("(6, 4)")),
            Comparison::Differs { .. }
        ));
    }

    #[test]
    fn a_coloured_traceback_reads_as_its_text() {
        let rec = "\u{1b}[0;31m---------\u{1b}[0m\n\u{1b}[0;31mZeroDivisionError\u{1b}[0m: division by zero";
        let c = compare(
            Mode::Cell,
            rec,
            &raised("ZeroDivisionError: division by zero"),
        );
        assert!(is_unsure(&c), "{c:?}");
        assert_eq!(
            compare(Mode::Cell, "\u{1b}[1m42\u{1b}[0m", &ran("42")),
            Comparison::Same
        );
    }

    #[test]
    fn one_exception_worded_by_another_version_is_unsure() {
        let c = compare(
            Mode::Script,
            "TypeError: unsupported operand for +: 'int' and 'str'",
            &raised("TypeError: unsupported operand for +: 'int' and 'list'"),
        );
        assert!(is_unsure(&c), "{c:?}");
        // A number in the message is still a value.
        let c = compare(
            Mode::Script,
            "IndexError: index 6 is out of range",
            &raised("IndexError: index 5 is out of range"),
        );
        assert!(matches!(c, Comparison::Differs { .. }), "{c:?}");
        // Another exception is another result.
        let c = compare(Mode::Script, "KeyError: 'a'", &raised("NameError: 'a'"));
        assert!(matches!(c, Comparison::Differs { .. }), "{c:?}");
    }

    #[test]
    fn shapes_that_do_not_align_are_unsure() {
        assert!(is_unsure(&compare(
            Mode::Script,
            "Fraction(1, 2)",
            &ran("1/2")
        )));
        assert!(is_unsure(&compare(
            Mode::Cell,
            "",
            &ran("<empty_execution>")
        )));
    }

    mod prop {
        use proptest::prelude::*;

        use super::*;

        /// Outputs like a tool's: numbers, words, brackets, commas, line breaks.
        fn output() -> impl Strategy<Value = String> {
            proptest::collection::vec(
                prop_oneof![
                    (-100000i64..100000).prop_map(|n| n.to_string()),
                    (-1.0e6f64..1.0e6).prop_map(|f| f.to_string()),
                    "[a-z]{1,8}",
                    Just("[".to_string()),
                    Just("]".to_string()),
                    Just(", ".to_string()),
                    Just("\n ".to_string()),
                    Just(": ".to_string()),
                ],
                1..30,
            )
            .prop_map(|v| v.concat())
        }

        proptest! {
            #[test]
            fn equal_outputs_are_same(s in output(), pad in "[ \n\t]{0,3}") {
                prop_assert_eq!(compare(Mode::Script, &format!("{pad}{s}{pad}"), &ran(&s)), Comparison::Same);
            }

            #[test]
            fn reflowed_whitespace_never_differs(s in output()) {
                let reflowed = s.replace(", ", ",\n ").replace("\n ", " ");
                let c = compare(Mode::Cell, &reflowed, &ran(&s));
                prop_assert!(!matches!(c, Comparison::Differs { .. }), "{:?}", c);
            }

            #[test]
            fn a_changed_integer_always_differs(
                head in output(), n in 0i64..1000000, bump in 1i64..1000, tail in output()
            ) {
                let run = format!("{head} {n} {tail}");
                let rec = format!("{head} {} {tail}", n + bump);
                let c = compare(Mode::Script, &rec, &ran(&run));
                prop_assert!(matches!(c, Comparison::Differs { .. }), "{:?}", c);
            }

            #[test]
            fn arbitrary_text_never_panics(a in "\\PC{0,60}", b in "\\PC{0,60}") {
                let _ = compare(Mode::Script, &a, &ran(&b));
                let _ = compare(Mode::Cell, &a, &raised(&b));
            }
        }
    }
}
