//! Traces and HDAG JSON as providers submit them: `Trace::parse` (JSON, plain text with the
//! paper's headings, or an agent transcript in any format it detects), the heuristic decomposer on the parsed trace (the node's
//! default path), and `decompose::from_provider` on a provider-supplied HDAG (`Hdag::from_json`,
//! then every segment checked to be a span of the trace).
//!
//! Input: the trace text, optionally followed by a NUL byte and HDAG JSON. Properties:
//! no panic; a parsed trace respects the size limits (the input's, the trace's) and has three
//! non-empty parts whose marker blocks read, and as JSON parses back to itself; an HDAG (built or supplied) stays within the node, edge and
//! segment limits, validates, spans the trace, and its JSON parses back to an equal HDAG.
use trust_judging::decompose::{self, Options};
use trust_protocol::{
    hdag::{Hdag, MAX_EDGES, MAX_HDAG_JSON_BYTES, MAX_NODES, MAX_SEGMENT_BYTES},
    trace::{MAX_TRACE_BYTES, MAX_TRANSCRIPT_BYTES, Trace, blocks},
};

fn check_hdag(hdag: &Hdag, trace: &Trace) {
    assert!(hdag.nodes.len() <= MAX_NODES);
    assert!(hdag.edges.len() <= MAX_EDGES);
    assert!(
        hdag.nodes
            .iter()
            .all(|n| n.content.len() <= MAX_SEGMENT_BYTES)
    );
    assert_eq!(hdag.validate(), Ok(()));
    assert_eq!(hdag.validate_spans(trace), Ok(()));
    let json = serde_json::to_string(hdag).expect("an HDAG serialises");
    if json.len() <= MAX_HDAG_JSON_BYTES {
        let back = Hdag::from_json(&json).expect("its own JSON parses");
        assert_eq!(&back, hdag);
    }
    assert!(decompose::dependency_order(hdag).len() <= hdag.nodes.len());
}

/// One input, as the fuzzer (and the seed replay test) gives it.
pub(crate) fn check(data: &[u8]) {
    let (trace_bytes, hdag_bytes) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let Ok(text) = std::str::from_utf8(trace_bytes) else {
        return;
    };
    let Ok(trace) = Trace::parse(text) else {
        return;
    };
    assert!(text.len() <= MAX_TRANSCRIPT_BYTES);
    assert!(trace.problem.len() + trace.thinking.len() + trace.output.len() <= MAX_TRACE_BYTES);
    for part in [&trace.problem, &trace.thinking, &trace.output] {
        assert!(!part.trim().is_empty());
    }
    assert!(blocks(&trace.thinking).is_ok());
    let json = serde_json::to_string(&trace).expect("a trace serialises");
    if json.len() <= MAX_TRACE_BYTES {
        assert_eq!(Trace::parse(&json).as_ref(), Ok(&trace));
    }

    match hdag_bytes.map(std::str::from_utf8) {
        Some(Ok(hdag_json)) => {
            if let Ok(hdag) = decompose::from_provider(&trace, hdag_json) {
                assert!(hdag_json.len() <= MAX_HDAG_JSON_BYTES);
                check_hdag(&hdag, &trace);
            }
        }
        Some(Err(_)) => {}
        None => {
            let high_stakes = trace.problem.len() % 2 == 1;
            if let Ok(hdag) = decompose::decompose(&trace, &Options { high_stakes }) {
                check_hdag(&hdag, &trace);
            }
        }
    }
}
