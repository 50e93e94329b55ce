use std::collections::BTreeSet;

use rand::{SeedableRng, rngs::StdRng};
use trust_protocol::{seal::SegmentDoc, trace::Trace};

use super::*;
use crate::{
    decompose::{Options, decompose},
    judge::SegmentView,
    session::prepare::restrict,
};

fn example(file: &str) -> String {
    std::fs::read_to_string(format!(
        "{}/../examples/traces/{file}",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("trace")
}

/// `text` decomposed, every tier kept (a network with auditors on each).
fn restricted(text: &str) -> Restricted {
    let h = decompose(&Trace::parse(text).expect("parse"), &Options::default()).expect("decompose");
    restrict(&h, |_| true)
}

fn all_forgeries(r: &Restricted) -> Vec<(String, Forgery)> {
    sources(r)
        .into_iter()
        .flat_map(|(s, o)| {
            forgeries(r, s, o)
                .into_iter()
                .map(move |f| (r.hdag.nodes[s].id.clone(), f))
        })
        .collect()
}

fn bakery(thinking: &str) -> String {
    format!(
        "## Problem Statement\nA bakery sells muffins for $3 each and cookies at 4 for $5. On Saturday it sold 48 muffins and 36 cookies, and it spent $62 on ingredients. How much profit did the bakery make on Saturday?\n\n## Thinking Process\n{thinking}\n\n## Final Output\n$127\n"
    )
}

/// What the seats of a honeypot see of it, as the seat pipeline builds it: the forged
/// claim with its one operation, the source's premises and givens.
fn seat_view(r: &Restricted, source: &str, f: &Forgery) -> SegmentView {
    let premises: Vec<String> = r
        .hdag
        .dependencies_of(source)
        .map(|d| r.hdag.nodes[r.hdag.index_of(d).unwrap()].content.clone())
        .collect();
    let doc = SegmentDoc {
        claim: f.claim.clone(),
        given: r.givens.get(source).cloned().unwrap_or_default(),
        operations: vec![f.operation.clone()],
        proof: None,
        cells: Vec::new(),
    };
    SegmentView::new(doc, premises, false)
}

/// The bakery problem: each step's forgeries are exactly these, each of them wrong
/// (read by a person: the muffins are 48, the cookies 36, a cookie costs $5/4, a total
/// is a sum, a profit a difference).
#[test]
fn the_bakery_steps_are_forged_wrong_in_every_way_and_only_so() {
    let r = restricted(&example("bakery-correct.txt"));
    let got: BTreeSet<(String, Kind, String)> = all_forgeries(&r)
        .into_iter()
        .map(|(s, f)| (s, f.kind, f.claim))
        .collect();
    let want: BTreeSet<(String, Kind, String)> = [
        ("ST1", Kind::Slip, "The muffins brought in 48 × $3 = $154."),
        ("ST1", Kind::Slip, "The muffins brought in 48 × $3 = $1440."),
        (
            "ST1",
            Kind::WrongOperation,
            "The muffins brought in 48 + $3 = $51.",
        ),
        (
            "ST1",
            Kind::WrongEntity,
            "The muffins brought in 36 × $3 = $108.",
        ),
        (
            "ST2",
            Kind::Slip,
            "The cookies come in groups of 4, so there were 36 ÷ 4 = 19 groups.",
        ),
        (
            "ST2",
            Kind::Slip,
            "The cookies come in groups of 4, so there were 36 ÷ 4 = 90 groups.",
        ),
        (
            "ST2",
            Kind::WrongOperation,
            "The cookies come in groups of 4, so there were 36 × 4 = 144 groups.",
        ),
        (
            "ST2",
            Kind::WrongEntity,
            "The cookies come in groups of 4, so there were 48 ÷ 4 = 12 groups.",
        ),
        ("ST3", Kind::Slip, "The cookies brought in 9 × $5 = $55."),
        ("ST3", Kind::Slip, "The cookies brought in 9 × $5 = $450."),
        (
            "ST3",
            Kind::MisappliedRate,
            "The cookies brought in 36 × $5 = $180.",
        ),
        ("ST4", Kind::Slip, "Total sales were $144 + $45 = $199."),
        ("ST4", Kind::Slip, "Total sales were $144 + $45 = $1890."),
        (
            "ST4",
            Kind::WrongOperation,
            "Total sales were $144 − $45 = $99.",
        ),
        ("ST5", Kind::Slip, "The profit is $189 − $62 = $137."),
        ("ST5", Kind::Slip, "The profit is $189 − $62 = $1270."),
        (
            "ST5",
            Kind::WrongOperation,
            "The profit is $189 + $62 = $251.",
        ),
    ]
    .into_iter()
    .map(|(s, k, c)| (s.to_string(), k, c.to_string()))
    .collect();
    let missing: Vec<_> = want.difference(&got).collect();
    let extra: Vec<_> = got.difference(&want).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:#?}\nunexpected {extra:#?}"
    );
}

/// Every forgery of every sample trace: its words are the source's, only its
/// calculation changed; the seats' own check of that calculation fails for a slip
/// (they vote Invalid without their judge) and holds for the others (only a judge that
/// reads the claim against the problem sees the error); and each kind's reason holds
/// in the problem's text.
#[test]
fn every_worded_honeypot_is_wrong_by_construction() {
    let mut kinds = BTreeSet::new();
    let mut dir: Vec<_> =
        std::fs::read_dir(format!("{}/../examples/traces", env!("CARGO_MANIFEST_DIR")))
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "txt"))
            .collect();
    dir.sort();
    for path in dir {
        let r = restricted(&std::fs::read_to_string(&path).unwrap());
        for (source, f) in all_forgeries(&r) {
            let node = &r.hdag.nodes[r.hdag.index_of(&source).unwrap()];
            let original = r.operations[&source][0].clone();
            let at = node.content.find(&original).unwrap();
            assert_eq!(&f.claim[..at], &node.content[..at], "{path:?}: {f:?}");
            assert!(
                f.claim.ends_with(&node.content[at + original.len()..]),
                "{path:?}: {f:?}"
            );
            assert!(f.claim.contains(&f.operation) && f.operation != original);
            assert!(!r.conclusions.contains(&source));
            assert_ne!(Tier::from(node.primary_auditor), Tier::Computer);
            let view = seat_view(&r, &source, &f);
            assert_eq!(view.operations.len(), 1, "{f:?}");
            let failed = view.failed_operation().map(|d| d.vote);
            if f.kind == Kind::Slip {
                assert_eq!(failed, Some(Vote::Invalid), "{path:?}: {f:?}");
            } else {
                assert_eq!(failed, None, "{path:?}: {f:?}");
                assert_eq!(view.operations[0].decision.vote, Vote::Valid, "{f:?}");
            }
            let calc = Calc::parse(&f.operation).unwrap();
            let old = Calc::parse(&original).unwrap();
            assert_eq!(old.op.apply(old.a.value, old.b.value), Some(old.c.value));
            assert_ne!(calc.c.value, old.c.value, "{f:?}: the same value");
            let problem = r.problem.to_lowercase();
            match f.kind {
                Kind::Slip => {
                    assert_ne!(
                        calc.op.apply(calc.a.value, calc.b.value),
                        Some(calc.c.value)
                    )
                }
                Kind::WrongOperation => {
                    assert_ne!(calc.op, old.op);
                    assert_eq!(
                        calc.op.apply(calc.a.value, calc.b.value),
                        Some(calc.c.value)
                    );
                }
                Kind::WrongEntity => {
                    // One operand changed, to a count the problem gives another
                    // entity, which the claim does not name.
                    assert_eq!(calc.op, old.op);
                    let (from, to) = if calc.a.value != old.a.value {
                        (old.a.value, calc.a.value)
                    } else {
                        (old.b.value, calc.b.value)
                    };
                    let tie = |v: i128| {
                        ties(&r.problem)
                            .into_iter()
                            .find(|t| t.value == v)
                            .unwrap_or_else(|| panic!("{v} tied to nothing: {f:?}"))
                    };
                    assert!(names(&f.claim, &tie(from).word), "{f:?}");
                    assert!(!names(&f.claim, &tie(to).word), "{f:?}");
                    assert_eq!(
                        numbers(&r.problem).iter().filter(|n| n.value == to).count(),
                        1
                    );
                }
                Kind::MisappliedRate => {
                    // The groups became items: the price stays that of a group.
                    let (groups, items) = if calc.a.money {
                        (old.b.value, calc.b.value)
                    } else {
                        (old.a.value, calc.a.value)
                    };
                    let size = items / groups;
                    assert_eq!(size * groups, items);
                    assert!(size >= 2);
                    assert!(problem.contains(&format!("{size} for $")), "{f:?}");
                }
            }
            kinds.insert(f.kind);
        }
    }
    assert_eq!(kinds.len(), 4, "{kinds:?}");
}

