//! The node's libp2p swarm: transaction gossip, block sync and peer discovery.
//!
//! One task (the actor in `actor.rs`) owns the [`libp2p::Swarm`]; the rest of the node holds
//! a cloneable [`NetHandle`] that sends commands over a bounded channel, each carrying a
//! `oneshot` for its reply. The swarm's behaviour (`behaviour.rs`) composes gossipsub
//! for transactions, a request-response protocol for block sync ([`sync`]), identify,
//! Kademlia, ping and Bitswap (blobs), plus connection limits and a block list for banned
//! peers.
//!
//! Every gossiped transaction is checked inside the actor before gossipsub may forward
//! it: size, canonical decoding, signature, stateless format rules, and finally the
//! node's [`NetHandler::on_tx`]. A peer that forwards [`BAN_AFTER_REJECTIONS`] rejected
//! messages is disconnected and refused from then on. Different chains never mix: the
//! gossip topic names the chain ([`tx_topic`]).

mod actor;
mod behaviour;
mod gossip;
mod handle;
mod metrics;
mod peers;
pub mod sync;

use std::sync::Arc;

use libp2p::{Multiaddr, PeerId, gossipsub::PublishError, swarm::DialError};
use serde::{Deserialize, Serialize};
use tokio::{sync::mpsc, task::JoinHandle};
use trust_protocol::{Hash, tx::SignedTx};

pub use self::{
    gossip::{GOSSIP_ENVELOPE_MARGIN, tx_topic},
    handle::NetHandle,
    metrics::NetMetrics,
};

/// The stateless checks a gossiped transaction passes inside the swarm task before
/// gossipsub may forward it (size, canonical decoding, signature, format rules), with the
/// reason for a rejection as text. Public so the fuzz targets run the node's own check.
pub fn check_gossiped_tx(data: &[u8]) -> Result<SignedTx, String> {
    gossip::check_tx(data).map_err(|e| e.to_string())
}

/// Default bound on established connections (and so on peers).
pub const DEFAULT_MAX_PEERS: usize = 50;
/// Capacity of the command channel from [`NetHandle`]s to the swarm task.
pub const COMMAND_CAPACITY: usize = 256;
/// How long a Bitswap fetch may wait for some peer to send the block.
pub const BLOB_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// Outstanding Bitswap fetches.
pub const MAX_PENDING_FETCHES: usize = 256;
/// Rejected gossip messages after which the forwarding peer is banned.
pub const BAN_AFTER_REJECTIONS: u32 = 3;
/// Most banned peers remembered; the oldest ban is lifted when a new one does not fit.
pub const MAX_BANNED_PEERS: usize = 1024;
/// Identify protocol version: peers announcing another one are disconnected.
pub const ID_PROTOCOL: &str = "/trust/id/1";
/// Kademlia protocol name, separate from the public IPFS DHT.
pub const KAD_PROTOCOL: &str = "/trust/kad/1";

/// How to start the swarm.
#[derive(Debug, Clone)]
pub struct NetConfig {
    /// The node's libp2p identity (ed25519).
    pub keypair: libp2p::identity::Keypair,
    /// Where to listen, e.g. `/ip4/127.0.0.1/tcp/0`.
    pub listen: Multiaddr,
    /// Peers to dial at start, each with a `/p2p/<peer id>` suffix so that it also
    /// seeds Kademlia.
    pub bootstrap: Vec<Multiaddr>,
    /// The chain's genesis hash; it names the gossip topic so chains never mix.
    pub chain_id: Hash,
    /// Bound on established connections, and so on peers ([`DEFAULT_MAX_PEERS`]).
    pub max_peers: usize,
    /// The blob store Bitswap serves from and fetches into; `None` turns Bitswap off.
    pub blobs: Option<crate::blobs::BlobStore>,
    /// How long a Bitswap fetch waits for a peer to send the block
    /// ([`BLOB_FETCH_TIMEOUT`]).
    pub blob_fetch_timeout: std::time::Duration,
}

impl NetConfig {
    /// A configuration with no bootstrap peers and [`DEFAULT_MAX_PEERS`].
    pub fn new(keypair: libp2p::identity::Keypair, listen: Multiaddr, chain_id: Hash) -> Self {
        Self {
            keypair,
            listen,
            bootstrap: Vec::new(),
            chain_id,
            max_peers: DEFAULT_MAX_PEERS,
            blobs: None,
            blob_fetch_timeout: BLOB_FETCH_TIMEOUT,
        }
    }
}

/// A node's sync position, as served to peers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncStatus {
    /// Height of the last decided block (0 before the first).
    pub height: u64,
    /// Hash of that block.
    pub tip: Hash,
}

/// Why the node did not accept a gossiped transaction.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TxVerdict {
    /// Harmless: a duplicate, a stale nonce. Not forwarded, the peer is not penalised.
    #[error("ignored")]
    Ignore,
    /// Invalid data: not forwarded, and the forwarding peer is penalised.
    #[error("rejected: {0}")]
    Reject(String),
}

/// What the swarm asks of the rest of the node. Called synchronously inside the swarm
/// task, so every method must return quickly and never block on the network.
pub trait NetHandler: Send + Sync + 'static {
    /// A gossiped transaction that decoded, passed its format checks and whose signature
    /// verified. `Ok(())` accepts it and lets gossipsub forward it.
    fn on_tx(&self, from: PeerId, tx: SignedTx) -> Result<(), TxVerdict>;
    /// The node's current sync position.
    fn sync_status(&self) -> SyncStatus;
    /// Up to `max` encoded blocks starting at height `from`, served to peers as is.
    fn sync_blocks(&self, from: u64, max: u32) -> Vec<Vec<u8>>;
}

/// Errors of the network subsystem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The transport or a behaviour could not be set up.
    #[error("network setup failed: {0}")]
    Setup(String),
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}")]
    Listen {
        /// The address asked for.
        addr: Multiaddr,
        /// Why.
        #[source]
        source: libp2p::TransportError<std::io::Error>,
    },
    /// Every listener has closed, so there is no address to report.
    #[error("the node is not listening on any address")]
    NotListening,
    /// A message is larger than the gossip limit.
    #[error("message of {len} bytes exceeds the limit of {limit} bytes")]
    TooLarge {
        /// Message length.
        len: usize,
        /// The limit that applied.
        limit: usize,
    },
    /// Gossipsub refused to publish.
    #[error("publish failed")]
    Publish(#[source] PublishError),
    /// A dial could not be started.
    #[error("dial failed")]
    Dial(#[source] DialError),
    /// A sync request failed or got an answer that does not fit the question.
    #[error("request failed: {0}")]
    Request(String),
    /// No peer sent the block in time.
    #[error("no peer sent {0} within the fetch timeout")]
    FetchTimeout(trust_protocol::cid::Cid),
    /// Bitswap is off on this node, or failed.
    #[error("bitswap: {0}")]
    Bitswap(String),
    /// Too many requests or waiters are pending; try again later.
    #[error("too many pending requests")]
    Busy,
    /// The swarm task has stopped.
    #[error("the network task has stopped")]
    Stopped,
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
    let actor = actor::Actor::new(cfg, handler, metrics)?;
    let (tx, rx) = mpsc::channel(COMMAND_CAPACITY);
    let task = actor.spawn(rx);
    Ok((NetHandle::new(tx), task))
}
