//! An auditor node can stop and come back without being ruined: told to stop (SIGTERM)
//! in the middle of a session it drains, finishing the commits and reveals its seats owe
//! before it exits; told to stop at once, it still reveals after a restart within the
//! window; and `auditor pause` keeps it out of new draws while it is away.
//!
//! Six nodes on 300 ms blocks: node 0 provides, nodes 1 to 5 audit (Computer seats, three
//! a segment). Node 5 is a copy-cat (a test-only behaviour): it never commits a vote of
//! its own, so a session's commit window stays open its whole 40 blocks (12 s) instead of
//! closing as soon as every seat committed, and the node stopped is stopped with its
//! votes committed and its openings still owed.

use serde_json::Value;

use crate::fixtures::network::Network;

/// The auditor that is stopped and restarted.
const STOPPED: usize = 3;
/// The auditor that pauses.
const PAUSER: usize = 4;
/// The seat that never commits (so that commit windows run their length).
const SLOW: usize = 5;

/// Opens a session of `n` additions on node 0 with 40-block windows.
fn open(net: &Network, i: usize, n: usize) -> String {
    let (trace, hdag) = trust_node::cli::bench_network::session_trace(i, n);
    let r = net
        .post_json(
            0,
            "/v1/sessions",
            &serde_json::json!({
                "trace": trace,
                "hdag": hdag,
                "session": { "commit_window": 40, "reveal_window": 40 },
            }),
        )
        .unwrap_or_else(|e| panic!("node 0 opens session {i}: {e}\n{}", net.logs_tail()));
    r["session"].as_str().unwrap().to_string()
}

/// Node `i`'s auditor record, read on node 1.
fn auditor(net: &Network, i: usize) -> Value {
    let id = net.keys(i).account_id();
    net.get(1, &format!("/v1/auditors/{id}")).unwrap()
}

/// The seats node `i` holds in `session` (read on node 1), and how many of them committed.
fn seats_in(net: &Network, i: usize, session: &str) -> (usize, usize) {
    let a = auditor(net, i);
    let seats: Vec<&Value> = a["seats"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|x| x["session"] == session)
        .collect();
    let committed = seats.iter().filter(|x| x["committed"] == true).count();
    (seats.len(), committed)
}

/// Waits for `session` to be decided (read on node 1) and returns it.
fn decided(net: &Network, session: &str) -> Value {
    net.wait_for(&format!("session {session} to be decided"), |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    s
}

/// The votes node `i` revealed in a decided session.
fn votes_of(net: &Network, i: usize, s: &Value) -> usize {
    let me = net.keys(i).account_id().to_hex();
    s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|g| g["votes_cast"].as_array().cloned().unwrap_or_default())
        .filter(|v| v["seat"] == me.as_str())
        .count()
}

/// Waits until node `i` has committed every seat it holds in `session` (its commit window
/// still open, held so by the copy-cat): the moment a stop used to cost it its reveals.
/// Returns its seats.
fn wait_committed(net: &Network, i: usize, session: &str) -> usize {
    net.wait_for(&format!("node{i} to commit in {session}"), |n| {
        let (seats, committed) = seats_in(n, i, session);
        seats > 0 && committed == seats
    });
    let phase = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(phase["status"], "live", "{phase}");
    seats_in(net, i, session).0
}

