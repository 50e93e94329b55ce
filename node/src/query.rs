//! Read-only lookups over the chain view and the ledger that the JSON API (`api`) and the
//! web pages (`web`) share, so both answer the same question the same way.
//!
//! Every function here does bounded work: a fixed number of ledger reads (blocks by hash
//! go through the ledger's hash index) and no more than one pass over an in-memory map;
//! an auditor's history ([`auditor_history`]) reads at most [`MAX_HISTORY_BLOCKS`] blocks'
//! events a call.

use serde::Serialize;
use trust_contracts::{Auditor, Failure, Outcome, Phase, Session};
use trust_protocol::{
    DecodeError, Hash, encoding,
    tx::{Call, SessionManifest, SignedTx, Tx},
};

use crate::{
    ledger::{Ledger, LedgerError, StoredBlock},
    view::ChainView,
};

mod history;
pub mod steps;

pub use history::{
    AuditorHistory, MAX_HISTORY_BLOCKS, MAX_HISTORY_SESSIONS, SessionHistory, VoteTally,
    auditor_history,
};

/// [`crate::audit::provider::exposure`], where the plan computes it: one computation
/// behind `submit --plan` and the session page.
pub use crate::audit::provider::exposure;

/// The whole manifest of a live session: the contract keeps its segments' entries apart
/// from the rest of it ([`Session::manifest`] holds none).
pub fn live_manifest(x: &Session) -> SessionManifest {
    let mut m = x.manifest.clone();
    m.segments = x.segments.iter().map(|g| g.entry.clone()).collect();
    m
}

/// [`exposure`] in words, as `submit --plan` prints it and the session page shows it:
/// `no auditor account sees more than 4 of the trace's 9 segments (44%, the budget)`, or
/// `one auditor account could see 8 of the trace's 10 segments (80%): no budget was set`.
pub fn exposure_words(e: &crate::audit::provider::ExposureView) -> String {
    let pct = |n: usize| 100.0 * n as f64 / e.trace_segments.max(1) as f64;
    match e.budget {
        Some(b) => format!(
            "no auditor account sees more than {b} of the trace's {} segments ({:.0}%, the budget)",
            e.trace_segments,
            pct(b)
        ),
        None => format!(
            "one auditor account could see {} of the trace's {} segments ({:.0}%): no budget was set",
            e.most_seen,
            e.trace_segments,
            pct(e.most_seen)
        ),
    }
}

/// Seats of a live session and how far they got.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SeatCounts {
    /// Seats drawn, both rounds.
    pub assigned: usize,
    /// Of those, seats that committed.
    pub committed: usize,
    /// Of those, seats that revealed.
    pub revealed: usize,
}

/// Seat counts of `session`, over every segment and round.
pub fn seat_counts(session: &Session) -> SeatCounts {
    let mut c = SeatCounts::default();
    for seat in session.segments.iter().flat_map(|g| &g.seats) {
        c.assigned += 1;
        c.committed += usize::from(seat.commitment.is_some());
        c.revealed += usize::from(seat.vote.is_some());
    }
    c
}

/// A decided session: its outcome and the block that decided it.
#[derive(Debug, Clone)]
pub struct Decided {
    /// The outcome as the contract stores it (or stored it, until it became final and its
    /// retention passed: then as the ledger keeps it).
    pub outcome: Outcome,
    /// Height of the deciding block (from the ledger's outcome index).
    pub height: Option<u64>,
    /// Hash of that block.
    pub block_hash: Option<Hash>,
    /// That block's time (Unix milliseconds): when the session was decided.
    pub time_ms: Option<u64>,
}

/// Where a session is.
#[derive(Debug, Clone)]
pub enum SessionLookup {
    /// Decided.
    Decided(Box<Decided>),
    /// Still running.
    Live(Box<Session>),
    /// Could not run.
    Failed(Failure),
}

/// The session `sid` as of `chain`, or `None` when the network never saw it.
pub fn session(
    chain: &ChainView,
    ledger: &Ledger,
    sid: &Hash,
) -> Result<Option<SessionLookup>, LedgerError> {
    let st = chain.contract.state();
    // The state holds an outcome until its retention after finality ends; the ledger's
    // record of final outcomes holds it from its final block on.
    let outcome = match st.outcomes.get(sid) {
        Some(o) => Some(o.clone()),
        None if st.sessions.contains_key(sid) => None,
        None => ledger.final_outcome(sid)?,
    };
    if let Some(outcome) = outcome {
        let height = ledger.outcome_height(sid)?;
        let block = match height {
            Some(h) => ledger.block(h)?,
            None => None,
        };
        return Ok(Some(SessionLookup::Decided(Box::new(Decided {
            outcome,
            height,
            block_hash: block.as_ref().map(|b| b.block.hash()),
            time_ms: block.map(|b| b.block.header.time_ms),
        }))));
    }
    if let Some(live) = st.sessions.get(sid) {
        return Ok(Some(SessionLookup::Live(Box::new(live.clone()))));
    }
    Ok(st.failed.get(sid).cloned().map(SessionLookup::Failed))
}

/// The phase a live session is in, in words.
pub fn phase_name(phase: &Phase) -> String {
    match phase {
        Phase::Assigning => "assigning seats".into(),
        Phase::Commit { round, until } => format!("commit, round {round}, until height {until}"),
        Phase::Reveal { round, until } => format!("reveal, round {round}, until height {until}"),
        Phase::Disclose { until } => format!("disclosure, until height {until}"),
    }
}

