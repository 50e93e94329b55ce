//! The ways people and models write correct steps that a literal checker misreads, each
//! pinned as a correct step that is not judged Invalid or Ungrounded, with the premises
//! and context a seat would get; and wrong versions of readable steps, which are.
//!
//! A seat's inputs: `premises` are the givens sealed with the segment (the problem
//! statement when the step rests on the GOAL) followed by the claims of the segments it
//! depends on; `context` is the givens joined, so it is empty when the step does not rest
//! on the problem.

use trust_judging::{
    computer::{Judgement, StepInput, check, readable},
    decompose::{Options, decompose, dependency_order},
    judge::{ComputerAuditor, SegmentView},
};
use trust_protocol::{
    Hash, Vote,
    hdag::{AuditorType, Hdag},
    trace::Trace,
};

fn judge(claim: &str, premises: &[&str], context: &str) -> Judgement {
    check(
        &StepInput {
            claim,
            premises,
            context,
        },
        &Hash::sha256(claim.as_bytes()),
    )
}

/// A step resting on the problem: the problem is the first premise and the context.
fn on_problem(claim: &str, problem: &str, steps: &[&str]) -> Judgement {
    let mut premises = vec![problem];
    premises.extend_from_slice(steps);
    judge(claim, &premises, problem)
}

#[track_caller]
fn not_failed(j: &Judgement, claim: &str) {
    assert!(
        !matches!(j.as_vote(), Some(Vote::Invalid | Vote::Ungrounded)),
        "a correct step was called wrong: {claim:?} → {j:?}"
    );
}

#[track_caller]
fn valid(claim: &str, premises: &[&str], context: &str) {
    let j = judge(claim, premises, context);
    assert_eq!(j.as_vote(), Some(Vote::Valid), "{claim:?} → {j:?}");
    assert!(
        readable(claim),
        "{claim:?} must be routed to the Computer tier"
    );
}

#[track_caller]
fn invalid(claim: &str, premises: &[&str], context: &str) {
    let j = judge(claim, premises, context);
    assert_eq!(j.as_vote(), Some(Vote::Invalid), "{claim:?} → {j:?}");
    assert!(
        readable(claim),
        "{claim:?} must be routed to the Computer tier"
    );
}

#[track_caller]
fn undecided(claim: &str, premises: &[&str], context: &str) {
    let j = judge(claim, premises, context);
    not_failed(&j, claim);
}

#[test]
fn units_and_words_between_numbers() {
    // Was `0 ≠ 14`: the chain was cut after `*`.
    valid("8 kg * 2 - 2 = 14 kg/donkey", &[], "");
    invalid("8 kg * 2 - 2 = 15 kg/donkey", &[], "");
    // Was `1/2 ≠ 35`.
    valid("70 questions * 0.5 = 35 points", &[], "");
    invalid("70 questions * 0.5 = 36 points", &[], "");
    valid("She earns $12/hour * 8 hours = $96 per day.", &[], "");
    invalid("She earns $12/hour * 8 hours = $86 per day.", &[], "");
    valid("3 pizzas * 8 slices/pizza = 24 slices", &[], "");
    // Single-letter units that no premise uses as an unknown.
    valid("60 s * 2 = 120 s", &[], "It runs for 2 minutes.");
    // Words joining two numbers are never a product.
    undecided("3 apples and 4 pears = 7 fruits", &[], "");
    undecided("1 hour = 60 minutes", &[], "");
}

#[test]
fn x_and_other_times_signs() {
    valid("3 x 4 = 12", &[], "");
    valid("5x2=10", &[], "");
    valid("The area is 6 × 7 = 42 square feet.", &[], "");
    valid("2 · 3 = 6", &[], "");
    invalid("3 x 4 = 13", &[], "");
    invalid("5x2=12", &[], "");
    // `3x` with x an unknown stays algebra.
    valid("Therefore, 3x = 12", &["3x + 2 = 14"], "");
    invalid("Therefore, 3x = 13", &["3x + 2 = 14"], "");
    // An unknown named x between numbers: both readings are tried.
    undecided("So 2 x 3 = 6x", &["Let x be the width"], "");
}

#[test]
fn division_sign_before_a_fraction() {
    valid("13÷1/2=26", &[], "");
    valid("13 ÷ 1/2 = 6.5", &[], "");
    invalid("13÷1/2=20", &[], "");
}

