//! The main job end to end: a provider node submits a sample trace; the other three nodes'
//! Computer seats fetch their ciphertexts over Bitswap, decrypt, judge, commit and reveal;
//! the contract decides; the outcome is queried.

use std::process::Command;

use serde_json::Value;

use crate::fixtures::{
    bin,
    network::{Network, shown},
};

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

/// The verdict of `node`, a segment the provider left out of the session (`r` is its
/// submit reply).
fn left_out_verdict(s: &Value, r: &Value, node: &str) -> String {
    let i = r["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .position(|l| l[0] == node)
        .unwrap_or_else(|| panic!("{node} not left out: {r}"));
    s["outcome"]["left_out"][i]["verdict"]
        .as_str()
        .unwrap()
        .to_string()
}

/// Runs `trust-node submit` against node 0, as its operator: the token comes from its home.
fn cli_submit(net: &Network, args: &[&str]) -> std::process::Output {
    cli_submit_from(net, args, &net.nodes[0].home)
}

/// Runs `trust-node submit` against node 0 with `home` as the home it reads the token from.
fn cli_submit_from(net: &Network, args: &[&str], home: &std::path::Path) -> std::process::Output {
    Command::new(bin())
        .arg("submit")
        .args(args)
        .args(["--api", &net.nodes[0].api])
        .arg("--home")
        .arg(home)
        .env_remove("TRUST_API_TOKEN")
        .output()
        .unwrap()
}

#[test]
fn the_incorrect_fraction_chain_fails_at_the_wrong_step_and_propagates() {
    let mut net = Network::running(4);

    // Broken input first: each is a clear error (exit 2), and no session is opened.
    let dir = tempfile::tempdir().unwrap();
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"problem\": \"p\", \"thinking\": ").unwrap();
    let cyclic = dir.path().join("cyclic.json");
    std::fs::write(
        &cyclic,
        r#"{"nodes": [
            {"id": "A", "content": "Let the numerator be x", "abstraction_level": "STEP", "primary_auditor": "T_Auto"},
            {"id": "B", "content": "So x / (3x − 7) = 2/5", "abstraction_level": "STEP", "primary_auditor": "T_Auto"}
        ], "edges": [
            {"from": "A", "to": "B", "relationship": "depends_on"},
            {"from": "B", "to": "A", "relationship": "depends_on"}
        ]}"#,
    )
    .unwrap();
    let trace = format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let provider = net.keys(0).account_id();
    let nonce = |net: &Network| {
        net.get(0, &format!("/v1/accounts/{provider}")).unwrap()["next_nonce"].clone()
    };
    let before = nonce(&net);
    for (args, says) in [
        (vec![broken.to_str().unwrap()], "malformed trace JSON"),
        (vec![&trace, "--hdag", cyclic.to_str().unwrap()], "cycle"),
        (vec!["/no/such/trace.txt"], "/no/such/trace.txt"),
    ] {
        let out = cli_submit(&net, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
    // Without the operator token (a home that has none), or with a wrong one, the node
    // refuses to spend its funds, and says how to send the token.
    let elsewhere = tempfile::tempdir().unwrap();
    let wrong = "0".repeat(64);
    for args in [
        vec![trace.as_str()],
        vec![trace.as_str(), "--api-token", &wrong],
    ] {
        let out = cli_submit_from(&net, &args, elsewhere.path());
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(
            err.contains("HTTP 401") && err.contains("operator token"),
            "{err}"
        );
    }
    assert_eq!(nonce(&net), before, "a refused submit sent a transaction");

    let (r, names) = submit(&net, "fraction-incorrect.txt");
    let session = r["session"].as_str().unwrap().to_string();
    // Readable on the provider's node from its 202 on (pending until a block holds it).
    let now = net.get(0, &format!("/v1/sessions/{session}")).unwrap();
    assert!(
        ["pending", "live", "decided"].contains(&now["status"].as_str().unwrap()),
        "{now}"
    );
    let s = outcome(&net, &session);
    assert_eq!(verdict(&s, &names, "O2"), "invalid", "{s}");
    the_provider_sees_its_own_steps(&net, &session, &r, &trace);
    a_retried_submit_opens_one_session_and_says_its_verdict_in_its_status(&net, &trace);
    assert_eq!(verdict(&s, &names, "O3"), "propagated", "{s}");
    // The final answer, a claim for the LLM tier this network lacks, is left out; the
    // error reaches it all the same, and its calculation's too.
    assert_eq!(left_out_verdict(&s, &r, "F1"), "propagated", "{s}");
    assert_eq!(verdict(&s, &names, "O4"), "propagated", "{s}");
    assert_eq!(s["outcome"]["trace"], "fail");
    assert!(
        s["explanation"]
            .as_str()
            .is_some_and(|w| w.contains("an error reaches the conclusion")),
        "{s}"
    );
    // The CLI shows the same outcome.
    let out = Command::new(bin())
        .args(["query", &session, "--api", &net.nodes[1].api])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("Invalid") && text.contains("Propagated"),
        "{text}"
    );
    each_vote_shows_its_reason(&net, &session, &s);
    // A user checks the outcome served by a node other than the provider's against the
    // genesis file of a third: the Merkle proof, the certificate and the stakes behind it.
    let text = verified(&net, &session);
    assert!(
        text.contains("Fail") && text.contains("certified by validators holding"),
        "{text}"
    );

    // The proof kept in files, walked from genesis and from a block a user trusts across
    // a change of the validator powers, then checked where no node runs.
    let exported = export_proofs(&net, &session);

    // Every node stopped with SIGKILL and node 1 started again on its own: one validator
    // of four makes no block, so its view is exactly what it rebuilt from its ledger. It
    // serves a proof that verifies all the same (it replays at least its tip block, which
    // leaves the state before it at hand for the stakes behind the certificate).
    for i in 0..4 {
        net.kill(i);
    }
    exported.verify_offline();
    net.start(1);
    net.wait_height(1, 1);
    verified(&net, &session);
}

