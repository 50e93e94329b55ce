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

fn report() -> Value {
    let corpus = format!(
        "{}/../examples/corpus/quality.jsonl",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(["bench", "quality", "--json", "--corpus", &corpus])
        .output()
        .expect("runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON report")
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
