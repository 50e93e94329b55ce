use proptest::prelude::*;
use trust_protocol::hdag::{AbstractionLevel, AuditorType, Relationship};

use super::*;

fn sample(name: &str) -> Trace {
    let path = format!("{}/../examples/traces/{name}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).expect("sample trace");
    Trace::parse(&text).expect("sample parses")
}

fn node<'a>(h: &'a Hdag, content: &str) -> &'a HdagNode {
    h.nodes
        .iter()
        .find(|n| n.content == content)
        .unwrap_or_else(|| panic!("no node with content {content:?} in {:#?}", h.nodes))
}

fn depends(h: &Hdag, from: &HdagNode, to: &HdagNode) -> bool {
    h.edges
        .iter()
        .any(|e| e.relationship == Relationship::DependsOn && e.from == from.id && e.to == to.id)
}

#[test]
fn fraction_chain_is_a_linear_dependency_chain() {
    let t = sample("fraction-correct.txt");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let s1 = node(&h, "Let the numerator be x");
    let s2 = node(&h, "The denominator is 3x − 7");
    let s3 = node(&h, "So x / (3x − 7) = 2/5");
    let s4 = node(&h, "Therefore, 5x = 6x − 14");
    let s5 = node(&h, "Finally, we get x = 14");
    assert!(
        depends(&h, s2, s1) && depends(&h, s3, s2) && depends(&h, s4, s3) && depends(&h, s5, s4)
    );
    // The 2/5 of step 3 is grounded in the problem statement.
    let goal = &h.nodes[0];
    assert_eq!(goal.abstraction_level, AbstractionLevel::Goal);
    assert!(depends(&h, s3, goal));
    // Routing: definitions and equations go to the Computer tier.
    for n in [s1, s3, s4, s5] {
        assert_eq!(n.primary_auditor, AuditorType::Auto, "{}", n.content);
    }
    assert_eq!(s4.abstraction_level, AbstractionLevel::Operation);
    assert_eq!(s1.kind, "definition");
    // The list marker is not part of the segment, and the paragraph is a TACTIC over them.
    let tactic = h
        .nodes
        .iter()
        .find(|n| n.abstraction_level == AbstractionLevel::Tactic)
        .expect("tactic");
    assert!(tactic.content.starts_with("1. Let the numerator"));
    // The conclusion rests on the last step.
    let fin = node(&h, "x = 14");
    assert_eq!(fin.kind, "conclusion");
    assert!(depends(&h, fin, s5));
    assert!(h.validate_spans(&t).is_ok());
}

#[test]
fn paper_tunnel_trace_decomposes_into_levels() {
    let text = std::fs::read_to_string(format!(
        "{}/../examples/traces/tunnel.json",
        env!("CARGO_MANIFEST_DIR")
    ))
    .expect("read");
    let t = Trace::parse(&text).expect("parse");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let levels: BTreeSet<_> = h.nodes.iter().map(|n| n.abstraction_level).collect();
    for l in [
        AbstractionLevel::Goal,
        AbstractionLevel::Strategy,
        AbstractionLevel::Tactic,
        AbstractionLevel::Step,
        AbstractionLevel::Operation,
    ] {
        assert!(levels.contains(&l), "missing {l:?}: {:#?}", h.nodes);
    }
    // t2 and the total use D, defined earlier; the total uses t1 and t2.
    let total = node(
        &h,
        "Total: t1 + t2 = 1/(3D) + 0.694444/D = 1.027777/D = 185.",
    );
    let t2 = node(
        &h,
        "Time for the rest: t2 = (2/3)/(0.96 D) = 2/(2.88 D) = 0.694444/D.",
    );
    assert!(depends(&h, total, t2));
    // 185 comes from the problem statement.
    assert!(depends(&h, total, &h.nodes[0]));
    let strategy = h
        .nodes
        .iter()
        .find(|n| n.abstraction_level == AbstractionLevel::Strategy)
        .expect("strategy");
    assert_eq!(strategy.primary_auditor, AuditorType::Llm);
}

