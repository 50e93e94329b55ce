//! Transcript readers: the formats providers already hold, turned into a [`Trace`].
//!
//! Each reader turns its format into one shared shape, a list of [`Event`]s (messages from
//! other parties, assistant messages made of reasoning, text and tool calls, tool replies),
//! and [`assemble`] applies the mapping rules once for every format:
//!
//! - problem: the first user message's text;
//! - system and developer messages, later user turns (and anything said before the first user
//!   message) become `<<<message role=...>>>` blocks, in place, so instructions given first
//!   sit at the top of the thinking;
//! - assistant reasoning, and the text of every assistant message but the last, become prose
//!   in the thinking, in order; redacted or encrypted reasoning becomes a `<<<redacted>>>`
//!   block (opaque context, never judged);
//! - each tool call becomes a tool block holding its reply: for a code tool (a `code` string
//!   argument, or a code interpreter) the code itself, otherwise the arguments JSON;
//! - output: the text that ends the final assistant message (text of that message before its
//!   last tool call or reasoning stays in the thinking).
//!
//! A transcript that does not hold together is an error naming where, never a guess.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Format, ReadOptions, Trace, TraceError,
    blocks::{BlockError, Semantics, has_markers, render_message, render_redacted, render_tool},
};

pub(super) mod anthropic;
pub(super) mod openai_chat;
pub(super) mod openai_responses;
pub(super) mod otel;
pub(super) mod think;

/// How much of a value taken from the input an error quotes.
const QUOTE_LEN: usize = 80;

/// Why a transcript could not be read. `at` says where (a JSON path, an item or a span).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TranscriptError {
    /// A value of the wrong shape or a missing field.
    #[error("{at}: {expected}")]
    Shape {
        /// Where.
        at: String,
        /// What was expected there.
        expected: String,
    },
    /// A message role the format does not have.
    #[error("{at}: unknown role {role:?} (expected {expected})")]
    UnknownRole {
        /// Where.
        at: String,
        /// The role found.
        role: String,
        /// The roles the format has.
        expected: &'static str,
    },
    /// A content part, block, item or span kind this reader does not take.
    #[error("{at}: unsupported {what} {kind:?} (supported: {supported})")]
    Unsupported {
        /// Where.
        at: String,
        /// What kind of thing, e.g. `content block`.
        what: &'static str,
        /// Its type.
        kind: String,
        /// What is supported instead.
        supported: &'static str,
    },
    /// A tool reply whose call id no earlier call has.
    #[error("{at}: tool reply for call {id} with no earlier call of that id")]
    ReplyWithoutCall {
        /// Where.
        at: String,
        /// The id.
        id: String,
    },
    /// A second reply to one tool call.
    #[error("{at}: a second reply for tool call {id}")]
    SecondReply {
        /// Where.
        at: String,
        /// The id.
        id: String,
    },
    /// Two tool calls with one id.
    #[error("{at}: tool call id {id} is used by an earlier call too")]
    DuplicateCallId {
        /// Where the second call is.
        at: String,
        /// The id.
        id: String,
    },
    /// A tool call the transcript never answers.
    #[error("{at}: tool call {id} has no reply")]
    CallWithoutReply {
        /// Where the call is.
        at: String,
        /// The id.
        id: String,
    },
    /// No user message, so no problem.
    #[error("no user message (the problem is the first user message's text)")]
    NoUserMessage,
    /// The transcript does not end in an assistant answer.
    #[error("no final answer: {0}")]
    NoFinalAnswer(String),
    /// Nothing between the problem and the answer to audit.
    #[error(
        "no reasoning to audit: no assistant reasoning, tool call or earlier assistant text before the final answer"
    )]
    NoReasoning,
    /// Content holding a line that would read as a marker line.
    #[error(
        "{at}: a line of the content looks like a marker line (starts with <<< and ends with >>>); transcripts may not hold them"
    )]
    MarkerInContent {
        /// Where.
        at: String,
    },
    /// A tool call id, tool name or role that cannot be written as a marker.
    #[error("{at}: {error}")]
    Marker {
        /// Where.
        at: String,
        /// Why.
        error: BlockError,
    },
    /// `<think>` text that does not have the shape it needs.
    #[error("{0}")]
    Think(String),
    /// Two spellings of one thing that disagree (e.g. a tool result recorded twice).
    #[error("{at}: {what}")]
    Conflict {
        /// Where.
        at: String,
        /// What disagrees.
        what: String,
    },
}

