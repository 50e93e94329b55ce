//! The chain of the adversarial simulator: who exists, how a block is ordered, sealed and
//! applied (to the real contract and to the shadow that receives its reveals in the other
//! order), the seed chain and the grinding proposer, and the report.

use std::collections::{BTreeMap, VecDeque};

use rand::{SeedableRng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;
use trust_protocol::{
    AccountId, Hash, Keypair, SealingPublicKey, Signed,
    block::{BlockHeader, genesis_seed, prove_seed, txs_root},
    encode,
    tx::{Call, Tier, Tx},
};

use super::{
    AdversaryConfig, AdversaryReport, Diagnostics,
    memory::{self, Case},
};
use crate::{
    BlockCtx, Contract, Event, Genesis, GenesisAccount, GenesisAuditor, LocalVerdict, TxError,
    sim::{SimError, error_kind, seed_key},
};

/// Who an actor is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    /// An honest auditor of a tier: judges the truth.
    Honest(Tier),
    /// A sybil auditor of a tier: the adversary's.
    Sybil(Tier),
    /// A key of the adversary's not yet registered as an auditor of the tier: it
    /// registers mid-run when the grinding proposer finds it worth it (then it is a
    /// [`Kind::Sybil`]).
    Reserve(Tier),
    /// An honest provider.
    Provider,
    /// One of the adversary's provider keys.
    Adversary,
    /// One of the adversary's appeal spammers.
    Spammer,
}

/// One account of the simulation and its key.
pub(super) struct Actor {
    pub(super) key: Keypair,
    pub(super) id: AccountId,
    pub(super) kind: Kind,
}

/// What a queued transaction is, for reading its result.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Tag {
    /// Expected to be applied.
    Plain,
    /// An attack the contract must refuse: if it is applied, the named defence was
    /// breached.
    MustRefuse(&'static str),
    /// May be refused without meaning anything (a step after a refused attack, a spam
    /// appeal, a provider's own appeal).
    MayFail,
    /// An honest seat's appeal (outvoted, or kept from judging a segment decided Valid):
    /// a refusal is a third-party appeal refused when one of its segments' verdicts
    /// contradicts the truth (`true`); refusing an appeal of verdicts that are right
    /// (`false`: a seat kept from judging cannot tell) costs nobody anything.
    SeatAppeal(bool),
    /// An honest provider's appeal on its own checks.
    ProviderAppeal,
    /// A registration or bond the grinding proposer put in its own block.
    Grind,
}

/// A transaction waiting for the next block.
pub(super) struct Pending {
    pub(super) sender: usize,
    pub(super) call: Call,
    pub(super) tag: Tag,
}

/// The part of a block header the seed chain reads, and what a proposer could vary.
#[derive(Debug, Clone, Copy)]
struct Header {
    height: u64,
    seed: Hash,
    txs_root: Hash,
    time_ms: u64,
}

/// The seed of the block after `parent`: a hash of the simulation's seed, the height and
/// the parent's own seed. Nothing the parent's proposer picks (its transactions, their
/// order, its time) enters it, as nothing does a VRF output over the chain and height.
fn next_seed(sim_seed: u64, parent: &Header) -> Hash {
    Hash::of_parts(
        "trust/v1/adversary-sim-seed",
        &[
            &sim_seed.to_le_bytes(),
            &parent.height.saturating_add(1).to_le_bytes(),
            parent.seed.as_ref(),
        ],
    )
}

/// Blocks in a period of the proposer rotation.
pub(super) const COALITION_PERIOD: u64 = 10;
/// The first block of the period the colluding coalition proposes: it proposes
/// `COALITION_FIRST..COALITION_PERIOD`, 3 blocks of 10 in a row (30% of the proposer
/// power, under a third).
pub(super) const COALITION_FIRST: u64 = 7;

/// Whether the colluding coalition proposes block `h`.
pub(super) fn coalition_block(h: u64) -> bool {
    h % COALITION_PERIOD >= COALITION_FIRST
}

/// Whether the coalition censors in block `h`: every other run of its blocks (in the
/// others it orders reveals).
pub(super) fn censoring(h: u64) -> bool {
    coalition_block(h) && (h / COALITION_PERIOD) % 2 == 1
}

/// The running counts of the report.
#[derive(Default)]
pub(super) struct Counts {
    pub(super) attacks: BTreeMap<&'static str, u64>,
    pub(super) breaches: BTreeMap<&'static str, u64>,
    pub(super) honest_slashed: u64,
    pub(super) honest_stake_lost: u64,
    pub(super) wrong_pass_at_decision: u64,
    pub(super) wrong_pass_final: u64,
    pub(super) wrong_pass_unwatched: u64,
    pub(super) lemma1: super::Lemma1,
    pub(super) order_dependent: u64,
    pub(super) third_party_refused: u64,
    pub(super) honest_sessions_refused: u64,
    pub(super) max_blocks_to_draw: u64,
    pub(super) censored_reveals: u64,
    pub(super) max_blocks_to_final: u64,
    pub(super) sessions: u64,
    pub(super) sybil_seats: u64,
    pub(super) first_round_seats: u64,
    pub(super) diag: Diagnostics,
}

