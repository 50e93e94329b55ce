//! The seat's one sender of votes: commitments and openings of every session this node
//! sits in go out together, one transaction (one signature, one nonce) for up to
//! [`MAX_BATCH_VOTES`] of them, however many sessions they span ([`Call::batch`]).
//!
//! Votes are handed over as they are ready (a finished judgement's commitments, a block's
//! openings) and wait in one list. Each hand-over starts a *turn*; turns run one at a
//! time, and a turn sends everything waiting when it begins. So an idle node's vote goes
//! out at once, and what a busy node hands over while a transaction is being signed and
//! pooled goes out together in the next one: the busier the node, the fuller its
//! transactions.
//!
//! A turn runs as a task of its own. The vote that started it may be abandoned while it
//! waits (its session's window closed), but what the turn took from the list includes
//! other sessions' votes, such as a block's openings: it is sent all the same.

use std::{
    collections::BTreeSet,
    sync::{
        Arc,
        atomic::{AtomicU64, Ordering},
    },
};

use tracing::Instrument;
use trust_protocol::{
    Commitment, Hash,
    tx::{Call, MAX_BATCH_VOTES},
};

use super::{
    outbox::{Outbox, Sent},
    seat_metrics::SeatMetrics,
    votes::{VoteBook, VoteRecord},
};

/// A vote on its way out: a commitment (with the record it commits to) or an opening.
#[derive(Debug)]
pub(crate) enum Outgoing {
    Commit(VoteRecord, Commitment),
    Reveal(VoteRecord),
}

impl Outgoing {
    fn record(&self) -> &VoteRecord {
        match self {
            Outgoing::Commit(r, _) | Outgoing::Reveal(r) => r,
        }
    }

    /// What a batch may name once: (opening?, session, segment).
    fn seat(&self) -> (bool, Hash, u16) {
        let r = self.record();
        (matches!(self, Outgoing::Reveal(_)), r.session, r.segment)
    }

    /// The vote itself: (opening?, session, segment, round).
    fn seat_round(&self) -> (bool, Hash, u16, u8) {
        let (opening, session, segment) = self.seat();
        (opening, session, segment, self.record().round)
    }

    fn call(&self) -> Call {
        match self {
            Outgoing::Commit(r, commitment) => Call::Commit {
                session: r.session,
                segment: r.segment,
                commitment: *commitment,
            },
            Outgoing::Reveal(r) => Call::Reveal {
                session: r.session,
                segment: r.segment,
                vote: r.vote,
                salt: r.salt,
                reason: r.reason.clone(),
            },
        }
    }
}

/// Sends a seat node's votes, batched across sessions (see the module).
#[derive(Debug)]
pub(crate) struct VoteSender {
    outbox: Outbox,
    votes: VoteBook,
    metrics: Arc<SeatMetrics>,
    /// Votes handed over and not yet taken by a turn. Bounded by the votes in flight:
    /// each hand-over waits for its turn to end.
    pub(crate) unsent: std::sync::Mutex<Vec<Outgoing>>,
    /// One turn at a time.
    pub(crate) turn: tokio::sync::Mutex<()>,
}

impl VoteSender {
    pub(crate) fn new(outbox: Outbox, votes: VoteBook, metrics: Arc<SeatMetrics>) -> Self {
        Self {
            outbox,
            votes,
            metrics,
            unsent: std::sync::Mutex::default(),
            turn: tokio::sync::Mutex::const_new(()),
        }
    }

    /// Hands `votes` over and waits for a turn that sends them (with whatever else waits).
    pub(crate) async fn send(self: &Arc<Self>, votes: Vec<Outgoing>) {
        if votes.is_empty() {
            return;
        }
        self.unsent
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .extend(votes);
        let me = Arc::clone(self);
        let turn = tokio::spawn(
            async move { me.take_turn().await }.instrument(tracing::debug_span!("vote sender")),
        );
        if let Err(e) = turn.await {
            tracing::error!(error = %e, "the vote sender's turn failed");
        }
    }

    /// Sends everything waiting when the turn begins.
    async fn take_turn(&self) {
        let _turn = self.turn.lock().await;
        let waiting = std::mem::take(&mut *self.unsent.lock().unwrap_or_else(|e| e.into_inner()));
        // A batch names a segment of a session once per kind (it would be malformed as a
        // whole otherwise): the same vote handed over twice goes once, and the rare
        // opening of an earlier round's seat beside this round's goes in the next pass.
        let mut waiting: Vec<Outgoing> = {
            let mut seen = BTreeSet::new();
            waiting
                .into_iter()
                .filter(|o| seen.insert(o.seat_round()))
                .collect()
        };
        while !waiting.is_empty() {
            let mut seen = BTreeSet::new();
            let (pass, later): (Vec<Outgoing>, Vec<Outgoing>) =
                waiting.into_iter().partition(|o| seen.insert(o.seat()));
            waiting = later;
            self.send_pass(&pass).await;
        }
    }

    /// Sends `pass`, where no seat appears twice, in chunks of [`MAX_BATCH_VOTES`].
    async fn send_pass(&self, pass: &[Outgoing]) {
        for chunk in pass.chunks(MAX_BATCH_VOTES) {
            let Some(call) = Call::batch(chunk.iter().map(Outgoing::call).collect()) else {
                continue;
            };
            let sent = self.outbox.send(call).await;
            for o in chunk {
                let r = o.record();
                match (&sent, o) {
                    (Ok(tx), Outgoing::Commit(..)) => {
                        bump(&self.metrics.committed);
                        tracing::info!(session = %r.session, segment = r.segment, vote = ?r.vote, reason = r.reason, %tx, "committed");
                    }
                    (Ok(tx), Outgoing::Reveal(_)) => {
                        // Marked only once pooled: a reveal still queued in the outbox is
                        // in memory only, and a restart must send it again.
                        if matches!(tx, Sent::Pooled(_)) {
                            let _ = self.votes.mark_revealed(&r.session, r.segment, r.round);
                        }
                        bump(&self.metrics.revealed);
                        tracing::info!(session = %r.session, segment = r.segment, %tx, "revealed");
                    }
                    (Err(e), o) => {
                        bump(&self.metrics.failures);
                        let what = match o {
                            Outgoing::Commit(..) => "commit not sent",
                            Outgoing::Reveal(_) => "reveal not sent",
                        };
                        tracing::warn!(session = %r.session, segment = r.segment, error = %e, "{what}");
                    }
                }
            }
        }
    }
}

fn bump(c: &AtomicU64) {
    c.fetch_add(1, Ordering::Relaxed);
}