#[test]
fn high_stakes_sends_the_conclusion_to_a_person() {
    let t = sample("fraction-correct.txt");
    let h = decompose(&t, &Options { high_stakes: true }).expect("decomposes");
    assert_eq!(node(&h, "x = 14").primary_auditor, AuditorType::Human);
}

#[test]
fn provider_hdag_must_use_exact_spans() {
    let t = sample("fraction-correct.txt");
    let ok = r#"{"nodes":[{"id":"A","content":"Therefore, 5x = 6x − 14","abstraction_level":"STEP","primary_auditor":"T_Auto"}]}"#;
    assert!(from_provider(&t, ok).is_ok());
    let paraphrase = r#"{"nodes":[{"id":"A","content":"5x equals 6x minus 14","abstraction_level":"STEP","primary_auditor":"T_Auto"}]}"#;
    assert_eq!(
        from_provider(&t, paraphrase),
        Err(DecomposeError::Hdag(HdagError::NotASpan("A".into())))
    );
    let cyclic = r#"{"nodes":[
        {"id":"A","content":"x = 14","abstraction_level":"STEP","primary_auditor":"T_Auto"},
        {"id":"B","content":"5x = 6x − 14","abstraction_level":"STEP","primary_auditor":"T_Auto"}],
      "edges":[{"from":"A","to":"B","relationship":"depends_on"},{"from":"B","to":"A","relationship":"depends_on"}]}"#;
    assert!(matches!(
        from_provider(&t, cyclic),
        Err(DecomposeError::Hdag(HdagError::Cycle(_)))
    ));
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    /// Whatever the thinking says, the result is a valid HDAG of exact spans or a clear error.
    #[test]
    fn arbitrary_thinking_gives_valid_hdag_or_error(thinking in "[ -~\n−×]{1,400}") {
        let t = Trace { problem: "Compute 2 + 3.".into(), thinking, output: "5".into() };
        match decompose(&t, &Options::default()) {
            Ok(h) => {
                prop_assert!(h.validate().is_ok());
                prop_assert!(h.validate_spans(&t).is_ok());
            }
            Err(e) => prop_assert!(!e.to_string().is_empty()),
        }
    }
}

#[test]
fn routing_follows_what_the_checker_reads() {
    let t = Trace {
        problem: "Rules: A → B; B → C. Fact: I have A. Can I derive C?".into(),
        thinking: "We should think about which rules apply.\n\nI use rule (A → B) to derive B.\nI use rule (B -> C) to derive C.".into(),
        output: "Yes, C.".into(),
    };
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let s1 = node(&h, "I use rule (A → B) to derive B.");
    let s2 = node(&h, "I use rule (B -> C) to derive C.");
    assert_eq!(s1.primary_auditor, AuditorType::Auto);
    assert_eq!(s2.primary_auditor, AuditorType::Auto);
    // The second rests on the step that derived B, and both on the stated rules.
    let goal = &h.nodes[0];
    assert!(depends(&h, s2, s1) && depends(&h, s1, goal) && depends(&h, s2, goal));
    // Prose goes to the LLM tier.
    assert_eq!(
        node(&h, "We should think about which rules apply.").primary_auditor,
        AuditorType::Llm
    );
}

