//! `GET /v1/events`: the event feed ([`crate::feed`]) of finalized blocks as Server-Sent
//! Events, filtered by account, session and kind.
//!
//! - **Resume**: a `Last-Event-ID` header (or `?after=H:I`, or `?after=H` for the end of
//!   block `H`) starts strictly after that event. The stream subscribes to decided blocks
//!   *before* it reads the stored tail from the ledger, then sends live blocks, skipping
//!   every id it already sent: no gap, no duplicate. Without either it starts live, from
//!   the next block.
//! - **History**: `follow=false` ends the stream once the stored events up to the tip
//!   the request found are sent (`watch --no-follow`, `auditor history`).
//! - **Bounded**: each client has its own queue of [`CLIENT_QUEUE`] events, filled by its
//!   own task with `try_send`; the node's consensus never waits for a client. A client
//!   whose queue is full (or that fell so far behind that the decided-block broadcast
//!   overtook it) gets what is queued, then a final `dropped` event whose `resume_after` is
//!   the id of the last event it was sent, and the stream ends. At most
//!   [`MAX_SUBSCRIBERS`] streams are open at once; one more is answered 503. A stream's
//!   slot is held by its response *and* by the task that fills its queue, so tasks still
//!   reading the ledger for a client that left count against the cap too.
//! - **A replay stops with its client**: the stored tail is read one block at a time,
//!   and before each block the task checks that its client is still there (and the node
//!   is not stopping), and after each it yields to the runtime: a client that filters out
//!   everything of a long history, and leaves, costs at most one block read more, and
//!   never holds a worker thread for the whole history.
//! - **Alive and stoppable**: a keep-alive comment every [`KEEP_ALIVE`]; every stream ends
//!   when the node stops ([`EventHub::close`]), so the server's graceful shutdown does not
//!   wait for them. Streams carry no request body, so the server's body timeout never
//!   applies to them, and no other timeout cuts a response.

use std::{
    convert::Infallible,
    sync::{
        Arc,
        atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering},
    },
    time::Duration,
};

use axum::{
    extract::{Query, State},
    http::{HeaderMap, StatusCode},
    response::{
        IntoResponse, Response,
        sse::{Event as SseEvent, KeepAlive, Sse},
    },
};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, broadcast, mpsc, watch};
use tracing::Instrument;
use trust_protocol::{AccountId, Hash};

use super::{Api, ApiError, ApiResult, ErrorBody};
use crate::{
    consensus::driver::Decided,
    feed::{EventId, FeedEvent, Filter, Kind},
    ledger::Ledger,
};

/// Events queued for one client before it counts as unable to keep up.
pub const CLIENT_QUEUE: usize = 1024;
/// Event streams open at once.
pub const MAX_SUBSCRIBERS: usize = 64;
/// How often an idle stream sends a keep-alive comment.
pub const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// What the event streams share: the decided-block broadcast, the subscriber cap, the
/// per-client queue size and the signal that ends every stream.
#[derive(Debug, Clone)]
pub struct EventHub {
    decided: broadcast::Sender<Decided>,
    slots: Arc<Semaphore>,
    queue: usize,
    closing: Arc<watch::Sender<bool>>,
    dropped: Arc<AtomicU64>,
    /// Queue-filling tasks alive.
    pumps: Arc<AtomicUsize>,
}

impl EventHub {
    /// A hub over the driver's decided blocks with the default limits.
    pub fn new(decided: broadcast::Sender<Decided>) -> Self {
        Self::with_limits(decided, CLIENT_QUEUE, MAX_SUBSCRIBERS)
    }

    /// A hub with `queue` events per client and `subscribers` streams at most.
    pub fn with_limits(
        decided: broadcast::Sender<Decided>,
        queue: usize,
        subscribers: usize,
    ) -> Self {
        Self {
            decided,
            slots: Arc::new(Semaphore::new(subscribers)),
            queue: queue.max(1),
            closing: Arc::new(watch::Sender::new(false)),
            dropped: Arc::new(AtomicU64::new(0)),
            pumps: Arc::new(AtomicUsize::new(0)),
        }
    }

    /// Clients dropped so far for falling behind.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Tasks filling a client's queue that are alive now (at most the subscriber cap).
    pub fn pumps(&self) -> usize {
        self.pumps.load(Ordering::Acquire)
    }

