//! `trust-node econ`: checks reward, penalty and slashing parameters against the
//! paper's Theorem 1 (safety-profitability guarantee) and prints the honest and
//! malicious tail bounds behind it, plus the guesser dial: a seat that votes without
//! looking must lose money.

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde::Deserialize;
use serde_json::json;
use trust_protocol::math::{
    Dial, EconParams, EconReport, ResolvedSpec, StatisticalDial, TraceAnalysis, TraceModel,
    TraceSpec, econ_report, statistical_dial,
};

use crate::cli::{
    CliError, CliResult,
    quorum::{fmt_bound, fmt_num, fmt_prob, print_json, print_tiers, print_trace, trace_json},
    read_input_file,
};

/// Largest config file read, in bytes.
const MAX_CONFIG_BYTES: u64 = 4 * 1024 * 1024;

/// Default target probability that any trace fails within the horizon.
///
/// With the representative trace ([`TraceSpec::representative`]: 20 segments, weights
/// 1/2/3, total 39, `mu_vote = 34.09`, `sigma_max^2 = 89`) and `lambda T = 1440`,
/// `eps_target = 0.01` requires a gap of 22.99, so `beta = 0.25` (`W_beta = 9.75`, gap
/// 24.34) passes and any `beta` above 0.2846 fails: Hoeffding with `sum w^2` is
/// conservative for short traces.
const DEFAULT_EPSILON_TARGET: f64 = 0.01;
/// Default trace-level quorum fraction for the statistical dial (see above).
const DEFAULT_BETA: f64 = 0.25;

/// Arguments of `trust-node econ`.
#[derive(Debug, clap::Args)]
pub struct EconArgs {
    #[command(subcommand)]
    command: EconCommand,
}

/// `trust-node econ` subcommands.
#[derive(Debug, Subcommand)]
enum EconCommand {
    /// Evaluate Theorem 1 for a parameter set and report every dial.
    ///
    /// Computes the honest seat's minimum expected payoff mu_min, the payoff variance
    /// bound sigma_H^2 (eq. 7), the tail bounds Pr[U_hon(T) <= 0] and Pr[U_mal(T) >= 0],
    /// the malicious seat's expected loss, and checks the economic dial (eq. 9: R large
    /// enough, p_min >= delta/(1-alpha)), the guesser dial (the best seat voting without
    /// looking that the honeypot rule lets through loses money at the reputation it
    /// settles to) and the statistical dial (eq. 8) on a trace.
    /// Exit code 0 when every dial passes, 1 when one fails, 2 on a bad config.
    Check(CheckArgs),
}

/// Arguments of `trust-node econ check`.
#[derive(Debug, clap::Args)]
struct CheckArgs {
    /// TOML config. Every key is optional; missing ones take the paper's worked example:
    /// reward (R) = 6, penalty (P) = 8, p_min = 0.2, p_max = 0.5, delta = 0.2,
    /// lambda = 60 segments per hour, horizon (T) = 24 hours, eps_h (eps_H) = 0.3,
    /// gamma = 0.1; for the guesser dial base_rate (v) = 0.85, honeypot_approval (theta)
    /// = 0.8, panel_k = 5, panel_tau = 0.6. An optional [safety] table sets epsilon_target, beta and an inline
    /// trace spec ([safety.spec] with tau, tiers, segments) for the statistical dial;
    /// by default epsilon_target = 0.01, beta = 0.25 and a 20-segment trace with the
    /// Figure 4 error rates (examples/quorum/figure4.json). Unknown keys are an error.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// The TOML config of `econ check`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct EconConfig {
    #[serde(alias = "R")]
    reward: Option<f64>,
    #[serde(alias = "P")]
    penalty: Option<f64>,
    p_min: Option<f64>,
    p_max: Option<f64>,
    delta: Option<f64>,
    lambda: Option<f64>,
    #[serde(alias = "T")]
    horizon: Option<f64>,
    #[serde(alias = "eps_H")]
    eps_h: Option<f64>,
    gamma: Option<f64>,
    #[serde(alias = "v")]
    base_rate: Option<f64>,
    #[serde(alias = "theta")]
    honeypot_approval: Option<f64>,
    panel_k: Option<u32>,
    panel_tau: Option<f64>,
    safety: Option<SafetyConfig>,
}

