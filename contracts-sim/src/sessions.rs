//! Session transactions: opening, key delivery, commit, reveal, and the provider's
//! disclosures (honeypot set and mapping) after voting.
//!
//! Rules that keep a provider from deciding the outcome or punishing seats on its own say:
//! - **Terms within floors.** `OpenSession` is refused, charging nothing, when a term is
//!   below the network's floor ([`crate::Floors`]: `k` per allowed tier, commit and reveal
//!   windows per routed tier, `beta`), when a required domain's declaring pool holds too
//!   little stake, or when a segment's weight is not its tier's weight in the terms. Each
//!   round's windows are stretched to the floors of the tiers seated in it.
//! - **Staffed, or refused.** `OpenSession` is refused, charging nothing, when its first
//!   draw could not fill: a routed tier with fewer eligible auditors (other than the
//!   provider, declaring a required domain) than `k` plus the racing seats, or a segment
//!   whose sight exceeds the exposure budget. The check reads the per-tier index's size, so
//!   it costs O(tiers) (plus the manifest's size for a budget), and a session that could
//!   never run leaves no failure behind. A draw can still fail when auditors leave between
//!   the opening and the draw; that failure is refunded and kept for a bounded time.
//! - **Racing seats keep a verdict appealable.** Every seat a verdict holds raises the
//!   panel an appeal of it needs ([`crate::seats_of_an_appeal`]: `2 held_by + 1` fresh
//!   seats), and racing seats are the provider's choice: a session asking for them is
//!   refused, charging nothing ([`TxError::RacingSeatsUnappealable`], naming the most it
//!   may ask for), unless a verdict all `k + extra` seats of a routed tier's first round
//!   reach could be appealed by auditors who did not sit on the segment, in that tier or
//!   a higher one the terms allow. Its escalations are held to the same when they are
//!   drawn (`contract::escalation_options`). A session without racing seats is not held to
//!   it (a small network seats `k` and may be too small to appeal at all).
//! - **Key delivery is on record.** `DeliverKeys` marks, on each seat, which of the keys
//!   it needs (its segment's and its premises') arrived in its round's commit window by
//!   the round's key deadline ([`key_deadline`]: [`Params::key_window`] blocks after the
//!   draw, or [`Params::key_lead`] blocks before the window closes if that comes first).
//!   A seat whose keys did not is *starved* for good (a later key does not count, and the
//!   seat holds none of the network's capacity from the block after the deadline:
//!   [`crate::admission`]): the tally never slashes it as a no-show, counts it towards the
//!   quorum's size, and pays it from the provider's escrow. A delivery names each (segment, seat)
//!   once and is checked whole before any bit is set, in one pass over each key's takers.
//! - **A key that does not open is no key.** Each seat keeps a digest of the sealed keys
//!   that set its key bits (the first of each that landed in time, in delivery order). A
//!   seat sealed a key that does not open proves it with `ReportBadKey`
//!   ([`trust_protocol::badkey`]): the keys on record, the shared secret of the bad one
//!   and a proof that it is the seat's. If the keys match the digest, the proof verifies
//!   against the seat's registered sealing key and the key does not open under the
//!   secret, the seat is starved like one never keyed. Nothing else about the seat
//!   changes: it still commits and reveals (an abstention), and a report that does not
//!   hold is refused, changing nothing.
//! - **Honeypots are fixed before voting.** The manifest commits to the set of honeypot
//!   segments; `RevealHoneypots` opens exactly that set, all at once, after voting. A set
//!   member may be neither the conclusion nor rested on by the trace. A set not opened in
//!   time forfeits the whole honeypot bond ([`Params::honeypot_bond`] per honeypot the
//!   session may open, escrowed at `OpenSession`).

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    AccountId, Commitment, Hash, Salt, Vote,
    badkey::{BadKeyProof, SharedSecret, record_key, record_of, verify_bad_key},
    honeypot_commitment, honeypot_set_commitment, mapping_commitment,
    seal::key_context,
    tx::{
        Call, DeliveredKey, HoneypotOpening, QuorumParams, SeatKey, SessionManifest, SessionTerms,
        Tier, TxFormatError,
    },
    units::{Amount, Ppm},
    verify_commitment,
};