    /// Ends every open stream and refuses new ones (the node is stopping).
    pub fn close(&self) {
        self.closing.send_replace(true);
    }
}

/// What a request asks of its stream.
struct Asked {
    filter: Filter,
    after: Option<EventId>,
    /// Whether the stream goes on with live blocks after the stored ones (`follow=false`:
    /// it ends at the tip it started at).
    follow: bool,
}

/// `?account=&session=&kind=&after=&follow=`, kinds repeated or comma-separated.
fn parse_query(pairs: &[(String, String)]) -> ApiResult<Asked> {
    let mut filter = Filter::default();
    let mut after = None;
    let mut follow = true;
    for (key, value) in pairs {
        match key.as_str() {
            "account" => {
                filter.account = Some(value.trim().parse::<AccountId>().map_err(|e| {
                    ApiError::bad(
                        "bad_account",
                        format!("account `{value}`: {e} (an account id is 64 hex characters)"),
                    )
                })?);
            }
            "session" => {
                filter.session = Some(value.trim().parse::<Hash>().map_err(|e| {
                    ApiError::bad(
                        "bad_session",
                        format!("session `{value}`: {e} (a session id is 64 hex characters)"),
                    )
                })?);
            }
            "kind" => {
                for k in value.split(',').map(str::trim).filter(|k| !k.is_empty()) {
                    let kind = k
                        .parse::<Kind>()
                        .map_err(|e| ApiError::bad("bad_kind", e.to_string()))?;
                    filter.kinds.insert(kind);
                }
            }
            "after" => after = Some(parse_id(value)?),
            "follow" => {
                follow = match value.trim() {
                    "true" => true,
                    "false" => false,
                    other => {
                        return Err(ApiError::bad(
                            "bad_query",
                            format!(
                                "follow `{}`: true or false",
                                other.chars().take(64).collect::<String>()
                            ),
                        ));
                    }
                };
            }
            other => {
                return Err(ApiError::bad(
                    "bad_query",
                    format!(
                        "unknown parameter `{}`; this route takes account, session, kind, after and follow",
                        other.chars().take(64).collect::<String>()
                    ),
                ));
            }
        }
    }
    Ok(Asked {
        filter,
        after,
        follow,
    })
}

fn parse_id(value: &str) -> ApiResult<EventId> {
    value
        .parse::<EventId>()
        .map_err(|e| ApiError::bad("bad_event_id", e.to_string()))
}

/// One SSE frame for `e`.
fn frame(e: &FeedEvent) -> SseEvent {
    let data = serde_json::to_string(e).unwrap_or_else(|_| "{}".into());
    let frame = SseEvent::default().event(e.kind.name()).data(data);
    if e.id.is_empty() {
        frame
    } else {
        frame.id(e.id.clone())
    }
}

