//! The live event stream end to end: a subscriber that opened `/v1/events` before a trace
//! was submitted sees the session's whole life in order, and one that disconnected midway
//! and resumed with `Last-Event-ID` ends with exactly the same sequence.

use std::time::Duration;

use trust_node::{
    api::client::{EventStream, SseFrame},
    cli::watch::line,
    feed::{FeedEvent, Kind},
};
use trust_protocol::{
    Signed,
    tx::{Call, Tx},
};

use crate::fixtures::network::Network;

/// Longest wait for one event (a session takes a few dozen blocks).
const EVENT_DEADLINE: Duration = Duration::from_secs(240);

fn event(f: &SseFrame) -> FeedEvent {
    let e: FeedEvent = serde_json::from_str(&f.data).unwrap_or_else(|e| panic!("{e}: {f:?}"));
    assert_eq!(f.id, e.id, "the SSE id is the event's");
    assert_eq!(f.event, e.kind.name(), "the SSE event name is its kind");
    e
}

/// Reads `stream` until `stop` holds for an event (included), or `limit` events.
async fn read_until(
    stream: &mut EventStream,
    limit: usize,
    mut stop: impl FnMut(&FeedEvent) -> bool,
) -> Vec<SseFrame> {
    let mut out = Vec::new();
    while out.len() < limit {
        let f = tokio::time::timeout(EVENT_DEADLINE, stream.next())
            .await
            .expect("an event before the deadline")
            .expect("the stream reads")
            .expect("the stream stays open");
        let done = stop(&event(&f));
        out.push(f);
        if done {
            break;
        }
    }
    out
}

#[test]
fn a_subscriber_sees_a_session_s_life_in_order_and_a_resumed_one_sees_the_same() {
    let net = Network::running(4);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let (api_a, api_b) = (net.nodes[1].api.clone(), net.nodes[2].api.clone());
    let marker = net.keys(1).account_id();
    // The marker: node 1 bonds one more token once the session is decided; both
    // subscribers read up to its `bonded` event, so they have seen every block before it.
    let is_marker = move |e: &FeedEvent| e.kind == Kind::Bonded && e.account == Some(marker);

    // Both open before the submission: the answer's head means the subscription is live.
    let mut a = rt
        .block_on(EventStream::open(&api_a, "/v1/events", None))
        .expect("subscriber A opens");
    let mut b = rt
        .block_on(EventStream::open(&api_b, "/v1/events", None))
        .expect("subscriber B opens");
    let a_task = rt.spawn(async move { read_until(&mut a, usize::MAX, is_marker).await });

    let trace = format!(
        "{}/../examples/traces/fraction-incorrect.txt",
        env!("CARGO_MANIFEST_DIR")
    );
    let r = net
        .post_json(
            0,
            "/v1/sessions",
            &serde_json::json!({"trace": std::fs::read_to_string(trace).unwrap()}),
        )
        .expect("node 0 opens the session");
    let session = r["session"].as_str().unwrap().to_string();

    // B reads a few events, then goes away.
    let first = rt.block_on(read_until(&mut b, 3, |_| false));
    drop(b);
    let last_seen = first.last().unwrap().id.clone();

    net.wait_for("the session to be decided", |n| {
        n.get(1, &format!("/v1/sessions/{session}"))
            .is_ok_and(|s| s["status"] == "decided")
    });
    let k = net.keys(1);
    let nonce = net.get(1, &format!("/v1/accounts/{marker}")).unwrap()["next_nonce"]
        .as_u64()
        .unwrap();
    let bond = Signed::sign(
        &k.account,
        &net.chain_id(),
        Tx {
            nonce,
            call: Call::Bond { amount: 1 },
        },
    );
    net.send_tx(1, &bond).expect("the bond is admitted");

    let a_frames = rt.block_on(a_task).unwrap();
    // B resumes after the last event it saw: the stored ones first, then live ones.
    let rest = rt.block_on(async {
        let mut b = EventStream::open(&api_b, "/v1/events", Some(&last_seen))
            .await
            .expect("subscriber B resumes");
        read_until(&mut b, usize::MAX, is_marker).await
    });
    let b_frames: Vec<SseFrame> = first.into_iter().chain(rest).collect();

    let ids = |fs: &[SseFrame]| fs.iter().map(|f| f.id.clone()).collect::<Vec<_>>();
    assert_eq!(
        ids(&a_frames),
        ids(&b_frames),
        "the resumed subscriber missed or repeated an event"
    );
    assert_eq!(
        a_frames, b_frames,
        "two nodes told different stories (or the resume changed one)"
    );
    let events: Vec<FeedEvent> = a_frames.iter().map(event).collect();
    for w in events.windows(2) {
        assert!(
            w[0].event_id().unwrap() < w[1].event_id().unwrap(),
            "out of order: {} then {}",
            w[0].id,
            w[1].id
        );
    }

    // The session's own events, as `trust-node watch --session` prints them.
    let session_hash = session.parse().unwrap();
    let mine: Vec<&FeedEvent> = events
        .iter()
        .filter(|e| e.session == Some(session_hash))
        .collect();
    for e in &mine {
        println!("{}", line(e, None));
    }
    let first_of = |k: Kind| {
        mine.iter()
            .position(|e| e.kind == k)
            .unwrap_or_else(|| panic!("no {k} for the session in {mine:#?}"))
    };
    let order = [
        Kind::SessionOpened,
        Kind::SeatDrawn,
        Kind::RevealDue,
        Kind::SegmentDecided,
        Kind::SessionDecided,
        Kind::Reward,
    ];
    for w in order.windows(2) {
        assert!(
            first_of(w[0]) < first_of(w[1]),
            "{} came after {}",
            w[0],
            w[1]
        );
    }
    // A commitment is due for a seat its keys reached that has not committed at the end of
    // that block: seats that judge on pooled keys commit in the keys' block, and have none.
    if mine.iter().any(|e| e.kind == Kind::CommitDue) {
        let due = first_of(Kind::CommitDue);
        assert!(first_of(Kind::SeatDrawn) < due && due < first_of(Kind::RevealDue));
    }
    // Every deadline is addressed to a seat of the session.
    let seats: std::collections::BTreeSet<_> = mine
        .iter()
        .filter(|e| e.kind == Kind::SeatDrawn)
        .filter_map(|e| e.account)
        .collect();
    for e in mine
        .iter()
        .filter(|e| matches!(e.kind, Kind::CommitDue | Kind::RevealDue | Kind::Reward))
    {
        assert!(
            e.account.is_some_and(|a| seats.contains(&a)),
            "{e:?} is for no seat"
        );
    }
}
