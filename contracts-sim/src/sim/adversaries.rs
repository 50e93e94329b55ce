//! The adversarial simulator: every attack of issue 39 mounted, session after session,
//! against the real contract with real signed transactions, and the invariants that say
//! whether any of them bought a PASS, took an honest auditor's stake, or made a verdict
//! depend on the order of reveals.
//!
//! # The world
//!
//! Each tier (Computer, LLM, Human) has honest auditors holding at least two thirds of the
//! tier's bonded stake and sybil auditors holding the rest (checked: strictly under a
//! third). Honest auditors judge the truth: they vote what the segment is, or abstain when
//! they cannot read it (no key, or a key that does not open, by their give-up block two
//! blocks before the commit deadline, as the node's seats do), so any slash of an honest
//! auditor is somebody else's doing. Honest providers open sessions with ordinary terms,
//! key every seat in time and open their honeypots. There is no omniscient watcher: the
//! only appellants are parties who could know a verdict is wrong, the honest seats of the
//! round that decided it (outvoted, or kept from judging a segment decided Valid: no key in
//! time, a key that does not open, a ciphertext nobody served) and an honest provider on
//! its own Computer-tier checks. A wrong trace's PASS is counted at its first decision and
//! at finality, where it is `wrong_pass_final` if a deciding round held an honest seat and
//! `wrong_pass_unwatched` if none (compared with Lemma 1 at the run's sybil share).
//!
//! The adversary is one party with several hands: a provider (two keys) whose traces carry
//! a known wrong step, the sybil auditors (who approve its wrong steps and side with its
//! honeypot claims, and judge the truth everywhere else) with reserve keys it registers
//! mid-run, three funded *spammer* accounts, and a colluding proposer coalition that
//! proposes 3 blocks of every 10 in a row (under a third of the power): it orders reveals,
//! censors honest reveals in its sessions, grinds seeds and picks its own bonds and
//! registrations to win the next draw. What each hand tries is listed by name in
//! [`AdversaryReport::attacks`]; see `behave.rs` for how each is mounted.
//!
//! Capacity is bounded as on the network ([`adversary_params`]): the adversary's withheld
//! ciphertexts and long windows compete with honest sessions for it, and
//! `max_blocks_to_draw` says how long honest sessions waited.
//!
//! # The chain
//!
//! Blocks are produced one by one: `begin_block`, the queued transactions signed with
//! their senders' current nonces and applied in the block's order, `end_block`. The seed
//! of block `h` (the contract's [`crate::BlockCtx::block_hash`]) is
//! `H(sim seed, h, seed of h - 1)`: a chain that no block's contents enter, as a VRF output
//! over the chain and height would be. The order of a block is a seeded shuffle that keeps
//! each sender's transactions in the order it queued them; the colluding proposer instead
//! puts the sybils' reveals first (or last, alternately), or (every other run of its
//! blocks) leaves honest reveals of the adversary's sessions out, and, before it seals a
//! block that opens an adversary session, recomputes the next block's seed under other
//! transaction sets, orders and times, checking that it never changes.
//!
//! # Order independence, measured
//!
//! A *shadow* copy of the contract receives every block with the reveals of the block in
//! the reverse order (so sybil reveals placed first land last, and the other way round).
//! Whenever a round's reveal window closes in the real contract, the round's segment
//! verdicts are compared with the shadow's; a difference is an order-dependent segment.
//! After a difference (or a transaction that fared differently in the two) the shadow is
//! re-copied from the real contract, so that later rounds are compared from equal states.
//!
//! The same seed gives the same report, byte for byte.

mod behave;
mod memory;
mod world;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trust_protocol::units::Ppm;

use super::SimError;
use crate::Params;

