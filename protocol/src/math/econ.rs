//! Economic layer: reputation-weighted slashing, per-segment payoffs and Theorem 1 (the
//! safety-profitability guarantee with its statistical and economic dials).
//!
//! A human seat's payoff on one segment is `X in {-P, 0, R}`: `R` for a correct vote,
//! `-P` for an incorrect vote that is slashed (probability `p_slash(r)`), 0 otherwise.

use serde::Serialize;

use super::{
    MathError, check_closed, check_open, check_open_closed, check_positive, trace::TraceAnalysis,
};

/// Slack for the `>=` comparisons of the dials, so that a parameter set exactly on a
/// boundary (`p_min = delta / (1 - alpha)`) is not failed by rounding.
const DIAL_SLACK: f64 = 1e-12;

/// Parameters of Theorem 1.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct EconParams {
    /// Reward `R > 0` for a correct vote.
    pub reward: f64,
    /// Penalty `P > 0` when an incorrect vote is slashed.
    pub penalty: f64,
    /// Slash probability at full reputation, `0 < p_min < p_max`.
    pub p_min: f64,
    /// Slash probability at zero reputation, `p_max <= 1`.
    pub p_max: f64,
    /// Design constant `delta` in `(0, 1)`: the minimum expected loss per malicious
    /// segment, as a fraction of `P`.
    pub delta: f64,
    /// Segment intensity `lambda > 0` (segments per unit time).
    pub lambda: f64,
    /// Horizon `T > 0` (same time unit as `lambda`).
    pub horizon: f64,
    /// Honest human error rate `eps_H` in `[0, 1)`.
    pub eps_h: f64,
    /// Reputation adaptation speed `gamma` in `(0, 1]` (eq. 3).
    pub gamma: f64,
}

impl Default for EconParams {
    fn default() -> Self {
        Self::paper_example()
    }
}

impl EconParams {
    /// Default reputation adaptation speed `gamma`; the paper leaves it open.
    pub const DEFAULT_GAMMA: f64 = 0.1;

    /// The paper's worked example (Section "Economics Analysis"): `R = 6`, `P = 8`,
    /// `p_min = 0.2`, `p_max = 0.5`, `delta = 0.2`, `lambda = 60`, `T = 24`,
    /// `eps_H = 0.30`, and `gamma = 0.1`.
    pub fn paper_example() -> Self {
        Self {
            reward: 6.0,
            penalty: 8.0,
            p_min: 0.2,
            p_max: 0.5,
            delta: 0.2,
            lambda: 60.0,
            horizon: 24.0,
            eps_h: 0.30,
            gamma: Self::DEFAULT_GAMMA,
        }
    }

    /// Checks the domains Theorem 1 assumes: `R, P, lambda, T > 0`,
    /// `0 < p_min < p_max <= 1`, `0 <= eps_H < 1`, `delta` in `(0, 1)`, `gamma` in `(0, 1]`.
    pub fn validate(&self) -> Result<(), MathError> {
        check_positive("R", self.reward)?;
        check_positive("P", self.penalty)?;
        check_open_closed("p_max", self.p_max, 0.0, 1.0)?;
        if !(self.p_min.is_finite() && self.p_min > 0.0 && self.p_min < self.p_max) {
            return Err(MathError::OutOfRange {
                name: "p_min".into(),
                expected: format!("in (0, p_max = {})", self.p_max),
                got: self.p_min,
            });
        }
        check_open("delta", self.delta, 0.0, 1.0)?;
        check_positive("lambda", self.lambda)?;
        check_positive("T", self.horizon)?;
        if !(self.eps_h.is_finite() && (0.0..1.0).contains(&self.eps_h)) {
            return Err(MathError::OutOfRange {
                name: "eps_H".into(),
                expected: "in [0, 1)".into(),
                got: self.eps_h,
            });
        }
        check_open_closed("gamma", self.gamma, 0.0, 1.0)?;
        Ok(())
    }

    /// Expected number of segments in the horizon, `lambda T`.
    pub fn segments_in_horizon(&self) -> f64 {
        self.lambda * self.horizon
    }
}

/// Eq. (3): the reputation update `r' = (1 - gamma) r + gamma 1[vote correct]`.
pub fn reputation_update(params: &EconParams, r: f64, correct: bool) -> Result<f64, MathError> {
    params.validate()?;
    let r = check_closed("r", r, 0.0, 1.0)?;
    let hit = if correct { 1.0 } else { 0.0 };
    Ok(((1.0 - params.gamma) * r + params.gamma * hit).clamp(0.0, 1.0))
}

