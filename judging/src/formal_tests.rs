//! The Computer tier on formal proofs through the path seats take (sealed documents,
//! one view per segment, the contract's tally), against the whole-proof checker; and
//! the ways a provider could cut a wrong proof so that each piece looks right.

use std::sync::Arc;

use crate::proof::{Citation, CiteRole, Claim, ProofPlan, Source, StepDoc, Verdict, check_proof};
use trust_contracts::TraceVerdict;
use trust_protocol::{
    Hash, Vote,
    hdag::{HdagEdge, Relationship},
    trace::Trace,
    tx::Tier,
};

use super::{
    computer::formal::{FormalView, ProofDoc, judge},
    judge::ComputerAuditor,
    preview::{manifest_views, preview, preview_restricted},
    session::prepare::{self, Restricted},
};
use crate::decompose;

fn sample(name: &str) -> Trace {
    let path = format!("{}/../examples/traces/{name}", env!("CARGO_MANIFEST_DIR"));
    Trace::parse(&std::fs::read_to_string(path).expect("sample")).expect("parses")
}

fn cut(t: &Trace) -> (trust_protocol::hdag::Hdag, Restricted) {
    let hdag = decompose::decompose(t, &decompose::Options::default()).expect("decomposes");
    let r = prepare::restrict(&hdag, |tier| tier == Tier::Computer).with_proof_of(t);
    assert!(r.proof.is_some(), "cut by its steps");
    (hdag, r)
}

fn forged(r: &Restricted, change: impl FnOnce(&mut ProofPlan)) -> Restricted {
    let mut plan = r.proof.as_deref().expect("a proof").clone();
    change(&mut plan);
    let mut out = r.clone();
    out.proof = Some(Arc::new(plan));
    out
}

fn add_edge(r: &mut Restricted, from: &str, to: &str) {
    r.hdag.edges.push(HdagEdge {
        from: from.into(),
        to: to.into(),
        relationship: Relationship::DependsOn,
        strength: None,
        confidence: None,
    });
}

#[test]
fn the_seats_path_agrees_with_the_proof_checker_on_the_samples() {
    for (name, pass) in [
        ("proof-ndl-correct.txt", true),
        ("proof-ndl-wrong.txt", false),
        ("proof-equational-correct.txt", true),
    ] {
        let t = sample(name);
        let whole = check_proof(t.problem.trim(), &t.thinking).expect("a proof");
        let plan = crate::proof::steps(t.problem.trim(), &t.thinking)
            .expect("a proof")
            .expect("within limits");
        assert_eq!(matches!(whole.verdict, Verdict::Pass), pass, "{name}");
        let hdag = decompose::decompose(&t, &decompose::Options::default()).expect("cut");
        // comments, braces and prose are no segments: one per primitive step, plus
        // the structure
        assert_eq!(hdag.nodes.len(), plan.steps.len() + 2, "{name}");
        let p = preview(&t, &hdag);
        let want = if pass {
            TraceVerdict::Pass
        } else {
            TraceVerdict::Fail
        };
        assert_eq!(p.trace.verdict, want, "{name}: {}", p.summary());
        if let Verdict::Fail(f) = &whole.verdict {
            // the first segment judged wrong is the step the checker names
            let first = p
                .segments
                .iter()
                .find(|s| s.decision.as_ref().is_some_and(|d| d.vote == Vote::Invalid))
                .expect("a step judged wrong");
            let span = f.span.clone().expect("located");
            assert_eq!(first.content, t.thinking[span].to_string(), "{name}");
            let reason = &first.decision.as_ref().expect("judged").reason;
            assert!(
                reason.starts_with(&format!("{} error: ", f.kind)),
                "{reason}"
            );
            assert!(reason.contains(&f.public_reason), "{reason}");
        }
    }
}

