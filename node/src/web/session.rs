//! `GET /sessions/{id}`: a session's outcome, or its progress while it runs.
//!
//! The HDAG's shape comes from the ledger, so every node can draw it: a live session's
//! segments (levels, tiers, weights, `depends_on`) are in the contract state; once it is
//! decided the contract keeps only the outcome, and the shape is read back from the
//! `OpenSession` transaction in the block that opened it. Segment text and the
//! `decomposes_to` edges are never on the ledger: only the node that opened the session
//! (its provider role) shows them, and only to its operator (a request with the operator
//! token as a bearer token, or the cookie of a login opened with it at `/audit/login`;
//! never a token in the URL, which would leak into logs, history and `Referer`). Anyone
//! else, there as on every other node, sees blinded ids and verdicts.
//!
//! The operator sees the model's own steps in trace order and, apart, the honeypots the
//! node planted; once the honeypots are opened on the ledger every visitor sees those
//! segments apart too.

use std::fmt::Write as _;

use axum::{
    extract::{Path, State},
    http::{HeaderMap, HeaderValue, header},
    response::{IntoResponse, Response},
};
use trust_contracts::{
    CastVote, LeftOutOutcome, Outcome, SegmentOutcome, SegmentState, SegmentVerdict, Session,
};
use trust_protocol::{
    Hash,
    hdag::AbstractionLevel,
    tx::{SegmentEntry, SessionManifest, Tier},
};

use super::{
    PageError, PageResult, Pages, account_link, block_link,
    hdag_svg::{self, Edge, EdgeKind, Node, Shade},
    layout::{self, esc},
    network::verdict_badge,
    parse_id, short, stat,
};
use crate::{
    audit::provider::{PageRecord, ProofText, TermsView},
    query::{self, Decided, SessionLookup},
    view::latest,
};

/// Row names of the drawing: the five levels, then segments whose level is unknown here.
pub const ROWS: [&str; 6] = [
    "GOAL",
    "STRATEGY",
    "TACTIC",
    "STEP",
    "OPERATION",
    "left out",
];

/// The row of a level.
pub fn row_of(level: AbstractionLevel) -> usize {
    match level {
        AbstractionLevel::Goal => 0,
        AbstractionLevel::Strategy => 1,
        AbstractionLevel::Tactic => 2,
        AbstractionLevel::Step => 3,
        AbstractionLevel::Operation => 4,
    }
}

/// One segment as the page shows it (session segments first, then left-out ones).
#[derive(Debug, Clone)]
pub struct Segment {
    /// Level, when known (left-out segments carry none on the ledger).
    pub level: Option<AbstractionLevel>,
    /// The tier that audited (or would audit) it.
    pub tier: Tier,
    /// Weight in the trace quorum.
    pub weight: u32,
    /// Indices of the segments it rests on.
    pub depends_on: Vec<u16>,
    /// Part of the final output.
    pub conclusion: bool,
    /// For an OPERATION: the segment whose calculation it checks (it weighs nothing of
    /// its own).
    pub supports: Option<u16>,
    /// The blinded id (session segments only).
    pub blinded: Option<Hash>,
    /// Colour.
    pub shade: Shade,
    /// Votes and detail, in words.
    pub detail: String,
    /// The revealed votes with their reasons, in seat order (none for a left-out
    /// segment).
    pub votes: Vec<CastVote>,
    /// Planted by the provider (a honeypot, or the calculation beside one): not part of
    /// the trace. Known to all once the honeypots are opened; before, to the provider.
    pub planted: bool,
}

fn shade_of(v: SegmentVerdict) -> Shade {
    match v {
        SegmentVerdict::Valid => Shade::Valid,
        SegmentVerdict::Invalid => Shade::Invalid,
        SegmentVerdict::Ungrounded => Shade::Ungrounded,
        SegmentVerdict::Propagated => Shade::Propagated,
        SegmentVerdict::Undecided => Shade::Undecided,
    }
}

fn votes_detail(o: &SegmentOutcome) -> String {
    let v = &o.votes;
    let mut s = format!(
        "votes: {} valid, {} invalid, {} ungrounded, {} abstained, {} missing (k {}, quorum {})",
        v.valid, v.invalid, v.ungrounded, v.abstained, v.missing, o.k, o.q
    );
    if o.escalated {
        s += "; escalated";
    }
    if let Some(h) = o.honeypot {
        let _ = write!(s, "; honeypot, known verdict {h:?}");
    }
    s
}

