//! OpenTelemetry spans as an OTLP JSON export (`resourceSpans` / `scopeSpans` / `spans`),
//! with GenAI semantic-convention or OpenInference attributes, as agent frameworks emit them.
//!
//! Spans are taken in order of `startTimeUnixNano` (ties in file order). Two kinds count:
//!
//! - model calls: `gen_ai.operation.name` `chat`, `text_completion` or `generate_content`
//!   (messages in `gen_ai.system_instructions`, `gen_ai.input.messages`,
//!   `gen_ai.output.messages`, each a JSON list of `{role, parts}` or of chat messages), or
//!   `openinference.span.kind` `LLM` (`llm.input_messages.N.message.*`,
//!   `llm.output_messages.N.message.*`, tool definitions in `llm.tools.N.tool.json_schema`);
//! - tool runs: `gen_ai.operation.name` `execute_tool` (`gen_ai.tool.name`,
//!   `gen_ai.tool.call.id`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`) or
//!   `openinference.span.kind` `TOOL` (`tool.name`, `tool_call.id`, `input.value`,
//!   `output.value`).
//!
//! The first model call's input is the conversation so far; each later model call adds only
//! what follows the last assistant message of its input (new user turns, tool replies), since
//! the rest repeats the history. Each model call's output messages are assistant messages. A
//! tool run answers the call with its id (or, without an id, the one unanswered call of its
//! name); a tool run no model output announced is a call of its own, in place. A result
//! recorded twice must agree. Other spans (agents, chains, retrievers) are not read.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::{
    Call, Event, Piece, Tools, TranscriptError, array, clip, json_text, object, openai_chat,
    opt_str, req_str, shape,
};

/// One span's attributes, as JSON values.
type Attrs = BTreeMap<String, Value>;

struct Span {
    start: u128,
    at: String,
    id: String,
    attrs: Attrs,
}

/// The events and tool definitions of an OTLP export.
pub(in crate::trace) fn events(v: &Value) -> Result<(Vec<Event>, Tools), TranscriptError> {
    let spans = spans(v)?;
    let mut out: Vec<Event> = Vec::new();
    let mut tools = Tools::default();
    // Calls announced so far: id -> (tool name, the result recorded, if any).
    let mut calls: BTreeMap<String, (String, Option<String>)> = BTreeMap::new();
    let mut seen_model = false;
    for span in &spans {
        let op = span
            .attrs
            .get("gen_ai.operation.name")
            .and_then(Value::as_str);
        let kind = span
            .attrs
            .get("openinference.span.kind")
            .and_then(Value::as_str);
        let is_tool = op == Some("execute_tool") || kind == Some("TOOL");
        let is_model = matches!(op, Some("chat" | "text_completion" | "generate_content"))
            || kind == Some("LLM");
        if is_model {
            let (system, input, output) = if kind == Some("LLM") {
                openinference_tools(&span.attrs, &span.at, &mut tools)?;
                (
                    Vec::new(),
                    openinference_messages(&span.attrs, "llm.input_messages", &span.at)?,
                    openinference_messages(&span.attrs, "llm.output_messages", &span.at)?,
                )
            } else {
                (
                    genai_system(&span.attrs, &span.at)?,
                    genai_messages(&span.attrs, "gen_ai.input.messages", &span.at)?,
                    genai_messages(&span.attrs, "gen_ai.output.messages", &span.at)?,
                )
            };
            let new_input = if seen_model {
                let from = input
                    .iter()
                    .rposition(|e| matches!(e, Event::Assistant { .. }))
                    .map_or(0, |i| i.saturating_add(1));
                input.into_iter().skip(from).collect()
            } else {
                let mut all = system;
                all.extend(input);
                all
            };
            for event in new_input {
                if let Event::Reply { id, text, at } = &event {
                    if let Some((_, Some(known))) = calls.get(id) {
                        if known != text {
                            return Err(conflict(at, id));
                        }
                        continue;
                    }
                    if let Some((_, result)) = calls.get_mut(id) {
                        *result = Some(text.clone());
                    }
                }
                note_calls(&event, &mut calls);
                out.push(event);
            }
            for event in output {
                note_calls(&event, &mut calls);
                out.push(event);
            }
            seen_model = true;
        } else if is_tool {
            tool_run(span, op.is_some(), &mut calls, &mut out, &mut tools)?;
        }
    }
    if seen_model && out.is_empty() {
        return Err(shape(
            "the export",
            "its model-call spans record no messages (gen_ai.input.messages, llm.input_messages.*): the instrumentation's message content capture was off",
        ));
    }
    if !seen_model {
        return Err(shape(
            "the export",
            "no model-call span (gen_ai.operation.name chat, text_completion or generate_content, or openinference.span.kind LLM)",
        ));
    }
    Ok((out, tools))
}

