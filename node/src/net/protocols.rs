//! The composed network behaviour, every protocol the swarm speaks, and its construction.

use std::{sync::Arc, time::Duration};

use libp2p::{
    PeerId, StreamProtocol, connection_limits, gossipsub, identify,
    identity::Keypair,
    kad, ping, request_response,
    swarm::{NetworkBehaviour, behaviour::toggle::Toggle},
};

use crate::blobs::{
    BlobStore,
    bitswap::{MAX_MULTIHASH, Sha256Hasher},
};

use super::{
    ID_PROTOCOL, KAD_PROTOCOL, MAX_BANNED_PEERS, NetError, NetMetrics,
    blob_req::{self, BlobCodec},
    gate::{Gate, Slots},
    gossip,
    sync::{self, SyncCodec},
};

/// How long a sync request may take before it fails.
const SYNC_REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Concurrent sync streams per connection.
const SYNC_MAX_STREAMS: usize = 16;
/// How long a blob request may take before the asker tries elsewhere.
const BLOB_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// Connections to one peer (two allow a simultaneous dial to settle).
const MAX_CONNECTIONS_PER_PEER: u32 = 2;

/// Every protocol the node speaks, polled in field order.
#[derive(NetworkBehaviour)]
pub(crate) struct Behaviour {
    /// Who may connect: slots for validators and bootstrap peers, strangers capped per
    /// address, bans by id and address; closes a banned peer's connections.
    pub(crate) gate: Gate,
    /// Bounds pending connections and connections per peer.
    pub(crate) limits: connection_limits::Behaviour,
    /// Transaction gossip on the chain's topic, validated by the application.
    pub(crate) gossipsub: gossipsub::Behaviour,
    /// Block sync: status and block-range requests.
    pub(crate) sync: request_response::Behaviour<SyncCodec>,
    /// Exchanges listen addresses and protocol versions with each peer.
    pub(crate) identify: identify::Behaviour,
    /// Peer discovery.
    pub(crate) kad: kad::Behaviour<kad::store::MemoryStore>,
    /// Keeps idle connections alive and measures round trips.
    pub(crate) ping: ping::Behaviour,
    /// Blob requests between trust nodes ([`blob_req`]): served from the node's blob
    /// store, and asked before Bitswap. Off when the node has no blob store.
    pub(crate) blobs: Toggle<request_response::Behaviour<BlobCodec>>,
    /// Bitswap 1.2.0 over the node's blob store: serves segment ciphertexts to peers (our
    /// nodes and IPFS nodes alike) and fetches the ones this node's seats need. Off when
    /// the node has no blob store.
    pub(crate) bitswap: Toggle<beetswap::Behaviour<MAX_MULTIHASH, BlobStore>>,
}

impl Behaviour {
    /// Builds the behaviour for `keypair`, subscribed to nothing yet.
    pub(crate) fn new(
        keypair: &Keypair,
        topic: &gossipsub::IdentTopic,
        slots: Slots,
        reserved: Vec<PeerId>,
        blobs: Option<BlobStore>,
        metrics: Arc<NetMetrics>,
    ) -> Result<Self, NetError> {
        let local = keypair.public().to_peer_id();
        let max_peers = u32::try_from(slots.max_peers).unwrap_or(u32::MAX);

        let mut gossipsub = gossipsub::Behaviour::new(
            gossipsub::MessageAuthenticity::Signed(keypair.clone()),
            gossip::config(topic).map_err(NetError::setup("gossipsub config"))?,
        )
        .map_err(NetError::setup("gossipsub"))?;
        let (params, thresholds) = gossip::score_params(topic);
        gossipsub
            .with_peer_score(params, thresholds)
            .map_err(NetError::setup("gossipsub scoring"))?;

        let sync = request_response::Behaviour::with_codec(
            SyncCodec::new(),
            [(sync::PROTOCOL, request_response::ProtocolSupport::Full)],
            request_response::Config::default()
                .with_request_timeout(SYNC_REQUEST_TIMEOUT)
                .with_max_concurrent_streams(SYNC_MAX_STREAMS),
        );

        let identify = identify::Behaviour::new(
            identify::Config::new(ID_PROTOCOL.to_owned(), keypair.public())
                .with_agent_version(format!("trust-node/{}", env!("CARGO_PKG_VERSION"))),
        );

        let mut kad = kad::Behaviour::with_config(
            local,
            kad::store::MemoryStore::new(local),
            kad::Config::new(StreamProtocol::new(KAD_PROTOCOL)),
        );
        kad.set_mode(Some(kad::Mode::Server));

        // Totals are the gate's (it keeps slots for reserved peers); this bounds handshakes
        // under way and connections per peer.
        let limits = connection_limits::ConnectionLimits::default()
            .with_max_pending_incoming(Some(max_peers))
            .with_max_established_per_peer(Some(MAX_CONNECTIONS_PER_PEER));

        Ok(Self {
            gate: Gate::new(slots, reserved, MAX_BANNED_PEERS, metrics),
            limits: connection_limits::Behaviour::new(limits),
            gossipsub,
            sync,
            identify,
            kad,
            ping: ping::Behaviour::new(ping::Config::new()),
            blobs: Toggle::from(blobs.is_some().then(|| {
                request_response::Behaviour::with_codec(
                    BlobCodec::new(),
                    [(blob_req::PROTOCOL, request_response::ProtocolSupport::Full)],
                    request_response::Config::default()
                        .with_request_timeout(BLOB_REQUEST_TIMEOUT)
                        .with_max_concurrent_streams(super::MAX_PENDING_FETCHES),
                )
            })),
            bitswap: Toggle::from(blobs.map(|b| {
                beetswap::Behaviour::builder(Arc::new(b))
                    .register_multihasher(Sha256Hasher)
                    .build()
            })),
        })
    }
}
