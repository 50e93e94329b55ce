//! Every segment is placed at its own occurrence in the trace (issue 56, item 3): three
//! code-fence lines that read the same each get their own line, a step `5.0` is not
//! placed inside `15.0` on the line above, and the final answer sits in the output even
//! when the thinking writes the same text. A highlighter built on these places marks the
//! segment's own text.

use trust_judging::decompose::{
    Options, decompose, decompose_within,
    place::{Part, Place, places},
};
use trust_protocol::{hdag::Hdag, trace::Trace};

fn trace(problem: &str, thinking: &str, output: &str) -> Trace {
    Trace {
        problem: problem.into(),
        thinking: thinking.into(),
        output: output.into(),
    }
}

fn text_of<'a>(t: &'a Trace, p: &Place) -> &'a str {
    let part = match p.part {
        Part::Problem => &t.problem,
        Part::Thinking => &t.thinking,
        Part::Output => &t.output,
    };
    part.get(p.start..p.end).unwrap_or("")
}

/// The places of `h`'s nodes, each checked to hold its node's text and to start on the
/// line it names.
fn placed(t: &Trace, h: &Hdag) -> Vec<Place> {
    let all = places(t, h);
    assert_eq!(all.len(), h.nodes.len());
    h.nodes
        .iter()
        .zip(all)
        .map(|(n, p)| {
            let p = p.unwrap_or_else(|| panic!("{} ({:?}) not placed", n.id, n.content));
            assert_eq!(text_of(t, &p), n.content, "{}", n.id);
            let part = match p.part {
                Part::Problem => &t.problem,
                Part::Thinking => &t.thinking,
                Part::Output => &t.output,
            };
            let line = part[..p.start].matches('\n').count() + 1;
            assert_eq!(p.line as usize, line, "{}", n.id);
            p
        })
        .collect()
}

const FENCES: &str = "I will run the code.\n```python\nprint(15.0)\n```\n```python\nprint(5.0)\n```\n```python\nprint(20.0)\n```\nThe first value is 15.0\n5.0\nSo the total is 15.0 + 5.0 = 20.0.";

#[test]
fn repeated_lines_each_get_their_own_line() {
    let t = trace("Add 15.0 and 5.0.", FENCES, "20.0");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let places = placed(&t, &h);
    let lines_of = |content: &str| -> Vec<u32> {
        h.nodes
            .iter()
            .zip(&places)
            .filter(|(n, _)| n.content == content)
            .map(|(_, p)| p.line)
            .collect()
    };
    // Each code block is one unit (issue 54: code is never cut line by line), placed on
    // the line its fence opens; no fence line is a segment of its own.
    let blocks: Vec<u32> = h
        .nodes
        .iter()
        .zip(&places)
        .filter(|(n, _)| n.content.starts_with("```python\nprint("))
        .map(|(_, p)| p.line)
        .collect();
    assert_eq!(blocks, vec![2, 5, 8]);
    assert!(lines_of("```python").is_empty() && lines_of("```").is_empty());
    // `5.0` on its own line, not the tail of `15.0` (line 3, or line 11 just above).
    assert_eq!(lines_of("5.0"), vec![12]);
    let five = h
        .nodes
        .iter()
        .position(|n| n.content == "5.0")
        .expect("5.0");
    assert_eq!(
        places[five].start,
        t.thinking.find("\n5.0\n").expect("line") + 1
    );
    // The final answer is in the output, though `print(20.0)` writes it first.
    let answer = h
        .nodes
        .iter()
        .position(|n| n.kind == "conclusion")
        .expect("F");
    assert_eq!(
        (places[answer].part, places[answer].start),
        (Part::Output, 0)
    );
    // The problem statement in the problem.
    assert_eq!(places[0].part, Part::Problem);
    // No two step-level segments of the same text share a place.
    let mut seen = std::collections::BTreeSet::new();
    for (n, p) in h.nodes.iter().zip(&places) {
        if n.abstraction_level == trust_protocol::hdag::AbstractionLevel::Step {
            assert!(seen.insert((p.part, p.start)), "{} shares {p:?}", n.id);
        }
    }
}

#[test]
fn a_calculation_is_placed_inside_its_own_step() {
    // The same calculation written twice: each OPERATION lies inside its own STEP.
    let t = trace(
        "Anna has 3 bags of 4 apples. How many apples?",
        "First, she has 3 × 4 = 12 apples.\nChecking again, 3 × 4 = 12 apples.",
        "12",
    );
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let places = placed(&t, &h);
    let ops: Vec<(usize, &Place)> = h
        .nodes
        .iter()
        .zip(&places)
        .enumerate()
        .filter(|(_, (n, _))| n.content == "3 × 4 = 12")
        .map(|(i, (_, p))| (i, p))
        .collect();
    assert_eq!(ops.len(), 2, "{h:?}");
    assert_eq!(ops[0].1.line, 1);
    assert_eq!(ops[1].1.line, 2);
    for (i, op) in ops {
        let step = h
            .edges
            .iter()
            .find(|e| e.to == h.nodes[i].id && e.from.starts_with("ST"))
            .and_then(|e| h.index_of(&e.from))
            .expect("its STEP");
        let sp = &places[step];
        assert!(sp.start <= op.start && op.end <= sp.end, "{sp:?} {op:?}");
    }
}

#[test]
fn steps_below_a_plan_and_grouped_steps_are_placed_in_order() {
    // A plan paragraph: the later paragraphs' steps hang below it but lie after it.
    let body = "x = 10 + 5 = 15\nx = 10 + 5 = 15\nx = 10 + 5 = 15";
    let thinking = format!("Let's plan: we need to add the numbers.\n\n{body}\n\n{body}");
    let t = trace("Add 10 and 5.", &thinking, "15");
    let h = decompose(&t, &Options::default()).expect("decomposes");
    let places = placed(&t, &h);
    let lines: Vec<u32> = h
        .nodes
        .iter()
        .zip(&places)
        .filter(|(n, p)| n.content == "x = 10 + 5 = 15" && p.part == Part::Thinking)
        .map(|(_, p)| p.line)
        .collect();
    assert_eq!(lines, vec![3, 4, 5, 7, 8, 9], "{places:?}");
    // Grouped into few segments, the groups follow one another.
    let long: String = (0..40)
        .map(|k| format!("{k} + 1 = {}\n", k + 1))
        .chain((0..40).map(|k| format!("{k} + 1 = {}\n", k + 1)))
        .collect();
    let t = trace("Count up by one.", long.trim_end(), "40");
    let h = decompose_within(&t, &Options::default(), 8).expect("decomposes");
    let places = placed(&t, &h);
    let starts: Vec<usize> = h
        .nodes
        .iter()
        .zip(&places)
        .filter(|(_, p)| p.part == Part::Thinking)
        .map(|(_, p)| p.start)
        .collect();
    assert!(starts.windows(2).all(|w| w[0] < w[1]), "{starts:?}");
}