/// Issue 40: a provider-made cut that cites a result derived inside a closed
/// `assume` block, as if it were in scope, does not pass; the step's own seat, which
/// cannot see scopes, would have passed it.
#[test]
fn a_result_cited_from_a_closed_block_does_not_pass() {
    let t = sample("proof-ndl-wrong.txt");
    let (hdag, r) = cut(&t);
    let plan = r.proof.as_deref().expect("plan").clone();
    // the wrong step: `c := C BY mp on premise-4, D`, D derived in the closed block
    let (wrong, d) = (3usize, 1usize);
    assert!(plan.steps[wrong].text.contains("premise-4, D"));
    let mut r = forged(&r, |p| {
        let claim = p.steps[d].claim.clone().expect("D");
        p.steps[wrong].cites.push(Citation {
            source: Source::Step(d),
            name: None,
            claim,
            asserted: true,
            role: CiteRole::Holding,
        });
    });
    add_edge(&mut r, "P4", "P2");
    let p = preview_restricted(&t, &hdag, &r);
    let decision = |id: &str| {
        p.segments
            .iter()
            .find(|s| s.id == id)
            .and_then(|s| s.decision.clone())
            .expect("judged")
    };
    assert_eq!(
        decision("P4").vote,
        Vote::Valid,
        "the step alone looks right"
    );
    let structure = decision(decompose::proof::STRUCTURE_ID);
    assert_eq!(structure.vote, Vote::Invalid, "{}", structure.reason);
    assert!(
        structure.reason.contains("not visible"),
        "{}",
        structure.reason
    );
    assert_ne!(p.trace.verdict, TraceVerdict::Pass);
}

/// Issue 40: a hypothesis (or a result out of scope) presented as a premise does not
/// pass, whether the step says it cites a premise that states something else, or the
/// provider adds the formula to the problem its seats are sent.
#[test]
fn a_hypothesis_presented_as_a_premise_does_not_pass() {
    let t = sample("proof-ndl-wrong.txt");
    let (hdag, r) = cut(&t);
    let plan = r.proof.as_deref().expect("plan").clone();
    let d = plan.steps[1].claim.clone().expect("D");
    // the step cites premise 1 as stating D
    let cited = forged(&r, |p| {
        p.steps[3].cites.push(Citation {
            source: Source::Premise(0),
            name: None,
            claim: d.clone(),
            asserted: true,
            role: CiteRole::Holding,
        });
    });
    let p = preview_restricted(&t, &hdag, &cited);
    assert_ne!(p.trace.verdict, TraceVerdict::Pass, "{}", p.summary());
    // the problem the seats are sent gains D as a premise
    let Claim::Formula(df) = d else {
        panic!("a formula")
    };
    let widened = forged(&r, |p| {
        p.problem.premises.push(crate::proof::Premise {
            name: "premise-7".into(),
            formula: df.clone(),
        });
    });
    let p = preview_restricted(&t, &hdag, &widened);
    assert_ne!(p.trace.verdict, TraceVerdict::Pass, "{}", p.summary());
    assert!(
        p.segments
            .iter()
            .filter_map(|s| s.decision.as_ref())
            .any(|d| d.reason.contains("problem is not among")),
    );
}

/// A step document that differs from the structure every seat reads (what it cites,
/// its claim where the structure keeps it, its place) is voted wrong by its seat.
#[test]
fn a_step_sent_otherwise_than_the_structure_says_is_voted_wrong() {
    let t = sample("proof-ndl-correct.txt");
    let (_, r) = cut(&t);
    let views = manifest_views(&r);
    let judge = |v: &crate::judge::SegmentView| ComputerAuditor.judge_now(v, &Hash::ZERO);
    for v in &views {
        assert_eq!(judge(&v.view).vote, Vote::Valid, "{}: honest cut", v.id);
    }
    let last = views
        .iter()
        .filter(|v| v.id.starts_with('P'))
        .max_by_key(|v| decompose::proof::step_of(&v.id))
        .expect("steps");
    let with = |change: &dyn Fn(&mut StepDoc)| {
        let mut view = last.view.clone();
        let formal = view.formal.as_mut().expect("formal");
        if let Ok(ProofDoc::Step { step }) = &mut formal.doc {
            change(step);
        }
        judge(&view)
    };
    // a citation the structure does not list
    let d = with(&|s| {
        let mut c = s.cites[0].clone();
        c.role = CiteRole::Holding;
        s.cites.push(c);
    });
    assert_eq!(d.vote, Vote::Invalid, "{}", d.reason);
    // the conclusion is not the one the structure keeps
    let d = with(&|s| {
        s.claim = Some(Claim::Formula(crate::proof::parse_formula("E").expect("E")));
    });
    assert_eq!(d.vote, Vote::Invalid, "{}", d.reason);
    // another place in the proof
    let d = with(&|s| s.index = 0);
    assert_ne!(d.vote, Vote::Valid, "{}", d.reason);
    // a segment text that is not the step checked (what the outcome would show)
    let mut shown = last.view.clone();
    shown.claim = "(E & ~ F) BY claim on premise-1".into();
    let d = judge(&shown);
    assert_eq!(d.vote, Vote::Invalid, "{}", d.reason);
}

