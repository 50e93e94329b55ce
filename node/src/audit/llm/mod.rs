//! The LLM tier: ARES-style judging ([`ares`], seed 001) of a segment by a model behind
//! any OpenAI-compatible chat endpoint ([`client`]), asked in the shape of the paper's
//! human audit form ([`prompt`]).
//!
//! A seat's chain is the segment's givens (base claims, sound by default), the claims of
//! the segments it cites (derived claims whose soundness ARES estimates first), and the
//! segment's own claim, judged last. Its stability score becomes a vote through the
//! configured thresholds, or an abstention in between.
//!
//! Text from the trace reaches the model as data in delimited, encoded fields
//! ([`prompt`]), and the consistency probes ([`probe`]) are drawn from a probe seed that
//! mixes the seat seed with a secret key of this judge, so a step can neither pass for
//! part of the prompt nor know the probes it will meet.
//!
//! A seat never stalls a session: the whole judgement runs under a deadline shorter than
//! the commit window, and a dead, slow, garbage-speaking or oversized endpoint ends in an
//! abstention (committed and revealed like any vote) with the reason, never in a panic.

pub mod bench;
pub mod setup;

/// The OpenAI-compatible chat client lives in [`crate::chat`] (decomposition uses it too);
/// re-exported here as the LLM tier's client.
pub use crate::chat as client;

use std::{
    collections::VecDeque,
    sync::{Arc, Mutex, atomic::Ordering},
    time::{Duration, Instant},
};

use async_trait::async_trait;
use futures::{
    FutureExt,
    future::{BoxFuture, Shared},
};
use serde::Serialize;
use tracing::Instrument;
use trust_protocol::{Hash, fit_reason, tx::Tier};

use trust_judging::{
    judge::{Auditor, Decision, SegmentView},
    llm::{
        ares::{self, AresParams, Chain, Entailment, Query},
        calibrate, probe, prompt,
    },
};

use self::client::{ChatClient, LlmMetrics};

/// What `status` says about this node's LLM endpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct LlmStatus {
    /// The endpoint's base URL.
    pub url: String,
    /// The model asked.
    pub model: String,
    /// Whether it answered the last health probe (`GET {url}/models`).
    pub answers: bool,
    /// Why not, when it did not.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Why the judge's model gave no answer to one entailment question.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum EntailError {
    /// The endpoint could not be asked, or gave no usable response.
    #[error(transparent)]
    Llm(#[from] client::LlmError),
    /// The reply arrived but is not an answer.
    #[error(transparent)]
    Answer(#[from] prompt::AnswerError),
}

/// Judgements kept for seats that ask again (the seat pipeline may judge one seat from
/// two blocks' tasks while the first judgement is still running).
const KEEP_JUDGEMENTS: usize = 64;

type Judgement = Shared<BoxFuture<'static, Decision>>;

type Calibrating = Shared<BoxFuture<'static, calibrate::Calibration>>;

/// The LLM tier's judge.
#[derive(Clone)]
pub struct LlmAuditor {
    client: ChatClient,
    ares: AresParams,
    deadline: Duration,
    /// Mixed into every seat's probe seed ([`probe`]): the seat seed is public, this is
    /// not, so a trace's author cannot compute the probes its steps will meet.
    probe_key: [u8; 32],
    /// Running and recent judgements by seat seed and segment view: one seat asked twice
    /// costs one judgement, and gets the same decision.
    recent: Arc<Mutex<VecDeque<(Hash, Judgement)>>>,
    /// The model's calibration: running or done, and when it was started.
    calibration: Arc<Mutex<Option<(Calibrating, Instant)>>>,
}

impl std::fmt::Debug for LlmAuditor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LlmAuditor")
            .field("client", &self.client)
            .field("ares", &self.ares)
            .field("deadline", &self.deadline)
            .finish_non_exhaustive()
    }
}

impl LlmAuditor {
    /// A judge asking through `client`, scoring with `ares`, and abstaining when a
    /// judgement takes longer than `deadline`; its probe key is drawn afresh.
    pub fn new(client: ChatClient, ares: AresParams, deadline: Duration) -> Self {
        Self {
            client,
            ares,
            deadline,
            probe_key: rand::random(),
            recent: Arc::new(Mutex::new(VecDeque::with_capacity(KEEP_JUDGEMENTS))),
            calibration: Arc::new(Mutex::new(None)),
        }
    }

    /// The same judge with `key` as its probe key: runs that must repeat (benchmarks,
    /// tests) fix it; a seat's judge keeps the one drawn by [`LlmAuditor::new`].
    pub fn with_probe_key(mut self, key: [u8; 32]) -> Self {
        self.probe_key = key;
        self
    }

    /// The seed of the probes this judge asks for the seat with seed `seed`.
    fn probe_seed(&self, seed: &Hash) -> Hash {
        Hash::of_parts(
            "trust/v1/llm-probe-seed",
            &[self.probe_key.as_slice(), seed.as_ref()],
        )
    }

