//! The duties task: it follows decided blocks (and, first, what a restart interrupted) and
//! carries out the planner's duties through its handles.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::{Arc, Mutex},
};

use tokio::sync::{Semaphore, broadcast, mpsc};
use tracing::{Instrument, debug, info, warn};
use trust_contracts::Contract;
use trust_protocol::{AccountId, Hash};

use super::{
    plan::{self, Duty, Node, may_commit},
    tip_reaches,
};
use crate::{
    audit::{human::HumanDesk, outbox::Outbox, provider::Provider, seat::Seat},
    consensus::driver::Decided,
    mempool::{Awaited, Pooled, PooledKeys, PooledReveals},
    tasks::{Stop, TaskResult},
    view::{ChainWatch, latest},
};

/// Sessions judged at once by the seats of a node whose judges are all the Computer
/// tier's (each session may wait on blob fetches). Measured with `bench network`, 100
/// sessions of 20 segments on four nodes: at 8, about 2,100 of 6,000 seats missed their
/// commit window waiting for a slot; at 32, 0 and 48 (BENCHMARKS.md, "Batched votes").
pub const MAX_CONCURRENT_JUDGING: usize = 32;
/// The same for a node with an LLM or Human judge, which takes seconds a segment and
/// whose endpoint or person must not be flooded.
pub const MAX_CONCURRENT_SLOW_JUDGING: usize = 8;

/// What the duties task works with.
#[derive(Debug)]
pub struct Config {
    /// This node's account.
    pub me: AccountId,
    /// The chain view (read only).
    pub chain: ChainWatch,
    /// Decided blocks, as the consensus driver announces them (votes under way watch
    /// them for their window closing).
    pub decided: broadcast::Sender<Decided>,
    /// The duties' own subscription, taken before the driver starts so that no block is
    /// missed while the node assembles.
    pub blocks: broadcast::Receiver<Decided>,
    /// What the mempool admits that these duties may act on before a block decides it:
    /// key deliveries to this node's seats, reveals its provider awaits
    /// ([`crate::mempool::PoolTask::watch`]).
    pub pooled: mpsc::Receiver<Pooled>,
    /// The sessions whose first round's reveals this node's provider awaits in the pool
    /// (these duties are its one writer; the mempool reads it).
    pub awaiting: tokio::sync::watch::Sender<Awaited>,
    /// This node's own transactions.
    pub outbox: Outbox,
    /// The provider's sessions.
    pub provider: Arc<Provider>,
    /// The seats this node holds.
    pub seat: Arc<Seat>,
    /// The person's desk, on a node with Human seats.
    pub desk: Option<HumanDesk>,
    /// Set when the node was told to stop and drains ([`Draining`]).
    pub draining: Draining,
}

/// What a stopping node still serves: `None` while it runs; once it was told to stop, the
/// seats that owed a vote then ([`plan::owed`]). A draining node judges only sessions
/// where it holds one of those, and takes no new seats: a seat drawn after the signal is
/// left for after a restart (its commit window may still be open then).
pub type Draining =
    tokio::sync::watch::Receiver<Option<Arc<std::collections::BTreeSet<plan::SeatId>>>>;

/// The duties task's state: its handles and the votes under way.
pub struct Duties {
    cfg: Config,
    slots: Arc<Semaphore>,
    votes: tokio::task::JoinSet<()>,
    voting: Voting,
    /// The pooled reveals of each awaited session, by (seat, segment), the latest kept.
    reveals: BTreeMap<Hash, BTreeMap<(AccountId, u16), trust_protocol::tx::Call>>,
    /// Keys pooled for a session this node's chain view has not seen drawn yet (the
    /// provider read the draw a block ahead of it): tried again after the next block.
    early_keys: Vec<PooledKeys>,
}

/// Most pooled key deliveries kept for a draw this node has not seen yet.
const MAX_EARLY_KEYS: usize = 64;

/// The sessions with a vote under way, each with whether it was asked for again while it
/// ran (then it runs once more as it ends, for keys that came meanwhile): one vote per
/// session at a time, so a session asked for by its pooled keys and again by their block
/// is judged once.
type Voting = Arc<Mutex<BTreeMap<Hash, bool>>>;

/// A session's place in [`Voting`], given up when its vote ends (or is abandoned).
struct Running {
    voting: Voting,
    session: Hash,
}

