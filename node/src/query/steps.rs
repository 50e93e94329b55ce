//! A provider's own steps apart from what its node planted, in the order the trace reads.
//!
//! The provider's node keeps every segment it opened under a name (its [`StepView`]s, in
//! outcome order: session segments in manifest order, then the left-out ones). Among them
//! are the honeypots it planted (`honeypot:<node>`) and the calculation planted beside a
//! worded honeypot (`calculation-of-honeypot:<node>`, an OPERATION supporting one): none
//! of them is the model's. [`split`] parts them, so that whoever reads `steps` reads the
//! model's own steps only, in the order the trace holds them, and the planted ones apart.

use std::cmp::Reverse;

use trust_contracts::Outcome;

use crate::audit::provider::{HONEYPOT_PREFIX, StepView, TraceSpan};

/// The name a planted calculation carries: `calculation-of-` and the honeypot's name.
const PLANTED_CALCULATION: &str = "calculation-of-";

/// Whether a provider's segment name marks something its node planted: a honeypot
/// (`honeypot:<node>`) or the calculation planted beside one
/// (`calculation-of-honeypot:<node>`).
pub fn planted_name(name: &str) -> bool {
    name.starts_with(HONEYPOT_PREFIX)
        || name
            .strip_prefix(PLANTED_CALCULATION)
            .is_some_and(|n| n.starts_with(HONEYPOT_PREFIX))
}

/// The model's own steps and the planted ones, apart.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The model's own steps, in trace order (see [`split`]).
    pub steps: Vec<StepView>,
    /// What the node planted (honeypots and the calculations beside them), in outcome
    /// order.
    pub honeypots: Vec<StepView>,
}

/// Where a text sits: part (problem, thinking, output), first byte, and enclosing spans
/// before the spans they enclose (a TACTIC before its STEPs).
type Place = (u8, usize, Reverse<usize>);

fn place(span: &TraceSpan) -> Place {
    let part = match span.part.as_str() {
        "problem" => 0,
        "thinking" => 1,
        _ => 2,
    };
    (part, span.start, Reverse(span.end))
}

/// Parts `all` (one provider's steps of one session, in outcome order) into the model's
/// own steps and what its node planted. Planted: a name [`planted_name`] marks, a segment
/// `planted_at` says the outcome opened as a honeypot, or a calculation whose `supports`
/// (the segment it checks, per session segment) is planted.
///
/// The model's steps come in trace order: by where their text first sits in the trace
/// (problem, thinking, output; an enclosing text before what it encloses). A step whose
/// text the trace does not hold verbatim goes right after the step it checks (an
/// OPERATION after its STEP), or else right after the step before it in outcome order;
/// ties keep outcome order.
pub fn split(
    all: Vec<StepView>,
    supports: &[Option<u16>],
    planted_at: &dyn Fn(usize) -> bool,
) -> Split {
    let named_planted = |i: usize| {
        planted_at(i)
            || all
                .iter()
                .find(|s| s.index == i)
                .is_some_and(|s| planted_name(&s.name))
    };
    let planted = |s: &StepView| {
        named_planted(s.index)
            || supports
                .get(s.index)
                .copied()
                .flatten()
                .is_some_and(|t| named_planted(usize::from(t)))
    };
    let (honeypots, own): (Vec<StepView>, Vec<StepView>) =
        all.iter().cloned().partition(|s| planted(s));
    // Each step's place: its own span's, else the place of the step it checks, else the
    // place of the step before it (outcome order).
    let own_place = |i: usize| {
        own.iter()
            .find(|s| s.index == i)
            .and_then(|s| s.span.as_ref())
            .map(place)
    };
    let mut last: Place = (0, 0, Reverse(0));
    let mut keyed: Vec<((Place, u8), StepView)> = own
        .iter()
        .map(|s| {
            let key = match s.span.as_ref().map(place) {
                Some(p) => (p, 0),
                None => {
                    let of = supports
                        .get(s.index)
                        .copied()
                        .flatten()
                        .and_then(|t| own_place(usize::from(t)));
                    (of.unwrap_or(last), 1)
                }
            };
            last = key.0;
            (key, s.clone())
        })
        .collect();
    keyed.sort_by_key(|(k, _)| *k);
    // In a transcript, a step placed by another's place (an OPERATION after its STEP)
    // sits in that step's turn.
    let mut turn: Option<String> = None;
    let steps = keyed
        .into_iter()
        .map(|(_, mut s)| {
            match &s.turn {
                Some(t) => turn = Some(t.clone()),
                None if s.span.is_none() => s.turn.clone_from(&turn),
                None => {}
            }
            s
        })
        .collect();
    Split {
        steps,
        honeypots: honeypots
            .into_iter()
            .map(|s| StepView {
                honeypot: true,
                ..s
            })
            .collect(),
    }
}

