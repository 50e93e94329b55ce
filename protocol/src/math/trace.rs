//! Trace layer: the weighted verdict `W = sum_s w_s B_s` with independent
//! `B_s ~ Bernoulli(p_s)`, tested against `W_beta = beta sum_s w_s`.
//!
//! The trace fails when `W < W_beta`. This module gives the moments of `W` (eq. 2), the
//! Hoeffding and Chernoff upper bounds on `Pr[W < W_beta]` (Proposition 1, eq. 1), and
//! the exact probability by dynamic programming over integer weights.

use serde::Serialize;

use super::{MathError, check_closed, check_open, check_positive};

/// Most segments in one trace accepted by [`WeightDistribution::new`].
pub const MAX_SEGMENTS: usize = 10_000;

/// Largest total weight `sum_s w_s` accepted by [`WeightDistribution::new`] (the DP
/// keeps one probability per possible value of `W`).
pub const MAX_TOTAL_WEIGHT: u64 = 1_000_000;

/// Largest `segments x total weight` accepted by [`WeightDistribution::new`]: the DP
/// does about half that many multiply-adds.
pub const MAX_DP_WORK: u64 = 1_000_000_000;

/// Bracket growth and iteration caps of the Chernoff minimiser.
const MAX_BRACKET_DOUBLINGS: u32 = 1100;
const MAX_ROOT_ITERATIONS: u32 = 300;
/// Relative width at which the minimiser stops.
const LAMBDA_TOLERANCE: f64 = 1e-12;

/// One segment with a real weight `w_s > 0` and pass probability `p_s` (the input of
/// the moments and the bounds).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct WeightedSegment {
    /// Weight `w_s`.
    pub weight: f64,
    /// Pass probability `p_s = Pr[B_s = 1]` (Lemma 1).
    pub p_pass: f64,
}

/// One segment with a positive integer weight (the input of the exact DP).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ExactSegment {
    /// Weight `w_s >= 1`.
    pub weight: u32,
    /// Pass probability `p_s = Pr[B_s = 1]` (Lemma 1).
    pub p_pass: f64,
}

impl From<ExactSegment> for WeightedSegment {
    fn from(s: ExactSegment) -> Self {
        Self {
            weight: f64::from(s.weight),
            p_pass: s.p_pass,
        }
    }
}

/// The first two moments of `W` (eq. 2).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceMoments {
    /// `sum_s w_s`.
    pub total_weight: f64,
    /// `mu_vote = E[W] = sum_s w_s p_s`.
    pub mu_vote: f64,
    /// `sigma_vote^2 = Var(W) = sum_s w_s^2 p_s (1 - p_s)`.
    pub sigma2_vote: f64,
    /// `sigma_max^2 = sum_s w_s^2`, the squared ranges Hoeffding needs.
    pub sigma2_max: f64,
}

/// An upper bound on a probability, with its natural logarithm (which stays finite
/// when the value underflows to 0).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Bound {
    /// The bound, in `[0, 1]`.
    pub value: f64,
    /// `ln(value)`, in `[-inf, 0]`.
    pub ln: f64,
}

/// The Chernoff bound with the `lambda` that attains it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ChernoffBound {
    /// The bound, in `[0, 1]`.
    pub value: f64,
    /// `ln(value)`, in `[-inf, 0]`.
    pub ln: f64,
    /// The minimising `lambda`: 0 when the bound is vacuous (`W_beta >= mu_vote`),
    /// `+inf` when the infimum is only approached as `lambda -> inf`.
    pub lambda: f64,
}

fn check_segments(segments: &[WeightedSegment]) -> Result<(), MathError> {
    if segments.is_empty() {
        return Err(MathError::NoSegments);
    }
    for (i, s) in segments.iter().enumerate() {
        check_positive(&format!("segments[{i}].weight"), s.weight)?;
        check_closed(&format!("segments[{i}].p_pass"), s.p_pass, 0.0, 1.0)?;
    }
    Ok(())
}

fn check_beta(beta: f64) -> Result<f64, MathError> {
    check_open("beta", beta, 0.0, 1.0)
}

/// Eq. (2): `mu_vote = sum w p`, `sigma_vote^2 = sum w^2 p (1-p)` and
/// `sigma_max^2 = sum w^2`.
pub fn trace_moments(segments: &[WeightedSegment]) -> Result<TraceMoments, MathError> {
    check_segments(segments)?;
    let mut m = TraceMoments {
        total_weight: 0.0,
        mu_vote: 0.0,
        sigma2_vote: 0.0,
        sigma2_max: 0.0,
    };
    for s in segments {
        let w2 = s.weight * s.weight;
        m.total_weight += s.weight;
        m.mu_vote += s.weight * s.p_pass;
        m.sigma2_vote += w2 * s.p_pass * (1.0 - s.p_pass);
        m.sigma2_max += w2;
    }
    Ok(m)
}

