//! The quality benchmark: how the Computer tier's verdicts compare with a labelled corpus.
//!
//! Each corpus record is a trace with a label per reasoning step (`correct`, `invalid`,
//! `ungrounded`, `propagated`: ARES's error kinds; a propagated step is locally sound and
//! carries an earlier error forward) and a label for the whole trace. Every record goes
//! through the same decomposition and [`super::preview`] a provider's `trust-node check`
//! runs, so the numbers are those of a Computer-only network. A step counts as flagged
//! when a segment inside it was judged Invalid or Ungrounded on its own (not by
//! propagation), and as judged when such a segment received any vote.
//!
//! The numbers are kept per level too: the step's **claim** (the segments that are its
//! claim: a STEP, or a unit the Computer tier covers whole) and its **calculations** (the
//! OPERATIONs of a worded STEP). A calculation that holds is no verdict on the claim
//! around it: a step whose reasoning is wrong (`reasoning`: every calculation holds, the
//! claim does not) must never be judged Valid at the claim level, and a trace holding one
//! must never pass. **PASS precision** is the share of PASS verdicts that fall on correct
//! traces.
//!
//! The corpus format is documented in `scripts/corpus/README.md`. Agent transcripts (tool
//! calls re-run by the Computer tier) are measured by [`agent`].

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use trust_contracts::TraceVerdict;
use trust_protocol::{
    Vote,
    trace::{Trace, TraceError},
};

use super::preview::preview;
use crate::decompose::{DecomposeError, Options, decompose};

pub mod agent;

/// One step of a corpus trace.
#[derive(Debug, Clone, Deserialize)]
pub struct LabelledStep {
    /// Its text: an exact span of the trace's thinking.
    pub text: String,
    /// `correct`, `invalid`, `ungrounded`, `reasoning` (its calculations hold, its claim
    /// about the problem does not) or `propagated`.
    pub label: String,
}

/// One corpus record.
#[derive(Debug, Clone, Deserialize)]
pub struct Record {
    /// Record id.
    pub id: String,
    /// Problem family (`gsm`, `arithmetic`, ...).
    pub family: String,
    /// The trace, with the paper's headings.
    pub trace: String,
    /// Its steps, in order.
    pub steps: Vec<LabelledStep>,
    /// `correct` or `incorrect`.
    pub trace_label: String,
}

/// Counts for one family (or all).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Counts {
    /// Traces.
    pub traces: u64,
    /// Steps.
    pub steps: u64,
    /// Steps that received a vote (not only abstentions).
    pub judged: u64,
    /// Steps labelled invalid or ungrounded.
    pub errors: u64,
    /// Steps labelled invalid on a calculation line (one with `=` and a digit): a wrong
    /// result, operator or dropped term.
    pub calc_errors: u64,
    /// Steps labelled ungrounded (a number from nowhere).
    pub ungrounded_errors: u64,
    /// Of those, flagged Invalid or Ungrounded.
    pub ungrounded_caught: u64,
    /// Error steps flagged Invalid or Ungrounded.
    pub caught: u64,
    /// Calculation error steps flagged.
    pub calc_caught: u64,
    /// Steps labelled reasoning (every calculation holds, the claim does not).
    pub reasoning_errors: u64,
    /// Of those, flagged Invalid or Ungrounded.
    pub reasoning_caught: u64,
    /// Correct or propagated steps flagged: a correct step called wrong.
    pub false_alarms: u64,
    /// Error steps whose claim was judged Valid (a calculation inside that holds does not
    /// count: it is no verdict on the claim).
    pub passed_errors: u64,
    /// Correct steps whose claim was judged Valid.
    pub valid_correct: u64,
    /// Steps whose claim received a vote.
    pub claims_judged: u64,
    /// Steps with calculations checked on their own (OPERATIONs of a worded STEP).
    pub with_operations: u64,
    /// Calculations checked on their own.
    pub operations: u64,
    /// Of those, judged to hold.
    pub operations_hold: u64,
    /// Of those, judged wrong.
    pub operations_wrong: u64,
    /// Calculations judged wrong inside steps whose calculations are right (labelled
    /// correct, propagated or reasoning): a calculation called wrong falsely.
    pub operations_false: u64,
    /// Trace verdicts: `[label correct, label incorrect] x [Pass, Fail, Inconclusive]`.
    pub confusion: [[u64; 3]; 2],
    /// Segments judged / all segments, over the traces.
    pub segments_judged: u64,
    /// All segments.
    pub segments: u64,
}

