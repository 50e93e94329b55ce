//! Misbehaviour bookkeeping: rejected-message counts per peer and a bounded ban list.
//!
//! Pure state, no I/O: the actor asks it what to do and applies the answer to the swarm.

use std::collections::{HashMap, HashSet, VecDeque};

use libp2p::PeerId;

/// Most peers whose rejection counts are kept; beyond it an arbitrary entry is dropped,
/// so a flood of fresh identities cannot grow memory.
const MAX_TRACKED: usize = 4096;

/// The result of [`PeerBook::ban`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum BanOutcome {
    /// The peer was banned before; nothing changed.
    AlreadyBanned,
    /// The peer is now banned; `evicted` is an older ban lifted to make room.
    Banned {
        /// The peer whose ban was lifted, if the list was full.
        evicted: Option<PeerId>,
    },
}

/// Rejection counts and bans.
#[derive(Debug)]
pub(crate) struct PeerBook {
    strikes: HashMap<PeerId, u32>,
    banned: HashSet<PeerId>,
    ban_order: VecDeque<PeerId>,
    max_banned: usize,
}

impl PeerBook {
    /// An empty book remembering at most `max_banned` bans.
    pub(crate) fn new(max_banned: usize) -> Self {
        Self {
            strikes: HashMap::new(),
            banned: HashSet::new(),
            ban_order: VecDeque::new(),
            max_banned: max_banned.max(1),
        }
    }

    /// Whether `peer` is banned.
    pub(crate) fn is_banned(&self, peer: &PeerId) -> bool {
        self.banned.contains(peer)
    }

    /// Records one rejected message from `peer` and returns its count so far.
    pub(crate) fn strike(&mut self, peer: PeerId) -> u32 {
        if !self.strikes.contains_key(&peer)
            && self.strikes.len() >= MAX_TRACKED
            && let Some(victim) = self.strikes.keys().next().copied()
        {
            self.strikes.remove(&victim);
        }
        let count = self.strikes.entry(peer).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Bans `peer`, lifting the oldest ban if the list is full.
    pub(crate) fn ban(&mut self, peer: PeerId) -> BanOutcome {
        if self.banned.contains(&peer) {
            return BanOutcome::AlreadyBanned;
        }
        self.strikes.remove(&peer);
        let evicted = if self.banned.len() >= self.max_banned {
            let oldest = self.ban_order.pop_front();
            if let Some(old) = oldest {
                self.banned.remove(&old);
            }
            oldest
        } else {
            None
        };
        self.banned.insert(peer);
        self.ban_order.push_back(peer);
        BanOutcome::Banned { evicted }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strikes_count_per_peer() {
        let mut book = PeerBook::new(4);
        let (a, b) = (PeerId::random(), PeerId::random());
        assert_eq!(book.strike(a), 1);
        assert_eq!(book.strike(a), 2);
        assert_eq!(book.strike(b), 1);
        assert_eq!(book.strike(a), 3);
    }

    #[test]
    fn bans_are_bounded_oldest_first() {
        let mut book = PeerBook::new(2);
        let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        assert_eq!(book.ban(peers[0]), BanOutcome::Banned { evicted: None });
        assert_eq!(book.ban(peers[0]), BanOutcome::AlreadyBanned);
        assert_eq!(book.ban(peers[1]), BanOutcome::Banned { evicted: None });
        assert_eq!(
            book.ban(peers[2]),
            BanOutcome::Banned {
                evicted: Some(peers[0])
            }
        );
        assert!(!book.is_banned(&peers[0]));
        assert!(book.is_banned(&peers[1]) && book.is_banned(&peers[2]));
    }

    #[test]
    fn a_ban_clears_the_strike_count() {
        let mut book = PeerBook::new(2);
        let a = PeerId::random();
        book.strike(a);
        book.strike(a);
        book.ban(a);
        assert_eq!(book.strike(a), 1);
    }
}
