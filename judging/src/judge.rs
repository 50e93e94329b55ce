//! One judging interface for every tier.
//!
//! A judge sees one segment as a seat receives it ([`SegmentView`]: the claim, the
//! claims of the segments it cites, and the unaudited premises sealed with it) and
//! answers with a [`Decision`]: a vote, or an abstention, always with a reason. The seat
//! pipeline (fetch, decrypt, persist, commit, reveal) and the local preview
//! (`trust-node check`, `trust-node bench quality`) call the same judges with the same
//! inputs, so the preview cannot drift from what seats do.
//!
//! Tiers: [`ComputerAuditor`] (deterministic checkers, here); the LLM tier
//! (`super::llm`) and the Human tier (`super::human`, a person at the audit form)
//! implement the same trait. The seat pipeline calls [`Auditor::judge_seat`], which says
//! which seat is judged and until when; only the Human tier needs that.

use async_trait::async_trait;
use trust_protocol::{Hash, Vote, seal::SegmentDoc, tx::Tier};
use trust_sandbox::Execute;

use super::computer::{self, Judgement};

/// What a seat knows of the segment it judges.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SegmentView {
    /// The segment's own text.
    pub claim: String,
    /// The claims of the segments it depends on that are audited in the same session, in
    /// manifest order (dependencies first).
    pub premises: Vec<String>,
    /// Premises it rests on that are not audited in the session (the problem statement
    /// first), verbatim, as the provider sealed them with it.
    pub givens: Vec<String>,
    /// For a STEP: its OPERATIONs (the bare calculations inside the claim) with the
    /// Computer tier's judgement of each, made here with the same judge and inputs its
    /// Computer seats get. A judge shows them as checked premises: whether the claim
    /// holds is the question, not whether its arithmetic does.
    pub operations: Vec<CheckedOperation>,
    /// Whether the segment is (part of) the trace's final answer.
    pub conclusion: bool,
    /// For a segment of a formal proof cut by its structure: what its Computer seat
    /// checks it with ([`computer::formal`]).
    pub formal: Option<computer::formal::FormalView>,
    /// For a tool segment of a persistent kernel: the code of the kernel's earlier calls,
    /// in order, replayed before its own ([`SegmentDoc::cells`]).
    pub cells: Vec<String>,
}

/// A calculation inside a claim, with what the Computer tier makes of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckedOperation {
    /// The calculation, a span of the claim.
    pub text: String,
    /// The Computer judge's decision on it.
    pub decision: Decision,
}

impl CheckedOperation {
    /// How a judge is shown it: `` `21+3 = 24` holds (checked by the Computer tier) ``.
    pub fn describe(&self) -> String {
        let what = match self.decision.vote {
            Vote::Valid => "holds",
            Vote::Invalid => "does not hold",
            Vote::Ungrounded => "uses a number nothing gives",
            Vote::Abstain => "could not be checked",
            Vote::PayloadAbstain => "could not be checked within the network's limits",
        };
        format!(
            "`{}` {what} (checked by the Computer tier: {})",
            self.text, self.decision.reason
        )
    }
}

impl SegmentView {
    /// The view of a decrypted segment and the claims of its cited segments; each of its
    /// OPERATIONs that is a span of the claim is checked as its Computer seats check it
    /// (the others are ignored: a provider cannot slip in a calculation the claim does
    /// not make).
    pub fn new(doc: SegmentDoc, premises: Vec<String>, conclusion: bool) -> Self {
        let operations = doc
            .operations
            .iter()
            .filter(|op| !op.trim().is_empty() && doc.claim.contains(op.as_str()))
            .take(MAX_OPERATIONS)
            .map(|op| CheckedOperation {
                decision: ComputerAuditor.judge_now(
                    &SegmentView {
                        claim: op.clone(),
                        premises: premises.clone(),
                        givens: doc.given.clone(),
                        operations: Vec::new(),
                        conclusion: false,
                        formal: None,
                        cells: Vec::new(),
                    },
                    &Hash::of_parts("trust/v1/operation", &[op.as_bytes()]),
                ),
                text: op.clone(),
            })
            .collect();
        Self {
            claim: doc.claim,
            premises,
            givens: doc.given,
            operations,
            conclusion,
            formal: None,
            cells: doc.cells,
        }
    }

