//! `run`, `status`, `query` and `submit`: running a node and talking to one through its
//! HTTP API (`auditor` is in [`super::auditor`]).

use std::time::Duration;

use clap::Args;
use serde_json::json;
use trust_contracts::{CastVote, Outcome, SegmentVerdict};
use trust_protocol::{Hash, Vote, hdag::MAX_HDAG_JSON_BYTES};

pub use super::remote::{NodeAddr, terms_line};
use super::{
    CliError, CliResult,
    keys::{expand_home, node_home},
    remote::{api_error, api_token, reply_json, runtime},
};
use trust_judging::preview::Failed;

use crate::{
    api::{
        addr::ApiAddr,
        client::{self, Client},
        views::{OpenSessionBody, PhaseView, SessionStatus, SessionView},
    },
    config, daemon,
};

fn failed(e: impl std::fmt::Display) -> CliError {
    CliError::failed(e.to_string())
}

/// `run`: start the node daemon.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The node's home directory (config.toml, genesis.json, keys, data).
    #[arg(long, env = "TRUST_HOME", default_value = "~/.trust-node")]
    pub home: String,
    /// HTTP API address, overriding `[api] listen` (e.g. 127.0.0.1:8480).
    #[arg(long)]
    pub api_listen: Option<String>,
    /// libp2p address of the node's swarm, overriding `[network] listen`.
    #[arg(long)]
    pub p2p_listen: Option<String>,
    /// libp2p address of the consensus engine, overriding `[consensus] listen`.
    #[arg(long)]
    pub consensus_listen: Option<String>,
    /// Least time between blocks in milliseconds, overriding `[consensus] block_time`.
    #[arg(long)]
    pub block_time_ms: Option<u64>,
    /// An external IPFS node's RPC API (e.g. http://127.0.0.1:5001), overriding
    /// `[ipfs] api`: provided ciphertexts are stored there too and seats read from it
    /// first.
    #[arg(long)]
    pub ipfs_api: Option<String>,
    /// Base URL of an OpenAI-compatible chat endpoint for this node's LLM seats (e.g.
    /// http://127.0.0.1:8080/v1), overriding `[llm] url`.
    #[arg(long)]
    pub llm_url: Option<String>,
    /// The model name sent to the LLM endpoint, overriding `[llm] model`.
    #[arg(long)]
    pub llm_model: Option<String>,
    /// The name of the environment variable that holds the LLM endpoint's API key,
    /// overriding `[llm] api_key_env` (the key itself is never passed as a flag).
    #[arg(long)]
    pub llm_api_key_env: Option<String>,
    /// Human seats: this node's Human-tier seats wait for a person at the audit form
    /// (`/audit` on the API address; log in with the operator token), as `human = true`
    /// in `[auditor]` of config.toml does. Register the node with `auditor register --tier
    /// human`.
    #[arg(long)]
    pub human: bool,
    /// Join from a recent state instead of replaying every block: when the ledger holds
    /// no block (a new node, or a genesis validator that never ran), fetch the newest
    /// contract snapshot from these nodes' APIs (`HOST:PORT` or `http://HOST:PORT`,
    /// comma-separated, tried in turn), check it against its block's state root and the
    /// next block's commit certificate (more than 2/3 of the genesis validators' power),
    /// start the ledger there and sync the blocks after it. Past the genesis unbonding
    /// horizon (block `unbond_delay` of the genesis, 20 by default) genesis power no longer
    /// vouches for a snapshot: pass `--state-sync-trust` too. Ignored when the ledger holds
    /// blocks.
    #[arg(long, value_name = "HOST:PORT[,...]", value_delimiter = ',')]
    pub state_sync: Vec<ApiAddr>,
    /// With `--state-sync`: a block you trust, read from a node you trust (`trust-node
    /// status --api HOST:PORT` there prints its `height` and `tip` hash; pass them as
    /// HEIGHT:TIP). The node takes the peer's newest snapshot at or below HEIGHT and
    /// requires the chain of block headers from the snapshot's block up to this one to end
    /// at HASH, instead of checking the next block's certificate against the genesis
    /// validators. Needed past the genesis unbonding horizon (see `--state-sync`), or on a
    /// network whose validator powers moved since genesis.
    #[arg(long, value_name = "HEIGHT:HASH", requires = "state_sync")]
    pub state_sync_trust: Option<crate::proof::TrustedBlock>,
    /// On SIGTERM or SIGINT, keep running at most this long (`90s`, `2m`) to finish the
    /// commits and reveals this node's seats owe, taking no new seats, then stop; a second
    /// signal stops at once. Overrides `[auditor] drain_timeout` (default 2m); `0s` stops
    /// at once. A supervisor's stop timeout (systemd `TimeoutStopSec`) must be longer.
    #[arg(long, value_name = "DURATION", value_parser = humantime_serde::re::humantime::parse_duration)]
    pub drain_timeout: Option<Duration>,
}

/// Runs the daemon on a multi-threaded runtime until SIGINT/SIGTERM.
pub fn run_node(args: RunArgs) -> CliResult {
    let home = node_home(&args.home)?;
    let overrides = daemon::Overrides {
        api_listen: args.api_listen,
        p2p_listen: args.p2p_listen,
        consensus_listen: args.consensus_listen,
        block_time: args.block_time_ms.map(Duration::from_millis),
        ipfs_api: args.ipfs_api,
        llm_url: args.llm_url,
        llm_model: args.llm_model,
        llm_api_key_env: args.llm_api_key_env,
        human: args.human,
        state_sync: args.state_sync,
        state_sync_trust: args.state_sync_trust,
        drain_timeout: args.drain_timeout,
    };
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(failed)?;
    rt.block_on(daemon::run(&home, overrides))
        .map_err(|e| match e {
            daemon::DaemonError::Home(m) => CliError::usage(m.to_string()),
            other => failed(other),
        })
}

/// `value`, or `null` where the node sent none (as these lines have always shown it).
fn or_null(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "null".to_string(), |v| v.to_string())
}

