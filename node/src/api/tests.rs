//! The API over a real sled ledger and a chain driven through real blocks.

use axum::{body::Body, http::Request};
use tower::ServiceExt;
use trust_contracts::{Event, Params};
use trust_protocol::{
    Salt, Vote, commitment,
    hdag::AbstractionLevel,
    mapping_commitment,
    tx::{Call, QuorumParams, SegmentEntry, SessionManifest, Tier, Tx},
    units::Ppm,
};

use super::*;
use crate::{testchain::TestChain, view::PeerView};

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
        let t = TestChain::new(
            "n",
            &[],
            PeerView {
                peers: 3,
                heights: vec![("12D3KooWpeer".into(), 7)],
            },
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
    assert!(m.contains("trust_api_bad_requests_total 3"), "{m}");

    let (st, doc) = net.get("/v1/openapi.json").await;
    assert_eq!(st, StatusCode::OK);
    assert!(json(&doc)["paths"]["/v1/sessions/{id}"].is_object());

    // The web pages share the router; unknown routes still answer the API's JSON 404.
    let (st, page) = net.get("/blocks/1").await;
    assert_eq!(st, StatusCode::OK);
    assert!(page.starts_with("<!doctype html>"), "{page}");
    let (st, body) = net.get("/no/such/route").await;
    assert_eq!(st, StatusCode::NOT_FOUND);
    assert_eq!(json(&body)["code"], "not_found");
}

#[tokio::test]
async fn a_session_is_queryable_with_the_block_that_decided_it() {
    let mut net = Net::new();
    let seg = SegmentEntry {
        id: Hash::sha256(b"segment"),
        level: AbstractionLevel::Step,
        tier: Tier::Computer,
        weight: 1,
        depends_on: vec![],
        cid: trust_protocol::cid::Cid::of(b"c"),
        honeypot: None,
        conclusion: false,
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
    };
    m.fee = trust_contracts::minimum_fee(&Params::default(), &m).unwrap();
    let open = net.sign(0, Call::OpenSession(m));
    let sid = Tx::session_id(&net.keys[0].public(), open.body.nonce);
    net.block(vec![open]).await;
    let (_, live) = net.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(json(&live)["status"], "live");
    let ev = net.block(vec![]).await;
    let seats: Vec<usize> = ev
        .iter()
        .filter_map(|e| match e {
            Event::SeatAssigned { seat, .. } => net.keys.iter().position(|k| k.public() == *seat),
            _ => None,
        })
        .collect();
    assert_eq!(seats.len(), 3);
    let salt = Salt([5; 32]);
    let commits = seats
        .iter()
        .map(|&i| {
            let c = commitment(&sid, &seg.id, &net.keys[i].public(), Vote::Invalid, &salt);
            net.sign(
                i,
                Call::Commit {
                    session: sid,
                    segment: 0,
                    commitment: c,
                },
            )
        })
        .collect();
    net.block(commits).await;
    let reveals = seats
        .iter()
        .map(|&i| {
            net.sign(
                i,
                Call::Reveal {
                    session: sid,
                    segment: 0,
                    vote: Vote::Invalid,
                    salt,
                },
            )
        })
        .collect();
    net.block(reveals).await;
    let disclose = net.sign(
        0,
        Call::RevealMapping {
            session: sid,
            mapping: Hash::ZERO,
            salt: Salt([2; 32]),
        },
    );
    net.block(vec![disclose]).await;

    let (st, body) = net.get(&format!("/v1/sessions/{sid}")).await;
    assert_eq!(st, StatusCode::OK, "{body}");
    let v = json(&body);
    assert_eq!(v["status"], "decided", "{v}");
    assert_eq!(v["outcome"]["trace"], "Fail");
    assert_eq!(v["outcome"]["segments"][0]["verdict"], "Invalid");
    assert_eq!(v["block_height"], 5);
    assert_eq!(v["block_hash"], net.tip.hash.to_hex());

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

#[tokio::test]
async fn session_bodies_may_carry_the_largest_trace_and_no_more() {
    let net = Net::new();
    // A session body may be as large as the protocol's trace limit (this node runs no
    // provider, so it is read and then declined), but not larger than its own cap.
    let trace = "x".repeat(trust_protocol::trace::MAX_TRACE_BYTES);
    let session = |body: Vec<u8>| {
        Request::post("/v1/sessions")
            .header(header::CONTENT_TYPE, "application/json")
            .body(Body::from(body))
            .unwrap()
    };
    let (st, body) = net
        .send(session(json!({"trace": trace}).to_string().into_bytes()))
        .await;
    assert_eq!(st, StatusCode::NOT_IMPLEMENTED, "{body}");
    let (st, _) = net
        .send(session(vec![b' '; super::MAX_SESSION_BODY_BYTES + 1]))
        .await;
    assert_eq!(st, StatusCode::BAD_REQUEST);
}
