//! Re-runs every tool call of the real agent-transcript corpus (`../shared/corpus/
//! agent-traces`, read in place, never copied into the repository) in the sandbox and reads
//! each recorded output against the re-run with `compare`:
//!
//! - in every right and natural-wrong item every call is `Same` (the corpus's README says
//!   each recorded output equals a re-run byte for byte); the only exceptions allowed are
//!   calls that need a library this interpreter lacks (an `Unavailable` abstention);
//! - in each of the 6 items whose tool output was edited, exactly the edited call
//!   `Differs`, and every other call is `Same`;
//! - in the 4 items whose restatement was edited, every call is `Same`.
//!
//! The table of counts is printed (`cargo test -p trust-sandbox --test corpus --
//! --nocapture`). Without the corpus (a checkout without `../shared`) the test says so and
//! passes: CI has it.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde_json::Value;
use trust_sandbox::{Comparison, Config, Execute, Mode, Outcome, Request, Sandbox, compare};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-traces")
}

fn read(path: &PathBuf) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The mode the transcript's tool definition describes.
fn mode_of(item: &Value) -> Mode {
    let d = item["tools"][0]["function"]["description"]
        .as_str()
        .unwrap_or_default()
        .to_lowercase();
    if d.contains("persists") || d.contains("kernel") {
        Mode::Cell
    } else if d.contains("fresh program") {
        Mode::Script
    } else {
        panic!("a tool description that names neither semantics: {d}")
    }
}

/// (code, recorded output, index of the tool message among tool messages) per call.
fn calls(item: &Value) -> Vec<(String, String, usize)> {
    let msgs = item["messages"].as_array().expect("messages");
    let mut out = Vec::new();
    for m in msgs {
        for tc in m["tool_calls"].as_array().into_iter().flatten() {
            let id = tc["id"].as_str().expect("call id");
            let args: Value =
                serde_json::from_str(tc["function"]["arguments"].as_str().expect("arguments"))
                    .expect("arguments JSON");
            let code = args["code"].as_str().expect("code").to_string();
            let (nth, reply) = msgs
                .iter()
                .filter(|r| r["role"] == "tool")
                .enumerate()
                .find(|(_, r)| r["tool_call_id"] == id)
                .expect("a tool reply for each call");
            out.push((
                code,
                reply["content"].as_str().unwrap_or_default().to_string(),
                nth,
            ));
        }
    }
    out
}

#[test]
fn corpus_tool_calls_rerun_as_recorded() {
    let dir = corpus_dir();
    if !dir.join("manifest.json").exists() {
        eprintln!(
            "NOTE: {} is absent: the corpus re-run is skipped (CI has ../shared)",
            dir.display()
        );
        return;
    }
    let sandbox = Sandbox::start(&Config::default()).expect("the sandbox starts on this machine");
    let manifest = read(&dir.join("manifest.json"));
    let sources = read(&dir.join("sources.json"));
    // kind -> (Same, Unsure, Differs, abstained)
    let mut table: BTreeMap<String, [usize; 4]> = BTreeMap::new();
    let mut failures = Vec::new();
    let mut tool_tampered = 0;
    for (file, _label) in manifest.as_object().expect("manifest object") {
        let item = read(&dir.join(file));
        let src = &sources[file.as_str()];
        let kind = src["kind"].as_str().unwrap_or("unknown");
        let kind = if kind.starts_with("natural") {
            "natural wrong"
        } else {
            kind
        }
        .to_string();
        let mode = mode_of(&item);
        let semantics = src["tool_semantics"].as_str().unwrap_or_default();
        assert_eq!(
            mode == Mode::Cell,
            semantics.starts_with("jupyter"),
            "{file}: the description and sources.json disagree"
        );
        let edit = &src["tamper_edit"];
        let tampered_call = (edit["role"] == "tool")
            .then(|| edit["nth_message_of_role"].as_u64().expect("nth") as usize - 1);
        if tampered_call.is_some() {
            tool_tampered += 1;
        }
        let calls = calls(&item);
        let mut earlier: Vec<String> = Vec::new();
        let row = table.entry(kind.clone()).or_default();
        for (k, (code, recorded, nth)) in calls.iter().enumerate() {
            let req = Request {
                mode,
                earlier: if mode == Mode::Cell {
                    earlier.clone()
                } else {
                    vec![]
                },
                code: code.clone(),
            };
            earlier.push(code.clone());
            let expect_differs = tampered_call == Some(*nth);
            match sandbox.execute(&req) {
                Outcome::Ran(ran) => match compare(mode, recorded, &ran) {
                    Comparison::Same => {
                        row[0] += 1;
                        if expect_differs {
                            failures.push(format!(
                                "{file} call {}: the edited output compares Same",
                                k + 1
                            ));
                        }
                    }
                    Comparison::Unsure { why } => {
                        row[1] += 1;
                        failures.push(format!("{file} call {}: Unsure ({why})", k + 1));
                    }
                    Comparison::Differs { detail } => {
                        row[2] += 1;
                        if !expect_differs {
                            failures.push(format!("{file} call {}: Differs ({detail})", k + 1));
                        }
                    }
                },
                Outcome::Abstain(a) => {
                    row[3] += 1;
                    let needs_library = matches!(a, trust_sandbox::Abstain::Unavailable { .. })
                        && src["code_requires"]
                            .as_str()
                            .is_some_and(|r| !r.contains("standard library only"));
                    if !needs_library || expect_differs {
                        failures.push(format!("{file} call {}: abstained ({a})", k + 1));
                    }
                }
            }
        }
    }
    println!("corpus re-run ({}):", sandbox.interpreter());
    println!("| calls of | Same | Unsure | Differs | abstained |\n| --- | --- | --- | --- | --- |");
    for (kind, [s, u, d, a]) in &table {
        println!("| {kind} | {s} | {u} | {d} | {a} |");
    }
    assert_eq!(tool_tampered, 6, "the corpus has 6 edited tool outputs");
    assert!(
        failures.is_empty(),
        "{} unexpected comparisons:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let differs: usize = table.values().map(|r| r[2]).sum();
    assert_eq!(differs, 6, "exactly the 6 edited calls differ");
}
