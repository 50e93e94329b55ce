//! A labelled test set for the Computer-tier checkers: arithmetic, decimals, linear
//! algebra, ClaimTrees rule chains, propositional steps and calculations written in words
//! and markup, half or more of them wrong in the ways the paper lists (sign flips,
//! off-by-one, wrong constants, invalid derivations, missing rules) and the ways text
//! gets them wrong (a wrong result, a wrong operator with its result, a dropped term).
//! Generated from a fixed seed, so the set and the numbers are the same every run.
//!
//! Asserts that no wrong step is judged Valid, and prints precision and recall of error
//! detection (run with `--nocapture` to see them).

use trust_judging::computer::{Judgement, StepInput, check};
use trust_protocol::{Hash, Vote};

struct Case {
    family: &'static str,
    claim: String,
    premises: Vec<String>,
    context: String,
    wrong: bool,
}

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 += 1;
        Hash::of_parts("labelled-set", &[&self.0.to_le_bytes()]).to_u64()
    }
    fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }
}

fn case(
    family: &'static str,
    claim: String,
    premises: Vec<String>,
    context: &str,
    wrong: bool,
) -> Case {
    Case {
        family,
        claim,
        premises,
        context: context.to_string(),
        wrong,
    }
}

fn arithmetic(r: &mut Rng, out: &mut Vec<Case>) {
    for i in 0..24 {
        let (a, b) = (r.range(2, 99), r.range(2, 99));
        let (op, c) = match i % 3 {
            0 => ("+", a + b),
            1 => ("−", a - b),
            _ => ("×", a * b),
        };
        out.push(case(
            "arithmetic",
            format!("So {a} {op} {b} = {c}"),
            vec![],
            "",
            false,
        ));
        let wrong = match i % 4 {
            0 => c + 1,  // off by one
            1 => -c,     // sign flip
            2 => c + 10, // wrong constant
            _ => c - 1,
        };
        let wrong = if wrong == c { c + 2 } else { wrong };
        out.push(case(
            "arithmetic",
            format!("So {a} {op} {b} = {wrong}"),
            vec![],
            "",
            true,
        ));
    }
}

fn decimals(r: &mut Rng, out: &mut Vec<Case>) {
    for _ in 0..20 {
        let n = r.range(1, 9);
        let d = r.range(3, 9);
        let f = r.range(90, 99);
        // n / (d * 0.f), written truncated to 6 decimals with an ellipsis.
        let exact = n as f64 / (d as f64 * f as f64 / 100.0);
        let trunc = (exact * 1e6).floor() / 1e6;
        out.push(case(
            "decimals",
            format!("t = {n}/({d}*0.{f}) = {trunc:.6}..."),
            vec![],
            "",
            false,
        ));
        out.push(case(
            "decimals",
            format!("t = {n}/({d}*0.{f}) = {:.6}...", trunc + 0.0002),
            vec![],
            "",
            true,
        ));
    }
}

fn algebra(r: &mut Rng, out: &mut Vec<Case>) {
    for i in 0..24 {
        // a x + b = c x + d with integer root x0.
        // A non-zero root: at x = 0 a wrong coefficient still gives a true equation, and
        // the case would be labelled wrong while being right.
        let x0 = match r.range(-20, 19) {
            0 => 20,
            v => v,
        };
        let a = r.range(2, 9);
        let c = a + r.range(1, 5);
        let b = r.range(-30, 30);
        let d = a * x0 + b - c * x0;
        let premise = format!("{a}x + {b} = {c}x + {d}").replace("+ -", "− ");
        let k = c - a;
        let rhs = b - d;
        out.push(case(
            "algebra",
            format!("Therefore, {k}x = {rhs}"),
            vec![premise.clone()],
            "",
            false,
        ));
        let wrong = match i % 3 {
            0 => format!("Therefore, {k}x = {}", -rhs), // sign flip
            1 => format!("Therefore, {}x = {rhs}", k + 1), // off by one
            _ => format!("Therefore, {k}x = {}", rhs + 7), // wrong constant
        };
        out.push(case("algebra", wrong, vec![premise.clone()], "", true));
        out.push(case(
            "algebra",
            format!("Finally, x = {x0}"),
            vec![premise.clone()],
            "",
            false,
        ));
        out.push(case(
            "algebra",
            format!("Finally, x = {}", x0 + 1),
            vec![premise],
            "",
            true,
        ));
    }
}

