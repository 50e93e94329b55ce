//! True arithmetic is judged when its operands are given (issue 56, item 5): by a step the
//! calculation rests on, in any notation the checkers read (`$15.00` for `$15`), or by a
//! run of whole numbers the problem defines (`the integers from 1 to 60`). Through the
//! path `trust-node check` takes: the heuristic decomposition, then the preview that
//! judges each Computer segment as its seats would. The grounding rule still holds: an
//! operand that nothing gives keeps a true calculation from being called Valid.

use trust_contracts::{SegmentVerdict, TraceVerdict};
use trust_judging::{
    decompose::{Options, decompose},
    preview::{Preview, preview},
};
use trust_protocol::{Vote, trace::Trace};

fn check(problem: &str, thinking: &str, output: &str) -> Preview {
    let trace = Trace {
        problem: problem.into(),
        thinking: thinking.into(),
        output: output.into(),
    };
    let hdag = decompose(&trace, &Options::default()).expect("decomposes");
    preview(&trace, &hdag)
}

/// The running sum of 1 to `last`, one addition a line, `0 + 1 = 1` first; `wrong_at`
/// replaces the operand of that line (and the sum follows it, so every line is true).
fn running_sum(last: i64, operand_at: impl Fn(i64) -> i64) -> String {
    let mut sum = 0i64;
    let mut lines = Vec::new();
    for k in 1..=last {
        let add = operand_at(k);
        lines.push(format!("{sum} + {add} = {}", sum + add));
        sum += add;
    }
    lines.join("\n")
}

/// The decision on the calculation whose text is `content`.
fn vote_on(p: &Preview, content: &str) -> Option<Vote> {
    let seg = p
        .segments
        .iter()
        .find(|s| s.content == content)
        .unwrap_or_else(|| panic!("no segment {content:?}: {}", p.summary()));
    seg.decision.as_ref().map(|d| d.vote)
}

#[test]
fn a_running_sum_of_the_integers_1_to_60_is_judged_valid_line_by_line() {
    let p = check(
        "What is the sum of the integers from 1 to 60?",
        &running_sum(60, |k| k),
        "The sum is 1830.",
    );
    let additions: Vec<_> = p
        .segments
        .iter()
        .filter(|s| s.content.contains(" + "))
        .filter(|s| s.content.lines().count() == 1)
        .collect();
    assert_eq!(additions.len(), 60, "{}", p.summary());
    for s in &additions {
        let d = s.decision.as_ref().expect("a Computer segment");
        assert_eq!(d.vote, Vote::Valid, "{}: {}", s.content, d.reason);
        assert_eq!(s.verdict, SegmentVerdict::Valid, "{}", s.content);
    }
}

#[test]
fn an_operand_outside_the_problems_run_still_abstains() {
    // The adversary's attempt: every line is true arithmetic, but line 30 adds 75, which
    // is not one of the integers 1 to 60 and which no step states.
    let thinking = running_sum(60, |k| if k == 30 { 75 } else { k });
    let p = check(
        "What is the sum of the integers from 1 to 60?",
        &thinking,
        "The sum is 1875.",
    );
    let line = thinking.lines().nth(29).expect("line 30");
    assert!(line.contains("+ 75 ="), "{line}");
    let seg = p.segments.iter().find(|s| s.content == line).expect("line");
    let d = seg.decision.as_ref().expect("judged by the Computer tier");
    assert!(d.vote.is_abstain(), "{line}: {d:?}");
    assert!(d.reason.contains("calculates with 75"), "{}", d.reason);
    // The same trace under a problem that names no run: the lines whose operand no step
    // states and no unit constant is (5, 8, 9, ...) are not called Valid either.
    let bare = check(
        "Add up the numbers one after the other.",
        &running_sum(10, |k| k),
        "55",
    );
    assert_ne!(vote_on(&bare, "10 + 5 = 15"), Some(Vote::Valid));
    // A run of some of the numbers (the odd ones) gives no even operand.
    let odd = check(
        "What is the sum of the odd integers from 1 to 59?",
        "1 + 3 = 4\n4 + 5 = 9\n9 + 8 = 17",
        "17",
    );
    assert_eq!(vote_on(&odd, "4 + 5 = 9"), Some(Vote::Valid));
    assert_ne!(vote_on(&odd, "9 + 8 = 17"), Some(Vote::Valid));
}

#[test]
fn a_dollar_amount_stated_with_cents_grounds_the_next_calculation() {
    let p = check(
        "Anna buys 3 notebooks at $5 each and pays with a $20 bill. How much change does she get?",
        "The notebooks cost 3 × $5 = $15.00.\nHer change is $20 - $15 = $5.00.",
        "She gets $5.00 in change.",
    );
    assert_eq!(
        vote_on(&p, "$20 - $15 = $5.00"),
        Some(Vote::Valid),
        "{}",
        p.summary()
    );
    // Had no step stated 15, the calculation would still not be called Valid.
    let invented = check(
        "Anna buys 3 notebooks at $5 each and pays with a $20 bill. How much change does she get?",
        "The notebooks cost a lot.\nHer change is $20 - $15 = $5.00.",
        "She gets $5.00 in change.",
    );
    assert_ne!(
        vote_on(&invented, "$20 - $15 = $5.00"),
        Some(Vote::Valid),
        "{}",
        invented.summary()
    );
}

#[test]
fn a_calculation_nobody_judged_is_not_said_to_fail() {
    // One calculation, true, on a number nothing gives: its seat abstains.
    let p = check(
        "Anna buys 3 notebooks at $5 each. How much do they cost?",
        "She also pays 17 + 8 = 25 dollars for a bag.",
        "She pays $15.",
    );
    assert_ne!(p.trace.verdict, TraceVerdict::Pass);
    let why = p.why_not_pass().expect("not a pass");
    assert!(why.contains("1 calculation not judged"), "{why}");
    assert!(!why.contains("0 of 1 calculations hold"), "{why}");
    // Once it is judged, it is counted as one that holds.
    let judged = check(
        "Anna buys 3 notebooks at $5 each. How much do they cost?",
        "The notebooks cost 3 × $5 = $15.",
        "She pays $15.",
    );
    let why = judged
        .why_not_pass()
        .expect("the answer is for the LLM tier");
    assert!(why.contains("1 of 1 calculations hold"), "{why}");
}

#[test]
fn a_run_named_in_a_step_rather_than_the_problem_gives_nothing() {
    // The adversary's other attempt: a step of its own names a run, and a later true
    // calculation works on a number of it that nothing else gives. Only the problem
    // statement (the first given) defines runs.
    let judge = |givens: &[&str]| {
        let givens: Vec<String> = givens.iter().map(|g| (*g).to_string()).collect();
        trust_judging::computer::check_claim(
            "10 + 37 = 47",
            &[],
            &givens,
            &trust_protocol::Hash::ZERO,
        )
    };
    let from_step = judge(&[
        "Add up some numbers.",
        "Consider the integers from 1 to 100.",
    ]);
    assert_eq!(from_step.as_vote(), None, "{from_step:?}");
    let from_problem = judge(&["Add up the integers from 1 to 100."]);
    assert_eq!(
        from_problem.as_vote(),
        Some(Vote::Valid),
        "{from_problem:?}"
    );
}
