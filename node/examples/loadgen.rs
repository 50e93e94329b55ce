//! Load generator for a local testnet (`scripts/bench-network.sh` runs it).
//!
//! Usage: `loadgen <testnet dir> <nodes> <txs per account>`
//!
//! Every node's account sends transfers to the next node's account, round-robin over the
//! nodes' APIs, keeping at most 48 transactions in flight per account (the mempool takes
//! nonces at most 64 ahead). It waits until every transaction is in a block and prints
//! one JSON line: transactions, seconds, blocks decided meanwhile, finalized tx/s and
//! blocks/s.

use std::{path::PathBuf, time::Instant};

use serde_json::json;
use trust_node::{api::client, config, keys};
use trust_protocol::{
    Signed, encoding,
    tx::{Call, Tx},
};

const WINDOW: u64 = 48;

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    if args.len() != 4 {
        eprintln!("usage: loadgen <testnet dir> <nodes> <txs per account>");
        std::process::exit(2);
    }
    let dir = PathBuf::from(&args[1]);
    let n: usize = args[2].parse()?;
    let per: u64 = args[3].parse()?;
    let homes: Vec<PathBuf> = (0..n).map(|i| dir.join(format!("node{i}"))).collect();
    let apis: Vec<String> = homes
        .iter()
        .map(|h| config::load_config(h).map(|c| c.api.listen))
        .collect::<Result<_, _>>()?;
    let ks: Vec<keys::NodeKeys> = homes
        .iter()
        .map(|h| keys::load(h))
        .collect::<Result<_, _>>()?;

    // Transactions are signed for the network the homes belong to.
    let chain = config::load_genesis(&homes[0])?.chain_id();
    let start_height = client::get(&apis[0], "/v1/status").await?["height"]
        .as_u64()
        .unwrap_or(0);
    let mut next: Vec<u64> = Vec::new();
    for k in &ks {
        let a = client::get(&apis[0], &format!("/v1/accounts/{}", k.account_id())).await?;
        next.push(a["next_nonce"].as_u64().unwrap_or(0));
    }
    let first = next.clone();
    let goal: Vec<u64> = first.iter().map(|f| f + per).collect();
    let t0 = Instant::now();
    let mut sent = 0u64;
    let mut rr = 0usize;
    loop {
        // Confirmed nonces, from one node's state.
        let mut done = true;
        for (i, k) in ks.iter().enumerate() {
            let a = client::get(&apis[0], &format!("/v1/accounts/{}", k.account_id())).await?;
            let confirmed = a["nonce"].as_u64().unwrap_or(0);
            if confirmed < goal[i] {
                done = false;
            }
            while next[i] < goal[i] && next[i] < confirmed + WINDOW {
                let tx = Signed::sign(
                    &k.account,
                    &chain,
                    Tx {
                        nonce: next[i],
                        call: Call::Transfer {
                            to: ks[(i + 1) % n].account_id(),
                            amount: 1,
                        },
                    },
                );
                let body = json!({"tx": hex::encode(encoding::encode(&tx))});
                match client::post(&apis[rr % n], "/v1/tx", &body).await {
                    Ok(_) => {
                        next[i] += 1;
                        sent += 1;
                    }
                    Err(e) => {
                        eprintln!("send failed ({e}); will retry");
                        break;
                    }
                }
                rr += 1;
            }
        }
        if done {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let secs = t0.elapsed().as_secs_f64();
    let end_height = client::get(&apis[0], "/v1/status").await?["height"]
        .as_u64()
        .unwrap_or(0);
    let blocks = end_height.saturating_sub(start_height);
    println!(
        "{}",
        json!({
            "nodes": n,
            "txs": sent,
            "seconds": (secs * 100.0).round() / 100.0,
            "blocks": blocks,
            "tx_per_s": ((sent as f64 / secs) * 10.0).round() / 10.0,
            "blocks_per_s": ((blocks as f64 / secs) * 100.0).round() / 100.0,
        })
    );
    Ok(())
}