/// Detects the format of `input`: JSON by its shape, text by `</think>` (unless the text is
/// a complete three-heading trace, which keeps reading as it always has).
pub(super) fn detect(input: &str) -> Result<Format, TraceError> {
    let t = input.trim_start();
    if t.starts_with('{') || t.starts_with('[') {
        match serde_json::from_str::<Value>(input) {
            Ok(v) => return detect_json(&v),
            // Malformed JSON objects get the JSON form's own error, as they always have.
            Err(_) if t.starts_with('{') => return Ok(Format::Json),
            Err(_) => {}
        }
    }
    if think::detect(input) && Trace::parse_text(input).is_err() {
        return Ok(Format::Think);
    }
    let headed = input.lines().any(|line| {
        let line = line.trim().trim_end_matches(':').trim_end();
        [
            "## Problem Statement",
            "## Thinking Process",
            "## Final Output",
        ]
        .iter()
        .any(|h| line.eq_ignore_ascii_case(h))
    });
    if headed || input.len() > super::MAX_TRACE_BYTES {
        // Some headings: the text form's own errors say which is missing or misplaced (and
        // text over the trace limit gets the limit's error, as it always has).
        Ok(Format::Text)
    } else {
        Err(unrecognized(
            "text with none of the headings ## Problem Statement, ## Thinking Process, ## Final Output and no </think>",
        ))
    }
}

fn detect_json(v: &Value) -> Result<Format, TraceError> {
    match v {
        Value::Object(m) => {
            if m.contains_key("resourceSpans") {
                Ok(Format::Otel)
            } else if let Some(Value::Array(messages)) = m.get("messages") {
                Ok(chat_or_anthropic(messages, m.contains_key("system")))
            } else if m.get("output").is_some_and(Value::is_array) || m.contains_key("input") {
                Ok(Format::Responses)
            } else if ["problem", "thinking", "output"]
                .iter()
                .any(|k| m.contains_key(*k))
            {
                Ok(Format::Json)
            } else {
                Err(unrecognized(
                    "a JSON object with none of the keys messages, input/output, resourceSpans or problem/thinking/output",
                ))
            }
        }
        Value::Array(items) if items.is_empty() => Err(unrecognized("an empty JSON list")),
        Value::Array(items) => {
            if items.iter().any(|i| i.get("type").is_some()) {
                Ok(Format::Responses)
            } else if items.iter().all(|i| i.get("role").is_some()) {
                Ok(chat_or_anthropic(items, false))
            } else {
                Err(unrecognized(
                    "a JSON list whose items are not all messages ({role, ...}) or typed items ({type, ...})",
                ))
            }
        }
        _ => Err(unrecognized("JSON that is neither an object nor a list")),
    }
}

/// Chat unless only Anthropic's own content blocks (or its top-level `system`) are seen.
fn chat_or_anthropic(messages: &[Value], top_level_system: bool) -> Format {
    const CHAT_KEYS: [&str; 5] = [
        "tool_calls",
        "tool_call_id",
        "reasoning_content",
        "reasoning_details",
        "reasoning",
    ];
    let chat = messages.iter().any(|m| {
        matches!(
            m.get("role").and_then(Value::as_str),
            Some("system" | "developer" | "tool")
        ) || CHAT_KEYS.iter().any(|k| m.get(*k).is_some())
    });
    let anthropic_block = |b: &Value| {
        b.get("type").and_then(Value::as_str).is_some_and(|t| {
            matches!(
                t,
                "thinking" | "redacted_thinking" | "tool_use" | "tool_result" | "server_tool_use"
            ) || t.ends_with("_tool_result")
        })
    };
    let anthropic = top_level_system
        || messages.iter().any(|m| {
            m.get("content")
                .and_then(Value::as_array)
                .is_some_and(|blocks| blocks.iter().any(anthropic_block))
        });
    if anthropic && !chat {
        Format::Anthropic
    } else {
        Format::Chat
    }
}

fn unrecognized(what: &str) -> TraceError {
    let expected: Vec<&str> = Format::ALL.iter().map(|f| f.describe()).collect();
    TraceError::Unrecognized(format!(
        "not a trace in any known format: found {what}; expected one of: {}",
        expected.join("; ")
    ))
}

