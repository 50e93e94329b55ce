//! Tool segments and the claims that restate their results: what the Computer tier checks
//! of an agent transcript (issue 54).
//!
//! A tool segment (`TC1`, `TC2`, ...: the paper's "tool usage" node) is one tool call with
//! the result the transcript reports, as one span of the thinking: a marked block
//! (`<<<tool ...>>>` ... `<<<result ...>>>` ... `<<<end ...>>>`, see
//! [`trust_protocol::trace::blocks`]), or a fenced code block in the prose followed by an
//! ```` ```output ```` fence or by a sentence stating its output (`running it gives 55`).
//! A seat reads it with [`read_tool`] and judges it with [`judge_tool`]:
//!
//! - **Python code** is re-run through the seat's sandbox ([`trust_sandbox::Execute`]) with
//!   the tool's semantics (a fresh program per call, or a persistent kernel whose earlier
//!   cells are replayed first; a marker without semantics is a script), and the reported
//!   result is compared with the re-run under the recorders' rules
//!   ([`trust_sandbox::compare`]): `Same` is Valid, `Differs` is Invalid (the reason says
//!   that a value differs; which one goes in backticks, which a public reason drops), and
//!   `Unsure` or any sandbox abstention is an abstention with its reason. The interpreter
//!   is named in every reason. A node without a sandbox abstains.
//! - **A calculator** (a tool named like one, whose argument is an arithmetic expression)
//!   is re-evaluated with the checkers' own exact evaluator.
//! - **Any other tool** (search, a database) cannot be re-run here: an abstention.
//!
//! A claim after a tool result that restates it ([`check_restatement`]) is checked against
//! that result: Valid when a value it states is the result's, Invalid only when it states a
//! different value for the same thing in a shape read here for sure (the one value a
//! sentence right after a one-value result gives; a boxed final answer that no result
//! gives and nothing in the claim derives; the k-th smallest or largest of a list of
//! numbers), and an abstention otherwise: a paraphrase that is not read (a unit
//! conversion, a rounding up, a digit or a count of the result) is never called wrong.
//!
//! A re-run certifies the execution, not the approach: whether the code does what the
//! problem asks is a claim of its own for a tier that reads words (a `tool_use` node the
//! decomposer puts on the conclusion's path), so re-runs alone never make a trace pass.

use trust_protocol::{
    Vote,
    trace::blocks::{self, Block, Semantics},
};
use trust_sandbox::{Comparison, Execute, Mode, Outcome, Request, compare};

use super::{
    Judgement,
    expr::{Expr, Rational},
};

/// The node type of a tool segment (`TC1`, `TC2`, ...): a tool call with its reported
/// result, judged by the Computer tier.
pub const TOOL_KIND: &str = "tool_call";
/// The node type of the claim that a tool call does what the problem asks and that its
/// result answers what the reasoning uses it for: the same span as its tool segment, for
/// a tier that reads words, on the conclusion's path.
pub const TOOL_USE_KIND: &str = "tool_use";
/// The node type of a claim's restatement of a tool result: evidence for the claim (below
/// it by `decomposes_to`), checked by the Computer tier against the result.
pub const RESTATEMENT_KIND: &str = "restatement";
/// The node type of a fenced code block in the prose with no output to check: one unit,
/// for a tier that reads it, never cut line by line.
pub const CODE_KIND: &str = "code";

/// Longest restating claim read.
const MAX_RESTATEMENT_CHARS: usize = 2_000;
/// Relative difference under which two numbers are one value.
const REL_TOL: f64 = 1e-9;
/// Factors by which a value is restated in other units (percent, time, thousands): a
/// claim that states the result times or over one of these is a paraphrase, never wrong.
const UNIT_FACTORS: [f64; 10] = [
    7.0, 12.0, 24.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 1440.0, 3600.0,
];

/// How a tool segment is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Form {
    /// A marked block (a transcript reader's rendering, or written by hand).
    Marked,
    /// A fenced code block followed by an `output` fence.
    Fenced,
    /// A fenced code block followed by a sentence stating its output.
    Stated,
}

/// A tool call as a seat reads it from its segment's text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolText<'a> {
    /// The tool's name (`python` for a fenced block).
    pub name: String,
    /// The semantics its marker states, if any.
    pub semantics: Option<Semantics>,
    /// The code of a code tool, the arguments of another.
    pub input: &'a str,
    /// The result the transcript reports (for [`Form::Stated`], the sentence stating it).
    pub result: &'a str,
    /// How it is written.
    pub form: Form,
}

/// What kind of tool a call is, as far as re-running it goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolKind {
    /// Python code, run with these semantics.
    Code(Mode),
    /// A calculator whose argument is an arithmetic expression.
    Calculator,
    /// Anything else: not re-run.
    Other,
}

impl ToolText<'_> {
    /// What kind of tool it is: code when its marker states semantics or its name says
    /// Python (a marker without semantics runs as a script), a calculator by its name,
    /// else another tool.
    pub fn kind(&self) -> ToolKind {
        let name = self.name.to_ascii_lowercase();
        let code = self.semantics.is_some()
            || self.form != Form::Marked
            || [
                "python",
                "code_interpreter",
                "ipython",
                "jupyter",
                "execute_code",
                "run_code",
            ]
            .iter()
            .any(|k| name.contains(k));
        if code {
            return ToolKind::Code(match self.semantics {
                Some(Semantics::Cell) => Mode::Cell,
                _ => Mode::Script,
            });
        }
        if ["calc", "arithmetic", "math_eval", "evaluate"]
            .iter()
            .any(|k| name.contains(k))
        {
            return ToolKind::Calculator;
        }
        ToolKind::Other
    }
}