/// A step's text as lines a person reads: a tool call (its `TC` segment, whose text is the
/// transcript's marker block) as its code and then `→` and the result the transcript
/// reports; the `TU` claim beside it as the question it asks, then the code; any other
/// text as it is.
pub fn readable_lines(name: &str, text: &str) -> Vec<String> {
    let Some(t) = trust_judging::computer::tool::read_tool(text) else {
        return text.lines().map(str::to_string).collect();
    };
    let mut out = Vec::new();
    if name.starts_with("TU") {
        out.push(format!("does {} compute what is asked?", t.name));
        out.extend(t.input.lines().map(|l| format!("  {l}")));
    } else {
        out.extend(t.input.lines().map(str::to_string));
        let mut result = t.result.lines();
        out.push(format!("→ {}", result.next().unwrap_or("")));
        out.extend(result.map(|l| format!("  {l}")));
    }
    out
}

/// [`readable_lines`] of a step, with what its provider's node got re-running it when it
/// is a tool call (`re-run here: …`, see [`StepView::rerun`]).
pub fn step_lines(x: &StepView) -> Vec<String> {
    shown_lines(&x.name, &x.text, x.rerun.as_deref())
}

/// [`readable_lines`] of `name`'s `text`, then `rerun` (what the provider's node got
/// re-running it) as `re-run here: …`.
pub fn shown_lines(name: &str, text: &str, rerun: Option<&str>) -> Vec<String> {
    let mut out = readable_lines(name, text);
    if let Some(r) = rerun {
        let mut lines = r.lines();
        out.push(format!("re-run here: {}", lines.next().unwrap_or("")));
        out.extend(lines.map(|l| format!("  {l}")));
    }
    out
}