impl Counts {
    fn add(&mut self, o: &Counts) {
        self.traces = self.traces.saturating_add(o.traces);
        self.steps = self.steps.saturating_add(o.steps);
        self.judged = self.judged.saturating_add(o.judged);
        self.errors = self.errors.saturating_add(o.errors);
        self.calc_errors = self.calc_errors.saturating_add(o.calc_errors);
        self.caught = self.caught.saturating_add(o.caught);
        self.calc_caught = self.calc_caught.saturating_add(o.calc_caught);
        self.ungrounded_errors = self.ungrounded_errors.saturating_add(o.ungrounded_errors);
        self.ungrounded_caught = self.ungrounded_caught.saturating_add(o.ungrounded_caught);
        self.reasoning_errors = self.reasoning_errors.saturating_add(o.reasoning_errors);
        self.reasoning_caught = self.reasoning_caught.saturating_add(o.reasoning_caught);
        self.false_alarms = self.false_alarms.saturating_add(o.false_alarms);
        self.passed_errors = self.passed_errors.saturating_add(o.passed_errors);
        self.valid_correct = self.valid_correct.saturating_add(o.valid_correct);
        self.claims_judged = self.claims_judged.saturating_add(o.claims_judged);
        self.with_operations = self.with_operations.saturating_add(o.with_operations);
        self.operations = self.operations.saturating_add(o.operations);
        self.operations_hold = self.operations_hold.saturating_add(o.operations_hold);
        self.operations_wrong = self.operations_wrong.saturating_add(o.operations_wrong);
        self.operations_false = self.operations_false.saturating_add(o.operations_false);
        for (a, b) in self.confusion.iter_mut().zip(&o.confusion) {
            for (x, y) in a.iter_mut().zip(b) {
                *x = x.saturating_add(*y);
            }
        }
        self.segments_judged = self.segments_judged.saturating_add(o.segments_judged);
        self.segments = self.segments.saturating_add(o.segments);
    }

    /// Precision of Invalid/Ungrounded: flagged errors over all flagged steps (1.0 when
    /// nothing was flagged).
    pub fn precision(&self) -> f64 {
        ratio(
            self.caught,
            self.caught.saturating_add(self.false_alarms),
            1.0,
        )
    }

    /// Recall of Invalid/Ungrounded over error steps.
    pub fn recall(&self) -> f64 {
        ratio(self.caught, self.errors, 0.0)
    }

    /// Recall over invalid calculation steps.
    pub fn calc_recall(&self) -> f64 {
        ratio(self.calc_caught, self.calc_errors, 0.0)
    }

    /// Recall over ungrounded steps.
    pub fn ungrounded_recall(&self) -> f64 {
        ratio(self.ungrounded_caught, self.ungrounded_errors, 0.0)
    }

    /// Steps judged over all steps.
    pub fn coverage(&self) -> f64 {
        ratio(self.judged, self.steps, 0.0)
    }

    /// Correct traces that ended Fail.
    pub fn correct_failed(&self) -> u64 {
        self.confusion[0][1]
    }

    /// Wrong traces that ended Pass.
    pub fn wrong_passed(&self) -> u64 {
        self.confusion[1][0]
    }

    /// PASS precision: PASS verdicts on correct traces over all PASS verdicts (1.0 when
    /// nothing passed).
    pub fn pass_precision(&self) -> f64 {
        let [[ok, ..], [bad, ..]] = self.confusion;
        ratio(ok, ok.saturating_add(bad), 1.0)
    }

    /// Recall over reasoning steps (their calculations hold, their claims do not).
    pub fn reasoning_recall(&self) -> f64 {
        ratio(self.reasoning_caught, self.reasoning_errors, 0.0)
    }
}

