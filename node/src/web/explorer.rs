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
    ledger::{IdIndex, LedgerError, StoredBlock},
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
        Call::Pause => (
            "Pause",
            "stops being drawn for new seats, after the network's delay".to_string(),
        ),
        Call::Resume => (
            "Resume",
            "is drawn again, after the network's delay".to_string(),
        ),
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
    /// A session id, block height, block hash, account id or transaction id, or the start
    /// of an id (at least [`MIN_PREFIX_HEX`] hex characters).
    #[serde(default)]
    pub q: String,
}

/// Fewest hex characters `/search` reads as the start of an id (the pages show 12).
pub const MIN_PREFIX_HEX: usize = 8;

/// Most ids of one kind a search lists. Each of the places an id may be (sessions, decided
/// and failed sessions of the state, final outcomes in the ledger, accounts, block hashes,
/// transaction ids: seven ordered indexes) is read from the first key of the prefix's
/// range for at most one more than this, so that one request reads at most
/// `7 * (MAX_MATCHES + 1)` entries (and a block height for each block or transaction
/// found) however large the ledger and the state are.
pub const MAX_MATCHES: usize = 10;

/// What a search found.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
enum Found {
    /// The block at a height.
    Height(u64),
    /// A session (live, decided, failed, or final and kept by the ledger).
    Session(Hash),
    /// An account.
    Account(AccountId),
    /// A block by its hash, with its height.
    Block(Hash, u64),
    /// A transaction, with the height of its block.
    Tx(Hash, u64),
}

impl Found {
    /// The page that shows it.
    fn path(&self) -> String {
        match self {
            Found::Height(h) | Found::Block(_, h) | Found::Tx(_, h) => format!("/blocks/{h}"),
            Found::Session(id) => format!("/sessions/{id}"),
            Found::Account(id) => format!("/accounts/{id}"),
        }
    }

    /// One item of the list of matches (HTML).
    fn item(&self) -> String {
        let link = |id: &dyn std::fmt::Display| {
            format!("<a class=\"mono\" href=\"{}\">{id}</a>", esc(&self.path()))
        };
        match self {
            Found::Height(h) => format!("Block at height {}", link(h)),
            Found::Session(id) => format!("Session {}", link(id)),
            Found::Account(id) => format!("Account {}", link(id)),
            Found::Block(id, h) => format!("Block {h}, hash {}", link(id)),
            Found::Tx(id, h) => format!("Transaction {} in block {h}", link(id)),
        }
    }
}

/// Everything a query names, as far as [`MAX_MATCHES`] of each kind.
#[derive(Debug, Default)]
struct Matches {
    found: Vec<Found>,
    /// Some kind had more than [`MAX_MATCHES`] ids with the prefix.
    more: bool,
}

/// `GET /search?q=`: a 303 to the page of what `q` names (a block height, a whole id, or
/// the start of exactly one id); a page listing the ids that start with `q` when several
/// do; a 404 page when nothing matched, a 400 one when `q` is too short to be read as the
/// start of an id.
pub async fn search(State(pages): State<Pages>, Query(q): Query<SearchQuery>) -> PageResult {
    let q = q.q.trim();
    if q.is_empty() {
        return Err(PageError::BadRequest(
            "type a session id, block height, block hash, account id or transaction id (or its first 8 or more hex characters)".into(),
        ));
    }
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(PageError::BadRequest(format!(
            "a search is at most {MAX_QUERY_CHARS} characters"
        )));
    }
    let hex = q.len() <= 64 && q.bytes().all(|b| b.is_ascii_hexdigit());
    let m = resolve(&pages, q)?;
    match m.found.as_slice() {
        [one] => Ok(Redirect::to(&one.path()).into_response()),
        [] if hex && q.len() < MIN_PREFIX_HEX && !q.bytes().all(|b| b.is_ascii_digit()) => {
            Err(PageError::BadRequest(format!(
                "{q:?} is too short to search for: give at least {MIN_PREFIX_HEX} hex characters of an id (the pages show 12), or a whole id or block height"
            )))
        }
        [] => Err(PageError::NotFound(format!(
            "nothing found for {q:?}: no block at that height, and no session, account, block or transaction whose id is or starts with it{}",
            if hex && q.len() < MIN_PREFIX_HEX {
                format!(" (the start of an id is read from {MIN_PREFIX_HEX} hex characters on)")
            } else {
                String::new()
            }
        ))),
        many => {
            let lead = match m.more {
                false => format!("{} matches for", many.len()),
                true => format!(
                    "More than {} matches (at most {MAX_MATCHES} of each kind listed) for",
                    many.len()
                ),
            };
            let mut body = format!(
                "<h1>Search</h1>\n<p class=\"lead\">{lead} <span class=\"mono\">{}</span>: type more of the id to go to one.</p>\n<ul>",
                esc(q)
            );
            for f in many {
                body += &format!("<li>{}</li>", f.item());
            }
            body += "</ul>\n";
            Ok(layout::page("Search", &body).into_response())
        }
    }
}