/// `status`: the node's height, state root and peers.
#[derive(Debug, Args)]
pub struct StatusArgs {
    #[command(flatten)]
    addr: NodeAddr,
    /// Print the API's JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `status`.
pub fn run_status(args: StatusArgs) -> CliResult {
    let addr = args.addr.resolve()?;
    let s = runtime()?
        .block_on(Client::new(addr).status())
        .map_err(api_error)?;
    if args.json {
        outln!("{}", reply_json(&s)?);
        return Ok(());
    }
    outln!("node        {}", s.node_id);
    outln!("validator   {}", s.validator);
    outln!("height      {}", s.height);
    outln!("tip         {}", s.tip_hash);
    outln!("state root  {}", s.state_root);
    outln!("peers       {}", s.peers);
    for p in &s.peer_heights {
        outln!("  {}  height {}", p.peer, p.height);
    }
    outln!("mempool     {}", s.mempool);
    let st = &s.storage;
    outln!(
        "blocks      {} to {} held",
        s.oldest_block.map_or("none".to_string(), |o| o.to_string()),
        s.height
    );
    outln!(
        "state       {} accounts, {} auditors, {} live sessions, {} outcomes, {} failed, {} tree nodes",
        st.accounts,
        st.auditors,
        st.live_sessions,
        st.outcomes,
        st.failed,
        st.tree_nodes
    );
    outln!(
        "disk        {:.1} MiB",
        st.disk_bytes as f64 / (1024.0 * 1024.0)
    );
    if let Some(llm) = &s.llm {
        outln!(
            "llm         {} model {}: {}",
            llm.url,
            llm.model,
            match &llm.error {
                _ if llm.answers => "answers".to_string(),
                Some(e) => format!("does not answer ({e})"),
                None => "does not answer".to_string(),
            }
        );
    }
    Ok(())
}

/// `query`: a session's outcome.
#[derive(Debug, Args)]
pub struct QueryArgs {
    /// The session id: 64 hex characters, or its first 8 or more when they start exactly
    /// one id the node knows (as the pages and `/search` show them).
    pub session: String,
    #[command(flatten)]
    addr: NodeAddr,
    /// Print the API's JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Fetch the outcome's proof and check it against this home's genesis.json, or the
    /// file --genesis names (chain id, validator keys and stakes, with every change of the
    /// validator powers walked from genesis), trusting nothing the node says; exits 1 if
    /// any part fails.
    #[arg(long)]
    verify: bool,
    /// With --verify: the network's genesis file to check against, instead of the home's
    /// genesis.json (no node home needed: name the node with --api), as `proof verify
    /// --genesis` reads it.
    #[arg(long, value_name = "FILE", requires = "verify")]
    genesis: Option<std::path::PathBuf>,
    /// Under each segment, list its revealed votes: the seat (short id), the vote, and the
    /// reason the seat bound into its commitment.
    #[arg(long)]
    segments: bool,
}

/// Runs `query`.
pub fn run_query(mut args: QueryArgs) -> CliResult {
    let addr = args.addr.resolve()?;
    // A unique start of the id (as the pages show it) stands for the whole.
    args.session = super::remote::resolve_session(&addr, &args.session)?.to_hex();
    if args.verify {
        return verify_query(&args, &addr);
    }
    let sid = Hash::from_hex(&args.session)
        .map_err(|_| CliError::usage("session id must be 64 hex characters"))?;
    let token = api_token(None, &args.addr)?;
    let s = runtime()?
        .block_on(session_seen(&Client::new(addr), &sid, token.as_deref()))
        .map_err(api_error)?;
    if args.json {
        outln!("{}", reply_json(&s)?);
        return Ok(());
    }
    let names = s.step_names();
    print_session(&args.session, &s, &names, args.segments);
    Ok(())
}

/// A session as the node shows it: with the home's operator token when there is one, so
/// that the node that opened it shows its steps; a node the token is not for answers 401,
/// and is then asked without it.
async fn session_seen(
    api: &Client,
    sid: &Hash,
    token: Option<&str>,
) -> Result<SessionView, client::ClientError> {
    match token {
        Some(t) => match api.session_as_operator(sid, t).await {
            Err(client::ClientError::Api { status: 401, .. }) => api.session(sid).await,
            other => other,
        },
        None => api.session(sid).await,
    }
}

/// `query --verify`: fetches `/v1/sessions/{id}/proof` and checks it locally.
fn verify_query(args: &QueryArgs, addr: &str) -> CliResult {
    let sid = trust_protocol::Hash::from_hex(&args.session)
        .map_err(|_| CliError::usage("session id must be 64 hex characters"))?;
    let doc = match &args.genesis {
        Some(file) => config::load_genesis_file(file)
            .map_err(|e| CliError::usage(format!("the genesis file: {e}")))?,
        None => {
            let hint = "--verify checks against the home's genesis.json; --genesis FILE checks against a genesis file instead";
            let home = expand_home(&args.addr.home);
            config::require_home(&home)
                .and_then(|()| config::load_genesis(&home))
                .map_err(|e| CliError::usage(format!("{e} ({hint})")))?
        }
    };
    let proof = super::proof::fetch_proof(addr, &sid, None)?;
    let trust = crate::proof::Trust {
        chain: doc.chain_id(),
        validators: &doc.validators,
        genesis: &doc.genesis,
        block: None,
    };
    let v = crate::proof::verify(&proof, &sid, &trust)
        .map_err(|e| CliError::failed(format!("proof REJECTED: {e}")))?;
    if args.json {
        let outcome = serde_json::to_value(&v.outcome).map_err(failed)?;
        outln!(
            "{}",
            json!({
                "session": sid,
                "verified": true,
                "final": matches!(v.outcome.finality(), trust_contracts::Finality::Final { .. }),
                "height": v.header.height,
                "block_hash": v.header.hash(),
                "certified_time_ms": v.header.time_ms,
                "certified_time": crate::chain::format_time(v.header.time_ms),
                "state_root": v.header.state_root,
                "signed_power": v.power.0.to_string(),
                "total_power": v.power.1.to_string(),
                "power_changes_walked": v.hops,
                "outcome": outcome,
            })
        );
        return Ok(());
    }
    outln!("session     {sid}");
    outln!("verdict     {:?}", v.outcome.trace);
    outln!(
        "finality    {}",
        super::proof::finality_text(v.outcome.finality().into())
    );
    outln!(
        "decided     at block {}, by {} (the certified block's time)",
        v.outcome.decided_at,
        crate::chain::format_time(v.header.time_ms)
    );
    outln!(
        "verified    outcome under state root {} of block {} ({}),",
        v.header.state_root,
        v.header.height,
        v.header.hash()
    );
    outln!(
        "            certified by validators holding {} of {} voting power (genesis chain {})",
        v.power.0,
        v.power.1,
        doc.chain_id()
    );
    outln!(
        "            (powers walked from genesis through {} change(s))",
        v.hops.len()
    );
    Ok(())
}

/// A session phase as one line: `Commit { round: 0, until: 12 }` reads
/// `commit (round 0, open until block 12)`.
fn phase_text(p: &PhaseView) -> String {
    let name = p.name.as_str();
    match (p.round, p.until) {
        (Some(round), Some(until)) => format!("{name} (round {round}, open until block {until})"),
        (None, Some(until)) => format!("{name} (open until block {until})"),
        _ => name.to_string(),
    }
}

/// The name the API gives a unit variant (`Invalid`, `Computer`): its Rust name, as a
/// string that `{:<10}` pads.
fn word(v: impl std::fmt::Debug) -> String {
    format!("{v:?}")
}

/// Why a segment verdict is an error, in the ARES terms the paper uses.
fn error_kind(verdict: &str) -> &'static str {
    match verdict {
        "Invalid" => "invalid: the step does not follow from its premises",
        "Ungrounded" => "ungrounded: rests on a claim nothing established",
        "Propagated" => "propagated: depends on a step that failed",
        "Undecided" => "undecided: no quorum (its seats abstained or split)",
        _ => "",
    }
}

/// `why` with each `#i` the node wrote replaced by the provider's name for segment `i`,
/// where it knows one.
fn with_names(why: &str, names: &[String]) -> String {
    let mut out = String::with_capacity(why.len());
    let mut rest = why;
    while let Some(at) = rest.find('#') {
        let (before, after) = rest.split_at(at);
        out.push_str(before);
        let digits = after
            .get(1..)
            .unwrap_or("")
            .chars()
            .take_while(char::is_ascii_digit)
            .count();
        let number = after.get(1..=digits).unwrap_or("");
        match number.parse::<usize>().ok().and_then(|i| names.get(i)) {
            Some(name) if digits > 0 => out.push_str(name),
            _ => out.push_str(after.get(..=digits).unwrap_or(after)),
        }
        rest = after.get(digits.saturating_add(1)..).unwrap_or("");
    }
    out.push_str(rest);
    out
}

