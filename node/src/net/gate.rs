//! The connection gate: who may hold a connection to this node.
//!
//! A network behaviour with no protocol of its own; it only accepts or refuses
//! connections as the swarm establishes them, and closes those of a peer it bans.
//!
//! - **Reserved peers** (the genesis validators, whose libp2p ids are their account keys,
//!   and the configured bootstrap peers) are always let in, unless banned by id, and are
//!   exempt from address bans and per-address caps: on a shared host (a test network, a
//!   NAT) a stranger's ban must not cut the validators off.
//! - **Strangers** share the slots that are left: at most `max_peers` minus the reserved
//!   slots (as many as there are reserved peers, at most half of `max_peers`), and at most
//!   `max_per_ip` strangers from one host, so one host cannot take every slot by minting
//!   identities. A host is an IPv4 address, or an IPv6 /64 prefix ([`host_of`]): one
//!   machine or one customer of a provider is routinely handed a whole /64, and would
//!   otherwise count as 2^64 hosts.
//! - **Bans** are by peer id and by the IP addresses the peer was connected from, each for
//!   a while ([`super::BAN_DURATION`]) and bounded in number. A banned address is refused
//!   before the handshake when no reserved peer was ever seen there, and otherwise as soon
//!   as the peer's id is known.

use std::{
    collections::{HashMap, HashSet, VecDeque},
    convert::Infallible,
    net::IpAddr,
    sync::Arc,
    task::{Context, Poll, Waker},
    time::Instant,
};

use libp2p::{
    Multiaddr, PeerId,
    core::{Endpoint, transport::PortUse},
    multiaddr::Protocol,
    swarm::{
        CloseConnection, ConnectionClosed, ConnectionDenied, ConnectionId, FromSwarm,
        NetworkBehaviour, THandler, THandlerInEvent, THandlerOutEvent, ToSwarm, dummy,
    },
};

use super::{
    NetMetrics,
    peers::{Bans, MAX_TRACKED},
};

/// Why the gate refused a connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub(crate) enum Refusal {
    /// The peer id is banned.
    #[error("the peer is banned")]
    BannedPeer,
    /// The address is banned.
    #[error("the address is banned")]
    BannedIp,
    /// Every slot left to strangers is taken.
    #[error("no free slot for a peer that is not reserved")]
    NoSlot,
    /// The address holds its share of stranger slots.
    #[error("too many peers from this address")]
    PerIp,
}

/// How many connections the gate lets in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Slots {
    /// Peers in all.
    pub(crate) max_peers: usize,
    /// Strangers per IP address.
    pub(crate) max_per_ip: usize,
}

/// The connection gate.
pub(crate) struct Gate {
    slots: Slots,
    reserved: HashSet<PeerId>,
    /// Addresses reserved peers were seen at (bounded): not refused before the handshake.
    reserved_ips: HashSet<IpAddr>,
    bans: Bans,
    /// Established connections: peer and remote IP.
    conns: HashMap<ConnectionId, (PeerId, Option<IpAddr>)>,
    close: VecDeque<PeerId>,
    waker: Option<Waker>,
    metrics: Arc<NetMetrics>,
}

/// The host a multiaddr dials, if it starts with an IP address: the IPv4 address itself
/// (an IPv4-mapped IPv6 address as that IPv4 address), or the /64 prefix of an IPv6
/// address (the rest zeroed). Per-host caps, address bans and the addresses reserved peers
/// were seen at all count hosts, not addresses.
pub(crate) fn host_of(addr: &Multiaddr) -> Option<IpAddr> {
    addr.iter().find_map(|p| match p {
        Protocol::Ip4(ip) => Some(IpAddr::V4(ip)),
        Protocol::Ip6(ip) => Some(match ip.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let prefix = u128::from(ip) & !((1u128 << 64) - 1);
                IpAddr::V6(std::net::Ipv6Addr::from(prefix))
            }
        }),
        _ => None,
    })
}

