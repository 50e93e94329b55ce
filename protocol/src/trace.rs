//! Reasoning traces as providers submit them.
//!
//! A trace is `{problem, thinking, output}`. It is read from the network's own two forms,
//! JSON `{"problem", "thinking", "output"}` or plain text with the paper's headings
//! `## Problem Statement`, `## Thinking Process` and `## Final Output` (in that order, each
//! once), or from the transcripts providers already hold ([`Format`]): OpenAI Chat
//! Completions messages, OpenAI Responses items, Anthropic Messages, `<think>` text and
//! OpenTelemetry spans. [`Trace::parse`] detects the format; [`Trace::read`] can force one.
//!
//! Tool calls, messages from other parties and redacted reasoning live inside `thinking` as
//! marker-line blocks; [`blocks`](mod@blocks) reads and renders them, and the transcript
//! readers write them (the mapping rules are in `formats`'s module docs and in the book's
//! "Agent transcripts" page).

use std::{fmt, str::FromStr};

use serde::{Deserialize, Serialize};

pub mod blocks;
mod formats;

pub use blocks::{
    Block, BlockError, Semantics, ToolCall, UnknownSemantics, blocks, has_markers, render_message,
    render_redacted, render_tool,
};
pub use formats::TranscriptError;

/// Largest trace accepted, in bytes (all three parts together, as read).
pub const MAX_TRACE_BYTES: usize = 1024 * 1024;

/// Largest transcript read, in bytes: a transcript repeats and wraps its content, so it may
/// be larger than the trace read from it (which must still fit [`MAX_TRACE_BYTES`]).
pub const MAX_TRANSCRIPT_BYTES: usize = 4 * 1024 * 1024;

/// An input format [`Trace::read`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    /// OpenAI Chat Completions messages (`{"messages": [...]}` or a bare list).
    Chat,
    /// OpenAI Responses items (a list, or `{"input", "output"}`).
    Responses,
    /// Anthropic Messages (`{"system", "messages"}` or a bare list).
    Anthropic,
    /// `<think>...</think>` text.
    Think,
    /// An OpenTelemetry OTLP JSON export of spans (GenAI or OpenInference attributes).
    Otel,
    /// The network's JSON form `{"problem", "thinking", "output"}`.
    Json,
    /// The network's text form with the paper's three headings.
    Text,
}

impl Format {
    /// Every format, in the order detection names them.
    pub const ALL: [Format; 7] = [
        Format::Chat,
        Format::Responses,
        Format::Anthropic,
        Format::Think,
        Format::Otel,
        Format::Json,
        Format::Text,
    ];

    /// The word used by options and `--format`.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Chat => "chat",
            Format::Responses => "responses",
            Format::Anthropic => "anthropic",
            Format::Think => "think",
            Format::Otel => "otel",
            Format::Json => "json",
            Format::Text => "text",
        }
    }

    /// What the format looks like, for errors that list what was expected.
    pub fn describe(self) -> &'static str {
        match self {
            Format::Chat => {
                "chat: OpenAI Chat Completions {\"messages\": [...]} or a list of {role, content}"
            }
            Format::Responses => {
                "responses: OpenAI Responses items, a list of {type, ...} or {\"input\", \"output\": [...]}"
            }
            Format::Anthropic => {
                "anthropic: Anthropic Messages with content blocks (thinking, tool_use, tool_result)"
            }
            Format::Think => "think: <think>...</think> text",
            Format::Otel => "otel: an OTLP JSON export {\"resourceSpans\": [...]}",
            Format::Json => "json: {\"problem\", \"thinking\", \"output\"}",
            Format::Text => "text: ## Problem Statement, ## Thinking Process and ## Final Output",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A word that names no [`Format`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "unknown trace format {0:?} (expected chat, responses, anthropic, think, otel, json or text)"
)]
pub struct UnknownFormat(pub String);

impl FromStr for Format {
    type Err = UnknownFormat;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Format::ALL
            .into_iter()
            .find(|f| f.as_str() == s)
            .ok_or_else(|| UnknownFormat(s.chars().take(40).collect()))
    }
}

