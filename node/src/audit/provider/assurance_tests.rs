//! A provider's choice of assurance on an in-process chain: settings reach the ledger,
//! limits and unstaffable seats are refused before anything is charged, a required domain
//! draws only its auditors, and an exposure budget holds at the contract's real draw.

use std::collections::{BTreeMap, BTreeSet};

use trust_contracts::Phase;
use trust_protocol::{AccountId, tx::Tier, units::Ppm};

use trust_judging::session::exposure;

use crate::audit::{
    provider::{
        terms::SessionOptions,
        tests::{TRACE, provider, provider_on},
    },
    testkit::{Chain, provider_key},
};

/// Twelve calculations, each resting on the one before, and an answer.
fn long_trace() -> String {
    let mut t = String::from(
        "## Problem Statement\nStart from 1 and add 2 twelve times. What do you get?\n## Thinking Process\n",
    );
    let mut v = 1;
    for i in 1..=12 {
        t.push_str(&format!("{i}. {v} + 2 = {}\n", v + 2));
        v += 2;
    }
    t.push_str(&format!("## Final Output\n{v}\n"));
    t
}

#[tokio::test]
async fn asked_seats_a_tier_cannot_staff_are_refused_naming_the_limit_and_nothing_is_charged() {
    let (p, mut chain, _dir) = provider(3);
    let me = provider_key().public();
    let before = chain.contract.state().accounts[&me].clone();
    let opts = SessionOptions {
        seats: Some(5),
        ..SessionOptions::default()
    };
    let e = p
        .submit_with(TRACE, None, &opts, &chain.contract)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "k = 5 Computer seats asked, 3 Computer auditors registered"
    );
    let e = p
        .plan(TRACE, None, &opts, &chain.contract)
        .unwrap_err()
        .to_string();
    assert!(e.contains("5 Computer seats asked"), "{e}");
    // Out of the genesis limits: refused the same way.
    let e = p
        .submit_with(
            TRACE,
            None,
            &SessionOptions {
                beta: Some(0.0),
                ..SessionOptions::default()
            },
            &chain.contract,
        )
        .await
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("beta = 0: must be in (0, 1]"), "{e}");
    assert_eq!(chain.pooled().await, 0, "nothing was sent");
    chain.block().await;
    let after = &chain.contract.state().accounts[&me];
    assert_eq!((after.balance, after.nonce), (before.balance, before.nonce));
    assert!(p.book.is_empty(), "no session record kept");
}

#[tokio::test]
async fn the_chosen_terms_go_on_the_ledger_and_into_the_outcome() {
    // Ten auditors: a racing seat is admitted only where an appeal of a verdict all three
    // seats hold can still be staffed (seven fresh seats).
    let (p, mut chain, _dir) = provider(10);
    let opts = SessionOptions {
        seats: Some(2),
        racing_seats: Some(1),
        beta: Some(0.8),
        tau: Some(0.65),
        commit_window: Some(7),
        computer_weight: Some(3),
        fee: Some(10_000),
        ..SessionOptions::default()
    };
    let plan = p.plan(TRACE, None, &opts, &chain.contract).unwrap();
    assert_eq!(plan.terms.seats, [2, 2, 2]);
    assert_eq!(plan.fee, 10_000);
    assert!(plan.segments.iter().all(|s| s.seats == 3), "k + racing");
    let s = p
        .submit_with(TRACE, None, &opts, &chain.contract)
        .await
        .unwrap();
    assert_eq!(s.fee, 10_000);
    chain.block().await;
    let st = chain.contract.state();
    let m = &st.sessions[&s.session].manifest;
    assert_eq!(m.quorum.k, [2, 2, 2]);
    assert_eq!(m.quorum.extra_seats, 1);
    assert_eq!(m.quorum.beta, Ppm(800_000));
    assert_eq!(m.terms.commit_window, 7);
    assert_eq!(m.terms.tier_weights, [3, 1, 1]);
    assert_eq!(m.fee, 10_000);
    let drawn = chain.block().await;
    assert!(!drawn.is_empty());
    let st = chain.contract.state();
    let sess = &st.sessions[&s.session];
    assert!(sess.segments.iter().all(|g| g.seats.len() == 3));
    assert!(
        matches!(sess.phase, Phase::Commit { until, .. } if until == st.height + 7),
        "the session's own commit window: {:?} at {}",
        sess.phase,
        st.height
    );
    assert!(sess.segments.iter().all(|g| g.entry.weight == 3));
}

