//! `GET /`: the network at a glance.

use std::{cmp::Reverse, collections::BinaryHeap};

use axum::{extract::State, response::IntoResponse};
use trust_contracts::{State as ContractState, TraceVerdict};
use trust_protocol::Hash;

use super::{PageError, PageResult, Pages, account_link, block_link, layout, session_link, stat};
use crate::{query, view::latest};

/// Decided sessions listed on the network page.
pub const RECENT_SESSIONS: usize = 20;
/// Live sessions listed on the network page.
pub const LIVE_SESSIONS: usize = 20;

/// The trace verdict as a coloured badge.
pub fn verdict_badge(v: TraceVerdict) -> String {
    let (class, word) = match v {
        TraceVerdict::Pass => ("pass", "Pass"),
        TraceVerdict::Fail => ("fail", "Fail"),
        TraceVerdict::Inconclusive => ("inconclusive", "Inconclusive"),
    };
    format!("<span class=\"badge {class}\">{word}</span>")
}

/// The `n` most recently decided sessions, newest first: one pass over the outcomes with
/// a heap of `n`, so the work stays linear however many sessions were ever decided.
pub fn recent_outcomes(st: &ContractState, n: usize) -> Vec<(u64, Hash)> {
    let mut heap: BinaryHeap<Reverse<(u64, Hash)>> = BinaryHeap::with_capacity(n + 1);
    for (sid, o) in &st.outcomes {
        heap.push(Reverse((o.decided_at, *sid)));
        if heap.len() > n {
            heap.pop();
        }
    }
    let mut out: Vec<(u64, Hash)> = heap.into_iter().map(|Reverse(x)| x).collect();
    out.sort_unstable_by(|a, b| b.cmp(a));
    out
}

/// The network page.
pub async fn page(State(pages): State<Pages>) -> PageResult {
    let mempool = pages.pool.count().await.map_err(PageError::internal)?;
    let chain = latest(&pages.chain);
    let peers = pages.peers.borrow().clone();
    let st = chain.contract.state();

    let mut body = String::from("<h1>Network</h1>\n<div class=\"grid\">");
    body += &stat("Height", &block_link(chain.tip.height));
    body += &stat("Peers", &peers.peers.to_string());
    body += &stat("Mempool", &format!("{mempool} tx"));
    body += &stat("Validators", &chain.validators.len().to_string());
    body += &stat("Auditors", &st.auditors.len().to_string());
    body += &stat("Live sessions", &st.sessions.len().to_string());
    body += "</div>\n<div class=\"card\"><dl class=\"kv\">";
    body += &format!(
        "<dt>Tip hash</dt><dd class=\"mono\">{}</dd><dt>State root</dt><dd class=\"mono\">{}</dd><dt>This node</dt><dd>{}</dd>",
        chain.tip.hash,
        chain.state_root,
        account_link(&pages.node_id)
    );
    body += "</dl></div>\n";

    body += "<h2>Validators of the next height</h2>\n<div class=\"scroll\"><table><thead><tr><th>Validator</th><th>Voting power</th></tr></thead><tbody>";
    for v in chain.validators.iter() {
        body += &format!(
            "<tr><td>{}</td><td>{}</td></tr>",
            account_link(&v.id),
            v.power
        );
    }
    body += "</tbody></table></div>\n";

    body += "<h2>Peers</h2>\n";
    if peers.heights.is_empty() {
        body += &format!(
            "<p class=\"muted\">{} connected; none has reported its height yet.</p>",
            peers.peers
        );
    } else {
        body += "<div class=\"scroll\"><table><thead><tr><th>Peer</th><th>Height</th></tr></thead><tbody>";
        for (peer, height) in &peers.heights {
            body += &format!(
                "<tr><td class=\"mono\">{}</td><td>{height}</td></tr>",
                layout::esc(peer)
            );
        }
        body += "</tbody></table></div>\n";
    }

    body += &live_sessions(st);
    body += &recent_sessions(st);
    Ok(layout::page("Network", &body).into_response())
}

fn live_sessions(st: &ContractState) -> String {
    let mut out = String::from("<h2>Live sessions</h2>\n");
    if st.sessions.is_empty() {
        out += "<p class=\"muted\">None.</p>\n";
        return out;
    }
    out += "<div class=\"scroll\"><table><thead><tr><th>Session</th><th>Provider</th><th>Opened at</th><th>Segments</th><th>Phase</th><th>Seats committed / revealed / drawn</th></tr></thead><tbody>";
    // Newest first, and no more than a page's worth.
    let mut live: Vec<_> = st.sessions.iter().collect();
    live.sort_unstable_by_key(|(_, s)| Reverse(s.opened_at));
    for (sid, s) in live.into_iter().take(LIVE_SESSIONS) {
        let seats = query::seat_counts(s);
        out += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{} / {} / {}</td></tr>",
            session_link(sid),
            account_link(&s.provider),
            block_link(s.opened_at),
            s.segments.len(),
            layout::esc(&query::phase_name(&s.phase)),
            seats.committed,
            seats.revealed,
            seats.assigned
        );
    }
    out += "</tbody></table></div>\n";
    out
}

fn recent_sessions(st: &ContractState) -> String {
    let mut out = String::from("<h2>Recently decided sessions</h2>\n");
    let recent = recent_outcomes(st, RECENT_SESSIONS);
    if recent.is_empty() {
        let keep = st.params.outcome_retention;
        if st.height > keep {
            out += &format!(
                "<p class=\"muted\">None in the contract state: a final outcome leaves it {keep} \
                 blocks after it became final (search a session by its id: this node keeps \
                 it).</p>\n"
            );
        } else {
            out += "<p class=\"muted\">None yet.</p>\n";
        }
        return out;
    }
    out += "<div class=\"scroll\"><table><thead><tr><th>Session</th><th>Verdict</th><th>Decided at</th><th>Coverage</th><th>Provider</th></tr></thead><tbody>";
    for (_, sid) in recent {
        let Some(o) = st.outcomes.get(&sid) else {
            continue;
        };
        out += &format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{} / {} judged</td><td>{}</td></tr>",
            session_link(&sid),
            verdict_badge(o.trace),
            block_link(o.decided_at),
            o.coverage.judged,
            o.coverage.segments,
            account_link(&o.provider)
        );
    }
    out += "</tbody></table></div>\n";
    out
}
