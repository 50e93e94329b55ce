//! Agent transcripts: a thinking that holds tool calls ([`trust_protocol::trace::blocks`]
//! markers, or a fenced code block with its output) or code, cut by its blocks.
//!
//! - A **tool call** is one segment, `TC1`, `TC2`, ... (the paper's "tool usage" node):
//!   the exact span of its block, so its code (or arguments) and the result the transcript
//!   reports are its text; the Computer tier judges it by re-running it
//!   ([`crate::computer::tool`]). A call of a persistent kernel rests on the kernel's
//!   earlier calls: its seats replay them, and they count in what a seat sees.
//! - Beside it, `TU1`, `TU2`, ...: the same span as a claim for a tier that reads words —
//!   that the code does what the problem asks and its result answers what the reasoning
//!   uses it for. It rests on its call and on the previous one's, and the final answer
//!   rests on the last: so a re-run certifies the execution, never the approach, and a
//!   transcript never passes on re-runs alone.
//! - A **statement after a result** that uses a value of it (or the first one after it
//!   that states a number) rests on the call and its use; a worded one gets, below it by
//!   `decomposes_to`, a restatement `RS` (its own text, for the Computer tier, resting on
//!   the call) checked against the result. The final answer likewise, against every result.
//! - **Code** in the prose (a fenced block with no output) is one unit, `CB1`, ..., for a
//!   tier that reads it: never cut line by line, never judged as equalities.
//! - **Messages** of other parties (a system instruction, a later user turn) are givens
//!   like the problem (`M1`, ...: context every seat reads, never a segment to judge), so
//!   a number a later turn gives grounds the steps that use it; **redacted** reasoning is
//!   opaque context: nothing of it is a segment or a given.
//!
//! Prose between blocks is cut exactly as any trace's ([`super::decompose`]).

use trust_protocol::{
    hdag::{AbstractionLevel, AuditorType, Complexity, Hdag, Relationship},
    trace::{
        Trace,
        blocks::{self, Block},
    },
};

use super::{Builder, DecomposeError, MAX_SEGMENT_BYTES, Options, PROBLEM_KIND, Para, Seg, text};
use crate::computer::{
    readable::{self, paragraphs},
    tool::{self, CODE_KIND, RESTATEMENT_KIND, TOOL_KIND, TOOL_USE_KIND, ToolKind},
};

/// Most earlier tool segments one statement is linked to through the values it shares.
const MAX_TOOL_LINKS: usize = 4;
/// Most tool results the final answer's restatement is checked against (the manifest's
/// dependency limit).
const MAX_ANSWER_TOOLS: usize = trust_protocol::tx::MAX_DEPENDENCIES;

/// A tool segment made so far.
pub(super) struct Tool {
    /// Its `TC` node.
    tc: usize,
    /// Its `TU` node.
    tu: usize,
    /// The numbers of its reported result.
    values: Vec<f64>,
    /// No statement with a number has followed it yet.
    fresh: bool,
    /// For a call of a persistent kernel: the tool's name (one kernel per name).
    kernel: Option<String>,
    /// The steps after it that rest on a tool result: the reading of this result that the
    /// next call (and the final answer) is made from.
    uses: Vec<usize>,
}

/// Whether a thinking is cut by its blocks: it holds block markers or a code fence.
pub(super) fn applies(thinking: &str) -> bool {
    blocks::has_markers(thinking) || thinking.lines().any(|l| l.trim_start().starts_with("```"))
}