    /// The view with what a formal-proof segment's seat checks it with.
    pub fn with_formal(mut self, formal: Option<computer::formal::FormalView>) -> Self {
        self.formal = formal;
        self
    }

    /// The decision a STEP takes from its OPERATIONs alone: a calculation inside it that
    /// does not hold (or rests on a number nothing gives) makes the claim wrong, whatever
    /// else it says. `None` when every calculation holds or could not be checked.
    pub fn failed_operation(&self) -> Option<Decision> {
        let failed = self
            .operations
            .iter()
            .filter(|o| matches!(o.decision.vote, Vote::Invalid | Vote::Ungrounded))
            .min_by_key(|o| o.decision.vote != Vote::Invalid)?;
        Some(Decision {
            vote: failed.decision.vote,
            reason: format!(
                "its calculation `{}` is wrong (Computer tier: {})",
                failed.text, failed.decision.reason
            ),
        })
    }

    /// The problem statement among the givens: the first given that is the statement of a
    /// formal problem, else the first given.
    fn problem(&self) -> Option<&str> {
        self.givens
            .iter()
            .find(|g| computer::answer::is_formal(g))
            .or_else(|| self.givens.first())
            .map(String::as_str)
    }
}

/// Most OPERATIONs of one STEP that a seat checks.
pub const MAX_OPERATIONS: usize = 16;

/// Words a public reason keeps even when the segment's text uses them: the language of
/// the judges' own reasons, which says what was checked, never what the claim says.
const REASON_WORDS: &[&str] = &[
    "a",
    "all",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "by",
    "calculation",
    "can",
    "check",
    "checked",
    "checks",
    "claim",
    "conclusion",
    "does",
    "each",
    "earlier",
    "equal",
    "equation",
    "every",
    "follow",
    "follows",
    "for",
    "from",
    "given",
    "gives",
    "has",
    "have",
    "hold",
    "holds",
    "in",
    "is",
    "it",
    "its",
    "no",
    "nor",
    "not",
    "number",
    "of",
    "on",
    "one",
    "or",
    "premise",
    "premises",
    "problem",
    "result",
    "rule",
    "step",
    "steps",
    "than",
    "that",
    "the",
    "this",
    "to",
    "true",
    "false",
    "under",
    "value",
    "was",
    "what",
    "when",
    "with",
    "wrong",
    "argument",
    "checker",
    "error",
    "formal",
    "hypothesis",
    "logic",
    "proof",
    "scope",
    "structure",
    "syntax",
    "type",
    // The tool checks' own words (issue 54): the markers of a tool segment hold some.
    "answer",
    "another",
    "cell",
    "code",
    "differs",
    "final",
    "interpreter",
    "re",
    "reported",
    "run",
    "sandbox",
    "script",
    "semantics",
    "states",
    "tool",
];

