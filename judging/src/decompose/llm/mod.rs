//! The paper's LLM decomposition (appendix 0.0.9.1): five questions to a model, each
//! answered in the appendix's markdown format and parsed strictly.
//!
//! 1. Identify abstraction levels (`# Abstraction Block Analysis`).
//! 2. Segment within each level (`# Segmentation Analysis`, `### Segment ID` blocks).
//! 3. Extract relationships (`# Relationship Analysis`, one bullet per edge).
//! 4. Assign auditor types (`# Auditor Assignment Analysis`, `### Segment ID` blocks).
//! 5. Refine and construct the HDAG (`# Final HDAG Construction`: `### Node ID` blocks and
//!    the `## Finalized Edges` JSON, or the `## Complete HDAG JSON`).
//!
//! The prompt and parse logic is pure: [`Decomposer`] is a state machine that hands out
//! the next [`Prompt`] and takes the model's reply, so any way of asking (the node's chat
//! client, a test script) drives it; the CLI's async driver asks an endpoint
//! (`crate::cli::local::ask_endpoint`).
//!
//! Parts: the prompts (`prompt`), reading each step's reply (`parse`) and why one cannot
//! be used (`error`), mapping the model's paraphrases onto exact spans of the trace
//! (`align`), and the state machine that builds the HDAG from the five replies (`hdag`).
//!
//! Model output is untrusted: replies are bounded, ids must be well formed (and, in steps
//! 3 and 4, given by step 2), and the result must pass [`Hdag::validate`] and
//! [`Hdag::validate_spans`]. Auditors judge the audited model's own words, so a segment
//! the decomposer paraphrased is mapped to the closest exact span of the trace (a token
//! alignment; step 2's text is tried too when step 5 rewrote it), or dropped with a
//! warning when no span is close; `depends_on` / `decomposes_to` chains through a dropped
//! segment are kept by linking its neighbours. When a step's reply cannot be used,
//! [`or_heuristic`] falls back to the heuristic builder and says which step failed and why.

mod align;
mod error;
mod hdag;
mod parse;
mod prompt;
#[cfg(test)]
mod tests;

use trust_protocol::{
    hdag::{Hdag, HdagError},
    trace::Trace,
};

pub use self::{
    error::ReplyError,
    hdag::Decomposer,
    parse::{
        Assignment, Construction, FinalNode, LevelBlock, Relation, Segment, parse_assignments,
        parse_construction, parse_levels, parse_relationships, parse_segments,
    },
};
use super::{DecomposeError, Options};

/// Longest reply accepted from one step, in bytes.
pub const MAX_REPLY_BYTES: usize = 512 * 1024;

/// One of the five steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Step {
    /// Step 1: identify abstraction levels.
    Levels,
    /// Step 2: segment within each level.
    Segments,
    /// Step 3: extract relationships.
    Relationships,
    /// Step 4: assign auditor types.
    Auditors,
    /// Step 5: refine and construct the HDAG.
    Construct,
}

impl Step {
    /// The steps in order.
    pub const ALL: [Step; 5] = [
        Step::Levels,
        Step::Segments,
        Step::Relationships,
        Step::Auditors,
        Step::Construct,
    ];

    /// 1 to 5.
    pub fn number(self) -> u8 {
        match self {
            Step::Levels => 1,
            Step::Segments => 2,
            Step::Relationships => 3,
            Step::Auditors => 4,
            Step::Construct => 5,
        }
    }

    /// The paper's name of the step.
    pub fn name(self) -> &'static str {
        match self {
            Step::Levels => "identify abstraction levels",
            Step::Segments => "segment within levels",
            Step::Relationships => "extract relationships",
            Step::Auditors => "assign auditor types",
            Step::Construct => "refine and construct the HDAG",
        }
    }
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "step {} ({})", self.number(), self.name())
    }
}

/// Why the LLM decomposition gave no usable HDAG. Each variant names the step.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum LlmDecomposeError {
    /// The model could not be asked, or gave no reply.
    #[error("{step}: no reply from the model: {reason}")]
    Unanswered {
        /// The step asked.
        step: Step,
        /// Why.
        reason: String,
    },
    /// The reply is not in the step's format.
    #[error("{step}: unusable reply: {source}")]
    Malformed {
        /// The step whose reply failed to parse.
        step: Step,
        /// What is wrong with it.
        #[source]
        source: ReplyError,
    },
    /// The HDAG built from the replies is invalid.
    #[error("{step}: the resulting HDAG is invalid: {source}")]
    Invalid {
        /// Always [`Step::Construct`].
        step: Step,
        /// The validation error.
        #[source]
        source: HdagError,
    },
}

impl LlmDecomposeError {
    /// The step that failed.
    pub fn step(&self) -> Step {
        match self {
            LlmDecomposeError::Unanswered { step, .. }
            | LlmDecomposeError::Malformed { step, .. }
            | LlmDecomposeError::Invalid { step, .. } => *step,
        }
    }
}

/// One question to the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prompt {
    /// Which step asks.
    pub step: Step,
    /// The system message: the step's instructions and output format.
    pub system: String,
    /// The user message: the step's input.
    pub user: String,
}

/// An HDAG with what the decomposer had to say about it.
#[derive(Debug, Clone, PartialEq)]
pub struct Decomposition {
    /// The validated HDAG; every segment an exact span of the trace.
    pub hdag: Hdag,
    /// Things the user should know (paraphrases mapped or dropped, a fallback).
    pub warnings: Vec<String>,
    /// Whether the heuristic builder made the HDAG after the model's output failed.
    pub fell_back: bool,
}

/// Runs the five steps, asking through `ask` (which returns the reply text or why there
/// is none).
pub fn decompose_with<E: std::fmt::Display>(
    trace: &Trace,
    mut ask: impl FnMut(&Prompt) -> Result<String, E>,
) -> Result<Decomposition, LlmDecomposeError> {
    let mut d = Decomposer::new(trace);
    while let Some(p) = d.next_prompt() {
        let reply = ask(&p).map_err(|e| LlmDecomposeError::Unanswered {
            step: p.step,
            reason: e.to_string(),
        })?;
        d.accept(&reply)?;
    }
    d.finish()
}

/// The LLM decomposition's result, or the heuristic builder's HDAG with a warning that
/// names the step that failed and why.
pub fn or_heuristic(
    trace: &Trace,
    options: &Options,
    result: Result<Decomposition, LlmDecomposeError>,
) -> Result<Decomposition, DecomposeError> {
    match result {
        Ok(d) => Ok(d),
        Err(e) => {
            let hdag = super::decompose(trace, options)?;
            Ok(Decomposition {
                hdag,
                warnings: vec![format!(
                    "LLM decomposition failed at {e}; using the heuristic decomposition instead"
                )],
                fell_back: true,
            })
        }
    }
}