/// The tool call `text` is, when the whole of it is one: a marked block, or a fenced code
/// block with its output (see the module doc). `None` for anything else.
pub fn read_tool(text: &str) -> Option<ToolText<'_>> {
    if blocks::has_markers(text) {
        let bs = blocks::blocks(text).ok()?;
        let [Block::Tool(call)] = bs.as_slice() else {
            return None;
        };
        return Some(ToolText {
            name: call.name.clone(),
            semantics: call.semantics,
            input: text.get(call.input.clone())?,
            result: text.get(call.result.clone())?,
            form: Form::Marked,
        });
    }
    let (code, after) = code_fence(text)?;
    let rest = after.trim();
    if rest.is_empty() {
        return None;
    }
    if let Some((output, tail)) = fence(rest, &["output"])
        && tail.trim().is_empty()
    {
        return Some(ToolText {
            name: "python".into(),
            semantics: None,
            input: code,
            result: output,
            form: Form::Fenced,
        });
    }
    stated_output(rest).map(|_| ToolText {
        name: "python".into(),
        semantics: None,
        input: code,
        result: rest,
        form: Form::Stated,
    })
}

/// The info strings of a fence that opens Python code (an empty one too: a fenced block
/// with no language, followed by its output, is read as Python).
const PYTHON_FENCES: [&str; 4] = ["python", "py", "python3", ""];

/// A fenced Python code block at the start of `text`: its code and what follows the
/// closing fence.
pub fn code_fence(text: &str) -> Option<(&str, &str)> {
    fence(text.trim_start(), &PYTHON_FENCES)
}

/// A fence at the start of `text` whose info string is one of `info`: its body (without
/// the line break before the closing fence) and what follows the closing fence's line.
fn fence<'a>(text: &'a str, info: &[&str]) -> Option<(&'a str, &'a str)> {
    let rest = text.strip_prefix("```")?;
    let eol = rest.find('\n')?;
    let tag = rest.get(..eol)?.trim();
    if !info.iter().any(|i| tag.eq_ignore_ascii_case(i)) {
        return None;
    }
    let body = rest.get(eol.saturating_add(1)..)?;
    let mut at = 0usize;
    for line in body.split_inclusive('\n') {
        if line.trim() == "```" {
            let inner = body.get(..at)?;
            let inner = inner.strip_suffix('\n').unwrap_or(inner);
            let inner = inner.strip_suffix('\r').unwrap_or(inner);
            return Some((inner, body.get(at.saturating_add(line.len())..)?));
        }
        at = at.saturating_add(line.len());
    }
    None
}

/// Verbs that state what running code gave.
const STATED_VERBS: [&str; 9] = [
    "gives",
    "prints",
    "outputs",
    "returns",
    "yields",
    "output is",
    "result is",
    "we get",
    "shows",
];

/// The one number a sentence after a fenced block states as the code's output (`running
/// it gives 55`), when it says so in words read here.
pub fn stated_output(sentence: &str) -> Option<Value> {
    let first = sentence.split(['\n']).next()?.trim();
    let lower = first.to_lowercase();
    if !STATED_VERBS.iter().any(|v| lower.contains(v)) || first.chars().count() > 200 {
        return None;
    }
    let vs = values(first, true);
    match vs.as_slice() {
        [one] => Some(one.clone()),
        _ => None,
    }
}

/// A number as written: its value, its decimals, where it is in the text.
#[derive(Debug, Clone, PartialEq)]
pub struct Value {
    /// Its value.
    pub value: f64,
    /// Digits after the decimal point as written.
    pub decimals: usize,
    /// Byte offset of its start in the text read.
    pub at: usize,
    /// Whether it is inside a `\boxed{...}`.
    pub boxed: bool,
}

