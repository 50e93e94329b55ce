//! Network parameters fixed at genesis: stake minimums, windows, quorum limits and the
//! economic constants of Theorem 1 in fixed point.

use serde::{Deserialize, Serialize};
use trust_protocol::{
    AccountId,
    tx::Tier,
    units::{Amount, Ppm},
};

/// When a seat is flagged as a rubber-stamper from its honeypot record (paper §0.0.5.2).
///
/// Honest auditors approve known errors less often as the errors get subtler, and rarely
/// approve obvious ones; a rubber-stamper approves at every difficulty. A seat is flagged
/// when it has voted on at least `min_samples` known-error honeypots (abstentions
/// included: see [`crate::HoneypotStats`]), approved at least `approval` of those it
/// judged, approved at least `approval` of the *obvious* ones it judged (at least one),
/// and the known errors it approved were planted by at least `min_providers` distinct
/// providers. A honeypot's truth is only its provider's word; the last condition keeps any
/// one provider, however many false honeypots it plants, from getting an honest seat
/// flagged on its own. A flagged seat forfeits, from its stake, everything it has earned
/// plus one penalty `P`, its reputation is set to zero, and it is deactivated for good
/// (bonding more stake does not re-admit it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RubberStampRule {
    /// Known-error honeypots a seat must have judged before it can be flagged.
    pub min_samples: u32,
    /// Approval rate of known errors at or above which a seat is flagged.
    pub approval: Ppm,
    /// Distinct providers whose known errors a seat must have approved before it can be
    /// flagged (2..=[`MAX_MIN_PROVIDERS`]). Only providers that have paid at least
    /// `min_provider_fees` count: a second key costs nothing, fees paid to seats do.
    pub min_providers: u32,
    /// Fees a provider must have paid out to seats, over all its sessions, before a miss
    /// on one of its honeypots counts towards `min_providers`.
    #[serde(default = "default_min_provider_fees")]
    pub min_provider_fees: Amount,
}

fn default_min_provider_fees() -> Amount {
    180
}

/// Largest [`RubberStampRule::min_providers`]: each auditor's record keeps at most this many
/// provider names, so the record stays bounded.
pub const MAX_MIN_PROVIDERS: u32 = 16;