/// The `[safety]` table: inputs of the statistical dial.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct SafetyConfig {
    epsilon_target: Option<f64>,
    beta: Option<f64>,
    spec: Option<TraceSpec>,
}

impl EconConfig {
    fn params(&self) -> EconParams {
        let d = EconParams::paper_example();
        EconParams {
            reward: self.reward.unwrap_or(d.reward),
            penalty: self.penalty.unwrap_or(d.penalty),
            p_min: self.p_min.unwrap_or(d.p_min),
            p_max: self.p_max.unwrap_or(d.p_max),
            delta: self.delta.unwrap_or(d.delta),
            lambda: self.lambda.unwrap_or(d.lambda),
            horizon: self.horizon.unwrap_or(d.horizon),
            eps_h: self.eps_h.unwrap_or(d.eps_h),
            gamma: self.gamma.unwrap_or(d.gamma),
            base_rate: self.base_rate.unwrap_or(d.base_rate),
            honeypot_approval: self.honeypot_approval.unwrap_or(d.honeypot_approval),
            panel_k: self.panel_k.unwrap_or(d.panel_k),
            panel_tau: self.panel_tau.unwrap_or(d.panel_tau),
        }
    }
}

/// Loads the config, or the defaults when no file is given.
fn load_config(path: Option<&Path>) -> Result<EconConfig, CliError> {
    let Some(path) = path else {
        return Ok(EconConfig::default());
    };
    let text = read_input_file(path, MAX_CONFIG_BYTES)?;
    toml::from_str(&text).map_err(|e| {
        let line = e.span().map(|s| {
            let upto = text.get(..s.start).unwrap_or("");
            upto.matches('\n').count().saturating_add(1)
        });
        let msg = e.message().replace('\n', " ");
        match line {
            Some(l) => CliError::usage(format!("config {}: line {l}: {msg}", path.display())),
            None => CliError::usage(format!("config {}: {msg}", path.display())),
        }
    })
}

/// The statistical dial's inputs and results.
struct Safety {
    spec: ResolvedSpec,
    analysis: TraceAnalysis,
    dial: StatisticalDial,
}

fn evaluate_safety(
    params: &EconParams,
    cfg: Option<&SafetyConfig>,
    source: &str,
) -> Result<Safety, CliError> {
    let epsilon_target = cfg
        .and_then(|s| s.epsilon_target)
        .unwrap_or(DEFAULT_EPSILON_TARGET);
    let beta = cfg.and_then(|s| s.beta).unwrap_or(DEFAULT_BETA);
    let spec = cfg
        .and_then(|s| s.spec.clone())
        .unwrap_or_else(TraceSpec::representative)
        .resolve()
        .map_err(|e| CliError::usage(format!("{source}: safety.spec: {e}")))?;
    let bad = |e: trust_protocol::math::MathError| CliError::usage(format!("{source}: safety.{e}"));
    let model = TraceModel::new(&spec.segments)
        .map_err(|e| CliError::usage(format!("{source}: safety.spec: {e}")))?;
    let analysis = model.analyse(beta).map_err(bad)?;
    let dial = statistical_dial(params, &analysis, epsilon_target).map_err(bad)?;
    Ok(Safety {
        spec,
        analysis,
        dial,
    })
}

/// Runs the command.
pub fn run(args: EconArgs) -> CliResult {
    match args.command {
        EconCommand::Check(a) => check(&a),
    }
}

fn check(a: &CheckArgs) -> CliResult {
    let cfg = load_config(a.config.as_deref())?;
    let source = a.config.as_ref().map_or_else(
        || "default config".to_owned(),
        |p| format!("config {}", p.display()),
    );
    let params = cfg.params();
    let report = econ_report(&params).map_err(|e| CliError::usage(format!("{source}: {e}")))?;
    let safety = evaluate_safety(&params, cfg.safety.as_ref(), &source)?;

    let mut dials: Vec<Dial> = report.dials.clone();
    dials.push(safety.dial.dial());

    if a.json {
        print_json(&report_json(&report, &safety, &dials));
    } else {
        print_text(&report, &safety, &dials, &source);
    }

    let failed: Vec<&str> = dials
        .iter()
        .filter(|d| !d.ok)
        .map(|d| d.name.as_str())
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(CliError::failed(format!(
            "{} of {} dials failed: {}",
            failed.len(),
            dials.len(),
            failed.join(", ")
        )))
    }
}

