//! The five prompts, written for this project from the paper's appendix; the output
//! formats are the appendix's, since the parsers read them.

use trust_protocol::trace::Trace;

use super::Step;

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

pub(super) fn system(step: Step) -> String {
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

pub(super) fn trace_text(trace: &Trace) -> String {
    format!(
        "## Problem Statement:\n{}\n\n## Thinking Process:\n{}\n\n## Final Output:\n{}\n",
        trace.problem, trace.thinking, trace.output
    )
}
