//! The audit form: where a person judges the segments this node's Human seats hold.
//!
//! | route | page |
//! |---|---|
//! | `GET /audit?since=H` | the login form, or once logged in the queue: each waiting seat with its deadline in blocks and seconds, and the seats judged lately. The queue reloads itself every [`REFRESH_SECS`] seconds (a `<meta http-equiv="refresh">`, no script) with `since` = the height it showed, and marks the seats that arrived after `since` as new |
//! | `GET /audit/login?next=/sessions/{id}` | the login form, which goes on to the session page `next` names once logged in (any other `next`: to `/audit`) |
//! | `POST /audit/login` | `csrf=...&token=<operator token>[&next=/sessions/{id}]`: opens a login session (cookie), then goes to `next` or `/audit`. The same login lets the session pages show the text of the sessions this node opened |
//! | `POST /audit/logout` | `csrf=...`: closes it |
//! | `GET /audit/{session}/{segment}` | a waiting seat's form (the paper's four parts: prompt context, verified dependencies, current reasoning, implications; its four criteria; Valid, Invalid, Ungrounded or Unsure and a note), or, once judged or expired, the seat's progress read from the chain |
//! | `POST /audit/{session}/{segment}` | `csrf=...&vote=valid|invalid|ungrounded|unsure&note=...`: the person's judgement |
//!
//! A person sees only what the seat may see: the segment's own text, the premises sealed
//! or cited with it, and the claims citing it that this node can open; a segment this
//! node holds no seat on is 404. Every page but the login form needs a login
//! ([`super::auth`]); every POST but the login needs the session's CSRF token (403
//! without it); a POST from another site is refused (403). All data is escaped; pages
//! carry no script, and a content security policy that allows none.

use std::{str::FromStr, sync::Arc};

use axum::{
    Form, Router,
    extract::{DefaultBodyLimit, Path, State, rejection::FormRejection},
    http::{HeaderMap, HeaderValue, StatusCode, header},
    response::{IntoResponse, Redirect, Response},
    routing::{get, post},
};
use serde::Deserialize;
use trust_contracts::Phase;
use trust_protocol::{AccountId, Hash, MAX_REASON_BYTES, Vote};

use super::{
    auth::{Auth, Login, LoginCsrf, clear_cookie, same_origin},
    layout::{error_page, esc, page_with_head},
};
use crate::{
    audit::human::{Choice, HumanDesk, MAX_NOTE_CHARS, NO_JUDGEMENT, SeatRecord, SubmitError},
    view::{ChainWatch, latest},
};

/// Largest form body accepted (a note of [`MAX_NOTE_CHARS`] characters, URL-encoded).
const MAX_FORM_BYTES: usize = 16 * 1024;
/// Seats listed under "judged lately".
const HISTORY: usize = 20;
/// How often the queue page reloads itself, in seconds.
pub const REFRESH_SECS: u64 = 10;

/// `GET /audit?since=H`: the height the previous load showed.
#[derive(Debug, Default, Deserialize)]
struct IndexQuery {
    since: Option<u64>,
}

/// What the audit pages need.
#[derive(Debug, Clone)]
pub struct AuditWeb {
    /// The operator token and login sessions.
    pub auth: Arc<Auth>,
    /// The Human seats' queue (`None`: this node has no Human seats).
    pub desk: Option<HumanDesk>,
    /// The chain, as the consensus driver last published it.
    pub chain: ChainWatch,
    /// This node's account.
    pub me: AccountId,
}

/// The audit form's routes.
pub fn router(state: AuditWeb) -> Router {
    Router::new()
        .route("/audit", get(index))
        .route("/audit/login", get(login_form).post(login))
        .route("/audit/logout", post(logout))
        .route("/audit/{session}/{segment}", get(segment).post(judge))
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
        .layer(axum::middleware::map_response(protect))
        .with_state(state)
}

