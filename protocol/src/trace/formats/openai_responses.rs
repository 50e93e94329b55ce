//! OpenAI Responses items: a list of input and output items in order, or an object with
//! `input` (a string or a list of items) and `output` (a list of items), as a stored
//! response holds them; its `instructions` count as a system message and its `tools` as the
//! tool definitions.
//!
//! Items: `message` (also written without `type`: `{"role", "content"}`), whose content is a
//! string or `input_text`/`output_text`/`refusal` parts; `reasoning` (its `content` texts,
//! else its `summary` texts; `encrypted_content` becomes a redacted block); `function_call`
//! (by `call_id`) and `function_call_output`; `code_interpreter_call`, whose `code` is the
//! input and whose `logs` outputs (an image output as `[image]`) are the result. The code
//! interpreter keeps its state between calls, so its semantics is `cell`.

use serde_json::{Map, Value};

use super::{
    Call, Event, Piece, Tools, TranscriptError, array, clip, json_text, object, opt_str, req_str,
    shape,
};
use crate::trace::blocks::Semantics;

const ITEMS: &str =
    "message, reasoning, function_call, function_call_output, code_interpreter_call";
const ROLES: &str = "system, developer, user or assistant";

/// The events and tool definitions of a Responses transcript.
pub(in crate::trace) fn events(v: &Value) -> Result<(Vec<Event>, Tools), TranscriptError> {
    let mut out = Vec::new();
    let mut tools = Tools::default();
    match v {
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                out.push(self::item(item, format!("item {i}"))?);
            }
        }
        Value::Object(m) => {
            if let Some(instructions) = opt_str(m, "instructions", "the transcript")? {
                out.push(Event::Say {
                    role: "system",
                    text: instructions.to_string(),
                    at: "instructions".into(),
                });
            }
            match m.get("input") {
                None | Some(Value::Null) => {}
                Some(Value::String(s)) => out.push(Event::Say {
                    role: "user",
                    text: s.clone(),
                    at: "input".into(),
                }),
                Some(list) => {
                    for (i, item) in array(list, "input")?.iter().enumerate() {
                        out.push(self::item(item, format!("input[{i}]"))?);
                    }
                }
            }
            let output = m
                .get("output")
                .ok_or_else(|| shape("the transcript", "expected an \"output\" list"))?;
            for (i, item) in array(output, "output")?.iter().enumerate() {
                out.push(self::item(item, format!("output[{i}]"))?);
            }
            if let Some(list) = m.get("tools").filter(|t| !t.is_null()) {
                for (i, t) in array(list, "tools")?.iter().enumerate() {
                    let at = format!("tools[{i}]");
                    let t = object(t, &at)?;
                    if opt_str(t, "type", &at)? == Some("function") {
                        tools.add(
                            req_str(t, "name", &at)?,
                            opt_str(t, "description", &at)?,
                            t,
                            &at,
                        )?;
                    }
                }
            }
        }
        _ => {
            return Err(shape(
                "the transcript",
                "expected a list of items or an object with \"input\" and \"output\"",
            ));
        }
    }
    Ok((out, tools))
}

