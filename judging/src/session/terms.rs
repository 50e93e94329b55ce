//! What a provider asks of one session: the paper's dials, chosen per session and
//! checked against the network's genesis limits before anything is charged.
//!
//! [`SessionOptions`] is the same set of optional settings wherever it is given: the
//! `[session]` table of `config.toml` (this node's defaults), the fields of
//! `POST /v1/sessions`, and `trust-node submit`'s flags. A request's settings win over the
//! node's, the node's over the built-in defaults ([`SessionOptions::resolve`]), which keep
//! the sessions of a node that sets nothing as they always were: k = 3 seats per segment in
//! every tier, no racing seats, τ = β = 0.6, equal tier weights, every tier, the domain
//! `math` as a preference, the minimum fee, the network's windows, no exposure budget.
//!
//! Pure: no I/O. Staffing and the exposure budget need the network's auditors and the
//! trace: the provider's `plan` (in the node) applies them.

use serde::{Deserialize, Serialize};
use trust_contracts::Params;
use trust_protocol::{
    tx::{MAX_DOMAIN_BYTES, MAX_SEATS, MAX_WEIGHT, QuorumParams, SessionTerms, Tier},
    units::Ppm,
};

use crate::session::{prepare::TierWeights, tier_index, tier_name};

/// The domain a session prefers when nobody names one.
pub const DEFAULT_DOMAIN: &str = "math";

/// Optional per-session settings (all absent: the node's defaults).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SessionOptions {
    /// Seats whose votes count per segment, in every tier (`k`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seats: Option<u8>,
    /// Seats per Computer-tier segment (over `seats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computer_seats: Option<u8>,
    /// Seats per LLM-tier segment (over `seats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_seats: Option<u8>,
    /// Seats per Human-tier segment (over `seats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_seats: Option<u8>,
    /// Racing seats drawn beyond `k` per segment (`Δ`): the first `k` reveals count.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub racing_seats: Option<u8>,
    /// Seat quorum `τ` (0.5 up to the network's ceiling per tier, `max_tau`, 2/3 by
    /// default): a segment is decided by `ceil(τ k)` agreeing votes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tau: Option<f64>,
    /// Trace quorum `β` (0..=1): the share of the trace's weight that must pass.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub beta: Option<f64>,
    /// Weight of each Computer-tier segment in the trace quorum (1..=1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub computer_weight: Option<u32>,
    /// Weight of each LLM-tier segment (1..=1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub llm_weight: Option<u32>,
    /// Weight of each Human-tier segment (1..=1000).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub human_weight: Option<u32>,
    /// The tiers that may judge (`computer`, `llm`, `human`); segments routed to another
    /// tier are left out, and no escalation goes there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<String>>,
    /// Expertise domain of the seats (e.g. `medicine`). A domain named here is required:
    /// only auditors declaring it are drawn (unless `require_domain` is false).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub domain: Option<String>,
    /// Whether only auditors declaring the domain may be drawn (default: true when a
    /// domain is named, false for the built-in `math` preference).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require_domain: Option<bool>,
    /// The fee escrowed for rewards (default and least: one reward per counted seat).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fee: Option<u64>,
    /// Blocks each commit window stays open (default: the network's; at least the
    /// network's floor for each tier the session routes to, which the contract checks and
    /// the provider's node checks before it signs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_window: Option<u16>,
    /// Blocks each reveal window stays open (default: the network's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reveal_window: Option<u16>,
    /// The exposure budget (0..=1): the largest share of the trace's segments one
    /// auditor may receive keys or text of. Default 1 (only "never the whole trace").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_exposure: Option<f64>,
}

// Settings compare by value; a NaN fraction is refused by `resolve` before any use.
impl Eq for SessionOptions {}

