//! ARES (seed 001): the soundness of a claim as the mean entailment over random premise
//! subsets, each premise included with the probability that it is sound.
//!
//! The chain a seat sees is its base claims (the givens sealed with the segment, chiefly
//! the problem statement, each with a prior soundness) followed by its derived claims (the
//! claims of the cited segments in manifest order, then the segment's own claim last).
//! For `N` samples: every base claim is included with its prior; then, derived claim by
//! derived claim, the entailment model is asked whether the claims included so far entail
//! it, the mean answer over the samples is the claim's stability score, and each sample
//! includes the claim for the later ones with the probability its own answer gave. A claim
//! that rests on an unsound premise therefore scores low even when it follows from it: the
//! unsound premise is rarely included.
//!
//! Identical premise subsets are asked once: a derived claim with `j` uncertain claims
//! before it costs at most `min(N, 2^j)` calls, however large `N` is. The random draws are
//! a hash of the seat seed, the sample and the claim, so every run on the same inputs asks
//! the same questions. The [`Sampler`] is synchronous and does no I/O; [`score`] drives it
//! over an [`Entailment`] model, asking each claim's distinct subsets concurrently.

use std::collections::{BTreeMap, BTreeSet};

use futures::{StreamExt, stream};
use serde::{Deserialize, Serialize};
use trust_protocol::{Hash, Vote};

pub use super::entailment::{Answer, Chain, Entailment, Query};

/// Most claims (base and derived) in one chain: subsets are 64-bit masks.
pub const MAX_CLAIMS: usize = 63;
/// Most samples, whatever epsilon and delta ask for.
pub const MAX_SAMPLES: usize = 100_000;

/// An `[llm_ares]` setting out of its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AresParamsError {
    /// `epsilon` or `delta` outside `(0, 1)`.
    #[error("[llm.ares] epsilon and delta must lie strictly between 0 and 1")]
    EpsilonDelta,
    /// `given_soundness` outside `[0, 1]`.
    #[error("[llm.ares] given_soundness must lie in [0, 1]")]
    GivenSoundness,
    /// The thresholds out of order or outside `[0, 1]`.
    #[error("[llm.ares] need 0 <= invalid_at < valid_at <= 1")]
    Thresholds,
    /// More right answers asked for than there are calibration questions.
    #[error(
        "[llm.ares] calibration_min is at most {} (the number of calibration questions)",
        super::calibrate::ITEMS.len()
    )]
    CalibrationMin,
}

/// ARES settings (`[llm_ares]` in `config.toml`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AresParams {
    /// Largest error of the estimated stability score (`epsilon`)...
    pub epsilon: f64,
    /// ...with probability at least `1 - delta`.
    pub delta: f64,
    /// Prior soundness of a given (the problem statement is the context: sound).
    pub given_soundness: f64,
    /// A stability score at or above this is a `Valid` vote.
    pub valid_at: f64,
    /// A stability score at or below this is an `Invalid` (or `Ungrounded`) vote; between
    /// the two thresholds the seat abstains.
    pub invalid_at: f64,
    /// Ask the consistency probes ([`super::probe`]) before a vote stands: the step's
    /// negation, and for a Valid vote the step with a different result. A probe answered
    /// the wrong way makes the seat abstain.
    pub consistency_probes: bool,
    /// Right answers of the 16 calibration questions ([`super::calibrate`]) the model
    /// needs before any of its votes count; 0 skips the calibration.
    pub calibration_min: usize,
}

// The fields are finite numbers (checked by `validate`), for which equality is total.
impl Eq for AresParams {}

impl Default for AresParams {
    fn default() -> Self {
        Self {
            epsilon: 0.1,
            delta: 0.1,
            given_soundness: 1.0,
            valid_at: 0.7,
            invalid_at: 0.3,
            consistency_probes: true,
            calibration_min: 14,
        }
    }
}

