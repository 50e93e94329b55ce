//! The explorer: recent blocks, one block with its transactions decoded, an account, and
//! the search box that sends an id to the page that shows it.

use std::str::FromStr;

use axum::{
    extract::{Path, Query, State},
    response::{IntoResponse, Redirect},
};
use serde::Deserialize;
use trust_protocol::{
    AccountId, Hash,
    tx::{Call, SignedTx, Tx},
};

use super::{
    PageError, PageResult, Pages, account_link, block_link, layout, layout::esc, parse_id,
    session_link, short,
};
use crate::{
    ledger::{LedgerError, StoredBlock},
    query,
    view::latest,
};

/// Blocks listed per page of `/blocks`.
pub const BLOCKS_PER_PAGE: u64 = 25;
/// Longest search query read.
pub const MAX_QUERY_CHARS: usize = 200;

/// The query of `/blocks`.
#[derive(Debug, Deserialize)]
pub struct BlocksQuery {
    /// Show blocks below this height (default: from the tip).
    pub before: Option<String>,
}

/// `GET /blocks?before=H`: up to [`BLOCKS_PER_PAGE`] blocks below `H`, newest first.
pub async fn blocks(State(pages): State<Pages>, Query(q): Query<BlocksQuery>) -> PageResult {
    let tip = latest(&pages.chain).tip.height;
    let before = match q.before.as_deref().map(str::trim) {
        None | Some("") => tip.saturating_add(1),
        Some(s) => s.parse::<u64>().map_err(|_| {
            PageError::BadRequest(format!("before must be a block height, not {s:?}"))
        })?,
    };
    // A pruning node lists from its oldest block (`[ledger] keep_blocks`) and says so.
    let oldest = pages.ledger.pruned_below(0).map_err(PageError::internal)?;
    let top = before.saturating_sub(1).min(tip);
    let bottom = top
        .saturating_sub(BLOCKS_PER_PAGE - 1)
        .max(oldest.unwrap_or(1));
    let pruned = oldest
        .map(|o| {
            format!(" Blocks below {o} were pruned on this node (an archive node keeps them).")
        })
        .unwrap_or_default();
    let mut body = format!("<h1>Blocks</h1>\n<p class=\"lead\">Tip at height {tip}.{pruned}</p>\n");
    if top == 0 {
        body += "<p class=\"muted\">No blocks yet.</p>";
        return Ok(layout::page("Blocks", &body).into_response());
    }
    body += "<div class=\"scroll\"><table><thead><tr><th>Height</th><th>Time (UTC)</th><th>Hash</th><th>Proposer</th><th>Transactions</th></tr></thead><tbody>";
    for h in (bottom..=top).rev() {
        let Some(b) = pages.ledger.block(h).map_err(PageError::internal)? else {
            continue;
        };
        body += &format!(
            "<tr><td>{}</td><td class=\"mono\">{}</td><td><a class=\"mono\" href=\"/blocks/{h}\">{}</a></td><td>{}</td><td>{}</td></tr>",
            block_link(h),
            crate::chain::format_time(b.block.header.time_ms),
            short(&b.block.hash()),
            account_link(&b.block.header.proposer),
            b.block.txs.len()
        );
    }
    body += "</tbody></table></div>\n<nav class=\"pager\">";
    if top < tip {
        body += &format!(
            "<a href=\"/blocks?before={}\">← Newer</a>",
            top.saturating_add(BLOCKS_PER_PAGE)
                .saturating_add(1)
                .min(tip.saturating_add(1))
        );
    }
    if bottom > oldest.unwrap_or(1) {
        body += &format!("<a href=\"/blocks?before={bottom}\">Older →</a>");
    }
    body += "</nav>";
    Ok(layout::page("Blocks", &body).into_response())
}

/// A block id from a path: a height or a 64-hex-character hash.
enum BlockId {
    Height(u64),
    Hash(Hash),
}

fn parse_block_id(s: &str) -> Result<BlockId, PageError> {
    let s = s.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit()) {
        return s
            .parse()
            .map(BlockId::Height)
            .map_err(|_| PageError::BadRequest("block height out of range".into()));
    }
    Hash::from_str(s).map(BlockId::Hash).map_err(|_| {
        PageError::BadRequest("a block is named by its height or its 64-hex-character hash".into())
    })
}

