//! The appellant experiment: do appeals pay those who are right and cost those who guess?
//!
//! Sessions run as in any simulation, under a population with enough malicious seats that
//! some segments are decided wrongly. Two appellants watch every decided session (the
//! simulator knows the ground truth, as an appellant who checked the work would):
//! - the **right** appellant appeals exactly the segments whose own verdict contradicts
//!   the truth (Valid vs not Valid), when there are any;
//! - the **random** appellant, on a share [`AppealExperiment::random_rate`] of the decided
//!   sessions (which the right appellant then leaves alone: one appeal per session at a
//!   time), appeals one decided segment picked at random.
//!
//! Both start with the same balance (funded by a provider in block 1) and their profit is
//! their balance at the end minus it: bonds lost, bonds back, rewards. The contract sees
//! nothing but their signed `Appeal` transactions.

use rand::Rng;
use serde::Serialize;
use trust_protocol::{
    Hash, Keypair,
    tx::{Call, QuorumParams, Tier},
    units::Ppm,
};

use super::{Population, Sim, SimConfig, SimError, Strategy, seed_key};
use crate::{AppealResult, LocalVerdict};

/// Settings of [`appeal_experiment`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppealExperiment {
    /// The simulation the appellants watch.
    pub sim: SimConfig,
    /// Share of decided sessions the random appellant appeals (one random decided segment
    /// each).
    pub random_rate: Ppm,
    /// Balance each appellant starts with.
    pub funds: u64,
}

impl Default for AppealExperiment {
    /// 300 sessions of 2-6 segments judged by 3 LLM or Human seats each (`tau = 0.6`, so
    /// 2 of 3 decide), where 5 of 19 auditors per tier vote the wrong way: about one
    /// segment in six is decided wrongly. Appeals draw 7 fresh seats. No honeypots, so
    /// that every segment is one an appellant may appeal.
    fn default() -> Self {
        let p = |tier, strategy, count| Population {
            tier,
            strategy,
            count,
        };
        Self {
            sim: SimConfig {
                sessions: 300,
                sessions_per_block: 2,
                population: vec![
                    p(Tier::Llm, Strategy::Honest, 14),
                    p(Tier::Llm, Strategy::Malicious, 5),
                ],
                human_share: Ppm::ZERO,
                honeypot_rate: Ppm::ZERO,
                quorum: QuorumParams {
                    k: [3, 3, 3],
                    extra_seats: 0,
                    tau: Ppm(600_000),
                    beta: Ppm(800_000),
                },
                ..SimConfig::default()
            },
            random_rate: Ppm(400_000),
            funds: 1_000_000,
        }
    }
}

/// What one appellant did and earned.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct AppellantSummary {
    /// `right` or `random`.
    pub name: String,
    /// Appeals the contract accepted.
    pub appeals: u64,
    /// Segments appealed in them.
    pub segments: u64,
    /// Of those, overturned.
    pub overturned: u64,
    /// Upheld.
    pub upheld: u64,
    /// Undecided by the appeal seats.
    pub undecided: u64,
    /// Bonds escrowed in total.
    pub bonds: u64,
    /// Paid back in total (bonds returned and rewards).
    pub returned: u64,
    /// Balance at the end minus balance at the start.
    pub profit: i64,
}

/// The result of [`appeal_experiment`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AppealReport {
    /// Sessions decided.
    pub sessions_decided: u64,
    /// Segments whose first verdict contradicted the truth.
    pub wrongly_decided: u64,
    /// Of those, how many an appeal corrected.
    pub corrected: u64,
    /// The appellant who appeals exactly the wrong verdicts.
    pub right: AppellantSummary,
    /// The appellant who appeals at random.
    pub random: AppellantSummary,
    /// Blocks simulated.
    pub blocks: u64,
    /// The final state root.
    pub state_root: String,
}

/// The two appellants of an experiment.
pub(crate) struct Appellants {
    keys: [Keypair; 2],
    random_rate: Ppm,
    wrongly_decided: u64,
}

impl Appellants {
    /// Key `j` (0 right, 1 random).
    pub(crate) fn key(&self, j: usize) -> Option<&Keypair> {
        self.keys.get(j)
    }
}

impl Sim {
    /// Sender index of appellant `j` in the queue (after the agents and providers).
    fn appellant_sender(&self, j: usize) -> usize {
        self.agents.len() + self.providers.len() + j
    }