/// Headers on every audit page: no script at all, no framing, no caching (forms carry the
/// CSRF token), no referrer to other sites (`same-origin`: with `no-referrer` a browser
/// sends `Origin: null` on its own forms, which [`same_origin`] refuses).
async fn protect(mut r: Response) -> Response {
    let h = r.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("same-origin"),
    );
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// Style of the audit pages, beside the shared layout's.
const HEAD: &str = "<style>\
.part h2{margin-top:0}.quote{white-space:pre-wrap;border-left:4px solid var(--line);margin:8px 0;padding:4px 12px;background:#fafbfc}\
.claim{white-space:pre-wrap;border-left:4px solid var(--accent);margin:8px 0;padding:8px 12px;background:#f0f5ff;font-size:1.05rem}\
fieldset{border:1px solid var(--line);border-radius:8px;padding:8px 14px;margin:0 0 12px}\
fieldset label{display:block;padding:4px 0}textarea,input[type=password]{width:100%;max-width:40em;font:inherit;padding:6px 8px;border:1px solid var(--line);border-radius:6px}\
button{font:inherit;font-weight:600;padding:7px 18px;border-radius:6px;border:1px solid #174a96;background:var(--accent);color:#fff;cursor:pointer}\
button.plain{background:#fff;color:var(--accent)}.err{color:var(--invalid);font-weight:600}.ok{color:var(--valid);font-weight:600}\
ol.criteria li{margin:4px 0}form.inline{display:inline}\
</style>\n";

fn html(status: StatusCode, title: &str, body: &str) -> Response {
    (status, page_with_head(title, HEAD, body)).into_response()
}

/// The login form, with `why` (already escaped HTML) above it.
fn login_page(status: StatusCode, why: &str) -> Response {
    login_page_to(status, why, "/audit")
}

/// Where a login may go on to: a session page, or else the queue. Nothing else, so that a
/// link to the login form cannot send a person off to another site.
fn next_page(next: &str) -> String {
    next.strip_prefix("/sessions/")
        .filter(|id| id.len() == 64 && id.bytes().all(|b| b.is_ascii_hexdigit()))
        .map_or_else(|| "/audit".to_string(), |id| format!("/sessions/{id}"))
}