impl AresParams {
    /// Checks the ranges: `0 < epsilon, delta < 1`, soundness in `[0, 1]`,
    /// `0 <= invalid_at < valid_at <= 1`.
    pub fn validate(&self) -> Result<(), AresParamsError> {
        let unit = |x: f64| x.is_finite() && (0.0..=1.0).contains(&x);
        let open = |x: f64| x.is_finite() && x > 0.0 && x < 1.0;
        if !open(self.epsilon) || !open(self.delta) {
            return Err(AresParamsError::EpsilonDelta);
        }
        if !unit(self.given_soundness) {
            return Err(AresParamsError::GivenSoundness);
        }
        if !unit(self.valid_at) || !unit(self.invalid_at) || self.invalid_at >= self.valid_at {
            return Err(AresParamsError::Thresholds);
        }
        if self.calibration_min > super::calibrate::ITEMS.len() {
            return Err(AresParamsError::CalibrationMin);
        }
        Ok(())
    }

    /// `N`: the least sample count with `N >= ln(2/delta) / (2 epsilon^2)`.
    pub fn samples(&self) -> usize {
        sample_count(self.epsilon, self.delta)
    }
}

/// The least `N` with `N >= ln(2/delta) / (2 epsilon^2)` (Hoeffding), capped at
/// [`MAX_SAMPLES`]; 1 for parameters out of range.
pub fn sample_count(epsilon: f64, delta: f64) -> usize {
    if !(epsilon > 0.0 && delta > 0.0 && delta < 1.0) {
        return 1;
    }
    let bound = (2.0 / delta).ln() / (2.0 * epsilon * epsilon);
    if !bound.is_finite() || bound >= MAX_SAMPLES as f64 {
        return MAX_SAMPLES;
    }
    // `bound` is in [0, MAX_SAMPLES): the cast is exact after `ceil`.
    (bound.ceil() as usize).max(1)
}

/// The [`Sampler`] was driven out of order or given answers it cannot use.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum SamplerError {
    /// The chain has no derived claim.
    #[error("nothing to judge")]
    NothingToJudge,
    /// The chain (its length given) is longer than [`MAX_CLAIMS`].
    #[error("{0} claims with their premises; at most {MAX_CLAIMS} are scored")]
    TooManyClaims(usize),
    /// Answers after the last claim was scored.
    #[error("every claim is scored already")]
    AllScored,
    /// An answer (given) outside `[0, 1]`.
    #[error("entailment {0} out of [0, 1]")]
    OutOfRange(f64),
    /// A premise subset asked about got no answer.
    #[error("a premise subset has no answer")]
    MissingAnswer,
    /// The scores were asked for before every claim was scored.
    #[error("not every claim is scored")]
    Unfinished,
}

/// Why [`score`] gave no score: the sampler's bookkeeping, or the model's own error.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AresError<E> {
    /// The sampler refused the chain or an answer.
    #[error(transparent)]
    Sampler(#[from] SamplerError),
    /// The model could not answer a query.
    #[error("{0}")]
    Model(E),
}

/// One derived claim's result.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ClaimScore {
    /// Stability score: mean entailment over the samples.
    pub stability: f64,
    /// Share of samples whose answer said the claim contradicts the context.
    pub contradicts: f64,
    /// Distinct premise subsets asked for this claim.
    pub calls: usize,
}

/// The scores of every derived claim of a chain.
#[derive(Debug, Clone, PartialEq)]
pub struct Score {
    /// Per derived claim, in order; the last is the judged claim's.
    pub claims: Vec<ClaimScore>,
    /// `N`.
    pub samples: usize,
}

impl Score {
    /// Entailment calls made in all.
    pub fn calls(&self) -> usize {
        self.claims.iter().map(|c| c.calls).sum()
    }

    /// The judged claim's result.
    pub fn last(&self) -> Option<&ClaimScore> {
        self.claims.last()
    }
}

/// A uniform draw in `[0, 1)` for sample `i`, claim `j`: a hash of the seed, so the same
/// seat seed gives the same samples on every run.
fn uniform(seed: &Hash, i: usize, j: usize) -> f64 {
    let h = Hash::of_parts(
        "trust/v1/ares-draw",
        &[
            seed.as_ref(),
            &(i as u64).to_le_bytes(),
            &(j as u64).to_le_bytes(),
        ],
    );
    // 53 random bits: exactly representable.
    (h.to_u64() >> 11) as f64 / (1u64 << 53) as f64
}

