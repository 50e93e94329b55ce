//! Reasoning traces as providers submit them.
//!
//! Two input forms are accepted: JSON `{"problem", "thinking", "output"}`, or plain text
//! with the paper's headings `## Problem Statement`, `## Thinking Process` and
//! `## Final Output` (in that order, each once).
//!
//! Tool calls, messages from other parties and redacted reasoning live inside `thinking` as
//! marker-line blocks; [`blocks`](mod@blocks) reads and renders them.

use serde::{Deserialize, Serialize};

pub mod blocks;

pub use blocks::{
    Block, BlockError, Semantics, ToolCall, UnknownSemantics, blocks, has_markers, render_message,
    render_redacted, render_tool,
};

/// Largest trace accepted, in bytes (all three parts together).
pub const MAX_TRACE_BYTES: usize = 1024 * 1024;

/// A reasoning trace: the problem, the model's thinking, and its final output.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trace {
    /// The problem statement given to the model.
    pub problem: String,
    /// The model's reasoning.
    pub thinking: String,
    /// The model's final answer.
    pub output: String,
}

/// Why a trace file was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TraceError {
    /// The input is larger than [`MAX_TRACE_BYTES`].
    #[error("trace of {len} bytes exceeds the limit of {max} bytes")]
    TooLarge {
        /// Input length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// JSON that is not a `{problem, thinking, output}` object.
    #[error("malformed trace JSON: {0}")]
    Json(String),
    /// A required heading is missing from a plain-text trace.
    #[error(
        "missing heading \"{0}\" (plain-text traces need ## Problem Statement, ## Thinking Process and ## Final Output)"
    )]
    MissingHeading(&'static str),
    /// A heading appears twice or out of order.
    #[error("heading \"{0}\" appears more than once or out of order")]
    MisplacedHeading(&'static str),
    /// A part of the trace is empty.
    #[error("the {0} part of the trace is empty")]
    EmptyPart(&'static str),
}

const HEADINGS: [(&str, &str); 3] = [
    ("## Problem Statement", "problem"),
    ("## Thinking Process", "thinking"),
    ("## Final Output", "output"),
];

impl Trace {
    /// Parses a trace from JSON or heading-structured plain text (detected by the first
    /// non-blank character: `{` means JSON).
    pub fn parse(input: &str) -> Result<Trace, TraceError> {
        if input.len() > MAX_TRACE_BYTES {
            return Err(TraceError::TooLarge {
                len: input.len(),
                max: MAX_TRACE_BYTES,
            });
        }
        let trace = if input.trim_start().starts_with('{') {
            serde_json::from_str::<Trace>(input).map_err(|e| TraceError::Json(e.to_string()))?
        } else {
            Self::parse_text(input)?
        };
        for (part, name) in [
            (&trace.problem, "problem"),
            (&trace.thinking, "thinking"),
            (&trace.output, "output"),
        ] {
            if part.trim().is_empty() {
                return Err(TraceError::EmptyPart(name));
            }
        }
        Ok(trace)
    }

    fn parse_text(input: &str) -> Result<Trace, TraceError> {
        // Byte offsets of each heading line's start and the start of its body.
        let mut found: [Option<(usize, usize)>; 3] = [None; 3];
        let mut offset = 0usize;
        let mut last = None::<usize>;
        for line in input.split_inclusive('\n') {
            let start = offset;
            offset = offset.saturating_add(line.len());
            // The paper's own example writes the headings with a trailing colon.
            let trimmed = line.trim().trim_end_matches(':').trim_end();
            for (i, (heading, _)) in HEADINGS.iter().enumerate() {
                if trimmed.eq_ignore_ascii_case(heading) {
                    let misplaced =
                        found.get(i).is_some_and(Option::is_some) || last.is_some_and(|l| l >= i);
                    if misplaced {
                        return Err(TraceError::MisplacedHeading(heading));
                    }
                    if let Some(slot) = found.get_mut(i) {
                        *slot = Some((start, offset));
                    }
                    last = Some(i);
                }
            }
        }
        let mut bodies: [String; 3] = Default::default();
        for i in 0..3 {
            let heading = HEADINGS.get(i).map(|h| h.0).unwrap_or("");
            let (_, body_start) = found
                .get(i)
                .copied()
                .flatten()
                .ok_or(TraceError::MissingHeading(heading))?;
            let body_end = found
                .get(i.saturating_add(1))
                .copied()
                .flatten()
                .map(|(s, _)| s)
                .unwrap_or(input.len());
            let body = input.get(body_start..body_end).unwrap_or("");
            if let Some(b) = bodies.get_mut(i) {
                *b = body.trim().to_string();
            }
        }
        let [problem, thinking, output] = bodies;
        Ok(Trace {
            problem,
            thinking,
            output,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_with_headings() {
        let t = Trace::parse(
            "## Problem Statement\nWhat is 2+2?\n\n## Thinking Process\n2 + 2 = 4\n## Final Output\n4\n",
        )
        .expect("parses");
        assert_eq!(t.problem, "What is 2+2?");
        assert_eq!(t.thinking, "2 + 2 = 4");
        assert_eq!(t.output, "4");
        let colon =
            Trace::parse("## Problem Statement:\np\n## Thinking Process:\nt\n## Final Output:\no")
                .expect("headings with a colon parse");
        assert_eq!((colon.problem.as_str(), colon.output.as_str()), ("p", "o"));
    }

    #[test]
    fn json_form() {
        let t = Trace::parse(r#"{"problem":"p","thinking":"t","output":"o"}"#).expect("parses");
        assert_eq!(t.thinking, "t");
        assert!(matches!(
            Trace::parse(r#"{"problem":"p","thinking":"t"}"#),
            Err(TraceError::Json(m)) if m.contains("output")
        ));
    }

    #[test]
    fn broken_inputs_are_named() {
        assert_eq!(
            Trace::parse("## Problem Statement\nx\n## Final Output\ny"),
            Err(TraceError::MissingHeading("## Thinking Process"))
        );
        assert_eq!(
            Trace::parse("## Thinking Process\na\n## Problem Statement\nb\n## Final Output\nc"),
            Err(TraceError::MisplacedHeading("## Problem Statement"))
        );
        assert_eq!(
            Trace::parse("## Problem Statement\nx\n## Thinking Process\n \n## Final Output\ny"),
            Err(TraceError::EmptyPart("thinking"))
        );
        assert!(matches!(
            Trace::parse(&"x".repeat(MAX_TRACE_BYTES + 1)),
            Err(TraceError::TooLarge { .. })
        ));
    }
}
