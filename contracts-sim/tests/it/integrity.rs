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
    adversary::{appeal_drawn, chain, finish, open},
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
    let (mut chain, keys) = chain(test_params(), &[(Tier::Computer, 6), (Tier::Human, 11)]);
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
    assert!(!panel.contains(&whale.public()), "{panel:?}");
    // (Under the old order the whale was drawable at once after its bond; now a bond also
    // waits `expertise_delay` blocks before it counts, see
    // `finding_3_a_bond_in_the_block_before_a_draw_does_not_count_in_it`.)
    for _ in 0..chain.c.state().params.expertise_delay {
        chain.block();
    }
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Computer)
            .contains(&whale.public()),
        "the whale is drawable once its bond counts"
    );
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
    assert!(!round1.contains(&whale.public()), "{round1:?}");
    // The bond counts in draws once its delay has passed.
    for _ in 0..chain.c.state().params.expertise_delay {
        chain.block();
    }
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Llm)
            .contains(&whale.public())
    );
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

/// The draw weight of `who` now ([`trust_contracts::Auditor::draw_stake`]).
fn draw_stake(chain: &crate::common::Chain, who: &trust_protocol::Keypair) -> u64 {
    chain.c.state().auditors[&who.public()].draw_stake
}

/// A chain of four Computer auditors (1,000 each) and a `whale` auditor registered with the
/// tier's minimum long enough ago to be drawn with that weight; the whale's balance can
/// bond far more. Returns the chain and the four auditors' keys.
fn chain_with_a_small_whale() -> (crate::common::Chain, Vec<trust_protocol::Keypair>) {
    let (mut chain, keys) = crate::common::Chain::with_accounts(
        test_params(),
        &[(Tier::Computer, 4)],
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
            stake: 100,
        },
    );
    for _ in 0..=chain.c.state().params.expertise_delay {
        chain.block();
    }
    assert_eq!(draw_stake(&chain, &whale), 100);
    assert!(
        chain
            .c
            .state()
            .eligible(Tier::Computer)
            .contains(&whale.public())
    );
    (chain, keys)
}

/// Finding 3 and 8, bonds: the proposer of the block before a draw knows the draw's seed
/// when it colludes with the drawing block's proposer (the seed is that proposer's VRF
/// over the parent's), and chooses what goes in its own block. It puts its sybil's bond
/// there, beside a session's opening. The bond counts in draws only `expertise_delay`
/// blocks later, so the draw is the one the chain would have made without it.
///
/// Without the delay the bond would have won: on a copy where the same bond was made long
/// enough before to count, the same opening in the same block seats the sybil. (With the
/// defence removed, bonds counting at once, this test fails on the attack's seats.)
#[test]
fn finding_3_a_bond_in_the_block_before_a_draw_does_not_count_in_it() {
    let (chain, _keys) = chain_with_a_small_whale();
    let whale = key("whale");
    let delay = chain.c.state().params.expertise_delay;
    let bond = Call::Bond { amount: 90_000_000 };
    // The draw at height `h`: the opening is in block `h - 1`, `delay + 2` blocks from now.
    let wait = delay + 1;
    let drawn_at = |mut c: crate::common::Chain, bond_at: Option<u64>| {
        for b in 0..wait {
            if bond_at == Some(b) {
                c.submit(&whale, bond.clone());
            }
            c.block();
        }
        if bond_at == Some(wait) {
            c.submit(&whale, bond.clone());
        }
        let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
        let (_, ev) = open(&mut c, m);
        (c.height, seats_of(&ev, 0, 0))
    };
    let (h_plain, plain) = drawn_at(chain.clone(), None);
    // A bond made early enough to count would have won the seat.
    let (h_early, early) = drawn_at(chain.clone(), Some(0));
    assert_eq!(h_early, h_plain, "the same draw, with the same seed");
    assert!(early.contains(&whale.public()), "{early:?}");
    // The attack: the bond in the block before the draw changes nothing of it.
    let (h_attack, attack) = drawn_at(chain.clone(), Some(wait));
    assert_eq!(h_attack, h_plain);
    assert_eq!(attack, plain, "the block's own bond swayed the draw");
    assert!(!attack.contains(&whale.public()), "{attack:?}");
}

/// Finding 3 and 8, unbonds: taking stake out also moves every ticket of a draw (and
/// below the minimum takes the auditor out of it), so an unbond in the block before a
/// draw is a lever too. It leaves the draw weight only after the delay, and the stake
/// stays at risk meanwhile, in the unbonding; the draw is the one the chain would have
/// made without it. (With the defence removed this test fails: the seated auditor
/// unbonds out of the seat.)
#[test]
fn finding_3_an_unbond_in_the_block_before_a_draw_does_not_change_it() {
    let (mut chain, keys) = chain_with_a_small_whale();
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let mut plain = chain.clone();
    let (_, ev) = open(&mut plain, m.clone());
    let seated = seats_of(&ev, 0, 0);
    // One of the auditors the draw seats unbonds nearly all of its stake in the block
    // that opens the session.
    let leaver = keys
        .iter()
        .find(|k| seated.contains(&k.public()))
        .expect("a seated auditor of the four");
    chain.submit(leaver, Call::Unbond { amount: 950 });
    let (_, ev) = open(&mut chain, m);
    assert_eq!(seats_of(&ev, 0, 0), seated);
    let delay = chain.c.state().params.expertise_delay;
    let st = chain.c.state();
    let acct = &st.accounts[&leaver.public()];
    assert_eq!(acct.stake, 50);
    assert_eq!(
        acct.unbonding.iter().map(|u| u.amount).sum::<u64>(),
        950,
        "at risk while it counts"
    );
    assert_eq!(draw_stake(&chain, leaver), 1_000);
    // After the delay it has left the draws.
    for _ in 0..delay {
        chain.block();
    }
    assert_eq!(draw_stake(&chain, leaver), 50);
    assert!(
        !chain
            .c
            .state()
            .eligible(Tier::Computer)
            .contains(&leaver.public())
    );
}