impl Counts {
    pub(super) fn attack(&mut self, name: &'static str) {
        *self.attacks.entry(name).or_insert(0) += 1;
    }

    pub(super) fn breach(&mut self, name: &'static str) {
        *self.breaches.entry(name).or_insert(0) += 1;
    }

    /// Notes what happened behind a failed invariant.
    pub(super) fn incident(&mut self, text: String) {
        if self.diag.incidents.len() < super::MAX_INCIDENTS {
            self.diag.incidents.push(text);
        }
    }
}

/// Unregistered sybil keys per tier the adversary may register mid-run.
pub(super) const RESERVE_PER_TIER: usize = 2;

/// What each auditor holds besides its stake at genesis.
const AUDITOR_BALANCE: u64 = 100_000;

/// The domain the adversary's sybils hold at the floor (`domain-pool-at-floor`): honest
/// auditors declare it too, but hold less than the floor on their own.
pub(super) const FLOOR_DOMAIN: &str = "topology";

/// An honest auditor's domains: every one declares `geometry` and `math`; the first
/// few of each tier (`index` among them) also declare [`FLOOR_DOMAIN`], together holding
/// half the domain floor ([`crate::domain_floor`] of the tier's stake at genesis): the
/// sybils make up the rest by declaring it mid-run, when their stake is enough.
fn honest_expertise(index: usize, cfg: &AdversaryConfig) -> Vec<String> {
    let mut out = vec!["geometry".to_string(), "math".to_string()];
    let tier_stake = u64::from(cfg.honest_per_tier)
        .saturating_mul(cfg.honest_stake)
        .saturating_add(u64::from(cfg.sybils_per_tier).saturating_mul(cfg.sybil_stake()));
    let floor = crate::domain_floor(&cfg.params, tier_stake);
    let want = (floor / 2).div_ceil(cfg.honest_stake.max(1)).max(3);
    if (index as u64) < want {
        out.push(FLOOR_DOMAIN.to_string());
    }
    out
}

/// Every attack the run must try, by the name the report gives it.
pub(super) const ATTACKS: &[&str] = &[
    "extreme-terms",
    "below-floor-terms",
    "private-domain",
    "late-expertise",
    "selective-honeypot",
    "false-honeypot",
    "honeypot-set-with-conclusion",
    "honeypot-set-with-rested-on-step",
    "honeypot-set-never-opened",
    "garbage-keys",
    "withheld-keys",
    "late-keys",
    "self-appeal",
    "appeal-spam",
    "appeal-reroll",
    "queued-appeal",
    "starved-appeal-round",
    "reveal-order-sybils-first",
    "reveal-order-sybils-last",
    "seed-grind",
    "sybil-collusion",
    "tau-ceiling",
    "re-braced-proof",
    "withheld-ciphertext",
    "censorship",
    "draw-grinding",
    "domain-pool-at-floor",
];

/// Every defence the run checks, by the name of its breach.
pub(super) const DEFENCES: &[&str] = &[
    "below-floor-terms-accepted",
    "private-domain-accepted",
    "honeypot-opened-after-votes",
    "bad-honeypot-set-opened",
    "late-expertise-seated",
    "seed-changed-by-block-contents",
    "tau-above-ceiling-accepted",
    "draw-steered-by-proposer",
    "re-braced-proof-passed",
];

/// The simulated network.
pub(super) struct World {
    pub(super) cfg: AdversaryConfig,
    pub(super) rng: ChaCha8Rng,
    pub(super) contract: Contract,
    /// The copy that receives every block with its reveals in the other order.
    shadow: Contract,
    pub(super) actors: Vec<Actor>,
    pub(super) by_id: BTreeMap<AccountId, usize>,
    pub(super) height: u64,
    parent: Header,
    /// The hash of the last block as the node would build its header (see
    /// [`Diagnostics::node_header_seed_changes`]).
    node_parent: Hash,
    /// The seed of the node's latest header.
    node_seed: Hash,
    pub(super) queue: Vec<Pending>,
    /// Live and decided sessions the simulation follows, by id.
    pub(super) cases: BTreeMap<Hash, Case>,
    /// Sessions queued to open, by mapping commitment, until their id is known.
    pub(super) opening: BTreeMap<Hash, Case>,
    pub(super) counts: Counts,
    /// Sessions queued so far (refused probes aside).
    pub(super) opened: u32,
    /// Adversary sessions queued so far.
    pub(super) adversary_opened: u32,
    /// Turns of the colluding proposer so far (it alternates sybils first and last).
    proposer_turns: u64,
    pub(super) behave: memory::State,
    /// A check of the check: the shadow drops the honest auditors' reveals instead of
    /// reordering them, so the comparison must find differences (set only by a test).
    pub(super) tamper_shadow: bool,
}

