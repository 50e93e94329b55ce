//! Readings of a step's text: how people and models write calculations, turned into the
//! equality chains the checker evaluates.
//!
//! A step is prose around mathematics, and the same characters can mean different things
//! (`3 x 4` is a product, `3x` an unknown times three; `13÷1/2` is `13 ÷ ½` to a reader;
//! `8 kg * 2 - 2 = 14 kg/donkey` is arithmetic once the units are read as units). This
//! module owns those readings. The checker then decides: a clause is wrong only when every
//! reading that parses fails, and right when one holds.
//!
//! Steps:
//! - [`clean`]: markdown emphasis, list markers, `Step 1:`, LaTeX (`\frac`, `\cdot`,
//!   `\left(`, `$…$`), currency signs, thousands separators, GSM8K `<<48/2=24>>`
//!   annotations (their calculation is kept as a clause of its own).
//! - [`clauses`]: a step cut at clause boundaries (`;`, `, `, sentence ends, `and`, `so`,
//!   `which`, …), so each calculation is judged on its own.
//! - [`readings`]: for one clause, up to [`MAX_READINGS`] token streams — literal (words
//!   are barriers), words as operators (`half of`, `twice`, `times`, `percent`), units
//!   dropped, `x` as a times sign, `÷` before a fraction grouped — and the equality
//!   chains each one yields. A chain is kept only when its ends are clean: an operator or
//!   an operator word (`of`, `times`) right next to it means the text around it was part
//!   of the calculation, and that reading cannot read it.

use std::collections::BTreeSet;

use super::expr::{Expr, Rational};

/// Most readings of one clause.
pub(crate) const MAX_READINGS: usize = 16;
/// Most characters of a text the reader looks at (problem statements included).
const MAX_TEXT_CHARS: usize = 6000;
/// Most tokens in one clause; longer clauses are prose.
const MAX_CLAUSE_TOKENS: usize = 420;
/// Most tokens in one run of mathematics (the parser recurses on parentheses).
const MAX_RUN_TOKENS: usize = 400;
/// Single letters that name functions when written right before `(` (`f(2)`, `P(A)`);
/// other letters before `(` multiply (`a(b + c)`).
const FUNCTION_NAMES: [&str; 11] = ["f", "g", "h", "F", "G", "H", "P", "C", "E", "V", "T"];
/// Joining words that are also units when the units are dropped (`$5 per hour`, `4 dozen`,
/// `3 hundred`).
const UNIT_LIKE: [&str; 6] = ["per", "dozen", "dozens", "hundred", "thousand", "million"];
/// Most chains taken from one text.
const MAX_CHAINS: usize = 64;

/// One equality chain as read: `parts[0] = parts[1] ≈ parts[2] ...`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Chain {
    /// The sides, in order.
    pub(crate) parts: Vec<Expr>,
    /// For each adjacent pair, whether it was written `≈` (an approximation).
    pub(crate) approx: Vec<bool>,
    /// The text the chain was rendered from (for reasons).
    pub(crate) text: String,
    /// Words come right before it: a bare value first may belong to them (`an increase
    /// of 20% = 1.2 × 50`).
    pub(crate) after_words: bool,
}

/// A token of prose-with-mathematics.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tk {
    /// A number as written (`48`, `0.5`, `1.2`), possibly a percentage.
    Num {
        text: String,
        pct: bool,
    },
    /// A short name the expression parser accepts (`x`, `D`, `t1`).
    Name(String),
    /// Any other word, lower-cased.
    Word(String),
    Op(char),
    L,
    R,
    /// `=` (false) or `≈` (true).
    Eq(bool),
    /// Punctuation or a symbol no reading uses: ends a calculation.
    Bar,
    /// Where a dropped word was (units reading): between two operands it is a barrier,
    /// next to an operator it disappears.
    Gap,
}

// ---------------------------------------------------------------------------------------
// Cleaning

/// The text with markup removed and notation made uniform, and the GSM8K annotations
/// (`<<48/2=24>>`) found in it.
pub(crate) fn clean(text: &str) -> (String, Vec<String>) {
    let text: String = text.chars().take(MAX_TEXT_CHARS).collect();
    let (text, notes) = annotations(&text);
    let text = emphasis(&latex(&text));
    let mut out = String::with_capacity(text.len());
    for line in text.lines() {
        out.push_str(strip_marker(line));
        out.push('\n');
    }
    let out = thousands(&out);
    // Currency and LaTeX delimiters: `$50 − $42 = $8` and `$3x - 7 = 2x + 7$` both read
    // as their numbers once the signs are gone; words around them stay barriers.
    let out: String = out
        .chars()
        .map(|c| match c {
            '$' | '€' | '£' | '¥' | '₹' => ' ',
            '−' | '–' => '-',
            '×' | '·' | '⋅' | '∗' => '*',
            '≃' | '≅' => '≈',
            c => c,
        })
        .collect();
    // `5²`, `x³`: superscript powers.
    let out = out.replace('²', "^2").replace('³', "^3");
    (out, notes)
}