/// Eq. (4): `p_slash(r) = p_min + (p_max - p_min)(1 - r)`, `r` in `[0, 1]`.
pub fn p_slash(params: &EconParams, r: f64) -> Result<f64, MathError> {
    params.validate()?;
    let r = check_closed("r", r, 0.0, 1.0)?;
    Ok(params.p_min + (params.p_max - params.p_min) * (1.0 - r))
}

/// Eq. (5): the honest seat's expected payoff
/// `mu_H(r) = (1 - eps_H) R - eps_H P p_slash(r)`.
pub fn mu_h(params: &EconParams, r: f64) -> Result<f64, MathError> {
    let ps = p_slash(params, r)?;
    Ok((1.0 - params.eps_h) * params.reward - params.eps_h * params.penalty * ps)
}

/// Theorem 1: `mu_min = min_r mu_H(r) = (1 - eps_H) R - eps_H P p_max` (at `r = 0`).
pub fn mu_min(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    Ok((1.0 - params.eps_h) * params.reward - params.eps_h * params.penalty * params.p_max)
}

/// The bracket of eq. (7) at a given slash probability `p` in `[0, 1]`: the variance of
/// the honest payoff, `(1 - eps_H) R^2 + eps_H p P^2 - ((1 - eps_H) R - eps_H p P)^2`.
pub fn payoff_variance(params: &EconParams, p: f64) -> Result<f64, MathError> {
    params.validate()?;
    let p = check_closed("p_slash", p, 0.0, 1.0)?;
    Ok(variance_at(params, p))
}

fn variance_at(params: &EconParams, p: f64) -> f64 {
    let (e, r, pen) = (params.eps_h, params.reward, params.penalty);
    let mean = (1.0 - e) * r - e * p * pen;
    ((1.0 - e) * r * r + e * p * pen * pen - mean * mean).max(0.0)
}

/// Eq. (7): `sigma_H^2 = sup_{r in [0, 1]} Var[X]`.
///
/// As `r` runs over `[0, 1]`, `p_slash` runs over `[p_min, p_max]`, and the variance is
/// a concave quadratic in `p_slash` with vertex at `(P + 2 (1 - eps_H) R) / (2 eps_H P)`.
/// The supremum is at that vertex clamped into `[p_min, p_max]` (the endpoints are
/// evaluated too, which also covers `eps_H = 0`, where the variance is 0).
pub fn sigma2_h(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    let (e, r, pen) = (params.eps_h, params.reward, params.penalty);
    let mut best = variance_at(params, params.p_min).max(variance_at(params, params.p_max));
    if e > 0.0 {
        let vertex = (pen + 2.0 * (1.0 - e) * r) / (2.0 * e * pen);
        let clamped = vertex.clamp(params.p_min, params.p_max);
        best = best.max(variance_at(params, clamped));
    }
    Ok(best)
}

/// Eq. (6): the range bound of the centred increment, `b = R`.
pub fn range_bound_b(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    Ok(params.reward)
}

/// Theorem 1 (b), honest profitability: the natural log of the bound
/// `Pr[U_hon(T) <= 0] <= exp(-lambda T mu_min^2 / (2 sigma_H^2 + (2/3) b mu_min))`.
///
/// Returns 0 (the vacuous bound 1) when `mu_min <= 0`, where the theorem does not apply.
pub fn ln_honest_tail_bound(params: &EconParams) -> Result<f64, MathError> {
    let mu = mu_min(params)?;
    if mu <= 0.0 {
        return Ok(0.0);
    }
    let s2 = sigma2_h(params)?;
    let b = range_bound_b(params)?;
    Ok(-params.segments_in_horizon() * mu * mu / (2.0 * s2 + 2.0 / 3.0 * b * mu))
}

/// Theorem 1 (c), malicious loss: the natural log of the bound
/// `Pr[U_mal(T) >= 0] <= exp(-lambda T (delta P)^2 / (2 sigma_H^2 + (2/3) b delta P))`,
/// with the same `sigma_H^2` (eq. 7) and `b = R` (eq. 6) as the paper's worked example.
pub fn ln_malicious_tail_bound(params: &EconParams) -> Result<f64, MathError> {
    let s2 = sigma2_h(params)?;
    let b = range_bound_b(params)?;
    let dp = params.delta * params.penalty;
    Ok(-params.segments_in_horizon() * dp * dp / (2.0 * s2 + 2.0 / 3.0 * b * dp))
}

