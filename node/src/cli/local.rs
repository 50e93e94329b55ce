//! `trust-node decompose` and `trust-node check`: a provider's local preview of how a
//! trace will be split and what the Computer tier will say, without a network.
//!
//! `check` prints [`crate::audit::preview`]: what a network of Computer-tier seats would
//! decide, judged by the same auditor on the same inputs a seat receives, with ARES
//! propagation and the contract's three-valued trace verdict. Segments routed to the LLM
//! or Human tier are left out, as on such a network.

use std::path::PathBuf;

use serde_json::json;
use trust_contracts::SegmentVerdict;
use trust_protocol::{
    hdag::{AuditorType, Hdag},
    trace::{MAX_TRACE_BYTES, Trace},
    tx::Tier,
};

use crate::{
    audit::preview::{PreviewSegment, preview},
    cli::{CliError, CliResult, read_input_file},
    decompose::{self, Options},
};

/// Arguments shared by `decompose` and `check`.
#[derive(Debug, clap::Args)]
pub struct TraceArgs {
    /// The trace: JSON `{"problem", "thinking", "output"}` or plain text with the headings
    /// `## Problem Statement`, `## Thinking Process` and `## Final Output`.
    pub trace: PathBuf,
    /// Use this HDAG (the paper's "Complete HDAG JSON") instead of the heuristic
    /// decomposition; every segment must be an exact span of the trace.
    #[arg(long)]
    pub hdag: Option<PathBuf>,
    /// Route the final answer to a person (high-stakes trace).
    #[arg(long)]
    pub high_stakes: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
}

fn load(args: &TraceArgs) -> Result<(Trace, Hdag), CliError> {
    let text = read_input_file(&args.trace, MAX_TRACE_BYTES as u64)?;
    let trace = Trace::parse(&text)
        .map_err(|e| CliError::usage(format!("{}: {e}", args.trace.display())))?;
    let hdag = match &args.hdag {
        Some(path) => {
            let json = read_input_file(path, trust_protocol::hdag::MAX_HDAG_JSON_BYTES as u64)?;
            decompose::from_provider(&trace, &json)
                .map_err(|e| CliError::usage(format!("{}: {e}", path.display())))?
        }
        None => decompose::decompose(
            &trace,
            &Options {
                high_stakes: args.high_stakes,
            },
        )
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
            clip(&n.content, 70)
        );
    }
    outln!("{} segments, {} edges", hdag.nodes.len(), hdag.edges.len());
    Ok(())
}

/// `trust-node check`.
pub fn run_check(args: TraceArgs) -> CliResult {
    let (trace, hdag) = load(&args)?;
    let p = preview(&trace, &hdag);
    let row = |seg: &PreviewSegment| -> (String, String) {
        let verdict = format!("{:?}", seg.verdict);
        match (&seg.decision, seg.verdict) {
            (None, SegmentVerdict::Propagated) => (
                verdict,
                "left out (another tier); rests on a step that failed".into(),
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
        }
    };
    if args.json {
        let segments: Vec<_> = p
            .segments
            .iter()
            .map(|seg| {
                let (verdict, reason) = row(seg);
                json!({"id": seg.id, "tier": tier_name(seg.tier), "content": seg.content,
                       "verdict": verdict, "final": format!("{:?}", seg.verdict),
                       "conclusion": seg.conclusion, "reason": reason})
            })
            .collect();
        let s = serde_json::to_string_pretty(&json!({
            "segments": segments,
            "trace": format!("{:?}", p.trace.verdict),
            "summary": p.summary(),
            "judged": p.judged,
            "total": p.segments.len(),
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
        for seg in &p.segments {
            let (verdict, reason) = row(seg);
            outln!(
                "{:<5} {:<9} {:<11} {:<40} {}",
                seg.id,
                tier_name(seg.tier),
                verdict,
                clip(&seg.content, 40),
                reason
            );
        }
        outln!("{}", p.summary());
        outln!(
            "(a local preview of a network with Computer-tier auditors only: other tiers' \
             segments are left out and count as undecided; on the network, seats vote and \
             quorums decide)"
        );
    }
    Ok(())
}