/// Prints a session as `query` and `submit --wait` show it; `names` are the provider's
/// labels for the segments (HDAG node id and tier), known only to the provider's node.
/// A decided session in lines a person reads; with `votes`, each segment's revealed votes
/// and their reasons under it.
fn print_session(id: &str, s: &SessionView, names: &[String], votes: bool) {
    outln!("session     {id}");
    if let Some(t) = &s.terms {
        outln!("{}", terms_line(t));
    }
    match (s.status, &s.outcome) {
        (SessionStatus::Decided, Some(o)) => {
            let height = s.block_height.unwrap_or(o.decided_at);
            match s.block_hash {
                Some(h) => outln!("status      decided at block {height} ({h})"),
                // Below the oldest block this node holds (it joined by state sync, or
                // prunes): the outcome itself names the height.
                None => outln!(
                    "status      decided at block {height} (a block this node does not hold; an archive node has it)"
                ),
            }
            if let Some(t) = &s.decided_time {
                outln!("decided     {t}");
            }
            if let Some(f) = &s.finality {
                outln!("{}", super::appeal::finality_line(f, &s.session));
            }
            print_outcome(o, s.explanation.as_deref(), names, votes);
            for line in super::appeal::appeal_lines(s) {
                outln!("{line}");
            }
        }
        (SessionStatus::Live, _) => {
            outln!(
                "status      live, {}",
                s.phase.as_ref().map_or_else(|| "null".into(), phase_text)
            );
            outln!(
                "seats       {} drawn, {} committed, {} revealed",
                or_null(s.seats.map(|c| c.assigned)),
                or_null(s.seats.map(|c| c.committed)),
                or_null(s.seats.map(|c| c.revealed))
            );
        }
        (SessionStatus::Failed, _) => {
            outln!("status      failed");
            outln!(
                "failure     {}",
                s.failure.as_ref().map_or("?", |f| f.reason.as_str())
            );
        }
        (other, _) => outln!("status      {}", other.as_str()),
    }
    print_steps(s);
}

/// On the provider's node: each of the model's own steps under its name, in trace order,
/// with its verdict, where it sits in the trace and its text, verbatim (a text of several
/// lines goes on under itself, indented); then, apart, the honeypots the node planted.
fn print_steps(s: &SessionView) {
    let Some(steps) = &s.steps else {
        return;
    };
    let planted = s.honeypots.as_deref().unwrap_or_default();
    let row = |x: &crate::api::views::StepView| {
        let verdict = match (&x.verdict, x.left_out) {
            (Some(v), false) => v.clone(),
            (Some(v), true) => format!("{v} (left out)"),
            (None, true) => "left out".into(),
            (None, false) => "-".into(),
        };
        let place = match (&x.span, x.honeypot) {
            (_, true) => "planted".to_string(),
            (Some(sp), false) => format!("{}:{}", sp.part, sp.line),
            (None, false) => "-".to_string(),
        };
        (x.name.clone(), verdict, place)
    };
    let rows: Vec<(String, String, String)> = steps.iter().chain(planted).map(row).collect();
    // Columns as wide as their widest cell, so that none runs into the next.
    let width = |f: fn(&(String, String, String)) -> &String, head: &str| {
        rows.iter()
            .map(|r| f(r).chars().count())
            .chain([head.len()])
            .max()
            .unwrap_or(0)
    };
    let (wn, wv, wp) = (
        width(|r| &r.0, "name"),
        width(|r| &r.1, "verdict"),
        width(|r| &r.2, "where"),
    );
    let table = |label: &str,
                 list: &[crate::api::views::StepView],
                 rows: &[(String, String, String)],
                 text: &str| {
        outln!(
            "{label:<11} {:<wn$}  {:<wv$}  {:<wp$}  {text}",
            "name",
            "verdict",
            "where"
        );
        // An agent transcript's steps go under the turn they sit in, a tool call as its
        // code and the result the transcript reports.
        let mut turn: Option<&str> = None;
        for (x, (name, verdict, place)) in list.iter().zip(rows) {
            if let Some(t) = x.turn.as_deref()
                && turn != Some(t)
            {
                outln!("            ── {t}");
                turn = Some(t);
            }
            let text = crate::query::steps::step_lines(x);
            let mut lines = text.iter();
            outln!(
                "            {name:<wn$}  {verdict:<wv$}  {place:<wp$}  {}",
                lines.next().map_or("", String::as_str)
            );
            for more in lines {
                outln!("            {:<wn$}  {:<wv$}  {:<wp$}  {more}", "", "", "");
            }
        }
    };
    let (own, theirs) = rows.split_at(steps.len().min(rows.len()));
    table(
        "steps",
        steps,
        own,
        "text (the model's own, in trace order; verbatim, a tool call as its code → its reported result; where: part:line of the trace)",
    );
    if !planted.is_empty() {
        table(
            "honeypots",
            planted,
            theirs,
            "text (planted by this node, not the model's: never counted in the verdict)",
        );
    }
}

/// The lines of a decided session's outcome under its status line.
fn print_outcome(o: &Outcome, explanation: Option<&str>, names: &[String], votes: bool) {
    let segs = &o.segments;
    let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    // Honeypots, and the calculations planted beside them, are not part of the trace.
    let failed: Vec<Failed> = segs
        .iter()
        .enumerate()
        .filter(|(i, _)| !crate::query::planted(o, *i))
        .filter_map(|(i, seg)| match seg.verdict {
            v @ (SegmentVerdict::Invalid | SegmentVerdict::Ungrounded) => Some(Failed {
                name: name(i),
                verdict: v,
                of: seg.supports.map(|s| name(usize::from(s))),
            }),
            _ => None,
        })
        .collect();
    let cov = &o.coverage;
    outln!(
        "verdict     {}",
        verdict_words(
            o.trace,
            usize::from(cov.judged),
            usize::from(cov.segments),
            &failed
        )
    );
    if let Some(why) = explanation {
        outln!("why         {}", with_names(why, names));
    }
    outln!("weights     {}", weights_words(o));
    let parts: Vec<String> = ["Computer", "LLM", "Human"]
        .iter()
        .zip(cov.left_out)
        .filter(|(_, n)| *n > 0)
        .map(|(t, n)| format!("{n} {t}"))
        .collect();
    if !parts.is_empty() {
        outln!(
            "left out    {} (no such auditors on the network; counted as undecided)",
            parts.join(", ")
        );
    }
    outln!(
        "bound       {}",
        crate::report::words::bound_line(o.bound.hoeffding_neg_ln_milli)
    );
    for line in segment_lines(o, names, votes) {
        outln!("{line}");
    }
    // Left-out segments are wrong only through a calculation of their own or a
    // step they rest on.
    let left_name = |j: usize| name(segs.len().saturating_add(j));
    let with = |v: SegmentVerdict| -> Vec<String> {
        o.left_out
            .iter()
            .enumerate()
            .filter(|(_, l)| l.verdict == v)
            .map(|(j, _)| left_name(j))
            .collect()
    };
    for (v, why) in [
        (SegmentVerdict::Invalid, "a calculation in it is wrong"),
        (
            SegmentVerdict::Ungrounded,
            "a calculation in it uses a number nothing gives",
        ),
        (SegmentVerdict::Propagated, "rests on a step that failed"),
    ] {
        let names = with(v);
        if !names.is_empty() {
            outln!("left out    {} {v:?}: {why}", names.join(", "));
        }
    }
}

/// The verdict line a newcomer reads first: the verdict, the segments that failed on their
/// own, each said in a sentence, and how many of the trace's claims their own seats
/// decided. `FAIL: O1 is Invalid (a calculation in ST3); 3 of the trace's 7 claims were
/// decided by their own seats`.
fn verdict_words(
    verdict: trust_contracts::TraceVerdict,
    judged: usize,
    total: usize,
    failed: &[Failed],
) -> String {
    trust_judging::preview::summary_line(verdict, judged, total, failed, "by their own seats")
}

/// The weights line: how much of the trace's weight passed, is undecided and failed, and
/// how much a PASS needs at the session's `beta` (a share of the weight, rounded up to a
/// whole weight since weights are integers). `0 of 7 passing, 3 undecided, 4 failed (a
/// PASS needs at least 5 passing: 60%); an error reaches the conclusion`.
fn weights_words(o: &Outcome) -> String {
    let failed = o
        .total_weight
        .saturating_sub(o.passing_weight)
        .saturating_sub(o.undecided_weight);
    let needs = u128::from(o.total_weight)
        .saturating_mul(u128::from(o.beta.0))
        .div_ceil(1_000_000);
    format!(
        "{} of {} passing, {} undecided, {failed} failed (a PASS needs at least {needs} passing: {:.0}%){}",
        o.passing_weight,
        o.total_weight,
        o.undecided_weight,
        f64::from(o.beta.0) / 10_000.0,
        if o.error_at_conclusion {
            "; an error reaches the conclusion"
        } else {
            ""
        }
    )
}