impl Gate {
    /// A gate with `slots`, `reserved` peers, and room for `max_bans` bans of each kind.
    pub(crate) fn new(
        slots: Slots,
        reserved: impl IntoIterator<Item = PeerId>,
        max_bans: usize,
        metrics: Arc<NetMetrics>,
    ) -> Self {
        Self {
            slots,
            reserved: reserved.into_iter().collect(),
            reserved_ips: HashSet::new(),
            bans: Bans::new(max_bans),
            conns: HashMap::new(),
            close: VecDeque::new(),
            waker: None,
            metrics,
        }
    }

    /// Slots kept for reserved peers: one each, at most half of all.
    fn reserved_slots(&self) -> usize {
        self.reserved.len().min(self.slots.max_peers / 2)
    }

    fn strangers(&self) -> impl Iterator<Item = (&PeerId, &Option<IpAddr>)> {
        self.conns
            .values()
            .filter(|(p, _)| !self.reserved.contains(p))
            .map(|(p, ip)| (p, ip))
    }

    /// Whether `peer`, connecting from `ip`, may hold a connection now.
    pub(crate) fn admit(
        &self,
        peer: &PeerId,
        ip: Option<IpAddr>,
        now: Instant,
    ) -> Result<(), Refusal> {
        if self.bans.peer_banned(peer, now) {
            return Err(Refusal::BannedPeer);
        }
        if self.reserved.contains(peer) || self.conns.values().any(|(p, _)| p == peer) {
            // Reserved, or a second connection of a peer already in (bounded per peer by
            // the connection limits).
            return Ok(());
        }
        if ip.is_some_and(|ip| self.bans.ip_banned(&ip, now)) {
            return Err(Refusal::BannedIp);
        }
        let mut strangers: HashSet<&PeerId> = HashSet::new();
        let mut same_ip: HashSet<&PeerId> = HashSet::new();
        for (p, at) in self.strangers() {
            strangers.insert(p);
            if ip.is_some() && *at == ip {
                same_ip.insert(p);
            }
        }
        if strangers.len() >= self.slots.max_peers.saturating_sub(self.reserved_slots()) {
            return Err(Refusal::NoSlot);
        }
        if same_ip.len() >= self.slots.max_per_ip {
            return Err(Refusal::PerIp);
        }
        Ok(())
    }

    fn check(&self, peer: &PeerId, addr: &Multiaddr) -> Result<(), ConnectionDenied> {
        self.admit(peer, host_of(addr), Instant::now())
            .map_err(|r| {
                NetMetrics::bump(&self.metrics.connections_denied);
                ConnectionDenied::new(r)
            })
    }

    /// Bans `peer` and every address it is connected from until `until`, and closes its
    /// connections. Returns `false` if it was banned already.
    pub(crate) fn ban(&mut self, peer: PeerId, until: Instant) -> bool {
        let fresh = self.bans.ban_peer(peer, until);
        let ips: Vec<IpAddr> = self
            .conns
            .values()
            .filter(|(p, _)| *p == peer)
            .filter_map(|(_, ip)| *ip)
            .collect();
        for ip in ips {
            self.bans.ban_ip(ip, until);
        }
        self.close.push_back(peer);
        if let Some(w) = self.waker.take() {
            w.wake();
        }
        fresh
    }

    /// Whether `peer` is banned now.
    pub(crate) fn is_banned(&self, peer: &PeerId) -> bool {
        self.bans.peer_banned(peer, Instant::now())
    }

    /// Lifts the bans that ended; returns the peers whose ban was lifted.
    pub(crate) fn expire(&mut self, now: Instant) -> Vec<PeerId> {
        self.bans.expire(now)
    }
}

impl NetworkBehaviour for Gate {
    type ConnectionHandler = dummy::ConnectionHandler;
    type ToSwarm = Infallible;

