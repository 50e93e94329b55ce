//! One chain: four validators order one chain from transactions sent to any node, a
//! killed validator is not needed and catches up, a late node syncs from height one, no
//! announced block is ever lost to a kill, and the CLI talks to a running network.

use crate::fixtures::{bin, network::Network};

#[test]
fn four_validators_order_one_chain_and_include_a_tx_sent_to_any_node() {
    let mut net = Network::new(4);
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 2);
    }

    // A transfer sent to node 2 is gossiped, proposed by whoever's turn it is, included.
    let to = net.keys(1);
    let tx = net.transfer(0, 2, &to, 1234);
    let id = tx.id().to_string();
    let before = net
        .get(3, &format!("/v1/accounts/{}", to.account_id()))
        .unwrap()["balance"]
        .as_u64()
        .unwrap();
    net.send_tx(2, &tx).expect("node 2 admits the transfer");
    net.wait_for("the transfer to be included on every node", |n| {
        (0..4).all(|i| {
            n.get(i, &format!("/v1/tx/{id}"))
                .is_ok_and(|v| v["status"] == "included")
        })
    });
    let at = net.get(0, &format!("/v1/tx/{id}")).unwrap()["height"]
        .as_u64()
        .unwrap();
    for i in 0..4 {
        net.wait_height(i, at);
    }
    let after = net
        .get(3, &format!("/v1/accounts/{}", to.account_id()))
        .unwrap()["balance"]
        .as_u64()
        .unwrap();
    assert_eq!(after, before + 1234);
    net.assert_same_chain(&[0, 1, 2, 3], at);

    // A replay of the included transaction is refused and changes nothing.
    let nonce_before = net
        .get(0, &format!("/v1/accounts/{}", net.keys(0).account_id()))
        .unwrap()["nonce"]
        .clone();
    match net.send_tx(1, &tx) {
        Err(trust_node::api::client::ClientError::Api {
            status,
            code,
            message,
        }) => {
            assert_eq!(status, 422);
            assert_eq!(code, "rejected");
            assert!(message.contains("stale nonce"), "{message}");
        }
        other => panic!("replay was not refused: {other:?}"),
    }
    // A garbage body and a forged signature are refused with a JSON error and counted.
    let garbage = net.rt_post_raw(0, b"\x00\x01not a transaction");
    assert!(garbage.contains("400"), "{garbage}");
    let mut forged = net.transfer(0, 0, &to, 5);
    forged.signature.0[0] ^= 1;
    assert!(matches!(
        net.send_tx(0, &forged),
        Err(trust_node::api::client::ClientError::Api { .. })
    ));
    // Node 0 learns its three peers' heights over the request-response sync protocol.
    net.wait_for("node0 to know its peers' heights", |n| {
        n.get(0, "/v1/status").is_ok_and(|s| {
            s["peer_heights"]
                .as_array()
                .is_some_and(|a| a.len() == 3 && a.iter().all(|p| p["height"].as_u64() >= Some(at)))
        })
    });
    let metrics = net.metrics(0);
    assert!(
        metric(&metrics, "trust_api_bad_requests_total") >= 1.0,
        "{metrics}"
    );
    assert!(
        metric(&metrics, "trust_api_txs_rejected_total") >= 1.0,
        "{metrics}"
    );
    assert!(
        metric(&metrics, "trust_blocks_committed_total") >= 2.0,
        "{metrics}"
    );
    // Every validator applied decided blocks from its own earlier execution of them
    // (proposed or validated on the same tip) rather than executing them twice, and the
    // chains above agree block by block, state roots included.
    for i in 0..4 {
        assert!(
            net.counter(i, "trust_executions_reused_total") >= 1,
            "node{i}: {}",
            net.metrics(i)
        );
    }
    let nonce_after = net
        .get(0, &format!("/v1/accounts/{}", net.keys(0).account_id()))
        .unwrap()["nonce"]
        .clone();
    assert_eq!(
        nonce_before, nonce_after,
        "refused transactions moved the nonce"
    );
}

