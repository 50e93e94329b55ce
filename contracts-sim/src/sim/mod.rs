//! A seeded network simulator that drives the real [`Contract`] with real signed
//! transactions (there is no second model of the rules here).
//!
//! Auditors follow a [`Strategy`]; a generator makes sessions whose segments are correct at
//! the paper's 70-85% base rate and plants honeypots. Each simulated block collects the
//! agents' transactions in a seeded random order, signs each with the sender's current
//! nonce, applies it, ends the block and feeds the events back to the agents. The same
//! seed gives the same transactions, the same blocks and the same `state_root`.
//!
//! Randomness here (`ChaCha8Rng`) only models behaviour outside the contract: which
//! segments are wrong and how agents vote. The contract sees nothing but transactions and
//! block hashes.
// The simulator models the world outside the contract with floats, counters and fixed
// tables; none of it is consensus state, so the pure core's arithmetic lints do not apply.
#![allow(clippy::arithmetic_side_effects, clippy::indexing_slicing)]

mod adversaries;
mod agents;
mod appeals;
mod report;

use std::collections::BTreeMap;

use rand::{Rng, SeedableRng, seq::SliceRandom};
use rand_chacha::ChaCha8Rng;
use serde::{Deserialize, Serialize};
use trust_protocol::{
    AccountId, Hash, Keypair, Salt, SealingPublicKey, Signed, Vote, commitment,
    honeypot_commitment, honeypot_set_commitment, mapping_commitment,
    seal::SealedKey,
    tx::{
        Call, Difficulty, HoneypotOpening, QuorumParams, SeatKey, SegmentEntry, SessionManifest,
        Tier, Tx,
    },
    units::Ppm,
};

pub use self::adversaries::{
    AdversaryConfig, AdversaryReport, Diagnostics, Lemma1, MAX_INCIDENTS, adversaries,
    adversary_params,
};
pub use self::appeals::{AppealExperiment, AppealReport, AppellantSummary, appeal_experiment};
pub use self::report::{Accuracy, SeriesPoint, SimReport, StrategySummary};
use crate::{BlockCtx, Contract, Event, Genesis, GenesisAccount, Params, TxError, minimum_fee};

/// How a simulated auditor behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Strategy {
    /// Judges correctly except with its tier's error rate.
    Honest,
    /// Always votes the wrong way.
    Malicious,
    /// Guesses without looking: Valid with probability [`SimConfig::random_valid`],
    /// Invalid otherwise.
    Random,
    /// Approves everything without looking.
    RubberStamp,
    /// Commits and never reveals.
    Withholder,
    /// Tries to reuse another seat's commitment instead of judging.
    CopyCat,
}

impl Strategy {
    /// All strategies, in report order.
    pub const ALL: [Strategy; 6] = [
        Strategy::Honest,
        Strategy::Malicious,
        Strategy::Random,
        Strategy::RubberStamp,
        Strategy::Withholder,
        Strategy::CopyCat,
    ];

    /// Name used in files.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Honest => "honest",
            Strategy::Malicious => "malicious",
            Strategy::Random => "random",
            Strategy::RubberStamp => "rubber-stamp",
            Strategy::Withholder => "withholder",
            Strategy::CopyCat => "copy-cat",
        }
    }
}

/// A group of auditors with one strategy in one tier.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Population {
    /// Tier.
    pub tier: Tier,
    /// Strategy.
    pub strategy: Strategy,
    /// How many.
    pub count: u32,
}

/// Simulation settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SimConfig {
    /// Seed of everything.
    pub seed: u64,
    /// Sessions to run.
    pub sessions: u32,
    /// Sessions opened per block.
    pub sessions_per_block: u32,
    /// Auditors.
    pub population: Vec<Population>,
    /// Error rate of honest auditors per tier (eps_C, eps_L, eps_H).
    pub honest_error: [Ppm; 3],
    /// Probability that a random guesser votes Valid (a fair coin by default; just under
    /// the rubber-stamp threshold is the strongest guess the honeypots let through).
    pub random_valid: Ppm,
    /// Share of correct segments, drawn per session in this range (paper: 70-85%).
    pub correct_rate: (Ppm, Ppm),
    /// Segments per session (inclusive range).
    pub segments: (u16, u16),
    /// Share of segments routed to the Human tier (the rest go to LLM).
    pub human_share: Ppm,
    /// Probability that a session carries a honeypot.
    pub honeypot_rate: Ppm,
    /// Quorum parameters of every session.
    pub quorum: QuorumParams,
    /// Contract parameters.
    pub params: Params,
    /// Stake each auditor bonds at genesis.
    pub stake: u64,
    /// Record a series point every this many decided sessions.
    pub sample_every: u32,
}