#[test]
fn percentages_separators_currency_and_latex() {
    valid("20% of 50 = 10", &[], "");
    invalid("25% of 80 = 25", &[], "");
    valid("1/3 = 33.3%", &[], "");
    valid("1,200 + 300 = 1,500", &[], "");
    invalid("1,200 + 300 = 1,400", &[], "");
    // `$` as money (was unreadable).
    valid("$50 − $42 = $8", &[], "");
    invalid("$50 − $42 = $9", &[], "");
    valid("He pays \\$5 + \\$3 = \\$8.", &[], "");
    // `$…$` as LaTeX.
    valid(r"$\frac{1}{2} \cdot 48 = 24$", &[], "");
    invalid(r"$\frac{1}{2} \cdot 48 = 25$", &[], "");
    valid(r"$3 \times 4 = 12$ eggs", &[], "");
    valid(r"$\left(3 + 4\right) \times 2 = 14$", &[], "");
    valid(r"$2^{3} = 8$", &[], "");
    valid(r"$1\,200 - 200 = 1000$", &[], "");
    invalid(r"$\left(3 + 4\right) \times 2 = 10$", &[], "");
    valid(r"\[ \dfrac{3}{4} \times 8 = 6 \]", &[], "");
    // `≈`: rounding is read, and a rough value is never called wrong.
    valid("10/3 ≈ 3.33", &[], "");
    valid("1234/7 ≈ 176", &[], "");
    undecided("1234/7 ≈ 180", &[], "");
    invalid("1234/7 ≈ 250", &[], "");
}

#[test]
fn markdown_bullets_step_prefixes_and_annotations() {
    valid("**48/2 = 24**", &[], "");
    valid("- 48/2 = 24", &[], "");
    valid("* 48/2 = 24", &[], "");
    valid("Step 1: 48/2 = 24", &[], "");
    valid("**Step 2:** 24 + 48 = 72", &[], "");
    valid("2. 24 + 48 = 72", &[], "");
    valid("*24 + 48 = 72*", &[], "");
    // A bullet is not a minus sign.
    invalid("- 48/2 = 25", &[], "");
    valid("Natalia sold 48/2 = <<48/2=24>>24 clips in May.", &[], "");
    invalid("Natalia sold 48/2 = <<48/2=25>>25 clips in May.", &[], "");
}

#[test]
fn number_words() {
    valid("half of 48 = 24", &[], "");
    invalid("half of 48 = 25", &[], "");
    valid("Twice 12 = 24", &[], "");
    valid("3 dozen = 3 * 12 = 36", &[], "");
    valid("A third of 27 = 9", &[], "");
    // A bare value after `of` lost its calculation: never read as `48 = 24`.
    undecided("She ate half of 48 = 24 cookies", &[], "");
    undecided("a total of 48 = 48", &[], "");
}

#[test]
fn grounding_reads_number_words_and_unit_constants() {
    let problem = "Ann has fifteen apples and gives 4 away. Tom has twice as many as Ann.";
    undecided("r + 4 = 15", &[problem], problem);
    assert_eq!(
        on_problem("r + 4 = 17", problem, &[]).as_vote(),
        Some(Vote::Ungrounded)
    );
    // A side that calculates may rest on arithmetic done in the head.
    undecided("r = 17 - 4", &[problem], problem);
    let j = on_problem("t = 2 * 11", problem, &["She keeps 15 - 4 = 11 apples."]);
    not_failed(&j, "t = 2 * 11");
    // Unit constants are never ungrounded.
    let work = "He works 3 hours a day.";
    not_failed(&on_problem("m = 3 * 60", work, &[]), "m = 3 * 60");
    not_failed(&on_problem("d = 52 * 7", work, &[]), "d = 52 * 7");
    // A judge that never saw the problem cannot tell a number is missing from it.
    undecided("r + 4 = 17", &[], "");
}

#[test]
fn latex_equations_restated_or_expanded() {
    let problem = "Solve for x: $3(x - 4) + 5 = 2x + 7$.";
    let claim = "$3x - 12 + 5 = 2x + 7$, which simplifies to $3x - 7 = 2x + 7$";
    let j = on_problem(claim, problem, &[]);
    assert_eq!(j.as_vote(), Some(Vote::Valid), "{j:?}");
    // Without the problem, only an expansion to go on: never Invalid.
    undecided(claim, &["Expanding, $3(x - 4) = 3x - 12$."], "");
    let restated = "We need to solve $3(x - 4) + 5 = 2x + 7$.";
    not_failed(&on_problem(restated, problem, &[]), restated);
    let wrong = "$3x - 12 + 5 = 2x + 7$, which simplifies to $3x - 17 = 2x + 7$";
    assert_eq!(
        on_problem(wrong, problem, &[]).as_vote(),
        Some(Vote::Invalid)
    );
    let solved = "Subtracting $2x$ and adding $7$: $x = 14$";
    assert_eq!(
        on_problem(solved, problem, &[claim]).as_vote(),
        Some(Vote::Valid)
    );
    let wrong_root = "Subtracting $2x$ and adding $7$: $x = 12$";
    assert_eq!(
        on_problem(wrong_root, problem, &[claim]).as_vote(),
        Some(Vote::Invalid)
    );
}