/// Removes `<<a=b>>` annotations and returns their contents.
fn annotations(text: &str) -> (String, Vec<String>) {
    let mut out = String::with_capacity(text.len());
    let mut notes = Vec::new();
    let mut rest = text;
    while let Some(open) = rest.find("<<") {
        let (before, after) = rest.split_at(open);
        out.push_str(before);
        let inner = after.get(2..).unwrap_or("");
        match inner.find(">>") {
            Some(close) => {
                if notes.len() < MAX_CHAINS {
                    notes.push(inner.get(..close).unwrap_or("").to_string());
                }
                out.push(' ');
                rest = inner.get(close.saturating_add(2)..).unwrap_or("");
            }
            None => {
                out.push_str(after);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    (out, notes)
}

/// Strips a list marker (`1.`, `2)`, `-`, `*`, `•`, `Step 3:`, `#`) from a line: the
/// checker reads a step without it, and the decomposer cuts units after it.
pub(crate) fn strip_marker(line: &str) -> &str {
    let t = line.trim_start().trim_start_matches('#').trim_start();
    for bullet in ["- ", "* ", "• ", "+ ", "> "] {
        if let Some(r) = t.strip_prefix(bullet) {
            return r.trim_start();
        }
    }
    let digits = t.bytes().take_while(u8::is_ascii_digit).count();
    if (1..=3).contains(&digits) {
        let rest = t.get(digits..).unwrap_or("");
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return r.trim_start();
        }
    }
    let lower = t.get(..5).map(str::to_ascii_lowercase);
    if lower.as_deref() == Some("step ") {
        let rest = t.get(5..).unwrap_or("");
        let d = rest.bytes().take_while(u8::is_ascii_digit).count();
        if d > 0
            && let Some(r) = rest.get(d..).and_then(|r| {
                r.trim_start_matches("**")
                    .strip_prefix(':')
                    .or_else(|| r.strip_prefix('.'))
                    .or_else(|| r.strip_prefix(')'))
            })
        {
            return r.trim_start();
        }
    }
    // `(a) `, `(ii) `, `(3) `, `b) `: an item label, not a factor.
    let inner = t.strip_prefix('(').unwrap_or(t);
    if let Some(close) = inner.find(") ")
        && (1..=4).contains(&close)
        && inner
            .get(..close)
            .is_some_and(|l| l.chars().all(|c| c.is_ascii_alphanumeric()))
        && (t.starts_with('(') || close == 1)
    {
        return inner
            .get(close.saturating_add(2)..)
            .unwrap_or("")
            .trim_start();
    }
    t
}

/// Removes markdown emphasis (`**`, `__`, backticks) except `**` between digits (a power
/// in some notations).
fn emphasis(text: &str) -> String {
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0usize;
    while let Some(&c) = cs.get(i) {
        let next = cs.get(i.saturating_add(1)).copied();
        if (c == '*' && next == Some('*')) || (c == '_' && next == Some('_')) {
            let before = i.checked_sub(1).and_then(|j| cs.get(j)).copied();
            let after = cs.get(i.saturating_add(2)).copied();
            if c == '*'
                && before.is_some_and(|b| b.is_ascii_digit())
                && after.is_some_and(|a| a.is_ascii_digit())
            {
                out.push('^');
            } else {
                out.push(' ');
            }
            i = i.saturating_add(2);
            continue;
        }
        if c == '`' {
            out.push(' ');
        } else {
            out.push(c);
        }
        i = i.saturating_add(1);
    }
    out
}

/// `1,200` → `1200`: a comma between a digit and exactly three digits.
fn thousands(text: &str) -> String {
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    for (i, &c) in cs.iter().enumerate() {
        if c == ','
            && i.checked_sub(1)
                .and_then(|j| cs.get(j))
                .is_some_and(char::is_ascii_digit)
            && (1..=3).all(|k| {
                cs.get(i.saturating_add(k))
                    .is_some_and(char::is_ascii_digit)
            })
            && !cs
                .get(i.saturating_add(4))
                .is_some_and(char::is_ascii_digit)
        {
            continue;
        }
        out.push(c);
    }
    out
}

/// What a LaTeX brace group becomes when it closes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Brace {
    /// `\text{kg}`: the words, no parenthesis.
    Text,
    /// The numerator of `\frac`: `)/(` and the denominator opens.
    Numerator,
    /// The denominator of `\frac`: `))`.
    Denominator,
    /// Any other group: `)`.
    Group,
}

/// LaTeX notation to plain notation: `\frac{a}{b}` → `((a)/(b))`, `\cdot` and `\times` →
/// `*`, `\div` → `÷`, `\left(` → `(`, spacing commands removed, `\text{kg}` → `kg`,
/// braces → parentheses (`^{2}` → `^2`).
fn latex(text: &str) -> String {
    if !text.contains('\\') && !text.contains('{') {
        return text.to_string();
    }
    let cs: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0usize;
    // What each open brace closes into.
    let mut brace_kinds: Vec<Brace> = Vec::new();
    while let Some(&c) = cs.get(i) {
        if c == '\\' {
            let mut j = i.saturating_add(1);
            let mut name = String::new();
            while let Some(&d) = cs.get(j) {
                if d.is_ascii_alphabetic() {
                    name.push(d);
                    j = j.saturating_add(1);
                } else {
                    break;
                }
            }
            if name.is_empty() {
                // `\,` `\;` `\!` `\:` `\ ` spacing; `\%` `\$` escapes; `\(` `\[` delimiters.
                let digit_before = i
                    .checked_sub(1)
                    .and_then(|k| cs.get(k))
                    .is_some_and(char::is_ascii_digit);
                let digit_after = cs
                    .get(j.saturating_add(1))
                    .is_some_and(char::is_ascii_digit);
                match cs.get(j) {
                    // `1\,200`: a thin space between digit groups.
                    Some(',') if digit_before && digit_after => {}
                    Some('%') => out.push('%'),
                    Some('$') => out.push('$'),
                    Some('{') => out.push('('),
                    Some('}') => out.push(')'),
                    _ => out.push(' '),
                }
                i = j.saturating_add(1);
                continue;
            }
            i = j;
            match name.as_str() {
                "frac" | "dfrac" | "tfrac" => {
                    out.push_str("((");
                    // The next `{` opens the numerator.
                    if cs.get(i) == Some(&'{') {
                        brace_kinds.push(Brace::Numerator);
                        i = i.saturating_add(1);
                    }
                }
                "cdot" | "times" | "ast" => out.push_str(" * "),
                "div" => out.push_str(" ÷ "),
                "approx" | "simeq" => out.push_str(" ≈ "),
                "left" | "right" | "big" | "Big" | "bigg" | "Bigg" | "displaystyle" => {}
                "quad" | "qquad" | "space" => out.push(' '),
                "text" | "mathrm" | "textbf" | "mathbf" | "boxed" | "textit" | "operatorname" => {
                    if cs.get(i) == Some(&'{') {
                        brace_kinds.push(Brace::Text);
                        out.push(' ');
                        i = i.saturating_add(1);
                    }
                }
                "implies" | "Rightarrow" | "therefore" => out.push_str(" ; "),
                "rightarrow" | "to" => out.push_str(" → "),
                "pm" | "mp" | "sqrt" | "le" | "ge" | "leq" | "geq" | "neq" | "ne" | "lt" | "gt" => {
                    // Not arithmetic the checker decides: a barrier.
                    out.push_str(" ⟂ ");
                }
                _ => out.push(' '),
            }
            continue;
        }
        match c {
            '{' => {
                brace_kinds.push(Brace::Group);
                out.push('(');
            }
            '}' => match brace_kinds.pop() {
                Some(Brace::Text) => out.push(' '),
                Some(Brace::Numerator) => {
                    // The numerator closed: the denominator group follows.
                    out.push_str(")/(");
                    if cs.get(i.saturating_add(1)) == Some(&'{') {
                        brace_kinds.push(Brace::Denominator);
                        i = i.saturating_add(1);
                    }
                }
                Some(Brace::Denominator) => {
                    out.push_str("))");
                }
                _ => out.push(')'),
            },
            c => out.push(c),
        }
        i = i.saturating_add(1);
    }
    // `^(2)` → `^2`: the expression parser takes whole-number exponents.
    let mut fixed = String::with_capacity(out.len());
    let oc: Vec<char> = out.chars().collect();
    let mut k = 0usize;
    while let Some(&c) = oc.get(k) {
        if c == '^' && oc.get(k.saturating_add(1)) == Some(&'(') {
            let digits: String = oc
                .iter()
                .skip(k.saturating_add(2))
                .take_while(|d| d.is_ascii_digit())
                .collect();
            if !digits.is_empty()
                && oc.get(k.saturating_add(2).saturating_add(digits.len())) == Some(&')')
            {
                fixed.push('^');
                fixed.push_str(&digits);
                k = k.saturating_add(3).saturating_add(digits.len());
                continue;
            }
        }
        fixed.push(c);
        k = k.saturating_add(1);
    }
    fixed
}

// ---------------------------------------------------------------------------------------
// Clauses

/// Words that start a new clause (the calculation before them is complete).
const CLAUSE_WORDS: [&str; 14] = [
    "and",
    "so",
    "then",
    "which",
    "thus",
    "hence",
    "therefore",
    "giving",
    "gives",
    "yielding",
    "but",
    "while",
    "because",
    "since",
];

/// A cleaned text cut into clauses: at `;`, `, `, sentence ends (`. ` and line breaks), and
/// before clause words (`and`, `so`, `which`, …).
pub(crate) fn clauses(cleaned: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let cs: Vec<char> = cleaned.chars().collect();
    let mut i = 0usize;
    let flush = |cur: &mut String, out: &mut Vec<String>| {
        let t = cur.trim();
        if !t.is_empty() && out.len() < MAX_CHAINS {
            out.push(t.to_string());
        }
        cur.clear();
    };
    while let Some(&c) = cs.get(i) {
        let next = cs.get(i.saturating_add(1)).copied();
        let boundary = match c {
            ';' | '\n' | '⟹' | '⇒' => true,
            ',' | '.' | '?' | '!' | ':' => next.is_none_or(char::is_whitespace),
            _ => false,
        };
        if boundary {
            flush(&mut cur, &mut out);
            i = i.saturating_add(1);
            continue;
        }
        if c.is_alphabetic()
            && i.checked_sub(1)
                .and_then(|j| cs.get(j))
                .is_none_or(|p| !p.is_alphanumeric())
        {
            let word: String = cs
                .iter()
                .skip(i)
                .take_while(|d| d.is_alphabetic())
                .collect();
            let lower = word.to_lowercase();
            if CLAUSE_WORDS.contains(&lower.as_str()) {
                flush(&mut cur, &mut out);
                i = i.saturating_add(word.chars().count());
                continue;
            }
        }
        cur.push(c);
        i = i.saturating_add(1);
    }
    flush(&mut cur, &mut out);
    out
}

// ---------------------------------------------------------------------------------------
// Tokens

/// A name the expression parser accepts: one letter, or a letter and up to two digits or
/// underscores (`t1`, `x_2`).
fn is_name(w: &str) -> bool {
    let n = w.chars().count();
    let mut cs = w.chars();
    let Some(first) = cs.next() else { return false };
    first.is_alphabetic()
        && (n == 1 || (n <= 3 && w.chars().skip(1).all(|c| c.is_ascii_digit() || c == '_')))
}

fn tokens(clause: &str) -> Vec<Tk> {
    let cs: Vec<char> = clause.chars().collect();
    let mut out = Vec::new();
    let mut i = 0usize;
    while let Some(&c) = cs.get(i) {
        if out.len() > MAX_CLAUSE_TOKENS {
            out.push(Tk::Bar);
            break;
        }
        if c.is_whitespace() {
            i = i.saturating_add(1);
        } else if c.is_ascii_digit()
            || (c == '.'
                && cs
                    .get(i.saturating_add(1))
                    .is_some_and(char::is_ascii_digit))
        {
            let start = i;
            let mut seen_dot = false;
            while let Some(&d) = cs.get(i) {
                if d.is_ascii_digit() {
                    i = i.saturating_add(1);
                } else if d == '.'
                    && !seen_dot
                    && cs
                        .get(i.saturating_add(1))
                        .is_some_and(char::is_ascii_digit)
                {
                    seen_dot = true;
                    i = i.saturating_add(1);
                } else {
                    break;
                }
            }
            let mut text: String = cs.get(start..i).unwrap_or(&[]).iter().collect();
            // A trailing ellipsis marks a truncated decimal: keep it for the parser.
            if cs.get(i) == Some(&'.') && cs.get(i.saturating_add(1)) == Some(&'.') {
                while matches!(cs.get(i), Some('.')) {
                    i = i.saturating_add(1);
                }
                text.push_str("...");
            } else if cs.get(i) == Some(&'…') {
                i = i.saturating_add(1);
                text.push_str("...");
            }
            let pct = cs.get(i) == Some(&'%');
            if pct {
                i = i.saturating_add(1);
            }
            out.push(Tk::Num { text, pct });
        } else if matches!(c, 'x' | 'X')
            && i.checked_sub(1)
                .and_then(|j| cs.get(j))
                .is_some_and(|p| p.is_ascii_digit() || *p == ')')
            && cs
                .get(i.saturating_add(1))
                .is_some_and(|n| n.is_ascii_digit() || *n == '.' || *n == '(')
        {
            // `66x0.5`, `5x2`: an `x` glued between numbers stands alone (a times sign or
            // a name, as the readings decide), never the name `x0`.
            out.push(Tk::Name(c.to_string()));
            i = i.saturating_add(1);
        } else if c.is_alphabetic() {
            let start = i;
            while let Some(&d) = cs.get(i) {
                if d.is_alphanumeric()
                    || d == '_'
                    || (d == '\''
                        && cs
                            .get(i.saturating_add(1))
                            .is_some_and(|e| e.is_alphabetic()))
                {
                    i = i.saturating_add(1);
                } else {
                    break;
                }
            }
            let w: String = cs.get(start..i).unwrap_or(&[]).iter().collect();
            let function =
                cs.get(i) == Some(&'(') && (!is_name(&w) || FUNCTION_NAMES.contains(&w.as_str()));
            if function {
                // `gcd(790, 1290)`, `f(2)`: a function applied to arguments is one opaque
                // value, never a product with what is in the parentheses.
                let mut depth = 0usize;
                while let Some(&d) = cs.get(i) {
                    i = i.saturating_add(1);
                    match d {
                        '(' => depth = depth.saturating_add(1),
                        ')' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => {}
                    }
                }
                out.push(Tk::Word(format!("{}()", w.to_lowercase())));
            } else if is_name(&w) {
                out.push(Tk::Name(w));
            } else {
                out.push(Tk::Word(w.to_lowercase()));
            }
        } else {
            i = i.saturating_add(1);
            out.push(match c {
                '=' => {
                    while cs.get(i) == Some(&'=') {
                        i = i.saturating_add(1);
                    }
                    Tk::Eq(false)
                }
                '≈' => Tk::Eq(true),
                '~' if cs.get(i) == Some(&'=') => {
                    i = i.saturating_add(1);
                    Tk::Eq(true)
                }
                '-' if cs.get(i) == Some(&'>') => {
                    i = i.saturating_add(1);
                    Tk::Bar
                }
                '+' | '-' | '*' | '/' | '^' | '÷' => Tk::Op(c),
                '(' | '[' => Tk::L,
                ')' | ']' => Tk::R,
                _ => Tk::Bar,
            });
        }
    }
    articles_as_words(&mut out);
    out
}

/// `a`, `A` and `I` are names only next to mathematics (`a + b`, `I = 3`); in prose
/// they are words.
fn articles_as_words(ts: &mut [Tk]) {
    let mathy = |t: Option<&Tk>| matches!(t, Some(Tk::Op(_) | Tk::Eq(_) | Tk::L | Tk::R));
    for i in 0..ts.len() {
        let article =
            matches!(ts.get(i), Some(Tk::Name(n)) if matches!(n.as_str(), "a" | "A" | "I"));
        if article
            && !mathy(i.checked_sub(1).and_then(|j| ts.get(j)))
            && !mathy(ts.get(i.saturating_add(1)))
            && let Some(t) = ts.get_mut(i)
            && let Tk::Name(n) = t
        {
            *t = Tk::Word(n.to_lowercase());
        }
    }
}

fn is_operand_end(t: Option<&Tk>) -> bool {
    matches!(t, Some(Tk::Num { .. } | Tk::Name(_) | Tk::R))
}

fn is_operand_start(t: Option<&Tk>) -> bool {
    matches!(t, Some(Tk::Num { .. } | Tk::Name(_) | Tk::L))
}

// ---------------------------------------------------------------------------------------
// Readings

/// Words that join a calculation to its neighbour (`half of 48`, `3 times 4`, `5 more
/// than 3`): a chain right next to one was cut out of a longer calculation. `after` is
/// what follows the word (`more than the bagels` compares, `more than 3` calculates).
fn joins(word: &str, before: Option<&Tk>, after: &[Tk]) -> bool {
    let numeric = |t: Option<&Tk>| {
        matches!(t, Some(Tk::Num { .. } | Tk::L))
            || matches!(t, Some(Tk::Word(w)) if number_word(w).is_some())
    };
    match word {
        "of" | "times" | "dozen" | "dozens" | "hundred" | "thousand" | "million" | "percent" => {
            is_operand_end(before)
                || matches!(before, Some(Tk::Word(w)) if number_word(w).is_some())
        }
        "more" | "less" | "fewer" => {
            matches!(after.first(), Some(Tk::Word(w)) if w == "than") && numeric(after.get(1))
        }
        "than" => numeric(after.first()),
        "plus" | "minus" | "over" | "by" | "per" | "half" | "twice" | "double" | "triple"
        | "thrice" | "quadruple" | "quarter" | "third" | "thirds" | "fourth" | "fifth"
        | "tenth" | "squared" | "cubed" | "multiplied" | "divided" => true,
        w => number_word(w).is_some(),
    }
}

/// The value of a number word (`twelve`, `dozen`, `half`, `twice`).
pub(crate) fn number_word(w: &str) -> Option<(i128, i128)> {
    Some(match w {
        "zero" | "none" => (0, 1),
        "one" | "once" | "single" => (1, 1),
        "two" | "twice" | "double" | "pair" | "both" => (2, 1),
        "three" | "thrice" | "triple" => (3, 1),
        "four" | "quadruple" => (4, 1),
        "five" => (5, 1),
        "six" => (6, 1),
        "seven" => (7, 1),
        "eight" => (8, 1),
        "nine" => (9, 1),
        "ten" => (10, 1),
        "eleven" => (11, 1),
        "twelve" | "dozen" => (12, 1),
        "thirteen" => (13, 1),
        "fourteen" => (14, 1),
        "fifteen" => (15, 1),
        "sixteen" => (16, 1),
        "seventeen" => (17, 1),
        "eighteen" => (18, 1),
        "nineteen" => (19, 1),
        "twenty" | "score" => (20, 1),
        "thirty" => (30, 1),
        "forty" => (40, 1),
        "fifty" => (50, 1),
        "sixty" => (60, 1),
        "seventy" => (70, 1),
        "eighty" => (80, 1),
        "ninety" => (90, 1),
        "hundred" => (100, 1),
        "thousand" => (1000, 1),
        "million" => (1_000_000, 1),
        "half" | "halves" => (1, 2),
        "third" | "thirds" => (1, 3),
        "quarter" | "quarters" | "fourth" | "fourths" => (1, 4),
        "fifth" | "fifths" => (1, 5),
        "sixth" => (1, 6),
        "eighth" => (1, 8),
        "tenth" | "tenths" => (1, 10),
        _ => return None,
    })
}

/// Numbers a text states as words, as values: `twice` → 2, `a dozen` → 12, `half` → 1/2
/// and 2, `a third` → 1/3 and 3.
pub(crate) fn word_values(text: &str) -> Vec<Rational> {
    let mut out = Vec::new();
    for w in text
        .split(|c: char| !c.is_alphabetic())
        .filter(|w| !w.is_empty())
        .take(2000)
    {
        if let Some((n, d)) = number_word(&w.to_lowercase()) {
            out.extend(Rational::new(n, d));
            if n == 1 && d > 1 {
                out.push(Rational::int(d));
            }
        }
    }
    out
}

/// Options of one reading.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mode {
    /// Number and operator words become numbers and operators.
    words: bool,
    /// Other words (and names that look like units) are dropped.
    units: bool,
    /// `x` between numbers is a times sign.
    x_times: bool,
    /// `a ÷ b/c` is `a ÷ (b/c)`.
    div_group: bool,
    /// `100 - 20% = 80`: a percentage added to or taken from a number is a share of it.
    pct_of: bool,
}

