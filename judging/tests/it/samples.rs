//! The proof samples of `examples/traces/`, as `trust-node check` reads them: a correct NDL
//! proof and a correct equational proof pass, and the NDL proof with one wrong step fails
//! at that step, whole or step by step.

use trust_judging::proof::{
    Claim, ErrorKind, ProofReport, Verdict, check_plan, check_proof, parse_formula, steps,
};

/// A sample trace cut at its three headings.
struct Trace {
    problem: String,
    thinking: String,
    output: String,
}

fn read_trace(name: &str) -> Trace {
    let path = format!("{}/../examples/traces/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut sections: [String; 3] = Default::default();
    let mut current = None;
    for line in text.split_inclusive('\n') {
        match line.trim_end() {
            "## Problem Statement" => current = Some(0),
            "## Thinking Process" => current = Some(1),
            "## Final Output" => current = Some(2),
            _ => {
                if let Some(i) = current {
                    sections[i].push_str(line);
                }
            }
        }
    }
    let [problem, thinking, output] = sections.map(|s| s.trim().to_string());
    assert!(
        !problem.is_empty() && !thinking.is_empty() && !output.is_empty(),
        "{name}: a heading is missing or a section is empty"
    );
    Trace {
        problem,
        thinking,
        output,
    }
}

/// Line `n` (1-based) of the proof in the thinking's code fence, counting from the line
/// after the opening fence.
fn proof_line(thinking: &str, n: usize) -> &str {
    thinking
        .lines()
        .skip_while(|l| !l.trim_start().starts_with("```"))
        .nth(n)
        .unwrap_or("")
}

/// The report of `check_proof`, after checking that the plan's step-by-step verdict
/// agrees with its verdict.
fn check(name: &str) -> (Trace, ProofReport) {
    let t = read_trace(name);
    let report = check_proof(&t.problem, &t.thinking)
        .unwrap_or_else(|| panic!("{name}: not recognised as a proof"));
    let plan = steps(&t.problem, &t.thinking)
        .unwrap_or_else(|| panic!("{name}: not cut into steps"))
        .unwrap_or_else(|e| panic!("{name}: {e}"));
    assert_eq!(
        check_plan(&plan),
        report.verdict,
        "{name}: step-by-step verdict differs from check_proof"
    );
    (t, report)
}

#[test]
fn correct_ndl_sample_passes() {
    let (t, r) = check("proof-ndl-correct.txt");
    assert_eq!(r.verdict, Verdict::Pass);
    // the final output is what the proof derives
    let goal = parse_formula(&t.output).unwrap();
    assert_eq!(r.conclusion, Some(Claim::Formula(goal)));
}

#[test]
fn wrong_ndl_sample_fails_at_its_wrong_step() {
    let (t, r) = check("proof-ndl-wrong.txt");
    let Verdict::Fail(f) = r.verdict else {
        panic!("expected a failure, got {:?}", r.verdict)
    };
    assert_eq!(f.kind, ErrorKind::Logic);
    // `line` counts from the proof's first line (the `{` inside the code fence), not
    // from the start of the thinking: the wrong step is line 7 of the proof.
    assert_eq!(f.line, 7);
    assert_eq!(
        proof_line(&t.thinking, f.line).trim(),
        "c := C BY mp on premise-4, D;"
    );
    let span = f.span.clone().expect("a wrong step has a span");
    assert_eq!(&t.thinking[span], "c := C BY mp on premise-4, D");
    // the fourth step of the plan: the assume block's opening, its step and its closing
    // come first
    assert_eq!(f.step, Some(3));
    // D was derived only under the hypothesis B, whose block has closed
    assert_eq!(f.public_reason, "mp: argument 2 does not hold");
}

#[test]
fn correct_equational_sample_passes() {
    let (t, r) = check("proof-equational-correct.txt");
    assert_eq!(r.verdict, Verdict::Pass);
    assert_eq!(t.output, "m(i(a),m(a,b)) = b");
}
