//! Quorums and the failure bound: segment verdicts from counted votes (`q = ceil(tau k)`),
//! ARES-style error propagation along `depends_on`, the three-valued trace verdict over
//! the weighted trace quorum `beta`, and Hoeffding's bound in fixed point.
//!
//! The functions that turn segment verdicts into a trace verdict ([`decide`]) are public
//! so that a node's local preview (`trust-node check`) and quality benchmark decide
//! exactly as the contract does.

use trust_protocol::{
    Hash,
    tx::{Tier, dependency_order},
    units::{Amount, Ppm},
};

use crate::{
    block::BlockCtx,
    econ::{self, Score},
    events::Event,
    params::Params,
    registry,
    state::{
        AppealRecord, Coverage, FailureBound, LeftOutOutcome, LocalVerdict, Outcome, SeatSlash,
        SegmentOutcome, SegmentState, SegmentVerdict, Session, SlashReason, State, TraceVerdict,
        VoteCounts,
    },
};

/// Whether every seat of `round` that committed has revealed.
pub(crate) fn all_revealed(s: &Session, round: u8) -> bool {
    s.segments
        .iter()
        .flat_map(|g| g.seats.iter())
        .filter(|x| x.round == round && x.commitment.is_some())
        .all(|x| x.vote.is_some())
}

/// Whether `round` of `s` is settled before its reveal window closes: every seat that
/// committed has revealed, and every segment seated in the round has a verdict of its
/// own (none undecided), so no escalation follows and no seat is left to vote.
pub(crate) fn round_settled(s: &Session, round: u8) -> bool {
    all_revealed(s, round)
        && s.segments
            .iter()
            .filter(|g| g.seats.iter().any(|x| x.round == round))
            .all(|g| {
                let counts = round_counts(g, round);
                let q = round_quorum(s.manifest.quorum.tau, g.k, &counts);
                local_verdict(&counts, q) != LocalVerdict::Undecided
            })
}

/// The seat quorum `q = ceil(tau k)`, at least 1.
pub fn quorum(tau: Ppm, k: u8) -> u8 {
    u8::try_from(tau.ceil_mul(u64::from(k)))
        .unwrap_or(u8::MAX)
        .max(1)
}

/// The votes of one round of a segment. Every judgement (a revealed Valid, Invalid or
/// Ungrounded vote) counts towards the verdict, whatever the order it arrived in; `late`
/// says how many of them came after the first `k` (auditor racing: those are not paid).
/// A seat the provider starved of its keys that did not reveal is `starved`, not
/// `missing`: it could not judge, and it still counts in the quorum's size
/// ([`round_quorum`]).
pub(crate) fn round_counts(seg: &SegmentState, round: u8) -> VoteCounts {
    use trust_protocol::Vote;
    let deps = seg.entry.depends_on.len();
    let mut c = VoteCounts::default();
    for s in seg.seats.iter().filter(|s| s.round == round) {
        match s.vote {
            Some(Vote::Valid) => c.valid = c.valid.saturating_add(1),
            Some(Vote::Invalid) => c.invalid = c.invalid.saturating_add(1),
            Some(Vote::Ungrounded) => c.ungrounded = c.ungrounded.saturating_add(1),
            // A seat the provider did not key could not judge: its abstention (a node's
            // seat commits one at its give-up block) is the provider's doing, counted as
            // starved, so that withholding keys from honest seats never lets the
            // provider's own seats decide the round alone.
            // Either abstention: a seat that could not judge, whoever caused it. A seat
            // the provider did not key cannot have read the payload either, so its
            // abstention of either kind is counted (and paid) once, as starved.
            Some(Vote::Abstain | Vote::PayloadAbstain) if !s.keyed(deps) => {
                c.starved = c.starved.saturating_add(1)
            }
            Some(Vote::Abstain | Vote::PayloadAbstain) => {
                c.abstained = c.abstained.saturating_add(1)
            }
            None if !s.keyed(deps) => c.starved = c.starved.saturating_add(1),
            None => c.missing = c.missing.saturating_add(1),
        }
        if s.vote.is_some_and(|v| !v.is_abstain()) && !s.counted {
            c.late = c.late.saturating_add(1);
        }
    }
    c
}

/// The seats of `round` the provider pays for a payload abstention
/// ([`trust_protocol::Vote::PayloadAbstain`]): none unless at least the round's quorum of
/// its keyed seats cast it (a lone seat claiming the provider's payload is at fault is an
/// unpaid abstention, like any other), and then those seats in seat order, at most `k`
/// less the round's paid judgements, so a round never costs the provider more rewards
/// than `k` judgements would have. `tau` is the session's.
pub(crate) fn payload_paid_seats(seg: &SegmentState, round: u8, tau: Ppm) -> Vec<usize> {
    let deps = seg.entry.depends_on.len();
    let claimed: Vec<usize> = seg
        .seats
        .iter()
        .enumerate()
        .filter(|(_, s)| {
            s.round == round
                && s.keyed(deps)
                && s.commitment.is_some()
                && s.vote.is_some_and(|v| v.is_payload_abstain())
        })
        .map(|(j, _)| j)
        .collect();
    let c = round_counts(seg, round);
    let q = round_quorum(tau, seg.k, &c);
    if claimed.len() < usize::from(q) {
        return Vec::new();
    }
    let paid_judgements = seg
        .seats
        .iter()
        .filter(|s| s.round == round && s.counted)
        .count();
    let room = usize::from(seg.k).saturating_sub(paid_judgements);
    claimed.into_iter().take(room).collect()
}

/// One reward the provider owes a seat it made abstain (starved of its keys, or unable to
/// judge its payload): from the fee left in `escrow`, then from the `bond`, as far as
/// they reach.
fn owed_reward(reward: Amount, escrow: &mut Amount, bond: &mut Amount) -> Amount {
    let from_escrow = reward.min(*escrow);
    *escrow = escrow.saturating_sub(from_escrow);
    let from_bond = reward.saturating_sub(from_escrow).min(*bond);
    *bond = bond.saturating_sub(from_bond);
    from_escrow.saturating_add(from_bond)
}

/// The judgements of a round (revealed votes that are not abstentions).
pub(crate) fn judgements(c: &VoteCounts) -> u16 {
    c.valid
        .saturating_add(c.invalid)
        .saturating_add(c.ungrounded)
}

