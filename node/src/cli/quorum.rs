//! `trust-node quorum`: segment and trace quorum probabilities from the paper's
//! consensus analysis (Lemma 1, eq. 2, Proposition 1) and the exact trace failure
//! probability, for one threshold or swept over `beta` (Figure 4, left).

use std::path::{Path, PathBuf};

use clap::Subcommand;
use serde_json::{Value, json};
use trust_protocol::math::{
    self, ResolvedSpec, TraceAnalysis, TraceModel, TraceSpec, quorum, segment_pass_probability,
};

use crate::{
    cli::{CliError, CliResult, read_input_file},
    report::svg::{Chart, Series, write_line_chart},
};

/// Largest spec file read, in bytes.
const MAX_SPEC_BYTES: u64 = 4 * 1024 * 1024;
/// Most `beta` values in one sweep.
const MAX_SWEEP_POINTS: usize = 10_000;
/// Probabilities below this are drawn at this value on the sweep's log axis.
const PLOT_FLOOR: f64 = 1e-30;

/// Arguments of `trust-node quorum`.
#[derive(Debug, clap::Args)]
pub struct QuorumArgs {
    #[command(subcommand)]
    command: QuorumCommand,
}

/// `trust-node quorum` subcommands.
#[derive(Debug, Subcommand)]
enum QuorumCommand {
    /// Pass probability of one segment (Lemma 1).
    ///
    /// A segment has k seats; each is adversarial with probability rho (and then always
    /// votes wrong), and an honest seat errs with probability eps. The segment passes when
    /// at least q = ceil(tau k) votes are correct. Prints q and p_pass = Pr[segment passes].
    Segment(SegmentArgs),
    /// Failure probability of one trace at a threshold beta (Proposition 1).
    ///
    /// The trace passes when W = sum of the weights of passing segments reaches
    /// W_beta = beta * (sum of all weights). Prints the moments of W (eq. 2), the exact
    /// Pr[W < W_beta] (dynamic programming over integer weights) and the Hoeffding and
    /// Chernoff upper bounds on it.
    Trace(TraceArgs),
    /// Exact failure probability and both bounds over a range of beta (Figure 4, left).
    ///
    /// Prints a table (or a JSON array) with one row per beta and can draw the three
    /// curves on a log axis as an SVG file.
    Sweep(SweepArgs),
}