/// Parameters every node must agree on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Params {
    /// Minimum bonded stake to hold a seat, per tier (Computer, LLM, Human).
    pub min_stake: [Amount; 3],
    /// Blocks between `Unbond` and the stake becoming withdrawable.
    pub unbond_delay: u64,
    /// Blocks the commit window stays open after seats are drawn.
    pub commit_window: u64,
    /// Blocks the reveal window stays open after the commit window closes.
    pub reveal_window: u64,
    /// Blocks the provider has, after voting, to open the mapping and honeypots.
    pub disclose_window: u64,
    /// Largest `k_t` a session may ask for, per tier.
    pub max_k: [u8; 3],
    /// Largest `Delta` a session may ask for.
    pub max_extra_seats: u8,
    /// Smallest seat quorum `tau` a session may use (below 1/2 a segment could be both
    /// accepted and rejected).
    pub min_tau: Ppm,
    /// Seats added on an escalation that stays in the same tier.
    pub escalation_extra_seats: u8,
    /// Reward `R` per agreeing counted vote, paid from the session fee.
    pub reward: Amount,
    /// Penalty `P` taken from stake when a wrong vote is slashed.
    pub penalty: Amount,
    /// Slash probability at full reputation.
    pub p_min: Ppm,
    /// Slash probability at zero reputation.
    pub p_max: Ppm,
    /// Reputation adaptation speed `gamma` (eq. 3).
    pub gamma: Ppm,
    /// Reputation of a newly registered auditor.
    pub initial_reputation: Ppm,
    /// Per-seat error rate assumed for the failure bound, per tier (eps_C, eps_L, eps_H).
    pub assumed_error: [Ppm; 3],
    /// Malicious seat share `rho` assumed for the failure bound.
    pub assumed_malicious: Ppm,
    /// The rubber-stamp detection rule.
    pub rubber_stamp: RubberStampRule,
    /// Most honeypots a provider may open in one session: reveals beyond it are refused
    /// (the segment stays part of the provider's own trace).
    pub max_honeypots: u16,
    /// Bond per honeypot a session may open, escrowed from the provider's balance at
    /// `OpenSession` for `min(max_honeypots, segments)` honeypots. A honeypot whose seats
    /// contradict its revealed truth by a clear majority burns one bond; the rest comes
    /// back at the tally (after paying seats the provider starved of keys).
    pub honeypot_bond: Amount,
    /// Longest commit or reveal window a session may ask for, in blocks (a session's
    /// [`trust_protocol::tx::SessionTerms`] window of 0 means the network's own).
    #[serde(default = "default_max_window")]
    pub max_window: u64,
    /// Blocks after a session is decided (or an appeal round of it is) during which any
    /// account may appeal its segments' verdicts; once it has passed with no appeal open,
    /// the session is final.
    #[serde(default = "default_appeal_window")]
    pub appeal_window: u64,
    /// Bond an appellant escrows per appealed segment: paid to the appeal seats when the
    /// verdict is upheld, returned with a reward when it is overturned.
    #[serde(default = "default_appeal_bond")]
    pub appeal_bond: Amount,
    /// Most appeal rounds one segment may have.
    #[serde(default = "default_max_appeal_rounds")]
    pub max_appeal_rounds: u8,
    /// Reward of an appellant whose appeal overturns a segment, on top of its bond share
    /// back: paid from what the overturned majority was slashed (at most all of it; the
    /// rest of the slashes pays the appeal seats that voted with the new verdict).
    #[serde(default = "default_appeal_reward")]
    pub appeal_reward: Amount,
    /// The floors on every term a provider chooses ([`Floors`]): `OpenSession` is refused,
    /// charging nothing, below any of them.
    #[serde(default)]
    pub floors: Floors,
    /// Blocks before a change of who may be drawn, or of how much, counts in draws: new
    /// domains (`DeclareExpertise`), a pause or resume, a registration (its warm-up), and
    /// stake bonded or unbonded (what an auditor had bonded before keeps counting). Longer
    /// than any draw seed is known in advance: a seed is known only to the proposer of its
    /// block and to proposers it colludes with in the blocks just before, so a change
    /// chosen in block `h` can steer a draw only for a coalition that proposes every block
    /// from `h` to `h + expertise_delay`.
    #[serde(default = "default_expertise_delay")]
    pub expertise_delay: u64,
    /// The most stake an auditor can lose in one session, over all its seats and rounds
    /// (appeals included): a provider's session can cost an honest seat at most this.
    #[serde(default = "default_max_session_loss")]
    pub max_session_loss: Amount,
    /// The most a block may cut an account's voting power, as a share of it: power
    /// follows stake down at most this fast (up at once), so one session's slashes cannot
    /// strip a validator of its power in one block.
    #[serde(default = "default_max_power_cut")]
    pub max_power_cut: Ppm,
    /// Blocks after a session is first decided during which appeals may be filed, however
    /// many rounds ran: bounds a session's time to finality.
    #[serde(default = "default_appeal_horizon")]
    pub appeal_horizon: u64,
    /// Blocks a key must arrive before its round's commit deadline to count as delivered
    /// in time: a seat keyed later could not judge before it must commit, so it is
    /// starved (paid by the provider, never slashed).
    #[serde(default = "default_key_lead")]
    pub key_lead: u64,
    /// Blocks after its round's draw within which a seat's keys must land to count
    /// (besides [`Params::key_lead`] before the commit deadline): a seat not keyed by the
    /// `key_window`-th block after the draw is starved for good, paid by the provider and
    /// never slashed, and from the next block on it holds none of the network's capacity
    /// ([`crate::admission`]). An honest provider keys its seats in the block after the
    /// draw; the window leaves room for a slow mempool and for a run of blocks proposed
    /// by a coalition under a third of the power that leaves the keys out. At least 1.
    #[serde(default = "default_key_window")]
    pub key_window: u64,
    /// Blocks a session that failed to run (its draw could not fill, its fee and bond
    /// refunded) stays in [`crate::State::failed`]: long enough for its provider and any
    /// reader to see why, then it leaves the state, so failures never accumulate. Its id
    /// is never reused ([`crate::State::failed`]).
    #[serde(default = "default_failure_retention")]
    pub failure_retention: u64,
    /// Blocks a session's outcome stays in [`crate::State::outcomes`] after it became
    /// final ([`crate::AppealRecord::final_at`]): then it leaves the contract state
    /// ([`crate::Event::OutcomeRetired`]) and lives on in the blocks that carry it, where
    /// an outcome proof is anchored at its final block. So the state holds the sessions
    /// not yet final and those of the last `outcome_retention` blocks, however many were
    /// ever decided. Its id is never reused ([`crate::State::failed`]). At least 1.
    #[serde(default = "default_outcome_retention")]
    pub outcome_retention: u64,
    /// The least a `Transfer` to a key with no account must move: an account is a
    /// permanent entry of the state (never removed, so that nonces and session ids are
    /// never reused), so creating one must move at least this much. At least 1.
    #[serde(default = "default_min_new_account")]
    pub min_new_account: Amount,
    /// What creating an account costs its sender, burned on top of what the transfer
    /// moves: an account is kept for good, and the minimum it must receive can be sent
    /// straight back, so without a fee nothing would bound how fast the state grows. Each
    /// permanent account costs this much, whoever made it.
    #[serde(default = "default_new_account_fee")]
    pub new_account_fee: Amount,
    /// Seats an auditor of each tier (Computer, LLM, Human) is expected to judge at once:
    /// the admission limit of the round-0 draw. A session's seats are drawn only while the
    /// seats of its tiers still in a commit window, its own included, stay within
    /// `seat_capacity[t] * S_t / s_max_t` (the tier's eligible stake over its largest
    /// eligible stake: the number of auditors of the largest one's size), so that under
    /// stake-weighted draws the largest auditor expects at most `seat_capacity[t]` seats
    /// to judge at once (a seat counts until it commits, with bounds on how long a seat
    /// that does not commit counts: [`crate::admission`]). Past that, sessions wait in the order they were opened (a
    /// deferred draw) instead of turning honest seats into no-shows; a session alone is
    /// always admitted when nothing of its tiers is being judged. At least 1 each.
    #[serde(default = "default_seat_capacity")]
    pub seat_capacity: [u32; 3],
    /// Blocks a session may wait for its round-0 draw after the block that opened it:
    /// past that it fails and is refunded in full ("not admitted"), so a provider's escrow
    /// is never held for a network that stays at capacity. At least 1.
    #[serde(default = "default_draw_patience")]
    pub draw_patience: u64,
    /// Blocks an auditor entry whose bonded stake reached zero (an exit, or everything
    /// unbonded) stays after its last unbonding frees: then, holding no seat in a session
    /// not final and nothing pending, it leaves the state, what had freed is paid to its
    /// balance, and its record stays in the account ([`crate::Account::past`]). So every
    /// auditor entry either holds stake or expires. At least 1.
    #[serde(default = "default_auditor_retention")]
    pub auditor_retention: u64,
}