/// The sampler: ARES's bookkeeping without any I/O. It hands out the distinct queries of
/// the next derived claim ([`Sampler::queries`]), takes their answers
/// ([`Sampler::answer`]) and moves on to the next claim, until every derived claim is
/// scored ([`Sampler::finish`]).
#[derive(Debug, Clone)]
pub struct Sampler {
    seed: Hash,
    base: usize,
    derived: usize,
    /// Per sample, the claims included so far.
    included: Vec<u64>,
    claims: Vec<ClaimScore>,
}

impl Sampler {
    /// Step 1: `N` samples of the base claims, each included with its prior soundness.
    pub fn new(chain: &Chain<'_>, params: &AresParams, seed: &Hash) -> Result<Self, SamplerError> {
        if chain.derived.is_empty() {
            return Err(SamplerError::NothingToJudge);
        }
        if chain.len() > MAX_CLAIMS {
            return Err(SamplerError::TooManyClaims(chain.len()));
        }
        let included = (0..params.samples())
            .map(|i| {
                chain
                    .base
                    .iter()
                    .enumerate()
                    .filter(|(j, (_, p))| uniform(seed, i, *j) < *p)
                    .fold(0u64, |m, (j, _)| m | (1u64 << j))
            })
            .collect();
        Ok(Self {
            seed: *seed,
            base: chain.base.len(),
            derived: chain.derived.len(),
            included,
            claims: Vec::with_capacity(chain.derived.len()),
        })
    }

    /// The chain index of the derived claim being scored, if any is left.
    fn hypothesis(&self) -> Option<usize> {
        (self.claims.len() < self.derived).then(|| self.base.saturating_add(self.claims.len()))
    }

    /// The distinct queries of the next derived claim (none once all are scored).
    pub fn queries(&self) -> Vec<Query> {
        let Some(h) = self.hypothesis() else {
            return Vec::new();
        };
        let distinct: BTreeSet<u64> = self.included.iter().copied().collect();
        distinct
            .into_iter()
            .map(|included| Query {
                hypothesis: h,
                included,
            })
            .collect()
    }

    /// Step 2 for one derived claim: its stability is the mean answer over the samples,
    /// and each sample includes it for the later claims with the probability its own
    /// answer gave. `answers` maps each query's premise subset to its answer.
    pub fn answer(&mut self, answers: &BTreeMap<u64, Answer>) -> Result<(), SamplerError> {
        let h = self.hypothesis().ok_or(SamplerError::AllScored)?;
        if let Some(a) = answers
            .values()
            .find(|a| !(a.entails.is_finite() && (0.0..=1.0).contains(&a.entails)))
        {
            return Err(SamplerError::OutOfRange(a.entails));
        }
        let n = self.included.len();
        let mut sum = 0.0;
        let mut against = 0usize;
        for (i, mask) in self.included.iter_mut().enumerate() {
            let a = answers.get(mask).ok_or(SamplerError::MissingAnswer)?;
            sum += a.entails;
            if a.contradicts_context {
                against = against.saturating_add(1);
            }
            if uniform(&self.seed, i, h) < a.entails {
                *mask |= 1u64 << h;
            }
        }
        self.claims.push(ClaimScore {
            stability: sum / n as f64,
            contradicts: against as f64 / n as f64,
            calls: answers.len(),
        });
        Ok(())
    }

    /// The scores, once every derived claim has its answers.
    pub fn finish(self) -> Result<Score, SamplerError> {
        if self.claims.len() < self.derived {
            return Err(SamplerError::Unfinished);
        }
        Ok(Score {
            samples: self.included.len(),
            claims: self.claims,
        })
    }
}