impl World {
    /// The genesis of the run: auditors registered with their stake, providers, the
    /// watcher and the spammers funded.
    pub(super) fn new(cfg: &AdversaryConfig) -> Result<Self, SimError> {
        let mut actors = Vec::new();
        let mut push = |label: &str, i: usize, kind: Kind| {
            let key = seed_key(cfg.seed, label, i);
            actors.push(Actor {
                id: key.public(),
                key,
                kind,
            });
        };
        for tier in Tier::ALL {
            for i in 0..cfg.honest_per_tier as usize {
                push(&format!("adv-honest-{tier:?}"), i, Kind::Honest(tier));
            }
            for i in 0..cfg.sybils_per_tier as usize {
                push(&format!("adv-sybil-{tier:?}"), i, Kind::Sybil(tier));
            }
            for i in 0..RESERVE_PER_TIER {
                push(&format!("adv-reserve-{tier:?}"), i, Kind::Reserve(tier));
            }
        }
        for i in 0..2 {
            push("adv-provider", i, Kind::Provider);
        }
        for i in 0..2 {
            push("adv-adversary", i, Kind::Adversary);
        }
        for i in 0..3 {
            push("adv-spammer", i, Kind::Spammer);
        }
        let mut accounts = Vec::new();
        let mut auditors = Vec::new();
        for a in &actors {
            // Honest auditors hold enough to bond an appeal or two (they are the only
            // third parties who appeal); sybils enough to bond a little more; reserve keys
            // the least stake of their tier.
            let (balance, stake) = match a.kind {
                Kind::Honest(_) => (AUDITOR_BALANCE, cfg.honest_stake),
                Kind::Sybil(_) => (AUDITOR_BALANCE, cfg.sybil_stake()),
                Kind::Reserve(t) => (cfg.params.min_stake(t) + 1_000, 0),
                Kind::Provider | Kind::Adversary => (1_000_000_000, 0),
                Kind::Spammer => (10_000_000, 0),
            };
            accounts.push(GenesisAccount {
                id: a.id,
                balance,
                stake,
            });
            let (tier, expertise) = match a.kind {
                Kind::Honest(t) => {
                    let index = actors
                        .iter()
                        .filter(|b| b.kind == a.kind)
                        .position(|b| b.id == a.id)
                        .unwrap_or(0);
                    (t, honest_expertise(index, cfg))
                }
                Kind::Sybil(t) => (t, vec!["math".to_string(), "private".to_string()]),
                _ => continue,
            };
            auditors.push(GenesisAuditor {
                id: a.id,
                tier,
                expertise,
                sealing_key: SealingPublicKey(Hash::of_parts("adv-x25519", &[a.id.as_ref()]).0),
            });
        }
        let genesis = Genesis {
            params: cfg.params.clone(),
            accounts,
            auditors,
        };
        let contract = if cfg.unchecked_params {
            // A mutation test's chain: built under the network's defaults, then given the
            // old (unchecked) parameters it tests.
            let mut state = Contract::new(&Genesis {
                params: super::adversary_params(),
                ..genesis
            })?
            .state()
            .clone();
            state.params = cfg.params.clone();
            Contract::from_state(state)
        } else {
            Contract::new(&genesis)?
        };
        let chain_id = contract.chain_id();
        let by_id = actors.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
        let mut counts = Counts::default();
        for name in ATTACKS {
            counts.attacks.insert(name, 0);
        }
        for name in DEFENCES {
            counts.breaches.insert(name, 0);
        }
        Ok(Self {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg: cfg.clone(),
            shadow: contract.clone(),
            contract,
            actors,
            by_id,
            height: 0,
            parent: Header {
                height: 0,
                seed: Hash::of_parts("trust/v1/adversary-sim-genesis", &[&cfg.seed.to_le_bytes()]),
                txs_root: Hash::ZERO,
                time_ms: 0,
            },
            node_parent: Hash::ZERO,
            node_seed: genesis_seed(&chain_id),
            queue: Vec::new(),
            cases: BTreeMap::new(),
            opening: BTreeMap::new(),
            counts,
            opened: 0,
            adversary_opened: 0,
            proposer_turns: 0,
            behave: Default::default(),
            tamper_shadow: false,
        })
    }

    /// The kind of the actor with account `id`, if it is one.
    pub(super) fn kind_of(&self, id: &AccountId) -> Option<Kind> {
        self.by_id.get(id).map(|&i| self.actors[i].kind)
    }