/// The trace-level quorum threshold `W_beta = beta sum_s w_s`, `beta` in `(0, 1)`
/// (Proposition 1).
pub fn w_beta(total_weight: f64, beta: f64) -> Result<f64, MathError> {
    let beta = check_beta(beta)?;
    let total = check_positive("total weight", total_weight)?;
    Ok(beta * total)
}

/// Proposition 1, Hoeffding part:
/// `Pr[W < W_beta] <= exp(-2 (mu_vote - W_beta)^2 / sigma_max^2)`.
///
/// When `mu_vote <= W_beta` the inequality says nothing, and the bound is 1.
pub fn hoeffding_bound(segments: &[WeightedSegment], beta: f64) -> Result<Bound, MathError> {
    let m = trace_moments(segments)?;
    let wb = w_beta(m.total_weight, beta)?;
    Ok(hoeffding_from_moments(&m, wb))
}

fn hoeffding_from_moments(m: &TraceMoments, wb: f64) -> Bound {
    if m.mu_vote <= wb {
        return Bound {
            value: 1.0,
            ln: 0.0,
        };
    }
    let gap = m.mu_vote - wb;
    let ln = -2.0 * gap * gap / m.sigma2_max;
    Bound {
        value: ln.exp(),
        ln,
    }
}

/// `ln(p e^{-lambda w} + 1 - p)`, computed as a log-sum-exp so that it neither
/// overflows nor loses the small term.
fn ln_mgf_term(w: f64, p: f64, lambda: f64) -> f64 {
    if p <= 0.0 {
        0.0
    } else if p >= 1.0 {
        -lambda * w
    } else {
        let a = p.ln() - lambda * w;
        let b = (-p).ln_1p();
        let (hi, lo) = if a > b { (a, b) } else { (b, a) };
        hi + (lo - hi).exp().ln_1p()
    }
}

/// The share `p e^{-lambda w} / (p e^{-lambda w} + 1 - p)` of the first term, a logistic
/// function of `ln p - lambda w - ln(1 - p)`.
fn tilted_pass(w: f64, p: f64, lambda: f64) -> f64 {
    if p <= 0.0 {
        0.0
    } else if p >= 1.0 {
        1.0
    } else {
        let x = p.ln() - lambda * w - (-p).ln_1p();
        if x >= 0.0 {
            1.0 / (1.0 + (-x).exp())
        } else {
            let e = x.exp();
            e / (1.0 + e)
        }
    }
}

/// The natural log of the Chernoff objective of Proposition 1 at one `lambda >= 0`:
/// `lambda W_beta + sum_s ln(p_s e^{-lambda w_s} + 1 - p_s)`.
///
/// No validation: callers pass checked segments; [`chernoff_bound`] minimises this.
pub fn chernoff_objective(segments: &[WeightedSegment], w_beta: f64, lambda: f64) -> f64 {
    lambda * w_beta
        + segments
            .iter()
            .map(|s| ln_mgf_term(s.weight, s.p_pass, lambda))
            .sum::<f64>()
}

/// First and second derivatives of [`chernoff_objective`] in `lambda`.
fn chernoff_derivatives(segments: &[WeightedSegment], wb: f64, lambda: f64) -> (f64, f64) {
    segments.iter().fold((wb, 0.0), |(d1, d2), s| {
        let t = tilted_pass(s.weight, s.p_pass, lambda);
        (d1 - s.weight * t, d2 + s.weight * s.weight * t * (1.0 - t))
    })
}

/// Proposition 1, Chernoff part:
/// `Pr[W < W_beta] <= min_{lambda > 0} exp(lambda W_beta + sum_s ln(p_s e^{-lambda w_s} + 1 - p_s))`.
///
/// The exponent is convex in `lambda` with slope `W_beta - mu_vote` at 0 and
/// `W_beta - W_1` at infinity, where `W_1` is the weight of segments with `p_s = 1`.
/// So: if `W_beta >= mu_vote` the infimum is at `lambda -> 0` and the bound is 1; if
/// `W_beta < W_1` the exponent falls without limit and the bound is 0 (indeed `W >= W_1`
/// always); if `W_beta = W_1` the infimum `prod_{p_s < 1} (1 - p_s)` is approached as
/// `lambda -> inf`; otherwise the root of the slope is bracketed by doubling and found by
/// Newton steps safeguarded with bisection to a relative width of 1e-12.
pub fn chernoff_bound(segments: &[WeightedSegment], beta: f64) -> Result<ChernoffBound, MathError> {
    let m = trace_moments(segments)?;
    let wb = w_beta(m.total_weight, beta)?;
    Ok(chernoff_from_moments(segments, &m, wb))
}