/// The quorum of a round: `q = max(ceil(tau k), ceil(tau n))`, where `n` is how many of
/// its seats judged (revealed Valid, Invalid or Ungrounded) or were starved of their keys
/// by the provider. An abstention never raises it: a seat that abstains decides nothing
/// and blocks nothing (with `tau` at most `(k - 1) / k`, one abstaining seat cannot keep
/// the others of the smallest panel from deciding). A seat the provider starved does
/// raise it, so a provider that starves honest seats cannot let its own decide; a no-show
/// (keyed, never revealed) does not count, so an absent seat cannot block one.
pub fn round_quorum(tau: Ppm, k: u8, c: &VoteCounts) -> u8 {
    let n = judgements(c).saturating_add(c.starved);
    let by_n = u8::try_from(tau.ceil_mul(u64::from(n))).unwrap_or(u8::MAX);
    quorum(tau, k).max(by_n)
}

/// Whether at least a quorum of a honeypot's seats judged it in the deciding round (`c`
/// its counts there): only then could they have disputed its truth.
pub(crate) fn judged_by_quorum(c: &VoteCounts, q: u8) -> bool {
    judgements(c) >= u16::from(q)
}

/// Whether the judgements of a round (`c`) on `side`'s side of Valid/not-Valid are more
/// than two thirds of all its judgements.
pub(crate) fn supermajority(c: &VoteCounts, side: trust_protocol::Vote) -> bool {
    let on_side = if side.is_valid() {
        c.valid
    } else {
        c.invalid.saturating_add(c.ungrounded)
    };
    u32::from(on_side) * 3 > u32::from(judgements(c)) * 2
}

/// Whether a vote `vote` on a revealed honeypot whose truth (the provider's word) is
/// `truth`, in a round whose judgements are `c`, rests on evidence beside the provider's
/// word: at least two of the round's *other* judgements for the truth and more than two
/// thirds of them (the supermajority [`supermajority`] asks for before a judgement against
/// a honeypot takes stake, taken without the seat's own vote, which is no evidence about
/// itself). Only such a miss names its provider in the seat's record
/// ([`crate::HoneypotStats::miss_providers`]), and the rubber-stamp rule needs misses of
/// `min_providers` providers: a rubber-stamper that approves known errors beside seats
/// that caught them is named by each provider; an honest seat that approves a correct step
/// a griefing provider called an error is not, unless the provider's own seats are at
/// least two and more than two thirds of the others.
///
/// `in_round`: the seat sat in the round `c` counts (its vote is among them, and is taken
/// out); a seat of an earlier round (before an escalation) is weighed against the deciding
/// round's judgements whole.
pub(crate) fn recorded_on_evidence(
    c: &VoteCounts,
    truth: trust_protocol::Vote,
    vote: trust_protocol::Vote,
    in_round: bool,
) -> bool {
    let mut for_truth = if truth.is_valid() {
        c.valid
    } else {
        c.invalid.saturating_add(c.ungrounded)
    };
    let mut others = judgements(c);
    if in_round && !vote.is_abstain() {
        others = others.saturating_sub(1);
        if vote.is_valid() == truth.is_valid() {
            for_truth = for_truth.saturating_sub(1);
        }
    }
    for_truth >= 2 && u32::from(for_truth) * 3 > u32::from(others) * 2
}

/// Whether a revealed honeypot is disputed: the judgements of its deciding round (`c`) on
/// the other side of Valid/not-Valid from its `truth` reach `q`, that round's quorum at
/// the network's least `tau` (so at any session `tau`). A disputed honeypot scores nobody:
/// a provider's word never outweighs a quorum of seats.
pub(crate) fn disputed(c: &VoteCounts, truth: trust_protocol::Vote, q: u8) -> bool {
    let against = if truth.is_valid() {
        c.invalid.saturating_add(c.ungrounded)
    } else {
        c.valid
    };
    against >= u16::from(q)
}

/// A segment's own verdict in one round: a side wins with `q` counted votes, unless both
/// sides reach `q` (possible only when `tau = 1/2` and `k` is even), which is undecided.
pub fn local_verdict(c: &VoteCounts, q: u8) -> LocalVerdict {
    let q = u16::from(q);
    let against = c.invalid.saturating_add(c.ungrounded);
    let pass = c.valid >= q;
    let fail = against >= q;
    match (pass, fail) {
        (true, false) => LocalVerdict::Valid,
        (false, true) if c.invalid > c.ungrounded => LocalVerdict::Invalid,
        (false, true) => LocalVerdict::Ungrounded,
        _ => LocalVerdict::Undecided,
    }
}

/// Whether a round was left undecided because its seats abstained (rather than split):
/// such a segment escalates only to a higher tier, never to more seats of the same one.
pub(crate) fn abstained(c: &VoteCounts, q: u8) -> bool {
    c.abstained >= u16::from(q)
}

/// A segment's final verdict from its own and whether a segment it rests on failed: a
/// segment that holds or is undecided inherits the error (Propagated); its own error
/// stays its own.
fn final_verdict(own: LocalVerdict, inherited: bool) -> SegmentVerdict {
    match own {
        LocalVerdict::Valid | LocalVerdict::Undecided if inherited => SegmentVerdict::Propagated,
        LocalVerdict::Valid => SegmentVerdict::Valid,
        LocalVerdict::Invalid => SegmentVerdict::Invalid,
        LocalVerdict::Ungrounded => SegmentVerdict::Ungrounded,
        LocalVerdict::Undecided => SegmentVerdict::Undecided,
    }
}

/// One segment as the trace verdict sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Weighed {
    /// Its final verdict (after propagation); `Undecided` for a segment left out.
    pub verdict: SegmentVerdict,
    /// Its weight.
    pub weight: u32,
    /// Whether it is (part of) the final output.
    pub conclusion: bool,
    /// Whether it is Valid and so is everything it rests on (see [`decide`]).
    pub sound: bool,
}

/// What the trace verdict is made of.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TraceTally {
    /// The verdict.
    pub verdict: TraceVerdict,
    /// `W`: weight of Valid segments.
    pub passing: u64,
    /// Weight of Undecided segments.
    pub undecided: u64,
    /// `sum w`.
    pub total: u64,
    /// Whether an error reached the conclusion.
    pub error_at_conclusion: bool,
    /// Whether any segment is an error (Invalid, Ungrounded, Propagated), at the
    /// conclusion or not.
    pub any_error: bool,
    /// Whether every conclusion segment was judged Valid.
    pub conclusion_judged: bool,
    /// Whether every conclusion segment was judged Valid and so was everything it rests
    /// on: nothing it stands on was left unjudged.
    pub conclusion_sound: bool,
}

/// The conclusion segments: those flagged; when none is, the sinks of `depends_on` (the
/// segments no other segment rests on).
pub fn conclusions(flags: &[bool], deps: &[&[u16]]) -> Vec<bool> {
    if flags.iter().any(|f| *f) {
        return flags.to_vec();
    }
    let mut sink = vec![true; flags.len()];
    for ds in deps {
        for d in *ds {
            if let Some(x) = sink.get_mut(usize::from(*d)) {
                *x = false;
            }
        }
    }
    sink
}