/// The block named by `id`, or a 404 (a hash is one read of the ledger's hash index).
fn find_block(pages: &Pages, id: BlockId) -> Result<StoredBlock, PageError> {
    match id {
        BlockId::Height(h) => {
            pages.ledger.check_kept(h).map_err(|e| match e {
                e @ LedgerError::Pruned { .. } => PageError::NotFound(e.to_string()),
                e => PageError::internal(e),
            })?;
            pages
                .ledger
                .block(h)
                .map_err(PageError::internal)?
                .ok_or_else(|| PageError::NotFound(format!("no block at height {h}")))
        }
        BlockId::Hash(hash) => query::block_by_hash(&pages.ledger, &hash)
            .map_err(PageError::internal)?
            .ok_or_else(|| PageError::NotFound(format!("no block with hash {hash}"))),
    }
}

/// `GET /blocks/{height-or-hash}`: the header and every transaction decoded.
pub async fn block(State(pages): State<Pages>, Path(id): Path<String>) -> PageResult {
    let stored = find_block(&pages, parse_block_id(&id)?)?;
    let h = &stored.block.header;
    let height = h.height;
    let mut body = format!("<h1>Block {height}</h1>\n<div class=\"card\"><dl class=\"kv\">");
    body += &format!(
        "<dt>Hash</dt><dd class=\"mono\">{}</dd><dt>Time</dt><dd class=\"mono\">{}</dd>\
<dt>Previous</dt><dd class=\"mono\">{}</dd><dt>Proposer</dt><dd>{}</dd><dt>State root</dt><dd class=\"mono\">{}</dd>\
<dt>Transactions root</dt><dd class=\"mono\">{}</dd><dt>Certificate</dt><dd>{} bytes</dd>",
        stored.block.hash(),
        crate::chain::format_time(h.time_ms),
        if height > 1 {
            format!("<a href=\"/blocks/{}\">{}</a>", height - 1, h.prev_hash)
        } else {
            h.prev_hash.to_string()
        },
        account_link(&h.proposer),
        h.state_root,
        h.txs_root,
        stored.certificate.len()
    );
    body += "</dl></div>\n<nav class=\"pager\">";
    if height > 1 {
        body += &format!(
            "<a href=\"/blocks/{}\">← Block {}</a>",
            height - 1,
            height - 1
        );
    }
    if height < latest(&pages.chain).tip.height {
        body += &format!(
            "<a href=\"/blocks/{}\">Block {} →</a>",
            height + 1,
            height + 1
        );
    }
    body += "</nav>\n";
    body += &format!("<h2>Transactions ({})</h2>\n", stored.block.txs.len());
    if stored.block.txs.is_empty() {
        body += "<p class=\"muted\">None.</p>";
    } else {
        body += "<div class=\"scroll\"><table><thead><tr><th>#</th><th>Kind</th><th>Sender</th><th>Nonce</th><th>Details</th><th>Id</th></tr></thead><tbody>";
        for (i, tx) in query::decode_txs(&stored).into_iter().enumerate() {
            body += &match tx {
                Ok(tx) => tx_row(i, &tx),
                Err(e) => format!(
                    "<tr><td>{i}</td><td colspan=\"5\">does not decode: {}</td></tr>",
                    esc(&e.to_string())
                ),
            };
        }
        body += "</tbody></table></div>";
    }
    Ok(layout::page(&format!("Block {height}"), &body).into_response())
}

fn tx_row(i: usize, tx: &SignedTx) -> String {
    let (kind, details) = describe(tx);
    format!(
        "<tr><td>{i}</td><td>{kind}</td><td>{}</td><td>{}</td><td class=\"wrapok\">{details}</td><td class=\"mono\" title=\"{id}\">{}</td></tr>",
        account_link(&tx.signer),
        tx.body.nonce,
        short(&tx.id()),
        id = tx.id()
    )
}

