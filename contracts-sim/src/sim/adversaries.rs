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
//! key every seat in time and open their honeypots. An honest *watcher* (a third party that
//! checked the work) appeals every segment whose own verdict contradicts the truth, as soon
//! as it may.
//!
//! The adversary is one party with several hands: a provider (two keys) whose traces carry
//! a known wrong step, the sybil auditors (who approve its wrong steps and side with its
//! honeypot claims, and judge the truth everywhere else), three funded *spammer* accounts,
//! and a colluding proposer that proposes every third block. What each hand tries is listed
//! by name in [`AdversaryReport::attacks`]; see `behave.rs` for how each is mounted.
//!
//! # The chain
//!
//! Blocks are produced one by one: `begin_block`, the queued transactions signed with
//! their senders' current nonces and applied in the block's order, `end_block`. The seed
//! of block `h` (the contract's [`crate::BlockCtx::block_hash`]) is
//! `H(sim seed, h, seed of h - 1)`: a chain that no block's contents enter, as a VRF output
//! over the chain and height would be. The order of a block is a seeded shuffle that keeps
//! each sender's transactions in the order it queued them; the colluding proposer instead
//! puts the sybils' reveals first (or last, alternately) and, before it seals a block that
//! opens an adversary session, recomputes the next block's seed under other transaction
//! sets, orders and times, checking that it never changes.
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
    /// Network parameters (the network's defaults, floors included, unless set).
    pub params: Params,
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
            params: super::sim_params(),
        }
    }
}

impl AdversaryConfig {
    /// Checks the settings: sybils strictly under a third of each tier's stake, and every
    /// count the run needs positive.
    pub fn validate(&self) -> Result<(), SimError> {
        let honest = u128::from(self.honest_per_tier) * u128::from(self.honest_stake);
        let sybil = u128::from(self.sybils_per_tier) * u128::from(self.sybil_stake);
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
            || self.sybil_stake < p.min_stake.iter().copied().max().unwrap_or(0)
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
        if self.honest_per_tier + self.sybils_per_tier < need {
            return Err(SimError::Config(format!(
                "{} auditors per tier cannot staff a panel of {panel} and two appeals of {appeal}: at least {need} are needed",
                self.honest_per_tier + self.sybils_per_tier
            )));
        }
        p.validate()?;
        Ok(())
    }
}

/// What an adversarial run found. Every count is over the whole run.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
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
    /// Traces with a known wrong step (a segment of the trace, not an opened honeypot,
    /// whose truth is not Valid) whose final trace verdict is Pass.
    pub wrong_pass: u64,
    /// Segments whose verdict in a round changed when the round's reveals were applied in
    /// another order (the shadow contract).
    pub order_dependent: u64,
    /// Appeals by the honest watcher (not the provider), within the window and with the
    /// bond, that the contract refused.
    pub third_party_appeals_refused: u64,
    /// Over sessions, blocks from the one that opened the session to its `SessionFinal`.
    pub max_blocks_to_final: u64,
    /// How many times each attack was tried.
    pub attacks: BTreeMap<String, u64>,
    /// Attacks the contract should have refused and did not, by name (each should be 0).
    pub defences_breached: BTreeMap<String, u64>,
    /// What else the run measured.
    pub diagnostics: Diagnostics,
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
    /// Of those, how many passed at their first decision (before any appeal).
    pub wrong_pass_at_decision: u64,
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
    /// The watcher's refused appeals, by error.
    pub third_party_refusals_by_error: BTreeMap<String, u64>,
    /// Appeals the watcher filed that were accepted (opened or queued).
    pub watcher_appeals: u64,
    /// Appealed segments whose verdict an appeal round turned to the other side, by who
    /// filed the appeal (`Watcher`, `Spammer`, `Adversary`: its own appeal), counted when
    /// the session became final.
    pub overturned_by: BTreeMap<String, u64>,
    /// Honeypots whose seats disputed the provider's truth.
    pub honeypots_disputed: u64,
    /// Sessions that forfeited their honeypot bond (set never opened).
    pub honeypot_sets_forfeited: u64,
    /// Seats paid as starved by their provider (first rounds and appeal rounds).
    pub seats_starved: u64,
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
    /// The invariants that failed, each named with its count; empty when the run is clean.
    pub fn violations(&self) -> Vec<String> {
        let mut out = Vec::new();
        for (name, n) in [
            ("honest_slashed", self.honest_slashed),
            ("wrong_pass", self.wrong_pass),
            ("order_dependent", self.order_dependent),
            (
                "third_party_appeals_refused",
                self.third_party_appeals_refused,
            ),
        ] {
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
