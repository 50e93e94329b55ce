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
//! the next [`Prompt`] and takes the model's reply, so any way of asking (the node's
//! [`ChatClient`], a test script) drives it. [`ask_endpoint`] is the thin async driver.
//!
//! Model output is untrusted: replies are bounded, ids must be well formed (and, in steps
//! 3 and 4, given by step 2), and the result must pass [`Hdag::validate`] and
//! [`Hdag::validate_spans`]. Auditors judge the audited model's own words, so a segment
//! the decomposer paraphrased is mapped to the closest exact span of the trace (a token
//! alignment; step 2's text is tried too when step 5 rewrote it), or dropped with a
//! warning when no span is close; `depends_on` / `decomposes_to` chains through a dropped
//! segment are kept by linking its neighbours. When a step's reply cannot be used,
//! [`or_heuristic`] falls back to the heuristic builder and says which step failed and why.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;
use trust_protocol::{
    hdag::{
        AbstractionLevel, AuditorType, Complexity, Hdag, HdagEdge, HdagError, HdagNode, MAX_EDGES,
        MAX_NODES, MAX_SEGMENT_BYTES, Relationship, Strength,
    },
    trace::Trace,
};

use super::{DecomposeError, Options};
use crate::chat::{ChatClient, Limits};

/// Longest reply accepted from one step, in bytes.
pub const MAX_REPLY_BYTES: usize = 512 * 1024;
/// Alignment work allowed for one segment (content tokens × trace tokens).
const MAX_ALIGN_CELLS: usize = 64 * 1024 * 1024;
/// Alignment work allowed for a whole decomposition.
const MAX_TOTAL_ALIGN_CELLS: usize = 512 * 1024 * 1024;
/// A paraphrase maps to a span when at least this share of its tokens is found there...
const MIN_COVERAGE: f64 = 0.5;
/// ...and at least this share of the span's tokens is matched.
const MIN_PRECISION: f64 = 0.4;

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
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
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
    #[error("{step}: unusable reply: {reason}")]
    Malformed {
        /// The step whose reply failed to parse.
        step: Step,
        /// What is wrong with it.
        reason: String,
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

// ---------------------------------------------------------------------------------------
// Prompts (written for this project from the appendix; the output formats are the
// appendix's, since the parsers read them).
// ---------------------------------------------------------------------------------------

const LEVELS_FORMAT: &str = "# Abstraction Block Analysis

## GOAL Level
[exact text of the problem statement and objectives]

## STRATEGY Level
[exact text of the high-level approach]

## TACTIC Level
[exact text of specific techniques and methods]

## STEP Level
[exact text of individual reasoning moves]

## OPERATION Level
[exact text of calculations and examples]

# Block Structure
{\"GOAL\": [\"summary\"], \"STRATEGY\": [...], \"TACTIC\": [...], \"STEP\": [...], \"OPERATION\": [...]}";

const SEGMENTS_FORMAT: &str = "# Segmentation Analysis

## GOAL Segmentation

### Segment G1
**Content**: [exact text copied from the trace]
**Type**: [segment type, e.g. objective_statement]
**Summary**: [3-5 words]
**Complexity**: [Low/Medium/High]

## STRATEGY Segmentation

### Segment S1
...

(TACTIC segments are T1, T2, ...; STEP segments ST1, ST2, ...; OPERATION segments O1, O2, ...)

# Segmentation Summary
[{\"segment_id\": \"G1\", \"abstraction_level\": \"GOAL\", \"type\": \"objective_statement\", \"summary\": \"...\", \"complexity\": \"Medium\"}]";

const RELATIONSHIPS_FORMAT: &str = "# Relationship Analysis

## Hierarchical Relationships (decomposes_to)
- G1 -> S1: [explanation]
- S1 -> T1: [explanation]

## Lateral Dependencies (depends_on, enables)
- ST2 depends_on ST1: [explanation]
- O1 enables ST2: [explanation]

## Support Relationships (validates, exemplifies, refines)
- O1 exemplifies ST1: [explanation]
- T1 refines S1: [explanation]

# Relationship Summary
[{\"from_segment\": \"G1\", \"to_segment\": \"S1\", \"relationship_type\": \"decomposes_to\", \"strength\": \"strong\", \"explanation\": \"...\"}]";

const AUDITORS_FORMAT: &str = "# Auditor Assignment Analysis

## Segment Auditor Assignments

### Segment G1
**Primary Auditor**: T_Human
**Secondary Auditors**: [T_LLM]
**Justification**: [why]
**Verification Focus**: [what to check]

### Segment S1
...

## Auditor Type Distribution
- **T_Auto**: [segment ids]
- **T_LLM**: [segment ids]
- **T_Human**: [segment ids]

## Multi-Auditor Segments
[{\"segment_id\": \"G1\", \"primary_auditor\": \"T_Human\", \"secondary_auditors\": [\"T_LLM\"], \"verification_complexity\": \"High\", \"justification\": \"...\"}]";

const CONSTRUCT_FORMAT: &str = "# Final HDAG Construction

## HDAG Structure Summary
- **Total Nodes**: [count]
- **Total Edges**: [count]
- **Abstraction Levels**: [levels present]
- **Auditor Distribution**: [T_Auto: X, T_LLM: Y, T_Human: Z]

## Finalized Nodes

### Node G1
**Content**: [exact segment text from the trace]
**Abstraction Level**: GOAL
**Type**: objective_statement
**Summary**: [3-5 words]
**Primary Auditor**: T_Human
**Secondary Auditors**: [T_LLM]
**Verification Complexity**: High
**Dependencies**: []
**Enables**: [S1]

## Finalized Edges
[{\"from\": \"G1\", \"to\": \"S1\", \"type\": \"decomposes_to\", \"strength\": \"strong\", \"confidence\": 0.95}]

## Verification Flow
1. **Entry Points**: [root nodes]
2. **Critical Path**: [sequence]
3. **Parallel Tracks**: [independent branches]
4. **Exit Points**: [final nodes]

## HDAG Validation Report
- **Acyclicity Check**: ...
- **Connectivity Check**: ...
- **Completeness Check**: ...
- **Auditability Check**: ...

## Complete HDAG JSON
{\"nodes\": [{\"id\": \"G1\", \"content\": \"...\", \"abstraction_level\": \"GOAL\", \"type\": \"objective_statement\", \"summary\": \"...\", \"primary_auditor\": \"T_Human\", \"secondary_auditors\": [\"T_LLM\"], \"complexity\": \"High\"}], \"edges\": [{\"from\": \"G1\", \"to\": \"S1\", \"relationship\": \"decomposes_to\", \"strength\": \"strong\", \"confidence\": 0.95}]}";

fn system(step: Step) -> String {
    let (role, rules, format) = match step {
        Step::Levels => (
            "You identify abstraction levels in a reasoning trace (problem, thinking, final output).",
            "Levels: GOAL (the problem and what is wanted), STRATEGY (the overall plan), TACTIC \
             (specific methods, definitions, key insights), STEP (single inferences), OPERATION \
             (atomic calculations and numerical work).\n\
             - Put each part of the reasoning under the level that fits its meaning, not its position.\n\
             - A block may span several sentences or paragraphs; a level may be missing or have several blocks.\n\
             - GOAL holds the whole problem statement.\n\
             - Copy the trace's text exactly: same words, notation and line breaks. Never paraphrase.",
            LEVELS_FORMAT,
        ),
        Step::Segments => (
            "You cut abstraction-level blocks into segments small enough to verify one at a time.",
            "- GOAL: keep each objective whole.\n\
             - STRATEGY: one segment per complete approach.\n\
             - TACTIC: one segment per technique or key insight, understandable on its own.\n\
             - STEP: one segment per inference.\n\
             - OPERATION: one segment per calculation, checkable on its own.\n\
             - Ids: G1.. for GOAL, S1.. for STRATEGY, T1.. for TACTIC, ST1.. for STEP, O1.. for OPERATION.\n\
             - Each Content is copied exactly from the original trace given below: it must be a \
             verbatim span of it. Never paraphrase or reformat.",
            SEGMENTS_FORMAT,
        ),
        Step::Relationships => (
            "You find the relationships between reasoning segments that make them a hierarchical DAG.",
            "Relationship types (A type B):\n\
             - decomposes_to: A (higher level) breaks down into B (lower level)\n\
             - depends_on: A needs B to be true to be valid\n\
             - enables: A makes B possible\n\
             - validates: A confirms B\n\
             - exemplifies: A is a concrete instance of B\n\
             - refines: A adds detail to B\n\
             - contradicts: A contradicts or corrects B\n\
             Give hierarchical edges first, then lateral dependencies, then support. Only clear, \
             meaningful relationships; mark each [strong], [medium] or [weak]. Use only segment \
             ids from the segmentation. depends_on must not form a cycle.",
            RELATIONSHIPS_FORMAT,
        ),
        Step::Auditors => (
            "You assign each reasoning segment to auditor types of TRUST's three tiers.",
            "- T_Auto (automated checkers): calculations, algebra, formal logic, deterministic steps.\n\
             - T_LLM (a language model): semantic coherence, facts, domain reasoning, strategy.\n\
             - T_Human (a person): ethics, expertise, ambiguous or novel reasoning, high stakes.\n\
             Give every segment one primary auditor; secondary auditors are optional.",
            AUDITORS_FORMAT,
        ),
        Step::Construct => (
            "You build the final hierarchical DAG (HDAG) from the segmentation, relationships and \
             auditor assignments.",
            "- Keep the graph acyclic (depends_on and decomposes_to edges admit an order).\n\
             - Merge over-cut segments or split under-cut ones only where it helps verification.\n\
             - Every node keeps its exact text from the trace; every edge joins two listed nodes.\n\
             - Edge types: decomposes_to, depends_on, enables, validates, exemplifies, refines, \
             contradicts; confidence between 0 and 1.\n\
             - Write JSON without comments.",
            CONSTRUCT_FORMAT,
        ),
    };
    format!(
        "TRUST decomposition, step {} of 5: {}.\n{role}\n\nRules:\n{rules}\n\nAnswer only in this format:\n\n{format}\n",
        step.number(),
        step.name()
    )
}

fn trace_text(trace: &Trace) -> String {
    format!(
        "## Problem Statement:\n{}\n\n## Thinking Process:\n{}\n\n## Final Output:\n{}\n",
        trace.problem, trace.thinking, trace.output
    )
}

// ---------------------------------------------------------------------------------------
// Parsed replies
// ---------------------------------------------------------------------------------------

/// A block of step 1.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LevelBlock {
    /// Its level.
    pub level: AbstractionLevel,
    /// Its text.
    pub text: String,
}

/// A segment of step 2.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Segment {
    /// Its id.
    pub id: String,
    /// Its level (from the `## LEVEL Segmentation` heading it is under).
    pub level: AbstractionLevel,
    /// The text the model gave.
    pub content: String,
    /// Its type.
    pub kind: String,
    /// Its summary.
    pub summary: String,
    /// Its complexity, when given.
    pub complexity: Option<Complexity>,
}

/// A relationship of step 3.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relation {
    /// Source id.
    pub from: String,
    /// Target id.
    pub to: String,
    /// Its type.
    pub relationship: Relationship,
    /// Its strength, when given.
    pub strength: Option<Strength>,
}

/// An auditor assignment of step 4.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assignment {
    /// Segment id.
    pub id: String,
    /// Primary auditor.
    pub primary: AuditorType,
    /// Secondary auditors.
    pub secondary: Vec<AuditorType>,
}

/// A node of step 5 (fields the model left out are `None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FinalNode {
    /// Its id.
    pub id: String,
    /// The text the model gave.
    pub content: String,
    /// Its level.
    pub level: Option<AbstractionLevel>,
    /// Its type.
    pub kind: String,
    /// Its summary.
    pub summary: String,
    /// Primary auditor.
    pub primary: Option<AuditorType>,
    /// Secondary auditors.
    pub secondary: Vec<AuditorType>,
    /// Complexity.
    pub complexity: Option<Complexity>,
}

/// Step 5's nodes and edges.
#[derive(Debug, Clone, PartialEq)]
pub struct Construction {
    /// Nodes.
    pub nodes: Vec<FinalNode>,
    /// Edges.
    pub edges: Vec<HdagEdge>,
    /// Notes on how the reply was read (e.g. a section that did not parse).
    pub notes: Vec<String>,
}

// ---------------------------------------------------------------------------------------
// Markdown helpers
// ---------------------------------------------------------------------------------------

/// `(depth, title)` when the line is a markdown heading (`#`..`######` and a space).
fn heading(line: &str) -> Option<(usize, &str)> {
    let t = line.trim();
    let depth = t.bytes().take_while(|&b| b == b'#').count();
    if depth == 0 || depth > 6 {
        return None;
    }
    let rest = t.get(depth..)?;
    if !rest.starts_with(' ') {
        return None;
    }
    Some((depth, rest.trim().trim_matches('*').trim()))
}

/// The text after the line `# {title}` up to the next depth-1 heading, if present.
fn section<'a>(reply: &'a str, depth: usize, title: &str) -> Option<&'a str> {
    let mut start = None;
    let mut offset = 0usize;
    for line in reply.split_inclusive('\n') {
        let line_start = offset;
        offset = offset.saturating_add(line.len());
        match (heading(line), start) {
            (Some((d, t)), None) if d == depth && t.eq_ignore_ascii_case(title) => {
                start = Some(offset);
            }
            (Some((d, _)), Some(s)) if d <= depth => return reply.get(s..line_start),
            _ => {}
        }
    }
    start.and_then(|s| reply.get(s..))
}

/// Sub-sections of `body` at `depth`: `(title, text)`, the text before the first one
/// dropped.
fn subsections(body: &str, depth: usize) -> Vec<(&str, &str)> {
    let mut out = Vec::new();
    let mut current: Option<(&str, usize)> = None;
    let mut offset = 0usize;
    for line in body.split_inclusive('\n') {
        let line_start = offset;
        offset = offset.saturating_add(line.len());
        if let Some((d, t)) = heading(line)
            && d <= depth
        {
            if let Some((title, s)) = current.take() {
                out.push((title, body.get(s..line_start).unwrap_or("")));
            }
            if d == depth {
                current = Some((t, offset));
            }
        }
    }
    if let Some((title, s)) = current {
        out.push((title, body.get(s..).unwrap_or("")));
    }
    out
}

/// The `### {word} ID` blocks of `body` at `depth`: `(title, text)`. Other headings at
/// that depth are part of a block's text: a segment copied from a markdown answer may
/// hold headings of its own (`### 1. Work done before the change`).
fn blocks<'a>(body: &'a str, depth: usize, word: &str) -> Vec<(&'a str, &'a str)> {
    let mut out = Vec::new();
    let mut current: Option<(&str, usize)> = None;
    let mut offset = 0usize;
    for line in body.split_inclusive('\n') {
        let line_start = offset;
        offset = offset.saturating_add(line.len());
        let Some((d, t)) = heading(line) else {
            continue;
        };
        let opens = d == depth
            && t.split_whitespace()
                .next()
                .is_some_and(|w| w.eq_ignore_ascii_case(word));
        if d < depth || opens {
            if let Some((title, s)) = current.take() {
                out.push((title, body.get(s..line_start).unwrap_or("")));
            }
            if opens {
                current = Some((t, offset));
            }
        }
    }
    if let Some((title, s)) = current {
        out.push((title, body.get(s..).unwrap_or("")));
    }
    out
}

/// Removes separator lines (`---`) and surrounding blank space.
fn clean_block(text: &str) -> String {
    let kept: Vec<&str> = text
        .lines()
        .filter(|l| {
            let t = l.trim();
            !(t.len() >= 3 && t.bytes().all(|b| b == b'-'))
        })
        .collect();
    kept.join("\n").trim().to_string()
}

/// Values of `**Name**:` fields in `body` (also `**Name:**`), by lower-case name. A
/// field runs to the next known field marker, wherever it starts: the paper's own
/// example sometimes puts the next field on the same line as a value.
fn fields(body: &str, names: &[&str]) -> Result<BTreeMap<String, String>, String> {
    let mut marks: Vec<(usize, usize, String)> = Vec::new();
    for name in names {
        for pat in [format!("**{name}**:"), format!("**{name}:**")] {
            let mut from = 0usize;
            while let Some(i) = body.get(from..).and_then(|s| s.find(&pat)) {
                let start = from.saturating_add(i);
                let end = start.saturating_add(pat.len());
                marks.push((start, end, name.to_ascii_lowercase()));
                from = end;
            }
        }
    }
    marks.sort();
    let mut out = BTreeMap::new();
    for (k, (_, end, name)) in marks.iter().enumerate() {
        let stop = marks.get(k.saturating_add(1)).map_or(body.len(), |m| m.0);
        let raw = body.get(*end..stop).unwrap_or("");
        // The next field's bullet (`- **Type**`) belongs to it, not to this value.
        let mut v = clean_block(raw);
        while v.ends_with('-') {
            v.pop();
            v = v.trim_end().to_string();
        }
        if out.insert(name.clone(), v).is_some() {
            return Err(format!("field {name:?} given twice"));
        }
    }
    Ok(out)
}

/// The value without markdown emphasis, brackets or quotes.
fn bare(v: &str) -> String {
    v.chars()
        .filter(|c| !matches!(c, '*' | '[' | ']' | '`' | '"'))
        .collect::<String>()
        .trim()
        .to_string()
}

fn clip(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 60 {
        format!("{}…", one.chars().take(59).collect::<String>())
    } else {
        one
    }
}

/// The protocol's own value named by `name` (its serde spelling, in any letter case: the
/// model may write `step`, `Step` or `STEP`), so the names live in one place.
fn named<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
    let b = bare(name);
    let mut spellings = vec![b.clone(), b.to_ascii_uppercase(), b.to_ascii_lowercase()];
    // `T_LLM` / `t_llm` for auditor types, `Low` for complexities.
    let mut title = b.to_ascii_lowercase();
    if let Some(first) = title.get(..1).map(str::to_ascii_uppercase) {
        title.replace_range(..1, &first);
    }
    spellings.push(title);
    if let Some(rest) = b.to_ascii_lowercase().strip_prefix("t_") {
        let kind = if rest == "llm" {
            "LLM".to_string()
        } else {
            let mut r = rest.to_string();
            if let Some(first) = r.get(..1).map(str::to_ascii_uppercase) {
                r.replace_range(..1, &first);
            }
            r
        };
        spellings.push(format!("T_{kind}"));
    }
    spellings
        .into_iter()
        .find_map(|s| serde_json::from_value(serde_json::Value::String(s)).ok())
}

fn level_named(name: &str) -> Option<AbstractionLevel> {
    named(name)
}

fn auditor_named(name: &str) -> Option<AuditorType> {
    named(name)
}

fn relationship_named(v: &str) -> Option<Relationship> {
    named(v)
}

fn strength_named(v: &str) -> Option<Strength> {
    named(v)
}

fn complexity_named(v: &str) -> Result<Complexity, String> {
    named(v).ok_or_else(|| format!("complexity {:?} is not Low, Medium or High", clip(&bare(v))))
}

fn auditors(v: &str) -> Result<Vec<AuditorType>, String> {
    let b = bare(v);
    let mut out = Vec::new();
    for part in b.split(|c: char| c == ',' || c.is_whitespace()) {
        if part.is_empty() {
            continue;
        }
        let a = auditor_named(part).ok_or_else(|| {
            format!(
                "unknown auditor type {:?} (use T_Auto, T_LLM or T_Human)",
                clip(part)
            )
        })?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

fn valid_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= trust_protocol::hdag::MAX_ID_BYTES
        && id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'.' | b'-'))
}

/// The id in a `Segment ID ...` / `Node ID ...` heading.
fn heading_id(title: &str, word: &str) -> Option<String> {
    let mut parts = title.split_whitespace();
    if !parts.next()?.eq_ignore_ascii_case(word) {
        return None;
    }
    let id = parts
        .next()?
        .trim_matches(|c: char| matches!(c, ':' | ',' | '*' | '`' | '(' | ')'));
    Some(id.to_string())
}

/// Removes `/* */` and `//` comments outside strings (models and the paper's own example
/// annotate JSON that way).
fn strip_json_comments(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    let (mut in_str, mut escaped) = (false, false);
    while let Some(c) = chars.next() {
        if in_str {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_str = false;
            }
            continue;
        }
        match (c, chars.peek()) {
            ('"', _) => {
                in_str = true;
                out.push(c);
            }
            ('/', Some('*')) => {
                chars.next();
                let mut prev = ' ';
                for d in chars.by_ref() {
                    if prev == '*' && d == '/' {
                        break;
                    }
                    prev = d;
                }
            }
            ('/', Some('/')) => {
                for d in chars.by_ref() {
                    if d == '\n' {
                        out.push('\n');
                        break;
                    }
                }
            }
            _ => out.push(c),
        }
    }
    out
}

