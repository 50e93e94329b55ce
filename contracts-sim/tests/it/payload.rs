//! The provider pays for the abstentions its payload causes (issue 54; issue 53, finding
//! 11): a seat that abstains because the segment's own payload cannot be judged within the
//! network's published limits ([`Vote::PayloadAbstain`]) is paid one reward from the
//! provider's escrow, as a starved seat, but only when at least its round's quorum cast the
//! same vote. Each test mounts the attack against the contract with signed transactions.

use trust_contracts::{DEFAULT_MAX_TAU, Event, Outcome, SegmentVerdict};
use trust_protocol::{AccountId, Hash, Vote, tx::Tier};

use crate::{
    adversary::{chain, finish, open},
    common::{Chain, manifest, run_round, seats_of, segment, test_params},
};

/// What the provider put up for `sid` (escrow and honeypot bond), read while it is live.
fn put_up(chain: &Chain, sid: &Hash) -> u64 {
    let s = &chain.c.state().sessions[sid];
    s.escrow + s.bond
}

/// The seats paid for a payload abstention, in event order.
fn payload_paid(ev: &[Event]) -> Vec<(AccountId, u64)> {
    ev.iter()
        .filter_map(|e| match e {
            Event::PayloadAbstentionPaid { seat, paid, .. } => Some((*seat, *paid)),
            _ => None,
        })
        .collect()
}

/// Every coin the provider put up is accounted for: paid to seats (judgements, starved
/// seats, payload abstentions), burned, or refunded.
fn assert_escrow_accounted(o: &Outcome, put_up: u64) {
    assert_eq!(
        o.rewards_paid + o.starved_paid + o.payload_paid + o.bond_burned + o.refunded,
        put_up,
        "escrow and bond are accounted for to the coin"
    );
}

/// One Computer segment, `k = 3` at the tau ceiling, voted by `votes` (by seat order).
fn one_segment(votes: [Vote; 3]) -> (Chain, Hash, Vec<AccountId>, u64, Vec<Event>) {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 4)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.quorum.tau = DEFAULT_MAX_TAU;
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    assert_eq!(seats.len(), 3);
    let escrow = put_up(&chain, &sid);
    let mut ev = run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        votes.get(j).copied()
    });
    ev.extend(finish(&mut chain, sid));
    (chain, sid, seats, escrow, ev)
}

/// A lazy seat alone claiming that the provider's payload is at fault gains nothing: its
/// round's quorum did not share the claim, so it is an unpaid abstention like any other,
/// and the other two seats' judgements decide the segment (the claim blocks nothing).
#[test]
fn a_lone_seat_claiming_a_payload_abstention_is_not_paid() {
    let (chain, sid, seats, escrow, ev) =
        one_segment([Vote::PayloadAbstain, Vote::Valid, Vote::Valid]);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Valid);
    assert_eq!((o.payload_seats, o.payload_paid), (0, 0));
    assert!(payload_paid(&ev).is_empty());
    let lazy = seats[0];
    assert_eq!(
        chain.balance(&lazy),
        chain.balance(&seats[1]) - test_params().reward,
        "the lone claimant earned a reward less than a seat that judged"
    );
    assert_eq!(o.rewards_paid, 2 * test_params().reward);
    assert_escrow_accounted(o, escrow);
}

/// A quorum of the round (two of three at the ceiling) agreeing that the payload cannot be
/// judged within the limits is paid, one reward each, from the provider's escrow; the
/// provider's refund shrinks by exactly that, and the segment stays Undecided (the votes
/// decide nothing). The third seat's Valid does not decide it alone either.
#[test]
fn a_quorum_of_payload_abstentions_is_paid_from_escrow_and_the_refund_shrinks_by_it() {
    let reward = test_params().reward;
    let (chain, sid, seats, escrow, ev) =
        one_segment([Vote::PayloadAbstain, Vote::PayloadAbstain, Vote::Valid]);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!((o.payload_seats, o.payload_paid), (2, 2 * reward));
    assert_eq!(
        payload_paid(&ev),
        vec![(seats[0], reward), (seats[1], reward)]
    );
    assert_eq!(
        o.rewards_paid, 0,
        "an undecided segment scores no judgement"
    );
    assert_eq!(o.refunded, escrow - o.bond_burned - 2 * reward);
    assert_escrow_accounted(o, escrow);

    // Against the same session judged by all three: the provider pays no more for the
    // abstentions than a quorum of judgements would have cost it.
    let (judged, jsid, _, jescrow, _) = one_segment([Vote::Valid; 3]);
    let j = judged.c.outcome(&jsid).unwrap();
    assert_eq!(jescrow, escrow);
    assert!(o.payload_paid <= j.rewards_paid);
}

