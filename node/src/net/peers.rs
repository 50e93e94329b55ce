//! Misbehaviour bookkeeping: rejected-message strikes, flood meters and request buckets per
//! peer, and bans by peer id and by IP address with expiry.
//!
//! Pure state, no I/O: every method that depends on time takes `now`, so tests drive the
//! clock. The actor (strikes, meters, buckets) and the connection gate (bans) ask it what
//! to do and apply the answer to the swarm. Every map is bounded; when one is full the
//! entry that matters least goes (the lowest count, the emptiest meter, the fullest
//! bucket, the ban that ends first), so a crowd of fresh identities cannot push a known
//! offender out.

use std::{collections::HashMap, hash::Hash, net::IpAddr, time::Instant};

use libp2p::PeerId;

/// Most peers whose strikes, meters or buckets are kept (each).
pub(crate) const MAX_TRACKED: usize = 4096;

/// Inserts `key` into a full `map` only after removing the entry `least` ranks lowest.
fn make_room<K: Eq + Hash + Copy, V, R: Ord>(
    map: &mut HashMap<K, V>,
    key: &K,
    max: usize,
    least: impl Fn(&V) -> R,
) {
    if map.contains_key(key) || map.len() < max {
        return;
    }
    if let Some(victim) = map.iter().min_by_key(|(_, v)| least(v)).map(|(k, _)| *k) {
        map.remove(&victim);
    }
}

/// A token bucket: `burst` tokens, refilled at `per_sec` a second.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateLimit {
    /// Tokens a peer may spend at once.
    pub burst: u32,
    /// Tokens it gets back per second (0: never).
    pub per_sec: u32,
}

#[derive(Debug, Clone, Copy)]
struct Bucket {
    /// Thousandths of a token.
    milli: u64,
    at: Instant,
}

impl Bucket {
    fn refill(&mut self, rate: RateLimit, now: Instant) {
        let elapsed = now.saturating_duration_since(self.at).as_millis();
        let gained = u64::try_from(elapsed)
            .unwrap_or(u64::MAX)
            .saturating_mul(u64::from(rate.per_sec));
        self.milli = self
            .milli
            .saturating_add(gained)
            .min(u64::from(rate.burst).saturating_mul(1000));
        self.at = now;
    }
}

/// A leaky meter: points added per offence, leaking at a fixed rate.
#[derive(Debug, Clone, Copy)]
struct Meter {
    /// Thousandths of a point.
    milli: u64,
    at: Instant,
}

/// Per-peer counts the actor keeps.
#[derive(Debug)]
pub(crate) struct PeerBook {
    strikes: HashMap<PeerId, u32>,
    meters: HashMap<PeerId, Meter>,
    buckets: HashMap<PeerId, Bucket>,
    rate: RateLimit,
    leak_per_sec: u64,
}

impl PeerBook {
    /// An empty book; sync requests are metered by `rate`, flood meters leak
    /// `leak_per_sec` points a second.
    pub(crate) fn new(rate: RateLimit, leak_per_sec: u32) -> Self {
        Self {
            strikes: HashMap::new(),
            meters: HashMap::new(),
            buckets: HashMap::new(),
            rate,
            leak_per_sec: u64::from(leak_per_sec),
        }
    }

    /// Records one rejected (invalid) message from `peer` and returns its count so far.
    pub(crate) fn strike(&mut self, peer: PeerId) -> u32 {
        make_room(&mut self.strikes, &peer, MAX_TRACKED, |n| *n);
        let count = self.strikes.entry(peer).or_insert(0);
        *count = count.saturating_add(1);
        *count
    }

    /// Adds `points` to `peer`'s flood meter (after leaking since it was last touched) and
    /// returns its level in whole points.
    pub(crate) fn flood(&mut self, peer: PeerId, points: u32, now: Instant) -> u64 {
        make_room(&mut self.meters, &peer, MAX_TRACKED, |m| m.milli);
        let leak = self.leak_per_sec;
        let m = self
            .meters
            .entry(peer)
            .or_insert(Meter { milli: 0, at: now });
        let elapsed =
            u64::try_from(now.saturating_duration_since(m.at).as_millis()).unwrap_or(u64::MAX);
        m.milli = m
            .milli
            .saturating_sub(elapsed.saturating_mul(leak))
            .saturating_add(u64::from(points).saturating_mul(1000));
        m.at = now;
        m.milli / 1000
    }