/// The first JSON value (array or object, as `open` says) in `body`, code fences and
/// comments allowed around and inside it.
fn json_in(body: &str, open: char) -> Result<Value, String> {
    let text = strip_json_comments(body);
    let start = text.find(open).ok_or_else(|| {
        format!(
            "no JSON {} found",
            if open == '[' { "array" } else { "object" }
        )
    })?;
    let rest = text.get(start..).unwrap_or("");
    let mut it = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(format!("malformed JSON: {e}")),
        None => Err("no JSON found".into()),
    }
}

fn str_field<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

fn check_len(reply: &str) -> Result<(), String> {
    if reply.len() > MAX_REPLY_BYTES {
        return Err(format!(
            "reply of {} bytes is longer than the {MAX_REPLY_BYTES}-byte limit",
            reply.len()
        ));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Parsers, one per step
// ---------------------------------------------------------------------------------------

/// Step 1: the `## LEVEL Level` blocks under `# Abstraction Block Analysis`. The `#
/// Block Structure` summary is not needed and not read.
pub fn parse_levels(reply: &str) -> Result<Vec<LevelBlock>, String> {
    check_len(reply)?;
    let body = section(reply, 1, "Abstraction Block Analysis")
        .ok_or("no \"# Abstraction Block Analysis\" section")?;
    let mut out = Vec::new();
    for (title, text) in subsections(body, 2) {
        let name = title
            .strip_suffix("Level")
            .or_else(|| title.strip_suffix("level"))
            .unwrap_or(title);
        let level = level_named(name).ok_or_else(|| {
            format!(
                "heading \"## {}\" names no abstraction level (GOAL, STRATEGY, TACTIC, STEP, OPERATION)",
                clip(title)
            )
        })?;
        let text = clean_block(text);
        if !text.is_empty() {
            out.push(LevelBlock { level, text });
        }
    }
    if out.is_empty() {
        return Err("no \"## LEVEL Level\" block with text".into());
    }
    Ok(out)
}

/// Step 2: `### Segment ID` blocks under `## LEVEL Segmentation` headings.
pub fn parse_segments(reply: &str) -> Result<Vec<Segment>, String> {
    check_len(reply)?;
    let body = section(reply, 1, "Segmentation Analysis")
        .ok_or("no \"# Segmentation Analysis\" section")?;
    let mut out: Vec<Segment> = Vec::new();
    for (title, level_body) in subsections(body, 2) {
        let name = title.split_whitespace().next().unwrap_or("");
        let level = level_named(name)
            .ok_or_else(|| format!("heading \"## {}\" names no abstraction level", clip(title)))?;
        for (seg_title, seg_body) in blocks(level_body, 3, "Segment") {
            let id = heading_id(seg_title, "Segment").ok_or_else(|| {
                format!(
                    "heading \"### {}\" is not \"### Segment ID\"",
                    clip(seg_title)
                )
            })?;
            if !valid_id(&id) {
                return Err(format!("segment id {:?} is not a valid id", clip(&id)));
            }
            if out.iter().any(|s| s.id == id) {
                return Err(format!("segment {id} is given twice"));
            }
            let f = fields(seg_body, &["Content", "Type", "Summary", "Complexity"])
                .map_err(|e| format!("segment {id}: {e}"))?;
            let content = f
                .get("content")
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| format!("segment {id} has no **Content**"))?
                .clone();
            let complexity = match f.get("complexity") {
                Some(c) => Some(complexity_named(c).map_err(|e| format!("segment {id}: {e}"))?),
                None => None,
            };
            out.push(Segment {
                id,
                level,
                content,
                kind: f.get("type").map(|s| bare(s)).unwrap_or_default(),
                summary: f.get("summary").map(|s| bare(s)).unwrap_or_default(),
                complexity,
            });
            if out.len() > MAX_NODES {
                return Err(format!("more than {MAX_NODES} segments"));
            }
        }
    }
    if out.is_empty() {
        return Err("no \"### Segment ID\" block".into());
    }
    Ok(out)
}

#[derive(Clone, Copy, PartialEq)]
enum RelSection {
    Hierarchical,
    Lateral,
    Other,
}

/// Step 3: one bullet per relationship (`- A -> B: ...` under the hierarchical heading,
/// `- A depends_on B: ...` anywhere; bold and a `[strength]` tag allowed), or, when there
/// are no bullets, the `# Relationship Summary` JSON. Every id must be in `known`.
pub fn parse_relationships(reply: &str, known: &BTreeSet<String>) -> Result<Vec<Relation>, String> {
    check_len(reply)?;
    let body = section(reply, 1, "Relationship Analysis")
        .ok_or("no \"# Relationship Analysis\" section")?;
    let check = |id: &str| -> Result<(), String> {
        if known.contains(id) {
            Ok(())
        } else {
            Err(format!(
                "relationship names segment {:?}, which step 2 did not give",
                clip(id)
            ))
        }
    };
    let mut out = Vec::new();
    for (title, text) in subsections(body, 2) {
        let lower = title.to_ascii_lowercase();
        let kind = if lower.contains("hierarch") {
            RelSection::Hierarchical
        } else if lower.contains("lateral") {
            RelSection::Lateral
        } else {
            RelSection::Other
        };
        for line in text.lines() {
            let t = line.trim();
            let Some(item) = t.strip_prefix("- ").or_else(|| t.strip_prefix("* ")) else {
                continue;
            };
            let item = item.replace("**", "");
            let words: Vec<&str> = item.split_whitespace().collect();
            let id = |w: Option<&&str>| {
                w.map(|w| w.trim_matches(|c: char| matches!(c, ':' | ',' | '`' | '(' | ')')))
                    .unwrap_or("")
                    .to_string()
            };
            let (from, verb, to) = (id(words.first()), words.get(1).copied(), id(words.get(2)));
            let relationship = match verb {
                Some("->" | "→" | "=>") => match kind {
                    RelSection::Hierarchical => Relationship::DecomposesTo,
                    RelSection::Lateral => Relationship::Enables,
                    RelSection::Other => {
                        return Err(format!(
                            "\"{}\": an arrow outside the hierarchical list needs a relationship type",
                            clip(&item)
                        ));
                    }
                },
                Some(v) => relationship_named(v.trim_end_matches(':')).ok_or_else(|| {
                    format!(
                        "\"{}\" is not \"A -> B\" or \"A relationship B\"",
                        clip(&item)
                    )
                })?,
                None => return Err(format!("\"{}\" is not a relationship", clip(&item))),
            };
            check(&from)?;
            check(&to)?;
            let lower = item.to_ascii_lowercase();
            let strength = ["strong", "medium", "weak"]
                .iter()
                .find(|s| lower.contains(&format!("[{s}]")))
                .and_then(|s| strength_named(s));
            out.push(Relation {
                from,
                to,
                relationship,
                strength,
            });
            if out.len() > MAX_EDGES {
                return Err(format!("more than {MAX_EDGES} relationships"));
            }
        }
    }
    if out.is_empty() {
        let summary = section(reply, 1, "Relationship Summary")
            .ok_or("no relationship bullets and no \"# Relationship Summary\"")?;
        let v = json_in(summary, '[')?;
        for r in v.as_array().into_iter().flatten() {
            let (Some(from), Some(to), Some(rel)) = (
                str_field(r, &["from_segment", "from"]),
                str_field(r, &["to_segment", "to"]),
                str_field(r, &["relationship_type", "relationship", "type"]),
            ) else {
                return Err("a relationship summary entry lacks from_segment, to_segment or relationship_type".into());
            };
            check(from)?;
            check(to)?;
            out.push(Relation {
                from: from.to_string(),
                to: to.to_string(),
                relationship: relationship_named(rel)
                    .ok_or_else(|| format!("unknown relationship type {:?}", clip(rel)))?,
                strength: str_field(r, &["strength"]).and_then(strength_named),
            });
        }
    }
    if out.is_empty() {
        return Err("no relationship given".into());
    }
    Ok(out)
}

/// Step 4: `### Segment ID` blocks with `**Primary Auditor**` (and optionally
/// `**Secondary Auditors**`), or, failing any, the `## Multi-Auditor Segments` JSON.
pub fn parse_assignments(reply: &str, known: &BTreeSet<String>) -> Result<Vec<Assignment>, String> {
    check_len(reply)?;
    let body = section(reply, 1, "Auditor Assignment Analysis")
        .ok_or("no \"# Auditor Assignment Analysis\" section")?;
    let mut out: Vec<Assignment> = Vec::new();
    let push = |out: &mut Vec<Assignment>,
                id: String,
                primary: AuditorType,
                secondary: Vec<AuditorType>| {
        if !known.contains(&id) {
            return Err(format!(
                "an assignment names segment {:?}, which step 2 did not give",
                clip(&id)
            ));
        }
        if out.iter().any(|a| a.id == id) {
            return Err(format!("segment {id} is assigned twice"));
        }
        out.push(Assignment {
            id,
            primary,
            secondary,
        });
        Ok(())
    };
    for (_, group) in subsections(body, 2) {
        for (title, text) in blocks(group, 3, "Segment") {
            let Some(id) = heading_id(title, "Segment") else {
                return Err(format!(
                    "heading \"### {}\" is not \"### Segment ID\"",
                    clip(title)
                ));
            };
            let f = fields(
                text,
                &[
                    "Primary Auditor",
                    "Secondary Auditors",
                    "Justification",
                    "Verification Focus",
                ],
            )
            .map_err(|e| format!("segment {id}: {e}"))?;
            let primary = f
                .get("primary auditor")
                .ok_or_else(|| format!("segment {id} has no **Primary Auditor**"))
                .and_then(|v| auditors(v).map_err(|e| format!("segment {id}: {e}")))?;
            let [primary] = primary.as_slice() else {
                return Err(format!(
                    "segment {id}: the primary auditor must be exactly one of T_Auto, T_LLM, T_Human"
                ));
            };
            let secondary = match f.get("secondary auditors") {
                Some(v) => auditors(v).map_err(|e| format!("segment {id}: {e}"))?,
                None => Vec::new(),
            };
            push(&mut out, id, *primary, secondary)?;
        }
    }
    if out.is_empty()
        && let Some(multi) = section(body, 2, "Multi-Auditor Segments")
    {
        let v = json_in(multi, '[')?;
        for a in v.as_array().into_iter().flatten() {
            let (Some(id), Some(primary)) = (
                str_field(a, &["segment_id"]),
                str_field(a, &["primary_auditor"]).and_then(auditor_named),
            ) else {
                return Err(
                    "a Multi-Auditor Segments entry lacks segment_id or a valid primary_auditor"
                        .into(),
                );
            };
            let secondary = a
                .get("secondary_auditors")
                .and_then(Value::as_array)
                .map(|xs| {
                    xs.iter()
                        .filter_map(|x| x.as_str().and_then(auditor_named))
                        .collect()
                })
                .unwrap_or_default();
            push(&mut out, id.to_string(), primary, secondary)?;
        }
    }
    if out.is_empty() {
        return Err("no \"### Segment ID\" assignment".into());
    }
    Ok(out)
}

fn edge_from_json(e: &Value, i: usize) -> Result<HdagEdge, String> {
    let (Some(from), Some(to)) = (str_field(e, &["from"]), str_field(e, &["to"])) else {
        return Err(format!("edge {i} lacks \"from\" or \"to\""));
    };
    let rel = str_field(e, &["relationship", "type"])
        .ok_or_else(|| format!("edge {i} ({from} -> {to}) has no type"))?;
    let relationship = relationship_named(rel)
        .ok_or_else(|| format!("edge {i} ({from} -> {to}): unknown type {:?}", clip(rel)))?;
    Ok(HdagEdge {
        from: from.to_string(),
        to: to.to_string(),
        relationship,
        strength: str_field(e, &["strength"]).and_then(strength_named),
        confidence: e.get("confidence").and_then(Value::as_f64),
    })
}

fn edges_from_json(v: &Value) -> Result<Vec<HdagEdge>, String> {
    let list = v.as_array().ok_or("the edge list is not a JSON array")?;
    if list.len() > MAX_EDGES {
        return Err(format!("more than {MAX_EDGES} edges"));
    }
    list.iter()
        .enumerate()
        .map(|(i, e)| edge_from_json(e, i))
        .collect()
}

fn nodes_from_markdown(body: &str) -> Result<Vec<FinalNode>, String> {
    let mut out: Vec<FinalNode> = Vec::new();
    for (title, text) in blocks(body, 3, "Node") {
        let id = heading_id(title, "Node")
            .ok_or_else(|| format!("heading \"### {}\" is not \"### Node ID\"", clip(title)))?;
        if !valid_id(&id) {
            return Err(format!("node id {:?} is not a valid id", clip(&id)));
        }
        let f = fields(
            text,
            &[
                "Content",
                "Abstraction Level",
                "Type",
                "Summary",
                "Primary Auditor",
                "Secondary Auditors",
                "Verification Complexity",
                "Complexity",
                "Dependencies",
                "Enables",
            ],
        )
        .map_err(|e| format!("node {id}: {e}"))?;
        let content = f
            .get("content")
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| format!("node {id} has no **Content**"))?
            .clone();
        let level = match f.get("abstraction level") {
            Some(l) => Some(
                level_named(l)
                    .ok_or_else(|| format!("node {id}: unknown abstraction level {:?}", clip(l)))?,
            ),
            None => None,
        };
        let primary = match f.get("primary auditor") {
            Some(v) => match auditors(v)
                .map_err(|e| format!("node {id}: {e}"))?
                .as_slice()
            {
                [one] => Some(*one),
                _ => {
                    return Err(format!(
                        "node {id}: the primary auditor must be exactly one type"
                    ));
                }
            },
            None => None,
        };
        let complexity = match f
            .get("verification complexity")
            .or_else(|| f.get("complexity"))
        {
            Some(c) => Some(complexity_named(c).map_err(|e| format!("node {id}: {e}"))?),
            None => None,
        };
        out.push(FinalNode {
            content,
            level,
            kind: f.get("type").map(|s| bare(s)).unwrap_or_default(),
            summary: f.get("summary").map(|s| bare(s)).unwrap_or_default(),
            primary,
            secondary: match f.get("secondary auditors") {
                Some(v) => auditors(v).map_err(|e| format!("node {id}: {e}"))?,
                None => Vec::new(),
            },
            complexity,
            id,
        });
        if out.len() > MAX_NODES {
            return Err(format!("more than {MAX_NODES} nodes"));
        }
    }
    Ok(out)
}

