//! A newcomer's path, as docs/operators.md walks it: a node from another home joins a
//! running network by state sync, is funded with `transfer`, sees it with `account`,
//! registers and bonds as an auditor and is drawn; and the network `testnet init --nodes 4`
//! makes keeps staffing default sessions while one auditor is paused for an upgrade.

use std::time::Duration;

use crate::fixtures::{network::Network, repo};

/// `trust-node ARGS` from no home in particular; its output.
fn trust_node(args: &[&str]) -> std::process::Output {
    let out = std::process::Command::new(crate::fixtures::bin())
        .args(args)
        .env_remove("TRUST_HOME")
        .env_remove("TRUST_API")
        .output()
        .expect("run trust-node");
    println!(
        "$ trust-node {}\n{}{}",
        args.join(" "),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// From a second home on the same machine: `init --genesis` with the bootstrap peers
/// `testnet init` prints, `run --state-sync` (refused past the genesis unbonding horizon,
/// naming `--state-sync-trust`; then with the block node 0's `status` prints as the
/// trusted one), then the account's life as an auditor. Before
/// it is funded, `auditor register` and `auditor status` say to `transfer` to it (not
/// "register it", a loop); a first transfer below the genesis `min_new_account` is refused
/// naming that figure; after `transfer`, `account` shows the balance; `auditor register`
/// says from which block it is drawn; `auditor bond` adds stake; and it then holds seats in
/// a session node 0 opens, and votes on them.
#[test]
fn a_node_from_another_home_joins_by_state_sync_is_funded_registers_and_is_drawn() {
    let mut net = Network::new(4)
        .block_time(60)
        .deadline(Duration::from_secs(300));
    net.start_all();
    net.wait_running();
    // A session decided before the snapshot the newcomer will start from.
    let (trace, hdag) = trust_node::cli::bench_network::session_trace(0, 3);
    let early = net
        .post_json(
            0,
            "/v1/sessions",
            &serde_json::json!({
                "trace": trace,
                "hdag": hdag,
                "session": { "commit_window": 30, "reveal_window": 20 },
            }),
        )
        .expect("node 0 opens a session");
    let early = early["session"].as_str().expect("session id").to_string();
    net.wait_for("the early session to be decided", |n| {
        n.get(0, &format!("/v1/sessions/{early}"))
            .is_ok_and(|s| s["status"] == "decided")
    });
    // A snapshot below the tip (one every 100 blocks) for the newcomer to start from.
    net.wait_height(0, 105);
    net.wait_for("node 0 to serve a snapshot", |n| {
        n.get(0, "/v1/snapshot").is_ok()
    });

    let root = net.nodes[0].home.parent().expect("homes").to_path_buf();
    let home = root.join("newcomer");
    let base = net.base_port_of(4);
    // `testnet init` names node 0's two swarm addresses in its `join another node:` line;
    // node 1's config lists the same addresses first.
    let node1 = trust_node::config::load_config(&net.nodes[1].home).expect("node1 config");
    let node0_p2p = node1.network.bootstrap[0].clone();
    let node0_consensus = node1.consensus.bootstrap[0].clone();
    let genesis = net.nodes[0].home.join("genesis.json");
    let out = trust_node(&[
        "init",
        "--home",
        home.to_str().expect("utf-8 path"),
        "--genesis",
        genesis.to_str().expect("utf-8 path"),
        "--base-port",
        &base.to_string(),
        "--bootstrap",
        &node0_p2p,
        "--consensus-bootstrap",
        &node0_consensus,
    ]);
    assert!(out.status.success());
    let said = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        said.contains("--state-sync"),
        "init names the next step: {said}"
    );
    let j = net.adopt(home, format!("127.0.0.1:{}", base + 2));
    let from = net.api(0);
    // The snapshot lies past the genesis unbonding horizon (block 20, the default
    // `unbond_delay`): without a trusted block the node refuses it, installs nothing, and
    // names the flag and the command that prints a block to trust.
    let out = net.cli(j, &["run", "--block-time-ms", "60", "--state-sync", &from]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{said}");
    assert!(
        said.contains("state sync needs a trusted block")
            && said.contains("past the genesis unbonding horizon (block 20")
            && said.contains("--state-sync-trust HEIGHT:HASH")
            && said.contains("`trust-node status --api HOST:PORT`"),
        "{said}"
    );
    // As the guide says: node 0's `status` gives the block to trust.
    let trusted = net.trusted_block(0);
    net.start_with(j, &["--state-sync", &from, "--state-sync-trust", &trusted]);
    let h = net.height(0).expect("node 0 answers");
    net.wait_height(j, h);
    let s = net.get(j, "/v1/status").expect("status");
    let base = s["oldest_block"].as_u64().unwrap_or(0);
    assert!(base >= 100, "it started from a snapshot: {s}");

    // The session decided below its base: `query` names the deciding block from the
    // outcome (not `null`), and `--verify` says why it cannot prove it here (the ledger
    // starts at a snapshot), never blaming a `keep_blocks` nobody set.
    let v = net
        .get(j, &format!("/v1/sessions/{early}"))
        .expect("session");
    let decided_at = v["outcome"]["decided_at"].as_u64().expect("decided_at");
    assert!(decided_at < base, "{v}");
    assert_eq!(v["block_height"].as_u64(), Some(decided_at), "{v}");
    let text = net.cli_ok(j, &["query", &early]);
    assert!(
        text.contains(&format!(
            "decided at block {decided_at} (a block this node does not hold"
        )),
        "{text}"
    );
    assert!(!text.contains("null"), "{text}");
    // The short id the pages show stands for the whole when it starts one id only.
    let short = net.cli_ok(j, &["query", &early[..12]]);
    assert!(short.contains(&format!("session     {early}")), "{short}");
    let out = net.cli(j, &["query", &early[..5]]);
    assert_eq!(out.status.code(), Some(2), "too short to stand for an id");
    let out = net.cli(j, &["query", &early, "--verify"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("state sync") && !said.contains("keep_blocks"),
        "{said}"
    );

    let me = net.keys(j).account_id().to_hex();
    // Unfunded: every path says what to do next, and it is `transfer`.
    let refused = net.cli_failed(
        j,
        &[
            "auditor", "register", "--tier", "computer", "--stake", "100",
        ],
    );
    assert!(
        refused.contains("no account") && refused.contains(&format!("trust-node transfer {me}")),
        "{refused}"
    );
    assert!(!refused.contains("HTTP 404"), "{refused}");
    let status = net.cli_failed(j, &["auditor", "status"]);
    assert!(
        status.contains("trust-node transfer")
            && !status.contains("`trust-node auditor register` registers it"),
        "{status}"
    );
    let account = net.cli_failed(j, &["account"]);
    assert!(account.contains("trust-node transfer"), "{account}");

    // A first transfer below the network's minimum for a new account is refused before
    // anything is signed, naming the genesis figure.
    let params = trust_node::config::load_genesis(&net.nodes[0].home)
        .expect("genesis")
        .genesis
        .params;
    let min = params.min_new_account;
    let short = (min - 1).to_string();
    let out = net.cli(1, &["transfer", &me, &short]);
    assert_eq!(
        out.status.code(),
        Some(4),
        "a refusal by the network's rule"
    );
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains(&format!("at least {min}")) && why.contains("min_new_account"),
        "{why}"
    );

    // Funded from node 1: the newcomer sees the funds.
    let sent = net.cli_ok(1, &["transfer", &me, "100000"]);
    assert!(sent.contains("(a new account)"), "{sent}");
    // The newcomer's node shows it once it holds the block node 1 saw include it.
    let h = net.height(1).expect("node 1 answers");
    net.wait_height(j, h);
    let shown = net.cli_ok(j, &["account"]);
    assert!(shown.contains("balance     100000 TRUST"), "{shown}");
    let status = net.cli_failed(j, &["auditor", "status"]);
    assert!(
        status.contains("balance is 100000") && status.contains("auditor register"),
        "{status}"
    );

    // Registered: the line says from which block its draws begin; then it bonds more.
    let reg = net.cli_ok(
        j,
        &[
            "auditor", "register", "--tier", "computer", "--stake", "40000",
        ],
    );
    let number_after = |text: &str, words: &str| -> u64 {
        text.split(words)
            .nth(1)
            .and_then(|r| r.split(|c: char| !c.is_ascii_digit()).next())
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("no {words:?} in {text}"))
    };
    let at = number_after(&reg, "at block #");
    let from = number_after(&reg, "drawn for new seats from block #");
    assert!(from > at, "{reg}");
    let bonded = net.cli_ok(j, &["auditor", "bond", "10000"]);
    assert!(bonded.contains("stake now 50000 TRUST"), "{bonded}");
    let shown = net.cli_ok(j, &["account"]);
    assert!(
        shown.contains("balance     50000 TRUST") && shown.contains("stake       50000 TRUST"),
        "{shown}"
    );

    // From the block it named on, it is drawable (the network may keep a new registration
    // or bond out of draws for a while); the bond names its own block.
    let from = if bonded.contains("drawn for new seats from block #") {
        number_after(&bonded, "drawn for new seats from block #")
    } else {
        from
    };
    net.wait_for("the newcomer to be drawable", |n| {
        n.get(j, &format!("/v1/auditors/{me}"))
            .is_ok_and(|a| a["drawable"] == true)
    });
    let now = net.get(j, &format!("/v1/auditors/{me}")).expect("auditor")["height"]
        .as_u64()
        .unwrap_or(0);
    assert!(now + 1 >= from, "drawable at block {now}, before #{from}");

    // Drawn: node 0 opens a session of ten Computer segments, three seats each, among the
    // four auditors that are not the provider; the newcomer bonds more than any of them,
    // so it sits on some. Windows of some seconds, as for the state-synced validator of
    // `chain.rs`.
    let (trace, hdag) = trust_node::cli::bench_network::session_trace(0, 10);
    let r = net
        .post_json(
            0,
            "/v1/sessions",
            &serde_json::json!({
                "trace": trace,
                "hdag": hdag,
                "session": { "commit_window": 150, "reveal_window": 100 },
            }),
        )
        .expect("node 0 opens the session");
    let session = r["session"].as_str().expect("session id").to_string();
    net.wait_for("the session to be decided", |n| {
        n.get(j, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net
        .get(j, &format!("/v1/sessions/{session}"))
        .expect("session");
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    let votes = s["outcome"]["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .flat_map(|g| g["votes_cast"].as_array().cloned().unwrap_or_default())
        .filter(|v| {
            v["seat"] == me.as_str()
                && v["vote"]
                    .as_str()
                    .is_some_and(|x| !x.eq_ignore_ascii_case("abstain"))
        })
        .count();
    assert!(votes > 0, "the newcomer cast no vote: {s}");
}

/// The network `testnet init --nodes 4` makes, every home it made running: one auditor
/// (a validator) is paused and stopped as the upgrade guide says, and a default
/// `submit --wait` from node 0 still decides with k = 3 Computer seats.
#[test]
fn the_default_testnet_decides_a_default_submit_with_one_auditor_paused() {
    let mut net = Network::as_testnet_init_makes(4);
    assert!(
        net.nodes.len() > 4,
        "testnet init adds auditor-only homes beside the four validators"
    );
    net.start_all();
    net.wait_running();
    let paused = 3;
    let who = net.keys(paused).account_id().to_hex();
    let said = net.cli_ok(paused, &["auditor", "pause"]);
    assert!(said.contains("pausing at block"), "{said}");
    net.wait_for("the pause to count", |n| {
        n.get(0, &format!("/v1/auditors/{who}"))
            .is_ok_and(|a| a["paused"] == true && a["seats"].as_array().is_some_and(Vec::is_empty))
    });
    assert_eq!(net.terminate(paused).code(), Some(0));

    let trace = repo().join("examples/traces/fraction-correct.txt");
    let trace = trace.to_str().expect("utf-8 path");
    let out = net.cli_ok(0, &["submit", trace, "--wait", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["status"], "decided", "{v}");
    let seats = v["terms"]["seats"][0]
        .as_u64()
        .or_else(|| v["outcome"]["terms"]["seats"][0].as_u64());
    if let Some(k) = seats {
        assert!(k >= 3, "k stays at least 3: {v}");
    }
    let seated: Vec<String> = v["outcome"]["segments"]
        .as_array()
        .expect("segments")
        .iter()
        .flat_map(|g| g["votes_cast"].as_array().cloned().unwrap_or_default())
        .filter_map(|x| x["seat"].as_str().map(str::to_string))
        .collect();
    assert!(!seated.is_empty(), "{v}");
    assert!(
        !seated.contains(&who),
        "the paused auditor holds no seat: {v}"
    );
}