/// Why a segment's seats abstained, or why it was left undecided, from the public reasons
/// its seats revealed (those of its last round): `undecided: no verdict reached the
/// quorum of 2 of 3 seats; 3 abstained: no judge could check it`. The most frequent reason is quoted (the
/// first revealed, on a tie) and the number of others given. `None` for a segment that
/// is decided with no abstention.
fn abstention_words(seg: &trust_contracts::SegmentOutcome) -> Option<String> {
    let last = seg.votes_cast.iter().map(|v| v.round).max();
    let reasons: Vec<String> = seg
        .votes_cast
        .iter()
        .filter(|v| Some(v.round) == last && v.vote.is_abstain())
        .map(|v| one_line(&v.reason))
        .collect();
    let mut seen: Vec<(&str, usize)> = Vec::new();
    for r in &reasons {
        match seen.iter_mut().find(|(x, _)| *x == r.as_str()) {
            Some((_, n)) => *n += 1,
            None => seen.push((r, 1)),
        }
    }
    let most = seen
        .iter()
        .fold(None::<(&str, usize)>, |best, &(r, n)| match best {
            Some((_, m)) if m >= n => best,
            _ => Some((r, n)),
        });
    let abstained = most.map(|(reason, _)| {
        let others = seen.len().saturating_sub(1);
        format!(
            "{} abstained: {}{}",
            reasons.len(),
            if reason.is_empty() {
                "(no reason given)"
            } else {
                reason
            },
            match others {
                0 => String::new(),
                n => format!(
                    " (and {n} other reason{}: --segments lists them)",
                    if n == 1 { "" } else { "s" }
                ),
            }
        )
    });
    let v = &seg.votes;
    let missing = (v.missing > 0).then(|| format!("{} never revealed", v.missing));
    let detail: Vec<String> = abstained.into_iter().chain(missing).collect();
    match seg.verdict {
        SegmentVerdict::Undecided => {
            let mut s = format!(
                "undecided: no verdict reached the quorum of {} of {} seats",
                seg.q, seg.k
            );
            if detail.is_empty() {
                s.push_str(&format!(
                    " (the seats split: {} Valid, {} Invalid, {} Ungrounded)",
                    v.valid, v.invalid, v.ungrounded
                ));
            } else {
                s.push_str("; ");
                s.push_str(&detail.join(", "));
            }
            Some(s)
        }
        _ if reasons.is_empty() => None,
        _ => Some(detail.join(", ")),
    }
}

/// A vote's reason on one line: newlines and tabs as spaces, any other control or
/// invisible format character (which the contract refuses anyway) as `?`.
fn one_line(reason: &str) -> String {
    reason
        .chars()
        .map(|c| match c {
            '\n' | '\t' => ' ',
            c if c.is_control() || trust_protocol::commit::is_format_char(c) => '?',
            c => c,
        })
        .collect()
}