fn conflict(at: &str, id: &str) -> TranscriptError {
    TranscriptError::Conflict {
        at: at.to_string(),
        what: format!("two different results recorded for tool call {}", clip(id)),
    }
}

fn note_calls(event: &Event, calls: &mut BTreeMap<String, (String, Option<String>)>) {
    match event {
        Event::Assistant { pieces, .. } => {
            for p in pieces {
                if let Piece::Call(c) = p {
                    calls
                        .entry(c.id.clone())
                        .or_insert_with(|| (c.name.clone(), c.result.clone()));
                }
            }
        }
        Event::Reply { id, text, .. } => {
            if let Some((_, result)) = calls.get_mut(id) {
                result.get_or_insert_with(|| text.clone());
            }
        }
        Event::Say { .. } => {}
    }
}

fn tool_run(
    span: &Span,
    genai: bool,
    calls: &mut BTreeMap<String, (String, Option<String>)>,
    out: &mut Vec<Event>,
    tools: &mut Tools,
) -> Result<(), TranscriptError> {
    let at = &span.at;
    let get = |key: &str| -> Result<Option<String>, TranscriptError> {
        match span.attrs.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(v) => Ok(Some(json_text(v))),
        }
    };
    let (name_key, id_key, args_key, result_key, desc_key) = if genai {
        (
            "gen_ai.tool.name",
            "gen_ai.tool.call.id",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
            "gen_ai.tool.description",
        )
    } else {
        (
            "tool.name",
            "tool_call.id",
            "input.value",
            "output.value",
            "tool.description",
        )
    };
    let name = get(name_key)?.ok_or_else(|| shape(format!("{at} {name_key}"), "missing"))?;
    let result = get(result_key)?;
    if let Some(desc) = get(desc_key)? {
        tools.add(&name, Some(&desc), &Map::new(), at)?;
    }
    let id = match get(id_key)? {
        Some(id) => Some(id),
        None => {
            let open: Vec<&String> = calls
                .iter()
                .filter(|(_, (n, r))| *n == name && r.is_none())
                .map(|(id, _)| id)
                .collect();
            match open.as_slice() {
                [one] => Some((*one).clone()),
                _ => None,
            }
        }
    };
    if let Some(id) = id.as_ref().filter(|id| calls.contains_key(*id)) {
        let Some(text) = result else {
            // The run recorded no result; a later model input may hold the reply.
            return Ok(());
        };
        if let Some((_, known)) = calls.get_mut(id) {
            match known {
                Some(k) if *k != text => return Err(conflict(at, id)),
                Some(_) => return Ok(()),
                None => *known = Some(text.clone()),
            }
        }
        out.push(Event::Reply {
            id: id.clone(),
            text,
            at: at.clone(),
        });
        return Ok(());
    }
    // A tool run no model output announced: a call of its own, in place.
    let id = id.unwrap_or_else(|| span.id.clone());
    let arguments = get(args_key)?.unwrap_or_default();
    let mut call = Call::function(id.clone(), name.clone(), arguments);
    call.result = result.clone();
    calls.insert(id, (name, result));
    out.push(Event::Assistant {
        pieces: vec![Piece::Call(call)],
        at: at.clone(),
    });
    Ok(())
}