/// The numbers of `text`: in a claim (`prose`), LaTeX fractions, thousands separators, a
/// unicode minus, and numbers that only number things (`Step 4`, a list's `1.`, a
/// heading's) left out; in a tool's output, `25/2` is one value.
pub fn values(text: &str, prose: bool) -> Vec<Value> {
    let b = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0usize;
    let boxed_ranges = if prose { boxed(text) } else { Vec::new() };
    let in_box = |at: usize| boxed_ranges.iter().any(|r| r.contains(&at));
    while i < b.len() {
        // `\frac{a}{b}` and `\dfrac{a}{b}`.
        if prose
            && b.get(i) == Some(&b'\\')
            && let Some((v, end)) = latex_frac(text, i)
        {
            let neg = minus_before(text, i);
            out.push(Value {
                value: if neg { -v } else { v },
                decimals: 6,
                at: i,
                boxed: in_box(i),
            });
            i = end;
            continue;
        }
        let Some(c) = b.get(i) else { break };
        if !c.is_ascii_digit() {
            i = i.saturating_add(1);
            continue;
        }
        // A digit glued to a name (`x2`, `19^{19}` stays a number) is no number.
        let glued = i
            .checked_sub(1)
            .and_then(|p| b.get(p))
            .is_some_and(|p| p.is_ascii_alphabetic() || *p == b'_');
        let start = i;
        let mut j = i;
        let mut digits = String::new();
        while let Some(&d) = b.get(j) {
            if d.is_ascii_digit() {
                digits.push(char::from(d));
                j = j.saturating_add(1);
            } else if prose
                && d == b','
                && b.get(j.saturating_add(1)..j.saturating_add(4))
                    .is_some_and(|g| g.iter().all(u8::is_ascii_digit))
                && !b.get(j.saturating_add(4)).is_some_and(u8::is_ascii_digit)
            {
                j = j.saturating_add(1);
            } else {
                break;
            }
        }
        let mut decimals = 0usize;
        if b.get(j) == Some(&b'.') && b.get(j.saturating_add(1)).is_some_and(u8::is_ascii_digit) {
            digits.push('.');
            j = j.saturating_add(1);
            while let Some(&d) = b.get(j).filter(|d| d.is_ascii_digit()) {
                digits.push(char::from(d));
                decimals = decimals.saturating_add(1);
                j = j.saturating_add(1);
            }
        }
        if matches!(b.get(j), Some(b'e' | b'E'))
            && !prose
            && let Some(k) = exponent_end(b, j)
        {
            if let Some(e) = text.get(j..k) {
                digits.push_str(e);
            }
            j = k;
        }
        let mut value: Option<f64> = digits.parse::<f64>().ok();
        // `25/2` in a tool's output is one rational.
        if !prose
            && decimals == 0
            && b.get(j) == Some(&b'/')
            && b.get(j.saturating_add(1)).is_some_and(u8::is_ascii_digit)
        {
            let mut k = j.saturating_add(1);
            while b.get(k).is_some_and(u8::is_ascii_digit) {
                k = k.saturating_add(1);
            }
            let den = text
                .get(j.saturating_add(1)..k)
                .and_then(|d| d.parse::<f64>().ok());
            value = match (value, den) {
                (Some(n), Some(d)) if d != 0.0 => Some(n / d),
                _ => value,
            };
            decimals = 6;
            j = k;
        }
        let neg = minus_before(text, start);
        if let Some(v) = value
            && !glued
            && !(prose && numbers_a_thing(text, start, j))
        {
            out.push(Value {
                value: if neg { -v } else { v },
                decimals,
                at: start,
                boxed: in_box(start),
            });
        }
        i = j.max(start.saturating_add(1));
    }
    out
}

fn exponent_end(b: &[u8], e: usize) -> Option<usize> {
    let mut k = e.saturating_add(1);
    if matches!(b.get(k), Some(b'+' | b'-')) {
        k = k.saturating_add(1);
    }
    let first = k;
    while b.get(k).is_some_and(u8::is_ascii_digit) {
        k = k.saturating_add(1);
    }
    (k > first).then_some(k)
}

/// Whether a minus sign (`-`, `−`) stands right before `at` as a sign, not between two
/// operands: `is -38`, `= -5`, `(-3` are signs; `5 - 3`, `x-3`, `(a) - 2` are not.
fn minus_before(text: &str, at: usize) -> bool {
    let before = text.get(..at).unwrap_or("");
    let before = before.strip_suffix('$').unwrap_or(before);
    let Some(rest) = before
        .strip_suffix('-')
        .or_else(|| before.strip_suffix('−'))
    else {
        return false;
    };
    let operand = |c: char| c.is_ascii_digit() || c == ')' || c == '}' || c == ']';
    let touching = rest.chars().next_back();
    if touching.is_some_and(|c| c.is_alphanumeric() || operand(c)) {
        return false;
    }
    !rest.trim_end().chars().next_back().is_some_and(operand)
}

/// Whether `claim` is prose (at least two words of letters that are not LaTeX commands):
/// a restatement is read in words; a bare calculation is the arithmetic checkers'.
pub fn is_prose(claim: &str) -> bool {
    let mut words = 0usize;
    let mut prev = ' ';
    let mut word = 0usize;
    let mut command = false;
    for c in claim.chars().chain(std::iter::once(' ')) {
        if c.is_ascii_alphabetic() {
            if word == 0 {
                command = prev == '\\';
            }
            word = word.saturating_add(1);
        } else {
            if word >= 2 && !command {
                words = words.saturating_add(1);
            }
            word = 0;
        }
        prev = c;
    }
    words >= 2
}

/// Whether the number at `start..end` only numbers something: `Step 4`, `Part 2`, a list
/// item's `1.` or `2)` opening a line, any number of a heading line.
fn numbers_a_thing(text: &str, start: usize, end: usize) -> bool {
    let line_start = text
        .get(..start)
        .and_then(|t| t.rfind('\n'))
        .map_or(0, |p| p.saturating_add(1));
    let line = text.get(line_start..).unwrap_or("");
    if line.trim_start().starts_with('#') {
        return true;
    }
    let before = text.get(line_start..start).unwrap_or("");
    let after = text.get(end..).unwrap_or("");
    if before
        .trim()
        .trim_start_matches(['-', '*'])
        .trim()
        .is_empty()
        && (after.starts_with(". ") || after.starts_with(") ") || after.starts_with(".\n"))
    {
        return true;
    }
    let word = before
        .trim_end()
        .rsplit(|c: char| !c.is_alphabetic())
        .next()
        .unwrap_or("")
        .to_lowercase();
    ["step", "part", "case", "stage", "call", "cell", "option"].contains(&word.as_str())
}