/// Whether a provider's segment name is one its node planted (a honeypot, or the
/// calculation beside one).
fn planted(name: &str) -> bool {
    name.starts_with("honeypot:") || name.starts_with("calculation-of-honeypot:")
}

/// Issue 56: a session as its provider's operator reads it (`GET /v1/sessions/{id}` with
/// the token, or `query --json` on its home): the trace verdict at the top, the model's
/// own steps (none planted) in trace order, the planted ones apart under `honeypots`.
fn own_steps_in_trace_order(v: &Value, planted_count: usize) {
    assert_eq!(v["verdict"], v["outcome"]["trace"], "{v}");
    assert!(v["verdict"].is_string(), "a top-level verdict: {v}");
    let steps = v["steps"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert!(!steps.is_empty(), "{v}");
    for x in steps {
        assert!(
            x["honeypot"] == false && !planted(x["name"].as_str().unwrap()),
            "a planted segment among the steps: {x}"
        );
    }
    let rank = |part: &str| {
        ["problem", "thinking", "output"]
            .iter()
            .position(|p| *p == part)
    };
    let places: Vec<(usize, u64)> = steps
        .iter()
        .filter_map(|x| {
            let span = x.get("span")?;
            Some((rank(span["part"].as_str()?)?, span["start"].as_u64()?))
        })
        .collect();
    assert!(
        places.windows(2).all(|w| w[0] <= w[1]),
        "steps not in trace order: {places:?}\n{v}"
    );
    let honeypots = v["honeypots"].as_array().unwrap_or_else(|| panic!("{v}"));
    assert!(honeypots.len() >= planted_count, "{v}");
    for x in honeypots {
        assert!(planted(x["name"].as_str().unwrap()), "{x}");
        assert_eq!(x["honeypot"], true, "{x}");
    }
}

/// On the provider's node, with its operator token, every step of the submitted trace
/// under the names `submit` gave, its text verbatim where the trace holds it, and its
/// verdict; `query` on that home shows them. Any other node sees blinded ids only, and a
/// token that is not its own is refused.
fn the_provider_sees_its_own_steps(net: &Network, session: &str, r: &Value, trace_path: &str) {
    let path = format!("/v1/sessions/{session}");
    let token = net.operator_token(0);
    // `outcome` waited on node 1; the provider's node may be a block behind it.
    net.wait_for("the provider's node to hold the outcome", |n| {
        n.get(0, &path).is_ok_and(|s| s["status"] == "decided")
    });
    let mine = net.get_with_token(0, &path, &token).unwrap();
    let planted_count = usize::try_from(r["honeypots"].as_u64().unwrap_or(0)).unwrap();
    own_steps_in_trace_order(&mine, planted_count);
    let steps = mine["steps"].as_array().unwrap_or_else(|| panic!("{mine}"));
    let mut named: Vec<&str> = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .chain(r["left_out"].as_array().unwrap())
        .map(|x| x[0].as_str().unwrap())
        .collect();
    let mut shown: Vec<&str> = steps
        .iter()
        .chain(mine["honeypots"].as_array().unwrap())
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    // Each under its place in the outcome.
    for x in steps.iter().chain(mine["honeypots"].as_array().unwrap()) {
        let i = usize::try_from(x["index"].as_u64().unwrap()).unwrap();
        assert_eq!(named.get(i).copied(), x["name"].as_str(), "{x}");
    }
    named.sort_unstable();
    shown.sort_unstable();
    assert_eq!(shown, named, "the names submit printed, each once");
    let trace =
        trust_protocol::trace::Trace::parse(&std::fs::read_to_string(trace_path).unwrap()).unwrap();
    let mut spanned = 0;
    for x in steps {
        let text = x["text"].as_str().unwrap();
        if x["honeypot"] == true {
            assert!(x.get("span").is_none(), "{x}");
            continue;
        }
        if let Some(span) = x.get("span") {
            let part = match span["part"].as_str().unwrap() {
                "problem" => &trace.problem,
                "thinking" => &trace.thinking,
                _ => &trace.output,
            };
            let (a, b) = (
                span["start"].as_u64().unwrap() as usize,
                span["end"].as_u64().unwrap() as usize,
            );
            assert!(
                part.get(a..b)
                    .is_some_and(|t| text.contains(t) || t.contains(text)),
                "{x}"
            );
            let line = part[..a].matches('\n').count() + 1;
            assert_eq!(span["line"].as_u64(), Some(line as u64), "{x}");
            spanned += 1;
        }
    }
    assert!(
        spanned > steps.len() / 2,
        "most steps are spans of the trace: {mine}"
    );
    let o2 = steps.iter().find(|x| x["name"] == "O2").unwrap();
    assert_eq!(o2["verdict"], "invalid", "{o2}");
    assert_eq!(
        steps.iter().find(|x| x["name"] == "F1").unwrap()["left_out"],
        true
    );
    // Elsewhere, blinded ids only; a token not the node's own is refused.
    assert!(net.get(1, &path).unwrap().get("steps").is_none());
    assert!(net.get(0, &path).unwrap().get("steps").is_none());
    let e = net.get_with_token(1, &path, &token).unwrap_err();
    assert!(e.to_string().contains("401"), "{e}");
    // `query --json` on the provider's home: the same, for a program.
    let json: Value = serde_json::from_str(&net.cli_ok(0, &["query", session, "--json"])).unwrap();
    own_steps_in_trace_order(&json, planted_count);
    // `query` on the provider's home names its steps and shows their text, the planted
    // ones apart after them.
    let text = net.cli_ok(0, &["query", session]);
    assert!(text.contains("steps       name"), "{text}");
    let table = &text[text.find("steps       name").unwrap()..];
    let own = table.split("honeypots   name").next().unwrap();
    assert!(!own.contains("honeypot:"), "{text}");
    if planted_count > 0 {
        assert!(table.contains("honeypots   name"), "{text}");
    }
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("O2 ") && l.contains("invalid"))
        .unwrap_or_else(|| panic!("no O2 step line:\n{text}"));
    assert!(
        line.contains(o2["text"].as_str().unwrap().lines().next().unwrap()),
        "{line}"
    );
}