/// All spans of the export, ordered by start time (ties in file order).
fn spans(v: &Value) -> Result<Vec<Span>, TranscriptError> {
    let root = object(v, "the export")?;
    let resource_spans = root
        .get("resourceSpans")
        .ok_or_else(|| shape("the export", "expected \"resourceSpans\""))?;
    let mut spans = Vec::new();
    for (r, rs) in array(resource_spans, "resourceSpans")?.iter().enumerate() {
        let r_at = format!("resourceSpans[{r}]");
        let Some(scopes) = object(rs, &r_at)?.get("scopeSpans") else {
            continue;
        };
        for (s, ss) in array(scopes, &format!("{r_at}.scopeSpans"))?
            .iter()
            .enumerate()
        {
            let s_at = format!("{r_at}.scopeSpans[{s}]");
            let Some(list) = object(ss, &s_at)?.get("spans") else {
                continue;
            };
            for (i, span) in array(list, &format!("{s_at}.spans"))?.iter().enumerate() {
                let at = format!("{s_at}.spans[{i}]");
                let m = object(span, &at)?;
                let start = match m.get("startTimeUnixNano") {
                    Some(Value::String(s)) => s.parse::<u128>().ok(),
                    Some(Value::Number(n)) => n.as_u64().map(u128::from),
                    _ => None,
                }
                .ok_or_else(|| {
                    shape(
                        format!("{at}.startTimeUnixNano"),
                        "expected nanoseconds (a string of digits)",
                    )
                })?;
                let name = opt_str(m, "name", &at)?.unwrap_or("");
                let id = opt_str(m, "spanId", &at)?.unwrap_or("").to_string();
                let id = if id.is_empty() {
                    format!("span-{}", spans.len())
                } else {
                    id
                };
                let mut attrs = Attrs::new();
                if let Some(list) = m.get("attributes") {
                    for (k, kv) in array(list, &format!("{at}.attributes"))?.iter().enumerate() {
                        let kv_at = format!("{at}.attributes[{k}]");
                        let kv = object(kv, &kv_at)?;
                        let key = req_str(kv, "key", &kv_at)?;
                        let value = any_value(kv.get("value").unwrap_or(&Value::Null), &kv_at)?;
                        attrs.insert(key.to_string(), value);
                    }
                }
                spans.push(Span {
                    start,
                    at: format!("span {:?} ({at})", clip(name)),
                    id,
                    attrs,
                });
            }
        }
    }
    // A stable sort keeps file order among equal start times.
    spans.sort_by_key(|s| s.start);
    Ok(spans)
}

/// An OTLP `AnyValue` as plain JSON.
fn any_value(v: &Value, at: &str) -> Result<Value, TranscriptError> {
    let Some(m) = v.as_object() else {
        return Ok(Value::Null);
    };
    if let Some(s) = m.get("stringValue") {
        return Ok(s.clone());
    }
    if let Some(s) = m.get("bytesValue") {
        return Ok(s.clone());
    }
    if let Some(b) = m.get("boolValue") {
        return Ok(b.clone());
    }
    if let Some(n) = m.get("intValue").or_else(|| m.get("doubleValue")) {
        return Ok(match n {
            Value::String(s) => s
                .parse::<i64>()
                .map(Value::from)
                .unwrap_or_else(|_| n.clone()),
            other => other.clone(),
        });
    }
    if let Some(a) = m.get("arrayValue") {
        let values = a.get("values").map_or(Ok(&[][..]), |v| array(v, at))?;
        return values
            .iter()
            .map(|v| any_value(v, at))
            .collect::<Result<Vec<_>, _>>()
            .map(Value::Array);
    }
    if let Some(kv) = m.get("kvlistValue") {
        let mut out = Map::new();
        for item in kv.get("values").map_or(Ok(&[][..]), |v| array(v, at))? {
            let item = object(item, at)?;
            let key = req_str(item, "key", at)?;
            out.insert(
                key.to_string(),
                any_value(item.get("value").unwrap_or(&Value::Null), at)?,
            );
        }
        return Ok(Value::Object(out));
    }
    Ok(Value::Null)
}

