//! The task that owns the swarm: it runs commands from [`NetHandle`]s and reacts to
//! swarm events, including the validation of every gossiped transaction.
//!
//! [`NetHandle`]: super::NetHandle

use std::{
    collections::HashMap,
    io,
    sync::Arc,
    time::{Duration, Instant},
};

use futures::{FutureExt, StreamExt, future::BoxFuture, stream::FuturesUnordered};
use libp2p::{
    Multiaddr, PeerId, Swarm, SwarmBuilder,
    gossipsub::{self, IdentTopic, MessageAcceptance, MessageId, PublishError},
    identify, kad,
    multiaddr::Protocol,
    noise, ping,
    request_response::{self, OutboundFailure, OutboundRequestId},
    swarm::SwarmEvent,
    tcp, yamux,
};
use tokio::{
    sync::{mpsc, oneshot},
    task::JoinHandle,
};
use tracing::{Instrument, debug, info, trace, warn};

use trust_protocol::cid::Cid;

use super::{
    BAN_AFTER_REJECTIONS, BLOB_RATE, COMMAND_CAPACITY, FLOOD_BAN_POINTS, FLOOD_LEAK_PER_SEC,
    ID_PROTOCOL, KAD_PROTOCOL, MAX_PENDING_FETCHES, MAX_PENDING_VALIDATIONS, NetConfig, NetError,
    NetHandler, NetMetrics, TxCheck, TxVerdict, blob_req,
    gate::Slots,
    gossip::{self, TxRejection},
    ingress::{Command, NetHandle},
    peers::PeerBook,
    protocols::{Behaviour, BehaviourEvent},
    sync::{BLOCKS_BUDGET, BLOCKS_COST, MAX_BLOCKS_PER_REQUEST, Request, Response},
};

/// Idle connections are closed after this long.
const IDLE_CONNECTION_TIMEOUT: Duration = Duration::from_secs(60);
/// Outstanding outbound sync requests.
const MAX_PENDING_REQUESTS: usize = 256;
/// Callers waiting for the first listen address.
const MAX_LISTEN_WAITERS: usize = 64;

type RequestReply = oneshot::Sender<Result<Response, NetError>>;
type ListenReply = oneshot::Sender<Result<Vec<Multiaddr>, NetError>>;
type BlobReply = oneshot::Sender<Result<Vec<u8>, NetError>>;

/// The Bitswap protocol a peer must speak to be kept as a blob-only peer (an IPFS node).
const BITSWAP_PROTOCOL: &str = "/ipfs/bitswap/1.2.0";

/// A gossiped message's verdict, once the node has decided it.
type Validation = BoxFuture<'static, (MessageId, PeerId, Result<(), TxVerdict>)>;

/// A blob fetch under way: asking the peers in turn, then over Bitswap.
struct Fetch {
    cid: Cid,
    deadline: Instant,
    reply: BlobReply,
    /// Peers not asked directly yet; when none is left, Bitswap.
    untried: Vec<PeerId>,
    /// The requester's slot ([`NetHandle::fetch_blob`]), freed when the fetch ends here.
    _slot: tokio::sync::OwnedSemaphorePermit,
}

impl Fetch {
    /// Past its deadline, or its requester stopped waiting.
    fn over(&self, now: Instant) -> bool {
        self.deadline <= now || self.reply.is_closed()
    }
}

/// The swarm task's state.
pub(crate) struct Actor {
    swarm: Swarm<Behaviour>,
    topic: IdentTopic,
    handler: Arc<dyn NetHandler>,
    metrics: Arc<NetMetrics>,
    peers: PeerBook,
    pending: HashMap<OutboundRequestId, RequestReply>,
    listen_waiters: Vec<ListenReply>,
    /// Fetches waiting for a peer's answer to a direct blob request.
    asking: HashMap<OutboundRequestId, Fetch>,
    /// Fetches waiting on Bitswap.
    fetches: HashMap<beetswap::QueryId, Fetch>,
    fetch_timeout: Duration,
    /// Whether fetches ask peers directly before Bitswap.
    ask_peers: bool,
    /// The store blob requests are served from and fetched blocks are kept in.
    blob_store: Option<crate::blobs::BlobStore>,
    /// Per-peer buckets of blob requests ([`BLOB_RATE`]).
    blob_rate: PeerBook,
    /// The peer that last sent a block asked for directly: asked first next time (a
    /// session's ciphertexts all live on its provider's node).
    blob_source: Option<PeerId>,
    /// Gossiped messages waiting for the node's verdict (bounded).
    validations: FuturesUnordered<Validation>,
    ban_duration: Duration,
    /// The chain id gossiped transactions must be signed for.
    chain_id: trust_protocol::Hash,
}

