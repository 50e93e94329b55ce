//! `trust-node bench quality`: the Computer tier's verdicts against a labelled corpus
//! ([`trust_judging::quality`]), per family and overall; with `--tier llm`, the LLM
//! tier's through an OpenAI-compatible endpoint ([`crate::audit::llm::bench`]).
//! `trust-node bench network`: the session load generator ([`super::bench_network`]).
//! `trust-node bench chain`: block execution cost against state size ([`super::bench_chain`]).

use std::path::{Path, PathBuf};

use clap::{Args, Subcommand};

use trust_judging::quality::{self, Counts};

use crate::cli::{CliError, CliResult, read_input_file};

/// Largest corpus file read.
const MAX_CORPUS_BYTES: u64 = 64 * 1024 * 1024;

/// `bench` subcommands.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Judge every trace of a labelled corpus as a Computer-only network would, and compare
    /// with the labels.
    ///
    /// Prints per family and overall: step-level precision and recall of Invalid /
    /// Ungrounded (a correct or propagated step flagged is a false alarm), recall on
    /// calculation lines, coverage (steps that got a vote / all steps), and the trace
    /// verdicts (Pass / Fail / Inconclusive) against the trace labels. The corpus is
    /// JSONL, one trace per line (see scripts/corpus/README.md); the bundled one is
    /// examples/corpus/quality.jsonl.
    Quality(QualityArgs),
    /// Start a local network of validators, open audit sessions on it at a target rate
    /// (or as fast as accepted), follow them to their verdicts, and report sessions and
    /// segment votes finalized per second, submit-to-verdict latency (p50/p90/p99), block
    /// time, mempool depth, gossip bytes per vote, CPU and peak RSS per node, next to the
    /// single-core ed25519 verify floor and a centralized pipeline measured in the same
    /// run. Markdown on stdout; --json and --markdown write files.
    Network(super::bench_network::NetworkArgs),
    /// Execute an empty block and a block of seat votes, again and again, on a small and a
    /// large state (accounts, auditors and finished sessions), and report the median
    /// execution time of each: block cost must not grow with history. --json writes the
    /// report (`empty_small_ms`, `empty_large_ms`, `votes_small_ms`, `votes_large_ms`).
    Chain(super::bench_chain::ChainArgs),
}

/// Arguments of `bench quality`.
#[derive(Debug, Args)]
pub struct QualityArgs {
    /// The labelled corpus (JSONL).
    #[arg(long, default_value = "examples/corpus/quality.jsonl")]
    pub corpus: PathBuf,
    /// Print the report as JSON.
    #[arg(long)]
    pub json: bool,
    /// Also judge about this many generated formal proofs per language (NDL, NDL_f,
    /// Hilbert, equational; correct ones and the seed's corruptions of them) through the
    /// same path, and report agreement, first-error accuracy and FAIL / PASS precision
    /// per language; 0 to skip.
    #[arg(long, default_value_t = 50)]
    pub proofs: usize,
    /// The seed of the generated proofs.
    #[arg(long, default_value_t = 1)]
    pub proof_seed: u64,
    /// Also judge the agent transcripts in DIR (its `manifest.json` labels them, its
    /// `sources.json` says which were edited and how; e.g. ../shared/corpus/agent-traces)
    /// as `check` does: tool calls re-run in this machine's sandbox, no LLM tier.
    #[arg(long, value_name = "DIR")]
    pub agents: Option<PathBuf>,
    /// The tier to measure: `computer` (the checkers, the whole corpus) or `llm` (ARES
    /// through --llm-url, every segment judged; slow: see --limit).
    #[arg(long, default_value = "computer", value_parser = ["computer", "llm"])]
    pub tier: String,
    /// With --tier llm: the OpenAI-compatible endpoint (e.g. http://127.0.0.1:8089/v1).
    #[arg(long)]
    pub llm_url: Option<String>,
    /// With --tier llm: the model name.
    #[arg(long, default_value = "default")]
    pub llm_model: String,
    /// With --tier llm: the environment variable holding the API key.
    #[arg(long)]
    pub llm_api_key_env: Option<String>,
    /// With --tier llm: judge at most this many traces (from the top of the corpus).
    #[arg(long, default_value_t = 10)]
    pub limit: usize,
    /// With --tier llm: stop starting new traces after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub budget_secs: u64,
    /// With --tier llm: judge without the consistency probes (a vote stands on the ARES
    /// score alone), to measure what the probes change.
    #[arg(long)]
    pub no_probes: bool,
    /// With --tier llm: skip the model's calibration (16 easy questions it must answer
    /// right, 14 of them by default, before its votes count), to measure ARES alone.
    #[arg(long)]
    pub no_calibration: bool,
}