    /// Whether account `id` is a sybil auditor (or one of the adversary's reserve keys).
    pub(super) fn is_sybil(&self, id: &AccountId) -> bool {
        matches!(self.kind_of(id), Some(Kind::Sybil(_) | Kind::Reserve(_)))
    }

    /// Queues a transaction for the next block.
    pub(super) fn send(&mut self, sender: usize, call: Call, tag: Tag) {
        self.queue.push(Pending { sender, call, tag });
    }

    /// Runs until every session opened is final (or failed), or a generous block limit.
    pub(super) fn run(&mut self) {
        self.act();
        let limit = self.block_limit();
        while self.height < limit {
            self.step();
            let done = self.opened >= self.cfg.sessions
                && self.opening.is_empty()
                && self.cases.is_empty()
                && self.queue.is_empty();
            if done {
                break;
            }
        }
        self.counts.diag.sessions_unfinished = self.cases.len() as u64;
    }

    /// Blocks enough for every session to open, run both rounds, be appealed up to its
    /// horizon with every queued appeal heard, and become final.
    fn block_limit(&self) -> u64 {
        let p = &self.cfg.params;
        let window = |w: &[u64; 3], own: u64| w.iter().copied().fold(own, u64::max);
        let round = 2
            + window(&p.floors.min_commit_window, p.commit_window)
                .max(window(&p.floors.max_commit_window, 0).min(p.max_window))
            + window(&p.floors.min_reveal_window, p.reveal_window);
        let opening = u64::from(self.cfg.sessions.div_ceil(self.cfg.sessions_per_block));
        // Every queued segment is heard in the next round: at most one round per block of
        // the horizon, and a few more for rounds that open on its last blocks.
        let appeals = 18 * (round + 2);
        // A session may wait for admission up to `draw_patience` blocks.
        let waiting = p.draw_patience.min(10_000);
        opening + waiting + 2 * round + p.disclose_window + p.appeal_horizon + appeals + 100
    }

    /// Produces one block: orders the queue, lets the colluding proposer grind, applies the
    /// block to the contract and, reveals reversed, to the shadow; compares the rounds
    /// that closed; then every actor reacts and queues what it sends next.
    fn step(&mut self) {
        let h = self.height + 1;
        self.height = h;
        let seed = next_seed(self.cfg.seed, &self.parent);
        let ctx = BlockCtx {
            height: h,
            block_hash: seed,
        };
        let colluding = coalition_block(h);
        let queued = std::mem::take(&mut self.queue);
        let mut order = self.order(queued, colluding, censoring(h));
        let time_ms = h * 1_000;
        if colluding {
            self.grind(&order, seed, time_ms);
        }
        if colluding && h % COALITION_PERIOD == COALITION_FIRST {
            let own = self.grind_draws(&order, &ctx);
            order.extend(own);
        }

        let mut events = self.contract.begin_block(&ctx);
        let mut applied = Vec::with_capacity(order.len());
        for p in &order {
            let actor = &self.actors[p.sender];
            let nonce = self.contract.nonce(&actor.id);
            let opens = match &p.call {
                Call::OpenSession(m) => {
                    Some((m.mapping_commitment, Tx::session_id(&actor.id, nonce)))
                }
                _ => None,
            };
            let tx = Signed::sign(
                &actor.key,
                &self.contract.chain_id(),
                Tx {
                    nonce,
                    call: p.call.clone(),
                },
            );
            let result = self.contract.apply(&ctx, &tx);
            applied.push(result.is_ok());
            match result {
                Ok(ev) => {
                    self.counts.diag.txs_applied += 1;
                    if let Some((key, id)) = opens
                        && let Some(mut case) = self.opening.remove(&key)
                    {
                        case.opened_at = h;
                        self.counts.sessions += 1;
                        if case.plan.domain_at_floor {
                            self.counts.diag.domain_pool_sessions += 1;
                        }
                        self.cases.insert(id, case);
                    }
                    match p.tag {
                        Tag::MustRefuse(breach) => self.counts.breach(breach),
                        Tag::SeatAppeal(_) => self.counts.diag.seat_appeals += 1,
                        Tag::ProviderAppeal => self.counts.diag.provider_appeals += 1,
                        _ => {}
                    }
                    if let (Call::RegisterAuditor { tier, .. }, Kind::Reserve(_)) =
                        (&p.call, self.actors[p.sender].kind)
                    {
                        self.actors[p.sender].kind = Kind::Sybil(*tier);
                    }
                    events.extend(ev);
                }
                Err(e) => {
                    *self
                        .counts
                        .diag
                        .txs_refused
                        .entry(error_kind(&e))
                        .or_insert(0) += 1;
                    if let Some((key, _)) = opens {
                        // A probe's case never existed; a real opening refused leaves
                        // nothing to follow (an honest one refused is an invariant).
                        if let Some(case) = self.opening.remove(&key)
                            && !case.adversary
                        {
                            self.counts.honest_sessions_refused += 1;
                            self.counts.incident(format!(
                                "block {h}: an honest provider's OpenSession was refused ({e})"
                            ));
                        }
                    }
                    self.refused(p, &e);
                }
            }
        }
        events.extend(self.contract.end_block(&ctx));
        self.counts.diag.blocks = h;

        let diverged = self.shadow_block(&ctx, &order, &applied);
        let mismatch = self.compare_rounds(&events);
        if diverged || mismatch {
            self.counts.diag.shadow_resyncs += u64::from(diverged);
            self.shadow = self.contract.clone();
        }

        let tx_bytes: Vec<Vec<u8>> = order.iter().map(|p| self.tx_bytes(p)).collect();
        if let Some(header) = self.node_header(h, &tx_bytes, time_ms) {
            self.node_parent = header.hash();
            self.node_seed = header.seed();
        }
        self.parent = Header {
            height: h,
            seed,
            txs_root: txs_root(&tx_bytes),
            time_ms,
        };
        self.react(&events);
        self.act();
    }

