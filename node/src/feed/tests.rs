//! Feed derivation: lifecycle order within a block, ids, filters, parsing.

use trust_contracts::{Contract, Event, SegmentVerdict, SlashReason, TraceVerdict};
use trust_protocol::{AccountId, Hash, Keypair, tx::Tier};

use super::*;

fn account(seed: u8) -> AccountId {
    Keypair::from_seed([seed; 32]).public()
}

fn contract() -> Contract {
    Contract::new(&trust_contracts::Genesis {
        params: trust_contracts::Params::default(),
        accounts: Vec::new(),
        auditors: Vec::new(),
    })
    .expect("genesis")
}

/// Contract events in an order a block never has, to see the feed put them in lifecycle
/// order while keeping the contract's order within a kind.
fn scrambled(session: Hash) -> Vec<Event> {
    vec![
        Event::Rewarded {
            session,
            segment: 0,
            seat: account(1),
            amount: 5,
        },
        Event::TraceDecided {
            session,
            verdict: TraceVerdict::Pass,
            passing_weight: 3,
            total_weight: 3,
        },
        Event::SegmentDecided {
            session,
            segment: 0,
            verdict: SegmentVerdict::Valid,
        },
        Event::SeatAssigned {
            session,
            segment: 0,
            seat: account(1),
            round: 0,
            tier: Tier::Computer,
        },
        Event::SeatAssigned {
            session,
            segment: 0,
            seat: account(2),
            round: 0,
            tier: Tier::Computer,
        },
        Event::Slashed {
            session,
            seat: account(2),
            amount: 7,
            reason: SlashReason::NoShow,
        },
        Event::SessionOpened {
            session,
            provider: account(9),
            segments: 1,
        },
        Event::Transferred {
            from: account(9),
            to: account(1),
            amount: 1,
        },
    ]
}

#[test]
fn a_block_s_feed_is_in_lifecycle_order_with_ids_by_position() {
    let session = Hash::sha256(b"s");
    let feed = derive(412, &scrambled(session), &contract());
    let kinds: Vec<Kind> = feed.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::SessionOpened,
            Kind::SeatDrawn,
            Kind::SeatDrawn,
            Kind::SegmentDecided,
            Kind::SessionDecided,
            Kind::Reward,
            Kind::Slash,
        ]
    );
    // Within a kind the contract's order stays.
    assert_eq!(feed[1].account, Some(account(1)));
    assert_eq!(feed[2].account, Some(account(2)));
    for (i, e) in feed.iter().enumerate() {
        assert_eq!(e.id, format!("412:{i}"));
        assert_eq!(e.height, 412);
        assert_eq!(
            e.event_id(),
            Some(EventId {
                height: 412,
                index: i as u32
            })
        );
    }
    assert_eq!(feed[0].account, Some(account(9)));
    assert_eq!(feed[3].verdict.as_deref(), Some("valid"));
    assert_eq!(feed[4].verdict.as_deref(), Some("pass"));
    assert_eq!(feed[6].reason.as_deref(), Some("no_show"));
    // The same inputs give the same feed (every node tells the same story).
    assert_eq!(feed, derive(412, &scrambled(session), &contract()));
    // JSON: snake_case kinds, hex ids, no empty fields.
    let v = serde_json::to_value(&feed[1]).unwrap();
    assert_eq!(v["kind"], "seat_drawn");
    assert_eq!(v["session"], session.to_hex());
    assert!(v.get("amount").is_none(), "{v}");
    let back: FeedEvent = serde_json::from_value(v).unwrap();
    assert_eq!(back, feed[1]);
}

#[test]
fn filters_select_by_account_session_and_kind() {
    let (s1, s2) = (Hash::sha256(b"1"), Hash::sha256(b"2"));
    let mut events = scrambled(s1);
    events.extend(scrambled(s2));
    let feed = derive(7, &events, &contract());
    let count = |f: &Filter| feed.iter().filter(|e| f.matches(e)).count();
    assert_eq!(count(&Filter::default()), feed.len());
    let by_session = Filter {
        session: Some(s2),
        ..Filter::default()
    };
    assert_eq!(count(&by_session), 7);
    let by_account = Filter {
        account: Some(account(2)),
        ..Filter::default()
    };
    // Drawn and slashed, in both sessions.
    assert_eq!(count(&by_account), 4);
    let both = Filter {
        account: Some(account(2)),
        session: Some(s1),
        kinds: [Kind::Slash].into(),
    };
    assert_eq!(count(&both), 1);
    let none = Filter {
        account: Some(account(3)),
        ..Filter::default()
    };
    assert_eq!(count(&none), 0);
}