fn chernoff_from_moments(segments: &[WeightedSegment], m: &TraceMoments, wb: f64) -> ChernoffBound {
    if wb >= m.mu_vote {
        return ChernoffBound {
            value: 1.0,
            ln: 0.0,
            lambda: 0.0,
        };
    }
    let sure_weight: f64 = segments
        .iter()
        .filter(|s| s.p_pass >= 1.0)
        .map(|s| s.weight)
        .sum();
    if wb < sure_weight {
        return ChernoffBound {
            value: 0.0,
            ln: f64::NEG_INFINITY,
            lambda: f64::INFINITY,
        };
    }
    if wb == sure_weight {
        let ln: f64 = segments
            .iter()
            .filter(|s| s.p_pass < 1.0)
            .map(|s| (-s.p_pass).ln_1p())
            .sum();
        return ChernoffBound {
            value: ln.exp(),
            ln,
            lambda: f64::INFINITY,
        };
    }

    // Bracket the root of the slope: f'(lo) < 0 <= f'(hi).
    let slope = |l: f64| chernoff_derivatives(segments, wb, l);
    let mut lo = 0.0_f64;
    let mut hi = 1.0_f64 / m.total_weight.max(1.0);
    let mut doublings = 0_u32;
    while slope(hi).0 < 0.0 && doublings < MAX_BRACKET_DOUBLINGS {
        lo = hi;
        hi *= 2.0;
        doublings = doublings.saturating_add(1);
    }
    if !hi.is_finite() {
        // Not reachable for finite inputs with W_beta > W_1; keep the best point seen.
        let ln = chernoff_objective(segments, wb, lo).min(0.0);
        return ChernoffBound {
            value: ln.exp(),
            ln,
            lambda: lo,
        };
    }

    let mut lambda = 0.5 * (lo + hi);
    for _ in 0..MAX_ROOT_ITERATIONS {
        let (d1, d2) = slope(lambda);
        if d1 == 0.0 {
            break;
        }
        if d1 < 0.0 {
            lo = lambda;
        } else {
            hi = lambda;
        }
        if hi - lo <= LAMBDA_TOLERANCE * hi.max(1.0) {
            break;
        }
        let newton = lambda - d1 / d2;
        lambda = if d2 > 0.0 && newton > lo && newton < hi {
            newton
        } else {
            0.5 * (lo + hi)
        };
    }
    // The objective is flat at its minimum; take the best of the final points.
    let (best_lambda, ln) = [lambda, lo, hi]
        .into_iter()
        .map(|l| (l, chernoff_objective(segments, wb, l)))
        .fold(
            (0.0, 0.0),
            |best, cur| if cur.1 < best.1 { cur } else { best },
        );
    ChernoffBound {
        value: ln.exp(),
        ln,
        lambda: best_lambda,
    }
}

/// Results of the plain DP below this are recomputed under an exponential tilt: tails
/// near the f64 underflow (about 1e-308) are no longer accurate in linear space.
const RELIABLE_FLOOR: f64 = 1e-280;

/// The DP `P'[x] = (1 - p) P[x] + p P[x - w]` over `(w, p)` pairs, starting from
/// `P[0] = 1`. The caller has validated the pairs and bounded `total = sum w`.
fn dp_pmf(segments: impl Iterator<Item = (u32, f64)>, total: u64) -> Vec<f64> {
    let capacity = usize::try_from(total).unwrap_or(0).saturating_add(1);
    let mut pmf = Vec::with_capacity(capacity);
    pmf.push(1.0_f64);
    let mut next = Vec::with_capacity(capacity);
    for (w, p) in segments {
        let w = w as usize;
        next.clear();
        next.extend(pmf.iter().map(|v| v * (1.0 - p)));
        next.extend(std::iter::repeat_n(0.0, w));
        for (n, c) in next.iter_mut().skip(w).zip(pmf.iter()) {
            *n += c * p;
        }
        std::mem::swap(&mut pmf, &mut next);
    }
    pmf
}