/// Finding 8, the honest side: topping up never takes an auditor out of draws. What it had
/// bonded keeps counting every block of the delay; the new stake joins at its end. Many
/// bonds wait in a structure bounded by the delay (one entry per height).
#[test]
fn finding_8_topping_up_never_takes_an_auditor_out_of_draws() {
    let (mut chain, keys) = chain_with_a_small_whale();
    let me = &keys[0];
    let delay = chain.c.state().params.expertise_delay;
    chain.submit(
        &key("provider"),
        Call::Transfer {
            to: me.public(),
            amount: 1_000,
        },
    );
    chain.block();
    // A bond every block for three delays, and a burst of ten in one block.
    for _ in 0..10 {
        chain.submit(me, Call::Bond { amount: 10 });
    }
    chain.block();
    assert_eq!(draw_stake(&chain, me), 1_000, "the old stake counts");
    assert_eq!(
        chain.c.state().auditors[&me.public()].pending_stake.len(),
        1,
        "one entry per height"
    );
    let mut longest = 0;
    for i in 0..3 * delay {
        chain.submit(me, Call::Bond { amount: 1 });
        chain.block();
        let st = chain.c.state();
        assert!(
            st.eligible(Tier::Computer).contains(&me.public()),
            "out of draws in block {i}"
        );
        longest = longest.max(st.auditors[&me.public()].pending_stake.len());
        // Exactly what was bonded `delay` blocks ago or earlier counts.
        let counted = if i + 1 >= delay {
            1_100 + (i + 1 - delay)
        } else {
            1_000
        };
        assert_eq!(draw_stake(&chain, me), counted, "block {i}");
    }
    assert!(longest as u64 <= delay, "{longest} entries pending");
    assert!(longest <= trust_contracts::MAX_PENDING_STAKE);
}

/// Finding 8, registrations and their expertise: a registration made in the block that
/// opens a session neither sits in its draw nor fills the pool of a domain it requires; its
/// declared domain counts only when its warm-up ends.
#[test]
fn finding_8_a_registrations_expertise_waits_for_its_warm_up() {
    let (mut chain, _keys) = crate::common::Chain::with_accounts(
        test_params(),
        &[(Tier::Computer, 3)],
        &[("provider", 1_000_000), ("whale", 100_000_000)],
        crate::common::SupplyCheck::EachBlock,
    );
    let whale = key("whale");
    let provider = key("provider");
    chain.submit(
        &whale,
        Call::RegisterAuditor {
            tier: Tier::Computer,
            expertise: vec!["rare".into()],
            sealing_key: SealingPublicKey([1; 32]),
            stake: 90_000_000,
        },
    );
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 1, 0);
    m.domain = "rare".into();
    m.terms.domain_required = true;
    chain.block();
    let from = chain.height + chain.c.state().params.expertise_delay;
    let st = chain.c.state();
    assert_eq!(draw_stake(&chain, &whale), 0);
    assert!(!st.eligible(Tier::Computer).contains(&whale.public()));
    assert!(matches!(
        chain.try_apply(&provider, Call::OpenSession(m.clone())),
        Err(TxError::TierUnstaffed { .. } | TxError::DomainPoolTooSmall { .. })
    ));
    while chain.height + 1 < from {
        chain.block();
        assert!(
            chain
                .try_apply(&provider, Call::OpenSession(m.clone()))
                .is_err()
        );
    }
    chain.block();
    assert_eq!(draw_stake(&chain, &whale), 90_000_000);
    assert!(chain.try_apply(&provider, Call::OpenSession(m)).is_ok());
}

/// Registers `who` (funded) as a Computer auditor with `stake` declaring `expertise`.
fn register(chain: &mut crate::common::Chain, who: &str, stake: u64, expertise: &[&str]) {
    chain.submit(
        &key(who),
        Call::RegisterAuditor {
            tier: Tier::Computer,
            expertise: expertise.iter().map(|e| e.to_string()).collect(),
            sealing_key: SealingPublicKey([1; 32]),
            stake,
        },
    );
}

/// A Computer tier of four auditors of 1,000 (`math`), three `medic`s of 10,000 declaring
/// `medicine` and two `big` auditors of 50,000 (`math`), past their warm-up, under
/// `floors` (k of 1 allowed).
fn tier_with_a_small_domain(floors: trust_contracts::Floors) -> crate::common::Chain {
    let params = Params {
        floors,
        ..test_params()
    };
    let (mut chain, _keys) = crate::common::Chain::with_accounts(
        params,
        &[(Tier::Computer, 4)],
        &[
            ("provider", 1_000_000),
            ("medic-0", 10_010),
            ("medic-1", 10_010),
            ("medic-2", 10_010),
            ("big-0", 50_010),
            ("big-1", 50_010),
        ],
        crate::common::SupplyCheck::EachBlock,
    );
    for m in ["medic-0", "medic-1", "medic-2"] {
        register(&mut chain, m, 10_000, &["medicine"]);
    }
    for b in ["big-0", "big-1"] {
        register(&mut chain, b, 50_000, &["math"]);
    }
    for _ in 0..=chain.c.state().params.expertise_delay {
        chain.block();
    }
    assert_eq!(chain.c.state().eligible(Tier::Computer).len(), 9);
    chain
}

/// Finding 8, the floor: a domain's pool must hold a share of its tier's stake, not only
/// an absolute amount. Three auditors hold 30,000 in `medicine`, above the old absolute
/// floor of 20,000, but the tier holds 134,000: below a third of it the domain cannot be
/// required (a coalition that small could own every seat of it). Under the old floor
/// alone (the share off) the same session opens; once a large auditor declares the domain
/// too, it opens under the share.
#[test]
fn finding_8_a_required_domain_needs_a_share_of_the_tier_not_an_absolute_amount() {
    use trust_contracts::{DEFAULT_MIN_DOMAIN_SHARE, Floors};
    let floors = Floors {
        min_k: [1, 1, 1],
        min_domain_stake: 20_000,
        min_domain_share: DEFAULT_MIN_DOMAIN_SHARE,
        ..Floors::dev()
    };
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 1, 0);
    m.domain = "medicine".into();
    m.terms.domain_required = true;
    let provider = key("provider");

    let mut chain = tier_with_a_small_domain(floors.clone());
    let params = chain.c.state().params.clone();
    let floor = trust_contracts::domain_floor(&params, 134_000);
    assert!(30_000 > params.floors.min_domain_stake && 30_000 < floor);
    let before = chain.balance(&provider.public());
    let e = chain
        .try_apply(&provider, Call::OpenSession(m.clone()))
        .unwrap_err();
    assert_eq!(
        e,
        TxError::DomainPoolTooSmall {
            domain: "medicine".into(),
            tier: Tier::Computer,
            stake: 30_000,
            floor,
        }
    );
    assert!(e.to_string().contains("min_domain_share"), "{e}");
    assert_eq!(chain.balance(&provider.public()), before, "nothing charged");

    // The old, absolute floor alone let it through.
    let mut old = tier_with_a_small_domain(Floors {
        min_domain_share: trust_protocol::units::Ppm::ZERO,
        ..floors
    });
    assert!(
        old.try_apply(&provider, Call::OpenSession(m.clone()))
            .is_ok()
    );

    // A large auditor declares it too: 80,000 of 134,000, above a third.
    chain.submit(
        &key("big-0"),
        Call::DeclareExpertise {
            expertise: vec!["math".into(), "medicine".into()],
        },
    );
    for _ in 0..=params.expertise_delay {
        chain.block();
    }
    assert!(chain.try_apply(&provider, Call::OpenSession(m)).is_ok());
}

