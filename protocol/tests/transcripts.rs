//! Transcript formats: each read from a transcript written in that format (the fixtures in
//! `tests/transcripts/`, written from the formats' public documentation), and a broken
//! transcript of each refused with an error that says what is wrong.

use serde_json::{Value, json};
use trust_protocol::trace::{
    Block, Format, MAX_TRACE_BYTES, MAX_TRANSCRIPT_BYTES, ReadOptions, Semantics, ToolCall, Trace,
    TraceError, blocks,
};

const CHAT: &str = include_str!("transcripts/chat.json");
const RESPONSES: &str = include_str!("transcripts/responses.json");
const ANTHROPIC: &str = include_str!("transcripts/anthropic.json");
const THINK: &str = include_str!("transcripts/think.txt");
const OTEL_GENAI: &str = include_str!("transcripts/otel_genai.json");
const OTEL_OPENINFERENCE: &str = include_str!("transcripts/otel_openinference.json");

fn read(input: &str) -> (Trace, Format) {
    Trace::read(input, &ReadOptions::default()).unwrap_or_else(|e| panic!("reads: {e}"))
}

fn err(input: &str) -> String {
    err_with(input, &ReadOptions::default())
}

fn err_with(input: &str, options: &ReadOptions) -> String {
    match Trace::read(input, options) {
        Ok((t, f)) => panic!("expected an error, read as {f}: {t:?}"),
        Err(e) => e.to_string(),
    }
}

fn tools(trace: &Trace) -> Vec<ToolCall> {
    blocks(&trace.thinking)
        .expect("valid blocks")
        .into_iter()
        .filter_map(|b| match b {
            Block::Tool(t) => Some(t),
            _ => None,
        })
        .collect()
}

fn roles(trace: &Trace) -> Vec<String> {
    blocks(&trace.thinking)
        .expect("valid blocks")
        .into_iter()
        .filter_map(|b| match b {
            Block::Message { role, .. } => Some(role),
            Block::Redacted { .. } => Some("redacted".into()),
            _ => None,
        })
        .collect()
}

fn at<'a>(trace: &'a Trace, r: &std::ops::Range<usize>) -> &'a str {
    &trace.thinking[r.clone()]
}

fn edit(input: &str, f: impl FnOnce(&mut Value)) -> String {
    let mut v: Value = serde_json::from_str(input).expect("fixture JSON");
    f(&mut v);
    v.to_string()
}

#[test]
fn chat_completions() {
    let (t, format) = read(CHAT);
    assert_eq!(format, Format::Chat);
    assert_eq!(t.problem, "What is the sum of the squares of 1 to 10?");
    assert_eq!(t.output, "385");
    assert_eq!(roles(&t), ["developer", "user", "redacted"]);
    let calls = tools(&t);
    assert_eq!(calls.len(), 2);
    assert_eq!(
        (calls[0].id.as_str(), calls[0].name.as_str()),
        ("call_sq", "python")
    );
    assert_eq!(
        at(&t, &calls[0].input),
        "s = sum(n * n for n in range(1, 11))\ns"
    );
    assert_eq!(at(&t, &calls[0].result), "385");
    assert_eq!(
        calls[0].semantics,
        Some(Semantics::Cell),
        "the definition's own field"
    );
    // Not a code tool: the arguments verbatim, no semantics.
    assert_eq!(
        at(&t, &calls[1].input),
        r#"{"expression": "10 * 11 * 21 / 6"}"#
    );
    assert_eq!(calls[1].semantics, None);
    // Reasoning and earlier assistant text are prose, in order.
    let reasoning = t.thinking.find("I should add up").expect("reasoning");
    let text = t.thinking.find("The sum is 385").expect("earlier text");
    let last = t.thinking.find("Both agree").expect("final reasoning");
    assert!(reasoning < calls[0].span.start && calls[0].span.end <= text);
    assert!(text < calls[1].span.start && calls[1].span.end < last);
    // A bare list reads the same, without the tool definitions (so the default semantics).
    let bare = edit(CHAT, |v| *v = v["messages"].take());
    let (b, _) = read(&bare);
    assert_eq!(tools(&b)[0].semantics, Some(Semantics::Script));
    assert_eq!(
        (b.problem.as_str(), b.output.as_str()),
        (t.problem.as_str(), "385")
    );
    // Reasoning written as <think> in the content, as open models served through a chat
    // API do.
    let think = edit(CHAT, |v| {
        v["messages"][7] =
            json!({"role": "assistant", "content": "<think>\nBoth agree.\n</think>\n\n385"});
    });
    let (t2, _) = read(&think);
    assert_eq!(t2.output, "385");
    assert!(t2.thinking.ends_with("\nBoth agree."), "{}", t2.thinking);
    // Other spellings of reasoning.
    for key in ["reasoning_content", "reasoning"] {
        let other = edit(CHAT, |v| {
            let m = &mut v["messages"][7];
            m.as_object_mut()
                .expect("object")
                .remove("reasoning_details");
            m[key] = json!("Both agree: 385.");
        });
        assert!(read(&other).0.thinking.contains("Both agree"), "{key}");
    }
}