/// What [`split`] needs of a decided outcome: each segment's `supports`, and which ones
/// it opened as planted (a revealed honeypot, or the calculation beside one).
pub fn of_outcome(o: &Outcome) -> (Vec<Option<u16>>, impl Fn(usize) -> bool + '_) {
    (o.segments.iter().map(|g| g.supports).collect(), move |i| {
        super::planted(o, i)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(index: usize, name: &str, span: Option<(&str, usize, usize)>) -> StepView {
        StepView {
            index,
            name: name.into(),
            tier: "computer".into(),
            text: format!("text of {name}"),
            span: span.map(|(part, start, end)| TraceSpan {
                part: part.into(),
                start,
                end,
                line: 1,
            }),
            verdict: None,
            honeypot: name.starts_with(HONEYPOT_PREFIX),
            left_out: false,
            turn: None,
            rerun: None,
        }
    }

    fn names(v: &[StepView]) -> Vec<&str> {
        v.iter().map(|s| s.name.as_str()).collect()
    }

    /// Issue 56: the honeypots planted between the model's steps, and the calculation
    /// planted beside a worded one, leave `steps`; what remains reads in trace order.
    #[test]
    fn planted_segments_leave_the_steps_which_read_in_trace_order() {
        let all = vec![
            step(0, "ST1", Some(("thinking", 3, 25))),
            step(1, "honeypot:O2", None),
            step(2, "O2", Some(("thinking", 87, 112))),
            step(3, "O1", Some(("thinking", 60, 80))),
            step(4, "calculation-of-honeypot:ST3", None),
            step(5, "O3", None),
            step(6, "F1", Some(("output", 0, 5))),
            step(7, "T1", Some(("thinking", 0, 140))),
            step(8, "P0", Some(("problem", 0, 10))),
        ];
        // O3 checks O1; the planted calculation checks segment 1, a honeypot.
        let supports = [None, None, None, None, Some(1), Some(3), None, None, None];
        let s = split(all, &supports, &|_| false);
        assert_eq!(
            names(&s.steps),
            ["P0", "T1", "ST1", "O1", "O3", "O2", "F1"],
            "problem, then the thinking (a tactic before its steps, a calculation after \
             the step it checks), then the output"
        );
        assert_eq!(
            names(&s.honeypots),
            ["honeypot:O2", "calculation-of-honeypot:ST3"]
        );
        assert!(s.honeypots.iter().all(|h| h.honeypot));
        assert!(s.steps.iter().all(|h| !h.honeypot));
    }

    /// A segment the outcome opened as a honeypot is planted whatever its name says, and
    /// so is the calculation beside it; a step with no span and nothing it checks stays
    /// after the step before it.
    #[test]
    fn the_outcome_says_what_was_planted_too() {
        let all = vec![
            step(0, "A", Some(("thinking", 10, 20))),
            step(1, "B", None),
            step(2, "C", Some(("thinking", 0, 5))),
            step(3, "X", Some(("thinking", 30, 35))),
            step(4, "Y", None),
        ];
        let supports = [None, None, None, None, Some(3)];
        let s = split(all, &supports, &|i| i == 3);
        assert_eq!(names(&s.steps), ["C", "A", "B"]);
        assert_eq!(names(&s.honeypots), ["X", "Y"]);
    }

    /// Issue 54: in a transcript, a step with no span of its own (a calculation after the
    /// step it checks) sits in that step's turn; a plain trace's steps have none.
    #[test]
    fn a_step_without_a_span_sits_in_the_turn_of_the_step_before_it() {
        let mut all = vec![
            step(0, "ST1", Some(("thinking", 0, 10))),
            step(1, "O1", None),
            step(2, "TC1", Some(("thinking", 20, 60))),
        ];
        all[0].turn = Some("assistant".into());
        all[2].turn = Some("tool call c1: python".into());
        let s = split(all.clone(), &[None, Some(0), None], &|_| false);
        let turns: Vec<Option<&str>> = s.steps.iter().map(|x| x.turn.as_deref()).collect();
        assert_eq!(
            turns,
            [
                Some("assistant"),
                Some("assistant"),
                Some("tool call c1: python")
            ]
        );
        for x in &mut all {
            x.turn = None;
        }
        let s = split(all, &[None, Some(0), None], &|_| false);
        assert!(s.steps.iter().all(|x| x.turn.is_none()));
    }

    /// A tool call's text reads as its code, then `→` and the result the transcript
    /// reports; its `TU` claim as the question it asks; other text as it is.
    #[test]
    fn a_tool_call_reads_as_code_and_reported_result() {
        let block = trust_protocol::trace::blocks::render_tool(
            "c1",
            "python",
            Some(trust_protocol::trace::blocks::Semantics::Script),
            "x = 6 * 7\nprint(x)",
            "42",
        )
        .expect("renders");
        assert_eq!(
            readable_lines("TC1", &block),
            ["x = 6 * 7", "print(x)", "→ 42"]
        );
        assert_eq!(
            readable_lines("TU1", &block),
            [
                "does python compute what is asked?",
                "  x = 6 * 7",
                "  print(x)"
            ]
        );
        assert_eq!(readable_lines("ST1", "a\nb"), ["a", "b"]);
    }

    #[test]
    fn only_planted_names_are_planted() {
        assert!(planted_name("honeypot:O2"));
        assert!(planted_name("calculation-of-honeypot:ST4"));
        assert!(!planted_name("calculation-of-ST4"));
        assert!(!planted_name("O2"));
        assert!(!planted_name("my-honeypot:x"));
    }
}
