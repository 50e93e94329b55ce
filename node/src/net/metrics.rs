//! Counters of the network subsystem, exported as Prometheus text.

use std::{
    fmt::Write as _,
    sync::atomic::{AtomicU64, Ordering},
};

/// Network counters; shared between the swarm task and the metrics endpoint.
#[derive(Debug, Default)]
pub struct NetMetrics {
    /// Gossiped transactions accepted and forwarded.
    pub gossip_txs_accepted: AtomicU64,
    /// Gossiped messages larger than the transaction limit.
    pub gossip_txs_rejected_oversized: AtomicU64,
    /// Gossiped messages that are not a canonically encoded signed transaction.
    pub gossip_txs_rejected_malformed: AtomicU64,
    /// Gossiped transactions whose signature does not verify.
    pub gossip_txs_rejected_signature: AtomicU64,
    /// Gossiped transactions refused by format rules or by the node.
    pub gossip_txs_rejected_invalid: AtomicU64,
    /// Gossiped transactions ignored as harmless (duplicates, stale nonces).
    pub gossip_txs_ignored: AtomicU64,
    /// Gossiped transactions refused as junk on this node's state (unpayable, no seat).
    pub gossip_txs_refused: AtomicU64,
    /// Sync requests answered `Busy`: the peer was over its rate.
    pub sync_requests_throttled: AtomicU64,
    /// Connections refused by the gate: banned, no slot, too many from one address.
    pub connections_denied: AtomicU64,
    /// Peers banned for misbehaviour.
    pub peers_banned: AtomicU64,
    /// Sync requests answered.
    pub sync_requests_served: AtomicU64,
    /// Sync responses that were too large or did not decode.
    pub sync_responses_malformed: AtomicU64,
    /// Blocks fetched from peers, directly or over Bitswap.
    pub blobs_fetched: AtomicU64,
    /// Bitswap fetches that failed or timed out.
    pub blob_fetches_failed: AtomicU64,
    /// Blob requests from peers answered from this node's store ([`super::blob_req`]).
    pub blob_requests_served: AtomicU64,
    /// Blob requests from peers over their rate, answered busy.
    pub blob_requests_throttled: AtomicU64,
    /// Blob fetches cancelled because their requester stopped waiting.
    pub blob_fetches_abandoned: AtomicU64,
    /// Blob fetches under way now (a gauge; at most
    /// [`MAX_PENDING_FETCHES`](super::MAX_PENDING_FETCHES)).
    pub blob_fetches_pending: AtomicU64,
    /// Payload bytes of the transactions this node published on the gossip topic.
    pub gossip_bytes_published: AtomicU64,
    /// Payload bytes of the gossiped messages this node received (each once: gossipsub
    /// drops duplicates before they reach the node).
    pub gossip_bytes_received: AtomicU64,
}

impl NetMetrics {
    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: usize) {
        counter.fetch_add(u64::try_from(n).unwrap_or(u64::MAX), Ordering::Relaxed);
    }

    /// Adds one to a counter.
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Appends the counters as Prometheus text: `# HELP`, `# TYPE` and one sample each,
    /// named `trust_net_<field>`.
    pub fn render(&self, out: &mut String) {
        let rows: [(&str, &str, &AtomicU64); 19] = [
            (
                "gossip_txs_accepted",
                "Gossiped transactions accepted and forwarded.",
                &self.gossip_txs_accepted,
            ),
            (
                "gossip_txs_rejected_oversized",
                "Gossiped messages larger than the transaction limit.",
                &self.gossip_txs_rejected_oversized,
            ),
            (
                "gossip_txs_rejected_malformed",
                "Gossiped messages that do not decode as a signed transaction.",
                &self.gossip_txs_rejected_malformed,
            ),
            (
                "gossip_txs_rejected_signature",
                "Gossiped transactions with a bad signature.",
                &self.gossip_txs_rejected_signature,
            ),
            (
                "gossip_txs_rejected_invalid",
                "Gossiped transactions refused by format rules or the node.",
                &self.gossip_txs_rejected_invalid,
            ),
            (
                "gossip_txs_ignored",
                "Gossiped transactions ignored as duplicates or stale.",
                &self.gossip_txs_ignored,
            ),
            (
                "gossip_txs_refused",
                "Gossiped transactions refused as junk on this node's state.",
                &self.gossip_txs_refused,
            ),
            (
                "sync_requests_throttled",
                "Sync requests answered Busy: the peer was over its rate.",
                &self.sync_requests_throttled,
            ),
            (
                "connections_denied",
                "Connections refused: banned, no free slot, too many from one address.",
                &self.connections_denied,
            ),
            (
                "peers_banned",
                "Peers banned for misbehaviour.",
                &self.peers_banned,
            ),
            (
                "sync_requests_served",
                "Sync requests answered.",
                &self.sync_requests_served,
            ),
            (
                "blobs_fetched",
                "Blocks fetched from peers, directly or over Bitswap.",
                &self.blobs_fetched,
            ),
            (
                "blob_fetches_failed",
                "Bitswap fetches that failed or timed out.",
                &self.blob_fetches_failed,
            ),
            (
                "blob_requests_served",
                "Blob requests from peers answered from this node's store.",
                &self.blob_requests_served,
            ),
            (
                "blob_requests_throttled",
                "Blob requests from peers over their rate, answered busy.",
                &self.blob_requests_throttled,
            ),
            (
                "blob_fetches_abandoned",
                "Blob fetches cancelled because their requester stopped waiting.",
                &self.blob_fetches_abandoned,
            ),
            (
                "gossip_bytes_published",
                "Payload bytes of the transactions this node published on the gossip topic.",
                &self.gossip_bytes_published,
            ),
            (
                "gossip_bytes_received",
                "Payload bytes of the gossiped messages this node received.",
                &self.gossip_bytes_received,
            ),
            (
                "sync_responses_malformed",
                "Sync responses too large or malformed.",
                &self.sync_responses_malformed,
            ),
        ];
        for (name, help, value) in rows {
            // Writing to a String cannot fail.
            let _ = write!(
                out,
                "# HELP trust_net_{name} {help}\n# TYPE trust_net_{name} counter\ntrust_net_{name} {}\n",
                value.load(Ordering::Relaxed)
            );
        }
        let _ = write!(
            out,
            "# HELP trust_net_blob_fetches_pending Blob fetches under way now.\n# TYPE trust_net_blob_fetches_pending gauge\ntrust_net_blob_fetches_pending {}\n",
            self.blob_fetches_pending.load(Ordering::Relaxed)
        );
    }
}

impl crate::metrics::MetricsSource for NetMetrics {
    fn render(&self, out: &mut String) {
        NetMetrics::render(self, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_every_counter() {
        let m = NetMetrics::default();
        NetMetrics::bump(&m.peers_banned);
        let mut out = String::new();
        m.render(&mut out);
        assert!(out.contains("# TYPE trust_net_peers_banned counter\ntrust_net_peers_banned 1\n"));
        assert!(out.contains("trust_net_gossip_txs_accepted 0\n"));
        assert!(out.contains("# TYPE trust_net_blob_fetches_pending gauge\n"));
        assert_eq!(out.lines().filter(|l| l.starts_with("# TYPE")).count(), 20);
    }
}
