//! What the operator of an auditor node must hear about its own account: every slash, at
//! WARN with its reason and session, every seat that ended without its vote, a
//! deactivation, a pause taking effect; and, at `/metrics`, the account's stake,
//! reputation and standing as gauges beside counters of the slashes and missed seats seen
//! since the node started.
//!
//! The `alerts` task follows decided blocks on its own subscription; it writes nothing but
//! its counters and the log.

use std::sync::{
    Arc,
    atomic::{AtomicU64, Ordering},
};

use tokio::sync::broadcast;
use tracing::{info, warn};
use trust_contracts::{Event, SlashReason, State};
use trust_protocol::{AccountId, Hash};

use crate::{
    consensus::driver::Decided,
    tasks::{Stop, TaskResult},
    view::{ChainWatch, latest},
};

/// The reasons a slash is counted under, in `/metrics` label order.
const REASONS: [(SlashReason, &str); 4] = [
    (SlashReason::WrongVote, "wrong_vote"),
    (SlashReason::NoShow, "no_show"),
    (SlashReason::RubberStamp, "rubber_stamp"),
    (SlashReason::Incoherent, "incoherent"),
];

/// This node's account as its operator watches it.
#[derive(Debug)]
pub struct Alerts {
    me: AccountId,
    chain: ChainWatch,
    /// Slashes seen since start, per [`REASONS`] entry.
    slashes: [AtomicU64; 4],
    /// Stake slashed since start.
    slashed: AtomicU64,
    /// Seats whose round ended without their vote (keyed seats only: a starved seat is the
    /// provider's doing).
    missed: AtomicU64,
}

impl Alerts {
    /// Alerts about `me`, reading the chain view for the gauges.
    pub fn new(me: AccountId, chain: ChainWatch) -> Self {
        Self {
            me,
            chain,
            slashes: Default::default(),
            slashed: AtomicU64::new(0),
            missed: AtomicU64::new(0),
        }
    }

    /// Logs and counts what a block's `events` did to this node's account; `state` is the
    /// state after the block.
    pub fn on_block(&self, state: &State, events: &[Event]) {
        for e in events {
            match e {
                Event::Slashed {
                    session,
                    seat,
                    amount,
                    reason,
                } if *seat == self.me => {
                    if let Some(c) = REASONS
                        .iter()
                        .position(|(r, _)| r == reason)
                        .and_then(|i| self.slashes.get(i))
                    {
                        c.fetch_add(1, Ordering::Relaxed);
                    }
                    self.slashed.fetch_add(*amount, Ordering::Relaxed);
                    let stake = state.accounts.get(&self.me).map_or(0, |a| a.stake);
                    warn!(%session, amount, reason = slash_words(*reason), stake, "this node's auditor account was slashed");
                }
                Event::AuditorDeactivated { account, reason } if *account == self.me => {
                    warn!(reason, "this node's auditor account can no longer be drawn");
                }
                Event::PauseChanged { account, paused } if *account == self.me => {
                    info!(
                        paused,
                        "this node's auditor account is {} from this block",
                        if *paused {
                            "paused: not drawn for new seats"
                        } else {
                            "drawn again"
                        }
                    );
                }
                Event::RevealWindowClosed { session, round } => {
                    let missed = missed_seats(state, &self.me, session, *round);
                    if missed > 0 {
                        self.missed.fetch_add(missed, Ordering::Relaxed);
                        warn!(%session, round, seats = missed, "seats of this node ended without its vote landing in time (a no-show: slashable, reputation down)");
                    }
                }
                _ => {}
            }
        }
    }

    /// The `alerts` task: follows decided blocks until `stop`.
    pub async fn run(
        self: Arc<Self>,
        mut blocks: broadcast::Receiver<Decided>,
        mut stop: Stop,
    ) -> TaskResult {
        loop {
            let d = tokio::select! {
                biased;
                () = stop.wait() => return Ok(()),
                d = blocks.recv() => d,
            };
            match d {
                Ok(d) => self.on_block(latest(&self.chain).contract.state(), &d.events),
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    warn!(
                        skipped = n,
                        "alerts fell behind the chain; some blocks' events were not read"
                    );
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return Err("the consensus driver no longer announces blocks".into());
                }
            }
        }
    }
}

/// How a slash reason reads in the log.
fn slash_words(r: SlashReason) -> &'static str {
    match r {
        SlashReason::WrongVote => "a counted vote disagreed with the verdict",
        SlashReason::NoShow => "a seat never committed, or committed and never revealed",
        SlashReason::RubberStamp => "flagged as a rubber-stamper by its honeypot record",
        SlashReason::Incoherent => "voted with a majority an appeal overturned",
    }
}

/// `me`'s keyed seats of `round` in `session` without a revealed vote.
fn missed_seats(state: &State, me: &AccountId, session: &Hash, round: u8) -> u64 {
    let Some(s) = state
        .sessions
        .get(session)
        .or_else(|| state.appealable.get(session))
    else {
        return 0;
    };
    let n = s
        .segments
        .iter()
        .flat_map(|g| {
            let deps = g.entry.depends_on.len();
            g.seats.iter().filter(move |x| {
                x.account == *me && x.round == round && x.vote.is_none() && x.keyed(deps)
            })
        })
        .count();
    u64::try_from(n).unwrap_or(u64::MAX)
}

impl crate::metrics::MetricsSource for Alerts {
    fn render(&self, out: &mut String) {
        use std::fmt::Write as _;
        let chain = latest(&self.chain);
        let st = chain.contract.state();
        let stake = st.accounts.get(&self.me).map_or(0, |a| a.stake);
        let auditor = st.auditors.get(&self.me);
        let gauge = |out: &mut String, name: &str, help: &str, v: f64| {
            let _ = write!(
                out,
                "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}\n"
            );
        };
        gauge(
            out,
            "trust_auditor_stake",
            "This node's bonded stake.",
            stake as f64,
        );
        if let Some(a) = auditor {
            gauge(
                out,
                "trust_auditor_reputation",
                "This node's auditor reputation, 0 to 1.",
                f64::from(a.reputation.0) / 1e6,
            );
            gauge(
                out,
                "trust_auditor_drawable",
                "1 when this node's auditor account can be drawn for new seats.",
                f64::from(u8::from(st.eligible(a.tier).contains(&self.me))),
            );
            gauge(
                out,
                "trust_auditor_paused",
                "1 when this node's auditor account is paused.",
                f64::from(u8::from(a.paused)),
            );
            gauge(
                out,
                "trust_auditor_slashed_tokens",
                "Stake slashed from this node's auditor account, in all.",
                a.slashed as f64,
            );
        }
        let _ = writeln!(
            out,
            "# HELP trust_auditor_slashes_total Slashes of this node's auditor account seen since the node started, by reason.\n# TYPE trust_auditor_slashes_total counter"
        );
        for ((_, label), c) in REASONS.iter().zip(&self.slashes) {
            let _ = writeln!(
                out,
                "trust_auditor_slashes_total{{reason=\"{label}\"}} {}",
                c.load(Ordering::Relaxed)
            );
        }
        let _ = write!(
            out,
            "# HELP trust_auditor_slashed_since_start_total Stake slashed since the node started.\n# TYPE trust_auditor_slashed_since_start_total counter\ntrust_auditor_slashed_since_start_total {}\n# HELP trust_auditor_missed_seats_total Seats of this node whose round ended without its vote, since the node started.\n# TYPE trust_auditor_missed_seats_total counter\ntrust_auditor_missed_seats_total {}\n",
            self.slashed.load(Ordering::Relaxed),
            self.missed.load(Ordering::Relaxed)
        );
    }
}