/// Reads a transcript of `format` (not the network's own two forms).
pub(super) fn read(
    format: Format,
    input: &str,
    options: &ReadOptions,
) -> Result<Trace, TraceError> {
    let wrap = |error| TraceError::Transcript { format, error };
    if format == Format::Think {
        return think::read(input, options.problem.as_deref()).map_err(wrap);
    }
    let v: Value = serde_json::from_str(input).map_err(|e| TraceError::TranscriptJson {
        format,
        message: e.to_string(),
    })?;
    let (events, tools) = match format {
        Format::Chat => openai_chat::events(&v),
        Format::Responses => openai_responses::events(&v),
        Format::Anthropic => anthropic::events(&v),
        Format::Otel => otel::events(&v),
        Format::Think | Format::Json | Format::Text => {
            return Err(TraceError::Option(
                "the network's own forms are not transcripts",
            ));
        }
    }
    .map_err(wrap)?;
    assemble(events, &tools, options.semantics).map_err(wrap)
}

/// One step of a conversation, in the shared shape every reader produces.
#[derive(Debug, Clone)]
pub(super) enum Event {
    /// A message from another party: `system`, `developer`, `user` (or, before the first
    /// user message, `assistant`).
    Say {
        role: &'static str,
        text: String,
        at: String,
    },
    /// One assistant message.
    Assistant { pieces: Vec<Piece>, at: String },
    /// A tool's reply to an earlier call.
    Reply {
        id: String,
        text: String,
        at: String,
    },
}

/// A part of an assistant message.
#[derive(Debug, Clone)]
pub(super) enum Piece {
    Reasoning(String),
    Redacted(String),
    Text(String),
    Call(Call),
}

/// A tool call as the transcript records it.
#[derive(Debug, Clone)]
pub(super) struct Call {
    pub(super) id: String,
    pub(super) name: String,
    /// The arguments as JSON text (verbatim where the format keeps them as a string).
    pub(super) arguments: String,
    /// The code, for a code tool (a `code` string argument, or a code interpreter's code).
    pub(super) code: Option<String>,
    /// Semantics a built-in code tool has when nothing else says (a code interpreter).
    pub(super) default_semantics: Option<Semantics>,
    /// The result, when the format records it with the call.
    pub(super) result: Option<String>,
}

impl Call {
    /// A function-style call: `code` is taken from the arguments when they are a JSON object
    /// with a `code` string.
    pub(super) fn function(id: String, name: String, arguments: String) -> Call {
        let code = serde_json::from_str::<Value>(&arguments)
            .ok()
            .and_then(|v| v.get("code").and_then(Value::as_str).map(str::to_string));
        Call {
            id,
            name,
            arguments,
            code,
            default_semantics: None,
            result: None,
        }
    }
}

/// What the transcript's tool definitions say about each tool.
#[derive(Debug, Clone, Default)]
pub(super) struct Tools {
    by_name: BTreeMap<String, ToolDef>,
}

#[derive(Debug, Clone, Default)]
struct ToolDef {
    description: String,
    semantics: Option<Semantics>,
}

impl Tools {
    /// Records a definition. `def` is the object holding `semantics` (the tool's own field,
    /// `script` or `cell`), if any.
    pub(super) fn add(
        &mut self,
        name: &str,
        description: Option<&str>,
        def: &Map<String, Value>,
        at: &str,
    ) -> Result<(), TranscriptError> {
        let semantics = match def.get("semantics") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.parse().map_err(|_| TranscriptError::Shape {
                at: format!("{at}.semantics"),
                expected: format!("\"script\" or \"cell\", not {:?}", clip(s)),
            })?),
            Some(_) => {
                return Err(TranscriptError::Shape {
                    at: format!("{at}.semantics"),
                    expected: "\"script\" or \"cell\"".into(),
                });
            }
        };
        self.by_name.insert(
            name.to_string(),
            ToolDef {
                description: description.unwrap_or("").to_string(),
                semantics,
            },
        );
        Ok(())
    }

    /// The semantics of a code tool: the option, else the definition's `semantics` field,
    /// else a built-in tool's own, else `cell` when the description speaks of a persistent
    /// kernel, else `script`.
    fn semantics(&self, call: &Call, forced: Option<Semantics>) -> Semantics {
        if let Some(s) = forced {
            return s;
        }
        let def = self.by_name.get(&call.name);
        if let Some(s) = def.and_then(|d| d.semantics) {
            return s;
        }
        if let Some(s) = call.default_semantics {
            return s;
        }
        let description = def.map(|d| d.description.to_ascii_lowercase());
        let persistent = description.is_some_and(|d| {
            ["jupyter", "ipython", "kernel", "persistent", "persists"]
                .iter()
                .any(|w| d.contains(w))
        });
        if persistent {
            Semantics::Cell
        } else {
            Semantics::Script
        }
    }
}