/// A structure the manifest does not match (a step resting on other segments than
/// what it cites) is voted wrong; a payload that does not read is an abstention.
#[test]
fn a_manifest_that_does_not_match_the_structure_is_voted_wrong() {
    let t = sample("proof-ndl-correct.txt");
    let (hdag, mut r) = cut(&t);
    add_edge(&mut r, "P3", "P1");
    add_edge(&mut r, "P6", "P2");
    let p = preview_restricted(&t, &hdag, &r);
    let s = p
        .segments
        .iter()
        .find(|s| s.id == decompose::proof::STRUCTURE_ID)
        .and_then(|s| s.decision.clone())
        .expect("judged");
    assert_eq!(s.vote, Vote::Invalid, "{}", s.reason);
    assert_ne!(p.trace.verdict, TraceVerdict::Pass);

    let view = FormalView {
        position: 0,
        doc: ProofDoc::from_value(&serde_json::json!({"kind": "step", "step": 7})),
        cited: Vec::new(),
        manifest: Vec::new(),
    };
    assert_eq!(judge(&view, "x", &[]).vote, Vote::Abstain);
}

/// Bad input: a proof nested 10,000 deep, a 1 MiB formula and a `from` over more
/// than five premises get a clear refusal or an abstention, never a panic.
#[test]
fn oversized_proofs_are_refused_or_abstained_on() {
    let problem = "premise-1 := A\nGoal: A";
    let deep = format!(
        "{}A BY claim on A{}",
        "{".repeat(10_000),
        "}".repeat(10_000)
    );
    let huge = format!("premise-1 := A\nGoal: ({} A)", "~ ".repeat(512 * 1024));
    let from6 = "A from A, A, A, A, A, A;".to_string();
    for (problem, thinking) in [
        (problem.to_string(), deep),
        (huge, "A BY claim on premise-1".to_string()),
        (problem.to_string(), from6),
    ] {
        let t = Trace {
            problem,
            thinking,
            output: "A".into(),
        };
        match decompose::decompose(&t, &decompose::Options::default()) {
            Err(e) => assert!(!e.to_string().is_empty()),
            Ok(hdag) => {
                let p = preview(&t, &hdag);
                assert_ne!(p.trace.verdict, TraceVerdict::Pass, "{}", p.summary());
            }
        }
    }
}

/// `bench quality`'s proof families on another seed: through the seats' path, no correct
/// proof fails, no wrong one passes, and each first error is found where it was made (a
/// syntax error before the first step included: the structure seat fails it).
#[test]
fn generated_proofs_agree_with_their_labels_through_the_seats_path() {
    let families = crate::quality::proof_families(7, 12);
    let all = &families["overall"];
    assert!(all.proofs >= 40 && all.wrong > 0, "{all:?}");
    assert_eq!(all.pass_precision(), 1.0, "{all:?}");
    assert_eq!(all.fail_precision(), 1.0, "{all:?}");
    assert_eq!(all.agree, all.proofs, "{families:?}");
    assert_eq!(all.first_error, all.wrong, "{families:?}");
    for lang in ["NDL", "NDL_f", "Hilbert", "equational"] {
        assert!(families[lang].proofs > 0, "{lang}: {families:?}");
    }
}

