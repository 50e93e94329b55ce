//! The `seats` task: this node's provider and seat duties on each decided block.
//!
//! What to do is decided by the pure planner ([`plan`], `trust_judging::duties`); this task only carries the plan
//! out through its handles, in the order planned: the outbox, the human desk, the
//! provider, the seat, and the judging of sessions, which runs beside the block loop as
//! child tasks (a vote may wait on a blob fetch, and must never hold up the next block's
//! reveals). After a restart it first carries out [`plan::resume`]: what the restart
//! interrupted.
//!
//! Laid out as every actor of this crate (`net`, `mempool`, `audit::duties`): `actor.rs` is
//! the task's loop, `ingress.rs` its mailbox and messages, `state.rs` what the loop owns.
//! This task has no mailbox (decided blocks reach it on a broadcast channel, see [`Config`])
//! and no state of its own beyond its handles and the votes under way; [`plan`] is pure logic.

mod actor;

pub use trust_judging::duties as plan;

use std::sync::Arc;

use futures::FutureExt;

pub use self::actor::{
    Config, Draining, Duties, MAX_CONCURRENT_JUDGING, MAX_CONCURRENT_SLOW_JUDGING,
};
use trust_judging::judge::Auditor;

use super::{computer::ComputerJudge, human::HumanDesk, llm::LlmAuditor, seat::TipReaches};
use crate::view::ChainWatch;

/// The judges of a running node, one per tier it serves: the Computer tier's always (with
/// the node's sandbox for tool calls, when it has one), the LLM tier's when an endpoint is
/// configured, the Human tier's when a person's desk runs.
pub fn judges(
    computer: ComputerJudge,
    llm: Option<LlmAuditor>,
    desk: Option<HumanDesk>,
) -> Vec<Arc<dyn Auditor>> {
    let mut judges: Vec<Arc<dyn Auditor>> = vec![Arc::new(computer)];
    if let Some(judge) = llm {
        judges.push(Arc::new(judge));
    }
    if let Some(desk) = desk {
        judges.push(Arc::new(desk));
    }
    judges
}

/// Resolves once `chain`'s tip reaches a height (never, when the chain view is gone: the
/// node is stopping).
pub(crate) fn tip_reaches(chain: &ChainWatch) -> TipReaches {
    let chain = chain.clone();
    Arc::new(move |height| {
        let mut chain = chain.clone();
        async move {
            if chain.wait_for(|v| v.tip.height >= height).await.is_err() {
                std::future::pending::<()>().await;
            }
        }
        .boxed()
    })
}
