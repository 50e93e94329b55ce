//! `trust-node decompose` and `trust-node check`: a provider's local preview of how a
//! trace will be split and what the Computer tier will say, without a network.
//!
//! `check` prints [`trust_judging::preview`]: what a network of Computer-tier seats would
//! decide, judged by the same auditor on the same inputs a seat receives, with ARES
//! propagation and the contract's three-valued trace verdict. Segments routed to the LLM
//! or Human tier are left out, as on such a network.
//!
//! `--llm` asks an endpoint the paper's five decomposition steps: the async driver
//! ([`ask_endpoint`]) over the pure state machine of [`decompose::llm`].

use std::{
    path::{Path, PathBuf},
    sync::Arc,
};

use serde_json::json;
use trust_contracts::SegmentVerdict;
use trust_protocol::{
    hdag::{AuditorType, Hdag},
    trace::{Format, MAX_TRANSCRIPT_BYTES, ReadOptions, Semantics, Trace},
    tx::Tier,
};

use trust_judging::{
    decompose::{
        self, Options,
        llm::{Decomposer, Decomposition, LlmDecomposeError, MAX_REPLY_BYTES},
    },
    preview::{PreviewSegment, preview_with},
};

use crate::{
    audit::llm::client::{ChatClient, Endpoint, Limits, LlmMetrics},
    cli::{CliError, CliResult, read_input_file},
};

/// A trace file's format, as `--format` names it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum TraceFormat {
    /// Detect the format from the file.
    #[default]
    Auto,
    /// OpenAI Chat Completions messages: `{"messages": [...]}` or a bare list.
    Chat,
    /// OpenAI Responses items: a list, or `{"input", "output"}`.
    Responses,
    /// Anthropic Messages with content blocks.
    Anthropic,
    /// `<think>...</think>` text (the problem from --problem or a ## Problem Statement).
    Think,
    /// An OpenTelemetry OTLP JSON export of spans (GenAI or OpenInference attributes).
    Otel,
    /// The network's JSON `{"problem", "thinking", "output"}`.
    Json,
    /// The network's text with the three headings.
    Text,
}

impl TraceFormat {
    fn format(self) -> Option<Format> {
        match self {
            TraceFormat::Auto => None,
            TraceFormat::Chat => Some(Format::Chat),
            TraceFormat::Responses => Some(Format::Responses),
            TraceFormat::Anthropic => Some(Format::Anthropic),
            TraceFormat::Think => Some(Format::Think),
            TraceFormat::Otel => Some(Format::Otel),
            TraceFormat::Json => Some(Format::Json),
            TraceFormat::Text => Some(Format::Text),
        }
    }
}

/// How a code tool runs its code, as `--tool-semantics` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ToolSemantics {
    /// A fresh program per call; its standard output is the result.
    Script,
    /// A persistent (Jupyter-like) kernel: earlier calls run first, a bare last expression
    /// shows its value.
    Cell,
}

/// How a trace file is read: the flags `check`, `decompose`, `submit` and
/// `proof verify --trace` share. See the book's "Agent transcripts" page.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct TranscriptArgs {
    /// The trace file's format: an agent transcript (chat, responses, anthropic, think,
    /// otel) or the network's own json or text; auto detects it.
    #[arg(long, value_enum, default_value_t = TraceFormat::Auto)]
    pub format: TraceFormat,
    /// The problem statement, for <think> text that does not hold one: the text itself,
    /// or @FILE to read it from a file.
    #[arg(long, value_name = "TEXT|@FILE")]
    pub problem: Option<String>,
    /// How every code tool in the transcript runs its code, over what its tool definition
    /// says (a `semantics` field, else `cell` when its description names a Jupyter,
    /// IPython or persistent kernel, else `script`).
    #[arg(long, value_enum, value_name = "SEMANTICS")]
    pub tool_semantics: Option<ToolSemantics>,
}

impl TranscriptArgs {
    /// The reading options these flags ask for (reading `--problem @FILE`).
    pub(crate) fn options(&self) -> Result<ReadOptions, CliError> {
        let problem = match self.problem.as_deref() {
            Some(p) => match p.strip_prefix('@') {
                Some(file) => Some(read_input_file(
                    Path::new(file),
                    MAX_TRANSCRIPT_BYTES as u64,
                )?),
                None => Some(p.to_string()),
            },
            None => None,
        };
        Ok(ReadOptions {
            format: self.format.format(),
            problem,
            semantics: self.tool_semantics.map(|s| match s {
                ToolSemantics::Script => Semantics::Script,
                ToolSemantics::Cell => Semantics::Cell,
            }),
        })
    }
}