#[test]
fn sentences_with_several_clauses() {
    valid(
        "She has 48 - 12 = 36 apples left, and gives half of them away: 36 / 2 = 18.",
        &[],
        "",
    );
    invalid(
        "She has 48 - 12 = 36 apples left, and gives half of them away: 36 / 2 = 16.",
        &[],
        "",
    );
    valid("So 5 + 3 = 8; then 8 * 2 = 16 and 16 - 1 = 15", &[], "");
    invalid("So 5 + 3 = 8; then 8 * 2 = 16 and 16 - 1 = 14", &[], "");
    // A mixed number is not a product.
    valid("2 1/2 + 1 = 3 1/2", &[], "");
    // A clause it cannot read keeps the step from being Valid, never makes it Invalid.
    undecided("The total of 3 and 4 = 7, which is less than 10", &[], "");
    undecided("5 more than 3 = 8", &[], "");
    undecided("20 less 5 = 15", &[], "");
}

#[test]
fn clear_arithmetic_is_judged_and_corruptions_are_caught() {
    valid("48/2 = 24", &[], "");
    valid("She has 48 - 12 = 36 apples left.", &[], "");
    valid("In total: 3 * 12 + 4 = 40 eggs", &[], "");
    // A wrong result.
    invalid("She has 48 - 12 = 34 apples left.", &[], "");
    // A wrong operator, result kept.
    invalid("She has 48 + 12 = 36 apples left.", &[], "");
    // A dropped term.
    invalid("In total: 3 * 12 = 40 eggs", &[], "");
    invalid("In total: 3 * 12 + 4 - 2 = 40 eggs", &[], "");
}

const RULES: &str = "Rules: A → B; B → C; D → E. Fact: I have A.";

#[test]
fn rule_applications_in_prose() {
    let given = |claim: &str, steps: &[&str]| on_problem(claim, RULES, steps).as_vote();
    assert_eq!(
        given("I use rule (A → B) to derive B.", &[]),
        Some(Vote::Valid)
    );
    assert_eq!(
        given("I use rule (A -> B) to derive B.", &[]),
        Some(Vote::Valid)
    );
    assert_eq!(
        given(
            "Using rule B → C, I derive C.",
            &["I use rule (A → B) to derive B."]
        ),
        Some(Vote::Valid)
    );
    // A wrong application.
    assert_eq!(
        given("I use rule (A → B) to derive C.", &[]),
        Some(Vote::Invalid)
    );
    // An unstated rule, and an antecedent never established.
    assert_eq!(
        given(
            "I use rule (B → D) to derive D.",
            &["I use rule (A → B) to derive B."]
        ),
        Some(Vote::Ungrounded)
    );
    assert_eq!(
        given("I use rule (D → E) to derive E.", &[]),
        Some(Vote::Ungrounded)
    );
    // Not shown the problem: a missing rule cannot be told from an unseen one.
    let blind = judge("I use rule (B → D) to derive D.", &[], "");
    not_failed(&blind, "blind rule step");
    for claim in [
        "I use rule (A → B) to derive B.",
        "Using rule B → C, I derive C.",
    ] {
        assert!(readable(claim), "{claim}");
    }
}

/// Judges every Computer-routed segment as a seat would: dependencies are followed
/// through the segments of other tiers (left out, their text travels as givens) to the
/// nearest Computer segments; the premises are the givens, then the claims of those
/// segments in trace order; the context is the givens joined. Returns (content, vote).
fn seat_run(hdag: &Hdag) -> Vec<(String, Option<Vote>)> {
    let index = |id: &str| hdag.nodes.iter().position(|n| n.id == id);
    let mut out = Vec::new();
    for i in dependency_order(hdag) {
        let Some(n) = hdag.nodes.get(i) else { continue };
        if n.primary_auditor != AuditorType::Auto {
            continue;
        }
        let mut givens = Vec::new();
        let mut cited = Vec::new();
        let mut seen = Vec::new();
        let mut stack: Vec<&str> = hdag.dependencies_of(&n.id).collect();
        while let Some(d) = stack.pop() {
            if seen.contains(&d) {
                continue;
            }
            seen.push(d);
            let Some(j) = index(d) else { continue };
            let Some(dn) = hdag.nodes.get(j) else {
                continue;
            };
            if dn.primary_auditor == AuditorType::Auto {
                cited.push(j);
            } else {
                givens.push(dn.content.clone());
                stack.extend(hdag.dependencies_of(d));
            }
        }
        cited.sort_unstable();
        // Judged by the seat's own judge: the cited claims as premises, the text of the
        // other tiers' steps (and the problem statement) as givens, the final answer as
        // the conclusion it is.
        let view = SegmentView {
            claim: n.content.clone(),
            premises: cited
                .iter()
                .filter_map(|&j| hdag.nodes.get(j))
                .map(|m| m.content.clone())
                .collect(),
            givens,
            conclusion: n.kind == "conclusion",
            ..SegmentView::default()
        };
        let j = ComputerAuditor.judge_now(&view, &Hash::sha256(n.id.as_bytes()));
        out.push((n.content.clone(), Some(j.vote).filter(|v| !v.is_abstain())));
    }
    out
}