#[test]
fn chat_semantics_come_from_the_option_then_the_definition_then_the_description() {
    let forced = ReadOptions {
        semantics: Some(Semantics::Script),
        ..Default::default()
    };
    let (t, _) = Trace::read(CHAT, &forced).expect("reads");
    assert_eq!(tools(&t)[0].semantics, Some(Semantics::Script));
    let described = edit(CHAT, |v| {
        let f = &mut v["tools"][0]["function"];
        f.as_object_mut().expect("object").remove("semantics");
        f["description"] = json!("Executes code in an IPython kernel; state persists.");
    });
    assert_eq!(
        tools(&read(&described).0)[0].semantics,
        Some(Semantics::Cell)
    );
    let plain = edit(CHAT, |v| {
        let f = &mut v["tools"][0]["function"];
        f.as_object_mut().expect("object").remove("semantics");
        f["description"] = json!("Runs a Python program and returns what it printed.");
    });
    assert_eq!(tools(&read(&plain).0)[0].semantics, Some(Semantics::Script));
    let bad = edit(CHAT, |v| {
        v["tools"][0]["function"]["semantics"] = json!("kernel")
    });
    assert!(err(&bad).contains("tools[0].semantics"), "{}", err(&bad));
}

#[test]
fn broken_chat_transcripts_are_refused_with_what_is_wrong() {
    let cases: Vec<(String, &str)> = vec![
        (
            edit(CHAT, |v| {
                v["messages"][3]["tool_call_id"] = json!("call_nope")
            }),
            "messages[3]: tool reply for call call_nope with no earlier call",
        ),
        (
            edit(CHAT, |v| {
                v["messages"][4]["tool_calls"][0]["id"] = json!("call_sq")
            }),
            "messages[4]: tool call id call_sq is used by an earlier call",
        ),
        (
            edit(CHAT, |v| {
                v["messages"].as_array_mut().expect("list").remove(5);
            }),
            "tool call call_calc has no reply",
        ),
        (
            edit(CHAT, |v| {
                let list = v["messages"].as_array_mut().expect("list");
                list.retain(|m| m["role"] != "user");
            }),
            "no user message",
        ),
        (
            edit(CHAT, |v| {
                v["messages"].as_array_mut().expect("list").truncate(6);
            }),
            "ends with the reply to tool call call_calc",
        ),
        (
            json!([
                {"role": "user", "content": "q"},
                {"role": "assistant", "content": "thinking aloud"},
                {"role": "assistant", "content": "an answer"},
                {"role": "user", "content": "and then?"},
            ])
            .to_string(),
            "ends with a user message (message 3) after the last assistant message",
        ),
        (
            edit(CHAT, |v| v["messages"][6]["role"] = json!("narrator")),
            "messages[6]: unknown role \"narrator\"",
        ),
        (
            edit(CHAT, |v| {
                v["messages"][4]["content"] = json!("fine\n<<<end id=call_sq>>>\nsneaky")
            }),
            "messages[4]: a line of the content looks like a marker line",
        ),
        (
            edit(CHAT, |v| {
                v["messages"][1]["content"] =
                    json!([{"type": "image_url", "image_url": {"url": "x"}}])
            }),
            "unsupported content part \"image_url\"",
        ),
        (
            edit(CHAT, |v| v["messages"][7]["content"] = Value::Null),
            "the final assistant message (messages[7]) ends with reasoning",
        ),
        (
            edit(CHAT, |v| {
                v["messages"][4]["tool_calls"][0]["id"] = json!("bad id!");
                v["messages"][5]["tool_call_id"] = json!("bad id!");
            }),
            "tool call id \"bad id!\" is not 1-64 characters",
        ),
    ];
    for (input, want) in cases {
        let got = err(&input);
        assert!(got.starts_with("chat transcript: "), "{got}");
        assert!(got.contains(want), "expected {want:?} in {got:?}");
    }
    let problem = ReadOptions {
        problem: Some("p".into()),
        ..Default::default()
    };
    assert!(err_with(CHAT, &problem).contains("only for <think> text"));
}

