//! Calibration: before an LLM judge's votes count, its model must answer a fixed set of
//! easy entailment questions right.
//!
//! The questions are the seat's own question form ([`super::prompt::question`]): a short
//! prompt context and a step that does or does not follow from it (sums, products, an
//! equation, a syllogism, modus ponens against affirming the consequent, elapsed time,
//! an area), half of them entailed and half not. A model that cannot tell these apart
//! cannot tell a reasoning step apart either, and a vote from it is noise: its seats
//! abstain, with the score as the reason, however confident its ARES score looks. This is
//! the LLM tier's honeypot, run by the judge on itself, and it is what keeps a small or
//! misconfigured model from failing correct traces.
//!
//! A finished calibration is kept for the life of the judge; one that could not finish
//! (the endpoint did not answer) is tried again, at most once per [`RETRY_AFTER`].

use std::time::Duration;

use futures::{StreamExt, stream};

use super::entailment::{Chain, Entailment, Query};

/// How long an unfinished calibration is kept before it is tried again.
pub const RETRY_AFTER: Duration = Duration::from_secs(30);

/// One calibration question: the context, the step, and whether the step follows.
#[derive(Debug, Clone, Copy)]
pub struct Item {
    /// Prompt context.
    pub context: &'static str,
    /// The step asked about.
    pub step: &'static str,
    /// Whether it follows from the context.
    pub entailed: bool,
}

const fn item(context: &'static str, step: &'static str, entailed: bool) -> Item {
    Item {
        context,
        step,
        entailed,
    }
}

/// The questions: eight pairs, one step of each pair entailed and one not.
pub const ITEMS: [Item; 16] = [
    item(
        "Tom has 4 pencils. He buys 3 more pencils.",
        "Tom now has 7 pencils.",
        true,
    ),
    item(
        "Tom has 4 pencils. He buys 3 more pencils.",
        "Tom now has 9 pencils.",
        false,
    ),
    item(
        "A box holds 6 eggs. There are 5 full boxes.",
        "The boxes hold 30 eggs in all.",
        true,
    ),
    item(
        "A box holds 6 eggs. There are 5 full boxes.",
        "The boxes hold 11 eggs in all.",
        false,
    ),
    item("x + 2 = 10.", "x = 8.", true),
    item("x + 2 = 10.", "x = 12.", false),
    item(
        "All cats are mammals. Tibbles is a cat.",
        "Tibbles is a mammal.",
        true,
    ),
    item(
        "All cats are mammals. Tibbles is a mammal.",
        "Tibbles is a cat.",
        false,
    ),
    item(
        "If it rains, the street is wet. It rains.",
        "The street is wet.",
        true,
    ),
    item(
        "If it rains, the street is wet. The street is wet.",
        "It rains.",
        false,
    ),
    item(
        "The train leaves at 3 pm. The trip takes 2 hours.",
        "The train arrives at 5 pm.",
        true,
    ),
    item(
        "The train leaves at 3 pm. The trip takes 2 hours.",
        "The train arrives at 7 pm.",
        false,
    ),
    item(
        "Sara had 20 dollars and spent 8 dollars.",
        "Sara has 12 dollars left.",
        true,
    ),
    item(
        "Sara had 20 dollars and spent 8 dollars.",
        "Sara has 28 dollars left.",
        false,
    ),
    item(
        "A rectangle is 3 m wide and 4 m long.",
        "Its area is 12 square meters.",
        true,
    ),
    item(
        "A rectangle is 3 m wide and 4 m long.",
        "Its area is 7 square meters.",
        false,
    ),
];

/// A calibration's result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Calibration {
    /// Questions answered.
    pub answered: usize,
    /// Of those, answered right.
    pub right: usize,
    /// Questions asked in all.
    pub of: usize,
    /// Right answers needed.
    pub needed: usize,
    /// Why it could not finish (the first error), if it did not.
    pub error: Option<String>,
}

impl Calibration {
    /// Whether every question got an answer.
    pub fn finished(&self) -> bool {
        self.error.is_none() && self.answered == self.of
    }

    /// Whether the model's votes count.
    pub fn passed(&self) -> bool {
        self.finished() && self.right >= self.needed
    }

    /// One line for logs and abstention reasons.
    pub fn summary(&self) -> String {
        match &self.error {
            Some(e) => format!(
                "calibration unfinished ({} of {} answered): {e}",
                self.answered, self.of
            ),
            None if self.passed() => format!(
                "calibration passed ({} of {} right, {} needed)",
                self.right, self.of, self.needed
            ),
            None => format!(
                "calibration failed ({} of {} right, {} needed)",
                self.right, self.of, self.needed
            ),
        }
    }
}

