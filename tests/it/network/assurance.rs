//! A provider chooses its assurance on a live network of seven nodes (issue 27, items 1
//! and 3), through the CLI and the API as its operator would: more seats, a stricter trace
//! quorum and a required domain reach the ledger and the outcome, and only auditors of
//! that domain sit; a request the network cannot staff is refused naming the limit, with
//! nothing charged; `submit --plan` submits nothing; and under an exposure budget of half
//! the trace, the key deliveries on the ledger never give one auditor more than half of a
//! twelve-segment trace.

use std::{
    collections::{BTreeMap, BTreeSet},
    process::Output,
};

use serde_json::{Value, json};

use crate::fixtures::network::Network;

/// Nodes 1-5 declare medicine; node 6 only math; node 0 submits (never its own seat).
const MEDICS: [usize; 5] = [1, 2, 3, 4, 5];

/// `trust-node submit ARGS` against node 0, as its operator.
fn submit(net: &Network, args: &[&str]) -> Output {
    let api = net.nodes[0].api.clone();
    let mut all = vec!["submit"];
    all.extend_from_slice(args);
    all.extend(["--api", api.as_str()]);
    net.cli(0, &all)
}

/// Node 0's balance and next nonce.
fn purse(net: &Network) -> (u64, u64) {
    let me = net.keys(0).account_id();
    let a = net.get(0, &format!("/v1/accounts/{me}")).unwrap();
    (
        a["balance"].as_u64().unwrap(),
        a["next_nonce"].as_u64().unwrap(),
    )
}

fn decided(net: &Network, session: &str) -> Value {
    net.wait_for("the session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided" || s["status"] == "failed")
    });
    let s = net.get(1, &format!("/v1/sessions/{session}")).unwrap();
    assert_eq!(s["status"], "decided", "{s}\n{}", net.logs_tail());
    s
}

/// `n` calculations, each resting on the one before, and the answer: `n + 2` segments of
/// the trace (the calculations, the steps' group, the answer).
fn chain_trace(n: usize) -> String {
    let mut t = format!(
        "## Problem Statement\nStart from 1 and add 2 {n} times. What do you get?\n## Thinking Process\n"
    );
    let mut v = 1;
    for i in 1..=n {
        t.push_str(&format!("{i}. {v} + 2 = {}\n", v + 2));
        v += 2;
    }
    t.push_str(&format!("## Final Output\n{v}\n"));
    t
}