fn nodes_from_json(v: &Value) -> Result<Vec<FinalNode>, String> {
    let list = v
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or("no \"nodes\" array")?;
    if list.len() > MAX_NODES {
        return Err(format!("more than {MAX_NODES} nodes"));
    }
    let mut out = Vec::new();
    for (i, n) in list.iter().enumerate() {
        let (Some(id), Some(content)) = (str_field(n, &["id"]), str_field(n, &["content"])) else {
            return Err(format!("node {i} lacks \"id\" or \"content\""));
        };
        let level = match str_field(n, &["abstraction_level"]) {
            Some(l) => Some(
                level_named(l)
                    .ok_or_else(|| format!("node {id}: unknown abstraction level {:?}", clip(l)))?,
            ),
            None => None,
        };
        out.push(FinalNode {
            id: id.to_string(),
            content: content.to_string(),
            level,
            kind: str_field(n, &["type"]).unwrap_or("").to_string(),
            summary: str_field(n, &["summary"]).unwrap_or("").to_string(),
            primary: str_field(n, &["primary_auditor"]).and_then(auditor_named),
            secondary: n
                .get("secondary_auditors")
                .and_then(Value::as_array)
                .map(|xs| {
                    xs.iter()
                        .filter_map(|x| x.as_str().and_then(auditor_named))
                        .collect()
                })
                .unwrap_or_default(),
            complexity: str_field(n, &["complexity"]).and_then(|c| complexity_named(c).ok()),
        });
    }
    Ok(out)
}

