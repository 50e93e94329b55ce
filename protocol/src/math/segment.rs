//! Segment layer: per-tier quorum and Lemma 1, the exact segment pass probability.
//!
//! A segment of tier `t` has `k_t` seats. Each seat is malicious with probability
//! `rho_t` (and then always votes wrong); an honest seat votes correctly with
//! probability `1 - eps_t`. The segment passes (`B_s = 1`) when at least
//! `q_t = ceil(tau k_t)` votes are correct.

use super::{MathError, check_closed, check_open_closed};

/// Most seats per segment accepted by [`segment_pass_probability`]; the double sum costs
/// `O(k^2)`.
pub const MAX_SEATS: u32 = 1000;

/// Slack that keeps `tau * k` from rounding up past an integer it equals in exact
/// arithmetic (0.6 * 5 is 3.0000000000000004 in binary floating point).
const QUORUM_SLACK: f64 = 1e-9;

fn check_k(k: u32) -> Result<u32, MathError> {
    if k == 0 {
        return Err(MathError::TooSmall {
            name: "k".into(),
            min: 1,
            got: 0,
        });
    }
    if k > MAX_SEATS {
        return Err(MathError::TooLarge {
            what: "k".into(),
            limit: u64::from(MAX_SEATS),
            got: u64::from(k),
        });
    }
    Ok(k)
}

/// The per-tier quorum `q_t = ceil(tau k_t)` (Section "Segment layer", Lemma 1).
///
/// Computed as `ceil(tau k - 1e-9)` so that products which are integers in exact
/// arithmetic are not pushed up by binary rounding (`tau = 0.6, k = 5` gives 3), and
/// clamped to `[1, k]`. Requires `1 <= k <= MAX_SEATS` and `tau` in `(0, 1]`.
pub fn quorum(k: u32, tau: f64) -> Result<u32, MathError> {
    let k = check_k(k)?;
    let tau = check_open_closed("tau", tau, 0.0, 1.0)?;
    let raw = (tau * f64::from(k) - QUORUM_SLACK).ceil();
    // `raw` lies in (-1, k]; the float-to-int cast saturates, and the clamp keeps at
    // least one correct vote required.
    let q = raw.max(1.0) as u32;
    Ok(q.clamp(1, k))
}

/// The probability mass function of Binomial(`n`, `p`) as a vector of length `n + 1`,
/// built by Pascal's recurrence (only additions and products of non-negative numbers,
/// so tiny tail masses keep their relative precision).
fn binomial_pmfs(n: u32, p: f64) -> Vec<Vec<f64>> {
    let mut all = Vec::with_capacity((n as usize).saturating_add(1));
    let mut cur = vec![1.0_f64];
    for _ in 0..n {
        let mut next: Vec<f64> = cur
            .iter()
            .map(|v| v * (1.0 - p))
            .chain(std::iter::once(0.0))
            .collect();
        for (nx, c) in next.iter_mut().skip(1).zip(cur.iter()) {
            *nx += c * p;
        }
        all.push(std::mem::replace(&mut cur, next));
    }
    all.push(cur);
    all
}

/// Lemma 1: the exact segment pass probability
///
/// `p_t = sum_{m=0}^{k} C(k, m) rho^m (1-rho)^{k-m} sum_{c=q}^{k-m} C(k-m, c) (1-eps)^c eps^{k-m-c}`
///
/// with `q = ceil(tau k)` ([`quorum`]): `m` malicious seats always vote wrong, and among
/// the `k - m` honest seats `c` vote correctly. Each binomial term is computed by
/// Pascal's recurrence, so `0^0 = 1` holds at `eps = 0` or `rho = 0`.
///
/// Requires `1 <= k <= MAX_SEATS`, `eps` and `rho` in `[0, 1]`, `tau` in `(0, 1]`.
pub fn segment_pass_probability(k: u32, eps: f64, rho: f64, tau: f64) -> Result<f64, MathError> {
    let q = quorum(k, tau)?;
    let eps = check_closed("eps", eps, 0.0, 1.0)?;
    let rho = check_closed("rho", rho, 0.0, 1.0)?;

    // honest[n][c] = C(n, c) (1-eps)^c eps^(n-c), for n = 0..=k.
    let honest = binomial_pmfs(k, 1.0 - eps);
    // malicious[m] = C(k, m) rho^m (1-rho)^(k-m).
    let malicious = binomial_pmfs(k, rho).pop().unwrap_or_default();

    let q = q as usize;
    let total: f64 = malicious
        .iter()
        .enumerate()
        .map(|(m, pm)| {
            let n = (k as usize).saturating_sub(m);
            let tail: f64 = honest
                .get(n)
                .map(|row| row.iter().skip(q).sum())
                .unwrap_or(0.0);
            pm * tail
        })
        .sum();
    Ok(total.clamp(0.0, 1.0))
}

#[cfg(test)]
mod tests {
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    use super::*;

    #[test]
    fn quorum_is_ceil_tau_k_without_float_drift() {
        assert_eq!(quorum(5, 0.6).unwrap(), 3);
        assert_eq!(quorum(1, 0.5).unwrap(), 1);
        assert_eq!(quorum(3, 0.5).unwrap(), 2);
        assert_eq!(quorum(4, 0.5).unwrap(), 2);
        assert_eq!(quorum(10, 0.7).unwrap(), 7);
        assert_eq!(quorum(10, 0.3).unwrap(), 3);
        assert_eq!(quorum(3, 2.0 / 3.0).unwrap(), 2);
        assert_eq!(quorum(5, 0.51).unwrap(), 3);
        assert_eq!(quorum(7, 1.0).unwrap(), 7);
        assert_eq!(quorum(7, 1e-12).unwrap(), 1);
        // Every tenth of tau against every k up to 100, checked in integers.
        for tenths in 1..=10_u32 {
            for k in 1..=100_u32 {
                let want = (tenths * k).div_ceil(10);
                assert_eq!(
                    quorum(k, f64::from(tenths) / 10.0).unwrap(),
                    want,
                    "{tenths} {k}"
                );
            }
        }
    }