#[test]
fn ids_and_kinds_parse_and_refuse_clearly() {
    assert_eq!(
        "412:3".parse::<EventId>().unwrap(),
        EventId {
            height: 412,
            index: 3
        }
    );
    assert_eq!("412".parse::<EventId>().unwrap(), EventId::end_of(412));
    assert!(EventId::end_of(5) > "5:1000".parse().unwrap());
    assert!("5:9".parse::<EventId>().unwrap() < "6:0".parse().unwrap());
    for bad in [
        "",
        "x",
        "1:",
        ":1",
        "1:2:3",
        "-1:0",
        "99999999999999999999999:0",
    ] {
        let e = bad.parse::<EventId>().unwrap_err();
        assert!(e.to_string().contains("HEIGHT:INDEX"), "{bad}: {e}");
    }
    for k in Kind::STORED {
        assert_eq!(k.name().parse::<Kind>().unwrap(), k);
    }
    let e = "dropped".parse::<Kind>().unwrap_err();
    assert!(e.to_string().contains("seat_drawn"), "{e}");
    let d = FeedEvent::dropped(Some(EventId {
        height: 3,
        index: 1,
    }));
    assert_eq!(d.resume_after.as_deref(), Some("3:1"));
}

/// Appeals reach the feed: opened (by its appellant, with the bond), each appealed
/// segment decided (before and after, overturned or not, the trace after), cancelled,
/// and the session final; in lifecycle order after the session's verdict.
#[test]
fn appeals_and_finality_are_in_the_feed() {
    use trust_contracts::LocalVerdict;
    let session = Hash::sha256(b"appealed");
    let events = vec![
        Event::SessionFinal { session },
        Event::AppealDecided {
            session,
            segment: 3,
            round: 2,
            previous: LocalVerdict::Valid,
            verdict: LocalVerdict::Invalid,
            overturned: true,
            trace: TraceVerdict::Fail,
        },
        Event::AppealCancelled {
            session,
            appellant: account(4),
            refunded: 60,
            reason: "too few auditors".into(),
        },
        Event::AppealOpened {
            session,
            appellant: account(4),
            segments: vec![3, 4],
            round: 2,
            bond: 120,
        },
        Event::Slashed {
            session,
            seat: account(2),
            amount: 54,
            reason: SlashReason::Incoherent,
        },
    ];
    let feed = derive(7, &events, &contract());
    let kinds: Vec<Kind> = feed.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::AppealOpened,
            Kind::AppealDecided,
            Kind::AppealCancelled,
            Kind::SessionFinal,
            Kind::Slash,
        ]
    );
    let opened = serde_json::to_value(&feed[0]).unwrap();
    assert_eq!(opened["kind"], "appeal_opened");
    assert_eq!(opened["account"], account(4).to_hex());
    assert_eq!(opened["segments_appealed"], serde_json::json!([3, 4]));
    assert_eq!(opened["round"], 2);
    assert_eq!(opened["amount"], 120);
    let decided = serde_json::to_value(&feed[1]).unwrap();
    assert_eq!(decided["kind"], "appeal_decided");
    assert_eq!(decided["segment"], 3);
    assert_eq!(decided["previous"], "valid");
    assert_eq!(decided["verdict"], "invalid");
    assert_eq!(decided["overturned"], true);
    assert_eq!(decided["trace"], "fail");
    assert_eq!(feed[2].amount, Some(60));
    assert_eq!(feed[3].session, Some(session));
    assert_eq!(feed[4].reason.as_deref(), Some("incoherent"));
    for k in [
        Kind::AppealOpened,
        Kind::AppealDecided,
        Kind::AppealCancelled,
        Kind::SessionFinal,
    ] {
        assert!(Kind::STORED.contains(&k), "{k}");
        assert_eq!(k.name().parse::<Kind>().unwrap(), k);
    }
    let back: FeedEvent = serde_json::from_value(decided).unwrap();
    assert_eq!(back, feed[1]);
}