#[test]
fn responses_items() {
    let (t, format) = read(RESPONSES);
    assert_eq!(format, Format::Responses);
    assert_eq!(t.problem, "How many primes are there below 100?");
    assert_eq!(
        t.output,
        "There are 25 primes below 100 (the largest is 97)."
    );
    assert_eq!(roles(&t), ["system", "redacted"]);
    let calls = tools(&t);
    assert_eq!(calls.len(), 2);
    assert_eq!(calls[0].name, "code_interpreter");
    assert!(at(&t, &calls[0].input).starts_with("primes = ["));
    assert_eq!(at(&t, &calls[0].result), "25\n");
    assert_eq!(
        calls[0].semantics,
        Some(Semantics::Cell),
        "the code interpreter keeps state"
    );
    assert_eq!(
        (calls[1].id.as_str(), at(&t, &calls[1].input)),
        ("call_last", r#"{"n":100}"#)
    );
    assert!(t.thinking.contains("Count primes below 100 with a sieve."));
    // The same items as a stored response: instructions, input, output.
    let items: Vec<Value> = serde_json::from_str(RESPONSES).expect("list");
    let object = json!({
        "instructions": "You are a careful mathematician.",
        "input": "How many primes are there below 100?",
        "output": items[2..].to_vec(),
    });
    let (o, format) = read(&object.to_string());
    assert_eq!(format, Format::Responses);
    assert_eq!(o, t);
}

#[test]
fn broken_responses_transcripts_are_refused_with_what_is_wrong() {
    let cases: Vec<(String, &str)> = vec![
        (
            edit(RESPONSES, |v| v[6]["call_id"] = json!("call_other")),
            "item 6: tool reply for call call_other with no earlier call",
        ),
        (
            edit(RESPONSES, |v| v[6]["type"] = json!("web_search_call")),
            "item 6: unsupported item type \"web_search_call\"",
        ),
        (
            edit(RESPONSES, |v| {
                v.as_array_mut().expect("list").truncate(6);
            }),
            "item 5: tool call call_last has no reply",
        ),
        (
            edit(RESPONSES, |v| {
                let dup = v[5].clone();
                v.as_array_mut().expect("list").insert(6, dup);
            }),
            "item 6: tool call id call_last is used by an earlier call",
        ),
        (
            edit(RESPONSES, |v| {
                v[3].as_object_mut().expect("item").remove("outputs");
            }),
            "item 3.outputs: missing: the call's result is unknown",
        ),
        (
            edit(RESPONSES, |v| v[3]["code"] = Value::Null),
            "item 3.code: missing",
        ),
        (
            edit(RESPONSES, |v| v[0]["role"] = json!("critic")),
            "unknown role \"critic\"",
        ),
    ];
    for (input, want) in cases {
        let got = err(&input);
        assert!(got.starts_with("responses transcript: "), "{got}");
        assert!(got.contains(want), "expected {want:?} in {got:?}");
    }
}

#[test]
fn anthropic_messages() {
    let (t, format) = read(ANTHROPIC);
    assert_eq!(format, Format::Anthropic);
    assert_eq!(t.problem, "What is 2 to the power 20?");
    assert_eq!(t.output, "2 to the power 20 is 1048576.");
    assert_eq!(roles(&t), ["system", "redacted"]);
    let calls = tools(&t);
    assert_eq!(calls.len(), 2);
    assert_eq!(at(&t, &calls[0].input), "print(2 ** 20)");
    assert_eq!(at(&t, &calls[0].result), "1048576");
    assert_eq!(calls[0].semantics, Some(Semantics::Script));
    assert_eq!(calls[1].name, "code_execution");
    assert_eq!(at(&t, &calls[1].result), "1048576\n");
    assert_eq!(calls[1].semantics, Some(Semantics::Script));
    assert!(t.thinking.contains("2^10 = 1024") && t.thinking.contains("I'll compute it."));
    // A non-code tool's input object is its arguments as JSON.
    let search = edit(ANTHROPIC, |v| {
        v["messages"][1]["content"][2]["input"] = json!({"query": "2^20"});
    });
    assert_eq!(
        at(&read(&search).0, &tools(&read(&search).0)[0].input),
        r#"{"query":"2^20"}"#
    );
    // A later user turn beside tool results is a message in place.
    let turn = edit(ANTHROPIC, |v| {
        v["messages"][2]["content"]
            .as_array_mut()
            .expect("list")
            .push(json!({"type": "text", "text": "Check it another way."}));
    });
    assert_eq!(roles(&read(&turn).0), ["system", "user", "redacted"]);
}

#[test]
fn broken_anthropic_transcripts_are_refused_with_what_is_wrong() {
    let cases: Vec<(String, &str)> = vec![
        (
            edit(ANTHROPIC, |v| {
                v["messages"][2]["content"][0]["tool_use_id"] = json!("toolu_99")
            }),
            "messages[2].content[0]: tool reply for call toolu_99 with no earlier call",
        ),
        (
            edit(ANTHROPIC, |v| {
                v["messages"][3]["content"][2]["tool_use_id"] = json!("srvtoolu_99")
            }),
            "messages[3].content[2]: tool reply for call srvtoolu_99",
        ),
        (
            edit(ANTHROPIC, |v| v["messages"][0]["role"] = json!("narrator")),
            "messages[0]: unknown role \"narrator\" (expected user or assistant",
        ),
        (
            edit(ANTHROPIC, |v| {
                v["messages"][3]["content"]
                    .as_array_mut()
                    .expect("list")
                    .truncate(2);
            }),
            "tool call srvtoolu_02 has no reply",
        ),
        (
            edit(ANTHROPIC, |v| {
                v["messages"][3]["content"]
                    .as_array_mut()
                    .expect("list")
                    .truncate(3);
            }),
            "ends with tool call srvtoolu_02",
        ),
        (
            edit(ANTHROPIC, |v| {
                v["messages"][1]["content"][0]["thinking"] = json!("<<<redacted>>>")
            }),
            "looks like a marker line",
        ),
        (
            edit(ANTHROPIC, |v| {
                v["messages"][0]["content"] = json!([{"type": "image", "source": {}}])
            }),
            "unsupported user content block \"image\"",
        ),
    ];
    for (input, want) in cases {
        let got = err(&input);
        assert!(got.starts_with("anthropic transcript: "), "{got}");
        assert!(got.contains(want), "expected {want:?} in {got:?}");
    }
}

#[test]
fn think_text() {
    let (t, format) = read(THINK);
    assert_eq!(format, Format::Think);
    assert_eq!(t.problem, "What is 17 * 23?");
    assert_eq!(t.thinking, "17 * 23 = 17 * 20 + 17 * 3 = 340 + 51 = 391.");
    assert_eq!(t.output, "391");
    // A bare R1-style answer with the problem given as an option; the opening tag may be
    // missing when a chat template opened it.
    let with = |p: &str| ReadOptions {
        problem: Some(p.into()),
        ..Default::default()
    };
    for bare in [
        "<think>\nStep.\n</think>\nAnswer.",
        "Step.\n</think>\n\nAnswer.",
    ] {
        let (t, f) = Trace::read(bare, &with("Q?")).expect("reads");
        assert_eq!(f, Format::Think);
        assert_eq!(
            (t.problem.as_str(), t.thinking.as_str(), t.output.as_str()),
            ("Q?", "Step.", "Answer.")
        );
    }
    // Agreeing problem given twice is fine; the Thinking Process heading may sit before <think>.
    let headed = "## Problem Statement:\nQ?\n## Thinking Process\n<think>x</think>\ny";
    assert_eq!(
        Trace::read(headed, &with("Q?")).expect("reads").0.problem,
        "Q?"
    );
    // A trace in the three-heading form that mentions </think> is still that form.
    let text = "## Problem Statement\nQ\n## Thinking Process\nthe tag </think> ends R1 reasoning\n## Final Output\nA";
    assert_eq!(read(text).1, Format::Text);
}

#[test]
fn broken_think_text_is_refused_with_what_is_wrong() {
    let with = |p: &str| ReadOptions {
        problem: Some(p.into()),
        ..Default::default()
    };
    let none = ReadOptions::default();
    let cases: Vec<(&str, ReadOptions, &str)> = vec![
        (
            "<think>a</think>b",
            none.clone(),
            "no problem: give it as an option",
        ),
        (
            "<think>a</think>b</think>c",
            with("q"),
            "exactly one </think>, found 2",
        ),
        (
            "<think><think>a</think>b",
            with("q"),
            "at most one <think>, found 2",
        ),
        (
            "</think>x<think>",
            with("q"),
            "<think> comes after </think>",
        ),
        (
            "<think>a</think>\n## Final Output\n",
            with("q"),
            "no final answer: nothing after </think>",
        ),
        ("<think> </think>b", with("q"), "no reasoning"),
        (
            "Hello there\n<think>a</think>b",
            with("q"),
            "text before <think> must be a ## Problem Statement",
        ),
        (
            "## Problem Statement\nQ1\n<think>a</think>b",
            with("Q2"),
            "differs from the ## Problem Statement",
        ),
    ];
    for (input, options, want) in cases {
        let got = err_with(input, &options);
        assert!(got.starts_with("think transcript: "), "{got}");
        assert!(got.contains(want), "expected {want:?} in {got:?}");
    }
    // Markers in think text mean what they mean in any trace: valid ones are blocks, others
    // an error naming the line.
    let marked = "<think>\nx\n<<<tool id=a name=p>>>\n</think>\ny";
    assert!(
        err_with(marked, &with("q"))
            .contains("thinking: line 2: tool call a opened here is never closed")
    );
}

#[test]
fn opentelemetry_genai_spans() {
    let (t, format) = read(OTEL_GENAI);
    assert_eq!(format, Format::Otel);
    assert_eq!(
        t.problem,
        "What is the 10th Fibonacci number (F(1) = F(2) = 1)?"
    );
    assert_eq!(t.output, "The 10th Fibonacci number is 55.");
    assert_eq!(roles(&t), ["system"]);
    let calls = tools(&t);
    assert_eq!(
        calls.len(),
        1,
        "the history repeated in the second chat span is not a new call"
    );
    assert_eq!(calls[0].id, "call_fib");
    assert!(at(&t, &calls[0].input).starts_with("a, b = 0, 1\n"));
    assert_eq!(at(&t, &calls[0].result), "55");
    assert_eq!(
        calls[0].semantics,
        Some(Semantics::Cell),
        "its description names a Jupyter kernel"
    );
    assert!(t.thinking.find("Iterate ten times.") < Some(calls[0].span.start));
}

#[test]
fn opentelemetry_openinference_spans() {
    let (t, format) = read(OTEL_OPENINFERENCE);
    assert_eq!(format, Format::Otel);
    assert_eq!(t.problem, "What is 12 factorial?");
    assert_eq!(t.output, "12! = 479001600");
    let calls = tools(&t);
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].name.as_str(), at(&t, &calls[0].input)),
        ("calculator", r#"{"expression": "12!"}"#)
    );
    assert_eq!(at(&t, &calls[0].result), "479001600");
    assert_eq!(calls[0].semantics, None);
}

