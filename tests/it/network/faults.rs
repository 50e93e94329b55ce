//! Faults on a live network: a seat node killed and restarted while sessions flow, and a
//! network that loses two of its four validators.
//!
//! What each scenario measured is printed (run with `--no-capture` to see it); the numbers
//! go to BENCHMARKS.md, the assertions check behaviour only.

use std::{
    collections::{BTreeMap, BTreeSet},
    time::{Duration, Instant},
};

use trust_contracts::{Contract, Event, SlashReason};
use trust_node::{
    chain::{Tip, execute_block},
    config,
    ledger::Ledger,
};
use trust_protocol::{
    AccountId, Hash, Signed,
    tx::{Call, Tx},
};

use crate::fixtures::network::{self, Network};

/// How long the seat node stays down (the operator's report: 40 s).
const DOWN: Duration = Duration::from_secs(40);
/// Blocks between two submitted sessions (1.5 s at 300 ms blocks).
const EVERY: u64 = 5;

/// Every event of node `i`'s ledger, with the height of its block (the node must be
/// stopped: the ledger is replayed from genesis out of its home).
fn replay(net: &Network, i: usize) -> Vec<(u64, Event)> {
    let home = &net.nodes[i].home;
    let doc = config::load_genesis(home).expect("genesis");
    let ledger = Ledger::open(&config::ledger_dir(home)).expect("ledger");
    let mut contract = Contract::new(&doc.genesis)
        .expect("contract")
        .with_chain(doc.chain_id());
    let mut tip = Tip::genesis(doc.chain_id());
    let mut out = Vec::new();
    for h in 1.. {
        let Some(stored) = ledger.block(h).expect("ledger read") else {
            break;
        };
        let done = execute_block(&contract, &tip, &stored.block).expect("block executes");
        out.extend(done.events.into_iter().map(|e| (h, e)));
        contract = done.contract;
        tip = tip.after(&stored.block);
    }
    out
}

/// Submits a sample trace through node 0; the session id, or `None` if node 0 refused for
/// now (its earlier transactions still wait).
fn submit(net: &Network, trace: &str) -> Option<String> {
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": trace }))
        .ok()?;
    r["session"].as_str().map(str::to_string)
}

/// What node 2's seats did, per session.
#[derive(Debug, Default)]
struct SeatRecord {
    /// Height its first seat in the session was drawn.
    drawn_at: u64,
    seats: usize,
    revealed: usize,
    counted: usize,
    no_show_slashed: u64,
}