/// Why a session's settings cannot be used: each names the limit it meets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TermsError {
    /// More seats than the network lets a session ask for.
    #[error("k = {asked} {tier} seats asked, the network allows at most {max} (genesis max_k)")]
    SeatsAboveMax {
        /// The tier.
        tier: &'static str,
        /// Seats asked.
        asked: u8,
        /// The limit.
        max: u8,
    },
    /// Zero seats.
    #[error("k = 0 {0} seats asked: a segment needs at least one seat")]
    NoSeats(&'static str),
    /// More racing seats than the network allows.
    #[error(
        "{asked} racing seats asked, the network allows at most {max} (genesis max_extra_seats)"
    )]
    RacingAboveMax {
        /// Asked.
        asked: u8,
        /// The limit.
        max: u8,
    },
    /// Seats and racing seats together over the protocol's limit.
    #[error(
        "k = {k} {tier} seats and {racing} racing seats: at most {MAX_SEATS} seats per segment"
    )]
    TooManySeats {
        /// The tier.
        tier: &'static str,
        /// Its k.
        k: u8,
        /// Racing seats.
        racing: u8,
    },
    /// A fraction outside its range.
    #[error("{name} = {value}: must be in {range}")]
    OutOfRange {
        /// The setting.
        name: &'static str,
        /// Its value as given.
        value: String,
        /// The allowed range.
        range: String,
    },
    /// A tier name nobody knows.
    #[error("unknown tier {0:?}: the tiers are computer, llm and human")]
    UnknownTier(String),
    /// No tier allowed.
    #[error("tiers: at least one tier must be allowed to judge")]
    NoTier,
    /// A weight outside 1..=1000.
    #[error("{tier} weight {weight}: must be 1..={MAX_WEIGHT}")]
    BadWeight {
        /// The tier.
        tier: &'static str,
        /// The weight.
        weight: u32,
    },
    /// A domain name the protocol cannot carry.
    #[error("domain {0:?}: at most {MAX_DOMAIN_BYTES} bytes, and not empty when required")]
    BadDomain(String),
    /// A window longer than the network allows, or shorter than the session can use.
    #[error("{name} = {asked} blocks: must be {min}..={max} (genesis max_window)")]
    BadWindow {
        /// Which window.
        name: &'static str,
        /// Asked.
        asked: u16,
        /// The shortest usable.
        min: u16,
        /// The limit.
        max: u64,
    },
}

/// Settings resolved and checked against the genesis limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    /// Seats and quorums.
    pub quorum: QuorumParams,
    /// Windows, budget, tiers, weights, domain requirement.
    pub terms: SessionTerms,
    /// The weight of each tier's segments.
    pub weights: TierWeights,
    /// Expertise domain.
    pub domain: String,
    /// The fee asked for, if any (the least fee otherwise).
    pub fee: Option<u64>,
    /// Per tier, whether its seats were asked for explicitly (a request or the node's
    /// `[session]` table): a tier with auditors but too few for explicit seats refuses the
    /// session instead of leaving its segments out.
    pub explicit_seats: [bool; 3],
}

fn fraction(name: &'static str, v: f64, min: f64, min_open: bool) -> Result<Ppm, TermsError> {
    let ok = v.is_finite() && v <= 1.0 && if min_open { v > min } else { v >= min };
    if !ok {
        let open = if min_open { "(" } else { "[" };
        return Err(TermsError::OutOfRange {
            name,
            value: v.to_string(),
            range: format!("{open}{min}, 1]"),
        });
    }
    // `v` is in [0, 1]: the product fits, and rounding keeps 0.6 at 600 000 ppm.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    Ok(Ppm((v * 1_000_000.0).round() as u32))
}

/// `tau` checked against the least tau ceiling of the allowed `tiers` (the contract's
/// [`trust_contracts::tau_ceiling`]): above it one seat could block a verdict, so the
/// contract refuses it. A value that is over only by the rounding of a fraction such as
/// 2/3 to parts per million is taken at the ceiling.
fn under_ceiling(
    tau: Ppm,
    asked: f64,
    min: f64,
    params: &Params,
    tiers: [bool; 3],
) -> Result<Ppm, TermsError> {
    let ceiling = Tier::ALL
        .into_iter()
        .filter(|t| tiers.get(tier_index(*t)).copied().unwrap_or(false))
        .map(|t| params.floors.max_tau(t))
        .min()
        .unwrap_or(Ppm::ONE);
    if tau <= ceiling {
        return Ok(tau);
    }
    if tau.0.saturating_sub(ceiling.0) <= 1 {
        return Ok(ceiling);
    }
    Err(TermsError::OutOfRange {
        name: "tau",
        value: asked.to_string(),
        range: format!(
            "[{min}, {}] (the network's ceiling: a higher seat quorum would let one seat block a verdict)",
            f64::from(ceiling.0) / 1_000_000.0
        ),
    })
}

/// Parses a tier name: `computer`, `llm` or `human`, any case.
pub fn parse_tier(s: &str) -> Result<Tier, TermsError> {
    match s.trim().to_ascii_lowercase().as_str() {
        "computer" => Ok(Tier::Computer),
        "llm" => Ok(Tier::Llm),
        "human" => Ok(Tier::Human),
        _ => Err(TermsError::UnknownTier(s.to_string())),
    }
}