/// All seats of the round agreeing: each is paid once, never more than `k` rewards in all.
#[test]
fn a_whole_round_of_payload_abstentions_costs_the_provider_k_rewards() {
    let reward = test_params().reward;
    let (chain, sid, seats, escrow, _) = one_segment([Vote::PayloadAbstain; 3]);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!((o.payload_seats, o.payload_paid), (3, 3 * reward));
    for s in &seats {
        assert_eq!(
            chain.c.state().auditors[s].slashed,
            0,
            "an abstention is never slashed"
        );
    }
    assert_escrow_accounted(o, escrow);
}

/// The new vote is never a judgement: one payload abstention beside a Valid and an
/// Invalid leaves the segment split (Undecided), exactly as a plain abstention would, and
/// nobody is paid for the claim.
#[test]
fn a_payload_abstention_never_counts_as_a_judgement() {
    let (chain, sid, _, escrow, ev) =
        one_segment([Vote::PayloadAbstain, Vote::Valid, Vote::Invalid]);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
    assert_eq!(o.segments[0].votes.abstained, 1);
    assert_eq!(
        (o.segments[0].votes.valid, o.segments[0].votes.invalid),
        (1, 1)
    );
    assert!(payload_paid(&ev).is_empty());
    assert_escrow_accounted(o, escrow);
    let (plain, psid, _, _, _) = one_segment([Vote::Abstain, Vote::Valid, Vote::Invalid]);
    let p = plain.c.outcome(&psid).unwrap();
    assert_eq!(p.segments[0].verdict, o.segments[0].verdict);
    assert_eq!(p.segments[0].votes, o.segments[0].votes);
}

/// Racing seats (k = 3 and two more): sybils claiming the payload is at fault cannot make
/// the provider pay more than `k` rewards for the round. Three seats judge the step
/// Invalid (all three paid as the first k judgements), two claim a payload abstention:
/// they are a quorum in number, but the round's `k` paid places are taken, so they get
/// nothing, and the judgements decide.
#[test]
fn payload_abstentions_never_take_the_provider_past_k_paid_places() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 6), (Tier::Human, 11)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 2);
    m.quorum.tau = DEFAULT_MAX_TAU;
    m.fee = trust_contracts::minimum_fee(&test_params(), &m).unwrap();
    let (sid, drawn) = open(&mut chain, m);
    assert_eq!(seats_of(&drawn, 0, 0).len(), 5);
    let escrow = put_up(&chain, &sid);
    let mut ev = run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j < 2 {
            Vote::PayloadAbstain
        } else {
            Vote::Invalid
        })
    });
    ev.extend(finish(&mut chain, sid));
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Invalid);
    assert_eq!((o.payload_seats, o.payload_paid), (0, 0));
    assert!(payload_paid(&ev).is_empty());
    assert_eq!(o.rewards_paid, 3 * test_params().reward);
    assert_escrow_accounted(o, escrow);
}

/// A seat the provider starved of its keys could not have read the payload: whatever
/// abstention it casts, it is paid once, as starved, never also for the payload. The two
/// keyed seats that claim the payload is at fault are a quorum (the starved seat counts in
/// the quorum's size) and are paid.
#[test]
fn a_starved_seat_is_paid_once_whatever_abstention_it_casts() {
    let reward = test_params().reward;
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 4)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.quorum.tau = DEFAULT_MAX_TAU;
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    let starved = seats[2];
    let escrow = put_up(&chain, &sid);
    let mut ev = run_round(&mut chain, &keys, sid, 0, &drawn, &[starved], &|_, _| {
        Some(Vote::PayloadAbstain)
    });
    ev.extend(finish(&mut chain, sid));
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!((o.starved_seats, o.starved_paid), (1, reward));
    assert_eq!((o.payload_seats, o.payload_paid), (2, 2 * reward));
    assert!(payload_paid(&ev).iter().all(|(s, _)| *s != starved));
    assert_eq!(o.segments[0].votes.starved, 1);
    assert_escrow_accounted(o, escrow);
}
