//! The API over a real sled ledger and a chain driven through real blocks.

use axum::{body::Body, http::Request};
use serde_json::json;
use tokio::net::TcpListener;
use tower::ServiceExt;
use trust_contracts::{Event, Params};
use trust_protocol::{
    Salt, Vote, commitment, mapping_commitment,
    tx::{Call, QuorumParams, SegmentEntry, SessionManifest, Tier, Tx},
    units::Ppm,
};

use super::*;
use crate::{
    api::{
        client::{self, Client, ClientError},
        views::SubmittedView,
    },
    testchain::TestChain,
    view::PeerView,
};

/// The operator token of the test node.
const TOKEN: &str = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";

struct Net {
    api: Api,
    /// The chain the API reads, and the stand-in for its consensus driver.
    t: TestChain,
    _llm: watch::Sender<Option<LlmStatus>>,
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
    fn new() -> Self {
        Self::with_params(Params::default())
    }

    fn with_params(params: Params) -> Self {
        let t = TestChain::with_params(
            "n",
            &[],
            PeerView {
                peers: 3,
                heights: vec![("12D3KooWpeer".into(), 7)],
            },
            params,
        );
        let (llm, llm_watch) = watch::channel(None);
        Net {
            api: Api {
                node_id: t.keys[0].public(),
                validator: true,
                chain: t.chain_watch.clone(),
                peers: t.peer_watch.clone(),
                llm: llm_watch,
                pool: t.pool.clone(),
                ledger: t.ledger.clone(),
                metrics: Arc::new(ApiMetrics::default()),
                gossip: None,
                sources: Vec::new(),
                provider: None,
                genesis: None,
                validators: vec![t.keys[0].public()].into(),
                auth: Arc::new(crate::web::auth::Auth::new(
                    &crate::keys::OperatorToken::for_tests(TOKEN),
                )),
                limits: server::Limits::default(),
                events: None,
                outbox: None,
                replays: Default::default(),
            },
            t,
            _llm: llm,
        }
    }

    async fn send(&self, request: Request<Body>) -> (StatusCode, String) {
        let r = router(self.api.clone()).oneshot(request).await.unwrap();
        let status = r.status();
        let body = axum::body::to_bytes(r.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, String::from_utf8_lossy(&body).into_owned())
    }

    async fn get(&self, uri: &str) -> (StatusCode, String) {
        self.send(Request::get(uri).body(Body::empty()).unwrap())
            .await
    }

    /// Serves the API on loopback; its address and the sender that stops it.
    async fn serve(&self) -> (String, tokio::sync::oneshot::Sender<()>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap().to_string();
        let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(server::serve(
            listener,
            router(self.api.clone()),
            server::Limits::default(),
            async move {
                let _ = stop_rx.await;
            },
        ));
        (addr, stop_tx)
    }

    async fn post(&self, content_type: &str, body: Vec<u8>) -> (StatusCode, String) {
        let request = Request::post("/v1/tx")
            .header(header::CONTENT_TYPE, content_type)
            .body(Body::from(body))
            .unwrap();
        self.send(request).await
    }
}

fn json(s: &str) -> serde_json::Value {
    serde_json::from_str(s).unwrap_or_else(|e| panic!("{e}: {s}"))
}

#[tokio::test]
async fn transactions_in_and_blocks_out() {
    let mut net = Net::new();
    let to = net.keys[1].public();
    let tx = net.sign(0, Call::Transfer { to, amount: 7 });
    let (st, body) = net
        .post("application/octet-stream", encoding::encode(&tx))
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    assert_eq!(json(&body)["id"], tx.id().to_hex());
    let root = net.chain.current().contract.state_root();
    // The same again is a duplicate; garbage and oversized bodies are refused clearly.
    let (st, body) = net
        .post(
            "application/json",
            json!({"tx": hex::encode(encoding::encode(&tx))})
                .to_string()
                .into_bytes(),
        )
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(json(&body)["code"], "rejected");
    let (st, body) = net.post("application/octet-stream", vec![1, 2, 3]).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(json(&body)["code"], "bad_tx");
    let (st, _) = net.post("application/json", b"{\"tx\": 5}".to_vec()).await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    let (st, _) = net
        .post("application/octet-stream", vec![0; MAX_BODY_BYTES + 1])
        .await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE);
    assert_eq!(
        net.chain.current().contract.state_root(),
        root,
        "bad input changed the state"
    );

    let (_, status) = net.get("/v1/status").await;
    let status = json(&status);
    assert_eq!(status["peer_heights"][0]["height"], 7);
    assert_eq!(status["peers"], 3);
    assert_eq!(status["mempool"], 1);
    assert_eq!(status["validators"][0]["id"], net.keys[0].public().to_hex());
    assert_eq!(status["validators"][0]["power"], 1_000);
    assert_eq!(status["height"], 0);
    assert_eq!(
        status["state_root"],
        root.to_hex(),
        "bad input changed the state"
    );

    net.block(vec![]).await;
    let (st, body) = net.get("/v1/blocks/1").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let b = json(&body);
    assert_eq!(b["txs"][0]["id"], tx.id().to_hex());
    assert_eq!(b["hash"], net.tip.hash.to_hex());
    // Its time: the header's Unix milliseconds, and the same as RFC 3339.
    let ms = b["header"]["time_ms"].as_u64().expect("a header time");
    assert!(ms > 1_700_000_000_000, "stamped with the clock: {ms}");
    assert_eq!(b["time"], crate::chain::format_time(ms));
    let (st, body) = net.get("/v1/blocks/9").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(json(&body)["code"], "not_found");
    let (st, _) = net.get("/v1/blocks/x").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);

    let (_, m) = net.get("/metrics").await;
    assert!(m.contains("trust_height 1"), "{m}");
    assert!(m.contains("trust_mempool_txs 0"), "{m}");
    assert!(m.contains("trust_api_txs_accepted_total 1"), "{m}");
    assert!(m.contains("trust_api_txs_rejected_total 1"), "{m}");
    // Garbage and bad JSON; the oversized body never reached the handler (the server's
    // guard answered 413 before reading it).
    assert!(m.contains("trust_api_bad_requests_total 2"), "{m}");

    let (st, doc) = net.get("/v1/openapi.json").await;
    assert_eq!(st, StatusCode::OK);
    assert!(json(&doc)["paths"]["/v1/sessions/{id}"].is_object());
    // A session's revealed votes and their reasons are described.
    let cast = &json(&doc)["components"]["schemas"]["CastVote"]["properties"];
    for field in ["seat", "round", "vote", "reason", "counted"] {
        assert!(
            cast[field].is_object(),
            "CastVote.{field} undocumented: {doc}"
        );
    }

    // The web pages share the router; unknown routes still answer the API's JSON 404.
    let (st, page) = net.get("/blocks/1").await;
    assert_eq!(st, StatusCode::OK);
    assert!(page.starts_with("<!doctype html>"), "{page}");
    let (st, body) = net.get("/no/such/route").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(json(&body)["code"], "not_found");
}

/// A one-segment Computer session at the default quorum, its fee the minimum: the segment
/// and the manifest.
fn one_segment_session() -> (SegmentEntry, SessionManifest) {
    let seg = SegmentEntry {
        cid: trust_protocol::cid::Cid::of(b"c"),
        ..SegmentEntry::plain(Hash::sha256(b"segment"), Tier::Computer)
    };
    let mut m = SessionManifest {
        segments: vec![seg.clone()],
        mapping_commitment: mapping_commitment(&Hash::ZERO, &Salt([2; 32])),
        quorum: QuorumParams {
            k: [3, 3, 3],
            extra_seats: 0,
            tau: Ppm(600_000),
            beta: Ppm(600_000),
        },
        fee: 0,
        domain: String::new(),
        left_out: Vec::new(),
        terms: trust_protocol::tx::SessionTerms::default(),
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &trust_protocol::Salt([0; 32])),
    };
    m.fee = trust_contracts::minimum_fee(&Params::default(), &m).unwrap();
    (seg, m)
}

/// Seat `i`'s reason in [`Net::decide_one_session`], bound into its commitment; it needs
/// escaping in JSON.
fn why(i: usize) -> String {
    format!("seat {i}: 7 \"plus\" 3 is 10, not 11")
}

