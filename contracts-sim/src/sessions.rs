//! Session transactions: opening, key delivery, commit, reveal, and the provider's
//! disclosures (mapping and honeypots) after voting.
//!
//! Two rules keep a provider from punishing seats on its own say:
//! - **Key delivery is on record.** `DeliverKeys` marks, on each seat, which of the keys
//!   it needs (its segment's and its premises') arrived in its round's commit window with
//!   at least one block left to commit. A seat whose keys did not is *starved*: the tally
//!   never slashes it as a no-show and pays it from the provider's escrow.
//! - **Honeypots are capped and bonded.** `OpenSession` escrows
//!   [`Params::honeypot_bond`] for each honeypot the session may open
//!   (`min(max_honeypots, segments)`); `RevealHoneypot` beyond
//!   [`Params::max_honeypots`] is refused (an opening of a `RevealHoneypots` beyond it
//!   alone). The tally burns a bond for each honeypot its seats contradict by a clear
//!   majority, and scores those seats as for any segment.

use std::collections::BTreeMap;

use trust_protocol::{
    AccountId, Commitment, Hash, Salt, Vote, honeypot_commitment, mapping_commitment,
    tx::{Difficulty, SeatKey, SessionManifest, Tier},
    verify_commitment,
};

use crate::{
    error::TxError,
    events::Event,
    params::Params,
    state::{Phase, SegmentState, Session, State},
};

/// The smallest fee for a manifest: one reward per counted seat of the first round.
pub fn minimum_fee(params: &Params, manifest: &SessionManifest) -> Option<u64> {
    manifest.segments.iter().try_fold(0u64, |sum, s| {
        let per = params
            .reward
            .checked_mul(u64::from(manifest.quorum.k(s.tier)))?;
        sum.checked_add(per)
    })
}

/// The honeypot bond a session of `segments` segments escrows at `OpenSession`.
pub fn honeypot_bond(params: &Params, segments: usize) -> Option<u64> {
    let slots = u64::try_from(segments)
        .ok()?
        .min(u64::from(params.max_honeypots));
    params.honeypot_bond.checked_mul(slots)
}

/// The commit window a session runs under: its terms', or the network's.
pub(crate) fn commit_window(p: &Params, s: &Session) -> u64 {
    match s.manifest.terms.commit_window {
        0 => p.commit_window,
        w => u64::from(w),
    }
}

/// The reveal window a session runs under: its terms', or the network's.
pub(crate) fn reveal_window(p: &Params, s: &Session) -> u64 {
    match s.manifest.terms.reveal_window {
        0 => p.reveal_window,
        w => u64::from(w),
    }
}

pub(crate) fn open(
    st: &mut State,
    provider: AccountId,
    session: Hash,
    manifest: &SessionManifest,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    if st.sessions.contains_key(&session)
        || st.outcomes.contains_key(&session)
        || st.failed.contains_key(&session)
    {
        return Err(TxError::SessionExists(session));
    }
    let p = &st.params;
    let q = &manifest.quorum;
    if q.tau < p.min_tau {
        return Err(TxError::QuorumOutOfLimits(
            "tau is below the network minimum",
        ));
    }
    if q.extra_seats > p.max_extra_seats {
        return Err(TxError::QuorumOutOfLimits("too many extra seats"));
    }
    for tier in Tier::ALL {
        if q.k(tier) > p.max_k(tier) {
            return Err(TxError::QuorumOutOfLimits("k above the network maximum"));
        }
    }
    let t = &manifest.terms;
    if u64::from(t.commit_window.max(t.reveal_window)) > p.max_window {
        return Err(TxError::QuorumOutOfLimits(
            "a commit or reveal window above the network maximum",
        ));
    }
    let min = minimum_fee(p, manifest).ok_or(TxError::Overflow)?;
    if manifest.fee < min {
        return Err(TxError::FeeTooLow {
            fee: manifest.fee,
            min,
        });
    }
    let bond = honeypot_bond(p, manifest.segments.len()).ok_or(TxError::Overflow)?;
    let need = manifest.fee.checked_add(bond).ok_or(TxError::Overflow)?;
    let have = st.accounts.get(&provider).map_or(0, |a| a.balance);
    let left = have
        .checked_sub(need)
        .ok_or(TxError::InsufficientBalance { have, need })?;
    let segments_len = u16::try_from(manifest.segments.len()).map_err(|_| TxError::Overflow)?;

    st.accounts.entry(provider).or_default().balance = left;
    let segments = manifest
        .segments
        .iter()
        .map(|e| SegmentState {
            entry: e.clone(),
            tier: e.tier,
            k: q.k(e.tier),
            seats: Vec::new(),
            rounds: Vec::new(),
            honeypot: None,
        })
        .collect();
    let mut header = manifest.clone();
    header.segments = Vec::new();
    st.sessions.insert(
        session,
        Session {
            provider,
            opened_at: height,
            phase: Phase::Assigning,
            escrow: manifest.fee,
            bond,
            manifest: header,
            segments,
            mapping: None,
            appeal: None,
        },
    );
    events.push(Event::SessionOpened {
        session,
        provider,
        segments: segments_len,
    });
    Ok(())
}