#[test]
fn an_auditor_stopped_mid_session_and_restarted_loses_no_stake_and_a_paused_one_is_not_drawn() {
    let mut net = Network::new(6).block_time(300);
    net.set_behaviour(SLOW, "copy-cat");
    net.start_all();
    for i in 0..6 {
        net.wait_height(i, 1);
    }
    let before = auditor(&net, STOPPED);

    // 1. SIGTERM while its votes are committed and not revealed: it drains.
    let s1 = open(&net, 1, 12);
    let seats = wait_committed(&net, STOPPED, &s1);
    let status = net.terminate(STOPPED);
    assert!(status.success(), "exit {status:?}");
    let log = net.log(STOPPED);
    assert!(log.contains("shutdown: draining"), "{log}");
    assert!(log.contains("shutdown: drained"), "{log}");
    // Everything it owed is on chain before it went: its seats in s1 all revealed. It
    // waited for that on its own view; node 1, which the test reads, may be a block behind,
    // and only node 3 could reveal those votes.
    let revealed = |n: &Network| {
        auditor(n, STOPPED)["seats"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|x| x["session"] == s1.as_str())
            .all(|x| x["revealed"] == true)
    };
    net.wait_for("node 1 to hold node 3's reveals in s1", revealed);
    // The session decides while it is away, with every one of its votes: a stop without
    // the drain would have left them unrevealed.
    let s = decided(&net, &s1);
    assert_eq!(votes_of(&net, STOPPED, &s), seats, "{s}");
    net.start(STOPPED);

    // 2. Told to stop at once (no drain), restarted within the reveal window: it still
    // reveals after the restart.
    net.wait_height(STOPPED, net.height(1).unwrap());
    assert!(net.terminate(STOPPED).success());
    net.start_with(STOPPED, &["--drain-timeout", "0s"]);
    net.wait_height(STOPPED, net.height(1).unwrap());
    let s2 = open(&net, 2, 12);
    let seats = wait_committed(&net, STOPPED, &s2);
    assert!(net.terminate(STOPPED).success());
    assert!(
        net.log(STOPPED)
            .contains("shutdown: not draining (drain timeout 0)"),
        "{}",
        net.log(STOPPED)
    );
    let stopped_at = net.log(STOPPED).len();
    net.start(STOPPED);
    let s = decided(&net, &s2);
    // The openings went out from the restarted process.
    let log = net.log(STOPPED);
    let since = log.get(stopped_at..).unwrap_or("");
    assert!(
        since
            .lines()
            .any(|l| l.contains("revealed") && l.contains(&s2)),
        "no reveal after the restart:\n{since}"
    );
    assert_eq!(votes_of(&net, STOPPED, &s), seats, "{s}");

    // Neither stop cost it stake or reputation, and nothing was counted missed.
    let after = auditor(&net, STOPPED);
    assert_eq!(after["slashed"], 0, "{after}");
    assert_eq!(after["stake"], before["stake"], "{after}");
    assert!(
        after["reputation"].as_f64() >= before["reputation"].as_f64(),
        "reputation {} -> {}",
        before["reputation"],
        after["reputation"]
    );
    // `counter` reads a missing metric as 0: the line must be there for the 0 to mean
    // anything.
    assert!(
        net.metrics(STOPPED)
            .lines()
            .any(|l| l.starts_with("trust_auditor_missed_seats_total ")),
        "{}",
        net.metrics(STOPPED)
    );
    assert_eq!(net.counter(STOPPED, "trust_auditor_missed_seats_total"), 0);
    assert!(
        net.metrics(STOPPED).contains("trust_auditor_reputation"),
        "{}",
        net.metrics(STOPPED)
    );

    // Its history says the same, session by session, in every form (read on node 3,
    // which restarted and may be a block behind node 1).
    net.wait_for("node 3 to hold the decision of s2", |n| {
        n.get(STOPPED, &format!("/v1/sessions/{s2}"))
            .is_ok_and(|s| s["status"] == "decided")
    });
    let text = net.cli_ok(STOPPED, &["auditor", "history"]);
    for sid in [&s1, &s2] {
        let line = text
            .lines()
            .find(|l| l.starts_with(sid.as_str()))
            .unwrap_or_else(|| panic!("{sid} not in the history:\n{text}"));
        assert!(line.contains("decided"), "{line}");
    }
    assert!(
        text.contains("TRUST slashed (0 given back)") && text.contains(" 0 TRUST slashed"),
        "{text}"
    );
    let json: Value = serde_json::from_str(&net.cli_ok(STOPPED, &["auditor", "history", "--json"]))
        .expect("history --json is JSON");
    let one = json["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .find(|x| x["session"] == s1.as_str())
        .unwrap_or_else(|| panic!("{json}"));
    let votes = ["valid", "invalid", "ungrounded", "abstain"]
        .iter()
        .map(|k| one["votes"][k].as_u64().unwrap())
        .sum::<u64>();
    assert_eq!(
        one["seats"].as_u64(),
        Some(votes),
        "a vote for every seat: {one}"
    );
    assert_eq!(one["slashed"], 0, "{one}");
    let csv = net.cli_ok(STOPPED, &["auditor", "history", "--csv"]);
    assert!(
        csv.starts_with("session,first_block,last_block,status,verdict,seats,valid"),
        "{csv}"
    );
    assert!(
        csv.lines()
            .any(|l| l.starts_with(s2.as_str()) && l.contains(",decided,")),
        "{csv}"
    );
    let me = net.keys(STOPPED).account_id().to_hex();
    let page = net.raw(1, "GET", &format!("/auditors/{me}"), b"");
    assert!(
        page.contains("<h2>Sessions</h2>") && page.contains(&s1[..12]),
        "{page}"
    );
    // The feed read to the tip, then the command ends (it used to follow forever).
    let drawn = net.cli_ok(
        STOPPED,
        &[
            "watch",
            "--no-follow",
            "--account",
            "me",
            "--kind",
            "seat_drawn",
        ],
    );
    assert!(
        drawn.lines().count() >= seats && drawn.contains("seat drawn"),
        "{drawn}"
    );

    // 3. A pause counts only after the network's delay, then keeps it out of new draws;
    // the stop it prepares for costs nothing.
    let out = net.cli_ok(PAUSER, &["auditor", "pause"]);
    assert!(out.contains("pausing at block #"), "{out}");
    // Read on node 4: the CLI waited for it to hold the block (node 1 may be one behind).
    let own = format!("/v1/auditors/{}", net.keys(PAUSER).account_id());
    let record = net.get(PAUSER, &own).unwrap();
    let from = record["pending_pause"]["from"]
        .as_u64()
        .unwrap_or_else(|| panic!("no pending pause: {record}"));
    let again = net.cli_refused(PAUSER, &["auditor", "resume"]);
    assert!(again.contains("takes effect at block"), "{again}");
    net.wait_height(1, from);
    let a = auditor(&net, PAUSER);
    assert_eq!(
        (a["paused"].clone(), a["drawable"].clone()),
        (true.into(), false.into()),
        "{a}"
    );
    net.wait_height(PAUSER, from);
    let text = net.cli_ok(PAUSER, &["auditor", "status"]);
    assert!(text.contains("paused: not drawn for new seats"), "{text}");
    assert!(net.terminate(PAUSER).success());
    let s3 = open(&net, 3, 12);
    let s = decided(&net, &s3);
    assert_eq!(
        votes_of(&net, PAUSER, &s),
        0,
        "a paused auditor was drawn: {s}"
    );
    let me = net.keys(PAUSER).account_id().to_hex();
    assert!(
        !s.to_string().contains(&me),
        "a paused auditor was drawn: {s}"
    );
    assert_eq!(auditor(&net, PAUSER)["slashed"], 0);
}