/// Step 5: nodes from `## Finalized Nodes` (`### Node ID` blocks) and edges from `##
/// Finalized Edges`; either, when missing or unreadable, from `## Complete HDAG JSON`.
pub fn parse_construction(reply: &str) -> Result<Construction, String> {
    check_len(reply)?;
    let body = section(reply, 1, "Final HDAG Construction")
        .ok_or("no \"# Final HDAG Construction\" section")?;
    let mut notes = Vec::new();
    let complete = section(body, 2, "Complete HDAG JSON").map(|s| json_in(s, '{'));
    let md_nodes = match section(body, 2, "Finalized Nodes") {
        Some(s) => Some(nodes_from_markdown(s)?).filter(|n| !n.is_empty()),
        None => None,
    };
    let md_edges = section(body, 2, "Finalized Edges")
        .map(|s| json_in(s, '[').and_then(|v| edges_from_json(&v)));
    let nodes = match (md_nodes, &complete) {
        (Some(n), _) => n,
        (None, Some(Ok(v))) => nodes_from_json(v)?,
        (None, Some(Err(e))) => {
            return Err(format!(
                "no \"### Node ID\" blocks, and the Complete HDAG JSON is unreadable: {e}"
            ));
        }
        (None, None) => {
            return Err("no \"## Finalized Nodes\" and no \"## Complete HDAG JSON\"".into());
        }
    };
    let from_complete = |notes: &mut Vec<String>| -> Result<Vec<HdagEdge>, String> {
        match &complete {
            Some(Ok(v)) => match v.get("edges") {
                Some(e) => edges_from_json(e),
                None => Err("the Complete HDAG JSON has no \"edges\"".into()),
            },
            Some(Err(e)) => {
                notes.push(format!("the Complete HDAG JSON is unreadable ({e})"));
                Err(format!("the Complete HDAG JSON is unreadable: {e}"))
            }
            None => Err("no \"## Complete HDAG JSON\"".into()),
        }
    };
    let edges = match md_edges {
        Some(Ok(e)) => {
            if let Some(Err(e)) = &complete {
                notes.push(format!(
                    "the Complete HDAG JSON is unreadable ({e}); nodes and edges were read from the Finalized sections"
                ));
            }
            e
        }
        Some(Err(md)) => {
            from_complete(&mut notes).map_err(|c| format!("Finalized Edges: {md}; {c}"))?
        }
        None => from_complete(&mut notes).map_err(|c| format!("no \"## Finalized Edges\"; {c}"))?,
    };
    let mut seen = BTreeSet::new();
    for n in &nodes {
        if !valid_id(&n.id) {
            return Err(format!("node id {:?} is not a valid id", clip(&n.id)));
        }
        if !seen.insert(n.id.as_str()) {
            return Err(format!("node {} is given twice", n.id));
        }
    }
    Ok(Construction {
        nodes,
        edges,
        notes,
    })
}

// ---------------------------------------------------------------------------------------
// Mapping paraphrases to exact spans
// ---------------------------------------------------------------------------------------

/// A token and its byte range in the text.
type Token = (String, usize, usize);

/// A word or number of a text, lower-cased, with its byte range. LaTeX commands
/// (`\frac`, `\times`) are skipped, and letters and digits split (`0.96D` is `0.96`,
/// `d`), so notation differences do not hide a match.
fn tokens(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let mut it = s.char_indices().peekable();
    while let Some((i, c)) = it.next() {
        if c == '\\' {
            while it.peek().is_some_and(|(_, d)| d.is_ascii_alphabetic()) {
                it.next();
            }
            continue;
        }
        if !c.is_alphanumeric() {
            continue;
        }
        let digit = c.is_numeric();
        let mut end = i.saturating_add(c.len_utf8());
        let mut text: String = c.to_lowercase().collect();
        while let Some(&(j, d)) = it.peek() {
            let more = if digit {
                d.is_numeric()
                    || (d == '.'
                        && s.get(j.saturating_add(1)..)
                            .and_then(|r| r.chars().next())
                            .is_some_and(char::is_numeric))
            } else {
                d.is_alphabetic()
            };
            if !more {
                break;
            }
            text.extend(d.to_lowercase());
            end = j.saturating_add(d.len_utf8());
            it.next();
        }
        out.push((text, i, end));
    }
    out
}