/// Settings of an adversarial run ([`adversaries`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AdversaryConfig {
    /// Seed of everything: keys, traces, orders, block seeds.
    pub seed: u64,
    /// Sessions to open (honest and adversarial).
    pub sessions: u32,
    /// Share of the sessions the adversary's provider opens.
    pub adversary_share: Ppm,
    /// Sessions opened per block.
    pub sessions_per_block: u32,
    /// Honest auditors per tier.
    pub honest_per_tier: u32,
    /// Stake of each honest auditor.
    pub honest_stake: u64,
    /// Sybil auditors per tier.
    pub sybils_per_tier: u32,
    /// Stake of each sybil auditor (the sybils of a tier must hold under a third of it).
    pub sybil_stake: u64,
    /// When set, the sybils' share of each tier's bonded stake at genesis: each sybil's
    /// stake is then chosen for it ([`AdversaryConfig::sybil_stake_for`]) and
    /// `sybil_stake` is ignored. 10%, 20% and 30% are the shares the notes report.
    pub sybil_share: Option<Ppm>,
    /// Whether the adversary holds the network's capacity where it can: commit windows at
    /// the tier's cap in part of its sessions (those whose honest seats it keeps from
    /// committing: withheld keys wait to their give-up block), and its sybils seated in
    /// sessions whose ciphertexts it never serves commit only at their give-up block.
    /// Off, its windows sit at the floors and its sybils commit at once (a check that
    /// `honest_sessions_refused` measures this attack, not the load).
    pub hold_capacity: bool,
    /// Blocks a keyed honest seat tries to fetch a ciphertext nobody serves before it
    /// abstains (the node's seat gives up early when no peer has it). `u64::MAX`: it
    /// retries until its give-up block, as seats did before issue 53.
    pub fetch_patience: u64,
    /// Network parameters (the network's defaults, floors included, unless set).
    pub params: Params,
    /// Starts the chain from `params` without [`Params::validate`] (and without the check
    /// that each tier can staff the widest panel and two appeals): only for the mutation
    /// tests, which put a defence's old value back (a tau ceiling of 1, an uncapped commit
    /// window, ...) to show that the invariant it guards fires. Never a network's genesis.
    pub unchecked_params: bool,
}

impl Default for AdversaryConfig {
    /// 300 sessions, half of them the adversary's, under [`Params::default`]. Each tier
    /// has 24 honest auditors of 1,000 stake (24,000: a domain they all declare meets the
    /// default domain floor of 20,000) and 8 sybils of 1,400 (11,200: 31.8% of the tier,
    /// too little to back a domain of their own). 32 auditors per tier staff the largest
    /// panel the adversary may ask for at the floor `k` (3 + 8 extra seats) and two
    /// appeal rounds of 7 fresh seats each.
    fn default() -> Self {
        Self {
            seed: 1,
            sessions: 300,
            adversary_share: Ppm(500_000),
            sessions_per_block: 2,
            honest_per_tier: 24,
            honest_stake: 1_000,
            sybils_per_tier: 8,
            sybil_stake: 1_400,
            sybil_share: None,
            fetch_patience: 4,
            hold_capacity: true,
            params: adversary_params(),
            unchecked_params: false,
        }
    }
}

/// The network's default parameters as the adversarial run uses them: admission by
/// capacity bounded at the network's default (`seat_capacity`), so that a provider who
/// withholds ciphertexts competes with honest sessions for real capacity; outcomes kept
/// to the end of the run (its report reads them all).
pub fn adversary_params() -> Params {
    Params {
        outcome_retention: u64::MAX,
        ..Params::default()
    }
}

impl AdversaryConfig {
    /// The stake each sybil bonds so that the sybils hold `share` of each tier's stake at
    /// genesis: `share * honest / (1 - share)` shared among them, rounded down.
    pub fn sybil_stake_for(&self, share: Ppm) -> u64 {
        let honest = u128::from(self.honest_per_tier) * u128::from(self.honest_stake);
        let rest = 1_000_000u128.saturating_sub(u128::from(share.0)).max(1);
        let total = honest * u128::from(share.0) / rest;
        let each = total / u128::from(self.sybils_per_tier.max(1));
        u64::try_from(each).unwrap_or(u64::MAX)
    }

    /// The stake of each sybil: [`AdversaryConfig::sybil_share`]'s when set, else
    /// `sybil_stake`.
    pub fn sybil_stake(&self) -> u64 {
        match self.sybil_share {
            Some(share) => self.sybil_stake_for(share),
            None => self.sybil_stake,
        }
    }

