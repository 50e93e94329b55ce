//! `watch`: follow a node's event feed (`GET /v1/events`) as lines a person reads, or as
//! the raw JSON; and the session follower `submit --wait` uses.

use clap::Args;
use trust_protocol::AccountId;

use super::{
    CliError, CliResult,
    remote::{NodeAddr, api_error, runtime},
};
use crate::{
    api::client::{Client, ClientError, EventStream, SseFrame},
    feed::{FeedEvent, Kind},
};

/// `watch`: print the network's events as they are finalized.
#[derive(Debug, Args)]
pub struct WatchArgs {
    /// Only events for this account: `me` (this node's account) or an account id.
    #[arg(long)]
    pub account: Option<String>,
    /// Only events of this session.
    #[arg(long)]
    pub session: Option<String>,
    /// Only these kinds (repeat the flag for several).
    #[arg(long, value_enum)]
    pub kind: Vec<Kind>,
    /// Start strictly after this event id (`H:I`) or block (`H`), replaying stored events
    /// first; without it, start with the next block.
    #[arg(long)]
    pub after: Option<String>,
    /// Print each event's JSON, one per line.
    #[arg(long)]
    pub json: bool,
    /// Print the stored events (from the first block, or after --after) up to the tip the
    /// node is at now, then exit, instead of following the chain.
    #[arg(long)]
    pub no_follow: bool,
    /// The node to watch.
    #[command(flatten)]
    pub addr: NodeAddr,
}

/// Runs `watch` until the node stops the stream (or Ctrl-C).
pub fn run_watch(args: WatchArgs) -> CliResult {
    let addr = args.addr.resolve()?;
    let rt = runtime()?;
    rt.block_on(async {
        let me = Client::new(addr.as_str())
            .status()
            .await
            .map_err(api_error)?
            .node_id;
        let account = match args.account.as_deref() {
            Some("me") => Some(me),
            Some(a) => Some(a.trim().parse::<AccountId>().map_err(|e| {
                CliError::usage(format!(
                    "--account {a}: {e} (give `me` or a 64-hex account id)"
                ))
            })?),
            None => None,
        };
        let mut query = Vec::new();
        if let Some(a) = account {
            query.push(format!("account={a}"));
        }
        if let Some(s) = &args.session {
            query.push(format!("session={}", s.trim()));
        }
        if !args.kind.is_empty() {
            let kinds: Vec<&str> = args.kind.iter().map(|k| k.name()).collect();
            query.push(format!("kind={}", kinds.join(",")));
        }
        if args.no_follow {
            query.push("follow=false".to_string());
        }
        let path = match query.is_empty() {
            true => "/v1/events".to_string(),
            false => format!("/v1/events?{}", query.join("&")),
        };
        let mut resume = match (&args.after, args.no_follow) {
            (None, true) => Some("0".to_string()),
            (after, _) => after.clone(),
        };
        loop {
            let mut stream = EventStream::open(&addr, &path, resume.as_deref())
                .await
                .map_err(api_error)?;
            match follow(&mut stream, |e, frame| {
                match args.json {
                    true => outln!("{}", frame.data),
                    false => outln!("{}", line(e, Some(me))),
                }
                true
            })
            .await
            .map_err(api_error)?
            {
                Followed::Dropped(after) => {
                    eprintln!(
                        "note: the node dropped this stream (too slow); resuming after {after}"
                    );
                    resume = Some(after);
                }
                Followed::Ended if args.no_follow => return Ok(()),
                Followed::Ended => {
                    eprintln!("the node ended the stream (stopping?)");
                    return Ok(());
                }
                Followed::Stopped => return Ok(()),
            }
        }
    })
}

/// How [`follow`] returned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Followed {
    /// The node dropped the stream; resume after this id.
    Dropped(String),
    /// The node ended the stream.
    Ended,
    /// The callback asked to stop.
    Stopped,
}

/// Reads `stream`, calling `on` with each event until it returns `false`, the node drops
/// the client (its `dropped` event) or ends the stream.
pub async fn follow(
    stream: &mut EventStream,
    mut on: impl FnMut(&FeedEvent, &SseFrame) -> bool,
) -> Result<Followed, ClientError> {
    while let Some(frame) = stream.next().await? {
        let e: FeedEvent =
            serde_json::from_str(&frame.data).map_err(|source| ClientError::Json {
                what: "event data is not a feed event",
                source,
            })?;
        if e.kind == Kind::Dropped {
            return Ok(Followed::Dropped(e.resume_after.unwrap_or_default()));
        }
        if !on(&e, &frame) {
            return Ok(Followed::Stopped);
        }
    }
    Ok(Followed::Ended)
}