/// The reason a seat publishes with its vote: `reason` with every literal of the segment
/// it judged taken out, so that a permanent, public outcome says what was checked (the
/// rule, the kind of error, which premise by its position) and never quotes the claim,
/// its premises or the problem. A span in backticks becomes `…`, and so does every word
/// or number of the reason that also appears in the segment's text (its claim, premises,
/// givens or calculations), unless it is one of the judges' own words. The provider, who
/// holds the whole trace, gets the detailed reason by checking it locally
/// (`trust-node check`), with the same judges.
pub fn public_reason(view: &SegmentView, reason: &str) -> String {
    fn words(text: &str) -> impl Iterator<Item = &str> {
        text.split(|c: char| !(c.is_alphanumeric() || c == '_'))
            .filter(|w| !w.is_empty())
    }
    let mut literals: std::collections::BTreeSet<&str> = std::collections::BTreeSet::new();
    let sources = std::iter::once(view.claim.as_str())
        .chain(view.premises.iter().map(String::as_str))
        .chain(view.givens.iter().map(String::as_str))
        .chain(view.operations.iter().map(|o| o.text.as_str()));
    for text in sources {
        literals.extend(words(text));
    }
    // A number is kept only as the judge's own score (`score 0.25`): any other number may
    // be a value the judge computed from the segment (the right result of a calculation,
    // the problem's answer), which the segment's text does not hold but reveals as much.
    let keep = |w: &str, score: bool| {
        if w.chars().any(|c| c.is_ascii_digit()) {
            return score;
        }
        !literals.contains(w) || REASON_WORDS.contains(&w.to_lowercase().as_str())
    };
    let mut out = String::with_capacity(reason.len());
    let mut quoted = false;
    let mut word = String::new();
    // Whether the words now read are the digits of a score (after `score`).
    let mut score = false;
    let flush = |word: &mut String, out: &mut String, score: &mut bool| {
        if word.is_empty() {
            return;
        }
        if keep(word, *score) {
            out.push_str(word);
        } else if !out.ends_with('…') {
            out.push('…');
        }
        let digits = word.chars().all(|c| c.is_ascii_digit());
        // A score's digits, and the version of the interpreter a tool call was re-run
        // with (`CPython 3.11.7`), are the judge's own numbers.
        *score = word.eq_ignore_ascii_case("score")
            || word == "CPython"
            || word == "PyPy"
            || (*score && digits);
        word.clear();
    };
    for c in reason.chars() {
        if c == '`' {
            flush(&mut word, &mut out, &mut score);
            if !quoted && !out.ends_with('…') {
                out.push('…');
            }
            quoted = !quoted;
            score = false;
            continue;
        }
        if quoted {
            continue;
        }
        if c.is_alphanumeric() || c == '_' {
            word.push(c);
        } else {
            flush(&mut word, &mut out, &mut score);
            if c != ' ' && c != '.' {
                score = false;
            }
            out.push(c);
        }
    }
    flush(&mut word, &mut out, &mut score);
    out
}

/// A judge's answer: a vote (`Abstain` included) and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// The vote committed for the seat.
    pub vote: Vote,
    /// A reason a person can read.
    pub reason: String,
}

impl Decision {
    /// An abstention.
    pub fn abstain(reason: impl Into<String>) -> Self {
        Self {
            vote: Vote::Abstain,
            reason: reason.into(),
        }
    }
}

/// Segments of one session a judge takes at once unless it says otherwise.
pub const DEFAULT_CONCURRENCY: usize = 4;

/// Which seat a judgement is for, as the seat pipeline knows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeatRef {
    /// The session.
    pub session: Hash,
    /// The segment's index in the session.
    pub segment: u16,
    /// The voting round (1 after an escalation).
    pub round: u8,
    /// The blinded segment id.
    pub segment_id: Hash,
    /// The last height at which the seat may commit.
    pub commit_until: u64,
    /// The claims of later segments citing this one that the seat can open (filled only
    /// for judges that [want them](Auditor::wants_implications)).
    pub implications: Vec<String>,
}

/// A judge of one tier.
#[async_trait]
pub trait Auditor: Send + Sync + std::fmt::Debug {
    /// The tier it judges for.
    fn tier(&self) -> Tier;

    /// Judges one segment. `seed` is data every seat of the segment agrees on (the
    /// session and segment ids), for judges that draw random points or samples. Never
    /// fails: anything that goes wrong is an abstention with the reason.
    async fn judge(&self, segment: &SegmentView, seed: &Hash) -> Decision;

    /// Judges the segment `seat` holds: [`Auditor::judge`] for judges to which the seat
    /// makes no difference.
    async fn judge_seat(&self, seat: &SeatRef, segment: &SegmentView, seed: &Hash) -> Decision {
        let _ = seat;
        self.judge(segment, seed).await
    }

    /// Segments of one session it judges at once (a person's queue holds them all).
    fn concurrency(&self) -> usize {
        DEFAULT_CONCURRENCY
    }

    /// Whether it shows the seat the claims that cite its segment (decrypting them costs
    /// a fetch each, worth it only for a person).
    fn wants_implications(&self) -> bool {
        false
    }
}

/// The Computer tier: deterministic checkers ([`computer::check`]), which abstain on
/// anything they cannot read.
#[derive(Debug, Clone, Copy, Default)]
pub struct ComputerAuditor;

impl ComputerAuditor {
    /// The same judgement, without a runtime (for the local preview and benchmarks), on a
    /// node without a sandbox: [`ComputerAuditor::judge_with`] with none.
    pub fn judge_now(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        self.judge_with(segment, seed, None)
    }