    /// What a refused transaction means.
    fn refused(&mut self, p: &Pending, e: &TxError) {
        if let TxError::DomainPoolTooSmall { floor, .. } = e {
            // The refusal names the floor: the sybils now know how much to bring.
            self.behave.domain_floor = Some(*floor);
        }
        if let Tag::SeatAppeal(false) = p.tag {
            self.counts.diag.right_verdict_appeals_refused += 1;
        }
        if p.tag == Tag::SeatAppeal(true) {
            self.counts.third_party_refused += 1;
            *self
                .counts
                .diag
                .third_party_refusals_by_error
                .entry(error_kind(e))
                .or_insert(0) += 1;
            if let Call::Appeal { session, segments } = &p.call {
                self.behave.seat_refused(*session, p.sender, &self.contract);
                let story = self.story(session);
                self.counts.incident(format!(
                    "block {}: an outvoted honest seat's appeal of segments {segments:?} of session {} was refused ({e}); {story}",
                    self.height,
                    session.to_hex()
                ));
            }
        }
    }

    /// The block's order: a seeded shuffle that keeps each sender's transactions in the
    /// order it queued them. The colluding proposer then moves the sybils' reveals to the
    /// front (or, every other turn, the back) and the spammers' appeals ahead of the
    /// watcher's.
    fn order(&mut self, queued: Vec<Pending>, colluding: bool, censor: bool) -> Vec<Pending> {
        let mut slots: Vec<usize> = queued.iter().map(|p| p.sender).collect();
        slots.shuffle(&mut self.rng);
        let mut by_sender: BTreeMap<usize, VecDeque<Pending>> = BTreeMap::new();
        for p in queued {
            by_sender.entry(p.sender).or_default().push_back(p);
        }
        let mut out: Vec<Pending> = slots
            .into_iter()
            .filter_map(|s| by_sender.get_mut(&s)?.pop_front())
            .collect();
        if !colluding {
            return out;
        }
        if censor {
            // The coalition leaves out the honest seats' reveals in the adversary's
            // sessions; they wait in the pool for the next proposer.
            let (dropped, kept): (Vec<Pending>, Vec<Pending>) =
                out.into_iter().partition(|p| self.censored(p));
            if !dropped.is_empty() {
                self.counts.attack("censorship");
            }
            self.counts.censored_reveals += dropped.len() as u64;
            self.queue.extend(dropped);
            out = kept;
        }
        let first = self.proposer_turns.is_multiple_of(2);
        self.proposer_turns += 1;
        let rank = |w: &World, p: &Pending| -> u8 {
            let sybil_reveal =
                matches!(p.call, Call::Reveal { .. }) && w.is_sybil(&w.actors[p.sender].id);
            match (sybil_reveal, w.actors[p.sender].kind, p.tag) {
                (true, _, _) if first => 0,
                (true, _, _) => 3,
                (_, Kind::Spammer, _) => 1,
                (_, _, Tag::SeatAppeal(_)) => 3,
                _ => 2,
            }
        };
        let ranks: Vec<u8> = out.iter().map(|p| rank(self, p)).collect();
        let mut idx: Vec<usize> = (0..out.len()).collect();
        idx.sort_by_key(|&i| ranks[i]);
        let mut slots: Vec<Option<Pending>> = out.drain(..).map(Some).collect();
        let sorted: Vec<Pending> = idx.iter().filter_map(|&i| slots[i].take()).collect();
        // Count a reordering per session where sybil and honest reveals met in the block.
        let mut met: BTreeMap<Hash, (bool, bool)> = BTreeMap::new();
        for p in &sorted {
            if let Call::Reveal { session, .. } = &p.call {
                let e = met.entry(*session).or_default();
                if self.is_sybil(&self.actors[p.sender].id) {
                    e.0 = true;
                } else {
                    e.1 = true;
                }
            }
        }
        let name = if first {
            "reveal-order-sybils-first"
        } else {
            "reveal-order-sybils-last"
        };
        for _ in met.values().filter(|(s, h)| *s && *h) {
            self.counts.attack(name);
        }
        sorted
    }

