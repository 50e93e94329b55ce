//! The little test chain the scenario tests share (`use crate::common::...` in each): a
//! contract driven with real signed transactions, block by block, and the helpers that
//! build sessions and vote in them.

use trust_contracts::{
    BlockCtx, Contract, Event, Floors, Genesis, GenesisAccount, Params, Phase, TxError,
};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, SealingPublicKey, Signed, Vote, commitment,
    honeypot_set_commitment, mapping_commitment,
    seal::{SealedKey, SealingSecret},
    tx::{Call, QuorumParams, SeatKey, SegmentEntry, SessionManifest, Tier, Tx},
    units::Ppm,
};

/// Whether [`Chain::block`] checks after every block that supply is conserved.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SupplyCheck {
    /// After every block.
    EachBlock,
    /// Only where a test calls [`Chain::assert_supply_conserved`].
    OnRequest,
}

/// A little chain: a contract, keys, and a block counter.
#[derive(Clone)]
pub(crate) struct Chain {
    pub(crate) c: Contract,
    pub(crate) height: u64,
    pub(crate) pending: Vec<Signed<Tx>>,
    pub(crate) supply_check: SupplyCheck,
}

pub(crate) fn key(label: &str) -> Keypair {
    Keypair::from_label(label)
}

/// The X25519 sealing secret a test auditor registers the public half of.
pub(crate) fn sealing(id: &AccountId) -> SealingSecret {
    SealingSecret::from_bytes(Hash::of_parts("test-sealing", &[id.as_ref()]).0)
}

/// The reason a test seat gives for `v` (bound into its commitment and revealed with it).
pub(crate) fn why(v: Vote) -> String {
    format!("the test seat finds it {v:?}")
}

/// The network parameters these scenarios run under: the defaults with the floors a test
/// network may lower on purpose ([`Floors::dev`]): most scenarios need `k = 1`, a single
/// seat or two, and short windows to be read. The scenarios about floors set their own.
pub(crate) fn test_params() -> Params {
    Params {
        floors: Floors::dev(),
        ..Params::default()
    }
}

/// The salt test providers commit their honeypot set with.
pub(crate) const SET_SALT: Salt = Salt([11; 32]);

/// The `RevealHoneypots` that opens a test session's honeypot set: `openings` (empty when
/// it planted none) under [`SET_SALT`].
pub(crate) fn open_set(session: Hash, openings: Vec<trust_protocol::tx::HoneypotOpening>) -> Call {
    Call::RevealHoneypots {
        session,
        openings,
        set_salt: SET_SALT,
    }
}

pub(crate) fn ctx(height: u64) -> BlockCtx {
    BlockCtx {
        height,
        block_hash: Hash::of_parts("test-block", &[&height.to_le_bytes()]),
    }
}

impl Chain {
    /// Nothing minted or lost: every token is in a balance, a stake or an escrow.
    pub(crate) fn assert_supply_conserved(&self) {
        assert_eq!(self.c.accounted_supply(), u128::from(self.c.state().supply));
    }

    /// `auditors` per tier, each with 1000 staked, and the accounts `others` (label,
    /// balance), registered in block 1.
    pub(crate) fn with_accounts(
        params: Params,
        auditors: &[(Tier, usize)],
        others: &[(&str, u64)],
        supply_check: SupplyCheck,
    ) -> (Self, Vec<Keypair>) {
        let mut keys = Vec::new();
        let mut accounts = Vec::new();
        for (tier, n) in auditors {
            for i in 0..*n {
                let k = key(&format!("{tier:?}-{i}"));
                // Registration bonds the 1000 below.
                accounts.push(GenesisAccount {
                    id: k.public(),
                    balance: 1_010,
                    stake: 0,
                });
                keys.push(k);
            }
        }
        for &(p, balance) in others {
            accounts.push(GenesisAccount {
                id: key(p).public(),
                balance,
                stake: 0,
            });
        }
        let c = Contract::new(&Genesis {
            params,
            accounts,
            auditors: vec![],
        })
        .unwrap();
        let mut chain = Chain {
            c,
            height: 0,
            pending: Vec::new(),
            supply_check,
        };
        let mut i = 0;
        for (tier, n) in auditors {
            for _ in 0..*n {
                let k = &keys[i];
                chain.submit(
                    k,
                    Call::RegisterAuditor {
                        tier: *tier,
                        expertise: vec!["math".into()],
                        sealing_key: sealing(&k.public()).public(),
                        stake: 1_000,
                    },
                );
                i += 1;
            }
        }
        chain.block();
        // A registration is drawn only after its warm-up (`expertise_delay` blocks).
        if i > 0 {
            for _ in 0..chain.c.state().params.expertise_delay {
                chain.block();
            }
        }
        (chain, keys)
    }