/// The network's floors under the terms a provider chooses, per tier where it matters
/// (Computer, LLM, Human). Each is what an honest auditor of that tier can meet: a window
/// shorter than the floor would make honest seats miss it and be slashed; fewer seats or a
/// lower trace quorum would let too few votes decide.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Floors {
    /// Least `k` per tier, for every tier a session allows.
    pub min_k: [u8; 3],
    /// Least commit window per tier, in blocks. A round's window is stretched to the
    /// floor of every tier seated in it (escalations and appeals included); a session
    /// that asks for a shorter window than the floor of a tier it routes to is refused.
    pub min_commit_window: [u64; 3],
    /// Least reveal window per tier, in blocks (as `min_commit_window`).
    pub min_reveal_window: [u64; 3],
    /// Least trace quorum `beta`.
    pub min_beta: Ppm,
    /// Least bonded stake the auditors declaring a required domain must hold in each
    /// tier the session routes to (the provider's own excluded), so that a domain only a
    /// provider's own auditors declare cannot be required. A lower bound beside
    /// `min_domain_share`, which binds once the tier is large.
    pub min_domain_stake: Amount,
    /// Least share of its tier's draw stake (every drawable auditor's) that a domain's
    /// declaring pool (the provider's own excluded) must hold to be required, or to weigh
    /// in a draw, in ppm. Above the assumed malicious share (`assumed_malicious`), so a
    /// coalition of that share cannot fill a required domain's pool alone; at the default
    /// of a third, no coalition below a third can, and at the assumed share of 10% a pool
    /// at the floor holds at most 30% of it.
    #[serde(default = "default_min_domain_share")]
    pub min_domain_share: Ppm,
    /// Greatest seat quorum `tau` per tier: a session may not ask for more than the least
    /// ceiling of the tiers it allows. At most `(k - 1) / k` at the tier's least `k` (and
    /// never above 2/3), so that at the smallest panel one seat that abstains, or is
    /// absent, cannot keep the others from deciding: no minority blocks a verdict.
    #[serde(default = "default_max_tau")]
    pub max_tau: [Ppm; 3],
    /// Longest commit window per tier a session's own terms may give a round, in blocks:
    /// a longer one asked for is cut to the least cap of the tiers seated in the round,
    /// so that no session keeps its seats waiting longer. (A round's hold on the
    /// network's capacity ends sooner: at its key deadline for seats not keyed, and the
    /// network's own window after it for keyed seats that have not committed;
    /// [`crate::admission`].) A few times the floor for Computer; for Human, what a
    /// person needs.
    #[serde(default = "default_max_commit_window")]
    pub max_commit_window: [u64; 3],
}

