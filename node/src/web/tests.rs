//! The pages over a real sled ledger and a real contract driven through real blocks,
//! asked through the router as a browser would.

use std::sync::Arc;

use axum::{
    body::Body,
    http::{Request, StatusCode, header},
};
use tower::ServiceExt;
use trust_contracts::{Contract, Event, Params};
use trust_protocol::{
    Hash, Keypair, Salt, Signed, Vote, commitment,
    hdag::AbstractionLevel,
    mapping_commitment,
    tx::{Call, LeftOut, QuorumParams, SegmentEntry, SessionManifest, SignedTx, Tier, Tx},
    units::Ppm,
};

use super::{
    Pages,
    hdag_svg::{self, Edge, EdgeKind, Node, Shade},
    history::History,
    router,
};
use crate::{
    audit::{outbox::Outbox, provider::Provider},
    blobs::BlobStore,
    testchain::TestChain,
    view::PeerView,
};

const XSS: &str = "<script>alert(1)</script>";
const XSS_ESCAPED: &str = "&lt;script&gt;alert(1)&lt;/script&gt;";

/// A one-validator chain with three Computer auditors, the pages over it, and a provider
/// role on node 0 when asked for.
struct Net {
    pages: Pages,
    /// The operator token the pages' login checks.
    token: crate::keys::OperatorToken,
    genesis: Arc<Contract>,
    /// The chain the pages read, and the stand-in for its consensus driver.
    t: TestChain,
}

impl std::ops::Deref for Net {
    type Target = TestChain;
    fn deref(&self) -> &TestChain {
        &self.t
    }
}

impl std::ops::DerefMut for Net {
    fn deref_mut(&mut self) -> &mut TestChain {
        &mut self.t
    }
}

impl Net {
    fn new(with_provider: bool) -> Self {
        Self::planting(with_provider, 0)
    }

    /// The pages, with a provider role planting up to `honeypots` honeypots a session.
    fn planting(with_provider: bool, honeypots: usize) -> Self {
        // Data a page shows that an outsider chose: the auditors' expertise, a peer id.
        let t = TestChain::new(
            "web",
            &[XSS],
            PeerView {
                peers: 2,
                heights: vec![(format!("12D3KooWpeer{XSS}"), 4)],
            },
        );
        let provider = with_provider.then(|| {
            let key = Keypair::from_label("web0");
            let outbox = Outbox::new(key, t.chain_watch.clone(), t.pool.clone(), None);
            let p = Provider::open(outbox, BlobStore::open(&t.db).unwrap(), &t.db)
                .unwrap()
                .with_honeypots(honeypots);
            Arc::new(p)
        });
        let genesis = Arc::new(t.genesis.clone());
        let pages = Pages::new(
            t.keys[0].public(),
            t.chain_watch.clone(),
            t.peer_watch.clone(),
            t.pool.clone(),
            t.ledger.clone(),
            provider,
            Some(genesis.clone()),
        );
        let token = crate::keys::OperatorToken::for_tests(&"c0ffee42".repeat(8));
        let pages = pages.with_auth(Arc::new(super::auth::Auth::new(&token)));
        Net {
            pages,
            token,
            genesis,
            t,
        }
    }

    /// Signs `calls` in order, each account's nonces counting up from its next one.
    fn sign_all(&self, calls: Vec<(usize, Call)>) -> Vec<SignedTx> {
        let view = self.chain.current();
        let mut next: Vec<u64> = self
            .keys
            .iter()
            .map(|k| view.contract.nonce(&k.public()))
            .collect();
        calls
            .into_iter()
            .map(|(i, call)| {
                let nonce = next[i];
                next[i] += 1;
                Signed::sign(&self.keys[i], &view.contract.chain_id(), Tx { nonce, call })
            })
            .collect()
    }

    /// Status, content type, `Location`, body.
    async fn get(&self, uri: &str) -> (StatusCode, String, String, String) {
        self.get_with(uri, &[]).await
    }

    /// The page at `uri` as the operator asks it: with the token as a bearer token.
    async fn operator_page(&self, uri: &str) -> String {
        let bearer = format!("Bearer {}", self.token.expose());
        let (st, _, _, body) = self
            .get_with(uri, &[(header::AUTHORIZATION, bearer.as_str())])
            .await;
        assert_eq!(st, StatusCode::OK, "{uri}: {body}");
        assert_no_raw_script(uri, &body);
        body
    }

    /// Status, content type, `Location`, body, asked with `headers`.
    async fn get_with(
        &self,
        uri: &str,
        headers: &[(header::HeaderName, &str)],
    ) -> (StatusCode, String, String, String) {
        let mut req = Request::get(uri);
        for (k, v) in headers {
            req = req.header(k, *v);
        }
        let r = router(self.pages.clone())
            .oneshot(req.body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = r.status();
        let header_of = |name| {
            r.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .unwrap_or("")
                .to_string()
        };
        let (ctype, location) = (header_of(header::CONTENT_TYPE), header_of(header::LOCATION));
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        (
            status,
            ctype,
            location,
            String::from_utf8_lossy(&body).into_owned(),
        )
    }

    /// A page that must answer 200 as HTML; its body.
    async fn page(&self, uri: &str) -> String {
        let (st, ctype, _, body) = self.get(uri).await;
        assert_eq!(st, StatusCode::OK, "{uri}: {body}");
        assert!(ctype.starts_with("text/html"), "{uri}: {ctype}");
        assert_no_raw_script(uri, &body);
        body
    }

    /// An error page: its status and that it is HTML in the layout.
    async fn error(&self, uri: &str) -> StatusCode {
        let (st, ctype, _, body) = self.get(uri).await;
        assert!(ctype.starts_with("text/html"), "{uri}: {ctype}");
        assert!(
            body.contains("href=\"/blocks\""),
            "{uri}: not in the layout"
        );
        assert_no_raw_script(uri, &body);
        st
    }

    async fn redirect(&self, uri: &str) -> String {
        let (st, _, location, body) = self.get(uri).await;
        assert_eq!(st, StatusCode::SEE_OTHER, "{uri}: {body}");
        location
    }
}

/// The HDAG drawing of a session page (the legend's sample strokes left out).
fn hdag_of(page: &str) -> &str {
    let start = page.find("<svg class=\"hdag\"").expect("an HDAG drawing");
    let len = page[start..].find("</svg>").expect("closed");
    &page[start..start + len]
}

fn assert_no_raw_script(uri: &str, body: &str) {
    assert!(
        !body.to_ascii_lowercase().contains("<script"),
        "{uri}: raw <script> in the page"
    );
}

fn manifest(segments: Vec<SegmentEntry>, left_out: Vec<LeftOut>) -> SessionManifest {
    let mut m = SessionManifest {
        segments,
        mapping_commitment: mapping_commitment(&Hash::ZERO, &Salt([2; 32])),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        fee: 0,
        domain: XSS.into(),
        left_out,
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &trust_protocol::Salt([0; 32])),
    };
    m.fee = trust_contracts::minimum_fee(&Params::default(), &m).unwrap();
    m
}