/// `a / b`, or `empty` when `b` is 0.
pub fn ratio(a: u64, b: u64, empty: f64) -> f64 {
    if b == 0 { empty } else { a as f64 / b as f64 }
}

/// The benchmark's result.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Report {
    /// Per family.
    pub families: BTreeMap<String, Counts>,
    /// Over everything.
    pub overall: Counts,
    /// Ids of records whose correct or propagated steps were flagged (with the step), for
    /// a person to look at; at most 50.
    pub false_alarms: Vec<(String, String, String)>,
    /// Ids of wrong traces that passed, for a person to look at; at most 50.
    pub wrong_passes: Vec<String>,
    /// Records that could not be read or decomposed: (id, why).
    pub skipped: Vec<(String, String)>,
}

/// A labelled step that is not in the trace's thinking (after the steps before it).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("step {0:?} is not in the thinking")]
pub struct StepNotFound(pub String);

/// Why a corpus record was skipped.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ScoreError {
    /// The trace does not parse.
    #[error(transparent)]
    Trace(#[from] TraceError),
    /// The trace does not decompose.
    #[error(transparent)]
    Decompose(#[from] DecomposeError),
    /// A labelled step is not in the thinking.
    #[error(transparent)]
    Step(#[from] StepNotFound),
}

/// Why the benchmark could not read its corpus.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum QualityError {
    /// A line is not a corpus record.
    #[error("line {line}: {source}")]
    Record {
        /// The line's number, from 1.
        line: usize,
        /// The JSON error.
        source: serde_json::Error,
    },
}

fn is_calculation(text: &str) -> bool {
    text.contains('=') && text.chars().any(|c| c.is_ascii_digit())
}

/// Where each step sits in the thinking (steps are in order and do not overlap): byte
/// ranges, or which step is not there.
pub fn step_spans(
    thinking: &str,
    steps: &[LabelledStep],
) -> Result<Vec<(usize, usize)>, StepNotFound> {
    let mut spans = Vec::with_capacity(steps.len());
    let mut from = 0usize;
    for s in steps {
        let at = thinking
            .get(from..)
            .and_then(|t| t.find(&s.text))
            .map(|i| i.saturating_add(from))
            .ok_or_else(|| StepNotFound(s.text.clone()))?;
        let end = at.saturating_add(s.text.len());
        spans.push((at, end));
        from = end;
    }
    Ok(spans)
}

/// Scores one record.
fn score(r: &Record, report: &mut Report) -> Result<Counts, ScoreError> {
    let trace = Trace::parse(&r.trace)?;
    let hdag = decompose(&trace, &Options::default())?;
    let p = preview(&trace, &hdag);
    let mut c = Counts {
        traces: 1,
        segments: p.segments.iter().filter(|s| s.is_claim()).count() as u64,
        segments_judged: p.judged as u64,
        ..Counts::default()
    };
    let spans = step_spans(&trace.thinking, &r.steps)?;
    for (s, (lo, hi)) in r.steps.iter().zip(&spans) {
        // The Computer decisions on segments that lie inside this step: its claim, and
        // the calculations of its claim checked on their own.
        let mut claim = Vec::new();
        let mut ops = Vec::new();
        for seg in &p.segments {
            let Some(d) = &seg.decision else { continue };
            let inside = s.text.contains(seg.content.as_str())
                && trace
                    .thinking
                    .get(*lo..*hi)
                    .is_some_and(|t| t.contains(seg.content.as_str()));
            if inside && !seg.given {
                if seg.supports.is_some() {
                    ops.push(d.vote);
                } else {
                    claim.push(d.vote);
                }
            }
        }
        let all: Vec<Vote> = claim.iter().chain(&ops).copied().collect();
        let judged = all.iter().any(|v| !v.is_abstain());
        let flagged = all.iter().any(|v| v.is_error());
        let valid = !flagged && claim.contains(&Vote::Valid);
        let is_error = matches!(s.label.as_str(), "invalid" | "ungrounded" | "reasoning");
        c.steps = c.steps.saturating_add(1);
        c.judged = c.judged.saturating_add(u64::from(judged));
        c.claims_judged = c
            .claims_judged
            .saturating_add(u64::from(claim.iter().any(|v| !v.is_abstain())));
        if !ops.is_empty() {
            c.with_operations = c.with_operations.saturating_add(1);
            c.operations = c.operations.saturating_add(ops.len() as u64);
            c.operations_hold = c
                .operations_hold
                .saturating_add(ops.iter().filter(|v| **v == Vote::Valid).count() as u64);
            let wrong = ops.iter().filter(|v| v.is_error()).count() as u64;
            c.operations_wrong = c.operations_wrong.saturating_add(wrong);
            if s.label != "invalid" && s.label != "ungrounded" {
                c.operations_false = c.operations_false.saturating_add(wrong);
            }
        }
        if is_error {
            c.errors = c.errors.saturating_add(1);
            c.caught = c.caught.saturating_add(u64::from(flagged));
            c.passed_errors = c.passed_errors.saturating_add(u64::from(valid));
            match s.label.as_str() {
                "ungrounded" => {
                    c.ungrounded_errors = c.ungrounded_errors.saturating_add(1);
                    c.ungrounded_caught = c.ungrounded_caught.saturating_add(u64::from(flagged));
                }
                "reasoning" => {
                    c.reasoning_errors = c.reasoning_errors.saturating_add(1);
                    c.reasoning_caught = c.reasoning_caught.saturating_add(u64::from(flagged));
                }
                _ if is_calculation(&s.text) => {
                    c.calc_errors = c.calc_errors.saturating_add(1);
                    c.calc_caught = c.calc_caught.saturating_add(u64::from(flagged));
                }
                _ => {}
            }
        } else {
            c.valid_correct = c.valid_correct.saturating_add(u64::from(valid));
            if flagged {
                c.false_alarms = c.false_alarms.saturating_add(1);
                if report.false_alarms.len() < 50 {
                    report
                        .false_alarms
                        .push((r.id.clone(), s.text.clone(), s.label.clone()));
                }
            }
        }
    }
    let row = usize::from(r.trace_label != "correct");
    let col = match p.trace.verdict {
        TraceVerdict::Pass => 0,
        TraceVerdict::Fail => 1,
        TraceVerdict::Inconclusive => 2,
    };
    if let Some(cell) = c.confusion.get_mut(row).and_then(|r| r.get_mut(col)) {
        *cell = cell.saturating_add(1);
    }
    if row == 1 && col == 0 && report.wrong_passes.len() < 50 {
        report.wrong_passes.push(r.id.clone());
    }
    Ok(c)
}

/// Runs the benchmark over JSONL text (one record per line; blank lines skipped).
pub fn run(jsonl: &str) -> Result<Report, QualityError> {
    let mut report = Report::default();
    for (n, line) in jsonl.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let r: Record = serde_json::from_str(line).map_err(|source| QualityError::Record {
            line: n.saturating_add(1),
            source,
        })?;
        match score(&r, &mut report) {
            Ok(c) => {
                report.overall.add(&c);
                report.families.entry(r.family.clone()).or_default().add(&c);
            }
            Err(why) => report.skipped.push((r.id.clone(), why.to_string())),
        }
    }
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(id: &str, steps: &[(&str, &str)], label: &str) -> String {
        let thinking: Vec<&str> = steps.iter().map(|(t, _)| *t).collect();
        serde_json::json!({
            "id": id, "family": "t", "variant": "x", "source": "test",
            "trace": format!(
                "## Problem Statement\nA box holds 12 apples and 30 pears.\n\n## Thinking Process\n{}\n\n## Final Output\n42",
                thinking.join("\n")
            ),
            "steps": steps.iter().map(|(t, l)| serde_json::json!({"text": t, "label": l})).collect::<Vec<_>>(),
            "output_label": "correct",
            "trace_label": label,
        })
        .to_string()
    }

    #[test]
    fn a_wrong_calculation_is_caught_and_counted_once() {
        let text = [
            record(
                "ok",
                &[
                    ("So 12 + 30 = 42", "correct"),
                    ("Thus 42 - 30 = 12", "correct"),
                ],
                "correct",
            ),
            record(
                "bad",
                &[
                    ("So 12 + 30 = 52", "invalid"),
                    ("Thus 52 - 30 = 22", "propagated"),
                ],
                "incorrect",
            ),
        ]
        .join("\n");
        let r = run(&text).expect("runs");
        assert!(r.skipped.is_empty(), "{:?}", r.skipped);
        let o = &r.overall;
        assert_eq!((o.traces, o.steps, o.errors), (2, 4, 1));
        assert_eq!(o.caught, 1, "{o:?}");
        assert_eq!(o.false_alarms, 0, "{:?}", r.false_alarms);
        assert_eq!(o.precision(), 1.0);
        assert_eq!(o.recall(), 1.0);
        assert_eq!(o.calc_recall(), 1.0);
        assert_eq!(o.confusion[1][1], 1, "the wrong trace fails: {o:?}");
        assert_eq!(o.correct_failed(), 0);
    }

    /// A claim whose calculation holds and whose reasoning does not: the calculation is
    /// checked and holds, the claim is not judged Valid, the trace does not pass.
    #[test]
    fn a_calculation_that_holds_is_no_verdict_on_the_claim_around_it() {
        let text = record(
            "wrong",
            &[
                ("The box holds 12 + 30 = 42 apples.", "reasoning"),
                ("So it holds 42 - 12 = 30 pears.", "propagated"),
            ],
            "incorrect",
        );
        let r = run(&text).expect("runs");
        let o = &r.overall;
        assert_eq!((o.reasoning_errors, o.passed_errors), (1, 0), "{o:?}");
        assert_eq!((o.operations, o.operations_hold), (2, 2), "{o:?}");
        assert_eq!(o.operations_false, 0);
        assert_eq!(o.false_alarms, 0, "{:?}", r.false_alarms);
        assert_eq!(o.wrong_passed(), 0, "{o:?}");
        assert_eq!(o.pass_precision(), 1.0);
    }

    #[test]
    fn unreadable_lines_are_reported_not_guessed() {
        let r = run("{\"id\": 1}").unwrap_err();
        assert!(r.to_string().contains("line 1"), "{r}");
        let bad_span = record("x", &[("So 12 + 30 = 42", "correct")], "correct")
            .replace("\"text\":\"So 12 + 30 = 42\"", "\"text\":\"nowhere\"");
        let r = run(&bad_span).unwrap();
        assert_eq!(r.skipped.len(), 1);
        assert_eq!(r.overall.traces, 0);
    }
}

