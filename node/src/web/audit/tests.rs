//! The audit form's access control and escaping, through the real router (tower
//! `oneshot`), a real sled-backed queue and a seat waiting in it as the seat pipeline
//! leaves one.

use axum::{
    body::{Body, to_bytes},
    http::Request,
};
use tower::ServiceExt;
use trust_contracts::{Contract, Genesis, Params};

use super::*;
use trust_judging::judge::{Auditor, Decision, SeatRef, SegmentView};

use crate::{
    audit::human::DeskSettings,
    chain::Tip,
    keys::OperatorToken,
    view::{ChainPublisher, ChainView},
};

const SCRIPT: &str = "<script>alert('x')</script> So 4 + 4 = 8";

struct Form {
    router: Router,
    token: OperatorToken,
    desk: HumanDesk,
    session: Hash,
    /// Keeps the chain view's sender alive.
    _chain: ChainPublisher,
    _dir: tempfile::TempDir,
}

fn form() -> Form {
    let dir = tempfile::tempdir().unwrap();
    let token = crate::keys::operator_token(&dir.path().join("operator.token"))
        .unwrap()
        .0;
    let db = sled::open(dir.path().join("db")).unwrap();
    let me = trust_protocol::Keypair::from_label("person").public();
    let desk = HumanDesk::open(&db, me, DeskSettings::default()).unwrap();
    let contract = Contract::new(&Genesis {
        params: Params::default(),
        accounts: vec![],
        auditors: vec![],
    })
    .unwrap();
    let tip = Tip {
        chain: Hash::ZERO,
        height: 5,
        hash: Hash::ZERO,
        time_ms: 5_000,
        seed: Hash::ZERO,
    };
    let (chain, watch) = ChainPublisher::new(ChainView::new(tip, contract, vec![]));
    let router = router(AuditWeb {
        auth: Arc::new(Auth::new(&token)),
        desk: Some(desk.clone()),
        chain: watch,
        me,
    });
    Form {
        router,
        token,
        desk,
        session: Hash::sha256(b"a session"),
        _chain: chain,
        _dir: dir,
    }
}

impl Form {
    /// A seat on segment 1 waits for a person, as the pipeline leaves it; the task ends
    /// with the seat's decision.
    async fn seat_waits(&self) -> tokio::task::JoinHandle<Decision> {
        let desk = self.desk.clone();
        let seat = SeatRef {
            session: self.session,
            segment: 1,
            round: 0,
            segment_id: Hash::sha256(b"segment 1"),
            commit_until: 100,
            implications: vec!["Then <b>she</b> buys 4 packages.".into()],
        };
        let task = tokio::spawn(async move {
            let view = SegmentView {
                claim: SCRIPT.into(),
                premises: vec!["She needs 4 cups per quart.".into()],
                givens: vec!["Martha makes 2 quarts & more.".into()],
                ..SegmentView::default()
            };
            desk.judge_seat(&seat, &view, &Hash::ZERO).await
        });
        while self.desk.queue().is_empty() {
            tokio::task::yield_now().await;
        }
        task
    }

    async fn send(&self, req: Request<Body>) -> (StatusCode, HeaderMap, String) {
        let r = self.router.clone().oneshot(req).await.unwrap();
        let status = r.status();
        let headers = r.headers().clone();
        let body = to_bytes(r.into_body(), 1 << 20).await.unwrap();
        (status, headers, String::from_utf8_lossy(&body).into_owned())
    }

    async fn get(&self, path: &str, cookie: Option<&str>) -> (StatusCode, String) {
        let mut b = Request::get(path);
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        let (s, _, body) = self.send(b.body(Body::empty()).unwrap()).await;
        (s, body)
    }

    async fn post(
        &self,
        path: &str,
        cookie: Option<&str>,
        origin: Option<&str>,
        body: &str,
    ) -> (StatusCode, HeaderMap, String) {
        let mut b = Request::post(path)
            .header(header::HOST, "127.0.0.1:8480")
            .header(header::CONTENT_TYPE, "application/x-www-form-urlencoded");
        if let Some(c) = cookie {
            b = b.header(header::COOKIE, c);
        }
        if let Some(o) = origin {
            b = b.header(header::ORIGIN, o);
        }
        self.send(b.body(Body::from(body.to_string())).unwrap())
            .await
    }

    /// The login form's CSRF cookie and token, as a browser gets them from `/audit`.
    async fn login_form(&self) -> (String, String) {
        let (s, h, page) = self
            .send(Request::get("/audit").body(Body::empty()).unwrap())
            .await;
        assert_eq!(s, StatusCode::OK);
        let set = h[header::SET_COOKIE].to_str().unwrap().to_string();
        assert!(
            set.contains("HttpOnly") && set.contains("SameSite=Strict"),
            "{set}"
        );
        (set.split(';').next().unwrap().to_string(), csrf_of(&page))
    }

