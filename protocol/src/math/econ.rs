//! Economic layer: reputation-weighted slashing, per-segment payoffs and Theorem 1 (the
//! safety-profitability guarantee with its statistical and economic dials).
//!
//! A human seat's payoff on one segment is `X in {-P, 0, R}`: `R` for a correct vote,
//! `-P` for an incorrect vote that is slashed (probability `p_slash(r)`), 0 otherwise.
//!
//! Beyond the paper's dials, which price an always-wrong seat, the guesser dial prices a
//! seat that never looks at its segment ([`guesser_agreement`], [`guesser_mean`]).

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
    /// Share `v` in `[0, 1]` of scored votes whose target verdict is Valid: the base rate
    /// of correct segments the network sees. The guesser dial takes the worst case, the
    /// top of the range (paper: 70-85%, so 0.85).
    pub base_rate: f64,
    /// Honeypot approval threshold `theta` in `(0, 1]`: a seat that approves at least this
    /// share of known-error honeypots is flagged as a rubber-stamper and forfeits its
    /// earnings (the contract's `rubber_stamp.approval`). 1 means a guesser is never
    /// flagged short of approving every known error.
    pub honeypot_approval: f64,
    /// Counted seats `k` of the panel a guesser sits in (the human tier's `k_t`).
    pub panel_k: u32,
    /// Seat quorum `tau` of that panel: a round is Valid when at least `ceil(tau k)` votes
    /// say Valid, against when as many say otherwise.
    pub panel_tau: f64,
}

impl Default for EconParams {
    fn default() -> Self {
        Self::paper_example()
    }
}

impl EconParams {
    /// Default reputation adaptation speed `gamma`; the paper leaves it open.
    pub const DEFAULT_GAMMA: f64 = 0.1;
    /// Default base rate `v` of Valid verdicts: the top of the paper's 70-85%.
    pub const DEFAULT_BASE_RATE: f64 = 0.85;

    /// The paper's worked example (Section "Economics Analysis"): `R = 6`, `P = 8`,
    /// `p_min = 0.2`, `p_max = 0.5`, `delta = 0.2`, `lambda = 60`, `T = 24`,
    /// `eps_H = 0.30`, and `gamma = 0.1`; the guesser dial's inputs, which the paper does
    /// not give, are the base rate `v = 0.85` (top of its 70-85%), the honeypot
    /// threshold `theta = 0.8` the contract used before the guesser dial existed, and a
    /// human panel of `k = 5` seats at `tau = 0.6` (the representative trace's).
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
            base_rate: Self::DEFAULT_BASE_RATE,
            honeypot_approval: 0.8,
            panel_k: 5,
            panel_tau: 0.6,
        }
    }

    /// The network's default economics (the contract's genesis `Params`): `R = 6`,
    /// `P = 18`, `p_min = 0.71`, `p_max = 0.73`, honeypot threshold `theta = 0.6`, and the
    /// paper's `delta`, `lambda`, `T`, `eps_H`, `gamma`. Every dial holds: `mu_min = 0.258`,
    /// `p_min >= delta/(1-alpha) = 0.638`, and the best guesser (agreement 0.672 in a
    /// 5-seat panel at `v = 0.85`) loses 0.197 per vote.
    ///
    /// The dials leave a narrow window. `E[X]` rises with agreement; an honest human agrees
    /// at least `1 - eps_H = 0.7` of the time (`mu_min`), the guesser 0.672, so `P p / R`
    /// must sit between 2.05 and 2.33 for both slash probabilities `p`, and
    /// `p_min >= delta (1 + P p_max / R)` then forces `p_min` above 0.6: the slash
    /// probability barely depends on reputation. The honest tail bound is weak (`mu_min`
    /// is small); the honest seat at the reputation it actually settles to earns far more.
    pub fn network_default() -> Self {
        Self {
            reward: 6.0,
            penalty: 18.0,
            p_min: 0.71,
            p_max: 0.73,
            honeypot_approval: 0.6,
            ..Self::paper_example()
        }
    }

    /// Checks the domains Theorem 1 assumes: `R, P, lambda, T > 0`,
    /// `0 < p_min < p_max <= 1`, `0 <= eps_H < 1`, `delta` in `(0, 1)`, `gamma` in `(0, 1]`,
    /// and for the guesser dial `v` in `[0, 1]`, `theta` in `(0, 1]`, `k` in
    /// `1..=MAX_SEATS`, `tau` in `(0, 1]`.
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
        check_closed("base_rate", self.base_rate, 0.0, 1.0)?;
        check_open_closed("honeypot_approval", self.honeypot_approval, 0.0, 1.0)?;
        if self.panel_k == 0 || self.panel_k > super::MAX_SEATS {
            return Err(MathError::OutOfRange {
                name: "panel_k".into(),
                expected: format!("in 1..={}", super::MAX_SEATS),
                got: f64::from(self.panel_k),
            });
        }
        check_open_closed("panel_tau", self.panel_tau, 0.0, 1.0)?;
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