    /// The Computer tier's judgement of `segment`, re-running tool calls through `exec`
    /// when the node has a sandbox (without one, a tool segment is an abstention).
    /// A tool segment is judged by re-running it ([`computer::tool`]), never as text: its
    /// code holds no equalities to check. A claim resting on tool results is checked
    /// against them where it restates one ([`computer::tool::check_restatement`]); its
    /// calculations are checked as any claim's, with each tool call it rests on read as
    /// the result it reports. A segment holding several steps of a long trace is judged
    /// step by step ([`computer::check_claim`]). The final answer of a formal problem is
    /// checked against the problem itself ([`computer::answer`]).
    pub fn judge_with(
        &self,
        segment: &SegmentView,
        seed: &Hash,
        exec: Option<&dyn Execute>,
    ) -> Decision {
        if let Some(formal) = &segment.formal {
            let d = computer::formal::judge(formal, &segment.claim, &segment.givens);
            return Decision {
                vote: d.vote,
                reason: d.reason,
            };
        }
        if let Some(tool) = computer::tool::read_tool(&segment.claim) {
            return decision(computer::tool::judge_tool(&tool, &segment.cells, exec));
        }
        if computer::tool::looks_like_code(&segment.claim) {
            return Decision::abstain(
                "the segment is code, not a claim: it holds statements, no equalities to check",
            );
        }
        let results: Vec<&str> = segment
            .givens
            .iter()
            .chain(&segment.premises)
            .filter_map(|p| computer::tool::read_tool(p))
            .map(|t| t.result)
            .collect();
        let context: Vec<&str> = segment
            .givens
            .iter()
            .filter(|g| computer::tool::read_tool(g).is_none())
            .map(String::as_str)
            .collect();
        let last_code = segment
            .givens
            .iter()
            .chain(&segment.premises)
            .filter_map(|p| computer::tool::read_tool(p))
            .map(|t| t.input)
            .next_back();
        let restated = (!results.is_empty())
            .then(|| {
                computer::tool::check_restatement(&segment.claim, &results, &context, last_code)
            })
            .flatten();
        if let Some(j) = restated
            .as_ref()
            .filter(|j| j.as_vote() == Some(Vote::Invalid))
        {
            return decision(j.clone());
        }
        // A tool call among the premises is read as the result it reports: its code is no
        // premise equation.
        let as_result = |p: &String| {
            computer::tool::read_tool(p).map_or_else(|| p.clone(), |t| t.result.to_string())
        };
        let premises: Vec<String> = segment.premises.iter().map(as_result).collect();
        let givens: Vec<String> = segment.givens.iter().map(as_result).collect();
        let answer = segment
            .conclusion
            .then(|| segment.problem())
            .flatten()
            .and_then(|p| computer::answer::check_answer(p, &segment.claim));
        let judgement = answer
            .unwrap_or_else(|| computer::check_claim(&segment.claim, &premises, &givens, seed));
        match (judgement, restated) {
            (j @ Judgement::Vote { .. }, _) | (j @ Judgement::Abstain(_), None) => decision(j),
            (Judgement::Abstain(_), Some(r)) => decision(r),
        }
    }
}

fn decision(j: Judgement) -> Decision {
    match j {
        Judgement::Vote { vote, reason } => Decision { vote, reason },
        Judgement::Abstain(why) => Decision::abstain(why),
    }
}

/// The Computer tier on a node with a sandbox: [`ComputerAuditor`]'s checkers, and tool
/// calls re-run through `exec` ([`ComputerAuditor::judge_with`]). A seat's Computer judge
/// when the node's sandbox started; without one, [`ComputerAuditor`] abstains on tool
/// segments.
#[derive(Clone)]
pub struct SandboxedComputer {
    exec: std::sync::Arc<dyn Execute>,
}

impl std::fmt::Debug for SandboxedComputer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxedComputer")
            .field("interpreter", &self.exec.interpreter())
            .finish()
    }
}

impl SandboxedComputer {
    /// The Computer tier re-running tool calls through `exec`.
    pub fn new(exec: std::sync::Arc<dyn Execute>) -> Self {
        Self { exec }
    }