/// A payload larger than any honest cut makes (a step citing hundreds of things, a
/// skeleton with more names than steps and premises) is refused unread: an abstention,
/// whatever it would have checked to, and one the provider pays for (its payload exceeds
/// the network's stated limits).
#[test]
fn an_inflated_payload_is_refused_unread() {
    let t = sample("proof-ndl-correct.txt");
    let (_, r) = cut(&t);
    let views = manifest_views(&r);
    let inflate = |id: &str| {
        let mut v = views
            .iter()
            .find(|v| v.id == id)
            .expect("segment")
            .view
            .clone();
        match v.formal.as_mut().map(|f| &mut f.doc) {
            Some(Ok(ProofDoc::Step { step })) => {
                let c = step.cites[0].clone();
                step.cites.extend(std::iter::repeat_n(c, 100));
            }
            Some(Ok(ProofDoc::Structure { skeleton, .. })) => {
                let b = skeleton.bindings[0].clone();
                skeleton.bindings.extend(std::iter::repeat_n(b, 1000));
            }
            _ => panic!("a formal view"),
        }
        ComputerAuditor.judge_now(&v, &Hash::ZERO)
    };
    for id in ["P2", decompose::proof::STRUCTURE_ID] {
        let d = inflate(id);
        assert_eq!(d.vote, Vote::PayloadAbstain, "{id}: {}", d.reason);
        assert!(
            d.reason.contains("more than") || d.reason.contains("larger than"),
            "{}",
            d.reason
        );
    }
}

/// Issue 53, finding 11: a skeleton built to make the structure check cost steps x cites
/// x depth x steps is over the stated work budget: its structure seat abstains at once,
/// before running the check, with the abstention the provider pays for, and never votes
/// Invalid. The skeleton is a right NDL proof's at the decomposer's limits (12 nested
/// `assume` blocks around 480 steps), which is well under the budget, with every step's
/// citations repeated up to the 64 a document may carry and 30 more blocks around each
/// step.
#[test]
fn finding_11_a_skeleton_built_to_blow_up_the_structure_check_is_a_payload_abstention() {
    use crate::proof::{PlanBlock, limits::STRUCTURE_WORK_BUDGET, steps, structure_work};
    let depth = 12;
    let mut proof = "assume A {\n".repeat(depth);
    proof.push_str(&"B BY mp on premise-1, A;\n".repeat(479));
    proof.push_str("B BY mp on premise-1, A\n");
    proof.push_str(&"}\n".repeat(depth));
    let goal = format!("{}B{}", "(A ==> ".repeat(depth), ")".repeat(depth));
    let problem = format!("assert premise-1 := (A ==> B)\nDerive: {goal}\n");
    let honest = steps(&problem, &proof).expect("reads").expect("a plan");
    crate::proof::check_structure(&honest).expect("a right proof's structure");
    let work = structure_work(&honest);
    assert!(work < STRUCTURE_WORK_BUDGET / 10, "{work}");

    let mut blown = honest.clone();
    let first = blown.blocks.len();
    for i in 0..30 {
        blown.blocks.push(PlanBlock {
            id: first + i,
            parent: i.checked_sub(1).map(|j| first + j),
            ..blown.blocks[0].clone()
        });
    }
    for s in &mut blown.steps {
        if let Some(c) = s.cites.first().cloned() {
            s.cites.resize(64, c);
        }
        s.scope_path.extend(first..first + 30);
    }
    let work = structure_work(&blown);
    assert!(work > STRUCTURE_WORK_BUDGET, "{work}");
    // The seat's path: the structure segment of a real session, carrying this skeleton.
    let t = sample("proof-ndl-correct.txt");
    let (_, r) = cut(&t);
    let mut view = manifest_views(&r)
        .into_iter()
        .find(|v| v.id == decompose::proof::STRUCTURE_ID)
        .expect("a structure segment")
        .view;
    match view.formal.as_mut().map(|f| &mut f.doc) {
        Some(Ok(ProofDoc::Structure { skeleton, .. })) => *skeleton = blown,
        _ => panic!("a structure view"),
    }
    let started = std::time::Instant::now();
    let d = ComputerAuditor.judge_now(&view, &Hash::ZERO);
    assert_eq!(d.vote, Vote::PayloadAbstain, "{}", d.reason);
    assert!(d.reason.contains("budget"), "{}", d.reason);
    assert!(d.reason.len() <= trust_protocol::MAX_REASON_BYTES);
    assert!(started.elapsed() < std::time::Duration::from_secs(5));

    // The samples are at least a hundred times below the budget.
    for name in [
        "proof-ndl-correct.txt",
        "proof-ndl-wrong.txt",
        "proof-equational-correct.txt",
    ] {
        let t = sample(name);
        let (_, r) = cut(&t);
        let work = structure_work(r.proof.as_deref().expect("a plan"));
        assert!(work < STRUCTURE_WORK_BUDGET / 100, "{name}: {work}");
    }
}