/// A piece of the thinking, in order.
enum Piece<'a> {
    Prose(&'a str),
    Tool(&'a str),
    Code(&'a str),
    /// The body of another party's message: context, a given like the problem.
    Message(&'a str),
}

/// The thinking's pieces: prose, tool calls (marked, or a fenced code block with its
/// output), code blocks; messages and redacted reasoning are left out.
fn pieces(thinking: &str) -> Result<Vec<Piece<'_>>, DecomposeError> {
    let bs = blocks::blocks(thinking).map_err(|e| DecomposeError::Blocks(e.to_string()))?;
    let mut out = Vec::new();
    for b in bs {
        match b {
            Block::Text(r) => fenced(thinking.get(r).unwrap_or(""), &mut out),
            Block::Tool(call) => {
                let span = thinking.get(call.span).unwrap_or("").trim_end();
                if !span.is_empty() {
                    out.push(Piece::Tool(span));
                }
            }
            Block::Message { body, .. } => {
                let text = thinking.get(body).unwrap_or("").trim();
                if !text.is_empty() {
                    out.push(Piece::Message(text));
                }
            }
            Block::Redacted { .. } => {}
        }
    }
    Ok(out)
}

/// Cuts a text block at its code fences: prose, a fenced Python block followed by an
/// `output` fence or a sentence stating its output (a tool call), any other fence (code).
fn fenced<'a>(text: &'a str, out: &mut Vec<Piece<'a>>) {
    let mut prose_from = 0usize;
    let mut at = 0usize;
    let line_end = |from: usize| -> usize {
        text.get(from..)
            .and_then(|t| t.find('\n'))
            .map_or(text.len(), |p| from.saturating_add(p))
    };
    while at < text.len() {
        let end = line_end(at);
        let line = text.get(at..end).unwrap_or("");
        let next = end.saturating_add(1);
        if !line.trim_start().starts_with("```") {
            at = next;
            continue;
        }
        let open = at.saturating_add(line.len().saturating_sub(line.trim_start().len()));
        // The closing fence.
        let mut k = next;
        let mut close = None;
        while k < text.len() {
            let e = line_end(k);
            if text.get(k..e).is_some_and(|l| l.trim() == "```") {
                close = Some(e);
                break;
            }
            k = e.saturating_add(1);
        }
        let Some(close) = close else {
            break;
        };
        let mut span_end = close;
        let is_python = tool::code_fence(text.get(open..).unwrap_or("")).is_some();
        let mut is_tool = false;
        if is_python {
            // What follows: an output fence, or a sentence stating the output.
            let rest = text.get(close..).unwrap_or("");
            let skipped = rest.len().saturating_sub(rest.trim_start().len());
            let from = close.saturating_add(skipped);
            let after = text.get(from..).unwrap_or("");
            if after.starts_with("```output") {
                let mut j = line_end(from).saturating_add(1);
                while j < text.len() {
                    let e = line_end(j);
                    if text.get(j..e).is_some_and(|l| l.trim() == "```") {
                        span_end = e;
                        is_tool = true;
                        break;
                    }
                    j = e.saturating_add(1);
                }
            } else if !after.is_empty() && !after.starts_with("```") {
                let e = line_end(from);
                if tool::stated_output(text.get(from..e).unwrap_or("")).is_some() {
                    span_end = e;
                    is_tool = true;
                }
            }
        }
        let before = text.get(prose_from..open).unwrap_or("");
        if !before.trim().is_empty() {
            out.push(Piece::Prose(before));
        }
        let span = text.get(open..span_end).unwrap_or("").trim_end();
        if is_tool && tool::read_tool(span).is_some() {
            out.push(Piece::Tool(span));
        } else {
            let code = text.get(open..close).unwrap_or("").trim_end();
            out.push(Piece::Code(code));
            span_end = close;
        }
        prose_from = span_end;
        at = span_end;
    }
    let rest = text.get(prose_from..).unwrap_or("");
    if !rest.trim().is_empty() {
        out.push(Piece::Prose(rest));
    }
}

/// The HDAG of an agent transcript (see the module doc).
pub(super) fn decompose(
    trace: &Trace,
    options: &Options,
    max_segments: usize,
) -> Result<Hdag, DecomposeError> {
    let problem = trace.problem.trim();
    let thinking = trace.thinking.as_str();
    let ps = pieces(thinking)?;
    let outputs = readable::cut(trace.output.trim(), MAX_SEGMENT_BYTES);
    let mut b = Builder::new(trace);
    let goal = b.push(Seg {
        prefix: "G",
        content: problem,
        level: AbstractionLevel::Goal,
        kind: PROBLEM_KIND,
        auditor: AuditorType::Human,
        secondary: vec![AuditorType::Llm],
        complexity: Complexity::High,
    })?;
    let mut first = true;
    let mut steps = 0usize;
    for p in &ps {
        match p {
            Piece::Prose(text) => {
                let paras: Vec<Para<'_>> = paragraphs(text)
                    .into_iter()
                    .map(|text| Para {
                        text,
                        lines: readable::lines_of(text),
                    })
                    .collect();
                let plan = first
                    && paras.first().is_some_and(|p| {
                        paras.len() > 1
                            && p.text.len() <= MAX_SEGMENT_BYTES
                            && p.units().all(|u| !u.is_math && !readable::readable(u.text))
                            && text::plans(p.text)
                    });
                let tactics: Vec<_> = paras
                    .iter()
                    .enumerate()
                    .map(|(i, p)| {
                        if i == 0 && plan {
                            Vec::new()
                        } else {
                            p.chunks(thinking)
                        }
                    })
                    .collect();
                steps = steps.saturating_add(paras.iter().map(Para::unit_count).sum::<usize>());
                b.steps_one_by_one(&paras, &tactics, plan, goal)?;
            }
            Piece::Tool(text) => {
                b.push_tool(text, goal)?;
                steps = steps.saturating_add(1);
            }
            Piece::Code(text) => {
                b.push_code(text, goal)?;
                steps = steps.saturating_add(1);
            }
            Piece::Message(text) => {
                // Another party's message (a system instruction, a later user turn): a
                // given like the problem, never a segment to judge; a long one reaches
                // only what rests on it.
                if text.len() <= MAX_SEGMENT_BYTES {
                    b.push(Seg {
                        prefix: "M",
                        content: text,
                        level: AbstractionLevel::Goal,
                        kind: PROBLEM_KIND,
                        auditor: AuditorType::Human,
                        secondary: vec![AuditorType::Llm],
                        complexity: Complexity::High,
                    })?;
                }
                continue;
            }
        }
        first = false;
    }
    if steps == 0 {
        return Err(DecomposeError::NoSteps);
    }
    let made = b.conclude(trace, options, &outputs, goal)?;
    b.conclude_tools(&made)?;
    if b.nodes.len() > max_segments {
        return Err(DecomposeError::TooManySegments {
            steps,
            bytes: thinking.len(),
            segments: b.nodes.len(),
            max: max_segments,
        });
    }
    let hdag = b.finish();
    hdag.validate()?;
    Ok(hdag)
}

impl<'t> Builder<'t> {
    /// A tool call: its `TC` segment (Computer) and its `TU` claim (a tier that reads
    /// words), each the block's exact span.
    fn push_tool(&mut self, text: &str, goal: usize) -> Result<(), DecomposeError> {
        let Some(t) = tool::read_tool(text) else {
            return self.push_code(text, goal);
        };
        let kernel =
            matches!(t.kind(), ToolKind::Code(trust_sandbox::Mode::Cell)).then(|| t.name.clone());
        let tc = self.push(Seg {
            prefix: "TC",
            content: text,
            level: AbstractionLevel::Step,
            kind: TOOL_KIND,
            auditor: AuditorType::Auto,
            secondary: vec![AuditorType::Llm],
            complexity: Complexity::Low,
        })?;
        self.edge(goal, tc, Relationship::DecomposesTo, 1.0);
        // A kernel's call runs after its earlier calls: its seats replay them.
        let earlier: Vec<usize> = self
            .tools
            .iter()
            .filter(|x| kernel.is_some() && x.kernel == kernel)
            .map(|x| x.tc)
            .collect();
        for e in earlier {
            self.edge(tc, e, Relationship::DependsOn, 0.9);
        }
        let tu = self.push(Seg {
            prefix: "TU",
            content: text,
            level: AbstractionLevel::Step,
            kind: TOOL_USE_KIND,
            auditor: AuditorType::Llm,
            secondary: vec![AuditorType::Human],
            complexity: Complexity::Medium,
        })?;
        self.edge(goal, tu, Relationship::DecomposesTo, 1.0);
        self.edge(tu, goal, Relationship::DependsOn, 0.8);
        self.edge(tu, tc, Relationship::DependsOn, 0.9);
        if let Some(prev) = self.tools.last().map(|x| x.tu) {
            self.edge(tu, prev, Relationship::DependsOn, 0.7);
        }
        // The call is made from what the steps since the previous one read of its result.
        let read: Vec<usize> = self
            .tools
            .last()
            .map(|x| x.uses.clone())
            .unwrap_or_default();
        for u in read {
            self.edge(tu, u, Relationship::DependsOn, 0.8);
        }
        // Later steps link to the result by what it mentions.
        let _ = self.links.premises(tc, t.result, goal);
        let values = tool::values(t.result, false)
            .into_iter()
            .map(|v| v.value)
            .collect();
        self.tools.push(Tool {
            tc,
            tu,
            values,
            fresh: true,
            kernel,
            uses: Vec::new(),
        });
        self.last_step = Some(tu);
        Ok(())
    }

    /// A code block with no output: one unit for a tier that reads it.
    fn push_code(&mut self, text: &str, goal: usize) -> Result<(), DecomposeError> {
        let id = self.push(Seg {
            prefix: "CB",
            content: text,
            level: AbstractionLevel::Step,
            kind: CODE_KIND,
            auditor: AuditorType::Llm,
            secondary: vec![AuditorType::Human],
            complexity: Complexity::Medium,
        })?;
        self.edge(goal, id, Relationship::DecomposesTo, 1.0);
        if let Some(prev) = self.tools.last().map(|x| x.tu) {
            self.edge(id, prev, Relationship::DependsOn, 0.6);
        }
        self.last_step = Some(id);
        Ok(())
    }

    /// After step `id` (text `text`): it rests on the tool calls whose results it uses (a
    /// value it shares with one, or the first number stated after the latest), and a
    /// worded one gets its restatement checked against the latest such result.
    pub(super) fn after_tools(&mut self, id: usize, text: &str) -> Result<(), DecomposeError> {
        if self.tools.is_empty() {
            return Ok(());
        }
        let stated = tool::values(text, true);
        if stated.is_empty() {
            return Ok(());
        }
        let mut restated: Option<usize> = None;
        if let Some(last) = self.tools.last_mut()
            && last.fresh
        {
            last.fresh = false;
            restated = Some(self.tools.len().saturating_sub(1));
        }
        let shares: Vec<usize> = self
            .tools
            .iter()
            .enumerate()
            .rev()
            .filter(|(_, t)| {
                stated.iter().any(|s| {
                    s.value.abs() > 1.0 && t.values.iter().any(|r| tool::same(s.value, *r))
                })
            })
            .map(|(k, _)| k)
            .take(MAX_TOOL_LINKS)
            .collect();
        for &k in &shares {
            restated.get_or_insert(k);
            if let Some((tc, tu)) = self.tools.get(k).map(|t| (t.tc, t.tu)) {
                self.edge(id, tc, Relationship::DependsOn, 0.9);
                self.edge(id, tu, Relationship::DependsOn, 0.9);
            }
        }
        let Some((tc, tu)) = restated
            .and_then(|k| self.tools.get(k))
            .map(|t| (t.tc, t.tu))
        else {
            return Ok(());
        };
        self.edge(id, tc, Relationship::DependsOn, 0.9);
        self.edge(id, tu, Relationship::DependsOn, 0.9);
        if let Some(last) = self.tools.last_mut() {
            last.uses.push(id);
        }
        if self.is_worded_step(id) && tool::is_prose(text) {
            let rs = self.push(Seg {
                prefix: "RS",
                content: text,
                level: AbstractionLevel::Operation,
                kind: RESTATEMENT_KIND,
                auditor: AuditorType::Auto,
                secondary: vec![AuditorType::Llm],
                complexity: Complexity::Low,
            })?;
            self.edge(id, rs, Relationship::DecomposesTo, 1.0);
            self.edge(rs, tc, Relationship::DependsOn, 0.9);
        }
        Ok(())
    }

    /// The final answer rests on the last tool call and its use; a worded one gets its
    /// restatement, checked against the results of the calls (the latest first).
    fn conclude_tools(&mut self, conclusions: &[usize]) -> Result<(), DecomposeError> {
        let Some((tc, tu, read)) = self.tools.last().map(|t| (t.tc, t.tu, t.uses.clone())) else {
            return Ok(());
        };
        let calls: Vec<usize> = self
            .tools
            .iter()
            .rev()
            .take(MAX_ANSWER_TOOLS)
            .map(|t| t.tc)
            .collect();
        for &c in conclusions {
            self.edge(c, tc, Relationship::DependsOn, 0.9);
            self.edge(c, tu, Relationship::DependsOn, 0.9);
            for &u in &read {
                self.edge(c, u, Relationship::DependsOn, 0.8);
            }
            let Some(content) = self.nodes.get(c).map(|n| n.content.clone()) else {
                continue;
            };
            if !self.is_worded_step(c)
                || !tool::is_prose(&content)
                || tool::values(&content, true).is_empty()
            {
                continue;
            }
            let Some(span) = self.output_span(&content) else {
                continue;
            };
            let rs = self.push(Seg {
                prefix: "RS",
                content: span,
                level: AbstractionLevel::Operation,
                kind: RESTATEMENT_KIND,
                auditor: AuditorType::Auto,
                secondary: vec![AuditorType::Llm],
                complexity: Complexity::Low,
            })?;
            self.edge(c, rs, Relationship::DecomposesTo, 1.0);
            for &call in calls.iter().rev() {
                self.edge(rs, call, Relationship::DependsOn, 0.9);
            }
        }
        Ok(())
    }

    /// `content` as a span of the trace's output (a conclusion's text is one).
    fn output_span(&self, content: &str) -> Option<&'t str> {
        let trace: &'t Trace = self.trace;
        let out = trace.output.as_str();
        let at = out.find(content)?;
        out.get(at..at.saturating_add(content.len()))
    }
}

