//! Consistency probes: a model's vote on a step stands only when the model also answers
//! the step's counterparts the other way.
//!
//! ARES turns entailment answers into a stability score, but a score is only as good as
//! the model's ability to tell entailed from not entailed. A weak model that says
//! "entailed" to everything scores every step Valid; one that says "not entailed" to
//! everything scores every step Invalid, and a correct trace fails on its noise. Before a
//! seat commits a vote, the judge asks the same model, on the full premise, about
//! statements whose answer follows from its own verdict:
//!
//! - the step's **negation**, in one of several wordings ([`NEGATIONS`]): a model that
//!   found the step entailed must not find its negation entailed too; one that found the
//!   step not entailed (an Invalid or Ungrounded vote) must find its negation entailed,
//!   since the premise that rules a step out implies that it does not hold;
//! - for a Valid vote on a step with a number in it, the step with **one of its numbers
//!   changed** ([`changed_number`]): a model that accepts a result must reject a
//!   different one.
//!
//! **Drawn per seat.** A probe known in advance can be anticipated: the step's author
//! can add text that a credulous model reads as "reply entailed unless the step starts
//! 'It is not the case'". So the negation's wording, the number changed (any of the
//! step's numbers but list and step labels) and the change (up or down by 1, 2, 3, 5 or
//! 10 units of its last digit) are drawn from a probe seed. The seed is the judge's
//! ([`super::LlmAuditor`]) and depends on the seat seed and on a secret key of the judge:
//! the seat seed alone is public (every seat of the segment, and the provider before it
//! opens the session, can compute it), the key is not. The same judge draws the same
//! probes for the same seat every time.
//!
//! A probe answered the wrong way turns the vote into an abstention, with the reason:
//! precision before coverage. The probes are plain texts, so they work with any model
//! and any server; they cost one or two calls per judged segment. A model that obeys
//! instructions written in the step can still be made to answer any probe "right" (an
//! instruction can say "entailed only if the step reads exactly so"): the probes catch
//! inconsistent models and steps written against fixed probes; keeping text in a step
//! from acting as instructions is the prompt's job ([`super::prompt`]).

use std::ops::Range;

use trust_protocol::{Hash, Vote};

use super::entailment::{Chain, Entailment, Query};

/// A statement to ask about, and the answer a consistent model gives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// What the probe checks (for the decision's reason).
    pub what: &'static str,
    /// The statement put as the current step.
    pub text: String,
    /// Whether a consistent model finds it entailed.
    pub expect_entailed: bool,
}

/// The wordings of a negation: the step goes where `{}` is. Some put the step first, so
/// a rule on how a probe starts cannot pick them all out.
pub const NEGATIONS: [(&str, &str); 6] = [
    ("The following statement is false: \"", "\""),
    ("\"", "\" is not true."),
    ("It does not hold that \"", "\"."),
    ("The claim \"", "\" is wrong."),
    ("\"", "\": this statement does not hold."),
    ("Contrary to what it says, this is false: \"", "\""),
];

/// Changes a number can undergo, in units of its last digit.
pub const CHANGES: [u128; 5] = [1, 2, 3, 5, 10];

/// Most numbers of a step considered for a change.
pub const MAX_NUMBERS: usize = 64;

/// Longest run of digits considered a number (longer ones are left alone).
const MAX_DIGITS: usize = 30;

/// A draw in `0..n` from the probe seed, for the choice named `what`.
fn draw(seed: &Hash, what: &str, n: usize) -> usize {
    let h = Hash::of_parts("trust/v1/llm-probe-draw", &[seed.as_ref(), what.as_bytes()]);
    // `n` is a small list length: the modulo's bias is below 2^-50.
    usize::try_from(h.to_u64().checked_rem(n.max(1) as u64).unwrap_or(0)).unwrap_or(0)
}

/// The negation of `step`, in the wording `seed` draws from [`NEGATIONS`].
pub fn negation(step: &str, seed: &Hash) -> String {
    let (before, after) = NEGATIONS
        .get(draw(seed, "negation", NEGATIONS.len()))
        .copied()
        .unwrap_or(NEGATIONS[0]);
    format!("{before}{}{after}", step.trim())
}

/// Whether the number at `at` in `step` is a label rather than a value: a list number
/// opening a line (`2.`, `3)`), or the number of a step (`Step 4`, `#4`).
fn is_label(step: &str, at: &Range<usize>) -> bool {
    let before = &step[..at.start];
    let line_start = before
        .rfind(['\n', '\r'])
        .map_or(0, |i| i.saturating_add(1));
    let after = &step[at.end..];
    if before[line_start..].trim().is_empty() && (after.starts_with(". ") || after.starts_with(')'))
    {
        return true;
    }
    let word = before.trim_end();
    word.ends_with('#') || word.to_ascii_lowercase().ends_with("step")
}

