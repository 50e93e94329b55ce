//! The Computer checkers on text written by whoever submitted the trace: the expression
//! parser and its exact, modular and float evaluators on their own, then the readers and
//! the step checker as a seat runs them (`computer::check_segment`) and as the decomposer
//! routes steps (`computer::readable` and the logic readers).
//!
//! Input: the claim on the first line; each further line a premise, or a given when it
//! starts with `>`. Properties: no panic; a judgement is a function of its inputs and the
//! seed (every seat must reach the same vote), so judging twice gives the same answer.
use trust_judging::computer;
use trust_protocol::Hash;

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let mut lines = text.split('\n');
    let claim = lines.next().unwrap_or_default();
    let (mut premises, mut givens) = (Vec::new(), Vec::new());
    for line in lines {
        match line.strip_prefix('>') {
            Some(given) => givens.push(given.to_string()),
            None => premises.push(line.to_string()),
        }
    }
    let seed = Hash([3u8; 32]);

    let value = computer::evaluate_expression(claim, &seed);
    assert_eq!(value, computer::evaluate_expression(claim, &seed));

    let _ = computer::readable(claim);
    let _ = computer::readable::rule_use(claim);
    let _ = computer::readable::truth_formula(claim);
    let _ = computer::readable::fact_claim(claim);
    let _ = computer::readable::unknowns(claim);
    let _ = computer::readable::number_words(claim);

    let first = computer::check_segment(claim, &premises, &givens, &seed);
    let second = computer::check_segment(claim, &premises, &givens, &seed);
    assert_eq!(first, second, "the same step judged twice gave two answers");
    let _ = first.as_vote();
}
