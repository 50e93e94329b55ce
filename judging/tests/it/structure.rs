//! A provider's plan must not make a wrong proof pass: the structure check refuses plans
//! whose citations reach into closed blocks or dress a hypothesis as a premise, and a seat
//! refuses a step whose plan misstates what it concludes or hides what it cites.

use trust_judging::proof::{
    Citation, CiteRole, Claim, ErrorKind, Source, StepVerdict, StructureError, Verdict, check_plan,
    check_step, check_structure, parse_formula, steps,
};

const PROBLEM: &str =
    "assert premise-1 := (A ==> B)\nassert premise-2 := (B ==> C)\nDerive: (A ==> C)\n";

/// A wrong proof: C is used after the block that derived it has closed.
const OUT_OF_SCOPE: &str = "{\n  assume A {\n    B BY mp on premise-1, A;\n    C BY mp on premise-2, B\n  };\n  C BY claim on C;\n  assume A {\n    claim on C\n  }\n}";

#[test]
fn honest_plan_of_a_wrong_proof_fails_at_the_out_of_scope_step() {
    let plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    check_structure(&plan).unwrap();
    let Verdict::Fail(f) = check_plan(&plan) else {
        panic!("passed")
    };
    assert_eq!((f.kind, f.line), (ErrorKind::Logic, 6));
}

#[test]
fn citing_a_result_inside_a_closed_block_is_refused() {
    let mut plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    // step 4 is `C BY claim on C`; step 2 derived C inside the closed block
    let (inner, claim_step) = (2, 4);
    assert_eq!(
        plan.steps[inner].claim,
        Some(Claim::Formula(parse_formula("C").unwrap()))
    );
    plan.steps[claim_step].cites.push(Citation {
        source: Source::Step(inner),
        name: None,
        claim: Claim::Formula(parse_formula("C").unwrap()),
        asserted: true,
        role: CiteRole::Holding,
    });
    // the seat alone would now accept the step ...
    let doc = plan.step_doc(claim_step).unwrap();
    assert_eq!(check_step(&doc), StepVerdict::Valid);
    // ... but the structure check refuses the plan
    assert_eq!(
        check_structure(&plan),
        Err(StructureError::NotVisible { step: claim_step })
    );
}

#[test]
fn a_hypothesis_presented_as_a_premise_is_refused() {
    let mut plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    let claim_step = 4;
    plan.steps[claim_step].cites.push(Citation {
        source: Source::Premise(0),
        name: None,
        claim: Claim::Formula(parse_formula("C").unwrap()),
        asserted: true,
        role: CiteRole::Holding,
    });
    assert_eq!(
        check_structure(&plan),
        Err(StructureError::ClaimMismatch { step: claim_step })
    );
    // an active-hypothesis list that names a hypothesis no block opens is refused too
    let mut plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    plan.steps[claim_step].active_hypotheses.push(0);
    assert_eq!(
        check_structure(&plan),
        Err(StructureError::ActiveHypotheses(claim_step))
    );
}

#[test]
fn a_premise_added_to_the_plan_is_refused() {
    let mut plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    plan.problem.premises.push(trust_judging::proof::Premise {
        name: "premise-3".into(),
        formula: parse_formula("C").unwrap(),
    });
    assert_eq!(check_structure(&plan), Err(StructureError::Problem));
}

#[test]
fn a_misstated_claim_or_a_hidden_citation_makes_the_step_invalid() {
    let good = "{\n  assume A {\n    B BY mp on premise-1, A;\n    C BY mp on premise-2, B\n  }\n}";
    let plan = steps(PROBLEM, good).unwrap().unwrap();
    check_structure(&plan).unwrap();
    assert_eq!(check_plan(&plan), Verdict::Pass);
    // step 2 is `C BY mp on premise-2, B`; claim D instead
    let mut doc = plan.step_doc(2).unwrap();
    doc.claim = Some(Claim::Formula(parse_formula("D").unwrap()));
    assert!(matches!(
        check_step(&doc),
        StepVerdict::Invalid {
            kind: ErrorKind::Logic,
            ..
        }
    ));
    // drop its citation of B: B no longer holds for the seat
    let mut doc = plan.step_doc(2).unwrap();
    doc.cites.retain(|c| c.source != Source::Step(1));
    assert!(matches!(
        check_step(&doc),
        StepVerdict::Invalid {
            kind: ErrorKind::Logic,
            ..
        }
    ));
}

#[test]
fn a_plan_whose_conclusion_leaves_a_hypothesis_open_is_refused() {
    let good = "{\n  assume A {\n    B BY mp on premise-1, A;\n    C BY mp on premise-2, B\n  }\n}";
    let mut plan = steps(PROBLEM, good).unwrap().unwrap();
    // drop the closing step and call the body's last step the conclusion
    plan.steps.pop();
    plan.conclusion = Some(2);
    assert_eq!(check_structure(&plan), Err(StructureError::OpenHypothesis));
}