    /// Whether the censoring coalition leaves `p` out: an honest seat's reveal in one of
    /// the adversary's sessions.
    fn censored(&self, p: &Pending) -> bool {
        let Call::Reveal { session, .. } = &p.call else {
            return false;
        };
        matches!(self.actors[p.sender].kind, Kind::Honest(_))
            && self.cases.get(session).is_some_and(|c| c.adversary)
    }

    /// The grinding proposer's own transactions (`draw-grinding`): it may put in its
    /// block a bond by one of its sybils of each tier and the registration of a reserve
    /// key. It knows the seed of the next block, whose `begin_block` draws every session
    /// due; so it runs its block and that draw on copies of the contract, once with none
    /// of them, once with each, and once with all, and keeps the set that seats the most
    /// sybils (ties: the most transactions, so that its sybils do grow mid-run). If any set
    /// seats anyone else than none does, the draw was steerable
    /// (`draw-steered-by-proposer`).
    fn grind_draws(&mut self, order: &[Pending], ctx: &BlockCtx) -> Vec<Pending> {
        let h = ctx.height;
        let mut own = Vec::new();
        for tier in Tier::ALL {
            let sybils = self.actors_of_kind(Kind::Sybil(tier));
            if !sybils.is_empty() {
                let s = sybils[(h / COALITION_PERIOD) as usize % sybils.len()];
                own.push(Pending {
                    sender: s,
                    call: Call::Bond { amount: 1 },
                    tag: Tag::Grind,
                });
            }
        }
        let tier = Tier::ALL[(h / COALITION_PERIOD) as usize % 3];
        if let Some(&r) = self.actors_of_kind(Kind::Reserve(tier)).first() {
            let id = self.actors[r].id;
            own.push(Pending {
                sender: r,
                call: Call::RegisterAuditor {
                    tier,
                    expertise: vec!["math".into(), "private".into()],
                    sealing_key: SealingPublicKey(Hash::of_parts("adv-x25519", &[id.as_ref()]).0),
                    stake: self.cfg.params.min_stake(tier),
                },
                tag: Tag::Grind,
            });
        }
        let mut variants: Vec<Vec<usize>> = vec![Vec::new()];
        variants.extend((0..own.len()).map(|i| vec![i]));
        if own.len() > 1 {
            variants.push((0..own.len()).collect());
        }
        let next = BlockCtx {
            height: h + 1,
            block_hash: next_seed(
                self.cfg.seed,
                &Header {
                    height: h,
                    seed: ctx.block_hash,
                    txs_root: Hash::ZERO,
                    time_ms: 0,
                },
            ),
        };
        let mut base: Option<Vec<(Hash, u16, AccountId, u8)>> = None;
        let mut best: (usize, usize, Vec<usize>) = (0, 0, Vec::new());
        let mut steered = false;
        for v in variants {
            let mut c = self.contract.clone();
            c.begin_block(ctx);
            for p in order.iter().chain(v.iter().map(|&i| &own[i])) {
                let actor = &self.actors[p.sender];
                let tx = Signed::sign(
                    &actor.key,
                    &c.chain_id(),
                    Tx {
                        nonce: c.nonce(&actor.id),
                        call: p.call.clone(),
                    },
                );
                let _ = c.apply(ctx, &tx);
            }
            c.end_block(ctx);
            let seats: Vec<(Hash, u16, AccountId, u8)> = c
                .begin_block(&next)
                .iter()
                .filter_map(Event::seat_assigned)
                .collect();
            let sybils = seats.iter().filter(|x| self.is_sybil(&x.2)).count();
            match &base {
                None => base = Some(seats),
                Some(b) => steered |= *b != seats,
            }
            if (sybils, v.len()) > (best.0, best.1) {
                best = (sybils, v.len(), v);
            }
        }
        if base.as_ref().is_some_and(|b| !b.is_empty()) {
            self.counts.attack("draw-grinding");
            self.counts.diag.draw_grind_blocks += 1;
            if steered {
                self.counts.breach("draw-steered-by-proposer");
                self.counts.incident(format!(
                    "block {h}: the proposer's choice of its own bonds and registrations changed the next block's draw"
                ));
            }
        }
        let mut out = Vec::new();
        for (i, p) in own.into_iter().enumerate() {
            if best.2.contains(&i) {
                out.push(p);
            }
        }
        out
    }

    /// The actors of kind `kind`.
    pub(super) fn actors_of_kind(&self, kind: Kind) -> Vec<usize> {
        (0..self.actors.len())
            .filter(|&i| self.actors[i].kind == kind)
            .collect()
    }