#[test]
fn broken_opentelemetry_exports_are_refused_with_what_is_wrong() {
    fn spans(v: &mut Value) -> &mut Vec<Value> {
        v["resourceSpans"][0]["scopeSpans"][0]["spans"]
            .as_array_mut()
            .expect("spans")
    }
    fn set(span: &mut Value, key: &str, value: &str) {
        for a in span["attributes"].as_array_mut().expect("attributes") {
            if a["key"] == key {
                a["value"] = json!({"stringValue": value});
            }
        }
    }
    let cases: Vec<(String, &str)> = vec![
        (
            edit(OTEL_GENAI, |v| {
                spans(v).retain(|s| s["name"] == "execute_tool python")
            }),
            "no model-call span",
        ),
        (
            edit(OTEL_GENAI, |v| {
                set(&mut spans(v)[2], "gen_ai.tool.call.result", "56")
            }),
            "two different results recorded for tool call call_fib",
        ),
        (
            edit(OTEL_GENAI, |v| {
                spans(v)[1]["startTimeUnixNano"] = json!("soon")
            }),
            "startTimeUnixNano: expected nanoseconds",
        ),
        (
            edit(OTEL_GENAI, |v| {
                set(
                    &mut spans(v)[3],
                    "gen_ai.input.messages",
                    "[{\"role\": \"narrator\", \"parts\": []}]",
                )
            }),
            "unknown role \"narrator\"",
        ),
        (
            edit(OTEL_GENAI, |v| {
                set(&mut spans(v)[3], "gen_ai.output.messages", "not json")
            }),
            "gen_ai.output.messages: expected JSON",
        ),
        (
            edit(OTEL_GENAI, |v| {
                for span in spans(v) {
                    span["attributes"]
                        .as_array_mut()
                        .expect("attributes")
                        .retain(|a| {
                            !a["key"].as_str().is_some_and(|k| {
                                k.ends_with("messages") || k.ends_with("instructions")
                            })
                        });
                }
                // The tool run alone cannot be the whole conversation either.
                spans(v).retain(|s| s["name"] != "execute_tool python");
            }),
            "record no messages",
        ),
        (
            edit(OTEL_OPENINFERENCE, |v| {
                spans(v).truncate(2);
            }),
            "tool call call_fact has no reply",
        ),
    ];
    for (input, want) in cases {
        let got = err(&input);
        assert!(got.starts_with("otel transcript: "), "{got}");
        assert!(got.contains(want), "expected {want:?} in {got:?}");
    }
}

