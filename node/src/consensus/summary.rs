//! What the node says about its chain at INFO: one summary line a minute (height, blocks
//! and transactions since the last summary, peers), so that an idle node's log grows by a
//! line a minute, not by a line a block. Each block's own line (`block committed`,
//! [`BLOCKS_TARGET`]) is at DEBUG, and at INFO only for a block with transactions or one
//! that decides sessions: `RUST_LOG=info,trust::blocks=debug` shows every block again.

use std::{
    sync::{Arc, atomic::Ordering},
    time::Duration,
};

use tracing::info;

use super::ConsensusMetrics;
use crate::{
    tasks::{Stop, TaskResult},
    view::PeerWatch,
};

/// The target of the per-block lines and the summary (`RUST_LOG=trust::blocks=debug`).
pub const BLOCKS_TARGET: &str = "trust::blocks";

/// Time between two summaries (the first comes this long after the start).
pub const SUMMARY_EVERY: Duration = Duration::from_secs(60);

/// The consensus counters a summary reads.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Height of the last committed block.
    pub height: u64,
    /// Blocks committed since the start.
    pub blocks: u64,
    /// Transactions in them.
    pub txs: u64,
}

impl Counts {
    /// The counters as they are now.
    pub fn of(m: &ConsensusMetrics) -> Self {
        Self {
            height: m.height.load(Ordering::Relaxed),
            blocks: m.blocks.load(Ordering::Relaxed),
            txs: m.txs.load(Ordering::Relaxed),
        }
    }
}

/// One summary line's figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Summary {
    /// The tip's height.
    pub height: u64,
    /// Blocks committed since the last summary.
    pub blocks: u64,
    /// Transactions in them.
    pub txs: u64,
    /// Connected peers.
    pub peers: usize,
}

/// The summaries of one run: each counts from the one before.
#[derive(Debug, Clone)]
pub struct Summaries {
    last: Counts,
}

impl Summaries {
    /// Summaries counting from `start`.
    pub fn from(start: Counts) -> Self {
        Self { last: start }
    }

    /// The summary at `now`, with `peers` connected; the next counts from `now`.
    pub fn next(&mut self, now: Counts, peers: usize) -> Summary {
        let s = Summary {
            height: now.height,
            blocks: now.blocks.saturating_sub(self.last.blocks),
            txs: now.txs.saturating_sub(self.last.txs),
            peers,
        };
        self.last = now;
        s
    }
}

/// Logs a [`Summary`] at INFO every [`SUMMARY_EVERY`] until `stop`.
pub async fn run(metrics: Arc<ConsensusMetrics>, peers: PeerWatch, mut stop: Stop) -> TaskResult {
    let start = tokio::time::Instant::now() + SUMMARY_EVERY;
    let mut tick = tokio::time::interval_at(start, SUMMARY_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut summaries = Summaries::from(Counts::of(&metrics));
    loop {
        tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            _ = tick.tick() => {}
        }
        let peers = peers.borrow().peers;
        let s = summaries.next(Counts::of(&metrics), peers);
        info!(
            target: BLOCKS_TARGET,
            height = s.height,
            blocks = s.blocks,
            txs = s.txs,
            peers = s.peers,
            "chain summary: {} blocks with {} transactions since the last summary, tip at {}",
            s.blocks,
            s.txs,
            s.height
        );
    }
}

#[cfg(test)]
mod tests {
    use super::{Counts, Summaries, Summary};

    #[test]
    fn each_summary_counts_the_blocks_and_transactions_since_the_one_before() {
        let at = |height, blocks, txs| Counts {
            height,
            blocks,
            txs,
        };
        // A node restored at height 40: its counters start at 0 blocks.
        let mut s = Summaries::from(at(40, 0, 0));
        assert_eq!(
            s.next(at(100, 60, 3), 2),
            Summary {
                height: 100,
                blocks: 60,
                txs: 3,
                peers: 2
            }
        );
        // Idle: no block since.
        assert_eq!(
            s.next(at(100, 60, 3), 3),
            Summary {
                height: 100,
                blocks: 0,
                txs: 0,
                peers: 3
            }
        );
        assert_eq!(s.next(at(160, 120, 3), 3).blocks, 60);
    }
}
