//! The Computer tier's judge on a running node: the deterministic checkers of
//! [`trust_judging::judge::ComputerAuditor`], and a provider's tool calls re-run in this
//! node's sandbox ([`trust_sandbox`]).
//!
//! A re-run takes up to its CPU cap (10 s by default), so it never runs on the async
//! runtime: each judgement goes to a blocking thread, and at most [`MAX_RERUNS`] of them
//! run at once (a session seated on many tool segments queues behind them rather than
//! starting a sandbox per segment at once). What the sandbox is, and what it holds against,
//! is docs/security.md's "Running a provider's code".

use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::Semaphore;
use trust_judging::judge::{Auditor, ComputerAuditor, Decision, SegmentView};
use trust_protocol::{Hash, tx::Tier};
use trust_sandbox::{Config, Execute, Sandbox};

/// Judgements (and so sandboxes) of one node under way at once.
pub const MAX_RERUNS: usize = 2;

/// The Computer tier's judge, with the node's sandbox when it has one.
#[derive(Clone)]
pub struct ComputerJudge {
    exec: Option<Arc<dyn Execute>>,
    slots: Arc<Semaphore>,
}

impl std::fmt::Debug for ComputerJudge {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputerJudge")
            .field("sandbox", &self.exec.as_ref().map(|e| e.interpreter()))
            .finish()
    }
}

impl ComputerJudge {
    /// A judge that re-runs tool calls through `exec` (none: it abstains on them).
    pub fn new(exec: Option<Arc<dyn Execute>>) -> Self {
        Self {
            exec,
            slots: Arc::new(Semaphore::new(MAX_RERUNS)),
        }
    }

    /// The judge `cfg` (the node's `[computer]` section, `ComputerConfig::sandbox`) asks
    /// for: the sandbox started and probed (a few hundred milliseconds), or, when execution
    /// is off or the sandbox cannot start, a judge whose seats abstain on tool segments.
    /// Says which in the log, once, at start-up.
    pub fn start(cfg: &Config) -> Self {
        Self::new(start_sandbox(cfg))
    }

    /// What re-running the tool call `text` (a kernel's earlier `cells` first) gives on
    /// this node, for its provider's eyes ([`trust_judging::computer::tool::rerun_shown`]):
    /// on a blocking thread, outside the seats' slots (a provider's own re-runs never hold
    /// up its seats' votes). `None` when `text` is no code call.
    pub async fn rerun_shown(&self, text: String, cells: Vec<String>) -> Option<String> {
        let exec = self.exec.clone();
        tokio::task::spawn_blocking(move || {
            let tool = trust_judging::computer::tool::read_tool(&text)?;
            trust_judging::computer::tool::rerun_shown(&tool, &cells, exec.as_deref())
        })
        .await
        .ok()
        .flatten()
    }

    /// The interpreter tool calls are re-run with, when there is a sandbox.
    pub fn interpreter(&self) -> Option<&str> {
        self.exec.as_ref().map(|e| e.interpreter())
    }
}

/// The sandbox `cfg` asks for, started; `None` (logged) when execution is off or it cannot
/// start. Shared by the node and `trust-node check`.
pub fn start_sandbox(cfg: &Config) -> Option<Arc<dyn Execute>> {
    if !cfg.enabled {
        tracing::info!(
            "tool calls are not re-run: [computer] execute = false; this node's seats abstain on tool segments"
        );
        return None;
    }
    match Sandbox::start(cfg) {
        Ok(sandbox) => {
            tracing::info!(
                interpreter = sandbox.interpreter(),
                "sandbox ready: tool calls are re-run under bubblewrap, seccomp and resource limits"
            );
            Some(Arc::new(sandbox))
        }
        Err(e) => {
            tracing::warn!(
                "the sandbox cannot start ({e}): this node's seats abstain on tool segments and run no code"
            );
            None
        }
    }
}

#[async_trait]
impl Auditor for ComputerJudge {
    fn tier(&self) -> Tier {
        Tier::Computer
    }