    /// Signs `call` with the sender's next nonce (counting transactions already pending).
    pub(crate) fn submit(&mut self, k: &Keypair, call: Call) {
        let pending = self
            .pending
            .iter()
            .filter(|t| t.signer == k.public())
            .count() as u64;
        let nonce = self.c.nonce(&k.public()) + pending;
        self.pending
            .push(Signed::sign(k, &Hash::ZERO, Tx { nonce, call }));
    }

    /// The provider opens its (test) mapping, which ends a session's disclosure; a
    /// session whose committed honeypot set is empty and still closed opens it first.
    pub(crate) fn reveal_mapping(&mut self, provider: &Keypair, session: Hash) {
        let empty = honeypot_set_commitment(&[], &SET_SALT);
        let closed_and_empty = self.c.state().sessions.get(&session).is_some_and(|s| {
            !s.honeypots_opened && s.manifest.honeypot_set == empty
        }) && !self.pending.iter().any(|t| {
            matches!(&t.body.call, Call::RevealHoneypots { session: s, .. } if *s == session)
        });
        if closed_and_empty {
            self.submit(provider, open_set(session, Vec::new()));
        }
        self.submit(
            provider,
            Call::RevealMapping {
                session,
                mapping: Hash::sha256(b"map"),
                salt: Salt([9; 32]),
            },
        );
    }

    /// Whether the session is in disclosure and has no mapping yet.
    pub(crate) fn mapping_due(&self, session: Hash) -> bool {
        self.c
            .state()
            .sessions
            .get(&session)
            .is_some_and(|s| s.mapping.is_none() && matches!(s.phase, Phase::Disclose { .. }))
    }

    /// [`Chain::reveal_mapping`] once the session is in disclosure and has no mapping yet.
    pub(crate) fn reveal_mapping_when_due(&mut self, provider: &Keypair, session: Hash) {
        if self.mapping_due(session) {
            self.reveal_mapping(provider, session);
        }
    }

    /// Applies the pending transactions (all must succeed) and ends the block; checks that
    /// supply is conserved when the chain was built with [`SupplyCheck::EachBlock`].
    pub(crate) fn block(&mut self) -> Vec<Event> {
        self.height += 1;
        let ctx = ctx(self.height);
        let mut ev = self.c.begin_block(&ctx);
        for tx in std::mem::take(&mut self.pending) {
            ev.extend(
                self.c
                    .apply(&ctx, &tx)
                    .unwrap_or_else(|e| panic!("{e}: {tx:?}")),
            );
        }
        ev.extend(self.c.end_block(&ctx));
        if self.supply_check == SupplyCheck::EachBlock {
            self.assert_supply_conserved();
        }
        ev
    }

    /// Applies one transaction in the next block's context, returning the result.
    pub(crate) fn try_apply(&mut self, k: &Keypair, call: Call) -> Result<Vec<Event>, TxError> {
        let tx = Signed::sign(
            k,
            &Hash::ZERO,
            Tx {
                nonce: self.c.nonce(&k.public()),
                call,
            },
        );
        self.c.apply(&ctx(self.height + 1), &tx)
    }

    pub(crate) fn balance(&self, who: &AccountId) -> u64 {
        self.c.state().accounts.get(who).map_or(0, |a| a.balance)
    }

    pub(crate) fn phase(&self, sid: &Hash) -> Option<Phase> {
        self.c.state().sessions.get(sid).map(|s| s.phase)
    }
}

pub(crate) fn segment(i: u8, tier: Tier, depends_on: Vec<u16>) -> SegmentEntry {
    let id = Hash::of_parts("seg", &[&[i]]);
    SegmentEntry {
        depends_on,
        cid: trust_protocol::cid::Cid::of(&[i]),
        ..SegmentEntry::plain(id, tier)
    }
}

/// A math session of `segments`, `k` seats per tier plus `extra`, at the minimum fee.
pub(crate) fn manifest(segments: Vec<SegmentEntry>, k: u8, extra: u8) -> SessionManifest {
    let mut m = SessionManifest {
        segments,
        mapping_commitment: mapping_commitment(&Hash::sha256(b"map"), &Salt([9; 32])),
        quorum: QuorumParams {
            k: [k, k, k],
            extra_seats: extra,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        fee: 0,
        domain: "math".into(),
        left_out: Vec::new(),
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: honeypot_set_commitment(&[], &SET_SALT),
    };
    m.fee = trust_contracts::minimum_fee(&Params::default(), &m).unwrap();
    m
}

/// Commits `m` to the honeypot set `indices` (under [`SET_SALT`]).
pub(crate) fn with_honeypot_set(mut m: SessionManifest, indices: &[u16]) -> SessionManifest {
    m.honeypot_set = honeypot_set_commitment(indices, &SET_SALT);
    m
}

/// Seats of a segment in a round, from the events.
pub(crate) fn seats_of(ev: &[Event], seg: u16, rnd: u8) -> Vec<AccountId> {
    ev.iter()
        .filter_map(|e| match e {
            Event::SeatAssigned {
                segment,
                seat,
                round,
                ..
            } if *segment == seg && *round == rnd => Some(*seat),
            _ => None,
        })
        .collect()
}

pub(crate) fn find<'a>(keys: &'a [Keypair], id: &AccountId) -> &'a Keypair {
    keys.iter().find(|k| k.public() == *id).unwrap()
}