/// Segment indices as `0, 1, 2`.
fn segment_list(segments: impl Iterator<Item = u16>) -> String {
    segments
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// A transaction's kind and its main fields as HTML (data escaped).
pub fn describe(tx: &SignedTx) -> (&'static str, String) {
    match &tx.body.call {
        Call::Transfer { to, amount } => ("Transfer", format!("{amount} to {}", account_link(to))),
        Call::RegisterAuditor {
            tier,
            expertise,
            stake,
            ..
        } => (
            "RegisterAuditor",
            format!(
                "tier {tier:?}; bonds {stake}; expertise: {}",
                if expertise.is_empty() {
                    "any".to_string()
                } else {
                    esc(&expertise.join(", "))
                }
            ),
        ),
        Call::Bond { amount } => ("Bond", amount.to_string()),
        Call::Unbond { amount } => ("Unbond", amount.to_string()),
        Call::Withdraw => ("Withdraw", String::new()),
        Call::Exit => ("Exit", "leaves the network; all stake unbonds".to_string()),
        Call::DeclareExpertise { expertise } => (
            "DeclareExpertise",
            format!(
                "declares expertise {}, counting after the network's delay",
                esc(&expertise.join(", "))
            ),
        ),
        Call::OpenSession(m) => (
            "OpenSession",
            format!(
                "session {}; {} segments, {} left out; fee {}; domain {}",
                session_link(&Tx::session_id(&tx.signer, tx.body.nonce)),
                m.segments.len(),
                m.left_out.len(),
                m.fee,
                if m.domain.is_empty() {
                    "any".to_string()
                } else {
                    esc(&m.domain)
                }
            ),
        ),
        Call::ReportBadKey {
            session,
            segment,
            keys,
            bad,
            ..
        } => (
            "ReportBadKey",
            format!(
                "session {}, segment {segment}: the key of segment {} does not open ({} keys on record, shared secret and proof revealed)",
                session_link(session),
                keys.get(usize::from(*bad))
                    .map_or_else(|| "?".to_string(), |k| k.segment.to_string()),
                keys.len()
            ),
        ),
        Call::DeliverKeys { session, keys } => (
            "DeliverKeys",
            format!(
                "session {}; {} sealed keys",
                session_link(session),
                keys.len()
            ),
        ),
        Call::Commit {
            session, segment, ..
        } => (
            "Commit",
            format!("session {}, segment {segment}", session_link(session)),
        ),
        Call::Reveal {
            session,
            segment,
            vote,
            reason,
            ..
        } => (
            "Reveal",
            format!(
                "session {}, segment {segment}: {vote:?}, “{}”",
                session_link(session),
                esc(reason)
            ),
        ),
        Call::Commits { session, entries } => (
            "Commits",
            format!(
                "session {}, {} segments: {}",
                session_link(session),
                entries.len(),
                segment_list(entries.iter().map(|e| e.segment))
            ),
        ),
        Call::Reveals { session, entries } => (
            "Reveals",
            format!(
                "session {}, {} segments: {}",
                session_link(session),
                entries.len(),
                entries
                    .iter()
                    .map(|e| format!("{}: {:?}, “{}”", e.segment, e.vote, esc(&e.reason)))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ),
        Call::Votes { groups } => (
            "Votes",
            groups
                .iter()
                .map(|g| {
                    let mut parts = Vec::new();
                    if !g.commits.is_empty() {
                        parts.push(format!(
                            "commits {}",
                            segment_list(g.commits.iter().map(|e| e.segment))
                        ));
                    }
                    if !g.reveals.is_empty() {
                        parts.push(format!(
                            "reveals {}",
                            g.reveals
                                .iter()
                                .map(|e| format!(
                                    "{}: {:?}, “{}”",
                                    e.segment,
                                    e.vote,
                                    esc(&e.reason)
                                ))
                                .collect::<Vec<_>>()
                                .join("; ")
                        ));
                    }
                    format!("session {}: {}", session_link(&g.session), parts.join("; "))
                })
                .collect::<Vec<_>>()
                .join("<br>"),
        ),
        Call::Appeal { session, segments } => (
            "Appeal",
            format!(
                "session {}, {} segments: {}",
                session_link(session),
                segments.len(),
                segment_list(segments.iter().copied())
            ),
        ),
        Call::RevealMapping {
            session, mapping, ..
        } => (
            "RevealMapping",
            format!(
                "session {}; mapping <span class=\"mono\">{}</span>",
                session_link(session),
                short(mapping)
            ),
        ),
        Call::RevealHoneypot {
            session,
            segment,
            verdict,
            difficulty,
            ..
        } => (
            "RevealHoneypot",
            format!(
                "session {}, segment {segment}: {verdict:?} ({difficulty:?})",
                session_link(session)
            ),
        ),
        Call::RevealHoneypots {
            session, openings, ..
        } => (
            "RevealHoneypots",
            format!(
                "session {}, honeypot set of {} segments: {}",
                session_link(session),
                openings.len(),
                openings
                    .iter()
                    .map(|o| format!("{}: {:?} ({:?})", o.segment, o.verdict, o.difficulty))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        ),
    }
}

/// `GET /accounts/{id}`: balance, stake, nonces, unbondings.
pub async fn account(State(pages): State<Pages>, Path(id): Path<String>) -> PageResult {
    let who: AccountId = parse_id("an account id", &id)?;
    let pooled = pages.pool.account(who).await.map_err(PageError::internal)?;
    let st = pooled.view.contract.state();
    let acct = st
        .accounts
        .get(&who)
        .ok_or_else(|| PageError::NotFound(format!("no account {who}")))?;
    let mut body = format!(
        "<h1>Account</h1>\n<p class=\"mono\">{who}</p>\n<div class=\"grid\">{}{}{}{}</div>\n",
        super::stat("Balance", &acct.balance.to_string()),
        super::stat("Stake", &acct.stake.to_string()),
        super::stat("Nonce", &acct.nonce.to_string()),
        super::stat(
            "Next nonce (pooled counted)",
            &acct.nonce.saturating_add(pooled.pending).to_string()
        ),
    );
    if st.auditors.contains_key(&who) {
        body += &format!(
            "<p>This account is a registered auditor: <a href=\"/auditors/{who}\">its auditor page</a>.</p>\n"
        );
    }
    if pooled.view.validators.iter().any(|v| v.id == who) {
        body += "<p>It votes on the next height as a validator.</p>\n";
    }
    if !acct.unbonding.is_empty() {
        body += "<h2>Unbonding</h2>\n<div class=\"scroll\"><table><thead><tr><th>Amount</th><th>Withdrawable from height</th></tr></thead><tbody>";
        for u in &acct.unbonding {
            body += &format!("<tr><td>{}</td><td>{}</td></tr>", u.amount, u.release_at);
        }
        body += "</tbody></table></div>\n";
    }
    Ok(layout::page("Account", &body).into_response())
}

/// The query of `/search`.
#[derive(Debug, Deserialize)]
pub struct SearchQuery {
    /// A session id, block height, block hash, account id or transaction id.
    #[serde(default)]
    pub q: String,
}

/// `GET /search?q=`: a 303 to the page of what `q` names, or a 404 page saying nothing
/// matched.
pub async fn search(State(pages): State<Pages>, Query(q): Query<SearchQuery>) -> PageResult {
    let q = q.q.trim();
    if q.is_empty() {
        return Err(PageError::BadRequest(
            "type a session id, block height, block hash, account id or transaction id".into(),
        ));
    }
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(PageError::BadRequest(format!(
            "a search is at most {MAX_QUERY_CHARS} characters"
        )));
    }
    match resolve(&pages, q)? {
        Some(path) => Ok(Redirect::to(&path).into_response()),
        None => Err(PageError::NotFound(format!(
            "nothing found for {q:?}: no block at that height, and no session, account, block or transaction with that id"
        ))),
    }
}

/// The page path `q` names, if any.
fn resolve(pages: &Pages, q: &str) -> Result<Option<String>, PageError> {
    if q.bytes().all(|b| b.is_ascii_digit()) {
        let Ok(h) = q.parse::<u64>() else {
            return Ok(None);
        };
        let exists = pages
            .ledger
            .block(h)
            .map_err(PageError::internal)?
            .is_some();
        return Ok(exists.then(|| format!("/blocks/{h}")));
    }
    let Ok(id) = Hash::from_str(q) else {
        return Ok(None);
    };
    let chain = latest(&pages.chain);
    let st = chain.contract.state();
    if st.outcomes.contains_key(&id)
        || st.sessions.contains_key(&id)
        || st.failed.contains_key(&id)
        || pages
            .ledger
            .final_outcome(&id)
            .map_err(PageError::internal)?
            .is_some()
    {
        return Ok(Some(format!("/sessions/{id}")));
    }
    let account = AccountId::from(id.0);
    if st.accounts.contains_key(&account) {
        return Ok(Some(format!("/accounts/{account}")));
    }
    if let Some((h, _)) = pages.ledger.tx_location(&id).map_err(PageError::internal)? {
        return Ok(Some(format!("/blocks/{h}")));
    }
    Ok(pages
        .ledger
        .height_of(&id)
        .map_err(PageError::internal)?
        .map(|h| format!("/blocks/{h}")))
}
