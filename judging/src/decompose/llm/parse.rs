//! Reading each step's reply: the appendix's markdown (headings, `**Field**:` values,
//! `### Segment ID` blocks) and JSON (comments and code fences allowed), parsed strictly
//! into the protocol's own values. Replies are bounded ([`MAX_REPLY_BYTES`]) and ids must
//! be well formed.

use std::{
    collections::{BTreeMap, BTreeSet},
    sync::Arc,
};

use serde_json::Value;
use trust_protocol::hdag::{
    AbstractionLevel, AuditorType, Complexity, HdagEdge, MAX_EDGES, MAX_NODES, Relationship,
    Strength,
};

use super::{MAX_REPLY_BYTES, ReplyError};

/// A block of step 1's reply: one abstraction level and the text it covers.
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
pub(super) fn heading(line: &str) -> Option<(usize, &str)> {
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
fn fields(body: &str, names: &[&str]) -> Result<BTreeMap<String, String>, ReplyError> {
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
            return Err(ReplyError::FieldTwice(name.clone()));
        }
    }
    Ok(out)
}

/// The value without markdown emphasis, brackets or quotes.
pub(super) fn bare(v: &str) -> String {
    v.chars()
        .filter(|c| !matches!(c, '*' | '[' | ']' | '`' | '"'))
        .collect::<String>()
        .trim()
        .to_string()
}

pub(super) fn clip(s: &str) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() > 60 {
        format!("{}…", one.chars().take(59).collect::<String>())
    } else {
        one
    }
}

