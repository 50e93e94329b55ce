//! `trust-node testnet init --nodes N --llm-nodes M --llm-url URL`: M more homes,
//! registered as LLM-tier auditors that judge through URL, following the chain without
//! voting in consensus; the N validators stay Computer seats.

use std::process::Command;

fn init(args: &[&str]) -> (std::process::Output, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args(["testnet", "init", "--base-port", "40100", "--home"])
        .arg(dir.path())
        .args(args)
        .output()
        .unwrap();
    (out, dir)
}

#[test]
fn llm_nodes_are_llm_auditors_with_the_endpoint_and_not_validators() {
    let (out, dir) = init(&[
        "--nodes",
        "4",
        "--llm-nodes",
        "3",
        "--llm-url",
        "http://127.0.0.1:8089/v1",
        "--llm-model",
        "smollm2-135m-instruct",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let genesis: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(dir.path().join("node0/genesis.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(genesis["validators"].as_array().unwrap().len(), 4);
    let tiers: Vec<&str> = genesis["genesis"]["auditors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["tier"].as_str().unwrap())
        .collect();
    assert_eq!(
        tiers.iter().filter(|t| **t == "Llm").count(),
        3,
        "{tiers:?}"
    );
    assert_eq!(tiers.iter().filter(|t| **t == "Computer").count(), 4);
    // Windows wide enough for a small model on a laptop.
    assert_eq!(genesis["genesis"]["params"]["commit_window"], 120);
    for i in 0..7 {
        let cfg = std::fs::read_to_string(dir.path().join(format!("node{i}/config.toml"))).unwrap();
        let llm = i >= 4;
        assert_eq!(
            cfg.contains("llm_url = \"http://127.0.0.1:8089/v1\""),
            llm,
            "node{i}: {cfg}"
        );
        assert_eq!(cfg.contains("llm_model = \"smollm2-135m-instruct\""), llm);
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("LLM auditor").count(), 3, "{text}");
}

#[test]
fn llm_nodes_need_a_usable_url() {
    let (out, _d) = init(&["--nodes", "4", "--llm-nodes", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--llm-url"));
    let (out, _d) = init(&["--nodes", "4", "--llm-nodes", "1", "--llm-url", "ftp://x"]);
    assert_eq!(out.status.code(), Some(2));
    // Without LLM nodes nothing changes: four Computer validators, the default window.
    let (out, dir) = init(&["--nodes", "4"]);
    assert!(out.status.success());
    let g = std::fs::read_to_string(dir.path().join("node0/genesis.json")).unwrap();
    assert!(!g.contains("\"Llm\""));
    assert!(
        !std::fs::read_to_string(dir.path().join("node3/config.toml"))
            .unwrap()
            .contains("llm")
    );
}
