//! The swarm's companion tasks: `peers`, the one writer of the [`PeerView`] (peers and
//! their heights, polled), and `gossip`, which publishes the transactions this node
//! admitted (API, outbox) to its peers.

use std::time::Duration;

use tokio::sync::mpsc;
use tracing::warn;
use trust_protocol::tx::SignedTx;

use super::NetHandle;
use crate::{
    tasks::{Stop, TaskResult},
    view::{PeerPublisher, PeerView},
};

/// How often peers are asked for their height.
pub const PEERS_EVERY: Duration = Duration::from_secs(2);

/// The `peers` task: the one writer of the [`PeerView`].
pub async fn watch_peers(net: NetHandle, publisher: PeerPublisher, mut stop: Stop) -> TaskResult {
    let mut tick = tokio::time::interval(PEERS_EVERY);
    loop {
        let view = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            v = async {
                tick.tick().await;
                let peers = net
                    .peers()
                    .await
                    .map_err(|e| format!("the network task does not answer: {e}"))?;
                // Ask each peer where it stands over our request-response protocol: status
                // shows it, and an operator sees at once whether this node is behind.
                let mut heights = Vec::with_capacity(peers.len());
                for p in &peers {
                    if let Ok(st) = net.status_of(*p).await {
                        heights.push((p.to_string(), st.height));
                    }
                }
                Ok::<_, String>(PeerView {
                    peers: peers.len(),
                    heights,
                })
            } => v?,
        };
        publisher.publish(view);
    }
}

/// The `gossip` task: publishes what this node admitted (API, outbox) to its peers.
pub async fn gossip_out(
    net: NetHandle,
    mut rx: mpsc::Receiver<SignedTx>,
    mut stop: Stop,
) -> TaskResult {
    loop {
        let tx = tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            tx = rx.recv() => tx.ok_or("every producer of transactions to gossip is gone")?,
        };
        if let Err(e) = net.publish_tx(&tx).await {
            warn!(tx = %tx.id(), error = %e, "could not gossip transaction");
        }
    }
}

/// The `net` task: the swarm until `stop` (then it is shut down and awaited), or until it
/// ends on its own, which is an error.
pub async fn run_swarm(
    net: NetHandle,
    mut swarm: tokio::task::JoinHandle<()>,
    mut stop: Stop,
) -> TaskResult {
    tokio::select! {
        biased;
        () = stop.wait() => {
            net.shutdown().await;
            let _ = swarm.await;
            Ok(())
        }
        r = &mut swarm => Err(match r {
            Ok(()) => "the swarm task ended".to_string(),
            Err(e) => format!("the swarm task failed: {e}"),
        }.into()),
    }
}
