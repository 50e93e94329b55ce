//! The provider's own re-run of its tool calls, for its eyes only: after a session opens,
//! this node re-runs each of the transcript's code calls in its own sandbox and keeps what
//! it got in the session's page record ([`PageRecord::reruns`]), so that the session page
//! and `query` show, beside the result the transcript reports and the seats' verdict,
//! what the code gives here. The seats' public reasons never quote a value; the provider
//! holds the plaintext anyway, and this is where it reads the difference.
//!
//! One task owns the re-runs, fed by a bounded queue ([`QUEUE`] sessions): a session whose
//! re-runs find the queue full is opened all the same, its page without them (logged).
//! The calls run one at a time on a blocking thread, outside the seats' judging slots, so a
//! provider's page never holds up its seats' votes.

use tokio::sync::mpsc;
use trust_protocol::Hash;

use super::PageRecord;
use crate::audit::computer::ComputerJudge;

/// Sessions waiting for their re-runs.
pub const QUEUE: usize = 64;

/// One tool call to re-run: its index in the page record, its text (as its seats read
/// it) and the code of its kernel's earlier calls.
pub type Call = (usize, String, Vec<String>);

/// The handle that queues a session's re-runs.
#[derive(Debug, Clone)]
pub struct Reruns {
    queue: mpsc::Sender<(Hash, Vec<Call>)>,
}

impl Reruns {
    /// Starts the task that re-runs through `judge` and writes into `pages` (the
    /// provider's page records). Needs a tokio runtime.
    pub fn start(pages: sled::Tree, judge: ComputerJudge) -> Self {
        let (queue, mut rx) = mpsc::channel::<(Hash, Vec<Call>)>(QUEUE);
        tokio::spawn(async move {
            while let Some((session, calls)) = rx.recv().await {
                let n = calls.len();
                let mut shown = Vec::with_capacity(n);
                for (i, text, cells) in calls {
                    if let Some(s) = judge.rerun_shown(text, cells).await {
                        shown.push((i, s));
                    }
                }
                match keep(&pages, &session, shown) {
                    Ok(true) => {
                        tracing::debug!(%session, calls = n, "tool calls re-run for the session page")
                    }
                    Ok(false) => {}
                    Err(e) => {
                        tracing::warn!(%session, error = %e, "tool calls re-run but not kept for the session page")
                    }
                }
            }
        });
        Self { queue }
    }

    /// Queues the code calls among `record`'s segments (`cells`: a kernel call's earlier
    /// cells by node id).
    pub fn ask(
        &self,
        session: Hash,
        record: &PageRecord,
        cells: &std::collections::BTreeMap<String, Vec<String>>,
    ) {
        let calls: Vec<Call> = record
            .nodes
            .iter()
            .zip(&record.texts)
            .enumerate()
            // The call's own segment (`TC`), not the `TU` claim beside it, which reads
            // the same block.
            .filter(|(_, (node, _))| {
                !node.starts_with(super::HONEYPOT_PREFIX) && !node.starts_with("TU")
            })
            .filter(|(_, (_, text))| {
                trust_judging::computer::tool::read_tool(text).is_some_and(|t| {
                    matches!(t.kind(), trust_judging::computer::tool::ToolKind::Code(_))
                })
            })
            .map(|(i, (node, text))| {
                (
                    i,
                    text.clone(),
                    cells.get(node).cloned().unwrap_or_default(),
                )
            })
            .collect();
        if calls.is_empty() {
            return;
        }
        if let Err(e) = self.queue.try_send((session, calls)) {
            tracing::warn!(%session, error = %e, "the session page will not show re-runs of its tool calls: the re-run queue is full");
        }
    }
}

/// Writes `shown` into the page record of `session`, if it is still kept (`false`: it
/// was pruned or dropped meanwhile).
fn keep(pages: &sled::Tree, session: &Hash, shown: Vec<(usize, String)>) -> Result<bool, String> {
    let mut kept = false;
    let mut bad = None;
    pages
        .update_and_fetch(session.as_ref(), |old| {
            let old = old?;
            let mut r: PageRecord = match serde_json::from_slice(old) {
                Ok(r) => r,
                Err(e) => {
                    bad = Some(e.to_string());
                    return Some(old.to_vec());
                }
            };
            r.reruns = vec![None; r.nodes.len()];
            for (i, s) in &shown {
                if let Some(slot) = r.reruns.get_mut(*i) {
                    *slot = Some(s.clone());
                }
            }
            kept = true;
            Some(serde_json::to_vec(&r).unwrap_or_else(|_| old.to_vec()))
        })
        .map_err(|e| e.to_string())?;
    match bad {
        Some(e) => Err(e),
        None => Ok(kept),
    }
}