#[test]
fn a_forced_format_is_used_and_a_wrong_one_says_so() {
    let force = |format| ReadOptions {
        format: Some(format),
        ..Default::default()
    };
    for (input, format) in [
        (CHAT, Format::Chat),
        (RESPONSES, Format::Responses),
        (ANTHROPIC, Format::Anthropic),
        (OTEL_GENAI, Format::Otel),
    ] {
        assert_eq!(Trace::read(input, &force(format)).expect("reads").1, format);
    }
    assert!(
        err_with(CHAT, &force(Format::Otel))
            .contains("otel transcript: the export: expected \"resourceSpans\"")
    );
    assert!(err_with(THINK, &force(Format::Chat)).starts_with("malformed chat transcript JSON"));
    assert!(err_with(CHAT, &force(Format::Json)).contains("unknown field `messages`"));
    assert!(err_with(CHAT, &force(Format::Text)).contains("missing heading"));
    assert_eq!("otel".parse(), Ok(Format::Otel));
    assert!("auto".parse::<Format>().is_err());
}

#[test]
fn nothing_fits_names_every_format() {
    for input in [
        r#"{"question": "q"}"#,
        "[]",
        "42",
        r#"[{"speaker": "x"}]"#,
        "just some prose",
    ] {
        let got = err(input);
        assert!(got.starts_with("not a trace in any known format"), "{got}");
        for f in Format::ALL {
            assert!(got.contains(f.describe()), "{got} lacks {f}");
        }
    }
}

