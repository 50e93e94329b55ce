//! The holes a second review found (issue 53), each mounted against the contract with real
//! signed transactions; every test here failed before its defence existed. Tests named
//! `finding_N_...` answer the finding N.

use trust_contracts::{DEFAULT_MAX_TAU, Event, Params, SegmentVerdict, TraceVerdict, TxError};
use trust_protocol::{
    AccountId, SealingPublicKey, Vote,
    tx::{Call, Tier},
    units::Ppm,
};

use crate::{
    adversary::{chain, finish, open},
    common::{key, manifest, run_round, seats_of, segment, test_params},
};

/// Finding 1, the term: a provider asking for a seat quorum above the ceiling (at `tau = 1`
/// one abstaining sybil keeps any segment Undecided) is refused at `OpenSession` with an
/// error naming tau and the ceiling, charging nothing and changing nothing.
#[test]
fn finding_1_a_tau_above_the_ceiling_is_refused_naming_tau_and_the_ceiling() {
    let params = Params::default();
    let (mut chain, _) = chain(params, &[(Tier::Computer, 5)]);
    let provider = key("provider");
    let before = chain.balance(&provider.public());
    let root = chain.c.state_root();
    for tau in [Ppm(1_000_000), Ppm(900_000), Ppm(750_000), Ppm(666_667)] {
        let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
        m.quorum.tau = tau;
        let got = chain
            .try_apply(&provider, trust_protocol::tx::Call::OpenSession(m))
            .unwrap_err();
        assert_eq!(
            got,
            TxError::TauAboveCeiling {
                tier: Tier::Computer,
                asked: tau,
                ceiling: DEFAULT_MAX_TAU,
            }
        );
        let text = got.to_string();
        assert!(text.contains("tau") && text.contains("0.666666"), "{text}");
    }
    assert_eq!(chain.balance(&provider.public()), before, "nothing charged");
    assert_eq!(chain.c.state_root(), root, "nothing changed");
    // At the ceiling the session opens.
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.quorum.tau = DEFAULT_MAX_TAU;
    assert!(
        chain
            .try_apply(&provider, trust_protocol::tx::Call::OpenSession(m))
            .is_ok()
    );
}

/// A genesis whose ceiling would let one seat of the smallest panel block is unusable.
#[test]
fn finding_1_a_genesis_ceiling_above_k_minus_one_over_k_is_refused() {
    let mut p = Params::default();
    p.floors.max_tau = [Ppm(750_000), DEFAULT_MAX_TAU, DEFAULT_MAX_TAU];
    assert!(p.validate().is_err(), "3/4 at k = 3 lets one seat block");
    p.floors.max_tau = [Ppm(400_000), DEFAULT_MAX_TAU, DEFAULT_MAX_TAU];
    assert!(p.validate().is_err(), "below the least tau");
    p.floors.max_tau = [DEFAULT_MAX_TAU; 3];
    assert!(p.validate().is_ok());
}

/// Finding 1, the tally: sybils that abstain decide nothing and block nothing. A session
/// at the ceiling with racing seats (k = 3, two more drawn): two seats abstain and three
/// judge a wrong dead-end step Invalid. Before, the abstentions raised the quorum to
/// ceil(tau 5) = 4 and the step stayed Undecided, so the trace passed on its conclusion;
/// now the three judgements decide it, and the wrong step spoils the PASS.
#[test]
fn finding_1_abstaining_seats_cannot_keep_a_wrong_dead_end_step_from_spoiling_a_pass() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 6)]);
    let mut m = manifest(
        vec![
            // The conclusion, right.
            segment(0, Tier::Computer, vec![]),
            // A wrong step nothing rests on (a dead end).
            segment(1, Tier::Computer, vec![]),
        ],
        3,
        2,
    );
    m.segments[0].conclusion = true;
    m.quorum.tau = DEFAULT_MAX_TAU;
    m.quorum.beta = Ppm(500_000);
    m.fee = trust_contracts::minimum_fee(&test_params(), &m).unwrap();
    let (sid, drawn) = open(&mut chain, m);
    assert_eq!(seats_of(&drawn, 1, 0).len(), 5);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|seg, j| {
        Some(match (seg, j) {
            (0, _) => Vote::Valid,
            // The sybils of the dead-end step abstain.
            (1, 0 | 1) => Vote::Abstain,
            (_, _) => Vote::Invalid,
        })
    });
    finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[1].verdict, SegmentVerdict::Invalid);
    assert_ne!(o.trace, TraceVerdict::Pass, "a wrong step spoils the PASS");
}

