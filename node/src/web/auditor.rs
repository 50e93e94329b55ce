//! `GET /auditors/{id}`: one auditor's standing and record, with its reputation and
//! cumulative profit over time (the paper's Figure 6 for one real auditor) drawn from the
//! ledger replay in [`super::history`].

use std::fmt::Write as _;

use axum::{
    extract::{Path, State},
    response::IntoResponse,
};
use trust_contracts::{Auditor, Params};
use trust_protocol::{AccountId, tx::Difficulty};

use super::{
    PageError, PageResult, Pages,
    history::{AuditorHistory, Point},
    layout::{self, esc},
    parse_id, stat,
};
use crate::{
    query,
    report::svg::{Chart, Series, line_chart_svg},
    view::latest,
};

/// Blocks the page reads the auditor's sessions from (the newest ones): a page anyone may
/// load costs a bounded read; `auditor history` pages through the rest.
const PAGE_HISTORY_BLOCKS: u64 = 2_000;

/// The auditor page.
pub async fn page(State(pages): State<Pages>, Path(id): Path<String>) -> PageResult {
    let who: AccountId = parse_id("an auditor id", &id)?;
    let chain = latest(&pages.chain);
    let st = chain.contract.state();
    let a = st
        .auditors
        .get(&who)
        .ok_or_else(|| PageError::NotFound(format!("no auditor {who}")))?
        .clone();
    let acct = st.accounts.get(&who).cloned().unwrap_or_default();
    let params = st.params.clone();
    let tip = chain.tip.height;
    drop(chain);

    let (history, ledger) = (pages.history.clone(), pages.ledger.clone());
    let hist = tokio::task::spawn_blocking(move || history.auditor(&ledger, &who))
        .await
        .map_err(PageError::internal)?;
    let (view, ledger) = (latest(&pages.chain), pages.ledger.clone());
    let sessions = tokio::task::spawn_blocking(move || {
        query::auditor_history(&view, &ledger, &who, None, PAGE_HISTORY_BLOCKS)
    })
    .await
    .map_err(PageError::internal)?
    .map_err(PageError::internal)?;

    let mut body = format!(
        "<h1>Auditor</h1>\n<p class=\"mono\"><a href=\"/accounts/{who}\">{who}</a></p>\n<div class=\"grid\">"
    );
    body += &stat("Stake", &acct.stake.to_string());
    body += &stat("Tier", &format!("{:?}", a.tier));
    body += &stat(
        "Reputation",
        &format!("{:.4}", f64::from(a.reputation.0) / 1e6),
    );
    body += &stat(
        "Profit",
        &(i128::from(a.earned) - i128::from(a.slashed)).to_string(),
    );
    body += &stat(
        "Abstention rate",
        &format!("{:.1}%", 100.0 * query::abstention_rate(&a)),
    );
    body += &stat(
        "Status",
        match (a.active, a.flagged, a.exiting) {
            (_, true, _) => "<span class=\"badge fail\">flagged</span>",
            (_, false, true) => "<span class=\"badge\">exiting</span>",
            (true, false, false) if a.paused => "<span class=\"badge\">paused</span>",
            (true, false, false) => "<span class=\"badge pass\">active</span>",
            (false, false, false) => "<span class=\"badge\">inactive</span>",
        },
    );
    body += "</div>\n";
    body += &record(&a, &sessions);
    body += &honeypots(&a, &params);
    body += &sessions_table(&sessions);
    body += &plots(hist.as_ref(), tip);
    Ok(layout::page("Auditor", &body).into_response())
}

/// The auditor's sessions, newest first (`trust-node auditor history` shows all of them).
fn sessions_table(h: &query::AuditorHistory) -> String {
    let mut s = String::from("<h2>Sessions</h2>\n");
    if h.sessions.is_empty() {
        let _ = writeln!(
            s,
            "<p class=\"hint\">No session in blocks {} to {}.</p>",
            h.from, h.to
        );
        return s;
    }
    let _ = writeln!(
        s,
        "<p class=\"hint\">Blocks {} to {}, newest first{}. Votes: valid/invalid/ungrounded/abstain, revealed; counted: among the first k judgements of their round.</p>",
        h.from,
        h.to,
        if h.earlier.is_some() {
            "; `trust-node auditor history` reads the earlier ones"
        } else {
            ""
        }
    );
    s += "<div class=\"scroll\"><table><thead><tr><th>Session</th><th>Blocks</th><th>Status</th><th>Verdict</th><th>Seats</th><th>Votes</th><th>Counted</th><th>Rewards</th><th>Slashed</th><th>Appeals</th></tr></thead><tbody>";
    for x in &h.sessions {
        let slashed = if x.slash_reasons.is_empty() {
            x.slashed.to_string()
        } else {
            format!(
                "{} <span class=\"hint\">({})</span>",
                x.slashed,
                esc(&x.slash_reasons.join("; "))
            )
        };
        let _ = write!(
            s,
            "<tr><td class=\"mono\"><a href=\"/sessions/{id}\">{short}</a></td><td>{}-{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}/{}/{}/{}</td><td>{}</td><td>{}</td><td>{slashed}</td><td>{}</td></tr>",
            x.first_block,
            x.last_block,
            esc(&x.status),
            esc(x.verdict.as_deref().unwrap_or("-")),
            x.seats,
            x.votes.valid,
            x.votes.invalid,
            x.votes.ungrounded,
            x.votes.abstain,
            x.counted,
            x.rewards,
            x.appeals,
            id = x.session,
            short = esc(x.session.to_hex().get(..12).unwrap_or("")),
        );
    }
    s += "</tbody></table></div>\n";
    s
}