/// Reads the trace file at `path` as `how` says: any transcript format, turned into the
/// network's one form (what is sent is that form's JSON, `serde_json::to_string(&trace)`, so
/// every seat sees the same trace).
pub(crate) fn read_trace(path: &Path, how: &TranscriptArgs) -> Result<Trace, CliError> {
    let text = read_input_file(path, MAX_TRANSCRIPT_BYTES as u64)?;
    Trace::read(&text, &how.options()?)
        .map(|(trace, _)| trace)
        .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))
}

/// Arguments shared by `decompose` and `check`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The trace: an agent transcript (OpenAI chat or Responses, Anthropic Messages,
    /// <think> text, OpenTelemetry spans), JSON `{"problem", "thinking", "output"}` or
    /// plain text with the headings `## Problem Statement`, `## Thinking Process` and
    /// `## Final Output`.
    pub trace: PathBuf,
    /// How the trace file is read.
    #[command(flatten)]
    pub read: TranscriptArgs,
    /// Use this HDAG (the paper's "Complete HDAG JSON") instead of the heuristic
    /// decomposition; every segment must be an exact span of the trace.
    #[arg(long)]
    pub hdag: Option<PathBuf>,
    /// Decompose with a language model instead: the paper's five steps (appendix
    /// 0.0.9.1) asked of the OpenAI-compatible endpoint at --llm-url. Paraphrased
    /// segments are mapped to the closest exact span of the trace; when a step's answer
    /// cannot be used, the heuristic decomposition is used with a warning naming the step.
    #[arg(long, conflicts_with = "hdag")]
    pub llm: bool,
    /// The model endpoint `--llm` asks.
    #[command(flatten)]
    pub endpoint: LlmEndpointArgs,
    /// Route the final answer to a person (high-stakes trace).
    #[arg(long)]
    pub high_stakes: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// `check` only: do not re-run the transcript's tool calls in the sandbox (they are
    /// left undecided, as on a node with `[computer] execute = false`).
    #[arg(long)]
    pub no_exec: bool,
}

/// The endpoint of `--llm` / `--decompose llm`.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct LlmEndpointArgs {
    /// Base URL of the OpenAI-compatible chat endpoint for the LLM decomposition (e.g.
    /// http://127.0.0.1:8080/v1).
    #[arg(long, env = "TRUST_LLM_URL")]
    pub llm_url: Option<String>,
    /// The model name sent to that endpoint.
    #[arg(long, env = "TRUST_LLM_MODEL")]
    pub llm_model: Option<String>,
    /// The name of the environment variable holding the endpoint's API key (the key
    /// itself is never passed as a flag).
    #[arg(long)]
    pub llm_api_key_env: Option<String>,
}

/// Bounds for the decomposition's requests: long replies, a long timeout (a five-step
/// answer on a CPU takes minutes), one retry.
pub fn decompose_limits() -> Limits {
    Limits {
        request_timeout: std::time::Duration::from_secs(300),
        retries: 1,
        backoff: std::time::Duration::from_millis(500),
        max_concurrent: 1,
        max_reply_bytes: 2 * MAX_REPLY_BYTES,
        max_tokens: 8192,
    }
}

/// The async driver of the LLM decomposition: asks the five steps through `client`, one
/// after the other.
pub async fn ask_endpoint(
    client: &ChatClient,
    trace: &Trace,
) -> Result<Decomposition, LlmDecomposeError> {
    let mut d = Decomposer::new(trace);
    while let Some(p) = d.next_prompt() {
        tracing::info!(target: "trust::decompose", step = p.step.number(), name = p.step.name(), "asking the model");
        let reply = client
            .complete_text(&p.system, &p.user)
            .await
            .map_err(|e| LlmDecomposeError::Unanswered {
                step: p.step,
                reason: e.to_string(),
            })?;
        d.accept(&reply)?;
    }
    d.finish()
}