/// The provider's `DeliverKeys` for every seat of `round` of a live session: each seat its
/// segment's key and its premises' (stand-in sealed bytes: the contract never opens them),
/// each (segment, seat) once, skipping the seats `starve` names.
pub(crate) fn deliver_keys(
    chain: &mut Chain,
    provider: &Keypair,
    sid: Hash,
    round: u8,
    starve: &[AccountId],
) {
    let s = chain.c.state().sessions[&sid].clone();
    let mut keys = Vec::new();
    let mut named = std::collections::BTreeSet::new();
    for (i, g) in s.segments.iter().enumerate() {
        for x in g.seats.iter().filter(|x| x.round == round) {
            if starve.contains(&x.account) {
                continue;
            }
            for seg in std::iter::once(i as u16).chain(g.entry.depends_on.iter().copied()) {
                if !named.insert((seg, x.account)) {
                    continue;
                }
                keys.push(SeatKey {
                    segment: seg,
                    seat: x.account,
                    sealed: SealedKey {
                        ephemeral: SealingPublicKey([4; 32]),
                        ciphertext: vec![0; 48],
                    },
                });
            }
        }
    }
    chain.submit(provider, Call::DeliverKeys { session: sid, keys });
}

/// The salt every test seat commits its vote with.
pub(crate) const VOTE_SALT: Salt = Salt([3; 32]);

/// A seat's vote on a segment, committed and still to be revealed.
pub(crate) type Planned = (Keypair, u16, Vote);

/// Submits the commitments of the seats of `round` of `sid` that `drawn` (events) holds,
/// segment by segment (`ids`): `votes(segment, seat_index)` (None: never commits).
/// Returns what each committed, for [`reveal_votes`].
pub(crate) fn commit_votes(
    chain: &mut Chain,
    keys: &[Keypair],
    sid: Hash,
    ids: &[Hash],
    drawn: &[Event],
    round: u8,
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> Vec<Planned> {
    let mut plan = Vec::new();
    for (s, id) in ids.iter().enumerate() {
        for (j, seat) in seats_of(drawn, s as u16, round).into_iter().enumerate() {
            if let Some(v) = votes(s as u16, j) {
                let k = find(keys, &seat);
                let c = commitment(&sid, id, &seat, v, &VOTE_SALT, &why(v));
                chain.submit(
                    k,
                    Call::Commit {
                        session: sid,
                        segment: s as u16,
                        commitment: c,
                    },
                );
                plan.push((k.clone(), s as u16, v));
            }
        }
    }
    plan
}

/// Submits the reveals of what [`commit_votes`] committed.
pub(crate) fn reveal_votes(chain: &mut Chain, sid: Hash, plan: &[Planned]) {
    for (k, s, v) in plan {
        chain.submit(
            k,
            Call::Reveal {
                session: sid,
                segment: *s,
                vote: *v,
                salt: VOTE_SALT,
                reason: why(*v),
            },
        );
    }
}

/// Runs a round to its end: keys for every seat but `starve`, `votes` committed and
/// revealed, blocks until the round's reveal window closed. Returns the events.
pub(crate) fn run_round(
    chain: &mut Chain,
    keys: &[Keypair],
    sid: Hash,
    round: u8,
    drawn: &[Event],
    starve: &[AccountId],
    votes: &dyn Fn(u16, usize) -> Option<Vote>,
) -> Vec<Event> {
    deliver_keys(chain, &key("provider"), sid, round, starve);
    let ids: Vec<Hash> = chain.c.state().sessions[&sid]
        .segments
        .iter()
        .map(|g| g.entry.id)
        .collect();
    let plan = commit_votes(chain, keys, sid, &ids, drawn, round, votes);
    let mut all = chain.block();
    while matches!(chain.phase(&sid), Some(Phase::Commit { round: r, .. }) if r == round) {
        all.extend(chain.block());
    }
    reveal_votes(chain, sid, &plan);
    all.extend(chain.block());
    while matches!(chain.phase(&sid), Some(Phase::Reveal { round: r, .. }) if r == round) {
        all.extend(chain.block());
    }
    all
}