fn segment(label: &[u8], level: AbstractionLevel, depends_on: Vec<u16>) -> SegmentEntry {
    SegmentEntry {
        level,
        depends_on,
        cid: trust_protocol::cid::Cid::of(label),
        ..SegmentEntry::plain(Hash::sha256(label), Tier::Computer)
    }
}

/// The reason seat `i` gives on segment `s` in [`run_session`]: its own text, so a page
/// must escape it.
fn seat_reason(i: usize, s: u16) -> String {
    format!("seat {i} on segment {s} says {XSS}")
}

/// Runs a session of two segments (a TACTIC and a STEP resting on it) and a left-out
/// conclusion resting on the STEP, every seat voting `votes[segment]`; returns its id and
/// the live page seen while seats commit.
async fn run_session(net: &mut Net, votes: [Vote; 2]) -> (Hash, String) {
    let segs = vec![
        segment(b"t", AbstractionLevel::Tactic, vec![]),
        segment(b"s", AbstractionLevel::Step, vec![0]),
    ];
    let left = vec![LeftOut {
        tier: Tier::Human,
        weight: 1,
        depends_on: vec![1],
        rests_on_left_out: Vec::new(),
        supports: None,
        conclusion: true,
    }];
    let m = manifest(segs.clone(), left);
    let open = net.sign(0, Call::OpenSession(m));
    let sid = Tx::session_id(&net.keys[0].public(), open.body.nonce);
    net.block(vec![open]).await;
    let ev = net.block(vec![]).await;
    let seats: Vec<(usize, u16)> = ev
        .iter()
        .filter_map(|e| match e {
            Event::SeatAssigned { seat, segment, .. } => net
                .keys
                .iter()
                .position(|k| k.public() == *seat)
                .map(|i| (i, *segment)),
            _ => None,
        })
        .collect();
    assert_eq!(seats.len(), 6);
    let live = net.page(&format!("/sessions/{sid}")).await;
    let salt = Salt([5; 32]);
    let vote = |s: u16| votes[usize::from(s)];
    let commits = seats
        .iter()
        .map(|&(i, s)| {
            let id = segs[usize::from(s)].id;
            let c = commitment(
                &sid,
                &id,
                &net.keys[i].public(),
                vote(s),
                &salt,
                &seat_reason(i, s),
            );
            (
                i,
                Call::Commit {
                    session: sid,
                    segment: s,
                    commitment: c,
                },
            )
        })
        .collect();
    let commits = net.sign_all(commits);
    net.block(commits).await;
    let reveals = seats
        .iter()
        .map(|&(i, s)| {
            (
                i,
                Call::Reveal {
                    session: sid,
                    segment: s,
                    vote: vote(s),
                    salt,
                    reason: seat_reason(i, s),
                },
            )
        })
        .collect();
    let reveals = net.sign_all(reveals);
    net.block(reveals).await;
    // The (empty) honeypot set first, then the mapping.
    let set = net.sign(
        0,
        Call::RevealHoneypots {
            session: sid,
            openings: Vec::new(),
            set_salt: Salt([0; 32]),
        },
    );
    net.block(vec![set]).await;
    let disclose = net.sign(
        0,
        Call::RevealMapping {
            session: sid,
            mapping: Hash::ZERO,
            salt: Salt([2; 32]),
        },
    );
    net.block(vec![disclose]).await;
    (sid, live)
}

#[tokio::test]
async fn the_network_page_shows_the_chain_validators_peers_and_sessions() {
    let mut net = Net::new(false);
    let to = net.keys[1].public();
    let tx = net.sign(0, Call::Transfer { to, amount: 7 });
    net.block(vec![tx]).await;
    let (sid, _) = run_session(&mut net, [Vote::Invalid, Vote::Valid]).await;
    let pooled = net.sign(0, Call::Transfer { to, amount: 1 });
    net.pages.pool.admit(pooled).await.unwrap();

    let home = net.page("/").await;
    let view = net.chain.current();
    assert!(home.starts_with("<!doctype html>"));
    assert!(home.contains(&format!("href=\"/blocks/{}\"", view.tip.height)));
    assert!(home.contains(&view.tip.hash.to_hex()));
    assert!(home.contains(&view.state_root.to_hex()));
    assert!(home.contains(&format!("/accounts/{}", net.keys[0].public())));
    assert!(home.contains("<td>1000</td>"), "voting power");
    assert!(home.contains("1 tx"), "mempool size");
    assert!(home.contains(&format!("12D3KooWpeer{XSS_ESCAPED}")));
    assert!(home.contains(&format!("/sessions/{sid}")));
    assert!(home.contains(">Fail<"));
}