/// The table of a decided session's segments, a row each (index, the provider's name or
/// `#i`, tier, verdict, vote counts, and what kind of error or segment it is), under a
/// header; with `votes`, each row followed by its segment's [`vote_lines`]. Columns are as
/// wide as their widest cell ([`super::table`]): a long name or verdict never runs into
/// the next column.
fn segment_lines(o: &Outcome, names: &[String], votes: bool) -> Vec<String> {
    let segs = &o.segments;
    if segs.is_empty() {
        return Vec::new();
    }
    let name = |i: usize| names.get(i).cloned().unwrap_or_else(|| format!("#{i}"));
    let mut rows: Vec<Vec<String>> = vec![
        [
            "#",
            "node",
            "tier",
            "verdict",
            "votes v/i/u/abstain (missing)",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for (i, seg) in segs.iter().enumerate() {
        let verdict = word(seg.verdict);
        let v = &seg.votes;
        let kind = match (seg.honeypot, seg.supports) {
            (Some(truth), _) => {
                format!("honeypot (known {truth:?}): not part of the trace")
            }
            (None, Some(step)) if crate::query::planted(o, i) => {
                format!(
                    "calculation of honeypot {}: not part of the trace",
                    name(usize::from(step))
                )
            }
            (None, Some(step)) => {
                let of = name(usize::from(step));
                match kind_of(seg, &verdict) {
                    k if k.is_empty() => format!("calculation of {of}"),
                    k => format!("calculation of {of}; {k}"),
                }
            }
            (None, None) => kind_of(seg, &verdict),
        };
        let mut row = vec![
            i.to_string(),
            name(i),
            word(seg.tier),
            verdict,
            format!(
                "{}/{}/{}/{} ({})",
                v.valid, v.invalid, v.ungrounded, v.abstained, v.missing
            ),
        ];
        if !kind.is_empty() {
            row.push(kind);
        }
        rows.push(row);
    }
    let mut out = Vec::new();
    for (n, line) in super::table::lines(Some("segments    "), ROW_INDENT, &rows)
        .into_iter()
        .enumerate()
    {
        out.push(line);
        let seg = n.checked_sub(1).and_then(|i| segs.get(i));
        if let (true, Some(seg)) = (votes, seg) {
            out.extend(vote_lines(&seg.votes_cast));
        }
    }
    out
}

/// What a segment's row says of it: the kind of error, or why it is undecided or its seats
/// abstained ([`abstention_words`]), or both.
fn kind_of(seg: &trust_contracts::SegmentOutcome, verdict: &str) -> String {
    match (seg.verdict, abstention_words(seg)) {
        (SegmentVerdict::Undecided, Some(why)) => why,
        (_, why) => [error_kind(verdict).to_string(), why.unwrap_or_default()]
            .into_iter()
            .filter(|p| !p.is_empty())
            .collect::<Vec<_>>()
            .join("; "),
    }
}

/// Where the rows of the segment table start (under the `segments` label).
const ROW_INDENT: &str = "            ";

/// The widest vote name (`Ungrounded`): the vote column of [`vote_lines`] is this wide,
/// and a separator follows it.
fn vote_width() -> usize {
    [Vote::Valid, Vote::Invalid, Vote::Ungrounded, Vote::Abstain]
        .iter()
        .map(|v| word(v).len())
        .max()
        .unwrap_or(0)
}

/// One line per revealed vote of a segment's `votes_cast`: the seat's short id, the vote
/// (in a column as wide as the widest vote name, then a gap, so that `Ungrounded` never
/// runs into what follows), a mark for a late or second-round vote, and the reason on one
/// line (newlines and tabs as spaces; any other control character, which the contract
/// refuses anyway, as `?`).
fn vote_lines(cast: &[CastVote]) -> Vec<String> {
    cast.iter()
        .map(|v| {
            let seat = v.seat.to_hex();
            // A payload abstention shows as an abstention, marked with who caused it.
            let vote = if v.vote.is_payload_abstain() {
                word(Vote::Abstain)
            } else {
                word(v.vote)
            };
            let mut marks = Vec::new();
            if v.vote.is_payload_abstain() {
                marks.push("the provider's payload exceeds the limits".to_string());
            }
            if v.round > 0 {
                marks.push(format!("round {}", v.round));
            }
            if !v.counted && !v.vote.is_abstain() {
                marks.push("late".to_string());
            }
            let reason = one_line(&v.reason);
            format!(
                "                vote {}… {vote:<width$}{}{}{}",
                seat.get(..12).unwrap_or(&seat),
                super::table::GAP,
                if marks.is_empty() {
                    String::new()
                } else {
                    format!("({}) ", marks.join(", "))
                },
                if reason.is_empty() {
                    "(no reason given)"
                } else {
                    &reason
                },
                width = vote_width(),
            )
        })
        .collect()
}

/// `submit`: open an audit session for a trace on this node (as provider).
#[derive(Debug, Args)]
pub struct SubmitArgs {
    /// The trace: an agent transcript (OpenAI chat or Responses, Anthropic Messages,
    /// <think> text, OpenTelemetry spans), JSON `{problem, thinking, output}` or text with
    /// the paper's headings. What is sent is the trace read from it, as that JSON.
    pub trace: std::path::PathBuf,
    /// How the trace file is read.
    #[command(flatten)]
    pub read: super::local::TranscriptArgs,
    /// The provider's own HDAG (the paper's JSON) instead of the built-in decomposition.
    #[arg(long)]
    pub hdag: Option<std::path::PathBuf>,
    /// Who decomposes the trace: `heuristic`, the node's built-in builder, or `llm`, the
    /// paper's five steps asked here of the endpoint at --llm-url (default: the home's
    /// `[llm] url`), the result sent as the provider's HDAG. When the model's output cannot
    /// be used, the node's heuristic builder is used, with a warning naming the step.
    #[arg(long, value_enum, default_value_t = DecomposeMode::Heuristic, conflicts_with = "hdag")]
    pub decompose: DecomposeMode,
    /// The model endpoint `--decompose llm` asks.
    #[command(flatten)]
    pub endpoint: super::local::LlmEndpointArgs,
    /// The provider's assurance choices for this session.
    #[command(flatten)]
    pub assurance: AssuranceArgs,
    /// Print what the session would be (each segment's tier and seats or why it is left
    /// out, the fee, the most of the trace one auditor could see) and submit nothing.
    #[arg(long, conflicts_with = "wait")]
    pub plan: bool,
    /// Wait for the outcome, showing the session's phase as it moves.
    #[arg(long)]
    pub wait: bool,
    /// Give up waiting after this many seconds.
    #[arg(long, default_value_t = 600)]
    pub timeout_secs: u64,
    /// The node's operator token (opening a session spends the node's funds, so the node
    /// asks for it). Default: read from the home's token file (`operator.token`, see
    /// `trust-node keys show --api-token`).
    #[arg(long, env = "TRUST_API_TOKEN", hide_env_values = true)]
    pub api_token: Option<String>,
    /// A label kept with the session on this node, never on chain (repeatable):
    /// `--label model=gpt-x --label run=17`. `trust-node sessions --label run=17` lists by it.
    #[arg(long = "label", value_name = "NAME=VALUE")]
    pub labels: Vec<String>,
    /// Submit under this idempotency key: a repeat with the same key and the same trace,
    /// HDAG, terms and labels answers the session the first one opened and charges nothing
    /// (a retry after a timeout is safe); the same key with another request is refused.
    #[arg(long, value_name = "KEY")]
    pub idempotency_key: Option<String>,
    /// Print JSON instead of lines: the node's submit reply, or with --wait the session
    /// as `query --json` prints it once decided (or as it stands when the wait ends).
    #[arg(long)]
    pub json: bool,
    /// With --wait, exit with a status that says the verdict: 0 PASS, 10 FAIL, 11
    /// INCONCLUSIVE, 12 no verdict (the session failed, or the wait ended first). Without
    /// it, a decided session exits 0 whatever its verdict.
    #[arg(long, requires = "wait")]
    pub exit_code: bool,
    #[command(flatten)]
    addr: NodeAddr,
}

/// `submit --exit-code`: the status for each outcome.
pub mod exit_codes {
    /// The trace passed.
    pub const PASS: u8 = 0;
    /// The trace failed.
    pub const FAIL: u8 = 10;
    /// No verdict either way.
    pub const INCONCLUSIVE: u8 = 11;
    /// No verdict: the session failed, or the wait ended before it was decided.
    pub const NO_VERDICT: u8 = 12;
}

/// The exit status `--exit-code` gives `s` (decided or not).
fn verdict_code(s: Option<&SessionView>) -> u8 {
    match s.and_then(|s| s.outcome.as_ref()).map(|o| o.trace) {
        Some(trust_contracts::TraceVerdict::Pass) => exit_codes::PASS,
        Some(trust_contracts::TraceVerdict::Fail) => exit_codes::FAIL,
        Some(trust_contracts::TraceVerdict::Inconclusive) => exit_codes::INCONCLUSIVE,
        None => exit_codes::NO_VERDICT,
    }
}

/// Labels given as `NAME=VALUE`.
fn parse_labels(given: &[String]) -> Result<std::collections::BTreeMap<String, String>, CliError> {
    let mut out = std::collections::BTreeMap::new();
    for l in given {
        let Some((k, v)) = l.split_once('=') else {
            return Err(CliError::usage(format!(
                "--label {l:?}: give NAME=VALUE, e.g. --label model=gpt-x"
            )));
        };
        if out.insert(k.to_string(), v.to_string()).is_some() {
            return Err(CliError::usage(format!("--label {k} given twice")));
        }
    }
    crate::audit::provider::listing::check_labels(&out)
        .map_err(|e| CliError::usage(format!("--label: {e}")))?;
    Ok(out)
}

/// The session's assurance, over the node's `[session]` defaults (`config.toml`).
#[derive(Debug, Clone, Default, Args)]
#[command(
    next_help_heading = "Assurance (defaults: the node's [session] table, else k = its [provider] seats_per_segment, 3 unless set, and human_seats_per_segment for Human segments; no racing; tau = beta = 0.6)"
)]
pub struct AssuranceArgs {
    /// Seats whose votes count per segment: one number for every tier, or per tier as
    /// `computer=5,llm=3,human=1`.
    #[arg(long, value_name = "K|TIER=K,...")]
    pub seats: Option<String>,
    /// Racing seats drawn beyond k per segment (the first k reveals count).
    #[arg(long, value_name = "N")]
    pub racing: Option<u8>,
    /// Seat quorum tau: a segment is decided by ceil(tau k) agreeing votes (0.5 up to the
    /// network's ceiling, 2/3 by default; above it the node refuses before it signs).
    #[arg(long)]
    pub tau: Option<f64>,
    /// Trace quorum beta: the share of the trace's weight that must pass (0..=1).
    #[arg(long)]
    pub beta: Option<f64>,
    /// Segment weight per tier, e.g. `computer=1,llm=2,human=3`.
    #[arg(long, value_name = "TIER=W,...")]
    pub tier_weights: Option<String>,
    /// The tiers that may judge, e.g. `computer,llm`: segments routed to others are left
    /// out, and nothing escalates to them.
    #[arg(long, value_name = "TIER,...")]
    pub tiers: Option<String>,
    /// Expertise domain of the seats, e.g. `medicine`: only auditors declaring it are
    /// drawn (add --prefer-domain to only favour them).
    #[arg(long)]
    pub domain: Option<String>,
    /// With --domain: favour auditors declaring the domain instead of requiring it.
    #[arg(long, requires = "domain")]
    pub prefer_domain: bool,
    /// The fee to escrow (default and least: one reward per counted seat).
    #[arg(long)]
    pub fee: Option<u64>,
    /// Blocks each commit window stays open (default: the network's).
    #[arg(long, value_name = "BLOCKS")]
    pub commit_window: Option<u16>,
    /// Blocks each reveal window stays open (default: the network's).
    #[arg(long, value_name = "BLOCKS")]
    pub reveal_window: Option<u16>,
    /// The exposure budget: the largest share of the trace's segments one auditor account
    /// may receive keys or text of, e.g. 0.5; segments the draw could not staff within it
    /// are left out. It counts per account: an operator running several auditor accounts
    /// may pool what they see.
    #[arg(long, value_name = "SHARE")]
    pub max_exposure: Option<f64>,
}