/// Agreement probability of a guesser that votes Valid with probability `q`, whatever the
/// segment, with the verdict of the panel it sits in.
///
/// The contract scores a seat against its round's verdict, and that verdict counts the
/// seat's own vote: `k` counted seats, Valid when at least `Q = ceil(tau k)` say Valid,
/// against when at least `Q` say otherwise. The other `k - 1` seats are honest and wrong
/// with probability `eps_H`; the segment is correct with probability `v`. A round neither
/// side carries is counted as agreement (an upper bound; with odd `k` and `Q = (k+1)/2` it
/// never happens). A guesser's vote tips close rounds its way, so even a fair coin agrees
/// more than half the time: 0.632 in a 5-seat panel at `eps_H = 0.3`, whatever `v`.
pub fn guesser_agreement(params: &EconParams, q: f64) -> Result<f64, MathError> {
    params.validate()?;
    let q = check_closed("q", q, 0.0, 1.0)?;
    let v = params.base_rate;
    let k = params.panel_k;
    let quorum = (params.panel_tau * f64::from(k) - 1e-9).ceil().max(0.0);
    let others = k.saturating_sub(1);
    let mut total = 0.0;
    for (truth_valid, p_truth) in [(true, v), (false, 1.0 - v)] {
        // Probability that one honest seat votes Valid.
        let p_valid = if truth_valid {
            1.0 - params.eps_h
        } else {
            params.eps_h
        };
        for (guess_valid, p_guess) in [(true, q), (false, 1.0 - q)] {
            let mut agree = 0.0;
            for j in 0..=others {
                // j of the others vote Valid.
                let valid = f64::from(j) + if guess_valid { 1.0 } else { 0.0 };
                let against = f64::from(k) - valid;
                let pass = valid >= quorum;
                let fail = against >= quorum;
                let agrees = if pass == fail {
                    true
                } else {
                    pass == guess_valid
                };
                if agrees {
                    agree += binomial(others, j, p_valid);
                }
            }
            total += p_truth * p_guess * agree;
        }
    }
    Ok(total.clamp(0.0, 1.0))
}

/// `C(n, j) p^j (1 - p)^(n - j)`.
fn binomial(n: u32, j: u32, p: f64) -> f64 {
    let (n, j) = (f64::from(n), f64::from(j));
    let mut c = 1.0;
    let mut i = 0.0;
    while i < j {
        c = c * (n - i) / (i + 1.0);
        i += 1.0;
    }
    c * p.powf(j) * (1.0 - p).powf(n - j)
}

/// The strongest guessing strategy the honeypot rule lets through: the share `q*` of
/// Valid votes that maximises agreement, `q` in `[0, theta]`.
///
/// A guesser cannot tell a honeypot from a real segment, so it approves known errors at
/// its own rate `q`; at `q >= theta` the rubber-stamp rule flags it and it forfeits all it
/// earned. `a(q)` is linear in `q` (a mixture of "always Valid" and "always against"), so
/// the best `q` is an end of `[0, theta]`. `theta` itself is the supremum of what passes
/// unflagged, which errs on the guesser's side.
pub fn best_guess(params: &EconParams) -> Result<f64, MathError> {
    let at_theta = guesser_agreement(params, params.honeypot_approval)?;
    let at_zero = guesser_agreement(params, 0.0)?;
    Ok(if at_theta >= at_zero {
        params.honeypot_approval
    } else {
        0.0
    })
}

/// A guesser's expected payoff per scored vote once its reputation has settled:
/// `E[X] = a R - (1 - a) p_slash(a) P`.
///
/// Its agreements are independent Bernoulli(`a`) draws, so the EMA of eq. (3) settles at
/// `E[r] = a`, and since the slash draw uses the reputation before the vote and
/// `p_slash` is linear in `r`, the mean slash probability of a wrong vote is
/// `p_slash(a)`. `E[X]` increases with `a`.
pub fn guesser_mean(params: &EconParams, agreement: f64) -> Result<f64, MathError> {
    let a = check_closed("agreement", agreement, 0.0, 1.0)?;
    let ps = p_slash(params, a)?;
    Ok(a * params.reward - (1.0 - a) * ps * params.penalty)
}