    /// Logs in with the token; returns the cookie and the page's CSRF token.
    async fn login(&self) -> (String, String) {
        let (pre, pre_csrf) = self.login_form().await;
        let (s, h, _) = self
            .post(
                "/audit/login",
                Some(&pre),
                Some("http://127.0.0.1:8480"),
                &format!("csrf={pre_csrf}&token={}", self.token.expose()),
            )
            .await;
        assert_eq!(s, StatusCode::SEE_OTHER);
        let set = h[header::SET_COOKIE].to_str().unwrap().to_string();
        for part in ["HttpOnly", "SameSite=Strict", "Path=/"] {
            assert!(set.contains(part), "{set}");
        }
        let cookie = set.split(';').next().unwrap().to_string();
        let (s, page) = self.get("/audit", Some(&cookie)).await;
        assert_eq!(s, StatusCode::OK);
        (cookie, csrf_of(&page))
    }

    fn seat_path(&self, segment: u16) -> String {
        format!("/audit/{}/{segment}", self.session.to_hex())
    }
}

/// The CSRF token a page's form carries.
fn csrf_of(page: &str) -> String {
    page.split("name=\"csrf\" value=\"")
        .nth(1)
        .and_then(|t| t.split('"').next())
        .expect("the page's form carries a CSRF token")
        .to_string()
}

#[tokio::test]
async fn without_the_token_nothing_but_the_login_form() {
    let f = form();
    let _seat = f.seat_waits().await;
    // No cookie: the login form, and no data.
    let (s, page) = f.get("/audit", None).await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains("Operator token") && !page.contains("Waiting for you"));
    let (s, page) = f.get(&f.seat_path(1), None).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert!(!page.contains("So 4 + 4 = 8"));
    // A wrong token, one character short, or none: refused, no login cookie.
    let (pre, pre_csrf) = f.login_form().await;
    let wrong = format!("csrf={pre_csrf}&token={}", "0".repeat(64));
    let short = format!("csrf={pre_csrf}&token={}", &f.token.expose()[1..]);
    let empty = format!("csrf={pre_csrf}&token=");
    let missing = format!("csrf={pre_csrf}");
    for body in [&wrong, &short, &empty, &missing] {
        let (s, h, _) = f.post("/audit/login", Some(&pre), None, body).await;
        assert_eq!(s, StatusCode::UNAUTHORIZED, "{body}");
        let set = h
            .get(header::SET_COOKIE)
            .map(|v| v.to_str().unwrap().to_string())
            .unwrap_or_default();
        assert!(
            !set.starts_with(&format!("{}=", crate::web::auth::COOKIE)),
            "{set}"
        );
    }
    // The right token without the login form's CSRF token, with another one, or with
    // the form's but not its cookie: 403.
    let token = f.token.expose();
    let (other_pre, _) = f.login_form().await;
    for (cookie, body) in [
        (Some(pre.as_str()), format!("token={token}")),
        (
            Some(pre.as_str()),
            format!("csrf={}&token={token}", "0".repeat(64)),
        ),
        (None, format!("csrf={pre_csrf}&token={token}")),
        (
            Some(other_pre.as_str()),
            format!("csrf={pre_csrf}&token={token}"),
        ),
    ] {
        let (s, h, _) = f.post("/audit/login", cookie, None, &body).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{cookie:?} {body}");
        assert!(h.get(header::SET_COOKIE).is_none());
    }
    // A made-up cookie is no login.
    let forged = format!("{}={}", crate::web::auth::COOKIE, "ab".repeat(32));
    let (s, _) = f.get(&f.seat_path(1), Some(&forged)).await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    // A login from another site is refused even with the token.
    let (s, h, _) = f
        .post(
            "/audit/login",
            Some(&pre),
            Some("http://evil.example"),
            &format!("csrf={pre_csrf}&token={}", f.token.expose()),
        )
        .await;
    assert_eq!(s, StatusCode::FORBIDDEN);
    assert!(h.get(header::SET_COOKIE).is_none());
    // The token logs in; the queue lists the seat with its deadline.
    let (cookie, _) = f.login().await;
    let (_, page) = f.get("/audit", Some(&cookie)).await;
    assert!(page.contains("Waiting for you (1)"), "{page}");
    assert!(page.contains("in 92 blocks (about 92 s)"), "{page}");
}