/// Counts for one family of generated formal proofs, judged through the seats' path
/// (decompose by the proof's structure, one Computer view per segment, the contract's
/// tally), against the generator's labels.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ProofCounts {
    /// Proofs.
    pub proofs: u64,
    /// Of them, labelled wrong.
    pub wrong: u64,
    /// Trace verdicts that agree with the label (PASS on a correct proof, FAIL on a wrong
    /// one; INCONCLUSIVE agrees with nothing).
    pub agree: u64,
    /// Wrong proofs whose first error was found where the label puts it: the first step
    /// judged Invalid is at the labelled line (or, for an error no step holds, the
    /// structure seat's), with the labelled kind.
    pub first_error: u64,
    /// FAIL verdicts.
    pub fails: u64,
    /// FAIL verdicts on wrong proofs.
    pub fails_on_wrong: u64,
    /// PASS verdicts.
    pub passes: u64,
    /// PASS verdicts on correct proofs.
    pub passes_on_correct: u64,
    /// INCONCLUSIVE verdicts.
    pub inconclusive: u64,
}

impl ProofCounts {
    fn ratio(a: u64, b: u64) -> f64 {
        if b == 0 { 1.0 } else { a as f64 / b as f64 }
    }
    /// Share of proofs whose verdict agrees with the label.
    pub fn agreement(&self) -> f64 {
        Self::ratio(self.agree, self.proofs)
    }
    /// Share of wrong proofs whose first error was located exactly.
    pub fn first_error_accuracy(&self) -> f64 {
        Self::ratio(self.first_error, self.wrong)
    }
    /// Share of FAIL verdicts that fall on wrong proofs.
    pub fn fail_precision(&self) -> f64 {
        Self::ratio(self.fails_on_wrong, self.fails)
    }
    /// Share of PASS verdicts that fall on correct proofs.
    pub fn pass_precision(&self) -> f64 {
        Self::ratio(self.passes_on_correct, self.passes)
    }

