//! One auditor's life on a live network (issue 28, item 1), driven through the CLI as its
//! operator would: it registers and bonds, is seated and votes, then (restarted as a
//! withholder: it commits and never reveals) unbonds and exits while it holds a seat. It
//! gets no seat in later sessions, is slashed from its unbonding stake for the missed
//! reveal, cannot withdraw while seated, nor before those sessions are final, nor before
//! the unbonding frees (the error names the block), and withdraws once it has. At every stage `auditor status --json` is the
//! node's `GET /v1/auditors/{id}` answer.

use std::process::Output;

use serde_json::Value;

use crate::fixtures::network::Network;

/// Node 0 submits; nodes 1-3 are genesis Computer auditors; node 4 (a provider node in
/// the genesis: funded, not an auditor) is the auditor followed.
const ME: usize = 4;
/// Blocks between unbonding and withdrawal: long enough for the seated session to end
/// (commit, reveal and disclosure windows) and become final (its appeal window) before
/// the stake frees, short enough to wait.
const UNBOND_DELAY: u64 = 90;

fn cli(net: &Network, args: &[&str]) -> Output {
    net.cli(ME, args)
}

fn ok(net: &Network, args: &[&str]) -> String {
    net.cli_ok(ME, args)
}

/// A refused command: exit code 4 (refused by the network) and the reason on stderr.
fn refused(net: &Network, args: &[&str]) -> String {
    net.cli_refused(ME, args)
}