/// `E[X_mal] = -P p_max`: a malicious seat always votes wrong and, at reputation 0, is
/// slashed with probability `p_slash(0) = p_max` (worked example: -4.0).
pub fn malicious_mean(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    Ok(-params.penalty * params.p_max)
}

/// `Var[X_mal] = P^2 p_max (1 - p_max)` for the malicious payoff in `{-P, 0}`
/// (worked example: 16).
pub fn malicious_variance(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    Ok(params.penalty * params.penalty * params.p_max * (1.0 - params.p_max))
}

/// Eq. (9), reward dial threshold: `R` must exceed `eps_H / (1 - eps_H) P p_max`.
pub fn r_dial_threshold(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    Ok(params.eps_h / (1.0 - params.eps_h) * params.penalty * params.p_max)
}

/// Eq. (9): `alpha = P p_max / (R + P p_max)`.
pub fn alpha(params: &EconParams) -> Result<f64, MathError> {
    params.validate()?;
    let pp = params.penalty * params.p_max;
    Ok(pp / (params.reward + pp))
}

/// Eq. (9), slashing-floor dial: the smallest admissible `p_min = delta / (1 - alpha)`.
pub fn p_min_required(params: &EconParams) -> Result<f64, MathError> {
    let a = alpha(params)?;
    Ok(params.delta / (1.0 - a))
}

/// One condition of Theorem 1 and whether it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dial {
    /// Short identifier: `mu_min`, `reward`, `p_min` or `statistical`.
    pub name: String,
    /// The condition, as the paper writes it.
    pub condition: String,
    /// Whether it holds.
    pub ok: bool,
    /// The numbers behind the verdict.
    pub detail: String,
}

/// Theorem 1's economic conditions: `mu_min > 0`, and eq. (9)'s reward dial
/// `R > eps_H/(1-eps_H) P p_max` and slashing-floor dial `p_min >= delta/(1-alpha)`.
pub fn economic_dials(params: &EconParams) -> Result<Vec<Dial>, MathError> {
    let mu = mu_min(params)?;
    let threshold = r_dial_threshold(params)?;
    let a = alpha(params)?;
    let required = p_min_required(params)?;

    let mu_ok = mu > 0.0;
    let r_ok = params.reward > threshold;
    let p_ok = params.p_min + DIAL_SLACK >= required;
    Ok(vec![
        Dial {
            name: "mu_min".into(),
            condition: "mu_min = (1-eps_H) R - eps_H P p_max > 0".into(),
            ok: mu_ok,
            detail: format!(
                "mu_min = {} {} 0: an honest seat {} in expectation even at reputation 0",
                fmt_num(mu),
                if mu_ok { ">" } else { "<=" },
                if mu_ok { "earns" } else { "does not earn" }
            ),
        },
        Dial {
            name: "reward".into(),
            condition: "R > eps_H/(1-eps_H) P p_max".into(),
            ok: r_ok,
            detail: format!(
                "R = {} {} {}",
                fmt_num(params.reward),
                if r_ok { ">" } else { "<=" },
                fmt_num(threshold)
            ),
        },
        Dial {
            name: "p_min".into(),
            condition: "p_min >= delta/(1-alpha)".into(),
            ok: p_ok,
            detail: format!(
                "p_min = {} {} delta/(1-alpha) = {}/(1-{}) = {}{}",
                fmt_num(params.p_min),
                if p_ok { ">=" } else { "<" },
                fmt_num(params.delta),
                fmt_num(a),
                fmt_num(required),
                if p_ok {
                    String::new()
                } else {
                    format!("; raise p_min to at least {}", fmt_num(required))
                }
            ),
        },
    ])
}

/// Theorem 1's statistical dial (eq. 8) evaluated for one trace.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StatisticalDial {
    /// Target probability that any trace fails in `[0, T]`.
    pub epsilon_target: f64,
    /// `ln(lambda T / epsilon_target)`, floored at 0.
    pub ln_ratio: f64,
    /// The variance bound used: `sigma_max^2 = sum_s w_s^2`.
    pub sigma2: f64,
    /// `sqrt(0.5 sigma2 ln(lambda T / epsilon_target))`.
    pub required_gap: f64,
    /// `mu_vote - W_beta`.
    pub actual_gap: f64,
    /// Whether `actual_gap >= required_gap`.
    pub ok: bool,
    /// The per-trace failure probability the dial guarantees, `epsilon_target / (lambda T)`
    /// (eq. 10), when it holds.
    pub per_trace_target: f64,
}