fn report_json(r: &EconReport, s: &Safety, dials: &[Dial]) -> serde_json::Value {
    let p = &r.params;
    let mut safety = trace_json(&s.spec, &s.analysis);
    if let Some(obj) = safety.as_object_mut() {
        let d = &s.dial;
        obj.insert("epsilon_target".into(), json!(d.epsilon_target));
        obj.insert("ln_ratio".into(), json!(d.ln_ratio));
        obj.insert("required_gap".into(), json!(d.required_gap));
        obj.insert("actual_gap".into(), json!(d.actual_gap));
        obj.insert("per_trace_target".into(), json!(d.per_trace_target));
    }
    json!({
        "params": {
            "reward": p.reward,
            "penalty": p.penalty,
            "p_min": p.p_min,
            "p_max": p.p_max,
            "delta": p.delta,
            "lambda": p.lambda,
            "horizon": p.horizon,
            "eps_h": p.eps_h,
            "gamma": p.gamma,
            "base_rate": p.base_rate,
            "honeypot_approval": p.honeypot_approval,
            "panel_k": p.panel_k,
            "panel_tau": p.panel_tau,
        },
        "mu_min": r.mu_min,
        "sigma2_h": r.sigma2_h,
        "b": r.b,
        "ln_honest_bound": r.ln_honest_bound,
        "honest_bound": r.ln_honest_bound.exp(),
        "ln_malicious_bound": r.ln_malicious_bound,
        "malicious_bound": r.ln_malicious_bound.exp(),
        "e_x_mal": r.malicious_mean,
        "var_x_mal": r.malicious_variance,
        "e_u_mal_horizon": r.malicious_horizon_mean,
        "r_threshold": r.r_threshold,
        "alpha": r.alpha,
        "p_min_required": r.p_min_required,
        "guesser": {
            "valid_share": r.guesser.valid_share,
            "agreement": r.guesser.agreement,
            "reputation": r.guesser.agreement,
            "p_slash": r.guesser.p_slash,
            "e_x": r.guesser.mean,
            "e_u_horizon": r.guesser.horizon_mean,
            "coin_agreement": r.guesser.coin_agreement,
            "coin_e_x": r.guesser.coin_mean,
        },
        "safety": safety,
        "dials": dials,
        "ok": dials.iter().all(|d| d.ok),
    })
}

fn row(label: &str, value: impl std::fmt::Display) {
    outln!("  {label:<46} {value}");
}