    /// The sybils' share of each tier's stake at genesis.
    pub fn sybil_share_f64(&self) -> f64 {
        let honest = f64::from(self.honest_per_tier) * self.honest_stake as f64;
        let sybil = f64::from(self.sybils_per_tier) * self.sybil_stake() as f64;
        sybil / (honest + sybil)
    }

    /// Checks the settings: sybils strictly under a third of each tier's stake, and every
    /// count the run needs positive.
    pub fn validate(&self) -> Result<(), SimError> {
        let honest = u128::from(self.honest_per_tier) * u128::from(self.honest_stake);
        let sybil = u128::from(self.sybils_per_tier) * u128::from(self.sybil_stake());
        // sybil / (honest + sybil) < 1/3  <=>  2 sybil < honest.
        if 2 * sybil >= honest {
            return Err(SimError::Config(format!(
                "the sybils of a tier hold {sybil} of {} stake: they must hold under a third",
                honest + sybil
            )));
        }
        if self.sessions == 0 || self.sessions_per_block == 0 {
            return Err(SimError::Config(
                "sessions and sessions_per_block must be positive".into(),
            ));
        }
        if self.honest_per_tier == 0 || self.sybils_per_tier == 0 {
            return Err(SimError::Config(
                "every tier needs honest auditors and sybils".into(),
            ));
        }
        if !self.adversary_share.is_fraction() {
            return Err(SimError::Config(
                "adversary_share must be within [0, 1]".into(),
            ));
        }
        let p = &self.params;
        if self.honest_stake < p.min_stake.iter().copied().max().unwrap_or(0)
            || self.sybil_stake() < p.min_stake.iter().copied().max().unwrap_or(0)
        {
            return Err(SimError::Config(
                "every auditor must bond at least its tier's minimum stake".into(),
            ));
        }
        // The adversary's widest panel and two appeal rounds of fresh seats.
        let panel =
            p.floors.min_k.iter().copied().max().unwrap_or(1) as u32 + u32::from(p.max_extra_seats);
        let appeal = 2 * p.floors.min_k.iter().copied().max().unwrap_or(1) as u32 + 1;
        let need = panel + 2 * appeal + 2;
        if self.honest_per_tier + self.sybils_per_tier < need && !self.unchecked_params {
            return Err(SimError::Config(format!(
                "{} auditors per tier cannot staff a panel of {panel} and two appeals of {appeal}: at least {need} are needed",
                self.honest_per_tier + self.sybils_per_tier
            )));
        }
        if !self.unchecked_params {
            p.validate()?;
        }
        Ok(())
    }
}