#[test]
fn a_seat_down_for_40_s_votes_again_within_blocks_of_its_restart_and_pays_only_for_what_it_missed()
{
    let mut net = Network::running(4);
    let trace = std::fs::read_to_string(format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("sample trace");
    let mut sessions: Vec<String> = Vec::new();
    let feed = |net: &Network, sessions: &mut Vec<String>| {
        if let Some(s) = submit(net, &trace) {
            sessions.push(s);
        }
        let h = net.height(0).unwrap_or(0);
        net.wait_height(0, h + EVERY);
    };

    for _ in 0..3 {
        feed(&net, &mut sessions);
    }
    let killed_at = net.height(0).expect("node 0 answers");
    net.kill(2);
    let down = Instant::now();
    while down.elapsed() < DOWN {
        feed(&net, &mut sessions);
    }
    let restarted_at = net.height(0).expect("node 0 answers");
    net.start(2);
    net.wait_for("node 2 to catch up with node 0", |n| {
        n.height(2)
            .zip(n.height(0))
            .is_some_and(|(h2, h0)| h2 + 1 >= h0)
    });
    let back_at = net.height(0).expect("node 0 answers");
    // What the restart led node 2 to send in the operator's run, made certain here: a
    // transaction of its account that the contract refuses for good (registering again as
    // the auditor it is; keys for a session it does not provide, the operator's case, are
    // refused by the mempools now). Proposers drop it; its later votes must not wait
    // behind it. Once through a peer (which may hold it while node 2 signs a vote with the
    // same nonce), once through node 2 itself.
    let poison = |net: &Network, sessions: &mut Vec<String>, via: usize| {
        let live = loop {
            if let Some(s) = submit(net, &trace) {
                break s;
            }
            let h = net.height(0).unwrap_or(0);
            net.wait_height(0, h + 1);
        };
        sessions.push(live.clone());
        net.wait_for("the new session to be live", |n| {
            n.get(via, &format!("/v1/sessions/{live}"))
                .is_ok_and(|v| v["status"] == "live")
        });
        let k2 = net.keys(2);
        let nonce = net
            .get(via, &format!("/v1/accounts/{}", k2.account_id()))
            .expect("account")["next_nonce"]
            .as_u64()
            .expect("nonce");
        let tx = Signed::sign(
            &k2.account,
            &net.chain_id(),
            Tx {
                nonce,
                call: Call::RegisterAuditor {
                    tier: trust_protocol::tx::Tier::Computer,
                    expertise: vec!["math".into()],
                    sealing_key: k2.sealing_public(),
                    // The tier's minimum, which the node's balance covers: the pools admit
                    // it, the contract refuses it (the account is an auditor already).
                    stake: trust_contracts::Params::default()
                        .min_stake(trust_protocol::tx::Tier::Computer),
                },
            },
        );
        net.send_tx(via, &tx)
            .expect("the doomed transaction is pooled");
    };
    poison(&net, &mut sessions, 1);
    for _ in 0..4 {
        feed(&net, &mut sessions);
    }
    poison(&net, &mut sessions, 2);
    for _ in 0..4 {
        feed(&net, &mut sessions);
    }
    net.wait_for("every session to end", |n| {
        sessions.iter().all(|s| {
            n.get(0, &format!("/v1/sessions/{s}"))
                .is_ok_and(|v| v["status"] == "decided" || v["status"] == "failed")
        })
    });
    // Nothing of anyone's stays stranded in any pool once the sessions are over (polled
    // up to the harness deadline; judged after the numbers are printed).
    let pools = |n: &Network| -> Vec<u64> {
        (0..4)
            .map(|i| {
                n.get(i, "/v1/status")
                    .ok()
                    .and_then(|v| v["mempool"].as_u64())
                    .unwrap_or(u64::MAX)
            })
            .collect()
    };
    let since = Instant::now();
    let mut pooled = pools(&net);
    while pooled.iter().any(|&p| p > 0) && since.elapsed() < network::DEADLINE {
        let h = net.height(0).unwrap_or(0);
        net.wait_height(0, h + 1);
        pooled = pools(&net);
    }
    let tip = net.height(0).expect("node 0 answers");
    for i in 1..4 {
        net.wait_height(i, tip);
    }
    net.assert_same_chain(&[0, 1, 2, 3], tip);
    let lines = |i: usize, what: &str| {
        std::fs::read_to_string(net.nodes[i].home.join("node.log"))
            .unwrap_or_default()
            .lines()
            .filter(|l| l.contains(what))
            .count()
    };
    println!(
        "node 2 log: {} calls not signed (could no longer apply), {} hole fillings; proposers dropped {} refused transactions",
        lines(2, "can no longer apply"),
        lines(2, "filled nonces"),
        (0..4)
            .map(|i| lines(i, "refused by the contract"))
            .sum::<usize>()
    );
    if let Some(to) = std::env::var_os("TRUST_KEEP_LOGS") {
        let to = std::path::PathBuf::from(to);
        std::fs::create_dir_all(&to).expect("log dir");
        for (i, n) in net.nodes.iter().enumerate() {
            let _ = std::fs::copy(n.home.join("node.log"), to.join(format!("node{i}.log")));
        }
    }
    let seat2: AccountId = net.keys(2).account_id();
    let others: Vec<AccountId> = [1, 3].iter().map(|&i| net.keys(i).account_id()).collect();
    net.kill(0);
    let events = replay(&net, 0);

    let mut per_session: BTreeMap<Hash, SeatRecord> = BTreeMap::new();
    let mut slashed: BTreeMap<AccountId, u64> = BTreeMap::new();
    let mut first_vote_after_restart = None;
    let mut counted_after_restart = 0;
    for (h, e) in &events {
        match e {
            Event::SeatAssigned { session, seat, .. } if *seat == seat2 => {
                let r = per_session.entry(*session).or_default();
                if r.seats == 0 {
                    r.drawn_at = *h;
                }
                r.seats += 1;
            }
            Event::Revealed {
                session,
                seat,
                counted,
                ..
            } if *seat == seat2 => {
                let r = per_session.entry(*session).or_default();
                r.revealed += 1;
                if *counted {
                    r.counted += 1;
                    if *h > restarted_at {
                        counted_after_restart += 1;
                        first_vote_after_restart.get_or_insert(*h);
                    }
                }
            }
            Event::Slashed {
                session,
                seat,
                amount,
                reason,
            } => {
                *slashed.entry(*seat).or_default() += amount;
                if *seat == seat2 && *reason == SlashReason::NoShow {
                    per_session.entry(*session).or_default().no_show_slashed += amount;
                }
            }
            _ => {}
        }
    }
    let missed: BTreeSet<&Hash> = per_session
        .iter()
        .filter(|(_, r)| r.revealed < r.seats)
        .map(|(s, _)| s)
        .collect();
    let seated = per_session.values().filter(|r| r.seats > 0).count();
    println!(
        "sessions {}; node 2 down at height {killed_at}, restarted at {restarted_at}, caught up at {back_at}, tip {tip}; pools at the end {pooled:?}",
        sessions.len()
    );
    println!(
        "node 2: seated in {seated} sessions, missed {} (all drawn before height {back_at}); counted votes after restart {counted_after_restart}; first counted vote {:?} blocks after restart",
        missed.len(),
        first_vote_after_restart.map(|h| h - restarted_at)
    );
    println!(
        "slashed: node 2 {}, others {:?}",
        slashed.get(&seat2).copied().unwrap_or(0),
        others
            .iter()
            .map(|o| slashed.get(o).copied().unwrap_or(0))
            .collect::<Vec<_>>()
    );
    assert!(
        pooled.iter().all(|&p| p == 0),
        "transactions stranded in the pools: {pooled:?}"
    );
    // Every session whose seats were drawn once node 2 was back has all of its votes.
    for (s, r) in &per_session {
        if r.drawn_at >= back_at {
            assert_eq!(
                r.revealed, r.seats,
                "session {s} drawn at {} (node 2 back at {back_at}) lacks its votes: {r:?}",
                r.drawn_at
            );
        }
        // A no-show slash only where node 2 did not reveal.
        if r.no_show_slashed > 0 {
            assert!(
                missed.contains(s),
                "session {s}: slashed as a no-show, {r:?}"
            );
        }
    }
    assert!(
        missed.iter().all(|s| per_session[*s].drawn_at < back_at),
        "node 2 missed a session drawn after it was back"
    );
    assert!(counted_after_restart > 0);
}

#[test]
fn two_of_four_validators_down_halts_the_chain_safely_and_one_returning_resumes_it() {
    let mut net = Network::running(4);
    let before = net.height(0).expect("node 0 answers");
    net.wait_height(0, before + 3);
    net.kill(2);
    net.kill(3);
    // Whatever was in flight decides; then nothing can (2 of 4 is below 2/3 of the power).
    let mut last = net.height(0).expect("node 0 answers");
    let mut settled = Instant::now();
    net.wait_for("the two survivors to stop at one height", |n| {
        let h = n.height(0).unwrap_or(last).max(n.height(1).unwrap_or(last));
        if h != last {
            last = h;
            settled = Instant::now();
        }
        // Thirty 300 ms block times without a block: halted, not slow.
        settled.elapsed() > Duration::from_secs(9)
    });
    let halted = net.height(0).expect("node 0 answers");
    assert_eq!(
        net.height(1),
        Some(halted),
        "the survivors disagree on the tip"
    );
    net.assert_same_chain(&[0, 1], halted);

    net.start(2);
    let back = Instant::now();
    net.wait_height(0, halted + 1);
    let resumed = back.elapsed();
    net.wait_height(0, halted + 5);
    for i in [1, 2] {
        net.wait_height(i, halted + 5);
    }
    net.assert_same_chain(&[0, 1, 2], halted + 5);
    println!(
        "halted at height {halted}; first block {} ms after node 2 was started again",
        resumed.as_millis()
    );
}
