//! Every transcript of the shared agent-trace corpus (`../shared/corpus/agent-traces`, real
//! model transcripts in OpenAI chat format) reads as a trace with one tool block per tool
//! call. The corpus is not part of the repository: the test skips, saying so, when it is
//! absent.

use std::path::PathBuf;

use serde_json::Value;
use trust_protocol::trace::{Block, Format, Semantics, Trace, blocks};

fn corpus() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-traces");
    dir.is_dir().then_some(dir)
}

#[test]
fn every_corpus_transcript_reads_with_one_tool_block_per_call() {
    let Some(dir) = corpus() else {
        println!("skipped: ../shared/corpus/agent-traces is not present");
        return;
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("corpus directory")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("ag-") && n.ends_with(".json"))
        })
        .collect();
    files.sort();
    assert_eq!(files.len(), 48, "the corpus holds 48 transcripts");
    for path in files {
        let name = path.display();
        let text = std::fs::read_to_string(&path).expect("readable");
        let raw: Value = serde_json::from_str(&text).expect("JSON");
        let messages = raw["messages"].as_array().expect("messages");
        let calls: Vec<&Value> = messages
            .iter()
            .flat_map(|m| m["tool_calls"].as_array().into_iter().flatten())
            .collect();
        let description = raw["tools"][0]["function"]["description"]
            .as_str()
            .expect("tool description");
        let want = if description.contains("Jupyter") {
            Semantics::Cell
        } else {
            Semantics::Script
        };

        let (trace, format) =
            Trace::read(&text, &Default::default()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(format, Format::Chat, "{name}");
        assert_eq!(
            Trace::parse(&text).as_ref(),
            Ok(&trace),
            "{name}: parse agrees with read"
        );
        let first_user = messages
            .iter()
            .find(|m| m["role"] == "user")
            .and_then(|m| m["content"].as_str())
            .expect("a user message");
        assert_eq!(trace.problem, first_user, "{name}");
        let last = messages
            .last()
            .and_then(|m| m["content"].as_str())
            .expect("final text");
        assert_eq!(trace.output, last, "{name}");

        let tools: Vec<_> = blocks(&trace.thinking)
            .unwrap_or_else(|e| panic!("{name}: {e}"))
            .into_iter()
            .filter_map(|b| match b {
                Block::Tool(t) => Some(t),
                _ => None,
            })
            .collect();
        assert_eq!(tools.len(), calls.len(), "{name}: one tool block per call");
        for (block, call) in tools.iter().zip(&calls) {
            let args: Value = serde_json::from_str(
                call["function"]["arguments"]
                    .as_str()
                    .expect("arguments string"),
            )
            .expect("arguments JSON");
            assert_eq!(block.id, call["id"].as_str().expect("id"), "{name}");
            assert_eq!(
                &trace.thinking[block.input.clone()],
                args["code"].as_str().expect("code"),
                "{name}"
            );
            let reply = messages
                .iter()
                .find(|m| m["tool_call_id"] == call["id"])
                .and_then(|m| m["content"].as_str())
                .expect("reply");
            assert_eq!(&trace.thinking[block.result.clone()], reply, "{name}");
            assert_eq!(block.semantics, Some(want), "{name}");
        }
    }
}