    /// A session was just decided: the appellants look at it.
    pub(super) fn plan_appeal(&mut self, session: Hash) {
        let Some(a) = &self.appeal else { return };
        let random_rate = a.random_rate;
        let (Some(s), Some(t)) = (
            self.contract.state().appealable.get(&session),
            self.truths.get(&session),
        ) else {
            return;
        };
        let mut decided = Vec::new();
        let mut wrong = Vec::new();
        for (i, g) in s.segments.iter().enumerate() {
            let own = g.rounds.last().copied().unwrap_or(LocalVerdict::Undecided);
            if g.honeypot.is_some() || own == LocalVerdict::Undecided {
                continue;
            }
            decided.push(i as u16);
            if (own == LocalVerdict::Valid) != t.correct.get(i).copied().unwrap_or(true) {
                wrong.push(i as u16);
            }
        }
        let wrongs = wrong.len() as u64;
        if let Some(a) = &mut self.appeal {
            a.wrongly_decided += wrongs;
        }
        let random = self.rng.gen_range(0..1_000_000) < random_rate.0;
        let (j, segments) = if random {
            if decided.is_empty() {
                return;
            }
            let pick = decided[self.rng.gen_range(0..decided.len())];
            (1, vec![pick])
        } else if !wrong.is_empty() {
            (0, wrong)
        } else {
            return;
        };
        let sender = self.appellant_sender(j);
        self.queue
            .push((sender, Call::Appeal { session, segments }));
    }
}

/// Runs the appellant experiment (see the module docs): a seeded simulation whose decided
/// sessions a right and a random appellant appeal, and each one's net profit. The same
/// settings give the same report.
pub fn appeal_experiment(cfg: &AppealExperiment) -> Result<AppealReport, SimError> {
    let mut sim = Sim::new(cfg.sim.clone())?;
    let keys = [
        seed_key(cfg.sim.seed, "appellant-right", 0),
        seed_key(cfg.sim.seed, "appellant-random", 0),
    ];
    let ids = [keys[0].public(), keys[1].public()];
    for id in ids {
        let funder = sim.agents.len();
        sim.queue.push((
            funder,
            Call::Transfer {
                to: id,
                amount: cfg.funds,
            },
        ));
    }
    sim.appeal = Some(Appellants {
        keys,
        random_rate: cfg.random_rate,
        wrongly_decided: 0,
    });
    let p = &cfg.sim.params;
    let round = 2 + p.commit_window + p.reveal_window;
    let per_session = 2 * round
        + p.disclose_window
        + (u64::from(p.max_appeal_rounds) + 1) * (p.appeal_window + round + 2)
        + 10;
    let opening = u64::from(cfg.sim.sessions.div_ceil(cfg.sim.sessions_per_block));
    let limit = opening + per_session + 10;
    while sim.height < limit {
        sim.step();
        let st = sim.contract.state();
        if sim.opened >= cfg.sim.sessions && st.sessions.is_empty() && st.appealable.is_empty() {
            break;
        }
    }

    let st = sim.contract.state();
    let mut out = [
        AppellantSummary {
            name: "right".into(),
            ..AppellantSummary::default()
        },
        AppellantSummary {
            name: "random".into(),
            ..AppellantSummary::default()
        },
    ];
    let mut corrected = 0u64;
    for o in st.outcomes.values() {
        for r in &o.appeals.rounds {
            let Some(j) = ids.iter().position(|id| *id == r.appellant) else {
                continue;
            };
            let s = &mut out[j];
            s.appeals += 1;
            s.bonds += r.bond;
            for a in &r.segments {
                s.segments += 1;
                s.returned += a.refunded;
                match a.result {
                    AppealResult::Overturned => s.overturned += 1,
                    AppealResult::Upheld => s.upheld += 1,
                    AppealResult::Undecided | AppealResult::Starved => s.undecided += 1,
                }
                if j == 0 && a.result == AppealResult::Overturned {
                    corrected += 1;
                }
            }
        }
    }
    for (s, id) in out.iter_mut().zip(ids) {
        let balance = st.accounts.get(&id).map_or(0, |a| a.balance);
        s.profit = balance as i64 - cfg.funds as i64;
    }
    let [right, random] = out;
    Ok(AppealReport {
        sessions_decided: sim.decided.len() as u64,
        wrongly_decided: sim.appeal.as_ref().map_or(0, |a| a.wrongly_decided),
        corrected,
        right,
        random,
        blocks: sim.height,
        state_root: sim.contract.state_root().to_hex(),
    })
}