#[test]
fn the_cli_talks_to_a_running_network() {
    let net = Network::running(4);
    let cli = |args: &[&str]| {
        std::process::Command::new(bin())
            .args(args)
            .output()
            .expect("run trust-node")
    };
    // status --json is the API's answer.
    let out = cli(&["status", "--api", &net.nodes[0].api, "--json"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let s: serde_json::Value = serde_json::from_slice(&out.stdout).expect("status JSON");
    assert_eq!(s["validator"], true);
    assert!(s["height"].as_u64().unwrap() >= 1);

    // auditor register on node1's home, sent to node2: node1 is a genesis auditor, so only
    // the bond is sent; every node then sees the larger stake.
    let home1 = net.nodes[1].home.to_str().unwrap().to_string();
    let out = cli(&[
        "auditor",
        "register",
        "--tier",
        "computer",
        "--stake",
        "500",
        "--home",
        &home1,
        "--api",
        &net.nodes[2].api,
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let who = net.keys(1).account_id();
    net.wait_for("the bond to land on node3", |n| {
        n.get(3, &format!("/v1/auditors/{who}"))
            .is_ok_and(|a| a["stake"].as_u64() == Some(10_500))
    });
    // Another tier than the registered one is refused before anything is sent.
    let out = cli(&[
        "auditor",
        "register",
        "--tier",
        "llm",
        "--stake",
        "5",
        "--home",
        &home1,
        "--api",
        &net.nodes[2].api,
    ]);
    assert_eq!(out.status.code(), Some(2));

    // query: an unknown session is a clear error with exit code 2; a malformed id too.
    let out = cli(&["query", &"ab".repeat(32), "--api", &net.nodes[0].api]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no session"));
    let out = cli(&["query", "xyz", "--api", &net.nodes[0].api]);
    assert_eq!(out.status.code(), Some(2));
    // A node that is not running: exit 1 with a hint.
    let out = cli(&["status", "--api", "127.0.0.1:9"]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("is `trust-node run` up?"));
}

#[test]
fn a_killed_validator_is_not_needed_and_catches_up_after_restart() {
    let mut net = Network::new(4);
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 2);
    }
    net.kill(3);
    let h0 = net.height(0).unwrap();
    // Three of four equal-stake validators hold more than 2/3 of the power.
    net.wait_height(0, h0 + 3);
    net.wait_height(1, h0 + 3);
    net.start(3);
    let target = net.height(0).unwrap();
    net.wait_height(3, target);
    net.assert_same_chain(&[0, 1, 3], target);
    let s0 = net.block(0, target).1;
    let s3 = net.block(3, target).1;
    assert_eq!(s0, s3, "state roots differ after catch-up");
}

#[test]
fn a_node_that_starts_late_syncs_from_height_one() {
    let mut net = Network::new(4);
    for i in 0..3 {
        net.start(i);
    }
    net.wait_height(0, 4);
    assert_eq!(net.height(3), None, "node3 is not running yet");
    net.start(3);
    net.wait_height(3, 4);
    net.assert_same_chain(&[0, 3], 4);
}

#[test]
fn killing_a_node_during_block_production_never_loses_an_announced_block() {
    let mut net = Network::new(4);
    net.start_all();
    net.wait_height(1, 1);
    let mut announced_max = 0;
    for round in 0..4 {
        // Up again (restored from its own ledger) and committing new blocks: the kill lands
        // while blocks are being produced, not while the process is still starting.
        net.wait_for("node1 to answer", |n| n.height(1).is_some());
        let seen = net.height(1).unwrap();
        net.wait_height(1, seen + 1 + (round % 2));
        let announced = net.height(1).unwrap();
        announced_max = announced_max.max(announced);
        net.kill(1);
        let (ok, out) = net.verify_ledger(1);
        assert!(ok, "ledger verify failed after kill {round}: {out}");
        let blocks: u64 = out
            .split_whitespace()
            .nth(2)
            .and_then(|n| n.parse().ok())
            .unwrap_or_else(|| panic!("unexpected verify output: {out}"));
        assert!(
            blocks >= announced,
            "node1 announced height {announced} but its ledger holds {blocks} blocks"
        );
        net.start(1);
    }
    for i in 0..4 {
        net.wait_height(i, announced_max);
    }
    net.assert_same_chain(&[0, 1, 2, 3], announced_max);
}

fn metric(text: &str, name: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
        .unwrap_or(-1.0)
}

/// `[ledger] keep_blocks`: node 3 keeps its last 100 blocks, with a snapshot every 20.
/// Past block 140 its oldest block is a snapshot's, above 1: `status` says so, a block it
/// holds is served and one below is named as pruned, and it keeps up with the chain. A
/// restart restores it from its base, and `ledger verify` passes from the snapshot there.
/// The other nodes keep every block.
#[test]
fn a_pruning_node_keeps_its_last_blocks_and_says_what_it_pruned() {
    let mut net = Network::new(4).block_time(100);
    net.set_config(3, "ledger.snapshot_every", "20");
    net.configure(3, "[ledger]\nkeep_blocks = 100\n");
    net.start_all();
    net.wait_height(3, 150);
    let s = net.get(3, "/v1/status").unwrap();
    let oldest = s["oldest_block"].as_u64().unwrap();
    assert!(oldest >= 40 && oldest.is_multiple_of(20), "{s}");
    assert_eq!(net.get(0, "/v1/status").unwrap()["oldest_block"], 1);
    let metric: u64 = net
        .metrics(3)
        .lines()
        .find_map(|l| l.strip_prefix("trust_oldest_block "))
        .and_then(|v| v.trim().parse().ok())
        .expect("trust_oldest_block");
    assert!(
        metric >= oldest,
        "trust_oldest_block {metric}, status said {oldest}"
    );
    // The node prunes on (every 20 blocks, 2 s here): what it keeps is read near its tip.
    let e = net.get(3, "/v1/blocks/5").unwrap_err().to_string();
    assert!(
        e.contains("block 5 was pruned: this node keeps blocks from "),
        "{e}"
    );
    let near = s["height"].as_u64().unwrap() - 50;
    net.get(3, &format!("/v1/blocks/{near}")).unwrap();
    net.get(0, "/v1/blocks/5").unwrap();

    net.terminate(3);
    let (ok, out) = net.verify_ledger(3);
    assert!(ok, "{out}");
    assert!(out.contains("pruned: from block"), "{out}");
    net.start(3);
    let h = net.height(0).unwrap() + 5;
    net.wait_height(3, h);
    for height in h - 40..=h {
        assert_eq!(net.block(3, height), net.block(0, height), "block {height}");
    }
}

/// State sync: a fifth genesis validator that never ran joins a network past height 500
/// with `run --state-sync` (node 0's API). Past the genesis unbonding horizon it is refused
/// without a trusted block, and refused with a trusted block whose hash is not node 0's
/// block at that height; both times its ledger is left empty. With the block node 0's
/// `status` prints (state sync runs only on a ledger that holds no block: the refusals left
/// it empty), it fetches node 0's newest snapshot, checks it against its block and
/// the chain of headers up to the trusted block, starts its ledger there (nothing below is
/// downloaded: the block under its base is not held), catches up with the chain block for
/// block, votes as a seat in the next session, and after a stop `ledger verify` passes
/// from its snapshot.
#[test]
fn a_validator_that_never_ran_joins_past_height_500_by_state_sync_and_votes() {
    // Every fifth height's proposer is the absent node: those heights wait out a round.
    let mut net = Network::new(5)
        .block_time(60)
        .deadline(std::time::Duration::from_secs(300));
    for i in 0..4 {
        net.start(i);
    }
    net.wait_height(0, 500);
    let from = net.api(0);
    let run = |net: &Network, extra: &[&str]| {
        let mut args = vec![
            "run",
            "--block-time-ms",
            "60",
            "--state-sync",
            from.as_str(),
        ];
        args.extend_from_slice(extra);
        let out = net.cli(4, &args);
        assert_eq!(out.status.code(), Some(1));
        String::from_utf8_lossy(&out.stderr).into_owned()
    };
    let said = run(&net, &[]);
    assert!(said.contains("state sync needs a trusted block"), "{said}");
    // Told to trust a hash that is not node 0's block at that height, it refuses the
    // snapshot, installs nothing and exits 1.
    let trusted = net.trusted_block(0);
    let (at, _) = trusted.split_once(':').unwrap();
    let other = net
        .get(0, &format!("/v1/blocks/{}", at.parse::<u64>().unwrap() - 1))
        .unwrap();
    let wrong = format!("{at}:{}", other["hash"].as_str().unwrap());
    let said = run(&net, &["--state-sync-trust", &wrong]);
    assert!(said.contains("not the trusted block"), "{said}");
    net.start_with(4, &["--state-sync", &from, "--state-sync-trust", &trusted]);
    let h = net.height(0).unwrap();
    net.wait_height(4, h);
    let s = net.get(4, "/v1/status").unwrap();
    let base = s["oldest_block"].as_u64().unwrap();
    assert!(base >= 400 && base.is_multiple_of(100), "{s}");
    let e = net.get(4, &format!("/v1/blocks/{}", base - 1)).unwrap_err();
    assert!(e.to_string().contains("pruned"), "{e}");
    for height in [base, base + 1, h] {
        assert_eq!(net.block(4, height), net.block(0, height), "block {height}");
    }
    let log = net.log(4);
    assert!(
        log.contains("state sync: snapshot checked"),
        "{}",
        net.logs_tail()
    );

    // It judges: a session of 20 Computer segments, 3 seats each, among the four auditors
    // that are not the provider. At 60 ms a block the network's own windows last well
    // under a second, which a node that has just caught up may not meet on a loaded
    // machine (its seats would then abstain, "still reading"); the session asks for
    // windows of some seconds, so that the vote the test looks for is the node's own.
    let (trace, hdag) = trust_node::cli::bench_network::session_trace(0, 20);
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
    let session = r["session"].as_str().unwrap().to_string();
    net.wait_for("the session to be decided", |n| {
        n.get(4, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(4, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    let me = net.keys(4).account_id().to_hex();
    let mine = s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["votes_cast"].as_array().cloned().unwrap_or_default())
        .filter(|v| {
            v["seat"] == me.as_str()
                && v["vote"]
                    .as_str()
                    .is_some_and(|x| !x.eq_ignore_ascii_case("abstain"))
        })
        .count();
    assert!(mine > 0, "node 4 cast no vote: {s}");

    net.terminate(4);
    let (ok, out) = net.verify_ledger(4);
    assert!(ok, "{out}");
    assert!(out.contains(&format!("pruned: from block {base}")), "{out}");
}
