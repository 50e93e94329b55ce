//! The node's libp2p swarm: transaction gossip, block sync and peer discovery.
//!
//! One task (the actor in `actor.rs`) owns the [`libp2p::Swarm`]; the rest of the node holds
//! a cloneable [`NetHandle`] that sends commands over a bounded channel, each carrying a
//! `oneshot` for its reply. The swarm's behaviour (`protocols.rs`) composes gossipsub
//! for transactions, a request-response protocol for block sync ([`sync`]), identify,
//! Kademlia, ping and Bitswap (blobs), plus per-peer connection limits and the connection
//! gate (`gate.rs`).
//!
//! Every gossiped transaction is checked inside the actor before gossipsub may forward
//! it: size, canonical decoding, signature, stateless format rules, and finally the
//! node's [`NetHandler::on_tx`], whose verdict may come later (the mempool's owner
//! decides, see [`TxCheck`]). Different chains never mix: the gossip topic names the
//! chain ([`tx_topic`]).
//!
//! What a stranger can make this node do is bounded per peer:
//!
//! - **Invalid data** (a bad signature, a malformed or oversized message) is a strike and
//!   a gossipsub penalty; [`BAN_AFTER_REJECTIONS`] strikes ban the peer.
//! - **Junk with a valid signature** (a transaction its sender cannot pay for, a vote from
//!   no seat: [`TxVerdict::Refuse`]) and **sync requests beyond the peer's rate** add to
//!   the peer's flood meter, which leaks [`FLOOD_LEAK_PER_SEC`] points a second; at
//!   [`FLOOD_BAN_POINTS`] the peer is banned. A few refusals a block, as a peer a block
//!   ahead or behind causes, leak away.
//! - **Sync requests** spend tokens from a per-peer bucket ([`NetConfig::sync_rate`]); a
//!   request without tokens is answered [`sync::Response::Busy`] at no cost. A blocks
//!   answer stops at [`sync::BLOCKS_BUDGET`] bytes, counted from stored sizes before
//!   anything is read further ([`NetHandler::sync_blocks`]).
//! - **Bans** last [`BAN_DURATION`] and cover the peer's id and every IP address it was
//!   connected from, so a new identity from the same host stays out; the gate (`gate.rs`)
//!   keeps slots for validators and bootstrap peers and caps strangers per address.
//!
//! Laid out as every actor of this crate (`net`, `mempool`, `audit::duties`): `actor.rs` is
//! the task's loop, `ingress.rs` its mailbox and messages, `state.rs` what the loop owns.
//! Here the actor's state holds the swarm itself, so there is no `state.rs`; beside them are
//! the protocols (`protocols.rs`, `sync`, `blob_req`, `gossip`), the gate and the peer book.

mod actor;
pub mod blob_req;
mod gate;
mod gossip;
mod ingress;
mod metrics;
mod peers;
mod protocols;
#[cfg(feature = "misbehave")]
pub mod spam;
pub mod sync;
pub mod tasks;

pub use self::{actor::spawn, tasks::run_swarm};

use std::time::Duration;

use futures::future::BoxFuture;
use libp2p::{Multiaddr, PeerId, gossipsub::PublishError, swarm::DialError};
use serde::{Deserialize, Serialize};
use trust_protocol::{AccountId, Hash, tx::SignedTx};

use crate::Cause;

pub use self::{
    gossip::{GOSSIP_ENVELOPE_MARGIN, TxRejection, tx_topic},
    ingress::NetHandle,
    metrics::NetMetrics,
    peers::RateLimit,
};

/// The stateless checks a gossiped transaction passes inside the swarm task before
/// gossipsub may forward it (size, canonical decoding, signature, format rules), with the
/// reason for a rejection; `chain` is the network's chain id, which the signature covers.
/// Public so the fuzz targets run the node's own check.
pub fn check_gossiped_tx(data: &[u8], chain: &Hash) -> Result<SignedTx, TxRejection> {
    gossip::check_tx(data, chain)
}

