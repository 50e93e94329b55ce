//! OpenAI Chat Completions messages: `{"messages": [...], "tools": [...]}` or a bare list.
//!
//! Roles `system`, `developer`, `user`, `assistant` and `tool`. `content` is a string, null
//! or a list of `text` (and, from the assistant, `refusal`) parts, joined with a line break.
//! An assistant message's reasoning is read from `reasoning_details` (`reasoning.text`,
//! `reasoning.summary`; `reasoning.encrypted` becomes a redacted block), else
//! `reasoning_content`, else `reasoning`; then its text, then its `tool_calls` in order.
//! Assistant text that opens with `<think>` and closes it once (open reasoning models served
//! through a chat API) is split: the reasoning inside, the text after.
//! A `tool` message is the reply to the call named by its `tool_call_id`.

use serde_json::{Map, Value};

use super::{
    Call, Event, Piece, Tools, TranscriptError, array, clip, json_text, object, opt_str, req_str,
    shape,
};

const ROLES: &str = "system, developer, user, assistant or tool";

/// The events and tool definitions of a chat transcript.
pub(in crate::trace) fn events(v: &Value) -> Result<(Vec<Event>, Tools), TranscriptError> {
    let (messages, tools_v, path) = match v {
        Value::Array(list) => (list.as_slice(), None, ""),
        Value::Object(m) => {
            let messages = m
                .get("messages")
                .ok_or_else(|| shape("the transcript", "expected a \"messages\" list"))?;
            (array(messages, "messages")?, m.get("tools"), "messages")
        }
        _ => {
            return Err(shape(
                "the transcript",
                "expected a list of messages or an object with \"messages\"",
            ));
        }
    };
    let mut tools = Tools::default();
    if let Some(list) = tools_v {
        for (i, t) in array(list, "tools")?.iter().enumerate() {
            let at = format!("tools[{i}]");
            let t = object(t, &at)?;
            let Some(f) = t.get("function") else {
                // Built-in tools (no `function`) are not called through tool_calls here.
                continue;
            };
            let f_at = format!("{at}.function");
            let f = object(f, &f_at)?;
            let def = if f.contains_key("semantics") { f } else { t };
            tools.add(
                req_str(f, "name", &f_at)?,
                opt_str(f, "description", &f_at)?,
                def,
                &at,
            )?;
        }
    }
    let mut out = Vec::with_capacity(messages.len());
    for (i, m) in messages.iter().enumerate() {
        let at = if path.is_empty() {
            format!("message {i}")
        } else {
            format!("{path}[{i}]")
        };
        out.push(message(object(m, &at)?, at)?);
    }
    Ok((out, tools))
}

/// One chat message as an event. Also used by the OpenTelemetry reader for messages
/// recorded in this shape.
pub(in crate::trace) fn message(
    m: &Map<String, Value>,
    at: String,
) -> Result<Event, TranscriptError> {
    let role = req_str(m, "role", &at)?;
    match role {
        "system" | "developer" | "user" => Ok(Event::Say {
            role: match role {
                "system" => "system",
                "developer" => "developer",
                _ => "user",
            },
            text: content_text(m.get("content"), &format!("{at}.content"), false)?,
            at,
        }),
        "tool" => Ok(Event::Reply {
            id: req_str(m, "tool_call_id", &at)?.to_string(),
            text: content_text(m.get("content"), &format!("{at}.content"), false)?,
            at,
        }),
        "assistant" => {
            let mut pieces = reasoning(m, &at)?;
            let text = content_text(m.get("content"), &format!("{at}.content"), true)?;
            match split_think(&text) {
                Some((thought, answer)) => {
                    pieces.push(Piece::Reasoning(thought.to_string()));
                    pieces.push(Piece::Text(answer.to_string()));
                }
                None if !text.is_empty() => pieces.push(Piece::Text(text)),
                None => {}
            }
            if let Some(refusal) = opt_str(m, "refusal", &at)? {
                pieces.push(Piece::Text(refusal.to_string()));
            }
            if m.get("function_call").is_some_and(|f| !f.is_null()) {
                return Err(TranscriptError::Unsupported {
                    at,
                    what: "field",
                    kind: "function_call".into(),
                    supported: "tool_calls (the legacy function_call is not read)",
                });
            }
            if let Some(calls) = m.get("tool_calls").filter(|c| !c.is_null()) {
                for (j, c) in array(calls, &format!("{at}.tool_calls"))?
                    .iter()
                    .enumerate()
                {
                    pieces.push(Piece::Call(tool_call(c, &format!("{at}.tool_calls[{j}]"))?));
                }
            }
            Ok(Event::Assistant { pieces, at })
        }
        other => Err(TranscriptError::UnknownRole {
            at,
            role: clip(other),
            expected: ROLES,
        }),
    }
}

