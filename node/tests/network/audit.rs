//! The main job end to end: a provider node submits a sample trace; the other three nodes'
//! Computer seats fetch their ciphertexts over Bitswap, decrypt, judge, commit and reveal;
//! the contract decides; the outcome is queried.

use std::process::Command;

use serde_json::Value;

use super::harness::Network;

fn submit(net: &Network, trace: &str) -> (Value, Vec<String>) {
    let path = format!("{}/../examples/traces/{trace}", env!("CARGO_MANIFEST_DIR"));
    let r = net
        .post_json(
            0,
            "/v1/sessions",
            &serde_json::json!({"trace": std::fs::read_to_string(path).unwrap()}),
        )
        .expect("node 0 opens the session");
    let names = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[0].as_str().unwrap().to_string())
        .collect();
    (r, names)
}

fn outcome(net: &Network, session: &str) -> Value {
    net.wait_for("the session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    s
}

fn verdict(s: &Value, names: &[String], node: &str) -> String {
    let i = names
        .iter()
        .position(|n| n == node)
        .unwrap_or_else(|| panic!("{node} not in {names:?}"));
    s["outcome"]["segments"][i]["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn the_incorrect_fraction_chain_fails_at_the_wrong_step_and_propagates() {
    let mut net = Network::new(4);
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 1);
    }
    let (r, names) = submit(&net, "fraction-incorrect.txt");
    let session = r["session"].as_str().unwrap().to_string();
    let s = outcome(&net, &session);
    assert_eq!(verdict(&s, &names, "O2"), "Invalid", "{s}");
    assert_eq!(verdict(&s, &names, "O3"), "Propagated", "{s}");
    assert_eq!(verdict(&s, &names, "F1"), "Propagated", "{s}");
    assert_eq!(s["outcome"]["trace"], "Fail");
    // The CLI shows the same outcome.
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(["query", &session, "--api", &net.nodes[1].api])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Invalid") && text.contains("Propagated"),
        "{text}"
    );
}

#[test]
fn the_correct_fraction_chain_passes() {
    let mut net = Network::new(4);
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 1);
    }
    let (r, _names) = submit(&net, "fraction-correct.txt");
    let session = r["session"].as_str().unwrap().to_string();
    let s = outcome(&net, &session);
    assert_eq!(s["outcome"]["trace"], "Pass", "{s}");
    let segs = s["outcome"]["segments"].as_array().unwrap();
    assert!(
        segs.iter()
            .all(|v| v["verdict"] != "Invalid" && v["verdict"] != "Propagated"),
        "{s}"
    );
}