/// The provider's forge plants worded honeypots of all three difficulties over a few
/// sessions of the bakery trace, each a STEP of the LLM tier with its calculation.
#[test]
fn worded_honeypots_are_planted_at_each_difficulty() {
    let r = restricted(&example("bakery-correct.txt"));
    let mut difficulties = BTreeSet::new();
    for seed in 0..6 {
        let baits = forge(&r, 3, &mut StdRng::seed_from_u64(seed));
        assert_eq!(baits.len(), 3, "seed {seed}");
        // The slip first, then one of each difficulty.
        let d: Vec<Difficulty> = baits.iter().map(|b| b.difficulty).collect();
        assert_eq!(
            d,
            [Difficulty::Obvious, Difficulty::Subtle, Difficulty::Domain]
        );
        for b in &baits {
            let n = &r.hdag.nodes[r.hdag.index_of(&b.source).unwrap()];
            assert_eq!(Tier::from(n.primary_auditor), Tier::Llm);
            assert_eq!(b.verdict, Vote::Invalid);
            let c = b.calculation.as_ref().unwrap();
            assert!(b.claim.contains(&c.text));
            assert_eq!(r.supports[&c.source], b.source);
            difficulties.insert(b.difficulty);
        }
        let sources: BTreeSet<&str> = baits.iter().map(|b| b.source.as_str()).collect();
        assert_eq!(sources.len(), baits.len(), "one honeypot per step");
    }
    assert_eq!(difficulties.len(), 3);
    // The whole forge: half of them worded where the Computer tier has steps to copy;
    // the bakery's Computer tier holds only the OPERATIONs of its STEPs, and a copy of
    // one would support nothing (no OPERATION of the trace does), so all four are worded
    // here, the slip first.
    let all = super::super::forge(&r, 4, &mut StdRng::seed_from_u64(1));
    assert_eq!(all.len(), 4);
    assert_eq!(all.iter().filter(|b| b.calculation.is_some()).count(), 4);
    assert_eq!(all[0].difficulty, Difficulty::Obvious);
}