#[test]
fn plans_name_spans_citations_and_scopes() {
    let text = "Proof:\n{\n  assume h := A {\n    B BY mp on premise-1, h;\n    C BY mp on premise-2, B\n  }\n}";
    let plan = steps(PROBLEM, text).unwrap().unwrap();
    assert_eq!(plan.steps.len(), 4);
    for s in &plan.steps {
        assert_eq!(&text[s.span.clone()], s.text, "spans are verbatim");
    }
    let mp = &plan.steps[1];
    assert_eq!(mp.text, "B BY mp on premise-1, h");
    assert_eq!(mp.active_hypotheses, vec![0]);
    assert_eq!(mp.scope_path.len(), 2);
    assert!(mp.cites.iter().any(|c| c.source == Source::Premise(0)));
    assert!(
        mp.cites
            .iter()
            .any(|c| c.source == Source::Hypothesis(0) && c.name.as_deref() == Some("h"))
    );
    let close = &plan.steps[3];
    assert!(
        close
            .cites
            .iter()
            .any(|c| c.role == CiteRole::BodyConclusion && c.source == Source::Step(2))
    );
    assert_eq!(
        close.claim,
        Some(Claim::Formula(parse_formula("(A ==> C)").unwrap()))
    );
    assert_eq!(close.line, 2);
    let json = serde_json::to_string(&plan).unwrap();
    let back: trust_judging::proof::ProofPlan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
}

/// A proof whose `cases` is given its two conditionals as inline deductions, followed by a
/// step that (wrongly) uses the first one's conclusion after the `cases`.
const INLINE: &str = "{\n  cases on premise-1, assume A { right-either on B, A }, assume B { left-either on B, A };\n  (A ==> (B | A)) BY claim on (A ==> (B | A))\n}";
const INLINE_PROBLEM: &str = "assert premise-1 := (A | B)\nDerive: (B | A)\n";

fn argument_cites(plan: &trust_judging::proof::ProofPlan, t: usize) -> Vec<Source> {
    plan.steps[t]
        .cites
        .iter()
        .filter(|c| c.role == CiteRole::Argument)
        .map(|c| c.source)
        .collect()
}

#[test]
fn deductions_given_as_arguments_are_cut_into_argument_blocks() {
    let plan = steps(INLINE_PROBLEM, INLINE).unwrap().unwrap();
    check_structure(&plan).unwrap();
    // open A, right-either, close; open B, left-either, close; cases; claim
    assert_eq!(plan.steps.len(), 8);
    let cases = 6;
    assert_eq!(
        plan.steps[cases].text.split_whitespace().next(),
        Some("cases")
    );
    assert_eq!(
        argument_cites(&plan, cases),
        vec![Source::Step(2), Source::Step(5)]
    );
    assert_eq!(plan.blocks.iter().filter(|b| b.argument).count(), 2);
    // the wrong use after the cases is found on the seats' path as by the whole checker
    let Verdict::Fail(f) = check_plan(&plan) else {
        panic!("passed")
    };
    assert_eq!((f.kind, f.line, f.step), (ErrorKind::Logic, 3, Some(7)));
}

#[test]
fn an_argument_deduction_reaches_only_its_own_rule_application() {
    let mut plan = steps(INLINE_PROBLEM, INLINE).unwrap().unwrap();
    // the last step cites the first inline deduction's conclusion as if it still held
    let (inner, last) = (2, 7);
    let claim = plan.steps[inner].claim.clone().unwrap();
    plan.steps[last].cites.push(Citation {
        source: Source::Step(inner),
        name: None,
        claim,
        asserted: true,
        role: CiteRole::Holding,
    });
    // the seat alone would now accept the step ...
    assert_eq!(
        check_step(&plan.step_doc(last).unwrap()),
        StepVerdict::Valid
    );
    // ... but the structure check refuses the plan
    assert_eq!(
        check_structure(&plan),
        Err(StructureError::NotVisible { step: last })
    );
}

#[test]
fn argument_citations_must_be_the_arguments_in_order() {
    let cases = 6;
    // swapped
    let mut plan = steps(INLINE_PROBLEM, INLINE).unwrap().unwrap();
    plan.steps[cases].cites.reverse();
    assert_eq!(check_structure(&plan), Err(StructureError::Block(cases)));
    // one left out: the structure check refuses it, and the seat abstains
    let mut plan = steps(INLINE_PROBLEM, INLINE).unwrap().unwrap();
    let dropped = plan.steps[cases]
        .cites
        .iter()
        .position(|c| c.role == CiteRole::Argument)
        .unwrap();
    plan.steps[cases].cites.remove(dropped);
    assert_eq!(check_structure(&plan), Err(StructureError::Block(cases)));
    assert!(matches!(
        check_step(&plan.step_doc(cases).unwrap()),
        StepVerdict::Abstain { .. }
    ));
}

#[test]
fn plans_without_argument_blocks_serialize_without_the_field() {
    let plan = steps(PROBLEM, OUT_OF_SCOPE).unwrap().unwrap();
    let json = serde_json::to_string(&plan).unwrap();
    assert!(!json.contains("argument"), "{json}");
    let plan = steps(INLINE_PROBLEM, INLINE).unwrap().unwrap();
    let json = serde_json::to_string(&plan).unwrap();
    assert!(json.contains("\"argument\":true"), "{json}");
    let back: trust_judging::proof::ProofPlan = serde_json::from_str(&json).unwrap();
    assert_eq!(back, plan);
}
