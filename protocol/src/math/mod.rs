//! The paper's quorum and economics math.
//!
//! Three layers, each a plain function of its parameters:
//!
//! - [`segment`]: the per-tier quorum `q_t = ceil(tau k_t)` and Lemma 1, the exact
//!   probability that a segment's seats reach quorum on the correct verdict.
//! - [`trace`]: the weighted trace verdict `W = sum_s w_s B_s` against
//!   `W_beta = beta sum_s w_s`: its moments (eq. 2), the Hoeffding and Chernoff bounds of
//!   Proposition 1, and the exact `Pr[W < W_beta]` by dynamic programming over integer
//!   weights.
//! - [`econ`]: Theorem 1, reputation-weighted slashing (eqs. 4 to 7), the honest and
//!   malicious tail bounds, and the economic and statistical dials.
//!
//! [`spec`] holds the serde shape of a trace specification (tiers and a segment list)
//! shared by the CLI's quorum and economics commands.
//!
//! Floats are used throughout: this is analysis, and nothing in consensus state depends
//! on it. Every function validates its parameters and returns [`MathError`] naming the
//! bad one instead of producing NaN.

pub mod econ;
pub mod segment;
pub mod spec;
pub mod trace;

pub use econ::{
    Dial, EconParams, EconReport, StatisticalDial, alpha, econ_report, economic_dials,
    ln_honest_tail_bound, ln_malicious_tail_bound, malicious_mean, malicious_variance, mu_h,
    mu_min, p_min_required, p_slash, payoff_variance, r_dial_threshold, range_bound_b,
    reputation_update, sigma2_h, statistical_dial,
};
pub use segment::{MAX_SEATS, quorum, segment_pass_probability};
pub use spec::{MAX_TIERS, ResolvedSpec, ResolvedTier, TierSpec, TraceSpec};
pub use trace::{
    Bound, ChernoffBound, ExactSegment, MAX_DP_WORK, MAX_SEGMENTS, MAX_TOTAL_WEIGHT, TraceAnalysis,
    TraceModel, TraceMoments, WeightDistribution, WeightedSegment, chernoff_bound,
    chernoff_objective, exact_failure_probability, hoeffding_bound, trace_analysis, trace_moments,
    w_beta,
};

/// Why a math function rejected its input.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum MathError {
    /// A real parameter lies outside its domain (or is NaN / infinite).
    #[error("{name} must be {expected}, got {got}")]
    OutOfRange {
        /// The parameter's name as the paper writes it (`eps`, `tau`, `p_min`, ...).
        name: String,
        /// The domain, e.g. `in [0, 1]`.
        expected: String,
        /// The rejected value.
        got: f64,
    },
    /// An integer parameter is below its minimum.
    #[error("{name} must be at least {min}, got {got}")]
    TooSmall {
        /// The parameter's name.
        name: String,
        /// The smallest accepted value.
        min: u64,
        /// The rejected value.
        got: u64,
    },
    /// An input exceeds a size limit that keeps the computation bounded.
    #[error("{what} is {got}, more than the limit of {limit}")]
    TooLarge {
        /// What was counted.
        what: String,
        /// The limit.
        limit: u64,
        /// The rejected size.
        got: u64,
    },
    /// A trace has no segments.
    #[error("segments must not be empty")]
    NoSegments,
    /// A segment names a tier the specification does not define.
    #[error("unknown tier \"{tier}\" in segments[{index}]")]
    UnknownTier {
        /// The unknown tier name.
        tier: String,
        /// Position in the segment list.
        index: usize,
    },
    /// A tier's parameters are invalid.
    #[error("tier \"{tier}\": {source}")]
    InTier {
        /// The tier name.
        tier: String,
        /// What is wrong with it.
        #[source]
        source: Box<MathError>,
    },
    /// The specification defines no tiers.
    #[error("tiers must not be empty")]
    NoTiers,
}

impl MathError {
    fn out_of_range(name: &str, expected: impl Into<String>, got: f64) -> Self {
        Self::OutOfRange {
            name: name.to_owned(),
            expected: expected.into(),
            got,
        }
    }
}

/// Checks `lo <= x <= hi` (and that `x` is finite).
fn check_closed(name: &str, x: f64, lo: f64, hi: f64) -> Result<f64, MathError> {
    if x.is_finite() && (lo..=hi).contains(&x) {
        Ok(x)
    } else {
        Err(MathError::out_of_range(name, format!("in [{lo}, {hi}]"), x))
    }
}

/// Checks `lo < x < hi`.
fn check_open(name: &str, x: f64, lo: f64, hi: f64) -> Result<f64, MathError> {
    if x.is_finite() && x > lo && x < hi {
        Ok(x)
    } else {
        Err(MathError::out_of_range(name, format!("in ({lo}, {hi})"), x))
    }
}

/// Checks `lo < x <= hi`.
fn check_open_closed(name: &str, x: f64, lo: f64, hi: f64) -> Result<f64, MathError> {
    if x.is_finite() && x > lo && x <= hi {
        Ok(x)
    } else {
        Err(MathError::out_of_range(name, format!("in ({lo}, {hi}]"), x))
    }
}

/// Checks `x > 0` and finite.
fn check_positive(name: &str, x: f64) -> Result<f64, MathError> {
    if x.is_finite() && x > 0.0 {
        Ok(x)
    } else {
        Err(MathError::out_of_range(name, "positive and finite", x))
    }
}
