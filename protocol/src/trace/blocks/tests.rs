use proptest::prelude::*;

use super::*;

fn text<'a>(thinking: &'a str, r: &Range<usize>) -> &'a str {
    thinking
        .get(r.clone())
        .expect("range lies on char boundaries")
}

fn only_tool(thinking: &str) -> ToolCall {
    match blocks(thinking).expect("parses").as_slice() {
        [Block::Tool(call)] => call.clone(),
        other => panic!("expected one tool block, got {other:?}"),
    }
}

#[test]
fn prose_tools_messages_and_redacted_in_order() {
    let tool = render_tool(
        "call_1",
        "python",
        Some(Semantics::Cell),
        "x = 2\nx * 3",
        "6",
    )
    .expect("renders");
    let msg = render_message("user", "now double it").expect("renders");
    let red = render_redacted("EqQBCkgIARABGAIiQ...").expect("renders");
    let thinking = format!("Let me compute.\n{tool}Six.\n{msg}{red}\nDone: 12.\n");
    let got = blocks(&thinking).expect("parses");
    assert_eq!(got.len(), 6, "{got:?}");
    let Block::Text(first) = &got[0] else {
        panic!("text first: {got:?}")
    };
    assert_eq!(text(&thinking, first), "Let me compute.\n");
    let Block::Tool(call) = &got[1] else {
        panic!("tool second: {got:?}")
    };
    assert_eq!(call.id, "call_1");
    assert_eq!(call.name, "python");
    assert_eq!(call.semantics, Some(Semantics::Cell));
    assert_eq!(text(&thinking, &call.input), "x = 2\nx * 3");
    assert_eq!(text(&thinking, &call.result), "6");
    assert_eq!(text(&thinking, &call.span), tool);
    let Block::Text(mid) = &got[2] else {
        panic!("text third: {got:?}")
    };
    assert_eq!(text(&thinking, mid), "Six.\n");
    let Block::Message { role, span, body } = &got[3] else {
        panic!("message fourth: {got:?}")
    };
    assert_eq!(role, "user");
    assert_eq!(text(&thinking, body), "now double it");
    assert_eq!(text(&thinking, span), msg);
    let Block::Redacted { span, body } = &got[4] else {
        panic!("redacted fifth: {got:?}")
    };
    assert_eq!(text(&thinking, body), "EqQBCkgIARABGAIiQ...");
    assert_eq!(text(&thinking, span), red);
    assert_eq!(got[5], Block::Text(span.end..thinking.len()));
    assert_eq!(text(&thinking, &got[5].span()), "\nDone: 12.\n");
}

#[test]
fn text_blocks_cover_the_rest_and_whitespace_only_text_is_omitted() {
    let tool = render_tool("a", "calc", None, "{\"expr\":\"1+1\"}", "2").expect("renders");
    let thinking = format!(
        "  \n{tool}\n\n{tool2}tail",
        tool2 = render_tool("b", "calc", None, "{}", "").expect("renders")
    );
    let got = blocks(&thinking).expect("parses");
    assert!(
        matches!(
            got.as_slice(),
            [Block::Tool(_), Block::Tool(_), Block::Text(_)]
        ),
        "{got:?}"
    );
    assert_eq!(got[2], Block::Text(thinking.len() - 4..thinking.len()));
    // Every byte is in exactly one block or in omitted whitespace between them.
    let mut end = 0;
    for b in &got {
        let r = b.span();
        assert!(r.start >= end);
        assert!(text(&thinking, &(end..r.start)).trim().is_empty());
        end = r.end;
    }
    assert_eq!(end, thinking.len());
    assert_eq!(blocks("").expect("empty thinking"), vec![]);
    assert_eq!(blocks(" \n\t\n").expect("blank thinking"), vec![]);
    assert_eq!(
        blocks("just prose").expect("prose"),
        vec![Block::Text(0..10)]
    );
}