impl Net {
    /// Opens the one-segment session and decides it: its three seats commit and reveal
    /// Invalid (seat `i` with the reason `why(i)`), then the provider opens the mapping.
    /// The session, its seats (key indices) and the session's reply while it was live.
    async fn decide_one_session(&mut self) -> (Hash, Vec<usize>, String) {
        let (seg, m) = one_segment_session();
        let open = self.sign(0, Call::OpenSession(m));
        let sid = Tx::session_id(&self.keys[0].public(), open.body.nonce);
        self.block(vec![open]).await;
        let (_, live) = self.get(&format!("/v1/sessions/{sid}")).await;
        let ev = self.block(vec![]).await;
        let seats: Vec<usize> = ev
            .iter()
            .filter_map(|e| match e {
                Event::SeatAssigned { seat, .. } => {
                    self.keys.iter().position(|k| k.public() == *seat)
                }
                _ => None,
            })
            .collect();
        assert_eq!(seats.len(), 3);
        let salt = Salt([5; 32]);
        let commits = seats
            .iter()
            .map(|&i| {
                let c = commitment(
                    &sid,
                    &seg.id,
                    &self.keys[i].public(),
                    Vote::Invalid,
                    &salt,
                    &why(i),
                );
                self.sign(
                    i,
                    Call::Commit {
                        session: sid,
                        segment: 0,
                        commitment: c,
                    },
                )
            })
            .collect();
        self.block(commits).await;
        let reveals = seats
            .iter()
            .map(|&i| {
                self.sign(
                    i,
                    Call::Reveal {
                        session: sid,
                        segment: 0,
                        vote: Vote::Invalid,
                        salt,
                        reason: why(i),
                    },
                )
            })
            .collect();
        self.block(reveals).await;
        // The (empty) honeypot set first, then the mapping.
        let set = self.sign(
            0,
            Call::RevealHoneypots {
                session: sid,
                openings: Vec::new(),
                set_salt: Salt([0; 32]),
            },
        );
        self.block(vec![set]).await;
        let disclose = self.sign(
            0,
            Call::RevealMapping {
                session: sid,
                mapping: Hash::ZERO,
                salt: Salt([2; 32]),
            },
        );
        self.block(vec![disclose]).await;
        (sid, seats, live)
    }
}

#[tokio::test]
async fn a_session_is_queryable_with_the_block_that_decided_it() {
    let mut net = Net::new();
    let (sid, seats, live) = net.decide_one_session().await;
    assert_eq!(json(&live)["status"], "live");

    let (st, body) = net.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = json(&body);
    assert_eq!(v["status"], "decided", "{v}");
    assert_eq!(v["outcome"]["trace"], "fail");
    assert_eq!(v["outcome"]["segments"][0]["verdict"], "invalid");
    // Every revealed vote is listed with its seat and reason, in seat order.
    let cast = v["outcome"]["segments"][0]["votes_cast"]
        .as_array()
        .unwrap_or_else(|| panic!("no votes_cast: {v}"));
    assert_eq!(cast.len(), 3, "{v}");
    for (c, &i) in cast.iter().zip(&seats) {
        assert_eq!(c["seat"], net.keys[i].public().to_hex());
        assert_eq!(c["vote"], "invalid");
        assert_eq!(c["reason"], why(i));
        assert_eq!(c["counted"], true);
    }
    // Opened at 1, drawn at 2, committed, revealed, the honeypot set, the mapping: 6.
    assert_eq!(v["block_height"], 6);
    assert_eq!(v["block_hash"], net.tip.hash.to_hex());

    // The proof checks out against the genesis file alone, and names no other session.
    let (st, body) = net.get(&format!("/v1/sessions/{sid}/proof")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let p: crate::proof::OutcomeProof = serde_json::from_str(&body).unwrap();
    let anchor = crate::proof::Trust {
        chain: net.tip.chain,
        validators: &net.t.validators,
        genesis: &net.t.genesis_input,
        block: None,
    };
    let checked = crate::proof::verify(&p, &sid, &anchor).unwrap();
    assert_eq!(checked.header.hash(), net.tip.hash);
    assert_eq!(checked.outcome.trace, trust_contracts::TraceVerdict::Fail);
    // The proven outcome carries the reasons too.
    assert_eq!(
        checked.outcome.segments[0].votes_cast[0].reason,
        why(seats[0])
    );
    assert!(crate::proof::verify(&p, &Hash::sha256(b"nope"), &anchor).is_err());
    let (st, _) = net
        .get(&format!("/v1/sessions/{}/proof", Hash::sha256(b"nope")))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);

    let seat = net.keys[seats[0]].public();
    let (st, body) = net.get(&format!("/v1/auditors/{seat}")).await;
    assert_eq!(st, StatusCode::OK);
    let a = json(&body);
    assert_eq!(a["agreed"], 1);
    assert_eq!(a["earned"], 6);

    let (st, _) = net
        .get(&format!("/v1/sessions/{}", Hash::sha256(b"nope")))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    let (st, body) = net.get("/v1/sessions/zz").await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
    assert_eq!(json(&body)["code"], "bad_id");
    let (st, _) = net
        .get(&format!("/v1/auditors/{}", net.keys[0].public()))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND, "node 0 is not an auditor");
}

/// `typed`, written back as JSON, is `raw`: the view read every field the node sent, under
/// its name, and lost nothing (so `--json`, which prints the view, prints what the node
/// said).
fn reads_back<T: serde::Serialize>(typed: &T, raw: &serde_json::Value) {
    assert_eq!(
        &serde_json::to_value(typed).unwrap(),
        raw,
        "{} does not read back the reply",
        std::any::type_name::<T>()
    );
}