/// The events of one session from after a block on, across drops: what `submit --wait`
/// follows.
#[derive(Debug)]
pub struct SessionFollower {
    addr: String,
    path: String,
    resume: String,
    stream: Option<EventStream>,
}

impl SessionFollower {
    /// Follows `session` on the node at `addr` from after block `from`.
    pub fn new(addr: &str, session: &str, from: u64) -> Self {
        Self {
            addr: addr.to_string(),
            path: format!("/v1/events?session={session}"),
            resume: from.to_string(),
            stream: None,
        }
    }

    /// The session's next event; reconnects after the node dropped the stream, and says
    /// so if the node ended it.
    pub async fn next(&mut self) -> Result<FeedEvent, ClientError> {
        loop {
            let stream = match &mut self.stream {
                Some(s) => s,
                None => self
                    .stream
                    .insert(EventStream::open(&self.addr, &self.path, Some(&self.resume)).await?),
            };
            let Some(frame) = stream.next().await? else {
                return Err(ClientError::Io(std::io::Error::new(
                    std::io::ErrorKind::UnexpectedEof,
                    "the node ended the event stream",
                )));
            };
            let e: FeedEvent =
                serde_json::from_str(&frame.data).map_err(|source| ClientError::Json {
                    what: "event data is not a feed event",
                    source,
                })?;
            if e.kind == Kind::Dropped {
                self.resume = e.resume_after.unwrap_or_else(|| self.resume.clone());
                self.stream = None;
                continue;
            }
            self.resume = e.id.clone();
            return Ok(e);
        }
    }
}

/// `3fa2…c1`.
fn short(hex: &str) -> String {
    match (hex.get(..4), hex.get(hex.len().saturating_sub(2)..)) {
        (Some(a), Some(b)) if hex.len() > 8 => format!("{a}…{b}"),
        _ => hex.to_string(),
    }
}