/// Applies the mapping rules (module docs) to a reader's events.
pub(super) fn assemble(
    events: Vec<Event>,
    tools: &Tools,
    semantics: Option<Semantics>,
) -> Result<Trace, TranscriptError> {
    let replies = check_calls(&events)?;
    let first_user = events
        .iter()
        .position(|e| matches!(e, Event::Say { role: "user", .. }))
        .ok_or(TranscriptError::NoUserMessage)?;
    let last = events
        .iter()
        .rposition(|e| matches!(e, Event::Assistant { .. }))
        .filter(|&i| i > first_user)
        .ok_or_else(|| {
            TranscriptError::NoFinalAnswer(
                "no assistant message after the first user message".into(),
            )
        })?;
    if let Some(after) = events.get(last.saturating_add(1)..).and_then(|r| r.first()) {
        let what = match after {
            Event::Say { role, at, .. } => format!(
                "the transcript ends with a {role} message ({at}) after the last assistant message"
            ),
            Event::Reply { id, at, .. } => format!(
                "the transcript ends with the reply to tool call {} ({at}), not an assistant answer",
                clip(id)
            ),
            Event::Assistant { .. } => String::new(),
        };
        return Err(TranscriptError::NoFinalAnswer(what));
    }
    let mut problem = String::new();
    let mut output = String::new();
    let mut parts: Vec<String> = Vec::new();
    for (i, event) in events.iter().enumerate() {
        match event {
            Event::Say { role, text, at } => {
                if i == first_user {
                    problem = text.clone();
                } else {
                    check_content(text, at)?;
                    parts.push(render_message(role, text).map_err(|error| {
                        TranscriptError::Marker {
                            at: at.clone(),
                            error,
                        }
                    })?);
                }
            }
            Event::Reply { .. } => {}
            Event::Assistant { pieces, at } => {
                let mut body = pieces.as_slice();
                if i == last {
                    let answer = pieces
                        .iter()
                        .rposition(|p| !matches!(p, Piece::Text(_)))
                        .map_or(0, |p| p.saturating_add(1));
                    let texts: Vec<&str> = pieces
                        .get(answer..)
                        .unwrap_or_default()
                        .iter()
                        .filter_map(|p| match p {
                            Piece::Text(t) => Some(t.as_str()),
                            _ => None,
                        })
                        .collect();
                    output = texts.join("\n");
                    if output.trim().is_empty() {
                        let ends = match pieces.last() {
                            Some(Piece::Call(c)) => format!("with tool call {}", clip(&c.id)),
                            Some(Piece::Reasoning(_) | Piece::Redacted(_)) => {
                                "with reasoning".to_string()
                            }
                            _ => "with no text".to_string(),
                        };
                        return Err(TranscriptError::NoFinalAnswer(format!(
                            "the final assistant message ({at}) ends {ends}, not an answer"
                        )));
                    }
                    body = pieces.get(..answer).unwrap_or_default();
                }
                for piece in body {
                    render_piece(piece, at, tools, semantics, &replies, &mut parts)?;
                }
            }
        }
    }
    if problem.trim().is_empty() {
        return Err(TranscriptError::Shape {
            at: event_at(events.get(first_user)),
            expected: "the first user message (the problem) has no text".into(),
        });
    }
    let thinking = parts.join("\n");
    if thinking.trim().is_empty() {
        return Err(TranscriptError::NoReasoning);
    }
    Ok(Trace {
        problem,
        thinking,
        output,
    })
}

fn event_at(e: Option<&Event>) -> String {
    match e {
        Some(Event::Say { at, .. } | Event::Assistant { at, .. } | Event::Reply { at, .. }) => {
            at.clone()
        }
        None => String::new(),
    }
}