#[test]
fn numbers_the_problem_states_in_words_link_to_the_goal() {
    let t = Trace {
        problem: "Tom has twice as many apples as Ann, who has a dozen.".into(),
        thinking: "Ann has 12 apples.\nTom has 2 * 12 = 24 apples.\nLet me think about it.".into(),
        output: "24".into(),
    };
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let goal = &h.nodes[0];
    let calc = node(&h, "Tom has 2 * 12 = 24 apples.");
    assert!(depends(&h, calc, goal));
    assert!(depends(&h, node(&h, "Ann has 12 apples."), goal));
    // A claim in words with a calculation in it: the STEP is for a tier that reads
    // words, its OPERATION (the bare calculation) for the Computer tier, resting on what
    // the STEP rests on.
    assert_eq!(calc.primary_auditor, AuditorType::Llm);
    let op = node(&h, "2 * 12 = 24");
    assert_eq!(op.primary_auditor, AuditorType::Auto);
    assert_eq!(op.abstraction_level, AbstractionLevel::Operation);
    assert!(depends(&h, op, goal));
    assert!(h.edges.iter().any(|e| e.from == calc.id
        && e.to == op.id
        && e.relationship == trust_protocol::hdag::Relationship::DecomposesTo));
    assert_eq!(
        node(&h, "Let me think about it.").primary_auditor,
        AuditorType::Llm
    );
}

/// Checks what every decomposition must satisfy, whatever the trace's size: a valid HDAG,
/// every segment an exact span of the trace and within the segment limit, and no more
/// segments than one session holds.
fn assert_fits(t: &Trace, h: &Hdag) {
    assert_spans_within_limit(t, h);
    assert!(
        h.nodes.len() <= MAX_DECOMPOSED_SEGMENTS,
        "{}",
        h.nodes.len()
    );
}

/// A valid HDAG whose every segment is an exact span of the trace within the segment
/// limit.
fn assert_spans_within_limit(t: &Trace, h: &Hdag) {
    assert!(h.validate().is_ok(), "{:?}", h.validate());
    assert!(h.validate_spans(t).is_ok(), "{:?}", h.validate_spans(t));
    for n in &h.nodes {
        assert!(
            n.content.len() <= MAX_SEGMENT_BYTES,
            "{} has {} bytes",
            n.id,
            n.content.len()
        );
    }
}

fn parse(text: &str) -> Trace {
    Trace::parse(text).expect("a generated trace parses")
}

/// The steps the segments of an HDAG hold, in order (groups opened, list markers off).
fn steps_held(h: &Hdag) -> Vec<String> {
    h.nodes
        .iter()
        .filter(|n| {
            matches!(
                n.abstraction_level,
                AbstractionLevel::Step | AbstractionLevel::Operation
            ) && n.kind != "conclusion"
        })
        .flat_map(|n| {
            readable::steps_of(&n.content)
                .into_iter()
                .map(str::to_string)
        })
        .collect()
}

#[test]
fn a_thinking_section_over_a_segment_is_cut_at_step_boundaries() {
    // 230 steps of 300 bytes: one paragraph of 69 KB, few enough steps to keep one
    // segment per step.
    let text = sample::counter_trace(230, 300, 0, None);
    let t = parse(&text);
    assert!(t.thinking.trim().len() > MAX_SEGMENT_BYTES);
    // Within a budget that keeps one segment per step (the default groups 230 steps).
    let h = decompose_within(&t, &Options::default(), 1000).expect("decomposes");
    assert_spans_within_limit(&t, &h);
    let tactics: Vec<&HdagNode> = h
        .nodes
        .iter()
        .filter(|n| n.abstraction_level == AbstractionLevel::Tactic)
        .collect();
    assert!(tactics.len() >= 2, "{} tactics", tactics.len());
    // Each TACTIC is a run of whole lines, and together they are the whole paragraph.
    for tac in &tactics {
        assert!(tac.content.starts_with("Step "), "{:?}", &tac.content[..20]);
        assert!(tac.content.ends_with('.'));
    }
    let joined: Vec<&str> = tactics.iter().flat_map(|t| t.content.lines()).collect();
    assert_eq!(joined, t.thinking.trim().lines().collect::<Vec<_>>());
    // One segment per step, each under its own run's TACTIC.
    assert_eq!(steps_held(&h).len(), 230);
    let under: BTreeSet<&str> = h
        .edges
        .iter()
        .filter(|e| e.relationship == Relationship::DecomposesTo && e.from.starts_with('T'))
        .map(|e| e.to.as_str())
        .collect();
    assert_eq!(under.len(), 230);
}