#[test]
fn a_claimtrees_trace_goes_to_the_computer_tier_and_is_checked_there() {
    let text = "## Problem Statement\nRules: A → B; B → C; C → D. Fact: I have A. Can I derive D?\n\n## Thinking Process\nI use rule (A → B) to derive B.\nI use rule (B -> C) to derive C.\nI use rule (C → D) to derive D.\n\n## Final Output\nYes, I can derive D.";
    let t = Trace::parse(text).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let verdicts = seat_run(&h);
    assert_eq!(verdicts.len(), 3, "{verdicts:?}");
    assert!(
        verdicts.iter().all(|(_, v)| *v == Some(Vote::Valid)),
        "{verdicts:?}"
    );
    let wrong = text.replace(
        "I use rule (B -> C) to derive C.",
        "I use rule (B -> C) to derive D.",
    );
    let t = Trace::parse(&wrong).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let verdicts = seat_run(&h);
    assert!(
        verdicts.iter().any(|(c, v)| c.contains("derive D.")
            && c.contains("(B -> C)")
            && *v == Some(Vote::Invalid)),
        "{verdicts:?}"
    );
    let missing = text.replace(
        "I use rule (C → D) to derive D.",
        "I use rule (C → E) to derive E.",
    );
    let t = Trace::parse(&missing).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let verdicts = seat_run(&h);
    assert!(
        verdicts
            .iter()
            .any(|(c, v)| c.contains("(C → E)") && *v == Some(Vote::Ungrounded)),
        "{verdicts:?}"
    );
}

#[test]
fn a_gsm8k_style_trace_is_checked_as_a_seat_would() {
    let text = "## Problem Statement\nNatalia sold clips to 48 of her friends in April, and then she sold half as many clips in May. How many clips did Natalia sell altogether in April and May?\n\n## Thinking Process\nNatalia sold 48/2 = <<48/2=24>>24 clips in May.\nNatalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n\n## Final Output\n72";
    let t = Trace::parse(text).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let verdicts = seat_run(&h);
    assert!(
        verdicts
            .iter()
            .filter(|(_, v)| *v == Some(Vote::Valid))
            .count()
            >= 2,
        "{verdicts:?}"
    );
    let wrong = text.replace("48+24 = <<48+24=72>>72", "48+24 = <<48+24=82>>82");
    let t = Trace::parse(&wrong).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let verdicts = seat_run(&h);
    assert!(
        verdicts.iter().any(|(_, v)| *v == Some(Vote::Invalid)),
        "{verdicts:?}"
    );
}

#[test]
fn x_between_a_unit_and_a_number_is_a_times_sign() {
    // Earlier steps wrote `x` as a times sign too: that does not make it an unknown.
    let earlier = "She gets 80 questions x 0.5 = <<80*0.5=40>>40 points.";
    valid(
        "She is sure of her 20 questions x 25÷100 = <<20*25/100=5>>5 points.",
        &[earlier],
        "",
    );
    valid(
        "The total is 35 patients/day x 7 days/week = 245 patients.",
        &[earlier],
        "",
    );
    invalid(
        "The total is 35 patients/day x 7 days/week = 255 patients.",
        &[earlier],
        "",
    );
}