/// A genesis whose domain share a coalition of the assumed malicious share could fill
/// alone is unusable; 0 (no share, test networks) and the default load.
#[test]
fn finding_8_a_genesis_domain_share_at_or_below_the_assumed_malicious_share_is_refused() {
    let mut p = Params::default();
    assert_eq!(
        p.floors.min_domain_share,
        trust_contracts::DEFAULT_MIN_DOMAIN_SHARE
    );
    assert!(p.validate().is_ok());
    p.floors.min_domain_share = p.assumed_malicious;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("floors.min_domain_share"), "{e}");
    p.floors.min_domain_share = Ppm(1_000_001);
    assert!(p.validate().is_err());
    p.floors.min_domain_share = Ppm::ZERO;
    assert!(p.validate().is_ok());
}

/// Parameters with a short retention of emptied auditor entries, for the tests below.
fn retiring_params() -> Params {
    Params {
        auditor_retention: 5,
        ..test_params()
    }
}

/// Runs blocks until `who`'s auditor entry has left the state (at most `limit` blocks).
fn until_retired(chain: &mut crate::common::Chain, who: &trust_protocol::Keypair, limit: u64) {
    let start = chain.height;
    while chain.c.state().auditors.contains_key(&who.public()) {
        chain.block();
        assert!(chain.height - start <= limit, "never retired");
    }
}

/// Finding 9, auditor entries: an entry that holds no stake, no duty and nothing pending
/// expires; what had freed of its unbondings is paid to its balance. Register, unbond and
/// (or not) withdraw, again and again with the same accounts: the registry and the
/// snapshot come back to the same size after every cycle instead of growing with it.
/// (Before, every entry stayed for good.)
#[test]
fn finding_9_auditor_entries_expire_and_cycles_do_not_grow_the_state() {
    let params = retiring_params();
    let limit = params.unbond_delay + params.auditor_retention + 2;
    let cyclers: Vec<String> = (0..5).map(|i| format!("cycler-{i}")).collect();
    let others: Vec<(&str, u64)> = cyclers
        .iter()
        .map(|c| (c.as_str(), 1_000))
        .chain([("provider", 1_000_000)])
        .collect();
    let (mut chain, _keys) = crate::common::Chain::with_accounts(
        params,
        &[(Tier::Computer, 3)],
        &others,
        crate::common::SupplyCheck::EachBlock,
    );
    let base = chain.c.state().auditors.len();
    let mut sizes = Vec::new();
    for cycle in 0..4 {
        for c in &cyclers {
            register(&mut chain, c, 100, &["math"]);
        }
        chain.block();
        assert_eq!(chain.c.state().auditors.len(), base + cyclers.len());
        for c in &cyclers {
            chain.submit(&key(c), Call::Unbond { amount: 100 });
        }
        chain.block();
        let frees = chain.height + chain.c.state().params.unbond_delay;
        while chain.height < frees {
            chain.block();
        }
        // Half the cycles withdraw; the others leave it to the expiry.
        if cycle % 2 == 0 {
            for c in &cyclers {
                chain.submit(&key(c), Call::Withdraw);
            }
        }
        let mut retired = 0;
        let start = chain.height;
        while chain.c.state().auditors.len() > base {
            retired += chain
                .block()
                .iter()
                .filter(|e| matches!(e, Event::AuditorRetired { .. }))
                .count();
            assert!(
                chain.height - start <= limit,
                "cycle {cycle}: never retired"
            );
        }
        assert_eq!(retired, cyclers.len());
        for c in &cyclers {
            let a = &chain.c.state().accounts[&key(c).public()];
            assert_eq!(a.balance, 1_000, "cycle {cycle}: every token back");
            assert!(a.unbonding.is_empty() && a.past.is_some());
        }
        sizes.push(chain.c.snapshot().len());
    }
    assert!(
        sizes.windows(2).all(|w| w[0] == w[1]),
        "the state grew with the cycles: {sizes:?}"
    );
}

/// Finding 9, the record: an entry that left the state leaves its record in the account,
/// so registering again never launders it. A low reputation comes back as it was (not
/// the initial one); a rubber-stamp flag and an exit are for good (registering, and after
/// an exit bonding, are refused). And an entry that still holds a seat in a session not
/// final stays until that session is final.
#[test]
fn finding_9_re_registering_does_not_reset_a_bad_record() {
    let params = retiring_params();
    let limit = params.unbond_delay + params.auditor_retention + 200;
    let (mut chain, keys) = crate::common::Chain::with_accounts(
        params,
        &[(Tier::Computer, 3)],
        &[
            ("provider", 1_000_000),
            ("bad", 1_000),
            ("flagged", 1_000),
            ("leaver", 1_000),
        ],
        crate::common::SupplyCheck::EachBlock,
    );
    for who in ["bad", "flagged", "leaver"] {
        register(&mut chain, who, 100, &["math"]);
    }
    for _ in 0..=chain.c.state().params.expertise_delay {
        chain.block();
    }
    // The record wrong votes and a rubber-stamp flag would have left.
    let mut st = chain.c.state().clone();
    st.auditors
        .get_mut(&key("bad").public())
        .unwrap()
        .reputation = Ppm(100_000);
    let f = st.auditors.get_mut(&key("flagged").public()).unwrap();
    f.flagged = true;
    f.active = false;
    chain.c = trust_contracts::Contract::from_state(st);
    let initial = chain.c.state().params.initial_reputation;
    assert!(Ppm(100_000) < initial);
    chain.submit(&key("bad"), Call::Unbond { amount: 100 });
    chain.submit(&key("flagged"), Call::Unbond { amount: 100 });
    chain.submit(&key("leaver"), Call::Exit);
    for _ in 0..=chain.c.state().params.expertise_delay {
        chain.block();
    }
    // One of the tier's auditors holds a seat and exits with it.
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    let (sid, drawn) = open(&mut chain, m);
    let seated = seats_of(&drawn, 0, 0);
    let holder = keys
        .iter()
        .find(|k| seated.contains(&k.public()))
        .expect("a seat of the three");
    chain.submit(holder, Call::Exit);
    for who in ["bad", "flagged", "leaver"] {
        until_retired(&mut chain, &key(who), limit);
    }
    assert!(
        chain.c.state().auditors.contains_key(&holder.public()),
        "removed while it holds a seat in a session not final"
    );
    let try_register = |chain: &mut crate::common::Chain, who: &str| {
        chain.try_apply(
            &key(who),
            Call::RegisterAuditor {
                tier: Tier::Computer,
                expertise: vec!["math".into()],
                sealing_key: SealingPublicKey([1; 32]),
                stake: 100,
            },
        )
    };
    assert!(try_register(&mut chain, "bad").is_ok());
    assert_eq!(
        chain.c.state().auditors[&key("bad").public()].reputation,
        Ppm(100_000),
        "the bad record came back"
    );
    assert_eq!(
        try_register(&mut chain, "flagged"),
        Err(TxError::FlaggedForGood)
    );
    assert_eq!(
        try_register(&mut chain, "leaver"),
        Err(TxError::ExitedForGood)
    );
    assert_eq!(
        chain.try_apply(&key("leaver"), Call::Bond { amount: 10 }),
        Err(TxError::ExitedForGood)
    );
    // The seat holder goes once its session is final.
    finish(&mut chain, sid);
    until_retired(&mut chain, holder, limit);
    assert!(
        chain.c.state().accounts[&holder.public()]
            .past
            .is_some_and(|p| p.exited)
    );
}