fn run_llm(args: &QualityArgs, text: &str) -> CliResult {
    use std::{sync::Arc, time::Duration};

    use trust_judging::llm::ares::AresParams;

    use crate::audit::llm::{
        LlmAuditor, bench,
        client::{ChatClient, Endpoint, Limits, LlmMetrics},
    };
    let url = args
        .llm_url
        .as_deref()
        .ok_or_else(|| CliError::usage("--tier llm needs --llm-url"))?;
    let endpoint = Endpoint::new(url, &args.llm_model, args.llm_api_key_env.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    let client = ChatClient::new(
        endpoint,
        Limits {
            request_timeout: Duration::from_secs(60),
            ..Limits::default()
        },
        Arc::new(LlmMetrics::default()),
    )
    .map_err(|e| CliError::failed(e.to_string()))?;
    let ares = AresParams {
        consistency_probes: !args.no_probes,
        calibration_min: if args.no_calibration {
            0
        } else {
            AresParams::default().calibration_min
        },
        ..AresParams::default()
    };
    // A fixed probe key: two runs over the same corpus ask the same probes, so their
    // figures compare. Nobody writes a corpus against it.
    let judge = LlmAuditor::new(client, ares, Duration::from_secs(300)).with_probe_key([0; 32]);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(e.to_string()))?;
    let calibration = rt.block_on(judge.calibration()).summary();
    let report = rt
        .block_on(bench::run(
            text,
            &judge,
            args.limit,
            Duration::from_secs(args.budget_secs),
        ))
        .map_err(|e| CliError::usage(format!("{}: {e}", args.corpus.display())))?;
    if args.json {
        let mut v = serde_json::to_value(&report)
            .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?;
        v["calibration"] = serde_json::Value::String(calibration);
        v["consistency_probes"] = serde_json::Value::Bool(ares.consistency_probes);
        outln!(
            "{}",
            serde_json::to_string_pretty(&v)
                .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?
        );
        return Ok(());
    }
    outln!("the model's {calibration}");
    outln!(
        "{:<14} {:>6} {:>6} {:>9} {:>7} {:>8} {:>6} {:>8} {:>9} {:>9} {:>7}",
        "family",
        "traces",
        "steps",
        "precision",
        "recall",
        "coverage",
        "false",
        "segments",
        "abstained",
        "calls/seg",
        "s/seg"
    );
    let line = |name: &str, c: &bench::LlmCounts| {
        outln!(
            "{:<14} {:>6} {:>6} {:>9.3} {:>7.3} {:>8.3} {:>6} {:>8} {:>9} {:>9.2} {:>7.2}",
            name,
            c.traces,
            c.steps,
            c.precision(),
            c.recall(),
            c.coverage(),
            c.false_alarms,
            c.segments,
            c.abstained,
            c.calls_per_segment(),
            c.seconds_per_segment()
        );
    };
    for (f, c) in &report.families {
        line(f, c);
    }
    line("overall", &report.overall);
    outln!(
        "every segment judged by the LLM tier (ARES, N = {}, consistency probes {}) through {url}; {} failed LLM attempts",
        AresParams::default().samples(),
        if ares.consistency_probes { "on" } else { "off" },
        report.overall.errors_llm
    );
    for (id, why) in &report.skipped {
        outln!("skipped      {id}: {why}");
    }
    Ok(())
}