fn print_text(r: &EconReport, s: &Safety, dials: &[Dial], source: &str) {
    let p = &r.params;
    outln!("TRUST economics check (Theorem 1), {source}");
    outln!("");
    outln!("Parameters");
    outln!(
        "  R = {}, P = {}, p_min = {}, p_max = {}, delta = {}",
        fmt_num(p.reward),
        fmt_num(p.penalty),
        fmt_num(p.p_min),
        fmt_num(p.p_max),
        fmt_num(p.delta)
    );
    outln!(
        "  lambda = {}, T = {} (lambda T = {} segments), eps_H = {}, gamma = {}",
        fmt_num(p.lambda),
        fmt_num(p.horizon),
        fmt_num(p.segments_in_horizon()),
        fmt_num(p.eps_h),
        fmt_num(p.gamma)
    );
    outln!(
        "  v = {}, theta = {}, panel k = {}, tau = {}",
        fmt_num(p.base_rate),
        fmt_num(p.honeypot_approval),
        p.panel_k,
        fmt_num(p.panel_tau)
    );
    outln!("");
    outln!("Honest seat");
    row("mu_min = (1-eps_H) R - eps_H P p_max", fmt_num(r.mu_min));
    row(
        "sigma_H^2 (eq. 7, sup over reputation)",
        fmt_num(r.sigma2_h),
    );
    row("b = R (eq. 6)", fmt_num(r.b));
    row(
        "Pr[U_hon(T) <= 0] <= (Theorem 1 b)",
        fmt_bound(r.ln_honest_bound.exp(), r.ln_honest_bound),
    );
    outln!("Malicious seat (reputation 0)");
    row("E[X_mal] = -P p_max", fmt_num(r.malicious_mean));
    row(
        "Var[X_mal] = P^2 p_max (1-p_max)",
        fmt_num(r.malicious_variance),
    );
    row(
        "E[U_mal(T)] = lambda T E[X_mal]",
        fmt_num(r.malicious_horizon_mean),
    );
    row(
        "Pr[U_mal(T) >= 0] <= (Theorem 1 c)",
        fmt_bound(r.ln_malicious_bound.exp(), r.ln_malicious_bound),
    );
    let g = &r.guesser;
    outln!("Random guesser (votes Valid with q, never looks; k-1 honest seats beside it)");
    row(
        "best unflagged q (sup of q < theta)",
        fmt_num(g.valid_share),
    );
    row("agreement a* = settled reputation r*", fmt_num(g.agreement));
    row("p_slash(r*)", fmt_num(g.p_slash));
    row("E[X] = a* R - (1-a*) P p_slash(r*)", fmt_num(g.mean));
    row("E[U(T)] = lambda T E[X]", fmt_num(g.horizon_mean));
    row(
        "fair coin (q = 1/2): agreement, E[X]",
        format!("{}, {}", fmt_num(g.coin_agreement), fmt_num(g.coin_mean)),
    );
    outln!("Economic dial (eq. 9)");
    row(
        "R must exceed eps_H/(1-eps_H) P p_max",
        fmt_num(r.r_threshold),
    );
    row("alpha = P p_max / (R + P p_max)", fmt_num(r.alpha));
    row(
        "p_min required = delta/(1-alpha)",
        fmt_num(r.p_min_required),
    );
    outln!(
        "Statistical dial (eq. 8), eps_target = {}",
        s.dial.epsilon_target
    );
    print_tiers(&s.spec, "  ");
    print_trace(&s.spec, &s.analysis, "  ", 46);
    row("ln(lambda T / eps_target)", fmt_num(s.dial.ln_ratio));
    row(
        "required gap sqrt(0.5 sigma2_max ln(..))",
        fmt_num(s.dial.required_gap),
    );
    row("actual gap mu_vote - W_beta", fmt_num(s.dial.actual_gap));
    row(
        "per-trace target eps_target/(lambda T)",
        fmt_prob(s.dial.per_trace_target),
    );
    outln!("");
    outln!("Dials");
    for d in dials {
        outln!(
            "  {}  {:<12} {}",
            if d.ok { "PASS" } else { "FAIL" },
            d.name,
            d.condition
        );
        outln!("        {:<12} {}", "", d.detail);
    }
    let passed = dials.iter().filter(|d| d.ok).count();
    outln!("");
    outln!("{passed} of {} dials pass.", dials.len());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_aliases_and_unknown_keys() {
        let cfg: EconConfig = toml::from_str("R = 7\nP = 9.5\nT = 12\neps_H = 0.1").unwrap();
        let p = cfg.params();
        assert_eq!(
            (p.reward, p.penalty, p.horizon, p.eps_h),
            (7.0, 9.5, 12.0, 0.1)
        );
        assert_eq!(p.p_min, 0.2);
        assert_eq!(
            (p.base_rate, p.honeypot_approval, p.panel_k),
            (0.85, 0.8, 5)
        );
        let cfg: EconConfig = toml::from_str("v = 0.7\ntheta = 0.55\npanel_k = 7").unwrap();
        let p = cfg.params();
        assert_eq!(
            (p.base_rate, p.honeypot_approval, p.panel_k),
            (0.7, 0.55, 7)
        );
        assert!(toml::from_str::<EconConfig>("rewrd = 7").is_err());
        assert!(toml::from_str::<EconConfig>("[safety]\nbta = 0.5").is_err());
        let cfg: EconConfig = toml::from_str(
            "[safety]\nbeta = 0.2\n[safety.spec]\ntau = 0.5\nsegments = [\"H\"]\n[safety.spec.tiers.H]\nk = 3\neps = 0.1\nw = 2\n",
        )
        .unwrap();
        let s = cfg.safety.unwrap();
        assert_eq!(s.beta, Some(0.2));
        assert_eq!(s.spec.unwrap().tiers["H"].k, 3);
    }

    #[test]
    fn default_safety_passes() {
        let params = EconParams::paper_example();
        let s = evaluate_safety(&params, None, "default config").unwrap();
        assert!(s.dial.ok, "{:?}", s.dial);
        assert!((s.dial.required_gap - 22.99).abs() < 0.01);
        assert!((s.dial.actual_gap - 24.34).abs() < 0.01);
    }
}