#[utoipa::path(
    get, path = "/v1/events",
    description = "The event feed of finalized blocks as Server-Sent Events (`id:` the event id `H:I`, `event:` its kind, `data:` its JSON). Filters: `account`, `session`, `kind` (repeated or comma-separated; all must hold). `Last-Event-ID` or `after=H:I` (or `after=H`, the end of block H) resumes strictly after that event, replaying stored events first; without either the stream starts live. A client that falls more than 1024 events behind gets a final `dropped` event with `resume_after` and the stream ends. At most 64 streams at once.",
    params(
        ("account" = Option<String>, Query, description = "Only events for this account (64 hex)."),
        ("session" = Option<String>, Query, description = "Only events of this session (64 hex)."),
        ("kind" = Option<String>, Query, description = "Only these kinds, comma-separated or repeated: session_opened, session_deferred, seat_drawn, commit_due, reveal_due, bad_key_proven, vote_refused, honeypots_forfeited, segment_decided, session_decided, appeal_opened, appeal_queued, appeal_decided, appeal_cancelled, session_failed, session_final, reward, slash, slash_restored, bonded, unbond_started, withdrawn, expertise_declared, expertise_changed, pause_asked, pause_changed."),
        ("after" = Option<String>, Query, description = "Resume strictly after this event id (H:I) or block (H)."),
        ("follow" = Option<bool>, Query, description = "`false`: end the stream once the stored events up to the tip the request found are sent (with `after`, a bounded read of history); default `true`: go on with live blocks."),
        ("Last-Event-ID" = Option<String>, Header, description = "Resume strictly after this event id (as `after`)."),
    ),
    responses(
        (status = 200, description = "the event stream", content_type = "text/event-stream", body = String),
        (status = 404, description = "the events to resume from are not stored on this node", body = ErrorBody),
        (status = "4XX", description = documented_errors!(), body = ErrorBody),
        (status = "5XX", description = "too many streams, no event stream here, or stopping", body = ErrorBody),
    )
)]
pub(super) async fn events(
    State(api): State<Api>,
    headers: HeaderMap,
    Query(pairs): Query<Vec<(String, String)>>,
) -> ApiResult<Response> {
    let Asked {
        filter,
        after: after_query,
        follow,
    } = parse_query(&pairs)?;
    let after_header = match headers.get("last-event-id") {
        Some(v) => Some(parse_id(v.to_str().map_err(|_| {
            ApiError::bad("bad_event_id", "Last-Event-ID is not text")
        })?)?),
        None => None,
    };
    let after = after_header.or(after_query);
    let Some(hub) = api.events.clone() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "this node serves no event stream",
        ));
    };
    if *hub.closing.borrow() {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            "the node is stopping",
        ));
    }
    let Ok(permit) = hub.slots.clone().try_acquire_owned() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "unavailable",
            format!(
                "{MAX_SUBSCRIBERS} event streams are open, the most this node serves; retry shortly"
            ),
        ));
    };
    // Subscribed before the stored tail is read: a block decided meanwhile is either in
    // what is read, or arrives here (and is skipped if it was read).
    let live = hub.decided.subscribe();
    let tip = api
        .ledger
        .tip()
        .map_err(ApiError::internal)?
        .map_or(0, |(h, _)| h);
    let start = match after {
        Some(a) if a.index == u32::MAX => a.height.saturating_add(1),
        Some(a) => a.height,
        None => tip.saturating_add(1),
    };
    let replay = start.max(1)..=tip;
    if let Some(first) = replay.clone().next()
        && api
            .ledger
            .events(first)
            .map_err(ApiError::internal)?
            .is_none()
    {
        if let Some(oldest) = api.ledger.pruned_below(first).map_err(ApiError::internal)? {
            return Err(ApiError::not_found(format!(
                "the events of block {first} were pruned: this node keeps blocks from {oldest} on; resume from a later id, or ask an archive node"
            )));
        }
        return Err(ApiError::not_found(format!(
            "the events of block {first} are not stored on this node (its ledger predates the event store, or was restored from a snapshot); resume from a later id, or ask another node"
        )));
    }
    let last = after.unwrap_or(EventId::end_of(tip));
    let (tx, rx) = mpsc::channel(hub.queue);
    let dropped = Arc::new(AtomicBool::new(false));
    let permit = Arc::new(permit);
    let pump = Pump {
        _slot: Slot::hold(permit.clone(), hub.pumps.clone()),
        counter: hub.dropped.clone(),
        ledger: api.ledger.clone(),
        filter,
        last,
        follow,
        tx,
        dropped: dropped.clone(),
        closing: hub.closing.subscribe(),
    };
    tokio::spawn(
        pump.run(replay, live)
            .instrument(tracing::debug_span!("events-client", after = %last)),
    );
    let stream = futures::stream::unfold(
        Client {
            rx,
            last,
            dropped,
            done: false,
            _permit: permit,
        },
        Client::next,
    );
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
        .into_response())
}

/// The response side of one stream: drains the client's queue, then says `dropped` if
/// its pump gave up on it.
struct Client {
    rx: mpsc::Receiver<FeedEvent>,
    last: EventId,
    dropped: Arc<AtomicBool>,
    done: bool,
    /// The stream's slot, shared with its pump: free once both are gone.
    _permit: Arc<OwnedSemaphorePermit>,
}

/// A pump's share of its stream's slot, counted in [`EventHub::pumps`] while it lives.
struct Slot {
    _permit: Arc<OwnedSemaphorePermit>,
    pumps: Arc<AtomicUsize>,
}

