//! Crash consistency: nodes killed with SIGKILL at seeded random moments while sessions
//! flow, each restarted from its own home. The victim is, by the seed, the provider
//! (node 0), the proposer of the next height, or a seat node with a vote committed and not
//! yet revealed; one outage outlasts a session's windows, and one restarted node is killed
//! again while it recovers. `scripts/crash.sh` runs the same scenario at scale (50 kills by
//! default).
//!
//! The assertions are about outcomes only, never timing: every session the provider
//! acknowledged opens, even when the provider is killed right after, and ends decided or
//! failed by the contract's rules; every node holds the same chain, and every ledger
//! verifies after the last kill.

use std::{collections::BTreeMap, time::Duration};

use trust_protocol::Hash;

use crate::fixtures::network::Network;

/// Kills in the scenario.
const KILLS: usize = 8;
/// The default seed of victims and moments (`TRUST_CRASH_SEED` overrides it).
const SEED: u64 = 13;

/// SplitMix64: a seeded stream without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo)
    }
}

/// Who is killed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Victim {
    Provider,
    Proposer,
    SeatBetweenCommitAndReveal,
}

/// The node drawn to propose height `h` in round 0, as the consensus context draws it: a
/// stake-weighted slot from `H("trust/v1/proposer", h, 0)` over the validators sorted by
/// account. Each node's account and stake are read through node `via`.
fn proposer_of_next(net: &Network, via: usize) -> Option<usize> {
    let tip = net.height(via)?;
    let mut set: Vec<(String, u64, usize)> = Vec::new();
    for i in 0..net.nodes.len() {
        let id = net.keys(i).account_id().to_string();
        let stake = net.get(via, &format!("/v1/accounts/{id}")).ok()?["stake"].as_u64()?;
        if stake > 0 {
            set.push((id, stake, i));
        }
    }
    set.sort();
    let total: u64 = set.iter().map(|v| v.1).sum();
    let h = tip + 1;
    let draw = Hash::of_parts(
        "trust/v1/proposer",
        &[&h.to_le_bytes(), &0u64.to_le_bytes()],
    );
    let mut slot = draw.to_u64() % total.max(1);
    set.iter().find_map(|&(_, stake, i)| {
        let hit = slot < stake;
        slot = slot.saturating_sub(stake);
        hit.then_some(i)
    })
}

/// Seat nodes whose metrics show a vote committed and not yet revealed.
fn seats_between_commit_and_reveal(net: &Network) -> Vec<usize> {
    (1..net.nodes.len())
        .filter(|&i| {
            let m = net.metrics(i);
            let value = |name: &str| {
                m.lines()
                    .find_map(|l| l.strip_prefix(name).and_then(|v| v.trim().parse().ok()))
                    .unwrap_or(0.0_f64)
            };
            value("trust_seat_votes_committed_total") > value("trust_seat_votes_revealed_total")
        })
        .collect()
}

/// Opens a session on node 0 with the `n`-th sample trace; `None` while node 0 refuses or
/// is not answering.
fn submit(net: &Network, n: usize) -> Option<String> {
    const TRACES: [&str; 4] = [
        "fraction-correct.txt",
        "fraction-incorrect.txt",
        "bakery-correct.txt",
        "rules-wrong.txt",
    ];
    let path = format!(
        "{}/../examples/traces/{}",
        env!("CARGO_MANIFEST_DIR"),
        TRACES[n % TRACES.len()]
    );
    let trace = std::fs::read_to_string(path).expect("sample trace");
    let r = net
        .post_json(0, "/v1/sessions", &serde_json::json!({ "trace": trace }))
        .ok()?;
    r["session"].as_str().map(str::to_string)
}

/// Waits until the restarted node `i` answers within two blocks of the highest node.
fn wait_back(net: &Network, i: usize) {
    net.wait_for(&format!("node{i} to catch up after its restart"), |n| {
        let hs: Vec<Option<u64>> = (0..n.nodes.len()).map(|j| n.height(j)).collect();
        let top = hs.iter().flatten().copied().max().unwrap_or(0);
        hs[i].is_some_and(|h| h + 2 >= top)
    });
}

