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
//! - the step's **negation** ("it is not the case that ..."): a model that found the step
//!   entailed must not find its negation entailed too; one that found the step not
//!   entailed (an Invalid or Ungrounded vote) must find its negation entailed, since the
//!   premise that rules a step out implies that it does not hold;
//! - for a Valid vote on a step with a number in it, the step with its **last number
//!   changed**: a model that accepts a result must reject a different one.
//!
//! A probe answered the wrong way turns the vote into an abstention, with the reason:
//! precision before coverage. The probes are plain texts, so they work with any model
//! and any server; they cost one or two calls per judged segment.

use trust_protocol::Vote;

use super::ares::{Chain, Entailment, Query};

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

/// The negation of `step`.
pub fn negation(step: &str) -> String {
    format!(
        "It is not the case that the following statement is true: \"{}\"",
        step.trim()
    )
}

/// `step` with its last number replaced by a different one (`None` when it has none).
/// The new value differs from the old in its last digit and keeps its form (sign, digits
/// before and after a decimal point), so it reads as a plausible wrong result.
pub fn altered_result(step: &str) -> Option<String> {
    let bytes = step.as_bytes();
    let end = bytes
        .iter()
        .rposition(u8::is_ascii_digit)?
        .saturating_add(1);
    let mut start = end.saturating_sub(1);
    while start > 0 {
        let prev = bytes[start - 1];
        let before_digit = start >= 2 && bytes[start - 2].is_ascii_digit();
        if prev.is_ascii_digit() || ((prev == b'.' || prev == b',') && before_digit) {
            start -= 1;
        } else {
            break;
        }
    }
    let number = &step[start..end];
    // The last digit changes: 0-8 go up by one and 9 becomes 7, so no carry reshapes
    // the number.
    let last = number.as_bytes()[number.len() - 1];
    let new_last = if last == b'9' { b'7' } else { last + 1 };
    let mut changed = number[..number.len() - 1].to_string();
    changed.push(char::from(new_last));
    Some(format!("{}{}{}", &step[..start], changed, &step[end..]))
}