/// The best local alignment of `q` in `t`: `(first, last, matched)` trace-token
/// positions, scoring +2 a match, -1 a mismatch or gap.
fn align(q: &[u32], t: &[u32]) -> Option<(usize, usize, usize)> {
    #[derive(Clone, Copy, Default)]
    struct Cell {
        score: i32,
        start: usize,
        matched: usize,
    }
    let m = q.len();
    let mut prev = vec![Cell::default(); m.saturating_add(1)];
    let mut cur = prev.clone();
    let mut best: Option<(i32, usize, usize, usize)> = None;
    for (j, &tj) in t.iter().enumerate() {
        if let Some(c) = cur.first_mut() {
            *c = Cell::default();
        }
        for (i, &qi) in q.iter().enumerate() {
            let (Some(&d), Some(&up), Some(&left)) =
                (prev.get(i), prev.get(i.saturating_add(1)), cur.get(i))
            else {
                continue;
            };
            let hit = qi == tj;
            let diag = if d.score > 0 {
                Cell {
                    score: d.score.saturating_add(if hit { 2 } else { -1 }),
                    start: d.start,
                    matched: d.matched.saturating_add(usize::from(hit)),
                }
            } else if hit {
                Cell {
                    score: 2,
                    start: j,
                    matched: 1,
                }
            } else {
                Cell::default()
            };
            let mut c = diag;
            for g in [up, left] {
                if g.score.saturating_sub(1) > c.score {
                    c = Cell {
                        score: g.score.saturating_sub(1),
                        ..g
                    };
                }
            }
            if c.score <= 0 {
                c = Cell::default();
            }
            if hit && c.score > best.map_or(0, |b| b.0) {
                best = Some((c.score, c.start, j, c.matched));
            }
            if let Some(slot) = cur.get_mut(i.saturating_add(1)) {
                *slot = c;
            }
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    best.map(|(_, s, e, k)| (s, e, k))
}

/// How a segment's text was placed in the trace.
#[derive(Debug, Clone, PartialEq)]
enum Placement {
    /// Found verbatim.
    Exact(String),
    /// The closest span, with the share of the model's tokens it contains.
    Mapped(String, f64),
}

/// A trace field, its tokens and their vocabulary ids.
struct Field<'t> {
    text: &'t str,
    tokens: Vec<Token>,
    ids: Vec<u32>,
}

struct Mapper<'t> {
    fields: Vec<Field<'t>>,
    vocab: HashMap<String, u32>,
    budget: usize,
}

impl<'t> Mapper<'t> {
    fn new(trace: &'t Trace) -> Self {
        let mut vocab = HashMap::new();
        let fields = [
            trace.problem.as_str(),
            trace.thinking.as_str(),
            trace.output.as_str(),
        ]
        .into_iter()
        .map(|text| {
            let tokens = tokens(text);
            let ids = intern(&mut vocab, &tokens);
            Field { text, tokens, ids }
        })
        .collect();
        Self {
            fields,
            vocab,
            budget: MAX_TOTAL_ALIGN_CELLS,
        }
    }

    /// The exact span for `content`, or the closest one, or `None`.
    fn place(&mut self, content: &str) -> Option<Placement> {
        let c = content.trim().trim_matches('*').trim();
        if c.is_empty() {
            return None;
        }
        if self.fields.iter().any(|f| f.text.contains(c)) {
            return Some(Placement::Exact(c.to_string()));
        }
        let q_toks = tokens(c);
        let q = intern(&mut self.vocab, &q_toks);
        if q.is_empty() {
            return None;
        }
        let mut best: Option<(f64, String, f64)> = None;
        for f in &self.fields {
            let (field, toks) = (f.text, &f.tokens);
            let cells = q.len().saturating_mul(toks.len());
            if cells > MAX_ALIGN_CELLS || cells > self.budget {
                continue;
            }
            self.budget = self.budget.saturating_sub(cells);
            let Some((s, e, matched)) = align(&q, &f.ids) else {
                continue;
            };
            let precision = matched as f64 / (e.saturating_sub(s).saturating_add(1)) as f64;
            if matched < q.len().min(2) || precision < MIN_PRECISION {
                continue;
            }
            let (Some(&(_, from, _)), Some(&(_, _, to))) = (toks.get(s), toks.get(e)) else {
                continue;
            };
            let (from, to) = widen(field, from, to);
            let Some(span) = field.get(from..to).map(str::trim) else {
                continue;
            };
            // Coverage counts the model's tokens found anywhere in the sentence(s).
            let mut bag: HashMap<String, usize> = HashMap::new();
            for (t, _, _) in tokens(span) {
                *bag.entry(t).or_default() += 1;
            }
            let found = q_toks
                .iter()
                .filter(|(t, _, _)| match bag.get_mut(t) {
                    Some(n) if *n > 0 => {
                        *n -= 1;
                        true
                    }
                    _ => false,
                })
                .count();
            let coverage = found as f64 / q.len() as f64;
            if coverage < MIN_COVERAGE {
                continue;
            }
            let f1 = 2.0 * coverage * precision / (coverage + precision);
            if best.as_ref().is_none_or(|b| f1 > b.0) {
                best = Some((f1, span.to_string(), coverage));
            }
        }
        best.map(|(_, s, c)| Placement::Mapped(s, c))
    }
}

/// How far a span is widened, at most, to reach a sentence boundary.
const MAX_WIDEN_BYTES: usize = 240;

/// Widens `from..to` to whole sentences (a `.`, `?` or `!` before whitespace, a blank
/// line, or the field's ends) when one is near, else to whole words (`$\frac{1}{3D}$.`).
fn widen(field: &str, from: usize, to: usize) -> (usize, usize) {
    let b = field.as_bytes();
    let at = |i: usize| b.get(i).copied().unwrap_or(b' ');
    // An ellipsis (`0.694444...`) does not end a sentence.
    let ends_sentence =
        |i: usize| matches!(at(i), b'.' | b'?' | b'!') && !(i > 0 && at(i - 1) == b'.');
    let mut start = None;
    let mut i = from;
    while i > 0 && from - i <= MAX_WIDEN_BYTES {
        let prev = at(i - 1);
        if (prev.is_ascii_whitespace() && i >= 2 && ends_sentence(i - 2))
            || (prev == b'\n' && i >= 2 && at(i - 2) == b'\n')
        {
            start = Some(i);
            break;
        }
        i -= 1;
    }
    let start = start.unwrap_or(if i == 0 { 0 } else { usize::MAX });
    let start = if start == usize::MAX {
        let mut s = from;
        while s > 0 && !at(s - 1).is_ascii_whitespace() {
            s -= 1;
        }
        s
    } else {
        start
    };
    let mut end = None;
    let mut j = to;
    while j < b.len() && j - to <= MAX_WIDEN_BYTES {
        if ends_sentence(j) && (j + 1 == b.len() || at(j + 1).is_ascii_whitespace()) {
            end = Some(j + 1);
            break;
        }
        if at(j) == b'\n' && at(j + 1) == b'\n' {
            end = Some(j);
            break;
        }
        j += 1;
    }
    let end = match end {
        Some(e) => e,
        None if j >= b.len() => b.len(),
        None => {
            let mut e = to;
            while e < b.len() && !at(e).is_ascii_whitespace() {
                e += 1;
            }
            e
        }
    };
    (start, end.max(start))
}

/// Vocabulary ids of `toks`, adding new words to `vocab`.
fn intern(vocab: &mut HashMap<String, u32>, toks: &[Token]) -> Vec<u32> {
    toks.iter()
        .map(|(t, _, _)| {
            let next = u32::try_from(vocab.len()).unwrap_or(u32::MAX);
            *vocab.entry(t.clone()).or_insert(next)
        })
        .collect()
}

// ---------------------------------------------------------------------------------------
// The state machine
// ---------------------------------------------------------------------------------------

/// The five steps as a state machine: [`Decomposer::next_prompt`] gives the next
/// question, [`Decomposer::accept`] takes its reply, [`Decomposer::finish`] builds the
/// HDAG once all five are in.
#[derive(Debug)]
pub struct Decomposer<'t> {
    trace: &'t Trace,
    /// The replies so far, in step order.
    replies: Vec<String>,
    levels: Vec<LevelBlock>,
    segments: Vec<Segment>,
    relations: Vec<Relation>,
    assignments: Vec<Assignment>,
    construction: Option<Construction>,
}

impl<'t> Decomposer<'t> {
    /// A decomposition of `trace`, before any question.
    pub fn new(trace: &'t Trace) -> Self {
        Self {
            trace,
            replies: Vec::new(),
            levels: Vec::new(),
            segments: Vec::new(),
            relations: Vec::new(),
            assignments: Vec::new(),
            construction: None,
        }
    }

    /// The step the next reply answers, or `None` when all five are in.
    pub fn step(&self) -> Option<Step> {
        Step::ALL.get(self.replies.len()).copied()
    }

    /// The blocks of step 1 (empty before its reply).
    pub fn levels(&self) -> &[LevelBlock] {
        &self.levels
    }

    /// The segments of step 2.
    pub fn segments(&self) -> &[Segment] {
        &self.segments
    }

    /// The relationships of step 3.
    pub fn relations(&self) -> &[Relation] {
        &self.relations
    }

    /// The assignments of step 4.
    pub fn assignments(&self) -> &[Assignment] {
        &self.assignments
    }

    fn reply(&self, step: Step) -> &str {
        self.replies
            .get(usize::from(step.number().saturating_sub(1)))
            .map_or("", String::as_str)
    }

