//! Marker lines: tool calls and other non-prose content inside a trace's `thinking`.
//!
//! A trace stays [`Trace`](super::Trace) `{ problem, thinking, output }`: the decomposer,
//! session preparation, blinded ids and `proof verify --trace` all work on it, and every
//! segment must be an exact span of it. So transcript readers render what is not plain prose
//! (a tool call with its reported result, a message from another party, redacted reasoning)
//! into `thinking` as blocks delimited by marker lines, and [`blocks`] reads them back.
//!
//! A marker is a whole line (optionally ending in `\r\n` or `\n`), nothing else on it:
//!
//! ```text
//! <<<tool id=ID name=NAME>>>                 opens a tool call; the lines up to the result marker are its input
//! <<<tool id=ID name=NAME semantics=cell>>>  (semantics=script|cell only for code tools)
//! <<<result id=ID>>>                         the lines up to the end marker are the result the transcript reports
//! <<<end id=ID>>>                            closes the call
//! <<<message role=ROLE>>>                    a message from another party: context, never judged
//! <<<end message>>>
//! <<<redacted>>>                             reasoning the API redacted or encrypted: opaque context, never judged
//! <<<end redacted>>>
//! ```
//!
//! ID and NAME are 1-64 characters from `A-Za-z0-9_.:-`; ROLE is 1-32 of `a-z_`. A body is
//! the bytes after its opening marker line up to the start of the next marker line, minus the
//! one `\n` that precedes that marker: a body can be empty, and keeps its inner line breaks
//! and any `\r` (so a CRLF body `x\r\n` followed by a marker reads as `x\r`, and
//! `render_* -> blocks` gives back every body byte for byte).
//!
//! Any line of prose or body that starts with `<<<` and ends with `>>>` after trimming is
//! refused by the `render_*` functions and is an error in [`blocks`] unless it is a valid
//! marker in a valid place. Blocks do not nest, and an id appears in at most one tool call.

use std::{collections::BTreeSet, fmt, ops::Range, str::FromStr};

use serde::{Deserialize, Serialize};

/// Longest tool call id or tool name, in characters.
pub const MAX_ID_LEN: usize = 64;
/// Longest message role, in characters.
pub const MAX_ROLE_LEN: usize = 32;
/// How much of an offending id, name or role an error quotes.
const QUOTE_LEN: usize = 80;

/// How a code tool runs its code: a fresh program per call whose stdout is the result, or a
/// persistent kernel where earlier cells are replayed and a bare last expression shows its
/// value.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Semantics {
    /// A fresh program per call; its stdout is the result.
    Script,
    /// A persistent (Jupyter-like) kernel: earlier cells run first, a bare last expression
    /// shows its value.
    Cell,
}

impl Semantics {
    /// The word used in markers, options and JSON: `script` or `cell`.
    pub fn as_str(self) -> &'static str {
        match self {
            Semantics::Script => "script",
            Semantics::Cell => "cell",
        }
    }
}

impl fmt::Display for Semantics {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that is not `script` or `cell`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown tool semantics {0:?} (expected script or cell)")]
pub struct UnknownSemantics(pub String);

impl FromStr for Semantics {
    type Err = UnknownSemantics;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "script" => Ok(Semantics::Script),
            "cell" => Ok(Semantics::Cell),
            other => Err(UnknownSemantics(clip(other))),
        }
    }
}

/// One tool call in `thinking`: its marker attributes and byte ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCall {
    /// The call id (unique within the thinking).
    pub id: String,
    /// The tool's name.
    pub name: String,
    /// How a code tool runs its code; `None` for other tools or when unstated.
    pub semantics: Option<Semantics>,
    /// The whole block: the first byte of the tool marker to the end of the end-marker line
    /// (including its line break).
    pub span: Range<usize>,
    /// The input: the code for a code tool, the arguments JSON otherwise.
    pub input: Range<usize>,
    /// The result the transcript reports.
    pub result: Range<usize>,
}

/// A piece of `thinking`, in order. Ranges are byte ranges into the thinking.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Block {
    /// Prose between blocks (never whitespace-only).
    Text(Range<usize>),
    /// A tool call with its reported result.
    Tool(ToolCall),
    /// A message from another party (a later user turn, a system or developer instruction):
    /// context, never judged.
    Message {
        /// The sender's role, e.g. `user`, `system`.
        role: String,
        /// The whole block, markers included.
        span: Range<usize>,
        /// The message text.
        body: Range<usize>,
    },
    /// Reasoning the API redacted or encrypted: opaque context, never judged.
    Redacted {
        /// The whole block, markers included.
        span: Range<usize>,
        /// The opaque content.
        body: Range<usize>,
    },
}