fn live<'a>(st: &'a mut State, session: &Hash) -> Result<&'a mut Session, TxError> {
    st.sessions
        .get_mut(session)
        .ok_or(TxError::UnknownSession(*session))
}

pub(crate) fn deliver_keys(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    keys: &[SeatKey],
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let s = live(st, &session)?;
    if s.provider != sender {
        return Err(TxError::NotProvider);
    }
    if !matches!(s.phase, Phase::Commit { .. } | Phase::Reveal { .. }) {
        return Err(TxError::WrongPhase("keys are delivered while seats vote"));
    }
    // Who cites each segment, and at which bit of its seats' key record (`depends_on[j]`
    // is bit `j + 1`): built once, so a delivery costs its keys times the seats that take
    // each key, not times every segment of the session.
    let mut cited_by: BTreeMap<u16, Vec<(usize, u32)>> = BTreeMap::new();
    for (i, g) in s.segments.iter().enumerate() {
        for (j, d) in g.entry.depends_on.iter().enumerate() {
            let bit = u32::try_from(j.saturating_add(1)).unwrap_or(u32::MAX);
            cited_by.entry(*d).or_default().push((i, bit));
        }
    }
    let takers = |segment: u16| {
        std::iter::once((usize::from(segment), 0u32))
            .chain(cited_by.get(&segment).into_iter().flatten().copied())
    };
    // A segment's key goes to its own seats and to the seats of the segments that depend on
    // it directly: a seat judges its step against the premises it cites, and sees nothing
    // further up the trace.
    for k in keys {
        if s.segments.get(usize::from(k.segment)).is_none() {
            return Err(TxError::UnknownSegment(k.segment));
        }
        let seated = takers(k.segment).any(|(i, _)| {
            s.segments
                .get(i)
                .is_some_and(|g| g.seats.iter().any(|x| x.account == k.seat))
        });
        if !seated {
            return Err(TxError::NotASeat(k.seat));
        }
    }
    // On record for the tally: a key counts for the seats of the round now committing, if
    // at least one block of the window is left for them to commit in. A key sent later
    // (or in the reveal window) starves its seat as surely as no key.
    if let Phase::Commit { round, until } = s.phase
        && height < until
    {
        for k in keys {
            let targets: Vec<(usize, u32)> = takers(k.segment).collect();
            for (i, bit) in targets {
                let (Some(seg), Some(mask)) = (s.segments.get_mut(i), 1u32.checked_shl(bit)) else {
                    continue;
                };
                for x in seg
                    .seats
                    .iter_mut()
                    .filter(|x| x.account == k.seat && x.round == round)
                {
                    x.keys |= mask;
                }
            }
        }
    }
    for k in keys {
        events.push(Event::KeyDelivered {
            session,
            segment: k.segment,
            seat: k.seat,
            sealed: k.sealed.clone(),
        });
    }
    Ok(())
}

pub(crate) fn commit(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    segment: u16,
    commitment: Commitment,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let s = live(st, &session)?;
    let Phase::Commit { round, .. } = s.phase else {
        return Err(TxError::WrongPhase("the commit window is not open"));
    };
    let seg = s
        .segments
        .get_mut(usize::from(segment))
        .ok_or(TxError::UnknownSegment(segment))?;
    if seg
        .seats
        .iter()
        .any(|x| x.account != sender && x.commitment == Some(commitment))
    {
        return Err(TxError::DuplicateCommitment);
    }
    let seat = seg
        .seats
        .iter_mut()
        .find(|x| x.account == sender && x.round == round)
        .ok_or(TxError::NotASeat(sender))?;
    if seat.commitment.is_some() {
        return Err(TxError::AlreadyCommitted);
    }
    seat.commitment = Some(commitment);
    events.push(Event::Committed {
        session,
        segment,
        seat: sender,
    });
    Ok(())
}