impl Default for SimConfig {
    /// The paper's setting (eps_L = 0.05, eps_H = 0.30, malicious share rho_H = 0.1 among
    /// human seats, plus a few of each free-riding strategy) under the network's default
    /// economics ([`Params::default`]); random guessers flip a fair coin.
    fn default() -> Self {
        let p = |tier, strategy, count| Population {
            tier,
            strategy,
            count,
        };
        Self {
            seed: 1,
            sessions: 1000,
            sessions_per_block: 4,
            population: vec![
                p(Tier::Llm, Strategy::Honest, 12),
                p(Tier::Llm, Strategy::Malicious, 1),
                p(Tier::Human, Strategy::Honest, 18),
                p(Tier::Human, Strategy::Malicious, 2),
                p(Tier::Human, Strategy::Random, 2),
                p(Tier::Human, Strategy::RubberStamp, 2),
                p(Tier::Human, Strategy::Withholder, 2),
                p(Tier::Human, Strategy::CopyCat, 2),
            ],
            honest_error: [Ppm(10_000), Ppm(50_000), Ppm(300_000)],
            random_valid: Ppm(500_000),
            correct_rate: (Ppm(700_000), Ppm(850_000)),
            segments: (2, 6),
            human_share: Ppm(500_000),
            honeypot_rate: Ppm(500_000),
            quorum: QuorumParams {
                k: [3, 5, 5],
                extra_seats: 1,
                tau: Ppm(600_000),
                beta: Ppm(800_000),
            },
            params: sim_params(),
            stake: 1_000,
            sample_every: 10,
        }
    }
}

/// The network's default parameters with unbounded seat capacity: the simulator models
/// what seats decide and earn, not how fast they judge (every seat judges in the block it
/// has its keys), so admission by capacity ([`crate::admission`]) would only stretch its
/// runs; and outcomes that never leave the state, since a run's report reads them all at
/// its end.
pub fn sim_params() -> Params {
    Params {
        seat_capacity: [u32::MAX; 3],
        // The simulators read every outcome at the end of a run.
        outcome_retention: u64::MAX,
        ..Params::default()
    }
}

/// Why a simulation could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// Bad configuration.
    #[error("simulation config: {0}")]
    Config(String),
    /// The contract rejected the genesis.
    #[error("genesis: {0}")]
    Genesis(#[from] crate::GenesisError),
}

pub(crate) struct Agent {
    pub key: Keypair,
    pub id: AccountId,
    pub strategy: Strategy,
    pub tier: Tier,
}

/// Ground truth and private data of one generated session.
pub(crate) struct SessionTruth {
    pub provider: usize,
    /// Per segment: correct?
    pub correct: Vec<bool>,
    /// Per segment: the vote the truth calls for (Valid, or the error kind).
    pub truth: Vec<Vote>,
    pub deps: Vec<Vec<u16>>,
    pub weights: Vec<u32>,
    pub ids: Vec<Hash>,
    /// Honeypot: (segment index, verdict, difficulty, salt).
    pub honeypot: Option<(u16, Vote, Difficulty, Salt)>,
    /// The salt of the honeypot set commitment.
    pub set_salt: Salt,
    pub mapping: (Hash, Salt),
    pub disclosed: bool,
    /// Revealed votes per segment, in ledger order (for the baselines).
    pub reveals: Vec<Vec<Vote>>,
}

/// One seat a simulated agent holds.
pub(crate) struct HeldSeat {
    pub agent: usize,
    pub session: Hash,
    pub segment: u16,
    pub round: u8,
    pub vote: Vote,
    pub salt: Salt,
    pub committed: bool,
    pub revealed: bool,
}

