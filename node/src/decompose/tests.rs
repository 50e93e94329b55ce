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

#[test]
fn text_helpers() {
    assert_eq!(
        text::symbols_in("5x = 6x − 14 and t1, 0.96D"),
        ["x", "x", "t1", "D"]
    );
    assert!(text::numbers_in("x / (3x − 7) = 2/5").contains(&"2/5".to_string()));
    assert!(text::is_pure_math("Therefore, 5x = 9x − 20"));
    assert!(!text::is_pure_math("The denominator is 3x − 7"));
    assert!(text::is_math("The denominator is 3x − 7"));
    assert!(!text::is_math("We think about the tunnel."));
    assert!(!text::is_math("a well-known two-step result"));
    assert_eq!(text::units_of("a = 1. Then b = 2.\n2) Step c").len(), 3);
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
    assert_eq!(calc.primary_auditor, AuditorType::Auto);
    assert_eq!(
        node(&h, "Let me think about it.").primary_auditor,
        AuditorType::Llm
    );
}

#[test]
fn thousands_separators_are_part_of_a_number() {
    assert!(text::numbers_in("$30,800 + $4,400").contains(&"30800".to_string()));
    assert!(text::numbers_in("f(1, 200)").contains(&"200".to_string()));
    assert!(!text::numbers_in("1,2345").contains(&"12345".to_string()));
}
