//! The state machine of the five steps, and the HDAG it builds from their replies: each
//! segment placed on an exact span of the trace (or dropped, its `depends_on` /
//! `decomposes_to` chains bridged), validated, and re-routed by what each tier covers.

use std::collections::{BTreeMap, BTreeSet};

use trust_protocol::{
    hdag::{Complexity, Hdag, HdagNode, MAX_SEGMENT_BYTES},
    trace::Trace,
};

use crate::decompose::bridge::bridge;

use super::{
    Decomposition, LlmDecomposeError, Prompt, ReplyError, Step,
    align::{Mapper, Placement},
    parse::*,
    prompt::{system, trace_text},
};

/// The five-step decomposition of one trace by a model, reply by reply: hand it each
/// step's reply in turn ([`Prompt`] says what to ask next), then build the HDAG.
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
                source: ReplyError::AfterLastStep,
            });
        };
        let bad = |source: ReplyError| LlmDecomposeError::Malformed { step, source };
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
        let bad = |source: ReplyError| LlmDecomposeError::Malformed { step, source };
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
                .ok_or_else(|| bad(ReplyError::NodeNoLevel(n.id.clone())))?;
            let (primary, secondary) = match (n.primary, assigned.get(n.id.as_str())) {
                (Some(p), _) => (p, n.secondary.clone()),
                (None, Some(a)) => (a.primary, a.secondary.clone()),
                (None, None) => {
                    return Err(bad(ReplyError::NodeNoPrimary(n.id.clone())));
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
            return Err(bad(ReplyError::NoSpan));
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
        // A transcript's tool calls are one segment each (and code one unit), never cut
        // by the model; messages and redacted reasoning are no segments.
        warnings.extend(crate::decompose::enforce_tools(&mut hdag, self.trace));
        warnings.extend(crate::decompose::enforce_coverage(&mut hdag, self.trace));
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