#[test]
fn size_limits_are_said() {
    let huge = format!(
        "{{\"messages\": [], \"pad\": \"{}\"}}",
        "x".repeat(MAX_TRANSCRIPT_BYTES)
    );
    assert!(matches!(
        Trace::parse(&huge),
        Err(TraceError::TranscriptTooLarge { .. })
    ));
    // Under the transcript limit, but the trace read from it is over the trace limit.
    let long = "y".repeat(MAX_TRACE_BYTES / 2 + 1);
    let chat = json!([
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": long},
        {"role": "assistant", "content": long},
        {"role": "assistant", "content": "a"},
    ])
    .to_string();
    let got = Trace::parse(&chat);
    assert!(
        matches!(got, Err(TraceError::ReadTooLarge { .. })),
        "{got:?}"
    );
    let message = got.err().map(|e| e.to_string()).unwrap_or_default();
    assert!(
        message.contains(&MAX_TRANSCRIPT_BYTES.to_string()),
        "{message}"
    );
    // The network's own forms keep their limit on the input itself.
    let json =
        json!({"problem": "p", "thinking": "t".repeat(MAX_TRACE_BYTES), "output": "o"}).to_string();
    assert!(matches!(
        Trace::parse(&json),
        Err(TraceError::TooLarge { .. })
    ));
}

