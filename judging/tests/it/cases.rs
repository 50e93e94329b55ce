//! Reading labelled proof cases and judging them both ways: whole-proof ([`check_proof`])
//! and step by step ([`steps`], [`check_step`], [`check_structure`],
//! [`verdict_from_steps`]).

use trust_judging::proof::{
    ErrorKind, ProofReport, Verdict, check_plan, check_proof, check_structure, steps,
};

/// What a case should get.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Expect {
    Pass,
    None,
    Undecided,
    Fail {
        kind: ErrorKind,
        line: Option<usize>,
    },
}

/// One labelled case.
#[derive(Debug, Clone)]
pub(crate) struct Case {
    pub(crate) name: String,
    pub(crate) expect: Expect,
    pub(crate) problem: String,
    pub(crate) proof: String,
}

fn kind(word: &str) -> ErrorKind {
    match word {
        "syntax" => ErrorKind::Syntax,
        "type" => ErrorKind::Type,
        "logic" => ErrorKind::Logic,
        other => panic!("unknown error kind {other}"),
    }
}

/// Reads the `@@ case` format of `tests/proofs/*.txt`.
pub(crate) fn parse_cases(text: &str) -> Vec<Case> {
    let mut out = Vec::new();
    let mut name = String::new();
    let mut expect = Expect::Pass;
    let mut section = "";
    let mut problem = String::new();
    let mut proof = String::new();
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_end_matches(['\n', '\r']);
        if let Some(rest) = trimmed.strip_prefix("@@ ") {
            let mut words = rest.split_whitespace();
            match words.next() {
                Some("case") => {
                    name = words.collect::<Vec<_>>().join(" ");
                    problem.clear();
                    proof.clear();
                    section = "";
                }
                Some("expect") => {
                    expect = match words.next() {
                        Some("pass") => Expect::Pass,
                        Some("none") => Expect::None,
                        Some("undecided") => Expect::Undecided,
                        Some("fail") => Expect::Fail {
                            kind: kind(words.next().expect("kind")),
                            line: words.next().map(|l| l.parse().expect("line")),
                        },
                        other => panic!("bad expect {other:?} in {name}"),
                    }
                }
                Some("problem") => section = "problem",
                Some("proof") => section = "proof",
                Some("end") => {
                    out.push(Case {
                        name: name.clone(),
                        expect: expect.clone(),
                        problem: problem.clone(),
                        proof: proof.trim_end_matches('\n').to_string(),
                    });
                    section = "";
                }
                other => panic!("bad directive {other:?}"),
            }
            continue;
        }
        match section {
            "problem" => problem.push_str(line),
            "proof" => proof.push_str(line),
            _ => {}
        }
    }
    out
}

/// Whether the report meets the expectation (kind and, if given, line).
pub(crate) fn meets(report: Option<&ProofReport>, expect: &Expect) -> (bool, bool) {
    match (report, expect) {
        (None, Expect::None) => (true, true),
        (Some(r), Expect::Pass) => (r.passed(), true),
        (Some(r), Expect::Undecided) => (matches!(r.verdict, Verdict::Undecided { .. }), true),
        (Some(r), Expect::Fail { kind, line }) => match &r.verdict {
            Verdict::Fail(f) => (true, f.kind == *kind && line.is_none_or(|l| l == f.line)),
            _ => (false, false),
        },
        _ => (false, false),
    }
}

/// The step-by-step verdict must equal the whole-proof verdict, and an honest plan must
/// pass the structure check.
pub(crate) fn assert_agreement(name: &str, problem: &str, proof: &str) {
    let report = check_proof(problem, proof);
    let plan = steps(problem, proof);
    match (report, plan) {
        (None, None) => {}
        (Some(r), Some(Ok(plan))) => {
            check_structure(&plan)
                .unwrap_or_else(|e| panic!("{name}: honest plan fails the structure check: {e}"));
            let v = check_plan(&plan);
            assert_eq!(
                v, r.verdict,
                "{name}: step-by-step verdict differs from check_proof"
            );
            assert_eq!(plan.language, r.language, "{name}");
        }
        (Some(r), Some(Err(_))) => {
            assert!(
                matches!(r.verdict, Verdict::Undecided { .. }),
                "{name}: refused plan but decided report"
            );
        }
        (r, p) => panic!(
            "{name}: recognition differs: report {r:?} plan {:?}",
            p.map(|p| p.is_ok())
        ),
    }
}