    #[test]
    fn quorum_rejects_bad_input() {
        assert_eq!(
            quorum(0, 0.5).unwrap_err().to_string(),
            "k must be at least 1, got 0"
        );
        assert_eq!(
            quorum(3, 0.0).unwrap_err().to_string(),
            "tau must be in (0, 1], got 0"
        );
        assert!(quorum(3, 1.5).is_err());
        assert!(quorum(3, f64::NAN).is_err());
        assert!(quorum(MAX_SEATS + 1, 0.5).is_err());
    }

    #[test]
    fn lemma1_closed_forms() {
        // Noiseless computer seat.
        assert_eq!(segment_pass_probability(1, 0.0, 0.0, 0.5).unwrap(), 1.0);
        // Three LLM seats, majority of 2: 3 (0.95)^2 0.05 + 0.95^3.
        let p = segment_pass_probability(3, 0.05, 0.0, 0.5).unwrap();
        assert!((p - (3.0 * 0.95_f64.powi(2) * 0.05 + 0.95_f64.powi(3))).abs() < 1e-15);
        // With malice, each seat is correct independently w.p. (1-rho)(1-eps).
        let s: f64 = 0.9 * 0.7;
        let want: f64 = (3..=5)
            .map(|c| {
                let binom = [1.0, 5.0, 10.0, 10.0, 5.0, 1.0][c];
                binom * s.powi(c as i32) * (1.0 - s).powi(5 - c as i32)
            })
            .sum();
        let p = segment_pass_probability(5, 0.3, 0.1, 0.5).unwrap();
        assert!((p - want).abs() < 1e-14, "{p} vs {want}");
        // Everyone malicious or always wrong: never passes.
        assert_eq!(segment_pass_probability(4, 0.2, 1.0, 0.5).unwrap(), 0.0);
        assert_eq!(segment_pass_probability(4, 1.0, 0.0, 0.5).unwrap(), 0.0);
    }

    #[test]
    fn lemma1_large_k_stays_finite() {
        let p = segment_pass_probability(MAX_SEATS, 0.3, 0.1, 0.5).unwrap();
        assert!(p > 0.999_999 && p <= 1.0, "{p}");
        // 750 of 1000 correct when each is correct w.p. 0.63: about 7.9 sd above the mean.
        let p = segment_pass_probability(MAX_SEATS, 0.3, 0.1, 0.75).unwrap();
        assert!(p > 0.0 && p < 1e-12, "{p}");
    }

    #[test]
    fn lemma1_rejects_bad_input() {
        assert_eq!(
            segment_pass_probability(3, 1.5, 0.0, 0.5)
                .unwrap_err()
                .to_string(),
            "eps must be in [0, 1], got 1.5"
        );
        assert_eq!(
            segment_pass_probability(3, 0.1, -0.1, 0.5)
                .unwrap_err()
                .to_string(),
            "rho must be in [0, 1], got -0.1"
        );
        assert!(segment_pass_probability(0, 0.1, 0.1, 0.5).is_err());
        assert!(segment_pass_probability(3, 0.1, 0.1, 0.0).is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config {
            cases: 64,
            rng_seed: proptest::test_runner::RngSeed::Fixed(0x7275_7374),
            failure_persistence: None,
            ..proptest::test_runner::Config::default()
        })]

        /// Lemma 1 agrees with a seeded Monte Carlo simulation of the seats.
        #[test]
        fn lemma1_matches_monte_carlo(
            k in 1_u32..=12,
            eps in 0.0_f64..=1.0,
            rho in 0.0_f64..=1.0,
            tau in 0.05_f64..=1.0,
            seed in proptest::prelude::any::<u64>(),
        ) {
            let p = segment_pass_probability(k, eps, rho, tau).unwrap();
            let q = quorum(k, tau).unwrap();
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let trials = 20_000_u32;
            let mut passes = 0_u32;
            for _ in 0..trials {
                let mut correct = 0;
                for _ in 0..k {
                    let malicious = rng.gen_bool(rho);
                    if !malicious && rng.gen_bool(1.0 - eps) {
                        correct += 1;
                    }
                }
                if correct >= q {
                    passes += 1;
                }
            }
            let n = f64::from(trials);
            let estimate = f64::from(passes) / n;
            let se = (p * (1.0 - p) / n).sqrt();
            proptest::prop_assert!(
                (estimate - p).abs() <= 5.0 * se + 1e-3,
                "k={k} eps={eps} rho={rho} tau={tau}: lemma {p}, monte carlo {estimate}"
            );
        }

        /// The pass probability is a probability, and more seats wrong never helps.
        #[test]
        fn lemma1_is_monotone_in_eps(k in 1_u32..=30, e1 in 0.0_f64..=1.0, e2 in 0.0_f64..=1.0, rho in 0.0_f64..=1.0) {
            let (lo, hi) = if e1 <= e2 { (e1, e2) } else { (e2, e1) };
            let p_lo = segment_pass_probability(k, lo, rho, 0.5).unwrap();
            let p_hi = segment_pass_probability(k, hi, rho, 0.5).unwrap();
            proptest::prop_assert!((0.0..=1.0).contains(&p_lo));
            proptest::prop_assert!(p_hi <= p_lo + 1e-12);
        }
    }
}
