use trust_protocol::{
    Hash, Vote,
    hdag::{AuditorType, Hdag, Relationship},
    trace::blocks::{Semantics, render_message, render_redacted, render_tool},
};

use super::*;
use crate::{
    decompose::{Options, decompose, supported_steps},
    judge::ComputerAuditor,
    preview::preview,
};

const FIB: &str = "```python\ndef fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n```";

fn trace(thinking: &str) -> Trace {
    Trace {
        problem: "What is the 10th Fibonacci number?".into(),
        thinking: thinking.into(),
        output: "The answer is 55.".into(),
    }
}

/// Issue 54: a fenced Python function in the thinking is one unit for a tier that reads
/// it; no line of it is a step, and the Computer tier votes on none of it (`a, b = b, a +
/// b` is no equality).
#[test]
fn a_fenced_fibonacci_function_gets_no_computer_vote_on_its_code_lines() {
    let t = trace(&format!(
        "I write the usual loop.\n\n{FIB}\n\nThe loop keeps the last two numbers, so fib(10) is 55."
    ));
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let code: Vec<_> = h
        .nodes
        .iter()
        .filter(|n| n.content.contains("a, b = b, a + b"))
        .collect();
    assert_eq!(code.len(), 1, "{:#?}", h.nodes);
    assert_eq!(code[0].content, FIB, "the whole fence, as one span");
    assert_eq!(code[0].kind, CODE_KIND);
    assert_eq!(code[0].primary_auditor, AuditorType::Llm);
    for n in &h.nodes {
        let line_of_code = ["def fib", "a, b = ", "return a", "```"]
            .iter()
            .any(|l| n.content.contains(l));
        assert!(
            n.id == code[0].id || !line_of_code,
            "{} holds code outside its block: {:?}",
            n.id,
            n.content
        );
    }
    let p = preview(&t, &h);
    for s in &p.segments {
        if s.content.contains("a, b = b, a + b") {
            assert!(s.decision.is_none(), "{}: {:?}", s.id, s.decision);
        }
    }
    // The judge itself never reads code as equalities, whatever routes it there.
    let d = ComputerAuditor.judge_now(
        &crate::judge::SegmentView {
            claim: "a, b = b, a + b".into(),
            ..Default::default()
        },
        &Hash::ZERO,
    );
    assert_ne!(d.vote, Vote::Valid, "{}", d.reason);
}

/// The same function followed by the output it printed is a tool call: one `TC` segment
/// (code and output its text) for the Computer tier, with its `TU` claim beside it.
#[test]
fn a_fenced_block_with_its_output_is_a_tool_call() {
    for tail in ["```output\n55\n```", "Running it gives 55."] {
        let t = trace(&format!(
            "I compute it.\n\n{FIB}\nprint(fib(10))\n{tail}\n\nSo the 10th is 55."
        ));
        // The fence closes before `print`: put the call inside the fence.
        let t = Trace {
            thinking: t.thinking.replace(
                "return a\n```\nprint(fib(10))",
                "return a\nprint(fib(10))\n```",
            ),
            ..t
        };
        let h = decompose(&t, &Options::default()).expect("decomposes");
        let tc: Vec<_> = h.nodes.iter().filter(|n| n.kind == TOOL_KIND).collect();
        assert_eq!(tc.len(), 1, "{tail}: {:#?}", h.nodes);
        assert_eq!(tc[0].id, "TC1");
        assert_eq!(tc[0].primary_auditor, AuditorType::Auto);
        assert!(tc[0].content.starts_with("```python") && tc[0].content.ends_with(tail.trim_end()));
        assert!(
            h.nodes
                .iter()
                .any(|n| n.kind == TOOL_USE_KIND && n.content == tc[0].content)
        );
    }
}

fn transcript() -> Trace {
    let call = render_tool(
        "call_1",
        "python",
        Some(Semantics::Cell),
        "total = 18 / 3 + 5\ntotal",
        "11.0",
    )
    .unwrap();
    let call2 = render_tool(
        "call_2",
        "python",
        Some(Semantics::Cell),
        "total * 3",
        "33.0",
    )
    .unwrap();
    let system = render_message("system", "Solve step by step.").unwrap();
    let hidden = render_redacted("opaque").unwrap();
    Trace {
        problem: "$18 is shared among 3 boys; the eldest adds $5 and then triples it. How much?"
            .into(),
        thinking: format!(
            "{system}\nFirst the share plus the gift.\n{call}\nHe has $11 after the gift.\n{hidden}\nNow triple it.\n{call2}\nHe ends with $33."
        ),
        output: "He has \\(\\boxed{33}\\) dollars.".into(),
    }
}