fn from_entry(
    e: &SegmentEntry,
    tier: Tier,
    shade: Shade,
    detail: String,
    votes: Vec<CastVote>,
) -> Segment {
    Segment {
        votes,
        planted: false,
        level: Some(e.level),
        tier,
        weight: e.weight,
        depends_on: e.depends_on.clone(),
        conclusion: e.conclusion,
        supports: e.supports,
        blinded: Some(e.id),
        shade,
        detail,
    }
}

fn left_out_segments(m: &SessionManifest, verdicts: Option<&[LeftOutOutcome]>) -> Vec<Segment> {
    m.left_out
        .iter()
        .enumerate()
        .map(|(j, l)| {
            let verdict = verdicts.and_then(|v| v.get(j)).map(|o| o.verdict);
            Segment {
                level: None,
                tier: l.tier,
                weight: l.weight,
                depends_on: l.depends_on.clone(),
                conclusion: l.conclusion,
                supports: l.supports,
                blinded: None,
                votes: Vec::new(),
                planted: false,
                // Left out, it is never audited; only an error it rests on, or one in a
                // calculation of its own, reaches it.
                shade: match verdict {
                    Some(
                        v @ (SegmentVerdict::Propagated
                        | SegmentVerdict::Invalid
                        | SegmentVerdict::Ungrounded),
                    ) => shade_of(v),
                    _ => Shade::NotAudited,
                },
                detail: match verdict {
                    Some(v) => format!("left out of the session (no {:?} auditors); {v:?}", l.tier),
                    None => format!("left out of the session (no {:?} auditors)", l.tier),
                },
            }
        })
        .collect()
}

/// The segments of a decided session: the manifest's shape with the outcome's verdicts.
pub fn decided_segments(m: &SessionManifest, o: &Outcome) -> Vec<Segment> {
    let mut out: Vec<Segment> = m
        .segments
        .iter()
        .enumerate()
        .map(|(i, e)| match o.segments.get(i) {
            Some(so) => Segment {
                planted: query::planted(o, i),
                ..from_entry(
                    e,
                    so.tier,
                    shade_of(so.verdict),
                    if query::planted(o, i) && so.honeypot.is_none() {
                        format!(
                            "{}; planted beside a honeypot: not part of the trace",
                            votes_detail(so)
                        )
                    } else {
                        votes_detail(so)
                    },
                    so.votes_cast.clone(),
                )
            },
            None => from_entry(
                e,
                e.tier,
                Shade::NotAudited,
                "no outcome".into(),
                Vec::new(),
            ),
        })
        .collect();
    out.extend(left_out_segments(m, Some(&o.left_out)));
    out
}

fn live_detail(g: &SegmentState) -> String {
    let committed = g.seats.iter().filter(|s| s.commitment.is_some()).count();
    let revealed = g.seats.iter().filter(|s| s.vote.is_some()).count();
    let mut s = format!(
        "seats: {} drawn, {committed} committed, {revealed} revealed (k {})",
        g.seats.len(),
        g.k
    );
    if let Some(r) = g.rounds.last() {
        let _ = write!(s, "; round {} verdict {r:?}", g.rounds.len());
    }
    s
}

/// The segments of a live session: its shape, each not yet decided.
pub fn live_segments(x: &Session) -> Vec<Segment> {
    let mut out: Vec<Segment> = x
        .segments
        .iter()
        .map(|g| {
            from_entry(
                &g.entry,
                g.tier,
                Shade::NotAudited,
                live_detail(g),
                g.votes_cast(),
            )
        })
        .collect();
    out.extend(left_out_segments(&x.manifest, None));
    out
}

/// Nodes and edges of the drawing; `record` (the provider's own) adds the levels of
/// left-out segments, the HDAG names and the `decomposes_to` edges.
pub fn graph(segments: &[Segment], record: Option<&PageRecord>) -> (Vec<Node>, Vec<Edge>) {
    let session_len = segments.iter().filter(|s| s.blinded.is_some()).count();
    let nodes = segments
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let level = s.level.or_else(|| {
                record.and_then(|r| r.left_out_levels.get(i.checked_sub(session_len)?).copied())
            });
            let name = record.and_then(|r| r.nodes.get(i));
            let mut title = format!("Segment {i}");
            if let Some(n) = name {
                let _ = write!(title, " ({n})");
            }
            let _ = write!(
                title,
                " · {} · tier {:?} · weight {} · {}",
                level.map_or("level unknown".into(), |l| format!("{l:?}")),
                s.tier,
                s.weight,
                s.shade.word()
            );
            if s.shade.is_error() {
                let _ = write!(title, " (error: {})", s.shade.word());
            }
            let _ = write!(title, " · {}", s.detail);
            Node {
                label: i.to_string(),
                row: level.map_or(ROWS.len() - 1, row_of),
                shade: s.shade,
                title,
            }
        })
        .collect();
    let mut edges: Vec<Edge> = segments
        .iter()
        .enumerate()
        .flat_map(|(i, s)| {
            s.depends_on.iter().map(move |&d| Edge {
                from: usize::from(d),
                to: i,
                kind: EdgeKind::DependsOn,
            })
        })
        .collect();
    if let Some(r) = record {
        edges.extend(r.decomposes.iter().map(|&(a, b)| Edge {
            from: usize::from(a),
            to: usize::from(b),
            kind: EdgeKind::DecomposesTo,
        }));
    }
    (nodes, edges)
}