#[test]
fn a_provider_chooses_seats_quorum_domain_and_exposure() {
    let flags: Vec<String> = MEDICS.iter().map(|i| format!("{i}=medicine")).collect();
    let mut args: Vec<&str> = Vec::new();
    for f in &flags {
        args.extend(["--expertise", f.as_str()]);
    }
    // The twelve-segment session below is twelve segments of the trace: no honeypots
    // among them (the budget counts honeypots as segments too; see docs/providers.md).
    args.extend(["--honeypots-per-session", "0"]);
    let mut net = Network::with_init_args(7, &args);
    net.start_all();
    for i in 0..7 {
        net.wait_height(i, 1);
    }
    let trace = format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let before = purse(&net);

    // A plan submits nothing.
    let out = submit(
        &net,
        &[
            &trace, "--seats", "5", "--beta", "0.8", "--domain", "medicine", "--plan",
        ],
    );
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{plan}");
    assert!(plan.contains("k = 5/5/5"), "{plan}");
    assert!(
        plan.contains("beta 0.8") && plan.contains("domain medicine (required)"),
        "{plan}"
    );
    assert!(
        plan.contains("5 Computer, 0 LLM, 0 Human could be drawn"),
        "{plan}"
    );
    // What an appeal would take, before anything is paid: 2k + 1 = 11 fresh seats, 16
    // Computer auditors with the 5 that judged; the network has 6 besides the provider.
    assert!(
        plan.contains(
            "a Computer segment's appeal needs 11 fresh Computer auditors (2k + 1, or twice its seats + 1 with racing seats; none who sat on it), 16 in all with its seats; the network has 6: too few"
        ),
        "{plan}"
    );
    assert!(plan.contains("nothing was submitted"), "{plan}");

    // More seats than the domain's auditors: refused, the limit named, nothing charged.
    let out = submit(&net, &[&trace, "--seats", "6", "--domain", "medicine"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(4), "{err}");
    assert!(
        err.contains(
            "k = 6 Computer seats asked, 5 Computer auditors declaring medicine registered"
        ),
        "{err}"
    );
    // Out of the genesis limits too.
    let out = submit(&net, &[&trace, "--seats", "40"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("k = 40 Computer seats asked, the network allows at most 15"),
        "{err}"
    );
    assert_eq!(
        purse(&net),
        before,
        "a refused submit charged or sent something"
    );

    // The session as asked.
    let out = submit(
        &net,
        &[
            &trace, "--seats", "5", "--beta", "0.8", "--domain", "medicine", "--wait",
        ],
    );
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("k = 5/5/5") && text.contains("beta 0.8"),
        "{text}"
    );
    let session = text
        .lines()
        .find_map(|l| l.strip_prefix("session     "))
        .expect("a session line")
        .trim()
        .to_string();
    let s = decided(&net, &session);
    assert_eq!(s["terms"]["seats"], json!([5, 5, 5]), "{s}");
    assert_eq!(s["terms"]["beta"], json!(0.8), "{s}");
    assert_eq!(s["terms"]["domain"], "medicine");
    assert_eq!(s["terms"]["domain_required"], true);
    let medics: BTreeSet<String> = MEDICS
        .iter()
        .map(|i| net.keys(*i).account_id().to_string())
        .collect();
    let mut sat: BTreeSet<String> = BTreeSet::new();
    for seg in s["outcome"]["segments"].as_array().unwrap() {
        for v in seg["votes_cast"].as_array().unwrap() {
            sat.insert(v["seat"].as_str().unwrap().to_string());
        }
        let counted = ["valid", "invalid", "ungrounded", "abstained", "missing"]
            .iter()
            .map(|k| seg["votes"][k].as_u64().unwrap_or(0))
            .sum::<u64>();
        assert!(counted >= 5, "five seats on every segment: {seg}");
    }
    assert_eq!(sat, medics, "every medicine auditor sat, and no one else");
    // The page shows the same terms.
    let page = net.raw(1, "GET", &format!("/sessions/{session}"), b"");
    assert!(
        page.contains("Seats per segment (k)") && page.contains("5 Computer"),
        "{page}"
    );

    // Half the trace at most per auditor: count the keys the ledger delivered.
    let long = chain_trace(10);
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("chain.txt");
    std::fs::write(&file, &long).unwrap();
    let out = submit(
        &net,
        &[file.to_str().unwrap(), "--max-exposure", "0.5", "--plan"],
    );
    let plan = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{plan}");
    assert!(
        plan.contains(
            "no auditor account sees more than 6 of the trace's 12 segments (50%, the budget)"
        ),
        "{plan}"
    );
    assert!(
        plan.contains("left out: an auditor drawn for it could see more than the exposure budget"),
        "{plan}"
    );
    let r = net
        .post_json(
            0,
            "/v1/sessions",
            &json!({"trace": long, "session": {"max_exposure": 0.5}}),
        )
        .expect("opened");
    let session = r["session"].as_str().unwrap().to_string();
    let traced = r["segments"].as_array().unwrap().len() + r["left_out"].as_array().unwrap().len();
    assert_eq!(r["honeypots"], 0);
    assert_eq!(traced, 12, "a twelve-segment session: {r}");
    assert!(
        r["left_out"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l[2].as_str().unwrap().contains("exposure budget")),
        "{r}"
    );
    let s = decided(&net, &session);
    let (from, to) = (
        s["outcome"]["opened_at"].as_u64().unwrap(),
        s["outcome"]["decided_at"].as_u64().unwrap(),
    );
    let mut keys: BTreeMap<String, BTreeSet<u64>> = BTreeMap::new();
    for h in from..=to {
        let b = net.get(1, &format!("/v1/blocks/{h}")).unwrap();
        for tx in b["txs"].as_array().unwrap() {
            let Some(d) = tx["call"].get("DeliverKeys") else {
                continue;
            };
            if d["session"] != session.as_str() {
                continue;
            }
            for k in d["keys"].as_array().unwrap() {
                keys.entry(k["seat"].as_str().unwrap().to_string())
                    .or_default()
                    .insert(k["segment"].as_u64().unwrap());
            }
        }
    }
    assert!(!keys.is_empty(), "keys were delivered");
    for (seat, segments) in &keys {
        assert!(segments.len() <= 6, "{seat} got keys to {segments:?}");
    }
    println!(
        "keys per auditor: {:?}",
        keys.values().map(BTreeSet::len).collect::<Vec<_>>()
    );
}