/// One line for a person, e.g.
/// `#412  seat drawn      session 3fa2…c1 segment 4 → you (Computer); commit by #418`.
pub fn line(e: &FeedEvent, me: Option<AccountId>) -> String {
    let who = |a: Option<AccountId>| match a {
        Some(a) if Some(a) == me => "you".to_string(),
        Some(a) => short(&a.to_hex()),
        None => "?".to_string(),
    };
    let session = e
        .session
        .map(|s| format!("session {}", short(&s.to_hex())))
        .unwrap_or_default();
    let segment = e
        .segment
        .map(|s| format!(" segment {s}"))
        .unwrap_or_default();
    let amount = e.amount.unwrap_or(0);
    let what = match e.kind {
        Kind::SessionOpened => format!(
            "{session} by {}, {} segments",
            who(e.account),
            e.segments.unwrap_or(0)
        ),
        Kind::SeatDrawn => {
            let tier = e.tier.map(|t| format!(" ({t:?})")).unwrap_or_default();
            let by = e
                .commit_until
                .map(|h| format!("; commit by #{h}"))
                .unwrap_or_default();
            format!("{session}{segment} → {}{tier}{by}", who(e.account))
        }
        Kind::CommitDue => format!(
            "{session}{segment} → {}: keys in, commit by #{}",
            who(e.account),
            e.commit_until.unwrap_or(0)
        ),
        Kind::RevealDue => format!(
            "{session}{segment} → {}: reveal by #{}",
            who(e.account),
            e.reveal_until.unwrap_or(0)
        ),
        Kind::BadKeyProven => format!(
            "{session}{segment} → {}: proved its key does not open; starved, paid by the provider",
            who(e.account)
        ),
        Kind::VoteRefused => format!(
            "{session}{segment} → {}: vote refused ({})",
            who(e.account),
            e.reason.as_deref().unwrap_or("?")
        ),
        Kind::HoneypotsForfeited => format!(
            "{session} by {}: honeypot set not opened, bond {amount} burned",
            who(e.account),
        ),
        Kind::SlashRestored => format!(
            "{session}{segment} → {}: slash of {amount} given back ({}): an appeal decided it their way",
            who(e.account),
            e.reason.as_deref().unwrap_or("?")
        ),
        Kind::AppealQueued => format!(
            "{session} by {}: segments {} wait for the next appeal round ({} waiting before), bond {amount}",
            who(e.account),
            e.segments_appealed
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|s| format!("#{s}"))
                .collect::<Vec<_>>()
                .join(", "),
            e.position.unwrap_or(0)
        ),
        Kind::ExpertiseDeclared => format!(
            "{}: expertise {} declared, counting from #{}",
            who(e.account),
            e.expertise.as_deref().unwrap_or_default().join(", "),
            e.release_at.unwrap_or(0)
        ),
        Kind::ExpertiseChanged => format!(
            "{}: expertise now {}",
            who(e.account),
            e.expertise.as_deref().unwrap_or_default().join(", ")
        ),
        Kind::PauseAsked => format!(
            "{}: {} from #{}",
            who(e.account),
            if e.paused == Some(true) {
                "pausing"
            } else {
                "resuming"
            },
            e.release_at.unwrap_or(0)
        ),
        Kind::PauseChanged => format!(
            "{}: {}",
            who(e.account),
            if e.paused == Some(true) {
                "paused, not drawn for new seats"
            } else {
                "drawn again"
            }
        ),
        Kind::SegmentDecided => format!(
            "{session}{segment}: {}",
            e.verdict.as_deref().unwrap_or("?")
        ),
        Kind::SessionDecided => format!(
            "{session}: {} ({}/{} weight passing)",
            e.verdict.as_deref().unwrap_or("?"),
            e.passing_weight.unwrap_or(0),
            e.total_weight.unwrap_or(0)
        ),
        Kind::AppealOpened => format!(
            "{session} by {}: segments {} in round {}, bond {amount}",
            who(e.account),
            e.segments_appealed
                .as_deref()
                .unwrap_or_default()
                .iter()
                .map(|s| format!("#{s}"))
                .collect::<Vec<_>>()
                .join(", "),
            e.round.unwrap_or(0)
        ),
        Kind::AppealDecided => format!(
            "{session}{segment}: {} -> {} {} (trace {})",
            e.previous.as_deref().unwrap_or("?"),
            e.verdict.as_deref().unwrap_or("?"),
            if e.overturned == Some(true) {
                "overturned"
            } else {
                "not overturned"
            },
            e.trace.as_deref().unwrap_or("?")
        ),
        Kind::AppealCancelled => format!(
            "{session} by {}: bond {amount} back ({})",
            who(e.account),
            e.reason.as_deref().unwrap_or("?")
        ),
        Kind::SessionFinal => format!("{session}: final"),
        Kind::SessionFailed | Kind::SessionDeferred => {
            format!("{session}: {}", e.reason.as_deref().unwrap_or("?"))
        }
        Kind::Reward => format!("{session}{segment} → {}: +{amount}", who(e.account)),
        Kind::Slash => format!(
            "{session} → {}: -{amount} ({})",
            who(e.account),
            e.reason.as_deref().unwrap_or("?")
        ),
        Kind::Bonded => format!("{} bonded {amount}", who(e.account)),
        Kind::UnbondStarted => format!(
            "{} unbonding {amount}, free at #{}",
            who(e.account),
            e.release_at.unwrap_or(0)
        ),
        Kind::Withdrawn => format!("{} withdrew {amount}", who(e.account)),
        Kind::Dropped => format!(
            "stream dropped; resume after {}",
            e.resume_after.as_deref().unwrap_or("?")
        ),
    };
    let kind = e.kind.name().replace('_', " ");
    format!("#{:<5} {kind:<15} {what}", e.height)
}

#[cfg(test)]
mod tests {
    use trust_protocol::{Hash, Keypair, tx::Tier};

    use super::*;

    #[test]
    fn a_seat_drawn_for_me_reads_as_one_line() {
        let me = Keypair::from_seed([1; 32]).public();
        let e: FeedEvent = serde_json::from_value(serde_json::json!({
            "id": "412:1", "height": 412, "kind": "seat_drawn",
            "session": Hash::sha256(b"s").to_hex(), "segment": 4,
            "account": me.to_hex(), "round": 0, "tier": Tier::Computer, "commit_until": 418,
        }))
        .unwrap();
        let text = line(&e, Some(me));
        let s = Hash::sha256(b"s").to_hex();
        let want = format!(
            "#412   seat drawn      session {}…{} segment 4 → you (Computer); commit by #418",
            &s[..4],
            &s[62..]
        );
        assert_eq!(text, want);
        let other = line(&e, None);
        assert!(other.contains(&short(&me.to_hex())), "{other}");
    }
}