/// Default bound on established connections (and so on peers).
pub const DEFAULT_MAX_PEERS: usize = 50;
/// Default bound on peers from one IP address that are neither validators nor bootstrap
/// peers.
pub const DEFAULT_MAX_PEERS_PER_IP: usize = 8;
/// Default sync request rate per peer: a status request costs 1 token, a blocks request
/// [`sync::BLOCKS_COST`]; a node polls each peer's status every 2 s.
pub const DEFAULT_SYNC_RATE: RateLimit = RateLimit {
    burst: 64,
    per_sec: 16,
};
/// How long a ban lasts.
pub const BAN_DURATION: Duration = Duration::from_secs(3600);
/// Flood points at which a peer is banned.
pub const FLOOD_BAN_POINTS: u64 = 100;
/// Flood points leaked per second.
pub const FLOOD_LEAK_PER_SEC: u32 = 2;
/// Gossiped transactions waiting for the mempool's verdict at once; beyond it a message is
/// ignored (not forwarded, the peer not penalised).
pub const MAX_PENDING_VALIDATIONS: usize = 1024;
/// Capacity of the command channel from [`NetHandle`]s to the swarm task.
pub const COMMAND_CAPACITY: usize = 256;
/// How long a Bitswap fetch may wait for some peer to send the block.
pub const BLOB_FETCH_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(20);
/// Outstanding blob fetches (asked of peers directly or over Bitswap).
pub const MAX_PENDING_FETCHES: usize = 256;
/// Blob requests served per peer ([`blob_req`]): one token a block, and one more per
/// [`BLOB_TOKEN_BYTES`] of it, so large blocks cannot be pulled at the small ones' rate. A
/// seat node of a burst of 100 sessions of 20 segments (each a few KiB) asks one peer for
/// about 1,400 blocks in 2 s.
pub const BLOB_RATE: RateLimit = RateLimit {
    burst: 2048,
    per_sec: 1024,
};
/// Bytes of a served block that cost one more token of [`BLOB_RATE`] (a 1 MiB block: 65
/// tokens, so at most about 16 MiB a second to one peer).
pub const BLOB_TOKEN_BYTES: usize = 16 * 1024;

/// Tokens of [`BLOB_RATE`] serving a block of `len` bytes costs.
pub(crate) fn blob_cost(len: usize) -> u32 {
    u32::try_from(len / BLOB_TOKEN_BYTES)
        .unwrap_or(u32::MAX)
        .saturating_add(1)
}
/// Rejected gossip messages after which the forwarding peer is banned.
pub const BAN_AFTER_REJECTIONS: u32 = 3;
/// Most bans remembered, of peer ids and of addresses each; the ban ending first is
/// lifted when a new one does not fit.
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
    /// How long a blob fetch waits for a peer to send the block
    /// ([`BLOB_FETCH_TIMEOUT`]).
    pub blob_fetch_timeout: std::time::Duration,
    /// Whether a blob fetch first asks the connected peers directly ([`blob_req`]) before
    /// Bitswap (on; tests of the Bitswap path turn it off).
    pub ask_peers_for_blobs: bool,
    /// Peers that are neither validators nor bootstrap peers allowed from one IP address
    /// ([`DEFAULT_MAX_PEERS_PER_IP`]).
    pub max_peers_per_ip: usize,
    /// Peers that always get a slot and are exempt from address caps and bans (their own
    /// id can still be banned): the validators (see [`validator_peer`]); bootstrap peers
    /// are added from [`NetConfig::bootstrap`].
    pub reserved: Vec<PeerId>,
    /// Sync requests per peer ([`DEFAULT_SYNC_RATE`]).
    pub sync_rate: RateLimit,
    /// How long a ban lasts ([`BAN_DURATION`]).
    pub ban_duration: Duration,
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
            ask_peers_for_blobs: true,
            max_peers_per_ip: DEFAULT_MAX_PEERS_PER_IP,
            reserved: Vec::new(),
            sync_rate: DEFAULT_SYNC_RATE,
            ban_duration: BAN_DURATION,
        }
    }
}