impl Block {
    /// The bytes of the thinking this block covers.
    pub fn span(&self) -> Range<usize> {
        match self {
            Block::Text(r) => r.clone(),
            Block::Tool(call) => call.span.clone(),
            Block::Message { span, .. } | Block::Redacted { span, .. } => span.clone(),
        }
    }
}

/// Why marker lines could not be read or rendered. Line numbers count from 1.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockError {
    /// A line that looks like a marker (starts with `<<<`, ends with `>>>`) but is not one.
    #[error("line {line}: looks like a marker line but is not a valid marker ({reason})")]
    BadMarker {
        /// The line.
        line: usize,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A result marker while no tool call is open.
    #[error("line {line}: result marker for {id} with no open tool call")]
    ResultWithoutCall {
        /// The line.
        line: usize,
        /// The id it names.
        id: String,
    },
    /// An end marker while no tool call is open.
    #[error("line {line}: end marker for {id} with no open tool call")]
    EndWithoutCall {
        /// The line.
        line: usize,
        /// The id it names.
        id: String,
    },
    /// A result or end marker naming another id than the open tool call.
    #[error("line {line}: marker for id {found} inside tool call {open}")]
    IdMismatch {
        /// The line.
        line: usize,
        /// The open call's id.
        open: String,
        /// The id the marker names.
        found: String,
    },
    /// A tool call closed before its result marker.
    #[error("line {line}: tool call {id} ends before its result marker")]
    MissingResult {
        /// The line.
        line: usize,
        /// The call's id.
        id: String,
    },
    /// A marker inside a block where it has no place (blocks do not nest).
    #[error("line {line}: {marker} marker inside {inside} (blocks do not nest)")]
    Nested {
        /// The line.
        line: usize,
        /// The marker's kind.
        marker: &'static str,
        /// The open block.
        inside: String,
    },
    /// `<<<end message>>>` or `<<<end redacted>>>` with no such block open.
    #[error("line {line}: {marker} marker with no open block to close")]
    Stray {
        /// The line.
        line: usize,
        /// The marker's kind.
        marker: &'static str,
    },
    /// A tool call id used by an earlier call.
    #[error("line {line}: tool call id {id} appears twice (an id belongs to one tool call)")]
    DuplicateId {
        /// The line of the second use.
        line: usize,
        /// The id.
        id: String,
    },
    /// A block still open at the end of the thinking.
    #[error("line {line}: {what} opened here is never closed")]
    Unclosed {
        /// The line of its opening marker.
        line: usize,
        /// The block, e.g. `tool call c1`.
        what: String,
    },
    /// Content to render holds a line that would read as a marker.
    #[error("{what}: line {line} looks like a marker line (starts with <<< and ends with >>>)")]
    MarkerInContent {
        /// Which content, e.g. `input of tool call c1`.
        what: String,
        /// The line within that content.
        line: usize,
    },
    /// A tool call id outside 1-64 characters of `A-Za-z0-9_.:-`.
    #[error("tool call id {0:?} is not 1-64 characters of A-Za-z0-9_.:-")]
    BadId(String),
    /// A tool name outside 1-64 characters of `A-Za-z0-9_.:-`.
    #[error("tool name {0:?} is not 1-64 characters of A-Za-z0-9_.:-")]
    BadName(String),
    /// A role outside 1-32 characters of `a-z_`.
    #[error("message role {0:?} is not 1-32 characters of a-z_")]
    BadRole(String),
}

/// Whether `text` holds a line that looks like a marker (starts with `<<<` and ends with
/// `>>>` after trimming), valid or not. Readers use it to refuse content that would be
/// mistaken for structure.
pub fn has_markers(text: &str) -> bool {
    text.split('\n').any(looks_like_marker)
}