/// Decomposes `trace` through the endpoint with the paper's five steps, printing each
/// warning on stderr. When the model's output cannot be used, returns the heuristic
/// decomposition (`fell_back`), with a warning naming the step and the reason.
pub(crate) fn llm_decompose(
    trace: &Trace,
    options: &Options,
    endpoint: &LlmEndpointArgs,
) -> Result<Decomposition, CliError> {
    let url = endpoint.llm_url.as_deref().ok_or_else(|| {
        CliError::usage(
            "the LLM decomposition needs an endpoint: pass --llm-url URL (or set TRUST_LLM_URL)",
        )
    })?;
    let model = endpoint.llm_model.as_deref().ok_or_else(|| {
        CliError::usage("the LLM decomposition needs a model name: pass --llm-model NAME (or set TRUST_LLM_MODEL)")
    })?;
    let ep = Endpoint::new(url, model, endpoint.llm_api_key_env.as_deref())
        .map_err(|e| CliError::usage(e.to_string()))?;
    let client = ChatClient::new(ep, decompose_limits(), Arc::new(LlmMetrics::default()))
        .map_err(|e| CliError::failed(e.to_string()))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::failed(e.to_string()))?;
    let result = rt.block_on(ask_endpoint(&client, trace));
    let d = decompose::llm::or_heuristic(trace, options, result)
        .map_err(|e| CliError::usage(e.to_string()))?;
    for w in &d.warnings {
        eprintln!("warning: {w}");
    }
    Ok(d)
}

fn load(args: &TraceArgs) -> Result<(Trace, Hdag), CliError> {
    let trace = read_trace(&args.trace, &args.read)?;
    let options = Options {
        high_stakes: args.high_stakes,
    };
    if args.llm {
        let d = llm_decompose(&trace, &options, &args.endpoint)?;
        return Ok((trace, d.hdag));
    }
    let hdag = match &args.hdag {
        Some(path) => {
            let json = read_input_file(path, trust_protocol::hdag::MAX_HDAG_JSON_BYTES as u64)?;
            decompose::from_provider(&trace, &json)
                .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?
        }
        None => decompose::decompose(&trace, &options)
            .map_err(|e| CliError::usage(format!("{}: {e}", args.trace.display())))?,
    };
    Ok((trace, hdag))
}

fn tier(a: AuditorType) -> &'static str {
    tier_name(Tier::from(a))
}

/// A tier as users write it.
pub(crate) fn tier_name(t: Tier) -> &'static str {
    match t {
        Tier::Computer => "Computer",
        Tier::Llm => "LLM",
        Tier::Human => "Human",
    }
}

/// A segment's text as a table shows it: a tool call (issue 54) as `python: CODE → RESULT`
/// rather than its marker lines, and the `TU` claim beside it as the question it asks.
fn readable(id: &str, content: &str) -> String {
    match trust_judging::computer::tool::read_tool(content) {
        Some(t) if id.starts_with("TU") => {
            format!("does {} compute what is asked? {}", t.name, t.input)
        }
        Some(t) => format!("{}: {} → {}", t.name, t.input, t.result),
        None => content.to_string(),
    }
}

fn clip(s: &str, n: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= n {
        one_line
    } else {
        format!(
            "{}…",
            one_line
                .chars()
                .take(n.saturating_sub(1))
                .collect::<String>()
        )
    }
}

/// `trust-node decompose`.
pub fn run_decompose(args: TraceArgs) -> CliResult {
    let (_, hdag) = load(&args)?;
    if args.json {
        let s = serde_json::to_string_pretty(&hdag)
            .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?;
        outln!("{s}");
        return Ok(());
    }
    outln!(
        "{:<5} {:<10} {:<9} {:<12} content",
        "id",
        "level",
        "tier",
        "depends on"
    );
    for n in &hdag.nodes {
        let deps: Vec<&str> = hdag.dependencies_of(&n.id).collect();
        outln!(
            "{:<5} {:<10} {:<9} {:<12} {}",
            n.id,
            format!("{:?}", n.abstraction_level).to_uppercase(),
            tier(n.primary_auditor),
            deps.join(","),
            clip(&readable(&n.id, &n.content), 70)
        );
    }
    outln!("{} segments, {} edges", hdag.nodes.len(), hdag.edges.len());
    Ok(())
}