/// Scores every derived claim of `chain` with a [`Sampler`], asking `model` the distinct
/// queries of each claim, at most `parallel` at once.
pub async fn score<E: Entailment + ?Sized>(
    model: &E,
    chain: &Chain<'_>,
    params: &AresParams,
    seed: &Hash,
    parallel: usize,
) -> Result<Score, AresError<E::Error>> {
    let mut sampler = Sampler::new(chain, params, seed)?;
    loop {
        let queries = sampler.queries();
        if queries.is_empty() {
            return Ok(sampler.finish()?);
        }
        let asked: Vec<Result<(u64, Answer), E::Error>> = stream::iter(queries)
            .map(|q| async move { Ok((q.included, model.entail(chain, &q).await?)) })
            .buffer_unordered(parallel.max(1))
            .collect()
            .await;
        let answers: BTreeMap<u64, Answer> = asked
            .into_iter()
            .collect::<Result<_, _>>()
            .map_err(AresError::Model)?;
        sampler.answer(&answers)?;
    }
}

/// The vote a score makes: `Valid` at or above `valid_at`; at or below `invalid_at`,
/// `Ungrounded` when most samples found the claim contradicting the context, else
/// `Invalid`; an abstention between the two.
pub fn vote(score: &ClaimScore, params: &AresParams) -> Vote {
    if score.stability >= params.valid_at {
        Vote::Valid
    } else if score.stability <= params.invalid_at {
        if score.contradicts > 0.5 {
            Vote::Ungrounded
        } else {
            Vote::Invalid
        }
    } else {
        Vote::Abstain
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use async_trait::async_trait;

    use super::*;

    /// A deterministic entailment model: a rule per hypothesis text, and a log of every
    /// query asked.
    type Rule = Box<dyn Fn(&Chain<'_>, &Query) -> Answer + Send + Sync>;

    struct Rules {
        rule: Rule,
        asked: Mutex<Vec<Query>>,
    }

    impl Rules {
        fn new(rule: impl Fn(&Chain<'_>, &Query) -> Answer + Send + Sync + 'static) -> Self {
            Self {
                rule: Box::new(rule),
                asked: Mutex::new(Vec::new()),
            }
        }

        fn asked(&self) -> Vec<Query> {
            self.asked.lock().unwrap().clone()
        }
    }

    #[async_trait]
    impl Entailment for Rules {
        type Error = String;

        async fn entail(&self, chain: &Chain<'_>, q: &Query) -> Result<Answer, String> {
            self.asked.lock().unwrap().push(*q);
            Ok((self.rule)(chain, q))
        }
    }

    fn yes(b: bool) -> Answer {
        Answer {
            entails: if b { 1.0 } else { 0.0 },
            contradicts_context: false,
        }
    }

    fn base(claims: &[(&str, f64)]) -> Vec<(String, f64)> {
        claims.iter().map(|(c, p)| (c.to_string(), *p)).collect()
    }

    fn derived(claims: &[&str]) -> Vec<String> {
        claims.iter().map(|c| c.to_string()).collect()
    }

    #[test]
    fn n_is_the_least_count_that_meets_the_hoeffding_bound() {
        for (eps, delta) in [(0.1, 0.1), (0.05, 0.05), (0.2, 0.01), (0.3, 0.5)] {
            let n = sample_count(eps, delta);
            let bound = (2.0f64 / delta).ln() / (2.0 * eps * eps);
            assert!(n as f64 >= bound, "N = {n} below {bound}");
            assert!(((n - 1) as f64) < bound, "N = {n} is not the least");
        }
        assert_eq!(sample_count(0.1, 0.1), 150); // ln 20 / 0.02 = 149.8
        assert_eq!(sample_count(0.05, 0.05), 738); // ln 40 / 0.005 = 737.8
        assert_eq!(sample_count(1e-9, 0.1), MAX_SAMPLES);
    }

    #[test]
    fn a_run_draws_n_samples() {
        futures::executor::block_on(async {
            let b = base(&[("ctx", 1.0)]);
            let d = derived(&["step"]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            let m = Rules::new(|_, _| yes(true));
            for (eps, delta) in [(0.1, 0.1), (0.05, 0.05)] {
                let p = AresParams {
                    epsilon: eps,
                    delta,
                    ..AresParams::default()
                };
                let s = score(&m, &chain, &p, &Hash::ZERO, 2).await.unwrap();
                assert_eq!(s.samples, sample_count(eps, delta));
                assert_eq!(s.last().unwrap().stability, 1.0);
            }
        })
    }

    /// Seed 001's propagated error: the step follows from its premise, but the premise
    /// does not follow from the context, so the step scores low too.
    #[test]
    fn a_step_whose_only_premise_is_unsound_scores_low_even_when_it_follows_from_it() {
        futures::executor::block_on(async {
            let b = base(&[("The fraction is equivalent to 2/5.", 1.0)]);
            let d = derived(&["So x / (3x − 7) = 3/5", "Therefore, 5x = 9x − 21"]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            // The premise (claim 1) is never entailed; the step (claim 2) is entailed exactly
            // when the premise is included.
            let m = Rules::new(|_, q| match q.hypothesis {
                1 => yes(false),
                _ => yes(q.includes(1)),
            });
            let p = AresParams::default();
            let s = score(&m, &chain, &p, &Hash::sha256(b"seat"), 4)
                .await
                .unwrap();
            assert_eq!(s.claims[0].stability, 0.0);
            let step = s.last().unwrap();
            assert!(step.stability <= p.invalid_at, "{step:?}");
            assert_eq!(vote(step, &p), Vote::Invalid);
            // The same step scores high when its premise is sound.
            let sound = Rules::new(|_, q| match q.hypothesis {
                1 => yes(true),
                _ => yes(q.includes(1)),
            });
            let s = score(&sound, &chain, &p, &Hash::sha256(b"seat"), 4)
                .await
                .unwrap();
            assert_eq!(vote(s.last().unwrap(), &p), Vote::Valid);
            // Judging the step against all previous claims (no soundness weighting) would
            // have accepted it: that is the error ARES exists to catch.
            let all = Query {
                hypothesis: 2,
                included: 0b011,
            };
            assert_eq!((m.rule)(&chain, &all).entails, 1.0);
        })
    }

    #[test]
    fn distinct_subsets_are_asked_once_so_calls_are_at_most_min_n_and_two_to_the_m() {
        futures::executor::block_on(async {
            // m = 3 uncertain premises before the judged claim.
            let b = base(&[("a", 0.5), ("b", 0.5), ("c", 0.5)]);
            let d = derived(&["claim"]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            for (eps, delta, expect) in [
                // N = 150: all 2^3 subsets occur, each asked once.
                (0.1, 0.1, 8),
                // N = 3: at most 3 calls.
                (0.5, 0.5, 3),
            ] {
                let p = AresParams {
                    epsilon: eps,
                    delta,
                    ..AresParams::default()
                };
                let n = p.samples();
                let m = Rules::new(|_, q| yes(q.included.count_ones() >= 2));
                let s = score(&m, &chain, &p, &Hash::sha256(b"seed"), 3)
                    .await
                    .unwrap();
                let asked = m.asked();
                let distinct: BTreeSet<Query> = asked.iter().copied().collect();
                assert_eq!(distinct.len(), asked.len(), "a subset was asked twice");
                assert!(asked.len() <= n.min(8));
                assert_eq!(asked.len(), s.calls());
                if n >= 8 {
                    assert_eq!(asked.len(), expect);
                } else {
                    assert!(asked.len() <= expect && !asked.is_empty());
                }
                // The estimate is close to the exact value: P(at least 2 of 3) = 1/2.
                if n == 150 {
                    assert!((s.last().unwrap().stability - 0.5).abs() <= 0.1 + 1e-9);
                }
            }
            // Sound givens never vary: one call, whatever N is.
            let b = base(&[("a", 1.0), ("b", 1.0), ("c", 1.0)]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            let m = Rules::new(|_, _| yes(true));
            let s = score(&m, &chain, &AresParams::default(), &Hash::ZERO, 3)
                .await
                .unwrap();
            assert_eq!((s.calls(), m.asked().len()), (1, 1));
            assert_eq!(m.asked()[0].included, 0b111);
        })
    }

    #[test]
    fn the_same_seed_asks_the_same_questions() {
        futures::executor::block_on(async {
            let b = base(&[("a", 0.6), ("b", 0.3)]);
            let d = derived(&["p", "claim"]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            let run = || async {
                let m = Rules::new(|_, q| yes(q.includes(0)));
                let s = score(&m, &chain, &AresParams::default(), &Hash::sha256(b"x"), 2)
                    .await
                    .unwrap();
                let mut a = m.asked();
                a.sort();
                (s, a)
            };
            assert_eq!(run().await, run().await);
        })
    }

    #[test]
    fn the_sampler_alone_walks_the_chain_claim_by_claim() {
        let b = base(&[("ctx", 1.0)]);
        let d = derived(&["p", "claim"]);
        let chain = Chain {
            base: &b,
            derived: &d,
        };
        let mut s = Sampler::new(&chain, &AresParams::default(), &Hash::ZERO).unwrap();
        // Claim 1 (the premise): the context is always included, one subset.
        let q = s.queries();
        assert_eq!(
            q,
            vec![Query {
                hypothesis: 1,
                included: 0b1
            }]
        );
        assert!(s.answer(&BTreeMap::new()).is_err(), "an answer is missing");
        s.answer(&BTreeMap::from([(0b1, yes(true))])).unwrap();
        // Claim 2: the entailed premise is now always included.
        assert_eq!(
            s.queries(),
            vec![Query {
                hypothesis: 2,
                included: 0b11
            }]
        );
        let early = s.clone().finish();
        assert!(early.is_err(), "finished before the last claim");
        let bad = Answer {
            entails: f64::NAN,
            contradicts_context: false,
        };
        assert!(s.clone().answer(&BTreeMap::from([(0b11, bad)])).is_err());
        s.answer(&BTreeMap::from([(0b11, yes(false))])).unwrap();
        assert!(s.queries().is_empty());
        let score = s.finish().unwrap();
        assert_eq!(score.calls(), 2);
        assert_eq!(score.last().unwrap().stability, 0.0);
        assert!(
            Sampler::new(
                &Chain {
                    base: &b,
                    derived: &[]
                },
                &AresParams::default(),
                &Hash::ZERO
            )
            .is_err()
        );
    }

    #[test]
    fn thresholds_map_scores_to_votes_and_abstentions() {
        let p = AresParams::default();
        let s = |stability, contradicts| ClaimScore {
            stability,
            contradicts,
            calls: 1,
        };
        assert_eq!(vote(&s(0.9, 0.0), &p), Vote::Valid);
        assert_eq!(vote(&s(0.7, 0.0), &p), Vote::Valid);
        assert_eq!(vote(&s(0.5, 0.0), &p), Vote::Abstain);
        assert_eq!(vote(&s(0.1, 0.2), &p), Vote::Invalid);
        assert_eq!(vote(&s(0.0, 0.9), &p), Vote::Ungrounded);
        assert!(AresParams::default().validate().is_ok());
        let bad = AresParams {
            valid_at: 0.2,
            ..AresParams::default()
        };
        assert!(bad.validate().is_err());
        assert!(
            AresParams {
                epsilon: 0.0,
                ..AresParams::default()
            }
            .validate()
            .is_err()
        );
    }

    #[test]
    fn a_model_error_or_an_out_of_range_answer_ends_the_scoring() {
        futures::executor::block_on(async {
            struct Broken(f64);
            #[async_trait]
            impl Entailment for Broken {
                type Error = String;

                async fn entail(&self, _: &Chain<'_>, _: &Query) -> Result<Answer, String> {
                    if self.0.is_nan() {
                        return Err("endpoint down".into());
                    }
                    Ok(Answer {
                        entails: self.0,
                        contradicts_context: false,
                    })
                }
            }
            let b = base(&[("a", 1.0)]);
            let d = derived(&["claim"]);
            let chain = Chain {
                base: &b,
                derived: &d,
            };
            let p = AresParams::default();
            assert!(
                score(&Broken(f64::NAN), &chain, &p, &Hash::ZERO, 1)
                    .await
                    .is_err()
            );
            assert!(
                score(&Broken(1.5), &chain, &p, &Hash::ZERO, 1)
                    .await
                    .is_err()
            );
        })
    }
}