/// Runs `bench`.
pub fn run(cmd: BenchCommand) -> CliResult {
    let args = match cmd {
        BenchCommand::Quality(args) => args,
        BenchCommand::Network(args) => return super::bench_network::run(args),
        BenchCommand::Chain(args) => return super::bench_chain::run(args),
    };
    let text = read_input_file(&args.corpus, MAX_CORPUS_BYTES)?;
    if args.tier == "llm" {
        return run_llm(&args, &text);
    }
    let report = quality::run(&text)
        .map_err(|e| CliError::usage(format!("{}: {e}", args.corpus.display())))?;
    let proofs = if args.proofs > 0 {
        quality::proof_families(args.proof_seed, args.proofs)
    } else {
        Default::default()
    };
    let agents = args.agents.as_deref().map(agent_corpus).transpose()?;
    if args.json {
        let mut v = serde_json::to_value(&report)
            .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?;
        // The derived rates, next to the counts they come from.
        let rates = |c: &Counts| {
            serde_json::json!({"precision": c.precision(), "recall": c.recall(),
                "calc_recall": c.calc_recall(), "ungrounded_recall": c.ungrounded_recall(),
                "reasoning_recall": c.reasoning_recall(),
                "errors_judged_valid": c.passed_errors, "coverage": c.coverage(),
                "correct_traces_failed": c.correct_failed(),
                "wrong_traces_passed": c.wrong_passed(),
                "pass_precision": c.pass_precision()})
        };
        v["overall_rates"] = rates(&report.overall);
        v["proof_families"] = proofs
            .iter()
            .map(|(f, c)| {
                let mut o = serde_json::to_value(c).unwrap_or_default();
                o["agreement"] = c.agreement().into();
                o["first_error_accuracy"] = c.first_error_accuracy().into();
                o["fail_precision"] = c.fail_precision().into();
                o["pass_precision"] = c.pass_precision().into();
                (f.clone(), o)
            })
            .collect::<serde_json::Map<_, _>>()
            .into();
        v["family_rates"] = report
            .families
            .iter()
            .map(|(f, c)| (f.clone(), rates(c)))
            .collect::<serde_json::Map<_, _>>()
            .into();
        if let Some(a) = &agents {
            v["agents"] = serde_json::to_value(a).unwrap_or_default();
        }
        outln!(
            "{}",
            serde_json::to_string_pretty(&v)
                .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?
        );
        return Ok(());
    }
    outln!(
        "{:<19} {:>6} {:>6} {:>9} {:>7} {:>8} {:>8} {:>8} {:>6} {:>6} {:>9} {:>10}  correct P/F/I  wrong P/F/I",
        "family",
        "traces",
        "steps",
        "precision",
        "recall",
        "calc-rec",
        "ungr-rec",
        "coverage",
        "false",
        "missed",
        "pass-prec",
        "wrong-pass"
    );
    let line = |name: &str, c: &Counts| {
        let [ok, bad] = c.confusion;
        outln!(
            "{:<19} {:>6} {:>6} {:>9.3} {:>7.3} {:>8.3} {:>8.3} {:>8.3} {:>6} {:>6} {:>9.3} {:>10}  {:>13}  {:>11}",
            name,
            c.traces,
            c.steps,
            c.precision(),
            c.recall(),
            c.calc_recall(),
            c.ungrounded_recall(),
            c.coverage(),
            c.false_alarms,
            c.passed_errors,
            c.pass_precision(),
            c.wrong_passed(),
            format!("{}/{}/{}", ok[0], ok[1], ok[2]),
            format!("{}/{}/{}", bad[0], bad[1], bad[2]),
        );
    };
    for (f, c) in &report.families {
        line(f, c);
    }
    line("overall", &report.overall);
    let o = &report.overall;
    outln!(
        "by level: claims judged on {} of {} steps ({} wrong ones judged Valid); calculations \
         checked on their own in {} steps: {} of {} hold, {} wrong, {} of them in steps whose \
         calculations are right",
        o.claims_judged,
        o.steps,
        o.passed_errors,
        o.with_operations,
        o.operations_hold,
        o.operations,
        o.operations_wrong,
        o.operations_false
    );
    outln!(
        "precision and recall: of Invalid/Ungrounded per step; calc-rec: recall on invalid \
         calculation steps (wrong result, operator, dropped term); ungr-rec: recall on steps \
         using a number from nowhere; coverage: steps that got a vote; false: correct or \
         propagated steps called wrong; missed: wrong steps whose claim was judged Valid; \
         pass-prec: PASS verdicts on correct traces over all PASS verdicts; wrong-pass: wrong \
         traces that passed; P/F/I: trace verdicts Pass/Fail/Inconclusive"
    );
    if !proofs.is_empty() {
        outln!("");
        outln!(
            "{:<19} {:>6} {:>6} {:>9} {:>11} {:>9} {:>9} {:>12}",
            "proof family",
            "proofs",
            "wrong",
            "agreement",
            "first-error",
            "fail-prec",
            "pass-prec",
            "inconclusive"
        );
        for (f, c) in &proofs {
            outln!(
                "{:<19} {:>6} {:>6} {:>9.3} {:>11.3} {:>9.3} {:>9.3} {:>12}",
                f,
                c.proofs,
                c.wrong,
                c.agreement(),
                c.first_error_accuracy(),
                c.fail_precision(),
                c.pass_precision(),
                c.inconclusive
            );
        }
        outln!(
            "proofs: generated (seed {}), each cut by its structure and judged by Computer seats as on the network; agreement: PASS on correct and FAIL on wrong proofs (INCONCLUSIVE counts against); first-error: the first step judged wrong is the labelled one (line and kind); fail-prec / pass-prec: FAIL verdicts on wrong / PASS verdicts on correct proofs",
            args.proof_seed
        );
    }
    if let Some(a) = &agents {
        print_agents(a);
    }
    for id in &report.wrong_passes {
        outln!("wrong pass   {id}");
    }
    for (id, step, label) in &report.false_alarms {
        outln!("false alarm  {id}: {step:?} (labelled {label})");
    }
    for (id, why) in &report.skipped {
        outln!("skipped      {id}: {why}");
    }
    Ok(())
}