/// Finding 3 and 8, appeal panels: as for a session's first seats, a sybil's bond in the
/// block that files an appeal (the block before the panel's draw, whose seed a colluding
/// proposer knows) does not count in the panel: it is the panel the chain would have
/// drawn without the bond, while the same bond made early enough to count sits on it.
/// (With the defence removed, bonds counting at once, this test fails.)
#[test]
fn finding_3_a_bond_in_the_block_before_an_appeal_panel_does_not_count_in_it() {
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
    let whale = key("whale");
    register(&mut chain, "whale", 100, &["math"]);
    let delay = chain.c.state().params.expertise_delay;
    for _ in 0..=delay {
        chain.block();
    }
    let sid = crate::adversary::decided(&mut chain, &keys, 0, Vote::Valid);
    let panel_of = |mut c: crate::common::Chain, bond_at: Option<u64>| {
        for b in 0..=delay {
            if bond_at == Some(b) {
                c.submit(&whale, Call::Bond { amount: 90_000_000 });
            }
            if b == delay {
                c.submit(
                    &key("stranger"),
                    Call::Appeal {
                        session: sid,
                        segments: vec![0],
                    },
                );
            }
            c.block();
        }
        let panel: Vec<AccountId> = c
            .block()
            .iter()
            .filter_map(|e| match e {
                Event::SeatAssigned { seat, round, .. } if *round >= 2 => Some(*seat),
                _ => None,
            })
            .collect();
        (c.height, panel)
    };
    let (h, plain) = panel_of(chain.clone(), None);
    assert!(!plain.is_empty(), "the panel is drawn");
    let (h_early, early) = panel_of(chain.clone(), Some(0));
    assert_eq!(h_early, h);
    assert!(early.contains(&whale.public()), "{early:?}");
    let (h_attack, attack) = panel_of(chain, Some(delay));
    assert_eq!(h_attack, h);
    assert_eq!(attack, plain, "the appeal block's bond swayed the panel");
}

/// An emptied auditor entry must stay at least the block after it empties: a genesis
/// whose retention is 0 is unusable, and one written before the parameter existed loads
/// with the default.
#[test]
fn finding_9_auditor_retention_is_checked_and_defaults_for_old_genesis_files() {
    let mut p = Params::default();
    assert_eq!(p.auditor_retention, 1_000);
    p.auditor_retention = 0;
    let e = p.validate().unwrap_err().to_string();
    assert!(e.contains("auditor_retention"), "{e}");
    // A genesis file from before these parameters: no `auditor_retention`, no
    // `floors.min_domain_share`.
    let mut json = serde_json::to_value(Params::default()).unwrap();
    json.as_object_mut().unwrap().remove("auditor_retention");
    json["floors"]
        .as_object_mut()
        .unwrap()
        .remove("min_domain_share");
    let old: Params = serde_json::from_value(json).unwrap();
    assert_eq!(old, Params::default());
    assert!(old.validate().is_ok());
}

/// A chain for the capacity attacks of finding 4: four equal Computer auditors and
/// `seat_capacity` 1, so the tier's capacity is 4 seats, and a session of three seats
/// leaves no room for another.
fn capacity_chain(key_window: u64) -> (crate::common::Chain, Vec<trust_protocol::Keypair>) {
    let mut params = test_params();
    params.seat_capacity = [1, 8, 4];
    params.key_window = key_window;
    chain(params, &[(Tier::Computer, 4)])
}

/// Opens the provider's session of three seats with a long commit window (100 blocks,
/// under the Computer cap), then, in the next block, another session of three seats that
/// cannot be drawn beside it; runs blocks, keying the first session's seats as `keys`
/// says (the block after its draw, or never), until the second is drawn. Returns the
/// first session, its draw height, and the height the second was drawn at.
fn held_then_queued(
    chain: &mut crate::common::Chain,
    keyed: bool,
) -> (trust_protocol::Hash, u64, u64) {
    let provider = key("provider");
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.terms.commit_window = 100;
    let (held, _) = open(chain, m);
    let start = chain.height;
    let queued =
        trust_protocol::tx::Tx::session_id(&provider.public(), chain.c.nonce(&provider.public()));
    chain.submit(
        &provider,
        Call::OpenSession(manifest(vec![segment(1, Tier::Computer, vec![])], 3, 0)),
    );
    if keyed {
        crate::common::deliver_keys(chain, &provider, held, 0, &[]);
    }
    loop {
        let ev = chain.block();
        if ev.iter().any(
            |e| matches!(e, Event::SeatAssigned { session, round: 0, .. } if *session == queued),
        ) {
            return (held, start, chain.height);
        }
        assert!(
            chain.height < start + 200,
            "the queued session was never drawn"
        );
    }
}

/// Finding 4, seats never keyed: a provider that opens a session with a long window and
/// never keys its seats (or lets a coalition's seats sit unkeyed) held the tier's capacity
/// for the whole window, and every session behind it waited (past `draw_patience`, and
/// failed). Now a seat not keyed by its round's key deadline (`key_window` blocks after
/// the draw) is starved for good and holds no capacity from the next block: the queued
/// session is drawn the block after the deadline, while the held session's window still
/// runs. With the old rule (no key deadline: `key_window` as large as it gets, so a key
/// counts until `key_lead` blocks before the commit deadline) the queued session waits out
/// nearly the whole window.
#[test]
fn finding_4_seats_never_keyed_hold_capacity_only_to_the_key_deadline() {
    let (mut chain, _) = capacity_chain(test_params().key_window);
    let window = chain.c.state().params.key_window;
    let (held, start, drawn) = held_then_queued(&mut chain, false);
    assert_eq!(
        drawn,
        start + window + 1,
        "drawn the block after the deadline"
    );
    assert!(matches!(
        chain.phase(&held),
        Some(trust_contracts::Phase::Commit { round: 0, until }) if until == start + 100
    ));
    // The attack without the defence: the queued session waits for the window to close.
    let (mut chain, _) = capacity_chain(u64::MAX);
    let (_, start, drawn) = held_then_queued(&mut chain, false);
    let lead = chain.c.state().params.key_lead;
    assert!(
        drawn > start + 100 - lead,
        "held to the last block a key could count: {drawn}"
    );
}