/// Where each tool call, code block and other party's message or redacted reasoning lies
/// in the thinking: (bytes, whether it is a tool call, its text for a tool call or code).
fn held(thinking: &str) -> Option<Vec<(std::ops::Range<usize>, Option<Piece<'_>>)>> {
    let mut out = Vec::new();
    for p in pieces(thinking).ok()? {
        let text = match p {
            Piece::Tool(t) | Piece::Code(t) => t,
            Piece::Prose(_) | Piece::Message(_) => continue,
        };
        let at = super::text::offset_in(thinking, text)?;
        out.push((at..at.saturating_add(text.len()), Some(p)));
    }
    for b in blocks::blocks(thinking).ok()? {
        if let Block::Message { span, .. } | Block::Redacted { span, .. } = b {
            out.push((span, None));
        }
    }
    out.sort_by_key(|(r, _)| r.start);
    Some(out)
}

/// Where `content` first lies in `thinking`, as bytes.
fn first_in(thinking: &str, content: &str) -> Option<std::ops::Range<usize>> {
    let at = thinking.find(content)?;
    Some(at..at.saturating_add(content.len()))
}

/// A tool call placed by [`enforce_tools`]: where it ends in the thinking, its `TC` and
/// `TU` ids, its result's values and its kernel (for a call of a persistent kernel).
type Call = (usize, String, String, Vec<f64>, Option<String>);

