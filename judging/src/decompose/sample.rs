//! Long traces generated on demand, for the tests and benchmarks of traces near the size
//! limits: a counter that grows by two at every numbered step, each step a checkable
//! addition padded with prose to a chosen line length.

use std::fmt::Write;

/// The counter's problem in words (a context for tests of single steps).
pub const PROBLEM: &str =
    "A counter starts at 10 and grows by 2 at every step. What is its value after all the steps?";

/// The problem a generated trace of `steps` steps answers, written as a formal problem
/// (`What is 10 + 2 × 5000?`): its answer is checked against it, and its steps' words
/// only narrate the arithmetic, so the Computer tier covers them whole.
pub fn problem(steps: usize) -> String {
    format!("What is 10 + 2 × {steps}?")
}

/// Prose that pads a step to its length: a clause with no number and no sentence end, so
/// the step stays one unit that the Computer tier reads.
const PADDING: &str = " and the counter keeps its pace as the problem says while we carry on with the same rule without any change of plan or of method for this long count, adding the same small amount each time and writing down the new total on its own line so that anyone can follow along and check it";

/// A trace in the paper's headings of `steps` numbered steps (`Step 17: 42 + 2 = 44, ...`),
/// each line padded with prose to about `line_bytes` bytes. With `wrong`, that step adds
/// 3 instead of 2 (a calculation error the Computer tier refutes) and the later steps
/// carry its result on. `paragraph` puts a blank line after every that many steps (0:
/// none).
pub fn counter_trace(
    steps: usize,
    line_bytes: usize,
    paragraph: usize,
    wrong: Option<usize>,
) -> String {
    let mut t = String::with_capacity(
        steps
            .saturating_mul(line_bytes.saturating_add(2))
            .saturating_add(512),
    );
    let _ = write!(
        t,
        "## Problem Statement\n{}\n\n## Thinking Process\n",
        problem(steps)
    );
    let mut value: u64 = 10;
    for i in 1..=steps {
        let next = value.saturating_add(2);
        let shown = if wrong == Some(i) {
            next.saturating_add(1)
        } else {
            next
        };
        let start = t.len();
        let _ = write!(t, "Step {i}: {value} + 2 = {shown}");
        let room = line_bytes.saturating_sub(t.len().saturating_sub(start).saturating_add(1));
        let pad = PADDING.get(..room.min(PADDING.len())).unwrap_or("");
        // Whole words only, so that no word is cut in two.
        let pad = pad.rfind(' ').map_or("", |at| pad.get(..at).unwrap_or(""));
        if !pad.is_empty() {
            t.push(',');
            t.push_str(pad);
        }
        t.push_str(".\n");
        if paragraph > 0 && i.is_multiple_of(paragraph) && i < steps {
            t.push('\n');
        }
        value = shown;
    }
    let _ = write!(t, "\n## Final Output\nThe answer is {value}.\n");
    t
}