    /// [`ComputerAuditor::judge_with`] through this sandbox, without a runtime.
    pub fn judge_now(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        ComputerAuditor.judge_with(segment, seed, Some(self.exec.as_ref()))
    }
}

#[async_trait]
impl Auditor for SandboxedComputer {
    fn tier(&self) -> Tier {
        Tier::Computer
    }

    /// Re-running a call blocks its thread for up to the sandbox's wall cap: the caller
    /// drives this future where blocking is allowed (a blocking task of the node).
    async fn judge(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        self.judge_now(segment, seed)
    }

    /// A re-run takes a process for up to the sandbox's caps: a few at once.
    fn concurrency(&self) -> usize {
        SANDBOX_CONCURRENCY
    }
}

/// Segments of one session a Computer seat with a sandbox judges at once: each tool call
/// is a sandboxed process, and the machine's cores are shared with the node.
pub const SANDBOX_CONCURRENCY: usize = 2;

#[async_trait]
impl Auditor for ComputerAuditor {
    fn tier(&self) -> Tier {
        Tier::Computer
    }

    async fn judge(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        self.judge_now(segment, seed)
    }

    /// The checkers take microseconds; what a seat waits on is fetching the segment and
    /// its premises. Many in flight let a node seated on a whole session fetch them
    /// together and commit them in one batch.
    fn concurrency(&self) -> usize {
        COMPUTER_CONCURRENCY
    }
}