fn num(text: &str) -> Tk {
    Tk::Num {
        text: text.to_string(),
        pct: false,
    }
}

/// Applies the word reading: number words to numbers, operator words to operators.
fn word_ops(ts: &[Tk]) -> Vec<Tk> {
    let mut out: Vec<Tk> = Vec::with_capacity(ts.len());
    let mut i = 0usize;
    while let Some(t) = ts.get(i) {
        i = i.saturating_add(1);
        let Tk::Word(w) = t else {
            out.push(t.clone());
            continue;
        };
        let prev_operand = is_operand_end(out.last());
        let next = ts.get(i);
        let next_word = |s: &str| matches!(next, Some(Tk::Word(n)) if n == s);
        match w.as_str() {
            "times" | "multiplied" if prev_operand => {
                if next_word("by") {
                    i = i.saturating_add(1);
                }
                out.push(Tk::Op('*'));
            }
            "divided" if prev_operand => {
                if next_word("by") {
                    i = i.saturating_add(1);
                }
                out.push(Tk::Op('/'));
            }
            "plus" if prev_operand => out.push(Tk::Op('+')),
            "minus" if prev_operand => out.push(Tk::Op('-')),
            "equals" | "equal" => {
                if next_word("to") {
                    i = i.saturating_add(1);
                }
                // `is equal to`: the `is` before it is a barrier already.
                out.push(Tk::Eq(false));
            }
            "of" if prev_operand => out.push(Tk::Op('*')),
            "percent" if prev_operand => {
                if let Some(Tk::Num { pct, .. }) = out.last_mut() {
                    *pct = true;
                }
            }
            "squared" if prev_operand => {
                out.push(Tk::Op('^'));
                out.push(num("2"));
            }
            "cubed" if prev_operand => {
                out.push(Tk::Op('^'));
                out.push(num("3"));
            }
            "twice" | "double" | "thrice" | "triple" | "quadruple" => {
                // A factor in front of what follows (`twice 12`, `double the 8`).
                if let Some((n, _)) = number_word(w) {
                    if prev_operand {
                        out.push(Tk::Op('*'));
                    }
                    out.push(num(&n.to_string()));
                    out.push(Tk::Op('*'));
                }
            }
            "a" | "an" if matches!(next, Some(Tk::Word(n)) if number_word(n).is_some()) => {}
            "dozen" | "dozens" | "hundred" | "thousand" | "million" if prev_operand => {
                if let Some((n, _)) = number_word(w) {
                    out.push(Tk::Op('*'));
                    out.push(num(&n.to_string()));
                }
            }
            w => match number_word(w) {
                Some((n, 1)) => {
                    if prev_operand {
                        out.push(Tk::Bar);
                    }
                    out.push(num(&n.to_string()));
                }
                Some((n, d)) => {
                    // `half`, `a third`: a fraction, written so its value is exact.
                    if prev_operand {
                        // `2 thirds` → 2 * (1/3).
                        out.push(Tk::Op('*'));
                    }
                    out.push(Tk::L);
                    out.push(num(&n.to_string()));
                    out.push(Tk::Op('/'));
                    out.push(num(&d.to_string()));
                    out.push(Tk::R);
                }
                None => out.push(t.clone()),
            },
        }
    }
    out
}