/// Whether `hdag` holds a tool call to re-run (only then is a sandbox started).
fn has_tool_calls(hdag: &trust_protocol::hdag::Hdag) -> bool {
    hdag.nodes.iter().any(|n| n.id.starts_with("TC"))
}

/// A segment of the preview with the heading of the transcript turn it sits in.
type InTurn<'a> = (&'a PreviewSegment, Option<String>);

/// The preview's segments as `check` lists them: for an agent transcript, in the order
/// the trace holds them, each with the heading of its turn (a segment the trace does not
/// hold verbatim stays after the one before it, in its turn); otherwise in HDAG order,
/// with none.
fn in_turns<'a>(trace: &Trace, hdag: &Hdag, segments: &'a [PreviewSegment]) -> Vec<InTurn<'a>> {
    use trust_judging::preview::turns::{turn_of, turns};
    let turns = turns(&trace.thinking);
    if turns.is_empty() {
        return segments.iter().map(|seg| (seg, None)).collect();
    }
    let places = trust_judging::decompose::place::places(trace, hdag);
    let at = hdag.positions();
    let mut last = (0u8, 0usize);
    let mut keyed: Vec<((u8, usize), usize, InTurn<'a>)> = segments
        .iter()
        .enumerate()
        .map(|(i, seg)| {
            let place = at
                .get(seg.id.as_str())
                .and_then(|j| places.get(*j).copied().flatten());
            let (key, turn) = match place {
                Some(pl) => {
                    let part = pl.part.as_str();
                    let rank = match part {
                        "problem" => 0,
                        "thinking" => 1,
                        _ => 2,
                    };
                    ((rank, pl.start), turn_of(&turns, part, pl.start))
                }
                None => (last, None),
            };
            last = key;
            (key, i, (seg, turn))
        })
        .collect();
    keyed.sort_by_key(|(k, i, _)| (*k, *i));
    let mut turn = None;
    keyed
        .into_iter()
        .map(|(_, _, (seg, t))| {
            if t.is_some() {
                turn.clone_from(&t);
            }
            (seg, turn.clone())
        })
        .collect()
}