/// The three-valued trace verdict, in exact integers:
/// - `Fail` when an error (Invalid, Ungrounded, Propagated) reaches a conclusion segment,
///   or when `W + undecided < beta * sum w` (even if every undecided segment held, the
///   trace could not pass);
/// - `Pass` when `W >= beta * sum w` and at least `beta` of the claims (each counted once,
///   whatever its weight) are Valid, no segment is an error, and the conclusion is sound:
///   it was judged Valid and so was everything it rests on (a PASS means the reasoning
///   holds: a step judged wrong spoils it even where the conclusion does not rest on it);
/// - `Inconclusive` otherwise.
pub fn trace_verdict(segments: &[Weighed], beta: Ppm) -> TraceTally {
    let (mut pass, mut undecided, mut total) = (0u64, 0u64, 0u64);
    let mut error_at_conclusion = false;
    let mut any_error = false;
    let (mut judged, mut sound, mut any_conclusion) = (true, true, false);
    for s in segments {
        let w = u64::from(s.weight);
        total = total.saturating_add(w);
        match s.verdict {
            SegmentVerdict::Valid => pass = pass.saturating_add(w),
            SegmentVerdict::Undecided => undecided = undecided.saturating_add(w),
            _ => {}
        }
        any_error |= s.verdict.is_error();
        if s.conclusion {
            any_conclusion = true;
            error_at_conclusion |= s.verdict.is_error();
            judged &= s.verdict == SegmentVerdict::Valid;
            sound &= s.sound && s.verdict == SegmentVerdict::Valid;
        }
    }
    let (judged, sound) = (judged && any_conclusion, sound && any_conclusion);
    let share = |part: u64, whole: u64| {
        u128::from(part).saturating_mul(1_000_000)
            >= u128::from(beta.0).saturating_mul(u128::from(whole))
    };
    let reaches = |w: u64| share(w, total);
    // The same share of the claims, counted one each: weights cannot make the judged
    // claims outweigh many unjudged ones.
    let claims = u64::try_from(segments.len()).unwrap_or(u64::MAX);
    let valid_claims = segments
        .iter()
        .filter(|s| s.verdict == SegmentVerdict::Valid)
        .count();
    let enough_claims = share(u64::try_from(valid_claims).unwrap_or(0), claims);
    let verdict = if total == 0 {
        TraceVerdict::Inconclusive
    } else if error_at_conclusion || !reaches(pass.saturating_add(undecided)) {
        TraceVerdict::Fail
    } else if reaches(pass) && enough_claims && sound && !any_error {
        TraceVerdict::Pass
    } else {
        TraceVerdict::Inconclusive
    };
    TraceTally {
        verdict,
        passing: pass,
        undecided,
        total,
        error_at_conclusion,
        any_error,
        conclusion_judged: judged,
        conclusion_sound: sound,
    }
}

/// The entries in an order where what an entry rests on comes before it
/// ([`dependency_order`]); entries on a cycle, which manifest validation rules out, are
/// taken in index order.
pub fn order(entries: &[Entry]) -> Vec<usize> {
    dependency_order(entries.len(), |i| {
        entries
            .get(i)
            .map(|e| e.rests_on.clone())
            .unwrap_or_default()
    })
    .unwrap_or_else(|_| (0..entries.len()).collect())
}

/// One entry of a trace for [`decide`]: a session segment or a left-out one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    /// Its own verdict (a left-out segment is `Undecided`).
    pub local: LocalVerdict,
    /// Its weight in the trace quorum.
    pub weight: u32,
    /// What it rests on, as indices into the entries.
    pub rests_on: Vec<usize>,
    /// Flagged as (part of) the final output.
    pub conclusion: bool,
    /// For an OPERATION: the entry whose calculation it is.
    pub supports: Option<usize>,
    /// A revealed honeypot: judged, but outside the trace.
    pub honeypot: bool,
}

/// The verdicts of a whole trace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decided {
    /// Each entry's final verdict, in entry order.
    pub finals: Vec<SegmentVerdict>,
    /// Which entries are the conclusion.
    pub conclusions: Vec<bool>,
    /// The trace verdict.
    pub tally: TraceTally,
}

/// The trace verdict from every entry's own verdict, as the contract decides it:
/// 1. an OPERATION judged Invalid (or Ungrounded) makes the segment it supports Invalid
///    (Ungrounded): that segment asserts a false calculation; a Valid OPERATION changes
///    nothing, since a calculation that holds says nothing of the claim around it;
/// 2. errors propagate along what each entry rests on ([`final_verdict`]'s rule), taking the
///    entries in an order where what an entry rests on comes first ([`order`]);
/// 3. an entry is sound when it is Valid and everything it rests on is sound;
/// 4. OPERATIONs and honeypots carry no weight and are never the conclusion; the others
///    make the [`trace_verdict`], with the flagged conclusions (else the sinks).
pub fn decide(entries: &[Entry], beta: Ppm) -> Decided {
    let n = entries.len();
    let order = order(entries);
    let mut local: Vec<LocalVerdict> = entries.iter().map(|e| e.local).collect();
    for e in entries.iter().filter(|e| !e.honeypot) {
        let Some(target) = e.supports.and_then(|t| local.get_mut(t)) else {
            continue;
        };
        match e.local {
            LocalVerdict::Invalid => *target = LocalVerdict::Invalid,
            LocalVerdict::Ungrounded if *target != LocalVerdict::Invalid => {
                *target = LocalVerdict::Ungrounded
            }
            _ => {}
        }
    }
    let mut finals = vec![SegmentVerdict::Undecided; n];
    let mut sound = vec![false; n];
    for &i in &order {
        let (Some(e), Some(l)) = (entries.get(i), local.get(i).copied()) else {
            continue;
        };
        let inherited = e
            .rests_on
            .iter()
            .any(|d| finals.get(*d).is_some_and(|v| v.is_error()));
        let v = final_verdict(l, inherited);
        let grounded = e.rests_on.iter().all(|d| sound.get(*d) == Some(&true));
        if let Some(x) = finals.get_mut(i) {
            *x = v;
        }
        if let Some(x) = sound.get_mut(i) {
            *x = v == SegmentVerdict::Valid && grounded;
        }
    }
    // The trace is its claims: operations and honeypots are outside it, and what they
    // rest on does not stop being a sink because of them.
    let outside = |e: &Entry| e.honeypot || e.supports.is_some();
    let flags: Vec<bool> = entries
        .iter()
        .map(|e| e.conclusion && !outside(e))
        .collect();
    let deps16: Vec<Vec<u16>> = entries
        .iter()
        .map(|e| {
            if outside(e) {
                Vec::new()
            } else {
                e.rests_on
                    .iter()
                    .filter_map(|d| u16::try_from(*d).ok())
                    .collect()
            }
        })
        .collect();
    let dep_refs: Vec<&[u16]> = deps16.iter().map(Vec::as_slice).collect();
    let mut is_conclusion = conclusions(&flags, &dep_refs);
    for (c, e) in is_conclusion.iter_mut().zip(entries) {
        *c &= !outside(e);
    }
    let weighed: Vec<Weighed> = entries
        .iter()
        .enumerate()
        .filter(|(_, e)| !outside(e))
        .map(|(i, e)| Weighed {
            verdict: finals.get(i).copied().unwrap_or(SegmentVerdict::Undecided),
            weight: e.weight,
            conclusion: is_conclusion.get(i).copied().unwrap_or(false),
            sound: sound.get(i).copied().unwrap_or(false),
        })
        .collect();
    Decided {
        finals,
        conclusions: is_conclusion,
        tally: trace_verdict(&weighed, beta),
    }
}