/// Applies the units reading: words (and names that look like units) are dropped, with
/// an operator that only joins them (`kg/donkey`, `/hour`).
fn drop_units(ts: &[Tk], known_names: &BTreeSet<String>) -> Vec<Tk> {
    let mut marked: Vec<Tk> = Vec::with_capacity(ts.len());
    for (i, t) in ts.iter().enumerate() {
        let prev = i.checked_sub(1).and_then(|j| ts.get(j));
        // `5 m`, `km/h`: a letter right after a number or a `/` is a unit; one after a
        // word is a name (`for n = 5`).
        let unit_name = matches!(t, Tk::Name(n) if !known_names.contains(n)
            && n.chars().count() == 1
            && matches!(prev, Some(Tk::Num { .. } | Tk::Op('/'))));
        // A word that joins numbers (`5 less than 3 times 4`) is not a unit: it stays, so
        // the calculation around it reads as cut rather than as two numbers.
        let joining = matches!(t, Tk::Word(w)
            if !UNIT_LIKE.contains(&w.as_str()) && joins(w, prev, ts.get(i.saturating_add(1)..).unwrap_or(&[])));
        if (matches!(t, Tk::Word(_)) && !joining) || unit_name {
            marked.push(Tk::Gap);
        } else {
            marked.push(t.clone());
        }
    }
    // An operator followed by a dropped word joined units (`14 kg/donkey`, `$5/hour`).
    let mut joined: Vec<Tk> = Vec::with_capacity(marked.len());
    for (i, t) in marked.iter().enumerate() {
        if *t == Tk::Op('/') && matches!(marked.get(i.saturating_add(1)), Some(Tk::Gap)) {
            joined.push(Tk::Gap);
        } else {
            joined.push(t.clone());
        }
    }
    let mut out: Vec<Tk> = Vec::with_capacity(joined.len());
    let mut i = 0usize;
    while let Some(t) = joined.get(i) {
        if *t == Tk::Gap {
            let mut j = i;
            while joined.get(j) == Some(&Tk::Gap) {
                j = j.saturating_add(1);
            }
            let (before, after) = (out.last(), joined.get(j));
            if is_operand_end(before) && is_operand_start(after) {
                out.push(Tk::Bar);
            } else if before.is_none_or(|b| matches!(b, Tk::Bar | Tk::Gap)) {
                // Words open the clause: kept as a mark, so a value right after them is
                // known to follow prose.
                out.push(Tk::Gap);
            }
            i = j;
            continue;
        }
        out.push(t.clone());
        i = i.saturating_add(1);
    }
    out
}