/// `submit --wait --exit-code` under an idempotency key and labels: its status is the
/// verdict (10 for this FAIL); a retry with the same key answers the same session and
/// charges nothing; the key with another trace is refused; `sessions --label` lists it; a
/// trace given as a JSON object opens a session as its text does.
fn a_retried_submit_opens_one_session_and_says_its_verdict_in_its_status(
    net: &Network,
    trace: &str,
) {
    let provider = net.keys(0).account_id();
    let balance =
        |net: &Network| net.get(0, &format!("/v1/accounts/{provider}")).unwrap()["balance"].clone();
    let args = [
        trace,
        "--wait",
        "--exit-code",
        "--idempotency-key",
        "run-7/row-3",
        "--label",
        "model=demo-1",
        "--label",
        "row=3",
    ];
    let first = cli_submit(net, &args);
    let text = String::from_utf8_lossy(&first.stdout).into_owned();
    assert_eq!(
        first.status.code(),
        Some(10),
        "{text}\n{}",
        String::from_utf8_lossy(&first.stderr)
    );
    assert!(
        text.lines().any(|l| l.starts_with("verdict     FAIL")),
        "{text}"
    );
    let session = text
        .lines()
        .find_map(|l| l.strip_prefix("session     "))
        .unwrap()
        .to_string();
    let paid = balance(net);
    let again = cli_submit(net, &args);
    let text = String::from_utf8_lossy(&again.stdout);
    assert_eq!(again.status.code(), Some(10), "{text}");
    assert!(text.contains(&format!("session     {session}")), "{text}");
    assert_eq!(balance(net), paid, "a retry charged again");
    // The retry says it is one, and shows no fee as if charged again; `--json` says so too.
    assert!(
        text.contains("replayed    the session this idempotency key opened before")
            && !text.contains("\nfee "),
        "{text}"
    );
    let replay = cli_submit(
        net,
        &[
            trace,
            "--json",
            "--idempotency-key",
            "run-7/row-3",
            "--label",
            "model=demo-1",
            "--label",
            "row=3",
        ],
    );
    let replay: Value = serde_json::from_slice(&replay.stdout).unwrap();
    assert_eq!(replay["replayed"], true, "{replay}");
    assert_eq!(replay["session"], session.as_str(), "{replay}");
    let other = format!(
        "{}/../examples/traces/fraction-correct.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let refused = cli_submit(net, &[&other, "--idempotency-key", "run-7/row-3"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert_eq!(refused.status.code(), Some(4), "{err}");
    assert!(err.contains("was used for a different request"), "{err}");
    assert_eq!(balance(net), paid);
    // Listed by its labels, on the provider's node only, with the token.
    let listed = net.cli_ok(0, &["sessions", "--label", "model=demo-1", "--json"]);
    let listed: Value = serde_json::from_str(&listed).unwrap();
    let listed = listed.as_array().unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    assert_eq!(listed[0]["session"], session.as_str());
    assert_eq!(listed[0]["verdict"], "fail");
    assert_eq!(listed[0]["labels"]["row"], "3");
    let none = net.cli_ok(0, &["sessions", "--label", "model=other"]);
    assert!(none.contains("no session"), "{none}");
    let path = "/v1/sessions?provider=me";
    assert!(net.get(0, path).unwrap_err().to_string().contains("401"));
    // A trace as a JSON object, not a string.
    let t = trust_protocol::trace::Trace::parse(&std::fs::read_to_string(&other).unwrap()).unwrap();
    let r = net
        .post_json(
            0,
            "/v1/sessions/plan",
            &serde_json::json!({"trace": {"problem": t.problem, "thinking": t.thinking, "output": t.output}}),
        )
        .expect("a trace object is read as its JSON");
    assert!(
        r["segments"].as_array().is_some_and(|s| !s.is_empty()),
        "{r}"
    );
}

/// Bundles written by `proof export` into a fresh directory, with a copy of the genesis
/// file: one walked from genesis, one from a block trusted before a validator bonded more.
struct Exported {
    dir: tempfile::TempDir,
    /// The block trusted, `HEIGHT:HASH`.
    trust: String,
    /// Its height and hash.
    trusted: (u64, String),
}

/// `trust-node ARGS` run in `dir`, with no home and no node address at hand.
fn offline(dir: &std::path::Path, args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new(bin());
    cmd.args(args)
        .current_dir(dir)
        .env_remove("TRUST_HOME")
        .env_remove("TRUST_API")
        .env("HOME", dir);
    shown(cmd, args)
}

/// Trusts node 1's current block, has node 1's validator bond more (a change of the
/// validator powers), waits for the block after it, and exports the session's proof from
/// node 1 walked from genesis and from the trusted block; a hash that is not the node's
/// block at that height is refused.
fn export_proofs(net: &Network, session: &str) -> Exported {
    let dir = tempfile::tempdir().unwrap();
    std::fs::copy(
        net.nodes[2].home.join("genesis.json"),
        dir.path().join("genesis.json"),
    )
    .unwrap();
    // Exported once final (the appeal test exports one before: NOT FINAL, exit 3).
    let api = net.nodes[1].api.as_str();
    let finality = |n: &Network| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .map(|s| s["finality"]["state"].clone())
    };
    net.wait_for("the session to be final", |n| {
        finality(n).is_ok_and(|f| f == "final")
    });
    let h = net.height(1).expect("node 1 answers");
    let (hash, _) = net.block(1, h);
    let trust = format!("{h}:{hash}");
    let out = net.cli_ok(1, &["auditor", "bond", "500"]);
    assert!(out.contains("bonded 500 TRUST"), "{out}");
    let after = net.height(1).expect("node 1 answers");
    net.wait_height(1, after + 1);
    for (file, extra) in [
        ("genesis.proof", vec![]),
        ("trusted.proof", vec!["--trust", trust.as_str()]),
    ] {
        let mut args = vec!["proof", "export", session, "-o", file, "--api", api];
        args.extend(extra);
        let out = offline(dir.path(), &args);
        assert!(out.status.success(), "{args:?}\n{}", net.logs_tail());
        // The verdict spelled as `proof verify` spells it, and whether it is final yet.
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            said.lines().any(|l| l.starts_with("finality    "))
                && ["PASS,", "FAIL,", "INCONCLUSIVE,"]
                    .iter()
                    .any(|v| said.contains(&format!("verdict     {v}"))),
            "{said}"
        );
    }
    // The provider's node (node 0 opened the session) puts its opening in, so that the
    // trace a user holds can be checked against the bundle; node 1 opened nothing, and
    // says so, writing nothing.
    let traces = format!("{}/../examples/traces", env!("CARGO_MANIFEST_DIR"));
    for (from, to) in [
        ("fraction-incorrect.txt", "trace.txt"),
        ("fraction-correct.txt", "other.txt"),
    ] {
        std::fs::copy(format!("{traces}/{from}"), dir.path().join(to)).unwrap();
    }
    let home = |i: usize| net.nodes[i].home.to_str().unwrap().to_string();
    let (home0, home1) = (home(0), home(1));
    let args = [
        "proof",
        "export",
        session,
        "-o",
        "opened.proof",
        "--opening",
        "--home",
        &home0,
    ];
    let out = offline(dir.path(), &args);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{args:?}: {out:?}");
    assert!(text.contains("opening     each segment's step"), "{text}");
    let args = [
        "proof",
        "export",
        session,
        "-o",
        "none.proof",
        "--opening",
        "--home",
        &home1,
    ];
    let out = offline(dir.path(), &args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{args:?}: {out:?}");
    assert!(err.contains("holds no opening of session"), "{err}");
    assert!(!dir.path().join("none.proof").exists());
    let text = String::from_utf8_lossy(
        &offline(
            dir.path(),
            &[
                "proof", "export", session, "-o", "x.proof", "--api", api, "--trust", &trust,
                "--force",
            ],
        )
        .stdout,
    )
    .into_owned();
    assert!(
        text.contains(&format!("walk        from trusted block {h} ({hash}), ")),
        "{text}"
    );
    // A hash that is not node 1's block at that height: refused, nothing written.
    let wrong = format!("{h}:{}", "ab".repeat(32));
    let out = offline(
        dir.path(),
        &[
            "proof",
            "export",
            session,
            "-o",
            "wrong.proof",
            "--api",
            api,
            "--trust",
            &wrong,
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(err.contains("is not one of this node's"), "{err}");
    assert!(!dir.path().join("wrong.proof").exists());
    Exported {
        dir,
        trust,
        trusted: (h, hash),
    }
}

impl Exported {
    /// `proof verify` on each bundle with nothing but the files at hand: each holds with
    /// its anchor trusted, and the trusted one is refused, naming its anchor, without
    /// that block trusted or with another hash.
    fn verify_offline(&self) {
        let dir = self.dir.path();
        let (h, hash) = &self.trusted;
        let verify = |file: &str, extra: &[&str]| {
            let mut args = vec!["proof", "verify", file, "--genesis", "genesis.json"];
            args.extend(extra);
            offline(dir, &args)
        };
        let json = |out: std::process::Output| -> Value {
            assert!(out.status.success(), "{out:?}");
            serde_json::from_slice(&out.stdout).unwrap()
        };
        // From genesis: the bond is among the changes walked. Exported after the appeal
        // window: final, with the terms the session ran under.
        let v = json(verify("genesis.proof", &["--json"]));
        assert_eq!(v["verified"], true, "{v}");
        assert_eq!(v["final"], true, "{v}");
        assert_eq!(v["finality"]["state"], "final", "{v}");
        assert!(v["terms"]["seats"].is_array(), "{v}");
        assert_eq!(v["verdict"], "fail", "{v}");
        assert!(v["anchor"].is_null(), "{v}");
        let from_genesis = v["hops"].as_u64().unwrap();
        assert!(from_genesis >= 1, "{v}");
        // From the trusted block: the changes above it, the bond among them.
        let out = verify("trusted.proof", &["--trust", &self.trust]);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "{text}");
        assert!(
            text.contains(&format!("walked      from trusted block {h} ({hash}), ")),
            "{text}"
        );
        assert!(text.contains("decided     at block"), "{text}");
        assert!(text.contains("finality    final at block "), "{text}");
        assert!(text.contains("assurance   k = "), "{text}");
        // Asked about another session: refused, naming both.
        let other = "ab".repeat(32);
        let out = verify(
            "trusted.proof",
            &["--trust", &self.trust, "--session", &other],
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(&format!("not session {other}")), "{err}");
        let v = json(verify("trusted.proof", &["--trust", &self.trust, "--json"]));
        assert_eq!(v["anchor"]["height"], *h, "{v}");
        let hops: Vec<u64> = serde_json::from_value(v["hop_heights"].clone()).unwrap();
        assert!(!hops.is_empty() && hops.iter().all(|c| c > h), "{v}");
        assert!(hops.len() as u64 <= from_genesis, "{v}");
        // Not trusting that block, or trusting another hash at its height: refused.
        let wrong = format!("{h}:{}", "ab".repeat(32));
        for extra in [vec![], vec!["--trust", wrong.as_str()]] {
            let out = verify("trusted.proof", &extra);
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(1), "{extra:?}: {err}");
            assert!(
                err.contains(&format!(
                    "proof REJECTED: the validator set is unknown: the proof walks from block {h} ({hash})"
                )),
                "{extra:?}: {err}"
            );
        }
        // The genesis walk with a block trusted: refused too.
        let out = verify("genesis.proof", &["--trust", &self.trust]);
        assert_eq!(out.status.code(), Some(1), "{out:?}");
        self.verify_trace();
    }

    /// `proof verify --trace`: the bundle with the provider's opening is about the trace
    /// the provider submitted, step by step by name; the corrected trace, a bundle
    /// without an opening and an opening whose salts were swapped are each refused.
    fn verify_trace(&self) {
        let dir = self.dir.path();
        let verify = |file: &str, trace: &str, extra: &[&str]| {
            let mut args = vec![
                "proof",
                "verify",
                file,
                "--genesis",
                "genesis.json",
                "--trace",
                trace,
            ];
            args.extend(extra);
            offline(dir, &args)
        };
        let out = verify("opened.proof", "trace.txt", &["--json"]);
        assert!(out.status.success(), "{out:?}");
        let v: Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(v["trace"]["cut"], "decomposer", "{v}");
        let steps = v["trace"]["steps"].as_array().unwrap();
        let of = |step: &str| {
            steps
                .iter()
                .find(|s| s["step"] == step)
                .map(|s| s["verdict"].as_str().unwrap().to_string())
        };
        assert_eq!(of("O2").as_deref(), Some("invalid"), "{v}");
        assert_eq!(of("O3").as_deref(), Some("propagated"), "{v}");
        assert!(
            steps
                .iter()
                .any(|s| s["step"] == "F1" && s["left_out"] == true),
            "{v}"
        );
        let out = verify("opened.proof", "trace.txt", &[]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            text.contains("trace       trace.txt: the outcome is about it")
                && text.contains("O2 Invalid"),
            "{text}"
        );
        // The same problem worked correctly is another trace: this FAIL is not its.
        let out = verify("opened.proof", "other.txt", &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("proof REJECTED: not about this trace: "),
            "{err}"
        );
        // Nothing ties a bundle without an opening to any trace.
        let out = verify("genesis.proof", "trace.txt", &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains("carries no opening"), "{err}");
        // An opening edited after export (two salts swapped): not the mapping the
        // provider revealed on chain.
        let mut b: Value =
            serde_json::from_slice(&std::fs::read(dir.join("opened.proof")).unwrap()).unwrap();
        let mapping = b["opening"]["mapping"].as_array_mut().unwrap();
        assert!(mapping.len() >= 2, "{mapping:?}");
        let salt0 = mapping[0]["salt"].clone();
        mapping[0]["salt"] = mapping[1]["salt"].clone();
        mapping[1]["salt"] = salt0;
        std::fs::write(dir.join("swapped.proof"), b.to_string()).unwrap();
        let out = verify("swapped.proof", "trace.txt", &[]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(
            err.contains("not the mapping the provider revealed on chain"),
            "{err}"
        );
    }
}

/// Every revealed vote of the decided session `s` carries a reason (its Computer seat's
/// checker's), and each is shown under its segment by `query --segments` (seat short id,
/// vote, reason) and on the session page of a node that did not open it (escaped).
fn each_vote_shows_its_reason(net: &Network, session: &str, s: &Value) {
    let out = Command::new(bin())
        .args(["query", session, "--segments", "--api", &net.nodes[1].api])
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    println!("trust-node query {session} --segments:\n{text}");
    let (_, page) = net
        .raw(2, "GET", &format!("/sessions/{session}"), b"")
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_string(), b.to_string()))
        .expect("an HTTP reply");
    let segments = s["outcome"]["segments"].as_array().unwrap();
    let mut votes = 0;
    for (i, seg) in segments.iter().enumerate() {
        for v in seg["votes_cast"].as_array().unwrap() {
            votes += 1;
            let (seat, vote) = (v["seat"].as_str().unwrap(), v["vote"].as_str().unwrap());
            let reason = v["reason"].as_str().unwrap();
            assert!(
                !reason.is_empty(),
                "segment {i}: a vote without a reason: {v}"
            );
            // The JSON spells votes in snake_case; the CLI shows them capitalised.
            let shown = vote
                .get(..1)
                .map(|c| c.to_uppercase() + &vote[1..])
                .unwrap_or_default();
            let line = format!("vote {}… {shown:<10}", &seat[..12]);
            assert!(
                text.lines()
                    .any(|l| l.contains(&line) && l.trim_end().ends_with(reason.trim_end())),
                "segment {i}: no line {line:?} ending with {reason:?} in\n{text}"
            );
            assert!(
                page.contains(&escape(reason)),
                "segment {i}: reason {reason:?} not on the page"
            );
        }
    }
    assert!(votes >= 3, "too few votes revealed: {s}");
    // The wrong step's seats say what is wrong with it.
    assert!(text.contains("Invalid"), "{text}");
}