/// `ln Pr[W < threshold]` by the DP under the exponential tilt `lambda > 0`.
///
/// Under the tilted measure each segment passes with probability
/// `q_s = p_s e^{-lambda w_s} / (p_s e^{-lambda w_s} + 1 - p_s)`, and
/// `Pr[W = x] = Q[W = x] e^{lambda x} prod_s (p_s e^{-lambda w_s} + 1 - p_s)`. With
/// `lambda` the Chernoff minimiser the tilted mean sits at the threshold, so the terms
/// that matter are far from underflow even when the probability itself is below 1e-308.
fn tilted_ln_pr_less_than(segments: &[ExactSegment], threshold: f64, lambda: f64) -> f64 {
    let total: u64 = segments.iter().map(|s| u64::from(s.weight)).sum();
    let tilted = dp_pmf(
        segments.iter().map(|s| {
            let w = f64::from(s.weight);
            (s.weight, tilted_pass(w, s.p_pass, lambda))
        }),
        total,
    );
    let ln_mgf: f64 = segments
        .iter()
        .map(|s| ln_mgf_term(f64::from(s.weight), s.p_pass, lambda))
        .sum();
    let terms = || {
        tilted
            .iter()
            .enumerate()
            .take_while(|(x, _)| (*x as f64) < threshold)
            .filter(|(_, q)| **q > 0.0)
            .map(|(x, q)| q.ln() + lambda * x as f64)
    };
    let peak = terms().fold(f64::NEG_INFINITY, f64::max);
    if peak == f64::NEG_INFINITY {
        return f64::NEG_INFINITY;
    }
    let sum: f64 = terms().map(|t| (t - peak).exp()).sum();
    (ln_mgf + peak + sum.ln()).min(0.0)
}

/// The exact distribution of `W = sum_s w_s B_s` over integer weights, by dynamic
/// programming: after adding segment `s`,
/// `P'[x] = (1 - p_s) P[x] + p_s P[x - w_s]`.
///
/// Only sums and products of non-negative numbers appear, so small tail probabilities
/// keep their relative precision (down to the f64 underflow near 1e-308).
#[derive(Debug, Clone, PartialEq)]
pub struct WeightDistribution {
    pmf: Vec<f64>,
}

impl WeightDistribution {
    /// Builds the distribution. Requires 1 to [`MAX_SEGMENTS`] segments with weights
    /// `>= 1`, `p_s` in `[0, 1]`, total weight at most [`MAX_TOTAL_WEIGHT`] and
    /// `segments x total weight` at most [`MAX_DP_WORK`].
    pub fn new(segments: &[ExactSegment]) -> Result<Self, MathError> {
        if segments.is_empty() {
            return Err(MathError::NoSegments);
        }
        if segments.len() > MAX_SEGMENTS {
            return Err(MathError::TooLarge {
                what: "the number of segments".into(),
                limit: MAX_SEGMENTS as u64,
                got: segments.len() as u64,
            });
        }
        let mut total = 0_u64;
        for (i, s) in segments.iter().enumerate() {
            if s.weight == 0 {
                return Err(MathError::TooSmall {
                    name: format!("segments[{i}].weight"),
                    min: 1,
                    got: 0,
                });
            }
            check_closed(&format!("segments[{i}].p_pass"), s.p_pass, 0.0, 1.0)?;
            total = total.saturating_add(u64::from(s.weight));
        }
        if total > MAX_TOTAL_WEIGHT {
            return Err(MathError::TooLarge {
                what: "the total weight".into(),
                limit: MAX_TOTAL_WEIGHT,
                got: total,
            });
        }
        let work = total.saturating_mul(segments.len() as u64);
        if work > MAX_DP_WORK {
            return Err(MathError::TooLarge {
                what: "segments x total weight (the exact DP's work)".into(),
                limit: MAX_DP_WORK,
                got: work,
            });
        }

        Ok(Self {
            pmf: dp_pmf(segments.iter().map(|s| (s.weight, s.p_pass)), total),
        })
    }

    /// `Pr[W = x]` for `x = 0 ..= sum_s w_s`.
    pub fn pmf(&self) -> &[f64] {
        &self.pmf
    }

    /// `sum_s w_s`.
    pub fn total_weight(&self) -> u64 {
        (self.pmf.len() as u64).saturating_sub(1)
    }

    /// `Pr[W < threshold]`, summed from the smallest `W` up (smallest terms first).
    ///
    /// Accurate down to about 1e-280; below that the linear-space DP meets f64
    /// underflow, and [`TraceModel::analyse`] switches to the tilted DP.
    pub fn pr_less_than(&self, threshold: f64) -> f64 {
        let sum: f64 = self
            .pmf
            .iter()
            .enumerate()
            .take_while(|(x, _)| (*x as f64) < threshold)
            .map(|(_, p)| p)
            .sum();
        sum.clamp(0.0, 1.0)
    }
}