/// What an adversarial run found. Every count is over the whole run.
///
/// No appellant here is omniscient: the only parties that appeal are those who could know
/// a verdict is wrong, the honest seats of the deciding round whose own judgement it
/// contradicts (they were outvoted) and an honest provider whose own checks (the
/// Computer tier's, which it can run itself) contradict a verdict. A wrong trace that
/// passes is counted at its first decision (`wrong_pass_at_decision`) and at finality,
/// split by whether some round that decided a wrong step held an honest seat that could
/// have appealed (`wrong_pass_final`, an invariant) or none at all (`wrong_pass_unwatched`:
/// sortition luck no appeal can see, compared with what Lemma 1 predicts in [`Lemma1`]).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AdversaryReport {
    /// The seed.
    pub seed: u64,
    /// Sessions opened (honest and adversarial; refused probes are not sessions).
    pub sessions: u64,
    /// Slash events on honest auditors (every one counts: they vote the truth), less those
    /// a later appeal gave back ([`crate::Event::SlashRestored`]).
    pub honest_slashed: u64,
    /// Stake honest auditors lost to those slashes, net of what was given back.
    pub honest_stake_lost: u64,
    /// Honest auditors the rubber-stamp rule flagged (everything they earned forfeited).
    pub honest_flagged: u64,
    /// Traces with a known wrong step (a segment of the trace, not an opened honeypot,
    /// whose truth is not Valid) whose final trace verdict is Pass, however it got there:
    /// `wrong_pass_final + wrong_pass_unwatched`. (Before issue 53 this was counted after
    /// an omniscient watcher had appealed every wrong verdict; no such watcher runs now.)
    pub wrong_pass: u64,
    /// Wrong traces whose trace verdict was Pass when first decided (before any appeal).
    pub wrong_pass_at_decision: u64,
    /// Wrong traces that Pass at finality although a round that decided one of their
    /// wrong steps held an honest seat that could have appealed.
    pub wrong_pass_final: u64,
    /// Wrong traces that Pass at finality whose wrong steps were decided only by rounds
    /// with no honest seat at all: nobody who could know was there to appeal.
    pub wrong_pass_unwatched: u64,
    /// What Lemma 1 predicts for `wrong_pass_unwatched` (and the first decisions) at the
    /// run's sybil share.
    pub lemma1: Lemma1,
    /// Segments whose verdict in a round changed when the round's reveals were applied in
    /// another order (the shadow contract).
    pub order_dependent: u64,
    /// Appeals by third parties who could know (an outvoted honest seat of the deciding
    /// round), within the window and with the bond, that the contract refused.
    pub third_party_appeals_refused: u64,
    /// Honest providers' sessions the network refused: `OpenSession` refused, or the
    /// session failed (its draw never admitted, or never filled).
    pub honest_sessions_refused: u64,
    /// Over honest sessions, blocks from the one that opened the session to the one that
    /// drew its first seats (capacity admission makes a session wait).
    pub max_blocks_to_draw: u64,
    /// Honest reveals the censoring proposer coalition left out of its blocks (each
    /// block it left one out counts once).
    pub censored_reveals: u64,
    /// Over sessions, blocks from the one that opened the session to its `SessionFinal`.
    pub max_blocks_to_final: u64,
    /// How many times each attack was tried.
    pub attacks: BTreeMap<String, u64>,
    /// Attacks the contract should have refused and did not, by name (each should be 0).
    pub defences_breached: BTreeMap<String, u64>,
    /// What else the run measured.
    pub diagnostics: Diagnostics,
}

/// Lemma 1's prediction for the adversary's wrong steps, at the sybils' stake share
/// `rho` (the simulator's statistics, not consensus state, so floating point).
///
/// Lemma 1 sums, over the number `m` of malicious seats among a segment's `n`,
/// `C(n, m) rho^m (1 - rho)^(n - m)` times the chance that the honest seats reach the
/// quorum. Sybils vote every wrong step Valid and honest seats never err here
/// (`eps = 0`), so:
/// - a wrong step is decided with **no honest seat at all** only in the `m = n` term:
///   `rho^n`; summed over the adversary's wrong traces this is the expected
///   `wrong_pass_unwatched` (an upper bound: draws are without replacement, so a panel
///   larger than the sybils' number is never all theirs);
/// - the sybils reach the quorum `q = ceil(tau n)` on their own with probability
///   `sum_{m >= q} C(n, m) rho^m (1 - rho)^(n - m)`: the expected wrong steps decided
///   Valid at the first decision (before appeals).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Lemma1 {
    /// The sybils' share of each tier's bonded stake at genesis (`rho`).
    pub sybil_share: f64,
    /// The adversary's decided traces with a wrong step whose round-0 panel was drawn.
    pub wrong_traces: u64,
    /// Expected `wrong_pass_unwatched`: the sum of `rho^n` over those traces.
    pub expected_unwatched: f64,
    /// Expected wrong steps the sybils carry at the first decision: the sum of
    /// `P[Bin(n, rho) >= ceil(tau n)]` over those traces.
    pub expected_sybil_decided: f64,
    /// The mean panel size `n` of those wrong steps.
    pub mean_panel: f64,
}