impl StatisticalDial {
    /// The dial as a [`Dial`] line.
    pub fn dial(&self) -> Dial {
        Dial {
            name: "statistical".into(),
            condition: "mu_vote - W_beta >= sqrt(0.5 sigma_max^2 ln(lambda T / eps_target))".into(),
            ok: self.ok,
            detail: format!(
                "mu_vote - W_beta = {} {} required {} (sigma_max^2 = {}, ln(lambda T/eps_target) = {})",
                fmt_num(self.actual_gap),
                if self.ok { ">=" } else { "<" },
                fmt_num(self.required_gap),
                fmt_num(self.sigma2),
                fmt_num(self.ln_ratio),
            ),
        }
    }
}

/// Theorem 1's statistical dial, eq. (8):
/// `mu_vote - W_beta >= sqrt(0.5 sigma^2 ln(lambda T / eps_target))`.
///
/// The variance term is `sigma_max^2 = sum_s w_s^2` (eq. 2), not `Var(W)`: the proof
/// applies Hoeffding's inequality, whose denominator is the sum of squared ranges of the
/// summands `w_s B_s`. When `lambda T <= eps_target` the logarithm is negative and the
/// required gap is 0 (any trace meets the target). Requires `eps_target` in `(0, 1)`.
pub fn statistical_dial(
    params: &EconParams,
    trace: &TraceAnalysis,
    epsilon_target: f64,
) -> Result<StatisticalDial, MathError> {
    params.validate()?;
    let epsilon_target = check_open("epsilon_target", epsilon_target, 0.0, 1.0)?;
    let lt = params.segments_in_horizon();
    let ln_ratio = (lt / epsilon_target).ln().max(0.0);
    let sigma2 = trace.moments.sigma2_max;
    let required_gap = (0.5 * sigma2 * ln_ratio).sqrt();
    let actual_gap = trace.moments.mu_vote - trace.w_beta;
    Ok(StatisticalDial {
        epsilon_target,
        ln_ratio,
        sigma2,
        required_gap,
        actual_gap,
        ok: actual_gap + DIAL_SLACK >= required_gap,
        per_trace_target: epsilon_target / lt,
    })
}

/// Everything Theorem 1 says about one parameter set.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EconReport {
    /// The parameters.
    pub params: EconParams,
    /// `mu_min` (Theorem 1).
    pub mu_min: f64,
    /// `sigma_H^2` (eq. 7).
    pub sigma2_h: f64,
    /// `b = R` (eq. 6).
    pub b: f64,
    /// `ln` of the honest-profitability bound (Theorem 1 b).
    pub ln_honest_bound: f64,
    /// `ln` of the malicious-loss bound (Theorem 1 c).
    pub ln_malicious_bound: f64,
    /// `E[X_mal] = -P p_max`.
    pub malicious_mean: f64,
    /// `Var[X_mal] = P^2 p_max (1 - p_max)`.
    pub malicious_variance: f64,
    /// `E[U_mal(T)] = lambda T E[X_mal]`.
    pub malicious_horizon_mean: f64,
    /// The reward dial's threshold `eps_H/(1-eps_H) P p_max`.
    pub r_threshold: f64,
    /// `alpha` (eq. 9).
    pub alpha: f64,
    /// `delta / (1 - alpha)` (eq. 9).
    pub p_min_required: f64,
    /// The economic dials ([`economic_dials`]).
    pub dials: Vec<Dial>,
}

/// Computes the [`EconReport`] for `params` (Theorem 1, eqs. 4 to 9).
pub fn econ_report(params: &EconParams) -> Result<EconReport, MathError> {
    let malicious_mean = malicious_mean(params)?;
    Ok(EconReport {
        params: *params,
        mu_min: mu_min(params)?,
        sigma2_h: sigma2_h(params)?,
        b: range_bound_b(params)?,
        ln_honest_bound: ln_honest_tail_bound(params)?,
        ln_malicious_bound: ln_malicious_tail_bound(params)?,
        malicious_mean,
        malicious_variance: malicious_variance(params)?,
        malicious_horizon_mean: params.segments_in_horizon() * malicious_mean,
        r_threshold: r_dial_threshold(params)?,
        alpha: alpha(params)?,
        p_min_required: p_min_required(params)?,
        dials: economic_dials(params)?,
    })
}

