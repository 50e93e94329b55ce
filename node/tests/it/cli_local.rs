//! `trust-node decompose` and `trust-node check` on the bundled sample traces.

use std::process::Command;

use serde_json::Value;

fn trust_node(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(args)
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
        .output()
        .expect("run trust-node");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn verdicts(trace: &str) -> Vec<(String, String)> {
    let (code, out, err) = trust_node(&["check", trace, "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    v["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .map(|s| {
            (
                s["content"].as_str().unwrap_or("").to_string(),
                s["verdict"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

fn verdict_of<'a>(v: &'a [(String, String)], content: &str) -> &'a str {
    &v.iter()
        .find(|(c, _)| c == content)
        .unwrap_or_else(|| panic!("no segment {content:?} in {v:?}"))
        .1
}

#[test]
fn correct_fraction_chain_has_no_failure() {
    let v = verdicts("examples/traces/fraction-correct.txt");
    assert_eq!(verdict_of(&v, "Therefore, 5x = 6x − 14"), "valid");
    assert_eq!(verdict_of(&v, "Finally, we get x = 14"), "valid");
    assert!(
        !v.iter()
            .any(|(_, x)| matches!(x.as_str(), "invalid" | "ungrounded" | "propagated")),
        "{v:?}"
    );
}

#[test]
fn incorrect_fraction_chain_fails_at_the_wrong_step_and_propagates() {
    let v = verdicts("examples/traces/fraction-incorrect.txt");
    assert_eq!(verdict_of(&v, "Therefore, 5x = 9x − 20"), "invalid");
    assert_eq!(verdict_of(&v, "Finally, we get x = 5"), "propagated");
    assert_eq!(verdict_of(&v, "x = 5"), "propagated");
    let u = verdicts("examples/traces/fraction-ungrounded.txt");
    assert_eq!(verdict_of(&u, "So x / (3x − 7) = 3/5"), "ungrounded");
}

#[test]
fn paper_tunnel_trace_has_no_false_alarm() {
    let v = verdicts("examples/traces/tunnel.json");
    assert!(
        !v.iter()
            .any(|(_, x)| matches!(x.as_str(), "invalid" | "ungrounded" | "propagated")),
        "{v:?}"
    );
    assert_eq!(
        verdict_of(&v, "So D = 1.027777/185 = 0.0055555 and 1/D = 180."),
        "valid"
    );
}

#[test]
fn decompose_prints_the_hdag_json_in_the_papers_shape() {
    let (code, out, err) = trust_node(&[
        "decompose",
        "examples/traces/fraction-correct.txt",
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(v["nodes"][0]["abstraction_level"], "GOAL");
    assert!(
        v["edges"]
            .as_array()
            .is_some_and(|e| e.iter().any(|e| e["relationship"] == "depends_on"))
    );
}

#[test]
fn bad_inputs_exit_2_with_a_clear_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let broken = dir.path().join("broken.txt");
    std::fs::write(&broken, "## Problem Statement\nx\n## Final Output\ny").expect("write");
    let (code, _, err) = trust_node(&["check", broken.to_str().expect("path")]);
    assert_eq!(code, 2);
    assert!(
        err.contains("missing heading \"## Thinking Process\""),
        "{err}"
    );

    let cyclic = dir.path().join("cyclic.json");
    std::fs::write(
        &cyclic,
        r#"{"nodes":[
          {"id":"A","content":"x = 14","abstraction_level":"STEP","primary_auditor":"T_Auto"},
          {"id":"B","content":"5x = 6x − 14","abstraction_level":"STEP","primary_auditor":"T_Auto"}],
          "edges":[{"from":"A","to":"B","relationship":"depends_on"},{"from":"B","to":"A","relationship":"depends_on"}]}"#,
    )
    .expect("write");
    let (code, _, err) = trust_node(&[
        "check",
        "examples/traces/fraction-correct.txt",
        "--hdag",
        cyclic.to_str().expect("path"),
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("cycle"), "{err}");

    let (code, _, err) = trust_node(&["decompose", "no/such/file.txt"]);
    assert_eq!(code, 2);
    assert!(err.contains("cannot read no/such/file.txt"), "{err}");
}

#[test]
fn provider_hdag_listed_out_of_order_still_propagates() {
    let dir = tempfile::tempdir().expect("tempdir");
    let hdag = dir.path().join("hdag.json");
    // The dependent step is listed first.
    std::fs::write(
        &hdag,
        r#"{"nodes":[
          {"id":"B","content":"Finally, we get x = 5","abstraction_level":"STEP","primary_auditor":"T_Auto"},
          {"id":"A","content":"Therefore, 5x = 9x − 20","abstraction_level":"STEP","primary_auditor":"T_Auto"},
          {"id":"P","content":"So x / (3x − 7) = 2/5","abstraction_level":"STEP","primary_auditor":"T_Auto"}],
          "edges":[{"from":"B","to":"A","relationship":"depends_on"},{"from":"A","to":"P","relationship":"depends_on"}]}"#,
    )
    .expect("write");
    let (code, out, err) = trust_node(&[
        "check",
        "examples/traces/fraction-incorrect.txt",
        "--hdag",
        hdag.to_str().expect("path"),
        "--json",
    ]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).expect("json");
    let verdict = |id: &str| {
        v["segments"]
            .as_array()
            .and_then(|s| s.iter().find(|s| s["id"] == id))
            .map(|s| s["verdict"].as_str().unwrap_or("").to_string())
            .unwrap_or_default()
    };
    assert_eq!(verdict("A"), "invalid");
    assert_eq!(verdict("B"), "propagated");
}

/// Issue 54: `check` on an agent transcript whose tool output was edited re-runs the call
/// in the sandbox and FAILs it at `TC1`; the table shows each call as `python: CODE →
/// RESULT` (and its `TU` claim as the question it asks), never the trace's marker lines.
#[test]
fn check_shows_an_agent_transcripts_tool_calls_as_calls() {
    let trace = format!(
        "{}/../examples/traces/agent-tank-tampered.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let (code, out, err) = trust_node(&["check", &trace]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("<<<"), "marker lines in the table:\n{out}");
    let tc = out
        .lines()
        .find(|l| l.starts_with("TC1 "))
        .unwrap_or_else(|| panic!("no TC1 row:\n{out}"));
    assert!(
        tc.contains("Invalid") && tc.contains("python: start = 240"),
        "{tc}"
    );
    let tu = out
        .lines()
        .find(|l| l.starts_with("TU1 "))
        .unwrap_or_else(|| panic!("no TU1 row:\n{out}"));
    assert!(tu.contains("does python compute what is asked?"), "{tu}");
    assert!(out.contains("FAIL: TC1 is Invalid"), "{out}");
    // The transcript reads as its turns, in the order it holds them: the problem, the
    // assistant's reasoning, the call with its two claims under it, then the answer.
    let at = |line: &str| {
        out.lines()
            .position(|l| l == line || l.starts_with(line))
            .unwrap_or_else(|| panic!("no line {line:?}:\n{out}"))
    };
    let (problem, call, tc1, tu1) = (
        at("── problem"),
        at("── tool call call_1: python"),
        at("TC1 "),
        at("TU1 "),
    );
    let first_assistant = at("── assistant");
    assert!(
        problem < first_assistant && first_assistant < call && call < tc1 && call < tu1,
        "{out}"
    );
    // The last assistant message is the answer: its own turn, after the call's claims.
    let answer = at("── answer");
    let f1 = at("F1 ");
    assert!(tc1 < answer && tu1 < answer && answer < f1, "{out}");
}

/// A plain trace (no tool calls, no marker lines) has no turn headings: the table is as
/// before.
#[test]
fn check_shows_no_turns_for_a_plain_trace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let trace = dir.path().join("plain.json");
    std::fs::write(
        &trace,
        r#"{"problem": "What is 2 + 3?", "thinking": "2 + 3 = 5.", "output": "5"}"#,
    )
    .expect("write");
    let (code, out, err) = trust_node(&["check", trace.to_str().expect("path")]);
    assert_eq!(code, 0, "{err}");
    assert!(!out.contains("──"), "{out}");
}