/// The failure bound in words: `exp(-x)` as a number, or that there is none.
fn bound_text(neg_ln_milli: u64) -> String {
    crate::report::words::bound_line(neg_ln_milli)
}

/// The session page: the provider's plaintext only to this node's operator.
pub async fn page(
    State(pages): State<Pages>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> PageResult {
    let sid: Hash = parse_id("a session id", &id)?;
    let found = query::session(&latest(&pages.chain), &pages.ledger, &sid)
        .map_err(PageError::internal)?
        .ok_or_else(|| PageError::NotFound(format!("no session {sid} on this network")))?;
    let held = pages.provider.as_ref().and_then(|p| p.page_record(&sid));
    // Opened here, but asked by someone who is not the operator: what every other node
    // shows, and the way to log in.
    let locked = held.is_some() && !pages.operator(&headers);
    let record = held.filter(|_| !locked);
    let title = format!("Session {}", short(&sid));
    let r = match found {
        SessionLookup::Decided(d) => {
            let body = decided_body(&pages, &sid, &d, record.as_ref(), locked)?;
            layout::page(&title, &body).into_response()
        }
        SessionLookup::Live(x) => {
            let params = latest(&pages.chain).contract.state().params.clone();
            let body = live_body(&sid, &x, record.as_ref(), locked, &params);
            // Reloading would clear a token being typed: no refresh while locked.
            let head = if locked {
                ""
            } else {
                "<meta http-equiv=\"refresh\" content=\"2\">\n"
            };
            layout::page_with_head(&title, head, &body).into_response()
        }
        SessionLookup::Failed(f) => {
            let body = format!(
                "<h1>Session</h1>\n<p class=\"mono\">{sid}</p>\n<div class=\"card\"><p><span class=\"badge fail\">Failed</span> at height {}: {}</p><p class=\"muted\">The session could not run; its fee was refunded.</p></div>",
                block_link(f.at),
                esc(&f.reason)
            );
            layout::page(&title, &body).into_response()
        }
    };
    Ok(private(r))
}

/// Headers for a page that may hold the provider's plaintext: kept by no cache, and its
/// address sent to no other site.
fn private(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    r
}

/// What a visitor who is not the operator reads on the page of a session this node
/// opened: the text is the operator's, and where to log in for it.
fn login_hint(sid: &Hash) -> String {
    format!(
        "<p class=\"hint\">This node opened this session: its steps' text is shown to the node's operator only. \
<a href=\"/audit/login?next=/sessions/{sid}\">Log in with the operator token</a> to see it.</p>\n"
    )
}

/// What the provider chose for the session, as a card; `m`: the session's manifest, when
/// this node holds it, for the exposure line `submit --plan` prints
/// ([`query::exposure_words`]).
fn assurance(t: &TermsView, m: Option<&trust_protocol::tx::SessionManifest>) -> String {
    let [c, l, h] = t.seats;
    let [wc, wl, wh] = t.tier_weights;
    let share = |x: f64| format!("{:.0}%", x * 100.0);
    format!(
        "<h2>Assurance</h2>\n<div class=\"card\"><dl class=\"kv\">\
<dt>Seats per segment (k)</dt><dd>{c} Computer, {l} LLM, {h} Human</dd>\
<dt>Racing seats (Δ)</dt><dd>{}</dd><dt>Seat quorum (τ)</dt><dd>{}</dd>\
<dt>Trace quorum (β)</dt><dd>{}</dd><dt>Tier weights</dt><dd>{wc} Computer, {wl} LLM, {wh} Human</dd>\
<dt>Tiers that may judge</dt><dd>{}</dd><dt>Domain</dt><dd>{}</dd>\
<dt>Windows</dt><dd>commit {} blocks, reveal {} blocks</dd>\
<dt>Exposure</dt><dd>{}</dd></dl></div>\n",
        t.racing_seats,
        t.tau,
        t.beta,
        esc(&t.tiers.join(", ")),
        if t.domain.is_empty() {
            "any".to_string()
        } else {
            format!(
                "{} ({})",
                esc(&t.domain),
                if t.domain_required {
                    "required"
                } else {
                    "preferred"
                }
            )
        },
        t.commit_window,
        t.reveal_window,
        esc(&match (m, t.max_exposure >= 1.0) {
            (Some(m), _) => query::exposure_words(&query::exposure(m)),
            // Without the manifest the segments are not known: the terms alone.
            (None, true) => "no budget was set".to_string(),
            (None, false) => format!(
                "a budget of {} of the trace's segments (rounded down) per auditor account",
                share(t.max_exposure)
            ),
        })
    )
}

/// The page's head; `locked`: this node opened the session, but the visitor is not its
/// operator.
fn header(sid: &Hash, provider: &trust_protocol::AccountId, record: bool, locked: bool) -> String {
    format!(
        "<h1>Session</h1>\n<p class=\"mono\">{sid}</p>\n<p>Provider {}{}</p>\n{}",
        account_link(provider),
        if record {
            " · <strong>this node opened it</strong>: segment text is shown below, to you as its operator"
        } else {
            ""
        },
        if locked {
            login_hint(sid)
        } else {
            String::new()
        }
    )
}

fn decided_body(
    pages: &Pages,
    sid: &Hash,
    d: &Decided,
    record: Option<&PageRecord>,
    locked: bool,
) -> Result<String, PageError> {
    let o = &d.outcome;
    let manifest =
        query::opening_manifest(&pages.ledger, sid, o.opened_at).map_err(PageError::internal)?;
    let mut body = header(sid, &o.provider, record.is_some(), locked);
    body += "<div class=\"grid\">";
    body += &stat("Trace verdict", &verdict_badge(o.trace));
    body += &stat(
        "Claims judged",
        &format!("{} of {}", o.coverage.judged, o.coverage.segments),
    );
    body += &stat(
        "Passing weight",
        &format!(
            "{} / {} (β {:.2})",
            o.passing_weight,
            o.total_weight,
            f64::from(o.beta.0) / 1e6
        ),
    );
    body += &stat(
        "Decided in block",
        &match d.height {
            Some(h) => block_link(h),
            None => o.decided_at.to_string(),
        },
    );
    body += "</div>\n";
    // The provider's node names segments by their HDAG ids; others by `#i`.
    let name = |i: usize| {
        record
            .and_then(|r| r.nodes.get(i).cloned())
            .unwrap_or_else(|| format!("#{i}"))
    };
    if let Some(why) = query::explain(o, &name) {
        let _ = writeln!(
            body,
            "<p class=\"why\"><strong>Why {}:</strong> {}</p>",
            format!("{:?}", o.trace).to_lowercase(),
            esc(&why)
        );
    }
    body += "<div class=\"card\"><dl class=\"kv\">";
    let _ = write!(
        body,
        "<dt>Failure bound</dt><dd>{}</dd><dt>Error at the conclusion</dt><dd>{}</dd>\
<dt>Undecided weight</dt><dd>{}</dd><dt>Left out</dt><dd>{} computer, {} LLM, {} human</dd>\
<dt>Opened at</dt><dd>{}</dd><dt>Decided at (UTC)</dt><dd class=\"mono\">{}</dd>\
<dt>Deciding block hash</dt><dd class=\"mono\">{}</dd>\
<dt>Rewards paid</dt><dd>{}</dd>\
<dt>Paid for abstentions the provider caused</dt><dd>{}</dd><dt>Refunded</dt><dd>{}</dd>\
<dt>Finality</dt><dd>{}</dd>",
        esc(&bound_text(o.bound.hoeffding_neg_ln_milli)),
        if o.error_at_conclusion { "yes" } else { "no" },
        o.undecided_weight,
        o.coverage.left_out[0],
        o.coverage.left_out[1],
        o.coverage.left_out[2],
        block_link(o.opened_at),
        d.time_ms.map_or("-".to_string(), crate::chain::format_time),
        d.block_hash.map_or("-".to_string(), |h| h.to_string()),
        o.rewards_paid,
        payload_paid_text(o),
        o.refunded,
        finality_text(Some(o.finality()), sid)
    );
    body += "</dl></div>\n";
    let view = latest(&pages.chain);
    let params = &view.contract.state().params;
    body += &assurance(
        &TermsView::of(&o.quorum, &o.terms, &o.domain, params),
        manifest.as_ref(),
    );
    body += &appeals_section(o);
    match manifest {
        Some(m) => {
            body += &segments_section(&decided_segments(&m, o), record);
        }
        None => {
            body += "<p class=\"muted\">The transaction that opened this session is not in this node's ledger, so its HDAG cannot be drawn.</p>";
        }
    }
    Ok(body)
}

/// What the provider paid seats it starved of keys and seats whose round agreed its
/// payload cannot be judged within the network's limits (`Vote::PayloadAbstain`), each one
/// reward from its escrow: `0`, or `30 (3 seats starved of keys, 0 abstained because the
/// provider's code or proof exceeded the network's limits)`.
fn payload_paid_text(o: &trust_contracts::Outcome) -> String {
    let total = o.starved_paid.saturating_add(o.payload_paid);
    if total == 0 {
        return "0".into();
    }
    format!(
        "{total} ({} seats starved of keys, {} abstained because the provider's code or proof exceeded the network's limits)",
        o.starved_seats, o.payload_seats
    )
}

/// Where a decided session stands with respect to appeals, as HTML: final at a block,
/// appealable until one (with the command that appeals), or an appeal round running.
fn finality_text(f: Option<trust_contracts::Finality>, sid: &Hash) -> String {
    use trust_contracts::Finality;
    match f {
        Some(Finality::Final { at }) => format!("final at block {}", block_link(at)),
        Some(Finality::Appealable { until }) => format!(
            "appealable until block {} (<code>trust-node appeal {sid} --segments …</code>)",
            block_link(until)
        ),
        Some(Finality::Appealing { round }) => {
            format!("an appeal is being judged in round {round}")
        }
        None => "-".to_string(),
    }
}

/// Every appeal round of a decided session, one row per appealed segment.
fn appeals_section(o: &Outcome) -> String {
    let rounds = &o.appeals.rounds;
    if rounds.is_empty() && o.appeals.open.is_none() {
        return String::new();
    }
    let mut s = String::from(
        "<h2>Appeals</h2>\n<div class=\"scroll\"><table><thead><tr><th>Appeal</th><th>Round</th><th>Appellant</th><th>Opened</th><th>Decided</th><th>Segment</th><th>Verdict</th><th>Result</th><th>Slashed</th><th>Appellant refunded</th><th>Seats paid</th><th>Burned</th></tr></thead><tbody>\n",
    );
    for (n, r) in rounds.iter().enumerate() {
        for a in &r.segments {
            let result = match a.result {
                trust_contracts::AppealResult::Overturned => "overturned",
                trust_contracts::AppealResult::Upheld => "upheld",
                trust_contracts::AppealResult::Undecided => "undecided (the verdict stands)",
                trust_contracts::AppealResult::Starved
                    if a.refunded == 0 && r.appellant != o.provider =>
                {
                    "starved: the provider did not key the appeal seats; the appellant's bond forfeit (it repays the provider for the starved seats, the rest burns)"
                }
                trust_contracts::AppealResult::Starved => {
                    "starved: the provider did not key the appeal seats"
                }
            };
            // An overturn's slashes wait for finality and fall only if it stands.
            let slashed = if a.pending.is_some() {
                "due at finality if the overturn stands".to_string()
            } else {
                a.slashed.to_string()
            };
            let _ = writeln!(
                s,
                "<tr><td>{}</td><td>{}</td><td class=\"mono\"><a href=\"/accounts/{}\">{}</a></td><td>{}</td><td>{}</td><td>#{}</td><td>{:?} → {:?}</td><td>{result}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                n.saturating_add(1),
                r.round,
                r.appellant,
                short(&r.appellant),
                block_link(r.opened_at),
                block_link(r.decided_at),
                a.segment,
                a.previous,
                a.verdict,
                slashed,
                a.refunded,
                a.paid,
                a.burned
            );
        }
    }
    if let Some(r) = o.appeals.open {
        let _ = writeln!(
            s,
            "<tr><td>{}</td><td>{r}</td><td colspan=\"10\" class=\"muted\">being judged</td></tr>",
            rounds.len().saturating_add(1)
        );
    }
    s += "</tbody></table></div>\n";
    s
}

fn live_body(
    sid: &Hash,
    x: &Session,
    record: Option<&PageRecord>,
    locked: bool,
    params: &trust_contracts::Params,
) -> String {
    let seats = query::seat_counts(x);
    let mut body = header(sid, &x.provider, record.is_some(), locked);
    body += "<div class=\"grid\">";
    body += &stat("Status", "<span class=\"badge\">Live</span>");
    body += &stat("Phase", &esc(&query::phase_name(&x.phase)));
    body += &stat("Seats drawn", &seats.assigned.to_string());
    body += &stat("Committed", &seats.committed.to_string());
    body += &stat("Revealed", &seats.revealed.to_string());
    body += &stat("Opened at", &block_link(x.opened_at));
    body +=
        "</div>\n<p class=\"hint\">This page reloads every 2 seconds while the session runs.</p>\n";
    let m = &x.manifest;
    body += &assurance(
        &TermsView::of(&m.quorum, &m.terms, &m.domain, params),
        Some(&query::live_manifest(x)),
    );
    body += &segments_section(&live_segments(x), record);
    body
}

/// Which segments the provider planted: opened as such on the ledger, named so in the
/// provider's record, or a calculation beside one of those.
fn planted(segments: &[Segment], record: Option<&PageRecord>) -> Vec<bool> {
    let direct = |j: usize| {
        segments.get(j).is_some_and(|s| s.planted)
            || record
                .and_then(|r| r.nodes.get(j))
                .is_some_and(|n| query::steps::planted_name(n))
    };
    segments
        .iter()
        .enumerate()
        .map(|(i, seg)| direct(i) || seg.supports.is_some_and(|t| direct(usize::from(t))))
        .collect()
}

/// The model's own steps in the order the trace holds them, each with its verdict, where
/// it sits and its text, linked to its row of the segment table (the operator's view).
fn steps_section(segments: &[Segment], r: &PageRecord, planted: &[bool]) -> String {
    let session_len = segments.iter().filter(|s| s.blinded.is_some()).count();
    let tiers: Vec<Tier> = segments.iter().take(session_len).map(|s| s.tier).collect();
    let supports: Vec<Option<u16>> = segments.iter().map(|s| s.supports).collect();
    let is_planted = |i: usize| planted.get(i).copied().unwrap_or(false);
    let split = query::steps::split(r.steps(&tiers, None), &supports, &is_planted);
    let mut s = String::from(
        "<h2>Steps</h2>\n<p class=\"hint\">The model's own steps, in the order the trace holds them (honeypots this node planted are not among them).</p>\n<div class=\"scroll\"><table><thead><tr><th>Step</th><th>Verdict</th><th>Where</th><th>Text</th></tr></thead><tbody>",
    );
    // An agent transcript's steps go under the turn they sit in (a heading row), a tool
    // call as its code and the result the transcript reports.
    let mut turn: Option<&str> = None;
    for x in &split.steps {
        let Some(seg) = segments.get(x.index) else {
            continue;
        };
        if let Some(t) = x.turn.as_deref()
            && turn != Some(t)
        {
            let _ = write!(
                s,
                "<tr class=\"turn\"><th colspan=\"4\">{}</th></tr>",
                esc(t)
            );
            turn = Some(t);
        }
        let place = x
            .span
            .as_ref()
            .map_or("-".to_string(), |sp| format!("{}:{}", sp.part, sp.line));
        let _ = write!(
            s,
            "<tr><td><a class=\"mono\" href=\"#seg-{}\">{}</a></td><td><span class=\"badge {}\">{}</span>{}</td><td class=\"mono\">{}</td><td class=\"wrapok\" style=\"white-space:pre-wrap\">{}</td></tr>",
            x.index,
            esc(&x.name),
            seg.shade.class(),
            seg.shade.word(),
            if x.left_out { " (left out)" } else { "" },
            esc(&place),
            esc(&query::steps::step_lines(x).join("\n"))
        );
    }
    s += "</tbody></table></div>\n";
    s
}

/// One row of the segment table (and its votes under it).
fn segment_row(i: usize, seg: &Segment, node: &Node, record: Option<&PageRecord>) -> String {
    let level = ROWS.get(node.row).copied().unwrap_or("");
    let last = match record.and_then(|r| r.texts.get(i)) {
        // A tool call as its code and reported result, as in the steps above.
        Some(t) => {
            let name = record
                .and_then(|r| r.nodes.get(i))
                .map_or("", String::as_str);
            let rerun = record
                .and_then(|r| r.reruns.get(i))
                .and_then(Option::as_deref);
            format!(
                "<td class=\"wrapok\" style=\"white-space:pre-wrap\">{}</td>",
                esc(&query::steps::shown_lines(name, t, rerun).join("\n"))
            )
        }
        None => format!(
            "<td class=\"mono\">{}</td>",
            seg.blinded.map_or("-".to_string(), |h| short(&h))
        ),
    };
    // On the provider's node, each segment also under the name `submit` and `query`
    // give it (its HDAG id); elsewhere its index alone.
    let named = |j: usize| record.and_then(|r| r.nodes.get(j));
    let shown = named(i).map_or(String::new(), |n| {
        format!(" <span class=\"mono\">{}</span>", esc(n))
    });
    // An OPERATION weighs nothing of its own: its STEP's verdict carries it.
    let (weight, detail) = match seg.supports {
        Some(step) => (
            "–".to_string(),
            match named(usize::from(step)) {
                Some(n) => format!("calculation of {n}; {}", seg.detail),
                None => format!("calculation of #{step}; {}", seg.detail),
            },
        ),
        None => (seg.weight.to_string(), seg.detail.clone()),
    };
    let mut s = format!(
        "<tr id=\"seg-{i}\"><td>{i}{shown}{}</td><td>{level}</td><td>{:?}</td><td>{weight}</td><td><span class=\"badge {}\">{}</span></td><td class=\"wrapok\">{}</td>{last}</tr>",
        if seg.conclusion { " ★" } else { "" },
        seg.tier,
        seg.shade.class(),
        seg.shade.word(),
        esc(&detail)
    );
    if !seg.votes.is_empty() {
        let _ = write!(
            s,
            "<tr class=\"votes\"><td></td><td colspan=\"6\"><ul class=\"votes\">{}</ul></td></tr>",
            votes_list(&seg.votes)
        );
    }
    s
}

fn segments_section(segments: &[Segment], record: Option<&PageRecord>) -> String {
    let (nodes, edges) = graph(segments, record);
    let planted = planted(segments, record);
    let mut s = String::new();
    if let Some(r) = record.filter(|r| !r.problem.is_empty()) {
        let _ = write!(
            s,
            "<h2>Problem statement</h2>\n<p class=\"hint\">The context every seat judged in: a given, not a segment.</p>\n<blockquote class=\"wrapok\">{}</blockquote>\n",
            esc(&r.problem)
        );
    }
    if let Some(p) = record.and_then(|r| r.proof.as_ref()) {
        s += &proof_section(segments, p);
    }
    if let Some(r) = record {
        s += &steps_section(segments, r, &planted);
    }
    s += "<h2>HDAG</h2>\n";
    s += &hdag_svg::legend();
    s += "<div class=\"scroll\">";
    s += &hdag_svg::render(&nodes, &edges, &ROWS);
    s += "</div>\n<p class=\"hint\">Hover or tab to a segment for its tier, votes and verdict.</p>\n";
    let head = format!(
        "<div class=\"scroll\"><table><thead><tr><th>#</th><th>Level</th><th>Tier</th><th>Weight</th><th>Verdict</th><th>Detail</th><th>{}</th></tr></thead><tbody>",
        if record.is_some() {
            "Text"
        } else {
            "Blinded id"
        }
    );
    let (mut own, mut theirs) = (String::new(), String::new());
    for (i, (seg, node)) in segments.iter().zip(&nodes).enumerate() {
        let row = segment_row(i, seg, node, record);
        if planted.get(i).copied().unwrap_or(false) {
            theirs += &row;
        } else {
            own += &row;
        }
    }
    s += "<h2>Segments</h2>\n";
    s += &head;
    s += &own;
    s += "</tbody></table></div>\n<p class=\"hint\">★ part of the final output. Under a segment, each revealed vote with the reason its seat bound into its commitment.</p>\n";
    if !theirs.is_empty() {
        s += "<h2>Honeypots</h2>\n<p class=\"hint\">Planted by the provider among the steps, each with a verdict known in advance, to test the seats: not the model's, not part of the trace, never counted in its verdict.</p>\n";
        s += &head;
        s += &theirs;
        s += "</tbody></table></div>\n";
    }
    s
}

/// A formal proof as the model wrote it, line by line, with the verdict of each step that
/// begins on a line beside it (linked to its row of the segment table), and the structure
/// seat's verdict (scopes, citations, the goal) above.
fn proof_section(segments: &[Segment], p: &ProofText) -> String {
    let badge = |i: usize, seg: &Segment| {
        format!(
            "<a href=\"#seg-{i}\"><span class=\"badge {}\">#{i} {}</span></a>",
            seg.shade.class(),
            seg.shade.word()
        )
    };
    let mut s = String::from(
        "<h2>Proof</h2>\n<p class=\"hint\">The proof as the model wrote it. Each primitive step is one Computer segment; its verdict stands at the line where the step begins.</p>\n",
    );
    let structure: Vec<String> = segments
        .iter()
        .enumerate()
        .filter(|(i, seg)| seg.conclusion && p.lines.get(*i).is_some_and(Option::is_none))
        .map(|(i, seg)| badge(i, seg))
        .collect();
    if !structure.is_empty() {
        let _ = writeln!(
            s,
            "<p>The proof's structure (blocks, scopes, citations, the goal): {}</p>",
            structure.join(" ")
        );
    }
    s += "<div class=\"scroll\"><table class=\"proof\"><thead><tr><th>Line</th><th>Text</th><th>Verdict</th></tr></thead><tbody>";
    for (n, line) in p.text.lines().enumerate() {
        let no = u32::try_from(n.saturating_add(1)).unwrap_or(u32::MAX);
        let marks: Vec<String> = segments
            .iter()
            .enumerate()
            .filter(|(i, _)| p.lines.get(*i).copied().flatten() == Some(no))
            .map(|(i, seg)| badge(i, seg))
            .collect();
        let _ = write!(
            s,
            "<tr id=\"line-{no}\"><td class=\"mono\">{no}</td><td class=\"mono\" style=\"white-space:pre-wrap\">{}</td><td>{}</td></tr>",
            esc(line),
            marks.join(" ")
        );
    }
    s += "</tbody></table></div>\n";
    s
}

/// Each vote as a list item: the seat, the vote, whether it counted, and its reason
/// (escaped: a reason is the seat's own text).
fn votes_list(votes: &[CastVote]) -> String {
    let mut s = String::new();
    for v in votes {
        let _ = write!(
            s,
            "<li>{} <b>{:?}</b>{}{}: <q class=\"wrapok\">{}</q></li>",
            account_link(&v.seat),
            v.vote,
            if v.round > 0 {
                format!(" (round {})", v.round)
            } else {
                String::new()
            },
            if v.counted || v.vote.is_abstain() {
                ""
            } else {
                " (late, not counted)"
            },
            if v.reason.is_empty() {
                "no reason given".to_string()
            } else {
                esc(&v.reason)
            }
        );
    }
    s
}

#[cfg(test)]
mod tests {
    use trust_protocol::trace::blocks::{Semantics, render_tool};

    use super::*;

    fn segment(level: AbstractionLevel) -> Segment {
        Segment {
            level: Some(level),
            tier: Tier::Computer,
            weight: 1,
            depends_on: Vec::new(),
            conclusion: false,
            supports: None,
            blinded: Some(Hash::of_parts("test", &[b"seg"])),
            shade: Shade::Invalid,
            detail: String::new(),
            votes: Vec::new(),
            planted: false,
        }
    }

    /// Issue 54: on the provider's page an agent transcript's steps sit under their turns,
    /// and a tool call reads as its code and reported result, in the steps and in the
    /// segment table alike: never the trace's marker lines.
    #[test]
    fn a_transcripts_steps_sit_under_their_turns_and_a_call_reads_as_code() {
        let call = render_tool(
            "c1",
            "python",
            Some(Semantics::Script),
            "print(6 * 7)",
            "41",
        )
        .expect("renders");
        let thinking = format!("I compute it.\n{call}");
        let start = thinking.find("<<<tool").expect("the call");
        let record = PageRecord {
            nodes: vec!["ST1".into(), "TC1".into()],
            texts: vec!["I compute it.".into(), call.clone()],
            left_out_levels: Vec::new(),
            decomposes: Vec::new(),
            problem: String::new(),
            proof: None,
            opening: None,
            spans: vec![
                Some(crate::audit::provider::steps::TraceSpan {
                    part: "thinking".into(),
                    start: 0,
                    end: 13,
                    line: 1,
                }),
                Some(crate::audit::provider::steps::TraceSpan {
                    part: "thinking".into(),
                    start,
                    end: thinking.len(),
                    line: 2,
                }),
            ],
            left_out_tiers: Vec::new(),
            turns: trust_judging::preview::turns::turns(&thinking),
            reruns: vec![None, Some("42 (CPython 3.11.7, script semantics)".into())],
        };
        let segments = vec![
            segment(AbstractionLevel::Step),
            segment(AbstractionLevel::Step),
        ];
        let steps = steps_section(&segments, &record, &[false, false]);
        let assistant = steps.find(">assistant</th>").expect("the assistant turn");
        let tool = steps
            .find(">tool call c1: python</th>")
            .expect("the call's turn");
        let tc1 = steps.find(">TC1</a>").expect("TC1");
        assert!(assistant < tool && tool < tc1, "{steps}");
        // The result the transcript reports, then what the provider's node got.
        assert!(
            steps.contains("print(6 * 7)\n→ 41\nre-run here: 42 (CPython 3.11.7"),
            "{steps}"
        );
        assert!(!steps.contains("&lt;&lt;&lt;"), "marker lines: {steps}");
        let node = Node {
            label: "1".into(),
            row: 0,
            shade: Shade::Invalid,
            title: String::new(),
        };
        let row = segment_row(1, &segments[1], &node, Some(&record));
        assert!(row.contains("print(6 * 7)\n→ 41\nre-run here: 42"), "{row}");
        assert!(!row.contains("&lt;&lt;&lt;"), "marker lines: {row}");
    }
}