#[test]
fn the_networks_own_forms_read_as_before_and_may_hold_markers() {
    let json = r#"{"problem":"p","thinking":"t","output":"o"}"#;
    assert_eq!(read(json).1, Format::Json);
    let text = "## Problem Statement\np\n## Thinking Process\nt\n## Final Output\no";
    assert_eq!(read(text), (read(json).0, Format::Text));
    let marked = json!({
        "problem": "p",
        "thinking": "Run it.\n<<<tool id=c1 name=python>>>\nprint(1)\n<<<result id=c1>>>\n1\n<<<end id=c1>>>\n",
        "output": "1",
    })
    .to_string();
    assert_eq!(tools(&read(&marked).0).len(), 1);
    let bad = json!({"problem": "p", "thinking": "x\n<<<end id=c1>>>", "output": "o"}).to_string();
    assert!(err(&bad).contains("thinking: line 2: end marker for c1 with no open tool call"));
    // A malformed JSON object gets the JSON form's error, as before.
    assert!(err("{\"problem\": ").starts_with("malformed trace JSON"));
}

#[test]
fn no_input_panics() {
    // Truncations of every fixture, at every char boundary in steps, error or read, never panic.
    for input in [
        CHAT,
        RESPONSES,
        ANTHROPIC,
        THINK,
        OTEL_GENAI,
        OTEL_OPENINFERENCE,
    ] {
        for cut in (0..input.len()).step_by(7) {
            if let Some(prefix) = input.get(..cut) {
                let _ = Trace::parse(prefix);
            }
        }
    }
}

mod arbitrary {
    use proptest::prelude::*;
    use serde_json::{Map, Value};
    use trust_protocol::trace::{Format, ReadOptions, Trace, blocks};

    /// JSON built from the words transcripts use, so the readers get past their first checks.
    fn value() -> impl Strategy<Value = Value> {
        let word = prop::sample::select(vec![
            "role",
            "content",
            "type",
            "text",
            "messages",
            "tool_calls",
            "tool_call_id",
            "id",
            "call_id",
            "name",
            "arguments",
            "function",
            "code",
            "user",
            "assistant",
            "tool",
            "system",
            "developer",
            "thinking",
            "tool_use",
            "tool_result",
            "tool_use_id",
            "input",
            "output",
            "reasoning",
            "function_call",
            "function_call_output",
            "message",
            "resourceSpans",
            "scopeSpans",
            "spans",
            "attributes",
            "key",
            "value",
            "stringValue",
            "startTimeUnixNano",
            "gen_ai.operation.name",
            "chat",
            "execute_tool",
            "parts",
            "<<<end id=a>>>",
            "c1",
            "1",
            "",
        ]);
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            (0u64..5).prop_map(Value::from),
            word.clone().prop_map(|w| Value::String(w.to_string())),
        ];
        leaf.prop_recursive(5, 64, 6, move |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
                prop::collection::vec((word.clone(), inner), 0..6).prop_map(|kv| {
                    Value::Object(
                        kv.into_iter()
                            .map(|(k, v)| (k.to_string(), v))
                            .collect::<Map<_, _>>(),
                    )
                }),
            ]
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        #[test]
        fn any_json_is_read_or_refused_without_panicking(v in value()) {
            let text = v.to_string();
            for format in std::iter::once(None).chain(Format::ALL.into_iter().map(Some)) {
                let options = ReadOptions { format, ..Default::default() };
                if let Ok((trace, _)) = Trace::read(&text, &options) {
                    prop_assert!(blocks(&trace.thinking).is_ok());
                    prop_assert!(!trace.problem.trim().is_empty() && !trace.output.trim().is_empty());
                }
            }
        }
    }
}
