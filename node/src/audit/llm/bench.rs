//! `trust-node bench quality --tier llm`: the LLM tier's decisions against the labelled
//! corpus, with what they cost.
//!
//! Each record is decomposed as a provider would for a network with Computer and LLM
//! auditors (Human-tier segments travel as givens), and **every** kept segment is judged
//! by the LLM judge on the same view a seat receives (claim, cited claims in manifest
//! order, givens): what the LLM tier would say if every segment escalated to it. A step
//! is flagged when a segment inside it was voted Invalid or Ungrounded, judged when such a
//! segment got any vote, as in [`trust_judging::quality`]. Besides precision, recall and
//! coverage it counts entailment calls and wall time per segment.

use std::{
    collections::BTreeMap,
    sync::atomic::Ordering,
    time::{Duration, Instant},
};

use serde::Serialize;
use trust_protocol::{
    Hash, Vote,
    trace::{Trace, TraceError},
    tx::Tier,
};

use super::LlmAuditor;
use trust_judging::{
    decompose::{DecomposeError, Options, decompose},
    judge::Auditor,
    preview::manifest_views,
    quality::{Record, StepNotFound, ratio, step_spans},
    session::prepare,
};

/// The corpus cannot be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BenchError {
    /// A line (its number given, from 1) is not a record.
    #[error("line {line}: {source}")]
    Record {
        /// The line's number.
        line: usize,
        /// What serde found.
        #[source]
        source: serde_json::Error,
    },
}

/// Why one record is skipped.
#[derive(Debug, thiserror::Error)]
enum Skip {
    /// Its trace does not parse.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// Its trace does not decompose.
    #[error(transparent)]
    Decompose(#[from] DecomposeError),
    /// Its labelled steps are not in its thinking (the reason as the labels' reader
    /// gives it).
    #[error("{0}")]
    Steps(#[from] StepNotFound),
}

/// Counts over the traces judged.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LlmCounts {
    /// Traces judged.
    pub traces: u64,
    /// Labelled steps.
    pub steps: u64,
    /// Steps that got a vote (not only abstentions).
    pub judged: u64,
    /// Steps labelled invalid or ungrounded.
    pub errors: u64,
    /// Error steps flagged Invalid or Ungrounded.
    pub caught: u64,
    /// Correct or propagated steps flagged.
    pub false_alarms: u64,
    /// Error steps voted Valid.
    pub passed_errors: u64,
    /// Correct steps voted Valid.
    pub valid_correct: u64,
    /// Segments judged by the LLM.
    pub segments: u64,
    /// Of those, abstentions.
    pub abstained: u64,
    /// Model calls over all segments: entailment questions (distinct premise subsets)
    /// and consistency probes.
    pub calls: u64,
    /// Failed LLM attempts.
    pub errors_llm: u64,
    /// Wall time of all judgements, in seconds.
    pub seconds: f64,
}

impl LlmCounts {
    /// Flagged errors over flagged steps (1.0 when nothing was flagged).
    pub fn precision(&self) -> f64 {
        ratio(self.caught, self.caught + self.false_alarms, 1.0)
    }

    /// Flagged errors over error steps.
    pub fn recall(&self) -> f64 {
        ratio(self.caught, self.errors, 0.0)
    }

    /// Steps judged over steps.
    pub fn coverage(&self) -> f64 {
        ratio(self.judged, self.steps, 0.0)
    }

    /// Entailment calls per segment.
    pub fn calls_per_segment(&self) -> f64 {
        ratio(self.calls, self.segments, 0.0)
    }

    /// Seconds per segment.
    pub fn seconds_per_segment(&self) -> f64 {
        if self.segments == 0 {
            0.0
        } else {
            self.seconds / self.segments as f64
        }
    }
}

/// The benchmark's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct LlmReport {
    /// Per family.
    pub families: BTreeMap<String, LlmCounts>,
    /// Over everything.
    pub overall: LlmCounts,
    /// Records that could not be read or decomposed: (id, why).
    pub skipped: Vec<(String, String)>,
}

fn add(a: &mut LlmCounts, b: &LlmCounts) {
    a.traces += b.traces;
    a.steps += b.steps;
    a.judged += b.judged;
    a.errors += b.errors;
    a.caught += b.caught;
    a.false_alarms += b.false_alarms;
    a.passed_errors += b.passed_errors;
    a.valid_correct += b.valid_correct;
    a.segments += b.segments;
    a.abstained += b.abstained;
    a.calls += b.calls;
    a.errors_llm += b.errors_llm;
    a.seconds += b.seconds;
}

async fn score(r: &Record, judge: &LlmAuditor) -> Result<LlmCounts, Skip> {
    let trace = Trace::parse(&r.trace)?;
    let hdag = decompose(&trace, &Options::default())?;
    let kept = prepare::restrict(&hdag, |t| t != Tier::Human);
    let m = judge.client().metrics();
    let asked = || m.entailments.load(Ordering::Relaxed) + m.probes.load(Ordering::Relaxed);
    let calls_before = asked();
    let errors_before = m.errors_total();
    let mut c = LlmCounts {
        traces: 1,
        ..LlmCounts::default()
    };
    let started = Instant::now();
    let mut decided: Vec<(String, Vote)> = Vec::new();
    for k in manifest_views(&kept) {
        let (n, view) = (&k.id, &k.view);
        let seed = Hash::of_parts("trust/v1/bench-llm", &[r.id.as_bytes(), n.as_bytes()]);
        let d = judge.judge(view, &seed).await;
        c.segments += 1;
        c.abstained += u64::from(d.vote.is_abstain());
        decided.push((view.claim.clone(), d.vote));
    }
    c.seconds = started.elapsed().as_secs_f64();
    c.calls = asked().saturating_sub(calls_before);
    c.errors_llm = m.errors_total().saturating_sub(errors_before);
    step_spans(&trace.thinking, &r.steps)?;
    for s in &r.steps {
        let votes: Vec<Vote> = decided
            .iter()
            .filter(|(content, _)| s.text.contains(content.as_str()))
            .map(|(_, v)| *v)
            .collect();
        let flagged = votes.iter().any(|v| v.is_error());
        let valid = !flagged && votes.contains(&Vote::Valid);
        c.steps += 1;
        c.judged += u64::from(votes.iter().any(|v| !v.is_abstain()));
        if matches!(s.label.as_str(), "invalid" | "ungrounded") {
            c.errors += 1;
            c.caught += u64::from(flagged);
            c.passed_errors += u64::from(valid);
        } else {
            c.valid_correct += u64::from(valid);
            c.false_alarms += u64::from(flagged);
        }
    }
    Ok(c)
}

/// Runs the benchmark over the first `limit` records of JSONL text, at most `budget` of
/// wall time (the records begun before it ran out are finished).
pub async fn run(
    jsonl: &str,
    judge: &LlmAuditor,
    limit: usize,
    budget: Duration,
) -> Result<LlmReport, BenchError> {
    let started = Instant::now();
    let mut report = LlmReport::default();
    let mut taken = 0usize;
    for (n, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if taken >= limit || started.elapsed() >= budget {
            break;
        }
        taken += 1;
        let r: Record = serde_json::from_str(line).map_err(|source| BenchError::Record {
            line: n + 1,
            source,
        })?;
        match score(&r, judge).await {
            Ok(c) => {
                add(&mut report.overall, &c);
                add(report.families.entry(r.family.clone()).or_default(), &c);
            }
            Err(why) => report.skipped.push((r.id.clone(), why.to_string())),
        }
    }
    Ok(report)
}