/// The range of ids that start with the hex `prefix` (at most 64 characters): the prefix
/// padded with `0`s, and with `f`s.
fn prefix_range(prefix: &str) -> Option<(Hash, Hash)> {
    let pad = |c: char| {
        let mut s = prefix.to_ascii_lowercase();
        s.extend(std::iter::repeat_n(c, 64usize.saturating_sub(s.len())));
        Hash::from_hex(&s).ok()
    };
    Some((pad('0')?, pad('f')?))
}

/// What `q` names: the block at height `q`, and every id (sessions, accounts, blocks,
/// transactions) that is `q` or, from [`MIN_PREFIX_HEX`] hex characters on, starts with
/// it; at most [`MAX_MATCHES`] of each kind.
fn resolve(pages: &Pages, q: &str) -> Result<Matches, PageError> {
    let mut m = Matches::default();
    if q.bytes().all(|b| b.is_ascii_digit())
        && let Ok(h) = q.parse::<u64>()
        && pages
            .ledger
            .block(h)
            .map_err(PageError::internal)?
            .is_some()
    {
        m.found.push(Found::Height(h));
    }
    if q.len() < MIN_PREFIX_HEX || q.len() > 64 || !q.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(m);
    }
    let Some((lo, hi)) = prefix_range(q) else {
        return Ok(m);
    };
    let take = MAX_MATCHES.saturating_add(1);
    let mut note = |found: &mut Vec<Found>, more: bool| {
        m.more |= more;
        m.found.append(found);
    };
    // Sessions: live, decided and failed ones in the state, and final outcomes the ledger
    // keeps after they left it (the same session may be in several).
    let chain = latest(&pages.chain);
    let st = chain.contract.state();
    let mut sessions = std::collections::BTreeSet::new();
    let mut more = false;
    for ids in [
        st.sessions
            .range(lo..=hi)
            .map(|(k, _)| *k)
            .take(take)
            .collect::<Vec<_>>(),
        st.outcomes
            .range(lo..=hi)
            .map(|(k, _)| *k)
            .take(take)
            .collect(),
        st.failed
            .range(lo..=hi)
            .map(|(k, _)| *k)
            .take(take)
            .collect(),
        pages
            .ledger
            .ids_between(IdIndex::FinalOutcome, &lo, &hi, take)
            .map_err(PageError::internal)?,
    ] {
        more |= ids.len() > MAX_MATCHES;
        sessions.extend(ids);
    }
    more |= sessions.len() > MAX_MATCHES;
    let mut found: Vec<Found> = sessions
        .into_iter()
        .take(MAX_MATCHES)
        .map(Found::Session)
        .collect();
    note(&mut found, more);
    let (alo, ahi) = (AccountId::from(lo.0), AccountId::from(hi.0));
    let accounts: Vec<AccountId> = st
        .accounts
        .range(alo..=ahi)
        .map(|(k, _)| *k)
        .take(take)
        .collect();
    let more = accounts.len() > MAX_MATCHES;
    let mut found: Vec<Found> = accounts
        .into_iter()
        .take(MAX_MATCHES)
        .map(Found::Account)
        .collect();
    note(&mut found, more);
    let blocks = pages
        .ledger
        .ids_between(IdIndex::BlockHash, &lo, &hi, take)
        .map_err(PageError::internal)?;
    let mut found = Vec::new();
    for id in blocks.iter().take(MAX_MATCHES) {
        if let Some(h) = pages.ledger.height_of(id).map_err(PageError::internal)? {
            found.push(Found::Block(*id, h));
        }
    }
    note(&mut found, blocks.len() > MAX_MATCHES);
    let txs = pages
        .ledger
        .ids_between(IdIndex::Tx, &lo, &hi, take)
        .map_err(PageError::internal)?;
    let mut found = Vec::new();
    for id in txs.iter().take(MAX_MATCHES) {
        if let Some((h, _)) = pages.ledger.tx_location(id).map_err(PageError::internal)? {
            found.push(Found::Tx(*id, h));
        }
    }
    note(&mut found, txs.len() > MAX_MATCHES);
    Ok(m)
}
