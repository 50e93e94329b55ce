//! Why a step's reply cannot be used: one variant per thing a reply can get wrong, each
//! message quoting the part at fault (clipped to one short line), so the fallback's
//! warning tells the user what the model wrote.

use std::sync::Arc;

use trust_protocol::hdag::{MAX_EDGES, MAX_NODES};

use super::MAX_REPLY_BYTES;

/// Why a step's reply (or the HDAG built from the five replies) cannot be used. The
/// messages quote the part of the reply at fault, clipped to one short line.
#[derive(Debug, Clone, thiserror::Error)]
#[non_exhaustive]
pub enum ReplyError {
    /// The reply passed [`MAX_REPLY_BYTES`].
    #[error("reply of {0} bytes is longer than the {MAX_REPLY_BYTES}-byte limit")]
    TooLong(usize),
    /// The step's top-level section (its title given) is missing.
    #[error("no \"# {0}\" section")]
    NoSection(&'static str),
    /// A `**Name**:` field appears twice in one block (its name given).
    #[error("field {0:?} given twice")]
    FieldTwice(String),
    /// A complexity other than Low, Medium or High.
    #[error("complexity {0:?} is not Low, Medium or High")]
    Complexity(String),
    /// An auditor type other than T_Auto, T_LLM or T_Human.
    #[error("unknown auditor type {0:?} (use T_Auto, T_LLM or T_Human)")]
    UnknownAuditor(String),
    /// An abstraction level the protocol does not know.
    #[error("unknown abstraction level {0:?}")]
    UnknownLevel(String),
    /// No JSON array or object (which one given) where one belongs.
    #[error("no JSON {0} found")]
    NoJson(&'static str),
    /// JSON that does not parse.
    #[error("malformed JSON: {0}")]
    Json(#[source] Arc<serde_json::Error>),
    /// Nothing after the opening bracket.
    #[error("no JSON found")]
    NoJsonValue,
    /// Step 1: a `## ... Level` heading names no level.
    #[error(
        "heading \"## {0}\" names no abstraction level (GOAL, STRATEGY, TACTIC, STEP, OPERATION)"
    )]
    LevelHeading(String),
    /// Step 1: no level block has text.
    #[error("no \"## LEVEL Level\" block with text")]
    NoLevelBlock,
    /// Step 2: a `## ... Segmentation` heading names no level.
    #[error("heading \"## {0}\" names no abstraction level")]
    SegmentationHeading(String),
    /// A `### Segment` heading without an id.
    #[error("heading \"### {0}\" is not \"### Segment ID\"")]
    NotSegmentHeading(String),
    /// A segment id with characters ids may not hold.
    #[error("segment id {0:?} is not a valid id")]
    BadSegmentId(String),
    /// A segment id given twice.
    #[error("segment {0} is given twice")]
    SegmentTwice(String),
    /// What is wrong inside one segment's block.
    #[error("segment {id}: {source}")]
    InSegment {
        /// The segment.
        id: String,
        /// What is wrong.
        #[source]
        source: Box<ReplyError>,
    },
    /// A segment without its text.
    #[error("segment {0} has no **Content**")]
    SegmentNoContent(String),
    /// More segments than an HDAG may hold.
    #[error("more than {MAX_NODES} segments")]
    TooManySegments,
    /// Step 2: no segment at all.
    #[error("no \"### Segment ID\" block")]
    NoSegment,
    /// Step 3: a relationship names a segment step 2 did not give.
    #[error("relationship names segment {0:?}, which step 2 did not give")]
    UnknownRelated(String),
    /// Step 3: an arrow in a list whose heading gives no relationship type.
    #[error("\"{0}\": an arrow outside the hierarchical list needs a relationship type")]
    UntypedArrow(String),
    /// Step 3: a bullet whose verb is no relationship type.
    #[error("\"{0}\" is not \"A -> B\" or \"A relationship B\"")]
    NotARelation(String),
    /// Step 3: a bullet with one word.
    #[error("\"{0}\" is not a relationship")]
    NoVerb(String),
    /// More relationships than an HDAG may hold.
    #[error("more than {MAX_EDGES} relationships")]
    TooManyRelationships,
    /// Step 3: neither bullets nor the summary.
    #[error("no relationship bullets and no \"# Relationship Summary\"")]
    NoRelationshipSummary,
    /// Step 3: a summary entry without its three fields.
    #[error("a relationship summary entry lacks from_segment, to_segment or relationship_type")]
    SummaryEntry,
    /// A relationship type the protocol does not know.
    #[error("unknown relationship type {0:?}")]
    UnknownRelationship(String),
    /// Step 3: no relationship at all.
    #[error("no relationship given")]
    NoRelationship,
    /// Step 4: an assignment names a segment step 2 did not give.
    #[error("an assignment names segment {0:?}, which step 2 did not give")]
    UnknownAssigned(String),
    /// Step 4: a segment assigned twice.
    #[error("segment {0} is assigned twice")]
    AssignedTwice(String),
    /// Step 4: a segment without its primary auditor.
    #[error("segment {0} has no **Primary Auditor**")]
    NoPrimary(String),
    /// Step 4: none or several primary auditors.
    #[error("the primary auditor must be exactly one of T_Auto, T_LLM, T_Human")]
    PrimaryNotOneOf,
    /// Step 4: a Multi-Auditor Segments entry without its fields.
    #[error("a Multi-Auditor Segments entry lacks segment_id or a valid primary_auditor")]
    MultiAuditorEntry,
    /// Step 4: no assignment at all.
    #[error("no \"### Segment ID\" assignment")]
    NoAssignment,
    /// Step 5: an edge (its index given) without both ends.
    #[error("edge {0} lacks \"from\" or \"to\"")]
    EdgeEnds(usize),
    /// Step 5: an edge without a type.
    #[error("edge {i} ({from} -> {to}) has no type")]
    EdgeNoType {
        /// Its index.
        i: usize,
        /// Source id.
        from: String,
        /// Target id.
        to: String,
    },
    /// Step 5: an edge of a type the protocol does not know.
    #[error("edge {i} ({from} -> {to}): unknown type {kind:?}")]
    EdgeType {
        /// Its index.
        i: usize,
        /// Source id.
        from: String,
        /// Target id.
        to: String,
        /// The type given.
        kind: String,
    },
    /// Step 5: the edges are not a JSON array.
    #[error("the edge list is not a JSON array")]
    EdgesNotArray,
    /// More edges than an HDAG may hold.
    #[error("more than {MAX_EDGES} edges")]
    TooManyEdges,
    /// A `### Node` heading without an id.
    #[error("heading \"### {0}\" is not \"### Node ID\"")]
    NotNodeHeading(String),
    /// A node id with characters ids may not hold.
    #[error("node id {0:?} is not a valid id")]
    BadNodeId(String),
    /// What is wrong inside one node's block.
    #[error("node {id}: {source}")]
    InNode {
        /// The node.
        id: String,
        /// What is wrong.
        #[source]
        source: Box<ReplyError>,
    },
    /// A node without its text.
    #[error("node {0} has no **Content**")]
    NodeNoContent(String),
    /// Step 5: none or several primary auditors.
    #[error("the primary auditor must be exactly one type")]
    PrimaryNotOne,
    /// More nodes than an HDAG may hold.
    #[error("more than {MAX_NODES} nodes")]
    TooManyNodes,
    /// Step 5: the complete JSON has no node list.
    #[error("no \"nodes\" array")]
    NoNodesArray,
    /// Step 5: a JSON node (its index given) without its id or text.
    #[error("node {0} lacks \"id\" or \"content\"")]
    NodeFields(usize),
    /// Step 5: no node blocks, and the complete JSON does not parse.
    #[error("no \"### Node ID\" blocks, and the Complete HDAG JSON is unreadable: {0}")]
    NoNodes(#[source] Box<ReplyError>),
    /// Step 5: neither node section.
    #[error("no \"## Finalized Nodes\" and no \"## Complete HDAG JSON\"")]
    NoNodeSection,
    /// Step 5: the complete JSON has no edge list.
    #[error("the Complete HDAG JSON has no \"edges\"")]
    CompleteNoEdges,
    /// Step 5: the complete JSON does not parse.
    #[error("the Complete HDAG JSON is unreadable: {0}")]
    CompleteUnreadable(#[source] Box<ReplyError>),
    /// Step 5: no complete JSON.
    #[error("no \"## Complete HDAG JSON\"")]
    NoComplete,
    /// Step 5: neither the Finalized Edges nor the complete JSON give the edges.
    #[error("Finalized Edges: {finalized}; {complete}")]
    Edges {
        /// Why the Finalized Edges cannot be read.
        finalized: Box<ReplyError>,
        /// Why the complete JSON's edges cannot be read.
        complete: Box<ReplyError>,
    },
    /// Step 5: no Finalized Edges, and the complete JSON's edges cannot be read.
    #[error("no \"## Finalized Edges\"; {0}")]
    NoFinalizedEdges(#[source] Box<ReplyError>),
    /// Step 5: a node id given twice.
    #[error("node {0} is given twice")]
    NodeTwice(String),
    /// A reply came after step 5.
    #[error("a reply after the last step")]
    AfterLastStep,
    /// A node with a level neither in step 5 nor in step 2.
    #[error("node {0} has no abstraction level")]
    NodeNoLevel(String),
    /// A node with a primary auditor neither in step 5 nor in step 4.
    #[error("node {0} has no primary auditor here or in step 4")]
    NodeNoPrimary(String),
    /// No segment of the HDAG could be placed in the trace.
    #[error("no segment of the HDAG is a span of the trace")]
    NoSpan,
}

impl ReplyError {
    pub(super) fn in_segment(id: &str) -> impl FnOnce(ReplyError) -> ReplyError + '_ {
        move |e| ReplyError::InSegment {
            id: id.to_string(),
            source: Box::new(e),
        }
    }

    pub(super) fn in_node(id: &str) -> impl FnOnce(ReplyError) -> ReplyError + '_ {
        move |e| ReplyError::InNode {
            id: id.to_string(),
            source: Box::new(e),
        }
    }
}