/// The login form, going on to `next` (see [`next_page`]) once logged in.
fn login_page_to(status: StatusCode, why: &str, next: &str) -> Response {
    let next = next_page(next);
    let csrf = LoginCsrf::new();
    let (title, lead) = if next == "/audit" {
        (
            "Audit as a person",
            "This node's Human seats wait here for your judgement.",
        )
    } else {
        (
            "Log in as this node's operator",
            "The text of the sessions this node opened is shown to its operator only.",
        )
    };
    let body = format!(
        "<h1>{title}</h1>\n{why}\
<p class=\"lead\">{lead} Log in with the node's operator token \
(the file <code>operator.token</code> in its home).</p>\n\
<form class=\"card\" method=\"post\" action=\"/audit/login\">\n\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n\
<input type=\"hidden\" name=\"next\" value=\"{}\">\n\
<p><label for=\"token\">Operator token</label></p>\n\
<p><input id=\"token\" name=\"token\" type=\"password\" autocomplete=\"current-password\" required maxlength=\"200\"></p>\n\
<p><button type=\"submit\">Log in</button></p>\n</form>",
        esc(csrf.value()),
        esc(&next)
    );
    let mut r = html(status, "Audit: log in", &body);
    if let Ok(v) = HeaderValue::from_str(&csrf.set_cookie()) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

fn need_login() -> Response {
    login_page(
        StatusCode::UNAUTHORIZED,
        "<p class=\"err\">Log in first: this page is for the node's operator.</p>\n",
    )
}

fn forbidden(why: &str) -> Response {
    error_page(StatusCode::FORBIDDEN, why)
}

fn short(h: &Hash) -> String {
    let hex = h.to_hex();
    format!(
        "<span class=\"mono\" title=\"{}\">{}…</span>",
        esc(&hex),
        esc(&hex[..12])
    )
}

fn snippet(s: &str, n: usize) -> String {
    let one: String = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one.chars().count() <= n {
        esc(&one)
    } else {
        format!("{}…", esc(&one.chars().take(n).collect::<String>()))
    }
}

fn seat_url(r: &SeatRecord) -> String {
    format!("/audit/{}/{}", r.key.session.to_hex(), r.key.segment)
}

/// "in 12 blocks (about 6 s)", from `height`.
fn deadline_text(desk: &HumanDesk, deadline: u64, height: u64) -> String {
    let left = deadline.saturating_sub(height);
    let secs = (desk.settings().block_time.as_secs_f64() * left as f64).round();
    format!("in {left} blocks (about {secs:.0} s)")
}

fn logout_form(login: &Login) -> String {
    format!(
        "<form class=\"inline\" method=\"post\" action=\"/audit/logout\">\
<input type=\"hidden\" name=\"csrf\" value=\"{}\"><button class=\"plain\" type=\"submit\">Log out</button></form>",
        esc(&login.csrf)
    )
}

const NO_DESK: &str = "<div class=\"card\"><p>This node has no Human seats. Start it with \
<code>trust-node run --human</code> (or <code>human = true</code> under <code>[auditor]</code> in its config.toml) and \
register it with <code>trust-node auditor register --tier human</code>.</p></div>";

/// The queue page's head: its style, and the reload that carries the height shown.
fn queue_head(height: u64) -> String {
    format!(
        "<meta http-equiv=\"refresh\" content=\"{REFRESH_SECS}; url=/audit?since={height}\">\n{HEAD}"
    )
}

/// "2 new seats since #410" (empty when none is new).
fn new_seats_line(new: usize, since: u64) -> String {
    match new {
        0 => String::new(),
        1 => format!("<p class=\"ok\">1 new seat since #{since}</p>\n"),
        n => format!("<p class=\"ok\">{n} new seats since #{since}</p>\n"),
    }
}

async fn index(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    axum::extract::Query(query): axum::extract::Query<IndexQuery>,
) -> Response {
    let Some(login) = web.auth.session(&headers) else {
        return login_page(StatusCode::OK, "");
    };
    let since = query.since;
    let height = latest(&web.chain).tip.height;
    let queue_page = |body: &str| {
        (
            StatusCode::OK,
            page_with_head("Audit queue", &queue_head(height), body),
        )
            .into_response()
    };
    let mut body = format!(
        "<h1>Audit queue</h1>\n<p class=\"lead\">Node <span class=\"mono\">{}</span> · height {height}</p>\n{}\n",
        esc(&web.me.to_string()),
        logout_form(&login)
    );
    let Some(desk) = &web.desk else {
        body.push_str(NO_DESK);
        return html(StatusCode::OK, "Audit queue", &body);
    };
    let queue = desk.queue();
    let is_new = |r: &SeatRecord| since.is_some_and(|h| r.queued_at > h);
    body.push_str(&format!("<h2>Waiting for you ({})</h2>\n", queue.len()));
    if let Some(h) = since {
        body.push_str(&new_seats_line(
            queue.iter().filter(|r| is_new(r)).count(),
            h,
        ));
    }
    if queue.is_empty() {
        body.push_str(
            "<p class=\"muted\">No seat waits for a judgement. Seats appear here when this node is drawn \
for a Human-tier segment and its keys arrive; this page reloads itself.</p>\n",
        );
    } else {
        body.push_str(
            "<div class=\"scroll\"><table>\n<tr><th>Session</th><th>Segment</th><th>Round</th>\
<th>Current reasoning</th><th>Deadline</th><th></th></tr>\n",
        );
        for r in &queue {
            body.push_str(&format!(
                "<tr><td>{}{}</td><td>{}</td><td>{}</td><td class=\"wrapok\">{}</td><td>{} · height {}</td>\
<td><a href=\"{}\">Judge</a></td></tr>\n",
                if is_new(r) { "<strong class=\"ok\">new</strong> " } else { "" },
                short(&r.key.session),
                r.key.segment,
                r.key.round,
                snippet(&r.claim, 90),
                deadline_text(desk, r.deadline, height),
                r.deadline,
                esc(&seat_url(r)),
            ));
        }
        body.push_str("</table></div>\n");
    }
    let done = desk.history(HISTORY);
    if !done.is_empty() {
        body.push_str("<h2>Judged lately</h2>\n<div class=\"scroll\"><table>\n<tr><th>Session</th><th>Segment</th><th>Your judgement</th><th>Segment verdict</th><th></th></tr>\n");
        for r in &done {
            body.push_str(&format!(
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td><a href=\"{}\">Progress</a></td></tr>\n",
                short(&r.key.session),
                r.key.segment,
                judgement_text(r),
                r.verdict.as_deref().map_or_else(|| "pending".to_string(), esc),
                esc(&seat_url(r)),
            ));
        }
        body.push_str("</table></div>\n");
    }
    queue_page(&body)
}

fn judgement_text(r: &SeatRecord) -> String {
    match (&r.judgement, r.expired) {
        (Some(j), _) => esc(vote_name(j.vote)),
        (None, true) => "none (abstained at the deadline)".into(),
        (None, false) => "waiting".into(),
    }
}

fn vote_name(v: Vote) -> &'static str {
    match v {
        Vote::Valid => "Valid",
        Vote::Invalid => "Invalid",
        Vote::Ungrounded => "Ungrounded",
        Vote::Abstain => "Unsure (abstain)",
        Vote::PayloadAbstain => "Abstain: the provider's payload exceeds the limits",
    }
}