/// `\frac{a}{b}` (or `\dfrac`, `\tfrac`) at byte `at` of `text`: its value and the end of
/// the command.
fn latex_frac(text: &str, at: usize) -> Option<(f64, usize)> {
    let rest = text.get(at..)?;
    let name_len = ["\\frac{", "\\dfrac{", "\\tfrac{"]
        .iter()
        .find(|p| rest.starts_with(**p))?
        .len();
    let after = rest.get(name_len..)?;
    let close = after.find('}')?;
    let num: f64 = after.get(..close)?.trim().parse().ok()?;
    let second = after.get(close.saturating_add(1)..)?.strip_prefix('{')?;
    let close2 = second.find('}')?;
    let den: f64 = second.get(..close2)?.trim().parse().ok()?;
    if den == 0.0 {
        return None;
    }
    let consumed = name_len
        .saturating_add(close)
        .saturating_add(2)
        .saturating_add(close2)
        .saturating_add(1);
    Some((num / den, at.saturating_add(consumed)))
}

/// The byte ranges of the contents of each `\boxed{...}` (braces balanced).
fn boxed(text: &str) -> Vec<std::ops::Range<usize>> {
    let mut out = Vec::new();
    let mut from = 0usize;
    while let Some(p) = text.get(from..).and_then(|t| t.find("\\boxed{")) {
        let start = from.saturating_add(p).saturating_add("\\boxed{".len());
        let mut depth = 1usize;
        let mut end = None;
        for (k, c) in text.get(start..).unwrap_or("").char_indices() {
            match c {
                '{' => depth = depth.saturating_add(1),
                '}' => {
                    depth = depth.saturating_sub(1);
                    if depth == 0 {
                        end = Some(start.saturating_add(k));
                        break;
                    }
                }
                _ => {}
            }
        }
        let Some(end) = end else { break };
        out.push(start..end);
        from = end;
    }
    out
}

/// Whether `a` and `b` are one value: equal within a relative 1e-9.
pub fn same(a: f64, b: f64) -> bool {
    (a - b).abs() <= REL_TOL * a.abs().max(b.abs()).max(1.0)
}

/// Whether the stated `s` restates the result value `r`: equal, or `r` rounded (or cut) to
/// the decimals `s` is written with.
fn restates(s: &Value, r: f64) -> bool {
    if same(s.value, r) {
        return true;
    }
    let Ok(d) = i32::try_from(s.decimals.min(12)) else {
        return false;
    };
    let unit = 10f64.powi(d).recip();
    (s.value - r).abs() <= unit * 0.5 + REL_TOL * r.abs().max(1.0)
        || (s.value - r).abs() < unit && (s.value.abs() <= r.abs())
}

/// Numbers every reader knows without being told (units of time, counting, percent):
/// a sentence stating one restates no result.
const UNIT_CONSTANTS: [f64; 14] = [
    2.0, 3.0, 4.0, 7.0, 10.0, 12.0, 24.0, 30.0, 52.0, 60.0, 100.0, 365.0, 1000.0, 3600.0,
];

