//! `trust-node testnet init --nodes N --llm-nodes M --llm-url URL`: M more homes,
//! registered as LLM-tier auditors that judge through URL, following the chain without
//! voting in consensus; the N validators stay Computer seats.

use std::process::Command;

/// A base port whose first ports are free now (the one test that runs a node uses three).
fn free_base() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
        .min(65_000)
}

fn init(args: &[&str]) -> (std::process::Output, tempfile::TempDir, u16) {
    let dir = tempfile::tempdir().unwrap();
    let base = free_base();
    let out = Command::new(env!("CARGO_BIN_EXE_trust-node"))
        .args([
            "testnet",
            "init",
            "--base-port",
            &base.to_string(),
            "--home",
        ])
        .arg(dir.path())
        .args(args)
        .output()
        .unwrap();
    (out, dir, base)
}

#[test]
fn llm_nodes_are_llm_auditors_with_the_endpoint_and_not_validators() {
    let (out, dir, _) = init(&[
        "--nodes",
        "4",
        "--auditor-nodes",
        "0",
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
        tiers.iter().filter(|t| **t == "llm").count(),
        3,
        "{tiers:?}"
    );
    assert_eq!(tiers.iter().filter(|t| **t == "computer").count(), 4);
    // Windows wide enough for a small model on a laptop.
    assert_eq!(genesis["genesis"]["params"]["commit_window"], 120);
    for i in 0..7 {
        let cfg = std::fs::read_to_string(dir.path().join(format!("node{i}/config.toml"))).unwrap();
        let llm = i >= 4;
        // The config is commented (`init` documents each setting): read it as TOML.
        let doc: toml::Table = cfg.parse().unwrap_or_else(|e| panic!("node{i}: {e}"));
        let url = doc
            .get("llm")
            .and_then(|l| l.get("url"))
            .and_then(|u| u.as_str());
        assert_eq!(
            url == Some("http://127.0.0.1:8089/v1"),
            llm,
            "node{i}: {cfg}"
        );
        let model = doc
            .get("llm")
            .and_then(|l| l.get("model"))
            .and_then(|m| m.as_str());
        assert_eq!(model == Some("smollm2-135m-instruct"), llm, "node{i}");
    }
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(text.matches("LLM auditor").count(), 3, "{text}");
}

#[test]
fn llm_nodes_need_a_usable_url() {
    let (out, _d, _) = init(&["--nodes", "4", "--llm-nodes", "3"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--llm-url"));
    let (out, _d, _) = init(&["--nodes", "4", "--llm-nodes", "1", "--llm-url", "ftp://x"]);
    assert_eq!(out.status.code(), Some(2));
    // Without LLM nodes nothing changes: four Computer validators, the default window.
    let (out, dir, _) = init(&["--nodes", "4"]);
    assert!(out.status.success());
    let g = std::fs::read_to_string(dir.path().join("node0/genesis.json")).unwrap();
    assert!(!g.contains("\"Llm\""));
    assert!(
        !std::fs::read_to_string(dir.path().join("node3/config.toml"))
            .unwrap()
            .contains("llm")
    );
}

/// The API key is named by a variable; the node refuses to start when it is missing, and
/// with it set, the key appears nowhere: not in the logs (at debug level), not on disk.
#[test]
fn the_llm_api_key_is_read_from_the_environment_and_never_written() {
    let (out, dir, base) = init(&["--nodes", "1"]);
    assert!(out.status.success());
    let home = dir.path().join("node0");
    let run = |env: Option<&str>| {
        let mut c = Command::new(env!("CARGO_BIN_EXE_trust-node"));
        c.args(["run", "--home"])
            .arg(&home)
            .args(["--llm-url", "http://127.0.0.1:9/v1"])
            .args(["--llm-api-key-env", "TRUST_TEST_LLM_KEY"])
            .env("RUST_LOG", "debug")
            .env_remove("TRUST_TEST_LLM_KEY");
        if let Some(k) = env {
            c.env("TRUST_TEST_LLM_KEY", k);
        }
        c
    };
    let out = run(None).output().unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stderr).contains("TRUST_TEST_LLM_KEY, which is not set"));

    let secret = "sk-test-0123456789-secret";
    let log = home.join("node.log");
    let mut child = run(Some(secret))
        .stdout(std::process::Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    // Wait until status reports the endpoint (nothing listens on port 9: it does not
    // answer), so the client has been built and used.
    let api = format!("127.0.0.1:{}", base + 2);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let start = std::time::Instant::now();
    loop {
        let s = rt
            .block_on(trust_node::api::client::get(&api, "/v1/status"))
            .ok();
        if s.as_ref().is_some_and(|s| s["llm"]["answers"] == false) {
            break;
        }
        assert!(
            start.elapsed() < std::time::Duration::from_secs(60),
            "status never showed the LLM endpoint: {s:?}\n{}",
            std::fs::read_to_string(&log).unwrap_or_default()
        );
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.contains("LLM seats judge through this endpoint"),
        "{text}"
    );
    assert!(!text.contains(secret), "the key is in the log");
    // Nothing under the home holds it either.
    let mut stack = vec![dir.path().to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if let Ok(bytes) = std::fs::read(&p) {
                assert!(
                    !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
                    "the key is in {}",
                    p.display()
                );
            }
        }
    }
}
