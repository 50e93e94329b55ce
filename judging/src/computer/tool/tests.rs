use std::sync::Mutex;

use trust_protocol::trace::blocks::render_tool;
use trust_sandbox::{Abstain, Display, Ran};

use super::*;

/// A stand-in executor for tests of the judge's logic (not of execution): it answers
/// every request with a fixed outcome and records what it was asked.
struct StandIn {
    outcome: Outcome,
    asked: Mutex<Vec<Request>>,
}

impl StandIn {
    fn ran(output: &str) -> Self {
        Self {
            outcome: Outcome::Ran(Ran {
                output: output.into(),
                raised: false,
                display: Display::Pretty,
            }),
            asked: Mutex::new(Vec::new()),
        }
    }
}

impl Execute for StandIn {
    fn execute(&self, req: &Request) -> Outcome {
        self.asked.lock().unwrap().push(req.clone());
        self.outcome.clone()
    }
    fn interpreter(&self) -> &str {
        "CPython 3.11.7"
    }
}

fn block(name: &str, sem: Option<Semantics>, input: &str, result: &str) -> String {
    render_tool("call_1", name, sem, input, result).unwrap()
}

#[test]
fn a_marked_call_and_a_fenced_one_read_as_tool_calls() {
    let b = block("python", Some(Semantics::Cell), "x = 2\nx + 1", "3");
    let t = read_tool(&b).expect("a tool call");
    assert_eq!(
        (t.input, t.result, t.form),
        ("x = 2\nx + 1", "3", Form::Marked)
    );
    assert_eq!(t.kind(), ToolKind::Code(Mode::Cell));
    let f = "```python\nprint(1 + 2)\n```\n```output\n3\n```";
    let t = read_tool(f).expect("a fenced call");
    assert_eq!(
        (t.input, t.result, t.form),
        ("print(1 + 2)", "3", Form::Fenced)
    );
    assert_eq!(t.kind(), ToolKind::Code(Mode::Script));
    let s = "```python\nprint(fib(10))\n```\nRunning it gives 55.";
    assert_eq!(read_tool(s).map(|t| t.form), Some(Form::Stated));
    // Code alone, prose, a block with text after it: no tool call.
    assert!(read_tool("```python\ndef f(): pass\n```").is_none());
    assert!(read_tool("So 2 + 3 = 5.").is_none());
    assert!(read_tool(&format!("{b}\nand more")).is_none());
    // Names say the kind when the marker does not.
    assert_eq!(
        read_tool(&block("calculator", None, r#"{"expression":"2*3"}"#, "6"))
            .unwrap()
            .kind(),
        ToolKind::Calculator
    );
    assert_eq!(
        read_tool(&block("web_search", None, r#"{"q":"x"}"#, "..."))
            .unwrap()
            .kind(),
        ToolKind::Other
    );
}

#[test]
fn a_re_run_votes_by_the_comparison_and_names_the_interpreter() {
    let b = block("python", None, "print(6 * 7)", "42");
    let t = read_tool(&b).unwrap();
    let same = judge_tool(&t, &[], Some(&StandIn::ran("42")));
    assert_eq!(same.as_vote(), Some(Vote::Valid), "{same:?}");
    assert!(format!("{same:?}").contains("CPython 3.11.7"), "{same:?}");
    let differs = judge_tool(&t, &[], Some(&StandIn::ran("43")));
    assert_eq!(differs.as_vote(), Some(Vote::Invalid), "{differs:?}");
    let Judgement::Vote { reason, .. } = &differs else {
        unreachable!()
    };
    // The detail is in backticks (a public reason drops them); the rest quotes nothing.
    let outside: String = reason.split('`').step_by(2).collect();
    assert!(
        !outside.contains("42") && !outside.contains("43"),
        "{reason}"
    );
    assert!(outside.contains("differs"), "{reason}");
    // A recorder's cut or re-flow is never a different value.
    let long = block("python", None, "print(list(range(200)))", "[0, 1, ...");
    let unsure = judge_tool(
        &read_tool(&long).unwrap(),
        &[],
        Some(&StandIn::ran("[0,\n 1,\n 2]")),
    );
    assert_eq!(unsure.as_vote(), None, "{unsure:?}");
}

/// The causes of a sandbox's abstention that are the provider's code's doing (a cap
/// exceeded, something non-deterministic or forbidden reached) are payload abstentions,
/// which the provider pays for when a quorum agrees; the seat's own (a module its
/// interpreter lacks, a sandbox that failed, execution off) stay plain abstentions.
#[test]
fn the_providers_code_exceeding_the_limits_is_a_payload_abstention() {
    let b = block("python", None, "while True: pass", "1");
    let t = read_tool(&b).unwrap();
    let judged = |a: Abstain| {
        let exec = StandIn {
            outcome: Outcome::Abstain(a),
            asked: Mutex::new(Vec::new()),
        };
        judge_tool(&t, &[], Some(&exec))
    };
    let payload = [
        Abstain::Limit {
            which: trust_sandbox::LimitKind::Cpu,
        },
        Abstain::Limit {
            which: trust_sandbox::LimitKind::Memory,
        },
        Abstain::Limit {
            which: trust_sandbox::LimitKind::Output,
        },
        Abstain::Limit {
            which: trust_sandbox::LimitKind::Wall,
        },
        Abstain::NonDeterministic {
            what: "the clock".into(),
        },
        Abstain::Refused {
            what: "a socket".into(),
        },
    ];
    for a in payload {
        let j = judged(a.clone());
        let Judgement::Vote { vote, reason } = &j else {
            panic!("{a:?}: {j:?}")
        };
        assert_eq!(*vote, Vote::PayloadAbstain, "{a:?}");
        assert_eq!(j.as_vote(), None, "an abstention, never a judgement");
        assert!(reason.contains("provider pays"), "{reason}");
        assert!(reason.len() <= trust_protocol::MAX_REASON_BYTES, "{reason}");
    }
    let seat_side = [
        Abstain::Unavailable {
            module: "sympy".into(),
        },
        Abstain::Failed {
            reason: "bwrap is missing".into(),
        },
        Abstain::Off,
    ];
    for a in seat_side {
        assert!(
            matches!(judged(a.clone()), Judgement::Abstain(_)),
            "{a:?} is the seat's side"
        );
    }
    // No sandbox at all is the seat's side too.
    assert!(matches!(judge_tool(&t, &[], None), Judgement::Abstain(_)));
}

#[test]
fn without_a_sandbox_or_with_an_abstaining_one_the_seat_abstains() {
    let b = block("python", None, "print(1)", "1");
    let t = read_tool(&b).unwrap();
    let none = judge_tool(&t, &[], None);
    assert_eq!(
        none,
        Judgement::Abstain("no sandbox on this node: the tool call's code is not re-run".into())
    );
    let lacking = StandIn {
        outcome: Outcome::Abstain(Abstain::Unavailable {
            module: "sympy".into(),
        }),
        asked: Mutex::new(Vec::new()),
    };
    let j = judge_tool(&t, &[], Some(&lacking));
    assert_eq!(j.as_vote(), None);
    assert!(format!("{j:?}").contains("CPython 3.11.7"), "{j:?}");
    // A tool it cannot run.
    let search = block("web_search", None, r#"{"q":"capital of France"}"#, "Paris");
    assert_eq!(
        judge_tool(&read_tool(&search).unwrap(), &[], None).as_vote(),
        None
    );
}

#[test]
fn a_cell_replays_the_earlier_cells_and_a_script_does_not() {
    let b = block("python", Some(Semantics::Cell), "y = x * 2\ny", "8");
    let t = read_tool(&b).unwrap();
    let exec = StandIn::ran("8");
    let cells = vec!["x = 4".to_string()];
    assert_eq!(
        judge_tool(&t, &cells, Some(&exec)).as_vote(),
        Some(Vote::Valid)
    );
    let script = block("python", Some(Semantics::Script), "print(8)", "8");
    judge_tool(&read_tool(&script).unwrap(), &cells, Some(&exec));
    let asked = exec.asked.lock().unwrap();
    assert_eq!(asked[0].mode, Mode::Cell);
    assert_eq!(asked[0].earlier, cells);
    assert_eq!(asked[1].mode, Mode::Script);
    assert!(asked[1].earlier.is_empty());
}

#[test]
fn a_calculator_is_re_evaluated_exactly() {
    let ok = block(
        "calculator",
        None,
        r#"{"expression": "26 / 2 - 10"}"#,
        "3.0",
    );
    assert_eq!(
        judge_tool(&read_tool(&ok).unwrap(), &[], None).as_vote(),
        Some(Vote::Valid)
    );
    let bad = block("calculator", None, r#"{"expression": "26 / 2 - 10"}"#, "13");
    assert_eq!(
        judge_tool(&read_tool(&bad).unwrap(), &[], None).as_vote(),
        Some(Vote::Invalid)
    );
    let names = block("calculator", None, r#"{"expression": "x + 1"}"#, "3");
    assert_eq!(
        judge_tool(&read_tool(&names).unwrap(), &[], None).as_vote(),
        None
    );
}

#[test]
fn a_stated_output_is_checked_against_the_re_run() {
    let s = "```python\nprint(fib(10))\n```\nRunning it gives 55.";
    let t = read_tool(s).unwrap();
    assert_eq!(
        judge_tool(&t, &[], Some(&StandIn::ran("55"))).as_vote(),
        Some(Vote::Valid)
    );
    assert_eq!(
        judge_tool(&t, &[], Some(&StandIn::ran("89"))).as_vote(),
        Some(Vote::Invalid)
    );
    // A list where one number is stated: not aligned, no verdict.
    assert_eq!(
        judge_tool(&t, &[], Some(&StandIn::ran("[1, 1, 2, 55]"))).as_vote(),
        None
    );
}

#[test]
fn restatements_are_valid_when_equal_and_wrong_only_when_read_for_sure() {
    let problem = ["Ducks eat 3.5 pounds of insects a week each. How much do ten eat a day?"];
    let vote = |claim: &str, results: &[&str]| {
        check_restatement(claim, results, &problem, None).and_then(|j| j.as_vote())
    };
    // Equal, rounded, written as a fraction.
    assert_eq!(
        vote("The value of \\( y \\) is 494.", &["494.0"]),
        Some(Vote::Valid)
    );
    assert_eq!(
        vote("The value of \\( f \\) is -38.", &["-38.0"]),
        Some(Vote::Valid)
    );
    assert_eq!(
        vote(
            "So the answer is \\(\\boxed{16}\\).",
            &["15.999999999999998"]
        ),
        Some(Vote::Valid)
    );
    assert_eq!(
        vote("Thus the answer is \\boxed{\\frac{1}{4}}.", &["0.25"]),
        Some(Vote::Valid)
    );
    assert_eq!(
        vote(
            "It is approximately \\(27.2\\) pounds.",
            &["27.200000000000003"]
        ),
        Some(Vote::Valid)
    );
    // Another value for the one the result gives.
    assert_eq!(
        vote("The ratio of the weights is \\(0.25\\).", &["0.2"]),
        Some(Vote::Invalid)
    );
    assert_eq!(
        vote("Geb is $\\boxed{13}$ years old.", &["3.0"]),
        Some(Vote::Invalid)
    );
    // The k-th smallest of a list, read against the list.
    assert_eq!(
        vote(
            "The fifth smallest value is \\(24\\).",
            &["[-5, -1, 9, 24, 1148]"]
        ),
        Some(Vote::Invalid)
    );
    assert_eq!(
        vote(
            "The fifth smallest value is \\(1148\\).",
            &["[-5, -1, 9, 24, 1148]"]
        ),
        Some(Vote::Valid)
    );
    // Paraphrases it does not read are never wrong: units, percent, rounding up, a digit,
    // the sign, a count or sum of a list.
    assert_eq!(vote("It takes $\\boxed{95}$ minutes.", &["5700"]), None);
    assert_eq!(vote("That is \\boxed{25} percent.", &["0.25"]), None);
    assert_eq!(vote("They need \\boxed{3} buses.", &["2.4"]), None);
    assert_eq!(vote("The units digit is \\boxed{8}.", &["78"]), None);
    assert_eq!(vote("There are \\boxed{12} fewer women.", &["-12"]), None);
    assert_eq!(
        vote("There are \\boxed{3} such primes.", &["[17, 53, 71]"]),
        None
    );
    // A step of its own derives the answer: not this check's to judge.
    assert_eq!(
        vote(
            "The hundreds digit of 140 is the first digit, which is 1. So \\boxed{1}.",
            &["140.0"]
        ),
        Some(Vote::Valid)
    );
    // A bare calculation is the arithmetic checkers', not a restatement.
    assert_eq!(vote("\\( g = 1 \\)", &["-5"]), None);
    // The claim's own arithmetic on what it states, an answer that is no bare number, a
    // sentence stating the problem's numbers or a constant: none of them is called wrong.
    assert_ne!(
        vote("Each box holds 6, so 2 boxes hold \\boxed{12}.", &["6"]),
        Some(Vote::Invalid)
    );
    assert_ne!(
        vote(
            "So the side is \\boxed{2\\sqrt{3}}.",
            &["3.4641016151377544"]
        ),
        Some(Vote::Invalid)
    );
    assert_eq!(vote("Each duck eats 3.5 pounds a week.", &["35.0"]), None);
    assert_eq!(vote("There are 7 days in a week.", &["35.0"]), None);
    // A result that is an error restates nothing.
    assert_eq!(
        vote("So x is 3.", &["NameError: name 'x' is not defined"]),
        None
    );
}

#[test]
fn a_tool_call_reads_in_words_for_a_tier_that_reads_words() {
    let b = block("python", None, "print(26 / 2 - 10)", "3.0");
    let h = in_words(&b, true).unwrap();
    assert!(
        h.contains("computes what the problem asks")
            && h.contains("print(26 / 2 - 10)")
            && h.ends_with("3.0"),
        "{h}"
    );
    assert!(!h.contains("<<<"), "{h}");
    let p = in_words(&b, false).unwrap();
    assert!(
        p.starts_with("The tool python was run with this Python code"),
        "{p}"
    );
    assert!(in_words("So 2 + 2 = 4.", true).is_none());
}

/// Precision first: a sentence after a one-value result whose one value two numbers at hand
/// make (`24` apples a box, `2` boxes: `48`) is mental arithmetic, not a misread result, and
/// gets no verdict; the same value in a sentence that names what the code computed
/// (`apples_per_box` → "apples per box") restates the result and is wrong.
#[test]
fn worked_out_values_are_not_misreads_unless_the_sentence_names_the_result() {
    let problem = ["Each of the 2 boxes holds the same number of apples, 24 in all."];
    let code = "apples = 48 // 2\napples_per_box = apples\napples_per_box";
    let vote = |claim: &str| {
        check_restatement(claim, &["24"], &problem, Some(code)).and_then(|j| j.as_vote())
    };
    assert_eq!(vote("So the two boxes together is 48."), None);
    assert_eq!(
        vote("The number of apples per box is 48."),
        Some(Vote::Invalid)
    );
    assert_eq!(
        vote("The number of apples per box is 24."),
        Some(Vote::Valid)
    );
    // With no code to read a name from, the worked-out value gets no verdict either.
    assert_eq!(
        check_restatement(
            "The number of apples per box is 48.",
            &["24"],
            &problem,
            None
        )
        .and_then(|j| j.as_vote()),
        None
    );
}

/// The provider's own view of a re-run (stand-in executor: what is shown, not execution):
/// the output with the interpreter and semantics, clipped; why not when the run
/// abstained or there is no sandbox; nothing for a tool that is not code. A kernel's
/// earlier cells go with the request.
#[test]
fn the_provider_sees_what_its_re_run_gave_or_why_there_was_none() {
    let cell = block("python", Some(Semantics::Cell), "x + 1", "3");
    let t = read_tool(&cell).unwrap();
    let exec = StandIn::ran("3\n");
    let shown = rerun_shown(&t, &["x = 2".into()], Some(&exec)).unwrap();
    assert_eq!(shown, "3 (CPython 3.11.7, cell semantics)");
    assert_eq!(exec.asked.lock().unwrap()[0].earlier, ["x = 2"]);

    let long = "7".repeat(MAX_SHOWN_RERUN_BYTES * 2);
    let shown = rerun_shown(&t, &[], Some(&StandIn::ran(&long))).unwrap();
    assert!(shown.len() < MAX_SHOWN_RERUN_BYTES + 64, "{}", shown.len());
    assert!(shown.contains(" … (CPython"), "{shown}");

    let refused = StandIn {
        outcome: Outcome::Abstain(Abstain::Off),
        asked: Mutex::new(Vec::new()),
    };
    let shown = rerun_shown(&t, &[], Some(&refused)).unwrap();
    assert!(shown.starts_with("not re-run: "), "{shown}");
    assert_eq!(
        rerun_shown(&t, &[], None).as_deref(),
        Some("not re-run: this node has no sandbox")
    );
    let search = block("web_search", None, r#"{"q":"x"}"#, "...");
    assert_eq!(
        rerun_shown(&read_tool(&search).unwrap(), &[], Some(&exec)),
        None
    );
}
