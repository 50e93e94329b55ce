//! A trace specification: auditor tiers with their seat counts, error rates and
//! weights, and the tier of every segment. The CLI reads it from JSON (quorum commands)
//! or TOML (the `[safety]` table of the economics check).
//!
//! ```json
//! {"tau": 0.5,
//!  "tiers": {"C": {"k": 1, "eps": 0, "rho": 0, "w": 1},
//!            "L": {"k": 3, "eps": 0.05, "rho": 0, "w": 2},
//!            "H": {"k": 5, "eps": 0.3, "rho": 0.1, "w": 3}},
//!  "segments": ["C", "L", "H"]}
//! ```

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    MathError, check_open_closed,
    segment::{quorum, segment_pass_probability},
    trace::{ExactSegment, MAX_SEGMENTS, MAX_TOTAL_WEIGHT},
};

/// Most tiers a specification may define.
pub const MAX_TIERS: usize = 64;

/// One auditor tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TierSpec {
    /// Seats per segment `k_t`.
    pub k: u32,
    /// Error rate of an honest seat `eps_t`.
    pub eps: f64,
    /// Probability that a seat is adversarial `rho_t` (0 when omitted; the paper has
    /// `rho_C = rho_L = 0`).
    #[serde(default)]
    pub rho: f64,
    /// Integer weight `w_t >= 1` of a segment of this tier in the trace verdict.
    pub w: u32,
}

/// A trace: vote threshold, tiers, and the tier of each segment in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TraceSpec {
    /// Vote threshold `tau` in `(0, 1]`; each tier's quorum is `ceil(tau k_t)`.
    pub tau: f64,
    /// Tiers by name (the paper's `C`, `L`, `H`, or any other names).
    pub tiers: BTreeMap<String, TierSpec>,
    /// The tier name of every segment.
    pub segments: Vec<String>,
}

/// A tier with its derived quorum and Lemma 1 pass probability.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedTier {
    /// Tier name.
    pub name: String,
    /// Seats `k_t`.
    pub k: u32,
    /// Quorum `q_t = ceil(tau k_t)`.
    pub q: u32,
    /// Error rate `eps_t`.
    pub eps: f64,
    /// Adversarial probability `rho_t`.
    pub rho: f64,
    /// Weight `w_t`.
    pub w: u32,
    /// Pass probability `p_t` (Lemma 1).
    pub p_pass: f64,
    /// How many segments of the trace have this tier.
    pub segments: usize,
}

/// A validated specification: per-tier results and the segment list ready for
/// [`crate::math::trace`].
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ResolvedSpec {
    /// Vote threshold `tau`.
    pub tau: f64,
    /// Tiers in name order.
    pub tiers: Vec<ResolvedTier>,
    /// Every segment with its tier's weight and pass probability.
    pub segments: Vec<ExactSegment>,
    /// `sum_s w_s`.
    pub total_weight: u64,
}

impl TraceSpec {
    /// The representative trace used as the default of `trust-node econ check` and in
    /// `examples/quorum/figure4.json`.
    ///
    /// The paper fixes only the error rates of Figure 4 (`eps_C = 0`, `eps_L = 0.05`,
    /// `eps_H = 0.30`, `rho_H = 0.1`); seat counts, weights and the segment mix are our
    /// choice: `k_C = 1, k_L = 3, k_H = 5`, `tau = 0.5`, weights 1/2/3, and 20 segments
    /// (7 computer, 7 LLM, 6 human, interleaved C, L, H).
    pub fn representative() -> Self {
        let tier = |k, eps, rho, w| TierSpec { k, eps, rho, w };
        let tiers = BTreeMap::from([
            ("C".to_owned(), tier(1, 0.0, 0.0, 1)),
            ("L".to_owned(), tier(3, 0.05, 0.0, 2)),
            ("H".to_owned(), tier(5, 0.30, 0.1, 3)),
        ]);
        let segments = ["C", "L", "H"]
            .iter()
            .cycle()
            .take(20)
            .map(|s| (*s).to_owned())
            .collect();
        Self {
            tau: 0.5,
            tiers,
            segments,
        }
    }

