use std::collections::BTreeSet;

use trust_protocol::hdag::{
    AbstractionLevel, AuditorType, Complexity, HdagEdge, Relationship, Strength,
};

use super::{
    align::{MIN_COVERAGE, Mapper, Placement},
    parse::*,
    *,
};

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
    assert_eq!(complexity_named("low").ok(), Some(Complexity::Low));
    assert!(complexity_named("trivial").is_err());
    assert_eq!(level_named("PHASE"), None);
}

fn known(ids: &[&str]) -> BTreeSet<String> {
    ids.iter().map(|s| s.to_string()).collect()
}

fn trace() -> Trace {
    Trace {
        problem: "Tom has 3 apples and buys 4 more. How many apples does he have?".into(),
        thinking: "Tom starts with 3 apples.\nHe buys 4 more, so 3 + 4 = 7.\nSo he has 7 apples."
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
            .to_string()
            .contains("Abstraction Block Analysis")
    );
    assert!(
        parse_levels("# Abstraction Block Analysis\n## PLAN Level\nx\n")
            .unwrap_err()
            .to_string()
            .contains("PLAN")
    );
    assert!(parse_levels("# Abstraction Block Analysis\n## GOAL Level\n\n").is_err());
    assert!(
        parse_levels(&"x".repeat(MAX_REPLY_BYTES + 1))
            .unwrap_err()
            .to_string()
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
        let e = parse_segments(&bad).unwrap_err().to_string();
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
        let e = parse_relationships(bad, &ids).unwrap_err().to_string();
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
        let e = parse_assignments(bad, &ids).unwrap_err().to_string();
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
        let e = parse_construction(&bad).unwrap_err().to_string();
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
    let out = crate::decompose::bridge::bridge(
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
    assert!(p.system.contains("step 1 of 5") && p.system.contains("# Abstraction Block Analysis"));
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
