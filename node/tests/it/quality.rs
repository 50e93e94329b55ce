//! The Computer tier against the labelled corpus (`examples/corpus/quality.jsonl`, made by
//! `scripts/corpus/gen.py` from public generators): traces written by people (GSM-style
//! word problems) and generated arithmetic, fractions, algebra, propositional and
//! rule-chain traces, each correct and corrupted in the ways ARES names.
//!
//! Precision comes first: no correct (or merely propagated) step may be judged Invalid or
//! Ungrounded, and no correct trace may end Fail. The run is the real CLI command a user
//! runs, `trust-node bench quality --json`.

use std::process::Command;

use serde_json::Value;

/// `trust-node bench quality --json --corpus examples/corpus/CORPUS` with `more`: the report.
fn bench(corpus: &str, more: &[&std::ffi::OsStr]) -> Value {
    let corpus = format!("{}/../examples/corpus/{corpus}", env!("CARGO_MANIFEST_DIR"));
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(["bench", "quality", "--json", "--corpus", &corpus])
        .args(more)
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
}

fn report() -> Value {
    bench("quality.jsonl", &[])
}

#[test]
fn no_correct_step_is_called_wrong_and_no_correct_trace_fails() {
    let r = report();
    let o = &r["overall"];
    println!("overall: {}", r["overall_rates"]);
    for (f, rates) in r["family_rates"].as_object().unwrap() {
        println!("{f}: {rates}");
    }
    assert!(
        r["skipped"].as_array().unwrap().is_empty(),
        "{}",
        r["skipped"]
    );
    assert!(
        o["traces"].as_u64().unwrap() >= 1000,
        "the corpus shrank: {o}"
    );
    assert_eq!(
        o["false_alarms"], 0,
        "correct steps judged Invalid/Ungrounded: {}",
        r["false_alarms"]
    );
    assert_eq!(
        r["overall_rates"]["correct_traces_failed"], 0,
        "correct traces ended Fail: {o}"
    );
}

#[test]
fn wrong_calculations_are_caught() {
    let r = report();
    let rates = &r["overall_rates"];
    let recall = rates["calc_recall"].as_f64().unwrap();
    assert!(
        recall >= 0.9,
        "recall on invalid calculation steps {recall}: {rates}"
    );
    // A step on a number from nowhere is mostly left to a higher tier (abstention), and
    // rarely judged Valid: it must not be the rule.
    let o = &r["overall"];
    let missed = o["passed_errors"].as_u64().unwrap();
    let ungrounded = o["ungrounded_errors"].as_u64().unwrap();
    assert!(
        missed * 5 <= ungrounded,
        "{missed} wrong steps judged Valid, of {ungrounded} ungrounded: {rates}"
    );
    // Every family is covered at least in part, and coverage is reported per family.
    for (f, c) in r["family_rates"].as_object().unwrap() {
        assert!(c["coverage"].as_f64().is_some(), "{f}");
    }
}

/// Issue 54: `bench quality --agents DIR` judges the agent-transcript corpus (real model
/// transcripts with Python tool calls, `../shared/corpus/agent-traces`, read in place) as
/// `check` does, re-running the calls in the sandbox: no right transcript FAILs and its
/// tool calls hold, no wrong one PASSes, and every edited tool output and restatement
/// FAILs. Skipped, saying so, where the shared corpus is absent.
#[test]
fn the_agent_corpus_through_bench_quality() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-traces");
    if !dir.join("manifest.json").exists() {
        println!("skipped: no agent corpus at {}", dir.display());
        return;
    }
    let v = bench(
        "written.jsonl",
        &[
            "--proofs".as_ref(),
            "0".as_ref(),
            "--agents".as_ref(),
            dir.as_os_str(),
        ],
    );
    let a = &v["agents"];
    assert_ne!(a["interpreter"], "none", "the sandbox did not start: {a}");
    let t = &a["table"];
    assert_eq!(t["right"], 24, "{t}");
    assert_eq!(t["right_failed"], 0, "{t}");
    assert_eq!(
        t["right_tool_segments"][0], t["right_tool_segments"][1],
        "{t}"
    );
    assert_eq!(t["wrong_passed"], 0, "{t}");
    assert_eq!(t["edited_tool"][0], t["edited_tool"][1], "{t}");
    assert_eq!(
        t["edited_restatement"][0], t["edited_restatement"][1],
        "{t}"
    );
    assert!(t["misread"][1].as_u64().unwrap() >= 5, "{t}");
}