fn rules(r: &mut Rng, out: &mut Vec<Case>) {
    for _ in 0..20 {
        let names: Vec<String> = (0..6).map(|_| format!("Q{}", r.range(10, 99))).collect();
        let mut uniq = names.clone();
        uniq.sort();
        uniq.dedup();
        if uniq.len() < 6 {
            continue;
        }
        let [n0, n1, n2, n3, n4, n5] = [
            &names[0], &names[1], &names[2], &names[3], &names[4], &names[5],
        ];
        let ctx = format!("Rules: {n0} → {n1}; {n1} → {n2}; {n3} → {n4}. Fact: I have {n0}.");
        out.push(case(
            "rules",
            format!("I use rule ({n0} → {n1}) to derive {n1}"),
            vec![],
            &ctx,
            false,
        ));
        out.push(case(
            "rules",
            format!("I use rule ({n1} → {n2}) to derive {n2}"),
            vec![format!("I use rule ({n0} → {n1}) to derive {n1}")],
            &ctx,
            false,
        ));
        // Missing rule (the ClaimTrees corruption).
        out.push(case(
            "rules",
            format!("I use rule ({n2} → {n5}) to derive {n5}"),
            vec![format!("I use rule ({n1} → {n2}) to derive {n2}")],
            &ctx,
            true,
        ));
        // Antecedent never derived.
        out.push(case(
            "rules",
            format!("I use rule ({n3} → {n4}) to derive {n4}"),
            vec![],
            &ctx,
            true,
        ));
    }
}

fn propositional(out: &mut Vec<Case>) {
    let ctx = "Premises: p → q, p, q ∨ r, ¬r, (a ∧ b), s ↔ t, t, ¬q → ¬u, u";
    let valid = [
        "q FROM p → q, p",
        "q FROM q ∨ r, ¬r",
        "a FROM (a ∧ b)",
        "s FROM s ↔ t, t",
        "q FROM ¬q → ¬u, u",
        "(a ∨ r) FROM (a ∧ b)",
        "(p ∧ q) FROM p → q, p",
        "(q ∨ z) FROM q ∨ r, ¬r",
    ];
    let invalid = [
        "p FROM p → q",
        "r FROM q ∨ r",
        "¬q FROM ¬r",
        "u FROM ¬q → ¬u",
        "(a ∧ r) FROM (a ∧ b)",
        "¬p FROM p → q, ¬r",
        "s FROM t",
        "q FROM s → q, s",
    ];
    for (v, w) in valid.iter().zip(invalid) {
        for _ in 0..2 {
            out.push(case("propositional", v.to_string(), vec![], ctx, false));
            out.push(case("propositional", w.to_string(), vec![], ctx, true));
        }
    }
}

/// Calculations as people and models write them: units and words between numbers,
/// money, `x` as a times sign, LaTeX, markdown, GSM8K annotations, number words. Each
/// correct step has wrong twins: a wrong result, a wrong operator with its result, a
/// dropped term.
fn worded(r: &mut Rng, out: &mut Vec<Case>) {
    for i in 0..16 {
        let (a, b, c) = (r.range(12, 90), r.range(2, 9), r.range(2, 30));
        let good = a * b - c;
        let (claim, wrong_result, wrong_op, dropped) = match i % 8 {
            0 => (
                format!("She packs {a} kg * {b} - {c} = {good} kg in all."),
                format!("She packs {a} kg * {b} - {c} = {} kg in all.", good + 3),
                format!("She packs {a} kg * {b} + {c} = {good} kg in all."),
                format!("She packs {a} kg * {b} = {good} kg in all."),
            ),
            1 => (
                format!("**Step {b}:** ${a} × {b} − ${c} = ${good}"),
                format!("**Step {b}:** ${a} × {b} − ${c} = ${}", good - 2),
                format!("**Step {b}:** ${a} × {b} + ${c} = ${good}"),
                format!("**Step {b}:** ${a} × {b} = ${good}"),
            ),
            2 => (
                format!(
                    "He reads {a} pages x {b} days - {c} = <<{a}*{b}-{c}={good}>>{good} pages."
                ),
                format!(
                    "He reads {a} pages x {b} days - {c} = <<{a}*{b}-{c}={}>>{} pages.",
                    good + 10,
                    good + 10
                ),
                format!(
                    "He reads {a} pages x {b} days + {c} = <<{a}*{b}+{c}={good}>>{good} pages."
                ),
                format!("He reads {a} pages x {b} days = <<{a}*{b}={good}>>{good} pages."),
            ),
            3 => (
                format!(r"$\left({a} \cdot {b}\right) - {c} = {good}$"),
                format!(r"$\left({a} \cdot {b}\right) - {c} = {}$", good + 1),
                format!(r"$\left({a} \cdot {b}\right) + {c} = {good}$"),
                format!(r"$\left({a} \cdot {b}\right) = {good}$"),
            ),
            4 => (
                format!("- So {a}x{b} - {c} = {good}"),
                format!("- So {a}x{b} - {c} = {}", good - 1),
                format!("- So {a}x{b} + {c} = {good}"),
                format!("- So {a}x{b} = {good}"),
            ),
            5 => (
                format!("Twice {a} minus {c} = {}", 2 * a - c),
                format!("Twice {a} minus {c} = {}", 2 * a - c + 2),
                format!("Twice {a} plus {c} = {}", 2 * a - c),
                format!("Twice {a} = {}", 2 * a - c),
            ),
            6 => (
                format!("That is {a},000 × {b} − {c},000 = {},000 dollars.", good),
                format!(
                    "That is {a},000 × {b} − {c},000 = {},000 dollars.",
                    good + 1
                ),
                format!("That is {a},000 × {b} + {c},000 = {},000 dollars.", good),
                format!("That is {a},000 × {b} = {},000 dollars.", good),
            ),
            _ => (
                format!(
                    "Half of {} is taken: {} / 2 = {a}, and {a} * {b} - {c} = {good}.",
                    2 * a,
                    2 * a
                ),
                format!(
                    "Half of {} is taken: {} / 2 = {a}, and {a} * {b} - {c} = {}.",
                    2 * a,
                    2 * a,
                    good + 4
                ),
                format!(
                    "Half of {} is taken: {} / 2 = {a}, and {a} * {b} + {c} = {good}.",
                    2 * a,
                    2 * a
                ),
                format!(
                    "Half of {} is taken: {} / 2 = {a}, and {a} * {b} = {good}.",
                    2 * a,
                    2 * a
                ),
            ),
        };
        out.push(case("worded", claim, vec![], "", false));
        for w in [wrong_result, wrong_op, dropped] {
            out.push(case("worded", w, vec![], "", true));
        }
    }
}