/// Where the numbers of `step` are that a probe may change (at most [`MAX_NUMBERS`]):
/// runs of ASCII digits, with a decimal part after a `.` between digits, not labels.
pub fn numbers(step: &str) -> Vec<Range<usize>> {
    let b = step.as_bytes();
    let mut found = Vec::new();
    let mut i = 0;
    while i < b.len() && found.len() < MAX_NUMBERS {
        if !b.get(i).is_some_and(u8::is_ascii_digit) {
            i = i.saturating_add(1);
            continue;
        }
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i = i.saturating_add(1);
        }
        if b.get(i) == Some(&b'.') && b.get(i.saturating_add(1)).is_some_and(u8::is_ascii_digit) {
            i = i.saturating_add(1);
            while b.get(i).is_some_and(u8::is_ascii_digit) {
                i = i.saturating_add(1);
            }
        }
        let r = start..i;
        if r.len() <= MAX_DIGITS && !is_label(step, &r) {
            found.push(r);
        }
    }
    found
}

/// `number` (digits, perhaps with one decimal point) changed by `by` units of its last
/// digit, up or down; never below zero, same number of decimals.
fn change(number: &str, by: u128, down: bool) -> Option<String> {
    let decimals = number.split_once('.').map_or(0, |(_, after)| after.len());
    let digits: String = number.chars().filter(|c| *c != '.').collect();
    let value: u128 = digits.parse().ok()?;
    let new = if down && value >= by {
        value.saturating_sub(by)
    } else {
        value.checked_add(by)?
    };
    let mut s = new.to_string();
    // Leading zeros stay (`07` becomes `08`), and a decimal keeps a digit before its point.
    let width = if digits.starts_with('0') && digits.len() > 1 {
        digits.len()
    } else {
        decimals.saturating_add(1)
    };
    while s.len() < width {
        s.insert(0, '0');
    }
    if decimals > 0 {
        s.insert(s.len().saturating_sub(decimals), '.');
    }
    Some(s)
}

/// `step` with one of its [numbers] changed, which one and by how much drawn from `seed`
/// (`None` when it has none).
pub fn changed_number(step: &str, seed: &Hash) -> Option<String> {
    let found = numbers(step);
    let at = found.get(draw(seed, "number", found.len()))?;
    let by = CHANGES
        .get(draw(seed, "change", CHANGES.len()))
        .copied()
        .unwrap_or(1);
    let down = draw(seed, "direction", 2) == 1;
    let new = change(&step[at.clone()], by, down)?;
    Some(format!("{}{new}{}", &step[..at.start], &step[at.end..]))
}

/// The probes that can overturn `vote` on `step` (none for an abstention), drawn from
/// `seed`.
pub fn probes_for(vote: Vote, step: &str, seed: &Hash) -> Vec<Probe> {
    match vote {
        Vote::Abstain | Vote::PayloadAbstain => Vec::new(),
        Vote::Valid => {
            let mut p = vec![Probe {
                what: "its negation",
                text: negation(step, seed),
                expect_entailed: false,
            }];
            if let Some(text) = changed_number(step, seed) {
                p.push(Probe {
                    what: "the step with a number changed",
                    text,
                    expect_entailed: false,
                });
            }
            p
        }
        Vote::Invalid | Vote::Ungrounded => vec![Probe {
            what: "its negation",
            text: negation(step, seed),
            expect_entailed: true,
        }],
    }
}

/// Whether `answer` (the model's entailment probability for the probe) is the consistent
/// one: at least a half towards what the probe expects.
pub fn consistent(probe: &Probe, answer: f64) -> bool {
    if probe.expect_entailed {
        answer >= 0.5
    } else {
        answer < 0.5
    }
}

/// Why a vote does not stand: the probe the model answered the wrong way, or what
/// stopped the asking (`E`: the model's error).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError<E> {
    /// The chain has no step to probe.
    #[error("nothing to probe")]
    NothingToProbe,
    /// The model could not answer a probe.
    #[error("the probe of {what} failed: {error}")]
    Failed {
        /// What the probe checks.
        what: &'static str,
        /// The model's error.
        error: E,
    },
    /// The model answered a probe the wrong way.
    #[error("it found {what} {}", found(*.entailed))]
    Inconsistent {
        /// What the probe checks.
        what: &'static str,
        /// Whether the model found the probe entailed.
        entailed: bool,
    },
}