/// Every route the CLI reads, asked through the typed client of a served node: each real
/// reply reads as its view type and nothing is lost, so a renamed or dropped field fails
/// here rather than in a command's output.
#[tokio::test]
async fn the_client_reads_every_reply_the_cli_uses_as_its_view() {
    let (mut net, _provider, _blobs) = Net::with_provider(Default::default());
    net._llm.send_replace(Some(LlmStatus {
        url: "http://127.0.0.1:9/v1".into(),
        model: "m".into(),
        answers: false,
        error: Some("connection refused".into()),
    }));
    let (addr, _stop) = net.serve().await;
    let api = Client::new(addr.as_str());
    let raw = |path: String| {
        let addr = addr.clone();
        async move { client::get(&addr, &path).await.unwrap() }
    };

    // POST /v1/tx, then GET /v1/tx/{id} while pooled and once included.
    let to = net.keys[1].public();
    let tx = net.sign(0, Call::Transfer { to, amount: 7 });
    assert_eq!(api.submit_tx(&tx).await.unwrap().id, tx.id());
    let pending = api.tx_location(&tx.id()).await.unwrap();
    assert_eq!(pending.status, views::TxStatus::Pending);
    reads_back(&pending, &raw(format!("/v1/tx/{}", tx.id())).await);
    net.block(vec![]).await;
    let included = api.tx_location(&tx.id()).await.unwrap();
    assert_eq!(
        (included.status, included.height, included.index),
        (views::TxStatus::Included, Some(1), Some(0))
    );
    reads_back(&included, &raw(format!("/v1/tx/{}", tx.id())).await);

    // GET /v1/accounts/{id}
    let me = net.keys[0].public();
    let account = api.account(&me).await.unwrap();
    assert_eq!((account.id, account.nonce, account.next_nonce), (me, 1, 1));
    reads_back(&account, &raw(format!("/v1/accounts/{me}")).await);

    // GET /v1/sessions/{id}: live, then decided; its proof.
    let (sid, seats, live_body) = net.decide_one_session().await;
    let live: views::SessionView = serde_json::from_str(&live_body).unwrap();
    assert_eq!(live.status, views::SessionStatus::Live);
    assert!(
        matches!(
            live.phase,
            Some(views::PhaseView {
                name: views::SeatPhase::Assigning,
                round: None,
                until: None
            })
        ),
        "{live:?}"
    );
    // The phase is an object, whatever the phase.
    assert!(
        json(&live_body)["phase"]["name"] == "assigning",
        "{live_body}"
    );
    reads_back(&live, &json(&live_body));
    let decided = api.session(&sid).await.unwrap();
    assert_eq!(decided.status, views::SessionStatus::Decided);
    let outcome = decided.outcome.clone().unwrap();
    assert_eq!(outcome.trace, trust_contracts::TraceVerdict::Fail);
    assert_eq!(outcome.segments[0].votes_cast[0].reason, why(seats[0]));
    assert_eq!(decided.block_height, Some(net.tip.height));
    // When: the deciding block's time.
    let stored = net.ledger.block(net.tip.height).unwrap().unwrap();
    assert_eq!(decided.decided_time_ms, Some(stored.block.header.time_ms));
    assert_eq!(
        decided.decided_time,
        Some(crate::chain::format_time(stored.block.header.time_ms))
    );
    reads_back(&decided, &raw(format!("/v1/sessions/{sid}")).await);
    let proof = api.session_proof(&sid, None).await.unwrap();
    let anchor = crate::proof::Trust {
        chain: net.tip.chain,
        validators: &net.t.validators,
        genesis: &net.t.genesis_input,
        block: None,
    };
    let checked = crate::proof::verify(&proof, &sid, &anchor).unwrap();
    assert_eq!(checked.outcome, outcome);

    // GET /v1/auditors/{id}, holding a seat in a live session.
    let (_, m) = one_segment_session();
    let open = net.sign(0, Call::OpenSession(m));
    let second = Tx::session_id(&me, open.body.nonce);
    net.block(vec![open]).await;
    net.block(vec![]).await;
    let seat = net.keys[seats[0]].public();
    let auditor = api.auditor(&seat).await.unwrap();
    assert_eq!(
        (auditor.id, auditor.agreed, auditor.tier),
        (seat, 1, Tier::Computer)
    );
    assert!(
        auditor
            .seats
            .iter()
            .any(|x| x.session == second && x.phase == views::SeatPhase::Commit),
        "{auditor:?}"
    );
    reads_back(&auditor, &raw(format!("/v1/auditors/{seat}")).await);

    // GET /v1/status, with an LLM endpoint that does not answer.
    let status = api.status().await.unwrap();
    assert_eq!(status.node_id, me);
    assert_eq!(status.height, net.tip.height);
    assert_eq!(status.peer_heights[0].height, 7);
    assert_eq!(status.validators[0].id, me);
    assert_eq!(
        status.llm.as_ref().and_then(|l| l.error.as_deref()),
        Some("connection refused")
    );
    reads_back(&status, &raw("/v1/status".into()).await);

    // POST /v1/sessions, as the provider.
    let body = views::OpenSessionBody {
        trace: FRACTION.to_string().into(),
        hdag: None,
        session: None,
        labels: Default::default(),
    };
    let raw_opened = client::post_authorized(
        &addr,
        "/v1/sessions",
        &serde_json::to_value(&body).unwrap(),
        Some(TOKEN),
    )
    .await
    .unwrap();
    let opened: SubmittedView = serde_json::from_value(raw_opened.clone()).unwrap();
    reads_back(&opened, &raw_opened);
    let again = api.open_session(&body, Some(TOKEN)).await.unwrap();
    assert!(again.fee > 0 && !again.segments.is_empty(), "{again:?}");
    assert_ne!(again.session, opened.session);

    // An error answer is the API's error body.
    match api.session(&Hash::sha256(b"nope")).await {
        Err(ClientError::Api { status, code, .. }) => {
            assert_eq!((status, code.as_str()), (404, "not_found"))
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn session_bodies_may_carry_the_largest_trace_and_no_more() {
    let net = Net::new();
    // A session body may be as large as the protocol's trace limit (this node runs no
    // provider, so it is read and then declined), but not larger than its own cap.
    let trace = "x".repeat(trust_protocol::trace::MAX_TRACE_BYTES);
    let session = |body: Vec<u8>| {
        Request::post("/v1/sessions")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {TOKEN}"))
            .body(Body::from(body))
            .unwrap()
    };
    let (st, body) = net
        .send(session(json!({"trace": trace}).to_string().into_bytes()))
        .await;
    assert_eq!(st, StatusCode::NOT_IMPLEMENTED, "{body}");
    let (st, body) = net
        .send(session(vec![b' '; super::MAX_SESSION_BODY_BYTES + 1]))
        .await;
    assert_eq!(st, StatusCode::PAYLOAD_TOO_LARGE, "{body}");
}

impl Net {
    /// A node that runs a provider within `cap`; the provider and its blob store.
    fn with_provider(cap: crate::audit::provider::SpendingCap) -> (Self, Arc<Provider>, BlobStore) {
        Self::with_provider_planting(cap, 0)
    }

    /// A node that runs a provider within `cap`, planting up to `honeypots` honeypots a
    /// session.
    fn with_provider_planting(
        cap: crate::audit::provider::SpendingCap,
        honeypots: usize,
    ) -> (Self, Arc<Provider>, BlobStore) {
        let mut net = Net::new();
        let blobs = BlobStore::open(&net.t.db).unwrap();
        let outbox = crate::audit::outbox::Outbox::new(
            net.t.keys[0].clone(),
            net.t.chain_watch.clone(),
            net.t.pool.clone(),
            None,
        );
        let p = Arc::new(
            Provider::open(outbox, blobs.clone(), &net.t.db)
                .unwrap()
                .with_honeypots(honeypots)
                .with_spending_cap(cap),
        );
        net.api.provider = Some(p.clone());
        (net, p, blobs)
    }

    /// `POST /v1/sessions` of the fraction trace with `headers`.
    async fn open(&self, headers: &[(&str, &str)]) -> (StatusCode, String) {
        let mut r = Request::post("/v1/sessions").header(header::CONTENT_TYPE, "application/json");
        for (k, v) in headers {
            r = r.header(*k, *v);
        }
        self.send(
            r.body(Body::from(json!({"trace": FRACTION}).to_string()))
                .unwrap(),
        )
        .await
    }
}

use crate::blobs::BlobStore;

const FRACTION: &str = "## Problem Statement\nThe denominator of a fraction is 7 less than 3 times the numerator. If the fraction is equivalent to 2/5, what is the numerator?\n## Thinking Process\n1. Let the numerator be x\n2. So x / (3x - 7) = 2/5\n3. Therefore, 5x = 6x - 14\n## Final Output\nx = 14\n";

/// The JSON error body of `body`, checked to carry the code of `status`.
fn error_of(status: StatusCode, body: &str) -> String {
    let v = json(body);
    // 400 names what was malformed (bad_json, bad_id, ...); every other status has one code.
    if status == StatusCode::BAD_REQUEST {
        assert!(
            v["code"].as_str().is_some_and(|c| c.starts_with("bad_")),
            "{body}"
        );
    } else {
        assert_eq!(v["code"], server::code_for(status), "{status}: {body}");
    }
    v["message"].as_str().expect("a message").to_string()
}

#[tokio::test]
async fn opening_a_session_needs_the_operator_token_and_refusals_change_nothing() {
    let (net, provider, blobs) = Net::with_provider(Default::default());
    let bearer = format!("Bearer {TOKEN}");
    let wrong = format!("Bearer {}", "f".repeat(64));
    let refused: [&[(&str, &str)]; 5] = [
        &[],
        &[("authorization", &wrong)],
        &[("authorization", "Basic dXNlcjpwYXNz")],
        &[("authorization", "Bearer ")],
        &[("cookie", "trust_audit=0123456789abcdef")],
    ];
    for headers in refused {
        let (st, body) = net.open(headers).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{headers:?}: {body}");
        assert!(error_of(st, &body).contains("operator token"), "{body}");
    }
    // Nothing was stored or sent.
    assert_eq!(net.t.pool.count().await.unwrap(), 0);
    assert!(blobs.is_empty());
    assert_eq!(provider.spent_since_yesterday(u64::MAX / 2).unwrap(), 0);

    let (st, body) = net.open(&[("authorization", &bearer)]).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    assert!(json(&body)["fee"].as_u64().unwrap() > 0);
    assert_eq!(net.t.pool.count().await.unwrap(), 1, "the OpenSession");
}

/// `POST /v1/sessions/{id}/appeals`: the operator token first, then a malformed body 400,
/// an unknown session 404, and the contract's own reason with 422 (here: too few fresh
/// auditors for `2k + 1` seats), nothing sent; a decided session says it is appealable.
#[tokio::test]
async fn an_appeal_needs_the_token_and_a_refusal_names_the_contracts_reason() {
    let mut net = Net::new();
    let (sid, _, _) = net.decide_one_session().await;
    net.api.outbox = Some(crate::audit::outbox::Outbox::new(
        net.t.keys[0].clone(),
        net.t.chain_watch.clone(),
        net.t.pool.clone(),
        None,
    ));
    let post = |path: String, body: &str, token: bool| {
        let mut r = Request::post(path).header(header::CONTENT_TYPE, "application/json");
        if token {
            r = r.header(header::AUTHORIZATION, format!("Bearer {TOKEN}"));
        }
        r.body(Body::from(body.to_string())).unwrap()
    };
    let path = format!("/v1/sessions/{sid}/appeals");
    let (st, body) = net
        .send(post(path.clone(), r#"{"segments": [0]}"#, false))
        .await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "{body}");
    let (st, body) = net
        .send(post(path.clone(), r#"{"segments": []}"#, true))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    error_of(st, &body);
    let (st, body) = net.send(post(path.clone(), r#"{"segs": [0]}"#, true)).await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    let unknown = format!("/v1/sessions/{}/appeals", Hash::sha256(b"nope"));
    let (st, body) = net.send(post(unknown, r#"{"segments": [0]}"#, true)).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    let (st, body) = net
        .send(post(path.clone(), r#"{"segments": [0]}"#, true))
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    let why = error_of(st, &body);
    assert!(why.contains("segment 0"), "{why}");
    let (st, body) = net.send(post(path, r#"{"segments": [7]}"#, true)).await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(net.t.pool.count().await.unwrap(), 0, "nothing sent");
    // The decided session is appealable until its window closes.
    let (_, body) = net.get(&format!("/v1/sessions/{sid}")).await;
    let v = json(&body);
    assert_eq!(v["finality"]["state"], "appealable", "{v}");
    let until = v["finality"]["until"].as_u64().unwrap();
    assert_eq!(
        until,
        v["block_height"].as_u64().unwrap() + Params::default().appeal_window
    );
}

#[tokio::test]
async fn a_rotated_token_is_refused_and_the_new_one_accepted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("operator.token");
    let old = crate::keys::generate_operator_token(&path).unwrap();
    let (mut net, _provider, _blobs) = Net::with_provider(Default::default());
    net.api.auth = Arc::new(crate::web::auth::Auth::from_file(&path).unwrap());
    let old_bearer = format!("Bearer {}", old.expose());
    let (st, body) = net.open(&[("authorization", &old_bearer)]).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");

    let new = crate::keys::rotate_operator_token(&path).unwrap();
    assert_ne!(new, old);
    let (st, body) = net.open(&[("authorization", &old_bearer)]).await;
    assert_eq!(st, StatusCode::UNAUTHORIZED, "the old token: {body}");
    let pooled = net.t.pool.count().await.unwrap();
    let (st, body) = net
        .open(&[("authorization", &format!("Bearer {}", new.expose()))])
        .await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    assert_eq!(net.t.pool.count().await.unwrap(), pooled + 1);
}

#[tokio::test]
async fn a_session_over_the_spending_cap_is_refused_with_403_and_changes_nothing() {
    let (net, provider, blobs) = Net::with_provider(crate::audit::provider::SpendingCap {
        per_session: Some(1),
        per_day: None,
    });
    let bearer = format!("Bearer {TOKEN}");
    let (st, body) = net.open(&[("authorization", &bearer)]).await;
    assert_eq!(st, StatusCode::FORBIDDEN, "{body}");
    assert!(
        error_of(st, &body).contains("max_fee_per_session"),
        "{body}"
    );
    assert_eq!(net.t.pool.count().await.unwrap(), 0);
    assert!(blobs.is_empty());
    assert_eq!(provider.spent_since_yesterday(u64::MAX / 2).unwrap(), 0);
}

/// Every error, whoever raised it (handler, extractor, router, guard), has the JSON body
/// with the code of its status.
#[tokio::test]
async fn every_error_status_has_the_json_error_body() {
    let (net, _provider, _blobs) = Net::with_provider(Default::default());
    let bearer = format!("Bearer {TOKEN}");
    let long_path = format!("/v1/tx/{}", "a".repeat(server::MAX_URI_BYTES + 1));
    let big = (50u64 << 20).to_string();
    let cases: Vec<(Request<Body>, StatusCode)> = vec![
        (
            Request::get("/no/such/route").body(Body::empty()).unwrap(),
            StatusCode::NOT_FOUND,
        ),
        (
            Request::get("/v1/tx/nothex").body(Body::empty()).unwrap(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Request::delete("/v1/status").body(Body::empty()).unwrap(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Request::delete("/v1/sessions").body(Body::empty()).unwrap(),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            Request::get(long_path.as_str())
                .body(Body::empty())
                .unwrap(),
            StatusCode::URI_TOO_LONG,
        ),
        (
            (0..server::MAX_HEADERS + 1)
                .fold(Request::get("/v1/status"), |r, i| {
                    r.header(format!("x-h{i}"), "v")
                })
                .body(Body::empty())
                .unwrap(),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ),
        (
            Request::post("/v1/tx")
                .header(header::CONTENT_LENGTH, big.as_str())
                .body(Body::empty())
                .unwrap(),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            Request::post("/v1/tx")
                .body(Body::from(vec![0u8; MAX_BODY_BYTES + 1]))
                .unwrap(),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            Request::post("/v1/sessions")
                .header(header::AUTHORIZATION, bearer.as_str())
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(vec![b' '; MAX_SESSION_BODY_BYTES + 1]))
                .unwrap(),
            StatusCode::PAYLOAD_TOO_LARGE,
        ),
        (
            Request::post("/v1/sessions")
                .header(header::AUTHORIZATION, bearer.as_str())
                .header(header::CONTENT_TYPE, "text/plain")
                .body(Body::from("{}"))
                .unwrap(),
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
        ),
        (
            Request::post("/v1/sessions")
                .header(header::AUTHORIZATION, bearer.as_str())
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from("{\"trace\": 5"))
                .unwrap(),
            StatusCode::BAD_REQUEST,
        ),
        (
            Request::post("/v1/sessions")
                .header(header::AUTHORIZATION, bearer.as_str())
                .header(header::CONTENT_TYPE, "application/json")
                .body(Body::from(json!({"trace": "not a trace"}).to_string()))
                .unwrap(),
            StatusCode::UNPROCESSABLE_ENTITY,
        ),
        (
            Request::post("/v1/tx")
                .header(header::CONTENT_TYPE, "application/octet-stream")
                .body(Body::from(vec![1u8, 2, 3]))
                .unwrap(),
            StatusCode::BAD_REQUEST,
        ),
    ];
    for (request, want) in cases {
        let what = format!("{} {}", request.method(), request.uri().path());
        let (st, body) = net.send(request).await;
        assert_eq!(st, want, "{what}: {body}");
        error_of(st, &body);
    }
    assert_eq!(net.t.pool.count().await.unwrap(), 0, "nothing was admitted");
}

/// The document is generated from the router's own list: every operation it names is
/// served (never the router's "no such route"), and the routes a client needs are there.
#[tokio::test]
async fn the_openapi_document_and_the_router_agree() {
    let net = Net::new();
    let (st, body) = net.get("/v1/openapi.json").await;
    assert_eq!(st, StatusCode::OK);
    let doc = json(&body);
    let paths = doc["paths"].as_object().unwrap();
    for want in [
        "/v1/status",
        "/v1/tx",
        "/v1/tx/{id}",
        "/v1/blocks/{height}",
        "/v1/sessions",
        "/v1/sessions/{id}",
        "/v1/accounts/{id}",
        "/v1/auditors/{id}",
        "/v1/events",
        "/metrics",
        "/v1/openapi.json",
    ] {
        assert!(paths.contains_key(want), "{want} missing from the document");
    }
    assert_eq!(
        doc["paths"]["/v1/sessions"]["post"]["security"][0]["operator_token"],
        json!([])
    );
    assert_eq!(
        doc["components"]["securitySchemes"]["operator_token"]["scheme"],
        "bearer"
    );
    for (path, item) in paths {
        for method in item.as_object().unwrap().keys() {
            let uri = path
                .replace("{id}", &"0".repeat(64))
                .replace("{height}", "1");
            let request = Request::builder()
                .method(method.to_uppercase().as_str())
                .uri(uri.as_str())
                .body(Body::empty())
                .unwrap();
            let (_, body) = net.send(request).await;
            assert!(!body.contains("no such route"), "{method} {path}: {body}");
        }
    }
}

/// The event stream over a real loopback server, fed by a stand-in for the consensus
/// driver's broadcast (the blocks are real: built, executed and stored by the test chain).
mod stream {
    use std::time::Duration;

    use tokio::sync::broadcast;

    use super::*;
    use crate::{
        api::client::{EventStream, SseFrame},
        consensus::driver::Decided,
        feed::{FeedEvent, Kind},
    };

    const WAIT: Duration = Duration::from_secs(20);

    impl Net {
        /// A node whose API streams events: each client queues `queue` events, and at most
        /// `subscribers` stream at once.
        fn with_events(queue: usize, subscribers: usize) -> (Self, broadcast::Sender<Decided>) {
            let mut net = Net::new();
            let (tx, _) = broadcast::channel(64);
            net.api.events = Some(EventHub::with_limits(tx.clone(), queue, subscribers));
            (net, tx)
        }

        /// Announces the tip block as the driver does once it is stored.
        fn publish(&self, tx: &broadcast::Sender<Decided>) {
            let h = self.tip.height;
            let stored = self.ledger.block(h).unwrap().unwrap();
            let feed = self
                .ledger
                .events(h)
                .unwrap()
                .expect("the block's feed is stored");
            let _ = tx.send(Decided {
                state_root: stored.block.header.state_root,
                block: Arc::new(stored.block),
                events: Arc::new(Vec::new()),
                feed: Arc::new(feed),
            });
        }

        /// Opens, draws, commits, reveals and discloses a one-segment session, announcing
        /// each block; its id. Every seat gives the same reason.
        async fn decided_session(&mut self, tx: &broadcast::Sender<Decided>) -> Hash {
            let (seg, m) = one_segment_session();
            let open = self.sign(0, Call::OpenSession(m));
            let sid = Tx::session_id(&self.keys[0].public(), open.body.nonce);
            self.block(vec![open]).await;
            self.publish(tx);
            let ev = self.block(vec![]).await;
            self.publish(tx);
            let seats: Vec<usize> = ev
                .iter()
                .filter_map(|e| match e {
                    Event::SeatAssigned { seat, .. } => {
                        self.keys.iter().position(|k| k.public() == *seat)
                    }
                    _ => None,
                })
                .collect();
            let salt = Salt([5; 32]);
            let commits = seats
                .iter()
                .map(|&i| {
                    let c = commitment(
                        &sid,
                        &seg.id,
                        &self.keys[i].public(),
                        Vote::Invalid,
                        &salt,
                        "2 + 2 is not 5",
                    );
                    self.sign(
                        i,
                        Call::Commit {
                            session: sid,
                            segment: 0,
                            commitment: c,
                        },
                    )
                })
                .collect();
            self.block(commits).await;
            self.publish(tx);
            let reveals = seats
                .iter()
                .map(|&i| {
                    self.sign(
                        i,
                        Call::Reveal {
                            session: sid,
                            segment: 0,
                            vote: Vote::Invalid,
                            salt,
                            reason: "2 + 2 is not 5".to_string(),
                        },
                    )
                })
                .collect();
            self.block(reveals).await;
            self.publish(tx);
            // The (empty) honeypot set first, then the mapping.
            let set = self.sign(
                0,
                Call::RevealHoneypots {
                    session: sid,
                    openings: Vec::new(),
                    set_salt: Salt([0; 32]),
                },
            );
            self.block(vec![set]).await;
            self.publish(tx);
            let disclose = self.sign(
                0,
                Call::RevealMapping {
                    session: sid,
                    mapping: Hash::ZERO,
                    salt: Salt([2; 32]),
                },
            );
            self.block(vec![disclose]).await;
            self.publish(tx);
            sid
        }

        /// Every stored event from height 1 to the tip.
        fn stored(&self) -> Vec<FeedEvent> {
            (1..=self.tip.height)
                .flat_map(|h| self.ledger.events(h).unwrap().unwrap())
                .collect()
        }
    }

    async fn take(s: &mut EventStream, n: usize) -> Vec<SseFrame> {
        let mut out = Vec::new();
        while out.len() < n {
            let f = tokio::time::timeout(WAIT, s.next())
                .await
                .expect("an event in time")
                .unwrap()
                .expect("the stream stays open");
            out.push(f);
        }
        out
    }

    fn ids(frames: &[SseFrame]) -> Vec<String> {
        frames.iter().map(|f| f.id.clone()).collect()
    }

    fn feed_ids(events: &[FeedEvent]) -> Vec<String> {
        events.iter().map(|e| e.id.clone()).collect()
    }

    /// A stream opened before a session sees every stored event in order; one resumed
    /// with `Last-Event-ID` midway gets exactly the rest from the ledger and then goes on
    /// live without a gap or a repeat; filters and `?after=` select; bad input is 400;
    /// closing the hub ends the streams.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_resumed_stream_misses_nothing_and_repeats_nothing() {
        let (mut net, tx) = Net::with_events(crate::api::events::CLIENT_QUEUE, 8);
        let (addr, _stop) = net.serve().await;
        let mut live = EventStream::open(&addr, "/v1/events", None).await.unwrap();
        let sid = net.decided_session(&tx).await;
        let all = net.stored();
        let kinds: Vec<Kind> = all.iter().map(|e| e.kind).collect();
        for k in [
            Kind::SessionOpened,
            Kind::SeatDrawn,
            Kind::RevealDue,
            Kind::SegmentDecided,
            Kind::SessionDecided,
            Kind::Reward,
        ] {
            assert!(kinds.contains(&k), "no {k} in {kinds:?}");
        }
        let seen = take(&mut live, all.len()).await;
        assert_eq!(ids(&seen), feed_ids(&all));
        let data: FeedEvent = serde_json::from_str(&seen[0].data).unwrap();
        assert_eq!(data, all[0]);
        assert_eq!(seen[0].event, all[0].kind.name());

        // Resumed after the third event: the rest, from the ledger.
        let mut resumed = EventStream::open(&addr, "/v1/events", Some(&all[2].id))
            .await
            .unwrap();
        let rest = take(&mut resumed, all.len() - 3).await;
        assert_eq!(ids(&rest), feed_ids(&all[3..]));

        // Then live: the next block's events follow without a repeat.
        let to = net.keys[1].public();
        let bond = net.sign(2, Call::Bond { amount: 1 });
        let transfer = net.sign(0, Call::Transfer { to, amount: 1 });
        net.block(vec![bond, transfer]).await;
        net.publish(&tx);
        let next = net.ledger.events(net.tip.height).unwrap().unwrap();
        assert_eq!(next.len(), 1, "{next:?}");
        assert_eq!(ids(&take(&mut resumed, 1).await), feed_ids(&next));
        assert_eq!(ids(&take(&mut live, 1).await), feed_ids(&next));

        // Filters and ?after: the session's rewards and reveal deadlines only.
        let seat = all
            .iter()
            .find(|e| e.kind == Kind::Reward)
            .unwrap()
            .account
            .unwrap();
        let path = format!(
            "/v1/events?session={sid}&kind=reward,reveal_due&kind=slash&account={seat}&after=0"
        );
        let mut filtered = EventStream::open(&addr, &path, None).await.unwrap();
        let want: Vec<FeedEvent> = all
            .iter()
            .filter(|e| {
                e.session == Some(sid)
                    && e.account == Some(seat)
                    && matches!(e.kind, Kind::Reward | Kind::RevealDue | Kind::Slash)
            })
            .cloned()
            .collect();
        assert!(want.len() >= 2, "{want:?}");
        assert_eq!(ids(&take(&mut filtered, want.len()).await), feed_ids(&want));

        // Bad filters and ids: 400 with the JSON error, nothing opened.
        for (path, id, code) in [
            ("/v1/events?account=zz", None, "bad_account"),
            ("/v1/events?session=12", None, "bad_session"),
            ("/v1/events?kind=seat_drawn,nope", None, "bad_kind"),
            ("/v1/events?after=1:x", None, "bad_event_id"),
            ("/v1/events?color=red", None, "bad_query"),
            ("/v1/events", Some("yesterday"), "bad_event_id"),
        ] {
            match EventStream::open(&addr, path, id).await {
                Err(crate::api::client::ClientError::Api {
                    status,
                    code: c,
                    message,
                }) => {
                    assert_eq!((status, c.as_str()), (400, code), "{path}: {message}");
                }
                other => panic!("{path}: {other:?}"),
            }
        }

        // The node stops: every stream ends.
        net.api.events.as_ref().unwrap().close();
        for s in [&mut live, &mut resumed, &mut filtered] {
            let end = tokio::time::timeout(WAIT, s.next())
                .await
                .expect("ends in time");
            assert!(end.unwrap().is_none(), "a stream outlived the stop");
        }
    }

    /// A client that stops reading is dropped once its queue is full, with a final
    /// `dropped` event naming the last event it was sent, while another client receives
    /// everything; over the subscriber cap a stream is refused with 503.
    /// Streams open at once in [`dropped_filtered_streams_leave_no_more_tasks_than_the_cap_and_status_is_answered`].
    const CAP: usize = 1;

    /// Streams that ask for the whole history filtered to an account that has no event,
    /// and leave at once: the tasks reading the ledger for them stop with them (at most
    /// the cap are ever alive; a stream past the cap is answered 503), and the node keeps
    /// answering `GET /v1/status` meanwhile. Before, a replay task kept scanning the whole
    /// history after its client left, without yielding, while its slot was already free
    /// for the next client: tasks piled up on the two worker threads.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropped_filtered_streams_leave_no_more_tasks_than_the_cap_and_status_is_answered() {
        const BLOCKS: u64 = 40;
        const PER_BLOCK: usize = 2_000;
        let (mut net, _tx) = Net::with_events(crate::api::events::CLIENT_QUEUE, CAP);
        for _ in 0..BLOCKS {
            net.block(vec![]).await;
        }
        // The same blocks in a ledger whose feeds are long (the events are never sent:
        // the filter matches none), so that reading the history takes a while.
        let dir = tempfile::tempdir().unwrap();
        let fat = crate::ledger::Ledger::open(dir.path()).unwrap();
        for h in 1..=BLOCKS {
            let stored = net.ledger.block(h).unwrap().unwrap();
            let feed: Vec<FeedEvent> = (0..PER_BLOCK)
                .map(|i| {
                    serde_json::from_value(json!({
                        "id": format!("{h}:{i}"), "height": h, "kind": "slash",
                        "reason": "a long history nobody asked for",
                    }))
                    .unwrap()
                })
                .collect();
            fat.append_with_feed(&stored, &[], &feed, false, &[])
                .unwrap();
        }
        net.api.ledger = fat;
        let hub = net.api.events.clone().unwrap();
        // The node's runtime (this test's, two workers) serves; the clients run on a
        // thread of their own, as remote clients would, so that a starved node runtime
        // cannot slow them down and hide a pile-up.
        let (addr, _stop) = net.serve().await;
        let clients = std::thread::spawn({
            let hub = hub.clone();
            move || {
                let rt = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                rt.block_on(drop_streams(addr, hub))
            }
        });
        let (opened, refused, most) = tokio::task::spawn_blocking(move || clients.join())
            .await
            .unwrap()
            .unwrap();
        // Every task ends once its client has gone.
        let deadline = tokio::time::Instant::now() + WAIT;
        while hub.pumps() > 0 {
            assert!(
                tokio::time::Instant::now() < deadline,
                "{} replay tasks outlived their clients",
                hub.pumps()
            );
            tokio::task::yield_now().await;
        }
        println!(
            "{opened} streams opened and dropped, {refused} refused at the cap of {CAP}; at most {most} replay tasks alive"
        );
        assert!(opened >= CAP, "{opened} opened");
    }

    /// 500 streams over the whole history for an account with no event, each dropped
    /// as soon as it opens; `GET /v1/status` every 25. Opened, refused (503) and the most
    /// replay tasks seen alive.
    async fn drop_streams(addr: String, hub: EventHub) -> (usize, usize, usize) {
        let nobody = trust_protocol::Keypair::from_label("nobody")
            .public()
            .to_hex();
        let path = format!("/v1/events?account={nobody}&after=0");
        let client = crate::api::client::Client::new(addr.clone());
        let (mut opened, mut refused, mut most) = (0, 0, 0);
        for i in 0..500 {
            match EventStream::open(&addr, &path, None).await {
                Ok(stream) => {
                    opened += 1;
                    drop(stream);
                }
                Err(crate::api::client::ClientError::Api { status: 503, .. }) => refused += 1,
                Err(e) => panic!("stream {i}: {e}"),
            }
            let alive = hub.pumps();
            most = most.max(alive);
            assert!(
                alive <= CAP,
                "{alive} replay tasks alive, past the cap of {CAP}"
            );
            if i % 25 == 0 {
                let status = tokio::time::timeout(WAIT, client.status()).await;
                assert!(
                    matches!(status, Ok(Ok(_))),
                    "status not answered during the drops: {status:?}"
                );
            }
        }
        (opened, refused, most)
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stalled_client_is_dropped_and_told_where_to_resume() {
        const PER_BLOCK: usize = 32;
        let (mut net, tx) = Net::with_events(64, 2);
        // Any real block will do to carry the synthetic feeds below.
        net.block(vec![]).await;
        let carrier = Arc::new(net.ledger.block(1).unwrap().unwrap().block);
        let hub = net.api.events.clone().unwrap();
        let (addr, _stop) = net.serve().await;
        let mut healthy = EventStream::open(&addr, "/v1/events", None).await.unwrap();
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let conn = socket.connect(addr.parse().unwrap()).await.unwrap();
        let mut stalled = EventStream::open_on(conn, &addr, "/v1/events", None)
            .await
            .unwrap();
        // Two open: a third is refused.
        match EventStream::open(&addr, "/v1/events", None).await {
            Err(crate::api::client::ClientError::Api { status: 503, .. }) => {}
            other => panic!("a third stream: {other:?}"),
        }

        // Fat synthetic blocks (never stored; the stream only relays them) until the
        // stalled client's socket and queue are full.
        let pad = "x".repeat(2048);
        // Live streams start after the tip.
        let first = net.tip.height + 1;
        let mut height = net.tip.height;
        while hub.dropped() == 0 {
            height += 1;
            assert!(
                height < first + 2000,
                "the stalled client was never dropped"
            );
            let feed: Vec<FeedEvent> = (0..PER_BLOCK)
                .map(|i| {
                    serde_json::from_value(json!({
                        "id": format!("{height}:{i}"), "height": height, "kind": "slash",
                        "reason": pad,
                    }))
                    .unwrap()
                })
                .collect();
            let _ = tx.send(Decided {
                block: carrier.clone(),
                events: Arc::new(Vec::new()),
                feed: Arc::new(feed),
                state_root: Hash::ZERO,
            });
            // The healthy client keeps up, block by block.
            let got = take(&mut healthy, PER_BLOCK).await;
            assert_eq!(got[0].id, format!("{height}:0"));
            assert_eq!(got[PER_BLOCK - 1].id, format!("{height}:{}", PER_BLOCK - 1));
        }
        assert_eq!(hub.dropped(), 1, "only the stalled client was dropped");

        // The stalled client reads at last: a run of consecutive events from the start,
        // then `dropped` naming the last of them, then the end.
        let mut frames = Vec::new();
        while let Some(f) = tokio::time::timeout(WAIT, stalled.next())
            .await
            .expect("in time")
            .unwrap()
        {
            frames.push(f);
        }
        let (last, sent) = frames.split_last().expect("frames");
        let final_event: FeedEvent = serde_json::from_str(&last.data).unwrap();
        assert_eq!(final_event.kind, Kind::Dropped, "{last:?}");
        let expected: Vec<String> = (first..=height)
            .flat_map(|h| (0..PER_BLOCK).map(move |i| format!("{h}:{i}")))
            .take(sent.len())
            .collect();
        assert_eq!(ids(sent), expected);
        let published = (height + 1 - first) * PER_BLOCK as u64;
        assert!((sent.len() as u64) < published, "it got everything");
        assert_eq!(
            final_event.resume_after.as_deref(),
            Some(sent.last().unwrap().id.as_str())
        );
        println!(
            "stalled client dropped after {} of {} events",
            sent.len(),
            published
        );
    }
}

/// Issue 41, item 1: a final outcome leaves the contract state `outcome_retention` blocks
/// after its final block, and the node still answers for it from its ledger: the session
/// reads the same, and its proof, anchored at the block it became final in (replayed),
/// verifies from genesis or from a trusted block below it, and says final; a trusted block
/// at or above it is refused with the reason.
#[tokio::test]
async fn a_final_outcome_that_left_the_state_is_still_read_and_proven_from_its_final_block() {
    use crate::proof::{Trust, TrustedBlock, verify};

    let mut net = Net::with_params(Params {
        outcome_retention: 3,
        ..Params::default()
    });
    net.api.genesis = Some(Arc::new(net.t.genesis.clone()));
    let (sid, _, _) = net.decide_one_session().await;
    let (_, decided) = net.get(&format!("/v1/sessions/{sid}")).await;
    let decided = json(&decided);
    let mut final_at = None;
    let mut retired_at = None;
    for _ in 0..Params::default().appeal_window + 10 {
        net.block(vec![]).await;
        let c = net.chain_watch.borrow().contract.clone();
        match (c.outcome(&sid), final_at) {
            (Some(o), _) => final_at = o.appeals.final_at,
            (None, Some(_)) => {
                retired_at = Some(net.tip.height);
                break;
            }
            (None, None) => panic!("the outcome left the state before it was final"),
        }
    }
    let f = final_at.expect("final");
    assert_eq!(retired_at, Some(f + 3), "kept exactly its retention");
    assert_eq!(
        net.ledger
            .final_outcome(&sid)
            .unwrap()
            .unwrap()
            .appeals
            .final_at,
        Some(f)
    );

    // Read as before: the outcome and the block that decided it; now final.
    let (st, body) = net.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = json(&body);
    assert_eq!(v["status"], "decided", "{v}");
    assert_eq!(v["outcome"]["segments"], decided["outcome"]["segments"]);
    assert_eq!(v["block_height"], decided["block_height"]);
    assert_eq!(v["finality"]["state"], "final", "{v}");

    // Proven at its final block, from genesis and from a block below it.
    let tip = net.tip;
    let trusting = |block: Option<TrustedBlock>| Trust {
        chain: tip.chain,
        validators: &net.t.validators,
        genesis: &net.t.genesis_input,
        block,
    };
    let runs = net.api.replays.runs();
    let (st, body) = net.get(&format!("/v1/sessions/{sid}/proof")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    assert_eq!(
        net.api.replays.runs(),
        runs + 1,
        "rebuilt by replaying the ledger"
    );
    // Asked again, it is answered from what was built: a stranger cannot make the node
    // replay its ledger for the same proof over and over.
    let (st, again) = net.get(&format!("/v1/sessions/{sid}/proof")).await;
    assert_eq!((st, &again), (StatusCode::OK, &body));
    assert_eq!(net.api.replays.runs(), runs + 1, "not replayed again");
    let p: OutcomeProof = serde_json::from_str(&body).unwrap();
    let checked = verify(&p, &sid, &trusting(None)).unwrap();
    assert_eq!(checked.header.height, f);
    assert_eq!(checked.outcome.appeals.final_at, Some(f));
    assert_eq!(
        checked.outcome,
        net.ledger.final_outcome(&sid).unwrap().unwrap()
    );
    let block = |h: u64| TrustedBlock {
        height: h,
        hash: net.ledger.block(h).unwrap().unwrap().block.hash(),
    };
    let t = block(2);
    let (st, body) = net
        .get(&format!("/v1/sessions/{sid}/proof?trust={t}"))
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let p: OutcomeProof = serde_json::from_str(&body).unwrap();
    let checked = verify(&p, &sid, &trusting(Some(t))).unwrap();
    assert_eq!((checked.header.height, checked.anchor), (f, Some(t)));
    // A trusted block at its final block or above cannot anchor it: refused, with why.
    let t = block(f);
    let (st, body) = net
        .get(&format!("/v1/sessions/{sid}/proof?trust={t}"))
        .await;
    assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert!(body.contains("left the contract state"), "{body}");
}

/// `GET /v1/sessions/{id}/proof` walks the changes of the validator powers the ledger
/// recorded when it committed them, from genesis or from the block `?trust=HEIGHT:HASH`
/// names (rebuilding the states it needs from the ledger), and refuses a trusted block
/// that is not its own, or not below the tip, and a malformed one (before anything else).
#[tokio::test]
async fn a_proof_walks_the_power_changes_from_genesis_or_from_a_trusted_block() {
    use crate::proof::{Trust, TrustedBlock, verify};

    let mut net = Net::new();
    net.api.genesis = Some(Arc::new(net.t.genesis.clone()));
    let (sid, _, _) = net.decide_one_session().await;
    let before = net.tip.height;
    // The validator bonds more: the powers change with that block.
    let bond = net.sign(0, Call::Bond { amount: 10 });
    net.block(vec![bond]).await;
    let changed = net.tip.height;
    for _ in 0..3 {
        net.block(vec![]).await;
    }
    let tip = net.tip;
    let changes = net.ledger.power_changes(0, tip.height).unwrap();
    assert!(changes.contains(&changed), "{changes:?}");
    let block = |h: u64| TrustedBlock {
        height: h,
        hash: net.ledger.block(h).unwrap().unwrap().block.hash(),
    };
    let trusting = |block: Option<TrustedBlock>| Trust {
        chain: tip.chain,
        validators: &net.t.validators,
        genesis: &net.t.genesis_input,
        block,
    };
    let proof_of = |body: &str| -> OutcomeProof {
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"))
    };

    // From genesis: every change walked.
    let (st, body) = net.get(&format!("/v1/sessions/{sid}/proof")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = verify(&proof_of(&body), &sid, &trusting(None)).unwrap();
    assert_eq!((v.anchor, &v.hops), (None, &changes));
    assert_eq!(v.header.hash(), tip.hash);
    // From the block before the change (replayed), the change itself, and the block
    // below the tip (the view's state): the changes above it.
    for h in [1, before, changed, tip.height - 1] {
        let t = block(h);
        let (st, body) = net
            .get(&format!("/v1/sessions/{sid}/proof?trust={t}"))
            .await;
        assert_eq!(st, StatusCode::OK, "{h}: {body}");
        let p = proof_of(&body);
        let v = verify(&p, &sid, &trusting(Some(t))).unwrap_or_else(|e| panic!("{h}: {e}"));
        let want: Vec<u64> = changes.iter().copied().filter(|&c| c > h).collect();
        assert_eq!((v.anchor, v.hops), (Some(t), want), "{h}");
        // Not without that block trusted.
        assert!(
            matches!(
                verify(&p, &sid, &trusting(None)),
                Err(crate::proof::ProofError::UnknownValidatorSet(_))
            ),
            "{h}"
        );
    }
    // Asked again, by eight clients at once, from a block not asked about yet: the
    // states are rebuilt by one replay, and every client gets the same proof; a repeat
    // replays nothing.
    let runs = net.api.replays.runs();
    let t = block(2);
    let asks: Vec<_> = (0..8)
        .map(|_| {
            let (api, view) = (net.api.clone(), net.api.chain.borrow().clone());
            tokio::task::spawn_blocking(move || {
                crate::api::proofs::outcome_proof(&api, &view, &sid, Some(t)).unwrap()
            })
        })
        .collect();
    let mut proofs = Vec::new();
    for a in asks {
        proofs.push(a.await.unwrap());
    }
    assert!(proofs.iter().all(|p| *p == proofs[0]));
    verify(&proofs[0], &sid, &trusting(Some(t))).unwrap();
    assert_eq!(
        net.api.replays.runs(),
        runs + 1,
        "one replay for eight requests"
    );
    let again = net
        .get(&format!("/v1/sessions/{sid}/proof?trust={t}"))
        .await;
    assert_eq!(again.0, StatusCode::OK, "{}", again.1);
    assert_eq!(proof_of(&again.1), proofs[0]);
    assert_eq!(net.api.replays.runs(), runs + 1, "a repeat replays nothing");

    // Through the client, as `proof export --trust` asks.
    let (addr, stop) = net.serve().await;
    let t = block(before);
    let p = Client::new(addr.clone())
        .session_proof(&sid, Some(&t))
        .await
        .unwrap();
    verify(&p, &sid, &trusting(Some(t))).unwrap();

    // Refused: a hash that is not this node's block at that height; the tip or above.
    let wrong = TrustedBlock {
        height: before,
        hash: Hash::sha256(b"not a block of ours"),
    };
    for (t, says) in [
        (wrong, "is not one of this node's"),
        (block(tip.height), "is not below"),
        (
            TrustedBlock {
                height: tip.height + 5,
                hash: tip.hash,
            },
            "is not below",
        ),
    ] {
        let (st, body) = net
            .get(&format!("/v1/sessions/{sid}/proof?trust={t}"))
            .await;
        assert_eq!(st, StatusCode::UNPROCESSABLE_ENTITY, "{t}: {body}");
        let e = json(&body);
        assert_eq!(e["code"], "rejected", "{body}");
        assert!(e["message"].as_str().unwrap().contains(says), "{body}");
    }
    let e = Client::new(addr)
        .session_proof(&sid, Some(&wrong))
        .await
        .unwrap_err();
    assert!(matches!(e, ClientError::Api { status: 422, .. }), "{e}");
    let _ = stop.send(());
    // Malformed, whatever the session: 400 with the reason.
    let unknown = Hash::sha256(b"no such session");
    let good = block(before);
    for session in [sid, unknown] {
        for (query, says) in [
            ("trust=12".to_string(), "HEIGHT:HASH"),
            (format!("trust=0:{}", good.hash), "height 0 is genesis"),
            (format!("trust=01:{}", good.hash), "HEIGHT:HASH"),
            (format!("trust={good}&trust={good}"), "more than once"),
            (format!("trusted={good}"), "unknown parameter `trusted`"),
        ] {
            let (st, body) = net
                .get(&format!("/v1/sessions/{session}/proof?{query}"))
                .await;
            assert_eq!(st, StatusCode::BAD_REQUEST, "{query}: {body}");
            assert!(
                json(&body)["message"].as_str().unwrap().contains(says),
                "{query}: {body}"
            );
        }
    }
    // Well-formed, for a session that is not decided: 404.
    let (st, _) = net
        .get(&format!("/v1/sessions/{unknown}/proof?trust={good}"))
        .await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    // The parameter is documented with the pattern its parser takes.
    let (_, doc) = net.get("/v1/openapi.json").await;
    let params = &json(&doc)["paths"]["/v1/sessions/{id}/proof"]["get"]["parameters"];
    let trust_param = params
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "trust")
        .unwrap_or_else(|| panic!("no trust parameter: {params}"));
    assert_eq!(trust_param["in"], "query");
    assert_eq!(trust_param["required"], false);
    assert_eq!(
        trust_param["schema"]["pattern"],
        crate::proof::TRUSTED_BLOCK_PATTERN
    );
    // The reply's anchor and walk are described as served: `"genesis"` or `{"block":
    // {...}}`, and a list of hops.
    let schemas = &json(&doc)["components"]["schemas"];
    let required = &schemas["OutcomeProof"]["required"];
    for field in ["anchor", "walk"] {
        assert!(
            required.as_array().unwrap().contains(&json!(field)),
            "{required}"
        );
    }
    let anchor = &schemas["ProofAnchor"]["oneOf"];
    assert_eq!(anchor[0]["enum"], json!(["genesis"]), "{anchor}");
    assert_eq!(
        anchor[1]["properties"]["block"]["$ref"], "#/components/schemas/AnchorBlock",
        "{anchor}"
    );
    for (schema, fields) in [
        ("AnchorBlock", &["header", "stakes"][..]),
        ("Hop", &["header", "certificate", "stakes"][..]),
    ] {
        for f in fields {
            assert!(
                schemas[schema]["properties"][f].is_object(),
                "{schema}.{f} undocumented"
            );
        }
    }
    // A node with no genesis state to replay from says so rather than guessing, for a
    // height no request had it replay; one it kept is still served.
    let fresh = block(3);
    assert!(fresh.height < before);
    net.api.genesis = None;
    let (st, body) = net
        .get(&format!("/v1/sessions/{sid}/proof?trust={fresh}"))
        .await;
    assert_eq!(st, StatusCode::SERVICE_UNAVAILABLE, "{body}");
    let (st, body) = net
        .get(&format!("/v1/sessions/{sid}/proof?trust={good}"))
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
}

/// What an operator watches over months: the oldest block held, the state's entries and
/// the database's size, in `GET /v1/status` and `/metrics`, agreeing with the state.
#[tokio::test]
async fn status_and_metrics_say_how_much_the_node_holds() {
    let mut net = Net::new();
    let (_, body) = net.get("/v1/status").await;
    assert!(json(&body)["oldest_block"].is_null(), "{body}");
    net.decide_one_session().await;
    let (st, body) = net.get("/v1/status").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let s = json(&body);
    assert_eq!(s["oldest_block"], 1, "{s}");
    let state = net.chain.current().contract.clone();
    let storage = &s["storage"];
    assert_eq!(storage["accounts"], state.state().accounts.len(), "{s}");
    assert_eq!(storage["auditors"], state.state().auditors.len(), "{s}");
    assert_eq!(storage["outcomes"], 1, "{s}");
    assert_eq!(storage["live_sessions"], 0, "{s}");
    assert_eq!(storage["tree_nodes"], state.tree_nodes(), "{s}");
    assert!(storage["disk_bytes"].as_u64().unwrap() > 0, "{s}");
    let (_, text) = net.get("/metrics").await;
    for line in [
        "trust_oldest_block 1\n".to_string(),
        format!(
            "trust_state_entries{{kind=\"accounts\"}} {}\n",
            state.state().accounts.len()
        ),
        "trust_state_entries{kind=\"outcomes\"} 1\n".to_string(),
        format!("trust_state_tree_nodes {}\n", state.tree_nodes()),
        "trust_seats_judging{tier=\"computer\"} 0\n".to_string(),
        format!(
            "trust_seat_capacity{{tier=\"computer\"}} {}\n",
            state.admission().1[0]
        ),
    ] {
        assert!(text.contains(&line), "{line:?} not in\n{text}");
    }
    assert!(
        text.contains("# TYPE trust_disk_bytes gauge\ntrust_disk_bytes "),
        "{text}"
    );
}

/// `GET /v1/snapshot`: the newest snapshot below the tip in chunks, with its block and the
/// next as stored; the bytes put together are the snapshot. No snapshot yet, one asked
/// for that is not held, and an offset past the end are each answered with what is wrong.
#[tokio::test]
async fn the_snapshot_route_serves_the_newest_snapshot_below_the_tip_with_its_blocks() {
    let mut net = Net::new();
    let (st, body) = net.get("/v1/snapshot").await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    assert!(body.contains("no snapshot below the tip"), "{body}");
    for _ in 0..3 {
        net.block(vec![]).await;
    }
    let state = net.chain.current().contract.clone();
    net.ledger.put_snapshot(2, b"state after two").unwrap();
    net.ledger.put_snapshot(3, &state.snapshot()).unwrap();
    // The one at the tip has no next block yet: the one below is served.
    let (st, body) = net.get("/v1/snapshot").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let c: crate::api::snapshot::SnapshotChunk = serde_json::from_str(&body).unwrap();
    assert_eq!((c.height, c.total, c.offset), (2, 15, 0));
    assert_eq!(hex::decode(&c.chunk).unwrap(), b"state after two");
    assert!(
        c.block.is_empty() && c.next.is_empty(),
        "each part on its own"
    );
    // The blocks, each in an answer of its own (two full blocks would not fit one).
    let part =
        |body: &str| -> crate::api::snapshot::SnapshotChunk { serde_json::from_str(body).unwrap() };
    let (st, body) = net.get("/v1/snapshot?height=2&part=block").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let b = part(&body);
    assert!(b.chunk.is_empty() && b.next.is_empty());
    let (st, body) = net.get("/v1/snapshot?height=2&part=next").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let n = part(&body);
    let block: crate::ledger::StoredBlock =
        trust_protocol::encoding::decode(&hex::decode(&b.block).unwrap()).unwrap();
    let next: crate::ledger::StoredBlock =
        trust_protocol::encoding::decode(&hex::decode(&n.next).unwrap()).unwrap();
    assert_eq!(block.block.header.height, 2);
    assert_eq!(next.block.header.prev_hash, block.block.hash());
    let (st, body) = net.get("/v1/snapshot?height=2&offset=10").await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let c: crate::api::snapshot::SnapshotChunk = serde_json::from_str(&body).unwrap();
    assert_eq!(hex::decode(&c.chunk).unwrap(), b"r two");
    let (st, body) = net.get("/v1/snapshot?height=1").await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    let (st, body) = net.get("/v1/snapshot?height=2&offset=99").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    let (st, body) = net.get("/v1/snapshot?heigth=2").await;
    assert_eq!(st, StatusCode::BAD_REQUEST, "{body}");
    // The `part` parameter is documented with a schema a client can resolve.
    let (_, doc) = net.get("/v1/openapi.json").await;
    let doc = json(&doc);
    let text = doc.to_string();
    let schemas = doc["components"]["schemas"].as_object().unwrap();
    for r in text.split("\"#/components/schemas/").skip(1) {
        let name = r.split('"').next().unwrap();
        assert!(schemas.contains_key(name), "unresolvable $ref {name}");
    }
    assert!(
        text.contains("\"part\""),
        "the part parameter is documented"
    );
}

/// `GET /v1/sessions/{id}/opening`: the salts let their holder test guesses of the trace
/// against the ids, so only the operator gets them, and only for a session this node
/// opened.
#[tokio::test]
async fn a_sessions_opening_is_for_its_providers_operator_only() {
    let (net, _provider, _blobs) = Net::with_provider(Default::default());
    let bearer = format!("Bearer {TOKEN}");
    let (st, body) = net.open(&[("authorization", &bearer)]).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    let opened = json(&body);
    let sid = opened["session"].as_str().unwrap().to_string();
    let get = |uri: String, auth: Option<&str>| {
        let mut r = Request::get(uri);
        if let Some(a) = auth {
            r = r.header("authorization", a);
        }
        net.send(r.body(Body::empty()).unwrap())
    };
    for auth in [None, Some("Bearer ffff")] {
        let (st, body) = get(format!("/v1/sessions/{sid}/opening"), auth).await;
        assert_eq!(st, StatusCode::UNAUTHORIZED, "{auth:?}: {body}");
        assert!(error_of(st, &body).contains("operator token"), "{body}");
    }
    let (st, body) = get(format!("/v1/sessions/{sid}/opening"), Some(&bearer)).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = json(&body);
    assert_eq!(v["session"], sid.as_str());
    let mapping = v["opening"]["mapping"].as_array().unwrap();
    let segments = opened["segments"].as_array().unwrap();
    assert_eq!(mapping.len(), segments.len(), "{v}");
    // In manifest order, named as `submit` names the segments.
    for (m, s) in mapping.iter().zip(segments) {
        assert_eq!(m["node"], s[0], "{v}");
    }
    assert!(
        v["opening"]["hdag"].is_null(),
        "the node decomposed it: {v}"
    );
    // A session this node did not open.
    let other = "ab".repeat(32);
    let (st, body) = get(format!("/v1/sessions/{other}/opening"), Some(&bearer)).await;
    assert_eq!(st, StatusCode::NOT_FOUND, "{body}");
    assert!(error_of(st, &body).contains("holds no opening"), "{body}");
}

/// Issue 56: `GET /v1/sessions/{id}` on the provider's node, with its token, lists the
/// model's own steps in trace order under `steps` and what the node planted apart under
/// `honeypots`; without the token neither is there.
#[tokio::test]
async fn the_session_route_lists_the_models_steps_apart_from_planted_honeypots() {
    let (mut net, _, _) = Net::with_provider_planting(Default::default(), 2);
    let bearer = format!("Bearer {TOKEN}");
    let (st, body) = net.open(&[("authorization", &bearer)]).await;
    assert_eq!(st, StatusCode::ACCEPTED, "{body}");
    let opened = json(&body);
    assert!(opened["honeypots"].as_u64().unwrap() > 0, "{opened}");
    let sid = opened["session"].as_str().unwrap().to_string();
    net.block(vec![]).await; // the OpenSession, from the pool
    let path = format!("/v1/sessions/{sid}");
    let (st, body) = net
        .send(
            Request::get(&path)
                .header(header::AUTHORIZATION, &bearer)
                .body(Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = json(&body);
    assert_eq!(v["status"], "live", "{v}");
    assert!(
        v.get("verdict").is_none(),
        "no verdict before one is decided: {v}"
    );
    let planted = |x: &serde_json::Value| {
        let n = x["name"].as_str().unwrap();
        n.starts_with("honeypot:") || n.starts_with("calculation-of-honeypot:")
    };
    let steps = v["steps"].as_array().unwrap();
    let honeypots = v["honeypots"].as_array().unwrap();
    assert!(!steps.is_empty() && steps.iter().all(|x| !planted(x) && x["honeypot"] == false));
    assert_eq!(
        honeypots
            .iter()
            .filter(|x| x["name"].as_str().unwrap().starts_with("honeypot:"))
            .count(),
        usize::try_from(opened["honeypots"].as_u64().unwrap()).unwrap(),
        "{v}"
    );
    assert!(
        honeypots
            .iter()
            .all(|x| planted(x) && x["honeypot"] == true)
    );
    // Every segment once, under its place in the outcome.
    let mut at: Vec<u64> = steps
        .iter()
        .chain(honeypots)
        .map(|x| x["index"].as_u64().unwrap())
        .collect();
    at.sort_unstable();
    let all =
        opened["segments"].as_array().unwrap().len() + opened["left_out"].as_array().unwrap().len();
    assert_eq!(at, (0..all as u64).collect::<Vec<_>>());
    // In trace order: by where each text sits (problem, thinking, output).
    let rank = |p: &str| {
        ["problem", "thinking", "output"]
            .iter()
            .position(|x| *x == p)
            .unwrap()
    };
    let places: Vec<(usize, u64)> = steps
        .iter()
        .filter_map(|x| {
            Some((
                rank(x.get("span")?["part"].as_str()?),
                x["span"]["start"].as_u64()?,
            ))
        })
        .collect();
    assert!(
        places.len() > 1 && places.windows(2).all(|w| w[0] <= w[1]),
        "{places:?}"
    );
    // Without the token: neither list.
    let (_, body) = net.get(&path).await;
    let v = json(&body);
    assert!(
        v.get("steps").is_none() && v.get("honeypots").is_none(),
        "{v}"
    );
}