/// The probes that can overturn `vote` on `step` (none for an abstention).
pub fn probes_for(vote: Vote, step: &str) -> Vec<Probe> {
    match vote {
        Vote::Abstain => Vec::new(),
        Vote::Valid => {
            let mut p = vec![Probe {
                what: "its negation",
                text: negation(step),
                expect_entailed: false,
            }];
            if let Some(text) = altered_result(step) {
                p.push(Probe {
                    what: "the step with a different result",
                    text,
                    expect_entailed: false,
                });
            }
            p
        }
        Vote::Invalid | Vote::Ungrounded => vec![Probe {
            what: "its negation",
            text: negation(step),
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

/// What [`check`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checked {
    /// Probes asked.
    pub asked: usize,
    /// `Err` names the probe the model answered the wrong way, or what stopped the asking.
    pub outcome: Result<(), String>,
}

/// Asks `model` the probes of `vote` on the full premise: every base claim (the givens)
/// and every derived claim before the judged one (the cited claims), with the probe put
/// as the current step. Stops at the first probe answered the wrong way.
pub async fn check<E: Entailment + ?Sized>(
    model: &E,
    base: &[(String, f64)],
    derived: &[String],
    vote: Vote,
) -> Checked {
    let mut asked = 0;
    let Some((step, cited)) = derived.split_last() else {
        return Checked {
            asked,
            outcome: Err("nothing to probe".into()),
        };
    };
    for p in probes_for(vote, step) {
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
                .map_or(u64::MAX, |b| b - 1),
        };
        asked += 1;
        let answer = match model.entail(&chain, &query).await {
            Ok(a) => a,
            Err(e) => {
                return Checked {
                    asked,
                    outcome: Err(format!("the probe of {} failed: {e}", p.what)),
                };
            }
        };
        if !consistent(&p, answer.entails) {
            let found = if answer.entails >= 0.5 {
                "entailed too"
            } else {
                "not entailed either"
            };
            return Checked {
                asked,
                outcome: Err(format!("it found {} {found}", p.what)),
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
    use async_trait::async_trait;

    use super::{super::ares::Answer, *};

    /// A deterministic entailment model for tests: answers by a rule on the hypothesis.
    struct Rule<F>(F);

    #[async_trait]
    impl<F: Fn(&str) -> bool + Send + Sync> Entailment for Rule<F> {
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

    #[tokio::test]
    async fn a_yes_sayer_or_a_no_sayer_is_caught_and_a_discerning_model_passes() {
        let (base, derived) = chain();
        // Says "entailed" to everything: its Valid vote does not stand.
        let yes = Rule(|_: &str| true);
        let c = check(&yes, &base, &derived, Vote::Valid).await;
        assert_eq!(c.asked, 1);
        assert!(c.outcome.unwrap_err().contains("negation entailed too"));
        // Says "not entailed" to everything: its Invalid vote does not stand.
        let no = Rule(|_: &str| false);
        let c = check(&no, &base, &derived, Vote::Invalid).await;
        assert!(c.outcome.unwrap_err().contains("not entailed either"));
        // Accepts the step and any result, but rejects negations: caught by the
        // altered result.
        let loose = Rule(|h: &str| !h.contains("not the case"));
        let c = check(&loose, &base, &derived, Vote::Valid).await;
        assert_eq!(c.asked, 2);
        assert!(c.outcome.unwrap_err().contains("different result"));
        // Knows that 12 + 30 = 42: its Valid vote stands after both probes.
        let right = Rule(|h: &str| h.contains("= 42") && !h.contains("not the case"));
        let c = check(&right, &base, &derived, Vote::Valid).await;
        assert_eq!((c.asked, c.outcome), (2, Ok(())));
        // And its Invalid vote on a wrong step stands: it finds the negation entailed.
        let wrong = vec![derived[0].clone(), "So she has 12 + 30 = 43 apples.".into()];
        let knows = Rule(|h: &str| {
            h.contains("= 42") || (h.contains("not the case") && h.contains("= 43"))
        });
        let c = check(&knows, &base, &wrong, Vote::Invalid).await;
        assert_eq!((c.asked, c.outcome), (1, Ok(())));
    }

    #[tokio::test]
    async fn a_model_error_during_a_probe_means_no_vote() {
        struct Down;
        #[async_trait]
        impl Entailment for Down {
            async fn entail(&self, _: &Chain<'_>, _: &Query) -> Result<Answer, String> {
                Err("connection refused".into())
            }
        }
        let (base, derived) = chain();
        let c = check(&Down, &base, &derived, Vote::Valid).await;
        assert!(c.outcome.unwrap_err().contains("connection refused"));
        assert_eq!(check(&Down, &base, &derived, Vote::Abstain).await.asked, 0);
    }

    #[test]
    fn the_last_number_changes_and_nothing_else() {
        assert_eq!(
            altered_result("So 12 + 30 = 42 apples.").as_deref(),
            Some("So 12 + 30 = 43 apples.")
        );
        assert_eq!(
            altered_result("x = 3.5").as_deref(),
            Some("x = 3.6"),
            "a decimal keeps its point"
        );
        assert_eq!(
            altered_result("total 1,209").as_deref(),
            Some("total 1,207")
        );
        assert_eq!(
            altered_result("a sum of 19 and").as_deref(),
            Some("a sum of 17 and")
        );
        assert_eq!(altered_result("no numbers here"), None);
        // Multi-byte text before and after the number stays intact.
        assert_eq!(
            altered_result("donc 2 × 7 = 14 €").as_deref(),
            Some("donc 2 × 7 = 15 €")
        );
    }

    #[test]
    fn each_vote_gets_the_probes_that_can_overturn_it() {
        assert!(probes_for(Vote::Abstain, "1 + 1 = 2").is_empty());
        let valid = probes_for(Vote::Valid, "1 + 1 = 2");
        assert_eq!(valid.len(), 2);
        assert!(valid.iter().all(|p| !p.expect_entailed));
        assert_eq!(probes_for(Vote::Valid, "so p holds").len(), 1);
        for v in [Vote::Invalid, Vote::Ungrounded] {
            let p = probes_for(v, "1 + 1 = 3");
            assert_eq!(p.len(), 1);
            assert!(p[0].expect_entailed && p[0].text.contains("not the case"));
        }
    }

    #[test]
    fn consistency_is_read_at_one_half() {
        let p = &probes_for(Vote::Invalid, "s")[0];
        assert!(consistent(p, 1.0) && consistent(p, 0.5) && !consistent(p, 0.4));
        let q = &probes_for(Vote::Valid, "s")[0];
        assert!(consistent(q, 0.0) && !consistent(q, 0.5));
    }
}