/// Finding 1, the other side: an abstaining seat cannot stop a right verdict either. At the
/// ceiling with k = 3, one abstention and two Valid judgements decide Valid, and a wrong
/// conclusion judged Invalid by two seats fails the trace whatever the third does.
#[test]
fn finding_1_one_abstaining_seat_of_three_blocks_nothing() {
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 4)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.quorum.tau = DEFAULT_MAX_TAU;
    let (sid, drawn) = open(&mut chain, m);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j == 0 { Vote::Abstain } else { Vote::Invalid })
    });
    finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.segments[0].verdict, SegmentVerdict::Invalid);
    assert_eq!(o.trace, TraceVerdict::Fail);
}

/// Registers the rich `whale` as a `tier` auditor, waits out its warm-up, and unbonds it
/// below the tier's minimum: an auditor no draw can seat until it bonds again.
fn fallen_out_whale(chain: &mut crate::common::Chain, tier: Tier) -> trust_protocol::Keypair {
    let whale = key("whale");
    chain.submit(
        &whale,
        Call::RegisterAuditor {
            tier,
            expertise: vec!["math".into()],
            sealing_key: SealingPublicKey([1; 32]),
            stake: 1_000,
        },
    );
    chain.block();
    chain.submit(&whale, Call::Unbond { amount: 950 });
    for _ in 0..=chain.c.state().params.expertise_delay {
        chain.block();
    }
    assert!(!chain.c.state().eligible(tier).contains(&whale.public()));
    whale
}

/// Finding 3: an appeal panel is drawn at the start of the block after the appeal, from
/// the state its parent left, so the proposer of that block (who knows its seed) cannot
/// win the panel by choosing its own transactions. Here an auditor that had fallen below
/// the tier's minimum bonds a stake that dwarfs the tier's in the very block that draws
/// the panel: before, the draw ran after the block's transactions and it sat on the panel
/// almost surely; now the draw reads the parent's state, where it cannot be drawn.
#[test]
fn finding_3_an_appeal_panel_is_drawn_before_the_blocks_own_bonds() {
    let (mut chain, keys) = crate::common::Chain::with_accounts(
        test_params(),
        &[(Tier::Computer, 8)],
        &[
            ("provider", 1_000_000),
            ("stranger", 100_000),
            ("whale", 100_000_000),
        ],
        crate::common::SupplyCheck::EachBlock,
    );
    let whale = fallen_out_whale(&mut chain, Tier::Computer);
    let sid = crate::adversary::decided(&mut chain, &keys, 0, Vote::Valid);
    chain.submit(
        &key("stranger"),
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    chain.block();
    chain.submit(&whale, Call::Bond { amount: 90_000_000 });
    let ev = chain.block();
    let panel: Vec<AccountId> = ev
        .iter()
        .filter_map(|e| match e {
            Event::SeatAssigned { seat, round, .. } if *round >= 2 => Some(*seat),
            _ => None,
        })
        .collect();
    assert!(!panel.is_empty(), "the panel is drawn in this block");
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Computer)
            .contains(&whale.public()),
        "the whale is drawable after this block"
    );
    assert!(!panel.contains(&whale.public()), "{panel:?}");
}

