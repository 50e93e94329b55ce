//! The seeded simulator: determinism and the paper's orderings of strategies.
#![cfg(feature = "sim")]

use trust_contracts::sim::{Sim, SimConfig};

fn run(seed: u64, sessions: u32) -> trust_contracts::sim::SimReport {
    let cfg = SimConfig {
        seed,
        sessions,
        ..SimConfig::default()
    };
    Sim::new(cfg).unwrap().run()
}

#[test]
fn smoke() {
    let r = run(1, 300);
    println!("{}", serde_json::to_string_pretty(&r.strategies).unwrap());
    println!(
        "{:?} {:?} decided {} failed {} blocks {}",
        r.accuracy, r.txs_rejected, r.sessions_decided, r.sessions_failed, r.blocks
    );
}