impl Lemma1 {
    /// `rho^n`: the `m = n` term of Lemma 1, a panel of `n` seats with no honest seat.
    pub fn unwatched_rate(rho: f64, n: u32) -> f64 {
        rho.powi(i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// `P[Bin(n, rho) >= q]`: the sybils alone reach a quorum of `q` of `n` seats.
    pub fn sybil_quorum_rate(rho: f64, n: u32, q: u32) -> f64 {
        let mut total = 0.0;
        let mut choose = 1.0_f64; // C(n, m), built up in m.
        for m in 0..=n {
            if m > 0 {
                choose = choose * f64::from(n - m + 1) / f64::from(m);
            }
            if m >= q {
                total += choose
                    * rho.powi(i32::try_from(m).unwrap_or(i32::MAX))
                    * (1.0 - rho).powi(i32::try_from(n - m).unwrap_or(i32::MAX));
            }
        }
        total
    }
}

/// Measurements that explain the invariants.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Diagnostics {
    /// Blocks produced.
    pub blocks: u64,
    /// Transactions applied.
    pub txs_applied: u64,
    /// Transactions refused, by error.
    pub txs_refused: BTreeMap<String, u64>,
    /// Sessions the adversary opened.
    pub adversary_sessions: u64,
    /// Sessions whose seats could not be drawn.
    pub sessions_failed: u64,
    /// Sessions that were not final when the run stopped.
    pub sessions_unfinished: u64,
    /// Sessions whose trace has a known wrong step (at the outcome).
    pub traces_with_wrong_step: u64,
    /// Segment rounds in which the sybils' votes against the truth reached the round's
    /// quorum: the draw gave them the panel.
    pub sybil_decided_segments: u64,
    /// Seats the sybils held in adversary sessions' first rounds, over all such seats,
    /// in ppm (their stake share is below a third).
    pub sybil_seat_share_ppm: u64,
    /// Honest slashes by reason, net of those a later appeal gave back.
    pub honest_slashes_by_reason: BTreeMap<String, u64>,
    /// Slashes (of anyone) a later appeal gave back: the seat had judged the segment the
    /// way the appeal decided it.
    pub slashes_restored: u64,
    /// The outvoted honest seats' refused appeals, by error.
    pub third_party_refusals_by_error: BTreeMap<String, u64>,
    /// Appeals outvoted honest seats filed that were accepted (opened or queued).
    pub seat_appeals: u64,
    /// Honest seats' appeals refused whose segments' verdicts were all right (a seat kept
    /// from judging appeals a Valid verdict it cannot check; rounds others used up on a
    /// right verdict may refuse it): not an invariant, nothing wrong stands.
    pub right_verdict_appeals_refused: u64,
    /// Appeals honest providers filed on their own checks that were accepted.
    pub provider_appeals: u64,
    /// Appealed segments whose verdict an appeal round turned to the other side, by who
    /// filed the appeal (`Honest(..)`: an outvoted seat, `Provider`, `Spammer`,
    /// `Adversary`: its own appeal), counted when the session became final.
    pub overturned_by: BTreeMap<String, u64>,
    /// Known errors honest auditors approved, as their honeypot records hold them at the
    /// end (false honeypots scored against them), and how many providers those records
    /// name: what the rubber-stamp rule reads.
    pub honest_known_error_approvals: u64,
    /// See `honest_known_error_approvals`.
    pub honest_miss_providers: u64,
    /// Honeypots whose seats disputed the provider's truth.
    pub honeypots_disputed: u64,
    /// Sessions that forfeited their honeypot bond (set never opened).
    pub honeypot_sets_forfeited: u64,
    /// Seats paid as starved by their provider (first rounds and appeal rounds).
    pub seats_starved: u64,
    /// Honest seats keyed by a provider that never served their ciphertext: they
    /// abstained once their fetch patience ran out (`withheld-ciphertext`).
    pub unserved_abstentions: u64,
    /// Sessions that waited for admission by capacity (`SessionDeferred`), by block.
    pub deferred_draws: u64,
    /// Blocks whose proposer chose among its own bond and registration transactions
    /// (`draw-grinding`), and of those, the ones where its choice changed a later
    /// draw's seats (a breach: `draw-steered-by-proposer`).
    pub draw_grind_blocks: u64,
    /// Domain-required sessions the adversary opened on a pool its sybils hold at the
    /// floor (those refused while the pool was under it count in `txs_refused`).
    pub domain_pool_sessions: u64,
    /// Re-braced proofs: honest seats that found the document sealed to them was not the
    /// one the segment id commits to.
    pub re_braced_refusals: u64,
    /// Re-braced proofs caught: traces carrying one that did not pass at finality (those
    /// that did count in `wrong_pass_final`, or `wrong_pass_unwatched` when no honest seat
    /// sat on the step).
    pub re_braced_caught: u64,
    /// Segment rounds compared with the shadow contract.
    pub order_checks: u64,
    /// Blocks where a transaction fared differently in the shadow (the shadow was
    /// re-copied).
    pub shadow_resyncs: u64,
    /// Alternative blocks whose next seed the grinding proposer recomputed.
    pub seed_grind_tries: u64,
    /// Of those, how many would have changed the seed of the node's block header
    /// (`BlockHeader::seed` hashes the parent's hash, so the parent's contents and time
    /// enter it): the sim's seed does not follow the node's here.
    pub node_header_seed_changes: u64,
    /// What happened in each session behind a failed invariant (a wrong PASS, a refused
    /// third-party appeal), at most [`MAX_INCIDENTS`] of them, in the order they happened.
    pub incidents: Vec<String>,
    /// The final state root.
    pub state_root: String,
}

/// Most incidents a report describes.
pub const MAX_INCIDENTS: usize = 40;

impl AdversaryReport {
    /// The six invariants, by name, with their counts: each must be 0.
    pub fn invariants(&self) -> [(&'static str, u64); 6] {
        [
            ("honest_slashed", self.honest_slashed),
            ("honest_flagged", self.honest_flagged),
            ("wrong_pass_final", self.wrong_pass_final),
            ("order_dependent", self.order_dependent),
            (
                "third_party_appeals_refused",
                self.third_party_appeals_refused,
            ),
            ("honest_sessions_refused", self.honest_sessions_refused),
        ]
    }

    /// The invariants that failed, each named with its count; empty when the run is clean.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, n) in self.invariants() {
            if n > 0 {
                out.push(format!("{name} is {n}, not 0"));
            }
        }
        for (name, n) in &self.defences_breached {
            if *n > 0 {
                out.push(format!("defence breached: {name} happened {n} times"));
            }
        }
        for (name, n) in &self.attacks {
            if *n == 0 {
                out.push(format!("attack {name} was never tried"));
            }
        }
        if self.diagnostics.sessions_unfinished > 0 {
            out.push(format!(
                "{} sessions were not final when the run stopped",
                self.diagnostics.sessions_unfinished
            ));
        }
        out
    }
}