#[derive(Deserialize)]
struct LoginForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    token: String,
    /// Where to go once logged in (see [`next_page`]).
    #[serde(default)]
    next: String,
}

/// `GET /audit/login?next=`: where the session page sends its operator to log in.
#[derive(Debug, Default, Deserialize)]
struct LoginQuery {
    #[serde(default)]
    next: String,
}

/// `GET /audit/login`: the login form (the queue once logged in).
async fn login_form(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    axum::extract::Query(q): axum::extract::Query<LoginQuery>,
) -> Response {
    if web.auth.session(&headers).is_some() {
        return Redirect::to(&next_page(&q.next)).into_response();
    }
    login_page_to(StatusCode::OK, "", &q.next)
}

async fn login(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Response {
    if !same_origin(&headers) {
        return forbidden("A login from another site is refused.");
    }
    let Ok(Form(form)) = form else {
        return login_page(
            StatusCode::BAD_REQUEST,
            "<p class=\"err\">Send the form with a token field.</p>\n",
        );
    };
    if !LoginCsrf::check(&headers, &form.csrf) {
        return forbidden(
            "This login form's CSRF token is missing or does not match its cookie: open /audit and log in from there.",
        );
    }
    match web.auth.login(&form.token) {
        Some(l) => {
            tracing::info!(target: "trust::web", "operator logged in to the audit form");
            let mut r = Redirect::to(&next_page(&form.next)).into_response();
            if let Ok(v) = HeaderValue::from_str(&l.set_cookie()) {
                r.headers_mut().insert(header::SET_COOKIE, v);
            }
            r
        }
        None => {
            tracing::warn!(target: "trust::web", "audit form login refused: wrong operator token");
            login_page_to(
                StatusCode::UNAUTHORIZED,
                "<p class=\"err\">That is not this node's operator token.</p>\n",
                &form.next,
            )
        }
    }
}

#[derive(Deserialize)]
struct CsrfForm {
    #[serde(default)]
    csrf: String,
}

/// A page refusing a request (boxed: a response is large beside what succeeds).
type Refused = Box<Response>;

/// The login session of a POST, its CSRF token checked: or the response refusing it.
fn posted(web: &AuditWeb, headers: &HeaderMap, csrf: Option<&str>) -> Result<Login, Refused> {
    if !same_origin(headers) {
        return Err(Box::new(forbidden(
            "A form posted from another site is refused.",
        )));
    }
    let login = web
        .auth
        .session(headers)
        .ok_or_else(|| Box::new(need_login()))?;
    if !csrf.is_some_and(|c| login.csrf_ok(c)) {
        return Err(Box::new(forbidden(
            "This form's CSRF token is missing or not this login's: reload the page and send it again.",
        )));
    }
    Ok(login)
}

async fn logout(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    form: Result<Form<CsrfForm>, FormRejection>,
) -> Response {
    let csrf = form.ok().map(|Form(f)| f.csrf);
    let login = match posted(&web, &headers, csrf.as_deref()) {
        Ok(l) => l,
        Err(r) => return *r,
    };
    web.auth.logout(&login);
    let mut r = Redirect::to("/audit").into_response();
    if let Ok(v) = HeaderValue::from_str(&clear_cookie()) {
        r.headers_mut().insert(header::SET_COOKIE, v);
    }
    r
}

/// The session id and segment index in a path, or a 400 page.
fn parse_seat(session: &str, segment: &str) -> Result<(Hash, u16), Refused> {
    let s = Hash::from_str(session).map_err(|_| {
        Box::new(error_page(
            StatusCode::BAD_REQUEST,
            "A session id is 64 hex characters.",
        ))
    })?;
    let g = segment.parse::<u16>().map_err(|_| {
        Box::new(error_page(
            StatusCode::BAD_REQUEST,
            "A segment is its index in the session (0, 1, 2, ...).",
        ))
    })?;
    Ok((s, g))
}

/// This node's seat on the segment, or the page saying why there is none.
fn find_seat(
    web: &AuditWeb,
    session: &Hash,
    segment: u16,
) -> Result<(HumanDesk, SeatRecord), Refused> {
    let no_seat = || {
        Box::new(error_page(
            StatusCode::NOT_FOUND,
            &format!(
                "This node holds no Human seat on segment {segment} of session {session}: a person sees only the segments its seats hold."
            ),
        ))
    };
    let desk = web.desk.clone().ok_or_else(no_seat)?;
    let record = desk.seat(session, segment).ok_or_else(no_seat)?;
    Ok((desk, record))
}

async fn segment(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    Path((session, segment)): Path<(String, String)>,
) -> Response {
    let Some(login) = web.auth.session(&headers) else {
        return need_login();
    };
    let (session, segment) = match parse_seat(&session, &segment) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let (desk, record) = match find_seat(&web, &session, segment) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    if desk.is_waiting(&record.key) {
        form_page(&web, &desk, &record, &login, None)
    } else {
        progress_page(&web, &record, None)
    }
}

fn quotes(items: &[String], none: &str) -> String {
    if items.is_empty() {
        return format!("<p class=\"muted\">{}</p>", esc(none));
    }
    items
        .iter()
        .map(|t| format!("<div class=\"quote\">{}</div>", esc(t)))
        .collect()
}

/// The calculations inside the claim, as the Computer tier checked them: verified
/// premises, so that the person judges only whether the claim follows.
fn checked(items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let rows: String = items
        .iter()
        .map(|t| format!("<li>{}</li>", esc(t)))
        .collect();
    format!(
        "<div class=\"checked\" id=\"checked\"><p class=\"hint\">Its calculations, checked by the Computer tier. Judge whether the claim follows from the problem and the dependencies; the arithmetic is settled.</p><ul>{rows}</ul></div>"
    )
}

/// The paper's four parts of a segment, as the seat sees it.
fn four_parts(r: &SeatRecord) -> String {
    format!(
        "<section class=\"card part\" id=\"context\"><h2>Prompt context</h2>\
<p class=\"hint\">The problem statement and setup the step rests on, as the provider sealed them with it.</p>{}</section>\n\
<section class=\"card part\" id=\"dependencies\"><h2>Verified dependencies</h2>\
<p class=\"hint\">The steps it builds on, audited in the same session.</p>{}</section>\n\
<section class=\"card part\" id=\"reasoning\"><h2>Current reasoning</h2>\
<p class=\"hint\">The step you judge.</p><div class=\"claim\">{}</div>{}</section>\n\
<section class=\"card part\" id=\"implications\"><h2>Implications</h2>\
<p class=\"hint\">Later steps that use this one, as far as this seat may see them.</p>{}</section>\n",
        quotes(&r.givens, "Nothing was sealed with this segment."),
        quotes(&r.premises, "It cites no other audited step."),
        esc(&r.claim),
        checked(&r.checked),
        quotes(
            &r.implications,
            "No later step citing this one is visible to this seat."
        ),
    )
}

const CRITERIA: [(&str, &str); 4] = [
    (
        "Logical consistency",
        "Does the reasoning step follow logically from its dependencies?",
    ),
    (
        "Mathematical accuracy",
        "Are calculations and quantitative reasoning correct?",
    ),
    (
        "Completeness",
        "Does the reasoning address all relevant aspects of the problem?",
    ),
    (
        "Clarity",
        "Is the reasoning step clearly articulated and understandable?",
    ),
];

fn choice_help(c: Choice) -> &'static str {
    match c {
        Choice::Valid => "the step holds, given its context and dependencies",
        Choice::Invalid => {
            "the step is wrong: a false calculation or a conclusion that does not follow"
        }
        Choice::Ungrounded => "the step uses something never established in what it rests on",
        Choice::Unsure => {
            "you cannot tell: the seat abstains (present, unrewarded); the segment stays undecided unless other seats decide it"
        }
    }
}

