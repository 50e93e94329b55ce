//! `trust-node simulate`: runs the seeded network simulator (`trust_contracts::sim`) and
//! writes the paper's Figure 6 (reputation and cumulative profit per strategy over time)
//! and, with `sweep`, accuracy under rising corruption next to single-auditor and
//! plain-majority baselines (the shape of the paper's Table 1).

use std::{
    fmt::Write as _,
    path::{Path, PathBuf},
};

use clap::{Args, Subcommand};
use trust_contracts::sim::{Population, Sim, SimConfig, SimReport, Strategy};

use super::{CliError, CliResult, read_input_file};
use crate::report::svg::{Chart, LegendCorner, Series, write_line_chart};

/// Largest config file read, in bytes.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Most sessions one run may ask for.
const MAX_SESSIONS: u32 = 1_000_000;

/// Flags shared by a run and a sweep.
#[derive(Debug, Clone, Args)]
pub struct SimFlags {
    /// Seed of the run: the same seed gives the same ledger, state root and files.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Audit sessions to simulate (default 1000, or the config's `sessions`).
    #[arg(long)]
    pub sessions: Option<u32>,
    /// TOML file with simulator settings (any field of the simulator config: population,
    /// honest_error, correct_rate, segments, quorum, params, ...). Unknown keys are errors.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Directory the result files are written to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `simulate`: run the contract with simulated auditors.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    about = "Simulate auditors with different strategies on the real audit contract",
    long_about = "Simulate a network of auditors on the real audit contract, with real signed \
transactions: honest seats (error rate per tier), malicious seats (always wrong), random \
guessers, rubber-stampers (approve everything), withholders (commit, never reveal) and \
copy-cats (reuse another seat's commitment). Ground truth comes from the generator: 70-85% \
of segments are correct and some sessions carry honeypots.\n\nWrites to --out: \
reputation.csv and profit.csv (mean per strategy over time), reputation.svg and profit.svg \
(the paper's Figure 6), and summary.json (final means per strategy, accuracy against ground \
truth, the final state_root and the config used)."
)]
pub struct SimulateArgs {
    /// Run flags (when no subcommand is given).
    #[command(flatten)]
    pub flags: Option<SimFlags>,
    /// `sweep`.
    #[command(subcommand)]
    pub command: Option<SimulateCommand>,
}

/// Subcommands of `simulate`.
#[derive(Debug, Subcommand)]
pub enum SimulateCommand {
    /// Accuracy of the network against ground truth as corruption rises, next to a
    /// single-auditor and a plain-majority baseline computed on the same votes.
    #[command(
        long_about = "For each corruption rate c, a share c of the honest auditors of \
every tier (rounded to the nearest whole auditor) is replaced by malicious ones and the \
simulation is run with the same seed. Segment- and trace-level accuracy against ground truth \
is reported for the network's verdicts, for the first revealed vote of each segment (single \
auditor) and for the plain majority of all revealed votes. Writes sweep.csv, sweep.json and \
sweep.svg to --out."
    )]
    Sweep(SweepArgs),
}

/// `simulate sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Corruption rates in [0, 1], comma separated.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "0,0.05,0.1,0.15,0.2",
        allow_negative_numbers = true
    )]
    pub corruption: Vec<f64>,
    /// Shared flags.
    #[command(flatten)]
    pub flags: SimFlags,
}

/// Runs `simulate`.
pub fn run(args: SimulateArgs) -> CliResult {
    match (args.command, args.flags) {
        (Some(SimulateCommand::Sweep(s)), _) => run_sweep(s),
        (None, Some(flags)) => run_single(flags),
        (None, None) => Err(CliError::usage(
            "simulate needs --out DIR (see trust-node simulate --help)",
        )),
    }
}

fn load_config(flags: &SimFlags) -> Result<SimConfig, CliError> {
    let mut cfg = match &flags.config {
        Some(path) => {
            let text = read_input_file(path, MAX_CONFIG_BYTES)?;
            toml::from_str::<SimConfig>(&text)
                .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?
        }
        None => SimConfig::default(),
    };
    if let Some(seed) = flags.seed {
        cfg.seed = seed;
    }
    if let Some(n) = flags.sessions {
        cfg.sessions = n;
    }
    if cfg.sessions == 0 || cfg.sessions > MAX_SESSIONS {
        return Err(CliError::usage(format!(
            "--sessions must be in 1..={MAX_SESSIONS}, got {}",
            cfg.sessions
        )));
    }
    Ok(cfg)
}

fn simulate(cfg: SimConfig) -> Result<SimReport, CliError> {
    let sessions = cfg.sessions;
    let seed = cfg.seed;
    let started = std::time::Instant::now();
    tracing::info!(seed, sessions, "simulating");
    let report = Sim::new(cfg)
        .map_err(|e| CliError::usage(e.to_string()))?
        .run();
    tracing::info!(
        seconds = started.elapsed().as_secs_f64(),
        blocks = report.blocks,
        txs = report.txs_applied,
        "simulation finished"
    );
    Ok(report)
}