use crate::{
    error::TxError,
    events::Event,
    params::Params,
    state::{Phase, SegmentState, Session, State},
    windows::key_deadline,
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

/// The least draw stake the pool of a domain must hold in a tier whose drawable auditors
/// hold `tier_stake` of draw stake, to be required or to weigh in a draw: the larger of
/// the genesis `floors.min_domain_stake` and `floors.min_domain_share` of `tier_stake`.
///
/// The share keeps a coalition below it from owning a required domain's pool however
/// large the tier grows; the absolute amount keeps a pool from being cheap while a tier is
/// small (on a young network a share of little is little).
pub fn domain_floor(p: &Params, tier_stake: Amount) -> Amount {
    p.floors
        .min_domain_share
        .ceil_mul(tier_stake)
        .max(p.floors.min_domain_stake)
}

/// A domain's pool in a tier: the drawable `tier` auditors declaring `domain`, other than
/// the provider.
struct DomainPool {
    /// Their draw stake.
    stake: Amount,
    /// How many they are.
    count: usize,
    /// The draw stake of every drawable auditor of the tier (the floor's base).
    tier_stake: Amount,
}

/// The drawable `tier` auditors declaring `domain`, other than `provider`, and the tier's
/// draw stake, in one pass over the tier's index.
fn domain_pool(st: &State, tier: Tier, domain: &str, provider: &AccountId) -> DomainPool {
    let mut pool = DomainPool {
        stake: 0,
        count: 0,
        tier_stake: 0,
    };
    for id in st.eligible(tier) {
        let Some(a) = st.auditors.get(id) else {
            continue;
        };
        pool.tier_stake = pool.tier_stake.saturating_add(a.draw_stake);
        if id != provider && a.expertise.iter().any(|e| e == domain) {
            pool.stake = pool.stake.saturating_add(a.draw_stake);
            pool.count = pool.count.saturating_add(1);
        }
    }
    pool
}

/// The auditors a round-0 draw of `tier` may pick for `provider`'s session: the tier's
/// index of drawable auditors less the provider itself. O(log auditors).
fn drawable_for(st: &State, tier: Tier, provider: &AccountId) -> usize {
    let pool = st.eligible(tier);
    pool.len()
        .saturating_sub(usize::from(pool.contains(provider)))
}

/// Whether `domain` counts for draws of `tier` in a session of `provider`: its declaring
/// pool holds at least the network's floor of stake. A domain below the floor neither
/// restricts a draw nor weighs in it, so a domain only a provider's own auditors declare
/// gives them nothing.
pub(crate) fn domain_counts(st: &State, tier: Tier, domain: &str, provider: &AccountId) -> bool {
    if domain.is_empty() {
        return false;
    }
    let pool = domain_pool(st, tier, domain, provider);
    pool.stake >= domain_floor(&st.params, pool.tier_stake)
}

/// The least tau ceiling of the tiers `terms` allow, and its tier: a session may not ask
/// for a higher tau ([`TxError::TauAboveCeiling`]).
pub fn tau_ceiling(p: &crate::Params, terms: &SessionTerms) -> Option<(Tier, Ppm)> {
    Tier::ALL
        .into_iter()
        .filter(|t| terms.allows(*t))
        .map(|t| (t, p.floors.max_tau(t)))
        .min_by_key(|(_, c)| *c)
}

/// Whether a verdict all the first-round seats of a `tier` segment of a session under
/// `terms` and `quorum` reach (`k + extra`) could be appealed on `st` now, as an appeal
/// draws ([`crate::appeal`]): some tier the appeal may draw from holds the fresh seats it
/// needs ([`crate::seats_of_an_appeal`]) among its auditors other than the provider and
/// the `k + extra` who sat. (An escalation's verdict is held to the same when it is drawn:
/// [`crate::contract::escalation_options`].) The refusal, with `most` left at 0, if not.
fn racing_seats_appealable(
    st: &State,
    provider: &AccountId,
    terms: &SessionTerms,
    quorum: &QuorumParams,
    tier: Tier,
) -> Result<(), TxError> {
    let held_by = u16::from(quorum.k(tier)).saturating_add(u16::from(quorum.extra_seats));
    let fresh = |t: Tier| {
        let sat = if t == tier { usize::from(held_by) } else { 0 };
        drawable_for(st, t, provider).saturating_sub(sat)
    };
    let options = crate::appeal::appeal_options(terms, quorum, tier, held_by);
    if options
        .iter()
        .any(|(t, seats)| fresh(*t) >= usize::from(*seats))
    {
        return Ok(());
    }
    Err(TxError::RacingSeatsUnappealable {
        tier,
        extra_seats: quorum.extra_seats,
        eligible: fresh(tier),
        needed: crate::appeal::seats_of_an_appeal(quorum.k(tier), held_by),
        most: 0,
    })
}

/// Checks a manifest's terms against the network's limits and floors on `st`, as
/// `OpenSession` does before it charges anything: `k` per allowed tier, windows per
/// routed tier, `beta`, a required domain's pool, that each routed tier can staff its
/// segments' first draw ([`TxError::TierUnstaffed`]) within the exposure budget
/// ([`TxError::ExposureUnmeetable`]), that a session asking for racing seats leaves a
/// verdict its first round may reach appealable ([`TxError::RacingSeatsUnappealable`]),
/// segment weights. A provider's node calls it before it signs, so that a refused session
/// is never sent.
pub fn check_terms(
    st: &State,
    provider: &AccountId,
    manifest: &SessionManifest,
) -> Result<(), TxError> {
    let p = &st.params;
    let f = &p.floors;
    let q = &manifest.quorum;
    let t = &manifest.terms;
    if q.tau < p.min_tau {
        return Err(TxError::QuorumOutOfLimits(
            "tau is below the network minimum",
        ));
    }
    if let Some((tier, ceiling)) = tau_ceiling(p, t)
        && q.tau > ceiling
    {
        return Err(TxError::TauAboveCeiling {
            tier,
            asked: q.tau,
            ceiling,
        });
    }
    if q.beta < f.min_beta {
        return Err(TxError::BelowFloor {
            term: "beta (ppm)",
            tier: None,
            asked: u64::from(q.beta.0),
            floor: u64::from(f.min_beta.0),
        });
    }
    if q.extra_seats > p.max_extra_seats {
        return Err(TxError::QuorumOutOfLimits("too many extra seats"));
    }
    for tier in Tier::ALL {
        if q.k(tier) > p.max_k(tier) {
            return Err(TxError::QuorumOutOfLimits("k above the network maximum"));
        }
        if t.allows(tier) && q.k(tier) < f.min_k(tier) {
            return Err(TxError::BelowFloor {
                term: "k",
                tier: Some(tier),
                asked: u64::from(q.k(tier)),
                floor: u64::from(f.min_k(tier)),
            });
        }
    }
    if u64::from(t.commit_window.max(t.reveal_window)) > p.max_window {
        return Err(TxError::QuorumOutOfLimits(
            "a commit or reveal window above the network maximum",
        ));
    }
    let routed: BTreeSet<Tier> = manifest.segments.iter().map(|g| g.tier).collect();
    for tier in routed {
        for (term, asked, floor) in [
            ("commit window", t.commit_window, f.min_commit_window(tier)),
            ("reveal window", t.reveal_window, f.min_reveal_window(tier)),
        ] {
            if asked != 0 && u64::from(asked) < floor {
                return Err(TxError::BelowFloor {
                    term,
                    tier: Some(tier),
                    asked: u64::from(asked),
                    floor,
                });
            }
        }
        // Staffed: a draw that is bound to fail is refused here, charging nothing, rather
        // than refunded at the draw and kept as a failure. The draw takes `k` plus the
        // racing seats from the tier's index (less the provider; only the declaring pool
        // when the domain is required), so fewer than that can never fill a segment.
        let needed = u16::from(q.k(tier)).saturating_add(u16::from(q.extra_seats));
        let eligible = if t.domain_required {
            let pool = domain_pool(st, tier, &manifest.domain, provider);
            let floor = domain_floor(p, pool.tier_stake);
            if pool.stake < floor {
                return Err(TxError::DomainPoolTooSmall {
                    domain: manifest.domain.clone(),
                    tier,
                    stake: pool.stake,
                    floor,
                });
            }
            pool.count
        } else {
            drawable_for(st, tier, provider)
        };
        if eligible < usize::from(needed) {
            return Err(TxError::TierUnstaffed {
                tier,
                needed,
                eligible,
                domain: t.domain_required.then(|| manifest.domain.clone()),
            });
        }
        // Appealable: racing seats are the provider's choice, and every seat a verdict
        // holds raises the panel an appeal of it needs. A session asking for them is
        // refused unless every verdict its seats may reach can be appealed.
        if q.extra_seats > 0
            && let Err(mut e) = racing_seats_appealable(st, provider, t, q, tier)
        {
            if let TxError::RacingSeatsUnappealable { most, .. } = &mut e {
                *most = (1..q.extra_seats)
                    .rev()
                    .find(|&extra| {
                        let fewer = QuorumParams {
                            extra_seats: extra,
                            ..q.clone()
                        };
                        racing_seats_appealable(st, provider, t, &fewer, tier).is_ok()
                    })
                    .unwrap_or(0);
            }
            return Err(e);
        }
    }
    // An exposure budget below the sight of a segment leaves nobody who may sit on it.
    if t.max_exposure < Ppm::ONE {
        let cap = t.exposure_cap(
            manifest
                .segments
                .len()
                .saturating_add(manifest.left_out.len()),
        );
        let sizes = crate::assign::sight_sizes(&manifest.segments, &manifest.left_out);
        if let Some((segment, sees)) = sizes.into_iter().enumerate().find(|(_, n)| *n > cap) {
            return Err(TxError::ExposureUnmeetable { segment, sees, cap });
        }
    }
    let weights = manifest
        .segments
        .iter()
        .map(|g| (g.tier, g.weight))
        .chain(manifest.left_out.iter().map(|l| (l.tier, l.weight)));
    for (index, (tier, weight)) in weights.enumerate() {
        let expected = t.tier_weight(tier);
        if weight != expected {
            return Err(TxError::WeightNotTierWeight {
                index,
                weight,
                tier,
                expected,
            });
        }
    }
    Ok(())
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
    check_terms(st, &provider, manifest)?;
    let p = &st.params;
    let q = &manifest.quorum;
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
            drawn_at: 0,
            phase: Phase::Assigning,
            escrow: manifest.fee,
            bond,
            manifest: header,
            segments,
            mapping: None,
            appeal: None,
            queued: Vec::new(),
            honeypots_opened: false,
            losses: BTreeMap::new(),
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

/// The round whose seats a key delivered at `height` counts for, if any: on record for
/// the tally, a key counts for the seats of the round now committing if it lands at least
/// [`Params::key_lead`] blocks before the commit deadline, so that an honest seat has
/// blocks left to fetch and judge before it must commit. A key sent later (or in the
/// reveal window) starves its seat as surely as no key.
///
/// And it must land by the round's key deadline ([`key_deadline`], a few blocks after
/// the draw): a seat not keyed by then is starved for good, and holds no capacity from
/// then on ([`crate::admission`]). Were later keys to count, a provider could let a
/// round's hold on capacity lapse, have more sessions drawn on the same auditors, and
/// key them all at once: more seats than they can judge in a window.
pub fn recording_round(p: &Params, s: &Session, height: u64) -> Option<u8> {
    match (s.phase, key_deadline(p, s)) {
        (Phase::Commit { round, .. }, Some(by)) if height <= by => Some(round),
        _ => None,
    }
}

pub(crate) fn deliver_keys(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    keys: &[SeatKey],
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let recording = st
        .sessions
        .get(&session)
        .and_then(|s| recording_round(&st.params, s, height));
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
    //
    // On record for the tally only in time ([`recording_round`]).
    //
    // One pass over each key's takers and their seats checks the key (its segment exists,
    // its seat sits where it is taken, no (segment, seat) twice) and finds the seat
    // entries it sets; nothing changes until every key passed. With no pair twice, no two
    // keys of a call set the same bit of a seat, so which bits are still clear can be
    // read before any is set.
    let mut named: BTreeSet<(u16, AccountId)> = BTreeSet::new();
    // (segment index, seat index, bit mask, key index), in delivery order.
    let mut sets: Vec<(usize, usize, u32, usize)> = Vec::new();
    for (n, k) in keys.iter().enumerate() {
        if s.segments.get(usize::from(k.segment)).is_none() {
            return Err(TxError::UnknownSegment(k.segment));
        }
        if !named.insert((k.segment, k.seat)) {
            return Err(TxError::DuplicateSeatKey {
                segment: k.segment,
                seat: k.seat,
            });
        }
        let mut seated = false;
        for (i, bit) in takers(k.segment) {
            let Some(seg) = s.segments.get(i) else {
                continue;
            };
            let mask = 1u32.checked_shl(bit);
            for (j, x) in seg.seats.iter().enumerate() {
                if x.account != k.seat {
                    continue;
                }
                seated = true;
                if let (Some(round), Some(mask)) = (recording, mask)
                    && x.round == round
                    && x.keys & mask == 0
                {
                    sets.push((i, j, mask, n));
                }
            }
        }
        if !seated {
            return Err(TxError::NotASeat(k.seat));
        }
    }
    for (i, j, mask, n) in sets {
        let (Some(x), Some(k)) = (
            s.segments.get_mut(i).and_then(|g| g.seats.get_mut(j)),
            keys.get(n),
        ) else {
            continue;
        };
        // The key that sets a bit is the one on record for it: a report of a key that
        // does not open must name it (`report_bad_key`).
        x.keys |= mask;
        x.key_record = record_key(&x.key_record, k.segment, &k.sealed);
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

/// A `ReportBadKey` as the contract checks it ([`check_bad_key_report`]).
#[derive(Debug, Clone, Copy)]
pub struct BadKeyReport<'a> {
    /// Session id.
    pub session: Hash,
    /// The seat's segment index.
    pub segment: u16,
    /// The keys on record for the seat, as delivered.
    pub keys: &'a [DeliveredKey],
    /// Index into `keys` of the key that does not open.
    pub bad: u8,
    /// The revealed shared secret of that key.
    pub shared: &'a SharedSecret,
    /// Its proof.
    pub proof: &'a BadKeyProof,
}

impl<'a> BadKeyReport<'a> {
    /// The report a call carries, if it is a `ReportBadKey`.
    pub fn of(call: &'a Call) -> Option<Self> {
        match call {
            Call::ReportBadKey {
                session,
                segment,
                keys,
                bad,
                shared,
                proof,
            } => Some(BadKeyReport {
                session: *session,
                segment: *segment,
                keys,
                bad: *bad,
                shared,
                proof,
            }),
            _ => None,
        }
    }
}

/// Whether `ReportBadKey` by `sender` holds on `st`; the round of its seat if so. The
/// sender's seat on the report's segment, in the round now committing or revealing, must
/// not have proven a bad key already; the keys the report carries must be the seat's
/// record (their digest is the seat's `key_record`, so each was delivered to this seat,
/// for its segment or a premise, in time); and the named one must not open under a shared
/// secret proven to be the seat's ([`verify_bad_key`], against the sealing key the seat
/// registered). Pure: a node's mempool asks the same before it pools a report.
pub fn check_bad_key_report(
    st: &State,
    sender: &AccountId,
    report: &BadKeyReport<'_>,
) -> Result<u8, TxError> {
    let recipient = st
        .auditors
        .get(sender)
        .map(|a| a.sealing_key)
        .ok_or(TxError::NotAnAuditor)?;
    let s = st
        .sessions
        .get(&report.session)
        .ok_or(TxError::UnknownSession(report.session))?;
    let round = match s.phase {
        Phase::Commit { round, .. } | Phase::Reveal { round, .. } => round,
        _ => {
            return Err(TxError::WrongPhase(
                "a key that does not open is reported while its round votes",
            ));
        }
    };
    let seat = s
        .segments
        .get(usize::from(report.segment))
        .ok_or(TxError::UnknownSegment(report.segment))?
        .seats
        .iter()
        .find(|x| x.account == *sender && x.round == round)
        .ok_or(TxError::NotASeat(*sender))?;
    if seat.bad_key {
        return Err(TxError::BadKeyAlreadyProven);
    }
    if record_of(report.keys) != seat.key_record {
        return Err(TxError::KeysNotOnRecord);
    }
    let bad = report
        .keys
        .get(usize::from(report.bad))
        .ok_or(TxError::Format(TxFormatError::BadReport))?;
    let key_id = s
        .segments
        .get(usize::from(bad.segment))
        .map(|g| g.entry.id)
        .ok_or(TxError::UnknownSegment(bad.segment))?;
    verify_bad_key(
        &recipient,
        &bad.sealed,
        &key_context(&report.session, &key_id, sender),
        report.shared,
        report.proof,
    )
    .map_err(TxError::BadKeyNotProven)?;
    Ok(round)
}

/// `ReportBadKey`: a report that holds ([`check_bad_key_report`]) marks the seat
/// `bad_key`, not keyed, so the tally treats it as starved by the provider. Any other is
/// refused, changing nothing.
pub(crate) fn report_bad_key(
    st: &mut State,
    sender: AccountId,
    report: &BadKeyReport<'_>,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let round = check_bad_key_report(st, &sender, report)?;
    let segment = usize::from(report.segment);
    // A keyed seat past the key deadline holds capacity only while keyed: one that proves
    // a bad key is starved, and holds none from now on.
    let held = st
        .sessions
        .get(&report.session)
        .is_some_and(|s| crate::admission::seat_holds(&st.params, s, segment, &sender, height));
    let tier = st
        .sessions
        .get(&report.session)
        .and_then(|s| s.segments.get(segment))
        .map(|g| g.tier);
    let seat = live(st, &report.session)?
        .segments
        .get_mut(usize::from(report.segment))
        .and_then(|g| {
            g.seats
                .iter_mut()
                .find(|x| x.account == sender && x.round == round)
        })
        .ok_or(TxError::NotASeat(sender))?;
    seat.bad_key = true;
    let still = st
        .sessions
        .get(&report.session)
        .is_some_and(|s| crate::admission::seat_holds(&st.params, s, segment, &sender, height));
    if let (true, false, Some(tier)) = (held, still, tier) {
        crate::admission::released(&mut st.judging, tier);
    }
    events.push(Event::BadKeyProven {
        session: report.session,
        segment: report.segment,
        seat: sender,
    });
    Ok(())
}

pub(crate) fn commit(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    segment: u16,
    commitment: Commitment,
    height: u64,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let s = st
        .sessions
        .get(&session)
        .ok_or(TxError::UnknownSession(session))?;
    let Phase::Commit { round, .. } = s.phase else {
        return Err(TxError::WrongPhase("the commit window is not open"));
    };
    let seg = s
        .segments
        .get(usize::from(segment))
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
        .iter()
        .find(|x| x.account == sender && x.round == round)
        .ok_or(TxError::NotASeat(sender))?;
    if seat.commitment.is_some() {
        return Err(TxError::AlreadyCommitted);
    }
    let tier = seg.tier;
    // Whether the seat held capacity until now (read before its commitment is set).
    let held = crate::admission::seat_holds(&st.params, s, usize::from(segment), &sender, height);
    let seat = live(st, &session)?
        .segments
        .get_mut(usize::from(segment))
        .and_then(|g| {
            g.seats
                .iter_mut()
                .find(|x| x.account == sender && x.round == round)
        })
        .ok_or(TxError::NotASeat(sender))?;
    seat.commitment = Some(commitment);
    if held {
        crate::admission::released(&mut st.judging, tier);
    }
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

/// Whether `sender` holds a seat, of any round, on every (session, segment) a batch of
/// votes names, in a session not final yet (live, or decided and appealable, so that a
/// vote handed over just before its session was decided does not sink the batch): else
/// the batch is refused whole, naming the first such entry. A batch carries its sender's
/// own votes only, so the entries it may carry refused (late, repeated, copied, not
/// opening) are bounded by the sender's seats, and nobody fills the feed with refusals
/// that name other seats' sessions. O(entries x seats of a segment).
pub fn batch_seated(
    st: &State,
    sender: &AccountId,
    named: impl IntoIterator<Item = (Hash, u16)>,
) -> Result<(), TxError> {
    for (session, segment) in named {
        let seated = st
            .sessions
            .get(&session)
            .or_else(|| st.appealable.get(&session))
            .and_then(|s| s.segments.get(usize::from(segment)))
            .is_some_and(|g| g.seats.iter().any(|x| x.account == *sender));
        if !seated {
            return Err(TxError::BatchNotSeated { session, segment });
        }
    }
    Ok(())
}

/// Applies the entries of a batch of votes one by one, each as its single call would
/// apply (`apply`, which changes nothing when it fails), once [`batch_seated`] holds. An
/// entry refused fails alone, with a [`Event::VoteRefused`] in its place among the
/// events; the batch fails, changing nothing, only when every entry is refused, and then
/// with the first entry's error (so a batch sent before its window waits, as a single
/// call would).
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

/// The rule of a batch: `apply` each entry (changing nothing when it fails), `refused`
/// names a failed one among the events; all refused, the batch fails with the first
/// error and its events are dropped.
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
#[derive(Clone, Copy)]
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
    let (session, segment, vote, reason) = (
        opening.session,
        opening.segment,
        opening.vote,
        opening.reason,
    );
    // The reason's bound was checked with the transaction's format (`Tx::validate`).
    let counted = open_vote(live(st, &session)?, sender, &opening)?;
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

/// A reveal's part in its session: `sender`'s seat of the round revealing in `s` takes
/// the vote its commitment binds; returns whether it counts (the first `k` judgements
/// of the segment do).
fn open_vote(s: &mut Session, sender: AccountId, opening: &Opening<'_>) -> Result<bool, TxError> {
    let Phase::Reveal { round, .. } = s.phase else {
        return Err(TxError::WrongPhase("the reveal window is not open"));
    };
    let seg = s
        .segments
        .get_mut(usize::from(opening.segment))
        .ok_or(TxError::UnknownSegment(opening.segment))?;
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
    let Opening {
        session,
        vote,
        salt,
        reason,
        ..
    } = *opening;
    if !verify_commitment(&c, &session, &seg_id, &sender, vote, salt, reason) {
        return Err(TxError::CommitmentMismatch);
    }
    // An abstention is present but takes no counted place: the first `k` judgements
    // count, so a seat that cannot judge never crowds out one that can.
    let counted = !vote.is_abstain() && counted_so_far < k;
    seat.vote = Some(vote);
    seat.reason = Some(reason.to_string());
    seat.counted = counted;
    Ok(counted)
}

/// Whether the first round of `s` would be settled ([`crate::tally`]: every committed
/// seat revealed, no segment undecided) once `reveals` ((sender, call) pairs; calls other
/// than a single `Reveal` of `s`, and reveals that do not open their commitment, are
/// passed over) are applied: then its honeypot set may be opened in the same block, right
/// after them. A provider's node asks it of the reveals its mempool holds, before it
/// sends its set early; the contract asks the same of the session itself.
pub fn settles_with<'a>(
    s: &Session,
    session: &Hash,
    reveals: impl IntoIterator<Item = (AccountId, &'a Call)>,
) -> bool {
    if !matches!(s.phase, Phase::Reveal { round: 0, .. }) {
        return false;
    }
    let mut s = s.clone();
    for (sender, call) in reveals {
        if let Call::Reveal {
            session: id,
            segment,
            vote,
            salt,
            reason,
        } = call
            && id == session
        {
            let opening = Opening {
                session: *id,
                segment: *segment,
                vote: *vote,
                salt,
                reason,
            };
            let _ = open_vote(&mut s, sender, &opening);
        }
    }
    crate::tally::round_settled(&s, 0)
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
    if !s.honeypots_opened {
        return Err(TxError::HoneypotsNotOpened);
    }
    if mapping_commitment(&mapping, salt) != s.manifest.mapping_commitment {
        return Err(TxError::CommitmentMismatch);
    }
    s.mapping = Some(mapping);
    events.push(Event::MappingRevealed { session, mapping });
    Ok(())
}

/// `RevealHoneypots`: opens the session's whole committed honeypot set at once, or
/// refuses, changing nothing. The openings must be exactly the committed set
/// ([`honeypot_set_commitment`] of their segments under `set_salt`), each matching its
/// segment's verdict commitment. A set segment may not be the conclusion, nor a segment
/// that a segment outside the set (or a left-out one) rests on: a planted error must never
/// reach the trace. The empty set may be opened as soon as the votes are bound (a reveal
/// window), so that a session without honeypots is tallied at its last reveal; any other
/// set in the disclosure window only.
pub(crate) fn reveal_honeypot_set(
    st: &mut State,
    sender: AccountId,
    session: Hash,
    openings: &[HoneypotOpening],
    set_salt: &Salt,
    events: &mut Vec<Event>,
) -> Result<(), TxError> {
    let cap = usize::from(st.params.max_honeypots);
    let s = live(st, &session)?;
    if s.provider != sender {
        return Err(TxError::NotProvider);
    }
    // A set is opened once no seat is left to vote on it: in the disclosure, or in the
    // first round's reveal window as soon as that round is settled (every seat that
    // committed has revealed, earlier in this block or before it, and no segment is
    // undecided, so no escalation draws seats that would know the set). A session
    // decided in the block of its last reveal thus loses no block to its honeypots.
    let open_now = match s.phase {
        Phase::Disclose { .. } => true,
        Phase::Reveal { .. } if openings.is_empty() => true,
        Phase::Reveal { round: 0, .. } => crate::tally::round_settled(s, 0),
        _ => false,
    };
    if !open_now {
        return Err(TxError::WrongPhase(
            "honeypots are opened once no seat is left to vote (an empty set once the votes are committed)",
        ));
    }
    if s.honeypots_opened {
        return Err(TxError::AlreadyDisclosed);
    }
    let set: BTreeSet<u16> = openings.iter().map(|o| o.segment).collect();
    if honeypot_set_commitment(
        &openings.iter().map(|o| o.segment).collect::<Vec<_>>(),
        set_salt,
    ) != s.manifest.honeypot_set
    {
        return Err(TxError::HoneypotSetMismatch);
    }
    if openings.len() > cap {
        return Err(TxError::TooManyHoneypots(
            u16::try_from(openings.len()).unwrap_or(u16::MAX),
        ));
    }
    for o in openings {
        let g = s
            .segments
            .get(usize::from(o.segment))
            .ok_or(TxError::UnknownSegment(o.segment))?;
        let c = g.entry.honeypot.ok_or(TxError::NotAHoneypot(o.segment))?;
        if honeypot_commitment(&g.entry.id, o.verdict, o.difficulty, &o.salt) != c {
            return Err(TxError::CommitmentMismatch);
        }
        if g.entry.conclusion {
            return Err(TxError::HoneypotNotAllowed {
                segment: o.segment,
                why: "it is flagged as the trace's conclusion",
            });
        }
    }
    let rests_on_set = |deps: &[u16]| deps.iter().any(|d| set.contains(d));
    let outside_rests = s
        .segments
        .iter()
        .enumerate()
        .filter(|(i, _)| !u16::try_from(*i).is_ok_and(|i| set.contains(&i)))
        .find_map(|(_, g)| g.entry.depends_on.iter().find(|d| set.contains(d)).copied())
        .or_else(|| {
            s.manifest
                .left_out
                .iter()
                .find(|l| rests_on_set(&l.depends_on))
                .and_then(|l| l.depends_on.iter().find(|d| set.contains(d)).copied())
        });
    if let Some(segment) = outside_rests {
        return Err(TxError::HoneypotHasDependents(segment));
    }
    for o in openings {
        if let Some(g) = s.segments.get_mut(usize::from(o.segment)) {
            g.honeypot = Some((o.verdict, o.difficulty));
        }
        events.push(Event::HoneypotRevealed {
            session,
            segment: o.segment,
            verdict: o.verdict,
        });
    }
    s.honeypots_opened = true;
    Ok(())
}