/// Finding 8: a registration is drawn only after a warm-up longer than any seed is known
/// in advance, so a proposer cannot register a sybil in its block and have the next draw
/// seat it (the done-when of issue 53: a register then immediate draw cannot seat it).
#[test]
fn finding_8_a_new_registration_cannot_be_drawn_at_once() {
    let (mut chain, _keys) = crate::common::Chain::with_accounts(
        test_params(),
        &[(Tier::Computer, 3)],
        &[("provider", 1_000_000), ("whale", 100_000_000)],
        crate::common::SupplyCheck::EachBlock,
    );
    let whale = key("whale");
    chain.submit(
        &whale,
        Call::RegisterAuditor {
            tier: Tier::Computer,
            expertise: vec!["math".into()],
            sealing_key: SealingPublicKey([1; 32]),
            stake: 90_000_000,
        },
    );
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    assert_eq!(seats.len(), 3);
    assert!(!seats.contains(&whale.public()), "drawn in its warm-up");
    let a = &chain.c.state().auditors[&whale.public()];
    assert!(a.paused && a.pending_pause.is_some_and(|p| !p.paused));
    let _ = sid;
}

/// Finding 3, escalations: the seats of an escalation are drawn from the state the parent
/// block left, so a bond in the block whose seed draws them is not seen. The block that
/// draws is found on a copy of the chain (under the old rule it was the block closing the
/// reveals, whose proposer knew its seed and chose its transactions); then an LLM
/// auditor that had fallen below the tier's minimum bonds a whale's stake in that block.
#[test]
fn finding_3_escalation_seats_are_drawn_before_the_drawing_blocks_own_bonds() {
    let (mut chain, keys) = crate::common::Chain::with_accounts(
        test_params(),
        &[(Tier::Computer, 4), (Tier::Llm, 4)],
        &[("provider", 1_000_000), ("whale", 100_000_000)],
        crate::common::SupplyCheck::EachBlock,
    );
    let whale = fallen_out_whale(&mut chain, Tier::Llm);
    // k = 2, tau = 1/2: one Valid and one Invalid reach q = 1 on both sides: undecided,
    // and the seats split, so it escalates to the LLM tier.
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 2, 0);
    m.quorum.tau = Ppm(500_000);
    m.fee *= 4;
    let (sid, drawn) = open(&mut chain, m);
    let ids = vec![chain.c.state().sessions[&sid].segments[0].entry.id];
    crate::common::deliver_keys(&mut chain, &key("provider"), sid, 0, &[]);
    let plan = crate::common::commit_votes(&mut chain, &keys, sid, &ids, &drawn, 0, &|_, j| {
        Some(if j == 0 { Vote::Valid } else { Vote::Invalid })
    });
    chain.block();
    while matches!(
        chain.phase(&sid),
        Some(trust_contracts::Phase::Commit { round: 0, .. })
    ) {
        chain.block();
    }
    crate::common::reveal_votes(&mut chain, sid, &plan);
    let escalated = |ev: &[Event]| {
        ev.iter()
            .any(|e| matches!(e, Event::SegmentEscalated { .. }))
    };
    let mut probe = chain.clone();
    let mut drawing = 1;
    while !escalated(&probe.block()) {
        drawing += 1;
        assert!(drawing < 5, "never escalated");
    }
    let mut ev = Vec::new();
    for b in 1..=drawing {
        if b == drawing {
            chain.submit(&whale, Call::Bond { amount: 90_000_000 });
        }
        ev = chain.block();
    }
    assert!(escalated(&ev));
    let round1 = seats_of(&ev, 0, 1);
    assert_eq!(round1.len(), 2);
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Llm)
            .contains(&whale.public())
    );
    assert!(!round1.contains(&whale.public()), "{round1:?}");
}