/// `trust-node check`.
pub fn run_check(args: TraceArgs) -> CliResult {
    let (trace, hdag) = load(&args)?;
    let exec = has_tool_calls(&hdag)
        .then(|| {
            let cfg = trust_sandbox::Config {
                enabled: !args.no_exec,
                ..Default::default()
            };
            crate::audit::computer::start_sandbox(&cfg)
        })
        .flatten();
    let p = preview_with(&trace, &hdag, exec.as_deref());
    let row = |seg: &PreviewSegment| -> (String, String) {
        let verdict = format!("{:?}", seg.verdict);
        if seg.given {
            return (
                "-".into(),
                "the problem statement: context for every seat, not a claim to judge".into(),
            );
        }
        let (verdict, reason) = match (&seg.decision, seg.verdict) {
            (None, SegmentVerdict::Propagated) => (
                verdict,
                "left out (another tier); rests on a step that failed".into(),
            ),
            (None, SegmentVerdict::Invalid | SegmentVerdict::Ungrounded) => (
                verdict,
                "left out (another tier); a calculation in it is wrong, so it is too".into(),
            ),
            (None, _) => (
                "-".into(),
                format!(
                    "routed to the {} tier (judged on the network)",
                    tier_name(seg.tier)
                ),
            ),
            (Some(d), SegmentVerdict::Propagated) => (
                verdict,
                format!(
                    "rests on a step that failed (its own check: {:?}, {})",
                    d.vote, d.reason
                ),
            ),
            (Some(d), _) if d.vote.is_abstain() => ("Abstain".into(), d.reason.clone()),
            (Some(d), _) => (verdict, d.reason.clone()),
        };
        match &seg.supports {
            Some(step) => (verdict, format!("calculation of {step}: {reason}")),
            None => (verdict, reason),
        }
    };
    let tier_of = |seg: &PreviewSegment| {
        if seg.given {
            "given"
        } else {
            tier_name(seg.tier)
        }
    };
    if args.json {
        let segments: Vec<_> = p
            .segments
            .iter()
            .map(|seg| {
                let (verdict, reason) = row(seg);
                // The API's spelling: snake_case words, tiers as `computer`, `llm`, `human`.
                let tier = match seg.given {
                    true => "given",
                    false => crate::audit::provider::steps::tier_word(seg.tier),
                };
                json!({"id": seg.id, "tier": tier, "content": seg.content,
                       "verdict": verdict.to_lowercase(),
                       "final": crate::feed::segment_verdict(seg.verdict),
                       "conclusion": seg.conclusion, "supports": seg.supports,
                       "reason": reason})
            })
            .collect();
        let s = serde_json::to_string_pretty(&json!({
            "segments": segments,
            "trace": crate::feed::trace_verdict(p.trace.verdict),
            "summary": p.summary(),
            "judged": p.judged,
            "total": p.segments.iter().filter(|s| s.is_claim()).count(),
            "why_not_pass": p.why_not_pass(),
            "passing_weight": p.trace.passing,
            "undecided_weight": p.trace.undecided,
            "total_weight": p.trace.total,
            "error_at_conclusion": p.trace.error_at_conclusion,
        }))
        .map_err(|e| CliError::failed(format!("cannot encode JSON: {e}")))?;
        outln!("{s}");
    } else {
        outln!(
            "{:<5} {:<9} {:<11} {:<40} reason",
            "id",
            "tier",
            "verdict",
            "content"
        );
        // An agent transcript reads as its turns: the segments in the order the trace
        // holds them, under the turn each sits in (a segment the trace does not hold
        // verbatim stays after the one before it).
        let order = in_turns(&trace, &hdag, &p.segments);
        let mut heading: Option<String> = None;
        for (seg, turn) in order {
            if turn.is_some() && turn != heading {
                outln!("── {}", turn.as_deref().unwrap_or(""));
                heading = turn;
            }
            let (verdict, reason) = row(seg);
            outln!(
                "{:<5} {:<9} {:<11} {:<40} {}",
                seg.id,
                tier_of(seg),
                verdict,
                clip(&readable(&seg.id, &seg.content), 40),
                reason
            );
        }
        outln!("{}", p.summary());
        outln!(
            "(a local preview of a network with Computer-tier auditors only: other tiers' \
             segments are left out and count as undecided, an OPERATION is evidence for the \
             STEP whose calculation it is and weighs nothing of its own; on the network, \
             seats vote and quorums decide)"
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHAT: &str = r#"{"messages": [
        {"role": "user", "content": "What is 6 * 7?"},
        {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function",
            "function": {"name": "python", "arguments": "{\"code\": \"print(6 * 7)\"}"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "42"},
        {"role": "assistant", "content": "42"}]}"#;

    fn args(format: TraceFormat, problem: Option<&str>) -> TranscriptArgs {
        TranscriptArgs {
            format,
            problem: problem.map(str::to_string),
            tool_semantics: Some(ToolSemantics::Cell),
        }
    }

    #[test]
    fn trace_files_are_read_in_any_format_as_the_flags_say() {
        let dir = tempfile::tempdir().expect("tempdir");
        let chat = dir.path().join("chat.json");
        std::fs::write(&chat, CHAT).expect("write");
        let t = read_trace(&chat, &args(TraceFormat::Auto, None)).expect("reads");
        assert_eq!(
            (t.problem.as_str(), t.output.as_str()),
            ("What is 6 * 7?", "42")
        );
        assert!(
            t.thinking
                .contains("<<<tool id=c1 name=python semantics=cell>>>\nprint(6 * 7)\n")
        );
        // What is sent reads back as the same trace, in the network's JSON form.
        let sent = serde_json::to_string(&t).expect("json");
        assert_eq!(Trace::parse(&sent), Ok(t));

        let e = read_trace(&chat, &args(TraceFormat::Otel, None)).expect_err("not spans");
        assert!(
            e.message.contains("chat.json: otel transcript"),
            "{}",
            e.message
        );

        let think = dir.path().join("r1.txt");
        std::fs::write(&think, "<think>6 * 7 = 42</think>\n42").expect("write");
        let problem = dir.path().join("problem.txt");
        std::fs::write(&problem, "What is 6 * 7?").expect("write");
        let at = format!("@{}", problem.display());
        let t = read_trace(&think, &args(TraceFormat::Think, Some(&at))).expect("reads");
        assert_eq!(t.problem, "What is 6 * 7?");
        let e = read_trace(&think, &args(TraceFormat::Auto, None)).expect_err("no problem");
        assert!(e.message.contains("--problem"), "{}", e.message);
    }
}