/// The default domain floor: a third of the tier's draw stake.
pub const DEFAULT_MIN_DOMAIN_SHARE: Ppm = Ppm(333_334);

fn default_min_domain_share() -> Ppm {
    DEFAULT_MIN_DOMAIN_SHARE
}

fn default_auditor_retention() -> u64 {
    1_000
}

fn default_max_commit_window() -> [u64; 3] {
    [200, 400, 1_000]
}

/// The default tau ceiling of every tier: 2/3, rounded down so that `ceil(tau 3) = 2`.
pub const DEFAULT_MAX_TAU: Ppm = Ppm(666_666);

fn default_max_tau() -> [Ppm; 3] {
    [DEFAULT_MAX_TAU; 3]
}

impl Default for Floors {
    /// Floors for a public network producing a block every second or so: `k >= 3` in every
    /// tier; commit windows of at least 6 blocks for the Computer tier (the node's give-up
    /// margin of 2 blocks, a block for the keys and a few to fetch and judge), 20 for the
    /// LLM tier and 30 for the Human tier; reveal windows of at least 4; `beta >= 0.5`;
    /// behind a required domain, declaring stake of at least a third of the tier's and
    /// 20,000; and `tau` at most 2/3.
    fn default() -> Self {
        Self {
            min_k: [3, 3, 3],
            min_commit_window: [6, 20, 30],
            min_reveal_window: [4, 4, 4],
            min_beta: Ppm(500_000),
            min_domain_stake: 20_000,
            min_domain_share: default_min_domain_share(),
            max_tau: default_max_tau(),
            max_commit_window: default_max_commit_window(),
        }
    }
}

impl Floors {
    /// Floors that let a test or a small demo network use `k = 1`, short windows and any
    /// domain: what `testnet init --dev-floors` writes. Never for a public network.
    pub fn dev() -> Self {
        Self {
            min_k: [1, 1, 1],
            min_commit_window: [4, 4, 4],
            min_reveal_window: [2, 2, 2],
            min_beta: Ppm(1),
            min_domain_stake: 0,
            min_domain_share: Ppm::ZERO,
            max_tau: default_max_tau(),
            max_commit_window: default_max_commit_window(),
        }
    }

    /// Least `k` of a tier.
    pub fn min_k(&self, tier: Tier) -> u8 {
        pick(&self.min_k, tier)
    }

    /// Least commit window of a tier.
    pub fn min_commit_window(&self, tier: Tier) -> u64 {
        pick(&self.min_commit_window, tier)
    }

    /// Least reveal window of a tier.
    pub fn min_reveal_window(&self, tier: Tier) -> u64 {
        pick(&self.min_reveal_window, tier)
    }

    /// Longest commit window a session's terms may give a round of a tier.
    pub fn max_commit_window(&self, tier: Tier) -> u64 {
        pick(&self.max_commit_window, tier)
    }

    /// Greatest `tau` of a tier.
    pub fn max_tau(&self, tier: Tier) -> Ppm {
        pick(&self.max_tau, tier)
    }
}

fn pick<T: Copy>(per_tier: &[T; 3], tier: Tier) -> T {
    let [c, l, h] = *per_tier;
    match tier {
        Tier::Computer => c,
        Tier::Llm => l,
        Tier::Human => h,
    }
}

fn default_expertise_delay() -> u64 {
    10
}