#[test]
fn forging_is_deterministic_given_the_seed() {
    let r = restricted(&example("bakery-correct.txt"));
    let run = |seed| super::super::forge(&r, 6, &mut StdRng::seed_from_u64(seed));
    assert_eq!(run(7), run(7));
    let distinct: BTreeSet<Vec<String>> = (0..8)
        .map(|s| run(s).into_iter().map(|b| b.claim).collect())
        .collect();
    assert!(distinct.len() > 1, "the seed chooses");
}

#[test]
fn a_trace_with_no_worded_step_gets_no_worded_honeypot() {
    for file in [
        "fraction-correct.txt",
        "fraction-incorrect.txt",
        "equation-correct.txt",
        "rules-correct.txt",
        "rules-wrong.txt",
    ] {
        let r = restricted(&example(file));
        assert!(
            forge(&r, 8, &mut StdRng::seed_from_u64(1)).is_empty(),
            "{file}"
        );
        assert!(
            super::super::forge(&r, 8, &mut StdRng::seed_from_u64(1))
                .iter()
                .all(|b| b.calculation.is_none()),
            "{file}"
        );
    }
    // Without the LLM tier, the bakery's worded steps are not in the session.
    let h = decompose(
        &Trace::parse(&example("bakery-correct.txt")).unwrap(),
        &Options::default(),
    )
    .unwrap();
    let computer_only = restrict(&h, |t| t == Tier::Computer);
    assert!(forge(&computer_only, 8, &mut StdRng::seed_from_u64(1)).is_empty());
}