/// The simulator.
#[allow(missing_debug_implementations)]
pub struct Sim {
    cfg: SimConfig,
    rng: ChaCha8Rng,
    contract: Contract,
    agents: Vec<Agent>,
    by_id: BTreeMap<AccountId, usize>,
    providers: Vec<Keypair>,
    truths: BTreeMap<Hash, SessionTruth>,
    pending: BTreeMap<Hash, SessionTruth>,
    accuracy: report::AccuracyCounts,
    seats: Vec<HeldSeat>,
    /// Pending (sender key index, call): agents first, then providers at `agents.len()+i`.
    queue: Vec<(usize, Call)>,
    height: u64,
    opened: u32,
    decided: Vec<Hash>,
    failed: u32,
    /// Transactions the contract rejected, by error text (copy-cat attempts land here).
    pub rejected: BTreeMap<String, u64>,
    /// Transactions applied.
    pub applied: u64,
    series: Vec<SeriesPoint>,
    /// The appellants of [`appeal_experiment`], when it runs: decided sessions stay
    /// tracked until final and the appellants act on them.
    appeal: Option<appeals::Appellants>,
}

fn seed_key(seed: u64, label: &str, i: usize) -> Keypair {
    let h = Hash::of_parts(
        "trust/v1/sim-key",
        &[
            &seed.to_le_bytes(),
            label.as_bytes(),
            &(i as u64).to_le_bytes(),
        ],
    );
    Keypair::from_seed(h.0)
}

impl Sim {
    /// Sets up genesis (auditor stakes, provider balances) and registers every auditor in
    /// block 1.
    pub fn new(cfg: SimConfig) -> Result<Self, SimError> {
        if cfg.segments.0 == 0 || cfg.segments.0 > cfg.segments.1 {
            return Err(SimError::Config("segments range must be 1..=max".into()));
        }
        if !cfg.random_valid.is_fraction() {
            return Err(SimError::Config(
                "random_valid must be within [0, 1]".into(),
            ));
        }
        if cfg.correct_rate.0 > cfg.correct_rate.1 || !cfg.correct_rate.1.is_fraction() {
            return Err(SimError::Config(
                "correct_rate must be a range within [0, 1]".into(),
            ));
        }
        if cfg.sessions_per_block == 0 || cfg.sample_every == 0 {
            return Err(SimError::Config(
                "sessions_per_block and sample_every must be positive".into(),
            ));
        }
        let mut agents = Vec::new();
        for (g, pop) in cfg.population.iter().enumerate() {
            for i in 0..pop.count {
                let key = seed_key(cfg.seed, &format!("auditor-{g}"), i as usize);
                agents.push(Agent {
                    id: key.public(),
                    key,
                    strategy: pop.strategy,
                    tier: pop.tier,
                });
            }
        }
        let providers: Vec<Keypair> = (0..4).map(|i| seed_key(cfg.seed, "provider", i)).collect();
        let mut accounts: Vec<GenesisAccount> = agents
            .iter()
            .map(|a| GenesisAccount {
                id: a.id,
                balance: cfg.stake,
                stake: 0,
            })
            .collect();
        for p in &providers {
            accounts.push(GenesisAccount {
                id: p.public(),
                balance: 1_000_000_000_000,
                stake: 0,
            });
        }
        let contract = Contract::new(&Genesis {
            params: cfg.params.clone(),
            accounts,
            auditors: vec![],
        })?;
        let by_id = agents.iter().enumerate().map(|(i, a)| (a.id, i)).collect();
        let mut queue = Vec::new();
        for (i, a) in agents.iter().enumerate() {
            queue.push((
                i,
                Call::RegisterAuditor {
                    tier: a.tier,
                    expertise: vec!["math".into()],
                    sealing_key: SealingPublicKey(Hash::of_parts("sim-x25519", &[a.id.as_ref()]).0),
                    // Registration bonds the auditor's whole genesis balance.
                    stake: cfg.stake,
                },
            ));
        }
        Ok(Self {
            rng: ChaCha8Rng::seed_from_u64(cfg.seed),
            cfg,
            contract,
            agents,
            by_id,
            providers,
            truths: BTreeMap::new(),
            pending: BTreeMap::new(),
            accuracy: report::AccuracyCounts::default(),
            seats: Vec::new(),
            queue,
            height: 0,
            opened: 0,
            decided: Vec::new(),
            failed: 0,
            rejected: BTreeMap::new(),
            applied: 0,
            series: Vec::new(),
            appeal: None,
        })
    }

    /// The contract.
    pub fn contract(&self) -> &Contract {
        &self.contract
    }