#[test]
fn a_single_step_over_a_segment_is_cut_at_sentence_boundaries() {
    // One numbered step of about 67 KB of sentences on a single line, few enough of them
    // to keep one segment per sentence.
    let sentence = "The counter grows by two at every step and we keep the same rule as before, without any change of plan or of method for this count, adding the same small amount each time and writing down the new total on its own line so that anyone can follow along and check it as we go.";
    let n = MAX_SEGMENT_BYTES / sentence.len() + 10;
    let line = format!("Step 1: {}", vec![sentence; n].join(" "));
    assert!(line.len() > MAX_SEGMENT_BYTES);
    let t = Trace {
        problem: sample::PROBLEM.into(),
        thinking: format!("{line}\nStep 2: 10 + 2 = 12."),
        output: "12".into(),
    };
    let h = decompose(&t, &Options::default()).expect("decomposes");
    assert_fits(&t, &h);
    for n in &h.nodes {
        if n.abstraction_level == AbstractionLevel::Goal || n.kind == "conclusion" {
            continue;
        }
        // Every cut falls after a sentence: no segment ends inside one.
        assert!(n.content.ends_with('.'), "{}: …{:?}", n.id, {
            let c = &n.content;
            &c[c.len().saturating_sub(30)..]
        });
    }

    // A step with no sentence end at all is cut at clause ends, then at spaces.
    let clauses = vec!["the counter grows by two, as the rule says"; 2000].join(", ");
    let t = Trace {
        problem: sample::PROBLEM.into(),
        thinking: format!("Step 1: {clauses}"),
        output: "12".into(),
    };
    let h = decompose(&t, &Options::default()).expect("decomposes");
    assert_fits(&t, &h);
    let pieces: Vec<&HdagNode> = h
        .nodes
        .iter()
        .filter(|n| n.abstraction_level == AbstractionLevel::Step && n.kind != "conclusion")
        .collect();
    assert!(pieces.len() >= 2);
    for p in &pieces[..pieces.len() - 1] {
        assert!(p.content.ends_with(','), "{}", p.id);
    }
    let unbroken = "x".repeat(MAX_SEGMENT_BYTES * 2);
    let t = Trace {
        problem: sample::PROBLEM.into(),
        thinking: unbroken,
        output: "12".into(),
    };
    let h = decompose(&t, &Options::default()).expect("even one long word is cut");
    assert_fits(&t, &h);
}

#[test]
fn five_thousand_steps_of_one_mebibyte_fit_one_session() {
    let text = sample::counter_trace(5000, 208, 0, None);
    assert!(text.len() > 1_000_000 && text.len() <= trust_protocol::trace::MAX_TRACE_BYTES);
    let t = parse(&text);
    let h = decompose(&t, &Options::default()).expect("decomposes");
    assert_fits(&t, &h);
    // Every step is in exactly one segment, in order.
    let held = steps_held(&h);
    assert_eq!(held.len(), 5000);
    assert!(held[0].starts_with("10 + 2 = 12"), "{}", held[0]);
    assert!(
        held[4999].starts_with("10008 + 2 = 10010"),
        "{}",
        held[4999]
    );
    // The groups are Computer-tier segments: the checker reads every step of them.
    let groups: Vec<&HdagNode> = h.nodes.iter().filter(|n| n.kind == "step_group").collect();
    assert!(groups.len() > 100, "{} groups", groups.len());
    assert!(
        groups
            .iter()
            .all(|g| g.primary_auditor == AuditorType::Auto)
    );
    // Each group rests on the group before it (the running total it continues).
    for w in groups.windows(2) {
        assert!(depends(&h, w[1], w[0]), "{} -> {}", w[1].id, w[0].id);
    }
}