impl Running {
    /// Whether the vote must run once more: it was asked for again while it ran.
    fn again(&self) -> bool {
        let mut v = self.voting.lock().unwrap_or_else(|e| e.into_inner());
        v.get_mut(&self.session)
            .map(std::mem::take)
            .unwrap_or(false)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.voting
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.session);
    }
}

impl std::fmt::Debug for Duties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Duties")
            .field("me", &self.cfg.me)
            .field("votes", &self.votes.len())
            .finish_non_exhaustive()
    }
}

impl Duties {
    /// The task.
    pub fn new(cfg: Config) -> Self {
        let slots = if cfg.seat.judges_only_computer() {
            MAX_CONCURRENT_JUDGING
        } else {
            MAX_CONCURRENT_SLOW_JUDGING
        };
        Duties {
            cfg,
            slots: Arc::new(Semaphore::new(slots)),
            votes: tokio::task::JoinSet::new(),
            voting: Arc::default(),
            reveals: BTreeMap::new(),
            early_keys: Vec::new(),
        }
    }

    /// Resumes what a restart interrupted, then follows decided blocks until `stop`. A
    /// block's duties are cut short by a stop: what they had done is on record (the vote
    /// book and the provider's book are written before anything is sent), and a restart
    /// resumes the rest.
    pub async fn run(mut self, mut stop: Stop) -> TaskResult {
        if let Some(desk) = &self.cfg.desk {
            // Deadlines count from the restored tip, before any seat waits.
            desk.on_block(latest(&self.cfg.chain).tip.height, &[]);
        }
        let resume = async {
            let contract = latest(&self.cfg.chain).contract.clone();
            let duties = plan::resume(&self.cfg.me, contract.state());
            self.carry_out(duties, &contract, &[]).await;
        };
        tokio::select! {
            biased;
            () = stop.wait() => return Ok(()),
            () = resume => {}
        }
        loop {
            let d = tokio::select! {
                biased;
                () = stop.wait() => return Ok(()),
                d = self.cfg.blocks.recv() => d,
                Some(pooled) = self.cfg.pooled.recv() => {
                    match pooled {
                        Pooled::Keys(keys) => self.pooled(&keys, true).await,
                        Pooled::Reveals(reveals) => self.pooled_reveals(reveals).await,
                    }
                    continue;
                }
            };
            let d = match d {
                Ok(d) => d,
                Err(broadcast::error::RecvError::Lagged(n)) => {
                    warn!(
                        skipped = n,
                        "audit duties fell behind the chain; some blocks' events were skipped"
                    );
                    continue;
                }
                Err(broadcast::error::RecvError::Closed) => {
                    return Err("the consensus driver no longer announces blocks".into());
                }
            };
            let step = async {
                let contract = latest(&self.cfg.chain).contract.clone();
                let stuck = self.cfg.seat.stuck_unvoted();
                let provided = self.cfg.provider.sessions();
                let node = Node {
                    me: self.cfg.me,
                    desk: self.cfg.desk.is_some(),
                    provided: &provided,
                    stuck: &stuck,
                    copies: self.cfg.seat.copies(),
                };
                let duties = plan::plan(&node, contract.state(), d.block.header.height, &d.events);
                self.carry_out(duties, &contract, &d.events).await;
                for keys in std::mem::take(&mut self.early_keys) {
                    self.pooled(&keys, false).await;
                }
                self.await_reveals(&contract, &provided).await;
            };
            tokio::select! {
                biased;
                () = stop.wait() => return Ok(()),
                () = step => {}
            }
        }
    }

    /// Carries out `duties` in order; `events` are the block's (the human desk reads them).
    async fn carry_out(
        &mut self,
        duties: Vec<Duty>,
        contract: &Arc<Contract>,
        events: &[trust_contracts::Event],
    ) {
        // Votes that ended are reaped here, so the set holds only those running.
        while self.votes.try_join_next().is_some() {}
        // The block's reveals, of every session whose window closed, go out together at
        // the first one's place.
        let mut reveals: Vec<(Hash, u8)> = duties
            .iter()
            .filter_map(|d| match d {
                Duty::Reveal { session, round } => Some((*session, *round)),
                _ => None,
            })
            .collect();
        for duty in duties {
            match duty {
                Duty::Reveal { .. } => {
                    let closed = std::mem::take(&mut reveals);
                    self.cfg.seat.close_rounds(&closed, contract).await;
                }
                Duty::Flush => {
                    let released = self.cfg.outbox.flush().await;
                    if released > 0 {
                        let left = self.cfg.outbox.backlog_len().await;
                        debug!(released, left, "queued own transactions pooled");
                    }
                }
                Duty::Desk { height } => {
                    if let Some(desk) = &self.cfg.desk {
                        desk.on_block(height, events);
                    }
                }
                Duty::ResumeProvider => self.cfg.provider.resume(contract).await,
                Duty::Provider(d) => {
                    crate::cpu::Measured::new(
                        crate::cpu::Part::Provider,
                        self.cfg.provider.perform(&d, contract),
                    )
                    .await;
                }
                Duty::Judge { session } => self.judge(contract, session).await,
                seat_duty => self.cfg.seat.perform(&seat_duty, contract).await,
            }
        }
    }