impl Slot {
    fn hold(permit: Arc<OwnedSemaphorePermit>, pumps: Arc<AtomicUsize>) -> Self {
        pumps.fetch_add(1, Ordering::AcqRel);
        Slot {
            _permit: permit,
            pumps,
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pumps.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Client {
    async fn next(mut self) -> Option<(Result<SseEvent, Infallible>, Self)> {
        if self.done {
            return None;
        }
        match self.rx.recv().await {
            Some(e) => {
                if let Some(id) = e.event_id() {
                    self.last = id;
                }
                let f = frame(&e);
                Some((Ok(f), self))
            }
            None if self.dropped.load(Ordering::Acquire) => {
                self.done = true;
                let f = frame(&FeedEvent::dropped(Some(self.last)));
                Some((Ok(f), self))
            }
            None => None,
        }
    }
}

/// The task that fills one client's queue: stored events, then live ones.
struct Pump {
    _slot: Slot,
    ledger: Ledger,
    filter: Filter,
    /// The last id queued (or the resume point).
    last: EventId,
    /// Whether live blocks follow the stored ones.
    follow: bool,
    tx: mpsc::Sender<FeedEvent>,
    dropped: Arc<AtomicBool>,
    counter: Arc<AtomicU64>,
    closing: watch::Receiver<bool>,
}

/// Why a pump stopped.
enum Stop {
    /// The client left, or the node stops.
    Gone,
    /// The client fell behind.
    Behind,
}

impl Pump {
    async fn run(
        mut self,
        replay: std::ops::RangeInclusive<u64>,
        mut live: broadcast::Receiver<Decided>,
    ) {
        let why = match self.pump(replay, &mut live).await {
            Ok(()) => Stop::Gone,
            Err(why) => why,
        };
        if let Stop::Behind = why {
            tracing::info!(last = %self.last, "event stream client fell behind; dropped");
            self.dropped.store(true, Ordering::Release);
            self.counter.fetch_add(1, Ordering::Relaxed);
        }
    }

    async fn pump(
        &mut self,
        replay: std::ops::RangeInclusive<u64>,
        live: &mut broadcast::Receiver<Decided>,
    ) -> Result<(), Stop> {
        for height in replay {
            // The client may have left, or the node be stopping, while nothing it wants
            // was found: checked before every block read, not only on a send.
            if self.tx.is_closed() || *self.closing.borrow() {
                return Err(Stop::Gone);
            }
            // One block read at a time on the shared runtime.
            tokio::task::yield_now().await;
            let feed = match self.ledger.events(height) {
                Ok(Some(f)) => f,
                Ok(None) => continue,
                Err(e) => {
                    tracing::error!(height, error = %e, "stored events not readable; stream ends");
                    return Err(Stop::Gone);
                }
            };
            for e in feed {
                if self.wanted(&e) {
                    // Stored events wait for room: only this client's task waits.
                    tokio::select! {
                        biased;
                        _ = self.closing.wait_for(|c| *c) => return Err(Stop::Gone),
                        sent = self.tx.send(e) => sent.map_err(|_| Stop::Gone)?,
                    }
                }
            }
        }
        if !self.follow {
            return Ok(());
        }
        loop {
            let decided = tokio::select! {
                biased;
                _ = self.closing.wait_for(|c| *c) => return Err(Stop::Gone),
                () = self.tx.closed() => return Err(Stop::Gone),
                d = live.recv() => d,
            };
            let d = match decided {
                Ok(d) => d,
                Err(broadcast::error::RecvError::Lagged(_)) => return Err(Stop::Behind),
                Err(broadcast::error::RecvError::Closed) => return Ok(()),
            };
            for e in d.feed.iter() {
                if self.wanted(e) {
                    match self.tx.try_send(e.clone()) {
                        Ok(()) => {}
                        Err(mpsc::error::TrySendError::Full(_)) => return Err(Stop::Behind),
                        Err(mpsc::error::TrySendError::Closed(_)) => return Err(Stop::Gone),
                    }
                }
            }
        }
    }

    /// Whether `e` is new to this client and passes its filter; moves the mark.
    fn wanted(&mut self, e: &FeedEvent) -> bool {
        let Some(id) = e.event_id() else {
            return false;
        };
        if id <= self.last {
            return false;
        }
        self.last = id;
        self.filter.matches(e)
    }
}