#[test]
fn carried_errors_are_propagated_not_invalid() {
    // The premises computed 239 wrongly; restating their results is not a new error.
    let premises = [r"$\frac{18486}{78} = 239$", r"$\frac{20280}{78} = 260$"];
    undecided(
        r"Therefore $\frac{18486}{20280} = \frac{239}{260}$.",
        &premises,
        "",
    );
    // A new result that is wrong is still caught.
    invalid(
        r"Therefore $\frac{18486}{20280} = \frac{241}{260}$.",
        &premises,
        "",
    );
    // An equation carried from a wrong premise step holds there: propagated, not Invalid.
    let problem = "Find the value of h in the equation: 1615*h - 85 = 80665";
    let wrong_step = "Add 85 to both sides: $1615h = 80665 + 85 = 83980$";
    let j = on_problem(
        r"Dividing both sides by 1615 gives $h = \frac{83980}{1615} = 52$.",
        problem,
        &[wrong_step],
    );
    assert_eq!(j.as_vote(), Some(Vote::Valid), "{j:?}");
    // Against every premise equation it fails: Invalid.
    let j = on_problem(
        r"Dividing both sides by 1615 gives $h = \frac{83980}{1615} = 53$.",
        problem,
        &[wrong_step],
    );
    assert_eq!(j.as_vote(), Some(Vote::Invalid), "{j:?}");
}

#[test]
fn a_step_rests_on_each_step_whose_numbers_it_uses() {
    let text = "## Problem Statement\nSimplify 18486/20280.\n\n## Thinking Process\n1. The GCD of 18486 and 20280 is 78.\n2. $\\frac{18486}{78} = 237$\n3. $\\frac{20280}{78} = 260$\n4. Therefore $\\frac{18486}{20280} = \\frac{237}{260}$.\n\n## Final Output\n237/260";
    let t = Trace::parse(text).expect("trace");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let last = h
        .nodes
        .iter()
        .find(|n| n.content.starts_with("Therefore"))
        .expect("step 3");
    let deps: Vec<&str> = h.dependencies_of(&last.id).collect();
    assert!(deps.len() >= 3, "{deps:?}");
    assert!(
        seat_run(&h).iter().all(|(_, v)| *v == Some(Vote::Valid)),
        "{:?}",
        seat_run(&h)
    );
}

#[test]
fn rule_applications_written_with_gives() {
    let problem = "Rules:\n- if something is a whales, it is a adults (whales → adults)\n- if something is a insects, it is a whales (insects → whales)\nFact: Rex is a insects.";
    let first = "Since insects holds, rule insects → whales gives whales.";
    assert_eq!(on_problem(first, problem, &[]).as_vote(), Some(Vote::Valid));
    assert_eq!(
        on_problem(
            "Since whales holds, rule whales → adults gives adults.",
            problem,
            &[first]
        )
        .as_vote(),
        Some(Vote::Valid)
    );
    assert_eq!(
        on_problem(
            "Since whales holds, rule whales → adults gives lions.",
            problem,
            &[first]
        )
        .as_vote(),
        Some(Vote::Invalid)
    );
    // A single-letter atom named F is an atom, not the truth value false.
    let rules = "Rules: E -> F; F -> G. Fact: I have E.";
    assert_eq!(
        on_problem("Since E holds, rule E -> F gives F.", rules, &[]).as_vote(),
        Some(Vote::Valid)
    );
    assert!(readable("Since E holds, rule E -> F gives F."));
}

#[test]
fn truth_table_evaluations() {
    let problem = "Premises:\n1. (P ↔ Q)\n2. ¬(P → S)\nAssignment: P = false, Q = true, S = false";
    let v = |claim: &str, steps: &[&str]| on_problem(claim, problem, steps).as_vote();
    assert_eq!(
        v("Since P is false, Q is true, (P ↔ Q) is false.", &[]),
        Some(Vote::Valid)
    );
    assert_eq!(
        v("Since P is false, P is false, (P → P) is false.", &[]),
        Some(Vote::Invalid)
    );
    assert_eq!(v("**(P ∨ Q)** = true", &[]), Some(Vote::Valid));
    assert_eq!(v("**(P ∧ Q)** = true", &[]), Some(Vote::Invalid));
    assert_eq!(
        v("(P → S): the implication of F and F gives T.", &[]),
        Some(Vote::Valid)
    );
    assert_eq!(
        v(
            "(Q ↔ Q): the biconditional of True and True gives False.",
            &[]
        ),
        Some(Vote::Invalid)
    );
    // A value carried from a wrong step is propagated, not wrong here.
    let carried = on_problem(
        "Since (P → P) is false, (P ∧ P) is false, ((P → P) ∨ (P ∧ P)) is false.",
        problem,
        &["Since P is false, P is false, (P → P) is false."],
    );
    not_failed(&carried, "carried truth value");
    // Blind (no assignment, no stated values): abstain.
    undecided("**(P ∨ Q)** = true", &[], "");
    assert!(readable("**(P ∨ Q)** = true"));
    assert!(readable(
        "(Q ↔ Q): the biconditional of True and True gives False."
    ));
}