/// `n` and its noun, singular for one.
fn count(n: u64, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

/// The revealed votes by kind: `7 (3 Valid, 2 Invalid, 1 Ungrounded, 1 abstention)`.
/// `against` is the Invalid and Ungrounded votes apart, when known; otherwise (the record
/// counts only Valid votes and abstentions) they are given together.
fn votes_words(total: u64, valid: u64, against: Option<(u64, u64)>, abstentions: u64) -> String {
    let against = match against {
        Some((invalid, ungrounded)) => format!("{invalid} Invalid, {ungrounded} Ungrounded"),
        None => format!(
            "{} Invalid or Ungrounded",
            total.saturating_sub(valid).saturating_sub(abstentions)
        ),
    };
    format!(
        "{total} ({valid} Valid, {against}, {})",
        count(abstentions, "abstention", "abstentions")
    )
}

/// The "Votes revealed" line of `a`: its record's counts, with Invalid and Ungrounded apart
/// when the sessions read for the page (`h`) hold every vote the record counts.
fn votes_revealed(a: &Auditor, h: &query::AuditorHistory) -> String {
    let sum = h.sessions.iter().fold([0u64; 4], |mut t, x| {
        let v = &x.votes;
        for (slot, n) in t
            .iter_mut()
            .zip([v.valid, v.invalid, v.ungrounded, v.abstain])
        {
            *slot = slot.saturating_add(u64::from(n));
        }
        t
    });
    let [valid, invalid, ungrounded, abstain] = sum;
    let complete = valid == a.approvals
        && abstain == a.abstentions
        && sum.iter().fold(0u64, |t, n| t.saturating_add(*n)) == a.votes;
    votes_words(
        a.votes,
        a.approvals,
        complete.then_some((invalid, ungrounded)),
        a.abstentions,
    )
}

fn record(a: &Auditor, h: &query::AuditorHistory) -> String {
    let mut s = String::from("<div class=\"card\"><dl class=\"kv\">");
    let _ = write!(
        s,
        "<dt>Expertise</dt><dd>{}</dd><dt>Votes revealed</dt><dd>{}</dd>\
<dt>Agreed with the verdict</dt><dd>{}</dd><dt>Disagreed or missing</dt><dd>{}</dd>\
<dt>Earned</dt><dd>{}</dd><dt>Slashed</dt><dd>{}</dd>",
        if a.expertise.is_empty() {
            "any".to_string()
        } else {
            esc(&a.expertise.join(", "))
        },
        votes_revealed(a, h),
        a.agreed,
        a.disagreed,
        a.earned,
        a.slashed
    );
    s += "</dl></div>\n";
    s
}

fn rate(approved: u32, judged: u32) -> String {
    if judged == 0 {
        "-".into()
    } else {
        format!(
            "{approved} / {judged} ({:.0}%)",
            100.0 * f64::from(approved) / f64::from(judged)
        )
    }
}

/// The honeypot record, per difficulty, and where it stands against the rubber-stamp
/// rule. An auditor serves one tier, so these are its tier's figures.
fn honeypots(a: &Auditor, params: &Params) -> String {
    let h = &a.honeypots;
    let tier = format!("{:?}", a.tier);
    let mut s = format!(
        "<h2>Honeypots</h2>\n<p class=\"hint\">Segments with a known verdict, planted by providers and opened after voting, on every tier. Approving a known error is what a rubber-stamper does. These are the honeypots this {tier}-tier auditor's seats judged; an abstention is neither a catch nor a miss.</p>\n\
<div class=\"scroll\"><table><thead><tr><th>Honeypot</th><th>Voted on</th><th>Abstained</th><th>Approved / judged</th></tr></thead><tbody>"
    );
    let at = |x: &[u32; 3], i: usize| x.get(i).copied().unwrap_or(0);
    for d in Difficulty::ALL {
        let i = d.index();
        let (seen, abstained) = (at(&h.errors_seen, i), at(&h.errors_abstained, i));
        let _ = write!(
            s,
            "<tr><td>Known error, {d:?}</td><td>{seen}</td><td>{abstained}</td><td>{}</td></tr>",
            rate(at(&h.errors_approved, i), seen.saturating_sub(abstained))
        );
    }
    let sum = |x: &[u32; 3]| x.iter().fold(0u32, |t, v| t.saturating_add(*v));
    let (seen, abstained) = (sum(&h.errors_seen), sum(&h.errors_abstained));
    let _ = write!(
        s,
        "<tr><td>Known errors, all</td><td>{seen}</td><td>{abstained}</td><td>{}</td></tr>",
        rate(sum(&h.errors_approved), seen.saturating_sub(abstained))
    );
    let _ = writeln!(
        s,
        "<tr><td>Known correct</td><td>{}</td><td>-</td><td>{}</td></tr></tbody></table></div>",
        h.correct_seen,
        rate(h.correct_approved, h.correct_seen)
    );
    let rule = &params.rubber_stamp;
    let standing = if a.flagged {
        "<span class=\"badge fail\">flagged as a rubber-stamper</span>"
    } else if trust_contracts::econ::is_rubber_stamper(params, h) {
        "<span class=\"badge fail\">meets the rule</span>"
    } else {
        "<span class=\"badge pass\">not flagged</span>"
    };
    let _ = writeln!(
        s,
        "<p>Rubber-stamp rule: flagged at {:.0}% or more of the known errors judged approved, obvious ones included, over at least {} voted on, approved from at least {} providers. This record: {seen} of {} voted on, from {} provider(s): {standing}</p>",
        f64::from(rule.approval.0) / 1e4,
        rule.min_samples,
        rule.min_providers,
        rule.min_samples,
        h.miss_providers.len()
    );
    s
}

/// A step curve through `points`: a value holds until the height of the next change, and
/// the last one until `end` (the last replayed height). Points are recorded only when a
/// value changes, so joining them straight would draw slopes that never happened.
fn steps(points: impl Iterator<Item = (f64, f64)>, end: f64) -> Vec<(f64, f64)> {
    let mut out: Vec<(f64, f64)> = Vec::new();
    for (x, y) in points {
        if let Some(&(_, prev)) = out.last() {
            out.push((x, prev));
        }
        out.push((x, y));
    }
    if let Some(&(x, last)) = out.last()
        && x < end
    {
        out.push((end, last));
    }
    out
}

fn plots(hist: Option<&AuditorHistory>, tip: u64) -> String {
    let mut s = String::from("<h2>Over time</h2>\n");
    let Some(h) = hist else {
        s += "<p class=\"muted\">This node has no genesis to replay the ledger from, so it cannot draw the history.</p>";
        return s;
    };
    if let Some(e) = &h.error {
        let _ = writeln!(s, "<p class=\"muted\">History incomplete: {}</p>", esc(e));
    } else if h.replayed < tip {
        let _ = writeln!(
            s,
            "<p class=\"hint\">History covers blocks up to {} of {tip}: each visit replays at most {} more blocks; reload to extend it.</p>",
            h.replayed, h.per_request
        );
    }
    let series = |label: &str, y: &dyn Fn(&Point) -> f64| {
        vec![Series {
            label: label.into(),
            points: steps(
                h.points.iter().map(|p| (p.height as f64, y(p))),
                h.replayed as f64,
            ),
        }]
    };
    let charts = [
        (
            "Reputation",
            "reputation",
            series("reputation", &|p| f64::from(p.reputation) / 1e6),
        ),
        (
            "Cumulative profit",
            "earned − slashed",
            series("profit", &|p| p.profit() as f64),
        ),
    ];
    for (title, y_label, data) in charts {
        let chart = Chart {
            title: title.into(),
            x_label: "block height".into(),
            y_label: y_label.into(),
            log_y: false,
            y_floor: 0.0,
        };
        match line_chart_svg(&chart, &data) {
            Ok(svg) => {
                let _ = writeln!(
                    s,
                    "<figure class=\"plot card\" aria-label=\"{}\">{svg}</figure>",
                    esc(title)
                );
            }
            Err(e) => {
                let _ = writeln!(
                    s,
                    "<p class=\"muted\">{}: {}</p>",
                    esc(title),
                    esc(&e.to_string())
                );
            }
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::{steps, votes_words};

    #[test]
    fn history_is_drawn_as_steps_that_hold_until_the_next_change() {
        let pts = [(0.0, 0.5), (36.0, 0.7), (41.0, 0.8)];
        assert_eq!(
            steps(pts.into_iter(), 80.0),
            [
                (0.0, 0.5),
                (36.0, 0.5),
                (36.0, 0.7),
                (41.0, 0.7),
                (41.0, 0.8),
                (80.0, 0.8)
            ]
        );
        assert_eq!(steps([(5.0, 1.0)].into_iter(), 5.0), [(5.0, 1.0)]);
        assert!(steps(std::iter::empty(), 3.0).is_empty());
    }

    /// Issue 56, item 8: every kind of vote is listed, and one abstention is one.
    #[test]
    fn votes_revealed_lists_every_kind_with_its_plural() {
        assert_eq!(
            votes_words(7, 3, Some((2, 1)), 1),
            "7 (3 Valid, 2 Invalid, 1 Ungrounded, 1 abstention)"
        );
        assert_eq!(
            votes_words(7, 3, None, 2),
            "7 (3 Valid, 2 Invalid or Ungrounded, 2 abstentions)"
        );
        assert_eq!(
            votes_words(0, 0, Some((0, 0)), 0),
            "0 (0 Valid, 0 Invalid, 0 Ungrounded, 0 abstentions)"
        );
    }
}