fn render_piece(
    piece: &Piece,
    at: &str,
    tools: &Tools,
    semantics: Option<Semantics>,
    replies: &BTreeMap<&str, &str>,
    parts: &mut Vec<String>,
) -> Result<(), TranscriptError> {
    let marker = |error| TranscriptError::Marker {
        at: at.to_string(),
        error,
    };
    match piece {
        Piece::Reasoning(t) | Piece::Text(t) => {
            if !t.trim().is_empty() {
                check_content(t, at)?;
                parts.push(t.clone());
            }
        }
        Piece::Redacted(t) => {
            check_content(t, at)?;
            parts.push(render_redacted(t).map_err(marker)?);
        }
        Piece::Call(call) => {
            let result = call
                .result
                .as_deref()
                .or_else(|| replies.get(call.id.as_str()).copied())
                .unwrap_or_default();
            let (input, sem) = match &call.code {
                Some(code) => (code.as_str(), Some(tools.semantics(call, semantics))),
                None => (call.arguments.as_str(), None),
            };
            let call_at = format!("{at}, tool call {}", clip(&call.id));
            check_content(input, &format!("{call_at} input"))?;
            check_content(result, &format!("{call_at} result"))?;
            parts.push(render_tool(&call.id, &call.name, sem, input, result).map_err(marker)?);
        }
    }
    Ok(())
}

/// Checks that calls and replies pair up, and returns each call's reply by id.
fn check_calls(events: &[Event]) -> Result<BTreeMap<&str, &str>, TranscriptError> {
    let mut calls: BTreeMap<&str, (&str, bool)> = BTreeMap::new();
    let mut replies: BTreeMap<&str, &str> = BTreeMap::new();
    for event in events {
        match event {
            Event::Assistant { pieces, at } => {
                for piece in pieces {
                    if let Piece::Call(c) = piece {
                        if c.id.is_empty() {
                            return Err(TranscriptError::Shape {
                                at: at.clone(),
                                expected: format!("tool call {} has no id", clip(&c.name)),
                            });
                        }
                        if calls
                            .insert(&c.id, (at.as_str(), c.result.is_some()))
                            .is_some()
                        {
                            return Err(TranscriptError::DuplicateCallId {
                                at: at.clone(),
                                id: clip(&c.id),
                            });
                        }
                    }
                }
            }
            Event::Reply { id, text, at } => match calls.get_mut(id.as_str()) {
                None => {
                    return Err(TranscriptError::ReplyWithoutCall {
                        at: at.clone(),
                        id: clip(id),
                    });
                }
                Some((_, answered)) => {
                    if *answered {
                        return Err(TranscriptError::SecondReply {
                            at: at.clone(),
                            id: clip(id),
                        });
                    }
                    *answered = true;
                    replies.insert(id, text);
                }
            },
            Event::Say { .. } => {}
        }
    }
    if let Some((id, (at, _))) = calls.iter().find(|(_, (_, answered))| !answered) {
        return Err(TranscriptError::CallWithoutReply {
            at: at.to_string(),
            id: clip(id),
        });
    }
    Ok(replies)
}

fn check_content(text: &str, at: &str) -> Result<(), TranscriptError> {
    if has_markers(text) {
        Err(TranscriptError::MarkerInContent { at: at.to_string() })
    } else {
        Ok(())
    }
}

/// A value from the input as an error quotes it.
pub(super) fn clip(s: &str) -> String {
    s.chars().take(QUOTE_LEN).collect()
}

pub(super) fn shape(at: impl Into<String>, expected: impl Into<String>) -> TranscriptError {
    TranscriptError::Shape {
        at: at.into(),
        expected: expected.into(),
    }
}

/// `v` as an object, or an error saying what was expected at `at`.
pub(super) fn object<'a>(
    v: &'a Value,
    at: &str,
) -> Result<&'a Map<String, Value>, TranscriptError> {
    v.as_object().ok_or_else(|| shape(at, "expected an object"))
}

/// `v` as an array, or an error saying what was expected at `at`.
pub(super) fn array<'a>(v: &'a Value, at: &str) -> Result<&'a [Value], TranscriptError> {
    v.as_array()
        .map(Vec::as_slice)
        .ok_or_else(|| shape(at, "expected a list"))
}

/// A string field that may be absent or null.
pub(super) fn opt_str<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<Option<&'a str>, TranscriptError> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s)),
        Some(_) => Err(shape(format!("{at}.{key}"), "expected a string")),
    }
}

/// A string field that must be present.
pub(super) fn req_str<'a>(
    m: &'a Map<String, Value>,
    key: &str,
    at: &str,
) -> Result<&'a str, TranscriptError> {
    opt_str(m, key, at)?.ok_or_else(|| shape(format!("{at}.{key}"), "missing (expected a string)"))
}

/// Compact JSON text of a value; a string stays as it is (arguments and results a format
/// keeps as text are used verbatim).
pub(super) fn json_text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}