impl SessionOptions {
    /// These settings over `base`: each one given here wins.
    pub fn over(&self, base: &SessionOptions) -> SessionOptions {
        macro_rules! pick {
            ($($f:ident),*) => { SessionOptions { $($f: self.$f.clone().or_else(|| base.$f.clone())),* } };
        }
        pick!(
            seats,
            computer_seats,
            llm_seats,
            human_seats,
            racing_seats,
            tau,
            beta,
            computer_weight,
            llm_weight,
            human_weight,
            tiers,
            domain,
            require_domain,
            fee,
            commit_window,
            reveal_window,
            max_exposure
        )
    }

    /// Whether any setting is given.
    pub fn is_empty(&self) -> bool {
        *self == SessionOptions::default()
    }

    /// The settings with the built-in defaults for what is not given, checked against the
    /// network's genesis `params`.
    pub fn resolve(&self, params: &Params) -> Result<Resolved, TermsError> {
        let per_tier = [self.computer_seats, self.llm_seats, self.human_seats];
        let mut k = [3u8; 3];
        let mut explicit_seats = [false; 3];
        let racing = self.racing_seats.unwrap_or(0);
        if racing > params.max_extra_seats {
            return Err(TermsError::RacingAboveMax {
                asked: racing,
                max: params.max_extra_seats,
            });
        }
        for tier in Tier::ALL {
            let i = tier_index(tier);
            let asked = per_tier.get(i).copied().flatten().or(self.seats);
            if let Some(a) = asked {
                if let Some(slot) = k.get_mut(i) {
                    *slot = a;
                }
                if let Some(e) = explicit_seats.get_mut(i) {
                    *e = true;
                }
            }
            let ki = k.get(i).copied().unwrap_or(0);
            if ki == 0 {
                return Err(TermsError::NoSeats(tier_name(tier)));
            }
            if ki > params.max_k(tier) {
                return Err(TermsError::SeatsAboveMax {
                    tier: tier_name(tier),
                    asked: ki,
                    max: params.max_k(tier),
                });
            }
            if ki.saturating_add(racing) > MAX_SEATS {
                return Err(TermsError::TooManySeats {
                    tier: tier_name(tier),
                    k: ki,
                    racing,
                });
            }
        }
        let min_tau = f64::from(params.min_tau.0) / 1_000_000.0;
        let tau = fraction("tau", self.tau.unwrap_or(0.6), min_tau, false)?;
        let beta = fraction("beta", self.beta.unwrap_or(0.6), 0.0, true)?;
        let max_exposure = fraction("max_exposure", self.max_exposure.unwrap_or(1.0), 0.0, true)?;
        let weights = TierWeights {
            computer: self.computer_weight.unwrap_or(1),
            llm: self.llm_weight.unwrap_or(1),
            human: self.human_weight.unwrap_or(1),
        };
        for tier in Tier::ALL {
            let w = weights.of(tier);
            if w == 0 || w > MAX_WEIGHT {
                return Err(TermsError::BadWeight {
                    tier: tier_name(tier),
                    weight: w,
                });
            }
        }
        let tiers = match &self.tiers {
            None => [true; 3],
            Some(names) => {
                let mut t = [false; 3];
                for n in names {
                    let tier = parse_tier(n)?;
                    if let Some(slot) = t.get_mut(tier_index(tier)) {
                        *slot = true;
                    }
                }
                if !t.contains(&true) {
                    return Err(TermsError::NoTier);
                }
                t
            }
        };
        let tau = under_ceiling(tau, self.tau.unwrap_or(0.6), min_tau, params, tiers)?;
        let named = self.domain.clone();
        let domain = named.clone().unwrap_or_else(|| DEFAULT_DOMAIN.to_string());
        let domain_required = self.require_domain.unwrap_or(named.is_some());
        if domain.len() > MAX_DOMAIN_BYTES || (domain_required && domain.trim().is_empty()) {
            return Err(TermsError::BadDomain(domain));
        }
        let window = |name: &'static str, w: Option<u16>, min: u16| -> Result<u16, TermsError> {
            match w {
                None => Ok(0),
                Some(w) if w < min || u64::from(w) > params.max_window => {
                    Err(TermsError::BadWindow {
                        name,
                        asked: w,
                        min,
                        max: params.max_window,
                    })
                }
                Some(w) => Ok(w),
            }
        };
        Ok(Resolved {
            quorum: QuorumParams {
                k,
                extra_seats: racing,
                tau,
                beta,
            },
            terms: SessionTerms {
                commit_window: window("commit_window", self.commit_window, 1)?,
                reveal_window: window("reveal_window", self.reveal_window, 1)?,
                max_exposure,
                tiers,
                tier_weights: [weights.computer, weights.llm, weights.human],
                domain_required,
            },
            weights,
            domain,
            fee: self.fee,
            explicit_seats,
        })
    }
}