#[test]
fn arithmetic_inside_an_equation_is_checked_on_its_own() {
    let problem = "Find the value of h in the equation: 1615*h - 85 = 80665";
    let v = |claim: &str| on_problem(claim, problem, &[]).as_vote();
    assert_eq!(
        v("Add 85 to both sides: $1615h = 80665 + 85 = 80750$"),
        Some(Vote::Valid)
    );
    // A wrong result, and a wrong operator with its result.
    assert_eq!(
        v("Add 85 to both sides: $1615h = 80665 + 85 = 83980$"),
        Some(Vote::Invalid)
    );
    assert_eq!(
        v("Add 85 to both sides: $1615h = 80665 - 85 = 80580$"),
        Some(Vote::Invalid)
    );
    // Blind to the problem, the arithmetic is still decided.
    invalid(
        "Add 85 to both sides: $1615h = 80665 + 85 = 83980$",
        &[],
        "",
    );
    // A bare result restated from a premise is still computed here: `72 - 1 = 72` is wrong.
    invalid("Divide by 1: 72 - 1 = 72", &["So 8 * 9 = 72"], "");
}

#[test]
fn claims_that_an_atom_is_derived() {
    let problem = "Rules: A → B; B → C. Fact: I have A. Question: can I derive D?";
    let step = "Since B holds, rule B → C gives C.";
    assert_eq!(
        on_problem("C is now derived.", problem, &[step]).as_vote(),
        Some(Vote::Valid)
    );
    assert_eq!(
        on_problem("D is now derived.", problem, &[step]).as_vote(),
        Some(Vote::Ungrounded)
    );
    undecided("D is now derived.", &[step], "");
    assert!(readable("humans is now derived."));
}

#[test]
fn plans_are_not_definitions_and_glued_times_signs_are_read() {
    assert!(!readable("Let me work through this step by step."));
    assert!(!readable("Let's think about the quantities involved."));
    assert!(readable("Let x be the width"));
    valid(
        "Joseph dropped his coins and was left with 66x0.5=<<66*0.5=33>>33 coins.",
        &[],
        "",
    );
    valid("blue tennis balls:16x0.25=<<16*0.25=4>>4 balls", &[], "");
    invalid("blue tennis balls:16x0.25=<<16*0.25=5>>5 balls", &[], "");
}

/// Correct steps in everyday notations: none may be called wrong, with or without the
/// problem (`Solve f(x) = 2x + 1 at x = 2; 100 items; 20% off; 60 km/h.`).
#[test]
fn everyday_notations_are_never_called_wrong() {
    let problem =
        "f(x) = 2x + 1. A shop sells 100 items at $80 with 20% off; a car drives at 60 km/h.";
    let correct = [
        "f(2) = 2*2 + 1 = 5",
        "gcd(790, 1290) = 10",
        "lcm(4, 6) = 12",
        "sqrt(16) = 4",
        "x² + 2x = 3",
        "5 + 3 = 8 (apples)",
        "100 - 20% = 80",
        "$80 - 20% = $64",
        "80 + 25% = 100",
        "120 km / 60 km/h = 2 h",
        "7 days × 24 hours = 168 hours",
        "1 kg = 1000 g",
        "3 feet = 36 inches",
        "1:30 + 0:45 = 2:15",
        "2,5 + 1,5 = 4",
        "5 choose 2 = 10",
        "C(5,2) = 10",
        "2:3 = 4:6",
        "5! = 120",
        "x = 5 or x = -5",
        "the change is -5 + 3 = -2",
        "Area = length × width = 5 × 4 = 20",
        "It costs $1.20 each, 5 × $1.20 = $6.00",
        "3 × 10^8 = 300,000,000",
        "15% of $80 = $12",
        "3/7 of 28 = 12",
        "1/4 + 1/4 = 1/2",
        "10/3 ≈ 3.33",
        "1/3 ≈ 0.333",
        "The speed is 60 km/h, so in 2 h it goes 60 × 2 = 120 km",
        "2023 - 2000 = 23 years",
        "She pays 3 × $4 = $12",
        "4.5 hours × 60 = 270 minutes",
    ];
    for claim in correct {
        not_failed(&on_problem(claim, problem, &[]), claim);
        not_failed(&judge(claim, &[], ""), claim);
    }
    // The same notations, wrong, are still caught where the reading is unambiguous.
    invalid("5 + 3 = 9 (apples)", &[], "");
    invalid("$80 - 20% = $60", &[], "");
    invalid("f(2) = 2*2 + 1 = 6", &[], "");
}