#[test]
fn nodes_killed_at_random_moments_while_sessions_flow_end_every_session_and_agree() {
    let seed = std::env::var("TRUST_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(SEED);
    let mut rng = Rng(seed);
    let mut net = Network::running(4);
    // Sessions node 0 acknowledged. Its opening transaction is journaled on disk before
    // the answer, so each of them opens even if node 0 is killed right after.
    let mut sessions: Vec<String> = Vec::new();
    let mut kills: BTreeMap<Victim, usize> = BTreeMap::new();
    let mut n = 0;
    for k in 0..KILLS {
        // Sessions keep arriving between kills; the kill lands a random time later, in
        // whatever phase the sessions in flight are.
        for _ in 0..2 {
            if let Some(s) = submit(&net, n) {
                sessions.push(s);
            }
            n += 1;
            std::thread::sleep(Duration::from_millis(rng.range(200, 1500)));
        }
        let kind = match rng.range(0, 3) {
            0 => Victim::Provider,
            1 => Victim::Proposer,
            _ => Victim::SeatBetweenCommitAndReveal,
        };
        let victim = match kind {
            Victim::Provider => 0,
            Victim::Proposer => {
                let via = usize::try_from(rng.range(0, 4)).unwrap_or(0);
                proposer_of_next(&net, via).unwrap_or(via)
            }
            Victim::SeatBetweenCommitAndReveal => {
                let mut found = Vec::new();
                for _ in 0..30 {
                    found = seats_between_commit_and_reveal(&net);
                    if !found.is_empty() {
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                // None between commit and reveal right now: any seat node.
                let pick = usize::try_from(rng.next() % 3).unwrap_or(0);
                found
                    .get(pick % found.len().max(1))
                    .copied()
                    .unwrap_or(1 + pick)
            }
        };
        *kills.entry(kind).or_default() += 1;
        let before: Vec<Option<u64>> = (0..4).map(|i| net.height(i)).collect();
        net.kill(victim);
        // One outage outlasts a session's commit and reveal windows (10 blocks each).
        let down = rng.range(200, 2500);
        let down = if k == KILLS / 2 { 8_000 } else { down };
        eprintln!(
            "kill {}: node{victim} ({kind:?}) at heights {before:?}, down {down} ms",
            k + 1
        );
        std::thread::sleep(Duration::from_millis(down));
        net.start(victim);
        if k == 1 {
            // Once again while it replays its ledger and catches up.
            std::thread::sleep(Duration::from_millis(rng.range(50, 800)));
            eprintln!("kill {}b: node{victim} again while it restarts", k + 1);
            net.kill(victim);
            std::thread::sleep(Duration::from_millis(rng.range(200, 1500)));
            net.start(victim);
        }
        wait_back(&net, victim);
    }

    assert_eq!(
        kills.len(),
        3,
        "seed {seed} did not draw every kind of victim: {kills:?}"
    );

    // Every acknowledged session is opened (a provider killed with its opening
    // transaction in flight pools and gossips it again from its journal when it starts)
    // and ends by the contract's rules: decided, or failed by its windows.
    assert!(!sessions.is_empty(), "node 0 acknowledged no session");
    net.wait_for("every acknowledged session to open and end", |net| {
        sessions.iter().all(|s| {
            net.get(1, &format!("/v1/sessions/{s}"))
                .is_ok_and(|v| v["status"] == "decided" || v["status"] == "failed")
        })
    });
    let mut ended: BTreeMap<String, usize> = BTreeMap::new();
    for s in &sessions {
        let v = net
            .get(1, &format!("/v1/sessions/{s}"))
            .unwrap_or_else(|e| panic!("node1 does not answer for session {s}: {e}"));
        *ended
            .entry(v["status"].as_str().unwrap_or("?").to_string())
            .or_default() += 1;
    }

    // One chain: every node holds the same blocks up to the lowest height among them.
    let common = (0..4)
        .map(|i| net.height(i).expect("running"))
        .min()
        .unwrap_or(0);
    net.assert_same_chain(&[0, 1, 2, 3], common);
    for i in 0..4 {
        net.kill(i);
        let (ok, out) = net.verify_ledger(i);
        assert!(ok, "node{i}'s ledger does not verify: {out}");
    }
    eprintln!("seed {seed}; kills {kills:?}; sessions {ended:?}; common height {common}");
}