/// How a probe answered the wrong way reads.
fn found(entailed: bool) -> &'static str {
    if entailed {
        "entailed too"
    } else {
        "not entailed either"
    }
}

/// What [`check`] found (`E`: the model's error).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked<E> {
    /// Probes asked.
    pub asked: usize,
    /// `Err` names the probe the model answered the wrong way, or what stopped the asking.
    pub outcome: Result<(), ProbeError<E>>,
}

/// Asks `model` the probes of `vote`, drawn from `seed`, on the full premise: every base
/// claim (the givens) and every derived claim before the judged one (the cited claims),
/// with the probe put as the current step. Stops at the first probe answered the wrong
/// way.
pub async fn check<E: Entailment + ?Sized>(
    model: &E,
    base: &[(String, f64)],
    derived: &[String],
    vote: Vote,
    seed: &Hash,
) -> Checked<E::Error> {
    let mut asked = 0;
    let Some((step, cited)) = derived.split_last() else {
        return Checked {
            asked,
            outcome: Err(ProbeError::NothingToProbe),
        };
    };
    for p in probes_for(vote, step, seed) {
        let mut claims = cited.to_vec();
        claims.push(p.text.clone());
        let chain = Chain {
            base,
            derived: &claims,
        };
        let hypothesis = chain.len().saturating_sub(1);
        // Chains longer than a mask never reach here: the scoring refused them first.
        let query = Query {
            hypothesis,
            included: 1u64
                .checked_shl(hypothesis as u32)
                .map_or(u64::MAX, |b| b.saturating_sub(1)),
        };
        asked = asked.saturating_add(1);
        let answer = match model.entail(&chain, &query).await {
            Ok(a) => a,
            Err(error) => {
                return Checked {
                    asked,
                    outcome: Err(ProbeError::Failed {
                        what: p.what,
                        error,
                    }),
                };
            }
        };
        if !consistent(&p, answer.entails) {
            return Checked {
                asked,
                outcome: Err(ProbeError::Inconsistent {
                    what: p.what,
                    entailed: answer.entails >= 0.5,
                }),
            };
        }
    }
    Checked {
        asked,
        outcome: Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use async_trait::async_trait;

    use super::{super::ares::Answer, *};

    /// A deterministic entailment model for tests: answers by a rule on the hypothesis.
    struct Rule<F>(F);

    #[async_trait]
    impl<F: Fn(&str) -> bool + Send + Sync> Entailment for Rule<F> {
        type Error = String;

        async fn entail(&self, chain: &Chain<'_>, q: &Query) -> Result<Answer, String> {
            assert!(
                (0..q.hypothesis).all(|i| q.includes(i)),
                "a probe is asked on the full premise"
            );
            let h = chain.claim(q.hypothesis).unwrap_or_default();
            Ok(Answer {
                entails: if (self.0)(h) { 1.0 } else { 0.0 },
                contradicts_context: false,
            })
        }
    }

    fn chain() -> (Vec<(String, f64)>, Vec<String>) {
        (
            vec![("Ann has 12 apples and buys 30 more.".into(), 1.0)],
            vec![
                "She buys 30 apples.".into(),
                "So she has 12 + 30 = 42 apples.".into(),
            ],
        )
    }

    fn seed(i: u8) -> Hash {
        Hash::sha256(&[i])
    }

    /// Whether `h` is a negation of `step`, in any wording.
    fn negates(h: &str, step: &str) -> bool {
        NEGATIONS
            .iter()
            .any(|(b, a)| h == format!("{b}{}{a}", step.trim()))
    }

    #[test]
    fn a_yes_sayer_or_a_no_sayer_is_caught_and_a_discerning_model_passes() {
        futures::executor::block_on(async {
            let (base, derived) = chain();
            let step = derived[1].clone();
            for i in 0..8 {
                let s = seed(i);
                // Says "entailed" to everything: its Valid vote does not stand.
                let yes = Rule(|_: &str| true);
                let c = check(&yes, &base, &derived, Vote::Valid, &s).await;
                assert_eq!(c.asked, 1);
                assert!(
                    c.outcome
                        .unwrap_err()
                        .to_string()
                        .contains("negation entailed too")
                );
                // Says "not entailed" to everything: its Invalid vote does not stand.
                let no = Rule(|_: &str| false);
                let c = check(&no, &base, &derived, Vote::Invalid, &s).await;
                assert!(
                    c.outcome
                        .unwrap_err()
                        .to_string()
                        .contains("not entailed either")
                );
                // Accepts the step and any result, but rejects negations: caught by the
                // changed number.
                let loose = Rule(|h: &str| !negates(h, &step));
                let c = check(&loose, &base, &derived, Vote::Valid, &s).await;
                assert_eq!(c.asked, 2);
                assert!(
                    c.outcome
                        .unwrap_err()
                        .to_string()
                        .contains("number changed")
                );
                // Knows the step and nothing else: its Valid vote stands after both probes.
                let right = Rule(|h: &str| h == step);
                let c = check(&right, &base, &derived, Vote::Valid, &s).await;
                assert_eq!((c.asked, c.outcome), (2, Ok(())));
                // And its Invalid vote on a wrong step stands: it finds the negation entailed.
                let wrong = vec![derived[0].clone(), "So she has 12 + 30 = 43 apples.".into()];
                let knows = Rule(|h: &str| h == step || negates(h, &wrong[1]));
                let c = check(&knows, &base, &wrong, Vote::Invalid, &s).await;
                assert_eq!((c.asked, c.outcome), (1, Ok(())));
            }
        })
    }

    /// Issue 26 (finding 6): a step written against the fixed probes (the negation "It is
    /// not the case that ...", the last number one up) makes a model that obeys it answer
    /// those the consistent way. The probes a seat draws are other ones, and the model
    /// answers them the wrong way: the vote does not stand, on any seat.
    #[test]
    fn a_step_written_against_fixed_probes_does_not_pass_the_drawn_ones() {
        futures::executor::block_on(async {
            let step = "x = 15";
            let base = vec![("Find x when x + 5 = 21.".to_string(), 1.0)];
            let derived = [step.to_string()];
            // What the step tells the model: entailed, unless the probe starts as the fixed
            // negation did or carries the fixed changed result.
            let obeys = Rule(|h: &str| !h.starts_with("It is not the case") && !h.contains("16"));
            let fixed = [
                format!("It is not the case that the following statement is true: \"{step}\""),
                "x = 16".to_string(),
            ];
            assert!((obeys.0)(step));
            for p in &fixed {
                assert!(
                    !(obeys.0)(p.as_str()),
                    "the fixed probe {p:?} is answered consistently"
                );
            }
            for i in 0..32 {
                let c = check(&obeys, &base, &derived, Vote::Valid, &seed(i)).await;
                assert_eq!(
                    c.outcome.map_err(|e| e.to_string()),
                    Err("it found its negation entailed too".to_string()),
                    "seat {i}: no drawn wording is the fixed one"
                );
            }
            // The wordings are public: a step can name them all. It still cannot know which
            // number its seat changes, nor by how much: only the seats that drew the fixed
            // change (one up) let the vote stand.
            let knows_wordings = Rule(|h: &str| !negates(h, step) && !h.contains("16"));
            let mut stood = 0;
            for i in 0..32 {
                let c = check(&knows_wordings, &base, &derived, Vote::Valid, &seed(i)).await;
                match c.outcome {
                    Ok(()) => {
                        stood += 1;
                        assert_eq!(changed_number(step, &seed(i)).as_deref(), Some("x = 16"));
                    }
                    Err(why) => assert!(why.to_string().contains("number changed"), "{why}"),
                }
            }
            assert!(stood <= 32 / 4, "{stood} of 32 seats drew the fixed change");
        })
    }

    #[test]
    fn a_model_error_during_a_probe_means_no_vote() {
        futures::executor::block_on(async {
            struct Down;
            #[async_trait]
            impl Entailment for Down {
                type Error = String;

                async fn entail(&self, _: &Chain<'_>, _: &Query) -> Result<Answer, String> {
                    Err("connection refused".into())
                }
            }
            let (base, derived) = chain();
            let c = check(&Down, &base, &derived, Vote::Valid, &seed(0)).await;
            assert!(
                c.outcome
                    .unwrap_err()
                    .to_string()
                    .contains("connection refused")
            );
            let none = check(&Down, &base, &derived, Vote::Abstain, &seed(0)).await;
            assert_eq!(none.asked, 0);
        })
    }

    #[test]
    fn probes_are_the_same_for_a_seed_and_vary_between_seeds() {
        let step = "So 12 + 30 = 42 apples, and 42 - 2 = 40.";
        let (mut wordings, mut texts) = (BTreeSet::new(), BTreeSet::new());
        for i in 0..64 {
            let s = seed(i);
            let p = probes_for(Vote::Valid, step, &s);
            assert_eq!(p, probes_for(Vote::Valid, step, &s), "seed {i}");
            assert!(negates(&p[0].text, step), "{}", p[0].text);
            wordings.insert(p[0].text.clone());
            texts.insert(p[1].text.clone());
        }
        assert_eq!(wordings.len(), NEGATIONS.len(), "every wording is drawn");
        // Five numbers, five changes, two directions: many different changed steps.
        assert!(texts.len() >= 20, "{texts:?}");
        // Every number is drawn by some seed.
        let at = numbers(step);
        assert_eq!(at.len(), 6);
        let changed: BTreeSet<usize> = texts
            .iter()
            .filter_map(|t| {
                let b = numbers(t);
                (0..at.len()).find(|&k| step[at[k].clone()] != t[b[k].clone()])
            })
            .collect();
        assert_eq!(changed, (0..6).collect::<BTreeSet<usize>>());
    }

    #[test]
    fn one_number_changes_and_nothing_else() {
        for i in 0..64 {
            let s = seed(i);
            for step in [
                "So 12 + 30 = 42 apples.",
                "x = 3.5",
                "total 1,209",
                "donc 2 × 7 = 14 €",
                "0 items",
                "James is 007.",
            ] {
                let changed = changed_number(step, &s).unwrap();
                assert_ne!(changed, step);
                let (a, b) = (numbers(step), numbers(&changed));
                assert_eq!(a.len(), b.len(), "{step:?} -> {changed:?}");
                let differ = a
                    .iter()
                    .zip(&b)
                    .filter(|(x, y)| step[(*x).clone()] != changed[(*y).clone()])
                    .count();
                assert_eq!(differ, 1, "{step:?} -> {changed:?}");
                // The text around the numbers is kept.
                let words = |t: &str| t.replace(|c: char| c.is_ascii_digit(), "");
                assert_eq!(
                    words(step).replace('.', ""),
                    words(&changed).replace('.', "")
                );
            }
        }
        assert_eq!(change("3.5", 2, false).as_deref(), Some("3.7"));
        assert_eq!(change("0.05", 3, true).as_deref(), Some("0.02"));
        assert_eq!(change("9.9", 1, false).as_deref(), Some("10.0"));
        assert_eq!(change("07", 1, false).as_deref(), Some("08"));
        assert_eq!(
            change("2", 5, true).as_deref(),
            Some("7"),
            "never below zero"
        );
        assert_eq!(change("10", 2, true).as_deref(), Some("8"));
        assert_eq!(changed_number("no numbers here", &seed(0)), None);
    }

    #[test]
    fn labels_are_not_numbers_to_change() {
        assert_eq!(numbers("Step 4: x = 9").len(), 1);
        assert_eq!(numbers("2. Let x be 5\n3) so x = 5").len(), 2);
        assert_eq!(numbers("see #3, it gives 8").len(), 1);
        assert!(numbers("Step 1. Step 2.").is_empty());
        assert!(
            changed_number("Step 4: so 9", &seed(1))
                .unwrap()
                .starts_with("Step 4: so ")
        );
        let long = "1".repeat(MAX_DIGITS + 1);
        assert!(numbers(&long).is_empty());
        assert_eq!(numbers(&"1 ".repeat(200)).len(), MAX_NUMBERS);
    }

    #[test]
    fn each_vote_gets_the_probes_that_can_overturn_it() {
        let s = seed(3);
        assert!(probes_for(Vote::Abstain, "1 + 1 = 2", &s).is_empty());
        let valid = probes_for(Vote::Valid, "1 + 1 = 2", &s);
        assert_eq!(valid.len(), 2);
        assert!(valid.iter().all(|p| !p.expect_entailed));
        assert_eq!(probes_for(Vote::Valid, "so p holds", &s).len(), 1);
        for v in [Vote::Invalid, Vote::Ungrounded] {
            let p = probes_for(v, "1 + 1 = 3", &s);
            assert_eq!(p.len(), 1);
            assert!(p[0].expect_entailed && negates(&p[0].text, "1 + 1 = 3"));
        }
    }

    #[test]
    fn consistency_is_read_at_one_half() {
        let p = &probes_for(Vote::Invalid, "s", &seed(0))[0];
        assert!(consistent(p, 1.0) && consistent(p, 0.5) && !consistent(p, 0.4));
        let q = &probes_for(Vote::Valid, "s", &seed(0))[0];
        assert!(consistent(q, 0.0) && !consistent(q, 0.5));
    }
}