#[test]
fn rounded_operands_and_values_after_words() {
    // 3.33 is 10/3 rounded earlier: not called wrong.
    undecided("3 × $3.33 = $10", &[], "");
    undecided("Each gets 2/3 ≈ 0.67, and 3 × 0.67 = 2", &[], "");
    // A decimal that rounds no small fraction is taken as written.
    invalid("3 × 3.25 = 10", &[], "");
    invalid("1200 × 0.99 = 1190", &[], "");
    // A bare value right after words may belong to them.
    undecided("an increase of 20% = 1.2 × 50 = 60", &[], "");
    invalid("an increase of 20% = 1.2 × 50 = 65", &[], "");
    valid("the change is -5 + 3 = -2", &[], "");
}

#[test]
fn joining_words_and_earlier_clauses() {
    // `less than` joins the numbers: dropping it as a unit would read `3 * 4 = 7`.
    undecided("5 less than 3 times 4 = 7", &[], "");
    undecided("Multiply 3 by 4 = 12", &[], "");
    valid("Half of the 24 students = 12 students", &[], "");
    valid("He earns $5 per hour * 8 hours = $40", &[], "");
    // An earlier clause of the same step is a premise of the later ones.
    let problem = "Twice a number plus 3 is 11; it is also 5 more than another.";
    let j = on_problem("x = 4, so 2x + 3 = 11", problem, &[]);
    not_failed(&j, "x = 4, so 2x + 3 = 11");
    let j = on_problem("x = 2, so 3x + 1 = 7", problem, &[]);
    not_failed(&j, "x = 2, so 3x + 1 = 7");
    assert_eq!(
        on_problem("x = 2, so 3x + 1 = 8", problem, &[]).as_vote(),
        Some(Vote::Invalid)
    );
}

#[test]
fn comparisons_after_a_result_are_not_calculations() {
    valid(
        "The loaves cost £54 − £30 = £24 more than the bagels.",
        &[],
        "",
    );
    invalid(
        "The loaves cost £54 − £30 = £25 more than the bagels.",
        &[],
        "",
    );
    invalid(
        "The loaves cost £54 + £30 = £24 more than the bagels.",
        &[],
        "",
    );
    // `more than 3` continues the calculation: cut, not read.
    undecided("2 + 3 = 5 more than 3", &[], "");
}

#[test]
fn rules_and_facts_written_in_words() {
    // The rule in words, the fact without a `Fact:` label.
    let problem = "If something is a whale, it is a mammal. Rex is a whale. Is Rex a mammal?";
    assert_eq!(
        on_problem(
            "Since whale holds, rule whale → mammal gives mammal.",
            problem,
            &[]
        )
        .as_vote(),
        Some(Vote::Valid)
    );
    // A problem whose rules the checker cannot read: never Ungrounded.
    let prose = "Whales are mammals and mammals breathe air. Rex is a whale.";
    let j = on_problem(
        "Since mammal holds, rule mammal → air gives air.",
        prose,
        &[],
    );
    not_failed(&j, "rule from prose rules");
    // A question names an atom without establishing it.
    let rules = "Rules: A → B; C → D. Fact: I have A. Question: can I derive D from C?";
    assert_eq!(
        on_problem("I use rule (C → D) to derive D.", rules, &[]).as_vote(),
        Some(Vote::Ungrounded)
    );
}

#[test]
fn systems_and_superscripts() {
    let problem = "The sum of two numbers is 10 and their difference is 2.";
    let steps = ["x + y = 10", "x - y = 2"];
    let j = on_problem("Adding the equations, 2x = 12", problem, &steps);
    not_failed(&j, "2x = 12 from a system");
    valid("3.14 × 5² = 78.5", &[], "");
    invalid("3.14 × 5² = 31.4", &[], "");
    let quad = "Solve x² + 2x − 3 = 0.";
    let j = on_problem("So x² + 2x = 3", quad, &[]);
    assert_eq!(j.as_vote(), Some(Vote::Valid), "{j:?}");
}