    /// The model's calibration ([`calibrate`]): the finished one, or the running one
    /// awaited. An unfinished one (the endpoint did not answer) is started again once
    /// [`calibrate::RETRY_AFTER`] has passed.
    pub async fn calibration(&self) -> calibrate::Calibration {
        let running = {
            let mut slot = self.calibration.lock().unwrap_or_else(|e| e.into_inner());
            let stale = match slot.as_ref() {
                None => true,
                Some((c, started)) => c
                    .peek()
                    .is_some_and(|r| !r.finished() && started.elapsed() >= calibrate::RETRY_AFTER),
            };
            if stale {
                let me = self.clone();
                let c = async move { me.calibrate_once().await }.boxed().shared();
                *slot = Some((c, Instant::now()));
            }
            slot.as_ref().map(|(c, _)| c.clone())
        };
        match running {
            Some(c) => c.await,
            None => calibrate::Calibration {
                answered: 0,
                right: 0,
                of: calibrate::ITEMS.len(),
                needed: self.ares.calibration_min,
                error: Some("not started".into()),
            },
        }
    }

    async fn calibrate_once(&self) -> calibrate::Calibration {
        if self.ares.calibration_min == 0 {
            return calibrate::Calibration {
                answered: calibrate::ITEMS.len(),
                right: 0,
                of: calibrate::ITEMS.len(),
                needed: 0,
                error: None,
            };
        }
        let c = calibrate::run(
            self,
            self.ares.calibration_min,
            self.client.limits().max_concurrent,
        )
        .await;
        let m = self.client.metrics();
        if c.finished() {
            m.calibration_right.store(c.right as u64, Ordering::Relaxed);
            m.calibrated.store(u64::from(c.passed()), Ordering::Relaxed);
        }
        if c.passed() {
            tracing::info!(target: "trust::llm", model = %self.client.endpoint().model, "{}", c.summary());
        } else {
            tracing::warn!(target: "trust::llm", model = %self.client.endpoint().model, "{}; this node's LLM seats abstain", c.summary());
        }
        c
    }

    /// Starts the calibration in the background (when called inside a Tokio runtime), so
    /// the first seat does not wait for it.
    pub fn warm_up(&self) {
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            let me = self.clone();
            rt.spawn(
                async move {
                    me.calibration().await;
                }
                .instrument(tracing::info_span!("llm-calibration")),
            );
        }
    }

    /// The client (for health probes and metrics).
    pub fn client(&self) -> &ChatClient {
        &self.client
    }

    /// The deadline of one judgement.
    pub fn deadline(&self) -> Duration {
        self.deadline
    }

    async fn run(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        // The givens, then the calculations of the claim the Computer tier found to
        // hold: checked premises (soundness 1), so the question is only whether the claim
        // follows, not whether its arithmetic does.
        // A tool call (issue 54) reads as what it is, in words: a premise says what was
        // run and what it reported; the judged claim of a `TU` segment asks whether the
        // code does what the problem asks and its result answers it.
        let worded = |text: &String, claim: bool| {
            trust_judging::computer::tool::in_words(text, claim).unwrap_or_else(|| text.clone())
        };
        let base: Vec<(String, f64)> = segment
            .givens
            .iter()
            .map(|g| (worded(g, false), self.ares.given_soundness))
            .chain(
                segment
                    .operations
                    .iter()
                    .filter(|o| o.decision.vote == trust_protocol::Vote::Valid)
                    .map(|o| (o.describe(), 1.0)),
            )
            .collect();
        let derived: Vec<String> = segment
            .premises
            .iter()
            .map(|p| worded(p, false))
            .chain(std::iter::once(worded(&segment.claim, true)))
            .collect();
        let chain = Chain {
            base: &base,
            derived: &derived,
        };
        let parallel = self.client.limits().max_concurrent;
        match ares::score(self, &chain, &self.ares, seed, parallel).await {
            Ok(s) => {
                self.client
                    .metrics()
                    .entailments
                    .fetch_add(s.calls() as u64, Ordering::Relaxed);
                let Some(last) = s.last() else {
                    return Decision::abstain("LLM tier: nothing was scored");
                };
                let vote = ares::vote(last, &self.ares);
                let premises: Vec<String> = s
                    .claims
                    .iter()
                    .take(s.claims.len().saturating_sub(1))
                    .map(|c| format!("{:.2}", c.stability))
                    .collect();
                // The premises' scores go to the log only: the decision's reason is revealed
                // on the ledger, within `MAX_REASON_BYTES`, so it is the short summary.
                tracing::debug!(target: "trust::llm", premises = %premises.join(", "), "premises' soundness");
                let scored = format!(
                    "ARES stability {:.2} (mean entailment) over {} samples, {} entailment calls; Valid at >= {}, Invalid at <= {}; contradicts the context in {:.0}% of samples",
                    last.stability,
                    s.samples,
                    s.calls(),
                    self.ares.valid_at,
                    self.ares.invalid_at,
                    last.contradicts * 100.0,
                );
                if !self.ares.consistency_probes || vote.is_abstain() {
                    return Decision {
                        vote,
                        reason: fit_reason(&format!("{scored}; no consistency probes")),
                    };
                }
                let checked =
                    probe::check(self, &base, &derived, vote, &self.probe_seed(seed)).await;
                let m = self.client.metrics();
                m.probes.fetch_add(checked.asked as u64, Ordering::Relaxed);
                if checked.outcome.is_err() {
                    m.probes_failed.fetch_add(1, Ordering::Relaxed);
                }
                match checked.outcome {
                    Ok(()) => Decision {
                        vote,
                        reason: fit_reason(&format!(
                            "{scored}; {} consistency probes agree",
                            checked.asked
                        )),
                    },
                    Err(why) => Decision::abstain(fit_reason(&format!(
                        "{scored}; would vote {vote:?}, but {why}: the model cannot be trusted on this step"
                    ))),
                }
            }
            Err(e) => Decision::abstain(format!("LLM tier could not judge: {e}")),
        }
    }
}

