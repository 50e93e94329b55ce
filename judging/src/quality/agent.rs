//! The agent-transcript benchmark: labelled tool-using transcripts judged as `trust-node
//! check` judges them (the heuristic decomposition, the Computer tier with the node's
//! sandbox, no LLM tier), per transcript and as the table issue 54 asks for.
//!
//! Labels come from the corpus (`manifest.json`: `pass` or `fail`; `sources.json`: each
//! item's kind, e.g. `right`, `tampered-tool-output`, `tampered-prose-restatement`,
//! `natural-misread-output`). What is counted, for each class:
//! - **right**: FAILs (must be none), and whether every tool segment and every
//!   restatement was judged Valid;
//! - **wrong**: PASSes (must be none);
//! - **edited tool output**: FAILs with a tool segment judged Invalid;
//! - **edited restatement**: FAILs;
//! - **misread** (the model misreports its own output, its code right): FAILs;
//! - **buggy code** (faithful or misreported): PASSes (must be none).

use serde::Serialize;
use trust_contracts::TraceVerdict;
use trust_protocol::trace::{ReadOptions, Trace};
use trust_sandbox::Execute;

use crate::{
    computer::tool::{RESTATEMENT_KIND, TOOL_KIND},
    decompose::{DecomposeError, Options, decompose},
    preview::preview_with,
};

/// Why an agent corpus could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AgentCorpusError {
    /// `manifest.json` or `sources.json` is not what the corpus README describes.
    #[error("{file}: {why}")]
    Index {
        /// Which file.
        file: &'static str,
        /// What is wrong.
        why: String,
    },
    /// A transcript the manifest names is missing or does not read.
    #[error("{name}: {why}")]
    Item {
        /// The transcript's file name.
        name: String,
        /// What is wrong.
        why: String,
    },
}

/// The items of an agent corpus: `manifest` (`manifest.json`: file name → `pass` or
/// `fail`), `sources` (`sources.json`: file name → an object with its `kind`) and
/// `file(name)`, the text of each transcript, read with the network's transcript readers
/// ([`Trace::read`], the format detected, the tool semantics from each transcript's tool
/// definitions), in the manifest's order.
pub fn read_corpus(
    manifest: &str,
    sources: &str,
    file: impl Fn(&str) -> Option<String>,
) -> Result<Vec<AgentItem>, AgentCorpusError> {
    let index = |file: &'static str, text: &str| {
        serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(text).map_err(|e| {
            AgentCorpusError::Index {
                file,
                why: e.to_string(),
            }
        })
    };
    let labels = index("manifest.json", manifest)?;
    let kinds = index("sources.json", sources)?;
    let mut out = Vec::with_capacity(labels.len());
    for (name, label) in &labels {
        let item = |why: String| AgentCorpusError::Item {
            name: name.clone(),
            why,
        };
        let label = label
            .as_str()
            .ok_or_else(|| item("its label is not a string".into()))?;
        let kind = kinds
            .get(name)
            .and_then(|s| s.get("kind"))
            .and_then(|k| k.as_str())
            .ok_or_else(|| item("sources.json gives no kind".into()))?;
        let text = file(name).ok_or_else(|| item("the file cannot be read".into()))?;
        let (trace, _) =
            Trace::read(&text, &ReadOptions::default()).map_err(|e| item(e.to_string()))?;
        out.push(AgentItem {
            name: name.clone(),
            label: label.to_string(),
            kind: kind.to_string(),
            trace,
        });
    }
    Ok(out)
}

/// One labelled transcript.
#[derive(Debug, Clone)]
pub struct AgentItem {
    /// Its file name.
    pub name: String,
    /// `pass` or `fail`.
    pub label: String,
    /// Its kind in `sources.json` (`right`, `tampered-tool-output`, ...).
    pub kind: String,
    /// The transcript, read.
    pub trace: Trace,
}