/// Finding 4, keyed seats that never commit (the adversary's sybils in a session whose
/// ciphertexts nobody serves, holding their seats to their give-up block): they hold the
/// tier's capacity until the key deadline plus the commit window the network itself gives
/// a round (what genesis says an honest seat needs), not for the window the provider asked
/// for. And no sooner: an honest seat keyed in time holds its place until then, so a
/// burst never gives an honest auditor more seats than it can judge. With the old rule
/// the queued session waits out the whole window.
#[test]
fn finding_4_keyed_seats_that_never_commit_hold_capacity_only_as_long_as_an_honest_seat_needs() {
    let (mut chain, _) = capacity_chain(test_params().key_window);
    let p = chain.c.state().params.clone();
    let (held, start, drawn) = held_then_queued(&mut chain, true);
    let s = &chain.c.state().sessions[&held];
    assert!(
        s.segments[0].seats.iter().all(|x| x.keyed(0)),
        "keyed in time"
    );
    let honest_need = p.commit_window.max(p.floors.min_commit_window[0]);
    assert_eq!(drawn, start + p.key_window + honest_need + 1);
    assert!(matches!(
        chain.phase(&held),
        Some(trust_contracts::Phase::Commit { round: 0, .. })
    ));
    let (mut chain, _) = capacity_chain(u64::MAX);
    let (_, start, drawn) = held_then_queued(&mut chain, true);
    assert!(
        drawn > start + 100,
        "held to the end of the window: {drawn}"
    );
}

/// Finding 4, the deadline's own abuse: a provider that withholds keys until its session's
/// hold on capacity has lapsed, so that more sessions are drawn on the same auditors, and
/// then keys them all at once, would hand an honest auditor more seats than it can judge
/// in a window (and make it a no-show). Keys that land after the key deadline therefore
/// count for nothing: the seats stay starved (paid by the provider, never slashed). Keys
/// that land by the deadline count, so a censoring run of a few blocks (the simulator's
/// coalition proposes 3 of every 10) does not starve the seats of an honest provider.
#[test]
fn finding_4_keys_after_the_key_deadline_do_not_count() {
    let provider = key("provider");
    let (mut chain, _) = capacity_chain(test_params().key_window);
    let window = chain.c.state().params.key_window;
    let (late, start, drawn) = held_then_queued(&mut chain, false);
    assert_eq!(drawn, start + window + 1);
    // The queued session's seats are drawn on the very auditors of the first; now the
    // provider keys the first.
    crate::common::deliver_keys(&mut chain, &provider, late, 0, &[]);
    chain.block();
    let s = &chain.c.state().sessions[&late];
    assert!(
        s.segments[0].seats.iter().all(|x| !x.keyed(0)),
        "a key after the deadline does not count"
    );
    assert_eq!(
        chain.c.admission().0[0],
        3,
        "only the queued session's seats"
    );
    // Keyed after a three-block censorship run: in time.
    let (mut chain, _) = capacity_chain(test_params().key_window);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.terms.commit_window = 100;
    let (sid, _) = open(&mut chain, m);
    for _ in 0..3 {
        chain.block();
    }
    crate::common::deliver_keys(&mut chain, &provider, sid, 0, &[]);
    chain.block();
    let s = &chain.c.state().sessions[&sid];
    assert!(s.segments[0].seats.iter().all(|x| x.keyed(0)));
    // Without the deadline, the same late keys would have counted.
    let (mut chain, _) = capacity_chain(u64::MAX);
    let mut m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 0);
    m.terms.commit_window = 100;
    let (late, _) = open(&mut chain, m);
    for _ in 0..=window {
        chain.block();
    }
    crate::common::deliver_keys(&mut chain, &provider, late, 0, &[]);
    chain.block();
    let s = &chain.c.state().sessions[&late];
    assert!(s.segments[0].seats.iter().all(|x| x.keyed(0)));
}

/// A genesis with no key window (keys could never count) is unusable; an old genesis file
/// without the field gets the default.
#[test]
fn finding_4_the_key_window_is_checked_and_defaults_for_old_genesis_files() {
    let mut p = Params::default();
    assert_eq!(p.key_window, 10);
    p.key_window = 0;
    assert!(p.validate().is_err());
    let mut json = serde_json::to_value(Params::default()).unwrap();
    json.as_object_mut().unwrap().remove("key_window");
    let back: Params = serde_json::from_value(json).unwrap();
    assert_eq!(back.key_window, 10);
}

/// A session whose one Computer segment three seats (k = 1, two extra) rightly judged
/// Invalid, decided; returns it and those seats. Every wrong vote is slashed
/// (`p_min = p_max = 1`), so any slash that could be taken is.
fn rightly_failed(
    chain: &mut crate::common::Chain,
    keys: &[trust_protocol::Keypair],
) -> (trust_protocol::Hash, Vec<AccountId>) {
    let m = manifest(vec![segment(7, Tier::Computer, vec![])], 1, 2);
    let (sid, drawn) = open(chain, m);
    let first = seats_of(&drawn, 0, 0);
    assert_eq!(first.len(), 3);
    run_round(chain, keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Invalid)
    });
    finish(chain, sid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Fail);
    (sid, first)
}

fn always_slash() -> Params {
    Params {
        p_min: Ppm(1_000_000),
        p_max: Ppm(1_000_000),
        ..test_params()
    }
}