/// Whether a `\boxed{...}` content is one bare number: digits with a sign, separators,
/// a currency or percent sign, or one `\frac{a}{b}`; anything else (a root, a name, a
/// unit in words) is an answer this check does not read.
fn bare_number(content: &str) -> bool {
    let t: String = content
        .replace("\\$", "")
        .replace("\\%", "")
        .replace("\\,", "")
        .chars()
        .filter(|c| !c.is_whitespace() && !matches!(c, '$' | '%' | ','))
        .collect();
    let t = t.strip_prefix('-').unwrap_or(&t);
    let frac = ["\\frac", "\\dfrac", "\\tfrac"]
        .iter()
        .find_map(|p| t.strip_prefix(p))
        .map(|rest| {
            rest.chars()
                .all(|c| c.is_ascii_digit() || c == '{' || c == '}')
        });
    frac.unwrap_or_else(|| !t.is_empty() && t.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// Whether `v` is a sum, difference, product or quotient of two of `xs`.
fn combines(v: f64, xs: &[f64]) -> bool {
    xs.iter().enumerate().any(|(i, &a)| {
        xs.iter().skip(i.saturating_add(1)).any(|&b| {
            [a + b, a - b, b - a, a * b]
                .into_iter()
                .chain((b != 0.0).then_some(a / b))
                .chain((a != 0.0).then_some(b / a))
                .any(|x| same(x, v))
        })
    })
}

/// Whether `v` is what a reader may make of the result values `rs` in words the checker
/// does not read: a unit conversion or percentage, a whole number it rounds to, its
/// absolute value, one of its digits, and for several values, a count, sum, difference,
/// product or quotient of them. Such a claim is never called wrong.
fn paraphrase(v: f64, rs: &[f64]) -> bool {
    let near = |x: f64| same(v, x);
    for &r in rs {
        if UNIT_FACTORS.iter().any(|f| near(r * f) || near(r / f))
            || near(r.floor())
            || near(r.ceil())
            || near(r.round())
            || near(r.abs())
            || near(-r)
        {
            return true;
        }
        if r.is_finite() && r.abs() < 1e15 && v.fract() == 0.0 && (0.0..10.0).contains(&v) {
            let digits = format!("{}", r.abs().trunc());
            if digits
                .chars()
                .any(|c| c.to_digit(10).map(f64::from) == Some(v))
            {
                return true;
            }
        }
    }
    if rs.len() >= 2 {
        let n = rs.len() as f64;
        let sum: f64 = rs.iter().sum();
        if near(n) || near(sum) || near(sum / n) {
            return true;
        }
        for (i, &a) in rs.iter().enumerate() {
            for &b in rs.iter().skip(i.saturating_add(1)) {
                if near(a + b)
                    || near(a - b)
                    || near(b - a)
                    || near(a * b)
                    || (b != 0.0 && near(a / b))
                    || (a != 0.0 && near(b / a))
                {
                    return true;
                }
            }
        }
    }
    false
}

/// The numbers of a tool result, or `None` when it reports an error.
fn result_values(result: &str) -> Option<Vec<f64>> {
    let t = result.trim();
    let last = t.lines().last().unwrap_or("");
    if t.starts_with("Traceback") || last.contains("Error:") || last.ends_with("Error") {
        return None;
    }
    Some(values(t, false).into_iter().map(|v| v.value).collect())
}

/// The values of a result that is one flat list or tuple of numbers.
fn flat_list(result: &str) -> Option<Vec<f64>> {
    let t = result.trim();
    let inner = t
        .strip_prefix('[')
        .and_then(|x| x.strip_suffix(']'))
        .or_else(|| t.strip_prefix('(').and_then(|x| x.strip_suffix(')')))?;
    let mut out = Vec::new();
    for part in inner.split(',') {
        let p = part.trim();
        if p.is_empty() {
            continue;
        }
        let v: f64 = p.parse().ok()?;
        out.push(v);
    }
    (out.len() >= 2).then_some(out)
}

const ORDINALS: [(&str, usize); 10] = [
    ("first", 1),
    ("second", 2),
    ("third", 3),
    ("fourth", 4),
    ("fifth", 5),
    ("sixth", 6),
    ("seventh", 7),
    ("eighth", 8),
    ("ninth", 9),
    ("tenth", 10),
];

/// `the fifth smallest value is 24`: (k, smallest?, the stated value).
fn ordinal_claim(claim: &str) -> Option<(usize, bool, Value)> {
    let lower = claim.to_lowercase();
    for (word, k) in ORDINALS {
        for (dir, smallest) in [
            ("smallest", true),
            ("lowest", true),
            ("least", true),
            ("largest", false),
            ("biggest", false),
            ("greatest", false),
            ("highest", false),
        ] {
            let phrase = format!("{word} {dir}");
            let Some(p) = lower.find(&phrase) else {
                continue;
            };
            let after = p.saturating_add(phrase.len());
            let rest = lower.get(after..)?;
            let sentence_end = rest.find(['\n']).unwrap_or(rest.len());
            let is = rest.get(..sentence_end)?.find(" is ")?;
            let from = after.saturating_add(is).saturating_add(4);
            let v = values(claim.get(from..)?, true).into_iter().next()?;
            if v.at > 40 {
                return None;
            }
            return Some((k, smallest, v));
        }
    }
    None
}

/// The judgement of `claim` as a restatement of the results `results` (the tool calls it
/// rests on, in trace order; the last is the latest); `None` when the claim states no
/// value read here as a restatement. See the module doc.
///
/// `context` is what the claim is read in besides the results (the problem statement): a
/// sentence that states one of its numbers restates the problem, not a result.
pub fn check_restatement(
    claim: &str,
    results: &[&str],
    context: &[&str],
    last_code: Option<&str>,
) -> Option<Judgement> {
    if claim.chars().count() > MAX_RESTATEMENT_CHARS || results.is_empty() || !is_prose(claim) {
        return None;
    }
    let latest = *results.last()?;
    if let Some((k, smallest, v)) = ordinal_claim(claim)
        && let Some(list) = flat_list(latest)
    {
        let mut sorted = list.clone();
        sorted.sort_by(|a, b| a.total_cmp(b));
        if !smallest {
            sorted.reverse();
        }
        let mut distinct = sorted.clone();
        distinct.dedup_by(|a, b| same(*a, *b));
        let at = k.checked_sub(1)?;
        let expected = [sorted.get(at), distinct.get(at)];
        if expected.iter().flatten().any(|e| restates(&v, **e)) {
            return Some(Judgement::vote(
                Vote::Valid,
                "the value the claim picks from the tool's list of numbers is the one at that rank",
            ));
        }
        if expected.iter().all(Option::is_some) {
            let which = if smallest { "smallest" } else { "largest" };
            return Some(Judgement::vote(
                Vote::Invalid,
                format!(
                    "the claim names as the k-th {which} value of the tool's result a value at another rank (`the rank-{k} {which} is {}`)",
                    show_value(expected.iter().flatten().next().map_or(0.0, |e| **e))
                ),
            ));
        }
        return None;
    }
    let all: Vec<Vec<f64>> = results.iter().filter_map(|r| result_values(r)).collect();
    let last = result_values(latest)?;
    let every: Vec<f64> = all.iter().flatten().copied().collect();
    if every.is_empty() {
        return None;
    }
    let stated = values(claim, true);
    if stated.is_empty() {
        return None;
    }
    let matched = |s: &Value| every.iter().any(|r| restates(s, *r));
    // What the claim's own words may combine: the results' values and the numbers it
    // states besides its answer.
    let mut operands: Vec<f64> = every.clone();
    operands.extend(stated.iter().filter(|s| !s.boxed).map(|s| s.value));
    // A boxed final answer, written as a bare number, that no result gives, that the claim
    // states nowhere else (no step of its own derives it) and that no reading of a result
    // or sum, difference, product or quotient of two numbers at hand makes.
    let boxes = boxed(claim);
    for b in stated.iter().filter(|s| s.boxed) {
        let bare = boxes
            .iter()
            .find(|r| r.contains(&b.at))
            .and_then(|r| claim.get(r.clone()))
            .is_some_and(bare_number);
        let elsewhere = stated
            .iter()
            .any(|s| !s.boxed && (same(s.value.abs(), b.value.abs())));
        let from_any = all.iter().any(|rs| paraphrase(b.value, rs)) || combines(b.value, &operands);
        if bare && !matched(b) && !elsewhere && !from_any {
            return Some(Judgement::vote(
                Vote::Invalid,
                format!(
                    "the final answer states a value that no tool result gives and that no step derives from one (`{}`)",
                    show_value(b.value)
                ),
            ));
        }
    }
    // The one value a sentence right after a one-value result states.
    if let ([one], [r]) = (stated.as_slice(), last.as_slice())
        && !one.boxed
        && states_value(claim, one)
    {
        if restates(one, *r) {
            return Some(Judgement::vote(
                Vote::Valid,
                "the claim restates the tool's result",
            ));
        }
        // Another result's value, the problem's own numbers, a constant every reader
        // knows (`7 days in a week`): not this result's restatement.
        let given = context
            .iter()
            .flat_map(|c| values(c, true))
            .any(|g| same(g.value, one.value));
        // Precision first: a value the sentence may have worked out from two numbers at
        // hand (the results', the problem's, the context's: `24 apples, so 48 halves`)
        // is mental arithmetic this reading does not follow, not a misread result.
        let mut at_hand = operands.clone();
        at_hand.extend(
            context
                .iter()
                .flat_map(|c| values(c, true))
                .map(|g| g.value),
        );
        // Unless the sentence names what the last call computed (`the total insects per
        // week for ten ducks is ...` after `total_insects_per_week_for_ten_ducks`): then
        // it restates that result, whatever else its value could be made of.
        let worked_out =
            combines(one.value, &at_hand) && !names_the_result(claim, one.at, last_code);
        if matched(one)
            || given
            || worked_out
            || UNIT_CONSTANTS.iter().any(|u| same(*u, one.value))
            || paraphrase(one.value, &last)
        {
            return matched(one)
                .then(|| Judgement::vote(Vote::Valid, "the claim restates a tool's result"));
        }
        return Some(Judgement::vote(
            Vote::Invalid,
            format!(
                "the claim states another value than the tool's result (`{} against {}`)",
                show_value(one.value),
                show_value(*r)
            ),
        ));
    }
    stated.iter().any(matched).then(|| {
        Judgement::vote(
            Vote::Valid,
            "a value the claim states is the tool's result, as reported",
        )
    })
}

/// Whether the words of `claim` before byte `at` name what `code`'s last line shows: at
/// least two of the words of its identifiers (`total_insects_per_week` gives total,
/// insects, week), each of three letters or more and not a filler word.
fn names_the_result(claim: &str, at: usize, code: Option<&str>) -> bool {
    const FILLER: [&str; 8] = [
        "the", "for", "per", "and", "print", "result", "value", "int",
    ];
    let Some(last) = code.and_then(|c| {
        c.lines()
            .map(str::trim)
            .rfind(|l| !l.is_empty() && !l.starts_with('#'))
    }) else {
        return false;
    };
    let mut named: Vec<String> = last
        .split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .flat_map(|id| id.split('_'))
        .map(str::to_ascii_lowercase)
        .filter(|w| w.len() >= 3 && w.chars().all(|c| c.is_ascii_alphabetic()))
        .filter(|w| !FILLER.contains(&w.as_str()))
        .collect();
    named.sort();
    named.dedup();
    let before = claim.get(..at).unwrap_or("").to_ascii_lowercase();
    let words: Vec<&str> = before
        .split(|c: char| !c.is_ascii_alphabetic())
        .filter(|w| !w.is_empty())
        .collect();
    named
        .iter()
        .filter(|n| {
            words
                .iter()
                .any(|w| w == n || w.strip_suffix('s') == Some(n.as_str()))
        })
        .count()
        >= 2
}

/// Whether the claim states `v` as the value of something: `... is 38.5 pounds.`,
/// `... = 5`, `... equals 7`, `we get 12`.
fn states_value(claim: &str, v: &Value) -> bool {
    let before = claim.get(..v.at).unwrap_or("").to_lowercase();
    let before = before
        .trim_end()
        .trim_end_matches(['$', '(', '\\', '{', ' '])
        .trim_end_matches("\\(")
        .trim_end();
    let lead = before.trim_end_matches(['-', '−', '$']).trim_end();
    [
        "is", "are", "was", "were", "=", "equals", "be", "get", "gets", "got", "gives", "of",
        "has", "have", "had", "makes", "costs", "pays", "becomes", "remain", "remains", "to",
    ]
    .iter()
    .any(|w| lead.ends_with(&format!(" {w}")) || lead.ends_with(w) && *w == "=")
        || lead.ends_with("is approximately")
        || lead.ends_with("is about")
}

fn show_value(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v.trunc())
    } else {
        format!("{v}")
    }
}

