//! Appeals on a live network (issue 27, item 2): a segment a malicious seat decided wrongly
//! is appealed by another account with `trust-node appeal --wait`; fresh honest seats judge
//! it again and overturn it. The appellant gets its bond back at once; the first round's
//! majority is slashed for incoherence, and the appellant paid its reward, when the session
//! is final (issue 53: an overturn slashes nobody while an appeal could take it back).
//! `query` shows the first round and the appeal round with "appealable until block H", and
//! only once the appeal window has passed "final at block H".
//!
//! The network: five validators, all Computer auditors (node 0 opens the sessions, node 1
//! votes against its own judgement and bonds more stake so that it sits on most segments),
//! and node 5, a funded account that is no auditor, appeals. Sessions ask one seat per
//! segment, so the malicious seat alone decides its segments; an appeal needs 2k + 1 = 3
//! fresh seats, excluding that seat, the provider and the appellant: nodes 2, 3 and 4, all
//! honest.

use std::{
    process::{Command, Output},
    time::Instant,
};

use serde_json::Value;

use crate::fixtures::{bin, network::Network};

const PROVIDER: usize = 0;
const MALICIOUS: usize = 1;
const APPELLANT: usize = 5;
/// Blocks a decided session (or appeal round) stays appealable.
const APPEAL_WINDOW: u64 = 30;

fn cli(net: &Network, node: usize, args: &[&str]) -> Output {
    net.cli(node, args)
}

fn ok(net: &Network, node: usize, args: &[&str]) -> String {
    net.cli_ok(node, args)
}

fn num(v: &Value, key: &str) -> u64 {
    v[key].as_u64().unwrap_or_else(|| panic!("no {key} in {v}"))
}

fn submit(net: &Network, trace: &str) -> String {
    let text = std::fs::read_to_string(crate::fixtures::repo().join("examples/traces").join(trace))
        .unwrap();
    let r = net
        .post_json(
            PROVIDER,
            "/v1/sessions",
            &serde_json::json!({ "trace": text, "session": { "seats": 1 } }),
        )
        .unwrap_or_else(|e| panic!("{trace}: {e}"));
    r["session"].as_str().unwrap().to_string()
}

fn session(net: &Network, sid: &str) -> Value {
    net.get(APPELLANT, &format!("/v1/sessions/{sid}")).unwrap()
}