/// `computer=5,llm=3` (or a bare value for every tier) as per-tier values.
fn per_tier<T: std::str::FromStr>(
    flag: &str,
    s: &str,
) -> Result<(Option<T>, [Option<T>; 3]), CliError> {
    let bad = |why: String| CliError::usage(format!("--{flag} {s}: {why}"));
    if !s.contains('=') {
        let v = s.trim().parse().map_err(|_| bad("not a number".into()))?;
        return Ok((Some(v), [None, None, None]));
    }
    let mut out: [Option<T>; 3] = [None, None, None];
    for part in s.split(',').filter(|p| !p.trim().is_empty()) {
        let (tier, v) = part
            .split_once('=')
            .ok_or_else(|| bad(format!("{part:?} is not TIER=VALUE")))?;
        let tier =
            trust_judging::session::terms::parse_tier(tier).map_err(|e| bad(e.to_string()))?;
        let v = v
            .trim()
            .parse()
            .map_err(|_| bad(format!("{v:?} is not a number")))?;
        let slot = match tier {
            trust_protocol::tx::Tier::Computer => 0,
            trust_protocol::tx::Tier::Llm => 1,
            trust_protocol::tx::Tier::Human => 2,
        };
        if let Some(o) = out.get_mut(slot) {
            *o = Some(v);
        }
    }
    Ok((None, out))
}

impl AssuranceArgs {
    /// The settings given on the command line (`None` when none is).
    pub fn options(
        &self,
    ) -> Result<Option<trust_judging::session::terms::SessionOptions>, CliError> {
        let mut o = trust_judging::session::terms::SessionOptions::default();
        if let Some(s) = &self.seats {
            let (all, [c, l, h]) = per_tier::<u8>("seats", s)?;
            o.seats = all;
            o.computer_seats = c;
            o.llm_seats = l;
            o.human_seats = h;
        }
        if let Some(s) = &self.tier_weights {
            let (all, [c, l, h]) = per_tier::<u32>("tier-weights", s)?;
            o.computer_weight = c.or(all);
            o.llm_weight = l.or(all);
            o.human_weight = h.or(all);
        }
        o.racing_seats = self.racing;
        o.tau = self.tau;
        o.beta = self.beta;
        o.tiers = self.tiers.as_ref().map(|t| {
            t.split(',')
                .map(str::trim)
                .filter(|x| !x.is_empty())
                .map(String::from)
                .collect()
        });
        o.domain = self.domain.clone();
        o.require_domain = self.prefer_domain.then_some(false);
        o.fee = self.fee;
        o.commit_window = self.commit_window;
        o.reveal_window = self.reveal_window;
        o.max_exposure = self.max_exposure;
        Ok((!o.is_empty()).then_some(o))
    }
}

/// Prints a plan as `submit --plan` shows it.
fn print_plan(p: &crate::api::views::Plan) {
    let t = &p.terms;
    outln!("{}", terms_line(t));
    outln!(
        "auditors    {} Computer, {} LLM, {} Human could be drawn",
        p.auditors[0],
        p.auditors[1],
        p.auditors[2]
    );
    let mut rows = vec![vec!["segment".to_string(), "tier".into(), "seats".into()]];
    for s in &p.segments {
        rows.push(vec![
            s.node.clone(),
            tier_label(s.tier).into(),
            s.seats.to_string(),
        ]);
    }
    for (node, tier, why) in &p.left_out {
        rows.push(vec![
            node.clone(),
            tier_label(*tier).into(),
            format!("left out: {why}"),
        ]);
    }
    for line in super::table::lines(None, "", &rows) {
        outln!("{line}");
    }
    outln!(
        "fee         {} (and a honeypot bond of {}, returned unless its honeypots are disputed)",
        p.fee,
        p.honeypot_bond
    );
    let e = &p.exposure;
    outln!(
        "exposure    {}{}",
        crate::query::exposure_words(e),
        if e.budget.is_none() {
            "; --max-exposure bounds it"
        } else {
            ""
        }
    );
    outln!(
        "            (the budget is per account, not per operator: one operator running several accounts may pool what they see)"
    );
    for a in &p.appeals {
        let tier = tier_label(a.tier);
        let enough = if a.auditors >= a.in_all {
            "enough".to_string()
        } else {
            "too few: such an appeal draws from a higher tier the terms allow, or is refused"
                .to_string()
        };
        outln!(
            "appeal      a {tier} segment's appeal needs {} fresh {tier} auditors (2k + 1, or twice its seats + 1 with racing seats; none who sat on it), {} in all with its seats; the network has {}: {enough}",
            a.fresh,
            a.in_all,
            a.auditors
        );
    }
    outln!("nothing was submitted");
}

fn tier_label(t: trust_protocol::tx::Tier) -> &'static str {
    match t {
        trust_protocol::tx::Tier::Computer => "Computer",
        trust_protocol::tx::Tier::Llm => "LLM",
        trust_protocol::tx::Tier::Human => "Human",
    }
}

/// Who decomposes a submitted trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DecomposeMode {
    /// The node's heuristic builder.
    Heuristic,
    /// The paper's five-step LLM decomposition, run by this command.
    Llm,
}

/// The `submit --decompose llm` endpoint: the flags (or their variables), else the
/// home's `[llm]` url, model and api_key_env.
fn submit_endpoint(args: &SubmitArgs) -> super::local::LlmEndpointArgs {
    let mut ep = args.endpoint.clone();
    if ep.llm_url.is_none()
        && let Ok(cfg) = config::load_config(&expand_home(&args.addr.home))
    {
        ep.llm_url = cfg.llm.url;
        ep.llm_model = ep.llm_model.or(cfg.llm.model);
        ep.llm_api_key_env = ep.llm_api_key_env.or(cfg.llm.api_key_env);
    }
    ep
}