/// The reason a tool judgement gives its interpreter: `(CPython 3.11.7, script
/// semantics)`.
fn ran_on(exec: &dyn Execute, mode: Mode) -> String {
    let sem = match mode {
        Mode::Script => "script",
        Mode::Cell => "cell",
    };
    format!("({}, {sem} semantics)", exec.interpreter())
}

/// What a payload abstention's reason adds, so that whoever reads it knows who pays.
const PAID_BY_PROVIDER: &str =
    "; the provider's code is at fault (the provider pays when a quorum of seats agrees)";

/// Whether a re-run's abstention is the provider's code's doing, the same on every honest
/// seat (a [`trust_protocol::Vote::PayloadAbstain`], which the provider pays for when a
/// quorum of the segment's seats casts it): the code exceeded one of the sandbox's
/// published caps (CPU, wall clock, memory, output), reached something that differs
/// between runs or machines, or did what the sandbox forbids (a socket, a new process, a
/// file outside its directory). What is the seat's side stays a plain abstention: a
/// module its interpreter lacks (another seat's may have it), a sandbox that failed to
/// start or crashed, execution turned off by the operator.
///
/// An adversary's view: a seat cannot make its own machine's fault look like the
/// provider's and be paid for it alone, since only a quorum of the round is paid; a wall
/// clock cap that one slow seat hits is a lone claim, unpaid.
pub fn caused_by_payload(a: &trust_sandbox::Abstain) -> bool {
    use trust_sandbox::Abstain as A;
    match a {
        A::Limit { .. } | A::NonDeterministic { .. } | A::Refused { .. } => true,
        A::Unavailable { .. } | A::Failed { .. } | A::Off => false,
    }
}