/// Every transaction of `block`, decoded (a ledger block's transactions always decode;
/// an error is kept rather than hidden if one ever does not).
pub fn decode_txs(block: &StoredBlock) -> Vec<Result<SignedTx, DecodeError>> {
    block
        .block
        .txs
        .iter()
        .map(|b| encoding::decode::<SignedTx>(b))
        .collect()
}

/// The manifest of session `sid` from the `OpenSession` transaction in the block at
/// `opened_at`: how a node that is not the provider knows the HDAG's shape (levels,
/// tiers, weights, `depends_on` edges) once the contract has dropped the live session.
pub fn opening_manifest(
    ledger: &Ledger,
    sid: &Hash,
    opened_at: u64,
) -> Result<Option<SessionManifest>, LedgerError> {
    let Some(block) = ledger.block(opened_at)? else {
        return Ok(None);
    };
    Ok(decode_txs(&block)
        .into_iter()
        .flatten()
        .find_map(|tx| match tx.body.call {
            Call::OpenSession(m) if Tx::session_id(&tx.signer, tx.body.nonce) == *sid => Some(m),
            _ => None,
        }))
}

/// The block whose hash is `hash`: one read of the ledger's hash index and one of the
/// block.
pub fn block_by_hash(ledger: &Ledger, hash: &Hash) -> Result<Option<StoredBlock>, LedgerError> {
    ledger.block_by_hash(hash)
}

/// Share of an auditor's revealed votes that were abstentions (0 before any vote).
pub fn abstention_rate(a: &Auditor) -> f64 {
    if a.votes == 0 {
        0.0
    } else {
        a.abstentions as f64 / a.votes as f64
    }
}

/// Whether segment `i` of `o` was planted by its provider: a revealed honeypot, or the
/// calculation planted beside a worded honeypot (an OPERATION supporting one). Neither is
/// part of the trace, whatever its verdict.
pub fn planted(o: &Outcome, i: usize) -> bool {
    let honeypot = |j: usize| o.segments.get(j).is_some_and(|s| s.honeypot.is_some());
    honeypot(i)
        || o.segments
            .get(i)
            .and_then(|s| s.supports)
            .is_some_and(|t| honeypot(usize::from(t)))
}

/// Why a decided trace did not pass, and how its calculations fared (see
/// [`trust_judging::preview::explain`]); `None` for a pass. `name` names entry `i` of the
/// trace (session segments first, then the left-out ones), e.g. by the provider's HDAG ids.
pub fn explain(o: &Outcome, name: &dyn Fn(usize) -> String) -> Option<String> {
    use trust_contracts::{SegmentVerdict, tally::TraceTally};

    use trust_judging::preview::{self, Fact, Where};
    let n = o.segments.len();
    let own_error =
        |v: SegmentVerdict| matches!(v, SegmentVerdict::Invalid | SegmentVerdict::Ungrounded);
    let mut facts: Vec<Fact> = o
        .segments
        .iter()
        .enumerate()
        .filter(|(i, _)| !planted(o, *i))
        .map(|(i, s)| Fact {
            name: name(i),
            tier: s.tier,
            verdict: s.verdict,
            judged: true,
            conclusion: s.conclusion,
            operation: s.supports.is_some(),
            own_error: own_error(s.verdict),
        })
        .collect();
    facts.extend(o.left_out.iter().enumerate().map(|(j, l)| Fact {
        name: name(n.saturating_add(j)),
        tier: l.tier,
        verdict: l.verdict,
        judged: false,
        conclusion: l.conclusion,
        operation: l.supports.is_some(),
        // A left-out STEP is wrong only through an OPERATION of its own.
        own_error: own_error(l.verdict),
    }));
    let tally = TraceTally {
        verdict: o.trace,
        passing: o.passing_weight,
        undecided: o.undecided_weight,
        total: o.total_weight,
        error_at_conclusion: o.error_at_conclusion,
        any_error: facts.iter().any(|f| !f.operation && f.verdict.is_error()),
        conclusion_judged: o.conclusion_judged,
        conclusion_sound: o.conclusion_sound,
    };
    preview::explain(&tally, o.beta, &facts, Where::Network)
}

#[cfg(test)]
mod tests {
    use trust_contracts::{SegmentOutcome, SegmentVerdict};

    use super::*;

    /// A worded honeypot's calculation, Invalid as planted, is no error of the trace: it
    /// is neither named among the failures nor taken for a wrong calculation.
    #[test]
    fn the_calculation_planted_beside_a_honeypot_is_not_the_traces() {
        let mut o = crate::proof::tests::outcome(trust_protocol::Keypair::from_label("p").public());
        // Explained only when it did not pass.
        o.trace = trust_contracts::TraceVerdict::Inconclusive;
        // Segment 2 is a honeypot (known Invalid); 4 is its calculation, 5 a real one's.
        let base = o.segments[0].clone();
        let calc = |supports: u16| SegmentOutcome {
            supports: Some(supports),
            honeypot: None,
            verdict: SegmentVerdict::Invalid,
            ..base.clone()
        };
        o.segments.push(calc(2));
        assert!(planted(&o, 2) && planted(&o, 4));
        assert!(!planted(&o, 0) && !planted(&o, 99));
        let why = explain(&o, &|i| format!("#{i}")).expect("explained");
        assert!(!why.contains("wrong"), "{why}");
        o.segments.push(calc(1));
        assert!(!planted(&o, 5));
        let why = explain(&o, &|i| format!("#{i}")).unwrap_or_default();
        assert!(
            why.contains("wrong"),
            "a real calculation's error is the trace's: {why}"
        );
    }
}
