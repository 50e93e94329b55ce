//! The labelled corpora.

use super::cases::{assert_agreement, meets, parse_cases};
use std::collections::BTreeMap;

use trust_judging::proof::{
    Verdict, check_proof,
    generate::{Expected, corpus},
};

struct Tally {
    cases: usize,
    agree: usize,
    failing: usize,
    first_error: usize,
    correct_failed: Vec<String>,
    wrong_passed: Vec<String>,
}

fn run_generated(seed: u64, per_language: usize) -> BTreeMap<String, Tally> {
    let mut by_lang: BTreeMap<String, Tally> = BTreeMap::new();
    for c in corpus(seed, per_language) {
        let t = by_lang.entry(c.language.to_string()).or_insert(Tally {
            cases: 0,
            agree: 0,
            failing: 0,
            first_error: 0,
            correct_failed: Vec::new(),
            wrong_passed: Vec::new(),
        });
        t.cases += 1;
        let report = check_proof(&c.problem, &c.proof);
        let verdict = report.as_ref().map(|r| r.verdict.clone());
        match (&c.expected, &verdict) {
            (Expected::Pass, Some(Verdict::Pass)) => t.agree += 1,
            (Expected::Pass, _) => t.correct_failed.push(format!(
                "{} [{}]\n{}\n--- proof ---\n{}\n--- got {verdict:?}",
                c.language, c.origin, c.problem, c.proof
            )),
            (Expected::Fail { kind, step, line }, Some(Verdict::Fail(f))) => {
                t.agree += 1;
                t.failing += 1;
                if f.kind == *kind && f.step == *step && f.line == *line {
                    t.first_error += 1;
                } else {
                    eprintln!(
                        "first error differs [{} {}]: expected {kind:?} step {step:?} line {line}, got {:?} step {:?} line {} ({})\n{}\n--- proof ---\n{}\n",
                        c.language,
                        c.origin,
                        f.kind,
                        f.step,
                        f.line,
                        f.public_reason,
                        c.problem,
                        c.proof
                    );
                }
            }
            (Expected::Fail { .. }, _) => {
                t.failing += 1;
                t.wrong_passed.push(format!(
                    "{} [{}]\n{}\n--- proof ---\n{}\n--- got {verdict:?}",
                    c.language, c.origin, c.problem, c.proof
                ))
            }
        }
        assert_agreement(
            &format!("{} {}", c.language, c.origin),
            &c.problem,
            &c.proof,
        );
    }
    by_lang
}

#[test]
fn generated_corpus_is_judged_as_labelled() {
    let tallies = run_generated(20_250_611, 300);
    let mut total = 0;
    for (lang, t) in &tallies {
        total += t.cases;
        let agreement = t.agree as f64 / t.cases as f64;
        let first = t.first_error as f64 / t.failing.max(1) as f64;
        println!(
            "{lang}: {} cases ({} failing), verdict agreement {agreement:.4}, first-error accuracy {first:.4}",
            t.cases, t.failing
        );
        assert!(
            t.correct_failed.is_empty(),
            "correct proofs failed:\n{}",
            t.correct_failed.join("\n\n")
        );
        assert!(
            t.wrong_passed.is_empty(),
            "incorrect proofs passed:\n{}",
            t.wrong_passed.join("\n\n")
        );
        assert!(agreement >= 0.98, "{lang}: agreement {agreement}");
        assert!(first >= 0.99, "{lang}: first-error accuracy {first}");
        assert!(t.cases >= 250, "{lang}: only {} cases", t.cases);
    }
    assert_eq!(tallies.len(), 4);
    assert!(total >= 400);
}

#[test]
fn handwritten_proofs_get_their_labels() {
    let cases = parse_cases(include_str!("../proofs/handwritten.txt"));
    assert!(cases.len() >= 60, "only {} hand-written cases", cases.len());
    let mut wrong = Vec::new();
    let mut details = 0usize;
    let mut failing = 0usize;
    for c in &cases {
        let report = check_proof(&c.problem, &c.proof);
        let (verdict_ok, detail_ok) = meets(report.as_ref(), &c.expect);
        if matches!(c.expect, super::cases::Expect::Fail { .. }) {
            failing += 1;
            if verdict_ok && detail_ok {
                details += 1;
            }
        }
        if !(verdict_ok && detail_ok) {
            wrong.push(format!(
                "{}: expected {:?}, got {:?}",
                c.name,
                c.expect,
                report.map(|r| r.verdict)
            ));
        }
        assert_agreement(&c.name, &c.problem, &c.proof);
    }
    println!(
        "hand-written: {} cases, {failing} failing, first-error (kind and line) accuracy {}/{failing}",
        cases.len(),
        details
    );
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