/// The judgement of a tool segment (see the module doc): `cells`, the code of the same
/// kernel's earlier calls, in order (replayed first under cell semantics); `exec`, the
/// seat's sandbox, if it has one.
pub fn judge_tool(tool: &ToolText<'_>, cells: &[String], exec: Option<&dyn Execute>) -> Judgement {
    match tool.kind() {
        ToolKind::Other => Judgement::Abstain(
            "the Computer tier cannot re-run this tool (it is neither code nor a calculator): its result is taken as reported".into(),
        ),
        ToolKind::Calculator => judge_calculator(tool),
        ToolKind::Code(mode) => {
            let Some(exec) = exec else {
                return Judgement::Abstain(
                    "no sandbox on this node: the tool call's code is not re-run".into(),
                );
            };
            let on = ran_on(exec, mode);
            let ran = match exec.execute(&request(tool, mode, cells)) {
                Outcome::Ran(r) => r,
                Outcome::Abstain(a) if caused_by_payload(&a) => {
                    return Judgement::payload_abstain(format!("{a} {on}{PAID_BY_PROVIDER}"));
                }
                Outcome::Abstain(a) => return Judgement::Abstain(format!("{a} {on}")),
            };
            if tool.form == Form::Stated {
                return judge_stated(tool.result, &ran.output, &on);
            }
            match compare(mode, tool.result, &ran) {
                Comparison::Same => Judgement::vote(
                    Vote::Valid,
                    format!("the re-run gives the reported result {on}"),
                ),
                Comparison::Differs { detail } => Judgement::vote(
                    Vote::Invalid,
                    format!(
                        "the re-run differs from the reported result in a value (`{detail}`) {on}"
                    ),
                ),
                Comparison::Unsure { why } => Judgement::Abstain(format!(
                    "the re-run and the reported result differ only in a way a recorder may cause (`{why}`) {on}"
                )),
            }
        }
    }
}

/// The run of `tool`'s code under `mode`: a kernel's earlier `cells` replayed first.
fn request(tool: &ToolText<'_>, mode: Mode, cells: &[String]) -> Request {
    Request {
        mode,
        earlier: if mode == Mode::Cell {
            cells.to_vec()
        } else {
            Vec::new()
        },
        code: tool.input.to_string(),
    }
}

/// Longest re-run output [`rerun_shown`] keeps.
pub const MAX_SHOWN_RERUN_BYTES: usize = 4_096;

/// What a node gets re-running `tool`'s code in its own sandbox, as its provider reads it
/// (the session page and `query` on the provider's node; never public): the output, with
/// the interpreter and semantics, clipped to [`MAX_SHOWN_RERUN_BYTES`], or why it was not
/// re-run. `None` for a tool that is not code (a calculator's verdict says what its
/// expression gives).
pub fn rerun_shown(
    tool: &ToolText<'_>,
    cells: &[String],
    exec: Option<&dyn Execute>,
) -> Option<String> {
    let ToolKind::Code(mode) = tool.kind() else {
        return None;
    };
    let Some(exec) = exec else {
        return Some("not re-run: this node has no sandbox".into());
    };
    let on = ran_on(exec, mode);
    Some(match exec.execute(&request(tool, mode, cells)) {
        Outcome::Ran(r) => {
            let mut out = r.output.trim_end().to_string();
            if out.len() > MAX_SHOWN_RERUN_BYTES {
                let end = (0..=MAX_SHOWN_RERUN_BYTES)
                    .rev()
                    .find(|i| out.is_char_boundary(*i))
                    .unwrap_or(0);
                out.truncate(end);
                out.push_str(" …");
            }
            format!("{out} {on}")
        }
        Outcome::Abstain(a) => format!("not re-run: {a} {on}"),
    })
}