#[test]
fn round_trip_keeps_every_body_byte() {
    let cases: &[(&str, &str)] = &[
        ("", ""),
        ("\n", "\n\n"),
        ("print(1)\r\n", "1\r\n"),
        ("a\r\nb\r", "\r"),
        ("  <<< not a marker", "x >>>"),
        ("ünïcödé ∑", "λ\n"),
    ];
    for (i, (input, result)) in cases.iter().enumerate() {
        let id = format!("c{i}");
        let rendered =
            render_tool(&id, "python", Some(Semantics::Script), input, result).expect("renders");
        let call = only_tool(&rendered);
        assert_eq!(text(&rendered, &call.input), *input, "input of case {i}");
        assert_eq!(text(&rendered, &call.result), *result, "result of case {i}");
        assert_eq!(call.span, 0..rendered.len());
        let m = render_message("developer", input).expect("renders");
        match blocks(&m).expect("parses").as_slice() {
            [Block::Message { role, body, span }] => {
                assert_eq!(role, "developer");
                assert_eq!(text(&m, body), *input);
                assert_eq!(*span, 0..m.len());
            }
            other => panic!("{other:?}"),
        }
        let r = render_redacted(result).expect("renders");
        match blocks(&r).expect("parses").as_slice() {
            [Block::Redacted { body, .. }] => assert_eq!(text(&r, body), *result),
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn crlf_marker_lines_and_bodies() {
    let thinking = "Try it.\r\n<<<tool id=t1 name=python semantics=script>>>\r\nprint(6*7)\r\n<<<result id=t1>>>\r\n42\r\n<<<end id=t1>>>\r\nSo 42.\r\n";
    let got = blocks(thinking).expect("CRLF parses");
    let [Block::Text(a), Block::Tool(call), Block::Text(b)] = got.as_slice() else {
        panic!("{got:?}")
    };
    assert_eq!(text(thinking, a), "Try it.\r\n");
    // The one `\n` before a marker is not part of the body; the `\r` before it is.
    assert_eq!(text(thinking, &call.input), "print(6*7)\r");
    assert_eq!(text(thinking, &call.result), "42\r");
    assert_eq!(call.semantics, Some(Semantics::Script));
    assert_eq!(
        text(thinking, &call.span),
        "<<<tool id=t1 name=python semantics=script>>>\r\nprint(6*7)\r\n<<<result id=t1>>>\r\n42\r\n<<<end id=t1>>>\r\n"
    );
    assert_eq!(text(thinking, b), "So 42.\r\n");
}

#[test]
fn empty_bodies_with_and_without_a_blank_line() {
    let tight = "<<<tool id=a name=b>>>\n<<<result id=a>>>\n<<<end id=a>>>";
    let call = only_tool(tight);
    assert_eq!(call.input, 23..23);
    assert_eq!(call.result, 41..41);
    assert_eq!(call.span, 0..tight.len());
    let blank = "<<<tool id=a name=b>>>\n\n<<<result id=a>>>\n\n<<<end id=a>>>\n";
    let call = only_tool(blank);
    assert!(call.input.is_empty() && call.result.is_empty(), "{call:?}");
    assert_eq!(call.span, 0..blank.len());
    let msg = "<<<message role=system>>>\n<<<end message>>>\n";
    assert!(matches!(
        blocks(msg).expect("parses").as_slice(),
        [Block::Message { body, .. }] if body.is_empty()
    ));
    let red = "<<<redacted>>>\n<<<end redacted>>>";
    assert!(matches!(
        blocks(red).expect("parses").as_slice(),
        [Block::Redacted { body, span }] if body.is_empty() && *span == (0..red.len())
    ));
}

#[test]
fn marker_syntax_is_exact() {
    let ok = [
        "<<<tool id=A-z_0.9:x name=functions.python>>>",
        "<<<tool id=x name=y semantics=cell>>>",
        "<<<result id=x>>>",
        "<<<end id=x>>>",
        "<<<message role=tool_user>>>",
        "<<<end message>>>",
        "<<<redacted>>>",
        "<<<end redacted>>>",
    ];
    for m in ok {
        assert!(parse_marker(m).is_ok(), "{m}");
        assert!(has_markers(m), "{m}");
    }
    let long = format!("<<<result id={}>>>", "x".repeat(MAX_ID_LEN + 1));
    let max = format!("<<<result id={}>>>", "x".repeat(MAX_ID_LEN));
    assert!(parse_marker(&max).is_ok());
    let long_role = format!("<<<message role={}>>>", "r".repeat(MAX_ROLE_LEN + 1));
    let bad = [
        " <<<end message>>>",
        "<<<end message>>> ",
        "<<<tool id=x>>>",
        "<<<tool name=y id=x>>>",
        "<<<tool id=x  name=y>>>",
        "<<<tool id=x name=y semantics=kernel>>>",
        "<<<tool id=x name=y extra=1>>>",
        "<<<tool id=x name=y semantics=cell more=1>>>",
        "<<<tool id= name=y>>>",
        "<<<tool id=x/y name=y>>>",
        "<<<result id=x y>>>",
        "<<<result>>>",
        "<<<end>>>",
        "<<<message role=User>>>",
        "<<<message role=>>>",
        "<<<message>>>",
        "<<<END MESSAGE>>>",
        "<<<something>>>",
        "<<<>>>",
        long.as_str(),
        long_role.as_str(),
    ];
    for m in bad {
        assert!(parse_marker(m).is_err(), "{m}");
        assert!(
            matches!(
                blocks(&format!("prose\n{m}\n")),
                Err(BlockError::BadMarker { line: 2, .. })
            ),
            "{m}"
        );
    }
    assert!(!has_markers("a <<<tool id=x name=y>>>\n<<< x >> >"));
    assert!(has_markers("prose\n  <<<anything at all>>>  \r\nmore"));
}

#[test]
fn structural_errors_name_the_line() {
    let cases: Vec<(&str, BlockError)> = vec![
        (
            "a\n<<<result id=x>>>\n",
            BlockError::ResultWithoutCall {
                line: 2,
                id: "x".into(),
            },
        ),
        (
            "<<<end id=x>>>",
            BlockError::EndWithoutCall {
                line: 1,
                id: "x".into(),
            },
        ),
        (
            "<<<end message>>>",
            BlockError::Stray {
                line: 1,
                marker: "end message",
            },
        ),
        (
            "\n\n<<<end redacted>>>",
            BlockError::Stray {
                line: 3,
                marker: "end redacted",
            },
        ),
        (
            "<<<tool id=a name=p>>>\n1\n<<<result id=b>>>\n",
            BlockError::IdMismatch {
                line: 3,
                open: "a".into(),
                found: "b".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n<<<result id=a>>>\n<<<end id=b>>>\n",
            BlockError::IdMismatch {
                line: 3,
                open: "a".into(),
                found: "b".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n1\n<<<end id=a>>>\n",
            BlockError::MissingResult {
                line: 3,
                id: "a".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n<<<tool id=b name=p>>>\n",
            BlockError::Nested {
                line: 2,
                marker: "tool",
                inside: "tool call a".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n<<<result id=a>>>\n<<<result id=a>>>\n",
            BlockError::Nested {
                line: 3,
                marker: "result",
                inside: "tool call a".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n<<<result id=a>>>\n<<<message role=user>>>\n",
            BlockError::Nested {
                line: 3,
                marker: "message",
                inside: "tool call a".into(),
            },
        ),
        (
            "<<<message role=user>>>\n<<<redacted>>>\n",
            BlockError::Nested {
                line: 2,
                marker: "redacted",
                inside: "message role=user".into(),
            },
        ),
        (
            "<<<message role=user>>>\n<<<end redacted>>>\n",
            BlockError::Nested {
                line: 2,
                marker: "end redacted",
                inside: "message role=user".into(),
            },
        ),
        (
            "<<<redacted>>>\n<<<tool id=a name=p>>>\n",
            BlockError::Nested {
                line: 2,
                marker: "tool",
                inside: "redacted block".into(),
            },
        ),
        (
            "<<<redacted>>>\n<<<end message>>>\n",
            BlockError::Nested {
                line: 2,
                marker: "end message",
                inside: "redacted block".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\n<<<result id=a>>>\n<<<end id=a>>>\nx\n<<<tool id=a name=q>>>\n",
            BlockError::DuplicateId {
                line: 5,
                id: "a".into(),
            },
        ),
        (
            "x\n<<<tool id=a name=p>>>\ncode\n<<<result id=a>>>\nout\n",
            BlockError::Unclosed {
                line: 2,
                what: "tool call a".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\ncode",
            BlockError::Unclosed {
                line: 1,
                what: "tool call a".into(),
            },
        ),
        (
            "x\ny\n<<<message role=system>>>\nbe brief",
            BlockError::Unclosed {
                line: 3,
                what: "message role=system".into(),
            },
        ),
        (
            "<<<redacted>>>",
            BlockError::Unclosed {
                line: 1,
                what: "redacted block".into(),
            },
        ),
        (
            "<<<tool id=a name=p>>>\nprint('<<<x>>>')\n<<<x>>>\n",
            BlockError::BadMarker {
                line: 3,
                reason: "unknown marker (expected tool, result, end, message, end message, redacted or end redacted)",
            },
        ),
    ];
    for (input, want) in cases {
        let got = blocks(input);
        assert_eq!(got.as_ref().err(), Some(&want), "{input:?} gave {got:?}");
        assert!(want.to_string().contains("line "), "{want}");
    }
}

#[test]
fn rendering_refuses_what_would_read_as_structure() {
    assert_eq!(
        render_tool("c1", "python", None, "print(1)\n  <<<end id=c1>>>  ", "1"),
        Err(BlockError::MarkerInContent {
            what: "input of tool call c1".into(),
            line: 2
        })
    );
    let e = render_tool("c1", "python", None, "x", "ok\r\n<<<result id=c1>>>\r\n")
        .expect_err("marker in result");
    assert_eq!(
        e,
        BlockError::MarkerInContent {
            what: "result of tool call c1".into(),
            line: 2
        }
    );
    assert!(e.to_string().contains("result of tool call c1"), "{e}");
    let e = render_message("user", "<<<redacted>>>").expect_err("marker in message");
    assert!(e.to_string().contains("user message"), "{e}");
    assert!(render_redacted("a\n<<<end redacted>>>").is_err());
    assert!(matches!(
        render_tool("", "p", None, "", ""),
        Err(BlockError::BadId(_))
    ));
    assert!(matches!(
        render_tool("a b", "p", None, "", ""),
        Err(BlockError::BadId(_))
    ));
    assert!(matches!(
        render_tool(&"i".repeat(MAX_ID_LEN + 1), "p", None, "", ""),
        Err(BlockError::BadId(_))
    ));
    assert!(matches!(
        render_tool("a", "my tool", None, "", ""),
        Err(BlockError::BadName(_))
    ));
    assert!(matches!(
        render_tool("a", "", None, "", ""),
        Err(BlockError::BadName(_))
    ));
    assert!(matches!(
        render_message("Assistant", ""),
        Err(BlockError::BadRole(_))
    ));
    assert!(matches!(
        render_message("", ""),
        Err(BlockError::BadRole(_))
    ));
    // An error quotes at most a short prefix of a hostile id.
    let Err(BlockError::BadId(quoted)) = render_tool(&"é".repeat(10_000), "p", None, "", "")
    else {
        panic!("bad id")
    };
    assert_eq!(quoted.chars().count(), QUOTE_LEN);
}

#[test]
fn semantics_words() {
    assert_eq!("script".parse(), Ok(Semantics::Script));
    assert_eq!("cell".parse(), Ok(Semantics::Cell));
    assert!("Cell".parse::<Semantics>().is_err());
    assert_eq!(Semantics::Cell.to_string(), "cell");
    assert_eq!(
        serde_json::to_string(&Semantics::Script).expect("json"),
        "\"script\""
    );
    assert_eq!(
        serde_json::from_str::<Semantics>("\"cell\"").expect("json"),
        Semantics::Cell
    );
    assert!(serde_json::from_str::<Semantics>("\"kernel\"").is_err());
}

proptest! {
    #[test]
    fn any_renderable_content_round_trips(
        prose in "[a-z \\n\\r<>]{0,40}",
        input in "[a-z \\n\\r<>=]{0,60}",
        result in "[a-z0-9 \\n\\r<>]{0,60}",
        cell in any::<bool>(),
    ) {
        let semantics = cell.then_some(Semantics::Cell);
        let Ok(tool) = render_tool("t", "python", semantics, &input, &result) else {
            prop_assert!(has_markers(&input) || has_markers(&result));
            return Ok(());
        };
        prop_assume!(!has_markers(&prose));
        let thinking = format!("{prose}\n{tool}{prose}");
        let got = blocks(&thinking).expect("rendered thinking parses");
        let call = got.iter().find_map(|b| match b {
            Block::Tool(c) => Some(c.clone()),
            _ => None,
        }).expect("one tool block");
        prop_assert_eq!(text(&thinking, &call.input), input.as_str());
        prop_assert_eq!(text(&thinking, &call.result), result.as_str());
        prop_assert_eq!(call.semantics, semantics);
    }

    #[test]
    fn blocks_never_panics(s in "(<<<(tool id=a name=b|result id=a|end id=a|message role=u|end message|redacted|end redacted|x)>>>|[a\\r\\n ]){0,30}") {
        if let Ok(bs) = blocks(&s) {
            for b in bs {
                prop_assert!(s.get(b.span()).is_some());
            }
        }
    }
}