#[async_trait]
impl Entailment for LlmAuditor {
    type Error = EntailError;

    async fn entail(&self, chain: &Chain<'_>, query: &Query) -> Result<ares::Answer, EntailError> {
        let text = self
            .client
            .complete_json(
                prompt::SYSTEM,
                &prompt::question(chain, query),
                &prompt::reply_schema(),
            )
            .await?;
        let answer = prompt::parse_reply(&text).inspect_err(|why| {
            self.client.metrics().malformed();
            tracing::warn!(target: "trust::llm", reason = %why, "LLM reply rejected");
        })?;
        Ok(answer)
    }
}

#[async_trait]
impl Auditor for LlmAuditor {
    fn tier(&self) -> Tier {
        Tier::Llm
    }

    async fn judge(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        let mut parts: Vec<&[u8]> = vec![seed.as_ref(), segment.claim.as_bytes()];
        parts.extend(segment.premises.iter().map(|p| p.as_bytes()));
        parts.push(b"/givens");
        parts.extend(segment.givens.iter().map(|g| g.as_bytes()));
        let checked: Vec<String> = segment.operations.iter().map(|o| o.describe()).collect();
        parts.push(b"/operations");
        parts.extend(checked.iter().map(|o| o.as_bytes()));
        let key = Hash::of_parts("trust/v1/llm-judgement", &parts);
        let judgement = {
            let mut recent = self.recent.lock().unwrap_or_else(|e| e.into_inner());
            match recent.iter().find(|(k, _)| *k == key) {
                Some((_, j)) => j.clone(),
                None => {
                    let (me, segment, seed) = (self.clone(), segment.clone(), *seed);
                    let j = async move { me.judge_once(&segment, &seed).await }
                        .boxed()
                        .shared();
                    if recent.len() >= KEEP_JUDGEMENTS {
                        recent.pop_front();
                    }
                    recent.push_back((key, j.clone()));
                    j
                }
            }
        };
        judgement.await
    }
}

impl LlmAuditor {
    async fn judge_once(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        let m = self.client.metrics();
        m.segments.fetch_add(1, Ordering::Relaxed);
        let judged = async {
            let c = self.calibration().await;
            if c.passed() {
                self.run(segment, seed).await
            } else {
                Decision::abstain(format!("LLM tier: the model's {}", c.summary()))
            }
        };
        let d = match tokio::time::timeout(self.deadline, judged).await {
            Ok(d) => d,
            Err(_) => Decision::abstain(format!(
                "LLM tier: no judgement within {:?}, before the commit window closes",
                self.deadline
            )),
        };
        if d.vote.is_abstain() {
            m.abstained.fetch_add(1, Ordering::Relaxed);
        }
        tracing::info!(target: "trust::llm", vote = ?d.vote, reason = %d.reason, "LLM judgement");
        d
    }
}

/// Default deadline of one judgement: half the commit window at the configured block
/// time (keys arrive a block or two into the window, and blocks may come slower than
/// the minimum), at least one second.
pub fn default_deadline(commit_window_blocks: u64, block_time: Duration) -> Duration {
    let window = block_time.saturating_mul(u32::try_from(commit_window_blocks).unwrap_or(u32::MAX));
    (window / 2).max(Duration::from_secs(1))
}

impl LlmMetrics {
    /// Counts a reply that arrived but could not be used.
    pub fn malformed(&self) {
        if let Some(c) = self.errors.get(4) {
            c.fetch_add(1, Ordering::Relaxed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_deadline_is_half_the_commit_window() {
        assert_eq!(
            default_deadline(10, Duration::from_secs(1)),
            Duration::from_secs(5)
        );
        assert_eq!(
            default_deadline(2, Duration::from_millis(300)),
            Duration::from_secs(1)
        );
    }
}