/// Builds the swarm, starts listening, dials the bootstrap peers and spawns the task that
/// owns it. The task ends on [`NetHandle::shutdown`] or when every handle is dropped.
///
/// Must be called inside a Tokio runtime.
pub fn spawn(
    cfg: NetConfig,
    handler: Arc<dyn NetHandler>,
    metrics: Arc<NetMetrics>,
) -> Result<(NetHandle, JoinHandle<()>), NetError> {
    let actor = Actor::new(cfg, handler, metrics)?;
    let (tx, rx) = mpsc::channel(COMMAND_CAPACITY);
    let task = actor.spawn(rx);
    Ok((NetHandle::new(tx), task))
}

impl Actor {
    /// Builds the swarm, binds the listen address, subscribes to the transaction topic
    /// and dials the bootstrap peers.
    pub(crate) fn new(
        cfg: NetConfig,
        handler: Arc<dyn NetHandler>,
        metrics: Arc<NetMetrics>,
    ) -> Result<Self, NetError> {
        let topic = IdentTopic::new(gossip::tx_topic(&cfg.chain_id));
        // Validators and the peers the operator named get slots strangers cannot take.
        let mut reserved = cfg.reserved.clone();
        reserved.extend(cfg.bootstrap.iter().filter_map(|a| match a.iter().last() {
            Some(Protocol::P2p(peer)) => Some(peer),
            _ => None,
        }));
        let behaviour = Behaviour::new(
            &cfg.keypair,
            &topic,
            Slots {
                max_peers: cfg.max_peers,
                max_per_ip: cfg.max_peers_per_ip,
            },
            reserved,
            cfg.blobs.clone(),
            metrics.clone(),
        )?;
        let mut swarm = SwarmBuilder::with_existing_identity(cfg.keypair)
            .with_tokio()
            .with_tcp(
                tcp::Config::default(),
                noise::Config::new,
                yamux::Config::default,
            )
            .map_err(NetError::setup("transport"))?
            // Peers named by host (`/dns4/...`, as on a docker compose network) are
            // resolved at each dial, so a peer that comes back on a new address is found.
            .with_dns()
            .map_err(NetError::setup("dns resolver"))?
            .with_behaviour(|_| behaviour)
            .map_err(NetError::setup("behaviour"))?
            .with_swarm_config(|_| {
                libp2p::swarm::Config::with_executor(MeasuredExecutor)
                    .with_idle_connection_timeout(IDLE_CONNECTION_TIMEOUT)
            })
            .build();

        swarm
            .listen_on(cfg.listen.clone())
            .map_err(|source| NetError::Listen {
                addr: cfg.listen,
                source,
            })?;
        swarm
            .behaviour_mut()
            .gossipsub
            .subscribe(&topic)
            .map_err(NetError::setup("subscribe"))?;

        let mut actor = Self {
            swarm,
            topic,
            handler,
            metrics,
            peers: PeerBook::new(cfg.sync_rate, FLOOD_LEAK_PER_SEC),
            pending: HashMap::new(),
            listen_waiters: Vec::new(),
            asking: HashMap::new(),
            fetches: HashMap::new(),
            fetch_timeout: cfg.blob_fetch_timeout,
            ask_peers: cfg.ask_peers_for_blobs,
            blob_store: cfg.blobs.clone(),
            blob_rate: PeerBook::new(BLOB_RATE, FLOOD_LEAK_PER_SEC),
            blob_source: None,
            validations: FuturesUnordered::new(),
            ban_duration: cfg.ban_duration,
            chain_id: cfg.chain_id,
        };
        for addr in cfg.bootstrap {
            if let Err(e) = actor.dial(addr.clone()) {
                warn!(%addr, err = %e, "cannot dial bootstrap peer");
            }
        }
        if let Err(e) = actor.swarm.behaviour_mut().kad.bootstrap() {
            debug!(err = %e, "no Kademlia bootstrap");
        }
        Ok(actor)
    }