fn default_max_session_loss() -> Amount {
    18
}

fn default_max_power_cut() -> Ppm {
    Ppm(250_000)
}

fn default_appeal_horizon() -> u64 {
    200
}

fn default_key_lead() -> u64 {
    3
}

fn default_key_window() -> u64 {
    10
}

fn default_failure_retention() -> u64 {
    1_000
}

fn default_outcome_retention() -> u64 {
    1_000
}

fn default_seat_capacity() -> [u32; 3] {
    [256, 8, 4]
}

fn default_draw_patience() -> u64 {
    1_000
}

fn default_min_new_account() -> Amount {
    10
}

fn default_new_account_fee() -> Amount {
    10
}

fn default_appeal_reward() -> Amount {
    30
}

fn default_max_window() -> u64 {
    1_000
}

fn default_appeal_window() -> u64 {
    20
}

fn default_appeal_bond() -> Amount {
    60
}

fn default_max_appeal_rounds() -> u8 {
    2
}

impl Params {
    /// Tier index into the per-tier arrays.
    pub fn tier_index(tier: Tier) -> usize {
        match tier {
            Tier::Computer => 0,
            Tier::Llm => 1,
            Tier::Human => 2,
        }
    }

    /// Minimum stake for a tier.
    pub fn min_stake(&self, tier: Tier) -> Amount {
        let [c, l, h] = self.min_stake;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }

    /// Largest `k` for a tier.
    pub fn max_k(&self, tier: Tier) -> u8 {
        let [c, l, h] = self.max_k;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }

    /// Assumed error rate for a tier.
    pub fn assumed_error(&self, tier: Tier) -> Ppm {
        let [c, l, h] = self.assumed_error;
        match tier {
            Tier::Computer => c,
            Tier::Llm => l,
            Tier::Human => h,
        }
    }
}

impl Default for Params {
    /// Economics that pass every dial of `trust-node econ check`
    /// (`trust_protocol::math::econ::EconParams::network_default`): `R = 6`, `P = 18`,
    /// `p_min = 0.71`, `p_max = 0.73`, `gamma = 0.1`, and a rubber-stamp threshold of 60%
    /// approved known errors over at least 20 of them.
    ///
    /// Under the paper's worked example (`P = 8`, `p_min = 0.2`, `p_max = 0.5`) a seat
    /// guessing at random earns about half what an honest seat does: in a 5-seat panel its
    /// own vote tips close rounds, so a fair coin agrees with the verdict 63% of the time.
    /// Here the best guesser the honeypot rule lets through (Valid 60% of the time, 67%
    /// agreement at an 85% base rate) loses 0.2 per vote and a fair coin 0.95, while an
    /// honest human (`eps_H = 0.30`) earns even at reputation 0. Assumed error rates are
    /// the paper's (`eps_L = 0.05`, `eps_H = 0.30`, `rho = 0.1`); windows suit a network
    /// producing a block every second or so.
    fn default() -> Self {
        Self {
            min_stake: [100, 100, 100],
            unbond_delay: 20,
            commit_window: 10,
            reveal_window: 10,
            disclose_window: 5,
            max_k: [15, 15, 15],
            max_extra_seats: 8,
            min_tau: Ppm(500_000),
            escalation_extra_seats: 2,
            reward: 6,
            penalty: 18,
            p_min: Ppm(710_000),
            p_max: Ppm(730_000),
            gamma: Ppm(100_000),
            initial_reputation: Ppm(500_000),
            assumed_error: [Ppm(10_000), Ppm(50_000), Ppm(300_000)],
            assumed_malicious: Ppm(100_000),
            // An honest human approves a known error at its error rate (30%): at 60% over
            // at least 20 samples it is flagged with probability well under 1%, while a
            // guesser approving 60% or more is caught.
            rubber_stamp: RubberStampRule {
                min_samples: 20,
                approval: Ppm(600_000),
                min_providers: 2,
                min_provider_fees: default_min_provider_fees(),
            },
            // The node plants at most 8 (`audit::provider::honeypot::MAX_PER_SESSION`). A bond of
            // `P + R` per honeypot makes each false honeypot cost its provider more than a
            // wrong vote costs a seat.
            max_honeypots: 8,
            honeypot_bond: 24,
            max_window: default_max_window(),
            appeal_window: default_appeal_window(),
            appeal_bond: default_appeal_bond(),
            max_appeal_rounds: default_max_appeal_rounds(),
            appeal_reward: default_appeal_reward(),
            floors: Floors::default(),
            expertise_delay: default_expertise_delay(),
            max_session_loss: default_max_session_loss(),
            max_power_cut: default_max_power_cut(),
            appeal_horizon: default_appeal_horizon(),
            key_lead: default_key_lead(),
            key_window: default_key_window(),
            failure_retention: default_failure_retention(),
            outcome_retention: default_outcome_retention(),
            min_new_account: default_min_new_account(),
            new_account_fee: default_new_account_fee(),
            seat_capacity: default_seat_capacity(),
            draw_patience: default_draw_patience(),
            auditor_retention: default_auditor_retention(),
        }
    }
}