    fn handle_pending_inbound_connection(
        &mut self,
        _: ConnectionId,
        _local: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<(), ConnectionDenied> {
        // Refused before the handshake only where no reserved peer could be behind it.
        match host_of(remote) {
            Some(ip)
                if self.bans.ip_banned(&ip, Instant::now()) && !self.reserved_ips.contains(&ip) =>
            {
                NetMetrics::bump(&self.metrics.connections_denied);
                Err(ConnectionDenied::new(Refusal::BannedIp))
            }
            _ => Ok(()),
        }
    }

    fn handle_established_inbound_connection(
        &mut self,
        _: ConnectionId,
        peer: PeerId,
        _local: &Multiaddr,
        remote: &Multiaddr,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        self.check(&peer, remote)?;
        Ok(dummy::ConnectionHandler)
    }

    fn handle_pending_outbound_connection(
        &mut self,
        _: ConnectionId,
        peer: Option<PeerId>,
        _: &[Multiaddr],
        _: Endpoint,
    ) -> Result<Vec<Multiaddr>, ConnectionDenied> {
        match peer {
            Some(p) if self.bans.peer_banned(&p, Instant::now()) => {
                Err(ConnectionDenied::new(Refusal::BannedPeer))
            }
            _ => Ok(vec![]),
        }
    }

    fn handle_established_outbound_connection(
        &mut self,
        _: ConnectionId,
        peer: PeerId,
        addr: &Multiaddr,
        _: Endpoint,
        _: PortUse,
    ) -> Result<THandler<Self>, ConnectionDenied> {
        self.check(&peer, addr)?;
        Ok(dummy::ConnectionHandler)
    }

    fn on_swarm_event(&mut self, event: FromSwarm) {
        match event {
            FromSwarm::ConnectionEstablished(e) => {
                let ip = host_of(e.endpoint.get_remote_address());
                if self.reserved.contains(&e.peer_id)
                    && let Some(ip) = ip
                    && self.reserved_ips.len() < MAX_TRACKED
                {
                    self.reserved_ips.insert(ip);
                }
                self.conns.insert(e.connection_id, (e.peer_id, ip));
            }
            FromSwarm::ConnectionClosed(ConnectionClosed { connection_id, .. }) => {
                self.conns.remove(&connection_id);
            }
            _ => {}
        }
    }

    fn on_connection_handler_event(
        &mut self,
        _: PeerId,
        _: ConnectionId,
        event: THandlerOutEvent<Self>,
    ) {
        match event {}
    }

    fn poll(&mut self, cx: &mut Context<'_>) -> Poll<ToSwarm<Infallible, THandlerInEvent<Self>>> {
        if let Some(peer) = self.close.pop_front() {
            return Poll::Ready(ToSwarm::CloseConnection {
                peer_id: peer,
                connection: CloseConnection::All,
            });
        }
        self.waker = Some(cx.waker().clone());
        Poll::Pending
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn gate(reserved: &[PeerId]) -> Gate {
        Gate::new(
            Slots {
                max_peers: 4,
                max_per_ip: 2,
            },
            reserved.iter().copied(),
            16,
            Arc::new(NetMetrics::default()),
        )
    }

    fn connect(g: &mut Gate, peer: PeerId, ip: [u8; 4]) {
        g.conns.insert(
            ConnectionId::new_unchecked(g.conns.len() + 1),
            (peer, Some(IpAddr::from(ip))),
        );
    }

    /// Strangers get the slots reserved peers leave, at most two per address; reserved
    /// peers get in whatever strangers hold, and a ban by address spares them.
    #[test]
    fn slots_per_address_reserved_and_banned() {
        let validator = PeerId::random();
        let mut g = gate(&[validator]);
        let now = Instant::now();
        let home = [10, 0, 0, 1];
        let (a, b, c) = (PeerId::random(), PeerId::random(), PeerId::random());
        assert_eq!(g.admit(&a, Some(home.into()), now), Ok(()));
        connect(&mut g, a, home);
        connect(&mut g, b, home);
        assert_eq!(g.admit(&c, Some(home.into()), now), Err(Refusal::PerIp));
        assert_eq!(g.admit(&a, Some(home.into()), now), Ok(()), "a second link");
        connect(&mut g, c, [10, 0, 0, 2]);
        // Three strangers fill the four slots less the one kept for the validator.
        let d = PeerId::random();
        assert_eq!(
            g.admit(&d, Some([10, 0, 0, 3].into()), now),
            Err(Refusal::NoSlot)
        );
        assert_eq!(g.admit(&validator, Some(home.into()), now), Ok(()));

        g.ban(a, now + Duration::from_secs(60));
        assert!(g.is_banned(&a));
        assert_eq!(
            g.admit(&a, Some(home.into()), now),
            Err(Refusal::BannedPeer)
        );
        g.conns.retain(|_, (p, _)| *p != a && *p != b);
        let fresh = PeerId::random();
        assert_eq!(
            g.admit(&fresh, Some(home.into()), now),
            Err(Refusal::BannedIp),
            "a new id from the banned address"
        );
        assert_eq!(g.admit(&validator, Some(home.into()), now), Ok(()));
        assert_eq!(g.expire(now + Duration::from_secs(61)), vec![a]);
        assert_eq!(
            g.admit(&fresh, Some(home.into()), now + Duration::from_secs(61)),
            Ok(())
        );
    }

    /// One host handed a /64 mints addresses as freely as identities: strangers from
    /// anywhere in one /64 share its cap, and a ban of one of its addresses bans the
    /// prefix; another /64, or an IPv4 host, is another host.
    #[test]
    fn strangers_of_one_ipv6_slash_64_count_as_one_host() {
        let addr = |s: &str| -> Multiaddr { s.parse().unwrap() };
        let h = |s: &str| host_of(&addr(s));
        assert_eq!(
            h("/ip6/2001:db8:1:2:aaaa::1/tcp/4001"),
            h("/ip6/2001:db8:1:2:ffff:1:2:3/udp/4001/quic-v1")
        );
        assert_ne!(
            h("/ip6/2001:db8:1:2::1/tcp/4001"),
            h("/ip6/2001:db8:1:3::1/tcp/4001")
        );
        assert_eq!(
            h("/ip6/::ffff:10.0.0.1/tcp/1"),
            h("/ip4/10.0.0.1/tcp/1"),
            "an IPv4-mapped address is its IPv4 host"
        );
        assert_ne!(h("/ip4/10.0.0.1/tcp/1"), h("/ip4/10.0.0.2/tcp/1"));
        assert_eq!(h("/dns4/example.org/tcp/1"), None);

        let mut g = gate(&[]);
        let now = Instant::now();
        for i in 1..=2 {
            let at = h(&format!("/ip6/2001:db8:1:2::{i}/tcp/4001"));
            g.conns
                .insert(ConnectionId::new_unchecked(i), (PeerId::random(), at));
        }
        let third = h("/ip6/2001:db8:1:2:dead:beef:0:9/tcp/4001");
        assert_eq!(g.admit(&PeerId::random(), third, now), Err(Refusal::PerIp));
        let elsewhere = h("/ip6/2001:db8:1:3::1/tcp/4001");
        assert_eq!(g.admit(&PeerId::random(), elsewhere, now), Ok(()));

        // A ban of one address of the prefix bans all of it.
        let banned = *g.conns.values().next().map(|(p, _)| p).unwrap();
        g.ban(banned, now + Duration::from_secs(60));
        g.conns.clear();
        let other = h("/ip6/2001:db8:1:2:1234::5/tcp/4001");
        assert_eq!(
            g.admit(&PeerId::random(), other, now),
            Err(Refusal::BannedIp)
        );
        assert_eq!(g.admit(&PeerId::random(), elsewhere, now), Ok(()));
    }
}