/// The exact trace failure probability `Pr[W < W_beta]` with `W_beta = beta sum_s w_s`
/// (the quantity Proposition 1 bounds), by the DP of [`WeightDistribution`].
///
/// Accurate also below 1e-280 (see [`TraceModel::analyse`]); a value below the f64 range
/// is returned as 0, and [`trace_analysis`] gives its logarithm.
pub fn exact_failure_probability(segments: &[ExactSegment], beta: f64) -> Result<f64, MathError> {
    Ok(trace_analysis(segments, beta)?.exact)
}

/// Everything known about one trace at one `beta`: moments (eq. 2), the exact failure
/// probability and both bounds of Proposition 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TraceAnalysis {
    /// Trace-level quorum fraction `beta`.
    pub beta: f64,
    /// `W_beta = beta sum_s w_s`.
    pub w_beta: f64,
    /// The moments of `W`.
    pub moments: TraceMoments,
    /// Exact `Pr[W < W_beta]` (0 when it is below the f64 range; see `ln_exact`).
    pub exact: f64,
    /// `ln Pr[W < W_beta]`, `-inf` when failure is impossible.
    pub ln_exact: f64,
    /// Hoeffding bound on it.
    pub hoeffding: Bound,
    /// Chernoff bound on it.
    pub chernoff: ChernoffBound,
}

/// A trace whose weight distribution is computed once and then analysed at any number
/// of thresholds (a sweep over `beta`, Figure 4 left).
#[derive(Debug, Clone)]
pub struct TraceModel {
    segments: Vec<ExactSegment>,
    weighted: Vec<WeightedSegment>,
    moments: TraceMoments,
    distribution: WeightDistribution,
}

impl TraceModel {
    /// Validates the segments and runs the DP (limits as in [`WeightDistribution::new`]).
    pub fn new(segments: &[ExactSegment]) -> Result<Self, MathError> {
        let distribution = WeightDistribution::new(segments)?;
        let weighted: Vec<WeightedSegment> = segments
            .iter()
            .copied()
            .map(WeightedSegment::from)
            .collect();
        let moments = trace_moments(&weighted)?;
        Ok(Self {
            segments: segments.to_vec(),
            weighted,
            moments,
            distribution,
        })
    }

    /// The moments of `W` (eq. 2).
    pub fn moments(&self) -> TraceMoments {
        self.moments
    }

    /// The exact distribution of `W`.
    pub fn distribution(&self) -> &WeightDistribution {
        &self.distribution
    }

    /// Exact probability and Proposition 1 bounds at `beta` in `(0, 1)`.
    ///
    /// The exact value comes from the precomputed distribution; when it falls below
    /// 1e-280, where linear-space sums lose accuracy to underflow, it is recomputed by
    /// the DP under the exponential tilt of the Chernoff minimiser, which also yields its
    /// logarithm when the value is below the f64 range.
    pub fn analyse(&self, beta: f64) -> Result<TraceAnalysis, MathError> {
        let wb = w_beta(self.moments.total_weight, beta)?;
        let chernoff = chernoff_from_moments(&self.weighted, &self.moments, wb);
        let plain = self.distribution.pr_less_than(wb);
        let (exact, ln_exact) =
            if plain >= RELIABLE_FLOOR || !(chernoff.lambda > 0.0 && chernoff.lambda.is_finite()) {
                (plain, plain.ln())
            } else {
                let ln = tilted_ln_pr_less_than(&self.segments, wb, chernoff.lambda);
                (ln.exp(), ln)
            };
        Ok(TraceAnalysis {
            beta,
            w_beta: wb,
            moments: self.moments,
            exact,
            ln_exact,
            hoeffding: hoeffding_from_moments(&self.moments, wb),
            chernoff,
        })
    }
}