    fn add(&mut self, o: &ProofCounts) {
        self.proofs = self.proofs.saturating_add(o.proofs);
        self.wrong = self.wrong.saturating_add(o.wrong);
        self.agree = self.agree.saturating_add(o.agree);
        self.first_error = self.first_error.saturating_add(o.first_error);
        self.fails = self.fails.saturating_add(o.fails);
        self.fails_on_wrong = self.fails_on_wrong.saturating_add(o.fails_on_wrong);
        self.passes = self.passes.saturating_add(o.passes);
        self.passes_on_correct = self.passes_on_correct.saturating_add(o.passes_on_correct);
        self.inconclusive = self.inconclusive.saturating_add(o.inconclusive);
    }
}

/// About `per_language` generated proofs per language (seeded: the same `seed` gives the
/// same corpus), each judged as a Computer-only network judges it; per language and
/// overall (`overall`).
pub fn proof_families(seed: u64, per_language: usize) -> BTreeMap<String, ProofCounts> {
    use crate::proof::generate::{Expected, corpus};
    let mut out: BTreeMap<String, ProofCounts> = BTreeMap::new();
    for case in corpus(seed, per_language) {
        let trace = Trace {
            problem: case.problem.clone(),
            thinking: case.proof.clone(),
            output: "QED".into(),
        };
        let mut c = ProofCounts {
            proofs: 1,
            ..ProofCounts::default()
        };
        let wrong = matches!(case.expected, Expected::Fail { .. });
        c.wrong = u64::from(wrong);
        let judged = decompose(&trace, &Options::default())
            .ok()
            .filter(|h| {
                h.nodes
                    .iter()
                    .any(|n| n.kind == crate::decompose::proof::PROOF_STRUCTURE_KIND)
            })
            .map(|h| preview(&trace, &h));
        let verdict = judged.as_ref().map(|p| p.trace.verdict);
        match verdict {
            Some(TraceVerdict::Pass) => {
                c.passes = 1;
                c.passes_on_correct = u64::from(!wrong);
                c.agree = u64::from(!wrong);
            }
            Some(TraceVerdict::Fail) => {
                c.fails = 1;
                c.fails_on_wrong = u64::from(wrong);
                c.agree = u64::from(wrong);
            }
            _ => c.inconclusive = 1,
        }
        if let (Expected::Fail { kind, step, line }, Some(p)) = (&case.expected, &judged) {
            let plan = crate::decompose::proof::plan_of(&trace).and_then(Result::ok);
            let own_invalid = |id: &str| {
                p.segments
                    .iter()
                    .find(|s| s.id == id)
                    .and_then(|s| s.decision.as_ref())
                    .filter(|d| d.vote == Vote::Invalid)
                    .map(|d| d.reason.clone())
            };
            // The first step (in proof order) its own seats judged wrong, else the
            // structure seat.
            let first = p
                .segments
                .iter()
                .filter_map(|s| Some((crate::decompose::proof::step_of(&s.id)?, s.id.as_str())))
                .filter_map(|(i, id)| own_invalid(id).map(|r| (i, r)))
                .min_by_key(|(i, _)| *i);
            let kind_ok = |reason: &str| reason.starts_with(&format!("{kind} error:"));
            let located = match (first, step) {
                (Some((i, reason)), Some(_)) => {
                    plan.as_ref().and_then(|p| p.steps.get(i)).map(|s| s.line) == Some(*line)
                        && kind_ok(&reason)
                }
                (None, None) => {
                    own_invalid(crate::decompose::proof::STRUCTURE_ID).is_some_and(|r| kind_ok(&r))
                }
                _ => false,
            };
            c.first_error = u64::from(located && verdict == Some(TraceVerdict::Fail));
        }
        out.entry(case.language.to_string()).or_default().add(&c);
    }
    let mut all = ProofCounts::default();
    for c in out.values() {
        all.add(c);
    }
    out.insert("overall".into(), all);
    out
}