fn seat_title(r: &SeatRecord) -> String {
    format!(
        "Segment {} of session {}…",
        r.key.segment,
        &r.key.session.to_hex()[..12]
    )
}

fn form_page(
    web: &AuditWeb,
    desk: &HumanDesk,
    r: &SeatRecord,
    login: &Login,
    error: Option<&str>,
) -> Response {
    let height = latest(&web.chain).tip.height.max(desk.height());
    let mut body = format!(
        "<p><a href=\"/audit\">← Queue</a></p>\n<h1>Segment {} of session {}</h1>\n\
<p class=\"lead\">Round {} · your judgement is due {} (at height {}; the commit window closes at height {}). \
If you do not answer by then, the seat abstains.</p>\n",
        r.key.segment,
        short(&r.key.session),
        r.key.round,
        deadline_text(desk, r.deadline, height),
        r.deadline,
        r.commit_until,
    );
    if let Some(e) = error {
        body.push_str(&format!("<p class=\"err\">{}</p>\n", esc(e)));
    }
    body.push_str(&four_parts(r));
    body.push_str(
        "<section class=\"card part\" id=\"criteria\"><h2>Criteria</h2><ol class=\"criteria\">",
    );
    for (name, q) in CRITERIA {
        body.push_str(&format!("<li><b>{}</b>: {}</li>", esc(name), esc(q)));
    }
    body.push_str("</ol></section>\n");
    body.push_str(&format!(
        "<form class=\"card\" id=\"judgement\" method=\"post\" action=\"{}\">\n\
<input type=\"hidden\" name=\"csrf\" value=\"{}\">\n<fieldset><legend>Your judgement</legend>\n",
        esc(&seat_url(r)),
        esc(&login.csrf)
    ));
    for c in Choice::ALL {
        body.push_str(&format!(
            "<label><input type=\"radio\" name=\"vote\" value=\"{}\" required> <b>{}</b>: {}</label>\n",
            c.value(),
            c.label(),
            esc(choice_help(c))
        ));
    }
    body.push_str(&format!(
        "</fieldset>\n<p><label for=\"note\">Note (optional): the reason revealed with your vote on the ledger, its first {MAX_REASON_BYTES} bytes; the whole note is kept on this node</label></p>\n\
<p><textarea id=\"note\" name=\"note\" rows=\"4\" maxlength=\"{MAX_NOTE_CHARS}\"></textarea></p>\n\
<p><button type=\"submit\">Submit judgement</button></p>\n</form>"
    ));
    html(StatusCode::OK, &seat_title(r), &body)
}