/// Renders a tool call block, ending in `\n`. `input` is the code for a code tool (its `code`
/// argument verbatim) or the arguments JSON verbatim; `result` is the reported result.
pub fn render_tool(
    id: &str,
    name: &str,
    semantics: Option<Semantics>,
    input: &str,
    result: &str,
) -> Result<String, BlockError> {
    if !is_token(id) {
        return Err(BlockError::BadId(clip(id)));
    }
    if !is_token(name) {
        return Err(BlockError::BadName(clip(name)));
    }
    refuse_markers(input, || format!("input of tool call {id}"))?;
    refuse_markers(result, || format!("result of tool call {id}"))?;
    let mut out = String::with_capacity(
        input
            .len()
            .saturating_add(result.len())
            .saturating_add(id.len().saturating_mul(3))
            .saturating_add(name.len())
            .saturating_add(80),
    );
    out.push_str("<<<tool id=");
    out.push_str(id);
    out.push_str(" name=");
    out.push_str(name);
    if let Some(s) = semantics {
        out.push_str(" semantics=");
        out.push_str(s.as_str());
    }
    out.push_str(">>>\n");
    out.push_str(input);
    out.push_str("\n<<<result id=");
    out.push_str(id);
    out.push_str(">>>\n");
    out.push_str(result);
    out.push_str("\n<<<end id=");
    out.push_str(id);
    out.push_str(">>>\n");
    Ok(out)
}

/// Renders a message from another party (`role` such as `user`, `system`, `developer`),
/// ending in `\n`.
pub fn render_message(role: &str, body: &str) -> Result<String, BlockError> {
    if !is_role(role) {
        return Err(BlockError::BadRole(clip(role)));
    }
    refuse_markers(body, || format!("{role} message"))?;
    Ok(format!(
        "<<<message role={role}>>>\n{body}\n<<<end message>>>\n"
    ))
}

/// Renders redacted or encrypted reasoning as an opaque block, ending in `\n`.
pub fn render_redacted(body: &str) -> Result<String, BlockError> {
    refuse_markers(body, || "redacted reasoning".to_string())?;
    Ok(format!("<<<redacted>>>\n{body}\n<<<end redacted>>>\n"))
}