/// Appeals segment 0 of `sid` from `who` and runs the round with every seat voting `vote`;
/// returns the round's seats and its events.
fn appeal_round(
    chain: &mut crate::common::Chain,
    keys: &[trust_protocol::Keypair],
    sid: trust_protocol::Hash,
    who: &str,
    round: u8,
    vote: Vote,
) -> (Vec<AccountId>, Vec<Event>) {
    chain.submit(
        &key(who),
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    let mut ev = chain.block();
    let drawn = chain.block();
    let seats = seats_of(&drawn, 0, round);
    ev.extend(drawn.clone());
    ev.extend(run_round(chain, keys, sid, round, &drawn, &[], &|_, _| {
        Some(vote)
    }));
    (seats, ev)
}

fn stake_of(chain: &crate::common::Chain, who: &AccountId) -> u64 {
    chain.c.state().accounts[who].stake
}

/// Runs blocks until `sid` is final; returns their events.
fn until_final(chain: &mut crate::common::Chain, sid: trust_protocol::Hash) -> Vec<Event> {
    let mut ev = Vec::new();
    while !matches!(
        chain.c.finality(&sid),
        Some(trust_contracts::Finality::Final { .. })
    ) {
        ev.extend(chain.block());
        assert!(chain.height < 2_000, "never final");
    }
    ev
}

fn incoherence_slashes(ev: &[Event]) -> Vec<AccountId> {
    ev.iter()
        .filter_map(|e| match e {
            Event::Slashed {
                seat,
                reason: trust_contracts::SlashReason::Incoherent,
                ..
            } => Some(*seat),
            _ => None,
        })
        .collect()
}

/// Finding 3, by luck rather than grinding (issue 53's simulator: `honest_slashed` 3-5 in
/// 300 sessions at a sybil share of 30%): an adversary that appeals an honest verdict again
/// and again now and then draws an appeal panel its sybils hold. That panel overturned the
/// verdict and slashed the honest majority for incoherence at once; an honest counter-appeal
/// took the verdict back, but gave the stake back only out of the sybil panel's own slashes,
/// as far as they reached (nothing of what a sybil could no longer lose in the session). Now an
/// overturn slashes nobody until the session is final, and then only if its verdict still
/// stands: while an appeal can still take the verdict back, the honest seats lose nothing,
/// and when it is taken back they never lose anything, while the sybil panel answers for
/// its overturn at finality.
#[test]
fn finding_3_a_lucky_sybil_appeal_panel_takes_no_honest_stake() {
    let (mut chain, keys) = chain(always_slash(), &[(Tier::Computer, 30)]);
    let (sid, first) = rightly_failed(&mut chain, &keys);
    let before: Vec<u64> = first.iter().map(|s| stake_of(&chain, s)).collect();

    // The sybil panel: seven seats, all colluding, overturn the right Invalid.
    let (colluders, ev) = appeal_round(&mut chain, &keys, sid, "sybil-0", 2, Vote::Valid);
    assert_eq!(colluders.len(), 7);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        trust_contracts::AppealResult::Overturned
    );
    assert_eq!(o.trace, TraceVerdict::Pass);
    assert!(incoherence_slashes(&ev).is_empty(), "nobody slashed yet");
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(stake_of(&chain, s), *b, "the right seats keep their stake");
    }
    let colluders_before: Vec<u64> = colluders.iter().map(|s| stake_of(&chain, s)).collect();

    // The honest counter-appeal: fifteen seats take the verdict back.
    let (_, ev) = appeal_round(&mut chain, &keys, sid, "stranger", 3, Vote::Invalid);
    assert!(incoherence_slashes(&ev).is_empty(), "still nobody slashed");
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Fail);

    // Final: the overturn that stood (round 3) answers for the one it replaced.
    let ev = until_final(&mut chain, sid);
    let slashed = incoherence_slashes(&ev);
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(stake_of(&chain, s), *b, "the right seats never lost stake");
        assert!(!slashed.contains(s));
    }
    for (s, b) in colluders.iter().zip(&colluders_before) {
        assert!(slashed.contains(s), "the colluding panel answers for it");
        assert!(stake_of(&chain, s) < *b);
    }
    let o = chain.c.outcome(&sid).unwrap();
    assert!(o.appeals.rounds[0].segments[0].pending.is_none());
    assert_eq!(o.appeals.rounds[0].segments[0].slashed, 0);
    assert!(o.appeals.rounds[1].segments[0].slashed > 0);
    assert!(o.appeals.rounds[1].segments[0].pending.is_none());
    chain.assert_supply_conserved();
}

/// Finding 3, timed: the adversary files its appeal so that its sybil panel decides when
/// less than a whole appeal window is left before the session's horizon, so no
/// counter-appeal could be heard in full. The overturn replaces the verdict (the last
/// round's verdict stands, as it always did) but slashes nobody, at once or at finality.
/// Here the horizon is 20 blocks after the decision, as is the window, so any round decided
/// after the first decision is in the last window.
#[test]
fn finding_3_an_overturn_nobody_could_answer_slashes_nobody() {
    let p = Params {
        appeal_horizon: 20,
        ..always_slash()
    };
    let (mut chain, keys) = chain(p.clone(), &[(Tier::Computer, 30)]);
    let (sid, first) = rightly_failed(&mut chain, &keys);
    let before: Vec<u64> = first.iter().map(|s| stake_of(&chain, s)).collect();
    let horizon = chain.c.outcome(&sid).unwrap().decided_at + p.appeal_horizon;
    let (_, mut ev) = appeal_round(&mut chain, &keys, sid, "sybil-0", 2, Vote::Valid);
    let o = chain.c.outcome(&sid).unwrap();
    let last = o.appeals.rounds.last().unwrap();
    assert_eq!(
        last.segments[0].result,
        trust_contracts::AppealResult::Overturned
    );
    assert!(
        last.decided_at + p.appeal_window > horizon,
        "decided in the last window"
    );
    assert!(last.segments[0].pending.is_none(), "nothing owed");
    ev.extend(until_final(&mut chain, sid));
    assert!(incoherence_slashes(&ev).is_empty());
    for (s, b) in first.iter().zip(&before) {
        assert_eq!(stake_of(&chain, s), *b);
    }
    chain.assert_supply_conserved();
}

/// Runs blocks until `sid`'s appeal round `n` (counting from 1) is on record.
fn until_rounds(chain: &mut crate::common::Chain, sid: trust_protocol::Hash, n: usize) {
    while chain.c.outcome(&sid).unwrap().appeals.rounds.len() < n {
        chain.block();
        assert!(chain.height < 2_000, "the round never ended");
    }
}

