//! Anthropic Messages: `{"system": ..., "messages": [...], "tools": [...]}` or a bare list of
//! messages.
//!
//! Roles `user` and `assistant` (the system prompt is the top-level `system`). `content` is a
//! string or a list of blocks: `text`; `thinking` (reasoning) and `redacted_thinking` (its
//! `data` becomes a redacted block); `tool_use` with its `input` as compact JSON, answered by
//! a `tool_result` block (by `tool_use_id`) in a later user message; server tools
//! (`server_tool_use`) answered by a `*_tool_result` block in the same message. A code
//! execution result is its `stdout`, followed by its `stderr` when there is any; an error
//! result is `error: CODE`. A server code execution call is read as `script` (each call its
//! own program) unless a tool definition or the option says otherwise.

use serde_json::{Map, Value};

use super::{
    Call, Event, Piece, Tools, TranscriptError, array, clip, json_text, object, opt_str, req_str,
    shape,
};
use crate::trace::blocks::Semantics;

const BLOCKS: &str =
    "text, thinking, redacted_thinking, tool_use, tool_result, server_tool_use, *_tool_result";

/// The events and tool definitions of an Anthropic transcript.
pub(in crate::trace) fn events(v: &Value) -> Result<(Vec<Event>, Tools), TranscriptError> {
    let mut out = Vec::new();
    let mut tools = Tools::default();
    let (messages, path) = match v {
        Value::Array(list) => (list.as_slice(), ""),
        Value::Object(m) => {
            match m.get("system") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => out.push(Event::Say {
                    role: "system",
                    text: s.clone(),
                    at: "system".into(),
                }),
                Some(blocks) => {
                    let mut texts = Vec::new();
                    for (i, b) in array(blocks, "system")?.iter().enumerate() {
                        let at = format!("system[{i}]");
                        texts.push(req_str(object(b, &at)?, "text", &at)?);
                    }
                    out.push(Event::Say {
                        role: "system",
                        text: texts.join("\n"),
                        at: "system".into(),
                    });
                }
            }
            if let Some(list) = m.get("tools").filter(|t| !t.is_null()) {
                for (i, t) in array(list, "tools")?.iter().enumerate() {
                    let at = format!("tools[{i}]");
                    let t = object(t, &at)?;
                    tools.add(
                        req_str(t, "name", &at)?,
                        opt_str(t, "description", &at)?,
                        t,
                        &at,
                    )?;
                }
            }
            let messages = m
                .get("messages")
                .ok_or_else(|| shape("the transcript", "expected a \"messages\" list"))?;
            (array(messages, "messages")?, "messages")
        }
        _ => {
            return Err(shape(
                "the transcript",
                "expected a list of messages or an object with \"messages\"",
            ));
        }
    };
    for (i, m) in messages.iter().enumerate() {
        let at = if path.is_empty() {
            format!("message {i}")
        } else {
            format!("{path}[{i}]")
        };
        let m = object(m, &at)?;
        match req_str(m, "role", &at)? {
            "user" => user(m, at, &mut out)?,
            "assistant" => out.push(assistant(m, at)?),
            other => {
                return Err(TranscriptError::UnknownRole {
                    at,
                    role: clip(other),
                    expected: "user or assistant (the system prompt is the top-level \"system\")",
                });
            }
        }
    }
    Ok((out, tools))
}

fn user(m: &Map<String, Value>, at: String, out: &mut Vec<Event>) -> Result<(), TranscriptError> {
    let blocks = match m.get("content") {
        Some(Value::String(s)) => {
            out.push(Event::Say {
                role: "user",
                text: s.clone(),
                at,
            });
            return Ok(());
        }
        Some(v) => array(v, &format!("{at}.content"))?,
        None => return Err(shape(format!("{at}.content"), "missing")),
    };
    let mut texts = Vec::new();
    for (i, b) in blocks.iter().enumerate() {
        let b_at = format!("{at}.content[{i}]");
        let b = object(b, &b_at)?;
        match req_str(b, "type", &b_at)? {
            "text" => texts.push(req_str(b, "text", &b_at)?),
            "tool_result" => out.push(Event::Reply {
                id: req_str(b, "tool_use_id", &b_at)?.to_string(),
                text: result_text(b.get("content"), &format!("{b_at}.content"))?,
                at: b_at,
            }),
            other => {
                return Err(TranscriptError::Unsupported {
                    at: b_at,
                    what: "user content block",
                    kind: clip(other),
                    supported: "text, tool_result; images and documents cannot be audited",
                });
            }
        }
    }
    // A message of tool results only is no user turn.
    if !texts.is_empty() {
        out.push(Event::Say {
            role: "user",
            text: texts.join("\n"),
            at,
        });
    }
    Ok(())
}