/// Post-processing of an HDAG another decomposer made (the paper's LLM pipeline) of an
/// agent transcript: a node that cuts into a tool call, a code block, a message or
/// redacted reasoning is dropped (its edges bridged); each tool call becomes its `TC`
/// segment and `TU` claim, each code block a `CB` unit, with the edges the heuristic
/// builder gives them (a kernel's calls rest on its earlier ones, a use on its call and the
/// previous use, a later node that states a value of a result on that call and its use,
/// the conclusion on the last call and its use). Returns what was changed, for the
/// provider to read; nothing for a thinking without blocks.
pub fn enforce_tools(hdag: &mut Hdag, trace: &Trace) -> Vec<String> {
    use trust_protocol::hdag::{HdagEdge, HdagNode, Strength};
    let thinking = trace.thinking.as_str();
    if !applies(thinking) {
        return Vec::new();
    }
    let Some(spans) = held(thinking) else {
        return vec![
            "the thinking's block markers do not read: its tool calls were not made segments"
                .into(),
        ];
    };
    super::mark_problem(hdag, trace);
    let mut notes = Vec::new();
    let cuts = |r: &std::ops::Range<usize>| {
        spans
            .iter()
            .any(|(s, _)| r.start < s.end && s.start < r.end)
    };
    let dropped: Vec<String> = hdag
        .nodes
        .iter()
        .filter(|n| n.kind != PROBLEM_KIND)
        .filter(|n| first_in(thinking, &n.content).is_some_and(|r| cuts(&r)))
        .map(|n| n.id.clone())
        .collect();
    if !dropped.is_empty() {
        notes.push(format!(
            "{} segment(s) cut into a tool call, code or another party's message and were dropped: {}",
            dropped.len(),
            dropped.join(", ")
        ));
        hdag.nodes.retain(|n| !dropped.contains(&n.id));
        let edges = std::mem::take(&mut hdag.edges);
        hdag.edges = super::bridge::bridge(edges, &dropped);
    }
    let goal = hdag
        .nodes
        .iter()
        .find(|n| n.kind == PROBLEM_KIND)
        .map(|n| n.id.clone());
    let mut taken: std::collections::BTreeSet<String> =
        hdag.nodes.iter().map(|n| n.id.clone()).collect();
    let mut fresh = |prefix: &str| {
        let mut k = 1usize;
        loop {
            let id = format!("{prefix}{k}");
            if taken.insert(id.clone()) {
                return id;
            }
            k = k.saturating_add(1);
        }
    };
    let edge = |from: &str, to: &str, relationship: Relationship| HdagEdge {
        from: from.to_string(),
        to: to.to_string(),
        relationship,
        strength: Some(Strength::Strong),
        confidence: Some(0.9),
    };
    let node = |id: String, content: &str, kind: &str, auditor: AuditorType| HdagNode {
        summary: text::summary(content),
        id,
        content: content.to_string(),
        abstraction_level: AbstractionLevel::Step,
        kind: kind.to_string(),
        secondary_auditors: vec![if auditor == AuditorType::Auto {
            AuditorType::Llm
        } else {
            AuditorType::Human
        }],
        primary_auditor: auditor,
        complexity: if auditor == AuditorType::Auto {
            Complexity::Low
        } else {
            Complexity::Medium
        },
    };
    // (end of the call in the thinking, TC id, TU id, result values)
    let mut calls: Vec<Call> = Vec::new();
    let (mut made, mut codes) = (0usize, 0usize);
    for (range, piece) in &spans {
        match piece {
            Some(Piece::Tool(text)) => {
                let Some(t) = tool::read_tool(text) else {
                    continue;
                };
                let kernel = matches!(t.kind(), ToolKind::Code(trust_sandbox::Mode::Cell))
                    .then(|| t.name.clone());
                let (tc, tu) = (fresh("TC"), fresh("TU"));
                hdag.nodes
                    .push(node(tc.clone(), text, TOOL_KIND, AuditorType::Auto));
                hdag.nodes
                    .push(node(tu.clone(), text, TOOL_USE_KIND, AuditorType::Llm));
                if let Some(g) = &goal {
                    hdag.edges.push(edge(g, &tc, Relationship::DecomposesTo));
                    hdag.edges.push(edge(g, &tu, Relationship::DecomposesTo));
                    hdag.edges.push(edge(&tu, g, Relationship::DependsOn));
                }
                for (_, earlier, _, _, k) in &calls {
                    if kernel.is_some() && *k == kernel {
                        hdag.edges.push(edge(&tc, earlier, Relationship::DependsOn));
                    }
                }
                hdag.edges.push(edge(&tu, &tc, Relationship::DependsOn));
                if let Some((_, _, prev, _, _)) = calls.last() {
                    hdag.edges.push(edge(&tu, prev, Relationship::DependsOn));
                }
                let values = tool::values(t.result, false)
                    .into_iter()
                    .map(|v| v.value)
                    .collect();
                calls.push((range.end, tc, tu, values, kernel));
                made = made.saturating_add(1);
            }
            Some(Piece::Code(text)) => {
                let id = fresh("CB");
                hdag.nodes
                    .push(node(id.clone(), text, CODE_KIND, AuditorType::Llm));
                if let Some(g) = &goal {
                    hdag.edges.push(edge(g, &id, Relationship::DecomposesTo));
                }
                codes = codes.saturating_add(1);
            }
            _ => {}
        }
    }
    // Other parties' messages: givens like the problem.
    for p in pieces(thinking).unwrap_or_default() {
        if let Piece::Message(text) = p
            && text.len() <= MAX_SEGMENT_BYTES
            && !hdag.nodes.iter().any(|n| n.content == text)
        {
            let mut m = node(fresh("M"), text, PROBLEM_KIND, AuditorType::Human);
            m.abstraction_level = AbstractionLevel::Goal;
            m.complexity = Complexity::High;
            hdag.nodes.push(m);
        }
    }
    // What rests on a result: a later node stating one of its values; the conclusion.
    let output = trace.output.as_str();
    let mut links = Vec::new();
    for n in hdag.nodes.iter().filter(|n| {
        n.kind != PROBLEM_KIND && ![TOOL_KIND, TOOL_USE_KIND, CODE_KIND].contains(&n.kind.as_str())
    }) {
        let in_output = n.kind == "conclusion"
            || (!thinking.contains(&n.content) && output.contains(&n.content));
        let after = first_in(thinking, &n.content).map(|r| r.start);
        let stated = tool::values(&n.content, true);
        let used = calls.iter().rev().find(|(end, _, _, values, _)| {
            (in_output || after.is_some_and(|a| a >= *end))
                && stated
                    .iter()
                    .any(|s| s.value.abs() > 1.0 && values.iter().any(|r| tool::same(s.value, *r)))
        });
        let last = in_output.then(|| calls.last()).flatten();
        for (_, tc, tu, _, _) in used.into_iter().chain(last) {
            links.push(edge(&n.id, tc, Relationship::DependsOn));
            links.push(edge(&n.id, tu, Relationship::DependsOn));
        }
    }
    hdag.edges.extend(links);
    hdag.edges
        .dedup_by(|a, b| a.from == b.from && a.to == b.to && a.relationship == b.relationship);
    if made > 0 || codes > 0 {
        notes.push(format!(
            "the thinking's {made} tool call(s) are one segment each (TC, re-run by the Computer tier) with their use (TU, for a tier that reads words), and its {codes} code block(s) one unit each"
        ));
    }
    notes
}