/// A refused entry of a batch is in the feed (the seat, with the contract's reason), right
/// after the votes it concerns are due and before any verdict; a provider's forfeited
/// honeypot set names the provider and the bond burned.
#[test]
fn refused_batch_entries_and_forfeited_honeypots_are_in_the_feed() {
    let session = Hash::sha256(b"batched");
    let events = vec![
        Event::SegmentDecided {
            session,
            segment: 0,
            verdict: SegmentVerdict::Valid,
        },
        Event::HoneypotsForfeited {
            session,
            burned: 48,
        },
        Event::VoteRefused {
            session,
            segment: 1,
            seat: account(2),
            reason: "already committed".into(),
        },
    ];
    let feed = derive(5, &events, &contract());
    let kinds: Vec<Kind> = feed.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [
            Kind::VoteRefused,
            Kind::HoneypotsForfeited,
            Kind::SegmentDecided
        ]
    );
    let refused = serde_json::to_value(&feed[0]).unwrap();
    assert_eq!(refused["kind"], "vote_refused");
    assert_eq!(refused["segment"], 1);
    assert_eq!(refused["account"], account(2).to_hex());
    assert_eq!(refused["reason"], "already committed");
    let forfeited = serde_json::to_value(&feed[1]).unwrap();
    assert_eq!(forfeited["kind"], "honeypots_forfeited");
    assert_eq!(forfeited["amount"], 48);
    assert_eq!(
        "honeypots_forfeited".parse::<Kind>().unwrap(),
        Kind::HoneypotsForfeited
    );
    let back: FeedEvent = serde_json::from_value(forfeited).unwrap();
    assert_eq!(back, feed[1]);
}

/// The OpenAPI document of `GET /v1/events` names every kind a feed may hold.
#[test]
fn the_event_route_documents_every_kind() {
    let doc = serde_json::to_value(crate::api::openapi_document()).unwrap();
    let params = doc["paths"]["/v1/events"]["get"]["parameters"]
        .as_array()
        .expect("the events route has parameters");
    let kind = params
        .iter()
        .find(|p| p["name"] == "kind")
        .and_then(|p| p["description"].as_str())
        .expect("a documented kind parameter");
    let listed: Vec<&str> = kind
        .split_once(':')
        .map_or("", |(_, l)| l)
        .trim_end_matches('.')
        .split(',')
        .map(str::trim)
        .collect();
    assert_eq!(listed, Kind::STORED.map(Kind::name), "{kind}");
}

/// A seat's proven bad key is in the feed for that seat, after the deadlines of the block
/// and before refused votes and verdicts.
#[test]
fn a_proven_bad_key_is_in_the_feed() {
    let session = Hash::sha256(b"bad key");
    let events = vec![
        Event::SegmentDecided {
            session,
            segment: 0,
            verdict: SegmentVerdict::Undecided,
        },
        Event::BadKeyProven {
            session,
            segment: 2,
            seat: account(3),
        },
        Event::VoteRefused {
            session,
            segment: 1,
            seat: account(2),
            reason: "already committed".into(),
        },
    ];
    let feed = derive(9, &events, &contract());
    let kinds: Vec<Kind> = feed.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds,
        [Kind::BadKeyProven, Kind::VoteRefused, Kind::SegmentDecided]
    );
    let proven = serde_json::to_value(&feed[0]).unwrap();
    assert_eq!(proven["kind"], "bad_key_proven");
    assert_eq!(proven["segment"], 2);
    assert_eq!(proven["account"], account(3).to_hex());
    assert_eq!(proven["session"], session.to_hex());
    assert_eq!(
        "bad_key_proven".parse::<Kind>().unwrap(),
        Kind::BadKeyProven
    );
    assert!(Kind::STORED.contains(&Kind::BadKeyProven));
    let back: FeedEvent = serde_json::from_value(proven).unwrap();
    assert_eq!(back, feed[0]);
}

/// `commit_due` as the feed said it before it indexed seats by account: for every key
/// event, every segment of the session scanned, a due seat said once per block. The
/// derivation must say exactly this, in this order, at a cost linear in the keys.
fn commit_due_by_scan(events: &[Event], after: &Contract) -> Vec<(Hash, u16, AccountId)> {
    let mut said = BTreeSet::new();
    let mut out = Vec::new();
    for ev in events {
        let Event::KeyDelivered { session, seat, .. } = ev else {
            continue;
        };
        let Some(s) = after.state().sessions.get(session) else {
            continue;
        };
        let trust_contracts::Phase::Commit { round, .. } = s.phase else {
            continue;
        };
        for (i, g) in s.segments.iter().enumerate() {
            let segment = u16::try_from(i).unwrap();
            let due = g.seats.iter().any(|x| {
                x.account == *seat
                    && x.round == round
                    && x.commitment.is_none()
                    && x.keyed(g.entry.depends_on.len())
            });
            if due && said.insert((*session, segment, *seat)) {
                out.push((*session, segment, *seat));
            }
        }
    }
    out
}