/// Up to four decimals, trailing zeros trimmed (`3`, `0.3333`, `25.8`): how dial details
/// and reports write parameters.
pub fn fmt_num(x: f64) -> String {
    if !x.is_finite() {
        return x.to_string();
    }
    let s = format!("{x:.4}");
    let s = if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_owned()
    } else {
        s
    };
    if s == "-0" { "0".to_owned() } else { s }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::math::{TraceSpec, trace_analysis};

    fn paper() -> EconParams {
        EconParams::paper_example()
    }

    fn close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol
    }

    #[test]
    fn worked_example_numbers() {
        let p = paper();
        assert!(close(mu_min(&p).unwrap(), 3.0, 1e-12));
        assert!(close(sigma2_h(&p).unwrap(), 25.8, 1e-12));
        assert_eq!(range_bound_b(&p).unwrap(), 6.0);
        let h = ln_honest_tail_bound(&p).unwrap();
        assert!(close(h, -12960.0 / 63.6, 1e-9), "{h}");
        assert!(close(h, -203.77, 0.01));
        let m = ln_malicious_tail_bound(&p).unwrap();
        assert!(close(m, -3686.4 / 58.0, 1e-9), "{m}");
        assert!(close(m, -63.56, 0.01));
        assert!(close(malicious_mean(&p).unwrap(), -4.0, 1e-12));
        assert!(close(malicious_variance(&p).unwrap(), 16.0, 1e-12));
        assert!(close(alpha(&p).unwrap(), 0.4, 1e-12));
        assert!(close(p_min_required(&p).unwrap(), 1.0 / 3.0, 1e-12));
        assert!(close(r_dial_threshold(&p).unwrap(), 0.3 / 0.7 * 4.0, 1e-12));
    }

    #[test]
    fn worked_example_dials() {
        let dials = economic_dials(&paper()).unwrap();
        let by = |n: &str| dials.iter().find(|d| d.name == n).unwrap().clone();
        assert!(by("mu_min").ok);
        assert!(by("reward").ok);
        let p = by("p_min");
        assert!(!p.ok);
        assert!(p.detail.contains("0.2 < delta/(1-alpha)"), "{}", p.detail);
        assert!(p.detail.contains("0.3333"), "{}", p.detail);

        let mut balanced = paper();
        balanced.p_min = 0.4;
        assert!(economic_dials(&balanced).unwrap().iter().all(|d| d.ok));
        // Exactly on the boundary passes.
        balanced.p_min = 0.2 / 0.6;
        assert!(economic_dials(&balanced).unwrap().iter().all(|d| d.ok));
    }

    #[test]
    fn slashing_and_reputation() {
        let p = paper();
        assert!(close(p_slash(&p, 0.0).unwrap(), 0.5, 1e-15));
        assert!(close(p_slash(&p, 1.0).unwrap(), 0.2, 1e-15));
        assert!(close(p_slash(&p, 0.5).unwrap(), 0.35, 1e-15));
        assert!(close(mu_h(&p, 0.0).unwrap(), 3.0, 1e-12));
        assert!(close(mu_h(&p, 1.0).unwrap(), 4.2 - 0.48, 1e-12));
        assert!(close(
            reputation_update(&p, 0.5, true).unwrap(),
            0.55,
            1e-15
        ));
        assert!(close(
            reputation_update(&p, 0.5, false).unwrap(),
            0.45,
            1e-15
        ));
        assert!(p_slash(&p, 1.5).is_err());
    }

    #[test]
    fn sigma2_h_takes_the_interior_vertex() {
        // Vertex (P + 2 (1-e) R) / (2 e P) = (1 + 2 * 0.1 * 1) / (2 * 0.9) = 0.6667,
        // inside [0.1, 0.9]: the sup is at the vertex, above both endpoints.
        let p = EconParams {
            reward: 1.0,
            penalty: 1.0,
            p_min: 0.1,
            p_max: 0.9,
            eps_h: 0.9,
            ..paper()
        };
        let s2 = sigma2_h(&p).unwrap();
        let vertex = (1.0 + 2.0 * 0.1) / (2.0 * 0.9);
        let at_vertex = payoff_variance(&p, vertex).unwrap();
        assert!(close(s2, at_vertex, 1e-15));
        assert!(s2 > payoff_variance(&p, 0.1).unwrap() + 1e-3);
        assert!(s2 > payoff_variance(&p, 0.9).unwrap() + 1e-3);
        // And it is the sup over a fine grid.
        for i in 0..=1000 {
            let ps = 0.1 + 0.8 * f64::from(i) / 1000.0;
            assert!(payoff_variance(&p, ps).unwrap() <= s2 + 1e-15);
        }
        // No error, no variance.
        let p = EconParams {
            eps_h: 0.0,
            ..paper()
        };
        assert_eq!(sigma2_h(&p).unwrap(), 0.0);
    }

    #[test]
    fn payoff_variance_matches_distribution() {
        let p = paper();
        for ps in [0.2, 0.35, 0.5] {
            let probs = [
                (1.0 - p.eps_h, p.reward),
                (p.eps_h * ps, -p.penalty),
                (p.eps_h * (1.0 - ps), 0.0),
            ];
            let mean: f64 = probs.iter().map(|(q, x)| q * x).sum();
            let var: f64 = probs.iter().map(|(q, x)| q * (x - mean).powi(2)).sum();
            assert!(close(payoff_variance(&p, ps).unwrap(), var, 1e-12));
        }
    }

    #[test]
    fn unprofitable_honest_bound_is_vacuous() {
        let p = EconParams {
            reward: 1.0,
            ..paper()
        };
        assert!(mu_min(&p).unwrap() < 0.0);
        assert_eq!(ln_honest_tail_bound(&p).unwrap(), 0.0);
        let dials = economic_dials(&p).unwrap();
        assert!(!dials[0].ok && !dials[1].ok);
    }

    #[test]
    fn validation_names_the_parameter() {
        let msg = |p: EconParams| p.validate().unwrap_err().to_string();
        assert_eq!(
            msg(EconParams {
                reward: 0.0,
                ..paper()
            }),
            "R must be positive and finite, got 0"
        );
        assert_eq!(
            msg(EconParams {
                p_min: 0.6,
                ..paper()
            }),
            "p_min must be in (0, p_max = 0.5), got 0.6"
        );
        assert_eq!(
            msg(EconParams {
                p_max: 1.5,
                ..paper()
            }),
            "p_max must be in (0, 1], got 1.5"
        );
        assert_eq!(
            msg(EconParams {
                eps_h: 1.0,
                ..paper()
            }),
            "eps_H must be in [0, 1), got 1"
        );
        assert_eq!(
            msg(EconParams {
                delta: 1.0,
                ..paper()
            }),
            "delta must be in (0, 1), got 1"
        );
        assert!(
            msg(EconParams {
                horizon: -1.0,
                ..paper()
            })
            .starts_with("T must be")
        );
        assert!(
            msg(EconParams {
                lambda: f64::NAN,
                ..paper()
            })
            .starts_with("lambda must be")
        );
        assert!(
            msg(EconParams {
                gamma: 0.0,
                ..paper()
            })
            .starts_with("gamma must be")
        );
        assert!(
            econ_report(&EconParams {
                penalty: 0.0,
                ..paper()
            })
            .is_err()
        );
    }

    #[test]
    fn statistical_dial_on_the_representative_trace() {
        let spec = TraceSpec::representative().resolve().unwrap();
        let trace = trace_analysis(&spec.segments, 0.25).unwrap();
        let d = statistical_dial(&paper(), &trace, 0.01).unwrap();
        assert!(close(d.ln_ratio, (1440.0_f64 / 0.01).ln(), 1e-12));
        assert_eq!(d.sigma2, 7.0 + 7.0 * 4.0 + 6.0 * 9.0);
        assert!(close(
            d.required_gap,
            (0.5 * 89.0 * d.ln_ratio).sqrt(),
            1e-12
        ));
        assert!(close(
            d.actual_gap,
            trace.moments.mu_vote - trace.w_beta,
            1e-12
        ));
        assert!(d.ok, "{d:?}");
        // The dial implies the Hoeffding bound is below eps_target / (lambda T).
        assert!(trace.hoeffding.value <= d.per_trace_target * (1.0 + 1e-9));
        // A demanding beta fails it.
        let strict = trace_analysis(&spec.segments, 0.8).unwrap();
        assert!(!statistical_dial(&paper(), &strict, 0.01).unwrap().ok);
        assert!(statistical_dial(&paper(), &trace, 0.0).is_err());
        assert!(statistical_dial(&paper(), &trace, 1.0).is_err());
    }

    #[test]
    fn report_bundles_the_numbers() {
        let r = econ_report(&paper()).unwrap();
        assert!(close(r.mu_min, 3.0, 1e-12));
        assert!(close(r.malicious_horizon_mean, -5760.0, 1e-9));
        assert_eq!(r.dials.len(), 3);
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(fmt_num(1.0 / 3.0), "0.3333");
        assert_eq!(fmt_num(25.8), "25.8");
        assert_eq!(fmt_num(-0.00001), "0");
    }
}