/// Where the problem does not settle what is right, nothing is forged.
#[test]
fn nothing_is_forged_where_the_error_would_not_be_certain() {
    // A step whose own calculation is wrong: no honeypot copies it.
    let r = restricted(&bakery("The muffins brought in 48 × $3 = $154."));
    assert!(all_forgeries(&r).is_empty(), "{:?}", all_forgeries(&r));
    // A profit made by adding: swapping the operation might make it right.
    let r = restricted(&bakery("The profit is $189 + $62 = $251."));
    assert!(
        all_forgeries(&r).iter().all(|(_, f)| f.kind == Kind::Slip),
        "{:?}",
        all_forgeries(&r)
    );
    // Muffins counted twice in the problem: which count is the step's is not certain.
    let text = "## Problem Statement\nA bakery sold 48 muffins on Saturday and 30 muffins on Sunday, and 36 cookies in all. How many muffins did it sell?\n\n## Thinking Process\nThe muffins sold on Saturday brought in 48 × $3 = $144.\n\n## Final Output\n$144\n";
    let r = restricted(text);
    assert!(
        all_forgeries(&r)
            .iter()
            .all(|(_, f)| f.kind != Kind::WrongEntity),
        "{:?}",
        all_forgeries(&r)
    );
    // The other entity's count is also in a premise the seat reads: not only the
    // problem speaks of it, so nothing is forged from it.
    let r = restricted(&bakery(
        "So 48 muffins and 36 cookies were sold.\nThe muffins brought in 48 × $3 = $144.",
    ));
    let (step, _) = sources(&r)
        .into_iter()
        .find(|(s, _)| r.hdag.nodes[*s].content.starts_with("The muffins"))
        .expect("the muffins step is a source");
    let id = r.hdag.nodes[step].id.clone();
    assert!(
        r.hdag
            .dependencies_of(&id)
            .any(|d| r.hdag.nodes[r.hdag.index_of(d).unwrap()]
                .content
                .contains("36 cookies")),
        "the seat reads the premise"
    );
    assert!(
        all_forgeries(&r)
            .iter()
            .filter(|(s, _)| *s == id)
            .all(|(_, f)| f.kind != Kind::WrongEntity),
        "{:?}",
        all_forgeries(&r)
    );
}

#[test]
fn calculations_and_numbers_are_read_strictly() {
    let c = Calc::parse("$144 + $45 = $189").unwrap();
    assert_eq!((c.a.value, c.b.value, c.c.value), (144, 45, 189));
    assert!(c.a.money && c.b.money && c.c.money);
    assert_eq!(c.op, Op::Add);
    assert_eq!(Calc::parse("36 ÷ 4 = 9").unwrap().op, Op::Div);
    for bad in [
        "1.5 × 2 = 3",
        "2 + 3 + 4 = 9",
        "3x + 1 = 7",
        "20% × 5 = 1",
        "1,000 + 1 = 1,001",
    ] {
        assert!(Calc::parse(bad).is_none(), "{bad}");
    }
    let n: Vec<i128> = numbers("sold 48 muffins, 0.96 of them, 1,000 and 20% for $5")
        .iter()
        .map(|n| n.value)
        .collect();
    assert_eq!(n, vec![48, 5]);
    assert_eq!(group_prices("cookies at 4 for $5"), vec![(4, 5)]);
    assert_eq!(group_prices("eggs at $3 a dozen"), vec![(12, 3)]);
    assert_eq!(group_prices("pens at $2 per 3"), vec![(3, 2)]);
    assert!(group_prices("muffins for $3 each").is_empty());
    assert!(same_word("muffins", "muffin") && same_word("boxes", "box"));
    assert!(!same_word("cookies", "muffins"));
}