/// Content that opens with `<think>` and closes it once, as open reasoning models served
/// through a chat API write it: the reasoning inside, the text after.
fn split_think(text: &str) -> Option<(&str, &str)> {
    let rest = text.trim_start().strip_prefix("<think>")?;
    if rest.matches("</think>").count() != 1 || rest.contains("<think>") {
        return None;
    }
    let (thought, answer) = rest.split_once("</think>")?;
    Some((thought.trim(), answer.trim()))
}

fn tool_call(c: &Value, at: &str) -> Result<Call, TranscriptError> {
    let c = object(c, at)?;
    if let Some(kind) = opt_str(c, "type", at)?.filter(|k| *k != "function") {
        return Err(TranscriptError::Unsupported {
            at: at.to_string(),
            what: "tool call type",
            kind: clip(kind),
            supported: "function",
        });
    }
    let f_at = format!("{at}.function");
    let f = object(
        c.get("function")
            .ok_or_else(|| shape(&f_at, "missing (expected an object)"))?,
        &f_at,
    )?;
    let arguments = match f.get("arguments") {
        None | Some(Value::Null) => String::new(),
        Some(a) => json_text(a),
    };
    Ok(Call::function(
        req_str(c, "id", at)?.to_string(),
        req_str(f, "name", &f_at)?.to_string(),
        arguments,
    ))
}

fn reasoning(m: &Map<String, Value>, at: &str) -> Result<Vec<Piece>, TranscriptError> {
    if let Some(details) = m.get("reasoning_details").filter(|d| !d.is_null()) {
        let mut pieces = Vec::new();
        for (i, d) in array(details, &format!("{at}.reasoning_details"))?
            .iter()
            .enumerate()
        {
            let d_at = format!("{at}.reasoning_details[{i}]");
            let d = object(d, &d_at)?;
            match req_str(d, "type", &d_at)? {
                "reasoning.text" => {
                    pieces.push(Piece::Reasoning(req_str(d, "text", &d_at)?.to_string()))
                }
                "reasoning.summary" => {
                    pieces.push(Piece::Reasoning(req_str(d, "summary", &d_at)?.to_string()))
                }
                "reasoning.encrypted" => {
                    pieces.push(Piece::Redacted(req_str(d, "data", &d_at)?.to_string()))
                }
                other => {
                    return Err(TranscriptError::Unsupported {
                        at: d_at,
                        what: "reasoning detail",
                        kind: clip(other),
                        supported: "reasoning.text, reasoning.summary, reasoning.encrypted",
                    });
                }
            }
        }
        return Ok(pieces);
    }
    for key in ["reasoning_content", "reasoning"] {
        if let Some(r) = opt_str(m, key, at)? {
            return Ok(vec![Piece::Reasoning(r.to_string())]);
        }
    }
    Ok(Vec::new())
}

/// A message's text: a string, null, or a list of text parts joined with a line break.
pub(in crate::trace) fn content_text(
    v: Option<&Value>,
    at: &str,
    assistant: bool,
) -> Result<String, TranscriptError> {
    match v {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(s)) => Ok(s.clone()),
        Some(Value::Array(parts)) => {
            let mut texts = Vec::with_capacity(parts.len());
            for (i, p) in parts.iter().enumerate() {
                let p_at = format!("{at}[{i}]");
                let p = object(p, &p_at)?;
                match req_str(p, "type", &p_at)? {
                    "text" => texts.push(req_str(p, "text", &p_at)?),
                    "refusal" if assistant => texts.push(req_str(p, "refusal", &p_at)?),
                    other => {
                        return Err(TranscriptError::Unsupported {
                            at: p_at,
                            what: "content part",
                            kind: clip(other),
                            supported: "text (and refusal from the assistant); images, audio and files cannot be audited",
                        });
                    }
                }
            }
            Ok(texts.join("\n"))
        }
        Some(_) => Err(shape(
            at,
            "expected a string, null or a list of content parts",
        )),
    }
}