#[test]
fn a_calculation_on_a_number_from_nowhere_is_not_valid() {
    let problem = "Simplify the fraction 790/1290. By Euclid, gcd(790, 1290) = 10.";
    // 1290/43 holds, but 43 comes from nowhere: not Valid (nor called Ungrounded).
    let j = on_problem("$\\frac{1290}{43} = 30$", problem, &[]);
    assert_eq!(j.as_vote(), None, "{j:?}");
    assert_eq!(
        on_problem("$\\frac{790}{10} = 79$", problem, &[]).as_vote(),
        Some(Vote::Valid)
    );
    // Small quotients found along the way and shares of a hundred need no source.
    assert_eq!(
        on_problem("$1290 - 1 \\times 790 = 500$", problem, &[]).as_vote(),
        Some(Vote::Valid)
    );
    let pct = "Michael spent 1200 and had 1% of his money left.";
    assert_eq!(
        on_problem("1200 × 0.99 = 1188", pct, &[]).as_vote(),
        Some(Vote::Valid)
    );
    // Not shown the problem, the judge cannot tell: the arithmetic decides.
    valid("$\\frac{1290}{43} = 30$", &[], "");
    // Numbers that have nothing to do with the problem: the step may hold, but nothing
    // the judge was shown gives them (`20 × 30 = 600` where the family eats 5 + 3 + 7 a
    // day), so it is not called Valid either.
    assert_eq!(
        on_problem("So 1.2 × 0.8 = 0.96", problem, &[]).as_vote(),
        None
    );
    let family = "A father eats 5 hamburgers per day, his wife 3 and their grandchild 7. How many do they eat in one month?";
    assert_eq!(
        on_problem("They eat 20 × 30 = 600 hamburgers.", family, &[]).as_vote(),
        None
    );
    assert_eq!(
        on_problem(
            "They eat 15 × 30 = 450 hamburgers.",
            family,
            &["5 + 3 + 7 = 15"]
        )
        .as_vote(),
        Some(Vote::Valid)
    );
    // 1 ± a percentage the problem gives is a number it gives.
    let tunnel = "The new equipment raised speed by 20% and cut working hours to 80%.";
    assert_eq!(
        on_problem("So 1.2 × 0.8 = 0.96", tunnel, &[]).as_vote(),
        Some(Vote::Valid)
    );
}

#[test]
fn a_truth_step_may_not_misstate_what_it_rests_on() {
    let problem = "Premises:\n1. (P ∨ Q)\nAssignment: P = false, Q = false";
    assert_eq!(
        on_problem(
            "Since P is true, Q is false, (P ∨ Q) is true.",
            problem,
            &[]
        )
        .as_vote(),
        Some(Vote::Invalid)
    );
    assert_eq!(
        on_problem(
            "Since P is false, Q is false, (P ∨ Q) is false.",
            problem,
            &[]
        )
        .as_vote(),
        Some(Vote::Valid)
    );
}

#[test]
fn item_labels_and_counts_in_units() {
    let problem = "A baker makes 48 muffins and sells 3/4 of them for $90, spending $20.";
    for claim in [
        "(a) 90 − 20 = 70",
        "b) 90 − 20 = 70",
        "Step 3) 90 - 20 = 70",
    ] {
        assert_eq!(
            on_problem(claim, problem, &[]).as_vote(),
            Some(Vote::Valid),
            "{claim}"
        );
    }
    // `4 dozen` counts dozens; `3 dozen` may be 36: both readings are tried.
    valid("48 muffins ÷ 12 = 4 dozen", &[], "");
    valid("4 dozen = 48 muffins", &[], "");
    invalid("48 muffins ÷ 12 = 5 dozen", &[], "");
}

#[test]
fn units_in_the_problem_and_names_after_words() {
    let problem = "A rectangle is 5 m by 4 m; a car covers 150 km in 2.5 h.";
    for claim in [
        "d² = 25 + 16 = 41",
        "n(n+1)/2 = 5·6/2 = 15 for n = 5",
        "v = 150 km ÷ 2.5 h = 60 km/h",
        "Speed = distance/time = 150 km / 2.5 h = 60 km/h",
    ] {
        not_failed(&on_problem(claim, problem, &[]), claim);
        not_failed(&judge(claim, &[], ""), claim);
    }
    assert_eq!(
        on_problem("v = 150 km ÷ 2.5 h = 60 km/h", problem, &[]).as_vote(),
        Some(Vote::Valid)
    );
    assert_eq!(
        on_problem("v = 150 km ÷ 2.5 h = 50 km/h", problem, &[]).as_vote(),
        Some(Vote::Invalid)
    );
}

#[test]
fn euclid_quotients_need_no_source() {
    let problem = "Simplify the fraction 20474/21286.";
    let steps = ["21286 − 1 × 20474 = 812"];
    assert_eq!(
        on_problem("20474 − 25 × 812 = 174", problem, &steps).as_vote(),
        Some(Vote::Valid)
    );
    assert_eq!(
        on_problem("20474 − 25 × 812 = 184", problem, &steps).as_vote(),
        Some(Vote::Invalid)
    );
}