/// In a manifest a worded honeypot looks like the step it copies: an LLM-tier STEP with
/// the same premises, its one operation sealed with it, and a Computer-tier OPERATION
/// that `supports` it, resting on what the source's OPERATION rests on; only the
/// honeypot's commitment opens.
#[test]
fn a_worded_honeypot_is_planted_with_its_operation_like_a_real_step() {
    use trust_protocol::{seal::decrypt_segment, tx::QuorumParams, units::Ppm};

    use crate::session::prepare::{TierWeights, prepare_with};

    let r = restricted(&example("bakery-correct.txt"));
    let quorum = QuorumParams {
        k: [3, 3, 3],
        extra_seats: 0,
        tau: Ppm(600_000),
        beta: Ppm(600_000),
    };
    for seed in 0..6 {
        let mut rng = StdRng::seed_from_u64(seed);
        let baits = forge(&r, 3, &mut rng);
        let p = prepare_with(
            &r,
            &baits,
            quorum.clone(),
            TierWeights::EQUAL,
            1,
            "math",
            &mut rng,
        )
        .expect("prepare");
        let m = &p.manifest;
        assert_eq!(m.segments.len(), r.hdag.nodes.len() + 2 * baits.len());
        assert_eq!(
            p.honeypots.len(),
            baits.len(),
            "only the STEPs are honeypots"
        );
        let at = |name: &str| p.mapping.iter().position(|e| e.node == name).unwrap();
        let doc = |i: usize| {
            SegmentDoc::from_bytes(
                &decrypt_segment(&p.keys[i], &m.segments[i].id, &p.blocks[i].1).unwrap(),
            )
            .unwrap()
        };
        for b in &baits {
            let c = b.calculation.as_ref().unwrap();
            let (h, op) = (at(&b.name()), at(&b.calculation_name().unwrap()));
            let (src, src_op) = (at(&b.source), at(&c.source));
            let (g, o) = (&m.segments[h], &m.segments[op]);
            let (s, so) = (&m.segments[src], &m.segments[src_op]);
            assert!(p.honeypots.iter().any(|x| usize::from(x.segment) == h));
            assert!(!p.honeypots.iter().any(|x| usize::from(x.segment) == op));
            assert_eq!((g.level, g.tier, g.weight), (s.level, s.tier, s.weight));
            assert_eq!(g.tier, Tier::Llm);
            // Premises of its own, the same for the STEP and its OPERATION (as a real
            // STEP's OPERATION rests on what the STEP rests on), not a copy of the
            // source's where that would make a twin the source's dependents tell apart.
            let own: Vec<u16> = {
                let mut d: Vec<u16> = b
                    .premises
                    .as_ref()
                    .unwrap()
                    .iter()
                    .map(|id| at(id) as u16)
                    .collect();
                d.sort_unstable();
                d
            };
            assert_eq!(g.depends_on, own);
            assert_eq!(c.premises.as_ref(), b.premises.as_ref());
            let cited = |j: usize| {
                m.segments
                    .iter()
                    .any(|x| x.depends_on.contains(&(j as u16)))
            };
            assert!(
                g.depends_on != s.depends_on || !cited(src),
                "seed {seed}: {b:?}"
            );
            assert_eq!((o.level, o.tier, o.weight), (so.level, so.tier, so.weight));
            assert_eq!(o.tier, Tier::Computer);
            assert_eq!(o.level, AbstractionLevel::Operation);
            assert_eq!(o.depends_on, g.depends_on);
            assert_eq!(o.supports, Some(h as u16));
            assert_eq!(so.supports, Some(src as u16));
            assert!(!g.conclusion && !o.conclusion);
            assert!(o.depends_on.iter().all(|&d| usize::from(d) < op));
            // What the seats read: the forged claim with its own calculation, as the
            // source's seats read the source's.
            let (dg, ds) = (doc(h), doc(src));
            assert_eq!(dg.claim, b.claim);
            assert_eq!(dg.operations, vec![c.text.clone()]);
            assert_eq!(ds.operations.len(), 1);
            assert_eq!(dg.given, ds.given);
            assert_eq!(doc(op).claim, c.text);
            assert_eq!(doc(op).given, doc(src_op).given);
        }
    }
}