#[test]
fn labelled_set_precision_and_recall() {
    let mut r = Rng(7);
    let mut cases = Vec::new();
    arithmetic(&mut r, &mut cases);
    decimals(&mut r, &mut cases);
    algebra(&mut r, &mut cases);
    rules(&mut r, &mut cases);
    propositional(&mut cases);
    worded(&mut r, &mut cases);
    let wrong_total = cases.iter().filter(|c| c.wrong).count();
    assert!(cases.len() >= 200, "only {} cases", cases.len());
    assert!(
        wrong_total * 2 >= cases.len() - 2,
        "at least about half must be wrong"
    );

    let (mut tp, mut fp, mut fn_, mut valid_ok, mut abstain) = (0, 0, 0, 0, 0);
    let mut passed_wrong = Vec::new();
    let mut per_family: Vec<(&str, [u32; 4])> = Vec::new();
    for (i, c) in cases.iter().enumerate() {
        let premises: Vec<&str> = c.premises.iter().map(String::as_str).collect();
        let j = check(
            &StepInput {
                claim: &c.claim,
                premises: &premises,
                context: &c.context,
            },
            &Hash::of_parts("case", &[&(i as u64).to_le_bytes()]),
        );
        let flagged = matches!(j.as_vote(), Some(Vote::Invalid | Vote::Ungrounded));
        match (c.wrong, &j) {
            (
                true,
                Judgement::Vote {
                    vote: Vote::Valid, ..
                },
            ) => passed_wrong.push(format!("{}: {}", c.family, c.claim)),
            (
                false,
                Judgement::Vote {
                    vote: Vote::Valid, ..
                },
            ) => valid_ok += 1,
            (_, Judgement::Abstain(_)) => abstain += 1,
            _ => {}
        }
        match (c.wrong, flagged) {
            (true, true) => tp += 1,
            (false, true) => fp += 1,
            (true, false) => fn_ += 1,
            _ => {}
        }
        // Per family: [wrong caught, wrong, correct judged Valid, correct].
        let slot = match per_family.iter_mut().find(|(f, _)| *f == c.family) {
            Some((_, s)) => s,
            None => {
                per_family.push((c.family, [0; 4]));
                &mut per_family.last_mut().expect("just pushed").1
            }
        };
        if c.wrong {
            slot[1] += 1;
            slot[0] += u32::from(flagged);
        } else {
            slot[3] += 1;
            slot[2] += u32::from(j.as_vote() == Some(Vote::Valid));
        }
    }
    for (family, [caught, wrong, valid, correct]) in &per_family {
        println!(
            "  {family:14} wrong steps caught {caught}/{wrong}; correct steps judged Valid {valid}/{correct}"
        );
    }
    let precision = f64::from(tp) / f64::from((tp + fp).max(1));
    let recall = f64::from(tp) / f64::from((tp + fn_).max(1));
    println!(
        "labelled set: {} steps ({} wrong); error detection precision {:.3}, recall {:.3}; correct steps judged Valid {}/{}; abstained {}",
        cases.len(),
        wrong_total,
        precision,
        recall,
        valid_ok,
        cases.len() - wrong_total,
        abstain
    );
    assert!(
        passed_wrong.is_empty(),
        "wrong steps judged Valid: {passed_wrong:#?}"
    );
    assert_eq!(fp, 0, "correct steps flagged as errors");
    assert!(recall >= 0.95, "recall {recall}");
}