/// Finding 11, griefing a PASS: a stranger appeals an honest PASS's Valid segment while its
/// provider is offline (it keys none of the appeal seats). The round is starved, so the
/// Valid verdict falls to Undecided (a provider must not keep a verdict by hiding it from
/// its appeal) and the provider pays the starved seats. That used to cost the stranger
/// nothing: its bond came back. Now a bond comes back only to a backer with standing (a
/// seat of the deciding round that did not judge on the verdict's side); the stranger's
/// bond pays the provider back for the starved seats and the rest burns.
#[test]
fn finding_11_griefing_a_pass_with_a_starved_appeal_costs_the_griefer_its_bond() {
    let p = test_params();
    let (mut chain, keys) = chain(p.clone(), &[(Tier::Computer, 12)]);
    let provider = key("provider");
    let stranger = key("stranger");
    let sid = crate::adversary::decided(&mut chain, &keys, 0, Vote::Valid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let (stranger_before, provider_before) = (
        chain.balance(&stranger.public()),
        chain.balance(&provider.public()),
    );
    let burned = chain.c.state().burned;
    chain.submit(
        &stranger,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    // The provider is offline: no keys.
    until_rounds(&mut chain, sid, 1);
    let o = chain.c.outcome(&sid).unwrap().clone();
    let r = &o.appeals.rounds[0].segments[0];
    assert_eq!(r.result, trust_contracts::AppealResult::Starved);
    assert_eq!(
        o.trace,
        TraceVerdict::Inconclusive,
        "the PASS fell, as before"
    );
    assert_eq!(
        stranger_before - chain.balance(&stranger.public()),
        p.appeal_bond,
        "the griefer pays its bond"
    );
    assert_eq!(
        chain.balance(&provider.public()),
        provider_before,
        "the provider is paid back for the 3 starved seats"
    );
    assert_eq!(
        chain.c.state().burned - burned,
        p.appeal_bond - 3 * p.reward,
        "the rest burns"
    );
    chain.assert_supply_conserved();
}

/// Finding 11, the other side: a seat of the deciding round that was outvoted (it judged
/// the segment Invalid; two seats made it Valid) appeals, and the provider starves the
/// round to keep its Valid. The Valid falls and the seat gets its bond back: whoever could
/// know a Valid is wrong still takes it down for free.
#[test]
fn finding_11_an_outvoted_seat_s_starved_appeal_costs_it_nothing() {
    let p = test_params();
    let (mut chain, keys) = chain(p.clone(), &[(Tier::Computer, 12)]);
    let m = manifest(vec![segment(3, Tier::Computer, vec![])], 1, 2);
    let (sid, drawn) = open(&mut chain, m);
    let first = seats_of(&drawn, 0, 0);
    assert_eq!(first.len(), 3);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, j| {
        Some(if j == 2 { Vote::Invalid } else { Vote::Valid })
    });
    finish(&mut chain, sid);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(o.trace, TraceVerdict::Pass);
    let outvoted = o.segments[0]
        .votes_cast
        .iter()
        .find(|v| v.vote == Vote::Invalid)
        .map(|v| v.seat)
        .unwrap();
    let seat_key = keys
        .iter()
        .find(|k| k.public() == outvoted)
        .unwrap()
        .clone();
    // Funds for the bond (an auditor here holds 10 beside its stake).
    chain.submit(
        &key("provider"),
        Call::Transfer {
            to: outvoted,
            amount: 1_000,
        },
    );
    chain.block();
    let before = chain.balance(&outvoted);
    chain.submit(
        &seat_key,
        Call::Appeal {
            session: sid,
            segments: vec![0],
        },
    );
    until_rounds(&mut chain, sid, 1);
    let o = chain.c.outcome(&sid).unwrap();
    assert_eq!(
        o.appeals.rounds[0].segments[0].result,
        trust_contracts::AppealResult::Starved
    );
    assert_eq!(o.trace, TraceVerdict::Inconclusive);
    assert_eq!(chain.balance(&outvoted), before, "bond back");
    chain.assert_supply_conserved();
}

/// The refusal `OpenSession` gives a session of one Human segment at `k = 3` asking for
/// `extra` racing seats, with the provider's balance and nonce unchanged by it.
fn refused_racing(chain: &mut crate::common::Chain, extra: u8) -> TxError {
    let provider = key("provider");
    let (balance, nonce) = (
        chain.balance(&provider.public()),
        chain.c.nonce(&provider.public()),
    );
    let m = manifest(vec![segment(0, Tier::Human, vec![])], 3, extra);
    let e = chain
        .try_apply(&provider, Call::OpenSession(m))
        .expect_err("refused");
    assert_eq!(
        chain.balance(&provider.public()),
        balance,
        "nothing charged"
    );
    assert_eq!(chain.c.nonce(&provider.public()), nonce, "nothing changed");
    e
}

/// Found by the simulator (`third_party_appeals_refused` at 300 sessions): racing seats
/// are the provider's choice, and every seat a verdict holds raises the panel an appeal
/// of it needs (`2 held_by + 1` fresh seats, none who sat on the segment). A provider
/// asking for 2 racing seats at `k = 3` on a Human tier of 12 gets 5 seats; a verdict all
/// five reach needs 11 fresh auditors to appeal and only 7 are left: the provider would
/// have bought a verdict nobody can appeal. Refused, charging nothing, naming the numbers
/// and the most racing seats it may ask for (none); the same session without racing seats
/// opens as before (a small network seats `k`). On a tier of 27 the same session opens,
/// its seats all reach the verdict, and a stranger's appeal of it is staffed with 11.
/// Where the segment's tier is too small, a higher tier the terms allow staffs the appeal.
#[test]
fn racing_seats_cannot_buy_an_unappealable_verdict() {
    let (mut chain, _) = chain_of(&[(Tier::Human, 12)]);
    assert_eq!(
        refused_racing(&mut chain, 2),
        TxError::RacingSeatsUnappealable {
            tier: Tier::Human,
            extra_seats: 2,
            eligible: 7,
            needed: 11,
            most: 0,
        }
    );
    let e = refused_racing(&mut chain, 2).to_string();
    assert!(e.contains("ask for fewer racing seats (at most 0"), "{e}");
    let no_racing = manifest(vec![segment(0, Tier::Human, vec![])], 3, 0);
    assert!(
        chain
            .try_apply(&key("provider"), Call::OpenSession(no_racing))
            .is_ok()
    );

    // Large enough: opened, decided by all five seats, and its appeal is staffed.
    let (mut chain, keys) = chain_of(&[(Tier::Human, 27)]);
    let m = manifest(vec![segment(0, Tier::Human, vec![])], 3, 2);
    let (sid, drawn) = open(&mut chain, m);
    assert_eq!(seats_of(&drawn, 0, 0).len(), 5);
    run_round(&mut chain, &keys, sid, 0, &drawn, &[], &|_, _| {
        Some(Vote::Valid)
    });
    finish(&mut chain, sid);
    assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
    let panel = appeal_drawn(&mut chain, &key("stranger"), sid);
    assert_eq!(seats_of(&panel, 0, 2).len(), 11, "2 x 5 + 1 fresh seats");

    // A Computer tier of 12 cannot staff the appeal, a Human tier of 30 the terms allow
    // can: opened. Without the Human tier it is refused.
    let (mut chain, _) = chain_of(&[(Tier::Computer, 12), (Tier::Human, 30)]);
    let m = manifest(vec![segment(0, Tier::Computer, vec![])], 3, 2);
    let mut computer_only = m.clone();
    computer_only.terms.tiers = [true, true, false];
    assert!(matches!(
        chain.try_apply(&key("provider"), Call::OpenSession(computer_only)),
        Err(TxError::RacingSeatsUnappealable {
            tier: Tier::Computer,
            needed: 11,
            eligible: 7,
            ..
        })
    ));
    assert!(
        chain
            .try_apply(&key("provider"), Call::OpenSession(m))
            .is_ok()
    );
}

/// A chain of the adversary tests' accounts with `auditors`.
fn chain_of(auditors: &[(Tier, usize)]) -> (crate::common::Chain, Vec<trust_protocol::Keypair>) {
    chain(test_params(), auditors)
}

/// The simulator's case (seed 3 at a sybil share of 20%): the provider withholds every
/// key of the first round, so it is Undecided and escalates to more seats of the same tier
/// (`k + 2` plus the racing seats), whose verdict then excludes both rounds' seats from
/// its appeal. With 2 racing seats at `k = 3` on a Human tier of 26 the session opens (a
/// first-round verdict of 5 leaves 21 for an appeal of 11), but an escalation of 7 would
/// leave 14 where its appeal needs 15: it is not drawn, and the Undecided the provider
/// caused stands (the trace cannot pass). With 1 racing seat the escalation of 6 leaves
/// 16 for 13: it is drawn, decides, and a stranger's appeal of its verdict is staffed.
#[test]
fn racing_seats_cannot_buy_an_unappealable_verdict_through_an_escalation() {
    for (extra, escalates) in [(2, false), (1, true)] {
        let (mut chain, keys) = chain_of(&[(Tier::Human, 26)]);
        let m = manifest(vec![segment(0, Tier::Human, vec![])], 3, extra);
        let (sid, drawn) = open(&mut chain, m);
        let first = seats_of(&drawn, 0, 0);
        assert_eq!(first.len(), usize::from(3 + extra));
        run_round(&mut chain, &keys, sid, 0, &drawn, &first, &|_, _| None);
        let escalation = chain.block();
        let seats = seats_of(&escalation, 0, 1);
        if !escalates {
            assert!(seats.is_empty(), "no escalation beyond appeal");
            finish(&mut chain, sid);
            let o = chain.c.outcome(&sid).unwrap();
            assert_eq!(o.segments[0].verdict, SegmentVerdict::Undecided);
            assert_ne!(o.trace, TraceVerdict::Pass);
            continue;
        }
        assert_eq!(seats.len(), 6, "k + 2 + 1");
        run_round(&mut chain, &keys, sid, 1, &escalation, &[], &|_, _| {
            Some(Vote::Valid)
        });
        finish(&mut chain, sid);
        assert_eq!(chain.c.outcome(&sid).unwrap().trace, TraceVerdict::Pass);
        let panel = appeal_drawn(&mut chain, &key("stranger"), sid);
        assert_eq!(seats_of(&panel, 0, 2).len(), 13, "2 x 6 + 1 fresh seats");
        chain.assert_supply_conserved();
    }
}

/// Params for the honeypot tests: any provider's miss counts (no fee floor), so what keeps
/// a provider off a seat's record is the evidence rule alone.
fn any_provider_counts() -> Params {
    let mut p = test_params();
    p.rubber_stamp.min_provider_fees = 0;
    p
}

/// Finding 6: a griefing provider's false honeypot (a correct step committed as a known
/// error) on a panel of three: the honest seat approves it, the provider's colluder calls
/// it wrong, the third seat abstains. Not disputed (one judgement against the provider's
/// word is under the dispute quorum) and not a supermajority (one of two): the honest seat
/// loses no stake, but its "approved a known error" named the provider in its record, one
/// of the `min_providers` (2) providers whose misses flag a seat as a rubber-stamper (all
/// its earnings forfeit): two such keys could flag a small or new auditor. Now a miss names
/// its provider only where at least two of the other judgements, and more than two thirds
/// of them, back the provider's truth: here one does, so the miss is counted (the approval
/// rate stays what it was) but can never help flag the seat.
#[test]
fn finding_6_a_false_honeypot_without_evidence_names_no_provider() {
    let (mut chain, keys) =
        crate::common::Chain::new(any_provider_counts(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let who: Vec<AccountId> = keys.iter().map(|k| k.public()).collect();
    let vote_of = |id: &AccountId| {
        if *id == who[0] {
            Vote::Valid
        } else if *id == who[1] {
            Vote::Invalid
        } else {
            Vote::Abstain
        }
    };
    let (sid, seats, _) = crate::contract::honeypot_session(
        &mut chain,
        &keys,
        &provider,
        Tier::Computer,
        Vote::Invalid,
        0,
        vote_of,
    );
    assert_eq!(seats.len(), 3);
    assert_eq!(chain.c.outcome(&sid).unwrap().disputed_honeypots, 0);
    let h = &chain.c.state().auditors[&who[0]].honeypots;
    assert_eq!(h.errors_approved.iter().sum::<u32>(), 1, "{h:?}");
    assert!(
        h.miss_providers.is_empty(),
        "no provider named without evidence"
    );
    for id in &who {
        assert_eq!(chain.c.state().accounts[id].stake, 1_000);
        assert!(!chain.c.state().auditors[id].flagged);
    }
}

/// Finding 6, the other side: the defence must not let a rubber-stamper go unrecorded
/// (gating the record on the stake's supermajority of *all* judgements did: a lone
/// rubber-stamper of three is one of three against, so the truth holds only two thirds,
/// not more, and the simulator's rubber-stampers went unflagged and profitable). On a
/// genuine honeypot where the two other seats caught the error, the seat that approved it
/// has the miss on record, its provider named, though it loses no stake.
#[test]
fn finding_6_a_rubber_stamper_beside_two_seats_that_caught_the_error_is_named() {
    let (mut chain, keys) =
        crate::common::Chain::new(any_provider_counts(), &[(Tier::Computer, 3)]);
    let provider = key("provider");
    let stamper = keys[0].public();
    let vote_of = |id: &AccountId| {
        if *id == stamper {
            Vote::Valid
        } else {
            Vote::Invalid
        }
    };
    let (_, seats, _) = crate::contract::honeypot_session(
        &mut chain,
        &keys,
        &provider,
        Tier::Computer,
        Vote::Invalid,
        0,
        vote_of,
    );
    assert_eq!(seats.len(), 3);
    let h = &chain.c.state().auditors[&stamper].honeypots;
    assert_eq!(h.errors_approved.iter().sum::<u32>(), 1, "{h:?}");
    assert_eq!(h.miss_providers, vec![provider.public()]);
}