/// Whether the token at `i` is an `x` written as a times sign: between two numbers (`3 x
/// 4`, `5x2`) or between a unit and a number (`20 questions x 0.5`, `35 patients/day x
/// 7`). Returns the number glued to it (`2` of `5x2`), if any.
fn x_times_at(ts: &[Tk], i: usize) -> Option<Option<String>> {
    let Some(Tk::Name(n)) = ts.get(i) else {
        return None;
    };
    let prev = i.checked_sub(1).and_then(|j| ts.get(j));
    let next = ts.get(i.saturating_add(1));
    if n == "x" || n == "X" {
        let times = match prev {
            Some(Tk::Num { .. } | Tk::R) => matches!(next, Some(Tk::Num { .. } | Tk::L)),
            Some(Tk::Word(_)) => matches!(next, Some(Tk::Num { .. })),
            _ => false,
        };
        return times.then_some(None);
    }
    let digits = n.get(1..).unwrap_or("");
    (n.starts_with(['x', 'X'])
        && !digits.is_empty()
        && digits.chars().all(|c| c.is_ascii_digit())
        && matches!(prev, Some(Tk::Num { .. })))
    .then(|| Some(digits.to_string()))
}

/// `3 x 4`, `5x2`: `x` as a times sign.
fn x_times(ts: &[Tk]) -> Vec<Tk> {
    let mut out: Vec<Tk> = Vec::with_capacity(ts.len());
    for (i, t) in ts.iter().enumerate() {
        match x_times_at(ts, i) {
            Some(glued) => {
                out.push(Tk::Op('*'));
                if let Some(d) = glued {
                    out.push(num(&d));
                }
            }
            None => out.push(t.clone()),
        }
    }
    out
}