    /// Runs the task until shutdown or until every handle is gone.
    pub(crate) fn spawn(self, rx: mpsc::Receiver<Command>) -> JoinHandle<()> {
        let span = tracing::info_span!("net", local = %self.swarm.local_peer_id());
        tokio::spawn(crate::cpu::Measured::new(
            crate::cpu::Part::Network,
            self.run(rx).instrument(span),
        ))
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
        info!("network task started");
        let mut tick = tokio::time::interval(Duration::from_secs(1));
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                biased;
                cmd = rx.recv() => match cmd {
                    Some(Command::Shutdown { reply }) => {
                        let _ = reply.send(());
                        break;
                    }
                    Some(cmd) => self.on_command(cmd),
                    None => break,
                },
                event = self.swarm.select_next_some() => self.on_swarm_event(event),
                Some((id, peer, verdict)) = self.validations.next(), if !self.validations.is_empty() => {
                    self.report(peer, &id, verdict);
                }
                _ = tick.tick() => {
                    self.expire_fetches();
                    self.expire_bans();
                }
            }
        }
        for (_, reply) in self.pending.drain() {
            let _ = reply.send(Err(NetError::Stopped));
        }
        let waiting = self.fetches.drain().map(|(_, f)| f);
        for f in waiting.chain(self.asking.drain().map(|(_, f)| f)) {
            let _ = f.reply.send(Err(NetError::Stopped));
        }
        info!("network task stopped");
    }

    fn on_command(&mut self, cmd: Command) {
        match cmd {
            Command::Publish { data, reply } => {
                let _ = reply.send(self.publish(data));
            }
            Command::Peers { reply } => {
                let gate = &self.swarm.behaviour().gate;
                let peers = self
                    .swarm
                    .connected_peers()
                    .filter(|p| !gate.is_banned(p))
                    .copied()
                    .collect();
                let _ = reply.send(peers);
            }
            Command::ListenAddrs { reply } => {
                let addrs: Vec<Multiaddr> = self.swarm.listeners().cloned().collect();
                if !addrs.is_empty() {
                    let _ = reply.send(Ok(addrs));
                } else if self.listen_waiters.len() >= MAX_LISTEN_WAITERS {
                    let _ = reply.send(Err(NetError::Busy));
                } else {
                    self.listen_waiters.push(reply);
                }
            }
            Command::Dial { addr, reply } => {
                let _ = reply.send(self.dial(addr));
            }
            Command::Request {
                peer,
                request,
                reply,
            } => {
                if self.pending.len() >= MAX_PENDING_REQUESTS {
                    let _ = reply.send(Err(NetError::Busy));
                    return;
                }
                let id = self.swarm.behaviour_mut().sync.send_request(&peer, request);
                self.pending.insert(id, reply);
            }
            Command::FetchBlob { cid, reply, slot } => self.fetch(cid, reply, slot),
            Command::Shutdown { reply } => {
                // Handled by the loop; answering here keeps the match total.
                let _ = reply.send(());
            }
        }
    }

    /// Starts fetching `cid`: asks the connected peers directly, one at a time, then
    /// Bitswap. The reply goes out when a peer sends the block, or with
    /// [`NetError::FetchTimeout`] at the deadline.
    fn fetch(&mut self, cid: Cid, reply: BlobReply, slot: tokio::sync::OwnedSemaphorePermit) {
        if self.asking.len() + self.fetches.len() >= MAX_PENDING_FETCHES {
            let _ = reply.send(Err(NetError::Busy));
            return;
        }
        if self.blob_store.is_none() {
            let _ = reply.send(Err(NetError::Bitswap(
                "this node runs without a blob store".into(),
            )));
            return;
        }
        // Asked from the back: the last peer that had a block goes last in the list.
        let mut untried: Vec<PeerId> = Vec::new();
        if self.ask_peers {
            untried.extend(
                self.swarm
                    .connected_peers()
                    .filter(|p| Some(**p) != self.blob_source),
            );
            untried.extend(self.blob_source.filter(|p| self.swarm.is_connected(p)));
        }
        debug!(%cid, "blob fetch started");
        self.next_source(Fetch {
            cid,
            deadline: Instant::now() + self.fetch_timeout,
            reply,
            untried,
            _slot: slot,
        });
        self.count_fetches();
    }

    /// Asks the next untried peer for `f`'s block, or, when every peer was asked, Bitswap
    /// (which reaches IPFS nodes too).
    fn next_source(&mut self, mut f: Fetch) {
        if f.reply.is_closed() {
            NetMetrics::bump(&self.metrics.blob_fetches_abandoned);
            return;
        }
        while let Some(peer) = f.untried.pop() {
            if !self.swarm.is_connected(&peer) {
                continue;
            }
            if let Some(b) = self.swarm.behaviour_mut().blobs.as_mut() {
                let id = b.send_request(&peer, blob_req::Request { cid: f.cid });
                self.asking.insert(id, f);
                return;
            }
        }
        let Some(bitswap) = self.swarm.behaviour_mut().bitswap.as_mut() else {
            let _ = f.reply.send(Err(NetError::Bitswap(
                "this node runs without a blob store".into(),
            )));
            return;
        };
        let query = bitswap.get(&crate::blobs::bitswap::to_generic(&f.cid));
        debug!(cid = %f.cid, "bitswap fetch started");
        self.fetches.insert(query, f);
    }

    /// A peer's answer to a direct blob request, or the request's failure.
    fn on_blobs(&mut self, event: request_response::Event<blob_req::Request, blob_req::Response>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request {
                    request, channel, ..
                } => {
                    let response = self.serve_blob(peer, &request.cid);
                    if let Some(b) = self.swarm.behaviour_mut().blobs.as_mut()
                        && b.send_response(channel, response).is_err()
                    {
                        debug!(%peer, "blob response not sent: the stream is gone");
                    }
                }
                request_response::Message::Response {
                    request_id,
                    response,
                } => {
                    let Some(f) = self.asking.remove(&request_id) else {
                        return;
                    };
                    match response {
                        blob_req::Response::Block(data) if f.cid.matches(&data) => {
                            NetMetrics::bump(&self.metrics.blobs_fetched);
                            debug!(cid = %f.cid, %peer, len = data.len(), "blob received");
                            self.blob_source = Some(peer);
                            // Kept, so this node serves it too (as Bitswap would keep it).
                            if let Some(store) = &self.blob_store
                                && let Err(e) = store.put_verified(&f.cid, &data)
                            {
                                warn!(cid = %f.cid, err = %e, "fetched blob not kept");
                            }
                            let _ = f.reply.send(Ok(data));
                        }
                        blob_req::Response::Block(_) => {
                            warn!(cid = %f.cid, %peer, "blob does not match its CID");
                            self.strike(peer);
                            self.next_source(f);
                        }
                        blob_req::Response::NotHere | blob_req::Response::Busy => {
                            self.next_source(f);
                        }
                    }
                }
            },
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                debug!(%peer, err = %error, "blob request failed");
                if let Some(f) = self.asking.remove(&request_id) {
                    self.next_source(f);
                }
            }
            request_response::Event::InboundFailure { peer, error, .. } => {
                debug!(%peer, err = %error, "inbound blob request failed");
            }
            request_response::Event::ResponseSent { .. } => {}
        }
        self.count_fetches();
    }

    /// Answers a peer's blob request from the store, within the peer's rate: one token
    /// to ask, one more per [`BLOB_TOKEN_BYTES`](super::BLOB_TOKEN_BYTES) of the block
    /// served.
    fn serve_blob(&mut self, peer: PeerId, cid: &Cid) -> blob_req::Response {
        let busy = |actor: &mut Self| {
            NetMetrics::bump(&actor.metrics.blob_requests_throttled);
            actor.flood(peer, 1, "blob requests far over its rate");
            blob_req::Response::Busy
        };
        if !self.blob_rate.take(peer, 1, Instant::now()) {
            return busy(self);
        }
        match self.blob_store.as_ref().map(|s| s.get(cid)) {
            Some(Ok(Some(data))) => {
                // The asking token is spent; the rest of the block's cost now.
                let size = super::blob_cost(data.len()) - 1;
                if size > 0 && !self.blob_rate.take(peer, size, Instant::now()) {
                    return busy(self);
                }
                NetMetrics::bump(&self.metrics.blob_requests_served);
                blob_req::Response::Block(data)
            }
            Some(Err(e)) => {
                warn!(%cid, err = %e, "blob not read for a peer");
                blob_req::Response::NotHere
            }
            _ => blob_req::Response::NotHere,
        }
    }

    /// Cancels the fetches past their deadline (answered with a timeout) and those whose
    /// requester stopped waiting (answered to no one), freeing their slots.
    fn expire_fetches(&mut self) {
        let now = Instant::now();
        let asked: Vec<OutboundRequestId> = self
            .asking
            .iter()
            .filter(|(_, f)| f.over(now))
            .map(|(id, _)| *id)
            .collect();
        for id in asked {
            // The answer, should it still come, finds no fetch and is dropped.
            if let Some(f) = self.asking.remove(&id) {
                self.end_fetch(f);
            }
        }
        let ended: Vec<beetswap::QueryId> = self
            .fetches
            .iter()
            .filter(|(_, f)| f.over(now))
            .map(|(q, _)| *q)
            .collect();
        for q in ended {
            if let Some(f) = self.fetches.remove(&q) {
                if let Some(b) = self.swarm.behaviour_mut().bitswap.as_mut() {
                    b.cancel(q);
                }
                self.end_fetch(f);
            }
        }
        self.count_fetches();
    }

    /// Ends a fetch taken out of its map: let go when its requester stopped waiting,
    /// answered with a timeout otherwise.
    fn end_fetch(&self, f: Fetch) {
        if f.reply.is_closed() {
            NetMetrics::bump(&self.metrics.blob_fetches_abandoned);
            debug!(cid = %f.cid, "blob fetch let go: its requester stopped waiting");
            return;
        }
        NetMetrics::bump(&self.metrics.blob_fetches_failed);
        warn!(cid = %f.cid, "no peer sent the block in time");
        let _ = f.reply.send(Err(NetError::FetchTimeout(f.cid)));
    }

    /// Publishes how many fetches are under way.
    fn count_fetches(&self) {
        let n = u64::try_from(self.asking.len() + self.fetches.len()).unwrap_or(u64::MAX);
        self.metrics
            .blob_fetches_pending
            .store(n, std::sync::atomic::Ordering::Relaxed);
    }

    fn on_bitswap(&mut self, event: beetswap::Event) {
        match event {
            beetswap::Event::GetQueryResponse { query_id, data } => {
                let Some(f) = self.fetches.remove(&query_id) else {
                    return;
                };
                // Bitswap hashed the block against the CID already; checked again here
                // because a seat decrypts whatever this returns.
                if f.cid.matches(&data) {
                    NetMetrics::bump(&self.metrics.blobs_fetched);
                    debug!(cid = %f.cid, len = data.len(), "bitswap block received");
                    let _ = f.reply.send(Ok(data));
                } else {
                    NetMetrics::bump(&self.metrics.blob_fetches_failed);
                    warn!(cid = %f.cid, "bitswap block does not match its CID");
                    let _ = f.reply.send(Err(NetError::Bitswap(
                        format!("block does not match {}", f.cid).into(),
                    )));
                }
            }
            beetswap::Event::GetQueryError { query_id, error } => {
                if let Some(f) = self.fetches.remove(&query_id) {
                    NetMetrics::bump(&self.metrics.blob_fetches_failed);
                    warn!(cid = %f.cid, err = %error, "bitswap fetch failed");
                    let _ = f.reply.send(Err(NetError::Bitswap(error.into())));
                }
            }
        }
        self.count_fetches();
    }

    fn publish(&mut self, data: Vec<u8>) -> Result<(), NetError> {
        let len = data.len();
        match self
            .swarm
            .behaviour_mut()
            .gossipsub
            .publish(self.topic.clone(), data)
        {
            Ok(id) => {
                NetMetrics::add(&self.metrics.gossip_bytes_published, len);
                debug!(%id, len, "published");
                Ok(())
            }
            Err(PublishError::NoPeersSubscribedToTopic) => {
                debug!(len, "no peer subscribed to the transaction topic yet");
                Ok(())
            }
            Err(PublishError::Duplicate) => {
                debug!(len, "already published");
                Ok(())
            }
            Err(PublishError::MessageTooLarge) => Err(NetError::TooLarge {
                len,
                limit: trust_protocol::block::MAX_TX_BYTES,
            }),
            Err(e) => Err(NetError::Publish(e)),
        }
    }

    fn dial(&mut self, addr: Multiaddr) -> Result<(), NetError> {
        if let Some(Protocol::P2p(peer)) = addr.iter().last() {
            self.swarm
                .behaviour_mut()
                .kad
                .add_address(&peer, addr.clone());
        }
        self.swarm.dial(addr).map_err(NetError::Dial)
    }

    fn on_swarm_event(&mut self, event: SwarmEvent<BehaviourEvent>) {
        match event {
            SwarmEvent::Behaviour(BehaviourEvent::Gossipsub(ev)) => self.on_gossip(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Sync(ev)) => self.on_sync(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Identify(ev)) => self.on_identify(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Kad(ev)) => on_kad(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Ping(ev)) => on_ping(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Bitswap(ev)) => self.on_bitswap(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Blobs(ev)) => self.on_blobs(ev),
            SwarmEvent::Behaviour(BehaviourEvent::Gate(never))
            | SwarmEvent::Behaviour(BehaviourEvent::Limits(never)) => match never {},
            SwarmEvent::NewListenAddr { address, .. } => {
                info!(%address, "listening");
                let addrs: Vec<Multiaddr> = self.swarm.listeners().cloned().collect();
                for waiter in self.listen_waiters.drain(..) {
                    let _ = waiter.send(Ok(addrs.clone()));
                }
            }
            SwarmEvent::ListenerClosed {
                addresses, reason, ..
            } => {
                warn!(?addresses, ?reason, "listener closed");
                self.fail_listen_waiters_if_deaf();
            }
            SwarmEvent::ListenerError { error, .. } => {
                warn!(err = %error, "listener error");
            }
            SwarmEvent::ConnectionEstablished {
                peer_id,
                endpoint,
                num_established,
                ..
            } => {
                if self.swarm.behaviour().gate.is_banned(&peer_id) {
                    warn!(peer = %peer_id, "banned peer connected again; disconnecting");
                    let _ = self.swarm.disconnect_peer_id(peer_id);
                } else {
                    debug!(peer = %peer_id, addr = %endpoint.get_remote_address(), num_established, "connected");
                }
            }
            SwarmEvent::ConnectionClosed {
                peer_id,
                num_established,
                cause,
                ..
            } => {
                if num_established == 0 {
                    self.peers.disconnected(&peer_id);
                }
                debug!(peer = %peer_id, num_established, cause = ?cause, "connection closed");
            }
            SwarmEvent::OutgoingConnectionError { peer_id, error, .. } => {
                debug!(peer = ?peer_id, err = %error, "outgoing connection failed");
            }
            SwarmEvent::IncomingConnectionError {
                send_back_addr,
                error,
                ..
            } => {
                debug!(addr = %send_back_addr, err = %error, "incoming connection failed");
            }
            other => trace!(event = ?other, "swarm event"),
        }
    }

    fn fail_listen_waiters_if_deaf(&mut self) {
        if self.swarm.listeners().next().is_none() {
            for waiter in self.listen_waiters.drain(..) {
                let _ = waiter.send(Err(NetError::NotListening));
            }
        }
    }

    fn on_gossip(&mut self, event: gossipsub::Event) {
        match event {
            gossipsub::Event::Message {
                propagation_source,
                message_id,
                message,
            } => self.on_gossip_message(propagation_source, &message_id, &message.data),
            gossipsub::Event::Subscribed { peer_id, topic } => {
                debug!(peer = %peer_id, %topic, "peer subscribed");
            }
            gossipsub::Event::Unsubscribed { peer_id, topic } => {
                debug!(peer = %peer_id, %topic, "peer unsubscribed");
            }
            gossipsub::Event::GossipsubNotSupported { peer_id } => {
                debug!(peer = %peer_id, "peer does not speak gossipsub");
            }
            gossipsub::Event::SlowPeer {
                peer_id,
                failed_messages,
            } => {
                warn!(peer = %peer_id, ?failed_messages, "peer too slow to take our gossip");
            }
        }
    }

    /// Validates one gossiped message: the stateless checks here, then the node's verdict,
    /// now or once it comes (see [`TxCheck`]).
    fn on_gossip_message(&mut self, peer: PeerId, id: &MessageId, data: &[u8]) {
        NetMetrics::add(&self.metrics.gossip_bytes_received, data.len());
        let verdict = match gossip::check_tx(data, &self.chain_id) {
            Ok(tx) => match self.handler.on_tx(peer, tx) {
                TxCheck::Now(v) => v,
                TxCheck::Later(_) if self.validations.len() >= MAX_PENDING_VALIDATIONS => {
                    debug!(%peer, "too many transactions waiting for a verdict; ignored");
                    Err(TxVerdict::Ignore)
                }
                TxCheck::Later(verdict) => {
                    let id = id.clone();
                    self.validations
                        .push(verdict.map(move |v| (id, peer, v)).boxed());
                    return;
                }
            },
            Err(rejection) => {
                let counter = match rejection {
                    TxRejection::Oversized(_) => &self.metrics.gossip_txs_rejected_oversized,
                    TxRejection::Malformed(_) => &self.metrics.gossip_txs_rejected_malformed,
                    TxRejection::Signature(_) => &self.metrics.gossip_txs_rejected_signature,
                    TxRejection::Format(_) => &self.metrics.gossip_txs_rejected_invalid,
                };
                NetMetrics::bump(counter);
                warn!(%peer, reason = %rejection, "gossiped message rejected");
                self.report_to_gossipsub(peer, id, MessageAcceptance::Reject);
                self.strike(peer);
                return;
            }
        };
        self.report(peer, id, verdict);
    }

    /// Tells gossipsub the node's verdict on a message and penalises its forwarder for
    /// invalid data (a strike) or junk (flood points).
    fn report(&mut self, peer: PeerId, id: &MessageId, verdict: Result<(), TxVerdict>) {
        let acceptance = match verdict {
            Ok(()) => {
                NetMetrics::bump(&self.metrics.gossip_txs_accepted);
                MessageAcceptance::Accept
            }
            Err(TxVerdict::Ignore) => {
                NetMetrics::bump(&self.metrics.gossip_txs_ignored);
                MessageAcceptance::Ignore
            }
            Err(TxVerdict::Refuse(reason)) => {
                NetMetrics::bump(&self.metrics.gossip_txs_refused);
                debug!(%peer, %reason, "gossiped transaction refused as junk");
                self.report_to_gossipsub(peer, id, MessageAcceptance::Ignore);
                self.flood(peer, 1, "a flood of junk");
                return;
            }
            Err(TxVerdict::Reject(reason)) => {
                NetMetrics::bump(&self.metrics.gossip_txs_rejected_invalid);
                warn!(%peer, %reason, "gossiped transaction rejected by the node");
                self.report_to_gossipsub(peer, id, MessageAcceptance::Reject);
                self.strike(peer);
                return;
            }
        };
        self.report_to_gossipsub(peer, id, acceptance);
    }

    fn report_to_gossipsub(&mut self, peer: PeerId, id: &MessageId, verdict: MessageAcceptance) {
        // `false` when gossipsub no longer holds the message (validated too late): the
        // penalty below still applies.
        let _ = self
            .swarm
            .behaviour_mut()
            .gossipsub
            .report_message_validation_result(id, &peer, verdict);
    }

    fn strike(&mut self, peer: PeerId) {
        if self.peers.strike(peer) >= BAN_AFTER_REJECTIONS {
            self.ban(peer, "too many rejected gossip messages");
        }
    }

    fn flood(&mut self, peer: PeerId, points: u32, reason: &str) {
        if self.peers.flood(peer, points, Instant::now()) >= FLOOD_BAN_POINTS {
            self.ban(peer, reason);
        }
    }

    /// Disconnects `peer` and refuses it, and new identities from its addresses, for the
    /// ban's duration.
    fn ban(&mut self, peer: PeerId, reason: &str) {
        let until = Instant::now() + self.ban_duration;
        let behaviour = self.swarm.behaviour_mut();
        // The gate also closes the peer's open connections.
        if !behaviour.gate.ban(peer, until) {
            return;
        }
        behaviour.gossipsub.blacklist_peer(&peer);
        behaviour.kad.remove_peer(&peer);
        self.peers.forget(&peer);
        NetMetrics::bump(&self.metrics.peers_banned);
        warn!(%peer, reason, "peer banned");
    }

    fn expire_bans(&mut self) {
        let behaviour = self.swarm.behaviour_mut();
        for peer in behaviour.gate.expire(Instant::now()) {
            behaviour.gossipsub.remove_blacklisted_peer(&peer);
            info!(%peer, "ban lifted");
        }
    }

    fn on_sync(&mut self, event: request_response::Event<Request, Response>) {
        match event {
            request_response::Event::Message { peer, message, .. } => match message {
                request_response::Message::Request {
                    request, channel, ..
                } => {
                    let cost = match request {
                        Request::Status => 1,
                        Request::Blocks { .. } => BLOCKS_COST,
                    };
                    let response = if self.peers.take(peer, cost, Instant::now()) {
                        NetMetrics::bump(&self.metrics.sync_requests_served);
                        self.serve(&request)
                    } else {
                        NetMetrics::bump(&self.metrics.sync_requests_throttled);
                        debug!(%peer, "sync request over the peer's rate; answered busy");
                        self.flood(peer, 1, "sync requests far over its rate");
                        Response::Busy
                    };
                    if self
                        .swarm
                        .behaviour_mut()
                        .sync
                        .send_response(channel, response)
                        .is_err()
                    {
                        debug!(%peer, "sync response not sent: the stream is gone");
                    }
                }
                request_response::Message::Response {
                    request_id,
                    response,
                } => {
                    if let Some(reply) = self.pending.remove(&request_id) {
                        let _ = reply.send(Ok(response));
                    }
                }
            },
            request_response::Event::OutboundFailure {
                peer,
                request_id,
                error,
                ..
            } => {
                if matches!(&error, OutboundFailure::Io(e) if e.kind() == io::ErrorKind::InvalidData)
                {
                    NetMetrics::bump(&self.metrics.sync_responses_malformed);
                    warn!(%peer, err = %error, "malformed sync response");
                } else {
                    debug!(%peer, err = %error, "sync request failed");
                }
                if let Some(reply) = self.pending.remove(&request_id) {
                    let _ = reply.send(Err(NetError::Request(error.into())));
                }
            }
            request_response::Event::InboundFailure { peer, error, .. } => {
                debug!(%peer, err = %error, "inbound sync request failed");
            }
            request_response::Event::ResponseSent { peer, .. } => {
                trace!(%peer, "sync response sent");
            }
        }
    }

    /// Answers a sync request from the node's handler.
    fn serve(&self, request: &Request) -> Response {
        match *request {
            Request::Status => Response::Status(self.handler.sync_status()),
            Request::Blocks { from, max } => {
                let max = max.min(MAX_BLOCKS_PER_REQUEST);
                // The handler stops at the budget; the packing is the last word on size.
                Response::blocks_within_limit(
                    self.handler.sync_blocks(from, max, BLOCKS_BUDGET),
                    max,
                )
            }
        }
    }

    fn on_identify(&mut self, event: identify::Event) {
        let identify::Event::Received { peer_id, info, .. } = event else {
            return;
        };
        if info.protocol_version != ID_PROTOCOL {
            // An IPFS node (e.g. Kubo) may fetch segment ciphertexts from us over Bitswap;
            // it is kept for that alone and never enters our routing table.
            let bitswap_on = self.swarm.behaviour().bitswap.is_enabled();
            if bitswap_on
                && info
                    .protocols
                    .iter()
                    .any(|p| p.as_ref() == BITSWAP_PROTOCOL)
            {
                info!(
                    peer = %peer_id,
                    agent = %info.agent_version,
                    "IPFS peer connected; serving it blocks over Bitswap only"
                );
                return;
            }
            warn!(
                peer = %peer_id,
                version = %info.protocol_version,
                "peer speaks another protocol version; disconnecting"
            );
            let _ = self.swarm.disconnect_peer_id(peer_id);
            return;
        }
        if !info.protocols.iter().any(|p| p.as_ref() == KAD_PROTOCOL) {
            return;
        }
        let kad = &mut self.swarm.behaviour_mut().kad;
        for addr in info.listen_addrs {
            kad.add_address(&peer_id, addr);
        }
    }
}

fn on_kad(event: kad::Event) {
    match event {
        kad::Event::RoutingUpdated { peer, .. } => debug!(%peer, "routing table updated"),
        other => trace!(event = ?other, "kademlia event"),
    }
}

fn on_ping(event: ping::Event) {
    if let Err(e) = event.result {
        debug!(peer = %event.peer, err = %e, "ping failed");
    }
}

/// Runs the swarm's connection tasks (encryption, multiplexing, each protocol's handler)
/// on tokio, their CPU counted as the network's ([`crate::cpu`]).
struct MeasuredExecutor;

impl libp2p::swarm::Executor for MeasuredExecutor {
    fn exec(&self, future: std::pin::Pin<Box<dyn std::future::Future<Output = ()> + Send>>) {
        tokio::spawn(crate::cpu::Measured::new(crate::cpu::Part::Network, future));
    }
}