    async fn judge(&self, segment: &SegmentView, seed: &Hash) -> Decision {
        let Some(exec) = self.exec.clone() else {
            return crate::cpu::measure(crate::cpu::Part::Judge, || {
                ComputerAuditor.judge_now(segment, seed)
            });
        };
        let Ok(_slot) = self.slots.clone().acquire_owned().await else {
            return Decision::abstain("the node is stopping");
        };
        let (segment, seed) = (segment.clone(), *seed);
        tokio::task::spawn_blocking(move || {
            crate::cpu::measure(crate::cpu::Part::Judge, || {
                ComputerAuditor.judge_with(&segment, &seed, Some(exec.as_ref()))
            })
        })
        .await
        .unwrap_or_else(|e| Decision::abstain(format!("the Computer judge failed: {e}")))
    }

    fn concurrency(&self) -> usize {
        ComputerAuditor.concurrency()
    }
}

#[cfg(test)]
mod tests {
    use trust_protocol::{
        Vote,
        trace::blocks::{Semantics, render_tool},
    };

    use super::*;

    fn tool_segment(result: &str) -> SegmentView {
        SegmentView {
            claim: render_tool(
                "call_1",
                "python",
                Some(Semantics::Script),
                "print(240 - 7.5 * 18 + 3)",
                result,
            )
            .expect("renders"),
            ..SegmentView::default()
        }
    }

    /// Through the seat's trait, on the real sandbox: a reported result the code prints is
    /// Valid, another value Invalid, and the vote's reason names the interpreter.
    #[tokio::test]
    async fn a_seat_re_runs_a_tool_call_in_the_sandbox() {
        let judge = ComputerJudge::start(&Config::default());
        let Some(interpreter) = judge.interpreter().map(str::to_owned) else {
            panic!(
                "the sandbox must start here (bubblewrap and python3 are installed by scripts/test.sh)"
            );
        };
        let right = judge.judge(&tool_segment("108.0"), &Hash::ZERO).await;
        assert_eq!(right.vote, Vote::Valid, "{}", right.reason);
        assert!(right.reason.contains(&interpreter), "{}", right.reason);
        let wrong = judge.judge(&tool_segment("111.0"), &Hash::ZERO).await;
        assert_eq!(wrong.vote, Vote::Invalid, "{}", wrong.reason);
    }

    /// The provider's code running past the sandbox's CPU cap is the abstention the
    /// provider pays for (`PayloadAbstain`, issue 54), its reason saying so; the same
    /// segment on a node with execution off is a plain abstention (the seat's side).
    #[tokio::test]
    async fn a_runaway_tool_call_is_an_abstention_the_provider_pays_for() {
        let cfg = Config {
            limits: trust_sandbox::Limits {
                cpu_seconds: 1,
                wall: std::time::Duration::from_secs(5),
                ..Config::default().limits
            },
            ..Config::default()
        };
        let judge = ComputerJudge::start(&cfg);
        assert!(judge.interpreter().is_some(), "the sandbox must start here");
        let runaway = SegmentView {
            claim: render_tool(
                "call_1",
                "python",
                Some(Semantics::Script),
                "while True:\n    pass",
                "1",
            )
            .expect("renders"),
            ..SegmentView::default()
        };
        let d = judge.judge(&runaway, &Hash::ZERO).await;
        assert_eq!(d.vote, Vote::PayloadAbstain, "{}", d.reason);
        assert!(d.reason.contains("provider pays"), "{}", d.reason);
        let off = ComputerJudge::start(&Config {
            enabled: false,
            ..Config::default()
        });
        assert_eq!(off.judge(&runaway, &Hash::ZERO).await.vote, Vote::Abstain);
    }

    /// With execution off, the same segment is an abstention and no code runs.
    #[tokio::test]
    async fn execution_off_abstains_on_tool_calls() {
        let judge = ComputerJudge::start(&Config {
            enabled: false,
            ..Config::default()
        });
        assert!(judge.interpreter().is_none());
        let d = judge.judge(&tool_segment("108.0"), &Hash::ZERO).await;
        assert_eq!(d.vote, Vote::Abstain, "{}", d.reason);
    }
}
