//! `trust-node simulate`: runs the seeded network simulator (`trust_contracts::sim`) and
//! writes the paper's Figure 6 (reputation and cumulative profit per strategy over time)
//! and, with `sweep`, accuracy under rising corruption next to single-auditor and
//! plain-majority baselines (the shape of the paper's Table 1); `appeals` runs the
//! appellant experiment and `adversaries` the adversarial simulator, which fails (exit 1)
//! when an invariant does.

use std::{
    collections::BTreeMap,
    fmt::Write as _,
    path::{Path, PathBuf},
};

use clap::{Args, Subcommand};
use serde::{Serialize, de::DeserializeOwned};
use serde_json::Value;
use trust_contracts::sim::{
    AdversaryConfig, AdversaryReport, Population, Sim, SimConfig, SimReport, Strategy,
};
use trust_protocol::{tx::Tier, units::Ppm};

use super::{CliError, CliResult, read_input_file};
use crate::report::svg::{Chart, Series, write_line_chart};

/// Largest config file read, in bytes.
const MAX_CONFIG_BYTES: u64 = 1024 * 1024;
/// Most sessions one run may ask for.
const MAX_SESSIONS: u32 = 1_000_000;
/// Most auditors one run may ask for.
const MAX_AUDITORS: u64 = 10_000;

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
// The help text is the doc comment of `Command::Simulate` in `cli/mod.rs`: clap takes a
// subcommand's about from the variant, not from this struct.
#[command(args_conflicts_with_subcommands = true)]
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
    /// Whether appealing pays: two appellants watch the same seeded run, one appealing
    /// exactly the segments decided against the truth, one appealing at random.
    #[command(
        long_about = "Seeded sessions of LLM-tier segments judged by 3 seats each, where 5 of \
19 auditors vote against their judgement, so that about one segment in six is decided \
wrongly. A right appellant appeals exactly the wrongly decided segments of every session, a \
random one a random decided segment of a share of the sessions (--random-rate). Each posts \
the appeal bond per segment; an overturned verdict returns it with a reward, an upheld one \
pays it to the appeal seats. Prints each appellant's appeals, overturned, upheld and net \
profit, and writes appeals.json to --out."
    )]
    Appeals(AppealArgs),
    /// Every attack of a provider trying to buy a PASS, mounted on the real contract; exits
    /// 1 when an invariant fails.
    #[command(
        long_about = "Seeded and deterministic (the same seed writes the same report, byte \
for byte), over the real audit contract with real signed transactions, under the network's \
default parameters, floors and seat capacity (--config changes them). In each tier honest \
auditors vote the truth (or abstain when they cannot read); sybil auditors hold \
--sybil-share of the stake (default 31.8%). Half the sessions are an adversary's: traces \
with a known wrong step at both ends of the terms the floors allow (tau at its ceiling, \
windows at their cap), after a try under the floors or with a private domain; garbage, \
withheld and late keys, ciphertexts never served; false, selective, misplaced and \
never-opened honeypots; expertise declared into a draw, domain pools held at the floor; \
self-appeals, appeal spam and re-rolled appeals, starved appeal rounds; sybils approving its \
wrong steps; a proposer coalition under a third of the power that censors honest reveals, \
orders reveals and picks its own bond and registration transactions to steer the next draw. \
No one knows the truth: the only appellants are honest seats that were outvoted or kept \
from judging, and honest providers on their own checks.\n\n\
Writes a JSON report to --json FILE: sessions, honest_slashed (slash events on honest \
auditors), honest_stake_lost, honest_flagged, wrong_pass_at_decision, wrong_pass_final \
(wrong traces that PASS at finality although a deciding round held an honest seat), \
wrong_pass_unwatched (decided by rounds with no honest seat; lemma1 gives the rate Lemma 1 \
predicts), order_dependent (segments whose verdict changed when their round's reveals were \
applied in another order, on a shadow copy of the contract), third_party_appeals_refused, \
honest_sessions_refused, max_blocks_to_draw, max_blocks_to_final, censored_reveals, attacks \
(each attack's name and how often it was tried), defences_breached, and diagnostics \
(incidents tell the story of each failure).\n\n\
Exits 1, naming each invariant that failed, when honest_slashed, honest_flagged, \
wrong_pass_final, order_dependent, third_party_appeals_refused or honest_sessions_refused \
is above 0, a defence was breached, or an attack was never tried; the report is written \
either way."
    )]
    Adversaries(AdversaryArgs),
}