impl Params {
    /// The paper's worked example (`R = 6`, `P = 8`, `p_min = 0.2`, `p_max = 0.5`) with
    /// the rubber-stamp rule the contract used with it (80% over 6 known errors); the
    /// rest as [`Params::default`]. It fails the slashing-floor and guesser dials.
    pub fn paper_example() -> Self {
        Self {
            penalty: 8,
            p_min: Ppm(200_000),
            p_max: Ppm(500_000),
            rubber_stamp: RubberStampRule {
                min_samples: 6,
                approval: Ppm(800_000),
                min_providers: 2,
                min_provider_fees: default_min_provider_fees(),
            },
            ..Self::default()
        }
    }
}

/// An account funded at genesis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenesisAccount {
    /// The account.
    pub id: AccountId,
    /// Liquid balance.
    pub balance: Amount,
    /// Bonded stake.
    pub stake: Amount,
}

/// An auditor registered at genesis (its account must be funded in `accounts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GenesisAuditor {
    /// The account.
    pub id: AccountId,
    /// Tier.
    pub tier: trust_protocol::tx::Tier,
    /// Expertise domains.
    #[serde(default)]
    pub expertise: Vec<String>,
    /// X25519 key segment keys are sealed to.
    pub sealing_key: trust_protocol::SealingPublicKey,
}

/// The initial state of a network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Genesis {
    /// Parameters.
    pub params: Params,
    /// Funded accounts.
    pub accounts: Vec<GenesisAccount>,
    /// Auditors registered from the start (a testnet's nodes serve as seats at once).
    #[serde(default)]
    pub auditors: Vec<GenesisAuditor>,
}

/// Why a genesis is unusable.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum GenesisError {
    /// Two entries for one account.
    #[error("account {0} appears twice in genesis")]
    DuplicateAccount(AccountId),
    /// The total supply does not fit in an amount.
    #[error("total supply overflows")]
    SupplyOverflow,
    /// A genesis auditor has no genesis account, or appears twice.
    #[error("genesis auditor {0} is not a genesis account or is listed twice")]
    BadAuditor(AccountId),
    /// A parameter is out of its range.
    #[error("parameter {0} is out of range")]
    BadParam(&'static str),
    /// A genesis auditor's stake is below its tier's minimum.
    #[error("genesis auditor {0} bonds less than its tier's minimum stake")]
    UnderStakedAuditor(AccountId),
}

