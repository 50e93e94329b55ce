//! Bitswap transfer benchmark (BENCHMARKS.md "Blobs"): two node swarms on loopback, one
//! holding blocks in its embedded store, the other fetching them over Bitswap into its
//! own; prints one JSON line per case (block size, blocks, in flight, seconds, MiB/s,
//! blocks/s).
//!
//!     cargo run --release --example bitswap_bench

use std::{sync::Arc, time::Instant};

use futures::{StreamExt, stream};
use libp2p::{identity, multiaddr::Protocol};
use trust_node::{
    blobs::BlobStore,
    net::{self, NetConfig, NetHandler, NetMetrics, SyncStatus, TxCheck, TxVerdict},
};
use trust_protocol::{Hash, cid::Cid, tx::SignedTx};

#[derive(Debug)]
struct Quiet;

impl NetHandler for Quiet {
    fn on_tx(&self, _: libp2p::PeerId, _: SignedTx) -> TxCheck {
        Err(TxVerdict::Ignore).into()
    }
    fn sync_status(&self) -> SyncStatus {
        SyncStatus {
            height: 0,
            tip: Hash::ZERO,
        }
    }
    fn sync_blocks(&self, _: u64, _: u32, _: usize) -> Vec<Vec<u8>> {
        Vec::new()
    }
}

fn store() -> (tempfile::TempDir, BlobStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path()).expect("sled");
    let s = BlobStore::open(&db).expect("store");
    (dir, s)
}

async fn node(
    blobs: BlobStore,
    bootstrap: Vec<libp2p::Multiaddr>,
) -> (net::NetHandle, libp2p::Multiaddr) {
    let key = identity::Keypair::generate_ed25519();
    let peer = key.public().to_peer_id();
    let mut cfg = NetConfig::new(
        key,
        "/ip4/127.0.0.1/tcp/0".parse().expect("addr"),
        Hash::sha256(b"bitswap-bench"),
    );
    cfg.blobs = Some(blobs);
    cfg.bootstrap = bootstrap;
    let (h, _task) =
        net::spawn(cfg, Arc::new(Quiet), Arc::new(NetMetrics::default())).expect("swarm");
    let addr = h.listen_addrs().await.expect("listening")[0]
        .clone()
        .with(Protocol::P2p(peer));
    (h, addr)
}

#[tokio::main]
async fn main() {
    for (size, count, in_flight) in [
        (4 * 1024, 400usize, 1usize),
        (4 * 1024, 400, 32),
        (64 * 1024, 200, 1),
        (64 * 1024, 200, 32),
        (1024 * 1024, 40, 1),
        (1024 * 1024, 40, 8),
    ] {
        let (_da, held) = store();
        let (_db, empty) = store();
        let cids: Vec<Cid> = (0..count)
            .map(|i| {
                let mut b = vec![0u8; size];
                b[..8].copy_from_slice(&(i as u64).to_le_bytes());
                b[8..16].copy_from_slice(&(size as u64).to_le_bytes());
                held.put(&b).expect("put")
            })
            .collect();
        let (_a, addr) = node(held, Vec::new()).await;
        let (b, _) = node(empty, vec![addr]).await;
        while b.peers().await.expect("peers").is_empty() {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let start = Instant::now();
        let fetched: Vec<usize> = stream::iter(cids)
            .map(|c| {
                let b = b.clone();
                async move { b.fetch_blob(c).await.expect("fetched").len() }
            })
            .buffer_unordered(in_flight)
            .collect()
            .await;
        let secs = start.elapsed().as_secs_f64();
        let bytes: usize = fetched.iter().sum();
        println!(
            "{{\"block_bytes\": {size}, \"blocks\": {count}, \"in_flight\": {in_flight}, \"seconds\": {secs:.3}, \"mib_per_s\": {:.1}, \"blocks_per_s\": {:.0}}}",
            bytes as f64 / secs / (1024.0 * 1024.0),
            count as f64 / secs
        );
    }
}