/// Fixed-point scale of probabilities in the bound: 1e18.
const SCALE: u128 = 1_000_000_000_000_000_000;

/// `Pr[Binomial(k, a) >= q]` with `a` scaled by [`SCALE`], by Pascal's recurrence (every
/// intermediate value is at most [`SCALE`], so the products fit in `u128`).
pub(crate) fn binomial_tail(k: u8, a: u128, q: u8) -> u128 {
    let a = a.min(SCALE);
    let b = SCALE.saturating_sub(a);
    let mut row: Vec<u128> = vec![SCALE];
    for _ in 0..k {
        let mut next = vec![0u128; row.len().saturating_add(1)];
        for (c, p) in row.iter().enumerate() {
            if let Some(x) = next.get_mut(c) {
                *x = x.saturating_add(p.saturating_mul(b) / SCALE);
            }
            if let Some(x) = next.get_mut(c.saturating_add(1)) {
                *x = x.saturating_add(p.saturating_mul(a) / SCALE);
            }
        }
        row = next;
    }
    row.iter()
        .skip(usize::from(q))
        .fold(0u128, |s, p| s.saturating_add(*p))
        .min(SCALE)
}

/// Hoeffding's bound (paper Proposition 1) on the probability that a trace whose segments
/// are all correct fails the trace quorum, under the genesis assumptions: each seat of tier
/// `t` votes correctly with probability `(1 - eps_t)(1 - rho)`, so a segment passes with
/// the binomial tail above `q - 1`; with `t = E[W] - beta * sum w`, the bound is
/// `exp(-2 t^2 / sum w^2)`. Stored as `-ln(bound) * 1000`, rounded down (a weaker bound).
pub(crate) fn failure_bound(
    params: &Params,
    segments: &[(Tier, u8, u8, u32)],
    beta: Ppm,
) -> FailureBound {
    let ppm = 1_000_000u128;
    let rho = u128::from(params.assumed_malicious.0.min(1_000_000));
    let mut expected = 0u128; // scaled by SCALE
    let mut total = 0u128;
    let mut sum_sq = 0u128;
    for (tier, k, q, w) in segments {
        let eps = u128::from(params.assumed_error(*tier).0.min(1_000_000));
        // (1 - eps)(1 - rho), from ppm x ppm (1e12) up to 1e18.
        let a = ppm
            .saturating_sub(eps)
            .saturating_mul(ppm.saturating_sub(rho))
            .saturating_mul(ppm);
        let p = binomial_tail(*k, a, *q);
        let w = u128::from(*w);
        expected = expected.saturating_add(p.saturating_mul(w));
        total = total.saturating_add(w);
        sum_sq = sum_sq.saturating_add(w.saturating_mul(w));
    }
    let threshold = u128::from(beta.0)
        .saturating_mul(total)
        .saturating_mul(SCALE / ppm);
    let gap = expected.saturating_sub(threshold) / 1_000_000_000; // now scaled by 1e9
    let exponent_milli = if sum_sq == 0 {
        0
    } else {
        gap.saturating_mul(gap)
            .saturating_mul(2_000)
            .checked_div(sum_sq.saturating_mul(SCALE))
            .unwrap_or(0)
    };
    FailureBound {
        expected_pass_weight_micro: u64::try_from(expected / 1_000_000_000_000).unwrap_or(u64::MAX),
        hoeffding_neg_ln_milli: u64::try_from(exponent_milli).unwrap_or(u64::MAX),
    }
}

/// What a session's segment verdicts make of it, before any economics: the segment and
/// left-out outcomes, the trace tally, coverage and the failure bound. The tally and every
/// appeal round decide through it.
pub(crate) struct Verdicts {
    /// Per session segment.
    pub outcomes: Vec<SegmentOutcome>,
    /// Per left-out segment.
    pub left_out: Vec<LeftOutOutcome>,
    /// The trace verdict and what it is made of.
    pub tally: TraceTally,
    /// How much of the trace was judged.
    pub coverage: Coverage,
    /// The failure bound.
    pub bound: FailureBound,
}

/// Each segment's own verdict and the round that decided it: the last round it was judged
/// in (0, or 1 after an escalation).
pub(crate) fn deciding_verdicts(s: &Session) -> Vec<(LocalVerdict, u8)> {
    s.segments
        .iter()
        .map(|g| {
            let v = g.rounds.last().copied().unwrap_or(LocalVerdict::Undecided);
            let round = u8::try_from(g.rounds.len().saturating_sub(1)).unwrap_or(0);
            (v, round)
        })
        .collect()
}