/// Whether node `n` of `hdag` is a restatement the Computer tier checks against a tool
/// call: of type `restatement`, in words, resting on a tool segment. Its check covers it
/// whole (a value it states against the result), as the heuristic builder routes it.
pub(super) fn restates_a_call(hdag: &Hdag, n: &trust_protocol::hdag::HdagNode) -> bool {
    n.kind == RESTATEMENT_KIND
        && tool::is_prose(&n.content)
        && hdag.dependencies_of(&n.id).any(|d| {
            hdag.index_of(d)
                .and_then(|i| hdag.nodes.get(i))
                .is_some_and(|t| t.kind == TOOL_KIND)
        })
}

/// A provider's HDAG of an agent transcript: each tool call of the thinking is one
/// segment of type `tool_call` (its whole block), every such segment is one, and they are
/// listed in trace order (a kernel's earlier cells are read in node order).
pub(super) fn check_tool_segments(hdag: &Hdag, trace: &Trace) -> Result<(), DecomposeError> {
    let thinking = trace.thinking.as_str();
    let mut last: Option<(usize, &str)> = None;
    for n in hdag.nodes.iter().filter(|n| n.kind == TOOL_KIND) {
        if tool::read_tool(&n.content).is_none() {
            return Err(DecomposeError::ToolSegments(format!(
                "segment {} is of type {TOOL_KIND} but is not one whole tool call of the thinking",
                n.id
            )));
        }
        let at = thinking.find(&n.content).unwrap_or(0);
        if let Some((before, id)) = last
            && at <= before
        {
            return Err(DecomposeError::ToolSegments(format!(
                "tool segments {id} and {} are not in trace order: a kernel's earlier calls are replayed in the order the HDAG lists them",
                n.id
            )));
        }
        last = Some((at, n.id.as_str()));
    }
    if !applies(thinking) {
        return Ok(());
    }
    for (_, piece) in held(thinking).unwrap_or_default() {
        if let Some(Piece::Tool(text)) = piece
            && !hdag
                .nodes
                .iter()
                .any(|n| n.kind == TOOL_KIND && n.content == text)
        {
            return Err(DecomposeError::ToolSegments(format!(
                "the thinking's tool call {:?} has no segment of its own: give it a node of type {TOOL_KIND} whose content is its whole block, routed to T_Auto",
                text::summary(text)
            )));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests;