/// Issue 53 (item 5): a session page sends its visitor to `GET /audit/login?next=`; the
/// login (a POST with the token, its form's CSRF token, from this site) goes on to that
/// session page, and to nothing but a session page of this node: a `next` naming another
/// site, a protocol-relative path or any other page goes to the queue. Once logged in,
/// the form itself goes straight on.
#[tokio::test]
async fn a_login_goes_on_to_the_session_page_and_nowhere_else() {
    let form = form();
    let f = &form;
    let sid = "cd".repeat(32);
    let to_session = format!("/sessions/{sid}");
    let (s, h, page) = f
        .send(
            Request::get(format!("/audit/login?next={to_session}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        page.contains(&format!("name=\"next\" value=\"{to_session}\"")),
        "{page}"
    );
    assert!(
        page.contains("method=\"post\" action=\"/audit/login\""),
        "{page}"
    );
    let pre = h[header::SET_COOKIE].to_str().unwrap();
    let pre = pre.split(';').next().unwrap().to_string();
    let csrf = csrf_of(&page);
    let token = f.token.expose();
    let post = |next: String| {
        let (pre, csrf) = (pre.clone(), csrf.clone());
        async move {
            let body = format!("csrf={csrf}&token={token}&next={next}");
            let (s, h, _) = f
                .post(
                    "/audit/login",
                    Some(&pre),
                    Some("http://127.0.0.1:8480"),
                    &body,
                )
                .await;
            assert_eq!(s, StatusCode::SEE_OTHER, "{next}");
            let set = h[header::SET_COOKIE].to_str().unwrap().to_string();
            for part in ["HttpOnly", "SameSite=Strict"] {
                assert!(set.contains(part), "{set}");
            }
            (
                h[header::LOCATION].to_str().unwrap().to_string(),
                set.split(';').next().unwrap().to_string(),
            )
        }
    };
    let (to, cookie) = post(to_session.clone()).await;
    assert_eq!(to, to_session);
    for elsewhere in [
        "https%3A%2F%2Fevil.example%2F".to_string(),
        "%2F%2Fevil.example%2Fsessions%2F".to_string(),
        format!("%2Fsessions%2F{sid}%2F..%2F..%2Fevil"),
        "%2Fblocks".to_string(),
        String::new(),
    ] {
        assert_eq!(post(elsewhere.clone()).await.0, "/audit", "{elsewhere}");
    }
    // Logged in, the login form goes straight on.
    let (s, h, _) = f
        .send(
            Request::get(format!("/audit/login?next={to_session}"))
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(s, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], to_session.as_str());
    // The token never travels in a URL: a GET with it logs nobody in.
    let (s, h, page) = f
        .send(
            Request::get(format!("/audit/login?token={token}&next={to_session}"))
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains("Operator token"));
    let set = h[header::SET_COOKIE].to_str().unwrap();
    assert!(
        !set.starts_with(&format!("{}=", crate::web::auth::COOKIE)),
        "{set}"
    );
}

#[tokio::test]
async fn a_judgement_needs_the_logins_csrf_token_and_a_same_site_post() {
    let f = form();
    let seat = f.seat_waits().await;
    let (cookie, csrf) = f.login().await;
    let path = f.seat_path(1);
    let origin = Some("http://127.0.0.1:8480");
    // No CSRF token, another login's, a wrong one, or a post from another site: 403,
    // and the seat still waits.
    let other = f.login().await.1;
    for (body, origin) in [
        ("vote=invalid".to_string(), origin),
        (format!("csrf={other}&vote=invalid"), origin),
        (format!("csrf={}&vote=invalid", "0".repeat(64)), origin),
        (
            format!("csrf={csrf}&vote=invalid"),
            Some("http://evil.example"),
        ),
    ] {
        let (s, _, _) = f.post(&path, Some(&cookie), origin, &body).await;
        assert_eq!(s, StatusCode::FORBIDDEN, "{body}");
    }
    // Without a login at all: 401.
    let (s, _, _) = f
        .post(&path, None, origin, &format!("csrf={csrf}&vote=invalid"))
        .await;
    assert_eq!(s, StatusCode::UNAUTHORIZED);
    assert_eq!(f.desk.queue().len(), 1, "nothing was taken");
    // Not a choice: 400, still waiting.
    let (s, _, _) = f
        .post(
            &path,
            Some(&cookie),
            origin,
            &format!("csrf={csrf}&vote=maybe"),
        )
        .await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
    assert_eq!(f.desk.queue().len(), 1);
    // The login's own token: taken, and the seat decides Invalid with the note.
    let (s, h, _) = f
        .post(
            &path,
            Some(&cookie),
            origin,
            &format!("csrf={csrf}&vote=invalid&note=4%2B4+is+8+but+not+from+these"),
        )
        .await;
    assert_eq!(s, StatusCode::SEE_OTHER);
    assert_eq!(h[header::LOCATION], path.as_str());
    let d = seat.await.unwrap();
    assert_eq!(d.vote, Vote::Invalid);
    assert!(
        d.reason.ends_with("4+4 is 8 but not from these"),
        "{}",
        d.reason
    );
    // The page now shows progress, not the form; a second vote is refused.
    let (s, page) = f.get(&path, Some(&cookie)).await;
    assert_eq!(s, StatusCode::OK);
    assert!(page.contains("id=\"progress\"") && !page.contains("id=\"judgement\""));
    assert!(page.contains(">Invalid</span> at height"), "{page}");
    let (s, _, _) = f
        .post(
            &path,
            Some(&cookie),
            origin,
            &format!("csrf={csrf}&vote=valid"),
        )
        .await;
    assert_eq!(s, StatusCode::CONFLICT);
}