fn assistant(m: &Map<String, Value>, at: String) -> Result<Event, TranscriptError> {
    let blocks = match m.get("content") {
        Some(Value::String(s)) => {
            return Ok(Event::Assistant {
                pieces: vec![Piece::Text(s.clone())],
                at,
            });
        }
        Some(v) => array(v, &format!("{at}.content"))?,
        None => return Err(shape(format!("{at}.content"), "missing")),
    };
    let mut pieces: Vec<Piece> = Vec::with_capacity(blocks.len());
    for (i, b) in blocks.iter().enumerate() {
        let b_at = format!("{at}.content[{i}]");
        let b = object(b, &b_at)?;
        let kind = req_str(b, "type", &b_at)?;
        match kind {
            "text" => pieces.push(Piece::Text(req_str(b, "text", &b_at)?.to_string())),
            "thinking" => pieces.push(Piece::Reasoning(req_str(b, "thinking", &b_at)?.to_string())),
            "redacted_thinking" => {
                pieces.push(Piece::Redacted(req_str(b, "data", &b_at)?.to_string()))
            }
            "tool_use" | "server_tool_use" => {
                let input = b
                    .get("input")
                    .ok_or_else(|| shape(format!("{b_at}.input"), "missing"))?;
                let mut call = Call::function(
                    req_str(b, "id", &b_at)?.to_string(),
                    req_str(b, "name", &b_at)?.to_string(),
                    json_text(input),
                );
                if kind == "server_tool_use" && call.code.is_some() {
                    call.default_semantics = Some(Semantics::Script);
                }
                pieces.push(Piece::Call(call));
            }
            server_result if server_result.ends_with("_tool_result") => {
                let id = req_str(b, "tool_use_id", &b_at)?;
                let result = server_result_text(b.get("content"), &format!("{b_at}.content"))?;
                let call = pieces.iter_mut().rev().find_map(|p| match p {
                    Piece::Call(c) if c.id == id => Some(c),
                    _ => None,
                });
                match call {
                    Some(c) if c.result.is_none() => c.result = Some(result),
                    Some(_) => {
                        return Err(TranscriptError::SecondReply {
                            at: b_at,
                            id: clip(id),
                        });
                    }
                    None => {
                        return Err(TranscriptError::ReplyWithoutCall {
                            at: b_at,
                            id: clip(id),
                        });
                    }
                }
            }
            other => {
                return Err(TranscriptError::Unsupported {
                    at: b_at,
                    what: "assistant content block",
                    kind: clip(other),
                    supported: BLOCKS,
                });
            }
        }
    }
    Ok(Event::Assistant { pieces, at })
}

/// A `tool_result`'s content: a string or a list of text blocks.
fn result_text(v: Option<&Value>, at: &str) -> Result<String, TranscriptError> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(list) => {
            let mut texts = Vec::new();
            for (i, b) in array(list, at)?.iter().enumerate() {
                let b_at = format!("{at}[{i}]");
                let b = object(b, &b_at)?;
                match req_str(b, "type", &b_at)? {
                    "text" => texts.push(req_str(b, "text", &b_at)?),
                    other => {
                        return Err(TranscriptError::Unsupported {
                            at: b_at,
                            what: "tool result block",
                            kind: clip(other),
                            supported: "text",
                        });
                    }
                }
            }
            Ok(texts.join("\n"))
        }
    }
}

/// A server tool's result: stdout then stderr for code execution, `error: CODE` for an
/// error, the content as compact JSON otherwise.
fn server_result_text(v: Option<&Value>, at: &str) -> Result<String, TranscriptError> {
    let v = v.ok_or_else(|| shape(at, "missing"))?;
    let Some(m) = v.as_object() else {
        return Ok(json_text(v));
    };
    if let Some(code) = opt_str(m, "error_code", at)? {
        return Ok(format!("error: {code}"));
    }
    match opt_str(m, "stdout", at)? {
        Some(stdout) => {
            let stderr = opt_str(m, "stderr", at)?.unwrap_or("");
            let mut text = stdout.to_string();
            if !stderr.is_empty() {
                if !text.is_empty() && !text.ends_with('\n') {
                    text.push('\n');
                }
                text.push_str(stderr);
            }
            Ok(text)
        }
        None => Ok(json_text(v)),
    }
}