/// A JSON attribute: a JSON string parsed, or an already structured value.
fn json_attr(attrs: &Attrs, key: &str, at: &str) -> Result<Option<Value>, TranscriptError> {
    match attrs.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => serde_json::from_str(s)
            .map(Some)
            .map_err(|e| shape(format!("{at} {key}"), format!("expected JSON ({e})"))),
        Some(v) => Ok(Some(v.clone())),
    }
}

fn genai_system(attrs: &Attrs, at: &str) -> Result<Vec<Event>, TranscriptError> {
    let Some(v) = json_attr(attrs, "gen_ai.system_instructions", at)? else {
        return Ok(Vec::new());
    };
    let s_at = format!("{at} gen_ai.system_instructions");
    let text = match &v {
        Value::String(s) => s.clone(),
        other => parts(array(other, &s_at)?, &s_at)?.0,
    };
    Ok(vec![Event::Say {
        role: "system",
        text,
        at: s_at,
    }])
}

fn genai_messages(attrs: &Attrs, key: &str, at: &str) -> Result<Vec<Event>, TranscriptError> {
    let Some(v) = json_attr(attrs, key, at)? else {
        return Ok(Vec::new());
    };
    let list_at = format!("{at} {key}");
    let mut out = Vec::new();
    for (i, m) in array(&v, &list_at)?.iter().enumerate() {
        let m_at = format!("{list_at}[{i}]");
        let m = object(m, &m_at)?;
        let Some(p) = m.get("parts") else {
            out.push(openai_chat::message(m, m_at)?);
            continue;
        };
        let (text, pieces, replies) = parts(array(p, &format!("{m_at}.parts"))?, &m_at)?;
        match req_str(m, "role", &m_at)? {
            "system" => out.push(Event::Say {
                role: "system",
                text,
                at: m_at,
            }),
            "user" => out.push(Event::Say {
                role: "user",
                text,
                at: m_at,
            }),
            "assistant" => out.push(Event::Assistant { pieces, at: m_at }),
            "tool" => out.extend(replies.into_iter().map(|(id, text)| Event::Reply {
                id,
                text,
                at: m_at.clone(),
            })),
            other => {
                return Err(TranscriptError::UnknownRole {
                    at: m_at,
                    role: clip(other),
                    expected: "system, user, assistant or tool",
                });
            }
        }
    }
    Ok(out)
}

/// GenAI message parts: the text parts joined, the parts as assistant pieces, and the tool
/// call responses.
#[allow(clippy::type_complexity)]
fn parts(
    list: &[Value],
    at: &str,
) -> Result<(String, Vec<Piece>, Vec<(String, String)>), TranscriptError> {
    let mut texts = Vec::new();
    let mut pieces = Vec::new();
    let mut replies = Vec::new();
    for (i, p) in list.iter().enumerate() {
        let p_at = format!("{at}.parts[{i}]");
        let p = object(p, &p_at)?;
        match req_str(p, "type", &p_at)? {
            "text" => {
                let t = req_str(p, "content", &p_at)?;
                texts.push(t);
                pieces.push(Piece::Text(t.to_string()));
            }
            "reasoning" => pieces.push(Piece::Reasoning(req_str(p, "content", &p_at)?.to_string())),
            "tool_call" => {
                let arguments = p.get("arguments").map(json_text).unwrap_or_default();
                pieces.push(Piece::Call(Call::function(
                    req_str(p, "id", &p_at)?.to_string(),
                    req_str(p, "name", &p_at)?.to_string(),
                    arguments,
                )));
            }
            "tool_call_response" => replies.push((
                req_str(p, "id", &p_at)?.to_string(),
                p.get("response").map(json_text).unwrap_or_default(),
            )),
            other => {
                return Err(TranscriptError::Unsupported {
                    at: p_at,
                    what: "message part",
                    kind: clip(other),
                    supported: "text, reasoning, tool_call, tool_call_response",
                });
            }
        }
    }
    Ok((texts.join("\n"), pieces, replies))
}