/// Arguments of `trust-node quorum segment`.
#[derive(Debug, clap::Args)]
struct SegmentArgs {
    /// Seats per segment k (at least 1).
    #[arg(long)]
    k: u32,
    /// Error rate of an honest seat, eps in [0, 1].
    #[arg(long, allow_negative_numbers = true)]
    eps: f64,
    /// Probability that a seat is adversarial, rho in [0, 1] (the paper uses 0 for
    /// computer and LLM seats).
    #[arg(long, default_value_t = 0.0, allow_negative_numbers = true)]
    rho: f64,
    /// Vote threshold tau in (0, 1]; the quorum is q = ceil(tau k) correct votes.
    #[arg(long, allow_negative_numbers = true)]
    tau: f64,
    /// Print a JSON object {"q", "p_pass", ...} instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `trust-node quorum trace`.
#[derive(Debug, clap::Args)]
struct TraceArgs {
    /// Trace spec (JSON): {"tau": 0.5, "tiers": {"C": {"k": 1, "eps": 0, "rho": 0, "w": 1},
    /// ...}, "segments": ["C", "L", "H", ...]}. Weights w are positive integers; at most
    /// 10000 segments and total weight 1000000.
    #[arg(long, value_name = "FILE")]
    spec: PathBuf,
    /// Trace-level quorum fraction beta in (0, 1): the trace passes when W >= beta * sum w.
    #[arg(long, allow_negative_numbers = true)]
    beta: f64,
    /// Print a JSON object instead of text.
    #[arg(long)]
    json: bool,
}

/// Arguments of `trust-node quorum sweep`.
#[derive(Debug, clap::Args)]
struct SweepArgs {
    /// Trace spec (JSON), as for `quorum trace`.
    #[arg(long, value_name = "FILE")]
    spec: PathBuf,
    /// First beta, in (0, 1).
    #[arg(long, default_value_t = 0.5, allow_negative_numbers = true)]
    from: f64,
    /// Last beta, in (0, 1) and not below --from.
    #[arg(long, default_value_t = 0.99, allow_negative_numbers = true)]
    to: f64,
    /// Step between betas (positive; at most 10000 points).
    #[arg(long, default_value_t = 0.01, allow_negative_numbers = true)]
    step: f64,
    /// Also draw the curves into this SVG file (log y axis; values below 1e-30 are
    /// drawn at 1e-30).
    #[arg(long, value_name = "OUT")]
    svg: Option<PathBuf>,
    /// Print a JSON array instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: QuorumArgs) -> CliResult {
    match args.command {
        QuorumCommand::Segment(a) => segment(&a),
        QuorumCommand::Trace(a) => trace(&a),
        QuorumCommand::Sweep(a) => sweep(&a),
    }
}

fn usage(e: math::MathError) -> CliError {
    CliError::usage(e.to_string())
}

fn segment(a: &SegmentArgs) -> CliResult {
    let p = segment_pass_probability(a.k, a.eps, a.rho, a.tau).map_err(usage)?;
    let q = quorum(a.k, a.tau).map_err(usage)?;
    if a.json {
        print_json(&json!({
            "k": a.k,
            "eps": a.eps,
            "rho": a.rho,
            "tau": a.tau,
            "q": q,
            "p_pass": p,
        }));
    } else {
        outln!(
            "segment with k = {} seats, eps = {}, rho = {}, tau = {}",
            a.k,
            a.eps,
            a.rho,
            a.tau
        );
        outln!(
            "quorum q = ceil(tau k) = {q} correct votes; Pr[segment passes] = {} (Lemma 1)",
            fmt_prob(p)
        );
    }
    Ok(())
}

/// Reads and validates a trace spec file; errors are usage errors naming the file.
pub(crate) fn load_spec(path: &Path) -> Result<ResolvedSpec, CliError> {
    let text = read_input_file(path, MAX_SPEC_BYTES)?;
    let spec: TraceSpec = serde_json::from_str(&text)
        .map_err(|e| CliError::usage(format!("malformed spec {}: {e}", path.display())))?;
    spec.resolve()
        .map_err(|e| CliError::usage(format!("spec {}: {e}", path.display())))
}

fn trace(a: &TraceArgs) -> CliResult {
    let spec = load_spec(&a.spec)?;
    // Check beta before the DP so a bad flag fails fast.
    math::w_beta(1.0, a.beta).map_err(usage)?;
    let model = TraceModel::new(&spec.segments).map_err(usage)?;
    let analysis = model.analyse(a.beta).map_err(usage)?;
    if a.json {
        print_json(&trace_json(&spec, &analysis));
    } else {
        print_tiers(&spec, "");
        print_trace(&spec, &analysis, "", 30);
    }
    Ok(())
}

/// The JSON object describing one trace analysis (shared with `econ check`).
pub(crate) fn trace_json(spec: &ResolvedSpec, a: &TraceAnalysis) -> Value {
    json!({
        "beta": a.beta,
        "tau": spec.tau,
        "segments": spec.segments.len(),
        "total_weight": spec.total_weight,
        "w_beta": a.w_beta,
        "mu_vote": a.moments.mu_vote,
        "sigma2_vote": a.moments.sigma2_vote,
        "sigma2_max": a.moments.sigma2_max,
        "exact": a.exact,
        "ln_exact": finite_or_null(a.ln_exact),
        "hoeffding": a.hoeffding.value,
        "ln_hoeffding": finite_or_null(a.hoeffding.ln),
        "chernoff": a.chernoff.value,
        "ln_chernoff": finite_or_null(a.chernoff.ln),
        "chernoff_lambda": finite_or_null(a.chernoff.lambda),
        "tiers": spec.tiers,
    })
}

/// `ln` values are `-inf` when a bound is exactly 0, and JSON has no infinity: `null`.
fn finite_or_null(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

pub(crate) fn print_tiers(spec: &ResolvedSpec, indent: &str) {
    outln!("{indent}trace spec: tau = {}", spec.tau);
    outln!(
        "{indent}{:<8} {:>5} {:>5} {:>8} {:>8} {:>6} {:>14} {:>9}",
        "tier",
        "k",
        "q",
        "eps",
        "rho",
        "w",
        "p_pass",
        "segments"
    );
    for t in &spec.tiers {
        outln!(
            "{indent}{:<8} {:>5} {:>5} {:>8} {:>8} {:>6} {:>14} {:>9}",
            t.name,
            t.k,
            t.q,
            fmt_num(t.eps),
            fmt_num(t.rho),
            t.w,
            format!("{:.10}", t.p_pass),
            t.segments
        );
    }
}

pub(crate) fn print_trace(spec: &ResolvedSpec, a: &TraceAnalysis, indent: &str, width: usize) {
    let m = &a.moments;
    let rows = [
        ("segments S", spec.segments.len().to_string()),
        ("total weight sum w", spec.total_weight.to_string()),
        ("beta", fmt_num(a.beta)),
        ("W_beta = beta sum w", fmt_num(a.w_beta)),
        ("mu_vote = sum w p (eq. 2)", fmt_num(m.mu_vote)),
        ("sigma2_vote = sum w^2 p(1-p)", fmt_num(m.sigma2_vote)),
        ("sigma2_max = sum w^2", fmt_num(m.sigma2_max)),
        ("exact Pr[W < W_beta]", fmt_exact(a.exact, a.ln_exact)),
        (
            "Hoeffding bound",
            fmt_bound(a.hoeffding.value, a.hoeffding.ln),
        ),
        ("Chernoff bound", fmt_bound(a.chernoff.value, a.chernoff.ln)),
    ];
    for (label, value) in rows {
        outln!("{indent}{label:<width$} {value}");
    }
}

/// The betas of a sweep: `from, from + step, ..., <= to`, rounded to 12 decimals so that
/// repeated addition does not drift off the grid.
fn sweep_betas(from: f64, to: f64, step: f64) -> Result<Vec<f64>, CliError> {
    for (name, v) in [("from", from), ("to", to)] {
        if !(v.is_finite() && v > 0.0 && v < 1.0) {
            return Err(CliError::usage(format!(
                "{name} must be a beta in (0, 1), got {v}"
            )));
        }
    }
    if from > to {
        return Err(CliError::usage(format!(
            "from ({from}) must not be greater than to ({to})"
        )));
    }
    if !(step.is_finite() && step > 0.0) {
        return Err(CliError::usage(format!(
            "step must be positive, got {step}"
        )));
    }
    let count = ((to - from) / step + 1e-9).floor() + 1.0;
    if count > MAX_SWEEP_POINTS as f64 {
        return Err(CliError::usage(format!(
            "the sweep has {count} points, more than the limit of {MAX_SWEEP_POINTS}; use a larger step"
        )));
    }
    let count = count as usize;
    Ok((0..count)
        .map(|i| {
            let b = from + i as f64 * step;
            ((b * 1e12).round() / 1e12).min(to)
        })
        .collect())
}

fn sweep(a: &SweepArgs) -> CliResult {
    let betas = sweep_betas(a.from, a.to, a.step)?;
    let spec = load_spec(&a.spec)?;
    let model = TraceModel::new(&spec.segments).map_err(usage)?;
    let rows = betas
        .iter()
        .map(|&b| model.analyse(b).map_err(usage))
        .collect::<Result<Vec<_>, _>>()?;

    if let Some(out) = &a.svg {
        let series = |label: &str, f: &dyn Fn(&TraceAnalysis) -> f64| Series {
            label: label.to_owned(),
            points: rows.iter().map(|r| (r.beta, f(r))).collect(),
        };
        let chart = Chart {
            title: format!(
                "Trace failure Pr[W < W_beta] vs beta: {} segments, total weight {}",
                spec.segments.len(),
                spec.total_weight
            ),
            x_label: "trace quorum threshold beta".into(),
            y_label: "probability (log; values < 1e-30 drawn at 1e-30)".into(),
            log_y: true,
            y_floor: PLOT_FLOOR,
        };
        write_line_chart(
            out,
            &chart,
            &[
                series("exact (DP)", &|r| r.exact),
                series("Hoeffding bound", &|r| r.hoeffding.value),
                series("Chernoff bound", &|r| r.chernoff.value),
            ],
        )
        .map_err(|e| CliError::failed(e.to_string()))?;
    }

    if a.json {
        let arr: Vec<Value> = rows
            .iter()
            .map(|r| {
                json!({
                    "beta": r.beta,
                    "w_beta": r.w_beta,
                    "exact": r.exact,
                    "ln_exact": finite_or_null(r.ln_exact),
                    "hoeffding": r.hoeffding.value,
                    "ln_hoeffding": finite_or_null(r.hoeffding.ln),
                    "chernoff": r.chernoff.value,
                    "ln_chernoff": finite_or_null(r.chernoff.ln),
                })
            })
            .collect();
        print_json(&Value::Array(arr));
    } else {
        let m = model.moments();
        outln!(
            "{} segments, total weight {}, mu_vote = {}, sigma2_max = {}",
            spec.segments.len(),
            spec.total_weight,
            fmt_num(m.mu_vote),
            fmt_num(m.sigma2_max)
        );
        outln!(
            "{:>6} {:>10} {:>12} {:>12} {:>12}",
            "beta",
            "W_beta",
            "exact",
            "Hoeffding",
            "Chernoff"
        );
        // Enough decimals to tell neighbouring betas apart.
        let decimals = (-a.step.log10()).ceil().clamp(2.0, 6.0) as usize;
        for r in &rows {
            outln!(
                "{:>6.decimals$} {:>10.4} {:>12} {:>12} {:>12}",
                r.beta,
                r.w_beta,
                fmt_sci_ln(r.exact, r.ln_exact),
                fmt_sci_ln(r.hoeffding.value, r.hoeffding.ln),
                fmt_sci_ln(r.chernoff.value, r.chernoff.ln)
            );
        }
        if let Some(out) = &a.svg {
            outln!("wrote {}", out.display());
        }
    }
    Ok(())
}

pub(crate) fn print_json(v: &Value) {
    match serde_json::to_string_pretty(v) {
        Ok(s) => outln!("{s}"),
        Err(e) => eprintln!("error: cannot encode JSON: {e}"),
    }
}

/// Up to four decimals, trailing zeros trimmed (shared with the dial details).
pub(crate) use trust_protocol::math::econ::fmt_num;

/// Scientific notation with three significant digits; exact 0 and 1 stay `0` and `1`.
fn fmt_sci(x: f64) -> String {
    if x == 0.0 || x == 1.0 {
        fmt_num(x)
    } else {
        format!("{x:.2e}")
    }
}

/// Like [`fmt_sci`] for a bound known with its logarithm: a value that underflowed to 0
/// is printed from the logarithm instead.
fn fmt_sci_ln(value: f64, ln: f64) -> String {
    if value == 0.0 && ln.is_finite() {
        sci_from_ln_digits(ln, 2)
    } else {
        fmt_sci(value)
    }
}

/// An exact probability: as [`fmt_prob`], or from its logarithm when it is below the
/// f64 range.
fn fmt_exact(value: f64, ln: f64) -> String {
    if value == 0.0 && ln.is_finite() {
        format!("e^{ln:.2} (≈ {})", sci_from_ln(ln))
    } else {
        fmt_prob(value)
    }
}

/// A probability: plain decimals when not tiny, scientific otherwise.
pub(crate) fn fmt_prob(x: f64) -> String {
    if x == 0.0 || x == 1.0 {
        fmt_num(x)
    } else if x >= 1e-3 {
        format!("{x:.6}")
    } else {
        format!("{x:.3e}")
    }
}

/// A bound given by its value and natural log: `e^-203.77 (≈ 3.2e-89)` when small
/// (works when the value itself underflows), `0.354608 (= e^-1.04)` otherwise.
pub(crate) fn fmt_bound(value: f64, ln: f64) -> String {
    if ln == 0.0 {
        return "1 (vacuous)".into();
    }
    if ln == f64::NEG_INFINITY || (value == 0.0 && !ln.is_finite()) {
        return "0".into();
    }
    if value >= 1e-3 {
        return format!("{value:.6} (= e^{ln:.2})");
    }
    format!("e^{ln:.2} (≈ {})", sci_from_ln(ln))
}

/// `exp(ln)` in scientific notation with one decimal, computed from the logarithm so
/// that values below the f64 range still print.
pub(crate) fn sci_from_ln(ln: f64) -> String {
    sci_from_ln_digits(ln, 1)
}

/// `exp(ln)` in scientific notation with `digits` decimals in the mantissa.
fn sci_from_ln_digits(ln: f64, digits: usize) -> String {
    let log10 = ln / std::f64::consts::LN_10;
    let mut exp = log10.floor();
    let mut mant = 10_f64.powf(log10 - exp);
    if format!("{mant:.digits$}").starts_with("10") {
        mant = 1.0;
        exp += 1.0;
    }
    format!("{mant:.digits$}e{exp}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sweep_grid() {
        let b = sweep_betas(0.5, 0.99, 0.01).unwrap();
        assert_eq!(b.len(), 50);
        assert_eq!(b[0], 0.5);
        assert_eq!(b[17], 0.67);
        assert_eq!(*b.last().unwrap(), 0.99);
        assert_eq!(sweep_betas(0.5, 0.5, 0.1).unwrap(), vec![0.5]);
        assert!(sweep_betas(0.6, 0.5, 0.1).is_err());
        assert!(sweep_betas(0.0, 0.5, 0.1).is_err());
        assert!(sweep_betas(0.1, 0.5, 0.0).is_err());
        assert!(sweep_betas(0.1, 0.5, 1e-9).is_err());
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_bound(0.0, -203.7736), "e^-203.77 (≈ 3.2e-89)");
        assert_eq!(fmt_bound(1.0, 0.0), "1 (vacuous)");
        assert_eq!(fmt_bound(0.0, f64::NEG_INFINITY), "0");
        assert_eq!(fmt_bound(0.5, 0.5_f64.ln()), "0.500000 (= e^-0.69)");
        assert_eq!(sci_from_ln(-2000.0), "2.6e-869");
        assert_eq!(sci_from_ln(10_f64.ln() * -3.0), "1.0e-3");
        assert_eq!(fmt_num(25.8), "25.8");
        assert_eq!(fmt_sci_ln(0.0, -2000.0), "2.58e-869");
        assert_eq!(fmt_sci_ln(0.0, f64::NEG_INFINITY), "0");
        assert_eq!(fmt_sci_ln(1.0, 0.0), "1");
        assert_eq!(fmt_exact(0.0, -2000.0), "e^-2000.00 (≈ 2.6e-869)");
        assert_eq!(fmt_exact(0.0, f64::NEG_INFINITY), "0");
        assert_eq!(fmt_exact(0.047, 0.047_f64.ln()), "0.047000");
        assert_eq!(fmt_prob(0.25), "0.250000");
        assert_eq!(fmt_prob(1.5e-9), "1.500e-9");
    }
}