    /// Keys pooled for this node's seats: those that open are kept and their session is
    /// judged now, so that its commitments can land in the block that decides the keys
    /// ([`Seat::take_pooled_keys`] says why nothing pooled counts against anyone).
    ///
    /// Keys for a session this node has not seen drawn yet are kept (when `keep`) and
    /// tried once more after the next block.
    async fn pooled(&mut self, keys: &PooledKeys, keep: bool) {
        let contract = latest(&self.cfg.chain).contract.clone();
        let undrawn = contract
            .state()
            .sessions
            .get(&keys.session)
            .is_none_or(|s| matches!(s.phase, trust_contracts::Phase::Assigning));
        if undrawn {
            if keep && self.early_keys.len() < MAX_EARLY_KEYS && !self.early_keys.contains(keys) {
                self.early_keys.push(keys.clone());
            }
            return;
        }
        if self.cfg.seat.take_pooled_keys(contract.state(), keys) {
            debug!(session = %keys.session, "judging on pooled keys");
            while self.votes.try_join_next().is_some() {}
            self.judge(&contract, keys.session).await;
        }
    }

    /// After a block: which of this node's sessions now await their first round's last
    /// reveals in the pool (in that round, from its draw, so that no reveal pooled as its
    /// commit window closes is missed, with honeypots not yet sent),
    /// published for the mempool; the pooled reveals of the others are dropped. A
    /// session those already pooled (and this block) settle opens at once.
    async fn await_reveals(&mut self, contract: &Arc<Contract>, provided: &BTreeSet<Hash>) {
        let state = contract.state();
        let awaited: BTreeSet<Hash> = provided
            .iter()
            .filter(|id| {
                state.sessions.get(*id).is_some_and(|s| {
                    matches!(
                        s.phase,
                        trust_contracts::Phase::Commit { round: 0, .. }
                            | trust_contracts::Phase::Reveal { round: 0, .. }
                    ) && !s.honeypots_opened
                })
            })
            .filter(|id| self.cfg.provider.awaits_reveals(id))
            .copied()
            .collect();
        self.reveals.retain(|id, _| awaited.contains(id));
        let changed = **self.cfg.awaiting.borrow() != awaited;
        if changed {
            self.cfg.awaiting.send_replace(Arc::new(awaited.clone()));
        }
        for session in awaited {
            self.open_if_settled(contract, &session).await;
        }
    }

    /// Reveals pooled in sessions this node's provider awaits them in.
    async fn pooled_reveals(&mut self, pooled: PooledReveals) {
        let awaited = self.cfg.awaiting.borrow().clone();
        let mut touched = BTreeSet::new();
        for call in pooled.reveals {
            if let trust_protocol::tx::Call::Reveal {
                session, segment, ..
            } = &call
                && awaited.contains(session)
            {
                touched.insert(*session);
                self.reveals
                    .entry(*session)
                    .or_default()
                    .insert((pooled.seat, *segment), call);
            }
        }
        let contract = latest(&self.cfg.chain).contract.clone();
        for session in touched {
            self.open_if_settled(&contract, &session).await;
        }
    }

    /// Opens `session`'s honeypots (and mapping) now if the reveals on record and those
    /// pooled settle its first round ([`trust_contracts::settles_with`]); then it awaits
    /// nothing more.
    async fn open_if_settled(&mut self, contract: &Arc<Contract>, session: &Hash) {
        let Some(s) = contract.state().sessions.get(session) else {
            return;
        };
        let pooled = self.reveals.get(session);
        let reveals = pooled
            .into_iter()
            .flat_map(|m| m.iter().map(|((seat, _), call)| (*seat, call)));
        if !trust_contracts::settles_with(s, session, reveals) {
            return;
        }
        crate::cpu::Measured::new(
            crate::cpu::Part::Provider,
            self.cfg.provider.open_early(session),
        )
        .await;
        self.reveals.remove(session);
        let mut awaited = (**self.cfg.awaiting.borrow()).clone();
        if awaited.remove(session) {
            self.cfg.awaiting.send_replace(Arc::new(awaited));
        }
    }