    /// The bytes a block carries for a queued transaction (its sender and call: the
    /// signature is made at application, with the nonce the sender has then).
    fn tx_bytes(&self, p: &Pending) -> Vec<u8> {
        encode(&(self.actors[p.sender].id, &p.call))
    }

    /// The header the node would build for block `height` over `txs`, its seed proven by
    /// the proposer's VRF over the parent's seed (as the node's chain does).
    fn node_header(&self, height: u64, txs: &[Vec<u8>], time_ms: u64) -> Option<BlockHeader> {
        let chain = self.contract.chain_id();
        Some(BlockHeader {
            chain,
            height,
            prev_hash: self.node_parent,
            time_ms,
            txs_root: txs_root(txs),
            state_root: Hash::ZERO,
            proposer: self.actors[0].id,
            vrf: prove_seed(&self.actors[0].key, &chain, height, &self.node_seed).ok()?,
        })
    }

    /// The seed the node's block `height + 1` would draw with over `parent`.
    fn node_next_seed(&self, parent: Option<BlockHeader>) -> Option<Hash> {
        let parent = parent?;
        let chain = self.contract.chain_id();
        let next = BlockHeader {
            height: parent.height + 1,
            prev_hash: parent.hash(),
            vrf: prove_seed(
                &self.actors[0].key,
                &chain,
                parent.height + 1,
                &parent.seed(),
            )
            .ok()?,
            ..parent.clone()
        };
        Some(next.seed())
    }

    /// The colluding proposer of a block that opens an adversary session tries other
    /// blocks: the transactions reversed, each one left out, and later times. For each
    /// it recomputes the seed the next block would draw the session's seats with: it
    /// must be the seed of the block as sealed.
    fn grind(&mut self, order: &[Pending], seed: Hash, time_ms: u64) {
        let opens_adversary = order.iter().any(|p| {
            matches!(p.call, Call::OpenSession(_))
                && self.actors[p.sender].kind == Kind::Adversary
                && p.tag == Tag::Plain
        });
        if !opens_adversary {
            return;
        }
        let h = self.height;
        let bytes: Vec<Vec<u8>> = order.iter().map(|p| self.tx_bytes(p)).collect();
        let header = |txs: &[Vec<u8>], time_ms: u64| Header {
            height: h,
            seed,
            txs_root: txs_root(txs),
            time_ms,
        };
        let actual = next_seed(self.cfg.seed, &header(&bytes, time_ms));
        let node_actual = self.node_next_seed(self.node_header(h, &bytes, time_ms));
        let mut alternatives: Vec<(Vec<Vec<u8>>, u64)> = Vec::new();
        let mut reversed = bytes.clone();
        reversed.reverse();
        alternatives.push((reversed, time_ms));
        for i in 0..bytes.len().min(4) {
            let mut fewer = bytes.clone();
            fewer.remove(i);
            alternatives.push((fewer, time_ms));
        }
        for dt in 1..=3 {
            alternatives.push((bytes.clone(), time_ms + dt));
        }
        let sealed = header(&bytes, time_ms);
        for (txs, t) in alternatives {
            let alt = header(&txs, t);
            if alt.txs_root == sealed.txs_root && alt.time_ms == sealed.time_ms {
                // Not another block (a block of one transaction reversed is itself).
                continue;
            }
            self.counts.attack("seed-grind");
            self.counts.diag.seed_grind_tries += 1;
            if next_seed(self.cfg.seed, &alt) != actual {
                self.counts.breach("seed-changed-by-block-contents");
            }
            let node = self.node_next_seed(self.node_header(h, &txs, t));
            if node != node_actual {
                self.counts.diag.node_header_seed_changes += 1;
            }
        }
    }

    /// Applies the block to the shadow with its reveals in the reverse order (the other
    /// transactions keep their places). True when some transaction fared differently there.
    fn shadow_block(&mut self, ctx: &BlockCtx, order: &[Pending], applied: &[bool]) -> bool {
        let reveals: Vec<usize> = order
            .iter()
            .enumerate()
            .filter(|(_, p)| matches!(p.call, Call::Reveal { .. }))
            .map(|(i, _)| i)
            .collect();
        let mut perm: Vec<usize> = (0..order.len()).collect();
        for (slot, from) in reveals.iter().zip(reveals.iter().rev()) {
            perm[*slot] = *from;
        }
        let mut diverged = false;
        self.shadow.begin_block(ctx);
        for i in perm {
            let p = &order[i];
            let id = self.actors[p.sender].id;
            if self.tamper_shadow
                && matches!(p.call, Call::Reveal { .. })
                && matches!(self.actors[p.sender].kind, Kind::Honest(_))
            {
                continue;
            }
            let tx = Tx {
                nonce: self.shadow.nonce(&id),
                call: p.call.clone(),
            };
            // The real contract checked this signature; the shadow applies what it applied.
            let ok = self.shadow.apply_verified(ctx, id, &tx).is_ok();
            diverged |= ok != applied[i];
        }
        self.shadow.end_block(ctx);
        diverged
    }