/// `simulate adversaries`.
#[derive(Debug, Args)]
pub struct AdversaryArgs {
    /// Seed of the run: the same seed gives the same report (default 1, or the config's).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Sessions to open, about half of them the adversary's (default 300, or the config's).
    #[arg(long)]
    pub sessions: Option<u32>,
    /// TOML file with the run's settings (any field of the adversary config:
    /// honest_per_tier, honest_stake, sybils_per_tier, sybil_stake, adversary_share,
    /// sessions_per_block, params with its floors, ...). Unknown keys are errors.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Seats the largest auditor of each tier judges at once before draws wait
    /// (`C,L,H`, the genesis `seat_capacity`; default the network's, 256,8,4).
    #[arg(long, value_name = "C,L,H", value_delimiter = ',')]
    pub seat_capacity: Vec<u32>,
    /// The sybils' share of each tier's stake, in (0, 1) (default 0.318, or the config's).
    #[arg(long, value_name = "SHARE")]
    pub sybil_share: Option<f64>,
    /// Where the JSON report is written (its directory is created if missing).
    #[arg(long, value_name = "FILE")]
    pub json: PathBuf,
}

/// `simulate appeals`.
#[derive(Debug, Args)]
pub struct AppealArgs {
    /// Seed of the run.
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Sessions to simulate.
    #[arg(long, default_value_t = 300)]
    pub sessions: u32,
    /// Share of decided sessions the random appellant appeals (0..=1).
    #[arg(long, default_value_t = 0.4)]
    pub random_rate: f64,
    /// Directory appeals.json is written to (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

/// `simulate sweep`.
#[derive(Debug, Args)]
pub struct SweepArgs {
    /// Corruption rates in [0, 1], comma separated: in each tier, round(c * honest
    /// auditors) of the honest auditors (to the nearest whole auditor, halves up) are
    /// turned malicious for the run at rate c.
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
        (Some(SimulateCommand::Appeals(a)), _) => run_appeals(a),
        (Some(SimulateCommand::Adversaries(a)), _) => run_adversaries(a),
        (None, Some(flags)) => run_single(flags),
        (None, None) => Err(CliError::usage(
            "simulate needs --out DIR (see trust-node simulate --help)",
        )),
    }
}

fn load_config(flags: &SimFlags) -> Result<SimConfig, CliError> {
    let mut cfg = match &flags.config {
        Some(path) => parse_config(path)?,
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
            "sessions (--sessions or the config) must be in 1..={MAX_SESSIONS}, got {}",
            cfg.sessions
        )));
    }
    let auditors: u64 = cfg.population.iter().map(|p| u64::from(p.count)).sum();
    if auditors > MAX_AUDITORS {
        return Err(CliError::usage(format!(
            "the population has {auditors} auditors, more than the limit of {MAX_AUDITORS}"
        )));
    }
    Ok(cfg)
}

/// Parses a TOML config. Errors are one-line usage errors naming the file and the line
/// or the unknown key.
fn parse_config(path: &Path) -> Result<SimConfig, CliError> {
    parse_toml(path)
}

/// Parses a TOML file as `T`, refusing keys `T` does not use, at any depth (see
/// [`parse_config`]).
fn parse_toml<T: DeserializeOwned + Serialize>(path: &Path) -> Result<T, CliError> {
    let text = read_input_file(path, MAX_CONFIG_BYTES)?;
    let cfg: T = toml::from_str(&text).map_err(|e| {
        let msg = e.message().replace('\n', " ");
        match e.span() {
            Some(s) => {
                let upto = text.get(..s.start).unwrap_or("");
                let line = upto.matches('\n').count().saturating_add(1);
                CliError::usage(format!("config {}: line {line}: {msg}", path.display()))
            }
            None => CliError::usage(format!("config {}: {msg}", path.display())),
        }
    })?;
    // Only the top level of the simulator config denies unknown fields; a misspelt key in
    // [quorum], [params] or a [[population]] entry would be dropped silently. A key the
    // parsed config does not write back was not used.
    let input = toml::from_str::<toml::Table>(&text)
        .ok()
        .and_then(|t| serde_json::to_value(t).ok())
        .unwrap_or(Value::Null);
    let known = serde_json::to_value(&cfg).unwrap_or(Value::Null);
    let mut unknown = Vec::new();
    unknown_keys(&input, &known, "", &mut unknown);
    if !unknown.is_empty() {
        let list: Vec<String> = unknown.iter().map(|k| format!("`{k}`")).collect();
        return Err(CliError::usage(format!(
            "config {}: unknown key{} {}",
            path.display(),
            if unknown.len() == 1 { "" } else { "s" },
            list.join(", ")
        )));
    }
    Ok(cfg)
}