/// [`Verdicts`] of `s` when segment `i` has its own verdict `local[i].0`, decided in round
/// `local[i].1` (whose votes its outcome counts; its tier and `k` are the segment's now).
pub(crate) fn verdicts(params: &Params, s: &Session, local: &[(LocalVerdict, u8)]) -> Verdicts {
    let tau = s.manifest.quorum.tau;
    let beta = s.manifest.quorum.beta;
    // Session segments first, then the left-out ones (always Undecided of their own;
    // an OPERATION of theirs that failed makes them wrong).
    let left_out = &s.manifest.left_out;
    let n = s.segments.len();
    let left_deps = |deps: &[u16]| -> Vec<usize> {
        deps.iter()
            .map(|d| n.saturating_add(usize::from(*d)))
            .collect()
    };
    let session_deps = |deps: &[u16]| deps.iter().map(|d| usize::from(*d)).collect();
    let entries: Vec<Entry> = s
        .segments
        .iter()
        .zip(local)
        .map(|(g, (l, _))| {
            let mut rests_on: Vec<usize> = session_deps(&g.entry.depends_on);
            rests_on.extend(left_deps(&g.entry.rests_on_left_out));
            Entry {
                local: *l,
                weight: g.entry.weight,
                rests_on,
                conclusion: g.entry.conclusion,
                supports: g.entry.supports.map(usize::from),
                honeypot: g.honeypot.is_some(),
            }
        })
        .chain(left_out.iter().map(|l| {
            let mut rests_on: Vec<usize> = session_deps(&l.depends_on);
            rests_on.extend(left_deps(&l.rests_on_left_out));
            Entry {
                local: LocalVerdict::Undecided,
                weight: l.weight,
                rests_on,
                conclusion: l.conclusion,
                supports: l.supports.map(usize::from),
                honeypot: false,
            }
        }))
        .collect();
    let decided = decide(&entries, beta);
    let (finals, left_finals) = decided
        .finals
        .split_at(s.segments.len().min(decided.finals.len()));

    let is_conclusion = |i: usize| decided.conclusions.get(i).copied().unwrap_or(false);
    let mut outcomes = Vec::with_capacity(s.segments.len());
    for (i, (g, verdict)) in s.segments.iter().zip(finals).enumerate() {
        let deciding = local.get(i).map_or(0, |l| l.1);
        let mut votes = round_counts(g, deciding);
        let q = round_quorum(tau, g.k, &votes);
        let deps = g.entry.depends_on.len();
        votes.missing = g
            .seats
            .iter()
            .filter(|x| x.vote.is_none() && x.keyed(deps))
            .count()
            .try_into()
            .unwrap_or(u16::MAX);
        outcomes.push(SegmentOutcome {
            id: g.entry.id,
            verdict: *verdict,
            tier: g.tier,
            escalated: g.rounds.len() > 1,
            k: g.k,
            q,
            votes,
            honeypot: g.honeypot.map(|(v, _)| v),
            supports: g.entry.supports,
            conclusion: is_conclusion(i),
            votes_cast: g.votes_cast(),
        });
    }
    let left_outcomes: Vec<LeftOutOutcome> = left_out
        .iter()
        .zip(left_finals)
        .enumerate()
        .map(|(j, (l, v))| LeftOutOutcome {
            tier: l.tier,
            verdict: *v,
            supports: l.supports,
            conclusion: is_conclusion(n.saturating_add(j)),
        })
        .collect();

    // Coverage counts the trace's claims: an OPERATION is part of its segment's claim.
    let claims = entries
        .iter()
        .filter(|e| !e.honeypot && e.supports.is_none())
        .count();
    let mut coverage = Coverage {
        judged: 0,
        segments: u16::try_from(claims).unwrap_or(u16::MAX),
        left_out: [0; 3],
    };
    for (o, (l, _)) in outcomes.iter().zip(local) {
        if o.honeypot.is_none() && o.supports.is_none() && *l != LocalVerdict::Undecided {
            coverage.judged = coverage.judged.saturating_add(1);
        }
    }
    for l in left_out.iter().filter(|l| l.supports.is_none()) {
        let slot = match l.tier {
            Tier::Computer => 0,
            Tier::Llm => 1,
            Tier::Human => 2,
        };
        if let Some(c) = coverage.left_out.get_mut(slot) {
            *c = c.saturating_add(1);
        }
    }

    // The bound speaks only for the votes counted: segments that reached a verdict of
    // their own. A trace with none gets no bound.
    let weights: Vec<u32> = s.segments.iter().map(|g| g.entry.weight).collect();
    let bound_inputs: Vec<(Tier, u8, u8, u32)> = outcomes
        .iter()
        .zip(local)
        .zip(&weights)
        .filter(|((o, (l, _)), _)| {
            o.honeypot.is_none() && o.supports.is_none() && *l != LocalVerdict::Undecided
        })
        .map(|((o, _), w)| (o.tier, o.k, o.q, *w))
        .collect();
    let bound = failure_bound(params, &bound_inputs, beta);
    Verdicts {
        outcomes,
        left_out: left_outcomes,
        tally: decided.tally,
        coverage,
        bound,
    }
}