/// What the guesser dial computes.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct GuesserReport {
    /// `q*`, the best unflagged share of Valid votes ([`best_guess`]).
    pub valid_share: f64,
    /// `a* = a(q*)`, which is also the reputation `r*` it settles at.
    pub agreement: f64,
    /// `p_slash(a*)`.
    pub p_slash: f64,
    /// `E[X]` at `a*` ([`guesser_mean`]).
    pub mean: f64,
    /// `lambda T E[X]`.
    pub horizon_mean: f64,
    /// Agreement of a fair coin (`q = 1/2`), for reference.
    pub coin_agreement: f64,
    /// `E[X]` of a fair coin, for reference.
    pub coin_mean: f64,
}

/// Computes the [`GuesserReport`].
pub fn guesser_report(params: &EconParams) -> Result<GuesserReport, MathError> {
    let q = best_guess(params)?;
    let a = guesser_agreement(params, q)?;
    let mean = guesser_mean(params, a)?;
    let coin = guesser_agreement(params, 0.5)?;
    Ok(GuesserReport {
        valid_share: q,
        agreement: a,
        p_slash: p_slash(params, a)?,
        mean,
        horizon_mean: params.segments_in_horizon() * mean,
        coin_agreement: coin,
        coin_mean: guesser_mean(params, coin)?,
    })
}

/// The guesser dial: the best guesser the honeypot rule lets through loses money per
/// vote, `E[X](a*) < 0`, and the rule itself spares honest seats, `eps_H < theta` (an
/// honest human approves a known error at its error rate; below that threshold it would
/// be flagged, and a threshold that low would make the first condition meaningless).
pub fn guesser_dial(params: &EconParams) -> Result<Dial, MathError> {
    let g = guesser_report(params)?;
    let loses = g.mean < 0.0;
    let spares_honest = params.eps_h < params.honeypot_approval;
    let mut detail = format!(
        "best unflagged guesser votes Valid with q = {} (v = {}, theta = {}, panel k = {}, \
         tau = {}): agreement = reputation = {}, E[X] = {} R - {} P p_slash({}) = {} {} 0",
        fmt_num(g.valid_share),
        fmt_num(params.base_rate),
        fmt_num(params.honeypot_approval),
        params.panel_k,
        fmt_num(params.panel_tau),
        fmt_num(g.agreement),
        fmt_num(g.agreement),
        fmt_num(1.0 - g.agreement),
        fmt_num(g.agreement),
        fmt_num(g.mean),
        if loses { "<" } else { ">=" },
    );
    if !spares_honest {
        detail.push_str(&format!(
            "; but theta = {} <= eps_H = {}: honest seats would be flagged",
            fmt_num(params.honeypot_approval),
            fmt_num(params.eps_h)
        ));
    }
    Ok(Dial {
        name: "guesser".into(),
        condition: "a* R - (1-a*) P p_slash(a*) < 0, a* = best agreement with its panel's \
                    verdict of a seat voting Valid with q <= theta; eps_H < theta"
            .into(),
        ok: loses && spares_honest,
        detail,
    })
}

/// One condition of Theorem 1 and whether it holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Dial {
    /// Short identifier: `mu_min`, `reward`, `p_min`, `guesser` or `statistical`.
    pub name: String,
    /// The condition, as the paper writes it.
    pub condition: String,
    /// Whether it holds.
    pub ok: bool,
    /// The numbers behind the verdict.
    pub detail: String,
}