/// What the chain says of the seat's segment: (your seat, the segment) as HTML rows.
fn chain_rows(web: &AuditWeb, r: &SeatRecord) -> String {
    let chain = latest(&web.chain);
    let st = chain.contract.state();
    let s = &r.key.session;
    let g = usize::from(r.key.segment);
    let mut rows = String::new();
    let mut row = |k: &str, v: String| {
        rows.push_str(&format!("<dt>{}</dt><dd>{v}</dd>", esc(k)));
    };
    if let Some(live) = st.sessions.get(s) {
        let seg = live.segments.get(g);
        let mine = seg.and_then(|x| {
            x.seats
                .iter()
                .filter(|x| x.account == web.me)
                .max_by_key(|x| x.round)
        });
        row(
            "Committed",
            match mine {
                Some(x) if x.commitment.is_some() => "<span class=\"ok\">yes</span>".into(),
                _ if r.committed => "<span class=\"ok\">yes</span>".into(),
                _ => "not yet".into(),
            },
        );
        row(
            "Revealed",
            match mine.and_then(|x| x.vote.map(|v| (v, x.counted))) {
                Some((v, counted)) => {
                    revealed_cell(v, counted, "not counted: after the first k reveals")
                }
                None => "not yet (after the commit window closes)".into(),
            },
        );
        let phase = match live.phase {
            Phase::Assigning => "drawing seats".to_string(),
            Phase::Commit { round, until } => {
                format!("round {round}: commitments until height {until}")
            }
            Phase::Reveal { round, until } => {
                format!("round {round}: reveals until height {until}")
            }
            Phase::Disclose { until } => format!("the provider discloses until height {until}"),
        };
        let rounds = seg
            .map(|x| {
                x.rounds
                    .iter()
                    .enumerate()
                    .map(|(i, v)| format!("round {i}: {v:?}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            })
            .filter(|t| !t.is_empty());
        row(
            "Segment verdict",
            format!(
                "not decided yet: {}{}",
                esc(&phase),
                rounds.map_or_else(String::new, |t| format!(" · {}", esc(&t)))
            ),
        );
    } else if let Some(o) = st.outcomes.get(s) {
        row("Committed", yes_no(r.committed || r.revealed.is_some()));
        row(
            "Revealed",
            match r.revealed {
                Some((v, counted)) => revealed_cell(v, counted, "not counted"),
                None => "no".into(),
            },
        );
        match o.segments.get(g) {
            Some(seg) => {
                let v = format!("{:?}", seg.verdict);
                row(
                    "Segment verdict",
                    format!(
                        "<span class=\"badge v-{}\" id=\"verdict\">{}</span> · votes: {} valid, {} invalid, {} ungrounded, {} abstained, {} missing · {:?} tier{}",
                        esc(&v.to_ascii_lowercase()),
                        esc(&v),
                        seg.votes.valid,
                        seg.votes.invalid,
                        seg.votes.ungrounded,
                        seg.votes.abstained,
                        seg.votes.missing,
                        seg.tier,
                        if seg.escalated { ", escalated" } else { "" }
                    ),
                );
            }
            None => row("Segment verdict", "not in the outcome".into()),
        }
        row("Trace verdict", esc(&format!("{:?}", o.trace)));
    } else if let Some(f) = st.failed.get(s) {
        row(
            "Session",
            format!("failed at height {}: {}", f.at, esc(&f.reason)),
        );
    } else {
        row(
            "Session",
            "not on this node's chain (yet, or no more)".into(),
        );
    }
    row("Reward", format!("{}", r.reward));
    row("Slashed in this session", format!("{}", r.slashed));
    rows
}

fn yes_no(b: bool) -> String {
    if b {
        "<span class=\"ok\">yes</span>".into()
    } else {
        "no".into()
    }
}

fn progress_page(web: &AuditWeb, r: &SeatRecord, notice: Option<&str>) -> Response {
    let mut body = format!(
        "<p><a href=\"/audit\">← Queue</a></p>\n<h1>Segment {} of session {}</h1>\n",
        r.key.segment,
        short(&r.key.session)
    );
    if let Some(n) = notice {
        body.push_str(&format!("<p class=\"err\">{}</p>\n", esc(n)));
    }
    let judged = match (&r.judgement, r.expired) {
        (Some(j), _) => format!(
            "<span class=\"ok\" id=\"judged\">{}</span> at height {}{}",
            esc(vote_name(j.vote)),
            r.judged_at.unwrap_or(0),
            if j.note.is_empty() {
                String::new()
            } else {
                format!(" · note: “{}”", esc(&j.note))
            }
        ),
        (None, true) => format!(
            "<span class=\"err\" id=\"judged\">expired</span>: nobody judged it by height {}, so the seat abstained ({})",
            r.deadline,
            esc(NO_JUDGEMENT)
        ),
        (None, false) => "not yet".into(),
    };
    body.push_str(&format!(
        "<section class=\"card part\" id=\"progress\"><h2>Progress</h2><dl class=\"kv\"><dt>Round</dt><dd>{}</dd><dt>Judged</dt><dd>{judged}</dd>{}</dl>\
<p class=\"hint\">Read from this node's chain; reload to follow it.</p></section>\n",
        r.key.round,
        chain_rows(web, r)
    ));
    body.push_str(&four_parts(r));
    html(StatusCode::OK, &seat_title(r), &body)
}

#[derive(Deserialize)]
struct VoteForm {
    #[serde(default)]
    csrf: String,
    #[serde(default)]
    vote: String,
    #[serde(default)]
    note: String,
}

async fn judge(
    State(web): State<AuditWeb>,
    headers: HeaderMap,
    Path((session, segment)): Path<(String, String)>,
    form: Result<Form<VoteForm>, FormRejection>,
) -> Response {
    let form = form.ok().map(|Form(f)| f);
    let login = match posted(&web, &headers, form.as_ref().map(|f| f.csrf.as_str())) {
        Ok(l) => l,
        Err(r) => return *r,
    };
    let Some(form) = form else {
        return error_page(StatusCode::BAD_REQUEST, "The form did not parse.");
    };
    let (session, segment) = match parse_seat(&session, &segment) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let (desk, record) = match find_seat(&web, &session, segment) {
        Ok(x) => x,
        Err(r) => return *r,
    };
    let choice = match form.vote.parse::<Choice>() {
        Ok(c) => c,
        Err(_) if desk.is_waiting(&record.key) => {
            let mut r = form_page(
                &web,
                &desk,
                &record,
                &login,
                Some("Choose Valid, Invalid, Ungrounded or Unsure."),
            );
            *r.status_mut() = StatusCode::BAD_REQUEST;
            return r;
        }
        Err(e) => return error_page(StatusCode::BAD_REQUEST, &e),
    };
    match desk.submit(&session, segment, choice, &form.note) {
        Ok(_) => Redirect::to(&format!("/audit/{}/{segment}", session.to_hex())).into_response(),
        Err(e) => {
            let status = match e {
                SubmitError::NoSeat => StatusCode::NOT_FOUND,
                SubmitError::AlreadyJudged => StatusCode::CONFLICT,
                SubmitError::Expired => StatusCode::GONE,
                SubmitError::NoteTooLong => StatusCode::BAD_REQUEST,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let record = desk.seat(&session, segment).unwrap_or(record);
            let mut r = if desk.is_waiting(&record.key) {
                form_page(&web, &desk, &record, &login, Some(&e.to_string()))
            } else {
                progress_page(&web, &record, Some(&e.to_string()))
            };
            *r.status_mut() = status;
            r
        }
    }
}

/// A revealed vote as the progress table shows it: the vote, and whether it counted
/// (`not_counted` says why not).
fn revealed_cell(v: Vote, counted: bool, not_counted: &str) -> String {
    let how = if counted { "counted" } else { not_counted };
    format!(
        "<span class=\"ok\">{}</span> ({})",
        esc(vote_name(v)),
        esc(how)
    )
}

#[cfg(test)]
mod tests;