/// Whether some `x` is written as a times sign.
fn has_x_times(ts: &[Tk]) -> bool {
    (0..ts.len()).any(|i| x_times_at(ts, i).is_some())
}

/// Names a text uses as unknowns: every short name except an `x` written as a times sign.
pub(crate) fn unknowns(text: &str) -> BTreeSet<String> {
    let (cleaned, notes) = clean(text);
    let mut out = BTreeSet::new();
    for clause in notes.iter().chain(clauses(&cleaned).iter()) {
        let ts = tokens(clause);
        for (i, t) in ts.iter().enumerate() {
            let prev = i.checked_sub(1).and_then(|j| ts.get(j));
            let next = ts.get(i.saturating_add(1));
            // `in 2.5 h.`, `5 m by 4 m`, `km/h`: a letter after a number and before prose,
            // or after a unit's `/`, is a unit.
            let unit = matches!(t, Tk::Name(n) if n.chars().count() == 1)
                && ((matches!(prev, Some(Tk::Num { .. }))
                    && matches!(next, None | Some(Tk::Word(_) | Tk::Bar)))
                    || (matches!(prev, Some(Tk::Op('/')))
                        && matches!(i.checked_sub(2).and_then(|j| ts.get(j)), Some(Tk::Word(_)))));
            if let Tk::Name(n) = t
                && x_times_at(&ts, i).is_none()
                && !unit
            {
                out.insert(n.clone());
            }
        }
    }
    out
}

/// `13 ÷ 1/2` → `13 ÷ (1/2)`.
fn div_group(ts: &[Tk]) -> Vec<Tk> {
    let mut out: Vec<Tk> = Vec::with_capacity(ts.len());
    let mut i = 0usize;
    while let Some(t) = ts.get(i) {
        if *t == Tk::Op('÷')
            && let (Some(a @ Tk::Num { .. }), Some(Tk::Op('/')), Some(b @ Tk::Num { .. })) = (
                ts.get(i.saturating_add(1)),
                ts.get(i.saturating_add(2)),
                ts.get(i.saturating_add(3)),
            )
        {
            out.extend([Tk::Op('/'), Tk::L, a.clone(), Tk::Op('/'), b.clone(), Tk::R]);
            i = i.saturating_add(4);
            continue;
        }
        out.push(if *t == Tk::Op('÷') {
            Tk::Op('/')
        } else {
            t.clone()
        });
        i = i.saturating_add(1);
    }
    out
}

fn has_div_fraction(ts: &[Tk]) -> bool {
    ts.windows(4).any(|w| {
        matches!(
            w,
            [Tk::Op('÷'), Tk::Num { .. }, Tk::Op('/'), Tk::Num { .. }]
        )
    })
}

fn apply(ts: &[Tk], mode: Mode, known_names: &BTreeSet<String>) -> Vec<Tk> {
    let mut v = if mode.words {
        word_ops(ts)
    } else {
        ts.to_vec()
    };
    if mode.x_times {
        v = x_times(&v);
    }
    if mode.units {
        v = drop_units(&v, known_names);
    }
    if mode.pct_of {
        v = pct_of(&v);
    }
    if mode.div_group {
        div_group(&v)
    } else {
        v.into_iter()
            .map(|t| if t == Tk::Op('÷') { Tk::Op('/') } else { t })
            .collect()
    }
}

/// Where `a ± p%` stands alone (nothing multiplies `a` or follows `p%` but `+ - =` or the
/// end): the index of `a`.
fn pct_of_at(ts: &[Tk], i: usize) -> bool {
    let prev = i.checked_sub(1).and_then(|j| ts.get(j));
    matches!(ts.get(i), Some(Tk::Num { pct: false, .. }))
        && matches!(ts.get(i.saturating_add(1)), Some(Tk::Op('+' | '-')))
        && matches!(ts.get(i.saturating_add(2)), Some(Tk::Num { pct: true, .. }))
        && !matches!(prev, Some(Tk::Op('*' | '/' | '^' | '÷')))
        && !matches!(
            ts.get(i.saturating_add(3)),
            Some(Tk::Op('*' | '/' | '^' | '÷') | Tk::L)
        )
}

/// `100 - 20%` → `(100 - 100 * 20%)`.
fn pct_of(ts: &[Tk]) -> Vec<Tk> {
    let mut out = Vec::with_capacity(ts.len());
    let mut i = 0usize;
    while let Some(t) = ts.get(i) {
        if pct_of_at(ts, i)
            && let (Some(op), Some(p)) = (ts.get(i.saturating_add(1)), ts.get(i.saturating_add(2)))
        {
            out.extend([
                Tk::L,
                t.clone(),
                op.clone(),
                t.clone(),
                Tk::Op('*'),
                p.clone(),
                Tk::R,
            ]);
            i = i.saturating_add(3);
            continue;
        }
        out.push(t.clone());
        i = i.saturating_add(1);
    }
    out
}