/// Finding 4, the window: a provider cannot hold the network's capacity for a thousand
/// blocks with a long commit window; a window asked for is cut to its tier's cap.
#[test]
fn finding_4_a_long_commit_window_is_cut_to_the_tiers_cap() {
    let params = test_params();
    let cap = params.floors.max_commit_window[0];
    let (mut chain, _keys) = chain(params, &[(Tier::Computer, 3)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.terms.commit_window = 1_000;
    let (sid, _) = open(&mut chain, m);
    let Some(trust_contracts::Phase::Commit { until, .. }) = chain.phase(&sid) else {
        panic!("not committing");
    };
    assert_eq!(until, chain.height + cap);
    assert!(cap < 1_000);
}

/// Finding 4, the count: a seat that committed has judged and holds no capacity. A
/// provider's session keeps one seat that can never commit (it is never keyed) for its
/// whole window; once the other seats committed, an honest session that fits beside that
/// one seat is drawn at once instead of waiting out the window.
#[test]
fn finding_4_committed_seats_hold_no_capacity() {
    let mut params = test_params();
    // Four equal auditors: capacity 4 Computer seats.
    params.seat_capacity = [1, 8, 4];
    let (mut chain, keys) = chain(params, &[(Tier::Computer, 4)]);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.terms.commit_window = 100;
    let (sid, drawn) = open(&mut chain, m);
    let seats = seats_of(&drawn, 0, 0);
    let held = seats[2];
    crate::common::deliver_keys(&mut chain, &key("provider"), sid, 0, &[held]);
    let ids = vec![chain.c.state().sessions[&sid].segments[0].entry.id];
    crate::common::commit_votes(&mut chain, &keys, sid, &ids, &drawn, 0, &|_, j| {
        (j < 2).then_some(Vote::Valid)
    });
    chain.block();
    assert!(matches!(
        chain.phase(&sid),
        Some(trust_contracts::Phase::Commit { round: 0, .. })
    ));
    assert_eq!(
        chain.c.admission().0[0],
        1,
        "only the seat that did not commit"
    );
    // An honest session of three seats fits beside it.
    let honest = manifest(vec![segment(1, Tier::Computer, vec![])], 3, 0);
    let (other, drawn) = open(&mut chain, honest);
    assert_eq!(
        seats_of(&drawn, 0, 0).len(),
        3,
        "drawn at once, not deferred"
    );
    assert!(matches!(
        chain.phase(&other),
        Some(trust_contracts::Phase::Commit { round: 0, .. })
    ));
}

/// Finding 9: state someone pays for. A transfer that creates an account moved its
/// minimum, which could come straight back, so accounts (kept for good) cost nothing. Now
/// its sender pays `new_account_fee` on top, burned: a thousand accounts cost a thousand
/// fees, and the round trip is no longer free. Prints the state's bytes per account (from
/// the snapshot), for BENCHMARKS.md.
#[test]
fn finding_9_every_new_account_is_paid_for() {
    let params = test_params();
    let (fee, min) = (params.new_account_fee, params.min_new_account);
    assert!(fee > 0);
    let (mut chain, _keys) = crate::common::Chain::with_accounts(
        params,
        &[],
        &[("rich", 1_000_000)],
        crate::common::SupplyCheck::EachBlock,
    );
    let rich = key("rich");
    let (balance0, burned0) = (chain.balance(&rich.public()), chain.c.state().burned);
    let bytes0 = chain.c.snapshot().len();
    let n = 1_000u64;
    let fresh: Vec<_> = (0..n).map(|i| key(&format!("fresh-{i}"))).collect();
    for k in &fresh {
        chain.submit(
            &rich,
            Call::Transfer {
                to: k.public(),
                amount: min,
            },
        );
    }
    chain.block();
    assert_eq!(chain.c.state().accounts.len() as u64, 1 + n);
    assert_eq!(chain.balance(&rich.public()), balance0 - n * (min + fee));
    assert_eq!(
        chain.c.state().burned - burned0,
        n * fee,
        "the fees are burned"
    );
    // The round trip: each new account sends its minimum straight back; the fee stays paid.
    for k in &fresh {
        chain.submit(
            k,
            Call::Transfer {
                to: rich.public(),
                amount: min,
            },
        );
    }
    chain.block();
    assert_eq!(chain.balance(&rich.public()), balance0 - n * fee);
    let per_account = (chain.c.snapshot().len() - bytes0) as u64 / n;
    eprintln!(
        "state bytes per account: {per_account}; a million accounts: {} MB of state, {} burned in fees",
        per_account,
        1_000_000 * fee
    );
    assert!(per_account > 0);
}