#[tokio::test]
async fn a_segment_without_a_seat_here_cannot_be_opened_or_judged() {
    let f = form();
    let _seat = f.seat_waits().await;
    let (cookie, csrf) = f.login().await;
    // Another segment of the same session, and a session this node never sat in.
    let elsewhere = format!("/audit/{}/1", Hash::sha256(b"another").to_hex());
    for path in [f.seat_path(0), f.seat_path(2), elsewhere] {
        let (s, page) = f.get(&path, Some(&cookie)).await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}");
        assert!(page.contains("holds no Human seat"), "{page}");
        let (s, _, _) = f
            .post(
                &path,
                Some(&cookie),
                None,
                &format!("csrf={csrf}&vote=invalid"),
            )
            .await;
        assert_eq!(s, StatusCode::NOT_FOUND, "{path}");
    }
    // Malformed ids: 400 with a reason.
    for path in ["/audit/xyz/1", &format!("/audit/{}/-1", f.session.to_hex())] {
        let (s, _) = f.get(path, Some(&cookie)).await;
        assert_eq!(s, StatusCode::BAD_REQUEST, "{path}");
    }
}

#[tokio::test]
async fn segment_text_is_escaped_and_the_page_allows_no_script() {
    let f = form();
    let _seat = f.seat_waits().await;
    let (cookie, _) = f.login().await;
    let (s, h, page) = f
        .send(
            Request::get(f.seat_path(1))
                .header(header::COOKIE, &cookie)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(s, StatusCode::OK);
    assert!(!page.contains("<script>"), "{page}");
    assert!(page.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; So 4 + 4 = 8"));
    assert!(page.contains("Then &lt;b&gt;she&lt;/b&gt; buys 4 packages."));
    assert!(page.contains("Martha makes 2 quarts &amp; more."));
    // The paper's four parts and four criteria, and the four choices.
    for part in [
        "Prompt context",
        "Verified dependencies",
        "Current reasoning",
        "Implications",
        "Logical consistency",
        "Mathematical accuracy",
        "Completeness",
        "Clarity",
        "value=\"valid\"",
        "value=\"invalid\"",
        "value=\"ungrounded\"",
        "value=\"unsure\"",
    ] {
        assert!(page.contains(part), "{part}");
    }
    let csp = h[header::CONTENT_SECURITY_POLICY].to_str().unwrap();
    assert!(csp.contains("default-src 'none'") && !csp.contains("script-src"));
    // The queue's snippet of the claim is escaped too.
    let (_, queue) = f.get("/audit", Some(&cookie)).await;
    assert!(!queue.contains("<script>") && queue.contains("&lt;script&gt;"));
}

/// The queue reloads itself (no script) carrying the height it showed, and marks the seats
/// that arrived since the height the previous load showed.
#[tokio::test]
async fn the_queue_reloads_itself_and_marks_the_seats_new_since_the_last_load() {
    let f = form();
    f.desk.on_block(7, &[]);
    let _seat = f.seat_waits().await;
    let (cookie, _) = f.login().await;
    let (s, page) = f.get("/audit?since=6", Some(&cookie)).await;
    assert_eq!(s, StatusCode::OK);
    assert!(
        page.contains("<meta http-equiv=\"refresh\" content=\"10; url=/audit?since=5\">"),
        "{page}"
    );
    assert!(page.contains("1 new seat since #6"), "{page}");
    assert!(page.contains(">new</strong>"), "{page}");
    assert!(!page.contains("<script"), "{page}");
    // Loaded after the seat arrived: nothing is new.
    let (_, page) = f.get("/audit?since=7", Some(&cookie)).await;
    assert!(!page.contains("new seat"), "{page}");
    assert!(!page.contains(">new</strong>"), "{page}");
    // The first load has nothing to compare with.
    let (_, page) = f.get("/audit", Some(&cookie)).await;
    assert!(!page.contains(">new</strong>"), "{page}");
    let (s, _) = f.get("/audit?since=soon", Some(&cookie)).await;
    assert_eq!(s, StatusCode::BAD_REQUEST);
}