/// Appends to `out` the dotted path of every table key of `input` that `known` lacks.
fn unknown_keys(input: &Value, known: &Value, path: &str, out: &mut Vec<String>) {
    match (input, known) {
        (Value::Object(i), Value::Object(k)) => {
            for (key, v) in i {
                let p = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                match k.get(key) {
                    Some(kv) => unknown_keys(v, kv, &p, out),
                    None => out.push(p),
                }
            }
        }
        (Value::Array(i), Value::Array(k)) => {
            for (n, (iv, kv)) in i.iter().zip(k).enumerate() {
                unknown_keys(iv, kv, &format!("{path}[{n}]"), out);
            }
        }
        _ => {}
    }
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
    let chart = |title: &str, y: &str| Chart {
        title: title.into(),
        x_label: "sessions decided".into(),
        y_label: y.into(),
        log_y: false,
        y_floor: 0.0,
    };
    plot(
        &rep_svg,
        &chart(
            "Mean reputation per strategy (Figure 6, left)",
            "reputation",
        ),
        &series_lines(&report, |p| &p.reputation),
    )?;
    plot(
        &profit_svg,
        &chart(
            "Mean cumulative profit per strategy (Figure 6, right)",
            "profit (rewards - slashes)",
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
        "network trace verdicts: {:.3} right, {:.3} wrong, {:.3} inconclusive",
        a.network_trace,
        a.network_trace_wrong,
        a.network_inconclusive
    );
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

/// The population with a share `rate` of each tier's honest auditors turned malicious:
/// `round(rate * honest)` per tier, halves up, in integer parts per million so that no
/// float noise decides a half. The converted auditors join the tier's malicious group (a
/// new one is appended if the tier has none); emptied honest groups stay with count 0, so
/// every other group keeps its place (and its seeded keys). Returns the population and
/// the count converted per tier (tiers with none left out).
fn corrupt(population: &[Population], rate: Ppm) -> (Vec<Population>, Vec<(Tier, u32)>) {
    let mut pop = population.to_vec();
    let mut converted = Vec::new();
    for tier in Tier::ALL {
        let is_honest = |p: &Population| p.tier == tier && p.strategy == Strategy::Honest;
        let honest: u64 = pop
            .iter()
            .filter(|p| is_honest(p))
            .map(|p| u64::from(p.count))
            .sum();
        let share = honest
            .saturating_mul(u64::from(rate.0.min(Ppm::ONE.0)))
            .saturating_add(500_000)
            / 1_000_000;
        let Ok(share) = u32::try_from(share) else {
            continue;
        };
        if share == 0 {
            continue;
        }
        let mut left = share;
        for p in pop.iter_mut().filter(|p| is_honest(p)) {
            let take = p.count.min(left);
            p.count = p.count.saturating_sub(take);
            left = left.saturating_sub(take);
        }
        match pop
            .iter_mut()
            .find(|p| p.tier == tier && p.strategy == Strategy::Malicious)
        {
            Some(p) => p.count = p.count.saturating_add(share),
            None => pop.push(Population {
                tier,
                strategy: Strategy::Malicious,
                count: share,
            }),
        }
        converted.push((tier, share));
    }
    (pop, converted)
}

/// A rate in [0, 1] in parts per million, rounded.
fn rate_ppm(rate: f64) -> Ppm {
    Ppm((rate.clamp(0.0, 1.0) * 1e6).round() as u32)
}

/// `C3 H4`: auditors converted per tier, with the paper's tier letters.
fn fmt_converted(converted: &[(Tier, u32)]) -> String {
    if converted.is_empty() {
        return "-".into();
    }
    let parts: Vec<String> = converted
        .iter()
        .map(|(t, n)| {
            let letter = match t {
                Tier::Computer => 'C',
                Tier::Llm => 'L',
                Tier::Human => 'H',
            };
            format!("{letter}{n}")
        })
        .collect();
    parts.join(" ")
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
        let (population, converted) = corrupt(&base.population, rate_ppm(c));
        tracing::info!(corruption = c, converted = %fmt_converted(&converted), "corrupting");
        let cfg = SimConfig {
            population,
            ..base.clone()
        };
        let report = simulate(cfg)?;
        rows.push((c, converted, report));
    }
    let dir = &args.flags.out;
    create_dir(dir)?;
    let mut csv = String::from(
        "corruption,network_trace,network_inconclusive,network_trace_wrong,single_trace,majority_trace,network_segment,single_segment,majority_segment,state_root\n",
    );
    let mut json = Vec::new();
    for (c, converted, r) in &rows {
        let a = &r.accuracy;
        let converted: BTreeMap<String, u32> = converted
            .iter()
            .map(|(t, n)| (format!("{t:?}"), *n))
            .collect();
        let _ = writeln!(
            csv,
            "{c},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{:.6},{}",
            a.network_trace,
            a.network_inconclusive,
            a.network_trace_wrong,
            a.single_trace,
            a.majority_trace,
            a.network_segment,
            a.single_segment,
            a.majority_segment,
            r.state_root
        );
        json.push(serde_json::json!({
            "corruption": c,
            "converted": converted,
            "population": r.config.population,
            "accuracy": a,
            "state_root": r.state_root,
            "sessions_decided": r.sessions_decided,
            "sessions_failed": r.sessions_failed,
        }));
    }
    let csv_path = dir.join("sweep.csv");
    let json_path = dir.join("sweep.json");
    let svg_path = dir.join("sweep.svg");
    write_file(&csv_path, &csv)?;
    let text = serde_json::to_string_pretty(&serde_json::json!({
        "seed": base.seed,
        "sessions": base.sessions,
        "conversion": "per tier, round(corruption * honest auditors) turned malicious, halves up",
        "rows": json,
        "config": base,
    }))
    .map_err(|e| CliError::failed(format!("cannot encode sweep: {e}")))?;
    write_file(&json_path, &text)?;
    type Pick = fn(&trust_contracts::sim::Accuracy) -> f64;
    let lines: [(&str, Pick); 7] = [
        ("network, trace", |a| a.network_trace),
        ("network, trace inconclusive", |a| a.network_inconclusive),
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
            points: rows.iter().map(|(c, _, r)| (*c, f(&r.accuracy))).collect(),
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
        },
        &series,
    )?;
    outln!(
        "{:>10} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9}",
        "corruption",
        "converted",
        "net-tr",
        "net-incon",
        "single-tr",
        "major-tr",
        "net-seg",
        "single-sg",
        "major-sg"
    );
    for (c, converted, r) in &rows {
        let a = &r.accuracy;
        outln!(
            "{:>10} {:>9} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3}",
            c.to_string(),
            fmt_converted(converted),
            a.network_trace,
            a.network_inconclusive,
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

fn run_appeals(a: AppealArgs) -> CliResult {
    if !(0.0..=1.0).contains(&a.random_rate) {
        return Err(CliError::usage(format!(
            "--random-rate {}: must be in [0, 1]",
            a.random_rate
        )));
    }
    if a.sessions == 0 || a.sessions > MAX_SESSIONS {
        return Err(CliError::usage(format!(
            "--sessions {}: must be in 1..={MAX_SESSIONS}",
            a.sessions
        )));
    }
    let mut x = trust_contracts::sim::AppealExperiment::default();
    x.sim.seed = a.seed;
    x.sim.sessions = a.sessions;
    // In [0, 1]: the product fits.
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
    {
        x.random_rate = Ppm((a.random_rate * 1_000_000.0).round() as u32);
    }
    let r = trust_contracts::sim::appeal_experiment(&x)
        .map_err(|e| CliError::failed(format!("simulation: {e}")))?;
    std::fs::create_dir_all(&a.out)
        .map_err(|e| CliError::failed(format!("{}: {e}", a.out.display())))?;
    let path = a.out.join("appeals.json");
    let json = serde_json::to_string_pretty(&r).map_err(|e| CliError::failed(e.to_string()))?;
    std::fs::write(&path, json)
        .map_err(|e| CliError::failed(format!("{}: {e}", path.display())))?;
    outln!(
        "{} sessions decided, {} segments decided against the truth, {} corrected by appeal",
        r.sessions_decided,
        r.wrongly_decided,
        r.corrected
    );
    outln!(
        "{:<10} {:>8} {:>9} {:>11} {:>7} {:>10} {:>7} {:>9} {:>8}",
        "appellant",
        "appeals",
        "segments",
        "overturned",
        "upheld",
        "undecided",
        "bonds",
        "returned",
        "profit"
    );
    for s in [&r.right, &r.random] {
        outln!(
            "{:<10} {:>8} {:>9} {:>11} {:>7} {:>10} {:>7} {:>9} {:>+8}",
            s.name,
            s.appeals,
            s.segments,
            s.overturned,
            s.upheld,
            s.undecided,
            s.bonds,
            s.returned,
            s.profit
        );
    }
    outln!(
        "state root {} after {} blocks; wrote {}",
        r.state_root,
        r.blocks,
        path.display()
    );
    Ok(())
}

/// Runs `simulate adversaries`: the report is written whatever it says; the command
/// fails (exit 1) naming every invariant that does not hold.
fn run_adversaries(a: AdversaryArgs) -> CliResult {
    let mut cfg: AdversaryConfig = match &a.config {
        Some(path) => parse_toml(path)?,
        None => AdversaryConfig::default(),
    };
    if let Some(seed) = a.seed {
        cfg.seed = seed;
    }
    if let Some(n) = a.sessions {
        cfg.sessions = n;
    }
    if let Some(share) = a.sybil_share {
        if !(share > 0.0 && share < 1.0) {
            return Err(CliError::usage(format!(
                "--sybil-share {share}: give a share between 0 and 1, e.g. 0.2"
            )));
        }
        cfg.sybil_share = Some(trust_protocol::units::Ppm(
            u32::try_from((share * 1e6).round() as u64).unwrap_or(999_999),
        ));
    }
    match a.seat_capacity.as_slice() {
        [] => {}
        [c, l, h] => cfg.params.seat_capacity = [*c, *l, *h],
        other => {
            return Err(CliError::usage(format!(
                "--seat-capacity takes three numbers (C,L,H), not {}",
                other.len()
            )));
        }
    }
    if cfg.sessions == 0 || cfg.sessions > MAX_SESSIONS {
        return Err(CliError::usage(format!(
            "sessions (--sessions or the config) must be in 1..={MAX_SESSIONS}, got {}",
            cfg.sessions
        )));
    }
    let auditors = 3 * (u64::from(cfg.honest_per_tier) + u64::from(cfg.sybils_per_tier));
    if auditors > MAX_AUDITORS {
        return Err(CliError::usage(format!(
            "the population has {auditors} auditors, more than the limit of {MAX_AUDITORS}"
        )));
    }
    cfg.validate().map_err(|e| CliError::usage(e.to_string()))?;
    let started = std::time::Instant::now();
    tracing::info!(
        seed = cfg.seed,
        sessions = cfg.sessions,
        "simulating adversaries"
    );
    let r = trust_contracts::sim::adversaries(&cfg)
        .map_err(|e| CliError::failed(format!("simulation: {e}")))?;
    let seconds = started.elapsed().as_secs_f64();
    if let Some(dir) = a.json.parent().filter(|d| !d.as_os_str().is_empty()) {
        create_dir(dir)?;
    }
    let text = serde_json::to_string_pretty(&r)
        .map_err(|e| CliError::failed(format!("cannot encode the report: {e}")))?;
    write_file(&a.json, &text)?;
    print_adversaries(&r, seconds);
    outln!("wrote {}", a.json.display());
    let failed = r.violations();
    if failed.is_empty() {
        outln!("every invariant holds");
        return Ok(());
    }
    Err(CliError::failed(format!(
        "invariants failed (seed {}): {}",
        r.seed,
        failed.join("; ")
    )))
}

fn print_adversaries(r: &AdversaryReport, seconds: f64) {
    let d = &r.diagnostics;
    outln!(
        "seed {}: {} sessions ({} the adversary's) in {} blocks, {} transactions applied, {} refused, {seconds:.1} s",
        r.seed,
        r.sessions,
        d.adversary_sessions,
        d.blocks,
        d.txs_applied,
        d.txs_refused.values().sum::<u64>()
    );
    let verdict = |n: u64| if n == 0 { "ok" } else { "FAILED" };
    for (name, n) in r.invariants() {
        outln!("{name:<28} {n:>8}  {}", verdict(n));
    }
    let l = &r.lemma1;
    for (name, n) in [
        ("honest_stake_lost", r.honest_stake_lost),
        ("wrong_pass", r.wrong_pass),
        ("wrong_pass_at_decision", r.wrong_pass_at_decision),
        ("wrong_pass_unwatched", r.wrong_pass_unwatched),
        ("max_blocks_to_draw", r.max_blocks_to_draw),
        ("censored_reveals", r.censored_reveals),
        ("max_blocks_to_final", r.max_blocks_to_final),
    ] {
        outln!("{name:<28} {n:>8}");
    }
    outln!(
        "Lemma 1 at sybil share {:.3}: over {} wrong traces (mean panel {:.1} seats), {:.2} expected unwatched (rho^n), {:.2} expected carried by the sybils at the first decision",
        l.sybil_share,
        l.wrong_traces,
        l.mean_panel,
        l.expected_unwatched,
        l.expected_sybil_decided
    );
    let tried: Vec<String> = r.attacks.iter().map(|(k, n)| format!("{k} {n}")).collect();
    outln!("attacks tried: {}", tried.join(", "));
    let breached: Vec<&String> = r
        .defences_breached
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, _)| k)
        .collect();
    if breached.is_empty() {
        outln!(
            "no defence breached (checked: {})",
            r.defences_breached
                .keys()
                .cloned()
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corruption_turns_honest_into_malicious_per_tier() {
        let pop = SimConfig::default().population;
        let (same, none) = corrupt(&pop, Ppm(0));
        assert_eq!(same, pop);
        assert!(none.is_empty());

        // 12 honest LLM auditors: 0.2 * 12 = 2.4 -> 2; 18 honest humans: 3.6 -> 4.
        let (p, converted) = corrupt(&pop, rate_ppm(0.2));
        assert_eq!(converted, vec![(Tier::Llm, 2), (Tier::Human, 4)]);
        assert_eq!(fmt_converted(&converted), "L2 H4");
        let count = |t, s| -> u32 {
            p.iter()
                .filter(|x| x.tier == t && x.strategy == s)
                .map(|x| x.count)
                .sum()
        };
        assert_eq!(count(Tier::Llm, Strategy::Honest), 10);
        assert_eq!(count(Tier::Llm, Strategy::Malicious), 3);
        assert_eq!(count(Tier::Human, Strategy::Honest), 14);
        assert_eq!(count(Tier::Human, Strategy::Malicious), 6);
        assert_eq!(count(Tier::Human, Strategy::RubberStamp), 2);
        assert_eq!(p.len(), pop.len(), "existing groups keep their place");

        // The share is taken per tier, not per group; halves round up; a tier without a
        // malicious group gets one.
        let honest = |count| Population {
            tier: Tier::Llm,
            strategy: Strategy::Honest,
            count,
        };
        let (p, converted) = corrupt(&[honest(3), honest(3)], rate_ppm(0.25));
        assert_eq!(converted, vec![(Tier::Llm, 2)]);
        assert_eq!((p[0].count, p[1].count), (1, 3));
        assert_eq!(p[2].strategy, Strategy::Malicious);
        assert_eq!(p[2].count, 2);
        let (p, _) = corrupt(&[honest(2)], rate_ppm(1.0));
        assert_eq!((p[0].count, p[1].count), (0, 2));
    }

    #[test]
    fn unknown_nested_keys_are_found() {
        let known = serde_json::to_value(SimConfig::default()).unwrap();
        let input = serde_json::json!({
            "seed": 3,
            "quorum": {"k": [1, 2, 3], "tauu": 1},
            "population": [{"tier": "Llm", "count": 1, "colour": "red"}],
        });
        let mut out = Vec::new();
        unknown_keys(&input, &known, "", &mut out);
        assert_eq!(out, vec!["population[0].colour", "quorum.tauu"]);
    }
}