/// A marked transcript: each call is `TC`/`TU`, statements using a result rest on it, a
/// worded one has its restatement checked against it, the answer rests on the last call
/// and its use, and messages and redacted reasoning are no segments.
#[test]
fn a_marked_transcript_is_cut_by_its_blocks() {
    let t = transcript();
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let ids: Vec<&str> = h.nodes.iter().map(|n| n.id.as_str()).collect();
    for id in ["TC1", "TU1", "TC2", "TU2", "F1"] {
        assert!(ids.contains(&id), "{id} in {ids:?}");
    }
    // The system message is a given like the problem; the redacted reasoning is nothing.
    let given: Vec<&str> = h
        .nodes
        .iter()
        .filter(|n| n.kind == PROBLEM_KIND)
        .map(|n| n.content.as_str())
        .collect();
    assert_eq!(given, vec![t.problem.as_str(), "Solve step by step."]);
    assert!(
        h.nodes
            .iter()
            .all(|n| n.kind == PROBLEM_KIND || !n.content.contains("Solve step by step")),
        "{:#?}",
        h.nodes
    );
    assert!(h.nodes.iter().all(|n| !n.content.contains("opaque")));
    let r = crate::session::prepare::restrict(&h, |_| true);
    assert!(r.hdag.nodes.iter().all(|n| n.kind != PROBLEM_KIND));
    assert!(r.givens["TC1"].contains(&"Solve step by step.".to_string()));
    let depends = |from: &str, to: &str| {
        h.edges
            .iter()
            .any(|e| e.relationship == Relationship::DependsOn && e.from == from && e.to == to)
    };
    let said = h
        .nodes
        .iter()
        .find(|n| n.content == "He has $11 after the gift.")
        .expect("the statement");
    assert!(
        depends(&said.id, "TC1") && depends(&said.id, "TU1"),
        "{:?}",
        h.edges
    );
    // The second cell replays the first: it rests on it.
    assert!(depends("TC2", "TC1"));
    assert!(depends("TU2", "TU1") && depends("TU2", &said.id));
    assert!(depends("F1", "TC2") && depends("F1", "TU2"));
    // The statement's restatement, checked by the Computer tier against TC1.
    let checks = supported_steps(&h);
    let rs: Vec<_> = h
        .nodes
        .iter()
        .enumerate()
        .filter(|(_, n)| n.kind == RESTATEMENT_KIND)
        .collect();
    assert!(
        rs.iter().any(
            |(i, n)| checks.get(i).map(|s| &h.nodes[*s].id) == Some(&said.id)
                && depends(&n.id, "TC1")
        ),
        "{rs:?}"
    );
    assert!(
        rs.iter()
            .all(|(_, n)| n.primary_auditor == AuditorType::Auto)
    );
    // The preview: the calls abstain without a sandbox, the restatements hold, and the
    // trace does not pass on the Computer tier alone.
    let p = preview(&t, &h);
    for s in &p.segments {
        match s.id.get(..2) {
            Some("TC") => assert_eq!(s.decision.as_ref().map(|d| d.vote), Some(Vote::Abstain)),
            Some("RS") => assert_eq!(
                s.decision.as_ref().map(|d| d.vote),
                Some(Vote::Valid),
                "{}: {:?}",
                s.id,
                s.decision
            ),
            _ => {}
        }
    }
    assert_ne!(
        p.trace.verdict,
        trust_contracts::TraceVerdict::Pass,
        "{}",
        p.summary()
    );
}

/// The builder's own HDAG of a transcript, submitted as a provider's, is accepted as it
/// is (its tool segments in order, its restatements routed to the Computer tier).
#[test]
fn the_builder_s_hdag_passes_as_a_provider_s() {
    let t = transcript();
    let h = decompose(&t, &Options::default()).unwrap();
    let json = serde_json::to_string(&h).unwrap();
    let back = crate::decompose::from_provider(&t, &json).expect("accepted");
    assert_eq!(back.nodes.len(), h.nodes.len());
}

/// A restatement that states another value than the result fails the trace, through the
/// statement it belongs to and what rests on it. ($17: no two numbers at hand make it; $13
/// would be 18 − 5, which a sentence may work out on its own, and gets no verdict.)
#[test]
fn a_misstated_result_fails_the_trace() {
    let t = transcript();
    let t = Trace {
        thinking: t
            .thinking
            .replace("He has $11 after the gift.", "He has $17 after the gift."),
        ..t
    };
    let h = decompose(&t, &Options::default()).unwrap();
    let p = preview(&t, &h);
    assert_eq!(
        p.trace.verdict,
        trust_contracts::TraceVerdict::Fail,
        "{}",
        p.summary()
    );
}