/// Segments of one session a Computer seat node judges at once.
pub const COMPUTER_CONCURRENCY: usize = 64;

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use trust_protocol::{
        hdag::{AbstractionLevel, HdagNode},
        trace::Trace,
    };

    use super::*;
    use crate::decompose;

    fn sample(name: &str) -> Trace {
        let path = format!("{}/../examples/traces/{name}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("sample trace");
        Trace::parse(&text).expect("sample parses")
    }

    fn view(claim: &str, premises: &[&str], givens: &[&str]) -> SegmentView {
        SegmentView {
            claim: claim.into(),
            premises: premises.iter().map(|s| s.to_string()).collect(),
            givens: givens.iter().map(|s| s.to_string()).collect(),
            ..SegmentView::default()
        }
    }

    /// Issue 39, finding 10: a reason published with a vote quotes no literal of the
    /// segment (claim, premises, problem), while it still says what was checked; words
    /// and numbers of the judge's own (a score) stay.
    #[test]
    fn a_published_reason_quotes_nothing_of_the_segment() {
        futures::executor::block_on(async {
            let secret = view(
                "Alice pays 48 × 3 = 145 dollars for Zanzibar widgets",
                &["Each Zanzibar widget costs 48 dollars."],
                &["Problem: how much does Alice pay for 3 widgets?"],
            );
            let judged = ComputerAuditor.judge_now(&secret, &Hash::ZERO);
            assert_eq!(judged.vote, Vote::Invalid, "{}", judged.reason);
            let public = public_reason(&secret, &judged.reason);
            // 144 is no literal of the segment: the judge computed it (issue 53, finding
            // 11), and it would tell the public the right result.
            for literal in [
                "48", "144", "145", "Alice", "Zanzibar", "widgets", "dollars",
            ] {
                assert!(
                    !public.contains(literal),
                    "{literal:?} leaks in {public:?} (from {:?})",
                    judged.reason
                );
            }
            assert!(!public.is_empty());
            // Quoted spans go whole; the judge's own words and numbers stay.
            let said = "`48 × 3` is not 145: the premise gives 48 and the rule holds (score 0.25)";
            let public = public_reason(&secret, said);
            assert_eq!(
                public,
                "… is not …: the premise gives … and the rule holds (score 0.25)"
            );
            let said = "the problem's expression is 144, not 145 (score 0.9)";
            assert_eq!(
                public_reason(&secret, said),
                "the problem's expression is …, not … (score 0.9)"
            );
        })
    }

    /// Issue 54: a tool segment's public reason says that a value differs and which
    /// interpreter re-ran it, and quotes neither the code nor either value.
    #[test]
    fn a_tool_call_s_public_reason_names_the_interpreter_and_no_value() {
        use trust_protocol::trace::blocks::render_tool;
        use trust_sandbox::{Display, Outcome, Ran, Request};
        /// A stand-in executor (this test is about the reason, not about running code).
        struct Says(&'static str);
        impl Execute for Says {
            fn execute(&self, _: &Request) -> Outcome {
                Outcome::Ran(Ran {
                    output: self.0.into(),
                    raised: false,
                    display: Display::None,
                })
            }
            fn interpreter(&self) -> &str {
                "CPython 3.11.7"
            }
        }
        let claim = render_tool(
            "call_1",
            "python",
            None,
            "print(secret_total * 7)",
            "43000.0",
        )
        .unwrap();
        let v = view(&claim, &[], &["How much is the secret total?"]);
        let d = ComputerAuditor.judge_with(&v, &Hash::ZERO, Some(&Says("43500.0")));
        assert_eq!(d.vote, Vote::Invalid, "{}", d.reason);
        let public = public_reason(&v, &d.reason);
        for secret in ["43000", "43500", "secret_total", "print"] {
            assert!(!public.contains(secret), "{secret} in {public:?}");
        }
        assert!(
            public.contains("differs") && public.contains("CPython 3.11.7"),
            "{public}"
        );
        // Without a sandbox: an abstention that says so.
        let none = ComputerAuditor.judge_now(&v, &Hash::ZERO);
        assert_eq!(none.vote, Vote::Abstain);
        assert!(none.reason.contains("no sandbox"), "{}", none.reason);
    }

    #[test]
    fn the_computer_auditor_votes_and_abstains_through_one_interface() {
        futures::executor::block_on(async {
            let a: &dyn Auditor = &ComputerAuditor;
            assert_eq!(a.tier(), Tier::Computer);
            let seed = Hash::ZERO;
            let ok = a.judge(&view("So 12 + 30 = 42", &[], &[]), &seed).await;
            assert_eq!(ok.vote, Vote::Valid, "{}", ok.reason);
            let bad = a.judge(&view("So 12 + 30 = 52", &[], &[]), &seed).await;
            assert_eq!(bad.vote, Vote::Invalid, "{}", bad.reason);
            let prose = a
                .judge(
                    &view("We should look at the problem again.", &[], &[]),
                    &seed,
                )
                .await;
            assert_eq!(prose.vote, Vote::Abstain);
            assert!(!prose.reason.is_empty());
            // The same inputs give the same decision without a runtime.
            assert_eq!(
                ComputerAuditor.judge_now(&view("So 12 + 30 = 52", &[], &[]), &seed),
                bad
            );
        })
    }

    /// In a long trace decomposed into groups of steps, the group holding the one wrong
    /// step is called wrong, and no other group is.
    #[test]
    fn only_the_group_holding_the_wrong_step_is_called_wrong() {
        use crate::decompose::{Options, decompose, sample::counter_trace};
        let t = Trace::parse(&counter_trace(5000, 208, 0, Some(2500))).expect("parses");
        let h = decompose(&t, &Options::default()).expect("decomposes");
        let p = crate::preview::preview(&t, &h);
        let wrong: Vec<&str> = p
            .segments
            .iter()
            .filter(|s| {
                s.decision
                    .as_ref()
                    .is_some_and(|d| matches!(d.vote, Vote::Invalid | Vote::Ungrounded))
            })
            .map(|s| s.content.as_str())
            .collect();
        // The group holding the wrong step, and the final answer it led to, checked
        // against the problem (`What is 10 + 2 × 5000?`).
        assert_eq!(wrong.len(), 2, "{wrong:?}");
        assert!(
            wrong[0].contains("Step 2500: 5008 + 2 = 5011"),
            "{}",
            wrong[0]
        );
        assert_eq!(wrong[1], "The answer is 10011.");
        let valid = p
            .segments
            .iter()
            .filter(|s| s.decision.as_ref().is_some_and(|d| d.vote == Vote::Valid))
            .count();
        assert!(valid > 100, "{valid} groups Valid");
    }

    #[test]
    fn givens_ground_a_claim_as_premises_do() {
        // 7 comes from the problem statement, sealed with the step as a given.
        let v = view(
            "Therefore, 5x = 6x − 14",
            &["x / (3x − 7) = 2/5"],
            &["The denominator is 7 less than 3 times the numerator."],
        );
        let d = ComputerAuditor.judge_now(&v, &Hash::ZERO);
        assert_eq!(d.vote, Vote::Valid, "{}", d.reason);
    }

    /// A Computer seat judges a group step by step: Valid when all hold, wrong when one is
    /// wrong (and says which), an abstention when a step cannot be read — never wrong for a
    /// step it cannot judge.
    #[test]
    fn a_group_is_judged_step_by_step_and_abstains_on_what_it_cannot_read() {
        use trust_protocol::{Hash, Vote};

        let judge = |claim: &str| {
            computer::check_claim(
                claim,
                &["Step 1: 10 + 2 = 12.".into()],
                &[crate::decompose::sample::PROBLEM.into()],
                &Hash::ZERO,
            )
        };
        let good = judge("12 + 2 = 14.\nStep 3: 14 + 2 = 16.\nStep 4: 16 + 2 = 18.");
        assert_eq!(good.as_vote(), Some(Vote::Valid), "{good:?}");
        let bad = judge("12 + 2 = 14.\nStep 3: 14 + 2 = 17.\nStep 4: 17 + 2 = 19.");
        assert_eq!(bad.as_vote(), Some(Vote::Invalid), "{bad:?}");
        assert!(format!("{bad:?}").contains("step 2 of 3"), "{bad:?}");
        let prose = judge("12 + 2 = 14.\nStep 3: We think the pattern is clear now.");
        assert_eq!(prose.as_vote(), None, "{prose:?}");
        // Too many steps for one judgement: an abstention, not a guess.
        let many: Vec<String> = (0..computer::MAX_GROUP_STEPS + 1)
            .map(|i| format!("Step {}: {} + 2 = {}.", i + 2, 12 + 2 * i, 14 + 2 * i))
            .collect();
        let long = judge(&many.join("\n"));
        assert_eq!(long.as_vote(), None, "{long:?}");
    }

    /// A judge of a group gives each step the premises the decomposer gives that step when it
    /// is a segment of its own (the problem statement aside: it travels as a given).
    #[test]
    fn a_grouped_step_rests_on_what_it_rests_on_alone() {
        let corpus = std::fs::read_to_string(format!(
            "{}/../examples/corpus/quality.jsonl",
            env!("CARGO_MANIFEST_DIR")
        ))
        .expect("the quality corpus");
        let mut traces: Vec<(String, Trace)> = [
            "fraction-correct.txt",
            "fraction-incorrect.txt",
            "bakery-correct.txt",
            "rules-correct.txt",
            "rules-wrong.txt",
            "tunnel.json",
        ]
        .iter()
        .map(|n| (n.to_string(), sample(n)))
        .collect();
        for line in corpus.lines() {
            let r: serde_json::Value = serde_json::from_str(line).expect("a corpus record");
            let t = Trace::parse(r["trace"].as_str().expect("its trace")).expect("parses");
            traces.push((r["id"].to_string(), t));
        }
        let mut compared = 0;
        for (name, t) in traces {
            let h = decompose::decompose(&t, &decompose::Options::default()).expect("decomposes");
            // The OPERATION of a worded STEP is no step of its own: it rests on what its STEP
            // rests on.
            let checks = decompose::supported_steps(&h);
            let units: Vec<&HdagNode> = h
                .nodes
                .iter()
                .enumerate()
                .filter(|(i, n)| {
                    matches!(
                        n.abstraction_level,
                        AbstractionLevel::Step | AbstractionLevel::Operation
                    ) && n.kind != "conclusion"
                        && !checks.contains_key(i)
                })
                .map(|(_, n)| n)
                .collect();
            let texts: Vec<&str> = units.iter().map(|n| n.content.as_str()).collect();
            let links = computer::step_links(&texts);
            for (i, u) in units.iter().enumerate() {
                let alone: Vec<usize> = h
                    .dependencies_of(&u.id)
                    .filter_map(|d| units.iter().position(|v| v.id == d))
                    .collect::<BTreeSet<_>>()
                    .into_iter()
                    .collect();
                assert_eq!(links[i], alone, "{name}: {}", u.content);
                compared += 1;
            }
        }
        assert!(compared > 4000, "{compared}");
    }
}