fn create_dir(dir: &Path) -> Result<(), CliError> {
    std::fs::create_dir_all(dir)
        .map_err(|e| CliError::failed(format!("cannot create {}: {e}", dir.display())))
}

fn write_file(path: &Path, text: &str) -> Result<(), CliError> {
    std::fs::write(path, text)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
}

fn plot(path: &Path, chart: &Chart, series: &[Series]) -> Result<(), CliError> {
    write_line_chart(path, chart, series)
        .map_err(|e| CliError::failed(format!("cannot write {}: {e}", path.display())))
}

/// Strategy names present in the report, in the simulator's order.
fn names(report: &SimReport) -> Vec<String> {
    Strategy::ALL
        .iter()
        .map(|s| s.name().to_string())
        .filter(|n| report.strategies.iter().any(|s| &s.strategy == n))
        .collect()
}

fn series_csv(
    report: &SimReport,
    pick: impl Fn(&trust_contracts::sim::SeriesPoint) -> &std::collections::BTreeMap<String, f64>,
) -> String {
    let names = names(report);
    let mut out = format!("decided,height,{}\n", names.join(","));
    for p in &report.series {
        let _ = write!(out, "{},{}", p.decided, p.height);
        for n in &names {
            let _ = write!(out, ",{:.6}", pick(p).get(n).copied().unwrap_or(0.0));
        }
        out.push('\n');
    }
    out
}

fn series_lines(
    report: &SimReport,
    pick: impl Fn(&trust_contracts::sim::SeriesPoint) -> &std::collections::BTreeMap<String, f64>,
) -> Vec<Series> {
    names(report)
        .into_iter()
        .map(|n| Series {
            points: report
                .series
                .iter()
                .map(|p| (p.decided as f64, pick(p).get(&n).copied().unwrap_or(0.0)))
                .collect(),
            label: n,
        })
        .collect()
}

fn run_single(flags: SimFlags) -> CliResult {
    let cfg = load_config(&flags)?;
    let report = simulate(cfg)?;
    let dir = &flags.out;
    create_dir(dir)?;
    let rep_csv = dir.join("reputation.csv");
    let profit_csv = dir.join("profit.csv");
    let summary = dir.join("summary.json");
    let rep_svg = dir.join("reputation.svg");
    let profit_svg = dir.join("profit.svg");
    write_file(&rep_csv, &series_csv(&report, |p| &p.reputation))?;
    write_file(&profit_csv, &series_csv(&report, |p| &p.profit))?;
    let json = serde_json::json!({
        "seed": report.config.seed,
        "sessions": report.config.sessions,
        "blocks": report.blocks,
        "sessions_decided": report.sessions_decided,
        "sessions_failed": report.sessions_failed,
        "txs_applied": report.txs_applied,
        "txs_rejected": report.txs_rejected,
        "state_root": report.state_root,
        "strategies": report.strategies,
        "accuracy": report.accuracy,
        "config": report.config,
    });
    let text = serde_json::to_string_pretty(&json)
        .map_err(|e| CliError::failed(format!("cannot encode summary: {e}")))?;
    write_file(&summary, &text)?;
    let chart = |title: &str, y: &str, legend| Chart {
        title: title.into(),
        x_label: "sessions decided".into(),
        y_label: y.into(),
        log_y: false,
        y_floor: 0.0,
        legend,
    };
    plot(
        &rep_svg,
        &chart(
            "Mean reputation per strategy (Figure 6, left)",
            "reputation",
            LegendCorner::LowerLeft,
        ),
        &series_lines(&report, |p| &p.reputation),
    )?;
    plot(
        &profit_svg,
        &chart(
            "Mean cumulative profit per strategy (Figure 6, right)",
            "profit (rewards - slashes)",
            LegendCorner::UpperLeft,
        ),
        &series_lines(&report, |p| &p.profit),
    )?;

    outln!(
        "seed {}  sessions {} decided, {} failed  blocks {}  txs {} applied, {} rejected",
        report.config.seed,
        report.sessions_decided,
        report.sessions_failed,
        report.blocks,
        report.txs_applied,
        report.txs_rejected.values().sum::<u64>()
    );
    outln!(
        "{:<13} {:>8} {:>11} {:>11} {:>7} {:>8}",
        "strategy",
        "auditors",
        "reputation",
        "profit",
        "active",
        "flagged"
    );
    for s in &report.strategies {
        outln!(
            "{:<13} {:>8} {:>11.3} {:>11.1} {:>7} {:>8}",
            s.strategy,
            s.auditors,
            s.final_reputation_mean,
            s.final_profit_mean,
            s.active,
            s.flagged
        );
    }
    let a = &report.accuracy;
    outln!(
        "accuracy (segment / trace): network {:.3} / {:.3}, single auditor {:.3} / {:.3}, majority {:.3} / {:.3}",
        a.network_segment,
        a.network_trace,
        a.single_segment,
        a.single_trace,
        a.majority_segment,
        a.majority_trace
    );
    outln!("state root {}", report.state_root);
    for p in [&rep_csv, &profit_csv, &summary, &rep_svg, &profit_svg] {
        outln!("wrote {}", p.display());
    }
    Ok(())
}

