//! `<think>...</think>` text, as reasoning models such as DeepSeek-R1 print it.
//!
//! The thinking is what lies between `<think>` and `</think>` (the opening tag may be
//! missing, as when a chat template opened it: then everything before `</think>`); the
//! output is what follows `</think>`, after an optional `## Final Output` heading. The
//! problem comes from the `problem` option, or from a `## Problem Statement` section before
//! `<think>` (an optional `## Thinking Process` heading may follow it). When both are given
//! they must agree. Any other text before `<think>` is refused rather than guessed at.

use super::TranscriptError;
use crate::trace::Trace;

const OPEN: &str = "<think>";
const CLOSE: &str = "</think>";

/// Whether `input` looks like think text (it has a closing tag).
pub(in crate::trace) fn detect(input: &str) -> bool {
    input.contains(CLOSE)
}

/// Reads think text; `problem` is the caller's problem statement, if any.
pub(in crate::trace) fn read(input: &str, problem: Option<&str>) -> Result<Trace, TranscriptError> {
    if input.matches(CLOSE).count() != 1 {
        return Err(shape(format!(
            "expected exactly one {CLOSE}, found {}",
            input.matches(CLOSE).count()
        )));
    }
    let opens = input.matches(OPEN).count();
    if opens > 1 {
        return Err(shape(format!("expected at most one {OPEN}, found {opens}")));
    }
    let close = input.find(CLOSE).unwrap_or_default();
    let (prefix, think_start) = match input.find(OPEN) {
        Some(open) if open > close => {
            return Err(shape(format!("{OPEN} comes after {CLOSE}")));
        }
        Some(open) => (
            input.get(..open).unwrap_or(""),
            open.saturating_add(OPEN.len()),
        ),
        None => ("", 0),
    };
    let thinking = input.get(think_start..close).unwrap_or("").trim();
    let after = input.get(close.saturating_add(CLOSE.len())..).unwrap_or("");
    let output = strip_heading(after.trim(), "## Final Output").trim();
    let stated = if prefix.trim().is_empty() {
        None
    } else {
        let rest = prefix.trim_start();
        let body = heading_body(rest, "## Problem Statement").ok_or_else(|| {
            shape(format!("text before {OPEN} must be a ## Problem Statement section (or give the problem as an option)"))
        })?;
        Some(strip_trailing_heading(body, "## Thinking Process").trim())
    };
    let problem = match (problem.map(str::trim), stated) {
        (Some(given), Some(stated)) if given != stated => {
            return Err(shape(
                "the problem given as an option differs from the ## Problem Statement in the text",
            ));
        }
        (Some(p), _) | (None, Some(p)) => p,
        (None, None) => {
            return Err(shape(format!(
                "no problem: give it as an option (--problem) or put it under ## Problem Statement before {OPEN}"
            )));
        }
    };
    if problem.is_empty() {
        return Err(shape("the problem is empty"));
    }
    if thinking.is_empty() {
        return Err(TranscriptError::NoReasoning);
    }
    if output.is_empty() {
        return Err(TranscriptError::NoFinalAnswer(format!(
            "nothing after {CLOSE}"
        )));
    }
    Ok(Trace {
        problem: problem.to_string(),
        thinking: thinking.to_string(),
        output: output.to_string(),
    })
}

fn is_heading(line: &str, heading: &str) -> bool {
    line.trim()
        .trim_end_matches(':')
        .trim_end()
        .eq_ignore_ascii_case(heading)
}

/// The text after `heading` when `text` starts with that heading line.
fn shape(what: impl Into<String>) -> TranscriptError {
    TranscriptError::Think(what.into())
}

fn heading_body<'a>(text: &'a str, heading: &str) -> Option<&'a str> {
    let (first, rest) = text.split_once('\n').unwrap_or((text, ""));
    is_heading(first, heading).then_some(rest)
}

/// `text` without a leading `heading` line, if it has one.
fn strip_heading<'a>(text: &'a str, heading: &str) -> &'a str {
    heading_body(text, heading).unwrap_or(text)
}

/// `text` without a trailing `heading` line, if it has one.
fn strip_trailing_heading<'a>(text: &'a str, heading: &str) -> &'a str {
    let trimmed = text.trim_end();
    match trimmed.rsplit_once('\n') {
        Some((before, last)) if is_heading(last, heading) => before,
        None if is_heading(trimmed, heading) => "",
        _ => text,
    }
}