/// Broken markers are a clear error, not a guess.
#[test]
fn broken_markers_are_refused() {
    let t = trace("<<<result id=call_9>>>\n3\n<<<end id=call_9>>>");
    let e = decompose(&t, &Options::default()).unwrap_err();
    assert!(matches!(e, DecomposeError::Blocks(_)), "{e}");
}

/// The paper's LLM decomposition of a transcript, post-processed: a segment the model cut
/// out of a call's code is dropped, each call becomes its `TC` and `TU`, and a later
/// statement of a result rests on its call.
#[test]
fn an_llm_decomposition_gets_its_tool_segments() {
    let t = transcript();
    let mut h: Hdag = serde_json::from_value(serde_json::json!({
        "nodes": [
            {"id": "G1", "content": t.problem, "abstraction_level": "GOAL", "primary_auditor": "T_Human"},
            {"id": "O1", "content": "total = 18 / 3 + 5", "abstraction_level": "OPERATION", "primary_auditor": "T_Auto"},
            {"id": "S1", "content": "He has $11 after the gift.", "abstraction_level": "STEP", "primary_auditor": "T_LLM"},
            {"id": "F1", "content": t.output, "abstraction_level": "STEP", "type": "conclusion", "primary_auditor": "T_LLM"},
        ],
        "edges": [
            {"from": "S1", "to": "O1", "relationship": "depends_on"},
            {"from": "F1", "to": "S1", "relationship": "depends_on"},
        ]
    }))
    .unwrap();
    let notes = crate::decompose::enforce_tools(&mut h, &t);
    assert!(notes.iter().any(|n| n.contains("O1")), "{notes:?}");
    h.validate().expect("valid");
    h.validate_spans(&t).expect("spans");
    let ids: Vec<&str> = h.nodes.iter().map(|n| n.id.as_str()).collect();
    assert!(!ids.contains(&"O1"), "{ids:?}");
    for id in ["TC1", "TU1", "TC2", "TU2"] {
        assert!(ids.contains(&id), "{id}: {ids:?}");
    }
    let depends = |from: &str, to: &str| {
        h.edges
            .iter()
            .any(|e| e.relationship == Relationship::DependsOn && e.from == from && e.to == to)
    };
    assert!(depends("S1", "TC1") && depends("TC2", "TC1") && depends("F1", "TU2"));
    // The same HDAG from a provider is accepted; one whose calls are out of order, or
    // that gives a call no segment, is refused.
    let json = serde_json::to_string(&h).unwrap();
    assert!(crate::decompose::from_provider(&t, &json).is_ok());
    let mut swapped = h.clone();
    let (a, b) = (
        swapped.nodes.iter().position(|n| n.id == "TC1").unwrap(),
        swapped.nodes.iter().position(|n| n.id == "TC2").unwrap(),
    );
    swapped.nodes.swap(a, b);
    let e =
        crate::decompose::from_provider(&t, &serde_json::to_string(&swapped).unwrap()).unwrap_err();
    assert!(e.to_string().contains("not in trace order"), "{e}");
    let mut missing = h.clone();
    missing.nodes.retain(|n| n.id != "TC2");
    missing.edges.retain(|e| e.from != "TC2" && e.to != "TC2");
    let e =
        crate::decompose::from_provider(&t, &serde_json::to_string(&missing).unwrap()).unwrap_err();
    assert!(e.to_string().contains("has no segment of its own"), "{e}");
}

/// A number a later user turn gives grounds the steps that use it: the turn is a given
/// like the problem, so a right calculation on it is never called ungrounded.
#[test]
fn a_later_user_turn_grounds_the_steps_that_use_it() {
    let turn = render_message("user", "Each box holds 17 apples, and there are 23 boxes.").unwrap();
    let t = Trace {
        problem: "How many apples are there in all?".into(),
        thinking: format!("I need the sizes first.\n{turn}\nSo there are 17 × 23 = 391 apples."),
        output: "391 apples.".into(),
    };
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let p = preview(&t, &h);
    let calc = p
        .segments
        .iter()
        .find(|s| s.content.contains("17 × 23 = 391") && s.decision.is_some())
        .expect("the calculation is judged");
    assert_eq!(
        calc.decision.as_ref().map(|d| d.vote),
        Some(Vote::Valid),
        "{}",
        p.summary()
    );
    assert_ne!(
        p.trace.verdict,
        trust_contracts::TraceVerdict::Fail,
        "{}",
        p.summary()
    );
}