    /// Compares, for every round whose reveal window closed in this block, each segment's
    /// verdict in the contract and in the shadow. True when any differs.
    fn compare_rounds(&mut self, events: &[Event]) -> bool {
        let mut mismatch = false;
        for e in events {
            let Event::RevealWindowClosed { session, round } = e else {
                continue;
            };
            let real = round_verdicts(&self.contract, session, *round);
            let other = round_verdicts(&self.shadow, session, *round);
            self.counts.diag.order_checks += real.len() as u64;
            for (segment, verdict) in &real {
                let same = other.iter().any(|(s, v)| s == segment && v == verdict);
                if !same {
                    self.counts.order_dependent += 1;
                    mismatch = true;
                }
            }
            self.behave_round_closed(*session, *round);
        }
        mismatch
    }

    /// The report of the run.
    pub(super) fn report(&self) -> AdversaryReport {
        let mut diag = self.counts.diag.clone();
        diag.state_root = self.contract.state_root().to_hex();
        diag.adversary_sessions = u64::from(self.adversary_opened);
        diag.sybil_seat_share_ppm = (self.counts.sybil_seats * 1_000_000)
            .checked_div(self.counts.first_round_seats)
            .unwrap_or(0);
        let st = self.contract.state();
        let honest_flagged = self
            .actors
            .iter()
            .filter(|a| matches!(a.kind, Kind::Honest(_)))
            .filter(|a| st.auditors.get(&a.id).is_some_and(|x| x.flagged))
            .count() as u64;
        for a in self
            .actors
            .iter()
            .filter(|a| matches!(a.kind, Kind::Honest(_)))
        {
            if let Some(x) = st.auditors.get(&a.id) {
                let h = &x.honeypots;
                diag.honest_known_error_approvals +=
                    h.errors_approved.iter().map(|n| u64::from(*n)).sum::<u64>();
                diag.honest_miss_providers += h.miss_providers.len() as u64;
            }
        }
        let mut lemma1 = self.counts.lemma1.clone();
        lemma1.sybil_share = self.cfg.sybil_share_f64();
        if lemma1.wrong_traces > 0 {
            lemma1.mean_panel /= lemma1.wrong_traces as f64;
        }
        AdversaryReport {
            seed: self.cfg.seed,
            sessions: self.counts.sessions,
            honest_slashed: self.counts.honest_slashed,
            honest_stake_lost: self.counts.honest_stake_lost,
            honest_flagged,
            wrong_pass: self.counts.wrong_pass_final + self.counts.wrong_pass_unwatched,
            wrong_pass_at_decision: self.counts.wrong_pass_at_decision,
            wrong_pass_final: self.counts.wrong_pass_final,
            wrong_pass_unwatched: self.counts.wrong_pass_unwatched,
            lemma1,
            order_dependent: self.counts.order_dependent,
            third_party_appeals_refused: self.counts.third_party_refused,
            honest_sessions_refused: self.counts.honest_sessions_refused,
            max_blocks_to_draw: self.counts.max_blocks_to_draw,
            censored_reveals: self.counts.censored_reveals,
            max_blocks_to_final: self.counts.max_blocks_to_final,
            attacks: self
                .counts
                .attacks
                .iter()
                .map(|(k, v)| ((*k).to_string(), *v))
                .collect(),
            defences_breached: self
                .counts
                .breaches
                .iter()
                .map(|(k, v)| ((*k).to_string(), *v))
                .collect(),
            diagnostics: diag,
        }
    }
}

/// Each segment's verdict in `round` of `session` on `c`: for the first round and its
/// escalation, the round's own verdict of every segment seated in it; for an appeal
/// round, the verdicts its record gives the appealed segments.
pub(super) fn round_verdicts(c: &Contract, session: &Hash, round: u8) -> Vec<(u16, LocalVerdict)> {
    let st = c.state();
    if round >= crate::APPEAL_ROUND0 {
        return st
            .outcomes
            .get(session)
            .and_then(|o| o.appeals.rounds.iter().find(|r| r.round == round))
            .map(|r| r.segments.iter().map(|a| (a.segment, a.verdict)).collect())
            .unwrap_or_default();
    }
    let Some(s) = st
        .sessions
        .get(session)
        .or_else(|| st.appealable.get(session))
    else {
        return Vec::new();
    };
    s.segments
        .iter()
        .enumerate()
        .filter(|(_, g)| g.seats.iter().any(|x| x.round == round))
        .filter_map(|(i, g)| {
            let v = g.rounds.get(usize::from(round))?;
            Some((u16::try_from(i).ok()?, *v))
        })
        .collect()
}