/// One-shot [`TraceModel::analyse`]: eq. (2), the exact `Pr[W < W_beta]` and
/// Proposition 1's Hoeffding and Chernoff bounds.
pub fn trace_analysis(segments: &[ExactSegment], beta: f64) -> Result<TraceAnalysis, MathError> {
    check_beta(beta)?;
    TraceModel::new(segments)?.analyse(beta)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn ws(v: &[(f64, f64)]) -> Vec<WeightedSegment> {
        v.iter()
            .map(|&(weight, p_pass)| WeightedSegment { weight, p_pass })
            .collect()
    }

    fn brute_force(segments: &[ExactSegment], beta: f64) -> f64 {
        let total: u32 = segments.iter().map(|s| s.weight).sum();
        let wb = beta * f64::from(total);
        let n = segments.len();
        let mut fail = 0.0;
        for mask in 0_u32..(1 << n) {
            let mut prob = 1.0;
            let mut w = 0_u32;
            for (i, s) in segments.iter().enumerate() {
                if mask & (1 << i) != 0 {
                    prob *= s.p_pass;
                    w += s.weight;
                } else {
                    prob *= 1.0 - s.p_pass;
                }
            }
            if f64::from(w) < wb {
                fail += prob;
            }
        }
        fail
    }

    #[test]
    fn moments_match_eq2() {
        let m = trace_moments(&ws(&[(1.0, 1.0), (2.0, 0.5), (3.0, 0.25)])).unwrap();
        assert_eq!(m.total_weight, 6.0);
        assert!((m.mu_vote - (1.0 + 1.0 + 0.75)).abs() < 1e-15);
        assert!((m.sigma2_vote - (0.0 + 4.0 * 0.25 + 9.0 * 0.1875)).abs() < 1e-15);
        assert_eq!(m.sigma2_max, 14.0);
        assert_eq!(trace_moments(&[]).unwrap_err(), MathError::NoSegments);
        assert!(trace_moments(&ws(&[(0.0, 0.5)])).is_err());
        assert!(trace_moments(&ws(&[(1.0, 1.5)])).is_err());
    }

    #[test]
    fn hoeffding_is_vacuous_below_the_mean() {
        let segs = ws(&[(1.0, 0.5), (1.0, 0.5)]);
        let b = hoeffding_bound(&segs, 0.6).unwrap();
        assert_eq!((b.value, b.ln), (1.0, 0.0));
        let segs = ws(&[(1.0, 0.9); 10]);
        let b = hoeffding_bound(&segs, 0.5).unwrap();
        // mu = 9, W_beta = 5, sigma_max^2 = 10: exp(-2 * 16 / 10).
        assert!((b.ln + 3.2).abs() < 1e-12);
        assert!((b.value - (-3.2_f64).exp()).abs() < 1e-15);
        assert_eq!(
            hoeffding_bound(&segs, 1.0).unwrap_err().to_string(),
            "beta must be in (0, 1), got 1"
        );
    }

    #[test]
    fn chernoff_single_bernoulli_matches_closed_form() {
        // One segment, weight 1, p: Pr[B < beta] = 1 - p. The optimal Chernoff bound
        // for a Bernoulli is exp(-KL(beta || p)).
        let p: f64 = 0.8;
        let beta: f64 = 0.3;
        let b = chernoff_bound(&ws(&[(1.0, p)]), beta).unwrap();
        let kl = beta * (beta / p).ln() + (1.0 - beta) * ((1.0 - beta) / (1.0 - p)).ln();
        assert!((b.ln + kl).abs() < 1e-10, "{} vs {}", b.ln, -kl);
        assert!(b.lambda > 0.0 && b.lambda.is_finite());
    }

    #[test]
    fn chernoff_limits() {
        // W_beta >= mu: vacuous.
        let b = chernoff_bound(&ws(&[(1.0, 0.5), (1.0, 0.5)]), 0.6).unwrap();
        assert_eq!((b.value, b.ln, b.lambda), (1.0, 0.0, 0.0));
        // Segments that always pass outweigh W_beta: W < W_beta is impossible.
        let b = chernoff_bound(&ws(&[(3.0, 1.0), (1.0, 0.5)]), 0.5).unwrap();
        assert_eq!(b.value, 0.0);
        assert_eq!(b.ln, f64::NEG_INFINITY);
        assert_eq!(b.lambda, f64::INFINITY);
        // W_beta equal to the sure weight: infimum prod (1 - p) as lambda -> inf.
        let b = chernoff_bound(&ws(&[(1.0, 1.0), (1.0, 0.75)]), 0.5).unwrap();
        assert!((b.value - 0.25).abs() < 1e-15);
        assert_eq!(b.lambda, f64::INFINITY);
    }

    #[test]
    fn chernoff_survives_huge_exponents() {
        // 5000 segments of weight 1000 with p close to 1: the bound underflows, its ln
        // stays finite and negative.
        let segs = vec![
            WeightedSegment {
                weight: 1000.0,
                p_pass: 0.999
            };
            5000
        ];
        let b = chernoff_bound(&segs, 0.5).unwrap();
        assert!(b.ln.is_finite() && b.ln < -10_000.0, "{b:?}");
        assert_eq!(b.value, 0.0);
        let h = hoeffding_bound(&segs, 0.5).unwrap();
        assert!(h.ln.is_finite() && h.ln < -1000.0, "{h:?}");
    }

    #[test]
    fn exact_simple_cases() {
        let s = |weight, p_pass| ExactSegment { weight, p_pass };
        // Two fair coins of weight 1, beta 0.6: W < 1.2 iff W <= 1: 3/4.
        let p = exact_failure_probability(&[s(1, 0.5), s(1, 0.5)], 0.6).unwrap();
        assert!((p - 0.75).abs() < 1e-15);
        // Strict inequality at an integer threshold: W < 1 iff W = 0.
        let p = exact_failure_probability(&[s(1, 0.5), s(1, 0.5)], 0.5).unwrap();
        assert!((p - 0.25).abs() < 1e-15);
        let d = WeightDistribution::new(&[s(2, 0.5), s(3, 0.25)]).unwrap();
        assert_eq!(d.total_weight(), 5);
        assert_eq!(d.pmf(), &[0.375, 0.0, 0.375, 0.125, 0.0, 0.125]);
        assert!(WeightDistribution::new(&[s(0, 0.5)]).is_err());
        assert!(WeightDistribution::new(&[]).is_err());
        let too_heavy = vec![s(200, 0.5); 5001];
        assert!(matches!(
            WeightDistribution::new(&too_heavy),
            Err(MathError::TooLarge { .. })
        ));
    }

    #[test]
    fn analysis_bundles_everything() {
        let segs: Vec<ExactSegment> = (0..30)
            .map(|i| ExactSegment {
                weight: 1 + i % 3,
                p_pass: [1.0, 0.99275, 0.7][(i % 3) as usize],
            })
            .collect();
        let a = trace_analysis(&segs, 0.7).unwrap();
        assert_eq!(a.moments.total_weight, 60.0);
        assert!((a.w_beta - 42.0).abs() < 1e-12);
        assert!(a.exact <= a.hoeffding.value && a.exact <= a.chernoff.value);
        assert!(a.exact > 0.0);
    }

    /// Reference: the DP carried out entirely in log space (slow, no underflow).
    fn ln_dp_reference(segments: &[ExactSegment], threshold: f64) -> f64 {
        let mut ln_pmf = vec![0.0_f64];
        for s in segments {
            let w = s.weight as usize;
            let (lp, lq) = (s.p_pass.ln(), (1.0 - s.p_pass).ln());
            let mut next = vec![f64::NEG_INFINITY; ln_pmf.len() + w];
            for (x, &l) in ln_pmf.iter().enumerate() {
                for (y, add) in [(x, l + lq), (x + w, l + lp)] {
                    let cur = next[y];
                    let (hi, lo) = if cur > add { (cur, add) } else { (add, cur) };
                    next[y] = if hi == f64::NEG_INFINITY {
                        hi
                    } else {
                        hi + (lo - hi).exp().ln_1p()
                    };
                }
            }
            ln_pmf = next;
        }
        let terms: Vec<f64> = ln_pmf
            .iter()
            .enumerate()
            .filter(|(x, _)| (*x as f64) < threshold)
            .map(|(_, l)| *l)
            .collect();
        let peak = terms.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        peak + terms.iter().map(|t| (t - peak).exp()).sum::<f64>().ln()
    }

    #[test]
    fn exact_below_the_f64_range_uses_the_tilt() {
        // 800 segments, weights 1..=3, each passing w.p. 0.99: failing half the weight
        // has probability around e^-1000, far below f64's smallest number.
        let segs: Vec<ExactSegment> = (0..800)
            .map(|i| ExactSegment {
                weight: 1 + i % 3,
                p_pass: 0.99,
            })
            .collect();
        let a = trace_analysis(&segs, 0.5).unwrap();
        let reference = ln_dp_reference(&segs, a.w_beta);
        assert!(reference < -750.0, "{reference}");
        assert!(
            (a.ln_exact - reference).abs() <= 1e-9 * reference.abs(),
            "{} vs {reference}",
            a.ln_exact
        );
        assert_eq!(a.exact, 0.0);
        assert!(a.ln_exact <= a.chernoff.ln && a.ln_exact <= a.hoeffding.ln);
        // At a milder threshold the plain DP is used and agrees with the reference too.
        let b = trace_analysis(&segs, 0.8).unwrap();
        assert!(b.exact >= RELIABLE_FLOOR, "{b:?}");
        let reference = ln_dp_reference(&segs, b.w_beta);
        assert!((b.ln_exact - reference).abs() <= 1e-9 * reference.abs().max(1.0));
    }

    fn exact_segments() -> impl Strategy<Value = Vec<ExactSegment>> {
        prop::collection::vec(
            (1_u32..=5, prop_oneof![Just(0.0), Just(1.0), 0.0_f64..=1.0])
                .prop_map(|(weight, p_pass)| ExactSegment { weight, p_pass }),
            1..=10,
        )
    }

    proptest! {
        #![proptest_config(ProptestConfig {
            cases: 256,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x00de_c0de),
            failure_persistence: None,
            ..ProptestConfig::default()
        })]

        /// The DP equals brute-force enumeration of all 2^S outcomes.
        #[test]
        fn exact_dp_matches_brute_force(segs in exact_segments(), beta in 0.01_f64..0.99) {
            let dp = exact_failure_probability(&segs, beta).unwrap();
            let bf = brute_force(&segs, beta);
            prop_assert!((dp - bf).abs() <= 1e-12, "dp {dp} brute force {bf}");
        }

        /// Both bounds of Proposition 1 are at least the exact probability.
        #[test]
        fn bounds_dominate_exact(segs in exact_segments(), beta in 0.01_f64..0.99) {
            let a = trace_analysis(&segs, beta).unwrap();
            prop_assert!(a.hoeffding.value + 1e-12 >= a.exact, "{a:?}");
            prop_assert!(a.chernoff.value + 1e-12 >= a.exact, "{a:?}");
            prop_assert!(a.ln_exact <= a.chernoff.ln + 1e-9 && a.ln_exact <= a.hoeffding.ln + 1e-9, "{a:?}");
            prop_assert!((0.0..=1.0).contains(&a.hoeffding.value));
            prop_assert!((0.0..=1.0).contains(&a.chernoff.value));
            prop_assert!(a.hoeffding.ln <= 0.0 && a.chernoff.ln <= 0.0);
        }

        /// The Chernoff minimiser is no worse than the objective anywhere on a grid.
        #[test]
        fn chernoff_is_the_minimum(
            segs in prop::collection::vec((0.5_f64..=5.0, 0.0_f64..=1.0), 1..=40),
            beta in 0.01_f64..0.99,
        ) {
            let segs = ws(&segs);
            let b = chernoff_bound(&segs, beta).unwrap();
            let m = trace_moments(&segs).unwrap();
            let wb = beta * m.total_weight;
            for i in 0..=400 {
                let lambda = f64::from(i) * 0.05;
                let f = chernoff_objective(&segs, wb, lambda);
                prop_assert!(b.ln <= f + 1e-9 * f.abs().max(1.0), "lambda {lambda}: {f} < {}", b.ln);
            }
            for e in -6..=6 {
                let lambda = 10_f64.powi(e);
                let f = chernoff_objective(&segs, wb, lambda);
                prop_assert!(b.ln <= f + 1e-9 * f.abs().max(1.0), "lambda {lambda}: {f} < {}", b.ln);
            }
            // And it is a stationary point when finite and positive.
            if b.lambda > 0.0 && b.lambda.is_finite() {
                let (d1, _) = chernoff_derivatives(&segs, wb, b.lambda);
                prop_assert!(d1.abs() <= 1e-8 * m.total_weight, "slope {d1} at {}", b.lambda);
            }
        }

        /// The tilted DP reproduces the plain one wherever both are accurate.
        #[test]
        fn tilted_dp_matches_plain(
            segs in prop::collection::vec(
                (1_u32..=4, 0.05_f64..=0.999).prop_map(|(weight, p_pass)| ExactSegment { weight, p_pass }),
                1..=60,
            ),
            beta in 0.01_f64..0.99,
        ) {
            let dist = WeightDistribution::new(&segs).unwrap();
            let wb = beta * dist.total_weight() as f64;
            let plain = dist.pr_less_than(wb);
            let weighted: Vec<WeightedSegment> = segs.iter().copied().map(Into::into).collect();
            let c = chernoff_bound(&weighted, beta).unwrap();
            prop_assume!(plain > 1e-250 && c.lambda > 0.0 && c.lambda.is_finite());
            let tilted = tilted_ln_pr_less_than(&segs, wb, c.lambda);
            prop_assert!((tilted - plain.ln()).abs() <= 1e-9 * plain.ln().abs().max(1.0), "{tilted} vs {}", plain.ln());
        }

        /// Real-weight bounds equal the integer-weight ones for the same trace.
        #[test]
        fn bounds_with_real_weights_match(segs in exact_segments(), beta in 0.01_f64..0.99) {
            let real: Vec<WeightedSegment> = segs.iter().copied().map(Into::into).collect();
            let a = trace_analysis(&segs, beta).unwrap();
            prop_assert_eq!(hoeffding_bound(&real, beta).unwrap(), a.hoeffding);
            prop_assert_eq!(chernoff_bound(&real, beta).unwrap(), a.chernoff);
        }
    }
}