/// The libp2p id of `account`'s node: a node's identity is its account key.
pub fn validator_peer(account: &AccountId) -> Option<PeerId> {
    let key = libp2p::identity::ed25519::PublicKey::try_from_bytes(account.as_bytes()).ok()?;
    Some(libp2p::identity::PublicKey::from(key).to_peer_id())
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
    /// Harmless: a duplicate, a stale nonce, one that cannot apply yet on this node's
    /// state, a busy pool. Not forwarded, the peer is not penalised.
    #[error("ignored")]
    Ignore,
    /// Well-formed and signed, but junk on this node's state (its sender cannot pay, it
    /// holds no seat to vote with): not forwarded, and a point on the forwarding peer's
    /// flood meter (see the module doc).
    #[error("refused: {0}")]
    Refuse(String),
    /// Invalid data: not forwarded, and the forwarding peer is penalised (a strike and a
    /// gossipsub penalty).
    #[error("rejected: {0}")]
    Reject(String),
}

/// The node's answer to a gossiped transaction: now, or later from the task that decides
/// (the actor keeps the future, at most [`MAX_PENDING_VALIDATIONS`] at once, and tells
/// gossipsub when it resolves).
pub enum TxCheck {
    /// Decided.
    Now(Result<(), TxVerdict>),
    /// To be decided.
    Later(BoxFuture<'static, Result<(), TxVerdict>>),
}

impl std::fmt::Debug for TxCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxCheck::Now(v) => f.debug_tuple("Now").field(v).finish(),
            TxCheck::Later(_) => f.write_str("Later(..)"),
        }
    }
}

impl From<Result<(), TxVerdict>> for TxCheck {
    fn from(r: Result<(), TxVerdict>) -> Self {
        TxCheck::Now(r)
    }
}

/// What the swarm asks of the rest of the node. Called synchronously inside the swarm
/// task, so every method must return quickly and never block on the network.
pub trait NetHandler: Send + Sync + 'static {
    /// A gossiped transaction that decoded, passed its format checks and whose signature
    /// verified. `Ok(())` accepts it and lets gossipsub forward it.
    fn on_tx(&self, from: PeerId, tx: SignedTx) -> TxCheck;
    /// The node's current sync position.
    fn sync_status(&self) -> SyncStatus;
    /// Up to `max` encoded blocks starting at height `from`, served to peers as is, whose
    /// lengths sum to at most `budget` bytes: the server stops before a block that would
    /// go over, judging by its stored size before it reads or decodes anything more.
    fn sync_blocks(&self, from: u64, max: u32, budget: usize) -> Vec<Vec<u8>>;
}

/// Errors of the network subsystem.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum NetError {
    /// The transport or a behaviour could not be set up.
    #[error("network setup failed: {stage}: {source}")]
    Setup {
        /// What was being set up (`transport`, `gossipsub`, ...).
        stage: &'static str,
        /// Why.
        #[source]
        source: Cause,
    },
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
    Request(#[source] Cause),
    /// No peer sent the block in time.
    #[error("no peer sent {0} within the fetch timeout")]
    FetchTimeout(trust_protocol::cid::Cid),
    /// Bitswap is off on this node, or failed.
    #[error("bitswap: {0}")]
    Bitswap(#[source] Cause),
    /// Too many requests or waiters are pending; try again later.
    #[error("too many pending requests")]
    Busy,
    /// The peer answered that this node asks too often; try again later.
    #[error("the peer throttled the request")]
    Throttled,
    /// The swarm task has stopped.
    #[error("the network task has stopped")]
    Stopped,
}

impl NetError {
    /// What a failed setup step `stage` maps its error to (for `map_err`).
    pub(crate) fn setup<E: Into<Cause>>(stage: &'static str) -> impl FnOnce(E) -> Self {
        move |e| Self::Setup {
            stage,
            source: e.into(),
        }
    }
}