    /// Validates the specification and computes each tier's quorum and Lemma 1 pass
    /// probability. Limits: at most [`MAX_TIERS`] tiers, 1 to [`MAX_SEGMENTS`] segments,
    /// total weight at most [`MAX_TOTAL_WEIGHT`].
    pub fn resolve(&self) -> Result<ResolvedSpec, MathError> {
        let tau = check_open_closed("tau", self.tau, 0.0, 1.0)?;
        if self.tiers.is_empty() {
            return Err(MathError::NoTiers);
        }
        if self.tiers.len() > MAX_TIERS {
            return Err(MathError::TooLarge {
                what: "the number of tiers".into(),
                limit: MAX_TIERS as u64,
                got: self.tiers.len() as u64,
            });
        }
        if self.segments.is_empty() {
            return Err(MathError::NoSegments);
        }
        if self.segments.len() > MAX_SEGMENTS {
            return Err(MathError::TooLarge {
                what: "the number of segments".into(),
                limit: MAX_SEGMENTS as u64,
                got: self.segments.len() as u64,
            });
        }

        let mut tiers = Vec::with_capacity(self.tiers.len());
        for (name, t) in &self.tiers {
            let in_tier = |source: MathError| MathError::InTier {
                tier: name.clone(),
                source: Box::new(source),
            };
            if t.w == 0 {
                return Err(in_tier(MathError::TooSmall {
                    name: "w".into(),
                    min: 1,
                    got: 0,
                }));
            }
            let p_pass = segment_pass_probability(t.k, t.eps, t.rho, tau).map_err(in_tier)?;
            let q = quorum(t.k, tau).map_err(in_tier)?;
            tiers.push(ResolvedTier {
                name: name.clone(),
                k: t.k,
                q,
                eps: t.eps,
                rho: t.rho,
                w: t.w,
                p_pass,
                segments: 0,
            });
        }

        let mut segments = Vec::with_capacity(self.segments.len());
        let mut total = 0_u64;
        for (index, name) in self.segments.iter().enumerate() {
            let tier = tiers.iter_mut().find(|t| &t.name == name).ok_or_else(|| {
                MathError::UnknownTier {
                    tier: name.clone(),
                    index,
                }
            })?;
            tier.segments = tier.segments.saturating_add(1);
            total = total.saturating_add(u64::from(tier.w));
            segments.push(ExactSegment {
                weight: tier.w,
                p_pass: tier.p_pass,
            });
        }
        if total > MAX_TOTAL_WEIGHT {
            return Err(MathError::TooLarge {
                what: "the total weight".into(),
                limit: MAX_TOTAL_WEIGHT,
                got: total,
            });
        }
        Ok(ResolvedSpec {
            tau,
            tiers,
            segments,
            total_weight: total,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn representative_resolves() {
        let r = TraceSpec::representative().resolve().unwrap();
        assert_eq!(r.segments.len(), 20);
        assert_eq!(r.total_weight, 7 + 7 * 2 + 6 * 3);
        let c = &r.tiers[0];
        assert_eq!(
            (c.name.as_str(), c.q, c.p_pass, c.segments),
            ("C", 1, 1.0, 7)
        );
        let h = &r.tiers[1];
        assert_eq!((h.name.as_str(), h.q, h.segments), ("H", 3, 6));
        let l = &r.tiers[2];
        assert_eq!((l.name.as_str(), l.q, l.segments), ("L", 2, 7));
        assert!((l.p_pass - 0.99275).abs() < 1e-12);
    }

    #[test]
    fn parses_json_and_rejects_unknown_fields() {
        let json =
            r#"{"tau": 0.6, "tiers": {"H": {"k": 5, "eps": 0.3, "w": 3}}, "segments": ["H", "H"]}"#;
        let spec: TraceSpec = serde_json::from_str(json).unwrap();
        assert_eq!(spec.tiers["H"].rho, 0.0);
        let r = spec.resolve().unwrap();
        assert_eq!(r.tiers[0].q, 3);
        let bad = r#"{"tau": 0.6, "tiers": {}, "segments": [], "extra": 1}"#;
        assert!(serde_json::from_str::<TraceSpec>(bad).is_err());
        let bad =
            r#"{"tau": 0.6, "tiers": {"H": {"k": 5, "eps": 0.3, "w": 3, "x": 0}}, "segments": []}"#;
        assert!(serde_json::from_str::<TraceSpec>(bad).is_err());
    }

    #[test]
    fn errors_name_the_problem() {
        let mut spec = TraceSpec::representative();
        spec.segments[3] = "X".into();
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "unknown tier \"X\" in segments[3]"
        );

        let mut spec = TraceSpec::representative();
        spec.tiers.get_mut("H").unwrap().eps = 1.5;
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "tier \"H\": eps must be in [0, 1], got 1.5"
        );

        let mut spec = TraceSpec::representative();
        spec.tiers.get_mut("L").unwrap().k = 0;
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "tier \"L\": k must be at least 1, got 0"
        );

        let mut spec = TraceSpec::representative();
        spec.tiers.get_mut("C").unwrap().w = 0;
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "tier \"C\": w must be at least 1, got 0"
        );

        let mut spec = TraceSpec::representative();
        spec.tau = 0.0;
        assert_eq!(
            spec.resolve().unwrap_err().to_string(),
            "tau must be in (0, 1], got 0"
        );

        let mut spec = TraceSpec::representative();
        spec.segments.clear();
        assert_eq!(spec.resolve().unwrap_err(), MathError::NoSegments);

        let mut spec = TraceSpec::representative();
        spec.segments = vec!["H".into(); MAX_SEGMENTS + 1];
        assert!(
            spec.resolve()
                .unwrap_err()
                .to_string()
                .contains("number of segments")
        );

        let mut spec = TraceSpec::representative();
        spec.tiers.get_mut("H").unwrap().w = 1000;
        spec.segments = vec!["H".into(); 1001];
        assert!(
            spec.resolve()
                .unwrap_err()
                .to_string()
                .contains("total weight")
        );
    }
}