/// HTML-escapes as the pages do.
fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

/// `trust-node query SESSION --verify` against node 1's API with node 2's genesis file;
/// its output, once it succeeded.
fn verified(net: &Network, session: &str) -> String {
    let out = Command::new(bin())
        .args(["query", session, "--verify", "--api", &net.nodes[1].api])
        .arg("--home")
        .arg(&net.nodes[2].home)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The README's main job as a user runs it: `trust-node submit TRACE --wait`. The correct
/// chain's setup step `So x / (3x − 7) = 2/5` cannot be derived by the checkers: its seats
/// abstain; `The denominator is 3x − 7` and the final answer are claims in words, for the
/// LLM tier this network lacks. Nothing failed, and nobody judged the conclusion:
/// INCONCLUSIVE, saying why.
#[test]
fn a_correct_chain_with_unreadable_setup_steps_is_inconclusive_and_its_abstainers_keep_their_stake()
{
    let net = Network::running(4);
    let trace = format!(
        "{}/../examples/traces/fraction-correct.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = cli_submit(&net, &[&trace, "--wait", "--timeout-secs", "120"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}\n{}",
        String::from_utf8_lossy(&out.stderr),
        net.logs_tail()
    );
    // Progress, then the outcome with the provider's own names for the segments.
    assert!(text.contains("seats drawn"), "{text}");
    assert!(text.contains("verdict     INCONCLUSIVE: "), "{text}");
    assert!(text.contains(" O2 ") && text.contains(" O4 "), "{text}");
    assert!(
        text.contains("why         conclusion not judged (F1: no LLM auditors on the network)"),
        "{text}"
    );
    let session = text
        .lines()
        .find_map(|l| l.strip_prefix("session     "))
        .unwrap()
        .to_string();
    let s = outcome(&net, &session);
    let o = &s["outcome"];
    assert_eq!(o["trace"], "inconclusive", "{s}");
    // The provider's honeypots (known errors, left out of the trace) aside.
    let all = o["segments"].as_array().unwrap();
    let segs: Vec<Value> = all
        .iter()
        .filter(|v| v["honeypot"].is_null())
        .cloned()
        .collect();
    assert!(
        segs.len() < all.len(),
        "a honeypot was planted and opened: {s}"
    );
    assert!(
        segs.iter()
            .all(|v| v["verdict"] == "valid" || v["verdict"] == "undecided"),
        "a correct step was failed: {s}"
    );
    assert!(
        segs.iter().filter(|v| v["verdict"] == "valid").count() >= 3,
        "{s}"
    );
    // The unreadable steps' seats committed and revealed abstentions: present, so never
    // no-shows.
    let abstained: Vec<&Value> = segs
        .iter()
        .filter(|v| v["votes"]["abstained"].as_u64().unwrap_or(0) > 0)
        .collect();
    assert!(!abstained.is_empty(), "{s}");
    assert!(abstained.iter().all(|v| v["votes"]["missing"] == 0), "{s}");
    // Coverage counts claims: a calculation checked for a STEP is evidence, not a claim.
    assert_eq!(
        o["coverage"]["judged"],
        segs.iter()
            .filter(|v| v["verdict"] == "valid" && v["supports"].is_null())
            .count()
    );
    // Nobody was slashed, and every seat that abstained has it on record.
    let mut abstentions = 0;
    for i in 1..4 {
        let id = net.keys(i).account_id();
        let a = net.get(0, &format!("/v1/auditors/{id}")).unwrap();
        assert_eq!(a["slashed"], 0, "node {i} was slashed: {a}");
        abstentions += a["abstentions"].as_u64().unwrap();
    }
    assert!(abstentions >= 3, "abstentions on record: {abstentions}");
    // Every seat committed (abstentions included), so the commit window closed early:
    // the session took far fewer blocks than the windows allow.
    let blocks = o["decided_at"].as_u64().unwrap() - o["opened_at"].as_u64().unwrap();
    println!("session decided in {blocks} blocks");
    assert!(blocks <= 10, "the session took {blocks} blocks");
}

/// `trust-node check` is a preview of exactly this: a network of Computer seats. On every
/// sample trace, the network's verdicts per segment (left-out ones included) and its trace
/// verdict equal the preview's.
#[test]
fn check_and_the_network_agree_on_every_sample_trace() {
    let net = Network::running(4);
    let dir = format!("{}/../examples/traces", env!("CARGO_MANIFEST_DIR"));
    let mut traces: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    traces.sort();
    assert!(traces.len() >= 4, "{traces:?}");
    let mut sessions = Vec::new();
    for t in &traces {
        let r = net
            .post_json(
                0,
                "/v1/sessions",
                &serde_json::json!({"trace": std::fs::read_to_string(format!("{dir}/{t}")).unwrap()}),
            )
            .unwrap_or_else(|e| panic!("{t}: {e}"));
        sessions.push((t.clone(), r));
    }
    for (t, r) in &sessions {
        let out = Command::new(bin())
            .args(["check", "--json", &format!("{dir}/{t}")])
            .output()
            .unwrap();
        let preview: Value = serde_json::from_slice(&out.stdout).unwrap();
        let expected = |id: &str| -> String {
            preview["segments"]
                .as_array()
                .unwrap()
                .iter()
                .find(|s| s["id"] == id)
                .unwrap_or_else(|| panic!("{t}: {id} not in the preview"))["final"]
                .as_str()
                .unwrap()
                .to_string()
        };
        let s = outcome(&net, r["session"].as_str().unwrap());
        let o = &s["outcome"];
        let audited = r["segments"].as_array().unwrap();
        for (i, seg) in audited.iter().enumerate() {
            let id = seg[0].as_str().unwrap();
            if id.starts_with("honeypot:") {
                // Not part of the trace; an honest seat rejects it.
                assert!(
                    !o["segments"][i]["honeypot"].is_null(),
                    "{t}: {id} not opened"
                );
                assert_ne!(o["segments"][i]["verdict"], "valid", "{t}: {id}");
                continue;
            }
            assert_eq!(
                o["segments"][i]["verdict"].as_str().unwrap(),
                expected(id),
                "{t}: segment {id}\n{s}\n{preview}"
            );
        }
        for (i, seg) in r["left_out"].as_array().unwrap().iter().enumerate() {
            let id = seg[0].as_str().unwrap();
            assert_eq!(
                o["left_out"][i]["verdict"].as_str().unwrap(),
                expected(id),
                "{t}: left-out {id}\n{s}"
            );
        }
        assert_eq!(o["trace"], preview["trace"], "{t}: {s}\n{preview}");
        assert_eq!(o["coverage"]["judged"], preview["judged"], "{t}");
        assert_eq!(o["coverage"]["segments"], preview["total"], "{t}");
        assert_eq!(
            s["explanation"].is_null(),
            preview["why_not_pass"].is_null(),
            "{t}"
        );
        let names: Vec<String> = audited
            .iter()
            .map(|x| x[0].as_str().unwrap().to_string())
            .collect();
        match t.as_str() {
            // A word problem whose every line is a right calculation: the calculations
            // are Valid, the claims around them and the answer are for the LLM tier, left
            // out here. Nobody judged what the numbers mean: INCONCLUSIVE, not PASS.
            "bakery-correct.txt" => {
                assert_eq!(o["trace"], "inconclusive", "{s}");
                for op in ["O1", "O2", "O3", "O4", "O5"] {
                    assert_eq!(verdict(&s, &names, op), "valid", "{op}: {s}");
                    let i = names.iter().position(|n| n == op).unwrap();
                    assert!(
                        o["segments"][i]["supports"].is_u64(),
                        "{op} checks a STEP: {s}"
                    );
                }
                for step in ["ST1", "ST2", "ST3", "ST4", "ST5", "F1"] {
                    assert_eq!(left_out_verdict(&s, r, step), "undecided", "{step}: {s}");
                }
                let why = s["explanation"].as_str().unwrap();
                assert!(
                    why.contains("conclusion not judged")
                        && why.contains("5 of 5 calculations hold"),
                    "{why}"
                );
            }
            // The same trace with one wrong calculation: its STEP is wrong, the error
            // reaches the answer.
            "bakery-wrong.txt" => {
                assert_eq!(verdict(&s, &names, "O1"), "invalid", "{s}");
                assert_eq!(left_out_verdict(&s, r, "ST1"), "invalid", "{s}");
                assert_eq!(left_out_verdict(&s, r, "F1"), "propagated", "{s}");
                assert_eq!(o["trace"], "fail", "{s}");
            }
            // Pure derivations whose every claim, the answer included, the Computer tier
            // covers: PASS.
            // Formal proofs (issue 40), one Computer segment per primitive step plus
            // the structure: the correct ones PASS, the wrong one FAILs at the step the
            // proof checker names, and the steps resting on it with it.
            "equation-correct.txt"
            | "rules-correct.txt"
            | "proof-ndl-correct.txt"
            | "proof-equational-correct.txt" => {
                assert_eq!(o["trace"], "pass", "{t}: {s}");
                assert_eq!(o["conclusion_sound"], true, "{t}: {s}");
                assert!(s["explanation"].is_null(), "{s}");
            }
            // A wrong rule application is Invalid, and so is the answer it led to.
            "proof-ndl-wrong.txt" => {
                assert_eq!(verdict(&s, &names, "P4"), "invalid", "{s}");
                assert_eq!(verdict(&s, &names, "P5"), "propagated", "{s}");
                for ok in ["P1", "P2", "P3", "F1"] {
                    assert_eq!(verdict(&s, &names, ok), "valid", "{ok}: {s}");
                }
                assert_eq!(o["trace"], "fail", "{s}");
            }
            "rules-wrong.txt" => {
                assert_eq!(verdict(&s, &names, "ST2"), "invalid", "{s}");
                assert_eq!(o["trace"], "fail", "{s}");
            }
            _ => {}
        }
    }
}

/// A network with Computer auditors and one person, no LLM auditor: the bakery problem's
/// claims in words go to the Human tier (its seats drawn from the person's node), its
/// calculations to the Computer tier, and nothing is left out for want of LLM auditors.
#[test]
fn without_llm_auditors_the_claims_in_words_go_to_the_human_tier() {
    let mut net = Network::with_tiers(4, None, 1, &[]);
    net.start_all();
    net.wait_running();
    let (r, _) = submit(&net, "bakery-correct.txt");
    let session = r["session"].as_str().unwrap().to_string();
    let tiers: Vec<&str> = r["segments"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s[1].as_str().unwrap())
        .collect();
    assert!(tiers.contains(&"human"), "no claim for people: {r}");
    assert!(tiers.contains(&"computer"), "no calculation: {r}");
    assert!(!tiers.contains(&"llm"), "{r}");
    let left_out_llm = r["left_out"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|l| l[1] == "llm")
        .count();
    assert_eq!(
        left_out_llm, 0,
        "claims left out for want of LLM auditors: {r}"
    );
    // The person's node holds the Human seats.
    let person = net.keys(4).account_id().to_string();
    let path = format!("/v1/events?session={session}&kind=seat_drawn&after=0&follow=false");
    let mut last = String::new();
    net.wait_for("a Human seat drawn to the person's node", |n| {
        last = n.raw(0, "GET", &path, b"");
        last.lines()
            .any(|l| l.contains(&person) && l.contains("\"tier\":\"human\""))
    });
    assert!(!last.contains("\"tier\":\"llm\""), "{last}");
}