/// One OpenInference message as its flattened attributes give it.
#[derive(Default)]
struct Flat {
    fields: Map<String, Value>,
    texts: BTreeMap<usize, Value>,
    calls: BTreeMap<usize, (Option<Value>, Map<String, Value>)>,
}

/// OpenInference's flattened messages (`PREFIX.N.message.*`), rebuilt as chat messages.
fn openinference_messages(
    attrs: &Attrs,
    prefix: &str,
    at: &str,
) -> Result<Vec<Event>, TranscriptError> {
    let mut messages: BTreeMap<usize, Flat> = BTreeMap::new();
    let lead = format!("{prefix}.");
    let number = |s: &str, key: &str| {
        s.parse::<usize>().map_err(|_| {
            shape(
                format!("{at} {key}"),
                "expected a number in the attribute name",
            )
        })
    };
    for (key, value) in attrs.range(lead.clone()..) {
        let Some(rest) = key.strip_prefix(&lead) else {
            break;
        };
        let Some((index, field)) = rest.split_once(".message.") else {
            continue;
        };
        let m = messages.entry(number(index, key)?).or_default();
        let path: Vec<&str> = field.split('.').collect();
        match path.as_slice() {
            [f @ ("role" | "content" | "tool_call_id")] => {
                m.fields.insert((*f).to_string(), value.clone());
            }
            ["contents", j, "message_content", "text"] => {
                m.texts.insert(number(j, key)?, value.clone());
            }
            ["tool_calls", j, "tool_call", "id"] => {
                m.calls.entry(number(j, key)?).or_default().0 = Some(value.clone());
            }
            [
                "tool_calls",
                j,
                "tool_call",
                "function",
                f @ ("name" | "arguments"),
            ] => {
                m.calls
                    .entry(number(j, key)?)
                    .or_default()
                    .1
                    .insert((*f).to_string(), value.clone());
            }
            _ => {}
        }
    }
    messages
        .into_iter()
        .map(|(i, flat)| {
            let mut m = flat.fields;
            if !flat.texts.is_empty() && !m.contains_key("content") {
                let parts = flat
                    .texts
                    .into_values()
                    .map(|t| serde_json::json!({"type": "text", "text": t}))
                    .collect();
                m.insert("content".into(), Value::Array(parts));
            }
            if !flat.calls.is_empty() {
                let calls = flat
                    .calls
                    .into_values()
                    .map(|(id, function)| {
                        serde_json::json!({"id": id, "type": "function", "function": function})
                    })
                    .collect();
                m.insert("tool_calls".into(), Value::Array(calls));
            }
            openai_chat::message(&m, format!("{at} {prefix}.{i}"))
        })
        .collect()
}

fn openinference_tools(attrs: &Attrs, at: &str, tools: &mut Tools) -> Result<(), TranscriptError> {
    for (key, value) in attrs.range("llm.tools.".to_string()..) {
        if !key.starts_with("llm.tools.") {
            break;
        }
        if !key.ends_with(".tool.json_schema") {
            continue;
        }
        let t_at = format!("{at} {key}");
        let Some(schema) = value.as_str() else {
            continue;
        };
        let t: Value = serde_json::from_str(schema)
            .map_err(|e| shape(&t_at, format!("expected JSON ({e})")))?;
        let t = object(&t, &t_at)?;
        let f = match t.get("function") {
            Some(f) => object(f, &t_at)?,
            None => t,
        };
        if let Some(name) = opt_str(f, "name", &t_at)? {
            let def = if f.contains_key("semantics") { f } else { t };
            tools.add(name, opt_str(f, "description", &t_at)?, def, &t_at)?;
        }
    }
    Ok(())
}