/// The readings of one clause: for each, the chains it yields, or `None` when that
/// reading finds a calculation it cannot read (a cut one). Readings with no chain at all
/// are left out. `known_names` are the names the premises and the problem use: those are
/// unknowns, never units or times signs.
pub(crate) fn readings(clause: &str, known_names: &BTreeSet<String>) -> Vec<Option<Vec<Chain>>> {
    let ts = tokens(clause);
    if !ts.iter().any(|t| matches!(t, Tk::Eq(_)))
        && !ts
            .iter()
            .any(|t| matches!(t, Tk::Word(w) if w == "equals" || w == "equal"))
    {
        return Vec::new();
    }
    let xt = has_x_times(&ts);
    // `x` as an unknown is a reading only when something else uses it as one.
    let x_unknown = known_names.contains("x") || known_names.contains("X");
    let xs: &[bool] = match (xt, x_unknown) {
        (false, _) => &[false],
        (true, false) => &[true],
        (true, true) => &[false, true],
    };
    let divs: &[bool] = if has_div_fraction(&ts) {
        &[false, true]
    } else {
        &[false]
    };
    let pcts: &[bool] = if (0..ts.len()).any(|i| pct_of_at(&ts, i)) {
        &[false, true]
    } else {
        &[false]
    };
    let mut seen: Vec<Vec<Tk>> = Vec::new();
    let mut out = Vec::new();
    // Literal; words as numbers and operators; then units dropped after either (`4
    // dozen` is a count of dozens, `3 dozen` may be 36).
    for &(words, units) in &[(false, false), (true, false), (true, true), (false, true)] {
        for &x in xs {
            for &d in divs {
                for &p in pcts {
                    let mode = Mode {
                        words,
                        units,
                        x_times: x,
                        div_group: d,
                        pct_of: p,
                    };
                    let v = apply(&ts, mode, known_names);
                    if seen.contains(&v) || seen.len() >= MAX_READINGS {
                        continue;
                    }
                    let read = chains_of(&v);
                    seen.push(v);
                    match read {
                        Some(c) if c.is_empty() => {}
                        r => out.push(r),
                    }
                }
            }
        }
    }
    out
}

/// The chains of one token stream: each maximal run of mathematics that holds `=`. `None`
/// when a run is cut (an operator or a joining word at its edge) or does not parse.
fn chains_of(ts: &[Tk]) -> Option<Vec<Chain>> {
    let mathy = |t: &Tk| {
        matches!(
            t,
            Tk::Num { .. } | Tk::Name(_) | Tk::Op(_) | Tk::L | Tk::R | Tk::Eq(_)
        )
    };
    let mut out = Vec::new();
    let mut i = 0usize;
    while i < ts.len() {
        if !ts.get(i).is_some_and(mathy) {
            i = i.saturating_add(1);
            continue;
        }
        let start = i;
        while ts.get(i).is_some_and(mathy) {
            i = i.saturating_add(1);
        }
        let run = ts.get(start..i).unwrap_or(&[]);
        if !run.iter().any(|t| matches!(t, Tk::Eq(_))) {
            continue;
        }
        let before = start.checked_sub(1).and_then(|j| ts.get(j));
        let after = ts.get(i);
        let before_before = start.checked_sub(2).and_then(|j| ts.get(j));
        if let Some(Tk::Word(w)) = before
            && joins(w, before_before, run)
        {
            return None;
        }
        if let Some(Tk::Word(w)) = after
            && joins(w, run.last(), ts.get(i.saturating_add(1)..).unwrap_or(&[]))
        {
            return None;
        }
        if let Some(c) = chain_of(run, before).ok()? {
            out.push(c);
        }
        if out.len() >= MAX_CHAINS {
            break;
        }
    }
    Some(out)
}

fn render(ts: &[Tk]) -> String {
    let mut s = String::new();
    for t in ts {
        if !s.is_empty() {
            s.push(' ');
        }
        match t {
            Tk::Num { text, pct } => {
                s.push_str(text);
                if *pct {
                    s.push('%');
                }
            }
            Tk::Name(n) => s.push_str(n),
            Tk::Op(c) => s.push(*c),
            Tk::L => s.push('('),
            Tk::R => s.push(')'),
            Tk::Eq(false) => s.push('='),
            Tk::Eq(true) => s.push('≈'),
            Tk::Word(w) => s.push_str(w),
            Tk::Bar | Tk::Gap => s.push('|'),
        }
    }
    s
}

/// Why a run of mathematics cannot be read.
struct Cut;

/// One run of mathematics to a chain (`Ok(None)`: a value, not a chain). A leading `=`
/// (`Total = 3 + 4 = 7` after the words) is dropped; an operator at either end means the
/// run was cut from a longer calculation.
fn chain_of(run: &[Tk], before: Option<&Tk>) -> Result<Option<Chain>, Cut> {
    let mut run = run;
    while let Some((Tk::Eq(_), rest)) = run.split_first() {
        run = rest;
    }
    if !run.iter().any(|t| matches!(t, Tk::Eq(_))) {
        return Ok(None);
    }
    if run.len() > MAX_RUN_TOKENS {
        return Err(Cut);
    }
    // Italic emphasis `*48/2 = 24*` with nothing else around it.
    if before.is_none_or(|b| *b == Tk::Bar)
        && let Some((Tk::Op('*'), rest)) = run.split_first()
    {
        run = rest;
    }
    if let Some((Tk::Op('*'), rest)) = run.split_last()
        && rest.iter().any(|t| matches!(t, Tk::Eq(_)))
    {
        run = rest;
    }
    // `(apples)` after a result, `x² + 2x`: a parenthesis cut from its partner at an
    // edge is dropped, and a sign at the start is a negative number only at the start of
    // the clause or after `(`: anywhere else something before it was not read.
    while let Some((Tk::L, rest)) = run.split_last() {
        run = rest;
    }
    match run.first() {
        Some(Tk::Op('-' | '+')) if before.is_none_or(|b| *b == Tk::Gap) => {}
        Some(Tk::Op(_)) => return Err(Cut),
        _ => {}
    }
    if matches!(run.last(), Some(Tk::Op(_) | Tk::Eq(_))) {
        return Err(Cut);
    }
    // Two numbers side by side are never a product: a mixed number (`2 1/2`) or prose.
    let run = mixed_numbers(run).ok_or(Cut)?;
    let mut parts = Vec::new();
    let mut approx = Vec::new();
    let mut side: Vec<Tk> = Vec::new();
    for t in &run {
        if let Tk::Eq(a) = t {
            parts.push(Expr::parse(&render(&side)).map_err(|_| Cut)?);
            approx.push(*a);
            side.clear();
        } else {
            side.push(t.clone());
        }
    }
    parts.push(Expr::parse(&render(&side)).map_err(|_| Cut)?);
    Ok(Some(Chain {
        parts,
        approx,
        text: render(&run),
        after_words: matches!(before, Some(Tk::Word(_) | Tk::Gap)),
    }))
}