fn item(v: &Value, at: String) -> Result<Event, TranscriptError> {
    let m = object(v, &at)?;
    let kind = opt_str(m, "type", &at)?;
    match kind {
        None | Some("message") => message(m, at),
        Some("reasoning") => {
            let mut pieces = Vec::new();
            let mut texts = Vec::new();
            for key in ["content", "summary"] {
                if let Some(parts) = m.get(key).filter(|p| !p.is_null()) {
                    for (i, p) in array(parts, &format!("{at}.{key}"))?.iter().enumerate() {
                        let p_at = format!("{at}.{key}[{i}]");
                        texts.push(req_str(object(p, &p_at)?, "text", &p_at)?.to_string());
                    }
                }
                if !texts.is_empty() {
                    // The full reasoning when present; its summary only otherwise.
                    break;
                }
            }
            pieces.extend(texts.into_iter().map(Piece::Reasoning));
            if let Some(enc) = opt_str(m, "encrypted_content", &at)? {
                pieces.push(Piece::Redacted(enc.to_string()));
            }
            Ok(Event::Assistant { pieces, at })
        }
        Some("function_call") => {
            let arguments = m.get("arguments").map(json_text).unwrap_or_default();
            let call = Call::function(
                req_str(m, "call_id", &at)?.to_string(),
                req_str(m, "name", &at)?.to_string(),
                arguments,
            );
            Ok(Event::Assistant {
                pieces: vec![Piece::Call(call)],
                at,
            })
        }
        Some("function_call_output") => {
            let text = match m.get("output") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(_)) => parts_text(m.get("output"), &format!("{at}.output"))?,
                _ => {
                    return Err(shape(
                        format!("{at}.output"),
                        "expected a string or a list of parts",
                    ));
                }
            };
            Ok(Event::Reply {
                id: req_str(m, "call_id", &at)?.to_string(),
                text,
                at,
            })
        }
        Some("code_interpreter_call") => {
            let code = req_str(m, "code", &at)?.to_string();
            let mut result = Vec::new();
            // Without its outputs the result is unknown, not empty: an empty result would
            // read as a claim that the code printed nothing.
            let outputs = m.get("outputs").filter(|o| !o.is_null()).ok_or_else(|| {
                shape(
                    format!("{at}.outputs"),
                    "missing: the call's result is unknown (a response includes it when asked for code_interpreter_call.outputs)",
                )
            })?;
            for (i, o) in array(outputs, &format!("{at}.outputs"))?.iter().enumerate() {
                let o_at = format!("{at}.outputs[{i}]");
                let o = object(o, &o_at)?;
                match req_str(o, "type", &o_at)? {
                    "logs" => result.push(req_str(o, "logs", &o_at)?.to_string()),
                    "image" => result.push("[image]".to_string()),
                    other => {
                        return Err(TranscriptError::Unsupported {
                            at: o_at,
                            what: "code interpreter output",
                            kind: clip(other),
                            supported: "logs, image",
                        });
                    }
                }
            }
            let arguments = serde_json::json!({ "code": code }).to_string();
            let call = Call {
                id: req_str(m, "id", &at)?.to_string(),
                name: "code_interpreter".to_string(),
                arguments,
                code: Some(code),
                default_semantics: Some(Semantics::Cell),
                result: Some(result.join("\n")),
            };
            Ok(Event::Assistant {
                pieces: vec![Piece::Call(call)],
                at,
            })
        }
        Some(other) => Err(TranscriptError::Unsupported {
            at,
            what: "item type",
            kind: clip(other),
            supported: ITEMS,
        }),
    }
}

fn message(m: &Map<String, Value>, at: String) -> Result<Event, TranscriptError> {
    let role = req_str(m, "role", &at)?;
    let text = match m.get("content") {
        Some(Value::String(s)) => s.clone(),
        other => parts_text(other, &format!("{at}.content"))?,
    };
    let role = match role {
        "system" => "system",
        "developer" => "developer",
        "user" => "user",
        "assistant" => {
            return Ok(Event::Assistant {
                pieces: vec![Piece::Text(text)],
                at,
            });
        }
        other => {
            return Err(TranscriptError::UnknownRole {
                at,
                role: clip(other),
                expected: ROLES,
            });
        }
    };
    Ok(Event::Say { role, text, at })
}

/// Text parts (`input_text`, `output_text`, `refusal`) joined with a line break.
fn parts_text(v: Option<&Value>, at: &str) -> Result<String, TranscriptError> {
    let parts = match v {
        None | Some(Value::Null) => return Ok(String::new()),
        Some(v) => array(v, at)?,
    };
    let mut texts = Vec::with_capacity(parts.len());
    for (i, p) in parts.iter().enumerate() {
        let p_at = format!("{at}[{i}]");
        let p = object(p, &p_at)?;
        match req_str(p, "type", &p_at)? {
            "input_text" | "output_text" | "text" => texts.push(req_str(p, "text", &p_at)?),
            "refusal" => texts.push(req_str(p, "refusal", &p_at)?),
            other => {
                return Err(TranscriptError::Unsupported {
                    at: p_at,
                    what: "content part",
                    kind: clip(other),
                    supported: "input_text, output_text, refusal; images, audio and files cannot be audited",
                });
            }
        }
    }
    Ok(texts.join("\n"))
}
