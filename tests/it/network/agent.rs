//! Issue 54 on a live network: a provider submits agent transcripts (OpenAI chat messages
//! with a Python tool call) with `trust-node submit`, as it holds them; the Computer seats
//! of the other nodes re-run the call in their own sandboxes and vote; the network's
//! verdict on every segment a Computer seat judged is `trust-node check`'s.

use std::process::Command;

use serde_json::Value;

use crate::fixtures::{bin, network::Network, repo};

/// `trust-node check --json` on a sample: segment id → final verdict.
fn checked(path: &str) -> (String, Vec<(String, String)>) {
    let out = Command::new(bin())
        .args(["check", "--json", path])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let segments = v["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["tier"] == "computer")
        .map(|s| {
            (
                s["id"].as_str().unwrap().to_string(),
                s["final"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    (v["trace"].as_str().unwrap().to_string(), segments)
}

/// Submits `trace` on node 0 with the CLI, waits for the outcome; the session as the
/// provider's operator reads it.
fn audited(net: &Network, path: &str) -> Value {
    let out = Command::new(bin())
        .args(["submit", path, "--wait", "--json", "--timeout-secs", "120"])
        .args(["--api", &net.nodes[0].api])
        .arg("--home")
        .arg(&net.nodes[0].home)
        .env_remove("TRUST_API_TOKEN")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        net.logs_tail()
    );
    let r: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    });
    let session = r["session"].as_str().unwrap_or_else(|| panic!("{r}"));
    let path = format!("/v1/sessions/{session}");
    net.wait_for("the provider's node to hold the outcome", |n| {
        n.get(0, &path).is_ok_and(|s| s["status"] == "decided")
    });
    net.get_with_token(0, &path, &net.operator_token(0))
        .unwrap()
}

#[test]
fn agent_transcripts_are_audited_by_re_running_their_tool_calls() {
    let net = Network::running(4);
    for (sample, trace, tool) in [
        // The transcript's tool output was edited: the re-run differs, the trace FAILs.
        ("agent-tank-tampered.json", "fail", "invalid"),
        // A right transcript: its tool call holds, but whether the code does what the
        // problem asks is for a tier that reads words, absent here.
        ("agent-tank-correct.json", "inconclusive", "valid"),
    ] {
        let path = repo().join("examples/traces").join(sample);
        let path = path.to_str().unwrap();
        let (local, computer) = checked(path);
        assert_eq!(local, trace, "{sample}: check says {local}");
        let s = audited(&net, path);
        assert_eq!(s["verdict"], trace, "{sample}: {s}\n{}", net.logs_tail());
        let steps = s["steps"].as_array().unwrap_or_else(|| panic!("{s}"));
        // A step's field (`verdict`, `turn`), as the provider's node gives it.
        let field = |name: &str, key: &str| {
            steps
                .iter()
                .find(|x| x["name"] == name)
                .and_then(|x| x[key].as_str())
                .unwrap_or_else(|| panic!("{sample}: no {key} for {name} in {s}"))
                .to_string()
        };
        let verdict_of = |name: &str| field(name, "verdict");
        assert_eq!(verdict_of("TC1"), tool, "{sample}: {s}");
        // The tool segment's text is the call and its reported result, verbatim.
        let tc = steps.iter().find(|x| x["name"] == "TC1").unwrap();
        assert!(
            tc["text"]
                .as_str()
                .unwrap()
                .contains("print(start - drained + 3)"),
            "{tc}"
        );
        // The provider sees its transcript as its turns: the call's claims under the
        // call, the restatement after it under the assistant's next turn.
        let turn_of = |name: &str| field(name, "turn");
        assert_eq!(turn_of("TC1"), "tool call call_1: python", "{s}");
        assert_eq!(turn_of("TU1"), "tool call call_1: python", "{s}");
        // The provider's own node re-runs its calls for its eyes: beside the result the
        // transcript reports, what the code gives (240 - 7.5 * 18 + 3), kept in the page
        // record once its re-run is done.
        let sid = s["session"].as_str().unwrap_or_else(|| panic!("{s}"));
        let path = format!("/v1/sessions/{sid}");
        let token = net.operator_token(0);
        let mut rerun = String::new();
        net.wait_for("the provider's node to re-run TC1 for its page", |n| {
            let Ok(v) = n.get_with_token(0, &path, &token) else {
                return false;
            };
            let found = v["steps"].as_array().and_then(|xs| {
                xs.iter()
                    .find(|x| x["name"] == "TC1")
                    .and_then(|x| x["rerun"].as_str())
                    .map(str::to_string)
            });
            found.map(|r| rerun = r).is_some()
        });
        assert!(rerun.starts_with("108.0 (CPython"), "{sample}: {rerun}");
        // Once, under the call: the `TU` claim beside it reads the same block.
        let v = net.get_with_token(0, &path, &token).unwrap();
        let tu = v["steps"]
            .as_array()
            .and_then(|xs| xs.iter().find(|x| x["name"] == "TU1"))
            .unwrap_or_else(|| panic!("{sample}: no TU1 in {v}"));
        assert!(tu["rerun"].is_null(), "{sample}: {tu}");
        let page = net.raw_with_token(0, "GET", &format!("/sessions/{sid}"), b"", &token);
        assert!(
            page.contains("re-run here: 108.0 (CPython"),
            "{sample}: {page}"
        );
        // Every segment a Computer seat judged has the verdict `check` gave it.
        for (id, want) in &computer {
            assert_eq!(
                &verdict_of(id),
                want,
                "{sample}: {id}: network vs check\n{s}"
            );
        }
    }
}