    /// Runs until every session is decided or failed, and reports.
    pub fn run(mut self) -> SimReport {
        // Enough blocks for every session to pass through all its windows, with margin.
        let p = &self.cfg.params;
        let commit = p
            .floors
            .min_commit_window
            .iter()
            .fold(p.commit_window, |a, b| a.max(*b));
        let reveal = p
            .floors
            .min_reveal_window
            .iter()
            .fold(p.reveal_window, |a, b| a.max(*b));
        let per_session = 2u64
            .saturating_add(commit)
            .saturating_add(reveal)
            .saturating_mul(2)
            .saturating_add(p.disclose_window)
            .saturating_add(4);
        let opening = u64::from(self.cfg.sessions.div_ceil(self.cfg.sessions_per_block));
        let limit = opening
            .saturating_add(per_session)
            .saturating_add(10)
            .saturating_add(p.expertise_delay);
        while self.height < limit {
            self.step();
            if self.opened >= self.cfg.sessions && self.contract.state().sessions.is_empty() {
                break;
            }
        }
        report::build(self)
    }

    /// Produces one block.
    pub fn step(&mut self) {
        self.height = self.height.saturating_add(1);
        self.top_up_stakes();
        // Registrations are drawn only after their warm-up.
        if self.height > 1u64.saturating_add(self.cfg.params.expertise_delay) {
            for _ in 0..self.cfg.sessions_per_block {
                if self.opened < self.cfg.sessions {
                    self.open_session();
                }
            }
        }
        let ctx = BlockCtx {
            height: self.height,
            block_hash: Hash::of_parts(
                "trust/v1/sim-block",
                &[&self.cfg.seed.to_le_bytes(), &self.height.to_le_bytes()],
            ),
        };
        // A seeded random order across senders; each sender's own transactions keep the
        // order it queued them in (a provider opens its honeypot set before its mapping).
        let queued = std::mem::take(&mut self.queue);
        let mut slots: Vec<usize> = queued.iter().map(|(sender, _)| *sender).collect();
        slots.shuffle(&mut self.rng);
        let mut by_sender: BTreeMap<usize, std::collections::VecDeque<Call>> = BTreeMap::new();
        for (sender, call) in queued {
            by_sender.entry(sender).or_default().push_back(call);
        }
        let txs: Vec<(usize, Call)> = slots
            .into_iter()
            .filter_map(|sender| {
                let call = by_sender.get_mut(&sender)?.pop_front()?;
                Some((sender, call))
            })
            .collect();
        let mut events = self.contract.begin_block(&ctx);
        for (sender, call) in txs {
            let key = match sender.checked_sub(self.agents.len()) {
                None => self.agents.get(sender).map(|a| &a.key),
                Some(p) => self.providers.get(p).or_else(|| {
                    let j = p.checked_sub(self.providers.len())?;
                    self.appeal.as_ref().and_then(|a| a.key(j))
                }),
            };
            let Some(key) = key else { continue };
            let nonce = self.contract.nonce(&key.public());
            let opens = match &call {
                Call::OpenSession(m) => {
                    Some((m.mapping_commitment, Tx::session_id(&key.public(), nonce)))
                }
                _ => None,
            };
            let tx = Signed::sign(key, &self.contract.chain_id(), Tx { nonce, call });
            match self.contract.apply(&ctx, &tx) {
                Ok(ev) => {
                    self.applied = self.applied.saturating_add(1);
                    if let Some((k, id)) = opens
                        && let Some(t) = self.pending.remove(&k)
                    {
                        self.truths.insert(id, t);
                    }
                    events.extend(ev);
                }
                Err(e) => {
                    let c = self.rejected.entry(error_kind(&e)).or_insert(0);
                    *c = c.saturating_add(1);
                }
            }
        }
        events.extend(self.contract.end_block(&ctx));
        self.react(&events);
    }

    /// Auditors of every strategy behave like operators who keep their bond: whenever an
    /// unflagged auditor's stake has fallen below twice its tier minimum, it bonds from its
    /// balance (its earnings) back up to the configured stake. Slashes come out of stake
    /// while rewards are paid to the balance, so without this even honest auditors would
    /// drift out of the seat pool over thousands of sessions.
    fn top_up_stakes(&mut self) {
        let state = self.contract.state();
        let params = &state.params;
        for (i, a) in self.agents.iter().enumerate() {
            let (Some(acct), Some(au)) = (state.accounts.get(&a.id), state.auditors.get(&a.id))
            else {
                continue;
            };
            let floor = params.min_stake(a.tier).saturating_mul(2);
            if au.flagged || acct.stake >= floor || acct.balance == 0 {
                continue;
            }
            let amount = self.cfg.stake.saturating_sub(acct.stake).min(acct.balance);
            if amount > 0 {
                self.queue.push((i, Call::Bond { amount }));
            }
        }
    }