/// Asks `model` every calibration question, at most `parallel` at once; `needed` right
/// answers pass.
pub async fn run<E: Entailment + ?Sized>(model: &E, needed: usize, parallel: usize) -> Calibration {
    let answers: Vec<Result<bool, E::Error>> = stream::iter(ITEMS)
        .map(|it: Item| async move {
            let base = [(it.context.to_string(), 1.0)];
            let derived = [it.step.to_string()];
            let chain = Chain {
                base: &base,
                derived: &derived,
            };
            let q = Query {
                hypothesis: 1,
                included: 1,
            };
            let a = model.entail(&chain, &q).await?;
            Ok((a.entails >= 0.5) == it.entailed)
        })
        .buffered(parallel.max(1))
        .collect()
        .await;
    let mut c = Calibration {
        answered: 0,
        right: 0,
        of: ITEMS.len(),
        needed,
        error: None,
    };
    for a in answers {
        match a {
            Ok(right) => {
                c.answered = c.answered.saturating_add(1);
                c.right = c.right.saturating_add(usize::from(right));
            }
            Err(e) => {
                c.error.get_or_insert_with(|| e.to_string());
            }
        }
    }
    c
}

#[cfg(test)]
mod tests {
    use async_trait::async_trait;

    use super::{super::ares::Answer, *};

    struct Rule<F>(F);

    #[async_trait]
    impl<F: Fn(&str, &str) -> Option<bool> + Send + Sync> Entailment for Rule<F> {
        type Error = String;

        async fn entail(&self, chain: &Chain<'_>, q: &Query) -> Result<Answer, String> {
            let ctx = chain.claim(0).unwrap_or_default();
            let step = chain.claim(q.hypothesis).unwrap_or_default();
            let yes = (self.0)(ctx, step).ok_or("no answer")?;
            Ok(Answer {
                entails: if yes { 1.0 } else { 0.0 },
                contradicts_context: false,
            })
        }
    }

    #[test]
    fn the_items_are_balanced_pairs() {
        let yes = ITEMS.iter().filter(|i| i.entailed).count();
        assert_eq!(yes * 2, ITEMS.len());
        for pair in ITEMS.chunks(2) {
            assert!(pair[0].entailed && !pair[1].entailed);
        }
    }

    #[test]
    fn a_model_that_knows_the_answers_passes_and_constant_or_flaky_ones_do_not() {
        futures::executor::block_on(async {
            let oracle = |ctx: &str, step: &str| {
                ITEMS
                    .iter()
                    .find(|i| i.context == ctx && i.step == step)
                    .map(|i| i.entailed)
            };
            let c = run(&Rule(oracle), 14, 3).await;
            assert!(c.passed(), "{}", c.summary());
            assert_eq!((c.right, c.answered), (16, 16));

            let yes = run(&Rule(|_: &str, _: &str| Some(true)), 14, 3).await;
            assert!(yes.finished() && !yes.passed());
            assert_eq!(yes.right, 8);
            assert!(yes.summary().contains("failed (8 of 16 right, 14 needed)"));
            let no = run(&Rule(|_: &str, _: &str| Some(false)), 14, 3).await;
            assert_eq!(no.right, 8);
            assert!(!no.passed());

            // Wrong on three (both Tibbles questions and "x = 12"): 13 right.
            let sloppy = move |ctx: &str, step: &str| {
                let truth = oracle(ctx, step)?;
                Some(truth != (step.contains("Tibbles") || step == "x = 12."))
            };
            let s = run(&Rule(sloppy), 14, 1).await;
            assert_eq!(s.right, 13);
            assert!(!s.passed());
            assert!(run(&Rule(sloppy), 13, 1).await.passed());
        })
    }

    #[test]
    fn an_endpoint_that_fails_leaves_the_calibration_unfinished() {
        futures::executor::block_on(async {
            let c = run(
                &Rule(|ctx: &str, _: &str| (!ctx.contains("eggs")).then_some(true)),
                0,
                2,
            )
            .await;
            assert!(!c.finished() && !c.passed());
            assert_eq!(c.answered, 14);
            assert!(
                c.summary()
                    .contains("unfinished (14 of 16 answered): no answer")
            );
        })
    }
}
