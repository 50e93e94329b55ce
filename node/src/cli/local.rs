//! `trust-node decompose` and `trust-node check`: a provider's local preview of how a
//! trace will be split and what the Computer tier will say, without a network.
//!
//! `check` runs the same deterministic checkers an auditor's Computer seat runs, one
//! segment at a time with only its `depends_on` premises and the problem statement, and
//! marks a segment Propagated when a step it depends on failed (ARES). Segments routed to
//! the LLM or Human tier are listed as such: they are judged by those seats on the
//! network, not here.

use std::{collections::BTreeMap, path::PathBuf};

use serde_json::json;
use trust_protocol::{
    Hash, Vote,
    hdag::{AuditorType, Hdag},
    trace::{MAX_TRACE_BYTES, Trace},
};

use crate::{
    audit::computer::{Judgement, StepInput, check},
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
    match a {
        AuditorType::Auto => "Computer",
        AuditorType::Llm => "LLM",
        AuditorType::Human => "Human",
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

/// A local verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Local {
    Checked(Judgement),
    Propagated(String),
    OtherTier(AuditorType),
}

/// `trust-node check`.
pub fn run_check(args: TraceArgs) -> CliResult {
    let (trace, hdag) = load(&args)?;
    let content: BTreeMap<&str, &str> = hdag
        .nodes
        .iter()
        .map(|n| (n.id.as_str(), n.content.as_str()))
        .collect();
    let trace_id = Hash::of_parts("trust/v1/local-check", &[trace.thinking.as_bytes()]);
    // Nodes are judged in an order where dependencies come first (validation guarantees
    // there is one); decomposition already emits that order, a provider HDAG may not.
    let order = decompose::dependency_order(&hdag);
    let mut verdicts: BTreeMap<String, Local> = BTreeMap::new();
    for i in order {
        let Some(n) = hdag.nodes.get(i) else { continue };
        let deps: Vec<&str> = hdag.dependencies_of(&n.id).collect();
        let failed_dep = deps.iter().find(|d| {
            matches!(
                verdicts.get(**d),
                Some(Local::Propagated(_))
                    | Some(Local::Checked(Judgement::Vote {
                        vote: Vote::Invalid | Vote::Ungrounded,
                        ..
                    }))
            )
        });
        let premises: Vec<&str> = deps
            .iter()
            .filter_map(|d| content.get(d).copied())
            .collect();
        let local = if n.primary_auditor != AuditorType::Auto {
            Local::OtherTier(n.primary_auditor)
        } else {
            let j = check(
                &StepInput {
                    claim: &n.content,
                    premises: &premises,
                    context: &trace.problem,
                },
                &Hash::of_parts(
                    "trust/v1/local-check",
                    &[trace_id.as_ref(), n.id.as_bytes()],
                ),
            );
            match (failed_dep, &j) {
                (
                    Some(d),
                    Judgement::Vote {
                        vote: Vote::Valid, ..
                    }
                    | Judgement::Abstain(_),
                ) => Local::Propagated(format!("depends on {d}, which failed")),
                _ => Local::Checked(j),
            }
        };
        verdicts.insert(n.id.clone(), local);
    }

    let row = |id: &str| -> (String, String) {
        match verdicts.get(id) {
            Some(Local::Checked(Judgement::Vote { vote, reason })) => {
                (format!("{vote:?}"), reason.clone())
            }
            Some(Local::Checked(Judgement::Abstain(why))) => ("Abstain".into(), why.clone()),
            Some(Local::Propagated(why)) => ("Propagated".into(), why.clone()),
            Some(Local::OtherTier(t)) => (
                "-".into(),
                format!("routed to the {} tier (judged on the network)", tier(*t)),
            ),
            None => ("-".into(), String::new()),
        }
    };
    let failed = verdicts
        .values()
        .filter(|v| {
            matches!(
                v,
                Local::Propagated(_)
                    | Local::Checked(Judgement::Vote {
                        vote: Vote::Invalid | Vote::Ungrounded,
                        ..
                    })
            )
        })
        .count();
    if args.json {
        let segments: Vec<_> = hdag
            .nodes
            .iter()
            .map(|n| {
                let (verdict, reason) = row(&n.id);
                json!({"id": n.id, "tier": tier(n.primary_auditor), "content": n.content,
                       "verdict": verdict, "reason": reason})
            })
            .collect();
        let s = serde_json::to_string_pretty(&json!({"segments": segments, "failed": failed}))
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
        for n in &hdag.nodes {
            let (verdict, reason) = row(&n.id);
            outln!(
                "{:<5} {:<9} {:<11} {:<40} {}",
                n.id,
                tier(n.primary_auditor),
                verdict,
                clip(&n.content, 40),
                reason
            );
        }
        outln!(
            "{failed} segment(s) failed the local Computer-tier check (a local preview: \
             on the network, seats vote and quorums decide)."
        );
    }
    Ok(())
}