fn decided(net: &Network, sid: &str) -> Value {
    net.wait_for(&format!("session {sid} to be decided"), |n| {
        n.get(APPELLANT, &format!("/v1/sessions/{sid}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = session(net, sid);
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    s
}

/// The segments of a decided session that the malicious seat decided alone, wrongly
/// (Invalid where its judge said Valid).
fn decided_by(s: &Value, seat: &str) -> Vec<u16> {
    s["outcome"]["segments"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
        .filter(|(_, g)| g["verdict"] == "invalid")
        .filter(|(_, g)| {
            g["votes_cast"]
                .as_array()
                .unwrap()
                .iter()
                .any(|v| v["seat"] == seat && v["counted"] == true && v["round"] == 0)
        })
        .map(|(i, _)| u16::try_from(i).unwrap())
        .collect()
}

#[test]
fn an_appeal_overturns_a_segment_malicious_seats_decided_and_the_session_becomes_final_after_its_window()
 {
    let started = Instant::now();
    let window = APPEAL_WINDOW.to_string();
    // Sessions of k = 1 (one malicious seat decides a segment alone, for the appeal to
    // overturn): below the public floors, so this network lowers them, as it says.
    let mut net = Network::with_providers_and_args(
        5,
        1,
        &[
            "--appeal-window",
            &window,
            "--honeypots-per-session",
            "0",
            "--dev-floors",
        ],
    );
    net.set_behaviour(MALICIOUS, "malicious");
    net.start_all();
    net.wait_running();
    // The malicious node holds most of the Computer tier's stake: it sits on most segments.
    ok(&net, MALICIOUS, &["auditor", "bond", "40000"]);
    let bad = net.keys(MALICIOUS).account_id();
    let appellant = net.keys(APPELLANT).account_id();

    // Sessions until one has a segment the malicious seat decided.
    let traces = [
        "bakery-correct.txt",
        "fraction-correct.txt",
        "rules-correct.txt",
    ];
    let (sid, segment) = traces
        .iter()
        .find_map(|t| {
            let sid = submit(&net, t);
            let s = decided(&net, &sid);
            decided_by(&s, &bad.to_hex())
                .first()
                .map(|seg| (sid.clone(), *seg))
        })
        .expect("the malicious seat decided no segment of three sessions");
    let s = session(&net, &sid);
    assert_eq!(s["finality"]["state"], "appealable", "{s}");
    // A proof exported now, before the appeal: it holds, and says the verdict may change.
    let proofs = tempfile::tempdir().unwrap();
    let genesis = net.nodes[APPELLANT].home.join("genesis.json");
    let early = proofs.path().join("before-appeal.proof");
    let api = net.nodes[APPELLANT].api.clone();
    let text = |p: &std::path::Path| p.to_str().unwrap().to_string();
    let verify = |file: &std::path::Path, extra: &[&str]| {
        let mut args = vec![
            "proof".to_string(),
            "verify".into(),
            text(file),
            "--genesis".into(),
            text(&genesis),
            "--json".into(),
        ];
        args.extend(extra.iter().map(|a| a.to_string()));
        let out = Command::new(bin()).args(&args).output().unwrap();
        let json: Value = serde_json::from_slice(&out.stdout).unwrap_or(Value::Null);
        (
            out.status.code(),
            json,
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let export = |file: &std::path::Path| {
        let out = Command::new(bin())
            .args(["proof", "export", &sid, "-o", &text(file), "--api", &api])
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
    };
    export(&early);
    let (code, early_json, err) = verify(&early, &[]);
    assert_eq!(code, Some(3), "{err}");
    assert_eq!(early_json["final"], false, "{early_json}");
    assert_eq!(
        early_json["finality"]["state"], "appealable",
        "{early_json}"
    );
    let before = net
        .get(APPELLANT, &format!("/v1/accounts/{appellant}"))
        .unwrap();
    let bad_before = net.get(APPELLANT, &format!("/v1/auditors/{bad}")).unwrap();

    // The appeal, from the appellant's node, followed to its decision.
    let seg = segment.to_string();
    let out = ok(
        &net,
        APPELLANT,
        &["appeal", &sid, "--segments", &seg, "--wait"],
    );
    assert!(
        out.contains("bond 60 TRUST escrowed; judged in round 2"),
        "{out}"
    );
    assert!(
        out.contains(&format!(
            "#{segment} Invalid -> Valid overturned, 1 seat to be slashed at finality if the overturn stands"
        )),
        "{out}"
    );
    assert!(out.contains("appealable  until block"), "{out}");

    // The verdict replaced, the round on record.
    let s = session(&net, &sid);
    let o = &s["outcome"];
    assert_eq!(
        o["segments"][usize::from(segment)]["verdict"],
        "valid",
        "{s}"
    );
    let round = &o["appeals"]["rounds"][0];
    assert_eq!(round["round"], 2, "{s}");
    assert_eq!(round["appellant"], appellant.to_hex(), "{s}");
    let a = &round["segments"][0];
    assert_eq!(a["result"], "overturned", "{s}");
    assert_eq!(
        (&a["previous"], &a["verdict"]),
        (&"invalid".into(), &"valid".into())
    );
    // Nothing is slashed while an appeal could still take the overturn back: the
    // appellant has its bond back, the incoherence slash and the reward wait for
    // finality (issue 53).
    assert_eq!(num(a, "slashed"), 0, "{a}");
    assert_eq!(num(a, "refunded"), 60, "{a}");
    let bad_after = net.get(APPELLANT, &format!("/v1/auditors/{bad}")).unwrap();
    assert_eq!(
        num(&bad_after, "stake"),
        num(&bad_before, "stake"),
        "{bad_before}\n{bad_after}"
    );
    let after = net
        .get(APPELLANT, &format!("/v1/accounts/{appellant}"))
        .unwrap();
    assert_eq!(
        num(&after, "balance"),
        num(&before, "balance"),
        "{before}\n{after}"
    );

    // `query`: the first round and the appeal, appealable until its new window closes.
    let q = ok(&net, APPELLANT, &["query", &sid]);
    assert!(q.contains("status      decided at block"), "{q}");
    assert!(q.contains("appealable  until block"), "{q}");
    assert!(q.contains("appeal 1 (round 2, by "), "{q}");
    assert!(
        q.contains("overturned, 1 seat to be slashed at finality if the overturn stands"),
        "{q}"
    );
    let until = s["finality"]["until"].as_u64().expect("appealable until");
    // The session page: the finality entry and the appeals table.
    let page = net.raw(APPELLANT, "GET", &format!("/sessions/{sid}"), b"");
    assert!(page.contains("<h2>Appeals</h2>"), "{page}");
    assert!(page.contains("overturned"), "{page}");
    assert!(
        page.contains("due at finality if the overturn stands"),
        "{page}"
    );
    assert!(
        page.contains("<dt>Finality</dt><dd>appealable until block"),
        "{page}"
    );

    // Final only once the window has passed.
    net.wait_for(&format!("session {sid} to be final"), |n| {
        n.get(APPELLANT, &format!("/v1/sessions/{sid}"))
            .is_ok_and(|s| s["finality"]["state"] == "final")
    });
    // Final, the overturn standing: the first round's majority slashed, the appellant
    // repaid with its reward.
    let s = session(&net, &sid);
    let a = &s["outcome"]["appeals"]["rounds"][0]["segments"][0];
    let slashed = num(a, "slashed");
    let refunded = num(a, "refunded");
    assert!(slashed > 0, "{a}");
    assert!(refunded > 60, "the appellant got no reward: {a}");
    let q = ok(&net, APPELLANT, &["query", &sid]);
    assert!(
        q.contains(&format!("overturned, 1 seat slashed {slashed}")),
        "{q}"
    );
    let bad_after = net.get(APPELLANT, &format!("/v1/auditors/{bad}")).unwrap();
    assert!(
        num(&bad_after, "stake") < num(&bad_before, "stake"),
        "{bad_before}\n{bad_after}"
    );
    assert!(
        num(&bad_after, "slashed") >= num(&bad_before, "slashed") + slashed,
        "{bad_before}\n{bad_after}"
    );
    let after = net
        .get(APPELLANT, &format!("/v1/accounts/{appellant}"))
        .unwrap();
    assert_eq!(
        num(&after, "balance"),
        num(&before, "balance") - 60 + refunded,
        "{before}\n{after}"
    );
    // The bundle exported before the appeal still holds as a proof of what the state said
    // then, and never verifies as final: exit 3 without --allow-non-final, and the segment
    // it shows is the overturned verdict. One exported now is final, with the new verdict.
    let (code, json, err) = verify(&early, &[]);
    assert_eq!(
        code,
        Some(3),
        "a bundle from before the appeal verified as final: {err}"
    );
    assert_eq!(json["final"], false, "{json}");
    let (code, _, err) = verify(&early, &["--allow-non-final"]);
    assert_eq!(code, Some(0), "{err}");
    let late = proofs.path().join("final.proof");
    export(&late);
    let (code, json, err) = verify(&late, &["--session", &sid]);
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(json["final"], true, "{json}");
    assert!(json["finality"]["at"].as_u64().is_some(), "{json}");
    let s = session(&net, &sid);
    let at = s["finality"]["at"].as_u64().unwrap();
    assert!(at >= until, "final at {at}, appealable until {until}");
    let q = ok(&net, APPELLANT, &["query", &sid]);
    assert!(q.contains(&format!("final       at block {at}")), "{q}");
    assert!(q.contains("appeal 1 (round 2, by "), "{q}");
    let page = net.raw(APPELLANT, "GET", &format!("/sessions/{sid}"), b"");
    assert!(
        page.contains("<dt>Finality</dt><dd>final at block"),
        "{page}"
    );
    // Too late now: the contract's reason, exit 4 (refused by the network).
    let late = cli(&net, APPELLANT, &["appeal", &sid, "--segments", &seg]);
    assert_eq!(late.status.code(), Some(4), "a late appeal was not refused");
    let err = String::from_utf8_lossy(&late.stderr);
    assert!(err.contains("appeal window"), "{err}");
    println!("wall time {:.0} s", started.elapsed().as_secs_f64());
}