/// Replaces a share `rate` of the honest auditors of each tier by malicious ones.
fn corrupt(population: &[Population], rate: f64) -> Vec<Population> {
    let mut out = Vec::new();
    for p in population {
        if p.strategy != Strategy::Honest {
            out.push(p.clone());
            continue;
        }
        let bad = ((f64::from(p.count) * rate).round() as u32).min(p.count);
        out.push(Population {
            count: p.count - bad,
            ..p.clone()
        });
        if bad > 0 {
            out.push(Population {
                tier: p.tier,
                strategy: Strategy::Malicious,
                count: bad,
            });
        }
    }
    out
}

fn run_sweep(args: SweepArgs) -> CliResult {
    if args.corruption.is_empty() {
        return Err(CliError::usage("--corruption needs at least one rate"));
    }
    if let Some(bad) = args
        .corruption
        .iter()
        .find(|c| !(c.is_finite() && (0.0..=1.0).contains(*c)))
    {
        return Err(CliError::usage(format!(
            "--corruption rates must be in [0, 1], got {bad}"
        )));
    }
    let base = load_config(&args.flags)?;
    let mut rows = Vec::new();
    for &c in &args.corruption {
        let cfg = SimConfig {
            population: corrupt(&base.population, c),
            ..base.clone()
        };
        let report = simulate(cfg)?;
        rows.push((c, report));
    }
    let dir = &args.flags.out;
    create_dir(dir)?;
    let mut csv = String::from(
        "corruption,network_trace,single_trace,majority_trace,network_segment,single_segment,majority_segment,state_root\n",
    );
    let mut json = Vec::new();
    for (c, r) in &rows {
        let a = &r.accuracy;
        let _ = writeln!(
            csv,
            "{c},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{}",
            a.network_trace,
            a.single_trace,
            a.majority_trace,
            a.network_segment,
            a.single_segment,
            a.majority_segment,
            r.state_root
        );
        json.push(serde_json::json!({
            "corruption": c,
            "accuracy": a,
            "state_root": r.state_root,
            "sessions_decided": r.sessions_decided,
        }));
    }
    let csv_path = dir.join("sweep.csv");
    let json_path = dir.join("sweep.json");
    let svg_path = dir.join("sweep.svg");
    write_file(&csv_path, &csv)?;
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "seed": base.seed,
        "sessions": base.sessions,
        "rows": json,
    }))
    .map_err(|e| CliError::failed(format!("cannot encode sweep: {e}")))?;
    write_file(&json_path, &text)?;
    type Pick = fn(&trust_contracts::sim::Accuracy) -> f64;
    let lines: [(&str, Pick); 6] = [
        ("network, trace", |a| a.network_trace),
        ("single auditor, trace", |a| a.single_trace),
        ("plain majority, trace", |a| a.majority_trace),
        ("network, segment", |a| a.network_segment),
        ("single auditor, segment", |a| a.single_segment),
        ("plain majority, segment", |a| a.majority_segment),
    ];
    let series: Vec<Series> = lines
        .iter()
        .map(|(label, f)| Series {
            label: (*label).into(),
            points: rows.iter().map(|(c, r)| (*c, f(&r.accuracy))).collect(),
        })
        .collect();
    plot(
        &svg_path,
        &Chart {
            title: "Accuracy against ground truth vs corruption rate".into(),
            x_label: "share of honest auditors turned malicious".into(),
            y_label: "accuracy".into(),
            log_y: false,
            y_floor: 0.0,
            legend: LegendCorner::LowerLeft,
        },
        &series,
    )?;
    outln!(
        "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "corruption",
        "net-tr",
        "single-tr",
        "major-tr",
        "net-seg",
        "single-sg",
        "major-sg"
    );
    for (c, r) in &rows {
        let a = &r.accuracy;
        outln!(
            "{:>10.2} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            c,
            a.network_trace,
            a.single_trace,
            a.majority_trace,
            a.network_segment,
            a.single_segment,
            a.majority_segment
        );
    }
    for p in [&csv_path, &json_path, &svg_path] {
        outln!("wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use trust_protocol::tx::Tier;

    use super::*;

    #[test]
    fn corruption_turns_honest_into_malicious_per_tier() {
        let pop = vec![
            Population {
                tier: Tier::Llm,
                strategy: Strategy::Honest,
                count: 10,
            },
            Population {
                tier: Tier::Human,
                strategy: Strategy::RubberStamp,
                count: 2,
            },
        ];
        let c = corrupt(&pop, 0.2);
        assert_eq!(c[0].count, 8);
        assert_eq!(c[1].strategy, Strategy::RubberStamp);
        assert_eq!(c[2].strategy, Strategy::Malicious);
        assert_eq!(c[2].count, 2);
        assert_eq!(corrupt(&pop, 0.0).len(), 2);
    }
}