/// A session of a chain of premises (each segment cites the ones before it), its keys
/// delivered in two blocks, the first leaving some seats short of a premise's key: each
/// block's `commit_due` events are the scan's, one per seat fully keyed.
#[tokio::test]
async fn commit_due_is_said_once_for_each_fully_keyed_seat() {
    use trust_protocol::{
        Salt,
        seal::{key_context, seal_key},
        tx::{Call, QuorumParams, SeatKey, SegmentEntry, SessionManifest, Tx},
        units::Ppm,
    };

    let mut t = crate::testchain::TestChain::new("feedkeys", &[], crate::view::PeerView::default());
    let segments: Vec<SegmentEntry> = (0..4u16)
        .map(|i| SegmentEntry {
            cid: trust_protocol::cid::Cid::of(&[i as u8]),
            depends_on: (0..i).collect(),
            ..SegmentEntry::plain(Hash::sha256(&[b's', i as u8]), Tier::Computer)
        })
        .collect();
    let mut m = SessionManifest {
        segments: segments.clone(),
        mapping_commitment: trust_protocol::mapping_commitment(&Hash::ZERO, &Salt([2; 32])),
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
        honeypot_set: trust_protocol::honeypot_set_commitment(&[], &Salt([0; 32])),
    };
    m.fee = trust_contracts::minimum_fee(&trust_contracts::Params::default(), &m).unwrap();
    let open = t.sign(0, Call::OpenSession(m));
    let sid = Tx::session_id(&t.keys[0].public(), open.body.nonce);
    t.block(vec![open]).await;
    let drawn = t.block(vec![]).await;
    let seats: Vec<(u16, AccountId)> = drawn
        .iter()
        .filter_map(|e| match e {
            Event::SeatAssigned { segment, seat, .. } => Some((*segment, *seat)),
            _ => None,
        })
        .collect();
    assert_eq!(seats.len(), 12, "{drawn:?}");
    // Segment j's key goes to its own seats and to the seats of every later segment.
    let mut keys = Vec::new();
    for j in 0..4u16 {
        for (segment, seat) in &seats {
            if *segment >= j
                && !keys
                    .iter()
                    .any(|k: &SeatKey| k.segment == j && k.seat == *seat)
            {
                let sealing = trust_protocol::seal::SealingSecret::from_bytes([7; 32]).public();
                keys.push(SeatKey {
                    segment: j,
                    seat: *seat,
                    sealed: seal_key(
                        &sealing,
                        &[1; 32],
                        [3; 32],
                        &key_context(&sid, &segments[usize::from(j)].id, seat),
                    )
                    .unwrap(),
                });
            }
        }
    }
    // The last premise's keys held back a block: the seats of segment 3 are short.
    let (late, early): (Vec<SeatKey>, Vec<SeatKey>) =
        keys.into_iter().partition(|k| k.segment == 2);
    for batch in [early, late] {
        let deliver = t.sign(
            0,
            Call::DeliverKeys {
                session: sid,
                keys: batch,
            },
        );
        let before = t.chain.current().contract.clone();
        let events = t.block(vec![deliver]).await;
        let after = t.chain.current().contract.clone();
        assert_ne!(before.state_root(), after.state_root());
        let feed = derive(t.tip.height, &events, &after);
        let due: Vec<(Hash, u16, AccountId)> = feed
            .iter()
            .filter(|e| e.kind == Kind::CommitDue)
            .map(|e| (e.session.unwrap(), e.segment.unwrap(), e.account.unwrap()))
            .collect();
        let want = commit_due_by_scan(&events, &after);
        assert!(!want.is_empty());
        assert_eq!(due, want);
    }
}

/// A draw that waits for the network's capacity reaches the feed, once per block, before
/// the seats drawn in that block: the session, the tier at capacity and why, by name.
#[test]
fn a_deferred_draw_is_in_the_feed() {
    let session = Hash::sha256(b"waiting");
    let drawn = Hash::sha256(b"drawn");
    let events = vec![
        Event::SeatAssigned {
            session: drawn,
            segment: 0,
            seat: account(1),
            round: 0,
            tier: Tier::Computer,
        },
        Event::SessionDeferred {
            session,
            tier: Tier::Computer,
            judging: 1020,
            capacity: 1024,
        },
    ];
    let feed = derive(9, &events, &contract());
    let kinds: Vec<Kind> = feed.iter().map(|e| e.kind).collect();
    assert_eq!(kinds, [Kind::SessionDeferred, Kind::SeatDrawn]);
    let e = serde_json::to_value(&feed[0]).unwrap();
    assert_eq!(e["kind"], "session_deferred");
    assert_eq!(e["session"], session.to_hex());
    assert_eq!(e["tier"], serde_json::to_value(Tier::Computer).unwrap());
    let why = e["reason"].as_str().unwrap();
    assert!(
        why.contains("1020") && why.contains("capacity 1024"),
        "{why}"
    );
    assert_eq!(
        "session_deferred".parse::<Kind>().unwrap(),
        Kind::SessionDeferred
    );
}