/// Runs `submit`.
pub fn run_submit(args: SubmitArgs) -> CliResult {
    // Any transcript format, read here into the network's one form and sent as its JSON,
    // so the node and every seat see the same trace (within the protocol's own limits,
    // which the node's `POST /v1/sessions` accepts).
    let parsed = super::local::read_trace(&args.trace, &args.read)?;
    let trace = serde_json::to_string(&parsed).map_err(failed)?;
    let hdag = match (&args.hdag, args.decompose) {
        (Some(p), _) => Some(super::read_input_file(p, MAX_HDAG_JSON_BYTES as u64)?),
        (None, DecomposeMode::Heuristic) => None,
        (None, DecomposeMode::Llm) => {
            let d = super::local::llm_decompose(
                &parsed,
                &trust_judging::decompose::Options::default(),
                &submit_endpoint(&args),
            )?;
            // After a fallback the node builds the heuristic HDAG itself, as without
            // --decompose.
            match d.fell_back {
                true => None,
                false => Some(serde_json::to_string(&d.hdag).map_err(failed)?),
            }
        }
    };
    let addr = args.addr.resolve()?;
    let token = api_token(args.api_token.as_deref(), &args.addr)?;
    let api = Client::new(addr.as_str());
    let rt = runtime()?;
    // The tip before the session exists: `--wait` follows its events from here.
    let height_before = match args.wait {
        true => rt.block_on(api.status()).map_err(api_error)?.height,
        false => 0,
    };
    if let Some(k) = &args.idempotency_key {
        crate::audit::provider::listing::check_key(k)
            .map_err(|e| CliError::usage(format!("--idempotency-key: {e}")))?;
    }
    let body = OpenSessionBody {
        trace: trace.into(),
        hdag: hdag.map(Into::into),
        session: args.assurance.options()?,
        labels: parse_labels(&args.labels)?,
    };
    if args.plan {
        let p = rt
            .block_on(api.plan_session(&body, token.as_deref()))
            .map_err(api_error)?;
        print_plan(&p);
        return Ok(());
    }
    let (r, replayed) = rt
        .block_on(api.open_session_replayed(
            &body,
            token.as_deref(),
            args.idempotency_key.as_deref(),
        ))
        .map_err(api_error)?;
    let session = r.session.to_hex();
    // Segment i of the outcome is the i-th of these: (HDAG node id, tier).
    let names: Vec<String> = r.segments.iter().map(|(node, _)| node.clone()).collect();
    // With --json and --wait, the one JSON printed is the session's at the end.
    let lines = !args.json;
    if args.json && !args.wait {
        let mut out = reply_json(&r)?;
        if let Some(o) = out.as_object_mut() {
            o.insert("replayed".into(), serde_json::Value::Bool(replayed));
        }
        outln!("{out}");
        return Ok(());
    }
    if lines {
        outln!("session     {session}");
        if replayed {
            // A repeat under the same idempotency key: the first request's session, whose
            // fee was charged once, then.
            outln!(
                "replayed    the session this idempotency key opened before: nothing new was opened or charged (its fee was {})",
                r.fee
            );
        } else {
            outln!("fee         {}", r.fee);
        }
        let honeypots = names.iter().filter(|n| n.starts_with("honeypot:")).count();
        let trace = names
            .len()
            .saturating_sub(honeypots)
            .saturating_add(r.left_out.len());
        outln!(
            "segments    {}: {}",
            crate::report::words::segment_count(trace, r.left_out.len(), honeypots),
            names.join(" ")
        );
        for (node, _, why) in &r.left_out {
            outln!("left out    {node} ({why})");
        }
    }
    if !args.wait {
        outln!("next: trust-node query {session}");
        return Ok(());
    }
    // Entry i of the outcome's explanation: the session's segments, then the left-out.
    let mut names = names;
    names.extend(r.left_out.iter().map(|(node, _, _)| node.clone()));
    let deadline = std::time::Instant::now() + Duration::from_secs(args.timeout_secs);
    // The session's line as the node shows it now (the feed says when to look again);
    // `None` before a block holds it.
    let progress = |s: Option<&SessionView>| match s {
        Some(s) if s.status == SessionStatus::Live => format!(
            "{}: {} seats drawn, {} committed, {} revealed",
            s.phase.as_ref().map_or_else(|| "null".into(), phase_text),
            or_null(s.seats.map(|c| c.assigned)),
            or_null(s.seats.map(|c| c.committed)),
            or_null(s.seats.map(|c| c.revealed))
        ),
        Some(s) => s.status.as_str().to_string(),
        None => "waiting for the session to be ordered into a block".into(),
    };
    let mut last = String::new();
    let mut show = |s: Option<&SessionView>| {
        let now = progress(s);
        if now != last && lines {
            outln!("...         {now}");
            last = now;
        }
    };
    let over = |s: &Option<SessionView>| {
        s.as_ref()
            .is_some_and(|s| matches!(s.status, SessionStatus::Decided | SessionStatus::Failed))
    };
    let session_now = |api: &Client, sid: &Hash| {
        let (api, sid, token) = (api.clone(), *sid, token.clone());
        async move { session_now(&api, &sid, token.as_deref()).await }
    };
    let waited = rt.block_on(async {
        let run = async {
            let s = session_now(&api, &r.session).await?;
            show(s.as_ref());
            if over(&s) {
                return Ok::<_, CliError>(s);
            }
            // Every event of the session from the block before the submission on (it
            // cannot be in an earlier one); each says when to look again.
            let mut events = super::watch::SessionFollower::new(&addr, &session, height_before);
            loop {
                let e = events.next().await.map_err(api_error)?;
                let s = session_now(&api, &r.session).await?;
                show(s.as_ref());
                if matches!(
                    e.kind,
                    crate::feed::Kind::SessionDecided | crate::feed::Kind::SessionFailed
                ) {
                    return Ok(s);
                }
            }
        };
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        tokio::time::timeout(left, run).await
    });
    let code = |s: Option<&SessionView>| match args.exit_code {
        true => verdict_code(s),
        false => 0,
    };
    match waited {
        Ok(Ok(Some(s))) => {
            match args.json {
                true => {
                    let mut out = reply_json(&s)?;
                    if let Some(o) = out.as_object_mut() {
                        o.insert("replayed".into(), serde_json::Value::Bool(replayed));
                    }
                    outln!("{out}");
                }
                false => print_session(&session, &s, &names, false),
            }
            exit_with(code(Some(&s)))
        }
        Ok(Ok(None)) => {
            match args.json {
                true => outln!(
                    "{}",
                    json!({"session": session, "status": "pending", "replayed": replayed})
                ),
                false => {
                    outln!("session     {session}");
                    outln!("status      pending");
                }
            }
            exit_with(code(None))
        }
        Ok(Err(e)) => Err(e),
        Err(_) if args.exit_code => {
            eprintln!(
                "no outcome within {} s; `trust-node query {session}` shows it later",
                args.timeout_secs
            );
            exit_with(exit_codes::NO_VERDICT)
        }
        Err(_) => Err(CliError::failed(format!(
            "no outcome within {} s; `trust-node query {session}` shows it later",
            args.timeout_secs
        ))),
    }
}

/// Ends a command with `code` and nothing more to say (0 is success).
fn exit_with(code: u8) -> CliResult {
    match code {
        0 => Ok(()),
        code => Err(CliError {
            code,
            message: String::new(),
        }),
    }
}

/// A session as the node shows it now (`None`: not known there yet), with its steps when
/// `token` is the node's.
async fn session_now(
    api: &Client,
    session: &Hash,
    token: Option<&str>,
) -> Result<Option<SessionView>, CliError> {
    match session_seen(api, session, token).await {
        Ok(s) => Ok(Some(s)),
        Err(client::ClientError::Api { status: 404, .. }) => Ok(None),
        Err(e) => Err(api_error(e)),
    }
}

#[cfg(test)]
mod tests {
    use trust_contracts::{CastVote, SegmentVerdict};
    use trust_protocol::{AccountId, Vote};

    use super::{segment_lines, verdict_words, vote_lines, weights_words};

    /// `query --segments` as it printed a segment judged Ungrounded: every column of the
    /// table starts where its header does, at least two spaces after the widest cell
    /// before it, and a vote named `Ungrounded` is apart from its reason.
    #[test]
    fn segment_columns_never_touch() {
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let mut o = crate::proof::tests::outcome(seat);
        o.segments[1].verdict = SegmentVerdict::Ungrounded;
        o.segments[1].votes_cast = vec![
            CastVote {
                seat,
                round: 0,
                vote: Vote::Ungrounded,
                reason: "uses 7, which nothing gives".into(),
                counted: true,
            },
            CastVote {
                seat,
                round: 1,
                vote: Vote::Valid,
                reason: String::new(),
                counted: false,
            },
        ];
        // A provider's name wider than the old 10-character column.
        let names = ["P1-calculation-of-x".to_string(), "P2".to_string()];
        let lines = segment_lines(&o, &names, true);
        println!("{}", lines.join("\n"));
        let header = &lines[0];
        let starts: Vec<usize> = ["node", "tier", "verdict", "votes"]
            .iter()
            .map(|h| header.find(h).unwrap())
            .collect();
        let rows: Vec<&String> = lines[1..]
            .iter()
            .filter(|l| !l.trim_start().starts_with("vote "))
            .collect();
        assert_eq!(rows.len(), o.segments.len());
        for row in &rows {
            for &at in &starts {
                let before: String = row.chars().take(at).collect();
                assert!(
                    before.ends_with("  "),
                    "a column runs into the one at {at}:\n{header}\n{row}"
                );
                assert_ne!(row.chars().nth(at), Some(' '), "{header}\n{row}");
            }
        }
        assert!(
            rows[0].contains("P1-calculation-of-x  Computer  Valid"),
            "{}",
            rows[0]
        );
        assert!(rows[1].contains("Ungrounded  0/0/0/0 (0)"), "{}", rows[1]);
        assert!(
            rows[1].ends_with("ungrounded: rests on a claim nothing established"),
            "{}",
            rows[1]
        );
        let votes: Vec<&String> = lines.iter().filter(|l| l.contains("vote ")).collect();
        assert_eq!(votes.len(), 2);
        assert!(
            votes[0].ends_with("Ungrounded  uses 7, which nothing gives"),
            "{}",
            votes[0]
        );
        // The vote lines sit under the row of their segment.
        let at = lines.iter().position(|l| l == rows[1]).unwrap();
        assert_eq!(&lines[at + 1], votes[0]);
        // The two vote lines align their marks and reasons.
        let col = |l: &str| l.find("Valid").or_else(|| l.find("Ungrounded")).unwrap();
        assert_eq!(col(votes[0]), col(votes[1]));
        assert!(
            votes[1].contains("Valid       (round 1, late) (no reason given)"),
            "{}",
            votes[1]
        );
    }

