//! A trace at the size limit end to end: 5,000 numbered steps in about 1 MiB, submitted to
//! a provider node of a four-node network. The decomposer groups consecutive steps into
//! segments one session can hold; the three other nodes' Computer seats judge every
//! group step by step, commit and reveal; the contract decides with coverage on record.

use std::time::Duration;

use serde_json::Value;
use trust_judging::decompose::{MAX_DECOMPOSED_SEGMENTS, sample::counter_trace};
use trust_protocol::trace::MAX_TRACE_BYTES;

use crate::fixtures::network::Network;

#[test]
fn a_one_mebibyte_trace_of_5000_steps_is_accepted_and_audited() {
    let trace = counter_trace(5000, 208, 0, None);
    assert!(trace.len() > 1_000_000 && trace.len() <= MAX_TRACE_BYTES);

    // A seat votes on every segment of the session here (three Computer auditors, three
    // seats per segment): a longer commit window leaves the debug binary time to fetch and
    // judge them all; blocks come a second apart, the pace the default windows are made
    // for.
    let mut net = Network::with_init_args(4, &["--commit-window", "200"])
        .block_time(1000)
        .deadline(Duration::from_secs(600));
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 1);
    }
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": trace }))
        .unwrap_or_else(|e| panic!("node 0 opens the session: {e}\n{}", net.logs_tail()));
    let session = r["session"].as_str().unwrap().to_string();
    let segments = r["segments"].as_array().unwrap();
    let left_out = r["left_out"].as_array().unwrap();
    // Grouped into what one session holds; the groups of steps are Computer segments.
    assert!(
        segments.len() + left_out.len() <= MAX_DECOMPOSED_SEGMENTS + 8,
        "{} segments, {} left out",
        segments.len(),
        left_out.len()
    );
    let groups = segments
        .iter()
        .filter(|s| s[0].as_str().is_some_and(|n| n.starts_with("SG")))
        .count();
    assert!(groups > 100, "{groups} groups of steps in {r}");

    net.wait_for("the long session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{}", net.logs_tail());
    let o = &s["outcome"];
    let verdicts: Vec<&Value> = o["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|v| v["honeypot"].is_null())
        .collect();
    // Every step is right: no segment is called wrong, and the trace does not fail.
    let wrong: Vec<&&Value> = verdicts
        .iter()
        .filter(|v| {
            v["verdict"] == "invalid"
                || v["verdict"] == "ungrounded"
                || v["verdict"] == "propagated"
        })
        .collect();
    assert!(wrong.is_empty(), "correct steps judged wrong: {wrong:?}");
    assert_ne!(o["trace"], "fail", "{o}");
    // The checkers judged the groups, and coverage is on record.
    let valid = verdicts.iter().filter(|v| v["verdict"] == "valid").count();
    let count = |what: &str| {
        verdicts
            .iter()
            .filter(|v| v["votes"][what].as_u64().unwrap_or(0) > 0)
            .count()
    };
    println!(
        "{} segments, {valid} Valid, {} with an abstention, {} with a missing vote, coverage {}, verdict {}, decided in {} blocks",
        verdicts.len(),
        count("abstained"),
        count("missing"),
        o["coverage"],
        o["trace"],
        o["decided_at"].as_u64().unwrap_or(0) - o["opened_at"].as_u64().unwrap_or(0)
    );
    assert!(valid > groups / 2, "{valid} of {groups} groups Valid: {o}");
    assert_eq!(o["coverage"]["judged"], valid, "{}", o["coverage"]);
}

/// Issue 29: a 1,000-step trace on four nodes, three Computer auditors each seated on
/// every segment (three seats a segment). Each seat sends its hundreds of votes as a few
/// batched transactions: every seat's vote lands, and no honest seat is slashed.
#[test]
fn a_1000_step_trace_loses_no_vote_and_slashes_no_honest_seat() {
    let trace = counter_trace(1000, 0, 0, None);
    let mut net = Network::with_init_args(4, &["--commit-window", "120"])
        .block_time(500)
        .deadline(Duration::from_secs(600));
    net.start_all();
    for i in 0..4 {
        net.wait_height(i, 1);
    }
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": trace }))
        .unwrap_or_else(|e| panic!("node 0 opens the session: {e}\n{}", net.logs_tail()));
    let session = r["session"].as_str().unwrap().to_string();
    let segments = r["segments"].as_array().unwrap().len();
    // More segments than one seat's single transactions ever carried (the cap was 128).
    assert!(segments > 128, "{segments} segments in {r}");
    net.wait_for("the 1,000-step session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{}", net.logs_tail());
    let o = &s["outcome"];
    let all = o["segments"].as_array().unwrap();
    let missing: Vec<usize> = all
        .iter()
        .enumerate()
        .filter(|(_, v)| v["votes"]["missing"].as_u64().unwrap_or(0) > 0)
        .map(|(i, _)| i)
        .collect();
    assert!(
        missing.is_empty(),
        "{} of {} segments lack a vote: {missing:?}",
        missing.len(),
        all.len()
    );
    assert_ne!(o["trace"], "fail", "{o}");
    for i in 1..4 {
        let id = net.keys(i).account_id();
        let a = net.get(1, &format!("/v1/auditors/{id}")).unwrap();
        assert_eq!(a["slashed"], 0, "honest seat {i} was slashed: {a}");
    }
    // The votes went out batched: a seat's account signed far fewer transactions than it
    // cast votes, where single calls take two per vote (a commit and a reveal). How full
    // each batch is depends on how the judgements and blocks fall in time (12 to 31
    // transactions for 421 votes in runs on an idle machine, over 42 once in CI on a busy
    // one), so the bound is a quarter of the votes: eight times fewer than single calls.
    let votes = net.counter(1, "trust_seat_votes_committed_total");
    let id = net.keys(1).account_id();
    let txs = net.get(1, &format!("/v1/accounts/{id}")).unwrap()["nonce"]
        .as_u64()
        .unwrap();
    assert!(
        votes >= segments as u64 && txs * 4 < votes,
        "node 1 committed {votes} votes with {txs} transactions"
    );
    println!(
        "{} segments; node 1 committed and revealed {votes} votes in {txs} transactions; \
         decided in {} blocks; no vote missing, no seat slashed",
        all.len(),
        o["decided_at"].as_u64().unwrap_or(0) - o["opened_at"].as_u64().unwrap_or(0)
    );
}
