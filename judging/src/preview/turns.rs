//! The turns of an agent transcript (issue 54), for people to read a trace's verdicts by:
//! the reasoning between tool calls, each tool call with its reported result, and the
//! messages of other parties, in the order the transcript holds them.
//!
//! A transcript read from a chat format keeps its tool calls and later messages as
//! marker blocks in the thinking ([`trust_protocol::trace::blocks`]), so each turn is a
//! byte range of the thinking, and a segment belongs to the turn its text starts in. The
//! problem and the final answer are turns of their own. A trace without marker blocks
//! has no turns: its steps are shown as before.

use serde::{Deserialize, Serialize};
use trust_protocol::trace::blocks::{self, Block};

/// One turn of the transcript: what it is, and the bytes of the thinking it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Turn {
    /// What a person reads as its heading: `assistant`, `tool call c1: python`, `user`,
    /// `redacted reasoning`.
    pub label: String,
    /// First byte of the turn in the thinking.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
}

/// The heading of the problem statement's turn.
pub const PROBLEM: &str = "problem";
/// The heading of the final answer's turn.
pub const ANSWER: &str = "answer";

/// The turns of `thinking`, in order; empty for a trace that is no transcript (no marker
/// blocks, or marker lines that do not read).
pub fn turns(thinking: &str) -> Vec<Turn> {
    if !blocks::has_markers(thinking) {
        return Vec::new();
    }
    let Ok(list) = blocks::blocks(thinking) else {
        return Vec::new();
    };
    list.iter()
        .map(|b| {
            let span = b.span();
            Turn {
                label: label(b),
                start: span.start,
                end: span.end,
            }
        })
        .collect()
}

fn label(b: &Block) -> String {
    match b {
        Block::Text(_) => "assistant".into(),
        Block::Tool(call) => format!("tool call {}: {}", call.id, call.name),
        Block::Message { role, .. } => role.clone(),
        Block::Redacted { .. } => "redacted reasoning".into(),
    }
}

/// The heading of the turn a text starting at byte `start` of `part` (`problem`,
/// `thinking` or `output`) belongs to; `None` when `turns` is empty (no transcript) or no
/// turn holds it.
pub fn turn_of(turns: &[Turn], part: &str, start: usize) -> Option<String> {
    if turns.is_empty() {
        return None;
    }
    match part {
        "problem" => Some(PROBLEM.into()),
        "thinking" => turns
            .iter()
            .find(|t| t.start <= start && start < t.end)
            .map(|t| t.label.clone()),
        _ => Some(ANSWER.into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const THINKING: &str = "Let me compute 6 * 7 with code.\n<<<tool id=c1 name=python semantics=script>>>\nprint(6 * 7)\n<<<result id=c1>>>\n42\n<<<end id=c1>>>\n<<<message role=user>>>\nAnd doubled?\n<<<end message>>>\nDoubled it is 84.\n";

    /// Each block of a transcript is a turn, in order, covering the thinking without gaps
    /// or overlaps; a text belongs to the turn it starts in.
    #[test]
    fn a_transcript_reads_as_its_turns() {
        let t = turns(THINKING);
        let labels: Vec<&str> = t.iter().map(|x| x.label.as_str()).collect();
        assert_eq!(
            labels,
            ["assistant", "tool call c1: python", "user", "assistant"]
        );
        for pair in t.windows(2) {
            assert!(pair[0].end <= pair[1].start, "{pair:?}");
        }
        let at = |needle: &str| THINKING.find(needle).expect("in the thinking");
        assert_eq!(
            turn_of(&t, "thinking", at("print(6 * 7)")).as_deref(),
            Some("tool call c1: python")
        );
        assert_eq!(
            turn_of(&t, "thinking", at("Doubled it")).as_deref(),
            Some("assistant")
        );
        assert_eq!(turn_of(&t, "problem", 0).as_deref(), Some(PROBLEM));
        assert_eq!(turn_of(&t, "output", 0).as_deref(), Some(ANSWER));
    }

    /// A plain trace has no turns, and nothing is labelled.
    #[test]
    fn a_plain_trace_has_no_turns() {
        let t = turns("First, 2 + 2 = 4.\nSo the answer is 4.");
        assert!(t.is_empty());
        assert_eq!(turn_of(&t, "thinking", 3), None);
        assert_eq!(turn_of(&t, "output", 0), None);
    }
}