#[test]
fn the_reported_boundary_of_1461_steps_is_gone() {
    // The report: one-line steps of about 45 bytes; 1,461 passed, 1,462 were refused as
    // one 64 KiB segment.
    for n in [1461, 1462, 3000] {
        let t = parse(&sample::counter_trace(n, 45, 0, None));
        let h = decompose(&t, &Options::default()).unwrap_or_else(|e| panic!("{n} steps: {e}"));
        assert_fits(&t, &h);
        assert_eq!(steps_held(&h).len(), n);
    }
}

#[test]
fn a_blank_line_every_100_steps_is_fine() {
    let t = parse(&sample::counter_trace(5000, 200, 100, None));
    assert_eq!(paragraphs(&t.thinking).len(), 50);
    let h = decompose(&t, &Options::default()).expect("decomposes");
    assert_fits(&t, &h);
    assert_eq!(steps_held(&h).len(), 5000);
}

#[test]
fn a_trace_that_cannot_fit_is_refused_with_the_real_limit() {
    // The problem statement is one segment (the GOAL) and is not cut.
    let t = Trace {
        problem: "Add these. ".repeat(7000),
        thinking: "Step 1: 10 + 2 = 12.".into(),
        output: "12".into(),
    };
    let e = decompose(&t, &Options::default()).unwrap_err();
    assert_eq!(
        e,
        DecomposeError::ProblemTooLong {
            len: t.problem.trim().len()
        }
    );
    let msg = e.to_string();
    assert!(
        msg.contains("76999 bytes") && msg.contains("65536-byte segment limit"),
        "{msg}"
    );

    // Steps that cannot be grouped into the segments allowed: the message says how many
    // steps and bytes, how many segments they need and how many fit.
    let t = parse(&sample::counter_trace(2000, 100, 0, None));
    let e = decompose_within(&t, &Options::default(), 3).unwrap_err();
    let DecomposeError::TooManySegments {
        steps,
        bytes,
        segments,
        max,
    } = e
    else {
        panic!("{e}");
    };
    assert_eq!((steps, bytes, max), (2000, t.thinking.len(), 3));
    assert!(segments > 3);
    let msg = e.to_string();
    assert!(
        msg.contains("2000 reasoning steps") && msg.contains("more than the 3 a session can hold"),
        "{msg}"
    );
}

#[test]
fn traces_of_normal_length_are_not_grouped() {
    for name in ["fraction-correct.txt", "fraction-incorrect.txt"] {
        let h = decompose(&sample(name), &Options::default()).expect("decomposes");
        assert!(h.nodes.iter().all(|n| n.kind != "step_group"));
    }
    // Up to the budget, one segment per step.
    let t = parse(&sample::counter_trace(120, 60, 0, None));
    let h = decompose(&t, &Options::default()).expect("decomposes");
    assert!(h.nodes.iter().all(|n| n.kind != "step_group"));
    assert_eq!(
        h.nodes
            .iter()
            .filter(|n| n.abstraction_level == AbstractionLevel::Step && n.kind != "conclusion")
            .count(),
        120
    );
    // One step is one step to a judge, list marker or not.
    for n in &h.nodes {
        if n.abstraction_level == AbstractionLevel::Step {
            assert_eq!(readable::steps_of(&n.content).len(), 1, "{}", n.content);
        }
    }
}