    /// Takes `cost` tokens from `peer`'s bucket (a new peer starts full); `false` when it
    /// does not hold them, and then nothing is taken.
    pub(crate) fn take(&mut self, peer: PeerId, cost: u32, now: Instant) -> bool {
        let rate = self.rate;
        // A full bucket is what a newcomer would get anyway: it goes first.
        make_room(&mut self.buckets, &peer, MAX_TRACKED, |b| {
            std::cmp::Reverse(b.milli)
        });
        let b = self.buckets.entry(peer).or_insert(Bucket {
            milli: u64::from(rate.burst).saturating_mul(1000),
            at: now,
        });
        b.refill(rate, now);
        let want = u64::from(cost).saturating_mul(1000);
        if b.milli >= want {
            b.milli -= want;
            true
        } else {
            false
        }
    }

    /// Forgets `peer` (banned, or gone): its bucket, meter and strikes.
    pub(crate) fn forget(&mut self, peer: &PeerId) {
        self.strikes.remove(peer);
        self.meters.remove(peer);
        self.buckets.remove(peer);
    }

    /// Forgets the bucket of a peer that disconnected (a reconnection starts full, which
    /// per-IP connection caps bound).
    pub(crate) fn disconnected(&mut self, peer: &PeerId) {
        self.buckets.remove(peer);
    }
}

/// Bans by peer id and by IP address, each until a deadline.
#[derive(Debug)]
pub(crate) struct Bans {
    peers: HashMap<PeerId, Instant>,
    ips: HashMap<IpAddr, Instant>,
    max: usize,
}

impl Bans {
    /// No bans; at most `max` peers and `max` addresses banned at once (at least 1).
    pub(crate) fn new(max: usize) -> Self {
        Self {
            peers: HashMap::new(),
            ips: HashMap::new(),
            max: max.max(1),
        }
    }

    /// Bans `peer` until `until`; returns `false` if it was banned already (the later
    /// deadline stands).
    pub(crate) fn ban_peer(&mut self, peer: PeerId, until: Instant) -> bool {
        make_room(&mut self.peers, &peer, self.max, |t| *t);
        let fresh = !self.peers.contains_key(&peer);
        let t = self.peers.entry(peer).or_insert(until);
        *t = (*t).max(until);
        fresh
    }

    /// Bans the address `ip` until `until`.
    pub(crate) fn ban_ip(&mut self, ip: IpAddr, until: Instant) {
        make_room(&mut self.ips, &ip, self.max, |t| *t);
        let t = self.ips.entry(ip).or_insert(until);
        *t = (*t).max(until);
    }

    /// Whether `peer` is banned at `now`.
    pub(crate) fn peer_banned(&self, peer: &PeerId, now: Instant) -> bool {
        self.peers.get(peer).is_some_and(|t| *t > now)
    }

    /// Whether `ip` is banned at `now`.
    pub(crate) fn ip_banned(&self, ip: &IpAddr, now: Instant) -> bool {
        self.ips.get(ip).is_some_and(|t| *t > now)
    }

