//! Auditor histories for the auditor page: reputation, earnings and slashes after every
//! block that changed them, found by replaying the ledger through the real contract from
//! genesis (the contract keeps only the current values; nothing else on the node records
//! how they moved).
//!
//! The replay is an in-memory index that a request advances by at most
//! [`BLOCKS_PER_REQUEST`] blocks and that later requests continue from, so no request does
//! unbounded work: on a long chain the first visits show a history that ends below the
//! tip, and say so, until the index has caught up. Each auditor keeps at most
//! [`MAX_POINTS`] points; past that, every other older point is dropped (the curve keeps
//! its shape, not every step).

use std::{
    collections::BTreeMap,
    sync::{Arc, Mutex},
};

use trust_contracts::Contract;
use trust_protocol::{AccountId, units::Amount};

use crate::{
    chain::{Tip, execute_block},
    ledger::Ledger,
};

/// Most blocks one request replays.
pub const BLOCKS_PER_REQUEST: u64 = 500;
/// Most points kept per auditor.
pub const MAX_POINTS: usize = 512;

/// An auditor's record after a block.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Point {
    /// The block height (0: genesis).
    pub height: u64,
    /// Reputation in ppm.
    pub reputation: u32,
    /// Rewards received so far.
    pub earned: Amount,
    /// Stake slashed so far.
    pub slashed: Amount,
}

impl Point {
    /// Rewards minus slashes so far.
    pub fn profit(&self) -> i128 {
        i128::from(self.earned) - i128::from(self.slashed)
    }
}

/// What the index knows of one auditor.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AuditorHistory {
    /// Points in height order.
    pub points: Vec<Point>,
    /// The index has replayed blocks up to this height.
    pub replayed: u64,
    /// Why the replay stopped for good, if it did.
    pub error: Option<String>,
    /// Most blocks one request replays.
    pub per_request: u64,
}

#[derive(Debug)]
struct Replay {
    contract: Contract,
    tip: Option<Tip>,
    series: BTreeMap<AccountId, Vec<Point>>,
    error: Option<String>,
}

impl Replay {
    fn new(genesis: &Contract) -> Self {
        let mut r = Replay {
            contract: genesis.clone(),
            tip: None,
            series: BTreeMap::new(),
            error: None,
        };
        r.record(0);
        r
    }

    /// Adds a point for every auditor whose record changed since its last point.
    fn record(&mut self, height: u64) {
        for (id, a) in &self.contract.state().auditors {
            let p = Point {
                height,
                reputation: a.reputation.0,
                earned: a.earned,
                slashed: a.slashed,
            };
            let s = self.series.entry(*id).or_default();
            let same = s.last().is_some_and(|l| {
                (l.reputation, l.earned, l.slashed) == (p.reputation, p.earned, p.slashed)
            });
            if !same {
                s.push(p);
                thin(s);
            }
        }
    }

    /// Replays up to `max` blocks after the last one replayed.
    fn advance(&mut self, ledger: &Ledger, max: u64) {
        for _ in 0..max {
            if self.error.is_some() {
                return;
            }
            let height = self.tip.map_or(0, |t| t.height) + 1;
            let stored = match ledger.block(height) {
                Ok(Some(b)) => b,
                Ok(None) => return,
                Err(e) => {
                    self.error = Some(e.to_string());
                    return;
                }
            };
            let tip = self.tip.unwrap_or(Tip::genesis(stored.block.header.chain));
            match execute_block(&self.contract, &tip, &stored.block) {
                Ok(done) => {
                    self.contract = done.contract;
                    self.tip = Some(tip.after(&stored.block));
                    self.record(height);
                }
                Err(e) => {
                    self.error = Some(format!("replay stopped at block {height}: {e}"));
                }
            }
        }
    }

    fn replayed(&self) -> u64 {
        self.tip.map_or(0, |t| t.height)
    }
}

/// Halves the older points of a series that grew past [`MAX_POINTS`], keeping the first
/// and the newest.
fn thin(s: &mut Vec<Point>) {
    if s.len() <= MAX_POINTS {
        return;
    }
    let last = s.last().copied();
    let mut i = 0usize;
    s.retain(|_| {
        i += 1;
        i % 2 == 1
    });
    if let Some(l) = last
        && s.last() != Some(&l)
    {
        s.push(l);
    }
}

/// The shared replay index (one per node; cloning the pages shares it).
#[derive(Debug)]
pub struct History {
    genesis: Option<Arc<Contract>>,
    per_request: u64,
    replay: Mutex<Option<Replay>>,
}

impl History {
    /// An index that replays from `genesis` (`None`: no history on this node).
    pub fn new(genesis: Option<Arc<Contract>>) -> Self {
        Self::with_blocks_per_request(genesis, BLOCKS_PER_REQUEST)
    }

    /// As [`History::new`], replaying at most `n` blocks per request (at least one).
    pub fn with_blocks_per_request(genesis: Option<Arc<Contract>>, n: u64) -> Self {
        Self {
            genesis,
            per_request: n.max(1),
            replay: Mutex::new(None),
        }
    }

    /// Advances the replay by up to its blocks per request and answers `who`'s
    /// points; `None` when this node has no genesis to replay from. Blocking: call it off
    /// the async runtime.
    pub fn auditor(&self, ledger: &Ledger, who: &AccountId) -> Option<AuditorHistory> {
        let genesis = self.genesis.as_ref()?;
        // A panic elsewhere while holding the lock leaves a replay that is still
        // consistent block by block: keep using it.
        let mut guard = self.replay.lock().unwrap_or_else(|p| p.into_inner());
        let replay = guard.get_or_insert_with(|| Replay::new(genesis));
        replay.advance(ledger, self.per_request);
        Some(AuditorHistory {
            points: replay.series.get(who).cloned().unwrap_or_default(),
            replayed: replay.replayed(),
            error: replay.error.clone(),
            per_request: self.per_request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thinning_keeps_the_first_and_the_newest_point_and_stays_bounded() {
        let mut s: Vec<Point> = Vec::new();
        for h in 0..5_000u64 {
            s.push(Point {
                height: h,
                reputation: 0,
                earned: h,
                slashed: 0,
            });
            thin(&mut s);
            assert!(s.len() <= MAX_POINTS + 1);
        }
        assert_eq!(s.first().map(|p| p.height), Some(0));
        assert_eq!(s.last().map(|p| p.height), Some(4_999));
        assert!(s.windows(2).all(|w| w[0].height < w[1].height));
    }
}