/// One entry of a [`Call::Votes`](trust_protocol::tx::Call::Votes), as the contract applies it.
#[derive(Debug, Clone, Copy)]
pub(crate) enum VoteEntry<'a> {
    /// A commitment.
    Commit(&'a trust_protocol::tx::CommitEntry),
    /// An opening.
    Reveal(&'a trust_protocol::tx::RevealEntry),
}

impl VoteEntry<'_> {
    /// The segment it is for.
    pub(crate) fn segment(&self) -> u16 {
        match self {
            VoteEntry::Commit(c) => c.segment,
            VoteEntry::Reveal(r) => r.segment,
        }
    }
}

/// Applies the entries of a batch of votes one by one, each as its single call would
/// apply (`apply`, which changes nothing when it fails). An entry refused fails alone,
/// with a [`Event::VoteRefused`] in its place among the events; the batch fails, changing
/// nothing, only when every entry is refused, and then with the first entry's error (so a
/// batch sent before its window waits, as a single call would).
pub(crate) fn each_vote<E>(
    sender: AccountId,
    entries: &[E],
    seat_of: impl Fn(&E) -> (Hash, u16),
    apply: impl FnMut(&E, &mut Vec<Event>) -> Result<(), TxError>,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    each_entry(
        entries,
        |e, error| Event::VoteRefused {
            session: seat_of(e).0,
            segment: seat_of(e).1,
            seat: sender,
            reason: error.to_string(),
        },
        apply,
        events,
    )
}

/// Applies the openings of a batch of honeypot openings as [`each_vote`] applies votes,
/// each as its single `RevealHoneypot` would, in order: a refused opening fails alone with
/// a [`Event::HoneypotRefused`] in its place; the batch fails, changing nothing, only when
/// every opening is refused, with the first one's error.
pub(crate) fn each_honeypot<E>(
    session: Hash,
    sender: AccountId,
    openings: &[E],
    segment_of: impl Fn(&E) -> u16,
    apply: impl FnMut(&E, &mut Vec<Event>) -> Result<(), TxError>,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    each_entry(
        openings,
        |e, error| Event::HoneypotRefused {
            session,
            segment: segment_of(e),
            provider: sender,
            reason: error.to_string(),
        },
        apply,
        events,
    )
}

/// The rule both kinds of batch share: `apply` each entry (changing nothing when it
/// fails), `refused` names a failed one among the events; all refused, the batch fails
/// with the first error and its events are dropped.
fn each_entry<E>(
    entries: &[E],
    refused: impl Fn(&E, &TxError) -> Event,
    mut apply: impl FnMut(&E, &mut Vec<Event>) -> Result<(), TxError>,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let mut local = Vec::with_capacity(entries.len());
    let mut first = None;
    let mut applied = 0usize;
    for e in entries {
        match apply(e, &mut local) {
            Ok(()) => applied = applied.saturating_add(1),
            Err(error) => {
                local.push(refused(e, &error));
                first.get_or_insert(error);
            }
        }
    }
    match first {
        Some(error) if applied == 0 => Err(error),
        _ => {
            events.extend(local);
            Ok(())
        }
    }
}

/// What a reveal opens: the vote, the salt and the reason its commitment binds.
pub(crate) struct Opening<'a> {
    pub(crate) session: Hash,
    pub(crate) segment: u16,
    pub(crate) vote: Vote,
    pub(crate) salt: &'a Salt,
    pub(crate) reason: &'a str,
}