/// How [`Trace::read`] reads its input.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// The format; `None` detects it.
    pub format: Option<Format>,
    /// The problem statement, for `<think>` text that does not hold it.
    pub problem: Option<String>,
    /// The semantics of every code tool, over what the transcript's tool definitions say.
    pub semantics: Option<Semantics>,
}

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
    /// The input is larger than [`MAX_TRANSCRIPT_BYTES`].
    #[error("transcript of {len} bytes exceeds the limit of {max} bytes on a transcript")]
    TranscriptTooLarge {
        /// Input length.
        len: usize,
        /// Limit.
        max: usize,
    },
    /// The trace read from a transcript is larger than [`MAX_TRACE_BYTES`].
    #[error(
        "the trace read from this transcript is {len} bytes, over the limit of {max} bytes on a trace (problem, thinking and output together; the transcript itself may be up to {input_max} bytes)"
    )]
    ReadTooLarge {
        /// The trace's length.
        len: usize,
        /// Limit on a trace.
        max: usize,
        /// Limit on a transcript.
        input_max: usize,
    },
    /// The input fits none of the formats.
    #[error("{0}")]
    Unrecognized(String),
    /// A transcript that does not hold together.
    #[error("{format} transcript: {error}")]
    Transcript {
        /// The format it was read as.
        format: Format,
        /// What is wrong.
        error: TranscriptError,
    },
    /// The thinking holds marker lines that do not form valid blocks.
    #[error("thinking: {0}")]
    Blocks(BlockError),
    /// The input is JSON of a transcript format but not valid JSON.
    #[error("malformed {format} transcript JSON: {message}")]
    TranscriptJson {
        /// The format asked for.
        format: Format,
        /// The parser's message.
        message: String,
    },
    /// An option that does not apply to the format.
    #[error("{0}")]
    Option(&'static str),
}

const HEADINGS: [(&str, &str); 3] = [
    ("## Problem Statement", "problem"),
    ("## Thinking Process", "thinking"),
    ("## Final Output", "output"),
];

impl Trace {
    /// Reads a trace in any format, detected ([`Trace::read`] with default options).
    pub fn parse(input: &str) -> Result<Trace, TraceError> {
        Self::read(input, &ReadOptions::default()).map(|(trace, _)| trace)
    }

    /// Reads a trace from `input` in the format `options` names, or the one detected, and
    /// says which format it was read as.
    pub fn read(input: &str, options: &ReadOptions) -> Result<(Trace, Format), TraceError> {
        if input.len() > MAX_TRANSCRIPT_BYTES {
            return Err(TraceError::TranscriptTooLarge {
                len: input.len(),
                max: MAX_TRANSCRIPT_BYTES,
            });
        }
        let format = match options.format {
            Some(f) => f,
            None => formats::detect(input)?,
        };
        if options.problem.is_some() && format != Format::Think {
            return Err(TraceError::Option(
                "a problem statement can be given only for <think> text; other formats hold their problem (the first user message, or ## Problem Statement)",
            ));
        }
        let trace = match format {
            Format::Json | Format::Text => {
                if input.len() > MAX_TRACE_BYTES {
                    return Err(TraceError::TooLarge {
                        len: input.len(),
                        max: MAX_TRACE_BYTES,
                    });
                }
                if format == Format::Json {
                    serde_json::from_str::<Trace>(input)
                        .map_err(|e| TraceError::Json(e.to_string()))?
                } else {
                    Self::parse_text(input)?
                }
            }
            other => formats::read(other, input, options)?,
        };
        let len = trace
            .problem
            .len()
            .saturating_add(trace.thinking.len())
            .saturating_add(trace.output.len());
        if len > MAX_TRACE_BYTES {
            return Err(TraceError::ReadTooLarge {
                len,
                max: MAX_TRACE_BYTES,
                input_max: MAX_TRANSCRIPT_BYTES,
            });
        }
        trace.check()?;
        Ok((trace, format))
    }

    /// Every part non-empty, and the thinking's marker lines forming valid blocks.
    fn check(&self) -> Result<(), TraceError> {
        let trace = self;
        for (part, name) in [
            (&trace.problem, "problem"),
            (&trace.thinking, "thinking"),
            (&trace.output, "output"),
        ] {
            if part.trim().is_empty() {
                return Err(TraceError::EmptyPart(name));
            }
        }
        blocks(&trace.thinking).map_err(TraceError::Blocks)?;
        Ok(())
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