    /// Lifts the bans that ended by `now`; returns the peers whose ban was lifted.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<PeerId> {
        self.ips.retain(|_, t| *t > now);
        let lifted: Vec<PeerId> = self
            .peers
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(p, _)| *p)
            .collect();
        for p in &lifted {
            self.peers.remove(p);
        }
        lifted
    }

    /// Peers and addresses banned now (expired ones included until [`Bans::expire`]).
    #[cfg(test)]
    pub(crate) fn len(&self) -> (usize, usize) {
        (self.peers.len(), self.ips.len())
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    const RATE: RateLimit = RateLimit {
        burst: 4,
        per_sec: 2,
    };

    #[test]
    fn strikes_count_per_peer() {
        let mut book = PeerBook::new(RATE, 1);
        let (a, b) = (PeerId::random(), PeerId::random());
        assert_eq!(book.strike(a), 1);
        assert_eq!(book.strike(a), 2);
        assert_eq!(book.strike(b), 1);
        assert_eq!(book.strike(a), 3);
        book.forget(&a);
        assert_eq!(book.strike(a), 1);
    }

    #[test]
    fn a_large_blob_spends_more_of_the_blob_rate_than_a_small_one() {
        use crate::net::{BLOB_RATE, blob_cost};
        let now = Instant::now();
        let peer = PeerId::random();
        let mut small = PeerBook::new(BLOB_RATE, 2);
        let few_kib = blob_cost(4 * 1024);
        assert_eq!(few_kib, 1);
        assert!((0..BLOB_RATE.burst).all(|_| small.take(peer, few_kib, now)));
        let mut large = PeerBook::new(BLOB_RATE, 2);
        let mib = blob_cost(trust_protocol::cid::MAX_BLOCK_BYTES);
        assert_eq!(mib, 65);
        let served = (0..BLOB_RATE.burst)
            .take_while(|_| large.take(peer, mib, now))
            .count();
        assert_eq!(served, usize::try_from(BLOB_RATE.burst / mib).unwrap());
    }

    #[test]
    fn buckets_spend_their_burst_then_refill_at_the_rate() {
        let mut book = PeerBook::new(RATE, 1);
        let a = PeerId::random();
        let t0 = Instant::now();
        assert!((0..4).all(|_| book.take(a, 1, t0)));
        assert!(!book.take(a, 1, t0), "the burst is spent");
        assert!(!book.take(a, 1, t0 + Duration::from_millis(400)));
        assert!(book.take(a, 1, t0 + Duration::from_millis(500)), "one back");
        // Never more than the burst, however long the peer waited.
        let later = t0 + Duration::from_secs(3600);
        assert!(!book.take(a, 5, later));
        assert!(book.take(a, 4, later));
        // Another peer has its own bucket.
        assert!(book.take(PeerId::random(), 4, t0));
    }

    #[test]
    fn flood_meters_leak() {
        let mut book = PeerBook::new(RATE, 2);
        let a = PeerId::random();
        let t0 = Instant::now();
        assert_eq!(book.flood(a, 10, t0), 10);
        assert_eq!(book.flood(a, 10, t0), 20);
        assert_eq!(book.flood(a, 0, t0 + Duration::from_secs(5)), 10);
        assert_eq!(book.flood(a, 1, t0 + Duration::from_secs(60)), 1);
    }

    #[test]
    fn the_tracked_maps_are_bounded_and_keep_the_worst() {
        let mut book = PeerBook::new(RATE, 0);
        let now = Instant::now();
        let worst = PeerId::random();
        for _ in 0..5 {
            book.strike(worst);
        }
        book.flood(worst, 50, now);
        for _ in 0..MAX_TRACKED + 100 {
            let p = PeerId::random();
            book.strike(p);
            book.flood(p, 1, now);
            book.take(p, 1, now);
        }
        assert!(book.strikes.len() <= MAX_TRACKED);
        assert!(book.meters.len() <= MAX_TRACKED);
        assert!(book.buckets.len() <= MAX_TRACKED);
        assert_eq!(book.strike(worst), 6, "the worst offender was kept");
        assert_eq!(book.flood(worst, 0, now), 50);
    }

    #[test]
    fn bans_expire_and_are_bounded_by_the_earliest_end() {
        let mut bans = Bans::new(2);
        let now = Instant::now();
        let hour = Duration::from_secs(3600);
        let peers: Vec<PeerId> = (0..3).map(|_| PeerId::random()).collect();
        assert!(bans.ban_peer(peers[0], now + hour));
        assert!(!bans.ban_peer(peers[0], now + hour), "already banned");
        assert!(bans.ban_peer(peers[1], now + 2 * hour));
        assert!(bans.ban_peer(peers[2], now + 3 * hour));
        assert!(
            !bans.peer_banned(&peers[0], now),
            "the ban ending first made room"
        );
        assert!(bans.peer_banned(&peers[1], now) && bans.peer_banned(&peers[2], now));
        let ip: IpAddr = [10, 0, 0, 1].into();
        bans.ban_ip(ip, now + hour);
        assert!(bans.ip_banned(&ip, now));
        assert!(!bans.ip_banned(&[10, 0, 0, 2].into(), now));
        let lifted = bans.expire(now + 2 * hour);
        assert_eq!(lifted, vec![peers[1]]);
        assert!(!bans.ip_banned(&ip, now + 2 * hour));
        assert_eq!(bans.len(), (1, 0));
    }
}