/// Runs the adversarial simulation (see the module docs) and reports. The same config
/// gives the same report.
pub fn adversaries(cfg: &AdversaryConfig) -> Result<AdversaryReport, SimError> {
    cfg.validate()?;
    let mut w = world::World::new(cfg)?;
    w.run();
    Ok(w.report())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The order check can fail: a shadow that loses the honest reveals (instead of
    /// reordering them) disagrees with the contract on the rounds it closes.
    #[test]
    fn the_order_check_sees_a_shadow_that_differs() {
        let cfg = AdversaryConfig {
            seed: 5,
            sessions: 30,
            ..AdversaryConfig::default()
        };
        let mut w = world::World::new(&cfg).unwrap();
        w.tamper_shadow = true;
        w.run();
        let r = w.report();
        assert!(r.order_dependent > 0, "{:?}", r.diagnostics);
        assert!(
            r.violations()
                .iter()
                .any(|v| v.starts_with("order_dependent"))
        );
        // Untampered, the same run finds none.
        let r = adversaries(&cfg).unwrap();
        assert_eq!(r.order_dependent, 0);
        assert!(r.diagnostics.order_checks > 0);
    }

    #[test]
    fn a_sybil_third_of_the_stake_or_more_is_refused() {
        let cfg = AdversaryConfig {
            sybils_per_tier: 12,
            sybil_stake: 1_000,
            ..AdversaryConfig::default()
        };
        assert!(matches!(cfg.validate(), Err(SimError::Config(m)) if m.contains("under a third")));
        assert!(AdversaryConfig::default().validate().is_ok());
    }
}