/// A sentence stating a fenced block's output against the re-run: one number against one.
fn judge_stated(sentence: &str, output: &str, on: &str) -> Judgement {
    let (Some(stated), Some(run)) = (stated_output(sentence), result_values(output)) else {
        return Judgement::Abstain(format!(
            "the output the prose states cannot be aligned with the re-run {on}"
        ));
    };
    match run.as_slice() {
        [r] if restates(&stated, *r) => Judgement::vote(
            Vote::Valid,
            format!("the re-run gives the output the prose states {on}"),
        ),
        [r] if !paraphrase(stated.value, &[*r]) => Judgement::vote(
            Vote::Invalid,
            format!(
                "the re-run differs from the output the prose states (`{} against {}`) {on}",
                show_value(stated.value),
                show_value(*r)
            ),
        ),
        _ => Judgement::Abstain(format!(
            "the output the prose states cannot be aligned with the re-run {on}"
        )),
    }
}

/// The expression a calculator was given: the string under `expression` (or `expr`,
/// `input`, `query`, `formula`) of its arguments JSON, a bare JSON string, or the raw
/// arguments.
fn calculator_expression(input: &str) -> Option<String> {
    match serde_json::from_str::<serde_json::Value>(input.trim()) {
        Ok(serde_json::Value::String(s)) => Some(s),
        Ok(serde_json::Value::Object(m)) => ["expression", "expr", "input", "query", "formula"]
            .iter()
            .find_map(|k| m.get(*k).and_then(|v| v.as_str()).map(str::to_string)),
        Ok(_) => None,
        Err(_) => Some(input.trim().to_string()),
    }
}

fn judge_calculator(tool: &ToolText<'_>) -> Judgement {
    let Some(text) = calculator_expression(tool.input) else {
        return Judgement::Abstain("the calculator's argument is not an expression".into());
    };
    let Ok(e) = Expr::parse(&text) else {
        return Judgement::Abstain(
            "the calculator's expression is not one the checkers read".into(),
        );
    };
    let mut names = std::collections::BTreeSet::new();
    e.vars(&mut names);
    if !names.is_empty() {
        return Judgement::Abstain(
            "the calculator's expression holds names, not only numbers".into(),
        );
    }
    let Some(exact) = e.eval_exact(&std::collections::BTreeMap::new()) else {
        return Judgement::Abstain("the calculator's expression has no exact value".into());
    };
    let Some(reported) = result_values(tool.result) else {
        return Judgement::Abstain("the calculator reported an error".into());
    };
    let [r] = reported.as_slice() else {
        return Judgement::Abstain("the calculator's reported result is not one number".into());
    };
    let value = Rational::to_f64(exact);
    let shown = values(tool.result.trim(), false);
    let written = shown.first().map_or(0, |v| v.decimals);
    let as_stated = Value {
        value: *r,
        decimals: written,
        at: 0,
        boxed: false,
    };
    if restates(&as_stated, value) {
        Judgement::vote(
            Vote::Valid,
            "the expression evaluates to the calculator's reported result",
        )
    } else {
        Judgement::vote(
            Vote::Invalid,
            format!(
                "the expression does not evaluate to the calculator's reported result (`{} against {}`)",
                show_value(value),
                show_value(*r)
            ),
        )
    }
}

/// A tool call in words, for a tier that reads words: as the claim of its `TU` segment
/// (`hypothesis`: that the code does what the problem asks and its result answers it), or
/// as a premise of a later step (what was run and what it reported). `None` when `text`
/// is no tool call. The LLM tier's seats put a tool segment's text through this before
/// asking their entailment question, so the model reads code and result as such.
pub fn in_words(text: &str, hypothesis: bool) -> Option<String> {
    let t = read_tool(text)?;
    let what = match t.kind() {
        ToolKind::Code(_) => "this Python code",
        ToolKind::Calculator => "this expression",
        ToolKind::Other => "these arguments",
    };
    Some(if hypothesis {
        format!(
            "Running {what} with the tool {} computes what the problem asks at this point of the reasoning, and its result (below) is what the reasoning should use.\n{}\nResult:\n{}",
            t.name, t.input, t.result
        )
    } else {
        format!(
            "The tool {} was run with {what}:\n{}\nand reported:\n{}",
            t.name, t.input, t.result
        )
    })
}

/// Whether `text` is a tool segment's (a whole tool call, see [`read_tool`]).
pub fn is_tool(text: &str) -> bool {
    read_tool(text).is_some()
}

/// Whether `text` reads as Python code rather than a claim: a code fence, a line that
/// defines, returns, imports, loops or prints, or a tuple assignment (`a, b = b, a + b`).
/// Code holds statements, not equalities: the Computer tier never judges it as text.
pub fn looks_like_code(text: &str) -> bool {
    text.lines().any(|line| {
        let l = line.trim_start();
        if l.starts_with("```")
            || [
                "def ", "return ", "import ", "print(", "while ", "elif ", "lambda ",
            ]
            .iter()
            .any(|k| l.starts_with(k))
            || l.starts_with("for ") && l.contains(" in ") && l.trim_end().ends_with(':')
            || l.starts_with("if ")
                && l.trim_end().ends_with(':')
                && ["==", "!=", "<", ">", "%", " not ", "(", " in "]
                    .iter()
                    .any(|o| l.contains(o))
            || l.starts_with("from ") && l.contains(" import ")
        {
            return true;
        }
        // `a, b = ...`: names separated by commas before a single `=`.
        let Some((lhs, rhs)) = l.split_once('=') else {
            return false;
        };
        let names: Vec<&str> = lhs.split(',').map(str::trim).collect();
        names.len() >= 2
            && !rhs.starts_with('=')
            && names.iter().all(|n| {
                n.chars()
                    .next()
                    .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
                    && n.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            })
    })
}

#[cfg(test)]
mod tests;