/// `2 1/2` → `(2 + 1/2)`; any other two numbers side by side: `None`.
fn mixed_numbers(run: &[Tk]) -> Option<Vec<Tk>> {
    let mut out = Vec::with_capacity(run.len());
    let mut i = 0usize;
    while let Some(t) = run.get(i) {
        if let Tk::Num {
            text: a,
            pct: false,
        } = t
            && let Some(Tk::Num { .. }) = run.get(i.saturating_add(1))
        {
            let whole = !a.contains('.');
            match (
                run.get(i.saturating_add(1)),
                run.get(i.saturating_add(2)),
                run.get(i.saturating_add(3)),
            ) {
                (
                    Some(b @ Tk::Num { pct: false, .. }),
                    Some(Tk::Op('/')),
                    Some(c @ Tk::Num { pct: false, .. }),
                ) if whole => {
                    out.extend([
                        Tk::L,
                        t.clone(),
                        Tk::Op('+'),
                        b.clone(),
                        Tk::Op('/'),
                        c.clone(),
                        Tk::R,
                    ]);
                    i = i.saturating_add(4);
                    continue;
                }
                _ => return None,
            }
        }
        out.push(t.clone());
        i = i.saturating_add(1);
    }
    Some(out)
}

/// The chains a premise or problem states, read literally (then with units dropped when
/// the literal reading finds none), for deriving claims from.
pub(crate) fn stated_chains(text: &str, known_names: &BTreeSet<String>) -> Vec<Chain> {
    let (cleaned, notes) = clean(text);
    let mut out = Vec::new();
    for clause in notes
        .iter()
        .map(String::as_str)
        .chain(clauses(&cleaned).iter().map(String::as_str))
    {
        let ts = tokens(clause);
        if !ts.iter().any(|t| matches!(t, Tk::Eq(_))) {
            continue;
        }
        for mode in [
            Mode {
                words: false,
                units: false,
                x_times: false,
                div_group: false,
                pct_of: false,
            },
            Mode {
                words: true,
                units: true,
                x_times: false,
                div_group: false,
                pct_of: false,
            },
        ] {
            if let Some(c) = chains_of(&apply(&ts, mode, known_names))
                && !c.is_empty()
            {
                out.extend(c);
                break;
            }
        }
        if out.len() >= MAX_CHAINS {
            break;
        }
    }
    out
}

/// The words of a text: runs of letters, digits and `_`.
pub(crate) fn words(text: &str) -> impl Iterator<Item = &str> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
        .filter(|w| !w.is_empty())
}

/// Symbols a unit uses: single letters (except the words `a`, `A`, `I`) and short
/// letter-digit names (`t1`, `x_2`); a coefficient is split off (`3x` → `x`, `0.96D` → `D`).
pub(crate) fn symbols_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for w in words(text) {
        let name = w.trim_start_matches(|c: char| c.is_ascii_digit());
        let mut cs = name.chars();
        let Some(first) = cs.next() else { continue };
        if !first.is_alphabetic() {
            continue;
        }
        let len = name.chars().count();
        let single = len == 1 && !matches!(first, 'a' | 'A' | 'I');
        let indexed = (2..=4).contains(&len)
            && name.chars().skip(1).all(|c| c.is_ascii_digit() || c == '_')
            && name.chars().any(|c| c.is_ascii_digit());
        if single || indexed {
            out.push(name.to_string());
        }
    }
    out
}

/// Numbers a text states: integers (`30,800` as `30800`), decimals, and fractions `a/b`
/// (as written, and also each side).
pub(crate) fn numbers_in(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let cs: Vec<char> = text.chars().collect();
    let mut i = 0usize;
    let mut prev: Option<String> = None;
    let mut slash_after_prev = false;
    while let Some(&c) = cs.get(i) {
        if c.is_ascii_digit() {
            let mut s = String::new();
            while let Some(&d) = cs.get(i) {
                let decimal_point = d == '.'
                    && cs
                        .get(i.saturating_add(1))
                        .is_some_and(char::is_ascii_digit);
                // `30,800`: a comma between digit groups of three is part of the number.
                let thousands = d == ','
                    && !s.contains('.')
                    && (1..=3).all(|k| {
                        cs.get(i.saturating_add(k))
                            .is_some_and(char::is_ascii_digit)
                    })
                    && !cs
                        .get(i.saturating_add(4))
                        .is_some_and(char::is_ascii_digit);
                if d.is_ascii_digit() || decimal_point {
                    s.push(d);
                    i = i.saturating_add(1);
                } else if thousands {
                    i = i.saturating_add(1);
                } else {
                    break;
                }
            }
            if slash_after_prev && let Some(p) = &prev {
                out.push(format!("{p}/{s}"));
            }
            out.push(s.clone());
            prev = Some(s);
            slash_after_prev = false;
        } else {
            slash_after_prev = c == '/' && prev.is_some();
            if !(c == '/' || c.is_whitespace()) {
                prev = None;
            }
            i = i.saturating_add(1);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(s: &str) -> Vec<Option<Vec<String>>> {
        let (c, _) = clean(s);
        clauses(&c)
            .iter()
            .flat_map(|cl| readings(cl, &BTreeSet::new()))
            .map(|r| r.map(|cs| cs.into_iter().map(|c| c.text).collect()))
            .collect()
    }

    #[test]
    fn cleaning() {
        assert_eq!(
            clean("**Step 1:** $50 − $42 = $8")
                .0
                .split_whitespace()
                .collect::<Vec<_>>(),
            ["50", "-", "42", "=", "8"]
        );
        assert_eq!(
            latex(r"$\frac{1}{2} \cdot 48 = 24$").replace(' ', ""),
            "$((1)/(2))*48=24$"
        );
        assert_eq!(thousands("1,200 and 3, 4"), "1200 and 3, 4");
        let (t, notes) = clean("48/2 = <<48/2=24>>24 apples");
        assert_eq!(notes, ["48/2=24"]);
        assert!(!t.contains("<<"));
    }

    #[test]
    fn readings_of_units_and_words() {
        let r = read("8 kg * 2 - 2 = 14 kg/donkey");
        assert!(r.contains(&Some(vec!["8 * 2 - 2 = 14".into()])), "{r:?}");
        assert!(r.contains(&None), "the literal reading is cut: {r:?}");
        let r = read("half of 48 = 24");
        assert!(
            r.contains(&Some(vec!["( 1 / 2 ) * 48 = 24".into()])),
            "{r:?}"
        );
        assert!(!r.contains(&Some(vec!["48 = 24".into()])), "{r:?}");
        let r = read("3 apples and 4 = 7");
        assert!(
            r.iter().flatten().flatten().all(|c| c != "3 4 = 7"),
            "{r:?}"
        );
    }
}