    /// Each vote is marked with its own round (1 after an escalation, 2 and up for appeal
    /// rounds), not one label for every round above the first; a reason that reorders
    /// its own display is shown with the character replaced.
    #[test]
    fn each_vote_shows_its_own_round_and_no_hidden_characters() {
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let cast = |round: u8, reason: &str| CastVote {
            seat,
            round,
            vote: Vote::Valid,
            reason: reason.to_string(),
            counted: true,
        };
        let lines = vote_lines(&[
            cast(0, "first"),
            cast(1, "escalated"),
            cast(3, "second appeal"),
            cast(0, "a\u{202E}b"),
        ]);
        assert!(!lines[0].contains("round"), "{}", lines[0]);
        assert!(lines[1].contains("(round 1) escalated"), "{}", lines[1]);
        assert!(lines[2].contains("(round 3) second appeal"), "{}", lines[2]);
        assert!(lines[3].ends_with("a?b"), "{}", lines[3]);
    }

    /// A payload abstention (issue 54) shows as an abstention in the vote column, marked
    /// with who caused it, and the column keeps its width.
    #[test]
    fn a_payload_abstention_shows_as_an_abstention_marked_as_the_providers() {
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let cast = |vote: Vote| CastVote {
            seat,
            round: 0,
            vote,
            reason: "the run exceeded the sandbox's CPU time limit".to_string(),
            counted: false,
        };
        let lines = vote_lines(&[cast(Vote::PayloadAbstain), cast(Vote::Abstain)]);
        assert!(
            lines[0].contains("Abstain   ")
                && lines[0].contains("(the provider's payload exceeds the limits)"),
            "{}",
            lines[0]
        );
        assert!(!lines[1].contains("provider") && !lines[1].contains("late"));
        assert!(!lines[0].contains("late"), "{}", lines[0]);
    }

    /// Issue 56, item 8: the default `query` (no `--segments`) says why each undecided
    /// segment and each segment whose seats abstained is so, from the public reasons its
    /// seats revealed in its last round: the most frequent reason quoted, the others
    /// counted; a split says how it split; a seat that never revealed is counted apart.
    #[test]
    fn each_abstaining_or_undecided_segment_says_why_without_segments() {
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let mut o = crate::proof::tests::outcome(seat);
        let vote = |round: u8, vote: Vote, reason: &str| CastVote {
            seat,
            round,
            vote,
            reason: reason.into(),
            counted: true,
        };
        let abstain = "no judge could check it";
        // 0: undecided, every seat abstained, two reasons (round 0's vote is not counted).
        o.segments[0].verdict = SegmentVerdict::Undecided;
        o.segments[0].votes.valid = 0;
        o.segments[0].votes.abstained = 3;
        o.segments[0].votes_cast = vec![
            vote(0, Vote::Abstain, "round zero's reason"),
            vote(1, Vote::Abstain, "its numbers come from\nthe context"),
            vote(1, Vote::Abstain, abstain),
            vote(1, Vote::Abstain, abstain),
        ];
        // 1: undecided on a split, one seat missing.
        o.segments[1].verdict = SegmentVerdict::Undecided;
        o.segments[1].votes.valid = 1;
        o.segments[1].votes.invalid = 1;
        o.segments[1].votes.missing = 1;
        o.segments[1].votes_cast = vec![
            vote(0, Vote::Valid, "holds"),
            vote(0, Vote::Invalid, "does not follow"),
        ];
        // 3: Valid with one abstention.
        o.segments[3].votes_cast = vec![
            vote(0, Vote::Valid, "holds"),
            vote(0, Vote::Valid, "holds"),
            vote(0, Vote::Abstain, abstain),
        ];
        let lines = segment_lines(&o, &[], false);
        println!("{}", lines.join("\n"));
        assert!(
            lines[1].ends_with(
                "undecided: no verdict reached the quorum of 2 of 3 seats; 3 abstained: \
                 no judge could check it (and 1 other reason: --segments lists them)"
            ),
            "{}",
            lines[1]
        );
        assert!(!lines[1].contains("round zero"), "{}", lines[1]);
        assert!(
            lines[2].ends_with(
                "undecided: no verdict reached the quorum of 2 of 3 seats; 1 never revealed"
            ),
            "{}",
            lines[2]
        );
        assert!(
            lines[3].ends_with("honeypot (known Invalid): not part of the trace"),
            "{}",
            lines[3]
        );
        assert!(
            lines[4].contains("Valid")
                && lines[4].ends_with("0/0/0/0 (0)  1 abstained: no judge could check it"),
            "{}",
            lines[4]
        );
        // A split with nothing missing says how the seats split.
        o.segments[1].votes.missing = 0;
        let lines = segment_lines(&o, &[], false);
        assert!(
            lines[2].ends_with("(the seats split: 1 Valid, 1 Invalid, 0 Ungrounded)"),
            "{}",
            lines[2]
        );
    }

    /// Issue 56, item 8: the verdict and weights lines read as sentences: each failed
    /// segment "is" its verdict (a calculation names the step it is in), the claims their
    /// own seats decided are counted as such, and the weights say what passed, what is
    /// undecided, what failed and what a PASS needs, rounded up to a whole weight.
    #[test]
    fn the_verdict_and_weights_lines_read_as_sentences() {
        use trust_contracts::TraceVerdict;
        use trust_judging::preview::Failed;
        let failed = |name: &str, v: SegmentVerdict, of: Option<&str>| Failed {
            name: name.into(),
            verdict: v,
            of: of.map(String::from),
        };
        assert_eq!(
            verdict_words(
                TraceVerdict::Fail,
                0,
                7,
                &[failed("O1", SegmentVerdict::Invalid, Some("ST3"))]
            ),
            "FAIL: O1 is Invalid (a calculation in ST3); 0 of the trace's 7 claims were decided by their own seats"
        );
        assert_eq!(
            verdict_words(
                TraceVerdict::Fail,
                1,
                7,
                &[
                    failed("#3", SegmentVerdict::Invalid, Some("#9")),
                    failed("B", SegmentVerdict::Ungrounded, None),
                    failed("#4", SegmentVerdict::Invalid, None),
                ]
            ),
            "FAIL: #3 is Invalid (a calculation in #9), B is Ungrounded and #4 is Invalid; 1 of the trace's 7 claims was decided by their own seats"
        );
        assert_eq!(
            verdict_words(TraceVerdict::Pass, 1, 1, &[]),
            "PASS: 1 of the trace's 1 claim was decided by their own seats"
        );
        let seat: AccountId = trust_protocol::Keypair::from_label("seat").public();
        let mut o = crate::proof::tests::outcome(seat);
        // 3 of 4 passing at beta 70%: 2.8 rounds up to 3.
        assert_eq!(
            weights_words(&o),
            "3 of 4 passing, 1 undecided, 0 failed (a PASS needs at least 3 passing: 70%)"
        );
        o.passing_weight = 0;
        o.undecided_weight = 3;
        o.total_weight = 7;
        o.beta = trust_protocol::units::Ppm(600_000);
        o.error_at_conclusion = true;
        assert_eq!(
            weights_words(&o),
            "0 of 7 passing, 3 undecided, 4 failed (a PASS needs at least 5 passing: 60%); an error reaches the conclusion"
        );
    }
}