/// What a class of items an item is in, for the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Class {
    /// Right.
    Right,
    /// One tool output edited.
    EditedTool,
    /// One restatement edited.
    EditedRestatement,
    /// The model misreads or misreports its own (right) code's output.
    Misread,
    /// Buggy code (its output faithful, or misreported too).
    BuggyCode,
    /// Any other wrong item.
    OtherWrong,
}

impl Class {
    /// The class of an item of `kind` labelled `label`.
    pub fn of(label: &str, kind: &str) -> Class {
        if label == "pass" {
            return Class::Right;
        }
        match kind {
            "tampered-tool-output" => Class::EditedTool,
            "tampered-prose-restatement" => Class::EditedRestatement,
            k if k.starts_with("natural-") && (k.contains("bug") || k.contains("modelling")) => {
                Class::BuggyCode
            }
            k if k.starts_with("natural-") => Class::Misread,
            _ => Class::OtherWrong,
        }
    }
}

/// One judged segment of a tool call or restatement.
#[derive(Debug, Clone, Serialize)]
pub struct Judged {
    /// The HDAG id (`TC1`, `RS2`, ...).
    pub id: String,
    /// The vote (`None`: the seat abstained).
    pub vote: Option<String>,
    /// The judge's reason (the provider's, with details).
    pub reason: String,
}

/// One transcript's result.
#[derive(Debug, Clone, Serialize)]
pub struct AgentRow {
    /// File name.
    pub name: String,
    /// Its class.
    pub class: Class,
    /// Its kind in the corpus.
    pub kind: String,
    /// The trace verdict, or why it could not be judged.
    pub verdict: String,
    /// Its tool segments.
    pub tools: Vec<Judged>,
    /// Its restatements.
    pub restatements: Vec<Judged>,
    /// The preview's one-line summary.
    pub summary: String,
}

impl AgentRow {
    fn all_valid(list: &[Judged]) -> bool {
        list.iter().all(|j| j.vote.as_deref() == Some("Valid"))
    }

    /// Whether every tool segment was judged Valid.
    pub fn tools_valid(&self) -> bool {
        Self::all_valid(&self.tools)
    }

    /// Whether every restatement was judged Valid.
    pub fn restatements_valid(&self) -> bool {
        Self::all_valid(&self.restatements)
    }

    /// Whether a tool segment was judged Invalid.
    pub fn tool_invalid(&self) -> bool {
        self.tools
            .iter()
            .any(|j| j.vote.as_deref() == Some("Invalid"))
    }

    fn is(&self, v: TraceVerdict) -> bool {
        self.verdict == format!("{v:?}").to_uppercase()
    }
}

/// The table issue 54's "Done when" reads.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentTable {
    /// Right transcripts.
    pub right: u64,
    /// Of them, FAIL (must be 0).
    pub right_failed: u64,
    /// Of them, PASS.
    pub right_passed: u64,
    /// Of them, every tool segment Valid.
    pub right_tools_valid: u64,
    /// Of them, every restatement Valid.
    pub right_restatements_valid: u64,
    /// Tool segments in right transcripts, and how many Valid.
    pub right_tool_segments: (u64, u64),
    /// Restatements in right transcripts, and how many Valid.
    pub right_restatement_segments: (u64, u64),
    /// Wrong transcripts.
    pub wrong: u64,
    /// Of them, PASS (must be 0).
    pub wrong_passed: u64,
    /// Of them, FAIL.
    pub wrong_failed: u64,
    /// Edited tool outputs, and how many FAIL with a tool segment Invalid.
    pub edited_tool: (u64, u64),
    /// Edited restatements, and how many FAIL.
    pub edited_restatement: (u64, u64),
    /// Misreads of a right program's output, and how many FAIL.
    pub misread: (u64, u64),
    /// Buggy code, and how many PASS (must be 0).
    pub buggy_code: (u64, u64),
}

/// The benchmark's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentReport {
    /// Per transcript, in corpus order.
    pub rows: Vec<AgentRow>,
    /// The table.
    pub table: AgentTable,
    /// The interpreter the tool calls were re-run with (`none`: no sandbox).
    pub interpreter: String,
}