    /// The next question, or `None` when all five steps are answered.
    pub fn next_prompt(&self) -> Option<Prompt> {
        let step = self.step()?;
        let trace = trace_text(self.trace);
        let user = match step {
            Step::Levels => trace,
            Step::Segments => format!(
                "{}\n\n# Original Trace (copy segment contents from here, verbatim)\n\n{trace}",
                self.reply(Step::Levels).trim()
            ),
            Step::Relationships => self.reply(Step::Segments).trim().to_string(),
            Step::Auditors => format!(
                "{}\n\n{}",
                self.reply(Step::Segments).trim(),
                self.reply(Step::Relationships).trim()
            ),
            Step::Construct => format!(
                "{}\n\n{}\n\n{}",
                self.reply(Step::Segments).trim(),
                self.reply(Step::Relationships).trim(),
                self.reply(Step::Auditors).trim()
            ),
        };
        Some(Prompt {
            step,
            system: system(step),
            user,
        })
    }

    /// Takes the reply to the current step; an error names the step and what is wrong.
    pub fn accept(&mut self, reply: &str) -> Result<(), LlmDecomposeError> {
        let Some(step) = self.step() else {
            return Err(LlmDecomposeError::Malformed {
                step: Step::Construct,
                reason: "a reply after the last step".into(),
            });
        };
        let bad = |reason: String| LlmDecomposeError::Malformed { step, reason };
        let known: BTreeSet<String> = self.segments.iter().map(|s| s.id.clone()).collect();
        match step {
            Step::Levels => self.levels = parse_levels(reply).map_err(bad)?,
            Step::Segments => self.segments = parse_segments(reply).map_err(bad)?,
            Step::Relationships => {
                self.relations = parse_relationships(reply, &known).map_err(bad)?;
            }
            Step::Auditors => self.assignments = parse_assignments(reply, &known).map_err(bad)?,
            Step::Construct => self.construction = Some(parse_construction(reply).map_err(bad)?),
        }
        self.replies.push(reply.to_string());
        Ok(())
    }

    /// Builds and validates the HDAG from the five replies.
    pub fn finish(self) -> Result<Decomposition, LlmDecomposeError> {
        let step = Step::Construct;
        let Some(c) = self.construction else {
            return Err(LlmDecomposeError::Unanswered {
                step: self.step().unwrap_or(step),
                reason: "the decomposition ended before this step was answered".into(),
            });
        };
        let bad = |reason: String| LlmDecomposeError::Malformed { step, reason };
        let segments: BTreeMap<&str, &Segment> =
            self.segments.iter().map(|s| (s.id.as_str(), s)).collect();
        let assigned: BTreeMap<&str, &Assignment> = self
            .assignments
            .iter()
            .map(|a| (a.id.as_str(), a))
            .collect();
        let mut warnings = c.notes.clone();
        let mut mapper = Mapper::new(self.trace);
        let mut nodes = Vec::new();
        let (mut mapped, mut dropped) = (Vec::new(), Vec::new());
        for n in &c.nodes {
            let seg = segments.get(n.id.as_str());
            let level = n
                .level
                .or(seg.map(|s| s.level))
                .ok_or_else(|| bad(format!("node {} has no abstraction level", n.id)))?;
            let (primary, secondary) = match (n.primary, assigned.get(n.id.as_str())) {
                (Some(p), _) => (p, n.secondary.clone()),
                (None, Some(a)) => (a.primary, a.secondary.clone()),
                (None, None) => {
                    return Err(bad(format!(
                        "node {} has no primary auditor here or in step 4",
                        n.id
                    )));
                }
            };
            // Step 5 may rewrite a segment; step 2's text is nearer the trace. Keep
            // whichever places better: the exact words first, then the closer span.
            let mut placement: Option<Placement> = None;
            for text in std::iter::once(n.content.as_str()).chain(seg.map(|s| s.content.as_str())) {
                let p = mapper.place(text);
                placement = match (placement, p) {
                    (Some(Placement::Exact(a)), _) => Some(Placement::Exact(a)),
                    (_, Some(Placement::Exact(b))) => Some(Placement::Exact(b)),
                    (Some(Placement::Mapped(a, x)), Some(Placement::Mapped(b, y))) => {
                        Some(if y > x {
                            Placement::Mapped(b, y)
                        } else {
                            Placement::Mapped(a, x)
                        })
                    }
                    (a, b) => a.or(b),
                };
            }
            let content = match placement {
                Some(Placement::Exact(s)) => s,
                Some(Placement::Mapped(s, _)) => {
                    mapped.push(n.id.clone());
                    s
                }
                None => {
                    dropped.push(n.id.clone());
                    continue;
                }
            };
            if content.len() > MAX_SEGMENT_BYTES {
                dropped.push(n.id.clone());
                continue;
            }
            nodes.push(HdagNode {
                id: n.id.clone(),
                content,
                abstraction_level: level,
                kind: if n.kind.is_empty() {
                    seg.map(|s| s.kind.clone()).unwrap_or_default()
                } else {
                    n.kind.clone()
                },
                summary: if n.summary.is_empty() {
                    seg.map(|s| s.summary.clone()).unwrap_or_default()
                } else {
                    n.summary.clone()
                },
                primary_auditor: primary,
                secondary_auditors: secondary,
                complexity: n
                    .complexity
                    .or(seg.and_then(|s| s.complexity))
                    .unwrap_or(Complexity::Medium),
            });
        }
        if !mapped.is_empty() {
            warnings.push(format!(
                "{} of {} segments were not verbatim in the trace and were mapped to the closest exact span: {}",
                mapped.len(),
                c.nodes.len(),
                mapped.join(", ")
            ));
        }
        if !dropped.is_empty() {
            warnings.push(format!(
                "{} segment(s) match no span of the trace and were dropped: {}",
                dropped.len(),
                dropped.join(", ")
            ));
        }
        if nodes.is_empty() {
            return Err(bad("no segment of the HDAG is a span of the trace".into()));
        }
        let edges = bridge(c.edges, &dropped);
        let mut hdag = Hdag {
            nodes,
            edges,
            metadata: None,
        };
        // A tier judges a segment only when its check covers the whole claim: what the
        // model gave the Computer tier beyond that goes to the LLM tier, its calculation
        // checked on its own.
        warnings.extend(super::enforce_coverage(&mut hdag, self.trace));
        hdag.validate()
            .and_then(|()| hdag.validate_spans(self.trace))
            .map_err(|source| LlmDecomposeError::Invalid { step, source })?;
        Ok(Decomposition {
            hdag,
            warnings,
            fell_back: false,
        })
    }
}

/// The edges without those touching a dropped node; a `depends_on` or `decomposes_to`
/// chain through one is kept by joining its ends (`A -> X -> B` becomes `A -> B`).
fn bridge(edges: Vec<HdagEdge>, dropped: &[String]) -> Vec<HdagEdge> {
    let gone: BTreeSet<&str> = dropped.iter().map(String::as_str).collect();
    let mut out: Vec<HdagEdge> = Vec::new();
    for x in &gone {
        for rel in [Relationship::DependsOn, Relationship::DecomposesTo] {
            let ins: Vec<&HdagEdge> = edges
                .iter()
                .filter(|e| e.relationship == rel && e.to == *x && !gone.contains(e.from.as_str()))
                .collect();
            let outs: Vec<&HdagEdge> = edges
                .iter()
                .filter(|e| e.relationship == rel && e.from == *x && !gone.contains(e.to.as_str()))
                .collect();
            for a in &ins {
                for b in &outs {
                    if a.from != b.to && out.len() < MAX_EDGES {
                        out.push(HdagEdge {
                            from: a.from.clone(),
                            to: b.to.clone(),
                            relationship: rel,
                            strength: Some(Strength::Weak),
                            confidence: None,
                        });
                    }
                }
            }
        }
    }
    let mut kept: Vec<HdagEdge> = edges
        .into_iter()
        .filter(|e| !gone.contains(e.from.as_str()) && !gone.contains(e.to.as_str()))
        .collect();
    kept.extend(out);
    kept
}