#[tokio::test]
async fn a_required_domain_draws_only_the_auditors_declaring_it() {
    // Auditors 0..3 declare medicine, 3..6 only math.
    let chain = Chain::with_expertise(&[Tier::Computer; 6], |i| {
        if i < 3 {
            vec!["medicine".into()]
        } else {
            vec!["math".into()]
        }
    });
    let medics: BTreeSet<AccountId> = (0..3)
        .map(|i| crate::audit::testkit::auditor(i).public())
        .collect();
    let (p, mut chain, _dir) = provider_on(chain);
    let four = SessionOptions {
        seats: Some(4),
        domain: Some("medicine".into()),
        ..SessionOptions::default()
    };
    let e = p
        .submit_with(TRACE, None, &four, &chain.contract)
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        e,
        "k = 4 Computer seats asked, 3 Computer auditors declaring medicine registered"
    );
    let three = SessionOptions {
        seats: Some(3),
        ..four
    };
    let s = p
        .submit_with(TRACE, None, &three, &chain.contract)
        .await
        .unwrap();
    chain.block().await;
    chain.block().await;
    let st = chain.contract.state();
    let seated: BTreeSet<AccountId> = st.sessions[&s.session]
        .segments
        .iter()
        .flat_map(|g| g.seats.iter().map(|x| x.account))
        .collect();
    assert!(!seated.is_empty());
    assert!(seated.is_subset(&medics), "only medicine auditors sit");
}

#[tokio::test]
async fn an_exposure_budget_holds_at_the_contracts_draw() {
    let (p, mut chain, _dir) = provider(6);
    let trace = long_trace();
    let opts = SessionOptions {
        max_exposure: Some(0.5),
        ..SessionOptions::default()
    };
    let plan = p.plan(&trace, None, &opts, &chain.contract).unwrap();
    let budget = plan.exposure.budget.expect("a budget");
    assert_eq!(budget, plan.exposure.trace_segments / 2);
    assert!(
        plan.left_out
            .iter()
            .any(|(_, _, why)| why.contains("exposure budget")),
        "six auditors cannot staff every segment within half the trace: {:?}",
        plan.left_out
    );
    let s = p
        .submit_with(&trace, None, &opts, &chain.contract)
        .await
        .unwrap();
    chain.block().await;
    chain.block().await;
    let st = chain.contract.state();
    let sess = &st.sessions[&s.session];
    assert!(matches!(sess.phase, Phase::Commit { .. }), "drawn");
    let mut m = sess.manifest.clone();
    m.segments = sess.segments.iter().map(|g| g.entry.clone()).collect();
    let mut seen: BTreeMap<AccountId, BTreeSet<u16>> = BTreeMap::new();
    for (i, g) in sess.segments.iter().enumerate() {
        for x in &g.seats {
            seen.entry(x.account)
                .or_default()
                .extend(exposure::sight(&m, i));
        }
    }
    assert!(!seen.is_empty());
    for (who, s) in &seen {
        assert!(s.len() <= budget, "{who} sees {} > {budget}", s.len());
    }
    // Without a budget the same trace is staffed whole.
    let open = p
        .plan(&trace, None, &SessionOptions::default(), &chain.contract)
        .unwrap();
    assert!(
        open.left_out
            .iter()
            .all(|(_, _, why)| !why.contains("exposure")),
        "{:?}",
        open.left_out
    );
    assert!(open.exposure.most_seen > budget);
}

/// Issue 39, findings 1 and 3, from the provider's side: under the network's default
/// floors, a session asking for a 1-block window, too few seats, or a required domain only
/// a small pool declares is refused before anything is signed, with an error that names the
/// floor or the pool; nothing is pooled or charged, and a session on today's default terms
/// (k = 3) still opens.
#[tokio::test]
async fn terms_below_the_networks_floors_are_refused_before_signing() {
    // Three auditors declare `private`: enough seats, too little stake (3 x 1000).
    let chain = Chain::with_params(
        trust_contracts::Params::default(),
        &[Tier::Computer; 4],
        |i| {
            if i < 3 {
                vec!["math".into(), "private".into()]
            } else {
                vec!["math".into()]
            }
        },
    );
    let (p, mut chain, _dir) = provider_on(chain);
    let me = provider_key().public();
    let before = chain.contract.state().accounts[&me].clone();
    let cases = [
        (
            SessionOptions {
                commit_window: Some(1),
                ..SessionOptions::default()
            },
            "commit window 1 for the Computer tier is below the network's floor: at least 6",
        ),
        (
            SessionOptions {
                seats: Some(1),
                ..SessionOptions::default()
            },
            "k 1 for the Computer tier is below the network's floor: at least 3",
        ),
        (
            SessionOptions {
                domain: Some("private".into()),
                ..SessionOptions::default()
            },
            "the pool must hold at least 20000",
        ),
    ];
    for (opts, want) in cases {
        let e = p
            .submit_with(TRACE, None, &opts, &chain.contract)
            .await
            .unwrap_err()
            .to_string();
        assert!(e.contains(want), "{e}");
        let plan = p.plan(TRACE, None, &opts, &chain.contract).unwrap_err();
        assert!(plan.to_string().contains(want), "{plan}");
    }
    assert_eq!(chain.pooled().await, 0, "nothing was sent");
    chain.block().await;
    let after = &chain.contract.state().accounts[&me];
    assert_eq!((after.balance, after.nonce), (before.balance, before.nonce));
    // Today's default terms meet the floors.
    let s = p
        .submit_with(TRACE, None, &SessionOptions::default(), &chain.contract)
        .await
        .unwrap();
    chain.block().await;
    assert!(chain.contract.state().sessions.contains_key(&s.session));
}
