//! The agent-transcript corpus (`../shared/corpus/agent-traces`, read in place, never
//! copied into the repository) judged as `trust-node check` judges it: the heuristic
//! decomposition, the Computer tier re-running tool calls in the real sandbox, no LLM tier.
//! Skipped, with a line saying so, when the corpus is not beside the repository.

use std::path::PathBuf;

use trust_judging::quality::agent::{AgentReport, Class, read_corpus, run_agents};
use trust_sandbox::{Config, Execute, Sandbox};

fn corpus_dir() -> Option<PathBuf> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared/corpus/agent-traces");
    dir.join("manifest.json").exists().then_some(dir)
}

fn judged(exec: Option<&dyn Execute>) -> Option<AgentReport> {
    let Some(dir) = corpus_dir() else {
        eprintln!("agent corpus not found beside the repository: skipped");
        return None;
    };
    let read = |name: &str| std::fs::read_to_string(dir.join(name)).ok();
    let items = read_corpus(
        &read("manifest.json").expect("manifest.json"),
        &read("sources.json").expect("sources.json"),
        read,
    )
    .expect("the corpus reads");
    assert_eq!(items.len(), 48);
    Some(run_agents(&items, exec))
}

fn print(r: &AgentReport) {
    for row in &r.rows {
        let votes = |list: &[trust_judging::quality::agent::Judged]| {
            list.iter()
                .map(|j| format!("{}:{}", j.id, j.vote.as_deref().unwrap_or("abstain")))
                .collect::<Vec<_>>()
                .join(" ")
        };
        eprintln!(
            "{} {:?} {} | {} | {}",
            row.name,
            row.class,
            row.verdict,
            votes(&row.tools),
            votes(&row.restatements)
        );
    }
    eprintln!("{}", serde_json::to_string(&r.table).unwrap_or_default());
}

/// Issue 54's "Done when", on the corpus, with the node's sandbox: no right transcript
/// FAILs and each has its tool calls and restatements Valid; no wrong one PASSes; each
/// edited tool output FAILs with its tool segment Invalid; each edited restatement FAILs;
/// at least 5 of the 7 misreads FAIL; buggy code never PASSes on re-runs alone.
#[test]
fn the_agent_corpus_through_check_with_the_sandbox() {
    let sandbox = match Sandbox::start(&Config::default()) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("the sandbox does not start here ({e}): the corpus is judged without it");
            let Some(r) = judged(None) else { return };
            print(&r);
            assert_eq!(r.table.right_failed, 0);
            assert_eq!(r.table.wrong_passed, 0);
            assert!(
                r.rows
                    .iter()
                    .all(|row| row.tools.iter().all(|j| j.vote.is_none()))
            );
            return;
        }
    };
    let Some(r) = judged(Some(&sandbox)) else {
        return;
    };
    print(&r);
    let t = &r.table;
    assert_eq!((t.right, t.wrong), (24, 24));
    assert_eq!(t.right_failed, 0, "a right transcript FAILs");
    assert_eq!(
        t.right_passed, 0,
        "no LLM tier: a right transcript cannot pass"
    );
    for row in r.rows.iter().filter(|row| row.class == Class::Right) {
        assert!(row.tools_valid(), "{}: {:?}", row.name, row.tools);
        assert!(
            row.restatements_valid(),
            "{}: {:?}",
            row.name,
            row.restatements
        );
        assert_eq!(row.verdict, "INCONCLUSIVE", "{}", row.summary);
    }
    assert_eq!(t.wrong_passed, 0, "a wrong transcript PASSes");
    assert_eq!(
        t.edited_tool,
        (6, 6),
        "edited tool outputs FAIL with their TC Invalid"
    );
    assert_eq!(t.edited_restatement, (4, 4), "edited restatements FAIL");
    assert_eq!(t.misread.0, 7);
    assert!(t.misread.1 >= 5, "misreads that FAIL: {}", t.misread.1);
    assert_eq!(t.buggy_code.1, 0, "buggy code PASSes");
}

/// Without a sandbox (a node that cannot start one) the tool segments abstain, nothing is
/// wrongly failed, and nothing passes.
#[test]
fn the_agent_corpus_without_a_sandbox() {
    let Some(r) = judged(None) else { return };
    assert_eq!(r.table.right_failed, 0);
    assert_eq!(r.table.wrong_passed, 0);
    for row in &r.rows {
        assert!(
            row.tools.iter().all(|j| j.vote.is_none()
                && j.reason == "no sandbox on this node: the tool call's code is not re-run"),
            "{}: {:?}",
            row.name,
            row.tools
        );
    }
}

/// A transcript whose call never ends, or reaches outside the sandbox: its tool segment
/// ends in an abstention within the sandbox's caps, never a vote (the provider-paid kind:
/// its code is at fault), and the whole check returns within a minute.
#[test]
fn a_hostile_call_ends_in_an_abstention_of_its_tool_segment() {
    use trust_judging::{
        decompose::{Options, decompose},
        preview::preview_with,
    };
    use trust_protocol::trace::Trace;
    let Ok(sandbox) = Sandbox::start(&Config::default()) else {
        eprintln!("the sandbox does not start here: skipped");
        return;
    };
    for code in [
        "while True:\n    pass",
        "import os\nprint(os.system('echo hi'))",
        "print(open('/etc/hostname').read())",
    ] {
        let transcript = serde_json::json!({"messages": [
            {"role": "user", "content": "What is 2 + 2?"},
            {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
                "function": {"name": "python", "arguments": serde_json::json!({"code": code}).to_string()}}]},
            {"role": "tool", "tool_call_id": "call_1", "content": "4"},
            {"role": "assistant", "content": "The answer is 4."}
        ]})
        .to_string();
        let t = Trace::parse(&transcript).expect("reads");
        let h = decompose(&t, &Options::default()).expect("decomposes");
        let started = std::time::Instant::now();
        let p = preview_with(&t, &h, Some(&sandbox));
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
        let tc = p.segments.iter().find(|s| s.id == "TC1").expect("TC1");
        let d = tc.decision.as_ref().expect("judged");
        // The provider's code is at fault: the abstention the provider pays for.
        assert_eq!(
            d.vote,
            trust_protocol::Vote::PayloadAbstain,
            "{code}: {}",
            d.reason
        );
        assert!(d.reason.contains("CPython"), "{}", d.reason);
        assert_ne!(
            p.trace.verdict,
            trust_contracts::TraceVerdict::Fail,
            "{}",
            p.summary()
        );
    }
}