/// Runs the five steps, asking through `ask` (which returns the reply text or why there
/// is none).
pub fn decompose_with(
    trace: &Trace,
    mut ask: impl FnMut(&Prompt) -> Result<String, String>,
) -> Result<Decomposition, LlmDecomposeError> {
    let mut d = Decomposer::new(trace);
    while let Some(p) = d.next_prompt() {
        let reply = ask(&p).map_err(|reason| LlmDecomposeError::Unanswered {
            step: p.step,
            reason,
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

/// Bounds for the decomposition's requests: long replies, a long timeout (a five-step
/// answer on a CPU takes minutes), one retry.
pub fn limits() -> Limits {
    Limits {
        request_timeout: std::time::Duration::from_secs(300),
        retries: 1,
        backoff: std::time::Duration::from_millis(500),
        max_concurrent: 1,
        max_reply_bytes: 2 * MAX_REPLY_BYTES,
        max_tokens: 8192,
    }
}

/// The async driver: asks the five steps through `client`, one after the other.
pub async fn ask_endpoint(
    client: &ChatClient,
    trace: &Trace,
) -> Result<Decomposition, LlmDecomposeError> {
    let mut d = Decomposer::new(trace);
    while let Some(p) = d.next_prompt() {
        tracing::info!(target: "trust::decompose", step = p.step.number(), name = p.step.name(), "asking the model");
        let reply = client
            .complete_text(&p.system, &p.user)
            .await
            .map_err(|e| LlmDecomposeError::Unanswered {
                step: p.step,
                reason: e.to_string(),
            })?;
        d.accept(&reply)?;
    }
    d.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_read_in_any_letter_case_through_the_protocol_spellings() {
        for l in ["step", "Step", "STEP", "**STEP**"] {
            assert_eq!(level_named(l), Some(AbstractionLevel::Step), "{l}");
        }
        for a in ["T_LLM", "t_llm", "T_Llm"] {
            assert_eq!(auditor_named(a), Some(AuditorType::Llm), "{a}");
        }
        assert_eq!(auditor_named("T_Auto"), Some(AuditorType::Auto));
        assert_eq!(auditor_named("t_human"), Some(AuditorType::Human));
        assert_eq!(
            relationship_named("Depends_On"),
            Some(Relationship::DependsOn)
        );
        assert_eq!(strength_named("WEAK"), Some(Strength::Weak));
        assert_eq!(complexity_named("low"), Ok(Complexity::Low));
        assert!(complexity_named("trivial").is_err());
        assert_eq!(level_named("PHASE"), None);
    }

    fn known(ids: &[&str]) -> BTreeSet<String> {
        ids.iter().map(|s| s.to_string()).collect()
    }

    fn trace() -> Trace {
        Trace {
            problem: "Tom has 3 apples and buys 4 more. How many apples does he have?".into(),
            thinking:
                "Tom starts with 3 apples.\nHe buys 4 more, so 3 + 4 = 7.\nSo he has 7 apples."
                    .into(),
            output: "7".into(),
        }
    }

    const LEVELS: &str = "Sure.\n\n# Abstraction Block Analysis\n\n## GOAL Level\nTom has 3 apples and buys 4 more. How many apples does he have?\n\n## **STEP** Level\nHe buys 4 more, so 3 + 4 = 7.\n\n## OPERATION Level\n3 + 4 = 7\n\n---\n\n# Block Structure\n{\"GOAL\": [\"count apples\"]}\n";

    #[test]
    fn step1_reads_the_level_blocks() {
        let b = parse_levels(LEVELS).unwrap();
        let levels: Vec<_> = b.iter().map(|x| x.level).collect();
        assert_eq!(
            levels,
            [
                AbstractionLevel::Goal,
                AbstractionLevel::Step,
                AbstractionLevel::Operation
            ]
        );
        assert_eq!(
            b[2].text, "3 + 4 = 7",
            "the separator is not part of a block"
        );
        // A missing level is fine; an unknown one, or none at all, is not.
        assert!(
            parse_levels("no headings at all")
                .unwrap_err()
                .contains("Abstraction Block Analysis")
        );
        assert!(
            parse_levels("# Abstraction Block Analysis\n## PLAN Level\nx\n")
                .unwrap_err()
                .contains("PLAN")
        );
        assert!(parse_levels("# Abstraction Block Analysis\n## GOAL Level\n\n").is_err());
        assert!(
            parse_levels(&"x".repeat(MAX_REPLY_BYTES + 1))
                .unwrap_err()
                .contains("limit")
        );
    }

    const SEGMENTS: &str = "# Segmentation Analysis\n\n## GOAL Segmentation\n\n### Segment G1\n**Content**:  \nTom has 3 apples and buys 4 more. How many apples does he have?\n\n**Type**: objective_statement  \n**Summary**: count apples  \n**Complexity**: Medium  \n\n---\n\n## STEP Segmentation\n\n### Segment ST1\n**Content**: He buys 4 more, so 3 + 4 = 7.\n**Type**: inference\n**Summary**: add\n**Complexity**: Low\n\n## OPERATION Segmentation\n\n### Segment O1:\n**Content:** 3 + 4 = 7\n**Complexity**: Low\n\n# Segmentation Summary\n[]\n";

    #[test]
    fn step2_reads_segments_with_their_level_and_fields() {
        let s = parse_segments(SEGMENTS).unwrap();
        let ids: Vec<_> = s.iter().map(|x| (x.id.as_str(), x.level)).collect();
        assert_eq!(
            ids,
            [
                ("G1", AbstractionLevel::Goal),
                ("ST1", AbstractionLevel::Step),
                ("O1", AbstractionLevel::Operation)
            ]
        );
        assert_eq!(
            s[0].content,
            "Tom has 3 apples and buys 4 more. How many apples does he have?"
        );
        assert_eq!(s[0].kind, "objective_statement");
        assert_eq!(s[0].complexity, Some(Complexity::Medium));
        assert_eq!(s[2].content, "3 + 4 = 7");
        // A heading copied from the trace stays in the segment's content.
        let s = parse_segments(&SEGMENTS.replace(
            "**Content:** 3 + 4 = 7",
            "**Content:**\n### 1. Adding\n3 + 4 = 7",
        ))
        .unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[2].content, "### 1. Adding\n3 + 4 = 7");
        for (bad, why) in [
            (
                SEGMENTS.replace("**Content**: He buys", "**Text**: He buys"),
                "no **Content**",
            ),
            (SEGMENTS.replace("Segment O1:", "Segment ST1"), "twice"),
            (SEGMENTS.replace("Segment O1:", "Segment O/1"), "valid id"),
            (
                SEGMENTS.replace(
                    "**Complexity**: Low\n\n## OP",
                    "**Complexity**: Easy\n\n## OP",
                ),
                "Easy",
            ),
            (
                SEGMENTS.replace("## STEP Segmentation", "## MISC Segmentation"),
                "MISC",
            ),
            (
                "# Segmentation Analysis\n\nnothing".into(),
                "no \"### Segment ID\"",
            ),
        ] {
            let e = parse_segments(&bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn step3_reads_the_papers_bullets_and_the_templates() {
        let ids = known(&["G1", "ST1", "O1"]);
        let r = parse_relationships(
            "# Relationship Analysis\n\n## Hierarchical Relationships (decomposes_to)\n\n- **G1 → ST1** - the goal is met by the step. **[strong]**\n- ST1 -> O1: the step is computed by O1\n\n---\n\n## Lateral Dependencies (depends_on, enables)\n- **ST1 depends_on G1** - uses the numbers **[medium]**\n- O1 -> ST1: gives the value\n\n## Support Relationships (validates, exemplifies, refines)\n- O1 validates ST1: checks it\n\n# Relationship Summary\n[]\n",
            &ids,
        )
        .unwrap();
        let got: Vec<_> = r
            .iter()
            .map(|x| (x.from.as_str(), x.to.as_str(), x.relationship, x.strength))
            .collect();
        assert_eq!(
            got,
            [
                (
                    "G1",
                    "ST1",
                    Relationship::DecomposesTo,
                    Some(Strength::Strong)
                ),
                ("ST1", "O1", Relationship::DecomposesTo, None),
                ("ST1", "G1", Relationship::DependsOn, Some(Strength::Medium)),
                ("O1", "ST1", Relationship::Enables, None),
                ("O1", "ST1", Relationship::Validates, None),
            ]
        );
        // Only the summary JSON: read it.
        let r = parse_relationships(
            "# Relationship Analysis\n\n# Relationship Summary\n```json\n[{\"from_segment\": \"O1\", \"to_segment\": \"ST1\", \"relationship_type\": \"exemplifies\", \"strength\": \"weak\"}]\n```\n",
            &ids,
        )
        .unwrap();
        assert_eq!(r[0].relationship, Relationship::Exemplifies);
        assert_eq!(r[0].strength, Some(Strength::Weak));
        for (bad, why) in [
            (
                "# Relationship Analysis\n## Lateral\n- ST1 depends_on X9: hm\n",
                "X9",
            ),
            (
                "# Relationship Analysis\n## Lateral\n- ST1 causes O1: hm\n",
                "causes",
            ),
            (
                "# Relationship Analysis\n## Support\n- O1 -> ST1: hm\n",
                "arrow",
            ),
            (
                "# Relationship Analysis\n\nThe steps are related.\n",
                "no relationship",
            ),
            ("relationships: none", "Relationship Analysis"),
        ] {
            let e = parse_relationships(bad, &ids).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn step4_reads_assignments_in_the_papers_bullet_style() {
        let ids = known(&["G1", "ST1"]);
        let a = parse_assignments(
            "# Auditor Assignment Analysis\n\n## Segment Auditor Assignments\n\n### Segment G1 - Goal (objective_statement)\n- **Primary Auditor**: **T_LLM**  \n- **Secondary Auditors**: **[T_Auto, T_Human]**  \n- **Justification**: words\n\n### Segment ST1 - STEP (inference)\n**Primary Auditor**: T_Auto\n\n## Auditor Type Distribution\n| a | b |\n",
            &ids,
        )
        .unwrap();
        assert_eq!(a[0].primary, AuditorType::Llm);
        assert_eq!(a[0].secondary, [AuditorType::Auto, AuditorType::Human]);
        assert_eq!(a[1].primary, AuditorType::Auto);
        assert!(a[1].secondary.is_empty());
        for (bad, why) in [
            (
                "# Auditor Assignment Analysis\n## S\n### Segment G1\n**Primary Auditor**: T_Robot\n",
                "T_Robot",
            ),
            (
                "# Auditor Assignment Analysis\n## S\n### Segment G1\n**Primary Auditor**: T_LLM, T_Auto\n",
                "exactly one",
            ),
            (
                "# Auditor Assignment Analysis\n## S\n### Segment Z1\n**Primary Auditor**: T_LLM\n",
                "Z1",
            ),
            (
                "# Auditor Assignment Analysis\n## S\n### Segment G1\n**Justification**: x\n",
                "no **Primary Auditor**",
            ),
            ("# Auditor Assignment Analysis\n", "no \"### Segment ID\""),
        ] {
            let e = parse_assignments(bad, &ids).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
        // The Multi-Auditor Segments JSON when there are no blocks.
        let a = parse_assignments(
            "# Auditor Assignment Analysis\n## Multi-Auditor Segments\n[{\"segment_id\": \"ST1\", \"primary_auditor\": \"T_Human\", \"secondary_auditors\": [\"T_LLM\"]}]\n",
            &ids,
        )
        .unwrap();
        assert_eq!(a[0].primary, AuditorType::Human);
    }

    const CONSTRUCT: &str = "# Final HDAG Construction\n\n## Finalized Nodes\n\n### Node G1\n**Content**: *Tom has 3 apples and buys 4 more. How many apples does he have?*\n**Abstraction Level**: GOAL\n**Primary Auditor**: T_Human\n**Secondary Auditors**: [T_LLM]\n**Verification Complexity**: High\n**Dependencies**: []\n\n### Node ST1\n**Content**: Tom buys four more apples, so 3 + 4 = 7. **Abstraction Level**: STEP\n**Primary Auditor**: T_Auto\n\n## Finalized Edges\n```json\n[\n  /* hierarchy */\n  {\"from\":\"G1\",\"to\":\"ST1\",\"type\":\"decomposes_to\",\"strength\":\"strong\",\"confidence\":0.9}, // the only one\n  {\"from\":\"ST1\",\"to\":\"G1\",\"type\":\"depends_on\"}\n]\n```\n\n## Complete HDAG JSON\n{ \"nodes\": [ {\"id\": \"G1\", \"content\": \"cut\n";

    #[test]
    fn step5_reads_nodes_and_edges_and_says_what_it_skipped() {
        let c = parse_construction(CONSTRUCT).unwrap();
        assert_eq!(c.nodes.len(), 2);
        // A field on the same line as the content ends it (the paper's own example).
        assert_eq!(
            c.nodes[1].content,
            "Tom buys four more apples, so 3 + 4 = 7."
        );
        assert_eq!(c.nodes[1].level, Some(AbstractionLevel::Step));
        assert_eq!(c.nodes[0].complexity, Some(Complexity::High));
        assert_eq!(c.edges.len(), 2, "comments in the JSON are allowed");
        assert_eq!(c.edges[0].confidence, Some(0.9));
        assert!(c.notes.iter().any(|n| n.contains("Complete HDAG JSON")));
        // The complete JSON alone is enough.
        let c = parse_construction(
            "# Final HDAG Construction\n## Complete HDAG JSON\n{\"nodes\": [{\"id\": \"G1\", \"content\": \"x\", \"abstraction_level\": \"GOAL\", \"primary_auditor\": \"T_LLM\"}], \"edges\": []}\n",
        )
        .unwrap();
        assert_eq!(c.nodes[0].primary, Some(AuditorType::Llm));
        for (bad, why) in [
            (
                CONSTRUCT.replace("type\":\"depends_on", "type\":\"causes"),
                "causes",
            ),
            (
                CONSTRUCT.replace("## Finalized Edges", "## Edges"),
                "Complete HDAG JSON is unreadable",
            ),
            (CONSTRUCT.replace("### Node ST1", "### Node G1"), "twice"),
            (CONSTRUCT.replace("GOAL\n", "PURPOSE\n"), "PURPOSE"),
            (
                "# Final HDAG Construction\nnothing\n".into(),
                "no \"## Finalized Nodes\"",
            ),
            ("Here is your HDAG!".into(), "Final HDAG Construction"),
        ] {
            let e = parse_construction(&bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn paraphrases_map_to_the_closest_span_and_strangers_to_none() {
        let t = trace();
        let mut m = Mapper::new(&t);
        assert_eq!(
            m.place("  3 + 4 = 7 "),
            Some(Placement::Exact("3 + 4 = 7".into()))
        );
        match m.place("Tom buys four more, so $3+4=7$") {
            Some(Placement::Mapped(s, c)) => {
                assert_eq!(s, "He buys 4 more, so 3 + 4 = 7.");
                assert!(c >= MIN_COVERAGE);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(m.place("A poem about tunnels and the sea."), None);
        assert_eq!(m.place("$\\frac{}{}$"), None);
        // Alignment work is bounded: once the budget is spent, paraphrases are dropped
        // (exact spans are still found).
        m.budget = 0;
        assert_eq!(m.place("Tom buys four more, so $3+4=7$"), None);
        assert!(matches!(m.place("3 + 4 = 7"), Some(Placement::Exact(_))));
    }

    #[test]
    fn a_chain_through_a_dropped_segment_is_kept() {
        let e = |f: &str, t: &str, r| HdagEdge {
            from: f.into(),
            to: t.into(),
            relationship: r,
            strength: None,
            confidence: None,
        };
        let out = bridge(
            vec![
                e("C", "B", Relationship::DependsOn),
                e("B", "A", Relationship::DependsOn),
                e("B", "A", Relationship::Validates),
            ],
            &["B".to_string()],
        );
        assert_eq!(out.len(), 1);
        assert_eq!(
            (
                out[0].from.as_str(),
                out[0].to.as_str(),
                out[0].relationship
            ),
            ("C", "A", Relationship::DependsOn)
        );
    }

    fn script(replies: [&'static str; 5]) -> impl FnMut(&Prompt) -> Result<String, String> {
        move |p| Ok(replies[usize::from(p.step.number() - 1)].to_string())
    }

    const RELS: &str = "# Relationship Analysis\n## Hierarchical\n- G1 -> ST1: x\n## Lateral\n- ST1 depends_on G1: x\n- O1 enables ST1: x\n";
    const AUDS: &str = "# Auditor Assignment Analysis\n## A\n### Segment G1\n**Primary Auditor**: T_LLM\n### Segment ST1\n**Primary Auditor**: T_Auto\n### Segment O1\n**Primary Auditor**: T_Auto\n";

    #[test]
    fn the_five_steps_build_a_valid_hdag_of_spans() {
        let t = trace();
        let construct = "# Final HDAG Construction\n## Finalized Nodes\n### Node G1\n**Content**: Tom has 3 apples and buys 4 more. How many apples does he have?\n**Abstraction Level**: GOAL\n### Node ST1\n**Content**: Tom buys four more, so 3+4=7.\n**Primary Auditor**: T_Auto\n### Node O1\n**Content**: Bananas are yellow.\n**Abstraction Level**: OPERATION\n## Finalized Edges\n[{\"from\":\"G1\",\"to\":\"ST1\",\"type\":\"decomposes_to\"},{\"from\":\"ST1\",\"to\":\"G1\",\"type\":\"depends_on\"},{\"from\":\"O1\",\"to\":\"ST1\",\"type\":\"enables\"}]\n";
        let d = decompose_with(&t, script([LEVELS, SEGMENTS, RELS, AUDS, construct])).unwrap();
        let ids: Vec<_> = d.hdag.nodes.iter().map(|n| n.id.as_str()).collect();
        // O1's step-5 text is unrelated, but its step-2 text is in the trace. ST1, a claim
        // in words the model gave the Computer tier, goes to the LLM tier, and its bare
        // calculation to the Computer tier as an OPERATION of its own.
        assert_eq!(ids, ["G1", "ST1", "O1", "ST1-op1"]);
        assert_eq!(d.hdag.nodes[2].content, "3 + 4 = 7");
        // Level from step 2, auditor from step 4 where step 5 left them out.
        assert_eq!(d.hdag.nodes[1].abstraction_level, AbstractionLevel::Step);
        assert_eq!(d.hdag.nodes[0].primary_auditor, AuditorType::Llm);
        assert_eq!(d.hdag.nodes[0].kind, crate::decompose::PROBLEM_KIND);
        assert_eq!(d.hdag.nodes[1].content, "He buys 4 more, so 3 + 4 = 7.");
        assert_eq!(d.hdag.nodes[1].primary_auditor, AuditorType::Llm);
        assert_eq!(d.hdag.nodes[3].content, "3 + 4 = 7");
        assert_eq!(d.hdag.nodes[3].primary_auditor, AuditorType::Auto);
        assert!(d.hdag.validate_spans(&t).is_ok());
        // The three edges, the OPERATION below ST1, and its premise (G1, as ST1's).
        assert_eq!(d.hdag.edges.len(), 5);
        // Step 2's words are in the trace verbatim, so nothing had to be mapped; the
        // re-routing is reported.
        assert_eq!(d.warnings.len(), 1, "{:?}", d.warnings);
        assert!(d.warnings[0].contains("ST1"), "{:?}", d.warnings);

        // A cycle in the final edges: invalid, named as step 5.
        // ST1 would both come before its part O1 and after O1, which it depends on.
        let cyclic = construct.replace(
            "{\"from\":\"O1\",\"to\":\"ST1\",\"type\":\"enables\"}",
            "{\"from\":\"ST1\",\"to\":\"O1\",\"type\":\"depends_on\"},{\"from\":\"ST1\",\"to\":\"O1\",\"type\":\"decomposes_to\"}",
        );
        let e = decompose_with(
            &t,
            script([
                LEVELS,
                SEGMENTS,
                RELS,
                AUDS,
                Box::leak(cyclic.into_boxed_str()),
            ]),
        )
        .unwrap_err();
        assert!(
            matches!(
                e,
                LlmDecomposeError::Invalid {
                    step: Step::Construct,
                    ..
                }
            ),
            "{e}"
        );
        assert!(
            e.to_string()
                .starts_with("step 5 (refine and construct the HDAG)"),
            "{e}"
        );

        // No segment of the answer is in the trace: step 5 fails, the fallback says so.
        let strangers = "# Final HDAG Construction\n## Finalized Nodes\n### Node Q1\n**Content**: Bananas are yellow.\n**Abstraction Level**: GOAL\n**Primary Auditor**: T_LLM\n## Finalized Edges\n[]\n";
        let r = decompose_with(&t, script([LEVELS, SEGMENTS, RELS, AUDS, strangers]));
        let d = or_heuristic(&t, &Options::default(), r).unwrap();
        assert!(d.fell_back);
        assert!(d.warnings[0].contains("step 5"), "{:?}", d.warnings);
    }

    #[test]
    fn prompts_carry_the_format_and_the_earlier_answers() {
        let t = trace();
        let mut d = Decomposer::new(&t);
        let p = d.next_prompt().unwrap();
        assert_eq!(p.step, Step::Levels);
        assert!(
            p.system.contains("step 1 of 5") && p.system.contains("# Abstraction Block Analysis")
        );
        assert!(p.user.contains("## Thinking Process:\nTom starts"));
        d.accept(LEVELS).unwrap();
        let p = d.next_prompt().unwrap();
        assert!(p.system.contains("### Segment G1") && p.system.contains("**Content**"));
        assert!(p.user.contains("## OPERATION Level") && p.user.contains("# Original Trace"));
        // A bad reply is refused and the step stays where it is.
        let e = d.accept("whatever").unwrap_err();
        assert_eq!(e.step(), Step::Segments);
        assert_eq!(d.step(), Some(Step::Segments));
        d.accept(SEGMENTS).unwrap();
        d.accept(RELS).unwrap();
        d.accept(AUDS).unwrap();
        let p = d.next_prompt().unwrap();
        assert!(
            p.user.contains("### Segment O1")
                && p.user.contains("O1 enables ST1")
                && p.user.contains("T_Auto")
        );
        assert!(p.system.contains("## Finalized Edges"));
        // Unfinished: finish names the step that was not answered.
        assert_eq!(d.finish().unwrap_err().step(), Step::Construct);
    }

    #[test]
    fn json_comments_are_stripped_outside_strings_only() {
        assert_eq!(
            strip_json_comments("[1, /* two */ 3, \"a // b /* c */\"] // end\n"),
            "[1,  3, \"a // b /* c */\"] \n"
        );
    }
}