/// Reads the blocks of `thinking`, in order. `Text` blocks cover what lies between the other
/// blocks (exactly, line breaks included); whitespace-only text is omitted.
pub fn blocks(thinking: &str) -> Result<Vec<Block>, BlockError> {
    let mut out = Vec::new();
    let mut ids: BTreeSet<&str> = BTreeSet::new();
    let mut open: Option<Open<'_>> = None;
    let mut text_start = 0usize;
    let mut offset = 0usize;
    for (index, line) in thinking.split_inclusive('\n').enumerate() {
        let line_no = index.saturating_add(1);
        let start = offset;
        offset = offset.saturating_add(line.len());
        let content = line.strip_suffix('\n').unwrap_or(line);
        let content = content.strip_suffix('\r').unwrap_or(content);
        if !looks_like_marker(content) {
            continue;
        }
        let marker = parse_marker(content).map_err(|reason| BlockError::BadMarker {
            line: line_no,
            reason,
        })?;
        // The body before this marker ends at its line start, minus the one `\n` that ends
        // the body's last line (absent when the body is empty).
        let body_end = |body_start: usize| {
            if start > body_start {
                start.saturating_sub(1)
            } else {
                start
            }
        };
        match (open.take(), marker) {
            (
                None,
                Marker::Tool {
                    id,
                    name,
                    semantics,
                },
            ) => {
                if !ids.insert(id) {
                    return Err(BlockError::DuplicateId {
                        line: line_no,
                        id: id.to_string(),
                    });
                }
                push_text(&mut out, thinking, text_start..start);
                open = Some(Open::Tool {
                    id,
                    name,
                    semantics,
                    line: line_no,
                    start,
                    input_start: offset,
                    input: None,
                });
            }
            (None, Marker::Message { role }) => {
                push_text(&mut out, thinking, text_start..start);
                open = Some(Open::Message {
                    role,
                    line: line_no,
                    start,
                    body_start: offset,
                });
            }
            (None, Marker::Redacted) => {
                push_text(&mut out, thinking, text_start..start);
                open = Some(Open::Redacted {
                    line: line_no,
                    start,
                    body_start: offset,
                });
            }
            (None, Marker::Result { id }) => {
                return Err(BlockError::ResultWithoutCall {
                    line: line_no,
                    id: id.to_string(),
                });
            }
            (None, Marker::End { id }) => {
                return Err(BlockError::EndWithoutCall {
                    line: line_no,
                    id: id.to_string(),
                });
            }
            (None, Marker::EndMessage) => {
                return Err(BlockError::Stray {
                    line: line_no,
                    marker: "end message",
                });
            }
            (None, Marker::EndRedacted) => {
                return Err(BlockError::Stray {
                    line: line_no,
                    marker: "end redacted",
                });
            }
            (
                Some(Open::Tool {
                    id: open_id,
                    name,
                    semantics,
                    line,
                    start: block_start,
                    input_start,
                    input: None,
                }),
                Marker::Result { id },
            ) if id == open_id => {
                open = Some(Open::Tool {
                    id: open_id,
                    name,
                    semantics,
                    line,
                    start: block_start,
                    input_start: offset,
                    input: Some(input_start..body_end(input_start)),
                });
            }
            (
                Some(Open::Tool {
                    id: open_id,
                    input: None,
                    ..
                }),
                Marker::End { id },
            ) if id == open_id => {
                return Err(BlockError::MissingResult {
                    line: line_no,
                    id: id.to_string(),
                });
            }
            (
                Some(Open::Tool {
                    id: open_id,
                    name,
                    semantics,
                    start: block_start,
                    input_start: result_start,
                    input: Some(input),
                    ..
                }),
                Marker::End { id },
            ) if id == open_id => {
                out.push(Block::Tool(ToolCall {
                    id: id.to_string(),
                    name: name.to_string(),
                    semantics,
                    span: block_start..offset,
                    input,
                    result: result_start..body_end(result_start),
                }));
                text_start = offset;
            }
            (Some(Open::Tool { id: open_id, .. }), Marker::Result { id } | Marker::End { id })
                if id != open_id =>
            {
                return Err(BlockError::IdMismatch {
                    line: line_no,
                    open: open_id.to_string(),
                    found: id.to_string(),
                });
            }
            (
                Some(Open::Message {
                    role,
                    start: block_start,
                    body_start,
                    ..
                }),
                Marker::EndMessage,
            ) => {
                out.push(Block::Message {
                    role: role.to_string(),
                    span: block_start..offset,
                    body: body_start..body_end(body_start),
                });
                text_start = offset;
            }
            (
                Some(Open::Redacted {
                    start: block_start,
                    body_start,
                    ..
                }),
                Marker::EndRedacted,
            ) => {
                out.push(Block::Redacted {
                    span: block_start..offset,
                    body: body_start..body_end(body_start),
                });
                text_start = offset;
            }
            (Some(block), marker) => {
                return Err(BlockError::Nested {
                    line: line_no,
                    marker: marker.kind(),
                    inside: block.describe(),
                });
            }
        }
    }
    if let Some(block) = open {
        return Err(BlockError::Unclosed {
            line: block.line(),
            what: block.describe(),
        });
    }
    push_text(&mut out, thinking, text_start..thinking.len());
    Ok(out)
}

/// A block whose closing marker has not been seen yet.
enum Open<'a> {
    Tool {
        id: &'a str,
        name: &'a str,
        semantics: Option<Semantics>,
        line: usize,
        start: usize,
        /// Where the body being read starts: the input's, then (once `input` is set) the
        /// result's.
        input_start: usize,
        input: Option<Range<usize>>,
    },
    Message {
        role: &'a str,
        line: usize,
        start: usize,
        body_start: usize,
    },
    Redacted {
        line: usize,
        start: usize,
        body_start: usize,
    },
}

impl Open<'_> {
    fn line(&self) -> usize {
        match self {
            Open::Tool { line, .. } | Open::Message { line, .. } | Open::Redacted { line, .. } => {
                *line
            }
        }
    }

    fn describe(&self) -> String {
        match self {
            Open::Tool { id, .. } => format!("tool call {id}"),
            Open::Message { role, .. } => format!("message role={role}"),
            Open::Redacted { .. } => "redacted block".to_string(),
        }
    }
}

/// A parsed marker line.
enum Marker<'a> {
    Tool {
        id: &'a str,
        name: &'a str,
        semantics: Option<Semantics>,
    },
    Result {
        id: &'a str,
    },
    End {
        id: &'a str,
    },
    Message {
        role: &'a str,
    },
    EndMessage,
    Redacted,
    EndRedacted,
}