/// The protocol's own value named by `name` (its serde spelling, in any letter case: the
/// model may write `step`, `Step` or `STEP`), so the names live in one place.
pub(super) fn named<T: serde::de::DeserializeOwned>(name: &str) -> Option<T> {
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

pub(super) fn level_named(name: &str) -> Option<AbstractionLevel> {
    named(name)
}

pub(super) fn auditor_named(name: &str) -> Option<AuditorType> {
    named(name)
}

pub(super) fn relationship_named(v: &str) -> Option<Relationship> {
    named(v)
}

pub(super) fn strength_named(v: &str) -> Option<Strength> {
    named(v)
}

pub(super) fn complexity_named(v: &str) -> Result<Complexity, ReplyError> {
    named(v).ok_or_else(|| ReplyError::Complexity(clip(&bare(v))))
}

fn auditors(v: &str) -> Result<Vec<AuditorType>, ReplyError> {
    let b = bare(v);
    let mut out = Vec::new();
    for part in b.split(|c: char| c == ',' || c.is_whitespace()) {
        if part.is_empty() {
            continue;
        }
        let a = auditor_named(part).ok_or_else(|| ReplyError::UnknownAuditor(clip(part)))?;
        if !out.contains(&a) {
            out.push(a);
        }
    }
    Ok(out)
}

pub(super) fn valid_id(id: &str) -> bool {
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
pub(super) fn strip_json_comments(s: &str) -> String {
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
fn json_in(body: &str, open: char) -> Result<Value, ReplyError> {
    let text = strip_json_comments(body);
    let start = text.find(open).ok_or(ReplyError::NoJson(if open == '[' {
        "array"
    } else {
        "object"
    }))?;
    let rest = text.get(start..).unwrap_or("");
    let mut it = serde_json::Deserializer::from_str(rest).into_iter::<Value>();
    match it.next() {
        Some(Ok(v)) => Ok(v),
        Some(Err(e)) => Err(ReplyError::Json(Arc::new(e))),
        None => Err(ReplyError::NoJsonValue),
    }
}

fn str_field<'a>(v: &'a Value, keys: &[&str]) -> Option<&'a str> {
    keys.iter().find_map(|k| v.get(*k).and_then(Value::as_str))
}

fn check_len(reply: &str) -> Result<(), ReplyError> {
    if reply.len() > MAX_REPLY_BYTES {
        return Err(ReplyError::TooLong(reply.len()));
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------
// Parsers, one per step
// ---------------------------------------------------------------------------------------

/// Step 1: the `## LEVEL Level` blocks under `# Abstraction Block Analysis`. The `#
/// Block Structure` summary is not needed and not read.
pub fn parse_levels(reply: &str) -> Result<Vec<LevelBlock>, ReplyError> {
    check_len(reply)?;
    let body = section(reply, 1, "Abstraction Block Analysis")
        .ok_or(ReplyError::NoSection("Abstraction Block Analysis"))?;
    let mut out = Vec::new();
    for (title, text) in subsections(body, 2) {
        let name = title
            .strip_suffix("Level")
            .or_else(|| title.strip_suffix("level"))
            .unwrap_or(title);
        let level = level_named(name).ok_or_else(|| ReplyError::LevelHeading(clip(title)))?;
        let text = clean_block(text);
        if !text.is_empty() {
            out.push(LevelBlock { level, text });
        }
    }
    if out.is_empty() {
        return Err(ReplyError::NoLevelBlock);
    }
    Ok(out)
}

/// Step 2: `### Segment ID` blocks under `## LEVEL Segmentation` headings.
pub fn parse_segments(reply: &str) -> Result<Vec<Segment>, ReplyError> {
    check_len(reply)?;
    let body = section(reply, 1, "Segmentation Analysis")
        .ok_or(ReplyError::NoSection("Segmentation Analysis"))?;
    let mut out: Vec<Segment> = Vec::new();
    for (title, level_body) in subsections(body, 2) {
        let name = title.split_whitespace().next().unwrap_or("");
        let level =
            level_named(name).ok_or_else(|| ReplyError::SegmentationHeading(clip(title)))?;
        for (seg_title, seg_body) in blocks(level_body, 3, "Segment") {
            let id = heading_id(seg_title, "Segment")
                .ok_or_else(|| ReplyError::NotSegmentHeading(clip(seg_title)))?;
            if !valid_id(&id) {
                return Err(ReplyError::BadSegmentId(clip(&id)));
            }
            if out.iter().any(|s| s.id == id) {
                return Err(ReplyError::SegmentTwice(id));
            }
            let f = fields(seg_body, &["Content", "Type", "Summary", "Complexity"])
                .map_err(ReplyError::in_segment(&id))?;
            let content = f
                .get("content")
                .filter(|c| !c.trim().is_empty())
                .ok_or_else(|| ReplyError::SegmentNoContent(id.clone()))?
                .clone();
            let complexity = match f.get("complexity") {
                Some(c) => Some(complexity_named(c).map_err(ReplyError::in_segment(&id))?),
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
                return Err(ReplyError::TooManySegments);
            }
        }
    }
    if out.is_empty() {
        return Err(ReplyError::NoSegment);
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
pub fn parse_relationships(
    reply: &str,
    known: &BTreeSet<String>,
) -> Result<Vec<Relation>, ReplyError> {
    check_len(reply)?;
    let body = section(reply, 1, "Relationship Analysis")
        .ok_or(ReplyError::NoSection("Relationship Analysis"))?;
    let check = |id: &str| -> Result<(), ReplyError> {
        if known.contains(id) {
            Ok(())
        } else {
            Err(ReplyError::UnknownRelated(clip(id)))
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
                    RelSection::Other => return Err(ReplyError::UntypedArrow(clip(&item))),
                },
                Some(v) => relationship_named(v.trim_end_matches(':'))
                    .ok_or_else(|| ReplyError::NotARelation(clip(&item)))?,
                None => return Err(ReplyError::NoVerb(clip(&item))),
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
                return Err(ReplyError::TooManyRelationships);
            }
        }
    }
    if out.is_empty() {
        let summary =
            section(reply, 1, "Relationship Summary").ok_or(ReplyError::NoRelationshipSummary)?;
        let v = json_in(summary, '[')?;
        for r in v.as_array().into_iter().flatten() {
            let (Some(from), Some(to), Some(rel)) = (
                str_field(r, &["from_segment", "from"]),
                str_field(r, &["to_segment", "to"]),
                str_field(r, &["relationship_type", "relationship", "type"]),
            ) else {
                return Err(ReplyError::SummaryEntry);
            };
            check(from)?;
            check(to)?;
            out.push(Relation {
                from: from.to_string(),
                to: to.to_string(),
                relationship: relationship_named(rel)
                    .ok_or_else(|| ReplyError::UnknownRelationship(clip(rel)))?,
                strength: str_field(r, &["strength"]).and_then(strength_named),
            });
        }
    }
    if out.is_empty() {
        return Err(ReplyError::NoRelationship);
    }
    Ok(out)
}

/// Step 4: `### Segment ID` blocks with `**Primary Auditor**` (and optionally
/// `**Secondary Auditors**`), or, failing any, the `## Multi-Auditor Segments` JSON.
pub fn parse_assignments(
    reply: &str,
    known: &BTreeSet<String>,
) -> Result<Vec<Assignment>, ReplyError> {
    check_len(reply)?;
    let body = section(reply, 1, "Auditor Assignment Analysis")
        .ok_or(ReplyError::NoSection("Auditor Assignment Analysis"))?;
    let mut out: Vec<Assignment> = Vec::new();
    let push = |out: &mut Vec<Assignment>,
                id: String,
                primary: AuditorType,
                secondary: Vec<AuditorType>| {
        if !known.contains(&id) {
            return Err(ReplyError::UnknownAssigned(clip(&id)));
        }
        if out.iter().any(|a| a.id == id) {
            return Err(ReplyError::AssignedTwice(id));
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
                return Err(ReplyError::NotSegmentHeading(clip(title)));
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
            .map_err(ReplyError::in_segment(&id))?;
            let primary = f
                .get("primary auditor")
                .ok_or_else(|| ReplyError::NoPrimary(id.clone()))
                .and_then(|v| auditors(v).map_err(ReplyError::in_segment(&id)))?;
            let [primary] = primary.as_slice() else {
                return Err(ReplyError::in_segment(&id)(ReplyError::PrimaryNotOneOf));
            };
            let secondary = match f.get("secondary auditors") {
                Some(v) => auditors(v).map_err(ReplyError::in_segment(&id))?,
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
                return Err(ReplyError::MultiAuditorEntry);
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
        return Err(ReplyError::NoAssignment);
    }
    Ok(out)
}

fn edge_from_json(e: &Value, i: usize) -> Result<HdagEdge, ReplyError> {
    let (Some(from), Some(to)) = (str_field(e, &["from"]), str_field(e, &["to"])) else {
        return Err(ReplyError::EdgeEnds(i));
    };
    let rel = str_field(e, &["relationship", "type"]).ok_or_else(|| ReplyError::EdgeNoType {
        i,
        from: from.to_string(),
        to: to.to_string(),
    })?;
    let relationship = relationship_named(rel).ok_or_else(|| ReplyError::EdgeType {
        i,
        from: from.to_string(),
        to: to.to_string(),
        kind: clip(rel),
    })?;
    Ok(HdagEdge {
        from: from.to_string(),
        to: to.to_string(),
        relationship,
        strength: str_field(e, &["strength"]).and_then(strength_named),
        confidence: e.get("confidence").and_then(Value::as_f64),
    })
}

fn edges_from_json(v: &Value) -> Result<Vec<HdagEdge>, ReplyError> {
    let list = v.as_array().ok_or(ReplyError::EdgesNotArray)?;
    if list.len() > MAX_EDGES {
        return Err(ReplyError::TooManyEdges);
    }
    list.iter()
        .enumerate()
        .map(|(i, e)| edge_from_json(e, i))
        .collect()
}

fn nodes_from_markdown(body: &str) -> Result<Vec<FinalNode>, ReplyError> {
    let mut out: Vec<FinalNode> = Vec::new();
    for (title, text) in blocks(body, 3, "Node") {
        let id =
            heading_id(title, "Node").ok_or_else(|| ReplyError::NotNodeHeading(clip(title)))?;
        if !valid_id(&id) {
            return Err(ReplyError::BadNodeId(clip(&id)));
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
        .map_err(ReplyError::in_node(&id))?;
        let content = f
            .get("content")
            .filter(|c| !c.trim().is_empty())
            .ok_or_else(|| ReplyError::NodeNoContent(id.clone()))?
            .clone();
        let level = match f.get("abstraction level") {
            Some(l) => Some(
                level_named(l)
                    .ok_or_else(|| ReplyError::in_node(&id)(ReplyError::UnknownLevel(clip(l))))?,
            ),
            None => None,
        };
        let primary = match f.get("primary auditor") {
            Some(v) => match auditors(v).map_err(ReplyError::in_node(&id))?.as_slice() {
                [one] => Some(*one),
                _ => return Err(ReplyError::in_node(&id)(ReplyError::PrimaryNotOne)),
            },
            None => None,
        };
        let complexity = match f
            .get("verification complexity")
            .or_else(|| f.get("complexity"))
        {
            Some(c) => Some(complexity_named(c).map_err(ReplyError::in_node(&id))?),
            None => None,
        };
        out.push(FinalNode {
            content,
            level,
            kind: f.get("type").map(|s| bare(s)).unwrap_or_default(),
            summary: f.get("summary").map(|s| bare(s)).unwrap_or_default(),
            primary,
            secondary: match f.get("secondary auditors") {
                Some(v) => auditors(v).map_err(ReplyError::in_node(&id))?,
                None => Vec::new(),
            },
            complexity,
            id,
        });
        if out.len() > MAX_NODES {
            return Err(ReplyError::TooManyNodes);
        }
    }
    Ok(out)
}

fn nodes_from_json(v: &Value) -> Result<Vec<FinalNode>, ReplyError> {
    let list = v
        .get("nodes")
        .and_then(Value::as_array)
        .ok_or(ReplyError::NoNodesArray)?;
    if list.len() > MAX_NODES {
        return Err(ReplyError::TooManyNodes);
    }
    let mut out = Vec::new();
    for (i, n) in list.iter().enumerate() {
        let (Some(id), Some(content)) = (str_field(n, &["id"]), str_field(n, &["content"])) else {
            return Err(ReplyError::NodeFields(i));
        };
        let level = match str_field(n, &["abstraction_level"]) {
            Some(l) => Some(
                level_named(l)
                    .ok_or_else(|| ReplyError::in_node(id)(ReplyError::UnknownLevel(clip(l))))?,
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
pub fn parse_construction(reply: &str) -> Result<Construction, ReplyError> {
    check_len(reply)?;
    let body = section(reply, 1, "Final HDAG Construction")
        .ok_or(ReplyError::NoSection("Final HDAG Construction"))?;
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
        (None, Some(Err(e))) => return Err(ReplyError::NoNodes(Box::new(e.clone()))),
        (None, None) => return Err(ReplyError::NoNodeSection),
    };
    let from_complete = |notes: &mut Vec<String>| -> Result<Vec<HdagEdge>, ReplyError> {
        match &complete {
            Some(Ok(v)) => match v.get("edges") {
                Some(e) => edges_from_json(e),
                None => Err(ReplyError::CompleteNoEdges),
            },
            Some(Err(e)) => {
                notes.push(format!("the Complete HDAG JSON is unreadable ({e})"));
                Err(ReplyError::CompleteUnreadable(Box::new(e.clone())))
            }
            None => Err(ReplyError::NoComplete),
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
        Some(Err(md)) => from_complete(&mut notes).map_err(|c| ReplyError::Edges {
            finalized: Box::new(md),
            complete: Box::new(c),
        })?,
        None => from_complete(&mut notes).map_err(|c| ReplyError::NoFinalizedEdges(Box::new(c)))?,
    };
    let mut seen = BTreeSet::new();
    for n in &nodes {
        if !valid_id(&n.id) {
            return Err(ReplyError::BadNodeId(clip(&n.id)));
        }
        if !seen.insert(n.id.as_str()) {
            return Err(ReplyError::NodeTwice(n.id.clone()));
        }
    }
    Ok(Construction {
        nodes,
        edges,
        notes,
    })
}