/// The auditor record on node 1's ledger.
fn record(net: &Network) -> Value {
    let id = net.keys(ME).account_id();
    net.get(1, &format!("/v1/auditors/{id}")).unwrap()
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

/// `auditor status --json` against node 4 is what `GET /v1/auditors/{id}` answers there
/// (asked again when a block landed in between); the agreed record.
fn status_agrees(net: &Network) -> Value {
    let id = net.keys(ME).account_id();
    let mut agreed = Value::Null;
    net.wait_for("auditor status --json to match the API", |n| {
        let out = cli(n, &["auditor", "status", "--json"]);
        assert!(out.status.success(), "auditor status failed");
        let mine: Value = serde_json::from_slice(&out.stdout).expect("status JSON");
        let api = n.get(ME, &format!("/v1/auditors/{id}")).unwrap();
        if mine == api {
            agreed = api;
            true
        } else {
            assert_ne!(mine["height"], api["height"], "{mine}\nvs\n{api}");
            false
        }
    });
    agreed
}

/// Opens a session on node 0 for a sample trace; its id.
fn submit(net: &Network, trace: &str) -> String {
    let text = std::fs::read_to_string(crate::fixtures::repo().join("examples/traces").join(trace))
        .unwrap();
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": text }))
        .unwrap_or_else(|e| panic!("{trace}: {e}"));
    r["session"].as_str().unwrap().to_string()
}

/// Waits until `session` ended on the followed node (whose record `status_agrees` reads,
/// so the scores of that block are in it); the session as that node shows it.
fn over(net: &Network, session: &str) -> Value {
    net.wait_for(&format!("session {session} to end"), |n| {
        n.get(ME, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    net.get(ME, &format!("/v1/sessions/{session}")).unwrap()
}

/// Waits until the seats of `session` are drawn; whether the auditor holds one.
fn seated(net: &Network, session: &str) -> bool {
    net.wait_for(&format!("seats of {session} to be drawn"), |n| {
        n.get(1, &format!("/v1/sessions/{session}")).is_ok_and(|s| {
            s["status"] != "live" || s["seats"]["assigned"].as_u64().is_some_and(|a| a > 0)
        })
    });
    record(net)["seats"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["session"] == session)
}

const TRACES: [&str; 4] = [
    "bakery-correct.txt",
    "fraction-correct.txt",
    "rules-correct.txt",
    "equation-correct.txt",
];

#[test]
fn an_auditor_registers_votes_exits_while_seated_is_slashed_and_withdraws() {
    let delay = UNBOND_DELAY.to_string();
    let mut net =
        Network::with_providers_and_args(4, 1, &["--unbond-delay", &delay, "--slash-always"]);
    net.start_all();
    net.wait_running();
    let me = net.keys(ME).account_id();

    // Register and bond: the genesis gave it 10 000 bonded and a balance.
    let out = ok(
        &net,
        &[
            "auditor",
            "register",
            "--tier",
            "computer",
            "--stake",
            "1000",
            "--expertise",
            "math",
        ],
    );
    assert!(out.contains("registered and bonded 1000 TRUST"), "{out}");
    let out = ok(&net, &["auditor", "bond", "500"]);
    assert!(out.contains("bonded 500 TRUST"), "{out}");
    let a = status_agrees(&net);
    assert_eq!(num(&a, "stake"), 11_500, "{a}");
    // A new registration is drawn only after its warm-up (issue 53, finding 8): it starts
    // paused, with the resume pending at the block it can be drawn from.
    assert_eq!(a["drawable"], false, "{a}");
    assert_eq!(a["pending_pause"]["paused"], false, "{a}");
    let from = a["pending_pause"]["from"].as_u64().unwrap();
    net.wait_height(ME, from);
    let a = status_agrees(&net);
    assert_eq!(a["drawable"], true, "{a}");
    assert_eq!(a["exiting"], false, "{a}");
    assert_eq!(a["tier"], "computer", "{a}");
    let text = ok(&net, &["auditor", "status"]);
    assert!(text.contains("11500 TRUST bonded"), "{text}");

    // Seated and voting (honest): sessions until one seated it and scored a vote of it (a
    // segment its co-seats could not check stays undecided and scores no one), decided.
    let mut traces = TRACES.iter().cycle();
    let mut seated_in = 0;
    let a = loop {
        let sid = submit(&net, traces.next().unwrap());
        let was_seated = seated(&net, &sid);
        let s = over(&net, &sid);
        if !was_seated {
            continue;
        }
        assert_eq!(s["status"], "decided", "{s}");
        let a = status_agrees(&net);
        assert!(num(&a, "votes") > 0, "{a}");
        assert_eq!(num(&a, "slashed"), 0, "{a}");
        if num(&a, "agreed") > 0 {
            break a;
        }
        seated_in += 1;
        assert!(
            seated_in < 6,
            "seated in {seated_in} sessions, never scored: {a}"
        );
    };
    assert!(num(&a, "earned") > 0, "{a}");

    // From now on its seats commit and never reveal.
    assert!(net.terminate(ME).success(), "node{ME} did not stop cleanly");
    net.set_behaviour(ME, "withholder");
    net.start(ME);
    let tip = net.height(1).unwrap();
    net.wait_height(ME, tip);
    let sid = loop {
        let sid = submit(&net, traces.next().unwrap());
        if seated(&net, &sid) {
            break sid;
        }
        over(&net, &sid);
    };

    // Unbond part, then exit with the rest, while it holds that seat.
    let out = ok(&net, &["auditor", "unbond", "500"]);
    assert!(
        out.contains("unbonding 500 TRUST; withdrawable at block #"),
        "{out}"
    );
    // An exit is permanent: without --yes, and nobody at a terminal to confirm it, it is
    // refused and nothing is sent.
    let out = net.cli(ME, &["auditor", "exit"]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "an unconfirmed exit was not refused"
    );
    let why = String::from_utf8_lossy(&out.stderr);
    assert!(
        why.contains("permanent") && why.contains("voting power") && why.contains("--yes"),
        "{why}"
    );
    assert_eq!(record(&net)["exiting"], false);
    let out = ok(&net, &["auditor", "exit", "--yes"]);
    assert!(out.contains("exiting: 11500 TRUST unbonding"), "{out}");
    let a = status_agrees(&net);
    assert_eq!((num(&a, "stake"), num(&a, "unbonding_total")), (0, 11_500));
    assert_eq!(a["exiting"], true, "{a}");
    assert_eq!(a["drawable"], false, "{a}");
    let frees: Vec<u64> = a["unbonding"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u["frees_at"].as_u64().unwrap())
        .collect();
    let (frees_at, all_free_at) = (*frees.iter().min().unwrap(), *frees.iter().max().unwrap());
    if a["seats"]
        .as_array()
        .unwrap()
        .iter()
        .any(|x| x["session"] == sid)
    {
        let text = ok(&net, &["auditor", "status"]);
        assert!(
            text.contains(&format!("seat        session {sid}")),
            "{text}"
        );
        // Nothing is released yet: the error names the block; the seat holds back what
        // its session may still take.
        let why = refused(&net, &["auditor", "withdraw"]);
        assert!(
            why.contains(&format!("frees at height {frees_at}")),
            "{why}"
        );
        assert!(num(&record(&net), "held_stake") > 0);
        assert!(text.contains("stays within a slash's reach"), "{text}");
    }

    // The missed reveal is slashed, from the unbonding stake.
    let s = over(&net, &sid);
    assert_eq!(s["status"], "decided", "{s}");
    let a = status_agrees(&net);
    assert!(
        num(&a, "slashed") > 0,
        "no slash for the missed reveal: {a}"
    );
    assert_eq!(
        num(&a, "unbonding_total"),
        11_500 - num(&a, "slashed"),
        "{a}"
    );
    assert!(a["seats"].as_array().unwrap().is_empty(), "{a}");

    // Decided is not final: while its sessions may still be appealed (and their seats
    // slashed for incoherence), each holds back what it may still take (at most the
    // network's max_session_loss, less what it took already).
    net.wait_for("the session to be final", |n| {
        n.get(ME, &format!("/v1/sessions/{sid}"))
            .is_ok_and(|s| s["finality"]["state"] == "final")
    });
    net.wait_for("every session it sat in to be final", |n| {
        record(n)["held_stake"].as_u64() == Some(0)
    });

    // Too early: the error names the block the stake frees at.
    assert!(
        net.height(ME).unwrap() + 1 < frees_at,
        "the session outlasted the unbonding delay; raise UNBOND_DELAY"
    );
    let why = refused(&net, &["auditor", "withdraw"]);
    assert!(
        why.contains(&format!("frees at height {frees_at}")),
        "{why}"
    );

    // Bonding again is refused: the stake would be locked where no draw uses it.
    let why = refused(&net, &["auditor", "bond", "10"]);
    assert!(why.contains("exiting already"), "{why}");
    assert_eq!(num(&record(&net), "stake"), 0);

    // No new seats: a later session is staffed without it.
    let later = submit(&net, traces.next().unwrap());
    assert!(!seated(&net, &later), "an exiting auditor was seated");
    over(&net, &later);

    // Once freed, the withdrawal goes through; a second finds nothing.
    net.wait_height(ME, all_free_at);
    let left = num(&record(&net), "unbonding_total");
    let balance = num(&record(&net), "balance");
    let out = ok(&net, &["auditor", "withdraw"]);
    assert!(out.contains(&format!("withdrew {left} TRUST")), "{out}");
    let a = status_agrees(&net);
    assert_eq!(num(&a, "balance"), balance + left, "{a}");
    assert_eq!(num(&a, "unbonding_total"), 0, "{a}");
    let why = refused(&net, &["auditor", "withdraw"]);
    assert!(why.contains("nothing to withdraw"), "{why}");
    let text = ok(&net, &["auditor", "status"]);
    assert!(text.contains("exiting: not drawn"), "{text}");
    assert!(text.contains(&me.to_string()), "{text}");
}