    fn open_session(&mut self) {
        let cfg = &self.cfg;
        let rng = &mut self.rng;
        let provider = rng.gen_range(0..self.providers.len());
        let n = rng.gen_range(cfg.segments.0..=cfg.segments.1);
        let rate = rng.gen_range(cfg.correct_rate.0.0..=cfg.correct_rate.1.0);
        let mut correct = Vec::new();
        let mut truth = Vec::new();
        let mut deps = Vec::new();
        let mut entries = Vec::new();
        let mut ids = Vec::new();
        let mut weights = Vec::new();
        let tag = self.opened.to_le_bytes();
        for i in 0..n {
            let ok = rng.gen_range(0..1_000_000) < rate;
            correct.push(ok);
            truth.push(if ok {
                Vote::Valid
            } else if rng.gen_bool(0.7) {
                Vote::Invalid
            } else {
                Vote::Ungrounded
            });
            let d: Vec<u16> = if i > 0 && rng.gen_bool(0.5) {
                vec![rng.gen_range(0..i)]
            } else {
                vec![]
            };
            let tier = if rng.gen_range(0..1_000_000) < cfg.human_share.0 {
                Tier::Human
            } else {
                Tier::Llm
            };
            // Every segment weighs its tier's weight in the terms (the contract's rule).
            let w = 1;
            let id = Hash::of_parts(
                "sim-seg",
                &[&cfg.seed.to_le_bytes(), &tag, &i.to_le_bytes()],
            );
            entries.push(SegmentEntry {
                weight: w,
                depends_on: d.clone(),
                ..SegmentEntry::plain(id, tier)
            });
            deps.push(d);
            ids.push(id);
            weights.push(w);
        }
        let mut honeypot = None;
        if rng.gen_range(0..1_000_000) < cfg.honeypot_rate.0 {
            let idx = n;
            let verdict = if rng.gen_bool(0.8) {
                Vote::Invalid
            } else {
                Vote::Valid
            };
            let difficulty = Difficulty::ALL[rng.gen_range(0..3)];
            let salt = Salt(rng.r#gen());
            let id = Hash::of_parts(
                "sim-seg",
                &[&cfg.seed.to_le_bytes(), &tag, &idx.to_le_bytes()],
            );
            entries.push(SegmentEntry {
                honeypot: Some(honeypot_commitment(&id, verdict, difficulty, &salt)),
                ..SegmentEntry::plain(id, Tier::Human)
            });
            correct.push(verdict.is_valid());
            truth.push(verdict);
            deps.push(vec![]);
            ids.push(id);
            weights.push(1);
            honeypot = Some((idx, verdict, difficulty, salt));
        }
        let mapping = (Hash::of_parts("sim-mapping", &[&tag]), Salt(rng.r#gen()));
        let set_salt = Salt(rng.r#gen());
        let set: Vec<u16> = honeypot.iter().map(|h| h.0).collect();
        let mut manifest = SessionManifest {
            segments: entries,
            mapping_commitment: mapping_commitment(&mapping.0, &mapping.1),
            quorum: cfg.quorum.clone(),
            fee: 0,
            domain: "math".into(),
            left_out: Vec::new(),
            terms: trust_protocol::tx::SessionTerms::default(),
            honeypot_set: honeypot_set_commitment(&set, &set_salt),
        };
        // The racing seats the network admits: more would let a verdict all of them hold
        // go unappealed, and the contract (as a node before it signs) refuses that, naming
        // how many it would take. A small population gets fewer than the config asks.
        if let Some(id) = self.providers.get(provider).map(Keypair::public)
            && let Err(crate::TxError::RacingSeatsUnappealable { most, .. }) =
                crate::check_terms(self.contract.state(), &id, &manifest)
        {
            manifest.quorum.extra_seats = most;
        }
        manifest.fee = minimum_fee(&cfg.params, &manifest)
            .unwrap_or(0)
            .saturating_mul(2);
        // The session id depends on the nonce the transaction gets when it is applied, so
        // the truth waits under the (unique) mapping commitment until then.
        let sender = self.agents.len().saturating_add(provider);
        let key = manifest.mapping_commitment;
        let segments = manifest.segments.len();
        self.queue.push((sender, Call::OpenSession(manifest)));
        self.pending.insert(
            key,
            SessionTruth {
                reveals: vec![Vec::new(); segments],
                provider,
                correct,
                truth,
                deps,
                weights,
                ids,
                honeypot,
                set_salt,
                mapping,
                disclosed: false,
            },
        );
        self.opened = self.opened.saturating_add(1);
    }

    fn react(&mut self, events: &[Event]) {
        let mut seated: BTreeMap<Hash, Vec<(u16, AccountId)>> = BTreeMap::new();
        for e in events {
            match e {
                Event::SeatAssigned {
                    session,
                    segment,
                    seat,
                    round,
                    ..
                } => {
                    seated.entry(*session).or_default().push((*segment, *seat));
                    self.on_seat(*session, *segment, *seat, *round)
                }
                Event::SessionFailed { session, .. } => {
                    self.truths.remove(session);
                    self.failed = self.failed.saturating_add(1);
                }
                Event::CommitWindowClosed { session, round, .. } => {
                    self.on_commit_closed(*session, *round)
                }
                Event::RevealWindowClosed { session, .. } => self.on_reveal_closed(*session),
                Event::SessionFinal { session } => {
                    self.truths.remove(session);
                    self.seats.retain(|s| s.session != *session);
                }
                Event::Revealed {
                    session,
                    segment,
                    vote,
                    ..
                } => {
                    if let Some(r) = self
                        .truths
                        .get_mut(session)
                        .and_then(|t| t.reveals.get_mut(usize::from(*segment)))
                    {
                        r.push(*vote);
                    }
                }
                Event::TraceDecided { session, .. } => {
                    if let (Some(t), Some(o)) =
                        (self.truths.remove(session), self.contract.outcome(session))
                    {
                        self.accuracy.add(&t, o, self.cfg.quorum.beta);
                        if self.appeal.is_some() {
                            // Appeal rounds draw seats that vote on the same truth.
                            self.truths.insert(*session, t);
                        }
                    }
                    if self.appeal.is_some() {
                        self.plan_appeal(*session);
                    }
                    self.decided.push(*session);
                    if self
                        .decided
                        .len()
                        .is_multiple_of(self.cfg.sample_every as usize)
                    {
                        let point = report::sample(self);
                        self.series.push(point);
                    }
                }
                _ => {}
            }
        }
        // Providers deliver the keys of the seats just drawn (their own segment's and its
        // premises'): a seat the provider starves is not slashed, so a simulated provider
        // that forgot would shield the no-shows.
        for (session, seats) in seated {
            self.deliver_keys(session, &seats);
        }
        // Copy-cats act one block after assignment: they copy a commitment already on the
        // ledger instead of judging.
        self.copycats_act();
    }

    fn deliver_keys(&mut self, session: Hash, seats: &[(u16, AccountId)]) {
        let Some(t) = self.truths.get(&session) else {
            return;
        };
        let mut keys = Vec::new();
        // Each (segment, seat) once: a seat on a segment and on one citing it takes the
        // first's key once (the contract refuses a delivery naming a pair twice).
        let mut named = std::collections::BTreeSet::new();
        for (segment, seat) in seats {
            let deps = t
                .deps
                .get(usize::from(*segment))
                .cloned()
                .unwrap_or_default();
            for k in std::iter::once(*segment).chain(deps) {
                if !named.insert((k, *seat)) {
                    continue;
                }
                keys.push(SeatKey {
                    segment: k,
                    seat: *seat,
                    // Stand-in bytes: the contract records delivery and never opens a key.
                    sealed: SealedKey {
                        ephemeral: SealingPublicKey([0; 32]),
                        ciphertext: vec![0; 48],
                    },
                });
            }
        }
        let sender = self.agents.len().saturating_add(t.provider);
        for batch in keys.chunks(trust_protocol::tx::MAX_SEALED_KEYS) {
            self.queue.push((
                sender,
                Call::DeliverKeys {
                    session,
                    keys: batch.to_vec(),
                },
            ));
        }
    }

    fn on_seat(&mut self, session: Hash, segment: u16, seat: AccountId, round: u8) {
        let Some(&agent) = self.by_id.get(&seat) else {
            return;
        };
        let Some(truth) = self.truths.get(&session) else {
            return;
        };
        let Some(a) = self.agents.get(agent) else {
            return;
        };
        let t = truth
            .truth
            .get(usize::from(segment))
            .copied()
            .unwrap_or(Vote::Valid);
        let id = truth
            .ids
            .get(usize::from(segment))
            .copied()
            .unwrap_or(Hash::ZERO);
        let mut eps = self.cfg.honest_error[crate::Params::tier_index(a.tier)];
        // An honest auditor rarely approves an obvious planted error (paper §0.0.5.2): a
        // quarter of its error rate there, its full rate on subtle and domain ones.
        if truth
            .honeypot
            .is_some_and(|(i, _, d, _)| i == segment && d == Difficulty::Obvious)
        {
            eps = Ppm(eps.0 / 4);
        }
        let vote = agents::choose_vote(a.strategy, t, eps, self.cfg.random_valid, &mut self.rng);
        let salt = Salt(self.rng.r#gen());
        let held = HeldSeat {
            agent,
            session,
            segment,
            round,
            vote,
            salt,
            committed: false,
            revealed: false,
        };
        if a.strategy != Strategy::CopyCat {
            // Simulated agents give no reasons: the empty one is bound and revealed.
            let c = commitment(&session, &id, &seat, vote, &salt, "");
            self.queue.push((
                agent,
                Call::Commit {
                    session,
                    segment,
                    commitment: c,
                },
            ));
        }
        self.seats.push(HeldSeat {
            committed: a.strategy != Strategy::CopyCat,
            ..held
        });
    }

    fn copycats_act(&mut self) {
        let state = self.contract.state();
        for s in self.seats.iter_mut().filter(|s| !s.committed) {
            let Some(a) = self.agents.get(s.agent) else {
                continue;
            };
            if a.strategy != Strategy::CopyCat {
                continue;
            }
            let Some(live) = state.sessions.get(&s.session) else {
                continue;
            };
            let other = live
                .segments
                .get(usize::from(s.segment))
                .and_then(|g| g.seats.iter().find_map(|x| x.commitment));
            if let Some(c) = other {
                s.committed = true;
                self.queue.push((
                    s.agent,
                    Call::Commit {
                        session: s.session,
                        segment: s.segment,
                        commitment: c,
                    },
                ));
            }
        }
    }

    fn on_commit_closed(&mut self, session: Hash, round: u8) {
        for s in self
            .seats
            .iter_mut()
            .filter(|s| s.session == session && s.round == round && s.committed && !s.revealed)
        {
            let Some(a) = self.agents.get(s.agent) else {
                continue;
            };
            s.revealed = true;
            // Withholders never reveal; a copy-cat has no salt for a commitment it copied.
            if matches!(a.strategy, Strategy::Withholder | Strategy::CopyCat) {
                continue;
            }
            self.queue.push((
                s.agent,
                Call::Reveal {
                    session,
                    segment: s.segment,
                    vote: s.vote,
                    salt: s.salt,
                    reason: String::new(),
                },
            ));
        }
    }

    fn on_reveal_closed(&mut self, session: Hash) {
        let in_disclose = matches!(
            self.contract
                .state()
                .sessions
                .get(&session)
                .map(|s| s.phase),
            Some(crate::Phase::Disclose { .. })
        );
        let Some(t) = self.truths.get_mut(&session) else {
            return;
        };
        if !in_disclose || t.disclosed {
            return;
        }
        t.disclosed = true;
        let sender = self.agents.len().saturating_add(t.provider);
        // The honeypot set first (empty when none was planted): the mapping closes the
        // disclosure.
        self.queue.push((
            sender,
            Call::RevealHoneypots {
                session,
                openings: t
                    .honeypot
                    .iter()
                    .map(|&(segment, verdict, difficulty, salt)| HoneypotOpening {
                        segment,
                        verdict,
                        difficulty,
                        salt,
                    })
                    .collect(),
                set_salt: t.set_salt,
            },
        ));
        self.queue.push((
            sender,
            Call::RevealMapping {
                session,
                mapping: t.mapping.0,
                salt: t.mapping.1,
            },
        ));
        // Seats of this session are done.
        self.seats.retain(|s| s.session != session);
    }
}

fn error_kind(e: &TxError) -> String {
    let s = format!("{e:?}");
    s.split(['(', ' ', '{']).next().unwrap_or("").to_string()
}