/// The hand-written proofs of the judging crate (models' styles: fences, comments, names,
/// inline subproofs, long Hilbert chains), through the seats' path: each ends as the
/// whole-proof checker says (PASS, FAIL, or INCONCLUSIVE where it cannot decide).
#[test]
fn hand_written_proofs_end_through_the_seats_path_as_the_whole_proof_checker_says() {
    let path = format!(
        "{}/../judging/tests/proofs/handwritten.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("the hand-written proofs");
    // `@@ problem` / `@@ proof` / `@@ end` sections (judging/tests/proofs/handwritten.txt)
    let mut cases = Vec::new();
    let (mut section, mut problem, mut proof) = ("", String::new(), String::new());
    for line in text.split_inclusive('\n') {
        match line.trim_end() {
            "@@ problem" => (section, problem, proof) = ("problem", String::new(), String::new()),
            "@@ proof" => section = "proof",
            "@@ end" => {
                cases.push((problem.clone(), proof.trim_end().to_string()));
                section = "";
            }
            l if l.starts_with("@@ ") => {}
            _ if section == "problem" => problem.push_str(line),
            _ if section == "proof" => proof.push_str(line),
            _ => {}
        }
    }
    assert!(cases.len() >= 60, "{}", cases.len());
    let mut checked = 0;
    for (problem, proof) in &cases {
        let Some(whole) = check_proof(problem, proof) else {
            continue;
        };
        let t = Trace {
            problem: problem.clone(),
            thinking: proof.clone(),
            output: "QED".into(),
        };
        let want = match whole.verdict {
            Verdict::Pass => TraceVerdict::Pass,
            Verdict::Fail(_) => TraceVerdict::Fail,
            Verdict::Undecided { .. } => TraceVerdict::Inconclusive,
        };
        let got = match decompose::decompose(&t, &decompose::Options::default()) {
            Ok(h) => preview(&t, &h).trace.verdict,
            Err(_) => TraceVerdict::Inconclusive,
        };
        assert_eq!(got, want, "{problem}\n---\n{proof}");
        if let Some(Ok(plan)) = crate::proof::steps(problem, proof) {
            let work = crate::proof::structure_work(&plan);
            assert!(
                work < crate::proof::limits::STRUCTURE_WORK_BUDGET / 100,
                "{work}: {problem}"
            );
        }
        checked += 1;
    }
    assert!(checked >= 50, "{checked}");
}

/// Issue 53, finding 7: a model that derives `(E & ~ F)` and states `(E & F)` as its final
/// answer does not PASS: the structure's seat compares the stated answer with the formula
/// the proof derives, read literally. The same formula written with more or fewer
/// parentheses at the top, or an answer in words, is no wrong answer.
#[test]
fn finding_7_a_final_answer_that_is_not_what_the_proof_derives_fails() {
    let right = sample("proof-ndl-correct.txt");
    let verdict = |output: &str| {
        let mut t = right.clone();
        t.output = output.to_string();
        let hdag = decompose::decompose(&t, &decompose::Options::default()).expect("cut");
        preview(&t, &hdag).trace.verdict
    };
    assert_eq!(verdict("(E & ~ F)"), TraceVerdict::Pass);
    assert_eq!(verdict("E & (~ F)"), TraceVerdict::Pass, "the same formula");
    assert_eq!(verdict("`(E & ~ F)`."), TraceVerdict::Pass);
    assert_eq!(
        verdict("So E holds and F does not."),
        TraceVerdict::Pass,
        "words are not compared"
    );
    assert_eq!(verdict("(E & F)"), TraceVerdict::Fail);
    assert_eq!(verdict("Final Output: (F & ~ E)"), TraceVerdict::Fail);
}