/// The agent-transcript corpus in `dir`, judged as `check` judges (the sandbox started
/// with its defaults; without one, tool calls abstain and the report says `none`).
fn agent_corpus(dir: &Path) -> Result<quality::agent::AgentReport, CliError> {
    let read = |name: &str| {
        std::fs::read_to_string(dir.join(name))
            .map_err(|e| CliError::usage(format!("--agents {}: {name}: {e}", dir.display())))
    };
    let (manifest, sources) = (read("manifest.json")?, read("sources.json")?);
    let items = quality::agent::read_corpus(&manifest, &sources, |n| {
        std::fs::read_to_string(dir.join(n)).ok()
    })
    .map_err(|e| CliError::usage(format!("--agents {}: {e}", dir.display())))?;
    let exec = crate::audit::computer::start_sandbox(&trust_sandbox::Config::default());
    Ok(quality::agent::run_agents(&items, exec.as_deref()))
}

/// The agent corpus's table: each class, then the transcripts that broke a rule.
fn print_agents(a: &quality::agent::AgentReport) {
    let t = &a.table;
    outln!("");
    outln!(
        "agent transcripts (tool calls re-run with {}, no LLM tier):",
        a.interpreter
    );
    outln!(
        "right               {:>3}: {} FAIL, {} PASS; tool calls {} of {} Valid, restatements {} of {} Valid",
        t.right,
        t.right_failed,
        t.right_passed,
        t.right_tool_segments.1,
        t.right_tool_segments.0,
        t.right_restatement_segments.1,
        t.right_restatement_segments.0
    );
    outln!(
        "wrong               {:>3}: {} PASS, {} FAIL",
        t.wrong,
        t.wrong_passed,
        t.wrong_failed
    );
    outln!(
        "edited tool output  {:>3}: {} FAIL with the tool call Invalid",
        t.edited_tool.0,
        t.edited_tool.1
    );
    outln!(
        "edited restatement  {:>3}: {} FAIL",
        t.edited_restatement.0,
        t.edited_restatement.1
    );
    outln!(
        "misread output      {:>3}: {} FAIL",
        t.misread.0,
        t.misread.1
    );
    outln!(
        "buggy code          {:>3}: {} PASS",
        t.buggy_code.0,
        t.buggy_code.1
    );
}