/// The economic conditions: Theorem 1's `mu_min > 0`, eq. (9)'s reward dial
/// `R > eps_H/(1-eps_H) P p_max` and slashing-floor dial `p_min >= delta/(1-alpha)`, and
/// the [`guesser_dial`].
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
        guesser_dial(params)?,
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
    /// The best unflagged random guesser ([`guesser_report`]).
    pub guesser: GuesserReport,
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
        guesser: guesser_report(params)?,
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

        // The paper's three dials hold once p_min is raised; its guesser does not lose.
        let theorem = |p: &EconParams| {
            economic_dials(p)
                .unwrap()
                .into_iter()
                .filter(|d| d.name != "guesser")
                .all(|d| d.ok)
        };
        let mut balanced = paper();
        balanced.p_min = 0.4;
        assert!(theorem(&balanced));
        // Exactly on the boundary passes.
        balanced.p_min = 0.2 / 0.6;
        assert!(theorem(&balanced));
        assert!(!by("guesser").ok);
    }

    #[test]
    fn guesser_agreement_in_a_panel() {
        let p = paper();
        // Alone on its segment, a guesser makes the verdict.
        let alone = EconParams { panel_k: 1, ..p };
        assert!(close(guesser_agreement(&alone, 0.3).unwrap(), 1.0, 1e-15));
        // In a 5-seat panel (Q = 3) the 4 others are honest (right with 0.7): a Valid
        // guess on a correct segment carries when >= 2 others say Valid,
        // 1 - 0.3^4 - 4 0.7 0.3^3 = 0.9163; an against guess when >= 2 say against,
        // 1 - 0.7^4 - 4 0.3 0.7^3 = 0.3483. A fair coin: (0.9163 + 0.3483) / 2.
        for v in [0.0, 0.3, 0.85, 1.0] {
            let p = EconParams { base_rate: v, ..p };
            assert!(close(guesser_agreement(&p, 0.5).unwrap(), 0.6323, 1e-12));
        }
        let always_valid = 0.85 * 0.9163 + 0.15 * 0.3483;
        assert!(close(
            guesser_agreement(&p, 1.0).unwrap(),
            always_valid,
            1e-12
        ));
        // Paper example: q* = theta = 0.8,
        // a* = 0.85 (0.8 0.9163 + 0.2 0.3483) + 0.15 (0.8 0.3483 + 0.2 0.9163) = 0.75158.
        assert!(close(best_guess(&p).unwrap(), 0.8, 1e-15));
        assert!(close(guesser_agreement(&p, 0.8).unwrap(), 0.75158, 1e-12));
        // A 4-seat panel at tau = 0.6 (Q = 3) can split 2-2; a split counts as agreement.
        let even = EconParams { panel_k: 4, ..p };
        assert!(guesser_agreement(&even, 0.5).unwrap() > 0.8);
        // Linear in q, so the best share in [0, theta] is an end; with Valid verdicts the
        // majority it is theta, otherwise 0.
        for (v, theta) in [(0.85, 0.8), (0.7, 0.6), (0.3, 0.6), (0.2, 1.0)] {
            let p = EconParams {
                base_rate: v,
                honeypot_approval: theta,
                ..p
            };
            let q = best_guess(&p).unwrap();
            assert_eq!(q, if v >= 0.5 { theta } else { 0.0 });
            let best = guesser_agreement(&p, q).unwrap();
            for i in 0..=100 {
                let other = theta * f64::from(i) / 100.0;
                assert!(guesser_agreement(&p, other).unwrap() <= best + 1e-12);
            }
        }
        assert!(guesser_agreement(&p, 1.1).is_err());
    }

    #[test]
    fn guesser_mean_closed_form() {
        let p = paper();
        // a = 0.5: p_slash = 0.35, E[X] = 3 - 0.5 * 0.35 * 8 = 1.6.
        assert!(close(guesser_mean(&p, 0.5).unwrap(), 1.6, 1e-12));
        // a = 0: the malicious seat, E[X] = -P p_max.
        assert!(close(
            guesser_mean(&p, 0.0).unwrap(),
            malicious_mean(&p).unwrap(),
            1e-12
        ));
        // a = 1: always right, E[X] = R.
        assert!(close(guesser_mean(&p, 1.0).unwrap(), 6.0, 1e-12));
        // Increasing in the agreement.
        let mut last = f64::NEG_INFINITY;
        for i in 0..=100 {
            let m = guesser_mean(&p, f64::from(i) / 100.0).unwrap();
            assert!(m > last);
            last = m;
        }
        assert!(guesser_mean(&p, -0.1).is_err());
    }

    /// Plays the EMA of eq. (3) and the slash rule for a guesser whose agreements are
    /// independent draws, and checks that the average payoff converges to the closed form.
    #[test]
    fn guesser_mean_matches_a_played_ema() {
        // xorshift64*: a fixed, dependency-free stream of uniforms.
        let mut state = 0x9E37_79B9_7F4A_7C15_u64;
        let mut uniform = move || {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            (state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
        };
        for p in [paper(), EconParams::network_default()] {
            for a in [0.3, 0.5, 0.57, 0.71] {
                let (mut r, mut total) = (0.5, 0.0);
                let (burn, n) = (2_000, 400_000);
                for i in 0..burn + n {
                    let agree = uniform() < a;
                    let x = if agree {
                        p.reward
                    } else if uniform() < p_slash(&p, r).unwrap() {
                        -p.penalty
                    } else {
                        0.0
                    };
                    if i >= burn {
                        total += x;
                    }
                    r = reputation_update(&p, r, agree).unwrap();
                }
                let played = total / f64::from(n);
                let formula = guesser_mean(&p, a).unwrap();
                assert!(
                    close(played, formula, 0.05),
                    "a = {a}: {played} vs {formula}"
                );
            }
        }
    }

    #[test]
    fn guesser_dial_verdicts() {
        let dial = |p: &EconParams| guesser_dial(p).unwrap();
        // Paper example: a* = 0.75158, p_slash = 0.2745, E[X] = 3.96 > 0.
        let d = dial(&paper());
        assert!(!d.ok);
        assert!(
            d.detail.contains("agreement = reputation = 0.7516"),
            "{}",
            d.detail
        );
        assert!(close(
            guesser_report(&paper()).unwrap().mean,
            3.963898,
            1e-6
        ));
        // The network default: a* = 0.67206, p_slash = 0.71 + 0.02 (1 - a*),
        // E[X] = 6 a* - 18 (1 - a*) p_slash = -0.19743.
        let n = EconParams::network_default();
        let g = guesser_report(&n).unwrap();
        assert!(close(g.valid_share, 0.6, 1e-15));
        assert!(close(g.agreement, 0.67206, 1e-12));
        assert!(close(g.p_slash, 0.7165588, 1e-12));
        assert!(close(g.mean, -0.197429, 1e-6));
        assert!(close(g.horizon_mean, 1440.0 * g.mean, 1e-9));
        assert!(close(g.coin_agreement, 0.6323, 1e-12));
        assert!(close(g.coin_mean, -0.954079, 1e-6));
        assert!(dial(&n).ok, "{}", dial(&n).detail);
        // No honeypot screening: the best guesser rubber-stamps and profits.
        let unscreened = EconParams {
            honeypot_approval: 1.0,
            ..n
        };
        assert!(!dial(&unscreened).ok);
        // In a 3-seat panel a guesser's vote tips a third of the rounds: it profits.
        let small = EconParams { panel_k: 3, ..n };
        assert!(close(guesser_agreement(&small, 0.6).unwrap(), 0.738, 1e-12));
        assert!(!dial(&small).ok);
        // A threshold at or below eps_H would flag honest seats: the dial fails even
        // though the guesser it leaves through loses.
        let harsh = EconParams {
            honeypot_approval: 0.3,
            ..n
        };
        assert!(guesser_report(&harsh).unwrap().mean < 0.0);
        let d = dial(&harsh);
        assert!(!d.ok);
        assert!(
            d.detail.contains("honest seats would be flagged"),
            "{}",
            d.detail
        );
    }

    #[test]
    fn network_default_passes_every_economic_dial() {
        let n = EconParams::network_default();
        let dials = economic_dials(&n).unwrap();
        assert_eq!(dials.len(), 4);
        assert!(dials.iter().all(|d| d.ok), "{dials:?}");
        assert!(close(mu_min(&n).unwrap(), 0.258, 1e-12));
        assert!(close(p_min_required(&n).unwrap(), 0.638, 1e-12));
        // An honest human at the reputation it settles to out-earns the best guesser:
        // it agrees at least 0.7 of the time.
        assert!(mu_h(&n, 0.7).unwrap() > 0.3);
        // The price of a narrow window between honest and guesser: mu_min is small, so
        // Pr[U_hon(T) <= 0] <= e^-0.496 only (the paper's parameters give e^-203.77),
        // while the malicious bound tightens to e^-90.34.
        assert!(close(sigma2_h(&n).unwrap(), 96.089436, 1e-9));
        assert!(close(ln_honest_tail_bound(&n).unwrap(), -0.49610, 1e-5));
        assert!(close(ln_malicious_tail_bound(&n).unwrap(), -90.3403, 1e-4));
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
            msg(EconParams {
                base_rate: 1.5,
                ..paper()
            })
            .starts_with("base_rate must be")
        );
        assert!(
            msg(EconParams {
                honeypot_approval: 0.0,
                ..paper()
            })
            .starts_with("honeypot_approval must be")
        );
        assert!(
            msg(EconParams {
                panel_k: 0,
                ..paper()
            })
            .starts_with("panel_k must be")
        );
        assert!(
            msg(EconParams {
                panel_tau: 1.5,
                ..paper()
            })
            .starts_with("panel_tau must be")
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
        assert_eq!(r.dials.len(), 4);
        assert!(close(r.guesser.agreement, 0.75158, 1e-12));
        assert_eq!(fmt_num(3.0), "3");
        assert_eq!(fmt_num(1.0 / 3.0), "0.3333");
        assert_eq!(fmt_num(25.8), "25.8");
        assert_eq!(fmt_num(-0.00001), "0");
    }
}
