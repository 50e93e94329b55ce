//! The swarm task's mailbox: the cloneable handle the rest of the node uses to drive it,
//! and the commands it sends.

use std::sync::Arc;

use libp2p::{Multiaddr, PeerId};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};
use trust_protocol::{block::MAX_TX_BYTES, cid::Cid, encoding, tx::SignedTx};

use super::{
    NetError, SyncStatus,
    sync::{Request, Response},
};

/// A command for the swarm task; each carries the sender of its reply.
#[derive(Debug)]
pub(crate) enum Command {
    /// Publish bytes on the transaction topic.
    Publish {
        data: Vec<u8>,
        reply: oneshot::Sender<Result<(), NetError>>,
    },
    /// Connected peers, banned ones excluded.
    Peers { reply: oneshot::Sender<Vec<PeerId>> },
    /// Listen addresses, once at least one is bound.
    ListenAddrs {
        reply: oneshot::Sender<Result<Vec<Multiaddr>, NetError>>,
    },
    /// Dial an address.
    Dial {
        addr: Multiaddr,
        reply: oneshot::Sender<Result<(), NetError>>,
    },
    /// Send a sync request.
    Request {
        peer: PeerId,
        request: Request,
        reply: oneshot::Sender<Result<Response, NetError>>,
    },
    /// Fetch a block over Bitswap.
    FetchBlob {
        cid: Cid,
        reply: oneshot::Sender<Result<Vec<u8>, NetError>>,
        /// The fetch's slot, held by the swarm task for as long as the query runs (a
        /// requester that gives up does not free it early).
        slot: OwnedSemaphorePermit,
    },
    /// Stop the task.
    Shutdown { reply: oneshot::Sender<()> },
}

/// Talks to the swarm task. Cheap to clone; the task stops when it is told to or when
/// the last handle is dropped.
#[derive(Debug, Clone)]
pub struct NetHandle {
    tx: mpsc::Sender<Command>,
    /// One permit per Bitswap fetch the swarm task takes at once
    /// ([`MAX_PENDING_FETCHES`](super::MAX_PENDING_FETCHES)), shared by every clone: a
    /// fetch past the bound waits here for one to finish instead of being refused as busy
    /// (a seat of 20 sessions of 20 segments asks for 400 blocks at once).
    fetch_slots: Arc<Semaphore>,
}

impl NetHandle {
    pub(crate) fn new(tx: mpsc::Sender<Command>) -> Self {
        Self {
            tx,
            fetch_slots: Arc::new(Semaphore::new(super::MAX_PENDING_FETCHES)),
        }
    }

    /// Sends a command and waits for its reply.
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<T>) -> Command,
    ) -> Result<T, NetError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| NetError::Stopped)?;
        rx.await.map_err(|_| NetError::Stopped)
    }

    /// Gossips a signed transaction. Having no subscribed peer yet is not an error: the
    /// transaction stays in the mempool for a later rebroadcast.
    pub async fn publish_tx(&self, tx: &SignedTx) -> Result<(), NetError> {
        self.publish_raw(encoding::encode(tx)).await
    }

    /// Gossips arbitrary bytes on the transaction topic (for exercising peers' checks).
    /// Bytes over the transaction limit are refused here with [`NetError::TooLarge`].
    pub async fn publish_raw(&self, bytes: Vec<u8>) -> Result<(), NetError> {
        if bytes.len() > MAX_TX_BYTES {
            return Err(NetError::TooLarge {
                len: bytes.len(),
                limit: MAX_TX_BYTES,
            });
        }
        self.ask(|reply| Command::Publish { data: bytes, reply })
            .await?
    }

    /// Connected peers (banned peers excluded).
    pub async fn peers(&self) -> Result<Vec<PeerId>, NetError> {
        self.ask(|reply| Command::Peers { reply }).await
    }

    /// The addresses the node listens on, waiting until at least one is bound.
    pub async fn listen_addrs(&self) -> Result<Vec<Multiaddr>, NetError> {
        self.ask(|reply| Command::ListenAddrs { reply }).await?
    }

    /// Starts dialling `addr` (its `/p2p/<peer id>` suffix, if any, also seeds Kademlia).
    /// Returns once the dial is under way; watch [`NetHandle::peers`] for the connection.
    pub async fn dial(&self, addr: Multiaddr) -> Result<(), NetError> {
        self.ask(|reply| Command::Dial { addr, reply }).await?
    }

    async fn request(&self, peer: PeerId, request: Request) -> Result<Response, NetError> {
        self.ask(|reply| Command::Request {
            peer,
            request,
            reply,
        })
        .await?
    }

    /// Asks `peer` for its sync status.
    pub async fn status_of(&self, peer: PeerId) -> Result<SyncStatus, NetError> {
        match self.request(peer, Request::Status).await? {
            Response::Status(status) => Ok(status),
            Response::Busy => Err(NetError::Throttled),
            Response::Blocks(_) => Err(NetError::Request(
                "blocks received in answer to a status request".into(),
            )),
        }
    }

    /// Asks `peer` for up to `max` encoded blocks from height `from`. The peer may send
    /// fewer (its tip, its per-request cap, its byte budget), never more.
    pub async fn blocks_from(
        &self,
        peer: PeerId,
        from: u64,
        max: u32,
    ) -> Result<Vec<Vec<u8>>, NetError> {
        match self.request(peer, Request::Blocks { from, max }).await? {
            Response::Blocks(blocks) if u32::try_from(blocks.len()).is_ok_and(|n| n <= max) => {
                Ok(blocks)
            }
            Response::Blocks(blocks) => Err(NetError::Request(
                format!("{} blocks received, {max} asked for", blocks.len()).into(),
            )),
            Response::Busy => Err(NetError::Throttled),
            Response::Status(_) => Err(NetError::Request(
                "a status received in answer to a blocks request".into(),
            )),
        }
    }

    /// Fetches the block `cid` from whichever connected peer has it: each peer is asked
    /// directly in turn ([`blob_req`](super::blob_req); the one that last had a block
    /// first), then Bitswap. The block is checked against its CID and kept in the node's
    /// blob store. Fails with
    /// [`NetError::FetchTimeout`] when no peer sends it within
    /// [`BLOB_FETCH_TIMEOUT`](super::BLOB_FETCH_TIMEOUT).
    ///
    /// At most [`MAX_PENDING_FETCHES`](super::MAX_PENDING_FETCHES) fetches run at once;
    /// later ones wait for a slot (their wait does not count against the timeout). A
    /// caller that stops waiting (a seat whose window is about to close) leaves its fetch
    /// to the swarm task, which drops it at its next tick and only then frees the slot.
    pub async fn fetch_blob(&self, cid: Cid) -> Result<Vec<u8>, NetError> {
        let slot = self
            .fetch_slots
            .clone()
            .acquire_owned()
            .await
            .map_err(|_| NetError::Stopped)?;
        self.ask(|reply| Command::FetchBlob { cid, reply, slot })
            .await?
    }

    /// Stops the swarm task and waits until it has acknowledged; a task that already
    /// stopped is fine.
    pub async fn shutdown(&self) {
        let _ = self.ask(|reply| Command::Shutdown { reply }).await;
    }
}