fn judged(
    p: &crate::preview::Preview,
    kind: &str,
    hdag: &trust_protocol::hdag::Hdag,
) -> Vec<Judged> {
    hdag.nodes
        .iter()
        .filter(|n| n.kind == kind)
        .filter_map(|n| p.segments.iter().find(|s| s.id == n.id))
        .map(|s| Judged {
            id: s.id.clone(),
            vote: s
                .decision
                .as_ref()
                .filter(|d| !d.vote.is_abstain())
                .map(|d| format!("{:?}", d.vote)),
            reason: s
                .decision
                .as_ref()
                .map(|d| d.reason.clone())
                .unwrap_or_else(|| "left out".into()),
        })
        .collect()
}

/// Judges every item as `trust-node check` does on a node whose sandbox is `exec`.
pub fn run_agents(items: &[AgentItem], exec: Option<&dyn Execute>) -> AgentReport {
    let mut report = AgentReport {
        interpreter: exec.map_or_else(|| "none".to_string(), |e| e.interpreter().to_string()),
        ..AgentReport::default()
    };
    for item in items {
        let class = Class::of(&item.label, &item.kind);
        let row = match decompose(&item.trace, &Options::default()) {
            Ok(h) => {
                let p = preview_with(&item.trace, &h, exec);
                AgentRow {
                    name: item.name.clone(),
                    class,
                    kind: item.kind.clone(),
                    verdict: format!("{:?}", p.trace.verdict).to_uppercase(),
                    tools: judged(&p, TOOL_KIND, &h),
                    restatements: judged(&p, RESTATEMENT_KIND, &h),
                    summary: p.summary(),
                }
            }
            Err(e) => AgentRow {
                name: item.name.clone(),
                class,
                kind: item.kind.clone(),
                verdict: format!("not decomposed: {}", undecomposed(&e)),
                tools: Vec::new(),
                restatements: Vec::new(),
                summary: String::new(),
            },
        };
        tally(&mut report.table, &row);
        report.rows.push(row);
    }
    report
}

fn undecomposed(e: &DecomposeError) -> String {
    e.to_string()
}

fn tally(t: &mut AgentTable, row: &AgentRow) {
    let fail = row.is(TraceVerdict::Fail);
    let pass = row.is(TraceVerdict::Pass);
    let inc = |x: &mut u64, yes: bool| *x = x.saturating_add(u64::from(yes));
    let count = |list: &[Judged]| {
        (
            list.len() as u64,
            list.iter()
                .filter(|j| j.vote.as_deref() == Some("Valid"))
                .count() as u64,
        )
    };
    if row.class == Class::Right {
        inc(&mut t.right, true);
        inc(&mut t.right_failed, fail);
        inc(&mut t.right_passed, pass);
        inc(&mut t.right_tools_valid, row.tools_valid());
        inc(&mut t.right_restatements_valid, row.restatements_valid());
        let (n, v) = count(&row.tools);
        t.right_tool_segments.0 = t.right_tool_segments.0.saturating_add(n);
        t.right_tool_segments.1 = t.right_tool_segments.1.saturating_add(v);
        let (n, v) = count(&row.restatements);
        t.right_restatement_segments.0 = t.right_restatement_segments.0.saturating_add(n);
        t.right_restatement_segments.1 = t.right_restatement_segments.1.saturating_add(v);
        return;
    }
    inc(&mut t.wrong, true);
    inc(&mut t.wrong_passed, pass);
    inc(&mut t.wrong_failed, fail);
    let slot = match row.class {
        Class::EditedTool => Some((&mut t.edited_tool, fail && row.tool_invalid())),
        Class::EditedRestatement => Some((&mut t.edited_restatement, fail)),
        Class::Misread => Some((&mut t.misread, fail)),
        Class::BuggyCode => Some((&mut t.buggy_code, pass)),
        Class::Right | Class::OtherWrong => None,
    };
    if let Some((pair, hit)) = slot {
        pair.0 = pair.0.saturating_add(1);
        pair.1 = pair.1.saturating_add(u64::from(hit));
    }
}