pub(crate) fn reveal(
    st: &mut State,
    sender: AccountId,
    opening: Opening<'_>,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let Opening {
        session,
        segment,
        vote,
        salt,
        reason,
    } = opening;
    // The reason's bound was checked with the transaction's format (`Tx::validate`).
    let s = live(st, &session)?;
    let Phase::Reveal { round, .. } = s.phase else {
        return Err(TxError::WrongPhase("the reveal window is not open"));
    };
    let seg = s
        .segments
        .get_mut(usize::from(segment))
        .ok_or(TxError::UnknownSegment(segment))?;
    let counted_so_far = seg
        .seats
        .iter()
        .filter(|x| x.round == round && x.counted)
        .count();
    let k = usize::from(seg.k);
    let seg_id = seg.entry.id;
    let seat = seg
        .seats
        .iter_mut()
        .find(|x| x.account == sender && x.round == round)
        .ok_or(TxError::NotASeat(sender))?;
    let c = seat.commitment.ok_or(TxError::NotCommitted)?;
    if seat.vote.is_some() {
        return Err(TxError::AlreadyRevealed);
    }
    if !verify_commitment(&c, &session, &seg_id, &sender, vote, salt, reason) {
        return Err(TxError::CommitmentMismatch);
    }
    // An abstention is present but takes no counted place: the first `k` judgements
    // count, so a seat that cannot judge never crowds out one that can.
    let counted = !vote.is_abstain() && counted_so_far < k;
    seat.vote = Some(vote);
    seat.reason = Some(reason.to_string());
    seat.counted = counted;
    if let Some(au) = st.auditors.get_mut(&sender) {
        au.votes = au.votes.saturating_add(1);
        if vote.is_valid() {
            au.approvals = au.approvals.saturating_add(1);
        }
        if vote.is_abstain() {
            au.abstentions = au.abstentions.saturating_add(1);
        }
    }
    events.push(Event::Revealed {
        session,
        segment,
        seat: sender,
        vote,
        reason: reason.to_string(),
        counted,
    });
    Ok(())
}

/// The live session, if `sender` is its provider and it is in the disclosure window.
///
/// Every segment of a manifest may carry a honeypot commitment: a provider blinds its
/// honeypots by giving the real segments commitments nobody can open. So the contract
/// cannot know how many honeypots a session holds; the provider opens them first and the
/// mapping last, and the disclosure closes with the mapping (or at the window's end).
/// An unopened commitment is a real segment.
fn disclosing<'a>(
    st: &'a mut State,
    sender: AccountId,
    session: &Hash,
    when: &'static str,
) -> Result<&'a mut Session, TxError> {
    let s = live(st, session)?;
    if s.provider != sender {
        return Err(TxError::NotProvider);
    }
    if !matches!(s.phase, Phase::Disclose { .. }) {
        return Err(TxError::WrongPhase(when));
    }
    Ok(s)
}

pub(crate) fn reveal_mapping(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    mapping: Hash,
    salt: &Salt,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    // The mapping may be opened as soon as the votes are bound (a reveal window), so a
    // session with no honeypot to open can be tallied in the block of its last reveal.
    // Honeypots are still opened only in the disclosure, which a session whose mapping is
    // open at its last reveal skips.
    let s = live(st, &session)?;
    if s.provider != sender {
        return Err(TxError::NotProvider);
    }
    if !matches!(s.phase, Phase::Reveal { .. } | Phase::Disclose { .. }) {
        return Err(TxError::WrongPhase(
            "the mapping is opened once the votes are committed",
        ));
    }
    if s.mapping.is_some() {
        return Err(TxError::AlreadyDisclosed);
    }
    if mapping_commitment(&mapping, salt) != s.manifest.mapping_commitment {
        return Err(TxError::CommitmentMismatch);
    }
    s.mapping = Some(mapping);
    events.push(Event::MappingRevealed { session, mapping });
    Ok(())
}

#[allow(clippy::too_many_arguments)]
pub(crate) fn reveal_honeypot(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    segment: u16,
    verdict: Vote,
    difficulty: Difficulty,
    salt: &Salt,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let cap = st.params.max_honeypots;
    let s = disclosing(st, sender, &session, "honeypots are opened after voting")?;
    let opened = s.segments.iter().filter(|g| g.honeypot.is_some()).count();
    let opened = u16::try_from(opened).unwrap_or(u16::MAX);
    if opened >= cap {
        return Err(TxError::TooManyHoneypots(opened));
    }
    // Only opened honeypots may rest on a honeypot: a chain of them is opened from its
    // end, and a planted error never reaches a segment of the trace.
    if s.segments
        .iter()
        .any(|g| g.entry.depends_on.contains(&segment) && g.honeypot.is_none())
    {
        return Err(TxError::HoneypotHasDependents(segment));
    }
    let seg = s
        .segments
        .get_mut(usize::from(segment))
        .ok_or(TxError::UnknownSegment(segment))?;
    let c = seg.entry.honeypot.ok_or(TxError::NotAHoneypot(segment))?;
    if seg.honeypot.is_some() {
        return Err(TxError::AlreadyDisclosed);
    }
    if honeypot_commitment(&seg.entry.id, verdict, difficulty, salt) != c {
        return Err(TxError::CommitmentMismatch);
    }
    seg.honeypot = Some((verdict, difficulty));
    events.push(Event::HoneypotRevealed {
        session,
        segment,
        verdict,
    });
    Ok(())
}