    /// Whether our seats in `session` may still commit at the node's current tip.
    fn open(&self, session: &Hash) -> bool {
        may_commit(
            latest(&self.cfg.chain).contract.state(),
            &self.cfg.me,
            session,
        )
    }

    /// Judges `session` beside the block loop, at most [`MAX_CONCURRENT_JUDGING`] sessions
    /// at once ([`MAX_CONCURRENT_SLOW_JUDGING`] with an LLM or Human judge). A session whose
    /// commit window for our seats has passed is not judged, and a vote under way is
    /// abandoned as soon as a block closes it: after a restart the node replays blocks
    /// whose sessions are long decided (their ciphertexts gone), and a fetch that can only
    /// time out must not hold a judging slot while live sessions wait.
    ///
    /// The judging slot is waited for inside the vote's own task, never here: the block
    /// loop goes on to the next block's reveals and key deliveries. A vote that is still
    /// waiting for a slot when its seats give up ([`plan::gives_up`]) runs without one,
    /// as a *delayed* vote: its seats judge what this node holds and abstain at once on
    /// what would need a fetch ([`Seat::vote_by`]), so that the abstentions go out in the
    /// give-up block and land in the window rather than after it.
    async fn judge(&mut self, contract: &Arc<Contract>, session: Hash) {
        if !self.open(&session) {
            debug!(%session, "not judged: this node's seats can no longer commit in it");
            return;
        }
        let held = self.cfg.draining.borrow().clone();
        if let Some(held) = held
            && !held.iter().any(|(s, _, _)| *s == session)
        {
            info!(%session, "not judged: drawn while the node drains to stop; a restart within its commit window judges it");
            return;
        }
        {
            let mut voting = self.voting.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(again) = voting.get_mut(&session) {
                debug!(%session, "a vote is under way: it runs once more as it ends");
                *again = true;
                return;
            }
            voting.insert(session, false);
        }
        let running = Running {
            voting: self.voting.clone(),
            session,
        };
        let (seat, chain, me, slots) = (
            self.cfg.seat.clone(),
            self.cfg.chain.clone(),
            self.cfg.me,
            self.slots.clone(),
        );
        let tip = tip_reaches(&chain);
        let view = chain.clone();
        let give_up_at = match contract.state().sessions.get(&session).map(|s| s.phase) {
            Some(trust_contracts::Phase::Commit { until, .. }) => {
                until.saturating_sub(plan::GIVE_UP_BLOCKS)
            }
            _ => contract.state().height,
        };
        let mut blocks = self.cfg.decided.subscribe();
        let closed = async move {
            loop {
                match blocks.recv().await {
                    Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {
                        if !may_commit(latest(&chain).contract.state(), &me, &session) {
                            return;
                        }
                    }
                    Err(broadcast::error::RecvError::Closed) => {
                        std::future::pending::<()>().await;
                    }
                }
            }
        };
        self.votes.spawn(crate::cpu::Measured::new(
            crate::cpu::Part::Seats,
            async move {
                let vote = async {
                    let (permit, waited) = match slots.clone().try_acquire_owned() {
                        Ok(p) => (Some(p), false),
                        Err(_) => {
                            let p = tokio::select! {
                                biased;
                                p = slots.acquire_owned() => p.ok(),
                                () = tip(give_up_at) => {
                                    debug!("judged without a slot: the seats give up at this block");
                                    None
                                }
                            };
                            (p, true)
                        }
                    };
                    loop {
                        // The chain may have moved on while the vote waited for its slot.
                        let contract = latest(&view).contract.clone();
                        if may_commit(contract.state(), &me, &session) {
                            // Waited until its give-up block: no block more to read in.
                            let delayed = waited && contract.state().height >= give_up_at;
                            seat.vote_by(&session, &contract, Some(&tip), delayed).await;
                        }
                        if !running.again() {
                            break;
                        }
                    }
                    drop(permit);
                };
                tokio::select! {
                    () = vote => {}
                    () = closed => debug!("abandoned: the commit window closed first"),
                }
                drop(running);
            }
            .instrument(tracing::debug_span!("vote", %session)),
        ));
    }
}