/// The tally of a session that reached its end: segment verdicts, the trace verdict and
/// its failure bound, rewards, slashes and reputation (the contract's `end_block` calls it).
pub(crate) fn tally(
    st: &mut State,
    ctx: &BlockCtx,
    id: &Hash,
    s: &mut Session,
    ev: &mut Vec<Event>,
) -> Outcome {
    let tau = s.manifest.quorum.tau;
    let beta = s.manifest.quorum.beta;
    let local = deciding_verdicts(s);
    let Verdicts {
        outcomes,
        left_out: left_outcomes,
        tally: t,
        coverage,
        bound,
    } = verdicts(&st.params, s, &local);
    let trace = t.verdict;
    let (passing_weight, total_weight) = (t.passing, t.total);

    // Economics: every seat of every round is scored against the segment's deciding
    // verdict, or against the truth for a revealed honeypot its seats do not dispute.
    // Every judgement is scored (every one counted towards the verdict); only the
    // first `k` of a round are paid.
    let mut escrow = s.escrow;
    let mut bond = s.bond;
    let mut bond_burned = 0u64;
    let mut disputed_honeypots = 0u16;
    let mut rewards_paid = 0u64;
    let mut honeypot_voters = Vec::new();
    let mut starved = Vec::new();
    let mut payload = Vec::new();
    let mut seat_slashes = Vec::new();
    let provider_counts = st
        .accounts
        .get(&s.provider)
        .is_some_and(|a| a.fees_paid >= st.params.rubber_stamp.min_provider_fees);
    let mut losses = std::mem::take(&mut s.losses);
    for (i, g) in s.segments.iter().enumerate() {
        let segment = u16::try_from(i).unwrap_or(u16::MAX);
        let deps = g.entry.depends_on.len();
        let own = || local.get(i).and_then(|l| l.0.as_vote());
        let deciding = local.get(i).map_or(0, |l| l.1);
        let c = round_counts(g, deciding);
        let q = round_quorum(tau, g.k, &c);
        // Disputing takes the quorum at the network's least `tau`, whatever the
        // session's: a provider's `tau = 1` must not let one colluding seat block the
        // dispute of its false honeypot.
        let q_dispute = round_quorum(st.params.min_tau, g.k, &c);
        let (target, truth) = match g.honeypot {
            Some((truth, _)) if disputed(&c, truth, q_dispute) => {
                // A quorum of seats contradicts the provider's truth: its word does
                // not outweigh them. Its bond for this honeypot burns (paying it to the
                // seats would pay seats to dispute), and nobody is scored on it.
                let burn = st.params.honeypot_bond.min(bond);
                bond = bond.saturating_sub(burn);
                bond_burned = bond_burned.saturating_add(burn);
                st.burned = st.burned.saturating_add(burn);
                disputed_honeypots = disputed_honeypots.saturating_add(1);
                ev.push(Event::HoneypotDisputed {
                    session: *id,
                    segment,
                    burned: burn,
                });
                (None, None)
            }
            // Fewer judgements than a quorum (seats starved of their keys, or that
            // could not read the segment and abstained): the seats could not have
            // disputed the truth, so it does not score them either; a provider cannot
            // make its word count by leaving one honest seat alone on a false honeypot.
            Some(_) if !judged_by_quorum(&c, q) => (own(), None),
            Some((truth, d)) => (Some(truth), Some((truth, d))),
            None => (own(), None),
        };
        // A revealed honeypot's truth is the provider's word: it scores a judgement
        // against it only when more than two thirds of the round's judgements side with
        // it. Below that (a provider whose colluding seats hold the rest of a small
        // panel), the seats on the other side lose reputation but no stake; those on
        // its side are scored as usual. Every vote is recorded for the rubber-stamp
        // rule, but a miss names its provider (and the rule needs misses from
        // `min_providers` providers) only on evidence ([`recorded_on_evidence`]: at least
        // two of the other judgements, and more than two thirds of them, back the truth)
        // and only for a provider that paid fees.
        let contested_truth = truth.is_some_and(|(t, _)| !supermajority(&c, t));
        let mut rounds: Vec<u8> = g.seats.iter().map(|x| x.round).collect();
        rounds.sort_unstable();
        rounds.dedup();
        for r in rounds {
            for j in payload_paid_seats(g, r, tau) {
                if let Some(seat) = g.seats.get(j) {
                    payload.push((segment, seat.account));
                }
            }
        }
        for (j, seat) in g.seats.iter().enumerate() {
            // A seat the provider did not give its keys in time could not judge: it is
            // neither slashed nor scored unless it judged anyway, and the provider
            // pays it below.
            let judged = matches!(seat.vote, Some(v) if !v.is_abstain());
            if !seat.keyed(deps) && !judged {
                starved.push((segment, seat.account));
                continue;
            }
            let score = match (seat.commitment, seat.vote) {
                (None, _) | (Some(_), None) => Some(Score::Wrong(SlashReason::NoShow)),
                // Present but unable to judge: neither rewarded nor punished here (a
                // payload abstention a quorum of the round shares is paid below, by the
                // provider).
                (Some(_), Some(v)) if v.is_abstain() => None,
                (Some(_), Some(vote)) => target.map(|t| {
                    if vote.is_valid() == t.is_valid() {
                        Score::Agree { paid: seat.counted }
                    } else if contested_truth {
                        Score::Outvoted
                    } else {
                        Score::Wrong(SlashReason::WrongVote)
                    }
                }),
            };
            let wrong_vote = matches!(score, Some(Score::Wrong(SlashReason::WrongVote)));
            let lost_before = losses.get(&seat.account).copied().unwrap_or(0);
            if let Some(score) = score {
                rewards_paid = rewards_paid.saturating_add(econ::score_seat(
                    st,
                    &mut econ::Pot {
                        escrow: &mut escrow,
                        losses: &mut losses,
                    },
                    &econ::SeatRef {
                        block_hash: &ctx.block_hash,
                        session: id,
                        segment,
                        round: seat.round,
                        seat: &seat.account,
                    },
                    score,
                    ev,
                ));
            }
            let lost = losses
                .get(&seat.account)
                .copied()
                .unwrap_or(0)
                .saturating_sub(lost_before);
            if wrong_vote && lost > 0 {
                seat_slashes.push((i, j, lost));
            }
            if let (Some((truth, d)), Some(vote)) = (truth, seat.vote) {
                // A miss names its provider towards the rule's `min_providers` only on
                // evidence beside the provider's word.
                let evidenced = recorded_on_evidence(&c, truth, vote, seat.round == deciding);
                econ::record_honeypot(
                    st,
                    &seat.account,
                    &s.provider,
                    provider_counts && evidenced,
                    vote,
                    truth,
                    d,
                );
                honeypot_voters.push(seat.account);
            }
        }
    }
    s.losses = losses;
    for (i, j, amount) in seat_slashes {
        if let Some(seat) = s.segments.get_mut(i).and_then(|g| g.seats.get_mut(j)) {
            seat.slash = Some(SeatSlash {
                reason: SlashReason::WrongVote,
                amount,
            });
        }
    }
    honeypot_voters.sort();
    honeypot_voters.dedup();
    for seat in &honeypot_voters {
        econ::check_rubber_stamp(st, id, seat, ev);
    }
    // Who causes a cost pays it: each starved seat gets one reward `R`, from the fee
    // left in escrow, then from the bond.
    let mut starved_paid = 0u64;
    for (segment, seat) in &starved {
        let pay = owed_reward(st.params.reward, &mut escrow, &mut bond);
        starved_paid = starved_paid.saturating_add(pay);
        registry::credit(st, seat, pay);
        ev.push(Event::SeatStarved {
            session: *id,
            segment: *segment,
            seat: *seat,
            paid: pay,
        });
    }
    // The same for the seats whose round agreed, by at least its quorum, that the
    // segment's own payload cannot be judged within the network's published limits
    // (the provider's code exceeded the sandbox's caps or ran non-deterministically, its
    // proof's structure exceeds the check budget): one reward `R` each, from the fee left
    // in escrow, then from the bond ([`payload_paid_seats`]).
    let mut payload_paid = 0u64;
    for (segment, seat) in &payload {
        let pay = owed_reward(st.params.reward, &mut escrow, &mut bond);
        payload_paid = payload_paid.saturating_add(pay);
        registry::credit(st, seat, pay);
        ev.push(Event::PayloadAbstentionPaid {
            session: *id,
            segment: *segment,
            seat: *seat,
            paid: pay,
        });
    }
    // A provider that did not open its committed honeypot set forfeits what is left
    // of its honeypot bond: it cannot keep the set closed to wait for a better moment.
    let honeypots_forfeited = !s.honeypots_opened;
    if honeypots_forfeited && bond > 0 {
        st.burned = st.burned.saturating_add(bond);
        bond_burned = bond_burned.saturating_add(bond);
        ev.push(Event::HoneypotsForfeited {
            session: *id,
            burned: bond,
        });
        bond = 0;
    }
    // What the provider paid out to seats makes its later honeypots count.
    if let Some(a) = st.accounts.get_mut(&s.provider) {
        a.fees_paid = a
            .fees_paid
            .saturating_add(rewards_paid)
            .saturating_add(starved_paid)
            .saturating_add(payload_paid);
    }

    for (i, o) in outcomes.iter().enumerate() {
        ev.push(Event::SegmentDecided {
            session: *id,
            segment: u16::try_from(i).unwrap_or(u16::MAX),
            verdict: o.verdict,
        });
    }
    ev.push(Event::TraceDecided {
        session: *id,
        verdict: trace,
        passing_weight,
        total_weight,
    });
    let refund = escrow.saturating_add(bond);
    if refund > 0 {
        registry::credit(st, &s.provider, refund);
        ev.push(Event::Refunded {
            session: *id,
            provider: s.provider,
            amount: refund,
        });
    }
    Outcome {
        provider: s.provider,
        opened_at: s.opened_at,
        drawn_at: s.drawn_at,
        decided_at: ctx.height,
        segments: outcomes,
        left_out: left_outcomes,
        trace,
        passing_weight,
        undecided_weight: t.undecided,
        total_weight,
        error_at_conclusion: t.error_at_conclusion,
        conclusion_judged: t.conclusion_judged,
        conclusion_sound: t.conclusion_sound,
        coverage,
        beta,
        bound,
        mapping: s.mapping,
        rewards_paid,
        refunded: refund,
        disputed_honeypots,
        bond_burned,
        honeypots_forfeited,
        starved_seats: u16::try_from(starved.len()).unwrap_or(u16::MAX),
        starved_paid,
        payload_seats: u16::try_from(payload.len()).unwrap_or(u16::MAX),
        payload_paid,
        appeals: AppealRecord {
            until: ctx.height.saturating_add(st.params.appeal_window),
            ..AppealRecord::default()
        },
        quorum: s.manifest.quorum.clone(),
        terms: s.manifest.terms.clone(),
        domain: s.manifest.domain.clone(),
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::math::{segment::segment_pass_probability, trace};

    use super::*;

    #[test]
    fn quorum_matches_ceiling() {
        assert_eq!(quorum(Ppm(500_000), 5), 3);
        assert_eq!(quorum(Ppm(600_000), 5), 3);
        assert_eq!(quorum(Ppm(500_000), 4), 2);
        assert_eq!(quorum(Ppm(1), 1), 1);
    }

    #[test]
    fn local_verdicts() {
        let c = |valid, invalid, ungrounded| VoteCounts {
            valid,
            invalid,
            ungrounded,
            ..VoteCounts::default()
        };
        assert_eq!(local_verdict(&c(3, 1, 0), 3), LocalVerdict::Valid);
        assert_eq!(local_verdict(&c(1, 1, 2), 3), LocalVerdict::Ungrounded);
        assert_eq!(local_verdict(&c(1, 2, 1), 3), LocalVerdict::Invalid);
        assert_eq!(local_verdict(&c(0, 2, 1), 3), LocalVerdict::Invalid);
        assert_eq!(local_verdict(&c(2, 1, 0), 3), LocalVerdict::Undecided);
        assert_eq!(local_verdict(&c(2, 2, 0), 2), LocalVerdict::Undecided);
    }

    /// The final verdicts [`decide`] gives entries of these own verdicts and premises.
    fn finals(local: &[LocalVerdict], deps: &[Vec<usize>]) -> Vec<SegmentVerdict> {
        let entries: Vec<Entry> = local
            .iter()
            .zip(deps)
            .map(|(l, d)| entry(*l, d.clone()))
            .collect();
        decide(&entries, Ppm(600_000)).finals
    }

    #[test]
    fn propagation_follows_dependencies_transitively() {
        use LocalVerdict as L;
        use SegmentVerdict as S;
        let local = [L::Valid, L::Invalid, L::Valid, L::Valid, L::Valid];
        let deps = [vec![], vec![0], vec![1], vec![2], vec![0]];
        assert_eq!(
            finals(&local, &deps),
            vec![S::Valid, S::Invalid, S::Propagated, S::Propagated, S::Valid]
        );
    }

    #[test]
    fn undecided_segments_resting_on_a_failed_one_are_propagated() {
        use LocalVerdict as L;
        use SegmentVerdict as S;
        // A bare final answer nobody could judge, resting on an Invalid step.
        let local = [L::Valid, L::Invalid, L::Undecided, L::Undecided];
        let deps = [vec![], vec![0], vec![1], vec![0]];
        assert_eq!(
            finals(&local, &deps),
            vec![S::Valid, S::Invalid, S::Propagated, S::Undecided]
        );
    }

    #[test]
    fn conclusions_are_the_flagged_segments_else_the_sinks() {
        let deps: Vec<&[u16]> = vec![&[], &[0], &[1], &[0]];
        assert_eq!(
            conclusions(&[false, false, true, false], &deps),
            vec![false, false, true, false]
        );
        assert_eq!(
            conclusions(&[false; 4], &deps),
            vec![false, false, true, true]
        );
    }

    #[test]
    fn three_valued_trace_verdicts() {
        use SegmentVerdict as S;
        let w = |verdict, weight, conclusion| Weighed {
            verdict,
            weight,
            conclusion,
            sound: verdict == S::Valid,
        };
        let beta = Ppm(600_000);
        // Every step judged Valid: Pass.
        let all = [
            w(S::Valid, 1, false),
            w(S::Valid, 1, false),
            w(S::Valid, 1, true),
        ];
        assert_eq!(trace_verdict(&all, beta).verdict, TraceVerdict::Pass);
        // 2 of 5 judged Valid, the rest undecided: neither side can be claimed.
        let few = [
            w(S::Valid, 1, false),
            w(S::Valid, 1, false),
            w(S::Undecided, 1, false),
            w(S::Undecided, 1, false),
            w(S::Undecided, 1, true),
        ];
        let t = trace_verdict(&few, beta);
        assert_eq!(t.verdict, TraceVerdict::Inconclusive);
        assert_eq!((t.passing, t.undecided, t.total), (2, 3, 5));
        // W = 3 of 5 = beta, but nobody judged the conclusion: Inconclusive.
        let mut three = few;
        three[2] = w(S::Valid, 1, false);
        let t = trace_verdict(&three, beta);
        assert_eq!(t.verdict, TraceVerdict::Inconclusive);
        assert!(!t.conclusion_judged && !t.conclusion_sound);
        // W = 3 of 5 = beta exactly with the conclusion judged: Pass (the comparison is >=).
        let mut judged = few;
        judged[4] = w(S::Valid, 1, true);
        assert_eq!(trace_verdict(&judged, beta).verdict, TraceVerdict::Pass);
        // A conclusion judged Valid on premises nobody judged is not sound: Inconclusive.
        let mut unsound = judged;
        unsound[4].sound = false;
        let t = trace_verdict(&unsound, beta);
        assert_eq!(t.verdict, TraceVerdict::Inconclusive);
        assert!(t.conclusion_judged && !t.conclusion_sound);
        // An error at the conclusion fails the trace whatever W is.
        let mut wrong_end = all;
        wrong_end[2] = w(S::Propagated, 1, true);
        let t = trace_verdict(&wrong_end, beta);
        assert_eq!(t.verdict, TraceVerdict::Fail);
        assert!(t.error_at_conclusion);
        // An error elsewhere does not reach the conclusion, but the reasoning does not
        // hold: 4 of 5 Valid is no pass.
        let mid = [
            w(S::Valid, 1, false),
            w(S::Invalid, 1, false),
            w(S::Valid, 1, false),
            w(S::Valid, 1, false),
            w(S::Valid, 1, true),
        ];
        let t = trace_verdict(&mid, beta);
        assert_eq!(t.verdict, TraceVerdict::Inconclusive);
        assert!(t.any_error && !t.error_at_conclusion && t.conclusion_sound);
        // Even if every undecided segment held, W could not reach beta: Fail.
        let hopeless = [
            w(S::Invalid, 3, false),
            w(S::Valid, 1, false),
            w(S::Undecided, 1, true),
        ];
        assert_eq!(trace_verdict(&hopeless, beta).verdict, TraceVerdict::Fail);
        // Nothing to weigh.
        assert_eq!(trace_verdict(&[], beta).verdict, TraceVerdict::Inconclusive);
    }

    fn entry(local: LocalVerdict, rests_on: Vec<usize>) -> Entry {
        Entry {
            local,
            weight: 1,
            rests_on,
            conclusion: false,
            supports: None,
            honeypot: false,
        }
    }

    /// A worded step (left out: nobody judged it) with its calculation checked on its
    /// own, a later step resting on it, and the conclusion.
    fn word_problem(op: LocalVerdict, later: LocalVerdict, end: LocalVerdict) -> Vec<Entry> {
        use LocalVerdict as L;
        let mut op = entry(op, vec![]);
        op.supports = Some(1);
        let mut end = entry(end, vec![2]);
        end.conclusion = true;
        vec![op, entry(L::Undecided, vec![]), entry(later, vec![1]), end]
    }

    #[test]
    fn an_operation_is_evidence_for_its_step_and_no_weight_of_its_own() {
        use LocalVerdict as L;
        use SegmentVerdict as S;
        let beta = Ppm(600_000);
        // Every calculation holds but the step around it was not judged: the operation
        // does not pass the step, nor weigh on its own.
        let d = decide(&word_problem(L::Valid, L::Valid, L::Valid), beta);
        assert_eq!(d.finals, vec![S::Valid, S::Undecided, S::Valid, S::Valid]);
        assert_eq!((d.tally.passing, d.tally.total), (2, 3));
        assert!(d.tally.conclusion_judged && !d.tally.conclusion_sound);
        assert_eq!(d.tally.verdict, TraceVerdict::Inconclusive);
        // A wrong calculation makes its step wrong, and the error reaches the conclusion.
        let d = decide(&word_problem(L::Invalid, L::Valid, L::Undecided), beta);
        assert_eq!(
            d.finals,
            vec![S::Invalid, S::Invalid, S::Propagated, S::Propagated]
        );
        assert!(d.tally.error_at_conclusion);
        assert_eq!(d.tally.verdict, TraceVerdict::Fail);
        // An ungrounded operand makes it Ungrounded; the operation is never a conclusion.
        let d = decide(&word_problem(L::Ungrounded, L::Valid, L::Valid), beta);
        assert_eq!(d.finals.get(1), Some(&S::Ungrounded));
        assert_eq!(d.conclusions, vec![false, false, false, true]);
        // With the step judged Valid, everything holds: Pass.
        let mut judged = word_problem(L::Valid, L::Valid, L::Valid);
        judged[1].local = L::Valid;
        let d = decide(&judged, beta);
        assert!(d.tally.conclusion_sound);
        assert_eq!(d.tally.verdict, TraceVerdict::Pass);
    }

    #[test]
    fn entries_are_decided_in_dependency_order_whatever_their_index() {
        use LocalVerdict as L;
        use SegmentVerdict as S;
        // A session segment (0) resting on a left-out one (2) that rests on a failed
        // session segment (1): the error reaches 0 although 2 comes after it.
        let entries = vec![
            entry(L::Valid, vec![2]),
            entry(L::Invalid, vec![]),
            entry(L::Undecided, vec![1]),
        ];
        assert_eq!(order(&entries), vec![1, 2, 0]);
        let d = decide(&entries, Ppm(600_000));
        assert_eq!(d.finals, vec![S::Propagated, S::Invalid, S::Propagated]);
    }

    #[test]
    fn binomial_tail_matches_lemma_one() {
        for (k, eps, rho, tau) in [
            (5u8, 0.05, 0.1, 0.6),
            (3, 0.3, 0.1, 0.5),
            (9, 0.01, 0.2, 0.7),
        ] {
            let q = quorum(Ppm((tau * 1e6) as u32), k);
            let a = ((1.0 - eps) * (1.0 - rho) * 1e18) as u128;
            let fixed = binomial_tail(k, a, q) as f64 / 1e18;
            let float = segment_pass_probability(u32::from(k), eps, rho, tau).unwrap();
            assert!(
                (fixed - float).abs() < 1e-12,
                "{k} {eps} {rho}: {fixed} vs {float}"
            );
        }
    }

    #[test]
    fn hoeffding_bound_matches_the_float_analysis() {
        let params = Params::default();
        let segs: Vec<(Tier, u8, u8, u32)> =
            (0..20).map(|i| (Tier::Llm, 5, 3, 1 + (i % 3))).collect();
        let beta = Ppm(700_000);
        let b = failure_bound(&params, &segs, beta);
        let p = segment_pass_probability(5, 0.05, 0.1, 0.6).unwrap();
        let ws: Vec<trace::WeightedSegment> = segs
            .iter()
            .map(|s| trace::WeightedSegment {
                weight: f64::from(s.3),
                p_pass: p,
            })
            .collect();
        let h = trace::hoeffding_bound(&ws, 0.7).unwrap();
        let fixed = -(b.hoeffding_neg_ln_milli as f64) / 1000.0;
        assert!((fixed - h.ln).abs() < 2e-3, "{fixed} vs {}", h.ln);
        assert!(b.hoeffding_neg_ln_milli > 0);
    }
}