#[tokio::test]
async fn blocks_are_listed_page_by_page_and_each_shows_its_transactions() {
    let mut net = Net::new(false);
    let to = net.keys[2].public();
    for _ in 0..29 {
        net.block(vec![]).await;
    }
    let tx = net.sign(1, Call::Transfer { to, amount: 9 });
    let id = tx.id();
    net.block(vec![tx]).await; // height 30

    let list = net.page("/blocks").await;
    assert!(list.contains("href=\"/blocks/30\""));
    assert!(list.contains("href=\"/blocks/6\""));
    assert!(!list.contains("href=\"/blocks/5\""), "25 per page");
    assert!(
        list.contains("href=\"/blocks?before=6\""),
        "a link to older blocks"
    );
    let older = net.page("/blocks?before=6").await;
    assert!(older.contains("href=\"/blocks/5\"") && older.contains("href=\"/blocks/1\""));
    assert!(!older.contains("href=\"/blocks/6\""));
    assert!(
        older.contains("href=\"/blocks?before=31\""),
        "a link back to newer"
    );
    assert_eq!(
        net.error("/blocks?before=soon").await,
        StatusCode::BAD_REQUEST
    );

    let by_height = net.page("/blocks/30").await;
    assert!(by_height.contains("Transfer"));
    assert!(by_height.contains(&format!("/accounts/{}", net.keys[1].public())));
    assert!(by_height.contains(&format!("9 to <a class=\"mono\" href=\"/accounts/{to}\"")));
    assert!(by_height.contains(&id.to_hex()));
    let by_hash = net.page(&format!("/blocks/{}", net.tip.hash)).await;
    assert_eq!(by_hash, by_height);
    // Its time, on the block page and in the list.
    let t = crate::chain::format_time(net.tip.time_ms);
    assert!(by_height.contains(&format!("<dt>Time</dt><dd class=\"mono\">{t}</dd>")));
    assert!(net.page("/blocks").await.contains(&t));
    assert_eq!(net.error("/blocks/31").await, StatusCode::NOT_FOUND);
    assert_eq!(
        net.error(&format!("/blocks/{}", Hash::sha256(b"no block")))
            .await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(net.error("/blocks/0x12").await, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn accounts_and_auditors_have_pages_and_unknown_ones_do_not() {
    let mut net = Net::new(false);
    let (_, _) = run_session(&mut net, [Vote::Valid, Vote::Valid]).await;
    let auditor = net.keys[1].public();
    let acct = net.page(&format!("/accounts/{auditor}")).await;
    let balance = net.chain.current().contract.state().accounts[&auditor].balance;
    assert!(acct.contains(&format!("<div class=\"v\">{balance}</div>")));
    assert!(acct.contains(&format!("href=\"/auditors/{auditor}\"")));
    let plain = net
        .page(&format!("/accounts/{}", net.keys[0].public()))
        .await;
    assert!(!plain.contains("/auditors/"), "node 0 is no auditor");

    let page = net.page(&format!("/auditors/{auditor}")).await;
    assert!(page.contains("Computer"));
    assert!(page.contains(XSS_ESCAPED), "expertise shown escaped");
    assert!(page.contains("Known error, Obvious"));
    // Two plots from the replay, each with its curve.
    assert_eq!(
        page.matches("<figure class=\"plot card\"").count(),
        2,
        "{page}"
    );
    assert!(page.matches("<polyline").count() >= 2);
    assert!(
        !page.contains("History covers blocks up to"),
        "the replay caught up"
    );

    // A history that replays two blocks per visit says how far it got, and catches up.
    let tip = net.tip.height;
    net.pages.history = Arc::new(History::with_blocks_per_request(
        Some(net.genesis.clone()),
        2,
    ));
    for visit in 1..=tip.div_ceil(2) {
        let p = net.page(&format!("/auditors/{auditor}")).await;
        let covered = (visit * 2).min(tip);
        if covered < tip {
            let says = format!("History covers blocks up to {covered} of {tip}");
            assert!(p.contains(&says), "visit {visit}: {p}");
        } else {
            assert!(!p.contains("History covers blocks up to"), "caught up");
        }
    }

    let unknown = Keypair::from_label("nobody").public();
    assert_eq!(
        net.error(&format!("/accounts/{unknown}")).await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(
        net.error(&format!("/auditors/{}", net.keys[0].public()))
            .await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(net.error("/accounts/xyz").await, StatusCode::BAD_REQUEST);
    assert_eq!(
        net.error("/auditors/%3Cb%3E").await,
        StatusCode::BAD_REQUEST
    );
}

/// Issue 56, item 8: the auditor page's "Votes revealed" lists every kind of vote, each
/// as the outcomes on chain count this auditor's votes, with the right plural.
#[tokio::test]
async fn the_auditor_page_lists_every_kind_of_vote_revealed() {
    let mut net = Net::new(false);
    let (a, _) = run_session(&mut net, [Vote::Invalid, Vote::Abstain]).await;
    let (b, _) = run_session(&mut net, [Vote::Ungrounded, Vote::Valid]).await;
    let plural = |n: usize| if n == 1 { "abstention" } else { "abstentions" };
    let mut split = 0;
    for key in &net.keys[1..] {
        let me = key.public();
        let state = net.chain.current().contract.state().clone();
        if !state.auditors.contains_key(&me) {
            continue;
        }
        let mine: Vec<Vote> = [a, b]
            .iter()
            .flat_map(|sid| state.outcomes[sid].segments.iter())
            .flat_map(|g| g.votes_cast.iter())
            .filter(|v| v.seat == me)
            .map(|v| v.vote)
            .collect();
        let n = |kind: Vote| mine.iter().filter(|v| **v == kind).count();
        let (invalid, ungrounded) = (n(Vote::Invalid), n(Vote::Ungrounded));
        let said = format!(
            "<dt>Votes revealed</dt><dd>{} ({} Valid, {invalid} Invalid, {ungrounded} Ungrounded, {} {})</dd>",
            mine.len(),
            n(Vote::Valid),
            n(Vote::Abstain),
            plural(n(Vote::Abstain)),
        );
        let page = net.page(&format!("/auditors/{me}")).await;
        assert!(page.contains(&said), "{said}\n{page}");
        split += usize::from(invalid > 0 && ungrounded > 0);
    }
    assert!(split > 0, "some auditor voted both Invalid and Ungrounded");
}

#[tokio::test]
async fn a_session_page_draws_its_hdag_coloured_by_verdict() {
    let mut net = Net::new(false);
    let (sid, live) = run_session(&mut net, [Vote::Invalid, Vote::Valid]).await;
    assert!(live.contains("<meta http-equiv=\"refresh\" content=\"2\">"));
    assert!(live.contains("commit, round 0"), "{live}");
    assert!(live.contains("<div class=\"k\">Seats drawn</div><div class=\"v\">6</div>"));

    let page = net.page(&format!("/sessions/{sid}")).await;
    assert!(
        !page.contains("http-equiv=\"refresh\""),
        "decided: no reload"
    );
    assert!(page.contains("<span class=\"badge fail\">Fail</span>"));
    assert!(
        page.contains("Claims judged") && page.contains("2 of 3"),
        "{page}"
    );
    let decided_at = net
        .pages
        .ledger
        .outcome_height(&sid)
        .unwrap()
        .expect("decided");
    assert!(page.contains(&format!("<a href=\"/blocks/{decided_at}\">")));
    let stamped = net
        .pages
        .ledger
        .block(decided_at)
        .unwrap()
        .unwrap()
        .block
        .header
        .time_ms;
    assert!(
        page.contains(&format!(
            "<dt>Decided at (UTC)</dt><dd class=\"mono\">{}</dd>",
            crate::chain::format_time(stamped)
        )),
        "{page}"
    );
    assert!(page.contains("Failure bound"));
    // The terms the provider chose, the domain among them, escaped.
    assert!(page.contains("<h2>Assurance</h2>"), "{page}");
    assert!(page.contains("<dt>Seats per segment (k)</dt><dd>3 Computer, 3 LLM, 3 Human</dd>"));
    assert!(page.contains(&format!(
        "<dt>Domain</dt><dd>{XSS_ESCAPED} (preferred)</dd>"
    )));
    // Under each segment, each revealed vote with its seat and its reason, escaped.
    assert!(!page.contains(XSS), "a reason reached the page unescaped");
    // Keys 1 to 3 are the auditors (key 0 opened the session).
    for i in 1..4usize {
        for s in 0..2u16 {
            let said = format!("seat {i} on segment {s} says {XSS_ESCAPED}");
            assert!(page.contains(&said), "no reason {said:?} in {page}");
        }
    }
    assert_eq!(page.matches("<ul class=\"votes\">").count(), 2, "{page}");
    let first = page.find("<tr id=\"seg-0\">").expect("segment 0 row");
    let second = page.find("<tr id=\"seg-1\">").expect("segment 1 row");
    let under_first = &page[first..second];
    assert!(under_first.contains("on segment 0 says"), "{under_first}");
    assert!(!under_first.contains("on segment 1 says"), "{under_first}");
    assert!(under_first.contains("<b>Invalid</b>"), "{under_first}");
    assert!(under_first.contains(&format!("/accounts/{}", net.keys[1].public())));
    // Three nodes: the Invalid TACTIC, the STEP it propagates to, the left-out conclusion.
    let svg = hdag_of(&page);
    assert_eq!(svg.matches("<g class=\"node ").count(), 3);
    assert_eq!(svg.matches("<g class=\"node v-invalid\"").count(), 1);
    // The STEP and the left-out conclusion resting on it inherit the error.
    assert_eq!(svg.matches("<g class=\"node v-propagated\"").count(), 2);
    assert!(!svg.contains("v-valid"));
    assert_eq!(svg.matches("<path class=\"e-dep\"").count(), 2);
    // No text or decomposition off the provider's node: blinded ids instead.
    assert!(page.contains(&Hash::sha256(b"t").to_hex()[..12]));
    assert!(!svg.contains("<path class=\"e-dec\""));
    assert!(page.contains("Legend") || page.contains("class=\"legend\""));

    assert_eq!(
        net.error(&format!("/sessions/{}", Hash::sha256(b"no session")))
            .await,
        StatusCode::NOT_FOUND
    );
    assert_eq!(net.error("/sessions/12ab").await, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_provider_node_shows_segment_text_escaped() {
    let mut net = Net::new(true);
    let provider = net.pages.provider.clone().unwrap();
    let trace = format!(
        "## Problem Statement\nThe denominator of a fraction is 7 less than 3 times the numerator. If the fraction is equivalent to 2/5, what is the numerator? {XSS}\n## Thinking Process\n1. Let the numerator be x\n2. So x / (3x - 7) = 2/5\n3. Therefore, 5x = 6x - 14\n## Final Output\nx = 14\n"
    );
    let contract = net.chain.current().contract.clone();
    let s = provider.submit(&trace, None, &contract).await.unwrap();
    net.block(vec![]).await; // the OpenSession, from the pool
    let page = net.operator_page(&format!("/sessions/{}", s.session)).await;
    assert!(page.contains("this node opened it"));
    assert!(page.contains("Let the numerator be x"), "{page}");
    assert!(page.contains(XSS_ESCAPED), "the problem statement, escaped");
    let record = provider.page_record(&s.session).unwrap();
    // Each segment under the name submit printed, as query shows it.
    for (i, (name, _)) in s.segments.iter().enumerate() {
        assert!(
            page.contains(&format!(
                "<tr id=\"seg-{i}\"><td>{i} <span class=\"mono\">{name}</span>"
            )),
            "segment {i} not named {name}"
        );
    }
    assert!(!record.decomposes.is_empty());
    assert_eq!(
        hdag_of(&page).matches("<path class=\"e-dec\"").count(),
        record.decomposes.len()
    );
}

/// Issue 56, item 8: for the same trace and terms, the session page's exposure line is
/// the one `submit --plan` printed (one computation, [`crate::query::exposure`], from the
/// manifest), with an exposure budget and without one; and the plan's figures are those of
/// the manifest the contract stores.
#[tokio::test]
async fn the_session_page_and_submit_plan_say_the_same_exposure() {
    let mut net = Net::new(true);
    let provider = net.pages.provider.clone().unwrap();
    let trace = std::fs::read_to_string(format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let mut seen = Vec::new();
    for max_exposure in [None, Some(0.5)] {
        let opts = trust_judging::session::terms::SessionOptions {
            max_exposure,
            ..Default::default()
        };
        let contract = net.chain.current().contract.clone();
        let plan = provider.plan(&trace, None, &opts, &contract).unwrap();
        let s = provider
            .submit_with(&trace, None, &opts, &contract)
            .await
            .unwrap();
        net.block(vec![]).await; // the OpenSession, from the pool
        // The contract keeps the segments' entries apart from the rest of the manifest.
        let live = net.chain.current().contract.state().sessions[&s.session].clone();
        let mut stored = live.manifest.clone();
        stored.segments = live.segments.iter().map(|g| g.entry.clone()).collect();
        assert_eq!(crate::query::exposure(&stored), plan.exposure);
        let said = crate::query::exposure_words(&plan.exposure);
        let page = net.operator_page(&format!("/sessions/{}", s.session)).await;
        assert!(
            page.contains(&format!(
                "<dt>Exposure</dt><dd>{}</dd>",
                super::layout::esc(&said)
            )),
            "--plan says {said:?}; the page: {page}"
        );
        assert_eq!(plan.exposure.budget.is_some(), max_exposure.is_some());
        seen.push(said);
    }
    assert!(seen[0].contains("no budget was set"), "{seen:?}");
    assert!(seen[1].ends_with("the budget)"), "{seen:?}");
}

/// Issue 53 (item 5): the page of a session this node opened shows its problem, its
/// steps' text and their names to the node's operator only (the token as a bearer token,
/// or an open login's cookie). Without them, with a token in the URL, a forged cookie or
/// the wrong token, the page is what every other node shows: blinded ids, no names (not
/// even which segments are honeypots), and a way to log in; never kept by a cache.
/// Issue 56: the operator reads the model's own steps in trace order, the honeypots the
/// node planted apart.
#[tokio::test]
async fn a_provider_nodes_session_text_is_for_its_operator_only() {
    let mut net = Net::planting(true, 2);
    let provider = net.pages.provider.clone().unwrap();
    let trace = std::fs::read_to_string(format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    ))
    .unwrap();
    let contract = net.chain.current().contract.clone();
    let s = provider.submit(&trace, None, &contract).await.unwrap();
    assert!(s.honeypots > 0, "honeypots planted: {s:?}");
    net.block(vec![]).await; // the OpenSession, from the pool
    let uri = format!("/sessions/{}", s.session);
    let text = [
        "The denominator of a fraction",
        "Let the numerator be x",
        "Therefore, 5x = 9x − 20",
        "honeypot:",
        "this node opened it</strong>",
    ];
    let token = net.token.expose().to_string();
    let forged = format!("{}={}", super::auth::COOKIE, "ab".repeat(32));
    let token_cookie = format!("{}={token}", super::auth::COOKIE);
    let wrong = "Bearer not-the-token".to_string();
    let basic = format!("Basic {token}");
    let cases: [(String, Vec<(header::HeaderName, &str)>); 6] = [
        (uri.clone(), vec![]),
        (format!("{uri}?token={token}"), vec![]),
        (uri.clone(), vec![(header::COOKIE, forged.as_str())]),
        (uri.clone(), vec![(header::COOKIE, token_cookie.as_str())]),
        (uri.clone(), vec![(header::AUTHORIZATION, wrong.as_str())]),
        (uri.clone(), vec![(header::AUTHORIZATION, basic.as_str())]),
    ];
    for (u, headers) in &cases {
        let (st, _, _, page) = net.get_with(u, headers).await;
        assert_eq!(st, StatusCode::OK, "{u} {headers:?}: {page}");
        for t in text {
            assert!(!page.contains(t), "{u} {headers:?} shows {t:?}: {page}");
        }
        assert!(
            page.contains(&format!(
                "href=\"/audit/login?next=/sessions/{}\"",
                s.session
            )),
            "{u} {headers:?}: no way to log in: {page}"
        );
        assert!(page.contains("Blinded id"), "{page}");
        assert!(
            !page.contains("http-equiv=\"refresh\""),
            "a reload would clear the token"
        );
    }
    // Never cached, its address sent to no other site.
    let r = router(net.pages.clone())
        .oneshot(Request::get(&uri).body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert_eq!(r.headers()[header::CACHE_CONTROL], "no-store");
    assert_eq!(r.headers()[header::REFERRER_POLICY], "same-origin");

    // The operator: by bearer token, or by the cookie of a login opened with it.
    let page = net.operator_page(&uri).await;
    let login = net
        .pages
        .auth
        .as_ref()
        .unwrap()
        .login(&token)
        .expect("the token logs in");
    let cookie = format!("{}={}", super::auth::COOKIE, login.id);
    let (st, _, _, by_cookie) = net
        .get_with(&uri, &[(header::COOKIE, cookie.as_str())])
        .await;
    assert_eq!(st, StatusCode::OK);
    for p in [&page, &by_cookie] {
        for t in text {
            assert!(p.contains(t), "the operator does not see {t:?}: {p}");
        }
        assert!(!p.contains("/audit/login?next="), "{p}");
    }
    // The model's steps in trace order, none of them planted; the honeypots apart.
    let start = page.find("<h2>Steps</h2>").expect("a steps section");
    let steps = &page[start..start + page[start..].find("</table>").unwrap()];
    assert!(!steps.contains("honeypot:"), "{steps}");
    let names: Vec<&str> = steps
        .split("<a class=\"mono\" href=\"#seg-")
        .skip(1)
        .filter_map(|x| x.split_once("\">")?.1.split_once("</a>"))
        .map(|(n, _)| n)
        .collect();
    let at = |n: &str| {
        names
            .iter()
            .position(|x| *x == n)
            .unwrap_or_else(|| panic!("{n} not among the steps: {names:?}"))
    };
    // The tactic that holds the thinking's lines first, then its steps line by line
    // (in outcome order the tactic, left out, comes after them).
    assert!(at("T1") < at("ST1"), "{names:?}");
    assert!(at("ST1") < at("O1") && at("O1") < at("O2") && at("O2") < at("O3"));
    assert_eq!(
        names.len() + s.honeypots,
        s.segments.len() + s.left_out.len() - planted_calculations(&s),
        "{names:?}"
    );
    let planted = page
        .find("<h2>Honeypots</h2>")
        .expect("a honeypots section");
    let segments = page.find("<h2>Segments</h2>").unwrap();
    assert!(
        !page[segments..planted].contains("honeypot:"),
        "no planted segment among the trace's"
    );
    assert_eq!(
        page[planted..].matches("<tr id=\"seg-").count(),
        s.segments
            .iter()
            .filter(|(n, _)| crate::query::steps::planted_name(n))
            .count()
    );
}

/// Calculations a provider planted beside its worded honeypots.
fn planted_calculations(s: &crate::audit::provider::Submitted) -> usize {
    s.segments
        .iter()
        .filter(|(n, _)| n.starts_with("calculation-of-honeypot:"))
        .count()
}

/// Issue 40: the provider's page of a formal proof shows the proof line by line, each
/// step's segment beside the line it begins on, and the structure's segment above.
#[tokio::test]
async fn the_provider_node_shows_a_proof_with_each_step_at_its_line() {
    let mut net = Net::new(true);
    let provider = net.pages.provider.clone().unwrap();
    let path = format!(
        "{}/../examples/traces/proof-ndl-wrong.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let trace = std::fs::read_to_string(path).unwrap();
    let thinking = trust_protocol::trace::Trace::parse(&trace)
        .unwrap()
        .thinking;
    let contract = net.chain.current().contract.clone();
    let s = provider.submit(&trace, None, &contract).await.unwrap();
    net.block(vec![]).await; // the OpenSession, from the pool
    let page = net.operator_page(&format!("/sessions/{}", s.session)).await;
    assert!(page.contains("<h2>Proof</h2>"), "{page}");
    assert!(
        page.contains("The proof&#39;s structure") || page.contains("The proof's structure"),
        "{page}"
    );
    let wrong = thinking
        .lines()
        .position(|l| l.contains("c := C BY mp on premise-4, D"))
        .unwrap()
        + 1;
    let row_start = page
        .find(&format!("<tr id=\"line-{wrong}\">"))
        .expect("the line's row");
    let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
    assert!(row.contains("premise-4, D"), "{row}");
    assert!(
        row.contains("href=\"#seg-"),
        "the step's segment beside its line: {row}"
    );
    // a comment line carries no segment
    let comment = thinking
        .lines()
        .position(|l| l.trim_start().starts_with('#'))
        .unwrap()
        + 1;
    let row_start = page.find(&format!("<tr id=\"line-{comment}\">")).unwrap();
    let row = &page[row_start..row_start + page[row_start..].find("</tr>").unwrap()];
    assert!(!row.contains("href=\"#seg-"), "{row}");
    let record = provider.page_record(&s.session).unwrap();
    let proof = record.proof.expect("the proof is kept for the page");
    assert_eq!(proof.text, thinking);
    assert_eq!(
        proof.lines.iter().filter(|l| l.is_some()).count(),
        record.nodes.iter().filter(|n| n.starts_with('P')).count()
    );
}

#[tokio::test]
async fn search_sends_each_kind_of_id_to_its_page() {
    let mut net = Net::new(false);
    let to = net.keys[1].public();
    let tx = net.sign(0, Call::Transfer { to, amount: 3 });
    let tx_id = tx.id();
    net.block(vec![tx]).await;
    let hash1 = net.tip.hash;
    let (sid, _) = run_session(&mut net, [Vote::Valid, Vote::Valid]).await;

    assert_eq!(net.redirect("/search?q=1").await, "/blocks/1");
    assert_eq!(
        net.redirect(&format!("/search?q={hash1}")).await,
        "/blocks/1"
    );
    assert_eq!(
        net.redirect(&format!("/search?q={tx_id}")).await,
        "/blocks/1"
    );
    assert_eq!(
        net.redirect(&format!("/search?q=%20{sid}%20")).await,
        format!("/sessions/{sid}")
    );
    assert_eq!(
        net.redirect(&format!("/search?q={to}")).await,
        format!("/accounts/{to}")
    );
    assert_eq!(net.error("/search?q=999").await, StatusCode::NOT_FOUND);
    assert_eq!(
        net.error("/search?q=%3Cscript%3Ealert(1)%3C%2Fscript%3E")
            .await,
        StatusCode::NOT_FOUND
    );
    let (_, _, _, body) = net.get("/search?q=%3Cscript%3Ex").await;
    assert!(body.contains("nothing found for"));
    assert!(body.contains("&lt;script&gt;x"));
    assert_eq!(net.error("/search?q=").await, StatusCode::BAD_REQUEST);
    assert_eq!(net.error("/search").await, StatusCode::BAD_REQUEST);
}

/// The start of an id, as the pages show it (12 hex characters) or down to 8, finds the
/// one session, account, block or transaction it begins; a start several ids share lists
/// them (at most [`super::explorer::MAX_MATCHES`] of a kind); one too short, or that
/// nothing begins with, says so.
#[tokio::test]
async fn search_finds_an_id_by_its_start_and_lists_a_start_several_share() {
    use super::explorer::{MAX_MATCHES, MIN_PREFIX_HEX};
    let mut net = Net::new(false);
    // Accounts whose ids share their first four bytes, `abcdef01`; the first two share
    // five (`abcdef0100`).
    let shared = |i: u8| {
        let mut id = [0u8; 32];
        let (fifth, sixth) = match i {
            0 | 1 => (0, i),
            _ => (i - 1, 0),
        };
        id[..6].copy_from_slice(&[0xab, 0xcd, 0xef, 0x01, fifth, sixth]);
        trust_protocol::AccountId::from(id)
    };
    let n = u8::try_from(MAX_MATCHES).unwrap() + 2;
    let calls = (0..n)
        .map(|i| {
            (
                0,
                Call::Transfer {
                    to: shared(i),
                    amount: 10,
                },
            )
        })
        .collect();
    let txs = net.sign_all(calls);
    let tx_id = txs[0].id();
    net.block(txs).await;
    let hash1 = net.tip.hash;
    let (sid, _) = run_session(&mut net, [Vote::Valid, Vote::Valid]).await;
    fn shown(id: &impl std::fmt::Display) -> String {
        super::short(id).trim_end_matches('…').to_string()
    }
    assert_eq!(shown(&sid).len(), 12);
    assert_eq!(
        net.redirect(&format!("/search?q={}", shown(&sid))).await,
        format!("/sessions/{sid}")
    );
    // Eight characters do, in either case.
    let eight = sid.to_hex()[..MIN_PREFIX_HEX].to_ascii_uppercase();
    assert_eq!(
        net.redirect(&format!("/search?q={eight}")).await,
        format!("/sessions/{sid}")
    );
    assert_eq!(
        net.redirect(&format!("/search?q={}", shown(&hash1))).await,
        "/blocks/1"
    );
    assert_eq!(
        net.redirect(&format!("/search?q={}", shown(&tx_id))).await,
        "/blocks/1"
    );
    let one = net.keys[2].public();
    assert_eq!(
        net.redirect(&format!("/search?q={}", shown(&one))).await,
        format!("/accounts/{one}")
    );
    // A start two accounts share lists both, and no other.
    let (st, _, _, body) = net.get("/search?q=abcdef0100").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert!(body.contains("2 matches for"), "{body}");
    for i in 0..2 {
        assert!(
            body.contains(&format!("href=\"/accounts/{}\"", shared(i))),
            "{body}"
        );
    }
    assert!(
        !body.contains(&format!("/accounts/{}", shared(2))),
        "{body}"
    );
    // More than the bound share it: the first MAX_MATCHES are listed, and the page says
    // there are more.
    let (st, _, _, body) = net.get("/search?q=abcdef01").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        body.matches("href=\"/accounts/").count(),
        MAX_MATCHES,
        "{body}"
    );
    assert!(body.contains("More than"), "{body}");
    // One more character makes it unique.
    assert_eq!(
        net.redirect("/search?q=abcdef010001").await,
        format!("/accounts/{}", shared(1))
    );
    // Too short, or nothing begins with it.
    let (st, _, _, body) = net
        .get(&format!(
            "/search?q={}",
            &sid.to_hex()[..MIN_PREFIX_HEX - 1]
        ))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    assert!(body.contains("at least 8 hex characters"), "{body}");
    let nothing = if sid.to_hex().starts_with("ffff") {
        "00000000f0"
    } else {
        "fffffffff0"
    };
    let (st, _, _, body) = net.get(&format!("/search?q={nothing}")).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("starts with it"), "{body}");
}

#[tokio::test]
async fn every_listed_page_path_renders() {
    let mut net = Net::new(false);
    let (sid, _) = run_session(&mut net, [Vote::Valid, Vote::Invalid]).await;
    let height = net.tip.height;
    for path in super::page_paths(height, &sid, &net.keys[1].public()) {
        let (st, ctype, _, body) = net.get(&path).await;
        assert!(
            st == StatusCode::OK || st == StatusCode::SEE_OTHER,
            "{path}: {st} {body}"
        );
        if st == StatusCode::OK {
            assert!(ctype.starts_with("text/html"), "{path}");
        }
    }
}

fn node(row: usize, shade: Shade) -> Node {
    Node {
        label: format!("{row}"),
        row,
        shade,
        title: format!("row {row} <b>"),
    }
}

/// `(class, y)` of every node box in an SVG, in drawing order.
fn boxes(svg: &str) -> Vec<(String, u32)> {
    svg.split("<g class=\"node ")
        .skip(1)
        .map(|g| {
            let class = g.split('"').next().unwrap().to_string();
            let y = g
                .split("<rect x=\"")
                .nth(1)
                .and_then(|r| r.split(" y=\"").nth(1))
                .and_then(|r| r.split('"').next())
                .and_then(|y| y.parse().ok())
                .unwrap();
            (class, y)
        })
        .collect()
}

#[test]
fn the_hdag_svg_draws_levels_top_to_bottom_with_both_edge_kinds() {
    let nodes = vec![
        node(0, Shade::Valid),
        node(3, Shade::Invalid),
        node(3, Shade::Propagated),
        node(4, Shade::Ungrounded),
        node(5, Shade::NotAudited),
        node(1, Shade::Undecided),
    ];
    let edges = vec![
        Edge {
            from: 1,
            to: 2,
            kind: EdgeKind::DependsOn,
        },
        Edge {
            from: 2,
            to: 3,
            kind: EdgeKind::DependsOn,
        },
        Edge {
            from: 0,
            to: 5,
            kind: EdgeKind::DecomposesTo,
        },
        // Names a node that does not exist: skipped.
        Edge {
            from: 0,
            to: 9,
            kind: EdgeKind::DependsOn,
        },
    ];
    let svg = hdag_svg::render(
        &nodes,
        &edges,
        &[
            "GOAL",
            "STRATEGY",
            "TACTIC",
            "STEP",
            "OPERATION",
            "left out",
        ],
    );
    assert!(svg.starts_with("<svg") && svg.ends_with("</svg>"));
    let b = boxes(&svg);
    assert_eq!(b.len(), 6);
    assert_eq!(svg.matches("tabindex=\"0\"").count(), 6);
    assert_eq!(svg.matches("<path class=\"e-dep\"").count(), 2);
    assert_eq!(svg.matches("<path class=\"e-dec\"").count(), 1);
    let classes: Vec<&str> = b.iter().map(|(c, _)| c.as_str()).collect();
    assert_eq!(
        classes,
        [
            "v-valid",
            "v-invalid",
            "v-propagated",
            "v-ungrounded",
            "v-none",
            "v-undecided"
        ]
    );
    // y grows with the row; nodes of one row share it; empty rows take no room.
    let y = |i: usize| b[i].1;
    assert_eq!(y(1), y(2));
    assert!(y(0) < y(5) && y(5) < y(1) && y(1) < y(3) && y(3) < y(4));
    assert_eq!(y(1) - y(5), y(5) - y(0), "no gap for the empty TACTIC row");
    // Titles are escaped; captions name only drawn rows.
    assert!(svg.contains("<title>row 3 &lt;b&gt;</title>"));
    assert!(svg.contains(">STEP</text>") && !svg.contains(">TACTIC</text>"));
}

/// The explorer shows a batch of votes with its session, its segments, and for reveals
/// each vote with its reason, escaped.
#[test]
fn batches_of_votes_read_with_their_segments_and_escaped_reasons() {
    use trust_protocol::{Salt, Signed, Vote, tx::Tx};
    let k = trust_protocol::Keypair::from_label("seat");
    let session = trust_protocol::Hash::sha256(b"session");
    let sign = |call| Signed::sign(&k, &trust_protocol::Hash::ZERO, Tx { nonce: 0, call });
    let commits = trust_protocol::tx::Call::batch(
        [4u16, 7]
            .into_iter()
            .map(|segment| trust_protocol::tx::Call::Commit {
                session,
                segment,
                commitment: trust_protocol::Hash::ZERO,
            })
            .collect(),
    )
    .unwrap();
    let (kind, details) = super::explorer::describe(&sign(commits));
    assert_eq!(kind, "Commits");
    assert!(
        details.contains(&format!("/sessions/{session}")),
        "{details}"
    );
    assert!(details.contains("2 segments: 4, 7"), "{details}");
    let reveals = trust_protocol::tx::Call::batch(
        [(4u16, Vote::Valid, "holds"), (7, Vote::Invalid, XSS)]
            .into_iter()
            .map(|(segment, vote, reason)| trust_protocol::tx::Call::Reveal {
                session,
                segment,
                vote,
                salt: Salt([1; 32]),
                reason: reason.into(),
            })
            .collect(),
    )
    .unwrap();
    let (kind, details) = super::explorer::describe(&sign(reveals));
    assert_eq!(kind, "Reveals");
    assert!(details.contains("4: Valid, “holds”"), "{details}");
    assert!(
        details.contains(&format!("7: Invalid, “{XSS_ESCAPED}”")),
        "{details}"
    );
    assert!(!details.contains(XSS));
    // Votes of two sessions: each session with its commitments and its reveals.
    let other = trust_protocol::Hash::sha256(b"other session");
    let votes = trust_protocol::tx::Call::batch(vec![
        trust_protocol::tx::Call::Commit {
            session,
            segment: 2,
            commitment: trust_protocol::Hash::ZERO,
        },
        trust_protocol::tx::Call::Reveal {
            session: other,
            segment: 5,
            vote: Vote::Ungrounded,
            salt: Salt([1; 32]),
            reason: XSS.into(),
        },
    ])
    .unwrap();
    let (kind, details) = super::explorer::describe(&sign(votes));
    assert_eq!(kind, "Votes");
    assert!(
        details.contains(&format!("/sessions/{session}")) && details.contains("commits 2"),
        "{details}"
    );
    assert!(
        details.contains(&format!("/sessions/{other}"))
            && details.contains(&format!("reveals 5: Ungrounded, “{XSS_ESCAPED}”")),
        "{details}"
    );
    assert!(!details.contains(XSS));
}

/// The explorer shows a provider's honeypot set opening as `RevealHoneypots`, with its
/// session and each opened segment's known verdict and difficulty.
#[test]
fn a_honeypot_set_opening_reads_with_its_segments() {
    use trust_protocol::{
        Salt, Signed, Vote,
        tx::{Call, Difficulty, HoneypotOpening, Tx},
    };
    let k = trust_protocol::Keypair::from_label("provider");
    let session = trust_protocol::Hash::sha256(b"session");
    let openings = Call::RevealHoneypots {
        session,
        openings: [
            (5u16, Vote::Invalid, Difficulty::Subtle),
            (2, Vote::Valid, Difficulty::Obvious),
        ]
        .into_iter()
        .map(|(segment, verdict, difficulty)| HoneypotOpening {
            segment,
            verdict,
            difficulty,
            salt: Salt([3; 32]),
        })
        .collect(),
        set_salt: Salt([4; 32]),
    };
    let tx = Signed::sign(
        &k,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: openings,
        },
    );
    let (kind, details) = super::explorer::describe(&tx);
    assert_eq!(kind, "RevealHoneypots");
    assert!(
        details.contains(&format!("/sessions/{session}")),
        "{details}"
    );
    assert!(
        details.contains("honeypot set of 2 segments: 5: Invalid (Subtle); 2: Valid (Obvious)"),
        "{details}"
    );
}

/// The explorer says which key a bad-key report names, of how many on record.
#[test]
fn a_bad_key_report_reads_with_the_key_it_names() {
    use trust_protocol::{
        Signed,
        badkey::{BadKeyProof, SharedSecret},
        seal::SealedKey,
        tx::{Call, DeliveredKey, Tx},
    };
    let k = trust_protocol::Keypair::from_label("seat");
    let session = trust_protocol::Hash::sha256(b"session");
    let key = |segment| DeliveredKey {
        segment,
        sealed: SealedKey {
            ephemeral: trust_protocol::SealingPublicKey([1; 32]),
            ciphertext: vec![0; 48],
        },
    };
    let tx = Signed::sign(
        &k,
        &trust_protocol::Hash::ZERO,
        Tx {
            nonce: 0,
            call: Call::ReportBadKey {
                session,
                segment: 5,
                keys: vec![key(5), key(2)],
                bad: 1,
                shared: SharedSecret([2; 32]),
                proof: BadKeyProof([3; 96]),
            },
        },
    );
    let (kind, details) = super::explorer::describe(&tx);
    assert_eq!(kind, "ReportBadKey");
    assert!(
        details.contains(&format!("/sessions/{session}")),
        "{details}"
    );
    assert!(
        details.contains("segment 5: the key of segment 2 does not open (2 keys on record"),
        "{details}"
    );
}