impl Marker<'_> {
    fn kind(&self) -> &'static str {
        match self {
            Marker::Tool { .. } => "tool",
            Marker::Result { .. } => "result",
            Marker::End { .. } => "end",
            Marker::Message { .. } => "message",
            Marker::EndMessage => "end message",
            Marker::Redacted => "redacted",
            Marker::EndRedacted => "end redacted",
        }
    }
}

fn looks_like_marker(line: &str) -> bool {
    let t = line.trim();
    t.starts_with("<<<") && t.ends_with(">>>")
}

/// Parses a marker line (without its line break), exactly as written in the module docs.
fn parse_marker(line: &str) -> Result<Marker<'_>, &'static str> {
    let inner = line
        .strip_prefix("<<<")
        .and_then(|s| s.strip_suffix(">>>"))
        .ok_or("a marker fills its whole line, with nothing before <<< or after >>>")?;
    match inner {
        "end message" => return Ok(Marker::EndMessage),
        "redacted" => return Ok(Marker::Redacted),
        "end redacted" => return Ok(Marker::EndRedacted),
        _ => {}
    }
    let mut words = inner.split(' ');
    let kind = words.next().unwrap_or("");
    let attrs: Vec<&str> = words.collect();
    const ID: &str = "expected id=ID, 1-64 characters of A-Za-z0-9_.:-";
    match kind {
        "tool" => {
            let id = token(&attrs, 0, "id", ID)?;
            let name = token(
                &attrs,
                1,
                "name",
                "expected name=NAME, 1-64 characters of A-Za-z0-9_.:-",
            )?;
            let semantics = match attrs.len() {
                2 => None,
                3 => Some(
                    attr(&attrs, 2, "semantics")
                        .and_then(|s| s.parse().ok())
                        .ok_or("expected semantics=script or semantics=cell")?,
                ),
                _ => {
                    return Err(
                        "a tool marker is <<<tool id=ID name=NAME [semantics=script|cell]>>>, single spaces",
                    );
                }
            };
            Ok(Marker::Tool {
                id,
                name,
                semantics,
            })
        }
        "result" | "end" => {
            if attrs.len() != 1 {
                return Err("expected <<<result id=ID>>> or <<<end id=ID>>>, single spaces");
            }
            let id = token(&attrs, 0, "id", ID)?;
            Ok(if kind == "result" {
                Marker::Result { id }
            } else {
                Marker::End { id }
            })
        }
        "message" => {
            let role = attr(&attrs, 0, "role")
                .filter(|r| attrs.len() == 1 && is_role(r))
                .ok_or("expected <<<message role=ROLE>>>, ROLE 1-32 characters of a-z_")?;
            Ok(Marker::Message { role })
        }
        _ => Err(
            "unknown marker (expected tool, result, end, message, end message, redacted or end redacted)",
        ),
    }
}

/// The value of attribute `i` when it is written `key=value`.
fn attr<'a>(attrs: &[&'a str], i: usize, key: &str) -> Option<&'a str> {
    attrs
        .get(i)
        .and_then(|w| w.strip_prefix(key))
        .and_then(|w| w.strip_prefix('='))
}

/// The value of attribute `i` when it is `key=` followed by an id or name.
fn token<'a>(
    attrs: &[&'a str],
    i: usize,
    key: &str,
    what: &'static str,
) -> Result<&'a str, &'static str> {
    attr(attrs, i, key).filter(|v| is_token(v)).ok_or(what)
}

/// An id or tool name: 1-64 characters of `A-Za-z0-9_.:-`.
fn is_token(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b':' | b'-'))
}

/// A role: 1-32 characters of `a-z_`.
fn is_role(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ROLE_LEN
        && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_')
}

fn refuse_markers(text: &str, what: impl FnOnce() -> String) -> Result<(), BlockError> {
    match text.split('\n').position(looks_like_marker) {
        Some(i) => Err(BlockError::MarkerInContent {
            what: what(),
            line: i.saturating_add(1),
        }),
        None => Ok(()),
    }
}

fn push_text(out: &mut Vec<Block>, thinking: &str, range: Range<usize>) {
    if thinking
        .get(range.clone())
        .is_some_and(|s| !s.trim().is_empty())
    {
        out.push(Block::Text(range));
    }
}

/// An offending value as an error quotes it: at most [`QUOTE_LEN`] characters.
fn clip(s: &str) -> String {
    s.chars().take(QUOTE_LEN).collect()
}

#[cfg(test)]
mod tests;