/// A provider's HDAG that gives the Computer tier a claim in words around a calculation
/// is refused, naming the segment; the same HDAG with the calculation split off is
/// accepted, and its problem statement becomes a given.
#[test]
fn a_provider_hdag_routing_a_worded_claim_to_the_computer_tier_is_refused() {
    let t = Trace {
        problem: "Mike has 21 points and Jim has 3 more than Mike. How many points does Jim have?"
            .into(),
        thinking: "Mike has 21+3 = 24 points.".into(),
        output: "24".into(),
    };
    let hdag = |nodes: &str, edges: &str| format!("{{\"nodes\": [{nodes}], \"edges\": [{edges}]}}");
    let goal = r#"{"id": "G1", "content": "Mike has 21 points and Jim has 3 more than Mike. How many points does Jim have?", "abstraction_level": "GOAL", "primary_auditor": "T_Human"}"#;
    let worded = r#"{"id": "S1", "content": "Mike has 21+3 = 24 points.", "abstraction_level": "STEP", "primary_auditor": "T_Auto"}"#;
    let end = r#"{"id": "F1", "content": "24", "abstraction_level": "STEP", "type": "conclusion", "primary_auditor": "T_LLM"}"#;
    let err = from_provider(&t, &hdag(&format!("{goal}, {worded}, {end}"), ""))
        .expect_err("a worded claim for the Computer tier");
    assert!(
        matches!(&err, DecomposeError::NotCovered { id, .. } if id == "S1"),
        "{err}"
    );
    assert!(err.to_string().contains("T_LLM"), "{err}");
    let step = r#"{"id": "S1", "content": "Mike has 21+3 = 24 points.", "abstraction_level": "STEP", "primary_auditor": "T_LLM"}"#;
    let op = r#"{"id": "O1", "content": "21+3 = 24", "abstraction_level": "OPERATION", "primary_auditor": "T_Auto"}"#;
    let split = from_provider(
        &t,
        &hdag(
            &format!("{goal}, {step}, {op}, {end}"),
            r#"{"from": "S1", "to": "O1", "relationship": "decomposes_to"}"#,
        ),
    )
    .expect("the calculation on its own is the Computer tier's");
    assert_eq!(split.nodes[0].kind, PROBLEM_KIND);
    assert_eq!(supported_steps(&split).get(&2), Some(&1));
}

/// The LLM pipeline's HDAG is re-routed instead (the provider is told): the worded claim
/// goes to the LLM tier and its bare calculation becomes an OPERATION below it.
#[test]
fn an_llm_decomposition_is_re_routed_to_the_tiers_that_cover_each_claim() {
    let t = Trace {
        problem: "The team ordered 40 pizzas and ate 80% of them. How many did they eat?".into(),
        thinking: "The football team ate 20 * 2 = 40 pizzas.\n40 * 0.8 = 32".into(),
        output: "32".into(),
    };
    let mut h: Hdag = serde_json::from_str(
        r#"{"nodes": [
            {"id": "G1", "content": "The team ordered 40 pizzas and ate 80% of them. How many did they eat?", "abstraction_level": "GOAL", "primary_auditor": "T_Human"},
            {"id": "S1", "content": "The football team ate 20 * 2 = 40 pizzas.", "abstraction_level": "STEP", "primary_auditor": "T_Auto"},
            {"id": "S2", "content": "40 * 0.8 = 32", "abstraction_level": "OPERATION", "primary_auditor": "T_Auto"}
        ], "edges": [{"from": "S2", "to": "S1", "relationship": "depends_on"}]}"#,
    )
    .unwrap();
    let notes = enforce_coverage(&mut h, &t);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("S1") && notes[0].contains("20 * 2 = 40"),
        "{notes:?}"
    );
    assert_eq!(h.nodes[0].kind, PROBLEM_KIND);
    assert_eq!(h.nodes[1].primary_auditor, AuditorType::Llm);
    // The bare calculation stays with the Computer tier, and the new OPERATION checks S1.
    assert_eq!(h.nodes[2].primary_auditor, AuditorType::Auto);
    let op = h
        .nodes
        .iter()
        .position(|n| n.content == "20 * 2 = 40")
        .expect("an OPERATION");
    assert_eq!(h.nodes[op].primary_auditor, AuditorType::Auto);
    assert_eq!(supported_steps(&h).get(&op), Some(&1));
    h.validate_spans(&t).expect("still spans of the trace");
}
