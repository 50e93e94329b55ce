//! What a provider sees of its own trace in a session's outcome: each step under its
//! stable name (the HDAG node id, as `submit` printed it), its text verbatim, where it
//! sits in the submitted trace, and its verdict. Only the provider's node holds the text
//! and the names (its [`PageRecord`]); every other node sees blinded ids only.

use serde::{Deserialize, Serialize};
use trust_contracts::Outcome;
use trust_judging::preview::turns::turn_of;
use trust_protocol::{trace::Trace, tx::Tier};
use utoipa::ToSchema;

use super::PageRecord;

/// Where a step's text sits in the trace: a byte range of one of its parts (`problem`,
/// `thinking` or `output`, as the trace's JSON names them or its `##` headings head
/// them), and the 1-based line of that part where it starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TraceSpan {
    /// `problem`, `thinking` or `output`.
    pub part: String,
    /// First byte of the text in that part.
    pub start: usize,
    /// One past its last byte.
    pub end: usize,
    /// The line of the part (1-based) where it starts.
    pub line: u32,
}

/// The first place `content` appears in `trace` (problem, then thinking, then output);
/// `None` for an empty text or one the trace does not hold verbatim.
pub fn span_of(trace: &Trace, content: &str) -> Option<TraceSpan> {
    if content.is_empty() {
        return None;
    }
    [
        ("problem", &trace.problem),
        ("thinking", &trace.thinking),
        ("output", &trace.output),
    ]
    .into_iter()
    .find_map(|(part, text)| {
        let start = text.find(content)?;
        let line = text.get(..start)?.matches('\n').count().saturating_add(1);
        Some(TraceSpan {
            part: part.to_string(),
            start,
            end: start.saturating_add(content.len()),
            line: u32::try_from(line).unwrap_or(u32::MAX),
        })
    })
}

/// One step of the provider's own trace in a session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct StepView {
    /// Its place in the outcome: `outcome.segments[index]` for a segment of the session,
    /// then the left-out ones (`outcome.left_out[index - segments]`).
    pub index: usize,
    /// Its stable name: the HDAG node id (`ST1`, `O2`), `honeypot:<node>` for a planted
    /// honeypot. The same in `submit`, `query`, `proof verify` and the session page.
    pub name: String,
    /// The tier that judges it (`computer`, `llm`, `human`); for a left-out step, the tier
    /// it would have gone to.
    pub tier: String,
    /// Its text, verbatim and whole (for a session segment, the claim its seats read).
    pub text: String,
    /// Where it sits in the submitted trace; absent for a honeypot, and for a text the
    /// trace does not hold verbatim.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub span: Option<TraceSpan>,
    /// Its verdict (`valid`, `invalid`, `ungrounded`, `propagated`, `undecided`), once
    /// decided.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verdict: Option<String>,
    /// A honeypot this node planted: not part of the trace.
    pub honeypot: bool,
    /// Left out of the session (no auditors of its tier): counted as undecided.
    pub left_out: bool,
    /// For an agent transcript, the heading of the turn the step sits in (`assistant`,
    /// `tool call c1: python`, `user`, `problem`, `answer`; see
    /// [`trust_judging::preview::turns`]); absent for a plain trace.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub turn: Option<String>,
    /// For a tool call, what the provider's own node got re-running its code in its
    /// sandbox (the output, or why it was not re-run; see [`super::reruns`]): shown to the
    /// provider beside the result the transcript reports, never public.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rerun: Option<String>,
}

/// A tier as the API spells it.
pub fn tier_word(t: Tier) -> &'static str {
    match t {
        Tier::Computer => "computer",
        Tier::Llm => "llm",
        Tier::Human => "human",
    }
}

impl PageRecord {
    /// The steps of the session this record is of, with the verdicts of `outcome` when it
    /// is decided; `tiers` are the session segments' tiers in manifest order (from the
    /// ledger), and the left-out ones' follow from the record.
    pub fn steps(&self, tiers: &[Tier], outcome: Option<&Outcome>) -> Vec<StepView> {
        // The record holds the session's segments, then the left-out steps: it says where
        // the split is (a record written before it kept the left-out tiers: the ledger's
        // segment count does).
        let in_session = if self.left_out_tiers.is_empty() && !tiers.is_empty() {
            tiers.len()
        } else {
            self.nodes.len().saturating_sub(self.left_out_tiers.len())
        };
        self.nodes
            .iter()
            .zip(&self.texts)
            .enumerate()
            .map(|(i, (name, text))| {
                let left_out = i >= in_session;
                let verdict = outcome.and_then(|o| {
                    let v = match i.checked_sub(in_session) {
                        None => o.segments.get(i).map(|g| g.verdict),
                        Some(j) => o.left_out.get(j).map(|l| l.verdict),
                    }?;
                    Some(crate::feed::segment_verdict(v))
                });
                let tier = match i.checked_sub(in_session) {
                    None => tiers.get(i).copied(),
                    Some(j) => self.left_out_tiers.get(j).copied(),
                };
                let span = self.spans.get(i).cloned().flatten();
                StepView {
                    index: i,
                    name: name.clone(),
                    tier: tier.map_or("", tier_word).to_string(),
                    text: text.clone(),
                    turn: span
                        .as_ref()
                        .and_then(|sp| turn_of(&self.turns, &sp.part, sp.start)),
                    span,
                    verdict,
                    honeypot: name.starts_with(super::HONEYPOT_PREFIX),
                    left_out,
                    rerun: self.reruns.get(i).cloned().flatten(),
                }
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::hdag::AbstractionLevel;

    use super::*;

    fn trace() -> Trace {
        Trace {
            problem: "Solve 2x = 4.".into(),
            thinking: "First, divide.\nSo x = 2.\nCheck: 2*2 = 4.".into(),
            output: "x = 2".into(),
        }
    }

    /// A step's span is the byte range of its first occurrence, with its line, in the part
    /// that holds it; a text the trace does not hold has none.
    #[test]
    fn a_span_is_where_the_text_first_appears_in_its_part() {
        let t = trace();
        let s = span_of(&t, "So x = 2.").unwrap();
        assert_eq!(
            (s.part.as_str(), s.start, s.end, s.line),
            ("thinking", 15, 24, 2)
        );
        assert_eq!(t.thinking.get(s.start..s.end), Some("So x = 2."));
        let out = span_of(&t, "x = 2").unwrap();
        assert_eq!(out.part, "thinking", "the thinking holds it first");
        assert_eq!(span_of(&t, "Solve").unwrap().part, "problem");
        assert_eq!(span_of(&t, "x = 3"), None);
        assert_eq!(span_of(&t, ""), None);
    }

    /// A pending session (no tiers from the ledger yet) still tells its left-out steps
    /// from its segments: the record says where the split is.
    #[test]
    fn a_pending_sessions_steps_say_which_are_left_out() {
        let record = PageRecord {
            nodes: vec!["ST1".into(), "O1".into(), "F1".into()],
            texts: vec!["a".into(), "b".into(), "c".into()],
            left_out_levels: vec![AbstractionLevel::Step],
            decomposes: Vec::new(),
            problem: String::new(),
            proof: None,
            opening: None,
            spans: Vec::new(),
            left_out_tiers: vec![Tier::Llm],
            turns: Vec::new(),
            reruns: Vec::new(),
        };
        let left: Vec<bool> = record.steps(&[], None).iter().map(|x| x.left_out).collect();
        assert_eq!(left, [false, false, true]);
        let steps = record.steps(&[Tier::Computer, Tier::Computer], None);
        assert_eq!(steps[2].tier, "llm");
        assert!(!steps[1].left_out && steps[2].left_out);
    }
}