impl Resolved {
    /// Seats drawn per segment of `tier` (`k + Δ`).
    pub fn seats(&self, tier: Tier) -> usize {
        usize::from(self.quorum.k(tier)).saturating_add(usize::from(self.quorum.extra_seats))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_set_keeps_todays_sessions() {
        let r = SessionOptions::default()
            .resolve(&Params::default())
            .expect("defaults");
        assert_eq!(r.quorum, crate::session::DEFAULT_QUORUM);
        assert_eq!(r.terms, SessionTerms::default());
        assert_eq!(r.domain, "math");
        assert_eq!(r.weights, TierWeights::EQUAL);
        assert_eq!(r.fee, None);
        assert_eq!(r.explicit_seats, [false; 3]);
    }

    #[test]
    fn a_request_wins_over_the_node_and_the_node_over_the_defaults() {
        let node = SessionOptions {
            seats: Some(4),
            beta: Some(0.7),
            ..SessionOptions::default()
        };
        let req = SessionOptions {
            llm_seats: Some(2),
            beta: Some(0.8),
            domain: Some("medicine".into()),
            ..SessionOptions::default()
        };
        let r = req.over(&node).resolve(&Params::default()).expect("ok");
        assert_eq!(r.quorum.k, [4, 2, 4]);
        assert_eq!(r.quorum.beta, Ppm(800_000));
        assert_eq!(r.domain, "medicine");
        assert!(r.terms.domain_required, "a named domain is required");
        assert_eq!(r.explicit_seats, [true; 3]);
    }

    #[test]
    fn each_limit_is_named() {
        let p = Params::default();
        let err = |o: SessionOptions| o.resolve(&p).expect_err("refused").to_string();
        assert_eq!(
            err(SessionOptions {
                computer_seats: Some(20),
                ..SessionOptions::default()
            }),
            "k = 20 Computer seats asked, the network allows at most 15 (genesis max_k)"
        );
        assert!(
            err(SessionOptions {
                tau: Some(0.4),
                ..SessionOptions::default()
            })
            .starts_with("tau = 0.4: must be in [0.5, 1]")
        );
        assert!(
            err(SessionOptions {
                beta: Some(1.5),
                ..SessionOptions::default()
            })
            .contains("beta = 1.5")
        );
        assert!(
            err(SessionOptions {
                racing_seats: Some(9),
                ..SessionOptions::default()
            })
            .contains("at most 8")
        );
        assert!(
            err(SessionOptions {
                commit_window: Some(5000),
                ..SessionOptions::default()
            })
            .contains("commit_window = 5000 blocks: must be 1..=1000")
        );
        // Short windows resolve: the network's floors per tier are the contract's to
        // check, against the tiers the session routes to, before anything is signed.
        assert!(
            SessionOptions {
                commit_window: Some(1),
                reveal_window: Some(1),
                ..SessionOptions::default()
            }
            .resolve(&Params::default())
            .is_ok()
        );
        assert!(
            err(SessionOptions {
                tiers: Some(vec!["robot".into()]),
                ..SessionOptions::default()
            })
            .contains("unknown tier")
        );
        assert!(
            err(SessionOptions {
                max_exposure: Some(0.0),
                ..SessionOptions::default()
            })
            .contains("max_exposure")
        );
        assert!(
            err(SessionOptions {
                llm_weight: Some(0),
                ..SessionOptions::default()
            })
            .contains("LLM weight 0")
        );
    }

    #[test]
    fn fractions_round_to_parts_per_million() {
        let r = SessionOptions {
            tau: Some(2.0 / 3.0),
            max_exposure: Some(0.5),
            tiers: Some(vec!["Computer".into(), "LLM".into()]),
            ..SessionOptions::default()
        }
        .resolve(&Params::default())
        .expect("ok");
        assert_eq!(r.quorum.tau, Ppm(666_666), "2/3 is taken at the ceiling");
        assert_eq!(r.terms.max_exposure, Ppm(500_000));
        assert_eq!(r.terms.tiers, [true, true, false]);
    }

    /// The adversary's term: a provider asking for tau = 1 (one abstaining seat would block
    /// every verdict) is refused before anything is signed, with the ceiling named.
    #[test]
    fn a_tau_above_the_ceiling_is_refused_naming_it() {
        for tau in [1.0, 0.9, 0.75] {
            let e = SessionOptions {
                tau: Some(tau),
                ..SessionOptions::default()
            }
            .resolve(&Params::default())
            .expect_err("above the ceiling");
            let text = e.to_string();
            assert!(
                text.starts_with(&format!("tau = {tau}: must be in [0.5, 0.666666]")),
                "{text}"
            );
        }
    }
}