impl Params {
    /// Checks the ranges the contract relies on.
    pub fn validate(&self) -> Result<(), GenesisError> {
        let frac = |p: Ppm| p.is_fraction();
        if !(frac(self.p_min) && frac(self.p_max) && self.p_min <= self.p_max) {
            return Err(GenesisError::BadParam("p_min/p_max"));
        }
        if !frac(self.gamma) || self.gamma == Ppm::ZERO {
            return Err(GenesisError::BadParam("gamma"));
        }
        if !frac(self.initial_reputation) {
            return Err(GenesisError::BadParam("initial_reputation"));
        }
        if !frac(self.min_tau) || self.min_tau < Ppm(500_000) {
            return Err(GenesisError::BadParam("min_tau"));
        }
        if self.commit_window == 0 || self.reveal_window == 0 || self.disclose_window == 0 {
            return Err(GenesisError::BadParam("windows"));
        }
        if self.max_window < self.commit_window.max(self.reveal_window)
            || self.max_window > u64::from(u16::MAX)
        {
            return Err(GenesisError::BadParam("max_window"));
        }
        if self.assumed_error.iter().any(|p| !frac(*p)) || !frac(self.assumed_malicious) {
            return Err(GenesisError::BadParam("assumed_error/assumed_malicious"));
        }
        if !frac(self.rubber_stamp.approval) {
            return Err(GenesisError::BadParam("rubber_stamp.approval"));
        }
        if !(2..=MAX_MIN_PROVIDERS).contains(&self.rubber_stamp.min_providers) {
            return Err(GenesisError::BadParam("rubber_stamp.min_providers"));
        }
        let f = &self.floors;
        if f.min_k.contains(&0) || f.min_k.iter().zip(&self.max_k).any(|(lo, hi)| lo > hi) {
            return Err(GenesisError::BadParam("floors.min_k"));
        }
        // A key sent in the block after the draw must be able to count as in time.
        if f.min_commit_window.iter().any(|w| *w <= self.key_lead)
            || f.min_commit_window
                .iter()
                .chain(&f.min_reveal_window)
                .any(|w| *w == 0 || *w > self.max_window)
        {
            return Err(GenesisError::BadParam(
                "floors.min_commit_window/min_reveal_window",
            ));
        }
        // The ceiling on tau: between the network's least tau and 2/3, and at most
        // (k - 1) / k at the tier's least k, so one seat of the smallest panel never blocks.
        let tau_ok = |(ceiling, k): (&Ppm, &u8)| {
            let k = u64::from(*k);
            *ceiling >= self.min_tau
                && *ceiling <= DEFAULT_MAX_TAU
                && (k < 2
                    || u64::from(ceiling.0).saturating_mul(k)
                        <= k.saturating_sub(1).saturating_mul(1_000_000))
        };
        if !f.max_tau.iter().zip(&f.min_k).all(tau_ok) {
            return Err(GenesisError::BadParam("floors.max_tau"));
        }
        if f.max_commit_window
            .iter()
            .zip(&f.min_commit_window)
            .any(|(cap, floor)| cap < floor || *cap > self.max_window)
            || f.max_commit_window.iter().min() < f.min_commit_window.iter().max()
        {
            return Err(GenesisError::BadParam("floors.max_commit_window"));
        }
        if !frac(f.min_beta) || f.min_beta == Ppm::ZERO {
            return Err(GenesisError::BadParam("floors.min_beta"));
        }
        // A share the assumed malicious stake could fill on its own would let it own a
        // required domain's every seat (0 turns the share off: test networks only).
        if !frac(f.min_domain_share)
            || (f.min_domain_share != Ppm::ZERO && f.min_domain_share <= self.assumed_malicious)
        {
            return Err(GenesisError::BadParam(
                "floors.min_domain_share (a fraction above assumed_malicious, or 0 for none)",
            ));
        }
        if self.expertise_delay < 2 {
            return Err(GenesisError::BadParam("expertise_delay"));
        }
        if !frac(self.max_power_cut) || self.max_power_cut == Ppm::ZERO {
            return Err(GenesisError::BadParam("max_power_cut"));
        }
        // A failure must stay at least one block past the block that records it.
        if self.failure_retention == 0 {
            return Err(GenesisError::BadParam("failure_retention"));
        }
        // An outcome must stay at least the block it became final in: its proof is
        // anchored there.
        if self.outcome_retention == 0 {
            return Err(GenesisError::BadParam("outcome_retention"));
        }
        if self.min_new_account == 0 {
            return Err(GenesisError::BadParam("min_new_account"));
        }
        if self.seat_capacity.contains(&0) {
            return Err(GenesisError::BadParam("seat_capacity"));
        }
        if self.key_window == 0 {
            return Err(GenesisError::BadParam(
                "key_window (at least 1: the block after the draw)",
            ));
        }
        if self.draw_patience == 0 {
            return Err(GenesisError::BadParam("draw_patience"));
        }
        if self.auditor_retention == 0 {
            return Err(GenesisError::BadParam("auditor_retention (at least 1)"));
        }
        if self.appeal_horizon < self.appeal_window {
            return Err(GenesisError::BadParam("appeal_horizon"));
        }
        if self.max_k.contains(&0)
            || self
                .max_k
                .iter()
                .any(|k| k.saturating_add(self.max_extra_seats) > trust_protocol::tx::MAX_SEATS)
        {
            return Err(GenesisError::BadParam("max_k/max_extra_seats"));
        }
        Ok(())
    }
}
